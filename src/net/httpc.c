/* httpc.c - blocking HTTP/1.1 client (see gpuwatch/httpc.h).
 *
 * Wire format sent for a request (one sendmsg of head + body):
 *   POST /api/v1/write HTTP/1.1\r\n
 *   Host: 127.0.0.1:9201\r\n
 *   User-Agent: gpuwatch-simulate\r\n
 *   <caller's headers, "Name: value\r\n" each>
 *   Content-Length: 1234\r\n
 *   \r\n
 *   <1234 body bytes>
 * Response bodies are framed by Content-Length, by chunked transfer coding
 *   "1a;ext\r\n<26 bytes>\r\n" ... "0\r\n<trailers>\r\n"
 * or, with neither, by the server closing the connection. No body for
 * HEAD, 1xx, 204 and 304.
 *
 * The socket is non-blocking; every wait is a poll() bounded by the
 * request deadline. The receive buffer keeps bytes past the current
 * response (a server may pipeline nothing, but a byte too many must not be
 * lost across keep-alive requests). */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/httpc.h"

#define RECV_CHUNK 65536
#define MAX_CHUNK_LINE 1024

struct gw_httpc {
    struct gw_url url;
    struct gw_httpc_opts o;
    char ua[128];
    char host_hdr[300];
    int fd;
    int got_byte;              /* a response byte arrived for the current request */
    struct gw_buf in;          /* received, not yet consumed: [in_pos, in.len) */
    size_t in_pos;
    struct gw_buf head;        /* request head scratch */
};

/* ------------------------------------------------------------------ URL */

static int is_digit(char ch) { return ch >= '0' && ch <= '9'; }

int gw_url_parse(const char *url, struct gw_url *u, struct gw_error *err)
{
    const char *p, *auth_end, *host_b, *host_e, *port_b = NULL, *port_e = NULL;
    size_t n;

    if (url == NULL || u == NULL)
        return gw_error_set(err, GW_EINVAL, "URL: missing");
    if (strncasecmp(url, "https://", 8) == 0)
        return gw_error_set(err, GW_EUNSUPPORTED, "URL %.200s: https is not supported (no TLS); use http://", url);
    if (strncasecmp(url, "http://", 7) != 0) {
        const char *sep = strstr(url, "://");
        if (sep != NULL && sep > url)
            return gw_error_set(err, GW_EUNSUPPORTED, "URL %.200s: scheme %.*s is not supported; use http://",
                                url, (int)(sep - url), url);
        return gw_error_set(err, GW_EINVAL, "URL \"%.200s\" must start with http://", url);
    }
    p = url + 7;
    auth_end = p + strcspn(p, "/?#");
    if (memchr(p, '@', (size_t)(auth_end - p)) != NULL)
        return gw_error_set(err, GW_EINVAL, "URL %.200s: user info is not supported", url);
    memset(u, 0, sizeof *u);
    if (*p == '[') {
        host_b = p + 1;
        host_e = memchr(host_b, ']', (size_t)(auth_end - host_b));
        if (host_e == NULL)
            return gw_error_set(err, GW_EINVAL, "URL %.200s: unterminated [IPv6 address]", url);
        u->ipv6_literal = 1;
        if (host_e + 1 < auth_end) {
            if (host_e[1] != ':')
                return gw_error_set(err, GW_EINVAL, "URL %.200s: junk after ]", url);
            port_b = host_e + 2;
            port_e = auth_end;
        }
    } else {
        host_b = p;
        host_e = memchr(p, ':', (size_t)(auth_end - p));
        if (host_e != NULL) {
            port_b = host_e + 1;
            port_e = auth_end;
        } else {
            host_e = auth_end;
        }
    }
    n = (size_t)(host_e - host_b);
    if (n == 0)
        return gw_error_set(err, GW_EINVAL, "URL %.200s: empty host", url);
    if (n >= sizeof u->host)
        return gw_error_set(err, GW_EINVAL, "URL %.200s: host too long", url);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)host_b[i] <= ' ' || host_b[i] == '[' || host_b[i] == ']')
            return gw_error_set(err, GW_EINVAL, "URL %.200s: bad character in host", url);
    memcpy(u->host, host_b, n);
    u->host[n] = '\0';
    if (port_b != NULL) {
        long port = 0;
        size_t pl = (size_t)(port_e - port_b);
        if (pl == 0 || pl > 5)
            return gw_error_set(err, GW_EINVAL, "URL %.200s: bad port", url);
        for (size_t i = 0; i < pl; i++) {
            if (!is_digit(port_b[i]))
                return gw_error_set(err, GW_EINVAL, "URL %.200s: bad port", url);
            port = port * 10 + (port_b[i] - '0');
        }
        if (port < 1 || port > 65535)
            return gw_error_set(err, GW_EINVAL, "URL %.200s: port out of range 1..65535", url);
        snprintf(u->port, sizeof u->port, "%ld", port);
    } else {
        snprintf(u->port, sizeof u->port, "80");
    }
    /* path + query, fragment dropped */
    {
        const char *path = auth_end;
        size_t pl = strcspn(path, "#");
        size_t off = 0;
        if (pl == 0 || path[0] == '?') {
            u->path[0] = '/';
            off = 1;
        }
        if (off + pl >= sizeof u->path)
            return gw_error_set(err, GW_EINVAL, "URL %.200s: path too long", url);
        for (size_t i = 0; i < pl; i++)
            if ((unsigned char)path[i] <= ' ' || path[i] == 0x7f)
                return gw_error_set(err, GW_EINVAL, "URL %.200s: space or control character in path", url);
        memcpy(u->path + off, path, pl);
        u->path[off + pl] = '\0';
    }
    return GW_OK;
}

