/* keys.c - byte layouts of every key and value the LMDB store writes, and the
 * helpers that build and parse them. All integers in keys are fixed-width
 * big-endian so memcmp order equals numeric order. Timestamps in keys and
 * values are "biased": (uint64_t)t ^ (1 << 63), so signed order = byte order.
 *
 * Databases (one LMDB environment, named DBIs), format version 4 (2 and 3
 * are read as is: they differ only in having no GWB3 blobs (2: no GWB2
 * either) and version 1 rollup values):
 *   meta         key: ascii name (no NUL)       value: be64 for counters
 *                  "format_version" = 3, "next_node_id" (first free node
 *                  id, >= 1), "next_pair_id" (first free pair id, >= 1)
 *   pairs        key: name \0 value             value: pair_id be32
 *                long form: when name_len + 1 + value_len > 480 the key is
 *                  name \0 value[0..P) 0xff be64 XXH3-64(value)
 *                with P = min(400, 470 - name_len) (always < value_len).
 *                Label names longer than 469 bytes and values containing a
 *                0xff byte (never valid UTF-8) are refused, so a value part
 *                of exactly P + 9 bytes with 0xff at offset P is the long
 *                form. Its full value is in pair_ids.
 *   pair_ids     key: pair_id be32              value: name \0 value (full)
 *   series       key: sid be64 (< 2^32)         value: maxt be64 biased
 *                  (INT64_MIN when nothing is persisted) | node_id be32 |
 *                  gpu be16 | uvarint n | n x uvarint pair_id, in the order
 *                  of the canonical labels (sorted by name)
 *   shash        key: labels hash be64          data:  sid be32 (DUPSORT|DUPFIXED)
 *   postings     key: pair_id be32              data:  sid be32 (DUPSORT|DUPFIXED),
 *                  appended in increasing sid order
 *   nodes        key: node name bytes           value: node_id be32
 *   node_ids     key: node_id be32              value: node name bytes
 *   mmeta        key: metric family name        value: u8 type | uvarint help_len |
 *                                                      help | unit (rest)
 *   p<day>       one DBI per UTC day, name printf("p%08lld", day) with
 *                day = floor(window_start / 86400000):
 *                key: node_id be32 | window_start be64 biased | seq be32
 *                value (blob): "GWB1" | n u32 BE | n x { sid u32 BE |
 *                  end u32 BE } | blocks. Entries are sorted by sid, blocks
 *                  of one sid in time order; block i spans [end(i-1), end(i))
 *                  of the block area (end(-1) = 0). seq is 0 for the first
 *                  blob of a node and window, then 1 + the largest one.
 *                value (blob, format 3, what the flusher writes): "GWB2" |
 *                  n u32 BE | m u32 BE | m x col_end u32 BE | n x { sid u32
 *                  BE | end u32 BE } | column area | block area.
 *                  Column c spans [col_end(c-1), col_end(c)) of the column
 *                  area: a timestamp column (gw_block_ts_encode: a block
 *                  header and timestamp section). Entry i spans [end(i-1),
 *                  end(i)) of the block area: uvarint ref, then ref = 0: a
 *                  whole block; ref = c >= 1: a value part
 *                  (gw_block_values_encode) whose block is gw_block_join of
 *                  column c - 1 and the part. Series scraped together (same
 *                  node, same timestamps) thus keep one copy of their
 *                  timestamps. Readers get whole blocks (joined on
 *                  read, gw_store_blocks_get) or, from
 *                  gw_store_block_parts_get, the column and the value
 *                  part apart, so a query decodes each column once.
 *                value (blob, format 4, what the flusher and compaction
 *                  write): "GWB3" | hsum u32 BE | n u32 BE | m u32 BE |
 *                  m x { col_end u32 BE | col_sum u32 BE } | n x { sid u32
 *                  BE | end u32 BE | sum u32 BE } | column area | block
 *                  area: GWB2 with checksums, each the low 32 bits of
 *                  XXH3-64: hsum of the bytes from n to the end of the
 *                  entry directory, col_sum of column c's bytes, sum of
 *                  entry i's bytes (its ref and its block or value part).
 *                  Readers compare hsum when they parse a blob and the
 *                  entry's and its column's sums when they read an entry
 *                  (a mismatch is GW_ECORRUPT); verify compares them all.
 *
 *   ds5m:<day>, ds1h:<day>  downsampled aggregates of day <day> ("%08lld"),
 *                one DBI per resolution and day: layout at the top of
 *                rollup.c (keys, node record, done marker), src/db/downsample.c
 *                (values) and src/db/downsample_prof.c (node record).
 *
 * Canonical labels (labels.h): repeated { uvarint name_len | name |
 * uvarint value_len | value } sorted by name. They are rebuilt from the
 * pair ids on read and equal the bytes given to gw_store_series_put.
 *
 * Worked example: an empty store; series sid 5 on node "n1" (node_id 1),
 * GPU 3, labels {__name__="up", gpu="3"}, labels hash H:
 *   canonical labels (18 bytes):
 *     08 5f 5f 6e 61 6d 65 5f 5f 02 75 70 03 67 70 75 01 33
 *     (8 "__name__" 2 "up" 3 "gpu" 1 "3")
 *   pairs:    5f 5f 6e 61 6d 65 5f 5f 00 75 70 ("__name__\0up") -> 00 00 00 01
 *             67 70 75 00 33 ("gpu\0" "3")                     -> 00 00 00 02
 *   pair_ids: 00 00 00 01 -> "__name__\0up";  00 00 00 02 -> "gpu\0" "3"
 *   meta:     "next_pair_id" -> 00 00 00 00 00 00 00 03
 *   series:   00 00 00 00 00 00 00 05 ->
 *             00 00 00 00 00 00 00 00 (maxt INT64_MIN biased) |
 *             00 00 00 01 | 00 03 | 02 | 01 02   (17 bytes)
 *   shash:    be64(H) -> 00 00 00 05
 *   postings: 00 00 00 01 -> 00 00 00 05;  00 00 00 02 -> 00 00 00 05
 *   nodes:    6e 31 ("n1") -> 00 00 00 01;  node_ids: 00 00 00 01 -> 6e 31
 *   After gw_store_series_maxt_put(5, 1700000000000) the first 8 bytes of
 *   the series value are 80 00 01 8b cf e5 68 00.
 *   A blob of node 1 for the window starting at t = 1700000000000 ms
 *   (2023-11-14T22:13:20Z, day 19675) holding sid 5's block "abc" and
 *   sid 7's block "de":
 *   p00019675: 00 00 00 01 | 80 00 01 8b cf e5 68 00 | 00 00 00 00 ->
 *              47 57 42 31 ("GWB1") | 00 00 00 02 |
 *              00 00 00 05 00 00 00 03 | 00 00 00 07 00 00 00 05 |
 *              61 62 63 64 65 ("abcde")   (29 bytes)
 *   (t = -1 would be biased to 7f ff ff ff ff ff ff ff, sorting before 0.)
 *   The same two series as a GWB2 blob, sid 5 being the 3 samples of the
 *   worked example in block.c (column 10 03 d0 0f b0 ea 01 00, value part
 *   00 11 00 01 1e 32 32) and sid 7 the whole block "de":
 *              47 57 42 32 ("GWB2") | 00 00 00 02 (n) | 00 00 00 01 (m) |
 *              00 00 00 08 (column 0 ends at 8) |
 *              00 00 00 05 00 00 00 08 | 00 00 00 07 00 00 00 0b |
 *              10 03 d0 0f b0 ea 01 00 (column 0) |
 *              01 00 11 00 01 1e 32 32 (ref 1 + value part) | 00 64 65
 *              (ref 0 + "de")   (51 bytes; pinned in tests/test_store.c)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/err.h"
#include "gpuwatch/store.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/block.h"
#include "store/store_int.h"

uint64_t gw_store_bias(int64_t t)
{
    return (uint64_t)t ^ (UINT64_C(1) << 63);
}

int64_t gw_store_unbias(uint64_t u)
{
    u ^= UINT64_C(1) << 63;
    int64_t t;
    memcpy(&t, &u, sizeof t);
    return t;
}

int64_t gw_store_day_of(int64_t t_ms)
{
    int64_t d = t_ms / GW_DAY_MS;
    if (t_ms % GW_DAY_MS < 0)
        d--;
    return d;
}

void gw_store_lab_iter_init(struct gw_store_lab_iter *it, const uint8_t *b, size_t len)
{
    it->p = b;
    it->len = b ? len : 0;
    it->off = 0;
}

/* One length-prefixed string; 1 ok, 0 malformed. */
static int lab_str(struct gw_store_lab_iter *it, const char **s, size_t *n)
{
    uint64_t v;
    size_t k = gw_uvarint_get(it->p + it->off, it->len - it->off, &v);
    if (k == 0)
        return 0;
    it->off += k;
    if (v == 0 || v > it->len - it->off)
        return 0;
    *s = (const char *)it->p + it->off;
    *n = (size_t)v;
    it->off += (size_t)v;
    return 1;
}

