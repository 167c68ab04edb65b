/* gpuwatch/rw.h - Prometheus remote write (1.0 and 2.0) and remote read
 * wire formats. The only module that includes snappy-c.h and the protobuf-c
 * generated headers (proto/remote.proto, proto/types.proto, proto/write_v2.proto).
 *
 * Write bodies are decoded by a zero-copy pass over the protobuf wire format
 * (label strings point into the decompressed body, samples go to the
 * request arena); it accepts packed and unpacked repeated fields and skips
 * unknown fields, like any protobuf parser. The protobuf-c generated code
 * encodes/decodes remote read and is the reference in the decoder's tests.
 * Layer: L2 storage and wire (src/ingest/); includes only its layer and below (docs/architecture.md). */
#ifndef GW_RW_H
#define GW_RW_H

#include <stddef.h>
#include <stdint.h>
#include "gpuwatch/arena.h"
#include "gpuwatch/buf.h"
#include "gpuwatch/err.h"
#include "gpuwatch/labels.h"
#include "gpuwatch/matcher.h"

#define GW_RW_MAX_BODY (32u << 20)          /* compressed and decompressed cap */

/* ---- snappy block format ---- */
/* Decompresses in into out (reset first). Checks the declared length
 * against max_out before allocating: GW_ETOOLARGE if larger; GW_EPARSE if
 * the data is not valid snappy. */
int gw_snappy_decode(const uint8_t *in, size_t len, size_t max_out, struct gw_buf *out, struct gw_error *err);
int gw_snappy_encode(const uint8_t *in, size_t len, struct gw_buf *out);  /* appends */

/* ---- remote write ---- */
struct gw_sample {
    int64_t t;       /* ms since epoch */
    double v;        /* bit-exact as sent */
};

/* Exemplar (1.0: labels = 1 as Label messages; 2.0: labels_refs = 1;
 * both: double value = 2, int64 timestamp = 3). */
struct gw_rw_exemplar {
    struct gw_label *labels;     /* arena; strings borrow from the body (v2: from symbols) */
    uint32_t n_labels;
    int64_t t;                   /* ms; 0 when absent */
    double v;                    /* bit-exact as sent */
};

struct gw_rw_series {
    struct gw_label *labels;     /* arena; strings borrow from the body */
    uint32_t n_labels;
    struct gw_sample *samples;   /* arena */
    uint32_t n_samples;
    uint32_t n_histograms;       /* native histograms seen (not stored) */
    uint32_t n_exemplars;
    struct gw_rw_exemplar *exemplars;   /* arena; n_exemplars of them */
};

struct gw_rw_metadata {
    uint8_t type;                /* 0 unknown, 1 counter, 2 gauge, 3 histogram, 4 gaugehistogram,
                                    5 summary, 6 info, 7 stateset */
    const char *name; uint32_t name_len;   /* metric family (v1) or __name__ (v2) */
    const char *help; uint32_t help_len;
    const char *unit; uint32_t unit_len;
};

struct gw_rw_request {
    int version;                 /* 1 or 2 */
    struct gw_rw_series *series; /* arena */
    size_t n_series;
    struct gw_rw_metadata *metadata;
    size_t n_metadata;
    uint64_t n_samples, n_histograms, n_exemplars;   /* totals */
};

/* Content-Type -> 1 (absent, "application/x-protobuf",
 * ";proto=prometheus.WriteRequest"), 2 (";proto=io.prometheus.write.v2.Request"),
 * or GW_EUNSUPPORTED. Parameters and case are handled like client_golang. */
int gw_rw_version_from_content_type(const char *content_type);

/* Decodes a protobuf body of the given version. Labels are NOT validated
 * here (see gw_labels_normalize). GW_OK, GW_EPARSE (malformed, with the
 * offset and field in err), GW_ENOMEM (arena ceiling), GW_EINVAL (version
 * not 1 or 2), GW_ETOOLARGE (len > UINT32_MAX). Everything in *out lives in
 * the arena and borrows strings from pb: keep both until done. Empty
 * strings point at a static "". Exemplars are decoded with their labels
 * (v2: labels_refs resolved like the series', an odd count or a ref out of
 * range is GW_EPARSE). v2: one gw_rw_metadata per series whose
 * Metadata is not all-default, name = the series' __name__ value ("" if
 * none); samples' start_timestamp and the series created_timestamp are
 * parsed and dropped. out->series / out->metadata are NULL when empty. */
