/* api_events.c - scheduler events (ledger.h, docs/ledger.md "Scheduler
 * events"): the scheduler reports sessions starting, ending, failing and
 * being retried, and nodes being excluded and returned.
 *
 *   POST /api/v1/events   body: JSON lines, one event per line
 *     Content-Type application/x-ndjson, application/json or text/plain
 *     (else 415); the body cap of every endpoint (413 past it); at most
 *     GW_HTTP_EVENTS_MAX events. A bad line refuses the whole body:
 *     400 {"status":"error","errorType":"bad_data","error":"line 3: ..."}
 *     and nothing is stored. Else every event is stored in one
 *     transaction: 200 {"status":"success","data":{"stored":N}}.
 *   GET /api/v1/events?start=&end=&type=&node=&limit=
 *     the stored events with start <= time <= end (Prometheus times: Unix
 *     seconds or RFC 3339; both optional), of one type, naming one node
 *     (as "node" or in "nodes"), at most limit (0 or none: all), in time
 *     order: {"status":"success","data":[{"seq":1,"time":"...",...}]}.
 * Without an event store (http.h opts.events) both answer 503. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gpuwatch/ledger.h"
#include "http/http_int.h"

#define GW_HTTP_EVENTS_MAX 10000    /* events in one POST (about 8 MiB parsed) */

static struct gw_led_events *events_store(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    struct gw_led_events *s = __atomic_load_n(&rq->h->opts.events, __ATOMIC_ACQUIRE);
    if (!s) gw_resp_api_error(rs, "unavailable", "no scheduler event store is configured on this server");
    return s;
}

static int json_type_ok(const char *ct)
{
    static const char *const ok[] = {"application/x-ndjson", "application/json", "text/plain"};
    if (!ct) return 0;
    size_t n = strcspn(ct, ";");
    while (n && (ct[n - 1] == ' ' || ct[n - 1] == '\t')) n--;
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (n == strlen(ok[i]) && strncasecmp(ct, ok[i], n) == 0) return 1;
    return 0;
}

static void events_post(struct gw_http_req *rq, struct gw_http_resp *rs, struct gw_led_events *s)
{
    const char *ct = gw_http_header(rq, "Content-Type");
    if (!json_type_ok(ct)) {
        gw_resp_api_error(rs, "bad_data",
                          "unsupported Content-Type \"%.80s\": send JSON lines as application/x-ndjson, "
                          "application/json or text/plain",
                          ct ? ct : "");
        rs->status = 415;
        return;
    }
    struct gw_led_event *ev = NULL;
    size_t n = 0;
    struct gw_error err = {0};
    const char *body = rq->body.data ? (const char *)rq->body.data : "";
    int rc = gw_led_events_parse(body, rq->body.len, GW_HTTP_EVENTS_MAX, &ev, &n, &err);
    if (rc == GW_EINVAL || rc == GW_ELIMIT) {
        gw_resp_api_error(rs, "bad_data", "%s", err.msg);
        return;
    }
    if (rc == GW_OK) rc = gw_led_events_append(s, ev, n, &err);
    gw_led_events_free(ev, n);
    if (rc == GW_EINVAL) {
        gw_resp_api_error(rs, "bad_data", "%s", err.msg);
        return;
    }
    if (rc != GW_OK) {
        gw_resp_api_error(rs, "internal", "cannot store the events: %s", err.msg[0] ? err.msg : gw_strerror(rc));
        return;
    }
    gw_buf_reset(&rs->body);
    if (gw_buf_printf(&rs->body, "{\"status\":\"success\",\"data\":{\"stored\":%zu}}", n) != GW_OK) {
        gw_resp_api_error(rs, "internal", "out of memory");
        return;
    }
    rs->status = 200;
    rs->content_type = "application/json";
}

/* The GET filters: type (0 any), node ("" any), limit (0 all). */
struct ev_filter {
    enum gw_led_ev_type type;
    char node[GW_LED_NAME];
    size_t limit;
};

