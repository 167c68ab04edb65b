/* src/http/api_write.c - Prometheus remote write receiver (1.0 and 2.0),
 * POST /api/v1/write.
 *
 * Checks, in order (the first failing one answers):
 *   method not POST                         -> 405, Allow: POST
 *   Content-Encoding not absent or "snappy" -> 415 (absent is snappy, like
 *                                              Prometheus 3's receiver)
 *   Content-Type not a remote-write type    -> 415
 *   body over the server's body cap         -> 413
 *   snappy: declared size over the decoded limit (32 MiB) -> 400;
 *                                              corrupt -> 400
 *   protobuf malformed                      -> 400
 *   more series than the limit              -> 413 (limits.c)
 *   storage failure                         -> 500 (503 when shutting down;
 *                                              507 Insufficient Storage with
 *                                              Retry-After: 10 when the disk
 *                                              is full), the sender retries
 *                                              (Prometheus retries every 5xx,
 *                                              honouring Retry-After)
 *   any sample/series/histogram refused     -> 400 with one line that
 *                                              counts each reason; the valid
 *                                              rest is stored
 *   v2 only: a series with neither samples nor histograms, or with both
 *   (spec: "MUST"), refused whole; an exemplar not kept (out of order,
 *   labels over 128 runes, invalid series) -> 400 likewise
 *   otherwise                               -> 204, empty body.
 * Exemplars go to the exemplar store (gpuwatch/exemplars.h) after the
 * samples. v1 follows Prometheus 2.42's receiver: an exemplar that is not
 * kept is counted, never an error. A store with 0 capacity
 * (--storage.exemplars.max-exemplars=0) keeps none and answers 2xx for
 * both versions (counted as not stored).
 * v2 requests always get X-Prometheus-Remote-Write-{Samples,Histograms,
 * Exemplars}-Written on 2xx and 4xx (samples = accepted + resent
 * duplicates; exemplars = stored + resent duplicates); v1 requests never
 * do. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "gpuwatch/arena.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/exemplars.h"
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

static void written_headers(struct gw_http_resp *rs, uint64_t samples, uint64_t exemplars)
{
    gw_resp_header(rs, "X-Prometheus-Remote-Write-Samples-Written", "%llu", (unsigned long long)samples);
    gw_resp_header(rs, "X-Prometheus-Remote-Write-Histograms-Written", "0");
    gw_resp_header(rs, "X-Prometheus-Remote-Write-Exemplars-Written", "%llu", (unsigned long long)exemplars);
}

/* Remote write 2.0 series that break the spec's shape rules ("At least one
 * element in samples or in histograms MUST be provided. A TimeSeries MUST
 * NOT include both"): refused whole, their samples, histograms and
 * exemplars counted and taken out of the request before it is stored. */
struct v2_shape {
    uint64_t empty, both;                      /* series */
    uint64_t samples, histograms, exemplars;   /* refused with them */
};

static void v2_refuse_bad_shapes(struct gw_rw_request *req, struct v2_shape *sh)
{
    memset(sh, 0, sizeof *sh);
    for (size_t i = 0; i < req->n_series; i++) {
        struct gw_rw_series *rs = &req->series[i];
        int empty = rs->n_samples == 0 && rs->n_histograms == 0;
        int both = rs->n_samples > 0 && rs->n_histograms > 0;
        if (!empty && !both)
            continue;
        sh->empty += (uint64_t)empty;
        sh->both += (uint64_t)both;
        sh->samples += rs->n_samples;
        sh->histograms += rs->n_histograms;
        sh->exemplars += rs->n_exemplars;
        req->n_samples -= rs->n_samples;
        req->n_histograms -= rs->n_histograms;
        req->n_exemplars -= rs->n_exemplars;
        rs->n_samples = rs->n_histograms = rs->n_exemplars = 0;
    }
}

/* The remote-write outcome beyond gw_db_append's: the v2 shape rule and
 * the exemplars. */
struct write_extra {
    struct v2_shape shape;
    struct gw_exemplars_result ex;
    uint64_t limit_exemplars;     /* of series the write limits refused */
    int v2;
};

