/* src/http/api_query.c - the Prometheus query API over the database:
 * /api/v1/series, /api/v1/labels, /api/v1/label/<name>/values,
 * /api/v1/metadata, and /api/v1/query + /api/v1/query_range for plain
 * series selectors (`up`, `node_cpu{mode!="idle"}`), plus `sel[5m]` range
 * selectors at an instant query. Any other expression answers 400 bad_data
 * "unsupported expression: only series selectors are supported".
 *
 * Selector semantics (Prometheus 3): at evaluation time t a series takes the
 * newest sample in (t - lookback, t] (lookback 5m or lookback_delta); when
 * that sample is the stale marker (bits 0x7ff0000000000002) the series has
 * no point at t. Range steps are start, start+step, ... <= end; series
 * without points are left out; results come in label order with __name__
 * kept. A range selector at instant t yields the raw samples in
 * (t - range, t] without stale markers.
 *
 * Output is the Prometheus JSON envelope, e.g.
 *   {"status":"success","data":{"resultType":"matrix","result":[
 *     {"metric":{"__name__":"up","job":"a"},"values":[[1435781451.781,"1"]]}]}} */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpuwatch/codec.h"
#include "gpuwatch/labels.h"
#include "gpuwatch/matcher.h"
#include "http/http_int.h"

#define SEL_MAX_MATCHERS 64
#define MATCH_SETS_MAX 1000
#define DEFAULT_LOOKBACK_MS (5 * 60 * 1000)
#define STALE_NAN_BITS 0x7ff0000000000002ull

static int is_stale(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b == STALE_NAN_BITS;
}

static void resp_json(struct gw_http_resp *rs)
{
    rs->status = 200;
    rs->content_type = "application/json";
    rs->content_encoding = NULL;
}

static void internal_error(struct gw_http_resp *rs, int rc, const struct gw_error *err)
{
    if (rc == GW_ELIMIT)
        gw_resp_api_error(rs, "execution",
                          "query processing would load too many samples into memory in query execution");
    else if (rc == GW_ETOOLARGE)
        gw_resp_api_error(rs, "execution", "response too large");
    else if (rc == GW_ENOMEM)
        gw_resp_api_error(rs, "internal", "out of memory");
    else
        gw_resp_api_error(rs, "internal", "%s", err && err->msg[0] ? err->msg : gw_strerror(rc));
}

/* ---- parameters ---- */

/* An optional time or duration parameter: def when absent or empty, a
 * bad_data answer naming `what` when it does not parse. */
static int param_ms(struct gw_http_req *rq, struct gw_http_resp *rs, const char *name, int64_t def,
                    int (*parse)(const char *, int64_t *), const char *what, int64_t *out)
{
    const struct gw_param *p = gw_params_get(&rq->params, name);
    if (p == NULL || p->val_len == 0) {
        *out = def;
        return 0;
    }
    if (parse(p->val, out) != GW_OK) {
        gw_resp_api_error(rs, "bad_data", "invalid parameter \"%s\": cannot parse \"%.200s\" to a valid %s", name,
                          p->val, what);
        return -1;
    }
    return 0;
}

static int param_time(struct gw_http_req *rq, struct gw_http_resp *rs, const char *name, int64_t def,
                      int64_t *out)
{
    return param_ms(rq, rs, name, def, gw_parse_time_ms, "timestamp", out);
}

static int param_required_time(struct gw_http_req *rq, struct gw_http_resp *rs, const char *name, int64_t *out)
{
    const struct gw_param *p = gw_params_get(&rq->params, name);
    if (p == NULL || p->val_len == 0) {
        gw_resp_api_error(rs, "bad_data", "invalid parameter \"%s\": cannot parse \"\" to a valid timestamp", name);
        return -1;
    }
    return param_time(rq, rs, name, 0, out);
}

static int param_duration(struct gw_http_req *rq, struct gw_http_resp *rs, const char *name, int64_t def,
                          int64_t *out)
{
    return param_ms(rq, rs, name, def, gw_parse_step_ms, "duration", out);
}

