/* remote_read.c - Prometheus remote read: ReadRequest decode/encode
 * (protobuf-c), SAMPLES ReadResponse writer, STREAMED_XOR_CHUNKS frame
 * writer, and the client-side decoders used by tests and benches.
 *
 * SAMPLES body: snappy-block( ReadResponse{ results = 1 repeated
 * QueryResult{ timeseries = 1 repeated TimeSeries } } ), one QueryResult per
 * query, in query order (an empty one is still written: 0a 00). The writer
 * encodes each added series straight into the wire form (no per-sample
 * protobuf-c objects), one buffer per query, then concatenates and
 * compresses at finish.
 *
 * STREAMED_XOR_CHUNKS frame:
 *   uvarint(len(msg)) | CRC32C(msg) as 4 bytes big-endian | msg
 *   msg = ChunkedReadResponse{ chunked_series = 1 (exactly one ChunkedSeries
 *         { labels = 1, chunks = 2 Chunk{ min_time_ms = 1, max_time_ms = 2,
 *         type = 3 (XOR = 1), data = 4 } }), query_index = 2 }
 * Worked example: series {__name__="up"}, one chunk [1000, 1000] with data
 * "00 01 .." of 12 bytes, query 0 (query_index 0 is a proto3 default and is
 * omitted):
 *   msg = 0a 28                          chunked_series, 40 bytes
 *           0a 0e 0a 08 "__name__" 12 02 "up"          labels (16 bytes)
 *           12 16 08 e8 07 10 e8 07 18 01 22 0c <data>  chunk (24 bytes)
 *   frame = 2a | crc32c(msg) big-endian (4 bytes) | msg   (1 + 4 + 42 = 47 bytes)
 *
 * Decoding (client side) goes through protobuf-c with a capped allocator,
 * so the hand-written writers are checked against an independent parser. */
#include <stdlib.h>
#include <string.h>

#include <protobuf-c/protobuf-c.h>
#include "remote.pb-c.h"
#include "types.pb-c.h"

#include "gpuwatch/chunk.h"
#include "gpuwatch/codec.h"
#include "ingest/ingest_int.h"

#define GW_READ_MAX_RESPONSE ((size_t)1 << 30)      /* uncompressed SAMPLES body */
#define GW_READ_MAX_FRAME ((size_t)GW_RW_MAX_BODY)   /* one ChunkedReadResponse */
#define GW_READ_PB_MEM_MAX ((size_t)1 << 30)         /* protobuf-c heap per decode */

/* ---- capped protobuf-c allocator ---------------------------------------- */

struct pb_mem {
    size_t used, max;
};

struct pb_hdr {
    size_t size;
    size_t pad;                       /* keeps the payload 16-byte aligned */
};

static void *pb_alloc(void *ud, size_t n)
{
    struct pb_mem *m = ud;
    struct pb_hdr *h;

    if (n > m->max - m->used || n > SIZE_MAX - sizeof *h)
        return NULL;
    h = malloc(sizeof *h + n);
    if (h == NULL)
        return NULL;
    h->size = n;
    m->used += n;
    return h + 1;
}

static void pb_free(void *ud, void *p)
{
    struct pb_mem *m = ud;
    struct pb_hdr *h;

    if (p == NULL)
        return;
    h = (struct pb_hdr *)p - 1;
    m->used -= h->size;
    free(h);
}

static void pb_allocator(ProtobufCAllocator *a, struct pb_mem *m)
{
    m->used = 0;
    m->max = GW_READ_PB_MEM_MAX;
    a->alloc = pb_alloc;
    a->free = pb_free;
    a->allocator_data = m;
}

/* ---- ReadRequest ---------------------------------------------------------- */

void gw_read_request_free(struct gw_read_request *r)
{
    if (r == NULL)
        return;
    for (size_t i = 0; i < r->n_queries; i++) {
        struct gw_read_query *q = &r->queries[i];
        for (size_t j = 0; j < q->n_matchers; j++)
            gw_matcher_free(&q->matchers[j]);
        free(q->matchers);
    }
    free(r->queries);
    r->queries = NULL;
    r->n_queries = 0;
    r->streamed = 0;
}

int gw_read_request_decode(const uint8_t *pb, size_t len, struct gw_read_request *out,
                           struct gw_error *err)
{
    ProtobufCAllocator alloc;
    struct pb_mem mem;
    Prometheus__ReadRequest *req;
    struct gw_read_request r;
    int rc = GW_OK, chosen = -1;

