/* src/chunk/block.c - the persisted sample block codec (one series, one window).
 *
 * FORMAT (all varints are LEB128; "zz" = zigzag-mapped signed value)
 *
 *   byte    flags: high nibble version (1); bit 0 set = body is zstd
 *   uvarint n                  1 .. GW_BLOCK_MAX_SAMPLES
 *   zz      mint               first timestamp (ms)
 *   uvarint maxt - mint        (as unsigned 64-bit difference)
 *   body                       to the end of the block; when bit 0 is set it
 *                              is one magicless zstd frame (no checksum, no
 *                              dictionary id) whose content is the body
 *
 * Body = timestamp section (only when n >= 2), then value section.
 *
 * Integer sequence ("seq") of a count known to the reader:
 *   byte kind
 *     0  all zeros, nothing follows
 *     1  every element as a zz varint
 *     2  zero runs: repeated (uvarint zeros, zz value) pairs; the last pair
 *        may stop after its run when the count is reached
 *     3  bit-packed: byte width w (0..64), zz base, then ceil(count*w/8)
 *        bytes holding (element - base) as w-bit fields, MSB first
 *     4  Rice: byte k (0..63), zz base (the median), then per element
 *        z = zz(element - base) as q = z >> k ones, a zero, and the k low
 *        bits of z; a run of 20 ones (no zero) escapes to 64 raw bits of z.
 *        Bits MSB first, padded to a byte.
 *     5  ANS (format 5): byte k (0..63), zz base, byte S (2..64), S uvarint
 *        frequencies summing to 4096, uvarint nesc, nesc uvarint z values
 *        (the escapes, in order), uvarint L, L bytes of a static rANS
 *        stream (src/chunk/entropy.h) of one symbol per element: q = z >> k
 *        when q < S - 1, else S - 1 (an escape: z is the next of the escape
 *        list), then the k low bits of z of every non-escaped element, MSB
 *        first, padded to a byte. The decoder must end the stream in the
 *        encoder's initial state having used every byte and every escape.
 *        Near the entropy of residuals whose shape is not geometric (the
 *        flat or triangular noise of counters), where Rice spends up to a
 *        bit more an element.
 *   The encoder computes the size of every kind and writes the smallest.
 *
 * Timestamp section: with D = (maxt - mint) / (n - 1) (unsigned division),
 *   the seq of n-1 elements r0 = (t1 - t0) - D, r_i = dod_i (delta of delta).
 *   A perfectly regular series is all zeros: one byte for all timestamps.
 *
 * Value section: byte mode.
 *   mode & 3 == 0: XOR - n values as Gorilla bits (first value raw 64 bits,
 *     then '0' same | '10' + bits in the previous window | '11' + 5-bit lead
 *     + 6-bit significant count (64 as 0) + bits), padded to a byte.
 *   mode & 3 == 1: DECIMAL - every ordinary value is m / 10^k (m an int64
 *     with |m| < 2^53, k = mode >> 4 in 0..15, value = (double)m when k = 0,
 *     else (double)m / 1e{k}; the encoder checks that this division gives
 *     back the exact bits, so decoding is exact). Order o = (mode >> 2) & 3:
 *       uvarint nexc, then nexc exceptions, each a uvarint
 *       (gap << 3 | class) where gap = index - previous exception index - 1
 *       (first: index), class 0 stale NaN 0x7ff0000000000002, 1 NaN
 *       0x7ff8000000000001, 2 +Inf, 3 -Inf, 4 -0.0, 5 raw: 8 bytes big-endian
 *       follow. Exceptions are removed from the mantissa sequence.
 *       The c = n - nexc mantissas: o = 0: seq of m_i; o = 1: zz m0 then seq of
 *       the c-1 deltas; o = 2: zz m0, zz (m1 - m0), then seq of the c-2
 *       deltas of deltas (heads only as far as c allows).
 *   mode & 3 == 2: BITS - the values' IEEE-754 bit patterns u_i taken as
 *     64-bit integers (any double, NaN payloads and -0 included: no
 *     exceptions), order o = (mode >> 2) & 3 in 1..2, mode >> 4 = 0:
 *       be64 u_0; o = 2 and n >= 2: zz (u_1 - u_0); then the seq of the
 *       n - o deltas (o = 1: u_i - u_{i-1}) or deltas of deltas (o = 2),
 *       all modulo 2^64. For doubles of one sign and binary exponent the
 *       delta of the bit patterns is the delta of the values in units of
 *       the last place: large integer counters (above 2^53, where DECIMAL
 *       cannot go) and smoothly moving full-precision values cost their
 *       increments instead of XOR's mantissa bits.
 *   LPC (format 5): order field 3 of DECIMAL (over the mantissas, after the
 *     exception list and zz m0) or of BITS (over the bit patterns, after be64
 *     u0): zz mu, byte p (1..32), byte shift (0..30), p zz coefficients c_i
 *     (|c_i| < 2^14), then the seq of the n' - 1 residuals e_j of the
 *     centred deltas x_j = a_j - a_{j-1} - mu (j >= 1):
 *       x_j = e_j + asr(sum_{i=1..min(p,j-1)} c_i x_{j-i}, shift)
 *     all modulo 2^64 (asr rounds toward minus infinity), so any sequence
 *     comes back bit-exactly. Deltas that are negatively correlated - a
 *     counter read at jittered instants is a line plus bounded noise - cost
 *     the noise instead of the difference of two noises.
 *   The encoder builds the forms and keeps the smallest (BITS only for
 *   blocks whose other forms cost more than BLK_BITS_TRY bytes a value; LPC
 *   only for blocks of >= 64 values costing more than 2 bits a value, with
 *   the order from the Levinson-Durbin errors; ANS only for sequences of
 *   >= 32 elements costing more than a bit an element).
 *
 * Flag bit 1 set = the timestamp section is the GRID form instead: zz (G - D)
 * then the seq of n-1 offsets e_i = t_i - (t0 + i * G); the encoder uses the
 * median interval as G and keeps whichever form is smaller.
 *
 * Stage 2: the body is compressed with zstd (level 3; bodies under 8 bytes are
 * not tried); the compressed form is kept when it is smaller. The decoder
 * bounds the frame's declared content size by 24 n + 64.
 *
 * SPLIT FORM (gw_block_ts_encode / gw_block_values_encode / gw_block_join):
 * a timestamp column is header + timestamp section of a block whose flags
 * byte never has the zstd bit (so gw_block_info reads it); a value part is
 *   byte kind: 0 = the value section follows as is, 1 = one magicless zstd
 *        frame (as above) whose content is the value section
 * Joining appends column and (decompressed) value section: a raw block.
 * gw_block_ts_decode / gw_block_values_decode decode the two apart (the
 * column must end exactly where its timestamp section does), giving the
 * samples gw_block_decode gives for the joined block.
 * For the worked example below, column = 10 03 d0 0f b0 ea 01 00 and value
 * part = 00 11 00 01 1e 32 32; joined, they are the 14 bytes shown.
 *
 * Worked example (pinned in tests/test_block.c): t = 1000, 16000, 31000,
 * v = 1.5, 2.5, 2.5:
 *   10        version 1, raw body, dod timestamps
 *   03        n = 3
 *   d0 0f     zz(1000) = 2000
 *   b0 ea 01  maxt - mint = 30000
 *   00        timestamps: D = 15000, residuals 0, 0 -> all-zero seq
 *             (the grid form would need one more byte for its interval)
 *   11        values: decimal, order 0, k = 1 (mantissas 15, 25, 25)
 *   00        no exceptions
 *   01 1e 32 32  varint seq: zz(15) = 30, zz(25) = 50, 50 (order 1 and 2
 *             cost the same 4 bytes; ties keep the lower order)
 * 14 bytes; the body (7 bytes) is too small to try zstd. The XOR value
 * section for the same values would take 13 bytes instead of 6.
 */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include <math.h>
#include <pthread.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/block.h"
#include "gpuwatch/codec.h"
#include "entropy.h"

#define BLK_VERSION 1u
#define BLK_FLAG_ZSTD 0x01u
#define BLK_FLAG_GRID 0x02u
#define BLK_ZSTD_LEVEL 3
#define BLK_ZSTD_MIN 1024
#define BLK_MAX_K 15

enum { SEQ_ZERO = 0, SEQ_VARINT = 1, SEQ_RUNS = 2, SEQ_PACK = 3, SEQ_RICE = 4, SEQ_ANS = 5 };
/* ANS is tried for sequences of at least this many elements whose best
 * other kind costs more than a bit an element. */
#define SEQ_ANS_MIN 32u
#define RICE_ESC 20u /* unary quotients this long escape to 64 raw bits */
enum { VM_XOR = 0, VM_DEC = 1, VM_BITS = 2 };
#define ORD_LPC 3u /* the order field's value for linear prediction */
/* LPC is tried for blocks of at least this many values whose best form so
 * far costs more than 2 bits a value. */
#define BLK_LPC_MIN 64u
/* BITS is tried only for blocks whose best other form costs more than
 * this many bytes per value (noisy values: the others are cheap already). */
#define BLK_BITS_TRY 2
enum { EXC_STALE = 0, EXC_NAN = 1, EXC_PINF = 2, EXC_NINF = 3, EXC_NZERO = 4, EXC_RAW = 5 };

#define STALE_BITS 0x7ff0000000000002ull
#define NAN_BITS 0x7ff8000000000001ull
#define PINF_BITS 0x7ff0000000000000ull
#define NINF_BITS 0xfff0000000000000ull
#define NZERO_BITS 0x8000000000000000ull

static const double p10[BLK_MAX_K + 1] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7,
                                          1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};

static inline uint64_t dbits(double v) { uint64_t u; memcpy(&u, &v, sizeof u); return u; }
static inline double bitsd(uint64_t u) { double v; memcpy(&v, &u, sizeof v); return v; }

static inline size_t uvlen(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) { v >>= 7; n++; }
    return n;
}

static inline unsigned bitwidth(uint64_t v) { return v ? 64u - (unsigned)__builtin_clzll(v) : 0u; }

/* Upper bound of the body size for n samples; the encoder never exceeds it. */
static size_t body_bound(size_t n) { return 24u * n + 64u; }

/* ---- writer / reader ---------------------------------------------------- */

struct wr {
    uint8_t *p;
    size_t len;
    uint64_t acc; /* bit writer: pending bits */
    unsigned nacc;
};

