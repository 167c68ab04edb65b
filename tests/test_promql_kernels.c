/* test_promql_kernels.c - the PromQL numeric kernels against the values
 * Prometheus 3 computes: cases from Prometheus' own test files
 * (promql/promqltest/testdata/functions.test, aggregators.test,
 * histograms.test) and hand-worked cases (Kahan versus naive sums, rate
 * extrapolation near and far from the window edges, counter resets, the
 * zero point of counters, bucket quantiles with broken buckets, NaN/Inf,
 * date functions across month and leap-year edges). Values marked "Go"
 * were computed with Go's math package, which Prometheus uses. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "gpuwatch/err.h"
#include "promql/promql_int.h"

/* bit-for-bit equality, NaN equal to NaN (any payload) */
#define assert_same(actual, expected)                                              \
    do {                                                                           \
        double a_ = (actual), e_ = (expected);                                     \
        if (isnan(e_)) {                                                           \
            if (!isnan(a_))                                                        \
                fail_msg("%s = %.17g, expected NaN", #actual, a_);                 \
        } else if (memcmp(&a_, &e_, sizeof a_) != 0) {                             \
            fail_msg("%s = %.17g (%a), expected %.17g (%a)", #actual, a_, a_, e_, e_); \
        }                                                                          \
    } while (0)

/* relative closeness, for expected values quoted from test files with fewer
 * digits than a double carries */
#define assert_close(actual, expected)                                             \
    do {                                                                           \
        double a_ = (actual), e_ = (expected);                                     \
        if (!(fabs(a_ - e_) <= 1e-12 * fabs(e_) || a_ == e_))                      \
            fail_msg("%s = %.17g, expected %.17g", #actual, a_, e_);               \
    } while (0)

/* ---------------------------------------------------------------- kahan */

static void test_promql_kernels_kahan(void **state)
{
    (void)state;
    /* naive left-to-right summation loses the 1 */
    double xs[] = {1e100, 1.0, -1e100};
    double naive = 0;
    struct pq_kahan k = {0, 0};
    for (size_t i = 0; i < 3; i++) {
        naive += xs[i];
        pq_kahan_add(&k, xs[i]);
    }
    assert_same(naive, 0.0);
    assert_same(pq_kahan_value(&k), 1.0);

    /* the Neumaier branch: a small running sum and a large increment */
    struct pq_kahan k2 = {0, 0};
    pq_kahan_add(&k2, 1.0);
    pq_kahan_add(&k2, 1e100);
    pq_kahan_add(&k2, 1.0);
    pq_kahan_add(&k2, -1e100);
    assert_same(pq_kahan_value(&k2), 2.0);

    /* 0.1 ten times: naive gives 0.9999999999999999, Kahan 1 */
    struct pq_kahan k3 = {0, 0};
    naive = 0;
    for (int i = 0; i < 10; i++) {
        naive += 0.1;
        pq_kahan_add(&k3, 0.1);
    }
    assert_same(naive, 0.9999999999999999);
    assert_same(pq_kahan_value(&k3), 1.0);

    /* an infinite sum drops the compensation; Inf + -Inf is NaN */
    struct pq_kahan k4 = {0, 0};
    pq_kahan_add(&k4, 1.5);
    pq_kahan_add(&k4, INFINITY);
    assert_same(pq_kahan_value(&k4), INFINITY);
    assert_same(k4.c, 0.0);
    pq_kahan_add(&k4, -INFINITY);
    assert_true(isnan(pq_kahan_value(&k4)));
    struct pq_kahan k5 = {0, 0};
    pq_kahan_add(&k5, 1.7976931348623157e308);
    pq_kahan_add(&k5, 1.7976931348623157e308);
    assert_same(pq_kahan_value(&k5), INFINITY);
}

/* --------------------------------------------------------------- stale */

static void test_promql_kernels_stale(void **state)
{
    (void)state;
    uint64_t b = PQ_STALE_NAN_BITS;
    double stale;
    memcpy(&stale, &b, sizeof stale);
    assert_true(isnan(stale));
    assert_true(pq_is_stale(stale));
    assert_false(pq_is_stale(NAN));
    assert_false(pq_is_stale(0.0));
    assert_false(pq_is_stale(INFINITY));
    b = 0x7ff8000000000001ull;  /* Prometheus' normal NaN */
    double nan1;
    memcpy(&nan1, &b, sizeof nan1);
    assert_false(pq_is_stale(nan1));
}

/* -------------------------------------------------------------- binops */

static double binop(enum gw_pq_op op, double l, double r)
{
    double out = -12345;
    assert_int_equal(pq_binop(op, l, r, 0, &out), 1);
    return out;
}

static void test_promql_kernels_binop_arith(void **state)
{
    (void)state;
    assert_same(binop(GW_PQ_OP_ADD, 0.1, 0.2), 0.30000000000000004);
    assert_same(binop(GW_PQ_OP_SUB, 1, 3), -2.0);
    assert_same(binop(GW_PQ_OP_MUL, 3, 1.5), 4.5);
    assert_same(binop(GW_PQ_OP_DIV, 1, 0), INFINITY);
    assert_same(binop(GW_PQ_OP_DIV, -1, 0), -INFINITY);
    assert_true(isnan(binop(GW_PQ_OP_DIV, 0, 0)));
    /* % is math.Mod: sign of the dividend, NaN for y == 0 or infinite x */
    assert_same(binop(GW_PQ_OP_MOD, 5, 3), 2.0);
    assert_same(binop(GW_PQ_OP_MOD, -5, 3), -2.0);
    assert_same(binop(GW_PQ_OP_MOD, 5, -3), 2.0);
    assert_same(binop(GW_PQ_OP_MOD, 5.5, 2), 1.5);
    assert_same(binop(GW_PQ_OP_MOD, -0.0, 3), -0.0);
    assert_same(binop(GW_PQ_OP_MOD, 7, INFINITY), 7.0);
    assert_true(isnan(binop(GW_PQ_OP_MOD, 7, 0)));
    assert_true(isnan(binop(GW_PQ_OP_MOD, INFINITY, 2)));
    assert_true(isnan(binop(GW_PQ_OP_MOD, NAN, 2)));
    /* ^ is math.Pow with its special cases */
    assert_same(binop(GW_PQ_OP_POW, 2, 10), 1024.0);
    assert_same(binop(GW_PQ_OP_POW, 2, -2), 0.25);
    assert_same(binop(GW_PQ_OP_POW, 2, 0.5), sqrt(2.0));
    assert_same(binop(GW_PQ_OP_POW, NAN, 0), 1.0);
    assert_same(binop(GW_PQ_OP_POW, 1, NAN), 1.0);
    assert_true(isnan(binop(GW_PQ_OP_POW, -8, 1.0 / 3)));
    assert_same(binop(GW_PQ_OP_POW, -0.0, -3), -INFINITY);
    assert_same(binop(GW_PQ_OP_POW, 0.0, -2), INFINITY);
    assert_same(binop(GW_PQ_OP_POW, -0.0, 3), -0.0);
    assert_same(binop(GW_PQ_OP_POW, -1, INFINITY), 1.0);
    assert_same(binop(GW_PQ_OP_POW, 0.5, INFINITY), 0.0);
    assert_same(binop(GW_PQ_OP_POW, 2, -INFINITY), 0.0);
    assert_same(binop(GW_PQ_OP_POW, -INFINITY, 3), -INFINITY);
    assert_same(binop(GW_PQ_OP_POW, -INFINITY, -3), -0.0);
    assert_same(binop(GW_PQ_OP_POW, INFINITY, -1), 0.0);
    assert_same(binop(GW_PQ_OP_POW, 10, 400), INFINITY);
    assert_same(binop(GW_PQ_OP_POW, 10, -400), 0.0);
    assert_same(binop(GW_PQ_OP_POW, -2, 3), -8.0);
    /* atan2 */
    assert_same(binop(GW_PQ_OP_ATAN2, 1, 1), M_PI / 4);
    assert_same(binop(GW_PQ_OP_ATAN2, 0.0, -1), M_PI);
    assert_same(binop(GW_PQ_OP_ATAN2, -0.0, -1), -M_PI);
}

static void test_promql_kernels_binop_compare(void **state)
{
    (void)state;
    double out = -1;
    /* filter mode: keep l when the comparison holds */
    assert_int_equal(pq_binop(GW_PQ_OP_GTR, 5, 3, 0, &out), 1);
    assert_same(out, 5.0);
    assert_int_equal(pq_binop(GW_PQ_OP_LSS, 5, 3, 0, &out), 0);
    assert_int_equal(pq_binop(GW_PQ_OP_EQL, 2, 2, 0, &out), 1);
    assert_int_equal(pq_binop(GW_PQ_OP_NEQ, 2, 2, 0, &out), 0);
    assert_int_equal(pq_binop(GW_PQ_OP_GTE, 2, 2, 0, &out), 1);
    assert_int_equal(pq_binop(GW_PQ_OP_LTE, 3, 2, 0, &out), 0);
    /* NaN compares false except != */
    assert_int_equal(pq_binop(GW_PQ_OP_EQL, NAN, NAN, 0, &out), 0);
    assert_int_equal(pq_binop(GW_PQ_OP_NEQ, NAN, NAN, 0, &out), 1);
    assert_true(isnan(out));
    assert_int_equal(pq_binop(GW_PQ_OP_GTE, NAN, 1, 0, &out), 0);
    /* bool mode: always a value, 1 or 0 */
    assert_int_equal(pq_binop(GW_PQ_OP_GTR, 5, 3, 1, &out), 1);
    assert_same(out, 1.0);
    assert_int_equal(pq_binop(GW_PQ_OP_GTR, 3, 5, 1, &out), 1);
    assert_same(out, 0.0);
    assert_int_equal(pq_binop(GW_PQ_OP_EQL, NAN, NAN, 1, &out), 1);
    assert_same(out, 0.0);
    assert_int_equal(pq_binop(GW_PQ_OP_LTE, -INFINITY, INFINITY, 1, &out), 1);
    assert_same(out, 1.0);
    /* set operators are not value operators */
    assert_int_equal(pq_binop(GW_PQ_OP_AND, 1, 1, 0, &out), 0);
}

/* ------------------------------------------------------------ quantile */

static void test_promql_kernels_quantile(void **state)
{
    (void)state;
    /* aggregators.test: quantile without(point)(0.8, data) */
    double two[] = {1, 0};
    assert_close(pq_quantile(0.8, two, 2), 0.8);
    double three[] = {2, 0, 1};
    assert_close(pq_quantile(0.8, three, 3), 1.6);
    double uneven[] = {4, 1, 0};
    assert_close(pq_quantile(0.8, uneven, 3), 2.8);
    /* the sort happened in place */
    assert_same(uneven[0], 0.0);
    assert_same(uneven[2], 4.0);
    /* edges */
    double v[] = {3, 1, 2};
    assert_same(pq_quantile(0, v, 3), 1.0);
    assert_same(pq_quantile(1, v, 3), 3.0);
    assert_same(pq_quantile(0.5, v, 3), 2.0);
    assert_same(pq_quantile(-0.1, v, 3), -INFINITY);
    assert_same(pq_quantile(1.1, v, 3), INFINITY);
    assert_true(isnan(pq_quantile(NAN, v, 3)));
    assert_true(isnan(pq_quantile(0.5, v, 0)));
    double one[] = {42};
    assert_same(pq_quantile(0.3, one, 1), 42.0);
    /* NaN sorts first */
    double withnan[] = {5, NAN, 1};
    assert_true(isnan(pq_quantile(0, withnan, 3)));
    assert_same(withnan[1], 1.0);
    assert_same(pq_quantile(1, withnan, 3), 5.0);
    /* infinities: Inf*(1-w) + Inf*w */
    double infs[] = {INFINITY, 1};
    /* q = 1: Inf*(1-0) + Inf*0 = Inf + NaN; Prometheus returns NaN too */
    assert_true(isnan(pq_quantile(1, infs, 2)));
    double infs2[] = {INFINITY, 1};
    assert_same(pq_quantile(0.5, infs2, 2), INFINITY);
    /* q = 0: 1*(1-0) + Inf*0 = 1 + NaN, as Prometheus computes it */
    assert_true(isnan(pq_quantile(0, infs, 2)));
}

/* ------------------------------------------------------ window helpers */

/* a series like a promqltest "load <step>" line: sample i at i*step ms */
struct series {
    int64_t t[2100];
    double v[2100];
    size_t n;
};

static void ser_reset(struct series *s)
{
    s->n = 0;
}

/* "a+bxN": N+1 samples a, a+b, ..., continuing the time axis */
static void ser_seq(struct series *s, int64_t step_ms, double a, double b, int times)
{
    for (int i = 0; i <= times; i++) {
        s->t[s->n] = (int64_t)s->n * step_ms;
        s->v[s->n] = a + b * i;
        s->n++;
    }
}

static void ser_vals(struct series *s, int64_t step_ms, const double *vals, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        s->t[s->n] = (int64_t)s->n * step_ms;
        s->v[s->n] = vals[i];
        s->n++;
    }
}

/* Evaluates f over the Prometheus 3 window (eval - offset - range,
 * eval - offset] of s; returns the kernel's return code. */
static int win_off(enum gw_pq_func_id f, const struct series *s, int64_t eval_ms, int64_t range_ms,
                   int64_t offset_ms, const double *sc, size_t nsc, double *out)
{
    int64_t end = eval_ms - offset_ms, start = end - range_ms;
    size_t a = 0;
    while (a < s->n && s->t[a] <= start)
        a++;
    size_t b = a;
    while (b < s->n && s->t[b] <= end)
        b++;
    struct gw_error err;
    gw_error_clear(&err);
    *out = -12345;
    return pq_kernel_window(f, 3, s->t + a, s->v + a, b - a, eval_ms, start, end, sc, nsc, out, &err);
}

static int win(enum gw_pq_func_id f, const struct series *s, int64_t eval_ms, int64_t range_ms,
               double *out)
{
    return win_off(f, s, eval_ms, range_ms, 0, NULL, 0, out);
}

/* one value expected */
static double win1(enum gw_pq_func_id f, const struct series *s, int64_t eval_ms, int64_t range_ms)
{
    double out;
    assert_int_equal(win(f, s, eval_ms, range_ms, &out), 1);
    return out;
}

#define MIN_MS (60 * 1000)

/* ------------------------------------------------- rate, increase, delta */

static void test_promql_kernels_increase(void **state)
{
    (void)state;
    struct series s;
    /* functions.test: increase(http_requests_total[50m]) at 50m; the
     * sample at 0 is outside the left-open window */
    ser_reset(&s);
    ser_seq(&s, 5 * MIN_MS, 0, 10, 10);
    assert_close(win1(GW_PQ_F_INCREASE, &s, 50 * MIN_MS, 50 * MIN_MS), 100);
    /* [100m]: all samples; foo starts at 0, so no extrapolation below */
    assert_same(win1(GW_PQ_F_INCREASE, &s, 50 * MIN_MS, 100 * MIN_MS), 100.0);

    /* bar 0+18x5 0+18x5: a reset in the window */
    ser_reset(&s);
    ser_seq(&s, 5 * MIN_MS, 0, 18, 5);
    ser_seq(&s, 5 * MIN_MS, 0, 18, 5);
    assert_close(win1(GW_PQ_F_INCREASE, &s, 50 * MIN_MS, 50 * MIN_MS), 160);
    assert_same(win1(GW_PQ_F_INCREASE, &s, 50 * MIN_MS, 100 * MIN_MS), 162.0);

    /* dings 10+10x10: zero point at -5m, half an interval (2m30s) wins */
    ser_reset(&s);
    ser_seq(&s, 5 * MIN_MS, 10, 10, 10);
    assert_close(win1(GW_PQ_F_INCREASE, &s, 50 * MIN_MS, 100 * MIN_MS), 105);
    /* bumms 1+10x10: the zero point at -30s limits the extrapolation */
    ser_reset(&s);
    ser_seq(&s, 5 * MIN_MS, 1, 10, 10);
    assert_close(win1(GW_PQ_F_INCREASE, &s, 50 * MIN_MS, 100 * MIN_MS), 101);

    /* 0 1 2 3 2 3 4: the drop 3 -> 2 counts as a reset to 0 */
    double v[] = {0, 1, 2, 3, 2, 3, 4};
    ser_reset(&s);
    ser_vals(&s, 5 * MIN_MS, v, 7);
    assert_close(win1(GW_PQ_F_INCREASE, &s, 30 * MIN_MS, 30 * MIN_MS), 7);
}

static void test_promql_kernels_rate(void **state)
{
    (void)state;
    struct series s;
    double out;
    /* testcounter_reset_middle_total 0+27x4 0+27x5 */
    ser_reset(&s);
    ser_seq(&s, 5 * MIN_MS, 0, 27, 4);
    ser_seq(&s, 5 * MIN_MS, 0, 27, 5);
    assert_close(win1(GW_PQ_F_RATE, &s, 50 * MIN_MS, 50 * MIN_MS), 0.08);

    /* testcounter_reset_end_total 0+10x9 0 10: one sample in [5m] gives
     * nothing, [6m] sees the reset only */
    ser_reset(&s);
    ser_seq(&s, 5 * MIN_MS, 0, 10, 9);
    double tail[] = {0, 10};
    ser_vals(&s, 5 * MIN_MS, tail, 2);
    assert_int_equal(win(GW_PQ_F_RATE, &s, 50 * MIN_MS, 5 * MIN_MS, &out), 0);
    assert_same(win1(GW_PQ_F_RATE, &s, 50 * MIN_MS, 6 * MIN_MS), 0.0);

    /* calculate_rate_window_total 0+80x10 */
    ser_reset(&s);
    ser_seq(&s, 5 * MIN_MS, 0, 80, 10);
    assert_close(win1(GW_PQ_F_RATE, &s, 50 * MIN_MS, 50 * MIN_MS), 0.26666666666666666);
    /* rate(calculate_rate_offset_total[10m] offset 5m), x="a" 0+10x10 */
    ser_reset(&s);
    ser_seq(&s, 5 * MIN_MS, 0, 10, 10);
    assert_int_equal(win_off(GW_PQ_F_RATE, &s, 50 * MIN_MS, 10 * MIN_MS, 5 * MIN_MS, NULL, 0, &out), 1);
    assert_same(out, 0.03333333333333333);

    /* zero cutoff (load 4m, rate(...[20m]) at 10m): 0.5 0.55 0.6 0.6 */
    const double want10[] = {0.5, 0.55, 0.6, 0.6, 0.6, 0.6};
    for (int k = 0; k < 6; k++) {
        ser_reset(&s);
        ser_seq(&s, 4 * MIN_MS, 60.0 * k, 240, 10);
        assert_close(win1(GW_PQ_F_RATE, &s, 10 * MIN_MS, 20 * MIN_MS), want10[k]);
        /* far from the series start: the half-interval cutoff only */
        assert_close(win1(GW_PQ_F_RATE, &s, 50 * MIN_MS, 20 * MIN_MS), 0.6);
    }

    /* hand-worked: samples well inside the window on both sides.
     * t = 100s..400s every 100s, values 10 20 30 40, window (0, 600s].
     * avg interval 100s, threshold 110s: start gap 100s < 110s extrapolates
     * fully (zero point 300*10/30 = 100s is no shorter); end gap 200s >=
     * 110s extrapolates by 50s. increase = 30 * (300+100+50)/300 = 45. */
    ser_reset(&s);
    for (int i = 0; i < 4; i++) {
        s.t[i] = (int64_t)(i + 1) * 100000;
        s.v[i] = 10.0 * (i + 1);
    }
    s.n = 4;
    assert_same(win1(GW_PQ_F_INCREASE, &s, 600000, 600000), 45.0);
    assert_same(win1(GW_PQ_F_RATE, &s, 600000, 600000), 45.0 / 600);
    /* delta does not apply the zero point and keeps negative slopes */
    assert_same(win1(GW_PQ_F_DELTA, &s, 600000, 600000), 45.0);
    for (int i = 0; i < 4; i++)
        s.v[i] = 40.0 - 10.0 * i;
    assert_same(win1(GW_PQ_F_DELTA, &s, 600000, 600000), -45.0);
    /* as a counter, every drop is a reset: 40,30,20,10 -> 10-40 + 40+30+20 */
    assert_same(win1(GW_PQ_F_INCREASE, &s, 600000, 600000), 60.0 * 450 / 300);

    /* a counter whose line reaches zero inside the start gap: values 5 15
     * 25 35 at 100..400s, zero point 300*5/30 = 50s < 100s */
    for (int i = 0; i < 4; i++)
        s.v[i] = 5.0 + 10.0 * i;
    assert_same(win1(GW_PQ_F_INCREASE, &s, 600000, 600000), 30.0 * (300 + 50 + 50) / 300);
    /* a negative first value disables the zero-point limit */
    for (int i = 0; i < 4; i++)
        s.v[i] = -5.0 + 10.0 * i;
    assert_same(win1(GW_PQ_F_INCREASE, &s, 600000, 600000), 30.0 * (300 + 100 + 50) / 300);

    /* the range in seconds is Go's Duration.Seconds(): for 1128 ms that is
     * 1 + 0.128 = 1.1280000000000001, not 1128/1000 */
    ser_reset(&s);
    s.t[0] = 10000 - 1128 + 1; s.v[0] = 0;
    s.t[1] = 10000; s.v[1] = 1;
    s.n = 2;
    assert_same(win1(GW_PQ_F_RATE, &s, 10000, 1128), 1.0 / 1.1280000000000001);
    /* one sample, or none: no point */
    s.n = 1;
    assert_int_equal(win(GW_PQ_F_RATE, &s, 10000, 1128, &out), 0);
    assert_int_equal(pq_kernel_window(GW_PQ_F_INCREASE, 3, NULL, NULL, 0, 0, 0, 1, NULL, 0, &out, NULL), 0);
}

static void test_promql_kernels_irate_idelta(void **state)
{
    (void)state;
    struct series s;
    double out;
    ser_reset(&s);
    ser_seq(&s, 5 * MIN_MS, 0, 10, 10);
    assert_same(win1(GW_PQ_F_IRATE, &s, 50 * MIN_MS, 50 * MIN_MS), 10.0 / 300);
    /* bar 0+10x5 0+10x5 at 30m: the last two samples are 50 -> 0, a reset:
     * irate takes the last value itself, 0 */
    ser_reset(&s);
    ser_seq(&s, 5 * MIN_MS, 0, 10, 5);
    ser_seq(&s, 5 * MIN_MS, 0, 10, 5);
    assert_same(win1(GW_PQ_F_IRATE, &s, 30 * MIN_MS, 50 * MIN_MS), 0.0);
    /* a reset to a non-zero value: 50 -> 7 gives 7/300 */
    s.v[6] = 7;
    assert_same(win1(GW_PQ_F_IRATE, &s, 30 * MIN_MS, 50 * MIN_MS), 7.0 / 300);
    assert_same(win1(GW_PQ_F_IDELTA, &s, 30 * MIN_MS, 50 * MIN_MS), -43.0);

    /* http_requests_nan 1 NaN NaN 5 11, [15m1s]: _ NaN NaN NaN 0.02 */
    double nanv[] = {1, NAN, NAN, 5, 11};
    ser_reset(&s);
    ser_vals(&s, 5 * MIN_MS, nanv, 5);
    int64_t r = 15 * MIN_MS + 1000;
    assert_int_equal(win(GW_PQ_F_IRATE, &s, 0, r, &out), 0);
    assert_true(isnan(win1(GW_PQ_F_IRATE, &s, 5 * MIN_MS, r)));
    assert_true(isnan(win1(GW_PQ_F_IRATE, &s, 10 * MIN_MS, r)));
    assert_true(isnan(win1(GW_PQ_F_IRATE, &s, 15 * MIN_MS, r)));
    assert_same(win1(GW_PQ_F_IRATE, &s, 20 * MIN_MS, r), 0.02);
    assert_same(win1(GW_PQ_F_IDELTA, &s, 20 * MIN_MS, r), 6.0);
    assert_true(isnan(win1(GW_PQ_F_IDELTA, &s, 15 * MIN_MS, r)));
    /* idelta of 0 50 100 50 */
    double g[] = {0, 50, 100, 50};
    ser_reset(&s);
    ser_vals(&s, 5 * MIN_MS, g, 4);
    assert_same(win1(GW_PQ_F_IDELTA, &s, 20 * MIN_MS, 20 * MIN_MS), -50.0);
    /* equal timestamps: Prometheus refuses to divide by zero */
    int64_t tt[] = {1000, 1000};
    double vv[] = {1, 2};
    assert_int_equal(pq_kernel_window(GW_PQ_F_IRATE, 3, tt, vv, 2, 1000, 0, 1000, NULL, 0, &out, NULL), 0);
}

/* avg_over_time near the float64 limit: Prometheus 2.42 (compat 2) keeps
 * a Kahan-compensated incremental mean from the first sample on,
 * Prometheus 3 sums until the sum would overflow and then switches. The
 * compat 2 answers are Prometheus 2.42's own (avg_over_time of a subquery
 * over the same values); the compat 3 ones follow Prometheus 3's
 * funcAvgOverTime step by step. */
static void test_promql_kernels_avg_over_time_overflow(void **state)
{
    (void)state;
    int64_t tt[] = {0, 60000, 120000, 180000, 240000};
    double out;
    double pp_nn[] = {1.7e308, 1.7e308, -1.7e308, -1.7e308};
    assert_int_equal(pq_kernel_window(GW_PQ_F_AVG_OVER_TIME, 2, tt, pp_nn, 4, 180000, 0, 180000, NULL, 0, &out,
                                      NULL), 1);
    assert_same(out, 0.0);
    assert_int_equal(pq_kernel_window(GW_PQ_F_AVG_OVER_TIME, 3, tt, pp_nn, 4, 180000, 0, 180000, NULL, 0, &out,
                                      NULL), 1);
    assert_same(out, -9.9792015476736e+291);
    /* alternating signs: both reach 1.7e308 / 5 */
    double alt[] = {1.7e308, -1.7e308, 1.7e308, -1.7e308, 1.7e308};
    assert_int_equal(pq_kernel_window(GW_PQ_F_AVG_OVER_TIME, 2, tt, alt, 5, 240000, 0, 240000, NULL, 0, &out,
                                      NULL), 1);
    assert_same(out, 3.4e307);
    /* an infinite mean is kept while finite values follow; -Inf after +Inf is NaN */
    double inf1[] = {1, INFINITY, 1};
    assert_int_equal(pq_kernel_window(GW_PQ_F_AVG_OVER_TIME, 2, tt, inf1, 3, 120000, 0, 120000, NULL, 0, &out,
                                      NULL), 1);
    assert_same(out, INFINITY);
    double inf2[] = {INFINITY, -INFINITY};
    assert_int_equal(pq_kernel_window(GW_PQ_F_AVG_OVER_TIME, 2, tt, inf2, 2, 60000, 0, 60000, NULL, 0, &out,
                                      NULL), 1);
    assert_true(isnan(out));
    /* ordinary values: both ways agree */
    double small[] = {1, 2, 3, 4.1};
    assert_int_equal(pq_kernel_window(GW_PQ_F_AVG_OVER_TIME, 2, tt, small, 4, 180000, 0, 180000, NULL, 0, &out,
                                      NULL), 1);
    assert_true(fabs(out - 2.525) < 1e-15);
}

/* Prometheus 2.42 (compat 2) limits the start extrapolation by the
 * counter's zero point before the 1.1x threshold test, Prometheus 3 after
 * it. Window [0 s, 60 s], samples 15 s apart from 30 s: the first sample is
 * 30 s from the start (beyond 1.1 x 15 = 16.5 s); the zero point of
 * 10, 20, 30 lies 15 s before the first sample. */
static void test_promql_kernels_rate_compat2_order(void **state)
{
    (void)state;
    int64_t tt[] = {30000, 45000, 60000};
    double vv[] = {10, 20, 30};
    double out;
    struct gw_error err;
    gw_error_clear(&err);
    /* Prometheus 3: 30 s >= 16.5 s -> 7.5 s, then min(7.5, 15) = 7.5 s:
     * 20 * (30 + 7.5) / 30 */
    assert_int_equal(pq_kernel_window(GW_PQ_F_INCREASE, 3, tt, vv, 3, 60000, 0, 60000, NULL, 0,
                                      &out, &err), 1);
    assert_same(out, 25.0);
    /* 2.42: min(30, 15) = 15 s, below 16.5 s, kept: 20 * (30 + 15) / 30 */
    assert_int_equal(pq_kernel_window(GW_PQ_F_INCREASE, 2, tt, vv, 3, 60000, 0, 60000, NULL, 0,
                                      &out, &err), 1);
    assert_same(out, 30.0);
    assert_int_equal(pq_kernel_window(GW_PQ_F_RATE, 2, tt, vv, 3, 60000, 0, 60000, NULL, 0, &out,
                                      &err), 1);
    assert_same(out, 0.5);
    assert_int_equal(pq_kernel_window(GW_PQ_F_RATE, 3, tt, vv, 3, 60000, 0, 60000, NULL, 0, &out,
                                      &err), 1);
    assert_same(out, 20 * ((30 + 7.5) / 30 / 60));
    /* zero point 20 s before (first value 20 of 20, 30, 40): 2.42 tests
     * 20 s against 16.5 s and falls back to half an interval as 3 does */
    double v2[] = {20, 30, 40};
    assert_int_equal(pq_kernel_window(GW_PQ_F_INCREASE, 2, tt, v2, 3, 60000, 0, 60000, NULL, 0,
                                      &out, &err), 1);
    assert_same(out, 25.0);
    /* delta is not a counter: no zero point, both orders agree */
    assert_int_equal(pq_kernel_window(GW_PQ_F_DELTA, 2, tt, vv, 3, 60000, 0, 60000, NULL, 0, &out,
                                      &err), 1);
    assert_same(out, 25.0);
    /* a reset (30 -> 5) adds the value before it: 10, 30, 5 -> 25, zero
     * point 30 * 10 / 25 = 12 s, kept by 2.42 (12 < 16.5) */
    double v3[] = {10, 30, 5};
    assert_int_equal(pq_kernel_window(GW_PQ_F_INCREASE, 2, tt, v3, 3, 60000, 0, 60000, NULL, 0,
                                      &out, &err), 1);
    assert_same(out, 25 * ((30 + 30 * (10.0 / 25)) / 30));
    assert_int_equal(pq_kernel_window(GW_PQ_F_INCREASE, 3, tt, v3, 3, 60000, 0, 60000, NULL, 0,
                                      &out, &err), 1);
    assert_same(out, 25 * ((30 + 7.5) / 30));
}

/* stdvar/stddev_over_time near 1e300: the squared deviation overflows to
 * +Inf; Prometheus 3's Kahan step keeps +Inf, 2.42's turns it into NaN. */
static void test_promql_kernels_stddev_over_time_overflow(void **state)
{
    (void)state;
    int64_t tt[] = {0, 10000};
    double vv[] = {1e300, -1e300};
    double out;
    struct gw_error err;
    gw_error_clear(&err);
    assert_int_equal(pq_kernel_window(GW_PQ_F_STDVAR_OVER_TIME, 3, tt, vv, 2, 10000, -1, 10000,
                                      NULL, 0, &out, &err), 1);
    assert_same(out, INFINITY);
    assert_int_equal(pq_kernel_window(GW_PQ_F_STDDEV_OVER_TIME, 3, tt, vv, 2, 10000, -1, 10000,
                                      NULL, 0, &out, &err), 1);
    assert_same(out, INFINITY);
    assert_int_equal(pq_kernel_window(GW_PQ_F_STDVAR_OVER_TIME, 2, tt, vv, 2, 10000, -1, 10000,
                                      NULL, 0, &out, &err), 1);
    assert_true(isnan(out));
    assert_int_equal(pq_kernel_window(GW_PQ_F_STDDEV_OVER_TIME, 2, tt, vv, 2, 10000, -1, 10000,
                                      NULL, 0, &out, &err), 1);
    assert_true(isnan(out));
    /* ordinary values: both versions agree (Prometheus' test: 10.56) */
    int64_t t5[] = {0, 10000, 20000, 30000, 40000};
    double v5[] = {0, 8, 8, 2, 3};
    double a, b;
    assert_int_equal(pq_kernel_window(GW_PQ_F_STDVAR_OVER_TIME, 2, t5, v5, 5, 60000, -60000, 60000,
                                      NULL, 0, &a, &err), 1);
    assert_int_equal(pq_kernel_window(GW_PQ_F_STDVAR_OVER_TIME, 3, t5, v5, 5, 60000, -60000, 60000,
                                      NULL, 0, &b, &err), 1);
    assert_same(a, b);
    assert_close(a, 10.56);
}

static void test_promql_kernels_deriv_predict(void **state)
{
    (void)state;
    struct series s;
    double out, sc;
    ser_reset(&s);
    ser_seq(&s, 5 * MIN_MS, 0, 80, 10);
    assert_close(win1(GW_PQ_F_DERIV, &s, 50 * MIN_MS, 50 * MIN_MS), 0.26666666666666666);
    /* testcounter_reset_middle_total 0+10x4 0+10x5 */
    ser_reset(&s);
    ser_seq(&s, 5 * MIN_MS, 0, 10, 4);
    ser_seq(&s, 5 * MIN_MS, 0, 10, 5);
    assert_close(win1(GW_PQ_F_DERIV, &s, 50 * MIN_MS, 100 * MIN_MS), 0.010606060606060607);
    sc = 3600;
    assert_int_equal(win_off(GW_PQ_F_PREDICT_LINEAR, &s, 50 * MIN_MS, 50 * MIN_MS, 0, &sc, 1, &out), 1);
    assert_close(out, 70);
    /* [55m] @ 3000 evaluated at 10m and 70m: the intercept is taken at the
     * evaluation time, not at the @ time. Emulate with the window ending at
     * 3000 s (offset = eval - 3000 s). */
    assert_int_equal(win_off(GW_PQ_F_PREDICT_LINEAR, &s, 10 * MIN_MS, 55 * MIN_MS,
                             10 * MIN_MS - 3000000, &sc, 1, &out), 1);
    assert_close(out, 51.36363636363637);
    assert_int_equal(win_off(GW_PQ_F_PREDICT_LINEAR, &s, 70 * MIN_MS, 55 * MIN_MS,
                             70 * MIN_MS - 3000000, &sc, 1, &out), 1);
    assert_close(out, 89.54545454545455);
    /* -Inf 0+80x10 Inf: NaN */
    ser_reset(&s);
    double ninf = -INFINITY, pinf = INFINITY;
    ser_vals(&s, 5 * MIN_MS, &ninf, 1);
    ser_seq(&s, 5 * MIN_MS, 0, 80, 10);
    ser_vals(&s, 5 * MIN_MS, &pinf, 1);
    assert_true(isnan(win1(GW_PQ_F_DERIV, &s, 100 * MIN_MS, 100 * MIN_MS)));
    /* constant values: slope exactly 0 and the constant as intercept */
    ser_reset(&s);
    ser_seq(&s, 15000, 1.5990505637277868, 0, 20);
    assert_same(win1(GW_PQ_F_DERIV, &s, 5 * MIN_MS, 5 * MIN_MS), 0.0);
    sc = 1e6;
    assert_int_equal(win_off(GW_PQ_F_PREDICT_LINEAR, &s, 5 * MIN_MS, 5 * MIN_MS, 0, &sc, 1, &out), 1);
    assert_same(out, 1.5990505637277868);
    ser_reset(&s);
    ser_seq(&s, 15000, INFINITY, 0, 3);
    assert_true(isnan(win1(GW_PQ_F_DERIV, &s, 1 * MIN_MS, 1 * MIN_MS)));
    /* one sample: no point; a missing scalar is an error */
    assert_int_equal(win(GW_PQ_F_DERIV, &s, 15000, 10000, &out), 0);
    assert_int_equal(win_off(GW_PQ_F_PREDICT_LINEAR, &s, 1 * MIN_MS, 1 * MIN_MS, 0, NULL, 0, &out),
                     GW_EINVAL);
}

static void test_promql_kernels_resets_changes(void **state)
{
    (void)state;
    struct series s;
    double out;
    double foo[] = {1, 2, 3, 0, 1, 0, 0, 1, 2, 0};
    double bar[] = {1, 2, 3, 4, 5, 1, 2, 3, 4, 5};
    double biz[] = {0, 0, 0, 0, 0, 1, 1, 1, 1, 1};
    struct {
        const double *v;
        double resets[5], changes[4];
    } c[] = {
        {foo, {0, 1, 1, 2, 3}, {0, 2, 3, 7}},
        {bar, {0, 0, 0, 1, 1}, {0, 2, 4, 8}},
        {biz, {0, 0, 0, 0, 0}, {0, 0, 0, 1}},
    };
    int64_t rr[] = {10, 20, 30, 32, 50}, cr[] = {6, 20, 30, 50};
    for (int k = 0; k < 3; k++) {
        ser_reset(&s);
        ser_vals(&s, 5 * MIN_MS, c[k].v, 10);
        /* resets(x[5m]) at 50m: nothing, the series ended at 45m */
        assert_int_equal(win(GW_PQ_F_RESETS, &s, 50 * MIN_MS, 5 * MIN_MS, &out), 0);
        for (int i = 0; i < 5; i++)
            assert_same(win1(GW_PQ_F_RESETS, &s, 50 * MIN_MS, rr[i] * MIN_MS), c[k].resets[i]);
        for (int i = 0; i < 4; i++)
            assert_same(win1(GW_PQ_F_CHANGES, &s, 50 * MIN_MS, cr[i] * MIN_MS), c[k].changes[i]);
    }
    /* NaN to NaN is no change; 0 NaN 0 changes twice */
    double nn[] = {NAN, NAN, NAN}, zn[] = {0, NAN, 0};
    ser_reset(&s);
    ser_vals(&s, 5 * MIN_MS, nn, 3);
    assert_same(win1(GW_PQ_F_CHANGES, &s, 15 * MIN_MS, 20 * MIN_MS), 0.0);
    ser_reset(&s);
    ser_vals(&s, 5 * MIN_MS, zn, 3);
    assert_same(win1(GW_PQ_F_CHANGES, &s, 15 * MIN_MS, 20 * MIN_MS), 2.0);
    assert_same(win1(GW_PQ_F_RESETS, &s, 15 * MIN_MS, 20 * MIN_MS), 0.0);
}

/* ------------------------------------------------------- *_over_time */

static void test_promql_kernels_avg_sum_over_time(void **state)
{
    (void)state;
    struct series s;
    double out;
    struct {
        double v[5];
        size_t n;
        double avg;
    } c[] = {
        {{1, 2, 3, 4, 5}, 5, 3},
        {{1, 2, 3, 4, INFINITY}, 5, INFINITY},
        {{1, 2, 3, 4, -INFINITY}, 5, -INFINITY},
        {{1, 2, 3, INFINITY, -INFINITY}, 5, NAN},
        {{INFINITY, 0, INFINITY}, 3, INFINITY},
        {{INFINITY, INFINITY, INFINITY, -INFINITY}, 4, NAN},
        {{1, 2, 3, -INFINITY, -INFINITY}, 5, -INFINITY},
        {{-INFINITY, 0, -INFINITY}, 3, -INFINITY},
        {{1, 2, -INFINITY, -INFINITY, INFINITY}, 5, NAN},
        /* the sum overflows; the incremental mean takes over */
        {{9.988465674311579e+307, 9.988465674311579e+307}, 2, 9.988465674311579e+307},
        {{-9.988465674311579e+307, -9.988465674311579e+307, -9.988465674311579e+307}, 3,
         -9.988465674311579e+307},
        {{-9.988465674311579e+307, 9.988465674311579e+307}, 2, 0},
        {{1, 2, 3, NAN, NAN}, 5, NAN},
        {{1, 1e100, 1, -1e100}, 4, 0.5},
    };
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        ser_reset(&s);
        ser_vals(&s, 10000, c[k].v, c[k].n);
        assert_same(win1(GW_PQ_F_AVG_OVER_TIME, &s, 55000, 60000), c[k].avg);
    }
    /* no sample in the window; one sample */
    ser_reset(&s);
    ser_seq(&s, 10000, 1, 1, 4);
    assert_int_equal(win(GW_PQ_F_AVG_OVER_TIME, &s, 55000, 10000, &out), 0);
    assert_same(win1(GW_PQ_F_AVG_OVER_TIME, &s, 55000, 20000), 5.0);
    /* sum_over_time with Kahan: 1 1e100 1 -1e100 is 2 */
    double big[] = {1, 1e100, 1, -1e100};
    ser_reset(&s);
    ser_vals(&s, 10000, big, 4);
    assert_same(win1(GW_PQ_F_SUM_OVER_TIME, &s, MIN_MS, 2 * MIN_MS), 2.0);
    /* an overflowing sum stays infinite */
    double ovf[] = {9.988465674311579e+307, 9.988465674311579e+307};
    ser_reset(&s);
    ser_vals(&s, 10000, ovf, 2);
    assert_same(win1(GW_PQ_F_SUM_OVER_TIME, &s, 55000, 60000), INFINITY);
    /* extreme values (functions.test) */
    double m1[] = {1e10, 1e-6, 1e-6, 1e-6, 1e-6, 1e-6};
    ser_reset(&s);
    ser_vals(&s, 5000, m1, 6);
    assert_same(win1(GW_PQ_F_AVG_OVER_TIME, &s, 55000, 60000), 1.6666666666666675e+09);
    double m9[] = {-1.78264E+215, 0.76342771, 1.9592258, 2.258E+220, 7.69805412, 1.78264E+215,
                   -458.90154};
    ser_reset(&s);
    ser_vals(&s, 5000, m9, 7);
    assert_close(win1(GW_PQ_F_AVG_OVER_TIME, &s, 55000, 60000), 3.225714285714286e+219);
    double m11[] = {-2.258E+220, -1.78264E+219, 0.76342771, 1.9592258, 2.3757689E+217,
                    -2.3757689E+217, 2.258E+220, 7.69805412, 1.78264E+219, -458.90154};
    ser_reset(&s);
    ser_vals(&s, 5000, m11, 10);
    assert_same(win1(GW_PQ_F_AVG_OVER_TIME, &s, 55000, 60000), 0.0);
    /* 52 repeated: the direct mean is exact */
    ser_reset(&s);
    ser_seq(&s, 10000, 52, 0, 100);
    for (int64_t r = 100000; r <= 130000; r += 10000)
        assert_same(win1(GW_PQ_F_AVG_OVER_TIME, &s, 10 * MIN_MS, r), 52.0);
    /* dense samples: 1+0x4000 every 1ms */
    ser_reset(&s);
    ser_seq(&s, 1, 1, 0, 2050);
    assert_same(win1(GW_PQ_F_SUM_OVER_TIME, &s, 2000, 1001), 1001.0);
    assert_same(win1(GW_PQ_F_COUNT_OVER_TIME, &s, 2000, 1003), 1003.0);
}

static void test_promql_kernels_minmax_over_time(void **state)
{
    (void)state;
    struct series s;
    struct {
        double v[3];
        double min, max, last, first;
    } c[] = {
        {{2, 0, 3}, 0, 3, 3, 2},
        {{2, 0, NAN}, 0, 2, NAN, 2},
        {{2, NAN, 1}, 1, 2, 1, 2},
        {{NAN, 0, 1}, 0, 1, 1, NAN},
        {{NAN, NAN, NAN}, NAN, NAN, NAN, NAN},
    };
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        ser_reset(&s);
        ser_vals(&s, 10000, c[k].v, 3);
        assert_same(win1(GW_PQ_F_MIN_OVER_TIME, &s, MIN_MS, 2 * MIN_MS), c[k].min);
        assert_same(win1(GW_PQ_F_MAX_OVER_TIME, &s, MIN_MS, 2 * MIN_MS), c[k].max);
        assert_same(win1(GW_PQ_F_LAST_OVER_TIME, &s, MIN_MS, 2 * MIN_MS), c[k].last);
        assert_same(win1(GW_PQ_F_FIRST_OVER_TIME, &s, MIN_MS, 2 * MIN_MS), c[k].first);
        assert_same(win1(GW_PQ_F_COUNT_OVER_TIME, &s, MIN_MS, 2 * MIN_MS), 3.0);
        assert_same(win1(GW_PQ_F_PRESENT_OVER_TIME, &s, MIN_MS, 2 * MIN_MS), 1.0);
    }
    /* ts_of_*: load 10s53ms, metric 1 2 3 0 5 6 2 1 4 */
    double m[] = {1, 2, 3, 0, 5, 6, 2, 1, 4};
    ser_reset(&s);
    ser_vals(&s, 10053, m, 9);
    assert_same(win1(GW_PQ_F_TS_OF_MIN_OVER_TIME, &s, 90000, 90000), 30.159);
    assert_same(win1(GW_PQ_F_TS_OF_MAX_OVER_TIME, &s, 90000, 90000), 50.265);
    assert_same(win1(GW_PQ_F_TS_OF_LAST_OVER_TIME, &s, 90000, 90000), 80.424);
    assert_same(win1(GW_PQ_F_TS_OF_FIRST_OVER_TIME, &s, 90000, 90000), 10.053);
    /* equal extremes: the ts_of_ variants take the latest one */
    double eq[] = {5, 1, 5, 1};
    ser_reset(&s);
    ser_vals(&s, 1000, eq, 4);
    assert_same(win1(GW_PQ_F_TS_OF_MAX_OVER_TIME, &s, 3000, 10000), 2.0);
    assert_same(win1(GW_PQ_F_TS_OF_MIN_OVER_TIME, &s, 3000, 10000), 3.0);
    /* ts_of_last: metric 1 2 3 _ _ */
    double three[] = {1, 2, 3};
    ser_reset(&s);
    ser_vals(&s, 10053, three, 3);
    assert_same(win1(GW_PQ_F_TS_OF_LAST_OVER_TIME, &s, 95000, 90000), 20.106);
}

