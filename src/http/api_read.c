/* src/http/api_read.c - Prometheus remote read, POST /api/v1/read.
 *
 * Body: snappy(ReadRequest). Every query selects its series (sorted by
 * labels) with samples in [start, end]. Response types:
 *  - SAMPLES: snappy(ReadResponse), Content-Type application/x-protobuf,
 *    Content-Encoding snappy;
 *  - STREAMED_XOR_CHUNKS: Content-Type exactly
 *    "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse",
 *    a sequence of frames (uvarint len | crc32c BE | ChunkedReadResponse),
 *    one series per frame, each series cut into XOR chunks of at most 120
 *    samples; a series whose chunks would make a frame larger than 1 MiB
 *    continues in further frames. The whole answer is built before it is
 *    sent (it is bounded by the sample limit).
 * Over 50e6 samples in total -> 400. Bad request -> 400, storage -> 500. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "gpuwatch/chunk.h"
#include "gpuwatch/rw.h"
#include "http/http_int.h"

#define READ_SAMPLE_LIMIT 50000000u
#define READ_CHUNK_SAMPLES 120
#define READ_FRAME_BYTES ((size_t)1 << 20)
#define READ_MAX_RESPONSE ((size_t)2 << 30)

struct read_ctx {
    struct gw_read_samples *samples;   /* SAMPLES mode */
    struct gw_buf *out;                /* STREAMED mode: frames */
    size_t query_index;
    uint64_t total;                    /* samples so far, all queries */
    struct gw_buf chunk_bytes;         /* scratch: concatenated chunk bytes */
    struct gw_read_chunk *chunks;      /* scratch */
    size_t chunks_cap;
    size_t *chunk_off;                 /* offsets into chunk_bytes */
};

static int flush_frame(struct read_ctx *c, const uint8_t *labels, size_t labels_len, size_t n)
{
    for (size_t i = 0; i < n; i++)
        c->chunks[i].data = c->chunk_bytes.data + c->chunk_off[i];
    int rc = gw_read_chunked_frame(c->out, (int64_t)c->query_index, labels, labels_len, c->chunks, n);
    gw_buf_reset(&c->chunk_bytes);
    return rc;
}

static int on_series_streamed(struct read_ctx *c, const uint8_t *labels, size_t labels_len,
                              const int64_t *t, const double *v, size_t n)
{
    size_t nc = 0, i = 0;
    int rc = GW_OK;
    gw_buf_reset(&c->chunk_bytes);
    while (rc == GW_OK && i < n) {
        struct gw_xor_chunk x;
        size_t k = 0, len = 0;
        const uint8_t *bytes;
        int64_t mint = t[i], maxt = t[i];
        gw_xor_init(&x);
        for (; i < n && k < READ_CHUNK_SAMPLES; i++, k++) {
            rc = gw_xor_append(&x, t[i], v[i]);
            if (rc != GW_OK)
                break;
            maxt = t[i];
        }
        if (rc != GW_OK) {
            gw_xor_free(&x);
            break;
        }
        bytes = gw_xor_bytes(&x, &len);
        if (nc > 0 && c->chunk_bytes.len + len > READ_FRAME_BYTES) {
            rc = flush_frame(c, labels, labels_len, nc);
            nc = 0;
        }
        if (rc == GW_OK && nc == c->chunks_cap) {
            size_t cap = c->chunks_cap ? c->chunks_cap * 2 : 16;
            struct gw_read_chunk *nch = realloc(c->chunks, cap * sizeof *nch);
            size_t *noff = nch ? realloc(c->chunk_off, cap * sizeof *noff) : NULL;
            if (nch)
                c->chunks = nch;
            if (noff)
                c->chunk_off = noff;
            if (nch == NULL || noff == NULL)
                rc = GW_ENOMEM;
            else
                c->chunks_cap = cap;
        }
        if (rc == GW_OK) {
            c->chunk_off[nc] = c->chunk_bytes.len;
            c->chunks[nc].mint = mint;
            c->chunks[nc].maxt = maxt;
            c->chunks[nc].len = len;
            rc = gw_buf_append(&c->chunk_bytes, bytes, len);
            nc++;
        }
        gw_xor_free(&x);
    }
    if (rc == GW_OK && nc > 0)
        rc = flush_frame(c, labels, labels_len, nc);
    return rc;
}

