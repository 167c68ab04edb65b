/* test_httpc.c - the HTTP/1.1 client against a tiny scripted server
 * thread: URL parsing, keep-alive reuse, POST headers and body,
 * Content-Length / chunked / read-until-close bodies, 1xx skipping, a
 * server closing idle connections, timeouts, body caps, IPv6, and https
 * against openssl's test server. */
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
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/httpc.h"

enum mode {
    M_ECHO,          /* 200, Content-Length, echoes the body, keep-alive */
    M_CHUNKED,       /* 200, chunked, echoes the body in 3-byte chunks + a trailer */
    M_UNTIL_CLOSE,   /* 200, no length, Connection: close */
    M_CLOSE_IDLE,    /* like ECHO, then closes the connection without saying so */
    M_STALL,         /* reads the request, never answers */
    M_CONTINUE,      /* 100 Continue first, then like ECHO */
    M_BIG            /* announces a 1 MiB body */
};

struct srv {
    int lfd;
    int port;
    enum mode mode;
    pthread_t th;
    pthread_mutex_t mu;
    int stop;
    int conns;                 /* accepted connections */
    int requests;
    char last_head[8192];
};

/* Reads one request (head + Content-Length body). 1 ok, 0 closed. */
static int srv_read_request(int fd, char *head, size_t head_cap, char *body, size_t body_cap, size_t *body_len)
{
    size_t n = 0;
    char *end = NULL;
    while (end == NULL) {
        if (n + 1 >= head_cap) return 0;
        ssize_t r = recv(fd, head + n, head_cap - 1 - n, 0);
        if (r <= 0) return 0;
        n += (size_t)r;
        head[n] = '\0';
        end = strstr(head, "\r\n\r\n");
    }
    size_t hl = (size_t)(end - head) + 4;
    size_t clen = 0;
    const char *cl = strcasestr(head, "\r\nContent-Length:");
    if (cl && cl < end) clen = (size_t)strtoul(cl + 17, NULL, 10);
    if (clen > body_cap) return 0;
    size_t have = n - hl;
    memcpy(body, head + hl, have);
    while (have < clen) {
        ssize_t r = recv(fd, body + have, clen - have, 0);
        if (r <= 0) return 0;
        have += (size_t)r;
    }
    head[hl] = '\0';
    *body_len = clen;
    return 1;
}

static void send_str(int fd, const char *s, size_t n) { (void)!send(fd, s, n, MSG_NOSIGNAL); }