int gw_rw_decode(const uint8_t *pb, size_t len, int version, struct gw_arena *a,
                 struct gw_rw_request *out, struct gw_error *err);

/* Encodes a v1 WriteRequest (protobuf, not compressed), appending to out -
 * for tests, bench and the simulator. Labels must be given sorted. Encodes
 * labels, samples, exemplars and metadata (histograms are not kept by the
 * decoder, so not encoded). Doubles are written unless all bits are zero
 * (-0.0 survives). GW_OK, GW_EINVAL, GW_ETOOLARGE/GW_ENOMEM from out. */
int gw_rw_encode_v1(const struct gw_rw_request *req, struct gw_buf *out);

/* Encodes a v2 io.prometheus.write.v2.Request (protobuf, not compressed),
 * appending to out - what forwarding with protocol 2 sends. Symbols are
 * deduplicated (symbols[0] = "", the rest in first-use order); one
 * TimeSeries per series with packed labels_refs and its samples in the
 * given order. Only labels and samples are encoded (exemplars, metadata
 * and histograms are not). Labels should be sorted, as the spec requires.
 * GW_EINVAL on NULL arrays or an empty label name or value (the spec
 * forbids them); GW_ENOMEM, GW_ETOOLARGE from out. */
int gw_rw_encode_v2(const struct gw_rw_request *req, struct gw_buf *out);

/* Streaming remote write 1.0 for a sender that encodes each series' labels
 * once and then sends one sample at a time (the simulator):
 * gw_rw_labels_pb writes a sorted label set as TimeSeries label fields
 * (gw_rw_labels_pb_size bytes; returns the bytes written);
 * gw_rw_append_sample appends TimeSeries { those labels, Sample{v, t} } to a
 * WriteRequest body in out - the same bytes gw_rw_encode_v1 writes for a
 * one-sample series. GW_OK, or GW_ETOOLARGE/GW_ENOMEM from out. */
size_t gw_rw_labels_pb_size(const struct gw_label *ls, size_t n);
size_t gw_rw_labels_pb(const struct gw_label *ls, size_t n, uint8_t *out);
int gw_rw_append_sample(struct gw_buf *out, const uint8_t *labels_pb, size_t len, int64_t t, double v);

/* ---- remote read ---- */
struct gw_read_query {
    int64_t start_ms, end_ms;              /* inclusive */
    struct gw_matcher *matchers;           /* owned */
    size_t n_matchers;
};
struct gw_read_request {
    struct gw_read_query *queries;         /* owned */
    size_t n_queries;
    int streamed;                          /* 1: STREAMED_XOR_CHUNKS chosen, 0: SAMPLES */
};
/* Decodes a (decompressed) ReadRequest and compiles its matchers. The
 * response type is the first accepted type we implement (empty => SAMPLES).
 * GW_EPARSE / GW_EINVAL with detail. */
int gw_read_request_decode(const uint8_t *pb, size_t len, struct gw_read_request *out, struct gw_error *err);
void gw_read_request_free(struct gw_read_request *r);

/* SAMPLES response: add series per query (queries in order, series sorted
 * by the caller), then finish to get the snappy-compressed ReadResponse
 * (appended to out). new() returns NULL on ENOMEM. add(): labels are
 * canonical bytes (labels.h); GW_EINVAL (bad query_index), GW_ECORRUPT /
 * GW_ELIMIT (labels), GW_ETOOLARGE (response over 1 GiB uncompressed). */
struct gw_read_samples;
struct gw_read_samples *gw_read_samples_new(size_t n_queries);
int gw_read_samples_add(struct gw_read_samples *w, size_t query_index,
                        const uint8_t *labels, size_t labels_len,
                        const int64_t *t, const double *v, size_t n);
