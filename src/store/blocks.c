/* blocks.c - blobs of blocks in the day partitions of the LMDB series
 * store: writing a node's blob for a window ("GWB1"/"GWB2", layouts at the
 * top of keys.c) and reading a series' blocks back, whole or as timestamp
 * column and value part. A read transaction checks each blob's directory
 * once (the snapshot cannot change under it). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lmdb.h>

#include "gpuwatch/block.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/store.h"
#include "store/store_int.h"

static size_t seen_slot(const void *p, size_t cap)
{
    uint64_t h = (uint64_t)(uintptr_t)p * UINT64_C(0x9e3779b97f4a7c15);
    return (size_t)(h >> 32) & (cap - 1);
}

static int seen_has(const struct gw_store_txn *t, const void *p)
{
    if (!t->seen_n)
        return 0;
    for (size_t i = seen_slot(p, t->seen_cap);; i = (i + 1) & (t->seen_cap - 1)) {
        if (t->seen[i] == p)
            return 1;
        if (!t->seen[i])
            return 0;
    }
}

/* Remembers p; on allocation failure nothing is remembered (the next
 * parse checks again). */
static void seen_add(struct gw_store_txn *t, const void *p)
{
    if (2 * (t->seen_n + 1) > t->seen_cap) {
        size_t nc = t->seen_cap ? 2 * t->seen_cap : 64;
        const void **nv = calloc(nc, sizeof *nv);
        if (!nv)
            return;
        for (size_t i = 0; i < t->seen_cap; i++) {
            if (!t->seen[i])
                continue;
            size_t j = seen_slot(t->seen[i], nc);
            while (nv[j])
                j = (j + 1) & (nc - 1);
            nv[j] = t->seen[i];
        }
        free(t->seen);
        t->seen = nv;
        t->seen_cap = nc;
    }
    size_t j = seen_slot(p, t->seen_cap);
    while (t->seen[j]) {
        if (t->seen[j] == p)
            return;
        j = (j + 1) & (t->seen_cap - 1);
    }
    t->seen[j] = p;
    t->seen_n++;
}

/* gw_store_blob_parse, with the directory checks done once per blob and
 * read transaction: a blob is visited once per selected series, and its
 * bytes cannot change while the snapshot lives. Write transactions (whose
 * pages may change under a pointer) always check. */
static int blob_parse_txn(struct gw_store_txn *t, const MDB_val *d, struct gw_store_blob *b)
{
    if (t->write)
        return gw_store_blob_parse(d->mv_data, d->mv_size, b);
    if (seen_has(t, d->mv_data))
        return gw_store_blob_parse_known(d->mv_data, d->mv_size, b);
    int rc = gw_store_blob_parse(d->mv_data, d->mv_size, b);
    if (rc == GW_OK)
        seen_add(t, d->mv_data);
    return rc;
}

/* Entry j of blob b as a whole block (joined into the txn's buffer when it
 * is a value part; valid until the next call). */
static int blob_entry(struct gw_store_txn *t, const struct gw_store_blob *b, uint32_t j, const uint8_t **p,
                      size_t *len)
{
    if (!t->join_on) {
        gw_buf_init(&t->join, 0);
        t->join_on = 1;
    }
    return gw_store_blob_resolve(b, j, &t->join, p, len);
}

/* Writes one blob: "GWB1" when cols is NULL, else "GWB3" ("GWB2" when
 * sums is 0; layouts in keys.c). seq_fixed > UINT32_MAX: the next seq of
 * the node and window; else that seq (a day blob, written by compaction
 * over a key it just deleted). */
