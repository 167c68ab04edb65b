/* cmd_downsample.c - `gpuwatch downsample` (offline, or handed to a
 * running serve over POST /api/v1/admin/downsample) and the downsampling
 * thread of `gpuwatch serve`, sharing one option table (docs/downsampling.md). */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/db.h"
#include "gpuwatch/log.h"
#include "cli.h"
#include "cli_ds.h"
#include "cli_export.h"
#include "cli_parse.h"
#include "cli_thread.h"

void gw_cli_ds_default(struct gw_cli_ds *d)
{
    struct gw_db_downsample ds;
    gw_db_downsample_default(&ds);
    d->raw_ms = ds.raw_retention_ms;
    d->res5m_ms = ds.res5m_retention_ms;
    d->interval_ms = 10 * 60 * 1000;
    snprintf(d->raw_s, sizeof d->raw_s, "14d");
    snprintf(d->res5m_s, sizeof d->res5m_s, "90d");
}

/* "0" (keep forever / off) or a positive duration. */
static int ds_dur(int64_t *ms, char *text, size_t cap, const char *v)
{
    if (!strcmp(v, "0")) {
        *ms = 0;
    } else if (gw_parse_duration_ms(v, ms) != GW_OK || *ms <= 0) {
        return -1;
    }
    if (text)
        snprintf(text, cap, "%s", v);
    return 0;
}

static int set_raw(void *p, const char *v)
{
    struct gw_cli_ds *d = p;
    return ds_dur(&d->raw_ms, d->raw_s, sizeof d->raw_s, v);
}

static int set_5m(void *p, const char *v)
{
    struct gw_cli_ds *d = p;
    return ds_dur(&d->res5m_ms, d->res5m_s, sizeof d->res5m_s, v);
}

static int set_interval(void *p, const char *v)
{
    struct gw_cli_ds *d = p;
    return ds_dur(&d->interval_ms, NULL, 0, v);
}

#define DS_EXPECT "0 or a duration such as 14d, 12h or 8w"

#define DS_RAW_OPT                                                                                                \
    {.name = "--downsample.raw-retention", .arg = "DUR", .type = GW_CLI_CALL, .set = set_raw, .expect = DS_EXPECT, \
     .help = "\nkeep raw samples this long (default 14d; 0: forever); an older raw\n"                           \
             "day is dropped only once its 5m and 1h aggregates exist"}
#define DS_5M_OPT                                                                                                 \
    {.name = "--downsample.5m-retention", .arg = "DUR", .type = GW_CLI_CALL, .set = set_5m, .expect = DS_EXPECT,  \
     .help = "\nkeep 5-minute aggregates this long (default 90d; 0: forever);\n"                                \
             "1-hour aggregates are kept until --retention"}

const struct gw_cli_opt gw_cli_ds_opts[] = {DS_RAW_OPT, DS_5M_OPT, {0}};

/* serve's table: the retentions and the interval */
const struct gw_cli_opt gw_cli_ds_serve_opts[] = {
    DS_RAW_OPT,
    DS_5M_OPT,
    {.name = "--downsample.interval", .arg = "DUR", .type = GW_CLI_CALL, .set = set_interval,
     .expect = DS_EXPECT, .help = "\nhow often serve looks for finished days to downsample\n(default 10m; 0: never)"},
    {0},
};

static void print_result(const struct gw_db_downsample *ds)
{
    printf("downsampled %u day(s), re-did %u, %u already done; %" PRIu64 " series, %" PRIu64
           " samples -> %" PRIu64 " 5m and %" PRIu64 " 1h buckets (%" PRIu64 " bytes)\n"
           "dropped %u raw day(s), %u 5m day(s), %u 1h day(s)\n",
           ds->days_done, ds->days_redone, ds->days_fresh, ds->series, ds->samples, ds->buckets_5m, ds->buckets_1h,
           ds->bytes, ds->raw_dropped, ds->res5m_dropped, ds->res1h_dropped);
}

/* ---- the serve thread ---- */

struct gw_cli_ds_thread {
    struct gw_db *db;
    struct gw_cli_ds o;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
};