static uint64_t exemplars_refused(const struct write_extra *x)
{
    return x->ex.out_of_order + x->ex.too_long + x->ex.invalid_series + x->shape.exemplars + x->limit_exemplars;
}

/* The operator's write limits (limits.c); the exemplars of a series they
 * refuse (its samples zeroed) are refused with it. -1 after answering. */
static int write_limits(struct gw_http_req *rq, struct gw_http_resp *rs, struct gw_rw_request *req,
                        struct gw_append_result *over, struct write_extra *x)
{
    uint32_t *had = NULL;
    if (req->n_exemplars > 0 && req->n_series > 0) {
        had = malloc(req->n_series * sizeof *had);
        if (had == NULL) {
            gw_resp_text(rs, 500, "out of memory");
            return -1;
        }
        for (size_t i = 0; i < req->n_series; i++)
            had[i] = req->series[i].n_samples;
    }
    if (gw_http_write_limits(rq, rs, req, over) != 0) {
        free(had);
        return -1;
    }
    for (size_t i = 0; had != NULL && i < req->n_series; i++) {
        struct gw_rw_series *s = &req->series[i];
        if (had[i] > 0 && s->n_samples == 0 && s->n_exemplars > 0) {
            x->limit_exemplars += s->n_exemplars;
            req->n_exemplars -= s->n_exemplars;
            s->n_exemplars = 0;
        }
    }
    free(had);
    return 0;
}

static void append_part(char *msg, size_t cap, size_t *n, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void append_part(char *msg, size_t cap, size_t *n, const char *fmt, ...)
{
    va_list ap;
    int w;
    if (*n >= cap)
        return;
    if (*n > 0) {
        w = snprintf(msg + *n, cap - *n, "; ");
        if (w > 0)
            *n += (size_t)w;
        if (*n >= cap)
            return;
    }
    va_start(ap, fmt);
    w = vsnprintf(msg + *n, cap - *n, fmt, ap);
    va_end(ap);
    if (w > 0)
        *n += (size_t)w;
}

/* The v2 parts of a 400's message (after the samples' part, n bytes in). */
static void v2_message(const struct write_extra *x, char *msg, size_t cap, size_t n)
{
    if (x->shape.empty)
        append_part(msg, cap, &n, "%llu series with neither samples nor histograms (remote write 2.0 requires one)",
                    (unsigned long long)x->shape.empty);
    if (x->shape.both)
        append_part(msg, cap, &n,
                    "%llu series with both samples and histograms (remote write 2.0 requires separate series; "
                    "%llu samples refused with them)",
                    (unsigned long long)x->shape.both, (unsigned long long)x->shape.samples);
    uint64_t ex = x->ex.out_of_order + x->ex.too_long + x->ex.invalid_series;
    if (ex)
        append_part(msg, cap, &n, "%llu exemplars not stored: %llu out of order, %llu with labels over %d runes, "
                    "%llu of invalid series (first: %s)", (unsigned long long)ex,
                    (unsigned long long)x->ex.out_of_order, (unsigned long long)x->ex.too_long,
                    GW_EXEMPLAR_MAX_LABEL_RUNES, (unsigned long long)x->ex.invalid_series, x->ex.first_problem);
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
}

static void count_result(struct gw_http *h, const struct gw_append_result *r, const struct write_extra *x)
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
    atomic_fetch_add(&h->c.refused_exemplars, exemplars_refused(x) + x->ex.disabled);
    atomic_fetch_add(&h->c.refused_histograms, x->shape.histograms);
    atomic_fetch_add(&h->c.refused_invalid_series, x->shape.empty + x->shape.both);
    atomic_fetch_add(&h->c.refused_invalid_samples, x->shape.samples);
    atomic_fetch_add(&h->c.exemplars[GW_EXO_STORED], x->ex.stored);
    atomic_fetch_add(&h->c.exemplars[GW_EXO_DUPLICATE], x->ex.duplicate);
    atomic_fetch_add(&h->c.exemplars[GW_EXO_OUT_OF_ORDER], x->ex.out_of_order);
    atomic_fetch_add(&h->c.exemplars[GW_EXO_TOO_LONG], x->ex.too_long);
    atomic_fetch_add(&h->c.exemplars[GW_EXO_INVALID_SERIES],
                     x->ex.invalid_series + x->shape.exemplars + x->limit_exemplars);
    atomic_fetch_add(&h->c.exemplars[GW_EXO_NOT_STORED], x->ex.disabled);
    atomic_fetch_add(&h->c.metadata_stored, r->metadata);
}

