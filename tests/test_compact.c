/* test_compact.c - compaction of finished days (store and db): every raw
 * sample comes back bit-exact through gw_db_select (stale markers, NaN
 * payloads, counters with resets, irregular timestamps, late blobs, ranges
 * that start inside a compacted day), dead series leave the index with the
 * label pairs only they used, a second run does nothing, late data after a
 * run is read and merged by the next, retention by size drops the oldest
 * days, and a compaction killed at many points (a forked child, SIGKILL)
 * leaves a store that opens and answers exactly as before. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "db/db_int.h"     /* the db's store, for white-box checks of the index */
#include "gpuwatch/block.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/db.h"
#include "gpuwatch/labels.h"
#include "gpuwatch/promql.h"
#include "gpuwatch/store.h"
#include "db_fixture.h"

#define MIN_MS 60000LL
#define HOUR_MS 3600000LL
#define NODES 3
#define PER_NODE 6
#define NSER (NODES * PER_NODE + 2)   /* + a dead series + a late series */
#define DAYS 4

static char tmpdir[512];

static int setup(void **state)
{
    (void)state;
    return gw_fx_mkdtemp(tmpdir, sizeof tmpdir, "gwcompact");
}

static int teardown(void **state)
{
    (void)state;
    return gw_fx_rmrf(tmpdir);
}

static struct gw_db *open_db(void)
{
    return gw_fx_open_db(tmpdir, 0);
}

/* ---- the data set ---- */

struct series_def {
    char name[32], host[16], gpu[8], extra[16];
    int kind;          /* 0 counter with resets, 1 gauge with NaN payloads and stale markers,
                          2 constant, 3 random bits, 4 decimal */
    uint64_t state;
    double acc;
};

static struct series_def defs[NSER];
static int64_t day0;   /* first day's start (ms) */

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static double from_bits(uint64_t u)
{
    double d;
    memcpy(&d, &u, 8);
    return d;
}

static double value_of(struct series_def *d, int64_t t)
{
    uint64_t r = rnd(&d->state);
    switch (d->kind) {
    case 0:
        if (r % 97 == 0) d->acc = 0;   /* counter reset */
        d->acc += (double)(r % 1000);
        return d->acc;
    case 1:
        if (r % 53 == 0) return from_bits(UINT64_C(0x7ff0000000000002));   /* stale marker */
        if (r % 61 == 0) return from_bits(UINT64_C(0x7ff8000000000000) | (r & 0xfff));   /* NaN payload */
        if (r % 67 == 0) return -0.0;
        return 40.0 + (double)(r % 300) / 10.0;
    case 2:
        return 1.0;
    case 3: {
        uint64_t b = r & ~(UINT64_C(0x7ff) << 52);   /* finite, any mantissa */
        return from_bits(b);
    }
    default:
        return (double)(t / 1000 % 100000) * 0.01;
    }
}

static void defs_init(void)
{
    memset(defs, 0, sizeof defs);
    for (int n = 0; n < NODES; n++) {
        for (int k = 0; k < PER_NODE; k++) {
            struct series_def *d = &defs[n * PER_NODE + k];
            snprintf(d->name, sizeof d->name, "m_kind%d", k % 5);
            snprintf(d->host, sizeof d->host, "node%d", n + 1);
            snprintf(d->gpu, sizeof d->gpu, "%d", k);
            d->kind = k % 5;
            d->state = 0x9e3779b97f4a7c15ull * (uint64_t)(n * PER_NODE + k + 1);
        }
    }
    struct series_def *dead = &defs[NODES * PER_NODE];
    snprintf(dead->name, sizeof dead->name, "m_gone");
    snprintf(dead->host, sizeof dead->host, "node1");
    snprintf(dead->extra, sizeof dead->extra, "only_dead");
    dead->kind = 4;
    dead->state = 77;
    struct series_def *late = &defs[NODES * PER_NODE + 1];
    snprintf(late->name, sizeof late->name, "m_late");
    snprintf(late->host, sizeof late->host, "node2");
    late->kind = 1;
    late->state = 99;
}

