/* make_seeds.c - writes the binary seed inputs of the fuzz targets with
 * the product's own encoders, so every seed is a valid input the decoder
 * meets in practice: remote write 1.0 (gw_rw_encode_v1) and 2.0 (the
 * protobuf-c reference), snappy blocks, remote read requests and both
 * response forms, XOR chunks, blocks, split columns and store blobs, and
 * WAL segments written by the WAL writer with the db's records.
 * Usage: fuzz_make_seeds CORPUS_DIR (tests/corpus); writes
 * CORPUS_DIR/<target>/seed-*.bin, overwriting. Text seeds (PromQL,
 * OpenMetrics, HTTP parameters, selectors, events) are kept as files. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db/db_int.h"
#include "db/downsample_int.h"
#include "gpuwatch/block.h"
#include "gpuwatch/buf.h"
#include "gpuwatch/chunk.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/labels.h"
#include "gpuwatch/matcher.h"
#include "gpuwatch/rw.h"
#include "gpuwatch/wal.h"
#include "write_v2.pb-c.h"

static const char *root;

static void die(const char *what)
{
    fprintf(stderr, "make_seeds: %s\n", what);
    exit(1);
}

/* Writes CORPUS/target/name from a mode byte (when mode >= 0) and data. */
static void put_seed(const char *target, const char *name, int mode, const void *data, size_t len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", root, target);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/%s", root, target, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        die(path);
    if (mode >= 0)
        fputc(mode, f);
    if (len && fwrite(data, 1, len, f) != len)
        die(path);
    fclose(f);
}

static void snappy(const struct gw_buf *in, struct gw_buf *out)
{
    gw_buf_init(out, 0);
    if (gw_snappy_encode(in->data, in->len, out) != GW_OK)
        die("snappy encode");
}

/* ---- remote write 1.0 and 2.0 ---- */

static void seeds_rw_v1(void)
{
    struct gw_label l0[] = { { "__name__", 8, "DCGM_FI_DEV_GPU_TEMP", 20 }, { "gpu", 3, "0", 1 },
                             { "instance", 8, "n1:9400", 7 } };
    struct gw_label l1[] = { { "__name__", 8, "up", 2 }, { "job", 3, "node", 4 } };
    struct gw_sample s0[] = { { 1700000000000, 41.0 }, { 1700000015000, 42.5 }, { 1700000030000, -0.0 } };
    struct gw_sample s1[] = { { 1700000000000, 1.0 }, { 1700000001000, NAN } };
    struct gw_rw_series ser[] = { { l0, 3, s0, 3, 0, 0 }, { l1, 2, s1, 2, 0, 0 } };
    struct gw_rw_metadata md[] = { { 2, "DCGM_FI_DEV_GPU_TEMP", 20, "GPU temperature (C).", 20, "celsius", 7 } };
    struct gw_rw_request r = { .version = 1, .series = ser, .n_series = 2, .metadata = md, .n_metadata = 1 };
    struct gw_buf b, z;
    gw_buf_init(&b, 0);
    if (gw_rw_encode_v1(&r, &b) != GW_OK)
        die("rw v1 encode");
    put_seed("remote_write", "seed-v1-raw.bin", 0, b.data, b.len);
    snappy(&b, &z);
    put_seed("remote_write", "seed-v1-snappy.bin", 2, z.data, z.len);
    put_seed("snappy", "seed-v1-body.bin", -1, z.data, z.len);
    gw_buf_free(&z);
    gw_buf_free(&b);
    const char *ct = "application/x-protobuf;proto=io.prometheus.write.v2.Request";
    put_seed("remote_write", "seed-content-type.bin", 4 | 1, ct, strlen(ct));
}

