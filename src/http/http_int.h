/* src/http/http_int.h - internals shared by the files of the HTTP module:
 * the server handle, the per-request state the three-phase MHD handler
 * builds, the response a route fills in, query parameters (params.c), JSON
 * output and time/duration parsing (json.c), and the route handlers.
 *
 * Nothing outside src/http/ includes this file. Only server.c talks to
 * libmicrohttpd directly; routes see a request through gw_http_req. */
#ifndef GW_HTTP_INT_H
#define GW_HTTP_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include "gpuwatch/buf.h"
#include "gpuwatch/db.h"
#include "gpuwatch/err.h"
#include "gpuwatch/http.h"
#include "gpuwatch/json.h"
#include "gpuwatch/metrics.h"

#ifndef GW_VERSION
#define GW_VERSION "0.1.0"
#endif

/* ---- query parameters (params.c) ---- */
struct gw_param {
    char *key;        /* owned, NUL-terminated, decoded */
    size_t key_len;
    char *val;        /* owned, NUL-terminated, decoded */
    size_t val_len;
};
struct gw_params {
    struct gw_param *v;   /* owned, in arrival order */
    size_t n, cap;
};
#define GW_PARAMS_MAX 10000   /* parameters per request */

void gw_params_init(struct gw_params *p);
void gw_params_free(struct gw_params *p);
/* Parses "a=1&b=x+y&match[]=%7Bjob%3D%22x%22%7D" (application/
 * x-www-form-urlencoded, '+' is a space) and appends the pairs in order.
 * GW_OK, GW_EPARSE (bad %XX escape), GW_ELIMIT (too many), GW_ENOMEM. */
int gw_params_parse(struct gw_params *p, const char *s, size_t len);
/* First value of key or NULL. */
const struct gw_param *gw_params_get(const struct gw_params *p, const char *key);
/* Decodes %XX and '+' from in into out (cap >= len + 1), NUL-terminates.
 * Returns decoded length or -1 on a bad escape. */
long gw_url_decode(const char *in, size_t len, char *out);

/* ---- JSON and time formatting (json.c) ---- */
/* Appends a label set {"name":"value",...} from canonical bytes. */
int gw_json_labels(struct gw_buf *b, const uint8_t *canon, size_t len);

/* Prometheus time parameter: float Unix seconds ("1435781451.781", rounded
 * to ms) or RFC3339 with optional fraction and zone. GW_OK or GW_EPARSE. */
int gw_parse_time_ms(const char *s, int64_t *out_ms);
/* Prometheus duration parameter: float seconds ("15", "0.5") or a duration
 * ("5m", "1h30m"). GW_OK or GW_EPARSE. */
int gw_parse_step_ms(const char *s, int64_t *out_ms);

/* ---- server state ---- */
enum gw_route_id {
    GW_R_WRITE = 0, GW_R_READ, GW_R_QUERY, GW_R_QUERY_RANGE, GW_R_SERIES, GW_R_LABELS,
    GW_R_LABEL_VALUES, GW_R_METADATA, GW_R_EXEMPLARS, GW_R_BUILDINFO, GW_R_READY,
    GW_R_HEALTHY, GW_R_METRICS, GW_R_ADMIN_RETENTION, GW_R_ADMIN_FLUSH, GW_R_FORMAT_QUERY, GW_R_ALERTS, GW_R_RULES,
    GW_R_CHECKPOINTS, GW_R_EVENTS, GW_R_SESSIONS, GW_R_EXCLUSIONS, GW_R_ADMIN_COMPACT, GW_R_ADMIN_BACKUP,
    GW_R_STATUS_RUNTIME, GW_R_STATUS_FLAGS, GW_R_STATUS_CONFIG, GW_R_STATUS_TSDB, GW_R_STATUS_WALREPLAY,
    GW_R_RELOAD, GW_R_UI, GW_R_ADMIN_DOWNSAMPLE, GW_R_NOT_FOUND,
    GW_R_COUNT
};
/* Status codes counted per route; the last slot is "other". */
#define GW_HTTP_N_CODES 14
extern const int gw_http_counted_codes[GW_HTTP_N_CODES];

/* What became of remote-write exemplars (api_write.c; /metrics labels in api_metrics.c). */
enum gw_exemplar_outcome_counter {
    GW_EXO_STORED, GW_EXO_DUPLICATE, GW_EXO_OUT_OF_ORDER, GW_EXO_TOO_LONG, GW_EXO_INVALID_SERIES,
    GW_EXO_NOT_STORED, GW_EXO_COUNT
};