/* One request with the samples of series [from, to) at scrape times in
 * [t0, t1): a 5 min grid with up to 2 s of jitter per node and scrape,
 * and an occasional missed scrape per series. */
static void append_range(struct gw_db *db, size_t from, size_t to, int64_t t0, int64_t t1)
{
    size_t ns = to - from, cap = (size_t)((t1 - t0) / (5 * MIN_MS) + 2);
    struct gw_rw_series *ser = calloc(ns, sizeof *ser);
    struct gw_label *lab = calloc(ns * 4, sizeof *lab);
    struct gw_sample *smp = calloc(ns * cap, sizeof *smp);
    assert_non_null(ser);
    assert_non_null(lab);
    assert_non_null(smp);
    struct gw_rw_request r = {.version = 1, .series = ser, .n_series = ns};
    for (size_t i = 0; i < ns; i++) {
        struct series_def *d = &defs[from + i];
        ser[i].labels = lab + i * 4;
        ser[i].samples = smp + i * cap;
        ser[i].labels[ser[i].n_labels++] = (struct gw_label){"__name__", 8, d->name, (uint32_t)strlen(d->name)};
        ser[i].labels[ser[i].n_labels++] = (struct gw_label){"hostname", 8, d->host, (uint32_t)strlen(d->host)};
        if (d->gpu[0]) ser[i].labels[ser[i].n_labels++] = (struct gw_label){"gpu", 3, d->gpu, (uint32_t)strlen(d->gpu)};
        if (d->extra[0])
            ser[i].labels[ser[i].n_labels++] = (struct gw_label){"extra", 5, d->extra, (uint32_t)strlen(d->extra)};
        int node = d->host[4] - '0';
        for (int64_t g = t0 - t0 % (5 * MIN_MS); g < t1; g += 5 * MIN_MS) {
            int64_t jit = (int64_t)((uint64_t)(g / 1000 * 2654435761u + (uint64_t)node * 40503u) % 2000);
            int64_t t = g + jit;
            if (t < t0 || t >= t1) continue;
            if (rnd(&d->state) % 41 == 0) continue;   /* missed scrape */
            ser[i].samples[ser[i].n_samples++] = (struct gw_sample){t, value_of(d, t)};
            r.n_samples++;
        }
    }
    struct gw_append_result res;
    struct gw_error err = {0};
    assert_int_equal(gw_db_append(db, &r, gw_now_ms(), &res, &err), GW_OK);
    if (res.accepted != r.n_samples)
        fprintf(stderr, "accepted %llu of %llu: ooo %llu old %llu new %llu invalid %llu dup %llu\n", (unsigned long long)res.accepted,
                (unsigned long long)r.n_samples, (unsigned long long)res.out_of_order, (unsigned long long)res.too_old,
                (unsigned long long)res.too_new, (unsigned long long)res.invalid_samples, (unsigned long long)res.duplicates), fprintf(stderr, "conflicts %llu hist %llu\n", (unsigned long long)res.conflicts, (unsigned long long)res.histograms);
    assert_int_equal(res.accepted, r.n_samples);
    free(ser);
    free(lab);
    free(smp);
}

/* DAYS days for every live series, flushed at odd times so windows get
 * several blobs (seq > 0); the dead series only on day 0; a few samples
 * today so the days before are finished. */
