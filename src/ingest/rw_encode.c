/* rw_encode.c - remote write 1.0 encoder (prometheus.WriteRequest protobuf,
 * uncompressed) and the TimeSeries writer shared with remote read.
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
