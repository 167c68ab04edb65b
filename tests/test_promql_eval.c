/* test_promql_eval.c - the PromQL evaluator, table-driven in the style of
 * Prometheus' promql/promqltest/testdata .test files, over an in-memory
 * sample source. The scripts are data: tests/data/promql/<name>.test, read
 * at run time from the directory CMake passes as GW_PROMQL_TESTDATA.
 *
 * A script is a sequence of commands (`#` lines are comments):
 *   load <interval>                 then lines `<series> <values>`, values
 *                                   `1 2 _ stale NaN`, `0+10x5`, `5-1x3`,
 *                                   `7x2` (7 7 7), `_x3` (3 gaps), sample i
 *                                   at i * interval
 *   clear                           drops every series
 *   eval instant at <t> <expr>      then expected lines `<series> <value>`
 *                                   or a bare `<value>` for a scalar;
 *                                   none = an empty result
 *   eval_ordered instant at ...     the same, the order must match too
 *   eval range from <t> to <t> step <d> <expr>
 *                                   then lines `<series> <values>` with `_`
 *   eval_fail instant at <t> <expr> [| <substring of the error>]
 *   eval_fail range from ...        the same for a range query
 *   compat 2 | compat 3             Prometheus 2 or 3 window semantics
 * Values compare with a relative tolerance of 1e-6 (as promqltest); NaN
 * equals NaN. Expected values come from Prometheus' own test files where
 * the case exists there. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpuwatch/db.h"
#include "gpuwatch/labels.h"
#include "gpuwatch/matcher.h"
#include "gpuwatch/promql.h"
#include "gpuwatch/rw.h"

/* ------------------------------------------------------------ in-memory source */

#define MAX_SERIES 256
#define MAX_SAMPLES 4096

struct mem_series {
    uint8_t lab[512];
    size_t llen;
    int64_t t[MAX_SAMPLES];
    double v[MAX_SAMPLES];
    size_t n;
};

struct mem_src {
    struct mem_series *s;
    size_t n;
    int delay_ms;          /* per select call (timeout test) */
    unsigned selects;
};

static int mem_select(void *ud, const struct gw_matcher *ms, size_t n_ms, int64_t mint,
                      int64_t maxt, gw_pq_series_cb cb, void *cb_ud, struct gw_error *err)
{
    struct mem_src *m = ud;
    (void)err;
    m->selects++;
    if (m->delay_ms) {
        struct timespec ts = { 0, (long)m->delay_ms * 1000000L };
        nanosleep(&ts, NULL);
    }
    for (size_t i = 0; i < m->n; i++) {
        struct mem_series *s = &m->s[i];
        if (!gw_matchers_match_labels(ms, n_ms, s->lab, s->llen))
            continue;
        size_t a = 0;
        while (a < s->n && s->t[a] < mint)
            a++;
        size_t b = a;
        while (b < s->n && s->t[b] <= maxt)
            b++;
        if (b == a)
            continue;
        int rc = cb(cb_ud, i, s->lab, s->llen, s->t + a, s->v + a, b - a);
        if (rc)
            return rc < 0 ? rc : GW_OK;
    }
    return GW_OK;
}

/* ------------------------------------------------------------ parsing helpers */

static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* Durations like 5m, 1h30m, 10s, 0, 100ms; returns ms, advances *pp. */
static int64_t parse_dur(const char **pp)
{
    const char *p = skip_ws(*pp);
    int64_t total = 0;
    int any = 0;
    while (*p >= '0' && *p <= '9') {
        int64_t v = 0;
        while (*p >= '0' && *p <= '9')
            v = v * 10 + (*p++ - '0');
        any = 1;
        int64_t mul = 1;
        if (p[0] == 'm' && p[1] == 's') {
            mul = 1;
            p += 2;
        } else if (*p == 's') {
            mul = 1000;
            p++;
        } else if (*p == 'm') {
            mul = 60000;
            p++;
        } else if (*p == 'h') {
            mul = 3600000;
            p++;
        } else if (*p == 'd') {
            mul = 86400000;
            p++;
        } else if (*p == 'w') {
            mul = 7 * 86400000LL;
            p++;
        } else {
            mul = 1000;   /* bare number: seconds */
        }
        total += v * mul;
    }
    if (!any)
        fail_msg("bad duration at '%s'", p);
    *pp = p;
    return total;
}

