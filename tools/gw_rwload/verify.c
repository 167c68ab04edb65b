/* verify.c - gw_rwload verify: reads every (node, job) back with remote read
 * (SAMPLES or STREAMED_XOR_CHUNKS) and checks it against the generator and
 * the ack log. */
#include "rwload.h"

struct verifier {
    struct gen *g;
    uint8_t *acked, *seen;       /* bitmaps [series][step] */
    uint64_t n_seen, n_dup, n_mismatch, n_offgrid, n_unknown, n_unsorted, n_wrongq, n_series_seen;
    uint64_t n_errors_printed;
    uint8_t *series_seen;
    size_t q_first, q_end;       /* series range the current query may return */
    int64_t q_start, q_endt;
    struct gw_buf canon;
};

static int bit_get(const uint8_t *b, uint64_t i) { return (b[i >> 3] >> (i & 7)) & 1; }
static void bit_set(uint8_t *b, uint64_t i) { b[i >> 3] |= (uint8_t)(1u << (i & 7)); }

static void verr(struct verifier *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void verr(struct verifier *v, const char *fmt, ...)
{
    if (v->n_errors_printed++ >= 20) return;
    va_list ap;
    va_start(ap, fmt);
    fputs("verify: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void series_name(const struct gen *g, size_t i, char *out, size_t cap)
{
    /* renders {k="v",...} from the stored label bytes */
    const struct series *s = &g->s[i];
    struct pb r = { g->lbl.data + s->lbl_off, g->lbl.data + s->lbl_off + s->lbl_len };
    size_t o = 0;
    out[0] = '\0';
    uint32_t f, wt;
    uint64_t val;
    struct pb sub;
    while (pb_next(&r, &f, &wt, &val, &sub) == 0) {
        struct pb lr = sub;
        struct pb nm = { 0 }, vv = { 0 };
        while (pb_next(&lr, &f, &wt, &val, &sub) == 0) {
            if (f == 1) nm = sub;
            if (f == 2) vv = sub;
        }
        int n = snprintf(out + o, cap - o, "%s%.*s=\"%.*s\"", o ? "," : "{", (int)(nm.end - nm.p), (const char *)nm.p,
                         (int)(vv.end - vv.p), (const char *)vv.p);
        if (n < 0 || (size_t)n >= cap - o) break;
        o += (size_t)n;
    }
    if (o + 2 < cap) { out[o] = '}'; out[o + 1] = '\0'; }
}

/* Called per series of a response with its label submessages in lbls
 * (raw Label messages concatenated as field-1 entries). */
static int64_t v_series(struct verifier *v, struct pb lbls_field_list[], size_t n_lbls)
{
    struct gen *g = v->g;
    gw_buf_reset(&v->canon);
    const uint8_t *prev_name = NULL;
    size_t prev_len = 0;
    int sorted = 1;
    for (size_t i = 0; i < n_lbls; i++) {
        struct pb lr = lbls_field_list[i], sub, nm = { 0 }, vv = { 0 };
        uint32_t f, wt;
        uint64_t val;
        int rc;
        while ((rc = pb_next(&lr, &f, &wt, &val, &sub)) == 0) {
            if (f == 1 && wt == 2) nm = sub;
            if (f == 2 && wt == 2) vv = sub;
        }
        if (rc < 0) return -2;
        size_t nl = (size_t)(nm.end - nm.p), vl = (size_t)(vv.end - vv.p);
        if (prev_name) {
            size_t m = prev_len < nl ? prev_len : nl;
            int c = memcmp(prev_name, nm.p, m);
            if (c > 0 || (c == 0 && prev_len >= nl)) sorted = 0;
        }
        prev_name = nm.p;
        prev_len = nl;
        encode_label(&v->canon, (const char *)nm.p, nl, (const char *)vv.p, vl);
    }
    if (!sorted) {
        v->n_unsorted++;
        verr(v, "labels not sorted in a returned series");
    }
    int64_t idx = gen_lookup(g, v->canon.data, v->canon.len);
    if (idx < 0) {
        v->n_unknown++;
        verr(v, "unknown series returned (%zu labels)", n_lbls);
        return -1;
    }
    if ((size_t)idx < v->q_first || (size_t)idx >= v->q_end) {
        v->n_wrongq++;
        char nm[1024];
        series_name(g, (size_t)idx, nm, sizeof nm);
        verr(v, "series %s does not match the query", nm);
        return -1;
    }
    if (!v->series_seen[idx]) { v->series_seen[idx] = 1; v->n_series_seen++; }
    return idx;
}

static void v_sample(struct verifier *v, size_t idx, int64_t t, double val)
{
    struct gen *g = v->g;
    const struct series *s = &g->s[idx];
    char nm[1024];
    if (t < v->q_start || t > v->q_endt) {
        series_name(g, idx, nm, sizeof nm);
        verr(v, "%s: sample t=%" PRId64 " outside the queried range [%" PRId64 ",%" PRId64 "]", nm, t, v->q_start,
             v->q_endt);
        v->n_offgrid++;
        return;
    }
    int64_t j = step_of(g, s->node, s->job, t);
    if (j < 0) {
        series_name(g, idx, nm, sizeof nm);
        verr(v, "%s: sample t=%" PRId64 " is not a timestamp that was sent", nm, t);
        v->n_offgrid++;
        return;
    }
    uint64_t bit = (uint64_t)idx * (uint64_t)g->n_steps + (uint64_t)j;
    if (bit_get(v->seen, bit)) {
        series_name(g, idx, nm, sizeof nm);
        verr(v, "%s: timestamp %" PRId64 " returned twice", nm, t);
        v->n_dup++;
        return;
    }
    bit_set(v->seen, bit);
    v->n_seen++;
    double want = gen_value(g, s, t);
    uint64_t a, b;
    memcpy(&a, &val, 8);
    memcpy(&b, &want, 8);
    if (a != b) {
        series_name(g, idx, nm, sizeof nm);
        verr(v, "%s: t=%" PRId64 " value %.17g (0x%016" PRIx64 ") != sent %.17g (0x%016" PRIx64 ")", nm, t, val, a,
             want, b);
        v->n_mismatch++;
    }
}

/* TimeSeries{labels=1, samples=2} */
static int v_timeseries(struct verifier *v, struct pb ts)
{
    struct pb lbls[64];
    size_t nl = 0;
    struct pb r = ts, sub;
    uint32_t f, wt;
    uint64_t val;
    int rc;
    while ((rc = pb_next(&r, &f, &wt, &val, &sub)) == 0)
        if (f == 1 && wt == 2) {
            if (nl == 64) return -1;
            lbls[nl++] = sub;
        }
    if (rc < 0) return -1;
    int64_t idx = v_series(v, lbls, nl);
    if (idx == -2) return -1;
    int64_t prev_t = INT64_MIN;
    r = ts;
    while ((rc = pb_next(&r, &f, &wt, &val, &sub)) == 0) {
        if (f != 2 || wt != 2) continue;
        double d = 0;
        int64_t t = 0;
        struct pb sr = sub, s2;
        uint64_t sv;
        while ((rc = pb_next(&sr, &f, &wt, &sv, &s2)) == 0) {
            if (f == 1 && wt == 1) memcpy(&d, &sv, 8);
            if (f == 2 && wt == 0) t = (int64_t)sv;
        }
        if (rc < 0) return -1;
        if (idx < 0) continue;
        if (t <= prev_t) {
            v->n_unsorted++;
            verr(v, "samples not in increasing time order (t=%" PRId64 " after %" PRId64 ")", t, prev_t);
        }
        prev_t = t;
        v_sample(v, (size_t)idx, t, d);
    }
    return rc < 0 ? -1 : 0;
}

/* SAMPLES: ReadResponse{results=1 QueryResult{timeseries=1}} */
static int v_samples_response(struct verifier *v, const uint8_t *p, size_t n)
{
    struct pb r = { p, p + n }, qr, ts;
    uint32_t f, wt;
    uint64_t val;
    int rc;
    while ((rc = pb_next(&r, &f, &wt, &val, &qr)) == 0) {
        if (f != 1 || wt != 2) continue;
        int rc2;
        while ((rc2 = pb_next(&qr, &f, &wt, &val, &ts)) == 0)
            if (f == 1 && wt == 2 && v_timeseries(v, ts) != 0) return -1;
        if (rc2 < 0) return -1;
    }
    return rc < 0 ? -1 : 0;
}

/* Prometheus XOR chunk decoder (MSB-first bit stream). */
struct bits { const uint8_t *p; size_t n_bits, pos; };

static int bits_read(struct bits *b, unsigned n, uint64_t *out)
{
    if (n > 64 || b->pos + n > b->n_bits) return -1;
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++) {
        size_t k = b->pos + i;
        v = (v << 1) | ((b->p[k >> 3] >> (7 - (k & 7))) & 1u);
    }
    b->pos += n;
    *out = v;
    return 0;
}

static int xor_decode(struct verifier *v, size_t idx, const uint8_t *data, size_t len, int64_t mint, int64_t maxt,
                      int64_t *prev_t)
{
    if (len < 2) return -1;
    unsigned count = gw_get_be16(data);
    const uint8_t *p = data + 2;
    size_t rem = len - 2;
    int64_t t = 0, delta = 0;
    uint64_t vbits = 0;
    unsigned leading = 0, trailing = 0;
    struct bits b = { p, rem * 8, 0 };
    for (unsigned k = 0; k < count; k++) {
        if (k == 0) {
            uint64_t z;
            size_t used = gw_uvarint_get(p, rem, &z);
            if (used == 0) return -1;
            t = gw_unzigzag(z);
            b.pos = used * 8;
            if (bits_read(&b, 64, &vbits) != 0) return -1;
        } else if (k == 1) {
            if (b.pos % 8 != 0) return -1;
            uint64_t d;
            size_t used = gw_uvarint_get(p + b.pos / 8, rem - b.pos / 8, &d);
            if (used == 0) return -1;
            b.pos += used * 8;
            delta = (int64_t)d;
            t += delta;
        } else {
            unsigned ones = 0;
            uint64_t bit;
            while (ones < 4) {
                if (bits_read(&b, 1, &bit) != 0) return -1;
                if (!bit) break;
                ones++;
            }
            int64_t dod = 0;
            unsigned sz = ones == 0 ? 0 : ones == 1 ? 14 : ones == 2 ? 17 : ones == 3 ? 20 : 64;
            if (sz) {
                uint64_t raw;
                if (bits_read(&b, sz, &raw) != 0) return -1;
                if (sz < 64 && raw > (1ULL << (sz - 1))) raw -= 1ULL << sz;   /* sign (asymmetric, as Prometheus) */
                dod = (int64_t)raw;
            }
            delta += dod;
            t += delta;
        }
        if (k > 0) {
            uint64_t bit;
            if (bits_read(&b, 1, &bit) != 0) return -1;
            if (bit) {
                if (bits_read(&b, 1, &bit) != 0) return -1;
                if (bit) {
                    uint64_t l, sig;
                    if (bits_read(&b, 5, &l) != 0 || bits_read(&b, 6, &sig) != 0) return -1;
                    if (sig == 0) sig = 64;
                    if (l + sig > 64) return -1;
                    leading = (unsigned)l;
                    trailing = 64 - leading - (unsigned)sig;
                }
                unsigned sig = 64 - leading - trailing;
                uint64_t x;
                if (sig == 0 || bits_read(&b, sig, &x) != 0) return -1;
                vbits ^= x << trailing;
            }
        }
        double d;
        memcpy(&d, &vbits, 8);
        if (t < mint || t > maxt) {
            verr(v, "chunk sample t=%" PRId64 " outside the chunk's [%" PRId64 ",%" PRId64 "]", t, mint, maxt);
            v->n_offgrid++;
        }
        if (t <= *prev_t) {
            v->n_unsorted++;
            verr(v, "chunk samples not in increasing time order");
        }
        *prev_t = t;
        v_sample(v, idx, t, d);
    }
    return 0;
}

static int v_chunked_series(struct verifier *v, struct pb cs)
{
    struct pb lbls[64], r = cs, sub;
    size_t nl = 0;
    uint32_t f, wt;
    uint64_t val;
    int rc;
    while ((rc = pb_next(&r, &f, &wt, &val, &sub)) == 0)
        if (f == 1 && wt == 2) {
            if (nl == 64) return -1;
            lbls[nl++] = sub;
        }
    if (rc < 0) return -1;
    int64_t idx = v_series(v, lbls, nl);
    if (idx == -2) return -1;
    if (idx < 0) return 0;
    int64_t prev_t = INT64_MIN;
    r = cs;
    while ((rc = pb_next(&r, &f, &wt, &val, &sub)) == 0) {
        if (f != 2 || wt != 2) continue;
        int64_t mint = 0, maxt = 0;
        uint64_t type = 0;
        struct pb data = { NULL, NULL }, cr = sub, s2;
        uint64_t cv;
        while ((rc = pb_next(&cr, &f, &wt, &cv, &s2)) == 0) {
            if (f == 1 && wt == 0) mint = (int64_t)cv;
            if (f == 2 && wt == 0) maxt = (int64_t)cv;
            if (f == 3 && wt == 0) type = cv;
            if (f == 4 && wt == 2) data = s2;
        }
        if (rc < 0) return -1;
        if (type != 1) {
            verr(v, "chunk encoding %" PRIu64 " is not XOR", type);
            return -1;
        }
        if (!data.p || xor_decode(v, (size_t)idx, data.p, (size_t)(data.end - data.p), mint, maxt, &prev_t) != 0) {
            verr(v, "undecodable XOR chunk");
            return -1;
        }
    }
    return rc < 0 ? -1 : 0;
}

static int v_streamed_response(struct verifier *v, const uint8_t *p, size_t n)
{
    size_t off = 0;
    while (off < n) {
        uint64_t len;
        size_t used = gw_uvarint_get(p + off, n - off, &len);
        if (used == 0 || len > n - off - used || n - off - used - len < 4) {
            verr(v, "truncated frame at byte %zu", off);
            return -1;
        }
        off += used;
        uint32_t crc = gw_get_be32(p + off);
        off += 4;
        if (gw_crc32c(0, p + off, (size_t)len) != crc) {
            verr(v, "frame CRC mismatch at byte %zu", off);
            return -1;
        }
        struct pb r = { p + off, p + off + len }, sub;
        uint32_t f, wt;
        uint64_t val;
        int rc;
        while ((rc = pb_next(&r, &f, &wt, &val, &sub)) == 0) {
            if (f == 1 && wt == 2 && v_chunked_series(v, sub) != 0) return -1;
            if (f == 2 && wt == 0 && val != 0) {
                verr(v, "frame query_index %" PRIu64 " != 0", val);
                return -1;
            }
        }
        if (rc < 0) return -1;
        off += (size_t)len;
    }
    return 0;
}

static void encode_read_request(struct gw_buf *out, int64_t start, int64_t end, const char *lname,
                                const char *lvalue, int streamed)
{
    struct gw_buf m, q;
    gw_buf_init(&m, 0);
    gw_buf_init(&q, 0);
    /* LabelMatcher{type=1 EQ(0) omitted, name=2, value=3} */
    bputc(&m, 0x12);
    bvarint(&m, strlen(lname));
    bput(&m, lname, strlen(lname));
    bputc(&m, 0x1A);
    bvarint(&m, strlen(lvalue));
    bput(&m, lvalue, strlen(lvalue));
    /* Query{start=1, end=2, matchers=3} */
    bputc(&q, 0x08);
    bvarint(&q, (uint64_t)start);
    bputc(&q, 0x10);
    bvarint(&q, (uint64_t)end);
    bputc(&q, 0x1A);
    bvarint(&q, m.len);
    bput(&q, m.data, m.len);
    gw_buf_reset(out);
    bputc(out, 0x0A);
    bvarint(out, q.len);
    bput(out, q.data, q.len);
    /* accepted_response_types=2, packed */
    bputc(out, 0x12);
    if (streamed) {
        bputc(out, 2);
        bputc(out, 1);   /* STREAMED_XOR_CHUNKS */
        bputc(out, 0);   /* SAMPLES */
    } else {
        bputc(out, 1);
        bputc(out, 0);
    }
    gw_buf_free(&m);
    gw_buf_free(&q);
}

static int load_ack_log(struct verifier *v, const char *path, const struct gen_opts *o)
{
    struct gen *g = v->g;
    FILE *f = fopen(path, "r");
    if (!f) die("cannot open ack log %s", path);
    char line[512];
    uint64_t n_lines = 0, n_acked = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') {
            char want[512];
            snprintf(want, sizeof want, "# gw_rwload nodes=%d gpus=%d interval=%" PRId64 " start=%" PRId64
                     " seed=%" PRIu64 " host=%s steps=%" PRId64 "\n", o->nodes, o->gpus, o->interval_ms,
                     g->start_ms, o->seed, host_mode_name(o->host_mode), g->n_steps);
            if (strcmp(line, want) != 0) die("ack log was written with other generator flags:\n  log:  %s  flags: %s", line, want);
            continue;
        }
        long long j, lo, hi;
        if (sscanf(line, "%lld %lld %lld", &j, &lo, &hi) != 3) continue;   /* torn last line */
        if (j < 0 || j >= g->n_steps || lo < 0 || hi > (long long)g->n || lo > hi) die("ack log line out of range: %s", line);
        for (long long i = lo; i < hi; i++) {
            uint64_t bit = (uint64_t)i * (uint64_t)g->n_steps + (uint64_t)j;
            if (!bit_get(v->acked, bit)) { bit_set(v->acked, bit); n_acked++; }
        }
        n_lines++;
    }
    fclose(f);
    fprintf(stderr, "verify: ack log %s: %" PRIu64 " records, %" PRIu64 " acked samples\n", path, n_lines, n_acked);
    return 0;
}

