/* src/http/routes.c - the route table, response helpers, the mapping from
 * error codes and Prometheus errorTypes to HTTP status, request counters,
 * and the small endpoints (health, readiness, build info, exemplars from
 * the exemplar store,
 * /metrics).
 *
 * Routes (methods; anything else on a known path is 405 with Allow):
 *   /api/v1/write POST, /api/v1/read POST,
 *   /api/v1/query, /api/v1/query_range, /api/v1/series, /api/v1/labels,
 *   /api/v1/query_exemplars GET|POST (form bodies merged with the URL),
 *   /api/v1/format_query GET|POST,
 *   /api/v1/alerts, /api/v1/rules GET|POST (api_alerts.c),
 *   /api/v1/events GET|POST (api_events.c; a POST body is JSON lines),
 *   /api/v1/sessions, /api/v1/exclusions GET (api_ledger.c),
 *   /api/v1/label/<name>/values, /api/v1/metadata GET,
 *   /api/v1/status/{buildinfo,runtimeinfo,flags,config,tsdb,walreplay} GET
 *   and POST /-/reload (api_status.c), /metrics GET (api_metrics.c),
 *   /-/ready, /-/healthy GET,
 *   / and /ui/<file> GET (ui.c: the status page).
 * Routes of gw_route_no_db answer while the WAL replays; the others answer 503
 * "starting: WAL replay N%" until the server has its database.
 * Unknown /api/ paths answer a JSON 404, other unknown paths plain text.
 * Parameters: form body values come before URL values (Go's r.Form). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "gpuwatch/alert.h"
#include "gpuwatch/exemplars.h"
#include "gpuwatch/json.h"
#include "gpuwatch/log.h"
#include "gpuwatch/promql.h"
#include "http/http_int.h"

const int gw_http_counted_codes[GW_HTTP_N_CODES] = {200, 204, 400, 404, 405, 406, 413, 415,
                                                    422, 429, 500, 503, 499, 0};

void gw_resp_header(struct gw_http_resp *rs, const char *name, const char *fmt, ...)
{
    va_list ap;
    if (rs->n_headers >= GW_RESP_MAX_HEADERS)
        return;
    rs->headers[rs->n_headers].name = name;
    va_start(ap, fmt);
    vsnprintf(rs->headers[rs->n_headers].value, sizeof rs->headers[0].value, fmt, ap);
    va_end(ap);
    rs->n_headers++;
}

void gw_resp_text(struct gw_http_resp *rs, unsigned status, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    gw_buf_reset(&rs->body);
    rs->status = status;
    rs->content_type = "text/plain; charset=utf-8";
    rs->content_encoding = NULL;
    if (gw_buf_append(&rs->body, msg, strlen(msg)) != GW_OK || gw_buf_putc(&rs->body, '\n') != GW_OK)
        gw_buf_reset(&rs->body);
}

unsigned gw_api_error_status(const char *t)
{
    if (strcmp(t, "bad_data") == 0)
        return 400;
    if (strcmp(t, "execution") == 0)
        return 422;
    if (strcmp(t, "timeout") == 0 || strcmp(t, "unavailable") == 0)
        return 503;
    if (strcmp(t, "canceled") == 0)
        return 499;
    if (strcmp(t, "not_found") == 0)
        return 404;
    if (strcmp(t, "not_acceptable") == 0)
        return 406;
    return 500;
}

void gw_resp_api_error(struct gw_http_resp *rs, const char *error_type, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    int rc;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    gw_buf_reset(&rs->body);
    rs->status = gw_api_error_status(error_type);
    rs->content_type = "application/json";
    rs->content_encoding = NULL;
    rc = gw_buf_printf(&rs->body, "{\"status\":\"error\",\"errorType\":\"%s\",\"error\":", error_type);
    if (rc == GW_OK)
        rc = gw_json_str(&rs->body, msg, strlen(msg));
    if (rc == GW_OK)
        rc = gw_buf_putc(&rs->body, '}');
    if (rc != GW_OK)
        gw_buf_reset(&rs->body);
}

void gw_http_count(struct gw_http *h, enum gw_route_id id, unsigned status)
{
    int slot = GW_HTTP_N_CODES - 1;
    for (int i = 0; i < GW_HTTP_N_CODES - 1; i++)
        if ((unsigned)gw_http_counted_codes[i] == status) {
            slot = i;
            break;
        }
    if ((unsigned)id < GW_R_COUNT)
        atomic_fetch_add(&h->c.requests[id][slot], 1);
}

/* ---- small endpoints ---- */

