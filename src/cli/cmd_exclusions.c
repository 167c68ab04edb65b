/* cmd_exclusions.c - `gpuwatch exclusions`: the nodes the ledger says to
 * keep out of the next job (docs/ledger.md), from a running serve
 * (GET /api/v1/exclusions over httpc.h) or from a data dir read-only (safe
 * next to a running serve), as a scheduler wants them:
 *
 *   gpuwatch exclusions --url http://127.0.0.1:9201                 one host per line
 *   sbatch --exclude="$(gpuwatch exclusions --data-dir /var/lib/gpuwatch --format slurm)" job.sh
 *   gpuwatch exclusions --url http://127.0.0.1:9201 --format json   the API's answer
 *
 * The exclusions are computed over the last 30 days of data, with "now"
 * the newest data (gw_led_data_newest), as the server computes them.
 * Exit status: 0 (also with no exclusion: empty output), 1 failure,
 * 2 bad usage. */
#include <stdio.h>
#include <string.h>

#include "gpuwatch/buf.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/db.h"
#include "gpuwatch/httpc.h"
#include "gpuwatch/ledger.h"
#include "cli.h"
#include "cli_parse.h"

#define EXCL_RANGE_MS (30 * 86400000LL)
#define EXCL_MAX_RESPONSE ((size_t)256 << 20)

struct excl_opts {
    const char *url, *dir, *format;
};

static const char *const formats[] = {"hosts", "slurm", "json", NULL};

static const struct gw_cli_opt excl_opts_table[] = {
    {.name = "--url", .arg = "URL", .type = GW_CLI_STR, GW_CLI_AT(struct excl_opts, url), .flags = GW_CLI_NONEMPTY,
     .expect = "a URL", .help = "a running gpuwatch serve, e.g. http://127.0.0.1:9201"},
    {.name = "--data-dir", .arg = "DIR", .type = GW_CLI_STR, GW_CLI_AT(struct excl_opts, dir),
     .flags = GW_CLI_NONEMPTY, .expect = "a directory",
     .help = "compute from a data dir, read-only (safe next to a running serve)"},
    {.name = "--format", .arg = "F", .type = GW_CLI_STR, GW_CLI_AT(struct excl_opts, format), .choices = formats,
     .help = "hosts: one node per line (default); slurm: comma-separated, for\n"
             "sbatch --exclude; json: the /api/v1/exclusions answer with reasons"},
    {0},
};

static const struct gw_cli_cmd excl_cmd = {
    .name = "exclusions",
    .synopsis = "(--url URL | --data-dir DIR) [--format hosts|slurm|json]",
    .opts = excl_opts_table,
    .outro = "\nNodes excluded now by the node ledger (failures, repeats, lemons, scheduler\n"
             "exclusions) over the last 30 days of data; see docs/ledger.md.\n"
             "Exit status: 0 (also with no exclusion: empty output), 1 failure, 2 bad usage.\n",
};

/* Options: -1 to go on, else the exit status. */
static int excl_parse(int argc, char **argv, struct excl_opts *o)
{
    o->url = o->dir = NULL;
    o->format = "hosts";
    int rc = gw_cli_parse(&excl_cmd, argc, argv, o);
    if (rc >= 0)
        return rc;
    if (!o->url == !o->dir)
        return gw_cli_usage_error(&excl_cmd, 0, "give one of --url and --data-dir");
    return -1;
}

