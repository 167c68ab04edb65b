/* test_sim_gen.c - the simulator's generator: metric names and label names
 * per job equal the golden list (tests/data/sim_series_golden.txt); about
 * 2,000 series per node; counters never decrease except at exporter
 * restarts; same seed -> byte-identical stream, other seed -> another;
 * an injected fell-off-bus with VANISH removes that GPU's series at
 * t_fault; an XID creates a new err_code series at t_xid_visible;
 * training / idle / checkpoint values within the documented ranges; the
 * series filter. Runs small clusters over a few simulated hours. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/labels.h"
#include "gpuwatch/sim.h"

#define T0 1764000000000LL
#define HOUR 3600000LL

static struct gw_sim_timeline *build(uint64_t seed, uint32_t nodes, int64_t duration_ms)
{
    struct gw_sim_config c;
    struct gw_error err = {0};
    struct gw_sim_timeline *tl = NULL;
    gw_sim_config_default(&c);
    assert_int_equal(gw_sim_config_profile(&c, "smoke", &err), GW_OK);
    c.seed = seed;
    c.start_ms = T0;
    c.duration_ms = duration_ms;
    if (nodes) {
        c.nodes = nodes;
        c.spare_nodes = 1;
    }
    assert_int_equal(gw_sim_timeline_build(&c, &tl, &err), GW_OK);
    return tl;
}

static struct gw_sim_gen *open_gen(const struct gw_sim_timeline *tl, gw_sim_series_filter f, void *ud)
{
    struct gw_sim_gen *g = NULL;
    struct gw_error err = {0};
    int rc = gw_sim_gen_open(&g, tl, f, ud, &err);
    if (rc != GW_OK)
        fail_msg("gw_sim_gen_open: %s", err.msg);
    return g;
}

/* Label value of a series (borrowed from the generator), "" when absent. */
static void label_of(const struct gw_sim_gen *g, uint32_t id, const char *name, char *out, size_t cap)
{
    size_t len;
    const uint8_t *b = gw_sim_gen_series_labels(g, id, &len);
    const char *v;
    size_t vl;
    out[0] = 0;
    if (gw_labels_get(b, len, name, strlen(name), &v, &vl)) {
        if (vl >= cap)
            vl = cap - 1;
        memcpy(out, v, vl);
        out[vl] = 0;
    }
}

static int label_int(const struct gw_sim_gen *g, uint32_t id, const char *name)
{
    char buf[32];
    label_of(g, id, name, buf, sizeof buf);
    if (!buf[0])
        return -1;
    return (int)strtol(buf, NULL, 10);
}

/* Makes failure fi a GPU-level event shown on `gpu` of its node. */
static const struct gw_sim_failure *inject(struct gw_sim_timeline *tl, size_t fi, enum gw_sim_class cls,
                                           enum gw_sim_fault_effect eff, uint32_t xid, int32_t gpu)
{
    struct gw_sim_failure *f = &tl->failures[fi];
    f->cls = cls;
    f->effect = eff;
    f->xid = xid;
    f->gpu = gpu;
    f->precursor = GW_SIM_PRE_NONE;
    if (f->t_xid_visible == GW_SIM_NO_TIME || f->t_xid_visible < f->t_fault)
        f->t_xid_visible = f->t_fault + 30000;
    return f;
}

/* A timeline with at least one failure whose node is not down. */
static struct gw_sim_timeline *build_with_failure(int64_t duration_ms, size_t *fi)
{
    for (uint64_t seed = 1; seed < 200; seed++) {
        struct gw_sim_timeline *tl = build(seed, 0, duration_ms);
        for (size_t i = 0; i < tl->n_failures; i++) {
            const struct gw_sim_failure *f = &tl->failures[i];
            if (f->t_fault > T0 + HOUR && f->t_fault < T0 + duration_ms - HOUR &&
                (f->t_recovered == GW_SIM_NO_TIME || f->t_recovered > f->t_fault + 10 * 60000)) {
                *fi = i;
                return tl;
            }
        }
        gw_sim_timeline_free(tl);
    }
    fail_msg("no seed gives a failure");
    return NULL;
}

/* ------------------------------------------------------------ golden */

struct strset {
    char **v;
    size_t n, cap;
};

static void set_add(struct strset *s, const char *x)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i], x) == 0)
            return;
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 256;
        s->v = realloc(s->v, s->cap * sizeof(*s->v));
        assert_non_null(s->v);
    }
    s->v[s->n] = strdup(x);
    assert_non_null(s->v[s->n]);
    s->n++;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void set_free(struct strset *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
}

/* "job metric name1,name2,..." of a series (names sorted, __name__ left out). */
static void series_line(const struct gw_sim_gen *g, uint32_t id, char *out, size_t cap)
{
    size_t len, n = 0;
    const uint8_t *b = gw_sim_gen_series_labels(g, id, &len);
    struct gw_label ls[GW_LABELS_MAX];
    char job[16];
    assert_int_equal(gw_labels_decode(b, len, ls, GW_LABELS_MAX, &n), GW_OK);
    label_of(g, id, "job", job, sizeof job);
    int w = snprintf(out, cap, "%s %s ", job, gw_sim_gen_series_metric(g, id));
    int first = 1;
    for (size_t i = 0; i < n && w > 0 && (size_t)w < cap; i++) {
        if (ls[i].name_len == 8 && memcmp(ls[i].name, "__name__", 8) == 0)
            continue;
        w += snprintf(out + w, cap - (size_t)w, "%s%.*s", first ? "" : ",", (int)ls[i].name_len, ls[i].name);
        first = 0;
    }
}

static FILE *open_golden(void)
{
    static const char *rel = "tests/data/sim_series_golden.txt";
    char path[1024];
    FILE *f = NULL;
#ifdef GW_SOURCE_DIR
    snprintf(path, sizeof path, "%s/%s", GW_SOURCE_DIR, rel);
    f = fopen(path, "r");
#endif
    const char *env = getenv("GW_SOURCE_DIR");
    if (!f && env) {
        snprintf(path, sizeof path, "%s/%s", env, rel);
        f = fopen(path, "r");
    }
    if (!f)
        f = fopen(rel, "r");
    if (!f) {
        snprintf(path, sizeof path, "../%s", rel);
        f = fopen(path, "r");
    }
    return f;
}

static void test_sim_gen_golden(void **state)
{
    (void)state;
    size_t fi;
    struct gw_sim_timeline *tl = build_with_failure(12 * HOUR, &fi);
    inject(tl, fi, GW_SIM_APP_XID, GW_SIM_EFF_NONE, 31, 1);
    struct gw_sim_gen *g = open_gen(tl, NULL, NULL);
    struct gw_sim_scrape s;
    struct gw_error err = {0};
    int rc;
    while ((rc = gw_sim_gen_next(g, &s, &err)) == 1) {
    }
    assert_int_equal(rc, 0);
    struct strset got = {0}, want = {0};
    char line[2048];
    for (uint32_t id = 0; id < gw_sim_gen_series_count(g); id++) {
        series_line(g, id, line, sizeof line);
        set_add(&got, line);
    }
    FILE *f = open_golden();
    if (!f)
        fail_msg("cannot open tests/data/sim_series_golden.txt (set GW_SOURCE_DIR)");
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0] || line[0] == '#')
            continue;
        set_add(&want, line);
    }
    fclose(f);
    qsort(got.v, got.n, sizeof(*got.v), cmp_str);
    qsort(want.v, want.n, sizeof(*want.v), cmp_str);
    for (size_t i = 0, j = 0; i < got.n || j < want.n;) {
        int c = i >= got.n ? 1 : j >= want.n ? -1 : strcmp(got.v[i], want.v[j]);
        if (c < 0)
            print_error("generated but not in golden: %s\n", got.v[i++]);
        else if (c > 0)
            print_error("in golden but not generated: %s\n", want.v[j++]);
        else
            i++, j++;
    }
    assert_int_equal(got.n, want.n);
    for (size_t i = 0; i < got.n; i++)
        assert_string_equal(got.v[i], want.v[i]);
    /* every generated family has a type and help */
    set_free(&got);
    set_free(&want);
    gw_sim_gen_close(g);
    gw_sim_timeline_free(tl);
}

