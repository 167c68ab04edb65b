/* test_promql_selector.c - series selectors in text form (match[] and
 * friends) through the PromQL parser: what they match, the errors for
 * what is not a series selector, and random mutations that must never
 * crash or leak. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/labels.h"
#include "gpuwatch/matcher.h"
#include "gpuwatch/promql.h"

static uint8_t *canon_job(const char *job, size_t *len)
{
    struct gw_label ls[2] = { { "__name__", 8, "up", 2 }, { "job", 3, job, job ? (uint32_t)strlen(job) : 0 } };
    size_t n = job ? 2 : 1;
    assert_int_equal(gw_labels_normalize(ls, n, NULL), GW_OK);
    uint8_t *b = malloc(gw_labels_encoded_size(ls, n));
    assert_non_null(b);
    *len = gw_labels_encode(ls, n, b);
    return b;
}

struct want_m {
    enum gw_match_type t;
    const char *name, *value;
    size_t value_len; /* 0 = strlen(value) */
};

struct sel_ok {
    const char *sel;
    size_t n;
    struct want_m m[5];
};

static void test_promql_selector_valid(void **state)
{
    (void)state;
    static const struct sel_ok cases[] = {
        { "up", 1, { { GW_MATCH_EQ, "__name__", "up", 0 } } },
        { "up{}", 1, { { GW_MATCH_EQ, "__name__", "up", 0 } } },
        { "  up \t{ }\n", 1, { { GW_MATCH_EQ, "__name__", "up", 0 } } },
        { "node:cpu:rate5m", 1, { { GW_MATCH_EQ, "__name__", "node:cpu:rate5m", 0 } } },
        { "{a=\"b\"}", 1, { { GW_MATCH_EQ, "a", "b", 0 } } },
        { "metric{a=\"b\",c!=\"d\",e=~\"f.*\",g!~\"h\"}", 5,
          { { GW_MATCH_EQ, "__name__", "metric", 0 }, { GW_MATCH_EQ, "a", "b", 0 },
            { GW_MATCH_NEQ, "c", "d", 0 }, { GW_MATCH_RE, "e", "f.*", 0 }, { GW_MATCH_NRE, "g", "h", 0 } } },
        { "up{a=\"b\",}", 2, { { GW_MATCH_EQ, "__name__", "up", 0 }, { GW_MATCH_EQ, "a", "b", 0 } } },
        { "up { a = \"b\" , c =~ 'd' , }", 3,
          { { GW_MATCH_EQ, "__name__", "up", 0 }, { GW_MATCH_EQ, "a", "b", 0 }, { GW_MATCH_RE, "c", "d", 0 } } },
        { "up{\n  job=\"x\"\n}", 2, { { GW_MATCH_EQ, "__name__", "up", 0 }, { GW_MATCH_EQ, "job", "x", 0 } } },
        { "{\"my.metric\", \"a.b\"=\"x\"}", 2,
          { { GW_MATCH_EQ, "__name__", "my.metric", 0 }, { GW_MATCH_EQ, "a.b", "x", 0 } } },
        { "{\"a.b\"=\"x\", 'my.metric'}", 2,
          { { GW_MATCH_EQ, "__name__", "my.metric", 0 }, { GW_MATCH_EQ, "a.b", "x", 0 } } },
        { "{`raw name`}", 1, { { GW_MATCH_EQ, "__name__", "raw name", 0 } } },
        /* two bare names inside the braces: two __name__ matchers, as in Prometheus 3 (matches nothing) */
        { "{\"a\", \"b\"}", 2, { { GW_MATCH_EQ, "__name__", "a", 0 }, { GW_MATCH_EQ, "__name__", "b", 0 } } },
        { "{__name__=\"a\", \"b\"}", 2, { { GW_MATCH_EQ, "__name__", "a", 0 }, { GW_MATCH_EQ, "__name__", "b", 0 } } },
        { "{__name__=\"up\"}", 1, { { GW_MATCH_EQ, "__name__", "up", 0 } } },
        { "{__name__=~\"up|down\", __name__!=\"down\"}", 2,
          { { GW_MATCH_RE, "__name__", "up|down", 0 }, { GW_MATCH_NEQ, "__name__", "down", 0 } } },
        { "{a=~\".+\"}", 1, { { GW_MATCH_RE, "a", ".+", 0 } } },
        { "{a!=\"\"}", 1, { { GW_MATCH_NEQ, "a", "", 0 } } },
        { "up{a=\"\"}", 2, { { GW_MATCH_EQ, "__name__", "up", 0 }, { GW_MATCH_EQ, "a", "", 0 } } },
        { "{a=\"\\n\\t\\\\\\\"x\\a\\b\\f\\r\\v\"}", 1, { { GW_MATCH_EQ, "a", "\n\t\\\"x\a\b\f\r\v", 0 } } },
        { "{a='it\\'s \"q\"'}", 1, { { GW_MATCH_EQ, "a", "it's \"q\"", 0 } } },
        { "{a=`\\n\"'`}", 1, { { GW_MATCH_EQ, "a", "\\n\"'", 0 } } },
        { "{a=`multi\nline`}", 1, { { GW_MATCH_EQ, "a", "multi\nline", 0 } } },
        { "{a=\"\\x41\\101\\u00e9\\U0001F600\"}", 1,
          { { GW_MATCH_EQ, "a", "AA\xc3\xa9\xf0\x9f\x98\x80", 0 } } },
        { "{a=\"\\000x\"}", 1, { { GW_MATCH_EQ, "a", "\0x", 2 } } },
        { "{a=\"\xc3\xa9t\xc3\xa9\"}", 1, { { GW_MATCH_EQ, "a", "\xc3\xa9t\xc3\xa9", 0 } } },
        { "DCGM_FI_DEV_XID_ERRORS{Hostname=~\"gpu-node-[0-9]+\",gpu!=\"7\"}", 3,
          { { GW_MATCH_EQ, "__name__", "DCGM_FI_DEV_XID_ERRORS", 0 },
            { GW_MATCH_RE, "Hostname", "gpu-node-[0-9]+", 0 }, { GW_MATCH_NEQ, "gpu", "7", 0 } } },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct gw_matcher out[8];
        struct gw_error err;
        size_t n = 99;
        gw_error_clear(&err);
        int rc = gw_pq_parse_selector(cases[i].sel, strlen(cases[i].sel), out, 8, &n, &err);
        if (rc != GW_OK)
            fail_msg("case %zu `%s`: rc=%d %s", i, cases[i].sel, rc, err.msg);
        if (n != cases[i].n)
            fail_msg("case %zu: %zu matchers, want %zu", i, n, cases[i].n);
        for (size_t k = 0; k < n; k++) {
            const struct want_m *w = &cases[i].m[k];
            size_t vl = w->value_len ? w->value_len : strlen(w->value);
            if (out[k].type != w->t || out[k].name_len != strlen(w->name) ||
                memcmp(out[k].name, w->name, out[k].name_len) != 0 || out[k].value_len != vl ||
                memcmp(out[k].value, w->value, vl) != 0)
                fail_msg("case %zu matcher %zu: got %d %s \"%s\"", i, k, out[k].type, out[k].name,
                         out[k].value);
        }
        for (size_t k = 0; k < n; k++)
            gw_matcher_free(&out[k]);
    }

    /* parsed matchers select the right series */
    struct gw_matcher out[4];
    size_t n;
    const char *sel = "up{job=~\"no.*\"}";
    assert_int_equal(gw_pq_parse_selector(sel, strlen(sel), out, 4, &n, NULL), GW_OK);
    size_t wl, ol;
    uint8_t *w = canon_job("node", &wl), *o = canon_job("api", &ol);
    assert_int_equal(gw_matchers_match_labels(out, n, w, wl), 1);
    assert_int_equal(gw_matchers_match_labels(out, n, o, ol), 0);
    for (size_t k = 0; k < n; k++)
        gw_matcher_free(&out[k]);
    free(w);
    free(o);
}

