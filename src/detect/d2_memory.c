/* d2_memory.c - D2: GPU memory degradation.
 *
 * Critical at once: uncorrectable remapped rows or double-bit ECC errors
 * increasing, or ROW_REMAP_FAILURE set (the bank has no spare rows left).
 * Warning: ROW_REMAP_PENDING set for pending_for (a reset applies it);
 * correctable remapped rows increasing remap_count times within
 * remap_window, or single-bit ECC counters increasing on sbe_count scrapes
 * within sbe_window - the long-lead trend behind failures like the
 * report's gpu124 (254 correctable remaps over 55 days, then the GPU
 * vanished). A trend alert stays active memory_hold after its newest
 * sign. Counter decreases (exporter restart, GPU replaced) reseed. */
#include <stdio.h>
#include "detect_int.h"

void det_d2_rules(struct gw_alerts *a, const struct gw_det_config *c)
{
    struct gw_alert_rule r[] = {
        {"GpuMemoryUncorrectable", "D2", "increase(DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS or DCGM_FI_DEV_ECC_DBE_*_TOTAL) > 0",
         GW_SEV_CRITICAL, 0, c->xid_hold_ms},
        {"GpuRowRemapFailure", "D2", "DCGM_FI_DEV_ROW_REMAP_FAILURE > 0", GW_SEV_CRITICAL, 0, 10 * 60000},
        {"GpuRowRemapPending", "D2", "DCGM_FI_DEV_ROW_REMAP_PENDING > 0 for the pending duration", GW_SEV_WARNING,
         c->pending_for_ms, 30 * 60000},
        {"GpuRemappedRowsRising", "D2", "correctable remapped rows increasing repeatedly within the remap window",
         GW_SEV_WARNING, 0, c->memory_hold_ms},
        {"GpuSbeRising", "D2", "single-bit ECC errors on several scrapes within the SBE window", GW_SEV_WARNING, 0,
         c->memory_hold_ms},
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) gw_alerts_add_rule(a, &r[i]);
}

static const char *short_name(int role)
{
    switch (role) {
    case R_REMAP_CORR: return "CORRECTABLE_REMAPPED_ROWS";
    case R_REMAP_UNCORR: return "UNCORRECTABLE_REMAPPED_ROWS";
    case R_SBE_VOL: return "ECC_SBE_VOL_TOTAL";
    case R_SBE_AGG: return "ECC_SBE_AGG_TOTAL";
    case R_DBE_VOL: return "ECC_DBE_VOL_TOTAL";
    case R_DBE_AGG: return "ECC_DBE_AGG_TOTAL";
    case R_REMAP_PENDING: return "ROW_REMAP_PENDING";
    default: return "ROW_REMAP_FAILURE";
    }
}

static void push_inc(struct det_series *s, int64_t t, unsigned count)
{
    for (unsigned i = 0; i < count && i < DET_HIST; i++) {
        s->inc_head = (uint8_t)((s->inc_head + 1) % DET_HIST);
        s->inc_t[s->inc_head] = t;
        if (s->n_inc < DET_HIST) s->n_inc++;
    }
}

/* Increments within the window ending at t, and the oldest of them. */
static unsigned count_within(const struct det_series *s, int64_t t, int64_t window, int64_t *oldest)
{
    unsigned n = 0;
    *oldest = t;
    for (unsigned i = 0; i < s->n_inc; i++) {
        int64_t x = s->inc_t[(s->inc_head + DET_HIST - i) % DET_HIST];
        if (t - x > window) break;
        n++;
        *oldest = x;
    }
    return n;
}