/* ------------------------------------------------------------ lifecycle */

void gw_httpc_opts_default(struct gw_httpc_opts *o)
{
    o->connect_timeout_ms = 5000;
    o->timeout_ms = 30000;
    o->max_body_bytes = 16u << 20;
    o->user_agent = "gpuwatch";
}

int gw_httpc_open(struct gw_httpc **out, const char *url, const struct gw_httpc_opts *o,
                  struct gw_error *err)
{
    struct gw_httpc *c;
    int rc;

    if (out == NULL)
        return gw_error_set(err, GW_EINVAL, "httpc: no output pointer");
    c = calloc(1, sizeof *c);
    if (c == NULL)
        return gw_error_set(err, GW_ENOMEM, "httpc: out of memory");
    rc = gw_url_parse(url, &c->url, err);
    if (rc != GW_OK) {
        free(c);
        return rc;
    }
    if (o != NULL)
        c->o = *o;
    else
        gw_httpc_opts_default(&c->o);
    if (c->o.connect_timeout_ms <= 0)
        c->o.connect_timeout_ms = 5000;
    if (c->o.timeout_ms <= 0)
        c->o.timeout_ms = 30000;
    if (c->o.max_body_bytes == 0)
        c->o.max_body_bytes = 16u << 20;
    snprintf(c->ua, sizeof c->ua, "%s", c->o.user_agent ? c->o.user_agent : "gpuwatch");
    c->o.user_agent = c->ua;
    if (strcmp(c->url.port, "80") == 0)
        snprintf(c->host_hdr, sizeof c->host_hdr, c->url.ipv6_literal ? "[%s]" : "%s", c->url.host);
    else
        snprintf(c->host_hdr, sizeof c->host_hdr, c->url.ipv6_literal ? "[%s]:%s" : "%s:%s", c->url.host,
                 c->url.port);
    c->fd = -1;
    gw_buf_init(&c->in, 0);
    gw_buf_init(&c->head, GW_HTTPC_MAX_HEADER_BYTES);
    *out = c;
    return GW_OK;
}

static void conn_drop(struct gw_httpc *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    gw_buf_reset(&c->in);
    c->in_pos = 0;
}

void gw_httpc_close(struct gw_httpc *c)
{
    if (c == NULL)
        return;
    conn_drop(c);
    gw_buf_free(&c->in);
    gw_buf_free(&c->head);
    free(c);
}

const struct gw_url *gw_httpc_url(const struct gw_httpc *c) { return &c->url; }