static int fam_cb(void *ud, const char *metric, const char *type, const char *help)
{
    size_t *n = ud;
    assert_true(metric[0] != 0);
    assert_true(strcmp(type, "gauge") == 0 || strcmp(type, "counter") == 0 || strcmp(type, "untyped") == 0);
    assert_true(strlen(help) > 5);
    (*n)++;
    return 0;
}

/* ------------------------------------------------------- series count */

static void test_sim_gen_series_per_node(void **state)
{
    (void)state;
    struct gw_sim_timeline *tl = build(3, 0, HOUR);
    struct gw_sim_gen *g = open_gen(tl, NULL, NULL);
    size_t per_node = gw_sim_gen_series_count(g) / tl->cfg.nodes;
    assert_true(per_node >= 1800 && per_node <= 2300);
    /* one scrape of each job: sizes add up to the node's series */
    struct gw_sim_scrape s;
    struct gw_error err = {0};
    size_t seen[2] = {0, 0};
    while (gw_sim_gen_next(g, &s, &err) == 1 && (!seen[0] || !seen[1]))
        if (s.node == 0 && !seen[s.job])
            seen[s.job] = s.n;
    assert_true(seen[0] >= 8 * 45 && seen[0] < 420);
    assert_true(seen[1] >= 1500 && seen[1] < 1900);
    size_t nf = 0;
    assert_int_equal(gw_sim_gen_families(g, fam_cb, &nf), 0);
    assert_true(nf > 150);
    /* protobuf bytes: one 0x0a Label field per label */
    size_t pl, cl;
    const uint8_t *pb = gw_sim_gen_series_pb(g, 0, &pl);
    const uint8_t *cb = gw_sim_gen_series_labels(g, 0, &cl);
    assert_non_null(pb);
    assert_non_null(cb);
    assert_true(pl > cl);
    assert_int_equal(pb[0], 0x0a);
    assert_null(gw_sim_gen_series_pb(g, UINT32_MAX, &pl));
    gw_sim_gen_close(g);
    gw_sim_timeline_free(tl);
}

/* -------------------------------------------------- counters, restarts */

