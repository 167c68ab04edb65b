/* src/ledger/stats.c - fleet figures of a ledger result.
 *
 *  - chain success: successful / all automatic chains, and the same for
 *    manual recoveries; retry intervals: median and quartiles over every
 *    interval of every automatic chain;
 *  - fleet MTBF: node-hours with activity data / hardware failures;
 *  - exclusion concentration: the top_k nodes' share of all exclusions, and
 *    the Gini coefficient of exclusions over all nodes;
 *  - GPU-hours (GPUs per node from the input, 8 when not given):
 *    total = sessions' (end - start) x nodes; train = sessions' (end -
 *    steady) x nodes; lost, per failure ending a session: the work since
 *    the last checkpoint save finished in it (or since steady training)
 *    plus the whole of every failed start-up; goodput = (train - lost
 *    work) / total. Lost GPU-hours are also summed per failure class
 *    ("app" for sessions aborted by an application XID, "unknown" when no
 *    cause was found). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ledger/ledger_int.h"

static void add_cause(struct gw_led_stats *st, const char *cls, double lost, int failure)
{
    uint32_t i = 0;
    while (i < st->n_causes && strcmp(st->causes[i].cls, cls) != 0) i++;
    if (i == st->n_causes) {
        if (st->n_causes == 16) i = 15;   /* the last slot collects the rest */
        else snprintf(st->causes[st->n_causes++].cls, sizeof st->causes[0].cls, "%s", cls);
    }
    st->causes[i].lost_gpu_hours += lost;
    st->causes[i].failures += (uint32_t)failure;
}

/* End of the last checkpoint save of the fleet within [from, to), or from. */
static int64_t last_save(const struct gw_led_input *in, int64_t from, int64_t to)
{
    int64_t best = from;
    for (size_t i = 0; i < in->n_ckpts; i++) {
        const struct gw_det_ckpt *c = &in->ckpts[i];
        if (c->phase == GW_CKPT_SAVE && c->t_end > best && c->t_end <= to) best = c->t_end;
    }
    return best;
}

static void goodput(struct led_ctx *x, struct gw_led_stats *st)
{
    const struct gw_led_result *r = x->r;
    double g = (double)x->gpus / 3600000.0;
    double lost_work = 0;
    for (size_t i = 0; i < r->n_sessions; i++) {
        const struct gw_led_session *s = &r->sessions[i];
        double nodes = s->n_nodes;
        st->gpu_hours_total += (double)(s->t_end - s->t_start) * nodes * g;
        if (s->t_steady != GW_LED_NO_TIME) st->gpu_hours_train += (double)(s->t_end - s->t_steady) * nodes * g;
        double lost = 0;
        if (s->outcome == GW_LED_STARTUP_FAILED) lost = (double)(s->t_end - s->t_start) * nodes * g;
        else if (s->outcome == GW_LED_FAILED) {
            double w = (double)(s->t_end - last_save(x->in, s->t_steady, s->t_end)) * nodes * g;
            lost_work += w;
            lost = w;
        } else continue;
        st->gpu_hours_lost += lost;
        if (s->failure >= 0) x->r->failures[s->failure].lost_gpu_hours += lost;
        const char *cls = s->failure >= 0 ? r->failures[s->failure].cls : "unknown";
        if (s->failure < 0 && s->outcome == GW_LED_FAILED) cls = "app";
        add_cause(st, cls, lost, s->failure >= 0);
    }
    st->goodput = st->gpu_hours_total > 0 ? (st->gpu_hours_train - lost_work) / st->gpu_hours_total : NAN;
}

static void concentration(struct led_ctx *x, struct gw_led_stats *st)
{
    const struct gw_led_result *r = x->r;
    double *v = malloc((r->n_ledger ? r->n_ledger : 1) * sizeof *v);
    st->top_k_share = st->gini = NAN;
    if (!v) return;
    double total = 0;
    for (size_t i = 0; i < r->n_ledger; i++) total += v[i] = r->ledger[i].exclusions;
    if (total > 0) {
        led_quantile(v, r->n_ledger, 0);   /* sorts ascending */
        double top = 0, cum = 0, area = 0;
        for (size_t i = 0; i < r->n_ledger && i < x->c.top_k; i++) top += v[r->n_ledger - 1 - i];
        st->top_k_share = top / total;
        for (size_t i = 0; i < r->n_ledger; i++) {
            cum += v[i];
            area += cum - v[i] / 2;
        }
        /* Gini = 1 - 2 B, B the area under the Lorenz curve */
        st->gini = 1.0 - 2.0 * area / (total * (double)r->n_ledger);
    }
    free(v);
}

void led_stats(struct led_ctx *x)
{
    const struct gw_led_result *r = x->r;
    struct gw_led_stats *st = &x->r->stats;
    memset(st, 0, sizeof *st);
    st->sessions = (uint32_t)r->n_sessions;
    for (size_t i = 0; i < r->n_sessions; i++) switch (r->sessions[i].outcome) {
        case GW_LED_COMPLETED: st->completed++; break;
        case GW_LED_FAILED: st->failed++; break;
        case GW_LED_STARTUP_FAILED: st->startup_failed++; break;
        case GW_LED_RUNNING: st->running++; break;
        }
    double iv[1024];
    size_t niv = 0;
    for (size_t i = 0; i < r->n_chains; i++) {
        const struct gw_led_chain *c = &r->chains[i];
        if (c->automatic) {
            st->chains_auto++;
            st->chains_auto_ok += (uint32_t)c->success;
            st->attempts_auto += c->attempts;
            for (uint32_t k = 0; k < c->n_intervals && niv < 1024; k++) iv[niv++] = (double)c->intervals[k] / 60000.0;
        } else {
            st->chains_manual++;
            st->chains_manual_ok += (uint32_t)c->success;
        }
    }
    st->chain_success_auto = st->chains_auto ? (double)st->chains_auto_ok / st->chains_auto : NAN;
    st->chain_success_manual = st->chains_manual ? (double)st->chains_manual_ok / st->chains_manual : NAN;
    st->retry_interval_med_min = led_quantile(iv, niv, 0.5);
    st->retry_interval_p25_min = led_quantile(iv, niv, 0.25);
    st->retry_interval_p75_min = led_quantile(iv, niv, 0.75);
    st->failures = (uint32_t)r->n_failures;
    double hours = 0;
    for (uint32_t i = 0; i < r->n_nodes; i++) hours += x->node_hours[i];
    for (size_t i = 0; i < r->n_ledger; i++) st->hw_nodes += r->ledger[i].failures > 0;
    st->fleet_mtbf_h = r->n_failures ? hours / (double)r->n_failures : INFINITY;
    concentration(x, st);
    goodput(x, st);
}
