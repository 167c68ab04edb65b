/* src/ledger/json_out.c - the ledger's API bodies (the "data" member of a
 * Prometheus-style answer; docs/ledger.md has examples). Times are RFC
 * 3339 strings, null when absent; durations in seconds. Errors of the
 * gw_buf are sticky: the functions return the first one. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gpuwatch/json.h"
#include "ledger/ledger_int.h"

/* Appends remember the first error (a gw_buf failure leaves len as it was,
 * so later smaller appends could otherwise succeed around a hole). */
struct jo {
    struct gw_buf *b;
    int rc;
};
#define P(...) jnote(b, gw_buf_printf(b->b, __VA_ARGS__))

static void jnote(struct jo *o, int rc)
{
    if (rc != GW_OK && o->rc == GW_OK) o->rc = rc;
}
static void jputc(struct jo *o, char c) { jnote(o, gw_buf_putc(o->b, (uint8_t)c)); }
static void jcstr(struct jo *o, const char *s) { jnote(o, gw_json_cstr(o->b, s)); }
static void jtime(struct jo *o, int64_t t) { jnote(o, gw_json_time(o->b, t)); }
static void jnum(struct jo *o, double v) { jnote(o, gw_json_num(o->b, v)); }

static void key(struct jo *b, const char *k, int first)
{
    if (!first) jputc(b, ',');
    jcstr(b, k);
    jputc(b, ':');
}

static void time_or_null(struct jo *b, const char *k, int64_t t)
{
    key(b, k, 0);
    if (t == GW_LED_NO_TIME) P("null");
    else jtime(b, t);
}

static void str_kv(struct jo *b, const char *k, const char *v, int first)
{
    key(b, k, first);
    jcstr(b, v);
}

static void num_kv(struct jo *b, const char *k, double v)
{
    key(b, k, 0);
    jnum(b, v);
}

static void failure_json(struct jo *b, const struct gw_led_result *r, const struct gw_led_failure *f)
{
    P("{\"id\":%u", f->id);
    str_kv(b, "node", r->nodes[f->node], 0);
    key(b, "gpu", 0);
    if (f->gpu >= 0) P("%d", f->gpu);
    else P("null");
    str_kv(b, "class", f->cls, 0);
    key(b, "xid", 0);
    if (f->xid) P("%u", f->xid);
    else P("null");
    str_kv(b, "alertname", f->alertname, 0);
    str_kv(b, "detector", f->detector, 0);
    str_kv(b, "action", f->action, 0);
    str_kv(b, "escalation", f->escalation, 0);
    P(",\"repeat\":%u", f->repeat);
    time_or_null(b, "first", f->t_first);
    time_or_null(b, "detected", f->t_detect);
    time_or_null(b, "xid_at", f->t_xid);
    time_or_null(b, "session_end", f->t_session_end);
    time_or_null(b, "next_steady", f->t_next_steady);
    key(b, "session", 0);
    if (f->session >= 0) P("%d", f->session);
    else P("null");
    str_kv(b, "evidence", f->evidence, 0);
    P(",\"alert_ids\":[");
    for (uint32_t i = 0; i < f->n_alert_ids; i++) P("%s%llu", i ? "," : "", (unsigned long long)f->alert_ids[i]);
    P("]}");
}

static void session_json(struct jo *b, const struct gw_led_result *r, const struct gw_led_session *s)
{
    P("{\"id\":%u", s->id);
    str_kv(b, "scheduler_id", s->ext_id, 0);
    str_kv(b, "source", s->from_events ? "scheduler" : "inferred", 0);
    time_or_null(b, "start", s->t_start);
    time_or_null(b, "steady", s->t_steady);
    time_or_null(b, "end", s->t_end);
    str_kv(b, "outcome", gw_led_outcome_name(s->outcome), 0);
    key(b, "chain", 0);
    if (s->chain >= 0) P("%d", s->chain);
    else P("null");
    P(",\"attempt\":%u,\"n_nodes\":%u,\"nodes\":[", s->attempt, s->n_nodes);
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        if (i) jputc(b, ',');
        jcstr(b, r->nodes[s->nodes[i]]);
    }
    P("],\"excluded\":[");
    for (int i = 0, n = 0; i < 4; i++)
        if (s->excluded[i] >= 0) {
            if (n++) jputc(b, ',');
            jcstr(b, r->nodes[s->excluded[i]]);
        }
    P("],\"failure\":");
    if (s->failure >= 0) failure_json(b, r, &r->failures[s->failure]);
    else P("null");
    P("}");
}

