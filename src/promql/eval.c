/* src/promql/eval.c - the PromQL evaluator: entry points, selectors,
 * subqueries, literals, unary minus, and the helpers the other evaluator
 * files share (eval_int.h).
 *
 * Range queries are evaluated over all steps at once: every node gives a
 * step matrix (see eval_int.h), an instant query is a range query of one
 * step. Each selector asks the source once for the whole time span its
 * steps need and handles every series as it arrives, walking it with
 * forward-only pointers over the steps:
 *   instant selector at t: the newest sample in (t - lookback, t] (compat 3)
 *     or [t - lookback, t] (compat 2), none when it is a stale marker;
 *   range selector [r] at t: the samples in (t - r, t] (compat 3) or
 *     [t - r, t] (compat 2), stale markers removed;
 * where t is the step time (or the @ time) minus the offset. Instant
 * selectors and range selectors under a window function keep only their
 * step values, never the raw samples; only a range selector whose raw
 * samples are the answer (the top level of an instant query) copies them.
 * Subqueries evaluate their expression at the absolute-aligned times of
 * their step (the first one strictly after t - offset - range; at or after
 * in compat 2), default step 1 minute (Prometheus' default evaluation
 * interval, for range queries too), and are then windowed like range
 * selectors.
 * Limits: points held (selector output, window function output, raw
 * samples kept) count against max_samples, and the scratch arena holding
 * every intermediate step matrix has a ceiling of 32 bytes per allowed
 * sample (or max_memory_bytes when set, at least 4 MiB); both fail with
 * Prometheus' "too many samples" error (a set memory cap names itself).
 * The result is copied into the caller's gw_pq_result arena; the scratch
 * arena is freed before returning. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuwatch/labels.h"
#include "gpuwatch/promql.h"
#include "promql/eval_int.h"

/* Times from the query (offsets, @, ranges) may be extreme: saturate
 * instead of overflowing. */
static int64_t ssub(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r))
        return b > 0 ? INT64_MIN : INT64_MAX;
    return r;
}

