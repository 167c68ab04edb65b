/* test_promql_eval.c - the PromQL evaluator, table-driven in the style of
 * Prometheus' promql/promqltest/testdata .test files, over an in-memory
 * sample source.
 *
 * A script is a sequence of commands:
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
            rc = gw_pq_eval_range(&(struct gw_pq_source){ &R->src, mem_select }, e, t0, t1, step,
                                  &R->opts, &res, &err);
        else
            rc = gw_pq_eval_instant(&(struct gw_pq_source){ &R->src, mem_select }, e, t0,
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


/* ------------------------------------------------------------ scripts */

static const char *const AGG_SCRIPT =
    "load 5m\n"
    "  http_requests{job=\"api-server\", instance=\"0\", group=\"production\"} 0+10x10\n"
    "  http_requests{job=\"api-server\", instance=\"1\", group=\"production\"} 0+20x10\n"
    "  http_requests{job=\"api-server\", instance=\"0\", group=\"canary\"} 0+30x10\n"
    "  http_requests{job=\"api-server\", instance=\"1\", group=\"canary\"} 0+40x10\n"
    "  http_requests{job=\"app-server\", instance=\"0\", group=\"production\"} 0+50x10\n"
    "  http_requests{job=\"app-server\", instance=\"1\", group=\"production\"} 0+60x10\n"
    "  http_requests{job=\"app-server\", instance=\"0\", group=\"canary\"} 0+70x10\n"
    "  http_requests{job=\"app-server\", instance=\"1\", group=\"canary\"} 0+80x10\n"
    "  foo{job=\"api-server\", instance=\"0\", region=\"europe\"} 0+90x10\n"
    "  foo{job=\"api-server\"} 0+100x10\n"
    "eval instant at 50m SUM BY (group) (http_requests{job=\"api-server\"})\n"
    "  {group=\"canary\"} 700\n"
    "  {group=\"production\"} 300\n"
    "eval instant at 50m avg by (group) (http_requests{job=\"api-server\"})\n"
    "  {group=\"canary\"} 350\n"
    "  {group=\"production\"} 150\n"
    "eval instant at 50m count by (group) (http_requests{job=\"api-server\"})\n"
    "  {group=\"canary\"} 2\n"
    "  {group=\"production\"} 2\n"
    "eval instant at 50m sum without (instance) (http_requests{job=\"api-server\"})\n"
    "  {group=\"canary\",job=\"api-server\"} 700\n"
    "  {group=\"production\",job=\"api-server\"} 300\n"
    "eval instant at 50m sum by () (http_requests{job=\"api-server\"})\n"
    "  {} 1000\n"
    "eval instant at 50m sum without () (http_requests{job=\"api-server\",group=\"production\"})\n"
    "  {group=\"production\",job=\"api-server\",instance=\"0\"} 100\n"
    "  {group=\"production\",job=\"api-server\",instance=\"1\"} 200\n"
    "eval instant at 50m sum without (instance) (http_requests{job=\"api-server\"} or foo)\n"
    "  {group=\"canary\",job=\"api-server\"} 700\n"
    "  {group=\"production\",job=\"api-server\"} 300\n"
    "  {region=\"europe\",job=\"api-server\"} 900\n"
    "  {job=\"api-server\"} 1000\n"
    "eval instant at 50m sum(http_requests) by (job) + min(http_requests) by (job) + max(http_requests) by (job) + avg(http_requests) by (job)\n"
    "  {job=\"app-server\"} 4550\n"
    "  {job=\"api-server\"} 1750\n"
    "eval instant at 50m SUM(http_requests) BY (job, nonexistent)\n"
    "  {job=\"api-server\"} 1000\n"
    "  {job=\"app-server\"} 2600\n"
    "eval instant at 50m MIN(http_requests) BY (job)\n"
    "  {job=\"api-server\"} 100\n"
    "  {job=\"app-server\"} 500\n"
    "eval instant at 50m MAX(http_requests) BY (job)\n"
    "  {job=\"api-server\"} 400\n"
    "  {job=\"app-server\"} 800\n"
    "eval instant at 50m stddev(http_requests)\n"
    "  {} 229.12878474779\n"
    "eval instant at 50m stddev by (instance)(http_requests)\n"
    "  {instance=\"0\"} 223.60679774998\n"
    "  {instance=\"1\"} 223.60679774998\n"
    "eval instant at 50m stdvar(http_requests)\n"
    "  {} 52500\n"
    "eval instant at 50m group by (job) (http_requests)\n"
    "  {job=\"api-server\"} 1\n"
    "  {job=\"app-server\"} 1\n"
    "eval range from 0 to 10m step 5m sum by (job) (http_requests)\n"
    "  {job=\"api-server\"} 0 100 200\n"
    "  {job=\"app-server\"} 0 260 520\n"
    "clear\n"
    "load 5m\n"
    "  http_requests{job=\"api-server\", instance=\"0\", group=\"production\"} 0+1.33x10\n"
    "  http_requests{job=\"api-server\", instance=\"1\", group=\"production\"} 0+1.33x10\n"
    "  http_requests{job=\"api-server\", instance=\"0\", group=\"canary\"} 0+1.33x10\n"
    "eval instant at 50m stddev(http_requests)\n"
    "  {} 0.0\n"
    "eval instant at 50m stdvar(http_requests)\n"
    "  {} 0.0\n"
    "clear\n"
    "load 5m\n"
    "  label_grouping_test{a=\"aa\", b=\"bb\"} 0+10x10\n"
    "  label_grouping_test{a=\"a\", b=\"abb\"} 0+20x10\n"
    "eval instant at 50m sum(label_grouping_test) by (a, b)\n"
    "  {a=\"a\", b=\"abb\"} 200\n"
    "  {a=\"aa\", b=\"bb\"} 100\n"
    "clear\n"
    "load 5m\n"
    "  http_requests{job=\"api-server\", instance=\"0\", group=\"production\"} 1\n"
    "  http_requests{job=\"api-server\", instance=\"1\", group=\"production\"} 2\n"
    "  http_requests{job=\"api-server\", instance=\"0\", group=\"canary\"} NaN\n"
    "  http_requests{job=\"api-server\", instance=\"1\", group=\"canary\"} 3\n"
    "  http_requests{job=\"api-server\", instance=\"2\", group=\"canary\"} 4\n"
    "eval instant at 0m max(http_requests)\n"
    "  {} 4\n"
    "eval instant at 0m min(http_requests)\n"
    "  {} 1\n"
    "eval instant at 0m max by (group) (http_requests)\n"
    "  {group=\"production\"} 2\n"
    "  {group=\"canary\"} 4\n"
    "eval instant at 0m min by (group) (http_requests)\n"
    "  {group=\"production\"} 1\n"
    "  {group=\"canary\"} 3\n"
    "clear\n"
    "load 5m\n"
    "  http_requests{job=\"api-server\", instance=\"0\", group=\"production\"} 0+10x10\n"
    "  http_requests{job=\"api-server\", instance=\"1\", group=\"production\"} 0+20x10\n"
    "  http_requests{job=\"api-server\", instance=\"2\", group=\"production\"} NaN NaN NaN NaN NaN NaN NaN NaN NaN NaN NaN\n"
    "  http_requests{job=\"api-server\", instance=\"0\", group=\"canary\"} 0+30x10\n"
    "  http_requests{job=\"api-server\", instance=\"1\", group=\"canary\"} 0+40x10\n"
    "  http_requests{job=\"app-server\", instance=\"0\", group=\"production\"} 0+50x10\n"
    "  http_requests{job=\"app-server\", instance=\"1\", group=\"production\"} 0+60x10\n"
    "  http_requests{job=\"app-server\", instance=\"0\", group=\"canary\"} 0+70x10\n"
    "  http_requests{job=\"app-server\", instance=\"1\", group=\"canary\"} 0+80x10\n"
    "  foo 3+0x10\n"
    "eval_ordered instant at 50m topk(3, http_requests)\n"
    "  http_requests{group=\"canary\", instance=\"1\", job=\"app-server\"} 800\n"
    "  http_requests{group=\"canary\", instance=\"0\", job=\"app-server\"} 700\n"
    "  http_requests{group=\"production\", instance=\"1\", job=\"app-server\"} 600\n"
    "eval_ordered instant at 50m bottomk(3, http_requests)\n"
    "  http_requests{group=\"production\", instance=\"0\", job=\"api-server\"} 100\n"
    "  http_requests{group=\"production\", instance=\"1\", job=\"api-server\"} 200\n"
    "  http_requests{group=\"canary\", instance=\"0\", job=\"api-server\"} 300\n"
    "eval instant at 50m topk by (group) (1, http_requests)\n"
    "  http_requests{group=\"production\", instance=\"1\", job=\"app-server\"} 600\n"
    "  http_requests{group=\"canary\", instance=\"1\", job=\"app-server\"} 800\n"
    "eval_ordered instant at 50m topk(3, http_requests{job=\"api-server\",group=\"production\"})\n"
    "  http_requests{job=\"api-server\", instance=\"1\", group=\"production\"} 200\n"
    "  http_requests{job=\"api-server\", instance=\"0\", group=\"production\"} 100\n"
    "  http_requests{job=\"api-server\", instance=\"2\", group=\"production\"} NaN\n"
    "eval_ordered instant at 50m bottomk(3, http_requests{job=\"api-server\",group=\"production\"})\n"
    "  http_requests{job=\"api-server\", instance=\"0\", group=\"production\"} 100\n"
    "  http_requests{job=\"api-server\", instance=\"1\", group=\"production\"} 200\n"
    "  http_requests{job=\"api-server\", instance=\"2\", group=\"production\"} NaN\n"
    "eval_ordered instant at 50m bottomk(9999999999, http_requests{job=\"app-server\",group=\"canary\"})\n"
    "  http_requests{group=\"canary\", instance=\"0\", job=\"app-server\"} 700\n"
    "  http_requests{group=\"canary\", instance=\"1\", job=\"app-server\"} 800\n"
    "eval_ordered instant at 50m topk(scalar(foo), http_requests)\n"
    "  http_requests{group=\"canary\", instance=\"1\", job=\"app-server\"} 800\n"
    "  http_requests{group=\"canary\", instance=\"0\", job=\"app-server\"} 700\n"
    "  http_requests{group=\"production\", instance=\"1\", job=\"app-server\"} 600\n"
    "eval range from 0 to 10m step 5m topk(1, http_requests{job=\"api-server\",group=\"canary\"})\n"
    "  http_requests{group=\"canary\", instance=\"0\", job=\"api-server\"} 0 _ _\n"
    "  http_requests{group=\"canary\", instance=\"1\", job=\"api-server\"} _ 40 80\n"
    "eval_fail instant at 50m topk(1e20, http_requests) | Scalar value 1e+20 overflows int64\n"
    "eval_fail instant at 50m topk(NaN, http_requests) | Scalar value NaN overflows int64\n"
    "eval instant at 50m topk(9223372036854775807, http_requests)\n"
    "eval instant at 50m topk(-1, http_requests)\n"
    "clear\n"
    "load 5m\n"
    "  version{job=\"api-server\", instance=\"0\", group=\"production\"} 6\n"
    "  version{job=\"api-server\", instance=\"1\", group=\"production\"} 6\n"
    "  version{job=\"api-server\", instance=\"2\", group=\"production\"} 6\n"
    "  version{job=\"api-server\", instance=\"0\", group=\"canary\"} 8\n"
    "  version{job=\"api-server\", instance=\"1\", group=\"canary\"} 8\n"
    "  version{job=\"app-server\", instance=\"0\", group=\"production\"} 6\n"
    "  version{job=\"app-server\", instance=\"1\", group=\"production\"} 6\n"
    "  version{job=\"app-server\", instance=\"0\", group=\"canary\"} 7\n"
    "  version{job=\"app-server\", instance=\"1\", group=\"canary\"} 7\n"
    "  ver{i=\"1\"} 6 6 7 7\n"
    "  ver{i=\"2\"} 6 7 7 6\n"
    "eval instant at 1m count_values(\"version\", version)\n"
    "  {version=\"6\"} 5\n"
    "  {version=\"7\"} 2\n"
    "  {version=\"8\"} 2\n"
    "eval instant at 1m count_values without (instance)(\"version\", version)\n"
    "  {job=\"api-server\", group=\"production\", version=\"6\"} 3\n"
    "  {job=\"api-server\", group=\"canary\", version=\"8\"} 2\n"
    "  {job=\"app-server\", group=\"production\", version=\"6\"} 2\n"
    "  {job=\"app-server\", group=\"canary\", version=\"7\"} 2\n"
    "eval instant at 1m count_values without (instance)(\"job\", version)\n"
    "  {job=\"6\", group=\"production\"} 5\n"
    "  {job=\"8\", group=\"canary\"} 2\n"
    "  {job=\"7\", group=\"canary\"} 2\n"
    "eval instant at 1m count_values by (job, group)(\"job\", version)\n"
    "  {job=\"6\", group=\"production\"} 5\n"
    "  {job=\"8\", group=\"canary\"} 2\n"
    "  {job=\"7\", group=\"canary\"} 2\n"
    "eval range from 0 to 15m step 5m count_values(\"v\", ver)\n"
    "  {v=\"6\"} 2 1 _ 1\n"
    "  {v=\"7\"} _ 1 2 1\n"
    "eval instant at 1m count_values(\"v\", version / 4)\n"
    "  {v=\"1.5\"} 5\n"
    "  {v=\"1.75\"} 2\n"
    "  {v=\"2\"} 2\n"
    "clear\n"
    "load 10s\n"
    "  data{test=\"two samples\",point=\"a\"} 0\n"
    "  data{test=\"two samples\",point=\"b\"} 1\n"
    "  data{test=\"three samples\",point=\"a\"} 0\n"
    "  data{test=\"three samples\",point=\"b\"} 1\n"
    "  data{test=\"three samples\",point=\"c\"} 2\n"
    "  data{test=\"uneven samples\",point=\"a\"} 0\n"
    "  data{test=\"uneven samples\",point=\"b\"} 1\n"
    "  data{test=\"uneven samples\",point=\"c\"} 4\n"
    "  foo .8\n"
    "eval instant at 1m quantile without(point)(0.8, data)\n"
    "  {test=\"two samples\"} 0.8\n"
    "  {test=\"three samples\"} 1.6\n"
    "  {test=\"uneven samples\"} 2.8\n"
    "eval instant at 1m quantile without(point)(scalar(foo), data)\n"
    "  {test=\"two samples\"} 0.8\n"
    "  {test=\"three samples\"} 1.6\n"
    "  {test=\"uneven samples\"} 2.8\n"
    "eval instant at 1m quantile without(point)(NaN, data)\n"
    "  {test=\"two samples\"} NaN\n"
    "  {test=\"three samples\"} NaN\n"
    "  {test=\"uneven samples\"} NaN\n"
    "clear\n"
    "load 10s\n"
    "  big{a=\"1\"} 1e308\n"
    "  big{a=\"2\"} 1e308\n"
    "  big{a=\"3\"} -1e308\n"
    "  small{a=\"1\"} 1\n"
    "  small{a=\"2\"} 1e100\n"
    "  small{a=\"3\"} 1\n"
    "  small{a=\"4\"} -1e100\n"
    "eval instant at 10s avg(big)\n"
    "  {} 3.333333333333333e307\n"
    "eval instant at 10s sum(small)\n"
    "  {} 2\n"
    "eval instant at 10s avg(small)\n"
    "  {} 0.5\n";

