/* src/promql/eval_funcs.c - PromQL function calls over step matrices.
 *
 * Window functions (rate, *_over_time, ...) walk each raw series of their
 * range argument with forward-only window pointers and hand every non-empty
 * window to pq_kernel_window; element-wise and date functions apply
 * pq_kernel_math to every present point. The rest is done here: time,
 * timestamp, vector, scalar, pi, absent, absent_over_time, sort*,
 * label_replace, label_join, histogram_quantile on classic buckets.
 * Label work (dropping __name__, label_replace results, histogram groups)
 * is done once per series, never per step.
 *
 * As Prometheus 3: window functions drop __name__ except last_over_time and
 * first_over_time; math, date, timestamp and histogram_quantile drop it;
 * sort*, label_replace and label_join keep it. The native-histogram
 * functions (histogram_avg/count/sum/stddev/stdvar/fraction) see only float
 * samples here (native histograms are not stored) and so return nothing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>


#include "gpuwatch/labels.h"
#include "gpuwatch/matcher.h"
#include "promql/eval_int.h"

static const struct gw_pq_node *unparen(const struct gw_pq_node *n)
{
    while (n && n->kind == GW_PQ_PAREN)
        n = n->u.paren;
    return n;
}

static const uint8_t no_labels[1];

/* ------------------------------------------------------------ window functions */

static int absent_labels(struct pq_ctx *ctx, const struct gw_pq_node *sel, const uint8_t **lab,
                         size_t *llen)
{
    *lab = no_labels;
    *llen = 0;
    if (!sel || (sel->kind != GW_PQ_VECTOR_SEL && sel->kind != GW_PQ_MATRIX_SEL))
        return GW_OK;
    struct pq_lb *b = pq_alloc(ctx, sizeof(*b));
    if (!b)
        return GW_ENOMEM;
    b->n = 0;
    size_t nm = sel->u.sel.n_matchers;
    const struct gw_matcher *ms = sel->u.sel.matchers;
    for (size_t i = 0; i < nm; i++) {
        const struct gw_matcher *m = &ms[i];
        if (m->name_len == 8 && memcmp(m->name, "__name__", 8) == 0)
            continue;
        int seen = 0;
        for (size_t j = 0; j < i; j++)
            if (ms[j].type == GW_MATCH_EQ && ms[j].name_len == m->name_len &&
                memcmp(ms[j].name, m->name, m->name_len) == 0)
                seen = 1;
        if (m->type == GW_MATCH_EQ && !seen) {
            int rc = pq_lb_set(ctx, b, m->name, m->name_len, m->value, m->value_len);
            if (rc)
                return rc;
        } else {
            pq_lb_del(b, m->name, m->name_len);
        }
    }
    return pq_lb_encode(ctx, b, lab, llen);
}

static int one_series(struct pq_ctx *ctx, struct pq_val *out, const struct pq_grid *g,
                      const uint8_t *lab, size_t llen, struct pq_vser **s)
{
    int rc = pq_vec_init(ctx, out, 1);
    if (rc)
        return rc;
    *s = &out->vs[0];
    if ((rc = pq_vser_alloc(ctx, *s, g->n)))
        return rc;
    (*s)->lab = lab;
    (*s)->llen = llen;
    out->nvs = 1;
    return GW_OK;
}

struct wctx {
    enum gw_pq_func_id fid;
    const struct pq_grid *g;
    const struct pq_val *m;      /* window parameters */
    double **sc;                 /* scalar arguments per step */
    size_t nsc;
    struct pq_val *out;
    size_t cap;
    uint64_t *found;             /* absent_over_time: steps with a sample */
};

/* One series through the window function at every step. Labels are kept
 * as they come (copied when borrowed); names are dropped after sorting. */
static int window_series(struct pq_ctx *ctx, struct wctx *w, const struct pq_raw *r, int copy)
{
    const struct pq_grid *g = w->g;
    struct pq_win_it it = { 0, 0 };
    int64_t rs, re;
    int rc;
    if (w->found) {
        for (size_t i = 0; i < g->n; i++) {
            pq_window(ctx, w->m, r, g, i, &it, &rs, &re);
            if (it.hi > it.lo)
                pq_bm_set(w->found, i);
        }
        return GW_OK;
    }
    if ((rc = pq_vec_grow(ctx, w->out, &w->cap)))
        return rc;
    struct pq_vser *s = &w->out->vs[w->out->nvs];
    if ((rc = pq_vser_alloc(ctx, s, g->n)))
        return rc;
    double scal[GW_PQ_MAX_FUNC_ARGS];
    size_t cnt = 0, maxwin = 0;
    for (size_t i = 0; i < g->n; i++) {
        pq_window(ctx, w->m, r, g, i, &it, &rs, &re);
        if (it.hi <= it.lo)
            continue;
        if (it.hi - it.lo > maxwin)
            maxwin = it.hi - it.lo;
        for (size_t j = 0; j < w->nsc; j++)
            scal[j] = w->sc[j][i];
        double val;
        rc = pq_kernel_window(w->fid, ctx->o.compat, r->t + it.lo, r->v + it.lo, it.hi - it.lo,
                              pq_grid_t(g, i), rs, re, scal, w->nsc, &val, ctx->err);
        if (rc < 0)
            return rc;
        if (rc == 1) {
            s->v[i] = val;
            pq_bm_set(s->pres, i);
            cnt++;
        }
    }
    /* Prometheus holds one window of samples next to the output so far */
    if (ctx->cur_samples + maxwin > ctx->o.max_samples || (rc = pq_charge(ctx, cnt)))
        return gw_error_set(ctx->err, GW_ELIMIT,
                            "query processing would load too many samples into memory in query execution");
    if (cnt == 0)
        return GW_OK;
    s->lab = copy ? pq_copy_labels(ctx, r->lab, r->llen) : r->lab;
    if (!s->lab)
        return GW_ENOMEM;
    s->llen = r->llen;
    w->out->nvs++;
    return GW_OK;
}