static void *srv_main(void *arg)
{
    struct srv *s = arg;
    static char head[8192], body[65536], out[70000];
    for (;;) {
        struct pollfd pfd = {.fd = s->lfd, .events = POLLIN};
        pthread_mutex_lock(&s->mu);
        int stop = s->stop;
        pthread_mutex_unlock(&s->mu);
        if (stop) break;
        if (poll(&pfd, 1, 50) <= 0) continue;
        int fd = accept(s->lfd, NULL, NULL);
        if (fd < 0) continue;
        pthread_mutex_lock(&s->mu);
        s->conns++;
        enum mode mode = s->mode;
        pthread_mutex_unlock(&s->mu);
        size_t blen;
        while (srv_read_request(fd, head, sizeof head, body, sizeof body, &blen)) {
            pthread_mutex_lock(&s->mu);
            s->requests++;
            snprintf(s->last_head, sizeof s->last_head, "%s", head);
            pthread_mutex_unlock(&s->mu);
            int n;
            if (mode == M_STALL) {
                struct pollfd p2 = {.fd = fd, .events = POLLIN};
                poll(&p2, 1, 3000);   /* the client gives up first */
                break;
            }
            if (mode == M_CONTINUE) send_str(fd, "HTTP/1.1 100 Continue\r\n\r\n", 25);
            if (mode == M_ECHO || mode == M_CLOSE_IDLE || mode == M_CONTINUE) {
                n = snprintf(out, sizeof out, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n\r\n",
                             blen);
                memcpy(out + n, body, blen);
                send_str(fd, out, (size_t)n + blen);
                if (mode == M_CLOSE_IDLE) break;
            } else if (mode == M_CHUNKED) {
                n = snprintf(out, sizeof out, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
                for (size_t i = 0; i < blen; i += 3) {
                    size_t k = blen - i < 3 ? blen - i : 3;
                    n += snprintf(out + n, sizeof out - (size_t)n, "%zx;ext=1\r\n", k);
                    memcpy(out + n, body + i, k);
                    n += (int)k;
                    memcpy(out + n, "\r\n", 2);
                    n += 2;
                }
                n += snprintf(out + n, sizeof out - (size_t)n, "0\r\nX-Trailer: yes\r\n\r\n");
                send_str(fd, out, (size_t)n);
            } else if (mode == M_UNTIL_CLOSE) {
                n = snprintf(out, sizeof out, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil-close:");
                memcpy(out + n, body, blen);
                send_str(fd, out, (size_t)n + blen);
                break;
            } else if (mode == M_BIG) {
                n = snprintf(out, sizeof out, "HTTP/1.1 200 OK\r\nContent-Length: 1048576\r\n\r\n");
                send_str(fd, out, (size_t)n);
                break;
            }
        }
        close(fd);
    }
    return NULL;
}

static int srv_start(struct srv *s, enum mode mode, int v6)
{
    memset(s, 0, sizeof *s);
    s->mode = mode;
    pthread_mutex_init(&s->mu, NULL);
    s->lfd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s->lfd < 0) return -1;
    int one = 1;
    setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (v6) {
        struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
        socklen_t al = sizeof a;
        if (bind(s->lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(s->lfd, 16) != 0 ||
            getsockname(s->lfd, (struct sockaddr *)&a, &al) != 0) {
            close(s->lfd);
            return -1;
        }
        s->port = ntohs(a.sin6_port);
    } else {
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t al = sizeof a;
        if (bind(s->lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(s->lfd, 16) != 0 ||
            getsockname(s->lfd, (struct sockaddr *)&a, &al) != 0) {
            close(s->lfd);
            return -1;
        }
        s->port = ntohs(a.sin_port);
    }
    pthread_create(&s->th, NULL, srv_main, s);
    return 0;
}

static void srv_stop(struct srv *s)
{
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->th, NULL);
    close(s->lfd);
    pthread_mutex_destroy(&s->mu);
}

static int srv_get(struct srv *s, int *field)
{
    pthread_mutex_lock(&s->mu);
    int v = *field;
    pthread_mutex_unlock(&s->mu);
    return v;
}

static struct gw_httpc *client(struct srv *s, const char *path, int timeout_ms)
{
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", s->port, path);
    struct gw_httpc_opts o;
    gw_httpc_opts_default(&o);
    o.user_agent = "gpuwatch-test";
    if (timeout_ms) o.timeout_ms = timeout_ms;
    o.max_body_bytes = 4096;
    struct gw_httpc *c = NULL;
    struct gw_error err = {0};
    assert_int_equal(gw_httpc_open(&c, url, &o, &err), GW_OK);
    return c;
}

static void test_httpc_url_parse(void **state)
{
    (void)state;
    struct gw_url u;
    struct gw_error err = {0};
    assert_int_equal(gw_url_parse("http://example.org", &u, &err), GW_OK);
    assert_string_equal(u.host, "example.org");
    assert_string_equal(u.port, "80");
    assert_string_equal(u.path, "/");
    assert_int_equal(gw_url_parse("HTTP://127.0.0.1:9201/api/v1/write?x=1#frag", &u, &err), GW_OK);
    assert_string_equal(u.host, "127.0.0.1");
    assert_string_equal(u.port, "9201");
    assert_string_equal(u.path, "/api/v1/write?x=1");
    assert_int_equal(gw_url_parse("http://[::1]:9093/api/v2/alerts", &u, &err), GW_OK);
    assert_string_equal(u.host, "::1");
    assert_int_equal(u.ipv6_literal, 1);
    assert_string_equal(u.port, "9093");
    assert_int_equal(gw_url_parse("http://h?q=1", &u, &err), GW_OK);
    assert_string_equal(u.path, "/?q=1");

    assert_int_equal(gw_url_parse("https://h/x", &u, &err), GW_OK);
    assert_int_equal(u.tls, 1);
    assert_string_equal(u.port, "443");
    assert_string_equal(u.path, "/x");
    assert_int_equal(gw_url_parse("https://[::1]:8443", &u, &err), GW_OK);
    assert_int_equal(u.tls, 1);
    assert_string_equal(u.port, "8443");
    assert_int_equal(gw_url_parse("http://h", &u, &err), GW_OK);
    assert_int_equal(u.tls, 0);
    assert_int_equal(gw_url_parse("ftp://h/x", &u, &err), GW_EUNSUPPORTED);
    assert_int_equal(gw_url_parse("h:80/x", &u, &err), GW_EINVAL);
    assert_int_equal(gw_url_parse("", &u, &err), GW_EINVAL);
    assert_int_equal(gw_url_parse("http://", &u, &err), GW_EINVAL);
    assert_int_equal(gw_url_parse("http://:80/", &u, &err), GW_EINVAL);
    assert_int_equal(gw_url_parse("http://h:/", &u, &err), GW_EINVAL);
    assert_int_equal(gw_url_parse("http://h:0/", &u, &err), GW_EINVAL);
    assert_int_equal(gw_url_parse("http://h:65536/", &u, &err), GW_EINVAL);
    assert_int_equal(gw_url_parse("http://h:12a/", &u, &err), GW_EINVAL);
    assert_int_equal(gw_url_parse("http://[::1/", &u, &err), GW_EINVAL);
    assert_int_equal(gw_url_parse("http://u:p@h/", &u, &err), GW_EINVAL);
    assert_int_equal(gw_url_parse("http://h/a b", &u, &err), GW_EINVAL);
    assert_int_equal(gw_url_parse(NULL, &u, &err), GW_EINVAL);
    char longurl[3000];
    memset(longurl, 'a', sizeof longurl - 1);
    longurl[sizeof longurl - 1] = '\0';
    memcpy(longurl, "http://h/", 9);
    assert_int_equal(gw_url_parse(longurl, &u, &err), GW_EINVAL);
}

static void test_httpc_post_keepalive(void **state)
{
    (void)state;
    struct srv s;
    assert_int_equal(srv_start(&s, M_ECHO, 0), 0);
    struct gw_httpc *c = client(&s, "/api/v1/write", 0);
    struct gw_httpc_response r;
    gw_httpc_response_init(&r);
    struct gw_error err = {0};
    const struct gw_httpc_header h[] = {{"Content-Encoding", "snappy"}, {"Content-Type", "application/x-protobuf"}};
    for (int i = 0; i < 5; i++) {
        char body[64];
        int n = snprintf(body, sizeof body, "payload-%d", i);
        assert_int_equal(gw_httpc_request(c, "POST", NULL, h, 2, body, (size_t)n, &r, &err), GW_OK);
        assert_int_equal(r.status, 200);
        assert_int_equal(r.body.len, (size_t)n);
        assert_memory_equal(r.body.data, body, (size_t)n);
        size_t vl = 0;
        const char *ct = gw_httpc_response_header(&r, "content-type", &vl);
        assert_non_null(ct);
        assert_int_equal(vl, 10);
        assert_memory_equal(ct, "text/plain", 10);
        assert_null(gw_httpc_response_header(&r, "X-Missing", NULL));
    }
    assert_int_equal(srv_get(&s, &s.conns), 1);   /* one connection for all five */
    assert_int_equal(srv_get(&s, &s.requests), 5);
    pthread_mutex_lock(&s.mu);
    assert_non_null(strstr(s.last_head, "POST /api/v1/write HTTP/1.1\r\n"));
    assert_non_null(strstr(s.last_head, "\r\nHost: 127.0.0.1:"));
    assert_non_null(strstr(s.last_head, "\r\nUser-Agent: gpuwatch-test\r\n"));
    assert_non_null(strstr(s.last_head, "\r\nContent-Encoding: snappy\r\n"));
    assert_non_null(strstr(s.last_head, "\r\nContent-Length: 9\r\n"));
    pthread_mutex_unlock(&s.mu);
    /* GET with another path, no body: no Content-Length */
    assert_int_equal(gw_httpc_request(c, "GET", "/-/ready", NULL, 0, NULL, 0, &r, &err), GW_OK);
    assert_int_equal(r.status, 200);
    pthread_mutex_lock(&s.mu);
    assert_non_null(strstr(s.last_head, "GET /-/ready HTTP/1.1\r\n"));
    assert_null(strstr(s.last_head, "Content-Length"));
    pthread_mutex_unlock(&s.mu);
    /* bad header is refused before sending */
    const struct gw_httpc_header bad[] = {{"X-Bad", "a\r\nInjected: 1"}};
    assert_int_equal(gw_httpc_request(c, "POST", NULL, bad, 1, "x", 1, &r, &err), GW_EINVAL);
    gw_httpc_response_free(&r);
    gw_httpc_close(c);
    srv_stop(&s);
}

static void test_httpc_chunked_and_until_close(void **state)
{
    (void)state;
    struct gw_httpc_response r;
    gw_httpc_response_init(&r);
    struct gw_error err = {0};
    const char *body = "hello chunked world";

    struct srv s;
    assert_int_equal(srv_start(&s, M_CHUNKED, 0), 0);
    struct gw_httpc *c = client(&s, "/", 0);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(gw_httpc_request(c, "POST", NULL, NULL, 0, body, strlen(body), &r, &err), GW_OK);
        assert_int_equal(r.status, 200);
        assert_int_equal(r.body.len, strlen(body));
        assert_string_equal((const char *)r.body.data, body);
    }
    assert_int_equal(srv_get(&s, &s.conns), 1);
    gw_httpc_close(c);
    srv_stop(&s);

    assert_int_equal(srv_start(&s, M_UNTIL_CLOSE, 0), 0);
    c = client(&s, "/", 0);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(gw_httpc_request(c, "POST", NULL, NULL, 0, "abc", 3, &r, &err), GW_OK);
        assert_string_equal((const char *)r.body.data, "until-close:abc");
    }
    assert_int_equal(srv_get(&s, &s.conns), 2);   /* reconnected after the close */
    gw_httpc_close(c);
    srv_stop(&s);

    assert_int_equal(srv_start(&s, M_CONTINUE, 0), 0);
    c = client(&s, "/", 0);
    assert_int_equal(gw_httpc_request(c, "POST", NULL, NULL, 0, "xyz", 3, &r, &err), GW_OK);
    assert_int_equal(r.status, 200);
    assert_string_equal((const char *)r.body.data, "xyz");
    gw_httpc_close(c);
    srv_stop(&s);
    gw_httpc_response_free(&r);
}

