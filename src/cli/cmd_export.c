/* cmd_export.c - `gpuwatch export`: every raw sample of the series matching
 * a selector, as OpenMetrics text (format at the top of
 * src/ingest/openmetrics.c).
 *
 *   gpuwatch export --data-dir DIR --match 'up{job="x"}' [--from T] [--to T] [--out FILE]
 *   gpuwatch export --url http://127.0.0.1:9201 --match ... 
 *
 * From a data dir no process uses, the db is opened (the WAL replayed into
 * the head) and read with gw_db_select: head and store. When a serve holds
 * the dir (or with --url) the samples come from the serve's remote-read
 * endpoint (raw samples, head and store). The file is written to
 * FILE.tmp and renamed when complete. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/db.h"
#include "gpuwatch/httpc.h"
#include "gpuwatch/json.h"
#include "gpuwatch/matcher.h"
#include "gpuwatch/promql.h"
#include "gpuwatch/rw.h"
#include "cli.h"
#include "cli_export.h"
#include "cli_parse.h"

#define EXPORT_MAX_MATCHERS 64

struct export_args {
    const char *dir, *url, *match, *out, *from_s, *to_s;
    int strict;
};

static const struct gw_cli_opt export_opts[] = {
    {.name = "--data-dir", .arg = "DIR", .help = "read this data dir (or --url)", .type = GW_CLI_STR,
     GW_CLI_AT(struct export_args, dir), .flags = GW_CLI_NONEMPTY},
    {.name = "--url", .arg = "URL", .help = "read from a running serve (remote read)", .type = GW_CLI_STR,
     GW_CLI_AT(struct export_args, url), .flags = GW_CLI_NONEMPTY},
    {.name = "--match", .arg = "SELECTOR", .help = "series selector, e.g. 'DCGM_FI_DEV_GPU_TEMP{Hostname=\"n1\"}'",
     .type = GW_CLI_STR, GW_CLI_AT(struct export_args, match), .flags = GW_CLI_REQUIRED | GW_CLI_NONEMPTY},
    {.name = "--from", .arg = "T", .help = "first timestamp: RFC 3339, Unix seconds, now-DUR or -DUR\n(default: all)",
     .type = GW_CLI_STR, GW_CLI_AT(struct export_args, from_s), .flags = GW_CLI_NONEMPTY},
    {.name = "--to", .arg = "T", .help = "last timestamp (default: all)", .type = GW_CLI_STR,
     GW_CLI_AT(struct export_args, to_s), .flags = GW_CLI_NONEMPTY},
    {.name = "--out", .arg = "FILE", .help = "write here (default: stdout)", .type = GW_CLI_STR,
     GW_CLI_AT(struct export_args, out), .flags = GW_CLI_NONEMPTY},
    {.name = "--strict", .help = "pure OpenMetrics: leave stale markers out, write every NaN as NaN",
     .type = GW_CLI_FLAG, GW_CLI_AT(struct export_args, strict)},
    {0},
};

static const struct gw_cli_cmd export_cmd = {
    .name = "export",
    .synopsis = "--data-dir DIR|--url URL --match SELECTOR [--from T] [--to T] [--out FILE] [--strict]",
    .intro = "Writes every raw sample (head and store) of the matching series in the range as\n"
             "OpenMetrics text: '# TYPE' per metric family, one line per sample with its\n"
             "timestamp in seconds, '# EOF' last. Values read back bit-exact with 'gpuwatch\n"
             "import'; stale markers and NaNs with other payloads are written as\n"
             "NaN:<hex bits> (--strict leaves stale markers out instead). When a serve runs on\n"
             "DIR its remote-read endpoint is used.\n",
    .opts = export_opts,
};

int gw_cli_time_arg(const char *v, int64_t now, int not_before_epoch, int64_t *out)
{
    int64_t d;
    double s;
    if (!strcmp(v, "now")) {
        *out = now;
        return 0;
    }
    const char *rel = !strncmp(v, "now-", 4) ? v + 4 : v[0] == '-' ? v + 1 : NULL;
    if (rel) {
        if (gw_parse_duration_ms(rel, &d) != GW_OK || d <= 0)
            return -1;
        *out = now - d;
        return 0;
    }
    if (gw_parse_rfc3339(v, out) == GW_OK)
        return 0;
    if (gw_cli_parse_double(v, &s) == 0 && (not_before_epoch ? s >= 0 : s > -9.2e15) && s < 9.2e15) {
        *out = (int64_t)(s * 1000.0);
        return 0;
    }
    return -1;
}

struct exp {
    FILE *f;
    struct gw_om_writer w;
    struct gw_buf b;
    uint64_t series;
    int io_failed;
};

static int exp_series(struct exp *e, const uint8_t *labels, size_t len, const int64_t *t, const double *v, size_t n)
{
    gw_buf_reset(&e->b);
    int rc = gw_om_series(&e->w, &e->b, labels, len, t, v, n);
    if (rc != GW_OK)
        return rc;
    if (e->b.len && fwrite(e->b.data, 1, e->b.len, e->f) != e->b.len) {
        e->io_failed = 1;
        return GW_EIO;
    }
    e->series++;
    return GW_OK;
}

static int db_cb(void *ud, uint64_t sid, const uint8_t *labels, size_t len, const int64_t *t, const double *v,
                 size_t n)
{
    (void)sid;
    return exp_series(ud, labels, len, t, v, n);
}

static int read_cb(void *ud, size_t qi, const uint8_t *labels, size_t len, const int64_t *t, const double *v,
                   size_t n)
{
    (void)qi;
    return exp_series(ud, labels, len, t, v, n);
}

static int export_db(const char *dir, struct gw_matcher *m, size_t nm, int64_t from, int64_t to, struct exp *e,
                     struct gw_error *err)
{
    struct gw_db_opts o;
    gw_db_opts_default(&o);
    o.dir = dir;
    struct gw_db *db = NULL;
    int rc = gw_db_open(&db, &o, err);
    if (rc != GW_OK)
        return rc;
    struct gw_db_select q = {.matchers = m, .n_matchers = nm, .mint = from, .maxt = to, .with_samples = 1,
                             .only_with_data = 1};
    rc = gw_db_select(db, &q, db_cb, e, err);
    gw_db_close(db);
    return rc;
}

int gw_cli_remote_read(const char *url, struct gw_matcher *m, size_t nm, int64_t from, int64_t to,
                       gw_read_series_cb cb, void *ud, struct gw_error *err)
{
    struct gw_read_query qq = {.start_ms = from, .end_ms = to, .matchers = m, .n_matchers = nm};
    struct gw_read_request rq = {.queries = &qq, .n_queries = 1};
    struct gw_buf pb, body;
    gw_buf_init(&pb, 0);
    gw_buf_init(&body, 0);
    int rc = gw_read_request_encode(&rq, 0, &pb);
    if (rc == GW_OK)
        rc = gw_snappy_encode(pb.data, pb.len, &body);
    struct gw_httpc *c = NULL;
    struct gw_httpc_opts o;
    gw_httpc_opts_default(&o);
    o.timeout_ms = 3600 * 1000;
    o.user_agent = "gpuwatch-cli";
    static const struct gw_httpc_header h[] = {{"Content-Encoding", "snappy"},
                                               {"Content-Type", "application/x-protobuf"},
                                               {"X-Prometheus-Remote-Read-Version", "0.1.0"}};
    struct gw_httpc_response r;
    gw_httpc_response_init(&r);
    if (rc == GW_OK)
        rc = gw_httpc_open(&c, url, &o, err);
    if (rc == GW_OK)
        rc = gw_httpc_request(c, "POST", "/api/v1/read", h, 3, body.data, body.len, &r, err);
    if (rc == GW_OK && r.status != 200)
        rc = gw_error_set(err, GW_EIO, "%s answered %d: %.200s", url, r.status,
                          r.body.len ? (const char *)r.body.data : "");
    if (rc == GW_OK)
        rc = gw_read_response_decode(r.body.data, r.body.len, cb, ud, err);
    gw_httpc_response_free(&r);
    gw_httpc_close(c);
    gw_buf_free(&pb);
    gw_buf_free(&body);
    return rc;
}

int gw_cli_http_post(const char *hostport, const char *path, int timeout_ms, char *resp, size_t resp_len)
{
    char url[400];
    struct gw_error err = {0};
    struct gw_httpc *c = NULL;
    struct gw_httpc_opts o;
    gw_httpc_opts_default(&o);
    o.timeout_ms = timeout_ms;
    o.user_agent = "gpuwatch-cli";
    snprintf(url, sizeof url, "http://%s/", hostport);
    int status = -1;
    if (gw_httpc_open(&c, url, &o, &err) == GW_OK) {
        struct gw_httpc_response r;
        gw_httpc_response_init(&r);
        if (gw_httpc_request(c, "POST", path, NULL, 0, NULL, 0, &r, &err) == GW_OK) {
            status = r.status;
            snprintf(resp, resp_len, "%.*s", (int)r.body.len, r.body.len ? (const char *)r.body.data : "");
        }
        gw_httpc_response_free(&r);
        gw_httpc_close(c);
    }
    if (status < 0)
        snprintf(resp, resp_len, "%s", err.msg);
    return status;
}

int gw_cli_serve_addr(const char *dir, char *addr, size_t cap)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/serve.addr", dir);
    addr[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int ok = fgets(addr, (int)cap, f) != NULL;
    fclose(f);
    addr[strcspn(addr, "\r\n")] = 0;
    return ok ? 0 : -1;
}

int gw_cli_serve_url(const char *dir, char *out, size_t cap)
{
    char addr[300];
    if (gw_cli_serve_addr(dir, addr, sizeof addr) != 0 || !addr[0])
        return -1;
    snprintf(out, cap, "http://%s/", addr);
    return 0;
}

/* Runs the export into e (its file open); GW_OK or an error in err. */
static int export_run(const struct export_args *a, struct gw_matcher *m, size_t nm, int64_t from, int64_t to,
                      struct exp *e, struct gw_error *err)
{
    if (a->url)
        return gw_cli_remote_read(a->url, m, nm, from, to, read_cb, e, err);
    char sp[4200];
    struct stat sb;
    snprintf(sp, sizeof sp, "%s/store", a->dir);
    if (stat(sp, &sb) != 0)
        return gw_error_set(err, GW_ENOTFOUND, "no gpuwatch store in %s", a->dir);
    int lock = -1;
    int rc = gw_db_lock_dir(a->dir, &lock, err);
    if (rc == GW_OK) {
        close(lock);
        return export_db(a->dir, m, nm, from, to, e, err);
    }
    char url[400];
    if (rc == GW_ELIMIT && gw_cli_serve_url(a->dir, url, sizeof url) == 0) {
        gw_error_clear(err);
        return gw_cli_remote_read(url, m, nm, from, to, read_cb, e, err);
    }
    return rc;
}

