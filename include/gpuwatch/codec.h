/* gpuwatch/codec.h - small encoding helpers: varints, zigzag, CRC32C,
 * big-endian fixed-width integers, XXH3 hashing. Header-only where trivial.
 * Layer: L0 base (src/base/); includes only its layer and below (docs/architecture.md). */
#ifndef GW_CODEC_H
#define GW_CODEC_H

#include <stddef.h>
#include <stdint.h>

/* Unsigned LEB128. put returns bytes written (<= 10); buf must have 10. */
size_t gw_uvarint_put(uint8_t *buf, uint64_t v);
/* Returns bytes consumed, 0 on truncation or overlong (> 10 bytes). */
size_t gw_uvarint_get(const uint8_t *p, size_t len, uint64_t *v);
/* Bytes gw_uvarint_put writes for v (1..10), for sizing a buffer first. */
static inline size_t gw_uvarint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static inline uint64_t gw_zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t gw_unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

static inline void gw_put_be64(uint8_t *p, uint64_t v) {
    for (int i = 7; i >= 0; i--) { p[i] = (uint8_t)v; v >>= 8; }
}
static inline uint64_t gw_get_be64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = (v << 8) | p[i];
    return v;
}
static inline void gw_put_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}
static inline uint32_t gw_get_be32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline void gw_put_be16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static inline uint16_t gw_get_be16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }

/* CRC-32C (Castagnoli), as used by the WAL and remote-read frames. */
uint32_t gw_crc32c(uint32_t crc, const void *data, size_t len);

/* ---- Hashing: the project's only way to XXH3/XXH64 (base owns libxxhash).
 * The values are persisted (series ids, store keys, snapshots) and must
 * never change: they are exactly XXH3_64bits, XXH3_128bits and XXH64 of
 * xxHash 0.8 (tests/test_base.c pins them against the library). codec.c
 * compiles xxHash inline (XXH_INLINE_ALL), so a call costs one function
 * call and no dynamic linking; callers need no library of their own. ---- */

/* 64-bit XXH3 (seed 0) of a byte range. */
uint64_t gw_hash64(const void *data, size_t len);

/* 128-bit XXH3 (seed 0) of a byte range, as its two 64-bit halves. */
struct gw_hash128 {
    uint64_t lo, hi;   /* XXH128_hash_t's low64, high64 */
};
struct gw_hash128 gw_hash128(const void *data, size_t len);

/* Streaming XXH64 (Prometheus' labels.Hash is XXH64 of name 0xff value 0xff
 * ...). The state lives wherever the caller puts it (no allocation); its
 * bytes are private. reset, then update any number of times, then digest
 * (which does not change the state). The result equals XXH64 of the
 * concatenated bytes with the same seed. */
struct gw_xxh64 {
    _Alignas(8) unsigned char opaque[96];   /* an XXH64_state_t */
};
void gw_xxh64_reset(struct gw_xxh64 *st, uint64_t seed);
void gw_xxh64_update(struct gw_xxh64 *st, const void *data, size_t len);
uint64_t gw_xxh64_digest(const struct gw_xxh64 *st);
/* XXH64 of one byte range. */
uint64_t gw_xxh64(const void *data, size_t len, uint64_t seed);

/* Monotonic and wall clocks in ms / ns. */
int64_t gw_now_ms(void);          /* CLOCK_REALTIME, ms since epoch */
uint64_t gw_mono_ns(void);        /* CLOCK_MONOTONIC */

/* Parses a Prometheus duration ("55d", "1h30m", "90s", "500ms", "2w", "1y")
 * into ms. GW_OK or GW_EPARSE. */
int gw_parse_duration_ms(const char *s, int64_t *out_ms);

/* Parses a byte size: an integer or decimal number, then optionally B, KB,
 * MB, GB, TB, PB (powers of 1000) or KiB, MiB, GiB, TiB, PiB (powers of
 * 1024), case-insensitive ("500GB", "20GiB", "1.5TB", "4096"). GW_OK or
 * GW_EPARSE (also for a result of 2^64 bytes or more). */
int gw_parse_size_bytes(const char *s, uint64_t *out);

/* ---- UTF-8 (strict: no overlong forms, no surrogates, nothing above U+10FFFF) ---- */
/* Length (1..4) of the valid sequence at p and its code point in *cp; 0
 * when the bytes there are invalid or truncated (len >= 1). */
size_t gw_utf8_decode(const uint8_t *p, size_t len, uint32_t *cp);
/* Writes cp (<= U+10FFFF) into out (room for 4 bytes); returns the length. */
size_t gw_utf8_encode(uint32_t cp, char *out);
/* 1 if s[0..len) is valid UTF-8, else 0. */
int gw_utf8_valid(const char *s, size_t len);

#endif /* GW_CODEC_H */
