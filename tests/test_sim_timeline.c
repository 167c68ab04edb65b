/* test_sim_timeline.c - the simulator's timeline: config defaults, profiles
 * and named config errors; byte-identical ground truth for a seed; event
 * rates of the paper profile over several seeds checked against the
 * reference figures (gpu-telemetry.md sections 1 and 7) with tolerances
 * derived from the expected Poisson / binomial spread of the pooled
 * counts; node-state consistency with sessions, checkpoints, failures and
 * baits; and the cost of a full paper node-state sweep. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/sim.h"

#define DAY_MS 86400000LL
#define MIN_MS 60000LL
#define FIXED_START 1760000000000LL   /* aligned to 30 s */
#ifndef N_SEEDS
#define N_SEEDS 16
#endif

#define DAY_MS_T 86400000LL

static struct gw_sim_config paper(uint64_t seed)
{
    struct gw_sim_config c;
    gw_sim_config_default(&c);
    c.seed = seed;
    c.start_ms = FIXED_START;
    return c;
}

static struct gw_sim_timeline *build(const struct gw_sim_config *c)
{
    struct gw_sim_timeline *tl = NULL;
    struct gw_error e = { 0 };
    int rc = gw_sim_timeline_build(c, &tl, &e);
    if (rc) fprintf(stderr, "build: %s\n", e.msg);
    assert_int_equal(rc, GW_OK);
    assert_non_null(tl);
    return tl;
}

static char *truth_bytes(const struct gw_sim_timeline *tl, size_t *len)
{
    /* the stream's buffer pointer lives on the heap: gcc -O3 takes the
     * address of a local handed to open_memstream for a dangling pointer */
    char **bufp = calloc(1, sizeof *bufp);
    assert_non_null(bufp);
    FILE *f = open_memstream(bufp, len);
    assert_non_null(f);
    assert_int_equal(gw_sim_truth_write(tl, f, NULL), GW_OK);
    fclose(f);
    char *buf = *bufp;
    free(bufp);
    return buf;
}

/* Mean of n draws whose per-draw sd is sd: |mean - expected| within k sd/sqrt(n). */
static void assert_near(const char *what, double got, double expected, double sd_one, int n, double k)
{
    double tol = k * sd_one / sqrt((double)n);
    if (getenv("GW_TEST_VERBOSE")) fprintf(stderr, "%s: %.3f (%.3f +- %.3f)\n", what, got, expected, tol);
    if (fabs(got - expected) > tol)
        fail_msg("%s: %.3f outside %.3f +- %.3f", what, got, expected, tol);
}

/* Pooled proportion: |p - expected| within k binomial sd. */
static void assert_prop(const char *what, double hits, double total, double expected, double k)
{
    assert_true(total > 0);
    double p = hits / total;
    double tol = k * sqrt(expected * (1 - expected) / total);
    if (getenv("GW_TEST_VERBOSE")) fprintf(stderr, "%s: %.3f (%.3f +- %.3f)\n", what, p, expected, tol);
    if (fabs(p - expected) > tol)
        fail_msg("%s: %.3f (%g / %g) outside %.3f +- %.3f", what, p, hits, total, expected, tol);
}

/* ------------------------------------------------------------- config */
static void test_sim_timeline_config_defaults(void **state)
{
    (void)state;
    struct gw_sim_config c;
    gw_sim_config_default(&c);
    assert_string_equal(c.profile, "paper");
    assert_int_equal(c.nodes, 63);
    assert_int_equal(c.spare_nodes, 3);
    assert_int_equal(c.gpus, 8);
    assert_int_equal(c.interval_ms, 30000);
    assert_int_equal(c.jitter_ms, 1000);
    assert_true(fabs(c.scrape_miss_prob - 0.001) < 1e-12);
    assert_int_equal(c.ckpt_interval_ms, 150 * MIN_MS);
    assert_int_equal(c.duration_ms, 55 * DAY_MS);
    assert_true(c.failure_scale == 1.0);
    assert_int_equal(c.start_ms % c.interval_ms, 0);
    int64_t now = gw_now_ms();
    assert_true(c.start_ms <= now - c.duration_ms);
    assert_true(c.start_ms > now - c.duration_ms - c.interval_ms - 5000);
    assert_int_equal(gw_sim_config_check(&c, NULL), GW_OK);

    /* smoke from the default: 4 nodes incl. 1 spare, 1 day, still ending now */
    struct gw_error e = { 0 };
    c.seed = 99;
    assert_int_equal(gw_sim_config_profile(&c, "smoke", &e), GW_OK);
    assert_string_equal(c.profile, "smoke");
    assert_int_equal(c.nodes, 4);
    assert_int_equal(c.spare_nodes, 1);
    assert_int_equal(c.duration_ms, DAY_MS);
    assert_int_equal(c.seed, 99);
    assert_true(c.start_ms + c.duration_ms > now - 60000);
    assert_int_equal(c.start_ms % c.interval_ms, 0);
    /* an explicit start is kept */
    c.start_ms = FIXED_START;
    assert_int_equal(gw_sim_config_profile(&c, "paper", &e), GW_OK);
    assert_int_equal(c.start_ms, FIXED_START);
    assert_int_equal(c.nodes, 63);
    assert_int_equal(gw_sim_config_profile(&c, "huge", &e), GW_EINVAL);
    assert_non_null(strstr(e.msg, "huge"));
    assert_int_equal(c.nodes, 63);
}

static void test_sim_timeline_config_errors(void **state)
{
    (void)state;
    /* each mutation must be refused with a message naming its field */
    struct gw_sim_config c;
    struct gw_error e;
#define BAD(field, stmt) do {                                               \
        c = paper(1); stmt;                                                 \
        memset(&e, 0, sizeof e);                                            \
        assert_int_equal(gw_sim_config_check(&c, &e), GW_EINVAL);           \
        if (strncmp(e.msg, field, strlen(field)) != 0)                      \
            fail_msg("expected field %s, got '%s'", field, e.msg);          \
        struct gw_sim_timeline *tl_ = NULL;                                 \
        assert_int_equal(gw_sim_timeline_build(&c, &tl_, NULL), GW_EINVAL); \
        assert_null(tl_);                                                   \
    } while (0)
    BAD("nodes", c.nodes = 0);
    BAD("nodes", c.nodes = GW_SIM_MAX_NODES + 1);
    BAD("spare_nodes", c.spare_nodes = 63);
    BAD("gpus", c.gpus = 0);
    BAD("gpus", c.gpus = GW_SIM_MAX_GPUS + 1);
    BAD("host_span", c.host_span = 10);
    BAD("host_base", c.host_base = 999990);
    BAD("interval_ms", c.interval_ms = 999);
    BAD("duration_ms", c.duration_ms = 0);
    BAD("duration_ms", c.duration_ms = 10000);
    BAD("start_ms", c.start_ms = -1);
    BAD("jitter_ms", c.jitter_ms = 15000);
    BAD("jitter_ms", c.jitter_ms = -1);
    BAD("scrape_miss_prob", c.scrape_miss_prob = 1.0);
    BAD("scrape_miss_prob", c.scrape_miss_prob = NAN);
    BAD("compute_nics", c.compute_nics = 0);
    BAD("storage_nics", c.storage_nics = 17);
    BAD("nfs_transports", c.nfs_transports = 0);
    BAD("ckpt_interval_ms", c.ckpt_interval_ms = 1000);
    BAD("failure_scale", c.failure_scale = -1);
    BAD("profile", c.profile[0] = 0);
