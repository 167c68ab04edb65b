/* timeline.c - the simulator's timeline: what happens when in the
 * simulated cluster (sessions and retry chains, checkpoint saves and
 * loads, hardware failures with optional precursors, app-level XIDs,
 * collective-abort bursts, baits, exporter restarts) and the state of one
 * node at any time. The model and its numbers are described, with their
 * sources, in docs/simulator.md.
 *
 * Build order (every draw comes from one xoshiro256** stream seeded from
 * cfg.seed, in this fixed order, so a config gives the same timeline byte
 * for byte):
 *   1. hostnames: cfg.nodes distinct numbers from [host_base,
 *      host_base + host_span), sorted, so node i is the i-th smallest;
 *   2. spare nodes, then lemon nodes among the training nodes;
 *   3. hardware failures, node by node: a Poisson process per node whose
 *      rate is the cluster hazard (17 events per 55 days on 63 nodes)
 *      times the node's weight (lemons 10, others 1) times failure_scale;
 *      a node cannot fail again before it has recovered;
 *   4. sessions in time order: one training job at a time; a fresh
 *      submission takes 56-60 of the 60 training nodes that are up
 *      (spares fill in when fewer are up); start-up 5-10 min; the session
 *      runs until its planned end (completion) or until a hardware failure
 *      or a session-killing app XID on a member (failure). A kill starts an
 *      automatic retry episode (probability 0.5, else manual recovery after
 *      30 min - 5 h): retries every ~11 min, each with or without the
 *      suspect node (a spare swaps in for it), until one reaches steady
 *      training or 6 retries failed. App XIDs, collective-abort bursts and
 *      checkpoint loads/saves are drawn while the session runs;
 *   5. baits, node by node.
 * Then failures and baits are sorted by time (ties by creation order),
 * ids are their indexes, and per-node indexes are built for
 * gw_sim_node_state_at: the sessions each node takes part in, failure and
 * bait intervals (with running maximum ends for stabbing queries) and
 * exporter restart times. A query is a handful of binary searches.
 * Last, every checkpoint gets its bottleneck (cfg.ckpt_bottleneck, or drawn
 * per checkpoint when mixed; sessions under GW_SIM_BN_MIN_NODES nodes never
 * saturate slots or server) and its kind's rate; these draws are stateless
 * hashes of the seed and checkpoint id (gw_sim_bn_unit), so the rest of the
 * timeline is the same for every kind. */
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/sim.h"
#include "sim/timeline_int.h"

/* ----------------------------------------------------------- model rates */
#define HW_EVENTS_PER_55D 17.0         /* reference 1.1: 17 HW failures / 13 nodes */
#define HW_REF_WEIGHT 90.0             /* 60 nodes x 1 + 3 lemons x 10 */
#define LEMON_WEIGHT 10.0
#define APP_XID_PER_NODE_DAY 0.035     /* ~2 / day on 58 busy nodes */
#define APP_XID_KILL_PROB 0.12
#define COLLECTIVE_PER_DAY 1.2         /* independent job-level bursts in training */
#define COLLECTIVE_AT_KILL_PROB 0.5    /* XID 45 teardown burst when a session dies */
#define AUTO_RETRY_PROB 0.5
#define MAX_RETRIES 5
#define RETRY_START_OK_PROB 0.08
#define EXCLUDE_FIRST_PROB 0.4
#define EXCLUDE_REPEAT_PROB 0.9
#define MANUAL_EXCLUDE_PROB 0.7
#define OS_COLLAPSE_SHARE 0.5          /* of other_hw: node OS collapse; the rest PSU / board */

/* ------------------------------------------------------------ names */
const char *gw_sim_class_name(enum gw_sim_class c)
{
    switch (c) {
    case GW_SIM_NVLINK: return "nvlink";
    case GW_SIM_MEMORY: return "memory";
    case GW_SIM_FELL_OFF_BUS: return "fell_off_bus";
    case GW_SIM_GSP: return "gsp";
    case GW_SIM_FAIL_SLOW: return "fail_slow";
    case GW_SIM_OTHER_HW: return "other_hw";
    case GW_SIM_APP_XID: return "app_xid";
    case GW_SIM_COLLECTIVE: return "collective";
    case GW_SIM_CLASS_COUNT_: break;
    }
    return "unknown";
}

const char *gw_sim_action_name(enum gw_sim_action a)
{
    switch (a) {
    case GW_SIM_ACT_NONE: return "none";
    case GW_SIM_ACT_RESTART_APP: return "restart_app";
    case GW_SIM_ACT_RESET_GPU: return "reset_gpu";
    case GW_SIM_ACT_REBOOT_NODE: return "reboot_node";
    case GW_SIM_ACT_DRAIN_NODE: return "drain_node";
    }
    return "unknown";
}

const char *gw_sim_precursor_name(enum gw_sim_precursor p)
{
    switch (p) {
    case GW_SIM_PRE_NONE: return "none";
    case GW_SIM_PRE_REMAP_RAMP: return "remap_ramp";
    case GW_SIM_PRE_SBE_RAMP: return "sbe_ramp";
    case GW_SIM_PRE_PENDING_REMAP: return "pending_remap";
    case GW_SIM_PRE_NVLINK_CRC: return "nvlink_crc";
    case GW_SIM_PRE_PCIE_REPLAY: return "pcie_replay";
    case GW_SIM_PRE_THROTTLE: return "throttle";
    case GW_SIM_PRE_MEM_PRESSURE: return "mem_pressure";
    case GW_SIM_PRE_COUNT_: break;
    }
    return "unknown";
}

const char *gw_sim_bottleneck_name(enum gw_sim_ckpt_bottleneck b)
{
    static const char *const names[GW_SIM_BN_COUNT_] = {"none", "slots", "server", "link"};
    return (unsigned)b < GW_SIM_BN_COUNT_ ? names[b] : "?";
}

int gw_sim_bottleneck_parse(const char *s, int *out)
{
    if (!s || !out) return -1;
    if (strcmp(s, "mixed") == 0) {
        *out = GW_SIM_BN_MIXED;
        return 0;
    }
    for (int i = 0; i < GW_SIM_BN_COUNT_; i++)
        if (strcmp(s, gw_sim_bottleneck_name((enum gw_sim_ckpt_bottleneck)i)) == 0) {
            *out = i;
            return 0;
        }
    return -1;
}

const char *gw_sim_bait_name(enum gw_sim_bait_kind k)
{
    switch (k) {
    case GW_SIM_BAIT_STRAY_SBE: return "stray_sbe";
    case GW_SIM_BAIT_STRAY_PCIE: return "stray_pcie";
    case GW_SIM_BAIT_STRAY_NVLINK: return "stray_nvlink";
    case GW_SIM_BAIT_BENIGN_CLOCK: return "benign_clock";
    case GW_SIM_BAIT_SCRAPE_GAP: return "scrape_gap";
    case GW_SIM_BAIT_EXPORTER_RESTART: return "exporter_restart";
    case GW_SIM_BAIT_HOT_INLET: return "hot_inlet";
    case GW_SIM_BAIT_COUNT_: break;
    }
    return "unknown";
}

const char *gw_sim_node_name(const struct gw_sim_timeline *tl, uint32_t node)
{
    if (!tl || !tl->priv || node >= tl->cfg.nodes) return NULL;
    const struct gw_sim_priv *p = tl->priv;
    return p->names[node];
}

/* ------------------------------------------------------- growable arrays */
struct vec { void *p; size_t n, cap, elem; };

static void *vec_push(struct vec *v)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 64;
        if (cap > SIZE_MAX / v->elem) return NULL;
        void *np = realloc(v->p, cap * v->elem);
        if (!np) return NULL;
        v->p = np;
        v->cap = cap;
    }
    void *e = (char *)v->p + v->n * v->elem;
    memset(e, 0, v->elem);
    v->n++;
    return e;
}

/* --------------------------------------------------------------- builder */
struct ckx { double avg_bps; int64_t planned_ms; };

struct bld {
    const struct gw_sim_config *c;
    struct gw_sim_rng rng;
    struct gw_sim_rng srng;         /* signatures: a stream of its own, so that the draws of the
                                       original model (and its timeline) stay as they were */
    int64_t t0, t1;
    uint32_t n;                     /* nodes */
    uint8_t *spare, *lemon;
    struct vec fails;               /* struct gw_sim_failure */
    struct vec fnodes;              /* uint8_t *, parallel to fails */
    struct vec sess;                /* struct gw_sim_session */
    struct vec ckpts;               /* struct gw_sim_checkpoint */
    struct vec ckx;                 /* struct ckx, parallel to ckpts */
    struct vec baits;               /* struct gw_sim_bait */
    uint32_t *hw;                   /* hardware failure indexes sorted by t_fault */
    size_t n_hw;
    struct vec *node_hw;            /* per node: uint32_t failure indexes in time order */
    uint32_t *scratch;              /* n entries */
};

#define FAIL(b, i) (((struct gw_sim_failure *)(b)->fails.p)[i])
#define SESS(b, i) (((struct gw_sim_session *)(b)->sess.p)[i])

/* First scrape slot at or after t; GW_SIM_NO_TIME past the end. */
static int64_t first_slot_at_or_after(const struct bld *b, int64_t t)
{
    int64_t iv = b->c->interval_ms;
    int64_t s = t <= b->t0 ? b->t0 : b->t0 + ((t - b->t0 + iv - 1) / iv) * iv;
    return s < b->t1 ? s : GW_SIM_NO_TIME;
}