static const char *const OPS_SCRIPT =
    "load 5m\n"
    "  http_requests_total{job=\"api-server\", instance=\"0\", group=\"production\"} 0+10x10\n"
    "  http_requests_total{job=\"api-server\", instance=\"1\", group=\"production\"} 0+20x10\n"
    "  http_requests_total{job=\"api-server\", instance=\"0\", group=\"canary\"} 0+30x10\n"
    "  http_requests_total{job=\"api-server\", instance=\"1\", group=\"canary\"} 0+40x10\n"
    "  http_requests_total{job=\"app-server\", instance=\"0\", group=\"production\"} 0+50x10\n"
    "  http_requests_total{job=\"app-server\", instance=\"1\", group=\"production\"} 0+60x10\n"
    "  http_requests_total{job=\"app-server\", instance=\"0\", group=\"canary\"} 0+70x10\n"
    "  http_requests_total{job=\"app-server\", instance=\"1\", group=\"canary\"} 0+80x10\n"
    "  vector_matching_a{l=\"x\"} 0+1x100\n"
    "  vector_matching_a{l=\"y\"} 0+2x50\n"
    "  vector_matching_b{l=\"x\"} 0+4x25\n"
    "eval instant at 50m SUM(http_requests_total) BY (job) - COUNT(http_requests_total) BY (job)\n"
    "  {job=\"api-server\"} 996\n"
    "  {job=\"app-server\"} 2596\n"
    "eval instant at 50m 2 - SUM(http_requests_total) BY (job)\n"
    "  {job=\"api-server\"} -998\n"
    "  {job=\"app-server\"} -2598\n"
    "eval instant at 50m -http_requests_total{job=\"api-server\",instance=\"0\",group=\"production\"}\n"
    "  {job=\"api-server\",instance=\"0\",group=\"production\"} -100\n"
    "eval instant at 50m +http_requests_total{job=\"api-server\",instance=\"0\",group=\"production\"}\n"
    "  http_requests_total{job=\"api-server\",instance=\"0\",group=\"production\"} 100\n"
    "eval instant at 50m - - - 1\n"
    "  -1\n"
    "eval instant at 50m -2^---1*3\n"
    "  -1.5\n"
    "eval instant at 50m 2/-2^---1*3+2\n"
    "  -10\n"
    "eval instant at 50m -10^3 * - SUM(http_requests_total) BY (job) ^ -1\n"
    "  {job=\"api-server\"} 1\n"
    "  {job=\"app-server\"} 0.38461538461538464\n"
    "eval instant at 50m SUM(http_requests_total) BY (job) % 0.3\n"
    "  {job=\"api-server\"} 0.1\n"
    "  {job=\"app-server\"} 0.2\n"
    "eval instant at 50m SUM(http_requests_total) BY (job) % 2 ^ 3 ^ 2\n"
    "  {job=\"api-server\"} 488\n"
    "  {job=\"app-server\"} 40\n"
    "eval instant at 50m SUM(http_requests_total) BY (job) / 0\n"
    "  {job=\"api-server\"} +Inf\n"
    "  {job=\"app-server\"} +Inf\n"
    "eval instant at 50m 0 * http_requests_total{group=\"canary\", instance=\"0\", job=\"api-server\"} / 0\n"
    "  {group=\"canary\", instance=\"0\", job=\"api-server\"} NaN\n"
    "eval instant at 50m http_requests_total{job=\"api-server\", group=\"canary\"} + rate(http_requests_total{job=\"api-server\"}[10m]) * 5 * 60\n"
    "  {group=\"canary\", instance=\"0\", job=\"api-server\"} 330\n"
    "  {group=\"canary\", instance=\"1\", job=\"api-server\"} 440\n"
    "eval instant at 50m rate(http_requests_total[25m]) * 25 * 60\n"
    "  {group=\"canary\", instance=\"0\", job=\"api-server\"} 150\n"
    "  {group=\"canary\", instance=\"0\", job=\"app-server\"} 350\n"
    "  {group=\"canary\", instance=\"1\", job=\"api-server\"} 200\n"
    "  {group=\"canary\", instance=\"1\", job=\"app-server\"} 400\n"
    "  {group=\"production\", instance=\"0\", job=\"api-server\"} 50\n"
    "  {group=\"production\", instance=\"0\", job=\"app-server\"} 249.99999999999997\n"
    "  {group=\"production\", instance=\"1\", job=\"api-server\"} 100\n"
    "  {group=\"production\", instance=\"1\", job=\"app-server\"} 300\n"
    "eval instant at 50m http_requests_total{group=\"canary\"} and http_requests_total{instance=\"0\"}\n"
    "  http_requests_total{group=\"canary\", instance=\"0\", job=\"api-server\"} 300\n"
    "  http_requests_total{group=\"canary\", instance=\"0\", job=\"app-server\"} 700\n"
    "eval instant at 50m (http_requests_total{group=\"canary\"} + 1) and on(instance) http_requests_total{instance=\"0\", group=\"production\"}\n"
    "  {group=\"canary\", instance=\"0\", job=\"api-server\"} 301\n"
    "  {group=\"canary\", instance=\"0\", job=\"app-server\"} 701\n"
    "eval instant at 50m (http_requests_total{group=\"canary\"} + 1) and ignoring(group, job) http_requests_total{instance=\"0\", group=\"production\"}\n"
    "  {group=\"canary\", instance=\"0\", job=\"api-server\"} 301\n"
    "  {group=\"canary\", instance=\"0\", job=\"app-server\"} 701\n"
    "eval instant at 50m (http_requests_total{group=\"canary\"} + 1) or http_requests_total{instance=\"1\"}\n"
    "  {group=\"canary\", instance=\"0\", job=\"api-server\"} 301\n"
    "  {group=\"canary\", instance=\"0\", job=\"app-server\"} 701\n"
    "  {group=\"canary\", instance=\"1\", job=\"api-server\"} 401\n"
    "  {group=\"canary\", instance=\"1\", job=\"app-server\"} 801\n"
    "  http_requests_total{group=\"production\", instance=\"1\", job=\"api-server\"} 200\n"
    "  http_requests_total{group=\"production\", instance=\"1\", job=\"app-server\"} 600\n"
    "eval instant at 50m (http_requests_total{group=\"canary\"} + 1) or on(instance) (http_requests_total or cpu_count or vector_matching_a)\n"
    "  {group=\"canary\", instance=\"0\", job=\"api-server\"} 301\n"
    "  {group=\"canary\", instance=\"0\", job=\"app-server\"} 701\n"
    "  {group=\"canary\", instance=\"1\", job=\"api-server\"} 401\n"
    "  {group=\"canary\", instance=\"1\", job=\"app-server\"} 801\n"
    "  vector_matching_a{l=\"x\"} 10\n"
    "  vector_matching_a{l=\"y\"} 20\n"
    "eval instant at 50m http_requests_total{group=\"canary\"} unless http_requests_total{instance=\"0\"}\n"
    "  http_requests_total{group=\"canary\", instance=\"1\", job=\"api-server\"} 400\n"
    "  http_requests_total{group=\"canary\", instance=\"1\", job=\"app-server\"} 800\n"
    "eval instant at 50m http_requests_total{group=\"canary\"} unless on(job) http_requests_total{instance=\"0\"}\n"
    "eval instant at 50m http_requests_total{group=\"canary\"} / on(instance,job) http_requests_total{group=\"production\"}\n"
    "  {instance=\"0\", job=\"api-server\"} 3\n"
    "  {instance=\"0\", job=\"app-server\"} 1.4\n"
    "  {instance=\"1\", job=\"api-server\"} 2\n"
    "  {instance=\"1\", job=\"app-server\"} 1.3333333333333333\n"
    "eval instant at 50m http_requests_total{group=\"canary\"} / ignoring(group) http_requests_total{group=\"production\"}\n"
    "  {instance=\"0\", job=\"api-server\"} 3\n"
    "  {instance=\"0\", job=\"app-server\"} 1.4\n"
    "  {instance=\"1\", job=\"api-server\"} 2\n"
    "  {instance=\"1\", job=\"app-server\"} 1.3333333333333333\n"
    "eval instant at 50m http_requests_total AND ON (dummy) vector(1)\n"
    "  http_requests_total{group=\"canary\", instance=\"0\", job=\"api-server\"} 300\n"
    "  http_requests_total{group=\"canary\", instance=\"0\", job=\"app-server\"} 700\n"
    "  http_requests_total{group=\"canary\", instance=\"1\", job=\"api-server\"} 400\n"
    "  http_requests_total{group=\"canary\", instance=\"1\", job=\"app-server\"} 800\n"
    "  http_requests_total{group=\"production\", instance=\"0\", job=\"api-server\"} 100\n"
    "  http_requests_total{group=\"production\", instance=\"0\", job=\"app-server\"} 500\n"
    "  http_requests_total{group=\"production\", instance=\"1\", job=\"api-server\"} 200\n"
    "  http_requests_total{group=\"production\", instance=\"1\", job=\"app-server\"} 600\n"
    "eval instant at 50m SUM(http_requests_total) BY (job) > 1000\n"
    "  {job=\"app-server\"} 2600\n"
    "eval instant at 50m 1000 < SUM(http_requests_total) BY (job)\n"
    "  {job=\"app-server\"} 2600\n"
    "eval instant at 50m SUM(http_requests_total) BY (job) == bool 1000\n"
    "  {job=\"api-server\"} 1\n"
    "  {job=\"app-server\"} 0\n"
    "eval instant at 50m SUM(http_requests_total) BY (job) != bool SUM(http_requests_total) BY (job)\n"
    "  {job=\"api-server\"} 0\n"
    "  {job=\"app-server\"} 0\n"
    "eval instant at 50m 0 == bool 1\n"
    "  0\n"
    "eval instant at 50m http_requests_total{job=\"api-server\", instance=\"0\", group=\"production\"} == bool 100\n"
    "  {job=\"api-server\", instance=\"0\", group=\"production\"} 1\n"
    "eval_fail instant at 50m http_requests_total + on(job) http_requests_total | many-to-many matching not allowed\n"
    "eval_fail instant at 50m http_requests_total + on(job) http_requests_total | found duplicate series for the match group {job=\"api-server\"} on the right hand-side of the operation\n"
    "eval_fail instant at 50m {__name__=~\"vector_matching_a|vector_matching_b\"} + on(l) group_left vector_matching_b | multiple matches for labels: grouping labels must ensure unique matches\n"
    "eval_fail instant at 50m http_requests_total{job=\"api-server\"} + on(job) sum by (job) (http_requests_total) | multiple matches for labels: many-to-one matching must be explicit (group_left/group_right)\n"
    "clear\n"
    "load 5m\n"
    "  node_var{instance=\"abc\",job=\"node\"} 2\n"
    "  node_role{instance=\"abc\",job=\"node\",role=\"prometheus\"} 1\n"
    "  node_cpu{instance=\"abc\",job=\"node\",mode=\"idle\"} 3\n"
    "  node_cpu{instance=\"abc\",job=\"node\",mode=\"user\"} 1\n"
    "  node_cpu{instance=\"def\",job=\"node\",mode=\"idle\"} 8\n"
    "  node_cpu{instance=\"def\",job=\"node\",mode=\"user\"} 2\n"
    "  random{foo=\"bar\"} 1\n"
    "  threshold{instance=\"abc\",job=\"node\",target=\"a@b.com\"} 0\n"
    "eval instant at 1m node_role * on (instance) group_right (role) node_var\n"
    "  {instance=\"abc\",job=\"node\",role=\"prometheus\"} 2\n"
    "eval instant at 1m node_var * on (instance) group_left (role) node_role\n"
    "  {instance=\"abc\",job=\"node\",role=\"prometheus\"} 2\n"
    "eval instant at 1m node_var * ignoring (role) group_left (role) node_role\n"
    "  {instance=\"abc\",job=\"node\",role=\"prometheus\"} 2\n"
    "eval instant at 1m node_cpu * ignoring (role, mode) group_left (role) node_role\n"
    "  {instance=\"abc\",job=\"node\",mode=\"idle\",role=\"prometheus\"} 3\n"
    "  {instance=\"abc\",job=\"node\",mode=\"user\",role=\"prometheus\"} 1\n"
    "eval instant at 1m node_cpu / on (instance) group_left sum by (instance,job)(node_cpu)\n"
    "  {instance=\"abc\",job=\"node\",mode=\"idle\"} .75\n"
    "  {instance=\"abc\",job=\"node\",mode=\"user\"} .25\n"
    "  {instance=\"def\",job=\"node\",mode=\"idle\"} .80\n"
    "  {instance=\"def\",job=\"node\",mode=\"user\"} .20\n"
    "eval instant at 1m sum by (mode, job)(node_cpu) / on (job) group_left sum by (job)(node_cpu)\n"
    "  {job=\"node\",mode=\"idle\"} 0.7857142857142857\n"
    "  {job=\"node\",mode=\"user\"} 0.21428571428571427\n"
    "eval instant at 1m node_cpu + on(dummy) group_left(foo) random*0\n"
    "  {instance=\"abc\",job=\"node\",mode=\"idle\",foo=\"bar\"} 3\n"
    "  {instance=\"abc\",job=\"node\",mode=\"user\",foo=\"bar\"} 1\n"
    "  {instance=\"def\",job=\"node\",mode=\"idle\",foo=\"bar\"} 8\n"
    "  {instance=\"def\",job=\"node\",mode=\"user\",foo=\"bar\"} 2\n"
    "eval instant at 1m node_cpu > on(job, instance) group_left(target) threshold\n"
    "  node_cpu{instance=\"abc\",job=\"node\",mode=\"idle\",target=\"a@b.com\"} 3\n"
    "  node_cpu{instance=\"abc\",job=\"node\",mode=\"user\",target=\"a@b.com\"} 1\n"
    "eval instant at 1m node_cpu > on(job, instance) group_left(target) (threshold or on (job, instance) (sum by (job, instance)(node_cpu) * 0 + 1))\n"
    "  node_cpu{instance=\"abc\",job=\"node\",mode=\"idle\",target=\"a@b.com\"} 3\n"
    "  node_cpu{instance=\"abc\",job=\"node\",mode=\"user\",target=\"a@b.com\"} 1\n"
    "  node_cpu{instance=\"def\",job=\"node\",mode=\"idle\"} 8\n"
    "  node_cpu{instance=\"def\",job=\"node\",mode=\"user\"} 2\n"
    "eval instant at 1m node_cpu % 2\n"
    "  {instance=\"abc\",job=\"node\",mode=\"idle\"} 1\n"
    "  {instance=\"abc\",job=\"node\",mode=\"user\"} 1\n"
    "  {instance=\"def\",job=\"node\",mode=\"idle\"} 0\n"
    "  {instance=\"def\",job=\"node\",mode=\"user\"} 0\n"
    "clear\n"
    "load 5m\n"
    "  random{foo=\"bar\"} 2\n"
    "  metricA{baz=\"meh\"} 3\n"
    "  metricB{baz=\"meh\"} 4\n"
    "eval instant at 1m random + on() metricA\n"
    "  {} 5\n"
    "eval instant at 1m metricA + ignoring() metricB\n"
    "  {baz=\"meh\"} 7\n"
    "clear\n"
    "load 5m\n"
    "  testmetric1{src=\"a\",dst=\"b\"} 0\n"
    "  testmetric2{src=\"a\",dst=\"b\"} 1\n"
    "eval_fail instant at 0m -{__name__=~'testmetric1|testmetric2'} | vector cannot contain metrics with the same labelset\n"
    "eval_fail instant at 0m abs({__name__=~'testmetric1|testmetric2'}) | vector cannot contain metrics with the same labelset\n"
    "clear\n"
    "load 5m\n"
    "  test_total{instance=\"localhost\"} 50\n"
    "  test_smaller{instance=\"localhost\"} 10\n"
    "eval instant at 1m test_total > bool test_smaller\n"
    "  {instance=\"localhost\"} 1\n"
    "eval instant at 1m test_total > test_smaller\n"
    "  test_total{instance=\"localhost\"} 50\n"
    "eval instant at 1m test_total < test_smaller\n"
    "clear\n"
    "load 5m\n"
    "  trigy{} 10\n"
    "  trigx{} 20\n"
    "  trigNaN{} NaN\n"
    "eval instant at 1m trigy atan2 trigx\n"
    "  {} 0.4636476090008061\n"
    "eval instant at 1m trigy atan2 trigNaN\n"
    "  {} NaN\n"
    "eval instant at 1m 10 atan2 20\n"
    "  0.4636476090008061\n"
    "clear\n"
    "load 6m\n"
    "  left_floats  1 2 _ _ 3 stale 4  5  NaN Inf -Inf\n"
    "  right_floats 4 _ _ 5 3 7     -1 20 NaN Inf -Inf\n"
    "eval range from 0 to 60m step 6m left_floats == right_floats\n"
    "  left_floats _ _ _ _ 3 _ _ _ _ Inf -Inf\n"
    "eval range from 0 to 60m step 6m left_floats == bool right_floats\n"
    "  {} 0 _ _ _ 1 _ 0 0 0 1 1\n"
    "eval range from 0 to 60m step 6m left_floats != right_floats\n"
    "  left_floats 1 _ _ _ _ _ 4 5 NaN _ _\n"
    "eval range from 0 to 60m step 6m left_floats > bool right_floats\n"
    "  {} 0 _ _ _ 0 _ 1 0 0 0 0\n"
    "eval range from 0 to 60m step 6m left_floats <= right_floats\n"
    "  left_floats 1 _ _ _ 3 _ _ 5 _ Inf -Inf\n"
    "eval range from 0 to 60m step 6m left_floats != 3\n"
    "  left_floats 1 2 _ _ _ _ 4 5 NaN Inf -Inf\n"
    "eval range from 0 to 60m step 6m left_floats == bool NaN\n"
    "  {} 0 0 _ _ 0 _ 0 0 0 0 0\n"
    "eval range from 0 to 60m step 6m 3 < left_floats\n"
    "  left_floats _ _ _ _ _ _ 4 5 _ Inf _\n"
    "eval range from 0 to 60m step 6m 3 >= left_floats\n"
    "  left_floats 1 2 _ _ 3 _ _ _ _ _ -Inf\n"
    "eval range from 0 to 60m step 6m Inf == bool left_floats\n"
    "  {} 0 0 _ _ 0 _ 0 0 0 1 0\n"
    "eval range from 0 to 60m step 6m NaN == left_floats\n";

