/* rw_decode.c - zero-copy protobuf wire parser for remote write bodies:
 * prometheus.WriteRequest (1.0) and io.prometheus.write.v2.Request (2.0).
 *
 * Wire format reminder (proto3): a message is a sequence of fields, each
 *   key = uvarint(field_number << 3 | wire_type)
 * followed by a varint (wt 0), 8 bytes LE (wt 1), uvarint length + bytes
 * (wt 2) or 4 bytes LE (wt 5). Groups (wt 3/4) and wt 6/7 are errors.
 * Worked example: a v1 body with one series {__name__="up"} and one sample
 * (value 1.0 at t=1000 ms) is 32 bytes:
 *   0a 1e                              WriteRequest.timeseries (field 1, wt 2), 30 bytes
 *     0a 0e                            TimeSeries.labels, 14 bytes
 *       0a 08 5f 5f 6e 61 6d 65 5f 5f  Label.name  "__name__"
 *       12 02 75 70                    Label.value "up"
 *     12 0c                            TimeSeries.samples, 12 bytes
 *       09 00 00 00 00 00 00 f0 3f     Sample.value 1.0 (fixed64 LE)
 *       10 e8 07                       Sample.timestamp 1000 (varint, not zigzag)
 *
 * Decoding runs in two passes over the same bytes:
 *   1. count: walks the outer structure (series, label/sample/exemplar/
 *      histogram entries, exemplar labels, v2 symbols and label refs,
 *      metadata) so that every
 *      array is allocated from the arena exactly once, with its exact size;
 *   2. fill: parses every field, validates wire types and bounds, and writes
 *      labels (pointing into the body or into v2 symbols, which point into
 *      the body) and samples into the arrays.
 * Nothing is allocated per sample and nothing is copied but (t, v) pairs.
 * Unknown fields of wire types 0, 1, 2 and 5 are skipped; a known field with
 * the wrong wire type is an error, except repeated scalars (v2 labels_refs)
 * which are accepted packed or unpacked. Exemplars are decoded (labels,
 * value, timestamp; v2 label refs resolved and checked like the series');
 * histograms are structurally checked (one level) and counted, not stored.
 *
 * v2 rules enforced here: symbols[0] is "" when symbols exist, labels_refs
 * has even length, every label/metadata ref indexes inside symbols. */
#include <string.h>
#include <strings.h>
#include <stdio.h>

#include "gpuwatch/rw.h"

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

struct pctx {
    const uint8_t *base;        /* start of the body, for offsets in messages */
    struct gw_error *err;
};

static int fail(const struct pctx *c, const uint8_t *at, const char *fmt, ...)
    __attribute__((cold, noinline, format(printf, 3, 4)));

static int fail(const struct pctx *c, const uint8_t *at, const char *fmt, ...)
{
    char msg[200];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return gw_error_set(c->err, GW_EPARSE, "protobuf parse error at byte %zu: %s",
                        (size_t)(at - c->base), msg);
}

/* ---- primitive readers: return the position after the item, NULL on error */

static const uint8_t *varint_slow(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
    uint64_t r = 0;
    for (unsigned i = 0; i < 10; i++) {
        uint8_t b;
        if (p + i >= end)
            return NULL;
        b = p[i];
        if (i == 9 && b > 1)          /* more than 64 bits */
            return NULL;
        r |= (uint64_t)(b & 0x7f) << (7 * i);
        if (b < 0x80) {
            *v = r;
            return p + i + 1;
        }
    }
    return NULL;                      /* longer than 10 bytes */
}

static inline const uint8_t *get_varint(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
    if (LIKELY(p < end && *p < 0x80)) {
        *v = *p;
        return p + 1;
    }
    return varint_slow(p, end, v);
}

static inline const uint8_t *get_bytes(const uint8_t *p, const uint8_t *end,
                                       const uint8_t **s, size_t *n)
{
    uint64_t l;
    p = get_varint(p, end, &l);
    if (UNLIKELY(p == NULL || l > (uint64_t)(end - p)))
        return NULL;
    *s = p;
    *n = (size_t)l;
    return p + l;
}

static inline uint64_t load_le64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* Reads a field key. *key = field << 3 | wt. Field 0 and > 2^29-1 are invalid. */
static inline int get_key(const struct pctx *c, const uint8_t **pp, const uint8_t *end,
                          uint64_t *key, const char *msg)
{
    const uint8_t *p = *pp;
    uint64_t k;

    if (LIKELY(p < end && *p < 0x80 && *p >= 8)) {
        *key = *p;
        *pp = p + 1;
        return GW_OK;
    }
    p = varint_slow(p, end, &k);
    if (p == NULL)
        return fail(c, *pp, "truncated or overlong field key in %s", msg);
    if ((k >> 3) == 0 || (k >> 3) > 0x1FFFFFFFu)
        return fail(c, *pp, "invalid field number %llu in %s", (unsigned long long)(k >> 3), msg);
    *key = k;
    *pp = p;
    return GW_OK;
}

/* Skips the value of a field whose key was just read (at key_at). Also
 * reports a known field with an unexpected wire type when known != 0. */
