/* d1_xid.c - D1: XID onsets.
 *
 * dcgm-exporter's DCGM_FI_DEV_XID_ERRORS is a latched gauge (the value of
 * the last XID, a new series per err_code) and DCGM_EXP_XID_ERRORS_COUNT a
 * count per XID over a sliding window. An onset is an edge: the gauge
 * changing to a non-zero value, a count increasing, or a new series
 * appearing on a GPU that was already reporting (a latched value seen at
 * gpuwatch's first sight of a GPU is a level, not an event). Onsets of one
 * code on one GPU closer than burst_gap are one burst.
 *
 * Hardware XIDs raise GpuXidError at once with the catalogue's class and
 * action (reference gpu-telemetry.md 3.1, the report's Table 3 where it
 * differs). Application XIDs wait collective_window: the same code on
 * collective_nodes or more nodes within the window is one job-level abort
 * (GpuCollectiveXidBurst, info, no hostname); otherwise a GPU-level info
 * alert. Application-XID bursts (outside collective aborts) repeating on one GPU (repeat_bursts within
 * repeat_window) escalate to GpuXidRepeated (warning: hardware suspect). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "detect_int.h"

struct xid_info {
    uint32_t code;
    uint8_t app;              /* application level: restart the job */
    enum gw_severity sev;
    const char *cls, *action, *what;
};

static const struct xid_info k_xids[] = {
    {8, 1, GW_SEV_INFO, "app", "restart_app", "GPU stopped processing"},
    {13, 1, GW_SEV_INFO, "app", "restart_app", "graphics engine exception"},
    {31, 1, GW_SEV_INFO, "app", "restart_app", "GPU memory page fault"},
    {43, 1, GW_SEV_INFO, "app", "restart_app", "GPU stopped processing (application fault)"},
    {45, 1, GW_SEV_INFO, "app", "restart_app", "preemptive cleanup"},
    {68, 1, GW_SEV_INFO, "app", "restart_app", "NVDEC exception"},
    {69, 1, GW_SEV_INFO, "app", "restart_app", "graphics class error"},
    {137, 1, GW_SEV_INFO, "app", "restart_app", "NVLink privilege error (application)"},
    {48, 0, GW_SEV_CRITICAL, "memory", "reset_gpu", "double-bit ECC error"},
    {62, 0, GW_SEV_CRITICAL, "gsp", "reset_gpu", "internal micro-controller halt"},
    {63, 0, GW_SEV_WARNING, "memory", "reset_gpu", "row-remap recording event"},
    {64, 0, GW_SEV_CRITICAL, "memory", "reset_gpu", "row-remap recording failure"},
    {74, 0, GW_SEV_CRITICAL, "nvlink", "reset_gpu", "NVLink error"},
    {79, 0, GW_SEV_CRITICAL, "fell_off_bus", "reboot_node", "GPU fell off the bus"},
    {92, 0, GW_SEV_WARNING, "memory", "none", "high single-bit ECC rate"},
    {94, 0, GW_SEV_WARNING, "memory", "restart_app", "contained memory error"},
    {95, 0, GW_SEV_CRITICAL, "memory", "reset_gpu", "uncontained memory error"},
    {109, 0, GW_SEV_CRITICAL, "gpu", "reset_gpu", "context-switch timeout"},
    {119, 0, GW_SEV_CRITICAL, "gsp", "reset_gpu", "GSP RPC timeout"},
    {120, 0, GW_SEV_CRITICAL, "gsp", "reset_gpu", "GSP error"},
    {136, 0, GW_SEV_CRITICAL, "nvlink", "reset_gpu", "NVLink training failed"},
    {140, 0, GW_SEV_CRITICAL, "memory", "reset_gpu", "unrecovered ECC error"},
    {143, 0, GW_SEV_CRITICAL, "gpu", "reset_gpu", "GPU initialisation failure"},
    {144, 0, GW_SEV_CRITICAL, "nvlink", "reset_gpu", "NVLink SAW error"},
    {145, 0, GW_SEV_CRITICAL, "nvlink", "reset_gpu", "NVLink RLW error"},
    {146, 0, GW_SEV_CRITICAL, "nvlink", "reset_gpu", "NVLink TLW error"},
    {147, 0, GW_SEV_CRITICAL, "nvlink", "reset_gpu", "NVLink TREX error"},
    {148, 0, GW_SEV_CRITICAL, "nvlink", "reset_gpu", "NVLink NVLPW_CTRL error"},
    {149, 0, GW_SEV_CRITICAL, "nvlink", "reset_gpu", "NVLink NETIR error"},
    {150, 0, GW_SEV_CRITICAL, "nvlink", "reset_gpu", "NVLink MSE error"},
    {154, 0, GW_SEV_WARNING, "gpu", "reset_gpu", "recovery action changed"},
    {155, 0, GW_SEV_CRITICAL, "nvlink", "reset_gpu", "NVLink software-defined error"},
    {156, 0, GW_SEV_WARNING, "gpu", "reset_gpu", "resource retirement event"},
    {157, 0, GW_SEV_CRITICAL, "gpu", "reset_gpu", "resource retirement failure"},
    {158, 0, GW_SEV_CRITICAL, "gpu", "reset_gpu", "GPU fatal timeout"},
    {159, 0, GW_SEV_CRITICAL, "gpu", "reset_gpu", "CHI non-data error"},
};

