/* d4_peer.c - D4: multi-signal collapse against the node's own past and
 * its peers.
 *
 * GpuFrozen (a GSP hang, XID 119/120, which reaches the exporter minutes
 * later or never): in a bucket, the GPU draws less than
 * frozen_power_ratio of its busy sibling GPUs' median power (without busy
 * siblings: its own busy baseline, else the fleet's busy median) while
 * its readings claim work (util
 * >= 50 % or an SM clock at the siblings' level) and at least two of them
 * (util, SM and memory clocks, die and HBM temperature, FB used) repeat
 * bit-identically on frozen_same samples although the same reading of a
 * sibling changed meanwhile; or it reports >= frozen_util utilisation
 * with one frozen reading or the DCGM scrape taking three times its usual
 * duration, or at an SM clock below frozen_clock_ratio of the siblings'.
 * Without busy siblings (the job died with the hang): util >= frozen_util
 * at below frozen_power_ratio of its own busy power, with idle clocks, two
 * frozen readings or a slow scrape.
 * Whatever the power (an idle GPU has none to lose): its die and HBM
 * temperatures frozen (they drift on a live GPU even when idle) while the
 * DCGM scrape takes three times its usual duration, on at most two GPUs
 * of the node. frozen_buckets
 * such buckets in a row fire. An idle GPU next to busy siblings repeats
 * its readings too, but they claim no work and its scrape is not slow.
 * A checkpoint or a job stop moves every GPU of the node together, so the
 * siblings' median moves with it: nothing is "idle against its siblings".
 *
 * NodeActivityCollapse (the OS of one node stops making progress while
 * the rest of the session trains on): against the node's own baseline
 * (slow averages over buckets in which it trained) and the busy nodes'
 * medians, its interrupt rate (I), runnable processes (P) and mean GPU
 * util (G) fall below collapse_ratio. Fires on I and P while its GPUs
 * still look busy (the report's gpu071), or on I together with G while
 * its GPUs keep their memory allocated (FB used at >= half its baseline:
 * the training processes did not exit, so this is no job end), for
 * collapse_buckets buckets, with at least min_peers other nodes still busy
 * and no fleet-wide transition under way (job start/stop).
 *
 * Both are suppressed in a bucket where more than 10 % of the nodes (of
 * the busy nodes), and more than two, hit at once: one failure takes one
 * GPU or one node, a staggered fleet-wide phase takes many.
 *
 * On an idle node (no job: GPU util < 10 %) its interrupt rate and runnable
 * processes are judged against its own idle level and the idle nodes'
 * median interrupt rate instead: both below collapse_ratio.
 *
 * NodeMemoryPressure (often the first sign of such a collapse): host
 * MemAvailable below mem_avail_ratio of MemTotal, or more than swap_rate
 * pages swapped out per second, for mempress_buckets buckets. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "detect_int.h"

void det_d4_rules(struct gw_alerts *a, const struct gw_det_config *c)
{
    (void)c;
    struct gw_alert_rule r[] = {
        {"GpuFrozen", "D4", "a GPU at idle power against its busy siblings while its readings repeat unchanged (or it reports busy at idle clocks)",
         GW_SEV_CRITICAL, 0, 0},
        {"NodeActivityCollapse", "D4", "a training node's interrupt rate, runnable processes and GPU util collapse against its own past and the busy nodes' medians",
         GW_SEV_WARNING, 0, 0},
        {"NodeMemoryPressure", "D4", "node_memory_MemAvailable_bytes below its share of MemTotal, or swapping out",
         GW_SEV_WARNING, 0, 0},
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) gw_alerts_add_rule(a, &r[i]);
}

static const char *const k_fields[] = {"util", "SM clock", "memory clock", "temperature", "HBM temperature", "FB used"};
static const int k_field_slot[] = {G_UTIL, G_CLOCK, G_MCLOCK, G_TEMP, G_MEMTEMP, G_FB};
#define N_FIELDS 6
#define MAX_SAME 8   /* <= DET_RING - 4: samples a series may be ahead of T */