void gw_httpc_response_init(struct gw_httpc_response *r)
{
    memset(r, 0, sizeof *r);
    gw_buf_init(&r->headers, GW_HTTPC_MAX_HEADER_BYTES);
    gw_buf_init(&r->body, 0);
}

void gw_httpc_response_free(struct gw_httpc_response *r)
{
    if (r == NULL)
        return;
    gw_buf_free(&r->headers);
    gw_buf_free(&r->body);
}

static int is_blank(char ch) { return ch == ' ' || ch == '\t'; }

const char *gw_httpc_response_header(const struct gw_httpc_response *r, const char *name,
                                     size_t *len)
{
    size_t nl = strlen(name), pos = 0;
    const char *b = (const char *)r->headers.data;

    while (b != NULL && pos < r->headers.len) {
        const char *line = b + pos;
        const char *eol = memchr(line, '\n', r->headers.len - pos);
        size_t ll = eol ? (size_t)(eol - line) : r->headers.len - pos;
        pos += ll + 1;
        if (ll > 0 && line[ll - 1] == '\r')
            ll--;
        if (ll > nl && line[nl] == ':' && strncasecmp(line, name, nl) == 0) {
            const char *v = line + nl + 1, *e = line + ll;
            while (v < e && is_blank(*v))
                v++;
            while (e > v && is_blank(e[-1]))
                e--;
            if (len)
                *len = (size_t)(e - v);
            return v;
        }
    }
    return NULL;
}

/* --------------------------------------------------------------- socket */

static void errno_text(int e, char *buf, size_t cap)
{
#if (_POSIX_C_SOURCE >= 200112L) && !defined(_GNU_SOURCE)
    if (strerror_r(e, buf, cap) != 0)
        snprintf(buf, cap, "errno %d", e);
#else
    const char *s = strerror_r(e, buf, cap);
    if (s != buf)
        snprintf(buf, cap, "%s", s);
#endif
}

/* Milliseconds left until deadline_ns (0 when passed). */
static int ms_left(uint64_t deadline_ns)
{
    uint64_t now = gw_mono_ns();
    if (now >= deadline_ns)
        return 0;
    uint64_t ms = (deadline_ns - now + 999999) / 1000000;
    return ms > 0x7fffffff ? 0x7fffffff : (int)ms;
}

/* Waits for events on fd. GW_OK, GW_ETIMEOUT or GW_EIO. */
static int wait_fd(int fd, short events, uint64_t deadline_ns, const char *what, struct gw_error *err)
{
    for (;;) {
        int left = ms_left(deadline_ns);
        struct pollfd pfd = {.fd = fd, .events = events};
        if (left == 0)
            return gw_error_set(err, GW_ETIMEOUT, "timed out %s", what);
        int n = poll(&pfd, 1, left);
        if (n > 0)
            return GW_OK;   /* POLLERR/POLLHUP: the following call reports it */
        if (n == 0)
            return gw_error_set(err, GW_ETIMEOUT, "timed out %s", what);
        if (errno != EINTR) {
            char eb[128];
            errno_text(errno, eb, sizeof eb);
            return gw_error_set(err, GW_EIO, "poll: %s", eb);
        }
    }
}

static int conn_open(struct gw_httpc *c, uint64_t deadline_ns, struct gw_error *err)
{
    struct addrinfo hints, *res = NULL, *a;
    char eb[160] = "no address";
    int grc, rc = GW_EIO, fd = -1;

    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    grc = getaddrinfo(c->url.host, c->url.port, &hints, &res);
    if (grc != 0)
        return gw_error_set(err, GW_EIO, "cannot resolve %s: %s", c->url.host, gai_strerror(grc));
    for (a = res; a != NULL; a = a->ai_next) {
        uint64_t conn_deadline = gw_mono_ns() + (uint64_t)c->o.connect_timeout_ms * 1000000u;
        int soerr = 0, one = 1;
        socklen_t sl = sizeof soerr;

        if (conn_deadline > deadline_ns)
            conn_deadline = deadline_ns;
        fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            errno_text(errno, eb, sizeof eb);
            continue;
        }
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            if (errno != EINPROGRESS) {
                errno_text(errno, eb, sizeof eb);
                goto next;
            }
            rc = wait_fd(fd, POLLOUT, conn_deadline, "connecting", NULL);
            if (rc != GW_OK) {
                snprintf(eb, sizeof eb, "%s", rc == GW_ETIMEOUT ? "timed out" : "poll failed");
                goto next;
            }
            if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0)
                soerr = errno;
            if (soerr != 0) {
                errno_text(soerr, eb, sizeof eb);
                rc = GW_EIO;
                goto next;
            }
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        c->fd = fd;
        gw_buf_reset(&c->in);
        c->in_pos = 0;
        freeaddrinfo(res);
        return GW_OK;
