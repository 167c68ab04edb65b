/* store_int.h - what the files of the store module share: the limits that
 * shape the keys and the key encoders/decoders (keys.c); the store and
 * transaction structs and the helpers the LMDB files call across file
 * boundaries (store.c: open/close, meta, stats; txn.c: transactions and
 * errors; partitions.c: the partition cache and retention; series.c:
 * series and nodes; index.c: postings and label values; blocks.c: blobs).
 * Byte order, varints and hashing come from gpuwatch/codec.h. Nothing
 * outside src/store/ includes this file (tests may, white-box). */
#ifndef GW_STORE_INT_H
#define GW_STORE_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <lmdb.h>

#include "gpuwatch/arena.h"
#include "gpuwatch/buf.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/err.h"
#include "gpuwatch/postings.h"

/* LMDB's default maximum key size is 511 bytes; keys stay below this. */
#define GW_KEY_MAX 480
/* Label pair keys (`pairs`): values are stored in full while name\0value fits in
 * GW_KEY_MAX; otherwise the key keeps a prefix of the value
 * (GW_VALUE_PREFIX bytes, less for long names), then 0xff, then the be64
 * XXH3 of the whole value. Values never contain 0xff (refused). */
#define GW_VALUE_PREFIX 400
#define GW_TRUNC_TAIL 9                          /* 0xff + be64 hash */
#define GW_NAME_MAX_KEY (GW_KEY_MAX - 1 - GW_TRUNC_TAIL - 1) /* longest label name: 469 */

#define GW_BLOB_KEY_LEN 16       /* node(4) window_start(8) seq(4) */
#define GW_SERIES_FIXED 14       /* maxt(8) node(4) gpu(2) before the pair ids */
#define GW_BLOB_HDR 8            /* "GWB1" | u32 n */
#define GW_BLOB2_HDR 12          /* "GWB2" | u32 n | u32 m */
#define GW_BLOB_ENT 8            /* sid u32 | end offset u32 */
#define GW_BLOB3_HDR 16          /* "GWB3" | u32 hsum | u32 n | u32 m */
#define GW_BLOB3_ENT 12          /* sid u32 | end offset u32 | sum u32 */
#define GW_BLOB3_COL 8           /* col_end u32 | sum u32 */
#define GW_BLOB_MAX 0x7fffffffu  /* a blob stays under 2 GiB */
#define GW_PART_NAME_MAX 32

/* Timestamps biased so signed order equals byte order. */
uint64_t gw_store_bias(int64_t t);
int64_t gw_store_unbias(uint64_t u);

/* floor(t_ms / GW_DAY_MS) also for negative t. */
int64_t gw_store_day_of(int64_t t_ms);


/* Iterates canonical label bytes (uvarint name_len name uvarint value_len
 * value ...). next() returns 1 with a label, 0 at the end, GW_ECORRUPT. */
struct gw_store_lab_iter {
    const uint8_t *p;
    size_t len, off;
};
void gw_store_lab_iter_init(struct gw_store_lab_iter *it, const uint8_t *b, size_t len);
int gw_store_lab_iter_next(struct gw_store_lab_iter *it, const char **name, size_t *name_len,
                           const char **value, size_t *value_len);
/* Finds name in canonical labels: 1 found, 0 absent, GW_ECORRUPT. */
int gw_store_labels_find(const uint8_t *b, size_t len, const char *name, size_t name_len,
                         const char **value, size_t *value_len);

/* Pair key (name \0 value, long form when needed) into key (GW_KEY_MAX bytes). GW_OK,
 * GW_ETOOLARGE (name longer than GW_NAME_MAX_KEY), GW_EINVAL (empty name,
 * a NUL byte in the name or a 0xff byte in the value). */
int gw_store_pair_key(uint8_t *key, size_t *klen, const char *name, size_t name_len,
                          const char *value, size_t value_len);
/* Bytes of the value kept in a truncated key for a name of name_len. */
size_t gw_store_value_prefix(size_t name_len);
/* Given the value part of a pair key (after name\0): 1 if it is the
 * truncated form (then *hash is set), 0 if it is the full value. */
int gw_store_value_is_truncated(size_t name_len, const uint8_t *vpart, size_t vlen, uint64_t *hash);

