/* compact.c - compaction of the LMDB series store (store.h, "compaction"):
 * re-encoding a finished day's blobs of each node into one day blob, the
 * removal of dead series with the label pairs only they used, and the
 * LMDB compacting copy that gives freed pages back to the file system.
 *
 * Day blob: GWB2 layout (keys.c) under key node | day start | 0x80000000.
 * Re-encoding decodes every entry of the node's blobs of the day in key
 * order (window, seq, directory order), concatenates each series' samples
 * and encodes them again as one value part per series over the day, with
 * one timestamp column per distinct timestamp array (found by XXH3 hash
 * plus full comparison). Decoding and encoding run in a read transaction;
 * the write transaction only checks that the node's keys are still the
 * ones read (same keys, same value sizes), deletes them and writes the day
 * blob, so writers wait for a few milliseconds per node at most. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lmdb.h>

#include "gpuwatch/block.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/store.h"
#include "store/store_int.h"

/* Label pairs of a deleted series checked for garbage (the rest stay). */
#define GW_STORE_GC_PAIRS 256

/* ------------------------------------------------------ listing a day */

struct src_key {
    uint8_t key[GW_BLOB_KEY_LEN];
    size_t vlen;
};

struct node_keys {
    uint32_t node;
    size_t first, n;        /* into day_keys.k */
};

struct day_keys {
    struct src_key *k;
    size_t n, cap;
    struct node_keys *nodes;
    size_t n_nodes, cap_nodes;
};

static void day_keys_free(struct day_keys *dk)
{
    free(dk->k);
    free(dk->nodes);
    memset(dk, 0, sizeof *dk);
}

static int day_keys_push(struct day_keys *dk, const MDB_val *k, size_t vlen)
{
    if (dk->n == dk->cap) {
        size_t nc = dk->cap ? dk->cap * 2 : 64;
        struct src_key *nk = realloc(dk->k, nc * sizeof *nk);
        if (!nk)
            return GW_ENOMEM;
        dk->k = nk;
        dk->cap = nc;
    }
    uint32_t node = gw_get_be32(k->mv_data);
    if (dk->n_nodes == 0 || dk->nodes[dk->n_nodes - 1].node != node) {
        if (dk->n_nodes == dk->cap_nodes) {
            size_t nc = dk->cap_nodes ? dk->cap_nodes * 2 : 16;
            struct node_keys *nn = realloc(dk->nodes, nc * sizeof *nn);
            if (!nn)
                return GW_ENOMEM;
            dk->nodes = nn;
            dk->cap_nodes = nc;
        }
        dk->nodes[dk->n_nodes++] = (struct node_keys){.node = node, .first = dk->n, .n = 0};
    }
    memcpy(dk->k[dk->n].key, k->mv_data, GW_BLOB_KEY_LEN);
    dk->k[dk->n].vlen = vlen;
    dk->n++;
    dk->nodes[dk->n_nodes - 1].n++;
    return GW_OK;
}

static int is_day_blob(const uint8_t *key, int64_t day)
{
    return gw_store_unbias(gw_get_be64(key + 4)) == day * GW_DAY_MS && gw_get_be32(key + 12) >= GW_STORE_DAY_SEQ;
}

/* The partition of day in t (*have 0 when there is none). */
static int day_dbi(struct gw_store_txn *t, int64_t day, MDB_dbi *dbi, int *have)
{
    struct part_vec pv = {0};
    int rc = gw_store_parts_collect(t, day, day, &pv);
    *have = rc == GW_OK && pv.n > 0;
    if (*have)
        *dbi = pv.v[0].dbi;
    free(pv.v);
    return rc;
}

/* Every key of day's partition (with node_only: only node's), grouped by
 * node in key order. */
static int day_list(struct gw_store_txn *t, MDB_dbi dbi, int node_only, uint32_t node, struct day_keys *dk)
{
    MDB_cursor *c;
    int rc = gw_store_cursor_open(t, dbi, &c);
    if (rc != GW_OK)
        return rc;
    uint8_t seek[GW_BLOB_KEY_LEN] = {0};
    gw_put_be32(seek, node);
    MDB_val k = {sizeof seek, seek}, d;
    int mrc = mdb_cursor_get(c, &k, &d, node_only ? MDB_SET_RANGE : MDB_FIRST);
    for (; mrc == MDB_SUCCESS; mrc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
        if (k.mv_size != GW_BLOB_KEY_LEN) {
            rc = GW_ECORRUPT;
            break;
        }
        if (node_only && gw_get_be32(k.mv_data) != node)
            break;
        if ((rc = day_keys_push(dk, &k, d.mv_size)) != GW_OK)
            break;
    }
    if (rc == GW_OK && mrc != MDB_SUCCESS && mrc != MDB_NOTFOUND)
        rc = gw_store_terr(t, mrc, "partition scan");
    mdb_cursor_close(c);
    return rc;
}

