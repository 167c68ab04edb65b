/* src/http/routes.c - the route table, response helpers, the mapping from
 * error codes and Prometheus errorTypes to HTTP status, request counters,
 * and the small endpoints (health, readiness, build info, exemplars,
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
 *   /api/v1/label/<name>/values, /api/v1/metadata, /api/v1/status/buildinfo GET,
 *   /-/ready, /-/healthy, /metrics GET.
 * Unknown /api/ paths answer a JSON 404, other unknown paths plain text.
 * Parameters: form body values come before URL values (Go's r.Form). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "gpuwatch/alert.h"
#include "gpuwatch/log.h"
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
    if (atomic_load(&rq->h->ready))
        gw_resp_text(rs, 200, "gpuwatch is Ready.");
    else
        gw_resp_text(rs, 503, "Service Unavailable");
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

static void h_buildinfo(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    (void)rq;
    json_ok(rs, "{\"version\":\"" GW_VERSION "\",\"revision\":\"\",\"branch\":\"\",\"buildUser\":\"\","
                "\"buildDate\":\"\",\"goVersion\":\"\"}");
}

static void h_exemplars(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    (void)rq;
    json_ok(rs, "[]");
}

static void h_not_found(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    if (strncmp(rq->path, "/api/", 5) == 0)
        gw_resp_api_error(rs, "not_found", "no such endpoint: %s", rq->path);
    else
        gw_resp_text(rs, 404, "404 page not found");
}

static const char *route_names[GW_R_COUNT] = {
    "/api/v1/write", "/api/v1/read", "/api/v1/query", "/api/v1/query_range", "/api/v1/series",
    "/api/v1/labels", "/api/v1/label/:name/values", "/api/v1/metadata", "/api/v1/query_exemplars",
    "/api/v1/status/buildinfo", "/-/ready", "/-/healthy", "/metrics", "/api/v1/admin/retention",
    "/api/v1/admin/flush", "/api/v1/format_query", "/api/v1/alerts", "/api/v1/rules", "/api/v1/checkpoints",
    "/api/v1/events", "/api/v1/sessions", "/api/v1/exclusions", "/api/v1/admin/downsample", "other"};

static int metric_line(struct gw_buf *b, const char *name, uint64_t v)
{
    return gw_buf_printf(b, "%s %llu\n", name, (unsigned long long)v);
}

static void h_metrics(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    struct gw_http *h = rq->h;
    struct gw_buf *b = &rs->body;
    struct gw_db_stats st;
    struct gw_error err;
    int rc = GW_OK;

    gw_buf_reset(b);
    rc = gw_buf_printf(b, "# HELP gpuwatch_http_requests_total HTTP requests by route and status code.\n"
                          "# TYPE gpuwatch_http_requests_total counter\n");
    for (int r = 0; rc == GW_OK && r < GW_R_COUNT; r++)
        for (int c = 0; rc == GW_OK && c < GW_HTTP_N_CODES; c++) {
            uint64_t v = atomic_load(&h->c.requests[r][c]);
            if (v == 0)
                continue;
            if (gw_http_counted_codes[c] == 0)
                rc = gw_buf_printf(b, "gpuwatch_http_requests_total{route=\"%s\",code=\"other\"} %llu\n",
                                   route_names[r], (unsigned long long)v);
            else
                rc = gw_buf_printf(b, "gpuwatch_http_requests_total{route=\"%s\",code=\"%d\"} %llu\n",
                                   route_names[r], gw_http_counted_codes[c], (unsigned long long)v);
        }
    if (rc == GW_OK)
        rc = gw_buf_printf(b, "# HELP gpuwatch_http_request_body_bytes_total Request body bytes received.\n"
                              "# TYPE gpuwatch_http_request_body_bytes_total counter\n");
    if (rc == GW_OK)
        rc = metric_line(b, "gpuwatch_http_request_body_bytes_total", atomic_load(&h->c.body_bytes));
    if (rc == GW_OK)
        rc = gw_buf_printf(b, "# HELP gpuwatch_remote_write_samples_accepted_total Samples stored from remote write.\n"
                              "# TYPE gpuwatch_remote_write_samples_accepted_total counter\n");
    if (rc == GW_OK)
        rc = metric_line(b, "gpuwatch_remote_write_samples_accepted_total", atomic_load(&h->c.samples_accepted));
    if (rc == GW_OK)
        rc = gw_buf_printf(b, "# HELP gpuwatch_remote_write_samples_duplicate_total Resent samples ignored (same timestamp and value).\n"
                              "# TYPE gpuwatch_remote_write_samples_duplicate_total counter\n");
    if (rc == GW_OK)
        rc = metric_line(b, "gpuwatch_remote_write_samples_duplicate_total", atomic_load(&h->c.samples_duplicate));
    if (rc == GW_OK)
        rc = gw_buf_printf(b, "# HELP gpuwatch_remote_write_refused_total Data refused from remote write by reason.\n"
                              "# TYPE gpuwatch_remote_write_refused_total counter\n");
    {
        struct { const char *reason; _Atomic uint64_t *v; } rs_[] = {
            {"duplicate_timestamp", &h->c.refused_conflict},
            {"out_of_order", &h->c.refused_out_of_order},
            {"too_old", &h->c.refused_too_old},
            {"too_new", &h->c.refused_too_new},
            {"invalid_series", &h->c.refused_invalid_series},
            {"invalid_series_samples", &h->c.refused_invalid_samples},
            {"histogram", &h->c.refused_histograms},
            {"exemplar", &h->c.refused_exemplars},
        };
        for (size_t i = 0; rc == GW_OK && i < sizeof rs_ / sizeof rs_[0]; i++)
            rc = gw_buf_printf(b, "gpuwatch_remote_write_refused_total{reason=\"%s\"} %llu\n", rs_[i].reason,
                               (unsigned long long)atomic_load(rs_[i].v));
    }
    if (rc == GW_OK)
        rc = gw_buf_printf(b, "# HELP gpuwatch_remote_write_metadata_total Metadata entries stored.\n"
                              "# TYPE gpuwatch_remote_write_metadata_total counter\n");
    if (rc == GW_OK)
        rc = metric_line(b, "gpuwatch_remote_write_metadata_total", atomic_load(&h->c.metadata_stored));
    if (rc == GW_OK)
        rc = gw_buf_printf(b, "# HELP gpuwatch_ready 1 when the server reports ready.\n# TYPE gpuwatch_ready gauge\n"
                              "gpuwatch_ready %d\n", atomic_load(&h->ready));

    gw_error_clear(&err);
    if (rc == GW_OK && h->db != NULL && gw_db_stats(h->db, &st, &err) == GW_OK) {
        struct { const char *name, *type, *help; uint64_t v; } g[] = {
            {"gpuwatch_db_series", "gauge", "Series in the store.", st.series},
            {"gpuwatch_db_head_series", "gauge", "Series with an open head chunk.", st.head_series},
            {"gpuwatch_db_head_samples", "gauge", "Samples in head chunks.", st.head_samples},
            {"gpuwatch_db_head_bytes", "gauge", "Memory held by head chunks and series.", st.head_bytes},
            {"gpuwatch_db_stored_samples", "gauge", "Samples in persisted blocks.", st.stored_samples},
            {"gpuwatch_db_stored_block_bytes", "gauge", "Payload bytes of persisted blocks.", st.stored_block_bytes},
            {"gpuwatch_db_store_file_bytes", "gauge", "Size of the store data file.", st.store_file_bytes},
            {"gpuwatch_db_store_used_bytes", "gauge", "Store pages in use.", st.store_used_bytes},
            {"gpuwatch_db_wal_bytes", "gauge", "Bytes in WAL segments.", st.wal_bytes},
            {"gpuwatch_db_appended_samples_total", "counter", "Samples appended since start.", st.appended},
            {"gpuwatch_db_refused_samples_total", "counter", "Samples refused since start.", st.refused},
        };
        for (size_t i = 0; rc == GW_OK && i < sizeof g / sizeof g[0]; i++)
            rc = gw_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", g[i].name, g[i].help, g[i].name,
                               g[i].type, g[i].name, (unsigned long long)g[i].v);
        if (rc == GW_OK && st.mint <= st.maxt)
            rc = gw_buf_printf(b, "# HELP gpuwatch_db_min_time_ms Oldest sample timestamp.\n"
                                  "# TYPE gpuwatch_db_min_time_ms gauge\ngpuwatch_db_min_time_ms %lld\n"
                                  "# HELP gpuwatch_db_max_time_ms Newest sample timestamp.\n"
                                  "# TYPE gpuwatch_db_max_time_ms gauge\ngpuwatch_db_max_time_ms %lld\n",
                               (long long)st.mint, (long long)st.maxt);
    }
    struct gw_alerts *al = __atomic_load_n(&h->opts.alerts, __ATOMIC_ACQUIRE);
    if (rc == GW_OK && al != NULL) {
        struct gw_alerts_stats as;
        struct gw_notifier_stats ns;
        gw_alerts_stats(al, &as);
        gw_alerts_notifier_stats(al, &ns);
        rc = gw_buf_printf(b, "# HELP gpuwatch_alerts_active Alerts raised by the detectors, by state.\n"
                              "# TYPE gpuwatch_alerts_active gauge\n"
                              "gpuwatch_alerts_active{state=\"pending\"} %llu\n"
                              "gpuwatch_alerts_active{state=\"firing\"} %llu\n"
                              "# HELP gpuwatch_alerts_resolved_kept Resolved alerts still reported (15 min).\n"
                              "# TYPE gpuwatch_alerts_resolved_kept gauge\ngpuwatch_alerts_resolved_kept %llu\n"
                              "# HELP gpuwatch_alerts_raises_total Raises by the detectors.\n"
                              "# TYPE gpuwatch_alerts_raises_total counter\ngpuwatch_alerts_raises_total %llu\n"
                              "# HELP gpuwatch_alerts_dropped_total Raises ignored (out of memory, active alert cap).\n"
                              "# TYPE gpuwatch_alerts_dropped_total counter\ngpuwatch_alerts_dropped_total %llu\n"
                              "# HELP gpuwatch_alerts_notifications_sent_total Alerts delivered to Alertmanager.\n"
                              "# TYPE gpuwatch_alerts_notifications_sent_total counter\n"
                              "gpuwatch_alerts_notifications_sent_total %llu\n"
                              "# HELP gpuwatch_alerts_notifications_errors_total Failed POSTs to Alertmanager.\n"
                              "# TYPE gpuwatch_alerts_notifications_errors_total counter\n"
                              "gpuwatch_alerts_notifications_errors_total %llu\n",
                           (unsigned long long)as.pending, (unsigned long long)as.firing,
                           (unsigned long long)as.resolved_kept, (unsigned long long)as.raises,
                           (unsigned long long)as.dropped, (unsigned long long)ns.sent,
                           (unsigned long long)ns.errors);
    }
    if (rc != GW_OK) {
        gw_resp_text(rs, 500, "cannot render metrics: %s", gw_strerror(rc));
        return;
    }
    rs->status = 200;
    rs->content_type = "text/plain; version=0.0.4; charset=utf-8";
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
    {GW_R_BUILDINFO, "buildinfo", "/api/v1/status/buildinfo", G, "GET", 1, 0, NULL, h_buildinfo},
    {GW_R_READY, "ready", "/-/ready", G, "GET", 0, 0, NULL, h_ready},
    {GW_R_HEALTHY, "healthy", "/-/healthy", G, "GET", 0, 0, NULL, h_healthy},
    {GW_R_METRICS, "metrics", "/metrics", G, "GET", 0, 0, NULL, h_metrics},
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
};
static const struct gw_route label_values_route = {
    GW_R_LABEL_VALUES, "label_values", "/api/v1/label/", G, "GET", 1, 0, NULL, gw_api_label_values};

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
