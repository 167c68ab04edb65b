/* downsample_read.c - gw_db_select with a view: the selected series' raw
 * samples on days without a usable rollup, and one synthetic sample per
 * stored bucket on days with one (which rollup a day uses: plan_days
 * below; what a view hands out: db.h and docs/downsampling.md).
 *
 * Rollup day d holds exactly the samples of raw partition d, t in
 * [d*D, (d+1)*D), and every synthetic sample carries the time of a real
 * sample of its bucket, so raw and rollup parts never overlap in time and
 * are joined by concatenation. Raw parts come from gw_db_select (head
 * included); a rollup day is read from the store only, so samples of a
 * finished day still in the head (late data not yet flushed) are seen
 * once they are flushed, which also makes the day's rollup stale until it
 * is re-done. */
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/block.h"
#include "gpuwatch/db.h"
#include "gpuwatch/err.h"
#include "gpuwatch/store.h"
#include "db/db_int.h"
#include "db/downsample_int.h"

uint64_t gw_ds_rollup_reads;

struct rday {
    int64_t day;
    int res;
};

struct rplan {
    struct rday *d;
    size_t n, cap;
    int64_t dlo, dhi;
    int64_t cand[2][1024];      /* days with a rollup DBI, per resolution */
    size_t ncand[2];
};

struct cand_ctx {
    struct rplan *p;
    int res;
};

static int cand_add(void *ud, int64_t day)
{
    struct cand_ctx *c = ud;
    struct rplan *p = c->p;
    if (day < p->dlo || day > p->dhi || p->ncand[c->res] >= 1024)
        return GW_OK;
    p->cand[c->res][p->ncand[c->res]++] = day;
    return GW_OK;
}

/* 1 when the day's rollup of res exists and matches the raw partition
 * (or the raw partition is gone). */
static int fresh(struct gw_store_txn *t, int res, int64_t day, int raw, uint64_t blobs)
{
    uint64_t m;
    if (gw_store_rollup_marker(t, res, day, &m) != GW_OK)
        return 0;
    return !raw || m == blobs;
}

/* The rollup a day is read from (-1: raw); docs/downsampling.md. */
static int choose(const struct gw_db_view *v, int raw, int f5, int f1)
{
    if (v->exact_ms == GW_DS_1H_MS && f1)
        return GW_ROLLUP_1H;
    if (v->exact_ms > 0 && f5)
        return GW_ROLLUP_5M;
    if (!raw)       /* raw data gone: the finest rollup there is */
        return f5 ? GW_ROLLUP_5M : f1 ? GW_ROLLUP_1H : -1;
    if (v->accept_ms >= GW_DS_1H_MS && f1)
        return GW_ROLLUP_1H;
    if (v->accept_ms >= GW_DS_5M_MS && f5)
        return GW_ROLLUP_5M;
    return -1;
}

static int plan_push(struct rplan *p, int64_t day, int res)
{
    if (p->n == p->cap) {
        size_t nc = p->cap ? p->cap * 2 : 32;
        struct rday *nd = realloc(p->d, nc * sizeof *nd);
        if (!nd)
            return GW_ENOMEM;
        p->d = nd;
        p->cap = nc;
    }
    p->d[p->n].day = day;
    p->d[p->n].res = res;
    p->n++;
    return GW_OK;
}

static int i64_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The days of [mint, maxt] read from rollups, ascending. */
static int plan_days(struct gw_db *db, const struct gw_db_view *v, int64_t mint, int64_t maxt, struct rplan *p,
                     struct gw_error *err)
{
    p->dlo = mint / GW_DAY_MS - (mint % GW_DAY_MS < 0);
    p->dhi = maxt / GW_DAY_MS - (maxt % GW_DAY_MS < 0);
    struct gw_store_txn *t = NULL;
    int rc = gw_store_read_begin(db->store, &t, err);
    if (rc != GW_OK)
        return rc;
    for (int r = GW_ROLLUP_5M; rc == GW_OK && r <= GW_ROLLUP_1H; r++) {
        struct cand_ctx cc = {p, r};
        rc = gw_store_rollup_days(t, r, cand_add, &cc);
    }
    int64_t all[2048];
    size_t na = 0;
    for (int r = 0; r < 2; r++)
        for (size_t i = 0; i < p->ncand[r]; i++)
            all[na++] = p->cand[r][i];
    qsort(all, na, sizeof *all, i64_cmp);
    for (size_t i = 0; rc == GW_OK && i < na; i++) {
        if (i && all[i] == all[i - 1])
            continue;
        uint64_t blobs = 0;
        int raw = gw_store_raw_day_blobs(t, all[i], &blobs) == GW_OK;
        int f5 = fresh(t, GW_ROLLUP_5M, all[i], raw, blobs), f1 = fresh(t, GW_ROLLUP_1H, all[i], raw, blobs);
        int res = choose(v, raw, f5, f1);
        if (res >= 0)
            rc = plan_push(p, all[i], res);
    }
    gw_store_read_end(t);
    return rc;
}