static void build(struct gw_db *db)
{
    defs_init();
    int64_t now = gw_now_ms();
    day0 = (now / GW_DAY_MS - DAYS) * GW_DAY_MS;
    struct gw_error err = {0};
    append_range(db, NODES * PER_NODE, NODES * PER_NODE + 1, day0, day0 + 20 * HOUR_MS);
    int64_t end = day0 + DAYS * GW_DAY_MS;
    for (int64_t t = day0; t < end; t += 7 * HOUR_MS) {
        int64_t t1 = t + 7 * HOUR_MS < end ? t + 7 * HOUR_MS : end;
        append_range(db, 0, NODES * PER_NODE / 2, t, t1);
        assert_int_equal(gw_db_flush(db, &err), GW_OK);      /* cuts mid-window: late blobs */
        append_range(db, NODES * PER_NODE / 2, NODES * PER_NODE, t, t1);
    }
    int64_t today = day0 + DAYS * GW_DAY_MS;
    if (today + 10 * MIN_MS < now) append_range(db, 0, 1, today, today + 10 * MIN_MS);
    assert_int_equal(gw_db_flush(db, &err), GW_OK);
}

/* ---- snapshots of what the read API answers ---- */

struct snap_series {
    char labels[200];
    size_t n;
    int64_t *t;
    uint64_t *v;
};

struct snap {
    struct snap_series s[64];
    size_t n;
};

static int snap_cb(void *ud, uint64_t sid, const uint8_t *labels, size_t len, const int64_t *t, const double *v,
                   size_t n)
{
    (void)sid;
    struct snap *sn = ud;
    assert_true(sn->n < 64);
    struct snap_series *s = &sn->s[sn->n++];
    struct gw_label ls[16];
    size_t nl = 0;
    assert_int_equal(gw_labels_decode(labels, len, ls, 16, &nl), GW_OK);
    size_t off = 0;
    for (size_t k = 0; k < nl; k++)
        off += (size_t)snprintf(s->labels + off, sizeof s->labels - off, "%.*s=%.*s,", (int)ls[k].name_len,
                                ls[k].name, (int)ls[k].value_len, ls[k].value);
    s->n = n;
    s->t = malloc((n ? n : 1) * sizeof *s->t);
    s->v = malloc((n ? n : 1) * sizeof *s->v);
    assert_non_null(s->t);
    assert_non_null(s->v);
    memcpy(s->t, t, n * sizeof *t);
    memcpy(s->v, v, n * sizeof *v);
    return GW_OK;
}

static void snap_free(struct snap *sn)
{
    for (size_t i = 0; i < sn->n; i++) {
        free(sn->s[i].t);
        free(sn->s[i].v);
    }
    sn->n = 0;
}

static void take(struct gw_db *db, const char *sel, int64_t mint, int64_t maxt, struct snap *sn)
{
    memset(sn, 0, sizeof *sn);
    gw_fx_select(db, sel, mint, maxt, snap_cb, sn);
}

static void same(const struct snap *a, const struct snap *b)
{
    assert_int_equal(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        assert_string_equal(a->s[i].labels, b->s[i].labels);
        assert_int_equal(a->s[i].n, b->s[i].n);
        assert_memory_equal(a->s[i].t, b->s[i].t, a->s[i].n * sizeof(int64_t));
        assert_memory_equal(a->s[i].v, b->s[i].v, a->s[i].n * sizeof(uint64_t));
    }
}

/* The ranges every check reads: everything, and ranges that start inside
 * a day (the day blob's key lies before mint - window). */
#define NRANGES 4
static void ranges(int64_t r[NRANGES][2])
{
    int64_t all[NRANGES][2] = {
        {day0 - GW_DAY_MS, day0 + (DAYS + 1) * GW_DAY_MS},
        {day0 + GW_DAY_MS + 7 * HOUR_MS + 3, day0 + GW_DAY_MS + 9 * HOUR_MS},
        {day0 + 2 * GW_DAY_MS + 13 * HOUR_MS, day0 + 3 * GW_DAY_MS + HOUR_MS},
        {day0 + 3 * GW_DAY_MS + 23 * HOUR_MS + 50 * MIN_MS, day0 + 3 * GW_DAY_MS + 23 * HOUR_MS + 59 * MIN_MS},
    };
    memcpy(r, all, sizeof all);
}

