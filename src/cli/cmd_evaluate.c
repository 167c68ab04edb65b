/* cmd_evaluate.c - `gpuwatch evaluate`: simulates a cluster in memory,
 * feeds it through the failure detectors and scores their alerts against
 * the simulator's ground truth (evaluate.h, docs/evaluation.md). Several
 * seeds run in parallel threads, one seed per thread at a time; the
 * reports are printed in seed order, then their totals. */
#include "cli_parse.h"
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/evaluate.h"

#define MAX_SEEDS 256
/* Fixed start so that a seed gives the same run whatever the day. */
#define EVAL_START_MS 1767225600000LL /* 2026-01-01T00:00:00Z */

static const char usage_evaluate[] =
    "usage: gpuwatch evaluate [--profile paper|smoke] [--seed N | --seeds 1,2,3] [options]\n"
    "\n"
    "Simulates a GPU training cluster in memory (only the series a detector reads),\n"
    "feeds every sample in time order through the same detectors ingest runs, and\n"
    "scores their alerts against the simulator's ground truth: per detector D1-D6 and\n"
    "combined, failures caught, caught before the XID with the lead time, delay from\n"
    "fault to alert, false alarms per day; the report's v1 figures printed beside.\n"
    "A failure is caught by a warning/critical alert on its node firing within\n"
    "[fault - 60 min, fault + 5 min]; false alarms on one node within 30 min count once.\n"
    "\n"
    "  --profile P          paper (63 nodes incl. 3 spares, 55 days; default) or smoke\n"
    "                       (4 nodes incl. 1 spare, 1 day)\n"
    "  --seed N             one seed (default 1)\n"
    "  --seeds LIST         several seeds, comma-separated (e.g. 1,2,3): run in parallel,\n"
    "                       printed one after the other, then their totals\n"
    "  --days D             simulated days (fractions allowed)\n"
    "  --nodes N            nodes, spares included (1..1024)\n"
    "  --failure-scale X    multiply every failure hazard by X (0..100, default 1)\n"
    "  --interval DUR       scrape interval (default 30s)\n"
    "  --config FILE        detector thresholds (key = value lines, see docs/detectors.md)\n"
    "  --threads N          seeds evaluated at once (default: CPUs, at most the seeds)\n"
    "  --label-style S      hostname (default), Hostname, kube, fqdn or ip\n"
    "  --gpu-model M        b200 (default), a100 or h100\n"
    "  --bait-scale X       multiply every bait hazard by X (default 1)\n"
    "  --failure-shapes S   fixed (default) or random (within published ranges)\n"
    "  --checkpoints        report D7's checkpoint events instead: precision and recall\n"
    "                       against the simulated checkpoints, start/end error, the\n"
    "                       diagnosis confusion matrix, bottleneck alerts on healthy saves\n"
    "  --checkpoint-bottleneck B  what limits the simulated checkpoints: slots, server,\n"
    "                       link, none or mixed (drawn per checkpoint)\n"
    "  --ledger             report the node ledger (D8) instead: sessions found against the\n"
    "                       simulated ones (precision, recall), retry chains' success and\n"
    "                       median interval beside the truth's, the ranks of the lemon\n"
    "                       nodes, exclusion concentration and evidence\n"
    "  --history-dir DIR    with --ledger and one seed: also keep what serve would keep\n"
    "                       (the alert log, gpuwatch_node_activity, D7's checkpoint events)\n"
    "                       in the data dir DIR, for gpuwatch report\n"
    "  --json               one JSON object instead of the table\n"
    "  --verbose            also list every failure (detection, detector, lead/delay) and\n"
    "                       every false alarm; progress on stderr\n"
    "  --variations         run the variation families (baseline, labels-kube,\n"
    "                       labels-fqdn-ip, interval-15s, interval-60s, small-cluster,\n"
    "                       large-cluster, gpu-a100-h100, baits-x2, arrival-shuffled), each\n"
    "                       scored on its own: paper profile with random failure shapes,\n"
    "                       default --days 10, --failure-scale 3, --seeds 1,2,3\n"
    "\n"
    "Runs start at 2026-01-01T00:00:00Z so that a seed always gives the same result.\n"
    "Exit status: 0 when the evaluation ran, 1 when a run failed, 2 on bad options.\n";

