/* cmd_compact.c - `gpuwatch compact`: re-encodes finished days into one
 * blob per node and day, drops dead series and (offline) gives freed pages
 * back to the file system (docs/storage.md, "Compaction"). When a
 * `gpuwatch serve` runs on the dir the request is handed to it over HTTP
 * (POST /api/v1/admin/compact), as `gpuwatch retention` does; otherwise
 * the dir is opened directly. Also the schedule of `serve --compact.schedule`
 * and the compaction thread of serve. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/db.h"
#include "gpuwatch/httpc.h"
#include "gpuwatch/log.h"
#include "cli.h"
#include "cli_progress.h"
#include "cli_export.h"
#include "cli_parse.h"
#include "cli_thread.h"
#include "serve_compact.h"

struct compact_args {
    const char *dir;
    int keep_dead, no_copy, json;
};

static const struct gw_cli_opt compact_opts[] = {
    {.name = "--data-dir", .arg = "DIR", .help = "the data directory", .type = GW_CLI_STR,
     GW_CLI_AT(struct compact_args, dir), .flags = GW_CLI_REQUIRED | GW_CLI_NONEMPTY},
    {.name = "--keep-dead", .help = "leave series without data in the index", .type = GW_CLI_FLAG,
     GW_CLI_AT(struct compact_args, keep_dead)},
    {.name = "--no-file-copy", .help = "offline: skip the compacting copy of the LMDB file", .type = GW_CLI_FLAG,
     GW_CLI_AT(struct compact_args, no_copy)},
    {.name = "--json", .help = "print the summary as one JSON object", .type = GW_CLI_FLAG,
     GW_CLI_AT(struct compact_args, json)},
    {0},
};

static const struct gw_cli_cmd compact_cmd = {
    .name = "compact",
    .synopsis = "--data-dir DIR [--keep-dead] [--no-file-copy] [--json]",
    .intro = "Re-encodes every finished UTC day (before today, and older than anything\n"
             "still in memory) into one blob per node and day, with longer\n"
             "runs for the codec; every sample stays bit-exact. Drops series that have\n"
             "no data left (and their label pairs). Safe to run again: finished work is\n"
             "skipped, data that arrived late is merged.\n"
             "\n"
             "When 'gpuwatch serve' runs on DIR the request is handed to it over HTTP\n"
             "(ingest goes on meanwhile); otherwise DIR is opened directly and, at the\n"
             "end, the LMDB file is rewritten with a compacting copy so freed space goes\n"
             "back to the file system (crash-safe: copy, fsync, rename). Online, freed\n"
             "pages are reused by later writes but the file does not shrink.\n",
    .opts = compact_opts,
    .outro = "\nProgress goes to stderr: a bar with rate and ETA on a terminal, log lines\n"
             "otherwise. serve runs the same compaction on its own thread, see\n"
             "'gpuwatch serve --help' (--compact.schedule).\n",
};

/* ---- progress ---- */

/* The phases of gw_db_compact ("days", "series", "copy") through the one
 * progress reporter (cli_progress.h); done of total units of the phase. */
static void progress_cb(void *ud, const char *phase, uint64_t done, uint64_t total, uint64_t samples)
{
    (void)samples;
    gw_cli_progress_update(ud, phase, done, total);
}

/* ---- summary ---- */