struct sel_bad {
    const char *sel;
    int rc;
    const char *msg;
};

static void test_promql_selector_invalid(void **state)
{
    (void)state;
    static const struct sel_bad cases[] = {
        { "", GW_EPARSE, "1:1: parse error: no expression found in input" },
        { "   ", GW_EPARSE, "no expression found in input" },
        { "{}", GW_EPARSE, "vector selector must contain at least one non-empty matcher" },
        { "{a=\"\"}", GW_EPARSE, "vector selector must contain at least one non-empty matcher" },
        { "{a=~\".*\"}", GW_EPARSE, "at least one non-empty matcher" },
        { "{a!~\".+\", b!=\"x\"}", GW_EPARSE, "at least one non-empty matcher" },
        { "up{__name__=\"x\"}", GW_EPARSE, "metric name must not be set twice: \"up\" or \"x\"" },
        { "up{__name__=~\"x.*\"}", GW_EPARSE, "metric name must not be set twice" },
        { "up{\"x\"}", GW_EPARSE, "metric name must not be set twice: \"up\" or \"x\"" },
        { "up{a=\"b\"", GW_EPARSE, "1:9: parse error: unexpected end of input inside braces" },
        { "up{a}", GW_EPARSE, "1:5: parse error: unexpected \"}\" in label matching, expected label matching operator" },
        { "up{a=b}", GW_EPARSE, "1:6: parse error: unexpected identifier \"b\" in label matching, expected string" },
        { "up{a==\"b\"}", GW_EPARSE, "1:6: parse error: unexpected \"=\" in label matching, expected string" },
        { "up{a=\"b\" c=\"d\"}", GW_EPARSE, "1:10: parse error: unexpected identifier \"c\" in label matching, expected \",\" or \"}\"" },
        { "up{1a=\"b\"}", GW_EPARSE, "1:4: parse error: unexpected character inside braces: '1'" },
        { "up{,}", GW_EPARSE, "unexpected \",\" in label matching, expected identifier or \"}\"" },
        { "up{a.b=\"x\"}", GW_EPARSE, "unexpected character inside braces: '.'" },
        { "up{a=\"b}", GW_EPARSE, "1:6: parse error: unterminated quoted string" },
        { "up{a=\"b\nc\"}", GW_EPARSE, "unterminated quoted string" },
        { "up{a=`b}", GW_EPARSE, "unterminated raw string" },
        { "up{a=\"\\q\"}", GW_EPARSE, "1:6: parse error: unknown escape sequence U+0071 'q'" },
        { "up{a='\\\"'}", GW_EPARSE, "unknown escape sequence U+0022 '\"'" },
        { "up{a=\"\\x4\"}", GW_EPARSE, "illegal character U+0022 '\"' in escape sequence" },
        { "up{a=\"\\18\"}", GW_EPARSE, "illegal character U+0038 '8' in escape sequence" },
        { "up{a=\"\\400\"}", GW_EPARSE, "invalid Unicode code point" },
        { "up{a=\"\\uD800\"}", GW_EPARSE, "invalid Unicode code point" },
        { "up{a=\"\\U00110000\"}", GW_EPARSE, "invalid Unicode code point" },
        { "up{a=\"\\", GW_EPARSE, "escape sequence not terminated" },
        { "up{a=~\"(\"}", GW_EPARSE, "1:4: parse error: invalid regular expression \"(\"" },
        { "up{a=~\"(a)\\\\1\"}", GW_EPARSE, "backreferences are not supported" },
        { "up{a=~\"\\xff\"}", GW_EPARSE, "invalid regular expression" },
        { "up b", GW_EPARSE, "1:4: parse error: unexpected identifier \"b\"" },
        { "up[5m]", GW_EPARSE, "expected a series selector, got a range selector" },
        { "up}", GW_EPARSE, "1:3: parse error: unexpected character: '}'" },
        { "1up", GW_EPARSE, "1:1: parse error: bad number or duration syntax: \"1\"" },
        { "{\"\"=\"x\"}", GW_EPARSE, "empty label or metric name" },
        { "{\"\"}", GW_EPARSE, "empty label or metric name" },
        { "{\"\\xff\"=\"x\"}", GW_EPARSE, "not valid UTF-8" },
        { "up{a=\"x\"}{b=\"y\"}", GW_EPARSE, "1:10: parse error: unexpected \"{\"" },
        { "{a=\"1\",b=\"2\",c=\"3\",d=\"4\",e=\"5\"}", GW_ELIMIT, "too many matchers" },
        /* valid PromQL, but not a series selector */
        { "rate(up[5m])", GW_EPARSE, "expected a series selector, got a function call" },
        { "sum(up)", GW_EPARSE, "got an aggregation" },
        { "(up)", GW_EPARSE, "got a parenthesized expression" },
        { "up + 1", GW_EPARSE, "got a binary expression" },
        { "up offset 5m", GW_EPARSE, "no offset or @ modifier" },
        { "up @ 100", GW_EPARSE, "no offset or @ modifier" },
        { "1", GW_EPARSE, "got a number" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct gw_matcher out[4];
        struct gw_error err;
        size_t n = 77;
        gw_error_clear(&err);
        int rc = gw_pq_parse_selector(cases[i].sel, strlen(cases[i].sel), out, 4, &n, &err);
        if (rc != cases[i].rc || strstr(err.msg, cases[i].msg) == NULL)
            fail_msg("case %zu `%s`: rc=%d msg=\"%s\", want %d \"%s\"", i, cases[i].sel, rc, err.msg,
                     cases[i].rc, cases[i].msg);
        assert_int_equal(n, 77); /* untouched on failure */
    }
    /* size cap */
    size_t big = GW_SELECTOR_MAX_BYTES + 1;
    char *s = malloc(big);
    assert_non_null(s);
    memset(s, 'a', big);
    struct gw_matcher out[1];
    size_t n;
    struct gw_error err;
    assert_int_equal(gw_pq_parse_selector(s, big, out, 1, &n, &err), GW_ETOOLARGE);
    /* a long but legal metric name */
    assert_int_equal(gw_pq_parse_selector(s, big - 1, out, 1, &n, &err), GW_OK);
    assert_int_equal(out[0].value_len, big - 1);
    gw_matcher_free(&out[0]);
    free(s);
}

static void test_promql_selector_garbage(void **state)
{
    (void)state;
    /* Random mutations of a valid selector never crash or leak. */
    static const char base[] = "gpu_temp{Hostname=~\"n[0-9]+\",gpu!='7',\"a.b\"=`x`,mode!~\"i|\\u00e9\",}";
    static const char alphabet[] = "{}\"'`=!~,\\ .*+()[]|aZ_:\n0u";
    srand(777);
    for (int iter = 0; iter < 20000; iter++) {
        char s[sizeof base + 8];
        size_t len = sizeof base - 1;
        memcpy(s, base, len);
        int edits = 1 + rand() % 4;
        for (int e = 0; e < edits; e++) {
            size_t pos = (size_t)rand() % len;
            int op = rand() % 3;
            if (op == 0) {
                s[pos] = alphabet[rand() % (int)(sizeof alphabet - 1)];
            } else if (op == 1 && len > 1) {
                memmove(s + pos, s + pos + 1, len - pos - 1);
                len--;
            } else {
                len = pos + 1; /* truncate */
            }
        }
        struct gw_matcher out[8];
        size_t n = 0;
        struct gw_error err;
        gw_error_clear(&err);
        int rc = gw_pq_parse_selector(s, len, out, 8, &n, &err);
        if (rc == GW_OK) {
            assert_true(n >= 1 && n <= 8);
            for (size_t k = 0; k < n; k++)
                gw_matcher_free(&out[k]);
        } else {
            assert_true(rc == GW_EPARSE || rc == GW_EINVAL || rc == GW_ELIMIT);
            assert_true(err.msg[0] != '\0');
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_promql_selector_valid),
        cmocka_unit_test(test_promql_selector_invalid),
        cmocka_unit_test(test_promql_selector_garbage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
