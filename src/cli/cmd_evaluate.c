/* cmd_evaluate.c - `gpuwatch evaluate`: simulates a cluster in memory,
 * feeds it through the failure detectors and scores their alerts against
 * the simulator's ground truth (evaluate.h, docs/evaluation.md). Several
 * seeds run in parallel threads, one seed per thread at a time; the
 * reports are printed in seed order, then their totals. */
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
#include "gpuwatch/progress.h"
#include "cli_parse.h"
#include "cli_sim.h"

#define MAX_SEEDS 256
/* Fixed start so that a seed gives the same run whatever the day. */
#define EVAL_START_MS 1767225600000LL /* 2026-01-01T00:00:00Z */

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
    struct gw_progress *bar;   /* runs finished of n (progress.h); NULL with per-run lines */
};

/* One run finished: count it for the progress reporter. */
static void pool_done(struct pool *p)
{
    pthread_mutex_lock(&p->mu);
    ++p->done;
    gw_progress_set(p->bar, p->done);
    pthread_mutex_unlock(&p->mu);
}

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
        pool_done(p);
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
    /* --variations and --verbose print a line per run instead */
    if (!p->variations && !p->verbose)
        p->bar = gw_progress_start("evaluate: runs", p->n, GW_PROGRESS_ITEMS);
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
    gw_progress_end(p->bar);
    p->bar = NULL;
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

/* The options of one evaluation. */
struct eval_args {
    const char *profile, *config, *history;
    int json, verbose, variations, checkpoints, ledger, have_seed, have_seeds, have_scale;
    uint64_t seeds[MAX_SEEDS], threads;
    size_t n_seeds;
    double scale;
    struct gw_cli_cluster cl;
};

static int set_seed(void *base, const char *v)
{
    struct eval_args *a = base;
    if (gw_cli_parse_u64(v, 0, UINT64_MAX, &a->seeds[0]) != 0)
        return -1;
    a->n_seeds = 1;
    return 0;
}

static int set_seeds(void *base, const char *v)
{
    struct eval_args *a = base;
    return parse_seeds(v, a->seeds, &a->n_seeds) == 0 ? 0 : -1;
}

static const char *const profile_names[] = {"paper", "smoke", NULL};

