/* text.c - gw_rwload send-text: samples from a text file (format: top of
 * main.c), sorted by time and sent in batches over one connection. */
#include "rwload.h"

#define TEXT_MAX_FILE ((size_t)1 << 30)
#define TEXT_MAX_LINE 65536
#define TEXT_MAX_LABELS 128
#define STALE_NAN_BITS 0x7ff0000000000002ULL

struct text_series {
    uint32_t lbl_off, lbl_len;  /* protobuf Label fields (sorted) in text_in.lbl */
    uint64_t hash;
    int64_t last_t;
    uint64_t n_samples;
};

struct text_sample {
    int64_t t;
    double v;
    uint32_t series;
    uint64_t seq;               /* position in the file: ties keep file order */
};

struct text_in {
    struct gw_buf lbl;
    struct text_series *s;
    size_t n_s, cap_s;
    uint32_t *ht;               /* series index + 1, 0 = empty */
    size_t ht_cap;
    struct text_sample *x;
    size_t n_x, cap_x;
};

struct text_pair { const char *n; size_t nl; const char *v; size_t vl; };

static int text_pair_cmp(const void *a, const void *b)
{
    const struct text_pair *x = a, *y = b;
    size_t m = x->nl < y->nl ? x->nl : y->nl;
    int c = memcmp(x->n, y->n, m);
    if (c != 0) return c;
    return x->nl < y->nl ? -1 : (x->nl > y->nl ? 1 : 0);
}

static int label_name_char(char c, int first)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':') return 1;
    return !first && c >= '0' && c <= '9';
}

static void text_grow_ht(struct text_in *in)
{
    size_t cap = in->ht_cap ? in->ht_cap * 2 : 1024;
    uint32_t *ht = calloc(cap, sizeof *ht);
    if (!ht) die("out of memory");
    for (size_t i = 0; i < in->n_s; i++) {
        size_t k = (size_t)in->s[i].hash & (cap - 1);
        while (ht[k]) k = (k + 1) & (cap - 1);
        ht[k] = (uint32_t)(i + 1);
    }
    free(in->ht);
    in->ht = ht;
    in->ht_cap = cap;
}

/* Finds or adds the series whose encoded labels are the last enc_len
 * bytes of in->lbl (they are dropped again if the series exists). */
static uint32_t text_series_of(struct text_in *in, size_t enc_off)
{
    const uint8_t *p = in->lbl.data + enc_off;
    size_t n = in->lbl.len - enc_off;
    uint64_t h = fnv1a(p, n);
    if ((in->n_s + 1) * 2 > in->ht_cap) text_grow_ht(in);
    size_t k = (size_t)h & (in->ht_cap - 1);
    while (in->ht[k]) {
        struct text_series *s = &in->s[in->ht[k] - 1];
        if (s->hash == h && s->lbl_len == n && memcmp(in->lbl.data + s->lbl_off, p, n) == 0) {
            in->lbl.len = enc_off;
            return in->ht[k] - 1;
        }
        k = (k + 1) & (in->ht_cap - 1);
    }
    if (in->n_s >= UINT32_MAX - 1 || in->lbl.len > UINT32_MAX) die("too many series");
    if (in->n_s == in->cap_s) {
        in->cap_s = in->cap_s ? in->cap_s * 2 : 256;
        in->s = realloc(in->s, in->cap_s * sizeof *in->s);
        if (!in->s) die("out of memory");
    }
    struct text_series *s = &in->s[in->n_s];
    s->lbl_off = (uint32_t)enc_off;
    s->lbl_len = (uint32_t)n;
    s->hash = h;
    s->last_t = INT64_MIN;
    s->n_samples = 0;
    in->ht[k] = (uint32_t)(in->n_s + 1);
    return (uint32_t)in->n_s++;
}

/* Parses one label value in double quotes at *pp (escapes \\ \" \n) into
 * val (unescaped, NUL-free). Returns 0 or -1. */