struct gw_http_counters {
    _Atomic uint64_t requests[GW_R_COUNT][GW_HTTP_N_CODES];
    _Atomic uint64_t body_bytes;
    _Atomic uint64_t samples_accepted;
    _Atomic uint64_t samples_duplicate;
    _Atomic uint64_t refused_conflict;
    _Atomic uint64_t refused_out_of_order;
    _Atomic uint64_t refused_too_old;
    _Atomic uint64_t refused_too_new;
    _Atomic uint64_t refused_invalid_series;
    _Atomic uint64_t refused_invalid_samples;
    _Atomic uint64_t refused_histograms;
    _Atomic uint64_t refused_exemplars;
    _Atomic uint64_t exemplars[GW_EXO_COUNT];   /* remote-write exemplars by outcome */
    _Atomic uint64_t metadata_stored;
    struct gw_hist duration[GW_R_COUNT];   /* request durations by route (api_metrics.c) */
};

/* ---- limits (limits.c, docs/limits.md) ---- */
/* A counting semaphore whose waiters give up after a deadline. */
struct gw_http_slots {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned used, max;
};
void gw_http_slots_init(struct gw_http_slots *s, unsigned max);
void gw_http_slots_destroy(struct gw_http_slots *s);
/* 1 with a slot taken (waiting up to wait_ms for one), 0 when all stayed busy. */
int gw_http_slots_acquire(struct gw_http_slots *s, int64_t wait_ms);
void gw_http_slots_release(struct gw_http_slots *s);

struct MHD_Daemon;
struct MHD_Connection;
struct gw_auth;
struct gw_tls;

struct gw_http {
    struct MHD_Daemon *daemon;
    struct gw_db *_Atomic db;     /* borrowed; NULL until gw_http_set_db (WAL replay) */
    struct gw_http_opts opts;
    char listen[256];
    uint16_t port;
    atomic_int ready;
    struct gw_http_counters c;
    /* PromQL options given after the start (gw_http_set_query_opts, may
     * race with requests, hence atomics); 0 = the value in opts. */
    _Atomic int q_compat;
    _Atomic int64_t q_lookback_ms;
    _Atomic int64_t q_timeout_ms;
    _Atomic uint64_t q_max_samples;
    /* operator's view (api_status.c, api_metrics.c) */
    int64_t start_ms;                     /* process start, Unix ms */
    struct gw_det *_Atomic det;           /* borrowed, for /metrics; may be NULL */
    struct gw_fwd *_Atomic fwd;           /* borrowed, for /metrics (forwarding); may be NULL */
    pthread_mutex_t info_mu;              /* flags_json, config_yaml, reload fn */
    char *flags_json;                     /* owned: {"name":"value",...} */
    char *config_yaml;                    /* owned: the detector configuration */
    char retention[32];                   /* storageRetention, e.g. "55d" */
    gw_http_reload_fn reload_fn;
    void *reload_ud;
    _Atomic int reload_ok;                /* last reload (or the start) succeeded */
    _Atomic int64_t reload_success_ms;    /* its time, Unix ms */
    _Atomic uint64_t reloads, reload_failures;
    /* authentication and TLS (auth.c, tls.c); NULL: none */
    struct gw_auth *auth;
    struct gw_tls *tls;
    /* limits (limits.c): concurrency slots and the bodies held in memory */
    struct gw_http_slots write_slots, query_slots;
    _Atomic uint64_t inflight_body_bytes;
    _Atomic uint64_t limit_refusals;      /* requests answered 503 by a limit */
};

enum gw_method { GW_M_GET = 1, GW_M_POST = 2, GW_M_HEAD = 4, GW_M_OTHER = 8 };

struct gw_route;

/* One request: created by the URI callback, freed when MHD reports the
 * request completed (also on aborted connections). */