next:
        close(fd);
        fd = -1;
        if (ms_left(deadline_ns) == 0)
            break;
    }
    freeaddrinfo(res);
    if (rc == GW_ETIMEOUT)
        return gw_error_set(err, GW_ETIMEOUT, "cannot connect to %s port %s: timed out", c->url.host, c->url.port);
    return gw_error_set(err, GW_EIO, "cannot connect to %s port %s: %s", c->url.host, c->url.port, eb);
}

static int send_iov(struct gw_httpc *c, struct iovec *iov, int n_iov, uint64_t deadline_ns,
                    struct gw_error *err)
{
    while (n_iov > 0) {
        struct msghdr mh;
        ssize_t w;

        if (iov[0].iov_len == 0) {
            iov++;
            n_iov--;
            continue;
        }
        memset(&mh, 0, sizeof mh);
        mh.msg_iov = iov;
        mh.msg_iovlen = (size_t)n_iov;
        w = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                int rc = wait_fd(c->fd, POLLOUT, deadline_ns, "sending the request", err);
                if (rc != GW_OK)
                    return rc;
                continue;
            }
            char eb[128];
            errno_text(errno, eb, sizeof eb);
            return gw_error_set(err, GW_EIO, "send to %s port %s: %s", c->url.host, c->url.port, eb);
        }
        size_t left = (size_t)w;
        while (n_iov > 0 && left >= iov[0].iov_len) {
            left -= iov[0].iov_len;
            iov++;
            n_iov--;
        }
        if (n_iov > 0) {
            iov[0].iov_base = (char *)iov[0].iov_base + left;
            iov[0].iov_len -= left;
        }
    }
    return GW_OK;
}

/* Reads more bytes. 1 got bytes, 0 orderly EOF, <0 error. */
static int fill(struct gw_httpc *c, uint64_t deadline_ns, struct gw_error *err)
{
    int rc;

    if (c->in_pos > 0) {
        size_t rest = c->in.len - c->in_pos;
        memmove(c->in.data, c->in.data + c->in_pos, rest);
        c->in.len = rest;
        c->in_pos = 0;
    }
    rc = gw_buf_reserve(&c->in, RECV_CHUNK);
    if (rc != GW_OK)
        return gw_error_set(err, rc, "httpc: out of memory");
    for (;;) {
        ssize_t r = recv(c->fd, c->in.data + c->in.len, RECV_CHUNK, 0);
        if (r > 0) {
            c->in.len += (size_t)r;
            c->got_byte = 1;
            return 1;
        }
        if (r == 0)
            return 0;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            rc = wait_fd(c->fd, POLLIN, deadline_ns, "waiting for the response", err);
            if (rc != GW_OK)
                return rc;
            continue;
        }
        char eb[128];
        errno_text(errno, eb, sizeof eb);
        return gw_error_set(err, GW_EIO, "receive from %s port %s: %s", c->url.host, c->url.port, eb);
    }
}

static int eof_error(struct gw_httpc *c, struct gw_error *err)
{
    return gw_error_set(err, GW_EIO, "connection to %s port %s closed before the response was complete",
                        c->url.host, c->url.port);
}

/* Next line (without CRLF or LF) as a borrowed pointer into c->in; it stays
 * valid until the next fill. *budget limits the bytes a header section may take. */
