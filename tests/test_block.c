/* tests/test_block.c - unit tests for the persisted block codec (src/chunk/block.c).
 *
 * Bit-exact round trips on random doubles, decimal-looking gauges, counters,
 * constants and special values; golden bytes for one small block (derived in
 * the comment of test_block_golden_small and at the top of block.c); every
 * truncation and random corruption must be rejected or decode safely. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/block.h"
#include "gpuwatch/buf.h"
#include "gpuwatch/chunk.h"
#include "chunk/entropy.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}
static uint64_t dbits(double v) { uint64_t u; memcpy(&u, &v, 8); return u; }
static double bitsd(uint64_t u) { double v; memcpy(&v, &u, 8); return v; }

#define STALE 0x7ff0000000000002ull

/* Encodes, checks info, decodes into exact-size heap arrays, compares bits.
 * Returns the encoded size. */
static size_t roundtrip(const int64_t *t, const double *v, size_t n)
{
    struct gw_buf b;
    gw_buf_init(&b, 0);
    assert_int_equal(gw_block_encode(t, v, n, &b), GW_OK);
    uint32_t in;
    int64_t mint, maxt;
    assert_int_equal(gw_block_info(b.data, b.len, &in, &mint, &maxt), GW_OK);
    assert_int_equal(in, n);
    assert_true(mint == t[0]);
    assert_true(maxt == t[n - 1]);
    int64_t *dt = malloc(n * sizeof *dt);
    double *dv = malloc(n * sizeof *dv);
    assert_non_null(dt);
    assert_non_null(dv);
    size_t got = 0;
    assert_int_equal(gw_block_decode(b.data, b.len, dt, dv, n, &got), GW_OK);
    assert_int_equal(got, n);
    for (size_t i = 0; i < n; i++) {
        assert_true(dt[i] == t[i]);
        if (dbits(dv[i]) != dbits(v[i]))
            fail_msg("value %zu: got %016llx want %016llx", i, (unsigned long long)dbits(dv[i]),
                     (unsigned long long)dbits(v[i]));
    }
    size_t len = b.len;
    /* The split form (timestamp column + value part, joined) decodes to the
     * same samples. */
    struct gw_buf col, val, joined;
    gw_buf_init(&col, 0);
    gw_buf_init(&val, 0);
    gw_buf_init(&joined, 0);
    assert_int_equal(gw_block_ts_encode(t, n, &col), GW_OK);
    assert_int_equal(gw_block_values_encode(v, n, &val), GW_OK);
    assert_int_equal(gw_block_info(col.data, col.len, &in, &mint, &maxt), GW_OK);
    assert_int_equal(in, n);
    assert_true(mint == t[0] && maxt == t[n - 1]);
    assert_int_equal(gw_block_join(col.data, col.len, val.data, val.len, &joined), GW_OK);
    memset(dt, 0, n * sizeof *dt);
    memset(dv, 0, n * sizeof *dv);
    assert_int_equal(gw_block_decode(joined.data, joined.len, dt, dv, n, &got), GW_OK);
    assert_int_equal(got, n);
    for (size_t i = 0; i < n; i++) {
        assert_true(dt[i] == t[i]);
        if (dbits(dv[i]) != dbits(v[i]))
            fail_msg("split value %zu: got %016llx want %016llx", i, (unsigned long long)dbits(dv[i]),
                     (unsigned long long)dbits(v[i]));
    }
    /* Decoded apart (column, then value part), the same samples. */
    memset(dt, 0, n * sizeof *dt);
    memset(dv, 0, n * sizeof *dv);
    got = 0;
    assert_int_equal(gw_block_ts_decode(col.data, col.len, dt, n, &got), GW_OK);
    assert_int_equal(got, n);
    if (n > 1)
        assert_int_equal(gw_block_ts_decode(col.data, col.len, dt, n - 1, &got), GW_ELIMIT);
    assert_int_equal(gw_block_values_decode(val.data, val.len, n, dv), GW_OK);
    for (size_t i = 0; i < n; i++) {
        assert_true(dt[i] == t[i]);
        if (dbits(dv[i]) != dbits(v[i]))
            fail_msg("apart value %zu: got %016llx want %016llx", i, (unsigned long long)dbits(dv[i]),
                     (unsigned long long)dbits(v[i]));
    }
    /* Without zstd the joined block is the whole block's bytes. */
    if (!(b.data[0] & 0x01) && !(val.data[0] & 0x01)) {
        assert_int_equal(joined.len, b.len);
        assert_memory_equal(joined.data, b.data, b.len);
    }
    gw_buf_free(&col);
    gw_buf_free(&val);
    gw_buf_free(&joined);
    free(dt);
    free(dv);
    gw_buf_free(&b);
    return len;
}

