/* store_int.h - helpers shared by the files of the store module: key
 * encoders/decoders (keys.c) and the limits that shape the keys. Nothing
 * outside src/store/ includes this file. */
#ifndef GW_STORE_INT_H
#define GW_STORE_INT_H

#include <stddef.h>
#include <stdint.h>
#include "gpuwatch/buf.h"

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
#define GW_BLOB_MAX 0x7fffffffu  /* a blob stays under 2 GiB */
#define GW_PART_NAME_MAX 32

/* Big-endian helpers. */
void gw_store_put_be64(uint8_t *p, uint64_t v);
uint64_t gw_store_get_be64(const uint8_t *p);
void gw_store_put_be32(uint8_t *p, uint32_t v);
uint32_t gw_store_get_be32(const uint8_t *p);
void gw_store_put_be16(uint8_t *p, uint16_t v);
uint16_t gw_store_get_be16(const uint8_t *p);

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
uint64_t gw_store_hash(const void *p, size_t len);

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

/* A validated blob: the directory (n entries of 8 bytes) and the block
 * area; for "GWB2" also the timestamp columns (m end offsets, column area). */
struct gw_store_blob {
    uint32_t n;
    const uint8_t *dir;
    const uint8_t *data;
    size_t data_len;
    int v2;                     /* "GWB2": entries start with a column ref */
    uint32_t ncols;
    const uint8_t *col_dir;     /* ncols x end u32 */
    const uint8_t *cols;        /* column area */
};
/* Checks the magic ("GWB1" or "GWB2"), that the directories fit, that sids
 * are non-decreasing and that end offsets are non-decreasing and within
 * their areas. GW_OK or GW_ECORRUPT. */
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
/* Entry i unjoined: *col = NULL and the whole block in *p, or the
 * timestamp column in *col and the value part in *p. GW_OK, GW_ECORRUPT. */
int gw_store_blob_split(const struct gw_store_blob *b, uint32_t i, const uint8_t **p, size_t *len,
                        const uint8_t **col, size_t *col_len);

/* Partition database names "p%08lld". parse returns 1 and sets *day when
 * name (not NUL-terminated) is exactly a canonical partition name. */
void gw_store_part_name(char *buf, size_t cap, int64_t day);
int gw_store_part_parse(const char *name, size_t len, int64_t *day);

#endif /* GW_STORE_INT_H */
