/* ckpt.c - `gpuwatch evaluate --checkpoints`: D7's checkpoint events and
 * alerts scored against the simulator's checkpoints (evaluate.h,
 * docs/evaluation.md "Checkpoints").
 *
 * Matching: each event (sorted by start) is paired with the not yet
 * paired truth checkpoint of the same phase it overlaps most, the
 * overlap of [t_start, t_end] intervals extended by one scrape interval on
 * each side (a 2-bucket checkpoint judged a bucket late still matches).
 * precision = matched / events, recall = matched / truth. The diagnosis is
 * right when it names the truth's bottleneck (none = healthy). Bottleneck
 * alerts are paired with the truth save whose end precedes their activeAt
 * by at most 10 minutes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "eval_int.h"
#include "gpuwatch/evaluate.h"

#define ALERT_AFTER_END_MS (10 * 60000LL)

static int diag_of(enum gw_sim_ckpt_bottleneck b)
{
    switch (b) {
    case GW_SIM_BN_NONE: return GW_CKPT_HEALTHY;
    case GW_SIM_BN_SLOTS: return GW_CKPT_SLOTS;
    case GW_SIM_BN_SERVER: return GW_CKPT_SERVER;
    case GW_SIM_BN_LINK: return GW_CKPT_LINK;
    default: return GW_CKPT_UNKNOWN;
    }
}

static int64_t overlap(int64_t a0, int64_t a1, int64_t b0, int64_t b1)
{
    int64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
    return hi - lo;
}

static int cmp_ev(const void *x, const void *y)
{
    const struct gw_det_ckpt *a = *(const struct gw_det_ckpt *const *)x, *b = *(const struct gw_det_ckpt *const *)y;
    return (a->t_start > b->t_start) - (a->t_start < b->t_start);
}

/* The truth save an alert at t belongs to (index), or -1. */
static ptrdiff_t save_before(const struct gw_sim_timeline *tl, int64_t t)
{
    ptrdiff_t best = -1;
    for (size_t i = 0; i < tl->n_checkpoints; i++) {
        const struct gw_sim_checkpoint *c = &tl->checkpoints[i];
        if (c->phase != GW_SIM_CKPT_SAVE || c->t_end > t || t - c->t_end > ALERT_AFTER_END_MS) continue;
        if (best < 0 || c->t_end > tl->checkpoints[best].t_end) best = (ptrdiff_t)i;
    }
    return best;
}

static void score_alerts(const struct gw_sim_timeline *tl, const struct gw_eval_alert *alerts, size_t n_alerts,
                         struct gw_eval_ckpt *out)
{
    uint8_t *alerted = calloc(tl->n_checkpoints ? tl->n_checkpoints : 1, 1);
    for (size_t i = 0; i < n_alerts; i++) {
        const struct gw_eval_alert *a = &alerts[i];
        if (strcmp(a->detector, "D7") != 0) continue;
        if (!strcmp(a->alertname, "CheckpointStalled")) {
            out->stalled_alerts++;
            continue;
        }
        if (strcmp(a->alertname, "CheckpointIoBottleneck") != 0) continue;
        out->bn_alerts++;
        ptrdiff_t k = save_before(tl, a->active_at);
        if (k < 0) {
            out->bn_alerts_unmatched++;
            continue;
        }
        if (alerted) alerted[k] = 1;
        if (tl->checkpoints[k].bottleneck == GW_SIM_BN_NONE) out->bn_alerts_healthy++;
    }
    for (size_t i = 0; i < tl->n_checkpoints; i++) {
        const struct gw_sim_checkpoint *c = &tl->checkpoints[i];
        if (c->phase != GW_SIM_CKPT_SAVE || c->bottleneck == GW_SIM_BN_NONE) continue;
        out->limited_saves++;
        if (alerted && alerted[i]) out->limited_saves_alerted++;
    }
    free(alerted);
}

