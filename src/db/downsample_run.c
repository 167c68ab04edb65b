/* downsample_run.c - gw_db_downsample_run: which days get rollups, reading
 * a day's raw samples per series, writing the rollups (one write
 * transaction per node: its series' values, then its record of time
 * profiles, downsample_prof.c) and the marker, and the raw / 5 min schedule.
 * Formats at the top of downsample.c and src/store/rollup.c. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/block.h"
#include "gpuwatch/db.h"
#include "gpuwatch/log.h"
#include "gpuwatch/store.h"
#include "db/db_int.h"
#include "db/downsample_int.h"

/* A day is finished this long after its end (the flusher writes a window
 * minutes after it ends; a day re-done later costs only time). */
#define DS_SETTLE_MS (60 * 60 * 1000LL)

void gw_db_downsample_default(struct gw_db_downsample *ds)
{
    memset(ds, 0, sizeof *ds);
    ds->raw_retention_ms = 14 * GW_DAY_MS;
    ds->res5m_retention_ms = 90 * GW_DAY_MS;
}

struct ser {
    uint64_t sid;
    uint32_t node;
};
struct ser_vec {
    struct ser *v;
    size_t n, cap;
};

static int ser_cb(void *ud, const struct gw_store_series *s)
{
    struct ser_vec *sv = ud;
    if (sv->n == sv->cap) {
        size_t nc = sv->cap ? sv->cap * 2 : 1024;
        struct ser *nv = realloc(sv->v, nc * sizeof *nv);
        if (!nv)
            return GW_ENOMEM;
        sv->v = nv;
        sv->cap = nc;
    }
    sv->v[sv->n].sid = s->sid;
    sv->v[sv->n].node = s->node_id;
    sv->n++;
    return GW_OK;
}

static int ser_cmp(const void *a, const void *b)
{
    const struct ser *x = a, *y = b;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    return (x->sid > y->sid) - (x->sid < y->sid);
}

struct day_vec {
    int64_t *d;
    uint64_t *blobs;
    size_t n, cap;
};

static int day_cb(void *ud, const struct gw_store_partition *p)
{
    struct day_vec *dv = ud;
    if (dv->n == dv->cap) {
        size_t nc = dv->cap ? dv->cap * 2 : 64;
        int64_t *nd = realloc(dv->d, nc * sizeof *nd);
        if (!nd)
            return GW_ENOMEM;
        dv->d = nd;
        uint64_t *nb = realloc(dv->blobs, nc * sizeof *nb);
        if (!nb)
            return GW_ENOMEM;
        dv->blobs = nb;
        dv->cap = nc;
    }
    dv->d[dv->n] = p->day;
    dv->blobs[dv->n] = p->entries;
    dv->n++;
    return GW_OK;
}

/* ---- one series' raw samples of one day ---- */

struct smp {
    int64_t *t;
    double *v;
    size_t n, cap;
    int64_t lo, hi;      /* [lo, hi) */
    int disorder;
};

static int smp_block_cb(void *ud, int64_t block_mint, const uint8_t *b, size_t len)
{
    struct smp *s = ud;
    (void)block_mint;
    uint32_t n;
    int64_t mi, ma;
    if (gw_block_info(b, len, &n, &mi, &ma) != GW_OK)
        return GW_ECORRUPT;
    if (ma < s->lo || mi >= s->hi)
        return GW_OK;
    int rc = gw_block_samples_reserve(&s->t, &s->v, &s->cap, s->n + n, 4096);
    if (rc != GW_OK)
        return rc;
    size_t got;
    rc = gw_block_decode(b, len, s->t + s->n, s->v + s->n, s->cap - s->n, &got);
    if (rc != GW_OK)
        return rc;
    size_t o = s->n;
    for (size_t i = s->n; i < s->n + got; i++) {
        if (s->t[i] < s->lo || s->t[i] >= s->hi)
            continue;
        if (o > 0 && s->t[i] <= s->t[o - 1])
            s->disorder = 1;
        s->t[o] = s->t[i];
        s->v[o] = s->v[i];
        o++;
    }
    s->n = o;
    return GW_OK;
}

