/* cmd_serve.c - `gpuwatch serve`: the receiver, store, query API, alerts
 * and detectors in one process.
 *
 * Phases, each a function over one struct serve:
 *   serve_parse   options into the db, http, alert and detector settings;
 *   serve_open    data dir, alert log (active alerts reloaded), detectors
 *                 over it (their saved state), then the database, whose WAL
 *                 replay feeds the detectors;
 *   serve_start   HTTP server, Alertmanager notifier, the serve-alerts
 *                 thread, DIR/serve.addr, ready;
 *   serve_wait    SIGINT or SIGTERM (blocked in every thread, sigwait here);
 *   serve_stop    the one cleanup path: whatever was started, in reverse
 *                 order, on success and on every failure alike. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpuwatch/alert.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/db.h"
#include "gpuwatch/detect.h"
#include "gpuwatch/http.h"
#include "gpuwatch/ledger.h"
#include "gpuwatch/httpc.h"
#include "gpuwatch/log.h"
#include "cli.h"
#include "cli_parse.h"
#include "serve_alerts.h"

static const char usage_serve[] =
    "usage: gpuwatch serve --data-dir DIR [options]\n"
    "\n"
    "  --listen ADDR        address to listen on (default 127.0.0.1:9201; ':PORT' for all interfaces)\n"
    "  --data-dir DIR       data directory (created if missing; one gpuwatch per dir)\n"
    "  --retention DUR      keep this much history, e.g. 55d, 8w (default 55d)\n"
    "  --fsync MODE         always: fsync the WAL before answering (survives power loss)\n"
    "                       batch:  write before answering, fsync every 100 ms (default;\n"
    "                               survives a crash of gpuwatch)\n"
    "                       off:    write before answering, never fsync explicitly\n"
    "  --threads N          HTTP worker threads (default 4)\n"
    "  --max-body-bytes N   largest accepted request body (default 33554432)\n"
    "  --log-level LEVEL    debug, info, warn or error (default info)\n"
    "  --promql-compat N    3: Prometheus 3 range and lookback windows (t-r, t] (default);\n"
    "                       2: Prometheus 2.42's closed windows [t-r, t], its function set\n"
    "                       (holt_winters) and its numeric quirks\n"
    "  --query.lookback-delta DUR  how far back a selector looks for a sample (default 5m)\n"
    "  --query.timeout DUR  longest evaluation of one query (default 2m)\n"
    "  --query.max-samples N  samples one query may hold in memory (default 50000000)\n"
    "\n"
    "failure detection and alerts (docs/alerts.md):\n"
    "  --alertmanager URL   send alerts to this Alertmanager (API v2, e.g. http://127.0.0.1:9093);\n"
    "                       repeatable, up to 8; firing alerts are resent every minute\n"
    "  --web.external-url URL  base of the generatorURL of sent alerts\n"
    "                       (default http://<listen address>)\n"
    "  --detector-config FILE  detector thresholds (\"key = value\" lines over the defaults,\n"
    "                       see docs/detectors.md); a bad file exits with status 2\n"
    "  --no-detectors       store and serve only: run no detector (alerts reloaded from\n"
    "                       the alert log are still reported)\n"
    "  --print-detector-config  print every detector threshold with its meaning (the\n"
    "                       defaults, or --detector-config's values) and exit\n"
    "Alerts are served at /api/v1/alerts and /api/v1/rules, written back as ALERTS series,\n"
    "and logged in DIR/alerts/; checkpoint events (D7) are kept in DIR/checkpoints/, served\n"
    "at /api/v1/checkpoints and written back as gpuwatch_checkpoint_* series; the detector state is saved to DIR/detect.state every\n"
    "5 minutes and at shutdown.\n"
    "Scheduler events posted to /api/v1/events are kept in DIR/events/ (docs/ledger.md).\n";

#define SERVE_DEFAULT_LISTEN "127.0.0.1:9201"

struct serve {
    /* options */
    struct gw_db_opts dbo;
    struct gw_http_opts ho;
    const char *am_urls[GW_NOTIFY_MAX_URLS];
    size_t n_am;
    const char *external_url, *det_config;
    int print_det_config;
    int no_detectors;
    struct gw_det_config dc;
    /* running state, released by serve_stop */
    sigset_t sigs;                 /* SIGTERM, SIGINT: blocked, taken by sigwait */
    uint64_t t0;                   /* start of serve_open */
    char state_path[4096];         /* DIR/detect.state */
    char ext[512];                 /* the default --web.external-url */
    struct gw_db_observer ob;
    struct gw_alerts *alerts;
    struct gw_det *det;
    struct gw_db *db;
    struct gw_http *h;
    struct gw_serve_alerts *sa;
    struct gw_kv *ckv;             /* DIR/checkpoints/: D7's checkpoint events */
    struct gw_led_events *events;  /* DIR/events/: scheduler events (POST /api/v1/events) */
    int addr_written;              /* DIR/serve.addr exists */
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

