/* variations.c - the variation families of `gpuwatch evaluate
 * --variations` (docs/evaluation.md section 5): each family modifies the
 * paper profile (random failure shapes everywhere, the caller's days and
 * failure scale) and is scored on its own; rows pool the runs of a family,
 * the totals row pools all of them.
 *
 * JSON (gw_eval_var_print with json):
 *   {"families":[{"name":"baseline","runs":3,"days":30,"failures":40,"caught":31,
 *                 "with_precursor":9,"precursor_caught_early":4,"false_alarms":2,
 *                 "false_per_day_504":0.067,"unknown_host_alerts":0,
 *                 "detectors":{"combined":{"caught":31,"delay_median_min":0.5,"delay_p90_min":3.1},
 *                              "D1":{...}, ...}}, ...],
 *    "totals":{...same keys...}}
 * Missing delays are null. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/evaluate.h"
#include "eval/eval_int.h"

struct family {
    const char *name;
    enum gw_sim_label_style style[2];    /* by run index parity */
    enum gw_sim_gpu_model model[2];
    int64_t interval_ms;                 /* 0: the profile's */
    uint32_t nodes;                      /* 0: the profile's */
    double days_factor;                  /* x the caller's days */
    double scale_factor;                 /* x the caller's failure scale */
    double bait_scale;
    int shuffled;
};

#define H GW_SIM_LABELS_HOSTNAME
#define B GW_SIM_GPU_B200
static const struct family families[] = {
    {"baseline", {H, H}, {B, B}, 0, 0, 1.0, 1.0, 1.0, 0},
    {"labels-kube", {GW_SIM_LABELS_KUBE, GW_SIM_LABELS_KUBE}, {B, B}, 0, 0, 1.0, 1.0, 1.0, 0},
    {"labels-fqdn-ip", {GW_SIM_LABELS_FQDN, GW_SIM_LABELS_IP}, {B, B}, 0, 0, 1.0, 1.0, 1.0, 0},
    {"interval-15s", {H, H}, {B, B}, 15000, 0, 1.0, 1.0, 1.0, 0},
    {"interval-60s", {H, H}, {B, B}, 60000, 0, 1.0, 1.0, 1.0, 0},
    {"small-cluster", {H, H}, {B, B}, 0, 8, 1.0, 20.0 / 3.0, 1.0, 0},
    {"large-cluster", {H, H}, {B, B}, 0, 128, 0.5, 1.0, 1.0, 0},
    {"gpu-a100-h100", {H, H}, {GW_SIM_GPU_A100, GW_SIM_GPU_H100}, 0, 0, 1.0, 1.0, 1.0, 0},
    {"baits-x2", {H, H}, {B, B}, 0, 0, 1.0, 1.0, 2.0, 0},
    {"arrival-shuffled", {H, H}, {B, B}, 0, 0, 1.0, 1.0, 1.0, 1},
};
#undef H
#undef B
#define N_FAMILIES (sizeof families / sizeof families[0])

size_t gw_eval_family_count(void) { return N_FAMILIES; }

const char *gw_eval_family_name(size_t family)
{
    return family < N_FAMILIES ? families[family].name : NULL;
}