static void chain_json(struct jo *b, const struct gw_led_chain *c)
{
    P("{\"id\":%u,\"failed_session\":%d,\"failure\":", c->id, c->failed_session);
    if (c->failure >= 0) P("%d", c->failure);
    else P("null");
    P(",\"automatic\":%s,\"attempts\":%u,\"success\":%s", c->automatic ? "true" : "false", c->attempts,
      c->success ? "true" : "false");
    time_or_null(b, "failed_at", c->t_fail);
    time_or_null(b, "recovered_at", c->t_recovered);
    P(",\"intervals_seconds\":[");
    for (uint32_t i = 0; i < c->n_intervals; i++) P("%s%.0f", i ? "," : "", (double)c->intervals[i] / 1000.0);
    P("]}");
}

static void stats_json(struct jo *b, const struct gw_led_stats *st)
{
    P("{\"sessions\":%u,\"completed\":%u,\"failed\":%u,\"startup_failed\":%u,\"running\":%u", st->sessions,
      st->completed, st->failed, st->startup_failed, st->running);
    P(",\"chains_automatic\":%u,\"chains_automatic_ok\":%u,\"chains_manual\":%u,\"chains_manual_ok\":%u",
      st->chains_auto, st->chains_auto_ok, st->chains_manual, st->chains_manual_ok);
    num_kv(b, "chain_success_automatic", st->chain_success_auto);
    num_kv(b, "chain_success_manual", st->chain_success_manual);
    num_kv(b, "retry_interval_median_minutes", st->retry_interval_med_min);
    num_kv(b, "retry_interval_p25_minutes", st->retry_interval_p25_min);
    num_kv(b, "retry_interval_p75_minutes", st->retry_interval_p75_min);
    P(",\"attempts_automatic\":%u,\"failures\":%u,\"failing_nodes\":%u", st->attempts_auto, st->failures,
      st->hw_nodes);
    num_kv(b, "fleet_mtbf_hours", st->fleet_mtbf_h);
    num_kv(b, "top_k_share", st->top_k_share);
    num_kv(b, "gini", st->gini);
    num_kv(b, "gpu_hours_total", st->gpu_hours_total);
    num_kv(b, "gpu_hours_train", st->gpu_hours_train);
    num_kv(b, "gpu_hours_lost", st->gpu_hours_lost);
    num_kv(b, "goodput", st->goodput);
    P(",\"lost_by_cause\":[");
    for (uint32_t i = 0; i < st->n_causes; i++) {
        P("%s{", i ? "," : "");
        str_kv(b, "class", st->causes[i].cls, 1);
        P(",\"failures\":%u", st->causes[i].failures);
        num_kv(b, "gpu_hours_lost", st->causes[i].lost_gpu_hours);
        P("}");
    }
    P("]}");
}

static void range_json(struct jo *b, const struct gw_led_result *r)
{
    P("{");
    key(b, "from", 1);
    jtime(b, r->from);
    time_or_null(b, "to", r->to);
    time_or_null(b, "now", r->now);
}

static void gw_led_sessions_json_(struct jo *b, const struct gw_led_result *r)
{
    range_json(b, r);
    P(",\"sessions\":[");
    for (size_t i = 0; i < r->n_sessions; i++) {
        if (i) jputc(b, ',');
        session_json(b, r, &r->sessions[i]);
    }
    P("],\"chains\":[");
    for (size_t i = 0; i < r->n_chains; i++) {
        if (i) jputc(b, ',');
        chain_json(b, &r->chains[i]);
    }
    P("],\"stats\":");
    stats_json(b, &r->stats);
    P("}");
}

