/* test_db.c - the database end to end in one process: ingest semantics
 * (duplicates, conflicts, out of order, age limits, invalid labels), read
 * back bit-exact from head and store, WAL replay after a crash (a forked
 * child that exits without closing), flush (series scraped together share
 * one stored timestamp column), retention and label queries. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <errno.h>
#include <time.h>

#include "gpuwatch/block.h"
#include "gpuwatch/buf.h"
#include "gpuwatch/codec.h"
#include "wal/wal_int.h"   /* the WAL's write seam, to inject a full disk */
#include "db/db_int.h"    /* gw_db_par_min_series_ms: the threaded select paths with small data */
#include "gpuwatch/db.h"
#include "gpuwatch/exemplars.h"
#include "gpuwatch/labels.h"
#include "gpuwatch/promql.h"
#include "db_fixture.h"

#define MIN_MS 60000LL
#define HOUR_MS 3600000LL

static char tmpdir[512];

static int setup(void **state)
{
    (void)state;
    return gw_fx_mkdtemp(tmpdir, sizeof tmpdir, "gwdb");
}

static int teardown(void **state)
{
    (void)state;
    return gw_fx_rmrf(tmpdir);
}

static struct gw_db *open_db(int64_t retention_ms)
{
    return gw_fx_open_db(tmpdir, retention_ms);
}

/* A request builder over static storage. */
struct req {
    struct gw_rw_request r;
    struct gw_rw_series s[8];
    struct gw_label l[8][6];
    struct gw_sample smp[8][64];
};

static void req_init(struct req *q)
{
    memset(q, 0, sizeof *q);
    q->r.version = 1;
    q->r.series = q->s;
}

static struct gw_rw_series *req_series(struct req *q, const char *name, const char *host, const char *gpu)
{
    size_t i = q->r.n_series++;
    struct gw_rw_series *s = &q->s[i];
    s->labels = q->l[i];
    s->samples = q->smp[i];
    /* deliberately unsorted: the db normalizes */
    s->labels[s->n_labels++] = (struct gw_label){"hostname", 8, host, (uint32_t)strlen(host)};
    s->labels[s->n_labels++] = (struct gw_label){"__name__", 8, name, (uint32_t)strlen(name)};
    if (gpu) s->labels[s->n_labels++] = (struct gw_label){"gpu", 3, gpu, (uint32_t)strlen(gpu)};
    return s;
}

static void add(struct req *q, struct gw_rw_series *s, int64_t t, double v)
{
    s->samples[s->n_samples++] = (struct gw_sample){t, v};
    q->r.n_samples++;
}

struct got {
    size_t series;
    size_t n[16];
    int64_t t[16][256];
    uint64_t v[16][256];
    char labels[16][256];
};

static int collect_cb(void *ud, uint64_t sid, const uint8_t *labels, size_t len, const int64_t *t, const double *v,
                      size_t n)
{
    (void)sid;
    struct got *g = ud;
    if (g->series >= 16) return GW_ELIMIT;
    size_t i = g->series++;
    struct gw_label ls[16];
    size_t nl = 0;
    assert_int_equal(gw_labels_decode(labels, len, ls, 16, &nl), GW_OK);
    size_t off = 0;
    for (size_t k = 0; k < nl; k++)
        off += (size_t)snprintf(g->labels[i] + off, sizeof g->labels[i] - off, "%.*s=%.*s,", (int)ls[k].name_len,
                                ls[k].name, (int)ls[k].value_len, ls[k].value);
    g->n[i] = n;
    for (size_t k = 0; k < n && k < 256; k++) {
        g->t[i][k] = t[k];
        memcpy(&g->v[i][k], &v[k], 8);
    }
    return GW_OK;
}

static void select_all(struct gw_db *db, const char *sel, int64_t mint, int64_t maxt, struct got *g)
{
    memset(g, 0, sizeof *g);
    gw_fx_select(db, sel, mint, maxt, collect_cb, g);
}

static double bits(uint64_t u)
{
    double d;
    memcpy(&d, &u, 8);
    return d;
}

