/* src/chunk/xor.c - the Prometheus TSDB XOR (Gorilla) float chunk.
 *
 * FORMAT (byte-compatible with the Prometheus TSDB "XOR" encoding, so the bytes
 * go unchanged into remote-read STREAMED_XOR_CHUNKS frames):
 *
 *   bytes 0..1   sample count, big-endian uint16
 *   then a bit stream, most significant bit of each byte first:
 *   sample 0     t0 as a signed varint (zigzag LEB128, Go binary.PutVarint),
 *                v0 as the raw 64 IEEE-754 bits
 *   sample 1     t1 - t0 as an unsigned varint (LEB128), then v1 as XOR (below)
 *   sample i>=2  dod = (t_i - t_{i-1}) - (t_{i-1} - t_{i-2}):
 *                  '0'                          dod == 0
 *                  '10'   + 14-bit two's compl.  -8191   <= dod <= 8192
 *                  '110'  + 17-bit               -65535  <= dod <= 65536
 *                  '1110' + 20-bit               -524287 <= dod <= 524288
 *                  '1111' + 64-bit               anything else
 *                (a payload equal to +2^(k-1) reads back as positive; only values
 *                 above it are negative), then the value as XOR:
 *   XOR value    x = bits(v_i) ^ bits(v_{i-1})
 *                  '0'                          x == 0
 *                  '10' + (64-L-T) bits of x>>T  reuse the previous window
 *                                               (L, T) when lead(x) >= L and
 *                                               trail(x) >= T
 *                  '11' + 5-bit lead (capped at 31) + 6-bit count of
 *                       significant bits (64 written as 0) + the bits; this
 *                       becomes the new window.
 *   The last byte is padded with zero bits. Like the reference encoder, a
 *   write of a whole number of bytes that ends on a byte boundary leaves one
 *   extra zero byte at the end (the reference bit stream keeps a "free" last
 *   byte); we reproduce it so the bytes match exactly.
 *
 * Worked example (pinned in tests/test_chunk.c): samples (1000, 1.0),
 * (2000, 1.0), (3000, 2.0):
 *   00 03                     count 3
 *   d0 0f                     varint(1000): zigzag 2000 = 0x7d0 -> d0 0f
 *   3f f0 00 00 00 00 00 00   bits of 1.0
 *   e8 07                     uvarint(1000)
 *   then bits: '0' (1.0 ^ 1.0 == 0), '0' (dod 0),
 *   x = 0x3ff0.. ^ 0x4000.. = 0x7ff0000000000000: lead 1, trail 52, 11 sig bits:
 *   '11' '00001' '001011' '11111111111'
 *   -> 0 0 11 00001 001011 11111111111 = 26 bits, padded:
 *   00110000 10010111 11111111 11000000 = 30 97 ff c0
 * Total 18 bytes.
 *
 * The decoder reads untrusted bytes: it never reads past len and reports
 * GW_ECORRUPT on truncation, overlong varints or impossible XOR windows. */
#include <string.h>
#include <stdlib.h>

#include "gpuwatch/chunk.h"

#define XOR_INIT_CAP 64u
#define XOR_HDR 2u

static const uint8_t empty_chunk[2] = {0, 0};

