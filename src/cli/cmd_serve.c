/* cmd_serve.c - `gpuwatch serve`: the receiver, store, query API, alerts
 * and detectors in one process.
 *
 * Phases, each a function over one struct serve:
 *   serve_parse   options into the db, http, alert and detector settings;
 *   serve_open    data dir, alert log (active alerts reloaded), detectors
 *                 over it (their saved state);
 *   serve_http    the HTTP server, without a database yet: /-/healthy,
 *                 /-/ready (503 with the replay's progress), /metrics and
 *                 the status API answer, the rest 503 "starting";
 *   serve_open_db the database, whose WAL replay feeds the detectors, then
 *                 handed to the HTTP server;
 *   serve_start   Alertmanager notifier, the serve-alerts thread,
 *                 DIR/serve.addr, ready;
 *   serve_wait    SIGHUP reloads --config.file; SIGINT or SIGTERM ends the
 *                 wait (all blocked in every thread, sigwait here);
 *   serve_stop    the one cleanup path: whatever was started, in reverse
 *                 order, on success and on every failure alike. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpuwatch/alert.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/db.h"
#include "gpuwatch/detect.h"
#include "gpuwatch/exemplars.h"
#include "gpuwatch/forward.h"
#include "gpuwatch/http.h"
#include "gpuwatch/ledger.h"
#include "gpuwatch/httpc.h"
#include "gpuwatch/log.h"
#include "cli.h"
#include "cli_ds.h"
#include "cli_parse.h"
#include "serve_alerts.h"
#include "serve_compact.h"

#define SERVE_DEFAULT_LISTEN "127.0.0.1:9201"

struct serve {
    /* options */
    struct gw_db_opts dbo;
    struct gw_http_opts ho;
    const char *am_urls[GW_NOTIFY_MAX_URLS];
    int n_am;
    struct gw_httpc_tls am_tls;    /* --alertmanager.tls.* */
    struct gw_httpc_auth am_auth;  /* --alertmanager.bearer-token-file, --alertmanager.basic-auth.* */
    const char *external_url, *det_config;
    int print_det_config;
    int no_detectors;
    const char *log_level;         /* as given, for the flags listing */
    struct gw_det_config dc;
    struct gw_compact_sched csched;  /* --compact.schedule */
    struct gw_db_replay_state replay;  /* WAL replay progress, read by the HTTP server */
    pthread_mutex_t reload_mu;     /* one configuration reload at a time (SIGHUP, /-/reload) */
    /* running state, released by serve_stop */
    sigset_t sigs;                 /* SIGTERM, SIGINT, SIGHUP: blocked, taken by sigwait */
    uint64_t t0;                   /* start of serve_open */
    char state_path[4096];         /* DIR/detect.state */
    char ext[512];                 /* the default --web.external-url */
    struct gw_db_observer ob;
    struct gw_alerts *alerts;
    struct gw_det *det;
    struct gw_db *db;
    struct gw_http *h;
    struct gw_serve_alerts *sa;
    struct gw_serve_compact *sc;   /* the compaction thread (NULL: off) */
    struct gw_kv *ckv;             /* DIR/checkpoints/: D7's checkpoint events */
    struct gw_led_events *events;  /* DIR/events/: scheduler events (POST /api/v1/events) */
    int addr_written;              /* DIR/serve.addr exists */
    uint64_t max_exemplars;        /* --storage.exemplars.max-exemplars */
    struct gw_exemplars *ex;       /* the exemplar store (in memory) */
    struct gw_cli_ds ds;           /* downsampling options (cmd_downsample.c) */
    struct gw_cli_ds_thread *dst;  /* and its thread */
    struct gw_fwd_opts fwdo;       /* --forward.* (one block below) */
    struct gw_fwd *fwd;            /* forwarding (NULL: none) */
    struct gw_error err;
};

static void write_serve_file(const char *dir, const char *listen, uint16_t port)
{
    char path[4096], tmp[4096], host[256];
    snprintf(host, sizeof host, "%s", listen);
    char *colon = strrchr(host, ':');
    if (colon) *colon = '\0';
    if (!host[0] || !strcmp(host, "0.0.0.0")) snprintf(host, sizeof host, "127.0.0.1");
    if (!strcmp(host, "[::]")) snprintf(host, sizeof host, "[::1]");
    snprintf(path, sizeof path, "%s/serve.addr", dir);
    snprintf(tmp, sizeof tmp, "%s/serve.addr.tmp", dir);
    FILE *f = fopen(tmp, "w");
    if (!f) return;
    fprintf(f, "%s:%u\n", host, port);
    fclose(f);
    rename(tmp, path);
}

/* The default generatorURL base: http[s]://<listen host or 127.0.0.1>:<port>. */
static void default_external_url(char *out, size_t cap, const char *listen, uint16_t port, int https)
{
    char host[256];
    snprintf(host, sizeof host, "%s", listen ? listen : "127.0.0.1");
    char *colon = strrchr(host, ':');
    if (colon && (host[0] != '[' || (colon > host && colon[-1] == ']'))) *colon = '\0';
    if (!host[0] || !strcmp(host, "0.0.0.0")) snprintf(host, sizeof host, "127.0.0.1");
    snprintf(out, cap, "%s://%s:%u", https ? "https" : "http", host, port);
}

static const char *serve_listen(const struct serve *s)
{
    return s->ho.listen ? s->ho.listen : SERVE_DEFAULT_LISTEN;
}

static int serve_log_level(void *base, const char *v)
{
    static const char *const names[] = {"debug", "info", "warn", "error"};
    static const int levels[] = {GW_LOG_DEBUG, GW_LOG_INFO, GW_LOG_WARN, GW_LOG_ERROR};
    struct serve *s = base;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(v, names[i])) {
            gw_log_min_level = levels[i];
            s->log_level = names[i];
            return 0;
        }
    return -1;
}

static int serve_external_url(void *base, const char *v)
{
    struct serve *s = base;
    if (strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0)
        return -1;
    s->external_url = v;
    return 0;
}