static void test_db_ingest_semantics(void **state)
{
    (void)state;
    struct gw_db *db = open_db(0);
    int64_t now = gw_now_ms();
    int64_t t0 = now - 30 * MIN_MS;
    struct req q;
    req_init(&q);
    struct gw_rw_series *a = req_series(&q, "DCGM_FI_DEV_GPU_TEMP", "gpu071", "0");
    struct gw_rw_series *b = req_series(&q, "node_load1", "gpu071", NULL);
    for (int i = 0; i < 10; i++) add(&q, a, t0 + i * 15000, 40 + i);
    add(&q, b, t0, bits(0x7ff0000000000002ull));   /* stale marker */
    add(&q, b, t0 + 15000, -0.0);
    add(&q, b, t0 + 30000, INFINITY);
    struct gw_append_result res;
    struct gw_error err = {0};
    assert_int_equal(gw_db_append(db, &q.r, now, &res, &err), GW_OK);
    assert_int_equal(res.accepted, 13);

    /* the same request again is an idempotent no-op */
    struct req q2;
    req_init(&q2);
    a = req_series(&q2, "DCGM_FI_DEV_GPU_TEMP", "gpu071", "0");
    for (int i = 0; i < 10; i++) add(&q2, a, t0 + i * 15000, 40 + i);
    assert_int_equal(gw_db_append(db, &q2.r, now, &res, &err), GW_OK);
    assert_int_equal(res.accepted, 0);
    assert_int_equal(res.duplicates, 10);

    /* conflict, out of order, too old, too new, invalid labels; valid kept */
    struct req q3;
    req_init(&q3);
    a = req_series(&q3, "DCGM_FI_DEV_GPU_TEMP", "gpu071", "0");
    add(&q3, a, t0 + 9 * 15000, 99);                  /* same t, other value */
    add(&q3, a, t0 + 5 * 15000 + 1, 45);              /* out of order */
    add(&q3, a, now - 56LL * 24 * HOUR_MS, 1);        /* older than retention */
    add(&q3, a, now + 11 * MIN_MS, 1);                /* too far ahead */
    add(&q3, a, t0 + 10 * 15000, 50);                 /* fine */
    struct gw_rw_series *bad = req_series(&q3, "x", "h", NULL);
    bad->labels[bad->n_labels++] = (struct gw_label){"hostname", 8, "dup", 3};
    add(&q3, bad, t0, 1);
    assert_int_equal(gw_db_append(db, &q3.r, now, &res, &err), GW_OK);
    assert_int_equal(res.accepted, 1);
    assert_int_equal(res.conflicts, 1);
    assert_int_equal(res.out_of_order, 1);
    assert_int_equal(res.too_old, 1);
    assert_int_equal(res.too_new, 1);
    assert_int_equal(res.invalid_series, 1);
    assert_non_null(strstr(res.first_invalid, "hostname"));

    struct got g;
    select_all(db, "{hostname=\"gpu071\"}", t0, now, &g);
    assert_int_equal(g.series, 2);
    /* Prometheus order: by labels: DCGM... < node_load1 */
    assert_non_null(strstr(g.labels[0], "__name__=DCGM_FI_DEV_GPU_TEMP,gpu=0,hostname=gpu071,"));
    assert_int_equal(g.n[0], 11);
    assert_int_equal(g.t[0][10], t0 + 150000);
    assert_true(bits(g.v[0][10]) == 50.0);
    assert_int_equal(g.n[1], 3);
    assert_int_equal(g.v[1][0], 0x7ff0000000000002ull);
    assert_int_equal(g.v[1][1], 0x8000000000000000ull);
    assert_true(isinf(bits(g.v[1][2])));
    gw_db_close(db);
}

static void test_db_crash_replay_and_flush(void **state)
{
    (void)state;
    int64_t now = gw_now_ms();
    int64_t t0 = now - 5 * HOUR_MS;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct gw_db *db = open_db(0);
        for (int k = 0; k < 4; k++) {
            struct req q;
            req_init(&q);
            for (int s = 0; s < 4; s++) {
                char gpu[4];
                snprintf(gpu, sizeof gpu, "%d", s);
                struct gw_rw_series *x = req_series(&q, "DCGM_FI_DEV_POWER_USAGE", "gpu001", NULL);
                x->labels[x->n_labels++] = (struct gw_label){"gpu", 3, strdup(gpu), 1};
                /* 5 hours of 5-minute samples: crosses 2 h windows */
                for (int i = 0; i < 15; i++) add(&q, x, t0 + (k * 15 + i) * 5 * MIN_MS, 700.125 + s + i);
            }
            struct gw_append_result res;
            struct gw_error err = {0};
            if (gw_db_append(db, &q.r, now, &res, &err) != GW_OK || res.accepted != 60) _exit(3);
        }
        _exit(0);   /* no close, no flush: a crash */
    }
    int st = 0;
    waitpid(pid, &st, 0);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);

    struct gw_db *db = open_db(0);
    struct got g;
    select_all(db, "DCGM_FI_DEV_POWER_USAGE", t0, now, &g);
    assert_int_equal(g.series, 4);
    for (size_t s = 0; s < 4; s++) {
        assert_int_equal(g.n[s], 60);
        for (size_t i = 1; i < 60; i++) assert_true(g.t[s][i] > g.t[s][i - 1]);
    }
    /* flush to the store, read again: the same */
    struct gw_error err = {0};
    assert_int_equal(gw_db_flush(db, &err), GW_OK);
    struct got g2;
    select_all(db, "DCGM_FI_DEV_POWER_USAGE", t0, now, &g2);
    assert_int_equal(g2.series, 4);
    for (size_t s = 0; s < 4; s++) {
        assert_int_equal(g2.n[s], 60);
        assert_memory_equal(g.t[s], g2.t[s], 60 * sizeof(int64_t));
        assert_memory_equal(g.v[s], g2.v[s], 60 * sizeof(uint64_t));
    }
    struct gw_db_stats dst;
    assert_int_equal(gw_db_stats(db, &dst, &err), GW_OK);
    assert_int_equal(dst.stored_samples, 240);
    assert_int_equal(dst.series, 4);
    /* a retry of stored data after restart is still a no-op */
    gw_db_close(db);
    db = open_db(0);
    struct req q;
    req_init(&q);
    struct gw_rw_series *x = req_series(&q, "DCGM_FI_DEV_POWER_USAGE", "gpu001", "0");
    add(&q, x, g2.t[0][59], bits(g2.v[0][59]));
    add(&q, x, g2.t[0][59] + 1000, 1.0);
    struct gw_append_result res;
    assert_int_equal(gw_db_append(db, &q.r, now, &res, &err), GW_OK);
    assert_int_equal(res.duplicates, 1);
    assert_int_equal(res.accepted, 1);
    select_all(db, "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"}", t0, now, &g);
    assert_int_equal(g.series, 1);
    assert_int_equal(g.n[0], 61);
    gw_db_close(db);
}

