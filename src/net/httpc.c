/* httpc.c - blocking HTTP/1.1 client (see gpuwatch/httpc.h) over libcurl.
 *
 * One curl easy handle per gw_httpc: libcurl keeps the connection alive
 * between requests, reconnects once when a reused connection turns out to
 * be closed, speaks TLS for https:// URLs (system CA store, or ca_file),
 * decodes chunked bodies and skips 1xx responses. This file adds what the
 * callers rely on: URL checks with precise errors, one deadline per
 * request, capped headers and bodies, and gw error codes. "Expect:
 * 100-continue" is never sent (a remote-write body must not wait a second
 * for a server that does not answer 100). */
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "gpuwatch/httpc.h"

#define N_OWNED 9              /* copied option strings: the tls and auth fields */
#define SECRET_FILE_MAX (8u << 10)   /* a token or password file */

struct gw_httpc {
    struct gw_url url;
    struct gw_httpc_opts o;
    char ua[128];
    char *owned[N_OWNED];      /* copies of o.tls and o.auth strings */
    char base[2400];           /* scheme://host:port */
    char tls_base[2400];       /* https://server_name:port (tls.server_name) */
    char connect_to[600];      /* server_name:port:host:port */
    char host_hdr[300];        /* Host: host:port (tls.server_name) */
    struct curl_slist *connect_list;   /* CURLOPT_CONNECT_TO: connect_to */
    char full[4500];           /* base + path of the current request */
    char curl_url[4500];       /* what curl is given (tls_base + path with tls.server_name) */
    CURL *h;
    /* the current request */
    struct gw_httpc_response *resp;
    int too_large;             /* body or headers over their caps */
    int oom;
};

/* ------------------------------------------------------------------ URL */

static int is_digit(char ch) { return ch >= '0' && ch <= '9'; }

