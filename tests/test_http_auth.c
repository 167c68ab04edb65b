/* tests/test_http_auth.c - authentication and TLS of the HTTP server
 * (src/http/auth.c, tls.c): the constant-time compare, the credential
 * files (parsing, errors naming file and line, reload keeping the old
 * credentials on a bad file), the class of every route, and a real server
 * on an ephemeral port driven by gw_httpc: 401 with WWW-Authenticate and
 * nothing stored without or with wrong credentials, admin routes needing
 * admin credentials, https with a throwaway CA (openssl), the certificate
 * swapped by gw_http_reload_security without a restart, client
 * certificates, and httpc's server_name, bearer and basic options. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "db_fixture.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gpuwatch/codec.h"
#include "gpuwatch/db.h"
#include "gpuwatch/http.h"
#include "gpuwatch/httpc.h"
#include "gpuwatch/rw.h"
#include "http/http_int.h"

static char tdir[256];

static void mk_tdir(void)
{
    assert_int_equal(gw_fx_mkdtemp(tdir, sizeof tdir, "gwauth"), 0);
}

static void rm_tdir(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tdir);
    assert_int_equal(system(cmd), 0);
}

/* Writes text to tdir/name; the path into out. */
static const char *put(const char *name, const char *text, char *out, size_t cap)
{
    FILE *f;
    snprintf(out, cap, "%s/%s", tdir, name);
    f = fopen(out, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return out;
}

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    return system(cmd);
}

/* ---- constant-time compare ---- */

static void test_auth_ct_equal(void **state)
{
    uint8_t a[32], b[32];
    (void)state;
    memset(a, 7, sizeof a);
    memcpy(b, a, sizeof b);
    assert_true(gw_ct_equal(a, b, 32));
    assert_true(gw_ct_equal(a, b, 0));
    b[0] ^= 1;
    assert_false(gw_ct_equal(a, b, 32));
    b[0] ^= 1;
    b[31] ^= 0x80;
    assert_false(gw_ct_equal(a, b, 32));
    assert_true(gw_ct_equal(a, b, 31));
}

/* ---- files ---- */

/* "Basic " + base64("user:pw") */
static void basic(const char *user, const char *pw, char *out, size_t cap)
{
    static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char raw[256];
    size_t n = (size_t)snprintf(raw, sizeof raw, "%s:%s", user, pw), o = 6;
    memcpy(out, "Basic ", 6);
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)(uint8_t)raw[i] << 16 | (i + 1 < n ? (uint32_t)(uint8_t)raw[i + 1] << 8 : 0) |
                     (i + 2 < n ? (uint8_t)raw[i + 2] : 0);
        assert_true(o + 5 < cap);
        out[o++] = al[v >> 18 & 63];
        out[o++] = al[v >> 12 & 63];
        out[o++] = i + 1 < n ? al[v >> 6 & 63] : '=';
        out[o++] = i + 2 < n ? al[v & 63] : '=';
    }
    out[o] = '\0';
}

static int check(struct gw_auth *a, enum gw_auth_class c, const char *hdr)
{
    char msg[256];
    return gw_auth_check(a, c, hdr, msg, sizeof msg);
}