static int on_series(void *ud, uint64_t sid, const uint8_t *labels, size_t labels_len, const int64_t *t,
                     const double *v, size_t n)
{
    struct read_ctx *c = ud;
    (void)sid;
    if (n == 0)
        return GW_OK;
    c->total += n;
    if (c->total > READ_SAMPLE_LIMIT)
        return GW_ELIMIT;
    if (c->samples != NULL)
        return gw_read_samples_add(c->samples, c->query_index, labels, labels_len, t, v, n);
    return on_series_streamed(c, labels, labels_len, t, v, n);
}

void gw_api_read_early(struct gw_http_req *rq)
{
    const char *enc = gw_http_header(rq, "Content-Encoding");
    if (enc != NULL && enc[0] != '\0' && strcasecmp(enc, "snappy") != 0) {
        rq->early_status = 415;
        snprintf(rq->early_msg, sizeof rq->early_msg, "unsupported Content-Encoding \"%.60s\": only snappy",
                 enc);
    }
}

void gw_api_read(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    struct gw_buf pb;
    struct gw_read_request rr;
    struct read_ctx c;
    struct gw_error err;
    int rc;

    memset(&rr, 0, sizeof rr);
    memset(&c, 0, sizeof c);
    gw_buf_init(&pb, GW_RW_MAX_BODY);
    gw_buf_init(&c.chunk_bytes, 0);
    gw_error_clear(&err);

    rc = gw_snappy_decode(rq->body.data, rq->body.len, GW_RW_MAX_BODY, &pb, &err);
    if (rc != GW_OK) {
        gw_resp_text(rs, rc == GW_ENOMEM ? 500 : 400, "snappy decode error: %s",
                     err.msg[0] ? err.msg : gw_strerror(rc));
        goto out;
    }
    rc = gw_read_request_decode(pb.data, pb.len, &rr, &err);
    if (rc != GW_OK) {
        gw_resp_text(rs, rc == GW_ENOMEM ? 500 : 400, "bad read request: %s",
                     err.msg[0] ? err.msg : gw_strerror(rc));
        goto out;
    }
    if (rr.streamed) {
        c.out = &rs->body;
        rs->body.max_bytes = READ_MAX_RESPONSE;
        gw_buf_reset(&rs->body);
    } else {
        c.samples = gw_read_samples_new(rr.n_queries);
        if (c.samples == NULL) {
            gw_resp_text(rs, 500, "out of memory");
            goto out;
        }
    }
    for (size_t i = 0; i < rr.n_queries; i++) {
        struct gw_db_select q;
        struct gw_read_query *rq_ = &rr.queries[i];
        memset(&q, 0, sizeof q);
        q.matchers = rq_->matchers;
        q.n_matchers = rq_->n_matchers;
        q.mint = rq_->start_ms;
        q.maxt = rq_->end_ms;
        q.with_samples = 1;
        q.only_with_data = 1;
        /* 0 would mean unlimited; the callback enforces the exact total. */
        q.max_samples = READ_SAMPLE_LIMIT - c.total ? READ_SAMPLE_LIMIT - c.total : 1;
        c.query_index = i;
        rc = gw_db_select(rq->h->db, &q, on_series, &c, &err);
        if (rc == GW_ELIMIT) {
            gw_resp_text(rs, 400, "exceeded sample limit (%u)", READ_SAMPLE_LIMIT);
            goto out;
        }
        if (rc != GW_OK) {
            unsigned st = (rc == GW_EINVAL || rc == GW_EPARSE) ? 400 : 500;
            gw_resp_text(rs, st, "remote read failed: %s", err.msg[0] ? err.msg : gw_strerror(rc));
            goto out;
        }
    }
    if (c.samples != NULL) {
        gw_buf_reset(&rs->body);
        rs->body.max_bytes = READ_MAX_RESPONSE;
        rc = gw_read_samples_finish(c.samples, &rs->body);
        if (rc != GW_OK) {
            gw_resp_text(rs, rc == GW_ETOOLARGE ? 400 : 500, "cannot encode the response: %s", gw_strerror(rc));
            goto out;
        }
        rs->status = 200;
        rs->content_type = "application/x-protobuf";
        rs->content_encoding = "snappy";
    } else {
        rs->status = 200;
        rs->content_type = "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse";
    }
out:
    gw_read_samples_free(c.samples);
    gw_read_request_free(&rr);
    free(c.chunks);
    free(c.chunk_off);
    gw_buf_free(&c.chunk_bytes);
    gw_buf_free(&pb);
}