/* Fixed signature parameters (the model's defaults) for a severity. */
static void sig_fixed(struct gw_sim_signature *g, double sev)
{
    g->mag = 1.0;
    g->onset = 0.3;
    g->episode_ms = 20 * GW_SIM_MIN_MS;
    g->clk_deficit = 0.1 + 0.2 * sev;
    g->temp_rise = 8.0 + 4.0 * sev;
    g->ramp_ms = 5 * GW_SIM_MIN_MS;
    g->reason_bits = 0x8u | 0x20u | (sev > 0.6 ? 0x40u : 0u);
    g->scrape_extra_s = 3.0;
    g->util_level = 5.0;
    g->intr_frac = 0.275;
    g->mem_floor = 0.03;
}

/* Random signature parameters, uniform within the documented ranges
 * (docs/simulator.md 5.5). */
static void sig_random(struct gw_sim_rng *r, struct gw_sim_signature *g)
{
    g->mag = gw_sim_rng_uniform(r, 0.5, 2.0);
    g->onset = gw_sim_rng_uniform(r, 0.0, 0.6);
    g->episode_ms = gw_sim_rng_minutes(r, 10, 40);
    g->clk_deficit = gw_sim_rng_uniform(r, 0.10, 0.30);
    g->temp_rise = gw_sim_rng_uniform(r, 8.0, 15.0);
    g->ramp_ms = gw_sim_rng_minutes(r, 2, 10);
    g->reason_bits = 0x20u | (gw_sim_rng_chance(r, 0.5) ? 0x40u : 0u) | (gw_sim_rng_chance(r, 0.4) ? 0x8u : 0u);
    g->scrape_extra_s = gw_sim_rng_uniform(r, 1.3, 3.3);
    g->util_level = gw_sim_rng_uniform(r, 0.0, 10.0);
    g->intr_frac = gw_sim_rng_uniform(r, 0.20, 0.35);
    g->mem_floor = gw_sim_rng_uniform(r, 0.02, 0.06);
}

static struct gw_sim_failure *new_failure(struct bld *b, uint8_t *shown)
{
    uint8_t **fn = vec_push(&b->fnodes);
    if (!fn) return NULL;
    *fn = shown;
    struct gw_sim_failure *f = vec_push(&b->fails);
    if (!f) { b->fnodes.n--; return NULL; }
    f->id = (uint32_t)(b->fails.n - 1);
    f->t_precursor_start = GW_SIM_NO_TIME;
    f->t_ramp_origin = GW_SIM_NO_TIME;
    f->t_xid_visible = GW_SIM_NO_TIME;
    f->session = -1;
    f->n_nodes = 1;
    f->t_kill = GW_SIM_NO_TIME;
    f->t_silent = GW_SIM_NO_TIME;
    sig_fixed(&f->sig, 0.65);
    return f;
}

/* Downing failures take the node out of scheduling until recovered. */
static int is_downing(const struct gw_sim_failure *f)
{
    if (f->cls == GW_SIM_FAIL_SLOW || f->cls == GW_SIM_APP_XID || f->cls == GW_SIM_COLLECTIVE)
        return 0;
    return f->action != GW_SIM_ACT_NONE && f->action != GW_SIM_ACT_RESTART_APP;
}

static int node_down(const struct bld *b, uint32_t node, int64_t t)
{
    const struct vec *v = &b->node_hw[node];
    const uint32_t *ix = v->p;
    for (size_t i = 0; i < v->n; i++) {
        const struct gw_sim_failure *f = &FAIL(b, ix[i]);
        if (f->t_fault > t) break;
        if (t < f->t_recovered && is_downing(f)) return 1;
    }
    return 0;
}

static uint32_t prior_failures(const struct bld *b, uint32_t node, int64_t t)
{
    const struct vec *v = &b->node_hw[node];
    const uint32_t *ix = v->p;
    uint32_t k = 0;
    for (size_t i = 0; i < v->n; i++)
        if (FAIL(b, ix[i]).t_fault < t) k++;
    return k;
}

/* Fills f's class-specific fields for a hardware event at f->t_fault. */
static void shape_hw_failure(struct bld *b, struct gw_sim_failure *f, uint32_t prior_fob)
{
    struct gw_sim_rng *r = &b->rng, *s = &b->srng;
    const uint32_t gpus = b->c->gpus;
    int64_t xid_delay = 0;
    double u = gw_sim_rng_unit(r);
    f->severity = gw_sim_rng_uniform(r, 0.3, 1.0);
    f->gpu = (int32_t)gw_sim_rng_below(r, gpus);
    int show_xid = 1;
    int64_t t = f->t_fault;
    if (u < 0.30) {                                   /* NVLink: XID 145 / 149 */
        f->cls = GW_SIM_NVLINK;
        f->xid = gw_sim_rng_chance(r, 0.5) ? 145 : 149;
        f->action = GW_SIM_ACT_RESET_GPU;
        f->effect = GW_SIM_EFF_NONE;
        if (gw_sim_rng_chance(r, 0.30)) {
            f->precursor = GW_SIM_PRE_NVLINK_CRC;
            f->t_precursor_start = t - gw_sim_rng_minutes(r, 10, 60);
        }
        f->t_recovered = t + gw_sim_rng_minutes(r, 15, 45);
    } else if (u < 0.55) {                            /* memory / ECC */
        f->cls = GW_SIM_MEMORY;
        double m = gw_sim_rng_unit(r);
        int silent = 0;
        if (m < 0.28) { f->xid = 95; f->action = GW_SIM_ACT_RESET_GPU; }
        else if (m < 0.50) { f->xid = 94; f->action = GW_SIM_ACT_RESTART_APP; }
        else if (m < 0.65) { f->xid = 48; f->action = GW_SIM_ACT_RESET_GPU; }
        else if (m < 0.75) { f->xid = 64; f->action = GW_SIM_ACT_RESET_GPU; }
        else { silent = 1; f->xid = 0; f->action = GW_SIM_ACT_DRAIN_NODE; }
        f->effect = silent ? GW_SIM_EFF_VANISH : GW_SIM_EFF_NONE;
        show_xid = !silent;
        if (silent) {
            if (gw_sim_rng_chance(r, 0.6)) {
                f->precursor = GW_SIM_PRE_REMAP_RAMP;
                f->t_precursor_start = t - (int64_t)(gw_sim_rng_uniform(r, 3.0, 30.0) * GW_SIM_DAY_MS);
            }
        } else if (gw_sim_rng_chance(r, 0.2)) {
            double k = gw_sim_rng_unit(r);
            if (k < 0.4) {
                f->precursor = GW_SIM_PRE_PENDING_REMAP;
                f->t_precursor_start = t - gw_sim_rng_minutes(r, 10, 360);
            } else if (k < 0.7) {
                f->precursor = GW_SIM_PRE_SBE_RAMP;
                f->t_precursor_start = t - (int64_t)(gw_sim_rng_uniform(r, 0.25, 3.0) * GW_SIM_DAY_MS);
            } else {
                f->precursor = GW_SIM_PRE_REMAP_RAMP;
                f->t_precursor_start = t - (int64_t)(gw_sim_rng_uniform(r, 2.0, 20.0) * GW_SIM_DAY_MS);
            }
        }
        if (f->action == GW_SIM_ACT_RESTART_APP)
            f->t_recovered = t + gw_sim_rng_minutes(r, 2, 5);
        else if (f->action == GW_SIM_ACT_DRAIN_NODE)
            f->t_recovered = t + (int64_t)(gw_sim_rng_uniform(r, 1.0, 4.0) * GW_SIM_DAY_MS);
        else
            f->t_recovered = t + gw_sim_rng_minutes(r, 15, 45);
    } else if (u < 0.70) {                            /* fell off the bus: XID 79 */
        f->cls = GW_SIM_FELL_OFF_BUS;
        f->xid = 79;
        f->effect = gw_sim_rng_chance(r, 0.6) ? GW_SIM_EFF_VANISH : GW_SIM_EFF_SENTINEL;
        show_xid = gw_sim_rng_chance(r, 0.35);
        if (gw_sim_rng_chance(r, 0.15)) {
            f->precursor = GW_SIM_PRE_PCIE_REPLAY;
            f->t_precursor_start = t - gw_sim_rng_minutes(r, 2, 15);
        }
        if (prior_fob > 0) {                          /* recurring: replace the part */
            f->action = GW_SIM_ACT_DRAIN_NODE;
            f->t_recovered = t + (int64_t)(gw_sim_rng_uniform(r, 1.0, 4.0) * GW_SIM_DAY_MS);
        } else {
            f->action = GW_SIM_ACT_REBOOT_NODE;
            f->t_recovered = t + gw_sim_rng_minutes(r, 20, 60);
        }
    } else if (u < 0.85) {                            /* GSP: XID 119 / 120 */
        f->cls = GW_SIM_GSP;
        f->xid = gw_sim_rng_chance(r, 0.7) ? 119 : 120;
        f->action = GW_SIM_ACT_RESET_GPU;
        f->effect = GW_SIM_EFF_FROZEN;
        (void)gw_sim_rng_chance(r, 0.35);             /* the former visibility draw: keeps the stream */
        f->t_recovered = t + gw_sim_rng_minutes(r, 10, 30);
        /* GSP hang: the XID reaches the exporter 2-15 min late, or never (30%) */
        show_xid = gw_sim_rng_chance(s, 0.7);
        xid_delay = gw_sim_rng_minutes(s, 2, 15);
    } else if (u < 0.92) {                            /* fail-slow: throttling, no XID */
        f->cls = GW_SIM_FAIL_SLOW;
        f->xid = 0;
        f->action = GW_SIM_ACT_NONE;
        f->effect = GW_SIM_EFF_NONE;
        show_xid = 0;
        if (gw_sim_rng_chance(r, 0.4)) {
            f->precursor = GW_SIM_PRE_THROTTLE;
            f->t_precursor_start = t - gw_sim_rng_minutes(r, 10, 60);
        }
        /* 10 min .. 10 h, log-uniform */
        f->t_recovered = t + (int64_t)(10.0 * GW_SIM_MIN_MS * exp(gw_sim_rng_unit(r) * log(60.0)));
    } else {                                          /* PSU / board: node down */
        f->cls = GW_SIM_OTHER_HW;
        f->xid = 0;
        f->gpu = -1;
        f->effect = GW_SIM_EFF_NODE_DOWN;
        show_xid = 0;
        if (gw_sim_rng_chance(r, 0.1)) {
            f->precursor = GW_SIM_PRE_THROTTLE;
            f->t_precursor_start = t - gw_sim_rng_minutes(r, 30, 240);
        }
        if (gw_sim_rng_chance(r, 0.6)) {
            f->action = GW_SIM_ACT_REBOOT_NODE;
            f->t_recovered = t + gw_sim_rng_minutes(r, 15, 45);
        } else {
            f->action = GW_SIM_ACT_DRAIN_NODE;
            f->t_recovered = t + (int64_t)(gw_sim_rng_uniform(r, 0.25, 3.0) * GW_SIM_DAY_MS);
        }
        if (gw_sim_rng_chance(s, OS_COLLAPSE_SHARE)) {  /* node OS collapse */
            f->effect = GW_SIM_EFF_OS_COLLAPSE;
            f->precursor = GW_SIM_PRE_NONE;
            f->t_precursor_start = GW_SIM_NO_TIME;
            if (gw_sim_rng_chance(s, 0.5)) {
                f->precursor = GW_SIM_PRE_MEM_PRESSURE;
                f->t_precursor_start = t - gw_sim_rng_minutes(s, 5, 30);
            }
            f->t_kill = t + gw_sim_rng_minutes(s, 10, 30);
            f->t_silent = t + gw_sim_rng_minutes(s, 15, 30);
            if (f->action == GW_SIM_ACT_REBOOT_NODE)
                f->t_recovered = f->t_silent + gw_sim_rng_minutes(s, 15, 45);
            else if (f->t_recovered <= f->t_silent)
                f->t_recovered = f->t_silent + GW_SIM_HOUR_MS;
        }
    }
    if (b->c->shape_jitter) {
        sig_random(s, &f->sig);
        if (f->cls != GW_SIM_GSP && f->xid)           /* XID reaches the exporter 0-2 min late */
            xid_delay = gw_sim_rng_minutes(s, 0, 2);
    } else {
        sig_fixed(&f->sig, f->severity);
    }
    if (f->t_kill == GW_SIM_NO_TIME)
        f->t_kill = t;
    f->t_ramp_origin = f->t_precursor_start;
    if (f->t_precursor_start != GW_SIM_NO_TIME && f->t_precursor_start < b->t0)
        f->t_precursor_start = b->t0;                 /* the ramp is under way when data starts */
    f->t_xid_visible = show_xid && f->xid ? first_slot_at_or_after(b, t + xid_delay) : GW_SIM_NO_TIME;
}

