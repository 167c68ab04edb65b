/* test_downsample.c - rollups of finished days (src/db/downsample*.c,
 * src/store/rollup.c) on random data: gauges and counters with resets,
 * NaN values, stale markers (also as a bucket's last sample), jittered
 * and irregular timestamps, samples on bucket ends and at midnight, gaps,
 * three days, three nodes. Checks: every aggregate column equals the same
 * aggregate computed here from the raw samples (bit for bit); raw data is
 * untouched; runs are idempotent and a day with late blobs is re-done;
 * PromQL queries that qualify for rollups give bit-identical answers with
 * and without them (and really read rollups), the others fall back to
 * raw; with the raw days dropped the qualifying queries still answer the
 * same. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/db.h"
#include "gpuwatch/labels.h"
#include "gpuwatch/promql.h"
#include "gpuwatch/store.h"
#include "db/db_int.h"
#include "db/downsample_int.h"

#define MIN_MS 60000LL
#define HOUR_MS 3600000LL
#define D0 (20400LL * GW_DAY_MS)      /* 2025-11-08 00:00 UTC */
#define NDAYS 3
#define NNODES 3
#define NPER 5                         /* series per node */
#define NSER (NNODES * NPER)
#define STALE_BITS UINT64_C(0x7ff0000000000002)

static char tmpdir[512];