static int window_stream(struct pq_ctx *ctx, void *ud, const uint8_t *lab, size_t llen,
                         const int64_t *t, const double *v, size_t n)
{
    struct wctx *w = ud;
    /* Without stale markers (the usual case) the source's samples are
     * used as they are (window_series and the kernels only read them);
     * else the others are copied to the scratch arrays. */
    if (n == 0)
        return GW_OK;
    size_t first = 0;
    for (; first < n; first++) {
        uint64_t bits;
        memcpy(&bits, &v[first], sizeof bits);
        if (bits == PQ_STALE_NAN_BITS)
            break;
    }
    if (first == n) {
        struct pq_raw r = { lab, llen, (int64_t *)(uintptr_t)t, (double *)(uintptr_t)v, n };
        return window_series(ctx, w, &r, 1);
    }
    int rc = pq_tmp_reserve(ctx, n);
    if (rc)
        return rc;
    memcpy(ctx->tmp_t, t, first * sizeof *t);
    memcpy(ctx->tmp_v, v, first * sizeof *v);
    size_t o = first;
    for (size_t i = first + 1; i < n; i++) {
        if (pq_is_stale(v[i]))
            continue;
        ctx->tmp_t[o] = t[i];
        ctx->tmp_v[o] = v[i];
        o++;
    }
    if (o == 0)
        return GW_OK;
    struct pq_raw r = { lab, llen, ctx->tmp_t, ctx->tmp_v, o };
    return window_series(ctx, w, &r, 1);
}

/* Which aggregate view a window function reads (docs/downsampling.md):
 * max/min/last_over_time are exact over windows made of whole buckets
 * (left-open windows, Prometheus 3 semantics; the closed windows of
 * --promql-compat 2 add the sample at the window start, which a bucket's
 * aggregate cannot give). Every other function gets the buckets' last
 * samples, and only where raw data is gone or max_source_resolution
 * allows it. */
static void window_view(struct pq_ctx *ctx, enum gw_pq_func_id fid, const struct pq_val *m,
                        const struct pq_grid *g, int *kind, int64_t *exact)
{
    *exact = 0;
    switch (fid) {
    case GW_PQ_F_MAX_OVER_TIME: *kind = GW_PQ_VIEW_MAX; break;
    case GW_PQ_F_MIN_OVER_TIME: *kind = GW_PQ_VIEW_MIN; break;
    case GW_PQ_F_LAST_OVER_TIME: *kind = GW_PQ_VIEW_LAST_VALUE; break;
    default: *kind = GW_PQ_VIEW_LAST_VALUE; return;
    }
    if (ctx->o.compat == 3)
        *exact = pq_aligned_bucket(ctx, m->has_at, m->at_ms, m->offset_ms, g, m->range_ms);
}

static int eval_window(struct pq_ctx *ctx, const struct gw_pq_node *n, const struct pq_grid *g,
                       struct pq_val *out)
{
    enum gw_pq_func_id fid = n->u.call.func->id;
    size_t na = n->u.call.n_args, mi = na;
    for (size_t i = 0; i < na; i++) {
        const struct gw_pq_node *a = unparen(n->u.call.args[i]);
        if (a && (a->kind == GW_PQ_MATRIX_SEL || a->kind == GW_PQ_SUBQUERY ||
                  a->type == GW_PQ_T_MATRIX)) {
            mi = i;
            break;
        }
    }
    if (mi == na)
        return gw_error_set(ctx->err, GW_EINVAL, "%s(): expected a range vector argument",
                            n->u.call.func->name);
    double *sc[GW_PQ_MAX_FUNC_ARGS];
    size_t nsc = 0;
    int rc;
    for (size_t i = 0; i < na && nsc < GW_PQ_MAX_FUNC_ARGS; i++) {
        if (i == mi)
            continue;
        if ((rc = pq_eval_scalar(ctx, n->u.call.args[i], g, &sc[nsc++])))
            return rc;
    }
    struct wctx w;
    memset(&w, 0, sizeof(w));
    w.fid = fid;
    w.g = g;
    w.sc = sc;
    w.nsc = nsc;
    w.out = out;
    if ((rc = pq_vec_init(ctx, out, 1)))
        return rc;
    w.cap = 1;
    if (fid == GW_PQ_F_ABSENT_OVER_TIME &&
        !(w.found = pq_calloc(ctx, PQ_BM_WORDS(g->n), sizeof(uint64_t))))
        return GW_ENOMEM;

    const struct gw_pq_node *arg = unparen(n->u.call.args[mi]);
    struct pq_val m;
    if (arg->kind == GW_PQ_MATRIX_SEL) {
        /* straight from the source, one series at a time */
        int64_t mint, maxt;
        pq_matrix_params(ctx, arg, g, &m, &mint, &maxt);
        w.m = &m;
        int kind;
        int64_t exact;
        window_view(ctx, fid, &m, g, &kind, &exact);
        if ((rc = pq_select_view(ctx, arg, mint, maxt, kind, exact, window_stream, &w)))
            return rc;
    } else {
        if ((rc = pq_eval(ctx, arg, g, &m)))
            return rc;
        if (m.type != GW_PQ_T_MATRIX)
            return gw_error_set(ctx->err, GW_EINVAL, "%s(): expected a range vector argument",
                                n->u.call.func->name);
        w.m = &m;
        for (size_t k = 0; k < m.nrs; k++) {
            if ((rc = pq_check_time(ctx)))
                return rc;
            if ((rc = window_series(ctx, &w, &m.rs[k], 0)))
                return rc;
        }
    }

