/* http.c - the blocking keep-alive HTTP/1.1 client of gw_rwload (http://
 * only, one request at a time, timeouts, chunked and sized bodies). */
#include "rwload.h"

static void parse_url(const char *s, struct url *u)
{
    const char *p = s;
    if (strncmp(p, "http://", 7) != 0) die("only http:// URLs are supported: %s", s);
    p += 7;
    const char *slash = strchr(p, '/');
    const char *hostend = slash ? slash : p + strlen(p);
    const char *colon = memchr(p, ':', (size_t)(hostend - p));
    size_t hl = (size_t)((colon ? colon : hostend) - p);
    if (hl == 0 || hl >= sizeof u->host) die("bad host in URL %s", s);
    memcpy(u->host, p, hl);
    u->host[hl] = '\0';
    if (colon) {
        size_t pl = (size_t)(hostend - colon - 1);
        if (pl == 0 || pl >= sizeof u->port) die("bad port in URL %s", s);
        memcpy(u->port, colon + 1, pl);
        u->port[pl] = '\0';
    } else {
        snprintf(u->port, sizeof u->port, "80");
    }
    snprintf(u->path, sizeof u->path, "%s", slash ? slash : "/");
}

void http_init(struct http *c, const char *url, int timeout_ms)
{
    memset(c, 0, sizeof *c);
    parse_url(url, &c->url);
    c->fd = -1;
    c->timeout_ms = timeout_ms;
    gw_buf_init(&c->in, 0);
}

static void http_close(struct http *c)
{
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    gw_buf_reset(&c->in);
    c->in_pos = 0;
}

void http_free(struct http *c)
{
    http_close(c);
    gw_buf_free(&c->in);
}

static int http_connect(struct http *c)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(c->url.host, c->url.port, &hints, &res);
    if (rc != 0) {
        snprintf(c->err, sizeof c->err, "resolve %s: %s", c->url.host, gai_strerror(rc));
        return -1;
    }
    int fd = -1;
    char eb[128] = "no address";
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        struct timeval tv = { c->timeout_ms / 1000, (c->timeout_ms % 1000) * 1000 };
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
        errtext(errno, eb, sizeof eb);
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        snprintf(c->err, sizeof c->err, "connect %s:%s: %s", c->url.host, c->url.port, eb);
        return -1;
    }
    c->fd = fd;
    gw_buf_reset(&c->in);
    c->in_pos = 0;
    return 0;
}

static int send_all(struct http *c, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) continue;
            char eb[128];
            errtext(errno, eb, sizeof eb);
            snprintf(c->err, sizeof c->err, "send: %s", eb);
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads more bytes into c->in. 1 got bytes, 0 EOF, -1 error. */
static int fill(struct http *c)
{
    if (c->in_pos > 0 && c->in_pos == c->in.len) {
        gw_buf_reset(&c->in);
        c->in_pos = 0;
    }
    if (gw_buf_reserve(&c->in, 65536) != GW_OK) die("out of memory");
    for (;;) {
        ssize_t r = recv(c->fd, c->in.data + c->in.len, 65536, 0);
        if (r > 0) { c->in.len += (size_t)r; return 1; }
        if (r == 0) { snprintf(c->err, sizeof c->err, "connection closed by peer"); return 0; }
        if (errno == EINTR) continue;
        char eb[128];
        errtext(errno, eb, sizeof eb);
        snprintf(c->err, sizeof c->err, "recv: %s", eb);
        return -1;
    }
}

/* Finds "\r\n" from c->in_pos; returns line length or -1 (needs more). */
static long find_crlf(struct http *c)
{
    for (size_t i = c->in_pos; i + 1 < c->in.len; i++)
        if (c->in.data[i] == '\r' && c->in.data[i + 1] == '\n') return (long)(i - c->in_pos);
    return -1;
}

static int read_line(struct http *c, char *out, size_t cap)
{
    long n;
    while ((n = find_crlf(c)) < 0) {
        if (c->in.len - c->in_pos > 65536) { snprintf(c->err, sizeof c->err, "header line too long"); return -1; }
        if (fill(c) <= 0) return -1;
    }
    size_t k = (size_t)n < cap - 1 ? (size_t)n : cap - 1;
    memcpy(out, c->in.data + c->in_pos, k);
    out[k] = '\0';
    c->in_pos += (size_t)n + 2;
    return 0;
}

static int read_exact(struct http *c, struct gw_buf *out, size_t n)
{
    while (n > 0) {
        if (c->in_pos == c->in.len && fill(c) <= 0) return -1;
        size_t avail = c->in.len - c->in_pos;
        size_t k = avail < n ? avail : n;
        if (out) bput(out, c->in.data + c->in_pos, k);
        c->in_pos += k;
        n -= k;
    }
    return 0;
}

static int hdr_is(const char *line, const char *name, const char **val)
{
    size_t n = strlen(name);
    if (strncasecmp(line, name, n) != 0 || line[n] != ':') return 0;
    const char *v = line + n + 1;
    while (*v == ' ' || *v == '\t') v++;
    *val = v;
    return 1;
}