static int node_needs(const struct day_keys *dk, const struct node_keys *nk, int64_t day)
{
    return nk->n > 1 || !is_day_blob(dk->k[nk->first].key, day);
}

int gw_store_day_needs_compact(struct gw_store_txn *t, int64_t day)
{
    if (!t || !t->txn)
        return GW_EINVAL;
    MDB_dbi dbi;
    int have;
    int rc = day_dbi(t, day, &dbi, &have);
    if (rc != GW_OK || !have)
        return rc;
    struct day_keys dk = {0};
    rc = day_list(t, dbi, 0, 0, &dk);
    int need = 0;
    for (size_t i = 0; rc == GW_OK && i < dk.n_nodes && !need; i++)
        need = node_needs(&dk, &dk.nodes[i], day);
    day_keys_free(&dk);
    return rc != GW_OK ? rc : need;
}

/* --------------------------------------------------- re-encoding a node */

struct dcol {                  /* a distinct timestamp array of the day */
    uint64_t hash;
    int64_t *t;
    size_t n;
    size_t off, len;           /* encoded, in out->cols */
};

struct out_ent {
    uint32_t sid;
    uint32_t col;              /* 0: whole block; c: value part of column c - 1 */
    size_t off, len;           /* in out->data */
};

struct node_out {
    struct gw_buf cols, data;
    struct dcol *dc;
    size_t n_dc, cap_dc;
    struct out_ent *e;
    size_t n_e, cap_e;
    uint64_t samples;
};

static void node_out_free(struct node_out *o)
{
    gw_buf_free(&o->cols);
    gw_buf_free(&o->data);
    for (size_t i = 0; i < o->n_dc; i++)
        free(o->dc[i].t);
    free(o->dc);
    free(o->e);
    memset(o, 0, sizeof *o);
}

static int ent_push(struct node_out *o, uint32_t sid, uint32_t col, size_t off, size_t len)
{
    if (o->n_e == o->cap_e) {
        size_t nc = o->cap_e ? o->cap_e * 2 : 256;
        struct out_ent *ne = realloc(o->e, nc * sizeof *ne);
        if (!ne)
            return GW_ENOMEM;
        o->e = ne;
        o->cap_e = nc;
    }
    o->e[o->n_e++] = (struct out_ent){.sid = sid, .col = col, .off = off, .len = len};
    return GW_OK;
}

/* The column (1-based) of timestamps t[0..n): found or encoded. */
static int col_find(struct node_out *o, const int64_t *t, size_t n, uint32_t *col)
{
    uint64_t h = gw_hash64(t, n * sizeof *t);
    for (size_t i = 0; i < o->n_dc; i++) {
        if (o->dc[i].hash == h && o->dc[i].n == n && memcmp(o->dc[i].t, t, n * sizeof *t) == 0) {
            *col = (uint32_t)(i + 1);
            return GW_OK;
        }
    }
    if (o->n_dc == o->cap_dc) {
        size_t nc = o->cap_dc ? o->cap_dc * 2 : 16;
        struct dcol *nd = realloc(o->dc, nc * sizeof *nd);
        if (!nd)
            return GW_ENOMEM;
        o->dc = nd;
        o->cap_dc = nc;
    }
    int64_t *copy = malloc(n * sizeof *copy);
    if (!copy)
        return GW_ENOMEM;
    memcpy(copy, t, n * sizeof *t);
    size_t off = o->cols.len;
    int rc = gw_block_ts_encode(t, n, &o->cols);
    if (rc != GW_OK) {
        free(copy);
        return rc;
    }
    o->dc[o->n_dc] = (struct dcol){.hash = h, .t = copy, .n = n, .off = off, .len = o->cols.len - off};
    *col = (uint32_t)++o->n_dc;
    return GW_OK;
}

