/* test_rw.c - remote write: snappy, the zero-copy v1/v2 decoder (checked
 * against bodies packed by protobuf-c), the v1 encoder (checked byte for
 * byte against protobuf-c), Content-Type negotiation, and robustness on
 * truncated and corrupted bodies. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/rw.h"
#include "remote.pb-c.h"
#include "types.pb-c.h"
#include "write_v2.pb-c.h"

#define STALE_NAN_BITS 0x7ff0000000000002ull

/* ---- deterministic random ------------------------------------------------ */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    rng_state = x;
    return x;
}

static double bits_to_double(uint64_t b)
{
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

static uint64_t double_bits(double d)
{
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return b;
}

/* Random but never -0.0 (protobuf-c drops it as a proto3 default). */
static double rnd_value(void)
{
    switch (rnd() % 6) {
    case 0: return bits_to_double(STALE_NAN_BITS);
    case 1: return bits_to_double(0x7ff8000000000001ull);
    case 2: return (double)(int64_t)(rnd() % 1000);
    case 3: return 0.0;
    default: {
        uint64_t b = rnd();
        if (b == 0x8000000000000000ull)
            b = 1;
        return bits_to_double(b);
    }
    }
}

static int64_t rnd_ts(void)
{
    switch (rnd() % 4) {
    case 0: return -(int64_t)(rnd() % 100000);
    case 1: return 0;
    default: return (int64_t)(rnd() % 4000000000000ull);
    }
}

static char *rnd_str(size_t min, size_t max)
{
    size_t n = min + (size_t)(rnd() % (max - min + 1));
    char *s = malloc(n + 1);
    assert_non_null(s);
    for (size_t i = 0; i < n; i++)
        s[i] = (char)('a' + rnd() % 26);
    s[n] = 0;
    return s;
}

/* ---- a random v1 request built as protobuf-c objects ------------------- */

struct v1_model {
    Prometheus__WriteRequest req;
    Prometheus__TimeSeries *ts;
    Prometheus__TimeSeries **tsp;
    Prometheus__MetricMetadata *md;
    Prometheus__MetricMetadata **mdp;
};

static void v1_model_build(struct v1_model *m, size_t n_series, size_t n_md, int with_extras)
{
    prometheus__write_request__init(&m->req);
    m->ts = calloc(n_series + 1, sizeof *m->ts);
    m->tsp = calloc(n_series + 1, sizeof *m->tsp);
    m->md = calloc(n_md + 1, sizeof *m->md);
    m->mdp = calloc(n_md + 1, sizeof *m->mdp);
    assert_true(m->ts && m->tsp && m->md && m->mdp);
    for (size_t i = 0; i < n_series; i++) {
        Prometheus__TimeSeries *t = &m->ts[i];
        size_t nl = 1 + rnd() % 12, ns = rnd() % 5;
        prometheus__time_series__init(t);
        t->n_labels = nl;
        t->labels = calloc(nl, sizeof *t->labels);
        for (size_t j = 0; j < nl; j++) {
            Prometheus__Label *l = malloc(sizeof *l);
            prometheus__label__init(l);
            l->name = j == 0 ? strdup("__name__") : rnd_str(1, 12);
            l->value = rnd_str(rnd() % 8 == 0 ? 0 : 1, 40);
            t->labels[j] = l;
        }
        t->n_samples = ns;
        t->samples = calloc(ns + 1, sizeof *t->samples);
        for (size_t j = 0; j < ns; j++) {
            Prometheus__Sample *s = malloc(sizeof *s);
            prometheus__sample__init(s);
            s->value = rnd_value();
            s->timestamp = rnd_ts();
            t->samples[j] = s;
        }
        if (with_extras && rnd() % 3 == 0) {
            size_t ne = 1 + rnd() % 3;
            t->n_exemplars = ne;
            t->exemplars = calloc(ne, sizeof *t->exemplars);
            for (size_t j = 0; j < ne; j++) {
                Prometheus__Exemplar *e = malloc(sizeof *e);
                Prometheus__Label *l = malloc(sizeof *l);
                prometheus__exemplar__init(e);
                prometheus__label__init(l);
                l->name = strdup("trace_id");
                l->value = rnd_str(8, 16);
                e->n_labels = 1;
                e->labels = malloc(sizeof *e->labels);
                e->labels[0] = l;
                e->value = rnd_value();
                e->timestamp = rnd_ts();
                t->exemplars[j] = e;
            }
        }
        if (with_extras && rnd() % 3 == 0) {
            Prometheus__Histogram *h = malloc(sizeof *h);
            Prometheus__BucketSpan *sp = malloc(sizeof *sp);
            prometheus__histogram__init(h);
            prometheus__bucket_span__init(sp);
            h->count_case = PROMETHEUS__HISTOGRAM__COUNT_COUNT_INT;
            h->count_int = 7;
            h->sum = 3.25;
            h->schema = -2;
            sp->offset = -1;
            sp->length = 2;
            h->n_positive_spans = 1;
            h->positive_spans = malloc(sizeof *h->positive_spans);
            h->positive_spans[0] = sp;
            h->n_positive_deltas = 2;
            h->positive_deltas = malloc(2 * sizeof *h->positive_deltas);
            h->positive_deltas[0] = 3;
            h->positive_deltas[1] = -1;
            h->timestamp = 99;
            t->n_histograms = 1;
            t->histograms = malloc(sizeof *t->histograms);
            t->histograms[0] = h;
        }
        m->tsp[i] = t;
    }
    for (size_t i = 0; i < n_md; i++) {
        prometheus__metric_metadata__init(&m->md[i]);
        m->md[i].type = (Prometheus__MetricMetadata__MetricType)(rnd() % 8);
        m->md[i].metric_family_name = rnd_str(1, 20);
        m->md[i].help = rnd_str(0, 60);
        m->md[i].unit = rnd_str(0, 6);
        m->mdp[i] = &m->md[i];
    }
    m->req.n_timeseries = n_series;
    m->req.timeseries = m->tsp;
    m->req.n_metadata = n_md;
    m->req.metadata = m->mdp;
}

static void v1_model_free(struct v1_model *m)
{
    for (size_t i = 0; i < m->req.n_timeseries; i++) {
        Prometheus__TimeSeries *t = &m->ts[i];
        for (size_t j = 0; j < t->n_labels; j++) {
            free(t->labels[j]->name);
            free(t->labels[j]->value);
            free(t->labels[j]);
        }
        for (size_t j = 0; j < t->n_samples; j++)
            free(t->samples[j]);
        for (size_t j = 0; j < t->n_exemplars; j++) {
            free(t->exemplars[j]->labels[0]->name);
            free(t->exemplars[j]->labels[0]->value);
            free(t->exemplars[j]->labels[0]);
            free(t->exemplars[j]->labels);
            free(t->exemplars[j]);
        }
        for (size_t j = 0; j < t->n_histograms; j++) {
            free(t->histograms[j]->positive_spans[0]);
            free(t->histograms[j]->positive_spans);
            free(t->histograms[j]->positive_deltas);
            free(t->histograms[j]);
        }
        free(t->labels);
        free(t->samples);
        free(t->exemplars);
        free(t->histograms);
    }
    for (size_t i = 0; i < m->req.n_metadata; i++) {
        free(m->md[i].metric_family_name);
        free(m->md[i].help);
        free(m->md[i].unit);
    }
    free(m->ts);
    free(m->tsp);
    free(m->md);
    free(m->mdp);
}

static uint8_t *v1_model_pack(const struct v1_model *m, size_t *len)
{
    size_t n = prometheus__write_request__get_packed_size(&m->req);
    uint8_t *b = malloc(n ? n : 1);
    assert_non_null(b);
    assert_int_equal(prometheus__write_request__pack(&m->req, b), n);
    *len = n;
    return b;
}

static void assert_span(const char *p, size_t n, const char *want)
{
    assert_int_equal(n, strlen(want));
    if (n)
        assert_memory_equal(p, want, n);
}

static void assert_v1_equal(const struct v1_model *m, const struct gw_rw_request *r)
{
    uint64_t total = 0, hist = 0, ex = 0;

    assert_int_equal(r->version, 1);
    assert_int_equal(r->n_series, m->req.n_timeseries);
    for (size_t i = 0; i < r->n_series; i++) {
        const Prometheus__TimeSeries *t = m->tsp[i];
        const struct gw_rw_series *s = &r->series[i];
        assert_int_equal(s->n_labels, t->n_labels);
        for (size_t j = 0; j < t->n_labels; j++) {
            assert_span(s->labels[j].name, s->labels[j].name_len, t->labels[j]->name);
            assert_span(s->labels[j].value, s->labels[j].value_len, t->labels[j]->value);
        }
        assert_int_equal(s->n_samples, t->n_samples);
        for (size_t j = 0; j < t->n_samples; j++) {
            assert_int_equal(s->samples[j].t, t->samples[j]->timestamp);
            assert_int_equal(double_bits(s->samples[j].v), double_bits(t->samples[j]->value));
        }
        assert_int_equal(s->n_exemplars, t->n_exemplars);
        for (size_t j = 0; j < t->n_exemplars; j++) {
            const Prometheus__Exemplar *x = t->exemplars[j];
            const struct gw_rw_exemplar *e = &s->exemplars[j];
            assert_int_equal(e->t, x->timestamp);
            assert_int_equal(double_bits(e->v), double_bits(x->value));
            assert_int_equal(e->n_labels, x->n_labels);
            for (size_t q = 0; q < x->n_labels; q++) {
                assert_span(e->labels[q].name, e->labels[q].name_len, x->labels[q]->name);
                assert_span(e->labels[q].value, e->labels[q].value_len, x->labels[q]->value);
            }
        }
        assert_int_equal(s->n_histograms, t->n_histograms);
        total += t->n_samples;
        hist += t->n_histograms;
        ex += t->n_exemplars;
    }
    assert_int_equal(r->n_samples, total);
    assert_int_equal(r->n_histograms, hist);
    assert_int_equal(r->n_exemplars, ex);
    assert_int_equal(r->n_metadata, m->req.n_metadata);
    for (size_t i = 0; i < r->n_metadata; i++) {
        assert_int_equal(r->metadata[i].type, m->md[i].type);
        assert_span(r->metadata[i].name, r->metadata[i].name_len, m->md[i].metric_family_name);
        assert_span(r->metadata[i].help, r->metadata[i].help_len, m->md[i].help);
        assert_span(r->metadata[i].unit, r->metadata[i].unit_len, m->md[i].unit);
    }
}

/* ---- tests: v1 ---------------------------------------------------------- */

static void test_rw_v1_random_roundtrip(void **state)
{
    (void)state;
    for (int iter = 0; iter < 200; iter++) {
        struct v1_model m;
        struct gw_arena a;
        struct gw_rw_request r;
        struct gw_error err = { 0, "" };
        size_t len;
        uint8_t *body;

        v1_model_build(&m, rnd() % 40, rnd() % 4, 1);
        body = v1_model_pack(&m, &len);
        gw_arena_init(&a, 4096, 0);
        assert_int_equal(gw_rw_decode(body, len, 1, &a, &r, &err), GW_OK);
        assert_v1_equal(&m, &r);
        gw_arena_free(&a);
        free(body);
        v1_model_free(&m);
    }
}

static void test_rw_v1_stale_nan_bit_exact(void **state)
{
    struct v1_model m;
    struct gw_arena a;
    struct gw_rw_request r;
    size_t len;
    uint8_t *body;
    (void)state;

    v1_model_build(&m, 1, 0, 0);
    for (size_t i = 0; i < m.ts[0].n_samples; i++)
        free(m.ts[0].samples[i]);
    m.ts[0].n_samples = 0;
    free(m.ts[0].samples);
    m.ts[0].samples = calloc(3, sizeof *m.ts[0].samples);
    for (int i = 0; i < 3; i++) {
        m.ts[0].samples[i] = malloc(sizeof(Prometheus__Sample));
        prometheus__sample__init(m.ts[0].samples[i]);
        m.ts[0].samples[i]->timestamp = 1000 * (i + 1);
    }
    m.ts[0].samples[0]->value = bits_to_double(STALE_NAN_BITS);
    m.ts[0].samples[1]->value = bits_to_double(0x7ff8000000000001ull);
    m.ts[0].samples[2]->value = -INFINITY;
    m.ts[0].n_samples = 3;
    body = v1_model_pack(&m, &len);
    gw_arena_init(&a, 0, 0);
    assert_int_equal(gw_rw_decode(body, len, 1, &a, &r, NULL), GW_OK);
    assert_int_equal(r.series[0].n_samples, 3);
    assert_int_equal(double_bits(r.series[0].samples[0].v), STALE_NAN_BITS);
    assert_int_equal(double_bits(r.series[0].samples[1].v), 0x7ff8000000000001ull);
    assert_true(isinf(r.series[0].samples[2].v) && r.series[0].samples[2].v < 0);
    assert_int_equal(r.series[0].samples[2].t, 3000);
    gw_arena_free(&a);
    free(body);
    v1_model_free(&m);
}

/* The worked example at the top of rw_decode.c. */
static void test_rw_v1_worked_example(void **state)
{
    static const uint8_t body[] = {
        0x0a, 0x1e, 0x0a, 0x0e, 0x0a, 0x08, '_', '_', 'n', 'a', 'm', 'e', '_', '_',
        0x12, 0x02, 'u', 'p', 0x12, 0x0c, 0x09, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f,
        0x10, 0xe8, 0x07 };
    struct gw_arena a;
    struct gw_rw_request r;
    struct gw_buf enc;
    (void)state;

    assert_int_equal(sizeof body, 32);
    gw_arena_init(&a, 0, 0);
    assert_int_equal(gw_rw_decode(body, sizeof body, 1, &a, &r, NULL), GW_OK);
    assert_int_equal(r.n_series, 1);
    assert_span(r.series[0].labels[0].name, r.series[0].labels[0].name_len, "__name__");
    assert_span(r.series[0].labels[0].value, r.series[0].labels[0].value_len, "up");
    assert_true(r.series[0].samples[0].v == 1.0);
    assert_int_equal(r.series[0].samples[0].t, 1000);
    /* zero-copy: label strings point into the body */
    assert_ptr_equal(r.series[0].labels[0].value, (const char *)body + 16);

    gw_buf_init(&enc, 0);
    assert_int_equal(gw_rw_encode_v1(&r, &enc), GW_OK);
    assert_int_equal(enc.len, sizeof body);
    assert_memory_equal(enc.data, body, sizeof body);
    gw_buf_free(&enc);
    gw_arena_free(&a);
}

static void test_rw_v1_encode_matches_protobuf_c(void **state)
{
    (void)state;
    for (int iter = 0; iter < 100; iter++) {
        struct v1_model m;
        struct gw_arena a;
        struct gw_rw_request r;
        struct gw_buf enc;
        size_t len;
        uint8_t *body;

        v1_model_build(&m, rnd() % 30, rnd() % 3, 0);
        body = v1_model_pack(&m, &len);
        gw_arena_init(&a, 0, 0);
        assert_int_equal(gw_rw_decode(body, len, 1, &a, &r, NULL), GW_OK);
        gw_buf_init(&enc, 0);
        assert_int_equal(gw_rw_encode_v1(&r, &enc), GW_OK);
        assert_int_equal(enc.len, len);
        if (len)
            assert_memory_equal(enc.data, body, len);
        gw_buf_free(&enc);
        gw_arena_free(&a);
        free(body);
        v1_model_free(&m);
    }
}

static void test_rw_v1_negative_zero_survives(void **state)
{
    struct gw_label l = { "__name__", 8, "x", 1 };
    struct gw_sample s = { -5, -0.0 };
    struct gw_rw_series ser = { &l, 1, &s, 1, 0, 0, NULL };
    struct gw_rw_request req = { 1, &ser, 1, NULL, 0, 1, 0, 0 };
    struct gw_rw_request r;
    struct gw_arena a;
    struct gw_buf enc;
    (void)state;

    gw_buf_init(&enc, 0);
    gw_arena_init(&a, 0, 0);
    assert_int_equal(gw_rw_encode_v1(&req, &enc), GW_OK);
    assert_int_equal(gw_rw_decode(enc.data, enc.len, 1, &a, &r, NULL), GW_OK);
    assert_int_equal(double_bits(r.series[0].samples[0].v), 0x8000000000000000ull);
    assert_int_equal(r.series[0].samples[0].t, -5);
    gw_arena_free(&a);
    gw_buf_free(&enc);
}

/* ---- hand-built wire bodies ------------------------------------------- */

struct wb {
    uint8_t b[4096];
    size_t n;
};

static void wb_raw(struct wb *w, const void *p, size_t n)
{
    assert_true(w->n + n <= sizeof w->b);
    memcpy(w->b + w->n, p, n);
    w->n += n;
}

static void wb_varint(struct wb *w, uint64_t v)
{
    while (v >= 0x80) {
        uint8_t c = (uint8_t)(v | 0x80);
        wb_raw(w, &c, 1);
        v >>= 7;
    }
    uint8_t c = (uint8_t)v;
    wb_raw(w, &c, 1);
}

static void wb_key(struct wb *w, unsigned field, unsigned wt)
{
    wb_varint(w, (uint64_t)field << 3 | wt);
}

static void wb_bytes(struct wb *w, unsigned field, const void *p, size_t n)
{
    wb_key(w, field, 2);
    wb_varint(w, n);
    wb_raw(w, p, n);
}

static void wb_str(struct wb *w, unsigned field, const char *s)
{
    wb_bytes(w, field, s, strlen(s));
}

static void wb_msg(struct wb *w, unsigned field, const struct wb *sub)
{
    wb_bytes(w, field, sub->b, sub->n);
}

static void wb_double(struct wb *w, unsigned field, double v)
{
    uint64_t b = double_bits(v);
    uint8_t le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (uint8_t)(b >> (8 * i));
    wb_key(w, field, 1);
    wb_raw(w, le, 8);
}

/* Unknown fields of every accepted wire type, with high field numbers. */
static void wb_unknowns(struct wb *w)
{
    static const uint8_t f32[4] = { 1, 2, 3, 4 };
    wb_key(w, 99, 0);
    wb_varint(w, 0xFFFFFFFFFFFFFFFFull);       /* 10-byte varint */
    wb_double(w, 100, 2.5);
    wb_str(w, 5000, "ignored");
    wb_key(w, 536870911, 5);                   /* max field number */
    wb_raw(w, f32, 4);
}

static void test_rw_unknown_fields_skipped(void **state)
{
    struct wb label = { .n = 0 }, sample = { .n = 0 }, ts = { .n = 0 }, md = { .n = 0 }, req = { .n = 0 };
    struct gw_arena a;
    struct gw_rw_request r;
    struct gw_error err = { 0, "" };
    (void)state;

    wb_unknowns(&label);
    wb_str(&label, 1, "__name__");
    wb_unknowns(&label);
    wb_str(&label, 2, "gpu_temp");
    wb_unknowns(&label);

    wb_unknowns(&sample);
    wb_double(&sample, 1, 42.5);
    wb_unknowns(&sample);
    wb_key(&sample, 2, 0);
    wb_varint(&sample, 1700000000000ull);

    wb_unknowns(&ts);
    wb_msg(&ts, 1, &label);
    wb_unknowns(&ts);
    wb_msg(&ts, 2, &sample);
    wb_unknowns(&ts);

    wb_key(&md, 1, 0);
    wb_varint(&md, 2);
    wb_unknowns(&md);
    wb_str(&md, 2, "gpu_temp");
    wb_key(&md, 3, 0);                          /* field 3 is unused upstream */
    wb_varint(&md, 5);
    wb_str(&md, 4, "help me");
    wb_str(&md, 5, "celsius");

    wb_unknowns(&req);
    wb_msg(&req, 1, &ts);
    wb_str(&req, 2, "cortex source (reserved)");
    wb_msg(&req, 3, &md);
    wb_unknowns(&req);

    gw_arena_init(&a, 0, 0);
    assert_int_equal(gw_rw_decode(req.b, req.n, 1, &a, &r, &err), GW_OK);
    assert_int_equal(r.n_series, 1);
    assert_int_equal(r.series[0].n_labels, 1);
    assert_span(r.series[0].labels[0].name, r.series[0].labels[0].name_len, "__name__");
    assert_span(r.series[0].labels[0].value, r.series[0].labels[0].value_len, "gpu_temp");
    assert_int_equal(r.series[0].n_samples, 1);
    assert_true(r.series[0].samples[0].v == 42.5);
    assert_int_equal(r.series[0].samples[0].t, 1700000000000ll);
    assert_int_equal(r.n_metadata, 1);
    assert_int_equal(r.metadata[0].type, 2);
    assert_span(r.metadata[0].help, r.metadata[0].help_len, "help me");
    assert_span(r.metadata[0].unit, r.metadata[0].unit_len, "celsius");
    gw_arena_free(&a);
}

static void expect_parse_error(const struct wb *w, int version, const char *needle)
{
    struct gw_arena a;
    struct gw_rw_request r;
    struct gw_error err = { 0, "" };

    gw_arena_init(&a, 0, 0);
    assert_int_equal(gw_rw_decode(w->b, w->n, version, &a, &r, &err), GW_EPARSE);
    assert_int_equal(err.code, GW_EPARSE);
    if (needle != NULL && strstr(err.msg, needle) == NULL)
        fail_msg("error \"%s\" lacks \"%s\"", err.msg, needle);
    gw_arena_free(&a);
}

static void test_rw_bad_wire_rejected(void **state)
{
    struct wb w;
    (void)state;

    /* group start at top level */
    memset(&w, 0, sizeof w);
    wb_key(&w, 7, 3);
    expect_parse_error(&w, 1, "group");
    /* group end inside a series */
    {
        struct wb ts = { .n = 0 };
        wb_key(&ts, 8, 4);
        memset(&w, 0, sizeof w);
        wb_msg(&w, 1, &ts);
        expect_parse_error(&w, 1, "group");
    }
    /* wire type 7 */
    memset(&w, 0, sizeof w);
    wb_key(&w, 9, 7);
    expect_parse_error(&w, 1, "wire type 7");
    /* field number 0 */
    memset(&w, 0, sizeof w);
    wb_varint(&w, 2);
    wb_varint(&w, 0);
    expect_parse_error(&w, 1, "field number 0");
    /* 11-byte varint */
    memset(&w, 0, sizeof w);
    wb_key(&w, 20, 0);
    for (int i = 0; i < 10; i++)
        wb_raw(&w, "\x80", 1);
    wb_raw(&w, "\x01", 1);
    expect_parse_error(&w, 1, "varint");
    /* 10-byte varint whose last byte overflows 64 bits */
    memset(&w, 0, sizeof w);
    wb_key(&w, 20, 0);
    for (int i = 0; i < 9; i++)
        wb_raw(&w, "\xff", 1);
    wb_raw(&w, "\x02", 1);
    expect_parse_error(&w, 2, "varint");
    /* timeseries with the wrong wire type */
    memset(&w, 0, sizeof w);
    wb_key(&w, 1, 0);
    wb_varint(&w, 1);
    expect_parse_error(&w, 1, "wrong wire type");
    /* sample value as varint */
    {
        struct wb s = { .n = 0 }, ts = { .n = 0 };
        wb_key(&s, 1, 0);
        wb_varint(&s, 5);
        wb_msg(&ts, 2, &s);
        memset(&w, 0, sizeof w);
        wb_msg(&w, 1, &ts);
        expect_parse_error(&w, 1, "wrong wire type");
    }
    /* length overrunning the enclosing message */
    {
        struct wb ts = { .n = 0 };
        wb_key(&ts, 1, 2);
        wb_varint(&ts, 50);
        wb_raw(&ts, "abc", 3);
        memset(&w, 0, sizeof w);
        wb_msg(&w, 1, &ts);
        expect_parse_error(&w, 1, "overruns");
    }
}

/* ---- v2 encoder (the forwarder's) ------------------------------------- */

/* gw_rw_encode_v2 output decodes, with the product decoder and with
 * protobuf-c, to the same series, labels and sample bits; symbols are
 * deduplicated with symbols[0] = "". */
static void test_rw_encode_v2_roundtrip(void **state)
{
    (void)state;
    enum { NS = 40 };
    static char vals[NS][16];
    struct gw_label ls[NS][3];
    struct gw_sample smp[NS][4];
    struct gw_rw_series ser[NS];
    const uint64_t special[4] = {0x7ff0000000000002ull /* stale */, 0x8000000000000000ull /* -0 */,
                                 0x7ff8dead0000beefull /* NaN payload */, 0};
    for (size_t i = 0; i < NS; i++) {
        snprintf(vals[i], sizeof vals[i], "n%zu", i % 7);          /* hosts shared by several series */
        ls[i][0] = (struct gw_label){"__name__", 8, i % 2 ? "gpu_temp" : "gpu_power", 9};
        ls[i][1] = (struct gw_label){"gpu", 3, i % 3 ? "1" : "gpu_temp" /* a value that is a name too */,
                                     i % 3 ? 1u : 8u};
        ls[i][2] = (struct gw_label){"host", 4, vals[i], (uint32_t)strlen(vals[i])};
        if (i % 2) ls[i][0].value_len = 8;
        for (size_t j = 0; j < 4; j++)
            smp[i][j] = (struct gw_sample){(int64_t)(i * 1000 + j) - 5000, bits_to_double(special[(i + j) % 4])};
        ser[i] = (struct gw_rw_series){.labels = ls[i], .n_labels = 3, .samples = smp[i],
                                       .n_samples = (uint32_t)(i % 5)};
    }
    ser[NS - 1].n_labels = 0;                 /* a series without labels: no labels_refs */
    struct gw_rw_request req = {.version = 2, .series = ser, .n_series = NS};
    struct gw_buf b;
    gw_buf_init(&b, 0);
    assert_int_equal(gw_rw_encode_v2(&req, &b), GW_OK);
    assert_true(b.len > 2 && b.data[0] == 0x22 && b.data[1] == 0x00);    /* symbols[0] = "" */

    struct gw_arena a;
    struct gw_rw_request got;
    struct gw_error e = {0};
    gw_arena_init(&a, 0, 0);
    assert_int_equal(gw_rw_decode(b.data, b.len, 2, &a, &got, &e), GW_OK);
    assert_int_equal(got.n_series, NS);
    for (size_t i = 0; i < NS; i++) {
        assert_int_equal(got.series[i].n_labels, ser[i].n_labels);
        for (uint32_t k = 0; k < ser[i].n_labels; k++) {
            const struct gw_label *x = &got.series[i].labels[k], *y = &ser[i].labels[k];
            assert_int_equal(x->name_len, y->name_len);
            assert_memory_equal(x->name, y->name, y->name_len);
            assert_int_equal(x->value_len, y->value_len);
            assert_memory_equal(x->value, y->value, y->value_len);
        }
        assert_int_equal(got.series[i].n_samples, ser[i].n_samples);
        for (uint32_t j = 0; j < ser[i].n_samples; j++) {
            assert_int_equal(got.series[i].samples[j].t, ser[i].samples[j].t);
            assert_int_equal(double_bits(got.series[i].samples[j].v), double_bits(ser[i].samples[j].v));
        }
    }
    /* protobuf-c agrees; every string once: "", __name__, gpu_power, gpu, gpu_temp, host, n0..n6, 1 */
    Io__Prometheus__Write__V2__Request *pr = io__prometheus__write__v2__request__unpack(NULL, b.len, b.data);
    assert_non_null(pr);
    assert_int_equal(pr->n_symbols, 1 + 5 + 7 + 1);
    assert_string_equal(pr->symbols[0], "");
    for (size_t i = 0; i < pr->n_symbols; i++)
        for (size_t j = i + 1; j < pr->n_symbols; j++) assert_string_not_equal(pr->symbols[i], pr->symbols[j]);
    assert_int_equal(pr->n_timeseries, NS);
    assert_int_equal(pr->timeseries[NS - 1]->n_labels_refs, 0);
    io__prometheus__write__v2__request__free_unpacked(pr, NULL);

    /* appends; an empty request is just symbols[0] */
    size_t before = b.len;
    struct gw_rw_request none = {.version = 2};
    assert_int_equal(gw_rw_encode_v2(&none, &b), GW_OK);
    assert_int_equal(b.len, before + 2);
    assert_memory_equal(b.data + before, "\x22\x00", 2);

    /* the spec forbids empty label names and values: refused, out untouched */
    ls[0][2].value_len = 0;
    assert_int_equal(gw_rw_encode_v2(&req, &b), GW_EINVAL);
    ls[0][2].value_len = 2;
    ls[0][1].name_len = 0;
    assert_int_equal(gw_rw_encode_v2(&req, &b), GW_EINVAL);
    assert_int_equal(b.len, before + 2);
    assert_int_equal(gw_rw_encode_v2(NULL, &b), GW_EINVAL);
    gw_arena_free(&a);
    gw_buf_free(&b);
}

/* ---- v2 ---------------------------------------------------------------- */

struct v2_model {
    Io__Prometheus__Write__V2__Request req;
    char **syms;
    Io__Prometheus__Write__V2__TimeSeries *ts;
    Io__Prometheus__Write__V2__TimeSeries **tsp;
};

static void v2_model_free(struct v2_model *m)
{
    for (size_t i = 0; i < m->req.n_timeseries; i++) {
        Io__Prometheus__Write__V2__TimeSeries *t = &m->ts[i];
        for (size_t j = 0; j < t->n_samples; j++)
            free(t->samples[j]);
        free(t->samples);
        free(t->labels_refs);
        for (size_t j = 0; j < t->n_exemplars; j++) {
            free(t->exemplars[j]->labels_refs);
            free(t->exemplars[j]);
        }
        free(t->exemplars);
        for (size_t j = 0; j < t->n_histograms; j++)
            free(t->histograms[j]);
        free(t->histograms);
        free(t->metadata);
    }
    for (size_t i = 0; i < m->req.n_symbols; i++)
        free(m->syms[i]);
    free(m->syms);
    free(m->ts);
    free(m->tsp);
}

static void v2_model_build(struct v2_model *m, size_t n_series)
{
    size_t n_syms = 1 + 30;
    io__prometheus__write__v2__request__init(&m->req);
    m->syms = calloc(n_syms, sizeof *m->syms);
    m->syms[0] = strdup("");
    m->syms[1] = strdup("__name__");
    for (size_t i = 2; i < n_syms; i++)
        m->syms[i] = rnd_str(1, 10);
    m->req.n_symbols = n_syms;
    m->req.symbols = m->syms;
    m->ts = calloc(n_series + 1, sizeof *m->ts);
    m->tsp = calloc(n_series + 1, sizeof *m->tsp);
    for (size_t i = 0; i < n_series; i++) {
        Io__Prometheus__Write__V2__TimeSeries *t = &m->ts[i];
        size_t nl = 1 + rnd() % 8, ns = 1 + rnd() % 3;
        io__prometheus__write__v2__time_series__init(t);
        t->n_labels_refs = 2 * nl;
        t->labels_refs = calloc(2 * nl, sizeof *t->labels_refs);
        t->labels_refs[0] = 1;                              /* __name__ */
        t->labels_refs[1] = (uint32_t)(2 + rnd() % (n_syms - 2));
        for (size_t j = 1; j < nl; j++) {
            t->labels_refs[2 * j] = (uint32_t)(2 + rnd() % (n_syms - 2));
            t->labels_refs[2 * j + 1] = (uint32_t)(2 + rnd() % (n_syms - 2));
        }
        t->n_samples = ns;
        t->samples = calloc(ns, sizeof *t->samples);
        for (size_t j = 0; j < ns; j++) {
            t->samples[j] = malloc(sizeof **t->samples);
            io__prometheus__write__v2__sample__init(t->samples[j]);
            t->samples[j]->value = rnd_value();
            t->samples[j]->timestamp = rnd_ts();
            t->samples[j]->start_timestamp = rnd() % 2 ? 17 : 0;
        }
        if (rnd() % 2) {
            t->n_exemplars = 2;
            t->exemplars = calloc(2, sizeof *t->exemplars);
            for (int j = 0; j < 2; j++) {
                t->exemplars[j] = malloc(sizeof **t->exemplars);
                io__prometheus__write__v2__exemplar__init(t->exemplars[j]);
                t->exemplars[j]->value = rnd_value();
                t->exemplars[j]->timestamp = rnd_ts();
                size_t nel = rnd() % 3;   /* 0..2 labels, any symbols */
                t->exemplars[j]->n_labels_refs = 2 * nel;
                t->exemplars[j]->labels_refs = calloc(2 * nel + 1, sizeof(uint32_t));
                for (size_t q = 0; q < 2 * nel; q++)
                    t->exemplars[j]->labels_refs[q] = (uint32_t)(rnd() % n_syms);
            }
        }
        if (rnd() % 3 == 0) {
            t->n_histograms = 1;
            t->histograms = calloc(1, sizeof *t->histograms);
            t->histograms[0] = malloc(sizeof **t->histograms);
            io__prometheus__write__v2__histogram__init(t->histograms[0]);
            t->histograms[0]->count_case = IO__PROMETHEUS__WRITE__V2__HISTOGRAM__COUNT_COUNT_FLOAT;
            t->histograms[0]->count_float = 2.5;
            t->histograms[0]->start_timestamp = 1;
        }
        if (rnd() % 2) {
            t->metadata = malloc(sizeof *t->metadata);
            io__prometheus__write__v2__metadata__init(t->metadata);
            t->metadata->type = (Io__Prometheus__Write__V2__Metadata__MetricType)(1 + rnd() % 7);
            t->metadata->help_ref = (uint32_t)(rnd() % n_syms);
            t->metadata->unit_ref = (uint32_t)(rnd() % n_syms);
        }
        t->created_timestamp = rnd() % 2 ? 1700000000000ll : 0;
        m->tsp[i] = t;
    }
    m->req.n_timeseries = n_series;
    m->req.timeseries = m->tsp;
}

static uint8_t *v2_model_pack(const struct v2_model *m, size_t *len)
{
    size_t n = io__prometheus__write__v2__request__get_packed_size(&m->req);
    uint8_t *b = malloc(n ? n : 1);
    assert_non_null(b);
    assert_int_equal(io__prometheus__write__v2__request__pack(&m->req, b), n);
    *len = n;
    return b;
}

static void assert_v2_equal(const struct v2_model *m, const struct gw_rw_request *r)
{
    size_t md = 0;
    assert_int_equal(r->version, 2);
    assert_int_equal(r->n_series, m->req.n_timeseries);
    for (size_t i = 0; i < r->n_series; i++) {
        const Io__Prometheus__Write__V2__TimeSeries *t = m->tsp[i];
        const struct gw_rw_series *s = &r->series[i];
        assert_int_equal(s->n_labels, t->n_labels_refs / 2);
        for (size_t j = 0; j < s->n_labels; j++) {
            assert_span(s->labels[j].name, s->labels[j].name_len, m->syms[t->labels_refs[2 * j]]);
            assert_span(s->labels[j].value, s->labels[j].value_len, m->syms[t->labels_refs[2 * j + 1]]);
        }
        assert_int_equal(s->n_samples, t->n_samples);
        for (size_t j = 0; j < t->n_samples; j++) {
            assert_int_equal(s->samples[j].t, t->samples[j]->timestamp);
            assert_int_equal(double_bits(s->samples[j].v), double_bits(t->samples[j]->value));
        }
        assert_int_equal(s->n_exemplars, t->n_exemplars);
        for (size_t j = 0; j < t->n_exemplars; j++) {
            const Io__Prometheus__Write__V2__Exemplar *x = t->exemplars[j];
            const struct gw_rw_exemplar *e = &s->exemplars[j];
            assert_int_equal(e->t, x->timestamp);
            assert_int_equal(double_bits(e->v), double_bits(x->value));
            assert_int_equal(e->n_labels, x->n_labels_refs / 2);
            for (size_t q = 0; q < e->n_labels; q++) {
                assert_span(e->labels[q].name, e->labels[q].name_len, m->syms[x->labels_refs[2 * q]]);
                assert_span(e->labels[q].value, e->labels[q].value_len, m->syms[x->labels_refs[2 * q + 1]]);
            }
        }
        assert_int_equal(s->n_histograms, t->n_histograms);
        if (t->metadata != NULL) {
            const struct gw_rw_metadata *g = &r->metadata[md++];
            assert_true(md <= r->n_metadata);
            assert_int_equal(g->type, t->metadata->type);
            assert_span(g->help, g->help_len, m->syms[t->metadata->help_ref]);
            assert_span(g->unit, g->unit_len, m->syms[t->metadata->unit_ref]);
            assert_span(g->name, g->name_len, m->syms[t->labels_refs[1]]);
        }
    }
    assert_int_equal(r->n_metadata, md);
}

static void test_rw_v2_random_roundtrip(void **state)
{
    (void)state;
    for (int iter = 0; iter < 200; iter++) {
        struct v2_model m;
        struct gw_arena a;
        struct gw_rw_request r;
        struct gw_error err = { 0, "" };
        size_t len;
        uint8_t *body;

        v2_model_build(&m, rnd() % 30);
        body = v2_model_pack(&m, &len);
        gw_arena_init(&a, 0, 0);
        if (gw_rw_decode(body, len, 2, &a, &r, &err) != GW_OK)
            fail_msg("decode: %s", err.msg);
        assert_v2_equal(&m, &r);
        gw_arena_free(&a);
        free(body);
        v2_model_free(&m);
    }
}

/* labels_refs unpacked (one varint field per ref) and mixed with packed;
 * symbols after the series; metadata split over two fields (merged). */
static void test_rw_v2_unpacked_refs(void **state)
{
    struct wb ts = { .n = 0 }, smp = { .n = 0 }, md1 = { .n = 0 }, md2 = { .n = 0 }, req = { .n = 0 };
    struct wb packed = { .n = 0 };
    struct gw_arena a;
    struct gw_rw_request r;
    struct gw_error err = { 0, "" };
    (void)state;

    wb_key(&ts, 1, 0); wb_varint(&ts, 1);     /* __name__ */
    wb_key(&ts, 1, 0); wb_varint(&ts, 2);     /* "dcgm_temp" */
    wb_varint(&packed, 3);                    /* gpu */
    wb_varint(&packed, 200);                  /* "7" - a 2-byte varint ref */
    wb_msg(&ts, 1, &packed);
    wb_double(&smp, 1, 71.0);
    wb_key(&smp, 2, 0); wb_varint(&smp, 5000);
    wb_key(&smp, 3, 0); wb_varint(&smp, 4000);  /* start_timestamp */
    wb_msg(&ts, 2, &smp);
    wb_key(&md1, 1, 0); wb_varint(&md1, 2);     /* gauge */
    wb_msg(&ts, 5, &md1);
    wb_key(&md2, 3, 0); wb_varint(&md2, 4);     /* help_ref */
    wb_msg(&ts, 5, &md2);
    wb_key(&ts, 6, 0); wb_varint(&ts, 1234);    /* created_timestamp */

    wb_msg(&req, 5, &ts);
    wb_str(&req, 4, "");
    wb_str(&req, 4, "__name__");
    wb_str(&req, 4, "dcgm_temp");
    wb_str(&req, 4, "gpu");
    wb_str(&req, 4, "GPU temperature");
    for (int i = 5; i < 200; i++)
        wb_str(&req, 4, "x");
    wb_str(&req, 4, "7");

    gw_arena_init(&a, 0, 0);
    if (gw_rw_decode(req.b, req.n, 2, &a, &r, &err) != GW_OK)
        fail_msg("decode: %s", err.msg);
    assert_int_equal(r.n_series, 1);
    assert_int_equal(r.series[0].n_labels, 2);
    assert_span(r.series[0].labels[0].value, r.series[0].labels[0].value_len, "dcgm_temp");
    assert_span(r.series[0].labels[1].name, r.series[0].labels[1].name_len, "gpu");
    assert_span(r.series[0].labels[1].value, r.series[0].labels[1].value_len, "7");
    assert_true(r.series[0].samples[0].v == 71.0);
    assert_int_equal(r.series[0].samples[0].t, 5000);
    assert_int_equal(r.n_metadata, 1);
    assert_int_equal(r.metadata[0].type, 2);
    assert_span(r.metadata[0].help, r.metadata[0].help_len, "GPU temperature");
    assert_span(r.metadata[0].name, r.metadata[0].name_len, "dcgm_temp");
    assert_int_equal(r.metadata[0].unit_len, 0);
    gw_arena_free(&a);
}

static void test_rw_v2_rules(void **state)
{
    struct wb ts, req;
    (void)state;

    /* symbols[0] must be "" */
    memset(&req, 0, sizeof req);
    wb_str(&req, 4, "oops");
    expect_parse_error(&req, 2, "symbols[0]");

    /* odd labels_refs */
    memset(&ts, 0, sizeof ts);
    memset(&req, 0, sizeof req);
    wb_key(&ts, 1, 0); wb_varint(&ts, 0);
    wb_str(&req, 4, "");
    wb_msg(&req, 5, &ts);
    expect_parse_error(&req, 2, "odd length");

    /* ref out of range, named in the message */
    memset(&ts, 0, sizeof ts);
    memset(&req, 0, sizeof req);
    wb_key(&ts, 1, 0); wb_varint(&ts, 0);
    wb_key(&ts, 1, 0); wb_varint(&ts, 9);
    wb_str(&req, 4, "");
    wb_str(&req, 4, "a");
    wb_msg(&req, 5, &ts);
    expect_parse_error(&req, 2, "label ref 9 out of range (2 symbols)");

    /* refs with no symbols at all */
    memset(&ts, 0, sizeof ts);
    memset(&req, 0, sizeof req);
    wb_key(&ts, 1, 0); wb_varint(&ts, 0);
    wb_key(&ts, 1, 0); wb_varint(&ts, 0);
    wb_msg(&req, 5, &ts);
    expect_parse_error(&req, 2, "label ref 0 out of range (0 symbols)");

    /* metadata ref out of range */
    {
        struct wb md = { .n = 0 };
        memset(&ts, 0, sizeof ts);
        memset(&req, 0, sizeof req);
        wb_key(&md, 4, 0); wb_varint(&md, 3);
        wb_msg(&ts, 5, &md);
        wb_str(&req, 4, "");
        wb_msg(&req, 5, &ts);
        expect_parse_error(&req, 2, "unit_ref 3 out of range");
    }

    /* packed refs with a truncated varint */
    memset(&ts, 0, sizeof ts);
    memset(&req, 0, sizeof req);
    wb_bytes(&ts, 1, "\x00\x80", 2);
    wb_str(&req, 4, "");
    wb_msg(&req, 5, &ts);
    expect_parse_error(&req, 2, "labels_refs");

    /* exemplar label refs: odd count, out of range, wrong wire type of value */
    {
        struct wb ex = { .n = 0 };
        memset(&ts, 0, sizeof ts);
        memset(&req, 0, sizeof req);
        wb_key(&ex, 1, 0); wb_varint(&ex, 1);
        wb_msg(&ts, 4, &ex);
        wb_str(&req, 4, "");
        wb_str(&req, 4, "a");
        wb_msg(&req, 5, &ts);
        expect_parse_error(&req, 2, "exemplar labels_refs has odd length 1");
        memset(&ex, 0, sizeof ex);
        memset(&ts, 0, sizeof ts);
        memset(&req, 0, sizeof req);
        wb_key(&ex, 1, 0); wb_varint(&ex, 1);
        wb_key(&ex, 1, 0); wb_varint(&ex, 7);
        wb_msg(&ts, 4, &ex);
        wb_str(&req, 4, "");
        wb_str(&req, 4, "a");
        wb_msg(&req, 5, &ts);
        expect_parse_error(&req, 2, "label ref 7 out of range (2 symbols)");
        memset(&ex, 0, sizeof ex);
        memset(&ts, 0, sizeof ts);
        memset(&req, 0, sizeof req);
        wb_key(&ex, 2, 0); wb_varint(&ex, 1);
        wb_msg(&ts, 4, &ex);
        wb_str(&req, 4, "");
        wb_msg(&req, 5, &ts);
        expect_parse_error(&req, 2, "wrong wire type 0 for field 2 (value) of Exemplar");
    }
}

/* A body of one version read with the other schema is empty, not an error. */
static void test_rw_cross_version_is_empty(void **state)
{
    struct v1_model m1;
    struct v2_model m2;
    struct gw_arena a;
    struct gw_rw_request r;
    size_t l1, l2;
    uint8_t *b1, *b2;
    (void)state;

    v1_model_build(&m1, 5, 1, 1);
    v2_model_build(&m2, 5);
    b1 = v1_model_pack(&m1, &l1);
    b2 = v2_model_pack(&m2, &l2);
    gw_arena_init(&a, 0, 0);
    assert_int_equal(gw_rw_decode(b1, l1, 2, &a, &r, NULL), GW_OK);
    assert_int_equal(r.n_series, 0);
    assert_int_equal(gw_rw_decode(b2, l2, 1, &a, &r, NULL), GW_OK);
    assert_int_equal(r.n_series, 0);
    assert_int_equal(r.n_metadata, 0);
    assert_int_equal(gw_rw_decode(b2, l2, 3, &a, &r, NULL), GW_EINVAL);
    gw_arena_free(&a);
    free(b1);
    free(b2);
    v1_model_free(&m1);
    v2_model_free(&m2);
}

static void test_rw_arena_ceiling(void **state)
{
    struct v1_model m;
    struct gw_arena a;
    struct gw_rw_request r;
    struct gw_error err = { 0, "" };
    size_t len;
    uint8_t *body;
    (void)state;

    v1_model_build(&m, 200, 0, 0);
    body = v1_model_pack(&m, &len);
    gw_arena_init(&a, 1024, 2048);
    assert_int_equal(gw_rw_decode(body, len, 1, &a, &r, &err), GW_ENOMEM);
    assert_non_null(strstr(err.msg, "arena"));
    gw_arena_free(&a);
    free(body);
    v1_model_free(&m);
}

/* Every prefix and many random corruptions: GW_OK or GW_EPARSE, never a
 * crash or an out-of-bounds read (ASan). Each input is copied into an
 * exactly-sized heap block so any overread is caught. */
static void fuzz_one(const uint8_t *src, size_t n, int version)
{
    struct gw_arena a;
    struct gw_rw_request r;
    struct gw_error err = { 0, "" };
    uint8_t *copy = malloc(n ? n : 1);
    int rc;

    assert_non_null(copy);
    if (n)
        memcpy(copy, src, n);
    gw_arena_init(&a, 0, 64u << 20);
    rc = gw_rw_decode(copy, n, version, &a, &r, &err);
    if (rc != GW_OK && rc != GW_EPARSE)
        fail_msg("rc %d (%s) for a %zu-byte body", rc, err.msg, n);
    if (rc == GW_OK) {
        for (size_t i = 0; i < r.n_series; i++) {
            for (uint32_t j = 0; j < r.series[i].n_labels; j++) {
                const struct gw_label *l = &r.series[i].labels[j];
                /* strings point into the body (or are empty) */
                if (l->name_len)
                    assert_true((const uint8_t *)l->name >= copy &&
                                (const uint8_t *)l->name + l->name_len <= copy + n);
                if (l->value_len)
                    assert_true((const uint8_t *)l->value >= copy &&
                                (const uint8_t *)l->value + l->value_len <= copy + n);
            }
        }
    }
    gw_arena_free(&a);
    free(copy);
}

static void test_rw_truncation_and_flips(void **state)
{
    struct v1_model m1;
    struct v2_model m2;
    size_t l1, l2;
    uint8_t *b1, *b2;
    (void)state;

    v1_model_build(&m1, 12, 2, 1);
    v2_model_build(&m2, 12);
    b1 = v1_model_pack(&m1, &l1);
    b2 = v2_model_pack(&m2, &l2);
    for (size_t i = 0; i <= l1; i++)
        fuzz_one(b1, i, 1);
    for (size_t i = 0; i <= l2; i++)
        fuzz_one(b2, i, 2);
    for (int iter = 0; iter < 4000; iter++) {
        int v = iter & 1 ? 2 : 1;
        const uint8_t *src = v == 1 ? b1 : b2;
        size_t n = v == 1 ? l1 : l2;
        uint8_t *c = malloc(n);
        int flips = 1 + (int)(rnd() % 4);
        memcpy(c, src, n);
        for (int k = 0; k < flips; k++) {
            size_t pos = (size_t)(rnd() % n);
            if (rnd() % 2)
                c[pos] ^= (uint8_t)(1u << (rnd() % 8));
            else
                c[pos] = (uint8_t)rnd();
        }
        fuzz_one(c, n, v);
        fuzz_one(c, n, 3 - v);
        free(c);
    }
    free(b1);
    free(b2);
    v1_model_free(&m1);
    v2_model_free(&m2);
}

/* ---- snappy --------------------------------------------------------------- */

static void test_rw_snappy_roundtrip(void **state)
{
    struct gw_buf comp, plain;
    uint8_t data[10000];
    struct gw_error err = { 0, "" };
    (void)state;

    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)(i % 7 == 0 ? rnd() : 'a' + i % 3);
    gw_buf_init(&comp, 0);
    gw_buf_init(&plain, 0);
    assert_int_equal(gw_snappy_encode(data, sizeof data, &comp), GW_OK);
    assert_true(comp.len < sizeof data);
    assert_int_equal(gw_snappy_decode(comp.data, comp.len, sizeof data, &plain, &err), GW_OK);
    assert_int_equal(plain.len, sizeof data);
    assert_memory_equal(plain.data, data, sizeof data);
    /* one byte under the declared length is refused */
    assert_int_equal(gw_snappy_decode(comp.data, comp.len, sizeof data - 1, &plain, &err), GW_ETOOLARGE);
    /* empty payload */
    gw_buf_reset(&comp);
    assert_int_equal(gw_snappy_encode(NULL, 0, &comp), GW_OK);
    assert_int_equal(gw_snappy_decode(comp.data, comp.len, 10, &plain, &err), GW_OK);
    assert_int_equal(plain.len, 0);
    gw_buf_free(&comp);
    gw_buf_free(&plain);
}