    if (fid == GW_PQ_F_ABSENT_OVER_TIME) {
        const uint8_t *lab;
        size_t llen;
        struct pq_vser *s;
        if ((rc = absent_labels(ctx, arg->kind == GW_PQ_MATRIX_SEL ? arg : NULL, &lab, &llen)))
            return rc;
        if ((rc = one_series(ctx, out, g, lab, llen, &s)))
            return rc;
        for (size_t i = 0; i < g->n; i++) {
            if (!pq_bm_get(w.found, i)) {
                s->v[i] = 1;
                pq_bm_set(s->pres, i);
            }
        }
        return pq_vec_dedupe(ctx, out, g->n, 0);
    }

    /* series order of the selector (by its labels), then names dropped */
    pq_vec_sort_labels(out);
    if (fid != GW_PQ_F_LAST_OVER_TIME && fid != GW_PQ_F_FIRST_OVER_TIME) {
        for (size_t k = 0; k < out->nvs; k++) {
            struct pq_vser *s = &out->vs[k];
            if ((rc = pq_lab_drop_name(ctx, s->lab, s->llen, &s->lab, &s->llen)))
                return rc;
        }
    }
    return pq_vec_dedupe(ctx, out, g->n, 1);
}

/* ------------------------------------------------------------ element-wise */

static int eval_math(struct pq_ctx *ctx, const struct gw_pq_node *n, const struct pq_grid *g,
                     struct pq_val *out)
{
    enum gw_pq_func_id fid = n->u.call.func->id;
    size_t na = n->u.call.n_args;
    int rc;
    if (na == 0) {
        /* date functions without argument: vector(time()) */
        struct pq_vser *s;
        if ((rc = one_series(ctx, out, g, no_labels, 0, &s)))
            return rc;
        for (size_t i = 0; i < g->n; i++) {
            s->v[i] = pq_kernel_math(fid, (double)(pq_grid_t(g, i) / 1000), NULL, 0);
            pq_bm_set(s->pres, i);
        }
        return GW_OK;
    }
    double *sc[GW_PQ_MAX_FUNC_ARGS];
    size_t nsc = 0;
    for (size_t i = 1; i < na && nsc < GW_PQ_MAX_FUNC_ARGS; i++)
        if ((rc = pq_eval_scalar(ctx, n->u.call.args[i], g, &sc[nsc++])))
            return rc;
    if ((rc = pq_eval(ctx, n->u.call.args[0], g, out)))
        return rc;
    if (out->type != GW_PQ_T_VECTOR)
        return gw_error_set(ctx->err, GW_EINVAL, "%s(): expected an instant vector argument",
                            n->u.call.func->name);
    double scal[GW_PQ_MAX_FUNC_ARGS];
    size_t ns = nsc;
    for (size_t k = 0; k < out->nvs; k++) {
        struct pq_vser *s = &out->vs[k];
        if ((rc = pq_check_time(ctx)))
            return rc;
        for (size_t i = 0; i < g->n; i++) {
            if (!pq_bm_get(s->pres, i))
                continue;
            for (size_t j = 0; j < nsc; j++)
                scal[j] = sc[j][i];
            if (fid == GW_PQ_F_ROUND && nsc == 0) {
                scal[0] = 1;
                ns = 1;
            }
            if (fid == GW_PQ_F_CLAMP && nsc >= 2 && scal[1] < scal[0]) {
                pq_bm_clr(s->pres, i);
                continue;
            }
            s->v[i] = pq_kernel_math(fid, s->v[i], scal, ns);
        }
        s->ts = NULL;
        if ((rc = pq_lab_drop_name(ctx, s->lab, s->llen, &s->lab, &s->llen)))
            return rc;
    }
    return pq_vec_dedupe(ctx, out, g->n, 0);
}

/* ------------------------------------------------------------ sorting */

struct sort_ent {
    size_t idx;
    double v;
    const uint8_t *lab;
    size_t llen;
};

