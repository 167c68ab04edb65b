/* fuzz_remote_read.c - libFuzzer target for remote read
 * (src/ingest/remote_read.c): the request decoder behind POST /api/v1/read
 * and the two response decoders (SAMPLES and STREAMED_XOR_CHUNKS) that
 * the client side and the tests use.
 *
 * Input: byte 0 selects the mode (mod 4), the rest is the body:
 *   0  a ReadRequest (decompressed protobuf): whatever decodes must
 *      encode again (gw_read_request_encode) and decode to the same
 *      queries, times and matchers;
 *   1  a SAMPLES ReadResponse (snappy-compressed, as served); bodies that
 *      declare over 1 MiB decompressed are skipped: the decoder allocates
 *      up to its 1 GiB response cap for them, by design, and that only
 *      slows the search;
 *   2  a STREAMED_XOR_CHUNKS body (frames);
 *   3  the same with every whole frame's CRC-32C made right first, so
 *      mutations reach the ChunkedReadResponse and its XOR chunks.
 * The callbacks read every label and sample they are given; results must
 * be GW_OK or a documented error.
 * Build: cmake -B build-fuzz -DCMAKE_C_COMPILER=clang -DGW_FUZZ=ON (docs/fuzzing.md).
 * Seeds: tests/corpus/remote_read/ (fuzz_make_seeds). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/buf.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/labels.h"
#include "gpuwatch/matcher.h"
#include "gpuwatch/rw.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same_request(const struct gw_read_request *a, const struct gw_read_request *b)
{
    if (a->n_queries != b->n_queries || a->streamed != b->streamed)
        return 0;
    for (size_t i = 0; i < a->n_queries; i++) {
        const struct gw_read_query *p = &a->queries[i], *q = &b->queries[i];
        if (p->start_ms != q->start_ms || p->end_ms != q->end_ms || p->n_matchers != q->n_matchers)
            return 0;
        for (size_t j = 0; j < p->n_matchers; j++)
            if (p->matchers[j].type != q->matchers[j].type || strcmp(p->matchers[j].name, q->matchers[j].name) ||
                strcmp(p->matchers[j].value, q->matchers[j].value))
                return 0;
    }
    return 1;
}

static void request(const uint8_t *b, size_t len)
{
    struct gw_read_request r, r2;
    struct gw_error err;
    int rc = gw_read_request_decode(b, len, &r, &err);
    if (rc != GW_OK) {
        if (rc != GW_EPARSE && rc != GW_EINVAL && rc != GW_ENOMEM && rc != GW_ETOOLARGE)
            abort();
        return;
    }
    struct gw_buf e;
    gw_buf_init(&e, 0);
    if (gw_read_request_encode(&r, r.streamed, &e) != GW_OK)
        abort();
    if (gw_read_request_decode(e.data, e.len, &r2, &err) != GW_OK || !same_request(&r, &r2))
        abort();
    for (size_t i = 0; i < r.n_queries; i++)
        for (size_t j = 0; j < r.queries[i].n_matchers; j++)
            (void)gw_matcher_matches(&r.queries[i].matchers[j], "x", 1);
    gw_read_request_free(&r2);
    gw_read_request_free(&r);
    gw_buf_free(&e);
}

static int on_series(void *ud, size_t query_index, const uint8_t *labels, size_t labels_len, const int64_t *t,
                     const double *v, size_t n)
{
    struct gw_label ls[GW_LABELS_MAX];
    size_t nl;
    uint64_t *sum = ud;
    (void)query_index;
    if (gw_labels_decode(labels, labels_len, ls, GW_LABELS_MAX, &nl) == GW_OK)
        for (size_t i = 0; i < nl; i++)
            *sum += ls[i].name_len + ls[i].value_len;
    for (size_t i = 0; i < n; i++) {
        uint64_t u;
        memcpy(&u, &v[i], 8);
        *sum += (uint64_t)t[i] ^ u;
    }
    return GW_OK;
}

/* 1 when the snappy body declares at most 1 MiB decompressed. */
static int small_snappy(const uint8_t *b, size_t len)
{
    struct gw_buf out;
    struct gw_error err;
    gw_buf_init(&out, 0);
    int rc = gw_snappy_decode(b, len, 1u << 20, &out, &err);
    gw_buf_free(&out);
    return rc != GW_ETOOLARGE;
}

/* Gives every whole frame (uvarint len | crc32c BE | msg) its right CRC. */
static void fix_crcs(uint8_t *b, size_t len)
{
    size_t off = 0;
    while (off < len) {
        uint64_t mlen;
        size_t n = gw_uvarint_get(b + off, len - off, &mlen);
        if (n == 0 || mlen > len - off - n || len - off - n - mlen < 4)
            return;
        off += n;
        gw_put_be32(b + off, gw_crc32c(0, b + off + 4, (size_t)mlen));
        off += 4 + (size_t)mlen;
    }
}

static int chunked_fixed(const uint8_t *data, size_t size, uint64_t *sum, struct gw_error *err)
{
    uint8_t *b = malloc(size ? size : 1);
    if (b == NULL)
        return GW_ENOMEM;
    memcpy(b, data, size);
    fix_crcs(b, size);
    int rc = gw_read_chunked_decode(b, size, on_series, sum, err);
    free(b);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gw_error err;
    uint64_t sum = 0;
    int rc;
    if (size < 1)
        return 0;
    switch (data[0] % 4) {
    case 0:
        request(data + 1, size - 1);
        return 0;
    case 1:
        if (!small_snappy(data + 1, size - 1))
            return 0;
        rc = gw_read_response_decode(data + 1, size - 1, on_series, &sum, &err);
        break;
    case 2:
        rc = gw_read_chunked_decode(data + 1, size - 1, on_series, &sum, &err);
        break;
    default:
        rc = chunked_fixed(data + 1, size - 1, &sum, &err);
        break;
    }
    if (rc != GW_OK && rc != GW_EPARSE && rc != GW_ECORRUPT && rc != GW_EUNSUPPORTED && rc != GW_ENOMEM &&
        rc != GW_ETOOLARGE && rc != GW_EINVAL)
        abort();
    return 0;
}