static inline void w_byte(struct wr *w, uint8_t b) { w->p[w->len++] = b; }
static inline void w_uv(struct wr *w, uint64_t v) { w->len += gw_uvarint_put(w->p + w->len, v); }
static inline void w_zz(struct wr *w, int64_t v) { w_uv(w, gw_zigzag(v)); }

/* Appends the low nbits (0..64) of v to the bit writer. */
static void w_bits(struct wr *w, uint64_t v, unsigned nbits)
{
    while (nbits > 0) {
        unsigned take = nbits > 8 ? 8 : nbits;
        uint64_t part = (v >> (nbits - take)) & ((1u << take) - 1u);
        w->acc = (w->acc << take) | part;
        w->nacc += take;
        nbits -= take;
        if (w->nacc >= 8) {
            w->nacc -= 8;
            w_byte(w, (uint8_t)(w->acc >> w->nacc));
        }
    }
}

static void w_flush(struct wr *w)
{
    if (w->nacc) {
        w_byte(w, (uint8_t)(w->acc << (8 - w->nacc)));
        w->nacc = 0;
    }
    w->acc = 0;
}

struct rd {
    const uint8_t *p;
    size_t len, pos;
    size_t bitpos; /* bit reader position within p[pos..] */
};

static int r_byte(struct rd *r, uint8_t *b)
{
    if (r->pos >= r->len)
        return 0;
    *b = r->p[r->pos++];
    return 1;
}

static int r_uv(struct rd *r, uint64_t *v)
{
    size_t k = gw_uvarint_get(r->p + r->pos, r->len - r->pos, v);
    r->pos += k;
    return k != 0;
}

static int r_zz(struct rd *r, int64_t *v)
{
    uint64_t u;
    if (!r_uv(r, &u))
        return 0;
    *v = gw_unzigzag(u);
    return 1;
}

/* The 8 bytes at p as a big-endian integer (one load and a byte swap). */
static inline uint64_t load_be64(const uint8_t *p)
{
    uint64_t w;
    memcpy(&w, p, sizeof w);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    w = __builtin_bswap64(w);
#elif !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_BIG_ENDIAN__
    w = 0;
    for (int i = 0; i < 8; i++)
        w = (w << 8) | p[i];
#endif
    return w;
}

/* Bit reads start at byte r->pos; r_bits_end() moves pos past the bytes used. */
static int r_bits(struct rd *r, unsigned nbits, uint64_t *out)
{
    size_t avail = (r->len - r->pos) * 8u;
    if (r->bitpos > avail || nbits > avail - r->bitpos)
        return 0;
    uint64_t u = 0;
    size_t bp = r->bitpos;
    const uint8_t *p = r->p + r->pos;
    if (nbits == 0) {
        *out = 0;
        return 1;
    }
    /* fast path: one big-endian 64-bit load covers the bits */
    if (nbits <= 56 && (bp >> 3) + 8 <= r->len - r->pos) {
        uint64_t w = load_be64(p + (bp >> 3));
        *out = (w << (bp & 7u)) >> (64u - nbits);
        r->bitpos = bp + nbits;
        return 1;
    }
    while (nbits > 0) {
        unsigned used = (unsigned)(bp & 7u), room = 8u - used;
        unsigned take = nbits < room ? nbits : room;
        unsigned part = ((unsigned)p[bp >> 3] >> (room - take)) & ((1u << take) - 1u);
        u = (u << take) | part;
        bp += take;
        nbits -= take;
    }
    r->bitpos = bp;
    *out = u;
    return 1;
}

static void r_bits_end(struct rd *r)
{
    r->pos += (r->bitpos + 7u) / 8u;
    r->bitpos = 0;
}

/* ---- integer sequences -------------------------------------------------- */

struct seqplan {
    int kind;
    size_t size;
    unsigned width;
    int64_t base;
    int64_t med;                  /* the median (Rice and ANS base) */
    int k0;                       /* log2 of the mean distance from it */
    unsigned nsym;                /* SEQ_ANS: symbols, the last one escapes */
    uint16_t freq[ENT_MAXSYM];    /* SEQ_ANS: their frequencies */
};

/* Median of cnt values (cnt >= 1), by quickselect on a scratch copy. */
static int64_t median(const int64_t *r, size_t cnt, int64_t *sel)
{
    memcpy(sel, r, cnt * sizeof *sel);
    size_t lo = 0, hi = cnt - 1, k = cnt / 2;
    while (lo < hi) {
        int64_t piv = sel[lo + (hi - lo) / 2];
        size_t i = lo, j = hi;
        while (i <= j) {
            while (sel[i] < piv) i++;
            while (sel[j] > piv) j--;
            if (i <= j) {
                int64_t tmp = sel[i];
                sel[i] = sel[j];
                sel[j] = tmp;
                i++;
                if (j == 0)
                    break;
                j--;
            }
        }
        if (k <= j) hi = j;
        else if (k >= i) lo = i;
        else break;
    }
    return sel[k];
}

static inline uint64_t rice_z(int64_t x, int64_t base) { return gw_zigzag((int64_t)((uint64_t)x - (uint64_t)base)); }

/* Bits of the Rice code of z with parameter k. */
static inline size_t rice_bits(uint64_t z, unsigned k)
{
    uint64_t q = z >> k;
    return q < RICE_ESC ? (size_t)q + 1u + k : RICE_ESC + 64u;
}

/* SEQ_ANS around base with the Rice-like split z = q << k | low: the
 * quotients q (the last symbol for q >= nsym - 1, whose z then follows
 * whole in an escape list) go through rANS with this block's frequencies,
 * the k low bits are packed. Tries k near k0 and keeps the smallest in *p
 * when it beats p->size. */
static void seq_plan_ans(const int64_t *r, size_t cnt, int64_t base, int k0, struct seqplan *p)
{
    /* One histogram of q0 = z >> kb at the finest k tried (kb); a coarser
     * k = kb + d has q = q0 >> d, so its histogram is summed from this
     * one. Elements with q0 >= FINE escape at every k tried. binlen sums
     * the bytes of the escape list entries per bin. */
    enum { NK = 5, FINE = ENT_MAXSYM << (NK - 1) };
    uint32_t hist[FINE];
    uint32_t binlen[FINE];
    size_t over = 0, overlen = 0;
    uint64_t qmax = 0;
    int kb = k0 - 3 < 0 ? 0 : k0 - 3;
    if (kb > 63)
        return;
    for (size_t i = 0; i < cnt; i++) {
        uint64_t q = rice_z(r[i], base) >> kb;
        if (q > qmax)
            qmax = q;
    }
    size_t nbins = qmax < FINE ? (size_t)qmax + 1u : FINE;
    memset(hist, 0, nbins * sizeof *hist);
    memset(binlen, 0, nbins * sizeof *binlen);
    for (size_t i = 0; i < cnt; i++) {
        uint64_t z = rice_z(r[i], base), q = z >> kb;
        if (q < FINE) {
            hist[q]++;
            binlen[q] += (uint32_t)uvlen(z);
        } else {
            over++;
            overlen += uvlen(z);
        }
    }
    for (int d = 0; d < NK && kb + d <= 63; d++) {
        unsigned k = (unsigned)(kb + d);
        uint64_t qm = qmax >> d;
        unsigned nsym = qm + 2u < ENT_MAXSYM ? (unsigned)qm + 2u : ENT_MAXSYM;
        uint32_t h[ENT_MAXSYM];
        memset(h, 0, sizeof h);
        size_t nesc = over, escbytes = overlen;
        for (size_t q0 = 0; q0 < nbins; q0++) {
            size_t q = q0 >> d;
            if (q < nsym - 1u) {
                h[q] += hist[q0];
            } else {
                nesc += hist[q0];
                escbytes += binlen[q0];
            }
        }
        h[nsym - 1] = (uint32_t)nesc;
        uint16_t freq[ENT_MAXSYM];
        ent_normalize(h, nsym, cnt, freq);
        size_t sz = 3 + uvlen(gw_zigzag(base)) + uvlen(nesc) + escbytes + 3 + 5;
        for (unsigned j = 0; j < nsym; j++)
            sz += uvlen(freq[j]);
        sz += (size_t)(ent_cost_bits(h, freq, nsym) / 8.0) + ((cnt - nesc) * (size_t)k + 7u) / 8u;
        if (sz < p->size) {
            p->kind = SEQ_ANS;
            p->size = sz;
            p->width = k;
            p->base = base;
            p->nsym = nsym;
            memcpy(p->freq, freq, nsym * sizeof *freq);
        }
    }
}

/* Lets SEQ_ANS compete in plan p of r[0..cnt) (made by seq_plan). */
static void seq_plan_add_ans(const int64_t *r, size_t cnt, struct seqplan *p)
{
    if (cnt >= SEQ_ANS_MIN && p->size > cnt / 8u)
        seq_plan_ans(r, cnt, p->med, p->k0, p);
}

/* The smallest kind for r[0..cnt); ans = 0 leaves SEQ_ANS out (a caller
 * choosing between residual orders compares them without it, then plans
 * the chosen one with it: ANS saves about the same on each). */