static void test_auth_files(void **state)
{
    struct gw_http_security sec;
    struct gw_auth *a = NULL;
    struct gw_error err = {0};
    char tok[300], bas[300], hdr[300], msg[256], ch[2][96];
    (void)state;
    mk_tdir();
    memset(&sec, 0, sizeof sec);
    sec.write.bearer_token_file = put("w.tok", "# writers\n\ntok-one  \r\ntok-two\n", tok, sizeof tok);
    /* sha256("s3cret") */
    sec.read.basic_auth_file =
        put("r.basic", "alice:pa:ss word\nbob:sha256:"
                       "5a7b0bfb1ea53dbde29f5e9a1e6e6f3ba8bcb4ec3b2e1f4ddd1f1a1d4a9e5b11\n"
                       "carol:sha256:6F2B9A4F3C4B2F63A1B7D0E6E3F1A9F8C5D4E3B2A1908F7E6D5C4B3A29180706\n",
            bas, sizeof bas);
    assert_int_equal(gw_auth_new(&a, &sec, &err), GW_OK);
    assert_true(gw_auth_configured(a, GW_AUTH_WRITE));
    assert_true(gw_auth_configured(a, GW_AUTH_READ));
    assert_false(gw_auth_configured(a, GW_AUTH_ADMIN));
    assert_int_equal(check(a, GW_AUTH_WRITE, "Bearer tok-one"), 0);
    assert_int_equal(check(a, GW_AUTH_WRITE, "bearer tok-two"), 0);
    assert_int_equal(check(a, GW_AUTH_WRITE, "Bearer tok-on"), 401);
    assert_int_equal(check(a, GW_AUTH_WRITE, "Bearer tok-one "), 401);
    assert_int_equal(check(a, GW_AUTH_WRITE, NULL), 401);
    assert_int_equal(gw_auth_check(a, GW_AUTH_WRITE, "Digest x", msg, sizeof msg), 401);
    assert_non_null(strstr(msg, "unsupported Authorization scheme"));
    basic("alice", "pa:ss word", hdr, sizeof hdr);
    assert_int_equal(gw_auth_check(a, GW_AUTH_WRITE, hdr, msg, sizeof msg), 401);   /* write takes tokens only */
    assert_non_null(strstr(msg, "not basic credentials"));
    assert_int_equal(check(a, GW_AUTH_READ, hdr), 0);          /* ':' and ' ' inside a password */
    basic("alice", "pa:ss wor", hdr, sizeof hdr);
    assert_int_equal(check(a, GW_AUTH_READ, hdr), 401);
    basic("bob", "pa:ss word", hdr, sizeof hdr);               /* another user's password */
    assert_int_equal(check(a, GW_AUTH_READ, hdr), 401);
    assert_int_equal(gw_auth_check(a, GW_AUTH_READ, "Basic !!!", msg, sizeof msg), 401);
    assert_non_null(strstr(msg, "malformed"));
    assert_int_equal(check(a, GW_AUTH_ADMIN, NULL), 0);        /* not configured: open */
    assert_int_equal(check(a, GW_AUTH_OPEN, NULL), 0);
    assert_int_equal(gw_auth_challenges(a, GW_AUTH_WRITE, ch), 1);
    assert_string_equal(ch[0], "Bearer realm=\"gpuwatch write\"");
    assert_int_equal(gw_auth_challenges(a, GW_AUTH_READ, ch), 1);
    assert_non_null(strstr(ch[0], "Basic realm=\"gpuwatch read\""));
    gw_auth_free(a);

    /* a hashed password: the hash of "s3cret" computed here */
    char line[200], hex[65];
    FILE *p = popen("printf s3cret | sha256sum", "r");
    assert_non_null(p);
    assert_non_null(fgets(hex, sizeof hex, p));
    pclose(p);
    snprintf(line, sizeof line, "dave:sha256:%s\n", hex);
    memset(&sec, 0, sizeof sec);
    sec.admin.basic_auth_file = put("a.basic", line, bas, sizeof bas);
    sec.admin.bearer_token_file = put("a.tok", "adm\n", tok, sizeof tok);
    assert_int_equal(gw_auth_new(&a, &sec, &err), GW_OK);
    basic("dave", "s3cret", hdr, sizeof hdr);
    assert_int_equal(check(a, GW_AUTH_ADMIN, hdr), 0);
    basic("dave", "sha256:", hdr, sizeof hdr);
    assert_int_equal(check(a, GW_AUTH_ADMIN, hdr), 401);
    assert_int_equal(check(a, GW_AUTH_ADMIN, "Bearer adm"), 0);   /* both kinds accepted */
    assert_int_equal(gw_auth_challenges(a, GW_AUTH_ADMIN, ch), 2);
    gw_auth_free(a);

    /* errors name the file and line */
    static const struct { const char *text; int rc; const char *msg; } bad[] = {
        {"alice\n", GW_EINVAL, ":1: expected user:password"},
        {"# only a comment\n\n", GW_EINVAL, "no user:password line"},
        {"a:x\nb:sha256:12\n", GW_EINVAL, ":2: sha256: must be followed by 64 hex"},
        {"a:x\na:y\n", GW_EINVAL, ":2: user a listed twice"},
        {"a:\n", GW_EINVAL, ":1: empty password"},
        {":pw\n", GW_EINVAL, ":1: expected"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&sec, 0, sizeof sec);
        sec.read.basic_auth_file = put("bad.basic", bad[i].text, bas, sizeof bas);
        gw_error_clear(&err);
        assert_int_equal(gw_auth_new(&a, &sec, &err), bad[i].rc);
        assert_non_null(strstr(err.msg, bad[i].msg));
        assert_non_null(strstr(err.msg, "bad.basic"));
    }
    memset(&sec, 0, sizeof sec);
    sec.write.bearer_token_file = put("bad.tok", "two words\n", tok, sizeof tok);
    assert_int_equal(gw_auth_new(&a, &sec, &err), GW_EINVAL);
    assert_non_null(strstr(err.msg, ":1: a token cannot contain blanks"));
    sec.write.bearer_token_file = "/nonexistent/gw.tok";
    assert_int_equal(gw_auth_new(&a, &sec, &err), GW_EIO);
    assert_non_null(strstr(err.msg, "/nonexistent/gw.tok"));
    rm_tdir();
}