/* `name{a="b", c="d"}` or `{a="b"}` -> canonical bytes (unsorted input ok). */
static size_t parse_series(const char **pp, uint8_t *out, size_t cap)
{
    static char store[64][256];
    struct gw_label ls[64];
    size_t n = 0, si = 0;
    const char *p = skip_ws(*pp);
    const char *nb = p;
    while (*p && *p != '{' && *p != ' ' && *p != '\t')
        p++;
    if (p > nb) {
        size_t l = (size_t)(p - nb);
        memcpy(store[si], nb, l);
        ls[n++] = (struct gw_label){ "__name__", 8, store[si++], (uint32_t)l };
    }
    if (*p == '{') {
        p++;
        for (;;) {
            p = skip_ws(p);
            if (*p == ',') {
                p++;
                continue;
            }
            if (*p == '}') {
                p++;
                break;
            }
            const char *ks = p;
            while (*p && *p != '=' && *p != ' ')
                p++;
            size_t kl = (size_t)(p - ks);
            memcpy(store[si], ks, kl);
            char *kn = store[si++];
            p = skip_ws(p);
            assert_true(*p == '=');
            p = skip_ws(p + 1);
            assert_true(*p == '"');
            p++;
            size_t vl = 0;
            char *vb = store[si++];
            while (*p && *p != '"') {
                if (*p == '\\' && p[1]) {
                    p++;
                    vb[vl++] = *p == 'n' ? '\n' : *p;
                    p++;
                } else {
                    vb[vl++] = *p++;
                }
            }
            assert_true(*p == '"');
            p++;
            if (vl > 0)
                ls[n++] = (struct gw_label){ kn, (uint32_t)kl, vb, (uint32_t)vl };
        }
    }
    /* sort by name */
    for (size_t i = 1; i < n; i++) {
        struct gw_label x = ls[i];
        size_t j = i;
        while (j > 0) {
            const struct gw_label *y = &ls[j - 1];
            size_t m = y->name_len < x.name_len ? y->name_len : x.name_len;
            int c = memcmp(y->name, x.name, m);
            if (c < 0 || (c == 0 && y->name_len <= x.name_len))
                break;
            ls[j] = ls[j - 1];
            j--;
        }
        ls[j] = x;
    }
    assert_true(gw_labels_encoded_size(ls, n) <= cap);
    *pp = p;
    return gw_labels_encode(ls, n, out);
}

#define V_SKIP 1
#define V_STALE 2
static const uint64_t stale_bits = 0x7ff0000000000002ull;

static double stale_nan(void)
{
    double d;
    memcpy(&d, &stale_bits, 8);
    return d;
}

static double parse_num(const char **pp)
{
    const char *p = *pp;
    char *end;
    if (strncmp(p, "NaN", 3) == 0) {
        *pp = p + 3;
        return NAN;
    }
    if (strncmp(p, "Inf", 3) == 0 || strncmp(p, "+Inf", 4) == 0) {
        *pp = p + (p[0] == '+' ? 4 : 3);
        return INFINITY;
    }
    if (strncmp(p, "-Inf", 4) == 0) {
        *pp = p + 4;
        return -INFINITY;
    }
    /* decimal only: "3+0x10" must not read 0x10 as hex */
    char tok[64];
    size_t tl = 0;
    while (tl < sizeof(tok) - 1 &&
           ((p[tl] >= '0' && p[tl] <= '9') || p[tl] == '.' ||
            ((p[tl] == 'e' || p[tl] == 'E') && tl > 0) ||
            ((p[tl] == '-' || p[tl] == '+') && (tl == 0 || p[tl - 1] == 'e' || p[tl - 1] == 'E')))) {
        tok[tl] = p[tl];
        tl++;
    }
    tok[tl] = 0;
    double v = strtod(tok, &end);
    end = (char *)p + (end - tok);
    if (end == p)
        fail_msg("bad number at '%s'", p);
    *pp = end;
    return v;
}

/* Expands a value list into vals/kinds; returns the count. */
static size_t parse_values(const char *p, double *vals, int *kinds, size_t cap)
{
    size_t n = 0;
    for (;;) {
        p = skip_ws(p);
        if (!*p || *p == '\n')
            break;
        if (*p == '_') {
            p++;
            size_t rep = 1;
            if (*p == 'x') {
                p++;
                rep = (size_t)strtoul(p, (char **)&p, 10);
            }
            for (size_t i = 0; i < rep && n < cap; i++)
                kinds[n++] = V_SKIP;
            continue;
        }
        if (strncmp(p, "stale", 5) == 0) {
            p += 5;
            kinds[n] = V_STALE;
            vals[n++] = stale_nan();
            continue;
        }
        double a = parse_num(&p);
        if (*p == '+' || *p == '-' || *p == 'x') {
            double d = 0;
            if (*p != 'x') {
                int neg = *p == '-';
                p++;
                d = parse_num(&p);
                if (neg)
                    d = -d;
            }
            assert_true(*p == 'x');
            p++;
            size_t rep = (size_t)strtoul(p, (char **)&p, 10);
            for (size_t i = 0; i <= rep && n < cap; i++) {
                kinds[n] = 0;
                vals[n++] = a + d * (double)i;
            }
            continue;
        }
        kinds[n] = 0;
        vals[n++] = a;
    }
    return n;
}

/* ------------------------------------------------------------ script runner */

struct runner {
    struct mem_src src;
    int64_t load_iv;
    int in_load;
    struct gw_pq_opts opts;
    int line;
    const char *name;
};

static int vclose(double a, double b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    if (a == b)
        return 1;
    double d = fabs(a - b), m = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
    return d <= 1e-6 * m || d < 1e-12;
}