/* Series record: maxt node gpu uvarint n, then n uvarint pair ids. */
struct gw_store_rec {
    int64_t maxt;
    uint32_t node_id;
    uint16_t gpu;
    uint64_t n;               /* pair ids */
    const uint8_t *ids;       /* n uvarints */
    size_t ids_len;
};
/* GW_OK or GW_ECORRUPT (short, n larger than the bytes could hold). */
int gw_store_rec_parse(const uint8_t *v, size_t len, struct gw_store_rec *r);
/* Next pair id of the record (at *off); GW_OK or GW_ECORRUPT (malformed
 * or >= 2^32). */
int gw_store_rec_next_id(const struct gw_store_rec *r, size_t *off, uint32_t *id);

/* Blob key: node window_start seq. */
void gw_store_blob_key(uint8_t *key, uint32_t node_id, int64_t window_start, uint32_t seq);

/* A validated blob: the directory (n entries of 8 bytes, 12 with sums) and
 * the block area; for "GWB2"/"GWB3" also the timestamp columns (m end
 * offsets, with sums for "GWB3", and the column area). */
struct gw_store_blob {
    uint32_t n;
    const uint8_t *dir;
    const uint8_t *data;
    size_t data_len;
    int v2;                     /* "GWB2"/"GWB3": entries start with a column ref */
    int sums;                   /* "GWB3": checksums in the header and directories */
    unsigned ent, cent;         /* directory strides: entries, columns */
    uint32_t ncols;
    const uint8_t *col_dir;     /* ncols x { end u32 [ | sum u32 ] } */
    const uint8_t *cols;        /* column area */
    const uint8_t *hdr;         /* the blob's first byte */
};
/* The checksum of a blob part: the low 32 bits of XXH3-64. */
uint32_t gw_store_blob_sum(const void *p, size_t len);
/* 1 when the blob has no checksums or when its header/directory checksum,
 * column c's or entry i's checksum matches; 0 otherwise. */
int gw_store_blob_hdr_ok(const struct gw_store_blob *b);
int gw_store_blob_col_ok(const struct gw_store_blob *b, uint32_t c);
int gw_store_blob_entry_ok(const struct gw_store_blob *b, uint32_t i);
/* Checks the magic ("GWB1", "GWB2" or "GWB3"), that the directories fit,
 * that sids are non-decreasing, that end offsets are non-decreasing and
 * within their areas, and for "GWB3" the header/directory checksum. Entry
 * and column checksums are checked by gw_store_blob_split/_resolve, where
 * an entry is read. GW_OK or GW_ECORRUPT. */
int gw_store_blob_parse(const void *v, size_t len, struct gw_store_blob *b);
/* The same for bytes that gw_store_blob_parse accepted before (a read
 * transaction's snapshot never changes): skips the O(n) directory order
 * checks. Out-of-range offsets stay impossible only with that guarantee. */
int gw_store_blob_parse_known(const void *v, size_t len, struct gw_store_blob *b);
/* Index of the first directory entry with sid >= sid (n when none). */
uint32_t gw_store_blob_lower(const struct gw_store_blob *b, uint32_t sid);
/* Entry i: its sid and its block. */
uint32_t gw_store_blob_sid(const struct gw_store_blob *b, uint32_t i);
void gw_store_blob_block(const struct gw_store_blob *b, uint32_t i, const uint8_t **p, size_t *len);
/* Column c (< ncols) of a GWB2 blob. */
void gw_store_blob_col(const struct gw_store_blob *b, uint32_t c, const uint8_t **p, size_t *len);
/* Entry i as a whole block: GWB1 entries as they are; GWB2 entries either
 * hold a whole block or a value part joined with its column into *scratch
 * (reset first; the result is valid until scratch changes). GW_OK,
 * GW_ECORRUPT, GW_ENOMEM. */
int gw_store_blob_resolve(const struct gw_store_blob *b, uint32_t i, struct gw_buf *scratch, const uint8_t **p,
                          size_t *len);
struct gw_store_txn;
struct gw_store_blob_col;
struct gw_store_blob_entry;
/* gw_store_blob_put_cols writing the format 3 layout ("GWB2", no
 * checksums): kept so tests can build stores as older builds wrote them. */
int gw_store_blob_put_cols_v2(struct gw_store_txn *t, uint32_t node_id, int64_t window_start,
                              const struct gw_store_blob_col *cols, size_t ncols,
                              const struct gw_store_blob_entry *entries, size_t n);
/* Entry i unjoined: *col = NULL and the whole block in *p, or the
 * timestamp column in *col and the value part in *p. GW_OK, GW_ECORRUPT
 * (also for a checksum of the entry or its column that does not match). */