static void print_summary(const struct gw_db_compact_result *r, int json)
{
    if (json) {
        printf("{\"days\":%u,\"node_days\":%" PRIu64 ",\"node_days_raced\":%" PRIu64 ",\"blobs_before\":%" PRIu64
               ",\"blobs_after\":%" PRIu64 ",\"bytes_before\":%" PRIu64 ",\"bytes_after\":%" PRIu64
               ",\"samples\":%" PRIu64 ",\"series_dropped\":%" PRIu64 ",\"pairs_dropped\":%" PRIu64
               ",\"file_bytes_before\":%" PRIu64 ",\"file_bytes_after\":%" PRIu64 ",\"live_bytes_before\":%" PRIu64
               ",\"live_bytes_after\":%" PRIu64 ",\"file_copied\":%s}\n",
               r->days, r->node_days, r->node_days_raced, r->blobs_before, r->blobs_after, r->bytes_before,
               r->bytes_after, r->samples, r->series_dropped, r->pairs_dropped, r->file_before, r->file_after,
               r->live_before, r->live_after, r->file_copied ? "true" : "false");
        return;
    }
    printf("days compacted      %u (%" PRIu64 " node-days", r->days, r->node_days);
    if (r->node_days_raced) printf(", %" PRIu64 " changed meanwhile, left for the next run", r->node_days_raced);
    printf(")\n");
    printf("blobs               %" PRIu64 " -> %" PRIu64 "\n", r->blobs_before, r->blobs_after);
    printf("blob bytes          %" PRIu64 " -> %" PRIu64, r->bytes_before, r->bytes_after);
    if (r->samples)
        printf(" (%.3f -> %.3f bytes/sample)", (double)r->bytes_before / (double)r->samples,
               (double)r->bytes_after / (double)r->samples);
    printf("\nsamples re-encoded  %" PRIu64 "\n", r->samples);
    printf("series dropped      %" PRIu64 " (label pairs dropped %" PRIu64 ")\n", r->series_dropped, r->pairs_dropped);
    printf("pages in use        %" PRIu64 " -> %" PRIu64 "\n", r->live_before, r->live_after);
    printf("file bytes          %" PRIu64 " -> %" PRIu64 "%s\n", r->file_before, r->file_after,
           r->file_copied ? "" : " (no compacting copy)");
}

/* ---- handing over to a running serve ---- */

static int handoff(const char *dir, const struct compact_args *a, const char *open_err)
{
    char addr[300];
    if (gw_cli_serve_addr(dir, addr, sizeof addr) != 0) {
        fprintf(stderr, "gpuwatch compact: cannot open %s: %s\n", dir, open_err);
        return 1;
    }
    char url[400];
    snprintf(url, sizeof url, "http://%s/", addr);
    struct gw_error err = {0};
    struct gw_httpc *c = NULL;
    struct gw_httpc_opts o;
    gw_httpc_opts_default(&o);
    o.timeout_ms = 24 * 3600 * 1000;   /* a compaction of many days takes a while */
    o.user_agent = "gpuwatch-cli";
    int status = -1;
    struct gw_httpc_response r;
    gw_httpc_response_init(&r);
    if (!a->json)
        fprintf(stderr, "gpuwatch compact: handed to the running server at %s; waiting for it\n", addr);
    if (gw_httpc_open(&c, url, &o, &err) == GW_OK &&
        gw_httpc_request(c, "POST", a->keep_dead ? "/api/v1/admin/compact?keep_dead=1" : "/api/v1/admin/compact",
                         NULL, 0, NULL, 0, &r, &err) == GW_OK)
        status = r.status;
    int rc = 0;
    if (status >= 200 && status < 300) {
        printf("%.*s\n", (int)r.body.len, r.body.len ? (const char *)r.body.data : "");
    } else if (status < 0) {
        fprintf(stderr, "gpuwatch compact: the running server at %s does not answer: %s\n", addr, err.msg);
        rc = 1;
    } else {
        fprintf(stderr, "gpuwatch compact: the running server at %s answered %d: %.*s\n", addr, status,
                (int)r.body.len, r.body.len ? (const char *)r.body.data : "");
        rc = 1;
    }
    gw_httpc_response_free(&r);
    gw_httpc_close(c);
    return rc;
}

int gw_cli_compact(int argc, char **argv)
{
    struct compact_args a = {0};
    int rc = gw_cli_parse(&compact_cmd, argc, argv, &a);
    if (rc >= 0) return rc;
    struct gw_db_opts o;
    gw_db_opts_default(&o);
    o.dir = a.dir;
    struct gw_error err = {0};
    struct gw_db *db = NULL;
    if (access(a.dir, F_OK) != 0) {
        fprintf(stderr, "gpuwatch compact: no data dir %s\n", a.dir);
        return 1;
    }
    if (gw_db_open(&db, &o, &err) != GW_OK) return handoff(a.dir, &a, err.msg);
    /* everything the WAL held goes to the store first */
    if (gw_db_flush(db, &err) != GW_OK) {
        fprintf(stderr, "gpuwatch compact: cannot flush %s: %s\n", a.dir, err.msg);
        gw_db_close(db);
        return 1;
    }
    struct gw_cli_progress p;
    gw_cli_progress_init(&p, "compact", 0);
    struct gw_db_compact_opts co = {.copy_file = !a.no_copy, .keep_dead = a.keep_dead, .progress = progress_cb,
                                    .ud = &p};
    struct gw_db_compact_result r;
    rc = gw_db_compact(db, &co, &r, &err);
    gw_cli_progress_end(&p);
    gw_db_close(db);
    if (rc != GW_OK) {
        fprintf(stderr, "gpuwatch compact: %s\n", err.msg);
        return 1;
    }
    print_summary(&r, a.json);
    return 0;
}