static void test_db_matchers_and_labels(void **state)
{
    (void)state;
    struct gw_db *db = open_db(0);
    int64_t now = gw_now_ms(), t0 = now - HOUR_MS;
    struct req q;
    req_init(&q);
    const char *hosts[] = {"gpu001", "gpu002", "gpu003"};
    for (int h = 0; h < 3; h++) {
        struct gw_rw_series *s = req_series(&q, "up", hosts[h], NULL);
        add(&q, s, t0, h);
        s = req_series(&q, "temp", hosts[h], h == 2 ? NULL : "1");
        add(&q, s, t0, 50 + h);
    }
    struct gw_append_result res;
    struct gw_error err = {0};
    assert_int_equal(gw_db_append(db, &q.r, now, &res, &err), GW_OK);
    assert_int_equal(res.accepted, 6);
    struct got g;
    select_all(db, "up", t0, now, &g);
    assert_int_equal(g.series, 3);
    select_all(db, "up{hostname!=\"gpu002\"}", t0, now, &g);
    assert_int_equal(g.series, 2);
    select_all(db, "{hostname=~\"gpu00[12]\"}", t0, now, &g);
    assert_int_equal(g.series, 4);
    select_all(db, "{__name__=~\".+\",hostname!~\"gpu00[12]\"}", t0, now, &g);
    assert_int_equal(g.series, 2);
    /* gpu="" selects series without the label */
    select_all(db, "temp{gpu=\"\"}", t0, now, &g);
    assert_int_equal(g.series, 1);
    assert_non_null(strstr(g.labels[0], "gpu003"));
    select_all(db, "temp{gpu!=\"\"}", t0, now, &g);
    assert_int_equal(g.series, 2);
    /* nothing in another time range */
    select_all(db, "up", t0 - 2 * HOUR_MS, t0 - HOUR_MS, &g);
    assert_int_equal(g.series, 0);
    gw_db_close(db);
}

static void test_db_retention_drops_old_days(void **state)
{
    (void)state;
    struct gw_db *db = open_db(60LL * 24 * HOUR_MS);
    int64_t now = gw_now_ms();
    struct req q;
    req_init(&q);
    struct gw_rw_series *s = req_series(&q, "m", "h1", NULL);
    for (int d = 20; d >= 1; d--) add(&q, s, now - d * 24 * HOUR_MS, d);
    struct gw_append_result res;
    struct gw_error err = {0};
    assert_int_equal(gw_db_append(db, &q.r, now, &res, &err), GW_OK);
    assert_int_equal(res.accepted, 20);
    assert_int_equal(gw_db_flush(db, &err), GW_OK);
    unsigned dropped = 0;
    assert_int_equal(gw_db_retention(db, 10LL * 24 * HOUR_MS, now, &dropped, &err), GW_OK);
    assert_true(dropped >= 9 && dropped <= 11);
    struct got g;
    select_all(db, "m", now - 30 * 24 * HOUR_MS, now, &g);
    assert_int_equal(g.series, 1);
    assert_true(g.n[0] >= 9 && g.n[0] <= 11);
    for (size_t i = 0; i < g.n[0]; i++) assert_true(g.t[0][i] >= now - 11 * 24 * HOUR_MS);
    gw_db_close(db);
}

static ssize_t write_enospc(int fd, const void *buf, size_t n)
{
    (void)fd;
    (void)buf;
    (void)n;
    errno = ENOSPC;
    return -1;
}

/* A full disk under the WAL: writes get GW_EFULL (507, retried by Prometheus);
 * a retry of samples that reached the head but not the WAL is refused too,
 * never acknowledged as a duplicate; once the disk has room the background
 * thread writes the head to the store, opens a fresh WAL and writes resume,
 * with every sample readable, also after a reopen. */
static void test_db_wal_failure_recovers(void **state)
{
    (void)state;
    struct gw_db_opts o;
    gw_db_opts_default(&o);
    o.dir = tmpdir;
    o.initial_map_bytes = 1 << 20;
    o.background = 1;
    struct gw_db *db = NULL;
    struct gw_error err = {0};
    assert_int_equal(gw_db_open(&db, &o, &err), GW_OK);
    int64_t now = gw_now_ms(), t0 = now - 10 * MIN_MS;
    struct gw_append_result res;
    struct req q;
    req_init(&q);
    struct gw_rw_series *x = req_series(&q, "m", "h1", NULL);
    add(&q, x, t0, 1.0);
    assert_int_equal(gw_db_append(db, &q.r, now, &res, &err), GW_OK);

    ssize_t (*saved)(int, const void *, size_t) = gw_wal_io.write;
    gw_wal_io.write = write_enospc;
    req_init(&q);
    x = req_series(&q, "m", "h1", NULL);
    add(&q, x, t0 + 15000, 2.0);
    assert_int_equal(gw_db_append(db, &q.r, now, &res, &err), GW_EFULL);
    /* the retry must not be answered as a harmless duplicate */
    assert_int_equal(gw_db_append(db, &q.r, now, &res, &err), GW_EFULL);
    assert_non_null(strstr(err.msg, "disk full"));
    gw_wal_io.write = saved;

    /* recovery runs every 10 s in the background; allow two rounds */
    int rc = GW_EIO;
    for (int i = 0; i < 250 && rc != GW_OK; i++) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
        req_init(&q);
        x = req_series(&q, "m", "h1", NULL);
        add(&q, x, t0 + 30000, 3.0);
        rc = gw_db_append(db, &q.r, now, &res, &err);
    }
    assert_int_equal(rc, GW_OK);
    assert_int_equal(res.accepted, 1);
    struct got g;
    select_all(db, "m", t0, now, &g);
    assert_int_equal(g.series, 1);
    assert_int_equal(g.n[0], 3);
    gw_db_close(db);
    db = open_db(0);
    select_all(db, "m", t0, now, &g);
    assert_int_equal(g.n[0], 3);
    assert_true(bits(g.v[0][2]) == 3.0);
    gw_db_close(db);
}

