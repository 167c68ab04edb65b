/* verify.c - gw_db_verify: a read-only check of a whole data dir (the
 * store through gw_store_verify, the WAL through gw_wal_check, and the
 * payload of every WAL record, layouts at the top of record.c).
 *
 * A SAMPLES record may name a series created after the store snapshot was
 * taken (its SERIES record is then earlier in the WAL) or one whose SERIES
 * record went with a segment a checkpoint deleted (it is then in the store).
 * Sids found in neither are looked up once more in a fresh read transaction
 * at the end, so a series created while the check ran is not reported. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "db_int.h"
#include "db/downsample_int.h"
#include "gpuwatch/labels.h"
#include "gpuwatch/postings.h"

#define VERIFY_MAX_UNKNOWN 1000   /* unknown sids remembered for the final look-up */

struct sidset {
    uint64_t *v;                  /* open addressing, 0 = free (sids start at 1) */
    size_t cap, n;
};

static int sidset_add(struct sidset *s, uint64_t sid)
{
    if (sid == 0)
        return GW_OK;
    if (2 * (s->n + 1) > s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 1024;
        uint64_t *nv = calloc(nc, sizeof *nv);
        if (!nv)
            return GW_ENOMEM;
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->v[i])
                continue;
            size_t j = (size_t)(s->v[i] * UINT64_C(0x9e3779b97f4a7c15) >> 20) & (nc - 1);
            while (nv[j])
                j = (j + 1) & (nc - 1);
            nv[j] = s->v[i];
        }
        free(s->v);
        s->v = nv;
        s->cap = nc;
    }
    size_t j = (size_t)(sid * UINT64_C(0x9e3779b97f4a7c15) >> 20) & (s->cap - 1);
    while (s->v[j]) {
        if (s->v[j] == sid)
            return GW_OK;
        j = (j + 1) & (s->cap - 1);
    }
    s->v[j] = sid;
    s->n++;
    return GW_OK;
}

static int sidset_has(const struct sidset *s, uint64_t sid)
{
    if (!s->cap)
        return 0;
    size_t j = (size_t)(sid * UINT64_C(0x9e3779b97f4a7c15) >> 20) & (s->cap - 1);
    while (s->v[j]) {
        if (s->v[j] == sid)
            return 1;
        j = (j + 1) & (s->cap - 1);
    }
    return 0;
}

struct unknown {
    uint64_t sid;
    uint32_t seg;
    uint64_t off;
};

struct vdb {
    gw_db_problem_cb cb;
    gw_store_verify_progress_cb progress;
    void *ud;
    struct gw_db_verify_stats *st;
    struct gw_postings store_sids;   /* sorted */
    struct sidset wal_sids;
    struct unknown *unk;
    size_t nunk;
    uint64_t pos;                    /* record being checked */
    int bad_record;                  /* the current record was reported */
};

static struct gw_db_problem problem_none(const char *area, const char *kind)
{
    struct gw_db_problem p;
    memset(&p, 0, sizeof p);
    p.area = area;
    p.kind = kind;
    p.day = INT64_MIN;
    p.window_start = INT64_MIN;
    p.seq = -1;
    p.wal_segment = -1;
    return p;
}

static void emit(struct vdb *c, struct gw_db_problem *p)
{
    c->st->problems++;
    if (c->cb)
        c->cb(c->ud, p);
}

static void on_store_problem(void *ud, const struct gw_store_problem *sp)
{
    struct vdb *c = ud;
    struct gw_db_problem p = problem_none("store", sp->kind);
    p.day = sp->day;
    p.node_id = sp->node_id;
    p.window_start = sp->window_start;
    p.seq = sp->seq;
    p.sid = sp->sid;
    p.pair_id = sp->pair_id;
    memcpy(p.what, sp->what, sizeof p.what);
    emit(c, &p);
}

static void on_rollup_problem(void *ud, int res, int64_t day, uint32_t node_id, uint64_t sid, const char *what)
{
    struct vdb *c = ud;
    struct gw_db_problem p = problem_none("store", "rollup");
    p.day = day;
    p.node_id = node_id;
    p.sid = sid;
    (void)res;
    snprintf(p.what, sizeof p.what, "%s", what);
    emit(c, &p);
}

