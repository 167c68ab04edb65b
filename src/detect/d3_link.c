/* d3_link.c - D3: interconnect error rates.
 *
 * NVLink CRC flit/data, replay and recovery counters and the PCIe replay
 * counter per GPU, InfiniBand/RoCE port error counters per port. A single
 * increment is background noise on a large fleet; errors on link_hits of
 * the last link_of scrapes of one counter (or one jump of link_burst or
 * more) are a degrading link: NVLink ramps come before XID 74/145/149,
 * PCIe replay bursts before a GPU falls off the bus. The alert stays
 * active link_hold after the newest hit. Counter decreases reseed. */
#include <stdio.h>
#include "detect_int.h"

void det_d3_rules(struct gw_alerts *a, const struct gw_det_config *c)
{
    struct gw_alert_rule r[] = {
        {"GpuNvlinkErrors", "D3", "NVLink CRC/replay/recovery error counters increasing on several of the last scrapes",
         GW_SEV_WARNING, 0, c->link_hold_ms},
        {"GpuPcieReplays", "D3", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER increasing on several of the last scrapes",
         GW_SEV_WARNING, 0, c->link_hold_ms},
        {"IbPortErrors", "D3", "node_infiniband_* error counters of a port increasing on several of the last scrapes",
         GW_SEV_WARNING, 0, c->link_hold_ms},
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) gw_alerts_add_rule(a, &r[i]);
}

static const char *counter_name(int role)
{
    switch (role) {
    case R_NVL_CRC_FLIT: return "NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL";
    case R_NVL_CRC_DATA: return "NVLINK_CRC_DATA_ERROR_COUNT_TOTAL";
    case R_NVL_REPLAY: return "NVLINK_REPLAY_ERROR_COUNT_TOTAL";
    case R_NVL_RECOVERY: return "NVLINK_RECOVERY_ERROR_COUNT_TOTAL";
    case R_PCIE_REPLAY: return "PCIE_REPLAY_COUNTER";
    default: return "node_infiniband error counter";
    }
}

void det_d3_sample(struct gw_det *d, struct det_series *s, int64_t t, double v)
{
    if (!(v < d->c.sentinel_min) || v != v) return;
    if (s->last_t == INT64_MIN) return;
    double delta = det_counter_delta(s, v);
    s->hits = (uint8_t)((s->hits << 1) | (delta > 0));
    unsigned of = d->c.link_of >= 1 && d->c.link_of <= 8 ? d->c.link_of : 4;
    unsigned hits = (unsigned)__builtin_popcount((unsigned)s->hits & ((1u << of) - 1));
    if (delta <= 0 || (hits < d->c.link_hits && delta < d->c.link_burst)) return;
    const char *name, *cls, *action, *what;
    if (s->role == R_PCIE_REPLAY) {
        name = "GpuPcieReplays";
        cls = "pcie";
        action = "drain_node";
        what = "PCIe link replaying";
    } else if (s->role == R_IB_ERROR) {
        name = "IbPortErrors";
        cls = "network";
        action = "drain_node";
        what = "InfiniBand/RoCE port errors";
    } else {
        name = "GpuNvlinkErrors";
        cls = "nvlink";
        action = "reset_gpu";
        what = "NVLink errors rising";
    }
    char summary[256], ev[384], when[32];
    det_fmt_time(t, when, sizeof when);
    if (s->gpu >= 0) snprintf(summary, sizeof summary, "%s on %s GPU %d", what, d->nodes[s->node].name, s->gpu);
    else snprintf(summary, sizeof summary, "%s on %s", what, d->nodes[s->node].name);
    snprintf(ev, sizeof ev, "%s rose on %u of the last %u scrapes (+%.0f at %s, total %.0f)", counter_name(s->role), hits,
             of, delta, when, v);
    struct gw_alert_spec a = {
        .alertname = name, .severity = GW_SEV_WARNING, .hostname = d->nodes[s->node].name, .gpu = s->gpu,
        .detector = "D3", .cls = cls, .action = action, .summary = summary, .evidence = ev,
        .score = hits >= of ? 0.9 : 0.6, .hold_ms = d->c.link_hold_ms,
    };
    det_raise(d, &a, t, 3);
}
