/* gpuwatch/http.h - the HTTP server (libmicrohttpd; the only includer of
 * microhttpd.h): remote write/read, the Prometheus HTTP API, health and
 * self-metrics. Routes and status mapping: src/http/routes.c. */
#ifndef GW_HTTP_H
#define GW_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include "gpuwatch/db.h"
#include "gpuwatch/err.h"

struct gw_http_opts {
    const char *listen;          /* "host:port", "[v6]:port" or ":port"; default 127.0.0.1:9201 */
    unsigned threads;            /* worker threads; default 4 */
    size_t max_body_bytes;       /* request body cap; default 32 MiB (413 past it) */
    unsigned conn_timeout_s;     /* idle/slow connection timeout; default 30 */
    unsigned max_connections;    /* default 1024 */
};
void gw_http_opts_default(struct gw_http_opts *o);

struct gw_http;
/* Starts serving db (borrowed; must outlive the server).
 * GW_OK, GW_EIO (bind failed, with detail), GW_EINVAL (bad listen address). */
int gw_http_start(struct gw_http **out, struct gw_db *db, const struct gw_http_opts *o, struct gw_error *err);
/* The bound port (useful with port 0). */
uint16_t gw_http_port(const struct gw_http *h);
/* Marks the server ready (/-/ready answers 200 afterwards; 503 before). */
void gw_http_set_ready(struct gw_http *h, int ready);
/* Stops accepting, finishes in-flight requests, frees. NULL ok. */
void gw_http_stop(struct gw_http *h);

#endif /* GW_HTTP_H */