static int same_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/* 1 when the newest n values of a slot before T are bit-identical. */
static int unchanged(const struct gw_det *d, uint32_t slot, int64_t T, unsigned n)
{
    double v[MAX_SAME];
    if (n > MAX_SAME) n = MAX_SAME;
    if (det_recent(d, slot, T, v, n, NULL) < n) return 0;
    for (unsigned i = 1; i < n; i++)
        if (!same_bits(v[i], v[0])) return 0;
    return 1;
}

static int changed(const struct gw_det *d, uint32_t slot, int64_t T, unsigned n)
{
    double v[MAX_SAME];
    if (n > MAX_SAME) n = MAX_SAME;
    unsigned got = det_recent(d, slot, T, v, n, NULL);
    for (unsigned i = 1; i < got; i++)
        if (!same_bits(v[i], v[0])) return 1;
    return 0;
}

/* Readings of GPU g unchanged on `same` samples while the same reading of
 * a sibling changed: a bit per field of k_fields; their names into which. */
static unsigned frozen_fields(const struct gw_det *d, const struct det_node *n, unsigned g, int64_t T, unsigned same,
                              char *which, size_t cap)
{
    unsigned mask = 0;
    if (cap) which[0] = 0;
    for (int f = 0; f < N_FIELDS; f++) {
        if (!unchanged(d, n->gpus[g].slot[k_field_slot[f]], T, same)) continue;
        int sib = 0;
        for (unsigned o = 0; o < n->gpu_count && !sib; o++)
            if (o != g) sib = changed(d, n->gpus[o].slot[k_field_slot[f]], T, same);
        if (!sib) continue;
        mask |= 1u << f;
        size_t l = strlen(which);
        if (l < cap) snprintf(which + l, cap - l, "%s%s", l ? ", " : "", k_fields[f]);
    }
    return mask;
}

#define F_TEMP (1u << 3)
#define F_MEMTEMP (1u << 4)

/* The temperatures stand still: analog readings that drift on a live GPU
 * even when it idles (util, clocks and memory of an idle GPU do not). */
static int temps_frozen(const struct det_gpu *x, unsigned mask)
{
    return (mask & F_TEMP) && (!x->slot[G_MEMTEMP] || (mask & F_MEMTEMP));
}


static double slow_avg(double base, double x, double w)
{
    return base > 0 ? (1 - w) * base + w * x : x;
}

/* pass 0 counts hits (no state changes); pass 1 applies them, with every
 * hit suppressed when too many GPUs or nodes hit at once (a fleet-wide
 * phase - a checkpoint, a job step - seen staggered, not one failure). */
