/* src/promql/kernels.c - the numeric kernels of the PromQL evaluator: Kahan
 * summation, binary operators, quantiles, classic-bucket histogram
 * quantiles, the per-window functions (rate, *_over_time, deriv, ...) and
 * the element-wise math and date functions. Every kernel computes what
 * Prometheus 3 (promql/functions.go, quantile.go, engine.go) computes for
 * the same float inputs, bit for bit; the order of floating-point
 * operations below is part of that contract and must not be "simplified".
 *
 * Floating point rules this file relies on:
 *  - a*b+c is never contracted into a fused multiply-add (the pragma
 *    below; -ffp-contract=off), matching Go on amd64, which fuses only
 *    where its source asks for it (the FMA path of its Exp).
 *  - Go's math package is not glibc: its Exp and Log (amd64 assembly), its
 *    trigonometric, inverse and hyperbolic functions, Log1p, Log10 (Log *
 *    1/Ln10), Log2 (Frexp + Log * 1/Ln2) and Pow (repeated squaring over
 *    Frexp, Exp(yf*Log(x)) for the fraction) differ from glibc's correctly
 *    rounded results in the last bit for a few percent of inputs. They are
 *    ported below, operation for operation, and agree bit for bit with Go
 *    1.19 on amd64 on 40,000 random and special inputs each, on both of
 *    Exp's code paths (with and without FMA, chosen by the CPU as Go does).
 *    Other Go versions run the same algorithms (Go 1.26 adds a small-integer
 *    shortcut to Pow that is not mirrored here).
 *  - Nothing here depends on glibc's transcendental functions. From the C
 *    library only exact operations are used: sqrt, floor, ceil, fabs, fmod
 *    (Go's Mod loop is exact, so fmod gives the same result), frexp, modf,
 *    nearbyint (round-to-nearest-even, as CVTSD2SL) and fma (exactly
 *    rounded by definition, as VFMADD).
 *  - Go's int64(float64) conversion of NaN, +-Inf or values outside the
 *    int64 range yields math.MinInt64 on amd64; the date functions mirror
 *    that (and Go's wrap-around date arithmetic) instead of invoking C's
 *    undefined behaviour.
 *  - Go's time.Duration.Seconds() (whole seconds + nanoseconds / 1e9) is
 *    what rate() divides by; for some ranges it differs from ms / 1000.
 */
/* Never fuse a*b+c into one rounding: Go on amd64 does not, and the
 * results below must round exactly as Go's do, whatever -std or -march. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/err.h"
#include "promql/promql_int.h"

/* ------------------------------------------------------------- helpers */