static int64_t sadd(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

#define DEFAULT_LOOKBACK_MS (5 * 60 * 1000)
#define DEFAULT_MAX_SAMPLES 50000000ull
#define DEFAULT_TIMEOUT_MS 120000
#define DEFAULT_MAX_POINTS 11000
#define DEFAULT_SUBQUERY_STEP_MS 60000
#define SCRATCH_BLOCK (1u << 20)
#define TOO_MANY_SAMPLES "query processing would load too many samples into memory in query execution"

/* ------------------------------------------------------------ basics */

void gw_pq_opts_default(struct gw_pq_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->lookback_ms = DEFAULT_LOOKBACK_MS;
    o->compat = 3;
    o->max_samples = DEFAULT_MAX_SAMPLES;
    o->timeout_ms = DEFAULT_TIMEOUT_MS;
    o->max_points = DEFAULT_MAX_POINTS;
}

void gw_pq_result_free(struct gw_pq_result *r)
{
    if (!r)
        return;
    gw_arena_free(&r->arena);
    memset(r, 0, sizeof(*r));
}

int pq_nomem(struct pq_ctx *ctx)
{
    return gw_error_set(ctx->err, GW_ENOMEM, "out of memory evaluating the query");
}

/* An allocation failure past the scratch ceiling is the query's fault (too
 * much intermediate data), anything else the machine's. */
static void alloc_failed(struct pq_ctx *ctx, size_t n)
{
    if (ctx->a.max_bytes && (n > ctx->a.max_bytes || ctx->a.used_total > ctx->a.max_bytes - n)) {
        ctx->over_limit = 1;
        if (ctx->o.max_memory_bytes)
            gw_error_set(ctx->err, GW_ELIMIT, "query processing would use more than %zu bytes of memory "
                         "(the query memory limit)", ctx->a.max_bytes);
        else
            gw_error_set(ctx->err, GW_ELIMIT, TOO_MANY_SAMPLES);
    }
    else
        pq_nomem(ctx);
}

void *pq_alloc(struct pq_ctx *ctx, size_t n)
{
    void *p = gw_arena_alloc(&ctx->a, n ? n : 1);
    if (!p)
        alloc_failed(ctx, n);
    return p;
}

void *pq_calloc(struct pq_ctx *ctx, size_t n, size_t size)
{
    void *p = gw_arena_calloc(&ctx->a, n ? n : 1, size ? size : 1);
    if (!p)
        alloc_failed(ctx, n && size && n <= SIZE_MAX / size ? n * size : SIZE_MAX);
    return p;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int pq_check_time(struct pq_ctx *ctx)
{
    if ((ctx->tick++ & 63u) != 0)
        return GW_OK;
    if (mono_ms() > ctx->deadline_ms)
        return gw_error_set(ctx->err, GW_ETIMEOUT, "query timed out in expression evaluation");
    return GW_OK;
}

int pq_charge(struct pq_ctx *ctx, uint64_t n)
{
    ctx->cur_samples += n;
    if (ctx->cur_samples > ctx->o.max_samples)
        return gw_error_set(ctx->err, GW_ELIMIT, TOO_MANY_SAMPLES);
    return GW_OK;
}

int pq_vec_init(struct pq_ctx *ctx, struct pq_val *v, size_t cap)
{
    memset(v, 0, sizeof(*v));
    v->type = GW_PQ_T_VECTOR;
    v->vs = pq_calloc(ctx, cap ? cap : 1, sizeof(*v->vs));
    return v->vs ? GW_OK : GW_ENOMEM;
}

int pq_vser_alloc(struct pq_ctx *ctx, struct pq_vser *s, size_t nsteps)
{
    s->v = pq_alloc(ctx, nsteps * sizeof(double));
    s->pres = pq_calloc(ctx, PQ_BM_WORDS(nsteps), sizeof(uint64_t));
    s->ts = NULL;
    return s->v && s->pres ? GW_OK : GW_ENOMEM;
}

size_t pq_vser_count(const struct pq_vser *s, size_t nsteps)
{
    size_t c = 0;
    for (size_t w = 0; w < PQ_BM_WORDS(nsteps); w++)
        c += (size_t)__builtin_popcountll(s->pres[w]);
    return c;
}

static int vser_any(const struct pq_vser *s, size_t nsteps)
{
    for (size_t w = 0; w < PQ_BM_WORDS(nsteps); w++)
        if (s->pres[w])
            return 1;
    return 0;
}

static void vec_compact_n(struct pq_val *v, size_t nsteps)
{
    size_t o = 0;
    for (size_t i = 0; i < v->nvs; i++)
        if (vser_any(&v->vs[i], nsteps))
            v->vs[o++] = v->vs[i];
    v->nvs = o;
}

int pq_vec_dedupe(struct pq_ctx *ctx, struct pq_val *v, size_t nsteps, int strict)
{
    vec_compact_n(v, nsteps);
    if (v->nvs < 2)
        return GW_OK;
    struct pq_itab t;
    int rc = pq_itab_init(ctx, &t, v->nvs);
    if (rc)
        return rc;
    size_t o = 0;
    for (size_t i = 0; i < v->nvs; i++) {
        struct pq_vser *s = &v->vs[i];
        size_t id;
        int found;
        rc = pq_itab_get(ctx, &t, s->lab, s->llen, 1, &id, &found);
        if (rc)
            return rc;
        if (!found) {
            v->vs[o++] = *s;
            continue;
        }
        if (strict)
            return gw_error_set(ctx->err, GW_EINVAL,
                                "vector cannot contain metrics with the same labelset");
        /* ids are assigned in order of first appearance = output slot */
        struct pq_vser *d = &v->vs[id];
        for (size_t w = 0; w < PQ_BM_WORDS(nsteps); w++) {
            if (d->pres[w] & s->pres[w])
                return gw_error_set(ctx->err, GW_EINVAL,
                                    "vector cannot contain metrics with the same labelset");
            uint64_t m = s->pres[w];
            while (m) {
                size_t b = (size_t)__builtin_ctzll(m);
                size_t step = w * 64 + b;
                d->v[step] = s->v[step];
                if (d->ts && s->ts)
                    d->ts[step] = s->ts[step];
                m &= m - 1;
            }
            d->pres[w] |= s->pres[w];
        }
    }
    v->nvs = o;
    return GW_OK;
}

/* ------------------------------------------------------------ labels */

int pq_lb_load(struct pq_ctx *ctx, struct pq_lb *b, const uint8_t *lab, size_t len)
{
    int rc = gw_labels_decode(lab, len, b->l, PQ_LB_MAX, &b->n);
    if (rc)
        return gw_error_set(ctx->err, rc == GW_ELIMIT ? GW_ELIMIT : GW_ECORRUPT,
                            "cannot decode series labels");
    return GW_OK;
}

static int name_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    size_t m = alen < blen ? alen : blen;
    int c = m ? memcmp(a, b, m) : 0;
    if (c)
        return c;
    return alen < blen ? -1 : alen > blen ? 1 : 0;
}

void pq_lb_del(struct pq_lb *b, const char *name, size_t nlen)
{
    for (size_t i = 0; i < b->n; i++) {
        if (b->l[i].name_len == nlen && memcmp(b->l[i].name, name, nlen) == 0) {
            memmove(&b->l[i], &b->l[i + 1], (b->n - i - 1) * sizeof(b->l[0]));
            b->n--;
            return;
        }
    }
}

int pq_lb_set(struct pq_ctx *ctx, struct pq_lb *b, const char *name, size_t nlen,
              const char *value, size_t vlen)
{
    if (vlen == 0) {
        pq_lb_del(b, name, nlen);
        return GW_OK;
    }
    if (nlen > GW_LABEL_NAME_MAX || vlen > GW_LABEL_VALUE_MAX)
        return gw_error_set(ctx->err, GW_EINVAL, "label name or value too long");
    size_t i = 0;
    while (i < b->n && name_cmp(b->l[i].name, b->l[i].name_len, name, nlen) < 0)
        i++;
    if (i < b->n && name_cmp(b->l[i].name, b->l[i].name_len, name, nlen) == 0) {
        b->l[i].value = value;
        b->l[i].value_len = (uint32_t)vlen;
        return GW_OK;
    }
    if (b->n >= PQ_LB_MAX)
        return gw_error_set(ctx->err, GW_ELIMIT, "too many labels in a series");
    memmove(&b->l[i + 1], &b->l[i], (b->n - i) * sizeof(b->l[0]));
    b->l[i].name = name;
    b->l[i].name_len = (uint32_t)nlen;
    b->l[i].value = value;
    b->l[i].value_len = (uint32_t)vlen;
    b->n++;
    return GW_OK;
}

void pq_lb_keep(struct pq_lb *b, char *const *names, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < b->n; i++) {
        int keep = 0;
        for (size_t j = 0; j < n && !keep; j++)
            keep = strlen(names[j]) == b->l[i].name_len &&
                   memcmp(names[j], b->l[i].name, b->l[i].name_len) == 0;
        if (keep)
            b->l[o++] = b->l[i];
    }
    b->n = o;
}

int pq_lb_encode(struct pq_ctx *ctx, struct pq_lb *b, const uint8_t **out, size_t *len)
{
    size_t sz = gw_labels_encoded_size(b->l, b->n);
    uint8_t *p = pq_alloc(ctx, sz);
    if (!p)
        return GW_ENOMEM;
    *len = gw_labels_encode(b->l, b->n, p);
    *out = p;
    return GW_OK;
}

int pq_lab_drop_name(struct pq_ctx *ctx, const uint8_t *lab, size_t len, const uint8_t **out,
                     size_t *olen)
{
    const char *v;
    size_t vl;
    if (!gw_labels_get(lab, len, "__name__", 8, &v, &vl)) {
        *out = lab;
        *olen = len;
        return GW_OK;
    }
    struct pq_lb *b = pq_alloc(ctx, sizeof(*b));
    if (!b)
        return GW_ENOMEM;
    int rc = pq_lb_load(ctx, b, lab, len);
    if (rc)
        return rc;
    pq_lb_del(b, "__name__", 8);
    return pq_lb_encode(ctx, b, out, olen);
}