static void test_rw_snappy_length_cap_before_alloc(void **state)
{
    /* uvarint 1 GiB = 0x40000000 -> 80 80 80 80 04, then a little junk */
    static const uint8_t bomb[] = { 0x80, 0x80, 0x80, 0x80, 0x04, 0x00, 0x61 };
    static const uint8_t forty_m[] = { 0x80, 0xb4, 0x89, 0x13, 0x00 };   /* 40000000 */
    struct gw_buf out;
    struct gw_error err = { 0, "" };
    (void)state;

    gw_buf_init(&out, 0);
    assert_int_equal(gw_snappy_decode(bomb, sizeof bomb, GW_RW_MAX_BODY, &out, &err), GW_ETOOLARGE);
    assert_int_equal(out.cap, 0);                  /* nothing allocated */
    assert_non_null(strstr(err.msg, "1073741824"));
    assert_int_equal(gw_snappy_decode(forty_m, sizeof forty_m, GW_RW_MAX_BODY, &out, &err), GW_ETOOLARGE);
    assert_string_equal(err.msg, "snappy: decoded length 40000000 exceeds limit 33554432");
    assert_int_equal(out.cap, 0);
    /* a buffer ceiling below the cap also refuses without writing */
    gw_buf_free(&out);
    gw_buf_init(&out, 100);
    {
        uint8_t data[1000];
        struct gw_buf comp;
        memset(data, 'z', sizeof data);
        gw_buf_init(&comp, 0);
        assert_int_equal(gw_snappy_encode(data, sizeof data, &comp), GW_OK);
        assert_int_equal(gw_snappy_decode(comp.data, comp.len, GW_RW_MAX_BODY, &out, &err), GW_ETOOLARGE);
        gw_buf_free(&comp);
    }
    gw_buf_free(&out);
}