static int param_limit(struct gw_http_req *rq, struct gw_http_resp *rs, const char *name, uint64_t *out)
{
    const struct gw_param *p = gw_params_get(&rq->params, name);
    char *end = NULL;
    long long v;
    *out = 0;
    if (p == NULL || p->val_len == 0)
        return 0;
    v = strtoll(p->val, &end, 10);
    if (end == p->val || *end != '\0') {
        gw_resp_api_error(rs, "bad_data", "invalid parameter \"%s\": cannot parse \"%.200s\" to an integer",
                          name, p->val);
        return -1;
    }
    if (v < 0) {
        gw_resp_api_error(rs, "bad_data", "%s must be non-negative", name);
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}

/* ---- match[] sets ---- */

struct mset {
    struct gw_matcher m[SEL_MAX_MATCHERS];
    size_t n;
};
struct msets {
    struct mset *s;
    struct gw_db_matcher_set *view;
    size_t n;
};

static void msets_free(struct msets *ms)
{
    for (size_t i = 0; i < ms->n; i++)
        for (size_t j = 0; j < ms->s[i].n; j++)
            gw_matcher_free(&ms->s[i].m[j]);
    free(ms->s);
    free(ms->view);
    memset(ms, 0, sizeof *ms);
}

static void selector_error(struct gw_http_resp *rs, int rc, const struct gw_error *err, const char *what)
{
    if (rc == GW_EINVAL)
        gw_resp_api_error(rs, "bad_data", "%s: vector selector must contain at least one non-empty matcher",
                          what);
    else if (rc == GW_ENOMEM)
        gw_resp_api_error(rs, "internal", "out of memory");
    else
        gw_resp_api_error(rs, "bad_data", "%s: %s", what, err->msg[0] ? err->msg : gw_strerror(rc));
}

/* Parses every match[]; -1 after answering an error. */
static int msets_parse(struct gw_http_req *rq, struct gw_http_resp *rs, struct msets *ms)
{
    size_t n = 0, k = 0;
    memset(ms, 0, sizeof *ms);
    for (size_t i = 0; i < rq->params.n; i++)
        if (strcmp(rq->params.v[i].key, "match[]") == 0)
            n++;
    if (n == 0)
        return 0;
    if (n > MATCH_SETS_MAX) {
        gw_resp_api_error(rs, "bad_data", "too many match[] parameters (limit %d)", MATCH_SETS_MAX);
        return -1;
    }
    ms->s = calloc(n, sizeof *ms->s);
    ms->view = calloc(n, sizeof *ms->view);
    if (ms->s == NULL || ms->view == NULL) {
        msets_free(ms);
        gw_resp_api_error(rs, "internal", "out of memory");
        return -1;
    }
    for (size_t i = 0; i < rq->params.n; i++) {
        const struct gw_param *p = &rq->params.v[i];
        struct gw_error err;
        int rc;
        if (strcmp(p->key, "match[]") != 0)
            continue;
        gw_error_clear(&err);
        rc = gw_selector_parse(p->val, p->val_len, ms->s[k].m, SEL_MAX_MATCHERS, &ms->s[k].n, &err);
        if (rc != GW_OK) {
            char what[300];
            snprintf(what, sizeof what, "invalid parameter \"match[]\": %.200s", p->val);
            ms->n = k;
            msets_free(ms);
            selector_error(rs, rc, &err, what);
            return -1;
        }
        ms->view[k].matchers = ms->s[k].m;
        ms->view[k].n = ms->s[k].n;
        k++;
        ms->n = k;
    }
    return 0;
}

/* ---- /api/v1/series ---- */

struct lset {
    uint8_t *b;
    size_t len;
};
struct series_coll {
    struct lset *v;
    size_t n, cap;
};

static int series_collect(void *ud, uint64_t sid, const uint8_t *labels, size_t labels_len, const int64_t *t,
                          const double *v, size_t n)
{
    struct series_coll *c = ud;
    (void)sid;
    (void)t;
    (void)v;
    (void)n;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        struct lset *nv = realloc(c->v, cap * sizeof *nv);
        if (nv == NULL)
            return GW_ENOMEM;
        c->v = nv;
        c->cap = cap;
    }
    c->v[c->n].b = malloc(labels_len ? labels_len : 1);
    if (c->v[c->n].b == NULL)
        return GW_ENOMEM;
    memcpy(c->v[c->n].b, labels, labels_len);
    c->v[c->n].len = labels_len;
    c->n++;
    return GW_OK;
}

