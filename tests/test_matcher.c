/* test_matcher.c - label matchers (= != =~ !~ with Prometheus regex
 * semantics on PCRE2) and the series selector parser. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuwatch/labels.h"
#include "gpuwatch/matcher.h"

static struct gw_matcher mk(enum gw_match_type t, const char *name, const char *value)
{
    struct gw_matcher m;
    struct gw_error err;
    gw_error_clear(&err);
    int rc = gw_matcher_init(&m, t, name, strlen(name), value, strlen(value), &err);
    if (rc != GW_OK)
        fail_msg("matcher %s /%s/: rc=%d %s", name, value, rc, err.msg);
    return m;
}

static int re_match(const char *pattern, const char *subject)
{
    struct gw_matcher m = mk(GW_MATCH_RE, "l", pattern);
    int r = gw_matcher_matches(&m, subject, strlen(subject));
    gw_matcher_free(&m);
    return r;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Canonical bytes for {__name__="up", job=<job>} (job omitted when NULL). */
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

static void test_matcher_types(void **state)
{
    (void)state;
    struct gw_matcher eq = mk(GW_MATCH_EQ, "job", "node");
    struct gw_matcher ne = mk(GW_MATCH_NEQ, "job", "node");
    struct gw_matcher re = mk(GW_MATCH_RE, "job", "no.e|api");
    struct gw_matcher nre = mk(GW_MATCH_NRE, "job", "no.e|api");
    assert_null(eq.re);
    assert_non_null(re.re);
    assert_string_equal(eq.name, "job");
    assert_string_equal(re.value, "no.e|api");

    const char *subj[] = { "node", "nope", "api", "nodes", "", "Node" };
    const int want_eq[] = { 1, 0, 0, 0, 0, 0 };
    const int want_re[] = { 1, 1, 1, 0, 0, 0 };
    for (size_t i = 0; i < 6; i++) {
        size_t l = strlen(subj[i]);
        assert_int_equal(gw_matcher_matches(&eq, subj[i], l), want_eq[i]);
        assert_int_equal(gw_matcher_matches(&ne, subj[i], l), !want_eq[i]);
        assert_int_equal(gw_matcher_matches(&re, subj[i], l), want_re[i]);
        assert_int_equal(gw_matcher_matches(&nre, subj[i], l), !want_re[i]);
    }
    /* values with embedded NUL compare by length */
    struct gw_matcher z;
    assert_int_equal(gw_matcher_init(&z, GW_MATCH_EQ, "a", 1, "x\0y", 3, NULL), GW_OK);
    assert_int_equal(gw_matcher_matches(&z, "x\0y", 3), 1);
    assert_int_equal(gw_matcher_matches(&z, "x", 1), 0);
    gw_matcher_free(&z);

    /* matches_empty */
    assert_int_equal(gw_matcher_matches_empty(&eq), 0);
    assert_int_equal(gw_matcher_matches_empty(&ne), 1);
    assert_int_equal(gw_matcher_matches_empty(&re), 0);
    assert_int_equal(gw_matcher_matches_empty(&nre), 1);

    /* bad type */
    struct gw_error err;
    assert_int_equal(gw_matcher_init(&z, (enum gw_match_type)7, "a", 1, "b", 1, &err), GW_EINVAL);
    assert_null(z.name);

    gw_matcher_free(&eq);
    gw_matcher_free(&ne);
    gw_matcher_free(&re);
    gw_matcher_free(&nre);
    gw_matcher_free(&nre); /* idempotent */
    gw_matcher_free(NULL);
}