static uint64_t f64_bits(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

static double f64_from_bits(uint64_t b)
{
    double v;
    memcpy(&v, &b, sizeof v);
    return v;
}

/* Go's int64(f) on amd64 (CVTTSD2SQ): truncation toward zero, and the
 * "integer indefinite" value INT64_MIN for NaN and out-of-range inputs. */
static int64_t go_f64_to_i64(double f)
{
    if (isnan(f) || f >= 9223372036854775808.0 || f < -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)f;
}

/* ---------------------------------------------------------- Kahan sums */

/* Prometheus' kahansum.Inc: Kahan-Babuska (Neumaier) step. When the
 * running sum becomes infinite the compensation is reset to 0. */
static void kahan_inc(double inc, double *sum, double *c)
{
    double t = *sum + inc;
    if (isinf(t))
        *c = 0;
    else if (fabs(*sum) >= fabs(inc))
        *c += (*sum - t) + inc;
    else
        *c += (inc - t) + *sum;
    *sum = t;
}

/* kahanSumInc as Prometheus 2.42 has it: no Inf guard, so a term that
 * makes the sum infinite leaves Inf - Inf = NaN in the compensation. */
static void kahan_inc_v2(double inc, double *sum, double *c)
{
    double t = *sum + inc;
    if (fabs(*sum) >= fabs(inc))
        *c += (*sum - t) + inc;
    else
        *c += (inc - t) + *sum;
    *sum = t;
}

void pq_kahan_add(struct pq_kahan *k, double inc)
{
    kahan_inc(inc, &k->sum, &k->c);
}

double pq_kahan_value(const struct pq_kahan *k)
{
    if (isinf(k->sum))
        return k->sum;
    return k->sum + k->c;
}

/* ------------------------------------------------------- stale markers */

int pq_is_stale(double v)
{
    return f64_bits(v) == PQ_STALE_NAN_BITS;
}

/* ------------------------------------------------ Go's math.Ldexp, Pow */

/* math.Ldexp: frac * 2**e with Go's underflow cut-off (exponents below
 * -1075 give a signed zero) and a single rounding for subnormal results. */
static double go_ldexp(double frac, int64_t e)
{
    if (frac == 0 || isinf(frac) || isnan(frac))
        return frac;
    /* normalize a subnormal frac */
    if (fabs(frac) < 2.2250738585072014e-308) {
        frac *= 4503599627370496.0; /* 2**52 */
        e -= 52;
    }
    uint64_t x = f64_bits(frac);
    e += (int64_t)((x >> 52) & 0x7ff) - 1023;
    if (e < -1075)
        return copysign(0, frac);
    if (e > 1023)
        return frac < 0 ? -INFINITY : INFINITY;
    double m = 1;
    if (e < -1022) {
        e += 53;
        m = 1.0 / 9007199254740992.0; /* 2**-53 */
    }
    x &= ~((uint64_t)0x7ff << 52);
    x |= (uint64_t)(e + 1023) << 52;
    return m * f64_from_bits(x);
}

static double go_exp(double x);
static double go_log(double x);

/* isOddInt of Go's pow.go: an integral value whose int64 is odd. */
static int go_is_odd_int(double x)
{
    double xi;
    double xf = modf(x, &xi);
    return xf == 0 && (go_f64_to_i64(xi) & 1) == 1;
}

/* math.Pow: the special cases of IEEE 754-2008 9.2.1 as Go orders them,
 * then x**frac(y) via Exp(yf*Log(x)) and x**int(y) by repeated squaring of
 * Frexp(x) with the binary exponent kept apart. The squaring rounds at
 * every step, so e.g. Pow(1.1, 10) need not be the correctly rounded value. */
static double go_pow(double x, double y)
{
    if (y == 0 || x == 1)
        return 1;
    if (isnan(x) || isnan(y))
        return NAN;
    if (x == 0) {
        if (y < 0) {
            if (go_is_odd_int(y))
                return copysign(INFINITY, x);
            return INFINITY;
        }
        /* y > 0 */
        if (go_is_odd_int(y))
            return x;
        return 0;
    }
    if (isinf(y)) {
        if (x == -1)
            return 1;
        if ((fabs(x) < 1) == (y > 0))
            return 0;
        return INFINITY;
    }
    if (isinf(x)) {
        if (x < 0)
            return go_pow(1 / x, -y); /* Pow(-0, -y) */
        if (y < 0)
            return 0;
        return INFINITY;
    }
    if (y == 0.5)
        return sqrt(x);
    if (y == -0.5)
        return 1 / sqrt(x);

    double yi;
    double yf = modf(fabs(y), &yi);
    if (yf != 0 && x < 0)
        return NAN;
    if (yi >= 9223372036854775808.0) {
        /* a large even integer: overflow or underflow except for -1 */
        if (x == -1)
            return 1;
        if ((fabs(x) < 1) == (y > 0))
            return 0;
        return INFINITY;
    }

    double a1 = 1.0;
    int64_t ae = 0;
    if (yf != 0) {
        if (yf > 0.5) {
            yf--;
            yi++;
        }
        a1 = go_exp(yf * go_log(x));
    }

    int xe_i;
    double x1 = frexp(x, &xe_i);
    int64_t xe = xe_i;
    for (int64_t i = (int64_t)yi; i != 0; i >>= 1) {
        if (xe < -(1 << 12) || (1 << 12) < xe) {
            /* the exponent can only grow from here: Ldexp under/overflows */
            ae += xe;
            break;
        }
        if ((i & 1) == 1) {
            a1 *= x1;
            ae += xe;
        }
        x1 *= x1;
        xe *= 2;
        if (x1 < .5) {
            x1 += x1;
            xe--;
        }
    }
    if (y < 0) {
        a1 = 1 / a1;
        ae = -ae;
    }
    return go_ldexp(a1, ae);
}

/* math.Mod: Go's shift-and-subtract loop is exact, so its result equals
 * C's fmod, which is exact too; only the special cases are Go's. */
static double go_mod(double x, double y)
{
    if (y == 0 || isinf(x) || isnan(x) || isnan(y))
        return NAN;
    return fmod(x, y);
}

/* ------------------------------------------------ Go's math functions
 * Ports of the algorithms Go's math package runs on amd64 (Go 1.19 to
 * 1.24): Exp and Log are its assembly versions (exp_amd64.s, which takes a
 * fused multiply-add path on CPUs with AVX and FMA, and log_amd64.s); the
 * others are its Go code (Cephes and FreeBSD msun algorithms). The
 * operation order is the algorithm; do not reassociate. */

/* math.Pi and the constant expressions of Go's sources, correctly rounded
 * as Go's exact constant arithmetic rounds them. */
#define GO_PI 3.14159265358979323846264338327950288
#define GO_PI_2 1.57079632679489661923132169163975144
#define GO_PI_4 0.785398163397448309615660845819875721
#define GO_3PI_4 2.35619449019234492884698253745962716
#define GO_4_PI 1.27323954473516268615107010698011490
#define GO_LN2 0.693147180559945309417232121458176568
#define GO_1_LN2 1.44269504088896340735992468100189214
#define GO_1_LN10 0.434294481903251827651128918916605082

/* Go's exp takes its FMA path when the CPU has AVX and FMA. The CPU model
 * is read-only after libgcc's start-up constructor, so this is thread-safe. */
static int go_use_fma(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    return __builtin_cpu_supports("avx") && __builtin_cpu_supports("fma");
#else
    return 0;
#endif
}

/* math.Exp on amd64 (exp_amd64.s): x = k*ln2 + r with k = round(x/ln2),
 * r/16 through a degree-8 Taylor polynomial, squared back four times as
 * e(2y) = e(y)*(e(y)+2) on e-1, then scaled by 2**k. */
static double go_exp(double x)
{
    const double log2e = 1.4426950408889634073599246810018920;
    const double ln2u = 0.69314718055966295651160180568695068359375;
    const double ln2l = 0.28235290563031577122588448175013436025525412068e-12;
    const double overflow = 7.09782712893384e+02;
    const double c2 = 0.5, c3 = 1.6666666666666666667e-1, c4 = 4.1666666666666666667e-2,
                 c5 = 8.3333333333333333333e-3, c6 = 1.3888888888888888889e-3,
                 c7 = 1.9841269841269841270e-4, c8 = 2.4801587301587301587e-5;
    uint64_t bx = f64_bits(x);
    if ((bx & ~(1ull << 63)) >= 0x7FF0000000000000ull) {
        if (bx == 0xFFF0000000000000ull)
            return 0;            /* -Inf */
        return x;                /* NaN or +Inf */
    }
    if (x > overflow)
        return INFINITY;
    double kd = log2e * x;
    /* CVTSD2SL: round to nearest even; out of int32 range -> INT32_MIN */
    int32_t k;
    if (isnan(kd) || kd >= 2147483647.5 || kd < -2147483648.5)
        k = INT32_MIN;
    else
        k = (int32_t)nearbyint(kd);
    double kf = (double)k;
    double r, p;
    if (go_use_fma()) {
        r = fma(-kf, ln2u, x);
        r = fma(-kf, ln2l, r);
        r *= 0.0625;
        p = fma(c8, r, c7);
        p = fma(p, r, c6);
        p = fma(p, r, c5);
        p = fma(p, r, c4);
        p = fma(p, r, c3);
        p = fma(p, r, c2);
        p = fma(p, r, 1.0);
        r = r * p;
        for (int i = 0; i < 3; i++) {
            p = r + 2.0;
            r = r * p;
        }
        p = r + 2.0;
        r = fma(p, r, 1.0);
    } else {
        r = x - ln2u * kf;
        r = r - ln2l * kf;
        r *= 0.0625;
        p = c8 * r;
        p += c7; p *= r;
        p += c6; p *= r;
        p += c5; p *= r;
        p += c4; p *= r;
        p += c3; p *= r;
        p += c2; p *= r;
        p += 1.0;
        r = r * p;
        for (int i = 0; i < 4; i++) {
            p = 2.0 + r;
            r = r * p;
        }
        r += 1.0;
    }
    int64_t e = (int64_t)k + 0x3FF;
    if (e <= 0) {
        if (e < -52)
            return 0;
        e += 0x3FE;
        r *= f64_from_bits((uint64_t)e << 52);
        e = 1;
    } else if (e >= 0x7FF) {
        return INFINITY;
    }
    return r * f64_from_bits((uint64_t)e << 52);
}

/* math.Log on amd64 (log_amd64.s, FreeBSD's e_log.c): the fraction and
 * exponent are read straight from the bits (subnormals are not
 * renormalized, as there), then log(1+f) = f - hfsq + s*(hfsq+R). */
static double go_log(double x)
{
    const double hsqrt2 = 7.07106781186547524401e-01;
    const double ln2hi = 6.93147180369123816490e-01, ln2lo = 1.90821492927058770002e-10;
    const double l1 = 6.666666666666735130e-01, l2 = 3.999999999940941908e-01,
                 l3 = 2.857142874366239149e-01, l4 = 2.222219843214978396e-01,
                 l5 = 1.818357216161805012e-01, l6 = 1.531383769920937332e-01,
                 l7 = 1.479819860511658591e-01;
    uint64_t bx = f64_bits(x);
    if ((bx & ~(1ull << 63)) == 0)
        return -INFINITY;
    if (bx >> 63)
        return NAN;
    if (bx >= 0x7FF0000000000000ull)
        return x;
    double f1 = f64_from_bits((bx & 0x000FFFFFFFFFFFFFull) | 0x3FE0000000000000ull);
    double k = (double)((int32_t)((bx >> 52) & 0x7FF) - 0x3FE);
    double adj = (f1 <= hsqrt2) ? 1.0 : 0.0;   /* CMPSD not-less-than */
    k = k - adj;
    f1 = f1 * (adj + 1.0);
    double f = f1 - 1.0;
    double s = f / (2.0 + f);
    double s2 = s * s;
    double s4 = s2 * s2;
    double t1 = l7 * s4;
    t1 += l5; t1 *= s4;
    t1 += l3; t1 *= s4;
    t1 += l1;
    t1 = s2 * t1;
    double t2 = l6 * s4;
    t2 += l4; t2 *= s4;
    t2 += l2;
    t2 = s4 * t2;
    double R = t1 + t2;
    double hfsq = 0.5 * f;
    hfsq *= f;
    double a = s * (R + hfsq);
    a = a + ln2lo * k;
    a = hfsq - a;
    a = a - f;
    return k * ln2hi - a;
}

static double go_log10(double x)
{
    return go_log(x) * GO_1_LN10;
}

static double go_log2(double x)
{
    int e;
    double frac = frexp(x, &e);
    if (frac == 0.5)   /* exact powers of two give exact answers */
        return (double)(e - 1);
    return go_log(frac) * GO_1_LN2 + (double)e;
}

/* math.Log1p (FreeBSD s_log1p.c) */
static double go_log1p(double x)
{
    const double sqrt2m1 = 4.142135623730950488017e-01, sqrt2halfm1 = -2.928932188134524755992e-01,
                 small = 1.0 / (1 << 29), tiny = 1.0 / 18014398509481984.0, /* 2**-54 */
        two53 = 9007199254740992.0, ln2hi = 6.93147180369123816490e-01,
                 ln2lo = 1.90821492927058770002e-10, lp1 = 6.666666666666735130e-01,
                 lp2 = 3.999999999940941908e-01, lp3 = 2.857142874366239149e-01,
                 lp4 = 2.222219843214978396e-01, lp5 = 1.818357216161805012e-01,
                 lp6 = 1.531383769920937332e-01, lp7 = 1.479819860511658591e-01;
    if (x < -1 || isnan(x))
        return NAN;
    if (x == -1)
        return -INFINITY;
    if (isinf(x))
        return INFINITY;
    double absx = fabs(x), f = 0, c = 0;
    uint64_t iu = 0;
    int64_t k = 1;
    if (absx < sqrt2m1) {
        if (absx < small) {
            if (absx < tiny)
                return x;
            return x - x * x * 0.5;
        }
        if (x > sqrt2halfm1) {
            k = 0;
            f = x;
            iu = 1;
        }
    }
    if (k != 0) {
        double u;
        if (absx < two53) {
            u = 1.0 + x;
            iu = f64_bits(u);
            k = (int64_t)((iu >> 52) - 1023);
            if (k > 0)
                c = 1.0 - (u - x);
            else
                c = x - (u - 1.0);
            c /= u;
        } else {
            u = x;
            iu = f64_bits(u);
            k = (int64_t)((iu >> 52) - 1023);
            c = 0;
        }
        iu &= 0x000fffffffffffffull;
        if (iu < 0x0006a09e667f3bcdull) {
            u = f64_from_bits(iu | 0x3ff0000000000000ull);
        } else {
            k++;
            u = f64_from_bits(iu | 0x3fe0000000000000ull);
            iu = (0x0010000000000000ull - iu) >> 2;
        }
        f = u - 1.0;
    }
    double hfsq = 0.5 * f * f;
    double s, R, z;
    double fk = (double)k;
    if (iu == 0) {
        if (f == 0) {
            if (k == 0)
                return 0;
            c += fk * ln2lo;
            return fk * ln2hi + c;
        }
        R = hfsq * (1.0 - 0.66666666666666666 * f);
        if (k == 0)
            return f - R;
        return fk * ln2hi - ((R - (fk * ln2lo + c)) - f);
    }
    s = f / (2.0 + f);
    z = s * s;
    R = z * (lp1 + z * (lp2 + z * (lp3 + z * (lp4 + z * (lp5 + z * (lp6 + z * lp7))))));
    if (k == 0)
        return f - (hfsq - s * (hfsq + R));
    return fk * ln2hi - ((hfsq - (s * (hfsq + R) + (fk * ln2lo + c))) - f);
}

/* Payne-Hanek reduction of Go's trig_reduce.go for x >= 2**29: the bits of
 * 4/pi, multiplied out in 192-bit fixed point. */
#define GO_REDUCE_THRESHOLD 536870912.0   /* 1 << 29 */
static const uint64_t go_m_pi4[] = {
    0x0000000000000001ull, 0x45f306dc9c882a53ull, 0xf84eafa3ea69bb81ull, 0xb6c52b3278872083ull,
    0xfca2c757bd778ac3ull, 0x6e48dc74849ba5c0ull, 0x0c925dd413a32439ull, 0xfc3bd63962534e7dull,
    0xd1046bea5d768909ull, 0xd338e04d68befc82ull, 0x7323ac7306a673e9ull, 0x3908bf177bf25076ull,
    0x3ff12fffbc0b301full, 0xde5e2316b414da3eull, 0xda6cfd9e4f96136eull, 0x9e8c7ecd3cbfd45aull,
    0xea4f758fd7cbe2f6ull, 0x7a0e73ef14a525d4ull, 0xd7f6bf623f1aba10ull, 0xac06608df8f6d757ull,
};

__extension__ typedef unsigned __int128 pq_u128;

static void go_trig_reduce(double x, uint64_t *jo, double *zo)
{
    if (x < GO_PI_4) {
        *jo = 0;
        *zo = x;
        return;
    }
    uint64_t ix = f64_bits(x);
    int exp = (int)((ix >> 52) & 0x7ff) - 1023 - 52;
    ix &= ~((uint64_t)0x7ff << 52);
    ix |= 1ull << 52;
    unsigned digit = (unsigned)(exp + 61) / 64, bitshift = (unsigned)(exp + 61) % 64;
    /* Go's shifts by 64 give 0; C's are undefined, hence the guards */
#define SHL(a, s) ((s) >= 64 ? 0 : (a) << (s))
#define SHR(a, s) ((s) >= 64 ? 0 : (a) >> (s))
    uint64_t z0 = SHL(go_m_pi4[digit], bitshift) | SHR(go_m_pi4[digit + 1], 64 - bitshift);
    uint64_t z1 = SHL(go_m_pi4[digit + 1], bitshift) | SHR(go_m_pi4[digit + 2], 64 - bitshift);
    uint64_t z2 = SHL(go_m_pi4[digit + 2], bitshift) | SHR(go_m_pi4[digit + 3], 64 - bitshift);
    uint64_t z2hi = (uint64_t)(((pq_u128)z2 * ix) >> 64);
    pq_u128 p1 = (pq_u128)z1 * ix;
    uint64_t z1hi = (uint64_t)(p1 >> 64), z1lo = (uint64_t)p1;
    uint64_t z0lo = z0 * ix;
    uint64_t lo = z1lo + z2hi;
    uint64_t carry = lo < z1lo;
    uint64_t hi = z0lo + z1hi + carry;
    uint64_t j = hi >> 61;
    hi = hi << 3 | lo >> 61;
    unsigned lz = hi ? (unsigned)__builtin_clzll(hi) : 64;
    uint64_t e = (uint64_t)(1023 - (lz + 1));
    hi = SHL(hi, lz + 1) | SHR(lo, 64 - (lz + 1));
    hi >>= 64 - 52;
    hi |= e << 52;
#undef SHL
#undef SHR
    double z = f64_from_bits(hi);
    if (j & 1) {
        j++;
        j &= 7;
        z--;
    }
    *jo = j;
    *zo = z * GO_PI_4;
}

static const double go_sin_c[] = {
    1.58962301576546568060e-10, -2.50507477628578072866e-8, 2.75573136213857245213e-6,
    -1.98412698295895385996e-4, 8.33333333332211858878e-3, -1.66666666666666307295e-1,
};
static const double go_cos_c[] = {
    -1.13585365213876817300e-11, 2.08757008419747316778e-9, -2.75573141792967388112e-7,
    2.48015872888517045348e-5, -1.38888888888730564116e-3, 4.16666666666665929218e-2,
};
#define GO_PI4A 7.85398125648498535156e-1
#define GO_PI4B 3.77489470793079817668e-8
#define GO_PI4C 2.69515142907905952645e-15

/* octant j and reduced argument z of |x| (Cody-Waite below 2**29) */
static void go_trig_octant(double x, int mod8, uint64_t *jo, double *zo)
{
    if (x >= GO_REDUCE_THRESHOLD) {
        go_trig_reduce(x, jo, zo);
        return;
    }
    uint64_t j = (uint64_t)(x * GO_4_PI);
    double y = (double)j;
    if (j & 1) {
        j++;
        y++;
    }
    if (mod8)
        j &= 7;
    *jo = j;
    *zo = ((x - y * GO_PI4A) - y * GO_PI4B) - y * GO_PI4C;
}

static double go_sin_poly(double z, double zz)
{
    return z + z * zz * ((((((go_sin_c[0] * zz) + go_sin_c[1]) * zz + go_sin_c[2]) * zz +
                           go_sin_c[3]) * zz + go_sin_c[4]) * zz + go_sin_c[5]);
}

static double go_cos_poly(double zz)
{
    return 1.0 - 0.5 * zz + zz * zz * ((((((go_cos_c[0] * zz) + go_cos_c[1]) * zz +
                                          go_cos_c[2]) * zz + go_cos_c[3]) * zz +
                                        go_cos_c[4]) * zz + go_cos_c[5]);
}

static double go_cos(double x)
{
    if (isnan(x) || isinf(x))
        return NAN;
    int sign = 0;
    uint64_t j;
    double z;
    x = fabs(x);
    go_trig_octant(x, 1, &j, &z);
    if (j > 3) {
        j -= 4;
        sign = !sign;
    }
    if (j > 1)
        sign = !sign;
    double zz = z * z;
    double y = (j == 1 || j == 2) ? go_sin_poly(z, zz) : go_cos_poly(zz);
    return sign ? -y : y;
}

static double go_sin(double x)
{
    if (x == 0 || isnan(x))
        return x;
    if (isinf(x))
        return NAN;
    int sign = 0;
    if (x < 0) {
        x = -x;
        sign = 1;
    }
    uint64_t j;
    double z;
    go_trig_octant(x, 1, &j, &z);
    if (j > 3) {
        sign = !sign;
        j -= 4;
    }
    double zz = z * z;
    double y = (j == 1 || j == 2) ? go_cos_poly(zz) : go_sin_poly(z, zz);
    return sign ? -y : y;
}

static double go_tan(double x)
{
    static const double p[] = {-1.30936939181383777646e4, 1.15351664838587416140e6,
                               -1.79565251976484877988e7};
    static const double q[] = {1.00000000000000000000e0, 1.36812963470692954678e4,
                               -1.32089234440210967447e6, 2.50083801823357915839e7,
                               -5.38695755929454629881e7};
    if (x == 0 || isnan(x))
        return x;
    if (isinf(x))
        return NAN;
    int sign = 0;
    if (x < 0) {
        x = -x;
        sign = 1;
    }
    uint64_t j;
    double z, y;
    go_trig_octant(x, 0, &j, &z);
    double zz = z * z;
    if (zz > 1e-14)
        y = z + z * (zz * (((p[0] * zz) + p[1]) * zz + p[2]) /
                     ((((zz + q[1]) * zz + q[2]) * zz + q[3]) * zz + q[4]));
    else
        y = z;
    if (j & 2)
        y = -1 / y;
    return sign ? -y : y;
}

static double go_xatan(double x)
{
    const double p0 = -8.750608600031904122785e-01, p1 = -1.615753718733365076637e+01,
                 p2 = -7.500855792314704667340e+01, p3 = -1.228866684490136173410e+02,
                 p4 = -6.485021904942025371773e+01, q0 = +2.485846490142306297962e+01,
                 q1 = +1.650270098316988542046e+02, q2 = +4.328810604912902668951e+02,
                 q3 = +4.853903996359136964868e+02, q4 = +1.945506571482613964425e+02;
    double z = x * x;
    z = z * ((((p0 * z + p1) * z + p2) * z + p3) * z + p4) /
        (((((z + q0) * z + q1) * z + q2) * z + q3) * z + q4);
    return x * z + x;
}

static double go_satan(double x)
{
    const double morebits = 6.123233995736765886130e-17, tan3pio8 = 2.41421356237309504880;
    if (x <= 0.66)
        return go_xatan(x);
    if (x > tan3pio8)
        return GO_PI_2 - go_xatan(1 / x) + morebits;
    return GO_PI_4 + go_xatan((x - 1) / (x + 1)) + 0.5 * morebits;
}

static double go_atan(double x)
{
    if (x == 0)
        return x;
    if (x > 0)
        return go_satan(x);
    return -go_satan(-x);
}

static double go_asin(double x)
{
    if (x == 0)
        return x;
    int sign = 0;
    if (x < 0) {
        x = -x;
        sign = 1;
    }
    if (x > 1)
        return NAN;
    double temp = sqrt(1 - x * x);
    if (x > 0.7)
        temp = GO_PI_2 - go_satan(temp / x);
    else
        temp = go_satan(x / temp);
    return sign ? -temp : temp;
}

static double go_acos(double x)
{
    return GO_PI_2 - go_asin(x);
}

static double go_atan2(double y, double x)
{
    if (isnan(y) || isnan(x))
        return NAN;
    if (y == 0) {
        if (x >= 0 && !signbit(x))
            return copysign(0, y);
        return copysign(GO_PI, y);
    }
    if (x == 0)
        return copysign(GO_PI_2, y);
    if (isinf(x)) {
        if (x > 0)
            return isinf(y) ? copysign(GO_PI_4, y) : copysign(0, y);
        return isinf(y) ? copysign(GO_3PI_4, y) : copysign(GO_PI, y);
    }
    if (isinf(y))
        return copysign(GO_PI_2, y);
    double q = go_atan(y / x);
    if (x < 0) {
        if (q <= 0)
            return q + GO_PI;
        return q - GO_PI;
    }
    return q;
}

static double go_sinh(double x)
{
    const double p0 = -0.6307673640497716991184787251e+6, p1 = -0.8991272022039509355398013511e+5,
                 p2 = -0.2894211355989563807284660366e+4, p3 = -0.2630563213397497062819489e+2,
                 q0 = -0.6307673640497716991212077277e+6, q1 = 0.1521517378790019070696485176e+5,
                 q2 = -0.173678953558233699533450911e+3;
    int sign = 0;
    if (x < 0) {
        x = -x;
        sign = 1;
    }
    double temp;
    if (x > 21) {
        temp = go_exp(x) * 0.5;
    } else if (x > 0.5) {
        double ex = go_exp(x);
        temp = (ex - 1 / ex) * 0.5;
    } else {
        double sq = x * x;
        temp = (((p3 * sq + p2) * sq + p1) * sq + p0) * x;
        temp = temp / (((sq + q2) * sq + q1) * sq + q0);
    }
    return sign ? -temp : temp;
}

static double go_cosh(double x)
{
    x = fabs(x);
    if (x > 21)
        return go_exp(x) * 0.5;
    double ex = go_exp(x);
    return (ex + 1 / ex) * 0.5;
}

static double go_tanh(double x)
{
    static const double p[] = {-9.64399179425052238628e-1, -9.92877231001918586564e1,
                               -1.61468768441708447952e3};
    static const double q[] = {1.12811678491632931402e2, 2.23548839060100448583e3,
                               4.84406305325125486048e3};
    const double maxlog = 8.8029691931113054295988e+01;
    double z = fabs(x);
    if (z > 0.5 * maxlog)
        return x < 0 ? -1 : 1;
    if (z >= 0.625) {
        double s = go_exp(2 * z);
        z = 1 - 2 / (s + 1);
        return x < 0 ? -z : z;
    }
    if (x == 0)
        return x;
    double s = x * x;
    return x + x * s * ((p[0] * s + p[1]) * s + p[2]) / (((s + q[0]) * s + q[1]) * s + q[2]);
}

static double go_asinh(double x)
{
    const double near_zero = 1.0 / (1 << 28), large = (double)(1 << 28);
    if (isnan(x) || isinf(x))
        return x;
    int sign = 0;
    if (x < 0) {
        x = -x;
        sign = 1;
    }
    double temp;
    if (x > large)
        temp = go_log(x) + GO_LN2;
    else if (x > 2)
        temp = go_log(2 * x + 1 / (sqrt(x * x + 1) + x));
    else if (x < near_zero)
        temp = x;
    else
        temp = go_log1p(x + x * x / (1 + sqrt(1 + x * x)));
    return sign ? -temp : temp;
}

static double go_acosh(double x)
{
    const double large = (double)(1 << 28);
    if (x < 1 || isnan(x))
        return NAN;
    if (x == 1)
        return 0;
    if (x >= large)
        return go_log(x) + GO_LN2;
    if (x > 2)
        return go_log(2 * x - 1 / (x + sqrt(x * x - 1)));
    double t = x - 1;
    return go_log1p(t + sqrt(2 * t + t * t));
}

static double go_atanh(double x)
{
    const double near_zero = 1.0 / (1 << 28);
    if (x < -1 || x > 1 || isnan(x))
        return NAN;
    if (x == 1)
        return INFINITY;
    if (x == -1)
        return -INFINITY;
    int sign = 0;
    if (x < 0) {
        x = -x;
        sign = 1;
    }
    double temp;
    if (x < near_zero) {
        temp = x;
    } else if (x < 0.5) {
        temp = x + x;
        temp = 0.5 * go_log1p(temp + temp * x / (1 - x));
    } else {
        temp = 0.5 * go_log1p((x + x) / (1 - x));
    }
    return sign ? -temp : temp;
}

/* math.Max and math.Min: NaN wins over everything but +Inf / -Inf
 * respectively, and -0 < +0. */
static double go_max(double x, double y)
{
    if (isinf(x) && x > 0)
        return x;
    if (isinf(y) && y > 0)
        return y;
    if (isnan(x) || isnan(y))
        return NAN;
    if (x == 0 && x == y)
        return signbit(x) ? y : x;
    return x > y ? x : y;
}

static double go_min(double x, double y)
{
    if (isinf(x) && x < 0)
        return x;
    if (isinf(y) && y < 0)
        return y;
    if (isnan(x) || isnan(y))
        return NAN;
    if (x == 0 && x == y)
        return signbit(x) ? x : y;
    return x < y ? x : y;
}

/* ----------------------------------------------------------- operators */

int pq_binop(enum gw_pq_op op, double l, double r, int return_bool, double *out)
{
    int keep;
    switch (op) {
    case GW_PQ_OP_ADD: *out = l + r; return 1;
    case GW_PQ_OP_SUB: *out = l - r; return 1;
    case GW_PQ_OP_MUL: *out = l * r; return 1;
    case GW_PQ_OP_DIV: *out = l / r; return 1;
    case GW_PQ_OP_MOD: *out = go_mod(l, r); return 1;
    case GW_PQ_OP_POW: *out = go_pow(l, r); return 1;
    case GW_PQ_OP_ATAN2: *out = go_atan2(l, r); return 1;
    case GW_PQ_OP_EQL: keep = l == r; break;
    case GW_PQ_OP_NEQ: keep = l != r; break;
    case GW_PQ_OP_GTR: keep = l > r; break;
    case GW_PQ_OP_LSS: keep = l < r; break;
    case GW_PQ_OP_GTE: keep = l >= r; break;
    case GW_PQ_OP_LTE: keep = l <= r; break;
    case GW_PQ_OP_AND:
    case GW_PQ_OP_OR:
    case GW_PQ_OP_UNLESS:
    default:
        /* set operators work on label sets, not values */
        *out = NAN;
        return 0;
    }
    if (return_bool) {
        *out = keep ? 1.0 : 0.0;
        return 1;
    }
    *out = l;
    return keep;
}

/* ----------------------------------------------------------- quantiles */

/* Prometheus' vectorByValueHeap order: NaN before everything, then
 * ascending. */
static int cmp_nan_first(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    int xn = isnan(x), yn = isnan(y);
    if (xn || yn)
        return yn - xn;
    return (x > y) - (x < y);
}

double pq_quantile(double phi, double *vals, size_t n)
{
    if (n == 0 || isnan(phi))
        return NAN;
    if (phi < 0)
        return -INFINITY;
    if (phi > 1)
        return INFINITY;
    qsort(vals, n, sizeof *vals, cmp_nan_first);
    double fn = (double)n;
    double rank = phi * (fn - 1);
    double lower = fmax(0, floor(rank));
    double upper = fmin(fn - 1, lower + 1);
    double weight = rank - floor(rank);
    return vals[(size_t)lower] * (1 - weight) + vals[(size_t)upper] * weight;
}

/* --------------------------------------------- classic bucket quantile */

/* util/almost.Equal: a and b differ by less than epsilon relative to their
 * magnitude (absolute near zero). */
static int almost_equal(double a, double b, double epsilon)
{
    const double min_normal = 2.2250738585072014e-308;
    if (isnan(a) && isnan(b))
        return 1;
    if (a == b)
        return 1;
    double abs_sum = fabs(a) + fabs(b);
    double diff = fabs(a - b);
    if (a == 0 || b == 0 || abs_sum < min_normal)
        return diff < epsilon * min_normal;
    return diff / fmin(abs_sum, 1.7976931348623157e308) < epsilon;
}

/* Prometheus' smallDeltaTolerance: relative count differences below this
 * between neighbouring buckets are floating-point noise. */
#define PQ_SMALL_DELTA_TOLERANCE 1e-12

static int cmp_bucket_upper(const void *a, const void *b)
{
    double x = ((const struct pq_bucket *)a)->upper, y = ((const struct pq_bucket *)b)->upper;
    int xn = isnan(x), yn = isnan(y);
    if (xn || yn)   /* a total order for qsort: NaN bounds first */
        return yn - xn;
    return (x > y) - (x < y);
}

double pq_bucket_quantile(double q, struct pq_bucket *b, size_t n, int *forced_monotonic)
{
    if (forced_monotonic)
        *forced_monotonic = 0;
    if (isnan(q))
        return NAN;
    if (q < 0)
        return -INFINITY;
    if (q > 1)
        return INFINITY;
    if (n == 0)
        return NAN;
    qsort(b, n, sizeof *b, cmp_bucket_upper);
    if (!(isinf(b[n - 1].upper) && b[n - 1].upper > 0))
        return NAN;

    /* coalesceBuckets: merge equal upper bounds (sorted input) */
    size_t m = 0;
    struct pq_bucket last = b[0];
    for (size_t i = 1; i < n; i++) {
        if (b[i].upper == last.upper) {
            last.count += b[i].count;
        } else {
            b[m++] = last;
            last = b[i];
        }
    }
    b[m++] = last;

    /* ensureMonotonicAndIgnoreSmallDeltas */
    int forced = 0;
    double prev = b[0].count;
    for (size_t i = 1; i < m; i++) {
        double curr = b[i].count;
        if (curr == prev)
            continue;
        if (almost_equal(prev, curr, PQ_SMALL_DELTA_TOLERANCE)) {
            b[i].count = prev;
            continue;
        }
        if (curr < prev) {
            b[i].count = prev;
            forced = 1;
            continue;
        }
        prev = curr;
    }

    if (m < 2)
        return NAN;
    double observations = b[m - 1].count;
    if (observations == 0)
        return NAN;
    double rank = q * observations;
    /* sort.Search over the first m-1 buckets: first count >= rank */
    size_t lo = 0, hi = m - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (!(b[mid].count >= rank))
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t i = lo;
    if (forced_monotonic)
        *forced_monotonic = forced;
    if (i == m - 1)
        return b[m - 2].upper;
    if (i == 0 && b[0].upper <= 0)
        return b[0].upper;
    double bucket_start = 0;
    double bucket_end = b[i].upper;
    double count = b[i].count;
    if (i > 0) {
        bucket_start = b[i - 1].upper;
        count -= b[i - 1].count;
        rank -= b[i - 1].count;
    }
    return bucket_start + (bucket_end - bucket_start) * (rank / count);
}

/* -------------------------------------------------- window functions */

/* time.Duration(ms * 1e6).Seconds(): whole seconds plus the nanosecond
 * remainder divided by 1e9, two roundings as Go does them. */
static double go_duration_seconds(int64_t ms)
{
    int64_t sec = ms / 1000;
    int64_t nsec = (ms % 1000) * 1000000;
    return (double)sec + (double)nsec / 1e9;
}

/* extrapolatedRate: rate (counter, per second), increase (counter) and
 * delta (gauge). Needs at least 2 samples.
 *
 * The start of the window is extrapolated to the range start when the
 * first sample lies within 1.1 average sample intervals of it, else by
 * half an interval; a counter's extrapolation also stops where the line
 * through the samples reaches zero. Prometheus 3 (compat 3) takes the
 * threshold decision first and then the zero point; Prometheus 2.42
 * (compat 2) shortens the distance to the zero point first and tests that
 * shortened distance against the threshold. Example: samples 15 s apart,
 * first sample 30 s after the range start (beyond 16.5 s), zero point
 * 3 s before the first sample: compat 3 extrapolates min(7.5, 3) = 3 s,
 * compat 2 extrapolates the full 3 s too (3 < 16.5); with the zero point
 * 20 s before: compat 3 gives min(7.5, 20) = 7.5 s, compat 2 tests 20 s
 * against 16.5 s and falls back to 7.5 s; with the zero point 10 s
 * before: compat 3 gives 7.5 s, compat 2 gives 10 s. */
static int extrapolated_rate(const int64_t *t, const double *v, size_t n, int64_t range_start,
                             int64_t range_end, int is_counter, int is_rate, int compat,
                             double *out)
{
    if (n < 2)
        return 0;
    int64_t first_t = t[0], last_t = t[n - 1];
    double result = v[n - 1] - v[0];
    if (is_counter) {
        for (size_t i = 1; i < n; i++)
            if (v[i] < v[i - 1])
                result += v[i - 1];
    }
    double dur_to_start = (double)(first_t - range_start) / 1000;
    double dur_to_end = (double)(range_end - last_t) / 1000;
    double sampled = (double)(last_t - first_t) / 1000;
    double avg_between = sampled / (double)(n - 1);
    double threshold = avg_between * 1.1;
    if (compat == 2) {
        if (is_counter && result > 0 && v[0] >= 0) {
            double dur_to_zero = sampled * (v[0] / result);
            if (dur_to_zero < dur_to_start)
                dur_to_start = dur_to_zero;
        }
        double interval = sampled;
        interval += dur_to_start < threshold ? dur_to_start : avg_between / 2;
        interval += dur_to_end < threshold ? dur_to_end : avg_between / 2;
        double factor = interval / sampled;
        if (is_rate)
            factor /= go_duration_seconds(range_end - range_start);
        *out = result * factor;
        return 1;
    }
    if (dur_to_start >= threshold)
        dur_to_start = avg_between / 2;
    if (is_counter) {
        /* a counter cannot go below zero: do not extrapolate past the
         * point where the line through the samples reaches zero */
        double dur_to_zero = dur_to_start;
        if (result > 0 && v[0] >= 0)
            dur_to_zero = sampled * (v[0] / result);
        if (dur_to_zero < dur_to_start)
            dur_to_start = dur_to_zero;
    }
    if (dur_to_end >= threshold)
        dur_to_end = avg_between / 2;
    double factor = (sampled + dur_to_start + dur_to_end) / sampled;
    if (is_rate)
        factor /= go_duration_seconds(range_end - range_start);
    *out = result * factor;
    return 1;
}

/* instantValue: irate (is_rate) and idelta from the last two samples. */
static int instant_value(const int64_t *t, const double *v, size_t n, int is_rate, double *out)
{
    if (n < 2)
        return 0;
    double prev = v[n - 2], last = v[n - 1];
    int64_t dt = t[n - 1] - t[n - 2];
    if (dt == 0)
        return 0;
    double r = last;
    if (!is_rate || !(last < prev))
        r = last - prev;   /* gauge, or counter without reset (or NaN) */
    if (is_rate)
        r /= (double)dt / 1000;
    *out = r;
    return 1;
}

/* linearRegression: least squares over (seconds since intercept_t, value)
 * with Kahan-compensated sums; constant values give slope 0 (NaN when the
 * constant is infinite). */
static void linear_regression(const int64_t *t, const double *v, size_t n, int64_t intercept_t,
                              double *slope, double *intercept)
{
    double fn = 0, sum_x = 0, c_x = 0, sum_y = 0, c_y = 0, sum_xy = 0, c_xy = 0, sum_x2 = 0,
           c_x2 = 0;
    double init_y = v[0];
    int const_y = 1;
    for (size_t i = 0; i < n; i++) {
        if (const_y && i > 0 && v[i] != init_y)
            const_y = 0;
        fn += 1.0;
        double x = (double)(t[i] - intercept_t) / 1e3;
        kahan_inc(x, &sum_x, &c_x);
        kahan_inc(v[i], &sum_y, &c_y);
        kahan_inc(x * v[i], &sum_xy, &c_xy);
        kahan_inc(x * x, &sum_x2, &c_x2);
    }
    if (const_y) {
        if (isinf(init_y)) {
            *slope = NAN;
            *intercept = NAN;
        } else {
            *slope = 0;
            *intercept = init_y;
        }
        return;
    }
    sum_x += c_x;
    sum_y += c_y;
    sum_xy += c_xy;
    sum_x2 += c_x2;
    double cov_xy = sum_xy - sum_x * sum_y / fn;
    double var_x = sum_x2 - sum_x * sum_x / fn;
    *slope = cov_xy / var_x;
    *intercept = sum_y / fn - *slope * sum_x / fn;
}

/* avg_over_time: Kahan-compensated sum divided by the count while the sum
 * stays finite; once it would overflow, an incremental mean (also
 * compensated) takes over from the mean so far. */
static double avg_over_time(const double *v, size_t n)
{
    double sum = v[0], count = 1, mean = 0, kc = 0;
    int incremental = 0;
    for (size_t i = 1; i < n; i++) {
        count = (double)(i + 1);
        if (!incremental) {
            double ns = sum, nc = kc;
            kahan_inc(v[i], &ns, &nc);
            if (!isinf(ns)) {
                sum = ns;
                kc = nc;
                continue;
            }
            incremental = 1;
            mean = sum / (count - 1);
            kc /= (count - 1);
        }
        double q = (count - 1) / count;
        double m = q * mean, c = q * kc;
        kahan_inc(v[i] / count, &m, &c);
        mean = m;
        kc = c;
    }
    if (incremental)
        return mean + kc;
    return sum / count + kc / count;
}

/* Welford's online variance with Kahan-compensated mean and sum of
 * squared deviations (varianceOverTime). */
/* stdvar_over_time: Welford's update with Kahan-compensated mean and sum
 * of squares. The Kahan step is Prometheus 3's (an infinite term keeps the
 * sum infinite) or, for compat 2, 2.42's (it turns the result into NaN:
 * values near 1e300 square to +Inf, and 2.42 answers NaN). */
static double variance_over_time(const double *v, size_t n, int compat)
{
    void (*inc)(double, double *, double *) = compat == 2 ? kahan_inc_v2 : kahan_inc;
    double count = 0, mean = 0, c_mean = 0, aux = 0, c_aux = 0;
    for (size_t i = 0; i < n; i++) {
        count++;
        double delta = v[i] - (mean + c_mean);
        inc(delta / count, &mean, &c_mean);
        inc(delta * (v[i] - (mean + c_mean)), &aux, &c_aux);
    }
    return (aux + c_aux) / count;
}

enum cmp_kind { CMP_MAX, CMP_MIN, CMP_TS_MAX, CMP_TS_MIN };

/* compareOverTime: a NaN held so far is replaced by whatever comes next;
 * the ts_of_ variants take the latest of equal extremes. */
static double compare_over_time(const int64_t *t, const double *v, size_t n, enum cmp_kind k)
{
    double best = v[0];
    int64_t ts = t[0];
    for (size_t i = 0; i < n; i++) {
        double cur = v[i];
        int take;
        switch (k) {
        case CMP_MAX: take = cur > best || isnan(best); break;
        case CMP_MIN: take = cur < best || isnan(best); break;
        case CMP_TS_MAX: take = cur >= best || isnan(best); break;
        case CMP_TS_MIN:
        default: take = cur <= best || isnan(best); break;
        }
        if (take) {
            best = cur;
            ts = t[i];
        }
    }
    if (k == CMP_TS_MAX || k == CMP_TS_MIN)
        return (double)ts / 1000;
    return best;
}

/* Go's %f for the error messages: NaN and +Inf/-Inf spelled as Go does. */
static void go_fmt_f(char *buf, size_t len, double v)
{
    if (isnan(v))
        snprintf(buf, len, "NaN");
    else if (isinf(v))
        snprintf(buf, len, "%sInf", v > 0 ? "+" : "-");
    else
        snprintf(buf, len, "%f", v);
}

/* double_exponential_smoothing (Holt's linear method). */
static int double_exp_smoothing(const double *v, size_t n, double sf, double tf, double *out,
                                struct gw_error *err)
{
    char num[64];
    /* NaN passes these checks in Prometheus too */
    if (sf <= 0 || sf >= 1) {
        go_fmt_f(num, sizeof num, sf);
        return gw_error_set(err, GW_EINVAL,
                            "invalid smoothing factor. Expected: 0 < sf < 1, got: %s", num);
    }
    if (tf <= 0 || tf >= 1) {
        go_fmt_f(num, sizeof num, tf);
        return gw_error_set(err, GW_EINVAL,
                            "invalid trend factor. Expected: 0 < tf < 1, got: %s", num);
    }
    if (n < 2)
        return 0;
    double s0 = 0, s1 = v[0], b = v[1] - v[0];
    for (size_t i = 1; i < n; i++) {
        double x = sf * v[i];
        /* calcTrendValue(i-1, ...): the first step keeps the initial trend */
        if (i - 1 != 0) {
            double tx = tf * (s1 - s0);
            double ty = (1 - tf) * b;
            b = tx + ty;
        }
        double y = (1 - sf) * (s1 + b);
        s0 = s1;
        s1 = x + y;
    }
    *out = s1;
    return 1;
}

/* quantile_over_time and mad_over_time sort a copy of the window. */
static double *copy_values(const double *v, size_t n)
{
    if (n > SIZE_MAX / sizeof(double))
        return NULL;
    double *c = malloc(n * sizeof(double));
    if (c)
        memcpy(c, v, n * sizeof(double));
    return c;
}

static int need_scalars(size_t have, size_t want, const char *fname, struct gw_error *err)
{
    if (have >= want)
        return GW_OK;
    return gw_error_set(err, GW_EINVAL, "%s: expected %zu scalar argument(s), got %zu", fname, want,
                        have);
}

int pq_kernel_window(enum gw_pq_func_id f, int compat, const int64_t *t, const double *v, size_t n,
                     int64_t eval_ts, int64_t range_start, int64_t range_end,
                     const double *scalars, size_t n_scalars, double *out, struct gw_error *err)
{
    int rc;
    /* Prometheus calls range functions only for series with samples in
     * the window: no samples, no point (and no argument check). */
    if (n == 0)
        return 0;
    switch (f) {
    case GW_PQ_F_RATE:
        return extrapolated_rate(t, v, n, range_start, range_end, 1, 1, compat, out);
    case GW_PQ_F_INCREASE:
        return extrapolated_rate(t, v, n, range_start, range_end, 1, 0, compat, out);
    case GW_PQ_F_DELTA:
        return extrapolated_rate(t, v, n, range_start, range_end, 0, 0, compat, out);
    case GW_PQ_F_IRATE:
        return instant_value(t, v, n, 1, out);
    case GW_PQ_F_IDELTA:
        return instant_value(t, v, n, 0, out);
    case GW_PQ_F_DERIV: {
        if (n < 2)
            return 0;
        double slope, icpt;
        /* intercept at the first sample keeps the x values small */
        linear_regression(t, v, n, t[0], &slope, &icpt);
        *out = slope;
        return 1;
    }
    case GW_PQ_F_PREDICT_LINEAR: {
        if ((rc = need_scalars(n_scalars, 1, "predict_linear", err)) != GW_OK)
            return rc;
        if (n < 2)
            return 0;
        double slope, icpt;
        linear_regression(t, v, n, eval_ts, &slope, &icpt);
        *out = slope * scalars[0] + icpt;
        return 1;
    }
    case GW_PQ_F_RESETS: {
        size_t resets = 0;
        for (size_t i = 1; i < n; i++)
            if (v[i] < v[i - 1])
                resets++;
        *out = (double)resets;
        return 1;
    }
    case GW_PQ_F_CHANGES: {
        size_t changes = 0;
        for (size_t i = 1; i < n; i++)
            if (v[i] != v[i - 1] && !(isnan(v[i]) && isnan(v[i - 1])))
                changes++;
        *out = (double)changes;
        return 1;
    }
    case GW_PQ_F_AVG_OVER_TIME:
        *out = avg_over_time(v, n);
        return 1;
    case GW_PQ_F_SUM_OVER_TIME: {
        double sum = 0, c = 0;
        for (size_t i = 0; i < n; i++)
            kahan_inc(v[i], &sum, &c);
        *out = isinf(sum) ? sum : sum + c;
        return 1;
    }
    case GW_PQ_F_MIN_OVER_TIME:
        *out = compare_over_time(t, v, n, CMP_MIN);
        return 1;
    case GW_PQ_F_MAX_OVER_TIME:
        *out = compare_over_time(t, v, n, CMP_MAX);
        return 1;
    case GW_PQ_F_TS_OF_MIN_OVER_TIME:
        *out = compare_over_time(t, v, n, CMP_TS_MIN);
        return 1;
    case GW_PQ_F_TS_OF_MAX_OVER_TIME:
        *out = compare_over_time(t, v, n, CMP_TS_MAX);
        return 1;
    case GW_PQ_F_COUNT_OVER_TIME:
        *out = (double)n;
        return 1;
    case GW_PQ_F_LAST_OVER_TIME:
        *out = v[n - 1];
        return 1;
    case GW_PQ_F_FIRST_OVER_TIME:
        *out = v[0];
        return 1;
    case GW_PQ_F_TS_OF_LAST_OVER_TIME:
        *out = (double)t[n - 1] / 1000;
        return 1;
    case GW_PQ_F_TS_OF_FIRST_OVER_TIME:
        *out = (double)t[0] / 1000;
        return 1;
    case GW_PQ_F_PRESENT_OVER_TIME:
        *out = 1;
        return 1;
    case GW_PQ_F_STDDEV_OVER_TIME:
        *out = sqrt(variance_over_time(v, n, compat));
        return 1;
    case GW_PQ_F_STDVAR_OVER_TIME:
        *out = variance_over_time(v, n, compat);
        return 1;
    case GW_PQ_F_QUANTILE_OVER_TIME: {
        if ((rc = need_scalars(n_scalars, 1, "quantile_over_time", err)) != GW_OK)
            return rc;
        double *c = copy_values(v, n);
        if (!c)
            return gw_error_set(err, GW_ENOMEM, "quantile_over_time: out of memory");
        *out = pq_quantile(scalars[0], c, n);
        free(c);
        return 1;
    }
    case GW_PQ_F_MAD_OVER_TIME: {
        double *c = copy_values(v, n);
        if (!c)
            return gw_error_set(err, GW_ENOMEM, "mad_over_time: out of memory");
        double median = pq_quantile(0.5, c, n);
        for (size_t i = 0; i < n; i++)
            c[i] = fabs(v[i] - median);
        *out = pq_quantile(0.5, c, n);
        free(c);
        return 1;
    }
    case GW_PQ_F_DOUBLE_EXPONENTIAL_SMOOTHING:
        if ((rc = need_scalars(n_scalars, 2, "double_exponential_smoothing", err)) != GW_OK)
            return rc;
        return double_exp_smoothing(v, n, scalars[0], scalars[1], out, err);
    default:
        return gw_error_set(err, GW_EINVAL, "function %d is not a range-vector function", (int)f);
    }
}

/* ------------------------------------------------------ math and dates */

/* Go's time package (1.19) on Unix seconds in UTC: seconds since the
 * "absolute" epoch (January 1 of year -292277022399) in uint64, with Go's
 * wrap-around for times that do not fit. */
#define GO_SECONDS_PER_DAY 86400ull
#define GO_ABSOLUTE_ZERO_YEAR (-292277022399ll)
#define GO_UNIX_TO_ABSOLUTE (62135596800ll + 9223371966579724800ll)

static uint64_t go_abs_seconds(double v)
{
    int64_t sec = go_f64_to_i64(v);
    return (uint64_t)sec + (uint64_t)GO_UNIX_TO_ABSOLUTE;
}

static int go_is_leap(int64_t year)
{
    return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
}

/* absDate: year and zero-based day of the year. */
static void go_abs_date(uint64_t abs, int64_t *year, int64_t *yday)
{
    uint64_t d = abs / GO_SECONDS_PER_DAY;
    uint64_t n = d / 146097;   /* 400-year cycles */
    uint64_t y = 400 * n;
    d -= 146097 * n;
    n = d / 36524;             /* 100-year cycles; the last is one day longer */
    n -= n >> 2;
    y += 100 * n;
    d -= 36524 * n;
    n = d / 1461;              /* 4-year cycles */
    y += 4 * n;
    d -= 1461 * n;
    n = d / 365;               /* years; the fourth is the leap year */
    n -= n >> 2;
    y += n;
    d -= 365 * n;
    *year = (int64_t)(y + (uint64_t)GO_ABSOLUTE_ZERO_YEAR);
    *yday = (int64_t)d;
}

static const int go_days_before[] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365};