static int legacy_name(const char *s, size_t n)
{
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                 (i > 0 && c >= '0' && c <= '9');
        if (!ok)
            return 0;
    }
    return 1;
}

/* Appends s quoted like Go's strconv.Quote (ASCII escapes; other bytes kept). */
static size_t put_quoted(char *buf, size_t cap, size_t o, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    if (o + 1 < cap)
        buf[o++] = '"';
    for (size_t i = 0; i < n && o + 5 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            buf[o++] = '\\';
            buf[o++] = (char)c;
        } else if (c == '\n') {
            buf[o++] = '\\';
            buf[o++] = 'n';
        } else if (c == '\t') {
            buf[o++] = '\\';
            buf[o++] = 't';
        } else if (c < 0x20 || c == 0x7f) {
            buf[o++] = '\\';
            buf[o++] = 'x';
            buf[o++] = hex[c >> 4];
            buf[o++] = hex[c & 15];
        } else {
            buf[o++] = (char)c;
        }
    }
    if (o + 1 < cap)
        buf[o++] = '"';
    return o;
}

void pq_lab_format(const uint8_t *lab, size_t len, char *buf, size_t cap)
{
    struct gw_label ls[64];
    size_t n = 0, o = 0;
    if (cap < 3) {
        if (cap)
            buf[0] = 0;
        return;
    }
    if (gw_labels_decode(lab, len, ls, 64, &n) != GW_OK)
        n = 0;
    buf[o++] = '{';
    for (size_t i = 0; i < n && o + 8 < cap; i++) {
        if (i > 0) {
            buf[o++] = ',';
            buf[o++] = ' ';
        }
        if (legacy_name(ls[i].name, ls[i].name_len)) {
            size_t k = ls[i].name_len < cap - o - 4 ? ls[i].name_len : cap - o - 4;
            memcpy(buf + o, ls[i].name, k);
            o += k;
        } else {
            o = put_quoted(buf, cap, o, ls[i].name, ls[i].name_len);
        }
        if (o + 2 < cap)
            buf[o++] = '=';
        o = put_quoted(buf, cap, o, ls[i].value, ls[i].value_len);
    }
    if (o + 1 < cap)
        buf[o++] = '}';
    buf[o < cap ? o : cap - 1] = 0;
}

/* ------------------------------------------------------------ interning */

int pq_itab_init(struct pq_ctx *ctx, struct pq_itab *t, size_t expect)
{
    size_t cap = 16;
    while (cap < expect * 2 + 2)
        cap <<= 1;
    t->e = pq_calloc(ctx, cap, sizeof(*t->e));
    t->cap = cap;
    t->n = 0;
    return t->e ? GW_OK : GW_ENOMEM;
}

static int itab_grow(struct pq_ctx *ctx, struct pq_itab *t)
{
    size_t ncap = t->cap * 2;
    struct pq_ient *ne = pq_calloc(ctx, ncap, sizeof(*ne));
    if (!ne)
        return GW_ENOMEM;
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->e[i].b)
            continue;
        size_t j = t->e[i].h & (ncap - 1);
        while (ne[j].b)
            j = (j + 1) & (ncap - 1);
        ne[j] = t->e[i];
    }
    t->e = ne;
    t->cap = ncap;
    return GW_OK;
}

static const uint8_t empty_bytes[1];

int pq_itab_get(struct pq_ctx *ctx, struct pq_itab *t, const uint8_t *b, size_t len, int create,
                size_t *id, int *found)
{
    if (!b)
        b = empty_bytes;
    uint64_t h = gw_labels_hash(b, len);
    size_t j = h & (t->cap - 1);
    while (t->e[j].b) {
        if (t->e[j].h == h && t->e[j].len == len && memcmp(t->e[j].b, b, len) == 0) {
            *id = t->e[j].id;
            *found = 1;
            return GW_OK;
        }
        j = (j + 1) & (t->cap - 1);
    }
    *found = 0;
    if (!create)
        return GW_OK;
    t->e[j].h = h;
    t->e[j].b = b;
    t->e[j].len = len;
    t->e[j].id = t->n;
    *id = t->n++;
    if (t->n * 2 > t->cap)
        return itab_grow(ctx, t);
    return GW_OK;
}

/* ------------------------------------------------------------ Go floats */

/* Shortest round-trip decimal digits of finite v != 0: digits, count, and
 * the decimal point position (value = 0.d1d2... * 10^dp). */
static void shortest_digits(double v, char *dig, int *nd, int *dp)
{
    char tmp[40];
    int p;
    for (p = 0; p < 17; p++) {
        snprintf(tmp, sizeof(tmp), "%.*e", p, v);
        if (strtod(tmp, NULL) == v)
            break;
    }
    /* tmp: [-]d.ddde[+-]xx */
    const char *s = tmp;
    if (*s == '-')
        s++;
    int n = 0;
    while (*s && *s != 'e') {
        if (*s >= '0' && *s <= '9')
            dig[n++] = *s;
        s++;
    }
    int e = 0;
    if (*s == 'e')
        e = (int)strtol(s + 1, NULL, 10);
    while (n > 1 && dig[n - 1] == '0')
        n--;
    dig[n] = 0;
    *nd = n;
    *dp = e + 1;
}

static int fmt_special(double v, char *buf, size_t cap)
{
    if (isnan(v)) {
        snprintf(buf, cap, "NaN");
        return 1;
    }
    if (isinf(v)) {
        snprintf(buf, cap, v > 0 ? "+Inf" : "-Inf");
        return 1;
    }
    if (v == 0) {
        snprintf(buf, cap, signbit(v) ? "-0" : "0");
        return 1;
    }
    return 0;
}