/* Many series, stored blocks plus head samples, read over ranges that cut
 * blocks: the multi-threaded read (no sample budget) and the sequential one
 * (a budget) hand over the same series in label order with exactly the
 * expected samples; a callback may stop early; a budget too small fails. */
struct many {
    size_t series, stop_after;
    char name[24][16];
    size_t n[24];
    int64_t t[24][128];
    double v[24][128];
};

static int many_cb(void *ud, uint64_t sid, const uint8_t *labels, size_t len, const int64_t *t, const double *v,
                   size_t n)
{
    (void)sid;
    struct many *m = ud;
    if (m->series >= 24 || n > 128) return GW_ELIMIT;
    size_t i = m->series++;
    const char *val;
    size_t vl;
    if (!gw_labels_get(labels, len, "gpu", 3, &val, &vl) || vl >= sizeof m->name[i]) return GW_EINVAL;
    memcpy(m->name[i], val, vl);
    m->name[i][vl] = 0;
    m->n[i] = n;
    memcpy(m->t[i], t, n * sizeof *t);
    memcpy(m->v[i], v, n * sizeof *v);
    return m->stop_after && m->series == m->stop_after ? 1 : GW_OK;
}

static int many_select(struct gw_db *db, int64_t mint, int64_t maxt, uint64_t max_samples, struct many *m)
{
    struct gw_matcher ms[2];
    size_t nm = 0;
    struct gw_error err = {0};
    assert_int_equal(gw_pq_parse_selector("m{hostname=\"h\"}", 15, ms, 2, &nm, &err), GW_OK);
    struct gw_db_select q = {.matchers = ms, .n_matchers = nm, .mint = mint, .maxt = maxt, .with_samples = 1,
                             .only_with_data = 1, .max_samples = max_samples};
    int rc = gw_db_select(db, &q, many_cb, m, &err);
    for (size_t i = 0; i < nm; i++) gw_matcher_free(&ms[i]);
    return rc;
}

static void test_db_select_many_series_parallel(void **state)
{
    (void)state;
    int64_t now = gw_now_ms();
    int64_t t0 = (now - 7 * HOUR_MS) / HOUR_MS * HOUR_MS;
    struct gw_db *db = open_db(0);
    struct gw_error err = {0};
    /* 24 series ("g00".."g23"), 60 samples 5 min apart over 5 h: flushed,
     * then 20 more each 5 min apart in the head */
    for (int part = 0; part < 2; part++) {
        for (int b = 0; b < 3; b++) {
            struct req q;
            req_init(&q);
            char gpus[8][4];
            for (int k = 0; k < 8; k++) {
                int sidx = b * 8 + k;
                char *gpu = gpus[k];
                snprintf(gpu, 4, "g%02d", sidx);
                struct gw_rw_series *x = req_series(&q, "m", "h", gpu);
                int from = part ? 60 : 0, to = part ? 80 : 60;
                for (int i = from; i < to; i++) add(&q, x, t0 + i * 5 * MIN_MS, sidx * 1000.0 + i * 0.25);
            }
            struct gw_append_result res;
            assert_int_equal(gw_db_append(db, &q.r, now, &res, &err), GW_OK);
            assert_int_equal(res.accepted, part ? 160 : 480);
        }
        if (part == 0) assert_int_equal(gw_db_flush(db, &err), GW_OK);
    }
    static struct many par, seq, stop;
    /* a range starting and ending inside blocks, spanning store and head */
    int64_t mint = t0 + 37 * 5 * MIN_MS + 1, maxt = t0 + 71 * 5 * MIN_MS;
    memset(&par, 0, sizeof par);
    memset(&seq, 0, sizeof seq);
    assert_int_equal(many_select(db, mint, maxt, 0, &par), GW_OK);
    assert_int_equal(many_select(db, mint, maxt, 1u << 20, &seq), GW_OK);
    assert_int_equal(par.series, 24);
    assert_int_equal(seq.series, 24);
    for (size_t s = 0; s < 24; s++) {
        char want[16];
        snprintf(want, sizeof want, "g%02zu", s);
        assert_string_equal(par.name[s], want);
        assert_string_equal(seq.name[s], want);
        assert_int_equal(par.n[s], 34);   /* samples 38 .. 71 */
        assert_int_equal(seq.n[s], 34);
        for (size_t i = 0; i < 34; i++) {
            assert_int_equal(par.t[s][i], t0 + (int64_t)(38 + i) * 5 * MIN_MS);
            assert_true(par.v[s][i] == (double)s * 1000.0 + (double)(38 + i) * 0.25);
        }
        assert_memory_equal(par.t[s], seq.t[s], 34 * sizeof(int64_t));
        assert_memory_equal(par.v[s], seq.v[s], 34 * sizeof(double));
    }
    /* the same range with helper threads (24 series x 2.8 h is below the
     * default threshold, so the read above ran in this thread), and a
     * second time, on the sample buffers the first one left behind */
    static struct many thr;
    double keep = gw_db_par_min_series_ms;
    gw_db_par_min_series_ms = 0;
    for (int round = 0; round < 2; round++) {
        memset(&thr, 0, sizeof thr);
        assert_int_equal(many_select(db, mint, maxt, 0, &thr), GW_OK);
        assert_int_equal(thr.series, 24);
        for (size_t s = 0; s < 24; s++) {
            assert_string_equal(thr.name[s], par.name[s]);
            assert_int_equal(thr.n[s], 34);
            assert_memory_equal(thr.t[s], par.t[s], 34 * sizeof(int64_t));
            assert_memory_equal(thr.v[s], par.v[s], 34 * sizeof(double));
        }
    }
    memset(&thr, 0, sizeof thr);
    thr.stop_after = 3;   /* the callback stops while helpers still decode */
    assert_int_equal(many_select(db, mint, maxt, 0, &thr), GW_OK);
    assert_int_equal(thr.series, 3);
    assert_string_equal(thr.name[2], "g02");
    gw_db_par_min_series_ms = keep;
    /* stopping early after 5 series */
    memset(&stop, 0, sizeof stop);
    stop.stop_after = 5;
    assert_int_equal(many_select(db, mint, maxt, 0, &stop), GW_OK);
    assert_int_equal(stop.series, 5);
    assert_string_equal(stop.name[4], "g04");
    /* a budget smaller than the data */
    memset(&seq, 0, sizeof seq);
    assert_int_equal(many_select(db, mint, maxt, 100, &seq), GW_ELIMIT);
    gw_db_close(db);
}