struct tv {
    int64_t t;
    double v;
    size_t i;
};

static int tv_cmp(const void *a, const void *b)
{
    const struct tv *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* Blocks that overlap (a chunk stored twice) are put in time order, the
 * first copy of a timestamp kept, as the query path does. */
static int smp_fix_order(struct smp *s)
{
    struct tv *a = malloc(s->n * sizeof *a);
    if (!a)
        return GW_ENOMEM;
    for (size_t i = 0; i < s->n; i++)
        a[i] = (struct tv){s->t[i], s->v[i], i};
    qsort(a, s->n, sizeof *a, tv_cmp);
    size_t o = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (o && a[i].t == s->t[o - 1])
            continue;
        s->t[o] = a[i].t;
        s->v[o] = a[i].v;
        o++;
    }
    s->n = o;
    free(a);
    return GW_OK;
}

/* ---- writing one node's rollups ---- */

struct node_out {
    int64_t day;
    struct gw_buf b5, b1;               /* concatenated values */
    struct gw_ds_profiles ps5, ps1;     /* the node's time profiles */
    struct gw_buf p5, p1;               /* their records (empty: none) */
    size_t *off5, *off1;                /* n + 1 offsets into each */
    uint64_t *sids;
    uint32_t node;
    size_t n, cap;
};

static int out_push(struct node_out *no, uint64_t sid, size_t end5, size_t end1)
{
    if (no->n + 1 >= no->cap) {
        size_t nc = no->cap ? no->cap * 2 : 256;
        size_t *a = realloc(no->off5, (nc + 1) * sizeof *a);
        if (!a)
            return GW_ENOMEM;
        no->off5 = a;
        size_t *b = realloc(no->off1, (nc + 1) * sizeof *b);
        if (!b)
            return GW_ENOMEM;
        no->off1 = b;
        uint64_t *c = realloc(no->sids, nc * sizeof *c);
        if (!c)
            return GW_ENOMEM;
        no->sids = c;
        no->cap = nc;
    }
    if (no->n == 0)
        no->off5[0] = no->off1[0] = 0;
    no->sids[no->n] = sid;
    no->off5[no->n + 1] = end5;
    no->off1[no->n + 1] = end1;
    no->n++;
    return GW_OK;
}

static int write_node_fn(struct gw_store_txn *t, void *ud)
{
    struct node_out *no = ud;
    int rc = GW_OK;
    for (size_t i = 0; i < no->n && rc == GW_OK; i++) {
        rc = gw_store_rollup_put(t, GW_ROLLUP_5M, no->day, no->node, no->sids[i], no->b5.data + no->off5[i],
                                 no->off5[i + 1] - no->off5[i]);
        if (rc == GW_OK)
            rc = gw_store_rollup_put(t, GW_ROLLUP_1H, no->day, no->node, no->sids[i],
                                     no->b1.data + no->off1[i], no->off1[i + 1] - no->off1[i]);
    }
    if (rc == GW_OK && no->p5.len)
        rc = gw_store_rollup_put(t, GW_ROLLUP_5M, no->day, no->node, GW_ROLLUP_NODE_SID, no->p5.data, no->p5.len);
    if (rc == GW_OK && no->p1.len)
        rc = gw_store_rollup_put(t, GW_ROLLUP_1H, no->day, no->node, GW_ROLLUP_NODE_SID, no->p1.data, no->p1.len);
    return rc;
}

struct day_op {
    int64_t day;
    uint64_t blobs;
    int mark;           /* 0: begin (empty) both rollups; 1: mark both done */
};

static int day_op_fn(struct gw_store_txn *t, void *ud)
{
    struct day_op *op = ud;
    int rc = GW_OK;
    for (int r = GW_ROLLUP_5M; r <= GW_ROLLUP_1H && rc == GW_OK; r++)
        rc = op->mark ? gw_store_rollup_mark(t, r, op->day, op->blobs) : gw_store_rollup_begin_day(t, r, op->day);
    return rc;
}

struct agg_scratch {
    struct smp s;
    struct gw_ds_cols c;
};