void pq_fmt_go_f(double v, char *buf, size_t cap)
{
    if (fmt_special(v, buf, cap))
        return;
    char dig[24];
    int nd, dp;
    shortest_digits(v, dig, &nd, &dp);
    size_t o = 0;
#define PUT(c) do { if (o + 1 < cap) buf[o++] = (c); } while (0)
    if (v < 0)
        PUT('-');
    if (dp <= 0) {
        PUT('0');
        PUT('.');
        for (int i = 0; i < -dp; i++)
            PUT('0');
        for (int i = 0; i < nd; i++)
            PUT(dig[i]);
    } else if (dp >= nd) {
        for (int i = 0; i < nd; i++)
            PUT(dig[i]);
        for (int i = nd; i < dp; i++)
            PUT('0');
    } else {
        for (int i = 0; i < dp; i++)
            PUT(dig[i]);
        PUT('.');
        for (int i = dp; i < nd; i++)
            PUT(dig[i]);
    }
    if (cap)
        buf[o] = 0;
}

void pq_fmt_go_v(double v, char *buf, size_t cap)
{
    if (isnan(v) || isinf(v) || v == 0) {
        if (isinf(v) && v > 0) {
            snprintf(buf, cap, "+Inf");
            return;
        }
        fmt_special(v, buf, cap);
        return;
    }
    char dig[24];
    int nd, dp;
    shortest_digits(v, dig, &nd, &dp);
    int exp = dp - 1;
    if (exp < -4 || exp >= 6) {
        size_t o = 0;
        if (v < 0)
            PUT('-');
        PUT(dig[0]);
        if (nd > 1) {
            PUT('.');
            for (int i = 1; i < nd; i++)
                PUT(dig[i]);
        }
        if (cap)
            buf[o] = 0;
        char e[16];
        snprintf(e, sizeof(e), "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
        size_t l = strlen(buf);
        snprintf(buf + l, cap > l ? cap - l : 0, "%s", e);
        return;
    }
    pq_fmt_go_f(v, buf, cap);
#undef PUT
}

/* ------------------------------------------------------------ selectors */

int64_t pq_eval_time(struct pq_ctx *ctx, int has_at, int64_t at_ms, const struct pq_grid *g,
                     size_t i)
{
    (void)ctx;
    return has_at ? at_ms : pq_grid_t(g, i);
}

static void sel_at(struct pq_ctx *ctx, enum gw_pq_at at, int64_t at_ms, int *has, int64_t *t)
{
    *has = at != GW_PQ_AT_NONE;
    *t = at == GW_PQ_AT_START ? ctx->q_start : at == GW_PQ_AT_END ? ctx->q_end : at_ms;
}

/* ---- streaming select: every series goes to a handler as it comes ---- */

struct fetch {
    struct pq_ctx *ctx;
    pq_series_fn fn;
    void *ud;
    int rc;
};

static int fetch_cb(void *ud, uint64_t sid, const uint8_t *labels, size_t llen, const int64_t *t,
                    const double *v, size_t n)
{
    struct fetch *f = ud;
    (void)sid;
    int rc = pq_check_time(f->ctx);
    if (rc)
        return f->rc = rc;
    f->ctx->touched += n;
    if (n == 0)
        return GW_OK;
    if ((rc = f->fn(f->ctx, f->ud, labels, llen, t, v, n)))
        return f->rc = rc;
    return GW_OK;
}

int pq_select(struct pq_ctx *ctx, const struct gw_pq_node *sel, int64_t mint, int64_t maxt,
              pq_series_fn fn, void *ud)
{
    return pq_select_view(ctx, sel, mint, maxt, GW_PQ_VIEW_RAW, 0, fn, ud);
}

/* Bucket size (1 h, else 5 min, else 0) that every evaluation time of a
 * selector (minus its offset) and the range are multiples of: windows
 * (e - range, e] are then unions of whole buckets and instant selectors
 * look up at bucket ends (docs/downsampling.md). */
int64_t pq_aligned_bucket(struct pq_ctx *ctx, int has_at, int64_t at, int64_t off, const struct pq_grid *g,
                          int64_t range)
{
    static const int64_t sizes[2] = { 3600000, 300000 };
    int64_t e0 = ssub(pq_eval_time(ctx, has_at, at, g, 0), off);
    for (int k = 0; k < 2; k++) {
        int64_t b = sizes[k];
        if (e0 % b != 0 || range % b != 0)
            continue;
        if (!has_at && g->n > 1 && g->step % b != 0)
            continue;
        return b;
    }
    return 0;
}

int pq_select_view(struct pq_ctx *ctx, const struct gw_pq_node *sel, int64_t mint, int64_t maxt, int kind,
                   int64_t exact_ms, pq_series_fn fn, void *ud)
{
    struct fetch f = { ctx, fn, ud, GW_OK };
    if (mint > maxt)
        return GW_OK;
    int rc;
    if (kind != GW_PQ_VIEW_RAW && ctx->src->select_view && ctx->o.max_source_resolution_ms != GW_PQ_RES_RAW) {
        struct gw_pq_view v = { kind, exact_ms, ctx->o.max_source_resolution_ms };
        rc = ctx->src->select_view(ctx->src->ud, sel->u.sel.matchers, sel->u.sel.n_matchers, mint, maxt, &v,
                                   fetch_cb, &f, ctx->err);
    } else {
        rc = ctx->src->select(ctx->src->ud, sel->u.sel.matchers, sel->u.sel.n_matchers, mint, maxt,
                              fetch_cb, &f, ctx->err);
    }
    if (f.rc)
        return f.rc;
    return rc < 0 ? rc : GW_OK;
}

int pq_tmp_reserve(struct pq_ctx *ctx, size_t n)
{
    if (n <= ctx->tmp_cap)
        return GW_OK;
    size_t cap = ctx->tmp_cap ? ctx->tmp_cap : 1024;
    while (cap < n)
        cap *= 2;
    int64_t *nt = realloc(ctx->tmp_t, cap * sizeof(int64_t));
    if (nt)
        ctx->tmp_t = nt;
    double *nv = realloc(ctx->tmp_v, cap * sizeof(double));
    if (nv)
        ctx->tmp_v = nv;
    if (!nt || !nv)
        return pq_nomem(ctx);
    ctx->tmp_cap = cap;
    return GW_OK;
}

const uint8_t *pq_copy_labels(struct pq_ctx *ctx, const uint8_t *lab, size_t llen)
{
    uint8_t *c = pq_alloc(ctx, llen);
    if (c && llen)
        memcpy(c, lab, llen);
    return c;
}

static int vser_cmp(const void *a, const void *b)
{
    const struct pq_vser *x = a, *y = b;
    return gw_labels_compare(x->lab, x->llen, y->lab, y->llen);
}

void pq_vec_sort_labels(struct pq_val *v)
{
    if (v->nvs > 1)
        qsort(v->vs, v->nvs, sizeof(*v->vs), vser_cmp);
}

int pq_vec_grow(struct pq_ctx *ctx, struct pq_val *v, size_t *cap)
{
    if (v->nvs < *cap)
        return GW_OK;
    size_t nc = *cap ? *cap * 2 : 64;
    struct pq_vser *ns = pq_alloc(ctx, nc * sizeof(*ns));
    if (!ns)
        return GW_ENOMEM;
    if (v->nvs)
        memcpy(ns, v->vs, v->nvs * sizeof(*ns));
    v->vs = ns;
    *cap = nc;
    return GW_OK;
}

/* ---- raw samples (range selectors not consumed by a window function) ---- */

struct rawcoll {
    struct pq_raw *rs;
    size_t n, cap;
};

static int raw_series(struct pq_ctx *ctx, void *ud, const uint8_t *labels, size_t llen,
                      const int64_t *t, const double *v, size_t n)
{
    struct rawcoll *c = ud;
    int rc = pq_charge(ctx, n);
    if (rc)
        return rc;
    if (c->n == c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 64;
        struct pq_raw *nr = pq_alloc(ctx, ncap * sizeof(*nr));
        if (!nr)
            return GW_ENOMEM;
        if (c->n)
            memcpy(nr, c->rs, c->n * sizeof(*nr));
        c->rs = nr;
        c->cap = ncap;
    }
    struct pq_raw *r = &c->rs[c->n];
    r->lab = pq_copy_labels(ctx, labels, llen);
    r->llen = llen;
    r->t = pq_alloc(ctx, n * sizeof(int64_t));
    r->v = pq_alloc(ctx, n * sizeof(double));
    if (!r->lab || !r->t || !r->v)
        return GW_ENOMEM;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (pq_is_stale(v[i]))
            continue;
        r->t[o] = t[i];
        r->v[o] = v[i];
        o++;
    }
    r->n = o;
    if (o > 0)
        c->n++;
    return GW_OK;
}