static const char *const SEL_SCRIPT =
    "load 10s\n"
    "  metric 0 1 stale 2\n"
    "eval instant at 10s metric\n"
    "  {__name__=\"metric\"} 1\n"
    "eval instant at 20s metric\n"
    "eval instant at 30s metric\n"
    "  {__name__=\"metric\"} 2\n"
    "eval instant at 329s metric\n"
    "  {__name__=\"metric\"} 2\n"
    "eval instant at 330s metric\n"
    "eval instant at 30s count_over_time(metric[1m])\n"
    "  {} 3\n"
    "eval instant at 10s count_over_time(metric[1s])\n"
    "  {} 1\n"
    "eval instant at 20s count_over_time(metric[1s])\n"
    "eval instant at 20s count_over_time(metric[10s])\n"
    "eval instant at 20s count_over_time(metric[20s])\n"
    "  {} 1\n"
    "eval range from 0 to 40s step 10s metric\n"
    "  metric 0 1 _ 2 2\n"
    "eval instant at 10s metric[20s]\n"
    "  metric 0 1\n"
    "compat 2\n"
    "eval instant at 330s metric\n"
    "  {__name__=\"metric\"} 2\n"
    "eval instant at 331s metric\n"
    "eval instant at 20s count_over_time(metric[10s])\n"
    "  {} 1\n"
    "eval instant at 20s count_over_time(metric[20s])\n"
    "  {} 2\n"
    "eval instant at 10s metric[20s]\n"
    "  metric 0 1\n"
    "eval instant at 20s metric[10s]\n"
    "  metric 1\n"
    "compat 3\n"
    "clear\n"
    "load 10s\n"
    "  metric 0\n"
    "eval instant at 0s metric\n"
    "  {__name__=\"metric\"} 0\n"
    "eval instant at 299s metric\n"
    "  {__name__=\"metric\"} 0\n"
    "eval instant at 300s metric\n"
    "lookback 1m\n"
    "eval instant at 59s metric\n"
    "  {__name__=\"metric\"} 0\n"
    "eval instant at 60s metric\n"
    "lookback 5m\n"
    "clear\n"
    "load 10s\n"
    "  metric{job=\"1\"} 0+1x1000\n"
    "  metric{job=\"2\"} 0+2x1000\n"
    "eval instant at 50s metric offset 10s\n"
    "  metric{job=\"1\"} 4\n"
    "  metric{job=\"2\"} 8\n"
    "eval instant at 50s metric offset -10s\n"
    "  metric{job=\"1\"} 6\n"
    "  metric{job=\"2\"} 12\n"
    "eval range from 0 to 25s step 10s metric{job=\"1\"}\n"
    "  metric{job=\"1\"} 0 1 2\n"
    "eval instant at 10s metric @ 100\n"
    "  metric{job=\"1\"} 10\n"
    "  metric{job=\"2\"} 20\n"
    "eval instant at 10s metric @ 100 offset 50s\n"
    "  metric{job=\"1\"} 5\n"
    "  metric{job=\"2\"} 10\n"
    "eval instant at 10s metric @ 0 offset -50s\n"
    "  metric{job=\"1\"} 5\n"
    "  metric{job=\"2\"} 10\n"
    "eval instant at 10s -metric @ 100\n"
    "  {job=\"1\"} -10\n"
    "  {job=\"2\"} -20\n"
    "eval instant at 25s sum_over_time(metric{job=\"1\"}[100s] @ 100)\n"
    "  {job=\"1\"} 55\n"
    "eval instant at 25s sum_over_time(metric{job=\"1\"}[100s] @ 100 offset 50s)\n"
    "  {job=\"1\"} 15\n"
    "eval instant at 25s metric{job=\"1\"} @ 50 + metric{job=\"1\"} @ 100\n"
    "  {job=\"1\"} 15\n"
    "eval instant at 25s sum_over_time(metric{job=\"1\"}[100s] @ 100) + label_replace(sum_over_time(metric{job=\"2\"}[100s] @ 100), \"job\", \"1\", \"\", \"\")\n"
    "  {job=\"1\"} 165\n"
    "eval instant at 25s rate(metric{job=\"1\"}[100s] @ 100) + label_replace(rate(metric{job=\"2\"}[123s] @ 200), \"job\", \"1\", \"\", \"\")\n"
    "  {job=\"1\"} 0.3\n"
    "eval range from 0 to 20s step 10s metric{job=\"1\"} @ end()\n"
    "  metric{job=\"1\"} 2 2 2\n"
    "eval range from 0 to 20s step 10s metric{job=\"1\"} @ start()\n"
    "  metric{job=\"1\"} 0 0 0\n"
    "eval instant at 10m timestamp(metric{job=\"1\"} @ 10)\n"
    "  {job=\"1\"} 10\n"
    "eval instant at 10m timestamp(timestamp(metric{job=\"1\"} @ 10))\n"
    "  {job=\"1\"} 600\n"
    "eval instant at 15s timestamp(metric{job=\"1\"})\n"
    "  {job=\"1\"} 10\n"
    "eval instant at 10s minute(metric @ 1500)\n"
    "  {job=\"1\"} 2\n"
    "  {job=\"2\"} 5\n";

