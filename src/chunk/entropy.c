/* src/chunk/entropy.c - static rANS over small alphabets and integer linear
 * prediction, for the block codec's noisy value forms (see entropy.h). */
#include <math.h>
#include <string.h>

#include "entropy.h"

void ent_normalize(const uint32_t *hist, unsigned nsym, size_t total, uint16_t *freq)
{
    uint32_t sum = 0;
    unsigned big = 0;
    for (unsigned s = 0; s < nsym; s++) {
        uint32_t f = 0;
        if (hist[s]) {
            f = (uint32_t)((double)hist[s] * ENT_M / (double)total + 0.5);
            if (f == 0)
                f = 1;
        }
        freq[s] = (uint16_t)(f > ENT_M ? ENT_M : f);
        sum += freq[s];
        if (freq[s] > freq[big])
            big = s;
    }
    /* Rounding leaves the sum a little off ENT_M: the most frequent symbol
     * absorbs it. It holds at least ENT_M / nsym >= 64 > the deficit of at
     * most nsym ones forced up, so it stays >= 1. */
    if (sum > ENT_M) {
        uint32_t over = sum - ENT_M;
        while (over) {
            /* take from the largest (recomputed: a tie can move it) */
            big = 0;
            for (unsigned s = 1; s < nsym; s++)
                if (freq[s] > freq[big])
                    big = s;
            uint32_t take = freq[big] - 1u < over ? freq[big] - 1u : over;
            freq[big] = (uint16_t)(freq[big] - take);
            over -= take;
        }
    } else {
        freq[big] = (uint16_t)(freq[big] + (ENT_M - sum));
    }
}

double ent_cost_bits(const uint32_t *hist, const uint16_t *freq, unsigned nsym)
{
    double bits = 0;
    for (unsigned s = 0; s < nsym; s++)
        if (hist[s])
            bits += (double)hist[s] * ((double)ENT_MBITS - log2((double)freq[s]));
    return bits;
}

size_t ent_encode(const uint8_t *sym, size_t cnt, const uint16_t *freq, unsigned nsym, uint8_t *tmp,
                  const uint8_t **out)
{
    uint32_t cum[ENT_MAXSYM];
    uint32_t c = 0;
    for (unsigned s = 0; s < nsym; s++) {
        cum[s] = c;
        c += freq[s];
    }
    size_t cap = 2 * cnt + 8;
    uint8_t *end = tmp + cap, *ptr = end;
    uint32_t x = ENT_L;
    for (size_t i = cnt; i-- > 0;) {
        uint32_t f = freq[sym[i]];
        uint32_t x_max = ((ENT_L >> ENT_MBITS) << 8) * f;
        while (x >= x_max) {
            *--ptr = (uint8_t)x;
            x >>= 8;
        }
        x = ((x / f) << ENT_MBITS) + (x % f) + cum[sym[i]];
    }
    *--ptr = (uint8_t)(x >> 24);
    *--ptr = (uint8_t)(x >> 16);
    *--ptr = (uint8_t)(x >> 8);
    *--ptr = (uint8_t)x;
    *out = ptr;
    return (size_t)(end - ptr);
}

int ent_dec_init(struct ent_dec *d, const uint16_t *freq, unsigned nsym, const uint8_t *p, size_t len)
{
    if (nsym == 0 || nsym > ENT_MAXSYM || len < 4)
        return 0;
    uint32_t c = 0;
    for (unsigned s = 0; s < nsym; s++) {
        if (freq[s] > ENT_M - c)
            return 0;
        d->freq[s] = freq[s];
        d->cum[s] = (uint16_t)c;
        if (freq[s])
            memset(d->slot + c, (int)s, freq[s]);
        c += freq[s];
    }
    if (c != ENT_M)
        return 0;
    d->x = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    if (d->x < ENT_L || d->x >= (uint32_t)ENT_L << 8)
        return 0;
    d->p = p + 4;
    d->end = p + len;
    return 1;
}

/* ---- linear prediction -------------------------------------------------- */

/* sum_j x[j] x[j-l] in double, four partial sums for speed */
static double autocorr(const int64_t *x, size_t m, unsigned l)
{
    double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    size_t j = l;
    for (; j + 4 <= m; j += 4) {
        a0 += (double)x[j] * (double)x[j - l];
        a1 += (double)x[j + 1] * (double)x[j + 1 - l];
        a2 += (double)x[j + 2] * (double)x[j + 2 - l];
        a3 += (double)x[j + 3] * (double)x[j + 3 - l];
    }
    for (; j < m; j++)
        a0 += (double)x[j] * (double)x[j - l];
    return (a0 + a1) + (a2 + a3);
}