static void regular_ts(int64_t *t, size_t n, int64_t start, int64_t step)
{
    for (size_t i = 0; i < n; i++)
        t[i] = start + (int64_t)i * step;
}

static void test_block_golden_small(void **state)
{
    (void)state;
    /* See the worked example atop src/chunk/block.c:
     *   10 | 03 | d0 0f (zz 1000) | b0 ea 01 (span 30000)
     *   00 (timestamps: residuals vs D = 15000 all zero)
     *   11 (decimal, order 0, k = 1) 00 (no exceptions)
     *   01 1e 32 32 (varint seq 15, 25, 25) */
    static const uint8_t want[] = {0x10, 0x03, 0xd0, 0x0f, 0xb0, 0xea, 0x01, 0x00,
                                   0x11, 0x00, 0x01, 0x1e, 0x32, 0x32};
    int64_t t[3] = {1000, 16000, 31000};
    double v[3] = {1.5, 2.5, 2.5};
    struct gw_buf b;
    gw_buf_init(&b, 0);
    assert_int_equal(gw_block_encode(t, v, 3, &b), GW_OK);
    assert_int_equal(b.len, sizeof want);
    assert_memory_equal(b.data, want, sizeof want);
    gw_buf_free(&b);
    assert_int_equal(roundtrip(t, v, 3), sizeof want);
}