static void h_ready(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    char msg[160];
    if (atomic_load(&rq->h->ready)) {
        gw_resp_text(rs, 200, "gpuwatch is Ready.");
        return;
    }
    gw_http_starting_msg(rq->h, msg, sizeof msg);
    gw_resp_text(rs, 503, "Service Unavailable: %s", msg);
}

static void h_healthy(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    (void)rq;
    gw_resp_text(rs, 200, "gpuwatch is Healthy.");
}

static void json_ok(struct gw_http_resp *rs, const char *data)
{
    gw_buf_reset(&rs->body);
    rs->status = 200;
    rs->content_type = "application/json";
    if (gw_buf_printf(&rs->body, "{\"status\":\"success\",\"data\":%s}", data) != GW_OK)
        gw_resp_api_error(rs, "internal", "out of memory");
}

/* ---- /api/v1/query_exemplars (Prometheus' queryExemplars): the
 * selectors of `query` (every vector and matrix selector in it), exemplars
 * in [start, end] (default: all time) from the exemplar store:
 *   [{"seriesLabels":{...},"exemplars":[{"labels":{...},"value":"1","timestamp":1.5}]}]
 * An expression without selectors answers data null, like Prometheus. */

#define EX_MAX_SETS 256

struct ex_sets {
    const struct gw_matcher *set[EX_MAX_SETS];
    size_t len[EX_MAX_SETS];
    size_t n;
};

/* Collects the matcher sets of every selector under n, depth first. */
static int ex_collect(const struct gw_pq_node *n, struct ex_sets *s)
{
    if (n == NULL)
        return GW_OK;
    switch (n->kind) {
    case GW_PQ_VECTOR_SEL:
    case GW_PQ_MATRIX_SEL:
        if (s->n == EX_MAX_SETS)
            return GW_ELIMIT;
        s->set[s->n] = n->u.sel.matchers;
        s->len[s->n++] = n->u.sel.n_matchers;
        return GW_OK;
    case GW_PQ_SUBQUERY: return ex_collect(n->u.sub.expr, s);
    case GW_PQ_AGGREGATE: {
        int rc = ex_collect(n->u.agg.param, s);
        return rc ? rc : ex_collect(n->u.agg.expr, s);
    }
    case GW_PQ_CALL:
        for (size_t i = 0; i < n->u.call.n_args; i++) {
            int rc = ex_collect(n->u.call.args[i], s);
            if (rc)
                return rc;
        }
        return GW_OK;
    case GW_PQ_BINARY: {
        int rc = ex_collect(n->u.bin.lhs, s);
        return rc ? rc : ex_collect(n->u.bin.rhs, s);
    }
    case GW_PQ_UNARY: return ex_collect(n->u.unary.expr, s);
    case GW_PQ_PAREN: return ex_collect(n->u.paren, s);
    default: return GW_OK;
    }
}

static int ex_series_json(void *ud, const uint8_t *series, size_t len, const struct gw_exemplar *e, size_t n)
{
    struct gw_buf *b = ud;
    int rc = gw_buf_printf(b, "%s{\"seriesLabels\":", b->data[b->len - 1] == '[' ? "" : ",");
    if (rc == GW_OK) rc = gw_json_labels(b, series, len);
    if (rc == GW_OK) rc = gw_buf_printf(b, ",\"exemplars\":[");
    for (size_t i = 0; rc == GW_OK && i < n; i++) {
        rc = gw_buf_printf(b, "%s{\"labels\":", i ? "," : "");
        if (rc == GW_OK) rc = gw_json_labels(b, e[i].labels, e[i].labels_len);
        if (rc == GW_OK) rc = gw_buf_printf(b, ",\"value\":");
        if (rc == GW_OK) rc = gw_json_value(b, e[i].v);
        if (rc == GW_OK) rc = gw_buf_printf(b, ",\"timestamp\":");
        if (rc == GW_OK) rc = gw_json_ts(b, e[i].t);
        if (rc == GW_OK) rc = gw_buf_putc(b, '}');
    }
    return rc == GW_OK ? gw_buf_printf(b, "]}") : rc;
}