static struct seqplan seq_plan(const int64_t *r, size_t cnt, int64_t *sel, int ans)
{
    size_t sv = 1, sr = 1, run = 0;
    int64_t mn = r[0], mx = r[0];
    int allzero = 1;
    for (size_t i = 0; i < cnt; i++) {
        int64_t x = r[i];
        uint64_t z = gw_zigzag(x);
        sv += uvlen(z);
        if (x == 0) {
            run++;
        } else {
            allzero = 0;
            sr += uvlen(run) + uvlen(z);
            run = 0;
        }
        if (x < mn) mn = x;
        if (x > mx) mx = x;
    }
    if (run)
        sr += uvlen(run);
    struct seqplan p = {.kind = SEQ_ZERO, .size = 1};
    if (allzero)
        return p;
    unsigned w = bitwidth((uint64_t)mx - (uint64_t)mn);
    size_t sp = 2 + uvlen(gw_zigzag(mn)) + (cnt * w + 7u) / 8u;
    p.width = w;
    p.base = mn;
    p.kind = SEQ_VARINT;
    p.size = sv;
    if (sr < p.size) { p.kind = SEQ_RUNS; p.size = sr; }
    if (sp < p.size) { p.kind = SEQ_PACK; p.size = sp; }
    /* Rice around the median: try parameters near log2 of the mean, the
     * four candidates costed in one pass. */
    int64_t med = median(r, cnt, sel);
    long double sum = 0;
    for (size_t i = 0; i < cnt; i++)
        sum += (long double)rice_z(r[i], med);
    uint64_t mean = (uint64_t)(sum / (long double)cnt);
    int k0 = (int)bitwidth(mean) - 1;
    size_t kbits[4] = {0, 0, 0, 0};
    int klo = k0 - 2;
    for (size_t i = 0; i < cnt; i++) {
        uint64_t z = rice_z(r[i], med);
        for (int d = 0; d < 4; d++) {
            int k = klo + d;
            if (k >= 0 && k <= 63) kbits[d] += rice_bits(z, (unsigned)k);
        }
    }
    for (int k = k0 - 2; k <= k0 + 1; k++) {
        if (k < 0 || k > 63)
            continue;
        size_t bits = kbits[k - klo];
        size_t sz = 2 + uvlen(gw_zigzag(med)) + (bits + 7u) / 8u;
        if (sz < p.size) {
            p.kind = SEQ_RICE;
            p.size = sz;
            p.width = (unsigned)k;
            p.base = med;
        }
    }
    p.med = med;
    p.k0 = k0;
    if (ans)
        seq_plan_add_ans(r, cnt, &p);
    return p;
}

/* SEQ_ANS body after its kind byte (tmp: 3 * cnt + 8 bytes of scratch). */
static void seq_write_ans(struct wr *w, const int64_t *r, size_t cnt, const struct seqplan *p, uint8_t *tmp)
{
    unsigned k = p->width, esc = p->nsym - 1u;
    w_byte(w, (uint8_t)k);
    w_zz(w, p->base);
    w_byte(w, (uint8_t)p->nsym);
    for (unsigned j = 0; j < p->nsym; j++)
        w_uv(w, p->freq[j]);
    size_t nesc = 0;
    for (size_t i = 0; i < cnt; i++) {
        uint64_t q = rice_z(r[i], p->base) >> k;
        tmp[i] = (uint8_t)(q < esc ? q : esc);
        nesc += q >= esc;
    }
    w_uv(w, nesc);
    for (size_t i = 0; nesc && i < cnt; i++)
        if (tmp[i] == esc)
            w_uv(w, rice_z(r[i], p->base));
    const uint8_t *stream;
    size_t len = ent_encode(tmp, cnt, p->freq, p->nsym, tmp + cnt, &stream);
    w_uv(w, len);
    memcpy(w->p + w->len, stream, len);
    w->len += len;
    if (k) {
        uint64_t mask = k == 64 ? ~0ull : (1ull << k) - 1u;
        for (size_t i = 0; i < cnt; i++)
            if (tmp[i] != esc)
                w_bits(w, rice_z(r[i], p->base) & mask, k);
        w_flush(w);
    }
}

static void seq_write(struct wr *w, const int64_t *r, size_t cnt, const struct seqplan *p, uint8_t *tmp)
{
    w_byte(w, (uint8_t)p->kind);
    switch (p->kind) {
    case SEQ_ZERO:
        break;
    case SEQ_VARINT:
        for (size_t i = 0; i < cnt; i++)
            w_zz(w, r[i]);
        break;
    case SEQ_RUNS: {
        size_t run = 0;
        for (size_t i = 0; i < cnt; i++) {
            if (r[i] == 0) {
                run++;
                continue;
            }
            w_uv(w, run);
            w_zz(w, r[i]);
            run = 0;
        }
        if (run)
            w_uv(w, run);
        break;
    }
    case SEQ_ANS:
        seq_write_ans(w, r, cnt, p, tmp);
        break;
    case SEQ_RICE:
        w_byte(w, (uint8_t)p->width);
        w_zz(w, p->base);
        for (size_t i = 0; i < cnt; i++) {
            uint64_t z = rice_z(r[i], p->base), q = z >> p->width;
            if (q < RICE_ESC) {
                w_bits(w, ((1ull << q) - 1u) << 1, (unsigned)q + 1u);
                if (p->width)
                    w_bits(w, z & ((p->width == 64 ? 0 : (1ull << p->width)) - 1u), p->width);
            } else {
                w_bits(w, (1ull << RICE_ESC) - 1u, RICE_ESC);
                w_bits(w, z, 64);
            }
        }
        w_flush(w);
        break;
    default:
        w_byte(w, (uint8_t)p->width);
        w_zz(w, p->base);
        if (p->width) {
            for (size_t i = 0; i < cnt; i++)
                w_bits(w, (uint64_t)r[i] - (uint64_t)p->base, p->width);
            w_flush(w);
        }
        break;
    }
}

/* 8-byte slots of a caller array, accessed through memcpy so the same
 * storage can hold raw integers before it holds the final doubles. */
static inline void put_u64(void *base, size_t i, uint64_t x) { memcpy((uint8_t *)base + i * 8u, &x, 8); }
static inline uint64_t get_u64(const void *base, size_t i)
{
    uint64_t x;
    memcpy(&x, (const uint8_t *)base + i * 8u, 8);
    return x;
}

/* Rice elements (k <= 36) from a 64-bit bit buffer, starting at bit
 * *bitpos of p (which has avail_bytes >= (*bitpos >> 3) + 8 bytes), into
 * the 8-byte slots of out, while refills stay inside p and no element
 * escapes. Returns the number decoded and advances *bitpos past them.
 * buf holds nb >= 56 valid bits, MSB first, after each refill (the bits
 * below the valid ones are zero or the bits the next refill ORs in again),
 * and an element takes ones + 1 + k <= 19 + 1 + 36 = 56 bits. */
/* Rice codes of k <= RICE_TAB_K that fit in one byte, decoded a byte at a
 * time: entry [k][b] lists up to 4 whole codes at the start of the 8 bits
 * b (MSB first) as their unzigzagged values, and the bits they take (n == 0:
 * the first code is longer than 8 bits). Built once. */
#define RICE_TAB_K 5
struct rice_ent {
    uint8_t n, used;
    int8_t d[4];
};
static struct rice_ent rice_tab[RICE_TAB_K + 1][256];
static pthread_once_t rice_tab_once = PTHREAD_ONCE_INIT;

static void rice_tab_init(void)
{
    for (unsigned k = 0; k <= RICE_TAB_K; k++) {
        for (unsigned b = 0; b < 256; b++) {
            struct rice_ent *e = &rice_tab[k][b];
            unsigned pos = 0; /* bits of b used */
            while (e->n < 4) {
                unsigned q = 0;
                while (pos + q < 8 && ((b >> (7 - pos - q)) & 1u)) q++;
                if (pos + q + 1 + k > 8) /* the code does not end in b */
                    break;
                unsigned low = k ? (b >> (8 - pos - q - 1 - k)) & ((1u << k) - 1u) : 0;
                e->d[e->n++] = (int8_t)gw_unzigzag((q << k) | low); /* |d| <= 128 */
                pos += q + 1 + k;
            }
            e->used = (uint8_t)pos;
        }
    }
}

static inline __attribute__((always_inline)) size_t rice_fast_body(const uint8_t *p, size_t avail_bytes,
                                                                    size_t *bitpos, unsigned k, uint64_t base,
                                                                    uint8_t *out, size_t cnt)
{
    size_t bp = *bitpos, byte = (bp >> 3) + 8, last = avail_bytes - 8;
    uint64_t buf = load_be64(p + (bp >> 3)) << (bp & 7u);
    unsigned nb = 64u - (unsigned)(bp & 7u), sh = 63u - k;
    const struct rice_ent *tab = k <= RICE_TAB_K ? rice_tab[k] : NULL;
    size_t i = 0;
    while (i < cnt) {
        if (nb < 56u) {
            if (byte > last)
                break;
            buf |= load_be64(p + byte) >> nb;
            unsigned take = (63u - nb) >> 3;
            byte += take;
            nb += take * 8u;
        }
        if (tab && i + 4 <= cnt) {
            /* nb >= 56: the top byte is real bits */
            const struct rice_ent *e = &tab[buf >> 56];
            if (e->n) {
                for (unsigned j = 0; j < 4; j++) { /* slots past e->n are rewritten later */
                    uint64_t x = (uint64_t)(int64_t)e->d[j] + base;
                    memcpy(out + (i + j) * 8u, &x, 8);
                }
                i += e->n;
                buf <<= e->used;
                nb -= e->used;
                continue;
            }
        }
        unsigned ones = (unsigned)__builtin_clzll(~buf | 1u);
        if (ones >= RICE_ESC)
            break;
        uint64_t rest = buf << (ones + 1u);
        uint64_t low = (rest >> 1) >> sh; /* 0 for k == 0 */
        buf = rest << k;
        nb -= ones + 1u + k;
        uint64_t x = (uint64_t)gw_unzigzag(((uint64_t)ones << k) | low) + base;
        memcpy(out + i * 8u, &x, 8);
        i++;
    }
    *bitpos = byte * 8u - nb;
    return i;
}

static size_t rice_fast_plain(const uint8_t *p, size_t avail_bytes, size_t *bitpos, unsigned k, uint64_t base,
                              uint8_t *out, size_t cnt)
{
    return rice_fast_body(p, avail_bytes, bitpos, k, base, out, cnt);
}

#if defined(__x86_64__) && defined(__GNUC__)
/* The same loop with lzcnt and shlx/shrx (one-cycle variable shifts):
 * the loop is a chain of count-ones and shift per element, so their
 * latency is its speed. Chosen at run time. */
__attribute__((target("bmi2,lzcnt"))) static size_t rice_fast_bmi2(const uint8_t *p, size_t avail_bytes,
                                                                     size_t *bitpos, unsigned k, uint64_t base,
                                                                     uint8_t *out, size_t cnt)
{
    return rice_fast_body(p, avail_bytes, bitpos, k, base, out, cnt);
}

/* 1 when the CPU has BMI2 (CPUID leaf 7 EBX bit 8) and LZCNT (leaf
 * 0x80000001 ECX bit 5, "ABM/LZCNT"). Read with <cpuid.h>, which gcc and
 * clang both ship, as clang 14's __builtin_cpu_supports knows no "lzcnt". */
static int cpu_has_bmi2_lzcnt(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & (1u << 8)))
        return 0;
    if (!__get_cpuid(0x80000001u, &a, &b, &c, &d) || !(c & (1u << 5)))
        return 0;
    return 1;
}