struct gw_http_req {
    struct gw_http *h;
    struct MHD_Connection *conn;
    char *uri;                    /* owned raw request target "path?query" */
    int started;                  /* first access-handler call seen */
    int method;                   /* enum gw_method */
    const char *path;             /* decoded path (MHD's, valid during the request) */
    const struct gw_route *route;
    struct gw_buf body;
    int early_status;             /* non-zero: answer decided before the body */
    char early_msg[160];
    uint64_t body_bytes_seen;
    uint64_t t0_ns;               /* request start (gw_mono_ns) */
    int rw_version;               /* remote write: 1 or 2 once the Content-Type is known */
    int admin_authed;             /* admin credentials were required and given */
    struct gw_params params;      /* filled before the route handler runs */
    uint64_t body_reserved;       /* body bytes counted in h->inflight_body_bytes */
    int answered_early;           /* the answer was queued before the body */
    int retry_after_s;            /* > 0: the early answer carries Retry-After */
};

/* What a route answers; the server turns it into an MHD response. */
#define GW_RESP_MAX_HEADERS 6
struct gw_http_resp {
    unsigned status;
    const char *content_type;     /* static string */
    const char *content_encoding; /* static string or NULL */
    struct gw_buf body;
    struct { const char *name; char value[160]; } headers[GW_RESP_MAX_HEADERS];
    unsigned n_headers;
};

/* Request header lookup (case-insensitive name), NULL if absent. */
const char *gw_http_header(const struct gw_http_req *rq, const char *name);