static int blob_put(struct gw_store_txn *t, uint32_t node_id, int64_t window_start,
                    const struct gw_store_blob_col *cols, size_t ncols,
                    const struct gw_store_blob_entry *entries, size_t n, uint64_t seq_fixed, int sums)
{
    int rc = gw_store_need_write(t);
    if (rc != GW_OK)
        return rc;
    if (n == 0)
        return GW_OK;
    if (!entries || (ncols && !cols))
        return GW_EINVAL;
    int v2 = cols != NULL;
    sums = v2 && sums;
    size_t hdr = sums ? GW_BLOB3_HDR : v2 ? GW_BLOB2_HDR : GW_BLOB_HDR;
    size_t cent = sums ? GW_BLOB3_COL : 4, ent = sums ? GW_BLOB3_ENT : GW_BLOB_ENT;
    size_t hdr0 = hdr;
    if (ncols > (GW_BLOB_MAX - hdr) / cent)
        return GW_ELIMIT;
    hdr += ncols * cent;
    if (n > (GW_BLOB_MAX - hdr) / ent)
        return GW_ELIMIT;
    size_t total = hdr + n * ent;
    for (size_t c = 0; c < ncols; c++) {
        if (!cols[c].col && cols[c].len)
            return GW_EINVAL;
        if (cols[c].len > GW_BLOB_MAX - total)
            return GW_ELIMIT;
        total += cols[c].len;
    }
    for (size_t i = 0; i < n; i++) {
        if (entries[i].sid > UINT32_MAX)
            return GW_ELIMIT;
        if (i && entries[i].sid < entries[i - 1].sid)
            return GW_EINVAL;
        if (!entries[i].block && entries[i].len)
            return GW_EINVAL;
        if (v2 && entries[i].col > ncols)
            return GW_EINVAL;
        size_t len = entries[i].len + (v2 ? gw_uvarint_len(entries[i].col) : 0);
        if (len > GW_BLOB_MAX - total)
            return GW_ELIMIT;
        total += len;
    }
    MDB_dbi dbi;
    if ((rc = gw_store_part_for_write(t, gw_store_day_of(window_start), &dbi)) != GW_OK)
        return rc;
    MDB_cursor *c;
    if ((rc = gw_store_cursor_open(t, dbi, &c)) != GW_OK)
        return rc;
    /* seq: 1 + the largest one of this node and window, found just before
     * (node, window, 0xffffffff). */
    uint8_t key[GW_BLOB_KEY_LEN];
    gw_store_blob_key(key, node_id, window_start, UINT32_MAX);
    MDB_val k = {sizeof key, key}, d;
    uint32_t seq = 0;
    int mrc = seq_fixed <= UINT32_MAX ? MDB_NOTFOUND : mdb_cursor_get(c, &k, &d, MDB_SET_RANGE);
    if (seq_fixed <= UINT32_MAX) {
        seq = (uint32_t)seq_fixed;
        goto put;
    }
    if (mrc == MDB_SUCCESS) {
        if (k.mv_size == sizeof key && memcmp(k.mv_data, key, sizeof key) == 0) {
            rc = GW_ELIMIT; /* seq space of this window used up */
            goto out;
        }
        mrc = mdb_cursor_get(c, &k, &d, MDB_PREV);
    } else if (mrc == MDB_NOTFOUND) {
        mrc = mdb_cursor_get(c, &k, &d, MDB_LAST);
    }
    if (mrc == MDB_SUCCESS) {
        if (k.mv_size == sizeof key && memcmp(k.mv_data, key, 12) == 0)
            seq = gw_get_be32((const uint8_t *)k.mv_data + 12) + 1;
    } else if (mrc != MDB_NOTFOUND) {
        rc = gw_store_terr(t, mrc, "blob seek");
        goto out;
    }
put:
    gw_store_blob_key(key, node_id, window_start, seq);
    k.mv_data = key;
    k.mv_size = sizeof key;
    d.mv_data = NULL;
    d.mv_size = total;
    mrc = mdb_cursor_put(c, &k, &d, MDB_RESERVE);
    if (mrc != MDB_SUCCESS) {
        rc = gw_store_terr(t, mrc, "blob put");
        goto out;
    }
    uint8_t *w = d.mv_data;
    memcpy(w, sums ? "GWB3" : v2 ? "GWB2" : "GWB1", 4);
    gw_put_be32(w + hdr0 - (v2 ? 8 : 4), (uint32_t)n);
    if (v2)
        gw_put_be32(w + hdr0 - 4, (uint32_t)ncols);
    uint8_t *dir = w + hdr;
    uint8_t *area = dir + n * ent;
    uint32_t end = 0;
    for (size_t i = 0; i < ncols; i++) {
        if (cols[i].len)
            memcpy(area + end, cols[i].col, cols[i].len);
        gw_put_be32(w + hdr0 + i * cent, end + (uint32_t)cols[i].len);
        if (sums)
            gw_put_be32(w + hdr0 + i * cent + 4, gw_store_blob_sum(area + end, cols[i].len));
        end += (uint32_t)cols[i].len;
    }
    area += end;
    end = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t start = end;
        if (v2) {
            size_t k2 = gw_uvarint_put(area + end, entries[i].col);
            end += (uint32_t)k2;
        }
        if (entries[i].len)
            memcpy(area + end, entries[i].block, entries[i].len);
        end += (uint32_t)entries[i].len;
        gw_put_be32(dir + i * ent, (uint32_t)entries[i].sid);
        gw_put_be32(dir + i * ent + 4, end);
        if (sums)
            gw_put_be32(dir + i * ent + 8, gw_store_blob_sum(area + start, end - start));
    }
    if (sums) /* header and directories, from n on */
        gw_put_be32(w + 4, gw_store_blob_sum(w + 8, (size_t)(dir + n * ent - (w + 8))));