static void test_httpc_server_closes_idle(void **state)
{
    (void)state;
    struct srv s;
    assert_int_equal(srv_start(&s, M_CLOSE_IDLE, 0), 0);
    struct gw_httpc *c = client(&s, "/", 0);
    struct gw_httpc_response r;
    gw_httpc_response_init(&r);
    struct gw_error err = {0};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(gw_httpc_request(c, "POST", NULL, NULL, 0, "again", 5, &r, &err), GW_OK);
        assert_string_equal((const char *)r.body.data, "again");
        usleep(20000);   /* let the close arrive */
    }
    assert_int_equal(srv_get(&s, &s.requests), 3);
    assert_int_equal(srv_get(&s, &s.conns), 3);
    gw_httpc_response_free(&r);
    gw_httpc_close(c);
    srv_stop(&s);
}

static void test_httpc_timeout_and_caps(void **state)
{
    (void)state;
    struct srv s;
    struct gw_httpc_response r;
    gw_httpc_response_init(&r);
    struct gw_error err = {0};

    assert_int_equal(srv_start(&s, M_STALL, 0), 0);
    struct gw_httpc *c = client(&s, "/", 300);
    uint64_t t0 = gw_mono_ns();
    assert_int_equal(gw_httpc_request(c, "POST", NULL, NULL, 0, "x", 1, &r, &err), GW_ETIMEOUT);
    uint64_t ms = (gw_mono_ns() - t0) / 1000000;
    assert_true(ms >= 250 && ms < 2500);
    assert_non_null(strstr(err.msg, "timed out"));
    gw_httpc_close(c);
    srv_stop(&s);

    assert_int_equal(srv_start(&s, M_BIG, 0), 0);
    c = client(&s, "/", 0);
    assert_int_equal(gw_httpc_request(c, "GET", NULL, NULL, 0, NULL, 0, &r, &err), GW_ETOOLARGE);
    gw_httpc_close(c);
    srv_stop(&s);

    /* nothing listens on the port any more */
    c = client(&s, "/", 0);
    assert_int_equal(gw_httpc_request(c, "GET", NULL, NULL, 0, NULL, 0, &r, &err), GW_EIO);
    assert_non_null(strstr(err.msg, "cannot connect"));
    gw_httpc_close(c);

    assert_int_equal(gw_httpc_open(&c, "gopher://127.0.0.1/", NULL, &err), GW_EUNSUPPORTED);
    assert_int_equal(gw_httpc_open(&c, "http://no-such-host.invalid/", NULL, &err), GW_OK);
    assert_int_equal(gw_httpc_request(c, "GET", NULL, NULL, 0, NULL, 0, &r, &err), GW_EIO);
    assert_non_null(strstr(err.msg, "resolve"));
    gw_httpc_close(c);
    gw_httpc_close(NULL);
    gw_httpc_response_free(&r);
}