static void fmt_labels(const uint8_t *b, size_t len, char *out, size_t cap)
{
    struct gw_label ls[64];
    size_t n = 0, o = 0;
    gw_labels_decode(b, len, ls, 64, &n);
    o += (size_t)snprintf(out + o, cap - o, "{");
    for (size_t i = 0; i < n && o < cap; i++)
        o += (size_t)snprintf(out + o, cap - o, "%s%.*s=\"%.*s\"", i ? ", " : "",
                              (int)ls[i].name_len, ls[i].name, (int)ls[i].value_len, ls[i].value);
    if (o < cap)
        snprintf(out + o, cap - o, "}");
}

struct expect {
    uint8_t lab[512];
    size_t llen;
    double vals[128];
    int kinds[128];
    size_t nv;
    int scalar;
    int used;
};

static void dump_result(const struct gw_pq_result *r)
{
    char b[512];
    fprintf(stderr, "  result type %s, %zu series\n", gw_pq_type_name(r->type), r->n_series);
    if (r->type == GW_PQ_T_SCALAR)
        fprintf(stderr, "  scalar %g\n", r->scalar);
    for (size_t i = 0; i < r->n_series; i++) {
        fmt_labels(r->series[i].labels, r->series[i].labels_len, b, sizeof(b));
        fprintf(stderr, "  %s", b);
        for (size_t j = 0; j < r->series[i].n && j < 16; j++)
            fprintf(stderr, " %g@%lld", r->series[i].v[j], (long long)r->series[i].t[j]);
        fprintf(stderr, "\n");
    }
}

static int parse_expr(struct runner *R, const char *q, struct gw_pq_expr **e, struct gw_error *err)
{
    struct gw_pq_parse_opts po = { .experimental = R->opts.experimental, .compat = R->opts.compat };
    return gw_pq_parse(q, strlen(q), &po, e, err);
}

static void run_eval(struct runner *R, const char *cmd, char **lines, size_t nlines, size_t *li)
{
    int fail = 0, ordered = 0, range = 0;
    const char *p = cmd;
    if (strncmp(p, "eval_fail", 9) == 0) {
        fail = 1;
        p += 9;
    } else if (strncmp(p, "eval_ordered", 12) == 0) {
        ordered = 1;
        p += 12;
    } else {
        p += 4;
    }
    p = skip_ws(p);
    int64_t t0 = 0, t1 = 0, step = 1;
    if (strncmp(p, "instant at", 10) == 0) {
        p += 10;
        t0 = t1 = parse_dur(&p);
    } else if (strncmp(p, "range from", 10) == 0) {
        range = 1;
        p += 10;
        t0 = parse_dur(&p);
        p = skip_ws(p);
        assert_true(strncmp(p, "to", 2) == 0);
        p += 2;
        t1 = parse_dur(&p);
        p = skip_ws(p);
        assert_true(strncmp(p, "step", 4) == 0);
        p += 4;
        step = parse_dur(&p);
    } else {
        fail_msg("%s:%d: bad eval line", R->name, R->line);
    }
    p = skip_ws(p);
    char q[2048], want_err[256] = "";
    snprintf(q, sizeof(q), "%s", p);
    char *bar = strstr(q, " | ");
    if (fail && bar) {
        snprintf(want_err, sizeof(want_err), "%s", bar + 3);
        *bar = 0;
    }
    /* expected lines */
    struct expect *ex = calloc(64, sizeof(*ex));
    size_t nex = 0;
    assert_non_null(ex);
    while (*li + 1 < nlines) {
        const char *l = lines[*li + 1];
        if (!(l[0] == ' ' || l[0] == '\t'))
            break;
        const char *s = skip_ws(l);
        if (!*s)
            break;
        (*li)++;
        struct expect *x = &ex[nex++];
        assert_true(nex <= 64);
        if ((*s >= '0' && *s <= '9') || *s == '-' || *s == '+' || strncmp(s, "NaN", 3) == 0 ||
            strncmp(s, "Inf", 3) == 0) {
            x->scalar = 1;
            x->nv = parse_values(s, x->vals, x->kinds, 128);
        } else {
            x->llen = parse_series(&s, x->lab, sizeof(x->lab));
            x->nv = parse_values(s, x->vals, x->kinds, 128);
        }
    }
    struct gw_pq_expr *e = NULL;
    struct gw_error err;
    gw_error_clear(&err);
    int rc = parse_expr(R, q, &e, &err);
    struct gw_pq_result res;
    memset(&res, 0, sizeof(res));
    if (rc == GW_OK) {
        if (range)
            rc = gw_pq_eval_range(&(struct gw_pq_source){ &R->src, mem_select, NULL }, e, t0, t1, step,
                                  &R->opts, &res, &err);
        else
            rc = gw_pq_eval_instant(&(struct gw_pq_source){ &R->src, mem_select, NULL }, e, t0,
                                    &R->opts, &res, &err);
    }
    if (fail) {
        if (rc == GW_OK) {
            dump_result(&res);
            fail_msg("%s:%d: expected failure: %s", R->name, R->line, q);
        }
        if (want_err[0] && !strstr(err.msg, want_err))
            fail_msg("%s:%d: error '%s' lacks '%s'", R->name, R->line, err.msg, want_err);
        gw_pq_result_free(&res);
        gw_pq_expr_free(e);
        free(ex);
        return;
    }
    if (rc != GW_OK)
        fail_msg("%s:%d: %s: rc=%d %s", R->name, R->line, q, rc, err.msg);
    int bad = 0;
    char lb[512];
    if (!range && nex == 1 && ex[0].scalar) {
        if (res.type != GW_PQ_T_SCALAR || !vclose(res.scalar, ex[0].vals[0]))
            bad = 1;
    } else if (!range && res.type == GW_PQ_T_SCALAR) {
        bad = 1;
    } else {
        if (res.n_series != nex)
            bad = 1;
        for (size_t i = 0; i < res.n_series && !bad; i++) {
            const struct gw_pq_series *s = &res.series[i];
            size_t j;
            for (j = 0; j < nex; j++) {
                if (ex[j].used)
                    continue;
                if (ordered && j != i)
                    continue;
                if (gw_labels_compare(ex[j].lab, ex[j].llen, s->labels, s->labels_len) == 0)
                    break;
            }
            if (j == nex) {
                fmt_labels(s->labels, s->labels_len, lb, sizeof(lb));
                fprintf(stderr, "unexpected series %s\n", lb);
                bad = 1;
                break;
            }
            ex[j].used = 1;
            if (!range && res.type == GW_PQ_T_VECTOR) {
                if (s->n != 1 || s->t[0] != t0 || !vclose(s->v[0], ex[j].vals[0]))
                    bad = 1;
                continue;
            }
            if (!range && res.type == GW_PQ_T_MATRIX) {
                /* expected: the raw samples' values in order */
                size_t k = 0;
                for (size_t m = 0; m < ex[j].nv; m++) {
                    if (ex[j].kinds[m] == V_SKIP)
                        continue;
                    if (k >= s->n || !vclose(s->v[k], ex[j].vals[m]))
                        bad = 1;
                    k++;
                }
                if (k != s->n)
                    bad = 1;
                continue;
            }
            /* range: point m at t0 + m * step unless '_' */
            size_t k = 0;
            for (size_t m = 0; m < ex[j].nv; m++) {
                if (ex[j].kinds[m] == V_SKIP)
                    continue;
                int64_t tt = t0 + (int64_t)m * step;
                if (k >= s->n || s->t[k] != tt || !vclose(s->v[k], ex[j].vals[m]))
                    bad = 1;
                k++;
            }
            if (k != s->n)
                bad = 1;
        }
    }
    if (bad) {
        fprintf(stderr, "%s:%d: %s\n", R->name, R->line, q);
        dump_result(&res);
        fail_msg("%s:%d: result mismatch for %s", R->name, R->line, q);
    }
    gw_pq_result_free(&res);
    gw_pq_expr_free(e);
    free(ex);
}