static int read_line(struct gw_httpc *c, const char **line, size_t *len, size_t *budget,
                     uint64_t deadline_ns, struct gw_error *err)
{
    size_t scanned = 0;

    for (;;) {
        const uint8_t *start = c->in.data + c->in_pos;
        size_t avail = c->in.len - c->in_pos;
        const uint8_t *nl = avail > scanned ? memchr(start + scanned, '\n', avail - scanned) : NULL;
        if (nl != NULL) {
            size_t ll = (size_t)(nl - start);
            if (ll + 1 > *budget)
                return gw_error_set(err, GW_ETOOLARGE, "response headers over %u bytes",
                                    GW_HTTPC_MAX_HEADER_BYTES);
            *budget -= ll + 1;
            c->in_pos += ll + 1;
            if (ll > 0 && start[ll - 1] == '\r')
                ll--;
            *line = (const char *)start;
            *len = ll;
            return GW_OK;
        }
        scanned = avail;
        if (avail >= *budget)
            return gw_error_set(err, GW_ETOOLARGE, "response headers over %u bytes", GW_HTTPC_MAX_HEADER_BYTES);
        int rc = fill(c, deadline_ns, err);
        if (rc == 0)
            return eof_error(c, err);
        if (rc < 0)
            return rc;
        /* fill() may have moved the data to the buffer start; scanned stays valid */
    }
}

static int body_append(struct gw_httpc *c, struct gw_httpc_response *r, size_t n, struct gw_error *err)
{
    if (n > c->o.max_body_bytes || r->body.len > c->o.max_body_bytes - n)
        return gw_error_set(err, GW_ETOOLARGE, "response body over %zu bytes", c->o.max_body_bytes);
    int rc = gw_buf_append(&r->body, c->in.data + c->in_pos, n);
    if (rc != GW_OK)
        return gw_error_set(err, rc, "httpc: cannot hold the response body");
    c->in_pos += n;
    return GW_OK;
}

/* Moves exactly n body bytes (or until EOF when until_eof) into r->body. */
static int read_body_bytes(struct gw_httpc *c, struct gw_httpc_response *r, uint64_t n, int until_eof,
                           uint64_t deadline_ns, struct gw_error *err)
{
    for (;;) {
        size_t avail = c->in.len - c->in_pos;
        size_t k = (!until_eof && (uint64_t)avail > n) ? (size_t)n : avail;
        if (k > 0) {
            int rc = body_append(c, r, k, err);
            if (rc != GW_OK)
                return rc;
            n -= until_eof ? 0 : k;
        }
        if (!until_eof && n == 0)
            return GW_OK;
        int rc = fill(c, deadline_ns, err);
        if (rc == 0)
            return until_eof ? GW_OK : eof_error(c, err);
        if (rc < 0)
            return rc;
    }
}

static int token_in(const char *v, size_t len, const char *tok)
{
    size_t tl = strlen(tok);
    for (size_t i = 0; i + tl <= len; i++)
        if (strncasecmp(v + i, tok, tl) == 0 && (i == 0 || v[i - 1] == ',' || is_blank(v[i - 1])) &&
            (i + tl == len || v[i + tl] == ',' || is_blank(v[i + tl]) || v[i + tl] == ';'))
            return 1;
    return 0;
}