static const char *const SUBQ_SCRIPT =
    "load 10s\n"
    "  metric 1 2\n"
    "eval instant at 10s sum_over_time(metric[50s:10s])\n"
    "  {} 3\n"
    "eval instant at 10s sum_over_time(metric[50s:5s])\n"
    "  {} 4\n"
    "eval instant at 5m sum_over_time(metric[50s:10s])\n"
    "  {} 10\n"
    "eval instant at 10s rate(metric[20s:10s])\n"
    "  {} 0.1\n"
    "eval instant at 20s rate(metric[20s:5s])\n"
    "  {} 0.06666666666666667\n"
    "clear\n"
    "load 10s\n"
    "  http_requests{job=\"api-server\", instance=\"1\", group=\"production\"} 0+20x1000 200+30x1000\n"
    "  http_requests{job=\"api-server\", instance=\"0\", group=\"production\"} 0+10x1000 100+30x1000\n"
    "  http_requests{job=\"api-server\", instance=\"0\", group=\"canary\"} 0+30x1000 300+80x1000\n"
    "  http_requests{job=\"api-server\", instance=\"1\", group=\"canary\"} 0+40x2000\n"
    "eval instant at 8000s rate(http_requests{group=~\"pro.*\"}[1m:10s])\n"
    "  {job=\"api-server\", instance=\"0\", group=\"production\"} 1\n"
    "  {job=\"api-server\", instance=\"1\", group=\"production\"} 2\n"
    "eval instant at 20000s avg_over_time(rate(http_requests[1m])[1m:1s])\n"
    "  {job=\"api-server\", instance=\"0\", group=\"canary\"} 8\n"
    "  {job=\"api-server\", instance=\"1\", group=\"canary\"} 4\n"
    "  {job=\"api-server\", instance=\"1\", group=\"production\"} 3\n"
    "  {job=\"api-server\", instance=\"0\", group=\"production\"} 3\n"
    "clear\n"
    "load 10s\n"
    "  metric1 0+1x1000\n"
    "  metric2 0+2x1000\n"
    "  metric3 0+3x1000\n"
    "eval instant at 1000s sum_over_time(metric1[30s:10s])\n"
    "  {} 297\n"
    "eval instant at 1000s sum_over_time(metric1[30s:5s])\n"
    "  {} 591\n"
    "eval instant at 1010s sum_over_time(metric1[30s:10s] offset 10s)\n"
    "  {} 297\n"
    "eval instant at 1010s sum_over_time(metric1[30s:10s] offset 7s)\n"
    "  {} 297\n"
    "eval instant at 1010s sum_over_time((metric1)[30s:10s] offset 3s)\n"
    "  {} 297\n"
    "eval instant at 1000s rate(sum_over_time(metric1[30s:10s])[50s:10s])\n"
    "  {} 0.30000000000000004\n"
    "eval instant at 1000s rate(sum_over_time((metric1+metric2+metric3)[30s:10s])[30s:10s])\n"
    "  {} 1.8\n"
    "eval range from 5s to 25s step 10s max_over_time(metric1[10s:10s])\n"
    "  {} 0 1 2\n"
    "eval instant at 10m count_over_time(metric1[5m:])\n"
    "  {} 5\n"
    "eval instant at 30s metric1[30s:10s]\n"
    "  metric1 1 2 3\n"
    "eval_fail range from 0 to 30s step 10s metric1[30s:10s] | range vector\n"
    "clear\n"
    "load 10s\n"
    "  metric{job=\"1\"} 0+1x1000\n"
    "eval instant at 25s sum_over_time(metric{job=\"1\"}[100s:1s] @ 100)\n"
    "  {job=\"1\"} 460\n"
    "eval instant at 25s sum_over_time(metric{job=\"1\"}[100s:1s] @ 100 offset 20s)\n"
    "  {job=\"1\"} 288\n"
    "eval instant at 100s sum_over_time(sum_over_time(metric{job=\"1\"}[100s] @ 100)[100s:25s] @ 50)\n"
    "  {job=\"1\"} 220\n"
    "eval instant at 0s sum_over_time(sum_over_time(sum_over_time(metric{job=\"1\"}[10s])[100s:25s] @ 50)[3s:1s] @ 200)\n"
    "  {job=\"1\"} 21\n"
    "eval instant at 0s sum_over_time(sum_over_time(sum_over_time(metric{job=\"1\"}[20s])[20s:10s] offset 10s)[100s:25s] @ 1000)\n"
    "  {job=\"1\"} 1504\n"
    "eval instant at 0s sum_over_time(minute()[50m:1m] @ 6000)\n"
    "  {} 1315\n"
    "eval instant at 0s sum_over_time(vector(time())[100s:1s] @ 3000)\n"
    "  {} 295050\n"
    "eval instant at 0s sum_over_time(timestamp(metric{job=\"1\"} @ 10)[100s:10s] @ 3000)\n"
    "  {job=\"1\"} 100\n";

