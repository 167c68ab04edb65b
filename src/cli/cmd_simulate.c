/* cmd_simulate.c - `gpuwatch simulate`: builds the simulated cluster's
 * timeline from a profile, seed and overrides, writes its ground truth,
 * and sends the generated series as remote write (or writes them as files,
 * or only counts them), then prints a summary: the run's settings, event
 * counts by type and class, and series / samples / requests / seconds /
 * samples per second, as key=value pairs. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sys/stat.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/httpc.h"
#include "gpuwatch/json.h"
#include "gpuwatch/detect.h"
#include "gpuwatch/sim.h"
#include "cli_parse.h"
#include "cli_sim.h"

static int64_t align_down(int64_t t, int64_t step)
{
    int64_t r = t % step;
    if (r < 0)
        r += step;
    return t - r;
}

/* RFC3339 (Z or +hh:mm, optional fraction), Unix ms, "now", "now-DUR". */
static int parse_start(const char *v, int64_t interval_ms, int64_t *out)
{
    if (strncmp(v, "now", 3) == 0) {
        int64_t d = 0, now = gw_now_ms();
        if (v[3] == '-') {
            if (gw_parse_duration_ms(v + 4, &d) != GW_OK || d <= 0)
                return -1;
        } else if (v[3] != '\0') {
            return -1;
        }
        *out = align_down(now - d, interval_ms);
        return 0;
    }
    if (strchr(v, 'T') == NULL) {
        uint64_t ms;
        if (gw_cli_parse_u64(v, 0, (uint64_t)INT64_MAX / 4, &ms) != 0)
            return -1;
        *out = (int64_t)ms;
        return 0;
    }
    int64_t t;
    if (gw_parse_rfc3339(v, &t) != GW_OK || t < 0)
        return -1;
    *out = t;
    return 0;
}

static void fmt_time(int64_t ms, char *out, size_t n)
{
    gw_format_rfc3339_s(ms, out, n);
}

static void print_events(const struct gw_sim_timeline *tl)
{
    size_t by_class[GW_SIM_CLASS_COUNT_] = {0}, by_bait[GW_SIM_BAIT_COUNT_] = {0};
    size_t sess[3] = {0}, ck[2] = {0}, with_xid = 0, with_pre = 0, retries = 0;
    size_t by_bn[GW_SIM_BN_COUNT_] = {0};

    for (size_t i = 0; i < tl->n_failures; i++) {
        const struct gw_sim_failure *f = &tl->failures[i];
        if ((unsigned)f->cls < GW_SIM_CLASS_COUNT_)
            by_class[f->cls]++;
        with_xid += f->t_xid_visible != GW_SIM_NO_TIME;
        with_pre += f->t_precursor_start != GW_SIM_NO_TIME;
    }
    for (size_t i = 0; i < tl->n_sessions; i++) {
        if ((unsigned)tl->sessions[i].outcome < 3)
            sess[tl->sessions[i].outcome]++;
        retries += tl->sessions[i].attempt > 0;
    }
    for (size_t i = 0; i < tl->n_checkpoints; i++) {
        if ((unsigned)tl->checkpoints[i].phase < 2)
            ck[tl->checkpoints[i].phase]++;
        if ((unsigned)tl->checkpoints[i].bottleneck < GW_SIM_BN_COUNT_)
            by_bn[tl->checkpoints[i].bottleneck]++;
    }
    for (size_t i = 0; i < tl->n_baits; i++)
        if ((unsigned)tl->baits[i].kind < GW_SIM_BAIT_COUNT_)
            by_bait[tl->baits[i].kind]++;

    printf("events: failures=%zu sessions=%zu checkpoints=%zu baits=%zu\n", tl->n_failures, tl->n_sessions,
           tl->n_checkpoints, tl->n_baits);
    printf("failures:");
    for (int c = 0; c < GW_SIM_CLASS_COUNT_; c++)
        printf(" %s=%zu", gw_sim_class_name((enum gw_sim_class)c), by_class[c]);
    printf(" with_visible_xid=%zu with_precursor=%zu\n", with_xid, with_pre);
    printf("sessions: completed=%zu failed=%zu startup_failed=%zu retries=%zu\n", sess[GW_SIM_SESS_COMPLETED],
           sess[GW_SIM_SESS_FAILED], sess[GW_SIM_SESS_STARTUP_FAILED], retries);
    printf("checkpoints: save=%zu load=%zu", ck[GW_SIM_CKPT_SAVE], ck[GW_SIM_CKPT_LOAD]);
    for (int b = 0; b < GW_SIM_BN_COUNT_; b++)
        printf(" %s=%zu", gw_sim_bottleneck_name((enum gw_sim_ckpt_bottleneck)b), by_bn[b]);
    printf("\n");
    printf("baits:");
    for (int b = 0; b < GW_SIM_BAIT_COUNT_; b++)
        printf(" %s=%zu", gw_sim_bait_name((enum gw_sim_bait_kind)b), by_bait[b]);
    printf("\n");
}