static int skip_value(const struct pctx *c, const uint8_t **pp, const uint8_t *end,
                      uint64_t key, const uint8_t *key_at, const char *msg)
{
    const uint8_t *p = *pp, *s;
    uint64_t v;
    size_t n = 0;
    unsigned wt = (unsigned)(key & 7);

    switch (wt) {
    case 0:
        p = get_varint(p, end, &v);
        if (p == NULL)
            return fail(c, *pp, "truncated or overlong varint in field %llu of %s",
                        (unsigned long long)(key >> 3), msg);
        break;
    case 1:
    case 5: {
        ptrdiff_t w = wt == 1 ? 8 : 4;   /* fixed64 / fixed32 */
        if (end - p < w)
            return fail(c, *pp, "truncated fixed%d in field %llu of %s", (int)(w * 8),
                        (unsigned long long)(key >> 3), msg);
        p += w;
        break;
    }
    case 2:
        p = get_bytes(p, end, &s, &n);
        if (p == NULL)
            return fail(c, *pp, "length-delimited field %llu of %s overruns its message",
                        (unsigned long long)(key >> 3), msg);
        break;
    case 3:
    case 4:
        return fail(c, key_at, "group wire type %u in field %llu of %s is not supported", wt,
                    (unsigned long long)(key >> 3), msg);
    default:
        return fail(c, key_at, "invalid wire type %u in field %llu of %s", wt,
                    (unsigned long long)(key >> 3), msg);
    }
    *pp = p;
    return GW_OK;
}

static int wrong_wt(const struct pctx *c, const uint8_t *key_at, uint64_t key, const char *field,
                    const char *msg)
{
    return fail(c, key_at, "wrong wire type %u for field %llu (%s) of %s", (unsigned)(key & 7),
                (unsigned long long)(key >> 3), field, msg);
}

/* A length-delimited field: its payload in [*s, *s + *n). */
static inline int get_sub(const struct pctx *c, const uint8_t **pp, const uint8_t *end,
                          const uint8_t **s, size_t *n, const char *field, const char *msg)
{
    const uint8_t *p = get_bytes(*pp, end, s, n);
    if (UNLIKELY(p == NULL))
        return fail(c, *pp, "length of %s in %s overruns its message", field, msg);
    *pp = p;
    return GW_OK;
}

/* One-level structural check of a message we only count (exemplar, histogram). */
static int walk_message(const struct pctx *c, const uint8_t *p, const uint8_t *end, const char *msg)
{
    while (p < end) {
        const uint8_t *at = p;
        uint64_t key = 0;
        int rc = get_key(c, &p, end, &key, msg);
        if (rc != GW_OK)
            return rc;
        rc = skip_value(c, &p, end, key, at, msg);
        if (rc != GW_OK)
            return rc;
    }
    return GW_OK;
}

/* ---- common leaf messages -------------------------------------------- */

static const char empty_str[1] = "";

/* prometheus.Label { name = 1; value = 2; } */
static inline int parse_label(const struct pctx *c, const uint8_t *p, const uint8_t *end,
                              struct gw_label *l)
{
    const uint8_t *name = (const uint8_t *)empty_str, *value = (const uint8_t *)empty_str;
    size_t nl = 0, vl = 0;

    /* Fast path for what every encoder emits: 0a <len> name 12 <len> value,
     * both lengths < 128, nothing else. */
    if (LIKELY(end - p >= 4 && p[0] == 0x0A && p[1] < 0x80 && (size_t)(end - p) >= 4u + p[1])) {
        const uint8_t *q = p + 2 + p[1];
        if (LIKELY(q[0] == 0x12 && q[1] < 0x80 && end - q == 2 + q[1])) {
            l->name = (const char *)p + 2;
            l->name_len = p[1];
            l->value = (const char *)q + 2;
            l->value_len = q[1];
            return GW_OK;
        }
    }
    while (p < end) {
        const uint8_t *at = p;
        uint64_t key = 0;
        int rc = get_key(c, &p, end, &key, "Label");
        if (UNLIKELY(rc != GW_OK))
            return rc;
        if (LIKELY(key == 0x0A)) {
            if ((rc = get_sub(c, &p, end, &name, &nl, "name", "Label")) != GW_OK)
                return rc;
        } else if (LIKELY(key == 0x12)) {
            if ((rc = get_sub(c, &p, end, &value, &vl, "value", "Label")) != GW_OK)
                return rc;
        } else if ((key >> 3) == 1 || (key >> 3) == 2) {
            return wrong_wt(c, at, key, (key >> 3) == 1 ? "name" : "value", "Label");
        } else if ((rc = skip_value(c, &p, end, key, at, "Label")) != GW_OK) {
            return rc;
        }
    }
    l->name = (const char *)name;
    l->name_len = (uint32_t)nl;
    l->value = (const char *)value;
    l->value_len = (uint32_t)vl;
    return GW_OK;
}

/* Sample { double value = 1; int64 timestamp = 2; [v2: int64 start_timestamp = 3] } */
static inline int parse_sample(const struct pctx *c, const uint8_t *p, const uint8_t *end,
                               struct gw_sample *s, int v2)
{
    uint64_t vbits = 0, ts = 0;