static int raw_cmp(const void *a, const void *b)
{
    const struct pq_raw *x = a, *y = b;
    return gw_labels_compare(x->lab, x->llen, y->lab, y->llen);
}

/* ---- instant selectors: step values computed as each series arrives ---- */

struct vsel {
    const struct pq_grid *g;
    struct pq_val *out;
    size_t cap;
    int has_at, want_ts;
    int64_t at, off, lb;
};

static int vsel_series(struct pq_ctx *ctx, void *ud, const uint8_t *labels, size_t llen,
                       const int64_t *t, const double *v, size_t n)
{
    struct vsel *q = ud;
    const struct pq_grid *g = q->g;
    int rc = pq_vec_grow(ctx, q->out, &q->cap);
    if (rc)
        return rc;
    struct pq_vser *s = &q->out->vs[q->out->nvs];
    if ((rc = pq_vser_alloc(ctx, s, g->n)))
        return rc;
    if (q->want_ts && !(s->ts = pq_alloc(ctx, g->n * sizeof(int64_t))))
        return GW_ENOMEM;
    size_t j = 0, cnt = 0;
    for (size_t i = 0; i < g->n; i++) {
        int64_t ref = ssub(pq_eval_time(ctx, q->has_at, q->at, g, i), q->off);
        while (j < n && t[j] <= ref)
            j++;
        if (j == 0)
            continue;
        int64_t st = t[j - 1];
        int64_t lo = ssub(ref, q->lb);
        if (ctx->o.compat == 2 ? st < lo : st <= lo)
            continue;
        if (pq_is_stale(v[j - 1]))
            continue;
        s->v[i] = v[j - 1];
        if (s->ts)
            s->ts[i] = st;
        pq_bm_set(s->pres, i);
        cnt++;
    }
    if (cnt == 0)
        return GW_OK;   /* the arrays are left to the arena */
    if ((rc = pq_charge(ctx, cnt)))
        return rc;
    if (!(s->lab = pq_copy_labels(ctx, labels, llen)))
        return GW_ENOMEM;
    s->llen = llen;
    q->out->nvs++;
    return GW_OK;
}

int pq_eval_vector_sel(struct pq_ctx *ctx, const struct gw_pq_node *n, const struct pq_grid *g,
                       int want_ts, struct pq_val *out)
{
    struct vsel q;
    memset(&q, 0, sizeof(q));
    sel_at(ctx, n->u.sel.at, n->u.sel.at_ms, &q.has_at, &q.at);
    q.g = g;
    q.out = out;
    q.want_ts = want_ts;
    q.off = n->u.sel.offset_ms;
    q.lb = ctx->o.lookback_ms;
    int64_t r0 = ssub(pq_eval_time(ctx, q.has_at, q.at, g, 0), q.off);
    int64_t r1 = ssub(pq_eval_time(ctx, q.has_at, q.at, g, g->n - 1), q.off);
    int rc = pq_vec_init(ctx, out, 1);
    if (rc)
        return rc;
    q.cap = 1;
    /* At bucket ends the latest raw sample is the last one of its bucket
     * (stale markers included), so the LAST view gives the raw answer. */
    int64_t exact = pq_aligned_bucket(ctx, q.has_at, q.at, q.off, g, 0);
    rc = pq_select_view(ctx, n, sadd(ssub(r0, q.lb), ctx->o.compat == 2 ? 0 : 1), r1, GW_PQ_VIEW_LAST, exact,
                        vsel_series, &q);
    if (rc)
        return rc;
    pq_vec_sort_labels(out);
    return GW_OK;
}