static void test_auth_reload(void **state)
{
    struct gw_http_security sec;
    struct gw_auth *a = NULL;
    struct gw_error err = {0};
    char tok[300];
    (void)state;
    mk_tdir();
    memset(&sec, 0, sizeof sec);
    sec.read.bearer_token_file = put("r.tok", "old\n", tok, sizeof tok);
    assert_int_equal(gw_auth_new(&a, &sec, &err), GW_OK);
    assert_int_equal(check(a, GW_AUTH_READ, "Bearer old"), 0);
    put("r.tok", "new\n", tok, sizeof tok);
    assert_int_equal(check(a, GW_AUTH_READ, "Bearer new"), 401);   /* not before the reload */
    assert_int_equal(gw_auth_reload(a, &err), GW_OK);
    assert_int_equal(check(a, GW_AUTH_READ, "Bearer new"), 0);
    assert_int_equal(check(a, GW_AUTH_READ, "Bearer old"), 401);
    put("r.tok", "# emptied by mistake\n", tok, sizeof tok);
    assert_int_equal(gw_auth_reload(a, &err), GW_EINVAL);           /* refused: the running tokens stay */
    assert_non_null(strstr(err.msg, "no token"));
    assert_int_equal(check(a, GW_AUTH_READ, "Bearer new"), 0);
    unlink(tok);
    assert_int_equal(gw_auth_reload(a, &err), GW_EIO);
    assert_int_equal(check(a, GW_AUTH_READ, "Bearer new"), 0);
    gw_auth_free(a);
    rm_tdir();
}

/* ---- classes ---- */

static enum gw_auth_class cls(const char *path, int method, int metrics_open)
{
    return gw_route_auth_class(gw_route_find(path), method, metrics_open);
}

static void test_auth_classes(void **state)
{
    (void)state;
    assert_int_equal(cls("/api/v1/write", GW_M_POST, 0), GW_AUTH_WRITE);
    assert_int_equal(cls("/api/v1/events", GW_M_POST, 0), GW_AUTH_WRITE);
    assert_int_equal(cls("/api/v1/events", GW_M_GET, 0), GW_AUTH_READ);
    static const char *const reads[] = {"/api/v1/read", "/api/v1/query", "/api/v1/query_range", "/api/v1/series",
                                        "/api/v1/labels", "/api/v1/label/job/values", "/api/v1/metadata",
                                        "/api/v1/status/flags", "/api/v1/status/tsdb", "/api/v1/alerts",
                                        "/api/v1/rules", "/api/v1/checkpoints", "/api/v1/sessions", "/",
                                        "/ui/app.js", "/api/v1/nonexistent", "/nope", "/metrics"};
    for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++)
        assert_int_equal(cls(reads[i], GW_M_GET, 0), GW_AUTH_READ);
    static const char *const admin[] = {"/api/v1/admin/retention", "/api/v1/admin/flush", "/api/v1/admin/compact",
                                        "/api/v1/admin/backup", "/api/v1/admin/downsample", "/-/reload"};
    for (size_t i = 0; i < sizeof admin / sizeof admin[0]; i++)
        assert_int_equal(cls(admin[i], GW_M_POST, 0), GW_AUTH_ADMIN);
    assert_int_equal(cls("/-/healthy", GW_M_GET, 0), GW_AUTH_OPEN);
    assert_int_equal(cls("/-/ready", GW_M_GET, 0), GW_AUTH_OPEN);
    assert_int_equal(cls("/metrics", GW_M_GET, 1), GW_AUTH_OPEN);
    assert_string_equal(gw_auth_class_name(GW_AUTH_ADMIN), "admin");
}

/* ---- a real server ---- */

struct srv {
    struct gw_db *db;
    struct gw_http *h;
    char url[64];
};

