/* src/http/server.c - the HTTP server on libmicrohttpd (the only file that
 * drives MHD; routes.c and the api_*.c handlers see gw_http_req).
 *
 * Concurrency: an internal thread pool (opts.threads) where each worker
 * polls its connections with epoll (or MHD's best poller), so a slow or
 * stalled client only occupies a connection slot, never a worker; idle
 * connections are closed after opts.conn_timeout_s.
 *
 * Request life cycle (three phases):
 *  1. MHD's URI callback allocates struct gw_http_req with a copy of the raw
 *     request target ("/api/v1/query?query=up"), so query strings are
 *     decoded by params.c with form semantics ('+' = space, repeated keys in
 *     order). It becomes the request's context pointer.
 *  2. The first access-handler call (headers known) finds the route, asks
 *     auth.c whether the client may (401/403 otherwise), checks the method
 *     and runs the route's early checks. An answer decided here
 *     is remembered; the body is still drained (every upload chunk
 *     consumed) and the answer is sent on the final call. Except a declared
 *     Content-Length over the limits (limits.c: 413, or 503 for the
 *     in-flight body budget): that answer is queued at once, so MHD sends
 *     no 100 Continue, reads none of the body and closes the connection;
 *     so are 401 and 403.
 *     Body chunks go to a gw_buf whose ceiling is opts.max_body_bytes;
 *     passing it (chunked uploads) turns into 413.
 *  3. The final call (no upload data) runs the route under its concurrency
 *     slot (limits.c) and queues the answer.
 * MHD's completion callback frees the request state, aborted or not.
 * https: MHD's GnuTLS support with the certificate from tls.c's callback
 * (reloaded without a restart, gw_http_reload_security). */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include <microhttpd.h>
#include "gpuwatch/codec.h"
#include "gpuwatch/log.h"
#include "http/http_int.h"

void gw_http_opts_default(struct gw_http_opts *o)
{
    memset(o, 0, sizeof *o);   /* every source (alerts, checkpoints, events) NULL */
    o->listen = "127.0.0.1:9201";
    o->threads = 4;
    o->max_body_bytes = (size_t)32 << 20;
    o->conn_timeout_s = 30;
    o->max_connections = 1024;
    o->promql_compat = 3;
    o->lookback_ms = GW_QUERY_LOOKBACK_MS;
    o->query_timeout_ms = GW_QUERY_TIMEOUT_MS;
    o->query_max_samples = GW_QUERY_MAX_SAMPLES;
    gw_http_limits_default(&o->limits);
}

const char *gw_http_header(const struct gw_http_req *rq, const char *name)
{
    if (rq->conn == NULL)
        return NULL;
    return MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, name);
}

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    struct gw_http *h = cls;
    struct gw_http_req *rq = calloc(1, sizeof *rq);
    if (rq == NULL)
        return NULL;
    rq->h = h;
    rq->conn = conn;
    rq->t0_ns = gw_mono_ns();
    rq->uri = strdup(uri ? uri : "/");
    if (rq->uri == NULL) {
        free(rq);
        return NULL;
    }
    gw_buf_init(&rq->body, h->opts.max_body_bytes);
    gw_params_init(&rq->params);
    return rq;
}

static void req_free(struct gw_http_req *rq)
{
    if (rq == NULL)
        return;
    gw_http_limits_release(rq);
    gw_buf_free(&rq->body);
    gw_params_free(&rq->params);
    free(rq->uri);
    free(rq);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)conn;
    (void)toe;
    req_free(*req_cls);
    *req_cls = NULL;
}

__attribute__((format(printf, 2, 0))) static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    (void)cls;
    vsnprintf(msg, sizeof msg, fmt, ap);
    for (char *p = msg; *p; p++)
        if (*p == '"' || *p == '\n' || *p == '\r')
            *p = ' ';
    gw_log(GW_LOG_WARN, "http", "msg=\"%s\"", msg);
}

static enum MHD_Result queue(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    size_t len = 0;
    uint8_t *data = gw_buf_steal(&rs->body, &len);
    struct MHD_Response *r;
    enum MHD_Result ret;
    if (data != NULL && len > 0) {
        r = MHD_create_response_from_buffer_with_free_callback(len, data, free);
    } else {
        free(data);
        data = NULL;
        r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    }
    if (r == NULL) {
        free(data);
        return MHD_NO;
    }
    if (rs->content_type)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, rs->content_type);
    if (rs->content_encoding)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, rs->content_encoding);
    for (unsigned i = 0; i < rs->n_headers; i++)
        MHD_add_response_header(r, rs->headers[i].name, rs->headers[i].value);
    ret = MHD_queue_response(rq->conn, rs->status, r);
    MHD_destroy_response(r);
    return ret;
}