    /* Fast path: 09 <8 bytes> 10 <varint> and nothing else. */
    if (LIKELY(end - p >= 11 && p[0] == 0x09 && p[9] == 0x10)) {
        const uint8_t *q = get_varint(p + 10, end, &ts);
        if (LIKELY(q == end)) {
            vbits = load_le64(p + 1);
            memcpy(&s->v, &vbits, sizeof s->v);
            s->t = (int64_t)ts;
            return GW_OK;
        }
        ts = 0;
    }
    while (p < end) {
        const uint8_t *at = p;
        uint64_t key = 0;
        int rc = get_key(c, &p, end, &key, "Sample");
        if (UNLIKELY(rc != GW_OK))
            return rc;
        if (LIKELY(key == 0x09)) {
            if (UNLIKELY(end - p < 8))
                return fail(c, p, "truncated value in Sample");
            vbits = load_le64(p);
            p += 8;
        } else if (LIKELY(key == 0x10)) {
            const uint8_t *q = get_varint(p, end, &ts);
            if (UNLIKELY(q == NULL))
                return fail(c, p, "truncated or overlong timestamp in Sample");
            p = q;
        } else if ((key >> 3) == 1 || (key >> 3) == 2 || (v2 && (key >> 3) == 3 && key != 0x18)) {
            return wrong_wt(c, at, key, (key >> 3) == 1 ? "value" : "timestamp", "Sample");
        } else if ((rc = skip_value(c, &p, end, key, at, "Sample")) != GW_OK) {
            return rc;       /* includes v2 start_timestamp = 3 (not kept) */
        }
    }
    memcpy(&s->v, &vbits, sizeof s->v);
    s->t = (int64_t)ts;
    return GW_OK;
}

static uint8_t metric_type(uint64_t t)
{
    return t <= 7 ? (uint8_t)t : 0;
}

/* ---- arena helpers ----------------------------------------------------- */

static int arena_array(struct gw_arena *a, size_t n, size_t size, void **out, const char *what,
                       struct gw_error *err)
{
    *out = NULL;
    if (n == 0)
        return GW_OK;
    if (n > SIZE_MAX / size)
        return gw_error_set(err, GW_ENOMEM, "remote write: %zu %s overflow the size limit", n, what);
    *out = gw_arena_alloc(a, n * size);
    if (*out == NULL)
        return gw_error_set(err, GW_ENOMEM, "remote write: cannot allocate %zu %s (%zu bytes) from "
                            "the request arena", n, what, n * size);
    return GW_OK;
}

struct counts {
    size_t n_series, n_labels, n_samples, n_metadata, n_symbols, n_exlabels;
    uint64_t n_hist, n_ex;
};

/* ======================================================================
 * v1: prometheus.WriteRequest
 *   WriteRequest { repeated TimeSeries timeseries = 1; repeated MetricMetadata metadata = 3; }
 *   TimeSeries   { labels = 1; samples = 2; exemplars = 3; histograms = 4; }
 *   MetricMetadata { type = 1; metric_family_name = 2; help = 4; unit = 5; }
 * ====================================================================== */

struct fill {
    struct gw_rw_series *series, *series_end;
    struct gw_label *lab, *lab_end;
    struct gw_sample *smp, *smp_end;
    struct gw_rw_metadata *md, *md_end;
    struct gw_rw_exemplar *ex, *ex_end;
    struct gw_label *exlab, *exlab_end;
    uint64_t n_hist, n_ex;
};

static int overflow(const struct pctx *c, const uint8_t *at)
{
    /* Pass 2 sees the same bytes as pass 1, so this cannot trigger; it keeps
     * any future divergence from writing out of bounds. */
    (void)GW_NEVER(1);
    return fail(c, at, "internal count mismatch");
}

/* Fill mode (ser != NULL): ser's labels, samples and exemplars start at
 * f's cursors. */
static void series_begin(const struct fill *f, struct gw_rw_series *ser)
{
    if (ser != NULL) {
        ser->labels = f->lab;
        ser->samples = f->smp;
        ser->exemplars = f->ex;
    }
}

/* A TimeSeries' samples field at *pp (key read, at: where the field
 * starts): parsed into f in fill mode (f != NULL), counted in *count. */
static inline int series_samples(const struct pctx *c, const uint8_t **pp, const uint8_t *end, const uint8_t *at,
                                 struct fill *f, int v2, uint32_t *count)
{
    const uint8_t *s = NULL;
    size_t n = 0;
    int rc;
    if (UNLIKELY((rc = get_sub(c, pp, end, &s, &n, "samples", "TimeSeries")) != GW_OK))
        return rc;
    if (f != NULL) {
        if (UNLIKELY(f->smp == f->smp_end))
            return overflow(c, at);
        if (UNLIKELY((rc = parse_sample(c, s, s + n, f->smp, v2)) != GW_OK))
            return rc;
        f->smp++;
    }
    ++*count;
    return GW_OK;
}

/* A TimeSeries' exemplars or histograms field (field; message msg): its
 * wire format checked in fill mode (f != NULL), counted in *count. */
static int series_walked(const struct pctx *c, const uint8_t **pp, const uint8_t *end, const struct fill *f,
                         const char *field, const char *msg, uint32_t *count)
{
    const uint8_t *s = NULL;
    size_t n = 0;
    int rc;
    if ((rc = get_sub(c, pp, end, &s, &n, field, "TimeSeries")) != GW_OK)
        return rc;
    ++*count;
    return f != NULL ? walk_message(c, s, s + n, msg) : GW_OK;
}

struct sym;
static int series_exemplar(const struct pctx *c, const uint8_t **pp, const uint8_t *end, const uint8_t *at,
                           struct fill *f, struct counts *k, const struct sym *syms, size_t n_syms, int v2,
                           uint32_t *count);

/* One v1 TimeSeries. Count mode (f == NULL): accumulates into k. Fill
 * mode: fills ser and advances f. */
