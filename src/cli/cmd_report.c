/* cmd_report.c - `gpuwatch report`: the node ledger of a data dir over a
 * time range (failures and how each was detected, checkpoints, exclusions
 * and lemon ranking, retry chains, MTBF and goodput) as Markdown or as one
 * self-contained HTML page.
 *
 *   gpuwatch report --data-dir /var/lib/gpuwatch --from -7d --format html --out week.html
 *
 * Read-only: gw_led_load opens the dir the way `stats` does, so it runs
 * next to a serve writing it. The pipeline is gw_led_load -> gw_led_build
 * -> gw_led_report (ledger.h); this file only reads the options (the
 * option table of cli_parse.h, times through gw_cli_time_arg) and writes the
 * file (to FILE.tmp, renamed when complete). Without
 * --from / --to the range is INT64_MIN / INT64_MAX, which gw_led_load
 * narrows to the data it finds. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/json.h"
#include "gpuwatch/ledger.h"
#include "cli.h"
#include "cli_export.h"
#include "cli_parse.h"

struct report_args {
    const char *dir, *out, *title;
    int format, format_given;    /* enum gw_led_format */
    int64_t now, from, to;       /* ms; INT64_MIN / INT64_MAX: the whole history */
};

static int report_from(void *base, const char *v)
{
    struct report_args *a = base;
    return gw_cli_time_arg(v, a->now, 1, &a->from);
}

static int report_to(void *base, const char *v)
{
    struct report_args *a = base;
    return gw_cli_time_arg(v, a->now, 1, &a->to);
}

#define REPORT_T_EXPECT "RFC 3339, Unix seconds, now, or -DUR like -7d"
static const char *const report_formats[] = {"md", "html", NULL};
static const int report_format_values[] = {GW_LED_MD, GW_LED_HTML};

static const struct gw_cli_opt report_opts[] = {
    {.name = "--data-dir", .arg = "DIR", .type = GW_CLI_STR, GW_CLI_AT(struct report_args, dir),
     .flags = GW_CLI_REQUIRED | GW_CLI_NONEMPTY, .help = "the data dir of a gpuwatch serve (required)"},
    {.name = "--from", .arg = "T", .type = GW_CLI_CALL, .set = report_from, .expect = REPORT_T_EXPECT,
     .help = "start of the range (default: the oldest activity or alert)"},
    {.name = "--to", .arg = "T", .type = GW_CLI_CALL, .set = report_to, .expect = REPORT_T_EXPECT,
     .help = "end of the range (default: the newest activity or alert)\n"
             "T: RFC 3339 (2026-12-01T00:00:00Z), Unix seconds,\n"
             "or relative to now: -7d, now-12h, now"},
    {.name = "--format", .arg = "F", .type = GW_CLI_CHOICE, GW_CLI_AT(struct report_args, format),
     GW_CLI_SEEN(struct report_args, format_given), .choices = report_formats, .values = report_format_values,
     .help = "md or html (default: html when --out ends in .html, else md)"},
    {.name = "--out", .arg = "FILE", .type = GW_CLI_STR, GW_CLI_AT(struct report_args, out),
     .flags = GW_CLI_NONEMPTY, .help = "write to FILE (default: standard output)"},
    {.name = "--title", .arg = "S", .type = GW_CLI_STR, GW_CLI_AT(struct report_args, title),
     .help = "the report's title (default \"gpuwatch report\")"},
    {0},
};

static const struct gw_cli_cmd report_cmd = {
    .name = "report",
    .synopsis = "--data-dir DIR [--from T] [--to T] [--format md|html]\n"
                "                       [--out FILE] [--title S]",
    .intro = "Writes the reliability report of a data dir: summary, failures and how each\n"
             "was detected (lead time before the XID, time to the end of the session and\n"
             "to the next steady training, action), checkpoints and their bottleneck,\n"
             "exclusions and the lemon ranking, retry chains (automatic vs manual\n"
             "recovery), MTBF per node and fleet, goodput and GPU-hours lost per cause.\n"
             "HTML is one self-contained file with inline charts (no external assets).\n"
             "\n"
             "Read-only: safe to run next to a 'gpuwatch serve' on the same dir.\n",
    .opts = report_opts,
    .outro = "\nSections, charts and their ids: docs/ledger.md (gpuwatch report).\n",
};

/* Renders into FILE.tmp and renames it over FILE, or to stdout. */
static int report_write(const struct report_args *a, const struct gw_led_report_in *rin, enum gw_led_format fmt)
{
    struct gw_error err = {0};
    char tmp[4096], eb[128];
    FILE *f = stdout;
    if (a->out) {
        if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", a->out) >= sizeof tmp) {
            fprintf(stderr, "gpuwatch report: --out: path too long\n");
            return 2;
        }
        if (!(f = fopen(tmp, "w"))) {
            fprintf(stderr, "gpuwatch report: cannot create %s: %s\n", tmp, strerror_r(errno, eb, sizeof eb));
            return 1;
        }
    }
    int rc = gw_led_report(f, rin, fmt, &err);
    if (a->out) {
        if (fclose(f) != 0 && rc == GW_OK) rc = gw_error_set(&err, GW_EIO, "cannot write %s", tmp);
        if (rc == GW_OK && rename(tmp, a->out) != 0)
            rc = gw_error_set(&err, GW_EIO, "cannot rename %s to %s", tmp, a->out);
        if (rc != GW_OK) unlink(tmp);
    }
    if (rc != GW_OK) {
        fprintf(stderr, "gpuwatch report: %s\n", err.msg[0] ? err.msg : gw_strerror(rc));
        return 1;
    }
    return 0;
}

int gw_cli_report(int argc, char **argv)
{
    struct report_args a = {.format = GW_LED_MD, .now = gw_now_ms(), .from = INT64_MIN, .to = INT64_MAX};
    int rc = gw_cli_parse(&report_cmd, argc, argv, &a);
    if (rc >= 0) return rc;
    if (a.from >= a.to) return gw_cli_usage_error(&report_cmd, 0, "--from must be before --to");
    size_t ol = a.out ? strlen(a.out) : 0;
    if (!a.format_given && ol > 5 && !strcmp(a.out + ol - 5, ".html")) a.format = GW_LED_HTML;

    struct gw_error err = {0};
    struct gw_led_data data;
    memset(&data, 0, sizeof data);
    struct gw_led_result *res = NULL;
    rc = 1;
    if (gw_led_load(a.dir, a.from, a.to, &data, &err) != GW_OK) {
        fprintf(stderr, "gpuwatch report: cannot load %s: %s\n", a.dir, err.msg);
        goto out;
    }
    struct gw_led_config cfg;
    gw_led_config_default(&cfg);
    if (gw_led_build(&data.in, &cfg, &res, &err) != GW_OK) {
        fprintf(stderr, "gpuwatch report: %s\n", err.msg);
        goto out;
    }
    struct gw_led_report_in rin = {.r = res, .ckpts = data.ckpts, .n_ckpts = data.n_ckpts,
                                   .alerts = data.in.alerts, .n_alerts = data.in.n_alerts, .title = a.title,
                                   .generated_at = a.now};
    rc = report_write(&a, &rin, (enum gw_led_format)a.format);
out:
    gw_led_result_free(res);
    gw_led_data_free(&data);
    return rc;
}