static int rice_use_bmi2; /* set once, with the table */

static void rice_init(void)
{
    rice_tab_init();
    rice_use_bmi2 = cpu_has_bmi2_lzcnt();
}

static size_t rice_fast(const uint8_t *p, size_t avail_bytes, size_t *bitpos, unsigned k, uint64_t base,
                        uint8_t *out, size_t cnt)
{
    pthread_once(&rice_tab_once, rice_init);
    if (rice_use_bmi2)
        return rice_fast_bmi2(p, avail_bytes, bitpos, k, base, out, cnt);
    return rice_fast_plain(p, avail_bytes, bitpos, k, base, out, cnt);
}
#else
static size_t rice_fast(const uint8_t *p, size_t avail_bytes, size_t *bitpos, unsigned k, uint64_t base,
                        uint8_t *out, size_t cnt)
{
    pthread_once(&rice_tab_once, rice_tab_init);
    return rice_fast_plain(p, avail_bytes, bitpos, k, base, out, cnt);
}
#endif

/* SEQ_ANS after its kind byte (layout: seq_write_ans). */
static int seq_read_ans(struct rd *r, size_t cnt, void *out)
{
    uint8_t k, nsym;
    int64_t base;
    uint16_t freq[ENT_MAXSYM];
    if (!r_byte(r, &k) || k > 63 || !r_zz(r, &base) || !r_byte(r, &nsym) || nsym < 2 || nsym > ENT_MAXSYM)
        return 0;
    for (unsigned j = 0; j < nsym; j++) {
        uint64_t f;
        if (!r_uv(r, &f) || f > ENT_M)
            return 0;
        freq[j] = (uint16_t)f;
    }
    uint64_t nesc, len;
    if (!r_uv(r, &nesc) || nesc > cnt)
        return 0;
    struct rd esc = *r;
    for (uint64_t j = 0; j < nesc; j++) {
        uint64_t z;
        if (!r_uv(r, &z))
            return 0;
    }
    if (!r_uv(r, &len) || len > r->len - r->pos)
        return 0;
    struct ent_dec d;
    if (!ent_dec_init(&d, freq, nsym, r->p + r->pos, (size_t)len))
        return 0;
    r->pos += (size_t)len;
    if ((cnt - nesc) * k > (r->len - r->pos) * 8u)
        return 0;
    unsigned escsym = nsym - 1u;
    uint64_t escaped = 0;
    for (size_t i = 0; i < cnt; i++) {
        unsigned sym;
        uint64_t z, low = 0;
        if (!ent_dec_next(&d, &sym))
            return 0;
        if (sym == escsym) {
            if (escaped++ == nesc)
                return 0;
            (void)r_uv(&esc, &z); /* validated above */
        } else {
            if (k && !r_bits(r, k, &low))
                return 0;
            z = (uint64_t)sym << k | low;
        }
        put_u64(out, i, (uint64_t)gw_unzigzag(z) + (uint64_t)base);
    }
    if (escaped != nesc || !ent_dec_done(&d))
        return 0;
    r_bits_end(r);
    return 1;
}

/* Reads cnt elements as two's-complement uint64 into 8-byte slots of out.
 * 0 on malformed input. */
static int seq_read(struct rd *r, size_t cnt, void *out)
{
    uint8_t kind;
    if (!r_byte(r, &kind))
        return 0;
    switch (kind) {
    case SEQ_ZERO:
        memset(out, 0, cnt * 8u);
        return 1;
    case SEQ_VARINT:
        for (size_t i = 0; i < cnt; i++) {
            uint64_t z;
            if (!r_uv(r, &z))
                return 0;
            put_u64(out, i, (uint64_t)gw_unzigzag(z));
        }
        return 1;
    case SEQ_RUNS: {
        size_t i = 0;
        while (i < cnt) {
            uint64_t run;
            if (!r_uv(r, &run) || run > cnt - i)
                return 0;
            memset((uint8_t *)out + i * 8u, 0, (size_t)run * 8u);
            i += (size_t)run;
            if (i == cnt)
                break;
            uint64_t z;
            if (!r_uv(r, &z))
                return 0;
            put_u64(out, i++, (uint64_t)gw_unzigzag(z));
        }
        return 1;
    }
    case SEQ_PACK: {
        uint8_t wid;
        int64_t base;
        if (!r_byte(r, &wid) || wid > 64 || !r_zz(r, &base))
            return 0;
        if (wid == 0) {
            for (size_t i = 0; i < cnt; i++)
                put_u64(out, i, (uint64_t)base);
            return 1;
        }
        if (cnt > (r->len - r->pos) * 8u / wid)
            return 0;
        size_t i = 0;
        if (wid <= 56) {
            /* fast path: whole 64-bit windows while 8 bytes remain */
            const uint8_t *base_p = r->p + r->pos;
            size_t avail_bytes = r->len - r->pos, bp = r->bitpos;
            unsigned sh = 64u - wid;
            for (; i < cnt && (bp >> 3) + 8 <= avail_bytes; i++, bp += wid) {
                uint64_t w = load_be64(base_p + (bp >> 3));
                put_u64(out, i, ((w << (bp & 7u)) >> sh) + (uint64_t)base);
            }
            r->bitpos = bp;
        }
        for (; i < cnt; i++) {
            uint64_t u;
            if (!r_bits(r, wid, &u))
                return 0;
            put_u64(out, i, u + (uint64_t)base);
        }
        r_bits_end(r);
        return 1;
    }
    case SEQ_ANS:
        return seq_read_ans(r, cnt, out);
    case SEQ_RICE: {
        uint8_t k;
        int64_t base;
        if (!r_byte(r, &k) || k > 63 || !r_zz(r, &base))
            return 0;
        if (cnt > (r->len - r->pos) * 8u) /* every element takes a bit */
            return 0;
        size_t avail_bytes = r->len - r->pos;
        const uint8_t *base_p = r->p + r->pos;
        size_t i = 0;
        if (k <= 36) {
            if ((r->bitpos >> 3) + 8 <= avail_bytes)
                i = rice_fast(base_p, avail_bytes, &r->bitpos, k, (uint64_t)base, (uint8_t *)out, cnt);
            size_t b0 = r->bitpos >> 3;
            if (i < cnt && avail_bytes - b0 <= 16) {
                /* the last bytes, copied into a zero-padded buffer the
                 * fast loop can refill from; a valid sequence ends
                 * inside the real bytes */
                uint8_t pad[32] = {0};
                size_t real = avail_bytes - b0, bp = r->bitpos & 7u;
                memcpy(pad, base_p + b0, real);
                size_t got = rice_fast(pad, sizeof pad, &bp, k, (uint64_t)base, (uint8_t *)out + i * 8u, cnt - i);
                if (bp > real * 8u)
                    return 0;
                i += got;
                r->bitpos = b0 * 8u + bp;
            }
        }
        /* the rest (escapes, the last bytes, large k): one zero-padded
         * 64-bit window per element, bounded by the bits left */
        for (; i < cnt; i++) {
            size_t bp = r->bitpos, byte = bp >> 3;
            size_t left = avail_bytes * 8u - bp; /* bits left */
            uint64_t w;
            if (byte + 8 <= avail_bytes) {
                w = load_be64(base_p + byte);
            } else {
                uint8_t pad[8] = {0};
                memcpy(pad, base_p + byte, avail_bytes - byte);
                w = load_be64(pad);
            }
            w <<= (bp & 7u);
            unsigned ones = (unsigned)__builtin_clzll(~w | 1u); /* at most 63 */
            uint64_t z;
            if (ones >= RICE_ESC) {
                /* RICE_ESC ones (all real bits: the padding is zeros),
                 * then 64 raw bits */
                r->bitpos = bp + RICE_ESC;
                if (!r_bits(r, 64, &z))
                    return 0;
            } else {
                if (ones + 1u > left) /* the run's closing zero is missing */
                    return 0;
                r->bitpos = bp + ones + 1u;
                uint64_t low = 0;
                if (k && !r_bits(r, k, &low))
                    return 0;
                z = ((uint64_t)ones << k) | low;
            }
            put_u64(out, i, (uint64_t)gw_unzigzag(z) + (uint64_t)base);
        }
        r_bits_end(r);
        return 1;
    }
    default:
        return 0;
    }
}

/* ---- value classification ----------------------------------------------- */

static inline double dec_value(int64_t m, unsigned k)
{
    return k == 0 ? (double)m : (double)m / p10[k];
}

/* Smallest k (0..15) with v == m / 10^k exactly; -1 if none. v finite. */
static int dec_scale(double v)
{
    for (unsigned k = 0; k <= BLK_MAX_K; k++) {
        double x = v * p10[k];
        if (!(fabs(x) < 9007199254740992.0))
            return -1;
        double m = nearbyint(x);
        if (dbits(dec_value((int64_t)m, k)) == dbits(v))
            return (int)k;
    }
    return -1;
}

static int exc_class(uint64_t b)
{
    switch (b) {
    case STALE_BITS: return EXC_STALE;
    case NAN_BITS: return EXC_NAN;
    case PINF_BITS: return EXC_PINF;
    case NINF_BITS: return EXC_NINF;
    case NZERO_BITS: return EXC_NZERO;
    default: return -1;
    }
}

/* ---- XOR value stream --------------------------------------------------- */

static size_t xor_write(struct wr *w, const double *v, size_t n, int dry)
{
    uint64_t prev = dbits(v[0]);
    unsigned lead = 0xff, trail = 0;
    size_t bits = 64;
    if (!dry)
        w_bits(w, prev, 64);
    for (size_t i = 1; i < n; i++) {
        uint64_t cur = dbits(v[i]), x = cur ^ prev;
        prev = cur;
        if (x == 0) {
            bits += 1;
            if (!dry) w_bits(w, 0, 1);
            continue;
        }
        unsigned l = (unsigned)__builtin_clzll(x), t = (unsigned)__builtin_ctzll(x);
        if (l > 31)
            l = 31;
        if (lead != 0xff && l >= lead && t >= trail) {
            unsigned sig = 64u - lead - trail;
            bits += 2 + sig;
            if (!dry) {
                w_bits(w, 2, 2);
                w_bits(w, x >> trail, sig);
            }
        } else {
            lead = l;
            trail = t;
            unsigned sig = 64u - l - t;
            bits += 13 + sig;
            if (!dry) {
                w_bits(w, 3, 2);
                w_bits(w, l, 5);
                w_bits(w, sig & 63u, 6);
                w_bits(w, x >> t, sig);
            }
        }
    }
    if (!dry)
        w_flush(w);
    return (bits + 7u) / 8u;
}

