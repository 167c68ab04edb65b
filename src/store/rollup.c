/* rollup.c - the downsampled aggregates ("rollups") of the LMDB series
 * store: one DBI per resolution and UTC day next to the raw day partitions.
 * The store keeps the bytes; what they mean (the aggregate columns) is
 * defined and encoded by src/db/downsample.c.
 *
 * Databases (names; they share the partition cache under encoded days,
 * see store_int.h):
 *   ds5m:<day>   5-minute aggregates of raw day partition p<day>
 *   ds1h:<day>   1-hour aggregates of the same day
 *   (<day> printed as "%08lld", day = floor(t / 86400000) as for p<day>)
 * Keys and values:
 *   node_id be32 | sid be32            -> one series' aggregates of the day
 *                                         (layout at the top of
 *                                         src/db/downsample.c)
 *   node_id be32 | ff ff ff ff         -> the node's record: the time
 *                                         profiles its series' values
 *                                         (version 3) refer to (layout at
 *                                         the top of src/db/downsample_prof.c),
 *                                         written in the same transaction
 *                                         as the node's values
 *   ff ff ff ff ff ff ff ff (marker)   -> "GWR1" | raw_blobs be64
 *     written last, in the same transaction as the aggregates: the day is
 *     done, computed from a raw partition holding raw_blobs blobs. A raw
 *     partition only grows by blobs (late data gets a new seq), so a
 *     different count means the day got late blobs and its rollups are
 *     stale. When the raw partition has been dropped the marker stands.
 * Node ids are below 2^32 - 1 (the marker key never collides: node
 * 0xffffffff is never handed out in practice; gw_store_rollup_put refuses
 * it), series ids below 2^32 - 1 (GW_ROLLUP_NODE_SID is the node record).
 *
 * Worked example: node 1, sid 5, day 19675, 5-minute rollup value "xyz":
 *   DBI "ds5m:00019675": 00 00 00 01 00 00 00 05 -> 78 79 7a
 *   node 1's profile record "pq":
 *                        00 00 00 01 ff ff ff ff -> 70 71
 *   marker after a raw partition of 12 blobs:
 *                        ff ff ff ff ff ff ff ff -> 47 57 52 31 00 00 00 00 00 00 00 0c */
#include <stdlib.h>
#include <string.h>

#include <lmdb.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/store.h"
#include "store/store_int.h"

#define ROLLUP_KEY_LEN 8
#define MARKER_LEN 12

static int64_t enc_day(int res, int64_t day)
{
    return (res == GW_ROLLUP_1H ? GW_PART_R1H : GW_PART_R5M) + day;
}

static int day_ok(int res, int64_t day)
{
    return (res == GW_ROLLUP_5M || res == GW_ROLLUP_1H) && day > -GW_PART_RHALF && day < GW_PART_RHALF;
}

/* The DBI of encoded day ed valid in t: 1 found, 0 absent, or an error. */
static int find_dbi(struct gw_store_txn *t, int64_t ed, MDB_dbi *dbi)
{
    struct part_vec pv = {0};
    int rc = gw_store_parts_collect(t, ed, ed, &pv);
    int found = rc == GW_OK && pv.n > 0;
    if (found)
        *dbi = pv.v[0].dbi;
    free(pv.v);
    return rc != GW_OK ? rc : found;
}

static void rkey(uint8_t *k, uint32_t node_id, uint64_t sid)
{
    gw_put_be32(k, node_id);
    gw_put_be32(k + 4, (uint32_t)sid);
}

int gw_store_rollup_begin_day(struct gw_store_txn *t, int res, int64_t day)
{
    int rc = gw_store_need_write(t);
    if (rc != GW_OK)
        return rc;
    if (!day_ok(res, day))
        return GW_EINVAL;
    MDB_dbi dbi;
    if ((rc = gw_store_part_for_write(t, enc_day(res, day), &dbi)) != GW_OK)
        return rc;
    int mrc = mdb_drop(t->txn, dbi, 0); /* empty it, keep the handle */
    return mrc == MDB_SUCCESS ? GW_OK : gw_store_terr(t, mrc, "rollup clear");
}