static int read_chunked(struct gw_httpc *c, struct gw_httpc_response *r, uint64_t deadline_ns,
                        struct gw_error *err)
{
    for (;;) {
        const char *line;
        size_t len, budget = MAX_CHUNK_LINE, i;
        uint64_t size = 0;
        int rc = read_line(c, &line, &len, &budget, deadline_ns, err);
        if (rc == GW_ETOOLARGE)
            return gw_error_set(err, GW_EPARSE, "chunk size line too long");
        if (rc != GW_OK)
            return rc;
        for (i = 0; i < len; i++) {
            char ch = line[i];
            int d;
            if (ch >= '0' && ch <= '9') d = ch - '0';
            else if (ch >= 'a' && ch <= 'f') d = ch - 'a' + 10;
            else if (ch >= 'A' && ch <= 'F') d = ch - 'A' + 10;
            else break;
            if (size > (UINT64_MAX >> 4))
                return gw_error_set(err, GW_EPARSE, "chunk size overflows");
            size = (size << 4) | (uint64_t)d;
        }
        if (i == 0 || (i < len && line[i] != ';' && !is_blank(line[i])))
            return gw_error_set(err, GW_EPARSE, "bad chunk size line \"%.40s\"", line);
        if (size == 0)
            break;
        if (size > c->o.max_body_bytes)
            return gw_error_set(err, GW_ETOOLARGE, "response body over %zu bytes", c->o.max_body_bytes);
        rc = read_body_bytes(c, r, size, 0, deadline_ns, err);
        if (rc != GW_OK)
            return rc;
        budget = 8;
        rc = read_line(c, &line, &len, &budget, deadline_ns, err);
        if (rc == GW_ETOOLARGE || (rc == GW_OK && len != 0))
            return gw_error_set(err, GW_EPARSE, "chunk data not followed by CRLF");
        if (rc != GW_OK)
            return rc;
    }
    /* trailers, up to the empty line */
    size_t budget = GW_HTTPC_MAX_HEADER_BYTES;
    for (;;) {
        const char *line;
        size_t len;
        int rc = read_line(c, &line, &len, &budget, deadline_ns, err);
        if (rc != GW_OK)
            return rc;
        if (len == 0)
            return GW_OK;
    }
}

/* One request/response exchange on the current (or a new) connection. */
static int exchange(struct gw_httpc *c, const char *method, const void *body, size_t body_len,
                    struct gw_httpc_response *r, uint64_t deadline_ns, struct gw_error *err)
{
    struct iovec iov[2];
    int rc, keep_alive = 0;

    c->got_byte = 0;
    if (c->fd < 0 && (rc = conn_open(c, deadline_ns, err)) != GW_OK)
        return rc;
    iov[0].iov_base = c->head.data;
    iov[0].iov_len = c->head.len;
    iov[1].iov_base = (void *)(uintptr_t)body;
    iov[1].iov_len = body ? body_len : 0;
    rc = send_iov(c, iov, 2, deadline_ns, err);
    if (rc != GW_OK)
        return rc;

    for (;;) {   /* skips interim 1xx responses */
        const char *line, *v;
        size_t len, budget = GW_HTTPC_MAX_HEADER_BYTES;
        int64_t clen = -1;
        int chunked = 0, conn_close = 0, conn_keep = 0, status;

        gw_buf_reset(&r->headers);
        gw_buf_reset(&r->body);
        rc = read_line(c, &line, &len, &budget, deadline_ns, err);
        if (rc != GW_OK)
            return rc;
        if (len < 12 || strncmp(line, "HTTP/1.", 7) != 0 || (line[7] != '0' && line[7] != '1') || line[8] != ' ' ||
            !is_digit(line[9]) || !is_digit(line[10]) || !is_digit(line[11]) || (len > 12 && line[12] != ' '))
            return gw_error_set(err, GW_EPARSE, "bad HTTP status line \"%.*s\"", (int)(len < 60 ? len : 60), line);
        r->http_minor = line[7] - '0';
        status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
        if (status < 100)
            return gw_error_set(err, GW_EPARSE, "bad HTTP status %d", status);
        r->status = status;
        for (;;) {
            rc = read_line(c, &line, &len, &budget, deadline_ns, err);
            if (rc != GW_OK)
                return rc;
            if (len == 0)
                break;
            if ((rc = gw_buf_append(&r->headers, line, len)) != GW_OK ||
                (rc = gw_buf_append(&r->headers, "\r\n", 2)) != GW_OK)
                return gw_error_set(err, rc, "response headers over %u bytes", GW_HTTPC_MAX_HEADER_BYTES);
        }
        if ((v = gw_httpc_response_header(r, "Content-Length", &len)) != NULL) {
            uint64_t x = 0;
            if (len == 0 || len > 19)
                return gw_error_set(err, GW_EPARSE, "bad Content-Length");
            for (size_t i = 0; i < len; i++) {
                if (!is_digit(v[i]))
                    return gw_error_set(err, GW_EPARSE, "bad Content-Length \"%.*s\"", (int)len, v);
                x = x * 10 + (uint64_t)(v[i] - '0');
            }
            clen = (int64_t)x;
        }
        if ((v = gw_httpc_response_header(r, "Transfer-Encoding", &len)) != NULL)
            chunked = token_in(v, len, "chunked");
        if ((v = gw_httpc_response_header(r, "Connection", &len)) != NULL) {
            conn_close = token_in(v, len, "close");
            conn_keep = token_in(v, len, "keep-alive");
        }
        keep_alive = r->http_minor == 1 ? !conn_close : (conn_keep && !conn_close);
        if (status < 200)
            continue;
        if (strcmp(method, "HEAD") == 0 || status == 204 || status == 304) {
            /* no body */
        } else if (chunked) {
            rc = read_chunked(c, r, deadline_ns, err);
        } else if (clen >= 0) {
            if ((uint64_t)clen > c->o.max_body_bytes)
                return gw_error_set(err, GW_ETOOLARGE, "response body of %lld bytes over %zu",
                                    (long long)clen, c->o.max_body_bytes);
            rc = read_body_bytes(c, r, (uint64_t)clen, 0, deadline_ns, err);
        } else {
            rc = read_body_bytes(c, r, 0, 1, deadline_ns, err);
            keep_alive = 0;
        }
        if (rc != GW_OK)
            return rc;
        break;
    }
    if ((rc = gw_buf_reserve(&r->body, 1)) != GW_OK)
        return gw_error_set(err, rc, "httpc: out of memory");
    r->body.data[r->body.len] = '\0';
    if (!keep_alive)
        conn_drop(c);
    return GW_OK;
}

