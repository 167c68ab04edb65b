/* gpuwatch/store.h - the LMDB series store. The ONLY module that includes
 * lmdb.h. One LMDB environment per data dir (DIR/store/).
 *
 * Named databases (key layouts at the top of src/store/keys.c). The index
 * is kept compact: a series record stores label-pair ids, not strings.
 *   meta        ascii key -> bytes        format version, counters
 *   pairs       name \0 value -> pair_id(be32); values too long for an LMDB
 *               key are truncated and suffixed \xff + hash
 *   pair_ids    pair_id(be32) -> name \0 value (full)
 *   series      sid(be64) -> maxt(be64 biased) node_id(be32) gpu(be16)
 *               uvarint n | n uvarint pair ids (in label order)
 *   shash       labels hash(be64) -> sids (DUPSORT|DUPFIXED, be32)
 *   postings    pair_id(be32) -> sids (DUPSORT|DUPFIXED, be32, appended)
 *   nodes       node name -> node_id(be32); node_ids: node_id -> name
 *   mmeta       metric family name -> u8 type | uvarint help_len help | unit
 *   p<day>      one per UTC day (day = floor(t_ms / 86400000), 8 digits):
 *               node_id(be32) window_start(be64 biased) seq(be32) -> blob
 *               blob = "GWB1" | u32 n | n x {sid u32, end offset u32} | blocks
 *               or "GWB2" with shared timestamp columns (keys.c)
 * Series ids are below 2^32.
 * Retention drops whole p<day> databases.
 *
 * Concurrency: one write transaction at a time (LMDB); any number of read
 * transactions. The map starts at opts.initial_map_bytes and doubles when
 * LMDB reports MDB_MAP_FULL: gw_store_write() aborts, grows the map (waiting
 * for open read transactions to end) and runs the callback again, so write
 * callbacks must be re-runnable. Only when growth fails (disk full, limit)
 * does it return GW_EFULL.
 *
 * Threading rules: end a read transaction on the thread that began it; a
 * thread holds at most one read transaction at a time and none while it
 * calls gw_store_write() (refused with GW_EINVAL) or gw_store_stats(); a
 * map resize and gw_store_partitions_drop_before() wait until every open
 * read transaction has ended, so keep them short (one per request). Write
 * callbacks must not call gw_store_write() or gw_store_read_begin().
 *
 * Size limits (keys stay under LMDB's 511-byte maximum): label names up to
 * 469 bytes and label values without 0xff bytes (GW_ETOOLARGE / GW_EINVAL
 * from gw_store_series_put); node and metric names up to 480 bytes.
 *
 * Borrowed data: every pointer handed out inside a transaction points into
 * the map and is valid only until the transaction ends.
 * Layer: L2 storage and wire (src/store/); includes only its layer and below (docs/architecture.md). */
#ifndef GW_STORE_H
#define GW_STORE_H

#include <stddef.h>
#include <stdint.h>
#include "gpuwatch/err.h"
#include "gpuwatch/postings.h"

#define GW_DAY_MS 86400000LL

struct gw_store;
struct gw_store_txn;

struct gw_store_opts {
    const char *dir;                /* environment directory, created if missing */
    uint64_t initial_map_bytes;     /* default 1 GiB */
    uint64_t max_map_bytes;         /* growth ceiling; default 4 TiB */
    int durable;                    /* 1: sync each commit; 0: MDB_NOSYNC (the WAL
                                       covers crashes; call gw_store_sync before
                                       dropping WAL segments) */
    int read_only;                  /* open with MDB_RDONLY (stats, verify) */
    int ordered;                    /* with durable 0: each commit syncs its pages
                                       before writing its meta page (MDB_NOMETASYNC,
                                       one fdatasync per commit), so a power cut on a
                                       file system that reorders writes leaves a
                                       consistent store, not a meta page pointing at
                                       pages that never reached the disk */
};

int gw_store_open(struct gw_store **out, const struct gw_store_opts *o, struct gw_error *err);
void gw_store_close(struct gw_store *s);                      /* NULL ok */
int gw_store_sync(struct gw_store *s, struct gw_error *err);  /* fsync the map */