static int filter_params(struct gw_http_req *rq, struct gw_http_resp *rs, struct ev_filter *f)
{
    memset(f, 0, sizeof *f);
    const struct gw_param *p = gw_params_get(&rq->params, "type");
    if (p && p->val_len) {
        for (int t = 1; t < GW_LEV_COUNT_ && !f->type; t++)
            if (strcmp(p->val, gw_led_ev_name((enum gw_led_ev_type)t)) == 0) f->type = (enum gw_led_ev_type)t;
        if (!f->type) {
            gw_resp_api_error(rs, "bad_data", "invalid parameter \"type\": unknown event type \"%.60s\"", p->val);
            return -1;
        }
    }
    p = gw_params_get(&rq->params, "node");
    if (p && p->val_len) {
        if (p->val_len >= sizeof f->node) {
            gw_resp_api_error(rs, "bad_data", "invalid parameter \"node\": longer than %zu bytes", sizeof f->node - 1);
            return -1;
        }
        for (size_t i = 0; i <= p->val_len; i++)
            f->node[i] = (char)(p->val[i] >= 'A' && p->val[i] <= 'Z' ? p->val[i] - 'A' + 'a' : p->val[i]);
    }
    p = gw_params_get(&rq->params, "limit");
    if (p && p->val_len) {
        char *end;
        unsigned long long v = strtoull(p->val, &end, 10);
        if (p->val[0] < '0' || p->val[0] > '9' || *end != '\0') {
            gw_resp_api_error(rs, "bad_data", "invalid parameter \"limit\": \"%.40s\" is not a non-negative integer",
                              p->val);
            return -1;
        }
        f->limit = (size_t)v;
    }
    return 0;
}

static int ev_match(const struct gw_led_event *e, const struct ev_filter *f)
{
    if (f->type && e->type != f->type) return 0;
    if (!f->node[0] || strcmp(e->node, f->node) == 0) return 1;
    for (uint32_t i = 0; i < e->n_nodes; i++)
        if (strcmp(e->nodes[i], f->node) == 0) return 1;
    return 0;
}

static void events_get(struct gw_http_req *rq, struct gw_http_resp *rs, struct gw_led_events *s)
{
    int64_t start, end;
    struct ev_filter f;
    if (gw_http_time_param(rq, rs, "start", INT64_MIN, &start) || gw_http_time_param(rq, rs, "end", INT64_MAX, &end) ||
        filter_params(rq, rs, &f))
        return;
    if (end < start) {
        gw_resp_api_error(rs, "bad_data", "invalid parameter \"end\": end timestamp must not be before start time");
        return;
    }
    struct gw_led_event *ev = NULL;
    size_t n = 0;
    struct gw_error err = {0};
    /* unfiltered, the store applies the limit itself */
    size_t lim = f.type || f.node[0] ? 0 : f.limit;
    int rc = gw_led_events_load(s, start, end, lim, &ev, &n, &err);
    if (rc != GW_OK) {
        gw_resp_api_error(rs, "internal", "cannot read the event store: %s", err.msg[0] ? err.msg : gw_strerror(rc));
        return;
    }
    struct gw_buf *b = &rs->body;
    gw_buf_reset(b);
    rc = gw_buf_printf(b, "{\"status\":\"success\",\"data\":[");
    size_t out = 0;
    for (size_t i = 0; rc == GW_OK && i < n && (!f.limit || out < f.limit); i++) {
        if (!ev_match(&ev[i], &f)) continue;
        if (out++) rc = gw_buf_putc(b, ',');
        if (rc == GW_OK) rc = gw_led_event_json(b, &ev[i]);
    }
    if (rc == GW_OK) rc = gw_buf_printf(b, "]}");
    gw_led_events_free(ev, n);
    if (rc != GW_OK) {
        gw_resp_api_error(rs, "internal", "cannot render the answer: %s", gw_strerror(rc));
        return;
    }
    rs->status = 200;
    rs->content_type = "application/json";
}

void gw_api_events(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    struct gw_led_events *s = events_store(rq, rs);
    if (!s) return;
    if (rq->method == GW_M_POST) events_post(rq, rs, s);
    else events_get(rq, rs, s);
}