/* Series of one node scraped together share one stored timestamp column:
 * the payload of nine series in three timestamp groups costs about three
 * blocks' timestamps, and every sample reads back bit-exact. */
static void test_db_flush_shares_timestamps(void **state)
{
    (void)state;
    int64_t now = gw_now_ms();
    int64_t w = 2 * HOUR_MS;
    int64_t t0 = (now - 4 * HOUR_MS) / w * w;
    enum { N = 60 };
    int64_t ts[N], other[N];
    for (int i = 0; i < N; i++) {
        ts[i] = t0 + 15000LL * i + (i * 7919) % 1500;     /* jittered scrapes */
        other[i] = t0 + 15000LL * i + 500 + (i * 104729) % 900;
    }
    static const char *const gpus[6] = {"0", "1", "2", "3", "4", "5"};
    struct gw_db *db = open_db(0);
    struct req q;
    req_init(&q);
    for (int s = 0; s < 6; s++) {
        struct gw_rw_series *x = req_series(&q, "DCGM_FI_DEV_GPU_TEMP", "n1", gpus[s]);
        for (int i = 0; i < N; i++) add(&q, x, ts[i], 40.0 + s + (i % 4) * 0.5);
    }
    struct gw_rw_series *x = req_series(&q, "node_load1", "n1", NULL);
    for (int i = 0; i < N; i++) add(&q, x, other[i], i * 0.01);
    struct gw_append_result res;
    struct gw_error err = {0};
    assert_int_equal(gw_db_append(db, &q.r, now, &res, &err), GW_OK);
    assert_int_equal(res.accepted, 7 * N);
    req_init(&q);
    for (int s = 0; s < 2; s++) {
        x = req_series(&q, "DCGM_FI_DEV_GPU_TEMP", "n2", gpus[s]);
        for (int i = 0; i < N; i++) add(&q, x, ts[i], s ? bits(0x7ff0000000000002ull) : -1.0 * i);
    }
    assert_int_equal(gw_db_append(db, &q.r, now, &res, &err), GW_OK);
    assert_int_equal(res.accepted, 2 * N);
    assert_int_equal(gw_db_flush(db, &err), GW_OK);

    struct got g;
    select_all(db, "{__name__=~\"DCGM_FI_DEV_GPU_TEMP|node_load1\"}", t0, now, &g);
    assert_int_equal(g.series, 9);
    size_t seen_other = 0;
    for (size_t s = 0; s < g.series; s++) {
        assert_int_equal(g.n[s], N);
        int is_other = strstr(g.labels[s], "node_load1") != NULL;
        seen_other += (size_t)is_other;
        for (int i = 0; i < N; i++) assert_true(g.t[s][i] == (is_other ? other[i] : ts[i]));
        if (strstr(g.labels[s], "hostname=n2,") && strstr(g.labels[s], "gpu=1,"))
            for (int i = 0; i < N; i++) assert_true(g.v[s][i] == 0x7ff0000000000002ull);
    }
    assert_int_equal(seen_other, 1);

    /* One whole block of the shared timestamps, to compare sizes with. */
    double vals[N];
    for (int i = 0; i < N; i++) vals[i] = 40.0 + (i % 4) * 0.5;
    struct gw_buf one;
    gw_buf_init(&one, 0);
    assert_int_equal(gw_block_encode(ts, vals, N, &one), GW_OK);
    struct gw_db_stats st;
    assert_int_equal(gw_db_stats(db, &st, &err), GW_OK);
    assert_int_equal(st.stored_samples, 9 * N);
    /* without sharing: about 9 blocks; with it: 3 columns + 9 value parts */
    assert_true(st.stored_block_bytes < 4 * one.len + 9 * 12);
    assert_true(st.stored_block_bytes * 2 < 9 * one.len);
    gw_buf_free(&one);
    gw_db_close(db);

    /* and after a reopen (read from the store only) */
    db = open_db(0);
    struct got g2;
    select_all(db, "{__name__=~\"DCGM_FI_DEV_GPU_TEMP|node_load1\"}", t0, now, &g2);
    assert_int_equal(g2.series, 9);
    for (size_t s = 0; s < 9; s++) {
        assert_int_equal(g2.n[s], N);
        assert_memory_equal(g.t[s], g2.t[s], N * sizeof(int64_t));
        assert_memory_equal(g.v[s], g2.v[s], N * sizeof(uint64_t));
    }
    gw_db_close(db);
}