static const char *const FUNC_SCRIPT =
    "load 5m\n"
    "  http_requests{path=\"/foo\"} 1 2 3 0 1 0 0 1 2 0\n"
    "  http_requests{path=\"/bar\"} 1 2 3 4 5 1 2 3 4 5\n"
    "  http_requests{path=\"/biz\"} 0 0 0 0 0 1 1 1 1 1\n"
    "eval instant at 50m resets(http_requests[5m])\n"
    "eval instant at 50m resets(http_requests[20m])\n"
    "  {path=\"/foo\"} 1\n"
    "  {path=\"/bar\"} 0\n"
    "  {path=\"/biz\"} 0\n"
    "eval instant at 50m resets(http_requests[50m])\n"
    "  {path=\"/foo\"} 3\n"
    "  {path=\"/bar\"} 1\n"
    "  {path=\"/biz\"} 0\n"
    "eval instant at 50m changes(http_requests[30m])\n"
    "  {path=\"/foo\"} 3\n"
    "  {path=\"/bar\"} 4\n"
    "  {path=\"/biz\"} 0\n"
    "eval instant at 50m changes((http_requests[50m]))\n"
    "  {path=\"/foo\"} 7\n"
    "  {path=\"/bar\"} 8\n"
    "  {path=\"/biz\"} 1\n"
    "eval instant at 50m last_over_time(http_requests[10m])\n"
    "  http_requests{path=\"/foo\"} 0\n"
    "  http_requests{path=\"/bar\"} 5\n"
    "  http_requests{path=\"/biz\"} 1\n"
    "eval instant at 50m max_over_time(http_requests[50m])\n"
    "  {path=\"/foo\"} 3\n"
    "  {path=\"/bar\"} 5\n"
    "  {path=\"/biz\"} 1\n"
    "clear\n"
    "load 5m\n"
    "  http_requests_total{path=\"/foo\"} 0+10x10\n"
    "  http_requests_total{path=\"/bar\"} 0+18x5 0+18x5\n"
    "  http_requests_total{path=\"/dings\"} 10+10x10\n"
    "  http_requests_total{path=\"/bumms\"} 1+10x10\n"
    "eval instant at 50m increase(http_requests_total[50m])\n"
    "  {path=\"/foo\"} 100\n"
    "  {path=\"/bar\"} 160\n"
    "  {path=\"/dings\"} 100\n"
    "  {path=\"/bumms\"} 100\n"
    "eval instant at 50m increase(http_requests_total[100m])\n"
    "  {path=\"/foo\"} 100\n"
    "  {path=\"/bar\"} 162\n"
    "  {path=\"/dings\"} 105\n"
    "  {path=\"/bumms\"} 101\n"
    "clear\n"
    "load 5m\n"
    "  testcounter_reset_middle_total 0+27x4 0+27x5\n"
    "  testcounter_reset_end_total 0+10x9 0 10\n"
    "eval instant at 50m rate(testcounter_reset_middle_total[50m])\n"
    "  {} 0.08\n"
    "eval instant at 50m rate(testcounter_reset_end_total[5m])\n"
    "eval instant at 50m rate(testcounter_reset_end_total[6m])\n"
    "  {} 0\n"
    "clear\n"
    "load 5m\n"
    "  calculate_rate_offset_total{x=\"a\"} 0+10x10\n"
    "  calculate_rate_offset_total{x=\"b\"} 0+20x10\n"
    "  calculate_rate_window_total 0+80x10\n"
    "eval instant at 50m rate(calculate_rate_window_total[50m])\n"
    "  {} 0.26666666666666666\n"
    "eval instant at 50m rate(calculate_rate_offset_total[10m] offset 5m)\n"
    "  {x=\"a\"} 0.03333333333333333\n"
    "  {x=\"b\"} 0.06666666666666667\n"
    "clear\n"
    "load 4m\n"
    "  testcounter_zero_cutoff_total{start=\"0m\"} 0+240x10\n"
    "  testcounter_zero_cutoff_total{start=\"1m\"} 60+240x10\n"
    "  testcounter_zero_cutoff_total{start=\"2m\"} 120+240x10\n"
    "  testcounter_zero_cutoff_total{start=\"3m\"} 180+240x10\n"
    "eval instant at 10m rate(testcounter_zero_cutoff_total[20m])\n"
    "  {start=\"0m\"} 0.5\n"
    "  {start=\"1m\"} 0.55\n"
    "  {start=\"2m\"} 0.6\n"
    "  {start=\"3m\"} 0.6\n"
    "clear\n"
    "load 5m\n"
    "  http_requests{path=\"/foo\"} 0 50 100 150 200\n"
    "  http_requests{path=\"/bar\"} 200 150 100 50 0\n"
    "eval instant at 20m delta(http_requests[20m])\n"
    "  {path=\"/foo\"} 200\n"
    "  {path=\"/bar\"} -200\n"
    "eval instant at 20m idelta(http_requests[20m])\n"
    "  {path=\"/foo\"} 50\n"
    "  {path=\"/bar\"} -50\n"
    "clear\n"
    "load 5m\n"
    "  testcounter_reset_middle_total 0+10x4 0+10x5\n"
    "  http_requests_total{job=\"app-server\", instance=\"1\", group=\"canary\"} 0+80x10\n"
    "eval instant at 50m deriv(http_requests_total{group=\"canary\", instance=\"1\", job=\"app-server\"}[50m])\n"
    "  {group=\"canary\", instance=\"1\", job=\"app-server\"} 0.26666666666666666\n"
    "eval instant at 50m deriv(testcounter_reset_middle_total[100m])\n"
    "  {} 0.010606060606060607\n"
    "eval instant at 50m predict_linear(testcounter_reset_middle_total[50m], 3600)\n"
    "  {} 70\n"
    "eval instant at 50m predict_linear(testcounter_reset_middle_total[55m] @ 3000, 3600)\n"
    "  {} 76.81818181818181\n"
    "eval instant at 10m predict_linear(testcounter_reset_middle_total[55m] @ 3000, 3600)\n"
    "  {} 51.36363636363637\n"
    "clear\n"
    "load 5m\n"
    "  testmetric{src=\"source-value-10\",dst=\"original-destination-value\"} 0\n"
    "  testmetric{src=\"source-value-20\",dst=\"original-destination-value\"} 1\n"
    "eval instant at 0m label_replace(testmetric, \"dst\", \"destination-value-$1\", \"src\", \"source-value-(.*)\")\n"
    "  testmetric{src=\"source-value-10\",dst=\"destination-value-10\"} 0\n"
    "  testmetric{src=\"source-value-20\",dst=\"destination-value-20\"} 1\n"
    "eval instant at 0m label_replace(testmetric, \"dst\", \"destination-value-$1\", \"src\", \"value-(.*)\")\n"
    "  testmetric{src=\"source-value-10\",dst=\"original-destination-value\"} 0\n"
    "  testmetric{src=\"source-value-20\",dst=\"original-destination-value\"} 1\n"
    "eval instant at 0m label_replace(testmetric, \"dst\", \"${1}x$2y$$\", \"src\", \"source-(?P<n>value)-(.*)\")\n"
    "  testmetric{src=\"source-value-10\",dst=\"valuex$\"} 0\n"
    "  testmetric{src=\"source-value-20\",dst=\"valuex$\"} 1\n"
    "eval instant at 0m label_replace(testmetric, \"dst\", \"$n-$1x-${2}\", \"src\", \"source-(?P<n>value)-(.*)\")\n"
    "  testmetric{src=\"source-value-10\",dst=\"value--10\"} 0\n"
    "  testmetric{src=\"source-value-20\",dst=\"value--20\"} 1\n"
    "eval instant at 0m label_replace(testmetric, \"dst\", \"\", \"dst\", \".*\")\n"
    "  testmetric{src=\"source-value-10\"} 0\n"
    "  testmetric{src=\"source-value-20\"} 1\n"
    "eval instant at 0m label_replace(testmetric, \"dst\", \"value-$1\", \"nonexistent-src\", \"(.*)\")\n"
    "  testmetric{src=\"source-value-10\",dst=\"value-\"} 0\n"
    "  testmetric{src=\"source-value-20\",dst=\"value-\"} 1\n"
    "eval_fail instant at 0m label_replace(testmetric, \"dst\", \"value-$1\", \"src\", \"(.*\") | invalid regular expression in label_replace()\n"
    "eval_fail instant at 0m label_replace(testmetric, \"src\", \"\", \"\", \"\") | vector cannot contain metrics with the same labelset\n"
    "eval instant at 0m label_replace((((testmetric))), (\"dst\"), (\"value-$1\"), (\"src\"), (\"source-value-(.*)\"))\n"
    "  testmetric{src=\"source-value-10\",dst=\"value-10\"} 0\n"
    "  testmetric{src=\"source-value-20\",dst=\"value-20\"} 1\n"
    "compat 2\n"
    "eval_fail instant at 0m label_replace(testmetric, \"invalid-label-name\", \"\", \"src\", \"(.*)\") | invalid destination label name in label_replace(): invalid-label-name\n"
    "compat 3\n"
    "clear\n"
    "load 5m\n"
    "  testmetric{src=\"a\",src1=\"b\",src2=\"c\",dst=\"original-destination-value\"} 0\n"
    "  testmetric{src=\"d\",src1=\"e\",src2=\"f\",dst=\"original-destination-value\"} 1\n"
    "eval instant at 0m label_join(testmetric, \"dst\", \"-\", \"src\", \"src1\", \"src2\")\n"
    "  testmetric{src=\"a\",src1=\"b\",src2=\"c\",dst=\"a-b-c\"} 0\n"
    "  testmetric{src=\"d\",src1=\"e\",src2=\"f\",dst=\"d-e-f\"} 1\n"
    "eval instant at 0m label_join(testmetric, \"dst\", \"\", \"emptysrc\", \"emptysrc1\", \"emptysrc2\")\n"
    "  testmetric{src=\"a\",src1=\"b\",src2=\"c\"} 0\n"
    "  testmetric{src=\"d\",src1=\"e\",src2=\"f\"} 1\n"
    "eval instant at 0m label_join(testmetric, \"dst\", \", \", \"src\", \"nope\", \"src2\")\n"
    "  testmetric{src=\"a\",src1=\"b\",src2=\"c\",dst=\"a, , c\"} 0\n"
    "  testmetric{src=\"d\",src1=\"e\",src2=\"f\",dst=\"d, , f\"} 1\n"
    "clear\n"
    "load 5m\n"
    "  http_requests{job=\"api-server\", instance=\"0\", group=\"production\"} 0+10x10\n"
    "  http_requests{job=\"api-server\", instance=\"1\", group=\"production\"} 0+20x10\n"
    "  http_requests{job=\"api-server\", instance=\"0\", group=\"canary\"} 0+30x10\n"
    "  http_requests{job=\"api-server\", instance=\"1\", group=\"canary\"} 0+40x10\n"
    "  http_requests{job=\"api-server\", instance=\"2\", group=\"canary\"} NaN NaN NaN NaN NaN NaN NaN NaN NaN NaN NaN\n"
    "  http_requests{job=\"app-server\", instance=\"0\", group=\"production\"} 0+50x10\n"
    "eval_ordered instant at 50m sort(http_requests)\n"
    "  http_requests{group=\"production\", instance=\"0\", job=\"api-server\"} 100\n"
    "  http_requests{group=\"production\", instance=\"1\", job=\"api-server\"} 200\n"
    "  http_requests{group=\"canary\", instance=\"0\", job=\"api-server\"} 300\n"
    "  http_requests{group=\"canary\", instance=\"1\", job=\"api-server\"} 400\n"
    "  http_requests{group=\"production\", instance=\"0\", job=\"app-server\"} 500\n"
    "  http_requests{group=\"canary\", instance=\"2\", job=\"api-server\"} NaN\n"
    "eval_ordered instant at 50m sort_desc(http_requests)\n"
    "  http_requests{group=\"production\", instance=\"0\", job=\"app-server\"} 500\n"
    "  http_requests{group=\"canary\", instance=\"1\", job=\"api-server\"} 400\n"
    "  http_requests{group=\"canary\", instance=\"0\", job=\"api-server\"} 300\n"
    "  http_requests{group=\"production\", instance=\"1\", job=\"api-server\"} 200\n"
    "  http_requests{group=\"production\", instance=\"0\", job=\"api-server\"} 100\n"
    "  http_requests{group=\"canary\", instance=\"2\", job=\"api-server\"} NaN\n"
    "eval instant at 50m absent(nonexistent)\n"
    "  {} 1\n"
    "eval instant at 50m absent(nonexistent{job=\"testjob\", instance=\"testinstance\", method=~\".x\"})\n"
    "  {instance=\"testinstance\", job=\"testjob\"} 1\n"
    "eval instant at 50m absent(nonexistent{job=\"testjob\",job=\"testjob2\",foo=\"bar\"})\n"
    "  {foo=\"bar\"} 1\n"
    "eval instant at 50m absent(sum(nonexistent{job=\"testjob\", instance=\"testinstance\"}))\n"
    "  {} 1\n"
    "eval instant at 50m absent(http_requests)\n"
    "eval instant at 50m absent(sum(http_requests))\n"
    "eval instant at 50m absent_over_time(nonexistent{job=\"a\"}[1m])\n"
    "  {job=\"a\"} 1\n"
    "eval instant at 50m absent_over_time(http_requests[1m])\n"
    "eval range from 0 to 20m step 10m absent_over_time(http_requests{instance=\"0\"}[1m] offset 10m)\n"
    "  {instance=\"0\"} 1 _ _\n"
    "eval instant at 50m present_over_time(http_requests{instance=\"0\"}[1m])\n"
    "  {group=\"production\", instance=\"0\", job=\"api-server\"} 1\n"
    "  {group=\"canary\", instance=\"0\", job=\"api-server\"} 1\n"
    "  {group=\"production\", instance=\"0\", job=\"app-server\"} 1\n"
    "eval instant at 50m scalar(http_requests{instance=\"1\", group=\"canary\"})\n"
    "  400\n"
    "eval instant at 50m scalar(http_requests)\n"
    "  NaN\n"
    "eval instant at 50m vector(7)\n"
    "  {} 7\n"
    "eval instant at 50m time()\n"
    "  3000\n"
    "eval range from 0 to 2m step 1m time()\n"
    "  {} 0 60 120\n"
    "eval instant at 50m pi()\n"
    "  3.141592653589793\n"
    "eval instant at 50m clamp(http_requests{instance=\"0\"}, 150, 400)\n"
    "  {group=\"production\", instance=\"0\", job=\"api-server\"} 150\n"
    "  {group=\"canary\", instance=\"0\", job=\"api-server\"} 300\n"
    "  {group=\"production\", instance=\"0\", job=\"app-server\"} 400\n"
    "eval instant at 50m clamp(http_requests{instance=\"0\"}, 5, -5)\n"
    "eval instant at 50m clamp_min(http_requests{instance=\"0\", job=\"api-server\"}, 200)\n"
    "  {group=\"production\", instance=\"0\", job=\"api-server\"} 200\n"
    "  {group=\"canary\", instance=\"0\", job=\"api-server\"} 300\n"
    "eval instant at 50m round(http_requests{instance=\"0\", job=\"api-server\"} / 7, 5)\n"
    "  {group=\"production\", instance=\"0\", job=\"api-server\"} 15\n"
    "  {group=\"canary\", instance=\"0\", job=\"api-server\"} 45\n"
    "eval instant at 50m sqrt(http_requests{instance=\"0\", job=\"app-server\"} / 5)\n"
    "  {group=\"production\", instance=\"0\", job=\"app-server\"} 10\n"
    "eval instant at 50m timestamp(http_requests{instance=\"0\", job=\"app-server\"})\n"
    "  {group=\"production\", instance=\"0\", job=\"app-server\"} 3000\n"
    "eval instant at 52m timestamp(http_requests{instance=\"0\", job=\"app-server\"})\n"
    "  {group=\"production\", instance=\"0\", job=\"app-server\"} 3000\n"
    "eval instant at 52m timestamp(-http_requests{instance=\"0\", job=\"app-server\"})\n"
    "  {group=\"production\", instance=\"0\", job=\"app-server\"} 3120\n"
    "eval instant at 0m hour()\n"
    "  {} 0\n"
    "eval instant at 0m year(vector(1136239445))\n"
    "  {} 2006\n"
    "eval instant at 0m month(vector(1136239445))\n"
    "  {} 1\n"
    "eval instant at 0m day_of_month(vector(1136239445))\n"
    "  {} 2\n"
    "eval instant at 0m day_of_week(vector(1136239445))\n"
    "  {} 1\n"
    "eval instant at 0m hour(vector(1136239445))\n"
    "  {} 22\n"
    "eval instant at 0m minute(vector(1136239445))\n"
    "  {} 4\n"
    "eval instant at 0m days_in_month(vector(1136239445))\n"
    "  {} 31\n"
    "eval instant at 50m quantile_over_time(0.5, http_requests{instance=\"0\", job=\"app-server\"}[20m])\n"
    "  {group=\"production\", instance=\"0\", job=\"app-server\"} 425\n"
    "eval instant at 50m avg_over_time(http_requests{instance=\"0\", job=\"app-server\"}[20m])\n"
    "  {group=\"production\", instance=\"0\", job=\"app-server\"} 425\n"
    "eval instant at 50m histogram_count(http_requests)\n";

