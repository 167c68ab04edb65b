/* test_head.c - the in-memory head: lookup, append outcomes, chunk cutting
 * at window ends and sample caps, pending lists and WAL positions. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "gpuwatch/head.h"

static const uint8_t L1[] = {8, '_', '_', 'n', 'a', 'm', 'e', '_', '_', 2, 'u', 'p'};
static const uint8_t L2[] = {8, '_', '_', 'n', 'a', 'm', 'e', '_', '_', 2, 'u', 'q'};

static void test_head_find_and_add(void **state)
{
    (void)state;
    struct gw_head *h = gw_head_new(3600000, 120);
    assert_non_null(h);
    uint64_t lo1, hi1, lo2, hi2;
    gw_head_key(L1, sizeof L1, &lo1, &hi1);
    gw_head_key(L2, sizeof L2, &lo2, &hi2);
    assert_true(lo1 != lo2 || hi1 != hi2);
    assert_null(gw_head_find(h, lo1, hi1));
    struct gw_head_series *s = gw_head_add(h, 7, lo1, hi1, 1, 3, INT64_MIN);
    assert_non_null(s);
    assert_ptr_equal(gw_head_find(h, lo1, hi1), s);
    /* same bucket hash, other high half: not a match */
    assert_null(gw_head_find(h, lo1, hi1 ^ 1));
    assert_null(gw_head_find(h, lo2, hi2));
    assert_ptr_equal(gw_head_find_sid(h, 7), s);
    assert_null(gw_head_find_sid(h, 8));
    /* many series force the tables to grow */
    for (uint64_t i = 100; i < 5100; i++) assert_non_null(gw_head_add(h, i, i * 31, i, 0, 0xffff, INT64_MIN));
    for (uint64_t i = 100; i < 5100; i++) assert_int_equal(gw_head_find_sid(h, i)->sid, i);
    for (uint64_t i = 100; i < 5100; i++) assert_int_equal(gw_head_find(h, i * 31, i)->sid, i);
    assert_ptr_equal(gw_head_find(h, lo1, hi1), s);
    gw_head_free(h);
}

static void test_head_append_outcomes(void **state)
{
    (void)state;
    struct gw_head *h = gw_head_new(3600000, 120);
    struct gw_head_series *s = gw_head_add(h, 1, 1, 1, 0, 0, INT64_MIN);
    enum gw_head_append_result r;
    assert_int_equal(gw_head_append(h, s, 1000, 1.0, 5, &r), GW_OK);
    assert_int_equal(r, GW_HEAD_ACCEPTED);
    assert_int_equal(gw_head_append(h, s, 1000, 1.0, 5, &r), GW_OK);
    assert_int_equal(r, GW_HEAD_DUPLICATE);
    assert_int_equal(gw_head_append(h, s, 1000, 2.0, 5, &r), GW_OK);
    assert_int_equal(r, GW_HEAD_CONFLICT);
    assert_int_equal(gw_head_append(h, s, 999, 1.0, 5, &r), GW_OK);
    assert_int_equal(r, GW_HEAD_OUT_OF_ORDER);
    /* NaN payloads compare by bits: stale NaN vs ordinary NaN conflict */
    double stale, nan1;
    uint64_t sb = 0x7ff0000000000002ull, nb = 0x7ff8000000000001ull;
    memcpy(&stale, &sb, 8);
    memcpy(&nan1, &nb, 8);
    assert_int_equal(gw_head_append(h, s, 2000, stale, 5, &r), GW_OK);
    assert_int_equal(r, GW_HEAD_ACCEPTED);
    assert_int_equal(gw_head_append(h, s, 2000, stale, 5, &r), GW_OK);
    assert_int_equal(r, GW_HEAD_DUPLICATE);
    assert_int_equal(gw_head_append(h, s, 2000, nan1, 5, &r), GW_OK);
    assert_int_equal(r, GW_HEAD_CONFLICT);
    assert_int_equal(gw_hchunk_n(&s->open), 2);
    gw_head_free(h);
}

