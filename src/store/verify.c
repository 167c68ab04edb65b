/* verify.c - the store's self-check (gw_store_verify) and its consistent
 * copy (gw_store_copy_fd).
 *
 * The check runs in one read transaction, so it sees one consistent
 * snapshot even while a serve writes. Order: postings are loaded into a
 * sorted array of (pair_id << 32 | sid); the series records are walked
 * (pair ids resolve, labels canonical, postings and shash entries present,
 * node id known) into a sorted table of series; then postings, shash,
 * pairs/pair_ids, nodes/node_ids and the meta counters are checked against
 * that table; last every blob of every partition is parsed and every
 * block decoded, and each series' newest stored timestamp is compared with
 * its record. Layouts: top of keys.c. "GWB3" blobs (format 4) carry
 * checksums of their header and directories, of each timestamp column and
 * of each entry, which are compared first, so a flipped bit that still
 * decodes is found; every block is also decoded fully: header, counts,
 * strictly increasing timestamps inside the blob's day. Older blobs
 * ("GWB1", "GWB2") have no checksums and get only the decode. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lmdb.h>

#include "gpuwatch/block.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/store.h"
#include "store/store_int.h"

struct vser {
    uint32_t sid;
    uint32_t node;
    int64_t rec_maxt;           /* the record's maxt field */
    int64_t blk_maxt;           /* newest stored timestamp seen in blobs */
    uint64_t hash;              /* of the rebuilt labels */
};

struct vctx {
    struct gw_store_txn *t;
    gw_store_problem_cb cb;
    gw_store_verify_progress_cb progress;
    void *ud;
    struct gw_store_verify_stats *st;
    struct vser *ser;
    size_t nser, capser;
    uint64_t *post;             /* pair_id << 32 | sid, sorted */
    size_t npost, cappost;
    uint32_t max_pair, max_node;
    uint64_t max_sid;
    struct gw_buf lab;          /* rebuilt canonical labels */
    struct gw_buf join;
    int64_t *tb;
    double *vb;
    size_t cap_samples;
    uint64_t blobs_total, blobs_done;
};

static struct gw_store_problem at_none(const char *kind)
{
    struct gw_store_problem p;
    memset(&p, 0, sizeof p);
    p.kind = kind;
    p.day = INT64_MIN;
    p.window_start = INT64_MIN;
    p.seq = -1;
    return p;
}

static void report(struct vctx *c, struct gw_store_problem *p, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void report(struct vctx *c, struct gw_store_problem *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->what, sizeof p->what, fmt, ap);
    va_end(ap);
    c->st->problems++;
    if (c->cb)
        c->cb(c->ud, p);
}

static int u64_push(uint64_t **v, size_t *n, size_t *cap, uint64_t x)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 1024;
        uint64_t *nv = realloc(*v, nc * sizeof *nv);
        if (!nv)
            return GW_ENOMEM;
        *v = nv;
        *cap = nc;
    }
    (*v)[(*n)++] = x;
    return GW_OK;
}

static int has_u64(const uint64_t *v, size_t n, uint64_t x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (v[m] < x)
            lo = m + 1;
        else
            hi = m;
    }
    return lo < n && v[lo] == x;
}

static struct vser *find_ser(struct vctx *c, uint64_t sid)
{
    size_t lo = 0, hi = c->nser;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (c->ser[m].sid < sid)
            lo = m + 1;
        else
            hi = m;
    }
    return lo < c->nser && c->ser[lo].sid == sid ? &c->ser[lo] : NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Postings into c->post (sorted; LMDB gives them in order, sorted again in
 * case the tree order is itself damaged). */
static int load_postings(struct vctx *c)
{
    MDB_cursor *cur;
    int rc = gw_store_fixed_cursor(c->t, DB_POSTINGS, &cur);
    if (rc != GW_OK)
        return rc == GW_ENOTFOUND ? GW_OK : rc;
    MDB_val k, d;
    int mrc;
    for (mrc = mdb_cursor_get(cur, &k, &d, MDB_FIRST); mrc == MDB_SUCCESS;
         mrc = mdb_cursor_get(cur, &k, &d, MDB_NEXT)) {
        if (k.mv_size != 4 || d.mv_size != 4) {
            struct gw_store_problem p = at_none("postings");
            report(c, &p, "postings entry with a %zu-byte key and %zu-byte value (expected 4 and 4)", k.mv_size,
                   d.mv_size);
            continue;
        }
        uint64_t x = (uint64_t)gw_get_be32(k.mv_data) << 32 | gw_get_be32(d.mv_data);
        if ((rc = u64_push(&c->post, &c->npost, &c->cappost, x)) != GW_OK)
            break;
    }
    if (rc == GW_OK && mrc != MDB_NOTFOUND)
        rc = gw_store_terr(c->t, mrc, "postings scan");
    mdb_cursor_close(cur);
    c->st->postings = c->npost;
    qsort(c->post, c->npost, sizeof *c->post, cmp_u64);
    return rc;
}