static int cmp_sort_asc(const void *a, const void *b)
{
    const struct sort_ent *x = a, *y = b;
    int xn = isnan(x->v), yn = isnan(y->v);
    if (xn != yn)
        return xn ? 1 : -1;
    if (x->v < y->v)
        return -1;
    if (x->v > y->v)
        return 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int cmp_sort_desc(const void *a, const void *b)
{
    const struct sort_ent *x = a, *y = b;
    int xn = isnan(x->v), yn = isnan(y->v);
    if (xn != yn)
        return xn ? 1 : -1;
    if (x->v > y->v)
        return -1;
    if (x->v < y->v)
        return 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Natural order of two strings (numbers compared by value), a < b. */
static int natcmp(const char *a, size_t al, const char *b, size_t bl)
{
    size_t i = 0, j = 0;
    while (i < al && j < bl) {
        int da = a[i] >= '0' && a[i] <= '9', db = b[j] >= '0' && b[j] <= '9';
        if (da && db) {
            size_t i2 = i, j2 = j;
            while (i2 < al && a[i2] == '0')
                i2++;
            while (j2 < bl && b[j2] == '0')
                j2++;
            size_t ie = i2, je = j2;
            while (ie < al && a[ie] >= '0' && a[ie] <= '9')
                ie++;
            while (je < bl && b[je] >= '0' && b[je] <= '9')
                je++;
            if (ie - i2 != je - j2)
                return ie - i2 < je - j2 ? -1 : 1;
            int c = memcmp(a + i2, b + j2, ie - i2);
            if (c)
                return c < 0 ? -1 : 1;
            i = ie;
            j = je;
            continue;
        }
        if (a[i] != b[j])
            return (unsigned char)a[i] < (unsigned char)b[j] ? -1 : 1;
        i++;
        j++;
    }
    if (al - i == bl - j)
        return 0;
    return al - i < bl - j ? -1 : 1;
}

struct lsort_ctx {
    char *const *names;
    size_t n;
    int desc;
};

static int cmp_by_label(const void *pa, const void *pb, void *arg)
{
    const struct sort_ent *x = pa, *y = pb;
    const struct lsort_ctx *la = arg;
    for (size_t k = 0; k < la->n; k++) {
        const char *n = la->names[k], *va = "", *vb = "";
        size_t nl = strlen(n), lva = 0, lvb = 0;
        gw_labels_get(x->lab, x->llen, n, nl, &va, &lva);
        gw_labels_get(y->lab, y->llen, n, nl, &vb, &lvb);
        int c = natcmp(va, lva, vb, lvb);
        if (c)
            return la->desc ? -c : c;
    }
    int c = gw_labels_compare(x->lab, x->llen, y->lab, y->llen);
    return la->desc ? -c : c;
}

static int eval_sort(struct pq_ctx *ctx, const struct gw_pq_node *n, const struct pq_grid *g,
                     struct pq_val *out)
{
    enum gw_pq_func_id fid = n->u.call.func->id;
    int rc = pq_eval(ctx, n->u.call.args[0], g, out);
    if (rc)
        return rc;
    if (out->type != GW_PQ_T_VECTOR)
        return gw_error_set(ctx->err, GW_EINVAL, "%s(): expected an instant vector argument",
                            n->u.call.func->name);
    if (g->n != 1 || out->nvs < 2)
        return GW_OK;   /* range results are ordered by labels in the end */
    struct sort_ent *e = pq_alloc(ctx, out->nvs * sizeof(*e));
    struct pq_vser *tmp = pq_alloc(ctx, out->nvs * sizeof(*tmp));
    if (!e || !tmp)
        return GW_ENOMEM;
    size_t m = 0;
    for (size_t k = 0; k < out->nvs; k++) {
        if (!pq_bm_get(out->vs[k].pres, 0))
            continue;
        e[m].idx = k;
        e[m].v = out->vs[k].v[0];
        e[m].lab = out->vs[k].lab;
        e[m].llen = out->vs[k].llen;
        m++;
    }
    if (fid == GW_PQ_F_SORT) {
        qsort(e, m, sizeof(*e), cmp_sort_asc);
    } else if (fid == GW_PQ_F_SORT_DESC) {
        qsort(e, m, sizeof(*e), cmp_sort_desc);
    } else {
        char **names = pq_alloc(ctx, (n->u.call.n_args + 1) * sizeof(char *));
        if (!names)
            return GW_ENOMEM;
        size_t nn = 0;
        for (size_t i = 1; i < n->u.call.n_args; i++) {
            const struct gw_pq_node *a = unparen(n->u.call.args[i]);
            if (a->kind != GW_PQ_STRING_LIT)
                return gw_error_set(ctx->err, GW_EINVAL, "%s(): label names must be strings",
                                    n->u.call.func->name);
            names[nn++] = a->u.str.s;
        }
        struct lsort_ctx la = { names, nn, fid == GW_PQ_F_SORT_BY_LABEL_DESC };
        qsort_r(e, m, sizeof(*e), cmp_by_label, &la);
    }
    for (size_t k = 0; k < m; k++)
        tmp[k] = out->vs[e[k].idx];
    memcpy(out->vs, tmp, m * sizeof(*tmp));
    out->nvs = m;
    return GW_OK;
}

/* ------------------------------------------------------------ label_replace / label_join */

static int valid_utf8(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        size_t k;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            k = 1;
            cp = c & 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            k = 2;
            cp = c & 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            k = 3;
            cp = c & 0x07;
        } else {
            return 0;
        }
        if (i + k >= n)
            return 0;
        for (size_t j = 1; j <= k; j++) {
            if (((unsigned char)s[i + j] & 0xc0) != 0x80)
                return 0;
            cp = (cp << 6) | ((unsigned char)s[i + j] & 0x3f);
        }
        if ((k == 1 && cp < 0x80) || (k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) ||
            cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        i += k + 1;
    }
    return 1;
}

static int valid_label_name(struct pq_ctx *ctx, const char *s, size_t n)
{
    if (n == 0)
        return 0;
    if (ctx->o.compat != 2)
        return valid_utf8(s, n);
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
              (i > 0 && c >= '0' && c <= '9')))
            return 0;
    }
    return 1;
}

static const char *str_arg(const struct gw_pq_node *n)
{
    n = unparen(n);
    return n && n->kind == GW_PQ_STRING_LIT && n->u.str.s ? n->u.str.s : NULL;
}

/* label_replace's regex: a capturing matcher (model owns the regex engine),
 * fully anchored like every PromQL regex. */
static int rx_compile(struct pq_ctx *ctx, struct gw_matcher *r, const char *pat, const char *fn)
{
    struct gw_error e2;
    memset(&e2, 0, sizeof e2);
    if (gw_matcher_init_capturing(r, "x", 1, pat, strlen(pat), &e2) != GW_OK)
        return e2.code == GW_ENOMEM ? pq_nomem(ctx)
                                    : gw_error_set(ctx->err, GW_EINVAL,
                                                   "invalid regular expression in %s(): %s", fn, pat);
    return GW_OK;
}

static int name_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c >= 0x80;
}

