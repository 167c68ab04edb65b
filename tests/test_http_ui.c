/* tests/test_http_ui.c - the built-in status page (src/http/ui.c): a real
 * server on an ephemeral loopback port (no data store) answers / and
 * /ui/<file> with the bytes of src/http/ui/<file>, the right Content-Type,
 * Cache-Control no-cache, a Content-Security-Policy that allows only its own
 * origin and nosniff; everything index.html loads is served; unknown files
 * are 404, other methods 405, HEAD has no body; /metrics counts the route.
 * The page in a browser: tests/integration/it_ui.sh. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include "gpuwatch/http.h"
#include "http/ui_int.h"

struct resp {
    int status;
    char head[4096];   /* status line + headers, NUL-terminated */
    char *body;        /* NUL-terminated */
    size_t body_len;
};

static uint16_t port;
static struct gw_http *server;

static int setup(void **state)
{
    struct gw_http_opts o;
    struct gw_error err;
    (void)state;
    gw_http_opts_default(&o);
    o.listen = "127.0.0.1:0";
    o.threads = 2;
    gw_error_clear(&err);
    if (gw_http_start(&server, NULL, &o, &err) != GW_OK) {
        print_error("gw_http_start: %s\n", err.msg);
        return -1;
    }
    port = gw_http_port(server);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    gw_http_stop(server);
    return 0;
}

static void request(const char *method, const char *path, struct resp *r)
{
    struct sockaddr_in a;
    struct timeval tv = {10, 0};
    char req[512];
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap), *sep;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    assert_non_null(buf);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    snprintf(req, sizeof req, "%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", method, path);
    assert_int_equal(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
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
    close(fd);
    buf[len] = '\0';
    sep = strstr(buf, "\r\n\r\n");
    assert_non_null(sep);
    assert_true((size_t)(sep - buf) < sizeof r->head);
    memcpy(r->head, buf, (size_t)(sep - buf));
    r->head[sep - buf] = '\0';
    r->status = (int)strtol(buf + 9, NULL, 10);
    r->body_len = len - (size_t)(sep - buf) - 4;
    r->body = malloc(r->body_len + 1);
    assert_non_null(r->body);
    memcpy(r->body, sep + 4, r->body_len + 1);
    free(buf);
}

/* The value of header name in r (case-insensitive name), or "" */
static const char *header(const struct resp *r, const char *name, char *out, size_t cap)
{
    size_t n = strlen(name);
    const char *p = r->head;
    out[0] = '\0';
    while ((p = strstr(p, "\r\n")) != NULL) {
        p += 2;
        if (strncasecmp(p, name, n) == 0 && p[n] == ':') {
            const char *v = p + n + 1, *e;
            while (*v == ' ')
                v++;
            e = strstr(v, "\r\n");
            n = e ? (size_t)(e - v) : strlen(v);
            if (n >= cap)
                n = cap - 1;
            memcpy(out, v, n);
            out[n] = '\0';
            return out;
        }
    }
    return out;
}