static void srv_start(struct srv *s, const struct gw_http_security *sec, int https)
{
    struct gw_db_opts d;
    struct gw_http_opts o;
    struct gw_error err = {0};
    char dir[300];
    snprintf(dir, sizeof dir, "%s/db", tdir);
    gw_db_opts_default(&d);
    d.dir = dir;
    d.fsync = GW_FSYNC_OFF;
    d.background = 0;
    assert_int_equal(gw_db_open(&s->db, &d, &err), GW_OK);
    gw_http_opts_default(&o);
    o.listen = "127.0.0.1:0";
    o.threads = 2;
    o.sec = *sec;
    if (gw_http_start(&s->h, s->db, &o, &err) != GW_OK)
        fail_msg("gw_http_start: %s", err.msg);
    snprintf(s->url, sizeof s->url, "%s://127.0.0.1:%u", https ? "https" : "http", gw_http_port(s->h));
}

static void srv_stop(struct srv *s)
{
    gw_http_stop(s->h);
    gw_db_close(s->db);
}

/* One request with client options o; the status, or the gw error code (< 0). */
static int req(const struct srv *s, const struct gw_httpc_opts *o, const char *method, const char *path,
               const void *body, size_t len, struct gw_httpc_response *r, struct gw_error *err)
{
    struct gw_httpc *c = NULL;
    struct gw_httpc_header h[] = {{"Content-Type", "application/x-protobuf"}, {"Content-Encoding", "snappy"},
                                  {"X-Prometheus-Remote-Write-Version", "0.1.0"}};
    int rc = gw_httpc_open(&c, s->url, o, err);
    if (rc == GW_OK)
        rc = gw_httpc_request(c, method, path, body ? h : NULL, body ? 3 : 0, body, len, r, err);
    gw_httpc_close(c);
    return rc == GW_OK ? r->status : rc;
}

/* snappy(v1 WriteRequest) of one sample of authtest. */
static void one_sample(struct gw_buf *out)
{
    struct gw_label l = {"__name__", 8, "authtest", 8};
    struct gw_sample smp = {.t = gw_now_ms(), .v = 1};
    struct gw_rw_series ser;
    struct gw_rw_request rq;
    struct gw_buf pb;
    memset(&ser, 0, sizeof ser);
    ser.labels = &l;
    ser.n_labels = 1;
    ser.samples = &smp;
    ser.n_samples = 1;
    memset(&rq, 0, sizeof rq);
    rq.version = 1;
    rq.series = &ser;
    rq.n_series = 1;
    rq.n_samples = 1;
    gw_buf_init(&pb, 0);
    assert_int_equal(gw_rw_encode_v1(&rq, &pb), GW_OK);
    gw_buf_init(out, 0);
    assert_int_equal(gw_snappy_encode(pb.data, pb.len, out), GW_OK);
    gw_buf_free(&pb);
}

