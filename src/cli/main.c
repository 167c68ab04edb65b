/* main.c - the gpuwatch command: subcommand dispatch, serve, stats,
 * retention. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <dirent.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "gpuwatch/alert.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/db.h"
#include "gpuwatch/detect.h"
#include "gpuwatch/http.h"
#include "gpuwatch/httpc.h"
#include "gpuwatch/log.h"
#include "serve_alerts.h"

#ifndef GW_VERSION
#define GW_VERSION "0.1.0"
#endif

static const char usage_main[] =
    "usage: gpuwatch <command> [options]\n"
    "\n"
    "commands:\n"
    "  serve       receive Prometheus remote write, store it, answer the Prometheus API\n"
    "  stats       series, samples and bytes on disk of a data dir (per partition)\n"
    "  retention   drop stored data older than a duration\n"
    "  query       evaluate a PromQL expression against a running serve or a data dir\n"
    "  simulate    simulate a GPU cluster's exporters and remote-write them (with ground truth)\n"
    "  evaluate    score the failure detectors against a simulated cluster's ground truth\n"
    "  version     print the version\n"
    "\n"
    "Run 'gpuwatch <command> --help' for the options of a command.\n";

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
    "and logged in DIR/alerts/; the detector state is saved to DIR/detect.state every\n"
    "5 minutes and at shutdown.\n";

static const char usage_stats[] =
    "usage: gpuwatch stats --data-dir DIR [--json]\n"
    "\n"
    "Prints series, samples, bytes on disk and bytes per sample, in total and per\n"
    "day partition. Safe while 'gpuwatch serve' runs on the same dir.\n";

static const char usage_retention[] =
    "usage: gpuwatch retention --data-dir DIR --keep DUR\n"
    "\n"
    "Drops day partitions whose data is older than DUR (e.g. 55d). When a\n"
    "'gpuwatch serve' runs on DIR the request is handed to it over HTTP;\n"
    "otherwise the dir is changed directly.\n";

static int want_help(int argc, char **argv)
{
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return 1;
    return 0;
}

/* Fetches the value of option `name` at argv[*i] ("--x v" or "--x=v"). */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0) return NULL;
    if (argv[*i][n] == '=') return argv[*i] + n + 1;
    if (argv[*i][n] != '\0') return NULL;
    if (*i + 1 >= argc) {
        fprintf(stderr, "gpuwatch: option %s needs a value\n", name);
        exit(2);
    }
    (*i)++;
    return argv[*i];
}

static int64_t parse_dur_or_die(const char *opt, const char *v)
{
    int64_t ms;
    if (gw_parse_duration_ms(v, &ms) != GW_OK || ms <= 0) {
        fprintf(stderr, "gpuwatch: invalid duration for %s: \"%s\" (examples: 55d, 12h, 8w)\n", opt, v);
        exit(2);
    }
    return ms;
}

static long parse_long_or_die(const char *opt, const char *v, long lo, long hi)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) {
        fprintf(stderr, "gpuwatch: invalid value for %s: \"%s\" (expected %ld..%ld)\n", opt, v, lo, hi);
        exit(2);
    }
    return x;
}

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

