/* tests/test_json.c - the JSON writer of base (sample values against Go's
 * expected strings, encoding/json numbers, timestamps, RFC 3339 times,
 * string escaping), and the HTTP module's form, time and duration
 * parameter parsing. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "gpuwatch/json.h"
#include "http/http_int.h"

static void check_float(double v, const char *want)
{
    char got[64];
    size_t n = gw_json_format_float(v, got, sizeof got);
    assert_string_equal(got, want);
    assert_int_equal(n, strlen(want));
}

static void test_json_float_go_table(void **state)
{
    (void)state;
    check_float(0.0, "0");
    check_float(-0.0, "-0");
    check_float(1.0, "1");
    check_float(-1.0, "-1");
    check_float(0.1, "0.1");
    check_float(1e-7, "1e-07");
    check_float(1e-6, "0.000001");
    check_float(-1e-7, "-1e-07");
    check_float(123456789012.0, "123456789012");
    check_float(1e20, "100000000000000000000");
    check_float(1e21, "1e+21");
    check_float(1.5e300, "1.5e+300");
    check_float(5e-324, "5e-324");
    check_float(0.30000000000000004, "0.30000000000000004");
    check_float(1234.5678, "1234.5678");
    check_float(-2.5, "-2.5");
    check_float(1.7976931348623157e308, "1.7976931348623157e+308");
    check_float(2.5e-5, "0.000025");
    check_float(100.0, "100");
    /* short decimals, the two-neighbour case and the fast path's edges */
    check_float(0.4523, "0.4523");
    check_float(-8.5485300000000013, "-8.548530000000001");
    check_float(758.08148292659655, "758.0814829265965");
    check_float(999999999999999.9, "999999999999999.9");
    check_float(0.0000015, "0.0000015");
    check_float(9007199254740993.0, "9007199254740992");
    check_float(2.2250738585072014e-308, "2.2250738585072014e-308");
    check_float(4.9406564584124654e-322, "4.94e-322");
    check_float(NAN, "NaN");
    check_float(INFINITY, "+Inf");
    check_float(-INFINITY, "-Inf");
}

static void test_json_float_round_trips(void **state)
{
    /* Every output must read back bit-exact; walk a spread of doubles. */
    (void)state;
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 20000; i++) {
        double v, back;
        char s[64];
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(&v, &x, sizeof v);
        if (!isfinite(v))
            continue;
        gw_json_format_float(v, s, sizeof s);
        back = strtod(s, NULL);
        assert_memory_equal(&back, &v, sizeof v);
    }
}

static void check_ts(int64_t t, const char *want)
{
    char got[40];
    gw_json_format_ts(t, got, sizeof got);
    assert_string_equal(got, want);
}

static void test_json_timestamps(void **state)
{
    (void)state;
    check_ts(1435781451781, "1435781451.781");
    check_ts(1435781460000, "1435781460");
    check_ts(1435781460100, "1435781460.100");
    check_ts(1435781460010, "1435781460.010");
    check_ts(0, "0");
    check_ts(-1500, "-1.500");
    check_ts(-5, "-0.005");
    check_ts(INT64_MIN, "-9223372036854775.808");
}

static void check_str(const char *in, size_t len, const char *want)
{
    struct gw_buf b;
    gw_buf_init(&b, 0);
    assert_int_equal(gw_json_str(&b, in, len), GW_OK);
    assert_int_equal(b.len, strlen(want));
    assert_memory_equal(b.data, want, b.len);
    gw_buf_free(&b);
}

static void test_json_escaping(void **state)
{
    (void)state;
    check_str("plain", 5, "\"plain\"");
    check_str("a\"b\\c\n\r\t", 8, "\"a\\\"b\\\\c\\n\\r\\t\"");
    check_str("\x01\x1f<>&", 5, "\"\\u0001\\u001f\\u003c\\u003e\\u0026\"");
    check_str("x\0y", 3, "\"x\\u0000y\"");
    check_str("caf\xc3\xa9", 5, "\"caf\xc3\xa9\"");
    check_str("\xe2\x82\xac", 3, "\"\xe2\x82\xac\"");
    check_str("\xf0\x9f\x98\x80", 4, "\"\xf0\x9f\x98\x80\"");
    check_str("a\xff" "b", 3, "\"a\\ufffdb\"");
    check_str("\xc3", 1, "\"\\ufffd\"");
    check_str("\xed\xa0\x80", 3, "\"\\ufffd\\ufffd\\ufffd\"");   /* surrogate */
    check_str("\xe2\x80\xa8", 3, "\"\\u2028\"");
}