int gw_cli_export(int argc, char **argv)
{
    struct export_args a = {0};
    int rc = gw_cli_parse(&export_cmd, argc, argv, &a);
    if (rc >= 0)
        return rc;
    if (!a.dir == !a.url)
        return gw_cli_usage_error(&export_cmd, 1, "give exactly one of --data-dir and --url");
    int64_t now = gw_now_ms(), from = a.url ? 0 : INT64_MIN + 1, to = a.url ? now + 86400000LL : INT64_MAX - 1;
    if (a.from_s && gw_cli_time_arg(a.from_s, now, 0, &from) != 0)
        return gw_cli_usage_error(&export_cmd, 0, "invalid --from \"%s\"", a.from_s);
    if (a.to_s && gw_cli_time_arg(a.to_s, now, 0, &to) != 0)
        return gw_cli_usage_error(&export_cmd, 0, "invalid --to \"%s\"", a.to_s);
    if (from > to)
        return gw_cli_usage_error(&export_cmd, 0, "--from is after --to");
    struct gw_matcher m[EXPORT_MAX_MATCHERS];
    size_t nm = 0;
    struct gw_error err = {0};
    if (gw_pq_parse_selector(a.match, strlen(a.match), m, EXPORT_MAX_MATCHERS, &nm, &err) != GW_OK)
        return gw_cli_usage_error(&export_cmd, 0, "invalid --match: %s", err.msg);
    char tmp[4200];
    struct exp e = {.f = stdout};
    gw_om_writer_init(&e.w, a.strict);
    gw_buf_init(&e.b, 0);
    if (a.out) {
        snprintf(tmp, sizeof tmp, "%s.tmp", a.out);
        e.f = fopen(tmp, "w");
        if (!e.f) {
            fprintf(stderr, "gpuwatch export: cannot create %s: %s\n", tmp, strerror(errno));
            rc = 1;
            goto out;
        }
    }
    rc = export_run(&a, m, nm, from, to, &e, &err);
    gw_buf_reset(&e.b);
    if (rc == GW_OK && (gw_om_finish(&e.w, &e.b) != GW_OK || fwrite(e.b.data, 1, e.b.len, e.f) != e.b.len))
        rc = GW_EIO;
    if (a.out) {
        if (fflush(e.f) != 0 || fsync(fileno(e.f)) != 0)
            rc = rc ? rc : GW_EIO;
        fclose(e.f);
        if (rc == GW_OK && rename(tmp, a.out) != 0)
            rc = gw_error_set(&err, GW_EIO, "cannot rename %s: %s", tmp, strerror(errno));
        if (rc != GW_OK)
            unlink(tmp);
    } else if (fflush(stdout) != 0) {
        rc = rc ? rc : GW_EIO;
    }
    if (rc != GW_OK) {
        fprintf(stderr, "gpuwatch export: %s\n", err.msg[0] ? err.msg : e.io_failed ? "write failed" : gw_strerror(rc));
        rc = 1;
        goto out;
    }
    fprintf(stderr, "gpuwatch export: %llu series, %llu samples%s", (unsigned long long)e.series,
            (unsigned long long)e.w.samples, e.w.dropped ? "" : "\n");
    if (e.w.dropped)
        fprintf(stderr, " (%llu stale markers left out)\n", (unsigned long long)e.w.dropped);
out:
    for (size_t i = 0; i < nm; i++)
        gw_matcher_free(&m[i]);
    gw_buf_free(&e.b);
    return rc;
}
