/* test_ledger_sessions.c - the ledger (D8) on crafted fleet curves:
 * sessions from node activity (start-up, steady training, an abort, a
 * restart on a changed node set with a spare swapped in, failed start-ups,
 * two jobs starting together, a wedged node), retry chains and their
 * intervals, manual recovery, failures from alerts and the escalation of
 * repeats, the ranking, exclusions and their clearing, the JSON bodies, and
 * independence of input order. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/ledger.h"

#define T0 1764000000000LL
#define IV 30000LL
#define MIN 60000LL
#define HOUR (60 * MIN)
#define DAY (24 * HOUR)
#define MAXN 16

struct fx {
    char *names[MAXN];
    uint32_t n_nodes;
    struct gw_led_act *act;
    size_t n_act, cap_act;
    struct gw_alert alerts[64];
    size_t n_alerts;
    struct gw_led_event events[8];
    size_t n_events;
};

static struct fx *fx_new(uint32_t nodes)
{
    struct fx *f = calloc(1, sizeof *f);
    f->n_nodes = nodes;
    for (uint32_t i = 0; i < nodes; i++) {
        f->names[i] = malloc(16);
        snprintf(f->names[i], 16, "gpu%03u", i + 1);
    }
    return f;
}

static void fx_free(struct fx *f)
{
    for (uint32_t i = 0; i < f->n_nodes; i++) free(f->names[i]);
    free(f->act);
    free(f);
}

/* node at level lv over [t0, t1) every IV */
static void level(struct fx *f, uint32_t node, int64_t t0, int64_t t1, int lv)
{
    for (int64_t t = t0; t < t1; t += IV) {
        if (f->n_act == f->cap_act) {
            f->cap_act = f->cap_act ? f->cap_act * 2 : 4096;
            f->act = realloc(f->act, f->cap_act * sizeof *f->act);
        }
        f->act[f->n_act++] = (struct gw_led_act){.t = t, .node = node, .level = (uint8_t)lv};
    }
}

/* A job on nodes[] (mask): idle before, start-up for su, training until end, idle after until `idle_to`. */
static void job(struct fx *f, uint32_t mask, int64_t start, int64_t su, int64_t end)
{
    for (uint32_t i = 0; i < f->n_nodes; i++) {
        if (!(mask >> i & 1)) continue;
        level(f, i, start, start + su < end ? start + su : end, GW_LED_ALLOC);
        if (start + su < end) level(f, i, start + su, end, GW_LED_TRAIN);
    }
}

/* idle samples for every node over [t0, t1) except where a job already put one */
static void idle_fill(struct fx *f, int64_t t0, int64_t t1)
{
    size_t n0 = f->n_act;
    uint8_t *busy = calloc((size_t)((t1 - t0) / IV + 1) * f->n_nodes, 1);
    for (size_t i = 0; i < n0; i++)
        if (f->act[i].t >= t0 && f->act[i].t < t1) busy[(size_t)((f->act[i].t - t0) / IV) * f->n_nodes + f->act[i].node] = 1;
    for (int64_t t = t0; t < t1; t += IV)
        for (uint32_t n = 0; n < f->n_nodes; n++)
            if (!busy[(size_t)((t - t0) / IV) * f->n_nodes + n]) level(f, n, t, t + IV, GW_LED_IDLE);
    free(busy);
}

static struct gw_alert *alert(struct fx *f, const char *name, enum gw_severity sev, uint32_t node, int gpu,
                              const char *cls, const char *action, uint32_t xid, int64_t t)
{
    struct gw_alert *a = &f->alerts[f->n_alerts];
    memset(a, 0, sizeof *a);
    a->id = ++f->n_alerts;
    snprintf(a->alertname, sizeof a->alertname, "%s", name);
    a->severity = sev;
    snprintf(a->hostname, sizeof a->hostname, "%s", f->names[node]);
    a->gpu = gpu;
    snprintf(a->detector, sizeof a->detector, "D1");
    snprintf(a->cls, sizeof a->cls, "%s", cls);
    snprintf(a->action, sizeof a->action, "%s", action);
    if (xid) {
        snprintf(a->extra_name, sizeof a->extra_name, "xid");
        snprintf(a->extra_value, sizeof a->extra_value, "%u", xid);
    }
    snprintf(a->evidence, sizeof a->evidence, "evidence of %s", name);
    a->state = GW_ALERT_RESOLVED;
    a->active_at = a->fired_at = a->last_raised = t;
    a->resolved_at = t + 30 * MIN;
    return a;
}