int gw_cli_simulate(int argc, char **argv);

static int want_detector_metric(void *ud, const char *metric)
{
    (void)ud;
    return gw_det_wants_metric(metric, strlen(metric));
}

/* The options of one run. */
struct sim_args {
    const char *profile, *url, *out_dir, *truth, *start_s;
    int dry_run, truth_only, legacy, progress, have_dur, have_scale, only_det;
    uint64_t seed, gpus, conns, batch, shard_seed, max_skew;
    double speed, scale;
    int64_t duration_ms;
    struct gw_cli_cluster cl;
};

static int set_speed(void *p, const char *v)
{
    double *speed = p;
    if (!strcmp(v, "max"))
        *speed = 0;
    else if (!strcmp(v, "realtime"))
        *speed = 1;
    else if (gw_cli_parse_double(v, speed) != 0 || !(*speed > 0) || *speed > 1e9)
        return -1;
    return 0;
}

static const char *const profile_names[] = {"smoke", "paper", NULL};

static const struct gw_cli_opt sim_opts[] = {
    {.name = "--profile", .arg = "P", .type = GW_CLI_STR, GW_CLI_AT(struct sim_args, profile),
     .choices = profile_names,
     .help = "smoke (4 nodes incl. 1 spare, 1 day) or paper (63 nodes incl.\n3 spares, 55 days); default smoke"},
    {.name = "--seed", .arg = "N", .type = GW_CLI_UINT, GW_CLI_AT(struct sim_args, seed),
     .expect = "an unsigned integer", .help = "random seed (default 1); the same seed gives the same data"},
    {.name = "--url", .arg = "URL", .type = GW_CLI_STR, GW_CLI_AT(struct sim_args, url),
     .help = "remote-write endpoint, e.g. http://127.0.0.1:9201/api/v1/write"},
    {.name = "--out", .arg = "DIR", .type = GW_CLI_STR, GW_CLI_AT(struct sim_args, out_dir),
     .help = "write the request bodies as DIR/000000001.rw ... + DIR/index.tsv"},
    {.name = "--dry-run", .type = GW_CLI_FLAG, GW_CLI_AT(struct sim_args, dry_run),
     .help = "generate and encode, send nothing (measures the generator)"},
    {.name = "--truth", .arg = "FILE", .type = GW_CLI_STR, GW_CLI_AT(struct sim_args, truth),
     .flags = GW_CLI_NONEMPTY, .expect = "a file name, or - for stdout",
     .help = "write the ground truth (JSON lines) to FILE ('-': stdout)"},
    {.name = "--truth-only", .type = GW_CLI_FLAG, GW_CLI_AT(struct sim_args, truth_only),
     .help = "write the ground truth and print event counts, no samples"},
    {.name = "--gpus", .arg = "N", .type = GW_CLI_UINT, GW_CLI_AT(struct sim_args, gpus), .min = 1,
     .max = GW_SIM_MAX_GPUS, .help = "GPUs per node (1..16, default 8)"},
    {.type = GW_CLI_TABLE, .sub = gw_cli_cluster_opts, GW_CLI_AT(struct sim_args, cl)},
    {.name = "--duration", .arg = "DUR", .type = GW_CLI_DUR, GW_CLI_AT(struct sim_args, duration_ms),
     GW_CLI_SEEN(struct sim_args, have_dur), .expect = "a duration such as 6h, 90m or 2d",
     .help = "simulated time, e.g. 6h (instead of --days)"},
    {.name = "--start", .arg = "T", .type = GW_CLI_STR, GW_CLI_AT(struct sim_args, start_s),
     .help = "first scrape: RFC3339 (2026-11-01T00:00:00Z), Unix ms, now or\nnow-DUR (default: now - duration)"},
    {.name = "--legacy-hostname", .type = GW_CLI_FLAG, GW_CLI_AT(struct sim_args, legacy),
     .help = "label DCGM series with Hostname instead of hostname\n(the same as --label-style Hostname)"},
    {.name = "--shard-seed", .arg = "N", .type = GW_CLI_UINT, GW_CLI_AT(struct sim_args, shard_seed),
     .expect = "an unsigned integer (0: lockstep)",
     .help = "random sharded arrival: series to connections by a seeded\n"
             "hash, random batch sizes in [1, --batch], connections up to\n"
             "--max-skew scrapes apart, ~1% duplicate requests (0: lockstep)"},
    {.name = "--max-skew", .arg = "K", .type = GW_CLI_UINT, GW_CLI_AT(struct sim_args, max_skew), .min = 1,
     .max = 1000, .expect = "1..1000 scrapes",
     .help = "scrapes a connection may lag with --shard-seed (1..1000, default 3)"},
    {.name = "--only-detector-series", .type = GW_CLI_FLAG, GW_CLI_AT(struct sim_args, only_det),
     .help = "send only the series a detector reads"},
    {.name = "--failure-scale", .arg = "X", .type = GW_CLI_DOUBLE, GW_CLI_AT(struct sim_args, scale),
     GW_CLI_SEEN(struct sim_args, have_scale), .dmin = 0, .dmax = 1000, .expect = "a factor from 0 to 1000",
     .help = "multiply every failure hazard by X (default 1)"},
    {.name = "--speed", .arg = "S", .type = GW_CLI_CALL, GW_CLI_AT(struct sim_args, speed), .set = set_speed,
     .expect = "max, realtime or a factor > 0",
     .help = "max (default); realtime (= 1): each scrape is sent when the\n"
             "wall clock reaches its timestamp (a start in the past is\n"
             "backfilled first); K: K x real time from the first scrape"},
    {.name = "--connections", .arg = "N", .type = GW_CLI_UINT, GW_CLI_AT(struct sim_args, conns), .min = 1,
     .max = 256, .help = "parallel connections (default 4)"},
    {.name = "--batch", .arg = "N", .type = GW_CLI_UINT, GW_CLI_AT(struct sim_args, batch), .min = 1,
     .max = 100000, .expect = "1..100000 samples per request", .help = "samples per request (default 2000)"},
    {.name = "--progress", .type = GW_CLI_FLAG, GW_CLI_AT(struct sim_args, progress),
     .help = "report progress on stderr: a bar with rate and ETA on a\n"
             "terminal, a log line every 10 % or 5 s otherwise"},
    {0},
};

