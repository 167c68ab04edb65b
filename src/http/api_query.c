/* src/http/api_query.c - the Prometheus query API over the database:
 * /api/v1/series, /api/v1/labels, /api/v1/label/<name>/values,
 * /api/v1/metadata, and /api/v1/query + /api/v1/query_range, which parse
 * PromQL and evaluate it with the engine of promql.h over the database.
 *
 * Query parameters (GET or form POST, as Prometheus' web/api/v1):
 *   query           the expression (parse errors: 400 bad_data
 *                   "invalid parameter \"query\": 1:5: parse error: ...")
 *   time            instant queries; default now
 *   start, end      range queries, both required, end >= start
 *   step            range queries, float seconds or a duration, > 0, and
 *                   (end - start) / step <= 11,000
 *   timeout         a duration; the smaller of it and the server's
 *                   --query.timeout applies (503 timeout when passed)
 *   lookback_delta  a duration overriding the server's lookback
 *   limit           at most this many series in the result, with the
 *                   warning "results truncated due to limit"
 *   stats           accepted and ignored
 *   max_source_resolution  as Thanos: "raw" or "0s" (raw data only),
 *                   "auto" (default: aggregates only where they equal raw
 *                   and on days whose raw data is gone), or a duration:
 *                   aggregates up to that bucket size (5m, 1h) wherever
 *                   present (docs/downsampling.md); anything else 400
 * Evaluation errors map as promql.h lists them: invalid queries found at
 * run time and the sample limit are 422 execution, too many points 400
 * bad_data, the timeout 503 timeout, memory and storage 500 internal.
 *
 * Output is the Prometheus JSON envelope; values are strings (json.c),
 * timestamps seconds, an empty result is [] (never null):
 *   scalar  {"resultType":"scalar","result":[4,"2"]}
 *   string  {"resultType":"string","result":[4,"abc"]}
 *   vector  {"resultType":"vector","result":[{"metric":{"job":"a"},"value":[4,"1"]}]}
 *   matrix  {"resultType":"matrix","result":[{"metric":{"job":"a"},"values":[[1,"1"],[2,"3"]]}]}
 * e.g. GET /api/v1/query?query=1%2B1&time=4 ->
 *   {"status":"success","data":{"resultType":"scalar","result":[4,"2"]}} */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpuwatch/codec.h"
#include "gpuwatch/labels.h"
#include "gpuwatch/matcher.h"
#include "gpuwatch/promql.h"
#include "http/http_int.h"

#define SEL_MAX_MATCHERS 64
#define MATCH_SETS_MAX 1000

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

/* A time or duration parameter of ps: def when absent or empty (a
 * bad_data answer when it is required), a bad_data answer naming `what`
 * when it does not parse. */