/* One long series (4800 samples in ten 2 h blocks) read over a range that
 * cuts its first and last blocks: the blocks decoded by several threads
 * give exactly the samples the sequential read gives. */
struct got_long {
    size_t calls, n;
    int64_t t[5000];
    double v[5000];
};

static int long_cb(void *ud, uint64_t sid, const uint8_t *labels, size_t len, const int64_t *t, const double *v,
                   size_t n)
{
    (void)sid;
    (void)labels;
    (void)len;
    struct got_long *g = ud;
    g->calls++;
    if (n > 5000) return GW_ELIMIT;
    g->n = n;
    memcpy(g->t, t, n * sizeof *t);
    memcpy(g->v, v, n * sizeof *v);
    return GW_OK;
}

static void test_db_select_long_series_blocks_split(void **state)
{
    (void)state;
    int64_t now = gw_now_ms();
    int64_t t0 = (now - 22 * HOUR_MS) / (2 * HOUR_MS) * (2 * HOUR_MS);
    struct gw_db *db = open_db(0);
    struct gw_error err = {0};
    const int total = 4800;   /* 20 h at 15 s */
    for (int i = 0; i < total; i += 64) {
        struct req q;
        req_init(&q);
        struct gw_rw_series *x = req_series(&q, "long", "h", NULL);
        for (int k = i; k < i + 64 && k < total; k++) add(&q, x, t0 + k * 15000LL, 100.0 + (k % 97) * 0.5 - (k % 13));
        struct gw_append_result res;
        assert_int_equal(gw_db_append(db, &q.r, now, &res, &err), GW_OK);
        assert_int_equal(res.accepted, x->n_samples);
    }
    assert_int_equal(gw_db_flush(db, &err), GW_OK);
    static struct got_long a, b;
    struct gw_matcher ms[2];
    size_t nm = 0;
    assert_int_equal(gw_pq_parse_selector("long", 4, ms, 2, &nm, &err), GW_OK);
    int64_t mint = t0 + 333 * 15000LL - 7, maxt = t0 + 4444 * 15000LL + 3;
    struct gw_db_select q = {.matchers = ms, .n_matchers = nm, .mint = mint, .maxt = maxt, .with_samples = 1,
                             .only_with_data = 1};
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    double keep = gw_db_par_min_series_ms;
    gw_db_par_min_series_ms = 0;   /* 17 h of one series: split over threads all the same */
    assert_int_equal(gw_db_select(db, &q, long_cb, &a, &err), GW_OK);
    gw_db_par_min_series_ms = keep;
    q.max_samples = 1u << 20;   /* a budget: the sequential read */
    assert_int_equal(gw_db_select(db, &q, long_cb, &b, &err), GW_OK);
    assert_int_equal(a.calls, 1);
    assert_int_equal(b.calls, 1);
    assert_int_equal(a.n, 4444 - 333 + 1);
    assert_int_equal(b.n, a.n);
    for (size_t i = 0; i < a.n; i++) {
        int k = 333 + (int)i;
        assert_int_equal(a.t[i], t0 + k * 15000LL);
        assert_true(a.v[i] == 100.0 + (k % 97) * 0.5 - (k % 13));
    }
    assert_memory_equal(a.t, b.t, a.n * sizeof(int64_t));
    assert_memory_equal(a.v, b.v, a.n * sizeof(double));
    for (size_t i = 0; i < nm; i++) gw_matcher_free(&ms[i]);
    gw_db_close(db);
}

/* ---- the exemplar store (exemplars.c) ---- */

static size_t ex_series(const char *name, const char *job, uint8_t *out)
{
    struct gw_label l[2] = {{"__name__", 8, name, (uint32_t)strlen(name)}, {"job", 3, job, (uint32_t)strlen(job)}};
    return gw_labels_encode(l, 2, out);
}

static enum gw_exemplar_outcome ex_add(struct gw_exemplars *ex, const char *job, const char *trace, int64_t t,
                                       double v)
{
    uint8_t s[128];
    size_t n = ex_series("m", job, s);
    struct gw_label l = {"trace_id", 8, trace, (uint32_t)strlen(trace)};
    enum gw_exemplar_outcome o;
    assert_int_equal(gw_exemplars_add(ex, s, n, &l, 1, t, v, &o), GW_OK);
    return o;
}

struct ex_seen {
    char text[1024];
};

static int ex_collect_cb(void *ud, const uint8_t *series, size_t len, const struct gw_exemplar *e, size_t n)
{
    struct ex_seen *seen = ud;
    const char *job = NULL;
    size_t jl = 0;
    assert_true(gw_labels_get(series, len, "job", 3, &job, &jl));
    size_t k = strlen(seen->text);
    k += (size_t)snprintf(seen->text + k, sizeof seen->text - k, "%.*s:", (int)jl, job);
    for (size_t i = 0; i < n; i++)
        k += (size_t)snprintf(seen->text + k, sizeof seen->text - k, "%lld=%g,", (long long)e[i].t, e[i].v);
    snprintf(seen->text + k, sizeof seen->text - k, " ");
    return GW_OK;
}

static void ex_select(struct gw_exemplars *ex, const char *job_re, int64_t start, int64_t end, char *out, size_t cap)
{
    struct gw_matcher m;
    struct gw_error err = {0};
    struct ex_seen seen = {{0}};
    assert_int_equal(gw_matcher_init(&m, GW_MATCH_RE, "job", 3, job_re, strlen(job_re), &err), GW_OK);
    const struct gw_matcher *sets[1] = {&m};
    size_t lens[1] = {1};
    assert_int_equal(gw_exemplars_select(ex, sets, lens, 1, start, end, ex_collect_cb, &seen), GW_OK);
    snprintf(out, cap, "%s", seen.text);
    gw_matcher_free(&m);
}