out:
    mdb_cursor_close(c);
    return rc;
}

int gw_store_blob_put(struct gw_store_txn *t, uint32_t node_id, int64_t window_start,
                      const struct gw_store_blob_entry *entries, size_t n)
{
    return blob_put(t, node_id, window_start, NULL, 0, entries, n, UINT64_MAX, 0);
}

int gw_store_blob_put_cols(struct gw_store_txn *t, uint32_t node_id, int64_t window_start,
                           const struct gw_store_blob_col *cols, size_t ncols,
                           const struct gw_store_blob_entry *entries, size_t n)
{
    static const struct gw_store_blob_col none;
    return blob_put(t, node_id, window_start, cols ? cols : &none, cols ? ncols : 0, entries, n, UINT64_MAX, 1);
}

int gw_store_blob_put_cols_v2(struct gw_store_txn *t, uint32_t node_id, int64_t window_start,
                              const struct gw_store_blob_col *cols, size_t ncols,
                              const struct gw_store_blob_entry *entries, size_t n)
{
    static const struct gw_store_blob_col none;
    return blob_put(t, node_id, window_start, cols ? cols : &none, cols ? ncols : 0, entries, n, UINT64_MAX, 0);
}

int gw_store_blob_put_day(struct gw_store_txn *t, uint32_t node_id, int64_t day,
                          const struct gw_store_blob_col *cols, size_t ncols,
                          const struct gw_store_blob_entry *entries, size_t n)
{
    static const struct gw_store_blob_col none;
    if (day > INT64_MAX / GW_DAY_MS || day < INT64_MIN / GW_DAY_MS)
        return GW_EINVAL;
    return blob_put(t, node_id, day * GW_DAY_MS, cols ? cols : &none, cols ? ncols : 0, entries, n,
                    GW_STORE_DAY_SEQ, 1);
}

/* The visit of one blob's entries of sid (see blocks_scan). Sets *done when
 * the scan must stop (a callback said so, or the first block was found
 * with no callback) and *found when sid has an entry. */
static int blob_visit(struct gw_store_txn *t, const MDB_val *d, int64_t ws, uint64_t sid, gw_store_block_cb cb,
                      gw_store_part_cb pcb, void *ud, int *done, int *found)
{
    struct gw_store_blob b;
    int rc = blob_parse_txn(t, d, &b);
    if (rc != GW_OK)
        return rc;
    for (uint32_t j = gw_store_blob_lower(&b, (uint32_t)sid); j < b.n && gw_store_blob_sid(&b, j) == sid; j++) {
        *found = 1;
        if (!cb && !pcb) {
            *done = 1;
            return GW_OK;
        }
        const uint8_t *p;
        size_t len;
        int crc;
        if (pcb) {
            struct gw_store_block_part bp = {.window_start = ws};
            if ((rc = gw_store_blob_split(&b, j, &p, &len, &bp.col, &bp.col_len)) != GW_OK) {
                *done = 1;
                return rc;
            }
            if (bp.col) {
                bp.val = p;
                bp.val_len = len;
            } else {
                bp.block = p;
                bp.len = len;
            }
            crc = pcb(ud, &bp);
        } else {
            if ((rc = blob_entry(t, &b, j, &p, &len)) != GW_OK) {
                *done = 1;
                return rc;
            }
            crc = cb(ud, ws, p, len);
        }
        if (crc != 0) {
            *done = 1;
            return crc < 0 ? crc : GW_OK;
        }
    }
    return GW_OK;
}

/* Visits node_id's blobs of one partition from key seek on, while the key
 * starts with the first `prefix` bytes of seek and its window starts at or
 * before maxt. */
