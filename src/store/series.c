/* series.c - series records of the LMDB series store: creating a series
 * (label pairs, postings, the labels hash, its node), finding it by hash,
 * rebuilding its canonical labels from pair ids, its newest persisted
 * timestamp, deleting it; and node names <-> node ids. Key and value
 * layouts: top of keys.c. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lmdb.h>

#include "gpuwatch/arena.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/store.h"
#include "store/store_int.h"

/* The transaction's scratch arena (rebuilt labels); freed when it ends. */
static struct gw_arena *scratch(struct gw_store_txn *t)
{
    if (!t->arena_on) {
        gw_arena_init(&t->arena, 16384, 0);
        t->arena_on = 1;
    }
    return &t->arena;
}

/* Checks canonical labels are well formed, minimally encoded (so they are
 * rebuilt byte for byte) and indexable; *count gets the number of labels. */
static int labels_check(const uint8_t *labels, size_t len, size_t *count)
{
    struct gw_store_lab_iter it;
    gw_store_lab_iter_init(&it, labels, len);
    const char *n, *v;
    size_t nl, vl, c = 0, total = 0;
    int rc;
    uint8_t key[GW_KEY_MAX];
    size_t kl;
    while ((rc = gw_store_lab_iter_next(&it, &n, &nl, &v, &vl)) == 1) {
        int krc = gw_store_pair_key(key, &kl, n, nl, v, vl);
        if (krc != GW_OK)
            return krc;
        total += gw_uvarint_len(nl) + nl + gw_uvarint_len(vl) + vl;
        c++;
    }
    if (rc != 0 || c == 0 || total != len)
        return GW_EINVAL;
    *count = c;
    return GW_OK;
}

/* The full name \0 value of a pair id. */
int gw_store_pair_text(struct gw_store_txn *t, MDB_dbi dids, uint32_t id, MDB_val *out)
{
    uint8_t ib[4];
    gw_put_be32(ib, id);
    MDB_val k = {4, ib};
    int mrc = mdb_get(t->txn, dids, &k, out);
    if (mrc == MDB_NOTFOUND)
        return GW_ECORRUPT;
    if (mrc != MDB_SUCCESS)
        return gw_store_terr(t, mrc, "pair id get");
    if (out->mv_size < 3 || !memchr(out->mv_data, 0, out->mv_size))
        return GW_ECORRUPT;
    return GW_OK;
}

static int pair_text_eq(const MDB_val *pt, const char *n, size_t nl, const char *v, size_t vl)
{
    const uint8_t *p = pt->mv_data;
    return pt->mv_size == nl + 1 + vl && memcmp(p, n, nl) == 0 && p[nl] == 0 && memcmp(p + nl + 1, v, vl) == 0;
}

/* Id of the pair whose key is key (built by gw_store_pair_key for n=v).
 * GW_OK, GW_ENOTFOUND, GW_ELIMIT when a long key's stored value differs
 * (two values sharing prefix and hash), or an error. */
int gw_store_pair_lookup(struct gw_store_txn *t, MDB_dbi dpairs, MDB_dbi dids, const uint8_t *key, size_t klen,
                       const char *n, size_t nl, const char *v, size_t vl, uint32_t *id)
{
    MDB_val k = {klen, (void *)key}, d;
    int mrc = mdb_get(t->txn, dpairs, &k, &d);
    if (mrc == MDB_NOTFOUND)
        return GW_ENOTFOUND;
    if (mrc != MDB_SUCCESS)
        return gw_store_terr(t, mrc, "pair get");
    if (d.mv_size != 4)
        return GW_ECORRUPT;
    *id = gw_get_be32(d.mv_data);
    if (klen != nl + 1 + vl) {
        MDB_val pt;
        int rc = gw_store_pair_text(t, dids, *id, &pt);
        if (rc != GW_OK)
            return rc;
        if (!pair_text_eq(&pt, n, nl, v, vl))
            return GW_ELIMIT;
    }
    return GW_OK;
}