static struct gw_led_result *build_at(struct fx *f, int64_t to, int64_t now)
{
    struct gw_led_input in = {.nodes = f->names, .n_nodes = f->n_nodes, .act = f->act, .n_act = f->n_act,
                              .alerts = f->alerts, .n_alerts = f->n_alerts, .events = f->events,
                              .n_events = f->n_events, .from = T0, .to = to, .now = now};
    struct gw_led_result *r = NULL;
    struct gw_error err = {0};
    assert_int_equal(gw_led_build(&in, NULL, &r, &err), GW_OK);
    return r;
}

static struct gw_led_result *build(struct fx *f, int64_t to)
{
    return build_at(f, to, to);
}

#define ALL(n) ((1u << (n)) - 1)

/* ------------------------------------------------------------------ tests */

static void test_startup_steady_completed(void **state)
{
    (void)state;
    struct fx *f = fx_new(6);
    job(f, ALL(6), T0 + 10 * MIN, 7 * MIN, T0 + 3 * HOUR);
    idle_fill(f, T0, T0 + 4 * HOUR);
    struct gw_led_result *r = build(f, T0 + 4 * HOUR);
    assert_int_equal(r->n_sessions, 1);
    const struct gw_led_session *s = &r->sessions[0];
    assert_int_equal(s->n_nodes, 6);
    assert_true(s->t_start == T0 + 10 * MIN);
    assert_true(s->t_steady == T0 + 17 * MIN);
    assert_true(s->t_end == T0 + 3 * HOUR);
    assert_int_equal(s->outcome, GW_LED_COMPLETED);
    assert_int_equal(r->n_chains, 0);
    assert_int_equal(r->n_exclusions, 0);
    /* 4 h of data on 6 nodes */
    assert_true(fabs(r->stats.gpu_hours_total - (3 * HOUR - 10 * MIN) / 3600000.0 * 6 * 8) < 1e-6);
    gw_led_result_free(r);
    fx_free(f);
}

/* An XID 79 aborts the job; it is retried 11 min later without the failing
 * node (a spare takes its place) and trains again. */
static void test_abort_retry_with_spare(void **state)
{
    (void)state;
    struct fx *f = fx_new(6);   /* gpu006 is the spare */
    int64_t fail = T0 + 2 * HOUR;
    job(f, ALL(5), T0 + 10 * MIN, 6 * MIN, fail + MIN);
    alert(f, "GpuXidError", GW_SEV_CRITICAL, 2, 3, "fell_off_bus", "reboot_node", 79, fail);
    job(f, ALL(6) & ~(1u << 2), fail + 12 * MIN, 6 * MIN, fail + 5 * HOUR);
    idle_fill(f, T0, fail + 6 * HOUR);
    struct gw_led_result *r = build(f, fail + 6 * HOUR);
    assert_int_equal(r->n_sessions, 2);
    assert_int_equal(r->sessions[0].outcome, GW_LED_FAILED);
    assert_int_equal(r->sessions[1].outcome, GW_LED_COMPLETED);
    assert_int_equal(r->n_failures, 1);
    const struct gw_led_failure *fl = &r->failures[0];
    assert_int_equal(fl->xid, 79);
    assert_string_equal(r->nodes[fl->node], "gpu003");
    assert_int_equal(fl->session, 0);
    assert_int_equal(r->sessions[0].failure, 0);
    assert_true(fl->t_next_steady == fail + 18 * MIN);
    assert_string_equal(fl->action, "reboot_node");
    /* the chain: one automatic attempt, successful, 11 min after the end */
    assert_int_equal(r->n_chains, 1);
    assert_true(r->chains[0].automatic);
    assert_int_equal(r->chains[0].attempts, 1);
    assert_true(r->chains[0].success);
    assert_true(r->chains[0].intervals[0] == 11 * MIN);
    assert_int_equal(r->sessions[1].attempt, 1);
    assert_int_equal(r->sessions[1].excluded[0], 2);
    assert_true(fabs(r->stats.retry_interval_med_min - 11.0) < 1e-9);
    assert_true(r->stats.chain_success_auto == 1.0);
    /* the failed node has not run since: excluded, with its evidence */
    assert_int_equal(r->n_exclusions, 1);
    assert_string_equal(r->nodes[r->exclusions[0].node], "gpu003");
    assert_int_equal(r->exclusions[0].source, GW_LEX_FAILURE);
    assert_int_equal(r->exclusions[0].failure, 0);
    assert_int_equal(r->exclusions[0].n_alert_ids, 1);
    assert_int_equal(r->exclusions[0].alert_ids[0], 1);
    gw_led_result_free(r);
    fx_free(f);
}