int gw_url_parse(const char *url, struct gw_url *u, struct gw_error *err)
{
    const char *p, *auth_end, *host_b, *host_e, *port_b = NULL, *port_e = NULL;
    size_t n;

    if (url == NULL || u == NULL)
        return gw_error_set(err, GW_EINVAL, "URL: missing");
    int tls = strncasecmp(url, "https://", 8) == 0;
    if (!tls && strncasecmp(url, "http://", 7) != 0) {
        const char *sep = strstr(url, "://");
        if (sep != NULL && sep > url)
            return gw_error_set(err, GW_EUNSUPPORTED, "URL %.200s: scheme %.*s is not supported; use http:// or https://",
                                url, (int)(sep - url), url);
        return gw_error_set(err, GW_EINVAL, "URL \"%.200s\" must start with http:// or https://", url);
    }
    p = url + (tls ? 8 : 7);
    auth_end = p + strcspn(p, "/?#");
    if (memchr(p, '@', (size_t)(auth_end - p)) != NULL)
        return gw_error_set(err, GW_EINVAL, "URL %.200s: user info is not supported", url);
    memset(u, 0, sizeof *u);
    u->tls = tls;
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
        snprintf(u->port, sizeof u->port, "%s", tls ? "443" : "80");
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

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_OK;

static void curl_init_once(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* Contradictory TLS or authentication options, or files that cannot be
 * read: GW_EINVAL naming them. */
static int check_opts(const struct gw_httpc_opts *o, struct gw_error *err)
{
    const struct gw_httpc_tls *t = &o->tls;
    const struct gw_httpc_auth *a = &o->auth;
    const char *files[][2] = {{"TLS CA file", t->ca_file}, {"TLS certificate file", t->cert_file},
                              {"TLS key file", t->key_file}, {"bearer token file", a->bearer_token_file},
                              {"password file", a->password_file}};
    if ((t->cert_file == NULL) != (t->key_file == NULL))
        return gw_error_set(err, GW_EINVAL, "httpc: a client certificate needs both a certificate and a key file");
    if (t->server_name != NULL && (t->server_name[0] == '\0' || strpbrk(t->server_name, " :/[]\r\n") ||
                                   strlen(t->server_name) > 253))
        return gw_error_set(err, GW_EINVAL, "httpc: bad TLS server name \"%.100s\"", t->server_name);
    if (a->bearer_token != NULL && a->bearer_token_file != NULL)
        return gw_error_set(err, GW_EINVAL, "httpc: a bearer token and a bearer token file are mutually exclusive");
    if (a->password != NULL && a->password_file != NULL)
        return gw_error_set(err, GW_EINVAL, "httpc: a password and a password file are mutually exclusive");
    if ((a->bearer_token || a->bearer_token_file) && (a->username || a->password || a->password_file))
        return gw_error_set(err, GW_EINVAL, "httpc: at most one of bearer and basic authentication");
    if ((a->password || a->password_file) && a->username == NULL)
        return gw_error_set(err, GW_EINVAL, "httpc: a basic auth password needs a user name");
    if ((a->bearer_token && strpbrk(a->bearer_token, "\r\n")) || (a->username && strchr(a->username, ':')))
        return gw_error_set(err, GW_EINVAL, "httpc: bad credentials (newline in a token or ':' in a user name)");
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (files[i][1] != NULL && access(files[i][1], R_OK) != 0) {
            char eb[128];
            return gw_error_set(err, GW_EINVAL, "httpc: cannot read the %s %.300s: %s", files[i][0], files[i][1],
                                strerror_r(errno, eb, sizeof eb));
        }
    return GW_OK;
}

/* Copies the option strings into c->owned. */
static int own_opts(struct gw_httpc *c, struct gw_error *err)
{
    const char **f[N_OWNED] = {&c->o.tls.ca_file, &c->o.tls.cert_file, &c->o.tls.key_file,
                               &c->o.tls.server_name, &c->o.auth.bearer_token, &c->o.auth.bearer_token_file,
                               &c->o.auth.username, &c->o.auth.password, &c->o.auth.password_file};
    for (int i = 0; i < N_OWNED; i++) {
        if (*f[i] == NULL)
            continue;
        if ((c->owned[i] = strdup(*f[i])) == NULL)
            return gw_error_set(err, GW_ENOMEM, "httpc: out of memory");
        *f[i] = c->owned[i];
    }
    return GW_OK;
}

/* A secret file's content without surrounding blanks and newlines, into
 * out (cap bytes). GW_OK or GW_EIO naming the file. */
static int read_secret(const char *what, const char *path, char *out, size_t cap, struct gw_error *err)
{
    FILE *f = fopen(path, "rb");
    size_t n, b = 0;
    if (f == NULL) {
        char eb[128];
        return gw_error_set(err, GW_EIO, "httpc: cannot read the %s %.300s: %s", what, path,
                            strerror_r(errno, eb, sizeof eb));
    }
    n = fread(out, 1, cap - 1, f);
    fclose(f);
    out[n] = '\0';
    if (n == cap - 1 || strlen(out) != n)
        return gw_error_set(err, GW_EIO, "httpc: the %s %.300s is too long or holds a NUL byte", what, path);
    while (n > 0 && strchr(" \t\r\n", out[n - 1]))
        out[--n] = '\0';
    while (out[b] && strchr(" \t\r\n", out[b]))
        b++;
    memmove(out, out + b, n - b + 1);
    if (strpbrk(out, "\r\n"))
        return gw_error_set(err, GW_EIO, "httpc: the %s %.300s holds more than one line", what, path);
    return GW_OK;
}

void gw_httpc_opts_default(struct gw_httpc_opts *o)
{
    memset(o, 0, sizeof *o);
    o->connect_timeout_ms = 5000;
    o->timeout_ms = 30000;
    o->max_body_bytes = 16u << 20;
    o->user_agent = "gpuwatch";
}

int gw_httpc_open(struct gw_httpc **out, const char *url, const struct gw_httpc_opts *o,
                  struct gw_error *err)
{
    if (out == NULL)
        return gw_error_set(err, GW_EINVAL, "httpc: no output pointer");
    pthread_once(&curl_once, curl_init_once);
    if (curl_init_rc != CURLE_OK)
        return gw_error_set(err, GW_EIO, "httpc: libcurl initialisation failed: %s", curl_easy_strerror(curl_init_rc));
    struct gw_httpc *c = calloc(1, sizeof *c);
    if (c == NULL)
        return gw_error_set(err, GW_ENOMEM, "httpc: out of memory");
    int rc = gw_url_parse(url, &c->url, err);
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
    snprintf(c->base, sizeof c->base, c->url.ipv6_literal ? "%s://[%s]:%s" : "%s://%s:%s",
             c->url.tls ? "https" : "http", c->url.host, c->url.port);
    rc = check_opts(&c->o, err);
    if (rc == GW_OK)
        rc = own_opts(c, err);
    if (rc == GW_OK && c->url.tls && c->o.tls.server_name != NULL) {
        const char *hb = c->url.ipv6_literal ? "[" : "", *he = c->url.ipv6_literal ? "]" : "";
        snprintf(c->tls_base, sizeof c->tls_base, "https://%s:%s", c->o.tls.server_name, c->url.port);
        snprintf(c->connect_to, sizeof c->connect_to, "%s:%s:%s%s%s:%s", c->o.tls.server_name, c->url.port, hb,
                 c->url.host, he, c->url.port);
        snprintf(c->host_hdr, sizeof c->host_hdr, "Host: %s%s%s:%s", hb, c->url.host, he, c->url.port);
        if ((c->connect_list = curl_slist_append(NULL, c->connect_to)) == NULL)
            rc = gw_error_set(err, GW_ENOMEM, "httpc: out of memory");
    }
    if (rc == GW_OK && (c->h = curl_easy_init()) == NULL)
        rc = gw_error_set(err, GW_ENOMEM, "httpc: out of memory (curl handle)");
    if (rc != GW_OK) {
        gw_httpc_close(c);
        return rc;
    }
    *out = c;
    return GW_OK;
}

void gw_httpc_close(struct gw_httpc *c)
{
    if (c == NULL)
        return;
    if (c->h)
        curl_easy_cleanup(c->h);
    for (int i = 0; i < N_OWNED; i++)
        free(c->owned[i]);
    curl_slist_free_all(c->connect_list);
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

/* -------------------------------------------------------------- request */

/* Appends len bytes to b under cap; 0 (curl's abort) with the reason noted. */
static size_t append_capped(struct gw_httpc *c, struct gw_buf *b, size_t cap, const char *p, size_t len)
{
    int rc = b->len + len > cap ? GW_ETOOLARGE : gw_buf_append(b, p, len);
    if (rc != GW_OK) {
        *(rc == GW_ETOOLARGE ? &c->too_large : &c->oom) = 1;
        return 0;
    }
    return len;
}

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    struct gw_httpc *c = ud;
    return append_capped(c, &c->resp->body, c->o.max_body_bytes, p, size * n);
}

/* Header lines of the final response only: a status line (of a 1xx or of
 * the final response) starts them over; the blank line is dropped. */
static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
    struct gw_httpc *c = ud;
    size_t len = size * n;
    if (len >= 5 && strncmp(p, "HTTP/", 5) == 0) {
        gw_buf_reset(&c->resp->headers);
        return len;
    }
    if (len <= 2 && (p[0] == '\r' || p[0] == '\n'))
        return len;
    return append_capped(c, &c->resp->headers, GW_HTTPC_MAX_HEADER_BYTES, p, len);
}

static int map_error(struct gw_httpc *c, CURLcode cc, const char *detail, struct gw_error *err)
{
    const char *what = detail[0] ? detail : curl_easy_strerror(cc);
    if (c->oom || cc == CURLE_OUT_OF_MEMORY)
        return gw_error_set(err, GW_ENOMEM, "httpc: out of memory");
    if (c->too_large)
        return gw_error_set(err, GW_ETOOLARGE, "httpc: %s: response over %s cap", c->full,
                            c->resp->body.len ? "the body" : "a");
    switch (cc) {
    case CURLE_FILESIZE_EXCEEDED:
        return gw_error_set(err, GW_ETOOLARGE, "httpc: %s: response body over %zu bytes", c->full,
                            c->o.max_body_bytes);
    case CURLE_COULDNT_RESOLVE_HOST:
        return gw_error_set(err, GW_EIO, "httpc: cannot resolve host %s: %s", c->url.host, what);
    case CURLE_COULDNT_CONNECT:
        return gw_error_set(err, GW_EIO, "httpc: cannot connect to %s: %s", c->base, what);
    case CURLE_OPERATION_TIMEDOUT:
        return gw_error_set(err, GW_ETIMEOUT, "httpc: %s: timed out: %s", c->full, what);
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_BAD_CONTENT_ENCODING:
    case CURLE_HTTP2:
    case CURLE_UNSUPPORTED_PROTOCOL:
        return gw_error_set(err, GW_EPARSE, "httpc: %s: malformed response: %s", c->full, what);
    default:
        return gw_error_set(err, GW_EIO, "httpc: %s: %s", c->full, what);
    }
}

/* The TLS and authentication options of a request (after curl_easy_reset):
 * curl options, and the Authorization and Host headers appended to *hl.
 * GW_OK, or GW_EIO (a secret file cannot be read) / GW_ENOMEM. */
static int apply_security(struct gw_httpc *c, const char *path, struct curl_slist **hl, struct gw_error *err)
{
    const struct gw_httpc_tls *t = &c->o.tls;
    const struct gw_httpc_auth *a = &c->o.auth;
    char secret[SECRET_FILE_MAX], line[SECRET_FILE_MAX + 32];
    struct curl_slist *n;
    int rc = GW_OK;
    if (t->ca_file)
        curl_easy_setopt(c->h, CURLOPT_CAINFO, t->ca_file);
    if (t->cert_file) {
        curl_easy_setopt(c->h, CURLOPT_SSLCERT, t->cert_file);
        curl_easy_setopt(c->h, CURLOPT_SSLKEY, t->key_file);
    }
    if (t->insecure_skip_verify) {
        curl_easy_setopt(c->h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(c->h, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (c->tls_base[0]) {   /* verify (and SNI) server_name, connect to the URL's host */
        snprintf(c->curl_url, sizeof c->curl_url, "%s%s", c->tls_base, path);
        if ((n = curl_slist_append(*hl, c->host_hdr)) == NULL)
            rc = gw_error_set(err, GW_ENOMEM, "httpc: out of memory");
        else
            *hl = n;
        curl_easy_setopt(c->h, CURLOPT_CONNECT_TO, c->connect_list);
    }
    if (rc == GW_OK && (a->bearer_token || a->bearer_token_file)) {
        if (a->bearer_token_file)
            rc = read_secret("bearer token file", a->bearer_token_file, secret, sizeof secret, err);
        else
            snprintf(secret, sizeof secret, "%s", a->bearer_token);
        if (rc == GW_OK) {
            snprintf(line, sizeof line, "Authorization: Bearer %s", secret);
            if ((n = curl_slist_append(*hl, line)) == NULL)
                rc = gw_error_set(err, GW_ENOMEM, "httpc: out of memory");
            else
                *hl = n;
        }
    } else if (rc == GW_OK && a->username) {
        secret[0] = '\0';
        if (a->password_file)
            rc = read_secret("password file", a->password_file, secret, sizeof secret, err);
        else if (a->password)
            snprintf(secret, sizeof secret, "%s", a->password);
        curl_easy_setopt(c->h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(c->h, CURLOPT_USERNAME, a->username);
        curl_easy_setopt(c->h, CURLOPT_PASSWORD, secret);
    }
    memset(secret, 0, sizeof secret);
    memset(line, 0, sizeof line);
    return rc;
}

int gw_httpc_request(struct gw_httpc *c, const char *method, const char *path,
                     const struct gw_httpc_header *headers, size_t n_headers,
                     const void *body, size_t body_len, struct gw_httpc_response *resp,
                     struct gw_error *err)
{
    if (c == NULL || method == NULL || resp == NULL || method[0] == '\0' || strpbrk(method, " \r\n") ||
        (n_headers > 0 && headers == NULL))
        return gw_error_set(err, GW_EINVAL, "httpc: bad request arguments");
    if (path != NULL && (path[0] != '/' || strpbrk(path, " \r\n")))
        return gw_error_set(err, GW_EINVAL, "httpc: bad request path");
    const char *p = path ? path : c->url.path;
    size_t bl = strlen(c->base), pl = strlen(p);
    if (bl + pl >= sizeof c->full)
        return gw_error_set(err, GW_EINVAL, "httpc: request path too long");
    memcpy(c->full, c->base, bl);
    memcpy(c->full + bl, p, pl + 1);

    struct curl_slist *hl = NULL, *t;
    char line[8192];
    for (size_t i = 0; i < n_headers; i++) {
        if (headers[i].name == NULL || headers[i].value == NULL || strpbrk(headers[i].name, ": \r\n") ||
            strpbrk(headers[i].value, "\r\n")) {
            curl_slist_free_all(hl);
            return gw_error_set(err, GW_EINVAL, "httpc: bad header");
        }
        if ((size_t)snprintf(line, sizeof line, "%s: %s", headers[i].name, headers[i].value) >= sizeof line ||
            (t = curl_slist_append(hl, line)) == NULL) {
            curl_slist_free_all(hl);
            return gw_error_set(err, GW_EINVAL, "httpc: header too long or out of memory");
        }
        hl = t;
    }
    if ((t = curl_slist_append(hl, "Expect:")) == NULL) {
        curl_slist_free_all(hl);
        return gw_error_set(err, GW_ENOMEM, "httpc: out of memory");
    }
    hl = t;

    CURL *h = c->h;
    curl_easy_reset(h);   /* options only: the connection cache stays */
    int src = apply_security(c, p, &hl, err);
    if (src != GW_OK) {
        curl_slist_free_all(hl);
        return src;
    }
    gw_buf_reset(&resp->headers);
    gw_buf_reset(&resp->body);
    resp->status = 0;
    resp->http_minor = 1;
    c->resp = resp;
    c->too_large = c->oom = 0;
    char detail[CURL_ERROR_SIZE];
    detail[0] = '\0';
    int is_post = body != NULL || strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0;
    curl_easy_setopt(h, CURLOPT_URL, c->tls_base[0] ? c->curl_url : c->full);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)c->o.connect_timeout_ms);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)c->o.timeout_ms);
    curl_easy_setopt(h, CURLOPT_USERAGENT, c->ua);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, detail);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, c);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)c->o.max_body_bytes);
    if (is_post) {
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? (const char *)body : "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? body_len : 0));
    }
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    else if (strcmp(method, is_post ? "POST" : "GET") != 0)
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    CURLcode cc = curl_easy_perform(h);
    curl_slist_free_all(hl);
    c->resp = NULL;
    if (cc != CURLE_OK)
        return map_error(c, cc, detail, err);
    long code = 0, ver = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_getinfo(h, CURLINFO_HTTP_VERSION, &ver);
    resp->status = (int)code;
    resp->http_minor = ver == CURL_HTTP_VERSION_1_0 ? 0 : 1;
    if (gw_buf_reserve(&resp->body, 1) == GW_OK)
        resp->body.data[resp->body.len] = 0;
    return GW_OK;
}