static int text_value(const char **pp, const char *end, struct gw_buf *val)
{
    const char *p = *pp;
    if (p >= end || *p != '"') return -1;
    p++;
    gw_buf_reset(val);
    while (p < end && *p != '"') {
        char c = *p++;
        if (c == '\\') {
            if (p >= end) return -1;
            c = *p++;
            if (c == 'n') c = '\n';
            else if (c != '\\' && c != '"') return -1;
        }
        bputc(val, (uint8_t)c);
    }
    if (p >= end) return -1;
    *pp = p + 1;
    return 0;
}

static void text_parse_line(struct text_in *in, const char *line, size_t len, uint64_t lineno, struct gw_buf *scratch)
{
    const char *p = line, *end = line + len;
    struct text_pair pairs[TEXT_MAX_LABELS];
    size_t np = 0;
    gw_buf_reset(scratch);
    /* Value bytes go to scratch; offsets are patched into pairs after the
     * last append (scratch may move while it grows). */
    size_t voff[TEXT_MAX_LABELS];
    const char *name_start = p;
    while (p < end && label_name_char(*p, p == name_start)) p++;
    if (p > name_start) {
        pairs[np].n = "__name__";
        pairs[np].nl = 8;
        voff[np] = scratch->len;
        pairs[np].vl = (size_t)(p - name_start);
        bput(scratch, name_start, pairs[np].vl);
        np++;
    }
    if (p < end && *p == '{') {
        p++;
        struct gw_buf val;
        gw_buf_init(&val, 0);
        for (;;) {
            while (p < end && (*p == ' ' || *p == '\t')) p++;
            if (p < end && *p == '}') { p++; break; }
            const char *ns = p;
            while (p < end && label_name_char(*p, p == ns)) p++;
            if (p == ns) die("line %" PRIu64 ": bad label name", lineno);
            if (np == TEXT_MAX_LABELS) die("line %" PRIu64 ": more than %d labels", lineno, TEXT_MAX_LABELS);
            pairs[np].n = ns;
            pairs[np].nl = (size_t)(p - ns);
            while (p < end && (*p == ' ' || *p == '\t')) p++;
            if (p >= end || *p != '=') die("line %" PRIu64 ": expected '=' after a label name", lineno);
            p++;
            while (p < end && (*p == ' ' || *p == '\t')) p++;
            if (text_value(&p, end, &val) != 0) die("line %" PRIu64 ": bad label value", lineno);
            voff[np] = scratch->len;
            pairs[np].vl = val.len;
            bput(scratch, val.data ? val.data : (const uint8_t *)"", val.len);
            np++;
            while (p < end && (*p == ' ' || *p == '\t')) p++;
            if (p < end && *p == ',') { p++; continue; }
            if (p < end && *p == '}') { p++; break; }
            die("line %" PRIu64 ": expected ',' or '}' in the label set", lineno);
        }
        gw_buf_free(&val);
    }
    if (np == 0) die("line %" PRIu64 ": no labels", lineno);
    for (size_t i = 0; i < np; i++) pairs[i].v = (const char *)scratch->data + voff[i];
    qsort(pairs, np, sizeof pairs[0], text_pair_cmp);
    int has_name = 0;
    for (size_t i = 0; i < np; i++) {
        if (i > 0 && text_pair_cmp(&pairs[i - 1], &pairs[i]) == 0)
            die("line %" PRIu64 ": label %.*s given twice", lineno, (int)pairs[i].nl, pairs[i].n);
        if (pairs[i].nl == 8 && memcmp(pairs[i].n, "__name__", 8) == 0 && pairs[i].vl > 0) has_name = 1;
    }
    if (!has_name) die("line %" PRIu64 ": no metric name (__name__)", lineno);

    /* timestamp and value */
    char tok[64];
    int64_t t = 0;
    double v = 0;
    for (int field = 0; field < 2; field++) {
        if (p >= end || (*p != ' ' && *p != '\t')) die("line %" PRIu64 ": expected a space before field %d", lineno, field + 2);
        while (p < end && (*p == ' ' || *p == '\t')) p++;
        const char *ts = p;
        while (p < end && *p != ' ' && *p != '\t' && *p != '\r') p++;
        size_t tl = (size_t)(p - ts);
        if (tl == 0 || tl >= sizeof tok) die("line %" PRIu64 ": bad field %d", lineno, field + 2);
        memcpy(tok, ts, tl);
        tok[tl] = '\0';
        if (field == 0) {
            char *e;
            errno = 0;
            long long ll = strtoll(tok, &e, 10);
            if (errno != 0 || *e != '\0') die("line %" PRIu64 ": bad timestamp %s", lineno, tok);
            t = (int64_t)ll;
        } else if (strcmp(tok, "stale") == 0) {
            uint64_t bits = STALE_NAN_BITS;
            memcpy(&v, &bits, sizeof v);
        } else {
            char *e;
            errno = 0;
            v = strtod(tok, &e);
            if (*e != '\0' || (errno != 0 && errno != ERANGE)) die("line %" PRIu64 ": bad value %s", lineno, tok);
        }
    }
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r')) p++;
    if (p != end) die("line %" PRIu64 ": trailing text", lineno);

    size_t enc_off = in->lbl.len;
    for (size_t i = 0; i < np; i++) encode_label(&in->lbl, pairs[i].n, pairs[i].nl, pairs[i].v, pairs[i].vl);
    uint32_t si = text_series_of(in, enc_off);
    struct text_series *s = &in->s[si];
    if (t <= s->last_t)
        die("line %" PRIu64 ": timestamp %" PRId64 " not after the previous sample of the series (%" PRId64 ")", lineno, t,
            s->last_t);
    s->last_t = t;
    s->n_samples++;
    if (in->n_x == in->cap_x) {
        in->cap_x = in->cap_x ? in->cap_x * 2 : 4096;
        in->x = realloc(in->x, in->cap_x * sizeof *in->x);
        if (!in->x) die("out of memory");
    }
    in->x[in->n_x] = (struct text_sample){ .t = t, .v = v, .series = si, .seq = in->n_x };
    in->n_x++;
}

