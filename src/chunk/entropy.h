/* src/chunk/entropy.h - the two modelling tools of the block codec's noisy
 * forms (src/chunk/block.c): a static rANS coder for small alphabets and
 * integer linear prediction (LPC, as lossless audio coders use it).
 *
 * rANS: 32-bit state, byte-wise renormalisation, probabilities in units of
 * 1/ENT_M. Symbols 0 .. nsym-1 (nsym <= ENT_MAXSYM) with frequencies that
 * sum to ENT_M exactly; a symbol of frequency 0 cannot be coded. The stream
 * is written so that the decoder reads it front to back: 4 bytes of the
 * final encoder state (little-endian), then the renormalisation bytes. A
 * decoder that ends with a state other than the encoder's initial one, or
 * with bytes left over, has read a corrupt stream.
 *
 * LPC: a residual is e_j = x_j - asr(sum_{i=1..min(p,j)} c_i x_{j-i}, shift)
 * in modulo-2^64 arithmetic (asr = arithmetic shift right, rounding toward
 * minus infinity), so any int64 sequence round-trips bit-exactly whatever
 * the coefficients; they only decide how small the residuals are.
 * Internal to src/chunk/ (not a public header). */
#ifndef GW_CHUNK_ENTROPY_H
#define GW_CHUNK_ENTROPY_H

#include <stddef.h>
#include <stdint.h>

#define ENT_MBITS 12u
#define ENT_M (1u << ENT_MBITS)
#define ENT_MAXSYM 64u
#define ENT_L (1u << 23)

#define LPC_MAXP 32u
#define LPC_PREC 14u     /* coefficient magnitude below 2^(LPC_PREC-1) */
#define LPC_MAXSHIFT 30u

/* Frequencies (sum ENT_M, every symbol with hist > 0 gets >= 1) from a
 * histogram of total > 0 symbols over nsym (1 .. ENT_MAXSYM) slots. */
void ent_normalize(const uint32_t *hist, unsigned nsym, size_t total, uint16_t *freq);

/* Bits the rANS stream of those symbols takes with freq (estimate; the
 * stream adds at most 4 bytes of final state and a byte of rounding). */
double ent_cost_bits(const uint32_t *hist, const uint16_t *freq, unsigned nsym);

/* Encodes sym[0..cnt) (every symbol of frequency > 0) into tmp, which
 * holds 2 * cnt + 8 bytes; the stream is *out (inside tmp). Returns its
 * length. */
size_t ent_encode(const uint8_t *sym, size_t cnt, const uint16_t *freq, unsigned nsym, uint8_t *tmp,
                  const uint8_t **out);

struct ent_dec {
    uint32_t x;
    const uint8_t *p, *end;
    uint16_t freq[ENT_MAXSYM], cum[ENT_MAXSYM];
    uint8_t slot[ENT_M];
};

/* Checks freq (sum ENT_M) and the stream head. 0 on malformed input. */
int ent_dec_init(struct ent_dec *d, const uint16_t *freq, unsigned nsym, const uint8_t *p, size_t len);

/* The next symbol; 0 when the stream ran out (corrupt). */
static inline int ent_dec_next(struct ent_dec *d, unsigned *sym)
{
    uint32_t s = d->slot[d->x & (ENT_M - 1u)];
    d->x = (uint32_t)d->freq[s] * (d->x >> ENT_MBITS) + (d->x & (ENT_M - 1u)) - d->cum[s];
    while (d->x < ENT_L) {
        if (d->p == d->end)
            return 0;
        d->x = d->x << 8 | *d->p++;
    }
    *sym = s;
    return 1;
}

/* 1 when the stream ended where the encoder started it. */
static inline int ent_dec_done(const struct ent_dec *d) { return d->x == ENT_L && d->p == d->end; }

/* Arithmetic shift right (toward minus infinity) of a two's-complement
 * value held in a uint64. */
static inline uint64_t lpc_asr(uint64_t u, unsigned s)
{
    return (u >> 63) ? ~(~u >> s) : u >> s;
}

/* Chooses an order p (1 .. maxp, maxp <= LPC_MAXP) and quantized
 * coefficients c[0..p) with their shift for x[0..m), by the autocorrelation
 * method (Levinson-Durbin); the order minimises the estimated residual bits
 * plus the coefficients' cost. Returns p, or 0 when x gives no usable
 * predictor (constant, too short). */
unsigned lpc_design(const int64_t *x, size_t m, unsigned maxp, int32_t *c, unsigned *shift);

/* e[j] = residual of x[j] (see the top); e may not alias x. */
void lpc_residuals(const int64_t *x, size_t m, const int32_t *c, unsigned p, unsigned shift, int64_t *e);

/* In place over 8-byte slots (memcpy access): slot j holds e_j on entry and
 * x_j on return. */
void lpc_restore(void *slots, size_t m, const int32_t *c, unsigned p, unsigned shift);

#endif /* GW_CHUNK_ENTROPY_H */