static int excl_from_server(const struct excl_opts *o)
{
    struct gw_error err = {0};
    struct gw_httpc *c = NULL;
    struct gw_httpc_opts ho;
    gw_httpc_opts_default(&ho);
    ho.user_agent = "gpuwatch-cli";
    ho.timeout_ms = 120000;
    ho.max_body_bytes = EXCL_MAX_RESPONSE;
    struct gw_httpc_response r;
    gw_httpc_response_init(&r);
    int ret = 1, rc = gw_httpc_open(&c, o->url, &ho, &err);
    if (rc == GW_OK) {
        /* the API lives under the URL's path (a proxy may add a prefix) */
        char path[2300];
        const char *base = gw_httpc_url(c)->path;
        size_t bl = strlen(base);
        while (bl && base[bl - 1] == '/') bl--;
        snprintf(path, sizeof path, "%.*s/api/v1/exclusions?format=%s", (int)bl, base, o->format);
        rc = gw_httpc_request(c, "GET", path, NULL, 0, NULL, 0, &r, &err);
    }
    if (rc != GW_OK) {
        fprintf(stderr, "gpuwatch exclusions: %s: %s\n", o->url, err.msg[0] ? err.msg : gw_strerror(rc));
    } else if (r.status != 200) {
        fprintf(stderr, "gpuwatch exclusions: %s answered %d: %.*s\n", o->url, r.status, (int)r.body.len,
                r.body.len ? (const char *)r.body.data : "");
    } else {
        if (r.body.len) fwrite(r.body.data, 1, r.body.len, stdout);
        if (!strcmp(o->format, "json")) putchar('\n');
        ret = 0;
    }
    gw_httpc_response_free(&r);
    gw_httpc_close(c);
    return ret;
}

/* The end of the range: the newest sample of the data dir (the wall clock
 * when it is empty or ahead of it). */
static int excl_range_end(const char *dir, int64_t *end, struct gw_error *err)
{
    struct gw_db_opts dbo;
    gw_db_opts_default(&dbo);
    dbo.dir = dir;
    dbo.read_only = 1;
    struct gw_db *db = NULL;
    int rc = gw_db_open(&db, &dbo, err);
    if (rc != GW_OK) return rc;
    struct gw_db_stats st;
    rc = gw_db_stats(db, &st, err);
    gw_db_close(db);
    if (rc != GW_OK) return rc;
    int64_t now = gw_now_ms();
    *end = st.maxt != INT64_MIN && st.maxt < now ? st.maxt : now;
    return GW_OK;
}

static int excl_from_dir(const struct excl_opts *o)
{
    struct gw_error err = {0};
    struct gw_led_data d;
    memset(&d, 0, sizeof d);
    struct gw_led_result *res = NULL;
    struct gw_led_config cfg;
    gw_led_config_default(&cfg);
    struct gw_buf b;
    gw_buf_init(&b, EXCL_MAX_RESPONSE);
    int64_t end = 0;
    int loaded = 0;
    int rc = excl_range_end(o->dir, &end, &err);
    if (rc == GW_OK) {
        rc = gw_led_load(o->dir, end - EXCL_RANGE_MS, end, &d, &err);
        loaded = rc == GW_OK;
    }
    if (rc == GW_OK) {
        d.in.now = gw_led_data_newest(&d);
        rc = gw_led_build(&d.in, &cfg, &res, &err);
    }
    if (rc == GW_OK) {
        if (!strcmp(o->format, "json")) {
            rc = gw_buf_printf(&b, "{\"status\":\"success\",\"data\":");
            if (rc == GW_OK) rc = gw_led_exclusions_json(&b, res);
            if (rc == GW_OK) rc = gw_buf_printf(&b, "}\n");
        } else {
            rc = gw_led_exclusions_hosts(&b, res, !strcmp(o->format, "slurm"));
        }
        if (rc != GW_OK) gw_error_set(&err, rc, "cannot write the exclusions: %s", gw_strerror(rc));
    }
    if (rc == GW_OK && b.len) fwrite(b.data, 1, b.len, stdout);
    if (rc != GW_OK) fprintf(stderr, "gpuwatch exclusions: %s: %s\n", o->dir, err.msg[0] ? err.msg : gw_strerror(rc));
    gw_buf_free(&b);
    gw_led_result_free(res);
    if (loaded) gw_led_data_free(&d);
    return rc == GW_OK ? 0 : 1;
}

int gw_cli_exclusions(int argc, char **argv)
{
    struct excl_opts o;
    int rc = excl_parse(argc, argv, &o);
    if (rc >= 0) return rc;
    return o.url ? excl_from_server(&o) : excl_from_dir(&o);
}