static void run_script(const char *name, const char *script, int experimental)
{
    struct runner *R = calloc(1, sizeof(*R));
    assert_non_null(R);
    R->src.s = calloc(MAX_SERIES, sizeof(struct mem_series));
    assert_non_null(R->src.s);
    R->name = name;
    gw_pq_opts_default(&R->opts);
    R->opts.experimental = experimental;
    char *copy = strdup(script);
    assert_non_null(copy);
    char *lines[2048];
    size_t nl = 0;
    for (char *s = copy; s && nl < 2048;) {
        lines[nl++] = s;
        char *e = strchr(s, '\n');
        if (!e)
            break;
        *e = 0;
        s = e + 1;
    }
    double vals[MAX_SAMPLES];
    int kinds[MAX_SAMPLES];
    for (size_t i = 0; i < nl; i++) {
        R->line = (int)i + 1;
        const char *l = lines[i];
        const char *s = skip_ws(l);
        if (!*s || *s == '#') {
            R->in_load = 0;
            continue;
        }
        if (l[0] == ' ' || l[0] == '\t') {
            if (!R->in_load)
                fail_msg("%s:%d: indented line outside load", name, R->line);
            assert_true(R->src.n < MAX_SERIES);
            struct mem_series *ms = &R->src.s[R->src.n];
            size_t ll = parse_series(&s, ms->lab, sizeof(ms->lab));
            /* an existing series continues */
            struct mem_series *tgt = NULL;
            for (size_t k = 0; k < R->src.n; k++)
                if (R->src.s[k].llen == ll && memcmp(R->src.s[k].lab, ms->lab, ll) == 0)
                    tgt = &R->src.s[k];
            if (!tgt) {
                tgt = ms;
                tgt->llen = ll;
                tgt->n = 0;
                R->src.n++;
            }
            size_t nv = parse_values(s, vals, kinds, MAX_SAMPLES);
            for (size_t k = 0; k < nv; k++) {
                if (kinds[k] == V_SKIP)
                    continue;
                int64_t t = (int64_t)k * R->load_iv;
                if (tgt->n > 0 && tgt->t[tgt->n - 1] >= t)
                    continue;
                assert_true(tgt->n < MAX_SAMPLES);
                tgt->t[tgt->n] = t;
                tgt->v[tgt->n] = vals[k];
                tgt->n++;
            }
            continue;
        }
        R->in_load = 0;
        if (strncmp(s, "load", 4) == 0) {
            const char *p = s + 4;
            R->load_iv = parse_dur(&p);
            R->in_load = 1;
        } else if (strncmp(s, "clear", 5) == 0) {
            R->src.n = 0;
        } else if (strncmp(s, "compat", 6) == 0) {
            R->opts.compat = (int)strtol(s + 6, NULL, 10);
        } else if (strncmp(s, "lookback", 8) == 0) {
            const char *p = s + 8;
            R->opts.lookback_ms = parse_dur(&p);
        } else if (strncmp(s, "eval", 4) == 0) {
            run_eval(R, s, lines, nl, &i);
        } else {
            fail_msg("%s:%d: unknown command %s", name, R->line, s);
        }
    }
    free(copy);
    free(R->src.s);
    free(R);
}

