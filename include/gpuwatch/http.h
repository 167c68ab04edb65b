/* gpuwatch/http.h - the HTTP server (libmicrohttpd; the only includer of
 * microhttpd.h): remote write/read, the Prometheus HTTP API (PromQL
 * queries through the engine of promql.h), alerts and rules (alert.h),
 * health and self-metrics.
 * Routes and status mapping: src/http/routes.c.
 * Layer: L5 services (src/http/); includes only its layer and below (docs/architecture.md). */
#ifndef GW_HTTP_H
#define GW_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include "gpuwatch/buf.h"
#include "gpuwatch/db.h"
#include "gpuwatch/err.h"
#include "gpuwatch/kv.h"

struct gw_alerts;
struct gw_led_events;
struct gw_det;
struct gw_det_config;
struct gw_exemplars;

/* Authentication of one class of routes (docs/security.md): each file
 * given is read at the start and again on gw_http_reload_security. No
 * file: the class is open (admin routes then answer loopback clients
 * only). Both: either credential is accepted. */
struct gw_http_auth_files {
    const char *bearer_token_file;   /* one token a line; '#' comments, blank lines skipped */
    const char *basic_auth_file;     /* "user:password" or "user:sha256:<64 hex>" lines */
};
/* Authentication and TLS of the server (auth.c, tls.c). Paths are borrowed
 * (they must outlive the server). */
struct gw_http_security {
    struct gw_http_auth_files write;  /* remote write, POST /api/v1/events */
    struct gw_http_auth_files read;   /* queries, remote read, status, the status page, /metrics */
    struct gw_http_auth_files admin;  /* /api/v1/admin/..., /-/reload */
    int metrics_open;                 /* 1: /metrics needs no credentials */
    const char *tls_cert_file;        /* PEM certificate chain; with tls_key_file: https */
    const char *tls_key_file;         /* PEM private key */
    const char *tls_client_ca_file;   /* PEM CAs: a client certificate they sign is required */
};

struct gw_http_opts {
    const char *listen;          /* "host:port", "[v6]:port" or ":port"; default 127.0.0.1:9201 */
    unsigned threads;            /* worker threads; default 4 */
    size_t max_body_bytes;       /* request body cap; default 32 MiB (413 past it) */
    unsigned conn_timeout_s;     /* idle/slow connection timeout; default 30 */
    unsigned max_connections;    /* default 1024 */
    /* PromQL, for every /api/v1/query and /api/v1/query_range (0 = default): */
    int promql_compat;           /* 3: Prometheus 3 windows (t-r, t] (default); 2: [t-r, t] */
    int64_t lookback_ms;         /* --query.lookback-delta; default 5 min; lookback_delta overrides */
    int64_t query_timeout_ms;    /* --query.timeout; default 2 min; a smaller timeout= wins */
    uint64_t query_max_samples;  /* --query.max-samples; default 50,000,000 */
    /* Limits (docs/limits.md; 0 = default). A declared Content-Length over
     * max_body_bytes is answered 413 at once, without reading the body. */
    struct gw_http_limits {
        size_t max_decoded_bytes;        /* remote write after snappy; default and cap 32 MiB */
        unsigned max_labels;             /* labels per series; default and cap GW_LABELS_MAX */
        unsigned max_label_name_len;     /* bytes; default and cap GW_LABEL_NAME_MAX */
        unsigned max_label_value_len;    /* bytes; default and cap GW_LABEL_VALUE_MAX */
        uint64_t max_series_per_request; /* default 0: no limit (413 past it) */
        unsigned max_concurrent_writes;  /* remote writes handled at once; default 0: threads */
        unsigned max_concurrent_queries; /* queries and remote reads at once; default 0: threads */
        int64_t queue_wait_ms;           /* wait for a slot before 503; default 500 ms, < 0: none */
        size_t max_inflight_body_bytes;  /* request bodies held at once; default 256 MiB */
        size_t query_max_memory_bytes;   /* a query's working memory; default 32 B x max samples */
        unsigned debug_handler_delay_ms; /* tests only: a write or query holds its slot this long */
    } limits;
    /* Source of /api/v1/alerts and /api/v1/rules and of the gpuwatch_alerts_*
     * lines of /metrics (borrowed, must outlive the server); NULL: empty
     * alert and rule lists. The server reads it from its own copy of the
     * options, which gw_http_set_alerts() sets on a started server. */
    struct gw_alerts *alerts;
    /* Source of /api/v1/checkpoints: the checkpoint event store (kv.h, table
     * GW_CKPT_TABLE of detect.h; borrowed); NULL answers an empty list. */
    struct gw_kv *checkpoints;
    /* The scheduler event store (ledger.h) behind /api/v1/events and read
     * by /api/v1/sessions and /api/v1/exclusions (borrowed); NULL: those
     * answer 503. */
    struct gw_led_events *events;
    /* WAL replay progress (db.h; borrowed): /-/ready, /api/v1/status/walreplay
     * and the 503 answers while the server has no database yet. NULL: none. */
    struct gw_db_replay_state *replay;
    /* Where remote-write exemplars go and /api/v1/query_exemplars reads
     * (exemplars.h; borrowed, must outlive the server). NULL: exemplars are
     * counted, not stored, and the query answers an empty list. */
    struct gw_exemplars *exemplars;
    /* Authentication and TLS; all NULL: plain http, every route open. */
    struct gw_http_security sec;
};
void gw_http_opts_default(struct gw_http_opts *o);

