/* src/http/limits.c - the server's limits and their answers (docs/limits.md).
 *
 *   declared Content-Length over the body limit -> 413 at once (the body is
 *       not read; the connection is closed after the answer)
 *   bodies held in memory over the in-flight budget -> 503 + Retry-After,
 *       at once when the Content-Length does not fit next to the bytes
 *       held now (bytes count as they arrive: a stalled client holds what
 *       it sent, not what it declared)
 *   all write (or query) slots busy for longer than the queue wait
 *       -> 503 + Retry-After (the JSON envelope, errorType "unavailable",
 *       for the query API)
 *   remote write: more series than the per-request limit -> 413; a series
 *       over the label count, name or value length limits -> refused and
 *       named in the 400 while the valid series of the request are stored
 *       (api_write.c merges the count into its answer).
 * Query sample and memory limits are the PromQL engine's (422, errorType
 * "execution", like Prometheus). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "gpuwatch/labels.h"
#include "gpuwatch/log.h"
#include "gpuwatch/rw.h"
#include "http/http_int.h"

#define RETRY_AFTER_S 1   /* seconds, in every 503 of a limit */

void gw_http_slots_init(struct gw_http_slots *s, unsigned max)
{
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->used = 0;
    s->max = max;
}

void gw_http_slots_destroy(struct gw_http_slots *s)
{
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
}

int gw_http_slots_acquire(struct gw_http_slots *s, int64_t wait_ms)
{
    struct timespec dl;
    int got = 0;
    if (s->max == 0)
        return 1;
    clock_gettime(CLOCK_REALTIME, &dl);
    if (wait_ms > 0) {
        dl.tv_sec += wait_ms / 1000;
        dl.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
        if (dl.tv_nsec >= 1000000000L) {
            dl.tv_sec++;
            dl.tv_nsec -= 1000000000L;
        }
    }
    pthread_mutex_lock(&s->mu);
    while (s->used >= s->max && wait_ms > 0)
        if (pthread_cond_timedwait(&s->cv, &s->mu, &dl) == ETIMEDOUT)
            break;
    if (s->used < s->max) {
        s->used++;
        got = 1;
    }
    pthread_mutex_unlock(&s->mu);
    return got;
}

