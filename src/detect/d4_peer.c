/* d4_peer.c - D4: multi-signal collapse against peers.
 *
 * GpuFrozen: a GPU reports >= frozen_util % utilisation while drawing less
 * than frozen_power_ratio of the busy GPUs' median power at less than
 * frozen_clock_ratio of their median SM clock, for frozen_buckets
 * evaluations: a kernel that no longer runs (GSP hang, XID 119/120, which
 * dcgm-exporter often cannot report). The busy medians fall back to their
 * slow average when too few GPUs are busy now (the job died with it).
 *
 * NodeActivityCollapse: a node whose GPUs are busy but whose interrupt rate
 * and runnable processes both fall below collapse_ratio of the busy nodes'
 * medians for collapse_buckets evaluations (the report's gpu071: interrupts
 * from ~300K to 70-100K per 30 s, runnable processes to ~0). Masked while a
 * fleet-wide transition (job start/stop: mask_fraction of the nodes
 * changing busy state) is under way. */
#include <stdio.h>
#include "detect_int.h"

void det_d4_rules(struct gw_alerts *a, const struct gw_det_config *c)
{
    (void)c;
    struct gw_alert_rule r[] = {
        {"GpuFrozen", "D4", "DCGM_FI_DEV_GPU_UTIL high while power and SM clock sit far below the busy GPUs' medians",
         GW_SEV_CRITICAL, 0, 0},
        {"NodeActivityCollapse", "D4", "a busy node's interrupt rate and runnable processes collapse against the busy nodes' medians",
         GW_SEV_WARNING, 0, 0},
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) gw_alerts_add_rule(a, &r[i]);
}

void det_d4_eval(struct gw_det *d, int64_t t)
{
    int64_t iv = det_interval(d);
    double ref_power = d->med_power == d->med_power ? d->med_power : d->ref_power;
    double ref_clock = d->med_clock == d->med_clock ? d->med_clock : d->ref_clock;
    int masked = t < d->mask_until;
    for (uint32_t i = 0; i < d->n_nodes; i++) {
        struct det_node *n = &d->nodes[i];
        for (unsigned g = 0; g < n->gpu_count; g++) {
            struct det_gpu *x = &n->gpus[g];
            int hit = ref_power > 0 && ref_clock > 0 && det_fresh(&x->util, t, iv) && det_fresh(&x->power, t, iv) &&
                      det_fresh(&x->clock, t, iv) && x->util.v >= d->c.frozen_util && x->util.v < d->c.sentinel_min &&
                      x->power.v < d->c.frozen_power_ratio * ref_power &&
                      x->clock.v < d->c.frozen_clock_ratio * ref_clock;
            x->frozen_streak = hit ? (uint8_t)(x->frozen_streak < 255 ? x->frozen_streak + 1 : 255) : 0;
            if (x->frozen_streak < d->c.frozen_buckets) continue;
            char summary[256], ev[384];
            snprintf(summary, sizeof summary, "%s GPU %u looks frozen: busy but drawing idle power at idle clocks",
                     n->name, g);
            snprintf(ev, sizeof ev,
                     "GPU_UTIL %.0f %% with POWER_USAGE %.0f W (busy median %.0f W) and SM_CLOCK %.0f MHz "
                     "(busy median %.0f MHz) for %u evaluations",
                     x->util.v, x->power.v, ref_power, x->clock.v, ref_clock, x->frozen_streak);
            struct gw_alert_spec a = {
                .alertname = "GpuFrozen", .severity = GW_SEV_CRITICAL, .hostname = n->name, .gpu = (int)g,
                .detector = "D4", .cls = "gsp", .action = "reset_gpu", .summary = summary, .evidence = ev,
                .score = 0.9, .hold_ms = 3 * iv,
            };
            det_raise(d, &a, t, 4);
        }
        int chit = !masked && n->busy && d->med_intr == d->med_intr && d->med_procs == d->med_procs &&
                   n->intr_rate_t != INT64_MIN && t - n->intr_rate_t <= 2 * iv && det_fresh(&n->procs, t, iv) &&
                   n->intr_rate < d->c.collapse_ratio * d->med_intr &&
                   n->procs.v < d->c.collapse_ratio * d->med_procs;
        n->collapse_streak = chit ? (uint8_t)(n->collapse_streak < 255 ? n->collapse_streak + 1 : 255) : 0;
        if (n->collapse_streak < d->c.collapse_buckets) continue;
        char summary[256], ev[384];
        snprintf(summary, sizeof summary, "%s: OS activity collapsed while its GPUs are busy", n->name);
        snprintf(ev, sizeof ev,
                 "interrupts %.0f/s (busy nodes' median %.0f/s), procs_running %.0f (median %.0f) for %u evaluations",
                 n->intr_rate, d->med_intr, n->procs.v, d->med_procs, n->collapse_streak);
        struct gw_alert_spec a = {
            .alertname = "NodeActivityCollapse", .severity = GW_SEV_WARNING, .hostname = n->name, .gpu = -1,
            .detector = "D4", .cls = "other_hw", .action = "drain_node", .summary = summary, .evidence = ev,
            .score = 0.7, .hold_ms = 3 * iv,
        };
        det_raise(d, &a, t, 4);
    }
}