static int gen_hw_failures(struct bld *b)
{
    const double span = (double)(b->t1 - b->t0);
    const double per_weight = HW_EVENTS_PER_55D / (HW_REF_WEIGHT * 55.0 * GW_SIM_DAY_MS);
    for (uint32_t i = 0; i < b->n; i++) {
        double rate = per_weight * (b->lemon[i] ? LEMON_WEIGHT : 1.0) * b->c->failure_scale;
        if (rate <= 0) continue;
        double t = (double)b->t0;
        int64_t up_at = b->t0;
        uint32_t fob = 0;
        for (;;) {
            t += gw_sim_rng_exp(&b->rng, 1.0 / rate);
            if (t >= (double)b->t0 + span) break;
            int64_t tf = (int64_t)t;
            if (tf < up_at) continue;                  /* still down from the last one */
            struct gw_sim_failure *f = new_failure(b, NULL);
            if (!f) return GW_ENOMEM;
            f->node = i;
            f->t_fault = tf;
            shape_hw_failure(b, f, fob);
            if (f->cls == GW_SIM_FELL_OFF_BUS) fob++;
            up_at = f->t_recovered;
            uint32_t *e = vec_push(&b->node_hw[i]);
            if (!e) return GW_ENOMEM;
            *e = f->id;
        }
    }
    /* global order by fault time for the session loop */
    b->n_hw = b->fails.n;
    b->hw = malloc((b->n_hw ? b->n_hw : 1) * sizeof *b->hw);
    if (!b->hw) return GW_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < b->fails.n; i++) b->hw[k++] = (uint32_t)i;
    /* insertion sort: failures come per node, a few dozen in total */
    for (size_t i = 1; i < b->n_hw; i++) {
        uint32_t x = b->hw[i];
        size_t j = i;
        while (j > 0 && FAIL(b, b->hw[j - 1]).t_fault > FAIL(b, x).t_fault) {
            b->hw[j] = b->hw[j - 1];
            j--;
        }
        b->hw[j] = x;
    }
    return GW_OK;
}

/* First hardware failure (other than fail-slow) on a member in [ts, te). */
static int32_t first_hw_killer(const struct bld *b, const uint8_t *members, int64_t ts, int64_t te)
{
    size_t lo = 0, hi = b->n_hw;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (FAIL(b, b->hw[mid]).t_fault < ts) lo = mid + 1; else hi = mid;
    }
    for (size_t i = lo; i < b->n_hw; i++) {
        const struct gw_sim_failure *f = &FAIL(b, b->hw[i]);
        if (f->t_fault >= te) break;
        if (f->cls != GW_SIM_FAIL_SLOW && members[f->node]) return (int32_t)b->hw[i];
    }
    return -1;
}

/* Picks k of the listed nodes (scratch order shuffled in place). */
static void pick_k(struct bld *b, uint32_t *list, uint32_t n, uint32_t k, uint8_t *out)
{
    for (uint32_t i = 0; i < k && i < n; i++) {
        uint32_t j = i + gw_sim_rng_below(&b->rng, n - i);
        uint32_t tmp = list[i]; list[i] = list[j]; list[j] = tmp;
        out[list[i]] = 1;
    }
}

/* A collective burst: the same app XID on many members within 30 s. */
static int add_collective(struct bld *b, const uint8_t *members, int64_t t, uint32_t xid,
                          int32_t skip_node)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < b->n; i++)
        if (members[i] && (int32_t)i != skip_node) b->scratch[n++] = i;
    if (n == 0) return GW_OK;
    uint32_t k = (uint32_t)((double)n * gw_sim_rng_uniform(&b->rng, 0.6, 1.0) + 0.5);
    if (k < 1) k = 1;
    if (k > n) k = n;
    uint8_t *shown = calloc(b->n, 1);
    if (!shown) return GW_ENOMEM;
    pick_k(b, b->scratch, n, k, shown);
    struct gw_sim_failure *f = new_failure(b, shown);
    if (!f) { free(shown); return GW_ENOMEM; }
    f->cls = GW_SIM_COLLECTIVE;
    f->node = b->scratch[0];
    f->gpu = -1;
    f->xid = xid;
    f->action = GW_SIM_ACT_NONE;
    f->effect = GW_SIM_EFF_NONE;
    f->t_fault = t;
    f->t_xid_visible = first_slot_at_or_after(b, t);
    f->t_recovered = t + gw_sim_rng_minutes(&b->rng, 1, 3);
    f->severity = gw_sim_rng_uniform(&b->rng, 0.3, 1.0);
    f->n_nodes = k;
    return GW_OK;
}

static uint32_t collective_xid(struct bld *b)
{
    double u = gw_sim_rng_unit(&b->rng);
    return u < 0.5 ? 43 : u < 0.7 ? 31 : u < 0.85 ? 13 : 45;
}

static uint32_t app_xid(struct bld *b)
{
    double u = gw_sim_rng_unit(&b->rng);
    return u < 0.3 ? 13 : u < 0.6 ? 31 : u < 0.9 ? 43 : 45;
}