static int v1_series(const struct pctx *c, const uint8_t *p, const uint8_t *end, struct counts *k,
                     struct fill *f, struct gw_rw_series *ser)
{
    uint32_t n_labels = 0, n_samples = 0, n_hist = 0, n_ex = 0;
    series_begin(f, ser);
    while (p < end) {
        const uint8_t *at = p, *s = NULL;
        size_t n = 0;
        uint64_t key = 0;
        int rc = get_key(c, &p, end, &key, "TimeSeries");
        if (UNLIKELY(rc != GW_OK))
            return rc;
        switch (key) {
        case 0x0A:
            if (UNLIKELY((rc = get_sub(c, &p, end, &s, &n, "labels", "TimeSeries")) != GW_OK))
                return rc;
            if (f != NULL) {
                if (UNLIKELY(f->lab == f->lab_end))
                    return overflow(c, at);
                if (UNLIKELY((rc = parse_label(c, s, s + n, f->lab)) != GW_OK))
                    return rc;
                f->lab++;
            }
            n_labels++;
            break;
        case 0x12:
            rc = series_samples(c, &p, end, at, f, 0, &n_samples);
            break;
        case 0x1A:
            rc = series_exemplar(c, &p, end, at, f, k, NULL, 0, 0, &n_ex);
            break;
        case 0x22:
            rc = series_walked(c, &p, end, f, "histograms", "Histogram", &n_hist);
            break;
        default:
            if ((key >> 3) >= 1 && (key >> 3) <= 4)
                return wrong_wt(c, at, key, "repeated message", "TimeSeries");
            rc = skip_value(c, &p, end, key, at, "TimeSeries");
        }
        if (UNLIKELY(rc != GW_OK))
            return rc;
    }
    if (f == NULL) {
        k->n_labels += n_labels;
        k->n_samples += n_samples;
        k->n_hist += n_hist;
        k->n_ex += n_ex;
        return GW_OK;
    }
    ser->n_labels = n_labels;
    ser->n_samples = n_samples;
    ser->n_histograms = n_hist;
    ser->n_exemplars = n_ex;
    f->n_hist += n_hist;
    f->n_ex += n_ex;
    return GW_OK;
}

static int v1_fill_metadata(const struct pctx *c, const uint8_t *p, const uint8_t *end,
                            struct gw_rw_metadata *md)
{
    const uint8_t *name = (const uint8_t *)empty_str, *help = name, *unit = name;
    size_t nl = 0, hl = 0, ul = 0;
    uint64_t type = 0;

    while (p < end) {
        const uint8_t *at = p;
        uint64_t key = 0;
        int rc = get_key(c, &p, end, &key, "MetricMetadata");
        if (rc != GW_OK)
            return rc;
        switch (key) {
        case 0x08: {
            const uint8_t *q = get_varint(p, end, &type);
            if (q == NULL)
                return fail(c, p, "truncated or overlong type in MetricMetadata");
            p = q;
            break;
        }
        case 0x12: rc = get_sub(c, &p, end, &name, &nl, "metric_family_name", "MetricMetadata"); break;
        case 0x22: rc = get_sub(c, &p, end, &help, &hl, "help", "MetricMetadata"); break;
        case 0x2A: rc = get_sub(c, &p, end, &unit, &ul, "unit", "MetricMetadata"); break;
        default:
            if ((key >> 3) == 1 || (key >> 3) == 2 || (key >> 3) == 4 || (key >> 3) == 5)
                return wrong_wt(c, at, key, "known field", "MetricMetadata");
            rc = skip_value(c, &p, end, key, at, "MetricMetadata");
        }
        if (rc != GW_OK)
            return rc;
    }
    md->type = metric_type(type);
    md->name = (const char *)name;
    md->name_len = (uint32_t)nl;
    md->help = (const char *)help;
    md->help_len = (uint32_t)hl;
    md->unit = (const char *)unit;
    md->unit_len = (uint32_t)ul;
    return GW_OK;
}

/* A v1 WriteRequest. Count mode (f == NULL): accumulates into k. Fill
 * mode: fills what f points at. */
static int v1_request(const struct pctx *c, const uint8_t *p, const uint8_t *end, struct counts *k,
                      struct fill *f)
{
    while (p < end) {
        const uint8_t *at = p, *s = NULL;
        size_t n = 0;
        uint64_t key = 0;
        int rc = get_key(c, &p, end, &key, "WriteRequest");
        if (rc != GW_OK)
            return rc;
        if (key == 0x0A) {
            if ((rc = get_sub(c, &p, end, &s, &n, "timeseries", "WriteRequest")) != GW_OK)
                return rc;
            if (f != NULL && f->series == f->series_end)
                return overflow(c, at);
            if ((rc = v1_series(c, s, s + n, k, f, f != NULL ? f->series : NULL)) != GW_OK)
                return rc;
            if (f != NULL)
                f->series++;
            else
                k->n_series++;
        } else if (key == 0x1A) {
            if ((rc = get_sub(c, &p, end, &s, &n, "metadata", "WriteRequest")) != GW_OK)
                return rc;
            if (f == NULL) {
                k->n_metadata++;
                continue;
            }
            if (f->md == f->md_end)
                return overflow(c, at);
            if ((rc = v1_fill_metadata(c, s, s + n, f->md)) != GW_OK)
                return rc;
            f->md++;
        } else if ((key >> 3) == 1 || (key >> 3) == 3) {
            return wrong_wt(c, at, key, (key >> 3) == 1 ? "timeseries" : "metadata", "WriteRequest");
        } else if ((rc = skip_value(c, &p, end, key, at, "WriteRequest")) != GW_OK) {
            return rc;
        }
    }
    return GW_OK;
}