    if ((pb == NULL && len > 0) || out == NULL)
        return gw_error_set(err, GW_EINVAL, "remote read: invalid arguments");
    if (len > GW_RW_MAX_BODY)
        return gw_error_set(err, GW_ETOOLARGE, "remote read: request of %zu bytes exceeds limit %u",
                            len, (unsigned)GW_RW_MAX_BODY);
    pb_allocator(&alloc, &mem);
    req = prometheus__read_request__unpack(&alloc, len, pb);
    if (req == NULL)
        return gw_error_set(err, GW_EPARSE, "remote read: malformed ReadRequest protobuf");

    memset(&r, 0, sizeof r);
    if (req->n_accepted_response_types == 0)
        chosen = 0;
    for (size_t i = 0; i < req->n_accepted_response_types && chosen < 0; i++) {
        int t = (int)req->accepted_response_types[i];
        if (t == PROMETHEUS__READ_REQUEST__RESPONSE_TYPE__SAMPLES ||
            t == PROMETHEUS__READ_REQUEST__RESPONSE_TYPE__STREAMED_XOR_CHUNKS)
            chosen = t;
    }
    if (chosen < 0) {
        rc = gw_error_set(err, GW_EINVAL, "remote read: no supported response type among %zu accepted",
                          req->n_accepted_response_types);
        goto out;
    }
    r.streamed = chosen == PROMETHEUS__READ_REQUEST__RESPONSE_TYPE__STREAMED_XOR_CHUNKS;

    if (req->n_queries > 0) {
        r.queries = calloc(req->n_queries, sizeof *r.queries);
        if (r.queries == NULL) {
            rc = gw_error_set(err, GW_ENOMEM, "remote read: out of memory");
            goto out;
        }
    }
    for (size_t i = 0; i < req->n_queries; i++) {
        const Prometheus__Query *pq = req->queries[i];
        struct gw_read_query *q = &r.queries[i];

        r.n_queries = i + 1;
        q->start_ms = pq->start_timestamp_ms;
        q->end_ms = pq->end_timestamp_ms;
        if (pq->n_matchers > 0) {
            q->matchers = calloc(pq->n_matchers, sizeof *q->matchers);
            if (q->matchers == NULL) {
                rc = gw_error_set(err, GW_ENOMEM, "remote read: out of memory");
                goto out;
            }
        }
        for (size_t j = 0; j < pq->n_matchers; j++) {
            const Prometheus__LabelMatcher *pm = pq->matchers[j];
            const char *name = pm->name ? pm->name : "";
            const char *value = pm->value ? pm->value : "";
            int type = (int)pm->type;

            if (type < GW_MATCH_EQ || type > GW_MATCH_NRE) {
                rc = gw_error_set(err, GW_EINVAL, "remote read: query %zu matcher %zu has unknown type %d",
                                  i, j, type);
                goto out;
            }
            rc = gw_matcher_init(&q->matchers[j], (enum gw_match_type)type, name, strlen(name), value,
                                 strlen(value), err);
            if (rc != GW_OK)
                goto out;
            q->n_matchers = j + 1;
        }
    }
out:
    prometheus__read_request__free_unpacked(req, &alloc);
    if (rc != GW_OK) {
        gw_read_request_free(&r);
        return rc;
    }
    *out = r;
    return GW_OK;
}