static void test_db_exemplar_store(void **state)
{
    (void)state;
    char got[1024];
    struct gw_exemplars_stats st;
    struct gw_exemplars *ex = gw_exemplars_new(4);
    assert_non_null(ex);
    /* per series: newest decides duplicate / out of order */
    assert_int_equal(ex_add(ex, "a", "t1", 10, 1.0), GW_EXEMPLAR_STORED);
    assert_int_equal(ex_add(ex, "a", "t1", 10, 1.0), GW_EXEMPLAR_DUPLICATE);
    assert_int_equal(ex_add(ex, "a", "t1", 10, 2.0), GW_EXEMPLAR_OUT_OF_ORDER);
    assert_int_equal(ex_add(ex, "a", "t2", 5, 1.0), GW_EXEMPLAR_OUT_OF_ORDER);
    assert_int_equal(ex_add(ex, "b", "t2", 5, 1.0), GW_EXEMPLAR_STORED);   /* another series: own order */
    assert_int_equal(ex_add(ex, "a", "t3", 20, NAN), GW_EXEMPLAR_STORED);
    assert_int_equal(ex_add(ex, "a", "t3", 20, NAN), GW_EXEMPLAR_DUPLICATE);   /* same bits */
    assert_int_equal(ex_add(ex, "b", "t4", 6, 3.0), GW_EXEMPLAR_STORED);
    ex_select(ex, ".*", 0, 100, got, sizeof got);
    assert_string_equal(got, "a:10=1,20=nan, b:5=1,6=3, ");
    ex_select(ex, "b", 6, 6, got, sizeof got);
    assert_string_equal(got, "b:6=3, ");
    ex_select(ex, "a", 11, 19, got, sizeof got);   /* nothing in range */
    assert_string_equal(got, "");
    /* full (4): each new exemplar overwrites the oldest of any series; a
     * series whose last exemplar goes is gone */
    assert_int_equal(ex_add(ex, "c", "t5", 1, 5.0), GW_EXEMPLAR_STORED);     /* over a@10 */
    assert_int_equal(ex_add(ex, "c", "t6", 2, 6.0), GW_EXEMPLAR_STORED);     /* over b@5 */
    assert_int_equal(ex_add(ex, "c", "t7", 3, 7.0), GW_EXEMPLAR_STORED);     /* over a@20: a gone */
    ex_select(ex, ".*", INT64_MIN, INT64_MAX, got, sizeof got);
    assert_string_equal(got, "b:6=3, c:1=5,2=6,3=7, ");
    gw_exemplars_stats(ex, &st);
    assert_int_equal(st.cap, 4);
    assert_int_equal(st.in_storage, 4);
    assert_int_equal(st.series, 2);
    assert_int_equal(st.appended, 7);
    assert_int_equal(st.out_of_order, 2);
    assert_int_equal(st.oldest_ms, 6);
    /* a dropped series starts afresh: an older timestamp is fine again */
    assert_int_equal(ex_add(ex, "a", "t8", 1, 8.0), GW_EXEMPLAR_STORED);    /* over b@6: b gone */
    ex_select(ex, "a|b", INT64_MIN, INT64_MAX, got, sizeof got);
    assert_string_equal(got, "a:1=8, ");
    /* the 128-rune limit counts names and values in runes; empty values drop out */
    uint8_t s[128];
    size_t sl = ex_series("m", "r", s);
    char v2b[300], v129[200];
    memset(v129, 'x', 121);
    v129[121] = 0;                      /* "trace_id" (8) + 121 = 129 runes */
    for (int i = 0; i < 120; i++) memcpy(v2b + 2 * i, "\xc3\xa9", 2);
    v2b[240] = 0;                       /* 8 + 120 two-byte runes = 128 runes, 248 bytes */
    struct gw_label l[2] = {{"trace_id", 8, v129, 121}, {"empty", 5, "", 0}};
    enum gw_exemplar_outcome o;
    assert_int_equal(gw_exemplars_add(ex, s, sl, l, 2, 100, 1, &o), GW_OK);
    assert_int_equal(o, GW_EXEMPLAR_TOO_LONG);
    l[0].value = v2b;
    l[0].value_len = 240;
    assert_int_equal(gw_exemplars_add(ex, s, sl, l, 2, 100, 1, &o), GW_OK);
    assert_int_equal(o, GW_EXEMPLAR_STORED);
    l[0].value_len = 239;                 /* a truncated rune still counts as one */
    assert_int_equal(gw_exemplars_add(ex, s, sl, l, 2, 101, 1, &o), GW_OK);
    assert_int_equal(o, GW_EXEMPLAR_STORED);
    gw_exemplars_free(ex);

    /* capacity 0 keeps nothing; the request path counts per reason */
    ex = gw_exemplars_new(0);
    assert_non_null(ex);
    assert_int_equal(ex_add(ex, "a", "t1", 10, 1.0), GW_EXEMPLAR_DISABLED);
    ex_select(ex, ".*", INT64_MIN, INT64_MAX, got, sizeof got);
    assert_string_equal(got, "");
    gw_exemplars_free(ex);
    assert_null(gw_exemplars_new((uint64_t)GW_EXEMPLARS_MAX_CAP + 1));

    ex = gw_exemplars_new(10);
    struct gw_label good[2] = {{"job", 3, "q", 1}, {"__name__", 8, "m", 1}};   /* unsorted: sorted in place */
    struct gw_label bad[1] = {{"job", 3, "q", 1}};                             /* no __name__ */
    struct gw_label el = {"trace_id", 8, "x", 1};
    struct gw_rw_exemplar e3[3] = {{&el, 1, 10, 1}, {&el, 1, 10, 1}, {&el, 1, 9, 2}};
    struct gw_rw_series rs[2] = {{good, 2, NULL, 0, 0, 3, e3}, {bad, 1, NULL, 0, 0, 1, e3}};
    struct gw_rw_request req = {.version = 1, .series = rs, .n_series = 2, .n_exemplars = 4};
    struct gw_exemplars_result res;
    assert_int_equal(gw_exemplars_append(ex, &req, &res), GW_OK);
    assert_int_equal(res.stored, 1);
    assert_int_equal(res.duplicate, 1);
    assert_int_equal(res.out_of_order, 1);
    assert_int_equal(res.invalid_series, 1);
    assert_non_null(strstr(res.first_problem, "out of order exemplar (series m)"));
    assert_int_equal(gw_exemplars_append(NULL, &req, &res), GW_OK);
    assert_int_equal(res.disabled, 4);
    gw_exemplars_free(ex);
}

