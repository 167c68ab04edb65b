/* tests/test_http.c - the HTTP server end to end: a real server on an
 * ephemeral loopback port over a real database in a temp dir, driven by a
 * tiny blocking HTTP/1.1 client (one request per connection). Covers the
 * remote-write status codes (405/415/400/413/204/400 refused), the query
 * API over written data (PromQL instant and range queries, every result
 * type, error classes, limit, server and request options, format_query,
 * and gw_http_api_query without a server), remote read in both response types, health,
 * readiness, 404s, /metrics, and a stalled upload that must not hold up
 * another client. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <math.h>
#include <unistd.h>
#include "gpuwatch/codec.h"
#include "gpuwatch/db.h"
#include "gpuwatch/detect.h"
#include "gpuwatch/exemplars.h"
#include "gpuwatch/kv.h"
#include "gpuwatch/http.h"
#include "gpuwatch/ledger.h"
#include "gpuwatch/rw.h"

#define BODY_CAP (256u * 1024u)

struct fixture {
    char dir[256];
    struct gw_db *db;
    struct gw_http *http;
    uint16_t port;
    int64_t base;           /* first sample timestamp */
    struct gw_exemplars *ex;
};

struct resp {
    int status;
    char head[4096];        /* status line + headers */
    char *body;             /* NUL-terminated */
    size_t body_len;
};

static void resp_free(struct resp *r)
{
    free(r->body);
    r->body = NULL;
}

static int connect_port(uint16_t port)
{
    struct sockaddr_in a;
    struct timeval tv = {10, 0};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

static void send_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;   /* the server may close early (e.g. after 413) */
        c += w;
        n -= (size_t)w;
    }
}