static void test_promql_kernels_stddev_quantile_mad(void **state)
{
    (void)state;
    struct series s;
    double out, q;
    double m[] = {0, 8, 8, 2, 3};
    ser_reset(&s);
    ser_vals(&s, 10000, m, 5);
    assert_close(win1(GW_PQ_F_STDVAR_OVER_TIME, &s, MIN_MS, 2 * MIN_MS), 10.56);
    assert_close(win1(GW_PQ_F_STDDEV_OVER_TIME, &s, MIN_MS, 2 * MIN_MS), sqrt(10.56));
    /* constant values: exactly 0 (issue 4927) */
    ser_reset(&s);
    ser_seq(&s, 10000, 1.5990505637277868, 0, 2);
    assert_same(win1(GW_PQ_F_STDVAR_OVER_TIME, &s, 55000, 60000), 0.0);
    assert_same(win1(GW_PQ_F_STDDEV_OVER_TIME, &s, 55000, 60000), 0.0);

    /* quantile_over_time over 0 1 / 0 1 2 / 0 1 4 */
    double two[] = {0, 1}, three[] = {0, 1, 2}, uneven[] = {0, 1, 4};
    const double *sets[] = {two, three, uneven};
    size_t ns[] = {2, 3, 3};
    double qs[] = {0, 0.5, 0.75, 0.8, 1, -1, 2};
    double want[3][7] = {
        {0, 0.5, 0.75, 0.8, 1, -INFINITY, INFINITY},
        {0, 1, 1.5, 1.6, 2, -INFINITY, INFINITY},
        {0, 1, 2.5, 2.8, 4, -INFINITY, INFINITY},
    };
    for (int k = 0; k < 3; k++) {
        ser_reset(&s);
        ser_vals(&s, 10000, sets[k], ns[k]);
        for (int i = 0; i < 7; i++) {
            q = qs[i];
            assert_int_equal(win_off(GW_PQ_F_QUANTILE_OVER_TIME, &s, MIN_MS, 2 * MIN_MS, 0, &q, 1, &out), 1);
            assert_close(out, want[k][i]);
        }
        /* the caller's samples are left as they were */
        assert_same(s.v[0], sets[k][0]);
    }
    q = NAN;
    assert_int_equal(win_off(GW_PQ_F_QUANTILE_OVER_TIME, &s, MIN_MS, 2 * MIN_MS, 0, &q, 1, &out), 1);
    assert_true(isnan(out));
    /* mad_over_time of 4 6 2 1 999 1 2: median 2, deviations 2 4 0 1 997 1 0 */
    double mad[] = {4, 6, 2, 1, 999, 1, 2};
    ser_reset(&s);
    ser_vals(&s, 10000, mad, 7);
    assert_same(win1(GW_PQ_F_MAD_OVER_TIME, &s, 70000, 70000), 1.0);
}