/* Rebuilds the canonical labels of a record into memory from a. */
static int rebuild_labels(struct gw_store_txn *t, MDB_dbi dids, const struct gw_store_rec *r, struct gw_arena *a,
                          const uint8_t **out, size_t *out_len)
{
    MDB_val local[64];
    MDB_val *tx = local;
    if (r->n > 64) {
        tx = gw_arena_calloc(a, (size_t)r->n, sizeof *tx);
        if (!tx)
            return GW_ENOMEM;
    }
    size_t off = 0, total = 0;
    for (uint64_t i = 0; i < r->n; i++) {
        uint32_t id;
        int rc = gw_store_rec_next_id(r, &off, &id);
        if (rc == GW_OK)
            rc = gw_store_pair_text(t, dids, id, &tx[i]);
        if (rc != GW_OK)
            return rc;
        size_t nl = (size_t)((const uint8_t *)memchr(tx[i].mv_data, 0, tx[i].mv_size) - (const uint8_t *)tx[i].mv_data);
        size_t vl = tx[i].mv_size - nl - 1;
        if (nl == 0 || vl == 0)
            return GW_ECORRUPT;
        total += gw_uvarint_len(nl) + nl + gw_uvarint_len(vl) + vl;
    }
    if (off != r->ids_len)
        return GW_ECORRUPT;
    uint8_t *b = gw_arena_alloc(a, total);
    if (!b)
        return GW_ENOMEM;
    size_t o = 0;
    for (uint64_t i = 0; i < r->n; i++) {
        const uint8_t *p = tx[i].mv_data;
        size_t nl = (size_t)((const uint8_t *)memchr(p, 0, tx[i].mv_size) - p);
        size_t vl = tx[i].mv_size - nl - 1;
        o += gw_uvarint_put(b + o, nl);
        memcpy(b + o, p, nl);
        o += nl;
        o += gw_uvarint_put(b + o, vl);
        memcpy(b + o, p + nl + 1, vl);
        o += vl;
    }
    *out = b;
    *out_len = total;
    return GW_OK;
}

/* Decodes a series record, labels rebuilt into a. */
static int series_decode(struct gw_store_txn *t, uint64_t sid, const MDB_val *d, struct gw_arena *a,
                         struct gw_store_series *out)
{
    MDB_dbi dids;
    int rc = gw_store_fixed_dbi(t, DB_PAIR_IDS, &dids);
    if (rc != GW_OK)
        return rc == GW_ENOTFOUND ? GW_ECORRUPT : rc;
    struct gw_store_rec r;
    if ((rc = gw_store_rec_parse(d->mv_data, d->mv_size, &r)) != GW_OK)
        return rc;
    out->sid = sid;
    out->node_id = r.node_id;
    out->gpu = r.gpu;
    return rebuild_labels(t, dids, &r, a, &out->labels, &out->labels_len);
}