static int lset_cmp(const void *a, const void *b)
{
    const struct lset *x = a, *y = b;
    return gw_labels_compare(x->b, x->len, y->b, y->len);
}

static int write_warnings(struct gw_buf *b, int truncated)
{
    if (!truncated)
        return GW_OK;
    return gw_buf_printf(b, ",\"warnings\":[\"results truncated due to limit\"]");
}

void gw_api_series(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    struct msets ms;
    struct series_coll c = {NULL, 0, 0};
    struct gw_error err;
    int64_t start, end;
    uint64_t limit;
    int rc = GW_OK, timed;
    size_t out_n = 0;

    if (param_time(rq, rs, "start", INT64_MIN, &start) || param_time(rq, rs, "end", INT64_MAX, &end) ||
        param_limit(rq, rs, "limit", &limit))
        return;
    if (end < start) {
        gw_resp_api_error(rs, "bad_data", "end timestamp must not be before start time");
        return;
    }
    if (msets_parse(rq, rs, &ms))
        return;
    if (ms.n == 0) {
        gw_resp_api_error(rs, "bad_data", "no match[] parameter provided");
        return;
    }
    timed = start != INT64_MIN || end != INT64_MAX;
    gw_error_clear(&err);
    for (size_t i = 0; rc == GW_OK && i < ms.n; i++) {
        struct gw_db_select q;
        memset(&q, 0, sizeof q);
        q.matchers = ms.s[i].m;
        q.n_matchers = ms.s[i].n;
        q.mint = start;
        q.maxt = end;
        q.with_samples = 0;
        q.only_with_data = timed;
        rc = gw_db_select(rq->h->db, &q, series_collect, &c, &err);
    }
    if (rc == GW_OK) {
        if (ms.n > 1 && c.n > 1)
            qsort(c.v, c.n, sizeof *c.v, lset_cmp);
        gw_buf_reset(&rs->body);
        rc = gw_buf_printf(&rs->body, "{\"status\":\"success\",\"data\":[");
        for (size_t i = 0; rc == GW_OK && i < c.n; i++) {
            if (i > 0 && lset_cmp(&c.v[i - 1], &c.v[i]) == 0)
                continue;
            if (limit && out_n == limit) {
                out_n++;
                break;
            }
            if (out_n)
                rc = gw_buf_putc(&rs->body, ',');
            if (rc == GW_OK)
                rc = gw_json_labels(&rs->body, c.v[i].b, c.v[i].len);
            out_n++;
        }
        if (rc == GW_OK)
            rc = gw_buf_putc(&rs->body, ']');
        if (rc == GW_OK)
            rc = write_warnings(&rs->body, limit && out_n > limit);
        if (rc == GW_OK)
            rc = gw_buf_putc(&rs->body, '}');
    }
    if (rc != GW_OK)
        internal_error(rs, rc, &err);
    else
        resp_json(rs);
    for (size_t i = 0; i < c.n; i++)
        free(c.v[i].b);
    free(c.v);
    msets_free(&ms);
}

/* ---- /api/v1/labels and /api/v1/label/<name>/values ---- */

struct str_out {
    struct gw_buf *b;
    uint64_t limit, n;
    int truncated;
};

static int str_emit(void *ud, const char *s, size_t len)
{
    struct str_out *o = ud;
    int rc;
    if (o->limit && o->n == o->limit) {
        o->truncated = 1;
        return 1;
    }
    if (o->n && (rc = gw_buf_putc(o->b, ',')) != GW_OK)
        return rc;
    o->n++;
    return gw_json_str(o->b, s, len);
}