/* Runs fn inside one write transaction and commits it. fn returns GW_OK to
 * commit or an error to abort (returned as is). On map full the transaction
 * is aborted, the map grown, and fn called again from the start. */
typedef int (*gw_store_write_fn)(struct gw_store_txn *t, void *ud);
int gw_store_write(struct gw_store *s, gw_store_write_fn fn, void *ud, struct gw_error *err);

/* Read transactions: short-lived, one per request. */
int gw_store_read_begin(struct gw_store *s, struct gw_store_txn **t, struct gw_error *err);
void gw_store_read_end(struct gw_store_txn *t);               /* NULL ok */

/* ---- meta ---- */
int gw_store_meta_get_u64(struct gw_store_txn *t, const char *key, uint64_t *v); /* GW_ENOTFOUND */
int gw_store_meta_put_u64(struct gw_store_txn *t, const char *key, uint64_t v);

/* ---- series ---- */
struct gw_store_series {
    uint64_t sid;
    uint32_t node_id;
    uint16_t gpu;
    const uint8_t *labels;     /* canonical bytes, borrowed */
    size_t labels_len;
};
/* Inserts a new series with its shash entry and one postings entry per
 * label (creating label pairs as needed). GW_OK (also when sid already
 * exists with the same labels); GW_EINVAL for malformed or non-minimally
 * encoded labels or a sid already used by other labels; GW_ETOOLARGE for a
 * label name over the key limit; GW_ELIMIT for sid >= 2^32. Write txn only.
 * gw_store_series_get returns the canonical labels rebuilt into memory
 * owned by the transaction (valid until it ends). */
int gw_store_series_put(struct gw_store_txn *t, uint64_t sid, uint64_t hash, uint32_t node_id,
                        uint16_t gpu, const uint8_t *labels, size_t labels_len);
int gw_store_series_get(struct gw_store_txn *t, uint64_t sid, struct gw_store_series *out); /* GW_ENOTFOUND */
/* Sids whose labels hash to hash (usually 0 or 1), up to max. */
int gw_store_series_by_hash(struct gw_store_txn *t, uint64_t hash, uint64_t *sids, size_t max, size_t *n);
/* Visits every series in sid order; cb returns GW_OK to continue. The
 * labels passed to cb are valid only until cb returns. */
typedef int (*gw_store_series_cb)(void *ud, const struct gw_store_series *s);
int gw_store_series_each(struct gw_store_txn *t, gw_store_series_cb cb, void *ud);
/* Newest persisted timestamp of a series, kept in its record (INT64_MIN
 * when none or no such series). maxt_put: GW_ENOTFOUND without a record. */
int gw_store_series_maxt_get(struct gw_store_txn *t, uint64_t sid, int64_t *maxt);
int gw_store_series_maxt_put(struct gw_store_txn *t, uint64_t sid, int64_t maxt);
/* Removes a series, its hash entry and postings (retention of dead
 * series; label pairs stay); its blocks go with their day partitions.
 * GW_ENOTFOUND if absent. */
int gw_store_series_delete(struct gw_store_txn *t, uint64_t sid);

/* ---- nodes ---- */
/* Gets or (in a write txn) creates the id of a node name; id 0 is reserved
 * for "no node" (empty name). */
int gw_store_node_id(struct gw_store_txn *t, const char *name, size_t len, int create, uint32_t *id);
int gw_store_node_name(struct gw_store_txn *t, uint32_t id, const char **name, size_t *len);

/* ---- postings / label index ---- */
/* Appends the sorted sids of name=value to out (out is cleared first). */
int gw_store_postings_get(struct gw_store_txn *t, const char *name, size_t name_len,
                          const char *value, size_t value_len, struct gw_postings *out);
/* All sids that have label `name` at all (any value), sorted. */
int gw_store_postings_any(struct gw_store_txn *t, const char *name, size_t name_len, struct gw_postings *out);
/* Visits the distinct values of `name` in byte order (full values, also for
 * long ones). cb returns GW_OK to continue, 1 to stop early, or an error. */
typedef int (*gw_store_value_cb)(void *ud, const char *value, size_t len);
int gw_store_label_values(struct gw_store_txn *t, const char *name, size_t name_len,
                          gw_store_value_cb cb, void *ud);
