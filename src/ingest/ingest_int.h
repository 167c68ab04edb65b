/* ingest_int.h - protobuf wire encoding helpers shared inside src/ingest/
 * (remote write encoder, remote read response writer). Nothing outside
 * src/ingest/ includes this file.
 *
 * Writers size a message first (pb_*_size, gw_uvarint_len), reserve exactly that many bytes
 * in a gw_buf, then write with the pb_put_* helpers which assume the room
 * is there. proto3 rules: scalar fields equal to their default (0, "") are
 * omitted; doubles are omitted only when all 64 bits are zero, so -0.0 and
 * every NaN payload survive. */
#ifndef GW_INGEST_INT_H
#define GW_INGEST_INT_H

#include <stdint.h>
#include <string.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/labels.h"
#include "gpuwatch/rw.h"

/* Wire keys: field << 3 | wire type. */
#define PB_KEY(field, wt) ((uint32_t)(((field) << 3) | (wt)))
#define PB_WT_VARINT 0
#define PB_WT_FIXED64 1
#define PB_WT_LEN 2

static inline uint8_t *pb_put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline uint64_t pb_double_bits(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

static inline uint8_t *pb_put_fixed64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (uint8_t)v;
        v >>= 8;
    }
    return p + 8;
}

/* Size of a length-delimited field (key < 128) holding n bytes. */
static inline size_t pb_len_field_size(size_t n)
{
    return 1 + gw_uvarint_len(n) + n;
}

static inline uint8_t *pb_put_len_field(uint8_t *p, uint32_t key, const void *data, size_t n)
{
    *p++ = (uint8_t)key;
    p = pb_put_varint(p, n);
    if (n > 0)
        memcpy(p, data, n);
    return p + n;
}

/* prometheus.Label { name = 1; value = 2; } body size (empty strings omitted). */
static inline size_t pb_label_size(const struct gw_label *l)
{
    return (l->name_len ? pb_len_field_size(l->name_len) : 0) +
           (l->value_len ? pb_len_field_size(l->value_len) : 0);
}

static inline uint8_t *pb_put_label(uint8_t *p, const struct gw_label *l)
{
    if (l->name_len)
        p = pb_put_len_field(p, PB_KEY(1, PB_WT_LEN), l->name, l->name_len);
    if (l->value_len)
        p = pb_put_len_field(p, PB_KEY(2, PB_WT_LEN), l->value, l->value_len);
    return p;
}

/* prometheus.Sample { double value = 1; int64 timestamp = 2; } body size. */
static inline size_t pb_sample_size(int64_t t, double v)
{
    return (pb_double_bits(v) ? 9 : 0) + (t ? 1 + gw_uvarint_len((uint64_t)t) : 0);
}

static inline uint8_t *pb_put_sample(uint8_t *p, int64_t t, double v)
{
    uint64_t b = pb_double_bits(v);
    if (b) {
        *p++ = (uint8_t)PB_KEY(1, PB_WT_FIXED64);
        p = pb_put_fixed64(p, b);
    }
    if (t) {
        *p++ = (uint8_t)PB_KEY(2, PB_WT_VARINT);
        p = pb_put_varint(p, (uint64_t)t);
    }
    return p;
}

/* prometheus.TimeSeries body with labels (field 1) and samples (field 2),
 * samples given either as gw_sample pairs (pairs != NULL) or as two arrays. */
size_t gw_pb_series_size(const struct gw_label *ls, size_t n_labels, const struct gw_sample *pairs,
                         const int64_t *t, const double *v, size_t n_samples);
uint8_t *gw_pb_put_series(uint8_t *p, const struct gw_label *ls, size_t n_labels,
                          const struct gw_sample *pairs, const int64_t *t, const double *v,
                          size_t n_samples);

#endif /* GW_INGEST_INT_H */