static int lab_put(struct gw_buf *b, const void *s, size_t n)
{
    return gw_buf_put_part(b, s, n);
}

/* One pair id of series sid: resolves, is well formed, sorts after the
 * previous label, has a postings entry. Appends the label to c->lab. */
static int check_pair(struct vctx *c, MDB_dbi dids, uint64_t sid, uint32_t id, struct gw_buf *prev_name)
{
    struct gw_store_problem p = at_none("series");
    p.sid = sid;
    p.pair_id = id;
    uint8_t ib[4];
    gw_put_be32(ib, id);
    MDB_val k = {4, ib}, d;
    int mrc = mdb_get(c->t->txn, dids, &k, &d);
    if (mrc == MDB_NOTFOUND) {
        report(c, &p, "series %llu refers to label pair id %u, which does not exist", (unsigned long long)sid, id);
        return GW_OK;
    }
    if (mrc != MDB_SUCCESS)
        return gw_store_terr(c->t, mrc, "pair id get");
    const uint8_t *z = d.mv_size ? memchr(d.mv_data, 0, d.mv_size) : NULL;
    if (!z || z == d.mv_data) {
        report(c, &p, "label pair %u of series %llu is malformed (no name\\0value)", id, (unsigned long long)sid);
        return GW_OK;
    }
    size_t nl = (size_t)(z - (const uint8_t *)d.mv_data), vl = d.mv_size - nl - 1;
    if (prev_name->len) {
        size_t m = prev_name->len < nl ? prev_name->len : nl;
        int cmpv = memcmp(prev_name->data, d.mv_data, m);
        if (cmpv > 0 || (cmpv == 0 && prev_name->len >= nl))
            report(c, &p, "labels of series %llu are not sorted by name at label \"%.*s\"", (unsigned long long)sid,
                   (int)(nl > 64 ? 64 : nl), (const char *)d.mv_data);
    }
    gw_buf_reset(prev_name);
    int rc = gw_buf_append(prev_name, d.mv_data, nl);
    if (rc == GW_OK)
        rc = lab_put(&c->lab, d.mv_data, nl);
    if (rc == GW_OK)
        rc = lab_put(&c->lab, z + 1, vl);
    if (rc != GW_OK)
        return rc;
    if (!has_u64(c->post, c->npost, (uint64_t)id << 32 | sid)) {
        p.kind = "postings";
        report(c, &p, "series %llu has label \"%.*s\" (pair %u) but is missing from its postings",
               (unsigned long long)sid, (int)(nl > 64 ? 64 : nl), (const char *)d.mv_data, id);
    }
    return GW_OK;
}

/* The rest of one series record: node id, shash entry of its labels. */
static int check_series_refs(struct vctx *c, MDB_dbi dnid, MDB_dbi dh, uint64_t sid, uint32_t node)
{
    struct gw_store_problem p = at_none("series");
    p.sid = sid;
    p.node_id = node;
    if (node != 0) {
        uint8_t nb[4];
        gw_put_be32(nb, node);
        MDB_val k = {4, nb}, d;
        int mrc = mdb_get(c->t->txn, dnid, &k, &d);
        if (mrc == MDB_NOTFOUND)
            report(c, &p, "series %llu is on node id %u, which does not exist", (unsigned long long)sid, node);
        else if (mrc != MDB_SUCCESS)
            return gw_store_terr(c->t, mrc, "node name get");
    }
    uint8_t hb[8], sb[4];
    gw_put_be64(hb, gw_hash64(c->lab.data, c->lab.len));
    gw_put_be32(sb, (uint32_t)sid);
    MDB_cursor *cur;
    int rc = gw_store_cursor_open(c->t, dh, &cur);
    if (rc != GW_OK)
        return rc;
    MDB_val k = {8, hb}, d = {4, sb};
    int mrc = mdb_cursor_get(cur, &k, &d, MDB_GET_BOTH);
    mdb_cursor_close(cur);
    if (mrc == MDB_NOTFOUND) {
        p.kind = "shash";
        report(c, &p, "series %llu has no shash entry for the hash of its labels (it cannot be found by labels)",
               (unsigned long long)sid);
    } else if (mrc != MDB_SUCCESS) {
        return gw_store_terr(c->t, mrc, "shash get");
    }
    return GW_OK;
}