int pq_matrix_params(struct pq_ctx *ctx, const struct gw_pq_node *n, const struct pq_grid *g,
                     struct pq_val *out, int64_t *mint, int64_t *maxt)
{
    memset(out, 0, sizeof(*out));
    out->type = GW_PQ_T_MATRIX;
    sel_at(ctx, n->u.sel.at, n->u.sel.at_ms, &out->has_at, &out->at_ms);
    out->range_ms = n->u.sel.range_ms;
    out->offset_ms = n->u.sel.offset_ms;
    out->sel = n;
    int64_t e0 = ssub(pq_eval_time(ctx, out->has_at, out->at_ms, g, 0), out->offset_ms);
    int64_t e1 = ssub(pq_eval_time(ctx, out->has_at, out->at_ms, g, g->n - 1), out->offset_ms);
    *mint = sadd(ssub(e0, out->range_ms), ctx->o.compat == 2 ? 0 : 1);
    *maxt = e1;
    return GW_OK;
}

static int eval_matrix_sel(struct pq_ctx *ctx, const struct gw_pq_node *n, const struct pq_grid *g,
                           struct pq_val *out)
{
    int64_t mint, maxt;
    pq_matrix_params(ctx, n, g, out, &mint, &maxt);
    struct rawcoll c = { NULL, 0, 0 };
    int rc = pq_select_view(ctx, n, mint, maxt, GW_PQ_VIEW_LAST_VALUE, 0, raw_series, &c);
    if (rc)
        return rc;
    if (c.n > 1)
        qsort(c.rs, c.n, sizeof(*c.rs), raw_cmp);
    out->rs = c.rs;
    out->nrs = c.n;
    return GW_OK;
}

void pq_window(struct pq_ctx *ctx, const struct pq_val *m, const struct pq_raw *r,
               const struct pq_grid *g, size_t i, struct pq_win_it *w, int64_t *range_start,
               int64_t *range_end)
{
    int64_t e = ssub(pq_eval_time(ctx, m->has_at, m->at_ms, g, i), m->offset_ms);
    int64_t s = ssub(e, m->range_ms);
    if (ctx->o.compat == 2) {
        while (w->lo < r->n && r->t[w->lo] < s)
            w->lo++;
    } else {
        while (w->lo < r->n && r->t[w->lo] <= s)
            w->lo++;
    }
    if (w->hi < w->lo)
        w->hi = w->lo;
    while (w->hi < r->n && r->t[w->hi] <= e)
        w->hi++;
    *range_start = s;
    *range_end = e;
}

/* ------------------------------------------------------------ subqueries */

static int eval_subquery(struct pq_ctx *ctx, const struct gw_pq_node *n, const struct pq_grid *g,
                         struct pq_val *out)
{
    int has_at;
    int64_t at;
    sel_at(ctx, n->u.sub.at, n->u.sub.at_ms, &has_at, &at);
    int64_t off = n->u.sub.offset_ms, range = n->u.sub.range_ms;
    int64_t step = n->u.sub.step_ms > 0 ? n->u.sub.step_ms : DEFAULT_SUBQUERY_STEP_MS;
    int64_t e0 = ssub(pq_eval_time(ctx, has_at, at, g, 0), off);
    int64_t e1 = ssub(pq_eval_time(ctx, has_at, at, g, g->n - 1), off);
    memset(out, 0, sizeof(*out));
    out->type = GW_PQ_T_MATRIX;
    out->range_ms = range;
    out->offset_ms = off;
    out->has_at = has_at;
    out->at_ms = at;
    int64_t lo = ssub(e0, range);
    int64_t start = step * (lo / step);
    if (ctx->o.compat == 2 ? start < lo : start <= lo)
        start = sadd(start, step);
    if (start > e1)
        return GW_OK;
    uint64_t nsteps = ((uint64_t)e1 - (uint64_t)start) / (uint64_t)step + 1;
    if (nsteps > ctx->o.max_samples)
        return gw_error_set(ctx->err, GW_ELIMIT, TOO_MANY_SAMPLES);
    struct pq_grid ig = { start, step, (size_t)nsteps };
    struct pq_val in;
    int rc = pq_eval(ctx, n->u.sub.expr, &ig, &in);
    if (rc)
        return rc;
    if (in.type != GW_PQ_T_VECTOR)
        return gw_error_set(ctx->err, GW_EINVAL, "subquery is only allowed on instant vector");
    out->rs = pq_calloc(ctx, in.nvs ? in.nvs : 1, sizeof(*out->rs));
    if (!out->rs)
        return GW_ENOMEM;
    for (size_t k = 0; k < in.nvs; k++) {
        const struct pq_vser *s = &in.vs[k];
        size_t c = pq_vser_count(s, ig.n);
        if (c == 0)
            continue;
        if ((rc = pq_charge(ctx, c)))
            return rc;
        struct pq_raw *r = &out->rs[out->nrs++];
        r->lab = s->lab;
        r->llen = s->llen;
        r->t = pq_alloc(ctx, c * sizeof(int64_t));
        r->v = pq_alloc(ctx, c * sizeof(double));
        if (!r->t || !r->v)
            return GW_ENOMEM;
        size_t o = 0;
        for (size_t i = 0; i < ig.n; i++) {
            if (!pq_bm_get(s->pres, i))
                continue;
            r->t[o] = pq_grid_t(&ig, i);
            r->v[o] = s->v[i];
            o++;
        }
        r->n = o;
    }
    if (out->nrs > 1)
        qsort(out->rs, out->nrs, sizeof(*out->rs), raw_cmp);
    return GW_OK;
}

/* ------------------------------------------------------------ dispatch */

static int eval_unary(struct pq_ctx *ctx, const struct gw_pq_node *n, const struct pq_grid *g,
                      struct pq_val *out)
{
    int rc = pq_eval(ctx, n->u.unary.expr, g, out);
    if (rc || n->u.unary.op != GW_PQ_OP_SUB)
        return rc;
    if (out->type == GW_PQ_T_SCALAR) {
        for (size_t i = 0; i < g->n; i++)
            out->sc[i] = -out->sc[i];
        return GW_OK;
    }
    if (out->type != GW_PQ_T_VECTOR)
        return gw_error_set(ctx->err, GW_EINVAL, "unary minus on a %s",
                            gw_pq_type_name(out->type));
    for (size_t k = 0; k < out->nvs; k++) {
        struct pq_vser *s = &out->vs[k];
        if ((rc = pq_lab_drop_name(ctx, s->lab, s->llen, &s->lab, &s->llen)))
            return rc;
        for (size_t i = 0; i < g->n; i++)
            s->v[i] = -s->v[i];
        s->ts = NULL;
    }
    return pq_vec_dedupe(ctx, out, g->n, 1);
}