static int cmd_serve(int argc, char **argv)
{
    if (want_help(argc, argv)) {
        fputs(usage_serve, stdout);
        return 0;
    }
    struct gw_db_opts dbo;
    gw_db_opts_default(&dbo);
    dbo.background = 1;
    struct gw_http_opts ho = {0};   /* fields gw_http_opts_default leaves alone stay 0 (default) */
    gw_http_opts_default(&ho);
    const char *am_urls[GW_NOTIFY_MAX_URLS];
    size_t n_am = 0;
    const char *external_url = NULL, *det_config = NULL;
    int print_det_config = 0;
    int no_detectors = 0;
    for (int i = 0; i < argc; i++) {
        const char *v;
        if ((v = opt_value(argc, argv, &i, "--listen"))) ho.listen = v;
        else if ((v = opt_value(argc, argv, &i, "--data-dir"))) dbo.dir = v;
        else if ((v = opt_value(argc, argv, &i, "--retention"))) dbo.retention_ms = parse_dur_or_die("--retention", v);
        else if ((v = opt_value(argc, argv, &i, "--fsync"))) {
            if (!strcmp(v, "always")) dbo.fsync = GW_FSYNC_ALWAYS;
            else if (!strcmp(v, "batch")) dbo.fsync = GW_FSYNC_BATCH;
            else if (!strcmp(v, "off")) dbo.fsync = GW_FSYNC_OFF;
            else {
                fprintf(stderr, "gpuwatch: --fsync must be always, batch or off (got \"%s\")\n", v);
                return 2;
            }
        } else if ((v = opt_value(argc, argv, &i, "--threads"))) ho.threads = (unsigned)parse_long_or_die("--threads", v, 1, 256);
        else if ((v = opt_value(argc, argv, &i, "--max-body-bytes")))
            ho.max_body_bytes = (size_t)parse_long_or_die("--max-body-bytes", v, 1024, 1L << 30);
        else if ((v = opt_value(argc, argv, &i, "--promql-compat"))) ho.promql_compat = (int)parse_long_or_die("--promql-compat", v, 2, 3);
        else if ((v = opt_value(argc, argv, &i, "--query.lookback-delta"))) ho.lookback_ms = parse_dur_or_die("--query.lookback-delta", v);
        else if ((v = opt_value(argc, argv, &i, "--query.timeout"))) ho.query_timeout_ms = parse_dur_or_die("--query.timeout", v);
        else if ((v = opt_value(argc, argv, &i, "--query.max-samples")))
            ho.query_max_samples = (uint64_t)parse_long_or_die("--query.max-samples", v, 1, 1L << 40);
        else if ((v = opt_value(argc, argv, &i, "--alertmanager"))) {
            struct gw_url u;
            struct gw_error uerr = {0};
            if (gw_url_parse(v, &u, &uerr) != GW_OK) {
                fprintf(stderr, "gpuwatch serve: bad --alertmanager URL \"%s\": %s\n", v, uerr.msg);
                return 2;
            }
            if (n_am == GW_NOTIFY_MAX_URLS) {
                fprintf(stderr, "gpuwatch serve: at most %d --alertmanager URLs\n", GW_NOTIFY_MAX_URLS);
                return 2;
            }
            am_urls[n_am++] = v;
        } else if ((v = opt_value(argc, argv, &i, "--web.external-url"))) {
            if (strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0) {
                fprintf(stderr, "gpuwatch serve: --web.external-url must start with http:// or https:// (got \"%s\")\n", v);
                return 2;
            }
            external_url = v;
        } else if ((v = opt_value(argc, argv, &i, "--detector-config"))) det_config = v;
        else if (!strcmp(argv[i], "--no-detectors")) no_detectors = 1;
        else if (!strcmp(argv[i], "--print-detector-config")) print_det_config = 1;
        else if ((v = opt_value(argc, argv, &i, "--log-level"))) {
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
    if (print_det_config) {
        struct gw_det_config pc;
        struct gw_error perr = {0};
        gw_det_config_default(&pc);
        if (det_config && gw_det_config_load(&pc, det_config, &perr) != GW_OK) {
            fprintf(stderr, "gpuwatch serve: %s\n", perr.msg);
            return 2;
        }
        return gw_det_config_write(&pc, stdout) == GW_OK ? 0 : 1;
    }
    if (!dbo.dir) {
        fprintf(stderr, "gpuwatch serve: --data-dir is required\n\n%s", usage_serve);
        return 2;
    }
    struct gw_error err = {0};
    struct gw_det_config dc;
    gw_det_config_default(&dc);
    if (det_config && !no_detectors && gw_det_config_load(&dc, det_config, &err) != GW_OK) {
        fprintf(stderr, "gpuwatch serve: %s\n", err.msg);
        return 2;
    }
    /* Signals are taken by sigwait in this thread only. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    uint64_t t0 = gw_mono_ns();
    if (mkdir(dbo.dir, 0755) != 0 && errno != EEXIST) {
        char eb[128];
        fprintf(stderr, "gpuwatch serve: cannot create data dir %s: %s\n", dbo.dir, strerror_r(errno, eb, sizeof eb));
        return 1;
    }
    /* Alerts first (reloading the active ones), then the detectors over
     * them, then the database, whose WAL replay feeds the detectors. */
    struct gw_alerts_opts ao;
    gw_alerts_opts_default(&ao);
    ao.log_dir = dbo.dir;
    struct gw_alerts *alerts = NULL;
    if (gw_alerts_open(&alerts, &ao, &err) != GW_OK) {
        fprintf(stderr, "gpuwatch serve: cannot open the alert log in %s: %s\n", dbo.dir, err.msg);
        return 1;
    }
    char state_path[4096];
    snprintf(state_path, sizeof state_path, "%s/detect.state", dbo.dir);
    struct gw_det *det = NULL;
    struct gw_db_observer ob;
    if (!no_detectors) {
        if (gw_det_new(&det, &dc, alerts, &err) != GW_OK) {
            fprintf(stderr, "gpuwatch serve: cannot start the detectors: %s\n", err.msg);
            gw_alerts_close(alerts);
            return 1;
        }
        if (access(state_path, F_OK) == 0) {
            if (gw_det_snapshot_load(det, state_path, &err) != GW_OK) {
                gw_log(GW_LOG_WARN, "serve", "msg=\"detector state not loaded, starting fresh\" path=%s err=\"%s\"",
                       state_path, err.msg);
                gw_det_free(det);
                det = NULL;
                if (gw_det_new(&det, &dc, alerts, &err) != GW_OK) {
                    fprintf(stderr, "gpuwatch serve: cannot start the detectors: %s\n", err.msg);
                    gw_alerts_close(alerts);
                    return 1;
                }
            } else {
                gw_log(GW_LOG_INFO, "serve", "msg=\"detector state loaded\" path=%s", state_path);
            }
        }
        gw_serve_observer(&ob, det);
        dbo.observer = &ob;
    }
    struct gw_db *db = NULL;
    if (gw_db_open(&db, &dbo, &err) != GW_OK) {
        fprintf(stderr, "gpuwatch serve: cannot open data dir %s: %s\n", dbo.dir, err.msg);
        gw_det_free(det);
        gw_alerts_close(alerts);
        return 1;
    }
    ho.alerts = alerts;
    struct gw_http *h = NULL;
    if (gw_http_start(&h, db, &ho, &err) != GW_OK) {
        fprintf(stderr, "gpuwatch serve: cannot listen on %s: %s\n", ho.listen ? ho.listen : "default", err.msg);
        gw_db_close(db);
        gw_det_free(det);
        gw_alerts_close(alerts);
        return 1;
    }
    gw_http_set_alerts(h, alerts);
    gw_http_set_query_opts(h, &ho);
    if (n_am > 0) {
        char ext[512];
        if (!external_url) {
            default_external_url(ext, sizeof ext, ho.listen ? ho.listen : "127.0.0.1:9201", gw_http_port(h));
            external_url = ext;
        }
        struct gw_notifier_opts no = {am_urls, n_am, external_url, 0, 0};
        if (gw_alerts_notifier_start(alerts, &no, &err) != GW_OK) {
            fprintf(stderr, "gpuwatch serve: %s\n", err.msg);
            gw_http_stop(h);
            gw_db_close(db);
            gw_det_free(det);
            gw_alerts_close(alerts);
            return 2;
        }
        for (size_t i = 0; i < n_am; i++)
            gw_log(GW_LOG_INFO, "serve", "msg=\"sending alerts\" alertmanager=%s", am_urls[i]);
    }
    struct gw_serve_alerts *sa = NULL;
    if (gw_serve_alerts_start(&sa, db, alerts, det, state_path) != GW_OK) {
        fprintf(stderr, "gpuwatch serve: cannot start the alert thread\n");
        gw_http_stop(h);
        gw_db_close(db);
        gw_det_free(det);
        gw_alerts_close(alerts);
        return 1;
    }
    write_serve_file(dbo.dir, ho.listen ? ho.listen : "127.0.0.1:9201", gw_http_port(h));
    gw_http_set_ready(h, 1);
    gw_log(GW_LOG_INFO, "serve", "msg=\"ready\" listen=%s port=%u data_dir=%s startup_ms=%llu version=%s detectors=%s",
           ho.listen ? ho.listen : "127.0.0.1:9201", gw_http_port(h), dbo.dir,
           (unsigned long long)((gw_mono_ns() - t0) / 1000000), GW_VERSION, det ? "on" : "off");
    int sig = 0;
    sigwait(&set, &sig);
    gw_log(GW_LOG_INFO, "serve", "msg=\"shutting down\" signal=%d", sig);
    gw_http_set_ready(h, 0);
    gw_http_stop(h);
    gw_serve_alerts_stop(sa);   /* last ALERTS samples, detector state, alert log */
    gw_db_close(db);
    gw_det_free(det);
    gw_alerts_close(alerts);    /* sends what is due once more */
    char path[4096];
    snprintf(path, sizeof path, "%s/serve.addr", dbo.dir);
    unlink(path);
    gw_log(GW_LOG_INFO, "serve", "msg=\"stopped\"");
    return 0;
}

static uint64_t dir_bytes(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    uint64_t total = 0;
    struct dirent *e;
    char p[4096];
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) total += (uint64_t)st.st_blocks * 512;
    }
    closedir(d);
    return total;
}