static int ser_push(struct vctx *c, uint64_t sid, uint32_t node, int64_t maxt, uint64_t hash)
{
    if (c->nser == c->capser) {
        size_t nc = c->capser ? c->capser * 2 : 1024;
        struct vser *nv = realloc(c->ser, nc * sizeof *nv);
        if (!nv)
            return GW_ENOMEM;
        c->ser = nv;
        c->capser = nc;
    }
    c->ser[c->nser++] = (struct vser){.sid = (uint32_t)sid, .node = node, .rec_maxt = maxt, .blk_maxt = INT64_MIN,
                                     .hash = hash};
    return GW_OK;
}

static int check_one_series(struct vctx *c, MDB_dbi dids, MDB_dbi dnid, MDB_dbi dh, const MDB_val *k,
                            const MDB_val *d, struct gw_buf *prev)
{
    struct gw_store_problem p = at_none("series");
    if (k->mv_size != 8) {
        report(c, &p, "series record with a %zu-byte key (expected 8)", k->mv_size);
        return GW_OK;
    }
    uint64_t sid = gw_get_be64(k->mv_data);
    p.sid = sid;
    if (sid > UINT32_MAX || sid == 0) {
        report(c, &p, "series id %llu is out of range", (unsigned long long)sid);
        return GW_OK;
    }
    struct gw_store_rec r;
    if (gw_store_rec_parse(d->mv_data, d->mv_size, &r) != GW_OK) {
        report(c, &p, "series %llu: record of %zu bytes is malformed", (unsigned long long)sid, d->mv_size);
        return GW_OK;
    }
    if (r.n == 0)
        report(c, &p, "series %llu has no labels", (unsigned long long)sid);
    gw_buf_reset(&c->lab);
    gw_buf_reset(prev);
    size_t off = 0;
    int rc = GW_OK;
    for (uint64_t i = 0; i < r.n && rc == GW_OK; i++) {
        uint32_t id;
        if (gw_store_rec_next_id(&r, &off, &id) != GW_OK) {
            report(c, &p, "series %llu: pair id %llu of %llu is malformed", (unsigned long long)sid,
                   (unsigned long long)i + 1, (unsigned long long)r.n);
            return GW_OK;
        }
        rc = check_pair(c, dids, sid, id, prev);
    }
    if (rc == GW_OK && off != r.ids_len)
        report(c, &p, "series %llu: %zu bytes after its %llu pair ids", (unsigned long long)sid, r.ids_len - off,
               (unsigned long long)r.n);
    if (rc == GW_OK)
        rc = check_series_refs(c, dnid, dh, sid, r.node_id);
    if (rc == GW_OK)
        rc = ser_push(c, sid, r.node_id, r.maxt, gw_hash64(c->lab.data, c->lab.len));
    if (sid > c->max_sid)
        c->max_sid = sid;
    return rc;
}

static int scan_series(struct vctx *c)
{
    static const int which[] = {DB_SERIES, DB_PAIR_IDS, DB_NODE_IDS, DB_SHASH};
    MDB_dbi db[4];
    int rc = gw_store_fixed_dbis(c->t, 0, which, 4, db);
    if (rc != GW_OK)
        return rc == GW_ENOTFOUND ? GW_OK : rc;
    MDB_cursor *cur;
    if ((rc = gw_store_cursor_open(c->t, db[0], &cur)) != GW_OK)
        return rc;
    struct gw_buf prev;
    gw_buf_init(&prev, 0);
    MDB_val k, d;
    int mrc;
    for (mrc = mdb_cursor_get(cur, &k, &d, MDB_FIRST); mrc == MDB_SUCCESS && rc == GW_OK;
         mrc = mdb_cursor_get(cur, &k, &d, MDB_NEXT)) {
        c->st->series++;
        rc = check_one_series(c, db[1], db[2], db[3], &k, &d, &prev);
        if (c->progress && c->st->series % 4096 == 0)
            c->progress(c->ud, "series", c->st->series, 0);
    }
    if (rc == GW_OK && mrc != MDB_NOTFOUND && mrc != MDB_SUCCESS)
        rc = gw_store_terr(c->t, mrc, "series scan");
    mdb_cursor_close(cur);
    gw_buf_free(&prev);
    return rc;
}