/* Reads the whole response (the server closes: Connection: close). */
static void read_resp(int fd, struct resp *r)
{
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    char *sep;
    assert_non_null(buf);
    for (;;) {
        ssize_t n;
        if (len + 1 >= cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
        n = recv(fd, buf + len, cap - len - 1, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    sep = strstr(buf, "\r\n\r\n");
    assert_non_null(sep);
    size_t hl = (size_t)(sep - buf);
    assert_true(hl < sizeof r->head);
    memcpy(r->head, buf, hl);
    r->head[hl] = '\0';
    r->status = (int)strtol(buf + 9, NULL, 10);
    r->body_len = len - hl - 4;
    r->body = malloc(r->body_len + 1);
    assert_non_null(r->body);
    memcpy(r->body, sep + 4, r->body_len);
    r->body[r->body_len] = '\0';
    free(buf);
}

static void http_do(uint16_t port, const char *method, const char *target, const char *headers,
                    const void *body, size_t body_len, struct resp *r)
{
    char req[8192];
    int fd = connect_port(port);
    int n = snprintf(req, sizeof req,
                     "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%sContent-Length: %zu\r\n\r\n",
                     method, target, headers ? headers : "", body_len);
    assert_true(n > 0 && (size_t)n < sizeof req);
    send_all(fd, req, (size_t)n);
    if (body_len)
        send_all(fd, body, body_len);
    read_resp(fd, r);
    close(fd);
}

static const char *header_value(const struct resp *r, const char *name, char *out, size_t cap)
{
    const char *p = r->head;
    size_t nl = strlen(name);
    while ((p = strstr(p, "\r\n")) != NULL) {
        p += 2;
        if (strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
            const char *v = p + nl + 1, *e;
            while (*v == ' ')
                v++;
            e = strstr(v, "\r\n");
            size_t l = e ? (size_t)(e - v) : strlen(v);
            if (l >= cap)
                l = cap - 1;
            memcpy(out, v, l);
            out[l] = '\0';
            return out;
        }
    }
    return NULL;
}

/* Percent-encodes a query value. */
static void qenc(const char *in, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (; *in && o + 4 < cap; in++) {
        unsigned char c = (unsigned char)*in;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
            c == '.' || c == '-') {
            out[o++] = (char)c;
        } else {
            out[o++] = '%';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    out[o] = '\0';
}

/* ---- request bodies ---- */

static void lbl(struct gw_label *l, const char *n, const char *v)
{
    l->name = n;
    l->name_len = (uint32_t)strlen(n);
    l->value = v;
    l->value_len = (uint32_t)strlen(v);
}

/* snappy(v1 WriteRequest) with two series of n samples each (index i0..):
 *   test_metric{job="a"} = i, test_metric{job="b"} = 10*i, every 15 s. */
static void build_write_step(int64_t base, int64_t step_ms, const char *name, size_t i0, size_t n, double bias,
                             struct gw_buf *out)
{
    struct gw_label la[2], lb[2];
    struct gw_sample *sa = calloc(n, sizeof *sa), *sb = calloc(n, sizeof *sb);
    struct gw_rw_series s[2];
    struct gw_rw_request req;
    struct gw_buf pb;
    assert_non_null(sa);
    assert_non_null(sb);
    lbl(&la[0], "__name__", name);
    lbl(&la[1], "job", "a");
    lbl(&lb[0], "__name__", name);
    lbl(&lb[1], "job", "b");
    for (size_t k = 0; k < n; k++) {
        size_t i = i0 + k;
        sa[k].t = sb[k].t = base + (int64_t)i * step_ms;
        sa[k].v = (double)i + bias;
        sb[k].v = 10.0 * (double)i + bias;
    }
    memset(s, 0, sizeof s);
    s[0].labels = la;
    s[0].n_labels = 2;
    s[0].samples = sa;
    s[0].n_samples = (uint32_t)n;
    s[1].labels = lb;
    s[1].n_labels = 2;
    s[1].samples = sb;
    s[1].n_samples = (uint32_t)n;
    memset(&req, 0, sizeof req);
    req.version = 1;
    req.series = s;
    req.n_series = 2;
    req.n_samples = 2 * n;
    gw_buf_init(&pb, 0);
    assert_int_equal(gw_rw_encode_v1(&req, &pb), GW_OK);
    gw_buf_init(out, 0);
    assert_int_equal(gw_snappy_encode(pb.data, pb.len, out), GW_OK);
    gw_buf_free(&pb);
    free(sa);
    free(sb);
}

static void build_write(int64_t base, size_t i0, size_t n, double bias, struct gw_buf *out)
{
    build_write_step(base, 15000, "test_metric", i0, n, bias, out);
}

#define RW_HEADERS "Content-Type: application/x-protobuf\r\nContent-Encoding: snappy\r\n" \
                   "X-Prometheus-Remote-Write-Version: 0.1.0\r\n"
#define N_SAMPLES 20

static void post_write(struct fixture *f, const struct gw_buf *b, struct resp *r)
{
    http_do(f->port, "POST", "/api/v1/write", RW_HEADERS, b->data, b->len, r);
}

/* ---- fixture ---- */

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    const char *tmp = getenv("GW_TEST_TMP");
    struct gw_db_opts dopts;
    struct gw_http_opts hopts;
    struct gw_error err;
    struct gw_buf w;
    struct resp r;
    assert_non_null(f);
    snprintf(f->dir, sizeof f->dir, "%s/gwhttp.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (tmp && *tmp) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "mkdir -p '%s'", tmp);
        if (system(cmd) != 0)
            return -1;
    }
    assert_non_null(mkdtemp(f->dir));
    gw_db_opts_default(&dopts);
    dopts.dir = f->dir;
    dopts.fsync = GW_FSYNC_OFF;
    dopts.background = 0;
    gw_error_clear(&err);
    if (gw_db_open(&f->db, &dopts, &err) != GW_OK) {
        print_error("gw_db_open: %s\n", err.msg);
        return -1;
    }
    gw_http_opts_default(&hopts);
    hopts.listen = "127.0.0.1:0";
    hopts.threads = 2;
    hopts.max_body_bytes = BODY_CAP;
    hopts.conn_timeout_s = 5;
    f->ex = gw_exemplars_new(8);
    assert_non_null(f->ex);
    hopts.exemplars = f->ex;
    if (gw_http_start(&f->http, f->db, &hopts, &err) != GW_OK) {
        print_error("gw_http_start: %s\n", err.msg);
        return -1;
    }
    f->port = gw_http_port(f->http);
    assert_true(f->port != 0);
    /* Data every test can read: 20 samples per series ending ~1 min ago. */
    f->base = (gw_now_ms() / 60000) * 60000 - 20 * 60000;
    build_write(f->base, 0, N_SAMPLES, 0.0, &w);
    post_write(f, &w, &r);
    assert_int_equal(r.status, 204);
    assert_int_equal(r.body_len, 0);
    resp_free(&r);
    gw_buf_free(&w);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    char cmd[300];
    gw_http_stop(f->http);
    gw_exemplars_free(f->ex);
    gw_db_close(f->db);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        return -1;
    free(f);
    return 0;
}

/* ---- remote write ---- */

static void test_http_write_method_not_allowed(void **state)
{
    struct fixture *f = *state;
    struct resp r;
    char v[64];
    http_do(f->port, "GET", "/api/v1/write", NULL, NULL, 0, &r);
    assert_int_equal(r.status, 405);
    assert_non_null(header_value(&r, "Allow", v, sizeof v));
    assert_string_equal(v, "POST");
    resp_free(&r);
}

static void test_http_write_unsupported_media(void **state)
{
    struct fixture *f = *state;
    struct resp r;
    struct gw_buf w;
    build_write(f->base, 0, 2, 0.0, &w);
    http_do(f->port, "POST", "/api/v1/write", "Content-Type: application/x-protobuf\r\nContent-Encoding: gzip\r\n",
            w.data, w.len, &r);
    assert_int_equal(r.status, 415);
    assert_non_null(strstr(r.body, "Content-Encoding"));
    resp_free(&r);
    http_do(f->port, "POST", "/api/v1/write", "Content-Type: application/json\r\nContent-Encoding: snappy\r\n",
            w.data, w.len, &r);
    assert_int_equal(r.status, 415);
    resp_free(&r);
    gw_buf_free(&w);
}

static void test_http_write_bad_bodies(void **state)
{
    struct fixture *f = *state;
    struct resp r;
    struct gw_buf w;
    char v[64];
    http_do(f->port, "POST", "/api/v1/write", RW_HEADERS, "garbage!", 8, &r);
    assert_int_equal(r.status, 400);
    assert_null(header_value(&r, "X-Prometheus-Remote-Write-Samples-Written", v, sizeof v));
    resp_free(&r);
    build_write(f->base, 0, N_SAMPLES, 0.0, &w);
    http_do(f->port, "POST", "/api/v1/write", RW_HEADERS, w.data, w.len / 2, &r);
    assert_int_equal(r.status, 400);
    resp_free(&r);
    /* v2 content type on a garbage body: 400 with the Written headers. */
    http_do(f->port, "POST", "/api/v1/write",
            "Content-Type: application/x-protobuf;proto=io.prometheus.write.v2.Request\r\n"
            "Content-Encoding: snappy\r\n", "\xff\xff\xff\xff\x0f", 5, &r);
    assert_int_equal(r.status, 400);
    assert_non_null(header_value(&r, "X-Prometheus-Remote-Write-Samples-Written", v, sizeof v));
    assert_string_equal(v, "0");
    resp_free(&r);
    gw_buf_free(&w);
}

/* ---- remote write 2.0: protobuf helpers for hand-encoded requests (v2_build) ---- */

static void pb_varint(struct gw_buf *b, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;
    while (v >= 0x80) {
        tmp[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    tmp[n++] = (uint8_t)v;
    assert_int_equal(gw_buf_append(b, tmp, n), GW_OK);
}

static void pb_bytes(struct gw_buf *b, uint8_t tag, const void *p, size_t n)
{
    pb_varint(b, tag);
    pb_varint(b, n);
    assert_int_equal(gw_buf_append(b, p, n), GW_OK);
}

static void test_http_write_v2(void **state)
{
    struct fixture *f = *state;
    struct gw_buf req, z;
    gw_buf_init(&req, 0);
    gw_buf_init(&z, 0);
    /* built by the product encoder (the forwarder's): __name__=rw2_metric, gpu=3, job=v2 */
    struct gw_label ls[] = {{"__name__", 8, "rw2_metric", 10}, {"gpu", 3, "3", 1}, {"job", 3, "v2", 2}};
    struct gw_sample smp[3];
    for (int i = 0; i < 3; i++) smp[i] = (struct gw_sample){f->base + i * 15000, 1.5 + i};
    struct gw_rw_series ser = {.labels = ls, .n_labels = 3, .samples = smp, .n_samples = 3};
    struct gw_rw_request rq = {.version = 2, .series = &ser, .n_series = 1};
    assert_int_equal(gw_rw_encode_v2(&rq, &req), GW_OK);
    assert_int_equal(gw_snappy_encode(req.data, req.len, &z), GW_OK);
    struct resp r;
    char v[64];
    http_do(f->port, "POST", "/api/v1/write",
            "Content-Type: application/x-protobuf;proto=io.prometheus.write.v2.Request\r\n"
            "Content-Encoding: snappy\r\nX-Prometheus-Remote-Write-Version: 2.0.0\r\n",
            z.data, z.len, &r);
    assert_int_equal(r.status, 204);
    assert_non_null(header_value(&r, "X-Prometheus-Remote-Write-Samples-Written", v, sizeof v));
    assert_string_equal(v, "3");
    assert_non_null(header_value(&r, "X-Prometheus-Remote-Write-Histograms-Written", v, sizeof v));
    assert_string_equal(v, "0");
    resp_free(&r);
    /* the same request again: idempotent, still 204 and counted as written */
    http_do(f->port, "POST", "/api/v1/write",
            "Content-Type: application/x-protobuf;proto=io.prometheus.write.v2.Request\r\n"
            "Content-Encoding: snappy\r\n",
            z.data, z.len, &r);
    assert_int_equal(r.status, 204);
    resp_free(&r);
    char target[256];
    snprintf(target, sizeof target, "/api/v1/query?query=rw2_metric%%5B1h%%5D&time=%.3f",
             (double)(f->base + 60000) / 1000.0);
    http_do(f->port, "GET", target, "", NULL, 0, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"job\":\"v2\""));
    assert_non_null(strstr(r.body, "\"gpu\":\"3\""));
    assert_non_null(strstr(r.body, "\"1.5\""));
    assert_non_null(strstr(r.body, "\"3.5\""));
    resp_free(&r);
    gw_buf_free(&req);
    gw_buf_free(&z);
}

static void test_http_write_too_large(void **state)
{
    struct fixture *f = *state;
    struct resp r;
    size_t n = BODY_CAP + 4096;
    char *big = malloc(n);
    assert_non_null(big);
    memset(big, 'x', n);
    http_do(f->port, "POST", "/api/v1/write", RW_HEADERS, big, n, &r);
    assert_int_equal(r.status, 413);
    resp_free(&r);
    free(big);
    /* The server still works afterwards. */
    http_do(f->port, "GET", "/-/healthy", NULL, NULL, 0, &r);
    assert_int_equal(r.status, 200);
    resp_free(&r);
}

static void test_http_write_refused_and_retry(void **state)
{
    struct fixture *f = *state;
    struct resp r;
    struct gw_buf w;
    /* The newest samples again: idempotent, 204. */
    build_write(f->base, N_SAMPLES - 1, 1, 0.0, &w);
    post_write(f, &w, &r);
    if (r.status != 204)
        print_message("retry answered %d: %s\n", r.status, r.body);
    assert_int_equal(r.status, 204);
    resp_free(&r);
    gw_buf_free(&w);
    /* Same timestamp, other value: refused as duplicates with a reason. */
    build_write(f->base, N_SAMPLES - 1, 1, 0.5, &w);
    post_write(f, &w, &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "refused 2 of 2 samples"));
    assert_non_null(strstr(r.body, "2 duplicate timestamp with different value"));
    resp_free(&r);
    gw_buf_free(&w);
    /* A retried batch overlapping stored samples with the same values is
     * idempotent: the copies are no-ops, the one new sample per series is kept. */
    build_write(f->base, N_SAMPLES - 3, 4, 0.0, &w);
    post_write(f, &w, &r);
    assert_int_equal(r.status, 204);
    resp_free(&r);
    gw_buf_free(&w);
    /* Older timestamps stored with other values are conflicts; timestamps
     * between stored ones are out of order. */
    build_write(f->base, N_SAMPLES - 3, 2, 0.25, &w);
    post_write(f, &w, &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "refused 4 of 4 samples: 4 duplicate timestamp with different value"));
    resp_free(&r);
    gw_buf_free(&w);
    build_write_step(f->base + 1, 15000, "test_metric", N_SAMPLES - 3, 2, 0.0, &w);
    post_write(f, &w, &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "refused 4 of 4 samples: 4 out of order"));
    resp_free(&r);
    gw_buf_free(&w);
}

/* ---- query API ---- */

static void get(struct fixture *f, const char *target, struct resp *r)
{
    http_do(f->port, "GET", target, NULL, NULL, 0, r);
}

static void test_http_series_labels_values(void **state)
{
    struct fixture *f = *state;
    struct resp r;
    char m[128], t[512];
    qenc("test_metric", m, sizeof m);
    snprintf(t, sizeof t, "/api/v1/series?match[]=%s", m);
    get(f, t, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "{\"status\":\"success\",\"data\":[{\"__name__\":\"test_metric\",\"job\":\"a\"},"
                                "{\"__name__\":\"test_metric\",\"job\":\"b\"}]}");
    resp_free(&r);

    qenc("{job=\"b\"}", m, sizeof m);
    snprintf(t, sizeof t, "/api/v1/series?match[]=%s&limit=5", m);
    get(f, t, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "{\"status\":\"success\",\"data\":[{\"__name__\":\"test_metric\",\"job\":\"b\"}]}");
    resp_free(&r);

    get(f, "/api/v1/series", &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "\"errorType\":\"bad_data\""));
    resp_free(&r);

    get(f, "/api/v1/labels", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "{\"status\":\"success\",\"data\":[\"__name__\",\"job\"]}");
    resp_free(&r);

    /* POST form body works like GET. */
    http_do(f->port, "POST", "/api/v1/labels", "Content-Type: application/x-www-form-urlencoded\r\n",
            "match%5B%5D=test_metric", 23, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "{\"status\":\"success\",\"data\":[\"__name__\",\"job\"]}");
    resp_free(&r);

    get(f, "/api/v1/label/job/values", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "{\"status\":\"success\",\"data\":[\"a\",\"b\"]}");
    resp_free(&r);

    get(f, "/api/v1/label/job/values?limit=1", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "{\"status\":\"success\",\"data\":[\"a\"],"
                                "\"warnings\":[\"results truncated due to limit\"]}");
    resp_free(&r);

    get(f, "/api/v1/label/nothere/values", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "{\"status\":\"success\",\"data\":[]}");
    resp_free(&r);
}