static const char *const HIST_SCRIPT =
    "load 5m\n"
    "  testhistogram_bucket{le=\"0.1\", start=\"positive\"} 0+5x10\n"
    "  testhistogram_bucket{le=\".2\", start=\"positive\"} 0+7x10\n"
    "  testhistogram_bucket{le=\"1e0\", start=\"positive\"} 0+11x10\n"
    "  testhistogram_bucket{le=\"+Inf\", start=\"positive\"} 0+12x10\n"
    "  testhistogram_bucket{le=\"-.2\", start=\"negative\"} 0+1x10\n"
    "  testhistogram_bucket{le=\"-0.1\", start=\"negative\"} 0+2x10\n"
    "  testhistogram_bucket{le=\"0.3\", start=\"negative\"} 0+2x10\n"
    "  testhistogram_bucket{le=\"+Inf\", start=\"negative\"} 0+3x10\n"
    "  testhistogram2_bucket{le=\"0\"} 0+0x10\n"
    "  testhistogram2_bucket{le=\"2\"} 0+1x10\n"
    "  testhistogram2_bucket{le=\"4\"} 0+2x10\n"
    "  testhistogram2_bucket{le=\"6\"} 0+3x10\n"
    "  testhistogram2_bucket{le=\"+Inf\"} 0+3x10\n"
    "  testhistogram3_bucket{le=\"0\", start=\"positive\"} 0+0x10\n"
    "  testhistogram3_bucket{le=\"0.1\", start=\"positive\"} 0+5x10\n"
    "  testhistogram3_bucket{le=\".2\", start=\"positive\"} 0+7x10\n"
    "  testhistogram3_bucket{le=\"1e0\", start=\"positive\"} 0+11x10\n"
    "  testhistogram3_bucket{le=\"+Inf\", start=\"positive\"} 0+11x10\n"
    "  testhistogram3_bucket{le=\"-.25\", start=\"negative\"} 0+0x10\n"
    "  testhistogram3_bucket{le=\"-.2\", start=\"negative\"} 0+1x10\n"
    "  testhistogram3_bucket{le=\"-0.1\", start=\"negative\"} 0+2x10\n"
    "  testhistogram3_bucket{le=\"0.3\", start=\"negative\"} 0+2x10\n"
    "  testhistogram3_bucket{le=\"+Inf\", start=\"negative\"} 0+2x10\n"
    "  request_duration_seconds_bucket{job=\"job1\", instance=\"ins1\", le=\"0.1\"} 0+1x10\n"
    "  request_duration_seconds_bucket{job=\"job1\", instance=\"ins1\", le=\"0.2\"} 0+3x10\n"
    "  request_duration_seconds_bucket{job=\"job1\", instance=\"ins1\", le=\"+Inf\"} 0+4x10\n"
    "  request_duration_seconds_bucket{job=\"job1\", instance=\"ins2\", le=\"0.1\"} 0+2x10\n"
    "  request_duration_seconds_bucket{job=\"job1\", instance=\"ins2\", le=\"0.2\"} 0+5x10\n"
    "  request_duration_seconds_bucket{job=\"job1\", instance=\"ins2\", le=\"+Inf\"} 0+6x10\n"
    "  request_duration_seconds_bucket{job=\"job2\", instance=\"ins1\", le=\"0.1\"} 0+3x10\n"
    "  request_duration_seconds_bucket{job=\"job2\", instance=\"ins1\", le=\"0.2\"} 0+4x10\n"
    "  request_duration_seconds_bucket{job=\"job2\", instance=\"ins1\", le=\"+Inf\"} 0+6x10\n"
    "  request_duration_seconds_bucket{job=\"job2\", instance=\"ins2\", le=\"0.1\"} 0+4x10\n"
    "  request_duration_seconds_bucket{job=\"job2\", instance=\"ins2\", le=\"0.2\"} 0+7x10\n"
    "  request_duration_seconds_bucket{job=\"job2\", instance=\"ins2\", le=\"+Inf\"} 0+9x10\n"
    "eval instant at 50m histogram_quantile(0, testhistogram3_bucket)\n"
    "  {start=\"positive\"} 0\n"
    "  {start=\"negative\"} -0.25\n"
    "eval instant at 50m histogram_quantile(0.25, testhistogram3_bucket)\n"
    "  {start=\"positive\"} 0.055\n"
    "  {start=\"negative\"} -0.225\n"
    "eval instant at 50m histogram_quantile(0.75, testhistogram3_bucket)\n"
    "  {start=\"positive\"} 0.45\n"
    "  {start=\"negative\"} -0.15\n"
    "eval instant at 50m histogram_quantile(-0.1, testhistogram_bucket)\n"
    "  {start=\"positive\"} -Inf\n"
    "  {start=\"negative\"} -Inf\n"
    "eval instant at 50m histogram_quantile(1.01, testhistogram_bucket)\n"
    "  {start=\"positive\"} +Inf\n"
    "  {start=\"negative\"} +Inf\n"
    "eval instant at 50m histogram_quantile(NaN, testhistogram_bucket)\n"
    "  {start=\"positive\"} NaN\n"
    "  {start=\"negative\"} NaN\n"
    "eval instant at 50m histogram_quantile(0.2, testhistogram_bucket)\n"
    "  {start=\"positive\"} 0.048\n"
    "  {start=\"negative\"} -0.2\n"
    "eval instant at 50m histogram_quantile(0.8, rate(testhistogram_bucket[10m]))\n"
    "  {start=\"positive\"} 0.72\n"
    "  {start=\"negative\"} 0.3\n"
    "eval instant at 7m histogram_quantile(0.5, testhistogram2_bucket)\n"
    "  {} 3\n"
    "eval instant at 47m histogram_quantile(5./6., rate(testhistogram2_bucket[15m]))\n"
    "  {} 5\n"
    "eval instant at 50m histogram_quantile(0.5, sum(rate(request_duration_seconds_bucket[10m])) by (le))\n"
    "  {} 0.1277777777777778\n"
    "eval instant at 50m histogram_quantile(0.5, sum(rate(request_duration_seconds_bucket[10m])) by (le, instance))\n"
    "  {instance=\"ins1\"} 0.1333333333\n"
    "  {instance=\"ins2\"} 0.125\n"
    "eval instant at 50m histogram_quantile(0.3, rate(request_duration_seconds_bucket[10m]))\n"
    "  {instance=\"ins1\", job=\"job1\"} 0.11\n"
    "  {instance=\"ins2\", job=\"job1\"} 0.09\n"
    "  {instance=\"ins1\", job=\"job2\"} 0.06\n"
    "  {instance=\"ins2\", job=\"job2\"} 0.0675\n"
    "eval range from 40m to 50m step 5m histogram_quantile(0.5, testhistogram2_bucket)\n"
    "  {} 3 3 3\n"
    "eval instant at 50m histogram_quantile(0.5, testhistogram2_bucket{le!=\"+Inf\"})\n"
    "  {} NaN\n"
    "eval instant at 50m histogram_count(testhistogram3_bucket)\n";