/* Runs tests/data/promql/<name>.test (GW_PROMQL_TESTDATA, from CMake).
 * A missing or unreadable file fails the test. */
static void run_script_file(const char *name, int experimental)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.test", GW_PROMQL_TESTDATA, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open PromQL test script %s (errno %d)", path, errno);
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (cap - len < 4096) {
            cap = cap ? cap * 2 : 65536;
            buf = realloc(buf, cap + 1);
            assert_non_null(buf);
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad)
        fail_msg("cannot read PromQL test script %s", path);
    if (len == 0)
        fail_msg("PromQL test script %s is empty", path);
    buf[len] = 0;
    run_script(name, buf, experimental);
    free(buf);
}


/* ------------------------------------------------------------ tests */

static void test_promql_eval_windows(void **state)
{
    (void)state;
    run_script_file("windows", 0);
}

static void test_promql_eval_range_queries(void **state)
{
    (void)state;
    run_script_file("range", 0);
}

static void test_promql_eval_aggregations(void **state)
{
    (void)state;
    run_script_file("aggregations", 0);
}

static void test_promql_eval_operators(void **state)
{
    (void)state;
    run_script_file("operators", 0);
}

static void test_promql_eval_selectors(void **state)
{
    (void)state;
    run_script_file("selectors", 0);
}

static void test_promql_eval_subqueries(void **state)
{
    (void)state;
    run_script_file("subqueries", 0);
}

static void test_promql_eval_functions(void **state)
{
    (void)state;
    run_script_file("functions", 0);
}

static void test_promql_eval_histograms(void **state)
{
    (void)state;
    run_script_file("histograms", 0);
}

static void test_promql_eval_experimental(void **state)
{
    (void)state;
    run_script_file("experimental", 1);
}

/* One source with n series of one sample each at t = 0. */
static struct mem_src *many_series(size_t n)
{
    struct mem_src *m = calloc(1, sizeof(*m));
    assert_non_null(m);
    m->s = calloc(n, sizeof(struct mem_series));
    assert_non_null(m->s);
    for (size_t i = 0; i < n; i++) {
        char buf[64];
        snprintf(buf, sizeof(buf), "m{i=\"%zu\"}", i);
        const char *p = buf;
        m->s[i].llen = parse_series(&p, m->s[i].lab, sizeof(m->s[i].lab));
        for (size_t k = 0; k < 10; k++) {
            m->s[i].t[k] = (int64_t)k * 1000;
            m->s[i].v[k] = (double)k;
        }
        m->s[i].n = 10;
    }
    m->n = n;
    return m;
}

static void free_src(struct mem_src *m)
{
    free(m->s);
    free(m);
}

static void test_promql_eval_sample_limit(void **state)
{
    (void)state;
    struct mem_src *m = many_series(20);
    struct gw_pq_source src = { m, mem_select, NULL };
    struct gw_pq_expr *e;
    struct gw_error err;
    struct gw_pq_opts o;
    struct gw_pq_result res;
    gw_pq_opts_default(&o);
    assert_int_equal(gw_pq_parse("sum(m)", 6, NULL, &e, &err), GW_OK);
    /* 20 series x 10 samples in range */
    o.max_samples = 150;
    gw_error_clear(&err);
    assert_int_equal(gw_pq_eval_range(&src, e, 0, 9000, 1000, &o, &res, &err), GW_ELIMIT);
    assert_string_equal(err.msg,
                        "query processing would load too many samples into memory in query execution");
    o.max_samples = 1000;
    assert_int_equal(gw_pq_eval_range(&src, e, 0, 9000, 1000, &o, &res, &err), GW_OK);
    assert_int_equal(res.type, GW_PQ_T_MATRIX);
    assert_int_equal(res.n_series, 1);
    assert_int_equal(res.series[0].n, 10);
    assert_true(res.series[0].v[9] == 180.0);
    assert_true(res.samples_touched >= 200);
    gw_pq_result_free(&res);
    gw_pq_expr_free(e);
    free_src(m);

    /* few samples, but step matrices far beyond what max_samples allows */
    m = many_series(100);
    src.ud = m;
    assert_int_equal(gw_pq_parse("m + 1", 5, NULL, &e, &err), GW_OK);
    o.max_samples = 1000;
    gw_error_clear(&err);
    assert_int_equal(gw_pq_eval_range(&src, e, 0, 11000 * 1000LL, 1000, &o, &res, &err),
                     GW_ELIMIT);
    assert_non_null(strstr(err.msg, "too many samples"));
    o.max_samples = 0; /* default */
    assert_int_equal(gw_pq_eval_range(&src, e, 0, 11000 * 1000LL, 1000, &o, &res, &err), GW_OK);
    assert_int_equal(res.n_series, 100);
    /* lookback 5 min: the last sample at 9 s is seen until 309 s */
    assert_int_equal(res.series[0].n, 309);
    gw_pq_result_free(&res);
    /* the same query under an explicit memory cap: 100 series x 11,001
     * steps of step matrices do not fit in 4 MiB, they do in 64 MiB */
    o.max_memory_bytes = (size_t)4 << 20;
    gw_error_clear(&err);
    assert_int_equal(gw_pq_eval_range(&src, e, 0, 11000 * 1000LL, 1000, &o, &res, &err), GW_ELIMIT);
    assert_string_equal(err.msg, "query processing would use more than 4194304 bytes of memory "
                                 "(the query memory limit)");
    o.max_memory_bytes = (size_t)64 << 20;
    assert_int_equal(gw_pq_eval_range(&src, e, 0, 11000 * 1000LL, 1000, &o, &res, &err), GW_OK);
    assert_int_equal(res.n_series, 100);
    gw_pq_result_free(&res);
    gw_pq_expr_free(e);
    free_src(m);
}