static void test_json_values_and_labels(void **state)
{
    struct gw_buf b;
    (void)state;
    gw_buf_init(&b, 0);
    assert_int_equal(gw_json_value(&b, 0.25), GW_OK);
    assert_int_equal(gw_buf_putc(&b, ','), GW_OK);
    assert_int_equal(gw_json_ts(&b, 1500), GW_OK);
    assert_int_equal(b.len, strlen("\"0.25\",1.500"));
    assert_memory_equal(b.data, "\"0.25\",1.500", b.len);
    gw_buf_free(&b);
}

static void check_num(double v, const char *want)
{
    struct gw_buf b;
    gw_buf_init(&b, 0);
    assert_int_equal(gw_json_num(&b, v), GW_OK);
    assert_int_equal(b.len, strlen(want));
    assert_memory_equal(b.data, want, b.len);
    gw_buf_free(&b);
}

static void check_time(int64_t t, const char *want, const char *want_s)
{
    char got[64];
    assert_int_equal(gw_format_rfc3339(t, got, sizeof got), strlen(want));
    assert_string_equal(got, want);
    assert_int_equal(gw_format_rfc3339_s(t, got, sizeof got), strlen(want_s));
    assert_string_equal(got, want_s);
}

/* Go encoding/json float64 numbers and time.RFC3339Nano at ms resolution */
static void test_json_numbers_and_times(void **state)
{
    (void)state;
    check_num(0, "0");
    check_num(0.5, "0.5");
    check_num(30, "30");
    check_num(-2.25, "-2.25");
    check_num(1e-7, "1e-7");
    check_num(1.5e-10, "1.5e-10");
    check_num(1e21, "1e+21");
    check_num(123456789012.0, "123456789012");
    check_num(NAN, "null");
    check_num(INFINITY, "null");
    check_time(0, "1970-01-01T00:00:00Z", "1970-01-01T00:00:00Z");
    check_time(1767225600000, "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z");
    check_time(1767225600500, "2026-01-01T00:00:00.5Z", "2026-01-01T00:00:00Z");
    check_time(1767225600120, "2026-01-01T00:00:00.12Z", "2026-01-01T00:00:00Z");
    check_time(1767225600007, "2026-01-01T00:00:00.007Z", "2026-01-01T00:00:00Z");
    check_time(-1500, "1969-12-31T23:59:58.5Z", "1969-12-31T23:59:58Z");
    check_time(INT64_MIN, "0001-01-01T00:00:00Z", "0001-01-01T00:00:00Z");
    check_time(INT64_MAX, "0001-01-01T00:00:00Z", "0001-01-01T00:00:00Z");
    char small[8];
    assert_int_equal(gw_format_rfc3339(0, small, sizeof small), 7);   /* truncated, terminated */
    assert_string_equal(small, "1970-01");
    struct gw_buf b;
    gw_buf_init(&b, 0);
    assert_int_equal(gw_json_time(&b, 1767225600250), GW_OK);
    assert_int_equal(gw_json_cstr(&b, NULL), GW_OK);
    assert_int_equal(gw_json_cstr(&b, "<a>"), GW_OK);
    assert_int_equal(b.len, strlen("\"2026-01-01T00:00:00.25Z\"\"\"\"\\u003ca\\u003e\""));
    assert_memory_equal(b.data, "\"2026-01-01T00:00:00.25Z\"\"\"\"\\u003ca\\u003e\"", b.len);
    gw_buf_free(&b);
}

static void test_json_params_parse(void **state)
{
    struct gw_params p;
    const struct gw_param *q;
    (void)state;
    gw_params_init(&p);
    const char *s = "query=up%7Bjob%3D%22a+b%22%7D&match%5B%5D=x&match[]=y&empty=&flag&&time=1.5";
    assert_int_equal(gw_params_parse(&p, s, strlen(s)), GW_OK);
    assert_int_equal(p.n, 6);
    q = gw_params_get(&p, "query");
    assert_non_null(q);
    assert_string_equal(q->val, "up{job=\"a b\"}");
    assert_string_equal(p.v[1].key, "match[]");
    assert_string_equal(p.v[1].val, "x");
    assert_string_equal(p.v[2].key, "match[]");
    assert_string_equal(p.v[2].val, "y");
    q = gw_params_get(&p, "empty");
    assert_non_null(q);
    assert_int_equal(q->val_len, 0);
    q = gw_params_get(&p, "flag");
    assert_non_null(q);
    assert_string_equal(q->val, "");
    assert_null(gw_params_get(&p, "nope"));
    /* %00 decodes to a byte; the length says so. */
    assert_int_equal(gw_params_parse(&p, "z=a%00b", 7), GW_OK);
    q = gw_params_get(&p, "z");
    assert_int_equal(q->val_len, 3);
    gw_params_free(&p);

    gw_params_init(&p);
    assert_int_equal(gw_params_parse(&p, "a=%zz", 5), GW_EPARSE);
    assert_int_equal(gw_params_parse(&p, "a=%4", 4), GW_EPARSE);
    assert_int_equal(gw_params_parse(&p, "a=%", 3), GW_EPARSE);
    gw_params_free(&p);
}

