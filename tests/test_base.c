/* test_base.c - the base layer: error helpers, bounded buffers, the arena's
 * ceiling, varints and zigzag, CRC-32C against the standard check value,
 * hashing, and Prometheus duration parsing. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/arena.h"
#include "gpuwatch/buf.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/err.h"

/* the reference the wrappers are checked against (tests may use libraries) */
#define XXH_INLINE_ALL
#include <xxhash.h>

static void test_base_errors(void **state)
{
    (void)state;
    for (int rc = 0; rc >= GW_ESHUTDOWN; rc--) {
        const char *s = gw_strerror(rc);
        assert_non_null(s);
        assert_true(strlen(s) > 0);
        assert_string_not_equal(s, "unknown error");
    }
    assert_string_equal(gw_strerror(-999), "unknown error");
    struct gw_error e;
    assert_int_equal(gw_error_set(&e, GW_EPARSE, "parse error at char %d: %s", 17, "unexpected ','"), GW_EPARSE);
    assert_int_equal(e.code, GW_EPARSE);
    assert_string_equal(e.msg, "parse error at char 17: unexpected ','");
    char big[600];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    gw_error_set(&e, GW_EINVAL, "%s", big);          /* truncated, terminated */
    assert_int_equal(strlen(e.msg), GW_ERROR_MSG_LEN - 1);
    assert_int_equal(gw_error_set(NULL, GW_EIO, "ignored"), GW_EIO);
    gw_error_clear(&e);
    assert_int_equal(e.code, GW_OK);
    assert_string_equal(e.msg, "");
}

/* Varints and length-prefixed parts appended to a buffer read back with
 * gw_uvarint_get; a part over the buffer's ceiling is GW_ETOOLARGE. */
static void test_base_buf_varint_and_part(void **state)
{
    (void)state;
    struct gw_buf b;
    gw_buf_init(&b, 0);
    const uint64_t vals[] = {0, 1, 127, 128, 300, UINT64_C(1) << 35, UINT64_MAX};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
        assert_int_equal(gw_buf_put_uvarint(&b, vals[i]), GW_OK);
    assert_int_equal(gw_buf_put_part(&b, "abc", 3), GW_OK);
    assert_int_equal(gw_buf_put_part(&b, NULL, 0), GW_OK);
    size_t pos = 0;
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        uint64_t v;
        size_t k = gw_uvarint_get(b.data + pos, b.len - pos, &v);
        assert_true(k == gw_uvarint_len(vals[i]));
        assert_true(v == vals[i]);
        pos += k;
    }
    assert_int_equal(b.len - pos, 5);
    assert_memory_equal(b.data + pos, "\x03" "abc" "\x00", 5);
    gw_buf_free(&b);
    gw_buf_init(&b, 4);
    assert_int_equal(gw_buf_put_part(&b, "abcd", 4), GW_ETOOLARGE);
    gw_buf_free(&b);
}

static void test_base_buf_ceiling(void **state)
{
    (void)state;
    struct gw_buf b;
    gw_buf_init(&b, 100);
    assert_int_equal(gw_buf_append(&b, "0123456789", 10), GW_OK);
    for (int i = 0; i < 9; i++) assert_int_equal(gw_buf_append(&b, "0123456789", 10), GW_OK);
    assert_int_equal(b.len, 100);
    assert_int_equal(gw_buf_putc(&b, 'x'), GW_ETOOLARGE);
    assert_int_equal(gw_buf_reserve(&b, SIZE_MAX), GW_ETOOLARGE);
    assert_int_equal(b.len, 100);
    gw_buf_reset(&b);
    assert_int_equal(gw_buf_printf(&b, "%d-%s", 42, "x"), GW_OK);
    assert_memory_equal(b.data, "42-x", 4);
    size_t n;
    uint8_t *p = gw_buf_steal(&b, &n);
    assert_int_equal(n, 4);
    assert_null(b.data);
    free(p);
    /* a long printf goes through the slow path */
    gw_buf_init(&b, 0);
    char s[1000];
    memset(s, 'a', sizeof s - 1);
    s[sizeof s - 1] = 0;
    assert_int_equal(gw_buf_printf(&b, "<%s>", s), GW_OK);
    assert_int_equal(b.len, 1001);
    assert_int_equal(b.data[1000], '>');
    gw_buf_free(&b);
    gw_buf_free(NULL);
}

