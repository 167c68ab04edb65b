/* test_remote_read.c - remote read: ReadRequest round trip and response
 * type negotiation, SAMPLES ReadResponse writer -> client decoder (and
 * protobuf-c as an independent reader), STREAMED_XOR_CHUNKS frames with
 * CRC32C checking, the worked frame example from remote_read.c. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "gpuwatch/chunk.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/rw.h"
#include "remote.pb-c.h"
#include "types.pb-c.h"

static uint64_t double_bits(double d)
{
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return b;
}

/* Canonical labels from "name", "value", ... pairs (given sorted). */
static size_t canon(uint8_t *out, size_t n_pairs, const char **kv)
{
    struct gw_label ls[16];
    assert_true(n_pairs <= 16);
    for (size_t i = 0; i < n_pairs; i++) {
        ls[i].name = kv[2 * i];
        ls[i].name_len = (uint32_t)strlen(kv[2 * i]);
        ls[i].value = kv[2 * i + 1];
        ls[i].value_len = (uint32_t)strlen(kv[2 * i + 1]);
    }
    assert_true(gw_labels_encoded_size(ls, n_pairs) <= 512);
    return gw_labels_encode(ls, n_pairs, out);
}

/* ---- request -------------------------------------------------------------- */

static void test_remote_read_request_roundtrip(void **state)
{
    struct gw_read_query q[2];
    struct gw_read_request r, back;
    struct gw_buf buf;
    struct gw_error err = { 0, "" };
    (void)state;

    memset(q, 0, sizeof q);
    q[0].start_ms = -5;
    q[0].end_ms = 1700000000000;
    q[0].n_matchers = 2;
    q[0].matchers = calloc(2, sizeof(struct gw_matcher));
    assert_int_equal(gw_matcher_init(&q[0].matchers[0], GW_MATCH_EQ, "__name__", 8, "DCGM_FI_DEV_GPU_TEMP", 20, &err), GW_OK);
    assert_int_equal(gw_matcher_init(&q[0].matchers[1], GW_MATCH_RE, "gpu", 3, "0|1", 3, &err), GW_OK);
    q[1].start_ms = 10;
    q[1].end_ms = 20;
    q[1].n_matchers = 2;
    q[1].matchers = calloc(2, sizeof(struct gw_matcher));
    assert_int_equal(gw_matcher_init(&q[1].matchers[0], GW_MATCH_NEQ, "job", 3, "", 0, &err), GW_OK);
    assert_int_equal(gw_matcher_init(&q[1].matchers[1], GW_MATCH_NRE, "instance", 8, "a.*", 3, &err), GW_OK);
    r.queries = q;
    r.n_queries = 2;
    r.streamed = 0;

    for (int streamed = 0; streamed <= 1; streamed++) {
        gw_buf_init(&buf, 0);
        assert_int_equal(gw_read_request_encode(&r, streamed, &buf), GW_OK);
        memset(&back, 0xAB, sizeof back);
        if (gw_read_request_decode(buf.data, buf.len, &back, &err) != GW_OK)
            fail_msg("decode: %s", err.msg);
        assert_int_equal(back.streamed, streamed);
        assert_int_equal(back.n_queries, 2);
        for (size_t i = 0; i < 2; i++) {
            assert_int_equal(back.queries[i].start_ms, q[i].start_ms);
            assert_int_equal(back.queries[i].end_ms, q[i].end_ms);
            assert_int_equal(back.queries[i].n_matchers, q[i].n_matchers);
            for (size_t j = 0; j < q[i].n_matchers; j++) {
                assert_int_equal(back.queries[i].matchers[j].type, q[i].matchers[j].type);
                assert_string_equal(back.queries[i].matchers[j].name, q[i].matchers[j].name);
                assert_string_equal(back.queries[i].matchers[j].value, q[i].matchers[j].value);
            }
        }
        /* the compiled regex works */
        assert_true(gw_matcher_matches(&back.queries[0].matchers[1], "1", 1));
        assert_false(gw_matcher_matches(&back.queries[0].matchers[1], "10", 2));
        gw_read_request_free(&back);
        gw_read_request_free(&back);          /* idempotent */
        gw_buf_free(&buf);
    }
    r.queries = NULL;
    for (size_t i = 0; i < 2; i++) {
        for (size_t j = 0; j < q[i].n_matchers; j++)
            gw_matcher_free(&q[i].matchers[j]);
        free(q[i].matchers);
    }
}