static unsigned frozen_gpus(struct gw_det *d, struct det_node *n, int64_t T, double *scratch, int pass, int suppress)
{
    unsigned hits = 0;
    /* frozen_same samples spanning at least a minute, and frozen_buckets
     * evaluations spanning at least a minute: at 15 s scrapes integer
     * readings stand still for 30 s often enough */
    int64_t iv = det_interval(d);
    unsigned same = d->c.frozen_same >= 2 ? d->c.frozen_same : 2;
    if ((unsigned)(60000 / iv) + 1 > same) same = (unsigned)(60000 / iv) + 1;
    if (same > MAX_SAME) same = MAX_SAME;
    unsigned need_buckets = d->c.frozen_buckets;
    if ((unsigned)((60000 + iv - 1) / iv) > need_buckets) need_buckets = (unsigned)((60000 + iv - 1) / iv);
    /* a slow scrape is the node's: it points at a GPU only when one or two
     * GPUs of the node stand still */
    double sd_now, sd_usual;
    int slow_scrape = det_scrape_slow(d, n, T, &sd_now, &sd_usual);
    char which_g[DET_MAX_GPUS][96];
    unsigned fm[DET_MAX_GPUS], still = 0;
    for (unsigned g = 0; g < n->gpu_count; g++) {
        fm[g] = frozen_fields(d, n, g, T, same, which_g[g], sizeof which_g[g]);
        still += (unsigned)temps_frozen(&n->gpus[g], fm[g]);
    }
    for (unsigned g = 0; g < n->gpu_count; g++) {
        struct det_gpu *x = &n->gpus[g];
        double p, u = 0, c;
        int hp = det_at(d, x->slot[G_POWER], T, &p) && p < d->c.sentinel_min;
        int hu = det_at(d, x->slot[G_UTIL], T, &u) && u < d->c.sentinel_min;
        if (!hp) {
            if (pass) x->frozen_streak = 0;
            continue;
        }
        /* busy siblings' median power and SM clock */
        size_t np = 0, nc = 0;
        double *pw = scratch, *ck = scratch + DET_MAX_GPUS;
        for (unsigned o = 0; o < n->gpu_count; o++) {
            if (o == g) continue;
            struct det_gpu *y = &n->gpus[o];
            double ou, ov;
            if (!det_at(d, y->slot[G_UTIL], T, &ou) || ou < 50 || ou >= d->c.sentinel_min) continue;
            if (det_at(d, y->slot[G_POWER], T, &ov) && ov < d->c.sentinel_min) pw[np++] = ov;
            if (det_at(d, y->slot[G_CLOCK], T, &ov) && ov < d->c.sentinel_min) ck[nc++] = ov;
        }
        double ref_p = np >= 2 ? det_median(pw, np) : NAN, ref_c = nc >= 2 ? det_median(ck, nc) : NAN;
        /* no busy siblings (the job died with the hang, or a single-GPU
         * node): this GPU's own busy power, else the fleet's busy GPUs */
        int from_siblings = ref_p == ref_p;
        if (ref_p != ref_p) ref_p = x->base_power > 0 ? x->base_power : d->med_power == d->med_power ? d->med_power : d->k.ref_power > 0 ? d->k.ref_power : NAN;
        if (ref_c != ref_c) ref_c = d->med_clock == d->med_clock ? d->med_clock : d->k.ref_clock > 0 ? d->k.ref_clock : NAN;
        int low_power = ref_p == ref_p && ref_p > 0 && p < d->c.frozen_power_ratio * ref_p;
        if (pass && hu && u >= 50 && !low_power) x->base_power = slow_avg(x->base_power, p, 0.05);
        unsigned frozen = (unsigned)__builtin_popcount(fm[g]);
        const char *which = which_g[g];
        int busy_util = hu && u >= d->c.frozen_util;
        int idle_clock = det_at(d, x->slot[G_CLOCK], T, &c) && ref_c == ref_c && c < d->c.frozen_clock_ratio * ref_c;
        /* the frozen readings must claim work the power does not show: an
         * idle GPU next to busy siblings repeats its idle readings too */
        int hc = det_at(d, x->slot[G_CLOCK], T, &c) && c < d->c.sentinel_min;
        int claims = (hu && u >= 50) || (hc && ref_c == ref_c && c >= 0.8 * ref_c);
        /* against its own or the fleet's past (no busy sibling to compare
         * with): only the full picture - busy util at idle clocks with a
         * frozen reading */
        int hit = low_power && (from_siblings ? claims && (frozen >= 2 || (frozen >= 1 && (busy_util || slow_scrape)) ||
                                                           (busy_util && idle_clock))
                                              : busy_util && (idle_clock || frozen >= 2 || slow_scrape));
        /* an idle GPU has no power to lose: its temperatures standing still
         * while its siblings' drift and the exporter struggles to read it */
        hit |= temps_frozen(x, fm[g]) && slow_scrape && still <= 2;
        hits += (unsigned)hit;
        if (!pass) continue;
        hit &= !suppress;
        x->frozen_streak = hit ? (uint8_t)(x->frozen_streak < 255 ? x->frozen_streak + 1 : 255) : 0;
        if (x->frozen_streak < need_buckets) continue;
        char summary[256], ev[384];
        snprintf(summary, sizeof summary, "%s GPU %u looks frozen (GSP hang?): idle power while its readings stand still",
                 n->name, g);
        snprintf(ev, sizeof ev,
                 "POWER_USAGE %.0f W vs busy siblings' median %.0f W; unchanged on %u samples: %.95s; GPU_UTIL %.0f %%%s%s "
                 "for %u evaluations",
                 p, ref_p, same, frozen ? which : "none", u, idle_clock ? ", SM clock at idle" : "",
                 slow_scrape ? ", DCGM scrape slow" : "", x->frozen_streak);
        struct gw_alert_spec a = {
            .alertname = "GpuFrozen", .severity = GW_SEV_CRITICAL, .hostname = n->name, .gpu = (int)g,
            .detector = "D4", .cls = "gsp", .action = "reset_gpu", .summary = summary, .evidence = ev,
            .score = frozen >= 2 ? 0.9 : 0.7, .hold_ms = 3 * det_interval(d),
        };
        det_raise(d, &a, T, 4);
    }
    return hits;
}