static int part_scan(struct gw_store_txn *t, MDB_dbi dbi, const uint8_t *seek, size_t prefix, int64_t maxt,
                     uint64_t sid, gw_store_block_cb cb, gw_store_part_cb pcb, void *ud, int *done, int *found)
{
    MDB_cursor *c;
    int rc = GW_OK, mrc = mdb_cursor_open(t->txn, dbi, &c);
    if (mrc != MDB_SUCCESS)
        return gw_store_terr(t, mrc, "partition cursor");
    MDB_val k = {GW_BLOB_KEY_LEN, (void *)seek}, d;
    for (mrc = mdb_cursor_get(c, &k, &d, MDB_SET_RANGE); mrc == MDB_SUCCESS && !*done;
         mrc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
        if (k.mv_size != GW_BLOB_KEY_LEN) {
            rc = GW_ECORRUPT;
            break;
        }
        if (memcmp(k.mv_data, seek, prefix) != 0)
            break;
        int64_t ws = gw_store_unbias(gw_get_be64((const uint8_t *)k.mv_data + 4));
        if (ws > maxt)
            break;
        if ((rc = blob_visit(t, &d, ws, sid, cb, pcb, ud, done, found)) != GW_OK)
            break;
    }
    /* NOTFOUND also covers a partition another process dropped. */
    if (rc == GW_OK && !*done && mrc != MDB_SUCCESS && mrc != MDB_NOTFOUND)
        rc = gw_store_terr(t, mrc, "blob scan");
    mdb_cursor_close(c);
    return rc;
}

/* Shared by blocks_get, block_parts_get and blocks_any: cb == NULL and
 * pcb == NULL means "stop at the first block and return 1". Blobs are
 * visited in key order (day, window start, seq), the blocks of a blob in
 * directory order. A compacted day's blob is keyed at the day's start
 * (seq >= GW_STORE_DAY_SEQ) and spans the whole day, so in the first
 * partition the day blobs are visited before the windows from mint_lo on
 * (they precede those in key order too). */
static int blocks_scan(struct gw_store_txn *t, uint32_t node_id, uint64_t sid, int64_t mint_lo, int64_t maxt,
                       gw_store_block_cb cb, gw_store_part_cb pcb, void *ud)
{
    if (!t || !t->txn)
        return GW_EINVAL;
    if (mint_lo > maxt || sid > UINT32_MAX)
        return 0;
    struct part_vec pv = {0};
    int64_t first_day = gw_store_day_of(mint_lo);
    int rc = gw_store_parts_collect(t, first_day, gw_store_day_of(maxt), &pv);
    uint8_t seek[GW_BLOB_KEY_LEN];
    int done = 0, found = 0;
    for (size_t i = 0; rc == GW_OK && !done && i < pv.n; i++) {
        if (pv.v[i].day == first_day && first_day > INT64_MIN / GW_DAY_MS && first_day * GW_DAY_MS < mint_lo) {
            gw_store_blob_key(seek, node_id, first_day * GW_DAY_MS, GW_STORE_DAY_SEQ);
            rc = part_scan(t, pv.v[i].dbi, seek, 12, maxt, sid, cb, pcb, ud, &done, &found);
            if (rc != GW_OK || done)
                break;
        }
        gw_store_blob_key(seek, node_id, mint_lo, 0);
        rc = part_scan(t, pv.v[i].dbi, seek, 4, maxt, sid, cb, pcb, ud, &done, &found);
    }
    free(pv.v);
    if (rc != GW_OK)
        return rc;
    return cb || pcb ? GW_OK : found;
}

/* Walks node_id's blobs from the newest partition and window backwards and
 * sets *maxt to the last timestamp of sid's last block in the first blob
 * that holds sid (later windows and seqs hold later data: ingest is in
 * order per series). INT64_MIN when none. */