/* 1 when every planned day is still fresh in t's snapshot: a run that
 * re-does a day empties its rollups and marks them last, so a day fresh
 * in a snapshot has all its values there. */
static int plan_valid(struct gw_store_txn *t, const struct rplan *p)
{
    for (size_t i = 0; i < p->n; i++) {
        uint64_t blobs = 0;
        int raw = gw_store_raw_day_blobs(t, p->d[i].day, &blobs) == GW_OK;
        if (!fresh(t, p->d[i].res, p->d[i].day, raw, blobs))
            return 0;
    }
    return 1;
}

/* ---- the selected series and their raw parts ---- */

struct vser {
    uint64_t sid;
    uint32_t node;
    uint8_t *lab;
    size_t llen;
    int64_t *t;
    double *v;
    size_t n, cap;
};

struct vlist {
    struct vser *s;
    size_t n, cap;
    size_t *by_sid;             /* indexes sorted by sid */
};

static int list_cb(void *ud, uint64_t sid, const uint8_t *labels, size_t len, const int64_t *t, const double *v,
                   size_t n)
{
    struct vlist *l = ud;
    (void)t;
    (void)v;
    (void)n;
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 64;
        struct vser *ns = realloc(l->s, nc * sizeof *ns);
        if (!ns)
            return GW_ENOMEM;
        l->s = ns;
        l->cap = nc;
    }
    struct vser *s = &l->s[l->n];
    memset(s, 0, sizeof *s);
    s->sid = sid;
    if (!(s->lab = malloc(len ? len : 1)))
        return GW_ENOMEM;
    memcpy(s->lab, labels, len);
    s->llen = len;
    l->n++;
    return GW_OK;
}

static int vs_reserve(struct vser *s, size_t extra)
{
    return gw_block_samples_reserve(&s->t, &s->v, &s->cap, s->n + extra, 256);
}

static int sid_cmp(const void *a, const void *b, void *arg)
{
    const struct vlist *l = arg;
    uint64_t x = l->s[*(const size_t *)a].sid, y = l->s[*(const size_t *)b].sid;
    return (x > y) - (x < y);
}

static struct vser *find_sid(struct vlist *l, uint64_t sid)
{
    size_t lo = 0, hi = l->n;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (l->s[l->by_sid[m]].sid < sid)
            lo = m + 1;
        else
            hi = m;
    }
    return lo < l->n && l->s[l->by_sid[lo]].sid == sid ? &l->s[l->by_sid[lo]] : NULL;
}

static int raw_cb(void *ud, uint64_t sid, const uint8_t *labels, size_t len, const int64_t *t, const double *v,
                  size_t n)
{
    (void)labels;
    (void)len;
    struct vser *s = find_sid(ud, sid);
    if (!s || n == 0)
        return GW_OK;
    int rc = vs_reserve(s, n);
    if (rc != GW_OK)
        return rc;
    memcpy(s->t + s->n, t, n * sizeof *t);
    memcpy(s->v + s->n, v, n * sizeof *v);
    s->n += n;
    return GW_OK;
}

static void vlist_free(struct vlist *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->s[i].lab);
        free(l->s[i].t);
        free(l->s[i].v);
    }
    free(l->s);
    free(l->by_sid);
}

/* ---- joining raw parts and rollup days ---- */

static unsigned want_cols(int kind)
{
    switch (kind) {
    case GW_DB_VIEW_LAST: return 1u << GW_DS_LASTALL_V | 1u << GW_DS_LASTALL_DT;
    case GW_DB_VIEW_MAX: return 1u << GW_DS_COUNT | 1u << GW_DS_MAX | 1u << GW_DS_LAST_DT;
    case GW_DB_VIEW_MIN: return 1u << GW_DS_COUNT | 1u << GW_DS_MIN | 1u << GW_DS_LAST_DT;
    default: return 1u << GW_DS_COUNT | 1u << GW_DS_LAST_V | 1u << GW_DS_LAST_DT;
    }
}