/* Node mean GPU util and FB used at T (NAN when unknown). */
static void node_gpu_means(const struct gw_det *d, const struct det_node *n, int64_t T, double *util, double *fb)
{
    double us = 0, fs = 0, v;
    unsigned un = 0, fn = 0;
    for (unsigned g = 0; g < n->gpu_count; g++) {
        const struct det_gpu *x = &n->gpus[g];
        if (det_at(d, x->slot[G_UTIL], T, &v) && v < d->c.sentinel_min) {
            us += v;
            un++;
        }
        if (det_at(d, x->slot[G_FB], T, &v) && v < d->c.sentinel_min) {
            fs += v;
            fn++;
        }
    }
    *util = un ? us / un : NAN;
    *fb = fn ? fs / fn : NAN;
}

static int collapse(struct gw_det *d, struct det_node *n, int64_t T, int masked, int pass, int suppress)
{
    double intr, procs, util, fb;
    int hi = det_at(d, n->slot[N_INTR], T, &intr), hpr = det_at(d, n->slot[N_PROCS], T, &procs);
    node_gpu_means(d, n, T, &util, &fb);
    double r = d->c.collapse_ratio;
    /* the session keeps running elsewhere: enough other nodes busy */
    uint32_t others_busy = d->n_busy_nodes - (n->busy ? 1 : 0);
    int peers = others_busy >= d->c.min_peers && !masked;
    int trained = n->base_util >= 50 && n->base_intr > 0;
    int I = hi && trained && intr < r * n->base_intr && (d->med_intr != d->med_intr || intr < r * d->med_intr);
    int P = hpr && n->base_procs >= 2 && procs < r * n->base_procs &&
            (d->med_procs != d->med_procs || procs < r * d->med_procs);
    int G = util == util && trained && util < r * n->base_util && (d->med_util != d->med_util || util < r * d->med_util);
    int fb_held = fb != fb || n->base_fb <= 0 || fb >= 0.5 * n->base_fb;
    int gpus_busy = util == util && util >= 50;
    int hit = peers && trained && I && ((P && gpus_busy && !G) || (G && fb_held));
    /* an idle node (no job) has its own quiet level: its interrupt rate and
     * runnable processes collapse against that and against the idle nodes */
    int idle = !n->busy && util == util && util < 10;
    int Ii = idle && hi && n->idle_intr > 0 && intr < r * n->idle_intr &&
             (d->med_intr_idle != d->med_intr_idle || intr < r * d->med_intr_idle);
    int Pi = idle && hpr && n->idle_procs >= 1 && procs < r * n->idle_procs;
    hit |= !masked && Ii && Pi;
    if (!pass) return hit;
    int raw = hit;
    hit &= !suppress;
    n->collapse_streak = hit ? (uint8_t)(n->collapse_streak < 255 ? n->collapse_streak + 1 : 255) : 0;
    /* baselines learn only from plain training buckets */
    if (!raw && !masked && n->busy && util == util && util >= 50) {
        n->base_util = slow_avg(n->base_util, util, 0.05);
        if (hi) n->base_intr = slow_avg(n->base_intr, intr, 0.05);
        if (hpr) n->base_procs = slow_avg(n->base_procs, procs, 0.05);
        if (fb == fb) n->base_fb = slow_avg(n->base_fb, fb, 0.05);
    }
    if (!raw && !masked && idle) {
        if (hi) n->idle_intr = slow_avg(n->idle_intr, intr, 0.05);
        if (hpr) n->idle_procs = slow_avg(n->idle_procs, procs, 0.05);
    }
    if (n->collapse_streak < d->c.collapse_buckets) return hit;
    char summary[256], ev[400];
    if (idle)
        snprintf(summary, sizeof summary, "%s: the OS stopped making progress (the node idles, its interrupts and processes fell)", n->name);
    else
        snprintf(summary, sizeof summary, "%s: the OS stopped making progress while the rest of the session trains", n->name);
    snprintf(ev, sizeof ev,
             "interrupts %.0f/s (own baseline %.0f/s, peers' median %.0f/s), procs_running %.0f (baseline %.0f), "
             "GPU util %.0f %% (baseline %.0f %%)%s; %u other nodes busy; for %u evaluations",
             hi ? intr : -1.0, idle ? n->idle_intr : n->base_intr, idle ? d->med_intr_idle : d->med_intr,
             hpr ? procs : -1.0, idle ? n->idle_procs : n->base_procs, util, n->base_util,
             fb == fb && fb_held ? ", GPU memory still allocated" : "", others_busy, n->collapse_streak);
    struct gw_alert_spec a = {
        .alertname = "NodeActivityCollapse", .severity = GW_SEV_WARNING, .hostname = n->name, .gpu = -1,
        .detector = "D4", .cls = "other_hw", .action = "drain_node", .summary = summary, .evidence = ev,
        .score = (I + P + G) >= 3 ? 0.9 : 0.7, .hold_ms = 3 * det_interval(d),
    };
    det_raise(d, &a, T, 4);
    return hit;
}