struct stats_print {
    int json;
    int first;
};

static void fmt_day(int64_t day, char *out, size_t n)
{
    time_t t = (time_t)(day * 86400);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, n, "%Y-%m-%d", &tm);
}

static int part_print(void *ud, int64_t day, uint64_t blocks, uint64_t samples, uint64_t payload, uint64_t pages)
{
    struct stats_print *sp = ud;
    char d[32];
    fmt_day(day, d, sizeof d);
    double bps = samples ? (double)pages / (double)samples : 0;
    if (sp->json) {
        printf("%s{\"day\":\"%s\",\"blocks\":%" PRIu64 ",\"samples\":%" PRIu64 ",\"payload_bytes\":%" PRIu64
               ",\"page_bytes\":%" PRIu64 ",\"bytes_per_sample\":%.4f}",
               sp->first ? "" : ",", d, blocks, samples, payload, pages, bps);
        sp->first = 0;
    } else {
        printf("  %s  %10" PRIu64 " %14" PRIu64 " %14" PRIu64 " %14" PRIu64 " %8.3f\n", d, blocks, samples, payload,
               pages, bps);
    }
    return GW_OK;
}

static int cmd_stats(int argc, char **argv)
{
    if (want_help(argc, argv)) {
        fputs(usage_stats, stdout);
        return 0;
    }
    const char *dir = NULL;
    int json = 0;
    for (int i = 0; i < argc; i++) {
        const char *v;
        if ((v = opt_value(argc, argv, &i, "--data-dir"))) dir = v;
        else if (!strcmp(argv[i], "--json")) json = 1;
        else {
            fprintf(stderr, "gpuwatch stats: unknown option \"%s\"\n\n%s", argv[i], usage_stats);
            return 2;
        }
    }
    if (!dir) {
        fprintf(stderr, "gpuwatch stats: --data-dir is required\n");
        return 2;
    }
    struct gw_db_opts o;
    gw_db_opts_default(&o);
    o.dir = dir;
    o.read_only = 1;
    struct gw_error err = {0};
    struct gw_db *db = NULL;
    if (gw_db_open(&db, &o, &err) != GW_OK) {
        fprintf(stderr, "gpuwatch stats: cannot open %s: %s\n", dir, err.msg);
        return 1;
    }
    struct gw_db_stats st;
    if (gw_db_stats(db, &st, &err) != GW_OK) {
        fprintf(stderr, "gpuwatch stats: %s\n", err.msg);
        gw_db_close(db);
        return 1;
    }
    char wal_dir[4096], store_dir[4096];
    snprintf(wal_dir, sizeof wal_dir, "%s/wal", dir);
    snprintf(store_dir, sizeof store_dir, "%s/store", dir);
    uint64_t wal = dir_bytes(wal_dir), store = dir_bytes(store_dir);
    double bps = st.stored_samples ? (double)st.store_used_bytes / (double)st.stored_samples : 0;
    struct stats_print sp = {.json = json, .first = 1};
    if (json) {
        printf("{\"series\":%" PRIu64 ",\"stored_samples\":%" PRIu64 ",\"block_payload_bytes\":%" PRIu64
               ",\"store_used_bytes\":%" PRIu64 ",\"store_file_bytes\":%" PRIu64 ",\"store_disk_bytes\":%" PRIu64
               ",\"wal_disk_bytes\":%" PRIu64 ",\"bytes_per_sample\":%.4f,\"partitions\":[",
               st.series, st.stored_samples, st.stored_block_bytes, st.store_used_bytes, st.store_file_bytes, store,
               wal, bps);
        gw_db_partitions(db, part_print, &sp, &err);
        printf("]}\n");
    } else {
        printf("data dir            %s\n", dir);
        printf("series              %" PRIu64 "\n", st.series);
        printf("stored samples      %" PRIu64 "\n", st.stored_samples);
        printf("block payload bytes %" PRIu64 " (%.3f bytes/sample)\n", st.stored_block_bytes,
               st.stored_samples ? (double)st.stored_block_bytes / (double)st.stored_samples : 0.0);
        printf("store pages in use  %" PRIu64 " (%.3f bytes/sample, index included)\n", st.store_used_bytes, bps);
        printf("store file on disk  %" PRIu64 "\n", store);
        printf("WAL on disk         %" PRIu64 " (samples not yet in the store live here)\n", wal);
        printf("\npartitions (UTC day, blocks, samples, payload bytes, page bytes, bytes/sample):\n");
        gw_db_partitions(db, part_print, &sp, &err);
    }
    gw_db_close(db);
    return 0;
}