int pq_eval(struct pq_ctx *ctx, const struct gw_pq_node *n, const struct pq_grid *g,
            struct pq_val *out)
{
    int rc = pq_check_time(ctx);
    if (rc)
        return rc;
    if (!n)
        return gw_error_set(ctx->err, GW_EINVAL, "missing expression");
    switch (n->kind) {
    case GW_PQ_NUMBER:
        memset(out, 0, sizeof(*out));
        out->type = GW_PQ_T_SCALAR;
        if (!(out->sc = pq_alloc(ctx, g->n * sizeof(double))))
            return GW_ENOMEM;
        for (size_t i = 0; i < g->n; i++)
            out->sc[i] = n->u.number;
        return GW_OK;
    case GW_PQ_STRING_LIT:
        memset(out, 0, sizeof(*out));
        out->type = GW_PQ_T_STRING;
        out->str = n->u.str.s ? n->u.str.s : "";
        return GW_OK;
    case GW_PQ_VECTOR_SEL:
        return pq_eval_vector_sel(ctx, n, g, 0, out);
    case GW_PQ_MATRIX_SEL:
        return eval_matrix_sel(ctx, n, g, out);
    case GW_PQ_SUBQUERY:
        return eval_subquery(ctx, n, g, out);
    case GW_PQ_CALL:
        return pq_eval_call(ctx, n, g, out);
    case GW_PQ_AGGREGATE:
        return pq_eval_aggregate(ctx, n, g, out);
    case GW_PQ_BINARY:
        return pq_eval_binary(ctx, n, g, out);
    case GW_PQ_UNARY:
        return eval_unary(ctx, n, g, out);
    case GW_PQ_PAREN:
        return pq_eval(ctx, n->u.paren, g, out);
    }
    return gw_error_set(ctx->err, GW_EINVAL, "unknown expression node");
}

int pq_eval_scalar(struct pq_ctx *ctx, const struct gw_pq_node *n, const struct pq_grid *g,
                   double **out)
{
    struct pq_val v;
    int rc = pq_eval(ctx, n, g, &v);
    if (rc)
        return rc;
    if (v.type != GW_PQ_T_SCALAR)
        return gw_error_set(ctx->err, GW_EINVAL, "expected type scalar, got %s",
                            gw_pq_type_name(v.type));
    *out = v.sc;
    return GW_OK;
}

/* ------------------------------------------------------------ results */

static void *res_alloc(struct gw_pq_result *res, size_t n)
{
    return gw_arena_alloc(&res->arena, n ? n : 1);
}

static int res_labels(struct gw_pq_result *res, struct gw_pq_series *o, const uint8_t *lab,
                      size_t llen)
{
    o->labels = res_alloc(res, llen);
    if (!o->labels)
        return GW_ENOMEM;
    if (llen)
        memcpy(o->labels, lab, llen);
    o->labels_len = llen;
    return GW_OK;
}

static int ser_cmp(const void *a, const void *b)
{
    const struct gw_pq_series *x = a, *y = b;
    return gw_labels_compare(x->labels, x->labels_len, y->labels, y->labels_len);
}

static int build_result(struct pq_ctx *ctx, const struct pq_val *v, const struct pq_grid *g,
                        int instant, struct gw_pq_result *res)
{
    res->samples_touched = ctx->touched;
    switch (v->type) {
    case GW_PQ_T_SCALAR:
        if (instant) {
            res->type = GW_PQ_T_SCALAR;
            res->t = g->start;
            res->scalar = v->sc[0];
            return GW_OK;
        }
        res->type = GW_PQ_T_MATRIX;
        res->series = res_alloc(res, sizeof(*res->series));
        if (!res->series)
            return pq_nomem(ctx);
        memset(res->series, 0, sizeof(*res->series));
        res->n_series = 1;
        res->series[0].labels = res_alloc(res, 1);
        res->series[0].t = res_alloc(res, g->n * sizeof(int64_t));
        res->series[0].v = res_alloc(res, g->n * sizeof(double));
        if (!res->series[0].labels || !res->series[0].t || !res->series[0].v)
            return pq_nomem(ctx);
        for (size_t i = 0; i < g->n; i++) {
            res->series[0].t[i] = pq_grid_t(g, i);
            res->series[0].v[i] = v->sc[i];
        }
        res->series[0].n = g->n;
        return GW_OK;
    case GW_PQ_T_STRING:
        if (!instant)
            return gw_error_set(ctx->err, GW_EINVAL,
                                "invalid expression type \"string\" for range query, must be Scalar or instant Vector");
        res->type = GW_PQ_T_STRING;
        res->t = g->start;
        {
            size_t l = strlen(v->str);
            res->str = res_alloc(res, l + 1);
            if (!res->str)
                return pq_nomem(ctx);
            memcpy(res->str, v->str, l + 1);
        }
        return GW_OK;
    case GW_PQ_T_MATRIX: {
        if (!instant)
            return gw_error_set(ctx->err, GW_EINVAL,
                                "invalid expression type \"range vector\" for range query, must be Scalar or instant Vector");
        res->type = GW_PQ_T_MATRIX;
        res->series = res_alloc(res, (v->nrs ? v->nrs : 1) * sizeof(*res->series));
        if (!res->series)
            return pq_nomem(ctx);
        for (size_t k = 0; k < v->nrs; k++) {
            const struct pq_raw *r = &v->rs[k];
            struct pq_win_it w = { 0, 0 };
            int64_t rs, re;
            pq_window(ctx, v, r, g, 0, &w, &rs, &re);
            if (w.hi <= w.lo)
                continue;
            struct gw_pq_series *o = &res->series[res->n_series];
            size_t c = w.hi - w.lo;
            if (res_labels(res, o, r->lab, r->llen))
                return pq_nomem(ctx);
            o->t = res_alloc(res, c * sizeof(int64_t));
            o->v = res_alloc(res, c * sizeof(double));
            if (!o->t || !o->v)
                return pq_nomem(ctx);
            memcpy(o->t, r->t + w.lo, c * sizeof(int64_t));
            memcpy(o->v, r->v + w.lo, c * sizeof(double));
            o->n = c;
            res->n_series++;
        }
        return GW_OK;
    }
    case GW_PQ_T_VECTOR: {
        res->type = instant ? GW_PQ_T_VECTOR : GW_PQ_T_MATRIX;
        res->series = res_alloc(res, (v->nvs ? v->nvs : 1) * sizeof(*res->series));
        if (!res->series)
            return pq_nomem(ctx);
        for (size_t k = 0; k < v->nvs; k++) {
            const struct pq_vser *s = &v->vs[k];
            size_t c = pq_vser_count(s, g->n);
            if (c == 0)
                continue;
            struct gw_pq_series *o = &res->series[res->n_series];
            if (res_labels(res, o, s->lab, s->llen))
                return pq_nomem(ctx);
            o->t = res_alloc(res, c * sizeof(int64_t));
            o->v = res_alloc(res, c * sizeof(double));
            if (!o->t || !o->v)
                return pq_nomem(ctx);
            size_t j = 0;
            for (size_t i = 0; i < g->n; i++) {
                if (!pq_bm_get(s->pres, i))
                    continue;
                o->t[j] = pq_grid_t(g, i);
                o->v[j] = s->v[i];
                j++;
            }
            o->n = j;
            res->n_series++;
        }
        if (!instant && res->n_series > 1)
            qsort(res->series, res->n_series, sizeof(*res->series), ser_cmp);
        return GW_OK;
    }
    case GW_PQ_T_NONE:
        break;
    }
    return gw_error_set(ctx->err, GW_EINVAL, "expression has no value type");
}