int gw_eval_family_config(size_t family, size_t index, uint64_t seed, const struct gw_sim_config *base,
                          struct gw_sim_config *cfg, struct gw_eval_opts *o, struct gw_error *err)
{
    if (family >= N_FAMILIES || base == NULL || cfg == NULL || o == NULL)
        return gw_error_set(err, GW_EINVAL, "evaluate: unknown variation family %zu", family);
    const struct family *f = &families[family];
    *cfg = *base;
    cfg->seed = seed;
    cfg->shape_jitter = 1;
    cfg->label_style = f->style[index % 2];
    cfg->legacy_hostname = 0;
    cfg->gpu_model = f->model[index % 2];
    cfg->bait_scale = base->bait_scale * f->bait_scale;
    cfg->failure_scale = base->failure_scale * f->scale_factor;
    if (cfg->failure_scale > 100.0)
        cfg->failure_scale = 100.0;
    cfg->duration_ms = (int64_t)llround((double)base->duration_ms * f->days_factor);
    if (f->interval_ms > 0) {
        cfg->interval_ms = f->interval_ms;
        /* keep the start on the new interval's grid */
        cfg->start_ms -= cfg->start_ms % cfg->interval_ms;
    }
    if (cfg->jitter_ms * 2 >= cfg->interval_ms)
        cfg->jitter_ms = cfg->interval_ms / 2 - 1;
    if (f->nodes > 0)
        gw_sim_config_set_nodes(cfg, f->nodes);
    gw_eval_opts_default(o);
    if (f->shuffled) {
        o->shuffle_seed = seed * 0x9E3779B97F4A7C15ull + 1;
        o->shuffle_shards = 4;
        o->shuffle_skew = 3;
    }
    return gw_sim_config_check(cfg, err);
}

/* ------------------------------------------------------------------ rows */

int gw_eval_var_row(const struct gw_eval_report *reps, size_t n, const char *name, struct gw_eval_var_row *row)
{
    if (row == NULL || (reps == NULL && n > 0))
        return GW_EINVAL;
    memset(row, 0, sizeof *row);
    snprintf(row->name, sizeof row->name, "%s", name ? name : "");
    size_t total = 0;
    for (size_t r = 0; r < n; r++)
        total += reps[r].n_failures;
    double *delays = malloc((total ? total : 1) * sizeof *delays);
    if (delays == NULL)
        return GW_ENOMEM;
    double fa_scaled = 0;
    for (size_t r = 0; r < n; r++) {
        const struct gw_eval_report *rp = &reps[r];
        row->runs++;
        row->days += rp->days;
        row->det_present |= rp->det_present;
        row->unknown_host_alerts += rp->unknown_host_alerts;
        const struct gw_eval_row *comb = NULL;
        for (size_t i = 0; i < rp->n_rows; i++)
            if (strcmp(rp->rows[i].name, "combined") == 0)
                comb = &rp->rows[i];
        if (comb != NULL) {
            row->false_alarms += comb->false_alarms;
            double gpus = (double)rp->nodes * (double)rp->gpus;
            if (gpus > 0)
                fa_scaled += (double)comb->false_alarms * 504.0 / gpus;
        }
        for (size_t i = 0; i < rp->n_failures; i++) {
            const struct gw_eval_failure *e = &rp->failures[i];
            row->failures++;
            row->caught += e->caught != 0;
            row->with_precursor += e->has_precursor != 0;
            int64_t ref = e->t_xid_visible != GW_SIM_NO_TIME ? e->t_xid_visible : e->t_fault;
            if (e->has_precursor && e->caught && e->t_detect < ref)
                row->precursor_caught_early++;
        }
    }
    row->false_per_day_504 = row->days > 0 ? fa_scaled / row->days : 0.0;
    for (int d = 0; d <= GW_EVAL_MAX_DET; d++) {
        size_t m = 0;
        for (size_t r = 0; r < n; r++)
            for (size_t i = 0; i < reps[r].n_failures; i++) {
                const struct gw_eval_failure *e = &reps[r].failures[i];
                int64_t t = d == 0 ? (e->caught ? e->t_detect : INT64_MIN) : e->t_detect_by[d];
                if (t != INT64_MIN)
                    delays[m++] = (double)(t - e->t_fault) / 60000.0;
            }
        row->det_caught[d] = (uint32_t)m;
        row->delay_median_min[d] = gw_eval_quantile(delays, m, 0.5);
        row->delay_p90_min[d] = gw_eval_quantile(delays, m, 0.9);
    }
    free(delays);
    return GW_OK;
}

/* ---------------------------------------------------------------- print */
static void put_num(FILE *f, double v, int json)
{
    if (isnan(v))
        fputs(json ? "null" : "-", f);
    else
        fprintf(f, "%.1f", v);
}