static int pack_request(Prometheus__ReadRequest *req, struct gw_buf *out)
{
    size_t n = prometheus__read_request__get_packed_size(req);
    gw_buf_reset(out);
    if (gw_buf_reserve(out, n) != GW_OK)
        return -1;
    out->len = prometheus__read_request__pack(req, out->data);
    return 0;
}

static void test_remote_read_response_type_negotiation(void **state)
{
    static const struct {
        size_t n;
        Prometheus__ReadRequest__ResponseType types[3];
        int want_rc, want_streamed;
    } cases[] = {
        { 0, { 0 }, GW_OK, 0 },
        { 1, { 0 }, GW_OK, 0 },
        { 2, { 1, 0 }, GW_OK, 1 },
        { 2, { 0, 1 }, GW_OK, 0 },
        { 2, { 7, 1 }, GW_OK, 1 },
        { 3, { 9, 8, 0 }, GW_OK, 0 },
        { 1, { 5 }, GW_EINVAL, 0 },
        { 2, { 5, 6 }, GW_EINVAL, 0 },
    };
    struct gw_buf buf;
    (void)state;

    gw_buf_init(&buf, 0);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Prometheus__ReadRequest req = PROMETHEUS__READ_REQUEST__INIT;
        Prometheus__Query q = PROMETHEUS__QUERY__INIT;
        Prometheus__Query *qp = &q;
        Prometheus__ReadRequest__ResponseType types[3];
        struct gw_read_request r;
        struct gw_error err = { 0, "" };
        int rc;

        memcpy(types, cases[i].types, sizeof types);
        q.start_timestamp_ms = 1;
        q.end_timestamp_ms = 2;
        req.n_queries = 1;
        req.queries = &qp;
        req.n_accepted_response_types = cases[i].n;
        req.accepted_response_types = types;
        assert_int_equal(pack_request(&req, &buf), 0);
        rc = gw_read_request_decode(buf.data, buf.len, &r, &err);
        if (rc != cases[i].want_rc)
            fail_msg("case %zu: rc %d want %d (%s)", i, rc, cases[i].want_rc, err.msg);
        if (rc == GW_OK) {
            assert_int_equal(r.streamed, cases[i].want_streamed);
            assert_int_equal(r.n_queries, 1);
            assert_int_equal(r.queries[0].n_matchers, 0);
            gw_read_request_free(&r);
        } else {
            assert_non_null(strstr(err.msg, "no supported response type"));
        }
    }
    gw_buf_free(&buf);
}

static void test_remote_read_request_errors(void **state)
{
    Prometheus__ReadRequest req = PROMETHEUS__READ_REQUEST__INIT;
    Prometheus__Query q = PROMETHEUS__QUERY__INIT;
    Prometheus__Query *qp = &q;
    Prometheus__LabelMatcher m[2], *mp[2];
    struct gw_read_request r;
    struct gw_error err = { 0, "" };
    struct gw_buf buf;
    static const uint8_t junk[] = { 0x0a, 0x05, 0x01 };
    (void)state;

    gw_buf_init(&buf, 0);
    assert_int_equal(gw_read_request_decode(junk, sizeof junk, &r, &err), GW_EPARSE);

    prometheus__label_matcher__init(&m[0]);
    prometheus__label_matcher__init(&m[1]);
    m[0].name = (char *)"__name__";
    m[0].value = (char *)"up";
    m[1].type = PROMETHEUS__LABEL_MATCHER__TYPE__RE;
    m[1].name = (char *)"job";
    m[1].value = (char *)"(unclosed";
    mp[0] = &m[0];
    mp[1] = &m[1];
    q.n_matchers = 2;
    q.matchers = mp;
    req.n_queries = 1;
    req.queries = &qp;
    assert_int_equal(pack_request(&req, &buf), 0);
    assert_int_equal(gw_read_request_decode(buf.data, buf.len, &r, &err), GW_EPARSE);

    m[1].type = (Prometheus__LabelMatcher__Type)9;
    m[1].value = (char *)"x";
    assert_int_equal(pack_request(&req, &buf), 0);
    assert_int_equal(gw_read_request_decode(buf.data, buf.len, &r, &err), GW_EINVAL);
    assert_non_null(strstr(err.msg, "unknown type 9"));
    gw_buf_free(&buf);
}

/* ---- SAMPLES --------------------------------------------------------------- */

struct got_series {
    size_t q;
    uint8_t labels[512];
    size_t labels_len;
    int64_t t[64];
    double v[64];
    size_t n;
};