unsigned lpc_design(const int64_t *x, size_t m, unsigned maxp, int32_t *c, unsigned *shift)
{
    if (maxp > LPC_MAXP)
        maxp = LPC_MAXP;
    if (m < 4u * maxp)
        maxp = (unsigned)(m / 4);
    if (maxp == 0)
        return 0;
    double r[LPC_MAXP + 1];
    /* Lags 0..2 first: when order 2 predicts less than ~0.02 bits a value
     * of gain (nearly white x, the common case of a random walk's
     * increments), the other lags are not worth computing. */
    for (unsigned l = 0; l <= 2 && l <= maxp; l++)
        r[l] = autocorr(x, m, l);
    if (!(r[0] > 0) || !isfinite(r[0]))
        return 0;
    r[0] *= 1.0 + 1e-10; /* a little white noise keeps the recursion stable */
    {
        double k1 = r[1] / r[0], e1 = 1.0 - k1 * k1, e2 = e1;
        if (maxp >= 2 && e1 > 0) {
            double k2 = (r[2] - k1 * r[1]) / (r[0] * e1);
            e2 = e1 * (1.0 - k2 * k2);
        }
        if (!(e2 < 0.97))
            return 0;
    }
    for (unsigned l = 3; l <= maxp; l++)
        r[l] = autocorr(x, m, l);
    /* Levinson-Durbin: a[p][1..p] and the error of every order. */
    double a[LPC_MAXP + 1][LPC_MAXP + 1];
    double err = r[0], best_cost = 0.5 * (double)m * log2(err / (double)m + 1.0);
    unsigned best = 0;
    memset(a, 0, sizeof a);
    for (unsigned i = 1; i <= maxp; i++) {
        double acc = r[i];
        for (unsigned j = 1; j < i; j++)
            acc -= a[i - 1][j] * r[i - j];
        double k = acc / err;
        if (!(fabs(k) < 1.0))
            break;
        a[i][i] = k;
        for (unsigned j = 1; j < i; j++)
            a[i][j] = a[i - 1][j] - k * a[i - 1][i - j];
        err *= 1.0 - k * k;
        if (!(err > 0))
            break;
        double cost = 0.5 * (double)m * log2(err / (double)m + 1.0) + 16.0 * i;
        if (cost < best_cost) {
            best_cost = cost;
            best = i;
        }
    }
    if (best == 0)
        return 0;
    double amax = 0;
    for (unsigned i = 1; i <= best; i++)
        if (fabs(a[best][i]) > amax)
            amax = fabs(a[best][i]);
    const double lim = (double)(1u << (LPC_PREC - 1));
    if (!(amax < lim / 2))
        return 0;
    unsigned s = 0;
    while (s < LPC_MAXSHIFT && amax * ldexp(1.0, (int)s + 1) < lim)
        s++;
    int nz = 0;
    for (unsigned i = 1; i <= best; i++) {
        c[i - 1] = (int32_t)lrint(a[best][i] * ldexp(1.0, (int)s));
        nz |= c[i - 1] != 0;
    }
    if (!nz)
        return 0;
    *shift = s;
    return best;
}

void lpc_residuals(const int64_t *x, size_t m, const int32_t *c, unsigned p, unsigned shift, int64_t *e)
{
    for (size_t j = 0; j < m; j++) {
        uint64_t s = 0;
        unsigned top = j < p ? (unsigned)j : p;
        for (unsigned i = 1; i <= top; i++)
            s += (uint64_t)(int64_t)c[i - 1] * (uint64_t)x[j - i];
        e[j] = (int64_t)((uint64_t)x[j] - lpc_asr(s, shift));
    }
}

void lpc_restore(void *slots, size_t m, const int32_t *c, unsigned p, unsigned shift)
{
    uint8_t *b = slots;
    for (size_t j = 0; j < m; j++) {
        uint64_t s = 0, e, xv;
        unsigned top = j < p ? (unsigned)j : p;
        for (unsigned i = 1; i <= top; i++) {
            uint64_t prev;
            memcpy(&prev, b + (j - i) * 8u, 8);
            s += (uint64_t)(int64_t)c[i - 1] * prev;
        }
        memcpy(&e, b + j * 8u, 8);
        xv = e + lpc_asr(s, shift);
        memcpy(b + j * 8u, &xv, 8);
    }
}