static const struct gw_cli_cmd sim_cmd = {
    .name = "simulate",
    .synopsis = "--profile smoke|paper --seed N (--url URL | --out DIR | --dry-run) [options]",
    .intro = "Simulates a GPU training cluster (dcgm-exporter and node_exporter series of N nodes\n"
             "x 8 GPUs, sessions, checkpoints, failures with precursors, baits) and sends it as\n"
             "Prometheus remote write 1.0.\n",
    .opts = sim_opts,
};

/* Options into a. -1 to go on, else the exit status. */
static int sim_parse(int argc, char **argv, struct sim_args *a)
{
    *a = (struct sim_args){.profile = "smoke", .seed = 1, .conns = 4, .batch = 2000, .max_skew = 3, .scale = 1};
    int rc = gw_cli_parse(&sim_cmd, argc, argv, a);
    if (rc >= 0)
        return rc;
    if (a->cl.have_days && a->have_dur)
        return gw_cli_usage_error(&sim_cmd, 0, "give --days or --duration, not both");
    if (a->url != NULL && a->url[0] == '\0')
        a->url = NULL;
    if (a->out_dir != NULL && a->out_dir[0] == '\0')
        a->out_dir = NULL;
    if (a->dry_run && (a->url || a->out_dir))
        return gw_cli_usage_error(&sim_cmd, 0, "--dry-run sends and writes nothing; drop --url/--out");
    if (!a->truth_only && !a->dry_run && !a->url && !a->out_dir)
        return gw_cli_usage_error(&sim_cmd, 1,
                                  "say where the samples go: --url URL, --out DIR or --dry-run (or --truth-only)");
    if (a->truth_only && (a->url || a->out_dir || a->dry_run))
        return gw_cli_usage_error(&sim_cmd, 0, "--truth-only generates no samples; drop --url/--out/--dry-run");
    return -1;
}