/* Appends the synthetic samples of one decoded value within [mint, maxt]. */
static int add_synthetic(struct vser *o, int kind, int64_t mint, int64_t maxt, const struct gw_ds_cols *c)
{
    int rc;
    int vc = kind == GW_DB_VIEW_LAST ? GW_DS_LASTALL_V
             : kind == GW_DB_VIEW_MAX ? GW_DS_MAX
             : kind == GW_DB_VIEW_MIN ? GW_DS_MIN : GW_DS_LAST_V;
    int tc = kind == GW_DB_VIEW_LAST ? GW_DS_LASTALL_DT : GW_DS_LAST_DT;
    if ((rc = vs_reserve(o, c->nb)) != GW_OK)
        return rc;
    for (size_t k = 0; k < c->nb; k++) {
        if (kind != GW_DB_VIEW_LAST && c->c[GW_DS_COUNT][k] == 0)
            continue;
        int64_t ts = c->end[k] + (int64_t)c->c[tc][k];
        if (ts < mint || ts > maxt)
            continue;
        if (o->n && ts <= o->t[o->n - 1])
            return GW_ECORRUPT;
        o->t[o->n] = ts;
        o->v[o->n] = c->c[vc][k];
        o->n++;
    }
    return GW_OK;
}

static int append_raw(struct vser *o, const struct vser *s, size_t *ri, int64_t before)
{
    size_t a = *ri;
    while (*ri < s->n && s->t[*ri] < before)
        (*ri)++;
    if (*ri == a)
        return GW_OK;
    int rc = vs_reserve(o, *ri - a);
    if (rc != GW_OK)
        return rc;
    memcpy(o->t + o->n, s->t + a, (*ri - a) * sizeof *o->t);
    memcpy(o->v + o->n, s->v + a, (*ri - a) * sizeof *o->v);
    o->n += *ri - a;
    return GW_OK;
}

/* Where a series' rollup values are decoded: scratch columns and the
 * node profiles read so far. */
struct emit_ctx {
    struct gw_ds_cols c;
    struct gw_ds_pcache pc;
};

/* Builds series s's samples into o and hands them to cb. */
static int emit_series(struct gw_store_txn *t, const struct gw_db_select *q, const struct rplan *p, struct vser *s,
                       struct vser *o, struct emit_ctx *ec, gw_db_series_cb cb, void *ud, uint64_t *budget,
                       struct gw_error *err)
{
    struct gw_ds_cols *c = &ec->c;
    struct gw_ds_pcache *pc = &ec->pc;
    uint32_t node_id;
    int rc = gw_store_series_node(t, s->sid, &node_id);
    if (rc != GW_OK)
        return rc == GW_ENOTFOUND ? GW_OK : rc;
    o->n = 0;
    size_t ri = 0;
    for (size_t i = 0; i < p->n; i++) {
        if ((rc = append_raw(o, s, &ri, p->d[i].day * GW_DAY_MS)) != GW_OK)
            return rc;
        const char *why = NULL;
        rc = gw_ds_read(t, p->d[i].res, p->d[i].day, node_id, s->sid, want_cols(q->view->kind), pc, c, &why);
        if (rc == GW_ENOTFOUND)
            continue;
        __atomic_fetch_add(&gw_ds_rollup_reads, 1, __ATOMIC_RELAXED);
        if (rc == GW_ECORRUPT && why)
            return gw_error_set(err, rc, "cannot read the %s aggregates of series %llu, day %lld: %s",
                                p->d[i].res == GW_ROLLUP_1H ? "1h" : "5m", (unsigned long long)s->sid,
                                (long long)p->d[i].day, why);
        if (rc != GW_OK || (rc = add_synthetic(o, q->view->kind, q->mint, q->maxt, c)) != GW_OK)
            return rc;
    }
    if ((rc = append_raw(o, s, &ri, INT64_MAX)) != GW_OK)
        return rc;
    if (ri < s->n && (rc = vs_reserve(o, 1)) == GW_OK) {   /* a sample at INT64_MAX */
        o->t[o->n] = s->t[ri];
        o->v[o->n++] = s->v[ri];
    }
    if (rc != GW_OK)
        return rc;
    if (q->max_samples) {
        if (o->n > *budget)
            return GW_ELIMIT;
        *budget -= o->n;
    }
    if (o->n == 0 && q->only_with_data)
        return GW_OK;
    return cb(ud, s->sid, s->lab, s->llen, o->t, o->v, o->n);
}