int gw_store_lab_iter_next(struct gw_store_lab_iter *it, const char **name, size_t *name_len,
                           const char **value, size_t *value_len)
{
    if (it->off >= it->len)
        return 0;
    if (!lab_str(it, name, name_len) || !lab_str(it, value, value_len))
        return GW_ECORRUPT;
    return 1;
}

int gw_store_labels_find(const uint8_t *b, size_t len, const char *name, size_t name_len,
                         const char **value, size_t *value_len)
{
    struct gw_store_lab_iter it;
    gw_store_lab_iter_init(&it, b, len);
    const char *n, *v;
    size_t nl, vl;
    int rc;
    while ((rc = gw_store_lab_iter_next(&it, &n, &nl, &v, &vl)) == 1) {
        if (nl == name_len && memcmp(n, name, nl) == 0) {
            *value = v;
            *value_len = vl;
            return 1;
        }
    }
    return rc;
}

size_t gw_store_value_prefix(size_t name_len)
{
    size_t room = GW_KEY_MAX - 1 - GW_TRUNC_TAIL - name_len; /* name_len <= GW_NAME_MAX_KEY */
    return room < GW_VALUE_PREFIX ? room : GW_VALUE_PREFIX;
}

int gw_store_pair_key(uint8_t *key, size_t *klen, const char *name, size_t name_len,
                          const char *value, size_t value_len)
{
    if (name_len == 0 || memchr(name, 0, name_len))
        return GW_EINVAL;
    if (name_len > GW_NAME_MAX_KEY)
        return GW_ETOOLARGE;
    if (value_len && memchr(value, 0xff, value_len))
        return GW_EINVAL;
    memcpy(key, name, name_len);
    key[name_len] = 0;
    size_t o = name_len + 1;
    if (value_len <= GW_KEY_MAX - o) {
        if (value_len)
            memcpy(key + o, value, value_len);
        *klen = o + value_len;
        return GW_OK;
    }
    /* value_len > GW_KEY_MAX - 1 - name_len >= p + 9, so p bytes exist. */
    size_t p = gw_store_value_prefix(name_len);
    memcpy(key + o, value, p);
    o += p;
    key[o++] = 0xff;
    gw_put_be64(key + o, gw_hash64(value, value_len));
    *klen = o + 8;
    return GW_OK;
}

