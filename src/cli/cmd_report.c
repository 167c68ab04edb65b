/* cmd_report.c - `gpuwatch report`: the node ledger of a data dir over a
 * time range (failures and how each was detected, checkpoints, exclusions
 * and lemon ranking, retry chains, MTBF and goodput) as Markdown or as one
 * self-contained HTML page.
 *
 *   gpuwatch report --data-dir /var/lib/gpuwatch --from -7d --format html --out week.html
 *
 * Read-only: gw_led_load opens the dir the way `stats` does, so it runs
 * next to a serve writing it. The pipeline is gw_led_load -> gw_led_build
 * -> gw_led_report (ledger.h); this file only reads the options and the
 * times and writes the file (to FILE.tmp, renamed when complete). Without
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
#include "cli_parse.h"

static const char usage_report[] =
    "usage: gpuwatch report --data-dir DIR [--from T] [--to T] [--format md|html]\n"
    "                       [--out FILE] [--title S]\n"
    "\n"
    "Writes the reliability report of a data dir: summary, failures and how each\n"
    "was detected (lead time before the XID, time to the end of the session and\n"
    "to the next steady training, action), checkpoints and their bottleneck,\n"
    "exclusions and the lemon ranking, retry chains (automatic vs manual\n"
    "recovery), MTBF per node and fleet, goodput and GPU-hours lost per cause.\n"
    "HTML is one self-contained file with inline charts (no external assets).\n"
    "\n"
    "Read-only: safe to run next to a 'gpuwatch serve' on the same dir.\n"
    "\n"
    "  --data-dir DIR   the data dir of a gpuwatch serve (required)\n"
    "  --from T         start of the range (default: the oldest activity or alert)\n"
    "  --to T           end of the range (default: the newest activity or alert)\n"
    "                   T: RFC 3339 (2026-12-01T00:00:00Z), Unix seconds,\n"
    "                   or relative to now: -7d, now-12h, now\n"
    "  --format F       md or html (default: html when --out ends in .html, else md)\n"
    "  --out FILE       write to FILE (default: standard output)\n"
    "  --title S        the report's title (default \"gpuwatch report\")\n";

struct report_args {
    const char *dir, *from_s, *to_s, *format_s, *out, *title;
};

static int report_bad(const char *opt, const char *v, const char *expect)
{
    fprintf(stderr, "gpuwatch report: invalid value for %s: \"%s\" (expected %s)\n", opt, v, expect);
    return 2;
}

/* The option reading, kept apart so a table-driven reader can replace it:
 * -1 to go on, 0 after --help, 2 after a usage error. */
static int report_args_read(int argc, char **argv, struct report_args *a)
{
    if (gw_cli_want_help(argc, argv)) {
        fputs(usage_report, stdout);
        return 0;
    }
    static const char *const known[] = {"--data-dir", "--from", "--to", "--format", "--out", "--title", NULL};
    static const char *const flags[] = {NULL};
    const char **dst[] = {&a->dir, &a->from_s, &a->to_s, &a->format_s, &a->out, &a->title};
    for (int i = 0; i < argc; i++) {
        char name[32];
        const char *v;
        if (gw_cli_option(argc, argv, &i, "report", usage_report, flags, known, name, sizeof name, &v)) return 2;
        for (size_t k = 0; known[k]; k++)
            if (!strcmp(name, known[k])) *dst[k] = v;
    }
    if (!a->dir || !a->dir[0]) {
        fprintf(stderr, "gpuwatch report: --data-dir is required\n\n%s", usage_report);
        return 2;
    }
    if (a->format_s && strcmp(a->format_s, "md") != 0 && strcmp(a->format_s, "html") != 0)
        return report_bad("--format", a->format_s, "md or html");
    return -1;
}

/* T as --from/--to take it: "now", "now-DUR" or "-DUR" (DUR before now,
 * a Prometheus duration: 7d, 12h, 1h30m), RFC 3339, or Unix seconds
 * (fractions allowed). 0, or -1. */
static int report_time(const char *v, int64_t now, int64_t *out)
{
    int64_t d;
    double s;
    if (!strcmp(v, "now")) {
        *out = now;
        return 0;
    }
    const char *rel = !strncmp(v, "now-", 4) ? v + 4 : v[0] == '-' ? v + 1 : NULL;
    if (rel) {
        if (gw_parse_duration_ms(rel, &d) != GW_OK || d <= 0) return -1;
        *out = now - d;
        return 0;
    }
    if (gw_parse_rfc3339(v, out) == GW_OK) return 0;
    if (gw_cli_parse_double(v, &s) == 0 && s >= 0 && s < 9.2e15) {
        *out = (int64_t)(s * 1000.0);
        return 0;
    }
    return -1;
}

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
    struct report_args a = {0};
    int rc = report_args_read(argc, argv, &a);
    if (rc >= 0) return rc;
    int64_t now = gw_now_ms(), from = INT64_MIN, to = INT64_MAX;   /* whole history: load narrows it */
    if (a.from_s && report_time(a.from_s, now, &from) != 0)
        return report_bad("--from", a.from_s, "RFC 3339, Unix seconds, now or -DUR like -7d");
    if (a.to_s && report_time(a.to_s, now, &to) != 0)
        return report_bad("--to", a.to_s, "RFC 3339, Unix seconds, now or -DUR like -7d");
    if (from >= to) {
        fprintf(stderr, "gpuwatch report: --from must be before --to\n");
        return 2;
    }
    enum gw_led_format fmt = GW_LED_MD;
    size_t ol = a.out ? strlen(a.out) : 0;
    if (a.format_s ? !strcmp(a.format_s, "html") : ol > 5 && !strcmp(a.out + ol - 5, ".html")) fmt = GW_LED_HTML;

    struct gw_error err = {0};
    struct gw_led_data data;
    memset(&data, 0, sizeof data);
    struct gw_led_result *res = NULL;
    rc = 1;
    if (gw_led_load(a.dir, from, to, &data, &err) != GW_OK) {
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
                                   .generated_at = now};
    rc = report_write(&a, &rin, fmt);
out:
    gw_led_result_free(res);
    gw_led_data_free(&data);
    return rc;
}