/* ------------------------------------------------------------ tests */

static const char *const RANGE_SCRIPT =
    "load 15s\n"
    "  bar 0 1 10 100 1000\n"
    "eval range from 0 to 1m step 30s sum_over_time(bar[30s])\n"
    "  {} 0 11 1100\n"
    "clear\n"
    "load 15s\n"
    "  bar 0 1 10 100 1000 0 0 0 0\n"
    "eval range from 0 to 2m step 1m sum_over_time(bar[30s])\n"
    "  {} 0 1100 0\n"
    "clear\n"
    "load 30s\n"
    "  bar 0 1 10 100 1000 10000 100000 1000000 10000000\n"
    "eval range from 0 to 4m step 1m sum_over_time(bar[30s])\n"
    "  {} 0 10 1000 100000 10000000\n"
    "clear\n"
    "load 15s\n"
    "  bar 5 17 42 2 7 905 51\n"
    "eval range from 0 to 90s step 30s sum_over_time(bar[30s])\n"
    "  {} 5 59 9 956\n"
    "clear\n"
    "load 30s\n"
    "  metric 1+1x8\n"
    "eval range from 0 to 2m step 1m metric\n"
    "  metric 1 3 5\n"
    "clear\n"
    "load 30s\n"
    "  foo{job=\"1\"} 1+1x4\n"
    "  bar{job=\"2\"} 1+1x4\n"
    "eval range from 0 to 2m step 1m foo > 2 or bar\n"
    "  foo{job=\"1\"} _ 3 5\n"
    "  bar{job=\"2\"} 1 3 5\n"
    "clear\n"
    "load 30s\n"
    "  requests{job=\"1\", __address__=\"bar\"} 100\n"
    "eval range from 0 to 2m step 1m requests * 2\n"
    "  {job=\"1\", __address__=\"bar\"} 200 200 200\n"
    "clear\n"
    "load 10s\n"
    "  some_metric{env=\"a\"} 1+1x5\n"
    "  some_metric{env=\"b\"} 2+2x5\n"
    "eval instant at 1m some_metric[1m]\n"
    "  some_metric{env=\"a\"} 2 3 4 5 6\n"
    "  some_metric{env=\"b\"} 4 6 8 10 12\n"
    "clear\n"
    "load 1m\n"
    "  some_metric_with_stale_marker 0 1 stale 3\n"
    "eval instant at 3m some_metric_with_stale_marker[3m]\n"
    "  some_metric_with_stale_marker 1 3\n"
    "clear\n"
    "load 10m\n"
    "  metric_a 1 _\n"
    "  metric_b 3 4\n"
    "eval range from 0 to 20m step 10m -metric_a or -metric_b\n"
    "  {} -1 -4 _\n"
    "eval range from 0 to 20m step 10m (metric_a or metric_b) * -1\n"
    "  {} -1 -4 _\n"
    "clear\n"
    "load 1s\n"
    "  node_namespace_pod:kube_pod_info:{namespace=\"observability\",node=\"gke-1\",pod=\"node-exporter-l454v\"} 1\n"
    "  node_cpu_seconds_total{cpu=\"10\",job=\"node-exporter\",mode=\"idle\",namespace=\"observability\",pod=\"node-exporter-l454v\"} 449\n"
    "  node_cpu_seconds_total{cpu=\"35\",job=\"node-exporter\",mode=\"idle\",namespace=\"observability\",pod=\"node-exporter-l454v\"} 449\n"
    "eval instant at 4s count by(namespace, pod, cpu) (node_cpu_seconds_total{cpu=~\".*\",job=\"node-exporter\",mode=\"idle\"}) * on(namespace, pod) group_left(node) node_namespace_pod:kube_pod_info:{namespace=\"observability\",pod=\"node-exporter-l454v\"}\n"
    "  {cpu=\"10\",namespace=\"observability\",node=\"gke-1\",pod=\"node-exporter-l454v\"} 1\n"
    "  {cpu=\"35\",namespace=\"observability\",node=\"gke-1\",pod=\"node-exporter-l454v\"} 1\n";