int gw_store_series_put(struct gw_store_txn *t, uint64_t sid, uint64_t hash, uint32_t node_id,
                        uint16_t gpu, const uint8_t *labels, size_t labels_len)
{
    static const int which[] = {DB_SERIES, DB_SHASH, DB_POSTINGS, DB_PAIRS, DB_PAIR_IDS};
    MDB_dbi db[5];
    int rc = gw_store_fixed_dbis(t, 1, which, 5, db);
    if (rc != GW_OK)
        return rc;
    MDB_dbi ds = db[0], dh = db[1], dp = db[2], dpr = db[3], dpi = db[4];
    if (sid > UINT32_MAX)
        return GW_ELIMIT;
    if (!labels || labels_len == 0)
        return GW_EINVAL;
    size_t count;
    if ((rc = labels_check(labels, labels_len, &count)) != GW_OK)
        return rc;

    uint8_t kb[8];
    gw_put_be64(kb, sid);
    MDB_val k = {8, kb}, d;
    int mrc = mdb_get(t->txn, ds, &k, &d);
    if (mrc == MDB_SUCCESS) {
        struct gw_store_series se;
        if ((rc = series_decode(t, sid, &d, scratch(t), &se)) != GW_OK)
            return rc;
        if (se.node_id == node_id && se.gpu == gpu && se.labels_len == labels_len &&
            memcmp(se.labels, labels, labels_len) == 0)
            return GW_OK;
        return GW_EINVAL;
    }
    if (mrc != MDB_NOTFOUND)
        return gw_store_terr(t, mrc, "series get");

    /* count <= labels_len / 4, so this cannot overflow */
    size_t cap = GW_SERIES_FIXED + 10 + 5 * count;
    uint8_t local[GW_SERIES_FIXED + 10 + 5 * 64];
    uint8_t *rec = cap <= sizeof local ? local : gw_arena_alloc(scratch(t), cap);
    if (!rec)
        return GW_ENOMEM;
    gw_put_be64(rec, gw_store_bias(INT64_MIN));
    gw_put_be32(rec + 8, node_id);
    gw_put_be16(rec + 12, gpu);
    size_t o = GW_SERIES_FIXED + gw_uvarint_put(rec + GW_SERIES_FIXED, count);

    uint64_t next = 0;
    int loaded = 0;
    struct gw_store_lab_iter it;
    gw_store_lab_iter_init(&it, labels, labels_len);
    const char *n, *v;
    size_t nl, vl;
    uint8_t key[GW_KEY_MAX];
    size_t kl;
    while (gw_store_lab_iter_next(&it, &n, &nl, &v, &vl) == 1) {
        if (gw_store_pair_key(key, &kl, n, nl, v, vl) != GW_OK)
            return GW_EINVAL;
        uint32_t id;
        rc = gw_store_pair_lookup(t, dpr, dpi, key, kl, n, nl, v, vl, &id);
        if (rc == GW_ENOTFOUND) {
            if (!loaded) {
                rc = gw_store_meta_get_u64(t, "next_pair_id", &next);
                if (rc == GW_ENOTFOUND)
                    next = 1;
                else if (rc != GW_OK)
                    return rc;
                loaded = 1;
            }
            if (next == 0 || next > UINT32_MAX)
                return GW_ELIMIT;
            id = (uint32_t)next++;
            uint8_t ib[4];
            gw_put_be32(ib, id);
            MDB_val pk = {kl, key}, iv = {4, ib};
            mrc = mdb_put(t->txn, dpr, &pk, &iv, MDB_NOOVERWRITE);
            if (mrc != MDB_SUCCESS)
                return gw_store_terr(t, mrc, "pair put");
            MDB_val tv = {nl + 1 + vl, NULL};
            mrc = mdb_put(t->txn, dpi, &iv, &tv, MDB_APPEND | MDB_RESERVE);
            if (mrc == MDB_KEYEXIST)
                return GW_ECORRUPT; /* next_pair_id behind the stored ids */
            if (mrc != MDB_SUCCESS)
                return gw_store_terr(t, mrc, "pair id put");
            uint8_t *w = tv.mv_data;
            memcpy(w, n, nl);
            w[nl] = 0;
            memcpy(w + nl + 1, v, vl);
        } else if (rc != GW_OK) {
            return rc;
        }
        o += gw_uvarint_put(rec + o, id);
    }
    if (loaded && (rc = gw_store_meta_put_u64(t, "next_pair_id", next)) != GW_OK)
        return rc;

    /* sids come from a counter: usually the largest key so far */
    MDB_val rv = {o, rec};
    mrc = mdb_put(t->txn, ds, &k, &rv, MDB_APPEND);
    if (mrc == MDB_KEYEXIST) {
        rv.mv_data = rec;
        rv.mv_size = o;
        mrc = mdb_put(t->txn, ds, &k, &rv, MDB_NOOVERWRITE);
    }
    if (mrc != MDB_SUCCESS)
        return gw_store_terr(t, mrc, "series put");

    uint8_t sb[4], hb[8];
    gw_put_be32(sb, (uint32_t)sid);
    gw_put_be64(hb, hash);
    MDB_val hk = {8, hb}, sv = {4, sb};
    mrc = mdb_put(t->txn, dh, &hk, &sv, MDB_NODUPDATA);
    if (mrc != MDB_SUCCESS && mrc != MDB_KEYEXIST)
        return gw_store_terr(t, mrc, "series hash put");

    struct gw_store_rec r;
    if (gw_store_rec_parse(rec, o, &r) != GW_OK)
        return GW_ECORRUPT;
    size_t off = 0;
    for (uint64_t i = 0; i < r.n; i++) {
        uint32_t id;
        if (gw_store_rec_next_id(&r, &off, &id) != GW_OK)
            return GW_ECORRUPT;
        uint8_t ib[4];
        gw_put_be32(ib, id);
        MDB_val pk = {4, ib}, pv = {4, sb};
        mrc = mdb_put(t->txn, dp, &pk, &pv, MDB_APPENDDUP);
        if (mrc == MDB_KEYEXIST) {
            pv.mv_data = sb;
            pv.mv_size = 4;
            mrc = mdb_put(t->txn, dp, &pk, &pv, MDB_NODUPDATA);
        }
        if (mrc != MDB_SUCCESS && mrc != MDB_KEYEXIST)
            return gw_store_terr(t, mrc, "postings put");
    }
    return GW_OK;
}