#undef BAD
    assert_int_equal(gw_sim_config_check(NULL, NULL), GW_EINVAL);
}

/* ------------------------------------------------------ determinism */
static void test_sim_timeline_deterministic(void **state)
{
    (void)state;
    struct gw_sim_config c = paper(7);
    struct gw_sim_timeline *a = build(&c), *b = build(&c);
    size_t la, lb;
    char *ta = truth_bytes(a, &la), *tb = truth_bytes(b, &lb);
    assert_true(la > 10000);
    assert_int_equal(la, lb);
    assert_memory_equal(ta, tb, la);
    c.seed = 8;
    struct gw_sim_timeline *d = build(&c);
    size_t ld;
    char *td = truth_bytes(d, &ld);
    assert_true(ld != la || memcmp(ta, td, la) != 0);

    /* hostnames: gpuNNN, distinct, sorted, inside the configured numbering */
    unsigned prev = 0;
    for (uint32_t i = 0; i < c.nodes; i++) {
        const char *n = gw_sim_node_name(a, i);
        assert_non_null(n);
        assert_int_equal(strlen(n), 6);
        assert_memory_equal(n, "gpu", 3);
        char *end;
        unsigned long v = strtoul(n + 3, &end, 10);
        assert_int_equal(*end, 0);
        assert_true(v >= c.host_base && v < c.host_base + c.host_span);
        assert_true(v > prev);
        prev = (unsigned)v;
    }
    assert_null(gw_sim_node_name(a, c.nodes));
    /* different seeds draw different hostnames (63 of 130: almost surely) */
    int differ = 0;
    for (uint32_t i = 0; i < c.nodes; i++)
        differ |= strcmp(gw_sim_node_name(a, i), gw_sim_node_name(d, i)) != 0;
    assert_true(differ);
    free(ta); free(tb); free(td);
    gw_sim_timeline_free(a);
    gw_sim_timeline_free(b);
    gw_sim_timeline_free(d);
    gw_sim_timeline_free(NULL);
}

/* Every line is one JSON object of a known type; keys in the documented order. */
static void test_sim_timeline_truth_format(void **state)
{
    (void)state;
    struct gw_sim_config c = paper(3);
    struct gw_sim_timeline *tl = build(&c);
    size_t len;
    char *t = truth_bytes(tl, &len);
    size_t lines = 0, nf = 0, ns = 0, nc = 0, nb = 0;
    for (char *p = t; p < t + len;) {
        char *nl = memchr(p, '\n', (size_t)(t + len - p));
        assert_non_null(nl);
        *nl = 0;
        assert_true(p[0] == '{' && nl[-1] == '}');
        if (strncmp(p, "{\"type\":\"failure\",\"id\":", 23) == 0) {
            const char *keys[] = { "\"class\":", "\"node\":\"gpu", "\"gpu\":", "\"xid\":", "\"action\":",
                                   "\"precursor\":", "\"t_precursor_start\":", "\"t_fault\":",
                                   "\"t_xid_visible\":", "\"t_recovered\":", "\"session\":" };
            const char *q = p;
            for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
                const char *r = strstr(q, keys[k]);
                if (!r) fail_msg("key %s missing or out of order in %s", keys[k], p);
                q = r;
            }
            nf++;
        } else if (strncmp(p, "{\"type\":\"session\"", 17) == 0) {
            assert_non_null(strstr(p, "\"chain\":"));
            assert_non_null(strstr(p, "\"outcome\":"));
            assert_non_null(strstr(p, "\"excluded_node\":"));
            ns++;
        } else if (strncmp(p, "{\"type\":\"checkpoint\"", 20) == 0) {
            assert_true(strstr(p, "\"phase\":\"save\"") || strstr(p, "\"phase\":\"load\""));
            assert_non_null(strstr(p, "\"bytes\":"));
            nc++;
        } else if (strncmp(p, "{\"type\":\"bait\"", 14) == 0) {
            assert_non_null(strstr(p, "\"kind\":"));
            nb++;
        } else {
            fail_msg("unknown line %s", p);
        }
        lines++;
        p = nl + 1;
    }
    assert_int_equal(nf, tl->n_failures);
    assert_int_equal(ns, tl->n_sessions);
    assert_int_equal(nc, tl->n_checkpoints);
    assert_int_equal(nb, tl->n_baits);
    assert_int_equal(lines, nf + ns + nc + nb);
    /* a killed session's line names its failure, and the failure's line its session */
    int checked = 0;
    for (size_t i = 0; i < tl->n_sessions && !checked; i++) {
        int32_t fi = tl->sessions[i].failure;
        if (fi < 0) continue;
        char want[160];
        snprintf(want, sizeof want, "{\"type\":\"session\",\"id\":%zu,", i);
        char *line = memmem(t, len, want, strlen(want));
        assert_non_null(line);
        snprintf(want, sizeof want, "\"failure\":%d,", fi);
        assert_non_null(strstr(line, want));
        snprintf(want, sizeof want, "{\"type\":\"failure\",\"id\":%d,", fi);
        line = memmem(t, len, want, strlen(want));
        assert_non_null(line);
        snprintf(want, sizeof want, "\"session\":%zu,", i);
        assert_non_null(strstr(line, want));
        checked = 1;
    }
    assert_true(checked);
    free(t);
    gw_sim_timeline_free(tl);
}