static uint8_t *v2_pack(size_t *len)
{
    static char *sym[] = { "", "__name__", "DCGM_FI_DEV_XID_ERRORS", "gpu", "0", "Hostname", "n7", "XID code",
                           "errors", "trace_id", "abc" };
    Io__Prometheus__Write__V2__Request req;
    Io__Prometheus__Write__V2__TimeSeries ts, *tsp[1] = { &ts };
    Io__Prometheus__Write__V2__Sample s[2], *sp[2] = { &s[0], &s[1] };
    Io__Prometheus__Write__V2__Exemplar ex, *exp_[1] = { &ex };
    Io__Prometheus__Write__V2__Histogram h, *hp[1] = { &h };
    Io__Prometheus__Write__V2__Metadata md;
    uint32_t refs[] = { 1, 2, 3, 4, 5, 6 }, exrefs[] = { 9, 10 };
    io__prometheus__write__v2__request__init(&req);
    io__prometheus__write__v2__time_series__init(&ts);
    io__prometheus__write__v2__exemplar__init(&ex);
    io__prometheus__write__v2__histogram__init(&h);
    io__prometheus__write__v2__metadata__init(&md);
    for (int i = 0; i < 2; i++) {
        io__prometheus__write__v2__sample__init(&s[i]);
        s[i].value = 43.0 + i;
        s[i].timestamp = 1700000000000 + 15000 * i;
    }
    s[1].start_timestamp = 1699999999000;
    ex.n_labels_refs = 2;
    ex.labels_refs = exrefs;
    ex.value = 43;
    ex.timestamp = 1700000000000;
    h.count_case = IO__PROMETHEUS__WRITE__V2__HISTOGRAM__COUNT_COUNT_INT;
    h.count_int = 3;
    h.sum = 1.5;
    h.timestamp = 1700000000000;
    md.type = IO__PROMETHEUS__WRITE__V2__METADATA__METRIC_TYPE__METRIC_TYPE_COUNTER;
    md.help_ref = 7;
    md.unit_ref = 8;
    ts.n_labels_refs = 6;
    ts.labels_refs = refs;
    ts.n_samples = 2;
    ts.samples = sp;
    ts.n_exemplars = 1;
    ts.exemplars = exp_;
    ts.n_histograms = 1;
    ts.histograms = hp;
    ts.metadata = &md;
    ts.created_timestamp = 1699990000000;
    req.n_symbols = sizeof sym / sizeof sym[0];
    req.symbols = sym;
    req.n_timeseries = 1;
    req.timeseries = tsp;
    *len = io__prometheus__write__v2__request__get_packed_size(&req);
    uint8_t *b = malloc(*len);
    if (b == NULL)
        die("oom");
    io__prometheus__write__v2__request__pack(&req, b);
    return b;
}

static void seeds_rw_v2(void)
{
    size_t len;
    uint8_t *pb = v2_pack(&len);
    struct gw_buf b = { 0 }, z;
    put_seed("remote_write", "seed-v2-raw.bin", 1, pb, len);
    gw_buf_init(&b, 0);
    if (gw_buf_append(&b, pb, len) != GW_OK)
        die("oom");
    snappy(&b, &z);
    put_seed("remote_write", "seed-v2-snappy.bin", 3, z.data, z.len);
    put_seed("snappy", "seed-v2-body.bin", -1, z.data, z.len);
    gw_buf_free(&z);
    gw_buf_free(&b);
    free(pb);
    /* snappy copies of every offset width: a long repetitive text */
    gw_buf_init(&b, 0);
    for (int i = 0; i < 3000; i++)
        gw_buf_printf(&b, "gpu_%d{node=\"n%d\"} %d\n", i % 17, i % 5, i * 7);
    snappy(&b, &z);
    put_seed("snappy", "seed-text.bin", -1, z.data, z.len);
    gw_buf_free(&z);
    gw_buf_free(&b);
}

/* ---- remote read ---- */