/* ======================================================================
 * v2: io.prometheus.write.v2.Request
 *   Request    { repeated string symbols = 4; repeated TimeSeries timeseries = 5; }
 *   TimeSeries { repeated uint32 labels_refs = 1; samples = 2; histograms = 3;
 *                exemplars = 4; Metadata metadata = 5; int64 created_timestamp = 6; }
 *   Metadata   { type = 1; uint32 help_ref = 3; uint32 unit_ref = 4; }
 * ====================================================================== */

struct sym {
    const char *p;
    uint32_t len;
};

struct v2_md {
    int present;
    uint64_t type, help_ref, unit_ref;
    const uint8_t *at;          /* where it was seen, for messages */
};

/* Metadata fields merge when the field repeats (protobuf semantics). */
static int v2_parse_metadata(const struct pctx *c, const uint8_t *p, const uint8_t *end,
                             struct v2_md *md)
{
    md->present = 1;
    md->at = p;
    while (p < end) {
        const uint8_t *at = p, *q;
        uint64_t key = 0, *dst;
        int rc = get_key(c, &p, end, &key, "Metadata");
        if (rc != GW_OK)
            return rc;
        switch (key) {
        case 0x08: dst = &md->type; break;
        case 0x18: dst = &md->help_ref; break;
        case 0x20: dst = &md->unit_ref; break;
        default:
            if ((key >> 3) == 1 || (key >> 3) == 3 || (key >> 3) == 4)
                return wrong_wt(c, at, key, "known field", "Metadata");
            if ((rc = skip_value(c, &p, end, key, at, "Metadata")) != GW_OK)
                return rc;
            continue;
        }
        q = get_varint(p, end, dst);
        if (q == NULL)
            return fail(c, p, "truncated or overlong varint in Metadata");
        p = q;
    }
    return GW_OK;
}

static int v2_md_nonzero(const struct v2_md *md)
{
    return md->present && (md->type != 0 || md->help_ref != 0 || md->unit_ref != 0);
}

/* Refs sink: in count mode (labels == NULL) only counts. */
struct refs {
    size_t n;                        /* refs seen so far in this series */
    struct gw_label *labels;         /* fill mode: this series' labels */
    size_t cap;                      /* labels available (pairs) */
    const struct sym *syms;
    size_t n_syms;
};

static inline int put_ref(const struct pctx *c, struct refs *r, uint64_t ref, const uint8_t *at)
{
    if (r->labels != NULL) {
        const struct sym *s;
        size_t i = r->n >> 1;
        if (UNLIKELY(ref >= r->n_syms))
            return fail(c, at, "label ref %llu out of range (%zu symbols)",
                        (unsigned long long)ref, r->n_syms);
        if (UNLIKELY(i >= r->cap))
            return overflow(c, at);
        s = &r->syms[ref];
        if (r->n & 1) {
            r->labels[i].value = s->p;
            r->labels[i].value_len = s->len;
        } else {
            r->labels[i].name = s->p;
            r->labels[i].name_len = s->len;
        }
    }
    r->n++;
    return GW_OK;
}

static inline int v2_refs_field(const struct pctx *c, const uint8_t **pp, const uint8_t *end,
                                uint64_t key, struct refs *r)
{
    const uint8_t *p = *pp;
    uint64_t v;
    int rc;

    if (key == 0x08) {                      /* unpacked */
        const uint8_t *q = get_varint(p, end, &v);
        if (q == NULL)
            return fail(c, p, "truncated or overlong labels_refs in TimeSeries");
        if ((rc = put_ref(c, r, v, p)) != GW_OK)
            return rc;
        *pp = q;
        return GW_OK;
    }
    {                                       /* packed */
        const uint8_t *s = NULL, *e;
        size_t n = 0;
        if ((rc = get_sub(c, &p, end, &s, &n, "labels_refs", "TimeSeries")) != GW_OK)
            return rc;
        e = s + n;
        while (s < e) {
            const uint8_t *q = get_varint(s, e, &v);
            if (UNLIKELY(q == NULL))
                return fail(c, s, "truncated or overlong packed labels_refs in TimeSeries");
            if (UNLIKELY((rc = put_ref(c, r, v, s)) != GW_OK))
                return rc;
            s = q;
        }
        *pp = p;
        return GW_OK;
    }
}

/* Exemplar { labels = 1 (v1: Label messages; v2: uint32 refs, packed or
 * not); double value = 2; int64 timestamp = 3; }. Count mode (ex NULL):
 * adds its labels to *n_labels. Fill mode: fills ex, its labels at lab
 * (room for cap). */