/* "slots" .. "none" -> enum gw_sim_ckpt_bottleneck, "mixed" -> GW_SIM_BN_MIXED; -2 unknown. */
static int parse_bottleneck(const char *v)
{
    if (!strcmp(v, "mixed")) return GW_SIM_BN_MIXED;
    for (int b = 0; b < GW_SIM_BN_COUNT_; b++)
        if (!strcmp(v, gw_sim_bottleneck_name((enum gw_sim_ckpt_bottleneck)b))) return b;
    return -2;
}

static int bad(const char *opt, const char *v, const char *expect)
{
    fprintf(stderr, "gpuwatch evaluate: invalid value for %s: \"%s\" (%s)\n", opt, v, expect);
    return 2;
}

/* "1,2,3" -> seeds (no empty items, no duplicates, at most MAX_SEEDS). */
static int parse_seeds(const char *v, uint64_t *seeds, size_t *n)
{
    *n = 0;
    const char *p = v;
    for (;;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        char item[32];
        if (len == 0 || len >= sizeof item || *n >= MAX_SEEDS)
            return -1;
        memcpy(item, p, len);
        item[len] = '\0';
        uint64_t s;
        if (gw_cli_parse_u64(item, 0, UINT64_MAX, &s) != 0)
            return -1;
        for (size_t i = 0; i < *n; i++)
            if (seeds[i] == s)
                return -1;
        seeds[(*n)++] = s;
        if (c == NULL)
            return 0;
        p = c + 1;
    }
}

struct job {
    struct gw_sim_config cfg;
    struct gw_eval_opts o;
    size_t family, index;
    const char *family_name;
    size_t n_jobs, seq;
    struct gw_eval_report rep;
    struct gw_eval_ledger led;
    struct gw_error err;
    int rc;
};

struct pool {
    struct job *jobs;
    size_t n, next;
    const struct gw_det_config *dc;
    const struct gw_eval_opts *o;
    int verbose, variations, ledger;
    size_t done;
    pthread_mutex_t mu;
};

static void *worker(void *arg)
{
    struct pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        size_t i = p->next < p->n ? p->next++ : p->n;
        pthread_mutex_unlock(&p->mu);
        if (i >= p->n)
            return NULL;
        struct job *j = &p->jobs[i];
        if (p->variations) {
            j->rc = gw_eval_run(&j->cfg, p->dc, &j->o, &j->rep, NULL, NULL, &j->err);
            pthread_mutex_lock(&p->mu);
            size_t k = ++p->done;
            pthread_mutex_unlock(&p->mu);
            fprintf(stderr, "family %zu/%zu %s seed %" PRIu64 ": %.0f s%s (run %zu/%zu)\n", j->family + 1,
                    gw_eval_family_count(), j->family_name, j->cfg.seed, j->rc == GW_OK ? j->rep.seconds : 0.0,
                    j->rc == GW_OK ? "" : " FAILED", k, p->n);
            continue;
        }
        if (p->verbose)
            fprintf(stderr, "gpuwatch evaluate: seed %" PRIu64 ": running\n", j->cfg.seed);
        if (p->ledger) j->rc = gw_eval_ledger_run(&j->cfg, p->dc, p->o, &j->led, &j->err);
        else j->rc = gw_eval_run(&j->cfg, p->dc, p->o, &j->rep, NULL, NULL, &j->err);
        if (p->verbose && j->rc == GW_OK && !p->ledger)
            fprintf(stderr, "gpuwatch evaluate: seed %" PRIu64 ": done in %.1f s (%" PRIu64 " samples)\n",
                    j->cfg.seed, j->rep.seconds, j->rep.samples);
    }
}

int gw_cli_evaluate(int argc, char **argv);