struct collect {
    struct got_series s[16];
    size_t n;
};

static int collect_cb(void *ud, size_t query_index, const uint8_t *labels, size_t labels_len,
                      const int64_t *t, const double *v, size_t n)
{
    struct collect *c = ud;
    struct got_series *g;
    assert_true(c->n < 16 && n <= 64 && labels_len <= 512);
    g = &c->s[c->n++];
    g->q = query_index;
    memcpy(g->labels, labels, labels_len);
    g->labels_len = labels_len;
    if (n) {
        memcpy(g->t, t, n * sizeof *t);
        memcpy(g->v, v, n * sizeof *v);
    }
    g->n = n;
    return GW_OK;
}

static void test_remote_read_samples_roundtrip(void **state)
{
    static const char *l1[] = { "__name__", "up", "instance", "n1:9400" };
    static const char *l2[] = { "__name__", "gpu_temp", "gpu", "3", "hostname", "n7" };
    uint8_t c1[512], c2[512];
    size_t n1 = canon(c1, 2, l1), n2 = canon(c2, 3, l2);
    int64_t t1[3] = { 1000, 2000, 3000 };
    double v1[3] = { 1, 0, -0.0 };
    int64_t t2[2] = { -7, 0 };
    double v2[2];
    struct gw_read_samples *w;
    struct gw_buf out, raw;
    struct collect col;
    struct gw_error err = { 0, "" };
    (void)state;

    {
        uint64_t stale = 0x7ff0000000000002ull;
        memcpy(&v2[0], &stale, 8);
        v2[1] = 1e300;
    }
    w = gw_read_samples_new(3);
    assert_non_null(w);
    assert_int_equal(gw_read_samples_add(w, 0, c1, n1, t1, v1, 3), GW_OK);
    assert_int_equal(gw_read_samples_add(w, 2, c1, n1, t1, v1, 1), GW_OK);
    assert_int_equal(gw_read_samples_add(w, 2, c2, n2, t2, v2, 2), GW_OK);
    assert_int_equal(gw_read_samples_add(w, 3, c2, n2, t2, v2, 2), GW_EINVAL);
    assert_int_equal(gw_read_samples_add(w, 0, (const uint8_t *)"\x05x", 2, t2, v2, 2), GW_ECORRUPT);
    gw_buf_init(&out, 0);
    assert_int_equal(gw_read_samples_finish(w, &out), GW_OK);
    gw_read_samples_free(w);

    memset(&col, 0, sizeof col);
    if (gw_read_response_decode(out.data, out.len, collect_cb, &col, &err) != GW_OK)
        fail_msg("decode: %s", err.msg);
    assert_int_equal(col.n, 3);
    assert_int_equal(col.s[0].q, 0);
    assert_int_equal(col.s[0].labels_len, n1);
    assert_memory_equal(col.s[0].labels, c1, n1);
    assert_int_equal(col.s[0].n, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(col.s[0].t[i], t1[i]);
        /* protobuf-c reads -0.0 back bit-exact: our writer kept it */
        assert_int_equal(double_bits(col.s[0].v[i]), double_bits(v1[i]));
    }
    assert_int_equal(col.s[1].q, 2);
    assert_int_equal(col.s[1].n, 1);
    assert_int_equal(col.s[2].q, 2);
    assert_memory_equal(col.s[2].labels, c2, n2);
    assert_int_equal(col.s[2].n, 2);
    assert_int_equal(double_bits(col.s[2].v[0]), 0x7ff0000000000002ull);
    assert_int_equal(col.s[2].t[0], -7);
    assert_int_equal(col.s[2].t[1], 0);

    /* independent check: three QueryResults, the middle one empty */
    gw_buf_init(&raw, 0);
    assert_int_equal(gw_snappy_decode(out.data, out.len, GW_RW_MAX_BODY, &raw, &err), GW_OK);
    {
        Prometheus__ReadResponse *resp = prometheus__read_response__unpack(NULL, raw.len, raw.data);
        assert_non_null(resp);
        assert_int_equal(resp->n_results, 3);
        assert_int_equal(resp->results[0]->n_timeseries, 1);
        assert_int_equal(resp->results[1]->n_timeseries, 0);
        assert_int_equal(resp->results[2]->n_timeseries, 2);
        assert_string_equal(resp->results[2]->timeseries[1]->labels[2]->value, "n7");
        prometheus__read_response__free_unpacked(resp, NULL);
    }
    /* corrupt body */
    out.data[out.len / 2] ^= 0xff;
    {
        int rc = gw_read_response_decode(out.data, out.len, collect_cb, &col, &err);
        col.n = 0;
        assert_true(rc == GW_OK || rc == GW_EPARSE);
    }
    gw_buf_free(&raw);
    gw_buf_free(&out);
}