static int serve_retention_size(void *p, const char *v)
{
    uint64_t *bytes = p;
    return gw_parse_size_bytes(v, bytes) == GW_OK && *bytes > 0 ? 0 : -1;
}

static int serve_compact_schedule(void *p, const char *v)
{
    return gw_compact_sched_parse(v, p);
}

/* ---- forwarding (--forward and its per-destination flags, which apply to
 * the --forward given last before them) ---- */

static int fwd_add(void *p, const char *v)
{
    struct gw_fwd_opts *o = p;
    if (o->n_dests == GW_FWD_MAX_DESTS) return -1;
    gw_fwd_dest_opts_default(&o->dests[o->n_dests]);
    o->dests[o->n_dests++].url = v;
    return 0;
}

static struct gw_fwd_dest_opts *fwd_last(void *p)
{
    struct gw_fwd_opts *o = p;
    return o->n_dests ? &o->dests[o->n_dests - 1] : NULL;
}

static int fwd_header(void *p, const char *v)
{
    struct gw_fwd_dest_opts *d = fwd_last(p);
    if (!d || d->n_headers == GW_FWD_MAX_HEADERS || !strchr(v, ':')) return -1;
    d->headers[d->n_headers++] = v;
    return 0;
}

static int fwd_protocol(void *p, const char *v)
{
    struct gw_fwd_dest_opts *d = fwd_last(p);
    if (!d || (strcmp(v, "1") && strcmp(v, "2"))) return -1;
    d->protocol = v[0] - '0';
    return 0;
}

static int fwd_batch(void *p, const char *v)
{
    struct gw_fwd_dest_opts *d = fwd_last(p);
    char *end;
    unsigned long n = d ? strtoul(v, &end, 10) : 0;
    if (!d || v[0] < '0' || v[0] > '9' || *end || n < 1 || n > 100000) return -1;
    d->batch_samples = (uint32_t)n;
    return 0;
}

static int fwd_max_pending(void *p, const char *v)
{
    struct gw_fwd_dest_opts *d = fwd_last(p);
    return d && gw_parse_size_bytes(v, &d->max_pending_bytes) == GW_OK && d->max_pending_bytes > 0 ? 0 : -1;
}

/* --forward.tls.* and credentials: one setter per field of the last
 * destination's httpc options (a flag when v is NULL). */
#define FWD_HTTP_SETTER(fn, member)                       \
    static int fn(void *p, const char *v)                 \
    {                                                     \
        struct gw_fwd_dest_opts *d = fwd_last(p);         \
        if (!d || (v && v[0] == '\0')) return -1;         \
        d->http.member = v;                               \
        return 0;                                         \
    }
FWD_HTTP_SETTER(fwd_tls_ca, tls.ca_file)
FWD_HTTP_SETTER(fwd_tls_cert, tls.cert_file)
FWD_HTTP_SETTER(fwd_tls_key, tls.key_file)
FWD_HTTP_SETTER(fwd_tls_name, tls.server_name)
FWD_HTTP_SETTER(fwd_bearer_file, auth.bearer_token_file)
FWD_HTTP_SETTER(fwd_basic_user, auth.username)
FWD_HTTP_SETTER(fwd_basic_pw_file, auth.password_file)

static int fwd_tls_insecure(void *p, const char *v)
{
    struct gw_fwd_dest_opts *d = fwd_last(p);
    (void)v;
    if (!d) return -1;
    d->http.tls.insecure_skip_verify = 1;
    return 0;
}

#define FWD_AFTER " after a --forward URL"
static const struct gw_cli_opt serve_fwd_opts[] = {
    {.help = "\nforwarding to remote-write destinations (docs/operations.md \"Forwarding\"):"},
    {.name = "--forward", .arg = "URL", .type = GW_CLI_CALL, .set = fwd_add,
     .expect = "an http(s) remote-write URL, at most 8 of them",
     .help = "send every accepted sample on to this remote-write endpoint,\n"
             "read back from the WAL (repeatable, up to 8); the flags below\n"
             "apply to the --forward given last before them"},
    {.name = "--forward.header", .arg = "'NAME: VALUE'", .type = GW_CLI_CALL, .set = fwd_header,
     .expect = "\"Name: value\" (at most 16)" FWD_AFTER,
     .help = "an HTTP header sent with every request (repeatable)"},
    {.name = "--forward.protocol", .arg = "1|2", .type = GW_CLI_CALL, .set = fwd_protocol,
     .expect = "1 or 2" FWD_AFTER,
     .help = "remote write version (default 1; 2: remote write 2.0, one TimeSeries per series per batch)"},
    {.name = "--forward.batch-size", .arg = "N", .type = GW_CLI_CALL, .set = fwd_batch,
     .expect = "1 to 100000" FWD_AFTER,
     .help = "samples per request (default 2000)"},
    {.name = "--forward.max-pending", .arg = "SIZE", .type = GW_CLI_CALL, .set = fwd_max_pending,
     .expect = "a size such as 10GB" FWD_AFTER,
     .help = "WAL kept for a destination that is behind (default 10GiB);\n"
             "past it its oldest segments are released and their samples\n"
             "counted in gpuwatch_forward_samples_dropped_total"},
#define FWD_FILE(opt, fn, text) \
    {.name = (opt), .arg = "FILE", .type = GW_CLI_CALL, .set = (fn), .expect = "a file name" FWD_AFTER, .help = (text)}
    FWD_FILE("--forward.tls.ca-file", fwd_tls_ca, "verify the destination's https certificate with these CAs"),
    FWD_FILE("--forward.tls.cert-file", fwd_tls_cert, "client certificate for the destination (with key)"),
    FWD_FILE("--forward.tls.key-file", fwd_tls_key, "its private key"),
    {.name = "--forward.tls.server-name", .arg = "NAME", .type = GW_CLI_CALL, .set = fwd_tls_name,
     .expect = "a host name" FWD_AFTER, .help = "the name the destination's certificate must carry"},
    {.name = "--forward.tls.insecure-skip-verify", .type = GW_CLI_CALL, .set = fwd_tls_insecure,
     .expect = "given" FWD_AFTER, .help = "do not verify the destination's certificate (tests only)"},
    FWD_FILE("--forward.bearer-token-file", fwd_bearer_file,
             "send \"Authorization: Bearer <the file's token>\" (re-read\n"
             "at every request), as Prometheus' authorization.credentials_file"),
    {.name = "--forward.basic-auth.username", .arg = "USER", .type = GW_CLI_CALL, .set = fwd_basic_user,
     .expect = "a user name" FWD_AFTER, .help = "basic authentication towards the destination ..."},
    FWD_FILE("--forward.basic-auth.password-file", fwd_basic_pw_file, "... with the password in FILE"),
#undef FWD_FILE
    {.name = "--forward.include-internal", .type = GW_CLI_FLAG, GW_CLI_AT(struct gw_fwd_opts, include_internal),
     .help = "also forward the series serve writes itself (ALERTS,\n"
             "gpuwatch_checkpoint_*, gpuwatch_node_activity)"},
    {0},
};