static void test_promql_kernels_double_exponential_smoothing(void **state)
{
    (void)state;
    struct series s;
    double out;
    double sc[2] = {0.01, 0.1};
    /* functions.test at 8000s over [1m] of a 10s series: 0+10x1000 gives
     * 8000, 0+20x1000 16000, 8000-10x1000 0, 0-20x1000 -16000 */
    struct {
        double a, b, want;
    } c[] = {{0, 10, 8000}, {0, 20, 16000}, {0, 30, 24000}, {0, 40, 32000},
             {8000, -10, 0}, {0, -20, -16000}};
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        ser_reset(&s);
        ser_seq(&s, 10000, c[k].a, c[k].b, 1000);
        assert_int_equal(win_off(GW_PQ_F_DOUBLE_EXPONENTIAL_SMOOTHING, &s, 8000000, MIN_MS, 0, sc, 2, &out), 1);
        if (c[k].want == 0)
            assert_true(fabs(out) < 1e-9);
        else
            assert_close(out, c[k].want);
    }
    /* hand-worked on 1 3 4: s1=1, b=2; i=1: s1 = 0.5*3 + 0.5*(1+2) = 3;
     * i=2: b = 0.5*(3-1) + 0.5*2 = 2, s1 = 0.5*4 + 0.5*(3+2) = 4.5 */
    double h[] = {1, 3, 4};
    ser_reset(&s);
    ser_vals(&s, 1000, h, 3);
    double half[2] = {0.5, 0.5};
    assert_int_equal(win_off(GW_PQ_F_DOUBLE_EXPONENTIAL_SMOOTHING, &s, 2000, 10000, 0, half, 2, &out), 1);
    assert_same(out, 4.5);
    /* factors must lie in (0, 1); the message is Prometheus' */
    struct gw_error err;
    double bad[2] = {1, 0.5};
    assert_int_equal(pq_kernel_window(GW_PQ_F_DOUBLE_EXPONENTIAL_SMOOTHING, 3, s.t, s.v, 3, 2000, 0, 2000,
                                      bad, 2, &out, &err), GW_EINVAL);
    assert_string_equal(err.msg, "invalid smoothing factor. Expected: 0 < sf < 1, got: 1.000000");
    double bad2[2] = {0.5, 0};
    assert_int_equal(pq_kernel_window(GW_PQ_F_DOUBLE_EXPONENTIAL_SMOOTHING, 3, s.t, s.v, 3, 2000, 0, 2000,
                                      bad2, 2, &out, &err), GW_EINVAL);
    assert_string_equal(err.msg, "invalid trend factor. Expected: 0 < tf < 1, got: 0.000000");
    /* one sample: no point, but the factors are still checked */
    assert_int_equal(pq_kernel_window(GW_PQ_F_DOUBLE_EXPONENTIAL_SMOOTHING, 3, s.t, s.v, 1, 2000, 0, 2000,
                                      half, 2, &out, &err), 0);
    assert_int_equal(pq_kernel_window(GW_PQ_F_DOUBLE_EXPONENTIAL_SMOOTHING, 3, s.t, s.v, 1, 2000, 0, 2000,
                                      bad, 2, &out, &err), GW_EINVAL);
    /* not a window function */
    assert_int_equal(pq_kernel_window(GW_PQ_F_ABS, 3, s.t, s.v, 3, 2000, 0, 2000, NULL, 0, &out, &err),
                     GW_EINVAL);
}