static void test_block_split_golden_and_corrupt(void **state)
{
    (void)state;
    /* The worked example of the split form atop src/chunk/block.c. */
    static const uint8_t want_col[] = {0x10, 0x03, 0xd0, 0x0f, 0xb0, 0xea, 0x01, 0x00};
    static const uint8_t want_val[] = {0x00, 0x11, 0x00, 0x01, 0x1e, 0x32, 0x32};
    int64_t t[3] = {1000, 16000, 31000};
    double v[3] = {1.5, 2.5, 2.5};
    struct gw_buf col, val, j;
    gw_buf_init(&col, 0);
    gw_buf_init(&val, 0);
    gw_buf_init(&j, 0);
    assert_int_equal(gw_block_ts_encode(t, 3, &col), GW_OK);
    assert_int_equal(col.len, sizeof want_col);
    assert_memory_equal(col.data, want_col, sizeof want_col);
    assert_int_equal(gw_block_values_encode(v, 3, &val), GW_OK);
    assert_int_equal(val.len, sizeof want_val);
    assert_memory_equal(val.data, want_val, sizeof want_val);
    assert_int_equal(gw_block_join(col.data, col.len, val.data, val.len, &j), GW_OK);
    assert_int_equal(j.len, sizeof want_col + sizeof want_val - 1);

    /* Bad arguments and bad inputs are errors, never crashes. */
    int64_t bad_t[2] = {5, 5};
    assert_int_equal(gw_block_ts_encode(bad_t, 2, &col), GW_EINVAL);
    assert_int_equal(gw_block_ts_encode(t, 0, &col), GW_EINVAL);
    assert_int_equal(gw_block_values_encode(v, 0, &val), GW_EINVAL);
    assert_int_equal(gw_block_join(want_col, sizeof want_col, want_val, 1, &j), GW_ECORRUPT);
    uint8_t badkind[sizeof want_val];
    memcpy(badkind, want_val, sizeof badkind);
    badkind[0] = 0x02;
    assert_int_equal(gw_block_join(want_col, sizeof want_col, badkind, sizeof badkind, &j), GW_ECORRUPT);
    badkind[0] = 0x01; /* claims zstd: not a frame */
    assert_int_equal(gw_block_join(want_col, sizeof want_col, badkind, sizeof badkind, &j), GW_ECORRUPT);
    uint8_t zcol[sizeof want_col];
    memcpy(zcol, want_col, sizeof zcol);
    zcol[0] |= 0x01; /* a column never has the zstd flag */
    assert_int_equal(gw_block_join(zcol, sizeof zcol, want_val, sizeof want_val, &j), GW_ECORRUPT);
    assert_int_equal(gw_block_join(want_col, 3, want_val, sizeof want_val, &j), GW_ECORRUPT);

    /* A value part joined with a column of another count does not decode. */
    int64_t t4[4] = {1000, 16000, 31000, 46000};
    gw_buf_reset(&col);
    gw_buf_reset(&j);
    assert_int_equal(gw_block_ts_encode(t4, 4, &col), GW_OK);
    assert_int_equal(gw_block_join(col.data, col.len, want_val, sizeof want_val, &j), GW_OK);
    int64_t dt[8];
    double dv[8];
    size_t n;
    assert_int_equal(gw_block_decode(j.data, j.len, dt, dv, 8, &n), GW_ECORRUPT);
    /* ... nor decoded apart. */
    assert_int_equal(gw_block_values_decode(want_val, sizeof want_val, 4, dv), GW_ECORRUPT);
    assert_int_equal(gw_block_values_decode(want_val, sizeof want_val, 3, dv), GW_OK);
    assert_true(dv[0] == 1.5 && dv[1] == 2.5 && dv[2] == 2.5);
    assert_int_equal(gw_block_values_decode(want_val, sizeof want_val, 0, dv), GW_EINVAL);
    assert_int_equal(gw_block_values_decode(want_val, 1, 3, dv), GW_ECORRUPT);
    badkind[0] = 0x02;
    assert_int_equal(gw_block_values_decode(badkind, sizeof badkind, 3, dv), GW_ECORRUPT);
    badkind[0] = 0x01;
    assert_int_equal(gw_block_values_decode(badkind, sizeof badkind, 3, dv), GW_ECORRUPT);
    /* A column with the zstd flag, cut short, or with a byte after its
     * timestamp section is refused. */
    assert_int_equal(gw_block_ts_decode(want_col, sizeof want_col, dt, 8, &n), GW_OK);
    assert_true(n == 3 && dt[0] == 1000 && dt[1] == 16000 && dt[2] == 31000);
    assert_int_equal(gw_block_ts_decode(zcol, sizeof zcol, dt, 8, &n), GW_ECORRUPT);
    assert_int_equal(gw_block_ts_decode(want_col, sizeof want_col - 1, dt, 8, &n), GW_ECORRUPT);
    uint8_t longcol[sizeof want_col + 1];
    memcpy(longcol, want_col, sizeof want_col);
    longcol[sizeof want_col] = 0x00;
    assert_int_equal(gw_block_ts_decode(longcol, sizeof longcol, dt, 8, &n), GW_ECORRUPT);

    /* Random corruption of a zstd value part and of a column. */
    enum { N = 1500 };
    int64_t *tt = malloc(N * sizeof *tt), *ot = malloc(N * sizeof *ot);
    double *vv = malloc(N * sizeof *vv), *ov = malloc(N * sizeof *ov);
    assert_true(tt && ot && vv && ov);
    regular_ts(tt, N, 1700000000000ll, 15000);
    for (size_t i = 0; i < N; i++)
        vv[i] = bitsd(0x4059000000000000ull ^ ((i % 5) << 20));
    gw_buf_reset(&col);
    gw_buf_reset(&val);
    assert_int_equal(gw_block_ts_encode(tt, N, &col), GW_OK);
    assert_int_equal(gw_block_values_encode(vv, N, &val), GW_OK);
    assert_true(val.data[0] & 0x01); /* large and repetitive: compressed */
    for (int round = 0; round < 2000; round++) {
        struct gw_buf *which = (round & 1) ? &val : &col;
        size_t pos = rnd() % which->len;
        uint8_t save = which->data[pos];
        which->data[pos] ^= (uint8_t)(1u << (rnd() % 8));
        /* apart: errors only, and the same verdict as the joined block
         * whenever the column decodes */
        size_t na = 0;
        int rca = gw_block_ts_decode(col.data, col.len, ot, N, &na);
        assert_true(rca == GW_OK || rca == GW_ECORRUPT || rca == GW_ELIMIT);
        int rcv = gw_block_values_decode(val.data, val.len, N, ov);
        assert_true(rcv == GW_OK || rcv == GW_ECORRUPT);
        gw_buf_reset(&j);
        int rc = gw_block_join(col.data, col.len, val.data, val.len, &j);
        if (rca == GW_OK && na == N && rc == GW_OK) {
            int rcj = gw_block_decode(j.data, j.len, ot, ov, N, &n);
            assert_int_equal(rcj == GW_OK, rcv == GW_OK);
        }
        if (rc == GW_OK) {
            rc = gw_block_decode(j.data, j.len, ot, ov, N, &n);
            assert_true(rc == GW_OK || rc == GW_ECORRUPT || rc == GW_ELIMIT);
        } else {
            assert_true(rc == GW_ECORRUPT);
        }
        which->data[pos] = save;
    }
    free(tt);
    free(ot);
    free(vv);
    free(ov);
    gw_buf_free(&col);
    gw_buf_free(&val);
    gw_buf_free(&j);
}

static void test_block_golden_stale_exception(void **state)
{
    (void)state;
    /* t = 0, 10, 20, 30 (D = 10, dod seq all zero), v = 7, stale, 7, 7:
     *   10 04 00 1e 00 | 01 (decimal, order 0, k = 0)
     *   01 (one exception) 08 (gap 1 << 3 | class 0 stale)
     *   00 (mantissas 7, 7, 7 in order 0 cost 4 bytes; order 1: zz 7 = 0e
     *   then zero seq 00 = 2 bytes) -> mode 05, 0e 00 */
    static const uint8_t want[] = {0x10, 0x04, 0x00, 0x1e, 0x00, 0x05, 0x01, 0x08, 0x0e, 0x00};
    int64_t t[4] = {0, 10, 20, 30};
    double v[4] = {7, bitsd(STALE), 7, 7};
    struct gw_buf b;
    gw_buf_init(&b, 0);
    assert_int_equal(gw_block_encode(t, v, 4, &b), GW_OK);
    assert_int_equal(b.len, sizeof want);
    assert_memory_equal(b.data, want, sizeof want);
    gw_buf_free(&b);
    roundtrip(t, v, 4);
}