int gw_read_request_encode(const struct gw_read_request *r, int accept_streamed, struct gw_buf *out)
{
    Prometheus__ReadRequest req = PROMETHEUS__READ_REQUEST__INIT;
    Prometheus__ReadRequest__ResponseType types[2];
    Prometheus__Query *qs = NULL, **qps = NULL;
    Prometheus__LabelMatcher *ms = NULL, **mps = NULL;
    size_t n_m = 0, k = 0, size;
    int rc = GW_OK;

    if (r == NULL || out == NULL || (r->n_queries > 0 && r->queries == NULL))
        return GW_EINVAL;
    for (size_t i = 0; i < r->n_queries; i++) {
        if (r->queries[i].n_matchers > 0 && r->queries[i].matchers == NULL)
            return GW_EINVAL;
        n_m += r->queries[i].n_matchers;
    }
    if (r->n_queries > 0) {
        qs = calloc(r->n_queries, sizeof *qs);
        qps = calloc(r->n_queries, sizeof *qps);
    }
    if (n_m > 0) {
        ms = calloc(n_m, sizeof *ms);
        mps = calloc(n_m, sizeof *mps);
    }
    if ((r->n_queries > 0 && (qs == NULL || qps == NULL)) || (n_m > 0 && (ms == NULL || mps == NULL))) {
        rc = GW_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < r->n_queries; i++) {
        const struct gw_read_query *q = &r->queries[i];
        prometheus__query__init(&qs[i]);
        qs[i].start_timestamp_ms = q->start_ms;
        qs[i].end_timestamp_ms = q->end_ms;
        qs[i].n_matchers = q->n_matchers;
        qs[i].matchers = q->n_matchers ? &mps[k] : NULL;
        for (size_t j = 0; j < q->n_matchers; j++, k++) {
            prometheus__label_matcher__init(&ms[k]);
            ms[k].type = (Prometheus__LabelMatcher__Type)q->matchers[j].type;
            ms[k].name = q->matchers[j].name ? q->matchers[j].name : (char *)"";
            ms[k].value = q->matchers[j].value ? q->matchers[j].value : (char *)"";
            mps[k] = &ms[k];
        }
        qps[i] = &qs[i];
    }
    req.n_queries = r->n_queries;
    req.queries = qps;
    if (accept_streamed) {            /* what the Prometheus client sends */
        types[0] = PROMETHEUS__READ_REQUEST__RESPONSE_TYPE__STREAMED_XOR_CHUNKS;
        types[1] = PROMETHEUS__READ_REQUEST__RESPONSE_TYPE__SAMPLES;
        req.n_accepted_response_types = 2;
    } else {
        types[0] = PROMETHEUS__READ_REQUEST__RESPONSE_TYPE__SAMPLES;
        req.n_accepted_response_types = 1;
    }
    req.accepted_response_types = types;

    size = prometheus__read_request__get_packed_size(&req);
    if ((rc = gw_buf_reserve(out, size)) != GW_OK)
        goto out;
    out->len += prometheus__read_request__pack(&req, out->data + out->len);
out:
    free(mps);
    free(ms);
    free(qps);
    free(qs);
    return rc;
}

/* ---- SAMPLES response writer ------------------------------------------------ */

struct gw_read_samples {
    size_t n_queries;
    size_t total;                 /* bytes across all per-query buffers */
    struct gw_buf *results;       /* one QueryResult body per query */
};

struct gw_read_samples *gw_read_samples_new(size_t n_queries)
{
    struct gw_read_samples *w = calloc(1, sizeof *w);
    if (w == NULL)
        return NULL;
    w->n_queries = n_queries;
    if (n_queries > 0) {
        w->results = calloc(n_queries, sizeof *w->results);
        if (w->results == NULL) {
            free(w);
            return NULL;
        }
    }
    for (size_t i = 0; i < n_queries; i++)
        gw_buf_init(&w->results[i], GW_READ_MAX_RESPONSE);
    return w;
}

void gw_read_samples_free(struct gw_read_samples *w)
{
    if (w == NULL)
        return;
    for (size_t i = 0; i < w->n_queries; i++)
        gw_buf_free(&w->results[i]);
    free(w->results);
    free(w);
}

int gw_read_samples_add(struct gw_read_samples *w, size_t query_index, const uint8_t *labels,
                        size_t labels_len, const int64_t *t, const double *v, size_t n)
{
    struct gw_label ls[GW_LABELS_MAX];
    size_t nl = 0, body, field;
    struct gw_buf *b;
    uint8_t *p;
    int rc;

    if (w == NULL || query_index >= w->n_queries || (n > 0 && (t == NULL || v == NULL)) ||
        (labels == NULL && labels_len > 0))
        return GW_EINVAL;
    if (labels_len > 0 && (rc = gw_labels_decode(labels, labels_len, ls, GW_LABELS_MAX, &nl)) != GW_OK)
        return rc;
    if (n > GW_READ_MAX_RESPONSE / 11)          /* a sample takes >= 11 bytes on the wire */
        return GW_ETOOLARGE;
    body = gw_pb_series_size(ls, nl, NULL, t, v, n);
    field = pb_len_field_size(body);
    if (field > GW_READ_MAX_RESPONSE - w->total)
        return GW_ETOOLARGE;
    b = &w->results[query_index];
    if ((rc = gw_buf_reserve(b, field)) != GW_OK)
        return rc;
    p = b->data + b->len;
    *p++ = (uint8_t)PB_KEY(1, PB_WT_LEN);
    p = pb_put_varint(p, body);
    p = gw_pb_put_series(p, ls, nl, NULL, t, v, n);
    b->len += field;
    w->total += field;
    return GW_OK;
}

