/* api_metrics.c - GET /metrics: gpuwatch's own metrics in the Prometheus
 * text exposition format (version 0.0.4); every family has # HELP and
 * # TYPE lines, each family is written once, in one block.
 *
 * Families (docs/operations.md lists them with their meaning):
 *   process_*            CPU, memory, file descriptors, start time (/proc/self)
 *   gpuwatch_build_info  version, revision, branch, compiler, build date
 *   gpuwatch_http_*      requests by route and code, durations by handler
 *   gpuwatch_remote_write_*  samples accepted, refused by reason
 *   gpuwatch_query_duration_seconds, gpuwatch_wal_fsync_duration_seconds,
 *   gpuwatch_db_flush_duration_seconds, gpuwatch_db_checkpoint_duration_seconds
 *   gpuwatch_db_*        head, store (LMDB file, used, map), WAL, time range
 *   gpuwatch_wal_replay_*  replay progress
 *   gpuwatch_detector_*  evaluation cost by detector, samples, raises
 *   gpuwatch_alerts_*    alerts by state, notifier queue, sent and failed
 *   gpuwatch_config_*    last reload outcome
 *   gpuwatch_forward_*   per forwarding destination (label url): lag, pending
 *                        WAL bytes, samples and batches sent, retried, failed,
 *                        samples dropped by reason, last error time
 * Counters are C11 atomics updated by the threads doing the work; this
 * handler only reads them. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "gpuwatch/alert.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/detect.h"
#include "gpuwatch/exemplars.h"
#include "gpuwatch/forward.h"
#include "http/http_int.h"

/* "# HELP name help\n# TYPE name type\n" */
static int family(struct gw_buf *b, const char *name, const char *type, const char *help)
{
    return gw_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static int one(struct gw_buf *b, const char *name, const char *type, const char *help, double v)
{
    int rc = family(b, name, type, help);
    if (rc == GW_OK) rc = gw_buf_printf(b, "%s %.15g\n", name, v);
    return rc;
}

/* ---- process ---- */

struct proc_stat {
    double cpu_s, start_s;
    uint64_t vsize, rss;
};

/* /proc/self/stat fields 14-15 (utime, stime), 22 (starttime, ticks after
 * boot), 23 (vsize, bytes), 24 (rss, pages); boot time from /proc/stat. */
static int read_proc(struct proc_stat *ps)
{
    char buf[4096];
    FILE *f = fopen("/proc/self/stat", "r");
    size_t n;
    memset(ps, 0, sizeof *ps);
    if (!f) return -1;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');   /* the command name may hold spaces */
    if (!p) return -1;
    unsigned long long utime, stime, start, vsize;
    long long rss;
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %llu %llu %lld",
               &utime, &stime, &start, &vsize, &rss) != 5)
        return -1;
    double tck = (double)sysconf(_SC_CLK_TCK);
    long page = sysconf(_SC_PAGESIZE);
    ps->cpu_s = (double)(utime + stime) / tck;
    ps->vsize = vsize;
    ps->rss = rss > 0 ? (uint64_t)rss * (uint64_t)page : 0;
    unsigned long long btime = 0;
    f = fopen("/proc/stat", "r");
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "btime %llu", &btime) == 1) break;
        fclose(f);
    }
    ps->start_s = (double)btime + (double)start / tck;
    return 0;
}

int64_t gw_process_start_ms(void)
{
    struct proc_stat ps;
    if (read_proc(&ps) != 0 || ps.start_s <= 0) return gw_now_ms();
    return (int64_t)(ps.start_s * 1000.0);
}

static uint64_t open_fds(void)
{
    uint64_t n = 0;
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    if (!d) return 0;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n > 0 ? n - 1 : 0;   /* less the descriptor of the listing itself */
}