static void memory_pressure(struct gw_det *d, struct det_node *n, int64_t T)
{
    double avail, total, swap = 0;
    int ha = det_at(d, n->slot[N_MEMAVAIL], T, &avail) && det_at(d, n->slot[N_MEMTOTAL], T, &total) && total > 0;
    int hs = det_at(d, n->slot[N_PSWPOUT], T, &swap);
    int low = ha && avail < d->c.mem_avail_ratio * total;
    int swapping = hs && swap > d->c.swap_rate;
    n->mempress_streak = (low || swapping) ? (uint8_t)(n->mempress_streak < 255 ? n->mempress_streak + 1 : 255) : 0;
    if (n->mempress_streak < d->c.mempress_buckets) return;
    char summary[256], ev[300];
    snprintf(summary, sizeof summary, "%s is running out of host memory", n->name);
    snprintf(ev, sizeof ev, "MemAvailable %.1f %% of MemTotal (band %.1f %%), swap-out %.0f pages/s for %u evaluations",
             ha ? 100.0 * avail / total : -1.0, 100.0 * d->c.mem_avail_ratio, swap, n->mempress_streak);
    struct gw_alert_spec a = {
        .alertname = "NodeMemoryPressure", .severity = GW_SEV_WARNING, .hostname = n->name, .gpu = -1,
        .detector = "D4", .cls = "other_hw", .action = "drain_node", .summary = summary, .evidence = ev,
        .score = 0.6, .hold_ms = 10 * det_interval(d),
    };
    det_raise(d, &a, T, 4);
}

void det_d4_eval(struct gw_det *d, int64_t T)
{
    int masked = T < d->k.mask_until;
    double scratch[2 * DET_MAX_GPUS];
    unsigned frozen = 0, collapsed = 0, live = 0;   /* nodes with a frozen GPU / a collapse */
    for (uint32_t i = 0; i < d->n_nodes; i++) {
        struct det_node *n = &d->nodes[i];
        if (!det_node_live(n)) continue;
        live++;
        frozen += frozen_gpus(d, n, T, scratch, 0, 0) > 0;
        collapsed += (unsigned)collapse(d, n, T, masked, 0, 0);
    }
    /* one failure hits one GPU or one node; a share of the fleet at once is a phase */
    int frozen_wide = frozen > 2 && frozen > live / 10;
    int collapse_wide = collapsed > 2 && collapsed > d->n_busy_nodes / 10;
    for (uint32_t i = 0; i < d->n_nodes; i++) {
        struct det_node *n = &d->nodes[i];
        if (!det_node_live(n)) continue;
        frozen_gpus(d, n, T, scratch, 1, frozen_wide);
        collapse(d, n, T, masked, 1, collapse_wide);
        memory_pressure(d, n, T);
    }
}