/* Union of postings of every value of `name` for which pred returns 1. */
typedef int (*gw_store_value_pred)(void *ud, const char *value, size_t len);
int gw_store_postings_matching(struct gw_store_txn *t, const char *name, size_t name_len,
                               gw_store_value_pred pred, void *ud, struct gw_postings *out);
/* Visits distinct label names in byte order. */
int gw_store_label_names(struct gw_store_txn *t, gw_store_value_cb cb, void *ud);
/* Every sid in the store (sorted). */
int gw_store_postings_all(struct gw_store_txn *t, struct gw_postings *out);

/* ---- metric metadata (type/help/unit from remote write) ---- */
int gw_store_metadata_put(struct gw_store_txn *t, const char *metric, size_t metric_len, uint8_t type,
                          const char *help, size_t help_len, const char *unit, size_t unit_len);
typedef int (*gw_store_metadata_cb)(void *ud, const char *metric, size_t metric_len, uint8_t type,
                                    const char *help, size_t help_len, const char *unit, size_t unit_len);
int gw_store_metadata_each(struct gw_store_txn *t, gw_store_metadata_cb cb, void *ud);

/* ---- sample blocks, packed per node and window, partitioned by UTC day ----
 * The flusher writes all blocks of one node for one time window (the head's
 * chunk window, e.g. 2 h) as ONE value: a "blob" with a fixed-width
 * directory of (sid, end offset) sorted by sid (then time), followed by the
 * blocks. Key: node_id(be32) window_start(be64 biased) seq(be32) in the
 * partition of window_start's day; seq numbers later blobs of the same node
 * and window (late or backfilled data). One node's data is one range scan;
 * large values live in contiguous overflow pages, so pages are ~full. */
struct gw_store_blob_entry {
    uint64_t sid;               /* < 2^32 */
    const uint8_t *block;       /* gw_block_encode output, or a value part */
    size_t len;
    uint32_t col;               /* 0: block is a whole block; c >= 1: block is
                                   a value part (gw_block_values_encode) of
                                   timestamp column c - 1 (blob_put_cols only) */
};
/* Writes one blob of whole blocks ("GWB1"; col is ignored). entries
 * must be sorted by sid, blocks of one sid in time order; a window must not
 * cross a UTC day. GW_OK, GW_EINVAL, GW_ELIMIT (blob over 2 GiB or sid >=
 * 2^32), store errors. */
int gw_store_blob_put(struct gw_store_txn *t, uint32_t node_id, int64_t window_start,
                      const struct gw_store_blob_entry *entries, size_t n);
/* Writes one blob ("GWB2") whose entries may share timestamp columns
 * (gw_block_ts_encode output): series scraped together keep one copy of
 * their timestamps. Readers get whole blocks either way (joined on read by
 * gw_block_join). Errors as gw_store_blob_put; GW_EINVAL for a col > ncols. */
struct gw_store_blob_col {
    const uint8_t *col;
    size_t len;
};
int gw_store_blob_put_cols(struct gw_store_txn *t, uint32_t node_id, int64_t window_start,
                           const struct gw_store_blob_col *cols, size_t ncols,
                           const struct gw_store_blob_entry *entries, size_t n);
/* Visits the series' blocks in blobs of node_id whose window_start lies in
 * [mint_lo, maxt], in time order (callers pass mint_lo = mint - window so a
 * window that started before mint is included): by window, then seq, then
 * directory order. cb gets the blob's window_start as block_mint and the
 * block: a pointer into the map, or for a block stored as a value part of
 * a shared timestamp column the joined block in a transaction buffer;
 * either is valid only until cb returns (blob keys hold no GPU: node and
 * sid find the blocks). cb returns GW_OK to go on, 1 to stop (the call
 * returns GW_OK), or an error (returned as is). GW_ECORRUPT for a
 * malformed blob. */
typedef int (*gw_store_block_cb)(void *ud, int64_t block_mint, const uint8_t *block, size_t len);
int gw_store_blocks_get(struct gw_store_txn *t, uint32_t node_id, uint64_t sid,
                        int64_t mint_lo, int64_t maxt, gw_store_block_cb cb, void *ud);