static void test_head_cut_at_window_and_cap(void **state)
{
    (void)state;
    struct gw_head *h = gw_head_new(3600000, 100);
    struct gw_head_series *s = gw_head_add(h, 1, 1, 1, 0, 0, INT64_MIN);
    enum gw_head_append_result r;
    /* 15 s samples over 3 hours: one cut per hour window */
    for (int64_t t = 0; t < 3 * 3600000; t += 15000) assert_int_equal(gw_head_append(h, s, t, (double)t, (uint64_t)t, &r), GW_OK);
    size_t chunks = 0;
    int64_t prev_max = -1;
    for (struct gw_head_chunk *c = s->pending; c; c = c->next) {
        chunks++;
        assert_true(c->mint > prev_max);
        assert_true(gw_hchunk_n(&c->x) <= 100);
        /* never spans a window */
        assert_int_equal(c->mint / 3600000, c->maxt / 3600000);
        prev_max = c->maxt;
    }
    /* 240 samples per hour, cap 100: 3 chunks per full hour, last hour open */
    assert_int_equal(chunks, 8);
    assert_true(s->on_dirty);
    struct gw_head_series *d = gw_head_take_dirty(h);
    assert_ptr_equal(d, s);
    assert_null(d->dnext);
    struct gw_head_chunk *upto = s->pending->next;   /* the first two */
    gw_head_pending_done(h, s, upto);
    assert_int_equal(s->persisted_maxt, 199 * 15000);
    /* more remain: re-listed as dirty */
    assert_ptr_equal(gw_head_take_dirty(h), s);
    gw_head_pending_done(h, s, s->pending_tail);
    assert_null(s->pending);
    assert_null(gw_head_take_dirty(h));
    /* WAL positions: only the open chunk is left */
    assert_int_equal(gw_head_min_wal_pos(h), (uint64_t)s->open_mint);
    assert_int_equal(gw_head_cut_idle(h, 2 * 3600000), 0);
    assert_int_equal(gw_head_cut_idle(h, 3 * 3600000), 1);
    assert_int_equal(gw_head_min_wal_pos(h), s->pending->wal_pos);
    gw_head_free(h);
}

static void test_head_freeze_round_trip(void **state)
{
    (void)state;
    struct gw_head *h = gw_head_new(7200000, 1024);
    struct gw_head_series *s = gw_head_add(h, 1, 1, 1, 0, 0, INT64_MIN);
    enum gw_head_append_result r;
    int64_t t[300];
    uint64_t bits[300];
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < 300; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        t[i] = 1000000 + i * 15000 + (int64_t)(x % 5);        /* jittered */
        bits[i] = (i % 37 == 0) ? 0x7ff0000000000002ull : (i % 3 ? x : 0x4059000000000000ull);
        double v;
        memcpy(&v, &bits[i], 8);
        assert_int_equal(gw_head_append(h, s, t[i], v, 0, &r), GW_OK);
        assert_int_equal(r, GW_HEAD_ACCEPTED);
    }
    /* most samples now sit in frozen blocks */
    assert_true(s->open.frozen_n >= 256);
    assert_int_equal(gw_hchunk_n(&s->open), 300);
    int64_t tt[300];
    double vv[300];
    size_t n = 0;
    assert_int_equal(gw_hchunk_decode(&s->open, tt, vv, 300, &n), GW_OK);
    assert_int_equal(n, 300);
    for (int i = 0; i < 300; i++) {
        uint64_t b;
        memcpy(&b, &vv[i], 8);
        assert_int_equal(tt[i], t[i]);
        assert_int_equal(b, bits[i]);
    }
    /* too small a buffer is refused, not overrun */
    assert_int_not_equal(gw_hchunk_decode(&s->open, tt, vv, 100, &n), GW_OK);
    /* lookup finds samples in frozen blocks and in the XOR tail */
    uint64_t got;
    assert_int_equal(gw_head_lookup(s, t[10], &got), 1);
    assert_int_equal(got, bits[10]);
    assert_int_equal(gw_head_lookup(s, t[299], &got), 1);
    assert_int_equal(got, bits[299]);
    assert_int_equal(gw_head_lookup(s, t[10] + 1, &got), 0);
    /* duplicate of a frozen sample: older than newest, so the caller looks it up */
    double v10;
    memcpy(&v10, &bits[10], 8);
    assert_int_equal(gw_head_check(s, t[10], v10), GW_HEAD_OUT_OF_ORDER);
    /* cut keeps everything */
    assert_int_equal(gw_head_cut(h, s), GW_OK);
    assert_int_equal(gw_hchunk_n(&s->pending->x), 300);
    assert_int_equal(s->pending->maxt, t[299]);
    gw_head_free(h);
}