int gw_store_series_get(struct gw_store_txn *t, uint64_t sid, struct gw_store_series *out)
{
    uint8_t kb[8];
    MDB_val d;
    gw_put_be64(kb, sid);
    int rc = gw_store_fixed_get(t, DB_SERIES, kb, 8, &d, "series get");
    if (rc != GW_OK)
        return rc;
    return series_decode(t, sid, &d, scratch(t), out);
}

/* Reads every 4-byte dup of the cursor's current key (after MDB_SET_KEY
 * filled first) with MDB_GET_MULTIPLE / MDB_NEXT_MULTIPLE. visit gets a
 * run of be32 values; returning nonzero stops. */
typedef int (*dup_visit)(void *ud, const uint8_t *p, size_t n);

static int dups_read(struct gw_store_txn *t, MDB_cursor *c, MDB_val *first, dup_visit visit, void *ud)
{
    MDB_val k, d = *first;
    int mrc = mdb_cursor_get(c, &k, &d, MDB_GET_MULTIPLE);
    if (mrc != MDB_SUCCESS)
        return gw_store_terr(t, mrc, "postings read");
    for (;;) {
        if (d.mv_size % 4 != 0)
            return GW_ECORRUPT;
        int rc = visit(ud, d.mv_data, d.mv_size / 4);
        if (rc != 0)
            return rc;
        mrc = mdb_cursor_get(c, &k, &d, MDB_NEXT_MULTIPLE);
        if (mrc == MDB_NOTFOUND)
            return GW_OK;
        if (mrc != MDB_SUCCESS)
            return gw_store_terr(t, mrc, "postings read");
    }
}

static int push_ids(void *ud, const uint8_t *p, size_t n)
{
    struct gw_postings *out = ud;
    for (size_t i = 0; i < n; i++) {
        int rc = gw_postings_push(out, gw_get_be32(p + 4 * i));
        if (rc != GW_OK)
            return rc;
    }
    return 0;
}

/* Appends the sids stored under key (shash or postings) to out. */
int gw_store_read_ids(struct gw_store_txn *t, MDB_cursor *c, const void *key, size_t klen, struct gw_postings *out)
{
    MDB_val k = {klen, (void *)key}, d;
    int mrc = mdb_cursor_get(c, &k, &d, MDB_SET_KEY);
    if (mrc == MDB_NOTFOUND)
        return GW_OK;
    if (mrc != MDB_SUCCESS)
        return gw_store_terr(t, mrc, "postings seek");
    if (d.mv_size != 4)
        return GW_ECORRUPT;
    return dups_read(t, c, &d, push_ids, out);
}