/* ---- STREAMED_XOR_CHUNKS ----------------------------------------------------- */

static void test_remote_read_chunked_worked_example(void **state)
{
    static const char *kv[] = { "__name__", "up" };
    static const uint8_t want_msg[] = {
        0x0a, 0x28,
        0x0a, 0x0e, 0x0a, 0x08, '_', '_', 'n', 'a', 'm', 'e', '_', '_', 0x12, 0x02, 'u', 'p',
        0x12, 0x16, 0x08, 0xe8, 0x07, 0x10, 0xe8, 0x07, 0x18, 0x01, 0x22, 0x0c };
    uint8_t data[12], lab[64];
    size_t nl = canon(lab, 1, kv);
    struct gw_read_chunk ch = { 1000, 1000, data, sizeof data };
    struct gw_buf out;
    (void)state;

    for (int i = 0; i < 12; i++)
        data[i] = (uint8_t)i;
    gw_buf_init(&out, 0);
    assert_int_equal(gw_read_chunked_frame(&out, 0, lab, nl, &ch, 1), GW_OK);
    assert_int_equal(out.len, 47);
    assert_int_equal(out.data[0], 0x2a);
    assert_memory_equal(out.data + 5, want_msg, sizeof want_msg);
    assert_memory_equal(out.data + 5 + sizeof want_msg, data, sizeof data);
    assert_int_equal(gw_get_be32(out.data + 1), gw_crc32c(0, out.data + 5, 42));
    gw_buf_free(&out);
}

static void make_chunk(struct gw_xor_chunk *c, int64_t t0, size_t n, double base)
{
    gw_xor_init(c);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(gw_xor_append(c, t0 + (int64_t)i * 15000, base + (double)i * 0.25), GW_OK);
}

static void test_remote_read_chunked_roundtrip(void **state)
{
    static const char *la[] = { "__name__", "gpu_util", "gpu", "0" };
    static const char *lb[] = { "__name__", "gpu_util", "gpu", "1" };
    uint8_t ca[512], cb[512];
    size_t na = canon(ca, 2, la), nb = canon(cb, 2, lb);
    struct gw_xor_chunk x1, x2, x3;
    struct gw_read_chunk chunks[2];
    struct gw_buf out;
    struct collect col;
    struct gw_error err = { 0, "" };
    const uint8_t *b;
    size_t len, first;
    (void)state;

    make_chunk(&x1, 1000, 20, 10.0);
    make_chunk(&x2, 1000 + 20 * 15000, 10, 50.0);
    make_chunk(&x3, 5000, 5, -3.0);
    gw_buf_init(&out, 0);
    b = gw_xor_bytes(&x1, &len);
    chunks[0] = (struct gw_read_chunk){ 1000, 1000 + 19 * 15000, b, len };
    b = gw_xor_bytes(&x2, &len);
    chunks[1] = (struct gw_read_chunk){ 1000 + 20 * 15000, 1000 + 29 * 15000, b, len };
    assert_int_equal(gw_read_chunked_frame(&out, 0, ca, na, chunks, 2), GW_OK);
    first = out.len;
    b = gw_xor_bytes(&x3, &len);
    chunks[0] = (struct gw_read_chunk){ 5000, 5000 + 4 * 15000, b, len };
    assert_int_equal(gw_read_chunked_frame(&out, 1, cb, nb, chunks, 1), GW_OK);

    memset(&col, 0, sizeof col);
    if (gw_read_chunked_decode(out.data, out.len, collect_cb, &col, &err) != GW_OK)
        fail_msg("decode: %s", err.msg);
    assert_int_equal(col.n, 2);
    assert_int_equal(col.s[0].q, 0);
    assert_memory_equal(col.s[0].labels, ca, na);
    assert_int_equal(col.s[0].n, 30);
    for (size_t i = 0; i < 30; i++) {
        double want = i < 20 ? 10.0 + (double)i * 0.25 : 50.0 + (double)(i - 20) * 0.25;
        assert_int_equal(col.s[0].t[i], 1000 + (int64_t)i * 15000);
        assert_true(col.s[0].v[i] == want);
    }
    assert_int_equal(col.s[1].q, 1);
    assert_memory_equal(col.s[1].labels, cb, nb);
    assert_int_equal(col.s[1].n, 5);
    assert_true(col.s[1].v[4] == -2.0);

    /* every byte of the message covered by the CRC: flip each, expect rejection */
    for (size_t i = 5; i < out.len; i += 7) {
        int rc;
        out.data[i] ^= 0x10;
        col.n = 0;
        rc = gw_read_chunked_decode(out.data, out.len, collect_cb, &col, &err);
        assert_true(rc == GW_ECORRUPT || rc == GW_EPARSE);
        out.data[i] ^= 0x10;
    }
    /* the CRC itself corrupted */
    out.data[2] ^= 0x01;
    col.n = 0;
    assert_int_equal(gw_read_chunked_decode(out.data, out.len, collect_cb, &col, &err), GW_ECORRUPT);
    assert_non_null(strstr(err.msg, "checksum"));
    assert_int_equal(col.n, 0);
    out.data[2] ^= 0x01;
    /* truncations: only the cut at the frame boundary is a valid stream */
    for (size_t cut = 1; cut < out.len; cut++) {
        int rc;
        col.n = 0;
        rc = gw_read_chunked_decode(out.data, cut, collect_cb, &col, &err);
        if (cut == first) {
            assert_int_equal(rc, GW_OK);
            assert_int_equal(col.n, 1);
        } else {
            assert_true(rc == GW_EPARSE || rc == GW_ECORRUPT);
        }
    }
    gw_buf_free(&out);
    gw_xor_free(&x1);
    gw_xor_free(&x2);
    gw_xor_free(&x3);
}