int gw_store_rollup_put(struct gw_store_txn *t, int res, int64_t day, uint32_t node_id, uint64_t sid,
                        const uint8_t *val, size_t len)
{
    int rc = gw_store_need_write(t);
    if (rc != GW_OK)
        return rc;
    if (!day_ok(res, day) || node_id == UINT32_MAX || (!val && len))
        return GW_EINVAL;
    if (sid > UINT32_MAX)
        return GW_ELIMIT;
    if (len > GW_BLOB_MAX)
        return GW_ELIMIT;
    MDB_dbi dbi;
    if ((rc = gw_store_part_for_write(t, enc_day(res, day), &dbi)) != GW_OK)
        return rc;
    uint8_t key[ROLLUP_KEY_LEN];
    rkey(key, node_id, sid);
    MDB_val k = {sizeof key, key}, d = {len, (void *)(uintptr_t)val};
    int mrc = mdb_put(t->txn, dbi, &k, &d, 0);
    return mrc == MDB_SUCCESS ? GW_OK : gw_store_terr(t, mrc, "rollup put");
}

int gw_store_rollup_get(struct gw_store_txn *t, int res, int64_t day, uint32_t node_id, uint64_t sid,
                        const uint8_t **val, size_t *len)
{
    if (!t || !t->txn || !day_ok(res, day))
        return GW_EINVAL;
    if (sid > UINT32_MAX)
        return GW_ENOTFOUND;
    MDB_dbi dbi = 0;
    int rc = find_dbi(t, enc_day(res, day), &dbi);
    if (rc <= 0)
        return rc < 0 ? rc : GW_ENOTFOUND;
    uint8_t key[ROLLUP_KEY_LEN];
    rkey(key, node_id, sid);
    MDB_val k = {sizeof key, key}, d;
    int mrc = mdb_get(t->txn, dbi, &k, &d);
    if (mrc == MDB_NOTFOUND)
        return GW_ENOTFOUND;
    if (mrc != MDB_SUCCESS)
        return gw_store_terr(t, mrc, "rollup get");
    *val = d.mv_data;
    *len = d.mv_size;
    return GW_OK;
}

int gw_store_rollup_mark(struct gw_store_txn *t, int res, int64_t day, uint64_t raw_blobs)
{
    int rc = gw_store_need_write(t);
    if (rc != GW_OK)
        return rc;
    if (!day_ok(res, day))
        return GW_EINVAL;
    MDB_dbi dbi;
    if ((rc = gw_store_part_for_write(t, enc_day(res, day), &dbi)) != GW_OK)
        return rc;
    uint8_t key[ROLLUP_KEY_LEN], v[MARKER_LEN];
    memset(key, 0xff, sizeof key);
    memcpy(v, "GWR1", 4);
    gw_put_be64(v + 4, raw_blobs);
    MDB_val k = {sizeof key, key}, d = {sizeof v, v};
    int mrc = mdb_put(t->txn, dbi, &k, &d, 0);
    return mrc == MDB_SUCCESS ? GW_OK : gw_store_terr(t, mrc, "rollup mark");
}

int gw_store_rollup_marker(struct gw_store_txn *t, int res, int64_t day, uint64_t *raw_blobs)
{
    if (!t || !t->txn || !day_ok(res, day))
        return GW_EINVAL;
    MDB_dbi dbi = 0;
    int rc = find_dbi(t, enc_day(res, day), &dbi);
    if (rc <= 0)
        return rc < 0 ? rc : GW_ENOTFOUND;
    uint8_t key[ROLLUP_KEY_LEN];
    memset(key, 0xff, sizeof key);
    MDB_val k = {sizeof key, key}, d;
    int mrc = mdb_get(t->txn, dbi, &k, &d);
    if (mrc == MDB_NOTFOUND)
        return GW_ENOTFOUND;
    if (mrc != MDB_SUCCESS)
        return gw_store_terr(t, mrc, "rollup marker");
    if (d.mv_size != MARKER_LEN || memcmp(d.mv_data, "GWR1", 4) != 0)
        return GW_ECORRUPT;
    *raw_blobs = gw_get_be64((const uint8_t *)d.mv_data + 4);
    return GW_OK;
}

int gw_store_raw_day_blobs(struct gw_store_txn *t, int64_t day, uint64_t *blobs)
{
    if (!t || !t->txn || day <= -GW_PART_RAW_END / 2 || day >= GW_PART_RAW_END / 2)
        return GW_EINVAL;
    MDB_dbi dbi = 0;
    int rc = find_dbi(t, day, &dbi);
    if (rc <= 0)
        return rc < 0 ? rc : GW_ENOTFOUND;
    MDB_stat st;
    int mrc = mdb_stat(t->txn, dbi, &st);
    if (mrc == MDB_NOTFOUND)
        return GW_ENOTFOUND;
    if (mrc != MDB_SUCCESS)
        return gw_store_terr(t, mrc, "partition stat");
    *blobs = st.ms_entries;
    return GW_OK;
}

