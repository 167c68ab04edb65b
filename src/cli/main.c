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
#include "gpuwatch/httpc.h"
#include "cli.h"
#include "cli_parse.h"

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
    "  exclusions  the nodes to keep out of the next job (node ledger), for a scheduler\n"
    "  report      reliability report of a data dir (Markdown or HTML; read-only)\n"
    "  version     print the version\n"
    "\n"
    "Run 'gpuwatch <command> --help' for the options of a command.\n";

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
    if (gw_cli_want_help(argc, argv)) {
        fputs(usage_stats, stdout);
        return 0;
    }
    const char *dir = NULL;
    int json = 0;
    for (int i = 0; i < argc; i++) {
        const char *v;
        if ((v = gw_cli_opt_value(argc, argv, &i, "--data-dir"))) dir = v;
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

/* POSTs to a running serve (10 s timeout): the HTTP status, the body into
 * resp; -1 with the reason in resp when there is no answer. */
static int http_post(const char *hostport, const char *path, char *resp, size_t resp_len)
{
    char url[400];
    struct gw_error err = {0};
    struct gw_httpc *c = NULL;
    struct gw_httpc_opts o;
    gw_httpc_opts_default(&o);
    o.timeout_ms = 10000;
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
    if (status < 0) snprintf(resp, resp_len, "%s", err.msg);
    return status;
}

static int cmd_retention(int argc, char **argv)
{
    if (gw_cli_want_help(argc, argv)) {
        fputs(usage_retention, stdout);
        return 0;
    }
    const char *dir = NULL, *keep_s = NULL;
    for (int i = 0; i < argc; i++) {
        const char *v;
        if ((v = gw_cli_opt_value(argc, argv, &i, "--data-dir"))) dir = v;
        else if ((v = gw_cli_opt_value(argc, argv, &i, "--keep"))) keep_s = v;
        else {
            fprintf(stderr, "gpuwatch retention: unknown option \"%s\"\n\n%s", argv[i], usage_retention);
            return 2;
        }
    }
    if (!dir || !keep_s) {
        fprintf(stderr, "gpuwatch retention: --data-dir and --keep are required\n");
        return 2;
    }
    int64_t keep = gw_cli_parse_dur_or_exit("--keep", keep_s);
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
                printf("%s\n", resp[0] ? resp : "ok");
                return 0;
            }
            if (status < 0)
                fprintf(stderr, "gpuwatch retention: the running server at %s does not answer: %s\n", addr, resp);
            else
                fprintf(stderr, "gpuwatch retention: the running server at %s answered %d: %s\n", addr, status, resp);
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


int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        fputs(usage_main, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "serve")) return gw_cli_serve(argc - 2, argv + 2);
    if (!strcmp(cmd, "stats")) return cmd_stats(argc - 2, argv + 2);
    if (!strcmp(cmd, "retention")) return cmd_retention(argc - 2, argv + 2);
    if (!strcmp(cmd, "query")) return gw_cli_query(argc - 2, argv + 2);
    if (!strcmp(cmd, "simulate")) return gw_cli_simulate(argc - 2, argv + 2);
    if (!strcmp(cmd, "evaluate")) return gw_cli_evaluate(argc - 2, argv + 2);
    if (!strcmp(cmd, "exclusions")) return gw_cli_exclusions(argc - 2, argv + 2);
    if (!strcmp(cmd, "report")) return gw_cli_report(argc - 2, argv + 2);
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("gpuwatch %s\n", GW_VERSION);
        return 0;
    }
    fprintf(stderr, "gpuwatch: unknown command \"%s\"\n\n%s", cmd, usage_main);
    return 2;
}