static void take_all(struct gw_db *db, const char *sel, struct snap sn[NRANGES])
{
    int64_t r[NRANGES][2];
    ranges(r);
    for (int i = 0; i < NRANGES; i++) take(db, sel, r[i][0], r[i][1], &sn[i]);
}

static void same_all(struct gw_db *db, const char *sel, struct snap before[NRANGES])
{
    struct snap after[NRANGES];
    take_all(db, sel, after);
    for (int i = 0; i < NRANGES; i++) {
        same(&before[i], &after[i]);
        snap_free(&after[i]);
    }
}

static void free_all(struct snap sn[NRANGES])
{
    for (int i = 0; i < NRANGES; i++) snap_free(&sn[i]);
}

static uint64_t store_series(struct gw_db *db)
{
    struct gw_db_stats st;
    struct gw_error err = {0};
    assert_int_equal(gw_db_stats(db, &st, &err), GW_OK);
    return st.series;
}

static int count_cb(void *ud, const char *v, size_t len)
{
    (void)v;
    (void)len;
    (*(int *)ud)++;
    return GW_OK;
}

static int label_values_in_store(struct gw_db *db, const char *name)
{
    struct gw_store_txn *t;
    struct gw_error err = {0};
    assert_int_equal(gw_store_read_begin(db->store, &t, &err), GW_OK);
    int n = 0;
    assert_int_equal(gw_store_label_values(t, name, strlen(name), count_cb, &n), GW_OK);
    gw_store_read_end(t);
    return n;
}

static void compact(struct gw_db *db, int copy, struct gw_db_compact_result *r)
{
    struct gw_db_compact_opts o = {.copy_file = copy};
    struct gw_error err = {0};
    int rc = gw_db_compact(db, &o, r, &err);
    if (rc) fprintf(stderr, "compact: %s\n", err.msg);
    assert_int_equal(rc, GW_OK);
}

/* ---- tests ---- */

static void test_compact_bit_exact_and_idempotent(void **state)
{
    (void)state;
    struct gw_db *db = open_db();
    build(db);
    struct snap before[NRANGES];
    take_all(db, "{__name__=~\"m_.*\"}", before);
    assert_true(before[0].n >= NODES * PER_NODE + 1);

    struct gw_db_compact_result r;
    compact(db, 1, &r);
    assert_true(r.days >= DAYS - 1);
    assert_true(r.node_days >= (DAYS - 1) * NODES);
    assert_true(r.blobs_after < r.blobs_before);
    assert_true(r.bytes_after < r.bytes_before);
    assert_int_equal(r.node_days_raced, 0);
    assert_int_equal(r.file_copied, 1);
    assert_true(r.file_after <= r.file_before);
    assert_int_equal(r.series_dropped, 0);     /* the dead series still has day 0 */
    same_all(db, "{__name__=~\"m_.*\"}", before);

    /* a second run finds nothing to do */
    struct gw_db_compact_result r2;
    compact(db, 0, &r2);
    assert_int_equal(r2.node_days, 0);
    assert_int_equal(r2.blobs_before, 0);
    same_all(db, "{__name__=~\"m_.*\"}", before);

    /* late data into compacted days (a new series, in order), at the first
     * window of a day and later: read at once, merged by the next run */
    append_range(db, NODES * PER_NODE + 1, NODES * PER_NODE + 2, day0 + GW_DAY_MS, day0 + GW_DAY_MS + 30 * HOUR_MS);
    struct gw_error err = {0};
    assert_int_equal(gw_db_flush(db, &err), GW_OK);
    struct snap late[NRANGES];
    take_all(db, "{__name__=~\"m_.*\"}", late);
    assert_int_equal(late[0].n, before[0].n + 1);
    struct gw_db_compact_result r3;
    compact(db, 0, &r3);
    assert_int_equal(r3.node_days, 2);
    same_all(db, "{__name__=~\"m_.*\"}", late);

    /* reopened: the same answers */
    gw_db_close(db);
    db = open_db();
    same_all(db, "{__name__=~\"m_.*\"}", late);
    free_all(before);
    free_all(late);
    gw_db_close(db);
}