/* Every postings entry names an existing series and pair. */
static int check_postings(struct vctx *c)
{
    MDB_dbi dids = 0;
    int rc = gw_store_fixed_dbi(c->t, DB_PAIR_IDS, &dids);
    uint32_t last_missing = 0;
    for (size_t i = 0; i < c->npost; i++) {
        uint32_t id = (uint32_t)(c->post[i] >> 32), sid = (uint32_t)c->post[i];
        struct gw_store_problem p = at_none("postings");
        p.pair_id = id;
        p.sid = sid;
        if (!find_ser(c, sid))
            report(c, &p, "postings of pair %u list series %u, which does not exist", id, sid);
        if (rc != GW_OK || id == last_missing)
            continue;
        uint8_t ib[4];
        gw_put_be32(ib, id);
        MDB_val k = {4, ib}, d;
        int mrc = mdb_get(c->t->txn, dids, &k, &d);
        if (mrc == MDB_NOTFOUND) {
            report(c, &p, "postings under pair id %u, which does not exist", id);
            last_missing = id;
        } else if (mrc != MDB_SUCCESS) {
            return gw_store_terr(c->t, mrc, "pair id get");
        }
    }
    return rc == GW_ENOTFOUND ? GW_OK : rc;
}

/* Every shash entry names an existing series whose labels hash to its key. */
static int check_shash(struct vctx *c)
{
    MDB_cursor *cur;
    int rc = gw_store_fixed_cursor(c->t, DB_SHASH, &cur);
    if (rc != GW_OK)
        return rc == GW_ENOTFOUND ? GW_OK : rc;
    MDB_val k, d;
    int mrc;
    for (mrc = mdb_cursor_get(cur, &k, &d, MDB_FIRST); mrc == MDB_SUCCESS && rc == GW_OK;
         mrc = mdb_cursor_get(cur, &k, &d, MDB_NEXT)) {
        c->st->shash++;
        struct gw_store_problem p = at_none("shash");
        if (k.mv_size != 8 || d.mv_size != 4) {
            report(c, &p, "shash entry with a %zu-byte key and %zu-byte value (expected 8 and 4)", k.mv_size,
                   d.mv_size);
            continue;
        }
        uint64_t h = gw_get_be64(k.mv_data);
        p.sid = gw_get_be32(d.mv_data);
        const struct vser *se = find_ser(c, p.sid);
        if (!se)
            report(c, &p, "shash entry %016llx points to series %llu, which does not exist", (unsigned long long)h,
                   (unsigned long long)p.sid);
        else if (se->hash != h)
            report(c, &p, "shash entry %016llx points to series %llu, whose labels hash to %016llx",
                   (unsigned long long)h, (unsigned long long)p.sid, (unsigned long long)se->hash);
    }
    if (rc == GW_OK && mrc != MDB_NOTFOUND && mrc != MDB_SUCCESS)
        rc = gw_store_terr(c->t, mrc, "shash scan");
    mdb_cursor_close(cur);
    return rc;
}

/* Walks the id -> name table of a pair of fixed tables (which[1], with
 * which[0] its name -> id twin; both opened into db), handing each entry
 * to visit. *absent is set when the tables do not exist yet (GW_OK then). */
static int scan_id_table(struct vctx *c, const int which[2], MDB_dbi db[2], const char *what, int *absent,
                         void (*visit)(struct vctx *c, const MDB_dbi *db, const MDB_val *k, const MDB_val *d))
{
    *absent = 0;
    int rc = gw_store_fixed_dbis(c->t, 0, which, 2, db);
    if (rc != GW_OK) {
        *absent = rc == GW_ENOTFOUND;
        return rc == GW_ENOTFOUND ? GW_OK : rc;
    }
    MDB_cursor *cur;
    if ((rc = gw_store_cursor_open(c->t, db[1], &cur)) != GW_OK)
        return rc;
    MDB_val k, d;
    int mrc;
    for (mrc = mdb_cursor_get(cur, &k, &d, MDB_FIRST); mrc == MDB_SUCCESS;
         mrc = mdb_cursor_get(cur, &k, &d, MDB_NEXT))
        visit(c, db, &k, &d);
    if (mrc != MDB_NOTFOUND)
        rc = gw_store_terr(c->t, mrc, what);
    mdb_cursor_close(cur);
    return rc;
}