static void test_auth_server(void **state)
{
    struct gw_http_security sec;
    struct gw_httpc_opts o;
    struct gw_httpc_response r;
    struct gw_error err = {0};
    struct srv s;
    struct gw_buf w;
    char tok[300], bas[300], adm[300], pwf[300];
    size_t hl = 0;
    (void)state;
    mk_tdir();
    memset(&sec, 0, sizeof sec);
    sec.write.bearer_token_file = put("w.tok", "wtok\n", tok, sizeof tok);
    sec.read.basic_auth_file = put("r.basic", "reader:rpw\n", bas, sizeof bas);
    sec.admin.bearer_token_file = put("a.tok", "atok\n", adm, sizeof adm);
    put("rpw", "rpw\n", pwf, sizeof pwf);
    srv_start(&s, &sec, 0);
    gw_httpc_response_init(&r);
    one_sample(&w);

    gw_httpc_opts_default(&o);
    assert_int_equal(req(&s, &o, "POST", "/api/v1/write", w.data, w.len, &r, &err), 401);
    const char *wa = gw_httpc_response_header(&r, "WWW-Authenticate", &hl);
    assert_non_null(wa);
    assert_memory_equal(wa, "Bearer realm=\"gpuwatch write\"", hl);
    assert_non_null(strstr((const char *)r.body.data, "write endpoints need a bearer token"));
    o.auth.bearer_token = "wrong";
    assert_int_equal(req(&s, &o, "POST", "/api/v1/write", w.data, w.len, &r, &err), 401);
    o.auth.bearer_token = "atok";   /* admin's token does not write */
    assert_int_equal(req(&s, &o, "POST", "/api/v1/write", w.data, w.len, &r, &err), 401);
    /* nothing stored: the reader sees no series */
    gw_httpc_opts_default(&o);
    o.auth.username = "reader";
    o.auth.password_file = pwf;
    assert_int_equal(req(&s, &o, "GET", "/api/v1/series?match[]=authtest", NULL, 0, &r, &err), 200);
    assert_non_null(strstr((const char *)r.body.data, "\"data\":[]"));
    gw_httpc_opts_default(&o);
    o.auth.bearer_token_file = tok;
    assert_int_equal(req(&s, &o, "POST", "/api/v1/write", w.data, w.len, &r, &err), 204);
    gw_httpc_opts_default(&o);
    o.auth.username = "reader";
    o.auth.password = "rpw";
    assert_int_equal(req(&s, &o, "GET", "/api/v1/series?match[]=authtest", NULL, 0, &r, &err), 200);
    assert_non_null(strstr((const char *)r.body.data, "authtest"));
    o.auth.password = "rpx";
    assert_int_equal(req(&s, &o, "GET", "/api/v1/query?query=authtest", NULL, 0, &r, &err), 401);
    assert_int_equal(req(&s, &o, "GET", "/-/healthy", NULL, 0, &r, &err), 200);
    assert_int_equal(req(&s, &o, "GET", "/metrics", NULL, 0, &r, &err), 401);
    /* admin: read credentials are not enough, even from loopback */
    o.auth.password = "rpw";
    assert_int_equal(req(&s, &o, "POST", "/api/v1/admin/flush", "", 0, &r, &err), 401);
    assert_int_equal(req(&s, &o, "POST", "/-/reload", "", 0, &r, &err), 401);
    gw_httpc_opts_default(&o);
    o.auth.bearer_token = "atok";
    assert_int_equal(req(&s, &o, "POST", "/api/v1/admin/flush", "", 0, &r, &err), 200);
    /* reload through the endpoint: the new write token works, the old one not */
    put("w.tok", "wtok2\n", tok, sizeof tok);
    assert_int_equal(req(&s, &o, "POST", "/-/reload", "", 0, &r, &err), 200);
    gw_httpc_opts_default(&o);
    o.auth.bearer_token = "wtok";
    assert_int_equal(req(&s, &o, "POST", "/api/v1/write", w.data, w.len, &r, &err), 401);
    o.auth.bearer_token = "wtok2";
    assert_int_equal(req(&s, &o, "POST", "/api/v1/write", w.data, w.len, &r, &err), 204);
    gw_buf_free(&w);
    gw_httpc_response_free(&r);
    srv_stop(&s);
    rm_tdir();
}

/* ---- https ---- */

/* CA ca.pem, server certificate NAME.pem/NAME.key for DNS:gw.test only,
 * client certificate cl.pem/cl.key; 0, or -1 without openssl. */
static int make_certs(const char *name)
{
    if (run("openssl version >/dev/null 2>&1") != 0)
        return -1;
    if (access(tdir, F_OK) == 0 && run("test -f %s/ca.pem", tdir) != 0)
        assert_int_equal(run("cd %s && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.pem -days 1 "
                             "-subj /CN=gwtestca >/dev/null 2>&1 && printf 'subjectAltName=DNS:gw.test\\n' > ext && "
                             "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout cl.key -out cl.csr -subj /CN=client "
                             ">/dev/null 2>&1 && openssl x509 -req -in cl.csr -CA ca.pem -CAkey ca.key "
                             "-CAcreateserial -out cl.pem -days 1 >/dev/null 2>&1", tdir), 0);
    assert_int_equal(run("cd %s && openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout %s.key -out %s.csr -subj /CN=gw.test "
                         ">/dev/null 2>&1 && openssl x509 -req -in %s.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
                         "-out %s.pem -days 1 -extfile ext >/dev/null 2>&1", tdir, name, name, name, name), 0);
    return 0;
}

/* The serial of the certificate the server presents now. */
static void served_serial(const struct srv *s, char *out, size_t cap)
{
    char cmd[600];
    FILE *p;
    snprintf(cmd, sizeof cmd, "openssl s_client -connect %s </dev/null 2>/dev/null | openssl x509 -noout -serial",
             s->url + 8);
    p = popen(cmd, "r");
    assert_non_null(p);
    if (fgets(out, (int)cap, p) == NULL)
        out[0] = '\0';
    pclose(p);
}