/* ------------------------------------------------------- bucket quantile */

static double bq(double q, const struct pq_bucket *in, size_t n, int *forced)
{
    struct pq_bucket b[16];
    memcpy(b, in, n * sizeof *b);
    return pq_bucket_quantile(q, b, n, forced);
}

static void test_promql_kernels_bucket_quantile(void **state)
{
    (void)state;
    int forced = -1;
    /* histograms.test testhistogram at 50m, given out of order */
    struct pq_bucket pos[] = {{0.2, 70}, {INFINITY, 120}, {0.1, 50}, {1, 110}};
    struct pq_bucket neg[] = {{-0.2, 10}, {-0.1, 20}, {0.3, 20}, {INFINITY, 30}};
    assert_same(bq(0, pos, 4, &forced), 0.0);
    assert_int_equal(forced, 0);
    assert_close(bq(0.2, pos, 4, NULL), 0.048);
    assert_close(bq(0.5, pos, 4, NULL), 0.15);
    assert_close(bq(0.8, pos, 4, NULL), 0.72);
    assert_same(bq(1, pos, 4, NULL), 1.0);
    assert_same(bq(0, neg, 4, NULL), -0.2);
    assert_same(bq(0.2, neg, 4, NULL), -0.2);
    assert_close(bq(0.5, neg, 4, NULL), -0.15);
    assert_same(bq(0.8, neg, 4, NULL), 0.3);
    assert_same(bq(1, neg, 4, NULL), 0.3);
    assert_same(bq(-0.1, pos, 4, NULL), -INFINITY);
    assert_same(bq(1.01, pos, 4, NULL), INFINITY);
    assert_true(isnan(bq(NAN, pos, 4, NULL)));
    /* testhistogram3: q=0 with an empty lowest bucket at or below 0 */
    struct pq_bucket p3[] = {{0, 0}, {0.1, 50}, {0.2, 70}, {1, 110}, {INFINITY, 110}};
    struct pq_bucket n3[] = {{-0.25, 0}, {-0.2, 20}, {-0.1, 40}, {0.3, 40}, {INFINITY, 40}};
    assert_same(bq(0, p3, 5, NULL), 0.0);
    assert_same(bq(0, n3, 5, NULL), -0.25);
    assert_close(bq(0.25, p3, 5, NULL), 0.055);
    assert_close(bq(0.25, n3, 5, NULL), -0.225);
    assert_close(bq(1, p3, 5, NULL), 1);
    assert_close(bq(1, n3, 5, NULL), -0.1);
    /* testhistogram2 at 7m: middles of buckets */
    struct pq_bucket h2[] = {{0, 0}, {2, 1}, {4, 2}, {6, 3}, {INFINITY, 3}};
    assert_close(bq(1. / 6., h2, 5, NULL), 1);
    assert_close(bq(0.5, h2, 5, NULL), 3);
    assert_close(bq(5. / 6., h2, 5, NULL), 5);
    /* equal bounds written differently are merged (mixed_bucket) */
    struct pq_bucket mixed[] = {{0.1, 10}, {0.2, 10}, {0.2, 10}, {0.2, 10}, {INFINITY, 40}};
    assert_close(bq(0.5, mixed, 5, NULL), 0.15);
    struct pq_bucket only_inf[] = {{INFINITY, 0}, {INFINITY, 0}};
    assert_true(isnan(bq(0.5, only_inf, 2, NULL)));
    /* no +Inf bucket, too few buckets, no observations */
    struct pq_bucket no_inf[] = {{0.1, 1}, {1, 2}};
    assert_true(isnan(bq(0.5, no_inf, 2, NULL)));
    struct pq_bucket one[] = {{INFINITY, 5}};
    assert_true(isnan(bq(0.5, one, 1, NULL)));
    struct pq_bucket empty[] = {{1, 0}, {INFINITY, 0}};
    assert_true(isnan(bq(0.5, empty, 2, NULL)));
    assert_true(isnan(bq(0.5, empty, 0, NULL)));
    /* non-monotonic counts are lifted to the running maximum */
    struct pq_bucket nm[] = {{0.1, 10}, {1, 8}, {10, 12}, {INFINITY, 12}};
    forced = 0;
    assert_close(bq(0.5, nm, 4, &forced), 0.06);
    assert_int_equal(forced, 1);
    /* rank 11 lands in (1, 10]: with 1's count lifted to 10, 1 + 9*(1/2) */
    assert_close(bq(11.0 / 12, nm, 4, NULL), 5.5);
    /* relative differences below 1e-12 are float noise, not non-monotonicity */
    struct pq_bucket noise[] = {{1, 100}, {2, 100 - 1e-11}, {3, 200}, {INFINITY, 200}};
    forced = -1;
    assert_same(bq(0.75, noise, 4, &forced), 2.5);
    assert_int_equal(forced, 0);
    /* a quantile in the +Inf bucket gives the second-highest bound */
    struct pq_bucket top[] = {{1, 1}, {2, 2}, {INFINITY, 10}};
    assert_same(bq(0.9, top, 3, NULL), 2.0);
}