static void test_block_roundtrip_random_doubles(void **state)
{
    (void)state;
    enum { N = 3000 };
    int64_t *t = malloc(N * sizeof *t);
    double *v = malloc(N * sizeof *v);
    assert_non_null(t);
    assert_non_null(v);
    for (int round = 0; round < 40; round++) {
        size_t n = 1 + rnd() % N;
        t[0] = (int64_t)rnd() >> 3;
        for (size_t i = 1; i < n; i++)
            t[i] = t[i - 1] + 1 + (int64_t)(rnd() % (round & 1 ? 100 : (1ull << 40)));
        for (size_t i = 0; i < n; i++)
            v[i] = bitsd(rnd());
        roundtrip(t, v, n);
    }
    free(t);
    free(v);
}

static void test_block_roundtrip_exporter_shapes(void **state)
{
    (void)state;
    enum { N = 960 };
    int64_t t[N];
    double v[N];
    regular_ts(t, N, 1700000000000ll, 15000);
    /* integer temperatures */
    double lvl = 55;
    for (size_t i = 0; i < N; i++) {
        if (rnd() % 10 == 0) lvl += (rnd() & 1) ? 1 : -1;
        v[i] = lvl;
    }
    size_t temp = roundtrip(t, v, N);
    assert_true(temp < N / 4);
    /* power with 3 decimals, as a text parser yields them */
    for (size_t i = 0; i < N; i++)
        v[i] = (double)(250000 + (int64_t)(rnd() % 20000)) / 1000.0;
    size_t pw = roundtrip(t, v, N);
    assert_true(pw < N * 3);
    /* growing byte counter */
    double c = 1e12;
    for (size_t i = 0; i < N; i++) {
        c += (double)(rnd() % 100000);
        v[i] = c;
    }
    roundtrip(t, v, N);
    /* constant gauge: header + one byte of timestamps + a few value bytes */
    for (size_t i = 0; i < N; i++)
        v[i] = 1.0;
    size_t cst = roundtrip(t, v, N);
    assert_true(cst <= 20);
    /* ratios 0..1 with two decimals */
    for (size_t i = 0; i < N; i++)
        v[i] = (double)(rnd() % 101) / 100.0;
    size_t ratio = roundtrip(t, v, N);
    assert_true(ratio < N);
    /* decimals with many digits and values that are not decimal at all */
    for (size_t i = 0; i < N; i++)
        v[i] = (i % 3) ? 0.1 * (double)i : 1.0 / 3.0;
    roundtrip(t, v, N);
    for (size_t i = 0; i < N; i++)
        v[i] = (double)(rnd() % 1000000000000000ull) / 1e15;
    roundtrip(t, v, N);
    /* near the 2^53 mantissa limit and beyond */
    for (size_t i = 0; i < N; i++)
        v[i] = 9007199254740992.0 + (double)(2 * (rnd() % 1000));
    roundtrip(t, v, N);
    for (size_t i = 0; i < N; i++)
        v[i] = (i & 1) ? 1.7e308 : -1e300;
    roundtrip(t, v, N);
    /* jittered scrapes and a drifting interval */
    for (size_t i = 1; i < N; i++)
        t[i] = t[0] + (int64_t)i * 15000 + ((rnd() % 20 == 0) ? (int64_t)(rnd() % 50) - 25 : 0);
    size_t jit = roundtrip(t, v, N);
    (void)jit;
    for (size_t i = 1; i < N; i++)
        t[i] = t[i - 1] + 15000 + (int64_t)(i % 3);
    roundtrip(t, v, N);
}

/* Rice-coded sequences of every short length, with escapes (a jump far
 * from the median) at the start, the middle and the very end: the decoder's
 * fast loop, its zero-padded tail and its escape path all see them. */