/* Retries that fail in start-up, then one that trains: one chain of 3
 * attempts; intervals from the failed end, then start to start. */
static void test_startup_failures_chain(void **state)
{
    (void)state;
    struct fx *f = fx_new(5);
    int64_t fail = T0 + 2 * HOUR;
    job(f, ALL(5), T0 + 5 * MIN, 5 * MIN, fail);
    alert(f, "GpuXidError", GW_SEV_CRITICAL, 1, 0, "nvlink", "reset_gpu", 149, fail - MIN);
    int64_t a1 = fail + 11 * MIN, a2 = a1 + 10 * MIN, a3 = a2 + 12 * MIN;
    job(f, ALL(5), a1, 20 * MIN, a1 + 4 * MIN);   /* start-up only */
    job(f, ALL(5), a2, 20 * MIN, a2 + 6 * MIN);
    job(f, ALL(5), a3, 6 * MIN, a3 + 3 * HOUR);
    idle_fill(f, T0, a3 + 4 * HOUR);
    struct gw_led_result *r = build(f, a3 + 4 * HOUR);
    assert_int_equal(r->n_sessions, 4);
    assert_int_equal(r->sessions[1].outcome, GW_LED_STARTUP_FAILED);
    assert_int_equal(r->sessions[2].outcome, GW_LED_STARTUP_FAILED);
    assert_int_equal(r->n_chains, 1);
    const struct gw_led_chain *c = &r->chains[0];
    assert_int_equal(c->attempts, 3);
    assert_true(c->success);
    assert_int_equal(c->n_intervals, 3);
    assert_true(c->intervals[0] == 11 * MIN);
    assert_true(c->intervals[1] == 10 * MIN);
    assert_true(c->intervals[2] == 12 * MIN);
    assert_true(c->median_interval_ms == 11 * MIN);
    assert_int_equal(r->sessions[3].attempt, 3);
    assert_true(c->t_recovered == a3 + 6 * MIN);
    /* the restart cost counts as lost */
    assert_true(r->stats.gpu_hours_lost > 0);
    gw_led_result_free(r);
    fx_free(f);
}

/* No retry within the window: manual recovery; a chain whose retries keep
 * failing and then stop fails. */
static void test_manual_and_failed_chain(void **state)
{
    (void)state;
    struct fx *f = fx_new(4);
    int64_t f1 = T0 + 3 * HOUR;
    job(f, ALL(4), T0, 5 * MIN, f1);
    alert(f, "GpuMemoryUncorrectable", GW_SEV_CRITICAL, 0, 2, "memory", "reset_gpu", 0, f1 - 2 * MIN);
    int64_t s2 = f1 + 2 * HOUR;   /* by hand, later */
    int64_t f2 = s2 + 4 * HOUR;
    job(f, ALL(4), s2, 5 * MIN, f2);
    alert(f, "GpuXidError", GW_SEV_CRITICAL, 3, 1, "gsp", "reset_gpu", 119, f2);
    int64_t a1 = f2 + 11 * MIN;
    job(f, ALL(4), a1, 20 * MIN, a1 + 3 * MIN);   /* one retry, fails in start-up, then nothing */
    idle_fill(f, T0, a1 + 5 * HOUR);
    struct gw_led_result *r = build(f, a1 + 5 * HOUR);
    assert_int_equal(r->n_sessions, 3);
    assert_int_equal(r->n_chains, 2);
    assert_false(r->chains[0].automatic);
    assert_true(r->chains[0].success);    /* the manual restart trained */
    assert_true(r->chains[1].automatic);
    assert_int_equal(r->chains[1].attempts, 1);
    assert_false(r->chains[1].success);
    assert_true(r->stats.chain_success_auto == 0.0);
    assert_true(r->stats.chain_success_manual == 1.0);
    gw_led_result_free(r);
    fx_free(f);
}