static void check_pair_id(struct vctx *c, const MDB_dbi *db, const MDB_val *k, const MDB_val *d)
{
    c->st->pairs++;
    struct gw_store_problem p = at_none("pairs");
    const uint8_t *z = d->mv_size ? memchr(d->mv_data, 0, d->mv_size) : NULL;
    if (k->mv_size != 4 || !z) {
        report(c, &p, "pair_ids entry with a %zu-byte key or without name\\0value", k->mv_size);
        return;
    }
    p.pair_id = gw_get_be32(k->mv_data);
    if (p.pair_id > c->max_pair)
        c->max_pair = p.pair_id;
    size_t nl = (size_t)(z - (const uint8_t *)d->mv_data);
    uint8_t key[GW_KEY_MAX];
    size_t kl;
    if (gw_store_pair_key(key, &kl, d->mv_data, nl, (const char *)z + 1, d->mv_size - nl - 1) != GW_OK) {
        report(c, &p, "pair %u holds a label that cannot be indexed", p.pair_id);
        return;
    }
    MDB_val pk = {kl, key}, pv;
    int g = mdb_get(c->t->txn, db[0], &pk, &pv);
    if (g == MDB_NOTFOUND)
        report(c, &p, "pair %u (\"%.*s\") is missing from pairs", p.pair_id, (int)(nl > 64 ? 64 : nl),
               (const char *)d->mv_data);
    else if (g == MDB_SUCCESS && (pv.mv_size != 4 || gw_get_be32(pv.mv_data) != p.pair_id))
        report(c, &p, "pairs maps \"%.*s\" to another id than %u", (int)(nl > 64 ? 64 : nl),
               (const char *)d->mv_data, p.pair_id);
}

/* pair_ids -> pairs and back; the largest id against meta next_pair_id. */
static int check_pairs(struct vctx *c)
{
    static const int which[] = {DB_PAIRS, DB_PAIR_IDS};
    MDB_dbi db[2];
    int absent;
    int rc = scan_id_table(c, which, db, "pair ids scan", &absent, check_pair_id);
    if (absent)
        return GW_OK;
    uint64_t next;
    if (rc == GW_OK && c->max_pair && gw_store_meta_get_u64(c->t, "next_pair_id", &next) == GW_OK &&
        next <= c->max_pair) {
        struct gw_store_problem p = at_none("meta");
        report(c, &p, "meta next_pair_id %llu is not past the largest pair id %u", (unsigned long long)next,
               c->max_pair);
    }
    return rc;
}

static void check_node_id(struct vctx *c, const MDB_dbi *db, const MDB_val *k, const MDB_val *d)
{
    c->st->nodes++;
    struct gw_store_problem p = at_none("nodes");
    if (k->mv_size != 4 || d->mv_size == 0 || d->mv_size > GW_KEY_MAX) {
        report(c, &p, "node_ids entry with a %zu-byte key and %zu-byte name", k->mv_size, d->mv_size);
        return;
    }
    p.node_id = gw_get_be32(k->mv_data);
    if (p.node_id > c->max_node)
        c->max_node = p.node_id;
    MDB_val nk = *d, nv;
    int g = mdb_get(c->t->txn, db[0], &nk, &nv);
    if (g != MDB_SUCCESS || nv.mv_size != 4 || gw_get_be32(nv.mv_data) != p.node_id)
        report(c, &p, "node %u (\"%.*s\") does not map back to its id in nodes", p.node_id,
               (int)(d->mv_size > 64 ? 64 : d->mv_size), (const char *)d->mv_data);
}

/* node_ids -> nodes; the largest id against next_node_id; next_sid. */
static int check_nodes(struct vctx *c)
{
    static const int which[] = {DB_NODES, DB_NODE_IDS};
    MDB_dbi db[2];
    int absent;
    int rc = scan_id_table(c, which, db, "node ids scan", &absent, check_node_id);
    if (absent)
        return GW_OK;
    MDB_cursor *cur;
    MDB_val k, d;
    int mrc;
    if (rc == GW_OK && (rc = gw_store_cursor_open(c->t, db[0], &cur)) == GW_OK) {
        for (mrc = mdb_cursor_get(cur, &k, &d, MDB_FIRST); mrc == MDB_SUCCESS;
             mrc = mdb_cursor_get(cur, &k, &d, MDB_NEXT)) {
            struct gw_store_problem np = at_none("nodes");
            if (d.mv_size != 4) {
                report(c, &np, "nodes entry \"%.*s\" with a %zu-byte id", (int)(k.mv_size > 64 ? 64 : k.mv_size),
                       (const char *)k.mv_data, d.mv_size);
                continue;
            }
            np.node_id = gw_get_be32(d.mv_data);
            MDB_val ik = d, iv;
            int g = mdb_get(c->t->txn, db[1], &ik, &iv);
            if (g != MDB_SUCCESS || iv.mv_size != k.mv_size || memcmp(iv.mv_data, k.mv_data, k.mv_size) != 0)
                report(c, &np, "node \"%.*s\" maps to id %u, which node_ids does not map back",
                       (int)(k.mv_size > 64 ? 64 : k.mv_size), (const char *)k.mv_data, np.node_id);
        }
        if (mrc != MDB_NOTFOUND)
            rc = gw_store_terr(c->t, mrc, "nodes scan");
        mdb_cursor_close(cur);
    }
    uint64_t next;
    struct gw_store_problem p = at_none("meta");
    if (rc == GW_OK && c->max_node && gw_store_meta_get_u64(c->t, "next_node_id", &next) == GW_OK &&
        next <= c->max_node)
        report(c, &p, "meta next_node_id %llu is not past the largest node id %u", (unsigned long long)next,
               c->max_node);
    if (rc == GW_OK && c->max_sid && gw_store_meta_get_u64(c->t, "next_sid", &next) == GW_OK &&
        next <= c->max_sid)
        report(c, &p, "meta next_sid %llu is not past the largest series id %llu", (unsigned long long)next,
               (unsigned long long)c->max_sid);
    return rc;
}