int gw_store_value_is_truncated(size_t name_len, const uint8_t *vpart, size_t vlen, uint64_t *hash)
{
    size_t p = gw_store_value_prefix(name_len);
    if (vlen != p + GW_TRUNC_TAIL || vpart[p] != 0xff)
        return 0;
    *hash = gw_get_be64(vpart + p + 1);
    return 1;
}

int gw_store_rec_parse(const uint8_t *v, size_t len, struct gw_store_rec *r)
{
    if (len < GW_SERIES_FIXED + 1)
        return GW_ECORRUPT;
    r->maxt = gw_store_unbias(gw_get_be64(v));
    r->node_id = gw_get_be32(v + 8);
    r->gpu = gw_get_be16(v + 12);
    size_t k = gw_uvarint_get(v + GW_SERIES_FIXED, len - GW_SERIES_FIXED, &r->n);
    if (k == 0)
        return GW_ECORRUPT;
    r->ids = v + GW_SERIES_FIXED + k;
    r->ids_len = len - GW_SERIES_FIXED - k;
    if (r->n > r->ids_len) /* every id takes at least one byte */
        return GW_ECORRUPT;
    return GW_OK;
}

int gw_store_rec_next_id(const struct gw_store_rec *r, size_t *off, uint32_t *id)
{
    uint64_t v;
    if (*off >= r->ids_len)
        return GW_ECORRUPT;
    size_t k = gw_uvarint_get(r->ids + *off, r->ids_len - *off, &v);
    if (k == 0 || v > UINT32_MAX)
        return GW_ECORRUPT;
    *off += k;
    *id = (uint32_t)v;
    return GW_OK;
}

void gw_store_blob_key(uint8_t *key, uint32_t node_id, int64_t window_start, uint32_t seq)
{
    gw_put_be32(key, node_id);
    gw_put_be64(key + 4, gw_store_bias(window_start));
    gw_put_be32(key + 12, seq);
}

static int blob_dir_check(const uint8_t *dir, uint32_t n, unsigned ent, size_t area)
{
    uint32_t prev_sid = 0, prev_end = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t sid = gw_get_be32(dir + (size_t)i * ent);
        uint32_t end = gw_get_be32(dir + (size_t)i * ent + 4);
        if (sid < prev_sid || end < prev_end || end > area)
            return GW_ECORRUPT;
        prev_sid = sid;
        prev_end = end;
    }
    return GW_OK;
}