static void test_block_roundtrip_rice_tails(void **state)
{
    (void)state;
    enum { N = 200 };
    int64_t t[N];
    double v[N];
    for (size_t n = 1; n <= N; n += (n < 40 ? 1 : 7)) {
        for (int esc = 0; esc < 4; esc++) {
            /* integer counter values: order-1 deltas 100..115 (Rice,
             * small k), one delta of 3000 (an escape once n is large
             * enough for k to stay small) at `at` */
            size_t at = esc == 0 ? 1 : esc == 1 ? n / 2 : n - 1;
            t[0] = 1700000000000ll;
            double c = 5000;
            for (size_t i = 0; i < n; i++) {
                if (i > 0)
                    t[i] = t[i - 1] + 15000 + (int64_t)(rnd() % 7) - 3;
                c += 100 + (double)(rnd() % 16);
                if (esc < 3 && i == at)
                    c += 3000;
                v[i] = c;
            }
            roundtrip(t, v, n);
        }
    }
    /* small Rice parameters (the byte-table decoder): order-1 residual
     * spreads from 2 to 128, every element from 1 to a dozen bits */
    for (unsigned spread = 2; spread <= 128; spread *= 2) {
        t[0] = 1700000000000ll;
        double c = 1e6;
        for (size_t i = 0; i < N; i++) {
            if (i > 0)
                t[i] = t[i - 1] + 15000;
            c += 1000 + (double)(rnd() % spread);
            v[i] = c / 100.0;
        }
        roundtrip(t, v, N);
    }
}

static void test_block_roundtrip_special_values(void **state)
{
    (void)state;
    enum { N = 500 };
    static const uint64_t specials[] = {STALE, 0x7ff8000000000001ull, 0x7ff8000000000000ull,
                                        0xfff8000000000000ull, 0x7ff0000000000000ull,
                                        0xfff0000000000000ull, 0x8000000000000000ull, 0,
                                        1, 0x800fffffffffffffull, 0x7fefffffffffffffull,
                                        0x7ff4000000000abcull};
    int64_t t[N];
    double v[N];
    for (int round = 0; round < 60; round++) {
        size_t n = 1 + rnd() % N;
        t[0] = (round % 3 == 0) ? INT64_MIN + (int64_t)(rnd() % 1000) : -(int64_t)(rnd() % 100000000);
        for (size_t i = 1; i < n; i++)
            t[i] = t[i - 1] + ((round % 4 == 0) ? 1 + (int64_t)(rnd() % (1ull << 50)) : 15000);
        for (size_t i = 0; i < n; i++) {
            if (rnd() % 10 == 0)
                v[i] = bitsd(specials[rnd() % (sizeof specials / sizeof specials[0])]);
            else
                v[i] = (double)(int64_t)(rnd() % 2000 - 1000) / 100.0;
        }
        roundtrip(t, v, n);
    }
    /* All special; one sample; two samples spanning the int64 range. */
    for (size_t i = 0; i < 12; i++) {
        t[i] = (int64_t)i;
        v[i] = bitsd(specials[i]);
    }
    roundtrip(t, v, 12);
    int64_t t1[1] = {INT64_MAX};
    double v1[1] = {-0.0};
    roundtrip(t1, v1, 1);
    int64_t t2[2] = {INT64_MIN, INT64_MAX};
    double v2[2] = {4.9e-324, -4.9e-324};
    roundtrip(t2, v2, 2);
}

static void test_block_invalid_arguments(void **state)
{
    (void)state;
    int64_t t[3] = {10, 20, 20};
    double v[3] = {1, 2, 3};
    struct gw_buf b;
    gw_buf_init(&b, 0);
    assert_int_equal(gw_block_encode(t, v, 0, &b), GW_EINVAL);
    assert_int_equal(gw_block_encode(t, v, 3, &b), GW_EINVAL);
    t[2] = 15;
    assert_int_equal(gw_block_encode(t, v, 3, &b), GW_EINVAL);
    assert_int_equal(gw_block_encode(t, v, (size_t)GW_BLOCK_MAX_SAMPLES + 1, &b), GW_EINVAL);
    assert_int_equal(b.len, 0);
    gw_buf_free(&b);
    /* The output buffer's ceiling is honoured. */
    t[2] = 30;
    gw_buf_init(&b, 4);
    assert_int_equal(gw_block_encode(t, v, 3, &b), GW_ETOOLARGE);
    gw_buf_free(&b);
    /* Decode into too small a caller array. */
    gw_buf_init(&b, 0);
    assert_int_equal(gw_block_encode(t, v, 3, &b), GW_OK);
    int64_t dt[3];
    double dv[3];
    size_t n = 99;
    assert_int_equal(gw_block_decode(b.data, b.len, dt, dv, 2, &n), GW_ELIMIT);
    assert_int_equal(n, 99);
    assert_int_equal(gw_block_info(b.data, 3, NULL, NULL, NULL), GW_ECORRUPT);
    assert_int_equal(gw_block_info(NULL, 0, NULL, NULL, NULL), GW_ECORRUPT);
    gw_buf_free(&b);
}