/* Every rollup value (downsample.c) in one read transaction. */
static int verify_rollups(struct vdb *c, struct gw_store *s, struct gw_error *err)
{
    struct gw_store_txn *t;
    int rc = gw_store_read_begin(s, &t, err);
    if (rc != GW_OK)
        return rc;
    if (c->progress)
        c->progress(c->ud, "rollups", 0, 0);
    rc = gw_ds_verify(t, on_rollup_problem, c, NULL);
    gw_store_read_end(t);
    if (rc != GW_OK)
        gw_error_set(err, rc, "cannot verify the rollups: %s", gw_strerror(rc));
    return rc;
}

static void on_progress(void *ud, const char *phase, uint64_t done, uint64_t total)
{
    struct vdb *c = ud;
    if (c->progress)
        c->progress(c->ud, phase, done, total);
}

static void on_wal_problem(void *ud, uint32_t seg, uint64_t off, const char *what)
{
    struct vdb *c = ud;
    struct gw_db_problem p = problem_none("wal", "segment");
    p.wal_segment = seg;
    p.wal_offset = off;
    snprintf(p.what, sizeof p.what, "%s", what);
    emit(c, &p);
}

static void record_problem(struct vdb *c, const char *kind, uint64_t sid, const char *what)
{
    struct gw_db_problem p = problem_none("wal", kind);
    p.wal_segment = (int64_t)(c->pos >> 32);
    p.wal_offset = c->pos & UINT32_MAX;
    p.sid = sid;
    snprintf(p.what, sizeof p.what, "%s", what);
    emit(c, &p);
    c->bad_record = 1;
}

static int on_series(void *ud, uint64_t sid, const uint8_t *labels, size_t len)
{
    struct vdb *c = ud;
    struct gw_label ls[GW_LABELS_MAX];
    size_t n = 0;
    char msg[256];
    if (sid == 0 || sid > UINT32_MAX) {
        snprintf(msg, sizeof msg, "SERIES record names series id %llu, out of range", (unsigned long long)sid);
        record_problem(c, "series", sid, msg);
        return GW_OK;
    }
    if (gw_labels_decode(labels, len, ls, GW_LABELS_MAX, &n) != GW_OK || n == 0) {
        snprintf(msg, sizeof msg, "SERIES record: labels of series %llu are malformed", (unsigned long long)sid);
        record_problem(c, "series", sid, msg);
        return GW_OK;
    }
    struct gw_error le = {0};
    if (gw_labels_normalize(ls, n, &le) != GW_OK) {
        snprintf(msg, sizeof msg, "SERIES record: labels of series %llu are invalid: %.180s",
                 (unsigned long long)sid, le.msg);
        record_problem(c, "series", sid, msg);
        return GW_OK;
    }
    c->st->wal_series++;
    return sidset_add(&c->wal_sids, sid);
}

static int sid_in_store(const struct gw_postings *p, uint64_t sid)
{
    size_t lo = 0, hi = p->n;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (p->ids[m] < sid)
            lo = m + 1;
        else
            hi = m;
    }
    return lo < p->n && p->ids[lo] == sid;
}

static int on_sample(void *ud, uint64_t sid, int64_t t, double v)
{
    (void)t;
    (void)v;
    struct vdb *c = ud;
    c->st->wal_samples++;
    if (sidset_has(&c->wal_sids, sid) || sid_in_store(&c->store_sids, sid))
        return GW_OK;
    for (size_t i = 0; i < c->nunk; i++)
        if (c->unk[i].sid == sid)
            return GW_OK;
    if (c->nunk < VERIFY_MAX_UNKNOWN)
        c->unk[c->nunk++] = (struct unknown){.sid = sid, .seg = (uint32_t)(c->pos >> 32), .off = c->pos & UINT32_MAX};
    return GW_OK;
}