static void test_http_query_range(void **state)
{
    struct fixture *f = *state;
    struct resp r;
    char m[128], t[512], want[4096], ts[32];
    size_t n = 0;
    /* Steps every 60 s over the written data of job="a" (value i at base+15s*i). */
    qenc("test_metric{job=\"a\"}", m, sizeof m);
    int64_t start = f->base, end = f->base + 4 * 60000;
    snprintf(t, sizeof t, "/api/v1/query_range?query=%s&start=%lld&end=%lld.000&step=60", m,
             (long long)(start / 1000), (long long)(end / 1000));
    get(f, t, &r);
    assert_int_equal(r.status, 200);
    n = (size_t)snprintf(want, sizeof want, "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":"
                                           "[{\"metric\":{\"__name__\":\"test_metric\",\"job\":\"a\"},\"values\":[");
    for (int i = 0; i <= 4; i++) {
        snprintf(ts, sizeof ts, "%lld", (long long)((start + i * 60000) / 1000));
        n += (size_t)snprintf(want + n, sizeof want - n, "%s[%s,\"%d\"]", i ? "," : "", ts, i * 4);
    }
    snprintf(want + n, sizeof want - n, "]}]}}");
    assert_string_equal(r.body, want);
    resp_free(&r);

    /* Instant query: a vector with the eval time, both series. */
    qenc("test_metric", m, sizeof m);
    snprintf(t, sizeof t, "/api/v1/query?query=%s&time=%lld.5", m, (long long)((f->base + 30000) / 1000));
    get(f, t, &r);
    assert_int_equal(r.status, 200);
    snprintf(ts, sizeof ts, "%lld.500", (long long)((f->base + 30000) / 1000));
    snprintf(want, sizeof want,
             "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
             "{\"metric\":{\"__name__\":\"test_metric\",\"job\":\"a\"},\"value\":[%s,\"2\"]},"
             "{\"metric\":{\"__name__\":\"test_metric\",\"job\":\"b\"},\"value\":[%s,\"20\"]}]}}", ts, ts);
    assert_string_equal(r.body, want);
    resp_free(&r);

    /* Range selector at an instant: raw samples in (t-30s, t]. */
    qenc("test_metric{job=\"b\"}[30s]", m, sizeof m);
    snprintf(t, sizeof t, "/api/v1/query?query=%s&time=%lld", m, (long long)((f->base + 45000) / 1000));
    get(f, t, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"resultType\":\"matrix\""));
    assert_non_null(strstr(r.body, ",\"20\"],["));
    assert_non_null(strstr(r.body, ",\"30\"]]"));
    assert_null(strstr(r.body, ",\"10\"]"));
    resp_free(&r);

    /* Parameter checks. */
    snprintf(t, sizeof t, "/api/v1/query_range?query=up&start=100&end=50&step=10");
    get(f, t, &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "end timestamp must not be before start time"));
    resp_free(&r);
    get(f, "/api/v1/query_range?query=up&start=0&end=50&step=0", &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "zero or negative query resolution step widths are not accepted"));
    resp_free(&r);
    get(f, "/api/v1/query_range?query=up&start=0&end=11001&step=1", &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "exceeded maximum resolution of 11,000 points"));
    resp_free(&r);
    get(f, "/api/v1/query?query=1%2B1&time=4", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "{\"status\":\"success\",\"data\":{\"resultType\":\"scalar\",\"result\":[4,\"2\"]}}");
    resp_free(&r);
    get(f, "/api/v1/query?query=up&time=yesterday", &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "invalid parameter \\\"time\\\""));
    resp_free(&r);
}

/* ---- PromQL through the API ---- */

static void get_q(struct fixture *f, const char *path, const char *query, const char *rest, struct resp *r)
{
    char m[1024], t[2048];
    qenc(query, m, sizeof m);
    snprintf(t, sizeof t, "%s?query=%s%s", path, m, rest ? rest : "");
    get(f, t, r);
}

static void test_http_query_promql(void **state)
{
    struct fixture *f = *state;
    struct resp r;
    char rest[256], want[2048];
    long long b = (long long)(f->base / 1000);

    /* Grafana's data-source check, GET and form POST. */
    http_do(f->port, "POST", "/api/v1/query", "Content-Type: application/x-www-form-urlencoded\r\n",
            "query=1%2B1&time=4", 18, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "{\"status\":\"success\",\"data\":{\"resultType\":\"scalar\",\"result\":[4,\"2\"]}}");
    resp_free(&r);

    /* A string literal. */
    get_q(f, "/api/v1/query", "\"a\\\"b\"", "&time=4.5", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body,
                        "{\"status\":\"success\",\"data\":{\"resultType\":\"string\",\"result\":[4.500,\"a\\\"b\"]}}");
    resp_free(&r);

    /* An aggregation at an instant: i = 4 -> 4 + 40. */
    snprintf(rest, sizeof rest, "&time=%lld", b + 60);
    get_q(f, "/api/v1/query", "sum(test_metric)", rest, &r);
    assert_int_equal(r.status, 200);
    snprintf(want, sizeof want,
             "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{},\"value\":[%lld,"
             "\"44\"]}]}}",
             b + 60);
    assert_string_equal(r.body, want);
    resp_free(&r);

    /* Arithmetic keeps the series' labels but drops __name__. */
    get_q(f, "/api/v1/query", "test_metric{job=\"b\"} / 10", rest, &r);
    assert_int_equal(r.status, 200);
    snprintf(want, sizeof want,
             "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"job\":\"b\"},"
             "\"value\":[%lld,\"4\"]}]}}",
             b + 60);
    assert_string_equal(r.body, want);
    resp_free(&r);

    /* A range query grouped by job. */
    snprintf(rest, sizeof rest, "&start=%lld&end=%lld&step=30s", b, b + 60);
    get_q(f, "/api/v1/query_range", "sum by (job) (test_metric)", rest, &r);
    assert_int_equal(r.status, 200);
    snprintf(want, sizeof want,
             "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":["
             "{\"metric\":{\"job\":\"a\"},\"values\":[[%lld,\"0\"],[%lld,\"2\"],[%lld,\"4\"]]},"
             "{\"metric\":{\"job\":\"b\"},\"values\":[[%lld,\"0\"],[%lld,\"20\"],[%lld,\"40\"]]}]}}",
             b, b + 30, b + 60, b, b + 30, b + 60);
    assert_string_equal(r.body, want);
    resp_free(&r);

    /* A scalar expression over a range: one series without labels. */
    get_q(f, "/api/v1/query_range", "1+1", "&start=1&end=3&step=1", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":["
                                "{\"metric\":{},\"values\":[[1,\"2\"],[2,\"2\"],[3,\"2\"]]}]}}");
    resp_free(&r);

    /* Nothing matches: an empty list, never null. */
    get_q(f, "/api/v1/query", "no_such_metric", rest, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[]}}");
    resp_free(&r);
    get_q(f, "/api/v1/query_range", "no_such_metric", rest, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[]}}");
    resp_free(&r);

    /* limit keeps the first series and says so. */
    snprintf(rest, sizeof rest, "&time=%lld&limit=1", b + 60);
    get_q(f, "/api/v1/query", "test_metric", rest, &r);
    assert_int_equal(r.status, 200);
    snprintf(want, sizeof want,
             "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"__name__\":"
             "\"test_metric\",\"job\":\"a\"},\"value\":[%lld,\"4\"]}]},\"warnings\":[\"results truncated due to "
             "limit\"]}",
             b + 60);
    assert_string_equal(r.body, want);
    resp_free(&r);

    /* Special values are strings. */
    get_q(f, "/api/v1/query", "vector(1/0) or vector(-1/0)", "&time=4", &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"+Inf\""));
    resp_free(&r);
}

static void test_http_query_errors(void **state)
{
    struct fixture *f = *state;
    struct resp r;
    char rest[256];
    long long b = (long long)(f->base / 1000);

    get_q(f, "/api/v1/query", "sum(", "&time=4", &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "\"errorType\":\"bad_data\""));
    assert_non_null(strstr(r.body, "\"error\":\"invalid parameter \\\"query\\\": 1:"));
    assert_non_null(strstr(r.body, "parse error"));
    resp_free(&r);

    get(f, "/api/v1/query?time=4", &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "\"errorType\":\"bad_data\""));
    resp_free(&r);

    /* Matching errors are found while evaluating: 422 execution. */
    snprintf(rest, sizeof rest, "&time=%lld", b + 60);
    get_q(f, "/api/v1/query", "test_metric + on() test_metric", rest, &r);
    assert_int_equal(r.status, 422);
    assert_non_null(strstr(r.body, "\"errorType\":\"execution\""));
    resp_free(&r);

    /* A range query refuses range vectors and strings before evaluating. */
    get_q(f, "/api/v1/query_range", "test_metric[1m]", "&start=1&end=2&step=1", &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "invalid expression type \\\"range vector\\\" for range query, must be Scalar "
                                   "or instant Vector"));
    resp_free(&r);
    get_q(f, "/api/v1/query_range", "\"x\"", "&start=1&end=2&step=1", &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "invalid expression type \\\"string\\\""));
    resp_free(&r);

    get_q(f, "/api/v1/query_range", "up", "&start=1&end=2&step=-1", &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "zero or negative query resolution step widths are not accepted. Try a "
                                   "positive integer"));
    resp_free(&r);
    get_q(f, "/api/v1/query_range", "up", "&start=1&end=2", &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "invalid parameter \\\"step\\\""));
    resp_free(&r);
    get_q(f, "/api/v1/query", "up", "&timeout=soon", &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "invalid parameter \\\"timeout\\\""));
    resp_free(&r);
    get_q(f, "/api/v1/query", "up", "&lookback_delta=far", &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "invalid parameter \\\"lookback_delta\\\""));
    resp_free(&r);
    get_q(f, "/api/v1/query", "up", "&limit=-1", &r);
    assert_int_equal(r.status, 400);
    resp_free(&r);
    /* max_source_resolution (docs/downsampling.md) */
    get_q(f, "/api/v1/query", "up", "&max_source_resolution=fine", &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "invalid parameter \\\"max_source_resolution\\\""));
    resp_free(&r);
    get_q(f, "/api/v1/query", "up", "&max_source_resolution=-5m", &r);
    assert_int_equal(r.status, 400);
    resp_free(&r);
    static const char *const good_res[] = {"raw", "0s", "auto", "5m", "1h", "10m"};
    for (size_t i = 0; i < sizeof good_res / sizeof good_res[0]; i++) {
        char res_q[64];
        snprintf(res_q, sizeof res_q, "&max_source_resolution=%s", good_res[i]);
        get_q(f, "/api/v1/query", "up", res_q, &r);
        assert_int_equal(r.status, 200);
        resp_free(&r);
    }
    /* Over 11,000 points per series by one step. */
    get_q(f, "/api/v1/query_range", "up", "&start=0&end=11001&step=1", &r);
    assert_int_equal(r.status, 400);
    resp_free(&r);
    get_q(f, "/api/v1/query_range", "up", "&start=0&end=11000&step=1", &r);
    assert_int_equal(r.status, 200);
    resp_free(&r);
}