static int method_of(const char *m)
{
    if (strcmp(m, MHD_HTTP_METHOD_GET) == 0)
        return GW_M_GET;
    if (strcmp(m, MHD_HTTP_METHOD_POST) == 0)
        return GW_M_POST;
    if (strcmp(m, MHD_HTTP_METHOD_HEAD) == 0)
        return GW_M_HEAD;
    return GW_M_OTHER;
}

/* First call: the headers are known, no body has been read. */
static void on_headers(struct gw_http_req *rq)
{
    rq->route = gw_route_find(rq->path);
    if (gw_http_auth_request(rq))   /* 401/403 (auth.c): answered at once, no body read */
        return;
    if (rq->route != NULL && !(rq->route->methods & rq->method)) {
        rq->early_status = 405;
        snprintf(rq->early_msg, sizeof rq->early_msg, "method not allowed");
        return;
    }
    if (rq->route != NULL && !gw_route_no_db(rq->route->id) && rq->h->opts.replay != NULL && rq->h->db == NULL) {
        rq->early_status = 503;   /* the WAL is still replaying */
        gw_http_starting_msg(rq->h, rq->early_msg, sizeof rq->early_msg);
        return;
    }
    if (rq->route != NULL && rq->route->early != NULL)
        rq->route->early(rq);
}

/* The declared body size against the limits (limits.c): 1 when the answer
 * must go out now, before any of the body is read. */
static int declared_size_refused(struct gw_http_req *rq)
{
    const char *cl = gw_http_header(rq, MHD_HTTP_HEADER_CONTENT_LENGTH);
    char *end = NULL;
    unsigned long long n = 0;
    int have = 0;
    if (cl != NULL) {
        n = strtoull(cl, &end, 10);
        have = end != cl && *end == '\0';
    }
    return gw_http_limits_headers(rq, n, have);
}

static void early_response(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    if (rq->early_status == 503 && rq->route != NULL && rq->route->api)
        /* still starting or overloaded: the Prometheus API's envelope, errorType unavailable */
        gw_resp_api_error(rs, "unavailable", "%s", rq->early_msg);
    else
        gw_resp_text(rs, (unsigned)rq->early_status, "%s", rq->early_msg);
    if (rq->retry_after_s)
        gw_resp_header(rs, "Retry-After", "%d", rq->retry_after_s);
    if (rq->early_status == 405 && rq->route != NULL)
        gw_resp_header(rs, "Allow", "%s", rq->route->allow);
    if (rq->early_status == 401)
        gw_http_auth_challenge(rq, rs);
    if (rq->rw_version == 2 && rq->early_status >= 400) {   /* 2.0: on every 4xx and 5xx */
        gw_resp_header(rs, "X-Prometheus-Remote-Write-Samples-Written", "0");
        gw_resp_header(rs, "X-Prometheus-Remote-Write-Histograms-Written", "0");
        gw_resp_header(rs, "X-Prometheus-Remote-Write-Exemplars-Written", "0");
    }
}