static void test_auth_tls(void **state)
{
    struct gw_http_security sec;
    struct gw_httpc_opts o;
    struct gw_httpc_response r;
    struct gw_error err = {0};
    struct srv s;
    char cert[300], key[300], ca[300], s1[128], s2[128];
    (void)state;
    mk_tdir();
    if (make_certs("srv") != 0) {
        rm_tdir();
        skip();
    }
    snprintf(cert, sizeof cert, "%s/srv.pem", tdir);
    snprintf(key, sizeof key, "%s/srv.key", tdir);
    snprintf(ca, sizeof ca, "%s/ca.pem", tdir);
    memset(&sec, 0, sizeof sec);
    sec.tls_cert_file = cert;
    sec.tls_key_file = key;
    srv_start(&s, &sec, 1);
    assert_true(gw_http_tls(s.h));
    gw_httpc_response_init(&r);
    gw_httpc_opts_default(&o);
    o.tls.ca_file = ca;
    /* the certificate names gw.test, not 127.0.0.1: refused, then accepted with server_name */
    assert_int_equal(req(&s, &o, "GET", "/-/healthy", NULL, 0, &r, &err), GW_EIO);
    o.tls.server_name = "gw.test";
    assert_int_equal(req(&s, &o, "GET", "/-/healthy", NULL, 0, &r, &err), 200);
    o.tls.server_name = "other.test";
    assert_int_equal(req(&s, &o, "GET", "/-/healthy", NULL, 0, &r, &err), GW_EIO);
    gw_httpc_opts_default(&o);
    o.tls.insecure_skip_verify = 1;
    assert_int_equal(req(&s, &o, "GET", "/api/v1/labels", NULL, 0, &r, &err), 200);

    /* a new certificate: served after the reload, same server, no restart */
    served_serial(&s, s1, sizeof s1);
    assert_true(s1[0] != '\0');
    make_certs("srv2");
    assert_int_equal(run("cp %s/srv2.pem %s", tdir, cert), 0);   /* the key does not match yet: refused */
    assert_int_equal(gw_http_reload_security(s.h, &err), GW_EINVAL);
    assert_non_null(strstr(err.msg, "does not belong to the certificate"));
    served_serial(&s, s2, sizeof s2);
    assert_string_equal(s1, s2);
    assert_int_equal(run("cp %s/srv2.key %s", tdir, key), 0);
    assert_int_equal(gw_http_reload_security(s.h, &err), GW_OK);
    served_serial(&s, s2, sizeof s2);
    assert_true(s2[0] != '\0');
    assert_string_not_equal(s1, s2);
    assert_int_equal(req(&s, &o, "GET", "/-/healthy", NULL, 0, &r, &err), 200);
    srv_stop(&s);

    /* client certificates */
    sec.tls_client_ca_file = ca;
    srv_start(&s, &sec, 1);
    assert_int_equal(req(&s, &o, "GET", "/-/healthy", NULL, 0, &r, &err), 200);   /* probes stay open */
    assert_int_equal(req(&s, &o, "GET", "/api/v1/labels", NULL, 0, &r, &err), 403);
    assert_non_null(strstr((const char *)r.body.data, "client certificate"));
    char clc[300], clk[300];
    snprintf(clc, sizeof clc, "%s/cl.pem", tdir);
    snprintf(clk, sizeof clk, "%s/cl.key", tdir);
    o.tls.cert_file = clc;
    o.tls.key_file = clk;
    assert_int_equal(req(&s, &o, "GET", "/api/v1/labels", NULL, 0, &r, &err), 200);
    o.tls.key_file = NULL;   /* half a client certificate: refused by httpc */
    assert_int_equal(req(&s, &o, "GET", "/api/v1/labels", NULL, 0, &r, &err), GW_EINVAL);
    srv_stop(&s);

    /* a key file that cannot be read is named */
    memset(&sec, 0, sizeof sec);
    sec.tls_cert_file = cert;
    sec.tls_key_file = "/nonexistent/k.pem";
    struct gw_http_opts ho;
    struct gw_http *h = NULL;
    gw_http_opts_default(&ho);
    ho.listen = "127.0.0.1:0";
    ho.sec = sec;
    assert_int_equal(gw_http_start(&h, NULL, &ho, &err), GW_EIO);
    assert_non_null(strstr(err.msg, "/nonexistent/k.pem"));
    gw_httpc_response_free(&r);
    rm_tdir();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_auth_ct_equal),
        cmocka_unit_test(test_auth_files),
        cmocka_unit_test(test_auth_reload),
        cmocka_unit_test(test_auth_classes),
        cmocka_unit_test(test_auth_server),
        cmocka_unit_test(test_auth_tls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
