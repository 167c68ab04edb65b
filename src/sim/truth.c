/* truth.c - writes the simulator's ground truth: one JSON object per line,
 * every failure (sorted by t_fault), then every session (by t_start), every
 * checkpoint (by t_start) and every bait (by t_start). Nodes appear as
 * hostnames, times as Unix milliseconds or null when absent; ids are the
 * indexes in the timeline's arrays. Keys come in a fixed order, so a given
 * config always produces the same bytes.
 *
 * Line formats, with a worked example each:
 *   {"type":"failure","id":3,"class":"nvlink","node":"gpu071","gpu":5,"xid":149,
 *    "action":"reset_gpu","precursor":"nvlink_crc","t_precursor_start":1764000000000,
 *    "t_fault":1764001800000,"t_xid_visible":1764001830000,"t_recovered":1764003600000,
 *    "session":12,"effect":"none","severity":0.71,"n_nodes":1}
 *     gpu null for node-level events; xid 0 when none is shown; precursor
 *     "none" with t_precursor_start null; session null when it killed none;
 *     effect one of none, vanish, sentinel, frozen, node_down, os_collapse; n_nodes is
 *     the number of nodes showing a collective burst (1 otherwise).
 *   {"type":"session","id":12,"chain":7,"attempt":0,"t_start":1763990000000,
 *    "t_steady":1763990420000,"t_end":1764001800000,"outcome":"failed","failure":3,
 *    "nodes":58,"excluded_node":null}
 *     outcome completed, failed or startup_failed; failure null unless a
 *     failure ended it; excluded_node a hostname or null.
 *   {"type":"checkpoint","id":40,"session":12,"phase":"save","t_start":1763999000000,
 *    "t_end":1763999300000,"bytes":12000000000000}
 *   {"type":"bait","id":9,"kind":"scrape_gap","node":"gpu012","gpu":null,
 *    "t_start":1763995185000,"t_end":1763995245000,"job":"dcgm"}
 *     job (dcgm, node or both) only for scrape_gap and exporter_restart. */
#include <stdio.h>

#include "gpuwatch/sim.h"

static void put_time(FILE *f, const char *key, int64_t t)
{
    if (t == GW_SIM_NO_TIME) fprintf(f, ",\"%s\":null", key);
    else fprintf(f, ",\"%s\":%lld", key, (long long)t);
}

static void put_int_or_null(FILE *f, const char *key, int64_t v)
{
    if (v < 0) fprintf(f, ",\"%s\":null", key);
    else fprintf(f, ",\"%s\":%lld", key, (long long)v);
}

static const char *effect_name(enum gw_sim_fault_effect e)
{
    switch (e) {
    case GW_SIM_EFF_NONE: return "none";
    case GW_SIM_EFF_VANISH: return "vanish";
    case GW_SIM_EFF_SENTINEL: return "sentinel";
    case GW_SIM_EFF_FROZEN: return "frozen";
    case GW_SIM_EFF_NODE_DOWN: return "node_down";
    case GW_SIM_EFF_OS_COLLAPSE: return "os_collapse";
    }
    return "unknown";
}

static const char *outcome_name(enum gw_sim_session_outcome o)
{
    switch (o) {
    case GW_SIM_SESS_COMPLETED: return "completed";
    case GW_SIM_SESS_FAILED: return "failed";
    case GW_SIM_SESS_STARTUP_FAILED: return "startup_failed";
    }
    return "unknown";
}

static const char *job_name(uint32_t job)
{
    return job == 0 ? "dcgm" : job == 1 ? "node" : "both";
}

static const char *name_or(const struct gw_sim_timeline *tl, uint32_t node)
{
    const char *s = gw_sim_node_name(tl, node);
    return s ? s : "?";
}

int gw_sim_truth_write(const struct gw_sim_timeline *tl, FILE *f, struct gw_error *err)
{
    if (!tl || !f) return gw_error_set(err, GW_EINVAL, "truth: missing timeline or file");
    for (size_t i = 0; i < tl->n_failures; i++) {
        const struct gw_sim_failure *x = &tl->failures[i];
        fprintf(f, "{\"type\":\"failure\",\"id\":%u,\"class\":\"%s\",\"node\":\"%s\"", x->id,
                gw_sim_class_name(x->cls), name_or(tl, x->node));
        put_int_or_null(f, "gpu", x->gpu);
        fprintf(f, ",\"xid\":%u,\"action\":\"%s\",\"precursor\":\"%s\"", x->xid,
                gw_sim_action_name(x->action), gw_sim_precursor_name(x->precursor));
        put_time(f, "t_precursor_start", x->t_precursor_start);
        put_time(f, "t_fault", x->t_fault);
        put_time(f, "t_xid_visible", x->t_xid_visible);
        put_time(f, "t_recovered", x->t_recovered);
        put_int_or_null(f, "session", x->session);
        fprintf(f, ",\"effect\":\"%s\",\"severity\":%.2f,\"n_nodes\":%u}\n",
                effect_name(x->effect), x->severity, x->n_nodes);
    }
    for (size_t i = 0; i < tl->n_sessions; i++) {
        const struct gw_sim_session *s = &tl->sessions[i];
        fprintf(f, "{\"type\":\"session\",\"id\":%u,\"chain\":%u,\"attempt\":%u", s->id, s->chain,
                s->attempt);
        put_time(f, "t_start", s->t_start);
        put_time(f, "t_steady", s->t_steady);
        put_time(f, "t_end", s->t_end);
        fprintf(f, ",\"outcome\":\"%s\"", outcome_name(s->outcome));
        put_int_or_null(f, "failure", s->failure);
        fprintf(f, ",\"nodes\":%u", s->n_nodes);
        if (s->excluded_node >= 0)
            fprintf(f, ",\"excluded_node\":\"%s\"}\n", name_or(tl, (uint32_t)s->excluded_node));
        else
            fputs(",\"excluded_node\":null}\n", f);
    }
    for (size_t i = 0; i < tl->n_checkpoints; i++) {
        const struct gw_sim_checkpoint *c = &tl->checkpoints[i];
        fprintf(f, "{\"type\":\"checkpoint\",\"id\":%u,\"session\":%u,\"phase\":\"%s\"", c->id,
                c->session, c->phase == GW_SIM_CKPT_SAVE ? "save" : "load");
        put_time(f, "t_start", c->t_start);
        put_time(f, "t_end", c->t_end);
        fprintf(f, ",\"bytes\":%llu,\"nodes\":%u,\"bottleneck\":\"%s\"}\n", (unsigned long long)c->bytes,
                c->session < tl->n_sessions ? tl->sessions[c->session].n_nodes : 0,
                gw_sim_bottleneck_name(c->bottleneck));
    }
    for (size_t i = 0; i < tl->n_baits; i++) {
        const struct gw_sim_bait *b = &tl->baits[i];
        fprintf(f, "{\"type\":\"bait\",\"id\":%u,\"kind\":\"%s\",\"node\":\"%s\"", b->id,
                gw_sim_bait_name(b->kind), name_or(tl, b->node));
        put_int_or_null(f, "gpu", b->gpu);
        put_time(f, "t_start", b->t_start);
        put_time(f, "t_end", b->t_end);
        if (b->kind == GW_SIM_BAIT_SCRAPE_GAP || b->kind == GW_SIM_BAIT_EXPORTER_RESTART)
            fprintf(f, ",\"job\":\"%s\"}\n", job_name(b->job));
        else
            fputs("}\n", f);
    }
    if (fflush(f) != 0 || ferror(f)) return gw_error_set(err, GW_EIO, "truth: write failed");
    return GW_OK;
}