static int on_record(void *ud, uint8_t type, const uint8_t *payload, size_t len, uint64_t pos)
{
    struct vdb *c = ud;
    c->pos = pos;
    c->bad_record = 0;
    int rc;
    if (type == GW_REC_SERIES) {
        rc = gw_rec_series_each(payload, len, on_series, c);
        if (rc == GW_ECORRUPT)
            record_problem(c, "series", 0, "SERIES record payload is malformed (bad varint or length)");
    } else if (type == GW_REC_SAMPLES) {
        rc = gw_rec_samples_each(payload, len, on_sample, c);
        if (rc == GW_ECORRUPT)
            record_problem(c, "samples", 0, "SAMPLES record payload is malformed (bad varint or short value)");
    } else {
        char msg[64];
        snprintf(msg, sizeof msg, "record of unknown type %u", type);
        record_problem(c, "record", 0, msg);
        return GW_OK;
    }
    return rc == GW_ECORRUPT ? GW_OK : rc;
}

/* The sids no SERIES record and no store snapshot knew: one more look in
 * the store as it is now. */
static int recheck_unknown(struct vdb *c, struct gw_store *s, struct gw_error *err)
{
    if (!c->nunk)
        return GW_OK;
    struct gw_store_txn *t;
    int rc = gw_store_read_begin(s, &t, err);
    if (rc != GW_OK)
        return rc;
    for (size_t i = 0; i < c->nunk; i++) {
        struct gw_store_series se;
        if (gw_store_series_get(t, c->unk[i].sid, &se) == GW_OK)
            continue;
        struct gw_db_problem p = problem_none("wal", "samples");
        p.wal_segment = c->unk[i].seg;
        p.wal_offset = c->unk[i].off;
        p.sid = c->unk[i].sid;
        snprintf(p.what, sizeof p.what, "SAMPLES record names series %llu, which neither the store nor an "
                 "earlier SERIES record knows", (unsigned long long)p.sid);
        emit(c, &p);
    }
    gw_store_read_end(t);
    return GW_OK;
}

static char *join2(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *p = malloc(la + lb + 2);
    if (p) {
        memcpy(p, a, la);
        p[la] = '/';
        memcpy(p + la + 1, b, lb + 1);
    }
    return p;
}

int gw_db_verify(const char *dir, gw_db_problem_cb cb, gw_store_verify_progress_cb progress, void *ud,
                 struct gw_db_verify_stats *st, struct gw_error *err)
{
    struct gw_db_verify_stats local;
    if (!st)
        st = &local;
    memset(st, 0, sizeof *st);
    if (!dir || !dir[0])
        return gw_error_set(err, GW_EINVAL, "no data dir given");
    char *store_dir = join2(dir, "store"), *wal_dir = join2(dir, "wal");
    struct vdb c = {.cb = cb, .progress = progress, .ud = ud, .st = st};
    struct gw_store *s = NULL;
    struct stat sb;
    int rc = GW_OK;
    c.unk = calloc(VERIFY_MAX_UNKNOWN, sizeof *c.unk);
    gw_postings_init(&c.store_sids);
    if (!store_dir || !wal_dir || !c.unk) {
        rc = gw_error_set(err, GW_ENOMEM, "out of memory");
        goto out;
    }
    if (stat(store_dir, &sb) != 0) {
        rc = gw_error_set(err, GW_ENOTFOUND, "no gpuwatch store in %s", dir);
        goto out;
    }
    struct gw_store_opts so = {.dir = store_dir, .read_only = 1};
    if ((rc = gw_store_open(&s, &so, err)) != GW_OK)
        goto out;
    struct gw_store_txn *t;
    if ((rc = gw_store_read_begin(s, &t, err)) != GW_OK)
        goto out;
    rc = gw_store_postings_all(t, &c.store_sids);
    gw_store_read_end(t);
    if (rc != GW_OK) {
        gw_error_set(err, rc, "cannot list the series of %s", store_dir);
        goto out;
    }
    if ((rc = gw_store_verify(s, on_store_problem, on_progress, &c, &st->store, err)) != GW_OK)
        goto out;
    if ((rc = verify_rollups(&c, s, err)) != GW_OK)
        goto out;
    if (progress)
        progress(ud, "wal", 0, 0);
    if ((rc = gw_wal_check(wal_dir, on_record, on_wal_problem, &c, &st->wal, err)) != GW_OK)
        goto out;
    rc = recheck_unknown(&c, s, err);
out:
    gw_store_close(s);
    gw_postings_free(&c.store_sids);
    free(c.wal_sids.v);
    free(c.unk);
    free(store_dir);
    free(wal_dir);
    return rc;
}