/* A replay appends without freezing; the first append after it freezes the
 * whole, longer XOR part. */
static void test_head_freeze_after_replay(void **state)
{
    (void)state;
    struct gw_head *h = gw_head_new(7200000, 1024);
    struct gw_head_series *s = gw_head_add(h, 1, 1, 1, 0, 0, INT64_MIN);
    enum gw_head_append_result r;
    gw_head_set_freeze(h, 0);
    for (int i = 0; i < 200; i++) assert_int_equal(gw_head_append(h, s, 1000 + i * 15000, i * 0.5, 0, &r), GW_OK);
    assert_int_equal(s->open.frozen_n, 0);
    assert_int_equal(s->open.x.n, 200);
    gw_head_set_freeze(h, 1);
    assert_int_equal(gw_head_append(h, s, 1000 + 200 * 15000, 100.0, 0, &r), GW_OK);
    assert_int_equal(s->open.frozen_n, 201);
    assert_int_equal(s->open.x.n, 0);
    int64_t t[201];
    double v[201];
    size_t n = 0;
    assert_int_equal(gw_hchunk_decode(&s->open, t, v, 201, &n), GW_OK);
    assert_int_equal(n, 201);
    for (int i = 0; i < 201; i++) {
        assert_int_equal(t[i], 1000 + i * 15000);
        assert_true(v[i] == i * 0.5);
    }
    gw_head_free(h);
}

static void test_head_evict_idle(void **state)
{
    (void)state;
    struct gw_head *h = gw_head_new(3600000, 1024);
    enum gw_head_append_result r;
    for (uint64_t i = 1; i <= 3000; i++) {
        struct gw_head_series *s = gw_head_add(h, i, i * 7919, i, 0, 0, INT64_MIN);
        assert_non_null(s);
        assert_int_equal(gw_head_append(h, s, (int64_t)i * 1000, 1.0, 0, &r), GW_OK);
    }
    /* everything has head data: nothing goes */
    assert_int_equal(gw_head_evict_idle(h, INT64_MAX), 0);
    gw_head_cut_all(h);
    struct gw_head_series *d = gw_head_take_dirty(h);
    size_t nd = 0;
    while (d) {
        struct gw_head_series *next = d->dnext;
        gw_head_pending_done(h, d, d->pending_tail);
        d = next;
        nd++;
    }
    assert_int_equal(nd, 3000);
    /* stored now; the ones older than t leave */
    assert_int_equal(gw_head_evict_idle(h, 1000 * 1000 + 1), 1000);
    assert_null(gw_head_find_sid(h, 1));
    assert_null(gw_head_find(h, 1000 * 7919, 1000));
    assert_non_null(gw_head_find_sid(h, 1001));
    assert_non_null(gw_head_find(h, 1001 * 7919, 1001));
    struct gw_head_stats st;
    gw_head_stats(h, &st);
    assert_int_equal(st.series, 2000);
    gw_head_free(h);
}

static void test_head_stats(void **state)
{
    (void)state;
    struct gw_head *h = gw_head_new(7200000, 1024);
    struct gw_head_series *s = gw_head_add(h, 1, 1, 1, 0, 0, INT64_MIN);
    enum gw_head_append_result r;
    for (int i = 0; i < 10; i++) gw_head_append(h, s, i * 1000, 1.5, 0, &r);
    struct gw_head_stats st;
    gw_head_stats(h, &st);
    assert_int_equal(st.series, 1);
    assert_int_equal(st.samples, 10);
    assert_int_equal(st.open_chunks, 1);
    assert_true(st.bytes > 0);
    gw_head_free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_head_find_and_add),
        cmocka_unit_test(test_head_append_outcomes),
        cmocka_unit_test(test_head_cut_at_window_and_cap),
        cmocka_unit_test(test_head_freeze_round_trip),
        cmocka_unit_test(test_head_freeze_after_replay),
        cmocka_unit_test(test_head_evict_idle),
        cmocka_unit_test(test_head_stats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