static void json_row(FILE *f, const struct gw_eval_var_row *r)
{
    fprintf(f,
            "{\"name\":\"%s\",\"runs\":%u,\"days\":%.3f,\"failures\":%u,\"caught\":%u,\"with_precursor\":%u,"
            "\"precursor_caught_early\":%u,\"false_alarms\":%u,\"false_per_day_504\":%.4f,"
            "\"unknown_host_alerts\":%u,\"detectors\":{",
            r->name, r->runs, r->days, r->failures, r->caught, r->with_precursor, r->precursor_caught_early,
            r->false_alarms, r->false_per_day_504, r->unknown_host_alerts);
    int first = 1;
    for (int d = 0; d <= GW_EVAL_MAX_DET; d++) {
        if (d > 0 && !(r->det_present & (1u << d)))
            continue;
        if (d == 0)
            fprintf(f, "\"combined\":");
        else
            fprintf(f, ",\"D%d\":", d);
        fprintf(f, "{\"caught\":%u,\"delay_median_min\":", r->det_caught[d]);
        put_num(f, r->delay_median_min[d], 1);
        fputs(",\"delay_p90_min\":", f);
        put_num(f, r->delay_p90_min[d], 1);
        fputc('}', f);
        first = 0;
    }
    (void)first;
    fputs("}}", f);
}

int gw_eval_var_print(const struct gw_eval_var_row *rows, size_t n, int json, FILE *f)
{
    if (rows == NULL || n == 0 || f == NULL)
        return GW_EINVAL;
    uint32_t present = 0;
    for (size_t i = 0; i < n; i++)
        present |= rows[i].det_present;
    if (json) {
        fputs("{\"families\":[", f);
        for (size_t i = 0; i + 1 < n; i++) {
            if (i)
                fputc(',', f);
            json_row(f, &rows[i]);
        }
        fputs("],\"totals\":", f);
        json_row(f, &rows[n - 1]);
        fputs("}\n", f);
        return ferror(f) ? GW_EIO : GW_OK;
    }
    fprintf(f, "%-17s %4s %5s %6s %9s %9s %7s", "family", "runs", "days", "fail", "caught", "pre-early",
            "fa/d504");
    fprintf(f, "  %-11s", "all med/p90");
    for (int d = 1; d <= GW_EVAL_MAX_DET; d++)
        if (present & (1u << d))
            fprintf(f, "  D%d med/p90 ", d);
    fputc('\n', f);
    for (size_t i = 0; i < n; i++) {
        const struct gw_eval_var_row *r = &rows[i];
        char caught[24], pre[24], cell[32];
        snprintf(caught, sizeof caught, "%u/%u", r->caught, r->failures);
        snprintf(pre, sizeof pre, "%u/%u", r->precursor_caught_early, r->with_precursor);
        fprintf(f, "%-17s %4u %5.0f %6u %9s %9s %7.3f", r->name, r->runs, r->days, r->failures, caught, pre,
                r->false_per_day_504);
        for (int d = 0; d <= GW_EVAL_MAX_DET; d++) {
            if (d > 0 && !(present & (1u << d)))
                continue;
            char a[16], b[16];
            if (isnan(r->delay_median_min[d]))
                snprintf(a, sizeof a, "-");
            else
                snprintf(a, sizeof a, "%.1f", r->delay_median_min[d]);
            if (isnan(r->delay_p90_min[d]))
                snprintf(b, sizeof b, "-");
            else
                snprintf(b, sizeof b, "%.1f", r->delay_p90_min[d]);
            snprintf(cell, sizeof cell, "%s/%s", a, b);
            fprintf(f, "  %-11s", cell);
        }
        fputc('\n', f);
    }
    fprintf(f, "caught = failures caught / hardware failures; pre-early = precursor failures caught before "
               "the XID / precursor failures;\nfa/d504 = false alarms per day scaled to 504 GPUs; med/p90 = "
               "delay fault -> alert firing in minutes (negative: early)\n");
    return ferror(f) ? GW_EIO : GW_OK;
}