/* Runs the route (or the early answer) and queues the response. */
static enum MHD_Result respond(struct gw_http *h, struct gw_http_req *rq)
{
    struct gw_http_resp rs;
    enum MHD_Result ret;
    memset(&rs, 0, sizeof rs);
    gw_buf_init(&rs.body, GW_HTTP_MAX_RESPONSE);
    if (rq->early_status)
        early_response(rq, &rs);
    else
        gw_http_limits_dispatch(rq, &rs);
    gw_http_count(h, rq->route ? rq->route->id : GW_R_NOT_FOUND, rs.status);
    ret = queue(rq, &rs);
    gw_buf_free(&rs.body);
    gw_hist_observe_ns(&h->c.duration[rq->route ? rq->route->id : GW_R_NOT_FOUND], gw_mono_ns() - rq->t0_ns);
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
    struct gw_http *h = cls;
    struct gw_http_req *rq = *req_cls;
    (void)version;
    if (rq == NULL)
        return MHD_NO;   /* request state could not be allocated */
    rq->conn = conn;
    rq->path = url;
    if (!rq->started) {
        rq->started = 1;
        rq->method = method_of(method);
        on_headers(rq);
        if (rq->early_status == 401 || rq->early_status == 403 || declared_size_refused(rq)) {
            /* queued before any body is read: MHD sends no 100 Continue,
             * answers now and closes the connection (an unauthenticated
             * client cannot make us read its body either) */
            rq->answered_early = 1;
            return respond(h, rq);
        }
        return MHD_YES;
    }
    if (*upload_data_size != 0) {
        size_t n = *upload_data_size;
        rq->body_bytes_seen += n;
        atomic_fetch_add(&h->c.body_bytes, n);
        if (!rq->early_status && gw_http_limits_body(rq) != 0)
            gw_buf_free(&rq->body);
        if (!rq->early_status) {
            int rc = gw_buf_append(&rq->body, upload_data, n);
            if (rc == GW_ETOOLARGE) {
                rq->early_status = 413;
                snprintf(rq->early_msg, sizeof rq->early_msg,
                         "request body too large: limit %zu bytes (--web.max-body-bytes)", h->opts.max_body_bytes);
                gw_buf_free(&rq->body);
            } else if (rc != GW_OK) {
                rq->early_status = 500;
                snprintf(rq->early_msg, sizeof rq->early_msg, "out of memory reading the request body");
                gw_buf_free(&rq->body);
            }
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (rq->answered_early)
        return MHD_YES;
    return respond(h, rq);
}

/* ---- listen address ---- */

static int parse_port(const char *s, uint16_t *port)
{
    char *end = NULL;
    long v;
    if (*s == '\0')
        return -1;
    v = strtol(s, &end, 10);
    if (*end != '\0' || v < 0 || v > 65535)
        return -1;
    *port = (uint16_t)v;
    return 0;
}

/* "host:port", "[v6]:port" or ":port" (all interfaces). */
static int parse_listen(const char *listen, struct sockaddr_storage *ss, socklen_t *sl, int *any,
                        struct gw_error *err)
{
    char host[256];
    const char *port_s;
    uint16_t port;
    size_t hl;
    memset(ss, 0, sizeof *ss);
    *any = 0;
    if (listen[0] == '[') {
        const char *rb = strchr(listen, ']');
        if (rb == NULL || rb[1] != ':')
            return gw_error_set(err, GW_EINVAL, "bad listen address \"%s\": expected [addr]:port", listen);
        hl = (size_t)(rb - listen - 1);
        if (hl >= sizeof host)
            return gw_error_set(err, GW_EINVAL, "bad listen address \"%s\"", listen);
        memcpy(host, listen + 1, hl);
        host[hl] = '\0';
        port_s = rb + 2;
    } else {
        const char *colon = strrchr(listen, ':');
        if (colon == NULL)
            return gw_error_set(err, GW_EINVAL, "bad listen address \"%s\": expected host:port", listen);
        hl = (size_t)(colon - listen);
        if (hl >= sizeof host || memchr(listen, ':', hl) != NULL)
            return gw_error_set(err, GW_EINVAL, "bad listen address \"%s\" (IPv6 needs [addr]:port)", listen);
        memcpy(host, listen, hl);
        host[hl] = '\0';
        port_s = colon + 1;
    }
    if (parse_port(port_s, &port) != 0)
        return gw_error_set(err, GW_EINVAL, "bad port in listen address \"%s\"", listen);
    if (host[0] == '\0') {
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
        a6->sin6_family = AF_INET6;
        a6->sin6_addr = in6addr_any;
        a6->sin6_port = htons(port);
        *sl = sizeof *a6;
        *any = 1;
        return GW_OK;
    }
    {
        struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
        if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
            a4->sin_family = AF_INET;
            a4->sin_port = htons(port);
            *sl = sizeof *a4;
            return GW_OK;
        }
        if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
            a6->sin6_family = AF_INET6;
            a6->sin6_port = htons(port);
            *sl = sizeof *a6;
            return GW_OK;
        }
    }
    {
        struct addrinfo hints, *res = NULL;
        int gai;
        memset(&hints, 0, sizeof hints);
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        gai = getaddrinfo(host, NULL, &hints, &res);
        if (gai != 0 || res == NULL)
            return gw_error_set(err, GW_EINVAL, "cannot resolve listen host \"%s\": %s", host,
                                gai_strerror(gai));
        if (res->ai_addrlen > sizeof *ss) {
            freeaddrinfo(res);
            return gw_error_set(err, GW_EINVAL, "bad listen host \"%s\"", host);
        }
        memcpy(ss, res->ai_addr, res->ai_addrlen);
        *sl = (socklen_t)res->ai_addrlen;
        freeaddrinfo(res);
        if (ss->ss_family == AF_INET)
            ((struct sockaddr_in *)ss)->sin_port = htons(port);
        else
            ((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
        return GW_OK;
    }
}

static struct MHD_Daemon *start_daemon(struct gw_http *h, unsigned flags, const struct sockaddr *sa)
{
    unsigned threads = h->opts.threads ? h->opts.threads : 1;
    /* https (tls.c): the certificate comes from a callback, so a reload
     * swaps it without a new daemon; client CAs make MHD ask for a client
     * certificate, which auth.c then verifies. */
    struct MHD_OptionItem tls_opts[] = {
        {MHD_OPTION_HTTPS_CERT_CALLBACK, 0, gw_tls_cert_callback()},
        {MHD_OPTION_HTTPS_MEM_TRUST, 0, (void *)gw_tls_client_ca_pem(h->tls)},
        {MHD_OPTION_END, 0, NULL},
    };
    if (h->tls != NULL) {
        flags |= MHD_USE_TLS;
        if (gw_tls_client_ca_pem(h->tls) == NULL)
            tls_opts[1].option = MHD_OPTION_END;
    } else {
        tls_opts[0].option = MHD_OPTION_END;
    }
    return MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, h,
        MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, h,
        MHD_OPTION_SOCK_ADDR, sa,
        MHD_OPTION_THREAD_POOL_SIZE, threads,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)h->opts.conn_timeout_s,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)h->opts.max_connections,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(128 * 1024),
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri, h,
        MHD_OPTION_ARRAY, tls_opts,
        MHD_OPTION_END);
}

