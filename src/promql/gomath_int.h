/* src/promql/gomath_int.h - Go's math package, ported so that PromQL
 * results agree bit for bit with Prometheus (gomath.c says how), and the
 * bit-level float helpers the kernels share with it. Private to
 * src/promql/. */
#ifndef GW_PROMQL_GOMATH_INT_H
#define GW_PROMQL_GOMATH_INT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t f64_bits(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

static inline double f64_from_bits(uint64_t b)
{
    double v;
    memcpy(&v, &b, sizeof v);
    return v;
}

/* Go's int64(f) on amd64 (CVTTSD2SQ): truncation toward zero, and the
 * "integer indefinite" value INT64_MIN for NaN and out-of-range inputs. */
static inline int64_t go_f64_to_i64(double f)
{
    if (isnan(f) || f >= 9223372036854775808.0 || f < -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)f;
}

/* Go's math.Pi (deg() and rad() use it too) */
#define GO_PI 3.14159265358979323846264338327950288

/* Go's math.Exp, Log, ... for float64: the same results as Go 1.19 on amd64. */
double pq_go_exp(double x);
double pq_go_log(double x);
double pq_go_log10(double x);
double pq_go_log2(double x);
double pq_go_pow(double x, double y);
double pq_go_mod(double x, double y);
double pq_go_sin(double x);
double pq_go_cos(double x);
double pq_go_tan(double x);
double pq_go_asin(double x);
double pq_go_acos(double x);
double pq_go_atan(double x);
double pq_go_atan2(double y, double x);
double pq_go_sinh(double x);
double pq_go_cosh(double x);
double pq_go_tanh(double x);
double pq_go_asinh(double x);
double pq_go_acosh(double x);
double pq_go_atanh(double x);
double pq_go_max(double x, double y);
double pq_go_min(double x, double y);

#endif /* GW_PROMQL_GOMATH_INT_H */