static void *ds_main(void *arg)
{
    struct gw_cli_ds_thread *t = arg;
    pthread_mutex_lock(&t->mu);
    int64_t wait_ms = 60 * 1000;   /* the first run a minute after start */
    while (!t->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += wait_ms / 1000;
        pthread_cond_timedwait(&t->cv, &t->mu, &ts);
        if (t->stop)
            break;
        pthread_mutex_unlock(&t->mu);
        struct gw_db_downsample ds;
        gw_db_downsample_default(&ds);
        ds.raw_retention_ms = t->o.raw_ms;
        ds.res5m_retention_ms = t->o.res5m_ms;
        struct gw_error err = {0};
        if (gw_db_downsample_run(t->db, gw_now_ms(), &ds, &err) != GW_OK)
            gw_log(GW_LOG_WARN, "downsample", "msg=\"downsampling failed; will retry\" err=\"%s\"", err.msg);
        else if (ds.days_done || ds.days_redone || ds.raw_dropped || ds.res5m_dropped || ds.res1h_dropped)
            gw_log(GW_LOG_INFO, "downsample",
                   "msg=\"downsampled\" days=%u redone=%u series=%" PRIu64 " raw_dropped=%u res5m_dropped=%u",
                   ds.days_done, ds.days_redone, ds.series, ds.raw_dropped, ds.res5m_dropped);
        pthread_mutex_lock(&t->mu);
        wait_ms = t->o.interval_ms;
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

int gw_cli_ds_start(struct gw_cli_ds_thread **out, struct gw_db *db, const struct gw_cli_ds *o)
{
    *out = NULL;
    if (o->interval_ms <= 0)
        return GW_OK;
    struct gw_cli_ds_thread *t = calloc(1, sizeof *t);
    if (!t)
        return GW_ENOMEM;
    t->db = db;
    t->o = *o;
    if (gw_cli_thread_start(&t->th, &t->mu, &t->cv, ds_main, t) != GW_OK) {
        free(t);
        return GW_ENOMEM;
    }
    *out = t;
    return GW_OK;
}

void gw_cli_ds_stop(struct gw_cli_ds_thread *t)
{
    if (!t)
        return;
    gw_cli_thread_stop(t->th, &t->mu, &t->cv, &t->stop);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    free(t);
}

/* ---- gpuwatch downsample ---- */

struct ds_args {
    const char *dir;
    struct gw_cli_ds o;
};

static const struct gw_cli_opt ds_opts[] = {
    {.name = "--data-dir", .arg = "DIR", .help = "the data directory", .type = GW_CLI_STR,
     GW_CLI_AT(struct ds_args, dir), .flags = GW_CLI_REQUIRED},
    {.type = GW_CLI_TABLE, .sub = gw_cli_ds_opts, GW_CLI_AT(struct ds_args, o)},
    {0},
};

static const struct gw_cli_cmd ds_cmd = {
    .name = "downsample",
    .synopsis = "--data-dir DIR [--downsample.raw-retention DUR] [--downsample.5m-retention DUR]",
    .intro = "Computes 5-minute and 1-hour aggregates of every finished UTC day that has\n"
             "none (or got late data since), then drops raw days older than the raw\n"
             "retention whose aggregates exist and 5-minute aggregates older than theirs\n"
             "(docs/downsampling.md). Idempotent. When a 'gpuwatch serve' runs on DIR the\n"
             "request is handed to it over HTTP (POST /api/v1/admin/downsample);\n"
             "otherwise the dir is changed directly.\n",
    .opts = ds_opts,
};

static int hand_over(const char *dir, const struct gw_cli_ds *o, const char *why)
{
    char addr[300];
    if (gw_cli_serve_addr(dir, addr, sizeof addr) != 0) {
        fprintf(stderr, "gpuwatch downsample: cannot open %s: %s\n", dir, why);
        return 1;
    }
    char path[512], resp[4096];
    snprintf(path, sizeof path, "/api/v1/admin/downsample?raw_retention=%s&res5m_retention=%s", o->raw_s,
             o->res5m_s);
    /* a first run over weeks of data takes a while */
    int status = gw_cli_http_post(addr, path, 30 * 60 * 1000, resp, sizeof resp);
    if (status >= 200 && status < 300) {
        printf("%s\n", resp[0] ? resp : "ok");
        return 0;
    }
    if (status < 0)
        fprintf(stderr, "gpuwatch downsample: the running server at %s does not answer: %s\n", addr, resp);
    else
        fprintf(stderr, "gpuwatch downsample: the running server at %s answered %d: %s\n", addr, status, resp);
    return 1;
}

int gw_cli_downsample(int argc, char **argv)
{
    struct ds_args a;
    memset(&a, 0, sizeof a);
    gw_cli_ds_default(&a.o);
    int rc = gw_cli_parse(&ds_cmd, argc, argv, &a);
    if (rc >= 0)
        return rc;
    struct gw_db_opts o;
    gw_db_opts_default(&o);
    o.dir = a.dir;
    struct gw_error err = {0};
    struct gw_db *db = NULL;
    if (gw_db_open(&db, &o, &err) != GW_OK)
        return hand_over(a.dir, &a.o, err.msg);
    /* what the WAL replay put in the head belongs in the store first */
    rc = gw_db_flush(db, &err);
    struct gw_db_downsample ds;
    gw_db_downsample_default(&ds);
    ds.raw_retention_ms = a.o.raw_ms;
    ds.res5m_retention_ms = a.o.res5m_ms;
    if (rc == GW_OK)
        rc = gw_db_downsample_run(db, gw_now_ms(), &ds, &err);
    gw_db_close(db);
    if (rc != GW_OK) {
        fprintf(stderr, "gpuwatch downsample: %s\n", err.msg);
        return 1;
    }
    print_result(&ds);
    return 0;
}