/* ---- authentication and TLS (auth.c, tls.c) ---- */

static int security_start(struct gw_http *h, struct gw_error *err)
{
    const struct gw_http_security *sec = &h->opts.sec;
    const struct gw_http_auth_files *f[] = {&sec->write, &sec->read, &sec->admin};
    int rc = GW_OK;
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (rc == GW_OK && h->auth == NULL && (f[i]->bearer_token_file || f[i]->basic_auth_file))
            rc = gw_auth_new(&h->auth, sec, err);
    if (rc == GW_OK && (sec->tls_cert_file || sec->tls_key_file || sec->tls_client_ca_file))
        rc = gw_tls_new(&h->tls, sec, err);
    return rc;
}

static void security_stop(struct gw_http *h)
{
    gw_auth_free(h->auth);
    h->auth = NULL;
    gw_tls_free(h->tls);
    h->tls = NULL;
}

int gw_http_reload_security(struct gw_http *h, struct gw_error *err)
{
    int rc = GW_OK;
    if (h == NULL)
        return GW_OK;
    if (h->tls != NULL)
        rc = gw_tls_reload(h->tls, err);
    if (rc == GW_OK && h->auth != NULL)
        rc = gw_auth_reload(h->auth, err);
    if (rc == GW_OK && (h->tls || h->auth))
        gw_log(GW_LOG_INFO, "http", "msg=\"TLS and authentication files reloaded\"");
    return rc;
}

int gw_http_tls(const struct gw_http *h)
{
    return h != NULL && h->tls != NULL;
}

int gw_http_start(struct gw_http **out, struct gw_db *db, const struct gw_http_opts *o,
                  struct gw_error *err)
{
    struct gw_http *h;
    struct sockaddr_storage ss;
    socklen_t sl = 0;
    int any = 0, rc;
    unsigned flags;
    const union MHD_DaemonInfo *di;