/* The exemplar store against a plain model (the last cap stored
 * exemplars, in order) under many series, wrap-arounds and drops: every
 * outcome and the final contents agree. */
static void test_db_exemplar_store_model(void **state)
{
    (void)state;
    enum { CAP = 64, NSER = 300, NADD = 20000 };
    struct { int ser; int64_t t; } *m = calloc(NADD, sizeof *m);   /* stored, in order */
    int64_t next_t[NSER];
    size_t nm = 0;
    uint32_t x = 12345;
    struct gw_exemplars *ex = gw_exemplars_new(CAP);
    assert_non_null(m);
    assert_non_null(ex);
    for (int i = 0; i < NSER; i++) next_t[i] = 1000;
    for (int k = 0; k < NADD; k++) {
        x = x * 1103515245u + 12345u;
        int sr = (int)((x >> 8) % NSER);
        int64_t t = (x >> 20) % 8 == 0 ? next_t[sr] - 500 : next_t[sr]++;   /* some go back in time */
        /* the model: the series' newest live exemplar */
        int64_t newest = INT64_MIN;
        for (size_t i = nm > CAP ? nm - CAP : 0; i < nm; i++)
            if (m[i].ser == sr) newest = m[i].t;
        char job[16];
        snprintf(job, sizeof job, "s%03d", sr);
        enum gw_exemplar_outcome want = newest != INT64_MIN && t <= newest ? GW_EXEMPLAR_OUT_OF_ORDER : GW_EXEMPLAR_STORED;
        if (newest == t) want = GW_EXEMPLAR_DUPLICATE;   /* same labels and value (v = t) */
        enum gw_exemplar_outcome got = ex_add(ex, job, "tr", t, (double)t);
        if (got != want)
            fail_msg("add %d (series %d, t %lld): outcome %d, want %d", k, sr, (long long)t, got, want);
        if (got == GW_EXEMPLAR_STORED) {
            m[nm].ser = sr;
            m[nm++].t = t;
        }
    }
    /* contents: per series in label order, oldest first */
    char want[8192] = "", got[1024];
    size_t w = 0;
    for (int sr = 0; sr < NSER; sr++) {
        int any = 0;
        for (size_t i = nm - CAP; i < nm; i++) {
            if (m[i].ser != sr) continue;
            if (!any) w += (size_t)snprintf(want + w, sizeof want - w, "s%03d:", sr);
            any = 1;
            w += (size_t)snprintf(want + w, sizeof want - w, "%lld=%g,", (long long)m[i].t, (double)m[i].t);
        }
        if (any) w += (size_t)snprintf(want + w, sizeof want - w, " ");
    }
    /* the collecting callback holds 1 KiB: compare in slices of series */
    size_t off = 0;
    for (int d = 0; d < 10; d++) {
        char re[8];
        snprintf(re, sizeof re, "s.*%d", d);
        ex_select(ex, re, INT64_MIN, INT64_MAX, got, sizeof got);
        for (char *p = got; *p;) {          /* each "sNNN:...," group must appear in want */
            char *e = strchr(p, ' ');
            assert_non_null(e);
            *e = 0;
            if (!strstr(want, p)) fail_msg("store has %s, the model not", p);
            off += strlen(p) + 1;
            p = e + 1;
        }
    }
    assert_int_equal(off, strlen(want));    /* and nothing is missing */
    struct gw_exemplars_stats st;
    gw_exemplars_stats(ex, &st);
    assert_int_equal(st.in_storage, CAP);
    gw_exemplars_free(ex);
    free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_db_ingest_semantics, setup, teardown),
        cmocka_unit_test(test_db_exemplar_store),
        cmocka_unit_test(test_db_exemplar_store_model),
        cmocka_unit_test_setup_teardown(test_db_crash_replay_and_flush, setup, teardown),
        cmocka_unit_test_setup_teardown(test_db_matchers_and_labels, setup, teardown),
        cmocka_unit_test_setup_teardown(test_db_retention_drops_old_days, setup, teardown),
        cmocka_unit_test_setup_teardown(test_db_wal_failure_recovers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_db_select_many_series_parallel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_db_select_long_series_blocks_split, setup, teardown),
        cmocka_unit_test_setup_teardown(test_db_flush_shares_timestamps, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