/* The outgoing TLS and credential flags under prefix (--alertmanager,
 * --forward) are consistent: 0, or 2 with the usage error printed. */
static int client_tls_auth_check(const struct gw_cli_cmd *cmd, const char *prefix, const struct gw_httpc_tls *tls, const struct gw_httpc_auth *auth)
{
    if ((tls->cert_file == NULL) != (tls->key_file == NULL))
        return gw_cli_usage_error(cmd, 0, "%s.tls.cert-file and %s.tls.key-file go together", prefix, prefix);
    if (auth->bearer_token_file && auth->username)
        return gw_cli_usage_error(cmd, 0, "%s.bearer-token-file and %s.basic-auth.* are mutually exclusive",
                                  prefix, prefix);
    if (!!auth->username != !!auth->password_file)
        return gw_cli_usage_error(cmd, 0, "%s.basic-auth.username and %s.basic-auth.password-file go together",
                                  prefix, prefix);
    return 0;
}

/* --forward settings checked (a usage error names the bad one); 0 or 2. */
static int serve_fwd_check(struct serve *s, const struct gw_cli_cmd *cmd)
{
    for (size_t i = 0; i < s->fwdo.n_dests; i++) {
        struct gw_error ferr = {0};
        if (gw_fwd_check_dest(&s->fwdo.dests[i], &ferr) != GW_OK)
            return gw_cli_usage_error(cmd, 0, "bad --forward %s: %s", s->fwdo.dests[i].url, ferr.msg);
        if (client_tls_auth_check(cmd, "--forward", &s->fwdo.dests[i].http.tls, &s->fwdo.dests[i].http.auth) != 0)
            return 2;
    }
    return s->fwdo.include_internal && !s->fwdo.n_dests
               ? gw_cli_usage_error(cmd, 0, "--forward.include-internal needs a --forward URL") : 0;
}

/* Before the database opens: cursors loaded, the WAL hold in place. 0 or 1. */
static int serve_fwd_open(struct serve *s)
{
    char wal[4096], state[4096];
    if (!s->fwdo.n_dests) return 0;
    snprintf(wal, sizeof wal, "%s/wal", s->dbo.dir);
    snprintf(state, sizeof state, "%s/forward", s->dbo.dir);
    s->fwdo.wal_dir = wal;
    s->fwdo.state_dir = state;
    if (gw_fwd_new(&s->fwd, &s->fwdo, &s->err) != GW_OK) {
        s->fwd = NULL;
        fprintf(stderr, "gpuwatch serve: cannot set up forwarding: %s\n", s->err.msg);
        return 1;
    }
    s->dbo.wal_hold = gw_fwd_hold;
    s->dbo.wal_hold_ud = s->fwd;
    return 0;
}

static int serve_fwd_labels(void *ud, uint64_t sid, struct gw_buf *out, struct gw_error *err)
{
    return gw_db_series_labels(ud, sid, out, err);
}

/* After the database opened: the sender threads. 0 or 1. */
static int serve_fwd_start(struct serve *s)
{
    if (!s->fwd) return 0;
    if (gw_fwd_start(s->fwd, serve_fwd_labels, s->db, &s->err) != GW_OK) {
        fprintf(stderr, "gpuwatch serve: cannot start forwarding: %s\n", s->err.msg);
        return 1;
    }
    gw_http_set_forward(s->h, s->fwd);
    return 0;
}

static const char *const fsync_names[] = {"always", "batch", "off", NULL};
static const int fsync_modes[] = {GW_FSYNC_ALWAYS, GW_FSYNC_BATCH, GW_FSYNC_OFF};

/* A FILE-valued string option stored at field of struct serve. */
#define SERVE_FILE(opt, field, text) \
    {.name = (opt), .arg = "FILE", .type = GW_CLI_STR, GW_CLI_AT(struct serve, field), .flags = GW_CLI_NONEMPTY, \
     .help = (text)}