static int run(const struct gw_pq_source *src, const struct gw_pq_expr *e, int64_t start,
               int64_t end, int64_t step, int instant, const struct gw_pq_opts *o,
               struct gw_pq_result *res, struct gw_error *err)
{
    struct pq_ctx ctx;
    memset(&ctx, 0, sizeof(ctx));
    if (o)
        ctx.o = *o;
    else
        gw_pq_opts_default(&ctx.o);
    if (ctx.o.lookback_ms <= 0)
        ctx.o.lookback_ms = DEFAULT_LOOKBACK_MS;
    if (ctx.o.compat != 2)
        ctx.o.compat = 3;
    if (ctx.o.max_samples == 0)
        ctx.o.max_samples = DEFAULT_MAX_SAMPLES;
    if (ctx.o.timeout_ms <= 0)
        ctx.o.timeout_ms = DEFAULT_TIMEOUT_MS;
    if (ctx.o.max_points <= 0)
        ctx.o.max_points = DEFAULT_MAX_POINTS;
    ctx.src = src;
    ctx.err = err;
    ctx.q_start = start;
    ctx.q_end = end;
    ctx.deadline_ms = mono_ms() + ctx.o.timeout_ms;
    if (!src || !src->select || !e || !e->root || !res)
        return gw_error_set(err, GW_EINVAL, "missing source, expression or result");
    if (!instant) {
        if (step <= 0)
            return gw_error_set(err, GW_EINVAL,
                                "zero or negative query resolution step widths are not accepted. Try a positive integer");
        if (end < start)
            return gw_error_set(err, GW_EINVAL, "end timestamp must not be before start time");
        if (((uint64_t)end - (uint64_t)start) / (uint64_t)step > (uint64_t)ctx.o.max_points)
            return gw_error_set(err, GW_ETOOLARGE,
                                "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)");
    } else {
        step = 1;
    }
    memset(res, 0, sizeof(*res));
    gw_arena_init(&res->arena, 64 * 1024, 0);
    /* intermediate step matrices are bounded like samples: 32 bytes per
     * allowed sample (a value, its presence bit and bookkeeping, twice) */
    size_t ceiling = ctx.o.max_samples > SIZE_MAX / 32 ? SIZE_MAX : (size_t)ctx.o.max_samples * 32;
    if (ctx.o.max_memory_bytes)
        ceiling = ctx.o.max_memory_bytes;   /* the operator's cap instead */
    gw_arena_init(&ctx.a, SCRATCH_BLOCK, ceiling < SCRATCH_BLOCK * 4 ? SCRATCH_BLOCK * 4 : ceiling);
    struct pq_grid g = { start, step, (size_t)(((uint64_t)end - (uint64_t)start) / (uint64_t)step) + 1 };
    struct pq_val v;
    int rc = pq_eval(&ctx, e->root, &g, &v);
    if (!rc && v.type == GW_PQ_T_VECTOR)
        rc = pq_vec_dedupe(&ctx, &v, g.n, 0);
    if (!rc)
        rc = build_result(&ctx, &v, &g, instant, res);
    gw_arena_free(&ctx.a);
    free(ctx.tmp_t);
    free(ctx.tmp_v);
    if (rc == GW_ENOMEM && ctx.over_limit)
        rc = GW_ELIMIT;
    if (rc) {
        if (err && err->code == GW_OK)
            gw_error_set(err, rc, "%s", gw_strerror(rc));
        gw_pq_result_free(res);
        return rc;
    }
    return GW_OK;
}

int gw_pq_eval_instant(const struct gw_pq_source *src, const struct gw_pq_expr *e, int64_t t,
                       const struct gw_pq_opts *o, struct gw_pq_result *res, struct gw_error *err)
{
    return run(src, e, t, t, 1, 1, o, res, err);
}

int gw_pq_eval_range(const struct gw_pq_source *src, const struct gw_pq_expr *e, int64_t start,
                     int64_t end, int64_t step, const struct gw_pq_opts *o,
                     struct gw_pq_result *res, struct gw_error *err)
{
    return run(src, e, start, end, step, 0, o, res, err);
}