uint32_t gw_store_blob_sum(const void *p, size_t len)
{
    return (uint32_t)gw_hash64(p, len);
}

static int blob_parse(const void *v, size_t len, struct gw_store_blob *b, int check_dir);

int gw_store_blob_parse(const void *v, size_t len, struct gw_store_blob *b)
{
    return blob_parse(v, len, b, 1);
}

int gw_store_blob_parse_known(const void *v, size_t len, struct gw_store_blob *b)
{
    return blob_parse(v, len, b, 0);
}

static int blob_parse(const void *v, size_t len, struct gw_store_blob *b, int check_dir)
{
    const uint8_t *p = v;
    memset(b, 0, sizeof *b);
    b->hdr = p;
    if (len >= GW_BLOB_HDR && memcmp(p, "GWB1", 4) == 0) {
        uint32_t n = gw_get_be32(p + 4);
        if (n > (len - GW_BLOB_HDR) / GW_BLOB_ENT)
            return GW_ECORRUPT;
        const uint8_t *dir = p + GW_BLOB_HDR;
        size_t area = len - GW_BLOB_HDR - (size_t)n * GW_BLOB_ENT;
        if (check_dir && blob_dir_check(dir, n, GW_BLOB_ENT, area) != GW_OK)
            return GW_ECORRUPT;
        b->n = n;
        b->dir = dir;
        b->ent = GW_BLOB_ENT;
        b->data = dir + (size_t)n * GW_BLOB_ENT;
        b->data_len = area;
        return GW_OK;
    }
    int v3 = len >= GW_BLOB3_HDR && memcmp(p, "GWB3", 4) == 0;
    if (!v3 && (len < GW_BLOB2_HDR || memcmp(p, "GWB2", 4) != 0))
        return GW_ECORRUPT;
    size_t hdr = v3 ? GW_BLOB3_HDR : GW_BLOB2_HDR;
    unsigned ent = v3 ? GW_BLOB3_ENT : GW_BLOB_ENT, cent = v3 ? GW_BLOB3_COL : 4;
    uint32_t n = gw_get_be32(p + hdr - 8), m = gw_get_be32(p + hdr - 4);
    size_t rest = len - hdr;
    if (m > rest / cent)
        return GW_ECORRUPT;
    rest -= (size_t)m * cent;
    if (n > rest / ent)
        return GW_ECORRUPT;
    rest -= (size_t)n * ent;
    const uint8_t *col_dir = p + hdr, *dir = col_dir + (size_t)m * cent;
    uint32_t prev = 0;
    for (uint32_t c = 0; c < m; c++) {
        uint32_t end = gw_get_be32(col_dir + (size_t)c * cent);
        if (end < prev || end > rest)
            return GW_ECORRUPT;
        prev = end;
    }
    size_t cols_len = prev, area = rest - cols_len;
    b->n = n;
    b->dir = dir;
    b->v2 = 1;
    b->sums = v3;
    b->ent = ent;
    b->cent = cent;
    b->ncols = m;
    b->col_dir = col_dir;
    b->cols = dir + (size_t)n * ent;
    b->data = b->cols + cols_len;
    b->data_len = area;
    if (check_dir && (blob_dir_check(dir, n, ent, area) != GW_OK || !gw_store_blob_hdr_ok(b)))
        return GW_ECORRUPT;
    return GW_OK;
}

int gw_store_blob_hdr_ok(const struct gw_store_blob *b)
{
    if (!b->sums)
        return 1;
    /* from n to the end of the entry directory */
    size_t len = (size_t)(b->cols - (b->hdr + 8));
    return gw_store_blob_sum(b->hdr + 8, len) == gw_get_be32(b->hdr + 4);
}

int gw_store_blob_col_ok(const struct gw_store_blob *b, uint32_t c)
{
    if (!b->sums)
        return 1;
    const uint8_t *p;
    size_t len;
    gw_store_blob_col(b, c, &p, &len);
    return gw_store_blob_sum(p, len) == gw_get_be32(b->col_dir + (size_t)c * b->cent + 4);
}

int gw_store_blob_entry_ok(const struct gw_store_blob *b, uint32_t i)
{
    if (!b->sums)
        return 1;
    const uint8_t *p;
    size_t len;
    gw_store_blob_block(b, i, &p, &len);
    return gw_store_blob_sum(p, len) == gw_get_be32(b->dir + (size_t)i * b->ent + 8);
}

uint32_t gw_store_blob_sid(const struct gw_store_blob *b, uint32_t i)
{
    return gw_get_be32(b->dir + (size_t)i * b->ent);
}