/* Go's Regexp.ExpandString: $1 ${1} $name ${name} $$; unknown -> "". */
static int rx_expand(struct pq_ctx *ctx, const struct gw_matcher *r, const char *tpl, const char *src,
                     const size_t *ov, size_t nmatch, char **out, size_t *olen)
{
    size_t cap = 64, o = 0;
    char *b = pq_alloc(ctx, cap);
    if (!b)
        return GW_ENOMEM;
#define ADD(p, l)                                                                   \
    do {                                                                            \
        size_t l_ = (l);                                                            \
        if (o + l_ > GW_LABEL_VALUE_MAX)                                            \
            return gw_error_set(ctx->err, GW_EINVAL, "label_replace(): result too long"); \
        if (o + l_ > cap) {                                                         \
            size_t nc = cap;                                                        \
            while (nc < o + l_)                                                     \
                nc *= 2;                                                            \
            char *nb = pq_alloc(ctx, nc);                                           \
            if (!nb)                                                                \
                return GW_ENOMEM;                                                   \
            memcpy(nb, b, o);                                                       \
            b = nb;                                                                 \
            cap = nc;                                                               \
        }                                                                           \
        memcpy(b + o, (p), l_);                                                     \
        o += l_;                                                                    \
    } while (0)
    size_t tl = strlen(tpl), i = 0;
    while (i < tl) {
        const char *d = memchr(tpl + i, '$', tl - i);
        size_t lit = d ? (size_t)(d - (tpl + i)) : tl - i;
        ADD(tpl + i, lit);
        i += lit;
        if (i >= tl)
            break;
        i++; /* '$' */
        if (i < tl && tpl[i] == '$') {
            ADD("$", 1);
            i++;
            continue;
        }
        int brace = i < tl && tpl[i] == '{';
        size_t ns = i + (size_t)brace, ne = ns;
        while (ne < tl && name_char((unsigned char)tpl[ne]))
            ne++;
        if (ne == ns || (brace && (ne >= tl || tpl[ne] != '}'))) {
            ADD("$", 1);
            continue;
        }
        size_t nlen = ne - ns;
        const char *name = tpl + ns;
        i = ne + (size_t)brace;
        long num = 0;
        for (size_t k = 0; k < nlen; k++) {
            if (name[k] < '0' || name[k] > '9' || num >= 100000000) {
                num = -1;
                break;
            }
            num = num * 10 + (name[k] - '0');
        }
        if (nlen > 1 && name[0] == '0')
            num = -1;
        long grp = num >= 0 ? num : gw_matcher_group_number(r, name, nlen);
        if (grp >= 0 && (size_t)grp < nmatch && ov[2 * grp] != GW_MATCHER_UNSET)
            ADD(src + ov[2 * grp], ov[2 * grp + 1] - ov[2 * grp]);
    }
#undef ADD
    *out = b;
    *olen = o;
    return GW_OK;
}

static int eval_label_replace(struct pq_ctx *ctx, const struct gw_pq_node *n,
                              const struct pq_grid *g, struct pq_val *out)
{
    if (n->u.call.n_args != 5)
        return gw_error_set(ctx->err, GW_EINVAL, "label_replace(): wrong number of arguments");
    const char *dst = str_arg(n->u.call.args[1]), *repl = str_arg(n->u.call.args[2]),
               *src = str_arg(n->u.call.args[3]), *pat = str_arg(n->u.call.args[4]);
    if (!dst || !repl || !src || !pat)
        return gw_error_set(ctx->err, GW_EINVAL, "label_replace(): arguments must be strings");
    struct gw_matcher r;
    int rc = rx_compile(ctx, &r, pat, "label_replace");
    if (rc)
        return rc;
    if (!valid_label_name(ctx, dst, strlen(dst))) {
        gw_matcher_free(&r);
        return gw_error_set(ctx->err, GW_EINVAL,
                            "invalid destination label name in label_replace(): %s", dst);
    }
    rc = pq_eval(ctx, n->u.call.args[0], g, out);
    if (!rc && out->type != GW_PQ_T_VECTOR)
        rc = gw_error_set(ctx->err, GW_EINVAL, "label_replace(): expected an instant vector");
    struct pq_lb *b = rc ? NULL : pq_alloc(ctx, sizeof(*b));
    size_t ngroups = gw_matcher_group_count(&r);
    size_t *ov = rc ? NULL : pq_alloc(ctx, 2 * ngroups * sizeof *ov);
    if (!rc && (!b || !ov))
        rc = GW_ENOMEM;
    for (size_t k = 0; !rc && k < out->nvs; k++) {
        struct pq_vser *s = &out->vs[k];
        const char *sv = "";
        size_t sl = 0;
        gw_labels_get(s->lab, s->llen, src, strlen(src), &sv, &sl);
        size_t m = gw_matcher_groups(&r, sv, sl, ov, ngroups);
        if (m == 0)
            continue;   /* no match (or invalid UTF-8 / limit): labels unchanged */
        char *res = NULL;
        size_t rl = 0;
        /* copy the source value: ov indexes into it and it outlives the builder */
        char *svc = pq_alloc(ctx, sl + 1);
        if (!svc) {
            rc = GW_ENOMEM;
            break;
        }
        memcpy(svc, sv, sl);
        if ((rc = rx_expand(ctx, &r, repl, svc, ov, m, &res, &rl)))
            break;
        if ((rc = pq_lb_load(ctx, b, s->lab, s->llen)))
            break;
        if ((rc = pq_lb_set(ctx, b, dst, strlen(dst), res, rl)))
            break;
        rc = pq_lb_encode(ctx, b, &s->lab, &s->llen);
    }
    gw_matcher_free(&r);
    if (rc)
        return rc;
    return pq_vec_dedupe(ctx, out, g->n, 1);
}