/* POSTs to a running serve: returns HTTP status or -1. */
static int http_post(const char *hostport, const char *path, char *resp, size_t resp_len)
{
    char host[320];
    if (strlen(hostport) >= sizeof host) return -1;
    memcpy(host, hostport, strlen(hostport) + 1);
    char *colon = strrchr(host, ':');
    if (!colon) return -1;
    *colon = '\0';
    const char *port = colon + 1;
    char *h = host;
    if (h[0] == '[') {
        h++;
        char *e = strchr(h, ']');
        if (e) *e = '\0';
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
    if (getaddrinfo(h, port, &hints, &ai) != 0) return -1;
    int fd = socket(ai->ai_family, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        if (fd >= 0) close(fd);
        freeaddrinfo(ai);
        return -1;
    }
    freeaddrinfo(ai);
    char req[1024];
    int n = snprintf(req, sizeof req, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                     path, hostport);
    if (write(fd, req, (size_t)n) != n) {
        close(fd);
        return -1;
    }
    size_t got = 0;
    ssize_t r;
    while (got + 1 < resp_len && (r = read(fd, resp + got, resp_len - 1 - got)) > 0) got += (size_t)r;
    resp[got] = '\0';
    close(fd);
    int status = -1;
    if (sscanf(resp, "HTTP/1.%*d %d", &status) != 1) return -1;
    return status;
}

static int cmd_retention(int argc, char **argv)
{
    if (want_help(argc, argv)) {
        fputs(usage_retention, stdout);
        return 0;
    }
    const char *dir = NULL, *keep_s = NULL;
    for (int i = 0; i < argc; i++) {
        const char *v;
        if ((v = opt_value(argc, argv, &i, "--data-dir"))) dir = v;
        else if ((v = opt_value(argc, argv, &i, "--keep"))) keep_s = v;
        else {
            fprintf(stderr, "gpuwatch retention: unknown option \"%s\"\n\n%s", argv[i], usage_retention);
            return 2;
        }
    }
    if (!dir || !keep_s) {
        fprintf(stderr, "gpuwatch retention: --data-dir and --keep are required\n");
        return 2;
    }
    int64_t keep = parse_dur_or_die("--keep", keep_s);
    struct gw_db_opts o;
    gw_db_opts_default(&o);
    o.dir = dir;
    struct gw_error err = {0};
    struct gw_db *db = NULL;
    int rc = gw_db_open(&db, &o, &err);
    if (rc != GW_OK) {
        /* A running serve holds the dir: hand the request to it. */
        char addr_path[4096], addr[300] = {0};
        snprintf(addr_path, sizeof addr_path, "%s/serve.addr", dir);
        FILE *f = fopen(addr_path, "r");
        if (f && fgets(addr, sizeof addr, f)) {
            fclose(f);
            addr[strcspn(addr, "\r\n")] = '\0';
            char path[512], resp[4096];
            snprintf(path, sizeof path, "/api/v1/admin/retention?keep=%s", keep_s);
            int status = http_post(addr, path, resp, sizeof resp);
            if (status >= 200 && status < 300) {
                char *body = strstr(resp, "\r\n\r\n");
                printf("%s\n", body ? body + 4 : "ok");
                return 0;
            }
            fprintf(stderr, "gpuwatch retention: the running server at %s answered %d\n", addr, status);
            return 1;
        }
        if (f) fclose(f);
        fprintf(stderr, "gpuwatch retention: cannot open %s: %s\n", dir, err.msg);
        return 1;
    }
    unsigned dropped = 0;
    rc = gw_db_retention(db, keep, gw_now_ms(), &dropped, &err);
    gw_db_close(db);
    if (rc) {
        fprintf(stderr, "gpuwatch retention: %s\n", err.msg);
        return 1;
    }
    printf("dropped %u partition(s) older than %s\n", dropped, keep_s);
    return 0;
}

int gw_cli_query(int argc, char **argv);
int gw_cli_simulate(int argc, char **argv);
int gw_cli_evaluate(int argc, char **argv);

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        fputs(usage_main, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "serve")) return cmd_serve(argc - 2, argv + 2);
    if (!strcmp(cmd, "stats")) return cmd_stats(argc - 2, argv + 2);
    if (!strcmp(cmd, "retention")) return cmd_retention(argc - 2, argv + 2);
    if (!strcmp(cmd, "query")) return gw_cli_query(argc - 2, argv + 2);
    if (!strcmp(cmd, "simulate")) return gw_cli_simulate(argc - 2, argv + 2);
    if (!strcmp(cmd, "evaluate")) return gw_cli_evaluate(argc - 2, argv + 2);
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("gpuwatch %s\n", GW_VERSION);
        return 0;
    }
    fprintf(stderr, "gpuwatch: unknown command \"%s\"\n\n%s", cmd, usage_main);
    return 2;
}
