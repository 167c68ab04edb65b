/* src/http/api_write.c - Prometheus remote write receiver (1.0 and 2.0),
 * POST /api/v1/write.
 *
 * Checks, in order (the first failing one answers):
 *   method not POST                         -> 405, Allow: POST
 *   Content-Encoding not absent or "snappy" -> 415 (absent is snappy, like
 *                                              Prometheus 3's receiver)
 *   Content-Type not a remote-write type    -> 415
 *   body over the server's body cap         -> 413
 *   snappy: declared size over 32 MiB       -> 400; corrupt -> 400
 *   protobuf malformed                      -> 400
 *   storage failure                         -> 500 (503 when shutting down;
 *                                              507 Insufficient Storage with
 *                                              Retry-After: 10 when the disk
 *                                              is full), the sender retries
 *                                              (Prometheus retries every 5xx,
 *                                              honouring Retry-After)
 *   any sample/series/histogram/exemplar refused -> 400 with one line that
 *                                              counts each reason; the valid
 *                                              rest is stored
 *   otherwise                               -> 204, empty body.
 * v2 requests always get X-Prometheus-Remote-Write-{Samples,Histograms,
 * Exemplars}-Written on 2xx and 4xx (samples = accepted + resent
 * duplicates); v1 requests never do. */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "gpuwatch/arena.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/log.h"
#include "gpuwatch/rw.h"
#include "http/http_int.h"

#define WRITE_ARENA_BLOCK ((size_t)1 << 20)
#define WRITE_ARENA_MAX ((size_t)256 << 20)

void gw_api_write_early(struct gw_http_req *rq)
{
    const char *enc = gw_http_header(rq, "Content-Encoding");
    const char *ct = gw_http_header(rq, "Content-Type");
    int v;
    if (enc != NULL && enc[0] != '\0' && strcasecmp(enc, "snappy") != 0) {
        rq->early_status = 415;
        snprintf(rq->early_msg, sizeof rq->early_msg, "unsupported Content-Encoding \"%.60s\": only snappy",
                 enc);
        return;
    }
    v = gw_rw_version_from_content_type(ct);
    if (v != 1 && v != 2) {
        rq->early_status = 415;
        snprintf(rq->early_msg, sizeof rq->early_msg, "unsupported Content-Type \"%.80s\"", ct ? ct : "");
        return;
    }
    rq->rw_version = v;
}

static void written_headers(struct gw_http_resp *rs, uint64_t samples)
{
    gw_resp_header(rs, "X-Prometheus-Remote-Write-Samples-Written", "%llu", (unsigned long long)samples);
    gw_resp_header(rs, "X-Prometheus-Remote-Write-Histograms-Written", "0");
    gw_resp_header(rs, "X-Prometheus-Remote-Write-Exemplars-Written", "0");
}

/* Appends ", " before every item but the first of a list. */
static void list_item(char *msg, size_t cap, size_t *n, int *first, unsigned long long v, const char *what)
{
    int w;
    if (*n >= cap)
        return;
    w = snprintf(msg + *n, cap - *n, "%s", *first ? "" : ", ");
    if (w > 0)
        *n += (size_t)w;
    if (*n >= cap)
        return;
    w = snprintf(msg + *n, cap - *n, "%llu %s", v, what);
    if (w > 0)
        *n += (size_t)w;
    *first = 0;
}

/* The one-line body of a 400 for refused data, e.g.
 * "refused 3 of 120 samples: 1 out of order, 2 duplicate timestamp with
 * different value; native histograms are not supported (2 refused)". */
static void refused_message(const struct gw_append_result *r, uint64_t total, char *msg, size_t cap)
{
    size_t n = 0;
    int first = 1, w;
    uint64_t refused = r->conflicts + r->out_of_order + r->too_old + r->too_new + r->invalid_samples;
    msg[0] = '\0';
    if (refused > 0) {
        w = snprintf(msg, cap, "refused %llu of %llu samples: ", (unsigned long long)refused,
                     (unsigned long long)total);
        n = w > 0 ? (size_t)w : 0;
        if (r->out_of_order)
            list_item(msg, cap, &n, &first, (unsigned long long)r->out_of_order, "out of order");
        if (r->conflicts)
            list_item(msg, cap, &n, &first, (unsigned long long)r->conflicts, "duplicate timestamp with different value");
        if (r->too_old)
            list_item(msg, cap, &n, &first, (unsigned long long)r->too_old, "too old (outside retention)");
        if (r->too_new)
            list_item(msg, cap, &n, &first, (unsigned long long)r->too_new, "too far in the future");
        if (r->invalid_samples)
            list_item(msg, cap, &n, &first, (unsigned long long)r->invalid_samples, "in series with invalid labels");
    }
    if (r->invalid_series && n < cap) {
        w = snprintf(msg + n, cap - n, "%s%llu series with invalid labels (first: %s)", n ? "; " : "",
                     (unsigned long long)r->invalid_series, r->first_invalid);
        if (w > 0)
            n += (size_t)w;
    }
    if (r->histograms && n < cap) {
        w = snprintf(msg + n, cap - n, "%snative histograms are not supported (%llu refused)", n ? "; " : "",
                     (unsigned long long)r->histograms);
        if (w > 0)
            n += (size_t)w;
    }
    if (r->exemplars && n < cap) {
        w = snprintf(msg + n, cap - n, "%sexemplars are not stored (%llu refused)", n ? "; " : "",
                     (unsigned long long)r->exemplars);
        if (w > 0)
            n += (size_t)w;
    }
}