/* ----------------------------------------------------------------- math */

static double m1(enum gw_pq_func_id f, double v)
{
    return pq_kernel_math(f, v, NULL, 0);
}

static void test_promql_kernels_math(void **state)
{
    (void)state;
    /* functions.test: abs ceil floor round over 2.5 2 -2.5 -2 0 -0 Inf -Inf */
    double in[] = {2.5, 2, -2.5, -2, 0, -0.0, INFINITY, -INFINITY};
    double ab[] = {2.5, 2, 2.5, 2, 0, 0, INFINITY, INFINITY};
    double ce[] = {3, 2, -2, -2, 0, -0.0, INFINITY, -INFINITY};
    double fl[] = {2, 2, -3, -2, 0, -0.0, INFINITY, -INFINITY};
    double ro[] = {3, 2, -2, -2, 0, 0, INFINITY, -INFINITY};
    for (int i = 0; i < 8; i++) {
        assert_same(m1(GW_PQ_F_ABS, in[i]), ab[i]);
        assert_same(m1(GW_PQ_F_CEIL, in[i]), ce[i]);
        assert_same(m1(GW_PQ_F_FLOOR, in[i]), fl[i]);
        assert_true(m1(GW_PQ_F_ROUND, in[i]) == ro[i]);
    }
    assert_true(isnan(m1(GW_PQ_F_ROUND, NAN)));
    double tn = 0.1;
    assert_same(pq_kernel_math(GW_PQ_F_ROUND, 1.25, &tn, 1), 1.3);
    tn = 5;
    assert_same(pq_kernel_math(GW_PQ_F_ROUND, 12.5, &tn, 1), 15.0);
    /* exp ln sqrt log2 log10 (functions.test) */
    assert_same(m1(GW_PQ_F_EXP, 10), 22026.465794806718);
    assert_same(m1(GW_PQ_F_EXP, 20), 485165195.4097903);
    assert_same(m1(GW_PQ_F_EXP, -10), 4.5399929762484854e-05);
    assert_same(m1(GW_PQ_F_EXP, 0), 1.0);
    assert_same(m1(GW_PQ_F_LN, 10), 2.302585092994046);
    assert_same(m1(GW_PQ_F_LN, 20), 2.995732273553991);
    assert_same(m1(GW_PQ_F_LN, 0), -INFINITY);
    assert_true(isnan(m1(GW_PQ_F_LN, -10)));
    assert_same(m1(GW_PQ_F_SQRT, 10), 3.1622776601683795);
    assert_same(m1(GW_PQ_F_LOG2, 10), 3.321928094887362);   /* Go; the test file says ...626 within its tolerance */
    assert_same(m1(GW_PQ_F_LOG2, 20), 4.321928094887363);
    assert_same(m1(GW_PQ_F_LOG2, 1024), 10.0);
    assert_same(m1(GW_PQ_F_LOG10, 10), 1.0);
    assert_same(m1(GW_PQ_F_LOG10, 20), 1.301029995663981);
    assert_true(isnan(m1(GW_PQ_F_LOG10, -10)));
    /* Go's Log10 is Log(x)*(1/Ln10) (Go) */
    assert_same(m1(GW_PQ_F_LOG10, 1000), 3.0);
    assert_same(m1(GW_PQ_F_LOG10, 1e-5), -5.0);
    /* values where Go's math differs from a correctly rounded libm (Go) */
    assert_same(m1(GW_PQ_F_TAN, -68.4), 0.8683275248788245);
    assert_same(m1(GW_PQ_F_EXP, 1), 2.718281828459045);
    assert_same(m1(GW_PQ_F_EXP, 0.5), 1.6487212707001282);
    assert_same(m1(GW_PQ_F_LN, 0.7071067811865476), -0.3465735902799726);
    /* Go's assembly Log does not renormalize subnormals: ln(1e-310) */
    assert_same(m1(GW_PQ_F_LN, 1e-310), -709.0850815488945);
    double out;
    assert_int_equal(pq_binop(GW_PQ_OP_POW, 1.1, 10, 0, &out), 1);
    assert_same(out, 2.593742460100002);   /* a correctly rounded pow gives ...0023 */
    assert_int_equal(pq_binop(GW_PQ_OP_POW, 3, 40, 0, &out), 1);
    assert_same(out, 1.2157665459056929e+19);
    assert_int_equal(pq_binop(GW_PQ_OP_POW, 10, -2, 0, &out), 1);
    assert_same(out, 0.01);
    assert_int_equal(pq_binop(GW_PQ_OP_POW, 19.895423777563824, 7.6470874213003253, 0, &out), 1);
    assert_same(out, 8.544353630240036e+09);
    assert_int_equal(pq_binop(GW_PQ_OP_ATAN2, 0.56274022061217455, 2, 0, &out), 1);
    assert_same(out, 0.274278753475116);
    /* sgn */
    assert_same(m1(GW_PQ_F_SGN, -INFINITY), -1.0);
    assert_same(m1(GW_PQ_F_SGN, INFINITY), 1.0);
    assert_true(isnan(m1(GW_PQ_F_SGN, NAN)));
    assert_same(m1(GW_PQ_F_SGN, -50), -1.0);
    assert_same(m1(GW_PQ_F_SGN, 0), 0.0);
    assert_same(m1(GW_PQ_F_SGN, -0.0), -0.0);
    /* trigonometry and hyperbolics against Go's math package (Go) */
    assert_same(m1(GW_PQ_F_SIN, 1), 0.8414709848078965);
    assert_same(m1(GW_PQ_F_COS, 1), 0.5403023058681398);
    assert_same(m1(GW_PQ_F_TAN, 1), 1.557407724654902);
    assert_same(m1(GW_PQ_F_ASIN, 0.5), 0.5235987755982989);
    assert_same(m1(GW_PQ_F_ACOS, 0.5), 1.0471975511965976);
    assert_same(m1(GW_PQ_F_ATAN, 1), 0.7853981633974483);
    assert_same(m1(GW_PQ_F_SINH, 1), 1.1752011936438014);
    assert_same(m1(GW_PQ_F_COSH, 1), 1.5430806348152437);
    assert_same(m1(GW_PQ_F_TANH, 1), 0.7615941559557649);
    assert_same(m1(GW_PQ_F_ASINH, 1), 0.881373587019543);
    assert_same(m1(GW_PQ_F_ACOSH, 2), 1.3169578969248166);
    assert_same(m1(GW_PQ_F_ATANH, 0.5), 0.5493061443340548);
    /* domain edges as Go gives them */
    assert_true(isnan(m1(GW_PQ_F_ACOSH, 0.5)));
    assert_same(m1(GW_PQ_F_ACOSH, 1), 0.0);
    assert_same(m1(GW_PQ_F_ATANH, 1), INFINITY);
    assert_same(m1(GW_PQ_F_ATANH, -1), -INFINITY);
    assert_true(isnan(m1(GW_PQ_F_ATANH, 1.5)));
    assert_true(isnan(m1(GW_PQ_F_ASIN, 2)));
    assert_true(isnan(m1(GW_PQ_F_SIN, INFINITY)));
    assert_same(m1(GW_PQ_F_ASINH, -INFINITY), -INFINITY);
    assert_same(m1(GW_PQ_F_TANH, 50), 1.0);
    /* a huge argument goes through Payne-Hanek reduction (Go) */
    assert_same(m1(GW_PQ_F_SIN, 1e22), -0.8522008497671889);
    assert_same(m1(GW_PQ_F_COS, 1e22), 0.5232147853951389);
    /* deg and rad */
    assert_same(m1(GW_PQ_F_DEG, M_PI), 180.0);
    assert_same(m1(GW_PQ_F_RAD, 180), M_PI);
    /* clamp, clamp_min, clamp_max (functions.test) and NaN bounds */
    double lohi[2] = {-25, 75};
    double vals[] = {-50, 0, 100}, cl[] = {-25, 0, 75};
    for (int i = 0; i < 3; i++)
        assert_same(pq_kernel_math(GW_PQ_F_CLAMP, vals[i], lohi, 2), cl[i]);
    double mx = 75, mn = -25;
    assert_same(pq_kernel_math(GW_PQ_F_CLAMP_MAX, 100, &mx, 1), 75.0);
    assert_same(pq_kernel_math(GW_PQ_F_CLAMP_MAX, -50, &mx, 1), -50.0);
    assert_same(pq_kernel_math(GW_PQ_F_CLAMP_MIN, -50, &mn, 1), -25.0);
    double nanhi[2] = {0, NAN}, nanlo[2] = {NAN, 0};
    assert_true(isnan(pq_kernel_math(GW_PQ_F_CLAMP, 5, nanhi, 2)));
    assert_true(isnan(pq_kernel_math(GW_PQ_F_CLAMP, 5, nanlo, 2)));
    /* NaN input to clamp_min(-Inf bound) stays NaN; clamp to +Inf of NaN */
    double inf = INFINITY;
    assert_same(pq_kernel_math(GW_PQ_F_CLAMP_MIN, NAN, &inf, 1), INFINITY);
    assert_true(isnan(pq_kernel_math(GW_PQ_F_CLAMP_MAX, NAN, &mx, 1)));
    /* -0 and +0: math.Max(+0, -0) is +0 */
    double zero = 0;
    assert_same(pq_kernel_math(GW_PQ_F_CLAMP_MIN, -0.0, &zero, 1), 0.0);
}