static const struct xid_info k_unknown = {0, 0, GW_SEV_WARNING, "gpu", "none", "XID not in the catalogue"};

static const struct xid_info *xid_lookup(uint32_t code)
{
    for (size_t i = 0; i < sizeof k_xids / sizeof k_xids[0]; i++)
        if (k_xids[i].code == code) return &k_xids[i];
    return &k_unknown;
}

void det_d1_rules(struct gw_alerts *a, const struct gw_det_config *c)
{
    struct gw_alert_rule r[] = {
        {"GpuXidError", "D1", "onset (edge) of DCGM_FI_DEV_XID_ERRORS or increase of DCGM_EXP_XID_ERRORS_COUNT; "
                              "application XIDs only when not part of a collective abort", GW_SEV_CRITICAL, 0,
         c->xid_hold_ms},
        {"GpuCollectiveXidBurst", "D1", "the same application XID on several nodes within the collective window "
                                        "(job-level abort)", GW_SEV_INFO, 0, 10 * 60000},
        {"GpuXidRepeated", "D1", "application-XID bursts repeating on one GPU within the repeat window",
         GW_SEV_WARNING, 0, c->repeat_window_ms},
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) gw_alerts_add_rule(a, &r[i]);
}

static void raise_xid(struct gw_det *d, uint32_t node, int gpu, uint32_t code, int64_t t, const char *extra_ev)
{
    const struct xid_info *xi = xid_lookup(code);
    char code_s[16], summary[256], evidence[384], when[32];
    snprintf(code_s, sizeof code_s, "%u", code);
    det_fmt_time(t, when, sizeof when);
    snprintf(summary, sizeof summary, "XID %u (%s) on %s GPU %d", code, xi->what, d->nodes[node].name, gpu);
    snprintf(evidence, sizeof evidence, "XID %u first seen at %s%s", code, when, extra_ev ? extra_ev : "");
    struct gw_alert_spec s = {
        .alertname = "GpuXidError", .severity = xi->sev, .hostname = d->nodes[node].name, .gpu = gpu,
        .detector = "D1", .cls = xi->cls, .action = xi->action, .extra_name = "xid", .extra_value = code_s,
        .summary = summary, .evidence = evidence, .score = xi->app ? 0.5 : 1.0, .for_ms = 0,
        .hold_ms = d->c.xid_hold_ms,
    };
    det_raise(d, &s, t, 1);
}