int gw_store_blob_split(const struct gw_store_blob *b, uint32_t i, const uint8_t **p, size_t *len,
                        const uint8_t **col, size_t *col_len);

/* Partition database names "p%08lld". parse returns 1 and sets *day when
 * name (not NUL-terminated) is exactly a canonical partition name.
 * The rollup databases of src/store/rollup.c ("ds5m:%08lld", "ds1h:%08lld")
 * share the partition cache under encoded days above GW_PART_RAW_END:
 * GW_PART_R5M + day and GW_PART_R1H + day. Every raw day is below
 * GW_PART_RAW_END (|day| < 2^37 for any int64 millisecond time), and
 * gw_store_parts_collect never mixes the two regions. */
#define GW_PART_RAW_END (INT64_C(1) << 40)
#define GW_PART_R5M (INT64_C(2) << 40)
#define GW_PART_R1H (INT64_C(4) << 40)
#define GW_PART_RHALF (INT64_C(1) << 38)
void gw_store_part_name(char *buf, size_t cap, int64_t day);
int gw_store_part_parse(const char *name, size_t len, int64_t *day);

/* ------------------------------------------------ the store and its txns */

/* The named databases opened at store open (names and flags: store.c). */
enum {
    DB_META,
    DB_PAIRS,
    DB_PAIR_IDS,
    DB_SERIES,
    DB_SHASH,
    DB_POSTINGS,
    DB_NODES,
    DB_NODE_IDS,
    DB_MMETA,
    DB_COUNT
};

struct part {
    int64_t day;
    MDB_dbi dbi;
};

struct part_vec {
    struct part *v;
    size_t n, cap;
};

struct gw_store {
    MDB_env *env;
    MDB_dbi dbi[DB_COUNT];
    int have[DB_COUNT];
    int read_only;
    uint64_t max_map_bytes;
    char *dir;
    pthread_mutex_t write_mu;
    pthread_rwlock_t txn_lock;
    pthread_rwlock_t gate;
    pthread_mutex_t part_mu;
    struct part_vec parts;        /* sorted by day, unique days */
    size_t ro_seen_txnid;         /* read-only: last txn id the cache reflects */
};

struct gw_store_txn {
    struct gw_store *s;
    MDB_txn *txn;
    int write;
    int map_full;                 /* an operation hit MDB_MAP_FULL */
    int gate_held;
    int dropped;                  /* partitions were dropped in this txn */
    struct part_vec pending;      /* partitions opened in this write txn */
    struct gw_arena arena;        /* scratch (rebuilt labels), freed at txn end */
    int arena_on;
    struct gw_buf join;           /* a joined block handed to a block callback */
    int join_on;
    const void **seen;            /* read txn: blobs whose directories were checked
                                     (map addresses; open addressing, NULL = free) */
    size_t seen_cap, seen_n;
    int mdb_rc;
    char msg[200];
};

/* store.c. fsyncs directory dir (0, or -1 with errno), so the names created
 * in it survive a power cut. */
int gw_store_fsync_dir(const char *dir);
/* store.c. mkdir(path); when it creates it, fsyncs the parent too. 0 when
 * path exists afterwards, else -1 with errno. */
int gw_store_mkdir_durable(const char *path);

/* txn.c. LMDB return code -> gw_err code. */
int gw_store_map_mdb(int mrc);
/* Records an LMDB failure in the txn (first one wins; what names the
 * operation) and maps it. */
int gw_store_terr(struct gw_store_txn *t, int mrc, const char *what);
/* Begins an LMDB txn holding txn_lock shared (and gate shared when
 * with_gate). Handles MDB_MAP_RESIZED (another process grew the map). */
int gw_store_txn_begin_locked(struct gw_store *s, unsigned flags, int with_gate, MDB_txn **out,
                              struct gw_error *err);

/* partitions.c. Publishes partitions opened in a committed txn into the
 * cache (part_mu held / taken). */
void gw_store_parts_publish_locked(struct gw_store *s, const struct part_vec *pv);
void gw_store_parts_publish(struct gw_store *s, const struct part_vec *pv);
/* Opens every partition DBI that exists in txn's snapshot into pv. The
 * caller guarantees no concurrent mdb_dbi_open in this process. */
