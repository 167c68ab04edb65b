/* src/ledger/nodes.c - the node ledger, the exclusion list, fleet figures.
 *
 * Per node: its failures in the range, the repeats among them, the
 * sessions it was left out of after a failure (session.excluded) plus the
 * scheduler's node_excluded events, the hours it reported activity, MTBF
 * (those hours / failures) and a decayed score:
 *     score = sum over failures of w * 2^(-(now - t_first) / half_life),
 *     w = 1, 1.5 for a repeat; + 0.5 * 2^(-age / half_life) per scheduler exclusion.
 * Lemons: score >= lemon_score. The ranking is over the whole range: rank
 * 1 has the most failures (then more repeats, the higher score, more
 * exclusions, name).
 *
 * Exclusions now (one entry per node, the first reason that holds; a
 * node_returned event clears every reason older than it):
 *  repeat     an escalated repeat (replace_gpu) within repeat_window: until returned by hand;
 *  failure    a failure within probation and no session of the node has
 *             reached steady training since: until then, or probation over;
 *  lemon      a lemon: until returned by hand or its score decays;
 *  scheduler  a node_excluded event not followed by node_returned. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/json.h"
#include "ledger/ledger_int.h"

static double decay(const struct led_ctx *x, int64_t t)
{
    double age = (double)(x->r->now - t);
    if (age < 0) age = 0;
    return pow(2.0, -age / (double)x->c.half_life_ms);
}

static int64_t last_event(const struct gw_led_input *in, const char *node, enum gw_led_ev_type type, int64_t now,
                          const struct gw_led_event **out)
{
    int64_t best = GW_LED_NO_TIME;
    for (size_t i = 0; i < in->n_events; i++) {
        const struct gw_led_event *e = &in->events[i];
        if (e->type != type || e->t > now || strcmp(e->node, node) != 0) continue;
        if (e->t > best) {
            best = e->t;
            if (out) *out = e;
        }
    }
    return best;
}

static int healthy_run_since(const struct gw_led_result *r, uint32_t node, int64_t t)
{
    for (size_t i = 0; i < r->n_sessions; i++) {
        const struct gw_led_session *s = &r->sessions[i];
        if (s->t_steady != GW_LED_NO_TIME && s->t_steady > t && led_is_member(s, node)) return 1;
    }
    return 0;
}

struct rank_item {
    struct gw_led_node ln;
    const char *name;
};

static int cmp_rank(const void *a, const void *b)
{
    const struct rank_item *p = a, *q = b;
    const struct gw_led_node *x = &p->ln, *y = &q->ln;
    if (x->failures != y->failures) return x->failures > y->failures ? -1 : 1;
    if (x->repeats != y->repeats) return x->repeats > y->repeats ? -1 : 1;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    if (x->exclusions != y->exclusions) return x->exclusions > y->exclusions ? -1 : 1;
    return strcmp(p->name, q->name);
}

struct excl_item {
    struct gw_led_exclusion e;
    const char *name;
};

static int cmp_excl(const void *a, const void *b)
{
    return strcmp(((const struct excl_item *)a)->name, ((const struct excl_item *)b)->name);
}

static void node_figures(struct led_ctx *x, struct gw_led_node *ln)
{
    const struct gw_led_result *r = x->r;
    uint32_t n = ln->node;
    for (size_t i = 0; i < r->n_failures; i++) {
        const struct gw_led_failure *f = &r->failures[i];
        if (f->node != n) continue;
        ln->failures++;
        if (f->repeat >= 2) ln->repeats++;
        ln->score += (f->repeat >= 2 ? 1.5 : 1.0) * decay(x, f->t_first);
    }
    for (size_t i = 0; i < r->n_sessions; i++)
        for (int k = 0; k < 4; k++)
            if (r->sessions[i].excluded[k] == (int32_t)n) ln->exclusions++;
    for (size_t i = 0; i < x->in->n_events; i++) {
        const struct gw_led_event *e = &x->in->events[i];
        if (e->type == GW_LEV_NODE_EXCLUDED && strcmp(e->node, r->nodes[n]) == 0) {
            ln->exclusions++;
            ln->score += 0.5 * decay(x, e->t);
        }
    }
    ln->hours_observed = x->node_hours[n];
    ln->mtbf_h = ln->failures ? ln->hours_observed / ln->failures : INFINITY;
    ln->lemon = ln->score >= x->c.lemon_score;
}

/* The exclusion of node n now, if any. */
static int exclusion_of(struct led_ctx *x, const struct gw_led_node *ln, struct gw_led_exclusion *e)
{
    const struct gw_led_result *r = x->r;
    uint32_t n = ln->node;
    int64_t ret = last_event(x->in, r->nodes[n], GW_LEV_NODE_RETURNED, r->now, NULL);
    const struct gw_led_failure *last = NULL, *rep = NULL;
    int64_t newest = GW_LED_NO_TIME;
    for (size_t i = 0; i < r->n_failures; i++) {
        const struct gw_led_failure *f = &r->failures[i];
        if (f->node == n && f->t_first <= r->now && f->t_first > newest) newest = f->t_first;
        if (f->node != n || f->t_first > r->now || (ret != GW_LED_NO_TIME && f->t_first <= ret)) continue;
        last = f;
        if (f->repeat >= 2 && strcmp(f->action, "replace_gpu") == 0 && r->now - f->t_first <= x->c.repeat_window_ms)
            rep = f;
    }
    memset(e, 0, sizeof *e);
    e->node = n;
    e->failure = -1;
    e->until = GW_LED_NO_TIME;
    char when[40];
    const struct gw_led_failure *f = rep;
    if (rep) {
        e->source = GW_LEX_REPEAT;
        snprintf(e->reason, sizeof e->reason, "%s", rep->escalation);
    } else if (last && r->now - last->t_first < x->c.probation_ms && !healthy_run_since(r, n, last->t_first)) {
        f = last;
        e->source = GW_LEX_FAILURE;
        e->until = last->t_first + x->c.probation_ms;
        gw_format_rfc3339_s(last->t_first, when, sizeof when);
        snprintf(e->reason, sizeof e->reason, "%s (%s%s%.0u%s) at %s; no healthy run since", last->alertname,
                 last->cls, last->xid ? ", XID " : "", last->xid, last->gpu >= 0 ? " on a GPU" : "", when);
    } else if (ln->lemon && (ret == GW_LED_NO_TIME || ret < newest)) {
        f = last;
        e->source = GW_LEX_LEMON;
        snprintf(e->reason, sizeof e->reason, "lemon: score %.2f from %u failures (%u repeats), %u exclusions; rank %u",
                 ln->score, ln->failures, ln->repeats, ln->exclusions, ln->rank);
        snprintf(e->action, sizeof e->action, "drain_node");
    } else {
        const struct gw_led_event *ev = NULL;
        int64_t ex = last_event(x->in, r->nodes[n], GW_LEV_NODE_EXCLUDED, r->now, &ev);
        if (ex == GW_LED_NO_TIME || (ret != GW_LED_NO_TIME && ret >= ex)) return 0;
        e->source = GW_LEX_SCHEDULER;
        e->since = ex;
        snprintf(e->reason, sizeof e->reason, "excluded by the scheduler%s%.200s", ev->reason[0] ? ": " : "", ev->reason);
        snprintf(e->action, sizeof e->action, "none");
        return 1;
    }
    if (f) {
        e->since = f->t_first;
        e->failure = (int32_t)f->id;
        memcpy(e->alert_ids, f->alert_ids, sizeof e->alert_ids);
        e->n_alert_ids = f->n_alert_ids;
        if (!e->action[0]) snprintf(e->action, sizeof e->action, "%s", f->action);
    }
    return 1;
}