static void test_compact_drops_dead_series(void **state)
{
    (void)state;
    struct gw_db *db = open_db();
    build(db);
    uint64_t n0 = store_series(db);
    assert_int_equal(label_values_in_store(db, "extra"), 1);
    struct gw_error err = {0};
    unsigned dropped = 0;
    /* drop day 0, the only day of m_gone */
    int64_t now = gw_now_ms();
    assert_int_equal(gw_db_retention(db, now - day0 - GW_DAY_MS - 1000, now, &dropped, &err), GW_OK);
    assert_int_equal(dropped, 1);
    /* reopened: the head no longer holds m_gone (a series the head holds
     * is never dropped) */
    gw_db_close(db);
    db = open_db();
    struct snap before[NRANGES];
    take_all(db, "{hostname=~\"node.*\"}", before);
    struct gw_db_compact_result r;
    compact(db, 1, &r);
    assert_int_equal(r.series_dropped, 1);
    assert_true(r.pairs_dropped >= 2);       /* __name__=m_gone, extra=only_dead */
    assert_int_equal(store_series(db), n0 - 1);
    assert_int_equal(label_values_in_store(db, "extra"), 0);
    same_all(db, "{hostname=~\"node.*\"}", before);
    struct snap gone;
    take(db, "m_gone", INT64_MIN / 2, INT64_MAX / 2, &gone);
    assert_int_equal(gone.n, 0);
    /* live series are found by every kind of matcher */
    struct snap one;
    take(db, "m_kind1{hostname=\"node2\",gpu=\"1\"}", INT64_MIN / 2, INT64_MAX / 2, &one);
    assert_int_equal(one.n, 1);
    snap_free(&one);
    take(db, "{gpu!=\"\",hostname!~\"node[13]\"}", INT64_MIN / 2, INT64_MAX / 2, &one);
    assert_int_equal(one.n, PER_NODE);
    snap_free(&one);
    /* a dead series that comes back is created again */
    append_range(db, NODES * PER_NODE, NODES * PER_NODE + 1, now - 2 * HOUR_MS, now - HOUR_MS);
    take(db, "m_gone", INT64_MIN / 2, INT64_MAX / 2, &gone);
    assert_int_equal(gone.n, 1);
    snap_free(&gone);
    free_all(before);
    gw_db_close(db);
}

static void test_compact_retention_size(void **state)
{
    (void)state;
    struct gw_db *db = open_db();
    build(db);
    struct gw_store_stats st;
    struct gw_error err = {0};
    assert_int_equal(gw_store_stats(db->store, &st, &err), GW_OK);
    assert_true(st.live_bytes > 0 && st.live_bytes <= st.used_bytes);
    unsigned dropped = 0;
    assert_int_equal(gw_db_retention_size(db, st.live_bytes * 4, &dropped, &err), GW_OK);
    assert_int_equal(dropped, 0);
    assert_int_equal(gw_db_retention_size(db, 0, &dropped, &err), GW_EINVAL);
    /* a limit below everything: all days but the newest go, oldest first */
    assert_int_equal(gw_db_retention_size(db, 1, &dropped, &err), GW_OK);
    assert_int_equal(dropped, DAYS + (gw_now_ms() % GW_DAY_MS > 10 * MIN_MS ? 0 : -1));
    struct snap sn;
    take(db, "{__name__=~\"m_.*\"}", INT64_MIN / 2, INT64_MAX / 2, &sn);
    for (size_t i = 0; i < sn.n; i++)
        for (size_t k = 0; k < sn.s[i].n; k++) assert_true(sn.s[i].t[k] >= day0 + DAYS * GW_DAY_MS - GW_DAY_MS);
    snap_free(&sn);
    gw_db_close(db);
}