static int parse_exemplar(const struct pctx *c, const uint8_t *p, const uint8_t *end, struct gw_rw_exemplar *ex,
                          struct gw_label *lab, size_t cap, const struct sym *syms, size_t n_syms, int v2,
                          size_t *n_labels)
{
    const uint8_t *start = p;
    uint64_t vbits = 0, ts = 0;
    size_t nl = 0;
    struct refs r = { 0, ex != NULL ? lab : NULL, cap, syms, n_syms };
    while (p < end) {
        const uint8_t *at = p, *s = NULL, *q;
        size_t n = 0;
        uint64_t key = 0;
        int rc = get_key(c, &p, end, &key, "Exemplar");
        if (rc != GW_OK)
            return rc;
        if (!v2 && key == 0x0A) {
            if ((rc = get_sub(c, &p, end, &s, &n, "labels", "Exemplar")) != GW_OK)
                return rc;
            if (ex != NULL) {
                if (nl >= cap)
                    return overflow(c, at);
                if ((rc = parse_label(c, s, s + n, &lab[nl])) != GW_OK)
                    return rc;
            }
            nl++;
        } else if (v2 && (key == 0x0A || key == 0x08)) {
            if ((rc = v2_refs_field(c, &p, end, key, &r)) != GW_OK)
                return rc;
        } else if (key == 0x11) {
            if (end - p < 8)
                return fail(c, p, "truncated value in Exemplar");
            vbits = load_le64(p);
            p += 8;
        } else if (key == 0x18) {
            if ((q = get_varint(p, end, &ts)) == NULL)
                return fail(c, p, "truncated or overlong timestamp in Exemplar");
            p = q;
        } else if ((key >> 3) >= 1 && (key >> 3) <= 3) {
            return wrong_wt(c, at, key, (key >> 3) == 1 ? "labels" : (key >> 3) == 2 ? "value" : "timestamp",
                            "Exemplar");
        } else if ((rc = skip_value(c, &p, end, key, at, "Exemplar")) != GW_OK) {
            return rc;
        }
    }
    if (v2) {
        if (r.n & 1)
            return fail(c, start, "exemplar labels_refs has odd length %zu", r.n);
        nl = r.n >> 1;
    }
    *n_labels = nl;
    if (ex != NULL) {
        ex->labels = lab;
        ex->n_labels = (uint32_t)nl;
        ex->t = (int64_t)ts;
        memcpy(&ex->v, &vbits, sizeof ex->v);
    }
    return GW_OK;
}

/* A TimeSeries' exemplars field (key read at at): parsed into f in fill
 * mode (f != NULL), its labels counted into k in count mode. */
static int series_exemplar(const struct pctx *c, const uint8_t **pp, const uint8_t *end, const uint8_t *at,
                           struct fill *f, struct counts *k, const struct sym *syms, size_t n_syms, int v2,
                           uint32_t *count)
{
    const uint8_t *s = NULL;
    size_t n = 0, nl = 0;
    int rc;
    if ((rc = get_sub(c, pp, end, &s, &n, "exemplars", "TimeSeries")) != GW_OK)
        return rc;
    if (f != NULL) {
        if (f->ex == f->ex_end)
            return overflow(c, at);
        rc = parse_exemplar(c, s, s + n, f->ex, f->exlab, (size_t)(f->exlab_end - f->exlab), syms, n_syms, v2, &nl);
        if (rc != GW_OK)
            return rc;
        f->ex++;
        f->exlab += nl;
    } else {
        if ((rc = parse_exemplar(c, s, s + n, NULL, NULL, 0, NULL, 0, v2, &nl)) != GW_OK)
            return rc;
        k->n_exlabels += nl;
    }
    ++*count;
    return GW_OK;
}

/* One v2 TimeSeries. Count mode: ser == NULL, accumulates into k.
 * Fill mode: fills ser and advances f. */
static int v2_series(const struct pctx *c, const uint8_t *p, const uint8_t *end,
                     struct counts *k, struct fill *f, struct gw_rw_series *ser,
                     const struct sym *syms, size_t n_syms)
{
    const uint8_t *start = p;
    struct refs r = { 0, NULL, 0, syms, n_syms };
    struct v2_md md = { 0, 0, 0, 0, NULL };
    uint32_t n_samples = 0, n_hist = 0, n_ex = 0;

    series_begin(f, ser);
    if (ser != NULL) {
        r.labels = f->lab;
        r.cap = (size_t)(f->lab_end - f->lab);
    }
    while (p < end) {
        const uint8_t *at = p, *s = NULL;
        size_t n = 0;
        uint64_t key = 0;
        int rc = get_key(c, &p, end, &key, "TimeSeries");
        if (UNLIKELY(rc != GW_OK))
            return rc;
        switch (key) {
        case 0x0A:
        case 0x08:
            rc = v2_refs_field(c, &p, end, key, &r);
            break;
        case 0x12:
            rc = series_samples(c, &p, end, at, ser != NULL ? f : NULL, 1, &n_samples);
            break;
        case 0x1A:
            rc = series_walked(c, &p, end, ser != NULL ? f : NULL, "histograms", "Histogram", &n_hist);
            break;
        case 0x22:
            rc = series_exemplar(c, &p, end, at, ser != NULL ? f : NULL, k, syms, n_syms, 1, &n_ex);
            break;
        case 0x2A:
            if ((rc = get_sub(c, &p, end, &s, &n, "metadata", "TimeSeries")) != GW_OK)
                return rc;
            rc = v2_parse_metadata(c, s, s + n, &md);
            break;
        case 0x30: {                         /* created_timestamp (rc.3), not kept */
            uint64_t v;
            const uint8_t *q = get_varint(p, end, &v);
            if (q == NULL)
                return fail(c, p, "truncated or overlong created_timestamp in TimeSeries");
            p = q;
            break;
        }
        default:
            if ((key >> 3) >= 1 && (key >> 3) <= 6)
                return wrong_wt(c, at, key, "known field", "TimeSeries");
            rc = skip_value(c, &p, end, key, at, "TimeSeries");
        }
        if (UNLIKELY(rc != GW_OK))
            return rc;
    }
    if (r.n & 1)
        return fail(c, start, "labels_refs has odd length %zu", r.n);

    if (ser == NULL) {
        k->n_labels += r.n >> 1;
        k->n_samples += n_samples;
        k->n_hist += n_hist;
        k->n_ex += n_ex;
        if (v2_md_nonzero(&md))
            k->n_metadata++;
        return GW_OK;
    }

    ser->n_labels = (uint32_t)(r.n >> 1);
    ser->n_samples = n_samples;
    ser->n_histograms = n_hist;
    ser->n_exemplars = n_ex;
    f->lab += ser->n_labels;
    f->n_hist += n_hist;
    f->n_ex += n_ex;
    if (v2_md_nonzero(&md)) {
        struct gw_rw_metadata *m = f->md;
        if (md.help_ref >= n_syms)
            return fail(c, md.at, "metadata help_ref %llu out of range (%zu symbols)",
                        (unsigned long long)md.help_ref, n_syms);
        if (md.unit_ref >= n_syms)
            return fail(c, md.at, "metadata unit_ref %llu out of range (%zu symbols)",
                        (unsigned long long)md.unit_ref, n_syms);
        if (m == f->md_end)
            return overflow(c, md.at);
        m->type = metric_type(md.type);
        m->help = syms[md.help_ref].p;
        m->help_len = syms[md.help_ref].len;
        m->unit = syms[md.unit_ref].p;
        m->unit_len = syms[md.unit_ref].len;
        m->name = empty_str;
        m->name_len = 0;
        for (uint32_t i = 0; i < ser->n_labels; i++) {
            if (ser->labels[i].name_len == 8 && memcmp(ser->labels[i].name, "__name__", 8) == 0) {
                m->name = ser->labels[i].value;
                m->name_len = ser->labels[i].value_len;
                break;
            }
        }
        f->md++;
    }
    return GW_OK;
}