int gw_store_series_by_hash(struct gw_store_txn *t, uint64_t hash, uint64_t *sids, size_t max, size_t *n)
{
    MDB_dbi dh;
    int rc = gw_store_fixed_dbi(t, DB_SHASH, &dh);
    if (rc == GW_ENOTFOUND) {
        *n = 0;
        return GW_OK;
    }
    if (rc != GW_OK)
        return rc;
    MDB_cursor *c;
    if ((rc = gw_store_cursor_open(t, dh, &c)) != GW_OK)
        return rc;
    struct gw_postings p;
    gw_postings_init(&p);
    uint8_t hb[8];
    gw_put_be64(hb, hash);
    rc = gw_store_read_ids(t, c, hb, 8, &p);
    mdb_cursor_close(c);
    if (rc == GW_OK) {
        size_t m = p.n < max ? p.n : max;
        if (m)
            memcpy(sids, p.ids, m * sizeof(uint64_t));
        *n = m;
    }
    gw_postings_free(&p);
    return rc;
}

int gw_store_series_each(struct gw_store_txn *t, gw_store_series_cb cb, void *ud)
{
    MDB_cursor *c;
    int rc = gw_store_fixed_cursor(t, DB_SERIES, &c);
    if (rc != GW_OK)
        return rc == GW_ENOTFOUND ? GW_OK : rc;
    /* Labels live until the callback returns: one series at a time. */
    struct gw_arena a;
    gw_arena_init(&a, 16384, 0);
    MDB_val k, d;
    int mrc;
    for (mrc = mdb_cursor_get(c, &k, &d, MDB_FIRST); mrc == MDB_SUCCESS;
         mrc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
        if (k.mv_size != 8) {
            rc = GW_ECORRUPT;
            break;
        }
        gw_arena_reset(&a);
        struct gw_store_series se;
        if ((rc = series_decode(t, gw_get_be64(k.mv_data), &d, &a, &se)) != GW_OK)
            break;
        rc = cb(ud, &se);
        if (rc != GW_OK)
            break;
    }
    if (rc == GW_OK && mrc != MDB_NOTFOUND && mrc != MDB_SUCCESS)
        rc = gw_store_terr(t, mrc, "series scan");
    mdb_cursor_close(c);
    gw_arena_free(&a);
    return rc < 0 ? rc : GW_OK;
}

/* The newest persisted timestamp: the record's maxt field (kept for stores
 * whose writer set it) or, found by walking the node's blobs from the
 * newest backwards, the last block of the series. The flusher does not
 * rewrite series records, so the blobs are the source. */
int gw_store_series_maxt_get(struct gw_store_txn *t, uint64_t sid, int64_t *maxt)
{
    MDB_dbi ds;
    int rc = gw_store_fixed_dbi(t, DB_SERIES, &ds);
    if (rc == GW_ENOTFOUND) {
        *maxt = INT64_MIN;
        return GW_OK;
    }
    if (rc != GW_OK)
        return rc;
    uint8_t kb[8];
    gw_put_be64(kb, sid);
    MDB_val k = {8, kb}, d;
    int mrc = mdb_get(t->txn, ds, &k, &d);
    if (mrc == MDB_NOTFOUND) {
        *maxt = INT64_MIN;
        return GW_OK;
    }
    if (mrc != MDB_SUCCESS)
        return gw_store_terr(t, mrc, "series get");
    if (d.mv_size < GW_SERIES_FIXED + 1)
        return GW_ECORRUPT;
    int64_t rec = gw_store_unbias(gw_get_be64(d.mv_data));
    uint32_t node_id = gw_get_be32((const uint8_t *)d.mv_data + 8);
    int64_t blob = INT64_MIN;
    rc = gw_store_blob_scan_newest(t, node_id, sid, &blob);
    if (rc != GW_OK)
        return rc;
    *maxt = rec > blob ? rec : blob;
    return GW_OK;
}