/* Reads and aggregates the series sers[0..n) (one node) of day into no. */
static int aggregate_node(struct gw_db *db, const struct ser *sers, size_t n, struct node_out *no,
                          struct agg_scratch *sc, struct gw_db_downsample *ds, struct gw_error *err)
{
    struct gw_store_txn *t = NULL;
    int rc = gw_store_read_begin(db->store, &t, err);
    if (rc != GW_OK)
        return rc;
    int64_t lo = no->day * GW_DAY_MS, hi = lo + GW_DAY_MS;
    for (size_t i = 0; i < n && rc == GW_OK; i++) {
        struct smp *s = &sc->s;
        s->n = 0;
        s->lo = lo;
        s->hi = hi;
        s->disorder = 0;
        rc = gw_store_blocks_get(t, sers[i].node, sers[i].sid, lo, hi - 1, smp_block_cb, s);
        if (rc != GW_OK)
            break;
        if (s->n == 0)
            continue;
        if (s->disorder && (rc = smp_fix_order(s)) != GW_OK)
            break;
        ds->samples += s->n;
        ds->series++;
        if ((rc = gw_ds_aggregate(s->t, s->v, s->n, GW_DS_5M_MS, &sc->c)) != GW_OK)
            break;
        ds->buckets_5m += sc->c.nb;
        if ((rc = gw_ds_encode(&sc->c, &no->ps5, &no->b5)) != GW_OK)
            break;
        if ((rc = gw_ds_aggregate(s->t, s->v, s->n, GW_DS_1H_MS, &sc->c)) != GW_OK)
            break;
        ds->buckets_1h += sc->c.nb;
        if ((rc = gw_ds_encode(&sc->c, &no->ps1, &no->b1)) != GW_OK)
            break;
        rc = out_push(no, sers[i].sid, no->b5.len, no->b1.len);
    }
    gw_store_read_end(t);
    if (rc == GW_OK && no->ps5.n)
        rc = gw_ds_profiles_encode(&no->ps5, &no->p5);
    if (rc == GW_OK && no->ps1.n)
        rc = gw_ds_profiles_encode(&no->ps1, &no->p1);
    if (rc != GW_OK)
        return gw_error_set(err, rc, "downsampling day %lld: %s", (long long)no->day, gw_strerror(rc));
    return GW_OK;
}

static int downsample_day(struct gw_db *db, int64_t day, uint64_t blobs, const struct ser_vec *sv,
                          struct gw_db_downsample *ds, struct gw_error *err)
{
    struct day_op op = {.day = day, .blobs = blobs, .mark = 0};
    int rc = gw_store_write(db->store, day_op_fn, &op, err);
    struct agg_scratch sc;
    memset(&sc, 0, sizeof sc);
    struct node_out no;
    memset(&no, 0, sizeof no);
    gw_buf_init(&no.b5, 0);
    gw_buf_init(&no.b1, 0);
    gw_buf_init(&no.p5, 0);
    gw_buf_init(&no.p1, 0);
    no.day = day;
    for (size_t i = 0; rc == GW_OK && i < sv->n;) {
        size_t j = i;
        while (j < sv->n && sv->v[j].node == sv->v[i].node)
            j++;
        no.node = sv->v[i].node;
        no.n = 0;
        gw_buf_reset(&no.b5);
        gw_buf_reset(&no.b1);
        gw_buf_reset(&no.p5);
        gw_buf_reset(&no.p1);
        gw_ds_profiles_reset(&no.ps5);
        gw_ds_profiles_reset(&no.ps1);
        rc = aggregate_node(db, sv->v + i, j - i, &no, &sc, ds, err);
        if (rc == GW_OK && no.n) {
            ds->bytes += no.b5.len + no.b1.len + no.p5.len + no.p1.len;
            rc = gw_store_write(db->store, write_node_fn, &no, err);
        }
        i = j;
    }
    if (rc == GW_OK) {
        op.mark = 1;
        rc = gw_store_write(db->store, day_op_fn, &op, err);
    }
    gw_buf_free(&no.b5);
    gw_buf_free(&no.b1);
    gw_buf_free(&no.p5);
    gw_buf_free(&no.p1);
    gw_ds_profiles_free(&no.ps5);
    gw_ds_profiles_free(&no.ps1);
    free(no.off5);
    free(no.off1);
    free(no.sids);
    free(sc.s.t);
    free(sc.s.v);
    gw_ds_cols_free(&sc.c);
    return rc;
}

