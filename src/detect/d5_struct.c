/* d5_struct.c - D5: telemetry structure, the "quiet failures".
 *
 * Per node and evaluation, from the buckets in which each GPU, each
 * exporter and the whole fleet delivered samples (by sample time, so the
 * arrival order does not matter):
 *  - GpuVanished: a GPU that reported before is missing from
 *    vanish_intervals (rounded up, at least 2) buckets in which its
 *    sibling GPUs delivered (fell off the bus; XID 79 often never reaches
 *    the metrics); all GPUs gone while the exporter's `up` stays 1 for as
 *    many buckets is one node-level alert. A scrape that arrives in pieces
 *    (remote-write shards) or the first scrape after a gap never looks like
 *    a vanished GPU;
 *  - GpuSentinelValues: two or more of util/power/SM clock/die temperature
 *    at the exporter's sentinel values (>= sentinel_min) on
 *    sentinel_scrapes consecutive evaluations;
 *  - DcgmExporterDown / NodeExporterDown: one exporter of a node not
 *    answering for exporter_down while the other one does;
 *  - DcgmExporterStalled: the DCGM target's scrape_duration_seconds at
 *    three times (and a second more than) its usual value for a minute
 *    (and 2 evaluations): DCGM's calls time out on a hung GPU or driver,
 *    also on an idle GPU whose readings show nothing;
 *  - NodeSilent: neither exporter answering for silent_intervals (at
 *    most 3 minutes' worth, at least 4 intervals) while
 *    the rest of the fleet's data keeps arriving (a gap of the whole
 *    pipeline silences nobody).
 * A target "answers" in a bucket with an `up` == 1 sample or a data
 * sample. Each node is judged by its own scrape interval when it is
 * slower than the fleet's.
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
        {"DcgmExporterStalled", "D5", "the DCGM exporter's scrape_duration_seconds at three times its usual value (and 1 s more)",
         GW_SEV_WARNING, 0, 0},
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) gw_alerts_add_rule(a, &r[i]);
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

static int64_t ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* How long a node must be silent: silent_intervals of its own interval,
 * but no more than 3 minutes' worth at slow scrapes (a machine that is
 * down is a page, not a trend) and never fewer than 4 intervals (a scrape
 * gap of 1-3 missed scrapes is routine and must stay quiet). */
static int64_t det_silent_ms(const struct gw_det *d, int64_t niv)
{
    double ms = d->c.silent_intervals * (double)niv;
    if (ms > 180000.0) ms = 180000.0;
    if (ms < 4.0 * (double)niv) ms = 4.0 * (double)niv;
    return (int64_t)ms;
}

/* Buckets in (b - n, b] where p is set. */
static unsigned count_set(const struct det_pres *p, int64_t b, unsigned n)
{
    unsigned c = 0;
    for (unsigned i = 0; i < n; i++) c += (unsigned)det_pres_has(p, b - (int64_t)i);
    return c;
}

/* Buckets in which `has` is set and `lacks` is not, counted back from b
 * until a bucket where both are set or the ring ends. */
static unsigned missing_run(const struct det_pres *has, const struct det_pres *lacks, int64_t b)
{
    unsigned c = 0;
    for (int64_t i = 0; i < 63; i++) {
        if (!det_pres_has(has, b - i)) continue;
        if (det_pres_has(lacks, b - i)) break;
        c++;
    }
    return c;
}