/* The same visit, with blocks stored as a value part of a shared timestamp
 * column handed over unjoined, so a reader can decode each column once
 * (gw_block_ts_decode) and only the values per series
 * (gw_block_values_decode). Either block (a whole block, col NULL) or col
 * and val are set. Pointers are into the map: valid while the transaction
 * lasts, and within one read transaction a column's address identifies
 * it (the same address is the same bytes). Errors as gw_store_blocks_get. */
struct gw_store_block_part {
    int64_t window_start;       /* the blob's window start */
    const uint8_t *block;       /* a whole block (gw_block_encode output), or NULL */
    size_t len;
    const uint8_t *col;         /* else: the timestamp column (gw_block_ts_encode output) */
    size_t col_len;
    const uint8_t *val;         /* and the series' value part (gw_block_values_encode output) */
    size_t val_len;
};
typedef int (*gw_store_part_cb)(void *ud, const struct gw_store_block_part *p);
int gw_store_block_parts_get(struct gw_store_txn *t, uint32_t node_id, uint64_t sid,
                             int64_t mint_lo, int64_t maxt, gw_store_part_cb cb, void *ud);
/* 1 if the series has any block in a window starting in [mint_lo, maxt],
 * 0 if not, or a negative error. */
int gw_store_blocks_any(struct gw_store_txn *t, uint32_t node_id, uint64_t sid,
                        int64_t mint_lo, int64_t maxt);
/* Visits every block of a day partition (any order); cb as above (the
 * block is valid until cb returns). */
typedef int (*gw_store_any_block_cb)(void *ud, uint64_t sid, const uint8_t *block, size_t len);
int gw_store_partition_blocks_each(struct gw_store_txn *t, int64_t day, gw_store_any_block_cb cb, void *ud);

struct gw_store_partition {
    int64_t day;            /* floor(t_ms / GW_DAY_MS) */
    uint64_t entries;       /* blobs */
    uint64_t bytes;         /* pages used (branch + leaf + overflow) * page size */
};
typedef int (*gw_store_partition_cb)(void *ud, const struct gw_store_partition *p);
int gw_store_partitions(struct gw_store_txn *t, gw_store_partition_cb cb, void *ud);
/* Drops every partition whose day < before_day; *dropped gets the count. */
int gw_store_partitions_drop_before(struct gw_store_txn *t, int64_t before_day, unsigned *dropped);

/* ---- compaction (src/store/compact.c) ----
 * A compacted day holds, per node, ONE "day blob" keyed node | day start |
 * seq GW_STORE_DAY_SEQ (+ more seqs only from late data at the day's
 * first window), whose entries span the whole day: one timestamp column
 * per distinct timestamp array of the node's day, one value part per
 * series (a series over GW_BLOCK_MAX_SAMPLES in a day gets several). The
 * readers above find day blobs whatever mint_lo they get. Blobs written
 * after compaction (late or backfilled data) keep their window keys and
 * are merged by the next run. */
#define GW_STORE_DAY_SEQ 0x80000000u
/* Writes a day blob (GWB2 layout) of node_id for day; the caller removed
 * the one before. Errors as gw_store_blob_put_cols. */
int gw_store_blob_put_day(struct gw_store_txn *t, uint32_t node_id, int64_t day,
                          const struct gw_store_blob_col *cols, size_t ncols,
                          const struct gw_store_blob_entry *entries, size_t n);

struct gw_store_compact_stats {
    uint64_t node_days;         /* node-days re-encoded */
    uint64_t node_days_raced;   /* changed while being re-encoded: left for the next run */
    uint64_t blobs_before, blobs_after;
    uint64_t bytes_before, bytes_after;   /* blob value bytes */
    uint64_t samples;           /* samples re-encoded */
    uint64_t cols_after, col_bytes_after;  /* timestamp columns of the day blobs */
};
/* Called after each node of a day: done of total nodes, samples so far. */
typedef void (*gw_store_progress_cb)(void *ud, uint64_t done, uint64_t total, uint64_t samples);
/* Re-encodes the blobs of day into one day blob per node. Nodes whose data
 * is one day blob already are skipped (idempotent). Every sample keeps its
 * timestamp and value bits; a series whose blocks overlap in time keeps
 * its original blocks (as whole blocks inside the day blob). Each node
 * takes one short read transaction (the re-encoding) and one write
 * transaction (delete the old blobs, write the day blob, adjust the meta
 * day totals "stat.<day>.blocks|bytes", set meta "compact.<day>" =
 * now_ms); a node whose blobs changed in between is left alone and
 * counted in node_days_raced. The caller holds no transaction. */
