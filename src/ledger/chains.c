/* src/ledger/chains.c - how sessions ended, retry chains, recovery times.
 *
 * Outcome of an inferred session (scheduler sessions keep theirs):
 *  - running: still active when the data ends (its end within one bridged
 *    gap of the newest activity);
 *  - failed / startup_failed: a failure of a member node was detected
 *    (first critical alert fired) within [end - fail_window, end + slack],
 *    or an application XID on a member (or a job-level collective abort)
 *    came within [end - slack, end + slack] (slack = 2 intervals + 1 min,
 *    at least 5 min);
 *    failed when it had reached steady training, else startup_failed;
 *  - startup_failed also when it never reached steady training;
 *  - completed otherwise.
 * The failure found is the one that ended the session (failure.session).
 *
 * Retry chains: a session that failed is followed by an automatic retry
 * when the next session sharing at least half of its nodes starts within
 * retry_window of its end. A chain is the failed session and its retries
 * while they keep failing in start-up; it succeeds at the first attempt
 * reaching steady training and fails when no retry follows (manual
 * takeover). A failed session with no automatic retry is a manual
 * recovery, successful when the next session sharing half of its nodes
 * reaches steady training. Retry interval: from the end of the failed
 * session to the next attempt's start; after an attempt that never reached
 * steady training, from that attempt's start (a fixed back-off counted
 * from submission, start-up included - reference 1.5: 11 min, IQR 10-11). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ledger/ledger_int.h"

static int64_t slack(const struct led_ctx *x)
{
    int64_t s = 2 * x->iv + 60000;
    return s > 5 * 60000 ? s : 5 * 60000;   /* detection can trail the end: a silent node takes minutes */
}

static int32_t killing_failure(const struct led_ctx *x, const struct gw_led_session *s)
{
    const struct gw_led_result *r = x->r;
    int32_t best = -1;
    int64_t best_d = INT64_MAX;
    for (size_t i = 0; i < r->n_failures; i++) {
        const struct gw_led_failure *f = &r->failures[i];
        int64_t t = f->t_detect != GW_LED_NO_TIME ? f->t_detect : f->t_first;
        if (t < s->t_end - x->c.fail_window_ms || t > s->t_end + slack(x) || t < s->t_start - slack(x)) continue;
        if (!led_is_member(s, f->node)) continue;
        int64_t d = t > s->t_end ? t - s->t_end : s->t_end - t;
        if (d < best_d) {
            best_d = d;
            best = (int32_t)i;
        }
    }
    return best;
}

static int app_abort(const struct led_ctx *x, const struct gw_led_session *s)
{
    const struct gw_led_input *in = x->in;
    for (size_t i = 0; i < in->n_alerts; i++) {
        const struct gw_alert *a = &in->alerts[i];
        if (strcmp(a->cls, "app") != 0 || a->active_at < s->t_end - slack(x) || a->active_at > s->t_end + slack(x))
            continue;
        if (!a->hostname[0]) return 1;   /* a job-level collective abort */
        int ni = led_node_index(x, a->hostname);
        if (ni >= 0 && led_is_member(s, (uint32_t)ni)) return 1;
    }
    return 0;
}

int led_outcomes(struct led_ctx *x, struct gw_error *err)
{
    (void)err;
    struct gw_led_result *r = x->r;
    for (size_t i = 0; i < r->n_sessions; i++) {
        struct gw_led_session *s = &r->sessions[i];
        int32_t f = killing_failure(x, s);
        if (!s->from_events) {
            int reached = s->t_steady != GW_LED_NO_TIME;
            if (s->t_end >= x->data_end - x->gap && s->t_end >= x->in->to - x->gap) s->outcome = GW_LED_RUNNING;
            else if (f >= 0 || app_abort(x, s)) s->outcome = reached ? GW_LED_FAILED : GW_LED_STARTUP_FAILED;
            else s->outcome = reached ? GW_LED_COMPLETED : GW_LED_STARTUP_FAILED;
        }
        if (f >= 0 && s->outcome != GW_LED_COMPLETED && s->outcome != GW_LED_RUNNING) {
            s->failure = f;
            struct gw_led_failure *fl = &r->failures[f];
            if (fl->session < 0) {
                fl->session = (int32_t)i;
                fl->t_session_end = s->t_end;
            }
        }
    }
    /* the next steady training after each failure's session */
    for (size_t k = 0; k < r->n_failures; k++) {
        struct gw_led_failure *fl = &r->failures[k];
        if (fl->session < 0) continue;
        for (size_t i = (size_t)fl->session + 1; i < r->n_sessions; i++)
            if (r->sessions[i].t_steady != GW_LED_NO_TIME && r->sessions[i].t_start >= fl->t_session_end) {
                fl->t_next_steady = r->sessions[i].t_steady;
                break;
            }
    }
    return GW_OK;
}