static void test_compact_retention_size_partial(void **state)
{
    (void)state;
    struct gw_db *db = open_db();
    build(db);
    struct gw_store_stats st;
    struct gw_error err = {0};
    assert_int_equal(gw_store_stats(db->store, &st, &err), GW_OK);
    uint64_t limit = st.live_bytes - st.live_bytes / 4;
    unsigned dropped = 0;
    assert_int_equal(gw_db_retention_size(db, limit, &dropped, &err), GW_OK);
    assert_true(dropped >= 1);
    assert_int_equal(gw_store_stats(db->store, &st, &err), GW_OK);
    assert_true(st.live_bytes <= limit);
    /* the oldest day went first */
    struct snap sn;
    take(db, "{__name__=~\"m_.*\"}", INT64_MIN / 2, INT64_MAX / 2, &sn);
    for (size_t i = 0; i < sn.n; i++)
        for (size_t k = 0; k < sn.s[i].n; k++) assert_true(sn.s[i].t[k] >= day0 + GW_DAY_MS);
    snap_free(&sn);
    gw_db_close(db);
}

/* A child compacts (offline, with the file copy) and is killed: at the
 * k-th progress report (raise) or after a delay (parent's SIGKILL). */
static int kill_at;
static int calls;

static void kill_progress(void *ud, const char *phase, uint64_t done, uint64_t total, uint64_t samples)
{
    (void)ud;
    (void)phase;
    (void)done;
    (void)total;
    (void)samples;
    if (++calls == kill_at) raise(SIGKILL);
}

static void crash_once(int at, long delay_us)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct gw_db_opts o;
        gw_db_opts_default(&o);
        o.dir = tmpdir;
        o.initial_map_bytes = 1 << 20;
        struct gw_db *db = NULL;
        struct gw_error err = {0};
        if (gw_db_open(&db, &o, &err) != GW_OK) _exit(3);
        kill_at = at;
        calls = 0;
        struct gw_db_compact_opts co = {.copy_file = 1, .progress = kill_progress};
        struct gw_db_compact_result r;
        gw_db_compact(db, &co, &r, &err);
        _exit(0);   /* no close: a crash after the last step */
    }
    if (delay_us >= 0) {
        usleep((useconds_t)delay_us);
        kill(pid, SIGKILL);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) == 0));
}