int gw_store_compact_day(struct gw_store *s, int64_t day, int64_t now_ms, struct gw_store_compact_stats *st,
                         gw_store_progress_cb cb, void *ud, struct gw_error *err);
/* 1 when day has any blob that is not a day blob (work for
 * gw_store_compact_day), 0 when not, or a negative error. */
int gw_store_day_needs_compact(struct gw_store_txn *t, int64_t day);
/* Sets bit sid of bits (nbits bits, zeroed by the caller) for every sid
 * found in any blob directory of any partition (sids >= nbits ignored). */
int gw_store_sids_with_data(struct gw_store_txn *t, uint8_t *bits, uint64_t nbits);
/* gw_store_series_delete, then deletes every label pair of the series
 * that no series uses any more (pairs and pair_ids); *pairs_dropped
 * (may be NULL) is increased by their count. Write txn only. */
int gw_store_series_delete_gc(struct gw_store_txn *t, uint64_t sid, uint64_t *pairs_dropped);
/* The LMDB compacting copy of the (closed) store in dir: copies the live
 * pages to dir/data.mdb.compact, fsyncs it, renames it over dir/data.mdb
 * and fsyncs dir. A crash at any point leaves either the old or the new
 * file (both complete); a leftover temp file is removed by the next
 * read-write gw_store_open. The caller must keep every other process out
 * (the db's LOCK). *before / *after: data file sizes (may be NULL). */
int gw_store_copy_compact(const char *dir, uint64_t *before, uint64_t *after, struct gw_error *err);
#define GW_STORE_COMPACT_TMP "data.mdb.compact"

/* ---- rollups: downsampled aggregates per resolution and UTC day ----
 * (src/store/rollup.c; DBIs "ds5m:<day>" / "ds1h:<day>", one value per
 * node and series whose bytes src/db/downsample.c defines, plus a marker
 * saying the day is done and from how many raw blobs). */
#define GW_ROLLUP_5M 0
#define GW_ROLLUP_1H 1
/* The sid of a node's own record in a rollup day (its time profiles,
 * src/db/downsample_prof.c): key node_id | ff ff ff ff. Put, got and
 * scanned like a series value; no series has this sid. */
#define GW_ROLLUP_NODE_SID UINT64_C(0xffffffff)
/* Creates the day's rollup DBI or empties it (a re-done day). Write txn. */
int gw_store_rollup_begin_day(struct gw_store_txn *t, int res, int64_t day);
/* Stores one series' value (node_id < 2^32 - 1). Write txn. */
int gw_store_rollup_put(struct gw_store_txn *t, int res, int64_t day, uint32_t node_id, uint64_t sid,
                        const uint8_t *val, size_t len);
/* The value (borrowed, valid while t lasts); GW_ENOTFOUND. */
int gw_store_rollup_get(struct gw_store_txn *t, int res, int64_t day, uint32_t node_id, uint64_t sid,
                        const uint8_t **val, size_t *len);
/* Marks the day done from a raw partition of raw_blobs blobs (write txn);
 * reads the marker back (GW_ENOTFOUND: not done). */
int gw_store_rollup_mark(struct gw_store_txn *t, int res, int64_t day, uint64_t raw_blobs);
int gw_store_rollup_marker(struct gw_store_txn *t, int res, int64_t day, uint64_t *raw_blobs);
/* Blobs in raw partition p<day>; GW_ENOTFOUND when there is none. */
int gw_store_raw_day_blobs(struct gw_store_txn *t, int64_t day, uint64_t *blobs);
/* Visits the days that have a rollup DBI of res, in day order. */
typedef int (*gw_store_day_cb)(void *ud, int64_t day);
int gw_store_rollup_days(struct gw_store_txn *t, int res, gw_store_day_cb cb, void *ud);
/* Visits every series value and node record (sid GW_ROLLUP_NODE_SID,
 * after the node's series) of a rollup day (the done marker left out),
 * in key order; cb returns 0 to go on, > 0 to stop, < 0 an error.
 * GW_ENOTFOUND when the day has no rollup DBI of res. */