static void raise_mem(struct gw_det *d, const struct det_series *s, const char *name, enum gw_severity sev,
                      const char *action, int64_t for_ms, int64_t hold_ms, double score, const char *summary_what,
                      const char *evidence, int64_t t)
{
    char summary[256];
    snprintf(summary, sizeof summary, "%s on %s GPU %d", summary_what, d->nodes[s->node].name, s->gpu);
    struct gw_alert_spec a = {
        .alertname = name, .severity = sev, .hostname = d->nodes[s->node].name, .gpu = s->gpu, .detector = "D2",
        .cls = "memory", .action = action, .summary = summary, .evidence = evidence, .score = score,
        .for_ms = for_ms, .hold_ms = hold_ms,
    };
    det_raise(d, &a, t, 2);
}

void det_d2_sample(struct gw_det *d, struct det_series *s, int64_t t, double v)
{
    if (!(v < d->c.sentinel_min) || v != v) return;
    struct det_gpu *x = &d->nodes[s->node].gpus[s->gpu];
    char ev[384], when[32] = "";
    double delta = det_counter_delta(s, v);
    int raising = delta > 0 || ((s->role == R_REMAP_FAILURE || s->role == R_REMAP_PENDING) && v > 0);
    if (raising) det_fmt_time(t, when, sizeof when);
    switch (s->role) {
    case R_REMAP_UNCORR:
    case R_DBE_VOL:
    case R_DBE_AGG:
        if (delta > 0) {
            snprintf(ev, sizeof ev, "%s +%.0f (now %.0f) at %s", short_name(s->role), delta, v, when);
            raise_mem(d, s, "GpuMemoryUncorrectable", GW_SEV_CRITICAL, "reset_gpu", 0, d->c.xid_hold_ms, 1.0,
                      "uncorrectable memory errors", ev, t);
        }
        break;
    case R_REMAP_FAILURE:
        if (v > 0) {
            snprintf(ev, sizeof ev, "ROW_REMAP_FAILURE = %.0f at %s: no spare rows left", v, when);
            raise_mem(d, s, "GpuRowRemapFailure", GW_SEV_CRITICAL, "drain_node", 0, 10 * 60000, 1.0,
                      "row remapping failed", ev, t);
        }
        break;
    case R_REMAP_PENDING:
        if (v > 0) {
            if (x->pending_since == INT64_MIN) x->pending_since = t;
            char since[32];
            det_fmt_time(x->pending_since, since, sizeof since);
            snprintf(ev, sizeof ev, "ROW_REMAP_PENDING = %.0f since %s", v, since);
            raise_mem(d, s, "GpuRowRemapPending", GW_SEV_WARNING, "reset_gpu", d->c.pending_for_ms, 30 * 60000, 0.7,
                      "a row remap waits for a GPU reset", ev, t);
        } else {
            x->pending_since = INT64_MIN;
        }
        break;
    case R_REMAP_CORR:
    case R_SBE_VOL:
    case R_SBE_AGG: {
        if (delta <= 0) break;
        int remap = s->role == R_REMAP_CORR;
        push_inc(s, t, remap ? (unsigned)(delta < DET_HIST ? delta : DET_HIST) : 1);
        int64_t window = remap ? d->c.remap_window_ms : d->c.sbe_window_ms;
        uint32_t need = remap ? d->c.remap_count : d->c.sbe_count;
        int64_t oldest;
        unsigned n = count_within(s, t, window, &oldest);
        if (n < need) break;
        char since[32];
        det_fmt_time(oldest, since, sizeof since);
        snprintf(ev, sizeof ev, "%s %s %u times since %s (now %.0f, +%.0f at %s)", short_name(s->role),
                 remap ? "increased" : "increased on", n, since, v, delta, when);
        raise_mem(d, s, remap ? "GpuRemappedRowsRising" : "GpuSbeRising", GW_SEV_WARNING,
                  remap ? "drain_node" : "reset_gpu", 0, d->c.memory_hold_ms, 0.6,
                  remap ? "correctable remapped rows keep rising: HBM degrading"
                        : "single-bit ECC errors keep rising: HBM degrading",
                  ev, t);
        break;
    }
    default:
        break;
    }
}
