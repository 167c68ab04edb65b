/* d5_struct.c - D5: telemetry structure, the "quiet failures".
 *
 * Per node and evaluation:
 *  - GpuVanished: a GPU that reported before is missing from
 *    vanish_intervals (rounded up, at least 2) DCGM scrapes that its
 *    sibling GPUs delivered (fell off the bus; XID 79 often never reaches
 *    the metrics); all GPUs gone while the exporter's `up` stays 1 for as
 *    many scrapes is one node-level alert. Counting scrapes instead of
 *    time keeps a scrape that arrives in pieces (remote-write shards) or
 *    the first scrape after a gap from looking like a vanished GPU;
 *  - GpuSentinelValues: two or more of util/power/SM clock/die temperature
 *    at the exporter's sentinel values (>= sentinel_min) on
 *    sentinel_scrapes consecutive evaluations;
 *  - DcgmExporterDown / NodeExporterDown: one exporter of a node not
 *    answering for exporter_down while the other one does;
 *  - NodeSilent: neither exporter answering for silent_intervals.
 * A target "answers" at its newest `up` == 1 sample or data sample. Each
 * node is judged by its own scrape interval when it is slower than the
 * fleet's.
 * Brief scrape gaps and exporter restarts (tens of seconds) stay below
 * every threshold. */
#include <stdio.h>
#include "detect_int.h"

void det_d5_rules(struct gw_alerts *a, const struct gw_det_config *c)
{
    (void)c;
    struct gw_alert_rule r[] = {
        {"GpuVanished", "D5", "a GPU's DCGM series stop while its exporter keeps answering", GW_SEV_CRITICAL, 0, 0},
        {"GpuSentinelValues", "D5", "DCGM fields of a GPU at the exporter's sentinel values", GW_SEV_CRITICAL, 0, 0},
        {"DcgmExporterDown", "D5", "the DCGM exporter of a node not answering while node_exporter does",
         GW_SEV_WARNING, 0, 0},
        {"NodeExporterDown", "D5", "node_exporter of a node not answering while the DCGM exporter does",
         GW_SEV_WARNING, 0, 0},
        {"NodeSilent", "D5", "neither exporter of a node answering", GW_SEV_CRITICAL, 0, 0},
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) gw_alerts_add_rule(a, &r[i]);
}

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

static void raise5(struct gw_det *d, const char *name, enum gw_severity sev, const struct det_node *n, int gpu,
                   const char *cls, const char *action, const char *summary, const char *ev, int64_t t)
{
    struct gw_alert_spec a = {
        .alertname = name, .severity = sev, .hostname = n->name, .gpu = gpu, .detector = "D5", .cls = cls,
        .action = action, .summary = summary, .evidence = ev, .score = 0.9, .hold_ms = 3 * det_interval(d),
    };
    det_raise(d, &a, t, 5);
}

/* The fleet's "now" for silence: the 90th percentile of the nodes' newest
 * answer, so one sender with timestamps ahead of the others cannot make
 * the whole fleet look silent. */
static int64_t fleet_now(struct gw_det *d, int64_t t)
{
    size_t n = 0;
    if (d->scratch_cap < d->n_nodes) return t;
    for (uint32_t i = 0; i < d->n_nodes; i++) {
        const struct det_node *x = &d->nodes[i];
        int64_t a = max64(max64(x->up_ok_t[0], x->last_dcgm), max64(x->up_ok_t[1], x->last_node));
        if (a != INT64_MIN && t - a < 86400000) d->scratch[n++] = (double)a;
    }
    if (n == 0) return t;
    det_median(d->scratch, n);   /* sorts */
    int64_t p90 = (int64_t)d->scratch[(n - 1) * 9 / 10];
    return p90 < t ? p90 : t;
}

