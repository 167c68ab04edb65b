/* test_export.c - export then import: samples written as OpenMetrics text
 * (gw_om_series) from one data dir and read back (gw_om_parse) into an
 * empty one through gw_db_append come back bit-exact, NaN payloads, stale
 * markers, +-Inf, -0 and subnormals included; Prometheus text with ms
 * timestamps; malformed lines are refused with FILE:LINE. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/db.h"
#include "gpuwatch/labels.h"
#include "gpuwatch/matcher.h"
#include "gpuwatch/rw.h"
#include "db_fixture.h"

#define NS 40
static char tmpdir[512], d1[600], d2[600];

static int setup(void **state)
{
    (void)state;
    if (gw_fx_mkdtemp(tmpdir, sizeof tmpdir, "gwexport") != 0) return -1;
    snprintf(d1, sizeof d1, "%s/a", tmpdir);
    snprintf(d2, sizeof d2, "%s/b", tmpdir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return gw_fx_rmrf(tmpdir);
}

static struct gw_db *open_dir(const char *dir)
{
    return gw_fx_open_db(dir, 0);
}

static double bd(uint64_t u)
{
    double v;
    memcpy(&v, &u, 8);
    return v;
}

static uint64_t db_(double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    return u;
}

/* The awkward values, then ordinary ones. */
static double value_at(int series, int i)
{
    static const uint64_t odd[] = {0x7ff0000000000002ull /* stale */, 0x7ff8000000000001ull /* NaN */,
                                   0x7ff8000000000000ull, 0xfff8000000000123ull, 0x7ff0000000000000ull /* +Inf */,
                                   0xfff0000000000000ull, 0x8000000000000000ull /* -0 */, 1ull /* subnormal */,
                                   0x7fefffffffffffffull};
    if (i < (int)(sizeof odd / sizeof odd[0])) return bd(odd[i]);
    return series * 1000.0 + i * 0.1 + 1e-9 * i;
}

static void fill(const char *dir, int64_t t0)
{
    struct gw_db *db = open_dir(dir);
    static const char *names[3] = {"DCGM_FI_DEV_GPU_TEMP", "node_load1", "weird_total"};
    struct gw_rw_series s[3];
    struct gw_label l[3][3];
    struct gw_sample smp[3][NS];
    struct gw_rw_request r = {.version = 1, .series = s, .n_series = 3, .n_samples = 3 * NS};
    for (int k = 0; k < 3; k++) {
        l[k][0] = (struct gw_label){"__name__", 8, names[k], (uint32_t)strlen(names[k])};
        l[k][1] = (struct gw_label){"Hostname", 8, "gpu001", 6};
        l[k][2] = (struct gw_label){"path", 4, "a \"quoted\"\\ value\nwith newline", 30};
        for (int i = 0; i < NS; i++) smp[k][i] = (struct gw_sample){t0 + i * 15000 + (k == 1 ? 7 : 0), value_at(k, i)};
        s[k] = (struct gw_rw_series){.labels = l[k], .n_labels = 3, .samples = smp[k], .n_samples = NS};
    }
    struct gw_append_result res;
    struct gw_error err = {0};
    assert_int_equal(gw_db_append(db, &r, gw_now_ms(), &res, &err), GW_OK);
    assert_int_equal(res.accepted, 3 * NS);
    gw_db_close(db);
}

struct exp {
    struct gw_om_writer w;
    struct gw_buf out;
    size_t series;
    uint64_t t[3][NS], v[3][NS];
    size_t n[3];
};

static int export_cb(void *ud, uint64_t sid, const uint8_t *labels, size_t len, const int64_t *t, const double *v,
                     size_t n)
{
    (void)sid;
    struct exp *e = ud;
    if (e->series < 3) {
        for (size_t i = 0; i < n && i < NS; i++) {
            e->t[e->series][i] = (uint64_t)t[i];
            e->v[e->series][i] = db_(v[i]);
        }
        e->n[e->series] = n;
    }
    e->series++;
    return gw_om_series(&e->w, &e->out, labels, len, t, v, n);
}

static void export_dir(const char *dir, struct exp *e)
{
    memset(e, 0, sizeof *e);
    gw_om_writer_init(&e->w, 0);
    gw_buf_init(&e->out, 0);
    struct gw_db *db = open_dir(dir);
    struct gw_matcher m;
    struct gw_error err = {0};
    assert_int_equal(gw_matcher_init(&m, GW_MATCH_EQ, "Hostname", 8, "gpu001", 6, &err), GW_OK);
    struct gw_db_select q = {.matchers = &m, .n_matchers = 1, .mint = INT64_MIN + 1, .maxt = INT64_MAX - 1,
                             .with_samples = 1};
    assert_int_equal(gw_db_select(db, &q, export_cb, e, &err), GW_OK);
    assert_int_equal(gw_om_finish(&e->w, &e->out), GW_OK);
    gw_matcher_free(&m);
    gw_db_close(db);
}

struct imp {
    struct gw_db *db;
    size_t n;
    int64_t now;
};

