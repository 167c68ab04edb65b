/* rw_encode.c - remote write 1.0 and 2.0 encoders (prometheus.WriteRequest,
 * io.prometheus.write.v2.Request; protobuf, uncompressed) and the TimeSeries writer shared with remote read.
 *
 * Hand-written, sized exactly before writing: one gw_buf_reserve per
 * request, no per-series allocation. Field order is by field number, as
 * protobuf encoders emit it, so for the same input (and no -0.0 values,
 * which protobuf-c drops as a proto3 default) the bytes equal protobuf-c's
 * prometheus__write_request__pack(); tests/test_rw.c checks this.
 * Layout of one series (see rw_decode.c for a worked byte example):
 *   0a len TimeSeries { (0a len Label{0a len name 12 len value})*
 *                       (12 len Sample{09 <8 bytes LE> 10 <varint t>})* }
 * followed by the metadata entries
 *   1a len MetricMetadata { 08 type  12 len name  22 len help  2a len unit }
 * then the series' exemplars
 *   1a len Exemplar { (0a len Label)*  11 <8 bytes LE value>  18 <varint t> }
 * Histograms are not encoded. */
#include <stdlib.h>

#include "ingest/ingest_int.h"

size_t gw_pb_series_size(const struct gw_label *ls, size_t n_labels, const struct gw_sample *pairs,
                         const int64_t *t, const double *v, size_t n_samples)
{
    size_t n = 0;
    for (size_t i = 0; i < n_labels; i++)
        n += pb_len_field_size(pb_label_size(&ls[i]));
    for (size_t i = 0; i < n_samples; i++) {
        size_t s = pairs ? pb_sample_size(pairs[i].t, pairs[i].v) : pb_sample_size(t[i], v[i]);
        n += pb_len_field_size(s);
    }
    return n;
}

uint8_t *gw_pb_put_series(uint8_t *p, const struct gw_label *ls, size_t n_labels,
                          const struct gw_sample *pairs, const int64_t *t, const double *v,
                          size_t n_samples)
{
    for (size_t i = 0; i < n_labels; i++) {
        *p++ = (uint8_t)PB_KEY(1, PB_WT_LEN);
        p = pb_put_varint(p, pb_label_size(&ls[i]));
        p = pb_put_label(p, &ls[i]);
    }
    for (size_t i = 0; i < n_samples; i++) {
        int64_t ti = pairs ? pairs[i].t : t[i];
        double vi = pairs ? pairs[i].v : v[i];
        *p++ = (uint8_t)PB_KEY(2, PB_WT_LEN);
        p = pb_put_varint(p, pb_sample_size(ti, vi));
        p = pb_put_sample(p, ti, vi);
    }
    return p;
}

size_t gw_rw_labels_pb_size(const struct gw_label *ls, size_t n)
{
    return gw_pb_series_size(ls, n, NULL, NULL, NULL, 0);
}

size_t gw_rw_labels_pb(const struct gw_label *ls, size_t n, uint8_t *out)
{
    return (size_t)(gw_pb_put_series(out, ls, n, NULL, NULL, NULL, 0) - out);
}

int gw_rw_append_sample(struct gw_buf *out, const uint8_t *labels_pb, size_t len, int64_t t, double v)
{
    size_t ss = pb_sample_size(t, v), ts = len + pb_len_field_size(ss), need = pb_len_field_size(ts);
    int rc = gw_buf_reserve(out, need);
    if (rc != GW_OK)
        return rc;
    uint8_t *p = out->data + out->len;
    *p++ = (uint8_t)PB_KEY(1, PB_WT_LEN);
    p = pb_put_varint(p, ts);
    memcpy(p, labels_pb, len);
    p += len;
    *p++ = (uint8_t)PB_KEY(2, PB_WT_LEN);
    p = pb_put_varint(p, ss);
    p = pb_put_sample(p, t, v);
    out->len = (size_t)(p - out->data);
    return GW_OK;
}

/* Exemplar body size (prometheus.Exemplar: labels = 1, value = 2, timestamp = 3). */
static size_t exemplar_size(const struct gw_rw_exemplar *e)
{
    size_t n = (pb_double_bits(e->v) ? 9 : 0) + (e->t ? 1 + gw_uvarint_len((uint64_t)e->t) : 0);
    for (uint32_t i = 0; i < e->n_labels; i++)
        n += pb_len_field_size(pb_label_size(&e->labels[i]));
    return n;
}

static uint8_t *put_exemplar(uint8_t *p, const struct gw_rw_exemplar *e)
{
    *p++ = (uint8_t)PB_KEY(3, PB_WT_LEN);
    p = pb_put_varint(p, exemplar_size(e));
    for (uint32_t i = 0; i < e->n_labels; i++) {
        *p++ = (uint8_t)PB_KEY(1, PB_WT_LEN);
        p = pb_put_varint(p, pb_label_size(&e->labels[i]));
        p = pb_put_label(p, &e->labels[i]);
    }
    if (pb_double_bits(e->v)) {
        *p++ = (uint8_t)PB_KEY(2, PB_WT_FIXED64);
        p = pb_put_fixed64(p, pb_double_bits(e->v));
    }
    if (e->t) {
        *p++ = (uint8_t)PB_KEY(3, PB_WT_VARINT);
        p = pb_put_varint(p, (uint64_t)e->t);
    }
    return p;
}