static int w_process(struct gw_buf *b)
{
    struct proc_stat ps;
    struct rlimit rl;
    int rc = GW_OK;
    if (read_proc(&ps) == 0) {
        rc = one(b, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.",
                 ps.cpu_s);
        if (rc == GW_OK)
            rc = one(b, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", (double)ps.rss);
        if (rc == GW_OK)
            rc = one(b, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", (double)ps.vsize);
        if (rc == GW_OK)
            rc = family(b, "process_start_time_seconds", "gauge",
                        "Start time of the process since unix epoch in seconds.");
        if (rc == GW_OK) rc = gw_buf_printf(b, "process_start_time_seconds %.3f\n", ps.start_s);
    }
    if (rc == GW_OK)
        rc = one(b, "process_open_fds", "gauge", "Number of open file descriptors.", (double)open_fds());
    if (rc == GW_OK && getrlimit(RLIMIT_NOFILE, &rl) == 0)
        rc = one(b, "process_max_fds", "gauge", "Maximum number of open file descriptors.",
                 rl.rlim_cur == RLIM_INFINITY ? 1.8446744073709552e19 : (double)rl.rlim_cur);
    if (rc == GW_OK)
        rc = family(b, "gpuwatch_build_info", "gauge",
                    "A metric with a constant '1' value labeled by version, revision, branch, compiler and "
                    "build date from which gpuwatch was built.");
    if (rc == GW_OK)
        rc = gw_buf_printf(b,
                           "gpuwatch_build_info{version=\"%s\",revision=\"%s\",branch=\"%s\",compiler=\"%s\","
                           "builddate=\"%s\"} 1\n",
                           GW_VERSION, gw_build_revision, gw_build_branch, gw_build_compiler, gw_build_date);
    return rc;
}

/* ---- HTTP and remote write ---- */

/* Remote-write exemplars by outcome and the exemplar store's state (like
 * Prometheus' prometheus_tsdb_exemplar_* family). */
static int w_exemplars(struct gw_buf *b, struct gw_http *h)
{
    static const char *const outcome[GW_EXO_COUNT] = {"stored", "duplicate", "out_of_order", "too_long",
                                                      "invalid_series", "not_stored"};
    struct gw_exemplars_stats st;
    int rc = family(b, "gpuwatch_remote_write_exemplars_total", "counter",
                    "Remote-write exemplars by outcome (not_stored: the exemplar store has 0 capacity).");
    for (int i = 0; rc == GW_OK && i < GW_EXO_COUNT; i++)
        rc = gw_buf_printf(b, "gpuwatch_remote_write_exemplars_total{outcome=\"%s\"} %llu\n", outcome[i],
                           (unsigned long long)atomic_load(&h->c.exemplars[i]));
    gw_exemplars_stats(h->opts.exemplars, &st);
    struct { const char *name, *help; double v; } g[] = {
        {"gpuwatch_exemplars_max", "Exemplars the store can hold (--storage.exemplars.max-exemplars).",
         (double)st.cap},
        {"gpuwatch_exemplars_in_storage", "Exemplars held in memory.", (double)st.in_storage},
        {"gpuwatch_exemplars_series", "Series with exemplars held in memory.", (double)st.series},
        {"gpuwatch_exemplars_oldest_timestamp_seconds", "Timestamp of the oldest exemplar held (0: none).",
         (double)st.oldest_ms / 1000.0},
    };
    for (size_t i = 0; rc == GW_OK && i < sizeof g / sizeof g[0]; i++)
        rc = one(b, g[i].name, "gauge", g[i].help, g[i].v);
    return rc;
}

static int w_http(struct gw_buf *b, struct gw_http *h)
{
    int rc = family(b, "gpuwatch_http_requests_total", "counter", "HTTP requests by route and status code.");
    for (int r = 0; rc == GW_OK && r < GW_R_COUNT; r++)
        for (int c = 0; rc == GW_OK && c < GW_HTTP_N_CODES; c++) {
            uint64_t v = atomic_load(&h->c.requests[r][c]);
            if (v == 0) continue;
            if (gw_http_counted_codes[c] == 0)
                rc = gw_buf_printf(b, "gpuwatch_http_requests_total{route=\"%s\",code=\"other\"} %llu\n",
                                   gw_route_name((enum gw_route_id)r), (unsigned long long)v);
            else
                rc = gw_buf_printf(b, "gpuwatch_http_requests_total{route=\"%s\",code=\"%d\"} %llu\n",
                                   gw_route_name((enum gw_route_id)r), gw_http_counted_codes[c],
                                   (unsigned long long)v);
        }
    if (rc == GW_OK)
        rc = family(b, "gpuwatch_http_request_duration_seconds", "histogram",
                    "Time from the request's start to its answer being queued, by handler.");
    for (int r = 0; rc == GW_OK && r < GW_R_COUNT; r++) {
        char lab[128];
        if (atomic_load(&h->c.duration[r].count) == 0) continue;
        snprintf(lab, sizeof lab, "handler=\"%s\"", gw_route_name((enum gw_route_id)r));
        rc = gw_hist_write(b, "gpuwatch_http_request_duration_seconds", lab, &h->c.duration[r]);
    }
    if (rc == GW_OK)
        rc = one(b, "gpuwatch_http_request_body_bytes_total", "counter", "Request body bytes received.",
                 (double)atomic_load(&h->c.body_bytes));
    if (rc == GW_OK)
        rc = one(b, "gpuwatch_http_inflight_body_bytes", "gauge",
                 "Request body bytes held in memory now (--limits.http.max-inflight-body-bytes).",
                 (double)atomic_load(&h->inflight_body_bytes));
    if (rc == GW_OK)
        rc = one(b, "gpuwatch_http_limit_refusals_total", "counter",
                 "Requests answered 503 + Retry-After by a concurrency or in-flight body limit.",
                 (double)atomic_load(&h->limit_refusals));
    if (rc == GW_OK)
        rc = one(b, "gpuwatch_remote_write_samples_accepted_total", "counter", "Samples stored from remote write.",
                 (double)atomic_load(&h->c.samples_accepted));
    if (rc == GW_OK)
        rc = one(b, "gpuwatch_remote_write_samples_duplicate_total", "counter",
                 "Resent samples ignored (same timestamp and value).", (double)atomic_load(&h->c.samples_duplicate));
    if (rc == GW_OK)
        rc = family(b, "gpuwatch_remote_write_refused_total", "counter", "Data refused from remote write by reason.");
    struct { const char *reason; _Atomic uint64_t *v; } rs_[] = {
        {"duplicate_timestamp", &h->c.refused_conflict},
        {"out_of_order", &h->c.refused_out_of_order},
        {"too_old", &h->c.refused_too_old},
        {"too_new", &h->c.refused_too_new},
        {"invalid_series", &h->c.refused_invalid_series},
        {"invalid_series_samples", &h->c.refused_invalid_samples},
        {"histogram", &h->c.refused_histograms},
        {"exemplar", &h->c.refused_exemplars},
    };
    for (size_t i = 0; rc == GW_OK && i < sizeof rs_ / sizeof rs_[0]; i++)
        rc = gw_buf_printf(b, "gpuwatch_remote_write_refused_total{reason=\"%s\"} %llu\n", rs_[i].reason,
                           (unsigned long long)atomic_load(rs_[i].v));
    if (rc == GW_OK)
        rc = w_exemplars(b, h);
    if (rc == GW_OK)
        rc = one(b, "gpuwatch_remote_write_metadata_total", "counter", "Metadata entries stored.",
                 (double)atomic_load(&h->c.metadata_stored));
    if (rc == GW_OK)
        rc = one(b, "gpuwatch_ready", "gauge", "1 when the server reports ready.", atomic_load(&h->ready));
    return rc;
}

/* ---- latency of the work below HTTP ---- */

static int w_latency(struct gw_buf *b)
{
    int rc = family(b, "gpuwatch_query_duration_seconds", "histogram", "PromQL evaluation time by query kind.");
    if (rc == GW_OK) rc = gw_hist_write(b, "gpuwatch_query_duration_seconds", "kind=\"instant\"", &gw_hist_query[0]);
    if (rc == GW_OK) rc = gw_hist_write(b, "gpuwatch_query_duration_seconds", "kind=\"range\"", &gw_hist_query[1]);
    struct { const char *name, *help; const struct gw_hist *h; } hs[] = {
        {"gpuwatch_wal_fsync_duration_seconds", "Duration of WAL segment fdatasync calls.", &gw_hist_wal_fsync},
        {"gpuwatch_db_flush_duration_seconds", "Duration of flushes of settled head chunks to the store.",
         &gw_hist_db_flush},
        {"gpuwatch_db_checkpoint_duration_seconds",
         "Duration of checkpoints (flush, store sync, WAL truncation).", &gw_hist_db_checkpoint},
    };
    for (size_t i = 0; rc == GW_OK && i < sizeof hs / sizeof hs[0]; i++) {
        rc = family(b, hs[i].name, "histogram", hs[i].help);
        if (rc == GW_OK) rc = gw_hist_write(b, hs[i].name, "", hs[i].h);
    }
    return rc;
}

/* ---- storage ---- */

static int w_db(struct gw_buf *b, struct gw_http *h)
{
    struct gw_db *db = h->db;
    struct gw_db_stats st;
    struct gw_error err;
    int rc = GW_OK;
    gw_error_clear(&err);
    if (db == NULL || gw_db_stats(db, &st, &err) != GW_OK) return GW_OK;
    struct { const char *name, *type, *help; uint64_t v; } g[] = {
        {"gpuwatch_db_series", "gauge", "Series in the store.", st.series},
        {"gpuwatch_db_head_series", "gauge", "Series with an open head chunk.", st.head_series},
        {"gpuwatch_db_head_samples", "gauge", "Samples in head chunks.", st.head_samples},
        {"gpuwatch_db_head_bytes", "gauge", "Memory held by head chunks and series.", st.head_bytes},
        {"gpuwatch_db_stored_samples", "gauge", "Samples in persisted blocks.", st.stored_samples},
        {"gpuwatch_db_stored_block_bytes", "gauge", "Payload bytes of persisted blocks.", st.stored_block_bytes},
        {"gpuwatch_db_store_file_bytes", "gauge", "Size of the store (LMDB) data file.", st.store_file_bytes},
        {"gpuwatch_db_store_used_bytes", "gauge", "Store (LMDB) pages in use, in bytes.", st.store_used_bytes},
        {"gpuwatch_db_store_map_bytes", "gauge", "Store (LMDB) map size; it grows on demand.", st.store_map_bytes},
        {"gpuwatch_db_wal_bytes", "gauge", "Bytes in WAL segments.", st.wal_bytes},
        {"gpuwatch_db_appended_samples_total", "counter", "Samples appended since start.", st.appended},
        {"gpuwatch_db_refused_samples_total", "counter", "Samples refused since start.", st.refused},
    };
    for (size_t i = 0; rc == GW_OK && i < sizeof g / sizeof g[0]; i++)
        rc = one(b, g[i].name, g[i].type, g[i].help, (double)g[i].v);
    if (rc == GW_OK && st.store_map_bytes > 0)
        rc = one(b, "gpuwatch_db_store_map_used_ratio", "gauge", "Share of the store map in use (used / map size).",
                 (double)st.store_used_bytes / (double)st.store_map_bytes);
    /* seconds, not ms: promtool refuses abbreviated units in names */
    if (rc == GW_OK && st.mint != INT64_MAX) {
        rc = family(b, "gpuwatch_db_min_time_seconds", "gauge",
                    "Timestamp of the oldest stored sample (Unix seconds; absent while all data is in the head).");
        if (rc == GW_OK) rc = gw_buf_printf(b, "gpuwatch_db_min_time_seconds %.3f\n", (double)st.mint / 1000.0);
    }
    if (rc == GW_OK && st.maxt != INT64_MIN) {
        rc = family(b, "gpuwatch_db_max_time_seconds", "gauge", "Timestamp of the newest sample (Unix seconds).");
        if (rc == GW_OK) rc = gw_buf_printf(b, "gpuwatch_db_max_time_seconds %.3f\n", (double)st.maxt / 1000.0);
    }
    return rc;
}

static int w_replay(struct gw_buf *b, struct gw_http *h)
{
    struct gw_db_replay_state *r = h->opts.replay;
    int rc;
    if (!r) return GW_OK;
    rc = one(b, "gpuwatch_wal_replay_done", "gauge", "1 once the WAL replay at start has ended.",
             atomic_load(&r->done));
    if (rc == GW_OK)
        rc = one(b, "gpuwatch_wal_replay_bytes", "gauge", "WAL bytes replayed at start so far.",
                 (double)atomic_load(&r->bytes_done));
    if (rc == GW_OK)
        rc = one(b, "gpuwatch_wal_replay_total_bytes", "gauge", "WAL bytes to replay at start.",
                 (double)atomic_load(&r->bytes_total));
    return rc;
}

/* ---- detectors, alerts, configuration ---- */

static int w_detectors(struct gw_buf *b, struct gw_http *h)
{
    struct gw_det *det = h->det;
    struct gw_det_stats ds;
    static const char *const names[9] = {"peer_stats", "D1", "D2", "D3", "D4", "D5", "D6", "D7", "D8"};
    int rc;
    if (!det) return GW_OK;
    gw_det_stats(det, &ds);
    rc = family(b, "gpuwatch_detector_eval_seconds_total", "counter",
                "Time spent judging buckets, by detector (peer_stats: the shared peer statistics).");
    for (int i = 0; rc == GW_OK && i < 9; i++)
        rc = gw_buf_printf(b, "gpuwatch_detector_eval_seconds_total{detector=\"%s\"} %.9f\n", names[i],
                           (double)ds.eval_ns[i] / 1e9);
    if (rc == GW_OK)
        rc = family(b, "gpuwatch_detector_raises_total", "counter", "Alerts raised, by detector.");
    for (int i = 1; rc == GW_OK && i < 7; i++)
        rc = gw_buf_printf(b, "gpuwatch_detector_raises_total{detector=\"D%d\"} %llu\n", i,
                           (unsigned long long)ds.raises[i]);
    if (rc == GW_OK)
        rc = one(b, "gpuwatch_detector_samples_total", "counter", "Samples seen by a detector.", (double)ds.samples);
    if (rc == GW_OK)
        rc = one(b, "gpuwatch_detector_buckets_total", "counter", "Buckets judged.", (double)ds.buckets);
    if (rc == GW_OK)
        rc = one(b, "gpuwatch_detector_series", "gauge", "Series a detector reads.", (double)ds.series);
    if (rc == GW_OK)
        rc = one(b, "gpuwatch_detector_memory_bytes", "gauge", "Memory held by the detectors.", (double)ds.bytes);
    return rc;
}

static int w_alerts(struct gw_buf *b, struct gw_http *h)
{
    struct gw_alerts *al = __atomic_load_n(&h->opts.alerts, __ATOMIC_ACQUIRE);
    struct gw_alerts_stats as;
    struct gw_notifier_stats ns;
    if (al == NULL) return GW_OK;
    gw_alerts_stats(al, &as);
    gw_alerts_notifier_stats(al, &ns);
    return gw_buf_printf(b, "# HELP gpuwatch_alerts_active Alerts raised by the detectors, by state.\n"
                            "# TYPE gpuwatch_alerts_active gauge\n"
                            "gpuwatch_alerts_active{state=\"pending\"} %llu\n"
                            "gpuwatch_alerts_active{state=\"firing\"} %llu\n"
                            "# HELP gpuwatch_alerts_resolved_kept Resolved alerts still reported (15 min).\n"
                            "# TYPE gpuwatch_alerts_resolved_kept gauge\ngpuwatch_alerts_resolved_kept %llu\n"
                            "# HELP gpuwatch_alerts_raises_total Raises by the detectors.\n"
                            "# TYPE gpuwatch_alerts_raises_total counter\ngpuwatch_alerts_raises_total %llu\n"
                            "# HELP gpuwatch_alerts_dropped_total Raises ignored (out of memory, active alert cap).\n"
                            "# TYPE gpuwatch_alerts_dropped_total counter\ngpuwatch_alerts_dropped_total %llu\n"
                            "# HELP gpuwatch_alerts_notifications_sent_total Alerts delivered to Alertmanager.\n"
                            "# TYPE gpuwatch_alerts_notifications_sent_total counter\n"
                            "gpuwatch_alerts_notifications_sent_total %llu\n"
                            "# HELP gpuwatch_alerts_notifications_errors_total Failed POSTs to Alertmanager.\n"
                            "# TYPE gpuwatch_alerts_notifications_errors_total counter\n"
                            "gpuwatch_alerts_notifications_errors_total %llu\n"
                            "# HELP gpuwatch_alerts_notifications_dropped_total Alerts that could not be queued.\n"
                            "# TYPE gpuwatch_alerts_notifications_dropped_total counter\n"
                            "gpuwatch_alerts_notifications_dropped_total %llu\n"
                            "# HELP gpuwatch_alerts_notifications_queue_length Alerts due for sending to "
                            "Alertmanager now.\n"
                            "# TYPE gpuwatch_alerts_notifications_queue_length gauge\n"
                            "gpuwatch_alerts_notifications_queue_length %llu\n",
                         (unsigned long long)as.pending, (unsigned long long)as.firing,
                         (unsigned long long)as.resolved_kept, (unsigned long long)as.raises,
                         (unsigned long long)as.dropped, (unsigned long long)ns.sent, (unsigned long long)ns.errors,
                         (unsigned long long)ns.dropped, (unsigned long long)ns.queued);
}

static int w_config(struct gw_buf *b, struct gw_http *h)
{
    int rc = one(b, "gpuwatch_config_last_reload_successful", "gauge",
                 "Whether the last configuration reload attempt was successful.", atomic_load(&h->reload_ok));
    if (rc == GW_OK)
        rc = one(b, "gpuwatch_config_last_reload_success_timestamp_seconds", "gauge",
                 "Timestamp of the last successful configuration reload.",
                 (double)atomic_load(&h->reload_success_ms) / 1000.0);
    if (rc == GW_OK)
        rc = one(b, "gpuwatch_config_reloads_total", "counter", "Configuration reload attempts.",
                 (double)atomic_load(&h->reloads));
    if (rc == GW_OK)
        rc = one(b, "gpuwatch_config_reload_failures_total", "counter", "Configuration reloads refused.",
                 (double)atomic_load(&h->reload_failures));
    return rc;
}

void gw_http_set_forward(struct gw_http *h, struct gw_fwd *fwd)
{
    if (h) h->fwd = fwd;
}

/* One family of the forwarding destinations: value(st) per destination. */
struct fwd_family {
    const char *name, *type, *help;
    double (*value)(const struct gw_fwd_stats *st);
};
static double fv_lag(const struct gw_fwd_stats *s) { return s->lag_seconds; }
static double fv_pending(const struct gw_fwd_stats *s) { return (double)s->pending_bytes; }
static double fv_sent(const struct gw_fwd_stats *s) { return (double)s->samples_sent; }
static double fv_batches(const struct gw_fwd_stats *s) { return (double)s->batches_sent; }
static double fv_retried(const struct gw_fwd_stats *s) { return (double)s->batches_retried; }
static double fv_failed(const struct gw_fwd_stats *s) { return (double)s->batches_failed; }
static double fv_last_error(const struct gw_fwd_stats *s) { return s->last_error_s; }
static double fv_highest(const struct gw_fwd_stats *s) { return s->highest_sent_s; }

static const struct fwd_family fwd_families[] = {
    {"gpuwatch_forward_lag_seconds", "gauge",
     "Seconds since the destination last had every WAL record sent (0: caught up).", fv_lag},
    {"gpuwatch_forward_pending_bytes", "gauge", "WAL bytes not yet sent to the destination.", fv_pending},
    {"gpuwatch_forward_samples_sent_total", "counter", "Samples acknowledged by the destination.", fv_sent},
    {"gpuwatch_forward_batches_sent_total", "counter", "Requests acknowledged by the destination.", fv_batches},
    {"gpuwatch_forward_batches_retried_total", "counter",
     "Failed attempts that were retried (5xx, 429, connection errors).", fv_retried},
    {"gpuwatch_forward_batches_failed_total", "counter",
     "Batches dropped because the destination refused them (4xx other than 429).", fv_failed},
    {"gpuwatch_forward_last_error_timestamp_seconds", "gauge", "Time of the last failed attempt (0: none).",
     fv_last_error},
    {"gpuwatch_forward_highest_sent_timestamp_seconds", "gauge",
     "Newest sample timestamp acknowledged by the destination.", fv_highest},
};

/* `url="..."` with the exposition format's escapes. */
static int fwd_label(struct gw_buf *b, const char *url)
{
    int rc = gw_buf_printf(b, "{url=\"");
    for (const char *p = url; rc == GW_OK && *p; p++)
        rc = *p == '"' || *p == '\\' ? gw_buf_printf(b, "\\%c", *p)
             : *p == '\n'            ? gw_buf_printf(b, "\\n")
                                      : gw_buf_putc(b, (uint8_t)*p);
    return rc;
}

static int w_forward(struct gw_buf *b, struct gw_http *h)
{
    struct gw_fwd *f = h->fwd;
    size_t n = gw_fwd_n_dests(f);
    struct gw_fwd_stats st[GW_FWD_MAX_DESTS];
    static const char *const reasons[3] = {"rejected", "max_pending", "missing"};
    int rc = GW_OK;
    if (n == 0) return GW_OK;
    for (size_t i = 0; i < n; i++) gw_fwd_stats(f, i, &st[i]);
    for (size_t k = 0; rc == GW_OK && k < sizeof fwd_families / sizeof fwd_families[0]; k++) {
        const struct fwd_family *ff = &fwd_families[k];
        rc = family(b, ff->name, ff->type, ff->help);
        for (size_t i = 0; rc == GW_OK && i < n; i++) {
            rc = gw_buf_printf(b, "%s", ff->name);
            if (rc == GW_OK) rc = fwd_label(b, st[i].url);
            if (rc == GW_OK) rc = gw_buf_printf(b, "\"} %.15g\n", ff->value(&st[i]));
        }
    }
    if (rc == GW_OK)
        rc = family(b, "gpuwatch_forward_samples_dropped_total", "counter",
                    "Samples not sent, by reason: rejected (a refused batch), max_pending (released past "
                    "--forward.max-pending), missing (series labels not found).");
    for (size_t i = 0; rc == GW_OK && i < n; i++) {
        uint64_t v[3] = {st[i].dropped_rejected, st[i].dropped_max_pending, st[i].dropped_missing};
        for (int r = 0; rc == GW_OK && r < 3; r++) {
            rc = gw_buf_printf(b, "gpuwatch_forward_samples_dropped_total");
            if (rc == GW_OK) rc = fwd_label(b, st[i].url);
            if (rc == GW_OK) rc = gw_buf_printf(b, "\",reason=\"%s\"} %llu\n", reasons[r], (unsigned long long)v[r]);
        }
    }
    return rc;
}

void gw_api_metrics(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    struct gw_http *h = rq->h;
    struct gw_buf *b = &rs->body;
    int rc;
    gw_buf_reset(b);
    rc = w_process(b);
    if (rc == GW_OK) rc = w_http(b, h);
    if (rc == GW_OK) rc = w_latency(b);
    if (rc == GW_OK) rc = w_db(b, h);
    if (rc == GW_OK) rc = w_replay(b, h);
    if (rc == GW_OK) rc = w_detectors(b, h);
    if (rc == GW_OK) rc = w_alerts(b, h);
    if (rc == GW_OK) rc = w_config(b, h);
    if (rc == GW_OK) rc = w_forward(b, h);
    if (rc != GW_OK) {
        gw_resp_text(rs, 500, "cannot render metrics: %s", gw_strerror(rc));
        return;
    }
    rs->status = 200;
    rs->content_type = "text/plain; version=0.0.4; charset=utf-8";
}