/* ---- the run ---- */

/* 1: the rollups of day are marked from exactly blobs raw blobs (the
 * 5 min one only while the day is younger than r5_before: after that it
 * is dropped on purpose). */
static int day_fresh(struct gw_store_txn *t, int64_t day, uint64_t blobs, int64_t r5_before)
{
    uint64_t m5, m1;
    if (gw_store_rollup_marker(t, GW_ROLLUP_1H, day, &m1) != GW_OK || m1 != blobs)
        return 0;
    if (day < r5_before)
        return 1;
    return gw_store_rollup_marker(t, GW_ROLLUP_5M, day, &m5) == GW_OK && m5 == blobs;
}

/* The raw days and every series (sorted by node, sid); *state per day:
 * 0 to do, 1 to redo, 2 fresh. */
static int plan_days(struct gw_db *db, int64_t r5_before, struct day_vec *dv, struct ser_vec *sv, int **state,
                     struct gw_error *err)
{
    struct gw_store_txn *t = NULL;
    int rc = gw_store_read_begin(db->store, &t, err);
    if (rc != GW_OK)
        return rc;
    rc = gw_store_partitions(t, day_cb, dv);
    if (rc == GW_OK)
        rc = gw_store_series_each(t, ser_cb, sv);
    if (rc == GW_OK && !(*state = calloc(dv->n ? dv->n : 1, sizeof **state)))
        rc = GW_ENOMEM;
    for (size_t i = 0; rc == GW_OK && i < dv->n; i++) {
        uint64_t m;
        if (day_fresh(t, dv->d[i], dv->blobs[i], r5_before))
            (*state)[i] = 2;
        else
            (*state)[i] = gw_store_rollup_marker(t, GW_ROLLUP_1H, dv->d[i], &m) == GW_OK ? 1 : 0;
    }
    gw_store_read_end(t);
    if (rc != GW_OK)
        return gw_error_set(err, rc, "downsampling: cannot list days and series: %s", gw_strerror(rc));
    if (sv->n > 1)
        qsort(sv->v, sv->n, sizeof *sv->v, ser_cmp);
    return GW_OK;
}


static int rollup_has(struct gw_store_txn *t, int res, int64_t day)
{
    uint64_t m;
    return gw_store_rollup_marker(t, res, day, &m) == GW_OK;
}

struct dayset {
    int64_t d[4096];
    size_t n;
};

static int dayset_cb(void *ud, int64_t day)
{
    struct dayset *s = ud;
    if (s->n < sizeof s->d / sizeof s->d[0])
        s->d[s->n++] = day;
    return GW_OK;
}

struct sched {
    const struct day_vec *dv;
    int64_t raw_before, r5_before, all_before;  /* drop days < these */
    struct gw_db_downsample *ds;
    struct dayset five;
};

/* Raw days past raw retention whose rollups are fresh; 5 min days past
 * theirs whose 1 h rollup exists; every rollup past the db retention. */
static int sched_fn(struct gw_store_txn *t, void *ud)
{
    struct sched *sc = ud;
    struct gw_db_downsample *ds = sc->ds;
    int rc = GW_OK;
    ds->raw_dropped = ds->res5m_dropped = ds->res1h_dropped = 0;
    for (size_t i = 0; rc == GW_OK && i < sc->dv->n; i++) {
        uint64_t blobs;
        int64_t d = sc->dv->d[i];
        if (d >= sc->raw_before || gw_store_raw_day_blobs(t, d, &blobs) != GW_OK ||
            !day_fresh(t, d, blobs, sc->r5_before))
            continue;
        if ((rc = gw_store_raw_drop_day(t, d)) == GW_OK)
            ds->raw_dropped++;
    }
    sc->five.n = 0;
    if (rc == GW_OK)
        rc = gw_store_rollup_days(t, GW_ROLLUP_5M, dayset_cb, &sc->five);
    for (size_t i = 0; rc == GW_OK && i < sc->five.n; i++) {
        int64_t d = sc->five.d[i];
        if (d >= sc->r5_before || d < sc->all_before || !rollup_has(t, GW_ROLLUP_1H, d))
            continue;
        unsigned k = 0;
        if ((rc = gw_store_rollup_drop(t, GW_ROLLUP_5M, d, d, &k)) == GW_OK)
            ds->res5m_dropped += k;
    }
    unsigned k5 = 0, k1 = 0;
    if (rc == GW_OK)
        rc = gw_store_rollup_drop(t, GW_ROLLUP_5M, INT64_MIN, sc->all_before - 1, &k5);
    if (rc == GW_OK)
        rc = gw_store_rollup_drop(t, GW_ROLLUP_1H, INT64_MIN, sc->all_before - 1, &k1);
    ds->res5m_dropped += k5;
    ds->res1h_dropped += k1;
    return rc;
}