int cmd_verify(struct gen *g, const struct gen_opts *o, const char *read_url, const char *ack_log,
                      int streamed, int timeout_ms)
{
    struct verifier v;
    memset(&v, 0, sizeof v);
    v.g = g;
    uint64_t nbits = (uint64_t)g->n * (uint64_t)g->n_steps;
    if (nbits > (uint64_t)1 << 36) die("too many samples to verify");
    v.acked = calloc((size_t)(nbits / 8 + 1), 1);
    v.seen = calloc((size_t)(nbits / 8 + 1), 1);
    v.series_seen = calloc(g->n, 1);
    if (!v.acked || !v.seen || !v.series_seen) die("out of memory");
    gw_buf_init(&v.canon, 0);
    gen_index(g);
    load_ack_log(&v, ack_log, o);

    struct http c;
    struct http_resp r;
    struct gw_buf req, sn, plain;
    http_init(&c, read_url, timeout_ms);
    gw_buf_init(&r.body, 0);
    gw_buf_init(&req, 0);
    gw_buf_init(&sn, 0);
    gw_buf_init(&plain, 0);
    const char *hdrs = "Content-Type: application/x-protobuf\r\nContent-Encoding: snappy\r\n"
                       "Accept-Encoding: snappy\r\nX-Prometheus-Remote-Read-Version: 0.1.0\r\n";
    int fatal = 0;
    uint64_t n_requests = 0;
    double t0 = now_s();
    for (int node = 0; node < g->nodes && !fatal; node++) {
        for (int job = 0; job < 2 && !fatal; job++) {
            size_t first = g->node_first[node * 2 + job], end = g->node_end[node * 2 + job];
            size_t per_step = end - first;
            if (per_step == 0) continue;
            int64_t win_steps = (int64_t)(1000000 / per_step);
            if (win_steps < 1) win_steps = 1;
            char host[64], inst[128];
            gen_host(g, node, host, sizeof host);
            snprintf(inst, sizeof inst, "%s:%d", host, job == JOB_DCGM ? 9400 : 9100);
            for (int64_t w0 = 0; w0 < g->n_steps && !fatal; w0 += win_steps) {
                int64_t w1 = w0 + win_steps < g->n_steps ? w0 + win_steps : g->n_steps;
                v.q_first = first;
                v.q_end = end;
                v.q_start = g->start_ms + w0 * g->interval_ms;
                v.q_endt = g->start_ms + w1 * g->interval_ms - 1;
                encode_read_request(&req, v.q_start, v.q_endt, "instance", inst, streamed);
                gw_buf_reset(&sn);
                if (gw_snappy_encode(req.data, req.len, &sn) != GW_OK) die("snappy encode failed");
                n_requests++;
                if (http_do(&c, "POST", hdrs, sn.data, sn.len, &r) != 0) {
                    verr(&v, "remote read %s: %s", read_url, c.err);
                    fatal = 1;
                    break;
                }
                if (r.status != 200) {
                    verr(&v, "remote read HTTP %d: %.*s", r.status, (int)(r.body.len > 300 ? 300 : r.body.len),
                         r.body.data ? (const char *)r.body.data : "");
                    fatal = 1;
                    break;
                }
                int is_stream = strncmp(r.ctype, "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse",
                                        69) == 0;
                if (streamed != is_stream) {
                    verr(&v, "unexpected response Content-Type \"%s\"", r.ctype);
                    fatal = 1;
                    break;
                }
                int rc;
                if (is_stream) {
                    rc = v_streamed_response(&v, r.body.data, r.body.len);
                } else {
                    struct gw_error e;
                    gw_buf_reset(&plain);
                    if (gw_snappy_decode(r.body.data, r.body.len, MAX_SNAPPY_OUT, &plain, &e) != GW_OK) {
                        verr(&v, "response is not valid snappy: %s", e.msg);
                        fatal = 1;
                        break;
                    }
                    rc = v_samples_response(&v, plain.data, plain.len);
                }
                if (rc != 0) {
                    verr(&v, "malformed remote read response for %s", inst);
                    fatal = 1;
                }
            }
        }
    }
    uint64_t n_acked = 0, n_missing = 0;
    for (size_t i = 0; i < g->n; i++)
        for (int64_t j = 0; j < g->n_steps; j++) {
            uint64_t bit = (uint64_t)i * (uint64_t)g->n_steps + (uint64_t)j;
            if (!bit_get(v.acked, bit)) continue;
            n_acked++;
            if (!bit_get(v.seen, bit)) {
                n_missing++;
                if (n_missing <= 10) {
                    char nm[1024];
                    const struct series *s = &g->s[i];
                    series_name(g, i, nm, sizeof nm);
                    verr(&v, "acked sample missing: %s t=%" PRId64 " (scrape %" PRId64 ")", nm,
                         ts_of(g, s->node, s->job, j), j);
                }
            }
        }
    uint64_t n_expected_series = 0;
    for (size_t i = 0; i < g->n; i++) {
        for (int64_t j = 0; j < g->n_steps; j++)
            if (bit_get(v.acked, (uint64_t)i * (uint64_t)g->n_steps + (uint64_t)j)) { n_expected_series++; break; }
    }
    int ok = !fatal && n_missing == 0 && v.n_mismatch == 0 && v.n_dup == 0 && v.n_offgrid == 0 && v.n_unknown == 0 &&
             v.n_unsorted == 0 && v.n_wrongq == 0;
    printf("verify: mode=%s requests=%" PRIu64 " series_with_acks=%" PRIu64 " series_returned=%" PRIu64
           " samples_returned=%" PRIu64 " acked=%" PRIu64 " missing=%" PRIu64 " mismatched=%" PRIu64
           " duplicates=%" PRIu64 " off_grid=%" PRIu64 " unknown_series=%" PRIu64 " unsorted=%" PRIu64
           " wrong_query=%" PRIu64 " elapsed_s=%.2f result=%s\n",
           streamed ? "streamed" : "samples", n_requests, n_expected_series, v.n_series_seen, v.n_seen, n_acked,
           n_missing, v.n_mismatch, v.n_dup, v.n_offgrid, v.n_unknown, v.n_unsorted, v.n_wrongq, now_s() - t0,
           ok ? "OK" : "FAIL");
    http_free(&c);
    gw_buf_free(&r.body);
    gw_buf_free(&req);
    gw_buf_free(&sn);
    gw_buf_free(&plain);
    gw_buf_free(&v.canon);
    free(v.acked);
    free(v.seen);
    free(v.series_seen);
    return ok ? 0 : 1;
}