/* Two jobs that start together on disjoint nodes and end 2 h apart; a node
 * of the first job that keeps its memory (wedged) after the job ends. */
static void test_two_jobs_and_wedged_node(void **state)
{
    (void)state;
    struct fx *f = fx_new(10);
    job(f, 0x1f, T0 + 10 * MIN, 5 * MIN, T0 + 3 * HOUR);
    job(f, 0x3e0, T0 + 11 * MIN, 5 * MIN, T0 + 5 * HOUR);
    level(f, 4, T0 + 3 * HOUR, T0 + 7 * HOUR, GW_LED_ALLOC);   /* gpu005 wedged */
    job(f, 0x0f, T0 + 6 * HOUR, 5 * MIN, T0 + 9 * HOUR);        /* the next job on 4 of them */
    idle_fill(f, T0, T0 + 10 * HOUR);
    struct gw_led_result *r = build(f, T0 + 10 * HOUR);
    assert_int_equal(r->n_sessions, 3);
    assert_int_equal(r->sessions[0].n_nodes + r->sessions[1].n_nodes, 10);
    for (int i = 0; i < 2; i++) {
        const struct gw_led_session *s = &r->sessions[i];
        assert_int_equal(s->n_nodes, 5);
        assert_true(s->t_end == (s->nodes[0] == 0 ? T0 + 3 * HOUR : T0 + 5 * HOUR));
    }
    assert_int_equal(r->sessions[2].n_nodes, 4);
    assert_true(r->sessions[2].t_start == T0 + 6 * HOUR);
    gw_led_result_free(r);
    fx_free(f);
}

/* The same XID on the same GPU twice within 30 days: replace the GPU; a
 * third failure of the node: drain it; the ranking puts it first; a
 * node_returned event clears the exclusion. */