static void test_promql_eval_resolution_limit(void **state)
{
    (void)state;
    struct mem_src *m = many_series(1);
    struct gw_pq_source src = { m, mem_select, NULL };
    struct gw_pq_expr *e;
    struct gw_error err;
    struct gw_pq_result res;
    assert_int_equal(gw_pq_parse("m", 1, NULL, &e, &err), GW_OK);
    gw_error_clear(&err);
    /* 11,001 points are fine, 11,002 are not (Prometheus: (end-start)/step > 11000) */
    assert_int_equal(gw_pq_eval_range(&src, e, 0, 11000 * 1000LL, 1000, NULL, &res, &err), GW_OK);
    gw_pq_result_free(&res);
    assert_int_equal(gw_pq_eval_range(&src, e, 0, 11001 * 1000LL, 1000, NULL, &res, &err),
                     GW_ETOOLARGE);
    assert_non_null(strstr(err.msg, "exceeded maximum resolution of 11,000 points per timeseries"));
    assert_int_equal(gw_pq_eval_range(&src, e, INT64_MIN, INT64_MAX, 1000, NULL, &res, &err),
                     GW_ETOOLARGE);
    assert_int_equal(gw_pq_eval_range(&src, e, 0, 10, 0, NULL, &res, &err), GW_EINVAL);
    assert_int_equal(gw_pq_eval_range(&src, e, 10, 0, 1, NULL, &res, &err), GW_EINVAL);
    gw_pq_expr_free(e);
    free_src(m);
}

/* Extreme offsets, @ times and ranges saturate instead of overflowing. */
static void test_promql_eval_extreme_times(void **state)
{
    (void)state;
    struct mem_src *m = many_series(2);
    struct gw_pq_source src = { m, mem_select, NULL };
    const char *qs[] = {
        "m offset 200y", "m offset -200y", "rate(m[200y])", "m @ 9000000000000",
        "max_over_time(m[200y:1s])", "sum_over_time(m[1s:1ms] @ -9000000000000)",
        "count_over_time(m[100y] offset -100y)",
    };
    for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
        struct gw_pq_expr *e;
        struct gw_error err;
        struct gw_pq_result res;
        gw_error_clear(&err);
        if (gw_pq_parse(qs[i], strlen(qs[i]), NULL, &e, &err) != GW_OK)
            continue;   /* the parser may refuse the duration: fine too */
        int rc = gw_pq_eval_range(&src, e, 0, 10000, 1000, NULL, &res, &err);
        assert_true(rc == GW_OK || rc == GW_ELIMIT);
        if (rc == GW_OK)
            gw_pq_result_free(&res);
        rc = gw_pq_eval_instant(&src, e, INT64_MAX / 2, NULL, &res, &err);
        assert_true(rc == GW_OK || rc == GW_ELIMIT);
        if (rc == GW_OK)
            gw_pq_result_free(&res);
        gw_pq_expr_free(e);
    }
    free_src(m);
}

static void test_promql_eval_timeout(void **state)
{
    (void)state;
    struct mem_src *m = many_series(200);
    m->delay_ms = 30;
    struct gw_pq_source src = { m, mem_select, NULL };
    struct gw_pq_expr *e;
    struct gw_error err;
    struct gw_pq_opts o;
    struct gw_pq_result res;
    gw_pq_opts_default(&o);
    o.timeout_ms = 5;
    const char *q = "sum(m) + sum(m) + sum(m)";
    assert_int_equal(gw_pq_parse(q, strlen(q), NULL, &e, &err), GW_OK);
    gw_error_clear(&err);
    assert_int_equal(gw_pq_eval_range(&src, e, 0, 9000, 1000, &o, &res, &err), GW_ETIMEOUT);
    assert_non_null(strstr(err.msg, "timed out"));
    m->delay_ms = 0;
    o.timeout_ms = 10000;
    assert_int_equal(gw_pq_eval_range(&src, e, 0, 9000, 1000, &o, &res, &err), GW_OK);
    assert_int_equal(res.n_series, 1);
    assert_true(res.series[0].v[1] == 600.0);
    gw_pq_result_free(&res);
    gw_pq_expr_free(e);
    free_src(m);
}