static void test_httpc_ipv6(void **state)
{
    (void)state;
    struct srv s;
    if (srv_start(&s, M_ECHO, 1) != 0) {
        skip();   /* no IPv6 loopback here */
        return;
    }
    char url[96];
    snprintf(url, sizeof url, "http://[::1]:%d/v6", s.port);
    struct gw_httpc *c = NULL;
    struct gw_error err = {0};
    assert_int_equal(gw_httpc_open(&c, url, NULL, &err), GW_OK);
    struct gw_httpc_response r;
    gw_httpc_response_init(&r);
    assert_int_equal(gw_httpc_request(c, "POST", NULL, NULL, 0, "six", 3, &r, &err), GW_OK);
    assert_string_equal((const char *)r.body.data, "six");
    pthread_mutex_lock(&s.mu);
    assert_non_null(strstr(s.last_head, "\r\nHost: [::1]:"));
    pthread_mutex_unlock(&s.mu);
    gw_httpc_response_free(&r);
    gw_httpc_close(c);
    srv_stop(&s);
}

/* A free TCP port on 127.0.0.1 (bound, then released). */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || getsockname(fd, (struct sockaddr *)&a, &al) != 0) {
        if (fd >= 0) close(fd);
        return -1;
    }
    close(fd);
    return ntohs(a.sin_port);
}