int gw_store_series_maxt_put(struct gw_store_txn *t, uint64_t sid, int64_t maxt)
{
    MDB_dbi ds;
    int rc = gw_store_need_write(t);
    if (rc == GW_OK)
        rc = gw_store_fixed_dbi(t, DB_SERIES, &ds);
    if (rc != GW_OK)
        return rc;
    MDB_cursor *c;
    if ((rc = gw_store_cursor_open(t, ds, &c)) != GW_OK)
        return rc;
    uint8_t kb[8], local[256];
    uint8_t *buf = NULL;
    gw_put_be64(kb, sid);
    MDB_val k = {8, kb}, d;
    int mrc = mdb_cursor_get(c, &k, &d, MDB_SET_KEY);
    if (mrc != MDB_SUCCESS) {
        rc = gw_store_terr(t, mrc, "series get");
        goto out;
    }
    if (d.mv_size < GW_SERIES_FIXED + 1) {
        rc = GW_ECORRUPT;
        goto out;
    }
    /* Same size: MDB_CURRENT rewrites the record in place. */
    buf = d.mv_size <= sizeof local ? local : malloc(d.mv_size);
    if (!buf) {
        rc = GW_ENOMEM;
        goto out;
    }
    memcpy(buf, d.mv_data, d.mv_size);
    gw_put_be64(buf, gw_store_bias(maxt));
    MDB_val nv = {d.mv_size, buf};
    k.mv_data = kb;
    k.mv_size = 8;
    mrc = mdb_cursor_put(c, &k, &nv, MDB_CURRENT);
    if (mrc != MDB_SUCCESS)
        rc = gw_store_terr(t, mrc, "series maxt put");
out:
    if (buf != local)
        free(buf);
    mdb_cursor_close(c);
    return rc;
}

/* Removes (hash, sid) from shash; when the stored hash differs from the
 * recomputed one, finds the entry by scanning. */
static int shash_delete(struct gw_store_txn *t, MDB_dbi dh, uint64_t hash, const uint8_t *sidb)
{
    uint8_t hb[8];
    gw_put_be64(hb, hash);
    MDB_val k = {8, hb}, d = {4, (void *)sidb};
    int mrc = mdb_del(t->txn, dh, &k, &d);
    if (mrc == MDB_SUCCESS)
        return GW_OK;
    if (mrc != MDB_NOTFOUND)
        return gw_store_terr(t, mrc, "series hash delete");
    MDB_cursor *c;
    int rc = gw_store_cursor_open(t, dh, &c);
    if (rc != GW_OK)
        return rc;
    for (mrc = mdb_cursor_get(c, &k, &d, MDB_FIRST); mrc == MDB_SUCCESS;
         mrc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
        if (d.mv_size == 4 && memcmp(d.mv_data, sidb, 4) == 0) {
            mrc = mdb_cursor_del(c, 0);
            break;
        }
    }
    mdb_cursor_close(c);
    if (mrc == MDB_SUCCESS || mrc == MDB_NOTFOUND)
        return GW_OK;
    return gw_store_terr(t, mrc, "series hash delete");
}

int gw_store_series_delete(struct gw_store_txn *t, uint64_t sid)
{
    static const int which[] = {DB_SERIES, DB_SHASH, DB_POSTINGS};
    MDB_dbi db[3];
    int rc = gw_store_fixed_dbis(t, 1, which, 3, db);
    if (rc != GW_OK)
        return rc;
    MDB_dbi ds = db[0], dh = db[1], dp = db[2];
    if (sid > UINT32_MAX)
        return GW_ENOTFOUND;
    uint8_t kb[8], sb[4];
    gw_put_be64(kb, sid);
    gw_put_be32(sb, (uint32_t)sid);
    MDB_val k = {8, kb}, d;
    int mrc = mdb_get(t->txn, ds, &k, &d);
    if (mrc != MDB_SUCCESS)
        return gw_store_terr(t, mrc, "series get");
    /* Copy: the page holding the record changes as we delete. */
    struct gw_arena *a = scratch(t);
    uint8_t *rec = gw_arena_alloc(a, d.mv_size);
    if (!rec)
        return GW_ENOMEM;
    memcpy(rec, d.mv_data, d.mv_size);
    MDB_val rv = {d.mv_size, rec};
    struct gw_store_series se;
    if ((rc = series_decode(t, sid, &rv, a, &se)) != GW_OK)
        return rc;
    struct gw_store_rec r;
    if ((rc = gw_store_rec_parse(rec, rv.mv_size, &r)) != GW_OK)
        return rc;

    rc = shash_delete(t, dh, gw_hash64(se.labels, se.labels_len), sb);
    size_t off = 0;
    for (uint64_t i = 0; rc == GW_OK && i < r.n; i++) {
        uint32_t id;
        if ((rc = gw_store_rec_next_id(&r, &off, &id)) != GW_OK)
            break;
        uint8_t ib[4];
        gw_put_be32(ib, id);
        MDB_val pk = {4, ib}, pv = {4, sb};
        mrc = mdb_del(t->txn, dp, &pk, &pv);
        if (mrc != MDB_SUCCESS && mrc != MDB_NOTFOUND)
            rc = gw_store_terr(t, mrc, "postings delete");
    }
    if (rc == GW_OK) {
        mrc = mdb_del(t->txn, ds, &k, NULL);
        if (mrc != MDB_SUCCESS)
            rc = gw_store_terr(t, mrc, "series delete");
    }
    return rc;
}