static int text_by_time(const void *a, const void *b)
{
    const struct text_sample *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return x->seq < y->seq ? -1 : (x->seq > y->seq);
}

static int text_by_series(const void *a, const void *b)
{
    const struct text_sample *x = a, *y = b;
    if (x->series != y->series) return x->series < y->series ? -1 : 1;
    return x->seq < y->seq ? -1 : (x->seq > y->seq);
}

/* One remote-write 1.0 WriteRequest for samples x[0..n) (sorted by series,
 * then file order): one TimeSeries per run of the same series. */
static void text_build_write(const struct text_in *in, const struct text_sample *x, size_t n, struct gw_buf *pb)
{
    gw_buf_reset(pb);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && x[j].series == x[i].series) j++;
        const struct text_series *s = &in->s[x[i].series];
        size_t ts_len = s->lbl_len;
        for (size_t k = i; k < j; k++) {
            size_t sample_len = 1 + 8 + 1 + varint_len((uint64_t)x[k].t);
            ts_len += 1 + varint_len(sample_len) + sample_len;
        }
        bputc(pb, 0x0A);
        bvarint(pb, ts_len);
        bput(pb, in->lbl.data + s->lbl_off, s->lbl_len);
        for (size_t k = i; k < j; k++) {
            size_t sample_len = 1 + 8 + 1 + varint_len((uint64_t)x[k].t);
            bputc(pb, 0x12);
            bvarint(pb, sample_len);
            bputc(pb, 0x09);
            bput(pb, &x[k].v, 8);     /* little-endian host */
            bputc(pb, 0x10);
            bvarint(pb, (uint64_t)x[k].t);
        }
        i = j;
    }
}