static int xor_read(struct rd *r, size_t n, double *v)
{
    uint64_t cur;
    if (!r_bits(r, 64, &cur))
        return 0;
    v[0] = bitsd(cur);
    unsigned lead = 0, trail = 0;
    for (size_t i = 1; i < n; i++) {
        uint64_t bit;
        if (!r_bits(r, 1, &bit))
            return 0;
        if (bit) {
            if (!r_bits(r, 1, &bit))
                return 0;
            if (bit) {
                uint64_t l, sig;
                if (!r_bits(r, 5, &l) || !r_bits(r, 6, &sig))
                    return 0;
                if (sig == 0)
                    sig = 64;
                if (l + sig > 64)
                    return 0;
                lead = (unsigned)l;
                trail = (unsigned)(64u - l - sig);
            } /* else reuse the window (64 bits before any window was set) */
            uint64_t x;
            if (!r_bits(r, 64u - lead - trail, &x))
                return 0;
            cur ^= trail >= 64 ? 0 : x << trail;
        }
        v[i] = bitsd(cur);
    }
    r_bits_end(r);
    return 1;
}

/* ---- encoder ------------------------------------------------------------ */

struct scratch {
    int64_t *res;   /* residuals */
    int64_t *man;   /* mantissas of ordinary values */
    int64_t *tmp;   /* per-order residuals */
    int64_t *sel;   /* median selection scratch */
    int8_t *scale;  /* per-value decimal scale, -1 not decimal, -2 exception */
};

/* Linear prediction of the deltas of a[0..cnt) (ORD_LPC): mu, the mean
 * delta, is taken out, the centred deltas x go through an LPC filter
 * (entropy.h), and the residuals are one sequence. Written after the head
 * a[0] (zz for DECIMAL, be64 for BITS) as
 *   zz mu, byte p (1..LPC_MAXP), byte shift (0..LPC_MAXSHIFT),
 *   p x zz coefficient, then the seq of the cnt - 1 residuals. */
struct lpcplan {
    int64_t mu;
    unsigned p, shift;
    int32_t c[LPC_MAXP];
    struct seqplan sp;
    size_t size; /* without the head */
};

/* Plans the LPC form of a[0..cnt) (cnt >= 2) with x and e as scratch (cnt
 * entries each); the residuals are left in e. 0 when no predictor fits. */
static int lpc_plan(const int64_t *a, size_t cnt, int64_t *x, int64_t *e, int64_t *sel, struct lpcplan *lp)
{
    size_t m = cnt - 1;
    long double sum = 0;
    for (size_t j = 0; j < m; j++) {
        x[j] = (int64_t)((uint64_t)a[j + 1] - (uint64_t)a[j]);
        sum += (long double)x[j];
    }
    long double mean = sum / (long double)m;
    lp->mu = fabsl(mean) < 9.0e18L ? (int64_t)llroundl(mean) : 0;
    for (size_t j = 0; j < m; j++)
        x[j] = (int64_t)((uint64_t)x[j] - (uint64_t)lp->mu);
    lp->p = lpc_design(x, m, LPC_MAXP, lp->c, &lp->shift);
    if (lp->p == 0)
        return 0;
    lpc_residuals(x, m, lp->c, lp->p, lp->shift, e);
    lp->sp = seq_plan(e, m, sel, 1);
    lp->size = uvlen(gw_zigzag(lp->mu)) + 2 + lp->sp.size;
    for (unsigned i = 0; i < lp->p; i++)
        lp->size += uvlen(gw_zigzag(lp->c[i]));
    return 1;
}

/* The LPC form's fields after the head, residuals e. */
static void lpc_write(struct wr *w, const struct lpcplan *lp, const int64_t *e, size_t m, uint8_t *tmp)
{
    w_zz(w, lp->mu);
    w_byte(w, (uint8_t)lp->p);
    w_byte(w, (uint8_t)lp->shift);
    for (unsigned i = 0; i < lp->p; i++)
        w_zz(w, lp->c[i]);
    seq_write(w, e, m, &lp->sp, tmp);
}

/* The residuals of order o (0..2) of mantissas man[0..c) after their
 * heads, into r (c - min(c, o) of them). */
static void dec_residuals(const int64_t *man, size_t c, int o, int64_t *r)
{
    size_t heads = c < (size_t)o ? c : (size_t)o;
    for (size_t i = heads; i < c; i++) {
        uint64_t m0 = (uint64_t)man[i];
        if (o == 0) r[i - heads] = (int64_t)m0;
        else if (o == 1) r[i - heads] = (int64_t)(m0 - (uint64_t)man[i - 1]);
        else r[i - heads] = (int64_t)(m0 - 2 * (uint64_t)man[i - 1] + (uint64_t)man[i - 2]);
    }
}

/* Writes the DECIMAL value section into w when it is possible; returns its
 * size, or 0 when the block has no usable decimal form. */
static size_t dec_section(struct wr *w, const double *v, size_t n, struct scratch *s)
{
    unsigned K = 0;
    size_t nraw = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t b = dbits(v[i]);
        if (exc_class(b) >= 0 || !isfinite(v[i])) {
            s->scale[i] = -2;
            continue;
        }
        int k = dec_scale(v[i]);
        s->scale[i] = (int8_t)k;
        if (k < 0)
            nraw++;
        else if ((unsigned)k > K)
            K = (unsigned)k;
    }
    if (nraw * 4 > n)
        return 0;
    /* Mantissas at the shared scale K; values that do not survive become
     * raw exceptions. */
    size_t c = 0;
    for (size_t i = 0; i < n; i++) {
        if (s->scale[i] < 0)
            continue;
        double x = v[i] * p10[K];
        int ok = fabs(x) < 9007199254740992.0;
        int64_t m = ok ? (int64_t)nearbyint(x) : 0;
        if (ok && dbits(dec_value(m, K)) == dbits(v[i])) {
            s->man[c++] = m;
        } else {
            s->scale[i] = -1;
        }
    }
    size_t start = w->len;
    /* Pick the order with the smallest mantissa coding. */
    int best_o = -1;
    struct seqplan best_p = {.kind = SEQ_ZERO};
    size_t best_sz = SIZE_MAX;
    for (int o = 0; o <= 2; o++) {
        size_t heads = c < (size_t)o ? c : (size_t)o;
        size_t sz = 0;
        if (o >= 1 && c >= 1) sz += uvlen(gw_zigzag(s->man[0]));
        if (o >= 2 && c >= 2) sz += uvlen(gw_zigzag((int64_t)((uint64_t)s->man[1] - (uint64_t)s->man[0])));
        struct seqplan p = {.kind = SEQ_ZERO};
        size_t cnt = c - heads;
        if (cnt) {
            dec_residuals(s->man, c, o, s->tmp);
            p = seq_plan(s->tmp, cnt, s->sel, 0);
            sz += p.size;
        }
        if (sz < best_sz) {
            best_sz = sz;
            best_o = o;
            best_p = p;
        }
    }
    size_t best_heads = c < (size_t)best_o ? c : (size_t)best_o;
    if (c > best_heads && best_p.size > (c - best_heads) / 8u) {
        size_t before = best_p.size;
        dec_residuals(s->man, c, best_o, s->tmp);
        seq_plan_add_ans(s->tmp, c - best_heads, &best_p);
        best_sz -= before - best_p.size;
    }
    struct lpcplan lp;
    if (c >= BLK_LPC_MIN && best_sz > c / 4u && lpc_plan(s->man, c, s->res, s->tmp, s->sel, &lp) &&
        uvlen(gw_zigzag(s->man[0])) + lp.size < best_sz)
        best_o = (int)ORD_LPC; /* residuals stay in s->tmp */
    w_byte(w, (uint8_t)(VM_DEC | (unsigned)best_o << 2 | K << 4));
    w_uv(w, n - c);
    size_t last = 0;
    int first = 1;
    for (size_t i = 0; i < n; i++) {
        if (s->scale[i] >= 0)
            continue;
        uint64_t b = dbits(v[i]);
        int cls = exc_class(b);
        if (cls < 0)
            cls = EXC_RAW;
        size_t gap = first ? i : i - last - 1;
        first = 0;
        last = i;
        w_uv(w, (uint64_t)gap << 3 | (unsigned)cls);
        if (cls == EXC_RAW) {
            gw_put_be64(w->p + w->len, b);
            w->len += 8;
        }
    }
    if (best_o == (int)ORD_LPC) {
        w_zz(w, s->man[0]);
        lpc_write(w, &lp, s->tmp, c - 1, (uint8_t *)s->sel);
        return w->len - start;
    }
    size_t heads = c < (size_t)best_o ? c : (size_t)best_o;
    if (heads >= 1)
        w_zz(w, s->man[0]);
    if (heads >= 2)
        w_zz(w, (int64_t)((uint64_t)s->man[1] - (uint64_t)s->man[0]));
    if (c > heads) {
        dec_residuals(s->man, c, best_o, s->tmp);
        seq_write(w, s->tmp, c - heads, &best_p, (uint8_t *)s->sel);
    }
    return w->len - start;
}

/* The BITS residuals of order o (1 or 2) of n >= 3 values into s->res
 * (n - o of them); returns the section's size with its plan in *p. */
static size_t bits_plan(const double *v, size_t n, int o, struct scratch *s, struct seqplan *p, int ans)
{
    uint64_t u0 = dbits(v[0]), u1 = dbits(v[1]), prev = u1, pd = u1 - u0;
    size_t sz = 1 + 8;
    if (o == 1) {
        s->res[0] = (int64_t)pd;
    } else {
        sz += uvlen(gw_zigzag((int64_t)pd));
    }
    for (size_t i = 2; i < n; i++) {
        uint64_t cur = dbits(v[i]), d = cur - prev;
        s->res[i - o] = (int64_t)(o == 1 ? d : d - pd);
        pd = d;
        prev = cur;
    }
    *p = seq_plan(s->res, n - (size_t)o, s->sel, ans);
    return sz + p->size;
}

/* The BITS section of the order that was planned last (residuals in
 * s->res, plan p). */