static void seeds_remote_read(void)
{
    struct gw_read_query q[2] = { { 1700000000000, 1700003600000, NULL, 2 }, { 10, 20, NULL, 1 } };
    struct gw_error err;
    struct gw_matcher m0[2], m1[1];
    if (gw_matcher_init(&m0[0], GW_MATCH_EQ, "__name__", 8, "DCGM_FI_DEV_GPU_TEMP", 20, &err) ||
        gw_matcher_init(&m0[1], GW_MATCH_RE, "gpu", 3, "0|1", 3, &err) ||
        gw_matcher_init(&m1[0], GW_MATCH_NRE, "instance", 8, "a.*", 3, &err))
        die("matcher");
    q[0].matchers = m0;
    q[1].matchers = m1;
    struct gw_read_request r = { q, 2, 0 };
    struct gw_buf b;
    for (int streamed = 0; streamed <= 1; streamed++) {
        gw_buf_init(&b, 0);
        if (gw_read_request_encode(&r, streamed, &b) != GW_OK)
            die("read request encode");
        put_seed("remote_read", streamed ? "seed-request-streamed.bin" : "seed-request.bin", 0, b.data, b.len);
        gw_buf_free(&b);
    }
    gw_matcher_free(&m0[0]);
    gw_matcher_free(&m0[1]);
    gw_matcher_free(&m1[0]);

    struct gw_label ls[] = { { "__name__", 8, "up", 2 }, { "job", 3, "node", 4 } };
    uint8_t lab[64];
    size_t ll = gw_labels_encode(ls, 2, lab);
    int64_t t[] = { 1000, 2000, 3000 };
    double v[] = { 1, 0.5, NAN };
    struct gw_read_samples *w = gw_read_samples_new(2);
    if (w == NULL || gw_read_samples_add(w, 0, lab, ll, t, v, 3) || gw_read_samples_add(w, 1, lab, ll, t, v, 1))
        die("read samples");
    gw_buf_init(&b, 0);
    if (gw_read_samples_finish(w, &b) != GW_OK)
        die("read samples finish");
    gw_read_samples_free(w);
    put_seed("remote_read", "seed-samples-response.bin", 1, b.data, b.len);
    gw_buf_free(&b);

    struct gw_xor_chunk c;
    gw_xor_init(&c);
    for (int i = 0; i < 3; i++)
        if (gw_xor_append(&c, t[i], v[i]) != GW_OK)
            die("xor append");
    size_t cl;
    const uint8_t *cb = gw_xor_bytes(&c, &cl);
    struct gw_read_chunk ch = { 1000, 3000, cb, cl };
    gw_buf_init(&b, 0);
    if (gw_read_chunked_frame(&b, 0, lab, ll, &ch, 1) || gw_read_chunked_frame(&b, 1, lab, ll, &ch, 1))
        die("chunked frame");
    put_seed("remote_read", "seed-chunked-response.bin", 2, b.data, b.len);
    put_seed("remote_read", "seed-chunked-response-fixcrc.bin", 3, b.data, b.len);
    gw_buf_free(&b);
    gw_xor_free(&c);
}

/* ---- XOR chunks ---- */

static void xor_seed(const char *name, const int64_t *t, const double *v, size_t n)
{
    struct gw_xor_chunk c;
    gw_xor_init(&c);
    for (size_t i = 0; i < n; i++)
        if (gw_xor_append(&c, t[i], v[i]) != GW_OK)
            die("xor append");
    size_t len;
    const uint8_t *b = gw_xor_bytes(&c, &len);
    put_seed("xor", name, -1, b, len);
    gw_xor_free(&c);
}

/* Samples of each kind of series: regular scrape with a counter, jittered
 * times with gauge noise, special values, huge jumps. */