int led_nodes(struct led_ctx *x, struct gw_error *err)
{
    struct gw_led_result *r = x->r;
    size_t nn = r->n_nodes ? r->n_nodes : 1;
    r->ledger = calloc(nn, sizeof *r->ledger);
    r->exclusions = calloc(nn, sizeof *r->exclusions);
    struct rank_item *ri = calloc(nn, sizeof *ri);
    struct excl_item *ei = calloc(nn, sizeof *ei);
    if (!r->ledger || !r->exclusions || !ri || !ei) {
        free(ri);
        free(ei);
        return gw_error_set(err, GW_ENOMEM, "out of memory (ledger)");
    }
    for (uint32_t i = 0; i < r->n_nodes; i++) {
        ri[i].ln.node = i;
        ri[i].name = r->nodes[i];
        node_figures(x, &ri[i].ln);
    }
    led_qsort(ri, r->n_nodes, sizeof *ri, cmp_rank);
    for (uint32_t i = 0; i < r->n_nodes; i++) {
        r->ledger[i] = ri[i].ln;
        r->ledger[i].rank = i + 1;
    }
    r->n_ledger = r->n_nodes;
    size_t ne = 0;
    for (uint32_t i = 0; i < r->n_nodes; i++) {
        struct gw_led_node *ln = &r->ledger[i];
        if (exclusion_of(x, ln, &ei[ne].e)) {
            ln->excluded = 1;
            ei[ne++].name = r->nodes[ln->node];
        }
    }
    led_qsort(ei, ne, sizeof *ei, cmp_excl);
    for (size_t i = 0; i < ne; i++) r->exclusions[i] = ei[i].e;
    r->n_exclusions = ne;
    free(ri);
    free(ei);
    return GW_OK;
}