static void bits_write(struct wr *w, const double *v, size_t n, int o, const struct scratch *s,
                       const struct seqplan *p)
{
    w_byte(w, (uint8_t)(VM_BITS | (unsigned)o << 2));
    gw_put_be64(w->p + w->len, dbits(v[0]));
    w->len += 8;
    if (o == 2)
        w_zz(w, (int64_t)(dbits(v[1]) - dbits(v[0])));
    seq_write(w, s->res, n - (size_t)o, p, (uint8_t *)s->sel);
}

/* Writes the smallest value section of v[0..n) into w (alt: scratch of
 * body_bound(n) bytes). */
static void values_section(struct wr *w, uint8_t *alt, const double *v, size_t n, struct scratch *s)
{
    struct wr wa = {alt, 0, 0, 0};
    size_t dsz = dec_section(&wa, v, n, s);
    size_t xsz = 1 + xor_write(NULL, v, n, 1);
    size_t best = dsz != 0 && dsz <= xsz ? dsz : xsz;
    if (n >= 3 && best > BLK_BITS_TRY * n) {
        struct seqplan p1, p2;
        size_t b1 = bits_plan(v, n, 1, s, &p1, 0), b2 = bits_plan(v, n, 2, s, &p2, 0);
        int o = b2 < b1 ? 2 : 1;
        size_t bb = bits_plan(v, n, o, s, o == 2 ? &p2 : &p1, 1);
        if (n >= BLK_LPC_MIN) {
            struct lpcplan lp;
            for (size_t i = 0; i < n; i++)
                s->man[i] = (int64_t)dbits(v[i]);
            if (lpc_plan(s->man, n, s->tmp, s->res, s->sel, &lp) && 1 + 8 + lp.size < bb && 1 + 8 + lp.size < best) {
                w_byte(w, (uint8_t)(VM_BITS | ORD_LPC << 2));
                gw_put_be64(w->p + w->len, dbits(v[0]));
                w->len += 8;
                lpc_write(w, &lp, s->res, n - 1, (uint8_t *)s->sel);
                return;
            }
        }
        if (bb < best) {
            (void)bits_plan(v, n, o, s, o == 2 ? &p2 : &p1, 1);
            bits_write(w, v, n, o, s, o == 2 ? &p2 : &p1);
            return;
        }
    }
    if (dsz != 0 && dsz <= xsz) {
        memcpy(w->p + w->len, alt, dsz);
        w->len += dsz;
    } else {
        w_byte(w, VM_XOR);
        (void)xor_write(w, v, n, 0);
    }
}

/* One compression context per thread, made on first use and freed when
 * the thread exits: creating one per block cost more than compressing. */
static pthread_key_t cctx_key;
static pthread_once_t cctx_once = PTHREAD_ONCE_INIT;

static void cctx_free(void *p) { ZSTD_freeCCtx(p); }
static void cctx_key_init(void) { (void)pthread_key_create(&cctx_key, cctx_free); }

static ZSTD_CCtx *thread_cctx(void)
{
    pthread_once(&cctx_once, cctx_key_init);
    ZSTD_CCtx *cc = pthread_getspecific(cctx_key);
    if (cc)
        return cc;
    cc = ZSTD_createCCtx();
    if (!cc)
        return NULL;
    size_t r = ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, BLK_ZSTD_LEVEL);
    if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(cc, ZSTD_c_format, ZSTD_f_zstd1_magicless);
    if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 0);
    if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(cc, ZSTD_c_dictIDFlag, 0);
    if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 1);
    if (ZSTD_isError(r) || pthread_setspecific(cctx_key, cc) != 0) {
        ZSTD_freeCCtx(cc);
        return NULL;
    }
    return cc;
}

static int zstd_compress(const uint8_t *src, size_t len, uint8_t *dst, size_t cap, size_t *out)
{
    ZSTD_CCtx *cc = thread_cctx();
    if (!cc)
        return GW_ENOMEM;
    size_t r = ZSTD_compress2(cc, dst, cap, src, len);
    if (ZSTD_isError(r)) {
        /* dstSize too small just means "not smaller": keep the raw body. */
        ZSTD_CCtx_reset(cc, ZSTD_reset_session_only);
        *out = SIZE_MAX;
        return GW_OK;
    }
    *out = r;
    return GW_OK;
}

/* Writes the timestamp section of t[0..n) into w (nothing when n == 1);
 * *grid tells which form was kept. s->res, s->tmp, s->sel hold n entries. */
static void ts_section(struct wr *w, const int64_t *t, size_t n, struct scratch *s, int *grid)
{
    *grid = 0;
    if (n < 2)
        return;
    /* Two forms: deltas of deltas, or offsets from the grid t0 + i * G
     * with G the median interval. A late scrape costs one grid offset but
     * two dods; a drifting interval favours dods. Keep the smaller. */
    uint64_t span = (uint64_t)t[n - 1] - (uint64_t)t[0];
    uint64_t D = span / (uint64_t)(n - 1);
    uint64_t prevd = 0;
    for (size_t i = 1; i < n; i++) {
        uint64_t d = (uint64_t)t[i] - (uint64_t)t[i - 1];
        s->res[i - 1] = (int64_t)(i == 1 ? d - D : d - prevd);
        s->tmp[i - 1] = (int64_t)d;
        prevd = d;
    }
    uint64_t G = (uint64_t)median(s->tmp, n - 1, s->sel);
    int64_t gdiff = (int64_t)(G - D);
    for (size_t i = 1; i < n; i++)
        s->tmp[i - 1] = (int64_t)((uint64_t)t[i] - (uint64_t)t[0] - (uint64_t)i * G);
    struct seqplan pd = seq_plan(s->res, n - 1, s->sel, 1);
    struct seqplan pg = seq_plan(s->tmp, n - 1, s->sel, 1);
    if (pg.size + uvlen(gw_zigzag(gdiff)) < pd.size) {
        *grid = 1;
        w_zz(w, gdiff);
        seq_write(w, s->tmp, n - 1, &pg, (uint8_t *)s->sel);
    } else {
        seq_write(w, s->res, n - 1, &pd, (uint8_t *)s->sel);
    }
}

/* Block header: flags, n, zz mint, maxt - mint. Returns its length (<= 32). */
static size_t put_header(uint8_t *hdr, uint8_t flags, const int64_t *t, size_t n)
{
    size_t hl = 0;
    hdr[hl++] = flags;
    hl += gw_uvarint_put(hdr + hl, (uint64_t)n);
    hl += gw_uvarint_put(hdr + hl, gw_zigzag(t[0]));
    hl += gw_uvarint_put(hdr + hl, (uint64_t)t[n - 1] - (uint64_t)t[0]);
    return hl;
}

static void scratch_release(struct scratch *s)
{
    free(s->res);
    free(s->man);
    free(s->tmp);
    free(s->sel);
    free(s->scale);
}

static int scratch_alloc(struct scratch *s, size_t n)
{
    memset(s, 0, sizeof *s);
    s->res = malloc(n * sizeof *s->res);
    s->man = malloc(n * sizeof *s->man);
    s->tmp = malloc(n * sizeof *s->tmp);
    s->sel = malloc(n * sizeof *s->sel);
    s->scale = malloc(n);
    if (!s->res || !s->man || !s->tmp || !s->sel || !s->scale) {
        scratch_release(s);
        return GW_ENOMEM;
    }
    return GW_OK;
}

int gw_block_ts_encode(const int64_t *t, size_t n, struct gw_buf *out)
{
    if (!t || !out || n == 0 || n > GW_BLOCK_MAX_SAMPLES)
        return GW_EINVAL;
    for (size_t i = 1; i < n; i++)
        if (t[i] <= t[i - 1])
            return GW_EINVAL;
    struct scratch s;
    if (scratch_alloc(&s, n) != GW_OK)
        return GW_ENOMEM;
    int rc = GW_ENOMEM;
    size_t bound = body_bound(n);
    uint8_t *body = malloc(bound);
    if (!body)
        goto out;
    struct wr w = {body, 0, 0, 0};
    int grid = 0;
    ts_section(&w, t, n, &s, &grid);
    uint8_t hdr[32];
    size_t hl = put_header(hdr, (uint8_t)(BLK_VERSION << 4 | (grid ? BLK_FLAG_GRID : 0u)), t, n);
    rc = gw_buf_reserve(out, hl + w.len);
    if (rc == GW_OK)
        rc = gw_buf_append(out, hdr, hl);
    if (rc == GW_OK && w.len)
        rc = gw_buf_append(out, body, w.len);
out:
    free(body);
    scratch_release(&s);
    return rc;
}

int gw_block_values_encode(const double *v, size_t n, struct gw_buf *out)
{
    if (!v || !out || n == 0 || n > GW_BLOCK_MAX_SAMPLES)
        return GW_EINVAL;
    struct scratch s;
    if (scratch_alloc(&s, n) != GW_OK)
        return GW_ENOMEM;
    int rc = GW_ENOMEM;
    size_t bound = body_bound(n);
    uint8_t *body = malloc(bound + 1);
    uint8_t *alt = malloc(bound + 1);
    if (!body || !alt)
        goto out;
    /* body[0] is the part's kind byte; the section starts at body + 1 */
    struct wr w = {body + 1, 0, 0, 0};
    values_section(&w, alt, v, n, &s);
    if (GW_NEVER(w.len > bound))
        goto out;
    size_t zsz = SIZE_MAX;
    if (w.len >= BLK_ZSTD_MIN) {
        rc = zstd_compress(body + 1, w.len, alt + 1, w.len - 1, &zsz);
        if (rc != GW_OK)
            goto out;
    }
    const uint8_t *part = body;
    size_t plen = 1 + w.len;
    body[0] = 0;
    if (zsz < w.len) {
        alt[0] = BLK_FLAG_ZSTD;
        part = alt;
        plen = 1 + zsz;
    }
    rc = gw_buf_append(out, part, plen);
out:
    free(body);
    free(alt);
    scratch_release(&s);
    return rc;
}