static const struct gw_cli_opt serve_opts[] = {
    {.name = "--web.listen-address", .alias = "--listen", .arg = "ADDR", .type = GW_CLI_STR, GW_CLI_AT(struct serve, ho.listen),
     .help = "address to listen on (default 127.0.0.1:9201; ':PORT' for all interfaces)"},
    {.name = "--storage.path", .alias = "--data-dir", .arg = "DIR", .type = GW_CLI_STR, GW_CLI_AT(struct serve, dbo.dir),
     .help = "data directory (created if missing; one gpuwatch per dir)"},
    {.name = "--storage.retention.time", .alias = "--retention", .arg = "DUR", .type = GW_CLI_DUR, GW_CLI_AT(struct serve, dbo.retention_ms),
     .help = "keep this much history, e.g. 55d, 8w (default 55d)"},
    {.name = "--retention.time", .arg = "DUR", .type = GW_CLI_DUR, GW_CLI_AT(struct serve, dbo.retention_ms),
     .help = "the same as --retention"},
    {.name = "--storage.retention.size", .alias = "--retention.size", .arg = "SIZE", .type = GW_CLI_CALL, .set = serve_retention_size,
     GW_CLI_AT(struct serve, dbo.retention_bytes), .expect = "a size such as 500GB or 20GiB",
     .help = "also drop the oldest days while the store's pages in use\n"
             "exceed SIZE (500GB, 20GiB; default: no limit; checked every 10 min)"},
    {.name = "--compact.schedule", .arg = "SPEC", .type = GW_CLI_CALL, .set = serve_compact_schedule,
     GW_CLI_AT(struct serve, csched), .expect = "off, HH:MM (daily, UTC) or an interval of at least 1m",
     .help = "when to compact finished days on a background thread:\n"
             "HH:MM daily UTC, an interval like 24h, or off (default 03:00;\n"
             "see gpuwatch compact --help; the file copy runs only offline)"},
    {.name = "--storage.wal.fsync", .alias = "--fsync", .arg = "MODE", .type = GW_CLI_CHOICE, GW_CLI_AT(struct serve, dbo.fsync),
     .choices = fsync_names, .values = fsync_modes,
     .help = "always: fsync the WAL before answering (survives power loss)\n"
             "batch:  write before answering, fsync every 100 ms (default;\n"
             "        survives a crash of gpuwatch; a power cut loses at\n"
             "        most the last 100 ms, never the store)\n"
             "off:    write before answering, never fsync explicitly"},
    {.name = "--storage.exemplars.max-exemplars", .arg = "N", .type = GW_CLI_UINT,
     GW_CLI_AT(struct serve, max_exemplars), .min = 0, .max = GW_EXEMPLARS_MAX_CAP,
     .help = "exemplars kept in memory from remote write, served by\n"
             "/api/v1/query_exemplars (default 100000; 0: keep none;\n"
             "lost at restart, like Prometheus')"},
    {.name = "--web.threads", .alias = "--threads", .arg = "N", .type = GW_CLI_UINT, GW_CLI_AT(struct serve, ho.threads), .min = 1,
     .max = 256, .help = "HTTP worker threads (default 4)"},
    {.name = "--web.max-body-bytes", .alias = "--max-body-bytes", .arg = "N", .type = GW_CLI_UINT, GW_CLI_AT(struct serve, ho.max_body_bytes),
     .min = 1024, .max = 1u << 30, .help = "largest accepted request body (default 33554432)"},
    {.name = "--log.level", .alias = "--log-level", .arg = "LEVEL", .type = GW_CLI_CALL, .set = serve_log_level,
     .expect = "debug, info, warn or error", .help = "debug, info, warn or error (default info)"},
    {.name = "--query.promql-compat", .alias = "--promql-compat", .arg = "N", .type = GW_CLI_UINT, GW_CLI_AT(struct serve, ho.promql_compat),
     .min = 2, .max = 3,
     .help = "3: Prometheus 3 range and lookback windows (t-r, t] (default);\n"
             "2: Prometheus 2.42's closed windows [t-r, t], its function set\n"
             "(holt_winters) and its numeric quirks"},
    {.name = "--query.lookback-delta", .arg = "DUR", .type = GW_CLI_DUR, GW_CLI_AT(struct serve, ho.lookback_ms),
     .help = "how far back a selector looks for a sample (default 5m)"},
    {.name = "--query.timeout", .arg = "DUR", .type = GW_CLI_DUR, GW_CLI_AT(struct serve, ho.query_timeout_ms),
     .help = "longest evaluation of one query (default 2m)"},
    {.name = "--query.max-samples", .arg = "N", .type = GW_CLI_UINT,
     GW_CLI_AT(struct serve, ho.query_max_samples), .min = 1, .max = UINT64_C(1) << 40,
     .help = "samples one query may hold in memory (default 50000000)"},
    {.help = "\nauthentication and TLS (docs/security.md):"},
    SERVE_FILE("--web.auth.write.bearer-token-file", ho.sec.write.bearer_token_file,
               "remote write and POST /api/v1/events need one of the tokens\n"
               "in FILE (one a line) as \"Authorization: Bearer TOKEN\""),
    SERVE_FILE("--web.auth.write.basic-auth-file", ho.sec.write.basic_auth_file,
               "... or basic credentials from FILE: \"user:password\" or\n"
               "\"user:sha256:<hex of SHA-256(password)>\" lines"),
    SERVE_FILE("--web.auth.read.bearer-token-file", ho.sec.read.bearer_token_file,
               "the same for queries, remote read, series/labels/metadata,\n"
               "status, alerts, the status page and /metrics"),
    SERVE_FILE("--web.auth.read.basic-auth-file", ho.sec.read.basic_auth_file, "basic credentials for the same"),
    SERVE_FILE("--web.auth.admin.bearer-token-file", ho.sec.admin.bearer_token_file,
               "the same for /api/v1/admin/* and /-/reload (which then answer\n"
               "any client with the credentials; without: loopback only)"),
    SERVE_FILE("--web.auth.admin.basic-auth-file", ho.sec.admin.basic_auth_file, "basic credentials for the same"),
    {.name = "--web.auth.metrics-open", .type = GW_CLI_FLAG, GW_CLI_AT(struct serve, ho.sec.metrics_open),
     .help = "/metrics needs no credentials (/-/healthy and /-/ready never do);\n"
             "credential files are re-read on SIGHUP and POST /-/reload"},
    SERVE_FILE("--web.tls.cert-file", ho.sec.tls_cert_file,
               "serve https with this PEM certificate (chain); reloaded\n"
               "with the key on SIGHUP and POST /-/reload, no restart"),
    SERVE_FILE("--web.tls.key-file", ho.sec.tls_key_file, "its PEM private key"),
    SERVE_FILE("--web.tls.client-ca-file", ho.sec.tls_client_ca_file,
               "require a client certificate signed by these PEM CAs\n"
               "(403 otherwise, except /-/healthy and /-/ready)"),
    {.help = "\nlimits, each with its answer (docs/limits.md):"},
    {.name = "--limits.write.max-decoded-bytes", .arg = "N", .type = GW_CLI_UINT,
     GW_CLI_AT(struct serve, ho.limits.max_decoded_bytes), .min = 1024, .max = 32u << 20,
     .help = "largest remote-write body after snappy (default and most\n33554432; 400 past it)"},
    {.name = "--limits.write.max-series-per-request", .arg = "N", .type = GW_CLI_UINT,
     GW_CLI_AT(struct serve, ho.limits.max_series_per_request), .max = UINT64_C(1) << 32,
     .help = "series in one remote write (default 0: no limit; 413 past it)"},
    {.name = "--limits.series.max-labels", .arg = "N", .type = GW_CLI_UINT,
     GW_CLI_AT(struct serve, ho.limits.max_labels), .min = 1, .max = 128,
     .help = "labels per series, like Prometheus' label_limit (default and\n"
             "most 128; the series is refused and named in a 400, the\n"
             "valid series of the request are stored)"},
    {.name = "--limits.label.max-name-length", .arg = "N", .type = GW_CLI_UINT,
     GW_CLI_AT(struct serve, ho.limits.max_label_name_len), .min = 1, .max = 256,
     .help = "bytes per label name (default and most 256; answered like\n--limits.series.max-labels)"},
    {.name = "--limits.label.max-value-length", .arg = "N", .type = GW_CLI_UINT,
     GW_CLI_AT(struct serve, ho.limits.max_label_value_len), .min = 1, .max = 65536,
     .help = "bytes per label value (default and most 65536; answered like\n--limits.series.max-labels)"},
    {.name = "--limits.http.max-concurrent-writes", .arg = "N", .type = GW_CLI_UINT,
     GW_CLI_AT(struct serve, ho.limits.max_concurrent_writes), .max = 4096,
     .help = "remote writes handled at once (default 0: up to --web.threads);\n"
             "more wait up to --limits.http.queue-wait, then 503 + Retry-After"},
    {.name = "--limits.query.max-concurrent", .arg = "N", .type = GW_CLI_UINT,
     GW_CLI_AT(struct serve, ho.limits.max_concurrent_queries), .max = 4096,
     .help = "queries and remote reads evaluated at once (default 0: up to\n"
             "--web.threads); more wait, then 503 + Retry-After"},
    {.name = "--limits.http.queue-wait", .arg = "DUR", .type = GW_CLI_DUR,
     GW_CLI_AT(struct serve, ho.limits.queue_wait_ms), .min = 1, .max = 60000,
     .help = "how long a write or query waits for a free slot (default 500ms)"},
    {.name = "--limits.http.max-inflight-body-bytes", .arg = "N", .type = GW_CLI_UINT,
     GW_CLI_AT(struct serve, ho.limits.max_inflight_body_bytes), .min = 1u << 20, .max = UINT64_C(1) << 40,
     .help = "request bodies held in memory at once, over all connections\n"
             "(default 268435456); past it 503 + Retry-After, at once when\n"
             "the Content-Length says so"},
    {.name = "--limits.query.max-memory-bytes", .arg = "N", .type = GW_CLI_UINT,
     GW_CLI_AT(struct serve, ho.limits.query_max_memory_bytes), .min = 4u << 20, .max = UINT64_C(1) << 40,
     .help = "working memory of one query (default 32 bytes x\n--query.max-samples; 422 past it)"},
    {.help = "\ndownsampling (docs/downsampling.md):"},
    {.type = GW_CLI_TABLE, .sub = gw_cli_ds_serve_opts, GW_CLI_AT(struct serve, ds)},
    {.type = GW_CLI_TABLE, .sub = serve_fwd_opts, GW_CLI_AT(struct serve, fwdo)},
    {.help = "\nfailure detection and alerts (docs/alerts.md):"},
    {.name = "--alertmanager.url", .alias = "--alertmanager", .arg = "URL", .type = GW_CLI_STRS, GW_CLI_AT(struct serve, am_urls),
     GW_CLI_SEEN(struct serve, n_am),
     .help = "send alerts to this Alertmanager (API v2, e.g. http://127.0.0.1:9093);\n"
             "repeatable, up to 8; firing alerts are resent every minute"},
    {.name = "--web.external-url", .arg = "URL", .type = GW_CLI_CALL, .set = serve_external_url,
     .expect = "must start with http:// or https://",
     .help = "base of the generatorURL of sent alerts\n(default http[s]://<listen address>)"},
    SERVE_FILE("--alertmanager.tls.ca-file", am_tls.ca_file, "verify Alertmanager's https certificate with these CAs"),
    SERVE_FILE("--alertmanager.tls.cert-file", am_tls.cert_file, "client certificate for Alertmanager (with key)"),
    SERVE_FILE("--alertmanager.tls.key-file", am_tls.key_file, "its private key"),
    {.name = "--alertmanager.tls.server-name", .arg = "NAME", .type = GW_CLI_STR, .flags = GW_CLI_NONEMPTY,
     GW_CLI_AT(struct serve, am_tls.server_name), .help = "name expected in Alertmanager's certificate"},
    {.name = "--alertmanager.tls.insecure-skip-verify", .type = GW_CLI_FLAG,
     GW_CLI_AT(struct serve, am_tls.insecure_skip_verify), .help = "do not verify Alertmanager's certificate"},
    SERVE_FILE("--alertmanager.bearer-token-file", am_auth.bearer_token_file,
               "send \"Authorization: Bearer <FILE's content>\" (read\n"
               "at every request)"),
    {.name = "--alertmanager.basic-auth.username", .arg = "USER", .type = GW_CLI_STR, .flags = GW_CLI_NONEMPTY,
     GW_CLI_AT(struct serve, am_auth.username), .help = "basic authentication user name ..."},
    SERVE_FILE("--alertmanager.basic-auth.password-file", am_auth.password_file,
               "... and the file holding its password (read at every request)"),
    {.name = "--config.file", .alias = "--detector-config", .arg = "FILE", .type = GW_CLI_STR, GW_CLI_AT(struct serve, det_config),
     .help = "detector thresholds (\"key = value\" lines over the defaults,\n"
             "see docs/detectors.md); a bad file exits with status 2;\n"
             "reloaded on SIGHUP and POST /-/reload (a bad file is refused\n"
             "and the running configuration kept)"},
    {.name = "--detector.disable", .alias = "--no-detectors", .type = GW_CLI_FLAG, GW_CLI_AT(struct serve, no_detectors),
     .help = "store and serve only: run no detector (alerts reloaded from\nthe alert log are still reported)"},
    {.name = "--config.print", .alias = "--print-detector-config", .type = GW_CLI_FLAG, GW_CLI_AT(struct serve, print_det_config),
     .help = "print every detector threshold with its meaning (the\n"
             "defaults, or --detector-config's values) and exit"},
    {0},
};