static int setup(void **state)
{
    (void)state;
    const char *base = getenv("GW_TEST_TMP");
    if (!base)
        base = "/tmp";
    char cmd[600];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", base);
    if (system(cmd) != 0)
        return -1;
    snprintf(tmpdir, sizeof tmpdir, "%s/gwds.XXXXXX", base);
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static uint64_t rng = 88172645463325252ULL;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double stale(void)
{
    uint64_t b = STALE_BITS;
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

static int is_stale(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b == STALE_BITS;
}

/* ---- the data set ---- */

struct series {
    char name[32], host[16], gpu[8];
    int64_t *t;
    double *v;
    size_t n;
};
static struct series ser[NSER + 1];   /* + one late series */

static void gen_series(struct series *s, int kind, int64_t from, int64_t to)
{
    size_t cap = (size_t)((to - from) / 5000) + 16;
    s->t = malloc(cap * sizeof *s->t);
    s->v = malloc(cap * sizeof *s->v);
    s->n = 0;
    double c = 0;
    int64_t t = from;
    while (t < to && s->n + 2 < cap) {
        uint64_t r = rnd();
        double v;
        if (kind == 0) {
            v = (double)(40 + (int)(r % 30));             /* integer gauge, many ties */
            if (r % 97 == 0)
                v = NAN;
            if (r % 101 == 0)
                v = -0.0;
        } else if (kind == 1) {
            v = (double)(r % 100000) / 1000.0 - 50;          /* decimals */
        } else {
            c += (double)(r % 5000);                         /* counter */
            if (r % 211 == 0)
                c = (double)(r % 7);                         /* reset */
            v = c;
        }
        if (r % 53 == 0)
            v = stale();
        s->t[s->n] = t;
        s->v[s->n] = v;
        s->n++;
        /* irregular steps: jittered 15 s scrapes, sometimes exactly on a
         * 5 min boundary, sometimes a gap of up to 3 h */
        int64_t next = t + 15000 + (int64_t)(rnd() % 2001) - 1000;
        uint64_t g = rnd() % 1000;
        if (g < 3)
            next = t + (int64_t)(rnd() % (3 * HOUR_MS));
        int64_t b = gw_ds_bucket_end(t + 1, 5 * MIN_MS);
        if (g >= 3 && g < 60 && b > t && b < next)
            next = b;
        t = next > t ? next : t + 1;
    }
}

static void gen_all(void)
{
    for (int i = 0; i < NSER; i++) {
        struct series *s = &ser[i];
        int node = i / NPER, k = i % NPER;
        snprintf(s->host, sizeof s->host, "node%d", node);
        snprintf(s->gpu, sizeof s->gpu, "%d", k % 2);
        snprintf(s->name, sizeof s->name, k < 2 ? "gpu_temp" : k < 3 ? "gpu_power" : "bytes_total");
        int kind = k < 2 ? 0 : k < 3 ? 1 : 2;
        if (k == 4)
            snprintf(s->gpu, sizeof s->gpu, "9");
        int64_t from = D0 + (int64_t)(rnd() % 600000);
        if (i == 0)
            from = D0;   /* a sample at exactly midnight */
        gen_series(s, kind, from, D0 + NDAYS * GW_DAY_MS);
    }
}

static void append_series(struct gw_db *db, struct series *s, int64_t now)
{
    struct gw_label l[3] = {
        {"__name__", 8, s->name, (uint32_t)strlen(s->name)},
        {"hostname", 8, s->host, (uint32_t)strlen(s->host)},
        {"gpu", 3, s->gpu, (uint32_t)strlen(s->gpu)},
    };
    struct gw_sample *smp = malloc(s->n * sizeof *smp);
    for (size_t i = 0; i < s->n; i++)
        smp[i] = (struct gw_sample){s->t[i], s->v[i]};
    for (size_t off = 0; off < s->n; off += 4000) {
        struct gw_label lc[3];
        memcpy(lc, l, sizeof lc);
        struct gw_rw_series rs = {.labels = lc, .n_labels = 3, .samples = smp + off};
        rs.n_samples = (uint32_t)(s->n - off < 4000 ? s->n - off : 4000);
        struct gw_rw_request req = {.version = 1, .series = &rs, .n_series = 1, .n_samples = rs.n_samples};
        struct gw_append_result res;
        struct gw_error err = {0};
        assert_int_equal(gw_db_append(db, &req, now, &res, &err), GW_OK);
        assert_int_equal(res.accepted, rs.n_samples);
    }
    free(smp);
}

static struct gw_db *open_db(void)
{
    struct gw_db_opts o;
    gw_db_opts_default(&o);
    o.dir = tmpdir;
    o.initial_map_bytes = 8 << 20;
    struct gw_db *db = NULL;
    struct gw_error err = {0};
    assert_int_equal(gw_db_open(&db, &o, &err), GW_OK);
    return db;
}

#define NOW (D0 + NDAYS * GW_DAY_MS + 2 * HOUR_MS)

static int64_t day_of(int64_t t)
{
    return t >= 0 ? t / GW_DAY_MS : -1 - (-t - 1) / GW_DAY_MS;
}

/* ---- aggregates computed here, the plain way ---- */

static void kahan(double inc, double *sum, double *c)
{
    double t = *sum + inc;
    if (isinf(t))
        *c = 0;
    else if (fabs(*sum) >= fabs(inc))
        *c += (*sum - t) + inc;
    else
        *c += (inc - t) + *sum;
    *sum = t;
}

/* Expected columns of bucket [e - b, e) ... (e - b, e] of s within day d. */
static void expect_bucket(const struct series *s, int64_t d, int64_t e, int64_t b, double col[GW_DS_NCOL])
{
    int64_t lo = d * GW_DAY_MS, hi = lo + GW_DAY_MS;
    double cnt = 0, sum = 0, c = 0, resets = 0, prev = 0;
    double mx = NAN, mn = NAN, fv = NAN, lv = NAN, la = NAN;
    int64_t ft = 0, lt = 0, lat = 0, have_nonnan = 0, have_nonnan_min = 0;
    for (size_t i = 0; i < s->n; i++) {
        int64_t t = s->t[i];
        if (t < lo || t >= hi || t <= e - b || t > e)
            continue;
        double v = s->v[i];
        la = v;
        lat = t;
        if (is_stale(v))
            continue;
        if (cnt == 0) {
            fv = v;
            ft = t;
        } else if (v < prev) {
            resets += prev;
        }
        if (!isnan(v) && (!have_nonnan || v > mx)) {
            mx = v;
            have_nonnan = 1;
        }
        if (!isnan(v) && (!have_nonnan_min || v < mn)) {
            mn = v;
            have_nonnan_min = 1;
        }
        if (!have_nonnan)
            mx = v;
        if (!have_nonnan_min)
            mn = v;
        kahan(v, &sum, &c);
        lv = v;
        lt = t;
        prev = v;
        cnt++;
    }
    col[GW_DS_COUNT] = cnt;
    col[GW_DS_MIN] = mn;
    col[GW_DS_MAX] = mx;
    col[GW_DS_SUM] = cnt ? (isinf(sum) ? sum : sum + c) : NAN;
    col[GW_DS_FIRST_V] = fv;
    col[GW_DS_FIRST_DT] = cnt ? (double)(ft - e) : 0;
    col[GW_DS_LAST_V] = lv;
    col[GW_DS_LAST_DT] = cnt ? (double)(lt - e) : 0;
    col[GW_DS_LASTALL_V] = la;
    col[GW_DS_LASTALL_DT] = (double)(lat - e);
    col[GW_DS_RESETS] = resets;
}

static int same_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

struct sid_find {
    const struct series *s;
    uint64_t sid;
};

static int sid_cb(void *ud, uint64_t sid, const uint8_t *labels, size_t len, const int64_t *t, const double *v,
                  size_t n)
{
    (void)labels;
    (void)len;
    (void)t;
    (void)v;
    (void)n;
    ((struct sid_find *)ud)->sid = sid;
    return GW_OK;
}

static uint64_t sid_of(struct gw_db *db, const struct series *s)
{
    struct gw_matcher m[3];
    assert_int_equal(gw_matcher_init(&m[0], GW_MATCH_EQ, "__name__", 8, s->name, strlen(s->name), NULL), GW_OK);
    assert_int_equal(gw_matcher_init(&m[1], GW_MATCH_EQ, "hostname", 8, s->host, strlen(s->host), NULL), GW_OK);
    assert_int_equal(gw_matcher_init(&m[2], GW_MATCH_EQ, "gpu", 3, s->gpu, strlen(s->gpu), NULL), GW_OK);
    struct gw_db_select q = {.matchers = m, .n_matchers = 3, .mint = INT64_MIN, .maxt = INT64_MAX};
    struct sid_find f = {s, UINT64_MAX};
    struct gw_error err = {0};
    assert_int_equal(gw_db_select(db, &q, sid_cb, &f, &err), GW_OK);
    for (int i = 0; i < 3; i++)
        gw_matcher_free(&m[i]);
    assert_true(f.sid != UINT64_MAX);
    return f.sid;
}

struct raw_cmp {
    const struct series *s;
    size_t seen;
};

static int raw_cmp_cb(void *ud, uint64_t sid, const uint8_t *labels, size_t len, const int64_t *t, const double *v,
                      size_t n)
{
    (void)sid;
    (void)labels;
    (void)len;
    struct raw_cmp *c = ud;
    assert_int_equal(n, c->s->n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(t[i], c->s->t[i]);
        assert_true(same_bits(v[i], c->s->v[i]));
    }
    c->seen++;
    return GW_OK;
}

/* The raw samples of series s read back bit for bit as generated. */
static void check_raw(struct gw_db *db, const struct series *s)
{
    struct gw_matcher m[3];
    assert_int_equal(gw_matcher_init(&m[0], GW_MATCH_EQ, "__name__", 8, s->name, strlen(s->name), NULL), GW_OK);
    assert_int_equal(gw_matcher_init(&m[1], GW_MATCH_EQ, "hostname", 8, s->host, strlen(s->host), NULL), GW_OK);
    assert_int_equal(gw_matcher_init(&m[2], GW_MATCH_EQ, "gpu", 3, s->gpu, strlen(s->gpu), NULL), GW_OK);
    struct gw_db_select q = {.matchers = m, .n_matchers = 3, .mint = INT64_MIN, .maxt = INT64_MAX,
                             .with_samples = 1, .only_with_data = 1};
    struct raw_cmp c = {s, 0};
    struct gw_error err = {0};
    assert_int_equal(gw_db_select(db, &q, raw_cmp_cb, &c, &err), GW_OK);
    assert_int_equal(c.seen, 1);
    for (int i = 0; i < 3; i++)
        gw_matcher_free(&m[i]);
}

/* Every stored bucket of every series, day and resolution against
 * expect_bucket, and every bucket with a sample is stored. */
static void check_aggregates(struct gw_db *db, int nser)
{
    struct gw_ds_cols c = {0};
    struct gw_ds_pcache *pc = calloc(1, sizeof *pc);
    assert_non_null(pc);
    size_t checked = 0, referring = 0;
    for (int i = 0; i < nser; i++) {
        const struct series *s = &ser[i];
        uint64_t sid = sid_of(db, s);
        struct gw_store_txn *t = NULL;
        assert_int_equal(gw_store_read_begin(db->store, &t, NULL), GW_OK);
        struct gw_store_series ss;
        assert_int_equal(gw_store_series_get(t, sid, &ss), GW_OK);
        for (int64_t d = D0 / GW_DAY_MS; d < D0 / GW_DAY_MS + NDAYS; d++) {
            for (int r = GW_ROLLUP_5M; r <= GW_ROLLUP_1H; r++) {
                int64_t b = r == GW_ROLLUP_5M ? GW_DS_5M_MS : GW_DS_1H_MS;
                size_t want = 0;
                int64_t last_e = INT64_MIN;
                for (size_t k = 0; k < s->n; k++) {
                    if (day_of(s->t[k]) != d)
                        continue;
                    int64_t e = gw_ds_bucket_end(s->t[k], b);
                    if (e != last_e)
                        want++;
                    last_e = e;
                }
                int rc = gw_ds_read(t, r, d, ss.node_id, sid, ~0u, pc, &c, NULL);
                if (want == 0) {
                    assert_int_equal(rc, GW_ENOTFOUND);
                    continue;
                }
                assert_int_equal(rc, GW_OK);
                const uint8_t *val;
                size_t len;
                assert_int_equal(gw_store_rollup_get(t, r, d, ss.node_id, sid, &val, &len), GW_OK);
                referring += gw_ds_profiles_used(val, len) > 0;
                assert_int_equal(c.nb, want);
                for (size_t k = 0; k < c.nb; k++) {
                    double col[GW_DS_NCOL];
                    expect_bucket(s, d, c.end[k], b, col);
                    for (int j = 0; j < GW_DS_NCOL; j++) {
                        if (!same_bits(col[j], c.c[j][k]))
                            fail_msg("series %d day %lld res %d bucket %lld col %d: %.17g != %.17g", i,
                                     (long long)d, r, (long long)c.end[k], j, c.c[j][k], col[j]);
                    }
                    checked++;
                }
            }
        }
        gw_store_read_end(t);
        gw_ds_pcache_reset(pc);
    }
    gw_ds_cols_free(&c);
    gw_ds_pcache_free(pc);
    free(pc);
    assert_true(checked > 1000);
    print_message("%zu values refer to time profiles\n", referring);
    assert_true(referring > 0);
}

/* ---- queries ---- */

static int run_query(struct gw_db *db, const char *q, int64_t start, int64_t end, int64_t step, int compat,
                     int64_t res_ms, struct gw_pq_result *out)
{
    struct gw_pq_parse_opts po = {0};
    po.compat = compat;
    struct gw_pq_expr *e = NULL;
    struct gw_error err = {0};
    if (gw_pq_parse(q, strlen(q), &po, &e, &err) != GW_OK)
        fail_msg("parse %s: %s", q, err.msg);
    struct gw_pq_source src;
    gw_pq_source_db(&src, db);
    struct gw_pq_opts o;
    gw_pq_opts_default(&o);
    o.compat = compat;
    o.max_source_resolution_ms = res_ms;
    memset(out, 0, sizeof *out);
    int rc = gw_pq_eval_range(&src, e, start, end, step, &o, out, &err);
    if (rc != GW_OK)
        fail_msg("eval %s: %s", q, err.msg);
    gw_pq_expr_free(e);
    return rc;
}

static void same_result(const struct gw_pq_result *a, const struct gw_pq_result *b, const char *what)
{
    if (a->n_series != b->n_series)
        fail_msg("%s: %zu series != %zu", what, a->n_series, b->n_series);
    for (size_t i = 0; i < a->n_series; i++) {
        const struct gw_pq_series *x = &a->series[i], *y = &b->series[i];
        if (x->labels_len != y->labels_len || memcmp(x->labels, y->labels, x->labels_len) != 0)
            fail_msg("%s: series %zu labels differ", what, i);
        if (x->n != y->n)
            fail_msg("%s: series %zu has %zu points != %zu", what, i, x->n, y->n);
        for (size_t k = 0; k < x->n; k++) {
            if (x->t[k] != y->t[k] || !same_bits(x->v[k], y->v[k]))
                fail_msg("%s: series %zu point %zu: %lld %.17g != %lld %.17g", what, i, k, (long long)x->t[k],
                         x->v[k], (long long)y->t[k], y->v[k]);
        }
    }
}

static const char *const qualifying[] = {
    "gpu_temp",
    "max_over_time(gpu_temp[1h])",
    "min_over_time(gpu_power[5m])",
    "last_over_time(bytes_total[10m])",
    "max_over_time(bytes_total[2h] offset 1h)",
    "timestamp(gpu_power)",
    "avg by (hostname) (gpu_temp)",
    "gpu_temp offset 5m",
    "max_over_time(gpu_temp[1h:5m])",
    "min_over_time(gpu_temp[3h])",
};
static const char *const falling_back[] = {
    "rate(bytes_total[1h])",
    "count_over_time(gpu_temp[1h])",
    "sum_over_time(gpu_power[1h])",
    "avg_over_time(gpu_power[5m])",
    "increase(bytes_total[5m])",
};
#define NQ (sizeof qualifying / sizeof qualifying[0])
#define NF (sizeof falling_back / sizeof falling_back[0])

struct qcase {
    const char *q;
    int64_t start, end, step;
    int compat;
    int aligned;
    struct gw_pq_result raw;
};

#define NCASES 120
static struct qcase cases[NCASES];

static void make_cases(void)
{
    static const int64_t steps[] = {5 * MIN_MS, HOUR_MS, 2 * HOUR_MS, 30000, 7 * MIN_MS, 15 * MIN_MS, 10 * MIN_MS};
    for (int i = 0; i < NCASES; i++) {
        struct qcase *c = &cases[i];
        c->aligned = i % 3 != 2;
        c->q = c->aligned || i % 2 ? qualifying[rnd() % NQ] : falling_back[rnd() % NF];
        if (!c->aligned && rnd() % 2)
            c->q = qualifying[rnd() % NQ];
        int64_t span = (int64_t)(rnd() % (NDAYS * GW_DAY_MS));
        int64_t start = D0 - HOUR_MS + (int64_t)(rnd() % (NDAYS * GW_DAY_MS));
        int64_t step = steps[rnd() % (sizeof steps / sizeof steps[0])];
        if (c->aligned) {
            int64_t b = rnd() % 2 ? HOUR_MS : 5 * MIN_MS;
            start -= start % b;
            if (step % b)
                step = b;
        } else if (start % (5 * MIN_MS) == 0) {
            start += 1234;
        }
        if (span / step > 10000)
            span = step * 10000;
        c->start = start;
        c->end = start + span;
        c->step = step;
        c->compat = i % 5 == 4 ? 2 : 3;
    }
}

static void test_downsample_end_to_end(void **state)
{
    (void)state;
    gen_all();
    struct gw_db *db = open_db();
    for (int i = 0; i < NSER; i++)
        append_series(db, &ser[i], NOW);
    struct gw_error err = {0};
    assert_int_equal(gw_db_flush(db, &err), GW_OK);

    /* raw answers first */
    make_cases();
    for (int i = 0; i < NCASES; i++)
        run_query(db, cases[i].q, cases[i].start, cases[i].end, cases[i].step, cases[i].compat, GW_PQ_RES_RAW,
                  &cases[i].raw);

    /* a day that is not finished yet is left alone */
    struct gw_db_downsample ds;
    gw_db_downsample_default(&ds);
    ds.raw_retention_ms = 0;
    assert_int_equal(gw_db_downsample_run(db, D0 + NDAYS * GW_DAY_MS + 30 * MIN_MS, &ds, &err), GW_OK);
    assert_int_equal(ds.days_done, NDAYS - 1);
    gw_db_downsample_default(&ds);
    ds.raw_retention_ms = 0;
    assert_int_equal(gw_db_downsample_run(db, NOW, &ds, &err), GW_OK);
    assert_int_equal(ds.days_done, 1);
    assert_int_equal(ds.days_fresh, NDAYS - 1);
    assert_int_equal(ds.raw_dropped, 0);
    check_aggregates(db, NSER);

    /* idempotent */
    assert_int_equal(gw_db_downsample_run(db, NOW, &ds, &err), GW_OK);
    assert_int_equal(ds.days_done + ds.days_redone, 0);
    assert_int_equal(ds.days_fresh, NDAYS);

    /* raw data untouched, bit for bit */
    for (int i = 0; i < NSER; i++)
        check_raw(db, &ser[i]);
    for (int i = 0; i < NCASES; i++) {
        struct gw_pq_result r;
        run_query(db, cases[i].q, cases[i].start, cases[i].end, cases[i].step, cases[i].compat, GW_PQ_RES_RAW, &r);
        same_result(&cases[i].raw, &r, "raw after downsampling");
        gw_pq_result_free(&r);
    }

    /* with rollups: the same answers; qualifying ones read rollups */
    size_t used = 0;
    for (int i = 0; i < NCASES; i++) {
        struct gw_pq_result r;
        uint64_t before = __atomic_load_n(&gw_ds_rollup_reads, __ATOMIC_RELAXED);
        run_query(db, cases[i].q, cases[i].start, cases[i].end, cases[i].step, cases[i].compat, 0, &r);
        uint64_t reads = __atomic_load_n(&gw_ds_rollup_reads, __ATOMIC_RELAXED) - before;
        char what[256];
        snprintf(what, sizeof what, "%s start %lld end %lld step %lld compat %d", cases[i].q,
                 (long long)cases[i].start, (long long)cases[i].end, (long long)cases[i].step, cases[i].compat);
        same_result(&cases[i].raw, &r, what);
        int fallback = 0;
        for (size_t f = 0; f < NF; f++)
            fallback |= strcmp(cases[i].q, falling_back[f]) == 0;
        /* (a subquery's inner steps are aligned whatever the outer ones) */
        if ((fallback || !cases[i].aligned) && !strstr(cases[i].q, ":5m]") && reads)
            fail_msg("%s read %llu rollup values", what, (unsigned long long)reads);
        else if (reads)
            used++;
        gw_pq_result_free(&r);
    }
    assert_true(used > NCASES / 4);

    /* compaction re-encodes every day into day blobs without one sample
     * changing: the rollups stay fresh (no re-done day) and the answers,
     * with and without them, stay the same */
    struct gw_db_compact_opts co;
    struct gw_db_compact_result cr;
    memset(&co, 0, sizeof co);
    assert_int_equal(gw_db_compact(db, &co, &cr, &err), GW_OK);
    assert_true(cr.node_days > 0);
    assert_int_equal(gw_db_downsample_run(db, NOW, &ds, &err), GW_OK);
    assert_int_equal(ds.days_done + ds.days_redone, 0);
    assert_int_equal(ds.days_fresh, NDAYS);
    check_aggregates(db, NSER);
    for (int i = 0; i < NCASES; i++) {
        struct gw_pq_result r;
        run_query(db, cases[i].q, cases[i].start, cases[i].end, cases[i].step, cases[i].compat, 0, &r);
        same_result(&cases[i].raw, &r, "after compaction");
        gw_pq_result_free(&r);
    }

    /* a late series in day 1: the day is re-done */
    struct series *late = &ser[NSER];
    snprintf(late->name, sizeof late->name, "gpu_temp");
    snprintf(late->host, sizeof late->host, "node1");
    snprintf(late->gpu, sizeof late->gpu, "7");
    gen_series(late, 0, D0 + GW_DAY_MS + 5 * HOUR_MS, D0 + GW_DAY_MS + 6 * HOUR_MS);
    append_series(db, late, NOW);
    assert_int_equal(gw_db_flush(db, &err), GW_OK);
    struct gw_pq_result before_redo, after;
    run_query(db, "max_over_time(gpu_temp[1h])", D0, D0 + NDAYS * GW_DAY_MS, HOUR_MS, 3, GW_PQ_RES_RAW,
              &before_redo);
    run_query(db, "max_over_time(gpu_temp[1h])", D0, D0 + NDAYS * GW_DAY_MS, HOUR_MS, 3, 0, &after);
    same_result(&before_redo, &after, "stale rollup day falls back to raw");
    gw_pq_result_free(&after);
    assert_int_equal(gw_db_downsample_run(db, NOW, &ds, &err), GW_OK);
    assert_int_equal(ds.days_redone, 1);
    assert_int_equal(ds.days_fresh, NDAYS - 1);
    check_aggregates(db, NSER + 1);
    run_query(db, "max_over_time(gpu_temp[1h])", D0, D0 + NDAYS * GW_DAY_MS, HOUR_MS, 3, 0, &after);
    same_result(&before_redo, &after, "re-done day");
    gw_pq_result_free(&after);
    gw_pq_result_free(&before_redo);

    /* raw days 0 and 1 dropped (raw retention 1 day): qualifying aligned
     * queries whose data lies there answer as before */
    gw_db_downsample_default(&ds);
    ds.raw_retention_ms = GW_DAY_MS;
    assert_int_equal(gw_db_downsample_run(db, NOW, &ds, &err), GW_OK);
    assert_int_equal(ds.raw_dropped, 2);
    size_t compared = 0;
    for (int i = 0; i < NCASES; i++) {
        const struct qcase *c = &cases[i];
        int fallback = 0;
        for (size_t f = 0; f < NF; f++)
            fallback |= strcmp(c->q, falling_back[f]) == 0;
        if (fallback || !c->aligned || (c->compat == 2 && strstr(c->q, "_over_time(") && !strstr(c->q, ":5m")))
            continue;
        /* the late series (samples in [5h, 6h] of day 1) changed the answers
         * of queries evaluated while a window can hold it: up to 6h plus the
         * longest range (3h) plus lookback and subquery step */
        const int64_t late_lo = D0 + GW_DAY_MS + 5 * HOUR_MS, late_hi = D0 + GW_DAY_MS + 9 * HOUR_MS + 10 * MIN_MS;
        if (strstr(c->q, "gpu_temp") && c->end >= late_lo && c->start <= late_hi)
            continue;
        struct gw_pq_result r;
        run_query(db, c->q, c->start, c->end, c->step, c->compat, 0, &r);
        same_result(&c->raw, &r, c->q);
        gw_pq_result_free(&r);
        compared++;
    }
    assert_true(compared > NCASES / 4);
    /* max_source_resolution=raw now sees nothing of days 0 and 1 */
    struct gw_pq_result r;
    run_query(db, "gpu_temp", D0, D0 + 2 * GW_DAY_MS - HOUR_MS, HOUR_MS, 3, GW_PQ_RES_RAW, &r);
    assert_int_equal(r.n_series, 0);
    gw_pq_result_free(&r);

    for (int i = 0; i < NCASES; i++)
        gw_pq_result_free(&cases[i].raw);
    gw_db_close(db);
    for (int i = 0; i <= NSER; i++) {
        free(ser[i].t);
        free(ser[i].v);
    }
}

static int has_marker(struct gw_db *db, int res, int64_t day)
{
    struct gw_store_txn *t = NULL;
    assert_int_equal(gw_store_read_begin(db->store, &t, NULL), GW_OK);
    uint64_t m;
    int rc = gw_store_rollup_marker(t, res, day, &m);
    gw_store_read_end(t);
    return rc == GW_OK;
}

static int count_node_rec(void *ud, uint32_t node_id, uint64_t sid, const uint8_t *val, size_t len)
{
    (void)node_id;
    (void)val;
    (void)len;
    *(int *)ud += sid == GW_ROLLUP_NODE_SID;
    return 0;
}

/* The node records (time profiles) of a rollup day. */
static int node_records(struct gw_db *db, int res, int64_t day)
{
    struct gw_store_txn *t = NULL;
    assert_int_equal(gw_store_read_begin(db->store, &t, NULL), GW_OK);
    int n = 0;
    int rc = gw_store_rollup_scan(t, res, day, count_node_rec, &n);
    gw_store_read_end(t);
    assert_true(rc == GW_OK || rc == GW_ENOTFOUND);
    return n;
}

/* The schedule: 5 min rollups past their retention go once the 1 h one
 * exists; raw days past raw retention only with fresh rollups; the db
 * retention takes rollups with their days. */
static void test_downsample_schedule(void **state)
{
    (void)state;
    struct gw_db *db = open_db();
    struct series s = {0};
    snprintf(s.name, sizeof s.name, "gpu_temp");
    snprintf(s.host, sizeof s.host, "node0");
    snprintf(s.gpu, sizeof s.gpu, "0");
    gen_series(&s, 0, D0, D0 + NDAYS * GW_DAY_MS);
    append_series(db, &s, NOW);
    struct gw_error err = {0};
    assert_int_equal(gw_db_flush(db, &err), GW_OK);
    int64_t d0 = D0 / GW_DAY_MS;
    struct gw_db_downsample ds;
    gw_db_downsample_default(&ds);
    ds.raw_retention_ms = 0;
    ds.res5m_retention_ms = 2 * GW_DAY_MS;   /* day d0 only (ends before NOW - 2d) */
    assert_int_equal(gw_db_downsample_run(db, NOW, &ds, &err), GW_OK);
    assert_int_equal(ds.days_done, NDAYS);
    assert_int_equal(ds.res5m_dropped, 1);
    assert_false(has_marker(db, GW_ROLLUP_5M, d0));
    assert_int_equal(node_records(db, GW_ROLLUP_5M, d0), 0);     /* went with the day */
    assert_int_equal(node_records(db, GW_ROLLUP_1H, d0), 1);
    assert_int_equal(node_records(db, GW_ROLLUP_5M, d0 + 1), 1);
    assert_true(has_marker(db, GW_ROLLUP_1H, d0));
    assert_true(has_marker(db, GW_ROLLUP_5M, d0 + 1));
    /* the day is not re-done for its dropped 5 min rollup's sake */
    assert_int_equal(gw_db_downsample_run(db, NOW, &ds, &err), GW_OK);
    assert_int_equal(ds.days_done + ds.days_redone, 0);
    assert_int_equal(ds.days_fresh, NDAYS);
    assert_false(has_marker(db, GW_ROLLUP_5M, d0));
    /* and its raw day can go (raw retention 2 days): the 1 h rollup is fresh */
    ds.raw_retention_ms = 2 * GW_DAY_MS;
    assert_int_equal(gw_db_downsample_run(db, NOW, &ds, &err), GW_OK);
    assert_int_equal(ds.raw_dropped, 1);
    /* the db retention (1 day) drops raw and rollups of d0 and d0 + 1 */
    unsigned dropped = 0;
    assert_int_equal(gw_db_retention(db, GW_DAY_MS, NOW, &dropped, &err), GW_OK);
    assert_int_equal(dropped, 1);   /* raw d0 + 1 (d0's raw went above) */
    assert_false(has_marker(db, GW_ROLLUP_1H, d0));
    assert_false(has_marker(db, GW_ROLLUP_1H, d0 + 1));
    assert_int_equal(node_records(db, GW_ROLLUP_1H, d0) + node_records(db, GW_ROLLUP_1H, d0 + 1), 0);
    assert_int_equal(node_records(db, GW_ROLLUP_5M, d0 + 1), 0);
    assert_true(has_marker(db, GW_ROLLUP_1H, d0 + 2));
    assert_true(has_marker(db, GW_ROLLUP_5M, d0 + 2));
    gw_db_close(db);
    free(s.t);
    free(s.v);
}

static void test_downsample_bucket_end(void **state)
{
    (void)state;
    assert_int_equal(gw_ds_bucket_end(0, 300000), 0);
    assert_int_equal(gw_ds_bucket_end(1, 300000), 300000);
    assert_int_equal(gw_ds_bucket_end(300000, 300000), 300000);
    assert_int_equal(gw_ds_bucket_end(-1, 300000), 0);
    assert_int_equal(gw_ds_bucket_end(-300000, 300000), -300000);
    assert_int_equal(gw_ds_bucket_end(-300001, 300000), -300000);
}


static uint64_t bits_of(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

/* Every column of a version 2 value (references to earlier columns with
 * exceptions, a checksum) decodes to the bits gw_ds_aggregate computed,
 * also asked for one column at a time (its references are decoded too),
 * and the same as a version 1 value; a flipped bit or a cut is refused. */
static void test_downsample_value_v2_roundtrip(void **state)
{
    (void)state;
    enum { N = 2000 };
    int64_t *t = malloc(N * sizeof *t);
    double *v = malloc(N * sizeof *v);
    for (int shape = 0; shape < 6; shape++) {
        int64_t ts = 1700000000000LL;
        double x = 100;
        for (size_t i = 0; i < N; i++) {
            ts += shape == 3 ? 290000 + (int64_t)(rnd() % 20000) : 10000 + (int64_t)(rnd() % 40000);
            t[i] = ts;
            switch (shape) {
            case 0: x += (double)(rnd() % 1000); break;                    /* counter */
            case 1: x = (rnd() % 10 == 0) ? 0 : x + (double)(rnd() % 50); break; /* resets */
            case 2: x = (double)(rnd() % 1000) / 8.0 - 60; break;          /* gauge */
            case 3: x = (double)(rnd() % 7); break;                        /* ~1 sample a bucket */
            case 4: x = (rnd() % 5 == 0) ? stale() : (double)(rnd() % 3); break;
            default: {
                uint64_t r = rnd();
                memcpy(&x, &r, sizeof x); /* any bits: NaN payloads, -0, Inf */
            }
            }
            v[i] = x;
        }
        for (int res = 0; res < 2; res++) {
            struct gw_ds_cols a = {0}, d = {0}, d1 = {0};
            assert_int_equal(gw_ds_aggregate(t, v, N, res ? GW_DS_1H_MS : GW_DS_5M_MS, &a), GW_OK);
            struct gw_buf b, b1;
            gw_buf_init(&b, 0);
            gw_buf_init(&b1, 0);
            assert_int_equal(gw_ds_encode_v2(&a, &b), GW_OK);
            assert_int_equal(gw_ds_encode_v1(&a, &b1), GW_OK);
            assert_int_equal(b.data[0], 2);
            assert_true(b.len <= b1.len + 4 + GW_DS_NCOL);
            unsigned all = (1u << GW_DS_NCOL) - 1;
            assert_int_equal(gw_ds_decode(b.data, b.len, all, &d), GW_OK);
            assert_int_equal(gw_ds_decode(b1.data, b1.len, all, &d1), GW_OK);
            assert_int_equal(d.nb, a.nb);
            assert_int_equal(d1.nb, a.nb);
            assert_memory_equal(d.end, a.end, a.nb * sizeof *a.end);
            for (int c = 0; c < GW_DS_NCOL; c++) {
                for (size_t k = 0; k < a.nb; k++) {
                    assert_true(bits_of(d.c[c][k]) == bits_of(a.c[c][k]));
                    assert_true(bits_of(d1.c[c][k]) == bits_of(a.c[c][k]));
                }
                assert_int_equal(gw_ds_decode(b.data, b.len, 1u << c, &d), GW_OK);
                for (size_t k = 0; k < a.nb; k++) assert_true(bits_of(d.c[c][k]) == bits_of(a.c[c][k]));
            }
            for (int f = 0; f < 200; f++) {
                size_t pos = rnd() % b.len;
                uint8_t bit = (uint8_t)(1u << (rnd() % 8));
                b.data[pos] ^= bit;
                assert_int_equal(gw_ds_decode(b.data, b.len, all, &d), GW_ECORRUPT);
                assert_int_equal(gw_ds_sum_ok(b.data, b.len), pos == 0 && !(b.data[0] == 2) ? 1 : 0);
                b.data[pos] ^= bit;
                size_t cut = rnd() % b.len;
                assert_int_equal(gw_ds_decode(b.data, cut, all, &d), GW_ECORRUPT);
            }
            gw_buf_free(&b);
            gw_buf_free(&b1);
            gw_ds_cols_free(&a);
            gw_ds_cols_free(&d);
            gw_ds_cols_free(&d1);
        }
    }
    free(t);
    free(v);
}

/* ---- version 3: time columns shared per node ---- */

enum { V3_NSER = 12, V3_MAX = 3000 };

/* One node's day at 30 s scrapes (jitter up to 1 s, the same for every
 * series of the scrape), with a late series first (its profile grows),
 * dropped scrapes and a 2 h gap, stale markers, a series scraped at other
 * times, and one sampled every 5 min. */
static size_t v3_series(int i, const int64_t *scr, size_t nscr, int64_t *t, double *v)
{
    size_t n = 0;
    double x = 100 + i;
    for (size_t k = 0; k < nscr; k++) {
        int64_t ts = scr[k];
        if (i == 0 && ts < D0 + 6 * HOUR_MS)
            continue;                                   /* late */
        if (i == 6 && (rnd() % 20 == 0 || (ts > D0 + 3 * HOUR_MS && ts < D0 + 5 * HOUR_MS)))
            continue;                                   /* dropped scrapes, a gap */
        if (i == 9)
            ts += 7000 + (int64_t)(rnd() % 900);        /* another exporter */
        if (i == 11 && k % 10)
            continue;
        x = i % 2 ? x + (double)(rnd() % 50) : (double)(rnd() % 1000) / 4.0;
        if (i == 1 && rnd() % 50 == 0)
            x = 0;                                      /* counter reset */
        t[n] = ts;
        v[n++] = (i == 8 && rnd() % 7 == 0) ? stale() : x;
    }
    return n;
}

static void v3_check_same(const struct gw_ds_cols *a, const struct gw_ds_cols *d)
{
    assert_int_equal(d->nb, a->nb);
    assert_memory_equal(d->end, a->end, a->nb * sizeof *a->end);
    for (int c = 0; c < GW_DS_NCOL; c++)
        for (size_t k = 0; k < a->nb; k++)
            assert_true(bits_of(d->c[c][k]) == bits_of(a->c[c][k]));
}

/* Flipped bits and cuts of a node record are refused. */
static void v3_record_corrupt(struct gw_buf *rec)
{
    struct gw_ds_profiles ps = {0};
    for (int f = 0; f < 200; f++) {
        size_t pos = rnd() % rec->len;
        uint8_t bit = (uint8_t)(1u << (rnd() % 8));
        rec->data[pos] ^= bit;
        assert_int_equal(gw_ds_profiles_decode(rec->data, rec->len, &ps), GW_ECORRUPT);
        assert_int_equal(ps.n, 0);
        rec->data[pos] ^= bit;
        assert_int_equal(gw_ds_profiles_decode(rec->data, rnd() % rec->len, &ps), GW_ECORRUPT);
    }
    assert_int_equal(gw_ds_profiles_decode(rec->data, rec->len, &ps), GW_OK);
    gw_ds_profiles_free(&ps);
}

/* Every value of a node's series of one day, encoded as version 3 with
 * the node's profiles, decodes (with the profiles read back from their
 * record) to the same bits as version 2 and as gw_ds_aggregate; a value
 * is smaller or as small; a reference to a profile the record lacks, a
 * missing record, a flipped bit are refused. */
static void test_downsample_value_v3_profiles(void **state)
{
    (void)state;
    size_t nscr = 0;
    int64_t *scr = malloc(V3_MAX * sizeof *scr), *t = malloc(V3_MAX * sizeof *t);
    double *v = malloc(V3_MAX * sizeof *v);
    for (int64_t ts = D0 + 15000; ts < D0 + GW_DAY_MS; ts += 30000)
        scr[nscr++] = ts + (int64_t)(rnd() % 1000);
    for (int res = 0; res < 2; res++) {
        struct gw_ds_profiles ps = {0}, rd = {0};
        struct gw_buf b2[V3_NSER], b3[V3_NSER], rec;
        struct gw_ds_cols a[V3_NSER], d = {0};
        size_t sz2 = 0, sz3 = 0;
        memset(a, 0, sizeof a);
        gw_buf_init(&rec, 0);
        for (int i = 0; i < V3_NSER; i++) {
            size_t n = v3_series(i, scr, nscr, t, v);
            assert_int_equal(gw_ds_aggregate(t, v, n, res ? GW_DS_1H_MS : GW_DS_5M_MS, &a[i]), GW_OK);
            gw_buf_init(&b2[i], 0);
            gw_buf_init(&b3[i], 0);
            assert_int_equal(gw_ds_encode_v2(&a[i], &b2[i]), GW_OK);
            assert_int_equal(gw_ds_encode(&a[i], &ps, &b3[i]), GW_OK);
            assert_int_equal(b3[i].data[0], 3);
            sz2 += b2[i].len;
            sz3 += b3[i].len;
        }
        assert_true(ps.n >= 2 && ps.n <= GW_DS_MAX_PROFILES);
        assert_int_equal(gw_ds_profiles_encode(&ps, &rec), GW_OK);
        assert_int_equal(gw_ds_profiles_decode(rec.data, rec.len, &rd), GW_OK);
        print_message("res %d: version 2 %zu B, version 3 %zu B + record %zu B (%u profiles)\n", res, sz2, sz3,
                      rec.len, ps.n);
        assert_true(sz3 + rec.len < sz2);
        unsigned all = (1u << GW_DS_NCOL) - 1;
        int referring = 0;
        for (int i = 0; i < V3_NSER; i++) {
            assert_int_equal(gw_ds_decode_p(b3[i].data, b3[i].len, all, &rd, &d), GW_OK);
            v3_check_same(&a[i], &d);
            assert_int_equal(gw_ds_decode(b2[i].data, b2[i].len, all, &d), GW_OK);
            v3_check_same(&a[i], &d);
            for (int c = GW_DS_FIRST_DT; c <= GW_DS_LASTALL_DT; c += 2) {
                assert_int_equal(gw_ds_decode_p(b3[i].data, b3[i].len, 1u << c, &rd, &d), GW_OK);
                for (size_t k = 0; k < a[i].nb; k++) assert_true(bits_of(d.c[c][k]) == bits_of(a[i].c[c][k]));
            }
            int used = gw_ds_profiles_used(b3[i].data, b3[i].len);
            assert_true(used >= 0 && (unsigned)used <= rd.n);
            if (used == 0)
                continue;
            referring++;
            assert_int_equal(gw_ds_decode_p(b3[i].data, b3[i].len, all, NULL, &d), GW_ECORRUPT);
            unsigned keep = rd.n;
            rd.n = (unsigned)used - 1;
            assert_int_equal(gw_ds_decode_p(b3[i].data, b3[i].len, all, &rd, &d), GW_ECORRUPT);
            rd.n = keep;
            for (int f = 0; f < 50; f++) {
                size_t pos = rnd() % b3[i].len;
                b3[i].data[pos] ^= 0x04;
                assert_int_equal(gw_ds_decode_p(b3[i].data, b3[i].len, all, &rd, &d), GW_ECORRUPT);
                assert_int_equal(gw_ds_sum_ok(b3[i].data, b3[i].len), pos == 0);
                b3[i].data[pos] ^= 0x04;
            }
        }
        assert_true(referring >= V3_NSER - 2);
        v3_record_corrupt(&rec);
        for (int i = 0; i < V3_NSER; i++) {
            gw_buf_free(&b2[i]);
            gw_buf_free(&b3[i]);
            gw_ds_cols_free(&a[i]);
        }
        gw_buf_free(&rec);
        gw_ds_cols_free(&d);
        gw_ds_profiles_free(&ps);
        gw_ds_profiles_free(&rd);
    }
    free(scr);
    free(t);
    free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_downsample_bucket_end),
        cmocka_unit_test(test_downsample_value_v2_roundtrip),
        cmocka_unit_test(test_downsample_value_v3_profiles),
        cmocka_unit_test_setup_teardown(test_downsample_end_to_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_downsample_schedule, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