static void test_promql_kernels_dates(void **state)
{
    (void)state;
    /* functions.test */
    assert_same(m1(GW_PQ_F_YEAR, 0), 1970.0);
    assert_same(m1(GW_PQ_F_YEAR, 1136239445), 2006.0);
    assert_same(m1(GW_PQ_F_MONTH, 1136239445), 1.0);
    assert_same(m1(GW_PQ_F_DAY_OF_MONTH, 1136239445), 2.0);
    assert_same(m1(GW_PQ_F_DAY_OF_YEAR, 1136239445), 2.0);
    assert_same(m1(GW_PQ_F_DAY_OF_WEEK, 0), 4.0);   /* Thursday */
    assert_same(m1(GW_PQ_F_DAY_OF_WEEK, 1136239445), 1.0);
    assert_same(m1(GW_PQ_F_HOUR, 1136239445), 22.0);
    assert_same(m1(GW_PQ_F_MINUTE, 1136239445), 4.0);
    assert_same(m1(GW_PQ_F_YEAR, 1230767999), 2008.0);
    assert_same(m1(GW_PQ_F_YEAR, 1230768000), 2009.0);
    assert_same(m1(GW_PQ_F_MONTH, 1456790399), 2.0);
    assert_same(m1(GW_PQ_F_DAY_OF_MONTH, 1456790399), 29.0);
    assert_same(m1(GW_PQ_F_MONTH, 1456790400), 3.0);
    assert_same(m1(GW_PQ_F_DAY_OF_MONTH, 1456790400), 1.0);
    assert_same(m1(GW_PQ_F_DAY_OF_YEAR, 1483191420), 366.0);
    assert_same(m1(GW_PQ_F_DAY_OF_YEAR, 1672493820), 365.0);
    assert_same(m1(GW_PQ_F_DAYS_IN_MONTH, 1454284800), 29.0);
    assert_same(m1(GW_PQ_F_DAYS_IN_MONTH, 1485907200), 28.0);
    /* 2000 is a leap year (divisible by 400), 2100 is not (by 100) */
    assert_same(m1(GW_PQ_F_DAYS_IN_MONTH, 951782400), 29.0);    /* 2000-02-29 */
    assert_same(m1(GW_PQ_F_DAY_OF_MONTH, 951782400), 29.0);
    assert_same(m1(GW_PQ_F_MONTH, 951868800), 3.0);             /* 2000-03-01 */
    assert_same(m1(GW_PQ_F_DAYS_IN_MONTH, 4105123200), 28.0);   /* 2100-02-01 */
    assert_same(m1(GW_PQ_F_DAYS_IN_MONTH, 946684800 - 1), 31.0); /* 1999-12-31 */
    assert_same(m1(GW_PQ_F_DAY_OF_YEAR, 946684800 - 1), 365.0);
    /* fractions are truncated toward zero like Go's int64(v) */
    assert_same(m1(GW_PQ_F_MINUTE, 59.9), 0.0);
    assert_same(m1(GW_PQ_F_HOUR, -0.5), 0.0);
    assert_same(m1(GW_PQ_F_HOUR, -1), 23.0);
    assert_same(m1(GW_PQ_F_YEAR, -1), 1969.0);
    assert_same(m1(GW_PQ_F_DAY_OF_WEEK, -86400), 3.0);
    /* before year 1 and after 9999 */
    assert_same(m1(GW_PQ_F_YEAR, -62135596800.0), 1.0);
    assert_same(m1(GW_PQ_F_YEAR, -62135596801.0), 0.0);
    assert_same(m1(GW_PQ_F_YEAR, 253402300800.0), 10000.0);
    /* NaN and out-of-range values become math.MinInt64 seconds and wrap
     * around as in Go (Go) */
    assert_same(m1(GW_PQ_F_YEAR, NAN), 292277026596.0);
    assert_same(m1(GW_PQ_F_MONTH, INFINITY), 12.0);
    assert_same(m1(GW_PQ_F_DAY_OF_MONTH, -1e300), 4.0);
    assert_same(m1(GW_PQ_F_HOUR, NAN), 15.0);
    assert_same(m1(GW_PQ_F_MINUTE, NAN), 30.0);
    assert_same(m1(GW_PQ_F_DAY_OF_WEEK, NAN), 0.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_promql_kernels_kahan),
        cmocka_unit_test(test_promql_kernels_stale),
        cmocka_unit_test(test_promql_kernels_binop_arith),
        cmocka_unit_test(test_promql_kernels_binop_compare),
        cmocka_unit_test(test_promql_kernels_quantile),
        cmocka_unit_test(test_promql_kernels_increase),
        cmocka_unit_test(test_promql_kernels_rate),
        cmocka_unit_test(test_promql_kernels_rate_compat2_order),
        cmocka_unit_test(test_promql_kernels_avg_over_time_overflow),
        cmocka_unit_test(test_promql_kernels_stddev_over_time_overflow),
        cmocka_unit_test(test_promql_kernels_irate_idelta),
        cmocka_unit_test(test_promql_kernels_deriv_predict),
        cmocka_unit_test(test_promql_kernels_resets_changes),
        cmocka_unit_test(test_promql_kernels_avg_sum_over_time),
        cmocka_unit_test(test_promql_kernels_minmax_over_time),
        cmocka_unit_test(test_promql_kernels_stddev_quantile_mad),
        cmocka_unit_test(test_promql_kernels_double_exponential_smoothing),
        cmocka_unit_test(test_promql_kernels_bucket_quantile),
        cmocka_unit_test(test_promql_kernels_math),
        cmocka_unit_test(test_promql_kernels_dates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