void gw_resp_header(struct gw_http_resp *rs, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Plain-text answer "<msg>\n". */
void gw_resp_text(struct gw_http_resp *rs, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prometheus JSON error envelope; status from the errorType. */
void gw_resp_api_error(struct gw_http_resp *rs, const char *error_type, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* HTTP status of a Prometheus errorType. */
unsigned gw_api_error_status(const char *error_type);

/* Route table (routes.c). early() runs at the first handler call, with the
 * headers known and no body yet: it may set rq->early_status. */
typedef void (*gw_route_fn)(struct gw_http_req *rq, struct gw_http_resp *rs);
struct gw_route {
    enum gw_route_id id;
    const char *name;             /* for /metrics */
    const char *path;             /* exact path, or prefix for label values */
    int methods;                  /* allowed methods mask */
    const char *allow;            /* Allow header on 405 */
    int api;                      /* 1: errors use the JSON envelope */
    int form;                     /* 1: form-encoded POST bodies are params */
    void (*early)(struct gw_http_req *rq);
    gw_route_fn fn;
};
/* 1: the route answers without the database (during the WAL replay); 0:
 * 503 "starting: WAL replay N%" until the server has it. */
int gw_route_no_db(enum gw_route_id id);
/* Build information, generated at build time (cmake/buildinfo.cmake). */
extern const char gw_build_revision[], gw_build_branch[], gw_build_user[], gw_build_date[], gw_build_compiler[];
/* api_metrics.c: the process' start time (Unix ms) from /proc. */
int64_t gw_process_start_ms(void);
/* The route's path for labels ("other" for GW_R_NOT_FOUND). */
const char *gw_route_name(enum gw_route_id id);
const struct gw_route *gw_route_find(const char *path);
/* Runs the route (method check, params, handler) for a request whose body
 * is complete. */
void gw_route_dispatch(struct gw_http_req *rq, struct gw_http_resp *rs);
void gw_http_count(struct gw_http *h, enum gw_route_id id, unsigned status);

/* limits.c: defaults (limits.h fields), and the server's copy of the
 * given limits (0 = default, values past a hard cap clamped to it) with
 * its slots; teardown frees them. */
#define GW_HTTP_QUEUE_WAIT_MS 500
#define GW_HTTP_MAX_INFLIGHT_BODY ((size_t)256 << 20)
void gw_http_limits_default(struct gw_http_limits *l);
void gw_http_limits_setup(struct gw_http *h, const struct gw_http_limits *given);
void gw_http_limits_teardown(struct gw_http *h);
/* limits.c: the limit checks of one request. At the first call (headers
 * known): a declared Content-Length over the body limit (413) or too big
 * to fit next to the bodies held now (503); 1 when that answer must be
 * sent at once instead of after the body. */
int gw_http_limits_headers(struct gw_http_req *rq, unsigned long long declared, int have_declared);
/* Counts the body bytes that arrived (rq->body_bytes_seen) against the
 * in-flight budget: 0, or -1 with early_status set (503). */
int gw_http_limits_body(struct gw_http_req *rq);
/* Gives back the request's body budget (when it is freed). */
void gw_http_limits_release(struct gw_http_req *rq);
/* Runs the route under its concurrency slot (writes, queries) or answers
 * 503 with Retry-After when the slots stayed full. */
void gw_http_limits_dispatch(struct gw_http_req *rq, struct gw_http_resp *rs);
/* Remote write: refuses the series of req over the label limits (their
 * samples are dropped from req and counted in res, the first one named in
 * res->first_invalid) and answers 413 when req has more series than the
 * limit: 0, or -1 after answering. */
struct gw_rw_request;
int gw_http_write_limits(struct gw_http_req *rq, struct gw_http_resp *rs, struct gw_rw_request *req,
                         struct gw_append_result *res);
/* Adds the series refused by the limits (over) to the store's result. */
void gw_http_write_limits_merge(struct gw_append_result *res, const struct gw_append_result *over);

/* Route handlers. */
void gw_api_write_early(struct gw_http_req *rq);
void gw_api_write(struct gw_http_req *rq, struct gw_http_resp *rs);
void gw_api_read_early(struct gw_http_req *rq);
void gw_api_read(struct gw_http_req *rq, struct gw_http_resp *rs);
void gw_api_query(struct gw_http_req *rq, struct gw_http_resp *rs);
void gw_api_query_range(struct gw_http_req *rq, struct gw_http_resp *rs);
void gw_api_series(struct gw_http_req *rq, struct gw_http_resp *rs);
void gw_api_labels(struct gw_http_req *rq, struct gw_http_resp *rs);
void gw_api_label_values(struct gw_http_req *rq, struct gw_http_resp *rs);
void gw_api_metadata(struct gw_http_req *rq, struct gw_http_resp *rs);
/* api_format.c: /api/v1/format_query. */
void gw_api_format_query(struct gw_http_req *rq, struct gw_http_resp *rs);
/* api_admin.c: maintenance, loopback clients only. */
void gw_api_admin_retention(struct gw_http_req *rq, struct gw_http_resp *rs);
void gw_api_admin_flush(struct gw_http_req *rq, struct gw_http_resp *rs);
void gw_api_admin_compact(struct gw_http_req *rq, struct gw_http_resp *rs);
void gw_api_admin_backup(struct gw_http_req *rq, struct gw_http_resp *rs);
void gw_api_admin_downsample(struct gw_http_req *rq, struct gw_http_resp *rs);
/* api_alerts.c: /api/v1/alerts and /api/v1/rules. */
void gw_api_alerts(struct gw_http_req *rq, struct gw_http_resp *rs);
void gw_api_rules(struct gw_http_req *rq, struct gw_http_resp *rs);
void gw_api_checkpoints(struct gw_http_req *rq, struct gw_http_resp *rs);
/* params.c: the time parameter `name` (RFC 3339 or Unix seconds) into
 * *out, def when absent or empty; 0, or -1 after answering 400 naming it. */
int gw_http_time_param(struct gw_http_req *rq, struct gw_http_resp *rs, const char *name, int64_t def,
                       int64_t *out);

/* api_events.c: POST and GET /api/v1/events (scheduler events, ledger.h). */
void gw_api_events(struct gw_http_req *rq, struct gw_http_resp *rs);
/* api_ledger.c: GET /api/v1/sessions and /api/v1/exclusions (the node ledger). */
void gw_api_sessions(struct gw_http_req *rq, struct gw_http_resp *rs);
void gw_api_exclusions(struct gw_http_req *rq, struct gw_http_resp *rs);
/* ui.c: GET / and /ui/<file>, the built-in status page (ui_int.h). */
void gw_http_ui(struct gw_http_req *rq, struct gw_http_resp *rs);

/* api_metrics.c: /metrics. */
void gw_api_metrics(struct gw_http_req *rq, struct gw_http_resp *rs);
/* api_status.c: /api/v1/status/{buildinfo,runtimeinfo,flags,config,tsdb,
 * walreplay}, POST /-/reload, and /-/ready's startup answer. */
void gw_api_buildinfo(struct gw_http_req *rq, struct gw_http_resp *rs);
void gw_api_runtimeinfo(struct gw_http_req *rq, struct gw_http_resp *rs);
void gw_api_flags(struct gw_http_req *rq, struct gw_http_resp *rs);
void gw_api_config(struct gw_http_req *rq, struct gw_http_resp *rs);
void gw_api_tsdb(struct gw_http_req *rq, struct gw_http_resp *rs);
void gw_api_walreplay(struct gw_http_req *rq, struct gw_http_resp *rs);
void gw_api_reload(struct gw_http_req *rq, struct gw_http_resp *rs);
/* "starting: WAL replay 45%" (or "starting") into msg. */
void gw_http_starting_msg(struct gw_http *h, char *msg, size_t cap);
/* api_admin.c: 1 when the client is on a loopback address. */
int gw_http_is_loopback(struct gw_http_req *rq);

/* ---- authentication and TLS (auth.c, tls.c; docs/security.md) ---- */
/* Which credentials a route needs. */
enum gw_auth_class { GW_AUTH_OPEN = 0, GW_AUTH_WRITE, GW_AUTH_READ, GW_AUTH_ADMIN };
/* routes.c: the class of a request to route r (NULL: an unknown path,
 * read) with method (enum gw_method); metrics_open puts /metrics in
 * GW_AUTH_OPEN. /-/healthy and /-/ready are always open. */
enum gw_auth_class gw_route_auth_class(const struct gw_route *r, int method, int metrics_open);
/* The class' name ("write", "read", "admin", "open"). */
const char *gw_auth_class_name(enum gw_auth_class c);

/* Constant-time equality of two n-byte strings (time independent of where
 * they differ). 1 equal, 0 not. */
int gw_ct_equal(const void *a, const void *b, size_t n);
/* Credentials of the three classes, read from the files of sec (paths
 * copied). GW_OK; GW_EINVAL / GW_EIO naming the file and line. */
int gw_auth_new(struct gw_auth **out, const struct gw_http_security *sec, struct gw_error *err);
/* Reads every file again; on an error the credentials in use stay. */
int gw_auth_reload(struct gw_auth *a, struct gw_error *err);
void gw_auth_free(struct gw_auth *a);   /* NULL ok */
/* 1 when class c has credentials configured. */
int gw_auth_configured(struct gw_auth *a, enum gw_auth_class c);
/* Checks an Authorization header value (NULL: none) for class c: 0 when
 * accepted (or c is not configured), else 401 with the reason in msg. */
int gw_auth_check(struct gw_auth *a, enum gw_auth_class c, const char *authorization, char *msg, size_t cap);
/* The WWW-Authenticate challenges of class c ("Basic ...", "Bearer ...");
 * returns how many were written (0..2). */
int gw_auth_challenges(struct gw_auth *a, enum gw_auth_class c, char out[2][96]);
/* server.c's hook, with the headers known: decides the request's class,
 * checks the client certificate and the credentials; on a refusal sets
 * rq->early_status (401 or 403) and early_msg and returns 1. */
int gw_http_auth_request(struct gw_http_req *rq);
/* The WWW-Authenticate headers of a 401 to rq. */
void gw_http_auth_challenge(struct gw_http_req *rq, struct gw_http_resp *rs);

/* tls.c: the server's certificate, key and client CAs, reloadable. */
int gw_tls_new(struct gw_tls **out, const struct gw_http_security *sec, struct gw_error *err);
int gw_tls_reload(struct gw_tls *t, struct gw_error *err);
void gw_tls_free(struct gw_tls *t);   /* NULL ok */
/* The PEM of the client CAs (for MHD to request a client certificate),
 * NULL when none; valid until gw_tls_free. */
const char *gw_tls_client_ca_pem(const struct gw_tls *t);
/* The certificate callback (gnutls_certificate_retrieve_function2) serving
 * the current certificate of the one TLS server of the process. */
void *gw_tls_cert_callback(void);
/* 0 when the connection's client certificate verifies against the client
 * CAs (or none are configured), else -1 with the reason in msg. */
int gw_tls_verify_client(struct gw_tls *t, struct MHD_Connection *conn, char *msg, size_t cap);

/* Output buffers for JSON answers. */
#define GW_HTTP_MAX_RESPONSE ((size_t)1 << 30)
/* Query sample limit (Prometheus --query.max-samples). */
#define GW_QUERY_MAX_SAMPLES 50000000u
#define GW_QUERY_MAX_POINTS 11000
/* Query defaults (Prometheus --query.lookback-delta, --query.timeout). */
#define GW_QUERY_LOOKBACK_MS (5 * 60 * 1000)
#define GW_QUERY_TIMEOUT_MS (2 * 60 * 1000)

#endif /* GW_HTTP_INT_H */