static char *read_source(const char *file, size_t *len)
{
    char path[512];
    FILE *f;
    char *data;
    long n;
    snprintf(path, sizeof path, "%s/src/http/ui/%s", GW_SOURCE_DIR, file);
    f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    n = ftell(f);
    assert_true(n > 0);
    rewind(f);
    data = malloc((size_t)n);
    assert_non_null(data);
    assert_int_equal(fread(data, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return data;
}

static void check_asset(const char *path, const char *file, const char *type)
{
    struct resp r;
    char v[256];
    size_t len;
    char *want = read_source(file, &len);
    request("GET", path, &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(header(&r, "Content-Type", v, sizeof v), type);
    assert_string_equal(header(&r, "Cache-Control", v, sizeof v), "no-cache");
    assert_string_equal(header(&r, "X-Content-Type-Options", v, sizeof v), "nosniff");
    header(&r, "Content-Security-Policy", v, sizeof v);
    assert_true(strncmp(v, "default-src 'self';", 19) == 0);
    assert_non_null(strstr(v, "frame-ancestors 'none'"));
    assert_null(strstr(v, "unsafe-inline"));
    assert_null(strstr(v, "unsafe-eval"));
    assert_null(strstr(v, "http"));
    assert_int_equal(r.body_len, len);
    assert_memory_equal(r.body, want, len);
    free(want);
    free(r.body);
}

static void test_ui_assets(void **state)
{
    (void)state;
    check_asset("/", "index.html", "text/html; charset=utf-8");
    check_asset("/ui/", "index.html", "text/html; charset=utf-8");
    check_asset("/ui/index.html", "index.html", "text/html; charset=utf-8");
    check_asset("/ui/app.js", "app.js", "text/javascript; charset=utf-8");
    check_asset("/ui/app.css", "app.css", "text/css; charset=utf-8");
    check_asset("/ui/favicon.svg", "favicon.svg", "image/svg+xml");
}

/* Every src= and href= of index.html is a file the server has, on this
 * origin (relative), and the page has no inline script or style. */
static void test_ui_page_references(void **state)
{
    struct resp r;
    const char *p;
    int refs = 0;
    (void)state;
    request("GET", "/", &r);
    assert_int_equal(r.status, 200);
    assert_null(strstr(r.body, "<style"));
    assert_null(strstr(r.body, " style="));
    assert_null(strstr(r.body, " onclick="));
    p = r.body;
    while ((p = strstr(p, "<script")) != NULL) {
        const char *end = strstr(p, "</script>");
        assert_non_null(end);
        assert_non_null(strstr(p, "src="));
        assert_true(end[-1] == '>');   /* nothing between the tags */
        p = end;
    }
    for (p = r.body; (p = strpbrk(p, "sh")) != NULL; p++) {
        char ref[256], path[300];
        const char *q, *e;
        struct resp a;
        if (strncmp(p, "src=\"", 5) == 0)
            q = p + 5;
        else if (strncmp(p, "href=\"", 6) == 0)
            q = p + 6;
        else
            continue;
        e = strchr(q, '"');
        assert_non_null(e);
        assert_true((size_t)(e - q) < sizeof ref);
        memcpy(ref, q, (size_t)(e - q));
        ref[e - q] = '\0';
        assert_null(strstr(ref, "//"));
        assert_true(ref[0] != '/');
        snprintf(path, sizeof path, "/%s", ref);
        request("GET", path, &a);
        assert_int_equal(a.status, 200);
        assert_non_null(gw_ui_find(path));
        free(a.body);
        refs++;
    }
    assert_true(refs >= 3);
    free(r.body);
}

static void test_ui_errors_and_methods(void **state)
{
    struct resp r;
    char v[128];
    (void)state;
    request("GET", "/ui/nope.js", &r);
    assert_int_equal(r.status, 404);
    free(r.body);
    request("GET", "/ui/../metrics", &r);
    assert_true(r.status == 404 || r.status == 200);   /* MHD may normalise; never a file from disk */
    free(r.body);
    request("GET", "/index.html", &r);
    assert_int_equal(r.status, 404);
    free(r.body);
    request("POST", "/", &r);
    assert_int_equal(r.status, 405);
    assert_string_equal(header(&r, "Allow", v, sizeof v), "GET");
    free(r.body);
    request("HEAD", "/ui/app.js", &r);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body_len, 0);
    assert_string_equal(header(&r, "Content-Type", v, sizeof v), "text/javascript; charset=utf-8");
    free(r.body);
    assert_null(gw_ui_find("/ui/nope"));
    assert_null(gw_ui_find(NULL));
    assert_non_null(gw_ui_find("/"));
}

static void test_ui_counted(void **state)
{
    struct resp r;
    (void)state;
    request("GET", "/", &r);
    free(r.body);
    request("GET", "/metrics", &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "gpuwatch_http_requests_total{route=\"/\",code=\"200\"}"));
    free(r.body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ui_assets),
        cmocka_unit_test(test_ui_page_references),
        cmocka_unit_test(test_ui_errors_and_methods),
        cmocka_unit_test(test_ui_counted),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