static int eval_label_join(struct pq_ctx *ctx, const struct gw_pq_node *n, const struct pq_grid *g,
                           struct pq_val *out)
{
    size_t na = n->u.call.n_args;
    if (na < 3)
        return gw_error_set(ctx->err, GW_EINVAL, "label_join(): wrong number of arguments");
    const char *dst = str_arg(n->u.call.args[1]), *sep = str_arg(n->u.call.args[2]);
    if (!dst || !sep)
        return gw_error_set(ctx->err, GW_EINVAL, "label_join(): arguments must be strings");
    for (size_t i = 3; i < na; i++) {
        const char *s = str_arg(n->u.call.args[i]);
        if (!s)
            return gw_error_set(ctx->err, GW_EINVAL, "label_join(): arguments must be strings");
        if (!valid_label_name(ctx, s, strlen(s)))
            return gw_error_set(ctx->err, GW_EINVAL,
                                "invalid source label name in label_join(): %s", s);
    }
    if (!valid_label_name(ctx, dst, strlen(dst)))
        return gw_error_set(ctx->err, GW_EINVAL,
                            "invalid destination label name in label_join(): %s", dst);
    int rc = pq_eval(ctx, n->u.call.args[0], g, out);
    if (rc)
        return rc;
    if (out->type != GW_PQ_T_VECTOR)
        return gw_error_set(ctx->err, GW_EINVAL, "label_join(): expected an instant vector");
    struct pq_lb *b = pq_alloc(ctx, sizeof(*b));
    if (!b)
        return GW_ENOMEM;
    size_t seplen = strlen(sep);
    for (size_t k = 0; k < out->nvs; k++) {
        struct pq_vser *s = &out->vs[k];
        size_t tot = 0;
        for (size_t i = 3; i < na; i++) {
            const char *v;
            size_t vl = 0;
            const char *sn = str_arg(n->u.call.args[i]);
            if (!gw_labels_get(s->lab, s->llen, sn, strlen(sn), &v, &vl))
                vl = 0;
            tot += vl + (i > 3 ? seplen : 0);
        }
        if (tot > GW_LABEL_VALUE_MAX)
            return gw_error_set(ctx->err, GW_EINVAL, "label_join(): result too long");
        char *jv = pq_alloc(ctx, tot + 1);
        if (!jv)
            return GW_ENOMEM;
        size_t o = 0;
        for (size_t i = 3; i < na; i++) {
            const char *v = NULL;
            size_t vl = 0;
            const char *sn = str_arg(n->u.call.args[i]);
            if (i > 3) {
                memcpy(jv + o, sep, seplen);
                o += seplen;
            }
            if (gw_labels_get(s->lab, s->llen, sn, strlen(sn), &v, &vl) && vl) {
                memcpy(jv + o, v, vl);
                o += vl;
            }
        }
        if ((rc = pq_lb_load(ctx, b, s->lab, s->llen)))
            return rc;
        if ((rc = pq_lb_set(ctx, b, dst, strlen(dst), jv, o)))
            return rc;
        if ((rc = pq_lb_encode(ctx, b, &s->lab, &s->llen)))
            return rc;
    }
    return pq_vec_dedupe(ctx, out, g->n, 1);
}

/* ------------------------------------------------------------ histogram_quantile */

/* Go's strconv.ParseFloat on a bucket bound: the whole string must parse. */
static int parse_le(const char *s, size_t n, double *out)
{
    char buf[64];
    if (n == 0 || n >= sizeof(buf))
        return 0;
    memcpy(buf, s, n);
    buf[n] = 0;
    if (buf[0] == ' ' || buf[0] == '\t' || buf[0] == '\n')
        return 0;
    char *end;
    double v = strtod(buf, &end);
    if (end != buf + n)
        return 0;
    *out = v;
    return 1;
}

static int eval_hist_quantile(struct pq_ctx *ctx, const struct gw_pq_node *n,
                              const struct pq_grid *g, struct pq_val *out)
{
    double *phi;
    int rc = pq_eval_scalar(ctx, n->u.call.args[0], g, &phi);
    if (rc)
        return rc;
    struct pq_val in;
    if ((rc = pq_eval(ctx, n->u.call.args[1], g, &in)))
        return rc;
    if (in.type != GW_PQ_T_VECTOR)
        return gw_error_set(ctx->err, GW_EINVAL, "histogram_quantile(): expected an instant vector");
    size_t ns = in.nvs;
    size_t *grp = pq_alloc(ctx, (ns ? ns : 1) * sizeof(size_t));
    double *upper = pq_alloc(ctx, (ns ? ns : 1) * sizeof(double));
    struct pq_itab t;
    if (!grp || !upper || (rc = pq_itab_init(ctx, &t, ns)))
        return rc ? rc : GW_ENOMEM;
    if ((rc = pq_vec_init(ctx, out, ns)))
        return rc;
    struct pq_lb *b = pq_alloc(ctx, sizeof(*b));
    if (!b)
        return GW_ENOMEM;
    for (size_t k = 0; k < ns; k++) {
        const struct pq_vser *s = &in.vs[k];
        const char *le;
        size_t lel;
        grp[k] = SIZE_MAX;
        if (!gw_labels_get(s->lab, s->llen, "le", 2, &le, &lel) || !parse_le(le, lel, &upper[k]))
            continue;   /* not a bucket: ignored */
        if ((rc = pq_lb_load(ctx, b, s->lab, s->llen)))
            return rc;
        pq_lb_del(b, "le", 2);
        const uint8_t *key;
        size_t klen;
        if ((rc = pq_lb_encode(ctx, b, &key, &klen)))
            return rc;
        size_t id;
        int found;
        if ((rc = pq_itab_get(ctx, &t, key, klen, 1, &id, &found)))
            return rc;
        grp[k] = id;
        if (!found) {
            struct pq_vser *o = &out->vs[out->nvs++];
            if ((rc = pq_vser_alloc(ctx, o, g->n)))
                return rc;
            pq_lb_del(b, "__name__", 8);
            if ((rc = pq_lb_encode(ctx, b, &o->lab, &o->llen)))
                return rc;
        }
    }
    size_t ng = out->nvs;
    /* members of each group (CSR) */
    size_t *start = pq_calloc(ctx, ng + 1, sizeof(size_t));
    size_t *mem = pq_alloc(ctx, (ns ? ns : 1) * sizeof(size_t));
    struct pq_bucket *bk = pq_alloc(ctx, (ns ? ns : 1) * sizeof(*bk));
    if (!start || !mem || !bk)
        return GW_ENOMEM;
    for (size_t k = 0; k < ns; k++)
        if (grp[k] != SIZE_MAX)
            start[grp[k] + 1]++;
    for (size_t i = 0; i < ng; i++)
        start[i + 1] += start[i];
    size_t *fill = pq_calloc(ctx, ng + 1, sizeof(size_t));
    if (!fill)
        return GW_ENOMEM;
    for (size_t k = 0; k < ns; k++)
        if (grp[k] != SIZE_MAX)
            mem[start[grp[k]] + fill[grp[k]]++] = k;
    for (size_t gi = 0; gi < ng; gi++) {
        if ((rc = pq_check_time(ctx)))
            return rc;
        struct pq_vser *o = &out->vs[gi];
        for (size_t i = 0; i < g->n; i++) {
            size_t nb = 0;
            for (size_t m = start[gi]; m < start[gi + 1]; m++) {
                const struct pq_vser *s = &in.vs[mem[m]];
                if (!pq_bm_get(s->pres, i))
                    continue;
                bk[nb].upper = upper[mem[m]];
                bk[nb].count = s->v[i];
                nb++;
            }
            if (nb == 0)
                continue;
            int forced = 0;
            o->v[i] = pq_bucket_quantile(phi[i], bk, nb, &forced);
            pq_bm_set(o->pres, i);
        }
    }
    return pq_vec_dedupe(ctx, out, g->n, 0);
}