static int decode_room(struct vctx *c, size_t n)
{
    return gw_block_samples_reserve(&c->tb, &c->vb, &c->cap_samples, n, 0);
}

/* Decodes a block fully and checks its timestamps against the blob's
 * window and day; *mint and *maxt get its range. 1 when it is sound, 0 when a
 * problem was reported, or an error. */
static int check_block(struct vctx *c, struct gw_store_problem *p, const uint8_t *b, size_t len, int64_t ws,
                       int64_t *mint, int64_t *maxt)
{
    uint32_t n;
    if (gw_block_info(b, len, &n, mint, maxt) != GW_OK || n == 0 || n > GW_BLOCK_MAX_SAMPLES) {
        report(c, p, "block of series %llu (%zu bytes): unreadable header", (unsigned long long)p->sid, len);
        return 0;
    }
    int rc = decode_room(c, n);
    if (rc != GW_OK)
        return rc;
    size_t got = 0;
    rc = gw_block_decode(b, len, c->tb, c->vb, c->cap_samples, &got);
    if (rc == GW_ENOMEM)
        return rc;
    if (rc != GW_OK || got != n) {
        report(c, p, "block of series %llu (%zu bytes, %u samples): does not decode (%s)",
               (unsigned long long)p->sid, len, n, rc != GW_OK ? gw_strerror(rc) : "sample count differs");
        return 0;
    }
    for (size_t i = 1; i < got; i++)
        if (c->tb[i] <= c->tb[i - 1]) {
            report(c, p, "block of series %llu: timestamps not increasing at sample %zu", (unsigned long long)p->sid,
                   i);
            return 0;
        }
    if (c->tb[0] != *mint || c->tb[got - 1] != *maxt) {
        report(c, p, "block of series %llu: header range [%lld, %lld] differs from its samples",
               (unsigned long long)p->sid, (long long)*mint, (long long)*maxt);
        return 0;
    }
    int64_t day_end = (gw_store_day_of(ws) + 1) * GW_DAY_MS;
    if (*mint < ws || *maxt >= day_end) {
        report(c, p, "block of series %llu spans [%lld, %lld], outside its window starting %lld",
               (unsigned long long)p->sid, (long long)*mint, (long long)*maxt, (long long)ws);
        return 0;
    }
    c->st->blocks++;
    c->st->samples += got;
    return 1;
}

/* Every timestamp column of a GWB2 blob decodes. */
static int check_columns(struct vctx *c, struct gw_store_problem *base, const struct gw_store_blob *b)
{
    for (uint32_t col = 0; col < b->ncols; col++) {
        const uint8_t *cp;
        size_t cl;
        gw_store_blob_col(b, col, &cp, &cl);
        uint32_t n;
        int64_t mi, ma;
        struct gw_store_problem p = *base;
        p.kind = "column";
        if (!gw_store_blob_col_ok(b, col)) {
            report(c, &p, "timestamp column %u (%zu bytes): checksum mismatch", col, cl);
            continue;
        }
        if (gw_block_info(cp, cl, &n, &mi, &ma) != GW_OK || n == 0 || n > GW_BLOCK_MAX_SAMPLES) {
            report(c, &p, "timestamp column %u (%zu bytes): unreadable header", col, cl);
            continue;
        }
        int rc = decode_room(c, n);
        size_t got = 0;
        if (rc == GW_OK)
            rc = gw_block_ts_decode(cp, cl, c->tb, c->cap_samples, &got);
        if (rc == GW_ENOMEM)
            return rc;
        if (rc != GW_OK || got != n)
            report(c, &p, "timestamp column %u (%zu bytes, %u samples): does not decode (%s)", col, cl, n,
                   rc != GW_OK ? gw_strerror(rc) : "count differs");
        c->st->columns++;
    }
    return GW_OK;
}

