/* src/promql/gomath.c - a port of Go's math package (the parts PromQL
 * uses), so that gpuwatch's answers equal Prometheus' bit for bit.
 *
 * Go's math package is not glibc: its Exp and Log (amd64 assembly), its
 * trigonometric, inverse and hyperbolic functions, Log1p, Log10 (Log *
 * 1/Ln10), Log2 (Frexp + Log * 1/Ln2) and Pow (repeated squaring over
 * Frexp, Exp(yf*Log(x)) for the fraction) differ from glibc's correctly
 * rounded results in the last bit for a few percent of inputs. They are
 * ported below, operation for operation, and agree bit for bit with Go
 * 1.19 on amd64 on 40,000 random and special inputs each, on both of
 * Exp's code paths (with and without FMA, chosen by the CPU as Go does).
 * Other Go versions run the same algorithms (Go 1.26 adds a small-integer
 * shortcut to Pow that is not mirrored here).
 *
 * Rules: a*b+c is never contracted into a fused multiply-add (the pragma
 * below; Go on amd64 fuses only where its source asks for it, the FMA path
 * of its Exp), and nothing here calls glibc's transcendental functions:
 * from the C library only exact operations are used: sqrt, fabs,
 * copysign, fmod (Go's Mod loop is exact, so fmod gives the same result),
 * frexp, modf, nearbyint (round-to-nearest-even, as CVTSD2SL) and fma
 * (exactly rounded by definition, as VFMADD). The order of floating-point
 * operations is part of the contract and must not be "simplified".
 */
/* Never fuse a*b+c into one rounding: Go on amd64 does not, and the
 * results below must round exactly as Go's do, whatever -std or -march. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "promql/gomath_int.h"

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
double pq_go_pow(double x, double y)
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
            return pq_go_pow(1 / x, -y); /* Pow(-0, -y) */
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
        a1 = pq_go_exp(yf * pq_go_log(x));
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
double pq_go_mod(double x, double y)
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
double pq_go_exp(double x)
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
double pq_go_log(double x)
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

double pq_go_log10(double x)
{
    return pq_go_log(x) * GO_1_LN10;
}

double pq_go_log2(double x)
{
    int e;
    double frac = frexp(x, &e);
    if (frac == 0.5)   /* exact powers of two give exact answers */
        return (double)(e - 1);
    return pq_go_log(frac) * GO_1_LN2 + (double)e;
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

double pq_go_cos(double x)
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

double pq_go_sin(double x)
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

double pq_go_tan(double x)
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

double pq_go_atan(double x)
{
    if (x == 0)
        return x;
    if (x > 0)
        return go_satan(x);
    return -go_satan(-x);
}

double pq_go_asin(double x)
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

double pq_go_acos(double x)
{
    return GO_PI_2 - pq_go_asin(x);
}

double pq_go_atan2(double y, double x)
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
    double q = pq_go_atan(y / x);
    if (x < 0) {
        if (q <= 0)
            return q + GO_PI;
        return q - GO_PI;
    }
    return q;
}

double pq_go_sinh(double x)
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
        temp = pq_go_exp(x) * 0.5;
    } else if (x > 0.5) {
        double ex = pq_go_exp(x);
        temp = (ex - 1 / ex) * 0.5;
    } else {
        double sq = x * x;
        temp = (((p3 * sq + p2) * sq + p1) * sq + p0) * x;
        temp = temp / (((sq + q2) * sq + q1) * sq + q0);
    }
    return sign ? -temp : temp;
}

double pq_go_cosh(double x)
{
    x = fabs(x);
    if (x > 21)
        return pq_go_exp(x) * 0.5;
    double ex = pq_go_exp(x);
    return (ex + 1 / ex) * 0.5;
}

double pq_go_tanh(double x)
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
        double s = pq_go_exp(2 * z);
        z = 1 - 2 / (s + 1);
        return x < 0 ? -z : z;
    }
    if (x == 0)
        return x;
    double s = x * x;
    return x + x * s * ((p[0] * s + p[1]) * s + p[2]) / (((s + q[0]) * s + q[1]) * s + q[2]);
}

double pq_go_asinh(double x)
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
        temp = pq_go_log(x) + GO_LN2;
    else if (x > 2)
        temp = pq_go_log(2 * x + 1 / (sqrt(x * x + 1) + x));
    else if (x < near_zero)
        temp = x;
    else
        temp = go_log1p(x + x * x / (1 + sqrt(1 + x * x)));
    return sign ? -temp : temp;
}

double pq_go_acosh(double x)
{
    const double large = (double)(1 << 28);
    if (x < 1 || isnan(x))
        return NAN;
    if (x == 1)
        return 0;
    if (x >= large)
        return pq_go_log(x) + GO_LN2;
    if (x > 2)
        return pq_go_log(2 * x - 1 / (x + sqrt(x * x - 1)));
    double t = x - 1;
    return go_log1p(t + sqrt(2 * t + t * t));
}

double pq_go_atanh(double x)
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
double pq_go_max(double x, double y)
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

double pq_go_min(double x, double y)
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