int gw_eval_ckpt_score(const struct gw_sim_timeline *tl, const struct gw_det_ckpt *ev, size_t n_ev,
                       const struct gw_eval_alert *alerts, size_t n_alerts, struct gw_eval_ckpt *out)
{
    memset(out, 0, sizeof *out);
    int64_t iv = tl->cfg.interval_ms;
    out->interval_ms = iv;
    out->truth = (uint32_t)tl->n_checkpoints;
    out->events = (uint32_t)n_ev;
    size_t nt = tl->n_checkpoints;
    uint8_t *used = calloc(nt ? nt : 1, 1);
    const struct gw_det_ckpt **order = malloc((n_ev ? n_ev : 1) * sizeof *order);
    double *es = malloc((n_ev ? n_ev : 1) * sizeof *es), *ee = malloc((n_ev ? n_ev : 1) * sizeof *ee);
    if (!used || !order || !es || !ee) {
        free(used), free(order), free(es), free(ee);
        return GW_ENOMEM;
    }
    for (size_t i = 0; i < nt; i++) {
        int b = tl->checkpoints[i].bottleneck;
        if (b >= 0 && b < GW_SIM_BN_COUNT_) out->truth_by[b]++;
    }
    for (size_t i = 0; i < n_ev; i++) order[i] = &ev[i];
    qsort(order, n_ev, sizeof *order, cmp_ev);
    size_t nm = 0;
    for (size_t i = 0; i < n_ev; i++) {
        const struct gw_det_ckpt *e = order[i];
        ptrdiff_t best = -1;
        int64_t best_ov = 0;
        for (size_t k = 0; k < nt; k++) {
            const struct gw_sim_checkpoint *c = &tl->checkpoints[k];
            int ph = c->phase == GW_SIM_CKPT_SAVE ? GW_CKPT_SAVE : GW_CKPT_LOAD;
            if (used[k] || ph != e->phase) continue;
            int64_t ov = overlap(e->t_start - iv, e->t_end + iv, c->t_start, c->t_end);
            if (ov > best_ov) {
                best_ov = ov;
                best = (ptrdiff_t)k;
            }
        }
        if (best < 0) continue;
        used[best] = 1;
        const struct gw_sim_checkpoint *c = &tl->checkpoints[best];
        out->matched++;
        int tb = c->bottleneck >= 0 && c->bottleneck < GW_SIM_BN_COUNT_ ? (int)c->bottleneck : 0;
        int dg = e->diag >= 0 && e->diag < GW_CKPT_DIAG_COUNT_ ? e->diag : 0;
        out->confusion[tb][dg]++;
        es[nm] = fabs((double)(e->t_start - c->t_start)) / 1000.0;
        ee[nm] = fabs((double)(e->t_end - c->t_end)) / 1000.0;
        if (es[nm] * 1000.0 <= 2.0 * (double)iv) out->start_within2++;
        if (ee[nm] * 1000.0 <= 2.0 * (double)iv) out->end_within2++;
        nm++;
    }
    out->start_err_med_s = gw_eval_quantile(es, nm, 0.5);
    out->start_err_max_s = gw_eval_quantile(es, nm, 1.0);
    out->end_err_med_s = gw_eval_quantile(ee, nm, 0.5);
    out->end_err_max_s = gw_eval_quantile(ee, nm, 1.0);
    score_alerts(tl, alerts, n_alerts, out);
    free(used), free(order), free(es), free(ee);
    return GW_OK;
}

/* ------------------------------------------------------------ printing */

static const char *const k_bn[GW_SIM_BN_COUNT_] = {"none", "slots", "server", "link"};

static void add(struct gw_eval_ckpt *t, const struct gw_eval_ckpt *c)
{
    t->truth += c->truth, t->events += c->events, t->matched += c->matched;
    for (int b = 0; b < GW_SIM_BN_COUNT_; b++) {
        t->truth_by[b] += c->truth_by[b];
        for (int g = 0; g < GW_CKPT_DIAG_COUNT_; g++) t->confusion[b][g] += c->confusion[b][g];
    }
    t->start_within2 += c->start_within2, t->end_within2 += c->end_within2;
    t->bn_alerts += c->bn_alerts, t->bn_alerts_healthy += c->bn_alerts_healthy;
    t->bn_alerts_unmatched += c->bn_alerts_unmatched;
    t->limited_saves += c->limited_saves, t->limited_saves_alerted += c->limited_saves_alerted;
    t->stalled_alerts += c->stalled_alerts;
    if (!(t->start_err_max_s >= c->start_err_max_s)) t->start_err_max_s = c->start_err_max_s;
    if (!(t->end_err_max_s >= c->end_err_max_s)) t->end_err_max_s = c->end_err_max_s;
}

static double ratio(uint32_t a, uint32_t b)
{
    return b ? (double)a / b : NAN;
}

static uint32_t row_sum(const struct gw_eval_ckpt *c, int b)
{
    uint32_t s = 0;
    for (int g = 0; g < GW_CKPT_DIAG_COUNT_; g++) s += c->confusion[b][g];
    return s;
}