/* Checkpoint load after the start and saves every ckpt_interval. */
static int gen_checkpoints(struct bld *b, uint32_t sidx, int64_t t_steady, int64_t t_end)
{
    struct gw_sim_rng *r = &b->rng;
    int64_t D = gw_sim_rng_minutes(r, 3, 8);
    double avg = gw_sim_rng_uniform(r, 130e9, 170e9);
    int64_t te = t_steady + D < t_end ? t_steady + D : t_end;
    struct gw_sim_checkpoint *ck = vec_push(&b->ckpts);
    struct ckx *x = vec_push(&b->ckx);
    if (!ck || !x) return GW_ENOMEM;
    ck->id = (uint32_t)(b->ckpts.n - 1);
    ck->session = sidx;
    ck->phase = GW_SIM_CKPT_LOAD;
    ck->bottleneck = GW_SIM_BN_SLOTS;
    ck->t_start = t_steady;
    ck->t_end = te;
    ck->bytes = (uint64_t)(avg * (double)(te - t_steady) / 1000.0);
    x->avg_bps = avg;
    x->planned_ms = D;
    int64_t iv = b->c->ckpt_interval_ms;
    int64_t next = t_steady + (int64_t)((double)iv * gw_sim_rng_uniform(r, 0.93, 1.07));
    int64_t prev_end = te;
    while (next < t_end) {
        if (next < prev_end + GW_SIM_MIN_MS) next = prev_end + GW_SIM_MIN_MS;
        if (next >= t_end) break;
        double u = gw_sim_rng_unit(r);
        D = (int64_t)((2.0 + 8.0 * u * sqrt(u)) * GW_SIM_MIN_MS);   /* 2-10 min, mostly short */
        avg = gw_sim_rng_uniform(r, 32e9, 48e9);
        te = next + D < t_end ? next + D : t_end;
        ck = vec_push(&b->ckpts);
        x = vec_push(&b->ckx);
        if (!ck || !x) return GW_ENOMEM;
        ck->id = (uint32_t)(b->ckpts.n - 1);
        ck->session = sidx;
        ck->phase = GW_SIM_CKPT_SAVE;
        ck->bottleneck = GW_SIM_BN_SLOTS;
        ck->t_start = next;
        ck->t_end = te;
        ck->bytes = (uint64_t)(avg * gw_sim_save_shape_integral(te - next, D) / 1000.0);
        x->avg_bps = avg;
        x->planned_ms = D;
        prev_end = te;
        next += (int64_t)((double)iv * gw_sim_rng_uniform(r, 0.93, 1.07));
    }
    return GW_OK;
}

/* Fresh submission: 56-60 of the 60 training nodes that are up (scaled to
 * the training node count), spares filling in when too few are up. */
static uint32_t pick_fresh(struct bld *b, int64_t t, uint8_t *members, int32_t avoid)
{
    uint32_t n_train = b->n - b->c->spare_nodes;
    uint32_t min_n = (uint32_t)((uint64_t)n_train * 56 / 60 + ((uint64_t)n_train * 56 % 60 ? 1 : 0));
    if (min_n < 1) min_n = 1;
    uint32_t target = min_n + gw_sim_rng_below(&b->rng, n_train - min_n + 1);
    uint32_t n = 0;
    for (uint32_t i = 0; i < b->n; i++)
        if (!b->spare[i] && (int32_t)i != avoid && !node_down(b, i, t)) b->scratch[n++] = i;
    uint32_t got = n < target ? n : target;
    pick_k(b, b->scratch, n, got, members);
    if (got < target) {
        uint32_t m = 0;
        for (uint32_t i = 0; i < b->n; i++)
            if (b->spare[i] && (int32_t)i != avoid && !node_down(b, i, t)) b->scratch[m++] = i;
        uint32_t more = target - got < m ? target - got : m;
        pick_k(b, b->scratch, m, more, members);
        got += more;
    }
    return got;
}

static int64_t retry_interval(struct bld *b)
{
    /* median ~10.9 min, IQR ~10.4-11.3 min (reference 1.5: 11, IQR 10-11) */
    if (gw_sim_rng_chance(&b->rng, 0.8)) return gw_sim_rng_minutes(&b->rng, 10.0, 11.4);
    return gw_sim_rng_minutes(&b->rng, 11.4, 16.0);
}

/* The state of gen_sessions between sessions: the retry chain and what
 * the next session avoids. */
struct sess_gen {
    int64_t t;                       /* start of the next session */
    uint32_t next_chain, chain, attempt, retries;
    int retrying;
    int32_t excluded, manual_avoid, ep_suspect;
    uint8_t *prev;                   /* the last session's members */
};

/* The members of the session starting at sg->t into mem (a fresh pick,
 * or a retry of the last one without the excluded suspect) and their
 * count; *excl_here the node left out. 1 when a fresh pick finds no node
 * up (the chain waits), else 0. */
static int sess_members(struct bld *b, struct sess_gen *sg, uint8_t *mem, uint32_t *cnt_out, int32_t *excl_here)
{
    const uint32_t n = b->n;
    uint32_t cnt = 0;
    *excl_here = -1;
    if (!sg->retrying) {
        sg->chain = sg->next_chain++;
        sg->attempt = 0;
        cnt = pick_fresh(b, sg->t, mem, sg->manual_avoid);
        if (sg->manual_avoid >= 0) *excl_here = sg->manual_avoid;
        sg->manual_avoid = -1;
        *cnt_out = cnt;
        if (cnt == 0) {
            sg->next_chain--;
            return 1;
        }
        return 0;
    }
    sg->attempt++;
    memcpy(mem, sg->prev, n);
    if (sg->excluded >= 0) {
        *excl_here = sg->excluded;
        if (mem[sg->excluded]) {
            mem[sg->excluded] = 0;
            for (uint32_t i = 0; i < n; i++)
                if (b->spare[i] && !mem[i] && !node_down(b, i, sg->t)) { mem[i] = 1; break; }
        }
    }
    for (uint32_t i = 0; i < n; i++) cnt += mem[i];
    if (cnt == 0 && sg->excluded >= 0) {          /* nobody left to run it: keep the suspect */
        mem[sg->excluded] = 1;
        cnt = 1;
        *excl_here = -1;
    }
    *cnt_out = cnt;
    return 0;
}

/* When the session starting at sg->t reaches steady training, whether its
 * start fails (retries only), and its planned end. */
static int64_t sess_plan(struct bld *b, const struct sess_gen *sg, const uint8_t *mem, int64_t *t_steady,
                         int *start_fail)
{
    struct gw_sim_rng *r = &b->rng;
    int64_t t = sg->t, planned;
    *t_steady = t + gw_sim_rng_minutes(r, 5, 10);
    *start_fail = 0;
    if (sg->retrying) {
        int forced = 0;
        for (uint32_t i = 0; i < b->n && !forced; i++)
            if (mem[i] && node_down(b, i, t)) forced = 1;
        *start_fail = forced || !gw_sim_rng_chance(r, RETRY_START_OK_PROB);
    }
    if (*start_fail) {
        planned = t + (int64_t)((double)(*t_steady - t) * gw_sim_rng_uniform(r, 0.4, 0.95));
    } else {
        double hours = 1.0 + gw_sim_rng_exp(r, 12.0);
        if (hours > 72.0) hours = 72.0;
        planned = *t_steady + (int64_t)(hours * GW_SIM_HOUR_MS);
    }
    if (planned > b->t1) planned = b->t1;         /* still running when the data ends */
    return planned;
}

/* App-level XIDs while training (t_steady .. *end), some of which kill the
 * session: then *killer and *end are the killing one's. */
static int sess_app_xids(struct bld *b, const uint8_t *mem, uint32_t cnt, int64_t t_steady, int64_t *end,
                         int32_t *killer)
{
    struct gw_sim_rng *r = &b->rng;
    double rate = APP_XID_PER_NODE_DAY * (double)cnt * b->c->failure_scale / GW_SIM_DAY_MS;
    double ta = (double)t_steady;
    while (rate > 0) {
        ta += gw_sim_rng_exp(r, 1.0 / rate);
        if (ta >= (double)*end) break;
        uint32_t k = 0;
        for (uint32_t i = 0; i < b->n; i++) if (mem[i]) b->scratch[k++] = i;
        struct gw_sim_failure *f = new_failure(b, NULL);
        if (!f) return GW_ENOMEM;
        f->cls = GW_SIM_APP_XID;
        f->node = b->scratch[gw_sim_rng_below(r, k)];
        f->gpu = (int32_t)gw_sim_rng_below(r, b->c->gpus);
        f->xid = app_xid(b);
        f->action = GW_SIM_ACT_RESTART_APP;
        f->effect = GW_SIM_EFF_NONE;
        f->t_fault = (int64_t)ta;
        f->t_xid_visible = first_slot_at_or_after(b, f->t_fault);
        f->t_recovered = f->t_fault + gw_sim_rng_minutes(r, 1, 3);
        f->severity = gw_sim_rng_uniform(r, 0.3, 1.0);
        if (gw_sim_rng_chance(r, APP_XID_KILL_PROB)) {
            *killer = (int32_t)(b->fails.n - 1);
            *end = f->t_fault;
            break;
        }
    }
    return GW_OK;
}

/* Independent collective-abort bursts while training, the session's
 * checkpoints, and a collective abort right after a killing failure. */
static int sess_events(struct bld *b, uint32_t sidx, const uint8_t *mem, int reached, int64_t t_steady,
                       int64_t end, int32_t killer)
{
    struct gw_sim_rng *r = &b->rng;
    int rc = GW_OK;
    if (reached) {
        double rate = COLLECTIVE_PER_DAY * b->c->failure_scale / GW_SIM_DAY_MS;
        double tc = (double)t_steady;
        while (rate > 0 && rc == GW_OK) {
            tc += gw_sim_rng_exp(r, 1.0 / rate);
            if (tc >= (double)end) break;
            rc = add_collective(b, mem, (int64_t)tc, collective_xid(b), -1);
        }
        if (rc == GW_OK) rc = gen_checkpoints(b, sidx, t_steady, end);
    }
    if (rc == GW_OK && killer >= 0 && gw_sim_rng_chance(r, COLLECTIVE_AT_KILL_PROB)) {
        int64_t tc = end + (int64_t)gw_sim_rng_uniform(r, 5000, 25000);
        if (tc < b->t1) rc = add_collective(b, mem, tc, 45, (int32_t)FAIL(b, killer).node);
    }
    return rc;
}