    h = calloc(1, sizeof *h);
    if (h == NULL)
        return gw_error_set(err, GW_ENOMEM, "out of memory");
    gw_http_opts_default(&h->opts);
    if (o != NULL) {
        if (o->listen)
            h->opts.listen = o->listen;
        if (o->threads)
            h->opts.threads = o->threads;
        if (o->max_body_bytes)
            h->opts.max_body_bytes = o->max_body_bytes;
        if (o->conn_timeout_s)
            h->opts.conn_timeout_s = o->conn_timeout_s;
        if (o->max_connections)
            h->opts.max_connections = o->max_connections;
        if (o->promql_compat == 2 || o->promql_compat == 3)
            h->opts.promql_compat = o->promql_compat;
        if (o->lookback_ms > 0)
            h->opts.lookback_ms = o->lookback_ms;
        if (o->query_timeout_ms > 0)
            h->opts.query_timeout_ms = o->query_timeout_ms;
        if (o->query_max_samples > 0)
            h->opts.query_max_samples = o->query_max_samples;
        h->opts.alerts = o->alerts;
        h->opts.checkpoints = o->checkpoints;
        h->opts.events = o->events;
        h->opts.replay = o->replay;
        h->opts.exemplars = o->exemplars;
        h->opts.sec = o->sec;
    }
    gw_http_limits_setup(h, o ? &o->limits : NULL);
    pthread_mutex_init(&h->info_mu, NULL);
    h->start_ms = gw_process_start_ms();
    atomic_init(&h->reload_ok, 1);
    atomic_init(&h->reload_success_ms, gw_now_ms());
    snprintf(h->listen, sizeof h->listen, "%s", h->opts.listen);
    h->opts.listen = h->listen;
    h->db = db;
    atomic_init(&h->ready, 0);

    rc = parse_listen(h->listen, &ss, &sl, &any, err);
    if (rc == GW_OK)
        rc = security_start(h, err);
    if (rc != GW_OK) {
        gw_http_limits_teardown(h);
        security_stop(h);
        pthread_mutex_destroy(&h->info_mu);
        free(h);
        return rc;
    }
    signal(SIGPIPE, SIG_IGN);

    flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    flags |= MHD_is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES ? MHD_USE_EPOLL : MHD_USE_AUTO;
    if (ss.ss_family == AF_INET6)
        flags |= any ? MHD_USE_DUAL_STACK : MHD_USE_IPv6;
    h->daemon = start_daemon(h, flags, (const struct sockaddr *)&ss);
    if (h->daemon == NULL && any) {
        /* No IPv6 on this host: all IPv4 interfaces. */
        struct sockaddr_in a4;
        memset(&a4, 0, sizeof a4);
        a4.sin_family = AF_INET;
        a4.sin_addr.s_addr = htonl(INADDR_ANY);
        a4.sin_port = ((struct sockaddr_in6 *)&ss)->sin6_port;
        flags &= ~(unsigned)MHD_USE_DUAL_STACK;
        h->daemon = start_daemon(h, flags, (const struct sockaddr *)&a4);
    }
    (void)sl;
    if (h->daemon == NULL) {
        rc = gw_error_set(err, GW_EIO, "cannot listen on %s (address in use or not available)", h->listen);
        gw_http_limits_teardown(h);
        security_stop(h);
        pthread_mutex_destroy(&h->info_mu);
        free(h);
        return rc;
    }
    di = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
    h->port = di ? di->port : 0;
    gw_log(GW_LOG_INFO, "http", "msg=\"listening\" addr=%s port=%u threads=%u scheme=%s", h->listen,
           (unsigned)h->port, h->opts.threads, h->tls ? "https" : "http");
    *out = h;
    return GW_OK;
}

uint16_t gw_http_port(const struct gw_http *h)
{
    return h ? h->port : 0;
}

void gw_http_set_ready(struct gw_http *h, int ready)
{
    if (h)
        atomic_store(&h->ready, ready ? 1 : 0);
}

void gw_http_stop(struct gw_http *h)
{
    MHD_socket fd;
    if (h == NULL)
        return;
    atomic_store(&h->ready, 0);
    fd = MHD_quiesce_daemon(h->daemon);
    MHD_stop_daemon(h->daemon);
    if (fd != MHD_INVALID_SOCKET)
        close(fd);
    gw_http_limits_teardown(h);
    security_stop(h);
    pthread_mutex_destroy(&h->info_mu);
    free(h->flags_json);
    free(h->config_yaml);
    free(h);
}

void gw_http_set_db(struct gw_http *h, struct gw_db *db)
{
    if (h)
        h->db = db;   /* an atomic store: h->db is _Atomic */
}