/* Server options: compat 2/3 windows, lookback, the sample limit. */
static void test_http_query_server_opts(void **state)
{
    struct fixture *f = *state;
    struct gw_http_opts o = {0};
    struct resp r;
    char rest[256];
    long long b = (long long)(f->base / 1000);
    long long after = b + (N_SAMPLES - 1) * 15 + 600;   /* 10 min after the last sample */

    /* (t-30s, t] holds base+45s and base+60s; [t-30s, t] also base+30s. */
    snprintf(rest, sizeof rest, "&time=%lld", b + 60);
    get_q(f, "/api/v1/query", "count_over_time(test_metric{job=\"a\"}[30s])", rest, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, ",\"2\"]}"));
    resp_free(&r);

    snprintf(rest, sizeof rest, "&time=%lld", after);
    get_q(f, "/api/v1/query", "test_metric", rest, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"result\":[]"));
    resp_free(&r);
    snprintf(rest, sizeof rest, "&time=%lld&lookback_delta=15m", after);
    get_q(f, "/api/v1/query", "test_metric", rest, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"job\":\"b\"},\"value\":["));
    resp_free(&r);

    gw_http_opts_default(&o);
    o.promql_compat = 2;
    o.lookback_ms = 15 * 60000;
    gw_http_set_query_opts(f->http, &o);

    snprintf(rest, sizeof rest, "&time=%lld", b + 60);
    get_q(f, "/api/v1/query", "count_over_time(test_metric{job=\"a\"}[30s])", rest, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, ",\"3\"]}"));
    resp_free(&r);

    snprintf(rest, sizeof rest, "&time=%lld", after);
    get_q(f, "/api/v1/query", "test_metric{job=\"a\"}", rest, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, ",\"19\"]}"));
    resp_free(&r);

    o.query_max_samples = 5;
    gw_http_set_query_opts(f->http, &o);
    snprintf(rest, sizeof rest, "&time=%lld", b + 300);
    get_q(f, "/api/v1/query", "test_metric[5m]", rest, &r);
    assert_int_equal(r.status, 422);
    assert_non_null(strstr(r.body, "query processing would load too many samples into memory in query execution"));
    resp_free(&r);
}

/* gw_http_api_query answers like the server, without one. */
static void test_http_api_query_direct(void **state)
{
    struct fixture *f = *state;
    struct gw_http_opts o = {0};
    struct gw_buf out;
    unsigned status = 0;
    char params[512], m[256];
    const char *q = "query=1%2B1&time=4";

    gw_buf_init(&out, 1 << 20);
    assert_int_equal(gw_http_api_query(f->db, NULL, 0, q, strlen(q), &status, &out), GW_OK);
    assert_int_equal(status, 200);
    assert_int_equal(out.len, strlen("{\"status\":\"success\",\"data\":{\"resultType\":\"scalar\",\"result\":[4,\"2\"]}}"));
    assert_memory_equal(out.data, "{\"status\":\"success\",\"data\":{\"resultType\":\"scalar\",\"result\":[4,\"2\"]}}",
                        out.len);

    gw_buf_reset(&out);
    gw_http_opts_default(&o);
    o.promql_compat = 2;
    qenc("count_over_time(test_metric{job=\"b\"}[30s])", m, sizeof m);
    snprintf(params, sizeof params, "query=%s&time=%lld", m, (long long)(f->base / 1000 + 60));
    assert_int_equal(gw_http_api_query(f->db, &o, 0, params, strlen(params), &status, &out), GW_OK);
    assert_int_equal(status, 200);
    assert_non_null(memmem(out.data, out.len, ",\"3\"]}", 6));

    gw_buf_reset(&out);
    q = "query=up&start=2&end=1&step=1";
    assert_int_equal(gw_http_api_query(f->db, NULL, 1, q, strlen(q), &status, &out), GW_OK);
    assert_int_equal(status, 400);
    assert_non_null(memmem(out.data, out.len, "end timestamp must not be before start time", 43));

    gw_buf_reset(&out);
    q = "query=%zz";
    assert_int_equal(gw_http_api_query(f->db, NULL, 0, q, strlen(q), &status, &out), GW_OK);
    assert_int_equal(status, 400);
    gw_buf_free(&out);
}

static void test_http_format_query(void **state)
{
    struct fixture *f = *state;
    struct resp r;
    get_q(f, "/api/v1/format_query", "sum(rate(x{a=\"b\"}[5m]))by(job)", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body,
                        "{\"status\":\"success\",\"data\":\"sum by (job) (rate(x{a=\\\"b\\\"}[5m]))\"}");
    resp_free(&r);
    http_do(f->port, "POST", "/api/v1/format_query", "Content-Type: application/x-www-form-urlencoded\r\n",
            "query=1%2B%20%202", 17, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "{\"status\":\"success\",\"data\":\"1 + 2\"}");
    resp_free(&r);
    get_q(f, "/api/v1/format_query", "sum(x", NULL, &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "\"errorType\":\"bad_data\""));
    assert_non_null(strstr(r.body, "invalid parameter \\\"query\\\""));
    resp_free(&r);
    http_do(f->port, "DELETE", "/api/v1/format_query", NULL, NULL, 0, &r);
    assert_int_equal(r.status, 405);
    resp_free(&r);
}

static void test_http_misc_endpoints(void **state)
{
    struct fixture *f = *state;
    struct resp r;
    get(f, "/-/ready", &r);
    assert_int_equal(r.status, 503);
    resp_free(&r);
    gw_http_set_ready(f->http, 1);
    get(f, "/-/ready", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "gpuwatch is Ready.\n");
    resp_free(&r);
    get(f, "/-/healthy", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "gpuwatch is Healthy.\n");
    resp_free(&r);
    get(f, "/api/v1/status/buildinfo", &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"version\":\""));
    assert_null(strstr(r.body, "features"));
    resp_free(&r);
    get(f, "/api/v1/query_exemplars?query=test&start=1&end=2", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "{\"status\":\"success\",\"data\":[]}");
    resp_free(&r);
    get(f, "/api/v1/nope", &r);
    assert_int_equal(r.status, 404);
    assert_non_null(strstr(r.body, "\"errorType\":\"not_found\""));
    resp_free(&r);
    get(f, "/nope", &r);
    assert_int_equal(r.status, 404);
    assert_null(strstr(r.body, "{"));
    resp_free(&r);
    http_do(f->port, "DELETE", "/api/v1/query", NULL, NULL, 0, &r);
    assert_int_equal(r.status, 405);
    resp_free(&r);
    get(f, "/api/v1/metadata", &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "{\"status\":\"success\",\"data\":{"));
    resp_free(&r);
    get(f, "/metrics", &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "gpuwatch_http_requests_total{route=\"/api/v1/write\",code=\"204\"} 1"));
    assert_non_null(strstr(r.body, "gpuwatch_remote_write_samples_accepted_total 40"));
    resp_free(&r);
}

/* ---- remote read ---- */

struct read_seen {
    size_t series, samples;
    double last_b;
};

static int on_read_series(void *ud, size_t qi, const uint8_t *labels, size_t labels_len, const int64_t *t,
                          const double *v, size_t n)
{
    struct read_seen *s = ud;
    const char *job;
    size_t jl;
    (void)qi;
    (void)t;
    s->series++;
    s->samples += n;
    if (gw_labels_get(labels, labels_len, "job", 3, &job, &jl) && jl == 1 && job[0] == 'b' && n > 0)
        s->last_b = v[n - 1];
    return GW_OK;
}

static void remote_read(struct fixture *f, const char *metric, int streamed, struct read_seen *seen)
{
    struct gw_read_request rr;
    struct gw_read_query q;
    struct gw_buf pb, sn;
    struct gw_error err;
    struct resp r;
    char ct[128];
    memset(&q, 0, sizeof q);
    q.start_ms = f->base;
    q.end_ms = f->base + 3600000;
    q.matchers = calloc(1, sizeof *q.matchers);
    assert_non_null(q.matchers);
    assert_int_equal(gw_matcher_init(&q.matchers[0], GW_MATCH_EQ, "__name__", 8, metric, strlen(metric), NULL), GW_OK);
    q.n_matchers = 1;
    memset(&rr, 0, sizeof rr);
    rr.queries = &q;
    rr.n_queries = 1;
    gw_buf_init(&pb, 0);
    gw_buf_init(&sn, 0);
    assert_int_equal(gw_read_request_encode(&rr, streamed, &pb), GW_OK);
    assert_int_equal(gw_snappy_encode(pb.data, pb.len, &sn), GW_OK);
    http_do(f->port, "POST", "/api/v1/read",
            "Content-Type: application/x-protobuf\r\nContent-Encoding: snappy\r\n", sn.data, sn.len, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(header_value(&r, "Content-Type", ct, sizeof ct));
    memset(seen, 0, sizeof *seen);
    gw_error_clear(&err);
    if (streamed) {
        assert_string_equal(ct, "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse");
        assert_int_equal(gw_read_chunked_decode((const uint8_t *)r.body, r.body_len, on_read_series, seen, &err),
                         GW_OK);
    } else {
        assert_string_equal(ct, "application/x-protobuf");
        assert_int_equal(gw_read_response_decode((const uint8_t *)r.body, r.body_len, on_read_series, seen, &err),
                         GW_OK);
    }
    resp_free(&r);
    gw_matcher_free(&q.matchers[0]);
    free(q.matchers);
    gw_buf_free(&pb);
    gw_buf_free(&sn);
}

static void test_http_remote_read(void **state)
{
    struct fixture *f = *state;
    struct read_seen seen;
    struct resp r;
    struct gw_buf w;
    remote_read(f, "test_metric", 0, &seen);
    assert_int_equal(seen.series, 2);
    assert_int_equal(seen.samples, 2 * N_SAMPLES);
    assert_true(seen.last_b == 10.0 * (N_SAMPLES - 1));
    remote_read(f, "test_metric", 1, &seen);
    assert_int_equal(seen.series, 2);
    assert_int_equal(seen.samples, 2 * N_SAMPLES);
    assert_true(seen.last_b == 10.0 * (N_SAMPLES - 1));
    /* 1000 samples per series: several 120-sample XOR chunks each. */
    build_write_step(f->base, 1000, "dense_metric", 0, 1000, 0.0, &w);
    post_write(f, &w, &r);
    assert_int_equal(r.status, 204);
    resp_free(&r);
    gw_buf_free(&w);
    remote_read(f, "dense_metric", 1, &seen);
    assert_int_equal(seen.samples, 2000);
    assert_true(seen.series >= 2);
    assert_true(seen.last_b == 9990.0);
    remote_read(f, "dense_metric", 0, &seen);
    assert_int_equal(seen.series, 2);
    assert_int_equal(seen.samples, 2000);
    http_do(f->port, "POST", "/api/v1/read", "Content-Encoding: snappy\r\n", "junk", 4, &r);
    assert_int_equal(r.status, 400);
    resp_free(&r);
}

/* ---- slow clients ---- */

static uint64_t now_ms_mono(void)
{
    return gw_mono_ns() / 1000000u;
}

static void test_http_stalled_upload_does_not_block(void **state)
{
    struct fixture *f = *state;
    struct resp r;
    char hdr[512];
    int slow[4];
    uint64_t t0;
    /* More stalled uploads than worker threads. */
    for (int i = 0; i < 4; i++) {
        slow[i] = connect_port(f->port);
        int n = snprintf(hdr, sizeof hdr,
                         "POST /api/v1/write HTTP/1.1\r\nHost: x\r\n" RW_HEADERS "Content-Length: 1000\r\n\r\n");
        send_all(slow[i], hdr, (size_t)n);
        send_all(slow[i], "0123456789012345678901234567890123456789", 40);
    }
    usleep(100 * 1000);
    t0 = now_ms_mono();
    http_do(f->port, "GET", "/-/healthy", NULL, NULL, 0, &r);
    assert_int_equal(r.status, 200);
    assert_true(now_ms_mono() - t0 < 1000);
    resp_free(&r);
    {
        char m[64], t[256];
        qenc("test_metric", m, sizeof m);
        snprintf(t, sizeof t, "/api/v1/series?match[]=%s", m);
        t0 = now_ms_mono();
        get(f, t, &r);
        assert_int_equal(r.status, 200);
        assert_true(now_ms_mono() - t0 < 1000);
        resp_free(&r);
    }
    for (int i = 0; i < 4; i++)
        close(slow[i]);
}

static void test_http_listen_addresses(void **state)
{
    static const char *good[] = {"127.0.0.1:0", "localhost:0", ":0"};
    static const char *bad[] = {"nonsense", "127.0.0.1:99999", "127.0.0.1:", "::1:0", "[::1]9201",
                                "127.0.0.1:12ab"};
    struct gw_http_opts o;
    struct gw_http *h = NULL;
    struct gw_error err;
    struct resp r;
    (void)state;
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        gw_http_opts_default(&o);
        o.listen = good[i];
        o.threads = 1;
        gw_error_clear(&err);
        assert_int_equal(gw_http_start(&h, NULL, &o, &err), GW_OK);
        assert_true(gw_http_port(h) != 0);
        http_do(gw_http_port(h), "GET", "/-/healthy", NULL, NULL, 0, &r);
        assert_int_equal(r.status, 200);
        resp_free(&r);
        gw_http_stop(h);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gw_http_opts_default(&o);
        o.listen = bad[i];
        h = NULL;
        gw_error_clear(&err);
        assert_int_equal(gw_http_start(&h, NULL, &o, &err), GW_EINVAL);
        assert_null(h);
        assert_true(err.msg[0] != '\0');
    }
    gw_http_stop(NULL);
}