/* One walk over the fields of a v2 Request, in one of three passes.
 * Count (k set): counts symbols and series into k. Symbols (k and f NULL):
 * fills out_syms[0..n_syms) and checks symbols[0] is empty. Fill (f set):
 * fills what f points at, resolving label refs in syms. */
static int v2_request(const struct pctx *c, const uint8_t *p, const uint8_t *end, struct counts *k,
                      struct fill *f, struct sym *out_syms, const struct sym *syms, size_t n_syms)
{
    size_t n_seen = 0;
    int sym_pass = k == NULL && f == NULL;
    while (p < end) {
        const uint8_t *at = p, *s = NULL;
        size_t n = 0;
        uint64_t key = 0;
        int rc = get_key(c, &p, end, &key, "Request");
        if (rc != GW_OK)
            return rc;
        if (key == 0x22) {
            if ((rc = get_sub(c, &p, end, &s, &n, "symbols", "Request")) != GW_OK)
                return rc;
            if (sym_pass) {
                if (n_seen == n_syms)
                    return overflow(c, at);
                if (n_seen == 0 && n != 0)
                    return fail(c, at, "symbols[0] must be the empty string, got %zu bytes", n);
                out_syms[n_seen].p = n ? (const char *)s : empty_str;
                out_syms[n_seen].len = (uint32_t)n;
                n_seen++;
            } else if (k != NULL) {
                k->n_symbols++;
            }
        } else if (key == 0x2A) {
            if ((rc = get_sub(c, &p, end, &s, &n, "timeseries", "Request")) != GW_OK)
                return rc;
            if (sym_pass)
                continue;
            if (f != NULL && f->series == f->series_end)
                return overflow(c, at);
            if ((rc = v2_series(c, s, s + n, k, f, f != NULL ? f->series : NULL, syms, n_syms)) != GW_OK)
                return rc;
            if (f != NULL)
                f->series++;
            else
                k->n_series++;
        } else if ((key >> 3) == 4 || (key >> 3) == 5) {
            return wrong_wt(c, at, key, (key >> 3) == 4 ? "symbols" : "timeseries", "Request");
        } else if ((rc = skip_value(c, &p, end, key, at, "Request")) != GW_OK) {
            return rc;
        }
    }
    return GW_OK;
}

/* ---- entry point ------------------------------------------------------- */

static struct gw_rw_series no_series;
static struct gw_label no_label;
static struct gw_sample no_sample;
static struct gw_rw_metadata no_md;
static struct gw_rw_exemplar no_ex;
static struct gw_label no_exlabel;

int gw_rw_decode(const uint8_t *pb, size_t len, int version, struct gw_arena *a,
                 struct gw_rw_request *out, struct gw_error *err)
{
    struct pctx c = { pb, err };
    struct counts k;
    struct fill f;
    struct sym *syms = NULL;
    void *vs, *vl, *vm, *vsm, *vex, *vexl;
    const uint8_t *end;
    int rc;

    if ((pb == NULL && len > 0) || a == NULL || out == NULL)
        return gw_error_set(err, GW_EINVAL, "remote write: invalid arguments");
    if (version != 1 && version != 2)
        return gw_error_set(err, GW_EINVAL, "remote write: unknown protocol version %d", version);
    if (len > UINT32_MAX)
        return gw_error_set(err, GW_ETOOLARGE, "remote write: body of %zu bytes is too large", len);
    end = len ? pb + len : pb;   /* NULL + 0 is undefined */