static int check_blob(struct vctx *c, int64_t day, const MDB_val *k, const MDB_val *d)
{
    struct gw_store_problem p = at_none("blob");
    p.day = day;
    if (k->mv_size != GW_BLOB_KEY_LEN) {
        report(c, &p, "partition key of %zu bytes (expected %d)", k->mv_size, GW_BLOB_KEY_LEN);
        return GW_OK;
    }
    p.node_id = gw_get_be32(k->mv_data);
    p.window_start = gw_store_unbias(gw_get_be64((const uint8_t *)k->mv_data + 4));
    p.seq = gw_get_be32((const uint8_t *)k->mv_data + 12);
    if (gw_store_day_of(p.window_start) != day)
        report(c, &p, "blob window %lld does not lie in its partition's day", (long long)p.window_start);
    struct gw_store_blob b;
    if (gw_store_blob_parse(d->mv_data, d->mv_size, &b) != GW_OK) {
        if (gw_store_blob_parse_known(d->mv_data, d->mv_size, &b) == GW_OK && !gw_store_blob_hdr_ok(&b))
            report(c, &p, "blob of %zu bytes: header/directory checksum mismatch", d->mv_size);
        else
            report(c, &p, "blob of %zu bytes: bad magic or directory (sids unsorted, offsets out of range)",
                   d->mv_size);
        return GW_OK;
    }
    int rc = b.v2 ? check_columns(c, &p, &b) : GW_OK;
    uint32_t prev_sid = 0;
    int64_t prev_maxt = INT64_MIN;
    for (uint32_t j = 0; j < b.n && rc == GW_OK; j++) {
        struct gw_store_problem bp = p;
        bp.kind = "block";
        bp.sid = gw_store_blob_sid(&b, j);
        struct vser *se = find_ser(c, bp.sid);
        if (!se)
            report(c, &bp, "blob holds a block of series %llu, which does not exist", (unsigned long long)bp.sid);
        else if (se->node != p.node_id)
            report(c, &bp, "blob of node %u holds a block of series %llu, which is on node %u", p.node_id,
                   (unsigned long long)bp.sid, se->node);
        const uint8_t *bb;
        size_t bl;
        int r = gw_store_blob_resolve(&b, j, &c->join, &bb, &bl);
        if (r == GW_ENOMEM)
            return r;
        if (r != GW_OK) {
            if (!gw_store_blob_entry_ok(&b, j))
                report(c, &bp, "entry %u (series %llu): checksum mismatch in its block or value part", j,
                       (unsigned long long)bp.sid);
            else
                report(c, &bp, "entry %u (series %llu): bad column reference, column or value part", j,
                       (unsigned long long)bp.sid);
            continue;
        }
        int64_t mi, ma;
        r = check_block(c, &bp, bb, bl, p.window_start, &mi, &ma);
        if (r < 0)
            return r;
        if (r == 0)
            continue;
        if (bp.sid == prev_sid && mi <= prev_maxt)
            report(c, &bp, "blocks of series %llu overlap or are out of order in the blob",
                   (unsigned long long)bp.sid);
        prev_sid = (uint32_t)bp.sid;
        prev_maxt = ma;
        if (se && ma > se->blk_maxt)
            se->blk_maxt = ma;
    }
    return rc;
}