/* /api/v1/checkpoints: events of the store overlapping [start, end], the
 * envelope, null for unknown numbers, 400 on bad parameters; no store: []. */
static void test_http_checkpoints(void **state)
{
    (void)state;
    char dir[256];
    const char *tmp = getenv("GW_TEST_TMP");
    snprintf(dir, sizeof dir, "%s/gwckpt.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(dir));
    static const char *const tables[] = {GW_CKPT_TABLE};
    struct gw_kv *kv = NULL;
    struct gw_error err = {0};
    assert_int_equal(gw_kv_open(&kv, dir, tables, 1, 1u << 20, 1u << 24, &err), GW_OK);
    struct gw_kv_txn *t = NULL;
    assert_int_equal(gw_kv_begin(kv, 1, &t, &err), GW_OK);
    for (int i = 0; i < 3; i++) {
        struct gw_det_ckpt e;
        memset(&e, 0, sizeof e);
        e.id = (uint64_t)i;
        e.t_start = 1767225600000LL + i * 3600000LL;
        e.t_end = e.t_start + 300000;
        e.phase = i == 0 ? GW_CKPT_LOAD : GW_CKPT_SAVE;
        e.diag = i == 2 ? GW_CKPT_SLOTS : GW_CKPT_HEALTHY;
        e.nodes = 60;
        e.bytes = 1.2e13;
        e.queue_share = i == 2 ? 0.93 : 0.05;
        e.link_util = NAN;
        uint8_t k[GW_CKPT_KEY_BYTES], v[GW_CKPT_ENC_BYTES];
        gw_det_ckpt_key(e.t_start, e.id, k);
        gw_det_ckpt_encode(&e, v);
        assert_int_equal(gw_kv_put(t, 0, k, sizeof k, v, sizeof v, &err), GW_OK);
    }
    assert_int_equal(gw_kv_commit(t, &err), GW_OK);
    struct gw_http_opts o;
    gw_http_opts_default(&o);
    o.listen = "127.0.0.1:0";
    o.threads = 1;
    o.checkpoints = kv;
    struct gw_http *h = NULL;
    assert_int_equal(gw_http_start(&h, NULL, &o, &err), GW_OK);
    uint16_t port = gw_http_port(h);
    struct resp r;
    http_do(port, "GET", "/api/v1/checkpoints", NULL, NULL, 0, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "{\"status\":\"success\",\"data\":[{\"id\":0,\"phase\":\"load\""));
    assert_non_null(strstr(r.body, "\"link_utilisation\":null"));
    assert_non_null(strstr(r.body, "\"diagnosis\":\"slot_limited\""));
    assert_non_null(strstr(r.body, "nconnect"));
    resp_free(&r);
    /* only the second: start inside it, end before the third */
    http_do(port, "GET", "/api/v1/checkpoints?start=1767229300&end=2026-01-01T01:30:00Z", NULL, NULL, 0, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"id\":1,"));
    assert_null(strstr(r.body, "\"id\":0,"));
    assert_null(strstr(r.body, "\"id\":2,"));
    resp_free(&r);
    http_do(port, "GET", "/api/v1/checkpoints?start=yesterday", NULL, NULL, 0, &r);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.body, "bad_data"));
    assert_non_null(strstr(r.body, "cannot parse"));
    resp_free(&r);
    http_do(port, "GET", "/api/v1/checkpoints?start=200&end=100", NULL, NULL, 0, &r);
    assert_int_equal(r.status, 400);
    resp_free(&r);
    gw_http_stop(h);
    o.checkpoints = NULL;
    assert_int_equal(gw_http_start(&h, NULL, &o, &err), GW_OK);
    http_do(gw_http_port(h), "GET", "/api/v1/checkpoints", NULL, NULL, 0, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "{\"status\":\"success\",\"data\":[]}");
    resp_free(&r);
    gw_http_stop(h);
    gw_kv_close(kv);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* POST/GET /api/v1/events: 503 without a store, 415 on a form body, 400
 * naming the bad line with nothing stored, 200 with the count, GET back. */