static void test_rw_snappy_corrupt(void **state)
{
    struct gw_buf comp, out;
    struct gw_error err = { 0, "" };
    uint8_t data[3000];
    (void)state;

    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)(i % 13 == 0 ? rnd() : 'q');
    gw_buf_init(&comp, 0);
    gw_buf_init(&out, 0);
    assert_int_equal(gw_snappy_encode(data, sizeof data, &comp), GW_OK);
    for (size_t cut = 0; cut < comp.len; cut++) {
        int rc = gw_snappy_decode(comp.data, cut, GW_RW_MAX_BODY, &out, &err);
        assert_int_equal(rc, GW_EPARSE);
        assert_string_equal(err.msg, "snappy: corrupt input");
    }
    /* overlong length varint */
    {
        static const uint8_t bad[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
        assert_int_equal(gw_snappy_decode(bad, sizeof bad, GW_RW_MAX_BODY, &out, &err), GW_EPARSE);
    }
    /* random flips: OK or EPARSE */
    for (int iter = 0; iter < 500; iter++) {
        uint8_t *c = malloc(comp.len);
        int rc;
        memcpy(c, comp.data, comp.len);
        c[rnd() % comp.len] ^= (uint8_t)(1u << (rnd() % 8));
        rc = gw_snappy_decode(c, comp.len, GW_RW_MAX_BODY, &out, &err);
        assert_true(rc == GW_OK || rc == GW_EPARSE || rc == GW_ETOOLARGE);
        free(c);
    }
    gw_buf_free(&comp);
    gw_buf_free(&out);
}