/* ------------------------------------------------------------ dispatch */

/* vector(s): the scalar as a series without labels. */
static int eval_vector(struct pq_ctx *ctx, const struct gw_pq_node *n, const struct pq_grid *g, struct pq_val *out)
{
    int rc;
    struct pq_vser *s;
    double *sc;
    if ((rc = pq_eval_scalar(ctx, n->u.call.args[0], g, &sc)))
        return rc;
    if ((rc = one_series(ctx, out, g, no_labels, 0, &s)))
        return rc;
    for (size_t i = 0; i < g->n; i++) {
        s->v[i] = sc[i];
        pq_bm_set(s->pres, i);
    }
    return GW_OK;
}

/* scalar(v): the value of a one-element vector, else NaN, per step. */
static int eval_scalar(struct pq_ctx *ctx, const struct gw_pq_node *n, const struct pq_grid *g, struct pq_val *out)
{
    int rc;
    struct pq_val in;
    if ((rc = pq_eval(ctx, n->u.call.args[0], g, &in)))
        return rc;
    if (in.type != GW_PQ_T_VECTOR)
        return gw_error_set(ctx->err, GW_EINVAL, "scalar(): expected an instant vector");
    memset(out, 0, sizeof(*out));
    out->type = GW_PQ_T_SCALAR;
    if (!(out->sc = pq_alloc(ctx, g->n * sizeof(double))))
        return GW_ENOMEM;
    for (size_t i = 0; i < g->n; i++) {
        size_t c = 0;
        double v = NAN;
        for (size_t k = 0; k < in.nvs && c < 2; k++) {
            if (pq_bm_get(in.vs[k].pres, i)) {
                c++;
                v = in.vs[k].v[i];
            }
        }
        out->sc[i] = c == 1 ? v : NAN;
    }
    return GW_OK;
}

/* timestamp(v): each sample's own timestamp in seconds (a selector's
 * sample time, else the step's). */
static int eval_timestamp(struct pq_ctx *ctx, const struct gw_pq_node *n, const struct pq_grid *g, struct pq_val *out)
{
    int rc;
    const struct gw_pq_node *a = unparen(n->u.call.args[0]);
    if (a->kind == GW_PQ_VECTOR_SEL)
        rc = pq_eval_vector_sel(ctx, a, g, 1, out);
    else
        rc = pq_eval(ctx, a, g, out);
    if (rc)
        return rc;
    if (out->type != GW_PQ_T_VECTOR)
        return gw_error_set(ctx->err, GW_EINVAL, "timestamp(): expected an instant vector");
    for (size_t k = 0; k < out->nvs; k++) {
        struct pq_vser *x = &out->vs[k];
        for (size_t i = 0; i < g->n; i++)
            if (pq_bm_get(x->pres, i))
                x->v[i] = (double)(x->ts ? x->ts[i] : pq_grid_t(g, i)) / 1000.0;
        x->ts = NULL;
        if ((rc = pq_lab_drop_name(ctx, x->lab, x->llen, &x->lab, &x->llen)))
            return rc;
    }
    return pq_vec_dedupe(ctx, out, g->n, 0);
}

/* absent(v): 1 at the steps where v is empty, labelled from v's equality
 * matchers. */
static int eval_absent(struct pq_ctx *ctx, const struct gw_pq_node *n, const struct pq_grid *g, struct pq_val *out)
{
    int rc;
    struct pq_vser *s;
    struct pq_val in;
    if ((rc = pq_eval(ctx, n->u.call.args[0], g, &in)))
        return rc;
    if (in.type != GW_PQ_T_VECTOR)
        return gw_error_set(ctx->err, GW_EINVAL, "absent(): expected an instant vector");
    const uint8_t *lab;
    size_t llen;
    if ((rc = absent_labels(ctx, unparen(n->u.call.args[0]), &lab, &llen)))
        return rc;
    if ((rc = one_series(ctx, out, g, lab, llen, &s)))
        return rc;
    for (size_t i = 0; i < g->n; i++) {
        int any = 0;
        for (size_t k = 0; k < in.nvs && !any; k++)
            any = pq_bm_get(in.vs[k].pres, i);
        if (!any) {
            s->v[i] = 1;
            pq_bm_set(s->pres, i);
        }
    }
    return pq_vec_dedupe(ctx, out, g->n, 0);
}