int gw_read_samples_finish(struct gw_read_samples *w, struct gw_buf *out)
{
    struct gw_buf msg;
    size_t size = 0;
    int rc;

    if (w == NULL || out == NULL)
        return GW_EINVAL;
    for (size_t i = 0; i < w->n_queries; i++)
        size += pb_len_field_size(w->results[i].len);
    gw_buf_init(&msg, 0);
    if ((rc = gw_buf_reserve(&msg, size)) == GW_OK) {
        uint8_t *p = msg.data;
        for (size_t i = 0; i < w->n_queries; i++)
            p = pb_put_len_field(p, PB_KEY(1, PB_WT_LEN), w->results[i].data, w->results[i].len);
        msg.len = size;
        rc = gw_snappy_encode(msg.data, msg.len, out);
    }
    gw_buf_free(&msg);
    return rc;
}

/* ---- STREAMED_XOR_CHUNKS frame writer ---------------------------------- */

static size_t chunk_size(const struct gw_read_chunk *c)
{
    return (c->mint ? 1 + gw_uvarint_len((uint64_t)c->mint) : 0) +
           (c->maxt ? 1 + gw_uvarint_len((uint64_t)c->maxt) : 0) +
           2 +                                          /* type = XOR */
           (c->len ? pb_len_field_size(c->len) : 0);
}

int gw_read_chunked_frame(struct gw_buf *out, int64_t query_index, const uint8_t *labels,
                          size_t labels_len, const struct gw_read_chunk *chunks, size_t n_chunks)
{
    struct gw_label ls[GW_LABELS_MAX];
    size_t nl = 0, series = 0, msg, frame;
    uint8_t *p, *m;
    int rc;

    if (out == NULL || (labels == NULL && labels_len > 0) || (chunks == NULL && n_chunks > 0))
        return GW_EINVAL;
    if (labels_len > 0 && (rc = gw_labels_decode(labels, labels_len, ls, GW_LABELS_MAX, &nl)) != GW_OK)
        return rc;
    for (size_t i = 0; i < nl; i++)
        series += pb_len_field_size(pb_label_size(&ls[i]));
    for (size_t i = 0; i < n_chunks; i++) {
        if (chunks[i].data == NULL && chunks[i].len > 0)
            return GW_EINVAL;
        if (chunks[i].len > GW_READ_MAX_FRAME || series > GW_READ_MAX_FRAME)
            return GW_ETOOLARGE;
        series += pb_len_field_size(chunk_size(&chunks[i]));
    }
    if (series > GW_READ_MAX_FRAME)
        return GW_ETOOLARGE;
    msg = pb_len_field_size(series) + (query_index ? 1 + gw_uvarint_len((uint64_t)query_index) : 0);
    frame = gw_uvarint_len(msg) + 4 + msg;
    if ((rc = gw_buf_reserve(out, frame)) != GW_OK)
        return rc;

    p = pb_put_varint(out->data + out->len, msg);
    m = p + 4;
    p = m;
    *p++ = (uint8_t)PB_KEY(1, PB_WT_LEN);
    p = pb_put_varint(p, series);
    for (size_t i = 0; i < nl; i++) {
        *p++ = (uint8_t)PB_KEY(1, PB_WT_LEN);
        p = pb_put_varint(p, pb_label_size(&ls[i]));
        p = pb_put_label(p, &ls[i]);
    }
    for (size_t i = 0; i < n_chunks; i++) {
        const struct gw_read_chunk *c = &chunks[i];
        *p++ = (uint8_t)PB_KEY(2, PB_WT_LEN);
        p = pb_put_varint(p, chunk_size(c));
        if (c->mint) {
            *p++ = (uint8_t)PB_KEY(1, PB_WT_VARINT);
            p = pb_put_varint(p, (uint64_t)c->mint);
        }
        if (c->maxt) {
            *p++ = (uint8_t)PB_KEY(2, PB_WT_VARINT);
            p = pb_put_varint(p, (uint64_t)c->maxt);
        }
        *p++ = (uint8_t)PB_KEY(3, PB_WT_VARINT);
        *p++ = (uint8_t)PROMETHEUS__CHUNK__ENCODING__XOR;
        if (c->len)
            p = pb_put_len_field(p, PB_KEY(4, PB_WT_LEN), c->data, c->len);
    }
    if (query_index) {
        *p++ = (uint8_t)PB_KEY(2, PB_WT_VARINT);
        p = pb_put_varint(p, (uint64_t)query_index);
    }
    if (GW_NEVER((size_t)(p - m) != msg))
        return GW_EINVAL;
    gw_put_be32(m - 4, gw_crc32c(0, m, msg));
    out->len += frame;
    return GW_OK;
}