static void app_repeat(struct gw_det *d, uint32_t node, int gpu, uint32_t code, int64_t t)
{
    struct det_gpu *x = &d->nodes[node].gpus[gpu];
    x->app_burst_head = (uint8_t)((x->app_burst_head + 1) % DET_HIST);
    x->app_burst_t[x->app_burst_head] = t;
    if (x->app_burst_n < DET_HIST) x->app_burst_n++;
    uint32_t within = 0;
    for (unsigned i = 0; i < x->app_burst_n; i++)
        if (t - x->app_burst_t[(x->app_burst_head + DET_HIST - i) % DET_HIST] <= d->c.repeat_window_ms) within++;
    if (within < d->c.repeat_bursts) return;
    char summary[256], evidence[256], when[32];
    det_fmt_time(t, when, sizeof when);
    snprintf(summary, sizeof summary, "application XIDs keep recurring on %s GPU %d: hardware suspect",
             d->nodes[node].name, gpu);
    snprintf(evidence, sizeof evidence, "%u application-XID bursts within %lld h, the newest XID %u at %s", within,
             (long long)(d->c.repeat_window_ms / 3600000), code, when);
    struct gw_alert_spec s = {
        .alertname = "GpuXidRepeated", .severity = GW_SEV_WARNING, .hostname = d->nodes[node].name, .gpu = gpu,
        .detector = "D1", .cls = "gpu", .action = "reset_gpu", .summary = summary, .evidence = evidence,
        .score = 0.6, .hold_ms = d->c.repeat_window_ms,
    };
    det_raise(d, &s, t, 1);
}

static void onset(struct gw_det *d, uint32_t node, int gpu, uint32_t code, int64_t t)
{
    struct det_gpu *x = &d->nodes[node].gpus[gpu];
    int slot = -1, oldest = 0;
    for (int i = 0; i < 4; i++) {
        if (x->xid_code[i] == code && x->xid_last_onset[i] != 0) slot = i;
        if (x->xid_last_onset[i] < x->xid_last_onset[oldest]) oldest = i;
    }
    const struct xid_info *xi = xid_lookup(code);
    if (slot >= 0 && t - x->xid_last_onset[slot] <= d->c.burst_gap_ms) {
        x->xid_last_onset[slot] = t;   /* same burst */
        if (!xi->app) raise_xid(d, node, gpu, code, t, NULL);
        return;
    }
    if (slot < 0) slot = oldest;
    x->xid_code[slot] = code;
    x->xid_last_onset[slot] = t;
    if (!xi->app) {
        raise_xid(d, node, gpu, code, t, NULL);
        return;
    }
    /* wait for the collective decision */
    uint32_t i = (d->xr_head + d->xr_n) % DET_XID_RING;
    if (d->xr_n == DET_XID_RING) {
        d->xr_head = (d->xr_head + 1) % DET_XID_RING;   /* drop the oldest */
        d->xr_n--;
        i = (d->xr_head + d->xr_n) % DET_XID_RING;
    }
    d->xr[i] = (struct det_xid_onset){.t = t, .node = node, .code = code, .gpu = (int8_t)gpu};
    d->xr_n++;
}

/* Per sample: only edges of this series, in its own time order; whether a
 * first sample is an event or a latched level is decided when its bucket
 * is judged (the GPU's first sample may still be arriving on another
 * shard). */
void det_d1_sample(struct gw_det *d, struct det_series *s, int64_t t, double v)
{
    uint32_t code;
    int first = s->last_t == INT64_MIN, is_onset;
    if (s->role == R_XID) {
        if (!(v > 0 && v < 1e6)) return;
        code = (uint32_t)v;
        is_onset = first || v != s->last_v;
    } else {
        if (!(v >= 0 && v < 1e9)) return;
        code = s->code;
        is_onset = first ? v > 0 : v > s->last_v;
    }
    if (!is_onset || !code) return;
    if (d->on_n == DET_ONSETS) {   /* full: drop the oldest candidate */
        memmove(&d->on[0], &d->on[1], (DET_ONSETS - 1) * sizeof d->on[0]);
        d->on_n--;
    }
    d->on[d->on_n++] = (struct det_xid_onset){.t = t, .node = s->node, .code = code, .gpu = s->gpu, .first = (uint8_t)first};
}

static int cmp_onset(const void *a, const void *b)
{
    const struct det_xid_onset *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    if (x->node != y->node) return x->node < y->node ? -1 : 1;
    if (x->gpu != y->gpu) return x->gpu < y->gpu ? -1 : 1;
    return x->code < y->code ? -1 : x->code > y->code;
}