static const struct gw_cli_opt eval_opts[] = {
    {.name = "--profile", .arg = "P", .type = GW_CLI_STR, GW_CLI_AT(struct eval_args, profile),
     .choices = profile_names,
     .help = "paper (63 nodes incl. 3 spares, 55 days; default) or smoke\n(4 nodes incl. 1 spare, 1 day)"},
    {.name = "--seed", .arg = "N", .type = GW_CLI_CALL, GW_CLI_SEEN(struct eval_args, have_seed), .set = set_seed,
     .expect = "an unsigned integer", .help = "one seed (default 1)"},
    {.name = "--seeds", .arg = "LIST", .type = GW_CLI_CALL, GW_CLI_SEEN(struct eval_args, have_seeds),
     .set = set_seeds, .expect = "distinct unsigned integers separated by commas, at most 256, e.g. 1,2,3",
     .help = "several seeds, comma-separated (e.g. 1,2,3): run in parallel,\n"
             "printed one after the other, then their totals"},
    {.type = GW_CLI_TABLE, .sub = gw_cli_cluster_opts, GW_CLI_AT(struct eval_args, cl)},
    {.name = "--failure-scale", .arg = "X", .type = GW_CLI_DOUBLE, GW_CLI_AT(struct eval_args, scale),
     GW_CLI_SEEN(struct eval_args, have_scale), .dmin = 0, .dmax = 100, .expect = "a factor from 0 to 100",
     .help = "multiply every failure hazard by X (0..100, default 1)"},
    {.name = "--config", .arg = "FILE", .type = GW_CLI_STR, GW_CLI_AT(struct eval_args, config),
     .flags = GW_CLI_NONEMPTY, .expect = "a file name",
     .help = "detector thresholds (key = value lines, see docs/detectors.md)"},
    {.name = "--threads", .arg = "N", .type = GW_CLI_UINT, GW_CLI_AT(struct eval_args, threads), .min = 1,
     .max = 256, .help = "seeds evaluated at once (default: CPUs, at most the seeds)"},
    {.name = "--checkpoints", .type = GW_CLI_FLAG, GW_CLI_AT(struct eval_args, checkpoints),
     .help = "report D7's checkpoint events instead: precision and recall\n"
             "against the simulated checkpoints, start/end error, the\n"
             "diagnosis confusion matrix, bottleneck alerts on healthy saves"},
    {.name = "--ledger", .type = GW_CLI_FLAG, GW_CLI_AT(struct eval_args, ledger),
     .help = "report the node ledger (D8) instead: sessions found against the\n"
             "simulated ones (precision, recall), retry chains' success and\n"
             "median interval beside the truth's, the ranks of the lemon\n"
             "nodes, exclusion concentration and evidence (docs/ledger.md)"},
    {.name = "--history-dir", .arg = "DIR", .type = GW_CLI_STR, GW_CLI_AT(struct eval_args, history),
     .flags = GW_CLI_NONEMPTY, .expect = "a directory",
     .help = "with --ledger and one seed: also keep what serve would keep\n"
             "(the alert log, gpuwatch_node_activity, D7's checkpoint events)\n"
             "in the data dir DIR, for gpuwatch report"},
    {.name = "--json", .type = GW_CLI_FLAG, GW_CLI_AT(struct eval_args, json),
     .help = "one JSON object instead of the table"},
    {.name = "--verbose", .type = GW_CLI_FLAG, GW_CLI_AT(struct eval_args, verbose),
     .help = "also list every failure (detection, detector, lead/delay) and\n"
             "every false alarm; progress on stderr"},
    {.name = "--variations", .type = GW_CLI_FLAG, GW_CLI_AT(struct eval_args, variations),
     .help = "run the variation families (baseline, labels-kube,\n"
             "labels-fqdn-ip, interval-15s, interval-60s, small-cluster,\n"
             "large-cluster, gpu-a100-h100, baits-x2, arrival-shuffled), each\n"
             "scored on its own: paper profile with random failure shapes,\n"
             "default --days 10, --failure-scale 3, --seeds 1,2,3"},
    {0},
};

static const struct gw_cli_cmd eval_cmd = {
    .name = "evaluate",
    .synopsis = "[--profile paper|smoke] [--seed N | --seeds 1,2,3] [options]",
    .intro = "Simulates a GPU training cluster in memory (only the series a detector reads),\n"
             "feeds every sample in time order through the same detectors ingest runs, and\n"
             "scores their alerts against the simulator's ground truth: per detector D1-D6 and\n"
             "combined, failures caught, caught before the XID with the lead time, delay from\n"
             "fault to alert, false alarms per day; the report's v1 figures printed beside.\n"
             "A failure is caught by a warning/critical alert on its node firing within\n"
             "[fault - 60 min, fault + 5 min]; false alarms on one node within 30 min count once.\n",
    .opts = eval_opts,
    .outro = "\nRuns start at 2026-01-01T00:00:00Z so that a seed always gives the same result.\n"
             "Exit status: 0 when the evaluation ran, 1 when a run failed, 2 on bad options.\n",
};

/* Options into a. -1 to go on, else the exit status. */
static int eval_parse(int argc, char **argv, struct eval_args *a)
{
    memset(a, 0, sizeof *a);
    a->profile = "paper";
    a->seeds[0] = 1;
    a->n_seeds = 1;
    a->scale = 1;
    int rc = gw_cli_parse(&eval_cmd, argc, argv, a);
    if (rc >= 0)
        return rc;
    if (a->have_seed && a->have_seeds)
        return gw_cli_usage_error(&eval_cmd, 0, "give --seed or --seeds, not both");
    if (a->history && (!a->ledger || a->n_seeds != 1))
        return gw_cli_usage_error(&eval_cmd, 0, "--history-dir needs --ledger and one seed");
    return -1;
}

/* The simulator's settings every seed shares. -1 to go on, else the exit status. */
static int eval_base_config(const struct eval_args *a, struct gw_sim_config *base)
{
    struct gw_error err = {0};
    gw_sim_config_default(base);
    base->start_ms = EVAL_START_MS;
    if (gw_sim_config_profile(base, a->profile, &err) != GW_OK) {
        fprintf(stderr, "gpuwatch evaluate: --profile: %s\n", err.msg);
        return 2;
    }
    gw_cli_cluster_apply(&a->cl, base);
    if (a->have_scale)
        base->failure_scale = a->scale;
    if (gw_sim_config_check(base, &err) != GW_OK) {
        fprintf(stderr, "gpuwatch evaluate: invalid settings: %s\n", err.msg);
        return 2;
    }
    return -1;
}