/* The default generatorURL base: http://<listen host or 127.0.0.1>:<port>. */
static void default_external_url(char *out, size_t cap, const char *listen, uint16_t port)
{
    char host[256];
    snprintf(host, sizeof host, "%s", listen ? listen : "127.0.0.1");
    char *colon = strrchr(host, ':');
    if (colon && (host[0] != '[' || (colon > host && colon[-1] == ']'))) *colon = '\0';
    if (!host[0] || !strcmp(host, "0.0.0.0")) snprintf(host, sizeof host, "127.0.0.1");
    snprintf(out, cap, "http://%s:%u", host, port);
}

static const char *serve_listen(const struct serve *s)
{
    return s->ho.listen ? s->ho.listen : SERVE_DEFAULT_LISTEN;
}

/* Options into s. 0 to go on, else the exit status (2: a usage error). */
static int serve_parse(struct serve *s, int argc, char **argv)
{
    gw_db_opts_default(&s->dbo);
    s->dbo.background = 1;
    gw_http_opts_default(&s->ho);   /* fields it leaves alone stay 0 (default) */
    for (int i = 0; i < argc; i++) {
        const char *v;
        if ((v = gw_cli_opt_value(argc, argv, &i, "--listen"))) s->ho.listen = v;
        else if ((v = gw_cli_opt_value(argc, argv, &i, "--data-dir"))) s->dbo.dir = v;
        else if ((v = gw_cli_opt_value(argc, argv, &i, "--retention")))
            s->dbo.retention_ms = gw_cli_parse_dur_or_exit("--retention", v);
        else if ((v = gw_cli_opt_value(argc, argv, &i, "--fsync"))) {
            if (!strcmp(v, "always")) s->dbo.fsync = GW_FSYNC_ALWAYS;
            else if (!strcmp(v, "batch")) s->dbo.fsync = GW_FSYNC_BATCH;
            else if (!strcmp(v, "off")) s->dbo.fsync = GW_FSYNC_OFF;
            else {
                fprintf(stderr, "gpuwatch: --fsync must be always, batch or off (got \"%s\")\n", v);
                return 2;
            }
        } else if ((v = gw_cli_opt_value(argc, argv, &i, "--threads")))
            s->ho.threads = (unsigned)gw_cli_parse_long_or_exit("--threads", v, 1, 256);
        else if ((v = gw_cli_opt_value(argc, argv, &i, "--max-body-bytes")))
            s->ho.max_body_bytes = (size_t)gw_cli_parse_long_or_exit("--max-body-bytes", v, 1024, 1L << 30);
        else if ((v = gw_cli_opt_value(argc, argv, &i, "--promql-compat")))
            s->ho.promql_compat = (int)gw_cli_parse_long_or_exit("--promql-compat", v, 2, 3);
        else if ((v = gw_cli_opt_value(argc, argv, &i, "--query.lookback-delta")))
            s->ho.lookback_ms = gw_cli_parse_dur_or_exit("--query.lookback-delta", v);
        else if ((v = gw_cli_opt_value(argc, argv, &i, "--query.timeout")))
            s->ho.query_timeout_ms = gw_cli_parse_dur_or_exit("--query.timeout", v);
        else if ((v = gw_cli_opt_value(argc, argv, &i, "--query.max-samples")))
            s->ho.query_max_samples = (uint64_t)gw_cli_parse_long_or_exit("--query.max-samples", v, 1, 1L << 40);
        else if ((v = gw_cli_opt_value(argc, argv, &i, "--alertmanager"))) {
            struct gw_url u;
            struct gw_error uerr = {0};
            if (gw_url_parse(v, &u, &uerr) != GW_OK) {
                fprintf(stderr, "gpuwatch serve: bad --alertmanager URL \"%s\": %s\n", v, uerr.msg);
                return 2;
            }
            if (s->n_am == GW_NOTIFY_MAX_URLS) {
                fprintf(stderr, "gpuwatch serve: at most %d --alertmanager URLs\n", GW_NOTIFY_MAX_URLS);
                return 2;
            }
            s->am_urls[s->n_am++] = v;
        } else if ((v = gw_cli_opt_value(argc, argv, &i, "--web.external-url"))) {
            if (strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0) {
                fprintf(stderr, "gpuwatch serve: --web.external-url must start with http:// or https:// (got \"%s\")\n", v);
                return 2;
            }
            s->external_url = v;
        } else if ((v = gw_cli_opt_value(argc, argv, &i, "--detector-config"))) s->det_config = v;
        else if (!strcmp(argv[i], "--no-detectors")) s->no_detectors = 1;
        else if (!strcmp(argv[i], "--print-detector-config")) s->print_det_config = 1;
        else if ((v = gw_cli_opt_value(argc, argv, &i, "--log-level"))) {
            if (!strcmp(v, "debug")) gw_log_min_level = GW_LOG_DEBUG;
            else if (!strcmp(v, "info")) gw_log_min_level = GW_LOG_INFO;
            else if (!strcmp(v, "warn")) gw_log_min_level = GW_LOG_WARN;
            else if (!strcmp(v, "error")) gw_log_min_level = GW_LOG_ERROR;
            else {
                fprintf(stderr, "gpuwatch: unknown --log-level \"%s\"\n", v);
                return 2;
            }
        } else {
            fprintf(stderr, "gpuwatch serve: unknown option \"%s\"\n\n%s", argv[i], usage_serve);
            return 2;
        }
    }
    return 0;
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
        fprintf(stderr, "gpuwatch serve: --data-dir is required\n\n%s", usage_serve);
        return 2;
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
    if (gw_db_open(&s->db, &s->dbo, &s->err) != GW_OK) {
        s->db = NULL;
        fprintf(stderr, "gpuwatch serve: cannot open data dir %s: %s\n", s->dbo.dir, s->err.msg);
        return 1;
    }
    return 0;
}