/* The simulator's settings from the options. -1 to go on, else the exit status. */
static int sim_config(const struct sim_args *a, struct gw_sim_config *cfg)
{
    struct gw_error err = {0};
    if (a->url != NULL) {
        struct gw_url u;
        if (gw_url_parse(a->url, &u, &err) != GW_OK) {
            fprintf(stderr, "gpuwatch simulate: --url: %s\n", err.msg);
            return 2;
        }
    }
    if (a->out_dir != NULL && mkdir(a->out_dir, 0777) != 0 && errno != EEXIST) {
        char eb[128];
        fprintf(stderr, "gpuwatch simulate: --out: cannot create %s: %s\n", a->out_dir, strerror_r(errno, eb, sizeof eb));
        return 1;
    }
    gw_sim_config_default(cfg);
    if (gw_sim_config_profile(cfg, a->profile, &err) != GW_OK) {
        fprintf(stderr, "gpuwatch simulate: --profile: %s\n", err.msg);
        return 2;
    }
    cfg->seed = a->seed;
    if (a->gpus > 0)
        cfg->gpus = (uint32_t)a->gpus;
    if (a->have_dur)
        cfg->duration_ms = a->duration_ms;
    gw_cli_cluster_apply(&a->cl, cfg);
    cfg->legacy_hostname = a->legacy;
    if (a->cl.have_style && a->legacy && a->cl.style != GW_SIM_LABELS_LEGACY)
        return gw_cli_usage_error(&sim_cmd, 0, "--legacy-hostname is --label-style Hostname; give one of them");
    if (a->have_scale)
        cfg->failure_scale = a->scale;
    if (a->start_s != NULL) {
        if (parse_start(a->start_s, cfg->interval_ms, &cfg->start_ms) != 0)
            return gw_cli_usage_error(&sim_cmd, 0, "invalid value for --start: \"%s\" (%s)", a->start_s,
                                      "RFC3339 like 2026-11-01T00:00:00Z, Unix ms, now or now-2d");
    } else {
        cfg->start_ms = align_down(gw_now_ms() - cfg->duration_ms, cfg->interval_ms);
    }
    if (gw_sim_config_check(cfg, &err) != GW_OK) {
        fprintf(stderr, "gpuwatch simulate: invalid settings: %s\n", err.msg);
        return 2;
    }

    return -1;
}