/* ---- Content-Type ----------------------------------------------------------- */

static void test_rw_content_type_table(void **state)
{
    static const struct {
        const char *ct;
        int want;
    } cases[] = {
        { NULL, 1 },
        { "", 1 },
        { "   ", 1 },
        { "application/x-protobuf", 1 },
        { "Application/X-Protobuf", 1 },
        { " application/x-protobuf ", 1 },
        { "application/x-protobuf;proto=prometheus.WriteRequest", 1 },
        { "application/x-protobuf; proto=prometheus.WriteRequest", 1 },
        { "application/x-protobuf;proto=io.prometheus.write.v2.Request", 2 },
        { "application/x-protobuf; PROTO = io.prometheus.write.v2.Request", 2 },
        { "application/x-protobuf;charset=utf-8;proto=io.prometheus.write.v2.Request", 2 },
        { "application/x-protobuf;charset=utf-8", 1 },
        { "application/x-protobuf;proto=\"io.prometheus.write.v2.Request\"", 2 },
        { "application/x-protobuf;proto=io.prometheus.write.v3.Request", GW_EUNSUPPORTED },
        { "application/x-protobuf;proto=", GW_EUNSUPPORTED },
        { "application/x-protobuf;proto", GW_EUNSUPPORTED },
        { "application/x-protobuf;a=b=c", GW_EUNSUPPORTED },
        { "application/x-protobuf;proto=Prometheus.writerequest", GW_EUNSUPPORTED },
        { "application/json", GW_EUNSUPPORTED },
        { "image/png", GW_EUNSUPPORTED },
        { "application/x-protobufx", GW_EUNSUPPORTED },
        { "application/x-protobuf-extra;proto=prometheus.WriteRequest", GW_EUNSUPPORTED },
        { "text/plain;proto=prometheus.WriteRequest", GW_EUNSUPPORTED },
    };
    (void)state;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int got = gw_rw_version_from_content_type(cases[i].ct);
        if (got != cases[i].want)
            fail_msg("content type \"%s\": got %d, want %d", cases[i].ct ? cases[i].ct : "(null)", got,
                     cases[i].want);
    }
}

