/* test_labels.c - label sets: normalize (sort + validation messages),
 * canonical encode/decode, lookup, ordering, hashing, locality. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/labels.h"

#define L(n, v) { (n), (uint32_t)(sizeof(n) - 1), (v), (uint32_t)(sizeof(v) - 1) }

static struct gw_label lab(const char *n, const char *v)
{
    struct gw_label l = { n, (uint32_t)strlen(n), v, (uint32_t)strlen(v) };
    return l;
}

/* Encodes ls (normalizing first) into a malloc'd buffer. */
static uint8_t *canon(struct gw_label *ls, size_t n, size_t *len)
{
    struct gw_error err;
    assert_int_equal(gw_labels_normalize(ls, n, &err), GW_OK);
    size_t sz = gw_labels_encoded_size(ls, n);
    uint8_t *b = malloc(sz ? sz : 1);
    assert_non_null(b);
    *len = gw_labels_encode(ls, n, b);
    assert_int_equal(*len, sz);
    return b;
}

static void test_labels_normalize_sorts(void **state)
{
    (void)state;
    struct gw_label ls[] = { L("zone", "a"), L("job", "node"), L("__name__", "up"),
                             L("instance", "h:1"), L("a", "x"), L("jobs", "y") };
    struct gw_error err;
    assert_int_equal(gw_labels_normalize(ls, 6, &err), GW_OK);
    const char *want[] = { "__name__", "a", "instance", "job", "jobs", "zone" };
    for (size_t i = 0; i < 6; i++) {
        assert_int_equal(ls[i].name_len, strlen(want[i]));
        assert_memory_equal(ls[i].name, want[i], ls[i].name_len);
    }
    /* value stays attached to its name */
    assert_memory_equal(ls[0].value, "up", 2);
    assert_memory_equal(ls[3].value, "node", 4);

    /* already sorted input is accepted unchanged */
    struct gw_label ok[] = { L("__name__", "node_cpu:rate5m"), L("cpu", "0"), L("mode", "idle") };
    assert_int_equal(gw_labels_normalize(ok, 3, NULL), GW_OK);
    assert_memory_equal(ok[1].name, "cpu", 3);

    /* UTF-8 values of every length class */
    struct gw_label u[] = { L("__name__", "m"), L("v", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 ok") };
    assert_int_equal(gw_labels_normalize(u, 2, &err), GW_OK);
}

struct norm_case {
    struct gw_label ls[4];
    size_t n;
    const char *msg;
};

static void test_labels_normalize_errors(void **state)
{
    (void)state;
    static const struct norm_case cases[] = {
        { { L("__name__", "up"), L("1abc", "x") }, 2, "invalid label name \"1abc\"" },
        { { L("__name__", "up"), L("a-b", "x") }, 2, "invalid label name \"a-b\"" },
        { { L("__name__", "up"), L("a:b", "x") }, 2, "invalid label name \"a:b\"" },
        { { L("__name__", "up"), L("job", "x"), L("job", "y") }, 3, "duplicate label name \"job\"" },
        { { L("gpu", ""), L("__name__", "up") }, 2, "empty value for label \"gpu\"" },
        { { L("job", "x") }, 1, "missing metric name (__name__)" },
        { { L("__name__", "") }, 1, "empty value for label \"__name__\"" },
        { { L("__name__", "1up") }, 1, "invalid metric name \"1up\"" },
        { { L("__name__", "up-down") }, 1, "invalid metric name \"up-down\"" },
        { { L("__name__", "up"), L("", "x") }, 2, "empty label name" },
        { { L("__name__", "up"), L("x", "\xc0\xaf") }, 2, "invalid UTF-8 in value of label \"x\"" },
        { { L("__name__", "up"), L("x", "\xe0\x80\xaf") }, 2, "invalid UTF-8 in value of label \"x\"" },
        { { L("__name__", "up"), L("x", "\xed\xa0\x80") }, 2, "invalid UTF-8 in value of label \"x\"" },
        { { L("__name__", "up"), L("x", "a\xe2\x82") }, 2, "invalid UTF-8 in value of label \"x\"" },
        { { L("__name__", "up"), L("x", "\xf4\x90\x80\x80") }, 2, "invalid UTF-8 in value of label \"x\"" },
        { { L("__name__", "up"), L("x", "\x80") }, 2, "invalid UTF-8 in value of label \"x\"" },
        { { L("__name__", "up"), L("x", "\xff") }, 2, "invalid UTF-8 in value of label \"x\"" },
        { { L("__name__", "up"), L("bad\x01", "v") }, 2, "invalid label name \"bad\\x01\"" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct gw_label ls[4];
        struct gw_error err;
        memcpy(ls, cases[i].ls, sizeof ls);
        gw_error_clear(&err);
        int rc = gw_labels_normalize(ls, cases[i].n, &err);
        if (rc != GW_EINVAL || strstr(err.msg, cases[i].msg) == NULL)
            fail_msg("case %zu: rc=%d msg=\"%s\", want \"%s\"", i, rc, err.msg, cases[i].msg);
        assert_int_equal(err.code, GW_EINVAL);
    }

    /* limits */
    struct gw_error err;
    assert_int_equal(gw_labels_normalize(NULL, 0, &err), GW_EINVAL);
    assert_non_null(strstr(err.msg, "missing metric name"));

    struct gw_label many[GW_LABELS_MAX + 1];
    char names[GW_LABELS_MAX + 1][8];
    for (size_t i = 0; i <= GW_LABELS_MAX; i++) {
        snprintf(names[i], sizeof names[i], "l%03zu", i);
        many[i] = lab(names[i], "v");
    }
    many[0] = lab("__name__", "up");
    assert_int_equal(gw_labels_normalize(many, GW_LABELS_MAX, &err), GW_OK);
    assert_int_equal(gw_labels_normalize(many, GW_LABELS_MAX + 1, &err), GW_EINVAL);
    assert_non_null(strstr(err.msg, "too many labels"));

    char *big = malloc(GW_LABEL_VALUE_MAX + 2);
    assert_non_null(big);
    memset(big, 'a', GW_LABEL_VALUE_MAX + 1);
    big[GW_LABEL_VALUE_MAX + 1] = '\0';
    struct gw_label ln[2] = { L("__name__", "up"), { big, GW_LABEL_NAME_MAX + 1, "v", 1 } };
    assert_int_equal(gw_labels_normalize(ln, 2, &err), GW_EINVAL);
    assert_non_null(strstr(err.msg, "too long"));
    assert_non_null(strstr(err.msg, "label name"));
    ln[1].name_len = GW_LABEL_NAME_MAX;
    assert_int_equal(gw_labels_normalize(ln, 2, &err), GW_OK);

    struct gw_label lv[2] = { L("__name__", "up"), { "v", 1, big, GW_LABEL_VALUE_MAX + 1 } };
    assert_int_equal(gw_labels_normalize(lv, 2, &err), GW_EINVAL);
    assert_non_null(strstr(err.msg, "value of label \"v\" too long"));
    lv[1].value_len = GW_LABEL_VALUE_MAX;
    assert_int_equal(gw_labels_normalize(lv, 2, &err), GW_OK);
    free(big);
}

static void test_labels_encode_golden(void **state)
{
    (void)state;
    /* The worked example from the top of src/model/labels.c. */
    struct gw_label ls[] = { L("job", "node"), L("__name__", "up") };
    size_t len;
    uint8_t *b = canon(ls, 2, &len);
    static const uint8_t want[] = { 0x08, '_', '_', 'n', 'a', 'm', 'e', '_', '_', 0x02, 'u', 'p',
                                    0x03, 'j', 'o', 'b', 0x04, 'n', 'o', 'd', 'e' };
    assert_int_equal(len, sizeof want);
    assert_memory_equal(b, want, sizeof want);
    free(b);
}

static void test_labels_roundtrip(void **state)
{
    (void)state;
    char *v300 = malloc(301), *vmax = malloc(GW_LABEL_VALUE_MAX + 1);
    assert_non_null(v300);
    assert_non_null(vmax);
    for (size_t i = 0; i < 300; i++)
        v300[i] = (char)('a' + i % 26);
    v300[300] = '\0';
    memset(vmax, 'z', GW_LABEL_VALUE_MAX);
    vmax[GW_LABEL_VALUE_MAX] = '\0';

    struct gw_label ls[] = { L("__name__", "DCGM_FI_DEV_XID_ERRORS"), lab("long", v300),
                             lab("max", vmax), L("gpu", "3"), L("Hostname", "n1"),
                             L("u", "\xe2\x82\xac") };
    size_t len;
    uint8_t *b = canon(ls, 6, &len);
    assert_true(len > GW_LABEL_VALUE_MAX + 300);

    struct gw_label out[8];
    size_t n = 0;
    assert_int_equal(gw_labels_decode(b, len, out, 8, &n), GW_OK);
    assert_int_equal(n, 6);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(out[i].name_len, ls[i].name_len);
        assert_int_equal(out[i].value_len, ls[i].value_len);
        assert_memory_equal(out[i].name, ls[i].name, ls[i].name_len);
        assert_memory_equal(out[i].value, ls[i].value, ls[i].value_len);
    }
    /* re-encoding the decoded set gives the same bytes */
    uint8_t *b2 = malloc(len);
    assert_non_null(b2);
    assert_int_equal(gw_labels_encode(out, n, b2), len);
    assert_memory_equal(b, b2, len);

    /* too small an output array */
    assert_int_equal(gw_labels_decode(b, len, out, 5, &n), GW_ELIMIT);
    /* empty input is the empty set */
    n = 99;
    assert_int_equal(gw_labels_decode(b, 0, out, 8, &n), GW_OK);
    assert_int_equal(n, 0);

    /* lookups */
    const char *v;
    size_t vl;
    assert_int_equal(gw_labels_get(b, len, "long", 4, &v, &vl), 1);
    assert_int_equal(vl, 300);
    assert_memory_equal(v, v300, 300);
    assert_int_equal(gw_labels_get(b, len, "gpu", 3, &v, &vl), 1);
    assert_int_equal(vl, 1);
    assert_int_equal(v[0], '3');
    assert_int_equal(gw_labels_get(b, len, "u", 1, &v, &vl), 1);
    assert_int_equal(gw_labels_get(b, len, "gp", 2, &v, &vl), 0);
    assert_int_equal(gw_labels_get(b, len, "gpux", 4, &v, &vl), 0);
    assert_int_equal(gw_labels_get(b, len, "zzz", 3, &v, &vl), 0);
    assert_int_equal(gw_labels_get(b, len, "A", 1, &v, &vl), 0);
    free(b2);
    free(b);
    free(v300);
    free(vmax);
}

static void test_labels_decode_corrupt(void **state)
{
    (void)state;
    struct gw_label ls[] = { L("__name__", "up"), L("instance", "host:9100"),
                             L("job", "node"), L("long", "0123456789012345678901234567890123456789"
                                                         "0123456789012345678901234567890123456789"
                                                         "0123456789012345678901234567890123456789"
                                                         "0123456789") };
    size_t len;
    uint8_t *b = canon(ls, 4, &len);
    struct gw_label out[8];

    /* Every truncation: a cut at a label boundary decodes fewer labels,
     * any other cut is corrupt; never reads past the cut (ASan). */
    size_t boundaries = 0;
    for (size_t cut = 0; cut < len; cut++) {
        uint8_t *t = malloc(cut ? cut : 1);
        assert_non_null(t);
        memcpy(t, b, cut);
        size_t n = 0;
        int rc = gw_labels_decode(t, cut, out, 8, &n);
        if (rc == GW_OK) {
            boundaries++;
            assert_true(n < 4);
            assert_int_equal(gw_labels_encoded_size(out, n), cut);
        } else {
            assert_int_equal(rc, GW_ECORRUPT);
        }
        const char *v;
        size_t vl;
        (void)gw_labels_get(t, cut, "long", 4, &v, &vl);
        (void)gw_labels_compare(t, cut, b, len);
        free(t);
    }
    assert_int_equal(boundaries, 4); /* cuts 0 and after labels 1, 2, 3 */

    size_t n;
    /* zero-length name, zero-length value, unsorted, duplicate, overlong varint */
    static const uint8_t zero_name[] = { 0x00, 0x01, 'x' };
    static const uint8_t zero_val[] = { 0x01, 'a', 0x00 };
    static const uint8_t unsorted[] = { 0x01, 'b', 0x01, 'x', 0x01, 'a', 0x01, 'y' };
    static const uint8_t dup[] = { 0x01, 'a', 0x01, 'x', 0x01, 'a', 0x01, 'y' };
    static const uint8_t overlong[] = { 0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                        0x80, 0x80, 0x01, 'a' };
    static const uint8_t huge_len[] = { 0xff, 0xff, 0xff, 0xff, 0x0f, 'a' };
    assert_int_equal(gw_labels_decode(zero_name, sizeof zero_name, out, 8, &n), GW_ECORRUPT);
    assert_int_equal(gw_labels_decode(zero_val, sizeof zero_val, out, 8, &n), GW_ECORRUPT);
    assert_int_equal(gw_labels_decode(unsorted, sizeof unsorted, out, 8, &n), GW_ECORRUPT);
    assert_int_equal(gw_labels_decode(dup, sizeof dup, out, 8, &n), GW_ECORRUPT);
    assert_int_equal(gw_labels_decode(overlong, sizeof overlong, out, 8, &n), GW_ECORRUPT);
    assert_int_equal(gw_labels_decode(huge_len, sizeof huge_len, out, 8, &n), GW_ECORRUPT);

    /* random bytes: only OK or ECORRUPT/ELIMIT, and never a crash */
    srand(12345);
    for (int iter = 0; iter < 20000; iter++) {
        uint8_t r[48];
        size_t rl = (size_t)(rand() % (int)sizeof r);
        for (size_t i = 0; i < rl; i++)
            r[i] = (uint8_t)(rand() % 4 == 0 ? rand() % 4 : rand());
        int rc = gw_labels_decode(r, rl, out, 8, &n);
        assert_true(rc == GW_OK || rc == GW_ECORRUPT || rc == GW_ELIMIT);
        const char *v;
        size_t vl;
        if (gw_labels_get(r, rl, "a", 1, &v, &vl))
            assert_true(v >= (const char *)r && v + vl <= (const char *)r + rl);
    }
    free(b);
}

static int cmp_sets(struct gw_label *a, size_t an, struct gw_label *b, size_t bn)
{
    size_t al, bl;
    uint8_t *ab = canon(a, an, &al), *bb = canon(b, bn, &bl);
    int c = gw_labels_compare(ab, al, bb, bl);
    int r = gw_labels_compare(bb, bl, ab, al);
    /* antisymmetric */
    assert_true((c < 0 && r > 0) || (c > 0 && r < 0) || (c == 0 && r == 0));
    free(ab);
    free(bb);
    return c;
}

static void test_labels_compare(void **state)
{
    (void)state;
    {   /* equal */
        struct gw_label a[] = { L("__name__", "up"), L("job", "x") };
        struct gw_label b[] = { L("job", "x"), L("__name__", "up") };
        assert_int_equal(cmp_sets(a, 2, b, 2), 0);
    }
    {   /* value decides */
        struct gw_label a[] = { L("__name__", "up"), L("job", "a") };
        struct gw_label b[] = { L("__name__", "up"), L("job", "b") };
        assert_true(cmp_sets(a, 2, b, 2) < 0);
    }
    {   /* prefix set first */
        struct gw_label a[] = { L("__name__", "up") };
        struct gw_label b[] = { L("__name__", "up"), L("job", "a") };
        assert_true(cmp_sets(a, 1, b, 2) < 0);
    }
    {   /* first differing pair wins over length */
        struct gw_label a[] = { L("__name__", "up2") };
        struct gw_label b[] = { L("__name__", "up"), L("job", "a") };
        assert_true(cmp_sets(a, 1, b, 2) > 0);
    }
    {   /* name compared before value: {a,b="z"} vs {a,c="a"}: b < c */
        struct gw_label a[] = { L("__name__", "m"), L("b", "z") };
        struct gw_label b[] = { L("__name__", "m"), L("c", "a") };
        assert_true(cmp_sets(a, 2, b, 2) < 0);
    }
    {   /* shorter string first; bytes compare unsigned */
        struct gw_label a[] = { L("__name__", "m"), L("v", "ab") };
        struct gw_label b[] = { L("__name__", "m"), L("v", "abc") };
        assert_true(cmp_sets(a, 2, b, 2) < 0);
        struct gw_label c[] = { L("__name__", "m"), L("v", "\xc3\xa9") };
        struct gw_label d[] = { L("__name__", "m"), L("v", "z") };
        assert_true(cmp_sets(c, 2, d, 2) > 0);
    }
    {   /* name length: "a" < "ab" as names */
        struct gw_label a[] = { L("__name__", "m"), L("a", "z") };
        struct gw_label b[] = { L("__name__", "m"), L("ab", "a") };
        assert_true(cmp_sets(a, 2, b, 2) < 0);
    }
    /* empty sets */
    assert_int_equal(gw_labels_compare(NULL, 0, NULL, 0), 0);
    struct gw_label a[] = { L("__name__", "m") };
    size_t al;
    uint8_t *ab = canon(a, 1, &al);
    assert_true(gw_labels_compare(NULL, 0, ab, al) < 0);
    assert_true(gw_labels_compare(ab, al, NULL, 0) > 0);
    free(ab);
}

static void test_labels_hash(void **state)
{
    (void)state;
    struct gw_label a[] = { L("__name__", "up"), L("job", "x"), L("gpu", "1") };
    struct gw_label b[] = { L("gpu", "1"), L("job", "x"), L("__name__", "up") };
    struct gw_label c[] = { L("__name__", "up"), L("job", "x"), L("gpu", "2") };
    size_t al, bl, cl;
    uint8_t *ab = canon(a, 3, &al), *bb = canon(b, 3, &bl), *cb = canon(c, 3, &cl);
    assert_int_equal(al, bl);
    assert_memory_equal(ab, bb, al);
    assert_true(gw_labels_hash(ab, al) == gw_labels_hash(bb, bl));
    assert_true(gw_labels_hash(ab, al) != gw_labels_hash(cb, cl));
    /* boundaries are part of the bytes: {ab="c"} vs {a="bc"} differ */
    struct gw_label d[] = { L("__name__", "m"), L("ab", "c") };
    struct gw_label e[] = { L("__name__", "m"), L("a", "bc") };
    size_t dl, el;
    uint8_t *db = canon(d, 2, &dl), *eb = canon(e, 2, &el);
    assert_true(gw_labels_hash(db, dl) != gw_labels_hash(eb, el));
    free(ab);
    free(bb);
    free(cb);
    free(db);
    free(eb);
}

struct loc_case {
    struct gw_label ls[4];
    size_t n;
    const char *node;   /* NULL = no node */
    unsigned gpu;
};

static void test_labels_locality(void **state)
{
    (void)state;
    static const struct loc_case cases[] = {
        { { L("__name__", "m"), L("hostname", "n1"), L("instance", "x:1") }, 3, "n1", GW_GPU_NONE },
        { { L("__name__", "m"), L("Hostname", "N2"), L("instance", "x:1") }, 3, "N2", GW_GPU_NONE },
        { { L("Hostname", "N2"), L("hostname", "n1") }, 2, "n1", GW_GPU_NONE },
        { { L("instance", "node-3:9400") }, 1, "node-3", GW_GPU_NONE },
        { { L("instance", "node-3") }, 1, "node-3", GW_GPU_NONE },
        { { L("instance", "10.0.0.1:9100") }, 1, "10.0.0.1", GW_GPU_NONE },
        { { L("instance", "[fe80::1]:9100") }, 1, "fe80::1", GW_GPU_NONE },
        { { L("instance", "[::1]") }, 1, "::1", GW_GPU_NONE },
        { { L("instance", "fe80::1") }, 1, "fe80::1", GW_GPU_NONE },
        { { L("instance", "host:http") }, 1, "host:http", GW_GPU_NONE },
        { { L("instance", "[fe80::1") }, 1, "[fe80::1", GW_GPU_NONE },
        { { L("job", "x") }, 1, NULL, GW_GPU_NONE },
        { { L("gpu", "0"), L("Hostname", "h") }, 2, "h", 0 },
        { { L("gpu", "7") }, 1, NULL, 7 },
        { { L("gpu", "65534") }, 1, NULL, 65534 },
        { { L("gpu", "007") }, 1, NULL, 7 },
        { { L("gpu", "65535") }, 1, NULL, GW_GPU_NONE },
        { { L("gpu", "100000") }, 1, NULL, GW_GPU_NONE },
        { { L("gpu", "-1") }, 1, NULL, GW_GPU_NONE },
        { { L("gpu", "+1") }, 1, NULL, GW_GPU_NONE },
        { { L("gpu", " 1") }, 1, NULL, GW_GPU_NONE },
        { { L("gpu", "1a") }, 1, NULL, GW_GPU_NONE },
        { { L("gpu", "GPU-1234") }, 1, NULL, GW_GPU_NONE },
        { { L("GPU", "1") }, 1, NULL, GW_GPU_NONE },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *node = "junk";
        size_t node_len = 99;
        uint16_t gpu = 1234;
        gw_labels_locality(cases[i].ls, cases[i].n, &node, &node_len, &gpu);
        if (cases[i].node == NULL) {
            if (node_len != 0)
                fail_msg("case %zu: node %.*s, want none", i, (int)node_len, node);
        } else if (node_len != strlen(cases[i].node) ||
                   memcmp(node, cases[i].node, node_len) != 0) {
            fail_msg("case %zu: node \"%.*s\", want \"%s\"", i, (int)node_len, node, cases[i].node);
        }
        if (gpu != cases[i].gpu)
            fail_msg("case %zu: gpu %u, want %u", i, gpu, cases[i].gpu);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_labels_normalize_sorts),
        cmocka_unit_test(test_labels_normalize_errors),
        cmocka_unit_test(test_labels_encode_golden),
        cmocka_unit_test(test_labels_roundtrip),
        cmocka_unit_test(test_labels_decode_corrupt),
        cmocka_unit_test(test_labels_compare),
        cmocka_unit_test(test_labels_hash),
        cmocka_unit_test(test_labels_locality),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