void det_d5_eval(struct gw_det *d, int64_t T)
{
    char summary[256], ev[384], when[32];
    int64_t iv = det_interval(d), b = det_bucket_of(d, T - 1);
    for (uint32_t i = 0; i < d->n_nodes; i++) {
        struct det_node *n = &d->nodes[i];
        /* judged once its own interval is known (two scrapes seen) */
        if (!det_node_live(n) || !det_node_interval_known(d, n)) continue;
        int64_t niv = det_node_interval(d, n);
        /* silent: no answer for silent_intervals of its own interval, while
         * the pipeline kept delivering (a fleet-wide gap is no node's fault) */
        unsigned need_s = (unsigned)ceil_div(det_silent_ms(d, niv), iv);
        if (need_s < 1) need_s = 1;
        int silent = 0;
        int64_t last = n->last_answer[0] > n->last_answer[1] ? n->last_answer[0] : n->last_answer[1];
        if (last != INT64_MIN && n->first_seen <= T - (int64_t)need_s * iv) {
            if (need_s <= 63)
                silent = count_set(&n->answered[0], b, need_s) + count_set(&n->answered[1], b, need_s) == 0 &&
                         count_set(&d->k.pres_any, b, need_s) == need_s;
            else
                silent = last < T - (int64_t)need_s * iv;
        }
        if (silent) {
            det_fmt_time(last, when, sizeof when);
            snprintf(summary, sizeof summary, "%s is silent: no exporter answers", n->name);
            snprintf(ev, sizeof ev, "no data from the node's exporters since %s (%lld s) while the rest of the fleet reports",
                     when, (long long)((T - last) / 1000));
            raise5(d, "NodeSilent", GW_SEV_CRITICAL, n, -1, "other_hw", "reboot_node", summary, ev, T);
            continue;
        }
        /* the DCGM exporter struggles to read the GPUs (a hung GSP or driver
         * makes DCGM's calls time out): scrapes three times slower than usual */
        {
            double now = 0, usual = 0;
            int slow = det_scrape_slow(d, n, T, &now, &usual);
            n->stall_streak = slow ? (uint8_t)(n->stall_streak < 255 ? n->stall_streak + 1 : 255) : 0;
            unsigned need_stall = (unsigned)ceil_div(60000, iv);
            if (n->stall_streak >= (need_stall > 2 ? need_stall : 2)) {
                snprintf(summary, sizeof summary, "the DCGM exporter on %s stalls: a GPU or its driver may be hung", n->name);
                snprintf(ev, sizeof ev, "scrape_duration_seconds %.2f s against %.2f s usually, for %u evaluations", now,
                         usual, n->stall_streak);
                raise5(d, "DcgmExporterStalled", GW_SEV_WARNING, n, -1, "gsp", "drain_node", summary, ev, T);
            }
        }
        /* one exporter down while the other answers */
        unsigned need_d = (unsigned)ceil_div(d->c.exporter_down_ms, iv), recent = (unsigned)ceil_div(2 * niv, iv);
        for (int j = 0; j < 2; j++) {
            if (n->last_answer[j] == INT64_MIN || n->last_answer[!j] == INT64_MIN) continue;
            int down = need_d <= 63 ? count_set(&n->answered[j], b, need_d) == 0 && n->first_seen <= T - (int64_t)need_d * iv
                                    : n->last_answer[j] < T - d->c.exporter_down_ms;
            if (!down || count_set(&n->answered[!j], b, recent) == 0) continue;
            det_fmt_time(n->last_answer[j], when, sizeof when);
            if (j == 0) {
                snprintf(summary, sizeof summary, "the DCGM exporter on %s does not answer", n->name);
                snprintf(ev, sizeof ev, "no DCGM data or up == 1 since %s while node_exporter answers", when);
                raise5(d, "DcgmExporterDown", GW_SEV_WARNING, n, -1, "telemetry", "none", summary, ev, T);
            } else {
                snprintf(summary, sizeof summary, "node_exporter on %s does not answer", n->name);
                snprintf(ev, sizeof ev, "no node_exporter data or up == 1 since %s while the DCGM exporter answers", when);
                raise5(d, "NodeExporterDown", GW_SEV_WARNING, n, -1, "telemetry", "none", summary, ev, T);
            }
        }
        /* GPUs: sentinels; vanished = missing from the DCGM scrapes that
         * brought its siblings (buckets by sample time, so a scrape still
         * arriving in pieces or the first one after a gap is no vanish) */
        /* vanish_intervals scrapes, but no more than 2 minutes' worth at slow scrapes */
        double vi = d->c.vanish_intervals;
        if (vi * (double)niv > 120000.0) vi = 120000.0 / (double)niv;
        uint32_t need = vi > 2 ? (uint32_t)(vi + 0.999) : 2;
        unsigned known = 0, missing = 0;
        for (unsigned g = 0; g < n->gpu_count; g++) {
            struct det_gpu *x = &n->gpus[g];
            if (x->first_seen == INT64_MIN) continue;
            known++;
            if (missing_run(&n->any_gpu, &x->pres, b) >= need) missing++;
            const uint32_t f[4] = {x->slot[G_UTIL], x->slot[G_POWER], x->slot[G_CLOCK], x->slot[G_TEMP]};
            unsigned sent = 0;
            double v;
            for (int k = 0; k < 4; k++) sent += det_at(d, f[k], T, &v) && v >= d->c.sentinel_min;
            x->sentinel_streak = sent >= 2 ? (uint8_t)(x->sentinel_streak < 255 ? x->sentinel_streak + 1 : 255) : 0;
            if (x->sentinel_streak >= d->c.sentinel_scrapes) {
                snprintf(summary, sizeof summary, "%s GPU %u returns sentinel values: the GPU is unreachable", n->name, g);
                snprintf(ev, sizeof ev, "%u of util/power/clock/temperature at sentinel values (>= %.3g) for %u evaluations",
                         sent, d->c.sentinel_min, x->sentinel_streak);
                raise5(d, "GpuSentinelValues", GW_SEV_CRITICAL, n, (int)g, "fell_off_bus", "reboot_node", summary, ev, T);
            }
        }
        unsigned all_gone = missing_run(&n->answered[0], &n->any_gpu, b);
        if (known > 1 && all_gone >= need && count_set(&n->up_seen[0], b, 1)) {
            det_fmt_time(n->last_answer[0], when, sizeof when);
            snprintf(summary, sizeof summary, "all %u GPUs of %s vanished while its DCGM exporter answers", known, n->name);
            snprintf(ev, sizeof ev, "no GPU series over the last %u DCGM scrapes with up == 1", all_gone);
            raise5(d, "GpuVanished", GW_SEV_CRITICAL, n, -1, "fell_off_bus", "reboot_node", summary, ev, T);
            continue;
        }
        if (!missing || missing == known) continue;
        for (unsigned g = 0; g < n->gpu_count; g++) {
            struct det_gpu *x = &n->gpus[g];
            if (x->first_seen == INT64_MIN) continue;
            unsigned run = missing_run(&n->any_gpu, &x->pres, b);
            if (run < need) continue;
            det_fmt_time(x->last_seen, when, sizeof when);
            snprintf(summary, sizeof summary, "%s GPU %u vanished (fell off the bus?)", n->name, g);
            snprintf(ev, sizeof ev, "GPU %u's series stopped at %s; %u other GPUs kept reporting for %u scrapes", g, when,
                     known - missing, run);
            raise5(d, "GpuVanished", GW_SEV_CRITICAL, n, (int)g, "fell_off_bus", "reboot_node", summary, ev, T);
        }
    }
}