static void test_block_smaller_than_xor_chunks(void **state)
{
    (void)state;
    /* A 480-sample window of a 3-decimal gauge must beat 4 XOR chunks. */
    enum { N = 480 };
    int64_t t[N];
    double v[N];
    regular_ts(t, N, 1700000000000ll, 15000);
    double p = 300;
    for (size_t i = 0; i < N; i++) {
        p += (double)((int64_t)(rnd() % 2001) - 1000) / 1000.0;
        v[i] = (double)(int64_t)(p * 1000) / 1000.0;
    }
    size_t blk = roundtrip(t, v, N);
    size_t xor_total = 0;
    for (size_t off = 0; off < N; off += 120) {
        struct gw_xor_chunk c;
        gw_xor_init(&c);
        for (size_t i = off; i < off + 120; i++)
            assert_int_equal(gw_xor_append(&c, t[i], v[i]), GW_OK);
        size_t len;
        (void)gw_xor_bytes(&c, &len);
        xor_total += len;
        gw_xor_free(&c);
    }
    assert_true(blk * 2 < xor_total);
}

/* Decodes untrusted bytes; returns the rc, checks the count on success. */
static int try_decode(const uint8_t *b, size_t len, int64_t *t, double *v, size_t cap)
{
    size_t n = 0;
    int rc = gw_block_decode(b, len, t, v, cap, &n);
    if (rc == GW_OK)
        assert_true(n >= 1 && n <= cap);
    else
        assert_true(rc == GW_ECORRUPT || rc == GW_ELIMIT || rc == GW_ENOMEM);
    return rc;
}