int gw_block_encode(const int64_t *t, const double *v, size_t n, struct gw_buf *out)
{
    if (!t || !v || !out || n == 0 || n > GW_BLOCK_MAX_SAMPLES)
        return GW_EINVAL;
    for (size_t i = 1; i < n; i++)
        if (t[i] <= t[i - 1])
            return GW_EINVAL;
    int rc = GW_ENOMEM;
    struct scratch s = {0};
    size_t bound = body_bound(n);
    uint8_t *body = malloc(bound);
    uint8_t *alt = malloc(bound);
    s.res = malloc(n * sizeof *s.res);
    s.man = malloc(n * sizeof *s.man);
    s.tmp = malloc(n * sizeof *s.tmp);
    s.sel = malloc(n * sizeof *s.sel);
    s.scale = malloc(n);
    if (!body || !alt || !s.res || !s.man || !s.tmp || !s.sel || !s.scale)
        goto out;

    struct wr w = {body, 0, 0, 0};
    int grid = 0;
    ts_section(&w, t, n, &s, &grid);
    values_section(&w, alt, v, n, &s);
    if (GW_NEVER(w.len > bound))
        goto out;

    uint8_t hdr[32];
    size_t hl = put_header(hdr, 0, t, n);
    size_t zsz = SIZE_MAX;
    /* Small bodies are already entropy-coded (Rice, bit packing) and zstd
     * rarely shortens them, while trying costs more than the rest of the
     * encoding: it is tried from BLK_ZSTD_MIN bytes on. */
    if (w.len >= BLK_ZSTD_MIN) {
        rc = zstd_compress(body, w.len, alt, w.len - 1, &zsz);
        if (rc != GW_OK)
            goto out;
    }
    const uint8_t *payload = body;
    size_t plen = w.len;
    hdr[0] = (uint8_t)(BLK_VERSION << 4 | (grid ? BLK_FLAG_GRID : 0u));
    if (zsz < w.len) {
        hdr[0] |= BLK_FLAG_ZSTD;
        payload = alt;
        plen = zsz;
    }
    rc = gw_buf_reserve(out, hl + plen);
    if (rc != GW_OK)
        goto out;
    rc = gw_buf_append(out, hdr, hl);
    if (rc == GW_OK)
        rc = gw_buf_append(out, payload, plen);
out:
    free(body);
    free(alt);
    free(s.res);
    free(s.man);
    free(s.tmp);
    free(s.sel);
    free(s.scale);
    return rc;
}

/* ---- decoder ------------------------------------------------------------ */

struct hdr {
    uint8_t flags;
    uint32_t n;
    int64_t mint, maxt;
    uint64_t span;
    size_t len; /* header bytes */
};

static int parse_header(const uint8_t *b, size_t len, struct hdr *h)
{
    if (!b || len < 4)
        return GW_ECORRUPT;
    struct rd r = {b, len, 0, 0};
    uint64_t n, zmint, span;
    if (!r_byte(&r, &h->flags) || (h->flags >> 4) != BLK_VERSION || (h->flags & 0x0c))
        return GW_ECORRUPT;
    if (!r_uv(&r, &n) || n == 0 || n > GW_BLOCK_MAX_SAMPLES)
        return GW_ECORRUPT;
    if (!r_uv(&r, &zmint) || !r_uv(&r, &span))
        return GW_ECORRUPT;
    int64_t mint = gw_unzigzag(zmint);
    uint64_t maxt_u = (uint64_t)mint + span;
    int64_t maxt = (int64_t)maxt_u;
    /* maxt must not pass INT64_MAX and must leave room for n samples. */
    if (span > (uint64_t)INT64_MAX - (uint64_t)mint)
        return GW_ECORRUPT;
    if (maxt < mint || (n == 1 && span != 0) || (n >= 2 && span < n - 1))
        return GW_ECORRUPT;
    h->n = (uint32_t)n;
    h->mint = mint;
    h->maxt = maxt;
    h->span = span;
    h->len = r.pos;
    return GW_OK;
}

int gw_block_info(const uint8_t *b, size_t len, uint32_t *n, int64_t *mint, int64_t *maxt)
{
    struct hdr h;
    int rc = parse_header(b, len, &h);
    if (rc != GW_OK)
        return rc;
    if (n) *n = h.n;
    if (mint) *mint = h.mint;
    if (maxt) *maxt = h.maxt;
    return GW_OK;
}

/* One decompression context per thread as well (made on first use). */
static pthread_key_t dctx_key;
static pthread_once_t dctx_once = PTHREAD_ONCE_INIT;

static void dctx_free(void *p) { ZSTD_freeDCtx(p); }
static void dctx_key_init(void) { (void)pthread_key_create(&dctx_key, dctx_free); }

static ZSTD_DCtx *thread_dctx(void)
{
    pthread_once(&dctx_once, dctx_key_init);
    ZSTD_DCtx *dc = pthread_getspecific(dctx_key);
    if (dc)
        return dc;
    dc = ZSTD_createDCtx();
    if (!dc)
        return NULL;
    size_t r = ZSTD_DCtx_setParameter(dc, ZSTD_d_format, ZSTD_f_zstd1_magicless);
    if (!ZSTD_isError(r)) r = ZSTD_DCtx_setParameter(dc, ZSTD_d_windowLogMax, 27);
    if (ZSTD_isError(r) || pthread_setspecific(dctx_key, dc) != 0) {
        ZSTD_freeDCtx(dc);
        return NULL;
    }
    return dc;
}

static int zstd_body(const uint8_t *src, size_t len, size_t bound, uint8_t **out, size_t *olen)
{
    ZSTD_frameHeader fh;
    size_t r = ZSTD_getFrameHeader_advanced(&fh, src, len, ZSTD_f_zstd1_magicless);
    if (r != 0 || fh.frameType != ZSTD_frame || fh.frameContentSize == ZSTD_CONTENTSIZE_UNKNOWN ||
        fh.frameContentSize > bound || fh.frameContentSize == 0)
        return GW_ECORRUPT;
    size_t cap = (size_t)fh.frameContentSize;
    uint8_t *buf = malloc(cap);
    if (!buf)
        return GW_ENOMEM;
    ZSTD_DCtx *dc = thread_dctx();
    if (!dc) {
        free(buf);
        return GW_ENOMEM;
    }
    r = ZSTD_decompressDCtx(dc, buf, cap, src, len);
    if (ZSTD_isError(r))
        ZSTD_DCtx_reset(dc, ZSTD_reset_session_only);
    if (ZSTD_isError(r) || r != cap) {
        free(buf);
        return GW_ECORRUPT;
    }
    *out = buf;
    *olen = cap;
    return GW_OK;
}

static int decode_ts(struct rd *r, const struct hdr *h, int64_t *t)
{
    size_t n = h->n;
    t[0] = h->mint;
    if (n == 1)
        return 1;
    uint64_t D = h->span / (uint64_t)(n - 1), G = 0;
    int grid = (h->flags & BLK_FLAG_GRID) != 0;
    if (grid) {
        int64_t gdiff;
        if (!r_zz(r, &gdiff))
            return 0;
        G = D + (uint64_t)gdiff;
    }
    /* Residuals land in t[1..n-1] as raw uint64, then become timestamps. */
    if (!seq_read(r, n - 1, t + 1))
        return 0;
    uint64_t d = 0;
    for (size_t i = 1; i < n; i++) {
        uint64_t x;
        memcpy(&x, &t[i], sizeof x);
        if (grid)
            d = (uint64_t)h->mint + (uint64_t)i * G + x - (uint64_t)t[i - 1];
        else
            d = (i == 1) ? D + x : d + x;
        /* 0 < d <= maxt - t[i-1]: strictly increasing, never past maxt. */
        if (d == 0 || d > (uint64_t)h->maxt - (uint64_t)t[i - 1])
            return 0;
        t[i] = (int64_t)((uint64_t)t[i - 1] + d);
    }
    return t[n - 1] == h->maxt;
}

static int exc_value(struct rd *r, int cls, uint64_t *b)
{
    switch (cls) {
    case EXC_STALE: *b = STALE_BITS; return 1;
    case EXC_NAN: *b = NAN_BITS; return 1;
    case EXC_PINF: *b = PINF_BITS; return 1;
    case EXC_NINF: *b = NINF_BITS; return 1;
    case EXC_NZERO: *b = NZERO_BITS; return 1;
    case EXC_RAW:
        if (r->len - r->pos < 8)
            return 0;
        *b = gw_get_be64(r->p + r->pos);
        r->pos += 8;
        return 1;
    default:
        return 0;
    }
}

/* Largest mantissa magnitude, 2^53 - 1: m is valid iff m + MAX (as
 * uint64) <= 2 MAX. */
#define DEC_MAG_MAX UINT64_C(9007199254740991)

/* Turns the n mantissas held as raw int64 in v's slots into the values
 * m / 10^K in place (no exceptions). 0 when some |m| >= 2^53. With SSE2,
 * pairs with |m| < 2^51 are converted exactly by the 1.5 * 2^52 bias trick
 * (the bit pattern of 1.5 * 2^52 plus m is the double 1.5 * 2^52 + m) and
 * divided two at a time; IEEE division rounds each lane exactly like the
 * scalar division, so the bits are the same. */
static int dec_convert(double *v, size_t n, unsigned K)
{
    size_t i = 0;
#if defined(__SSE2__)
    {
        const __m128d bias = _mm_set1_pd(6755399441055744.0); /* 1.5 * 2^52 */
        const __m128i biasi = _mm_castpd_si128(bias);
        const __m128d div = _mm_set1_pd(p10[K]);
        const uint64_t half = UINT64_C(1) << 51;
        for (; i + 2 <= n; i += 2) {
            if (((get_u64(v, i) + half) | (get_u64(v, i + 1) + half)) >> 52)
                break; /* a larger mantissa: the scalar loop from here */
            __m128i m = _mm_loadu_si128((const __m128i *)(const void *)(v + i));
            __m128d d = _mm_sub_pd(_mm_castsi128_pd(_mm_add_epi64(m, biasi)), bias);
            if (K)
                d = _mm_div_pd(d, div);
            _mm_storeu_pd(v + i, d);
        }
    }
#endif
    uint64_t bad = 0;
    const double div1 = p10[K];
    for (; i < n; i++) {
        uint64_t u = get_u64(v, i);
        bad |= (uint64_t)(u + DEC_MAG_MAX > 2 * DEC_MAG_MAX);
        v[i] = K ? (double)(int64_t)u / div1 : (double)(int64_t)u;
    }
    return bad == 0;
}

/* The LPC fields after the head a0 (see lpc_plan): fills the 8-byte slots
 * out[0..cnt) (cnt >= 2) with a[0..cnt). 0 on malformed input. */