/* Stores a decoded request: the v2 shape rule, the samples (gw_db_append),
 * then the exemplars; answers rs unless the storage failed. */
static void store_request(struct gw_http_req *rq, struct gw_http_resp *rs, struct gw_rw_request *req, int v2)
{
    struct gw_append_result res, over;
    struct write_extra x;
    struct gw_error err;
    uint64_t total = req->n_samples;
    int rc;

    memset(&x, 0, sizeof x);
    memset(&res, 0, sizeof res);
    gw_error_clear(&err);
    x.v2 = v2;
    if (v2)
        v2_refuse_bad_shapes(req, &x.shape);
    if (write_limits(rq, rs, req, &over, &x) != 0) {
        if (v2)
            written_headers(rs, 0, 0);
        return;
    }
    rc = gw_db_append(rq->h->db, req, gw_now_ms(), &res, &err);
    if (rc == GW_OK && gw_exemplars_append(rq->h->opts.exemplars, req, &x.ex) != GW_OK)
        rc = gw_error_set(&err, GW_ENOMEM, "out of memory storing exemplars");
    if (rc != GW_OK) {
        unsigned st = rc == GW_ESHUTDOWN ? 503 : rc == GW_EFULL ? 507 : 500;
        if (st == 507)   /* the db retries recovery every 10 s */
            gw_resp_header(rs, "Retry-After", "10");
        gw_log(GW_LOG_WARN, "http", "msg=\"remote write storage error\" err=\"%s\"",
               err.msg[0] ? err.msg : gw_strerror(rc));
        gw_resp_text(rs, st, "storage error: %s", err.msg[0] ? err.msg : gw_strerror(rc));
        if (v2)   /* nothing is known to be durable: written 0 */
            written_headers(rs, 0, 0);
        return;
    }
    gw_http_write_limits_merge(&res, &over);
    count_result(rq->h, &res, &x);
    uint64_t v2_refused = v2 ? x.shape.empty + x.shape.both + exemplars_refused(&x) : 0;
    if (res.conflicts || res.out_of_order || res.too_old || res.too_new || res.invalid_series ||
        res.invalid_samples || res.histograms || x.shape.histograms || v2_refused) {
        char msg[1024];
        refused_message(&res, total, msg, sizeof msg);
        if (v2)
            v2_message(&x, msg, sizeof msg, strlen(msg));
        gw_resp_text(rs, 400, "%s", msg);
    } else {
        gw_buf_reset(&rs->body);
        rs->status = 204;
        rs->content_type = NULL;
    }
    if (v2)
        written_headers(rs, res.accepted + res.duplicates, x.ex.stored + x.ex.duplicate);
}

void gw_api_write(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    struct gw_buf pb;
    struct gw_arena arena;
    struct gw_rw_request req;
    struct gw_error err;
    size_t decoded_max = rq->h->opts.limits.max_decoded_bytes;
    int v2 = rq->rw_version == 2, rc;

    gw_buf_init(&pb, decoded_max);
    gw_arena_init(&arena, WRITE_ARENA_BLOCK, WRITE_ARENA_MAX);
    gw_error_clear(&err);

    rc = gw_snappy_decode(rq->body.data, rq->body.len, decoded_max, &pb, &err);
    if (rc != GW_OK) {
        if (rc == GW_ENOMEM)
            gw_resp_text(rs, 500, "out of memory decompressing the body");
        else if (rc == GW_ETOOLARGE)
            gw_resp_text(rs, 400, "snappy decode error: %s (--limits.write.max-decoded-bytes)", err.msg);
        else
            gw_resp_text(rs, 400, "snappy decode error: %s", err.msg[0] ? err.msg : gw_strerror(rc));
        if (v2)
            written_headers(rs, 0, 0);
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
            written_headers(rs, 0, 0);
        goto out;
    }
    store_request(rq, rs, &req, v2);
out:
    gw_arena_free(&arena);
    gw_buf_free(&pb);
}