/* The frame message is a valid ChunkedReadResponse for protobuf-c too. */
static void test_remote_read_chunked_frame_protobuf_c(void **state)
{
    static const char *kv[] = { "__name__", "x", "job", "dcgm" };
    uint8_t lab[128];
    size_t nl = canon(lab, 2, kv);
    static const uint8_t d[3] = { 0, 0, 7 };
    struct gw_read_chunk ch[2] = { { -5, 0, d, 3 }, { 0, 9, d, 0 } };
    struct gw_buf out;
    uint64_t mlen;
    size_t hn;
    Prometheus__ChunkedReadResponse *msg;
    (void)state;

    gw_buf_init(&out, 0);
    assert_int_equal(gw_read_chunked_frame(&out, 300, lab, nl, ch, 2), GW_OK);
    hn = gw_uvarint_get(out.data, out.len, &mlen);
    assert_true(hn > 0);
    assert_int_equal(hn + 4 + mlen, out.len);
    msg = prometheus__chunked_read_response__unpack(NULL, (size_t)mlen, out.data + hn + 4);
    assert_non_null(msg);
    assert_int_equal(msg->query_index, 300);
    assert_int_equal(msg->n_chunked_series, 1);
    assert_int_equal(msg->chunked_series[0]->n_labels, 2);
    assert_string_equal(msg->chunked_series[0]->labels[1]->name, "job");
    assert_string_equal(msg->chunked_series[0]->labels[1]->value, "dcgm");
    assert_int_equal(msg->chunked_series[0]->n_chunks, 2);
    assert_int_equal(msg->chunked_series[0]->chunks[0]->min_time_ms, -5);
    assert_int_equal(msg->chunked_series[0]->chunks[0]->type, PROMETHEUS__CHUNK__ENCODING__XOR);
    assert_int_equal(msg->chunked_series[0]->chunks[0]->data.len, 3);
    assert_int_equal(msg->chunked_series[0]->chunks[0]->data.data[2], 7);
    assert_int_equal(msg->chunked_series[0]->chunks[1]->max_time_ms, 9);
    assert_int_equal(msg->chunked_series[0]->chunks[1]->data.len, 0);
    prometheus__chunked_read_response__free_unpacked(msg, NULL);
    gw_buf_free(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_remote_read_request_roundtrip),
        cmocka_unit_test(test_remote_read_response_type_negotiation),
        cmocka_unit_test(test_remote_read_request_errors),
        cmocka_unit_test(test_remote_read_samples_roundtrip),
        cmocka_unit_test(test_remote_read_chunked_worked_example),
        cmocka_unit_test(test_remote_read_chunked_roundtrip),
        cmocka_unit_test(test_remote_read_chunked_frame_protobuf_c),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