/* What comes after a session (started at t_start, ended at end, killed by
 * killer or -1): the next job after a gap, an automatic retry (maybe
 * without the suspect), or a manual recovery later; sg->t moves on. */
static void sess_next(struct bld *b, struct sess_gen *sg, int64_t t_start, int64_t end, int32_t killer,
                      int start_fail, int reached)
{
    struct gw_sim_rng *r = &b->rng;
    if (killer < 0 && !start_fail) {              /* completed: next job after a gap */
        sg->retrying = 0;
        sg->t = end + gw_sim_rng_minutes(r, 5, 90);
        return;
    }
    int in_episode = sg->retrying && !reached;
    int32_t suspect = -1;
    if (killer >= 0 && FAIL(b, killer).cls != GW_SIM_APP_XID) suspect = (int32_t)FAIL(b, killer).node;
    if (!in_episode) {
        sg->retrying = gw_sim_rng_chance(r, AUTO_RETRY_PROB);
        sg->retries = 0;
        sg->excluded = -1;
        sg->ep_suspect = suspect;
        if (sg->retrying && suspect >= 0) {
            double p = prior_failures(b, (uint32_t)suspect, FAIL(b, killer).t_fault) > 0
                           ? EXCLUDE_REPEAT_PROB : EXCLUDE_FIRST_PROB;
            if (gw_sim_rng_chance(r, p)) sg->excluded = suspect;
        }
    }
    if (sg->retrying && sg->retries < MAX_RETRIES) {
        sg->retries++;
        sg->t = (killer >= 0 ? end : t_start) + retry_interval(b);
        return;
    }
    /* manual recovery: a fresh chain later, often without the suspect */
    sg->retrying = 0;
    if (suspect < 0 && killer < 0) suspect = sg->ep_suspect;
    sg->manual_avoid = suspect >= 0 && gw_sim_rng_chance(r, MANUAL_EXCLUDE_PROB) ? suspect : -1;
    sg->t = end + gw_sim_rng_minutes(r, 30, 300);
}

/* One session starting at sg->t: members, plan, failures, the session
 * record, its events; *done when the data ends with it. */
static int sess_one(struct bld *b, struct sess_gen *sg, int *done)
{
    const uint32_t n = b->n;
    uint8_t *mem = calloc(n, 1);
    if (!mem) return GW_ENOMEM;
    int32_t excl_here;
    uint32_t cnt;
    if (sess_members(b, sg, mem, &cnt, &excl_here)) {   /* nothing is up: wait */
        free(mem);
        sg->t += 30 * GW_SIM_MIN_MS;
        return GW_OK;
    }
    int64_t t = sg->t, t_steady;
    int start_fail;
    int64_t planned = sess_plan(b, sg, mem, &t_steady, &start_fail);
    uint32_t sidx = (uint32_t)b->sess.n;
    int32_t killer = first_hw_killer(b, mem, t, planned);
    int64_t end = killer >= 0 ? FAIL(b, killer).t_kill : planned;
    if (end > b->t1) end = b->t1;
    if (!start_fail && t_steady < end && sess_app_xids(b, mem, cnt, t_steady, &end, &killer) != GW_OK) {
        free(mem);
        return GW_ENOMEM;
    }
    struct gw_sim_session *s = vec_push(&b->sess);
    if (!s) { free(mem); return GW_ENOMEM; }
    s->id = sidx;
    s->chain = sg->chain;
    s->attempt = sg->attempt;
    s->t_start = t;
    s->t_steady = t_steady;
    s->t_end = end;
    s->nodes = mem;
    s->n_nodes = cnt;
    s->excluded_node = excl_here;
    s->failure = killer;
    int reached = end > t_steady;
    if (killer >= 0) {
        s->outcome = reached ? GW_SIM_SESS_FAILED : GW_SIM_SESS_STARTUP_FAILED;
        FAIL(b, killer).session = (int32_t)sidx;
    } else {
        s->outcome = start_fail ? GW_SIM_SESS_STARTUP_FAILED : GW_SIM_SESS_COMPLETED;
    }
    memcpy(sg->prev, mem, n);
    int rc = sess_events(b, sidx, mem, reached, t_steady, end, killer);
    if (rc) return rc;
    if (end >= b->t1) {
        *done = 1;
        return GW_OK;
    }
    sess_next(b, sg, t, end, killer, start_fail, reached);
    return GW_OK;
}

static int gen_sessions(struct bld *b)
{
    struct sess_gen sg = {.excluded = -1, .manual_avoid = -1, .ep_suspect = -1};
    int rc = GW_OK, done = 0;
    sg.t = b->t0 + gw_sim_rng_minutes(&b->rng, 0, 30);
    sg.prev = calloc(b->n, 1);
    if (!sg.prev) return GW_ENOMEM;
    while (sg.t < b->t1 && !done && rc == GW_OK)
        rc = sess_one(b, &sg, &done);
    free(sg.prev);
    return rc;
}

static int add_bait(struct bld *b, enum gw_sim_bait_kind kind, uint32_t node, int32_t gpu,
                    int64_t ts, int64_t te, uint32_t job)
{
    struct gw_sim_bait *x = vec_push(&b->baits);
    if (!x) return GW_ENOMEM;
    x->id = (uint32_t)(b->baits.n - 1);
    x->kind = kind;
    x->node = node;
    x->gpu = gpu;
    x->t_start = ts;
    x->t_end = te;
    x->job = job;
    return GW_OK;
}

static int gen_baits(struct bld *b)
{
    /* per node and day; exporter restarts ~1 / week per node per exporter */
    static const double rate[GW_SIM_BAIT_COUNT_] = {
        [GW_SIM_BAIT_STRAY_SBE] = 0.08, [GW_SIM_BAIT_STRAY_PCIE] = 0.05,
        [GW_SIM_BAIT_STRAY_NVLINK] = 0.05, [GW_SIM_BAIT_BENIGN_CLOCK] = 0.3,
        [GW_SIM_BAIT_SCRAPE_GAP] = 0.05, [GW_SIM_BAIT_EXPORTER_RESTART] = 2.0 / 7.0,
        [GW_SIM_BAIT_HOT_INLET] = 0.02,
    };
    struct gw_sim_rng *r = &b->rng;
    const int64_t iv = b->c->interval_ms;
    for (uint32_t i = 0; i < b->n; i++) {
        for (int k = 0; k < GW_SIM_BAIT_COUNT_; k++) {
            double per_ms = rate[k] * b->c->bait_scale / GW_SIM_DAY_MS;
            double t = (double)b->t0;
            while (per_ms > 0) {
                t += gw_sim_rng_exp(r, 1.0 / per_ms);
                if (t >= (double)b->t1) break;
                int64_t ts = (int64_t)t, te;
                int32_t gpu = -1;
                uint32_t job = 0;
                switch ((enum gw_sim_bait_kind)k) {
                case GW_SIM_BAIT_STRAY_SBE:
                case GW_SIM_BAIT_STRAY_PCIE:
                case GW_SIM_BAIT_STRAY_NVLINK:
                    gpu = (int32_t)gw_sim_rng_below(r, b->c->gpus);
                    te = ts + iv;                     /* seen by exactly one scrape */
                    break;
                case GW_SIM_BAIT_BENIGN_CLOCK:
                    gpu = (int32_t)gw_sim_rng_below(r, b->c->gpus);
                    te = ts + gw_sim_rng_minutes(r, 5, 60);
                    break;
                case GW_SIM_BAIT_SCRAPE_GAP: {
                    /* whole scrape slots: from half an interval before a slot */
                    int64_t slot = (ts - b->t0) / iv;
                    ts = b->t0 + slot * iv - iv / 2;
                    te = ts + (int64_t)(1 + gw_sim_rng_below(r, 3)) * iv;
                    double u = gw_sim_rng_unit(r);
                    job = u < 0.5 ? 0 : u < 0.75 ? 1 : 2;
                    break;
                }
                case GW_SIM_BAIT_EXPORTER_RESTART:
                    job = gw_sim_rng_chance(r, 0.5) ? 0 : 1;
                    te = ts + (int64_t)gw_sim_rng_uniform(r, 20000, 90000);
                    break;
                case GW_SIM_BAIT_HOT_INLET:
                    te = ts + gw_sim_rng_minutes(r, 40, 90);
                    break;
                case GW_SIM_BAIT_COUNT_:
                default:
                    te = ts;
                    break;
                }
                int rc = add_bait(b, (enum gw_sim_bait_kind)k, i, gpu, ts, te, job);
                if (rc) return rc;
            }
        }
    }
    return GW_OK;
}

/* ---------------------------------------------------------- sort + index */
struct ord { int64_t t; uint32_t i; };