int gw_read_samples_finish(struct gw_read_samples *w, struct gw_buf *out);
void gw_read_samples_free(struct gw_read_samples *w);

/* STREAMED_XOR_CHUNKS: appends one frame (uvarint len | crc32c BE | msg)
 * holding one ChunkedSeries with the given XOR chunks. Layout and a worked
 * example: top of src/ingest/remote_read.c. GW_ETOOLARGE above 32 MiB. */
struct gw_read_chunk {
    int64_t mint, maxt;
    const uint8_t *data; size_t len;       /* XOR chunk bytes (gw_xor_bytes) */
};
int gw_read_chunked_frame(struct gw_buf *out, int64_t query_index,
                          const uint8_t *labels, size_t labels_len,
                          const struct gw_read_chunk *chunks, size_t n_chunks);

/* Test/bench helpers: the client side of remote read. request_encode
 * appends the protobuf ReadRequest (not compressed) accepting
 * [STREAMED_XOR_CHUNKS, SAMPLES] like Prometheus when accept_streamed, else
 * [SAMPLES]. The decoders return the callback's first non-GW_OK result. */
int gw_read_request_encode(const struct gw_read_request *r, int accept_streamed, struct gw_buf *out);
/* Decodes a SAMPLES ReadResponse body (snappy-compressed, as served) and
 * calls cb per series with canonical labels and samples (borrowed). */
typedef int (*gw_read_series_cb)(void *ud, size_t query_index, const uint8_t *labels, size_t labels_len,
                                 const int64_t *t, const double *v, size_t n);
int gw_read_response_decode(const uint8_t *body, size_t len, gw_read_series_cb cb, void *ud,
                            struct gw_error *err);
/* Decodes a STREAMED_XOR_CHUNKS body (all frames) and calls cb per
 * ChunkedSeries frame with its chunks decoded into samples. GW_ECORRUPT on
 * a CRC mismatch or a bad XOR chunk, GW_EPARSE on a truncated frame or bad
 * protobuf, GW_EUNSUPPORTED for non-XOR chunks. */
int gw_read_chunked_decode(const uint8_t *body, size_t len, gw_read_series_cb cb, void *ud,
                           struct gw_error *err);


/* ---- samples as text with timestamps (openmetrics.c; format at its top) ----
 * Writer: call gw_om_series per series, series sorted by labels (so a metric
 * family's series are contiguous), then gw_om_finish ("# EOF"). strict:
 * pure OpenMetrics (stale markers left out and counted in dropped, every
 * NaN written "NaN"); else NaNs other than Prometheus' own are written
 * "NaN:<hex bits>" so gpuwatch import restores them bit-exact. */
struct gw_om_writer {
    int strict;
    char family[1024];          /* current metric family */
    uint64_t samples, dropped;
};
void gw_om_writer_init(struct gw_om_writer *w, int strict);
/* labels: canonical bytes with a __name__. GW_OK, GW_ECORRUPT (labels),
 * GW_EINVAL (no __name__), GW_ENOMEM / GW_ETOOLARGE from out. */
int gw_om_series(struct gw_om_writer *w, struct gw_buf *out, const uint8_t *labels, size_t len, const int64_t *t,
                 const double *v, size_t n);
int gw_om_finish(struct gw_om_writer *w, struct gw_buf *out);
/* Reader: OpenMetrics (last non-blank line "# EOF"; timestamps in seconds)
 * or Prometheus text (timestamps in ms); *is_om says which. cb gets each
 * sample with its labels (__name__ first, unsorted, unvalidated; borrowed
 * for the call) and line number; a non-GW_OK return stops and is returned.
 * GW_EPARSE with "FILE:LINE: what" in err for a malformed line, a sample
 * without a timestamp, or a NUL byte. */
typedef int (*gw_om_sample_cb)(void *ud, const struct gw_label *ls, size_t n, int64_t t, double v, size_t line);
int gw_om_parse(const char *file, const char *text, size_t len, int *is_om, gw_om_sample_cb cb, void *ud,
                struct gw_error *err);

#endif /* GW_RW_H */