static int failing_select(void *ud, const struct gw_matcher *ms, size_t n_ms, int64_t mint,
                          int64_t maxt, gw_pq_series_cb cb, void *cb_ud, struct gw_error *err)
{
    (void)ud; (void)ms; (void)n_ms; (void)mint; (void)maxt; (void)cb; (void)cb_ud;
    return gw_error_set(err, GW_EIO, "disk on fire");
}

/* Where Prometheus 2.42 (compat 2) and Prometheus 3 differ outside the
 * range windows: atan2 keeps __name__ in 2.42; stddev/stdvar of a group
 * whose first member is NaN or +-Inf start at 0 in 2.42, at NaN in 3. */
static void test_promql_eval_compat_differences(void **state)
{
    (void)state;
    run_script_file("compat", 0);
}

/* count_values spells the value as Go's FormatFloat(v, 'f', -1, 64): every
 * digit, however many (1e-300 is "0.", 299 zeros and "1"). */
static void test_promql_eval_count_values_long_labels(void **state)
{
    (void)state;
    struct mem_src *m = many_series(3);
    double vals[3] = { 1e-300, -1.2345e300, 5e-324 };
    for (size_t i = 0; i < 3; i++) {
        m->s[i].n = 1;
        m->s[i].v[0] = vals[i];
    }
    struct gw_pq_source src = { m, mem_select, NULL };
    struct gw_pq_expr *e;
    struct gw_error err;
    struct gw_pq_result res;
    const char *q = "count_values(\"v\", m)";
    assert_int_equal(gw_pq_parse(q, strlen(q), NULL, &e, &err), GW_OK);
    assert_int_equal(gw_pq_eval_instant(&src, e, 0, NULL, &res, &err), GW_OK);
    assert_int_equal(res.type, GW_PQ_T_VECTOR);
    assert_int_equal(res.n_series, 3);
    char want[3][400];
    /* 1e-300 */
    size_t o = 0;
    o += (size_t)snprintf(want[0], sizeof(want[0]), "0.");
    for (int i = 0; i < 299; i++)
        want[0][o++] = '0';
    memcpy(want[0] + o, "1", 2);
    /* -1.2345e300: the digits 12345 and 296 zeros */
    o = (size_t)snprintf(want[1], sizeof(want[1]), "-12345");
    for (int i = 0; i < 296; i++)
        want[1][o++] = '0';
    want[1][o] = 0;
    /* the smallest subnormal: 323 zeros after the point, then 5 */
    o = (size_t)snprintf(want[2], sizeof(want[2]), "0.");
    for (int i = 0; i < 323; i++)
        want[2][o++] = '0';
    memcpy(want[2] + o, "5", 2);
    int seen[3] = { 0, 0, 0 };
    for (size_t i = 0; i < res.n_series; i++) {
        const char *v = NULL;
        size_t vl = 0;
        assert_true(gw_labels_get(res.series[i].labels, res.series[i].labels_len, "v", 1, &v,
                                  &vl));
        int hit = 0;
        for (int k = 0; k < 3; k++) {
            if (vl == strlen(want[k]) && memcmp(v, want[k], vl) == 0) {
                seen[k]++;
                hit = 1;
                /* the text parses back to the same float */
                char buf[400];
                memcpy(buf, v, vl);
                buf[vl] = 0;
                assert_true(strtod(buf, NULL) == vals[k]);
            }
        }
        if (!hit)
            fail_msg("unexpected count_values label (%zu bytes): %.*s", vl, (int)vl, v);
        assert_int_equal(res.series[i].n, 1);
        assert_true(res.series[i].v[0] == 1.0);
    }
    assert_int_equal(seen[0] + seen[1] + seen[2], 3);
    assert_true(seen[0] == 1 && seen[1] == 1 && seen[2] == 1);
    gw_pq_result_free(&res);
    gw_pq_expr_free(e);
    free_src(m);
}

static void test_promql_eval_source_error(void **state)
{
    (void)state;
    struct gw_pq_source src = { NULL, failing_select, NULL };
    struct gw_pq_expr *e;
    struct gw_error err;
    struct gw_pq_result res;
    assert_int_equal(gw_pq_parse("rate(m[5m])", 11, NULL, &e, &err), GW_OK);
    gw_error_clear(&err);
    assert_int_equal(gw_pq_eval_instant(&src, e, 1000, NULL, &res, &err), GW_EIO);
    assert_string_equal(err.msg, "disk on fire");
    gw_pq_expr_free(e);
    /* strings: instant gives a string, range refuses */
    assert_int_equal(gw_pq_parse("\"hi\"", 4, NULL, &e, &err), GW_OK);
    assert_int_equal(gw_pq_eval_instant(&src, e, 1000, NULL, &res, &err), GW_OK);
    assert_int_equal(res.type, GW_PQ_T_STRING);
    assert_string_equal(res.str, "hi");
    gw_pq_result_free(&res);
    assert_int_equal(gw_pq_eval_range(&src, e, 0, 1000, 10, NULL, &res, &err), GW_EINVAL);
    gw_pq_expr_free(e);
}

