/* d6_slow.c - D6: thermal / power / throttle fail-slow.
 *
 * GpuThrottling: on throttle_hits of the last throttle_of evaluations the
 * GPU's clock event reasons carry a loss-causing bit (0x8 HW slowdown,
 * 0x20 SW thermal, 0x40 HW thermal, 0x80 HW power brake) while it works
 * (>= 10 % util) with its SM clock throttle_clock_loss or more below its
 * working sibling GPUs' median, or while it runs throttle_temp_excess
 * hotter than its siblings, or while it is idle (< 10 % util: nothing to
 * cool or to cap); or, without bits, a clock deficit of twice that with
 * the heat; or the bits stay set for throttle_long. Siblings share the
 * job, the model and the inlet air, so a GPU model's clock range or a hot
 * aisle moves them together. The benign bits (0x1 idle, 0x2 clock
 * setting, 0x4 SW power cap) never count.
 * GpuTemperatureHigh: die temperature >= temp_crit for temp_crit (critical)
 * or >= temp_warn for temp_warn (warning); HBM >= hbm_temp_warn for
 * temp_warn. Evidence quotes violation-counter time when it grew. */
#include <math.h>
#include <stdio.h>
#include "detect_int.h"

#define LOSS_BITS 0xE8u

void det_d6_rules(struct gw_alerts *a, const struct gw_det_config *c)
{
    struct gw_alert_rule r[] = {
        {"GpuThrottling", "D6", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS & 0xE8 with the SM clock below the busy GPUs' median",
         GW_SEV_WARNING, 0, c->slow_hold_ms},
        {"GpuTemperatureHigh", "D6", "DCGM_FI_DEV_GPU_TEMP or DCGM_FI_DEV_MEMORY_TEMP above its band for its duration",
         GW_SEV_WARNING, 0, c->slow_hold_ms},
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) gw_alerts_add_rule(a, &r[i]);
}

static int64_t since(int64_t *s, int cond, int64_t t)
{
    if (!cond) {
        *s = INT64_MIN;
        return -1;
    }
    if (*s == INT64_MIN) *s = t;
    return t - *s;
}

/* Median of a gauge over the GPU's siblings at T (NAN with fewer than 2);
 * with busy_only, siblings at >= 10 % util only. */
static double sibling_median(struct gw_det *d, const struct det_node *n, unsigned g, int slot, int64_t T, int busy_only)
{
    double v[DET_MAX_GPUS], u;
    size_t k = 0;
    for (unsigned o = 0; o < n->gpu_count; o++) {
        if (o == g) continue;
        const struct det_gpu *y = &n->gpus[o];
        if (busy_only && (!det_at(d, y->slot[G_UTIL], T, &u) || u < 10 || u >= d->c.sentinel_min)) continue;
        if (det_at(d, y->slot[slot], T, &v[k]) && v[k] < d->c.sentinel_min) k++;
    }
    return k >= 2 ? det_median(v, k) : NAN;
}

