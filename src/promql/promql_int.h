/* src/promql/promql_int.h - what the PromQL evaluator (eval.c) needs from
 * the numeric kernels (kernels.c): per-window functions (rate, *_over_time,
 * deriv, ...), element-wise math and date functions, binary operators,
 * Kahan summation, quantiles and classic-bucket histogram quantiles. Each
 * kernel computes exactly what Prometheus' promql/functions.go or
 * quantile.go computes for the same inputs, bit for bit. The kernels know
 * nothing about labels, selectors or the query; eval.c does. */
#ifndef GW_PROMQL_INT_H
#define GW_PROMQL_INT_H

#include <stddef.h>
#include <stdint.h>
#include "gpuwatch/promql.h"

/* ---- Kahan-Babuska summation, as Prometheus' kahanSumInc ---- */
struct pq_kahan {
    double sum;
    double c;
};
void pq_kahan_add(struct pq_kahan *k, double inc);
double pq_kahan_value(const struct pq_kahan *k);   /* sum + c (c dropped when sum is +-Inf) */

/* ---- functions over one series' window ----
 * t[]/v[] are the window's samples in time order, stale markers already
 * removed (n may be 0). eval_ts is the step's evaluation time (not the @
 * time: predict_linear's intercept is taken there, as in Prometheus),
 * range_start/range_end the selector's window bounds in ms (range_start =
 * t - offset - range, range_end = t - offset, t the @ time when given,
 * else eval_ts),
 * as Prometheus' extrapolatedRate and linearRegression use them.
 * scalars are the function's scalar arguments in call order (for
 * quantile_over_time the quantile, for predict_linear the seconds ahead,
 * for double_exponential_smoothing sf and tf).
 * compat selects the Prometheus version whose arithmetic is followed
 * where 2.42 and 3 differ (2 = Prometheus 2.42, anything else =
 * Prometheus 3): rate/increase limit the start extrapolation by the
 * counter's zero point before (2) or after (3) the 1.1x threshold test;
 * stddev/stdvar_over_time use Kahan steps that turn an Inf term into NaN
 * (2) or keep the Inf (3).
 * Returns 1 with *out set when the function yields a value, 0 when it
 * yields no point (e.g. rate of fewer than 2 samples), GW_EINVAL with err
 * set when an argument is invalid (double_exponential_smoothing factors
 * outside (0, 1)).
 * Handles: RATE INCREASE DELTA IRATE IDELTA DERIV PREDICT_LINEAR RESETS
 * CHANGES AVG/MIN/MAX/SUM/COUNT/LAST/FIRST/PRESENT/STDDEV/STDVAR/QUANTILE/
 * MAD_OVER_TIME TS_OF_{MIN,MAX,LAST,FIRST}_OVER_TIME
 * DOUBLE_EXPONENTIAL_SMOOTHING. */
int pq_kernel_window(enum gw_pq_func_id f, int compat, const int64_t *t, const double *v, size_t n,
                     int64_t eval_ts, int64_t range_start, int64_t range_end,
                     const double *scalars, size_t n_scalars, double *out, struct gw_error *err);

/* ---- element-wise functions of one sample value ----
 * Handles ABS CEIL EXP FLOOR LN LOG10 LOG2 SQRT SGN ACOS ACOSH ASIN ASINH
 * ATAN ATANH COS COSH SIN SINH TAN TANH DEG RAD ROUND (scalars[0] = to
 * nearest, default 1) CLAMP (min, max) CLAMP_MIN CLAMP_MAX and the date
 * functions DAYS_IN_MONTH DAY_OF_MONTH DAY_OF_WEEK DAY_OF_YEAR HOUR MINUTE
 * MONTH YEAR (v = Unix seconds, UTC). Returns the result value. */
double pq_kernel_math(enum gw_pq_func_id f, double v, const double *scalars, size_t n_scalars);

/* ---- binary operators on two floats ----
 * Arithmetic (+ - * / % ^ atan2) returns 1 with *out set. Comparisons
 * return 1 when the comparison holds, else 0, and set *out to l (filter
 * mode) - or, when return_bool is set, always return 1 with *out 1 or 0.
 * Set operators are not handled here. */
int pq_binop(enum gw_pq_op op, double l, double r, int return_bool, double *out);

/* ---- quantiles ----
 * Prometheus' quantile(): phi < 0 -> -Inf, phi > 1 -> +Inf, NaN phi or
 * n == 0 -> NaN; linear interpolation between closest ranks. Sorts vals in
 * place. */
double pq_quantile(double phi, double *vals, size_t n);

/* One classic histogram bucket: upper bound (le) and cumulative count. */
struct pq_bucket {
    double upper;
    double count;
};
/* Prometheus' bucketQuantile on classic buckets: sorts by upper bound,
 * requires a +Inf bucket and >= 2 buckets (else NaN), merges duplicate
 * bounds, fixes non-monotonic counts (sets *forced_monotonic), interpolates
 * linearly inside the bucket. q < 0 -> -Inf, q > 1 -> +Inf, NaN -> NaN. */
double pq_bucket_quantile(double q, struct pq_bucket *b, size_t n, int *forced_monotonic);

/* ---- stale markers ---- */
#define PQ_STALE_NAN_BITS 0x7ff0000000000002ull
int pq_is_stale(double v);

#endif /* GW_PROMQL_INT_H */