static void strings_answer(struct gw_http_req *rq, struct gw_http_resp *rs, const char *name, size_t name_len)
{
    struct msets ms;
    struct gw_error err;
    struct str_out o;
    int64_t start, end;
    uint64_t limit;
    int rc;

    if (param_time(rq, rs, "start", INT64_MIN, &start) || param_time(rq, rs, "end", INT64_MAX, &end) ||
        param_limit(rq, rs, "limit", &limit))
        return;
    if (end < start) {
        gw_resp_api_error(rs, "bad_data", "end timestamp must not be before start time");
        return;
    }
    if (msets_parse(rq, rs, &ms))
        return;
    gw_error_clear(&err);
    gw_buf_reset(&rs->body);
    o.b = &rs->body;
    o.limit = limit;
    o.n = 0;
    o.truncated = 0;
    rc = gw_buf_printf(&rs->body, "{\"status\":\"success\",\"data\":[");
    if (rc == GW_OK) {
        if (name == NULL)
            rc = gw_db_label_names(rq->h->db, ms.view, ms.n, start, end, str_emit, &o, &err);
        else
            rc = gw_db_label_values(rq->h->db, name, name_len, ms.view, ms.n, start, end, str_emit, &o, &err);
        if (rc == 1)
            rc = GW_OK;
    }
    if (rc == GW_OK)
        rc = gw_buf_putc(&rs->body, ']');
    if (rc == GW_OK)
        rc = write_warnings(&rs->body, o.truncated);
    if (rc == GW_OK)
        rc = gw_buf_putc(&rs->body, '}');
    if (rc != GW_OK)
        internal_error(rs, rc, &err);
    else
        resp_json(rs);
    msets_free(&ms);
}

void gw_api_labels(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    strings_answer(rq, rs, NULL, 0);
}

static int put_utf8(char *out, size_t cap, size_t *n, uint32_t cp)
{
    uint8_t b[4];
    size_t k;
    if (cp < 0x80) {
        b[0] = (uint8_t)cp; k = 1;
    } else if (cp < 0x800) {
        b[0] = (uint8_t)(0xC0 | (cp >> 6)); b[1] = (uint8_t)(0x80 | (cp & 0x3F)); k = 2;
    } else if (cp < 0x10000) {
        if (cp >= 0xD800 && cp <= 0xDFFF)
            return -1;
        b[0] = (uint8_t)(0xE0 | (cp >> 12)); b[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (uint8_t)(0x80 | (cp & 0x3F)); k = 3;
    } else if (cp <= 0x10FFFF) {
        b[0] = (uint8_t)(0xF0 | (cp >> 18)); b[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
        b[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F)); b[3] = (uint8_t)(0x80 | (cp & 0x3F)); k = 4;
    } else {
        return -1;
    }
    if (*n + k >= cap)
        return -1;
    memcpy(out + *n, b, k);
    *n += k;
    return 0;
}

/* Undoes Prometheus' "U__" label-name escaping ("U__a_2e_b" -> "a.b",
 * "__" -> "_"); other names are copied. Returns the length or -1. */
static long unescape_name(const char *in, size_t len, char *out, size_t cap)
{
    size_t n = 0;
    if (len < 3 || memcmp(in, "U__", 3) != 0) {
        if (len >= cap)
            return -1;
        memcpy(out, in, len);
        out[len] = '\0';
        return (long)len;
    }
    for (size_t i = 3; i < len;) {
        if (in[i] == '_') {
            if (i + 1 < len && in[i + 1] == '_') {
                if (put_utf8(out, cap, &n, '_'))
                    return -1;
                i += 2;
                continue;
            }
            uint32_t cp = 0;
            size_t j = i + 1, digits = 0;
            while (j < len && in[j] != '_') {
                char c = in[j];
                int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                                                         : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
                if (d < 0 || digits >= 6)
                    return -1;
                cp = cp * 16 + (uint32_t)d;
                digits++;
                j++;
            }
            if (j >= len || digits == 0 || put_utf8(out, cap, &n, cp))
                return -1;
            i = j + 1;
        } else {
            if (put_utf8(out, cap, &n, (uint8_t)in[i]))
                return -1;
            i++;
        }
    }
    out[n] = '\0';
    return (long)n;
}

void gw_api_label_values(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    const char *p = rq->path + strlen("/api/v1/label/");
    size_t len = strlen(p) - strlen("/values");
    char name[GW_LABEL_NAME_MAX + 1];
    long n = unescape_name(p, len, name, sizeof name);
    if (n <= 0) {
        gw_resp_api_error(rs, "bad_data", "invalid label name: \"%.*s\"", (int)(len > 200 ? 200 : len), p);
        return;
    }
    strings_answer(rq, rs, name, (size_t)n);
}

/* ---- /api/v1/metadata ---- */

struct meta_entry {
    char *metric, *help, *unit;
    size_t metric_len, help_len, unit_len;
    uint8_t type;
    size_t seq;
};
struct meta_coll {
    struct meta_entry *v;
    size_t n, cap;
    const char *only;        /* metric filter or NULL */
    size_t only_len;
};

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        if (n)
            memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static int meta_collect(void *ud, const char *metric, size_t metric_len, uint8_t type, const char *help,
                        size_t help_len, const char *unit, size_t unit_len)
{
    struct meta_coll *c = ud;
    struct meta_entry *e;
    if (c->only && (metric_len != c->only_len || memcmp(metric, c->only, metric_len) != 0))
        return GW_OK;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        struct meta_entry *nv = realloc(c->v, cap * sizeof *nv);
        if (nv == NULL)
            return GW_ENOMEM;
        c->v = nv;
        c->cap = cap;
    }
    e = &c->v[c->n];
    e->metric = dup_n(metric, metric_len);
    e->help = dup_n(help, help_len);
    e->unit = dup_n(unit, unit_len);
    if (e->metric == NULL || e->help == NULL || e->unit == NULL) {
        free(e->metric);
        free(e->help);
        free(e->unit);
        return GW_ENOMEM;
    }
    e->metric_len = metric_len;
    e->help_len = help_len;
    e->unit_len = unit_len;
    e->type = type;
    e->seq = c->n;
    c->n++;
    return GW_OK;
}