int pq_eval_call(struct pq_ctx *ctx, const struct gw_pq_node *n, const struct pq_grid *g,
                 struct pq_val *out)
{
    const struct gw_pq_func *f = n->u.call.func;
    if (!f)
        return gw_error_set(ctx->err, GW_EINVAL, "unknown function");
    if (f->experimental && !ctx->o.experimental)
        return gw_error_set(ctx->err, GW_EINVAL,
                            "function \"%s\" is not enabled (experimental functions are off)",
                            f->name);
    size_t na = n->u.call.n_args;
    switch (f->id) {
    case GW_PQ_F_RATE: case GW_PQ_F_INCREASE: case GW_PQ_F_DELTA: case GW_PQ_F_IRATE:
    case GW_PQ_F_IDELTA: case GW_PQ_F_DERIV: case GW_PQ_F_PREDICT_LINEAR: case GW_PQ_F_RESETS:
    case GW_PQ_F_CHANGES: case GW_PQ_F_AVG_OVER_TIME: case GW_PQ_F_MIN_OVER_TIME:
    case GW_PQ_F_MAX_OVER_TIME: case GW_PQ_F_SUM_OVER_TIME: case GW_PQ_F_COUNT_OVER_TIME:
    case GW_PQ_F_LAST_OVER_TIME: case GW_PQ_F_FIRST_OVER_TIME: case GW_PQ_F_PRESENT_OVER_TIME:
    case GW_PQ_F_STDDEV_OVER_TIME: case GW_PQ_F_STDVAR_OVER_TIME:
    case GW_PQ_F_QUANTILE_OVER_TIME: case GW_PQ_F_MAD_OVER_TIME:
    case GW_PQ_F_TS_OF_MAX_OVER_TIME: case GW_PQ_F_TS_OF_MIN_OVER_TIME:
    case GW_PQ_F_TS_OF_LAST_OVER_TIME: case GW_PQ_F_TS_OF_FIRST_OVER_TIME:
    case GW_PQ_F_DOUBLE_EXPONENTIAL_SMOOTHING: case GW_PQ_F_ABSENT_OVER_TIME:
        return eval_window(ctx, n, g, out);

    case GW_PQ_F_ABS: case GW_PQ_F_CEIL: case GW_PQ_F_EXP: case GW_PQ_F_FLOOR: case GW_PQ_F_LN:
    case GW_PQ_F_LOG10: case GW_PQ_F_LOG2: case GW_PQ_F_SQRT: case GW_PQ_F_SGN:
    case GW_PQ_F_ACOS: case GW_PQ_F_ACOSH: case GW_PQ_F_ASIN: case GW_PQ_F_ASINH:
    case GW_PQ_F_ATAN: case GW_PQ_F_ATANH: case GW_PQ_F_COS: case GW_PQ_F_COSH:
    case GW_PQ_F_SIN: case GW_PQ_F_SINH: case GW_PQ_F_TAN: case GW_PQ_F_TANH:
    case GW_PQ_F_DEG: case GW_PQ_F_RAD: case GW_PQ_F_ROUND: case GW_PQ_F_CLAMP:
    case GW_PQ_F_CLAMP_MIN: case GW_PQ_F_CLAMP_MAX:
        if (na == 0)
            return gw_error_set(ctx->err, GW_EINVAL, "%s(): missing argument", f->name);
        return eval_math(ctx, n, g, out);
    case GW_PQ_F_DAYS_IN_MONTH: case GW_PQ_F_DAY_OF_MONTH: case GW_PQ_F_DAY_OF_WEEK:
    case GW_PQ_F_DAY_OF_YEAR: case GW_PQ_F_HOUR: case GW_PQ_F_MINUTE: case GW_PQ_F_MONTH:
    case GW_PQ_F_YEAR:
        return eval_math(ctx, n, g, out);

    case GW_PQ_F_TIME:
    case GW_PQ_F_PI:
        memset(out, 0, sizeof(*out));
        out->type = GW_PQ_T_SCALAR;
        if (!(out->sc = pq_alloc(ctx, g->n * sizeof(double))))
            return GW_ENOMEM;
        for (size_t i = 0; i < g->n; i++)
            out->sc[i] = f->id == GW_PQ_F_PI ? M_PI : (double)pq_grid_t(g, i) / 1000.0;
        return GW_OK;

    case GW_PQ_F_VECTOR:
        return eval_vector(ctx, n, g, out);

    case GW_PQ_F_SCALAR:
        return eval_scalar(ctx, n, g, out);

    case GW_PQ_F_TIMESTAMP:
        return eval_timestamp(ctx, n, g, out);

    case GW_PQ_F_ABSENT:
        return eval_absent(ctx, n, g, out);

    case GW_PQ_F_SORT: case GW_PQ_F_SORT_DESC: case GW_PQ_F_SORT_BY_LABEL:
    case GW_PQ_F_SORT_BY_LABEL_DESC:
        return eval_sort(ctx, n, g, out);

    case GW_PQ_F_LABEL_REPLACE:
        return eval_label_replace(ctx, n, g, out);
    case GW_PQ_F_LABEL_JOIN:
        return eval_label_join(ctx, n, g, out);
    case GW_PQ_F_HISTOGRAM_QUANTILE:
        if (na != 2)
            return gw_error_set(ctx->err, GW_EINVAL, "histogram_quantile(): wrong number of arguments");
        return eval_hist_quantile(ctx, n, g, out);

    case GW_PQ_F_HISTOGRAM_AVG: case GW_PQ_F_HISTOGRAM_COUNT: case GW_PQ_F_HISTOGRAM_SUM:
    case GW_PQ_F_HISTOGRAM_STDDEV: case GW_PQ_F_HISTOGRAM_STDVAR:
    case GW_PQ_F_HISTOGRAM_FRACTION:
        /* only native histograms count; floats are ignored. Evaluate the
         * arguments for their errors and limits. */
        for (size_t i = 0; i < na; i++) {
            struct pq_val tmp;
            int rc = pq_eval(ctx, n->u.call.args[i], g, &tmp);
            if (rc)
                return rc;
        }
        return pq_vec_init(ctx, out, 1);

    case GW_PQ_F_COUNT_:
        break;
    }
    return gw_error_set(ctx->err, GW_EUNSUPPORTED, "function %s() is not supported", f->name);
}
