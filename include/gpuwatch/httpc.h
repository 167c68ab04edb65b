/* gpuwatch/httpc.h - the one HTTP client of gpuwatch (remote write from
 * the simulator, alerts to Alertmanager, the CLI talking to a running
 * serve): blocking HTTP/1.1 over libcurl, one keep-alive connection to one
 * scheme://host:port, requests with headers and a body, responses with
 * Content-Length, chunked or read-until-close bodies.
 *
 * - URLs: http[s]://host[:port][/path[?query]]; host may be a name, an
 *   IPv4 address or a bracketed IPv6 address
 *   ("http://[::1]:9201/api/v1/write"). https verifies the server against
 *   the system CA store, or tls.ca_file; tls.insecure_skip_verify skips
 *   the check; a client certificate and bearer or basic credentials are
 *   optional (struct gw_httpc_tls, struct gw_httpc_auth).
 * - Every request has one deadline (timeout_ms from its start, connecting
 *   included), so a stalled server costs at most that long.
 * - A request on a reused keep-alive connection that the server closed
 *   meanwhile is sent once more on a fresh connection.
 * - Response bodies are capped (max_body_bytes): GW_ETOOLARGE beyond.
 * - No signal is raised or used (safe in threaded programs).
 *
 * Errors: GW_EINVAL (bad URL or arguments), GW_EUNSUPPORTED (a scheme
 * other than http and https),
 * GW_EIO (resolve/connect/send/receive failure, connection closed early),
 * GW_ETIMEOUT (deadline passed), GW_EPARSE (malformed response),
 * GW_ETOOLARGE (response over the caps), GW_ENOMEM. Detail in err.
 * After any error the connection is closed; the next request reconnects.
 *
 * One gw_httpc is used by one thread at a time.
 * Layer: L2 storage and wire (src/net/); includes only its layer and below (docs/architecture.md). */
#ifndef GW_HTTPC_H
#define GW_HTTPC_H

#include <stddef.h>
#include <stdint.h>
#include "gpuwatch/buf.h"
#include "gpuwatch/err.h"

#define GW_HTTPC_MAX_HEADER_BYTES (64u << 10)   /* status line + response headers */

struct gw_url {
    char host[256];            /* without brackets for IPv6 */
    char port[8];              /* "80" (http) or "443" (https) when absent */
    char path[2048];           /* "/" when absent; query string included */
    int ipv6_literal;          /* host was given in [brackets] */
    int tls;                   /* https */
};
/* Parses an http:// or https:// URL. GW_OK; GW_EUNSUPPORTED for other
 * schemes; GW_EINVAL naming what is wrong (empty host, bad port, too long). */
int gw_url_parse(const char *url, struct gw_url *u, struct gw_error *err);

/* TLS of https requests, as Prometheus' tls_config (ca_file, cert_file,
 * key_file, server_name, insecure_skip_verify). Every field may be NULL/0;
 * strings are copied by gw_httpc_open, which checks that the files can be
 * read (GW_EINVAL naming the file otherwise). */
struct gw_httpc_tls {
    const char *ca_file;       /* PEM CA bundle instead of the system's */
    const char *cert_file;     /* client certificate (PEM), with key_file: mutual TLS */
    const char *key_file;      /* its private key (PEM, unencrypted) */
    const char *server_name;   /* the name the server's certificate must carry (and SNI),
                                * instead of the URL's host; the connection still goes
                                * to the URL's host and port, Host stays the URL's */
    int insecure_skip_verify;  /* do not verify the server's certificate (tests only) */
};
/* Authentication of every request, as Prometheus' authorization
 * (credentials, credentials_file) and basic_auth (username, password,
 * password_file): at most one of bearer and basic. Files are read at every
 * request (a rotated secret is used without a restart), surrounding blanks
 * and newlines dropped; a file that cannot be read fails the request with
 * GW_EIO. Strings copied by gw_httpc_open. */
struct gw_httpc_auth {
    const char *bearer_token;       /* "Authorization: Bearer <token>" */
    const char *bearer_token_file;
    const char *username;           /* basic: user name ... */
    const char *password;           /* ... and password, or */
    const char *password_file;      /* the file holding it */
};

struct gw_httpc_opts {
    int connect_timeout_ms;    /* per connection attempt (default 5000) */
    int timeout_ms;            /* whole request: send + response (default 30000) */
    size_t max_body_bytes;     /* response body cap (default 16 MiB) */
    const char *user_agent;    /* default "gpuwatch"; copied */
    struct gw_httpc_tls tls;   /* https options (ignored for http://) */
    struct gw_httpc_auth auth; /* credentials sent with every request */
};
void gw_httpc_opts_default(struct gw_httpc_opts *o);

struct gw_httpc;
/* Parses url and prepares a connection (connects lazily on the first
 * request). o may be NULL (defaults). Owned: free with gw_httpc_close().
 * Errors as gw_url_parse, GW_EINVAL for TLS or authentication options that
 * contradict each other or name a file that cannot be read, or GW_ENOMEM. */
int gw_httpc_open(struct gw_httpc **out, const char *url, const struct gw_httpc_opts *o,
                  struct gw_error *err);
void gw_httpc_close(struct gw_httpc *c);          /* NULL is a no-op */
/* The parsed URL (borrowed, valid until close). */
const struct gw_url *gw_httpc_url(const struct gw_httpc *c);

struct gw_httpc_header {
    const char *name;
    const char *value;
};

/* A response; init once, reuse across requests, free at the end. */
struct gw_httpc_response {
    int status;                /* e.g. 204 */
    int http_minor;            /* 0 or 1 */
    struct gw_buf headers;     /* raw header lines after the status line ("Name: value\r\n"...) */
    struct gw_buf body;        /* decoded body (chunked framing removed); NUL after len */
};
void gw_httpc_response_init(struct gw_httpc_response *r);
void gw_httpc_response_free(struct gw_httpc_response *r);
/* Value of the first response header called name (case-insensitive),
 * leading/trailing blanks removed; borrowed from r. NULL when absent. */
const char *gw_httpc_response_header(const struct gw_httpc_response *r, const char *name,
                                     size_t *len);

/* Sends one request and reads the whole response into resp (any status:
 * 4xx/5xx are GW_OK here, look at resp->status). method "GET", "POST", ...;
 * path NULL means the URL's path. Host, User-Agent and Content-Length are
 * added (Content-Length only when body != NULL or the method is POST/PUT);
 * the headers given must not repeat them. Interim 1xx responses are
 * skipped. The connection is kept open unless the server asks to close it. */
int gw_httpc_request(struct gw_httpc *c, const char *method, const char *path,
                     const struct gw_httpc_header *headers, size_t n_headers,
                     const void *body, size_t body_len, struct gw_httpc_response *resp,
                     struct gw_error *err);

#endif /* GW_HTTPC_H */