static void test_compact_crash_anywhere(void **state)
{
    (void)state;
    struct gw_db *db = open_db();
    build(db);
    /* a series with no data left, so the dead-series phase runs too */
    struct gw_error err = {0};
    unsigned dropped = 0;
    int64_t now = gw_now_ms();
    assert_int_equal(gw_db_retention(db, now - day0 - GW_DAY_MS - 1000, now, &dropped, &err), GW_OK);
    assert_int_equal(dropped, 1);
    struct snap before[NRANGES];
    take_all(db, "{__name__=~\"m_.*\"}", before);
    gw_db_close(db);
    char tmp[700], cmd[1600];
    snprintf(tmp, sizeof tmp, "%s/store/%s", tmpdir, GW_STORE_COMPACT_TMP);
    snprintf(cmd, sizeof cmd, "rm -rf %s.orig && cp -a %s %s.orig", tmpdir, tmpdir, tmpdir);
    assert_int_equal(system(cmd), 0);
    /* progress reports: one per node and day (3 days x 3 nodes), one per
     * batch of dead series, two around the copy; 13 and up: no kill */
    int points[] = {1, 2, 4, 7, 9, 10, 11, 12, 13};
    long delays[] = {5000, 20000, 40000, 60000, 80000, 110000, 150000, 250000};
    size_t np = sizeof points / sizeof points[0], nd = sizeof delays / sizeof delays[0];
    for (size_t i = 0; i < np + nd; i++) {
        snprintf(cmd, sizeof cmd, "rm -rf %s && cp -a %s.orig %s", tmpdir, tmpdir, tmpdir);
        assert_int_equal(system(cmd), 0);
        if (i < np) crash_once(points[i], -1);
        else crash_once(0, delays[i - np]);
        db = open_db();
        struct stat st;
        assert_int_not_equal(stat(tmp, &st), 0);   /* a leftover copy is gone */
        same_all(db, "{__name__=~\"m_.*\"}", before);
        /* and it compacts to the end from there */
        struct gw_db_compact_result rr;
        compact(db, 0, &rr);
        same_all(db, "{__name__=~\"m_.*\"}", before);
        gw_db_close(db);
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s.orig", tmpdir);
    assert_int_equal(system(cmd), 0);
    /* a leftover temp file from a copy that never got to its rename */
    FILE *f = fopen(tmp, "w");
    assert_non_null(f);
    fputs("partial copy", f);
    fclose(f);
    db = open_db();
    struct stat st;
    assert_int_not_equal(stat(tmp, &st), 0);
    struct gw_db_compact_result r;
    compact(db, 1, &r);
    same_all(db, "{__name__=~\"m_.*\"}", before);
    free_all(before);
    gw_db_close(db);
}

/* Store level: GWB1 blobs (format 2) whose blocks of one series overlap in
 * time keep their blocks as they were; the other series are merged into
 * one value part; the day blob is found by a scan that starts mid-day. */
struct blk_got {
    size_t n;
    int64_t t[64];
    uint64_t v[64];
    size_t blocks;
};

static int blk_cb(void *ud, int64_t block_mint, const uint8_t *b, size_t len)
{
    (void)block_mint;
    struct blk_got *g = ud;
    int64_t t[64];
    double v[64];
    size_t n = 0;
    assert_int_equal(gw_block_decode(b, len, t, v, 64, &n), GW_OK);
    for (size_t i = 0; i < n && g->n < 64; i++, g->n++) {
        g->t[g->n] = t[i];
        memcpy(&g->v[g->n], &v[i], 8);
    }
    g->blocks++;
    return GW_OK;
}

struct put_ctx {
    int64_t window;
    struct gw_store_blob_entry e[2];
};

static int put_fn(struct gw_store_txn *t, void *ud)
{
    struct put_ctx *c = ud;
    return gw_store_blob_put(t, 1, c->window, c->e, 2);
}

static void test_compact_store_overlap_and_gwb1(void **state)
{
    (void)state;
    char dir[700];
    snprintf(dir, sizeof dir, "%s/store", tmpdir);
    struct gw_store_opts so = {.dir = dir, .initial_map_bytes = 1 << 20};
    struct gw_store *s = NULL;
    struct gw_error err = {0};
    assert_int_equal(gw_store_open(&s, &so, &err), GW_OK);
    int64_t day = 20000, d0 = day * GW_DAY_MS;
    /* sid 5: window 0 holds t = 10, 20, 30; window 1 (a later blob) holds
     * t = 25 (overlap); sid 7: 40, 50 then 7200040 */
    int64_t t5a[] = {10, 20, 30}, t5b[] = {25}, t7a[] = {40, 50}, t7b[] = {7200040};
    double v5a[] = {1, from_bits(UINT64_C(0x7ff0000000000002)), 3}, v5b[] = {4}, v7a[] = {-0.0, 6}, v7b[] = {7};
    struct gw_buf b[4];
    for (int i = 0; i < 4; i++) gw_buf_init(&b[i], 0);
    assert_int_equal(gw_block_encode(t5a, v5a, 3, &b[0]), GW_OK);
    assert_int_equal(gw_block_encode(t7a, v7a, 2, &b[1]), GW_OK);
    assert_int_equal(gw_block_encode(t5b, v5b, 1, &b[2]), GW_OK);
    assert_int_equal(gw_block_encode(t7b, v7b, 1, &b[3]), GW_OK);
    struct put_ctx p1 = {.window = d0, .e = {{5, b[0].data, b[0].len, 0}, {7, b[1].data, b[1].len, 0}}};
    struct put_ctx p2 = {.window = d0 + 2 * HOUR_MS, .e = {{5, b[2].data, b[2].len, 0}, {7, b[3].data, b[3].len, 0}}};
    assert_int_equal(gw_store_write(s, put_fn, &p1, &err), GW_OK);
    assert_int_equal(gw_store_write(s, put_fn, &p2, &err), GW_OK);
    struct gw_store_compact_stats st;
    memset(&st, 0, sizeof st);
    assert_int_equal(gw_store_compact_day(s, day, 1, &st, NULL, NULL, &err), GW_OK);
    assert_int_equal(st.node_days, 1);
    assert_int_equal(st.blobs_before, 2);
    assert_int_equal(st.blobs_after, 1);
    assert_int_equal(st.samples, 7);
    struct gw_store_txn *t;
    assert_int_equal(gw_store_read_begin(s, &t, &err), GW_OK);
    assert_int_equal(gw_store_day_needs_compact(t, day), 0);
    struct blk_got g5 = {0}, g7 = {0};
    assert_int_equal(gw_store_blocks_get(t, 1, 5, d0 - 2 * HOUR_MS, d0 + GW_DAY_MS, blk_cb, &g5), GW_OK);
    assert_int_equal(g5.blocks, 2);   /* kept as they were */
    int64_t want5[] = {10, 20, 30, 25};
    assert_memory_equal(g5.t, want5, sizeof want5);
    assert_true(g5.v[1] == UINT64_C(0x7ff0000000000002));
    /* mid-day start: the day blob lies before mint_lo but is found */
    assert_int_equal(gw_store_blocks_get(t, 1, 7, d0 + 5 * HOUR_MS, d0 + GW_DAY_MS, blk_cb, &g7), GW_OK);
    assert_int_equal(g7.blocks, 1);   /* one value part over the day */
    int64_t want7[] = {40, 50, 7200040};
    assert_memory_equal(g7.t, want7, sizeof want7);
    assert_true(g7.v[0] == UINT64_C(0x8000000000000000));
    assert_int_equal(gw_store_blocks_any(t, 1, 7, d0 + 20 * HOUR_MS, d0 + 21 * HOUR_MS), 1);
    assert_int_equal(gw_store_blocks_any(t, 1, 9, d0 + 20 * HOUR_MS, d0 + 21 * HOUR_MS), 0);
    gw_store_read_end(t);
    /* idempotent */
    memset(&st, 0, sizeof st);
    assert_int_equal(gw_store_compact_day(s, day, 2, &st, NULL, NULL, &err), GW_OK);
    assert_int_equal(st.node_days, 0);
    for (int i = 0; i < 4; i++) gw_buf_free(&b[i]);
    gw_store_close(s);
}

static void test_compact_size_parse(void **state)
{
    (void)state;
    uint64_t v = 0;
    assert_int_equal(gw_parse_size_bytes("500GB", &v), GW_OK);
    assert_true(v == UINT64_C(500000000000));
    assert_int_equal(gw_parse_size_bytes("20GiB", &v), GW_OK);
    assert_true(v == UINT64_C(20) << 30);
    assert_int_equal(gw_parse_size_bytes("1.5tb", &v), GW_OK);
    assert_true(v == UINT64_C(1500000000000));
    assert_int_equal(gw_parse_size_bytes("4096", &v), GW_OK);
    assert_true(v == 4096);
    assert_int_equal(gw_parse_size_bytes("18446744073709551615", &v), GW_OK);
    assert_true(v == UINT64_MAX);
    const char *bad[] = {"", "GB", "12XB", "-1GB", "1e3", "1.5.5GB", "20 GiB", "99999999999PB", "1GBs"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) assert_int_equal(gw_parse_size_bytes(bad[i], &v), GW_EPARSE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_compact_bit_exact_and_idempotent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compact_drops_dead_series, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compact_retention_size, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compact_retention_size_partial, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compact_crash_anywhere, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compact_store_overlap_and_gwb1, setup, teardown),
        cmocka_unit_test(test_compact_size_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
