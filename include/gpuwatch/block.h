/* gpuwatch/block.h - the persisted sample block: one series, one time window.
 *
 * Two stages. Stage 1 turns the samples into small integers: timestamps as
 * deltas of deltas or as offsets from a regular grid (whichever is smaller);
 * values, when the block's values are exact decimals (v == m / 10^k for an
 * int64 m and a shared k, checked by round trip so the doubles come back
 * bit-exact), as mantissas of order 0 / 1 / 2 (raw, delta, delta-of-delta),
 * as Gorilla XOR bits, or (noisy blocks) as deltas or deltas of deltas of
 * the IEEE bit patterns taken as integers ("BITS"): whichever is smallest. Each integer sequence is written as zeros,
 * zigzag varints, zero runs, bit-packed or Rice-coded, whichever is smallest. Special values (stale NaN, other NaN payloads, +-Inf, -0)
 * ride in an exception list so one odd sample does not spoil the block.
 * Stage 2 compresses the stage-1 bytes with zstd when that is smaller.
 * Format and a worked example: top of src/chunk/block.c.
 *
 * Blocks are immutable and self-describing (count, mint, maxt in a header).
 * Round trip is bit-exact for every float64, including NaN payloads.
 * Layer: L1 encoding (src/chunk/); includes only its layer and below (docs/architecture.md). */
#ifndef GW_BLOCK_H
#define GW_BLOCK_H

#include <stddef.h>
#include <stdint.h>
#include "gpuwatch/buf.h"
#include "gpuwatch/err.h"

#define GW_BLOCK_MAX_SAMPLES (1u << 20)

/* Appends the encoding of n samples (t strictly increasing) to out.
 * GW_OK, GW_EINVAL (n == 0, n too large, t not increasing), GW_ENOMEM,
 * GW_ETOOLARGE (out's ceiling). */
int gw_block_encode(const int64_t *t, const double *v, size_t n, struct gw_buf *out);

/* Reads the header only: sample count, first and last timestamp.
 * GW_OK or GW_ECORRUPT. */
int gw_block_info(const uint8_t *b, size_t len, uint32_t *n, int64_t *mint, int64_t *maxt);

/* Decodes into caller arrays of capacity cap (>= the count from
 * gw_block_info). Untrusted input: GW_ECORRUPT on any inconsistency,
 * GW_ELIMIT if cap is too small, GW_ENOMEM (zstd scratch). */
int gw_block_decode(const uint8_t *b, size_t len, int64_t *t, double *v, size_t cap, size_t *n);

/* Grows a pair of decode arrays, *t and *v of capacity *cap, to hold at
 * least need samples (contents kept). The new capacity doubles from *cap,
 * or from first when *cap is 0; first == 0 asks for exactly need. On
 * GW_ENOMEM the arrays stay valid (one may have grown) and *cap is kept.
 * GW_OK or GW_ENOMEM. */
int gw_block_samples_reserve(int64_t **t, double **v, size_t *cap, size_t need, size_t first);

/* ---- split form: one timestamp column shared by many value parts ----
 * Series scraped together (one exporter, one node) carry identical
 * timestamps; the store keeps such a column once per blob and each series'
 * values as a "value part". gw_block_join() turns a column and a value part
 * back into an ordinary block (the bytes gw_block_encode would give without
 * zstd), so readers only ever see blocks.
 *
 * Timestamp column: the block header (count, mint, maxt) and the timestamp
 * section; gw_block_info() reads it like a block. Appended to out.
 * GW_OK, GW_EINVAL (n == 0, n too large, t not increasing), GW_ENOMEM,
 * GW_ETOOLARGE. */
int gw_block_ts_encode(const int64_t *t, size_t n, struct gw_buf *out);
/* Value part of n values (the count is the column's): a kind byte (0 raw,
 * 1 zstd) and the value section. Appended to out. GW_OK, GW_EINVAL,
 * GW_ENOMEM, GW_ETOOLARGE. */
int gw_block_values_encode(const double *v, size_t n, struct gw_buf *out);
/* Appends to out the block made of timestamp column col and value part
 * val (decompressed when needed). Untrusted input: GW_ECORRUPT for a bad
 * column header or kind byte (a column/part mismatch shows as GW_ECORRUPT
 * from gw_block_decode), GW_ENOMEM, GW_ETOOLARGE. */
int gw_block_join(const uint8_t *col, size_t col_len, const uint8_t *val, size_t val_len, struct gw_buf *out);
/* Decoding the split form without joining (a reader that meets one column
 * under many value parts decodes the column once): gw_block_ts_decode()
 * decodes column col into t (cap >= its count, from gw_block_info) and
 * sets *n; gw_block_values_decode() decodes value part val of n values
 * (n = its column's count) into v. Together they give exactly what
 * gw_block_decode gives for the joined block. Untrusted input: GW_ECORRUPT
 * (also for a column with bytes after its timestamp section), GW_ELIMIT
 * (cap too small), GW_EINVAL (n == 0 or too large), GW_ENOMEM. */
int gw_block_ts_decode(const uint8_t *col, size_t col_len, int64_t *t, size_t cap, size_t *n);
int gw_block_values_decode(const uint8_t *val, size_t val_len, size_t n, double *v);

#endif /* GW_BLOCK_H */
