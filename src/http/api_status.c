/* api_status.c - Prometheus' status API and the reload endpoint:
 *   GET /api/v1/status/buildinfo    version, revision, branch, buildUser,
 *                                   buildDate, goVersion (here: the C compiler)
 *   GET /api/v1/status/runtimeinfo  Prometheus 2.42's keys; the Go runtime
 *                                   ones carry their nearest honest value:
 *                                   goroutineCount = OS threads of the
 *                                   process, GOMAXPROCS = online CPUs,
 *                                   GOGC and GODEBUG "" (no garbage collector)
 *   GET /api/v1/status/flags        every serve flag, as strings
 *   GET /api/v1/status/config       {"yaml": the detector configuration}
 *   GET /api/v1/status/tsdb         headStats and the top-10 cardinality lists
 *   GET /api/v1/status/walreplay    {min, max, current} WAL segment numbers
 *   POST /-/reload                  reloads the detector configuration
 *                                   (loopback clients only, or admin
 *                                   credentials when configured; the
 *                                   TLS and authentication files first)
 * Every route here but tsdb answers during the WAL replay. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/detect.h"
#include "gpuwatch/labels.h"
#include "gpuwatch/log.h"
#include "http/http_int.h"

static void json_data(struct gw_http_resp *rs, const struct gw_buf *data)
{
    gw_buf_reset(&rs->body);
    rs->status = 200;
    rs->content_type = "application/json";
    if (gw_buf_printf(&rs->body, "{\"status\":\"success\",\"data\":%.*s}", (int)data->len,
                      data->data ? (const char *)data->data : "null") != GW_OK)
        gw_resp_api_error(rs, "internal", "out of memory");
}

/* RFC 3339 with milliseconds, UTC, as Go's time.Time marshals (quoted). */
static int json_time(struct gw_buf *b, int64_t ms)
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    char t[32];
    gmtime_r(&s, &tm);
    strftime(t, sizeof t, "%Y-%m-%dT%H:%M:%S", &tm);
    return gw_buf_printf(b, "\"%s.%03dZ\"", t, (int)(ms % 1000));
}

void gw_api_buildinfo(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    struct gw_buf d;
    (void)rq;
    gw_buf_init(&d, 0);
    gw_buf_printf(&d,
                  "{\"version\":\"%s\",\"revision\":\"%s\",\"branch\":\"%s\",\"buildUser\":\"%s\","
                  "\"buildDate\":\"%s\",\"goVersion\":\"%s\"}",
                  GW_VERSION, gw_build_revision, gw_build_branch, gw_build_user, gw_build_date, gw_build_compiler);
    json_data(rs, &d);
    gw_buf_free(&d);
}

/* OS threads of this process (/proc/self/status). */
static long thread_count(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long n = 0;
    if (!f) return 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "Threads: %ld", &n) == 1) break;
    fclose(f);
    return n;
}

void gw_api_runtimeinfo(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    struct gw_http *h = rq->h;
    struct gw_buf d;
    char cwd[4096];
    int rc;
    gw_buf_init(&d, 0);
    if (!getcwd(cwd, sizeof cwd)) snprintf(cwd, sizeof cwd, "<unknown>");
    rc = gw_buf_printf(&d, "{\"startTime\":");
    if (rc == GW_OK) rc = json_time(&d, h->start_ms);
    if (rc == GW_OK) rc = gw_buf_printf(&d, ",\"CWD\":");
    if (rc == GW_OK) rc = gw_json_str(&d, cwd, strlen(cwd));
    if (rc == GW_OK)
        rc = gw_buf_printf(&d, ",\"reloadConfigSuccess\":%s,\"lastConfigTime\":",
                           atomic_load(&h->reload_ok) ? "true" : "false");
    if (rc == GW_OK) rc = json_time(&d, atomic_load(&h->reload_success_ms));
    pthread_mutex_lock(&h->info_mu);
    const char *ret = h->retention[0] ? h->retention : "";
    if (rc == GW_OK)
        rc = gw_buf_printf(&d,
                           ",\"corruptionCount\":%lld,\"goroutineCount\":%ld,\"GOMAXPROCS\":%ld,\"GOGC\":\"\","
                           "\"GODEBUG\":\"\",\"storageRetention\":",
                           h->opts.replay ? (long long)atomic_load(&h->opts.replay->corruptions) : 0LL,
                           thread_count(), sysconf(_SC_NPROCESSORS_ONLN));
    if (rc == GW_OK) rc = gw_json_str(&d, ret, strlen(ret));
    pthread_mutex_unlock(&h->info_mu);
    if (rc == GW_OK) rc = gw_buf_putc(&d, '}');
    if (rc != GW_OK)
        gw_resp_api_error(rs, "internal", "out of memory");
    else
        json_data(rs, &d);
    gw_buf_free(&d);
}