static int bytes_cmp(const char *a, size_t al, const char *b, size_t bl)
{
    int r = memcmp(a, b, al < bl ? al : bl);
    if (r)
        return r;
    return al < bl ? -1 : al > bl;
}

static int meta_cmp(const void *a, const void *b)
{
    const struct meta_entry *x = a, *y = b;
    int r = bytes_cmp(x->metric, x->metric_len, y->metric, y->metric_len);
    if (r)
        return r;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int meta_same(const struct meta_entry *x, const struct meta_entry *y)
{
    return x->type == y->type && bytes_cmp(x->help, x->help_len, y->help, y->help_len) == 0 &&
           bytes_cmp(x->unit, x->unit_len, y->unit, y->unit_len) == 0;
}

static const char *meta_type_name(uint8_t t)
{
    static const char *names[] = {"unknown", "counter", "gauge", "histogram", "gaugehistogram",
                                  "summary", "info", "stateset"};
    return t < sizeof names / sizeof names[0] ? names[t] : "unknown";
}

void gw_api_metadata(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    struct meta_coll c;
    struct gw_error err;
    uint64_t limit, limit_per;
    const struct gw_param *metric;
    int rc;
    size_t metrics = 0;

    if (param_limit(rq, rs, "limit", &limit) || param_limit(rq, rs, "limit_per_metric", &limit_per))
        return;
    memset(&c, 0, sizeof c);
    metric = gw_params_get(&rq->params, "metric");
    if (metric != NULL && metric->val_len > 0) {
        c.only = metric->val;
        c.only_len = metric->val_len;
    }
    gw_error_clear(&err);
    rc = gw_db_metadata(rq->h->db, meta_collect, &c, &err);
    if (rc == GW_OK) {
        if (c.n > 1)
            qsort(c.v, c.n, sizeof *c.v, meta_cmp);
        gw_buf_reset(&rs->body);
        rc = gw_buf_printf(&rs->body, "{\"status\":\"success\",\"data\":{");
        for (size_t i = 0; rc == GW_OK && i < c.n;) {
            size_t j = i, per = 0;
            while (j < c.n && bytes_cmp(c.v[j].metric, c.v[j].metric_len, c.v[i].metric, c.v[i].metric_len) == 0)
                j++;
            if (limit && metrics == limit)
                break;
            if (metrics)
                rc = gw_buf_putc(&rs->body, ',');
            if (rc == GW_OK)
                rc = gw_json_str(&rs->body, c.v[i].metric, c.v[i].metric_len);
            if (rc == GW_OK)
                rc = gw_buf_printf(&rs->body, ":[");
            for (size_t k = i; rc == GW_OK && k < j; k++) {
                int dup = 0;
                for (size_t m = i; m < k && !dup; m++)
                    dup = meta_same(&c.v[m], &c.v[k]);
                if (dup)
                    continue;
                if (limit_per && per == limit_per)
                    break;
                if (per)
                    rc = gw_buf_putc(&rs->body, ',');
                if (rc == GW_OK)
                    rc = gw_buf_printf(&rs->body, "{\"type\":\"%s\",\"help\":", meta_type_name(c.v[k].type));
                if (rc == GW_OK)
                    rc = gw_json_str(&rs->body, c.v[k].help, c.v[k].help_len);
                if (rc == GW_OK)
                    rc = gw_buf_printf(&rs->body, ",\"unit\":");
                if (rc == GW_OK)
                    rc = gw_json_str(&rs->body, c.v[k].unit, c.v[k].unit_len);
                if (rc == GW_OK)
                    rc = gw_buf_putc(&rs->body, '}');
                per++;
            }
            if (rc == GW_OK)
                rc = gw_buf_putc(&rs->body, ']');
            metrics++;
            i = j;
        }
        if (rc == GW_OK)
            rc = gw_buf_printf(&rs->body, "}}");
    }
    if (rc != GW_OK)
        internal_error(rs, rc, &err);
    else
        resp_json(rs);
    for (size_t i = 0; i < c.n; i++) {
        free(c.v[i].metric);
        free(c.v[i].help);
        free(c.v[i].unit);
    }
    free(c.v);
}

/* ---- /api/v1/query and /api/v1/query_range ---- */

struct selector {
    struct gw_matcher m[SEL_MAX_MATCHERS];
    size_t n;
    int64_t range_ms;        /* > 0 for `sel[5m]` */
};

static void selector_free(struct selector *s)
{
    for (size_t i = 0; i < s->n; i++)
        gw_matcher_free(&s->m[i]);
    s->n = 0;
}

static int unsupported(struct gw_http_resp *rs)
{
    gw_resp_api_error(rs, "bad_data", "unsupported expression: only series selectors are supported");
    return -1;
}

/* Parses `selector` or `selector[duration]`; -1 after answering. */
static int parse_query(struct gw_http_req *rq, struct gw_http_resp *rs, int allow_range, struct selector *s)
{
    const struct gw_param *p = gw_params_get(&rq->params, "query");
    struct gw_error err;
    size_t len, lo = 0;
    const char *q;
    int rc;
    memset(s, 0, sizeof *s);
    if (p == NULL || p->val_len == 0) {
        gw_resp_api_error(rs, "bad_data", "invalid parameter \"query\": 1:1: parse error: no expression found in input");
        return -1;
    }
    q = p->val;
    len = p->val_len;
    while (lo < len && (q[lo] == ' ' || q[lo] == '\t' || q[lo] == '\n' || q[lo] == '\r'))
        lo++;
    while (len > lo && (q[len - 1] == ' ' || q[len - 1] == '\t' || q[len - 1] == '\n' || q[len - 1] == '\r'))
        len--;
    if (len > lo && q[len - 1] == ']') {
        size_t open = len - 1;
        char dur[64];
        while (open > lo && q[open] != '[')
            open--;
        if (q[open] != '[' || len - 2 - open == 0 || len - 2 - open >= sizeof dur)
            return unsupported(rs);
        memcpy(dur, q + open + 1, len - 2 - open);
        dur[len - 2 - open] = '\0';
        if (gw_parse_duration_ms(dur, &s->range_ms) != GW_OK || s->range_ms <= 0)
            return unsupported(rs);
        if (!allow_range) {
            gw_resp_api_error(rs, "bad_data",
                              "invalid expression type \"range vector\" for range query, must be Scalar or instant Vector");
            return -1;
        }
        len = open;
        while (len > lo && (q[len - 1] == ' ' || q[len - 1] == '\t'))
            len--;
    }
    gw_error_clear(&err);
    rc = gw_selector_parse(q + lo, len - lo, s->m, SEL_MAX_MATCHERS, &s->n, &err);
    if (rc == GW_EINVAL) {
        gw_resp_api_error(rs, "bad_data", "vector selector must contain at least one non-empty matcher");
        return -1;
    }
    if (rc == GW_ENOMEM) {
        gw_resp_api_error(rs, "internal", "out of memory");
        return -1;
    }
    if (rc != GW_OK)
        return unsupported(rs);
    return 0;
}

struct eval_ctx {
    struct gw_buf *b;
    int64_t t0, t1, step, lookback;   /* query_range: steps t0..t1; instant: t0 == t1 */
    int64_t range_ms;                 /* matrix selector */
    int mode;                         /* 0 vector, 1 matrix (range query), 2 raw range */
    size_t n_out;
};

static int open_series(struct eval_ctx *c, const uint8_t *labels, size_t labels_len)
{
    int rc = GW_OK;
    if (c->n_out)
        rc = gw_buf_putc(c->b, ',');
    if (rc == GW_OK)
        rc = gw_buf_printf(c->b, "{\"metric\":");
    if (rc == GW_OK)
        rc = gw_json_labels(c->b, labels, labels_len);
    if (rc == GW_OK)
        rc = gw_buf_printf(c->b, c->mode == 0 ? ",\"value\":" : ",\"values\":[");
    c->n_out++;
    return rc;
}

static int put_point(struct gw_buf *b, int64_t t, double v)
{
    int rc = gw_buf_putc(b, '[');
    if (rc == GW_OK)
        rc = gw_json_ts(b, t);
    if (rc == GW_OK)
        rc = gw_buf_putc(b, ',');
    if (rc == GW_OK)
        rc = gw_json_value(b, v);
    if (rc == GW_OK)
        rc = gw_buf_putc(b, ']');
    return rc;
}

static int eval_series(void *ud, uint64_t sid, const uint8_t *labels, size_t labels_len, const int64_t *t,
                       const double *v, size_t n)
{
    struct eval_ctx *c = ud;
    int rc = GW_OK;
    size_t pts = 0;
    (void)sid;
    if (n == 0)
        return GW_OK;
    if (c->mode == 2) {
        for (size_t i = 0; rc == GW_OK && i < n; i++) {
            if (t[i] <= c->t0 - c->range_ms || t[i] > c->t0 || is_stale(v[i]))
                continue;
            if (pts == 0)
                rc = open_series(c, labels, labels_len);
            else
                rc = gw_buf_putc(c->b, ',');
            if (rc == GW_OK)
                rc = put_point(c->b, t[i], v[i]);
            pts++;
        }
        if (rc == GW_OK && pts)
            rc = gw_buf_printf(c->b, "]}");
        return rc;
    }
    /* Steps: newest sample in (ts - lookback, ts]. j walks the samples once. */
    size_t j = 0;
    for (int64_t ts = c->t0; rc == GW_OK && ts <= c->t1;) {
        while (j < n && t[j] <= ts)
            j++;
        if (j > 0 && t[j - 1] > ts - c->lookback && !is_stale(v[j - 1])) {
            if (pts == 0)
                rc = open_series(c, labels, labels_len);
            else
                rc = gw_buf_putc(c->b, ',');
            if (rc == GW_OK)
                rc = put_point(c->b, ts, v[j - 1]);
            pts++;
        }
        if (c->step <= 0 || ts > INT64_MAX - c->step)
            break;
        ts += c->step;
    }
    if (rc == GW_OK && pts)
        rc = gw_buf_printf(c->b, c->mode == 0 ? "}" : "]}");
    return rc;
}

static void run_eval(struct gw_http_req *rq, struct gw_http_resp *rs, struct selector *s, struct eval_ctx *c)
{
    struct gw_db_select q;
    struct gw_error err;
    int rc;
    int64_t window = c->mode == 2 ? c->range_ms : c->lookback;
    memset(&q, 0, sizeof q);
    q.matchers = s->m;
    q.n_matchers = s->n;
    q.mint = c->t0 > INT64_MIN + window ? c->t0 - window + 1 : INT64_MIN;
    q.maxt = c->t1;
    q.with_samples = 1;
    q.only_with_data = 1;
    q.max_samples = GW_QUERY_MAX_SAMPLES;
    gw_error_clear(&err);
    gw_buf_reset(&rs->body);
    c->b = &rs->body;
    rc = gw_buf_printf(&rs->body, "{\"status\":\"success\",\"data\":{\"resultType\":\"%s\",\"result\":[",
                       c->mode == 0 ? "vector" : "matrix");
    if (rc == GW_OK)
        rc = gw_db_select(rq->h->db, &q, eval_series, c, &err);
    if (rc == GW_OK)
        rc = gw_buf_printf(&rs->body, "]}}");
    if (rc != GW_OK)
        internal_error(rs, rc, &err);
    else
        resp_json(rs);
}

static int param_lookback(struct gw_http_req *rq, struct gw_http_resp *rs, int64_t *out)
{
    if (param_duration(rq, rs, "lookback_delta", DEFAULT_LOOKBACK_MS, out))
        return -1;
    if (*out <= 0)
        *out = DEFAULT_LOOKBACK_MS;
    return 0;
}

void gw_api_query(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    struct selector s;
    struct eval_ctx c;
    int64_t t;
    memset(&c, 0, sizeof c);
    if (param_time(rq, rs, "time", gw_now_ms(), &t) || param_lookback(rq, rs, &c.lookback))
        return;
    if (parse_query(rq, rs, 1, &s))
        return;
    c.t0 = c.t1 = t;
    c.step = 1;
    c.range_ms = s.range_ms;
    c.mode = s.range_ms > 0 ? 2 : 0;
    run_eval(rq, rs, &s, &c);
    selector_free(&s);
}

void gw_api_query_range(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    struct selector s;
    struct eval_ctx c;
    int64_t start, end, step;
    const struct gw_param *sp;
    memset(&c, 0, sizeof c);
    if (param_required_time(rq, rs, "start", &start) || param_required_time(rq, rs, "end", &end))
        return;
    if (end < start) {
        gw_resp_api_error(rs, "bad_data", "end timestamp must not be before start time");
        return;
    }
    sp = gw_params_get(&rq->params, "step");
    if (sp == NULL || sp->val_len == 0) {
        gw_resp_api_error(rs, "bad_data", "invalid parameter \"step\": cannot parse \"\" to a valid duration");
        return;
    }
    if (param_duration(rq, rs, "step", 0, &step))
        return;
    if (step <= 0) {
        gw_resp_api_error(rs, "bad_data",
                          "zero or negative query resolution step widths are not accepted. Try a positive integer");
        return;
    }
    if (((uint64_t)end - (uint64_t)start) / (uint64_t)step > GW_QUERY_MAX_POINTS) {
        gw_resp_api_error(rs, "bad_data",
                          "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query "
                          "resolution (?step=XX)");
        return;
    }
    if (param_lookback(rq, rs, &c.lookback))
        return;
    if (parse_query(rq, rs, 0, &s))
        return;
    c.t0 = start;
    c.t1 = end;
    c.step = step;
    c.mode = 1;
    run_eval(rq, rs, &s, &c);
    selector_free(&s);
}
