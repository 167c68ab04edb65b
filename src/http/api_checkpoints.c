/* api_checkpoints.c - GET /api/v1/checkpoints?start=&end=: the checkpoint
 * events of D7 (detect.h, docs/detectors.md "D7") whose time range
 * overlaps [start, end], read from the event store the server was given
 * (kv.h; none: an empty list), oldest first, in the Prometheus envelope:
 *   {"status":"success","data":[{"id":3,"phase":"save","start":1767230000,
 *     "end":1767230300,"duration_seconds":300,"nodes":60,"bytes":1.2e13,
 *     "peak_bytes_per_second":...,"mean_bytes_per_second":...,
 *     "link_utilisation":0.027,"link_utilisation_max":0.04,"queue_share":0.93,
 *     "response_time_ms":12.1,"response_time_idle_ms":5.2,
 *     "backlog_per_send":2.7,"slot_high_water":128,"slot_limit":128,
 *     "slots_at_limit_share":1,"diagnosis":"slot_limited","remedy":"..."}]}
 * Unknown numbers are null. start and end are Prometheus times (Unix
 * seconds or RFC3339), both optional (everything); a bad value or end
 * before start is 400 bad_data naming the parameter. */
#include <stdio.h>
#include <string.h>

#include "gpuwatch/detect.h"
#include "gpuwatch/json.h"
#include "gpuwatch/kv.h"
#include "http/http_int.h"

#define MAX_EVENT_MS (7 * 86400000LL)   /* scan from start - this: no checkpoint lasts a week */

struct ck_scan {
    struct gw_buf *b;
    int64_t start, end;
    int n, rc;
};

static int num(struct gw_buf *b, const char *key, double v)
{
    if (v != v) return gw_buf_printf(b, ",\"%s\":null", key);
    int rc = gw_buf_printf(b, ",\"%s\":", key);
    return rc ? rc : gw_json_num(b, v);
}

static int event_json(struct gw_buf *b, const struct gw_det_ckpt *e, int first)
{
    int rc = gw_buf_printf(b, "%s{\"id\":%llu,\"phase\":\"%s\",\"start\":", first ? "" : ",",
                           (unsigned long long)e->id, gw_ckpt_phase_name(e->phase));
    if (!rc) rc = gw_json_ts(b, e->t_start);
    if (!rc) rc = gw_buf_printf(b, ",\"end\":");
    if (!rc) rc = gw_json_ts(b, e->t_end);
    if (!rc) rc = num(b, "duration_seconds", (double)(e->t_end - e->t_start) / 1000.0);
    if (!rc) rc = gw_buf_printf(b, ",\"nodes\":%u", e->nodes);
    if (!rc) rc = num(b, "bytes", e->bytes);
    if (!rc) rc = num(b, "peak_bytes_per_second", e->peak_bps);
    if (!rc) rc = num(b, "mean_bytes_per_second", e->mean_bps);
    if (!rc) rc = num(b, "link_utilisation", e->link_util);
    if (!rc) rc = num(b, "link_utilisation_max", e->link_util_max);
    if (!rc) rc = num(b, "queue_share", e->queue_share);
    if (!rc) rc = num(b, "response_time_ms", e->rtt_ms);
    if (!rc) rc = num(b, "response_time_idle_ms", e->rtt_base_ms);
    if (!rc) rc = num(b, "backlog_per_send", e->backlog_per_send);
    if (!rc) rc = num(b, "slot_high_water", e->slot_high);
    if (!rc) rc = num(b, "slot_limit", e->slot_limit);
    if (!rc) rc = num(b, "slots_at_limit_share", e->slots_at_limit);
    if (!rc) rc = gw_buf_printf(b, ",\"diagnosis\":\"%s\",\"remedy\":", gw_ckpt_diag_name(e->diag));
    const char *rem = gw_ckpt_remedy(e->diag);
    if (!rc) rc = gw_json_str(b, rem, strlen(rem));
    if (!rc) rc = gw_buf_printf(b, "}");
    return rc;
}

static int scan_cb(void *ud, const void *k, size_t kl, const void *v, size_t vl)
{
    struct ck_scan *s = ud;
    struct gw_det_ckpt e;
    (void)k, (void)kl;
    if (gw_det_ckpt_decode(v, vl, &e) != GW_OK) return 0;   /* not of this version: skipped */
    if (e.t_start > s->end) return 1;                        /* keys in start order: done */
    if (e.t_end < s->start) return 0;
    s->rc = event_json(s->b, &e, s->n == 0);
    s->n++;
    return s->rc ? 1 : 0;
}

void gw_api_checkpoints(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    int64_t start, end;
    if (gw_http_time_param(rq, rs, "start", INT64_MIN, &start) || gw_http_time_param(rq, rs, "end", INT64_MAX, &end)) return;
    if (end < start) {
        gw_resp_api_error(rs, "bad_data", "invalid parameter \"end\": end timestamp must not be before start time");
        return;
    }
    struct gw_kv *kv = __atomic_load_n(&rq->h->opts.checkpoints, __ATOMIC_ACQUIRE);
    struct gw_buf *b = &rs->body;
    gw_buf_reset(b);
    struct ck_scan s = {b, start, end, 0, GW_OK};
    int rc = gw_buf_printf(b, "{\"status\":\"success\",\"data\":[");
    if (!rc && kv) {
        struct gw_kv_txn *t = NULL;
        struct gw_error err = {0};
        rc = gw_kv_begin(kv, 0, &t, &err);
        if (!rc) {
            uint8_t from[GW_CKPT_KEY_BYTES];
            gw_det_ckpt_key(start > INT64_MIN + MAX_EVENT_MS ? start - MAX_EVENT_MS : INT64_MIN, 0, from);
            rc = gw_kv_scan(t, 0, from, sizeof from, scan_cb, &s, &err);
            if (rc == 1) rc = GW_OK;
            if (!rc) rc = s.rc;
            gw_kv_abort(t);
        }
        if (rc) {
            gw_resp_api_error(rs, "internal", "cannot read the checkpoint store: %s", err.msg[0] ? err.msg : gw_strerror(rc));
            return;
        }
    }
    if (!rc) rc = gw_buf_printf(b, "]}");
    if (rc) {
        gw_resp_api_error(rs, "internal", "cannot render the answer: %s", gw_strerror(rc));
        return;
    }
    rs->status = 200;
    rs->content_type = "application/json";
}