int gw_store_blob_scan_newest(struct gw_store_txn *t, uint32_t node_id, uint64_t sid, int64_t *maxt)
{
    *maxt = INT64_MIN;
    if (sid > UINT32_MAX)
        return GW_OK;
    struct part_vec pv = {0};
    int rc = gw_store_parts_collect(t, INT64_MIN, INT64_MAX, &pv);
    uint8_t seek[GW_BLOB_KEY_LEN];
    memset(seek, 0xff, sizeof seek);
    gw_put_be32(seek, node_id);
    int done = 0;
    for (size_t i = pv.n; rc == GW_OK && !done && i-- > 0;) {
        MDB_cursor *c;
        int mrc = mdb_cursor_open(t->txn, pv.v[i].dbi, &c);
        if (mrc != MDB_SUCCESS) {
            rc = gw_store_terr(t, mrc, "partition cursor");
            break;
        }
        MDB_val k = {sizeof seek, seek}, d;
        mrc = mdb_cursor_get(c, &k, &d, MDB_SET_RANGE);
        if (mrc == MDB_SUCCESS)
            mrc = mdb_cursor_get(c, &k, &d, MDB_PREV);
        else if (mrc == MDB_NOTFOUND)
            mrc = mdb_cursor_get(c, &k, &d, MDB_LAST);
        for (; mrc == MDB_SUCCESS && !done; mrc = mdb_cursor_get(c, &k, &d, MDB_PREV)) {
            if (k.mv_size != GW_BLOB_KEY_LEN) {
                rc = GW_ECORRUPT;
                break;
            }
            if (memcmp(k.mv_data, seek, 4) != 0)
                break;
            struct gw_store_blob b;
            if ((rc = gw_store_blob_parse(d.mv_data, d.mv_size, &b)) != GW_OK)
                break;
            uint32_t j = gw_store_blob_lower(&b, (uint32_t)sid);
            if (j >= b.n || gw_store_blob_sid(&b, j) != sid)
                continue;
            while (j + 1 < b.n && gw_store_blob_sid(&b, j + 1) == sid)
                j++;
            const uint8_t *p;
            size_t len;
            uint32_t n;
            int64_t mi, ma;
            if ((rc = blob_entry(t, &b, j, &p, &len)) != GW_OK)
                break;
            if (gw_block_info(p, len, &n, &mi, &ma) != GW_OK) {
                rc = GW_ECORRUPT;
                break;
            }
            *maxt = ma;
            done = 1;
        }
        if (rc == GW_OK && !done && mrc != MDB_SUCCESS && mrc != MDB_NOTFOUND)
            rc = gw_store_terr(t, mrc, "blob scan");
        mdb_cursor_close(c);
    }
    free(pv.v);
    return rc;
}

int gw_store_blocks_get(struct gw_store_txn *t, uint32_t node_id, uint64_t sid, int64_t mint_lo,
                        int64_t maxt, gw_store_block_cb cb, void *ud)
{
    if (!cb)
        return GW_EINVAL;
    return blocks_scan(t, node_id, sid, mint_lo, maxt, cb, NULL, ud);
}

int gw_store_block_parts_get(struct gw_store_txn *t, uint32_t node_id, uint64_t sid,
                             int64_t mint_lo, int64_t maxt, gw_store_part_cb cb, void *ud)
{
    if (!cb)
        return GW_EINVAL;
    return blocks_scan(t, node_id, sid, mint_lo, maxt, NULL, cb, ud);
}

int gw_store_blocks_any(struct gw_store_txn *t, uint32_t node_id, uint64_t sid, int64_t mint_lo,
                        int64_t maxt)
{
    return blocks_scan(t, node_id, sid, mint_lo, maxt, NULL, NULL, NULL);
}

int gw_store_partition_blocks_each(struct gw_store_txn *t, int64_t day, gw_store_any_block_cb cb, void *ud)
{
    if (!t || !t->txn || !cb)
        return GW_EINVAL;
    struct part_vec pv = {0};
    int rc = gw_store_parts_collect(t, day, day, &pv);
    if (rc != GW_OK || pv.n == 0) {
        free(pv.v);
        return rc;
    }
    MDB_cursor *c;
    int mrc = mdb_cursor_open(t->txn, pv.v[0].dbi, &c);
    free(pv.v);
    if (mrc != MDB_SUCCESS)
        return gw_store_terr(t, mrc, "partition cursor");
    MDB_val k, d;
    int done = 0;
    for (mrc = mdb_cursor_get(c, &k, &d, MDB_FIRST); mrc == MDB_SUCCESS && !done;
         mrc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
        struct gw_store_blob b;
        if (k.mv_size != GW_BLOB_KEY_LEN || gw_store_blob_parse(d.mv_data, d.mv_size, &b) != GW_OK) {
            rc = GW_ECORRUPT;
            break;
        }
        for (uint32_t j = 0; j < b.n; j++) {
            const uint8_t *p;
            size_t len;
            if ((rc = blob_entry(t, &b, j, &p, &len)) != GW_OK) {
                done = 1;
                break;
            }
            int crc = cb(ud, gw_store_blob_sid(&b, j), p, len);
            if (crc != 0) {
                rc = crc < 0 ? crc : GW_OK;
                done = 1;
                break;
            }
        }
    }
    if (rc == GW_OK && !done && mrc != MDB_SUCCESS && mrc != MDB_NOTFOUND)
        rc = gw_store_terr(t, mrc, "partition scan");
    mdb_cursor_close(c);
    return rc;
}