/* month 1..12 and day 1..31 */
static void go_month_day(int64_t year, int64_t yday, int *month, int *day)
{
    int dd = (int)yday;
    if (go_is_leap(year)) {
        if (dd > 31 + 29 - 1) {
            dd--;
        } else if (dd == 31 + 29 - 1) {
            *month = 2;
            *day = 29;
            return;
        }
    }
    int m = dd / 31;
    int end = go_days_before[m + 1];
    int begin;
    if (dd >= end) {
        m++;
        begin = end;
    } else {
        begin = go_days_before[m];
    }
    *month = m + 1;
    *day = dd - begin + 1;
}

static double date_func(enum gw_pq_func_id f, double v)
{
    uint64_t abs = go_abs_seconds(v);
    int64_t year, yday;
    int month, day;
    switch (f) {
    case GW_PQ_F_HOUR:
        return (double)((abs % GO_SECONDS_PER_DAY) / 3600);
    case GW_PQ_F_MINUTE:
        return (double)((abs % 3600) / 60);
    case GW_PQ_F_DAY_OF_WEEK:
        /* January 1 of the absolute year was a Monday */
        return (double)(((abs + GO_SECONDS_PER_DAY) % (7 * GO_SECONDS_PER_DAY)) /
                        GO_SECONDS_PER_DAY);
    default:
        break;
    }
    go_abs_date(abs, &year, &yday);
    switch (f) {
    case GW_PQ_F_YEAR:
        return (double)year;
    case GW_PQ_F_DAY_OF_YEAR:
        return (double)(yday + 1);
    case GW_PQ_F_MONTH:
        go_month_day(year, yday, &month, &day);
        return (double)month;
    case GW_PQ_F_DAY_OF_MONTH:
        go_month_day(year, yday, &month, &day);
        return (double)day;
    case GW_PQ_F_DAYS_IN_MONTH:
        go_month_day(year, yday, &month, &day);
        if (month == 2 && go_is_leap(year))
            return 29;
        return (double)(go_days_before[month] - go_days_before[month - 1]);
    default:
        return NAN;
    }
}