void det_d5_eval(struct gw_det *d, int64_t t_eval)
{
    char summary[256], ev[384], when[32];
    int64_t t = fleet_now(d, t_eval);
    for (uint32_t i = 0; i < d->n_nodes; i++) {
        struct det_node *n = &d->nodes[i];
        /* judged only once its own interval is known (two scrapes seen) */
        if (n->first_seen == INT64_MIN || (d->c.interval_ms <= 0 && n->iv_est <= 0)) continue;
        int64_t iv = det_node_interval(d, n);
        int64_t ok_dcgm = max64(n->up_ok_t[0], n->last_dcgm), ok_node = max64(n->up_ok_t[1], n->last_node);
        int has_dcgm = ok_dcgm != INT64_MIN, has_node = ok_node != INT64_MIN;
        int64_t down_dcgm = has_dcgm ? t - ok_dcgm : 0, down_node = has_node ? t - ok_node : 0;
        int64_t silent_ms = (int64_t)(d->c.silent_intervals * (double)iv);
        /* node silent */
        if ((!has_dcgm || down_dcgm >= silent_ms) && (!has_node || down_node >= silent_ms) && (has_dcgm || has_node)) {
            int64_t last = max64(ok_dcgm, ok_node);
            det_fmt_time(last, when, sizeof when);
            snprintf(summary, sizeof summary, "%s is silent: no exporter answers", n->name);
            snprintf(ev, sizeof ev, "no data from the node's exporters since %s (%lld s)", when,
                     (long long)((t - last) / 1000));
            raise5(d, "NodeSilent", GW_SEV_CRITICAL, n, -1, "other_hw", "reboot_node", summary, ev, t);
            continue;
        }
        /* one exporter down */
        if (has_dcgm && has_node && down_dcgm >= d->c.exporter_down_ms && down_node < 2 * iv) {
            det_fmt_time(ok_dcgm, when, sizeof when);
            snprintf(summary, sizeof summary, "the DCGM exporter on %s does not answer", n->name);
            snprintf(ev, sizeof ev, "no DCGM data or up == 1 since %s while node_exporter answers", when);
            raise5(d, "DcgmExporterDown", GW_SEV_WARNING, n, -1, "telemetry", "none", summary, ev, t);
        }
        if (has_dcgm && has_node && down_node >= d->c.exporter_down_ms && down_dcgm < 2 * iv) {
            det_fmt_time(ok_node, when, sizeof when);
            snprintf(summary, sizeof summary, "node_exporter on %s does not answer", n->name);
            snprintf(ev, sizeof ev, "no node_exporter data or up == 1 since %s while the DCGM exporter answers", when);
            raise5(d, "NodeExporterDown", GW_SEV_WARNING, n, -1, "telemetry", "none", summary, ev, t);
        }
        /* GPUs: sentinels; vanished = missing from the DCGM scrapes its siblings keep delivering
         * (counted in scrapes, not time, so a scrape still arriving in pieces or the first one
         * after a gap never looks like a vanished GPU) */
        uint32_t need = d->c.vanish_intervals > 2 ? (uint32_t)(d->c.vanish_intervals + 0.999) : 2;
        unsigned known = 0, missing = 0;
        for (unsigned g = 0; g < n->gpu_count; g++) {
            struct det_gpu *x = &n->gpus[g];
            if (x->first_seen == INT64_MIN) continue;
            known++;
            if (n->dcgm_scrapes - x->scrape_no >= need) missing++;
            const struct det_val *f[4] = {&x->util, &x->power, &x->clock, &x->temp};
            unsigned sent = 0;
            for (int k = 0; k < 4; k++) sent += det_fresh(f[k], t, iv) && f[k]->v >= d->c.sentinel_min;
            x->sentinel_streak = sent >= 2 ? (uint8_t)(x->sentinel_streak < 255 ? x->sentinel_streak + 1 : 255) : 0;
            if (x->sentinel_streak >= d->c.sentinel_scrapes) {
                snprintf(summary, sizeof summary, "%s GPU %u returns sentinel values: the GPU is unreachable", n->name, g);
                snprintf(ev, sizeof ev, "%u of util/power/clock/temperature at sentinel values (>= %.3g) for %u evaluations",
                         sent, d->c.sentinel_min, x->sentinel_streak);
                raise5(d, "GpuSentinelValues", GW_SEV_CRITICAL, n, (int)g, "fell_off_bus", "reboot_node", summary, ev, t);
            }
        }
        if (known > 1 && n->up_without_gpu >= need) {
            det_fmt_time(n->last_dcgm, when, sizeof when);
            snprintf(summary, sizeof summary, "all %u GPUs of %s vanished while its DCGM exporter answers", known, n->name);
            snprintf(ev, sizeof ev, "no GPU series since %s over %u scrapes with up == 1", when, n->up_without_gpu);
            raise5(d, "GpuVanished", GW_SEV_CRITICAL, n, -1, "fell_off_bus", "reboot_node", summary, ev, t);
            continue;
        }
        if (!missing || missing == known) continue;
        for (unsigned g = 0; g < n->gpu_count; g++) {
            struct det_gpu *x = &n->gpus[g];
            if (x->first_seen == INT64_MIN || n->dcgm_scrapes - x->scrape_no < need) continue;
            det_fmt_time(x->last_seen, when, sizeof when);
            snprintf(summary, sizeof summary, "%s GPU %u vanished (fell off the bus?)", n->name, g);
            snprintf(ev, sizeof ev, "GPU %u's series stopped at %s; %u other GPUs kept reporting for %u scrapes", g, when,
                     known - missing, n->dcgm_scrapes - x->scrape_no);
            raise5(d, "GpuVanished", GW_SEV_CRITICAL, n, (int)g, "fell_off_bus", "reboot_node", summary, ev, t);
        }
    }
}