/* Builds the timeline, writes the truth, runs the generator into the outputs. */
static int sim_run(const struct sim_args *a, struct gw_sim_config cfg)
{
    struct gw_error err = {0};
    char t0[40], t1[40];
    fmt_time(cfg.start_ms, t0, sizeof t0);
    fmt_time(cfg.start_ms + cfg.duration_ms, t1, sizeof t1);
    printf("simulate: profile=%s seed=%" PRIu64 " nodes=%u spares=%u gpus=%u interval_ms=%" PRId64
           " start=%s end=%s start_ms=%" PRId64 " duration_ms=%" PRId64 " failure_scale=%g label_style=%s"
           " gpu_model=%s bait_scale=%g failure_shapes=%s checkpoint_bottleneck=%s\n",
           cfg.profile, cfg.seed, cfg.nodes, cfg.spare_nodes, cfg.gpus, cfg.interval_ms, t0, t1, cfg.start_ms,
           cfg.duration_ms, cfg.failure_scale, gw_sim_label_style_name(gw_sim_config_label_style(&cfg)),
           gw_sim_gpu_model_name(cfg.gpu_model), cfg.bait_scale, cfg.shape_jitter ? "random" : "fixed",
           cfg.ckpt_bottleneck == GW_SIM_BN_MIXED
               ? "mixed" : gw_sim_bottleneck_name((enum gw_sim_ckpt_bottleneck)cfg.ckpt_bottleneck));
    fflush(stdout);

    struct gw_sim_timeline *tl = NULL;
    struct gw_sim_gen *g = NULL;
    int rc, status = 1;
    uint64_t tl0 = gw_mono_ns();
    if ((rc = gw_sim_timeline_build(&cfg, &tl, &err)) != GW_OK) {
        fprintf(stderr, "gpuwatch simulate: cannot build the timeline: %s\n", err.msg);
        goto out;
    }
    print_events(tl);
    if (a->truth != NULL) {
        FILE *f = strcmp(a->truth, "-") == 0 ? stdout : fopen(a->truth, "w");
        if (f == NULL) {
            char eb[128];
            fprintf(stderr, "gpuwatch simulate: cannot create %s: %s\n", a->truth, strerror_r(errno, eb, sizeof eb));
            goto out;
        }
        rc = gw_sim_truth_write(tl, f, &err);
        if (f != stdout) {
            if (fclose(f) != 0 && rc == GW_OK)
                rc = gw_error_set(&err, GW_EIO, "close failed");
        } else {
            fflush(stdout);
        }
        if (rc != GW_OK) {
            fprintf(stderr, "gpuwatch simulate: cannot write the ground truth to %s: %s\n", a->truth, err.msg);
            goto out;
        }
    }
    if (a->truth_only) {
        printf("timeline: elapsed_s=%.3f result=OK\n", (double)(gw_mono_ns() - tl0) / 1e9);
        status = 0;
        goto out;
    }
    if ((rc = gw_sim_gen_open(&g, tl, a->only_det ? want_detector_metric : NULL, NULL, &err)) != GW_OK) {
        fprintf(stderr, "gpuwatch simulate: cannot start the generator: %s\n", err.msg);
        goto out;
    }
    struct gw_sim_output_opts oo = {
        .url = a->url,
        .out_dir = a->out_dir,
        .connections = (unsigned)a->conns,
        .max_samples_per_request = (size_t)a->batch,
        .shard_seed = a->shard_seed,
        .max_skew = (unsigned)a->max_skew,
        .speed = a->speed,
        .progress = a->progress,
        .progress_end_ms = cfg.start_ms + cfg.duration_ms,
    };
    struct gw_sim_output_stats st;
    memset(&st, 0, sizeof st);
    rc = gw_sim_output_run(g, &oo, &st, &err);
    printf("output: mode=%s series=%" PRIu64 " samples=%" PRIu64 " requests=%" PRIu64 " bytes=%" PRIu64
           " retries=%" PRIu64 " duplicates=%" PRIu64 " elapsed_s=%.3f samples_per_s=%.0f result=%s\n",
           a->dry_run ? "dry-run" : a->url && a->out_dir ? "url+files" : a->url ? "url" : "files", st.series, st.samples,
           st.requests, st.bytes, st.retries, st.duplicates, st.seconds, st.seconds > 0 ? (double)st.samples / st.seconds : 0.0,
           rc == GW_OK ? "OK" : gw_strerror(rc));
    if (rc != GW_OK) {
        fprintf(stderr, "gpuwatch simulate: %s\n", err.msg);
        goto out;
    }
    status = 0;
out:
    if (g != NULL)
        gw_sim_gen_close(g);
    gw_sim_timeline_free(tl);
    return status;
}

int gw_cli_simulate(int argc, char **argv)
{
    struct sim_args a;
    struct gw_sim_config cfg;
    int rc = sim_parse(argc, argv, &a);
    if (rc < 0) rc = sim_config(&a, &cfg);
    return rc < 0 ? sim_run(&a, cfg) : rc;
}