static void count_result(struct gw_http *h, const struct gw_append_result *r)
{
    atomic_fetch_add(&h->c.samples_accepted, r->accepted);
    atomic_fetch_add(&h->c.samples_duplicate, r->duplicates);
    atomic_fetch_add(&h->c.refused_conflict, r->conflicts);
    atomic_fetch_add(&h->c.refused_out_of_order, r->out_of_order);
    atomic_fetch_add(&h->c.refused_too_old, r->too_old);
    atomic_fetch_add(&h->c.refused_too_new, r->too_new);
    atomic_fetch_add(&h->c.refused_invalid_series, r->invalid_series);
    atomic_fetch_add(&h->c.refused_invalid_samples, r->invalid_samples);
    atomic_fetch_add(&h->c.refused_histograms, r->histograms);
    atomic_fetch_add(&h->c.refused_exemplars, r->exemplars);
    atomic_fetch_add(&h->c.metadata_stored, r->metadata);
}

void gw_api_write(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    struct gw_buf pb;
    struct gw_arena arena;
    struct gw_rw_request req;
    struct gw_append_result res;
    struct gw_error err;
    int v2 = rq->rw_version == 2, rc;

    gw_buf_init(&pb, GW_RW_MAX_BODY);
    gw_arena_init(&arena, WRITE_ARENA_BLOCK, WRITE_ARENA_MAX);
    gw_error_clear(&err);

    rc = gw_snappy_decode(rq->body.data, rq->body.len, GW_RW_MAX_BODY, &pb, &err);
    if (rc != GW_OK) {
        if (rc == GW_ENOMEM)
            gw_resp_text(rs, 500, "out of memory decompressing the body");
        else
            gw_resp_text(rs, 400, "snappy decode error: %s", err.msg[0] ? err.msg : gw_strerror(rc));
        if (v2 && rs->status < 500)
            written_headers(rs, 0);
        goto out;
    }
    memset(&req, 0, sizeof req);
    rc = gw_rw_decode(pb.data, pb.len, rq->rw_version, &arena, &req, &err);
    if (rc != GW_OK) {
        if (rc == GW_EPARSE)
            gw_resp_text(rs, 400, "protobuf decode error: %s", err.msg[0] ? err.msg : gw_strerror(rc));
        else if (rc == GW_ENOMEM)
            gw_resp_text(rs, 413, "request too large to decode: %s", err.msg[0] ? err.msg : gw_strerror(rc));
        else
            gw_resp_text(rs, 400, "cannot decode request: %s", err.msg[0] ? err.msg : gw_strerror(rc));
        if (v2)
            written_headers(rs, 0);
        goto out;
    }
    memset(&res, 0, sizeof res);
    rc = gw_db_append(rq->h->db, &req, gw_now_ms(), &res, &err);
    if (rc != GW_OK) {
        unsigned st = rc == GW_ESHUTDOWN ? 503 : rc == GW_EFULL ? 507 : 500;
        if (st == 507)   /* the db retries recovery every 10 s */
            gw_resp_header(rs, "Retry-After", "10");
        gw_log(GW_LOG_WARN, "http", "msg=\"remote write storage error\" err=\"%s\"",
               err.msg[0] ? err.msg : gw_strerror(rc));
        gw_resp_text(rs, st, "storage error: %s", err.msg[0] ? err.msg : gw_strerror(rc));
        goto out;
    }
    count_result(rq->h, &res);
    if (res.conflicts || res.out_of_order || res.too_old || res.too_new || res.invalid_series ||
        res.invalid_samples || res.histograms || res.exemplars) {
        char msg[768];
        refused_message(&res, req.n_samples, msg, sizeof msg);
        gw_resp_text(rs, 400, "%s", msg);
    } else {
        gw_buf_reset(&rs->body);
        rs->status = 204;
        rs->content_type = NULL;
    }
    if (v2)
        written_headers(rs, res.accepted + res.duplicates);
out:
    gw_arena_free(&arena);
    gw_buf_free(&pb);
}
