/* api_ledger.c - the node ledger over HTTP (ledger.h, docs/ledger.md),
 * computed per request from the server's own db, alert table and
 * scheduler event store (gw_led_load_live, then gw_led_build):
 *
 *   GET /api/v1/sessions?start=&end=
 *     training sessions and retry chains in [start, end] (Prometheus
 *     times; default the 7 days up to the newest data):
 *     {"status":"success","data":<gw_led_sessions_json>}
 *   GET /api/v1/exclusions?format=json|hosts|slurm
 *     the nodes to keep out of the next job, computed over the 30 days up
 *     to the newest data with "now" = the newest data
 *     (gw_led_data_newest): json (default) {"status":"success","data":
 *     <gw_led_exclusions_json>}; hosts one node per line, slurm
 *     comma-separated (text/plain, for sbatch --exclude).
 * "The newest data" is the db's newest sample, or the wall clock when the
 * db is empty or its newest sample is ahead of it. */
#include <stdio.h>
#include <string.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/ledger.h"
#include "http/http_int.h"

#define LEDGER_SESSIONS_MS (7 * 86400000LL)
#define LEDGER_EXCLUSIONS_MS (30 * 86400000LL)

static int64_t newest_data(struct gw_http *h)
{
    int64_t now = gw_now_ms();
    struct gw_db_stats st;
    struct gw_error err = {0};
    if (h->db && gw_db_stats(h->db, &st, &err) == GW_OK && st.maxt != INT64_MIN && st.maxt < now) return st.maxt;
    return now;
}

/* Loads [from, to] and builds the ledger into *res; answers 500 itself on
 * failure (-1). now_newest: "now" = the newest data in the range. */
static int build(struct gw_http_req *rq, struct gw_http_resp *rs, int64_t from, int64_t to, int now_newest,
                 struct gw_led_result **res)
{
    struct gw_alerts *al = __atomic_load_n(&rq->h->opts.alerts, __ATOMIC_ACQUIRE);
    struct gw_led_events *ev = __atomic_load_n(&rq->h->opts.events, __ATOMIC_ACQUIRE);
    struct gw_led_data d;
    memset(&d, 0, sizeof d);
    struct gw_led_config cfg;
    gw_led_config_default(&cfg);
    struct gw_error err = {0};
    int rc = gw_led_load_live(rq->h->db, al, ev, from, to, &d, &err);
    if (rc != GW_OK) {
        gw_resp_api_error(rs, "internal", "cannot load the ledger's inputs: %s",
                          err.msg[0] ? err.msg : gw_strerror(rc));
        return -1;
    }
    if (now_newest) d.in.now = gw_led_data_newest(&d);
    rc = gw_led_build(&d.in, &cfg, res, &err);
    gw_led_data_free(&d);
    if (rc != GW_OK) {
        gw_resp_api_error(rs, "internal", "cannot build the ledger: %s", err.msg[0] ? err.msg : gw_strerror(rc));
        return -1;
    }
    return 0;
}

static void answer(struct gw_http_resp *rs, int rc, const char *content_type)
{
    if (rc != GW_OK) {
        gw_resp_api_error(rs, "internal", "cannot render the answer: %s", gw_strerror(rc));
        return;
    }
    rs->status = 200;
    rs->content_type = content_type;
}

void gw_api_sessions(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    int64_t start, end;
    if (gw_http_time_param(rq, rs, "end", newest_data(rq->h), &end) ||
        gw_http_time_param(rq, rs, "start", end > INT64_MIN + LEDGER_SESSIONS_MS ? end - LEDGER_SESSIONS_MS : INT64_MIN,
                   &start))
        return;
    if (end < start) {
        gw_resp_api_error(rs, "bad_data", "invalid parameter \"end\": end timestamp must not be before start time");
        return;
    }
    struct gw_led_result *res = NULL;
    if (build(rq, rs, start, end, 0, &res)) return;
    struct gw_buf *b = &rs->body;
    gw_buf_reset(b);
    int rc = gw_buf_printf(b, "{\"status\":\"success\",\"data\":");
    if (rc == GW_OK) rc = gw_led_sessions_json(b, res);
    if (rc == GW_OK) rc = gw_buf_putc(b, '}');
    gw_led_result_free(res);
    answer(rs, rc, "application/json");
}

void gw_api_exclusions(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    const struct gw_param *p = gw_params_get(&rq->params, "format");
    const char *fmt = p && p->val_len ? p->val : "json";
    if (strcmp(fmt, "json") && strcmp(fmt, "hosts") && strcmp(fmt, "slurm")) {
        gw_resp_api_error(rs, "bad_data", "invalid parameter \"format\": \"%.40s\" is not json, hosts or slurm", fmt);
        return;
    }
    int64_t end = newest_data(rq->h);
    struct gw_led_result *res = NULL;
    if (build(rq, rs, end - LEDGER_EXCLUSIONS_MS, end, 1, &res)) return;
    struct gw_buf *b = &rs->body;
    gw_buf_reset(b);
    int rc;
    if (!strcmp(fmt, "json")) {
        rc = gw_buf_printf(b, "{\"status\":\"success\",\"data\":");
        if (rc == GW_OK) rc = gw_led_exclusions_json(b, res);
        if (rc == GW_OK) rc = gw_buf_putc(b, '}');
    } else {
        rc = gw_led_exclusions_hosts(b, res, !strcmp(fmt, "slurm"));
    }
    gw_led_result_free(res);
    answer(rs, rc, strcmp(fmt, "json") ? "text/plain; charset=utf-8" : "application/json");
}
