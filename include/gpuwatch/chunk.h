/* gpuwatch/chunk.h - Prometheus-compatible XOR (Gorilla) chunk.
 *
 * Byte-for-byte the TSDB XOR chunk format (2-byte BE sample count, t0 varint,
 * v0 raw, t1 uvarint delta, v1 XOR, then dod buckets 0/10/110/1110/1111 with
 * 14/17/20/64-bit payloads and XOR'd values with leading/trailing windows),
 * so the bytes can go unchanged into remote-read STREAMED_XOR_CHUNKS frames.
 * The head keeps each series' open chunk in this form. Layout and a worked
 * example: top of src/chunk/xor.c; golden bytes in tests/test_chunk.c.
 *
 * One writer per chunk (the owning series serializes).
 * Layer: L1 encoding (src/chunk/); includes only its layer and below (docs/architecture.md). */
#ifndef GW_CHUNK_H
#define GW_CHUNK_H

#include <stddef.h>
#include <stdint.h>
#include "gpuwatch/err.h"

#define GW_XOR_MAX_SAMPLES 65535

struct gw_xor_chunk {
    uint8_t *b;          /* owned bit stream (malloc'd, grows) */
    uint32_t cap;        /* bytes allocated */
    uint32_t nbits;      /* bits written */
    uint16_t n;          /* samples */
    uint8_t lead, trail; /* current XOR window (lead 0xff = none yet) */
    uint8_t pad;         /* 1: bytes end with one free zero byte (matches the
                            reference encoder after a whole-byte write) */
    int64_t t;           /* last timestamp */
    int64_t tdelta;      /* last delta */
    uint64_t v;          /* last value bits */
};

void gw_xor_init(struct gw_xor_chunk *c);        /* empty, no allocation */
void gw_xor_free(struct gw_xor_chunk *c);        /* NULL ok; c reusable after */
/* GW_OK; GW_EOOO if n > 0 and t_ms <= last t; GW_EFULL at GW_XOR_MAX_SAMPLES;
 * GW_ENOMEM. Values are stored bit-exact (any NaN payload). */
int gw_xor_append(struct gw_xor_chunk *c, int64_t t_ms, double v);
/* Borrowed view of the chunk bytes (count header included, last byte padded
 * with zero bits); valid until the next append/free. len 2 for empty. */
const uint8_t *gw_xor_bytes(struct gw_xor_chunk *c, size_t *len);
/* Copies the chunk (deep). GW_OK or GW_ENOMEM. */
int gw_xor_clone(struct gw_xor_chunk *dst, const struct gw_xor_chunk *src);
/* Bytes of heap memory held. */
size_t gw_xor_mem(const struct gw_xor_chunk *c);

/* Decoder over untrusted bytes; never reads past len, never allocates. */
struct gw_xor_iter {
    const uint8_t *b;
    size_t len_bits, pos;
    uint16_t n, i;
    uint8_t lead, trail;
    int64_t t, tdelta;
    uint64_t v;
    int err;             /* GW_OK or GW_ECORRUPT once next() returned 0 */
};
int gw_xor_iter_init(struct gw_xor_iter *it, const uint8_t *b, size_t len);
/* 1 per sample, 0 at end (check it->err). */
int gw_xor_iter_next(struct gw_xor_iter *it, int64_t *t_ms, double *v);

#endif /* GW_CHUNK_H */