void gw_http_slots_release(struct gw_http_slots *s)
{
    if (s->max == 0)
        return;
    pthread_mutex_lock(&s->mu);
    if (s->used > 0)
        s->used--;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* ---- request bodies ---- */

static int over_budget(struct gw_http_req *rq)
{
    uint64_t cap = rq->h->opts.limits.max_inflight_body_bytes;
    atomic_fetch_add(&rq->h->limit_refusals, 1);
    rq->early_status = 503;
    rq->retry_after_s = RETRY_AFTER_S;
    snprintf(rq->early_msg, sizeof rq->early_msg,
             "overloaded: request bodies in memory would exceed %llu bytes "
             "(--limits.http.max-inflight-body-bytes); retry later",
             (unsigned long long)cap);
    return -1;
}

/* Counts n more bytes of rq's body against the budget: 0, or -1 after
 * refusing the request (its bytes are then not kept). */
static int reserve(struct gw_http_req *rq, uint64_t n)
{
    struct gw_http *h = rq->h;
    uint64_t now = atomic_fetch_add(&h->inflight_body_bytes, n) + n;
    if (now <= h->opts.limits.max_inflight_body_bytes || now == rq->body_reserved + n) {
        rq->body_reserved += n;
        return 0;   /* within the budget, or the only body (always allowed) */
    }
    atomic_fetch_sub(&h->inflight_body_bytes, n);
    gw_http_limits_release(rq);   /* the body read so far is dropped too */
    return over_budget(rq);
}

int gw_http_limits_headers(struct gw_http_req *rq, unsigned long long declared, int have_declared)
{
    size_t max = rq->h->opts.max_body_bytes;
    if (!have_declared)
        return 0;
    if (declared > max) {
        if (!rq->early_status || rq->early_status == 503) {
            rq->early_status = 413;
            snprintf(rq->early_msg, sizeof rq->early_msg,
                     "request body too large: Content-Length %llu bytes, limit %zu (--web.max-body-bytes)",
                     declared, max);
        }
        return 1;
    }
    if (rq->early_status || declared == 0)
        return 0;
    /* Only bytes that arrived count (a stalled client that declared much
     * and sent little holds little), but a body that cannot fit next to
     * those held now is refused before it is sent. */
    {
        uint64_t held = atomic_load(&rq->h->inflight_body_bytes);
        if (held > 0 && held + declared > rq->h->opts.limits.max_inflight_body_bytes)
            return over_budget(rq) != 0;
    }
    return 0;
}

int gw_http_limits_body(struct gw_http_req *rq)
{
    uint64_t seen = rq->body_bytes_seen;
    if (seen <= rq->body_reserved)
        return 0;
    return reserve(rq, seen - rq->body_reserved);
}

void gw_http_limits_release(struct gw_http_req *rq)
{
    if (rq->body_reserved) {
        atomic_fetch_sub(&rq->h->inflight_body_bytes, rq->body_reserved);
        rq->body_reserved = 0;
    }
}

/* ---- concurrency ---- */

static void refuse_busy(struct gw_http_req *rq, struct gw_http_resp *rs, const char *what, unsigned max,
                        const char *flag)
{
    atomic_fetch_add(&rq->h->limit_refusals, 1);
    if (rq->route->api)
        gw_resp_api_error(rs, "unavailable", "too many concurrent %s (limit %u, %s); retry later", what, max, flag);
    else
        gw_resp_text(rs, 503, "too many concurrent %s (limit %u, %s); retry later", what, max, flag);
    rs->status = 503;
    gw_resp_header(rs, "Retry-After", "%d", RETRY_AFTER_S);
}

void gw_http_limits_dispatch(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    struct gw_http *h = rq->h;
    struct gw_http_slots *s = NULL;
    const char *what = NULL, *flag = NULL;
    enum gw_route_id id = rq->route ? rq->route->id : GW_R_NOT_FOUND;
    if (id == GW_R_WRITE && rq->method == GW_M_POST) {
        s = &h->write_slots;
        what = "remote writes";
        flag = "--limits.http.max-concurrent-writes";
    } else if (id == GW_R_QUERY || id == GW_R_QUERY_RANGE || (id == GW_R_READ && rq->method == GW_M_POST)) {
        s = &h->query_slots;
        what = "queries";
        flag = "--limits.query.max-concurrent";
    }
    if (s == NULL) {
        gw_route_dispatch(rq, rs);
        return;
    }
    if (!gw_http_slots_acquire(s, h->opts.limits.queue_wait_ms)) {
        refuse_busy(rq, rs, what, s->max, flag);
        return;
    }
    if (h->opts.limits.debug_handler_delay_ms)
        usleep(h->opts.limits.debug_handler_delay_ms * 1000u);
    gw_route_dispatch(rq, rs);
    gw_http_slots_release(s);
}

/* ---- remote write: series and labels ---- */

static void series_name(const struct gw_rw_series *s, char *out, size_t cap)
{
    snprintf(out, cap, "(no __name__)");
    for (uint32_t i = 0; i < s->n_labels; i++)
        if (s->labels[i].name_len == 8 && memcmp(s->labels[i].name, "__name__", 8) == 0) {
            snprintf(out, cap, "%.*s", (int)(s->labels[i].value_len > 64 ? 64 : s->labels[i].value_len),
                     s->labels[i].value);
            return;
        }
}

/* 0 when s is within the limits, else -1 with why (naming the series and the limit). */
static int series_over(const struct gw_http_limits *l, const struct gw_rw_series *s, char *why, size_t cap)
{
    char name[80];
    if (s->n_labels > l->max_labels) {
        series_name(s, name, sizeof name);
        snprintf(why, cap, "series \"%s\" has %u labels, limit %u (--limits.series.max-labels)", name,
                 s->n_labels, l->max_labels);
        return -1;
    }
    for (uint32_t i = 0; i < s->n_labels; i++) {
        const struct gw_label *lb = &s->labels[i];
        if (lb->name_len > l->max_label_name_len) {
            series_name(s, name, sizeof name);
            snprintf(why, cap, "series \"%s\": label name \"%.*s...\" is %u bytes, limit %u "
                     "(--limits.label.max-name-length)", name, (int)(lb->name_len < 32 ? lb->name_len : 32),
                     lb->name, lb->name_len, l->max_label_name_len);
            return -1;
        }
        if (lb->value_len > l->max_label_value_len) {
            series_name(s, name, sizeof name);
            snprintf(why, cap, "series \"%s\": label \"%.*s\" value is %u bytes, limit %u "
                     "(--limits.label.max-value-length)", name, (int)(lb->name_len < 40 ? lb->name_len : 40),
                     lb->name, lb->value_len, l->max_label_value_len);
            return -1;
        }
    }
    return 0;
}

int gw_http_write_limits(struct gw_http_req *rq, struct gw_http_resp *rs, struct gw_rw_request *req,
                         struct gw_append_result *res)
{
    const struct gw_http_limits *l = &rq->h->opts.limits;
    memset(res, 0, sizeof *res);
    if (l->max_series_per_request && req->n_series > l->max_series_per_request) {
        gw_resp_text(rs, 413, "request has %zu series, limit %llu (--limits.write.max-series-per-request)",
                     req->n_series, (unsigned long long)l->max_series_per_request);
        return -1;
    }
    if (l->max_labels >= GW_LABELS_MAX && l->max_label_name_len >= GW_LABEL_NAME_MAX &&
        l->max_label_value_len >= GW_LABEL_VALUE_MAX)
        return 0;   /* the store's own caps, checked when a series is created */
    for (size_t i = 0; i < req->n_series; i++) {
        struct gw_rw_series *s = &req->series[i];
        char why[GW_ERROR_MSG_LEN];
        if (s->n_samples == 0 || series_over(l, s, why, sizeof why) == 0)
            continue;
        res->invalid_series++;
        res->invalid_samples += s->n_samples;
        if (!res->first_invalid[0])
            snprintf(res->first_invalid, sizeof res->first_invalid, "%s", why);
        s->n_samples = 0;   /* the store skips a series without samples */
    }
    return 0;
}

void gw_http_write_limits_merge(struct gw_append_result *res, const struct gw_append_result *over)
{
    if (over->invalid_series == 0)
        return;
    res->invalid_series += over->invalid_series;
    res->invalid_samples += over->invalid_samples;
    /* the limit is named first: it is the operator's choice, not bad input */
    snprintf(res->first_invalid, sizeof res->first_invalid, "%s", over->first_invalid);
}

/* ---- options ---- */

void gw_http_limits_default(struct gw_http_limits *l)
{
    memset(l, 0, sizeof *l);
    l->max_decoded_bytes = GW_RW_MAX_BODY;
    l->max_labels = GW_LABELS_MAX;
    l->max_label_name_len = GW_LABEL_NAME_MAX;
    l->max_label_value_len = GW_LABEL_VALUE_MAX;
    l->queue_wait_ms = GW_HTTP_QUEUE_WAIT_MS;
    l->max_inflight_body_bytes = GW_HTTP_MAX_INFLIGHT_BODY;
}

/* v when it is set and within [1, cap], else def. */
static uint64_t pick(uint64_t v, uint64_t def, uint64_t cap)
{
    return v == 0 ? def : v > cap ? cap : v;
}

void gw_http_limits_setup(struct gw_http *h, const struct gw_http_limits *given)
{
    struct gw_http_limits *l = &h->opts.limits;
    gw_http_limits_default(l);
    if (given != NULL) {
        l->max_decoded_bytes = (size_t)pick(given->max_decoded_bytes, GW_RW_MAX_BODY, GW_RW_MAX_BODY);
        l->max_labels = (unsigned)pick(given->max_labels, GW_LABELS_MAX, GW_LABELS_MAX);
        l->max_label_name_len = (unsigned)pick(given->max_label_name_len, GW_LABEL_NAME_MAX, GW_LABEL_NAME_MAX);
        l->max_label_value_len =
            (unsigned)pick(given->max_label_value_len, GW_LABEL_VALUE_MAX, GW_LABEL_VALUE_MAX);
        l->max_series_per_request = given->max_series_per_request;
        l->max_concurrent_writes = given->max_concurrent_writes;
        l->max_concurrent_queries = given->max_concurrent_queries;
        if (given->queue_wait_ms != 0)
            l->queue_wait_ms = given->queue_wait_ms < 0 ? 0 : given->queue_wait_ms;
        l->max_inflight_body_bytes =
            (size_t)pick(given->max_inflight_body_bytes, GW_HTTP_MAX_INFLIGHT_BODY, SIZE_MAX);
        l->query_max_memory_bytes = given->query_max_memory_bytes;
        l->debug_handler_delay_ms = given->debug_handler_delay_ms;
    }
    if (l->debug_handler_delay_ms == 0 && getenv("GW_DEBUG_HANDLER_DELAY_MS") != NULL)
        l->debug_handler_delay_ms = (unsigned)strtoul(getenv("GW_DEBUG_HANDLER_DELAY_MS"), NULL, 10);
    gw_http_slots_init(&h->write_slots, l->max_concurrent_writes);
    gw_http_slots_init(&h->query_slots, l->max_concurrent_queries);
    atomic_init(&h->inflight_body_bytes, 0);
    atomic_init(&h->limit_refusals, 0);
}

void gw_http_limits_teardown(struct gw_http *h)
{
    gw_http_slots_destroy(&h->write_slots);
    gw_http_slots_destroy(&h->query_slots);
}