static const struct gw_cli_cmd serve_cmd = {
    .name = "serve",
    .synopsis = "--storage.path DIR [options]",
    .opts = serve_opts,
    .outro = "Alerts are served at /api/v1/alerts and /api/v1/rules, written back as ALERTS series,\n"
             "and logged in DIR/alerts/; checkpoint events (D7) are kept in DIR/checkpoints/, served\n"
             "at /api/v1/checkpoints and written back as gpuwatch_checkpoint_* series; the detector\n"
             "state is saved to DIR/detect.state every 5 minutes and at shutdown. D8's node activity\n"
             "is written back as gpuwatch_node_activity; scheduler events posted to /api/v1/events are\n"
             "kept in DIR/events/; /api/v1/sessions and /api/v1/exclusions serve the node ledger\n"
             "(docs/ledger.md).\n",
};

/* Options into s. -1 to go on, else the exit status (0 after --help, 2:
 * a usage error). */
static int serve_parse(struct serve *s, int argc, char **argv)
{
    gw_db_opts_default(&s->dbo);
    s->dbo.background = 1;
    gw_compact_sched_parse(GW_COMPACT_SCHED_DEFAULT, &s->csched);
    gw_http_opts_default(&s->ho);   /* fields it leaves alone stay 0 (default) */
    s->max_exemplars = GW_EXEMPLARS_DEFAULT_CAP;
    gw_cli_ds_default(&s->ds);
    int rc = gw_cli_parse(&serve_cmd, argc, argv, s);
    if (rc >= 0)
        return rc;
    if ((rc = serve_fwd_check(s, &serve_cmd)) != 0)
        return rc;
    for (int i = 0; i < s->n_am; i++) {
        struct gw_url u;
        struct gw_error uerr = {0};
        if (gw_url_parse(s->am_urls[i], &u, &uerr) != GW_OK)
            return gw_cli_usage_error(&serve_cmd, 0, "bad --alertmanager URL \"%s\": %s", s->am_urls[i], uerr.msg);
    }
    if ((s->ho.sec.tls_cert_file == NULL) != (s->ho.sec.tls_key_file == NULL))
        return gw_cli_usage_error(&serve_cmd, 0, "--web.tls.cert-file and --web.tls.key-file go together");
    if (s->ho.sec.tls_client_ca_file && !s->ho.sec.tls_cert_file)
        return gw_cli_usage_error(&serve_cmd, 0, "--web.tls.client-ca-file needs --web.tls.cert-file and --web.tls.key-file");
    if (client_tls_auth_check(&serve_cmd, "--alertmanager", &s->am_tls, &s->am_auth) != 0)
        return 2;
    return -1;
}