static int check_partitions(struct vctx *c)
{
    struct part_vec pv = {0};
    int rc = gw_store_parts_collect(c->t, INT64_MIN, INT64_MAX, &pv);
    for (size_t i = 0; rc == GW_OK && i < pv.n; i++) {
        MDB_stat ms;
        if (mdb_stat(c->t->txn, pv.v[i].dbi, &ms) == MDB_SUCCESS)
            c->blobs_total += ms.ms_entries;
    }
    for (size_t i = 0; rc == GW_OK && i < pv.n; i++) {
        c->st->partitions++;
        MDB_cursor *cur;
        if ((rc = gw_store_cursor_open(c->t, pv.v[i].dbi, &cur)) != GW_OK)
            break;
        MDB_val k, d;
        int mrc;
        for (mrc = mdb_cursor_get(cur, &k, &d, MDB_FIRST); mrc == MDB_SUCCESS && rc == GW_OK;
             mrc = mdb_cursor_get(cur, &k, &d, MDB_NEXT)) {
            c->st->blobs++;
            rc = check_blob(c, pv.v[i].day, &k, &d);
            if (c->progress && ++c->blobs_done % 256 == 0)
                c->progress(c->ud, "blocks", c->blobs_done, c->blobs_total);
        }
        if (rc == GW_OK && mrc != MDB_NOTFOUND && mrc != MDB_SUCCESS)
            rc = gw_store_terr(c->t, mrc, "partition scan");
        mdb_cursor_close(cur);
        if (c->progress)
            c->progress(c->ud, "blocks", c->blobs_done, c->blobs_total);
    }
    /* A recorded maxt past the newest stored block makes WAL replay skip
     * samples that are nowhere else. Data dropped by retention is no
     * such case: only maxt inside the oldest kept day counts. */
    int64_t oldest = pv.n ? pv.v[0].day * GW_DAY_MS : INT64_MAX;
    for (size_t i = 0; rc == GW_OK && i < c->nser; i++) {
        const struct vser *se = &c->ser[i];
        if (se->rec_maxt != INT64_MIN && se->rec_maxt >= oldest && se->rec_maxt > se->blk_maxt) {
            struct gw_store_problem p = at_none("series");
            p.sid = se->sid;
            p.node_id = se->node;
            report(c, &p, "series %u records maxt %lld but its newest stored sample is at %lld", se->sid,
                   (long long)se->rec_maxt, (long long)se->blk_maxt);
        }
    }
    free(pv.v);
    return rc;
}

int gw_store_verify(struct gw_store *s, gw_store_problem_cb cb, gw_store_verify_progress_cb progress, void *ud,
                    struct gw_store_verify_stats *st, struct gw_error *err)
{
    struct gw_store_verify_stats local;
    if (!st)
        st = &local;
    memset(st, 0, sizeof *st);
    struct vctx c = {.cb = cb, .progress = progress, .ud = ud, .st = st};
    gw_buf_init(&c.lab, 0);
    gw_buf_init(&c.join, 0);
    int rc = gw_store_read_begin(s, &c.t, err);
    if (rc != GW_OK)
        return rc;
    if (progress)
        progress(ud, "index", 0, 0);
    rc = load_postings(&c);
    if (rc == GW_OK)
        rc = scan_series(&c);
    if (rc == GW_OK)
        rc = check_postings(&c);
    if (rc == GW_OK)
        rc = check_shash(&c);
    if (rc == GW_OK)
        rc = check_pairs(&c);
    if (rc == GW_OK)
        rc = check_nodes(&c);
    if (rc == GW_OK)
        rc = check_partitions(&c);
    if (rc != GW_OK)
        gw_error_set(err, rc, "cannot verify store %s: %s", s->dir, c.t->msg[0] ? c.t->msg : gw_strerror(rc));
    gw_store_read_end(c.t);
    free(c.ser);
    free(c.post);
    free(c.tb);
    free(c.vb);
    gw_buf_free(&c.lab);
    gw_buf_free(&c.join);
    return rc;
}

int gw_store_copy_fd(struct gw_store *s, int fd, struct gw_error *err)
{
    /* The read txn holds the store's locks, so no map resize in this
     * process runs under the copy's own read transaction. */
    struct gw_store_txn *t;
    int rc = gw_store_read_begin(s, &t, err);
    if (rc != GW_OK)
        return rc;
    int mrc = mdb_env_copyfd2(s->env, fd, MDB_CP_COMPACT);
    gw_store_read_end(t);
    if (mrc != MDB_SUCCESS)
        return gw_error_set(err, mrc == EIO || mrc == ENOSPC ? GW_EIO : gw_store_map_mdb(mrc),
                            "cannot copy store %s: %s", s->dir, mdb_strerror(mrc));
    return GW_OK;
}

int gw_store_env_copy_fd(const char *env_dir, int fd, struct gw_error *err)
{
    MDB_env *env = NULL;
    int mrc = mdb_env_create(&env);
    if (mrc == MDB_SUCCESS)
        mrc = mdb_env_set_maxdbs(env, 64); /* more than any gw_kv environment has */
    if (mrc == MDB_SUCCESS)
        mrc = mdb_env_open(env, env_dir, MDB_RDONLY | MDB_NOTLS, 0644);
    if (mrc == MDB_SUCCESS)
        mrc = mdb_env_copyfd2(env, fd, MDB_CP_COMPACT);
    if (env)
        mdb_env_close(env);
    if (mrc != MDB_SUCCESS)
        return gw_error_set(err, mrc == EIO || mrc == ENOSPC ? GW_EIO : gw_store_map_mdb(mrc),
                            "cannot copy the LMDB environment %s: %s", env_dir, mdb_strerror(mrc));
    return GW_OK;
}
