/* main.c - the gpuwatch command: subcommand dispatch, stats, retention
 * (serve is cmd_serve.c). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/db.h"
#include "cli.h"
#include "cli_export.h"
#include "cli_parse.h"

struct stats_args {
    const char *dir;
    int json;
};

static const struct gw_cli_opt stats_opts[] = {
    {.name = "--data-dir", .arg = "DIR", .help = "the data directory", .type = GW_CLI_STR,
     GW_CLI_AT(struct stats_args, dir), .flags = GW_CLI_REQUIRED},
    {.name = "--json", .help = "one JSON object instead of the table", .type = GW_CLI_FLAG,
     GW_CLI_AT(struct stats_args, json)},
    {0},
};

static const struct gw_cli_cmd stats_cmd = {
    .name = "stats",
    .synopsis = "--data-dir DIR [--json]",
    .intro = "Prints series, samples, bytes on disk and bytes per sample, in total and per\n"
             "day partition. Safe while 'gpuwatch serve' runs on the same dir.\n",
    .opts = stats_opts,
};

struct retention_args {
    const char *dir, *keep_s, *size_s;
    int64_t keep_ms;
    uint64_t size_bytes;
};

static int retention_keep(void *base, const char *v)
{
    struct retention_args *a = base;
    if (gw_parse_duration_ms(v, &a->keep_ms) != GW_OK || a->keep_ms <= 0)
        return -1;
    a->keep_s = v;
    return 0;
}

static int retention_size(void *base, const char *v)
{
    struct retention_args *a = base;
    if (gw_parse_size_bytes(v, &a->size_bytes) != GW_OK || a->size_bytes == 0)
        return -1;
    a->size_s = v;
    return 0;
}

static const struct gw_cli_opt retention_opts[] = {
    {.name = "--data-dir", .arg = "DIR", .help = "the data directory", .type = GW_CLI_STR,
     GW_CLI_AT(struct retention_args, dir), .flags = GW_CLI_REQUIRED},
    {.name = "--keep", .arg = "DUR", .help = "keep this much history, e.g. 55d", .type = GW_CLI_CALL,
     .set = retention_keep, .expect = "a duration such as 55d, 12h or 8w"},
    {.name = "--size", .arg = "SIZE", .help = "drop the oldest days until the store's pages in use\n"
     "fit in SIZE, e.g. 500GB or 20GiB (the newest day stays)", .type = GW_CLI_CALL,
     .set = retention_size, .expect = "a size such as 500GB, 20GiB or 1.5TB"},
    {0},
};

static const struct gw_cli_cmd retention_cmd = {
    .name = "retention",
    .synopsis = "--data-dir DIR [--keep DUR] [--size SIZE]",
    .intro = "Drops day partitions whose data is older than DUR (e.g. 55d), and/or the\n"
             "oldest ones until the store's pages in use fit in SIZE (at least one of\n"
             "the two is required). Freed pages are reused by later writes; the file\n"
             "shrinks only when 'gpuwatch compact' runs offline. When a 'gpuwatch\n"
             "serve' runs on DIR the request is handed to it over HTTP; otherwise the\n"
             "dir is changed directly.\n",
    .opts = retention_opts,
};

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
    struct stats_args a = {0};
    int rc = gw_cli_parse(&stats_cmd, argc, argv, &a);
    if (rc >= 0)
        return rc;
    const char *dir = a.dir;
    int json = a.json;
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

static int cmd_retention(int argc, char **argv)
{
    struct retention_args a = {0};
    int rc = gw_cli_parse(&retention_cmd, argc, argv, &a);
    if (rc >= 0)
        return rc;
    if (!a.keep_s && !a.size_s)
        return gw_cli_usage_error(&retention_cmd, 1, "--keep or --size is required");
    const char *dir = a.dir, *keep_s = a.keep_s;
    int64_t keep = a.keep_ms;
    struct gw_db_opts o;
    gw_db_opts_default(&o);
    o.dir = dir;
    struct gw_error err = {0};
    struct gw_db *db = NULL;
    rc = gw_db_open(&db, &o, &err);
    if (rc != GW_OK) {
        /* A running serve holds the dir: hand the request to it. */
        char addr[300];
        if (gw_cli_serve_addr(dir, addr, sizeof addr) == 0) {
            char path[512], resp[4096];
            snprintf(path, sizeof path, "/api/v1/admin/retention?%s%s%s%s", keep_s ? "keep=" : "",
                     keep_s ? keep_s : "", a.size_s ? (keep_s ? "&size=" : "size=") : "", a.size_s ? a.size_s : "");
            int status = gw_cli_http_post(addr, path, 10000, resp, sizeof resp);
            if (status >= 200 && status < 300) {
                printf("%s\n", resp[0] ? resp : "ok");
                return 0;
            }
            if (status < 0)
                fprintf(stderr, "gpuwatch retention: the running server at %s does not answer: %s\n", addr, resp);
            else
                fprintf(stderr, "gpuwatch retention: the running server at %s answered %d: %s\n", addr, status, resp);
            return 1;
        }
        fprintf(stderr, "gpuwatch retention: cannot open %s: %s\n", dir, err.msg);
        return 1;
    }
    unsigned dropped = 0, dropped_size = 0;
    rc = keep_s ? gw_db_retention(db, keep, gw_now_ms(), &dropped, &err) : GW_OK;
    if (rc == GW_OK && a.size_s) rc = gw_db_retention_size(db, a.size_bytes, &dropped_size, &err);
    gw_db_close(db);
    if (rc) {
        fprintf(stderr, "gpuwatch retention: %s\n", err.msg);
        return 1;
    }
    if (keep_s) printf("dropped %u partition(s) older than %s\n", dropped, keep_s);
    if (a.size_s) printf("dropped %u partition(s) to fit in %s\n", dropped_size, a.size_s);
    return 0;
}