static int port_open(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
    if (fd >= 0) close(fd);
    return ok;
}

/* https against `openssl s_server -www` with a self-signed certificate for
 * 127.0.0.1: verified with the certificate as CA file, refused without it,
 * accepted with tls.insecure_skip_verify; https to a plain HTTP server fails cleanly. */
static void test_httpc_tls(void **state)
{
    (void)state;
    char dir[] = "/tmp/gw-httpc-tls.XXXXXX", cmd[1024], crt[256], url[96];
    if (system("openssl version >/dev/null 2>&1") != 0 || !mkdtemp(dir)) {
        skip();
        return;
    }
    snprintf(crt, sizeof crt, "%s/c.pem", dir);
    snprintf(cmd, sizeof cmd,
             "openssl req -x509 -newkey rsa:2048 -nodes -keyout %s/k.pem -out %s -days 1 -subj /CN=localhost "
             "-addext subjectAltName=IP:127.0.0.1,DNS:localhost >/dev/null 2>&1", dir, crt);
    assert_int_equal(system(cmd), 0);
    int port = free_port();
    assert_true(port > 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char acc[32], key[256];
        snprintf(acc, sizeof acc, "127.0.0.1:%d", port);
        snprintf(key, sizeof key, "%s/k.pem", dir);
        int nul = open("/dev/null", O_RDWR);
        if (nul >= 0) { dup2(nul, 0); dup2(nul, 1); dup2(nul, 2); }
        execlp("openssl", "openssl", "s_server", "-accept", acc, "-cert", crt, "-key", key, "-www", "-quiet",
               (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 100 && !port_open(port); i++) usleep(50000);
    snprintf(url, sizeof url, "https://127.0.0.1:%d/", port);
    struct gw_httpc_opts o;
    struct gw_httpc *c = NULL;
    struct gw_error err = {0};
    struct gw_httpc_response r;
    gw_httpc_response_init(&r);

    gw_httpc_opts_default(&o);
    o.tls.ca_file = crt;
    assert_int_equal(gw_httpc_open(&c, url, &o, &err), GW_OK);
    assert_int_equal(gw_httpc_request(c, "GET", NULL, NULL, 0, NULL, 0, &r, &err), GW_OK);
    assert_int_equal(r.status, 200);
    assert_true(r.body.len > 0);
    gw_httpc_close(c);

    assert_int_equal(gw_httpc_open(&c, url, NULL, &err), GW_OK);   /* system CAs do not know it */
    assert_int_equal(gw_httpc_request(c, "GET", NULL, NULL, 0, NULL, 0, &r, &err), GW_EIO);
    assert_non_null(strstr(err.msg, "certificate"));
    gw_httpc_close(c);

    gw_httpc_opts_default(&o);
    o.tls.insecure_skip_verify = 1;
    assert_int_equal(gw_httpc_open(&c, url, &o, &err), GW_OK);
    assert_int_equal(gw_httpc_request(c, "GET", NULL, NULL, 0, NULL, 0, &r, &err), GW_OK);
    assert_int_equal(r.status, 200);
    gw_httpc_close(c);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);

    struct srv s;
    assert_int_equal(srv_start(&s, M_ECHO, 0), 0);
    snprintf(url, sizeof url, "https://127.0.0.1:%d/", s.port);
    gw_httpc_opts_default(&o);
    o.timeout_ms = 3000;
    assert_int_equal(gw_httpc_open(&c, url, &o, &err), GW_OK);
    int rc = gw_httpc_request(c, "GET", NULL, NULL, 0, NULL, 0, &r, &err);
    assert_true(rc == GW_EIO || rc == GW_ETIMEOUT);
    gw_httpc_close(c);
    srv_stop(&s);
    gw_httpc_response_free(&r);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_httpc_url_parse),
        cmocka_unit_test(test_httpc_post_keepalive),
        cmocka_unit_test(test_httpc_chunked_and_until_close),
        cmocka_unit_test(test_httpc_server_closes_idle),
        cmocka_unit_test(test_httpc_timeout_and_caps),
        cmocka_unit_test(test_httpc_ipv6),
        cmocka_unit_test(test_httpc_tls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