uint32_t gw_store_blob_lower(const struct gw_store_blob *b, uint32_t sid)
{
    uint32_t lo = 0, hi = b->n;
    while (lo < hi) {
        uint32_t m = lo + (hi - lo) / 2;
        if (gw_store_blob_sid(b, m) < sid)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

void gw_store_blob_block(const struct gw_store_blob *b, uint32_t i, const uint8_t **p, size_t *len)
{
    uint32_t start = i ? gw_get_be32(b->dir + (size_t)(i - 1) * b->ent + 4) : 0;
    uint32_t end = gw_get_be32(b->dir + (size_t)i * b->ent + 4);
    *p = b->data + start;
    *len = end - start;
}

void gw_store_blob_col(const struct gw_store_blob *b, uint32_t c, const uint8_t **p, size_t *len)
{
    uint32_t start = c ? gw_get_be32(b->col_dir + (size_t)(c - 1) * b->cent) : 0;
    uint32_t end = gw_get_be32(b->col_dir + (size_t)c * b->cent);
    *p = b->cols + start;
    *len = end - start;
}

int gw_store_blob_split(const struct gw_store_blob *b, uint32_t i, const uint8_t **p, size_t *len,
                        const uint8_t **col, size_t *col_len)
{
    const uint8_t *e;
    size_t elen;
    gw_store_blob_block(b, i, &e, &elen);
    *col = NULL;
    *col_len = 0;
    if (!b->v2) {
        *p = e;
        *len = elen;
        return GW_OK;
    }
    if (!gw_store_blob_entry_ok(b, i))
        return GW_ECORRUPT;
    uint64_t ref;
    size_t k = gw_uvarint_get(e, elen, &ref);
    if (k == 0 || ref > b->ncols)
        return GW_ECORRUPT;
    *p = e + k;
    *len = elen - k;
    if (ref > 0) {
        if (!gw_store_blob_col_ok(b, (uint32_t)(ref - 1)))
            return GW_ECORRUPT;
        gw_store_blob_col(b, (uint32_t)(ref - 1), col, col_len);
    }
    return GW_OK;
}

int gw_store_blob_resolve(const struct gw_store_blob *b, uint32_t i, struct gw_buf *scratch, const uint8_t **p,
                          size_t *len)
{
    const uint8_t *e, *col;
    size_t elen, clen;
    int src = gw_store_blob_split(b, i, &e, &elen, &col, &clen);
    if (src != GW_OK)
        return src;
    if (!col) {
        *p = e;
        *len = elen;
        return GW_OK;
    }
    gw_buf_reset(scratch);
    int rc = gw_block_join(col, clen, e, elen, scratch);
    if (rc != GW_OK)
        return rc == GW_ENOMEM ? rc : GW_ECORRUPT;
    *p = scratch->data;
    *len = scratch->len;
    return GW_OK;
}

void gw_store_part_name(char *buf, size_t cap, int64_t day)
{
    if (day >= GW_PART_R1H - GW_PART_RHALF)
        snprintf(buf, cap, "ds1h:%08lld", (long long)(day - GW_PART_R1H));
    else if (day >= GW_PART_R5M - GW_PART_RHALF)
        snprintf(buf, cap, "ds5m:%08lld", (long long)(day - GW_PART_R5M));
    else
        snprintf(buf, cap, "p%08lld", (long long)day);
}

int gw_store_part_parse(const char *name, size_t len, int64_t *day)
{
    size_t pre;
    int64_t base;
    if (len >= 1 && name[0] == 'p') {
        pre = 1;
        base = 0;
    } else if (len >= 5 && memcmp(name, "ds5m:", 5) == 0) {
        pre = 5;
        base = GW_PART_R5M;
    } else if (len >= 5 && memcmp(name, "ds1h:", 5) == 0) {
        pre = 5;
        base = GW_PART_R1H;
    } else {
        return 0;
    }
    if (len <= pre || len >= GW_PART_NAME_MAX)
        return 0;
    char tmp[GW_PART_NAME_MAX], canon[GW_PART_NAME_MAX];
    memcpy(tmp, name + pre, len - pre);
    tmp[len - pre] = 0;
    char *end = NULL;
    long long v = strtoll(tmp, &end, 10);
    if (end == tmp || *end != 0)
        return 0;
    if (base ? (v <= -GW_PART_RHALF || v >= GW_PART_RHALF) : (v <= -GW_PART_RAW_END / 2 || v >= GW_PART_RAW_END / 2))
        return 0;
    gw_store_part_name(canon, sizeof canon, (int64_t)v + base);
    if (strlen(canon) != len || memcmp(canon, name, len) != 0)
        return 0;
    *day = (int64_t)v + base;
    return 1;
}