void gw_api_flags(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    struct gw_http *h = rq->h;
    struct gw_buf d;
    gw_buf_init(&d, 0);
    pthread_mutex_lock(&h->info_mu);
    gw_buf_printf(&d, "%s", h->flags_json ? h->flags_json : "{}");
    pthread_mutex_unlock(&h->info_mu);
    json_data(rs, &d);
    gw_buf_free(&d);
}

void gw_api_config(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    struct gw_http *h = rq->h;
    struct gw_buf d;
    int rc;
    gw_buf_init(&d, 0);
    pthread_mutex_lock(&h->info_mu);
    const char *y = h->config_yaml ? h->config_yaml : "";
    rc = gw_buf_printf(&d, "{\"yaml\":");
    if (rc == GW_OK) rc = gw_json_str(&d, y, strlen(y));
    pthread_mutex_unlock(&h->info_mu);
    if (rc == GW_OK) rc = gw_buf_putc(&d, '}');
    if (rc != GW_OK)
        gw_resp_api_error(rs, "internal", "out of memory");
    else
        json_data(rs, &d);
    gw_buf_free(&d);
}

void gw_api_walreplay(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    struct gw_db_replay_state *r = rq->h->opts.replay;
    struct gw_buf d;
    long long mn = 0, mx = 0, cur = 0;
    if (r && atomic_load(&r->started) && atomic_load(&r->first) >= 0) {
        mn = (long long)atomic_load(&r->first);
        mx = (long long)atomic_load(&r->last);
        cur = (long long)atomic_load(&r->current);
    }
    gw_buf_init(&d, 0);
    gw_buf_printf(&d, "{\"min\":%lld,\"max\":%lld,\"current\":%lld}", mn, mx, cur);
    json_data(rs, &d);
    gw_buf_free(&d);
}

void gw_http_starting_msg(struct gw_http *h, char *msg, size_t cap)
{
    struct gw_db_replay_state *r = h->opts.replay;
    if (r && atomic_load(&r->started) && !atomic_load(&r->done)) {
        uint64_t done = atomic_load(&r->bytes_done), total = atomic_load(&r->bytes_total);
        unsigned pct = total ? (unsigned)((double)done * 100.0 / (double)total) : 0;
        snprintf(msg, cap, "starting: WAL replay %u%% (segment %lld of %lld..%lld)", pct,
                 (long long)atomic_load(&r->current), (long long)atomic_load(&r->first),
                 (long long)atomic_load(&r->last));
    } else if (h->db == NULL && r && atomic_load(&r->done)) {
        snprintf(msg, cap, "starting: WAL replayed, writing settled data to the store");
    } else if (h->db == NULL) {
        snprintf(msg, cap, "starting: opening the data dir");
    } else {
        snprintf(msg, cap, "starting");
    }
}

/* ---- reload ---- */

void gw_http_set_reload(struct gw_http *h, gw_http_reload_fn fn, void *ud)
{
    if (!h) return;
    pthread_mutex_lock(&h->info_mu);
    h->reload_fn = fn;
    h->reload_ud = ud;
    pthread_mutex_unlock(&h->info_mu);
}

void gw_http_note_reload(struct gw_http *h, int ok)
{
    if (!h) return;
    atomic_fetch_add(&h->reloads, 1);
    atomic_store(&h->reload_ok, ok ? 1 : 0);
    if (ok)
        atomic_store(&h->reload_success_ms, gw_now_ms());
    else
        atomic_fetch_add(&h->reload_failures, 1);
}

void gw_api_reload(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    struct gw_http *h = rq->h;
    struct gw_error err;
    gw_http_reload_fn fn;
    void *ud;
    if (!gw_http_is_loopback(rq)) {
        gw_resp_text(rs, 403, "reload answers loopback clients only (or admin credentials, when configured)");
        return;
    }
    gw_error_clear(&err);
    if (gw_http_reload_security(h, &err) != GW_OK) {
        gw_resp_text(rs, 500, "failed to reload the TLS or authentication files: %s", err.msg);
        return;
    }
    pthread_mutex_lock(&h->info_mu);
    fn = h->reload_fn;
    ud = h->reload_ud;
    pthread_mutex_unlock(&h->info_mu);
    if (!fn) {
        if (h->tls != NULL || h->auth != NULL)
            gw_resp_text(rs, 200, "TLS and authentication files reloaded (no --config.file)");
        else
            gw_resp_text(rs, 200, "nothing to reload: serve was started without --config.file");
        return;
    }
    if (fn(ud, &err) != GW_OK) {
        gw_resp_text(rs, 500, "failed to reload config: %s", err.msg);
        return;
    }
    rs->status = 200;
    rs->content_type = "text/plain; charset=utf-8";
}