/* One source blob while its entries are merged by sid. */
struct src_blob {
    struct gw_store_blob b;
    uint32_t j;                /* next entry */
    int64_t **ct;              /* decoded columns (GWB2) */
    size_t *cn;
};

struct samples {
    int64_t *t;
    double *v;
    size_t n, cap;
};

static int samples_reserve(struct samples *s, size_t more)
{
    if (more > GW_BLOCK_MAX_SAMPLES)
        return GW_ECORRUPT;     /* no block holds more */
    return gw_block_samples_reserve(&s->t, &s->v, &s->cap, s->n + more, 4096);
}

static int src_decode_cols(struct src_blob *sb)
{
    if (!sb->b.v2 || sb->b.ncols == 0)
        return GW_OK;
    sb->ct = calloc(sb->b.ncols, sizeof *sb->ct);
    sb->cn = calloc(sb->b.ncols, sizeof *sb->cn);
    if (!sb->ct || !sb->cn)
        return GW_ENOMEM;
    for (uint32_t c = 0; c < sb->b.ncols; c++) {
        const uint8_t *p;
        size_t len;
        gw_store_blob_col(&sb->b, c, &p, &len);
        uint32_t n;
        int64_t mi, ma;
        if (gw_block_info(p, len, &n, &mi, &ma) != GW_OK || n == 0)
            return GW_ECORRUPT;
        if (!(sb->ct[c] = malloc((size_t)n * sizeof(int64_t))))
            return GW_ENOMEM;
        int rc = gw_block_ts_decode(p, len, sb->ct[c], n, &sb->cn[c]);
        if (rc != GW_OK)
            return rc;
    }
    return GW_OK;
}

static void src_free(struct src_blob *sb, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        for (uint32_t c = 0; sb[i].ct && c < sb[i].b.ncols; c++)
            free(sb[i].ct[c]);
        free(sb[i].ct);
        free(sb[i].cn);
    }
    free(sb);
}

/* Appends the samples of entry j of sb to s. */
static int entry_decode(const struct src_blob *sb, uint32_t j, struct samples *s)
{
    const uint8_t *e, *col;
    size_t elen, clen;
    int rc = gw_store_blob_split(&sb->b, j, &e, &elen, &col, &clen);
    if (rc != GW_OK)
        return rc;
    if (!col) {
        uint32_t n;
        int64_t mi, ma;
        if (gw_block_info(e, elen, &n, &mi, &ma) != GW_OK)
            return GW_ECORRUPT;
        if ((rc = samples_reserve(s, n)) != GW_OK)
            return rc;
        size_t got = 0;
        rc = gw_block_decode(e, elen, s->t + s->n, s->v + s->n, s->cap - s->n, &got);
        if (rc == GW_OK && got != n)
            rc = GW_ECORRUPT;
        if (rc == GW_OK)
            s->n += got;
        return rc;
    }
    /* the column's index: its offset among the blob's columns */
    uint32_t c = 0;
    while (c < sb->b.ncols) {
        const uint8_t *p;
        size_t len;
        gw_store_blob_col(&sb->b, c, &p, &len);
        if (p == col && len == clen)
            break;
        c++;
    }
    if (c == sb->b.ncols)
        return GW_ECORRUPT;
    size_t n = sb->cn[c];
    if ((rc = samples_reserve(s, n)) != GW_OK)
        return rc;
    if ((rc = gw_block_values_decode(e, elen, n, s->v + s->n)) != GW_OK)
        return rc;
    memcpy(s->t + s->n, sb->ct[c], n * sizeof(int64_t));
    s->n += n;
    return GW_OK;
}

/* Keeps the entries of sid as they are (whole blocks): for a series whose
 * stored blocks overlap in time, so readers meet them as before. */
static int keep_entries(struct node_out *o, struct src_blob *sb, size_t nsb, uint32_t sid, struct gw_buf *scratch)
{
    for (size_t i = 0; i < nsb; i++) {
        for (uint32_t j = gw_store_blob_lower(&sb[i].b, sid); j < sb[i].b.n && gw_store_blob_sid(&sb[i].b, j) == sid;
             j++) {
            const uint8_t *p;
            size_t len;
            int rc = gw_store_blob_resolve(&sb[i].b, j, scratch, &p, &len);
            if (rc != GW_OK)
                return rc;
            size_t off = o->data.len;
            if ((rc = gw_buf_append(&o->data, p, len)) != GW_OK)
                return rc;
            if ((rc = ent_push(o, sid, 0, off, len)) != GW_OK)
                return rc;
        }
    }
    return GW_OK;
}