int gw_store_parts_scan(MDB_txn *txn, struct part_vec *pv, char *msg, size_t msg_cap);
/* Partition DBI for day in a write txn, created when missing. */
int gw_store_part_for_write(struct gw_store_txn *t, int64_t day, MDB_dbi *dbi);
/* Partitions with day in [dlo, dhi] valid in this txn, sorted by day. */
int gw_store_parts_collect(struct gw_store_txn *t, int64_t dlo, int64_t dhi, struct part_vec *out);
/* Drops the partitions with (encoded) day in [dlo, dhi]; *dropped (may be
 * NULL) gets the count. Takes the gate like gw_store_partitions_drop_before. */
int gw_store_parts_drop_range(struct gw_store_txn *t, int64_t dlo, int64_t dhi, unsigned *dropped);

/* series.c. The full name \0 value of a pair id. */
int gw_store_pair_text(struct gw_store_txn *t, MDB_dbi dids, uint32_t id, MDB_val *out);
/* Id of the pair whose key is key (built by gw_store_pair_key for n=v). */
int gw_store_pair_lookup(struct gw_store_txn *t, MDB_dbi dpairs, MDB_dbi dids, const uint8_t *key, size_t klen,
                         const char *n, size_t nl, const char *v, size_t vl, uint32_t *id);
/* Appends the sids stored under key (shash or postings) to out. */
int gw_store_read_ids(struct gw_store_txn *t, MDB_cursor *c, const void *key, size_t klen, struct gw_postings *out);

/* blocks.c. The last timestamp of sid's newest stored block (INT64_MIN
 * when none). */
int gw_store_blob_scan_newest(struct gw_store_txn *t, uint32_t node_id, uint64_t sid, int64_t *maxt);

/* The handle of fixed database `which` in t; GW_EINVAL without a txn,
 * GW_ENOTFOUND when the store does not have it (read-only, older store). */
static inline int gw_store_fixed_dbi(struct gw_store_txn *t, int which, MDB_dbi *dbi)
{
    if (!t || !t->txn)
        return GW_EINVAL;
    if (!t->s->have[which])
        return GW_ENOTFOUND;
    *dbi = t->s->dbi[which];
    return GW_OK;
}

static inline int gw_store_need_write(struct gw_store_txn *t)
{
    return (t && t->txn && t->write) ? GW_OK : GW_EINVAL;
}

/* The handles of the n fixed databases which[] into dbi[], as
 * gw_store_fixed_dbi gives them; with write, t must be a write txn
 * (GW_EINVAL). The first error wins. */
static inline int gw_store_fixed_dbis(struct gw_store_txn *t, int write, const int *which, size_t n, MDB_dbi *dbi)
{
    int rc = write ? gw_store_need_write(t) : GW_OK;
    for (size_t i = 0; i < n && rc == GW_OK; i++)
        rc = gw_store_fixed_dbi(t, which[i], &dbi[i]);
    return rc;
}

static inline int gw_store_cursor_open(struct gw_store_txn *t, MDB_dbi dbi, MDB_cursor **c)
{
    int mrc = mdb_cursor_open(t->txn, dbi, c);
    return mrc == MDB_SUCCESS ? GW_OK : gw_store_terr(t, mrc, "cursor open");
}

/* The value of key in fixed database `which` into *d (borrowed: valid
 * until the txn writes or ends); GW_OK, or the error (what names the
 * operation in its message, e.g. "series get"). */
static inline int gw_store_fixed_get(struct gw_store_txn *t, int which, void *key, size_t klen, MDB_val *d,
                                     const char *what)
{
    MDB_dbi dbi;
    int rc = gw_store_fixed_dbi(t, which, &dbi);
    if (rc != GW_OK)
        return rc;
    MDB_val k = {klen, key};
    int mrc = mdb_get(t->txn, dbi, &k, d);
    return mrc == MDB_SUCCESS ? GW_OK : gw_store_terr(t, mrc, what);
}

/* A cursor on fixed database `which` (close it with mdb_cursor_close):
 * GW_OK, GW_ENOTFOUND when the store does not have the database (to a
 * scan: nothing stored), or an error. */
static inline int gw_store_fixed_cursor(struct gw_store_txn *t, int which, MDB_cursor **c)
{
    MDB_dbi dbi;
    int rc = gw_store_fixed_dbi(t, which, &dbi);
    return rc == GW_OK ? gw_store_cursor_open(t, dbi, c) : rc;
}

#endif /* GW_STORE_INT_H */