static void test_base_arena(void **state)
{
    (void)state;
    struct gw_arena a;
    gw_arena_init(&a, 256, 4096);
    void *p1 = gw_arena_alloc(&a, 10);
    void *p2 = gw_arena_alloc(&a, 1000);        /* larger than a block */
    assert_non_null(p1);
    assert_non_null(p2);
    assert_int_equal((uintptr_t)p1 % 16, 0);
    assert_int_equal((uintptr_t)p2 % 16, 0);
    assert_null(gw_arena_alloc(&a, 4096));      /* would pass the ceiling */
    assert_null(gw_arena_calloc(&a, SIZE_MAX / 2, 4)); /* n * size overflows */
    uint8_t *z = gw_arena_calloc(&a, 10, 10);
    assert_non_null(z);
    for (int i = 0; i < 100; i++) assert_int_equal(z[i], 0);
    gw_arena_reset(&a);
    assert_int_equal(a.used_total, 0);
    assert_non_null(gw_arena_alloc(&a, 3000));
    gw_arena_free(&a);
}

static void test_base_varint_zigzag(void **state)
{
    (void)state;
    static const uint64_t vals[] = {0, 1, 127, 128, 300, 16383, 16384, UINT32_MAX, (uint64_t)1 << 63, UINT64_MAX};
    uint8_t buf[10];
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        size_t n = gw_uvarint_put(buf, vals[i]);
        uint64_t v = 0;
        assert_int_equal(gw_uvarint_get(buf, n, &v), n);
        assert_true(v == vals[i]);
        /* every truncation is refused */
        for (size_t k = 0; k < n; k++) assert_int_equal(gw_uvarint_get(buf, k, &v), 0);
    }
    assert_int_equal(gw_uvarint_put(buf, 300), 2);
    assert_int_equal(buf[0], 0xac);
    assert_int_equal(buf[1], 0x02);
    /* an 11-byte or overflowing varint is refused */
    uint8_t over[11];
    memset(over, 0xff, sizeof over);
    uint64_t v;
    assert_int_equal(gw_uvarint_get(over, sizeof over, &v), 0);
    over[9] = 0x02;
    assert_int_equal(gw_uvarint_get(over, 10, &v), 0);
    static const int64_t s[] = {0, -1, 1, -2, INT64_MAX, INT64_MIN};
    static const uint64_t z[] = {0, 1, 2, 3, UINT64_MAX - 1, UINT64_MAX};
    for (size_t i = 0; i < 6; i++) {
        assert_true(gw_zigzag(s[i]) == z[i]);
        assert_true(gw_unzigzag(z[i]) == s[i]);
    }
    uint8_t be[8];
    gw_put_be64(be, 0x0102030405060708ull);
    assert_int_equal(be[0], 1);
    assert_true(gw_get_be64(be) == 0x0102030405060708ull);
    gw_put_be32(be, 0xa1b2c3d4u);
    assert_int_equal(gw_get_be32(be), 0xa1b2c3d4u);
}

static void test_base_crc_hash(void **state)
{
    (void)state;
    /* the CRC-32C check value */
    assert_int_equal(gw_crc32c(0, "123456789", 9), 0xE3069283u);
    /* incremental == one shot, across the 8-byte fast path */
    const char *msg = "the quick brown fox jumps over the lazy dog, twice over";
    size_t n = strlen(msg);
    for (size_t cut = 0; cut <= n; cut++)
        assert_int_equal(gw_crc32c(gw_crc32c(0, msg, cut), msg + cut, n - cut), gw_crc32c(0, msg, n));
    assert_true(gw_hash64("abc", 3) == gw_hash64("abc", 3));
    assert_true(gw_hash64("abc", 3) != gw_hash64("abd", 3));
    assert_true(gw_now_ms() > 1600000000000LL);
    uint64_t a = gw_mono_ns(), b = gw_mono_ns();
    assert_true(b >= a);
}

/* The hash values are persisted (series ids in the head and the store's
 * value keys, the detectors' snapshot): pinned here as literals, and the
 * wrappers checked against xxHash itself on many lengths. */