static int shares_half(const struct gw_led_session *a, const struct gw_led_session *b)
{
    uint32_t common = 0;
    for (uint32_t k = 0; k < a->n_nodes; k++) common += (uint32_t)led_is_member(b, a->nodes[k]);
    uint32_t m = a->n_nodes < b->n_nodes ? a->n_nodes : b->n_nodes;
    return m > 0 && 2 * common >= m;
}

/* The session after s that continues its job (shares half of its nodes). */
static int32_t next_of(const struct gw_led_result *r, size_t i)
{
    const struct gw_led_session *s = &r->sessions[i];
    for (size_t j = i + 1; j < r->n_sessions; j++) {
        const struct gw_led_session *n = &r->sessions[j];
        if (n->t_start < s->t_start + 60000) continue;   /* started together: another job */
        if (shares_half(s, n)) return (int32_t)j;
    }
    return -1;
}

/* Nodes left out of n after p failed: the node of the chain's failure
 * (every attempt that runs without it), then for automatic retries up to
 * three more members of p that were swapped out; at most 4. */
static void note_excluded(const struct gw_led_result *r, const struct gw_led_session *p, struct gw_led_session *n,
                          int automatic, int32_t failure)
{
    int k = 0;
    if (failure >= 0) {
        uint32_t fn = r->failures[failure].node;
        if (!led_is_member(n, fn)) n->excluded[k++] = (int32_t)fn;
    }
    if (!automatic) return;
    for (uint32_t i = 0; i < p->n_nodes && k < 4; i++)
        if (!led_is_member(n, p->nodes[i]) && (k == 0 || n->excluded[0] != (int32_t)p->nodes[i]))
            n->excluded[k++] = (int32_t)p->nodes[i];
}

static struct gw_led_chain *chain_add(struct gw_led_result *r, size_t *cap, const struct gw_led_session *head,
                                      struct gw_error *err)
{
    if (r->n_chains == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        struct gw_led_chain *p = realloc(r->chains, nc * sizeof *p);
        if (!p) {
            gw_error_set(err, GW_ENOMEM, "out of memory (chains)");
            return NULL;
        }
        r->chains = p;
        *cap = nc;
    }
    struct gw_led_chain *c = &r->chains[r->n_chains];
    memset(c, 0, sizeof *c);
    c->id = (uint32_t)r->n_chains++;
    c->failed_session = (int32_t)head->id;
    c->failure = head->failure;
    c->t_fail = head->t_end;
    c->t_recovered = GW_LED_NO_TIME;
    return c;
}

static void finish_chain(struct gw_led_chain *c)
{
    int64_t v[16];
    memcpy(v, c->intervals, c->n_intervals * sizeof *v);
    led_qsort(v, c->n_intervals, sizeof *v, led_cmp_i64);
    c->median_interval_ms = c->n_intervals ? v[(c->n_intervals - 1) / 2] : 0;
}

int led_chains(struct led_ctx *x, struct gw_error *err)
{
    struct gw_led_result *r = x->r;
    size_t cap = 0;
    int32_t cur = -1;   /* open automatic chain */
    for (size_t i = 0; i < r->n_sessions; i++) {
        struct gw_led_session *s = &r->sessions[i];
        if (s->outcome != GW_LED_FAILED && s->outcome != GW_LED_STARTUP_FAILED) continue;
        int in_chain = cur >= 0 && s->chain == cur;
        int32_t nx = next_of(r, i);
        struct gw_led_session *n = nx >= 0 ? &r->sessions[nx] : NULL;
        int reached = s->t_steady != GW_LED_NO_TIME;
        int64_t from = reached ? s->t_end : s->t_start;
        int retry = n && n->t_start - s->t_end <= x->c.retry_window_ms && n->t_start >= s->t_end - x->gap;
        struct gw_led_chain *c;
        if (in_chain) c = &r->chains[cur];
        else if (!(c = chain_add(r, &cap, s, err))) return err->code ? err->code : GW_ENOMEM;
        s->chain = (int32_t)c->id;
        if (n) note_excluded(r, s, n, retry, c->failure);
        if (!retry) {
            if (c->attempts == 0 && n && n->t_steady != GW_LED_NO_TIME) {   /* manual recovery */
                c->success = 1;
                c->t_recovered = n->t_steady;
            }
            finish_chain(c);
            cur = -1;
            continue;
        }
        c->automatic = 1;
        c->attempts++;
        n->chain = (int32_t)c->id;
        n->attempt = c->attempts;
        if (c->n_intervals < 16) c->intervals[c->n_intervals++] = n->t_start - from;
        if (n->t_steady != GW_LED_NO_TIME) {
            c->success = 1;
            c->t_recovered = n->t_steady;
            finish_chain(c);
            cur = -1;
        } else {
            cur = (int32_t)c->id;
        }
    }
    return GW_OK;
}