/* ------------------------------------------------------ paper rates */
struct rates {
    double hw, distinct, xid_gpu, sessions, ckpts, coll, app;
    double cls[GW_SIM_CLASS_COUNT_];
    double pre, hw_in_session, lemon_hw, top3_share_sum;
    double episodes, episodes_ok;
    double spacing[4096];
    size_t n_spacing;
    int runs;
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void collect(const struct gw_sim_timeline *tl, struct rates *r)
{
    const uint32_t n = tl->cfg.nodes;
    uint32_t *hw_per_node = calloc(n, sizeof *hw_per_node);
    uint32_t *excl = calloc(n, sizeof *excl);
    assert_non_null(hw_per_node);
    assert_non_null(excl);
    for (size_t i = 0; i < tl->n_failures; i++) {
        const struct gw_sim_failure *f = &tl->failures[i];
        r->cls[f->cls]++;
        if (f->cls == GW_SIM_COLLECTIVE) { r->coll++; continue; }
        if (f->cls == GW_SIM_APP_XID) { r->app++; continue; }
        r->hw++;
        hw_per_node[f->node]++;
        if (tl->lemon[f->node]) r->lemon_hw++;
        if (f->precursor != GW_SIM_PRE_NONE) r->pre++;
        if (f->t_xid_visible != GW_SIM_NO_TIME) r->xid_gpu++;
        struct gw_sim_node_state st;
        assert_int_equal(gw_sim_node_state_at(tl, f->node, f->t_fault - 1, &st), GW_OK);
        if (st.session >= 0) r->hw_in_session++;
    }
    for (uint32_t i = 0; i < n; i++) r->distinct += hw_per_node[i] > 0;
    r->sessions += (double)tl->n_sessions;
    r->ckpts += (double)tl->n_checkpoints;
    uint32_t total_excl = 0;
    for (size_t i = 0; i < tl->n_sessions; i++)
        if (tl->sessions[i].excluded_node >= 0) { excl[tl->sessions[i].excluded_node]++; total_excl++; }
    if (total_excl) {
        uint32_t top[3] = { 0, 0, 0 };
        for (uint32_t i = 0; i < n; i++) {
            uint32_t v = excl[i];
            if (v > top[0]) { top[2] = top[1]; top[1] = top[0]; top[0] = v; }
            else if (v > top[1]) { top[2] = top[1]; top[1] = v; }
            else if (v > top[2]) top[2] = v;
        }
        r->top3_share_sum += (double)(top[0] + top[1] + top[2]) / total_excl;
    } else {
        r->top3_share_sum += 1.0;    /* no exclusion at all: trivially concentrated */
    }
    /* retry episodes: retries after a session that reached steady training
     * (or a first submission); an episode succeeds when a retry reaches
     * steady training */
    int in_ep = 0, ep_ok = 0;
    for (size_t i = 1; i < tl->n_sessions; i++) {
        const struct gw_sim_session *s = &tl->sessions[i], *p = &tl->sessions[i - 1];
        int retry = s->attempt > 0 && s->chain == p->chain;
        if (retry) {
            assert_int_equal(s->attempt, p->attempt + 1);
            assert_true(p->outcome != GW_SIM_SESS_COMPLETED);
            int64_t from = p->failure >= 0 ? p->t_end : p->t_start;
            if (r->n_spacing < sizeof r->spacing / sizeof *r->spacing)
                r->spacing[r->n_spacing++] = (double)(s->t_start - from) / MIN_MS;
            int p_reached = p->t_end > p->t_steady;
            if (p_reached || p->attempt == 0 || !in_ep) {
                if (in_ep) { r->episodes++; r->episodes_ok += ep_ok; }
                in_ep = 1;
                ep_ok = 0;
            }
            if (s->t_end > s->t_steady) ep_ok = 1;
        } else if (in_ep) {
            r->episodes++;
            r->episodes_ok += ep_ok;
            in_ep = 0;
        }
    }
    if (in_ep) { r->episodes++; r->episodes_ok += ep_ok; }
    r->runs++;
    free(hw_per_node);
    free(excl);
}

static void test_sim_timeline_paper_rates(void **state)
{
    (void)state;
    struct rates *r = calloc(1, sizeof *r);
    assert_non_null(r);
    for (int s = 0; s < N_SEEDS; s++) {
        struct gw_sim_config c = paper(1000 + (uint64_t)s * 7919);
        struct gw_sim_timeline *tl = build(&c);
        collect(tl, r);
        gw_sim_timeline_free(tl);
    }
    const int R = r->runs;
    /* 17 hardware events per 55 days (Poisson: sd sqrt(17) per run), of
     * which ~10 XID-identified */
    assert_near("hardware failures / run", r->hw / R, 17.0, sqrt(17.0), R, 3.0);
    assert_near("XID-identified / run", r->xid_gpu / R, 10.0, sqrt(10.0), R, 3.0);
    /* ~13 distinct nodes: the sd of the distinct count is below that of
     * the event count, so sqrt(17) bounds it */
    assert_near("distinct failing nodes / run", r->distinct / R, 13.0, sqrt(17.0), R, 3.0);
    /* class mix of the hardware events (binomial on the pooled count) */
    assert_prop("nvlink share", r->cls[GW_SIM_NVLINK], r->hw, 0.30, 3.0);
    assert_prop("memory share", r->cls[GW_SIM_MEMORY], r->hw, 0.25, 3.0);
    assert_prop("fell-off-bus share", r->cls[GW_SIM_FELL_OFF_BUS], r->hw, 0.15, 3.0);
    assert_prop("gsp share", r->cls[GW_SIM_GSP], r->hw, 0.15, 3.0);
    assert_prop("other/thermal/psu share",
                r->cls[GW_SIM_FAIL_SLOW] + r->cls[GW_SIM_OTHER_HW], r->hw, 0.15, 3.0);
    /* ~20% with a precursor in the data */
    assert_prop("precursor share", r->pre, r->hw, 0.20, 3.0);
    /* mostly during sessions */
    assert_true(r->hw_in_session / r->hw > 0.6);
    /* lemons: 3 nodes carry far more than 3/63 of the events, and the top-3
     * excluded nodes get more than half of the exclusions */
    assert_true(r->lemon_hw / r->hw > 0.25);
    assert_true(r->top3_share_sum / R > 0.5);
    /* sessions: 224 in 73 days = 3.07 / day. The count per run is close to
     * Poisson with retries clustered in episodes of ~5: sd ~ sqrt(5 * 170) */
    assert_near("sessions / day", r->sessions / R / 55.0, 224.0 / 73.0, sqrt(5.0 * 170.0) / 55.0, R, 3.0);
    /* checkpoints: 523 events in 55 days (saves + loads), Poisson spread */
    assert_near("checkpoints / run", r->ckpts / R, 523.0, sqrt(523.0), R, 3.0);
    /* collective bursts 1-2 / day; app XIDs frequent (> 1 / day) */
    double coll_day = r->coll / R / 55.0;
    assert_true(coll_day >= 1.0 && coll_day <= 2.0);
    assert_true(r->app / R / 55.0 > 1.0);
    /* retry chains: median spacing ~11 min (IQR 10-11), ~1/3 succeed */
    assert_true(r->n_spacing > 100);
    qsort(r->spacing, r->n_spacing, sizeof *r->spacing, cmp_double);
    double med = r->spacing[r->n_spacing / 2];
    double q1 = r->spacing[r->n_spacing / 4], q3 = r->spacing[3 * r->n_spacing / 4];
    if (getenv("GW_TEST_VERBOSE"))
        fprintf(stderr, "spacing median %.2f IQR %.2f-%.2f; lemon share %.2f; top-3 %.2f; in session %.2f; coll/day %.2f; app/day %.2f\n",
                med, q1, q3, r->lemon_hw / r->hw, r->top3_share_sum / R, r->hw_in_session / r->hw, coll_day, r->app / R / 55.0);
    if (med < 10.0 || med > 12.0 || q1 < 9.5 || q3 > 12.5)
        fail_msg("retry spacing median %.2f IQR %.2f-%.2f min", med, q1, q3);
    assert_prop("retry episode success", r->episodes_ok, r->episodes, 1.0 / 3.0, 3.0);
    free(r);
}

/* ------------------------------------------------- node state checks */
static void test_sim_timeline_node_state_consistency(void **state)
{
    (void)state;
    struct gw_sim_config c = paper(11);
    struct gw_sim_timeline *tl = build(&c);
    const int64_t t0 = c.start_ms, t1 = t0 + c.duration_ms;
    struct gw_sim_node_state st;
    assert_int_equal(gw_sim_node_state_at(tl, c.nodes, t0, &st), GW_EINVAL);
    assert_int_equal(gw_sim_node_state_at(NULL, 0, t0, &st), GW_EINVAL);

    /* sessions: sorted, non-overlapping, inside the window, with members */
    for (size_t i = 0; i < tl->n_sessions; i++) {
        const struct gw_sim_session *s = &tl->sessions[i];
        assert_int_equal(s->id, i);
        assert_true(s->t_start >= t0 && s->t_end <= t1 && s->t_start < s->t_end);
        assert_true(s->t_steady - s->t_start >= 5 * MIN_MS && s->t_steady - s->t_start <= 10 * MIN_MS);
        if (i) assert_true(s->t_start >= tl->sessions[i - 1].t_end);
        uint32_t cnt = 0;
        for (uint32_t k = 0; k < c.nodes; k++) cnt += s->nodes[k];
        assert_int_equal(cnt, s->n_nodes);
        assert_true(s->n_nodes >= 55 && s->n_nodes <= 60);
        if (s->excluded_node >= 0) assert_int_equal(s->nodes[s->excluded_node], 0);
        if (s->failure >= 0) {
            const struct gw_sim_failure *f = &tl->failures[s->failure];
            assert_int_equal(f->session, (int32_t)i);
            assert_int_equal(s->nodes[f->node], 1);       /* the failing node took part */
            assert_int_equal(f->t_kill, s->t_end);   /* t_fault, or 10-30 min later for an OS collapse */
            if (f->effect == GW_SIM_EFF_OS_COLLAPSE)
                assert_true(s->t_end - f->t_fault >= 10 * MIN_MS && s->t_end - f->t_fault <= 30 * MIN_MS);
            else
                assert_int_equal(f->t_fault, s->t_end);
            assert_true(s->outcome != GW_SIM_SESS_COMPLETED);
        }
    }
    /* failures sorted by t_fault, ids = indexes, precursor only when present */
    for (size_t i = 0; i < tl->n_failures; i++) {
        const struct gw_sim_failure *f = &tl->failures[i];
        assert_int_equal(f->id, i);
        if (i) assert_true(f->t_fault >= tl->failures[i - 1].t_fault);
        assert_true((f->precursor == GW_SIM_PRE_NONE) == (f->t_precursor_start == GW_SIM_NO_TIME));
        if (f->t_precursor_start != GW_SIM_NO_TIME) assert_true(f->t_precursor_start <= f->t_fault);
        assert_true(f->t_recovered > f->t_fault);
        if (f->t_xid_visible != GW_SIM_NO_TIME) {
            assert_true(f->xid != 0);
            /* at the first scrape after the fault; a GSP hang's XID 2-15 min late */
            int64_t late = f->cls == GW_SIM_GSP ? 15 * MIN_MS : 0;
            assert_true(f->t_xid_visible >= f->t_fault && f->t_xid_visible - f->t_fault < c.interval_ms + late);
            if (f->cls == GW_SIM_GSP) assert_true(f->t_xid_visible - f->t_fault >= 2 * MIN_MS);
            assert_int_equal((f->t_xid_visible - t0) % c.interval_ms, 0);
        }
        if (f->session >= 0) assert_int_equal(tl->sessions[f->session].failure, (int32_t)i);
        switch (f->cls) {
        case GW_SIM_NVLINK: assert_true(f->xid == 145 || f->xid == 149); break;
        case GW_SIM_FELL_OFF_BUS:
            assert_int_equal(f->xid, 79);
            assert_true(f->effect == GW_SIM_EFF_VANISH || f->effect == GW_SIM_EFF_SENTINEL);
            break;
        case GW_SIM_GSP: assert_true(f->xid == 119 || f->xid == 120); assert_int_equal(f->effect, GW_SIM_EFF_FROZEN); break;
        case GW_SIM_FAIL_SLOW: assert_int_equal(f->xid, 0); assert_int_equal(f->session, -1); break;
        case GW_SIM_APP_XID: case GW_SIM_COLLECTIVE:
            assert_true(f->xid == 13 || f->xid == 31 || f->xid == 43 || f->xid == 45);
            break;
        default: break;
        }
        /* the failure is active on its node at the fault */
        assert_int_equal(gw_sim_node_state_at(tl, f->node, f->t_fault, &st), GW_OK);
        int found = 0;
        for (uint32_t k = 0; k < st.n_failures; k++) found |= st.failures[k] == i;
        assert_true(found || st.n_failures == GW_SIM_STATE_MAX_ACTIVE);
        if (f->effect == GW_SIM_EFF_NODE_DOWN) assert_true(!st.node_up && !st.dcgm_up);
        assert_int_equal(gw_sim_node_state_at(tl, f->node, f->t_recovered, &st), GW_OK);
        for (uint32_t k = 0; k < st.n_failures; k++) assert_true(st.failures[k] != i);
    }
    /* checkpoints inside their session's steady part; rates as documented */
    for (size_t i = 0; i < tl->n_checkpoints; i++) {
        const struct gw_sim_checkpoint *k = &tl->checkpoints[i];
        const struct gw_sim_session *s = &tl->sessions[k->session];
        assert_true(k->t_start >= s->t_steady && k->t_end <= s->t_end && k->t_start < k->t_end);
        if (i) assert_true(k->t_start >= tl->checkpoints[i - 1].t_end);
        double secs = (double)(k->t_end - k->t_start) / 1000.0;
        double gbps = (double)k->bytes / secs / 1e9;
        if (k->phase == GW_SIM_CKPT_LOAD) {
            assert_true(gbps > 125 && gbps < 175);
        } else {
            assert_true(secs <= 600.5);
            if (k->t_end < s->t_end) assert_true(gbps > 30 && gbps < 50);
        }
        /* the node rates add up to the cluster rate; per node 0.2-3 GB/s on saves */
        int64_t tm = k->t_start + (k->t_end - k->t_start) / 2;
        double sum = 0;
        for (uint32_t nd = 0; nd < c.nodes; nd++) {
            assert_int_equal(gw_sim_node_state_at(tl, nd, tm, &st), GW_OK);
            if (!s->nodes[nd]) {
                assert_true(st.nfs_write_bps == 0 && st.nfs_read_bps == 0);
                assert_true(st.session != (int32_t)k->session);
                continue;
            }
            assert_int_equal(st.checkpoint, (int32_t)i);
            assert_int_equal(st.phase, k->phase == GW_SIM_CKPT_SAVE ? GW_SIM_PHASE_SAVE : GW_SIM_PHASE_LOAD);
            double v = k->phase == GW_SIM_CKPT_SAVE ? st.nfs_write_bps : st.nfs_read_bps;
            if (k->phase == GW_SIM_CKPT_SAVE) assert_true(v > 0.2e9 && v < 3.0e9);
            sum += v;
        }
        assert_true(sum > 0);
        if (k->phase == GW_SIM_CKPT_LOAD) assert_true(fabs(sum / 1e9 - gbps) < 0.01 * gbps + 0.01);
    }
    /* every node, every 5 minutes: phase agrees with session membership,
     * spares idle unless swapped in, restart counts never decrease */
    size_t si = 0;
    uint32_t *last_dr = calloc(c.nodes, sizeof *last_dr);
    assert_non_null(last_dr);
    for (int64_t t = t0; t < t1; t += 5 * MIN_MS) {
        while (si < tl->n_sessions && tl->sessions[si].t_end <= t) si++;
        const struct gw_sim_session *s =
            si < tl->n_sessions && tl->sessions[si].t_start <= t ? &tl->sessions[si] : NULL;
        uint32_t members_seen = 0;
        for (uint32_t nd = 0; nd < c.nodes; nd++) {
            assert_int_equal(gw_sim_node_state_at(tl, nd, t, &st), GW_OK);
            assert_true(st.phase_start <= t && t < st.phase_end);
            int member = s && s->nodes[nd];
            if (member) {
                members_seen++;
                assert_int_equal(st.session, (int32_t)si);
                assert_true(st.phase != GW_SIM_PHASE_IDLE);
                assert_int_equal(st.phase == GW_SIM_PHASE_STARTUP, t < s->t_steady);
            } else {
                assert_int_equal(st.phase, GW_SIM_PHASE_IDLE);
                assert_int_equal(st.session, -1);
                assert_true(st.nfs_write_bps == 0 && st.nfs_read_bps == 0);
            }
            if (st.phase != GW_SIM_PHASE_SAVE && st.phase != GW_SIM_PHASE_LOAD)
                assert_int_equal(st.checkpoint, -1);
            assert_true(st.dcgm_restarts >= last_dr[nd]);
            last_dr[nd] = st.dcgm_restarts;
        }
        if (s) assert_int_equal(members_seen, s->n_nodes);
    }
    /* baits: a scrape gap takes its target down; exporter restarts count */
    int gaps = 0, restarts = 0;
    for (size_t i = 0; i < tl->n_baits; i++) {
        const struct gw_sim_bait *b = &tl->baits[i];
        assert_int_equal(b->id, i);
        if (i) assert_true(b->t_start >= tl->baits[i - 1].t_start);
        assert_true(b->t_end > b->t_start);
        int64_t tm = b->t_start + (b->t_end - b->t_start) / 2;
        assert_int_equal(gw_sim_node_state_at(tl, b->node, tm, &st), GW_OK);
        if (b->kind == GW_SIM_BAIT_SCRAPE_GAP) {
            gaps++;
            int64_t len = b->t_end - b->t_start;
            assert_true(len >= c.interval_ms && len <= 3 * c.interval_ms && len % c.interval_ms == 0);
            if (b->job != 1) assert_int_equal(st.dcgm_up, 0);
            if (b->job != 0) assert_int_equal(st.node_up, 0);
        }
        if (b->kind == GW_SIM_BAIT_EXPORTER_RESTART) {
            restarts++;
            struct gw_sim_node_state before;
            assert_int_equal(gw_sim_node_state_at(tl, b->node, b->t_start - 1, &before), GW_OK);
            assert_int_equal(gw_sim_node_state_at(tl, b->node, b->t_start, &st), GW_OK);
            if (b->job == 0) {
                assert_int_equal(st.dcgm_restarts, before.dcgm_restarts + 1);
                assert_int_equal(st.dcgm_up, 0);
            } else {
                assert_int_equal(st.node_restarts, before.node_restarts + 1);
                assert_int_equal(st.node_up, 0);
            }
        }
    }
    assert_true(gaps > 0);
    /* ~1 / week per node per exporter: 63 x 55/7 x 2 = 990 expected */
    assert_true(fabs(restarts - 990.0) < 4 * sqrt(990.0));
    /* baits spread over all nodes, lemons and spares included */
    uint32_t *per_node = calloc(c.nodes, sizeof *per_node);
    assert_non_null(per_node);
    for (size_t i = 0; i < tl->n_baits; i++) per_node[tl->baits[i].node]++;
    for (uint32_t nd = 0; nd < c.nodes; nd++) assert_true(per_node[nd] > 0);
    free(per_node);
    free(last_dr);
    gw_sim_timeline_free(tl);
}

/* Spares stay idle unless a session takes them in; sessions never share
 * a node at once (checked per node over the session list). */
static void test_sim_timeline_spares_and_overlap(void **state)
{
    (void)state;
    for (uint64_t seed = 21; seed < 25; seed++) {
        struct gw_sim_config c = paper(seed);
        struct gw_sim_timeline *tl = build(&c);
        uint32_t *use = calloc(c.nodes, sizeof *use);
        int64_t *busy_until = calloc(c.nodes, sizeof *busy_until);
        assert_non_null(use);
        assert_non_null(busy_until);
        for (size_t i = 0; i < tl->n_sessions; i++) {
            const struct gw_sim_session *s = &tl->sessions[i];
            for (uint32_t nd = 0; nd < c.nodes; nd++) {
                if (!s->nodes[nd]) continue;
                assert_true(s->t_start >= busy_until[nd]);
                busy_until[nd] = s->t_end;
                use[nd]++;
            }
        }
        /* exactly spare_nodes nodes are used clearly less than the others */
        uint32_t rare = 0;
        for (uint32_t nd = 0; nd < c.nodes; nd++) rare += use[nd] < tl->n_sessions / 2;
        assert_true(rare >= c.spare_nodes);
        assert_true(rare <= c.spare_nodes + 3);
        /* lemons are training nodes */
        for (uint32_t nd = 0; nd < c.nodes; nd++)
            if (tl->lemon[nd]) assert_true(use[nd] > 0);
        free(use);
        free(busy_until);
        gw_sim_timeline_free(tl);
    }
}

static void test_sim_timeline_smoke_profile(void **state)
{
    (void)state;
    struct gw_sim_config c = paper(5);
    assert_int_equal(gw_sim_config_profile(&c, "smoke", NULL), GW_OK);
    struct gw_sim_timeline *tl = build(&c);
    assert_true(tl->n_sessions >= 1);
    for (size_t i = 0; i < tl->n_sessions; i++) assert_true(tl->sessions[i].n_nodes >= 1 && tl->sessions[i].n_nodes <= 4);
    size_t len;
    char *t = truth_bytes(tl, &len);
    assert_true(len > 0);
    free(t);
    /* a write error is reported */
    FILE *ro = fopen("/dev/full", "w");
    if (ro) {
        struct gw_error e = { 0 };
        setvbuf(ro, NULL, _IONBF, 0);
        assert_int_equal(gw_sim_truth_write(tl, ro, &e), GW_EIO);
        fclose(ro);
    }
    assert_int_equal(gw_sim_truth_write(NULL, stdout, NULL), GW_EINVAL);
    /* failure_scale 0: no failures at all, still sessions and baits */
    gw_sim_timeline_free(tl);
    c.failure_scale = 0;
    tl = build(&c);
    assert_int_equal(tl->n_failures, 0);
    assert_true(tl->n_baits > 0);
    gw_sim_timeline_free(tl);
    /* a high scale on a small cluster yields every class */
    c = paper(6);
    c.nodes = 8;
    c.spare_nodes = 1;
    c.duration_ms = 20 * DAY_MS;
    c.failure_scale = 100;
    tl = build(&c);
    int seen[GW_SIM_CLASS_COUNT_] = { 0 };
    for (size_t i = 0; i < tl->n_failures; i++) seen[tl->failures[i].cls] = 1;
    for (int k = 0; k < GW_SIM_CLASS_COUNT_; k++)
        if (!seen[k]) fail_msg("class %s never drawn", gw_sim_class_name((enum gw_sim_class)k));
    /* many events at once: the state lists at most GW_SIM_STATE_MAX_ACTIVE,
     * every one of them active, in ascending order */
    uint32_t most = 0;
    for (int64_t tq = c.start_ms; tq < c.start_ms + c.duration_ms; tq += 10 * MIN_MS) {
        for (uint32_t nd = 0; nd < c.nodes; nd++) {
            struct gw_sim_node_state st;
            assert_int_equal(gw_sim_node_state_at(tl, nd, tq, &st), GW_OK);
            assert_true(st.n_failures <= GW_SIM_STATE_MAX_ACTIVE);
            if (st.n_failures > most) most = st.n_failures;
            for (uint32_t k = 0; k < st.n_failures; k++) {
                const struct gw_sim_failure *f = &tl->failures[st.failures[k]];
                int64_t from = f->t_precursor_start != GW_SIM_NO_TIME ? f->t_precursor_start : f->t_fault;
                assert_true(from <= tq && tq < f->t_recovered);
                if (k) assert_true(st.failures[k] > st.failures[k - 1]);
            }
        }
    }
    assert_true(most >= 2);
    gw_sim_timeline_free(tl);
}

/* Small and unusual configurations build, answer node states and write
 * their truth without tripping the sanitizers. */
static void test_sim_timeline_edge_configs(void **state)
{
    (void)state;
    struct {
        uint32_t nodes, spares, gpus, span;
        int64_t interval_ms, duration_ms;
        double scale;
    } cases[] = {
        { 1, 0, 1, 1, 1000, 2 * 3600000LL, 100.0 },
        { 2, 1, 16, 2, 15000, 3 * DAY_MS, 100.0 },
        { 5, 0, 8, 999, 30000, 30 * DAY_MS, 20.0 },
        { 63, 3, 8, 130, 15000, 2 * DAY_MS, 0.0 },
        { 200, 20, 8, 300, 30000, 10 * DAY_MS, 5.0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct gw_sim_config c = paper(40 + i);
        c.nodes = cases[i].nodes;
        c.spare_nodes = cases[i].spares;
        c.gpus = cases[i].gpus;
        c.host_span = cases[i].span;
        c.interval_ms = cases[i].interval_ms;
        c.jitter_ms = 0;
        c.duration_ms = cases[i].duration_ms;
        c.failure_scale = cases[i].scale;
        struct gw_sim_timeline *tl = build(&c);
        for (size_t k = 0; k < tl->n_sessions; k++) {
            const struct gw_sim_session *s = &tl->sessions[k];
            assert_true(s->n_nodes >= 1 && s->n_nodes <= c.nodes);
            if (s->failure >= 0) assert_int_equal(s->nodes[tl->failures[s->failure].node], 1);
        }
        for (size_t k = 0; k < tl->n_failures; k++) {
            assert_true(tl->failures[k].node < c.nodes);
            assert_true(tl->failures[k].gpu < (int32_t)c.gpus);
        }
        int64_t step = c.duration_ms / 500;
        for (int64_t t = c.start_ms - step; t < c.start_ms + c.duration_ms + step; t += step) {
            for (uint32_t nd = 0; nd < c.nodes; nd++) {
                struct gw_sim_node_state st;
                assert_int_equal(gw_sim_node_state_at(tl, nd, t, &st), GW_OK);
                assert_true(st.phase_start <= st.phase_end);
                assert_true(st.nfs_write_bps >= 0 && st.nfs_read_bps >= 0);
            }
        }
        size_t len;
        char *tb = truth_bytes(tl, &len);
        free(tb);
        gw_sim_timeline_free(tl);
    }
}

static void test_sim_timeline_names(void **state)
{
    (void)state;
    assert_string_equal(gw_sim_class_name(GW_SIM_NVLINK), "nvlink");
    assert_string_equal(gw_sim_class_name(GW_SIM_COLLECTIVE), "collective");
    assert_string_equal(gw_sim_action_name(GW_SIM_ACT_RESET_GPU), "reset_gpu");
    assert_string_equal(gw_sim_action_name(GW_SIM_ACT_DRAIN_NODE), "drain_node");
    assert_string_equal(gw_sim_precursor_name(GW_SIM_PRE_NVLINK_CRC), "nvlink_crc");
    assert_string_equal(gw_sim_bait_name(GW_SIM_BAIT_SCRAPE_GAP), "scrape_gap");
    for (int k = 0; k < GW_SIM_CLASS_COUNT_; k++)
        assert_string_not_equal(gw_sim_class_name((enum gw_sim_class)k), "unknown");
    for (int k = 0; k < GW_SIM_PRE_COUNT_; k++)
        assert_string_not_equal(gw_sim_precursor_name((enum gw_sim_precursor)k), "unknown");
    for (int k = 0; k < GW_SIM_BAIT_COUNT_; k++)
        assert_string_not_equal(gw_sim_bait_name((enum gw_sim_bait_kind)k), "unknown");
}

/* Sanitizer builds run the sweep on every 8th scrape only and extrapolate. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GW_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define GW_SANITIZED 1
#endif
#endif
#ifdef GW_SANITIZED
#define SWEEP_STRIDE 8
#define SWEEP_MAX_S 60.0
#else
#define SWEEP_STRIDE 1
#define SWEEP_MAX_S 10.0
#endif

/* 63 nodes x 55 days x 2880 scrapes a day: every node state in turn. */
static void test_sim_timeline_sweep_time(void **state)
{
    (void)state;
    struct gw_sim_config c = paper(2);
    struct gw_sim_timeline *tl = build(&c);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    uint64_t acc = 0;
    int64_t steps = c.duration_ms / c.interval_ms;
    struct gw_sim_node_state st;
    int64_t calls = 0;
    for (int64_t k = 0; k < steps; k += SWEEP_STRIDE)
        for (uint32_t nd = 0; nd < c.nodes; nd++, calls++) {
            gw_sim_node_state_at(tl, nd, c.start_ms + k * c.interval_ms, &st);
            acc += (uint64_t)st.phase + st.n_failures;
        }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    double full = secs * (double)(steps * c.nodes) / (double)calls;
    fprintf(stderr, "node-state sweep: %lld calls in %.2f s (full sweep %.2f s)\n", (long long)calls,
            secs, full);
    assert_true(acc > 0);
    assert_true(full < SWEEP_MAX_S);   /* ~0.8 s optimised, ~5 s under ASan */
    gw_sim_timeline_free(tl);
}


/* ------------------------------------------------------------ variations */
static void test_sim_timeline_bait_scale(void **state)
{
    (void)state;
    double n1 = 0, n2 = 0;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        struct gw_sim_config c = paper(seed);
        c.duration_ms = 10 * DAY_MS_T;
        struct gw_sim_timeline *tl = build(&c);
        n1 += (double)tl->n_baits;
        gw_sim_timeline_free(tl);
        c.bait_scale = 2.0;
        tl = build(&c);
        n2 += (double)tl->n_baits;
        gw_sim_timeline_free(tl);
    }
    /* ~1,500 baits per run: a Poisson ratio well inside 1.8..2.2 */
    if (n2 / n1 < 1.8 || n2 / n1 > 2.2)
        fail_msg("bait_scale 2: %.0f baits against %.0f", n2, n1);
    struct gw_sim_config c = paper(1);
    c.bait_scale = -1;
    struct gw_error err = {0};
    assert_int_equal(gw_sim_config_check(&c, &err), GW_EINVAL);
    assert_non_null(strstr(err.msg, "bait_scale"));
}

static void test_sim_timeline_random_shapes(void **state)
{
    (void)state;
    size_t n_hw = 0, n_os = 0, n_gsp = 0, n_gsp_never = 0, n_os_pre = 0;
    double mags[2] = {1e9, -1e9};
    for (uint64_t seed = 1; seed <= 8; seed++) {
        struct gw_sim_config c = paper(seed);
        c.shape_jitter = 1;
        c.failure_scale = 4;
        struct gw_sim_timeline *tl = build(&c);
        for (size_t i = 0; i < tl->n_failures; i++) {
            const struct gw_sim_failure *f = &tl->failures[i];
            if (f->cls == GW_SIM_APP_XID || f->cls == GW_SIM_COLLECTIVE) continue;
            const struct gw_sim_signature *g = &f->sig;
            n_hw++;
            assert_true(g->mag >= 0.5 && g->mag <= 2.0);
            assert_true(g->onset >= 0 && g->onset <= 0.6);
            assert_true(g->episode_ms >= 10 * MIN_MS && g->episode_ms <= 40 * MIN_MS);
            assert_true(g->clk_deficit >= 0.10 && g->clk_deficit <= 0.30);
            assert_true(g->temp_rise >= 8 && g->temp_rise <= 15);
            assert_true(g->ramp_ms >= 2 * MIN_MS && g->ramp_ms <= 10 * MIN_MS);
            assert_true((g->reason_bits & 0x20u) && !(g->reason_bits & ~0x68u));
            assert_true(g->scrape_extra_s >= 1.3 && g->scrape_extra_s <= 3.3);
            assert_true(g->util_level >= 0 && g->util_level <= 10);
            assert_true(g->intr_frac >= 0.20 && g->intr_frac <= 0.35);
            assert_true(g->mem_floor >= 0.02 && g->mem_floor <= 0.06);
            mags[0] = g->mag < mags[0] ? g->mag : mags[0];
            mags[1] = g->mag > mags[1] ? g->mag : mags[1];
            if (f->t_xid_visible != GW_SIM_NO_TIME) {
                int64_t d = f->t_xid_visible - f->t_fault;
                if (f->cls == GW_SIM_GSP) assert_true(d >= 2 * MIN_MS && d < 15 * MIN_MS + c.interval_ms);
                else assert_true(d >= 0 && d < 2 * MIN_MS + c.interval_ms);
            }
            if (f->cls == GW_SIM_GSP) {
                n_gsp++;
                n_gsp_never += f->t_xid_visible == GW_SIM_NO_TIME;
                assert_int_equal(f->effect, GW_SIM_EFF_FROZEN);
            }
            if (f->effect == GW_SIM_EFF_OS_COLLAPSE) {
                n_os++;
                assert_int_equal(f->cls, GW_SIM_OTHER_HW);
                assert_int_equal(f->xid, 0);
                assert_true(f->t_silent - f->t_fault >= 15 * MIN_MS && f->t_silent - f->t_fault <= 30 * MIN_MS);
                assert_true(f->t_kill - f->t_fault >= 10 * MIN_MS && f->t_kill - f->t_fault <= 30 * MIN_MS);
                assert_true(f->t_recovered > f->t_silent);
                if (f->precursor != GW_SIM_PRE_NONE) {
                    n_os_pre++;
                    assert_int_equal(f->precursor, GW_SIM_PRE_MEM_PRESSURE);
                    int64_t lead = f->t_fault - f->t_precursor_start;
                    assert_true(lead <= 30 * MIN_MS && (lead >= 5 * MIN_MS || f->t_precursor_start == c.start_ms));
                }
            } else {
                assert_int_equal(f->t_silent, GW_SIM_NO_TIME);
            }
        }
        gw_sim_timeline_free(tl);
    }
    assert_true(n_hw > 300);
    assert_true(mags[1] - mags[0] > 1.0);      /* drawn, not fixed */
    assert_true(n_os > 5 && n_gsp > 20);
    assert_true(n_os_pre > 0 && n_os_pre < n_os);
    assert_true(n_gsp_never > 0 && n_gsp_never < n_gsp);
    /* fixed shapes: the defaults */
    struct gw_sim_config c = paper(2);
    struct gw_sim_timeline *tl = build(&c);
    for (size_t i = 0; i < tl->n_failures; i++) {
        const struct gw_sim_failure *f = &tl->failures[i];
        if (f->cls == GW_SIM_APP_XID || f->cls == GW_SIM_COLLECTIVE) continue;
        assert_true(f->sig.mag == 1.0 && f->sig.episode_ms == 20 * MIN_MS && f->sig.ramp_ms == 5 * MIN_MS);
    }
    gw_sim_timeline_free(tl);
}

static void test_sim_timeline_cluster_sizes(void **state)
{
    (void)state;
    const uint32_t sizes[] = {8, 16, 128};
    for (int k = 0; k < 3; k++) {
        struct gw_sim_config c = paper(5);
        gw_sim_config_set_nodes(&c, sizes[k]);
        c.duration_ms = 10 * DAY_MS_T;
        uint32_t want_spares = sizes[k] == 8 ? 1 : sizes[k] == 16 ? 1 : 6;
        assert_int_equal(c.spare_nodes, want_spares);
        struct gw_sim_timeline *tl = build(&c);
        uint32_t n_train = c.nodes - c.spare_nodes;
        size_t big = 0;
        for (size_t i = 0; i < tl->n_sessions; i++) {
            const struct gw_sim_session *s = &tl->sessions[i];
            assert_true(s->n_nodes >= 1 && s->n_nodes <= n_train + c.spare_nodes);
            big += s->attempt == 0 && s->n_nodes >= (uint32_t)(n_train * 0.9);
        }
        assert_true(tl->n_sessions > 10 && big > 5);
        gw_sim_timeline_free(tl);
    }
}

/* Checkpoint bottlenecks: the default is the paper's (every checkpoint
 * slot-limited); mixed draws the documented shares on a stream of its own
 * (nothing else in the timeline moves); an override applies to every
 * checkpoint; sessions under GW_SIM_BN_MIN_NODES nodes never saturate
 * slots or server; each kind's rates; names, parsing and the truth line. */
static void same_events(const struct gw_sim_timeline *a, const struct gw_sim_timeline *b)
{
    assert_int_equal(a->n_failures, b->n_failures);
    assert_int_equal(a->n_sessions, b->n_sessions);
    assert_int_equal(a->n_checkpoints, b->n_checkpoints);
    assert_int_equal(a->n_baits, b->n_baits);
    assert_memory_equal(a->failures, b->failures, a->n_failures * sizeof *a->failures);
    assert_memory_equal(a->baits, b->baits, a->n_baits * sizeof *a->baits);
    for (size_t i = 0; i < a->n_sessions; i++) {
        assert_true(a->sessions[i].t_start == b->sessions[i].t_start);
        assert_true(a->sessions[i].t_end == b->sessions[i].t_end);
        assert_int_equal(a->sessions[i].n_nodes, b->sessions[i].n_nodes);
    }
    for (size_t i = 0; i < a->n_checkpoints; i++) {
        assert_true(a->checkpoints[i].t_start == b->checkpoints[i].t_start);
        assert_true(a->checkpoints[i].t_end == b->checkpoints[i].t_end);
        assert_int_equal(a->checkpoints[i].phase, b->checkpoints[i].phase);
    }
}

static void test_sim_timeline_bottlenecks(void **state)
{
    (void)state;
    int k = -5;
    assert_int_equal(gw_sim_bottleneck_parse("mixed", &k), 0);
    assert_int_equal(k, GW_SIM_BN_MIXED);
    for (int i = 0; i < GW_SIM_BN_COUNT_; i++) {
        assert_int_equal(gw_sim_bottleneck_parse(gw_sim_bottleneck_name((enum gw_sim_ckpt_bottleneck)i), &k), 0);
        assert_int_equal(k, i);
    }
    assert_int_equal(gw_sim_bottleneck_parse("slot", &k), -1);
    assert_int_equal(k, GW_SIM_BN_COUNT_ - 1);
    assert_string_equal(gw_sim_bottleneck_name(GW_SIM_BN_COUNT_), "?");

    struct gw_sim_config c = paper(1);
    assert_int_equal(c.ckpt_bottleneck, GW_SIM_BN_SLOTS);
    struct gw_sim_timeline *base = build(&c);
    for (size_t i = 0; i < base->n_checkpoints; i++)
        assert_int_equal(base->checkpoints[i].bottleneck, GW_SIM_BN_SLOTS);

    /* mixed over 4 paper runs (~2,100 checkpoints): shares within 4 binomial sd */
    static const double share[GW_SIM_BN_COUNT_] = {0.25, 0.40, 0.25, 0.10};
    size_t cnt[GW_SIM_BN_COUNT_] = {0}, total = 0;
    for (uint64_t seed = 1; seed <= 4; seed++) {
        struct gw_sim_config m = paper(seed);
        m.ckpt_bottleneck = GW_SIM_BN_MIXED;
        struct gw_sim_timeline *tm = build(&m);
        if (seed == 1) same_events(base, tm);
        for (size_t i = 0; i < tm->n_checkpoints; i++) {
            const struct gw_sim_checkpoint *ck = &tm->checkpoints[i];
            assert_true((unsigned)ck->bottleneck < GW_SIM_BN_COUNT_);
            cnt[ck->bottleneck]++;
            total++;
            double secs = (double)(ck->t_end - ck->t_start) / 1000.0;
            double gbps = (double)ck->bytes / secs / 1e9;
            uint32_t nn = tm->sessions[ck->session].n_nodes;
            if (ck->bottleneck == GW_SIM_BN_SLOTS && seed == 1) {    /* unchanged */
                assert_true(ck->bytes == base->checkpoints[i].bytes);
            } else if (ck->bottleneck == GW_SIM_BN_SERVER) {            /* the server's capacity */
                if (ck->phase == GW_SIM_CKPT_SAVE) assert_true(gbps >= 21.9 && gbps < 32.1);
                else assert_true(gbps >= 74.9 && gbps < 115.1);
            } else if (ck->bottleneck == GW_SIM_BN_LINK) {           /* 86-96% of 2 x 25 GB/s a node */
                assert_true(gbps > 0.85 * 50 * nn && gbps < 0.97 * 50 * nn);
            } else if (ck->bottleneck == GW_SIM_BN_NONE && ck->phase == GW_SIM_CKPT_SAVE &&
                       ck->t_end < tm->sessions[ck->session].t_end) {
                assert_true(gbps > 1.45 * 32 && gbps < 2.25 * 48);
            }
        }
        gw_sim_timeline_free(tm);
    }
    for (int i = 0; i < GW_SIM_BN_COUNT_; i++) {
        double sd = sqrt(share[i] * (1 - share[i]) / (double)total);
        double got = (double)cnt[i] / (double)total;
        if (fabs(got - share[i]) > 4 * sd)
            fail_msg("mixed share of %s: %.3f, expected %.2f +- %.3f", gw_sim_bottleneck_name(i), got, share[i], 4 * sd);
    }
    assert_true(total > 1800);

    /* overrides: every checkpoint of that kind, the rest of the timeline as before */
    for (int kind = 0; kind < GW_SIM_BN_COUNT_; kind++) {
        struct gw_sim_config o = paper(1);
        o.ckpt_bottleneck = kind;
        struct gw_sim_timeline *to = build(&o);
        same_events(base, to);
        for (size_t i = 0; i < to->n_checkpoints; i++)
            assert_int_equal(to->checkpoints[i].bottleneck, kind);
        gw_sim_timeline_free(to);
    }

    /* small sessions: 6 nodes (5 training) never saturate slots or server */
    for (int kind = 0; kind < GW_SIM_BN_COUNT_; kind++) {
        struct gw_sim_config sm = paper(3);
        gw_sim_config_set_nodes(&sm, 6);
        sm.duration_ms = 10 * DAY_MS;
        sm.ckpt_bottleneck = kind;
        struct gw_sim_timeline *ts = build(&sm);
        assert_true(ts->n_checkpoints > 20);
        for (size_t i = 0; i < ts->n_checkpoints; i++) {
            assert_true(ts->sessions[ts->checkpoints[i].session].n_nodes < GW_SIM_BN_MIN_NODES);
            assert_int_equal(ts->checkpoints[i].bottleneck, kind == GW_SIM_BN_LINK ? GW_SIM_BN_LINK : GW_SIM_BN_NONE);
        }
        gw_sim_timeline_free(ts);
    }
    /* smoke (3-node sessions): every checkpoint healthy, and no node's rate
     * above 75% of its storage links (2 x 25 GB/s) at any time */
    struct gw_sim_config sk;
    gw_sim_config_default(&sk);
    assert_int_equal(gw_sim_config_profile(&sk, "smoke", NULL), GW_OK);
    sk.start_ms = FIXED_START;
    sk.duration_ms = 5 * DAY_MS;
    struct gw_sim_timeline *tk = build(&sk);
    size_t seen = 0;
    for (size_t i = 0; i < tk->n_checkpoints; i++) {
        const struct gw_sim_checkpoint *ck = &tk->checkpoints[i];
        assert_int_equal(ck->bottleneck, GW_SIM_BN_NONE);
        for (int64_t t = ck->t_start; t < ck->t_end; t += 15000)
            for (uint32_t nd = 0; nd < sk.nodes; nd++) {
                struct gw_sim_node_state st;
                assert_int_equal(gw_sim_node_state_at(tk, nd, t, &st), GW_OK);
                assert_true(st.nfs_write_bps <= 0.75 * 50e9 * 1.000001 && st.nfs_read_bps <= 0.75 * 50e9 * 1.000001);
                seen += st.nfs_write_bps > 0.5 * 50e9 || st.nfs_read_bps > 0.5 * 50e9;
            }
    }
    assert_true(tk->n_checkpoints > 20 && seen > 0);
    gw_sim_timeline_free(tk);

    /* at the threshold: 9 nodes (8 training) keep slots unless a node is down */
    struct gw_sim_config th = paper(3);
    gw_sim_config_set_nodes(&th, 9);
    th.duration_ms = 10 * DAY_MS;
    struct gw_sim_timeline *tt = build(&th);
    size_t slots = 0;
    for (size_t i = 0; i < tt->n_checkpoints; i++) {
        uint32_t nn = tt->sessions[tt->checkpoints[i].session].n_nodes;
        assert_int_equal(tt->checkpoints[i].bottleneck, nn >= GW_SIM_BN_MIN_NODES ? GW_SIM_BN_SLOTS : GW_SIM_BN_NONE);
        slots += tt->checkpoints[i].bottleneck == GW_SIM_BN_SLOTS;
    }
    assert_true(slots > 10);
    gw_sim_timeline_free(tt);

    /* the truth line names the kind and the session's node count */
    size_t len;
    char *t = truth_bytes(base, &len);
    const char *p = strstr(t, "{\"type\":\"checkpoint\"");
    assert_non_null(p);
    char want[64];
    snprintf(want, sizeof want, ",\"nodes\":%u,\"bottleneck\":\"slots\"}",
             base->sessions[base->checkpoints[0].session].n_nodes);
    const char *eol = strchr(p, '\n');
    assert_non_null(eol);
    assert_true(strstr(p, want) != NULL && strstr(p, want) < eol);
    free(t);
    gw_sim_timeline_free(base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_timeline_config_defaults),
        cmocka_unit_test(test_sim_timeline_config_errors),
        cmocka_unit_test(test_sim_timeline_names),
        cmocka_unit_test(test_sim_timeline_deterministic),
        cmocka_unit_test(test_sim_timeline_truth_format),
        cmocka_unit_test(test_sim_timeline_paper_rates),
        cmocka_unit_test(test_sim_timeline_node_state_consistency),
        cmocka_unit_test(test_sim_timeline_spares_and_overlap),
        cmocka_unit_test(test_sim_timeline_smoke_profile),
        cmocka_unit_test(test_sim_timeline_edge_configs),
        cmocka_unit_test(test_sim_timeline_sweep_time),
        cmocka_unit_test(test_sim_timeline_bait_scale),
        cmocka_unit_test(test_sim_timeline_random_shapes),
        cmocka_unit_test(test_sim_timeline_cluster_sizes),
        cmocka_unit_test(test_sim_timeline_bottlenecks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