/* HTTP server, notifier, serve-alerts thread, DIR/serve.addr, ready. 0,
 * or the exit status (1; 2 when the notifier refuses its settings) with
 * what did start left in s for serve_stop. */
static int serve_start(struct serve *s)
{
    s->ho.alerts = s->alerts;
    s->ho.checkpoints = s->ckv;
    s->ho.events = s->events;
    if (gw_http_start(&s->h, s->db, &s->ho, &s->err) != GW_OK) {
        s->h = NULL;
        fprintf(stderr, "gpuwatch serve: cannot listen on %s: %s\n", s->ho.listen ? s->ho.listen : "default",
                s->err.msg);
        return 1;
    }
    gw_http_set_alerts(s->h, s->alerts);
    gw_http_set_query_opts(s->h, &s->ho);
    if (s->n_am > 0) {
        if (!s->external_url) {
            default_external_url(s->ext, sizeof s->ext, serve_listen(s), gw_http_port(s->h));
            s->external_url = s->ext;
        }
        struct gw_notifier_opts no = {s->am_urls, s->n_am, s->external_url, 0, 0};
        if (gw_alerts_notifier_start(s->alerts, &no, &s->err) != GW_OK) {
            fprintf(stderr, "gpuwatch serve: %s\n", s->err.msg);
            return 2;
        }
        for (size_t i = 0; i < s->n_am; i++)
            gw_log(GW_LOG_INFO, "serve", "msg=\"sending alerts\" alertmanager=%s", s->am_urls[i]);
    }
    if (gw_serve_alerts_start(&s->sa, s->db, s->alerts, s->det, s->ckv, s->state_path) != GW_OK) {
        s->sa = NULL;
        fprintf(stderr, "gpuwatch serve: cannot start the alert thread\n");
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

static void serve_wait(struct serve *s)
{
    int sig = 0;
    sigwait(&s->sigs, &sig);
    gw_log(GW_LOG_INFO, "serve", "msg=\"shutting down\" signal=%d", sig);
}

/* The one cleanup path: stops and frees whatever s holds, in reverse order
 * of starting (each step takes NULL). */
static void serve_stop(struct serve *s)
{
    if (s->addr_written)
        gw_http_set_ready(s->h, 0);
    gw_http_stop(s->h);
    gw_serve_alerts_stop(s->sa);   /* last ALERTS samples, checkpoints, detector state, alert log */
    gw_kv_close(s->ckv);
    gw_led_events_close(s->events);
    gw_db_close(s->db);
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
    if (gw_cli_want_help(argc, argv)) {
        fputs(usage_serve, stdout);
        return 0;
    }
    struct serve s;
    memset(&s, 0, sizeof s);
    int rc = serve_parse(&s, argc, argv);
    if (rc != 0)
        return rc;
    if (s.print_det_config)
        return serve_print_det_config(&s);
    if ((rc = serve_check(&s)) != 0)
        return rc;
    /* Signals are taken by sigwait in this thread only. */
    sigemptyset(&s.sigs);
    sigaddset(&s.sigs, SIGTERM);
    sigaddset(&s.sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &s.sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    if ((rc = serve_open(&s)) != 0)
        goto out;
    if ((rc = serve_start(&s)) != 0)
        goto out;
    serve_wait(&s);
out:
    serve_stop(&s);
    if (rc == 0)
        gw_log(GW_LOG_INFO, "serve", "msg=\"stopped\"");
    return rc;
}