/* ---- client side ------------------------------------------------------------- */

/* Canonical label bytes of a protobuf-c label list (strings are NUL-free). */
static int canon_labels(Prometheus__Label **pl, size_t n, struct gw_buf *b)
{
    struct gw_label ls[GW_LABELS_MAX];
    size_t size;
    int rc;

    if (n > GW_LABELS_MAX)
        return GW_ELIMIT;
    for (size_t i = 0; i < n; i++) {
        const char *name = pl[i]->name ? pl[i]->name : "";
        const char *value = pl[i]->value ? pl[i]->value : "";
        size_t nl = strlen(name), vl = strlen(value);
        if (nl > UINT32_MAX || vl > UINT32_MAX)
            return GW_ETOOLARGE;
        ls[i].name = name;
        ls[i].name_len = (uint32_t)nl;
        ls[i].value = value;
        ls[i].value_len = (uint32_t)vl;
    }
    size = gw_labels_encoded_size(ls, n);
    gw_buf_reset(b);
    if ((rc = gw_buf_reserve(b, size)) != GW_OK)
        return rc;
    b->len = gw_labels_encode(ls, n, b->data);
    return GW_OK;
}

/* Growable (t, v) columns. */
struct cols {
    int64_t *t;
    double *v;
    size_t n, cap;
};

static int cols_push(struct cols *c, int64_t t, double v)
{
    if (c->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 128;
        int64_t *nt;
        double *nv;
        if (nc > SIZE_MAX / sizeof(int64_t) || nc > GW_READ_MAX_RESPONSE / 8)
            return GW_ETOOLARGE;
        nt = realloc(c->t, nc * sizeof *nt);
        if (nt == NULL)
            return GW_ENOMEM;
        c->t = nt;
        nv = realloc(c->v, nc * sizeof *nv);
        if (nv == NULL)
            return GW_ENOMEM;
        c->v = nv;
        c->cap = nc;
    }
    c->t[c->n] = t;
    c->v[c->n] = v;
    c->n++;
    return GW_OK;
}

int gw_read_response_decode(const uint8_t *body, size_t len, gw_read_series_cb cb, void *ud,
                            struct gw_error *err)
{
    ProtobufCAllocator alloc;
    struct pb_mem mem;
    Prometheus__ReadResponse *resp = NULL;
    struct gw_buf raw, canon;
    struct cols c = { NULL, NULL, 0, 0 };
    int rc;

    if ((body == NULL && len > 0) || cb == NULL)
        return gw_error_set(err, GW_EINVAL, "remote read: invalid arguments");
    gw_buf_init(&raw, GW_READ_MAX_RESPONSE);
    gw_buf_init(&canon, 0);
    rc = gw_snappy_decode(body, len, GW_READ_MAX_RESPONSE, &raw, err);
    if (rc != GW_OK)
        goto out;
    pb_allocator(&alloc, &mem);
    resp = prometheus__read_response__unpack(&alloc, raw.len, raw.data);
    if (resp == NULL) {
        rc = gw_error_set(err, GW_EPARSE, "remote read: malformed ReadResponse protobuf");
        goto out;
    }
    for (size_t i = 0; i < resp->n_results && rc == GW_OK; i++) {
        const Prometheus__QueryResult *qr = resp->results[i];
        for (size_t j = 0; j < qr->n_timeseries; j++) {
            const Prometheus__TimeSeries *ts = qr->timeseries[j];
            if ((rc = canon_labels(ts->labels, ts->n_labels, &canon)) != GW_OK) {
                gw_error_set(err, rc, "remote read: result %zu series %zu: bad labels", i, j);
                break;
            }
            c.n = 0;
            for (size_t k = 0; k < ts->n_samples && rc == GW_OK; k++)
                rc = cols_push(&c, ts->samples[k]->timestamp, ts->samples[k]->value);
            if (rc != GW_OK) {
                gw_error_set(err, rc, "remote read: result %zu series %zu: too many samples", i, j);
                break;
            }
            if ((rc = cb(ud, i, canon.data, canon.len, c.t, c.v, c.n)) != GW_OK)
                break;
        }
    }
out:
    if (resp != NULL)
        prometheus__read_response__free_unpacked(resp, &alloc);
    free(c.t);
    free(c.v);
    gw_buf_free(&canon);
    gw_buf_free(&raw);
    return rc;
}