struct gw_http;
/* Starts serving db (borrowed; must outlive the server). db may be NULL
 * with o->replay set (serve, before its WAL replay): the server then
 * answers the health, readiness, status and /metrics routes, and 503
 * "starting: WAL replay N%" on every route that needs the database, until
 * gw_http_set_db. (db NULL without o->replay: routes that need no database,
 * for tests.)
 * GW_OK, GW_EIO (bind failed, with detail), GW_EINVAL (bad listen address). */
int gw_http_start(struct gw_http **out, struct gw_db *db, const struct gw_http_opts *o, struct gw_error *err);
/* The bound port (useful with port 0). */
uint16_t gw_http_port(const struct gw_http *h);
/* Marks the server ready (/-/ready answers 200 afterwards; 503 before). */
void gw_http_set_ready(struct gw_http *h, int ready);
/* Gives a server started with db NULL its database (once). */
void gw_http_set_db(struct gw_http *h, struct gw_db *db);

/* ---- the operator's view: status API, reload ---- */
/* POST /-/reload (admin credentials when configured, else loopback
 * clients only) calls fn, which reloads the
 * configuration and returns GW_OK, or an error with err set (the old
 * configuration stays); fn also runs for SIGHUP, so it must serialize
 * itself. NULL: /-/reload answers that there is nothing to reload. */
typedef int (*gw_http_reload_fn)(void *ud, struct gw_error *err);
void gw_http_set_reload(struct gw_http *h, gw_http_reload_fn fn, void *ud);
/* Reads the authentication files and the TLS certificate, key and client
 * CA of o->sec again (POST /-/reload does it too, before fn): new
 * connections get the new certificate, requests from then on are checked
 * against the new credentials; in-flight requests and open connections
 * are not interrupted. On an error (with detail) everything stays as it
 * was. GW_OK when there is nothing to reload. */
int gw_http_reload_security(struct gw_http *h, struct gw_error *err);
/* 1 when the server speaks https. */
int gw_http_tls(const struct gw_http *h);
/* Records the outcome of a (re)load of the configuration now, for
 * runtimeinfo (reloadConfigSuccess, lastConfigTime) and the
 * gpuwatch_config_last_reload_* metrics. */
void gw_http_note_reload(struct gw_http *h, int ok);
/* /api/v1/status/flags: n flag names ("web.listen-address", no dashes)
 * and their values as strings (copied). GW_OK or GW_ENOMEM. */
int gw_http_set_flags(struct gw_http *h, const char *const *names, const char *const *values, size_t n);
/* /api/v1/status/config: the detector configuration rendered as YAML
 * (copied). GW_OK or GW_ENOMEM. */
int gw_http_set_det_config(struct gw_http *h, const struct gw_det_config *c);

/* runtimeinfo's storageRetention ("55d"). */
void gw_http_set_storage_retention(struct gw_http *h, const char *retention);

/* The detector engine whose cost and counters /metrics reports (NULL:
 * none); safe while requests run. */
void gw_http_set_detectors(struct gw_http *h, struct gw_det *det);

/* The forwarding (forward.h) whose per-destination counters /metrics
 * reports as gpuwatch_forward_* (NULL: none); safe while requests run. */
struct gw_fwd;
void gw_http_set_forward(struct gw_http *h, struct gw_fwd *fwd);

/* Stops accepting, finishes in-flight requests, frees. NULL ok. */
void gw_http_stop(struct gw_http *h);

/* Sets the PromQL fields of o (promql_compat, lookback_ms,
 * query_timeout_ms, query_max_samples; 0 = default) on a started server,
 * for the queries that start afterwards (safe while requests run). */
void gw_http_set_query_opts(struct gw_http *h, const struct gw_http_opts *o);

/* Sets the alert table the server reports (NULL: none); safe while requests run. */
void gw_http_set_alerts(struct gw_http *h, struct gw_alerts *alerts);

/* Answers one query exactly as GET /api/v1/query (range = 0) or
 * /api/v1/query_range (range = 1) would, without a server: params is the
 * form-encoded parameter string ("query=up&time=1700000000"), db is read
 * (a read-only open next to a running serve is fine), o gives the PromQL
 * options (NULL: defaults). *status gets the HTTP status and out (caller
 * initialises it with its own ceiling) the JSON body, success or error
 * envelope alike. GW_OK whenever an answer was produced; GW_ENOMEM or
 * GW_ETOOLARGE when out could not hold it. */
int gw_http_api_query(struct gw_db *db, const struct gw_http_opts *o, int range, const char *params,
                      size_t params_len, unsigned *status, struct gw_buf *out);

#endif /* GW_HTTP_H */