int cmd_send_text(const char *url, const char *path, size_t batch, int64_t retry_for_ms, int timeout_ms)
{
    struct gw_buf file;
    gw_buf_init(&file, TEXT_MAX_FILE);
    read_file(path, &file);
    struct text_in in;
    memset(&in, 0, sizeof in);
    gw_buf_init(&in.lbl, 0);
    struct gw_buf scratch;
    gw_buf_init(&scratch, 0);
    const char *p = (const char *)file.data, *end = p + file.len;
    uint64_t lineno = 0;
    while (p && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        lineno++;
        if ((size_t)(le - p) > TEXT_MAX_LINE) die("%s line %" PRIu64 ": longer than %d bytes", path, lineno, TEXT_MAX_LINE);
        const char *q = p;
        while (q < le && (*q == ' ' || *q == '\t' || *q == '\r')) q++;
        if (q < le && *q != '#') text_parse_line(&in, q, (size_t)(le - q), lineno, &scratch);
        p = nl ? nl + 1 : end;
    }
    gw_buf_free(&scratch);
    gw_buf_free(&file);
    qsort(in.x, in.n_x, sizeof *in.x, text_by_time);

    struct http c;
    struct http_resp r;
    struct gw_buf pb, sn;
    http_init(&c, url, timeout_ms);
    gw_buf_init(&r.body, 0);
    gw_buf_init(&pb, 0);
    gw_buf_init(&sn, 0);
    const char *hdrs = "Content-Type: application/x-protobuf\r\nContent-Encoding: snappy\r\n"
                       "X-Prometheus-Remote-Write-Version: 0.1.0\r\n";
    uint64_t requests = 0, retries = 0, refused_requests = 0, refused_samples = 0, sent = 0;
    int gave_up = 0;
    double t0 = now_s();
    struct text_sample *chunk = malloc((batch < in.n_x ? batch : in.n_x + 1) * sizeof *chunk);
    if (!chunk) die("out of memory");
    for (size_t lo = 0; lo < in.n_x && !gave_up; lo += batch) {
        size_t n = in.n_x - lo < batch ? in.n_x - lo : batch;
        memcpy(chunk, in.x + lo, n * sizeof *chunk);
        qsort(chunk, n, sizeof *chunk, text_by_series);
        text_build_write(&in, chunk, n, &pb);
        gw_buf_reset(&sn);
        if (gw_snappy_encode(pb.data, pb.len, &sn) != GW_OK) die("snappy encode failed");
        int64_t backoff = 30, t_first_fail = 0;
        for (;;) {
            int rc = http_do(&c, "POST", hdrs, sn.data, sn.len, &r);
            if (rc == 0 && r.status >= 200 && r.status < 300) {
                requests++;
                sent += n;
                break;
            }
            if (rc == 0 && r.status >= 400 && r.status < 500 && r.status != 429) {
                refused_requests++;
                refused_samples += n;
                if (refused_requests <= 5)
                    fprintf(stderr, "gw_rwload: refused (HTTP %d) samples %zu..%zu: %.*s\n", r.status, lo, lo + n,
                            (int)(r.body.len > 300 ? 300 : r.body.len), r.body.data ? (const char *)r.body.data : "");
                break;
            }
            int64_t nowm = gw_now_ms();
            if (t_first_fail == 0) t_first_fail = nowm;
            if (nowm - t_first_fail > retry_for_ms) {
                fprintf(stderr, "gw_rwload: giving up after %" PRId64 " ms: %s\n", nowm - t_first_fail,
                        rc == 0 ? "server error" : c.err);
                gave_up = 1;
                break;
            }
            retries++;
            sleep_ms(backoff);
            backoff = backoff * 2 > 5000 ? 5000 : backoff * 2;
        }
    }
    double el = now_s() - t0;
    printf("send-text: series=%zu samples=%" PRIu64 " requests=%" PRIu64 " retries=%" PRIu64 " refused_requests=%" PRIu64
           " refused_samples=%" PRIu64 " elapsed_s=%.3f result=%s\n",
           in.n_s, sent, requests, retries, refused_requests, refused_samples, el,
           gave_up ? "GAVE_UP" : (refused_requests ? "REFUSED" : "OK"));
    free(chunk);
    http_free(&c);
    gw_buf_free(&r.body);
    gw_buf_free(&pb);
    gw_buf_free(&sn);
    gw_buf_free(&in.lbl);
    free(in.s);
    free(in.ht);
    free(in.x);
    return (gave_up || refused_requests) ? 1 : 0;
}