static inline uint64_t dbits(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

static inline double bitsd(uint64_t u)
{
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}

void gw_xor_init(struct gw_xor_chunk *c)
{
    memset(c, 0, sizeof *c);
    c->lead = 0xff;
}

void gw_xor_free(struct gw_xor_chunk *c)
{
    if (!c)
        return;
    free(c->b);
    gw_xor_init(c);
}

/* Makes room for `extra` more bytes past the current bit position (plus the
 * header and the pad byte); new memory is zeroed, the writer ORs bits in. */
static int xor_reserve(struct gw_xor_chunk *c, uint32_t extra)
{
    uint64_t need = (uint64_t)XOR_HDR + c->nbits / 8u + 1u + extra + 9u;
    if (need <= c->cap)
        return GW_OK;
    uint64_t ncap = c->cap ? c->cap : XOR_INIT_CAP;
    /* grow by a quarter: head chunks are many and long-lived, so slack
     * costs more memory than the extra reallocations cost time */
    while (ncap < need)
        ncap += ncap / 4 > 32 ? (ncap / 4 + 31) & ~31ull : 32;
    if (ncap > UINT32_MAX)
        return GW_ENOMEM;
    uint8_t *nb = realloc(c->b, (size_t)ncap);
    if (!nb)
        return GW_ENOMEM;
    memset(nb + c->cap, 0, (size_t)(ncap - c->cap));
    if (c->cap == 0) {
        nb[0] = 0;
        nb[1] = 0;
    }
    c->b = nb;
    c->cap = (uint32_t)ncap;
    return GW_OK;
}

/* Writes the low nbits (1..64) of u, most significant first: ORs the
 * left-aligned bits into the big-endian 64-bit word at the current byte
 * (and the byte after it when they straddle). xor_reserve keeps 9 spare
 * bytes past the bit position, and unwritten bytes are zero. */
static void put_bits(struct gw_xor_chunk *c, uint64_t u, unsigned nbits)
{
    uint32_t pos = c->nbits;
    uint8_t *p = c->b + XOR_HDR + pos / 8u;
    unsigned used = pos & 7u;
    uint64_t v = nbits >= 64 ? u : (u & ((1ull << nbits) - 1u)) << (64u - nbits);
    uint64_t w;
    memcpy(&w, p, 8);
    w = __builtin_bswap64(w) | (v >> used);
    w = __builtin_bswap64(w);
    memcpy(p, &w, 8);
    if (used + nbits > 64u)
        p[8] |= (uint8_t)(v << (8u - used));
    pos += nbits;
    c->nbits = pos;
    /* The reference stream keeps a free zero byte after a whole-byte write
     * that lands on a byte boundary. */
    c->pad = (uint8_t)((nbits % 8u == 0) && (pos % 8u == 0));
}

static void put_varint_bytes(struct gw_xor_chunk *c, uint64_t u)
{
    do {
        uint8_t byte = (uint8_t)(u & 0x7f);
        u >>= 7;
        if (u)
            byte |= 0x80;
        put_bits(c, byte, 8);
    } while (u);
}

static inline unsigned clz64(uint64_t x) { return x ? (unsigned)__builtin_clzll(x) : 64u; }
static inline unsigned ctz64(uint64_t x) { return x ? (unsigned)__builtin_ctzll(x) : 64u; }

static void put_value(struct gw_xor_chunk *c, uint64_t vb)
{
    uint64_t x = vb ^ c->v;
    if (x == 0) {
        put_bits(c, 0, 1);
        return;
    }
    unsigned lead = clz64(x), trail = ctz64(x);
    if (lead >= 32)
        lead = 31;
    if (c->lead != 0xff && lead >= c->lead && trail >= c->trail) {
        put_bits(c, 2, 2); /* '10' */
        put_bits(c, x >> c->trail, 64u - c->lead - c->trail);
        return;
    }
    c->lead = (uint8_t)lead;
    c->trail = (uint8_t)trail;
    unsigned sig = 64u - lead - trail;
    put_bits(c, 3, 2); /* '11' */
    put_bits(c, lead, 5);
    put_bits(c, sig & 63u, 6);
    put_bits(c, x >> trail, sig);
}

/* Same acceptance window as the reference: -(2^(k-1)-1) <= x <= 2^(k-1). */
static inline int in_range(int64_t x, unsigned k)
{
    int64_t hi = (int64_t)1 << (k - 1);
    return x >= -(hi - 1) && x <= hi;
}

int gw_xor_append(struct gw_xor_chunk *c, int64_t t_ms, double v)
{
    if (c->n >= GW_XOR_MAX_SAMPLES)
        return GW_EFULL;
    if (c->n > 0 && t_ms <= c->t)
        return GW_EOOO;
    /* Worst case: varint 10 bytes + 8 raw, or 4+64 dod bits + 2+5+6+64. */
    int rc = xor_reserve(c, 24);
    if (rc != GW_OK)
        return rc;
    uint64_t vb = dbits(v);
    uint64_t tdelta = 0;
    if (c->n == 0) {
        uint64_t zz = ((uint64_t)t_ms << 1) ^ (uint64_t)(t_ms >> 63);
        put_varint_bytes(c, zz);
        put_bits(c, vb, 64);
    } else if (c->n == 1) {
        tdelta = (uint64_t)t_ms - (uint64_t)c->t;
        put_varint_bytes(c, tdelta);
        put_value(c, vb);
    } else {
        tdelta = (uint64_t)t_ms - (uint64_t)c->t;
        int64_t dod = (int64_t)(tdelta - (uint64_t)c->tdelta);
        if (dod == 0) {
            put_bits(c, 0, 1);
        } else if (in_range(dod, 14)) {
            put_bits(c, 2, 2);
            put_bits(c, (uint64_t)dod & 0x3fffu, 14);
        } else if (in_range(dod, 17)) {
            put_bits(c, 6, 3);
            put_bits(c, (uint64_t)dod & 0x1ffffu, 17);
        } else if (in_range(dod, 20)) {
            put_bits(c, 14, 4);
            put_bits(c, (uint64_t)dod & 0xfffffu, 20);
        } else {
            put_bits(c, 15, 4);
            put_bits(c, (uint64_t)dod, 64);
        }
        put_value(c, vb);
    }
    c->t = t_ms;
    c->v = vb;
    c->tdelta = (int64_t)tdelta;
    c->n++;
    c->b[0] = (uint8_t)(c->n >> 8);
    c->b[1] = (uint8_t)c->n;
    return GW_OK;
}

const uint8_t *gw_xor_bytes(struct gw_xor_chunk *c, size_t *len)
{
    if (!c->b) {
        *len = sizeof empty_chunk;
        return empty_chunk;
    }
    *len = XOR_HDR + (c->nbits + 7u) / 8u + c->pad;
    return c->b;
}

int gw_xor_clone(struct gw_xor_chunk *dst, const struct gw_xor_chunk *src)
{
    struct gw_xor_chunk tmp = *src;
    if (src->b) {
        tmp.b = malloc(src->cap);
        if (!tmp.b)
            return GW_ENOMEM;
        memcpy(tmp.b, src->b, src->cap);
    }
    *dst = tmp;
    return GW_OK;
}

size_t gw_xor_mem(const struct gw_xor_chunk *c)
{
    return c->b ? c->cap : 0;
}

/* ---- decoder ------------------------------------------------------------ */

int gw_xor_iter_init(struct gw_xor_iter *it, const uint8_t *b, size_t len)
{
    memset(it, 0, sizeof *it);
    if (!b || len < XOR_HDR || len - XOR_HDR > SIZE_MAX / 8u) {
        it->err = GW_ECORRUPT;
        it->n = 0;
        return GW_ECORRUPT;
    }
    it->n = (uint16_t)((b[0] << 8) | b[1]);
    it->b = b + XOR_HDR;
    it->len_bits = (len - XOR_HDR) * 8u;
    it->err = GW_OK;
    return GW_OK;
}

/* Reads nbits (1..64) into *out; 0 on truncation. */
static int get_bits(struct gw_xor_iter *it, unsigned nbits, uint64_t *out)
{
    if (nbits > it->len_bits - it->pos || it->pos > it->len_bits)
        return 0;
    uint64_t u = 0;
    size_t pos = it->pos;
    unsigned left = nbits;
    while (left > 0) {
        unsigned used = (unsigned)(pos & 7u);
        unsigned room = 8u - used;
        unsigned take = left < room ? left : room;
        unsigned byte = it->b[pos / 8u];
        unsigned chunk = (byte >> (room - take)) & ((1u << take) - 1u);
        u = (u << take) | chunk;
        pos += take;
        left -= take;
    }
    it->pos = pos;
    *out = u;
    return 1;
}

static int get_uvarint(struct gw_xor_iter *it, uint64_t *out)
{
    uint64_t x = 0;
    unsigned s = 0;
    for (int i = 0; i < 10; i++) {
        uint64_t byte;
        if (!get_bits(it, 8, &byte))
            return 0;
        if (byte < 0x80) {
            if (i == 9 && byte > 1)
                return 0; /* overflows 64 bits */
            *out = x | (byte << s);
            return 1;
        }
        x |= (byte & 0x7f) << s;
        s += 7;
    }
    return 0;
}

static int iter_fail(struct gw_xor_iter *it)
{
    it->err = GW_ECORRUPT;
    it->i = it->n;
    return 0;
}

static int read_value(struct gw_xor_iter *it)
{
    uint64_t bit;
    if (!get_bits(it, 1, &bit))
        return 0;
    if (bit == 0)
        return 1;
    if (!get_bits(it, 1, &bit))
        return 0;
    if (bit == 1) {
        uint64_t lead, sig;
        if (!get_bits(it, 5, &lead) || !get_bits(it, 6, &sig))
            return 0;
        if (sig == 0)
            sig = 64;
        if (lead + sig > 64)
            return 0; /* no encoder writes this window */
        it->lead = (uint8_t)lead;
        it->trail = (uint8_t)(64u - lead - sig);
    }
    unsigned mbits = 64u - it->lead - it->trail;
    uint64_t x;
    if (!get_bits(it, mbits, &x))
        return 0;
    it->v ^= it->trail >= 64 ? 0 : x << it->trail;
    return 1;
}

int gw_xor_iter_next(struct gw_xor_iter *it, int64_t *t_ms, double *v)
{
    if (it->err != GW_OK || it->i >= it->n)
        return 0;
    if (it->i == 0) {
        uint64_t zz, vb;
        if (!get_uvarint(it, &zz) || !get_bits(it, 64, &vb))
            return iter_fail(it);
        it->t = (int64_t)(zz >> 1) ^ -(int64_t)(zz & 1);
        it->v = vb;
    } else if (it->i == 1) {
        uint64_t d;
        if (!get_uvarint(it, &d))
            return iter_fail(it);
        it->tdelta = (int64_t)d;
        it->t = (int64_t)((uint64_t)it->t + d);
        if (!read_value(it))
            return iter_fail(it);
    } else {
        unsigned prefix = 0, k;
        for (k = 0; k < 4; k++) {
            uint64_t bit;
            if (!get_bits(it, 1, &bit))
                return iter_fail(it);
            if (!bit)
                break;
            prefix++;
        }
        int64_t dod = 0;
        unsigned sz = 0;
        switch (prefix) {
        case 0: break;
        case 1: sz = 14; break;
        case 2: sz = 17; break;
        case 3: sz = 20; break;
        default: {
            uint64_t raw;
            if (!get_bits(it, 64, &raw))
                return iter_fail(it);
            dod = (int64_t)raw;
            break;
        }
        }
        if (sz) {
            uint64_t raw;
            if (!get_bits(it, sz, &raw))
                return iter_fail(it);
            if (raw > ((uint64_t)1 << (sz - 1)))
                raw -= (uint64_t)1 << sz; /* wraps to the negative value */
            dod = (int64_t)raw;
        }
        uint64_t d = (uint64_t)it->tdelta + (uint64_t)dod;
        it->tdelta = (int64_t)d;
        it->t = (int64_t)((uint64_t)it->t + d);
        if (!read_value(it))
            return iter_fail(it);
    }
    it->i++;
    *t_ms = it->t;
    *v = bitsd(it->v);
    return 1;
}