double pq_kernel_math(enum gw_pq_func_id f, double v, const double *scalars, size_t n_scalars)
{
    switch (f) {
    case GW_PQ_F_ABS: return fabs(v);
    case GW_PQ_F_CEIL: return ceil(v);
    case GW_PQ_F_FLOOR: return floor(v);
    case GW_PQ_F_SQRT: return sqrt(v);
    case GW_PQ_F_EXP: return go_exp(v);
    case GW_PQ_F_LN: return go_log(v);
    case GW_PQ_F_LOG10: return go_log10(v);
    case GW_PQ_F_LOG2: return go_log2(v);
    case GW_PQ_F_SIN: return go_sin(v);
    case GW_PQ_F_COS: return go_cos(v);
    case GW_PQ_F_TAN: return go_tan(v);
    case GW_PQ_F_ASIN: return go_asin(v);
    case GW_PQ_F_ACOS: return go_acos(v);
    case GW_PQ_F_ATAN: return go_atan(v);
    case GW_PQ_F_SINH: return go_sinh(v);
    case GW_PQ_F_COSH: return go_cosh(v);
    case GW_PQ_F_TANH: return go_tanh(v);
    case GW_PQ_F_ASINH: return go_asinh(v);
    case GW_PQ_F_ACOSH: return go_acosh(v);
    case GW_PQ_F_ATANH: return go_atanh(v);
    case GW_PQ_F_DEG: return v * 180 / GO_PI;
    case GW_PQ_F_RAD: return v * GO_PI / 180;
    case GW_PQ_F_SGN:
        if (v < 0)
            return -1;
        if (v > 0)
            return 1;
        return v;   /* 0, -0 and NaN as they are */
    case GW_PQ_F_ROUND: {
        double to_nearest = n_scalars >= 1 ? scalars[0] : 1;
        /* the inverse seems to cause fewer floating-point accuracy issues */
        double inv = 1.0 / to_nearest;
        return floor(v * inv + 0.5) / inv;
    }
    case GW_PQ_F_CLAMP: {
        double lo = n_scalars >= 1 ? scalars[0] : -INFINITY;
        double hi = n_scalars >= 2 ? scalars[1] : INFINITY;
        return go_max(lo, go_min(hi, v));
    }
    case GW_PQ_F_CLAMP_MIN:
        return go_max(n_scalars >= 1 ? scalars[0] : -INFINITY, go_min(INFINITY, v));
    case GW_PQ_F_CLAMP_MAX:
        return go_max(-INFINITY, go_min(n_scalars >= 1 ? scalars[0] : INFINITY, v));
    case GW_PQ_F_DAYS_IN_MONTH:
    case GW_PQ_F_DAY_OF_MONTH:
    case GW_PQ_F_DAY_OF_WEEK:
    case GW_PQ_F_DAY_OF_YEAR:
    case GW_PQ_F_HOUR:
    case GW_PQ_F_MINUTE:
    case GW_PQ_F_MONTH:
    case GW_PQ_F_YEAR:
        return date_func(f, v);
    default:
        return NAN;
    }
}