static void fuzz_block(const uint8_t *blk, size_t len, int64_t *t, double *v, size_t cap, int flips)
{
    /* Every strict truncation, copied to an exact-size heap buffer. */
    for (size_t l = 0; l < len; l++) {
        uint8_t *cp = malloc(l ? l : 1);
        assert_non_null(cp);
        memcpy(cp, blk, l);
        assert_int_not_equal(try_decode(cp, l, t, v, cap), GW_OK);
        free(cp);
    }
    uint8_t *cp = malloc(len);
    assert_non_null(cp);
    for (int round = 0; round < flips; round++) {
        memcpy(cp, blk, len);
        int k = 1 + (int)(rnd() % 3);
        for (int f = 0; f < k; f++) {
            size_t bit = rnd() % (len * 8);
            cp[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        }
        (void)try_decode(cp, len, t, v, cap);
    }
    free(cp);
}

static void test_block_truncated_and_corrupt(void **state)
{
    (void)state;
    enum { N = 1200 }; /* shape 4 must pass BLK_ZSTD_MIN to take the zstd path */
    int64_t t[N], dt[N];
    double v[N], dv[N];
    struct gw_buf b;
    gw_buf_init(&b, 0);
    for (int shape = 0; shape < 5; shape++) {
        regular_ts(t, N, 1700000000000ll, 15000);
        for (size_t i = 0; i < N; i++) {
            switch (shape) {
            case 0: v[i] = (double)(i % 17) / 4.0; break;                 /* decimal */
            case 1: v[i] = bitsd(rnd()); break;                           /* XOR */
            case 2: v[i] = (i % 7 == 0) ? bitsd(STALE) : (double)(rnd() % 1000); break;
            case 3: v[i] = (double)(i / 10) * 1000003.0; break;          /* counter */
            default: v[i] = bitsd(0x4059000000000000ull ^ ((i % 5) << 20)); break; /* repeats: zstd */
            }
            if (shape == 2 && i > 0 && rnd() % 9 == 0)
                t[i] = t[i - 1] + 1 + (int64_t)(rnd() % 30000);
            else if (i > 0)
                t[i] = t[i - 1] + 15000;
        }
        gw_buf_reset(&b);
        assert_int_equal(gw_block_encode(t, v, N, &b), GW_OK);
        if (shape == 4)
            assert_true(b.data[0] & 0x01); /* this one took the zstd path */
        fuzz_block(b.data, b.len, dt, dv, N, 3000);
    }
    gw_buf_free(&b);
    /* Pure garbage of every small length. */
    uint8_t junk[64];
    for (int round = 0; round < 20000; round++) {
        size_t l = rnd() % sizeof junk;
        for (size_t i = 0; i < l; i++)
            junk[i] = (uint8_t)rnd();
        if (l > 0 && (round & 1))
            junk[0] = (uint8_t)(0x10 | (junk[0] & 3));
        (void)try_decode(junk, l, dt, dv, N);
    }
    /* A header promising more samples than the caller holds. */
    static const uint8_t big[] = {0x10, 0x80, 0x80, 0x40, 0x00, 0x80, 0x80, 0x40, 0x00};
    size_t n;
    assert_int_equal(gw_block_decode(big, sizeof big, dt, dv, N, &n), GW_ELIMIT);
    /* n above GW_BLOCK_MAX_SAMPLES is corruption, not a limit. */
    static const uint8_t huge[] = {0x10, 0xff, 0xff, 0xff, 0x0f, 0x00, 0x00, 0x00};
    assert_int_equal(gw_block_info(huge, sizeof huge, NULL, NULL, NULL), GW_ECORRUPT);
    /* maxt past INT64_MAX. */
    static const uint8_t wrap[] = {0x10, 0x02, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
                                   0x05, 0x00};
    assert_int_equal(gw_block_info(wrap, sizeof wrap, NULL, NULL, NULL), GW_ECORRUPT);
}


/* Noisy integer counters above 2^53 (no exact decimal form) take the BITS
 * form (deltas of the bit patterns), bit-exact with stale markers, NaN
 * payloads, -0 and a sign change mixed in, and smaller than XOR; corrupt
 * and truncated BITS blocks are refused, never misread past their end. */
static void test_block_bits_form(void **state)
{
    (void)state;
    enum { N = 720 };
    int64_t t[N], dt[N];
    double v[N], dv[N];
    regular_ts(t, N, 1700000000000ll, 30000);
    for (int shape = 0; shape < 3; shape++) {
        double x = 7.44e16; /* ulp 16 */
        for (size_t i = 0; i < N; i++) {
            x += 1.1e10 + (double)(rnd() % 200000000);
            v[i] = shape == 1 ? -x : x;
            if (shape == 2 && i % 97 == 5) v[i] = bitsd(STALE);
            if (shape == 2 && i % 131 == 7) v[i] = bitsd(0x7ff8000000abcdefull);
            if (shape == 2 && i == 300) v[i] = -0.0;
        }
        size_t len = roundtrip(t, v, N);
        struct gw_buf val;
        gw_buf_init(&val, 0);
        assert_int_equal(gw_block_values_encode(v, N, &val), GW_OK);
        if (val.data[0] == 0)
            assert_int_equal(val.data[1] & 3, 2); /* BITS */
        /* XOR alone would need ~5 bytes a value here */
        assert_true(val.len < (size_t)N * 4);
        gw_buf_free(&val);
        struct gw_buf b;
        gw_buf_init(&b, 0);
        assert_int_equal(gw_block_encode(t, v, N, &b), GW_OK);
        assert_int_equal(b.len, len);
        fuzz_block(b.data, b.len, dt, dv, N, 2000);
        gw_buf_free(&b);
    }
}

/* Value part's mode byte (raw part: kind byte 0, then the section). */
static int part_mode(const double *v, size_t n, size_t *len)
{
    struct gw_buf val;
    gw_buf_init(&val, 0);
    assert_int_equal(gw_block_values_encode(v, n, &val), GW_OK);
    int mode = val.data[0] == 0 ? val.data[1] : -1;
    *len = val.len;
    gw_buf_free(&val);
    return mode;
}

/* Counters whose scrape-time jitter dominates their increments (a level
 * plus bounded noise: the deltas are negatively correlated) take linear
 * prediction (order field 3) with ANS-coded residuals and cost near the
 * noise's entropy; exceptions, outliers that escape the ANS alphabet,
 * modular wrap-around and full-precision doubles (BITS + LPC) round-trip
 * bit-exactly; every cut and flipped byte is refused or decoded safely. */
static void test_block_lpc_and_ans_forms(void **state)
{
    (void)state;
    enum { N = 2880 };
    static int64_t t[N], dt[N];
    static double v[N], dv[N];
    regular_ts(t, N, 1700000000000ll, 30000);
    for (int shape = 0; shape < 7; shape++) {
        double rate = 1234.0, base = 98765432.0;
        for (size_t i = 0; i < N; i++) {
            double u = (double)(rnd() >> 11) / 9007199254740992.0;
            switch (shape) {
            case 0: /* counter: level + rate * jitter */
            case 1: /* the same with stale markers and a NaN payload */
                v[i] = floor(base + rate * ((double)i * 30.0 + u));
                if (shape == 1 && i % 97 == 5) v[i] = bitsd(STALE);
                if (shape == 1 && i % 389 == 7) v[i] = bitsd(0x7ff8000000abcdefull);
                break;
            case 2: /* two decimals, slow rate */
                v[i] = rint(100.0 * 0.37 * ((double)i * 30.0 + u)) / 100.0;
                break;
            case 3: /* rare huge jumps escape the alphabet */
                v[i] = floor(base + rate * ((double)i * 30.0 + u)) + (i % 211 == 3 ? 1e12 * (double)(i % 7) : 0);
                break;
            case 4: /* mantissas near +-2^53, alternating: the deltas wrap */
                v[i] = (i & 1) ? 9007199254740000.0 - (double)(rnd() % 1000) : -9007199254740000.0 + (double)(rnd() % 1000);
                break;
            case 5: /* full-precision ratio (no decimal form) */
                v[i] = 0.5 + 0.3 * sin((double)i / 40.0) + 1e-4 * u;
                break;
            default: /* integer gauge: smooth wave + uniform noise */
                v[i] = floor(5000.0 + 3000.0 * sin((double)i / 300.0) + 200.0 * u);
                break;
            }
        }
        (void)roundtrip(t, v, N);
        size_t len;
        int mode = part_mode(v, N, &len);
        if (shape == 0 || shape == 2 || shape == 6) {
            /* DECIMAL, order LPC */
            assert_int_equal(mode & 3, 1);
            assert_int_equal((mode >> 2) & 3, 3);
        }
        if (shape == 0) {
            /* entropy of the jitter: log2(1234) = 10.27 bits; deltas would
             * cost the triangular difference's ~11 bits (1.40 B with ANS) */
            double per = (double)len / N;
            if (!(per < 1.35))
                fail_msg("counter costs %.3f B/sample", per);
        }
        struct gw_buf b;
        gw_buf_init(&b, 0);
        assert_int_equal(gw_block_encode(t, v, N, &b), GW_OK);
        fuzz_block(b.data, b.len, dt, dv, N, 1500);
        gw_buf_free(&b);
    }
    /* Around the thresholds of ANS (32 elements) and LPC (64 values). */
    for (size_t n = 28; n <= 70; n++) {
        for (size_t i = 0; i < n; i++)
            v[i] = floor(1e6 + 777.0 * ((double)i * 30.0 + (double)(rnd() % 1000) / 1000.0));
        (void)roundtrip(t, v, n);
    }
}

/* The rANS coder alone: random alphabets and skews round-trip; frequency
 * tables that do not sum to ENT_M and streams that end early or late are
 * refused. */
static void test_block_ans_coder(void **state)
{
    (void)state;
    enum { N = 5000 };
    static uint8_t sym[N], tmp[3 * N + 8];
    for (int round = 0; round < 200; round++) {
        unsigned nsym = 1 + (unsigned)(rnd() % ENT_MAXSYM);
        size_t cnt = 1 + (size_t)(rnd() % N);
        uint32_t hist[ENT_MAXSYM] = {0};
        unsigned skew = (unsigned)(rnd() % 4);
        for (size_t i = 0; i < cnt; i++) {
            uint64_t r = rnd();
            unsigned s = (unsigned)(r % nsym);
            for (unsigned k = 0; k < skew; k++)
                s = s * (unsigned)((r >> (8 + 8 * k)) % nsym) / nsym;
            sym[i] = (uint8_t)s;
            hist[s]++;
        }
        uint16_t freq[ENT_MAXSYM];
        ent_normalize(hist, nsym, cnt, freq);
        unsigned sum = 0;
        for (unsigned s = 0; s < nsym; s++) {
            sum += freq[s];
            assert_true(hist[s] == 0 || freq[s] > 0);
        }
        assert_int_equal(sum, ENT_M);
        const uint8_t *out;
        size_t len = ent_encode(sym, cnt, freq, nsym, tmp, &out);
        assert_true(len <= 2 * cnt + 8);
        double est = ent_cost_bits(hist, freq, nsym) / 8.0;
        assert_true((double)len <= est + 6.0);
        static struct ent_dec d;
        assert_int_equal(ent_dec_init(&d, freq, nsym, out, len), 1);
        for (size_t i = 0; i < cnt; i++) {
            unsigned s;
            assert_int_equal(ent_dec_next(&d, &s), 1);
            assert_int_equal(s, sym[i]);
        }
        assert_true(ent_dec_done(&d));
        /* one symbol short of the end: not done */
        if (len > 4) {
            assert_int_equal(ent_dec_init(&d, freq, nsym, out, len), 1);
            int ok = 1;
            for (size_t i = 0; i + 1 < cnt && ok; i++) {
                unsigned s;
                ok = ent_dec_next(&d, &s);
            }
            assert_false(ok && cnt > 1 && ent_dec_done(&d) && len > 4 + 1);
        }
        freq[0] = (uint16_t)(freq[0] + 1);
        assert_int_equal(ent_dec_init(&d, freq, nsym, out, len), 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_block_golden_small),
        cmocka_unit_test(test_block_golden_stale_exception),
        cmocka_unit_test(test_block_split_golden_and_corrupt),
        cmocka_unit_test(test_block_roundtrip_random_doubles),
        cmocka_unit_test(test_block_roundtrip_exporter_shapes),
        cmocka_unit_test(test_block_roundtrip_rice_tails),
        cmocka_unit_test(test_block_roundtrip_special_values),
        cmocka_unit_test(test_block_invalid_arguments),
        cmocka_unit_test(test_block_smaller_than_xor_chunks),
        cmocka_unit_test(test_block_truncated_and_corrupt),
        cmocka_unit_test(test_block_bits_form),
        cmocka_unit_test(test_block_lpc_and_ans_forms),
        cmocka_unit_test(test_block_ans_coder),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
