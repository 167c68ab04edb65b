/* src/promql/kernels.c - the numeric kernels of the PromQL evaluator: Kahan
 * summation, binary operators, quantiles, classic-bucket histogram
 * quantiles, the per-window functions (rate, *_over_time, deriv, ...) and
 * the element-wise math and date functions. Every kernel computes what
 * Prometheus 3 (promql/functions.go, quantile.go, engine.go) computes for
 * the same float inputs, bit for bit; the order of floating-point
 * operations below is part of that contract and must not be "simplified".
 *
 * Floating point rules this file relies on:
 *  - The build is ISO C11 (CMAKE_C_EXTENSIONS OFF), so GCC does not contract
 *    a*b+c into a fused multiply-add (-ffp-contract=off is the ISO default),
 *    matching Go on amd64, which never fuses unless asked to.
 *  - Go's math package computes several functions in Go code whose results
 *    differ from glibc in the last bit for some inputs. Those are mirrored
 *    here with Go's own algorithm: Pow (repeated squaring over Frexp), Mod
 *    (exact, equal to fmod with Go's special cases), Log10 (Log * 1/Ln10),
 *    Log2 (Frexp + Log * 1/Ln2, exact for powers of two), Ldexp.
 *  - The remaining transcendental functions (exp, log, sin, cos, tan, asin,
 *    acos, atan, atan2, sinh, cosh, tanh, asinh, acosh, atanh) come from
 *    glibc, whose double versions are correctly rounded in practice; Go's
 *    are accurate to within 1 ulp, so a last-bit difference is possible for
 *    rare inputs there and only there. sqrt, floor, ceil, fabs and the four
 *    arithmetic operators are exact IEEE-754 operations in both.
 *  - Go's int64(float64) conversion of NaN, +-Inf or values outside the
 *    int64 range yields math.MinInt64 on amd64; the date functions mirror
 *    that instead of invoking C's undefined behaviour.
 */
#include <math.h>
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
 * every step, so e.g. Pow(1.1, 10) is not glibc's correctly rounded pow. */
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
        a1 = exp(yf * log(x));
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
    case GW_PQ_OP_ATAN2: *out = atan2(l, r); return 1;
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