static int import_cb(void *ud, const struct gw_label *ls, size_t n, int64_t t, double v, size_t line)
{
    (void)line;
    struct imp *m = ud;
    struct gw_label copy[GW_LABELS_MAX];
    memcpy(copy, ls, n * sizeof *ls);
    struct gw_sample s = {t, v};
    struct gw_rw_series se = {.labels = copy, .n_labels = (uint32_t)n, .samples = &s, .n_samples = 1};
    struct gw_rw_request r = {.version = 1, .series = &se, .n_series = 1, .n_samples = 1};
    struct gw_append_result res;
    struct gw_error err = {0};
    int rc = gw_db_append(m->db, &r, m->now, &res, &err);
    if (rc == GW_OK && res.accepted != 1) return GW_EINVAL;
    m->n++;
    return rc;
}

static void test_round_trip_bit_exact(void **state)
{
    (void)state;
    int64_t t0 = gw_now_ms() - 3600000;
    fill(d1, t0);
    struct exp a, b;
    export_dir(d1, &a);
    assert_int_equal(a.series, 3);
    assert_non_null(strstr((const char *)a.out.data, "NaN:7ff0000000000002"));
    assert_non_null(strstr((const char *)a.out.data, "+Inf"));
    assert_non_null(strstr((const char *)a.out.data, "# TYPE node_load1 unknown"));

    struct imp m = {.db = open_dir(d2), .now = gw_now_ms()};
    struct gw_error err = {0};
    int is_om = 0;
    assert_int_equal(gw_om_parse("export.om", (const char *)a.out.data, a.out.len, &is_om, import_cb, &m, &err), GW_OK);
    assert_int_equal(is_om, 1);
    assert_int_equal(m.n, 3 * NS);
    gw_db_close(m.db);

    export_dir(d2, &b);
    assert_int_equal(b.series, 3);
    for (int k = 0; k < 3; k++) {
        assert_int_equal(b.n[k], NS);
        for (int i = 0; i < NS; i++) {
            assert_int_equal(a.t[k][i], b.t[k][i]);
            assert_int_equal(a.v[k][i], b.v[k][i]);
        }
    }
    assert_int_equal(a.out.len, b.out.len);
    assert_memory_equal(a.out.data, b.out.data, a.out.len);
    gw_buf_free(&a.out);
    gw_buf_free(&b.out);
}

static int count_cb(void *ud, const struct gw_label *ls, size_t n, int64_t t, double v, size_t line)
{
    (void)ls;
    (void)n;
    (void)v;
    int64_t *last = ud;
    last[0]++;
    last[1] = t;
    last[2] = (int64_t)line;
    return GW_OK;
}

static void test_prometheus_text_ms(void **state)
{
    (void)state;
    const char *txt = "# HELP up whether up\n# TYPE up gauge\nup{job=\"a\",} 1 1700000000123\n\n"
                      "up 0 1700000000456 # {trace_id=\"x\"} 1\n";
    int64_t got[3] = {0};
    int is_om = 1;
    struct gw_error err = {0};
    assert_int_equal(gw_om_parse("x.prom", txt, strlen(txt), &is_om, count_cb, got, &err), GW_OK);
    assert_int_equal(is_om, 0);
    assert_int_equal(got[0], 2);
    assert_int_equal(got[1], 1700000000456);
    assert_int_equal(got[2], 5);
    const char *om = "up 1 1700000000.5\nup 2 1700000001\n# EOF\n";
    memset(got, 0, sizeof got);
    assert_int_equal(gw_om_parse("x.om", om, strlen(om), &is_om, count_cb, got, &err), GW_OK);
    assert_int_equal(is_om, 1);
    assert_int_equal(got[1], 1700000001000);
}

static void expect_error(const char *txt, const char *where, const char *what)
{
    int64_t got[3] = {0};
    struct gw_error err = {0};
    assert_int_equal(gw_om_parse("bad.txt", txt, strlen(txt), NULL, count_cb, got, &err), GW_EPARSE);
    if (!strstr(err.msg, where) || !strstr(err.msg, what)) fprintf(stderr, "message: %s\n", err.msg);
    assert_non_null(strstr(err.msg, where));
    assert_non_null(strstr(err.msg, what));
}

static void test_bad_lines(void **state)
{
    (void)state;
    expect_error("up 1 5\nup 2\n", "bad.txt:2:", "without a timestamp");
    expect_error("up{a=\"x} 1 5\n", "bad.txt:1:", "unterminated");
    expect_error("up{a=x} 1 5\n", "bad.txt:1:", "label value");
    expect_error("up 1 5\n9up 1 5\n", "bad.txt:2:", "metric name");
    expect_error("up abc 5\n", "bad.txt:1:", "sample value");
    expect_error("up 1 5x\n", "bad.txt:1:", "invalid timestamp");
    expect_error("up 1 5 6\n", "bad.txt:1:", "after the timestamp");
    expect_error("up{a=\"\\q\"} 1 5\n", "bad.txt:1:", "escape");
    expect_error("up NaN:1234 5\n", "bad.txt:1:", "sample value");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip_bit_exact, setup, teardown),
        cmocka_unit_test(test_prometheus_text_ms),
        cmocka_unit_test(test_bad_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