/* Regression (fuzzer find): an empty body arrives as a NULL pointer with
 * length 0 and must decode to an empty request for both versions. */
static void test_rw_empty_body_null_pointer(void **state)
{
    (void)state;
    struct gw_arena a;
    gw_arena_init(&a, 4096, 1 << 20);
    for (int version = 1; version <= 2; version++) {
        struct gw_rw_request out;
        struct gw_error err = {0};
        assert_int_equal(gw_rw_decode(NULL, 0, version, &a, &out, &err), GW_OK);
        assert_int_equal(out.n_series, 0);
        assert_int_equal(out.n_samples, 0);
    }
    gw_arena_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rw_empty_body_null_pointer),
        cmocka_unit_test(test_rw_v1_random_roundtrip),
        cmocka_unit_test(test_rw_v1_stale_nan_bit_exact),
        cmocka_unit_test(test_rw_v1_worked_example),
        cmocka_unit_test(test_rw_v1_encode_matches_protobuf_c),
        cmocka_unit_test(test_rw_v1_negative_zero_survives),
        cmocka_unit_test(test_rw_unknown_fields_skipped),
        cmocka_unit_test(test_rw_bad_wire_rejected),
        cmocka_unit_test(test_rw_v2_random_roundtrip),
        cmocka_unit_test(test_rw_encode_v2_roundtrip),
        cmocka_unit_test(test_rw_v2_unpacked_refs),
        cmocka_unit_test(test_rw_v2_rules),
        cmocka_unit_test(test_rw_cross_version_is_empty),
        cmocka_unit_test(test_rw_arena_ceiling),
        cmocka_unit_test(test_rw_truncation_and_flips),
        cmocka_unit_test(test_rw_snappy_roundtrip),
        cmocka_unit_test(test_rw_snappy_length_cap_before_alloc),
        cmocka_unit_test(test_rw_snappy_corrupt),
        cmocka_unit_test(test_rw_content_type_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