/* Encodes the day's samples s of sid (strictly increasing) as value parts
 * of at most GW_BLOCK_MAX_SAMPLES. */
static int encode_series(struct node_out *o, uint32_t sid, const struct samples *s)
{
    for (size_t from = 0; from < s->n;) {
        size_t n = s->n - from < GW_BLOCK_MAX_SAMPLES ? s->n - from : GW_BLOCK_MAX_SAMPLES;
        uint32_t col;
        int rc = col_find(o, s->t + from, n, &col);
        if (rc != GW_OK)
            return rc;
        size_t off = o->data.len;
        if ((rc = gw_block_values_encode(s->v + from, n, &o->data)) != GW_OK)
            return rc;
        if ((rc = ent_push(o, sid, col, off, o->data.len - off)) != GW_OK)
            return rc;
        from += n;
    }
    return GW_OK;
}

/* The smallest sid at any source blob's cursor; 0 when all are done. */
static int next_sid(const struct src_blob *sb, size_t n, uint32_t *sid)
{
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        if (sb[i].j >= sb[i].b.n)
            continue;
        uint32_t x = gw_store_blob_sid(&sb[i].b, sb[i].j);
        if (!any || x < *sid)
            *sid = x;
        any = 1;
    }
    return any;
}

/* Merges the parsed source blobs into o, series by series. */
static int merge_node(struct src_blob *sb, size_t nsb, struct node_out *o)
{
    struct samples s = {0};
    struct gw_buf scratch;
    gw_buf_init(&scratch, 0);
    uint32_t sid = 0;
    int rc = GW_OK;
    while (rc == GW_OK && next_sid(sb, nsb, &sid)) {
        s.n = 0;
        int disorder = 0;
        for (size_t i = 0; i < nsb && rc == GW_OK; i++) {
            for (; sb[i].j < sb[i].b.n && gw_store_blob_sid(&sb[i].b, sb[i].j) == sid && rc == GW_OK; sb[i].j++) {
                size_t n0 = s.n;
                rc = entry_decode(&sb[i], sb[i].j, &s);
                for (size_t k = n0 ? n0 : 1; rc == GW_OK && k < s.n && !disorder; k++)
                    disorder = s.t[k] <= s.t[k - 1];
            }
        }
        if (rc != GW_OK)
            break;
        o->samples += s.n;
        rc = disorder ? keep_entries(o, sb, nsb, sid, &scratch) : encode_series(o, sid, &s);
    }
    free(s.t);
    free(s.v);
    gw_buf_free(&scratch);
    return rc;
}

/* Reads and re-encodes the blobs keys[0..n) of one node (read txn). */
static int node_encode(struct gw_store_txn *t, MDB_dbi dbi, const struct src_key *keys, size_t n, struct node_out *o)
{
    struct src_blob *sb = calloc(n, sizeof *sb);
    if (!sb)
        return GW_ENOMEM;
    int rc = GW_OK;
    for (size_t i = 0; i < n && rc == GW_OK; i++) {
        MDB_val k = {GW_BLOB_KEY_LEN, (void *)keys[i].key}, d;
        int mrc = mdb_get(t->txn, dbi, &k, &d);
        if (mrc != MDB_SUCCESS) {
            rc = mrc == MDB_NOTFOUND ? GW_ENOTFOUND : gw_store_terr(t, mrc, "blob get");
            break;
        }
        if (d.mv_size != keys[i].vlen) {
            rc = GW_ENOTFOUND;  /* rewritten since the listing */
            break;
        }
        if ((rc = gw_store_blob_parse(d.mv_data, d.mv_size, &sb[i].b)) == GW_OK)
            rc = src_decode_cols(&sb[i]);
    }
    if (rc == GW_OK)
        rc = merge_node(sb, n, o);
    src_free(sb, n);
    return rc;
}

/* --------------------------------------------------- swapping a node */

struct swap_ctx {
    int64_t day, now_ms;
    uint32_t node;
    const struct src_key *keys;
    size_t n;
    const struct node_out *o;
    struct gw_store_blob_col *cols;
    struct gw_store_blob_entry *ents;
    uint64_t entries_before;    /* directory entries of the source blobs */
    int raced;                  /* out: the keys changed */
    uint64_t bytes_before, bytes_after, payload_before, payload_after;
};