/* A TimeSeries' body size: labels, samples, exemplars. */
static size_t series_size(const struct gw_rw_series *s)
{
    size_t n = gw_pb_series_size(s->labels, s->n_labels, s->samples, NULL, NULL, s->n_samples);
    for (uint32_t i = 0; i < s->n_exemplars; i++)
        n += pb_len_field_size(exemplar_size(&s->exemplars[i]));
    return n;
}

static size_t metadata_size(const struct gw_rw_metadata *m)
{
    return (m->type ? 1 + gw_uvarint_len(m->type) : 0) +
           (m->name_len ? pb_len_field_size(m->name_len) : 0) +
           (m->help_len ? pb_len_field_size(m->help_len) : 0) +
           (m->unit_len ? pb_len_field_size(m->unit_len) : 0);
}

int gw_rw_encode_v1(const struct gw_rw_request *req, struct gw_buf *out)
{
    size_t total = 0;
    uint8_t *p, *start;
    int rc;

    if (req == NULL || out == NULL || (req->n_series > 0 && req->series == NULL) ||
        (req->n_metadata > 0 && req->metadata == NULL))
        return GW_EINVAL;
    for (size_t i = 0; i < req->n_series; i++) {
        const struct gw_rw_series *s = &req->series[i];
        if ((s->n_labels > 0 && s->labels == NULL) || (s->n_samples > 0 && s->samples == NULL) ||
            (s->n_exemplars > 0 && s->exemplars == NULL))
            return GW_EINVAL;
        total += pb_len_field_size(series_size(s));
    }
    for (size_t i = 0; i < req->n_metadata; i++)
        total += pb_len_field_size(metadata_size(&req->metadata[i]));

    if ((rc = gw_buf_reserve(out, total)) != GW_OK)
        return rc;
    start = p = out->data + out->len;
    for (size_t i = 0; i < req->n_series; i++) {
        const struct gw_rw_series *s = &req->series[i];
        *p++ = (uint8_t)PB_KEY(1, PB_WT_LEN);
        p = pb_put_varint(p, series_size(s));
        p = gw_pb_put_series(p, s->labels, s->n_labels, s->samples, NULL, NULL, s->n_samples);
        for (uint32_t j = 0; j < s->n_exemplars; j++)
            p = put_exemplar(p, &s->exemplars[j]);
    }
    for (size_t i = 0; i < req->n_metadata; i++) {
        const struct gw_rw_metadata *m = &req->metadata[i];
        *p++ = (uint8_t)PB_KEY(3, PB_WT_LEN);
        p = pb_put_varint(p, metadata_size(m));
        if (m->type) {
            *p++ = (uint8_t)PB_KEY(1, PB_WT_VARINT);
            p = pb_put_varint(p, m->type);
        }
        if (m->name_len)
            p = pb_put_len_field(p, PB_KEY(2, PB_WT_LEN), m->name, m->name_len);
        if (m->help_len)
            p = pb_put_len_field(p, PB_KEY(4, PB_WT_LEN), m->help, m->help_len);
        if (m->unit_len)
            p = pb_put_len_field(p, PB_KEY(5, PB_WT_LEN), m->unit, m->unit_len);
    }
    if (GW_NEVER((size_t)(p - start) != total))
        return GW_EINVAL;
    out->len += total;
    return GW_OK;
}

/* ---- remote write 2.0 (io.prometheus.write.v2.Request) ----
 *   22 len symbol                                   (field 4, symbols[0] = "")
 *   2a len TimeSeries { 0a len <packed uint32 refs>
 *                       (12 len Sample{09 <8 bytes LE> 10 <varint t>})* }
 * Symbols are deduplicated with an open-addressing map over their bytes
 * and numbered in first-use order (names and values in label order). */
struct v2_syms {
    const struct gw_label **sym_l;   /* symbol i > 0: label and which side */
    uint8_t *sym_side;               /* 0 name, 1 value */
    uint32_t *map;                   /* symbol index + 1, 0 = empty slot */
    size_t n, cap;                   /* symbols (incl. ""), map slots */
};

static const char *v2_sym(const struct v2_syms *s, size_t i, uint32_t *len)
{
    const struct gw_label *l = s->sym_l[i];
    *len = s->sym_side[i] ? l->value_len : l->name_len;
    return s->sym_side[i] ? l->value : l->name;
}

/* The symbol index of (p, n), added when new. */
static uint32_t v2_intern(struct v2_syms *s, const struct gw_label *l, int side)
{
    const char *p = side ? l->value : l->name;
    uint32_t n = side ? l->value_len : l->name_len, h = 2166136261u, len;
    for (uint32_t i = 0; i < n; i++) h = (h ^ (uint8_t)p[i]) * 16777619u;
    size_t mask = s->cap - 1, j = h & mask;
    for (; s->map[j]; j = (j + 1) & mask) {
        const char *q = v2_sym(s, s->map[j] - 1, &len);
        if (len == n && !memcmp(p, q, n)) return s->map[j] - 1;
    }
    s->sym_l[s->n] = l;
    s->sym_side[s->n] = (uint8_t)side;
    s->map[j] = (uint32_t)++s->n;
    return (uint32_t)(s->n - 1);
}