/* The candidates before T, in (time, node, GPU, code) order. */
static void process_onsets(struct gw_det *d, int64_t T)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < d->on_n; i++)
        if (d->on[i].t < T) {
            struct det_xid_onset x = d->on[k];
            d->on[k] = d->on[i];
            d->on[i] = x;
            k++;
        }
    if (!k) return;
    qsort(d->on, k, sizeof d->on[0], cmp_onset);
    int64_t iv = det_interval(d);
    for (uint32_t i = 0; i < k; i++) {
        struct det_xid_onset *e = &d->on[i];
        uint32_t node = det_node_resolve(d, e->node);
        if (e->gpu < 0 || e->gpu >= DET_MAX_GPUS) continue;
        /* a series first seen on a GPU that has been reporting for a while
         * is an event; on a GPU seen for the first time it is a latched level */
        const struct det_gpu *x = &d->nodes[node].gpus[e->gpu];
        if (e->first && !(x->first_seen != INT64_MIN && x->first_seen < e->t - iv - iv / 2)) continue;
        onset(d, node, e->gpu, e->code, e->t);
    }
    memmove(&d->on[0], &d->on[k], (d->on_n - k) * sizeof d->on[0]);
    d->on_n -= k;
}

void det_d1_eval(struct gw_det *d, int64_t t)
{
    process_onsets(d, t);
    int64_t w = d->c.collective_window_ms;
    for (uint32_t k = 0; k < d->xr_n; k++) {
        struct det_xid_onset *e = &d->xr[(d->xr_head + k) % DET_XID_RING];
        if (e->decided || e->t + w > t) continue;
        /* distinct nodes with the same code within the window around e */
        uint32_t nodes[64], nn = 0;
        for (uint32_t j = 0; j < d->xr_n && nn < 64; j++) {
            struct det_xid_onset *f = &d->xr[(d->xr_head + j) % DET_XID_RING];
            if (f->code != e->code || f->t < e->t - w || f->t > e->t + w) continue;
            int seen = 0;
            for (uint32_t q = 0; q < nn; q++) seen |= nodes[q] == f->node;
            if (!seen) nodes[nn++] = f->node;
        }
        if (nn >= d->c.collective_nodes) {
            char code_s[16], summary[256], evidence[256], when[32];
            snprintf(code_s, sizeof code_s, "%u", e->code);
            det_fmt_time(e->t, when, sizeof when);
            snprintf(summary, sizeof summary, "XID %u on %u%s nodes at once: a job-level collective abort, not hardware",
                     e->code, nn, nn == 64 ? "+" : "");
            snprintf(evidence, sizeof evidence, "XID %u onsets on %u nodes within %lld s around %s", e->code, nn,
                     (long long)(w / 1000), when);
            struct gw_alert_spec s = {
                .alertname = "GpuCollectiveXidBurst", .severity = GW_SEV_INFO, .hostname = "", .gpu = -1,
                .detector = "D1", .cls = "app", .action = "restart_app", .extra_name = "xid", .extra_value = code_s,
                .summary = summary, .evidence = evidence, .score = 0.5, .hold_ms = 10 * 60000,
            };
            det_raise(d, &s, e->t, 1);
            for (uint32_t j = 0; j < d->xr_n; j++) {
                struct det_xid_onset *f = &d->xr[(d->xr_head + j) % DET_XID_RING];
                if (f->code == e->code && f->t >= e->t - w && f->t <= e->t + w) f->decided = 1;
            }
        } else {
            raise_xid(d, e->node, e->gpu, e->code, e->t, " (application level, this node only)");
            app_repeat(d, e->node, e->gpu, e->code, e->t);
            e->decided = 1;
        }
    }
    /* forget decided onsets older than two windows */
    while (d->xr_n && d->xr[d->xr_head].decided && d->xr[d->xr_head].t < t - 2 * w) {
        d->xr_head = (d->xr_head + 1) % DET_XID_RING;
        d->xr_n--;
    }
}