static uint64_t blob_payload(const void *v, size_t len)
{
    struct gw_store_blob b;
    if (gw_store_blob_parse_known(v, len, &b) != GW_OK)
        return 0;
    return (uint64_t)b.data_len + (b.v2 ? (uint64_t)(b.data - b.cols) : 0);
}

static int meta_add(struct gw_store_txn *t, int64_t day, const char *what, uint64_t before, uint64_t after)
{
    char key[64];
    snprintf(key, sizeof key, "stat.%lld.%s", (long long)day, what);
    uint64_t v = 0;
    if (gw_store_meta_get_u64(t, key, &v) != GW_OK)
        v = 0;
    v = v + after >= before ? v + after - before : 0;
    return gw_store_meta_put_u64(t, key, v);
}

/* The day's rollups (gw_store_rollup_mark) record how many raw blobs they
 * were made from; a swap changes that count but not one sample, so a
 * rollup that matched the count before the swap is moved to the count
 * after it. A rollup that did not match (late data since) stays stale. */
static int rollups_follow(struct gw_store_txn *t, int64_t day, uint64_t before, uint64_t after)
{
    static const int res[] = {GW_ROLLUP_5M, GW_ROLLUP_1H};
    for (size_t i = 0; i < sizeof res / sizeof res[0]; i++) {
        uint64_t m;
        int rc = gw_store_rollup_marker(t, res[i], day, &m);
        if (rc == GW_ENOTFOUND || (rc == GW_OK && m != before))
            continue;
        if (rc == GW_OK)
            rc = gw_store_rollup_mark(t, res[i], day, after);
        if (rc != GW_OK)
            return rc;
    }
    return GW_OK;
}

static int swap_fn(struct gw_store_txn *t, void *ud)
{
    struct swap_ctx *c = ud;
    c->raced = 0;
    c->bytes_before = c->payload_before = 0;
    MDB_dbi dbi;
    int have;
    int rc = day_dbi(t, c->day, &dbi, &have);
    if (rc != GW_OK)
        return rc;
    struct day_keys now = {0};
    if (have)
        rc = day_list(t, dbi, 1, c->node, &now);
    int same = have && rc == GW_OK && now.n == c->n;
    for (size_t i = 0; same && i < c->n; i++)
        same = memcmp(now.k[i].key, c->keys[i].key, GW_BLOB_KEY_LEN) == 0 && now.k[i].vlen == c->keys[i].vlen;
    day_keys_free(&now);
    if (rc != GW_OK)
        return rc;
    if (!same) {
        c->raced = 1;
        return GW_OK;   /* commits nothing */
    }
    uint64_t blobs_before = 0, blobs_after = 0;
    rc = gw_store_raw_day_blobs(t, c->day, &blobs_before);
    for (size_t i = 0; i < c->n && rc == GW_OK; i++) {
        MDB_val k = {GW_BLOB_KEY_LEN, (void *)c->keys[i].key}, d;
        int mrc = mdb_get(t->txn, dbi, &k, &d);
        if (mrc == MDB_SUCCESS) {
            c->bytes_before += d.mv_size;
            c->payload_before += blob_payload(d.mv_data, d.mv_size);
            mrc = mdb_del(t->txn, dbi, &k, NULL);
        }
        if (mrc != MDB_SUCCESS)
            rc = gw_store_terr(t, mrc, "blob delete");
    }
    if (rc == GW_OK)
        rc = gw_store_blob_put_day(t, c->node, c->day, c->cols, c->o->n_dc, c->ents, c->o->n_e);
    if (rc == GW_OK)
        rc = gw_store_raw_day_blobs(t, c->day, &blobs_after);
    if (rc == GW_OK)
        rc = rollups_follow(t, c->day, blobs_before, blobs_after);
    c->payload_after = c->o->cols.len + c->o->data.len;
    for (size_t i = 0; i < c->o->n_e; i++)
        c->payload_after += gw_uvarint_len(c->o->e[i].col);
    if (rc == GW_OK)
        rc = meta_add(t, c->day, "bytes", c->payload_before, c->payload_after);
    if (rc == GW_OK)
        rc = meta_add(t, c->day, "blocks", c->entries_before, c->o->n_e);
    if (rc == GW_OK) {
        char key[64];
        snprintf(key, sizeof key, "compact.%lld", (long long)c->day);
        rc = gw_store_meta_put_u64(t, key, (uint64_t)c->now_ms);
    }
    return rc;
}