/* ---- flags and configuration text ---- */

/* Ends the text built in b (rc: how building it went) with a NUL and swaps
 * it into *slot under info_mu; on an error b is freed and *slot kept. */
static int set_info_text(struct gw_http *h, char **slot, struct gw_buf *b, int rc)
{
    if (rc == GW_OK) rc = gw_buf_putc(b, '\0');
    if (rc != GW_OK) {
        gw_buf_free(b);
        return rc;
    }
    size_t len;
    char *s = (char *)gw_buf_steal(b, &len);
    pthread_mutex_lock(&h->info_mu);
    free(*slot);
    *slot = s;
    pthread_mutex_unlock(&h->info_mu);
    return GW_OK;
}

int gw_http_set_flags(struct gw_http *h, const char *const *names, const char *const *values, size_t n)
{
    struct gw_buf b;
    int rc;
    gw_buf_init(&b, 0);
    rc = gw_buf_putc(&b, '{');
    for (size_t i = 0; rc == GW_OK && i < n; i++) {
        if (i) rc = gw_buf_putc(&b, ',');
        if (rc == GW_OK) rc = gw_json_str(&b, names[i], strlen(names[i]));
        if (rc == GW_OK) rc = gw_buf_putc(&b, ':');
        if (rc == GW_OK) rc = gw_json_str(&b, values[i] ? values[i] : "", values[i] ? strlen(values[i]) : 0);
    }
    if (rc == GW_OK) rc = gw_buf_putc(&b, '}');
    return set_info_text(h, &h->flags_json, &b, rc);
}

void gw_http_set_storage_retention(struct gw_http *h, const char *retention)
{
    pthread_mutex_lock(&h->info_mu);
    snprintf(h->retention, sizeof h->retention, "%s", retention ? retention : "");
    pthread_mutex_unlock(&h->info_mu);
}

/* One "key = value" line of gw_det_config_write as YAML: "key: value",
 * quoted values single-quoted (no escapes in YAML single quotes but ''),
 * comments and blank lines as they are. */
static int yaml_line(struct gw_buf *y, const char *line, size_t len)
{
    const char *eq = memchr(line, '=', len);
    if (len == 0 || line[0] == '#' || !eq) {
        int rc = gw_buf_append(y, line, len);
        return rc == GW_OK ? gw_buf_putc(y, '\n') : rc;
    }
    const char *k_end = eq, *v = eq + 1, *v_end = line + len;
    while (k_end > line && k_end[-1] == ' ') k_end--;
    while (v < v_end && *v == ' ') v++;
    while (v_end > v && (v_end[-1] == ' ' || v_end[-1] == '\r')) v_end--;
    int rc = gw_buf_append(y, line, (size_t)(k_end - line));
    if (rc == GW_OK) rc = gw_buf_append(y, ": ", 2);
    if (v_end - v >= 2 && v[0] == '"' && v_end[-1] == '"') {
        v++;
        v_end--;
    }
    if (rc == GW_OK) rc = gw_buf_putc(y, '\'');
    for (const char *p = v; rc == GW_OK && p < v_end; p++) {
        rc = gw_buf_putc(y, (uint8_t)*p);
        if (rc == GW_OK && *p == '\'') rc = gw_buf_putc(y, '\'');
    }
    if (rc == GW_OK) rc = gw_buf_append(y, "'\n", 2);
    return rc;
}

int gw_http_set_det_config(struct gw_http *h, const struct gw_det_config *c)
{
    char *text = NULL;
    size_t text_len = 0;
    FILE *f = open_memstream(&text, &text_len);
    struct gw_buf y;
    int rc;
    if (!f) return GW_ENOMEM;
    rc = gw_det_config_write(c, f);
    fclose(f);
    if (rc != GW_OK || !text) {
        free(text);
        return rc != GW_OK ? rc : GW_ENOMEM;
    }
    gw_buf_init(&y, 0);
    for (const char *p = text; rc == GW_OK && p < text + text_len;) {
        const char *nl = memchr(p, '\n', (size_t)(text + text_len - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(text + text_len - p);
        rc = yaml_line(&y, p, n);
        p += n + (nl ? 1 : 0);
    }
    free(text);
    return set_info_text(h, &h->config_yaml, &y, rc);
}

void gw_http_set_detectors(struct gw_http *h, struct gw_det *det)
{
    if (h) h->det = det;
}