static int cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("gpuwatch %s\n", GW_VERSION);
    return 0;
}

/* The subcommands: a new one is a line here and its gw_cli_<name> (cli.h). */
static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} commands[] = {
    {"serve", gw_cli_serve, "receive Prometheus remote write, store it, answer the Prometheus API"},
    {"stats", cmd_stats, "series, samples and bytes on disk of a data dir (per partition)"},
    {"retention", cmd_retention, "drop stored data older than a duration or beyond a size"},
    {"compact", gw_cli_compact, "re-encode finished days, drop dead series, shrink the store file"},
    {"downsample", gw_cli_downsample, "5m/1h aggregates of finished days; drop raw days past raw retention"},
    {"query", gw_cli_query, "evaluate a PromQL expression against a running serve or a data dir"},
    {"simulate", gw_cli_simulate, "simulate a GPU cluster's exporters and remote-write them (with ground truth)"},
    {"evaluate", gw_cli_evaluate, "score the failure detectors against a simulated cluster's ground truth"},
    {"exclusions", gw_cli_exclusions, "the nodes to keep out of the next job (node ledger), for a scheduler"},
    {"report", gw_cli_report, "reliability report of a data dir (Markdown or HTML; read-only)"},
    {"verify", gw_cli_verify, "check every block, the index and the WAL of a data dir (read-only)"},
    {"backup", gw_cli_backup, "consistent copy of a data dir, also while serve runs"},
    {"restore", gw_cli_restore, "check a backup and restore it into a data dir"},
    {"export", gw_cli_export, "raw samples of matching series as OpenMetrics text"},
    {"import", gw_cli_import, "backfill samples from OpenMetrics/Prometheus text or remote-write files"},
    {"version", cmd_version, "print the version"},
};

static void usage_main(FILE *f)
{
    fputs("usage: gpuwatch <command> [options]\n\ncommands:\n", f);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-11s %s\n", commands[i].name, commands[i].summary);
    fputs("\nRun 'gpuwatch <command> --help' for the options of a command.\n", f);
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage_main(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--version"))
        return cmd_version(0, NULL);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(cmd, commands[i].name))
            return commands[i].run(argc - 2, argv + 2);
    fprintf(stderr, "gpuwatch: unknown command \"%s\"\n\n", cmd);
    usage_main(stderr);
    return 2;
}