static void test_base_hash_values(void **state)
{
    (void)state;
    static const char canon[] = "__name__\0up\0job\0node";   /* 20 bytes */
    assert_true(gw_hash64("", 0) == 0x2d06800538d394c2ull);
    assert_true(gw_hash64(canon, 20) == 0xaee3fe74fad5811cull);
    struct gw_hash128 h = gw_hash128(canon, 20);
    assert_true(h.lo == 0x0cefde111ceebe6dull);
    assert_true(h.hi == 0x40cbf3b40139947aull);
    assert_true(gw_xxh64("", 0, 0) == 0xef46db3751d8e999ull);
    assert_true(gw_xxh64(canon, 20, 0) == 0x3b2d8cefbec82444ull);

    uint8_t buf[600];
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)(i * 131u + 7u);
    for (size_t n = 0; n <= sizeof buf; n += (n < 260 ? 1 : 17)) {
        assert_true(gw_hash64(buf, n) == XXH3_64bits(buf, n));
        XXH128_hash_t x = XXH3_128bits(buf, n);
        h = gw_hash128(buf, n);
        assert_true(h.lo == x.low64 && h.hi == x.high64);
        assert_true(gw_xxh64(buf, n, 0) == XXH64(buf, n, 0));
        assert_true(gw_xxh64(buf, n, 42) == XXH64(buf, n, 42));
        /* streaming in uneven pieces == one shot */
        struct gw_xxh64 st;
        gw_xxh64_reset(&st, 0);
        for (size_t off = 0, step = 1; off < n; off += step, step = step * 2 + 1)
            gw_xxh64_update(&st, buf + off, step < n - off ? step : n - off);
        assert_true(gw_xxh64_digest(&st) == XXH64(buf, n, 0));
        assert_true(gw_xxh64_digest(&st) == XXH64(buf, n, 0));   /* digest keeps the state */
    }
}

static void test_base_utf8(void **state)
{
    (void)state;
    uint32_t cp = 0;
    char enc[4];
    /* round trip at every length boundary */
    const uint32_t cps[] = {0, 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x10FFFF};
    for (size_t i = 0; i < sizeof cps / sizeof cps[0]; i++) {
        size_t n = gw_utf8_encode(cps[i], enc);
        assert_int_equal(gw_utf8_decode((const uint8_t *)enc, n, &cp), n);
        assert_int_equal(cp, cps[i]);
        assert_int_equal(gw_utf8_decode((const uint8_t *)enc, n - 1 + (n == 1), &cp), n == 1 ? 1 : 0);
    }
    /* refused: overlong, surrogate, above U+10FFFF, stray continuation, truncated */
    assert_int_equal(gw_utf8_decode((const uint8_t *)"\xC0\x80", 2, &cp), 0);
    assert_int_equal(gw_utf8_decode((const uint8_t *)"\xE0\x9F\xBF", 3, &cp), 0);
    assert_int_equal(gw_utf8_decode((const uint8_t *)"\xED\xA0\x80", 3, &cp), 0);
    assert_int_equal(gw_utf8_decode((const uint8_t *)"\xF4\x90\x80\x80", 4, &cp), 0);
    assert_int_equal(gw_utf8_decode((const uint8_t *)"\x80", 1, &cp), 0);
    assert_int_equal(gw_utf8_decode((const uint8_t *)"\xE2\x82", 2, &cp), 0);
    assert_true(gw_utf8_valid("gpu071 \xE2\x82\xAC \xF0\x9F\x98\x80", 15));
    assert_true(gw_utf8_valid("", 0));
    assert_false(gw_utf8_valid("ok\xFF", 3));
    assert_false(gw_utf8_valid("ok\xE2\x82", 4));
}

static void test_base_durations(void **state)
{
    (void)state;
    static const struct { const char *s; int64_t ms; } ok[] = {
        {"0", 0}, {"1ms", 1}, {"90s", 90000}, {"5m", 300000}, {"1h30m", 5400000},
        {"55d", 55LL * 86400000}, {"2w", 14LL * 86400000}, {"1y", 365LL * 86400000},
        {"1d2h3m4s5ms", 86400000LL + 7200000 + 180000 + 4000 + 5},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int64_t v = -1;
        assert_int_equal(gw_parse_duration_ms(ok[i].s, &v), GW_OK);
        assert_true(v == ok[i].ms);
    }
    static const char *bad[] = {"", "d", "5", "-5m", "5x", "1m1h", "1h1h", "5.5m", "99999999999999999999y", NULL};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t v;
        assert_int_equal(gw_parse_duration_ms(bad[i], &v), GW_EPARSE);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_base_errors),
        cmocka_unit_test(test_base_buf_ceiling),
        cmocka_unit_test(test_base_buf_varint_and_part),
        cmocka_unit_test(test_base_arena),
        cmocka_unit_test(test_base_varint_zigzag),
        cmocka_unit_test(test_base_crc_hash),
        cmocka_unit_test(test_base_hash_values),
        cmocka_unit_test(test_base_durations),
        cmocka_unit_test(test_base_utf8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