static int lpc_read(struct rd *r, uint64_t a0, size_t cnt, void *out)
{
    int64_t mu;
    uint8_t p, shift;
    int32_t c[LPC_MAXP];
    if (!r_zz(r, &mu) || !r_byte(r, &p) || p < 1 || p > LPC_MAXP || !r_byte(r, &shift) ||
        shift > LPC_MAXSHIFT)
        return 0;
    for (unsigned i = 0; i < p; i++) {
        int64_t ci;
        if (!r_zz(r, &ci) || ci <= -(INT64_C(1) << LPC_PREC) || ci >= (INT64_C(1) << LPC_PREC))
            return 0;
        c[i] = (int32_t)ci;
    }
    uint8_t *b = out;
    if (!seq_read(r, cnt - 1, b + 8))
        return 0;
    lpc_restore(b + 8, cnt - 1, c, p, shift);
    uint64_t prev = a0;
    put_u64(out, 0, a0);
    for (size_t i = 1; i < cnt; i++) {
        prev += get_u64(out, i) + (uint64_t)mu;
        put_u64(out, i, prev);
    }
    return 1;
}

/* The c mantissas of order o into the 8-byte slots of m. */
static int dec_mantissas(struct rd *r, unsigned o, size_t c, void *m)
{
    int64_t h0 = 0, h1 = 0;
    if (o == ORD_LPC)
        return c >= 2 && r_zz(r, &h0) && lpc_read(r, (uint64_t)h0, c, m);
    size_t heads = c < o ? c : o;
    if (heads >= 1 && !r_zz(r, &h0))
        return 0;
    if (heads >= 2 && !r_zz(r, &h1))
        return 0;
    if (c > heads && !seq_read(r, c - heads, (uint8_t *)m + heads * 8u))
        return 0;
    if (heads >= 1) put_u64(m, 0, (uint64_t)h0);
    if (heads >= 2) put_u64(m, 1, (uint64_t)h0 + (uint64_t)h1);
    if (o == 1) {
        uint64_t prev = c ? get_u64(m, 0) : 0;
        for (size_t i = 1; i < c; i++) {
            prev += get_u64(m, i);
            put_u64(m, i, prev);
        }
    } else if (o == 2 && c > 2) {
        uint64_t a = get_u64(m, 0), bb = get_u64(m, 1);
        for (size_t i = 2; i < c; i++) {
            uint64_t x = get_u64(m, i) + 2 * bb - a;
            put_u64(m, i, x);
            a = bb;
            bb = x;
        }
    }
    return 1;
}

static int decode_dec(struct rd *r, uint8_t mode, size_t n, double *v)
{
    unsigned o = (mode >> 2) & 3u, K = mode >> 4;
    uint64_t nexc;
    if (!r_uv(r, &nexc) || nexc > n)
        return 0;
    /* First pass: validate the exception list and remember where it is. */
    struct rd exc = *r;
    size_t idx = 0;
    for (uint64_t j = 0; j < nexc; j++) {
        uint64_t x, b;
        if (!r_uv(r, &x))
            return 0;
        uint64_t gap = x >> 3;
        if (gap > n || idx + gap >= n)
            return 0;
        idx += (size_t)gap + 1;
        if (!exc_value(r, (int)(x & 7u), &b))
            return 0;
    }
    /* Mantissas go to the tail v[nexc..n-1] as raw uint64 (memcpy access). */
    if (!dec_mantissas(r, o, n - (size_t)nexc, v + nexc))
        return 0;
    if (nexc == 0)
        return dec_convert(v, n, K);
    /* Merge forward: reads from index >= the write index, so in place works.
     * The exception list was validated above, so re-reading it cannot fail. */
    size_t mi = 0, next_exc = SIZE_MAX;
    int cls = 0;
    uint64_t left = nexc;
    if (left) {
        uint64_t x = 0;
        (void)r_uv(&exc, &x);
        next_exc = (size_t)(x >> 3);
        cls = (int)(x & 7u);
    }
    for (size_t i = 0; i < n; i++) {
        if (i == next_exc) {
            uint64_t b = 0;
            (void)exc_value(&exc, cls, &b);
            put_u64(v, i, b);
            next_exc = SIZE_MAX;
            if (--left) {
                uint64_t x = 0;
                (void)r_uv(&exc, &x);
                next_exc = i + 1 + (size_t)(x >> 3);
                cls = (int)(x & 7u);
            }
            continue;
        }
        int64_t sm = (int64_t)get_u64(v, nexc + mi);
        if (sm <= -9007199254740992ll || sm >= 9007199254740992ll)
            return 0;
        v[i] = dec_value(sm, K);
        mi++;
    }
    return 1;
}

static int decode_bits(struct rd *r, unsigned o, size_t n, double *v)
{
    if (n < 3 || r->len - r->pos < 8)
        return 0;
    uint64_t u0 = gw_get_be64(r->p + r->pos), pd = 0;
    r->pos += 8;
    if (o == ORD_LPC)
        return lpc_read(r, u0, n, v);
    if (o == 2) {
        int64_t d1;
        if (!r_zz(r, &d1))
            return 0;
        pd = (uint64_t)d1;
    }
    if (!seq_read(r, n - o, v + o))
        return 0;
    put_u64(v, 0, u0);
    uint64_t prev = u0;
    if (o == 2) {
        prev = u0 + pd;
        put_u64(v, 1, prev);
    }
    for (size_t i = o; i < n; i++) {
        uint64_t x = get_u64(v, i);
        pd = o == 1 ? x : pd + x;
        prev += pd;
        put_u64(v, i, prev);
    }
    return 1;
}

/* The value section of n values, which must end exactly at r's end. */
static int decode_values(struct rd *r, size_t n, double *v)
{
    uint8_t mode;
    if (!r_byte(r, &mode))
        return 0;
    if ((mode & 3u) == VM_XOR) {
        if (mode != VM_XOR || !xor_read(r, n, v))
            return 0;
    } else if ((mode & 3u) == VM_DEC) {
        if ((mode >> 4) > BLK_MAX_K || !decode_dec(r, mode, n, v))
            return 0;
    } else if ((mode & 3u) == VM_BITS) {
        unsigned o = (mode >> 2) & 3u;
        if ((mode >> 4) || o < 1 || !decode_bits(r, o, n, v))
            return 0;
    } else {
        return 0;
    }
    return r->pos == r->len;
}

int gw_block_decode(const uint8_t *b, size_t len, int64_t *t, double *v, size_t cap, size_t *n)
{
    struct hdr h;
    int rc = parse_header(b, len, &h);
    if (rc != GW_OK)
        return rc;
    if (!t || !v || cap < h.n)
        return GW_ELIMIT;
    uint8_t *zbody = NULL;
    const uint8_t *body = b + h.len;
    size_t blen = len - h.len;
    if (h.flags & BLK_FLAG_ZSTD) {
        rc = zstd_body(body, blen, body_bound(h.n), &zbody, &blen);
        if (rc != GW_OK)
            return rc;
        body = zbody;
    }
    rc = GW_ECORRUPT;
    struct rd r = {body, blen, 0, 0};
    if (!decode_ts(&r, &h, t))
        goto out;
    if (!decode_values(&r, h.n, v))
        goto out;
    *n = h.n;
    rc = GW_OK;
out:
    free(zbody);
    return rc;
}

int gw_block_samples_reserve(int64_t **t, double **v, size_t *cap, size_t need, size_t first)
{
    if (need <= *cap)
        return GW_OK;
    size_t nc = need;
    if (first) {
        nc = *cap ? *cap : first;
        while (nc < need)
            nc *= 2;
    }
    int64_t *nt = realloc(*t, nc * sizeof *nt);
    if (!nt)
        return GW_ENOMEM;
    *t = nt;
    double *nv = realloc(*v, nc * sizeof *nv);
    if (!nv)
        return GW_ENOMEM;
    *v = nv;
    *cap = nc;
    return GW_OK;
}

int gw_block_ts_decode(const uint8_t *col, size_t col_len, int64_t *t, size_t cap, size_t *n)
{
    struct hdr h;
    int rc = parse_header(col, col_len, &h);
    if (rc != GW_OK)
        return rc;
    if (h.flags & BLK_FLAG_ZSTD)
        return GW_ECORRUPT;
    if (!t || cap < h.n)
        return GW_ELIMIT;
    struct rd r = {col + h.len, col_len - h.len, 0, 0};
    if (!decode_ts(&r, &h, t) || r.pos != r.len)
        return GW_ECORRUPT;
    *n = h.n;
    return GW_OK;
}

int gw_block_values_decode(const uint8_t *val, size_t val_len, size_t n, double *v)
{
    if (!v || n == 0 || n > GW_BLOCK_MAX_SAMPLES)
        return GW_EINVAL;
    if (!val || val_len < 2 || (val[0] & ~BLK_FLAG_ZSTD) != 0)
        return GW_ECORRUPT;
    const uint8_t *sec = val + 1;
    size_t slen = val_len - 1;
    uint8_t *zbody = NULL;
    if (val[0] & BLK_FLAG_ZSTD) {
        int rc = zstd_body(sec, slen, body_bound(n), &zbody, &slen);
        if (rc != GW_OK)
            return rc;
        sec = zbody;
    }
    struct rd r = {sec, slen, 0, 0};
    int ok = decode_values(&r, n, v);
    free(zbody);
    return ok ? GW_OK : GW_ECORRUPT;
}

int gw_block_join(const uint8_t *col, size_t col_len, const uint8_t *val, size_t val_len, struct gw_buf *out)
{
    if (!out)
        return GW_EINVAL;
    struct hdr h;
    int rc = parse_header(col, col_len, &h);
    if (rc != GW_OK)
        return rc;
    if ((h.flags & BLK_FLAG_ZSTD) || !val || val_len < 2 || (val[0] & ~BLK_FLAG_ZSTD) != 0)
        return GW_ECORRUPT;
    const uint8_t *sec = val + 1;
    size_t slen = val_len - 1;
    uint8_t *zbody = NULL;
    if (val[0] & BLK_FLAG_ZSTD) {
        rc = zstd_body(sec, slen, body_bound(h.n), &zbody, &slen);
        if (rc != GW_OK)
            return rc;
        sec = zbody;
    }
    rc = gw_buf_reserve(out, col_len + slen);
    if (rc == GW_OK)
        rc = gw_buf_append(out, col, col_len);
    if (rc == GW_OK)
        rc = gw_buf_append(out, sec, slen);
    free(zbody);
    return rc;
}