int gw_store_rollup_days(struct gw_store_txn *t, int res, gw_store_day_cb cb, void *ud)
{
    if (!t || !t->txn || !cb || (res != GW_ROLLUP_5M && res != GW_ROLLUP_1H))
        return GW_EINVAL;
    struct part_vec pv = {0};
    int rc = gw_store_parts_collect(t, enc_day(res, -GW_PART_RHALF + 1), enc_day(res, GW_PART_RHALF - 1), &pv);
    for (size_t i = 0; rc == GW_OK && i < pv.n; i++) {
        int crc = cb(ud, pv.v[i].day - enc_day(res, 0));
        if (crc != 0) {
            rc = crc < 0 ? crc : GW_OK;
            break;
        }
    }
    free(pv.v);
    return rc;
}

int gw_store_rollup_drop(struct gw_store_txn *t, int res, int64_t dlo, int64_t dhi, unsigned *dropped)
{
    if (res != GW_ROLLUP_5M && res != GW_ROLLUP_1H)
        return GW_EINVAL;
    if (dlo <= -GW_PART_RHALF)
        dlo = -GW_PART_RHALF + 1;
    if (dhi >= GW_PART_RHALF)
        dhi = GW_PART_RHALF - 1;
    return gw_store_parts_drop_range(t, enc_day(res, dlo), enc_day(res, dhi), dropped);
}

int gw_store_raw_drop_day(struct gw_store_txn *t, int64_t day)
{
    if (day <= -GW_PART_RAW_END / 2 || day >= GW_PART_RAW_END / 2)
        return GW_EINVAL;
    return gw_store_parts_drop_range(t, day, day, NULL);
}

int gw_store_series_node(struct gw_store_txn *t, uint64_t sid, uint32_t *node_id)
{
    MDB_dbi ds;
    int rc = gw_store_fixed_dbi(t, DB_SERIES, &ds);
    if (rc != GW_OK)
        return rc;
    uint8_t kb[8];
    gw_put_be64(kb, sid);
    MDB_val k = {8, kb}, d;
    int mrc = mdb_get(t->txn, ds, &k, &d);
    if (mrc == MDB_NOTFOUND)
        return GW_ENOTFOUND;
    if (mrc != MDB_SUCCESS)
        return gw_store_terr(t, mrc, "series get");
    if (d.mv_size < GW_SERIES_FIXED + 1)
        return GW_ECORRUPT;
    *node_id = gw_get_be32((const uint8_t *)d.mv_data + 8);
    return GW_OK;
}

int gw_store_rollup_scan(struct gw_store_txn *t, int res, int64_t day, gw_store_rollup_cb cb, void *ud)
{
    if (!t || !t->txn || !cb || !day_ok(res, day))
        return GW_EINVAL;
    MDB_dbi dbi = 0;
    int rc = find_dbi(t, enc_day(res, day), &dbi);
    if (rc <= 0)
        return rc < 0 ? rc : GW_ENOTFOUND;
    MDB_cursor *c;
    if ((rc = gw_store_cursor_open(t, dbi, &c)) != GW_OK)
        return rc;
    MDB_val k, d;
    int mrc;
    for (mrc = mdb_cursor_get(c, &k, &d, MDB_FIRST); mrc == MDB_SUCCESS; mrc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
        if (k.mv_size != ROLLUP_KEY_LEN)
            continue;
        const uint8_t *kp = k.mv_data;
        uint32_t node = gw_get_be32(kp), sid = gw_get_be32(kp + 4);
        if (node == UINT32_MAX && sid == UINT32_MAX)
            continue; /* the done marker */
        int crc = cb(ud, node, sid, d.mv_data, d.mv_size);
        if (crc != 0) {
            rc = crc < 0 ? crc : GW_OK;
            break;
        }
    }
    if (rc == GW_OK && mrc != MDB_SUCCESS && mrc != MDB_NOTFOUND)
        rc = gw_store_terr(t, mrc, "rollup scan");
    mdb_cursor_close(c);
    return rc;
}