static int ps_ms(const struct gw_params *ps, struct gw_http_resp *rs, const char *name, int required,
                 int64_t def, int (*parse)(const char *, int64_t *), const char *what, int64_t *out)
{
    const struct gw_param *p = gw_params_get(ps, name);
    if (p == NULL || p->val_len == 0) {
        if (required) {
            gw_resp_api_error(rs, "bad_data", "invalid parameter \"%s\": cannot parse \"\" to a valid %s", name,
                              what);
            return -1;
        }
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

static int param_ms(struct gw_http_req *rq, struct gw_http_resp *rs, const char *name, int64_t def,
                    int (*parse)(const char *, int64_t *), const char *what, int64_t *out)
{
    return ps_ms(&rq->params, rs, name, 0, def, parse, what, out);
}

static int param_time(struct gw_http_req *rq, struct gw_http_resp *rs, const char *name, int64_t def,
                      int64_t *out)
{
    return param_ms(rq, rs, name, def, gw_parse_time_ms, "timestamp", out);
}

/* A non-negative integer parameter of ps (0 when absent). */
static int ps_limit(const struct gw_params *ps, struct gw_http_resp *rs, const char *name, uint64_t *out)
{
    const struct gw_param *p = gw_params_get(ps, name);
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

static int param_limit(struct gw_http_req *rq, struct gw_http_resp *rs, const char *name, uint64_t *out)
{
    return ps_limit(&rq->params, rs, name, out);
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
        rc = gw_pq_parse_selector(p->val, p->val_len, ms->s[k].m, SEL_MAX_MATCHERS, &ms->s[k].n, &err);
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

/* The request as the query handlers see it: from a live request or from
 * gw_http_api_query. */
struct qreq {
    struct gw_db *db;
    const struct gw_http_opts *o;
    struct gw_params *params;
};

static int qparam_ms(const struct qreq *q, struct gw_http_resp *rs, const char *name, int required, int64_t def,
                     int (*parse)(const char *, int64_t *), const char *what, int64_t *out)
{
    return ps_ms(q->params, rs, name, required, def, parse, what, out);
}

/* max_source_resolution into po; -1 after answering an error. */
static int query_resolution(const struct qreq *q, struct gw_http_resp *rs, struct gw_pq_opts *po)
{
    const struct gw_param *p = gw_params_get(q->params, "max_source_resolution");
    po->max_source_resolution_ms = 0;
    if (!p || !strcmp(p->val, "auto"))
        return 0;
    int64_t d = 0;
    if (!strcmp(p->val, "raw") || !strcmp(p->val, "0")) {
        d = 0;
    } else if (gw_parse_duration_ms(p->val, &d) != GW_OK || d < 0) {
        gw_resp_api_error(rs, "bad_data",
                          "invalid parameter \"max_source_resolution\": cannot parse \"%.200s\"; expected raw, "
                          "auto, 0s, 5m, 1h or another duration",
                          p->val);
        return -1;
    }
    po->max_source_resolution_ms = d >= 3600000 ? 3600000 : d >= 300000 ? 300000 : GW_PQ_RES_RAW;
    return 0;
}

/* Engine options from the server's options and the request's timeout and
 * lookback_delta; -1 after answering an error. */
static int query_opts(const struct qreq *q, struct gw_http_resp *rs, struct gw_pq_opts *po)
{
    int64_t timeout, lookback;
    gw_pq_opts_default(po);
    po->compat = q->o && q->o->promql_compat == 2 ? 2 : 3;
    po->lookback_ms = q->o && q->o->lookback_ms > 0 ? q->o->lookback_ms : GW_QUERY_LOOKBACK_MS;
    po->timeout_ms = q->o && q->o->query_timeout_ms > 0 ? q->o->query_timeout_ms : GW_QUERY_TIMEOUT_MS;
    po->max_samples = q->o && q->o->query_max_samples > 0 ? q->o->query_max_samples : GW_QUERY_MAX_SAMPLES;
    po->max_points = GW_QUERY_MAX_POINTS;
    po->max_memory_bytes = q->o ? q->o->limits.query_max_memory_bytes : 0;
    if (qparam_ms(q, rs, "timeout", 0, 0, gw_parse_step_ms, "duration", &timeout) ||
        qparam_ms(q, rs, "lookback_delta", 0, 0, gw_parse_step_ms, "duration", &lookback))
        return -1;
    if (timeout > 0 && timeout < po->timeout_ms)
        po->timeout_ms = timeout;
    if (lookback > 0)
        po->lookback_ms = lookback;
    return query_resolution(q, rs, po);
}

static int qparam_limit(const struct qreq *q, struct gw_http_resp *rs, uint64_t *out)
{
    return ps_limit(q->params, rs, "limit", out);
}

/* Parses the query parameter; -1 after answering an error. */
static int qparse(const struct qreq *q, struct gw_http_resp *rs, struct gw_pq_expr **e)
{
    const struct gw_param *p = gw_params_get(q->params, "query");
    struct gw_pq_parse_opts po = { .compat = q->o && q->o->promql_compat == 2 ? 2 : 3 };
    struct gw_error err;
    int rc;
    gw_error_clear(&err);
    rc = gw_pq_parse(p ? p->val : "", p ? p->val_len : 0, &po, e, &err);
    if (rc == GW_OK)
        return 0;
    if (rc == GW_ENOMEM)
        gw_resp_api_error(rs, "internal", "out of memory");
    else
        gw_resp_api_error(rs, "bad_data", "invalid parameter \"query\": %s", err.msg[0] ? err.msg : gw_strerror(rc));
    return -1;
}

static void eval_error(struct gw_http_resp *rs, int rc, const struct gw_error *err)
{
    const char *msg = err->msg[0] ? err->msg : gw_strerror(rc);
    switch (rc) {
    case GW_EINVAL:
        gw_resp_api_error(rs, "execution", "%s", msg);
        break;
    case GW_ELIMIT:
        if (strncmp(msg, "query processing would", 22) == 0)   /* samples or memory */
            gw_resp_api_error(rs, "execution", "%s", msg);
        else
            gw_resp_api_error(rs, "execution",
                              "query processing would load too many samples into memory in query execution");
        break;
    case GW_ETOOLARGE:
        gw_resp_api_error(rs, "bad_data", "%s", msg);
        break;
    case GW_ETIMEOUT:
        gw_resp_api_error(rs, "timeout", "query timed out in expression evaluation");
        break;
    case GW_ENOMEM:
        gw_resp_api_error(rs, "internal", "out of memory");
        break;
    default:
        gw_resp_api_error(rs, "internal", "%s", msg);
        break;
    }
}

/* [t,"v"]: formatted straight into the buffer (a timestamp takes at most
 * 26 bytes, a value 46 as in gw_json_value: 77 with the punctuation). */
static int put_point(struct gw_buf *b, int64_t t, double v)
{
    if (gw_buf_reserve(b, 80) == GW_OK) {
        char *p = (char *)b->data + b->len;
        size_t o = 0;
        p[o++] = '[';
        o += gw_json_format_ts(t, p + o, 27);
        p[o++] = ',';
        p[o++] = '"';
        o += gw_json_format_float(v, p + o, 46);
        p[o++] = '"';
        p[o++] = ']';
        b->len += o;
        return GW_OK;
    }
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

/* Writes the success envelope of res; limit > 0 keeps the first limit
 * series (a vector's first in its order, a matrix's first in label order). */
static int render(struct gw_buf *b, const struct gw_pq_result *res, uint64_t limit)
{
    int rc, truncated = 0;
    size_t n_out = 0;
    rc = gw_buf_printf(b, "{\"status\":\"success\",\"data\":{\"resultType\":\"%s\",\"result\":",
                       gw_pq_type_name(res->type));
    switch (res->type) {
    case GW_PQ_T_SCALAR:
        if (rc == GW_OK)
            rc = put_point(b, res->t, res->scalar);
        break;
    case GW_PQ_T_STRING:
        if (rc == GW_OK)
            rc = gw_buf_putc(b, '[');
        if (rc == GW_OK)
            rc = gw_json_ts(b, res->t);
        if (rc == GW_OK)
            rc = gw_buf_putc(b, ',');
        if (rc == GW_OK)
            rc = gw_json_str(b, res->str ? res->str : "", res->str ? strlen(res->str) : 0);
        if (rc == GW_OK)
            rc = gw_buf_putc(b, ']');
        break;
    case GW_PQ_T_VECTOR:
    case GW_PQ_T_MATRIX:
    case GW_PQ_T_NONE:
        if (rc == GW_OK)
            rc = gw_buf_putc(b, '[');
        for (size_t i = 0; rc == GW_OK && i < res->n_series; i++) {
            const struct gw_pq_series *s = &res->series[i];
            if (s->n == 0)
                continue;
            if (limit && n_out == limit) {
                truncated = 1;
                break;
            }
            if (n_out)
                rc = gw_buf_putc(b, ',');
            if (rc == GW_OK)
                rc = gw_buf_printf(b, "{\"metric\":");
            if (rc == GW_OK)
                rc = gw_json_labels(b, s->labels, s->labels_len);
            if (res->type == GW_PQ_T_VECTOR) {
                if (rc == GW_OK)
                    rc = gw_buf_printf(b, ",\"value\":");
                if (rc == GW_OK)
                    rc = put_point(b, s->t[0], s->v[0]);
                if (rc == GW_OK)
                    rc = gw_buf_putc(b, '}');
            } else {
                if (rc == GW_OK)
                    rc = gw_buf_printf(b, ",\"values\":[");
                for (size_t k = 0; rc == GW_OK && k < s->n; k++) {
                    if (k)
                        rc = gw_buf_putc(b, ',');
                    if (rc == GW_OK)
                        rc = put_point(b, s->t[k], s->v[k]);
                }
                if (rc == GW_OK)
                    rc = gw_buf_printf(b, "]}");
            }
            n_out++;
        }
        if (rc == GW_OK)
            rc = gw_buf_putc(b, ']');
        break;
    }
    if (rc == GW_OK)
        rc = gw_buf_putc(b, '}');
    if (rc == GW_OK)
        rc = write_warnings(b, truncated);
    if (rc == GW_OK)
        rc = gw_buf_putc(b, '}');
    return rc;
}

/* Evaluates the parsed query and answers it. */
static void run_query(const struct qreq *q, struct gw_http_resp *rs, const struct gw_pq_expr *e, int range,
                      int64_t start, int64_t end, int64_t step, const struct gw_pq_opts *po, uint64_t limit)
{
    struct gw_pq_source src;
    struct gw_pq_result res;
    struct gw_error err;
    int rc;
    memset(&res, 0, sizeof res);
    gw_error_clear(&err);
    gw_pq_source_db(&src, q->db);
    uint64_t t0 = gw_mono_ns();
    if (range)
        rc = gw_pq_eval_range(&src, e, start, end, step, po, &res, &err);
    else
        rc = gw_pq_eval_instant(&src, e, start, po, &res, &err);
    gw_hist_observe_ns(&gw_hist_query[range ? 1 : 0], gw_mono_ns() - t0);
    if (rc != GW_OK) {
        eval_error(rs, rc, &err);
        return;
    }
    gw_buf_reset(&rs->body);
    rc = render(&rs->body, &res, limit);
    gw_pq_result_free(&res);
    if (rc != GW_OK) {
        if (rc == GW_ETOOLARGE)
            gw_resp_api_error(rs, "execution", "response too large");
        else
            gw_resp_api_error(rs, "internal", "out of memory");
        return;
    }
    resp_json(rs);
}

static void do_query(const struct qreq *q, struct gw_http_resp *rs)
{
    struct gw_pq_opts po;
    struct gw_pq_expr *e = NULL;
    uint64_t limit;
    int64_t t;
    if (qparam_ms(q, rs, "time", 0, gw_now_ms(), gw_parse_time_ms, "timestamp", &t) || query_opts(q, rs, &po) ||
        qparam_limit(q, rs, &limit) || qparse(q, rs, &e))
        return;
    run_query(q, rs, e, 0, t, t, 0, &po, limit);
    gw_pq_expr_free(e);
}

static void do_query_range(const struct qreq *q, struct gw_http_resp *rs)
{
    struct gw_pq_opts po;
    struct gw_pq_expr *e = NULL;
    int64_t start, end, step;
    uint64_t limit;
    if (qparam_ms(q, rs, "start", 1, 0, gw_parse_time_ms, "timestamp", &start) ||
        qparam_ms(q, rs, "end", 1, 0, gw_parse_time_ms, "timestamp", &end))
        return;
    if (end < start) {
        gw_resp_api_error(rs, "bad_data", "invalid parameter \"end\": end timestamp must not be before start time");
        return;
    }
    if (qparam_ms(q, rs, "step", 1, 0, gw_parse_step_ms, "duration", &step))
        return;
    if (step <= 0) {
        gw_resp_api_error(rs, "bad_data", "invalid parameter \"step\": zero or negative query resolution step "
                                          "widths are not accepted. Try a positive integer");
        return;
    }
    if (((uint64_t)end - (uint64_t)start) / (uint64_t)step > GW_QUERY_MAX_POINTS) {
        gw_resp_api_error(rs, "bad_data",
                          "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query "
                          "resolution (?step=XX)");
        return;
    }
    if (query_opts(q, rs, &po) || qparam_limit(q, rs, &limit) || qparse(q, rs, &e))
        return;
    /* Prometheus' NewRangeQuery refuses these before evaluating. */
    if (e->root->type != GW_PQ_T_SCALAR && e->root->type != GW_PQ_T_VECTOR) {
        gw_resp_api_error(rs, "bad_data",
                          "invalid parameter \"query\": invalid expression type \"%s\" for range query, must be "
                          "Scalar or instant Vector",
                          e->root->type == GW_PQ_T_MATRIX ? "range vector" : gw_pq_type_name(e->root->type));
        gw_pq_expr_free(e);
        return;
    }
    run_query(q, rs, e, 1, start, end, step, &po, limit);
    gw_pq_expr_free(e);
}

/* The server's options with what gw_http_set_query_opts set on top. */
static void server_opts(const struct gw_http *h, struct gw_http_opts *o)
{
    int compat = atomic_load(&h->q_compat);
    int64_t lookback = atomic_load(&h->q_lookback_ms), timeout = atomic_load(&h->q_timeout_ms);
    uint64_t max_samples = atomic_load(&h->q_max_samples);
    *o = h->opts;
    if (compat)
        o->promql_compat = compat;
    if (lookback)
        o->lookback_ms = lookback;
    if (timeout)
        o->query_timeout_ms = timeout;
    if (max_samples)
        o->query_max_samples = max_samples;
}

void gw_api_query(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    struct gw_http_opts o;
    struct qreq q = {rq->h->db, &o, &rq->params};
    server_opts(rq->h, &o);
    do_query(&q, rs);
}

void gw_api_query_range(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    struct gw_http_opts o;
    struct qreq q = {rq->h->db, &o, &rq->params};
    server_opts(rq->h, &o);
    do_query_range(&q, rs);
}

void gw_http_set_query_opts(struct gw_http *h, const struct gw_http_opts *o)
{
    if (h == NULL || o == NULL)
        return;
    atomic_store(&h->q_compat, o->promql_compat == 2 ? 2 : 3);
    atomic_store(&h->q_lookback_ms, o->lookback_ms > 0 ? o->lookback_ms : GW_QUERY_LOOKBACK_MS);
    atomic_store(&h->q_timeout_ms, o->query_timeout_ms > 0 ? o->query_timeout_ms : GW_QUERY_TIMEOUT_MS);
    atomic_store(&h->q_max_samples, o->query_max_samples > 0 ? o->query_max_samples : GW_QUERY_MAX_SAMPLES);
}

int gw_http_api_query(struct gw_db *db, const struct gw_http_opts *o, int range, const char *params,
                      size_t params_len, unsigned *status, struct gw_buf *out)
{
    struct gw_params p;
    struct gw_http_resp rs;
    struct qreq q;
    int rc;
    gw_params_init(&p);
    memset(&rs, 0, sizeof rs);
    rs.body = *out;
    rc = gw_params_parse(&p, params, params_len);
    if (rc == GW_ENOMEM) {
        gw_params_free(&p);
        return rc;
    }
    if (rc != GW_OK) {
        gw_resp_api_error(&rs, "bad_data", "invalid parameter encoding: %s", gw_strerror(rc));
    } else {
        q.db = db;
        q.o = o;
        q.params = &p;
        if (range)
            do_query_range(&q, &rs);
        else
            do_query(&q, &rs);
    }
    gw_params_free(&p);
    *out = rs.body;
    if (rs.status == 0 || (rs.body.len == 0 && rs.status != 204))
        return GW_ENOMEM;
    *status = rs.status;
    return GW_OK;
}