static void node_json(struct jo *b, const struct gw_led_result *r, const struct gw_led_node *n)
{
    P("{");
    str_kv(b, "node", r->nodes[n->node], 1);
    P(",\"rank\":%u", n->rank);
    num_kv(b, "score", n->score);
    P(",\"failures\":%u,\"repeats\":%u,\"exclusions\":%u", n->failures, n->repeats, n->exclusions);
    num_kv(b, "hours_observed", n->hours_observed);
    num_kv(b, "mtbf_hours", n->mtbf_h);
    P(",\"lemon\":%s,\"excluded\":%s}", n->lemon ? "true" : "false", n->excluded ? "true" : "false");
}

static void gw_led_ledger_json_(struct jo *b, const struct gw_led_result *r)
{
    range_json(b, r);
    P(",\"nodes\":[");
    for (size_t i = 0; i < r->n_ledger; i++) {
        if (i) jputc(b, ',');
        node_json(b, r, &r->ledger[i]);
    }
    P("],\"failures\":[");
    for (size_t i = 0; i < r->n_failures; i++) {
        if (i) jputc(b, ',');
        failure_json(b, r, &r->failures[i]);
    }
    P("],\"stats\":");
    stats_json(b, &r->stats);
    P("}");
}

static void gw_led_exclusions_json_(struct jo *b, const struct gw_led_result *r)
{
    range_json(b, r);
    P(",\"hosts\":[");
    for (size_t i = 0; i < r->n_exclusions; i++) {
        if (i) jputc(b, ',');
        jcstr(b, r->nodes[r->exclusions[i].node]);
    }
    P("],\"exclusions\":[");
    for (size_t i = 0; i < r->n_exclusions; i++) {
        const struct gw_led_exclusion *e = &r->exclusions[i];
        P("%s{", i ? "," : "");
        str_kv(b, "node", r->nodes[e->node], 1);
        str_kv(b, "source", gw_led_excl_source_name(e->source), 0);
        time_or_null(b, "since", e->since);
        time_or_null(b, "until", e->until);
        str_kv(b, "action", e->action, 0);
        str_kv(b, "reason", e->reason, 0);
        P(",\"failure\":");
        if (e->failure >= 0) failure_json(b, r, &r->failures[e->failure]);
        else P("null");
        P(",\"alert_ids\":[");
        for (uint32_t k = 0; k < e->n_alert_ids; k++) P("%s%llu", k ? "," : "", (unsigned long long)e->alert_ids[k]);
        P("]}");
    }
    P("],\"ranking\":[");
    for (size_t i = 0; i < r->n_ledger && i < 10; i++) {
        if (i) jputc(b, ',');
        node_json(b, r, &r->ledger[i]);
    }
    P("],\"top_k\":%u", r->cfg.top_k);
    num_kv(b, "top_k_share", r->stats.top_k_share);
    P("}");
}

static void gw_led_exclusions_hosts_(struct jo *b, const struct gw_led_result *r, int comma)
{
    for (size_t i = 0; i < r->n_exclusions; i++) {
        if (comma && i) jputc(b, ',');
        P("%s", r->nodes[r->exclusions[i].node]);
        if (!comma) jputc(b, '\n');
    }
    if (comma && r->n_exclusions) jputc(b, '\n');
}

int gw_led_sessions_json(struct gw_buf *b, const struct gw_led_result *r)
{
    struct jo o = {b, GW_OK};
    gw_led_sessions_json_(&o, r);
    return o.rc;
}

int gw_led_ledger_json(struct gw_buf *b, const struct gw_led_result *r)
{
    struct jo o = {b, GW_OK};
    gw_led_ledger_json_(&o, r);
    return o.rc;
}

int gw_led_exclusions_json(struct gw_buf *b, const struct gw_led_result *r)
{
    struct jo o = {b, GW_OK};
    gw_led_exclusions_json_(&o, r);
    return o.rc;
}

int gw_led_exclusions_hosts(struct gw_buf *b, const struct gw_led_result *r, int comma)
{
    struct jo o = {b, GW_OK};
    gw_led_exclusions_hosts_(&o, r, comma);
    return o.rc;
}