static int build_head(struct gw_httpc *c, const char *method, const char *path,
                      const struct gw_httpc_header *headers, size_t n_headers, const void *body,
                      size_t body_len, struct gw_error *err)
{
    int rc;

    gw_buf_reset(&c->head);
    rc = gw_buf_printf(&c->head, "%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: %s\r\n", method,
                       path ? path : c->url.path, c->host_hdr, c->ua);
    for (size_t i = 0; rc == GW_OK && i < n_headers; i++) {
        const char *n = headers[i].name, *v = headers[i].value;
        if (n == NULL || v == NULL || n[0] == '\0' || strpbrk(n, ":\r\n ") || strpbrk(v, "\r\n"))
            return gw_error_set(err, GW_EINVAL, "bad request header %zu", i);
        rc = gw_buf_printf(&c->head, "%s: %s\r\n", n, v);
    }
    if (rc == GW_OK && (body != NULL || strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0))
        rc = gw_buf_printf(&c->head, "Content-Length: %zu\r\n", body ? body_len : 0);
    if (rc == GW_OK)
        rc = gw_buf_append(&c->head, "\r\n", 2);
    if (rc != GW_OK)
        return gw_error_set(err, rc, "request head over %u bytes", GW_HTTPC_MAX_HEADER_BYTES);
    return GW_OK;
}

int gw_httpc_request(struct gw_httpc *c, const char *method, const char *path,
                     const struct gw_httpc_header *headers, size_t n_headers,
                     const void *body, size_t body_len, struct gw_httpc_response *resp,
                     struct gw_error *err)
{
    uint64_t deadline_ns;
    int rc, reused;

    if (c == NULL || method == NULL || resp == NULL || method[0] == '\0' || strpbrk(method, " \r\n") ||
        (n_headers > 0 && headers == NULL))
        return gw_error_set(err, GW_EINVAL, "httpc: bad request arguments");
    if (path != NULL && (path[0] != '/' || strpbrk(path, " \r\n")))
        return gw_error_set(err, GW_EINVAL, "httpc: bad request path");
    rc = build_head(c, method, path, headers, n_headers, body, body_len, err);
    if (rc != GW_OK)
        return rc;
    deadline_ns = gw_mono_ns() + (uint64_t)c->o.timeout_ms * 1000000u;
    reused = c->fd >= 0;
    rc = exchange(c, method, body, body_len, resp, deadline_ns, err);
    if (rc == GW_EIO && reused && !c->got_byte) {
        /* the server closed the idle keep-alive connection: once more, fresh */
        conn_drop(c);
        rc = exchange(c, method, body, body_len, resp, deadline_ns, err);
    }
    if (rc != GW_OK)
        conn_drop(c);
    return rc;
}