static void run_pool(struct pool *p, uint64_t threads)
{
    if (threads == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cpus > 0 ? (uint64_t)cpus : 1;
    }
    if (threads > p->n)
        threads = p->n;
    if (threads > 256)
        threads = 256;
    pthread_mutex_init(&p->mu, NULL);
    pthread_t tids[256];
    size_t started = 0;
    for (size_t i = 1; i < threads; i++) {
        if (pthread_create(&tids[started], NULL, worker, p) != 0)
            break;  /* fewer threads: the calling thread still works through the queue */
        started++;
    }
    worker(p);
    for (size_t i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
    pthread_mutex_destroy(&p->mu);
}

/* --variations: every family x seed, one row per family, then the totals. */
static int run_variations(const struct gw_det_config *dc, const uint64_t *seeds_in, size_t n_seeds, double days,
                          double scale, uint64_t threads, int json, int verbose)
{
    static const uint64_t default_seeds[] = {1, 2, 3};
    const uint64_t *seeds = seeds_in ? seeds_in : default_seeds;
    if (seeds_in == NULL)
        n_seeds = 3;
    size_t nf = gw_eval_family_count();
    size_t n = nf * n_seeds;
    struct gw_error err = {0};
    struct gw_sim_config base;
    gw_sim_config_default(&base);
    base.start_ms = EVAL_START_MS;
    if (gw_sim_config_profile(&base, "paper", &err) != GW_OK) {
        fprintf(stderr, "gpuwatch evaluate: %s\n", err.msg);
        return 2;
    }
    base.duration_ms = (int64_t)llround(days * 86400000.0);
    base.failure_scale = scale;
    struct job *jobs = calloc(n, sizeof *jobs);
    struct gw_eval_report *reps = calloc(n, sizeof *reps);
    struct gw_eval_var_row *rows = calloc(nf + 1, sizeof *rows);
    if (jobs == NULL || reps == NULL || rows == NULL) {
        fprintf(stderr, "gpuwatch evaluate: out of memory\n");
        free(jobs);
        free(reps);
        free(rows);
        return 1;
    }
    for (size_t f = 0; f < nf; f++)
        for (size_t i = 0; i < n_seeds; i++) {
            struct job *j = &jobs[f * n_seeds + i];
            j->family = f;
            j->index = i;
            j->family_name = gw_eval_family_name(f);
            if (gw_eval_family_config(f, i, seeds[i], &base, &j->cfg, &j->o, &err) != GW_OK) {
                fprintf(stderr, "gpuwatch evaluate: family %s: invalid settings: %s\n", j->family_name, err.msg);
                free(jobs);
                free(reps);
                free(rows);
                return 2;
            }
        }
    struct pool p = {.jobs = jobs, .n = n, .next = 0, .dc = dc, .o = NULL, .verbose = verbose, .variations = 1};
    run_pool(&p, threads);
    int status = 0;
    size_t n_ok = 0;
    size_t nr = 0;
    for (size_t f = 0; f < nf; f++) {
        size_t first = n_ok;
        for (size_t i = 0; i < n_seeds; i++) {
            struct job *j = &jobs[f * n_seeds + i];
            if (j->rc != GW_OK) {
                fprintf(stderr, "gpuwatch evaluate: family %s seed %" PRIu64 ": %s\n", j->family_name, j->cfg.seed,
                        j->err.msg[0] ? j->err.msg : gw_strerror(j->rc));
                status = 1;
                continue;
            }
            reps[n_ok++] = j->rep;
        }
        if (gw_eval_var_row(reps + first, n_ok - first, gw_eval_family_name(f), &rows[nr]) == GW_OK)
            nr++;
        if (verbose && n_ok > first) {
            printf("== family %s\n", gw_eval_family_name(f));
            gw_eval_print_flags(reps + first, n_ok - first, GW_EVAL_PRINT_VERBOSE, stdout);
        }
    }
    if (gw_eval_var_row(reps, n_ok, "total", &rows[nr]) == GW_OK)
        nr++;
    if (gw_eval_var_print(rows, nr, json, stdout) != GW_OK || fflush(stdout) != 0) {
        fprintf(stderr, "gpuwatch evaluate: cannot write the report\n");
        status = 1;
    }
    for (size_t i = 0; i < n; i++)
        gw_eval_report_free(&jobs[i].rep);
    free(jobs);
    free(reps);
    free(rows);
    return status;
}

int gw_cli_evaluate(int argc, char **argv)
{
    const char *profile = "paper", *config = NULL, *history = NULL;
    int json = 0, verbose = 0, have_seed = 0, have_seeds = 0, have_days = 0, have_nodes = 0, have_scale = 0;
    int have_interval = 0, variations = 0, checkpoints = 0, ledger = 0, bottleneck = -2;
    uint64_t seeds[MAX_SEEDS], nodes = 0, threads = 0;
    size_t n_seeds = 1;
    double days = 0, scale = 1;
    int64_t interval_ms = 0;
    enum gw_sim_label_style label_style = GW_SIM_LABELS_HOSTNAME;
    enum gw_sim_gpu_model gpu_model = GW_SIM_GPU_B200;
    double bait_scale = 1;
    int have_style = 0, have_model = 0, have_baits = 0, have_shapes = 0, shapes_random = 0;
    seeds[0] = 1;

    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage_evaluate, stdout);
            return 0;
        }
    }
    for (int i = 0; i < argc; i++) {
        static const char *const flags[] = {"--json", "--verbose", "--variations", "--checkpoints", "--ledger", NULL};
        static const char *const known[] = {"--json", "--verbose", "--variations", "--checkpoints", "--ledger",
                                            "--history-dir", "--checkpoint-bottleneck", "--profile", "--seed", "--seeds", "--days",
                                            "--nodes", "--failure-scale", "--interval", "--config", "--threads",
                                            "--label-style", "--gpu-model", "--bait-scale", "--failure-shapes", NULL};
        char name[64];
        const char *v;
        if (gw_cli_option(argc, argv, &i, "evaluate", usage_evaluate, flags, known, name, sizeof name, &v))
            return 2;
        if (!strcmp(name, "--json")) json = 1;
        else if (!strcmp(name, "--verbose")) verbose = 1;
        else if (!strcmp(name, "--variations")) variations = 1;
        else if (!strcmp(name, "--checkpoints")) checkpoints = 1;
        else if (!strcmp(name, "--ledger")) ledger = 1;
        else if (!strcmp(name, "--history-dir")) history = v;
        else if (!strcmp(name, "--checkpoint-bottleneck")) {
            if ((bottleneck = parse_bottleneck(v)) == -2)
                return bad(name, v, "slots, server, link, none or mixed");
        }
        else if (!strcmp(name, "--profile")) {
            if (strcmp(v, "smoke") != 0 && strcmp(v, "paper") != 0)
                return bad(name, v, "paper or smoke");
            profile = v;
        } else if (!strcmp(name, "--seed")) {
            if (gw_cli_parse_u64(v, 0, UINT64_MAX, &seeds[0]) != 0)
                return bad(name, v, "an unsigned integer");
            n_seeds = 1;
            have_seed = 1;
        } else if (!strcmp(name, "--seeds")) {
            if (parse_seeds(v, seeds, &n_seeds) != 0)
                return bad(name, v, "distinct unsigned integers separated by commas, at most 256, e.g. 1,2,3");
            have_seeds = 1;
        } else if (!strcmp(name, "--days")) {
            if (gw_cli_parse_double(v, &days) != 0 || !(days > 0) || days > 400)
                return bad(name, v, "a number of days > 0 and <= 400, e.g. 55 or 0.5");
            have_days = 1;
        } else if (!strcmp(name, "--nodes")) {
            if (gw_cli_parse_u64(v, 1, GW_SIM_MAX_NODES, &nodes) != 0)
                return bad(name, v, "1..1024");
            have_nodes = 1;
        } else if (!strcmp(name, "--failure-scale")) {
            if (gw_cli_parse_double(v, &scale) != 0 || scale < 0 || scale > 100)
                return bad(name, v, "a factor from 0 to 100");
            have_scale = 1;
        } else if (!strcmp(name, "--interval")) {
            if (gw_parse_duration_ms(v, &interval_ms) != GW_OK || interval_ms < 1000 || interval_ms > 3600000)
                return bad(name, v, "a duration from 1s to 1h, e.g. 30s or 15s");
            have_interval = 1;
        } else if (!strcmp(name, "--config")) {
            if (v[0] == '\0')
                return bad(name, v, "a file name");
            config = v;
        } else if (!strcmp(name, "--threads")) {
            if (gw_cli_parse_u64(v, 1, 256, &threads) != 0)
                return bad(name, v, "1..256");
        } else if (!strcmp(name, "--label-style")) {
            if (gw_sim_label_style_parse(v, &label_style) != 0)
                return bad(name, v, "hostname, Hostname, kube, fqdn or ip");
            have_style = 1;
        } else if (!strcmp(name, "--gpu-model")) {
            if (gw_sim_gpu_model_parse(v, &gpu_model) != 0)
                return bad(name, v, "a100, h100 or b200");
            have_model = 1;
        } else if (!strcmp(name, "--bait-scale")) {
            if (gw_cli_parse_double(v, &bait_scale) != 0 || bait_scale < 0 || bait_scale > 100)
                return bad(name, v, "a factor from 0 to 100");
            have_baits = 1;
        } else if (!strcmp(name, "--failure-shapes")) {
            if (strcmp(v, "fixed") != 0 && strcmp(v, "random") != 0)
                return bad(name, v, "fixed or random");
            shapes_random = !strcmp(v, "random");
            have_shapes = 1;
        } else {
            fprintf(stderr, "gpuwatch evaluate: unknown option \"%s\"\n\n%s", name, usage_evaluate);
            return 2;
        }
    }
    if (have_seed && have_seeds) {
        fprintf(stderr, "gpuwatch evaluate: give --seed or --seeds, not both\n");
        return 2;
    }

    struct gw_error err = {0};
    struct gw_det_config dc;
    gw_det_config_default(&dc);
    if (config != NULL && gw_det_config_load(&dc, config, &err) != GW_OK) {
        fprintf(stderr, "gpuwatch evaluate: --config: %s\n", err.msg);
        return 2;
    }
    if (variations)
        return run_variations(&dc, have_seed || have_seeds ? seeds : NULL, n_seeds, have_days ? days : 10.0,
                              have_scale ? scale : 3.0, threads, json, verbose);
    struct gw_sim_config base;
    gw_sim_config_default(&base);
    base.start_ms = EVAL_START_MS;
    if (gw_sim_config_profile(&base, profile, &err) != GW_OK) {
        fprintf(stderr, "gpuwatch evaluate: --profile: %s\n", err.msg);
        return 2;
    }
    if (have_nodes)
        gw_sim_config_set_nodes(&base, (uint32_t)nodes);
    if (have_days)
        base.duration_ms = (int64_t)llround(days * 86400000.0);
    if (have_interval)
        base.interval_ms = interval_ms;
    if (base.jitter_ms * 2 >= base.interval_ms)
        base.jitter_ms = base.interval_ms / 2 - 1;
    if (have_scale)
        base.failure_scale = scale;
    if (have_style)
        base.label_style = label_style;
    if (have_model)
        base.gpu_model = gpu_model;
    if (have_baits)
        base.bait_scale = bait_scale;
    if (have_shapes)
        base.shape_jitter = shapes_random;
    if (bottleneck != -2)
        base.ckpt_bottleneck = bottleneck;
    if (gw_sim_config_check(&base, &err) != GW_OK) {
        fprintf(stderr, "gpuwatch evaluate: invalid settings: %s\n", err.msg);
        return 2;
    }

    struct gw_eval_opts o;
    gw_eval_opts_default(&o);
    if (history && (!ledger || n_seeds != 1)) {
        fprintf(stderr, "gpuwatch evaluate: --history-dir needs --ledger and one seed\n");
        return 2;
    }
    o.log_dir = history;
    struct job *jobs = calloc(n_seeds, sizeof *jobs);
    if (jobs == NULL) {
        fprintf(stderr, "gpuwatch evaluate: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < n_seeds; i++) {
        jobs[i].cfg = base;
        jobs[i].cfg.seed = seeds[i];
    }
    struct pool p = {.jobs = jobs, .n = n_seeds, .next = 0, .dc = &dc, .o = &o, .verbose = verbose, .ledger = ledger};
    run_pool(&p, threads);

    int status = 0;
    struct gw_eval_report *reps = calloc(n_seeds, sizeof *reps);
    size_t n_ok = 0;
    if (reps == NULL) {
        fprintf(stderr, "gpuwatch evaluate: out of memory\n");
        status = 1;
    }
    for (size_t i = 0; i < n_seeds; i++) {
        if (jobs[i].rc != GW_OK) {
            fprintf(stderr, "gpuwatch evaluate: seed %" PRIu64 ": %s\n", jobs[i].cfg.seed,
                    jobs[i].err.msg[0] ? jobs[i].err.msg : gw_strerror(jobs[i].rc));
            status = 1;
        } else if (reps != NULL) {
            if (ledger) jobs[n_ok].led = jobs[i].led;
            reps[n_ok++] = jobs[i].rep;
        }
    }
    if (ledger && n_ok > 0) {
        struct gw_eval_ledger *lv = malloc(n_ok * sizeof *lv);
        for (size_t i = 0; lv && i < n_ok; i++) lv[i] = jobs[i].led;
        if (!lv || gw_eval_ledger_print(lv, n_ok, stdout) != GW_OK || fflush(stdout) != 0) status = 1;
        free(lv);
        n_ok = 0;
    }
    if (reps != NULL && n_ok > 0) {
        unsigned flags = (json ? GW_EVAL_PRINT_JSON : 0) | (verbose ? GW_EVAL_PRINT_VERBOSE : 0);
        int prc = checkpoints ? gw_eval_ckpt_print(reps, n_ok, json, stdout) : gw_eval_print_flags(reps, n_ok, flags, stdout);
        if (prc != GW_OK || fflush(stdout) != 0) {
            fprintf(stderr, "gpuwatch evaluate: cannot write the report\n");
            status = 1;
        }
    }
    for (size_t i = 0; i < n_seeds; i++)
        gw_eval_report_free(&jobs[i].rep);
    free(reps);
    free(jobs);
    return status;
}