static size_t v2_refs_size(const uint32_t *refs, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += gw_uvarint_len(refs[i]);
    return k;
}

static size_t v2_series_size(const struct gw_rw_series *s, const uint32_t *refs)
{
    size_t n = s->n_labels ? pb_len_field_size(v2_refs_size(refs, 2u * s->n_labels)) : 0;
    return n + gw_pb_series_size(NULL, 0, s->samples, NULL, NULL, s->n_samples);
}

/* Checks req and counts its labels; GW_EINVAL on a NULL array, an empty
 * name or value (the spec forbids them), or more than 2^31 labels. */
static int v2_check(const struct gw_rw_request *req, size_t *n_labels)
{
    size_t n = 0;
    if (req == NULL || (req->n_series > 0 && req->series == NULL)) return GW_EINVAL;
    for (size_t i = 0; i < req->n_series; i++) {
        const struct gw_rw_series *s = &req->series[i];
        if ((s->n_labels > 0 && s->labels == NULL) || (s->n_samples > 0 && s->samples == NULL)) return GW_EINVAL;
        for (uint32_t j = 0; j < s->n_labels; j++)
            if (!s->labels[j].name_len || !s->labels[j].value_len) return GW_EINVAL;
        n += s->n_labels;
        if (n > (1u << 31)) return GW_EINVAL;
    }
    *n_labels = n;
    return GW_OK;
}

static int v2_write(const struct gw_rw_request *req, const struct v2_syms *sy, const uint32_t *refs,
                    struct gw_buf *out)
{
    size_t total = pb_len_field_size(0), r = 0;
    uint32_t len;
    for (size_t i = 1; i < sy->n; i++) {
        v2_sym(sy, i, &len);
        total += pb_len_field_size(len);
    }
    for (size_t i = 0; i < req->n_series; i++) {
        total += pb_len_field_size(v2_series_size(&req->series[i], refs + r));
        r += 2u * req->series[i].n_labels;
    }
    int rc = gw_buf_reserve(out, total);
    if (rc != GW_OK) return rc;
    uint8_t *start = out->data + out->len, *p = start;
    for (size_t i = 0; i < sy->n; i++) {
        const char *s = i ? v2_sym(sy, i, &len) : "";
        p = pb_put_len_field(p, PB_KEY(4, PB_WT_LEN), s, i ? len : 0);
    }
    r = 0;
    for (size_t i = 0; i < req->n_series; i++) {
        const struct gw_rw_series *s = &req->series[i];
        const uint32_t *sr = refs + r;
        *p++ = (uint8_t)PB_KEY(5, PB_WT_LEN);
        p = pb_put_varint(p, v2_series_size(s, sr));
        if (s->n_labels) {
            *p++ = (uint8_t)PB_KEY(1, PB_WT_LEN);
            p = pb_put_varint(p, v2_refs_size(sr, 2u * s->n_labels));
            for (size_t j = 0; j < 2u * s->n_labels; j++) p = pb_put_varint(p, sr[j]);
        }
        p = gw_pb_put_series(p, NULL, 0, s->samples, NULL, NULL, s->n_samples);
        r += 2u * s->n_labels;
    }
    if (GW_NEVER((size_t)(p - start) != total)) return GW_EINVAL;
    out->len += total;
    return GW_OK;
}

int gw_rw_encode_v2(const struct gw_rw_request *req, struct gw_buf *out)
{
    size_t n_labels = 0;
    int rc = out ? v2_check(req, &n_labels) : GW_EINVAL;
    if (rc != GW_OK) return rc;
    struct v2_syms sy = {0};
    sy.cap = 16;
    while (sy.cap < 4 * n_labels + 4) sy.cap *= 2;
    sy.sym_l = malloc((2 * n_labels + 1) * sizeof *sy.sym_l);
    sy.sym_side = malloc(2 * n_labels + 1);
    sy.map = calloc(sy.cap, sizeof *sy.map);
    uint32_t *refs = malloc((2 * n_labels + 1) * sizeof *refs);
    if (!sy.sym_l || !sy.sym_side || !sy.map || !refs) {
        rc = GW_ENOMEM;
        goto out;
    }
    sy.n = 1;                                  /* symbols[0] = "" */
    size_t r = 0;
    for (size_t i = 0; i < req->n_series; i++)
        for (uint32_t j = 0; j < req->series[i].n_labels; j++) {
            refs[r++] = v2_intern(&sy, &req->series[i].labels[j], 0);
            refs[r++] = v2_intern(&sy, &req->series[i].labels[j], 1);
        }
    rc = v2_write(req, &sy, refs, out);
out:
    free(sy.sym_l);
    free(sy.sym_side);
    free(sy.map);
    free(refs);
    return rc;
}