static void h_exemplars(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    const struct gw_param *q = gw_params_get(&rq->params, "query");
    struct gw_pq_parse_opts po = { .compat = rq->h->opts.promql_compat == 2 ? 2 : 3 };
    struct gw_pq_expr *e = NULL;
    struct ex_sets *sets = NULL;
    struct gw_error err;
    int64_t start, end;
    int rc;

    if (gw_http_time_param(rq, rs, "start", INT64_MIN, &start) || gw_http_time_param(rq, rs, "end", INT64_MAX, &end))
        return;
    if (end < start) {
        gw_resp_api_error(rs, "bad_data", "end timestamp must not be before start timestamp");
        return;
    }
    gw_error_clear(&err);
    rc = gw_pq_parse(q ? q->val : "", q ? q->val_len : 0, &po, &e, &err);
    if (rc != GW_OK) {
        if (rc == GW_ENOMEM)
            gw_resp_api_error(rs, "internal", "out of memory");
        else
            gw_resp_api_error(rs, "bad_data", "%s", err.msg[0] ? err.msg : gw_strerror(rc));
        return;
    }
    if (!(sets = calloc(1, sizeof *sets)) || (rc = ex_collect(e->root, sets)) == GW_ENOMEM) {
        gw_resp_api_error(rs, "internal", "out of memory");
    } else if (rc == GW_ELIMIT) {
        gw_resp_api_error(rs, "bad_data", "query has more than %d selectors", EX_MAX_SETS);
    } else if (sets->n == 0) {
        json_ok(rs, "null");
    } else {
        gw_buf_reset(&rs->body);
        rs->status = 200;
        rs->content_type = "application/json";
        rc = gw_buf_printf(&rs->body, "{\"status\":\"success\",\"data\":[");
        if (rc == GW_OK)
            rc = gw_exemplars_select(rq->h->opts.exemplars, sets->set, sets->len, sets->n, start, end,
                                     ex_series_json, &rs->body);
        if (rc == GW_OK)
            rc = gw_buf_printf(&rs->body, "]}");
        if (rc != GW_OK)
            gw_resp_api_error(rs, "internal", "cannot build the response: %s", gw_strerror(rc));
    }
    free(sets);
    gw_pq_expr_free(e);
}

static void h_not_found(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    if (strncmp(rq->path, "/api/", 5) == 0)
        gw_resp_api_error(rs, "not_found", "no such endpoint: %s", rq->path);
    else
        gw_resp_text(rs, 404, "404 page not found");
}

/* ---- table ---- */