static void test_json_parse_time(void **state)
{
    int64_t t = 0;
    (void)state;
    assert_int_equal(gw_parse_time_ms("1435781451.781", &t), GW_OK);
    assert_int_equal(t, 1435781451781);
    assert_int_equal(gw_parse_time_ms("1435781451", &t), GW_OK);
    assert_int_equal(t, 1435781451000);
    assert_int_equal(gw_parse_time_ms("4", &t), GW_OK);
    assert_int_equal(t, 4000);
    assert_int_equal(gw_parse_time_ms("-1.5", &t), GW_OK);
    assert_int_equal(t, -1500);
    assert_int_equal(gw_parse_time_ms("2015-07-01T20:10:51.781Z", &t), GW_OK);
    assert_int_equal(t, 1435781451781);
    assert_int_equal(gw_parse_time_ms("2015-07-01T22:10:51.781+02:00", &t), GW_OK);
    assert_int_equal(t, 1435781451781);
    assert_int_equal(gw_parse_time_ms("2015-07-01T20:10:51.781123456Z", &t), GW_OK);
    assert_int_equal(t, 1435781451781);
    assert_int_equal(gw_parse_time_ms("2015-07-01T15:10:51-05:00", &t), GW_OK);
    assert_int_equal(t, 1435781451000);
    assert_int_equal(gw_parse_time_ms("1970-01-01T00:00:00Z", &t), GW_OK);
    assert_int_equal(t, 0);
    assert_int_equal(gw_parse_time_ms("2000-02-29T00:00:00Z", &t), GW_OK);
    assert_int_equal(t, 951782400000);
    assert_int_equal(gw_parse_time_ms("2015-02-29T00:00:00Z", &t), GW_EPARSE);
    assert_int_equal(gw_parse_time_ms("2015-07-01T20:10:51", &t), GW_EPARSE);
    assert_int_equal(gw_parse_time_ms("2015-07-01 20:10:51Z", &t), GW_EPARSE);
    assert_int_equal(gw_parse_time_ms("abc", &t), GW_EPARSE);
    assert_int_equal(gw_parse_time_ms("", &t), GW_EPARSE);
    assert_int_equal(gw_parse_time_ms("NaN", &t), GW_EPARSE);
    assert_int_equal(gw_parse_time_ms("Inf", &t), GW_EPARSE);
    assert_int_equal(gw_parse_time_ms("1e300", &t), GW_EPARSE);
    assert_int_equal(gw_parse_time_ms("12x", &t), GW_EPARSE);
}

static void test_json_parse_step(void **state)
{
    int64_t d = 0;
    (void)state;
    assert_int_equal(gw_parse_step_ms("15", &d), GW_OK);
    assert_int_equal(d, 15000);
    assert_int_equal(gw_parse_step_ms("0.5", &d), GW_OK);
    assert_int_equal(d, 500);
    assert_int_equal(gw_parse_step_ms("1m30s", &d), GW_OK);
    assert_int_equal(d, 90000);
    assert_int_equal(gw_parse_step_ms("5m", &d), GW_OK);
    assert_int_equal(d, 300000);
    assert_int_equal(gw_parse_step_ms("-10", &d), GW_OK);
    assert_int_equal(d, -10000);
    assert_int_equal(gw_parse_step_ms("", &d), GW_EPARSE);
    assert_int_equal(gw_parse_step_ms("five", &d), GW_EPARSE);
    assert_int_equal(gw_parse_step_ms("1e300", &d), GW_EPARSE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_float_go_table),
        cmocka_unit_test(test_json_float_round_trips),
        cmocka_unit_test(test_json_timestamps),
        cmocka_unit_test(test_json_escaping),
        cmocka_unit_test(test_json_values_and_labels),
        cmocka_unit_test(test_json_numbers_and_times),
        cmocka_unit_test(test_json_params_parse),
        cmocka_unit_test(test_json_parse_time),
        cmocka_unit_test(test_json_parse_step),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