/* --print-detector-config: the defaults or --detector-config's values. */
static int serve_print_det_config(const struct serve *s)
{
    struct gw_det_config pc;
    struct gw_error perr = {0};
    gw_det_config_default(&pc);
    if (s->det_config && gw_det_config_load(&pc, s->det_config, &perr) != GW_OK) {
        fprintf(stderr, "gpuwatch serve: %s\n", perr.msg);
        return 2;
    }
    return gw_det_config_write(&pc, stdout) == GW_OK ? 0 : 1;
}

/* What serve_open needs before touching anything: --data-dir and a valid
 * detector config. 0 or 2. */
static int serve_check(struct serve *s)
{
    if (!s->dbo.dir) {
        return gw_cli_usage_error(&serve_cmd, 1, "--storage.path (or --data-dir) is required");
    }
    gw_det_config_default(&s->dc);
    if (s->det_config && !s->no_detectors && gw_det_config_load(&s->dc, s->det_config, &s->err) != GW_OK) {
        fprintf(stderr, "gpuwatch serve: %s\n", s->err.msg);
        return 2;
    }
    return 0;
}

/* The detectors over s->alerts, from DIR/detect.state when it loads (a
 * state that does not load is logged and dropped: a fresh start). 0 or 1. */
static int serve_open_detectors(struct serve *s)
{
    if (gw_det_new(&s->det, &s->dc, s->alerts, &s->err) != GW_OK)
        goto fail;
    if (access(s->state_path, F_OK) == 0) {
        if (gw_det_snapshot_load(s->det, s->state_path, &s->err) != GW_OK) {
            gw_log(GW_LOG_WARN, "serve", "msg=\"detector state not loaded, starting fresh\" path=%s err=\"%s\"",
                   s->state_path, s->err.msg);
            gw_det_free(s->det);
            s->det = NULL;
            if (gw_det_new(&s->det, &s->dc, s->alerts, &s->err) != GW_OK)
                goto fail;
        } else {
            gw_log(GW_LOG_INFO, "serve", "msg=\"detector state loaded\" path=%s", s->state_path);
        }
    }
    gw_serve_observer(&s->ob, s->det);
    s->dbo.observer = &s->ob;
    return 0;
fail:
    s->det = NULL;
    fprintf(stderr, "gpuwatch serve: cannot start the detectors: %s\n", s->err.msg);
    return 1;
}

/* Data dir, alert log, detectors, database. 0, or 1 with what did open
 * left in s for serve_stop. */