#define GP (GW_M_GET | GW_M_POST | GW_M_HEAD)
#define G (GW_M_GET | GW_M_HEAD)
static const struct gw_route routes[] = {
    {GW_R_WRITE, "write", "/api/v1/write", GW_M_POST, "POST", 0, 0, gw_api_write_early, gw_api_write},
    {GW_R_READ, "read", "/api/v1/read", GW_M_POST, "POST", 0, 0, gw_api_read_early, gw_api_read},
    {GW_R_QUERY, "query", "/api/v1/query", GP, "GET, POST", 1, 1, NULL, gw_api_query},
    {GW_R_QUERY_RANGE, "query_range", "/api/v1/query_range", GP, "GET, POST", 1, 1, NULL, gw_api_query_range},
    {GW_R_SERIES, "series", "/api/v1/series", GP, "GET, POST", 1, 1, NULL, gw_api_series},
    {GW_R_LABELS, "labels", "/api/v1/labels", GP, "GET, POST", 1, 1, NULL, gw_api_labels},
    {GW_R_METADATA, "metadata", "/api/v1/metadata", G, "GET", 1, 0, NULL, gw_api_metadata},
    {GW_R_EXEMPLARS, "query_exemplars", "/api/v1/query_exemplars", GP, "GET, POST", 1, 1, NULL, h_exemplars},
    {GW_R_BUILDINFO, "buildinfo", "/api/v1/status/buildinfo", G, "GET", 1, 0, NULL, gw_api_buildinfo},
    {GW_R_READY, "ready", "/-/ready", G, "GET", 0, 0, NULL, h_ready},
    {GW_R_HEALTHY, "healthy", "/-/healthy", G, "GET", 0, 0, NULL, h_healthy},
    {GW_R_METRICS, "metrics", "/metrics", G, "GET", 0, 0, NULL, gw_api_metrics},
    {GW_R_ADMIN_RETENTION, "admin_retention", "/api/v1/admin/retention", GW_M_POST, "POST", 1, 1, NULL,
     gw_api_admin_retention},
    {GW_R_ADMIN_FLUSH, "admin_flush", "/api/v1/admin/flush", GW_M_POST, "POST", 1, 1, NULL, gw_api_admin_flush},
    {GW_R_ADMIN_DOWNSAMPLE, "admin_downsample", "/api/v1/admin/downsample", GW_M_POST, "POST", 1, 1, NULL,
     gw_api_admin_downsample},
    {GW_R_FORMAT_QUERY, "format_query", "/api/v1/format_query", GP, "GET, POST", 1, 1, NULL, gw_api_format_query},
    {GW_R_ALERTS, "alerts", "/api/v1/alerts", GP, "GET, POST", 1, 1, NULL, gw_api_alerts},
    {GW_R_RULES, "rules", "/api/v1/rules", GP, "GET, POST", 1, 1, NULL, gw_api_rules},
    {GW_R_CHECKPOINTS, "checkpoints", "/api/v1/checkpoints", G, "GET", 1, 0, NULL, gw_api_checkpoints},
    {GW_R_EVENTS, "events", "/api/v1/events", GP, "GET, POST", 1, 0, NULL, gw_api_events},
    {GW_R_SESSIONS, "sessions", "/api/v1/sessions", G, "GET", 1, 0, NULL, gw_api_sessions},
    {GW_R_EXCLUSIONS, "exclusions", "/api/v1/exclusions", G, "GET", 1, 0, NULL, gw_api_exclusions},
    {GW_R_ADMIN_COMPACT, "admin_compact", "/api/v1/admin/compact", GW_M_POST, "POST", 1, 1, NULL,
     gw_api_admin_compact},
    {GW_R_ADMIN_BACKUP, "admin_backup", "/api/v1/admin/backup", GW_M_POST, "POST", 1, 1, NULL, gw_api_admin_backup},
    /* the operator's view (api_status.c) */
    {GW_R_STATUS_RUNTIME, "runtimeinfo", "/api/v1/status/runtimeinfo", G, "GET", 1, 0, NULL, gw_api_runtimeinfo},
    {GW_R_STATUS_FLAGS, "flags", "/api/v1/status/flags", G, "GET", 1, 0, NULL, gw_api_flags},
    {GW_R_STATUS_CONFIG, "config", "/api/v1/status/config", G, "GET", 1, 0, NULL, gw_api_config},
    {GW_R_STATUS_TSDB, "tsdb", "/api/v1/status/tsdb", G, "GET", 1, 0, NULL, gw_api_tsdb},
    {GW_R_STATUS_WALREPLAY, "walreplay", "/api/v1/status/walreplay", G, "GET", 1, 0, NULL, gw_api_walreplay},
    {GW_R_RELOAD, "reload", "/-/reload", GW_M_POST, "POST", 0, 0, NULL, gw_api_reload},
    {GW_R_UI, "ui", "/", G, "GET", 0, 0, NULL, gw_http_ui},
};
static const struct gw_route ui_route = {GW_R_UI, "ui", "/ui/", G, "GET", 0, 0, NULL, gw_http_ui};
static const struct gw_route label_values_route = {
    GW_R_LABEL_VALUES, "label_values", "/api/v1/label/", G, "GET", 1, 0, NULL, gw_api_label_values};