static void test_escalation_ranking_return(void **state)
{
    (void)state;
    struct fx *f = fx_new(8);
    level(f, 0, T0, T0 + IV, GW_LED_IDLE);
    alert(f, "GpuXidError", GW_SEV_CRITICAL, 5, 3, "fell_off_bus", "reboot_node", 79, T0 + 1 * DAY);
    alert(f, "GpuXidError", GW_SEV_CRITICAL, 5, 3, "fell_off_bus", "reboot_node", 79, T0 + 11 * DAY);
    alert(f, "GpuNvlinkErrors", GW_SEV_WARNING, 5, 6, "nvlink", "reset_gpu", 0, T0 + 20 * DAY);
    alert(f, "GpuXidError", GW_SEV_CRITICAL, 5, 6, "nvlink", "reset_gpu", 149, T0 + 20 * DAY + 5 * MIN);
    alert(f, "GpuXidError", GW_SEV_CRITICAL, 1, 0, "memory", "reset_gpu", 48, T0 + 2 * DAY);
    /* noise that is not hardware: application XIDs, exporter outages, warnings alone */
    alert(f, "GpuXidError", GW_SEV_INFO, 2, 0, "app", "restart_app", 43, T0 + 3 * DAY);
    alert(f, "DcgmExporterDown", GW_SEV_WARNING, 2, -1, "telemetry", "none", 0, T0 + 4 * DAY);
    alert(f, "GpuSbeRising", GW_SEV_WARNING, 3, 1, "memory", "none", 0, T0 + 5 * DAY);
    struct gw_led_result *r = build(f, T0 + 21 * DAY);
    assert_int_equal(r->n_failures, 4);
    const struct gw_led_failure *a = &r->failures[0], *b = &r->failures[2], *c = &r->failures[3];
    assert_int_equal(a->repeat, 1);
    assert_string_equal(a->action, "reboot_node");
    assert_int_equal(b->xid, 79);
    assert_int_equal(b->repeat, 2);
    assert_string_equal(b->action, "replace_gpu");
    assert_non_null(strstr(b->escalation, "XID 79 again on GPU 3"));
    assert_string_equal(c->action, "drain_node");          /* third on the node */
    assert_true(c->t_first == T0 + 20 * DAY);              /* the warning leads the incident */
    assert_true(c->t_detect == T0 + 20 * DAY + 5 * MIN);
    assert_int_equal(c->xid, 149);
    /* ranking: gpu006 first, a lemon */
    assert_string_equal(r->nodes[r->ledger[0].node], "gpu006");
    assert_int_equal(r->ledger[0].failures, 3);
    assert_int_equal(r->ledger[0].repeats, 1);
    assert_true(r->ledger[0].lemon);
    assert_string_equal(r->nodes[r->ledger[1].node], "gpu002");
    assert_false(r->ledger[1].lemon);
    /* excluded for the repeat (until returned by hand); gpu002 is out of probation */
    assert_int_equal(r->n_exclusions, 1);
    assert_int_equal(r->exclusions[0].source, GW_LEX_REPEAT);
    assert_string_equal(r->exclusions[0].action, "replace_gpu");
    struct gw_buf hosts;
    gw_buf_init(&hosts, 0);
    assert_int_equal(gw_led_exclusions_hosts(&hosts, r, 1), GW_OK);
    assert_int_equal(hosts.len, 7);
    assert_memory_equal(hosts.data, "gpu006\n", 7);
    gw_buf_free(&hosts);
    gw_led_result_free(r);
    /* returned by hand after the GPU was replaced */
    struct gw_led_event *e = &f->events[f->n_events++];
    memset(e, 0, sizeof *e);
    e->type = GW_LEV_NODE_RETURNED;
    e->t = T0 + 20 * DAY + 3 * HOUR;
    snprintf(e->node, sizeof e->node, "gpu006");
    r = build(f, T0 + 21 * DAY);
    assert_int_equal(r->n_exclusions, 0);
    gw_led_result_free(r);
    fx_free(f);
}

/* A failure on a node: excluded until it trains again, or probation ends. */
static void test_probation(void **state)
{
    (void)state;
    struct fx *f = fx_new(4);
    job(f, ALL(4), T0, 5 * MIN, T0 + 2 * HOUR);
    alert(f, "GpuXidError", GW_SEV_CRITICAL, 1, 0, "gsp", "reset_gpu", 119, T0 + 2 * HOUR);
    idle_fill(f, T0, T0 + 3 * HOUR);
    struct gw_led_result *r = build(f, T0 + 3 * HOUR);
    assert_int_equal(r->n_exclusions, 1);
    assert_true(r->exclusions[0].until == T0 + 2 * HOUR + DAY);
    gw_led_result_free(r);
    r = build_at(f, T0 + 3 * HOUR, T0 + 2 * DAY);   /* probation over */
    assert_int_equal(r->n_exclusions, 0);
    gw_led_result_free(r);
    job(f, ALL(4), T0 + 3 * HOUR, 5 * MIN, T0 + 5 * HOUR);   /* it trains again */
    idle_fill(f, T0 + 3 * HOUR, T0 + 6 * HOUR);
    r = build(f, T0 + 6 * HOUR);
    assert_int_equal(r->n_exclusions, 0);
    gw_led_result_free(r);
    fx_free(f);
}

static void shuffle(void *base, size_t n, size_t size, unsigned seed)
{
    char tmp[sizeof(struct gw_alert)];
    char *p = base;
    for (size_t i = n; i > 1; i--) {
        seed = seed * 1103515245u + 12345u;
        size_t j = (seed >> 8) % i;
        memcpy(tmp, p + (i - 1) * size, size);
        memcpy(p + (i - 1) * size, p + j * size, size);
        memcpy(p + j * size, tmp, size);
    }
}

