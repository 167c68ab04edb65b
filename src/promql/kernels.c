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
 *  - Go's math package is not glibc: Exp, Log, Pow, Mod, the trigonometric,
 *    inverse and hyperbolic functions, Max and Min come from gomath.c, a
 *    port of Go's math operation for operation (see there).
 *  - Nothing here depends on glibc's transcendental functions. From the C
 *    library only exact operations are used: sqrt, floor, ceil and fabs.
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
#include "promql/gomath_int.h"
#include "promql/promql_int.h"

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

/* ----------------------------------------------------------- operators */

int pq_binop(enum gw_pq_op op, double l, double r, int return_bool, double *out)
{
    int keep;
    switch (op) {
    case GW_PQ_OP_ADD: *out = l + r; return 1;
    case GW_PQ_OP_SUB: *out = l - r; return 1;
    case GW_PQ_OP_MUL: *out = l * r; return 1;
    case GW_PQ_OP_DIV: *out = l / r; return 1;
    case GW_PQ_OP_MOD: *out = pq_go_mod(l, r); return 1;
    case GW_PQ_OP_POW: *out = pq_go_pow(l, r); return 1;
    case GW_PQ_OP_ATAN2: *out = pq_go_atan2(l, r); return 1;
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

/* avg_over_time (Prometheus 3): Kahan-compensated sum divided by the
 * count while the sum stays finite; once it would overflow, an incremental
 * mean (also compensated) takes over from the mean so far. */
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

/* avg_over_time as Prometheus 2.42 computes it: an incremental mean from
 * the first sample on, each step Kahan-compensated with 2.42's step (no
 * Inf guard); an infinite mean stays as it is while finite values or an
 * infinity of its own sign follow. Near the float64 limit this differs from
 * avg_over_time above, e.g. {1.7e308, 1.7e308, -1.7e308, -1.7e308}: 0 here,
 * -9.98e291 there (Prometheus 3). */
static double avg_over_time_v2(const double *v, size_t n)
{
    double mean = 0, count = 0, c = 0;
    for (size_t i = 0; i < n; i++) {
        count++;
        if (isinf(mean)) {
            if (isinf(v[i]) && (mean > 0) == (v[i] > 0))
                continue;
            if (!isinf(v[i]) && !isnan(v[i]))
                continue;
        }
        kahan_inc_v2(v[i] / count - mean / count, &mean, &c);
    }
    return isinf(mean) ? mean : mean + c;
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
        *out = compat == 2 ? avg_over_time_v2(v, n) : avg_over_time(v, n);
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
    case GW_PQ_F_EXP: return pq_go_exp(v);
    case GW_PQ_F_LN: return pq_go_log(v);
    case GW_PQ_F_LOG10: return pq_go_log10(v);
    case GW_PQ_F_LOG2: return pq_go_log2(v);
    case GW_PQ_F_SIN: return pq_go_sin(v);
    case GW_PQ_F_COS: return pq_go_cos(v);
    case GW_PQ_F_TAN: return pq_go_tan(v);
    case GW_PQ_F_ASIN: return pq_go_asin(v);
    case GW_PQ_F_ACOS: return pq_go_acos(v);
    case GW_PQ_F_ATAN: return pq_go_atan(v);
    case GW_PQ_F_SINH: return pq_go_sinh(v);
    case GW_PQ_F_COSH: return pq_go_cosh(v);
    case GW_PQ_F_TANH: return pq_go_tanh(v);
    case GW_PQ_F_ASINH: return pq_go_asinh(v);
    case GW_PQ_F_ACOSH: return pq_go_acosh(v);
    case GW_PQ_F_ATANH: return pq_go_atanh(v);
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
        return pq_go_max(lo, pq_go_min(hi, v));
    }
    case GW_PQ_F_CLAMP_MIN:
        return pq_go_max(n_scalars >= 1 ? scalars[0] : -INFINITY, pq_go_min(INFINITY, v));
    case GW_PQ_F_CLAMP_MAX:
        return pq_go_max(-INFINITY, pq_go_min(n_scalars >= 1 ? scalars[0] : INFINITY, v));
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
