/* d6_slow.c - D6: thermal / power / throttle fail-slow.
 *
 * GpuThrottling: on throttle_hits of the last throttle_of evaluations the
 * GPU's clock event reasons carry a loss-causing bit (0x8 HW slowdown,
 * 0x20 SW thermal, 0x40 HW thermal, 0x80 HW power brake) while it is busy
 * (>= 80 % util) with its SM clock throttle_clock_loss or more below the
 * busy GPUs' median, or while it is idle (< 10 % util: nothing to cool or
 * to cap); or the bits stay set for throttle_long. The benign
 * bits (0x1 idle, 0x2 clock setting, 0x4 SW power cap) never count.
 * GpuTemperatureHigh: die temperature >= temp_crit for temp_crit (critical)
 * or >= temp_warn for temp_warn (warning); HBM >= hbm_temp_warn for
 * temp_warn. Evidence quotes violation-counter time when it grew. */
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

void det_d6_eval(struct gw_det *d, int64_t t)
{
    int64_t iv = det_interval(d);
    double ref_clock = d->med_clock == d->med_clock ? d->med_clock : d->ref_clock;
    unsigned of = d->c.throttle_of >= 1 && d->c.throttle_of <= 8 ? d->c.throttle_of : 4;
    char summary[256], ev[384], when[32];
    for (uint32_t i = 0; i < d->n_nodes; i++) {
        struct det_node *n = &d->nodes[i];
        for (unsigned g = 0; g < n->gpu_count; g++) {
            struct det_gpu *x = &n->gpus[g];
            int fr = det_fresh(&x->reasons, t, iv) && x->reasons.v >= 0 && x->reasons.v < 4294967296.0;
            unsigned bits = fr ? (unsigned)x->reasons.v & LOSS_BITS : 0;
            int busy = det_fresh(&x->util, t, iv) && x->util.v >= 80 && x->util.v < d->c.sentinel_min;
            int slow = busy && ref_clock > 0 && det_fresh(&x->clock, t, iv) &&
                       x->clock.v < (1 - d->c.throttle_clock_loss) * ref_clock;
            /* an idle GPU has no reason to throttle: the bits alone count */
            int idle = det_fresh(&x->util, t, iv) && x->util.v < 10;
            x->throttle_hist = (uint8_t)((x->throttle_hist << 1) | (bits && (slow || idle)));
            unsigned hits = (unsigned)__builtin_popcount((unsigned)x->throttle_hist & ((1u << of) - 1));
            int64_t held = since(&x->bad_reason_since, bits != 0, t);
            double viol = x->viol_thermal_last + x->viol_power_last;
            x->viol_thermal_last = x->viol_power_last = 0;
            if ((bits && (slow || idle) && hits >= d->c.throttle_hits) || held >= d->c.throttle_long_ms) {
                det_fmt_time(x->bad_reason_since, when, sizeof when);
                snprintf(summary, sizeof summary, "%s GPU %u is throttling: a straggler slows the whole job", n->name, g);
                snprintf(ev, sizeof ev,
                         "clock event reasons 0x%x (loss bits 0x%x) since %s; SM clock %.0f MHz vs busy median %.0f MHz "
                         "on %u of the last %u evaluations; temperature %.0f C; violation time +%.3g",
                         fr ? (unsigned)x->reasons.v : 0u, bits, when, x->clock.v, ref_clock, hits, of, x->temp.v, viol);
                struct gw_alert_spec a = {
                    .alertname = "GpuThrottling", .severity = GW_SEV_WARNING, .hostname = n->name, .gpu = (int)g,
                    .detector = "D6", .cls = "fail_slow", .action = "none", .summary = summary, .evidence = ev,
                    .score = slow ? 0.8 : 0.5, .hold_ms = d->c.slow_hold_ms,
                };
                det_raise(d, &a, t, 6);
            }
            int tf = det_fresh(&x->temp, t, iv) && x->temp.v < d->c.sentinel_min;
            int mf = det_fresh(&x->memtemp, t, iv) && x->memtemp.v < d->c.sentinel_min;
            int64_t crit = since(&x->temp_crit_since, tf && x->temp.v >= d->c.temp_crit, t);
            int64_t warn = since(&x->temp_warn_since, tf && x->temp.v >= d->c.temp_warn, t);
            int64_t hbm = since(&x->hbm_warn_since, mf && x->memtemp.v >= d->c.hbm_temp_warn, t);
            enum gw_severity sev;
            if (crit >= d->c.temp_crit_ms) sev = GW_SEV_CRITICAL;
            else if (warn >= d->c.temp_warn_ms || hbm >= d->c.temp_warn_ms) sev = GW_SEV_WARNING;
            else continue;
            snprintf(summary, sizeof summary, "%s GPU %u runs hot", n->name, g);
            snprintf(ev, sizeof ev, "die %.0f C (bands %.0f/%.0f C), HBM %.0f C (band %.0f C) for %lld s", x->temp.v,
                     d->c.temp_warn, d->c.temp_crit, mf ? x->memtemp.v : 0.0, d->c.hbm_temp_warn,
                     (long long)((crit > warn ? (crit > hbm ? crit : hbm) : (warn > hbm ? warn : hbm)) / 1000));
            struct gw_alert_spec a = {
                .alertname = "GpuTemperatureHigh", .severity = sev, .hostname = n->name, .gpu = (int)g,
                .detector = "D6", .cls = "thermal", .action = sev == GW_SEV_CRITICAL ? "drain_node" : "none",
                .summary = summary, .evidence = ev, .score = 0.7, .hold_ms = d->c.slow_hold_ms,
            };
            det_raise(d, &a, t, 6);
        }
    }
}