typedef int (*gw_store_rollup_cb)(void *ud, uint32_t node_id, uint64_t sid, const uint8_t *val, size_t len);
int gw_store_rollup_scan(struct gw_store_txn *t, int res, int64_t day, gw_store_rollup_cb cb, void *ud);
/* Drops the rollup DBIs of res with day in [dlo, dhi], and one raw day
 * partition (both wait for open readers like gw_store_partitions_drop_before). */
int gw_store_rollup_drop(struct gw_store_txn *t, int res, int64_t dlo, int64_t dhi, unsigned *dropped);
int gw_store_raw_drop_day(struct gw_store_txn *t, int64_t day);
/* The node id of a series (its record's fixed part only); GW_ENOTFOUND. */
int gw_store_series_node(struct gw_store_txn *t, uint64_t sid, uint32_t *node_id);

struct gw_store_stats {
    uint64_t map_bytes;        /* current map size */
    uint64_t file_bytes;       /* data file size on disk */
    uint64_t used_bytes;       /* pages in use * page size */
    uint64_t series;           /* entries in `series` */
    uint64_t index_bytes;      /* pages of pairs/pair_ids/series/shash/postings
                                  (with their sub-databases)/nodes/node_ids/mmeta */
    unsigned page_size;
    uint64_t live_bytes;       /* used_bytes less LMDB's free pages: what retention
                                  by size measures */
};
int gw_store_stats(struct gw_store *s, struct gw_store_stats *st, struct gw_error *err);


/* ---- verification and copy (verify.c) ----
 * gw_store_verify checks everything in one read transaction (a consistent
 * snapshot; safe next to a writer, which it only keeps from reusing pages
 * for the duration): every blob of every partition (key, directory,
 * timestamp columns, every block decoded), and the index (every pair id of
 * every series record resolves, labels are canonical, postings and shash
 * entries point to existing series with matching pairs and hashes, node
 * ids resolve, pairs/pair_ids and nodes/node_ids agree, the meta counters
 * are past the ids in use, a series' recorded maxt is not past its newest
 * stored block). Each problem goes to cb as it is found; where fields do
 * not apply they hold day = window_start = INT64_MIN, seq = -1, sid = 0,
 * node_id = pair_id = 0. Returns GW_OK when the checks ran (problems or
 * not; count in st->problems), else a storage error (GW_ENOMEM, GW_ESTORE). */
struct gw_store_problem {
    const char *kind;          /* "blob", "block", "column", "series", "postings", "shash",
                                  "pairs", "nodes", "meta" */
    int64_t day;               /* partition day */
    uint32_t node_id;
    int64_t window_start;
    int64_t seq;
    uint64_t sid;
    uint32_t pair_id;
    char what[256];
};
typedef void (*gw_store_problem_cb)(void *ud, const struct gw_store_problem *p);
/* done/total: blobs checked of all blobs (called per partition and every
 * few hundred blobs). */
typedef void (*gw_store_verify_progress_cb)(void *ud, const char *phase, uint64_t done, uint64_t total);
struct gw_store_verify_stats {
    uint64_t partitions, blobs, blocks, columns, samples;
    uint64_t series, postings, shash, pairs, nodes;
    uint64_t problems;
};
int gw_store_verify(struct gw_store *s, gw_store_problem_cb cb, gw_store_verify_progress_cb progress, void *ud,
                    struct gw_store_verify_stats *st, struct gw_error *err);
/* A consistent copy of the whole environment (mdb_env_copyfd2, compacting
 * free pages) into the open file fd, from one read transaction: safe while
 * others write. GW_OK, GW_EIO, GW_ESTORE. */
int gw_store_copy_fd(struct gw_store *s, int fd, struct gw_error *err);
/* The same for any LMDB environment directory (a gw_kv one) that this
 * process does not have open: opened read-only, copied into fd, closed.
 * GW_OK, GW_EIO, GW_ESTORE. */
int gw_store_env_copy_fd(const char *env_dir, int fd, struct gw_error *err);

#endif /* GW_STORE_H */