/* The database source: series written through gw_db_append come back
 * through gw_pq_source_db with only the samples of the window asked for. */
static void test_promql_eval_source_db(void **state)
{
    (void)state;
    const char *base = getenv("GW_TEST_TMP");
    char dir[512], cmd[600];
    if (!base)
        base = "/tmp";
    snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", base);
    assert_int_equal(system(cmd), 0);
    snprintf(dir, sizeof(dir), "%s/gwpqeval.XXXXXX", base);
    assert_non_null(mkdtemp(dir));

    struct gw_db_opts dbo;
    gw_db_opts_default(&dbo);
    dbo.dir = dir;
    dbo.initial_map_bytes = 1 << 20;
    struct gw_db *db = NULL;
    struct gw_error err;
    gw_error_clear(&err);
    assert_int_equal(gw_db_open(&db, &dbo, &err), GW_OK);

    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t now_ms = (int64_t)now.tv_sec * 1000;
    int64_t t0 = (now_ms - 3600 * 1000) / 60000 * 60000;
    static struct gw_label ls[2][2];
    static struct gw_sample smp[2][30];
    struct gw_rw_series rs[2];
    struct gw_rw_request req;
    memset(&req, 0, sizeof(req));
    memset(rs, 0, sizeof(rs));
    const char *hosts[2] = { "h1", "h2" };
    for (int i = 0; i < 2; i++) {
        ls[i][0] = (struct gw_label){ "__name__", 8, "node_load1", 10 };
        ls[i][1] = (struct gw_label){ "hostname", 8, hosts[i], 2 };
        rs[i].labels = ls[i];
        rs[i].n_labels = 2;
        rs[i].samples = smp[i];
        for (int k = 0; k < 30; k++)
            smp[i][k] = (struct gw_sample){ t0 + k * 10000, (double)((i + 1) * k) };
        rs[i].n_samples = 30;
    }
    req.version = 1;
    req.series = rs;
    req.n_series = 2;
    req.n_samples = 60;
    struct gw_append_result ar;
    memset(&ar, 0, sizeof(ar));
    assert_int_equal(gw_db_append(db, &req, now_ms, &ar, &err), GW_OK);
    assert_int_equal(ar.accepted, 60);

    struct gw_pq_source src;
    gw_pq_source_db(&src, db);
    struct gw_pq_expr *e;
    struct gw_pq_result res;
    const char *q = "sum(node_load1)";
    assert_int_equal(gw_pq_parse(q, strlen(q), NULL, &e, &err), GW_OK);
    assert_int_equal(gw_pq_eval_instant(&src, e, t0 + 50000, NULL, &res, &err), GW_OK);
    assert_int_equal(res.type, GW_PQ_T_VECTOR);
    assert_int_equal(res.n_series, 1);
    assert_true(res.series[0].v[0] == 15.0);   /* 5 + 10 */
    gw_pq_result_free(&res);
    gw_pq_expr_free(e);

    q = "rate(node_load1{hostname=\"h2\"}[1m])";
    assert_int_equal(gw_pq_parse(q, strlen(q), NULL, &e, &err), GW_OK);
    assert_int_equal(gw_pq_eval_range(&src, e, t0 + 60000, t0 + 120000, 30000, NULL, &res, &err),
                     GW_OK);
    assert_int_equal(res.type, GW_PQ_T_MATRIX);
    assert_int_equal(res.n_series, 1);
    assert_int_equal(res.series[0].n, 3);
    for (size_t i = 0; i < 3; i++)
        assert_true(fabs(res.series[0].v[i] - 0.2) < 1e-12);   /* 2 per 10 s */
    gw_pq_result_free(&res);
    gw_pq_expr_free(e);

    gw_db_close(db);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_promql_eval_aggregations),
        cmocka_unit_test(test_promql_eval_range_queries),
        cmocka_unit_test(test_promql_eval_windows),
        cmocka_unit_test(test_promql_eval_operators),
        cmocka_unit_test(test_promql_eval_selectors),
        cmocka_unit_test(test_promql_eval_subqueries),
        cmocka_unit_test(test_promql_eval_functions),
        cmocka_unit_test(test_promql_eval_histograms),
        cmocka_unit_test(test_promql_eval_experimental),
        cmocka_unit_test(test_promql_eval_sample_limit),
        cmocka_unit_test(test_promql_eval_resolution_limit),
        cmocka_unit_test(test_promql_eval_extreme_times),
        cmocka_unit_test(test_promql_eval_timeout),
        cmocka_unit_test(test_promql_eval_source_error),
        cmocka_unit_test(test_promql_eval_compat_differences),
        cmocka_unit_test(test_promql_eval_count_values_long_labels),
        cmocka_unit_test(test_promql_eval_source_db),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