static int ord_cmp(const void *a, const void *b)
{
    const struct ord *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

static int ival_cmp(const void *a, const void *b)
{
    const struct gw_sim_ival *x = a, *y = b;
    if (x->t_start != y->t_start) return x->t_start < y->t_start ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static void ival_finish(struct gw_sim_ival *v, size_t n)
{
    if (n == 0) return;
    qsort(v, n, sizeof *v, ival_cmp);
    int64_t m = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        if (v[i].t_end > m) m = v[i].t_end;
        v[i].max_end = m;
    }
}

static int sort_events(struct bld *b)
{
    size_t nf = b->fails.n, nb = b->baits.n;
    struct ord *o = malloc(((nf > nb ? nf : nb) + 1) * sizeof *o);
    uint32_t *inv = malloc((nf + 1) * sizeof *inv);
    struct gw_sim_failure *nfp = malloc((nf + 1) * sizeof *nfp);
    uint8_t **nfn = malloc((nf + 1) * sizeof *nfn);
    struct gw_sim_bait *nbp = malloc((nb + 1) * sizeof *nbp);
    int rc = GW_ENOMEM;
    if (!o || !inv || !nfp || !nfn || !nbp) goto out;
    for (size_t i = 0; i < nf; i++) o[i] = (struct ord){ FAIL(b, i).t_fault, (uint32_t)i };
    qsort(o, nf, sizeof *o, ord_cmp);
    uint8_t **fn = b->fnodes.p;
    for (size_t k = 0; k < nf; k++) {
        nfp[k] = FAIL(b, o[k].i);
        nfp[k].id = (uint32_t)k;
        nfn[k] = fn[o[k].i];
        inv[o[k].i] = (uint32_t)k;
    }
    if (nf) {
        memcpy(b->fails.p, nfp, nf * sizeof *nfp);
        memcpy(b->fnodes.p, nfn, nf * sizeof *nfn);
    }
    for (size_t s = 0; s < b->sess.n; s++)
        if (SESS(b, s).failure >= 0) SESS(b, s).failure = (int32_t)inv[SESS(b, s).failure];
    struct gw_sim_bait *bp = b->baits.p;
    for (size_t i = 0; i < nb; i++) o[i] = (struct ord){ bp[i].t_start, (uint32_t)i };
    qsort(o, nb, sizeof *o, ord_cmp);
    for (size_t k = 0; k < nb; k++) {
        nbp[k] = bp[o[k].i];
        nbp[k].id = (uint32_t)k;
    }
    if (nb) memcpy(bp, nbp, nb * sizeof *nbp);
    rc = GW_OK;
out:
    free(o); free(inv); free(nfp); free(nfn); free(nbp);
    return rc;
}

static void free_priv(struct gw_sim_priv *p, uint32_t n_nodes, size_t n_fails)
{
    if (!p) return;
    free(p->names);
    free(p->spare);
    if (p->fail_nodes)
        for (size_t i = 0; i < n_fails; i++) free(p->fail_nodes[i]);
    free(p->fail_nodes);
    free(p->ckpt_avg_bps);
    free(p->ckpt_planned_ms);
    free(p->ckpt_norm);
    free(p->ckpt_members);
    if (p->nodes) {
        for (uint32_t i = 0; i < n_nodes; i++) {
            struct gw_sim_node_idx *x = &p->nodes[i];
            free(x->sess); free(x->fails); free(x->baits);
            free(x->dcgm_restarts); free(x->node_restarts);
        }
    }
    free(p->nodes);
    free(p);
}

static int build_index(struct gw_sim_timeline *tl, struct gw_sim_priv *p)
{
    const uint32_t n = tl->cfg.nodes;
    p->nodes = calloc(n, sizeof *p->nodes);
    size_t nc = tl->n_checkpoints ? tl->n_checkpoints : 1;
    p->ckpt_norm = calloc(nc, sizeof *p->ckpt_norm);
    p->ckpt_members = calloc(nc, sizeof *p->ckpt_members);
    struct vec *pv = NULL;         /* per node: fails, baits, dcgm restarts, node restarts */
    int rc = GW_ENOMEM;
    if (!p->nodes || !p->ckpt_norm || !p->ckpt_members) goto out;
    for (size_t k = 0; k < tl->n_checkpoints; k++) {
        const struct gw_sim_session *s = &tl->sessions[tl->checkpoints[k].session];
        double sum = 0;
        uint32_t m = 0;
        for (uint32_t i = 0; i < n; i++)
            if (s->nodes[i]) { sum += gw_sim_ckpt_weight((uint32_t)k, i); m++; }
        p->ckpt_members[k] = m;
        p->ckpt_norm[k] = sum > 0 ? (double)m / sum : 0;
    }
    /* sessions per node: count, then fill */
    for (size_t si = 0; si < tl->n_sessions; si++)
        for (uint32_t i = 0; i < n; i++) p->nodes[i].n_sess += tl->sessions[si].nodes[i];
    for (uint32_t i = 0; i < n; i++) {
        p->nodes[i].sess = malloc((p->nodes[i].n_sess + 1) * sizeof *p->nodes[i].sess);
        if (!p->nodes[i].sess) goto fail;
        p->nodes[i].n_sess = 0;
    }
    for (size_t si = 0; si < tl->n_sessions; si++)
        for (uint32_t i = 0; i < n; i++)
            if (tl->sessions[si].nodes[i]) p->nodes[i].sess[p->nodes[i].n_sess++] = (uint32_t)si;
    /* failure and bait intervals, restart times: one pass over the events
     * into per-node vectors, then sorted per node */
    pv = calloc((size_t)n * 4, sizeof *pv);
    if (!pv) goto fail;
    for (uint32_t i = 0; i < n; i++) {
        pv[4 * i].elem = pv[4 * i + 1].elem = sizeof(struct gw_sim_ival);
        pv[4 * i + 2].elem = pv[4 * i + 3].elem = sizeof(int64_t);
    }
    for (size_t f = 0; f < tl->n_failures; f++) {
        const struct gw_sim_failure *fl = &tl->failures[f];
        const uint8_t *shown = p->fail_nodes[f];
        for (uint32_t i = shown ? 0 : fl->node; i < (shown ? n : fl->node + 1); i++) {
            if (shown && !shown[i]) continue;
            struct gw_sim_ival *e = vec_push(&pv[4 * i]);
            if (!e) goto fail;
            e->t_start = fl->t_precursor_start != GW_SIM_NO_TIME ? fl->t_precursor_start : fl->t_fault;
            e->t_end = fl->t_recovered;
            e->idx = (uint32_t)f;
        }
    }
    for (size_t k = 0; k < tl->n_baits; k++) {
        const struct gw_sim_bait *bt = &tl->baits[k];
        struct gw_sim_ival *e = vec_push(&pv[4 * bt->node + 1]);
        if (!e) goto fail;
        e->t_start = bt->t_start;
        e->t_end = bt->t_end;
        e->idx = (uint32_t)k;
        if (bt->kind == GW_SIM_BAIT_EXPORTER_RESTART) {
            int64_t *tp = vec_push(&pv[4 * bt->node + (bt->job == 0 ? 2 : 3)]);
            if (!tp) goto fail;
            *tp = bt->t_start;
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        struct gw_sim_node_idx *x = &p->nodes[i];
        ival_finish(pv[4 * i].p, pv[4 * i].n);
        ival_finish(pv[4 * i + 1].p, pv[4 * i + 1].n);
        x->fails = pv[4 * i].p; x->n_fails = pv[4 * i].n; pv[4 * i].p = NULL;
        x->baits = pv[4 * i + 1].p; x->n_baits = pv[4 * i + 1].n; pv[4 * i + 1].p = NULL;
        x->dcgm_restarts = pv[4 * i + 2].p; x->n_dcgm_restarts = pv[4 * i + 2].n; pv[4 * i + 2].p = NULL;
        x->node_restarts = pv[4 * i + 3].p; x->n_node_restarts = pv[4 * i + 3].n; pv[4 * i + 3].p = NULL;
    }
    rc = GW_OK;
    goto out;
fail:
    rc = GW_ENOMEM;
out:
    if (pv)
        for (size_t i = 0; i < (size_t)n * 4; i++) free(pv[i].p);
    free(pv);
    return rc;
}

/* ------------------------------------------------------------ public */
void gw_sim_timeline_free(struct gw_sim_timeline *tl)
{
    if (!tl) return;
    free_priv(tl->priv, tl->cfg.nodes, tl->n_failures);
    for (size_t i = 0; i < tl->n_sessions; i++) free(tl->sessions[i].nodes);
    free(tl->sessions);
    free(tl->failures);
    free(tl->checkpoints);
    free(tl->baits);
    free(tl->lemon);
    free(tl);
}

/* Shares of the bottleneck kinds when cfg.ckpt_bottleneck is mixed
 * (docs/simulator.md 4.1), in enum order: none, slots, server, link. */
static const double bn_share[GW_SIM_BN_COUNT_] = {0.25, 0.40, 0.25, 0.10};

/* Healthy checkpoints run 1.5-2.2 x the slot-limited rate, but a node's
 * average never above this when the multiplier would push it there. */
#define BN_NONE_NODE_AVG_MAX 6e9
/* Outside the link kind no node's rate exceeds this share of its storage
 * links: a checkpoint that filled them would be link-limited. Binds only in
 * small sessions (the cluster rate over few nodes); never in paper ones. */
#define BN_LINK_SHARE_MAX 0.75

/* Cluster rate of a checkpoint of kind `kind` (not link), from the drawn
 * slot-limited rate `avg`: none faster, server at the server's capacity. */
static double bn_cluster_rate(const struct gw_sim_checkpoint *ck, double avg, uint32_t members, double u)
{
    switch (ck->bottleneck) {
    case GW_SIM_BN_NONE: {
        double m = 1.5 + 0.7 * u;
        if (avg * m > BN_NONE_NODE_AVG_MAX * members) m = BN_NONE_NODE_AVG_MAX * members / avg;
        return m < 1.0 ? avg : avg * m;
    }
    case GW_SIM_BN_SERVER:                     /* the server's capacity, flat */
        return ck->phase == GW_SIM_CKPT_SAVE ? 22e9 + 10e9 * u : 75e9 + 40e9 * u;
    default:
        return avg;
    }
}

/* Chooses every checkpoint's bottleneck (a draw of its own per checkpoint
 * when mixed), applies the node-count rule (slots and server need at least
 * GW_SIM_BN_MIN_NODES nodes writing at once) and sets the checkpoint's
 * cluster rate and bytes for its kind: slots as drawn (the paper's rates,
 * head/tail shape), none 1.5-2.2 x faster (same shape), server at 22-32 GB/s
 * (saves) or 75-115 GB/s (loads), flat, link at 86-96% of every member's
 * storage line rate, flat. Outside link, no node above BN_LINK_SHARE_MAX of
 * its storage links. */
static void assign_bottlenecks(struct gw_sim_timeline *tl, struct gw_sim_priv *p)
{
    const struct gw_sim_config *c = &tl->cfg;
    const double cap = (double)c->storage_nics * GW_SIM_STORAGE_NIC_BPS;
    for (size_t k = 0; k < tl->n_checkpoints; k++) {
        struct gw_sim_checkpoint *ck = &tl->checkpoints[k];
        const struct gw_sim_session *s = &tl->sessions[ck->session];
        uint32_t id = (uint32_t)k;
        int kind = c->ckpt_bottleneck;
        if (kind == GW_SIM_BN_MIXED) {
            double u = gw_sim_bn_unit(c->seed, id, UINT32_MAX, 0), acc = 0;
            kind = GW_SIM_BN_COUNT_ - 1;
            for (int i = 0; i < GW_SIM_BN_COUNT_; i++) {
                acc += bn_share[i];
                if (u < acc) { kind = i; break; }
            }
        }
        if ((kind == GW_SIM_BN_SLOTS || kind == GW_SIM_BN_SERVER) && s->n_nodes < GW_SIM_BN_MIN_NODES)
            kind = GW_SIM_BN_NONE;
        if (kind == GW_SIM_BN_LINK && c->storage_nics == 0)   /* no storage link to fill */
            kind = GW_SIM_BN_NONE;
        ck->bottleneck = (enum gw_sim_ckpt_bottleneck)kind;
        double dur = (double)(ck->t_end - ck->t_start), avg = p->ckpt_avg_bps[k];
        uint32_t members = p->ckpt_members[k] ? p->ckpt_members[k] : 1;
        double wmax = 0, link_sum = 0;
        for (uint32_t i = 0; i < c->nodes; i++) {
            if (!s->nodes[i]) continue;
            double w = gw_sim_ckpt_weight(id, i) * p->ckpt_norm[k];
            if (w > wmax) wmax = w;
            link_sum += cap * gw_sim_link_util(c->seed, id, i);
        }
        int shaped = ck->phase == GW_SIM_CKPT_SAVE &&
                     (ck->bottleneck == GW_SIM_BN_SLOTS || ck->bottleneck == GW_SIM_BN_NONE);
        double rate = ck->bottleneck == GW_SIM_BN_LINK
                          ? link_sum
                          : bn_cluster_rate(ck, avg, members, gw_sim_bn_unit(c->seed, id, UINT32_MAX, 2));
        double peak = shaped ? GW_SIM_SAVE_PEAK : 1.0;
        if (ck->bottleneck != GW_SIM_BN_LINK && cap > 0 && wmax > 0 &&
            rate / members * wmax * peak > BN_LINK_SHARE_MAX * cap)
            rate = BN_LINK_SHARE_MAX * cap * members / (wmax * peak);
        if (rate == avg) continue;                 /* the drawn checkpoint, unchanged */
        p->ckpt_avg_bps[k] = rate;
        ck->bytes = (uint64_t)(rate * (shaped ? gw_sim_save_shape_integral((int64_t)dur, p->ckpt_planned_ms[k])
                                              : dur) / 1000.0);
    }
}

int gw_sim_timeline_build(const struct gw_sim_config *c, struct gw_sim_timeline **out,
                          struct gw_error *err)
{
    int rc = gw_sim_config_check(c, err);
    if (rc) return rc;
    struct bld b = {
        .c = c, .t0 = c->start_ms, .t1 = c->start_ms + c->duration_ms, .n = c->nodes,
        .fails = { .elem = sizeof(struct gw_sim_failure) },
        .fnodes = { .elem = sizeof(uint8_t *) },
        .sess = { .elem = sizeof(struct gw_sim_session) },
        .ckpts = { .elem = sizeof(struct gw_sim_checkpoint) },
        .ckx = { .elem = sizeof(struct ckx) },
        .baits = { .elem = sizeof(struct gw_sim_bait) },
    };
    struct gw_sim_timeline *tl = calloc(1, sizeof *tl);
    struct gw_sim_priv *p = calloc(1, sizeof *p);
    uint32_t *pool = NULL;
    rc = GW_ENOMEM;
    if (!tl || !p) goto fail;
    tl->cfg = *c;
    gw_sim_rng_seed(&b.rng, c->seed);
    gw_sim_rng_seed(&b.srng, c->seed ^ 0x5167a7e5ull);
    b.spare = calloc(b.n, 1);
    b.lemon = calloc(b.n, 1);
    b.scratch = calloc(b.n, sizeof *b.scratch);
    b.node_hw = calloc(b.n, sizeof *b.node_hw);
    p->names = calloc(b.n, sizeof *p->names);
    pool = malloc(c->host_span * sizeof *pool);
    if (!b.spare || !b.lemon || !b.scratch || !b.node_hw || !p->names || !pool) goto fail;
    for (uint32_t i = 0; i < b.n; i++) b.node_hw[i].elem = sizeof(uint32_t);

    /* 1. hostnames: distinct draws from the wider numbering, sorted */
    for (uint32_t i = 0; i < c->host_span; i++) pool[i] = c->host_base + i;
    for (uint32_t i = 0; i < b.n; i++) {
        uint32_t j = i + gw_sim_rng_below(&b.rng, c->host_span - i);
        uint32_t tmp = pool[i]; pool[i] = pool[j]; pool[j] = tmp;
    }
    for (uint32_t i = 1; i < b.n; i++) {
        uint32_t x = pool[i], j = i;
        while (j > 0 && pool[j - 1] > x) { pool[j] = pool[j - 1]; j--; }
        pool[j] = x;
    }
    for (uint32_t i = 0; i < b.n; i++) snprintf(p->names[i], sizeof p->names[i], "gpu%03u", pool[i]);

    /* 2. spares, then lemons among the training nodes (3 per 60) */
    for (uint32_t i = 0; i < b.n; i++) b.scratch[i] = i;
    pick_k(&b, b.scratch, b.n, c->spare_nodes, b.spare);
    uint32_t n_train = b.n - c->spare_nodes, k = 0;
    for (uint32_t i = 0; i < b.n; i++) if (!b.spare[i]) b.scratch[k++] = i;
    uint32_t n_lemon = (uint32_t)((n_train * 3 + 30) / 60);
    if (n_lemon < 1 && n_train >= 2) n_lemon = 1;
    pick_k(&b, b.scratch, k, n_lemon, b.lemon);

    /* 3-5 */
    if ((rc = gen_hw_failures(&b)) != GW_OK) goto fail;
    if ((rc = gen_sessions(&b)) != GW_OK) goto fail;
    if ((rc = gen_baits(&b)) != GW_OK) goto fail;
    for (size_t i = 0; i < b.fails.n; i++)
        if (FAIL(&b, i).t_kill == GW_SIM_NO_TIME) FAIL(&b, i).t_kill = FAIL(&b, i).t_fault;
    if ((rc = sort_events(&b)) != GW_OK) goto fail;

    tl->failures = b.fails.p; tl->n_failures = b.fails.n; b.fails.p = NULL;
    p->fail_nodes = b.fnodes.p; b.fnodes.p = NULL;
    tl->sessions = b.sess.p; tl->n_sessions = b.sess.n; b.sess.p = NULL; b.sess.n = 0;
    tl->checkpoints = b.ckpts.p; tl->n_checkpoints = b.ckpts.n; b.ckpts.p = NULL;
    tl->baits = b.baits.p; tl->n_baits = b.baits.n; b.baits.p = NULL;
    tl->lemon = b.lemon; b.lemon = NULL;
    p->spare = b.spare; b.spare = NULL;
    tl->priv = p;                                     /* from here tl owns everything */
    p = NULL;
    struct gw_sim_priv *tp = tl->priv;
    size_t nc = tl->n_checkpoints ? tl->n_checkpoints : 1;
    tp->ckpt_avg_bps = malloc(nc * sizeof *tp->ckpt_avg_bps);
    tp->ckpt_planned_ms = malloc(nc * sizeof *tp->ckpt_planned_ms);
    rc = GW_ENOMEM;
    if (!tp->ckpt_avg_bps || !tp->ckpt_planned_ms) goto fail;
    const struct ckx *cx = b.ckx.p;
    for (size_t i = 0; i < tl->n_checkpoints; i++) {
        tp->ckpt_avg_bps[i] = cx[i].avg_bps;
        tp->ckpt_planned_ms[i] = cx[i].planned_ms;
    }
    if ((rc = build_index(tl, tp)) != GW_OK) goto fail;
    assign_bottlenecks(tl, tp);
    *out = tl;
    tl = NULL;
    rc = GW_OK;
    goto done;
fail:
    if (rc == GW_ENOMEM) gw_error_set(err, GW_ENOMEM, "simulator timeline: out of memory");
    gw_sim_timeline_free(tl);                         /* NULL-safe; owns what was handed over */
    if (p) free_priv(p, c->nodes, 0);
done:
    free(pool);
    if (b.fnodes.p) {
        uint8_t **fn = b.fnodes.p;
        for (size_t i = 0; i < b.fnodes.n; i++) free(fn[i]);
    }
    free(b.fnodes.p);
    free(b.fails.p);
    for (size_t i = 0; i < b.sess.n; i++) free(SESS(&b, i).nodes);
    free(b.sess.p);
    free(b.ckpts.p);
    free(b.ckx.p);
    free(b.baits.p);
    free(b.spare);
    free(b.lemon);
    free(b.scratch);
    free(b.hw);
    if (b.node_hw)
        for (uint32_t i = 0; i < b.n; i++) free(b.node_hw[i].p);
    free(b.node_hw);
    return rc;
}

/* ----------------------------------------------------------- node state */
/* Index of the last entry whose key is <= t in a sorted array of n, or -1;
 * key is an expression of mid_ (the probed index). */
#define LAST_LE(n, key, t, out) do {                                \
        size_t lo_ = 0, hi_ = (n);                                  \
        while (lo_ < hi_) {                                         \
            size_t mid_ = lo_ + (hi_ - lo_) / 2;                    \
            if ((key) <= (t)) lo_ = mid_ + 1; else hi_ = mid_;      \
        }                                                           \
        (out) = (ptrdiff_t)lo_ - 1;                                 \
    } while (0)

static size_t count_le(const int64_t *a, size_t n, int64_t t)
{
    ptrdiff_t k;
    LAST_LE(n, a[mid_], t, k);
    return (size_t)(k + 1);
}

/* Collects active entries (t_start <= t < t_end) in ascending index order
 * into all[] (up to all_max, for the up/down flags) and the last max of
 * them into out[]; returns how many are in all[]. */
static uint32_t stab(const struct gw_sim_ival *v, size_t n, int64_t t, uint32_t *out,
                     uint32_t max, uint32_t *all, uint32_t all_max)
{
    ptrdiff_t k;
    LAST_LE(n, v[mid_].t_start, t, k);
    uint32_t m = 0;
    for (ptrdiff_t i = k; i >= 0 && v[i].max_end > t; i--) {
        if (v[i].t_end <= t) continue;
        if (m < all_max) all[m] = v[i].idx;
        m++;
    }
    if (m > all_max) m = all_max;
    /* ascending event index */
    for (uint32_t a = 1; a < m; a++) {
        uint32_t x = all[a], b = a;
        while (b > 0 && all[b - 1] > x) { all[b] = all[b - 1]; b--; }
        all[b] = x;
    }
    /* over the cap, keep the most recent events (highest indexes): a new
     * fault matters more to the series than an old long-running one */
    uint32_t w = m < max ? m : max;
    memcpy(out, all + (m - w), w * sizeof *out);
    return m;
}

#define STAB_MAX 256

int gw_sim_node_state_at(const struct gw_sim_timeline *tl, uint32_t node, int64_t t,
                         struct gw_sim_node_state *st)
{
    if (!tl || !tl->priv || !st) return GW_EINVAL;
    if (node >= tl->cfg.nodes) return GW_EINVAL;
    const struct gw_sim_priv *p = tl->priv;
    const struct gw_sim_node_idx *x = &p->nodes[node];
    memset(st, 0, sizeof *st);
    const int64_t t0 = tl->cfg.start_ms, t1 = t0 + tl->cfg.duration_ms;

    /* phase: the node's last session starting at or before t, then the
     * global checkpoint list (sessions and checkpoints never overlap) */
    ptrdiff_t k;
    LAST_LE(x->n_sess, tl->sessions[x->sess[mid_]].t_start, t, k);
    const struct gw_sim_session *s = k >= 0 ? &tl->sessions[x->sess[k]] : NULL;
    st->checkpoint = -1;
    if (s && t < s->t_end) {
        st->session = (int32_t)x->sess[k];
        if (t < s->t_steady) {
            st->phase = GW_SIM_PHASE_STARTUP;
            st->phase_start = s->t_start;
            st->phase_end = s->t_steady < s->t_end ? s->t_steady : s->t_end;
        } else {
            ptrdiff_t c;
            LAST_LE(tl->n_checkpoints, tl->checkpoints[mid_].t_start, t, c);
            const struct gw_sim_checkpoint *ck =
                c >= 0 && tl->checkpoints[c].session == (uint32_t)st->session ? &tl->checkpoints[c] : NULL;
            if (ck && t < ck->t_end) {
                st->phase = ck->phase == GW_SIM_CKPT_SAVE ? GW_SIM_PHASE_SAVE : GW_SIM_PHASE_LOAD;
                st->phase_start = ck->t_start;
                st->phase_end = ck->t_end;
                st->checkpoint = (int32_t)c;
            } else {
                st->phase = GW_SIM_PHASE_TRAIN;
                st->phase_start = ck ? ck->t_end : s->t_steady;
                size_t nx = (size_t)(c + 1);
                st->phase_end = nx < tl->n_checkpoints && tl->checkpoints[nx].session == (uint32_t)st->session
                                    ? tl->checkpoints[nx].t_start : s->t_end;
            }
        }
    } else {
        st->phase = GW_SIM_PHASE_IDLE;
        st->session = -1;
        st->phase_start = s ? s->t_end : t0;
        st->phase_end = (size_t)(k + 1) < x->n_sess ? tl->sessions[x->sess[k + 1]].t_start : t1;
        if (st->phase_start < t0) st->phase_start = t0;
        if (st->phase_end > t1) st->phase_end = t1;
    }
    if (st->checkpoint >= 0) {
        uint32_t ci = (uint32_t)st->checkpoint;
        const struct gw_sim_checkpoint *ck = &tl->checkpoints[ci];
        double per_node = p->ckpt_members[ci]
                              ? p->ckpt_avg_bps[ci] / (double)p->ckpt_members[ci] : 0;
        double rate = per_node * gw_sim_ckpt_weight(ci, node) * p->ckpt_norm[ci];
        int flat = ck->bottleneck == GW_SIM_BN_SERVER || ck->bottleneck == GW_SIM_BN_LINK;
        if (ck->bottleneck == GW_SIM_BN_LINK)
            rate = (double)tl->cfg.storage_nics * GW_SIM_STORAGE_NIC_BPS *
                   gw_sim_link_util(tl->cfg.seed, ci, node);
        if (ck->phase == GW_SIM_CKPT_SAVE) {
            double head = GW_SIM_SAVE_HEAD * (double)p->ckpt_planned_ms[ci];
            if (!flat) rate *= (double)(t - ck->t_start) < head ? GW_SIM_SAVE_PEAK : GW_SIM_SAVE_TAIL;
            st->nfs_write_bps = rate;
        } else {
            st->nfs_read_bps = rate;
        }
    }

    uint32_t all[STAB_MAX];
    st->dcgm_up = 1;
    st->node_up = 1;
    uint32_t nf = stab(x->fails, x->n_fails, t, st->failures, GW_SIM_STATE_MAX_ACTIVE, all, STAB_MAX);
    for (uint32_t i = 0; i < nf; i++) {
        const struct gw_sim_failure *f = &tl->failures[all[i]];
        if (f->effect == GW_SIM_EFF_NODE_DOWN && t >= f->t_fault) st->dcgm_up = st->node_up = 0;
        if (f->effect == GW_SIM_EFF_OS_COLLAPSE && f->t_silent != GW_SIM_NO_TIME && t >= f->t_silent)
            st->dcgm_up = st->node_up = 0;
    }
    st->n_failures = nf < GW_SIM_STATE_MAX_ACTIVE ? nf : GW_SIM_STATE_MAX_ACTIVE;
    uint32_t nb = stab(x->baits, x->n_baits, t, st->baits, GW_SIM_STATE_MAX_ACTIVE, all, STAB_MAX);
    for (uint32_t i = 0; i < nb; i++) {
        const struct gw_sim_bait *b = &tl->baits[all[i]];
        if (b->kind == GW_SIM_BAIT_SCRAPE_GAP || b->kind == GW_SIM_BAIT_EXPORTER_RESTART) {
            if (b->job == 0 || b->job == 2) st->dcgm_up = 0;
            if (b->job == 1 || b->job == 2) st->node_up = 0;
        }
    }
    st->n_baits = nb < GW_SIM_STATE_MAX_ACTIVE ? nb : GW_SIM_STATE_MAX_ACTIVE;
    st->dcgm_restarts = (uint32_t)count_le(x->dcgm_restarts, x->n_dcgm_restarts, t);
    st->node_restarts = (uint32_t)count_le(x->node_restarts, x->n_node_restarts, t);
    return GW_OK;
}