static int serve_open(struct serve *s)
{
    s->t0 = gw_mono_ns();
    if (mkdir(s->dbo.dir, 0755) != 0 && errno != EEXIST) {
        char eb[128];
        fprintf(stderr, "gpuwatch serve: cannot create data dir %s: %s\n", s->dbo.dir,
                strerror_r(errno, eb, sizeof eb));
        return 1;
    }
    /* Alerts first (reloading the active ones), then the detectors over
     * them, then the database, whose WAL replay feeds the detectors. */
    struct gw_alerts_opts ao;
    gw_alerts_opts_default(&ao);
    ao.log_dir = s->dbo.dir;
    if (gw_alerts_open(&s->alerts, &ao, &s->err) != GW_OK) {
        s->alerts = NULL;
        fprintf(stderr, "gpuwatch serve: cannot open the alert log in %s: %s\n", s->dbo.dir, s->err.msg);
        return 1;
    }
    snprintf(s->state_path, sizeof s->state_path, "%s/detect.state", s->dbo.dir);
    char ck_dir[4096];
    static const char *const ck_tables[] = {GW_CKPT_TABLE};
    snprintf(ck_dir, sizeof ck_dir, "%s/checkpoints", s->dbo.dir);
    if (gw_kv_open(&s->ckv, ck_dir, ck_tables, 1, 1u << 20, (size_t)1 << 30, &s->err) != GW_OK) {
        s->ckv = NULL;
        fprintf(stderr, "gpuwatch serve: cannot open the checkpoint store %s: %s\n", ck_dir, s->err.msg);
        return 1;
    }
    if (gw_led_events_open(&s->events, s->dbo.dir, &s->err) != GW_OK) {
        s->events = NULL;
        fprintf(stderr, "gpuwatch serve: cannot open the scheduler event store in %s: %s\n", s->dbo.dir, s->err.msg);
        return 1;
    }
    if (!s->no_detectors && serve_open_detectors(s) != 0)
        return 1;
    return 0;
}

/* The database: the WAL replay runs here, with the HTTP server already
 * answering (503 "starting" where the database is needed). 0 or 1. */
static int serve_open_db(struct serve *s)
{
    s->dbo.replay = &s->replay;
    if (gw_db_open(&s->db, &s->dbo, &s->err) != GW_OK) {
        s->db = NULL;
        fprintf(stderr, "gpuwatch serve: cannot open data dir %s: %s\n", s->dbo.dir, s->err.msg);
        return 1;
    }
    gw_http_set_db(s->h, s->db);
    return 0;
}

/* Reloads --config.file (SIGHUP, POST /-/reload): a file that does not
 * load is refused and the running configuration stays. GW_OK or the error. */
static int serve_reload(void *ud, struct gw_error *err)
{
    struct serve *s = ud;
    struct gw_det_config nc;
    char kept[256] = "";
    int rc;
    pthread_mutex_lock(&s->reload_mu);
    gw_det_config_default(&nc);
    rc = gw_det_config_load(&nc, s->det_config, err);
    if (rc != GW_OK) {
        gw_log(GW_LOG_ERROR, "serve", "msg=\"configuration reload refused; the running configuration stays\" "
               "file=%s err=\"%s\"", s->det_config, err->msg);
        gw_http_note_reload(s->h, 0);
    } else {
        int n = s->det ? gw_det_set_config(s->det, &nc, kept, sizeof kept) : 0;
        if (s->det) gw_det_get_config(s->det, &nc);
        s->dc = nc;
        gw_http_set_det_config(s->h, &nc);
        gw_http_note_reload(s->h, 1);
        gw_log(GW_LOG_INFO, "serve", "msg=\"configuration reloaded\" file=%s", s->det_config);
        if (n > 0)
            gw_log(GW_LOG_WARN, "serve", "msg=\"changed keys that take effect at the next start\" keys=%s", kept);
    }
    pthread_mutex_unlock(&s->reload_mu);
    return rc;
}

struct flag_list {
    const char *names[128];
    char *values[128];
    size_t n;
    const struct serve *s;
};

static void flag_add(void *ud, const char *name, const char *value)
{
    struct flag_list *l = ud;
    if (l->n == sizeof l->names / sizeof l->names[0]) return;
    if (!value && !strcmp(name, "log.level"))
        value = l->s->log_level ? l->s->log_level : "info";
    else if (!value && !strcmp(name, "web.external-url"))
        value = l->s->external_url ? l->s->external_url : "";
    l->names[l->n] = name;
    l->values[l->n] = strdup(value ? value : "");
    if (l->values[l->n]) l->n++;
}

/* What the status API reports: flags, configuration, retention, reload. */
static void serve_status_info(struct serve *s)
{
    struct flag_list l = {.n = 0, .s = s};
    struct serve shown = *s;   /* defaults made visible */
    char ret[32];
    if (!shown.ho.listen) shown.ho.listen = SERVE_DEFAULT_LISTEN;
    gw_cli_values(&serve_cmd, &shown, flag_add, &l);
    gw_http_set_flags(s->h, l.names, (const char *const *)l.values, l.n);
    for (size_t i = 0; i < l.n; i++) free(l.values[i]);
    gw_http_set_det_config(s->h, &s->dc);
    snprintf(ret, sizeof ret, "%lldd", (long long)(s->dbo.retention_ms / 86400000));
    if (s->dbo.retention_ms % 86400000) snprintf(ret, sizeof ret, "%lldm", (long long)(s->dbo.retention_ms / 60000));
    gw_http_set_storage_retention(s->h, ret);
    if (s->det_config) gw_http_set_reload(s->h, serve_reload, s);
}

/* HTTP server, before the database opens: health, readiness, status and
 * /metrics answer during the WAL replay. 0 or 1. */
static int serve_http(struct serve *s)
{
    s->ho.alerts = s->alerts;
    s->ho.checkpoints = s->ckv;
    s->ho.events = s->events;
    s->ho.replay = &s->replay;
    if (!(s->ex = gw_exemplars_new(s->max_exemplars))) {
        fprintf(stderr, "gpuwatch serve: out of memory for the exemplar store\n");
        return 1;
    }
    s->ho.exemplars = s->ex;
    if (gw_http_start(&s->h, NULL, &s->ho, &s->err) != GW_OK) {
        s->h = NULL;
        fprintf(stderr, "gpuwatch serve: cannot start the HTTP server on %s: %s\n",
                s->ho.listen ? s->ho.listen : "default", s->err.msg);
        return 1;
    }
    gw_http_set_alerts(s->h, s->alerts);
    gw_http_set_query_opts(s->h, &s->ho);
    gw_http_set_detectors(s->h, s->det);
    serve_status_info(s);
    return 0;
}