static size_t series_kind(int kind, int64_t *t, double *v, size_t cap)
{
    size_t n = kind == 3 ? 6 : cap;
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        switch (kind) {
        case 0: t[i] = 1700000000000 + 15000 * (int64_t)i; v[i] = (double)(i * 3); break;
        case 1: t[i] = 1700000000000 + 15000 * (int64_t)i + (int64_t)(x % 40) - 20; v[i] = 40 + (double)(x % 1000) / 100; break;
        case 2: t[i] = 1700000000000 + 1000 * (int64_t)i; v[i] = (double)(x >> 11) * 0x1p-53 * 1e6; break;
        default: {
            static const double sp[] = { 0, -0.0, INFINITY, -INFINITY, NAN, 1e308 };
            static const int64_t st[] = { -5000000000000, -1, 0, 1, 4000000000, 9000000000000000 };
            t[i] = st[i];
            v[i] = sp[i];
        }
        }
    }
    return n;
}

static void seeds_xor(void)
{
    int64_t t[200];
    double v[200];
    char name[64];
    for (int k = 0; k < 4; k++) {
        size_t n = series_kind(k, t, v, 120);
        snprintf(name, sizeof name, "seed-kind%d.bin", k);
        xor_seed(name, t, v, n);
    }
    xor_seed("seed-one.bin", t, v, 1);
}

/* ---- blocks, split form, store blobs ---- */

static void put_be32(struct gw_buf *b, uint32_t x)
{
    uint8_t p[4];
    gw_put_be32(p, x);
    if (gw_buf_append(b, p, 4) != GW_OK)
        die("oom");
}

static void seeds_block(void)
{
    int64_t t[300];
    double v[300];
    struct gw_buf b, col, val, blob;
    char name[64];
    struct gw_buf blk[4];
    for (int k = 0; k < 4; k++) {
        size_t n = series_kind(k, t, v, k == 2 ? 300 : 120);
        gw_buf_init(&blk[k], 0);
        if (gw_block_encode(t, v, n, &blk[k]) != GW_OK)
            die("block encode");
        snprintf(name, sizeof name, "seed-block%d.bin", k);
        put_seed("block", name, 0, blk[k].data, blk[k].len);
        /* split form: u16 LE column length, column, value part */
        gw_buf_init(&col, 0);
        gw_buf_init(&val, 0);
        if (gw_block_ts_encode(t, n, &col) != GW_OK || gw_block_values_encode(v, n, &val) != GW_OK)
            die("split encode");
        gw_buf_init(&b, 0);
        uint8_t l2[2] = { (uint8_t)col.len, (uint8_t)(col.len >> 8) };
        if (gw_buf_append(&b, l2, 2) || gw_buf_append(&b, col.data, col.len) || gw_buf_append(&b, val.data, val.len))
            die("oom");
        snprintf(name, sizeof name, "seed-split%d.bin", k);
        put_seed("block", name, 1, b.data, b.len);
        gw_buf_free(&b);
        if (k == 1) {
            /* a GWB2 blob: one column, entry 0 a value part of it, entry 1 a whole block */
            gw_buf_init(&blob, 0);
            if (gw_buf_append(&blob, "GWB2", 4) != GW_OK)
                die("oom");
            put_be32(&blob, 2);
            put_be32(&blob, 1);
            put_be32(&blob, (uint32_t)col.len);               /* column end */
            put_be32(&blob, 3);                               /* sid, end of entry 0 */
            put_be32(&blob, (uint32_t)(1 + val.len));
            put_be32(&blob, 9);
            put_be32(&blob, (uint32_t)(1 + val.len + 1 + blk[0].len));
            /* entries: uvarint ref (c + 1: a value part of column c; 0: a block) */
            if (gw_buf_append(&blob, col.data, col.len) || gw_buf_putc(&blob, 1) ||
                gw_buf_append(&blob, val.data, val.len) || gw_buf_putc(&blob, 0) ||
                gw_buf_append(&blob, blk[0].data, blk[0].len))
                die("oom");
            put_seed("block", "seed-blob-gwb2.bin", 2, blob.data, blob.len);
            gw_buf_free(&blob);
        }
        gw_buf_free(&col);
        gw_buf_free(&val);
    }
    /* format 5 value forms: a counter read at jittered instants (DECIMAL,
     * LPC order, ANS residuals) and a full-precision ratio (BITS, LPC) */
    {
        static int64_t tl[400];
        static double vl[400];
        uint64_t x = 0x9e3779b97f4a7c15ull;
        for (int form = 0; form < 2; form++) {
            for (int i = 0; i < 400; i++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                double u = (double)(x >> 11) / 9007199254740992.0;
                tl[i] = 1700000000000ll + 30000ll * i;
                vl[i] = form == 0 ? floor(5e7 + 977.0 * (30.0 * i + u)) : 0.5 + 0.3 * sin(i / 40.0) + 1e-4 * u;
            }
            gw_buf_init(&b, 0);
            if (gw_block_encode(tl, vl, 400, &b) != GW_OK)
                die("block encode");
            snprintf(name, sizeof name, "seed-block-lpc%d.bin", form);
            put_seed("block", name, 0, b.data, b.len);
            gw_buf_free(&b);
        }
    }
    /* a GWB1 blob of two blocks */
    gw_buf_init(&blob, 0);
    if (gw_buf_append(&blob, "GWB1", 4) != GW_OK)
        die("oom");
    put_be32(&blob, 2);
    put_be32(&blob, 4);
    put_be32(&blob, (uint32_t)blk[0].len);
    put_be32(&blob, 7);
    put_be32(&blob, (uint32_t)(blk[0].len + blk[3].len));
    if (gw_buf_append(&blob, blk[0].data, blk[0].len) || gw_buf_append(&blob, blk[3].data, blk[3].len))
        die("oom");
    put_seed("block", "seed-blob-gwb1.bin", 2, blob.data, blob.len);
    gw_buf_free(&blob);
    for (int k = 0; k < 4; k++)
        gw_buf_free(&blk[k]);
}