static void test_matcher_absent_label(void **state)
{
    (void)state;
    size_t wl, al;
    uint8_t *with = canon_job("node", &wl);
    uint8_t *absent = canon_job(NULL, &al);
    struct {
        enum gw_match_type t;
        const char *v;
        int with, absent;
    } cases[] = {
        { GW_MATCH_EQ, "node", 1, 0 },  { GW_MATCH_EQ, "", 0, 1 },
        { GW_MATCH_NEQ, "node", 0, 1 }, { GW_MATCH_NEQ, "", 1, 0 },
        { GW_MATCH_RE, ".*", 1, 1 },    { GW_MATCH_RE, ".+", 1, 0 },
        { GW_MATCH_RE, "n.*", 1, 0 },   { GW_MATCH_RE, "|node", 1, 1 },
        { GW_MATCH_NRE, ".+", 0, 1 },   { GW_MATCH_NRE, "x", 1, 1 },
        { GW_MATCH_NRE, ".*", 0, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct gw_matcher m = mk(cases[i].t, "job", cases[i].v);
        int w = gw_matchers_match_labels(&m, 1, with, wl);
        int a = gw_matchers_match_labels(&m, 1, absent, al);
        if (w != cases[i].with || a != cases[i].absent)
            fail_msg("case %zu: with=%d absent=%d", i, w, a);
        gw_matcher_free(&m);
    }
    /* conjunction of several matchers, __name__ included */
    struct gw_matcher ms[2] = { mk(GW_MATCH_EQ, "__name__", "up"), mk(GW_MATCH_RE, "job", "no.*") };
    assert_int_equal(gw_matchers_match_labels(ms, 2, with, wl), 1);
    assert_int_equal(gw_matchers_match_labels(ms, 2, absent, al), 0);
    assert_int_equal(gw_matchers_match_labels(ms, 0, absent, al), 1);
    gw_matcher_free(&ms[0]);
    gw_matcher_free(&ms[1]);
    free(with);
    free(absent);
}

static void test_matcher_anchoring(void **state)
{
    (void)state;
    assert_int_equal(re_match("a", "a"), 1);
    assert_int_equal(re_match("a", "ba"), 0);
    assert_int_equal(re_match("a", "ab"), 0);
    assert_int_equal(re_match("a.", "abc"), 0);
    assert_int_equal(re_match("b", "abc"), 0);
    /* alternation is anchored as a whole group */
    assert_int_equal(re_match("a|b", "a"), 1);
    assert_int_equal(re_match("a|b", "b"), 1);
    assert_int_equal(re_match("a|b", "ab"), 0);
    assert_int_equal(re_match("a|b", "xa"), 0);
    assert_int_equal(re_match("a|b", "bx"), 0);
    assert_int_equal(re_match("a|ab", "ab"), 1);
    assert_int_equal(re_match("idle|iowait", "iowait"), 1);
    assert_int_equal(re_match("idle|iowait", "idlex"), 0);
    /* explicit anchors are harmless */
    assert_int_equal(re_match("^a$", "a"), 1);
    /* dotall: `.` matches newline; `$` does not match before a final \n */
    assert_int_equal(re_match("a.b", "a\nb"), 1);
    assert_int_equal(re_match(".*", "x\ny"), 1);
    assert_int_equal(re_match("x.*", "x\ny\n"), 1);
    assert_int_equal(re_match("a$", "a\n"), 0);
    assert_int_equal(re_match("a", "a\n"), 0);
    /* the empty pattern matches only the empty string */
    assert_int_equal(re_match("", ""), 1);
    assert_int_equal(re_match("", "a"), 0);
    /* RE2 features that PCRE2 shares */
    assert_int_equal(re_match("(?i)abc", "ABC"), 1);
    assert_int_equal(re_match("(?i:a)b", "Ab"), 1);
    assert_int_equal(re_match("(?i:a)b", "AB"), 0);
    assert_int_equal(re_match("(?P<x>a)+", "aaa"), 1);
    assert_int_equal(re_match("[[:digit:]]+", "0123"), 1);
    assert_int_equal(re_match("[]a]+", "]a]"), 1);
    assert_int_equal(re_match("\\Q(a)+\\E", "(a)+"), 1);
    assert_int_equal(re_match("a{2,3}", "aaa"), 1);
    assert_int_equal(re_match("a{2,3}", "aaaa"), 0);
    assert_int_equal(re_match("\\d+\\.\\d+", "10.5"), 1);
    assert_int_equal(re_match("caf\xc3\xa9.", "caf\xc3\xa9\xe2\x82\xac"), 1); /* UTF-8 aware `.` */
    assert_int_equal(re_match("a.c", "a\xe2\x82\xac" "c"), 1);
    /* a subject that is not UTF-8 matches neither =~ nor !~ */
    assert_int_equal(re_match("a.c", "a\xff" "c"), 0);
    struct gw_matcher nm = mk(GW_MATCH_NRE, "l", "a.c");
    assert_int_equal(gw_matcher_matches(&nm, "a\xff" "c", 3), 0);
    assert_int_equal(gw_matcher_matches(&nm, "abd", 3), 1);
    gw_matcher_free(&nm);
}

static void test_matcher_literal_shortcut(void **state)
{
    (void)state;
    struct gw_matcher lit = mk(GW_MATCH_RE, "l", "ab\xc3\xa9");
    struct gw_matcher grp = mk(GW_MATCH_RE, "l", "(?:ab\xc3\xa9)");
    struct gw_matcher all = mk(GW_MATCH_RE, "l", ".*");
    struct gw_matcher all_re = mk(GW_MATCH_RE, "l", "(?:.*)");
    struct gw_matcher ne = mk(GW_MATCH_RE, "l", ".+");
    struct gw_matcher ne_re = mk(GW_MATCH_RE, "l", "(?:.+)");
    struct gw_matcher empty = mk(GW_MATCH_RE, "l", "");
    struct gw_matcher empty_re = mk(GW_MATCH_RE, "l", "(?:)");
    assert_true(lit.re_literal);
    assert_false(grp.re_literal);
    assert_true(all.re_match_all);
    assert_false(all_re.re_match_all);
    assert_true(ne.re_non_empty);
    assert_true(empty.re_literal);

    /* all strings of length 0..4 over {a, b, é, \n} */
    static const char *alpha[] = { "a", "b", "\xc3\xa9", "\n" };
    size_t checked = 0, lit_hits = 0;
    for (unsigned len = 0; len <= 4; len++) {
        unsigned total = 1;
        for (unsigned k = 0; k < len; k++)
            total *= 4;
        for (unsigned code = 0; code < total; code++) {
            char s[32];
            size_t sl = 0;
            unsigned c = code;
            for (unsigned k = 0; k < len; k++) {
                const char *piece = alpha[c % 4];
                c /= 4;
                memcpy(s + sl, piece, strlen(piece));
                sl += strlen(piece);
            }
            int a = gw_matcher_matches(&lit, s, sl), b = gw_matcher_matches(&grp, s, sl);
            if (a != b)
                fail_msg("literal %d vs regex %d on \"%.*s\"", a, b, (int)sl, s);
            lit_hits += (size_t)a;
            assert_int_equal(gw_matcher_matches(&all, s, sl), gw_matcher_matches(&all_re, s, sl));
            assert_int_equal(gw_matcher_matches(&ne, s, sl), gw_matcher_matches(&ne_re, s, sl));
            assert_int_equal(gw_matcher_matches(&empty, s, sl), gw_matcher_matches(&empty_re, s, sl));
            checked++;
        }
    }
    assert_int_equal(checked, 1 + 4 + 16 + 64 + 256);
    assert_int_equal(lit_hits, 1);
    gw_matcher_free(&lit);
    gw_matcher_free(&grp);
    gw_matcher_free(&all);
    gw_matcher_free(&all_re);
    gw_matcher_free(&ne);
    gw_matcher_free(&ne_re);
    gw_matcher_free(&empty);
    gw_matcher_free(&empty_re);
}

static void test_matcher_invalid_regex(void **state)
{
    (void)state;
    static const struct {
        const char *pattern;
        const char *msg;
    } cases[] = {
        { "a(", "missing closing parenthesis" },
        { "[a", "missing terminating ]" },
        { "*a", "quantifier does not follow a repeatable item" },
        { "a\\", "\\ at end of pattern" },
        { "\xff", "UTF-8 error" },
        { "(a)\\1", "backreferences are not supported" },
        { "(?P<n>a)(?P=n)", "backreferences are not supported" },
        { "(?<n>a)\\k<n>", "backreferences are not supported" },
        { "(a)\\g1", "backreferences are not supported" },
        { "(?=a)a", "lookahead assertions are not supported" },
        { "(?!a)b", "lookahead assertions are not supported" },
        { "(?<=a)b", "lookbehind assertions are not supported" },
        { "(?<!a)b", "lookbehind assertions are not supported" },
        { "(?>a+)b", "atomic groups are not supported" },
        { "a++", "possessive quantifiers are not supported" },
        { "a*+b", "possessive quantifiers are not supported" },
        { "a{2}+", "possessive quantifiers are not supported" },
        { "(*ACCEPT)a", "(*VERB) constructs are not supported" },
        { "(*LIMIT_MATCH=1)a", "(*VERB) constructs are not supported" },
        { "(a|(?R))", "recursion is not supported" },
        { "(a)(?1)", "recursion is not supported" },
        { "(?(1)a|b)", "conditional groups are not supported" },
        { "(?x) a", "unsupported group syntax" },
        { "a\\Cb", "\\C is not supported" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct gw_matcher m;
        struct gw_error err;
        gw_error_clear(&err);
        int rc = gw_matcher_init(&m, GW_MATCH_RE, "l", 1, cases[i].pattern, strlen(cases[i].pattern), &err);
        if (rc != GW_EPARSE || strstr(err.msg, cases[i].msg) == NULL ||
            strstr(err.msg, "invalid regular expression") == NULL)
            fail_msg("case %zu /%s/: rc=%d msg=\"%s\", want \"%s\"", i, cases[i].pattern, rc,
                     err.msg, cases[i].msg);
        assert_null(m.re);
        assert_null(m.name);
        gw_matcher_free(&m);
    }
    /* escaped look-alikes and class contents are fine */
    assert_int_equal(re_match("\\(\\?=a\\)", "(?=a)"), 1);
    assert_int_equal(re_match("[\\1]", "\x01"), 1);
    assert_int_equal(re_match("a+?b", "aab"), 1);
    struct gw_matcher oct = mk(GW_MATCH_RE, "l", "\\101\\0"); /* octal escapes */
    assert_int_equal(gw_matcher_matches(&oct, "A\0", 2), 1);
    assert_int_equal(gw_matcher_matches(&oct, "A", 1), 0);
    gw_matcher_free(&oct);
    assert_int_equal(re_match("\\101", "A"), 1);
    assert_int_equal(re_match("\\+\\+", "++"), 1);
    assert_int_equal(re_match("[+*?]+", "+*?"), 1);
}

static void test_matcher_pathological(void **state)
{
    (void)state;
    const size_t n = 50000;
    char *s = malloc(n + 2);
    assert_non_null(s);
    memset(s, 'a', n);
    s[n] = 'b';
    s[n + 1] = '\0';
    static const char *patterns[] = { "(a+)+$", "(a|aa)+", "(a*)*c", "(a|a)*", "(.*a){12}" };
    static const int on_31_a[] = { 1, 1, 0, 1, 1 }; /* result on "aaa...a" (31 a) */
    for (size_t i = 0; i < sizeof patterns / sizeof patterns[0]; i++) {
        struct gw_matcher m = mk(GW_MATCH_RE, "l", patterns[i]);
        struct gw_matcher nm = mk(GW_MATCH_NRE, "l", patterns[i]);
        double t0 = now_s();
        /* "aaa...ab", 50001 bytes: never a match. !~ is true when the
         * engines decide it; for (a+)+$ at this length both give up and the
         * value matches neither (documented in matcher.h). */
        assert_int_equal(gw_matcher_matches(&m, s, n + 1), 0);
        int nre_long = gw_matcher_matches(&nm, s, n + 1);
        if (i != 0)
            assert_int_equal(nre_long, 1);
        /* 40 a's + b: an exponential search without limits, decided here */
        char shorts[42];
        memset(shorts, 'a', 40);
        shorts[40] = 'b';
        assert_int_equal(gw_matcher_matches(&m, shorts, 41), 0);
        assert_int_equal(gw_matcher_matches(&nm, shorts, 41), 1);
        assert_int_equal(gw_matcher_matches(&m, s, 31), on_31_a[i]);
        assert_int_equal(gw_matcher_matches(&nm, s, 31), !on_31_a[i]);
        double dt = now_s() - t0;
        if (dt > 5.0)
            fail_msg("/%s/ took %.2f s", patterns[i], dt);
        gw_matcher_free(&m);
        gw_matcher_free(&nm);
    }
    /* positive answers survive the fallback too */
    struct gw_matcher m = mk(GW_MATCH_RE, "l", "(a+)+");
    double t0 = now_s();
    assert_int_equal(gw_matcher_matches(&m, s, n), 1);
    assert_true(now_s() - t0 < 5.0);
    gw_matcher_free(&m);
    m = mk(GW_MATCH_RE, "l", "(a|aa)+b");
    assert_int_equal(gw_matcher_matches(&m, s, n + 1), 1);
    gw_matcher_free(&m);
    free(s);
}

/* ---- selector parser ---------------------------------------------------- */


static void test_matcher_capture_group(void **state)
{
    (void)state;
    struct gw_matcher m;
    struct gw_error err = {0};
    const char *g;
    size_t n;
    assert_int_equal(gw_matcher_init_capturing(&m, "node", 4, "(dgx[0-9]+)(\\..*)?:[0-9]+", strlen("(dgx[0-9]+)(\\..*)?:[0-9]+"), &err), GW_OK);
    assert_int_equal(gw_matcher_group(&m, "dgx013.cluster.example.com:9100", 31, &g, &n), 1);
    assert_int_equal(n, 6);
    assert_memory_equal(g, "dgx013", 6);
    assert_int_equal(gw_matcher_group(&m, "dgx7:9400", 9, &g, &n), 1);
    assert_int_equal(n, 4);
    assert_int_equal(gw_matcher_group(&m, "node7:9400", 10, &g, &n), 0);   /* no match: anchored */
    assert_int_equal(gw_matcher_matches(&m, "dgx7:9400", 9), 1);
    gw_matcher_free(&m);
    /* a label matcher has no groups to read */
    assert_int_equal(gw_matcher_init(&m, GW_MATCH_RE, "node", 4, "(dgx[0-9]+).*", 13, &err), GW_OK);
    assert_int_equal(gw_matcher_group(&m, "dgx1:9", 6, &g, &n), 0);
    gw_matcher_free(&m);
    /* RE2's rules still apply */
    assert_int_equal(gw_matcher_init_capturing(&m, "node", 4, "(a)\\1", 5, &err), GW_EPARSE);
}

/* Every group, for label_replace: offsets, unset groups, names, group 0. */
static void test_matcher_capture_groups(void **state)
{
    (void)state;
    struct gw_matcher m;
    struct gw_error err = {0};
    size_t ov[2 * 8];
    const char *pat = "source-(?P<n>value)-(x)?(.*)";
    assert_int_equal(gw_matcher_init_capturing(&m, "src", 3, pat, strlen(pat), &err), GW_OK);
    assert_int_equal(gw_matcher_group_count(&m), 4);
    assert_int_equal(gw_matcher_group_number(&m, "n", 1), 1);
    assert_int_equal(gw_matcher_group_number(&m, "nn", 2), -1);
    assert_int_equal(gw_matcher_group_number(&m, "", 0), -1);
    const char *v = "source-value-42";
    assert_int_equal(gw_matcher_groups(&m, v, strlen(v), ov, 8), 4);
    assert_int_equal(ov[0], 0);
    assert_int_equal(ov[1], 15);
    assert_int_equal(ov[2], 7);
    assert_int_equal(ov[3], 12);
    assert_true(ov[4] == GW_MATCHER_UNSET && ov[5] == GW_MATCHER_UNSET);   /* (x)? took no part */
    assert_int_equal(ov[6], 13);
    assert_int_equal(ov[7], 15);
    /* max_groups caps what is written */
    ov[2] = 99;
    assert_int_equal(gw_matcher_groups(&m, v, strlen(v), ov, 1), 1);
    assert_int_equal(ov[2], 99);
    assert_int_equal(gw_matcher_groups(&m, v, strlen(v), ov, 0), 0);
    /* anchored at both ends; an empty last group */
    assert_int_equal(gw_matcher_groups(&m, "xsource-value-1", 15, ov, 8), 0);
    assert_int_equal(gw_matcher_groups(&m, "source-value-", 13, ov, 8), 4);
    assert_int_equal(ov[6], 13);
    assert_int_equal(ov[7], 13);
    assert_int_equal(gw_matcher_groups(&m, "source-value-\xff", 14, ov, 8), 0);   /* not UTF-8 */
    gw_matcher_free(&m);
    /* the empty pattern matches only the empty value; group 0 only */
    assert_int_equal(gw_matcher_init_capturing(&m, "src", 3, "", 0, &err), GW_OK);
    assert_int_equal(gw_matcher_group_count(&m), 1);
    assert_int_equal(gw_matcher_groups(&m, "", 0, ov, 8), 1);
    assert_int_equal(ov[0], 0);
    assert_int_equal(ov[1], 0);
    assert_int_equal(gw_matcher_groups(&m, "a", 1, ov, 8), 0);
    gw_matcher_free(&m);
    /* a trailing group that took no part is not counted */
    assert_int_equal(gw_matcher_init_capturing(&m, "src", 3, "(a)|(b)", 7, &err), GW_OK);
    assert_int_equal(gw_matcher_group_count(&m), 3);
    assert_int_equal(gw_matcher_groups(&m, "a", 1, ov, 8), 2);
    assert_int_equal(gw_matcher_groups(&m, "b", 1, ov, 8), 3);
    assert_true(ov[2] == GW_MATCHER_UNSET);
    gw_matcher_free(&m);
    /* label matchers (no captures) give nothing */
    assert_int_equal(gw_matcher_init(&m, GW_MATCH_RE, "src", 3, "(a)", 3, &err), GW_OK);
    assert_int_equal(gw_matcher_group_count(&m), 0);
    assert_int_equal(gw_matcher_groups(&m, "a", 1, ov, 8), 0);
    gw_matcher_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matcher_capture_group),
        cmocka_unit_test(test_matcher_capture_groups),
        cmocka_unit_test(test_matcher_types),
        cmocka_unit_test(test_matcher_absent_label),
        cmocka_unit_test(test_matcher_anchoring),
        cmocka_unit_test(test_matcher_literal_shortcut),
        cmocka_unit_test(test_matcher_invalid_regex),
        cmocka_unit_test(test_matcher_pathological),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