/* ----------------------------------------------------------------- nodes */

int gw_store_node_id(struct gw_store_txn *t, const char *name, size_t len, int create, uint32_t *id)
{
    if (!t || !t->txn)
        return GW_EINVAL;
    if (len == 0) {
        *id = 0;
        return GW_OK;
    }
    if (len > GW_KEY_MAX)
        return GW_ETOOLARGE;
    MDB_dbi dn, di;
    int rc = gw_store_fixed_dbi(t, DB_NODES, &dn);
    if (rc == GW_ENOTFOUND && !create)
        return GW_ENOTFOUND;
    if (rc != GW_OK)
        return rc;
    MDB_val k = {len, (void *)name}, d;
    int mrc = mdb_get(t->txn, dn, &k, &d);
    if (mrc == MDB_SUCCESS) {
        if (d.mv_size != 4)
            return GW_ECORRUPT;
        *id = gw_get_be32(d.mv_data);
        return GW_OK;
    }
    if (mrc != MDB_NOTFOUND)
        return gw_store_terr(t, mrc, "node get");
    if (!create)
        return GW_ENOTFOUND;
    if ((rc = gw_store_need_write(t)) != GW_OK)
        return rc;
    if ((rc = gw_store_fixed_dbi(t, DB_NODE_IDS, &di)) != GW_OK)
        return rc;
    uint64_t next;
    rc = gw_store_meta_get_u64(t, "next_node_id", &next);
    if (rc == GW_ENOTFOUND) {
        next = 1;
    } else if (rc != GW_OK) {
        return rc;
    }
    if (next == 0 || next > UINT32_MAX)
        return GW_ELIMIT;
    uint8_t ib[4];
    gw_put_be32(ib, (uint32_t)next);
    MDB_val iv = {4, ib};
    mrc = mdb_put(t->txn, dn, &k, &iv, MDB_NOOVERWRITE);
    if (mrc != MDB_SUCCESS)
        return gw_store_terr(t, mrc, "node put");
    MDB_val nv = {len, (void *)name};
    mrc = mdb_put(t->txn, di, &iv, &nv, 0);
    if (mrc != MDB_SUCCESS)
        return gw_store_terr(t, mrc, "node id put");
    if ((rc = gw_store_meta_put_u64(t, "next_node_id", next + 1)) != GW_OK)
        return rc;
    *id = (uint32_t)next;
    return GW_OK;
}

int gw_store_node_name(struct gw_store_txn *t, uint32_t id, const char **name, size_t *len)
{
    if (!t || !t->txn)
        return GW_EINVAL;
    if (id == 0) {
        *name = "";
        *len = 0;
        return GW_OK;
    }
    uint8_t ib[4];
    MDB_val d;
    gw_put_be32(ib, id);
    int rc = gw_store_fixed_get(t, DB_NODE_IDS, ib, 4, &d, "node name get");
    if (rc != GW_OK)
        return rc;
    *name = d.mv_data;
    *len = d.mv_size;
    return GW_OK;
}