/* ---- serve --compact.schedule ---- */

int gw_compact_sched_parse(const char *v, struct gw_compact_sched *out)
{
    memset(out, 0, sizeof *out);
    if (!strcmp(v, "off")) {
        out->off = 1;
        return 0;
    }
    unsigned hh, mm;
    char extra;
    if (strlen(v) == 5 && v[2] == ':' && sscanf(v, "%2u:%2u%c", &hh, &mm, &extra) == 2 && hh < 24 && mm < 60) {
        out->daily = 1;
        out->minute_of_day = (int)(hh * 60 + mm);
        return 0;
    }
    int64_t ms;
    if (gw_parse_duration_ms(v, &ms) == GW_OK && ms >= 60000) {
        out->every_ms = ms;
        return 0;
    }
    return -1;
}

int64_t gw_compact_sched_next(const struct gw_compact_sched *s, int64_t now_ms)
{
    if (s->off) return INT64_MAX;
    if (!s->daily) return now_ms + s->every_ms;
    int64_t day = now_ms / 86400000LL * 86400000LL;
    int64_t at = day + (int64_t)s->minute_of_day * 60000;
    return at > now_ms ? at : at + 86400000LL;
}

struct gw_serve_compact {
    struct gw_db *db;
    struct gw_compact_sched sched;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stopping;
};

static int sc_stop(void *ud)
{
    struct gw_serve_compact *c = ud;
    pthread_mutex_lock(&c->mu);
    int s = c->stopping;
    pthread_mutex_unlock(&c->mu);
    return s;
}

static void *sc_main(void *arg)
{
    struct gw_serve_compact *c = arg;
    for (;;) {
        int64_t next = gw_compact_sched_next(&c->sched, gw_now_ms());
        pthread_mutex_lock(&c->mu);
        while (!c->stopping && gw_now_ms() < next) {
            int64_t wait = next - gw_now_ms();
            if (wait > 60000) wait = 60000;   /* re-read the clock every minute */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += wait / 1000;
            ts.tv_nsec += (long)(wait % 1000) * 1000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&c->cv, &c->mu, &ts);
        }
        int stop = c->stopping;
        pthread_mutex_unlock(&c->mu);
        if (stop) break;
        struct gw_db_compact_opts o = {.stop = sc_stop, .ud = c};
        struct gw_db_compact_result r;
        struct gw_error e = {0};
        gw_log(GW_LOG_INFO, "compact", "msg=\"scheduled compaction starts\"");
        int rc = gw_db_compact(c->db, &o, &r, &e);
        if (rc == GW_ESHUTDOWN)
            gw_log(GW_LOG_INFO, "compact", "msg=\"scheduled compaction stopped for shutdown; the rest waits for the next run\"");
        else if (rc != GW_OK)
            gw_log(GW_LOG_WARN, "compact", "msg=\"scheduled compaction failed\" err=\"%s\"", e.msg);
    }
    return NULL;
}

int gw_serve_compact_start(struct gw_serve_compact **out, struct gw_db *db, const struct gw_compact_sched *s)
{
    *out = NULL;
    if (s->off) return GW_OK;
    struct gw_serve_compact *c = calloc(1, sizeof *c);
    if (!c) return GW_ENOMEM;
    c->db = db;
    c->sched = *s;
    if (gw_cli_thread_start(&c->th, &c->mu, &c->cv, sc_main, c) != GW_OK) {
        free(c);
        return GW_ENOMEM;
    }
    *out = c;
    return GW_OK;
}

void gw_serve_compact_stop(struct gw_serve_compact *c)
{
    if (!c) return;
    gw_cli_thread_stop(c->th, &c->mu, &c->cv, &c->stopping);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
}