/* Entries before (counted while the source blobs are read) for the meta
 * block count. */
static uint64_t count_entries(struct gw_store_txn *t, MDB_dbi dbi, const struct src_key *keys, size_t n)
{
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        MDB_val k = {GW_BLOB_KEY_LEN, (void *)keys[i].key}, d;
        struct gw_store_blob b;
        if (mdb_get(t->txn, dbi, &k, &d) == MDB_SUCCESS && gw_store_blob_parse_known(d.mv_data, d.mv_size, &b) == GW_OK)
            total += b.n;
    }
    return total;
}

/* Compacts one node of day: encode in a read txn, swap in a write txn. */
static int compact_node(struct gw_store *s, int64_t day, int64_t now_ms, const struct src_key *keys, size_t n,
                        uint32_t node, struct gw_store_compact_stats *st, struct gw_error *err)
{
    struct node_out o;
    memset(&o, 0, sizeof o);
    gw_buf_init(&o.cols, 0);
    gw_buf_init(&o.data, 0);
    struct gw_store_txn *t;
    int rc = gw_store_read_begin(s, &t, err);
    if (rc != GW_OK)
        return rc;
    MDB_dbi dbi;
    int have;
    uint64_t entries_before = 0;
    rc = day_dbi(t, day, &dbi, &have);
    if (rc == GW_OK && have) {
        entries_before = count_entries(t, dbi, keys, n);
        rc = node_encode(t, dbi, keys, n, &o);
    }
    gw_store_read_end(t);
    if (rc == GW_ENOTFOUND) {   /* a blob went away since the listing */
        st->node_days_raced++;
        rc = GW_OK;
        have = 0;
    }
    if (rc != GW_OK || !have) {
        node_out_free(&o);
        return rc == GW_OK ? GW_OK : gw_error_set(err, rc, "cannot re-encode node %u of day %lld: %s", node,
                                                  (long long)day, gw_strerror(rc));
    }
    struct swap_ctx c = {.day = day, .now_ms = now_ms, .node = node, .keys = keys, .n = n, .o = &o,
                         .entries_before = entries_before};
    c.cols = malloc((o.n_dc ? o.n_dc : 1) * sizeof *c.cols);
    c.ents = malloc((o.n_e ? o.n_e : 1) * sizeof *c.ents);
    if (!c.cols || !c.ents) {
        rc = gw_error_set(err, GW_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < o.n_dc; i++)
        c.cols[i] = (struct gw_store_blob_col){.col = o.cols.data + o.dc[i].off, .len = o.dc[i].len};
    for (size_t i = 0; i < o.n_e; i++)
        c.ents[i] = (struct gw_store_blob_entry){
            .sid = o.e[i].sid, .block = o.data.data + o.e[i].off, .len = o.e[i].len, .col = o.e[i].col};
    if (o.n_e == 0) {
        rc = GW_OK;     /* nothing to write: an empty blob would be lost anyway */
        goto out;
    }
    rc = gw_store_write(s, swap_fn, &c, err);
    if (rc == GW_OK && c.raced) {
        st->node_days_raced++;
    } else if (rc == GW_OK) {
        st->node_days++;
        st->blobs_before += n;
        st->blobs_after++;
        st->bytes_before += c.bytes_before;
        st->bytes_after += c.payload_after + GW_BLOB3_HDR + GW_BLOB3_COL * o.n_dc + GW_BLOB3_ENT * o.n_e;
        st->samples += o.samples;
        st->cols_after += o.n_dc;
        st->col_bytes_after += o.cols.len;
    }
out:
    free(c.cols);
    free(c.ents);
    node_out_free(&o);
    return rc;
}

int gw_store_compact_day(struct gw_store *s, int64_t day, int64_t now_ms, struct gw_store_compact_stats *st,
                         gw_store_progress_cb cb, void *ud, struct gw_error *err)
{
    if (!s || !st)
        return gw_error_set(err, GW_EINVAL, "gw_store_compact_day: missing argument");
    if (s->read_only)
        return gw_error_set(err, GW_EINVAL, "the store is open read-only");
    if (day > INT64_MAX / GW_DAY_MS - 1 || day < INT64_MIN / GW_DAY_MS + 1)
        return gw_error_set(err, GW_EINVAL, "day %lld is out of range", (long long)day);
    struct gw_store_txn *t;
    int rc = gw_store_read_begin(s, &t, err);
    if (rc != GW_OK)
        return rc;
    MDB_dbi dbi;
    int have;
    struct day_keys dk = {0};
    rc = day_dbi(t, day, &dbi, &have);
    if (rc == GW_OK && have)
        rc = day_list(t, dbi, 0, 0, &dk);
    gw_store_read_end(t);
    if (rc != GW_OK) {
        day_keys_free(&dk);
        return gw_error_set(err, rc, "cannot list the blobs of day %lld: %s", (long long)day, gw_strerror(rc));
    }
    for (size_t i = 0; i < dk.n_nodes && rc == GW_OK; i++) {
        const struct node_keys *nk = &dk.nodes[i];
        if (node_needs(&dk, nk, day))
            rc = compact_node(s, day, now_ms, dk.k + nk->first, nk->n, nk->node, st, err);
        if (cb)
            cb(ud, i + 1, dk.n_nodes, st->samples);
    }
    day_keys_free(&dk);
    return rc;
}

/* ------------------------------------------------------- dead series */

int gw_store_sids_with_data(struct gw_store_txn *t, uint8_t *bits, uint64_t nbits)
{
    if (!t || !t->txn || !bits)
        return GW_EINVAL;
    struct part_vec pv = {0};
    int rc = gw_store_parts_collect(t, INT64_MIN, INT64_MAX, &pv);
    for (size_t i = 0; rc == GW_OK && i < pv.n; i++) {
        MDB_cursor *c;
        if ((rc = gw_store_cursor_open(t, pv.v[i].dbi, &c)) != GW_OK)
            break;
        MDB_val k, d;
        int mrc;
        for (mrc = mdb_cursor_get(c, &k, &d, MDB_FIRST); mrc == MDB_SUCCESS;
             mrc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
            struct gw_store_blob b;
            if (k.mv_size != GW_BLOB_KEY_LEN || gw_store_blob_parse(d.mv_data, d.mv_size, &b) != GW_OK) {
                rc = GW_ECORRUPT;
                break;
            }
            for (uint32_t j = 0; j < b.n; j++) {
                uint32_t sid = gw_store_blob_sid(&b, j);
                if (sid < nbits)
                    bits[sid >> 3] |= (uint8_t)(1u << (sid & 7));
            }
        }
        if (rc == GW_OK && mrc != MDB_NOTFOUND)
            rc = gw_store_terr(t, mrc, "partition scan");
        mdb_cursor_close(c);
    }
    free(pv.v);
    return rc;
}

/* Deletes pair id from pairs and pair_ids when no postings are left. */
static int pair_gc(struct gw_store_txn *t, const MDB_dbi *db, uint32_t id, uint64_t *dropped)
{
    uint8_t ib[4];
    gw_put_be32(ib, id);
    MDB_val k = {4, ib}, d;
    int mrc = mdb_get(t->txn, db[2], &k, &d);
    if (mrc == MDB_SUCCESS)
        return GW_OK;    /* still used */
    if (mrc != MDB_NOTFOUND)
        return gw_store_terr(t, mrc, "postings get");
    MDB_val text;
    int rc = gw_store_pair_text(t, db[1], id, &text);
    if (rc == GW_ENOTFOUND)
        return GW_OK;
    if (rc != GW_OK)
        return rc;
    const char *p = text.mv_data;
    const char *nul = memchr(p, 0, text.mv_size);
    if (!nul)
        return GW_ECORRUPT;
    size_t nl = (size_t)(nul - p);
    uint8_t key[GW_KEY_MAX];
    size_t klen;
    if ((rc = gw_store_pair_key(key, &klen, p, nl, nul + 1, text.mv_size - nl - 1)) != GW_OK)
        return rc;
    MDB_val pk = {klen, key};
    mrc = mdb_get(t->txn, db[0], &pk, &d);
    if (mrc == MDB_SUCCESS && d.mv_size == 4 && gw_get_be32(d.mv_data) == id)
        mrc = mdb_del(t->txn, db[0], &pk, NULL);
    else if (mrc == MDB_SUCCESS)
        mrc = MDB_NOTFOUND;  /* the key belongs to another id: leave it */
    if (mrc != MDB_SUCCESS && mrc != MDB_NOTFOUND)
        return gw_store_terr(t, mrc, "pair delete");
    mrc = mdb_del(t->txn, db[1], &k, NULL);
    if (mrc != MDB_SUCCESS && mrc != MDB_NOTFOUND)
        return gw_store_terr(t, mrc, "pair id delete");
    if (dropped)
        (*dropped)++;
    return GW_OK;
}

int gw_store_series_delete_gc(struct gw_store_txn *t, uint64_t sid, uint64_t *pairs_dropped)
{
    static const int which[] = {DB_PAIRS, DB_PAIR_IDS, DB_POSTINGS, DB_SERIES};
    MDB_dbi db[4];
    int rc = gw_store_fixed_dbis(t, 1, which, 4, db);
    if (rc != GW_OK)
        return rc;
    if (sid > UINT32_MAX)
        return GW_ENOTFOUND;
    uint8_t kb[8];
    gw_put_be64(kb, sid);
    MDB_val k = {8, kb}, d;
    int mrc = mdb_get(t->txn, db[3], &k, &d);
    if (mrc != MDB_SUCCESS)
        return gw_store_terr(t, mrc, "series get");
    struct gw_store_rec r;
    if ((rc = gw_store_rec_parse(d.mv_data, d.mv_size, &r)) != GW_OK)
        return rc;
    uint32_t ids[GW_STORE_GC_PAIRS];
    size_t nid = 0, off = 0;
    for (uint64_t i = 0; i < r.n && nid < GW_STORE_GC_PAIRS; i++) {
        if ((rc = gw_store_rec_next_id(&r, &off, &ids[nid])) != GW_OK)
            return rc;
        nid++;
    }
    if ((rc = gw_store_series_delete(t, sid)) != GW_OK)
        return rc;
    for (size_t i = 0; i < nid && rc == GW_OK; i++)
        rc = pair_gc(t, db, ids[i], pairs_dropped);
    return rc;
}

/* ------------------------------------------------ the compacting copy */

static uint64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

int gw_store_copy_compact(const char *dir, uint64_t *before, uint64_t *after, struct gw_error *err)
{
    char data[4096], tmp[4096];
    if (!dir || (size_t)snprintf(data, sizeof data, "%s/data.mdb", dir) >= sizeof data ||
        (size_t)snprintf(tmp, sizeof tmp, "%s/%s", dir, GW_STORE_COMPACT_TMP) >= sizeof tmp)
        return gw_error_set(err, GW_EINVAL, "store directory name too long");
    if (before)
        *before = file_size(data);
    MDB_env *env = NULL;
    int mrc = mdb_env_create(&env);
    if (mrc == MDB_SUCCESS)
        mrc = mdb_env_set_maxdbs(env, 1100);
    if (mrc == MDB_SUCCESS)
        mrc = mdb_env_open(env, dir, MDB_RDONLY | MDB_NOTLS, 0644);
    if (mrc != MDB_SUCCESS) {
        if (env)
            mdb_env_close(env);
        return gw_error_set(err, gw_store_map_mdb(mrc), "cannot open store %s: %s", dir, mdb_strerror(mrc));
    }
    (void)unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        mdb_env_close(env);
        return gw_error_set(err, GW_EIO, "cannot create %s: %s", tmp, strerror(errno));
    }
    mrc = mdb_env_copyfd2(env, fd, MDB_CP_COMPACT);
    mdb_env_close(env);
    int rc = GW_OK;
    if (mrc != MDB_SUCCESS)
        rc = gw_error_set(err, mrc == ENOSPC ? GW_EFULL : GW_EIO, "compacting copy to %s failed: %s", tmp,
                          mdb_strerror(mrc));
    else if (fsync(fd) != 0)
        rc = gw_error_set(err, GW_EIO, "cannot sync %s: %s", tmp, strerror(errno));
    if (close(fd) != 0 && rc == GW_OK)
        rc = gw_error_set(err, GW_EIO, "cannot close %s: %s", tmp, strerror(errno));
    if (rc == GW_OK && rename(tmp, data) != 0)
        rc = gw_error_set(err, GW_EIO, "cannot rename %s to %s: %s", tmp, data, strerror(errno));
    if (rc != GW_OK) {
        (void)unlink(tmp);
        return rc;
    }
    if (gw_store_fsync_dir(dir) != 0)
        return gw_error_set(err, GW_EIO, "cannot sync directory %s: %s", dir, strerror(errno));
    if (after)
        *after = file_size(data);
    return GW_OK;
}