static void print_one(FILE *f, const char *name, const struct gw_eval_ckpt *c)
{
    fprintf(f, "%-8s truth %4u events %4u matched %4u  precision %.4f recall %.4f  start<=2iv %.4f end<=2iv %.4f",
            name, c->truth, c->events, c->matched, ratio(c->matched, c->events), ratio(c->matched, c->truth),
            ratio(c->start_within2, c->matched), ratio(c->end_within2, c->matched));
    if (c->start_err_med_s == c->start_err_med_s)
        fprintf(f, "  |start err| med %.0fs max %.0fs  |end err| med %.0fs max %.0fs\n", c->start_err_med_s,
                c->start_err_max_s, c->end_err_med_s, c->end_err_max_s);
    else
        fprintf(f, "  |start err| max %.0fs  |end err| max %.0fs\n", c->start_err_max_s, c->end_err_max_s);
    fprintf(f, "         diagnosis (rows truth, columns detected: unknown healthy slots server link; right share)\n");
    for (int b = 0; b < GW_SIM_BN_COUNT_; b++) {
        uint32_t n = row_sum(c, b);
        if (!c->truth_by[b] && !n) continue;
        fprintf(f, "           %-7s", k_bn[b]);
        for (int g = 0; g < GW_CKPT_DIAG_COUNT_; g++) fprintf(f, " %5u", c->confusion[b][g]);
        fprintf(f, "   right %.4f (of %u matched, %u truth)\n", ratio(c->confusion[b][diag_of(b)], n), n,
                c->truth_by[b]);
    }
    fprintf(f, "         CheckpointIoBottleneck %u (on healthy saves %u, on no save %u); limited saves alerted %u/%u;"
               " CheckpointStalled %u\n",
            c->bn_alerts, c->bn_alerts_healthy, c->bn_alerts_unmatched, c->limited_saves_alerted, c->limited_saves,
            c->stalled_alerts);
}

static void json_num(FILE *f, const char *k, double v, int comma)
{
    fprintf(f, "\"%s\":", k);
    gw_eval_json_num(f, v);
    if (comma) fputc(',', f);
}

static void print_json(FILE *f, const struct gw_eval_ckpt *c, uint64_t seed, int with_seed)
{
    fputc('{', f);
    if (with_seed) fprintf(f, "\"seed\":%llu,", (unsigned long long)seed);
    fprintf(f, "\"truth\":%u,\"events\":%u,\"matched\":%u,", c->truth, c->events, c->matched);
    json_num(f, "precision", ratio(c->matched, c->events), 1);
    json_num(f, "recall", ratio(c->matched, c->truth), 1);
    json_num(f, "start_within_2_scrapes", ratio(c->start_within2, c->matched), 1);
    json_num(f, "end_within_2_scrapes", ratio(c->end_within2, c->matched), 1);
    json_num(f, "start_err_max_s", c->start_err_max_s, 1);
    json_num(f, "end_err_max_s", c->end_err_max_s, 1);
    fprintf(f, "\"confusion\":{");
    for (int b = 0; b < GW_SIM_BN_COUNT_; b++) {
        fprintf(f, "%s\"%s\":{", b ? "," : "", k_bn[b]);
        for (int g = 0; g < GW_CKPT_DIAG_COUNT_; g++)
            fprintf(f, "%s\"%s\":%u", g ? "," : "", gw_ckpt_diag_name(g), c->confusion[b][g]);
        fputc('}', f);
    }
    fprintf(f, "},\"bottleneck_alerts\":%u,\"bottleneck_alerts_on_healthy\":%u,\"bottleneck_alerts_unmatched\":%u,"
               "\"limited_saves\":%u,\"limited_saves_alerted\":%u,\"stalled_alerts\":%u}",
            c->bn_alerts, c->bn_alerts_healthy, c->bn_alerts_unmatched, c->limited_saves, c->limited_saves_alerted,
            c->stalled_alerts);
}

int gw_eval_ckpt_print(const struct gw_eval_report *reps, size_t n, int json, FILE *f)
{
    struct gw_eval_ckpt tot;
    memset(&tot, 0, sizeof tot);
    tot.start_err_max_s = tot.end_err_max_s = NAN;
    tot.start_err_med_s = tot.end_err_med_s = NAN;
    for (size_t i = 0; i < n; i++) add(&tot, &reps[i].ckpt);
    if (json) {
        fprintf(f, "{\"seeds\":[");
        for (size_t i = 0; i < n; i++) {
            if (i) fputc(',', f);
            print_json(f, &reps[i].ckpt, reps[i].seed, 1);
        }
        fprintf(f, "],\"totals\":");
        print_json(f, &tot, 0, 0);
        fprintf(f, "}\n");
    } else {
        fprintf(f, "checkpoints (D7): events against the simulator's checkpoints\n");
        for (size_t i = 0; i < n; i++) {
            char name[32];
            snprintf(name, sizeof name, "seed %llu", (unsigned long long)reps[i].seed);
            print_one(f, name, &reps[i].ckpt);
        }
        if (n > 1) print_one(f, "total", &tot);
    }
    return ferror(f) ? GW_EIO : GW_OK;
}