int gw_read_chunked_decode(const uint8_t *body, size_t len, gw_read_series_cb cb, void *ud,
                           struct gw_error *err)
{
    struct gw_buf canon;
    struct cols c = { NULL, NULL, 0, 0 };
    size_t off = 0, frame = 0;
    int rc = GW_OK;

    if ((body == NULL && len > 0) || cb == NULL)
        return gw_error_set(err, GW_EINVAL, "remote read: invalid arguments");
    gw_buf_init(&canon, 0);
    while (off < len && rc == GW_OK) {
        ProtobufCAllocator alloc;
        struct pb_mem mem;
        Prometheus__ChunkedReadResponse *msg;
        uint64_t mlen;
        size_t n = gw_uvarint_get(body + off, len - off, &mlen);

        if (n == 0 || mlen > len - off - n || len - off - n - mlen < 4) {
            rc = gw_error_set(err, GW_EPARSE, "remote read: frame %zu at byte %zu is truncated", frame, off);
            break;
        }
        if (mlen > GW_READ_MAX_FRAME) {
            rc = gw_error_set(err, GW_ETOOLARGE, "remote read: frame %zu of %llu bytes exceeds limit %zu",
                              frame, (unsigned long long)mlen, GW_READ_MAX_FRAME);
            break;
        }
        off += n;
        if (gw_get_be32(body + off) != gw_crc32c(0, body + off + 4, (size_t)mlen)) {
            rc = gw_error_set(err, GW_ECORRUPT, "remote read: frame %zu checksum mismatch", frame);
            break;
        }
        off += 4;
        pb_allocator(&alloc, &mem);
        msg = prometheus__chunked_read_response__unpack(&alloc, (size_t)mlen, body + off);
        if (msg == NULL) {
            rc = gw_error_set(err, GW_EPARSE, "remote read: frame %zu: malformed ChunkedReadResponse", frame);
            break;
        }
        off += (size_t)mlen;
        if (msg->query_index < 0)
            rc = gw_error_set(err, GW_EPARSE, "remote read: frame %zu: negative query_index", frame);
        for (size_t i = 0; i < msg->n_chunked_series && rc == GW_OK; i++) {
            const Prometheus__ChunkedSeries *cs = msg->chunked_series[i];
            if ((rc = canon_labels(cs->labels, cs->n_labels, &canon)) != GW_OK) {
                gw_error_set(err, rc, "remote read: frame %zu: bad labels", frame);
                break;
            }
            c.n = 0;
            for (size_t j = 0; j < cs->n_chunks && rc == GW_OK; j++) {
                const Prometheus__Chunk *ch = cs->chunks[j];
                struct gw_xor_iter it;
                int64_t t;
                double v;
                if (ch->type != PROMETHEUS__CHUNK__ENCODING__XOR) {
                    rc = gw_error_set(err, GW_EUNSUPPORTED, "remote read: frame %zu: chunk encoding %d",
                                      frame, (int)ch->type);
                    break;
                }
                if (gw_xor_iter_init(&it, ch->data.data, ch->data.len) != GW_OK) {
                    rc = gw_error_set(err, GW_ECORRUPT, "remote read: frame %zu: bad XOR chunk", frame);
                    break;
                }
                while (rc == GW_OK && gw_xor_iter_next(&it, &t, &v))
                    rc = cols_push(&c, t, v);
                if (rc == GW_OK && it.err != GW_OK)
                    rc = gw_error_set(err, GW_ECORRUPT, "remote read: frame %zu: corrupt XOR chunk", frame);
                else if (rc != GW_OK)
                    gw_error_set(err, rc, "remote read: frame %zu: too many samples", frame);
            }
            if (rc == GW_OK)
                rc = cb(ud, (size_t)msg->query_index, canon.data, canon.len, c.t, c.v, c.n);
        }
        prometheus__chunked_read_response__free_unpacked(msg, &alloc);
        frame++;
    }
    free(c.t);
    free(c.v);
    gw_buf_free(&canon);
    return rc;
}