static int64_t day_floor(int64_t t)
{
    return t >= 0 ? t / GW_DAY_MS : -1 - (-t - 1) / GW_DAY_MS;
}

/* Days wholly older than now - keep (0: none). */
static int64_t before_day(int64_t now_ms, int64_t keep_ms)
{
    return keep_ms > 0 ? day_floor(now_ms - keep_ms) : INT64_MIN;
}

/* One run at a time in the process (serve's thread and an admin request):
 * two runs re-doing the same day would empty each other's work. */
static pthread_mutex_t run_mu = PTHREAD_MUTEX_INITIALIZER;

static int run_locked(struct gw_db *db, int64_t now_ms, struct gw_db_downsample *ds, struct gw_error *err);

int gw_db_downsample_run(struct gw_db *db, int64_t now_ms, struct gw_db_downsample *ds, struct gw_error *err)
{
    pthread_mutex_lock(&run_mu);
    int rc = run_locked(db, now_ms, ds, err);
    pthread_mutex_unlock(&run_mu);
    return rc;
}

static int run_locked(struct gw_db *db, int64_t now_ms, struct gw_db_downsample *ds, struct gw_error *err)
{
    if (!db || !ds)
        return gw_error_set(err, GW_EINVAL, "downsample: missing database or options");
    if (db->o.read_only)
        return gw_error_set(err, GW_EINVAL, "downsample: the database is open read-only");
    if (ds->raw_retention_ms < 0 || ds->res5m_retention_ms < 0)
        return gw_error_set(err, GW_EINVAL, "downsample: retentions must not be negative");
    struct gw_db_downsample in = *ds;
    memset(ds, 0, sizeof *ds);
    ds->raw_retention_ms = in.raw_retention_ms;
    ds->res5m_retention_ms = in.res5m_retention_ms;
    struct day_vec dv = {0};
    struct ser_vec sv = {0};
    int *state = NULL;
    int rc = plan_days(db, before_day(now_ms, ds->res5m_retention_ms), &dv, &sv, &state, err);
    for (size_t i = 0; rc == GW_OK && i < dv.n; i++) {
        if (state[i] == 2) {
            ds->days_fresh++;
            continue;
        }
        if ((dv.d[i] + 1) * GW_DAY_MS + DS_SETTLE_MS > now_ms)
            continue;   /* not finished */
        rc = downsample_day(db, dv.d[i], dv.blobs[i], &sv, ds, err);
        if (rc == GW_OK) {
            if (state[i] == 1)
                ds->days_redone++;
            else
                ds->days_done++;
        }
    }
    if (rc == GW_OK) {
        struct sched *sc = calloc(1, sizeof *sc);
        if (!sc) {
            rc = gw_error_set(err, GW_ENOMEM, "downsample: out of memory");
        } else {
            sc->dv = &dv;
            sc->ds = ds;
            sc->raw_before = before_day(now_ms, ds->raw_retention_ms);
            sc->r5_before = before_day(now_ms, ds->res5m_retention_ms);
            sc->all_before = before_day(now_ms, db->o.retention_ms);
            rc = gw_store_write(db->store, sched_fn, sc, err);
            free(sc);
        }
    }
    free(dv.d);
    free(dv.blobs);
    free(sv.v);
    free(state);
    return rc;
}