void det_d6_eval(struct gw_det *d, int64_t T)
{
    unsigned of = d->c.throttle_of >= 1 && d->c.throttle_of <= 8 ? d->c.throttle_of : 3;
    char summary[256], ev[384], when[32];
    for (uint32_t i = 0; i < d->n_nodes; i++) {
        struct det_node *n = &d->nodes[i];
        if (!det_node_live(n)) continue;
        for (unsigned g = 0; g < n->gpu_count; g++) {
            struct det_gpu *x = &n->gpus[g];
            double reasons = 0, util = 0, clock = 0, temp = 0, memtemp = 0;
            int fr = det_at(d, x->slot[G_REASONS], T, &reasons) && reasons >= 0 && reasons < 4294967296.0;
            int hu = det_at(d, x->slot[G_UTIL], T, &util) && util < d->c.sentinel_min;
            int hc = det_at(d, x->slot[G_CLOCK], T, &clock) && clock < d->c.sentinel_min;
            int tf = det_at(d, x->slot[G_TEMP], T, &temp) && temp < d->c.sentinel_min;
            int mf = det_at(d, x->slot[G_MEMTEMP], T, &memtemp) && memtemp < d->c.sentinel_min;
            unsigned bits = fr ? (unsigned)reasons & LOSS_BITS : 0;
            int busy = hu && util >= 10;
            /* against the sibling GPUs doing the same work (the fleet's busy
             * median on a node without busy siblings) */
            double ref_clock = sibling_median(d, n, g, G_CLOCK, T, 1);
            if (ref_clock != ref_clock && util >= 80) ref_clock = d->med_clock == d->med_clock ? d->med_clock : d->k.ref_clock;
            double ref_temp = sibling_median(d, n, g, G_TEMP, T, 0);
            int slow = busy && hc && ref_clock == ref_clock && ref_clock > 0 &&
                       clock < (1 - d->c.throttle_clock_loss) * ref_clock;
            int hot = tf && ref_temp == ref_temp && temp >= ref_temp + d->c.throttle_temp_excess;
            /* an idle GPU has no reason to throttle: the bits alone count */
            int idle = hu && util < 10;
            /* without bits: a clear clock deficit with heat is fail-slow too */
            int nobits = busy && hc && hot && ref_clock == ref_clock && clock < (1 - 2 * d->c.throttle_clock_loss) * ref_clock;
            int hit = (bits && (slow || hot || idle)) || nobits;
            x->throttle_hist = (uint8_t)((x->throttle_hist << 1) | hit);
            unsigned hits = (unsigned)__builtin_popcount((unsigned)x->throttle_hist & ((1u << of) - 1));
            int64_t held = since(&x->bad_reason_since, bits != 0, T);
            double viol = x->viol_thermal_last + x->viol_power_last;
            x->viol_thermal_last = x->viol_power_last = 0;
            if ((hit && hits >= d->c.throttle_hits) || held >= d->c.throttle_long_ms) {
                det_fmt_time(bits ? x->bad_reason_since : T, when, sizeof when);
                snprintf(summary, sizeof summary, "%s GPU %u is throttling: a straggler slows the whole job", n->name, g);
                snprintf(ev, sizeof ev,
                         "clock event reasons 0x%x (loss bits 0x%x) since %s; SM clock %.0f MHz vs siblings' median %.0f MHz; "
                         "temperature %.0f C vs siblings' %.0f C; on %u of the last %u evaluations; violation time +%.3g",
                         fr ? (unsigned)reasons : 0u, bits, when, clock, ref_clock, temp, ref_temp, hits, of, viol);
                struct gw_alert_spec a = {
                    .alertname = "GpuThrottling", .severity = GW_SEV_WARNING, .hostname = n->name, .gpu = (int)g,
                    .detector = "D6", .cls = "fail_slow", .action = "none", .summary = summary, .evidence = ev,
                    .score = slow && hot ? 0.9 : slow ? 0.8 : 0.5, .hold_ms = d->c.slow_hold_ms,
                };
                det_raise(d, &a, T, 6);
            }
            int64_t crit = since(&x->temp_crit_since, tf && temp >= d->c.temp_crit, T);
            int64_t warn = since(&x->temp_warn_since, tf && temp >= d->c.temp_warn, T);
            int64_t hbm = since(&x->hbm_warn_since, mf && memtemp >= d->c.hbm_temp_warn, T);
            enum gw_severity sev;
            if (crit >= d->c.temp_crit_ms) sev = GW_SEV_CRITICAL;
            else if (warn >= d->c.temp_warn_ms || hbm >= d->c.temp_warn_ms) sev = GW_SEV_WARNING;
            else continue;
            snprintf(summary, sizeof summary, "%s GPU %u runs hot", n->name, g);
            snprintf(ev, sizeof ev, "die %.0f C (bands %.0f/%.0f C), HBM %.0f C (band %.0f C) for %lld s", temp,
                     d->c.temp_warn, d->c.temp_crit, mf ? memtemp : 0.0, d->c.hbm_temp_warn,
                     (long long)((crit > warn ? (crit > hbm ? crit : hbm) : (warn > hbm ? warn : hbm)) / 1000));
            struct gw_alert_spec a = {
                .alertname = "GpuTemperatureHigh", .severity = sev, .hostname = n->name, .gpu = (int)g,
                .detector = "D6", .cls = "thermal", .action = sev == GW_SEV_CRITICAL ? "drain_node" : "none",
                .summary = summary, .evidence = ev, .score = 0.7, .hold_ms = d->c.slow_hold_ms,
            };
            det_raise(d, &a, T, 6);
        }
    }
}