/* Reads the raw parts: [mint, maxt] without the rollup days. */
static int read_raw_parts(struct gw_db *db, const struct gw_db_select *q, const struct rplan *p, struct vlist *l,
                          struct gw_error *err)
{
    struct gw_db_select r = *q;
    r.view = NULL;
    r.with_samples = 1;
    r.only_with_data = 1;
    r.max_samples = 0;
    int64_t from = q->mint;
    for (size_t i = 0; i <= p->n; i++) {
        int64_t to = i < p->n ? p->d[i].day * GW_DAY_MS - 1 : q->maxt;
        if (to > q->maxt)
            to = q->maxt;
        if (from <= to) {
            r.mint = from;
            r.maxt = to;
            int rc = gw_db_select(db, &r, raw_cb, l, err);
            if (rc != GW_OK)
                return rc;
        }
        if (i < p->n)
            from = (p->d[i].day + 1) * GW_DAY_MS;
        if (from > q->maxt)
            break;
    }
    return GW_OK;
}

int gw_db_select_view(struct gw_db *db, const struct gw_db_select *q, gw_db_series_cb cb, void *ud,
                      struct gw_error *err)
{
    struct gw_db_select r = *q;
    r.view = NULL;
    const struct gw_db_view *v = q->view;
    if (!q->with_samples || !v || v->kind == GW_DB_VIEW_RAW || v->accept_ms == GW_DB_RES_RAW)
        return gw_db_select(db, &r, cb, ud, err);
    struct rplan *p = calloc(1, sizeof *p);
    if (!p)
        return gw_error_set(err, GW_ENOMEM, "out of memory");
    int rc = plan_days(db, v, q->mint, q->maxt, p, err);
    if (rc != GW_OK || p->n == 0) {
        free(p->d);
        free(p);
        return rc != GW_OK ? rc : gw_db_select(db, &r, cb, ud, err);
    }
    struct vlist l = {0};
    r.with_samples = 0;
    r.only_with_data = 0;
    r.max_samples = 0;
    rc = gw_db_select(db, &r, list_cb, &l, err);
    if (rc == GW_OK && !(l.by_sid = malloc((l.n ? l.n : 1) * sizeof *l.by_sid)))
        rc = GW_ENOMEM;
    if (rc == GW_OK) {
        for (size_t i = 0; i < l.n; i++)
            l.by_sid[i] = i;
        qsort_r(l.by_sid, l.n, sizeof *l.by_sid, sid_cmp, &l);
        rc = read_raw_parts(db, q, p, &l, err);
    }
    struct gw_store_txn *t = NULL;
    if (rc == GW_OK)
        rc = gw_store_read_begin(db->store, &t, err);
    if (rc == GW_OK && !plan_valid(t, p)) {
        /* a day is being re-done right now: raw data answers (it exists
         * for every day that can be re-done) */
        gw_store_read_end(t);
        vlist_free(&l);
        free(p->d);
        free(p);
        r = *q;
        r.view = NULL;
        return gw_db_select(db, &r, cb, ud, err);
    }
    struct vser o = {0};
    struct emit_ctx *ec = rc == GW_OK ? calloc(1, sizeof *ec) : NULL;
    if (rc == GW_OK && !ec)
        rc = GW_ENOMEM;
    uint64_t budget = q->max_samples;
    for (size_t i = 0; rc == GW_OK && i < l.n; i++) {
        rc = emit_series(t, q, p, &l.s[i], &o, ec, cb, ud, &budget, err);
        if (rc == 1) {
            rc = GW_OK;
            break;
        }
    }
    gw_store_read_end(t);
    free(o.t);
    free(o.v);
    if (ec) {
        gw_ds_cols_free(&ec->c);
        gw_ds_pcache_free(&ec->pc);
        free(ec);
    }
    vlist_free(&l);
    free(p->d);
    free(p);
    if (rc < 0 && err && err->code == GW_OK)
        gw_error_set(err, rc, "cannot read aggregates: %s", gw_strerror(rc));
    return rc;
}