static int is_counter(const char *metric)
{
    size_t n = strlen(metric);
    if (n > 6 && strcmp(metric + n - 6, "_total") == 0)
        return strcmp(metric, "node_mountstats_nfs_transport_idle_time_seconds") != 0;
    return strncmp(metric, "node_vmstat_", 12) == 0 || strcmp(metric, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION") == 0 ||
           strcmp(metric, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER") == 0 || strstr(metric, "REMAPPED_ROWS") ||
           strstr(metric, "_VIOLATION") || strcmp(metric, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL") == 0;
}

static void test_sim_gen_counters_monotonic(void **state)
{
    (void)state;
    struct gw_sim_timeline *tl = NULL;
    /* a seed whose timeline restarts an exporter within the run */
    uint64_t seed;
    for (seed = 1; seed < 300; seed++) {
        tl = build(seed, 0, 8 * HOUR);
        int any = 0;
        for (size_t i = 0; i < tl->n_baits; i++)
            any |= tl->baits[i].kind == GW_SIM_BAIT_EXPORTER_RESTART;
        if (any)
            break;
        gw_sim_timeline_free(tl);
        tl = NULL;
    }
    assert_non_null(tl);
    struct gw_sim_gen *g = open_gen(tl, NULL, NULL);
    size_t cap = 0;
    double *last = NULL;
    int64_t *last_t = NULL;
    struct gw_sim_scrape s;
    struct gw_error err = {0};
    size_t checked = 0, resets = 0;
    int rc;
    while ((rc = gw_sim_gen_next(g, &s, &err)) == 1) {
        size_t n = gw_sim_gen_series_count(g);
        if (n > cap) {
            last = realloc(last, n * sizeof(*last));
            last_t = realloc(last_t, n * sizeof(*last_t));
            assert_non_null(last);
            assert_non_null(last_t);
            for (size_t i = cap; i < n; i++)
                last_t[i] = INT64_MIN;
            cap = n;
        }
        for (size_t i = 0; i < s.n; i++) {
            uint32_t id = s.series[i];
            assert_true(last_t[id] == INT64_MIN || s.t > last_t[id]);   /* timestamps increase */
            if (is_counter(gw_sim_gen_series_metric(g, id)) && last_t[id] != INT64_MIN) {
                checked++;
                if (s.v[i] < last[id]) {
                    struct gw_sim_node_state a, b;
                    assert_int_equal(gw_sim_node_state_at(tl, s.node, last_t[id], &a), GW_OK);
                    assert_int_equal(gw_sim_node_state_at(tl, s.node, s.t, &b), GW_OK);
                    uint32_t ra = s.job == GW_SIM_JOB_DCGM ? a.dcgm_restarts : a.node_restarts;
                    uint32_t rb = s.job == GW_SIM_JOB_DCGM ? b.dcgm_restarts : b.node_restarts;
                    if (rb <= ra)
                        fail_msg("%s decreased %.17g -> %.17g without a restart",
                                 gw_sim_gen_series_metric(g, id), last[id], s.v[i]);
                    resets++;
                }
            }
            last[id] = s.v[i];
            last_t[id] = s.t;
        }
    }
    assert_int_equal(rc, 0);
    assert_true(checked > 100000);
    assert_true(resets > 0);   /* the restart really reset counters */
    free(last);
    free(last_t);
    gw_sim_gen_close(g);
    gw_sim_timeline_free(tl);
}

/* ------------------------------------------------------- determinism */

static uint64_t stream_hash(uint64_t seed, size_t *samples)
{
    struct gw_sim_timeline *tl = build(seed, 0, 3 * HOUR);
    struct gw_sim_gen *g = open_gen(tl, NULL, NULL);
    struct gw_sim_scrape s;
    struct gw_error err = {0};
    uint64_t h = 0;
    *samples = 0;
    while (gw_sim_gen_next(g, &s, &err) == 1) {
        uint64_t hdr[3] = {s.node, (uint64_t)s.job, (uint64_t)s.t};
        h = h * 0x100000001b3ull ^ gw_hash64(hdr, sizeof hdr);
        h = h * 0x100000001b3ull ^ gw_hash64(s.series, s.n * sizeof(*s.series));
        h = h * 0x100000001b3ull ^ gw_hash64(s.v, s.n * sizeof(*s.v));
        *samples += s.n;
    }
    for (uint32_t id = 0; id < gw_sim_gen_series_count(g); id++) {
        size_t len;
        const uint8_t *b = gw_sim_gen_series_pb(g, id, &len);
        h = h * 0x100000001b3ull ^ gw_hash64(b, len);
    }
    gw_sim_gen_close(g);
    gw_sim_timeline_free(tl);
    return h;
}

static void test_sim_gen_deterministic(void **state)
{
    (void)state;
    size_t n1, n2, n3;
    uint64_t a = stream_hash(11, &n1), b = stream_hash(11, &n2), c = stream_hash(12, &n3);
    assert_true(n1 > 100000);
    assert_int_equal(n1, n2);
    assert_true(a == b);
    assert_true(a != c);
}

/* ------------------------------------------------ failures: vanish, XID */

static void test_sim_gen_vanish_at_fault(void **state)
{
    (void)state;
    size_t fi;
    struct gw_sim_timeline *tl = build_with_failure(12 * HOUR, &fi);
    const struct gw_sim_failure *f = inject(tl, fi, GW_SIM_FELL_OFF_BUS, GW_SIM_EFF_VANISH, 79, 5);
    struct gw_sim_gen *g = open_gen(tl, NULL, NULL);
    struct gw_sim_scrape s;
    struct gw_error err = {0};
    size_t before = 0, after = 0, others_after = 0;
    int64_t t_end = f->t_recovered == GW_SIM_NO_TIME ? INT64_MAX : f->t_recovered;
    while (gw_sim_gen_next(g, &s, &err) == 1) {
        if (s.node != f->node || s.job != GW_SIM_JOB_DCGM)
            continue;
        size_t mine = 0, other = 0;
        for (size_t i = 0; i < s.n; i++) {
            int gpu = label_int(g, s.series[i], "gpu");
            if (gpu == 5)
                mine++;
            else if (gpu >= 0)
                other++;
        }
        if (s.t < f->t_fault) {
            assert_true(mine >= 45);
            before++;
        } else if (s.t < t_end) {
            assert_int_equal(mine, 0);
            assert_true(other >= 7 * 45);
            after++;
            others_after += other;
        }
    }
    assert_true(before > 10);
    assert_true(after > 5);
    assert_true(others_after > 0);
    gw_sim_gen_close(g);
    gw_sim_timeline_free(tl);
}

static void test_sim_gen_sentinel_at_fault(void **state)
{
    (void)state;
    size_t fi;
    struct gw_sim_timeline *tl = build_with_failure(12 * HOUR, &fi);
    const struct gw_sim_failure *f = inject(tl, fi, GW_SIM_FELL_OFF_BUS, GW_SIM_EFF_SENTINEL, 79, 3);
    struct gw_sim_gen *g = open_gen(tl, NULL, NULL);
    struct gw_sim_scrape s;
    struct gw_error err = {0};
    size_t sent = 0, normal = 0;
    int64_t t_end = f->t_recovered == GW_SIM_NO_TIME ? INT64_MAX : f->t_recovered;
    while (gw_sim_gen_next(g, &s, &err) == 1) {
        if (s.node != f->node || s.job != GW_SIM_JOB_DCGM)
            continue;
        for (size_t i = 0; i < s.n; i++) {
            const char *m = gw_sim_gen_series_metric(g, s.series[i]);
            if (strcmp(m, "DCGM_FI_DEV_GPU_TEMP") != 0 && strcmp(m, "DCGM_FI_DEV_POWER_USAGE") != 0)
                continue;
            int gpu = label_int(g, s.series[i], "gpu");
            if (gpu == 3 && s.t >= f->t_fault && s.t < t_end) {
                assert_true(s.v[i] > 1e14);   /* DCGM's not-supported sentinels */
                sent++;
            } else {
                assert_true(s.v[i] < 2000);
                normal++;
            }
        }
    }
    assert_true(sent > 10);
    assert_true(normal > 100);
    gw_sim_gen_close(g);
    gw_sim_timeline_free(tl);
}

static void test_sim_gen_legacy_hostname(void **state)
{
    (void)state;
    struct gw_sim_config c;
    struct gw_error err = {0};
    struct gw_sim_timeline *tl = NULL;
    gw_sim_config_default(&c);
    assert_int_equal(gw_sim_config_profile(&c, "smoke", &err), GW_OK);
    c.start_ms = T0;
    c.duration_ms = HOUR;
    c.legacy_hostname = 1;
    assert_int_equal(gw_sim_timeline_build(&c, &tl, &err), GW_OK);
    struct gw_sim_gen *g = open_gen(tl, NULL, NULL);
    char a[64], b[64];
    size_t dcgm = 0;
    for (uint32_t id = 0; id < gw_sim_gen_series_count(g); id++) {
        label_of(g, id, "job", a, sizeof a);
        if (strcmp(a, "dcgm") != 0 || strncmp(gw_sim_gen_series_metric(g, id), "DCGM_", 5) != 0)
            continue;
        label_of(g, id, "Hostname", a, sizeof a);
        label_of(g, id, "hostname", b, sizeof b);
        assert_true(a[0] != 0);
        assert_true(b[0] == 0);
        dcgm++;
    }
    assert_true(dcgm > 1000);
    gw_sim_gen_close(g);
    gw_sim_timeline_free(tl);
}

static void test_sim_gen_xid_latch(void **state)
{
    (void)state;
    size_t fi;
    struct gw_sim_timeline *tl = build_with_failure(12 * HOUR, &fi);
    const struct gw_sim_failure *f = inject(tl, fi, GW_SIM_APP_XID, GW_SIM_EFF_NONE, 31, 2);
    struct gw_sim_gen *g = open_gen(tl, NULL, NULL);
    size_t n0 = gw_sim_gen_series_count(g);
    struct gw_sim_scrape s;
    struct gw_error err = {0};
    int64_t first31 = INT64_MIN;
    size_t zero_after = 0;
    int64_t t_end = f->t_recovered == GW_SIM_NO_TIME ? INT64_MAX : f->t_recovered;
    while (gw_sim_gen_next(g, &s, &err) == 1) {
        if (s.node != f->node || s.job != GW_SIM_JOB_DCGM)
            continue;
        for (size_t i = 0; i < s.n; i++) {
            uint32_t id = s.series[i];
            if (strcmp(gw_sim_gen_series_metric(g, id), "DCGM_FI_DEV_XID_ERRORS") != 0 ||
                label_int(g, id, "gpu") != 2)
                continue;
            int code = label_int(g, id, "err_code");
            assert_true(s.v[i] == (double)code);   /* value = the latched XID */
            if (code == 31 && first31 == INT64_MIN) {
                first31 = s.t;
                char msg[128];
                label_of(g, id, "err_msg", msg, sizeof msg);
                assert_string_equal(msg, "GPU memory page fault");
            }
            if (code == 0 && s.t >= f->t_xid_visible && s.t < t_end)
                zero_after++;
        }
    }
    assert_true(first31 >= f->t_xid_visible);
    assert_true(first31 < f->t_xid_visible + 2 * tl->cfg.interval_ms);
    assert_true(zero_after <= 3);   /* only after an exporter restart */
    /* two new series: the err_code="31" gauge and its XID count */
    assert_true(gw_sim_gen_series_count(g) >= n0 + 2);
    gw_sim_gen_close(g);
    gw_sim_timeline_free(tl);
}

/* ----------------------------------------------------------- ranges */

enum { C_OTHER = 0, C_UTIL, C_POWER, C_TEMP, C_FB, C_CLK, C_WQ, C_WR, C_BL, C_SENDS, C_SLOTS, C_N };

/* Per-series class and GPU, computed once per series id. */
struct cache {
    int8_t *cls, *gpu;
    size_t cap;
};

static int classify(const struct gw_sim_gen *g, struct cache *c, uint32_t id, int *gpu)
{
    if (id >= c->cap) {
        size_t n = gw_sim_gen_series_count(g);
        c->cls = realloc(c->cls, n);
        c->gpu = realloc(c->gpu, n);
        assert_non_null(c->cls);
        assert_non_null(c->gpu);
        memset(c->cls + c->cap, -1, n - c->cap);
        c->cap = n;
    }
    if (c->cls[id] < 0) {
        static const char *const names[] = {
            NULL, "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP",
            "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_SM_CLOCK",
            "node_mountstats_nfs_operations_queue_time_seconds_total",
            "node_mountstats_nfs_operations_request_time_seconds_total",
            "node_mountstats_nfs_transport_backlog_queue_total",
            "node_mountstats_nfs_transport_sends_total",
            "node_mountstats_nfs_transport_maximum_rpc_slots"};
        const char *m = gw_sim_gen_series_metric(g, id);
        char buf[32];
        int k = C_OTHER;
        for (int i = 1; i < C_N; i++)
            if (strcmp(m, names[i]) == 0)
                k = i;
        if (k == C_WQ || k == C_WR) {
            label_of(g, id, "operation", buf, sizeof buf);
            if (strcmp(buf, "WRITE") != 0)
                k = C_OTHER;
        } else if (k >= C_BL) {
            label_of(g, id, "transport", buf, sizeof buf);
            if (strcmp(buf, "0") != 0)
                k = C_OTHER;
        }
        c->cls[id] = (int8_t)k;
        c->gpu[id] = (int8_t)label_int(g, id, "gpu");
    }
    *gpu = c->gpu[id];
    return c->cls[id];
}

static void test_sim_gen_value_ranges(void **state)
{
    (void)state;
    /* 12 nodes: sessions of 11, enough for slot-limited saves (smoke's
     * 3-node sessions never saturate the slots, docs/simulator.md 4.1) */
    struct gw_sim_timeline *tl = build(5, 12, 14 * HOUR);
    struct gw_sim_gen *g = open_gen(tl, NULL, NULL);
    struct gw_sim_scrape s;
    struct gw_error err = {0};
    struct cache cc = {0};
    size_t n_train = 0, n_idle = 0, n_save = 0, n_load = 0;
    double prev[64][C_N];
    int have_prev[64] = {0};
    size_t sat_checked = 0;
    while (gw_sim_gen_next(g, &s, &err) == 1) {
        struct gw_sim_node_state st;
        assert_int_equal(gw_sim_node_state_at(tl, s.node, s.t, &st), GW_OK);
        int quiet = st.n_failures == 0 && st.n_baits == 0;
        double v[GW_SIM_MAX_GPUS][C_N];
        memset(v, 0, sizeof v);
        for (size_t i = 0; i < s.n; i++) {
            int gpu, k = classify(g, &cc, s.series[i], &gpu);
            if (k != C_OTHER)
                v[gpu < 0 ? 0 : gpu][k] = s.v[i];
        }
        if (s.job == GW_SIM_JOB_DCGM && quiet && st.dcgm_up) {
            for (uint32_t gpu = 0; gpu < tl->cfg.gpus; gpu++) {
                double u = v[gpu][C_UTIL], p = v[gpu][C_POWER], tc = v[gpu][C_TEMP];
                double fb = v[gpu][C_FB], clk = v[gpu][C_CLK];
                assert_true(tc == (double)(int64_t)tc);                  /* integer temps */
                assert_true(fabs(p * 1000.0 - (double)llround(p * 1000.0)) < 1e-6);   /* 3 decimals */
                if (st.phase == GW_SIM_PHASE_TRAIN) {
                    assert_true(u >= 95 && u <= 100);
                    assert_true(p >= 700 && p <= 1000);
                    assert_true(tc >= 55 && tc <= 75);
                    assert_true(fb >= 150 * 1024 - 400 && fb <= 175 * 1024 + 400);
                    assert_true(clk >= 1965 * 0.95 && clk <= 1965);
                    n_train++;
                } else if (st.phase == GW_SIM_PHASE_IDLE) {
                    assert_true(u == 0);
                    assert_true(p < 200);
                    n_idle++;
                } else if (st.phase == GW_SIM_PHASE_SAVE) {
                    assert_true(u < 95);
                    n_save++;
                } else if (st.phase == GW_SIM_PHASE_LOAD) {
                    assert_true(u < 50);
                    n_load++;
                }
            }
        }
        if (s.job == GW_SIM_JOB_NODE && s.node < 64) {
            double *pv = prev[s.node], *cv = v[0];
            if (have_prev[s.node] && st.phase == GW_SIM_PHASE_SAVE && st.nfs_write_bps > 1e8 && quiet) {
                double dq = cv[C_WQ] - pv[C_WQ], dr = cv[C_WR] - pv[C_WR];
                double dse = cv[C_SENDS] - pv[C_SENDS];
                if (dr > 1.0 && dse > 100) {
                    assert_true(dq / dr >= 0.88);                        /* queue share */
                    assert_true((cv[C_BL] - pv[C_BL]) / dse > 1.0);      /* backlog per send */
                    assert_true(cv[C_SLOTS] == 128);
                    sat_checked++;
                }
            }
            memcpy(pv, cv, sizeof(double) * C_N);
            have_prev[s.node] = 1;
        }
    }
    assert_true(n_train > 1000);
    assert_true(n_idle > 10);
    assert_true(n_save > 10);
    assert_true(sat_checked > 3);
    (void)n_load;
    free(cc.cls);
    free(cc.gpu);
    gw_sim_gen_close(g);
    gw_sim_timeline_free(tl);
}

/* ----------------------------------------------------------- filter */

static int keep_util(void *ud, const char *metric)
{
    (*(int *)ud)++;
    return strcmp(metric, "DCGM_FI_DEV_GPU_UTIL") == 0 || strcmp(metric, "up") == 0;
}

static void test_sim_gen_filter(void **state)
{
    (void)state;
    struct gw_sim_timeline *tl = build(9, 0, 2 * HOUR);
    int calls = 0;
    struct gw_sim_gen *all = open_gen(tl, NULL, NULL);
    struct gw_sim_gen *few = open_gen(tl, keep_util, &calls);
    assert_true(calls > 100);
    uint32_t nodes = tl->cfg.nodes, gpus = tl->cfg.gpus;
    assert_int_equal(gw_sim_gen_series_count(few), (size_t)nodes * gpus + (size_t)nodes * 2);
    struct gw_sim_scrape a, b;
    struct gw_error err = {0};
    size_t compared = 0;
    for (;;) {
        int ra = gw_sim_gen_next(all, &a, &err);
        int rb = gw_sim_gen_next(few, &b, &err);
        assert_int_equal(ra, rb);
        if (ra != 1)
            break;
        assert_int_equal(a.node, b.node);
        assert_int_equal(a.job, b.job);
        assert_int_equal(a.t, b.t);
        for (size_t j = 0; j < b.n; j++) {
            const char *m = gw_sim_gen_series_metric(few, b.series[j]);
            assert_true(strcmp(m, "DCGM_FI_DEV_GPU_UTIL") == 0 || strcmp(m, "up") == 0);
            size_t bl, al;
            const uint8_t *bb = gw_sim_gen_series_labels(few, b.series[j], &bl);
            int found = 0;
            for (size_t i = 0; i < a.n && !found; i++) {
                const uint8_t *ab = gw_sim_gen_series_labels(all, a.series[i], &al);
                if (al == bl && memcmp(ab, bb, bl) == 0) {
                    assert_true(a.v[i] == b.v[j]);   /* same values as without the filter */
                    found = 1;
                }
            }
            assert_true(found);
            compared++;
        }
    }
    assert_true(compared > 1000);
    gw_sim_gen_close(all);
    gw_sim_gen_close(few);
    gw_sim_timeline_free(tl);
}


/* ------------------------------------------------------------ variations */

static struct gw_sim_timeline *build_cfg(const struct gw_sim_config *c)
{
    struct gw_error err = {0};
    struct gw_sim_timeline *tl = NULL;
    if (gw_sim_timeline_build(c, &tl, &err) != GW_OK)
        fail_msg("timeline: %s", err.msg);
    return tl;
}

static struct gw_sim_config smoke_cfg(uint64_t seed, int64_t duration_ms)
{
    struct gw_sim_config c;
    struct gw_error err = {0};
    gw_sim_config_default(&c);
    assert_int_equal(gw_sim_config_profile(&c, "smoke", &err), GW_OK);
    c.seed = seed;
    c.start_ms = T0;
    c.duration_ms = duration_ms;
    return c;
}

static int is_node_name(const struct gw_sim_timeline *tl, const char *h)
{
    for (uint32_t i = 0; i < tl->cfg.nodes; i++)
        if (strcmp(gw_sim_node_name(tl, i), h) == 0)
            return 1;
    return 0;
}

static void test_sim_gen_label_styles(void **state)
{
    (void)state;
    for (int style = 0; style < GW_SIM_LABELS_COUNT_; style++) {
        struct gw_sim_config c = smoke_cfg(5, HOUR / 2);
        c.label_style = (enum gw_sim_label_style)style;
        struct gw_sim_timeline *tl = build_cfg(&c);
        struct gw_sim_gen *g = open_gen(tl, NULL, NULL);
        /* node_uname_info: nodename -> instance host part */
        char uname_inst[8][128], uname_node[8][64];
        size_t n_uname = 0, n_dcgm = 0, n_node = 0;
        for (uint32_t id = 0; id < gw_sim_gen_series_count(g); id++) {
            const char *m = gw_sim_gen_series_metric(g, id);
            if (strcmp(m, "node_uname_info") == 0) {
                assert_true(n_uname < 8);
                label_of(g, id, "nodename", uname_node[n_uname], sizeof uname_node[0]);
                label_of(g, id, "instance", uname_inst[n_uname], sizeof uname_inst[0]);
                assert_true(is_node_name(tl, uname_node[n_uname]));
                n_uname++;
            }
        }
        assert_int_equal(n_uname, c.nodes);
        for (uint32_t id = 0; id < gw_sim_gen_series_count(g); id++) {
            const char *m = gw_sim_gen_series_metric(g, id);
            char inst[128], job[64], hl[64], Hl[64], node[64], pod[64], ns[64];
            label_of(g, id, "instance", inst, sizeof inst);
            label_of(g, id, "job", job, sizeof job);
            label_of(g, id, "hostname", hl, sizeof hl);
            label_of(g, id, "Hostname", Hl, sizeof Hl);
            label_of(g, id, "node", node, sizeof node);
            label_of(g, id, "pod", pod, sizeof pod);
            label_of(g, id, "namespace", ns, sizeof ns);
            int dcgm = strncmp(m, "DCGM_", 5) == 0;
            int nodeexp = strncmp(m, "node_", 5) == 0;
            n_dcgm += dcgm;
            n_node += nodeexp;
            switch ((enum gw_sim_label_style)style) {
            case GW_SIM_LABELS_HOSTNAME:
                if (dcgm) assert_true(is_node_name(tl, hl) && !Hl[0]);
                break;
            case GW_SIM_LABELS_LEGACY:
                if (dcgm) assert_true(is_node_name(tl, Hl) && !hl[0]);
                break;
            case GW_SIM_LABELS_KUBE:
                if (dcgm) {
                    /* Hostname is the exporter pod, never the node; the node is in node= */
                    assert_int_equal(strlen(Hl), strlen("nvidia-dcgm-exporter-") + 5);
                    assert_memory_equal(Hl, "nvidia-dcgm-exporter-", 21);
                    for (size_t i = 21; i < 26; i++)
                        assert_true((Hl[i] >= 'a' && Hl[i] <= 'z') || (Hl[i] >= '0' && Hl[i] <= '9'));
                    assert_string_equal(pod, Hl);
                    assert_false(is_node_name(tl, Hl));
                    assert_true(is_node_name(tl, node));
                    assert_string_equal(ns, "gpu-operator");
                    assert_string_equal(job, "nvidia-dcgm-exporter");
                    assert_memory_equal(inst, "10.244.", 7);
                    assert_non_null(strstr(inst, ":9400"));
                }
                if (nodeexp) {
                    assert_true(!node[0] && !hl[0] && !Hl[0]);
                    assert_memory_equal(inst, "10.0.", 5);
                    assert_non_null(strstr(inst, ":9100"));
                    assert_string_equal(job, "node-exporter");
                    assert_string_equal(ns, "monitoring");
                    assert_memory_equal(pod, "node-exporter-", 14);
                }
                if (strcmp(m, "up") == 0 && strcmp(job, "nvidia-dcgm-exporter") == 0)
                    assert_true(is_node_name(tl, node) && pod[0] && !Hl[0]);
                if (strcmp(m, "up") == 0 && strcmp(job, "node-exporter") == 0)
                    assert_true(!node[0] && pod[0]);
                break;
            case GW_SIM_LABELS_FQDN:
                if (dcgm) {
                    assert_true(is_node_name(tl, hl));
                    char want[128];
                    snprintf(want, sizeof want, "%s.cluster.example.com:9400", hl);
                    assert_string_equal(inst, want);
                }
                if (nodeexp) assert_non_null(strstr(inst, ".cluster.example.com:9100"));
                break;
            case GW_SIM_LABELS_IP:
                if (dcgm) {
                    /* the host IP of the DCGM instance is node_uname_info's instance for that node */
                    assert_true(is_node_name(tl, Hl));
                    size_t k;
                    for (k = 0; k < n_uname && strcmp(uname_node[k], Hl) != 0; k++)
                        ;
                    assert_true(k < n_uname);
                    char want[128];
                    snprintf(want, sizeof want, "%.*s:9400", (int)(strlen(uname_inst[k]) - 5), uname_inst[k]);
                    assert_string_equal(inst, want);
                    assert_memory_equal(inst, "10.0.", 5);
                }
                break;
            case GW_SIM_LABELS_COUNT_:
                break;
            }
        }
        /* kube: node_uname_info is the one join from the host IP to the node name */
        if (style == GW_SIM_LABELS_KUBE)
            for (size_t k = 0; k < n_uname; k++)
                assert_memory_equal(uname_inst[k], "10.0.", 5);
        assert_true(n_dcgm > 100 && n_node > 1000);
        gw_sim_gen_close(g);
        gw_sim_timeline_free(tl);
    }
}

static void test_sim_gen_gpu_models(void **state)
{
    (void)state;
    const enum gw_sim_gpu_model models[] = {GW_SIM_GPU_A100, GW_SIM_GPU_H100, GW_SIM_GPU_B200};
    const char *names[] = {"NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3", "NVIDIA B200"};
    const double limit[] = {400, 700, 1000}, smmax[] = {1410, 1980, 1965};
    for (int mi = 0; mi < 3; mi++) {
        struct gw_sim_config c = smoke_cfg(3, 8 * HOUR);
        c.gpu_model = models[mi];
        c.failure_scale = 0;
        struct gw_sim_timeline *tl = build_cfg(&c);
        struct gw_sim_gen *g = open_gen(tl, NULL, NULL);
        struct gw_sim_scrape s;
        struct gw_error err = {0};
        double pmax = 0, pmin = 1e9, busy_sum = 0;
        size_t busy_n = 0, checked = 0;
        while (gw_sim_gen_next(g, &s, &err) == 1) {
            if (s.job != GW_SIM_JOB_DCGM)
                continue;
            struct gw_sim_node_state st;
            assert_int_equal(gw_sim_node_state_at(tl, s.node, s.t, &st), GW_OK);
            for (size_t i = 0; i < s.n; i++) {
                const char *m = gw_sim_gen_series_metric(g, s.series[i]);
                double v = s.v[i];
                if (strcmp(m, "DCGM_FI_DEV_POWER_USAGE") == 0) {
                    if (v > 1e12) continue;
                    pmax = v > pmax ? v : pmax;
                    pmin = v < pmin ? v : pmin;
                    if (st.phase == GW_SIM_PHASE_TRAIN && st.n_failures == 0) {
                        const struct gw_sim_gpu_spec *sp = gw_sim_gpu_spec(models[mi]);
                        assert_true(v >= sp->busy_power_lo_w - 1 && v <= sp->busy_power_hi_w + 1);
                        busy_sum += v;
                        busy_n++;
                    }
                } else if (strcmp(m, "DCGM_FI_DEV_SM_CLOCK") == 0) {
                    assert_true(v <= smmax[mi]);
                } else if (strcmp(m, "DCGM_FI_DEV_ENFORCED_POWER_LIMIT") == 0) {
                    assert_true(v == limit[mi]);
                    if (checked++ == 0) {
                        char mn[64];
                        label_of(g, s.series[i], "modelName", mn, sizeof mn);
                        assert_string_equal(mn, names[mi]);
                    }
                }
            }
        }
        assert_true(busy_n > 100);
        assert_true(pmax <= limit[mi] + 1);
        assert_true(pmin < 0.25 * limit[mi]);   /* idle GPUs draw the model's idle power */
        assert_true(busy_sum / (double)busy_n > 0.6 * limit[mi]);
        gw_sim_gen_close(g);
        gw_sim_timeline_free(tl);
    }
}

static void test_sim_gen_intervals(void **state)
{
    (void)state;
    const int64_t ivs[] = {15000, 60000};
    for (int k = 0; k < 2; k++) {
        struct gw_sim_config c = smoke_cfg(4, 2 * HOUR);
        c.interval_ms = ivs[k];
        struct gw_sim_timeline *tl = build_cfg(&c);
        struct gw_sim_gen *g = open_gen(tl, NULL, NULL);
        struct gw_sim_scrape s;
        struct gw_error err = {0};
        int64_t last = INT64_MIN;
        size_t n = 0;
        while (gw_sim_gen_next(g, &s, &err) == 1) {
            if (s.node != 0 || s.job != GW_SIM_JOB_DCGM)
                continue;
            if (last != INT64_MIN) {
                int64_t d = s.t - last;
                assert_true(d > 0);
                /* one interval +- twice the jitter, or a missed scrape */
                assert_true(d % ivs[k] <= 2 * c.jitter_ms || ivs[k] - d % ivs[k] <= 2 * c.jitter_ms);
            }
            last = s.t;
            n++;
        }
        int64_t rounds = 2 * HOUR / ivs[k];
        assert_true((int64_t)n >= rounds - 10 && (int64_t)n <= rounds);
        gw_sim_gen_close(g);
        gw_sim_timeline_free(tl);
    }
}

/* A failure of the wanted effect and class during steady training, found
 * by scanning seeds of a 12 h smoke cluster with a high failure scale. */
static struct gw_sim_timeline *find_failure(enum gw_sim_class cls, enum gw_sim_fault_effect eff, int64_t min_len,
                                            int want_pre, size_t *fi)
{
    for (uint64_t seed = 1; seed < 3000; seed++) {
        struct gw_sim_config c = smoke_cfg(seed, 12 * HOUR);
        c.failure_scale = 100;
        struct gw_sim_timeline *tl = build_cfg(&c);
        for (size_t i = 0; i < tl->n_failures; i++) {
            const struct gw_sim_failure *f = &tl->failures[i];
            if (f->cls != cls || f->effect != eff || f->t_fault < T0 + HOUR || f->t_recovered > T0 + 11 * HOUR ||
                f->t_recovered - f->t_fault < min_len)
                continue;
            if (want_pre && f->precursor == GW_SIM_PRE_NONE)
                continue;
            if (f->t_precursor_start != GW_SIM_NO_TIME && f->t_precursor_start < T0 + 20 * 60000)
                continue;
            struct gw_sim_node_state st;
            assert_int_equal(gw_sim_node_state_at(tl, f->node, f->t_fault - 60000, &st), GW_OK);
            if (st.phase != GW_SIM_PHASE_TRAIN || st.n_failures > 1)
                continue;
            assert_int_equal(gw_sim_node_state_at(tl, f->node, f->t_fault + 8 * 60000, &st), GW_OK);
            if (st.phase != GW_SIM_PHASE_TRAIN && cls == GW_SIM_FAIL_SLOW)
                continue;
            *fi = i;
            return tl;
        }
        gw_sim_timeline_free(tl);
    }
    fail_msg("no seed gives a %s failure", gw_sim_class_name(cls));
    return NULL;
}

static void test_sim_gen_os_collapse(void **state)
{
    (void)state;
    size_t fi;
    struct gw_sim_timeline *tl = find_failure(GW_SIM_OTHER_HW, GW_SIM_EFF_OS_COLLAPSE, 0, 1, &fi);
    const struct gw_sim_failure *f = &tl->failures[fi];
    assert_int_equal(f->precursor, GW_SIM_PRE_MEM_PRESSURE);
    assert_true(f->t_silent - f->t_fault >= 15 * 60000 && f->t_silent - f->t_fault <= 30 * 60000);
    assert_int_equal(f->xid, 0);
    struct gw_sim_gen *g = open_gen(tl, NULL, NULL);
    struct gw_sim_scrape s;
    struct gw_error err = {0};
    double intr_prev = -1, t_prev = 0, rate_before = 0, rate_after = 0;
    size_t nb = 0, na = 0, silent_scrapes = 0, fb_checked = 0;
    double fb_before[16] = {0};
    double memtotal = 0, avail_early = 0, avail_late = 1e30;
    while (gw_sim_gen_next(g, &s, &err) == 1) {
        if (s.node != f->node)
            continue;
        if (s.t >= f->t_silent && s.t < f->t_recovered)
            silent_scrapes++;
        for (size_t i = 0; i < s.n; i++) {
            const char *m = gw_sim_gen_series_metric(g, s.series[i]);
            double v = s.v[i];
            if (strcmp(m, "node_intr_total") == 0) {
                if (intr_prev >= 0 && v >= intr_prev) {
                    double r = (v - intr_prev) / ((double)s.t - t_prev) * 1000.0;
                    if (s.t < f->t_fault - 60000 && s.t > f->t_fault - 30 * 60000) { rate_before += r; nb++; }
                    if (s.t > f->t_fault + 60000 && s.t < f->t_silent) { rate_after += r; na++; }
                }
                intr_prev = v;
                t_prev = (double)s.t;
            } else if (strcmp(m, "node_procs_running") == 0 && s.t > f->t_fault + 1000 && s.t < f->t_silent) {
                assert_true(v <= 1);
            } else if (strcmp(m, "node_memory_MemTotal_bytes") == 0) {
                memtotal = v;
            } else if (strcmp(m, "node_memory_MemAvailable_bytes") == 0) {
                if (s.t < f->t_precursor_start - 60000) avail_early = v;
                if (s.t < f->t_fault && s.t > f->t_fault - 2 * 60000 && v < avail_late) avail_late = v;
            } else if (strcmp(m, "DCGM_FI_DEV_GPU_UTIL") == 0 && s.t > f->t_fault + 1000 && s.t < f->t_silent) {
                assert_true(v <= 10);
            } else if (strcmp(m, "DCGM_FI_DEV_FB_USED") == 0) {
                int gpu = label_int(g, s.series[i], "gpu");
                if (s.t < f->t_fault && s.t > f->t_fault - 5 * 60000) fb_before[gpu] = v;
                if (s.t > f->t_fault + 1000 && s.t < f->t_silent) {
                    /* the framebuffer stays allocated */
                    assert_true(fb_before[gpu] > 0);
                    assert_true(fabs(v - fb_before[gpu]) < 0.01 * fb_before[gpu]);
                    fb_checked++;
                }
            }
        }
    }
    assert_int_equal(silent_scrapes, 0);   /* the node answers no scrape once silent */
    assert_true(nb > 5 && na > 5 && fb_checked > 10);
    double ratio = (rate_after / (double)na) / (rate_before / (double)nb);
    if (ratio < 0.15 || ratio > 0.4)
        fail_msg("interrupt rate after the collapse %.2f of before", ratio);
    /* memory pressure before: MemAvailable falls toward a few percent of MemTotal */
    assert_true(avail_early > 0.2 * memtotal);
    assert_true(avail_late < 0.10 * memtotal);
    gw_sim_gen_close(g);
    gw_sim_timeline_free(tl);
}

static void test_sim_gen_gsp_hang(void **state)
{
    (void)state;
    size_t fi;
    struct gw_sim_timeline *tl = find_failure(GW_SIM_GSP, GW_SIM_EFF_FROZEN, 8 * 60000, 0, &fi);
    const struct gw_sim_failure *f = &tl->failures[fi];
    if (f->t_xid_visible != GW_SIM_NO_TIME)
        assert_true(f->t_xid_visible - f->t_fault >= 2 * 60000 && f->t_xid_visible - f->t_fault <= 16 * 60000);
    struct gw_sim_gen *g = open_gen(tl, NULL, NULL);
    struct gw_sim_scrape s;
    struct gw_error err = {0};
    const char *frozen[] = {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_GPU_TEMP",
                            "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_MEM_COPY_UTIL"};
    double last[6];
    int have[6] = {0};
    size_t repeats = 0, idle_power = 0, slow = 0, xid_early = 0, xid_shown = 0;
    const double idle = gw_sim_gpu_spec(tl->cfg.gpu_model)->idle_power_w;
    while (gw_sim_gen_next(g, &s, &err) == 1) {
        if (s.node != f->node || s.job != GW_SIM_JOB_DCGM)
            continue;
        int in = s.t > f->t_fault && s.t < f->t_recovered;
        for (size_t i = 0; i < s.n; i++) {
            const char *m = gw_sim_gen_series_metric(g, s.series[i]);
            if (strcmp(m, "scrape_duration_seconds") == 0 && in && s.t > f->t_fault + 60000)
                slow += s.v[i] >= 0.6;
            if (label_int(g, s.series[i], "gpu") != f->gpu || !in)
                continue;
            for (int k = 0; k < 6; k++)
                if (strcmp(m, frozen[k]) == 0) {
                    if (have[k]) {
                        uint64_t a, b;
                        memcpy(&a, &last[k], 8);
                        memcpy(&b, &s.v[i], 8);
                        assert_int_equal(a, b);   /* bit-identical, scrape after scrape */
                        repeats++;
                    }
                    last[k] = s.v[i];
                    have[k] = 1;
                }
            if (strcmp(m, "DCGM_FI_DEV_POWER_USAGE") == 0)
                idle_power += s.v[i] <= idle + 15;
            if (strcmp(m, "DCGM_FI_DEV_XID_ERRORS") == 0 && s.v[i] >= 119) {
                xid_shown++;
                if (f->t_xid_visible == GW_SIM_NO_TIME || s.t < f->t_xid_visible) xid_early++;
            }
        }
    }
    assert_true(repeats > 6 * 10);
    assert_true(idle_power > 10);
    assert_true(slow > 10);   /* the exporter answers slowly */
    assert_int_equal(xid_early, 0);
    if (f->t_xid_visible != GW_SIM_NO_TIME && f->t_xid_visible < f->t_recovered)
        assert_true(xid_shown > 0);
    gw_sim_gen_close(g);
    gw_sim_timeline_free(tl);
}

static void test_sim_gen_thermal_fail_slow(void **state)
{
    (void)state;
    size_t fi;
    struct gw_sim_timeline *tl = find_failure(GW_SIM_FAIL_SLOW, GW_SIM_EFF_NONE, 20 * 60000, 0, &fi);
    const struct gw_sim_failure *f = &tl->failures[fi];
    struct gw_sim_gen *g = open_gen(tl, NULL, NULL);
    struct gw_sim_scrape s;
    struct gw_error err = {0};
    double dtemp = 0, dclk = 0;
    size_t n = 0, bits = 0, before_bits = 0;
    const int64_t a = f->t_fault + f->sig.ramp_ms + 60000, b = f->t_fault + 15 * 60000;
    while (gw_sim_gen_next(g, &s, &err) == 1) {
        if (s.node != f->node || s.job != GW_SIM_JOB_DCGM)
            continue;
        double temp[16] = {0}, clk[16] = {0};
        for (size_t i = 0; i < s.n; i++) {
            const char *m = gw_sim_gen_series_metric(g, s.series[i]);
            int gpu = label_int(g, s.series[i], "gpu");
            if (gpu < 0) continue;
            if (strcmp(m, "DCGM_FI_DEV_GPU_TEMP") == 0) temp[gpu] = s.v[i];
            if (strcmp(m, "DCGM_FI_DEV_SM_CLOCK") == 0) clk[gpu] = s.v[i];
            if (strcmp(m, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS") == 0 && gpu == f->gpu) {
                if (s.t > f->t_fault && s.t < f->t_recovered)
                    bits += ((uint32_t)s.v[i] & 0x20u) != 0;
                else if (s.t < f->t_fault && f->precursor == GW_SIM_PRE_NONE)
                    before_bits += ((uint32_t)s.v[i] & 0x60u) != 0;
            }
        }
        if (s.t < a || s.t > b)
            continue;
        double ts = 0, cs = 0;   /* siblings share the node's phase */
        for (uint32_t k = 0; k < tl->cfg.gpus; k++)
            if ((int32_t)k != f->gpu) { ts += temp[k]; cs += clk[k]; }
        ts /= tl->cfg.gpus - 1;
        cs /= tl->cfg.gpus - 1;
        dtemp += temp[f->gpu] - ts;
        dclk += 1.0 - clk[f->gpu] / cs;
        n++;
    }
    if (n <= 5 || bits <= 10)
        fail_msg("fail-slow %zu on %u gpu %d: %zu training scrapes, %zu with bits", fi, f->node, f->gpu, n, bits);
    assert_int_equal(before_bits, 0);
    dtemp /= (double)n;
    dclk /= (double)n;
    if (dtemp < 5.0 || dtemp > 17.0 || dclk < 0.08 || dclk > 0.32)
        fail_msg("fail-slow: temperature %.1f C above the siblings, clock %.2f below", dtemp, dclk);
    gw_sim_gen_close(g);
    gw_sim_timeline_free(tl);
}

/* ------------------------------------------------ checkpoint bottlenecks */

/* What a checkpoint detector reads, summed per node over operations and
 * transports: WRITE and READ per-op counters, transport sends and backlog,
 * storage NIC bytes and speed; slot high-water marks min / max. */
enum { M_REQ, M_QUEUE, M_RESP, M_REQT, M_BYTES, M_OPS = 5,   /* x2: WRITE, READ */
       M_SENDS = 10, M_BACKLOG, M_TX, M_RX, M_SPEED, M_SLOTS, M_N };

static int keep_ckpt(void *ud, const char *m)
{
    (void)ud;
    static const char *const keep[] = {
        "node_mountstats_nfs_operations_requests_total", "node_mountstats_nfs_operations_queue_time_seconds_total",
        "node_mountstats_nfs_operations_response_time_seconds_total",
        "node_mountstats_nfs_operations_request_time_seconds_total",
        "node_mountstats_nfs_operations_sent_bytes_total", "node_mountstats_nfs_operations_received_bytes_total",
        "node_mountstats_nfs_transport_sends_total", "node_mountstats_nfs_transport_backlog_queue_total",
        "node_mountstats_nfs_transport_maximum_rpc_slots", "node_network_transmit_bytes_total",
        "node_network_receive_bytes_total", "node_network_speed_bytes", NULL};
    for (int i = 0; keep[i]; i++)
        if (strcmp(m, keep[i]) == 0)
            return 1;
    return 0;
}

/* Slot of a series in the per-node vector, -1 when not read. */
static int ckpt_slot(const struct gw_sim_gen *g, uint32_t id)
{
    const char *m = gw_sim_gen_series_metric(g, id);
    char buf[40];
    if (strncmp(m, "node_mountstats_nfs_operations_", 31) == 0) {
        label_of(g, id, "operation", buf, sizeof buf);
        int base = strcmp(buf, "WRITE") == 0 ? 0 : strcmp(buf, "READ") == 0 ? M_OPS : -1;
        if (base < 0)
            return -1;
        const char *f = m + 31;
        if (!strcmp(f, "requests_total")) return base + M_REQ;
        if (!strcmp(f, "queue_time_seconds_total")) return base + M_QUEUE;
        if (!strcmp(f, "response_time_seconds_total")) return base + M_RESP;
        if (!strcmp(f, "request_time_seconds_total")) return base + M_REQT;
        if (!strcmp(f, base ? "received_bytes_total" : "sent_bytes_total")) return base + M_BYTES;
        return -1;
    }
    if (!strcmp(m, "node_mountstats_nfs_transport_sends_total")) return M_SENDS;
    if (!strcmp(m, "node_mountstats_nfs_transport_backlog_queue_total")) return M_BACKLOG;
    if (!strcmp(m, "node_mountstats_nfs_transport_maximum_rpc_slots")) return M_SLOTS;
    label_of(g, id, "device", buf, sizeof buf);
    if (strstr(buf, "s0f") == NULL)           /* storage NICs: enp2NNs0fXnpX */
        return -1;
    if (!strcmp(m, "node_network_transmit_bytes_total")) return M_TX;
    if (!strcmp(m, "node_network_receive_bytes_total")) return M_RX;
    if (!strcmp(m, "node_network_speed_bytes")) return M_SPEED;
    return -1;
}

struct ckwin {                  /* one node's scrapes inside one checkpoint */
    int32_t ckpt;
    int64_t ta, tb;
    uint32_t restarts;
    int quiet;
    double a[M_N], b[M_N], slots_min, slots_max;
};

struct ckstat {                 /* ranges over every window of one kind */
    size_t n;
    double lo[8], hi[8];
};
enum { S_Q, S_RTT, S_BPS, S_SLOTMIN, S_LINK, S_LITTLE, S_GBPS, S_IO };

static void ckstat_add(struct ckstat *st, const double *v)
{
    for (int i = 0; i < 8; i++) {
        if (st->n == 0 || v[i] < st->lo[i]) st->lo[i] = v[i];
        if (st->n == 0 || v[i] > st->hi[i]) st->hi[i] = v[i];
    }
    st->n++;
}

/* Closes a window: the documented signature of its checkpoint's kind, computed
 * from the counters as a detector would (docs/simulator.md 10). */
#define CK(cond)                                                                                   \
    do {                                                                                           \
        if (!(cond))                                                                               \
            fail_msg("%s %s ckpt %d: %s (q %.3f rtt %.4f backlog/send %.3g slots %g..%g link %.3f "   \
                     "little %.2f GB/s %.2f io %.0f)", gw_sim_bottleneck_name(ck->bottleneck),      \
                     o ? "load" : "save", (int)w->ckpt, #cond, v[S_Q], v[S_RTT], v[S_BPS],           \
                     w->slots_min, w->slots_max, v[S_LINK], v[S_LITTLE], v[S_GBPS], v[S_IO]);       \
    } while (0)

static void ckwin_close(const struct gw_sim_timeline *tl, struct ckwin *w, struct ckstat *stats)
{
    if (w->ckpt < 0 || !w->quiet || w->tb - w->ta < 3 * tl->cfg.interval_ms)
        return;
    const struct gw_sim_checkpoint *ck = &tl->checkpoints[w->ckpt];
    int o = ck->phase == GW_SIM_CKPT_SAVE ? 0 : M_OPS;
    double d[M_N];
    for (int i = 0; i < M_N; i++)
        d[i] = w->b[i] - w->a[i];
    double dt = (double)(w->tb - w->ta) / 1000.0, nt = (double)tl->cfg.nfs_transports;
    assert_true(d[o + M_REQ] > 0 && d[M_SENDS] > 0);
    double v[8];
    v[S_Q] = d[o + M_QUEUE] / d[o + M_REQT];
    v[S_RTT] = d[o + M_RESP] / d[o + M_REQ];
    v[S_BPS] = d[M_BACKLOG] / d[M_SENDS];
    v[S_SLOTMIN] = w->slots_min;
    v[S_LINK] = (o ? d[M_RX] : d[M_TX]) / dt / w->b[M_SPEED];
    v[S_IO] = d[o + M_BYTES] / d[o + M_REQ];
    v[S_GBPS] = d[o + M_BYTES] / dt / 1e9;
    v[S_LITTLE] = v[S_GBPS] * 1e9 / (nt * w->slots_min * v[S_IO] / v[S_RTT]);   /* 1: slots x I/O / RTT */
    switch (ck->bottleneck) {
    case GW_SIM_BN_SLOTS:
        CK(v[S_Q] >= 0.89);
        CK(v[S_RTT] >= 0.0045 && v[S_RTT] <= 0.021);
        CK(v[S_BPS] > 1.0);
        CK(w->slots_min == 128 && w->slots_max == 128);
        CK(v[S_LINK] < 0.12);
        CK(v[S_LITTLE] > 0.8 && v[S_LITTLE] < 1.05);
        break;
    case GW_SIM_BN_SERVER:
        CK(v[S_RTT] >= 0.035);
        CK(v[S_Q] <= 0.32);
        CK(v[S_BPS] < 1.0);
        CK(v[S_LINK] < 0.12);
        CK(v[S_LITTLE] < 0.8);
        break;
    case GW_SIM_BN_LINK:
        CK(v[S_LINK] >= 0.85 && v[S_LINK] <= 0.99);
        CK(v[S_RTT] >= 0.005 && v[S_RTT] <= 0.025);
        CK(v[S_Q] >= 0.24 && v[S_Q] <= 0.66);
        CK(v[S_BPS] < 1.0);
        break;
    default:
        CK(v[S_Q] <= 0.16);
        CK(v[S_RTT] <= 0.0045);
        CK(v[S_BPS] < 0.5);
        CK(w->slots_max < 100);
        CK(v[S_LINK] < 0.5);
        break;
    }
    ckstat_add(&stats[ck->bottleneck * 2 + (o ? 1 : 0)], v);
}

#undef CK

static void ckpt_signatures(int kind, uint32_t nodes, int64_t dur, struct ckstat *stats)
{
    struct gw_sim_config c;
    struct gw_error err = {0};
    struct gw_sim_timeline *tl = NULL;
    gw_sim_config_default(&c);
    c.seed = 21;
    c.start_ms = T0;
    c.duration_ms = dur;
    gw_sim_config_set_nodes(&c, nodes);
    c.ckpt_bottleneck = kind;
    assert_int_equal(gw_sim_timeline_build(&c, &tl, &err), GW_OK);
    struct gw_sim_gen *g = open_gen(tl, keep_ckpt, NULL);
    struct ckwin *w = calloc(nodes, sizeof *w);
    int8_t *slot = NULL;
    size_t cap = 0;
    assert_non_null(w);
    for (uint32_t i = 0; i < nodes; i++)
        w[i].ckpt = -1;
    struct gw_sim_scrape s;
    while (gw_sim_gen_next(g, &s, &err) == 1) {
        if (s.job != GW_SIM_JOB_NODE || s.n < 10)
            continue;
        struct gw_sim_node_state st;
        assert_int_equal(gw_sim_node_state_at(tl, s.node, s.t, &st), GW_OK);
        double v[M_N] = {0}, smin = 1e9, smax = 0;
        for (size_t i = 0; i < s.n; i++) {
            uint32_t id = s.series[i];
            if (id >= cap) {
                size_t n = gw_sim_gen_series_count(g);
                slot = realloc(slot, n);
                assert_non_null(slot);
                for (size_t k = cap; k < n; k++)
                    slot[k] = (int8_t)ckpt_slot(g, (uint32_t)k);
                cap = n;
            }
            int k = slot[id];
            if (k == M_SLOTS) {
                smin = fmin(smin, s.v[i]);
                smax = fmax(smax, s.v[i]);
            } else if (k >= 0) {
                v[k] += s.v[i];
            }
        }
        struct ckwin *x = &w[s.node];
        int in = st.checkpoint >= 0 && (st.nfs_write_bps > 1e8 || st.nfs_read_bps > 1e8);
        if (x->ckpt >= 0 && (!in || st.checkpoint != x->ckpt)) {
            ckwin_close(tl, x, stats);
            x->ckpt = -1;
        }
        if (!in)
            continue;
        int quiet = st.n_failures == 0 && st.n_baits == 0 && st.node_up;
        if (x->ckpt < 0) {
            x->ckpt = st.checkpoint;
            x->ta = s.t;
            x->restarts = st.node_restarts;
            x->quiet = quiet;
            memcpy(x->a, v, sizeof v);
        }
        x->quiet &= quiet && st.node_restarts == x->restarts;
        x->tb = s.t;
        memcpy(x->b, v, sizeof v);
        x->slots_min = smin;
        x->slots_max = smax;
    }
    for (uint32_t i = 0; i < nodes; i++)
        ckwin_close(tl, &w[i], stats);
    free(slot);
    free(w);
    gw_sim_gen_close(g);
    gw_sim_timeline_free(tl);
}

static void test_sim_gen_checkpoint_bottlenecks(void **state)
{
    (void)state;
    struct ckstat stats[GW_SIM_BN_COUNT_ * 2];
    memset(stats, 0, sizeof stats);
    /* a paper-sized cluster (sessions of 56-60 nodes), one run per kind */
    for (int kind = 0; kind < GW_SIM_BN_COUNT_; kind++)
        ckpt_signatures(kind, 63, 20 * HOUR, stats);
    static const char *const nm[8] = {"q", "rtt_ms", "backlog/send", "slots_min", "link", "little", "GB/s", "io_KiB"};
    for (int k = 0; k < GW_SIM_BN_COUNT_ * 2; k++) {
        if (getenv("GW_SIM_CKPT_REPORT")) {
            fprintf(stderr, "%s %s windows=%zu", gw_sim_bottleneck_name(k / 2), k % 2 ? "load" : "save", stats[k].n);
            for (int i = 0; i < 8; i++) {
                double f = i == S_RTT ? 1e3 : i == S_IO ? 1.0 / 1024 : 1;
                fprintf(stderr, " %s=%.3g..%.3g", nm[i], stats[k].lo[i] * f, stats[k].hi[i] * f);
            }
            fprintf(stderr, "\n");
        }
        assert_true(stats[k].n >= 20);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_gen_golden),
        cmocka_unit_test(test_sim_gen_series_per_node),
        cmocka_unit_test(test_sim_gen_counters_monotonic),
        cmocka_unit_test(test_sim_gen_deterministic),
        cmocka_unit_test(test_sim_gen_vanish_at_fault),
        cmocka_unit_test(test_sim_gen_sentinel_at_fault),
        cmocka_unit_test(test_sim_gen_xid_latch),
        cmocka_unit_test(test_sim_gen_legacy_hostname),
        cmocka_unit_test(test_sim_gen_value_ranges),
        cmocka_unit_test(test_sim_gen_filter),
        cmocka_unit_test(test_sim_gen_label_styles),
        cmocka_unit_test(test_sim_gen_gpu_models),
        cmocka_unit_test(test_sim_gen_intervals),
        cmocka_unit_test(test_sim_gen_os_collapse),
        cmocka_unit_test(test_sim_gen_gsp_hang),
        cmocka_unit_test(test_sim_gen_thermal_fail_slow),
        cmocka_unit_test(test_sim_gen_checkpoint_bottlenecks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