static const char *const WINDOW_SCRIPT =
    "load 1ms\n"
    "  metric 1+0x4000\n"
    "eval instant at 4s sum_over_time(metric[1000ms])\n"
    "  {} 1000\n"
    "eval instant at 4s sum_over_time(metric[1001ms])\n"
    "  {} 1001\n"
    "eval instant at 4s sum_over_time(metric[2003ms])\n"
    "  {} 2003\n"
    "eval instant at 4s sum_over_time(metric[3000ms])\n"
    "  {} 3000\n"
    "compat 2\n"
    "eval instant at 4s sum_over_time(metric[1000ms])\n"
    "  {} 1001\n"
    "compat 3\n"
    "clear\n"
    "load 10s\n"
    "  metric 1 2 3 4 5\n"
    "  metric2 1 2 3 4 Inf\n"
    "  metric4 1 2 3 Inf -Inf\n"
    "  metric8 9.988465674311579e+307 9.988465674311579e+307\n"
    "  metric10 -9.988465674311579e+307 9.988465674311579e+307\n"
    "eval instant at 55s avg_over_time(metric[10s])\n"
    "eval instant at 55s avg_over_time(metric[20s])\n"
    "  {} 5\n"
    "eval instant at 55s avg_over_time(metric[1m])\n"
    "  {} 3\n"
    "eval instant at 55s sum_over_time(metric[1m])/count_over_time(metric[1m])\n"
    "  {} 3\n"
    "eval instant at 55s avg_over_time(metric2[1m])\n"
    "  {} Inf\n"
    "eval instant at 55s avg_over_time(metric4[1m])\n"
    "  {} NaN\n"
    "eval instant at 55s avg_over_time(metric8[1m])\n"
    "  {} 9.988465674311579e+307\n"
    "eval instant at 55s sum_over_time(metric8[1m])/count_over_time(metric8[1m])\n"
    "  {} +Inf\n"
    "eval instant at 55s avg_over_time(metric10[1m])\n"
    "  {} 0\n"
    "clear\n"
    "load 10s\n"
    "  metric 0 8 8 2 3\n"
    "eval instant at 1m stdvar_over_time(metric[2m])\n"
    "  {} 10.56\n"
    "eval instant at 1m stddev_over_time((metric[2m]))\n"
    "  {} 3.249615\n"
    "clear\n"
    "load 10s\n"
    "  metric 1 1e100 1 -1e100\n"
    "eval instant at 1m sum_over_time(metric[2m])\n"
    "  {} 2\n"
    "eval instant at 1m avg_over_time(metric[2m])\n"
    "  {} 0.5\n"
    "clear\n"
    "load 10s\n"
    "  foo 52+0x100\n"
    "eval instant at 10m avg_over_time(foo[130s]) == 52\n"
    "  {} 52\n";

static void test_promql_eval_windows(void **state)
{
    (void)state;
    run_script("windows", WINDOW_SCRIPT, 0);
}

static void test_promql_eval_range_queries(void **state)
{
    (void)state;
    run_script("range", RANGE_SCRIPT, 0);
}

static void test_promql_eval_aggregations(void **state)
{
    (void)state;
    run_script("aggregations", AGG_SCRIPT, 0);
}

static void test_promql_eval_operators(void **state)
{
    (void)state;
    run_script("operators", OPS_SCRIPT, 0);
}

static void test_promql_eval_selectors(void **state)
{
    (void)state;
    run_script("selectors", SEL_SCRIPT, 0);
}

static void test_promql_eval_subqueries(void **state)
{
    (void)state;
    run_script("subqueries", SUBQ_SCRIPT, 0);
}

static void test_promql_eval_functions(void **state)
{
    (void)state;
    run_script("functions", FUNC_SCRIPT, 0);
}

static void test_promql_eval_histograms(void **state)
{
    (void)state;
    run_script("histograms", HIST_SCRIPT, 0);
}

static const char *const EXP_SCRIPT =
    "load 5m\n"
    "  series{label=\"a\", n=\"10\"} 1\n"
    "  series{label=\"b\", n=\"9\"} 2\n"
    "  series{label=\"c\", n=\"100\"} 3\n"
    "eval_ordered instant at 0m sort_by_label(series, \"n\")\n"
    "  series{label=\"b\", n=\"9\"} 2\n"
    "  series{label=\"a\", n=\"10\"} 1\n"
    "  series{label=\"c\", n=\"100\"} 3\n"
    "eval_ordered instant at 0m sort_by_label_desc(series, \"label\")\n"
    "  series{label=\"c\", n=\"100\"} 3\n"
    "  series{label=\"b\", n=\"9\"} 2\n"
    "  series{label=\"a\", n=\"10\"} 1\n"
    "eval instant at 0m limitk(2, series)\n"
    "  series{label=\"a\", n=\"10\"} 1\n"
    "  series{label=\"b\", n=\"9\"} 2\n"
    "eval instant at 0m limit_ratio(1, series)\n"
    "  series{label=\"a\", n=\"10\"} 1\n"
    "  series{label=\"b\", n=\"9\"} 2\n"
    "  series{label=\"c\", n=\"100\"} 3\n"
    "eval instant at 0m limit_ratio(0, series)\n"
    "eval instant at 0m count(limit_ratio(0.5, series) or limit_ratio(-0.5, series))\n"
    "  {} 3\n"
    "eval instant at 0m mad_over_time(series{label=\"a\"}[1m])\n"
    "  {label=\"a\", n=\"10\"} 0\n"
    "clear\n"
    "load 5m\n"
    "  cpu_time_total{job=\"cpu\", cpu=\"100\"} 100+0x10\n"
    "  cpu_time_total{job=\"cpu\", cpu=\"21\"} 100+0x10\n"
    "  cpu_time_total{job=\"cpu\", cpu=\"0\"} 100+0x10\n"
    "  cpu_time_total{job=\"cpu\", cpu=\"10\"} 100+0x10\n"
    "  cpu_time_total{job=\"cpu\", cpu=\"2\"} 100+0x10\n"
    "  cpu_time_total{job=\"cpu\", cpu=\"1\"} 100+0x10\n"
    "  node_uname_info{job=\"node_exporter\", instance=\"4m600\", release=\"1.2.3\"} 100+0x10\n"
    "  node_uname_info{job=\"node_exporter\", instance=\"4m5\", release=\"1.11.3\"} 100+0x10\n"
    "  node_uname_info{job=\"node_exporter\", instance=\"4m1000\", release=\"1.111.3\"} 100+0x10\n"
    "eval_ordered instant at 50m sort_by_label(cpu_time_total, \"cpu\")\n"
    "  cpu_time_total{job=\"cpu\", cpu=\"0\"} 100\n"
    "  cpu_time_total{job=\"cpu\", cpu=\"1\"} 100\n"
    "  cpu_time_total{job=\"cpu\", cpu=\"2\"} 100\n"
    "  cpu_time_total{job=\"cpu\", cpu=\"10\"} 100\n"
    "  cpu_time_total{job=\"cpu\", cpu=\"21\"} 100\n"
    "  cpu_time_total{job=\"cpu\", cpu=\"100\"} 100\n"
    "eval_ordered instant at 50m sort_by_label(node_uname_info, \"instance\")\n"
    "  node_uname_info{job=\"node_exporter\", instance=\"4m5\", release=\"1.11.3\"} 100\n"
    "  node_uname_info{job=\"node_exporter\", instance=\"4m600\", release=\"1.2.3\"} 100\n"
    "  node_uname_info{job=\"node_exporter\", instance=\"4m1000\", release=\"1.111.3\"} 100\n"
    "eval_ordered instant at 50m sort_by_label(node_uname_info, \"release\")\n"
    "  node_uname_info{job=\"node_exporter\", instance=\"4m600\", release=\"1.2.3\"} 100\n"
    "  node_uname_info{job=\"node_exporter\", instance=\"4m5\", release=\"1.11.3\"} 100\n"
    "  node_uname_info{job=\"node_exporter\", instance=\"4m1000\", release=\"1.111.3\"} 100\n";

static void test_promql_eval_experimental(void **state)
{
    (void)state;
    run_script("experimental", EXP_SCRIPT, 1);
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
    struct gw_pq_source src = { m, mem_select };
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
    gw_pq_expr_free(e);
    free_src(m);
}

static void test_promql_eval_resolution_limit(void **state)
{
    (void)state;
    struct mem_src *m = many_series(1);
    struct gw_pq_source src = { m, mem_select };
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
    struct gw_pq_source src = { m, mem_select };
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
    struct gw_pq_source src = { m, mem_select };
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
static const char *const COMPAT_SCRIPT =
    "load 10s\n"
    "  metric{a=\"1\"} 1\n"
    "  other{a=\"1\"} 1\n"
    "  special{k=\"nan\"} NaN\n"
    "  special{k=\"inf\"} Inf\n"
    "  special{k=\"ninf\"} -Inf\n"
    "  special{k=\"one\"} 1\n"
    "  pair{k=\"x\"} 2\n"
    "  pair{k=\"y\"} 4\n"
    "eval instant at 0s metric atan2 1\n"
    "  {a=\"1\"} 0.7853981633974483\n"
    "eval instant at 0s 1 atan2 metric\n"
    "  {a=\"1\"} 0.7853981633974483\n"
    "eval instant at 0s metric atan2 other\n"
    "  {a=\"1\"} 0.7853981633974483\n"
    "eval instant at 0s metric + 1\n"
    "  {a=\"1\"} 2\n"
    "eval instant at 0s stddev by (k) (special)\n"
    "  {k=\"nan\"} NaN\n"
    "  {k=\"inf\"} NaN\n"
    "  {k=\"ninf\"} NaN\n"
    "  {k=\"one\"} 0\n"
    "eval instant at 0s stdvar by (k) (special)\n"
    "  {k=\"nan\"} NaN\n"
    "  {k=\"inf\"} NaN\n"
    "  {k=\"ninf\"} NaN\n"
    "  {k=\"one\"} 0\n"
    "eval instant at 0s stdvar(pair)\n"
    "  {} 1\n"
    "compat 2\n"
    "eval instant at 0s metric atan2 1\n"
    "  metric{a=\"1\"} 0.7853981633974483\n"
    "eval instant at 0s 1 atan2 metric\n"
    "  metric{a=\"1\"} 0.7853981633974483\n"
    "eval instant at 0s metric atan2 other\n"
    "  metric{a=\"1\"} 0.7853981633974483\n"
    "eval instant at 0s metric + 1\n"
    "  {a=\"1\"} 2\n"
    "eval instant at 0s stddev by (k) (special)\n"
    "  {k=\"nan\"} 0\n"
    "  {k=\"inf\"} 0\n"
    "  {k=\"ninf\"} 0\n"
    "  {k=\"one\"} 0\n"
    "eval instant at 0s stdvar by (k) (special)\n"
    "  {k=\"nan\"} 0\n"
    "  {k=\"inf\"} 0\n"
    "  {k=\"ninf\"} 0\n"
    "  {k=\"one\"} 0\n"
    "eval instant at 0s stdvar(pair)\n"
    "  {} 1\n";

static void test_promql_eval_compat_differences(void **state)
{
    (void)state;
    run_script("compat", COMPAT_SCRIPT, 0);
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
    struct gw_pq_source src = { m, mem_select };
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
    struct gw_pq_source src = { NULL, failing_select };
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