int gw_route_no_db(enum gw_route_id id)
{
    switch (id) {
    case GW_R_READY: case GW_R_HEALTHY: case GW_R_METRICS: case GW_R_BUILDINFO: case GW_R_STATUS_RUNTIME:
    case GW_R_STATUS_FLAGS: case GW_R_STATUS_CONFIG: case GW_R_STATUS_WALREPLAY: case GW_R_RELOAD: case GW_R_UI:
        return 1;
    default:
        return 0;
    }
}

/* Authentication classes (docs/security.md): write for what stores data,
 * admin for maintenance and reload, open for the health probes, read for
 * the rest (queries, remote read, status, the status page, unknown paths). */
enum gw_auth_class gw_route_auth_class(const struct gw_route *r, int method, int metrics_open)
{
    if (r == NULL)
        return GW_AUTH_READ;
    switch (r->id) {
    case GW_R_READY: case GW_R_HEALTHY:
        return GW_AUTH_OPEN;
    case GW_R_METRICS:
        return metrics_open ? GW_AUTH_OPEN : GW_AUTH_READ;
    case GW_R_WRITE:
        return GW_AUTH_WRITE;
    case GW_R_EVENTS:   /* POST stores scheduler events, GET reads them */
        return method == GW_M_POST ? GW_AUTH_WRITE : GW_AUTH_READ;
    case GW_R_ADMIN_RETENTION: case GW_R_ADMIN_FLUSH: case GW_R_ADMIN_DOWNSAMPLE: case GW_R_ADMIN_COMPACT:
    case GW_R_ADMIN_BACKUP: case GW_R_RELOAD:
        return GW_AUTH_ADMIN;
    default:
        return GW_AUTH_READ;
    }
}

const char *gw_route_name(enum gw_route_id id)
{
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (routes[i].id == id)
            return routes[i].path;
    if (id == GW_R_LABEL_VALUES)
        return "/api/v1/label/:name/values";
    return "other";
}

const struct gw_route *gw_route_find(const char *path)
{
    size_t n;
    if (path == NULL)
        return NULL;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (strcmp(path, routes[i].path) == 0)
            return &routes[i];
    n = strlen(path);
    if (strncmp(path, "/api/v1/label/", 14) == 0 && n > 14 + 7 && strcmp(path + n - 7, "/values") == 0 &&
        memchr(path + 14, '/', n - 14 - 7) == NULL)
        return &label_values_route;
    if (strncmp(path, "/ui/", 4) == 0)
        return &ui_route;
    return NULL;
}

void gw_route_dispatch(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    const struct gw_route *r = rq->route;
    int rc = GW_OK;
    if (r == NULL) {
        h_not_found(rq, rs);
        return;
    }
    if (!(r->methods & rq->method)) {
        gw_resp_text(rs, 405, "method not allowed");
        gw_resp_header(rs, "Allow", "%s", r->allow);
        return;
    }
    if (r->form) {
        const char *ct = gw_http_header(rq, "Content-Type");
        if (rq->method == GW_M_POST && ct != NULL &&
            strncasecmp(ct, "application/x-www-form-urlencoded", 33) == 0 && rq->body.len > 0)
            rc = gw_params_parse(&rq->params, (const char *)rq->body.data, rq->body.len);
    }
    if (rc == GW_OK && rq->uri != NULL) {
        const char *q = strchr(rq->uri, '?');
        if (q != NULL) {
            size_t ql = strcspn(q + 1, "#");
            rc = gw_params_parse(&rq->params, q + 1, ql);
        }
    }
    if (rc != GW_OK) {
        if (r->api)
            gw_resp_api_error(rs, "bad_data", "invalid parameter encoding: %s", gw_strerror(rc));
        else
            gw_resp_text(rs, 400, "invalid parameter encoding: %s", gw_strerror(rc));
        return;
    }
    r->fn(rq, rs);
}