    memset(&k, 0, sizeof k);
    rc = version == 1 ? v1_request(&c, pb, end, &k, NULL) : v2_request(&c, pb, end, &k, NULL, NULL, NULL, 0);
    if (rc != GW_OK)
        return rc;

    if ((rc = arena_array(a, k.n_series, sizeof(struct gw_rw_series), &vs, "series", err)) != GW_OK ||
        (rc = arena_array(a, k.n_labels, sizeof(struct gw_label), &vl, "labels", err)) != GW_OK ||
        (rc = arena_array(a, k.n_samples, sizeof(struct gw_sample), &vsm, "samples", err)) != GW_OK ||
        (rc = arena_array(a, k.n_metadata, sizeof(struct gw_rw_metadata), &vm, "metadata", err)) != GW_OK ||
        (rc = arena_array(a, (size_t)k.n_ex, sizeof(struct gw_rw_exemplar), &vex, "exemplars", err)) != GW_OK ||
        (rc = arena_array(a, k.n_exlabels, sizeof(struct gw_label), &vexl, "exemplar labels", err)) != GW_OK)
        return rc;

    /* Empty arrays point at a static placeholder so cursor arithmetic never
     * touches a NULL pointer; the request gets NULL for them. */
    f.series = vs != NULL ? vs : &no_series;
    f.series_end = f.series + k.n_series;
    f.lab = vl != NULL ? vl : &no_label;
    f.lab_end = f.lab + k.n_labels;
    f.smp = vsm != NULL ? vsm : &no_sample;
    f.smp_end = f.smp + k.n_samples;
    f.md = vm != NULL ? vm : &no_md;
    f.md_end = f.md + k.n_metadata;
    f.ex = vex != NULL ? vex : &no_ex;
    f.ex_end = f.ex + k.n_ex;
    f.exlab = vexl != NULL ? vexl : &no_exlabel;
    f.exlab_end = f.exlab + k.n_exlabels;
    f.n_hist = f.n_ex = 0;

    if (version == 1) {
        rc = v1_request(&c, pb, end, NULL, &f);
    } else {
        void *vsy;
        if ((rc = arena_array(a, k.n_symbols, sizeof(struct sym), &vsy, "symbols", err)) != GW_OK)
            return rc;
        syms = vsy;
        rc = v2_request(&c, pb, end, NULL, NULL, syms, NULL, k.n_symbols);
        if (rc == GW_OK)
            rc = v2_request(&c, pb, end, NULL, &f, NULL, syms, k.n_symbols);
    }
    if (rc != GW_OK)
        return rc;
    if (f.series != f.series_end || f.lab != f.lab_end || f.smp != f.smp_end || f.ex != f.ex_end ||
        f.exlab != f.exlab_end)
        return overflow(&c, end);

    out->version = version;
    out->series = vs;
    out->n_series = k.n_series;
    out->metadata = vm;
    out->n_metadata = vm != NULL ? (size_t)(f.md - (struct gw_rw_metadata *)vm) : 0;
    out->n_samples = k.n_samples;
    out->n_histograms = f.n_hist;
    out->n_exemplars = f.n_ex;
    return GW_OK;
}

/* ---- Content-Type negotiation ------------------------------------------ */

static void trim(const char **s, const char **e)
{
    while (*s < *e && (**s == ' ' || **s == '\t'))
        (*s)++;
    while (*e > *s && ((*e)[-1] == ' ' || (*e)[-1] == '\t'))
        (*e)--;
}

static int span_eq(const char *s, const char *e, const char *lit, int icase)
{
    size_t n = strlen(lit);
    if ((size_t)(e - s) != n)
        return 0;
    return icase ? strncasecmp(s, lit, n) == 0 : memcmp(s, lit, n) == 0;
}

int gw_rw_version_from_content_type(const char *content_type)
{
    const char *s, *e, *part_end;

    if (content_type == NULL)
        return 1;
    s = content_type;
    e = s + strlen(s);
    trim(&s, &e);
    if (s == e)
        return 1;

    part_end = memchr(s, ';', (size_t)(e - s));
    if (part_end == NULL)
        part_end = e;
    {
        const char *ms = s, *me = part_end;
        trim(&ms, &me);
        if (!span_eq(ms, me, "application/x-protobuf", 1))
            return GW_EUNSUPPORTED;
    }
    while (part_end < e) {
        const char *ps = part_end + 1, *pe, *eq, *ks, *ke, *vs, *ve;
        pe = memchr(ps, ';', (size_t)(e - ps));
        if (pe == NULL)
            pe = e;
        part_end = pe;
        eq = memchr(ps, '=', (size_t)(pe - ps));
        if (eq == NULL || memchr(eq + 1, '=', (size_t)(pe - eq - 1)) != NULL)
            return GW_EUNSUPPORTED;          /* parameters must be key=value */
        ks = ps;
        ke = eq;
        vs = eq + 1;
        ve = pe;
        trim(&ks, &ke);
        trim(&vs, &ve);
        if (ve - vs >= 2 && *vs == '"' && ve[-1] == '"') {
            vs++;
            ve--;
        }
        if (!span_eq(ks, ke, "proto", 1))
            continue;
        if (span_eq(vs, ve, "prometheus.WriteRequest", 0))
            return 1;
        if (span_eq(vs, ve, "io.prometheus.write.v2.Request", 0))
            return 2;
        return GW_EUNSUPPORTED;
    }
    return 1;
}