/* ---- WAL segments ---- */

static void wal_records(struct gw_wal *w, int64_t t0, int nseries)
{
    struct gw_buf r;
    uint64_t pos;
    gw_buf_init(&r, 0);
    for (int i = 0; i < nseries; i++) {
        char node[16];
        int nl = snprintf(node, sizeof node, "n%d", i);
        struct gw_label ls[] = { { "__name__", 8, "DCGM_FI_DEV_GPU_UTIL", 20 }, { "node", 4, node, (uint32_t)nl } };
        uint8_t lab[128];
        size_t ll = gw_labels_encode(ls, 2, lab);
        if (gw_rec_series_add(&r, (uint64_t)i + 1, lab, ll) != GW_OK)
            die("series record");
    }
    if (gw_wal_append(w, GW_REC_SERIES, r.data, r.len, &pos) != GW_OK)
        die("wal append");
    for (int k = 0; k < 3; k++) {
        gw_buf_reset(&r);
        int64_t base = t0 + 15000 * k;
        if (gw_rec_samples_begin(&r, base) != GW_OK)
            die("samples record");
        for (int i = 0; i < nseries; i++)
            if (gw_rec_samples_add(&r, base, (uint64_t)i + 1, base + i, 50.0 + i + k) != GW_OK)
                die("samples record");
        if (gw_wal_append(w, GW_REC_SAMPLES, r.data, r.len, &pos) != GW_OK)
            die("wal append");
    }
    gw_buf_free(&r);
}

/* The WAL's segments, concatenated (the fuzz target splits them again at
 * each segment magic). */