/* Copies a header value that must fit whole: 0, or -1 (c->err set) when
 * it is longer than the field, so that no value is compared cut short. */
static int hdr_copy(struct http *c, char *dst, size_t cap, const char *name, const char *v)
{
    size_t n = strlen(v);
    if (n >= cap) {
        snprintf(c->err, sizeof c->err, "%s header longer than %zu bytes", name, cap - 1);
        return -1;
    }
    memcpy(dst, v, n + 1);
    return 0;
}

/* One request/response. 0: got a response (any status); -1: transport
 * error (c->err says what; the connection is closed). */
static int http_do_once(struct http *c, const char *method, const char *extra_hdrs,
                        const uint8_t *body, size_t len, struct http_resp *r, int *reused)
{
    *reused = c->fd >= 0;
    if (c->fd < 0 && http_connect(c) != 0) return -1;
    char head[2048];
    int hn = snprintf(head, sizeof head,
                      "%s %s HTTP/1.1\r\nHost: %s:%s\r\nUser-Agent: gw_rwload/1.0\r\n%sContent-Length: %zu\r\n\r\n",
                      method, c->url.path, c->url.host, c->url.port, extra_hdrs ? extra_hdrs : "", len);
    if (hn < 0 || (size_t)hn >= sizeof head) die("request header too long");
    if (send_all(c, (const uint8_t *)head, (size_t)hn) != 0 || (len && send_all(c, body, len) != 0)) goto fail;
    char line[4096];
    if (read_line(c, line, sizeof line) != 0) goto fail;
    *reused = 0;   /* got a response byte: not a stale keep-alive connection */
    int major = 0, minor = 0, status = 0;
    if (sscanf(line, "HTTP/%d.%d %d", &major, &minor, &status) != 3) {
        snprintf(c->err, sizeof c->err, "bad status line: %.100s", line);
        goto fail;
    }
    r->status = status;
    r->ctype[0] = r->cenc[0] = '\0';
    gw_buf_reset(&r->body);
    long long clen = -1;
    int chunked = 0, conn_close = (major == 1 && minor == 0);
    for (;;) {
        if (read_line(c, line, sizeof line) != 0) goto fail;
        if (line[0] == '\0') break;
        const char *v;
        if (hdr_is(line, "Content-Length", &v)) {
            char *end;
            clen = strtoll(v, &end, 10);
            if (end == v || clen < 0) { snprintf(c->err, sizeof c->err, "bad Content-Length"); goto fail; }
        } else if (hdr_is(line, "Transfer-Encoding", &v)) {
            chunked = strcasestr(v, "chunked") != NULL;
        } else if (hdr_is(line, "Connection", &v)) {
            if (strcasestr(v, "close")) conn_close = 1;
        } else if (hdr_is(line, "Content-Type", &v)) {
            if (hdr_copy(c, r->ctype, sizeof r->ctype, "Content-Type", v) != 0) goto fail;
        } else if (hdr_is(line, "Content-Encoding", &v)) {
            if (hdr_copy(c, r->cenc, sizeof r->cenc, "Content-Encoding", v) != 0) goto fail;
        }
    }
    int no_body = status == 204 || status == 304 || (status >= 100 && status < 200) || strcmp(method, "HEAD") == 0;
    if (no_body) {
        /* nothing */
    } else if (chunked) {
        for (;;) {
            if (read_line(c, line, sizeof line) != 0) goto fail;
            char *end;
            errno = 0;
            unsigned long long sz = strtoull(line, &end, 16);
            if (end == line || errno != 0) { snprintf(c->err, sizeof c->err, "bad chunk size"); goto fail; }
            if (sz == 0) {
                do {
                    if (read_line(c, line, sizeof line) != 0) goto fail;
                } while (line[0] != '\0');
                break;
            }
            if (read_exact(c, &r->body, (size_t)sz) != 0) goto fail;
            if (read_line(c, line, sizeof line) != 0) goto fail;
        }
    } else if (clen >= 0) {
        if (read_exact(c, &r->body, (size_t)clen) != 0) goto fail;
    } else {
        for (;;) {
            if (c->in_pos < c->in.len) {
                bput(&r->body, c->in.data + c->in_pos, c->in.len - c->in_pos);
                c->in_pos = c->in.len;
            }
            int f = fill(c);
            if (f == 0) break;
            if (f < 0) goto fail;
        }
        conn_close = 1;
    }
    if (conn_close) http_close(c);
    return 0;
fail:
    http_close(c);
    return -1;
}

int http_do(struct http *c, const char *method, const char *extra_hdrs, const uint8_t *body, size_t len,
                   struct http_resp *r)
{
    int reused = 0;
    int rc = http_do_once(c, method, extra_hdrs, body, len, r, &reused);
    if (rc != 0 && reused) rc = http_do_once(c, method, extra_hdrs, body, len, r, &reused);
    return rc;
}