static void test_http_events(void **state)
{
    (void)state;
    char dir[256];
    const char *base = getenv("GW_TEST_TMP");
    snprintf(dir, sizeof dir, "%s/gwhevXXXXXX", base && *base ? base : "/tmp");
    assert_non_null(mkdtemp(dir));
    struct gw_error err = {0};
    struct gw_http_opts o;
    gw_http_opts_default(&o);
    o.listen = "127.0.0.1:0";
    o.threads = 1;
    struct gw_http *h = NULL;
    struct resp r;
    assert_int_equal(gw_http_start(&h, NULL, &o, &err), GW_OK);
    http_do(gw_http_port(h), "GET", "/api/v1/events", NULL, NULL, 0, &r);
    assert_int_equal(r.status, 503);
    assert_non_null(strstr(r.body, "\"errorType\":\"unavailable\""));
    resp_free(&r);
    gw_http_stop(h);

    struct gw_led_events *ev = NULL;
    assert_int_equal(gw_led_events_open(&ev, dir, &err), GW_OK);
    o.events = ev;
    assert_int_equal(gw_http_start(&h, NULL, &o, &err), GW_OK);
    uint16_t port = gw_http_port(h);
    const char *nd = "Content-Type: application/x-ndjson\r\n";
    const char *good = "{\"type\":\"node_excluded\",\"time\":1796119200,\"node\":\"N1\"}\n"
                       "{\"type\":\"node_returned\",\"time\":\"2026-12-01T11:00:00Z\",\"node\":\"n1\"}\n";
    const char *bad = "{\"type\":\"node_excluded\",\"time\":1796119200,\"node\":\"n2\"}\n"
                      "{\"type\":\"node_excluded\",\"time\":1796119200}\n";
    http_do(port, "POST", "/api/v1/events", "Content-Type: application/x-www-form-urlencoded\r\n", good,
            strlen(good), &r);
    assert_int_equal(r.status, 415);
    resp_free(&r);
    http_do(port, "POST", "/api/v1/events", nd, bad, strlen(bad), &r);
    assert_int_equal(r.status, 400);
    assert_string_equal(r.body, "{\"status\":\"error\",\"errorType\":\"bad_data\","
                                "\"error\":\"line 2: node_excluded needs \\\"node\\\"\"}");
    resp_free(&r);
    http_do(port, "POST", "/api/v1/events", nd, good, strlen(good), &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "{\"status\":\"success\",\"data\":{\"stored\":2}}");
    resp_free(&r);
    http_do(port, "GET", "/api/v1/events?start=2026-12-01T10:00:00Z&end=1796122800&type=node_returned", NULL, NULL,
            0, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "{\"status\":\"success\",\"data\":[{\"seq\":2,\"time\":\"2026-12-01T11:00:00Z\","
                                "\"type\":\"node_returned\",\"node\":\"n1\"}]}");
    resp_free(&r);
    http_do(port, "GET", "/api/v1/events?node=n2", NULL, NULL, 0, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "{\"status\":\"success\",\"data\":[]}");
    resp_free(&r);
    http_do(port, "GET", "/api/v1/events?limit=x", NULL, NULL, 0, &r);
    assert_int_equal(r.status, 400);
    resp_free(&r);
    http_do(port, "PUT", "/api/v1/events", NULL, NULL, 0, &r);
    assert_int_equal(r.status, 405);
    resp_free(&r);
    gw_http_stop(h);
    gw_led_events_close(ev);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* ---- remote write 2.0 receiver MUSTs (docs/remote-write.md lists each
 * with the case here that checks it), with exemplars. Requests come from
 * the small 2.0 encoder below over a fixed symbol table. */

static const char v2_long_value[] = /* 130 runes */
    "0123456789012345678901234567890123456789012345678901234567890123456789"
    "012345678901234567890123456789012345678901234567890123456789";
static const char *const v2_syms[] = {"", "__name__", "must_metric", "job", "x", "trace_id", "abc", "def",
                                      "must_other", "", v2_long_value /* 10 */};
#define V2_EMPTY_SYM 9   /* a second "" (an empty label value) */

struct v2_ts {
    const uint8_t *refs;    /* label refs into v2_syms */
    size_t n_refs;
    int n_samples;          /* values 1, 2, ... at t0, t0 + 15 s, ... */
    int64_t t0;
    int n_hist;             /* empty Histogram messages */
    const uint8_t *ex_refs; /* every exemplar's label refs */
    size_t n_ex_refs;
    int n_ex;               /* exemplars with value 7 + i at ex_t0 + i s */
    int64_t ex_t0;
};

static void v2_put_double(struct gw_buf *b, uint8_t tag, double v)
{
    uint8_t raw[9];
    raw[0] = tag;
    memcpy(raw + 1, &v, 8);   /* little-endian host */
    assert_int_equal(gw_buf_append(b, raw, 9), GW_OK);
}

/* snappy(io.prometheus.write.v2.Request) of the series in ts[0..n); sym0:
 * the first symbol ("" unless a test breaks that rule). */
static void v2_build(const struct v2_ts *ts, size_t n, const char *sym0, struct gw_buf *z)
{
    struct gw_buf req, one, sub;
    gw_buf_init(&req, 0);
    gw_buf_init(&one, 0);
    gw_buf_init(&sub, 0);
    gw_buf_init(z, 0);
    pb_bytes(&req, 0x22, sym0, strlen(sym0));
    for (size_t i = 1; i < sizeof v2_syms / sizeof v2_syms[0]; i++) pb_bytes(&req, 0x22, v2_syms[i], strlen(v2_syms[i]));
    for (size_t k = 0; k < n; k++) {
        gw_buf_reset(&one);
        if (ts[k].n_refs) pb_bytes(&one, 0x0A, ts[k].refs, ts[k].n_refs);
        for (int i = 0; i < ts[k].n_samples; i++) {
            gw_buf_reset(&sub);
            v2_put_double(&sub, 0x09, 1.0 + i);
            pb_varint(&sub, 0x10);
            pb_varint(&sub, (uint64_t)(ts[k].t0 + i * 15000));
            pb_bytes(&one, 0x12, sub.data, sub.len);
        }
        for (int i = 0; i < ts[k].n_hist; i++) pb_bytes(&one, 0x1A, "", 0);
        for (int i = 0; i < ts[k].n_ex; i++) {
            gw_buf_reset(&sub);
            if (ts[k].n_ex_refs) pb_bytes(&sub, 0x0A, ts[k].ex_refs, ts[k].n_ex_refs);
            v2_put_double(&sub, 0x11, 7.0 + i);
            pb_varint(&sub, 0x18);
            pb_varint(&sub, (uint64_t)(ts[k].ex_t0 + i * 1000));
            pb_bytes(&one, 0x22, sub.data, sub.len);
        }
        pb_bytes(&req, 0x2A, one.data, one.len);
    }
    assert_int_equal(gw_snappy_encode(req.data, req.len, z), GW_OK);
    gw_buf_free(&req);
    gw_buf_free(&one);
    gw_buf_free(&sub);
}

#define V2_HEADERS "Content-Type: application/x-protobuf;proto=io.prometheus.write.v2.Request\r\n" \
                   "Content-Encoding: snappy\r\nX-Prometheus-Remote-Write-Version: 2.0.0\r\n"

/* Posts a v2 request; checks the status and the three Written headers
 * (samples, histograms, exemplars), and for a 400 a non-empty message
 * containing want (if given). */
static void v2_post(struct fixture *f, const struct v2_ts *ts, size_t n, const char *sym0, int status,
                    const char *samples, const char *exemplars, const char *want)
{
    struct gw_buf z;
    struct resp r;
    char v[64];
    v2_build(ts, n, sym0, &z);
    http_do(f->port, "POST", "/api/v1/write", V2_HEADERS, z.data, z.len, &r);
    if (r.status != status)
        fail_msg("status %d, want %d: %s", r.status, status, r.body ? r.body : "");
    assert_non_null(header_value(&r, "X-Prometheus-Remote-Write-Samples-Written", v, sizeof v));
    assert_string_equal(v, samples);
    assert_non_null(header_value(&r, "X-Prometheus-Remote-Write-Histograms-Written", v, sizeof v));
    assert_string_equal(v, "0");
    assert_non_null(header_value(&r, "X-Prometheus-Remote-Write-Exemplars-Written", v, sizeof v));
    if (strcmp(v, exemplars) != 0)
        fail_msg("%s exemplars written, want %s (status %d: %s)", v, exemplars, r.status, r.body ? r.body : "");
    if (status == 400) {
        assert_true(r.body_len > 1);
        if (want && !strstr(r.body, want))
            fail_msg("400 body \"%s\" lacks \"%s\"", r.body, want);
    }
    if (status == 204)
        assert_int_equal(r.body_len, 0);
    resp_free(&r);
    gw_buf_free(&z);
}

static void test_http_write_v2_spec_musts(void **state)
{
    struct fixture *f = *state;
    int64_t t0 = f->base + 10 * 60000;   /* after the fixture's data, before now */
    static const uint8_t job_x[] = {1, 2, 3, 4}, other[] = {1, 8, 3, 4}, trace[] = {5, 6}, trace2[] = {5, 7};
    static const uint8_t dup_name[] = {1, 2, 1, 8}, empty_value[] = {1, 2, 3, V2_EMPTY_SYM}, bad_ref[] = {1, 2, 3, 99};
    static const uint8_t odd[] = {1, 2, 3}, no_name[] = {3, 4};
    /* all written: 2xx (204, empty body) with exact Written counts */
    struct v2_ts ok = {job_x, 4, 3, t0, 0, trace, 2, 1, t0};
    v2_post(f, &ok, 1, "", 204, "3", "1", NULL);
    /* a series with neither samples nor histograms: 400, the valid rest written */
    struct v2_ts empty[] = {{other, 4, 2, t0, 0, NULL, 0, 0, 0}, {job_x, 4, 0, 0, 0, trace2, 2, 1, t0 + 5000}};
    v2_post(f, empty, 2, "", 400, "2", "0", "neither samples nor histograms");
    /* samples and histograms in one series: 400 */
    struct v2_ts both = {job_x, 4, 1, t0 + 60000, 1, NULL, 0, 0, 0};
    v2_post(f, &both, 1, "", 400, "0", "0", "both samples and histograms");
    /* native histograms are not stored: 400 naming them, not 2xx */
    struct v2_ts hist = {other, 4, 0, 0, 1, NULL, 0, 0, 0};
    v2_post(f, &hist, 1, "", 400, "0", "0", "native histograms are not supported");
    /* invalid samples (out of order): 400 */
    struct v2_ts ooo = {job_x, 4, 1, t0 - 60000, 0, NULL, 0, 0, 0};
    v2_post(f, &ooo, 1, "", 400, "0", "0", "out of order");
    /* an exemplar not written (out of order for its series): not 2xx */
    struct v2_ts ex_ooo = {job_x, 4, 1, t0 + 120000, 0, trace2, 2, 1, t0 - 1000};
    v2_post(f, &ex_ooo, 1, "", 400, "1", "0", "out of order exemplar");
    /* the same exemplar resent: a duplicate, counted as written */
    struct v2_ts ex_dup = {job_x, 4, 1, t0 + 120000, 0, trace, 2, 1, t0};
    v2_post(f, &ex_dup, 1, "", 204, "1", "1", NULL);
    /* exemplar labels over 128 runes: refused, the sample kept */
    static const uint8_t long_lab[] = {5, 10};
    struct v2_ts ex_long = {job_x, 4, 1, t0 + 180000, 0, long_lab, 2, 1, t0 + 180000};
    v2_post(f, &ex_long, 1, "", 400, "1", "0", "over 128 runes");
    /* label rules: repeated name, empty value, no labels at all */
    struct v2_ts dup = {dup_name, 4, 1, t0, 0, NULL, 0, 0, 0};
    v2_post(f, &dup, 1, "", 400, "0", "0", "invalid labels");
    struct v2_ts ev = {empty_value, 4, 1, t0, 0, NULL, 0, 0, 0};
    v2_post(f, &ev, 1, "", 400, "0", "0", "invalid labels");
    struct v2_ts nolab = {NULL, 0, 1, t0, 0, NULL, 0, 0, 0};
    v2_post(f, &nolab, 1, "", 400, "0", "0", "invalid labels");
    struct v2_ts nn = {no_name, 2, 1, t0, 0, NULL, 0, 0, 0};
    v2_post(f, &nn, 1, "", 400, "0", "0", "invalid labels");
    /* symbols[0] must be "", refs must index the symbols, pairs must pair up */
    v2_post(f, &ok, 1, "x", 400, "0", "0", "symbols[0] must be the empty string");
    struct v2_ts br = {bad_ref, 4, 1, t0, 0, NULL, 0, 0, 0};
    v2_post(f, &br, 1, "", 400, "0", "0", "out of range");
    struct v2_ts ob = {odd, 3, 1, t0, 0, NULL, 0, 0, 0};
    v2_post(f, &ob, 1, "", 400, "0", "0", "odd length");
    struct v2_ts exr = {job_x, 4, 1, t0 + 240000, 0, bad_ref, 4, 1, t0 + 240000};
    v2_post(f, &exr, 1, "", 400, "0", "0", "out of range");
    /* the same request body under the 1.0 content type is read as 1.0
     * (fields 4 and 5 unknown there: nothing written, 204, no headers) */
    struct gw_buf z;
    struct resp r;
    char v[64];
    v2_build(&ok, 1, "", &z);
    http_do(f->port, "POST", "/api/v1/write", RW_HEADERS, z.data, z.len, &r);
    assert_int_equal(r.status, 204);
    assert_null(header_value(&r, "X-Prometheus-Remote-Write-Samples-Written", v, sizeof v));
    resp_free(&r);
    gw_buf_free(&z);
}

/* Exemplars through remote write 1.0 (Prometheus 2.42's receiver: never
 * an error) into the store and out of /api/v1/query_exemplars. */
static void test_http_exemplars(void **state)
{
    struct fixture *f = *state;
    int64_t t = f->base + 16 * 60000 + 123;
    struct gw_label sl[2], el[2], empty_l[1];
    struct gw_sample smp = {t, 1.0};
    struct gw_rw_exemplar ex[3] = {{el, 2, t, 0.25}, {el, 1, t - 5000, 9}, {empty_l, 1, t + 1000, 3}};
    struct gw_rw_series s[2];
    struct gw_rw_request req;
    struct gw_buf pb, z;
    struct resp r;
    lbl(&sl[0], "__name__", "ex_metric");
    lbl(&sl[1], "job", "e");
    lbl(&el[0], "trace_id", "t1");
    lbl(&el[1], "span", "s1");
    lbl(&empty_l[0], "dropped", "");
    memset(s, 0, sizeof s);
    memset(&req, 0, sizeof req);
    /* Prometheus sends a sample and its exemplar as two TimeSeries */
    s[0] = (struct gw_rw_series){sl, 2, &smp, 1, 0, 0, NULL};
    s[1] = (struct gw_rw_series){sl, 2, NULL, 0, 0, 3, ex};
    req.version = 1;
    req.series = s;
    req.n_series = 2;
    req.n_samples = 1;
    req.n_exemplars = 3;
    gw_buf_init(&pb, 0);
    gw_buf_init(&z, 0);
    assert_int_equal(gw_rw_encode_v1(&req, &pb), GW_OK);
    assert_int_equal(gw_snappy_encode(pb.data, pb.len, &z), GW_OK);
    post_write(f, &z, &r);
    /* the second exemplar is out of order: dropped and counted, still 204 */
    if (r.status != 204)
        fail_msg("status %d: %s", r.status, r.body);
    resp_free(&r);
    char target[512];
    snprintf(target, sizeof target, "/api/v1/query_exemplars?query=rate(ex_metric%%5B5m%%5D)&start=%.3f&end=%.3f",
             (double)(t - 60000) / 1000.0, (double)(t + 60000) / 1000.0);
    get(f, target, &r);
    assert_int_equal(r.status, 200);
    char want[512];
    snprintf(want, sizeof want,
             "{\"status\":\"success\",\"data\":[{\"seriesLabels\":{\"__name__\":\"ex_metric\",\"job\":\"e\"},"
             "\"exemplars\":[{\"labels\":{\"span\":\"s1\",\"trace_id\":\"t1\"},\"value\":\"0.25\",\"timestamp\":%.3f},"
             "{\"labels\":{},\"value\":\"3\",\"timestamp\":%.3f}]}]}",
             (double)t / 1000.0, (double)(t + 1000) / 1000.0);
    assert_string_equal(r.body, want);
    resp_free(&r);
    /* outside [start, end], a selector that matches nothing, no selector */
    get(f, "/api/v1/query_exemplars?query=ex_metric&start=1&end=2", &r);
    assert_string_equal(r.body, "{\"status\":\"success\",\"data\":[]}");
    resp_free(&r);
    get(f, "/api/v1/query_exemplars?query=nothing_here", &r);
    assert_string_equal(r.body, "{\"status\":\"success\",\"data\":[]}");
    resp_free(&r);
    get(f, "/api/v1/query_exemplars?query=1%2B1", &r);
    assert_string_equal(r.body, "{\"status\":\"success\",\"data\":null}");
    resp_free(&r);
    get(f, "/api/v1/query_exemplars?query=ex_metric%7B&start=1", &r);
    assert_int_equal(r.status, 400);
    resp_free(&r);
    get(f, "/api/v1/query_exemplars?query=ex_metric&start=5&end=1", &r);
    assert_int_equal(r.status, 400);
    resp_free(&r);
    get(f, "/metrics", &r);
    assert_non_null(strstr(r.body, "gpuwatch_remote_write_exemplars_total{outcome=\"stored\"} 2\n"));
    assert_non_null(strstr(r.body, "gpuwatch_remote_write_exemplars_total{outcome=\"out_of_order\"} 1\n"));
    assert_non_null(strstr(r.body, "gpuwatch_exemplars_in_storage 2\n"));
    resp_free(&r);
    gw_buf_free(&pb);
    gw_buf_free(&z);
}

/* ---- limits (src/http/limits.c) ---- */

/* Restarts the fixture's server on its database with the given limits. */
static void restart_with(struct fixture *f, const struct gw_http_limits *l, unsigned threads)
{
    struct gw_http_opts hopts;
    struct gw_error err;
    gw_http_stop(f->http);
    gw_http_opts_default(&hopts);
    hopts.listen = "127.0.0.1:0";
    hopts.threads = threads;
    hopts.max_body_bytes = BODY_CAP;
    hopts.conn_timeout_s = 5;
    hopts.limits = *l;
    hopts.exemplars = f->ex;
    gw_error_clear(&err);
    assert_int_equal(gw_http_start(&f->http, f->db, &hopts, &err), GW_OK);
    f->port = gw_http_port(f->http);
}

static void default_limits(struct gw_http_limits *l)
{
    struct gw_http_opts o;
    gw_http_opts_default(&o);
    *l = o.limits;
}

/* Reads a response for at most ms; its status (0 when none came). */
static int status_within(int fd, int ms, char *buf, size_t cap)
{
    size_t len = 0;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    uint64_t end = now_ms_mono() + (uint64_t)ms;
    while (len + 1 < cap && now_ms_mono() < end) {
        if (poll(&p, 1, (int)(end - now_ms_mono())) <= 0)
            break;
        ssize_t n = recv(fd, buf + len, cap - len - 1, 0);
        if (n <= 0)
            break;
        len += (size_t)n;
        buf[len] = '\0';
        if (strstr(buf, "\r\n\r\n") != NULL && strncmp(buf, "HTTP/1.1 100", 12) != 0)
            break;
    }
    buf[len] = '\0';
    return len > 12 && strncmp(buf, "HTTP/1.", 7) == 0 ? (int)strtol(buf + 9, NULL, 10) : 0;
}

/* A Content-Length over the body limit is answered 413 before any of the
 * body is sent, with and without Expect: 100-continue. */
static void test_http_declared_too_large_at_once(void **state)
{
    struct fixture *f = *state;
    static const char *const expect[] = {"", "Expect: 100-continue\r\n"};
    for (int i = 0; i < 2; i++) {
        char hdr[512], buf[2048];
        int fd = connect_port(f->port);
        uint64_t t0 = now_ms_mono();
        int n = snprintf(hdr, sizeof hdr, "POST /api/v1/write HTTP/1.1\r\nHost: x\r\n" RW_HEADERS
                         "%sContent-Length: %u\r\n\r\n", expect[i], BODY_CAP * 64);
        send_all(fd, hdr, (size_t)n);
        assert_int_equal(status_within(fd, 1000, buf, sizeof buf), 413);
        assert_true(now_ms_mono() - t0 < 1000);
        assert_non_null(strstr(buf, "limit 262144"));
        close(fd);
    }
}

/* snappy(v1) of one sample per series at t; each set is "name=value,...". */
static void build_sets(const char *const *sets, size_t n, int64_t t, struct gw_buf *out)
{
    struct gw_rw_series s[8];
    struct gw_label l[8][40];
    struct gw_sample smp = {.t = t, .v = 1};
    struct gw_rw_request req = {.version = 1, .series = s, .n_series = n, .n_samples = n};
    char copy[8][4096];
    struct gw_buf pb;
    assert_true(n <= 8);
    memset(s, 0, sizeof s);
    for (size_t i = 0; i < n; i++) {
        char *save = NULL, *kv;
        snprintf(copy[i], sizeof copy[i], "%s", sets[i]);
        for (kv = strtok_r(copy[i], ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
            char *eq = strchr(kv, '=');
            assert_non_null(eq);
            *eq = '\0';
            assert_true(s[i].n_labels < 40);
            lbl(&l[i][s[i].n_labels++], kv, eq + 1);
        }
        s[i].labels = l[i];
        s[i].samples = &smp;
        s[i].n_samples = 1;
    }
    gw_buf_init(&pb, 0);
    assert_int_equal(gw_rw_encode_v1(&req, &pb), GW_OK);
    gw_buf_init(out, 0);
    assert_int_equal(gw_snappy_encode(pb.data, pb.len, out), GW_OK);
    gw_buf_free(&pb);
}

static void count_series(struct fixture *f, const char *name, size_t want)
{
    char m[64], t[256];
    struct resp r;
    size_t n = 0;
    qenc(name, m, sizeof m);
    snprintf(t, sizeof t, "/api/v1/series?match[]=%s", m);
    get(f, t, &r);
    assert_int_equal(r.status, 200);
    for (const char *p = r.body; (p = strstr(p, "\"__name__\"")) != NULL; p++)
        n++;
    assert_int_equal(n, want);
    resp_free(&r);
}

/* A series over a label limit is refused and named in the 400, the valid
 * series of the request stored; too many series is a 413. */
static void test_http_write_label_limits(void **state)
{
    struct fixture *f = *state;
    struct gw_http_limits l;
    struct gw_buf w;
    struct resp r;
    char long_name[64], long_value[64], big[512];
    int64_t t = gw_now_ms() - 1000;
    default_limits(&l);
    l.max_labels = 4;
    l.max_label_name_len = 20;
    l.max_label_value_len = 30;
    l.max_series_per_request = 3;
    restart_with(f, &l, 2);
    memset(long_name, 'n', 40);
    long_name[40] = '\0';
    memset(long_value, 'v', 40);
    long_value[40] = '\0';
    {
        const char *const sets[] = {"__name__=lim_ok,job=a", "__name__=lim_many,a=1,b=2,c=3,d=4"};
        build_sets(sets, 2, t, &w);
        post_write(f, &w, &r);
        assert_int_equal(r.status, 400);
        assert_non_null(strstr(r.body, "series \"lim_many\" has 5 labels, limit 4 (--limits.series.max-labels)"));
        resp_free(&r);
        gw_buf_free(&w);
    }
    snprintf(big, sizeof big, "__name__=lim_name,%s=x", long_name);
    {
        const char *const sets[] = {big};
        build_sets(sets, 1, t, &w);
        post_write(f, &w, &r);
        assert_int_equal(r.status, 400);
        assert_non_null(strstr(r.body, "is 40 bytes, limit 20 (--limits.label.max-name-length)"));
        resp_free(&r);
        gw_buf_free(&w);
    }
    snprintf(big, sizeof big, "__name__=lim_value,job=%s", long_value);
    {
        const char *const sets[] = {"__name__=lim_ok,job=b", big};
        build_sets(sets, 2, t, &w);
        post_write(f, &w, &r);
        assert_int_equal(r.status, 400);
        assert_non_null(strstr(r.body, "series \"lim_value\": label \"job\" value is 40 bytes, limit 30"));
        resp_free(&r);
        gw_buf_free(&w);
    }
    {
        const char *const sets[] = {"__name__=lim_n,i=1", "__name__=lim_n,i=2", "__name__=lim_n,i=3",
                                    "__name__=lim_n,i=4"};
        build_sets(sets, 4, t, &w);
        post_write(f, &w, &r);
        assert_int_equal(r.status, 413);
        assert_non_null(strstr(r.body, "request has 4 series, limit 3 (--limits.write.max-series-per-request)"));
        resp_free(&r);
        gw_buf_free(&w);
    }
    count_series(f, "lim_ok", 2);
    count_series(f, "lim_many", 0);
    count_series(f, "lim_name", 0);
    count_series(f, "lim_value", 0);
    count_series(f, "lim_n", 0);
}

struct bg_req {
    uint16_t port;
    const char *method, *target, *headers;
    const void *body;
    size_t len;
    struct resp r;
};

static void *bg_main(void *p)
{
    struct bg_req *b = p;
    http_do(b->port, b->method, b->target, b->headers, b->body, b->len, &b->r);
    return NULL;
}

/* Two requests at once for one slot: the first is served, the second
 * waits for the queue wait and gets 503 with Retry-After; with the load
 * gone the next one is served. */
static void two_at_once(struct fixture *f, const char *method, const char *target, const char *headers,
                        const void *body, size_t len, unsigned ok, const char *busy_msg)
{
    struct bg_req b[2];
    pthread_t th[2];
    char ra[16];
    int n_ok = 0, n_busy = 0;
    for (int i = 0; i < 2; i++) {
        b[i] = (struct bg_req){f->port, method, target, headers, body, len, {0}};
        assert_int_equal(pthread_create(&th[i], NULL, bg_main, &b[i]), 0);
        /* the first holds its slot (and its worker) when the second comes,
         * so another worker takes the second */
        usleep(250 * 1000);
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        if (b[i].r.status == (int)ok)
            n_ok++;
        if (b[i].r.status == 503) {
            assert_int_equal(i, 1);
            n_busy++;
            assert_non_null(header_value(&b[i].r, "Retry-After", ra, sizeof ra));
            assert_string_equal(ra, "1");
            assert_non_null(strstr(b[i].r.body, busy_msg));
        }
        resp_free(&b[i].r);
    }
    assert_int_equal(n_ok, 1);
    assert_int_equal(n_busy, 1);
    b[0] = (struct bg_req){f->port, method, target, headers, body, len, {0}};
    bg_main(&b[0]);
    assert_int_equal(b[0].r.status, (int)ok);
    resp_free(&b[0].r);
}

static void test_http_concurrency_limits(void **state)
{
    struct fixture *f = *state;
    struct gw_http_limits l;
    struct gw_buf w;
    char m[64], t[256];
    default_limits(&l);
    l.max_concurrent_writes = 1;
    l.max_concurrent_queries = 1;
    l.queue_wait_ms = 100;
    l.debug_handler_delay_ms = 500;
    restart_with(f, &l, 4);
    build_write(f->base, 0, N_SAMPLES, 0.0, &w);   /* resent: duplicates, 204 */
    two_at_once(f, "POST", "/api/v1/write", RW_HEADERS, w.data, w.len, 204,
                "too many concurrent remote writes (limit 1, --limits.http.max-concurrent-writes)");
    gw_buf_free(&w);
    qenc("test_metric", m, sizeof m);
    snprintf(t, sizeof t, "/api/v1/query?query=%s", m);
    two_at_once(f, "GET", t, NULL, NULL, 0, 200, "\"errorType\":\"unavailable\"");
    {
        struct resp r;
        get(f, "/metrics", &r);
        assert_int_equal(r.status, 200);
        assert_non_null(strstr(r.body, "\ngpuwatch_http_limit_refusals_total 2\n"));
        assert_non_null(strstr(r.body, "\ngpuwatch_http_inflight_body_bytes 0\n"));
        resp_free(&r);
    }
}

/* A query whose working memory passes --limits.query.max-memory-bytes gets
 * a 422 naming the memory limit; the same query fits without the cap. */
static void test_http_query_memory_limit(void **state)
{
    struct fixture *f = *state;
    struct gw_http_limits l;
    struct gw_rw_series s[200];
    struct gw_label lb[200][2];
    char inst[200][8];
    struct gw_sample smp = {.t = f->base, .v = 1};
    struct gw_rw_request req = {.version = 1, .series = s, .n_series = 200, .n_samples = 200};
    struct gw_buf pb, w;
    struct resp r;
    char t[256];
    memset(s, 0, sizeof s);
    for (int i = 0; i < 200; i++) {
        snprintf(inst[i], sizeof inst[i], "i%d", i);
        lbl(&lb[i][0], "__name__", "mem_metric");
        lbl(&lb[i][1], "instance", inst[i]);
        s[i] = (struct gw_rw_series){.labels = lb[i], .n_labels = 2, .samples = &smp, .n_samples = 1};
    }
    gw_buf_init(&pb, 0);
    assert_int_equal(gw_rw_encode_v1(&req, &pb), GW_OK);
    gw_buf_init(&w, 0);
    assert_int_equal(gw_snappy_encode(pb.data, pb.len, &w), GW_OK);
    post_write(f, &w, &r);
    assert_int_equal(r.status, 204);
    resp_free(&r);
    /* 200 series x 10,001 steps of step matrices: well over 4 MiB */
    snprintf(t, sizeof t, "/api/v1/query_range?query=mem_metric%%2B1&start=%lld&end=%lld&step=0.03",
             (long long)(f->base / 1000), (long long)(f->base / 1000 + 300));
    get(f, t, &r);
    assert_int_equal(r.status, 200);
    resp_free(&r);
    default_limits(&l);
    l.query_max_memory_bytes = (size_t)4 << 20;
    restart_with(f, &l, 2);
    get(f, t, &r);
    assert_int_equal(r.status, 422);
    assert_non_null(strstr(r.body, "\"errorType\":\"execution\""));
    assert_non_null(strstr(r.body, "query processing would use more than 4194304 bytes of memory"));
    resp_free(&r);
    gw_buf_free(&pb);
    gw_buf_free(&w);
}

/* Bodies held in memory past the budget: the next declared body that
 * does not fit gets 503 + Retry-After at once; when the held body goes,
 * writes work again. */
static void test_http_inflight_body_budget(void **state)
{
    struct fixture *f = *state;
    struct gw_http_limits l;
    struct gw_buf w;
    struct resp r;
    char hdr[512], buf[2048];
    int held, fd, n;
    default_limits(&l);
    l.max_inflight_body_bytes = 300 * 1024;
    restart_with(f, &l, 2);
    /* a stalled upload that declared much and sent little holds little */
    held = connect_port(f->port);
    n = snprintf(hdr, sizeof hdr, "POST /api/v1/write HTTP/1.1\r\nHost: x\r\n" RW_HEADERS
                 "Content-Length: %u\r\n\r\n", 250u * 1024u);
    send_all(held, hdr, (size_t)n);
    send_all(held, "0123456789", 10);
    usleep(100 * 1000);
    build_write(f->base, 0, N_SAMPLES, 0.0, &w);
    {
        char *body = calloc(1, 200u * 1024u);
        assert_non_null(body);
        http_do(f->port, "POST", "/api/v1/write", RW_HEADERS, body, 200u * 1024u, &r);
        assert_int_equal(r.status, 400);   /* read and decoded: not snappy */
        resp_free(&r);
        /* now it holds 200 KiB of its 250 */
        send_all(held, body, 200u * 1024u);
        free(body);
    }
    usleep(200 * 1000);
    fd = connect_port(f->port);
    n = snprintf(hdr, sizeof hdr, "POST /api/v1/write HTTP/1.1\r\nHost: x\r\n" RW_HEADERS
                 "Content-Length: %u\r\n\r\n", 200u * 1024u);
    send_all(fd, hdr, (size_t)n);
    assert_int_equal(status_within(fd, 1000, buf, sizeof buf), 503);
    assert_non_null(strstr(buf, "--limits.http.max-inflight-body-bytes"));
    assert_non_null(strstr(buf, "Retry-After: 1"));
    close(fd);
    /* small bodies still fit next to the held one */
    post_write(f, &w, &r);
    assert_int_equal(r.status, 204);
    resp_free(&r);
    close(held);
    usleep(200 * 1000);
    {
        char *body = calloc(1, 200u * 1024u);
        assert_non_null(body);
        http_do(f->port, "POST", "/api/v1/write", RW_HEADERS, body, 200u * 1024u, &r);
        assert_int_equal(r.status, 400);   /* read and decoded: not snappy */
        resp_free(&r);
        free(body);
    }
    gw_buf_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_http_write_method_not_allowed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_write_unsupported_media, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_write_bad_bodies, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_write_v2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_write_v2_spec_musts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_exemplars, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_write_too_large, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_write_refused_and_retry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_series_labels_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_query_range, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_query_promql, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_query_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_query_server_opts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_api_query_direct, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_format_query, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_misc_endpoints, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_remote_read, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_stalled_upload_does_not_block, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_declared_too_large_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_write_label_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_concurrency_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_inflight_body_budget, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http_query_memory_limit, setup, teardown),
        cmocka_unit_test(test_http_listen_addresses),
        cmocka_unit_test(test_http_checkpoints),
        cmocka_unit_test(test_http_events),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