static void seeds_wal(void)
{
    char dir[] = "/tmp/gw-seeds-XXXXXX";
    if (mkdtemp(dir) == NULL)
        die("mkdtemp");
    struct gw_wal_opts o = { .dir = dir, .segment_bytes = 0, .fsync = GW_FSYNC_OFF };
    struct gw_wal *w;
    struct gw_error err;
    uint64_t next;
    if (gw_wal_open(&w, &o, &err) != GW_OK)
        die("wal open");
    wal_records(w, 1700000000000, 3);
    if (gw_wal_cut(w, &next, &err) != GW_OK)
        die("wal cut");
    wal_records(w, 1700000060000, 2);
    gw_wal_close(w);
    uint32_t *segs;
    size_t n;
    if (gw_wal_segments(dir, &segs, &n, &err) != GW_OK || n != 2)
        die("wal segments");
    struct gw_buf all;
    gw_buf_init(&all, 0);
    for (size_t i = 0; i < n; i++) {
        char path[4200], name[32];
        gw_wal_segment_name(name, sizeof name, segs[i]);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        FILE *f = fopen(path, "rb");
        uint8_t tmp[4096];
        size_t k;
        if (f == NULL)
            die(path);
        size_t start = all.len;
        while ((k = fread(tmp, 1, sizeof tmp, f)) > 0)
            if (gw_buf_append(&all, tmp, k) != GW_OK)
                die("oom");
        fclose(f);
        unlink(path);
        if (i == 0)
            put_seed("wal", "seed-one-segment.bin", 0, all.data + start, all.len - start);
    }
    put_seed("wal", "seed-two-segments.bin", 0, all.data, all.len);
    put_seed("wal", "seed-two-segments-fixcrc.bin", 1, all.data, all.len);
    /* a torn tail: the last record cut short */
    put_seed("wal", "seed-torn-tail.bin", 0, all.data, all.len - 5);
    gw_buf_free(&all);
    free(segs);
    rmdir(dir);
}

/* ---- rollups: a node record and a value of each version ---- */

static void seeds_rollup(void)
{
    int64_t t[2][600];
    double v[2][600];
    struct gw_ds_profiles ps = {0};
    struct gw_ds_cols c[2] = {{0}, {0}};
    struct gw_buf val[2], rec, b;
    for (int k = 0; k < 2; k++) {
        size_t n = series_kind(k, t[k], v[k], 600);
        for (size_t i = 0; i < n; i++)      /* one scrape time for both */
            t[k][i] = 1700000000000LL + (int64_t)i * 30000 + (int64_t)((i * 7919) % 1000);
        if (gw_ds_aggregate(t[k], v[k], n, 5 * 60 * 1000LL, &c[k]) != GW_OK)
            die("aggregate");
        gw_buf_init(&val[k], 0);
        if (gw_ds_encode(&c[k], &ps, &val[k]) != GW_OK)
            die("rollup encode");
    }
    gw_buf_init(&rec, 0);
    if (gw_ds_profiles_encode(&ps, &rec) != GW_OK)
        die("profiles encode");
    const char *names[4] = {"seed-rollup-v3a.bin", "seed-rollup-v3b.bin", "seed-rollup-v2.bin", "seed-rollup-v1.bin"};
    for (int k = 0; k < 4; k++) {
        gw_buf_init(&b, 0);
        uint8_t l2[2] = {(uint8_t)rec.len, (uint8_t)(rec.len >> 8)};
        if (gw_buf_append(&b, l2, 2) || gw_buf_append(&b, rec.data, rec.len))
            die("oom");
        if (k < 2 && gw_buf_append(&b, val[k].data, val[k].len))
            die("oom");
        if (k == 2 && gw_ds_encode_v2(&c[0], &b) != GW_OK)
            die("rollup encode v2");
        if (k == 3 && gw_ds_encode_v1(&c[1], &b) != GW_OK)
            die("rollup encode v1");
        put_seed("rollup", names[k], 0, b.data, b.len);
        gw_buf_free(&b);
    }
    for (int k = 0; k < 2; k++) {
        gw_buf_free(&val[k]);
        gw_ds_cols_free(&c[k]);
    }
    gw_buf_free(&rec);
    gw_ds_profiles_free(&ps);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
        return 2;
    }
    root = argv[1];
    seeds_rw_v1();
    seeds_rw_v2();
    seeds_remote_read();
    seeds_xor();
    seeds_block();
    seeds_wal();
    seeds_rollup();
    return 0;
}