/* Notifier, serve-alerts thread, DIR/serve.addr, ready. 0, or the exit
 * status (1; 2 when the notifier refuses its settings) with what did
 * start left in s for serve_stop. */
static int serve_start(struct serve *s)
{
    if (s->n_am > 0) {
        if (!s->external_url) {
            default_external_url(s->ext, sizeof s->ext, serve_listen(s), gw_http_port(s->h), gw_http_tls(s->h));
            s->external_url = s->ext;
        }
        struct gw_notifier_opts no = {s->am_urls, (size_t)s->n_am, s->external_url, 0, 0, s->am_tls, s->am_auth};
        if (gw_alerts_notifier_start(s->alerts, &no, &s->err) != GW_OK) {
            fprintf(stderr, "gpuwatch serve: %s\n", s->err.msg);
            return 2;
        }
        for (int i = 0; i < s->n_am; i++)
            gw_log(GW_LOG_INFO, "serve", "msg=\"sending alerts\" alertmanager=%s", s->am_urls[i]);
    }
    if (gw_serve_alerts_start(&s->sa, s->db, s->alerts, s->det, s->ckv, s->state_path) != GW_OK) {
        s->sa = NULL;
        fprintf(stderr, "gpuwatch serve: cannot start the alert thread\n");
        return 1;
    }
    if (gw_serve_compact_start(&s->sc, s->db, &s->csched) != GW_OK) {
        fprintf(stderr, "gpuwatch serve: cannot start the compaction thread\n");
        return 1;
    }
    if (gw_cli_ds_start(&s->dst, s->db, &s->ds) != GW_OK) {
        fprintf(stderr, "gpuwatch serve: cannot start the downsampling thread\n");
        return 1;
    }
    write_serve_file(s->dbo.dir, serve_listen(s), gw_http_port(s->h));
    s->addr_written = 1;
    gw_http_set_ready(s->h, 1);
    gw_log(GW_LOG_INFO, "serve", "msg=\"ready\" listen=%s port=%u data_dir=%s startup_ms=%llu version=%s detectors=%s",
           serve_listen(s), gw_http_port(s->h), s->dbo.dir,
           (unsigned long long)((gw_mono_ns() - s->t0) / 1000000), GW_VERSION, s->det ? "on" : "off");
    return 0;
}

/* SIGHUP reloads the TLS and authentication files and the configuration; SIGTERM or SIGINT returns (a clean
 * shutdown follows). */
static void serve_wait(struct serve *s)
{
    for (;;) {
        int sig = 0;
        if (sigwait(&s->sigs, &sig) != 0)
            continue;
        if (sig == SIGHUP) {
            struct gw_error e = {0};
            if (gw_http_reload_security(s->h, &e) != GW_OK)
                gw_log(GW_LOG_ERROR, "serve", "msg=\"TLS or authentication files not reloaded; the running ones "
                       "stay\" err=\"%s\"", e.msg);
            gw_error_clear(&e);
            if (!s->det_config)
                gw_log(GW_LOG_INFO, "serve", "msg=\"SIGHUP: no detector configuration to reload (no --config.file)\"");
            else
                serve_reload(s, &e);   /* logs its outcome */
            continue;
        }
        gw_log(GW_LOG_INFO, "serve", "msg=\"shutting down\" signal=%s", sig == SIGINT ? "SIGINT" : "SIGTERM");
        return;
    }
}

/* The one cleanup path: stops and frees whatever s holds, in reverse order
 * of starting (each step takes NULL). */
static void serve_stop(struct serve *s)
{
    if (s->addr_written)
        gw_http_set_ready(s->h, 0);
    gw_http_stop(s->h);
    gw_exemplars_free(s->ex);
    gw_cli_ds_stop(s->dst);
    gw_serve_compact_stop(s->sc);  /* ends a running compaction between days */
    gw_serve_alerts_stop(s->sa);   /* last ALERTS samples, checkpoints, detector state, alert log */
    gw_kv_close(s->ckv);
    gw_led_events_close(s->events);
    gw_fwd_stop(s->fwd);           /* its labels come from the db */
    gw_db_close(s->db);
    gw_fwd_free(s->fwd);           /* after the db's last checkpoint, which asks its hold */
    gw_det_free(s->det);
    gw_alerts_close(s->alerts);    /* sends what is due once more */
    if (s->addr_written) {
        char path[4096];
        snprintf(path, sizeof path, "%s/serve.addr", s->dbo.dir);
        unlink(path);
    }
}

int gw_cli_serve(int argc, char **argv)
{
    struct serve s;
    memset(&s, 0, sizeof s);
    int rc = serve_parse(&s, argc, argv);
    if (rc >= 0)
        return rc;
    if (s.print_det_config)
        return serve_print_det_config(&s);
    if ((rc = serve_check(&s)) != 0)
        return rc;
    /* Signals are taken by sigwait in this thread only. */
    sigemptyset(&s.sigs);
    sigaddset(&s.sigs, SIGTERM);
    sigaddset(&s.sigs, SIGINT);
    sigaddset(&s.sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &s.sigs, NULL);
    pthread_mutex_init(&s.reload_mu, NULL);
    signal(SIGPIPE, SIG_IGN);

    if ((rc = serve_open(&s)) != 0)
        goto out;
    if ((rc = serve_http(&s)) != 0)
        goto out;
    if ((rc = serve_fwd_open(&s)) != 0)
        goto out;
    if ((rc = serve_open_db(&s)) != 0)
        goto out;
    if ((rc = serve_fwd_start(&s)) != 0)
        goto out;
    if ((rc = serve_start(&s)) != 0)
        goto out;
    serve_wait(&s);
out:
    serve_stop(&s);
    pthread_mutex_destroy(&s.reload_mu);
    if (rc == 0)
        gw_log(GW_LOG_INFO, "serve", "msg=\"stopped\"");
    return rc;
}