/* Prints the reports of the seeds that ran (in seed order), then their
 * totals. 0, or 1 when a seed failed or the report could not be written. */
static int eval_print(const struct eval_args *a, struct job *jobs)
{
    int status = 0;
    struct gw_eval_report *reps = calloc(a->n_seeds, sizeof *reps);
    size_t n_ok = 0;
    if (reps == NULL) {
        fprintf(stderr, "gpuwatch evaluate: out of memory\n");
        status = 1;
    }
    for (size_t i = 0; i < a->n_seeds; i++) {
        if (jobs[i].rc != GW_OK) {
            fprintf(stderr, "gpuwatch evaluate: seed %" PRIu64 ": %s\n", jobs[i].cfg.seed,
                    jobs[i].err.msg[0] ? jobs[i].err.msg : gw_strerror(jobs[i].rc));
            status = 1;
        } else if (reps != NULL) {
            reps[n_ok++] = jobs[i].rep;
        }
    }
    if (a->ledger && n_ok > 0) {
        struct gw_eval_ledger *lv = malloc(n_ok * sizeof *lv);
        size_t k = 0;
        for (size_t i = 0; lv && i < a->n_seeds; i++)
            if (jobs[i].rc == GW_OK) lv[k++] = jobs[i].led;
        if (!lv || gw_eval_ledger_print(lv, k, stdout) != GW_OK || fflush(stdout) != 0) {
            fprintf(stderr, "gpuwatch evaluate: cannot write the report\n");
            status = 1;
        }
        free(lv);
    } else if (reps != NULL && n_ok > 0) {
        unsigned flags = (a->json ? GW_EVAL_PRINT_JSON : 0) | (a->verbose ? GW_EVAL_PRINT_VERBOSE : 0);
        int prc = a->checkpoints ? gw_eval_ckpt_print(reps, n_ok, a->json, stdout)
                                 : gw_eval_print_flags(reps, n_ok, flags, stdout);
        if (prc != GW_OK || fflush(stdout) != 0) {
            fprintf(stderr, "gpuwatch evaluate: cannot write the report\n");
            status = 1;
        }
    }
    free(reps);
    return status;
}

int gw_cli_evaluate(int argc, char **argv)
{
    struct eval_args a;
    int rc = eval_parse(argc, argv, &a);
    if (rc >= 0)
        return rc;
    struct gw_error err = {0};
    struct gw_det_config dc;
    gw_det_config_default(&dc);
    if (a.config != NULL && gw_det_config_load(&dc, a.config, &err) != GW_OK) {
        fprintf(stderr, "gpuwatch evaluate: --config: %s\n", err.msg);
        return 2;
    }
    if (a.variations)
        return run_variations(&dc, a.have_seed || a.have_seeds ? a.seeds : NULL, a.n_seeds,
                              a.cl.have_days ? a.cl.days : 10.0, a.have_scale ? a.scale : 3.0, a.threads, a.json,
                              a.verbose);
    struct gw_sim_config base;
    if ((rc = eval_base_config(&a, &base)) >= 0)
        return rc;

    struct gw_eval_opts o;
    gw_eval_opts_default(&o);
    o.log_dir = a.history;
    struct job *jobs = calloc(a.n_seeds, sizeof *jobs);
    if (jobs == NULL) {
        fprintf(stderr, "gpuwatch evaluate: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < a.n_seeds; i++) {
        jobs[i].cfg = base;
        jobs[i].cfg.seed = a.seeds[i];
    }
    struct pool p = {.jobs = jobs, .n = a.n_seeds, .next = 0, .dc = &dc, .o = &o, .verbose = a.verbose,
                     .ledger = a.ledger};
    run_pool(&p, a.threads);
    int status = eval_print(&a, jobs);
    for (size_t i = 0; i < a.n_seeds; i++)
        gw_eval_report_free(&jobs[i].rep);
    free(jobs);
    return status;
}