/* The same inputs in any order: the same JSON. */
static void test_order_independent(void **state)
{
    (void)state;
    struct fx *f = fx_new(6);
    int64_t fail = T0 + 2 * HOUR;
    job(f, ALL(5), T0 + 10 * MIN, 6 * MIN, fail + MIN);
    alert(f, "GpuXidError", GW_SEV_CRITICAL, 2, 3, "fell_off_bus", "reboot_node", 79, fail);
    alert(f, "GpuXidError", GW_SEV_CRITICAL, 4, 3, "memory", "reset_gpu", 48, fail + 3 * HOUR);
    job(f, ALL(6) & ~(1u << 2), fail + 12 * MIN, 6 * MIN, fail + 5 * HOUR);
    idle_fill(f, T0, fail + 6 * HOUR);
    struct gw_buf a, b;
    gw_buf_init(&a, 0);
    gw_buf_init(&b, 0);
    struct gw_led_result *r = build(f, fail + 6 * HOUR);
    assert_int_equal(gw_led_sessions_json(&a, r), GW_OK);
    assert_int_equal(gw_led_exclusions_json(&a, r), GW_OK);
    assert_int_equal(gw_led_ledger_json(&a, r), GW_OK);
    gw_led_result_free(r);
    shuffle(f->act, f->n_act, sizeof *f->act, 7);
    shuffle(f->alerts, f->n_alerts, sizeof *f->alerts, 9);
    r = build(f, fail + 6 * HOUR);
    assert_int_equal(gw_led_sessions_json(&b, r), GW_OK);
    assert_int_equal(gw_led_exclusions_json(&b, r), GW_OK);
    assert_int_equal(gw_led_ledger_json(&b, r), GW_OK);
    gw_led_result_free(r);
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.data, b.data, a.len);
    assert_non_null(strstr((const char *)a.data, "\"outcome\":\"failed\""));
    gw_buf_free(&a);
    gw_buf_free(&b);
    fx_free(f);
}

/* A scrape gap of two intervals does not split a session; a silent node
 * (no samples) is not idle; a single-node run is no session. */
static void test_gaps_and_min_nodes(void **state)
{
    (void)state;
    struct fx *f = fx_new(4);
    job(f, ALL(3), T0, 5 * MIN, T0 + HOUR);
    job(f, ALL(3), T0 + HOUR + 2 * IV, 0, T0 + 2 * HOUR);   /* two missed scrapes on all */
    job(f, 1u << 3, T0 + 3 * HOUR, 0, T0 + 4 * HOUR);        /* one node alone */
    struct gw_led_result *r = build(f, T0 + 5 * HOUR);
    assert_int_equal(r->n_sessions, 1);
    assert_true(r->sessions[0].t_end == T0 + 2 * HOUR);
    assert_int_equal(r->sessions[0].outcome, GW_LED_COMPLETED);
    gw_led_result_free(r);
    fx_free(f);
}

/* Running at the end of the data; empty input. */
static void test_running_and_empty(void **state)
{
    (void)state;
    struct fx *f = fx_new(3);
    job(f, ALL(3), T0, 5 * MIN, T0 + 2 * HOUR);
    struct gw_led_result *r = build(f, T0 + 2 * HOUR);
    assert_int_equal(r->n_sessions, 1);
    assert_int_equal(r->sessions[0].outcome, GW_LED_RUNNING);
    gw_led_result_free(r);
    fx_free(f);
    f = fx_new(0);
    r = build(f, T0);
    assert_int_equal(r->n_sessions, 0);
    assert_int_equal(r->n_ledger, 0);
    struct gw_buf b;
    gw_buf_init(&b, 0);
    assert_int_equal(gw_led_sessions_json(&b, r), GW_OK);
    assert_int_equal(gw_led_exclusions_json(&b, r), GW_OK);
    gw_buf_free(&b);
    gw_led_result_free(r);
    fx_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_startup_steady_completed),
        cmocka_unit_test(test_abort_retry_with_spare),
        cmocka_unit_test(test_startup_failures_chain),
        cmocka_unit_test(test_manual_and_failed_chain),
        cmocka_unit_test(test_two_jobs_and_wedged_node),
        cmocka_unit_test(test_escalation_ranking_return),
        cmocka_unit_test(test_probation),
        cmocka_unit_test(test_order_independent),
        cmocka_unit_test(test_gaps_and_min_nodes),
        cmocka_unit_test(test_running_and_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
