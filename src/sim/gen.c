/* gen.c - the simulator's generator: the value of every series at every
 * scrape, driven by the timeline's node state (phase, active failures and
 * baits, exporter restarts, target up/down).
 *
 * Scrapes: target k (node k/2, job k%2) of round r is scraped at
 *   t = start_ms + r * interval_ms + offset_k + jitter(k, r)
 * with offset_k fixed in [0, interval) and |jitter| <= min(cfg.jitter_ms,
 * interval/2 - 1), so one series' timestamps strictly increase. Rounds
 * come one after the other, targets in node order within a round.
 * A target yields nothing when its node is down (NODE_DOWN fault), on a
 * scrape-gap bait or a random miss (cfg.scrape_miss_prob); only up=0 and
 * the scrape meta series when its exporter is down (state dcgm_up/node_up).
 *
 * Values: counters are flat double accumulators advanced by rate x elapsed
 * time and emitted whole (cpu seconds to 0.01 s, mountstats times to 1 ms);
 * gauges are computed from the phase with per-GPU offsets and drift.
 * Noise is counter-based (splitmix64 of series key and round), so values
 * do not depend on which other series a filter keeps, and the same config
 * and seed give the same stream. Exporter restarts zero that target's
 * counters (row-remap counts and aggregate ECC persist in the GPU's
 * InfoROM; remap counts restart at 0 when the failing GPU is replaced at
 * the failure's t_recovered) and clear the XID gauge. During a checkpoint
 * the NFS client's counters follow the checkpoint's bottleneck (ckpt_io:
 * RTT, queue share, I/O size, transport queues, slots reached, consistent
 * with Little's law). See docs/simulator.md "Series" for the ranges. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/sim.h"
#include "sim/gen_int.h"
#include "sim/timeline_int.h"

#define SENT_INT 9223372036854775794.0   /* DCGM_INT64_NOT_SUPPORTED */
#define SENT_FP 140737488355330.0        /* DCGM_FP64_NOT_SUPPORTED */
#define FB_RESERVED_MIB 646.0
#define XID_WINDOW_MS 300000
#define SLOT_LIMIT GW_SIM_SLOT_LIMIT
#define NIC_SPEED GW_SIM_STORAGE_NIC_BPS  /* 200 Gb/s in bytes/s */
#define IO_MAX 1048576.0                 /* rsize / wsize of the mount */
#define IO_MIN 4096.0

/* ---- per-scrape context --------------------------------------------------- */

struct gctx {
    int vanish, sentinel, frozen;
    double util, power, temp, memtemp, smclk, fb_used, nvl_bps, pcie_tx, pcie_rx;
    double tensor, dram, memcopy;
    uint32_t reasons;
    int remap_pending;
    /* counter increments this scrape */
    double inc_sbe, inc_dbe, inc_corr, inc_uncorr, inc_pcie, inc_flit, inc_data, inc_replay,
        inc_recovery;
    double thermal_frac, power_frac;
};

struct nctx {
    double load;             /* 0..1 GPU activity of the phase */
    double intr, ctxt, forks, procs_running, procs_blocked;
    double cpu_frac[GW_SIM_CPU_MODES];
    double nfs_w, nfs_r;
    double getattr_lat, write_rtt, write_q, read_rtt, read_q;
    double wsize, rsize;     /* bytes per WRITE / READ request */
    double backlog_per_send, sending_per_send, pending_per_send;   /* transport queue sums per send */
    double slot_hw;          /* RPC slots reached now per transport (0: none beyond the usual) */
    int slot_pinned;         /* slot_hw on every transport (slot-limited), else per-transport spread */
    int64_t ckpt;            /* checkpoint in progress (-1), for per-(checkpoint, transport) draws */
    double pgpgout, pgpgin, pgfault;
    double rdma_bps;
    double scrape_extra;     /* extra exporter latency (s) */
    int nvl_fault;
    double mem_pressure;     /* 0..1: host memory pressure before an OS collapse */
    double mem_floor;        /* MemAvailable share reached at full pressure */
    int os_collapse;         /* the node's OS is wedged */
    double intr_frac;
};

static inline double qz(double x, double k) { return floor(x * k) / k; }
static inline double clampd(double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; }
/* Two uniforms from one hash: a cheap centred noise in [-1, 1). */
static inline double tri(uint64_t h) { return gw_sim_u01(h) + gw_sim_u01(h * 0x2545F4914F6CDD1Dull) - 1.0; }

static int in_window(int64_t t, int64_t a, int64_t b)
{
    return a != GW_SIM_NO_TIME && t >= a && (b == GW_SIM_NO_TIME || t < b);
}
/* An instant event at te falls into this scrape (prev, t]. */
static int hit(int64_t te, int64_t prev, int64_t t) { return te != GW_SIM_NO_TIME && te > prev && te <= t; }

/* ---- open / close ---------------------------------------------------------- */

int gw_sim_gen_open(struct gw_sim_gen **out, const struct gw_sim_timeline *tl,
                    gw_sim_series_filter filter, void *filter_ud, struct gw_error *err)
{
    if (!out || !tl)
        return gw_error_set(err, GW_EINVAL, "simulator: no timeline");
    const struct gw_sim_config *c = &tl->cfg;
    int rc = gw_sim_config_check(c, err);
    if (rc != GW_OK)
        return rc;
    struct gw_sim_gen *g = calloc(1, sizeof(*g));
    if (!g)
        return gw_error_set(err, GW_ENOMEM, "simulator: out of memory");
    g->tl = tl;
    g->cfg = *c;
    g->filter = filter;
    g->filter_ud = filter_ud;
    g->spec = gw_sim_gpu_spec(c->gpu_model);
    g->targets = calloc((size_t)c->nodes * 2, sizeof(*g->targets));
    g->rt = calloc(c->nodes, sizeof(*g->rt));
    g->last_ctx = calloc((size_t)c->nodes * GW_SIM_MAX_GPUS, sizeof(struct gctx));
    g->has_last = calloc((size_t)c->nodes * GW_SIM_MAX_GPUS, 1);
    if (!g->targets || !g->rt || !g->last_ctx || !g->has_last) {
        rc = gw_error_set(err, GW_ENOMEM, "simulator: out of memory");
        goto fail;
    }
    uint64_t s0 = gw_sim_mix(c->seed ^ 0x67656e6572ull);
    for (uint32_t n = 0; n < c->nodes; n++) {
        struct gw_sim_node_rt *r = &g->rt[n];
        uint64_t h = gw_sim_mix(s0 ^ ((uint64_t)n << 20));
        r->boot_time_s = (double)(c->start_ms / 1000) - 86400.0 * (3.0 + 20.0 * gw_sim_u01(h)) -
                         (double)(h % 3600);
        r->mem_total = 2164173651968.0 - 1024.0 * (double)(h % 65536);
        for (uint32_t t = 0; t < GW_SIM_MAX_TRANSPORTS; t++)
            r->maxslots[t] = (double)(8 + gw_sim_mix(h ^ t) % 40);
        r->load1 = r->load5 = r->load15 = 1.0;
        r->mem_event_until = GW_SIM_NO_TIME;
        for (uint32_t i = 0; i < GW_SIM_MAX_GPUS; i++) {
            struct gw_sim_gpu *gs = &r->gpu[i];
            uint64_t hg = gw_sim_mix(h ^ (0xa0 + i));
            gs->temp_off = 5.0 * gw_sim_u01(hg) - 2.5;
            gs->clk_off = gw_sim_u01(gw_sim_mix(hg ^ 1));
            gs->drift_phase = 6.283185307179586 * gw_sim_u01(gw_sim_mix(hg ^ 2));
            gs->latched_failure = -1;
            gs->mem_failure = -1;
        }
    }
    for (uint32_t k = 0; k < c->nodes * 2; k++) {
        g->targets[k].offset_ms = (int64_t)(gw_sim_mix(s0 ^ 0x0ff5e7ull ^ ((uint64_t)k << 8)) %
                                            (uint64_t)c->interval_ms);
        g->targets[k].last_t = INT64_MIN;
    }
    g->jitter_ms = c->jitter_ms < 0 ? 0 : c->jitter_ms;
    if (g->jitter_ms > c->interval_ms / 2 - 1)
        g->jitter_ms = c->interval_ms / 2 - 1;
    g->n_rounds = c->duration_ms / c->interval_ms;
    if (g->n_rounds < 1)
        g->n_rounds = 1;
    if ((rc = gw_sim_cat_build(g, err)) != GW_OK)
        goto fail;
    size_t mx = 0;
    for (uint32_t k = 0; k < c->nodes * 2; k++)
        if (g->targets[k].n_sids > mx)
            mx = g->targets[k].n_sids;
    g->out_cap = mx + (size_t)c->gpus * (2 * GW_SIM_XID_SLOTS + 1) + 8;
    g->out_ids = malloc(g->out_cap * sizeof(*g->out_ids));
    g->out_v = malloc(g->out_cap * sizeof(*g->out_v));
    if (!g->out_ids || !g->out_v) {
        rc = gw_error_set(err, GW_ENOMEM, "simulator: out of memory");
        goto fail;
    }
    *out = g;
    return GW_OK;
fail:
    gw_sim_gen_close(g);
    return rc;
}

void gw_sim_gen_close(struct gw_sim_gen *g)
{
    if (!g)
        return;
    if (g->targets)
        for (uint32_t k = 0; k < g->cfg.nodes * 2; k++)
            free(g->targets[k].sids);
    free(g->targets);
    free(g->rt);
    free(g->last_ctx);
    free(g->has_last);
    gw_sim_cat_free(g);
    free(g->out_ids);
    free(g->out_v);
    free(g);
}

size_t gw_sim_gen_series_count(const struct gw_sim_gen *g) { return g ? g->n_series : 0; }

const uint8_t *gw_sim_gen_series_labels(const struct gw_sim_gen *g, uint32_t id, size_t *len)
{
    if (!g || id >= g->n_series) {
        if (len)
            *len = 0;
        return NULL;
    }
    if (len)
        *len = g->series[id].canon_len;
    return g->series[id].canon;
}

const uint8_t *gw_sim_gen_series_pb(const struct gw_sim_gen *g, uint32_t id, size_t *len)
{
    if (!g || id >= g->n_series) {
        if (len)
            *len = 0;
        return NULL;
    }
    if (len)
        *len = g->series[id].pb_len;
    return g->series[id].pb;
}

const char *gw_sim_gen_series_metric(const struct gw_sim_gen *g, uint32_t id)
{
    if (!g || id >= g->n_series)
        return NULL;
    return gw_sim_families[g->series[id].fam].name;
}

int gw_sim_gen_families(const struct gw_sim_gen *g, gw_sim_family_cb cb, void *ud)
{
    if (!cb)
        return GW_EINVAL;
    for (unsigned f = 0; f < F_COUNT_; f++) {
        if (g && !g->keep[f])
            continue;
        int rc = cb(ud, gw_sim_families[f].name, gw_sim_families[f].type, gw_sim_families[f].help);
        if (rc != 0)
            return rc;
    }
    return GW_OK;
}

/* ---- context from the node state ------------------------------------------ */

static double phase_load(enum gw_sim_phase p)
{
    switch (p) {
    case GW_SIM_PHASE_IDLE: return 0.0;
    case GW_SIM_PHASE_STARTUP: return 0.15;
    case GW_SIM_PHASE_TRAIN: return 1.0;
    case GW_SIM_PHASE_SAVE: return 0.55;
    case GW_SIM_PHASE_LOAD: return 0.3;
    }
    return 0.0;
}

/* GPU of a node-level event: the failure's GPU, else one picked by id. */
static uint32_t pick_gpu(const struct gw_sim_gen *g, int32_t gpu, uint32_t id)
{
    return gpu >= 0 && (uint32_t)gpu < g->cfg.gpus ? (uint32_t)gpu : id % g->cfg.gpus;
}

/* Training-session framebuffer use of a GPU (MiB, before noise). */
static double fb_session(const struct gw_sim_gen *g, const struct gw_sim_gpu *gs)
{
    return g->spec->fb_session_lo_mib + (g->spec->fb_session_hi_mib - g->spec->fb_session_lo_mib) * gs->clk_off;
}

static void gpu_base(const struct gw_sim_gen *g, uint32_t node, uint32_t i,
                     const struct gw_sim_node_state *st, int64_t t, uint64_t rk, struct gctx *c)
{
    const struct gw_sim_gpu *gs = &g->rt[node].gpu[i];
    const struct gw_sim_gpu_spec *sp = g->spec;
    const double k = sp->power_limit_w / 1000.0;   /* 1 on B200: power figures scale with the limit */
    uint64_t h = gw_sim_mix(rk ^ (0x100 + i));
    double u = gw_sim_u01(h), n1 = tri(gw_sim_mix(h ^ 1)), n2 = tri(gw_sim_mix(h ^ 2));
    double drift = 1.5 * sin(gs->drift_phase + (double)t * (6.283185307179586 / 2.16e7));
    memset(c, 0, sizeof(*c));
    double fbt = fb_session(g, gs);   /* B200: 150-175 GB in a session */
    switch (st->phase) {
    case GW_SIM_PHASE_IDLE:
        c->util = 0;
        c->power = sp->idle_power_w + 8.0 * k * n1;
        c->smclk = sp->sm_clock_idle_mhz;
        c->fb_used = 0;
        c->reasons = 0x1;
        break;
    case GW_SIM_PHASE_STARTUP: {
        double p = st->phase_end > st->phase_start
                       ? clampd((double)(t - st->phase_start) / (double)(st->phase_end - st->phase_start), 0, 1)
                       : 1.0;
        c->util = floor(15.0 * u);
        c->power = (200.0 + 150.0 * u) * k;
        c->smclk = sp->sm_clock_max_mhz - 30.0 * u;
        c->fb_used = floor(fbt * p * 0.6);
        c->nvl_bps = 2e9 * u;
        break;
    }
    case GW_SIM_PHASE_TRAIN: {
        double lo = sp->busy_power_lo_w, hi = sp->busy_power_hi_w;
        c->util = 95.0 + floor(6.0 * u);
        if (c->util > 100)
            c->util = 100;
        c->power = lo + 45.0 * k + (hi - lo - 90.0 * k) * gs->clk_off + 45.0 * k * n1;
        c->smclk = sp->sm_clock_max_mhz - floor(60.0 * gw_sim_u01(gw_sim_mix(h ^ 3)));
        c->fb_used = floor(fbt + 300.0 * n2);
        c->nvl_bps = 3.0e11 * (0.9 + 0.1 * u);
        c->tensor = 0.42 + 0.12 * gs->clk_off + 0.04 * n2;
        c->dram = 0.38 + 0.15 * gs->clk_off + 0.04 * n1;
        c->memcopy = 25.0 + 10.0 * u;
        c->pcie_tx = 1.5e9 * (0.8 + 0.4 * u);
        c->pcie_rx = 2.0e9 * (0.8 + 0.4 * u);
        if (c->power > sp->power_limit_w - 40.0 * k)
            c->reasons |= 0x4;       /* SW power cap: benign */
        break;
    }
    case GW_SIM_PHASE_SAVE:
        c->util = 30.0 + floor(40.0 * u);
        c->power = (450.0 + 150.0 * u) * k;
        c->smclk = sp->sm_clock_max_mhz - floor(40.0 * u);
        c->fb_used = floor(fbt + 300.0 * n2);
        c->nvl_bps = 2.0e10 * (0.5 + u);
        c->tensor = 0.12 * u;
        c->dram = 0.15 + 0.1 * u;
        c->memcopy = 40.0 + 20.0 * u;
        c->pcie_tx = st->nfs_write_bps / g->cfg.gpus * 1.05 + 1e8;
        c->pcie_rx = 2e8 * u;
        break;
    case GW_SIM_PHASE_LOAD:
        c->util = 10.0 + floor(35.0 * u);
        c->power = (300.0 + 150.0 * u) * k;
        c->smclk = sp->sm_clock_max_mhz - floor(40.0 * u);
        c->fb_used = floor(fbt * (0.5 + 0.5 * u));
        c->nvl_bps = 1.0e10 * u;
        c->tensor = 0.05 * u;
        c->dram = 0.1 + 0.1 * u;
        c->memcopy = 30.0 * u;
        c->pcie_tx = 2e8 * u;
        c->pcie_rx = st->nfs_read_bps / g->cfg.gpus * 1.05 + 1e8;
        break;
    }
    double heat = c->power / sp->power_limit_w;   /* 0.14 idle .. 1.0 */
    c->temp = 28.0 + 44.0 * heat + gs->temp_off + drift + 0.4 * n2;
    if (st->phase == GW_SIM_PHASE_TRAIN)
        c->temp = clampd(c->temp, 55.0, 75.0);
    c->memtemp = c->temp - 4.0 + 0.5 * n1;
}

/* Shows XID code of failure fi on one GPU once: the gauge latches it and
 * the count window records the occurrence. A code already shown for that
 * failure is not shown again (an exporter restart clears it for good). */
static int latch(struct gw_sim_gen *g, uint32_t node, uint32_t i, uint32_t fi, uint32_t code,
                 int64_t t, int job, struct gw_error *err)
{
    struct gw_sim_gpu *gs = &g->rt[node].gpu[i];
    uint64_t key = ((uint64_t)fi << 16) | (code & 0xffffu);
    uint32_t m = gs->n_seen < 8 ? gs->n_seen : 8;
    for (uint32_t j = 0; j < m; j++)
        if (gs->seen[j] == key)
            return GW_OK;
    if (job != GW_SIM_JOB_DCGM)
        return GW_OK;   /* the dcgm target's own scrape records it */
    gs->seen[gs->n_seen % 8] = key;
    gs->n_seen++;
    gs->latched = code;
    gs->latched_failure = (int32_t)fi;
    uint32_t sid;
    int rc = gw_sim_cat_xid_series(g, node, i, code, 1, &sid, err);
    if (rc != GW_OK)
        return rc;
    for (uint32_t j = 0; j < gs->n_cnt; j++)
        if (gs->cnt_code[j] == code)
            gs->cnt_last[j] = t;
    return GW_OK;
}

struct gctx_all {
    struct gctx gpu[GW_SIM_MAX_GPUS];
    struct nctx n;
};

/* A failure's precursor at t, prog along its ramp (0..1), into the GPU
 * context c and the node context nx; u is the scrape's draw for it. */
static void apply_precursor(const struct gw_sim_failure *f, double prog, double u, double dt_h, int64_t t,
                            struct gctx *c, struct nctx *nx)
{
    const struct gw_sim_signature *sg = &f->sig;
    double sev = clampd(f->severity, 0, 1);
    switch (f->precursor) {
    case GW_SIM_PRE_REMAP_RAMP: {
        double every_h = (24.0 - 22.0 * prog) / sg->mag;   /* +1 every 24 h early .. 2 h late */
        if (u < dt_h / every_h)
            c->inc_corr += 1;
        break;
    }
    case GW_SIM_PRE_SBE_RAMP: {
        double rate = (0.3 + 30.0 * prog * prog * (0.5 + sev)) * sg->mag * dt_h;
        c->inc_sbe += floor(rate) + (u < rate - floor(rate) ? 1 : 0);
        break;
    }
    case GW_SIM_PRE_PENDING_REMAP:
        c->remap_pending = 1;
        break;
    case GW_SIM_PRE_NVLINK_CRC: {
        double rate = (0.5 + 60.0 * prog * prog * (0.5 + sev)) * sg->mag * dt_h * 60.0;
        double n = floor(rate) + (u < rate - floor(rate) ? 1 : 0);
        c->inc_flit += ceil(n * 0.6);
        c->inc_data += floor(n * 0.2);
        c->inc_replay += floor(n * 0.3);
        if (prog > 0.8 && u < 0.05)
            c->inc_recovery += 1;
        break;
    }
    case GW_SIM_PRE_PCIE_REPLAY:
        if (prog > sg->onset)
            c->inc_pcie += floor((5.0 + floor(45.0 * u)) * sg->mag);
        break;
    case GW_SIM_PRE_THROTTLE: {
        int64_t ep = sg->episode_ms > 0 ? sg->episode_ms : 1200000;
        /* episodes from the precursor's start: it is where the signal begins */
        double x = (double)((t - f->t_precursor_start) % ep) / (double)ep;
        double on = 0.3 + 0.5 * prog;
        if (x < on) {
            c->reasons |= 0x8 | 0x20 | (sev > 0.7 ? 0x40u : 0u);
            c->smclk *= 1.0 - sg->clk_deficit;
            c->temp += sg->temp_rise;
            c->thermal_frac = 0.9;
        }
        break;
    }
    case GW_SIM_PRE_MEM_PRESSURE:
        /* host memory pressure: MemAvailable slides toward mem_floor, paging out */
        nx->mem_pressure = prog > nx->mem_pressure ? prog : nx->mem_pressure;
        nx->mem_floor = sg->mem_floor;
        break;
    case GW_SIM_PRE_NONE:
    case GW_SIM_PRE_COUNT_:
        break;
    }
}

/* A faulted failure's effect on the GPUs it hits (all of the node's when
 * f->gpu < 0) and on the node's scrape. */
static void apply_effect(struct gw_sim_gen *g, struct gw_sim_node_rt *rt, const struct gw_sim_node_state *st,
                         const struct gw_sim_failure *f, uint32_t gi, uint64_t h, double u, struct gctx_all *a)
{
    const struct gw_sim_signature *sg = &f->sig;
    int all = f->gpu < 0;
    for (uint32_t i = 0; i < g->cfg.gpus; i++) {
        if (!all && i != gi)
            continue;
        if (f->effect == GW_SIM_EFF_VANISH)
            a->gpu[i].vanish = 1;
        else if (f->effect == GW_SIM_EFF_SENTINEL)
            a->gpu[i].sentinel = 1;
        else if (f->effect == GW_SIM_EFF_FROZEN) {
            /* GSP hang: readings repeat bit for bit (applied after the baits),
               power at idle */
            a->gpu[i].frozen = 1;
            a->gpu[i].power = g->spec->idle_power_w + 10.0 * u * g->spec->power_limit_w / 1000.0;
        } else if (f->effect == GW_SIM_EFF_OS_COLLAPSE) {
            /* processes wedged: util near 0 with the framebuffer still held */
            struct gctx *x = &a->gpu[i];
            double fb = floor(fb_session(g, &rt->gpu[i]));
            x->util = floor(clampd(sg->util_level + 2.0 * tri(gw_sim_mix(h ^ (0x77 + i))), 0, 10));
            x->fb_used = x->fb_used > 0.5 * fb ? floor(fb) : x->fb_used;
            if (x->fb_used == 0 && st->phase == GW_SIM_PHASE_IDLE && f->session >= 0)
                x->fb_used = floor(fb);
            x->power = g->spec->idle_power_w + (x->util / 100.0) * (g->spec->busy_power_hi_w - g->spec->idle_power_w);
            x->tensor = x->util / 100.0 * 0.3;
            x->dram = x->util / 100.0 * 0.3;
            x->memcopy = floor(x->util * 0.3);
            x->nvl_bps = 0;
            x->pcie_tx = x->pcie_rx = 1e6;
            x->smclk = g->spec->sm_clock_max_mhz - floor(60.0 * u);
            x->reasons &= ~0x4u;
        }
    }
    if (f->effect == GW_SIM_EFF_OS_COLLAPSE) {
        a->n.os_collapse = 1;
        a->n.intr_frac = sg->intr_frac;
    }
    if (f->effect == GW_SIM_EFF_VANISH || f->effect == GW_SIM_EFF_FROZEN ||
        f->effect == GW_SIM_EFF_SENTINEL)
        a->n.scrape_extra += sg->scrape_extra_s * (0.5 + u);
}

/* What a faulted failure's class adds to the GPU context c at t (prev:
 * the target's previous scrape). */
static void apply_fault_class(const struct gw_sim_failure *f, struct gw_sim_node_rt *rt, int64_t t, int64_t prev,
                              double u, struct gctx *c, struct nctx *nx)
{
    const struct gw_sim_signature *sg = &f->sig;
    double sev = clampd(f->severity, 0, 1);
    switch (f->cls) {
    case GW_SIM_NVLINK:
        nx->nvl_fault = 1;
        if (hit(f->t_fault, prev, t)) {
            c->inc_recovery += 1 + floor(3.0 * sev);
            c->inc_replay += 20 + floor(200.0 * u);
            c->inc_flit += 10 + floor(100.0 * u);
        }
        break;
    case GW_SIM_MEMORY:
        if (hit(f->t_fault, prev, t)) {
            c->inc_uncorr += 1 + floor(3.0 * sev);
            c->inc_dbe += 1;
            rt->mem_event_until = f->t_fault + 600000;
        }
        break;
    case GW_SIM_FAIL_SLOW: {
        /* thermal fail-slow: slowdown bits, clock below the siblings, die
           temperature climbing to temp_rise above them over ramp_ms */
        double ramp = sg->ramp_ms > 0 ? clampd((double)(t - f->t_fault) / (double)sg->ramp_ms, 0, 1) : 1;
        c->reasons |= sg->reason_bits;
        c->smclk *= 1.0 - sg->clk_deficit;
        c->temp += sg->temp_rise * ramp;
        c->memtemp += 0.5 * sg->temp_rise * ramp;
        c->thermal_frac = 1.0;
        break;
    }
    case GW_SIM_FELL_OFF_BUS:
    case GW_SIM_GSP:
    case GW_SIM_OTHER_HW:
    case GW_SIM_APP_XID:
    case GW_SIM_COLLECTIVE:
    case GW_SIM_CLASS_COUNT_:
        break;
    }
}

/* One active failure fi at t: precursor, fault effects, XID latches. */
static int apply_failure(struct gw_sim_gen *g, uint32_t node, const struct gw_sim_node_state *st, uint32_t fi,
                         int64_t t, int64_t prev, uint64_t rk, int job, struct gctx_all *a, struct gw_error *err)
{
    const struct gw_sim_failure *f = &g->tl->failures[fi];
    struct gw_sim_node_rt *rt = &g->rt[node];
    double dt_h = (double)(t - prev) / 3.6e6;
    int rc;
    uint32_t gi = pick_gpu(g, f->gpu, f->id);
    struct gctx *c = &a->gpu[gi];
    uint64_t h = gw_sim_mix(rk ^ 0xfa11 ^ ((uint64_t)f->id << 16));
    double u = gw_sim_u01(h);
    int pre = f->precursor != GW_SIM_PRE_NONE && f->t_precursor_start != GW_SIM_NO_TIME &&
              t >= f->t_precursor_start && t < f->t_fault;
    int faulted = in_window(t, f->t_fault, f->t_recovered);
    if (f->cls == GW_SIM_MEMORY && f->gpu >= 0)
        rt->gpu[gi].mem_failure = (int32_t)fi;
    if (pre) {
        /* progress along the whole ramp, also its part before the data */
        int64_t t0 = f->t_ramp_origin != GW_SIM_NO_TIME ? f->t_ramp_origin : f->t_precursor_start;
        double span = (double)(f->t_fault - t0);
        double prog = span > 0 ? clampd((double)(t - t0) / span, 0, 1) : 1;
        apply_precursor(f, prog, u, dt_h, t, c, &a->n);
        /* XID 63 shows with a pending remap, before the fatal XID */
        if (f->precursor == GW_SIM_PRE_PENDING_REMAP &&
            (rc = latch(g, node, gi, fi, 63, t, job, err)) != GW_OK)
            return rc;
    }
    if (faulted) {
        apply_effect(g, rt, st, f, gi, h, u, a);
        apply_fault_class(f, rt, t, prev, u, c, &a->n);
    }
    /* the failure's XID, latched from t_xid_visible on */
    if (f->xid && f->t_xid_visible != GW_SIM_NO_TIME && t >= f->t_xid_visible &&
        (f->t_recovered == GW_SIM_NO_TIME || t < f->t_recovered)) {
        for (uint32_t i = 0; i < g->cfg.gpus; i++) {
            int on = (i == gi) || (f->gpu < 0 && f->cls == GW_SIM_COLLECTIVE &&
                                   (gw_sim_mix((uint64_t)f->id * 31 + i) & 3) == 0);
            if (on && (rc = latch(g, node, i, fi, f->xid, t, job, err)) != GW_OK)
                return rc;
        }
    }
    return GW_OK;
}

/* The baits active at t into the GPU contexts. */
static void apply_baits(struct gw_sim_gen *g, const struct gw_sim_node_state *st, int64_t t, int64_t prev,
                        struct gctx_all *a)
{
    const struct gw_sim_timeline *tl = g->tl;
    for (uint32_t k = 0; k < st->n_baits && k < GW_SIM_STATE_MAX_ACTIVE; k++) {
        uint32_t bi = st->baits[k];
        if (bi >= tl->n_baits)
            continue;
        const struct gw_sim_bait *b = &tl->baits[bi];
        uint32_t gi = pick_gpu(g, b->gpu, b->id);
        switch (b->kind) {
        case GW_SIM_BAIT_STRAY_SBE:
            if (hit(b->t_start, prev, t))
                a->gpu[gi].inc_sbe += 1;
            break;
        case GW_SIM_BAIT_STRAY_PCIE:
            if (hit(b->t_start, prev, t))
                a->gpu[gi].inc_pcie += 1;
            break;
        case GW_SIM_BAIT_STRAY_NVLINK:
            if (hit(b->t_start, prev, t))
                a->gpu[gi].inc_flit += 1;
            break;
        case GW_SIM_BAIT_BENIGN_CLOCK:
            if (in_window(t, b->t_start, b->t_end))
                for (uint32_t i = 0; i < g->cfg.gpus; i++)
                    if (b->gpu < 0 || i == gi)
                        a->gpu[i].reasons |= (b->id & 1) ? 0x4u : 0x1u;
            break;
        case GW_SIM_BAIT_HOT_INLET:
            if (in_window(t, b->t_start, b->t_end))
                for (uint32_t i = 0; i < g->cfg.gpus; i++)
                    if (b->gpu < 0 || i == gi) {
                        a->gpu[i].temp += 3.0 + 2.0 * gw_sim_u01(gw_sim_mix(b->id));
                        a->gpu[i].memtemp += 2.0;
                    }
            break;
        case GW_SIM_BAIT_SCRAPE_GAP:
        case GW_SIM_BAIT_EXPORTER_RESTART:
        case GW_SIM_BAIT_COUNT_:
            break;
        }
    }
}

/* Frozen GPUs repeat their last readings exactly; only power moves (to idle). */
static void apply_frozen(struct gw_sim_gen *g, uint32_t node, struct gctx_all *a)
{
    struct gctx *last = (struct gctx *)g->last_ctx + (size_t)node * GW_SIM_MAX_GPUS;
    const uint8_t *has = g->has_last + (size_t)node * GW_SIM_MAX_GPUS;
    for (uint32_t i = 0; i < g->cfg.gpus; i++) {
        struct gctx *x = &a->gpu[i];
        if (!x->frozen)
            continue;
        double pw = x->power;
        int van = x->vanish, sen = x->sentinel;
        if (has[i])
            *x = last[i];
        x->frozen = 1;
        x->vanish = van;
        x->sentinel = sen;
        x->power = pw;
        x->inc_sbe = x->inc_dbe = x->inc_corr = x->inc_uncorr = x->inc_pcie = 0;
        x->inc_flit = x->inc_data = x->inc_replay = x->inc_recovery = 0;
        x->thermal_frac = x->power_frac = 0;
    }
}

/* Applies failures and baits to the per-GPU and node context, updates the
 * XID latch. prev = previous scrape time of this target. */
static int apply_events(struct gw_sim_gen *g, uint32_t node, const struct gw_sim_node_state *st,
                        int64_t t, int64_t prev, uint64_t rk, int job, struct gctx_all *a,
                        struct gw_error *err)
{
    int rc;
    for (uint32_t k = 0; k < st->n_failures && k < GW_SIM_STATE_MAX_ACTIVE; k++) {
        uint32_t fi = st->failures[k];
        if (fi >= g->tl->n_failures)
            continue;
        if ((rc = apply_failure(g, node, st, fi, t, prev, rk, job, a, err)) != GW_OK)
            return rc;
    }
    apply_baits(g, st, t, prev, a);
    apply_frozen(g, node, a);
    return GW_OK;
}

/* NFS client view of a checkpoint's I/O on one node, by what limits it
 * (the checkpoint's bottleneck, docs/simulator.md 10 "Checkpoint I/O"):
 * RTT (response time per request), queue share q of the request time,
 * I/O size, and the transport queue sums per send. Little's law holds
 * per transport: in flight = request rate x RTT; the queue holds
 * in flight x q / (1 - q). Parameters are drawn per (checkpoint, node),
 * with a little noise per scrape. */
static void ckpt_io(const struct gw_sim_gen *g, uint32_t node, uint32_t ci, uint64_t h, struct nctx *n)
{
    const struct gw_sim_checkpoint *ck = &g->tl->checkpoints[ci];
    int save = n->nfs_w > 1e8;
    double X = save ? n->nfs_w : n->nfs_r;             /* this node's rate, bytes/s */
    double nt = (double)g->n_transports;
    double p[6], e[4];
    for (int k = 0; k < 6; k++)
        p[k] = gw_sim_bn_unit(g->cfg.seed, ci, node, 8 + (uint32_t)k);
    for (int k = 0; k < 4; k++)
        e[k] = tri(gw_sim_mix(h ^ (0xb07700ull + (uint64_t)k)));
    double rtt, q, S = IO_MAX, infl, backlog;   /* infl: requests in flight per transport; backlog:
                                                   per send, or minus the queue's share in it */
    n->ckpt = ci;
    switch (ck->bottleneck) {
    case GW_SIM_BN_SLOTS: {                             /* slot table full: Little sets the I/O size */
        double fill = clampd(0.88 + 0.12 * p[1] + 0.02 * e[1], 0.85, 1.0);
        infl = SLOT_LIMIT * fill;
        rtt = (0.005 + 0.015 * p[0]) * (1.0 + 0.05 * e[0]);
        S = X * rtt / (nt * infl);
        if (S < IO_MIN || S > IO_MAX) {
            S = clampd(S, IO_MIN, IO_MAX);
            rtt = nt * infl * S / X;
        }
        q = clampd(0.90 + 0.07 * p[2] + 0.01 * e[2], 0.90, 0.985);
        backlog = -(0.85 + 0.10 * p[3]);                /* share of the queue waiting for a slot */
        n->slot_hw = SLOT_LIMIT;
        n->slot_pinned = 1;
        break;
    }
    case GW_SIM_BN_SERVER:                              /* the server answers slowly */
        rtt = 0.04 * pow(7.5, p[0]) * (1.0 + 0.08 * e[0]);   /* 40-300 ms, log-uniform */
        infl = X * rtt / (nt * S);
        if (infl > 0.8 * SLOT_LIMIT) {
            infl = 0.8 * SLOT_LIMIT;
            rtt = infl * nt * S / X;
        }
        q = clampd(0.04 + 0.24 * p[2] + 0.01 * e[2], 0.02, 0.30);
        backlog = 0.02 + 0.30 * p[3];                   /* slots rarely all taken */
        n->slot_hw = fmin(SLOT_LIMIT, ceil(infl * (1.6 + 1.4 * p[4])));
        break;
    case GW_SIM_BN_LINK:                                /* the storage link is full: socket waits */
        infl = 40.0 + 60.0 * p[0];
        rtt = infl * nt * S / X * (1.0 + 0.05 * e[0]);
        infl = X * rtt / (nt * S);
        q = clampd(0.30 + 0.30 * p[2] + 0.02 * e[2], 0.25, 0.65);
        backlog = 0.1 + 0.7 * p[3];
        n->slot_hw = fmin(SLOT_LIMIT, ceil(infl * (1.15 + 0.45 * p[4])));
        break;
    default:                                            /* healthy: nothing saturated */
        rtt = (0.0012 + 0.0028 * p[0]) * (1.0 + 0.05 * e[0]);
        infl = X * rtt / (nt * S);
        q = clampd(0.02 + 0.10 * p[2] + 0.01 * e[2], 0.01, 0.15);
        backlog = -0.05;
        n->slot_hw = fmin(SLOT_LIMIT, ceil(infl * (3.0 + 5.0 * p[4]) + 4.0));
        break;
    }
    double waiting = infl * q / (1.0 - q);              /* queued per transport (Little) */
    if (backlog < 0)
        backlog = waiting * -backlog;
    n->backlog_per_send = backlog * (1.0 + 0.03 * e[3]);
    n->sending_per_send = waiting > backlog + 0.01 ? waiting - backlog : 0.01;
    n->pending_per_send = infl;
    if (save) {
        n->write_rtt = rtt;
        n->write_q = q;
        n->wsize = S;
    } else {
        n->read_rtt = rtt;
        n->read_q = q;
        n->rsize = S;
    }
}

static void node_ctx(const struct gw_sim_gen *g, uint32_t node, const struct gw_sim_node_state *st,
                     int64_t t, uint64_t rk, struct nctx *n)
{
    const struct gw_sim_node_rt *rt = &g->rt[node];
    uint64_t h = gw_sim_mix(rk ^ 0x40de);
    double u = gw_sim_u01(h), n1 = tri(gw_sim_mix(h ^ 1)), n2 = tri(gw_sim_mix(h ^ 2));
    double L = phase_load(st->phase);
    n->load = L;
    n->nfs_w = st->nfs_write_bps > 0 ? st->nfs_write_bps : 0;
    n->nfs_r = st->nfs_read_bps > 0 ? st->nfs_read_bps : 0;
    n->intr = (2500.0 + 7500.0 * L) * (1.0 + 0.04 * n1);     /* ~300K per 30 s training */
    n->ctxt = (20000.0 + 130000.0 * L) * (1.0 + 0.05 * n2);
    n->forks = 5.0 + 20.0 * L * u;
    n->procs_running = L > 0.5 ? 20.0 + floor(80.0 * u) : (L > 0 ? 5.0 + floor(20.0 * u) : 1.0 + floor(4.0 * u));
    n->procs_blocked = st->phase == GW_SIM_PHASE_SAVE ? 4.0 + floor(16.0 * u) : floor(2.0 * u * u);
    double busy_user = 0.02 + 0.30 * L, busy_sys = 0.005 + 0.06 * L;
    double iow = 0.001;
    if (st->phase == GW_SIM_PHASE_SAVE) {
        iow = 0.05;
        busy_sys += 0.05;
    } else if (st->phase == GW_SIM_PHASE_LOAD) {
        iow = 0.04;
        busy_sys += 0.04;
    }
    n->cpu_frac[1] = iow;                 /* iowait */
    n->cpu_frac[2] = 0.002 + 0.004 * L;   /* irq */
    n->cpu_frac[3] = 0.0005;              /* nice */
    n->cpu_frac[4] = 0.003 + 0.01 * L;    /* softirq */
    n->cpu_frac[5] = 0;                   /* steal */
    n->cpu_frac[6] = busy_sys;
    n->cpu_frac[7] = busy_user;
    double busy = 0;
    for (int m = 1; m < GW_SIM_CPU_MODES; m++)
        busy += n->cpu_frac[m];
    n->cpu_frac[0] = busy;                /* idle = 1 - busy x per-cpu factor */
    n->getattr_lat = 0.009 + 0.002 * u;
    n->write_rtt = 0.004 + 0.003 * u;
    n->write_q = 0.02;
    n->read_rtt = 0.002 + 0.002 * u;
    n->read_q = 0.02;
    n->wsize = n->rsize = IO_MAX;
    n->backlog_per_send = 0.01;
    n->sending_per_send = 0.02;
    n->pending_per_send = 0.01;
    n->slot_hw = 0;
    n->slot_pinned = 0;
    n->ckpt = -1;
    if (st->checkpoint >= 0 && (n->nfs_w > 1e8 || n->nfs_r > 1e8))
        ckpt_io(g, node, (uint32_t)st->checkpoint, h, n);
    n->pgpgin = 400.0 + 600.0 * u + n->nfs_r / 1024.0 * 0.02;
    n->pgpgout = 1500.0 + 1000.0 * u + n->nfs_w / 1024.0 * 0.3;
    n->pgfault = 20000.0 + 200000.0 * L * (1.0 + 0.1 * n1);
    n->rdma_bps = (st->phase == GW_SIM_PHASE_TRAIN ? 5.0e9 : 1.0e9 * L) * (1.0 + 0.2 * n2);
    n->scrape_extra = 0;
    if (rt->mem_event_until != GW_SIM_NO_TIME && t >= rt->mem_event_until - 600000 &&
        t < rt->mem_event_until) {
        n->getattr_lat = 0.12 + 0.2 * u;   /* worker death on ECC: 10 -> >100 ms */
        n->pgpgout += 150000.0 + 100000.0 * u;
        n->scrape_extra += 0.5;
    }
}

/* ---- one scrape ---------------------------------------------------------- */

static void reset_counters(struct gw_sim_gen *g, struct gw_sim_target *tg, uint32_t node, int job)
{
    for (uint32_t k = 0; k < tg->n_sids; k++) {
        uint32_t s = tg->sids[k];
        unsigned f = g->series[s].fam;
        if (!gw_sim_fam_is_counter(f) || f == F_CORR_REMAP || f == F_UNCORR_REMAP ||
            f == F_ECC_SBE_AGG || f == F_ECC_DBE_AGG)
            continue;
        g->acc[s] = 0;
    }
    if (job == GW_SIM_JOB_DCGM)
        for (uint32_t i = 0; i < g->cfg.gpus; i++) {
            struct gw_sim_gpu *gs = &g->rt[node].gpu[i];
            gs->latched = 0;
            for (uint32_t j = 0; j < gs->n_cnt; j++)
                gs->cnt_last[j] = INT64_MIN;
        }
}

static inline double cnt(double *acc, double inc)
{
    *acc += inc > 0 ? inc : 0;
    return floor(*acc);
}

static size_t emit_dcgm(struct gw_sim_gen *g, uint32_t node, struct gw_sim_target *tg,
                        struct gctx_all *a, int64_t t, double dt, size_t n, struct gw_error *err,
                        int *rcp)
{
    uint32_t *ids = g->out_ids;
    double *v = g->out_v;
    for (uint32_t k = 0; k < tg->n_sids; k++) {
        uint32_t s = tg->sids[k];
        const struct gw_sim_series *se = &g->series[s];
        struct gctx *c = &a->gpu[se->gpu];
        double *ac = &g->acc[s];
        double x = 0;
        int fp = 0;
        switch ((enum gw_sim_fam)se->fam) {
        case F_SM_CLOCK: x = floor(c->smclk); break;
        case F_MEM_CLOCK: x = g->spec->mem_clock_mhz; break;
        case F_MEMORY_TEMP: x = floor(c->memtemp + 0.5); break;
        case F_GPU_TEMP: x = floor(c->temp + 0.5); break;
        case F_POWER_USAGE: x = qz(c->power, 1000.0); fp = 1; break;
        case F_TOTAL_ENERGY: x = cnt(ac, c->frozen ? 0.0 : c->power * dt * 1000.0); break;
        case F_PCIE_REPLAY: x = cnt(ac, c->inc_pcie); break;
        case F_GPU_UTIL: x = c->util; break;
        case F_MEM_COPY_UTIL: x = floor(c->memcopy); break;
        case F_ENC_UTIL: case F_DEC_UTIL: x = 0; break;
        case F_FB_FREE: x = g->spec->fb_total_mib - FB_RESERVED_MIB - c->fb_used; break;
        case F_FB_USED: x = c->fb_used; break;
        case F_FB_RESERVED: x = FB_RESERVED_MIB; break;
        case F_NVLINK_BW_TOTAL: x = cnt(ac, c->frozen ? 0.0 : c->nvl_bps * dt / 1048576.0); break;   /* MiB */
        case F_VGPU_LICENSE: x = SENT_INT; break;   /* bare metal: not supported */
        case F_UNCORR_REMAP: x = cnt(ac, c->inc_uncorr); break;
        case F_CORR_REMAP: x = cnt(ac, c->inc_corr); break;
        case F_REMAP_FAILURE: x = 0; break;
        case F_GR_ENGINE_ACTIVE: x = qz(c->util / 100.0 * 0.985, 1e6); fp = 1; break;
        case F_TENSOR_ACTIVE: x = qz(c->tensor, 1e6); fp = 1; break;
        case F_DRAM_ACTIVE: x = qz(c->dram, 1e6); fp = 1; break;
        case F_PCIE_TX: x = floor(c->pcie_tx); break;
        case F_PCIE_RX: x = floor(c->pcie_rx); break;
        case F_ECC_SBE_VOL: case F_ECC_SBE_AGG: x = cnt(ac, c->inc_sbe); break;
        case F_ECC_DBE_VOL: case F_ECC_DBE_AGG: x = cnt(ac, c->inc_dbe); break;
        case F_NVL_CRC_FLIT: x = cnt(ac, c->inc_flit); break;
        case F_NVL_CRC_DATA: x = cnt(ac, c->inc_data); break;
        case F_NVL_REPLAY: x = cnt(ac, c->inc_replay); break;
        case F_NVL_RECOVERY: x = cnt(ac, c->inc_recovery); break;
        case F_POWER_VIOL: x = cnt(ac, ((c->reasons & 0x4) && !c->frozen ? 0.6 : 0.0) * dt * 1e6); break;
        case F_THERMAL_VIOL: x = cnt(ac, c->thermal_frac * dt * 1e6); break;
        case F_SYNC_BOOST_VIOL: case F_BOARD_LIMIT_VIOL: case F_RELIABILITY_VIOL:
            x = floor(*ac); break;
        case F_LOW_UTIL_VIOL: x = cnt(ac, c->util < 1 && !c->frozen ? dt * 1e6 : 0); break;
        case F_REMAP_PENDING: x = c->remap_pending; break;
        case F_CLOCK_REASONS: x = (double)c->reasons; break;
        case F_ENFORCED_PLIMIT: x = g->spec->power_limit_w; fp = 1; break;
        case F_FB_TOTAL: x = g->spec->fb_total_mib; break;
        case F_SM_ACTIVE: x = qz(c->util / 100.0 * 0.93, 1e6); fp = 1; break;
        case F_NVLINK_TX: x = floor(c->nvl_bps * 0.5); break;
        case F_NVLINK_RX: x = floor(c->nvl_bps * 0.5 * 1.002); break;
        default: x = 0; break;
        }
        if (c->vanish)
            continue;
        if (c->sentinel)
            x = fp ? SENT_FP : SENT_INT;
        ids[n] = s;
        v[n++] = x;
    }
    /* the XID gauge (one series per code) and the XID count window */
    for (uint32_t i = 0; i < g->cfg.gpus; i++) {
        struct gw_sim_gpu *gs = &g->rt[node].gpu[i];
        if (a->gpu[i].vanish)
            continue;
        uint32_t sid;
        int rc = gw_sim_cat_xid_series(g, node, i, gs->latched, 0, &sid, err);
        if (rc != GW_OK) {
            *rcp = rc;
            return n;
        }
        if (sid != UINT32_MAX && n < g->out_cap) {
            ids[n] = sid;
            v[n++] = a->gpu[i].sentinel ? SENT_INT : (double)gs->latched;
        }
        for (uint32_t j = 0; j < gs->n_cnt && n < g->out_cap; j++) {
            ids[n] = gs->cnt_sid[j];
            v[n++] = (gs->cnt_last[j] != INT64_MIN && t - gs->cnt_last[j] < XID_WINDOW_MS) ? 1.0 : 0.0;
        }
    }
    return n;
}

static const double op_rate_base[GW_SIM_MS_OPS] = {
    2.0, 1.0, 80.0, 0.2, 30.0, 10.0, 2.0, 2.0, 0.5, 0.01, 0.0, 0.1, 0.05, 0.1, 0.05, 0.05,
    0.05, 0.2, 0.05, 1.0};
/* node_nfs_requests_total method -> mountstats op (or -1: a small own rate) */
static const int method_op[GW_SIM_NFS_METHODS] = {
    GW_SIM_OP_READ, GW_SIM_OP_WRITE, GW_SIM_OP_COMMIT, GW_SIM_OP_OPEN, -1, -1, -1, GW_SIM_OP_CLOSE,
    8, 9, 10, -1, -1, 11, 12, 13, GW_SIM_OP_ACCESS, GW_SIM_OP_GETATTR, GW_SIM_OP_LOOKUP, -1};

/* Noise factor of a storage NIC's byte rate: +-2%, never above 99% of
 * the line rate (a full link cannot carry more). */
static double storage_noise(double bps, double u)
{
    double f = 0.98 + 0.04 * u;
    return bps * f > 0.99 * NIC_SPEED ? 0.99 * NIC_SPEED / bps : f;
}

/* What one scrape of a node shares across its series: the node's state,
 * request rates, load averages and memory breakdown. */
struct node_scrape {
    struct gw_sim_gen *g;
    uint32_t node;
    struct gw_sim_node_rt *rt;
    const struct nctx *nc;
    double ts, dt;
    uint64_t rk;
    double oprate[GW_SIM_MS_OPS];  /* per-op request rates (req/s) */
    double total_ops, nt;
    double memtot, anon, cached, slab, buffers, freeb, avail, pswpout, pswpin, majf;
};

/* The node-wide part of a scrape at t (dt seconds after the last one):
 * request rates, load averages (advanced in rt), memory and swap. */
static void node_scrape_init(struct node_scrape *c, struct gw_sim_gen *g, uint32_t node, const struct nctx *nc,
                             int64_t t, double dt, uint64_t rk)
{
    struct gw_sim_node_rt *rt = &g->rt[node];
    c->g = g;
    c->node = node;
    c->rt = rt;
    c->nc = nc;
    c->ts = (double)t / 1000.0;
    c->dt = dt;
    c->rk = rk;
    double *oprate = c->oprate;
    /* per-op request rates (req/s) and NFS op latencies */
    double idlef = nc->load > 0 ? 1.0 : 0.25;
    for (int o = 0; o < GW_SIM_MS_OPS; o++)
        oprate[o] = op_rate_base[o] * idlef;
    oprate[GW_SIM_OP_READ] += nc->nfs_r / nc->rsize;
    oprate[GW_SIM_OP_WRITE] += nc->nfs_w / nc->wsize;
    oprate[GW_SIM_OP_COMMIT] += nc->nfs_w / 1048576.0 / 64.0;
    c->total_ops = 0;
    for (int o = 0; o < GW_SIM_MS_OPS; o++)
        c->total_ops += oprate[o];
    c->nt = (double)g->n_transports;
    double la = dt / (dt + 60.0), l5 = dt / (dt + 300.0), l15 = dt / (dt + 900.0);
    double lt = nc->procs_running + nc->procs_blocked;
    rt->load1 += (lt - rt->load1) * la;
    rt->load5 += (lt - rt->load5) * l5;
    rt->load15 += (lt - rt->load15) * l15;
    c->memtot = rt->mem_total;
    c->anon = c->memtot * (0.02 + 0.33 * nc->load);
    c->cached = c->memtot * (0.18 + 0.1 * nc->load) + (nc->nfs_w + nc->nfs_r) * 20.0;
    if (c->cached > c->memtot * 0.5)
        c->cached = c->memtot * 0.5;
    c->slab = 9.5e9;
    c->buffers = 2.1e9;
    c->freeb = c->memtot - c->anon - c->cached - c->slab - c->buffers - 4e9;
    c->avail = c->freeb + c->cached * 0.95 + c->slab * 0.6;
    c->pswpout = 0;
    c->pswpin = 0;
    c->majf = 0;
    if (nc->mem_pressure > 0) {
        /* host memory pressure: anonymous memory eats the page cache and the
           free pages; MemAvailable slides toward mem_floor x MemTotal */
        double p = clampd(nc->mem_pressure, 0, 1);
        double target = c->memtot * nc->mem_floor;
        double delta = (c->avail - target) * p;
        if (delta < 0)
            delta = 0;
        c->anon += delta;
        double from_cache = delta * 0.6 < c->cached * 0.9 ? delta * 0.6 : c->cached * 0.9;
        c->cached -= from_cache;
        c->freeb -= delta - from_cache;
        if (c->freeb < c->memtot * 0.003)
            c->freeb = c->memtot * 0.003;
        c->avail -= delta;
        c->pswpout = 4e4 * p * p;
        c->pswpin = 2e3 * p * p;
        c->majf = 3e3 * p;
    }
}

/* A series of CPU, processes, load, vmstat or meminfo: its value into
 * *xp and 1, or 0 when se is none of them. */
static int value_host(const struct node_scrape *c, const struct gw_sim_series *se, double *ac, uint64_t h, double u,
                      double *xp)
{
    struct gw_sim_gen *g = c->g;
    uint32_t node = c->node;
    struct gw_sim_node_rt *rt = c->rt;
    const struct nctx *nc = c->nc;
    double ts = c->ts;
    double dt = c->dt;
    double memtot = c->memtot;
    double anon = c->anon;
    double cached = c->cached;
    double slab = c->slab;
    double buffers = c->buffers;
    double freeb = c->freeb;
    double avail = c->avail;
    double pswpout = c->pswpout;
    double pswpin = c->pswpin;
    double majf = c->majf;
    uint32_t sub = se->sub;
    double x;
    switch ((enum gw_sim_fam)se->fam) {
    case F_CPU_SECONDS: {
        uint32_t cpu = sub / GW_SIM_CPU_MODES, m = sub % GW_SIM_CPU_MODES;
        double f = 0.6 + 0.8 * gw_sim_u01(gw_sim_mix(g->cfg.seed ^ ((uint64_t)node << 20) ^ (0xc0000 + cpu)));
        double fr = m == 0 ? 1.0 - nc->cpu_frac[0] * f : nc->cpu_frac[m] * f * (0.9 + 0.2 * u);
        *ac += dt * (fr > 0 ? fr : 0);
        x = floor(*ac * 100.0) / 100.0;
        break;
    }
    case F_INTR: x = cnt(ac, dt * nc->intr); break;
    case F_CTXT: x = cnt(ac, dt * nc->ctxt); break;
    case F_FORKS: x = cnt(ac, dt * nc->forks); break;
    case F_PROCS_RUNNING: x = nc->procs_running; break;
    case F_PROCS_BLOCKED: x = nc->procs_blocked; break;
    case F_BOOT_TIME: x = floor(rt->boot_time_s); break;
    case F_TIME: x = qz(ts, 1e3) + (double)(h % 1000) * 1e-6; break;
    case F_UNAME: x = 1; break;
    case F_LOAD1: x = qz(rt->load1, 100.0); break;
    case F_LOAD5: x = qz(rt->load5, 100.0); break;
    case F_LOAD15: x = qz(rt->load15, 100.0); break;
    case F_PGPGIN: x = cnt(ac, dt * nc->pgpgin); break;
    case F_PGPGOUT: x = cnt(ac, dt * (nc->pgpgout + 4.0 * pswpout)); break;
    case F_PSWPIN: x = pswpin > 0 ? cnt(ac, dt * pswpin) : floor(*ac); break;
    case F_PSWPOUT: x = pswpout > 0 ? cnt(ac, dt * pswpout) : floor(*ac); break;
    case F_OOM_KILL: x = floor(*ac); break;
    case F_PGFAULT: x = cnt(ac, dt * nc->pgfault); break;
    case F_PGMAJFAULT: x = cnt(ac, dt * (2.0 + 5.0 * u + majf)); break;
    case F_MEM_TOTAL: x = memtot; break;
    case F_MEM_FREE: x = qz(freeb * (1.0 + 0.002 * (u - 0.5)), 1.0 / 1024.0); break;
    case F_MEM_AVAIL: x = qz(avail, 1.0 / 1024.0); break;
    case F_MEM_BUFFERS: x = buffers; break;
    case F_MEM_CACHED: x = qz(cached, 1.0 / 1024.0); break;
    case F_MEM_ACTIVE: x = qz(anon * 0.9 + cached * 0.5, 1.0 / 1024.0); break;
    case F_MEM_INACTIVE: x = qz(anon * 0.1 + cached * 0.5, 1.0 / 1024.0); break;
    case F_MEM_DIRTY: x = qz(nc->nfs_w * 2.0 + 1e6 * u, 1.0 / 1024.0); break;
    case F_MEM_WRITEBACK: x = qz(nc->nfs_w * 0.2, 1.0 / 1024.0); break;
    case F_MEM_SHMEM: x = qz(4e9 + 60e9 * nc->load, 1.0 / 1024.0); break;
    case F_MEM_SLAB: x = slab; break;
    case F_MEM_SRECLAIM: x = slab * 0.6; break;
    case F_MEM_SUNRECLAIM: x = slab * 0.4; break;
    case F_MEM_MAPPED: x = qz(2e9 + 30e9 * nc->load, 1.0 / 1024.0); break;
    case F_MEM_ANON: x = qz(anon, 1.0 / 1024.0); break;
    case F_MEM_PAGETABLES: x = qz(5e8 + 2e9 * nc->load, 1.0 / 1024.0); break;
    case F_MEM_COMMITTED: x = qz(anon * 1.4 + 2e10, 1.0 / 1024.0); break;
    case F_MEM_SWAPTOTAL: case F_MEM_SWAPFREE: case F_MEM_HP_TOTAL: x = 0; break;
    case F_MEM_HP_SIZE: x = 2097152; break;
    default:
        return 0;
    }
    *xp = x;
    return 1;
}

/* A series of the network or InfiniBand devices: its value into *xp
 * and 1, or 0 when se is none of them. */
static int value_net(const struct node_scrape *c, const struct gw_sim_series *se, double *ac, uint64_t h, double u,
                     double *xp)
{
    struct gw_sim_gen *g = c->g;
    const struct nctx *nc = c->nc;
    double dt = c->dt;
    uint32_t sub = se->sub;
    (void)h;
    double x;
    switch ((enum gw_sim_fam)se->fam) {
    case F_NET_RX_BYTES: case F_NET_TX_BYTES: case F_NET_RX_PACKETS: case F_NET_TX_PACKETS: {
        enum gw_sim_nic_role r = sub == 0 ? GW_SIM_NIC_LO : sub == 1 ? GW_SIM_NIC_MGMT
                                 : sub < 2 + g->cfg.compute_nics ? GW_SIM_NIC_COMPUTE
                                                                  : GW_SIM_NIC_STORAGE;
        int tx = se->fam == F_NET_TX_BYTES || se->fam == F_NET_TX_PACKETS;
        double bps;
        switch (r) {
        case GW_SIM_NIC_LO: bps = 8e5; break;
        case GW_SIM_NIC_MGMT: bps = tx ? 2.5e6 : 3e5; break;
        case GW_SIM_NIC_COMPUTE: bps = 4e6 + 1e7 * nc->load; break;
        default: bps = 1e6 + (tx ? nc->nfs_w : nc->nfs_r) / (double)g->cfg.storage_nics; break;
        }
        bps *= r == GW_SIM_NIC_STORAGE ? storage_noise(bps, u) : 0.9 + 0.2 * u;
        if (se->fam == F_NET_RX_PACKETS || se->fam == F_NET_TX_PACKETS)
            bps /= r == GW_SIM_NIC_MGMT ? 900.0 : 7000.0;
        x = cnt(ac, dt * bps);
        break;
    }
    case F_NET_RX_ERRS: case F_NET_TX_ERRS: case F_NET_RX_DROP: case F_NET_TX_DROP:
        x = cnt(ac, (u < 1e-4) ? 1.0 : 0.0); break;
    case F_NET_SPEED: x = sub == 1 ? 3125000000.0 : NIC_SPEED; break;
    case F_NET_MTU: x = sub == 0 ? 65536 : sub == 1 ? 1500 : 9000; break;
    case F_NET_UP: case F_IB_INFO: x = 1; break;
    case F_IB_RX_BYTES: case F_IB_TX_BYTES: case F_IB_RX_PACKETS: case F_IB_TX_PACKETS: {
        int storage = sub >= 2 + g->cfg.compute_nics;
        int tx = se->fam == F_IB_TX_BYTES || se->fam == F_IB_TX_PACKETS;
        double bps = storage ? 1.2e6 + (tx ? nc->nfs_w : nc->nfs_r) / (double)g->cfg.storage_nics
                             : (nc->nvl_fault ? 2e5 : nc->rdma_bps);
        bps *= storage ? storage_noise(bps, u) : 0.9 + 0.2 * u;
        if (se->fam == F_IB_RX_PACKETS || se->fam == F_IB_TX_PACKETS)
            bps /= 4096.0;
        x = cnt(ac, dt * bps);
        break;
    }
    case F_IB_TX_WAIT: x = cnt(ac, dt * (sub >= 2 + g->cfg.compute_nics ? 2e4 : 4e5 * nc->load) * u); break;
    case F_IB_NP_ECN: case F_IB_NP_CNP: case F_IB_RP_CNP:
        x = cnt(ac, sub >= 2 + g->cfg.compute_nics ? 0 : dt * 40.0 * nc->load * u); break;
    case F_IB_SYMBOL_ERR: case F_IB_ADP_RETRANS: case F_IB_OOS: case F_IB_ACK_TIMEOUT:
        x = cnt(ac, u < 2e-5 ? 1.0 : 0.0); break;
    case F_IB_RX_ERRORS: case F_IB_RX_DISCARDS: case F_IB_TX_DISCARDS: case F_IB_LINK_DOWNED:
    case F_IB_LINK_RECOVERY: case F_IB_LLI_ERR: case F_IB_EBO_ERR: case F_IB_RRP_ERR:
    case F_IB_OOB_DROPS: case F_IB_PSEQ_ERR:
        x = floor(*ac); break;
    case F_IB_STATE: x = 4; break;
    case F_IB_PHYS_STATE: x = 5; break;
    case F_IB_RATE: x = NIC_SPEED; break;
    default:
        return 0;
    }
    *xp = x;
    return 1;
}

/* A series of the NFS client or mountstats: its value into *xp and 1,
 * or 0 when se is none of them. */
static int value_nfs(const struct node_scrape *c, const struct gw_sim_series *se, double *ac, uint64_t h, double u,
                     double *xp)
{
    struct gw_sim_node_rt *rt = c->rt;
    const struct nctx *nc = c->nc;
    double dt = c->dt;
    uint64_t rk = c->rk;
    const double *oprate = c->oprate;
    double total_ops = c->total_ops;
    double nt = c->nt;
    uint32_t sub = se->sub;
    (void)h;
    double x;
    switch ((enum gw_sim_fam)se->fam) {
    case F_NFS_REQUESTS: {
        int o = method_op[sub];
        x = cnt(ac, dt * (o >= 0 ? oprate[o] : 0.01) * (0.95 + 0.1 * u));
        break;
    }
    case F_NFS_RPCS: x = cnt(ac, dt * total_ops); break;
    case F_NFS_RETRANS: x = cnt(ac, u < 1e-3 ? 1.0 : 0.0); break;
    case F_NFS_AUTHREFRESH: x = cnt(ac, dt * 0.001); break;
    case F_NFS_CONNECTIONS: if (*ac < nt) *ac = nt; x = floor(*ac); break;
    case F_NFS_PACKETS: x = cnt(ac, sub == 0 ? dt * total_ops * 2.0 : 0); break;
    case F_MS_AGE: x = cnt(ac, dt); break;
    case F_MS_MOUNT_INFO: x = 1; break;
    case F_MS_READ_BYTES: case F_MS_TREAD_BYTES: x = cnt(ac, dt * (nc->nfs_r + 2e4)); break;
    case F_MS_WRITE_BYTES: case F_MS_TWRITE_BYTES: x = cnt(ac, dt * (nc->nfs_w + 1e4)); break;
    case F_MS_DREAD_BYTES: case F_MS_DWRITE_BYTES: x = floor(*ac); break;
    case F_MS_READ_PAGES: x = cnt(ac, dt * (nc->nfs_r + 2e4) / 4096.0); break;
    case F_MS_WRITE_PAGES: x = cnt(ac, dt * (nc->nfs_w + 1e4) / 4096.0); break;
    case F_MS_TR_BIND: x = floor(*ac); break;
    case F_MS_TR_CONNECT: if (*ac < 1) *ac = 1; x = floor(*ac); break;
    case F_MS_TR_IDLE: x = total_ops > 0.5 ? 0 : floor(dt * u); break;
    case F_MS_TR_SENDS: case F_MS_TR_RECEIVES:
        x = cnt(ac, dt * total_ops / nt * (0.97 + 0.06 * u)); break;
    case F_MS_TR_BADXID: x = floor(*ac); break;
    case F_MS_TR_BACKLOG:
        x = cnt(ac, dt * total_ops / nt * nc->backlog_per_send * (0.9 + 0.2 * u)); break;
    case F_MS_TR_SENDING:
        x = cnt(ac, dt * total_ops / nt * nc->sending_per_send * (0.9 + 0.2 * u)); break;
    case F_MS_TR_PENDING:
        x = cnt(ac, dt * total_ops / nt * nc->pending_per_send * (0.95 + 0.1 * u)); break;
    case F_MS_TR_MAXSLOTS: {
        /* a high-water mark: slot-limited I/O pins every transport at
           the limit; other I/O spreads its peak over the transports */
        double hw = nc->slot_hw;
        if (hw > 0 && !nc->slot_pinned)
            hw = fmin(SLOT_LIMIT, floor(hw * (0.8 + 0.4 * gw_sim_u01(gw_sim_mix(
                                                     se->key ^ ((uint64_t)nc->ckpt << 32) ^ 0x51075ull)))));
        if (hw > rt->maxslots[sub])
            rt->maxslots[sub] = hw;
        else if (rt->maxslots[sub] < SLOT_LIMIT && u < 0.001)
            rt->maxslots[sub] += 1;
        x = rt->maxslots[sub];
        break;
    }
    case F_MS_OP_REQUESTS: case F_MS_OP_TRANSMISSIONS:
        x = cnt(ac, dt * oprate[sub] * (0.97 + 0.06 * gw_sim_u01(gw_sim_mix(rk ^ sub)))); break;
    case F_MS_OP_MAJOR_TIMEOUTS: case F_MS_OP_ERRORS: x = floor(*ac); break;
    case F_MS_OP_SENT_BYTES:
        x = cnt(ac, dt * oprate[sub] * (sub == GW_SIM_OP_WRITE ? nc->wsize + 236.0 : 180.0)); break;
    case F_MS_OP_RECV_BYTES:
        x = cnt(ac, dt * oprate[sub] * (sub == GW_SIM_OP_READ ? nc->rsize + 148.0 : 260.0)); break;
    case F_MS_OP_QUEUE_TIME: case F_MS_OP_RESPONSE_TIME: case F_MS_OP_REQUEST_TIME: {
        double rtt, q;
        if (sub == GW_SIM_OP_WRITE) { rtt = nc->write_rtt; q = nc->write_q; }
        else if (sub == GW_SIM_OP_READ) { rtt = nc->read_rtt; q = nc->read_q; }
        else if (sub == GW_SIM_OP_GETATTR) { rtt = nc->getattr_lat * 0.97; q = 0.03; }
        else { rtt = 0.0008 + 0.0004 * gw_sim_u01(gw_sim_mix(rk ^ (sub + 77))); q = 0.02; }
        double queue = rtt * q / (1.0 - q);
        double per = se->fam == F_MS_OP_QUEUE_TIME ? queue
                     : se->fam == F_MS_OP_RESPONSE_TIME ? rtt : queue + rtt + 0.00005;
        *ac += dt * oprate[sub] * per * (0.97 + 0.06 * gw_sim_u01(gw_sim_mix(rk ^ (sub + 99))));
        x = floor(*ac * 1000.0) / 1000.0;
        break;
    }
    case F_MS_EV_INODE_REVAL: x = cnt(ac, dt * oprate[GW_SIM_OP_GETATTR] * 1.2); break;
    case F_MS_EV_DNODE_REVAL: x = cnt(ac, dt * oprate[GW_SIM_OP_LOOKUP] * 3.0); break;
    case F_MS_EV_DATA_INVAL: x = cnt(ac, dt * 0.05); break;
    case F_MS_EV_ATTR_INVAL: x = cnt(ac, dt * 0.5); break;
    case F_MS_EV_VFS_OPEN: x = cnt(ac, dt * oprate[GW_SIM_OP_OPEN] * 1.5); break;
    case F_MS_EV_VFS_LOOKUP: x = cnt(ac, dt * oprate[GW_SIM_OP_LOOKUP] * 1.1); break;
    case F_MS_EV_VFS_ACCESS: x = cnt(ac, dt * oprate[GW_SIM_OP_ACCESS] * 2.0); break;
    case F_MS_EV_VFS_WRITEPAGES: x = cnt(ac, dt * (nc->nfs_w / 262144.0 + 0.1)); break;
    case F_MS_EV_VFS_READPAGES: x = cnt(ac, dt * (nc->nfs_r / 262144.0 + 0.2)); break;
    case F_MS_EV_VFS_FSYNC: x = cnt(ac, dt * (nc->nfs_w > 0 ? 0.5 : 0.01)); break;
    case F_MS_EV_VFS_FLUSH: x = cnt(ac, dt * oprate[GW_SIM_OP_CLOSE]); break;
    case F_MS_EV_SHORT_READ: case F_MS_EV_SHORT_WRITE: case F_MS_EV_JUKEBOX:
        x = floor(*ac); break;
    default:
        return 0;
    }
    *xp = x;
    return 1;
}

/* A filesystem series: its value into *xp and 1, or 0 when se is not
 * one. */
static int value_fs(const struct node_scrape *c, const struct gw_sim_series *se, double *ac, uint64_t h, double u,
                    double *xp)
{
    uint64_t rk = c->rk;
    uint32_t sub = se->sub;
    (void)h;
    (void)u;
    (void)ac;
    double x;
    switch ((enum gw_sim_fam)se->fam) {
    case F_FS_SIZE: case F_FS_AVAIL: case F_FS_FREE: case F_FS_FILES: case F_FS_FILES_FREE: {
        static const double size[GW_SIM_MOUNTS] = {1.9e12, 1.1e9, 2.8e13, 2.1e11, 1.08e12, 2.0e15};
        static const double used[GW_SIM_MOUNTS] = {0.31, 0.006, 0.42, 0.001, 0.02, 0.55};
        double sz = floor(size[sub] / 4096.0) * 4096.0;
        double fr = sz * (1.0 - used[sub]) - (sub == 5 ? 0 : 0);
        if (sub == 2)
            fr -= 1e9 * gw_sim_u01(gw_sim_mix(rk ^ 0xf5));
        fr = floor(fr / 4096.0) * 4096.0;
        if (se->fam == F_FS_SIZE) x = sz;
        else if (se->fam == F_FS_FREE) x = fr;
        else if (se->fam == F_FS_AVAIL) x = sub == 0 ? fr - floor(sz * 0.05 / 4096.0) * 4096.0 : fr;
        else if (se->fam == F_FS_FILES) x = floor(sz / 16384.0);
        else x = floor(sz / 16384.0 * (1.0 - used[sub] * 0.2));
        break;
    }
    case F_FS_READONLY: case F_FS_DEVICE_ERROR: x = 0; break;
    default:
        return 0;
    }
    *xp = x;
    return 1;
}

static size_t emit_node(struct gw_sim_gen *g, uint32_t node, struct gw_sim_target *tg,
                        const struct nctx *nc, int64_t t, double dt, uint64_t rk, size_t n)
{
    uint32_t *ids = g->out_ids;
    double *v = g->out_v;
    struct node_scrape c;
    node_scrape_init(&c, g, node, nc, t, dt, rk);
    for (uint32_t k = 0; k < tg->n_sids; k++) {
        uint32_t s = tg->sids[k];
        const struct gw_sim_series *se = &g->series[s];
        double *ac = &g->acc[s];
        uint64_t h = gw_sim_mix(se->key ^ rk);
        double u = gw_sim_u01(h);
        double x = 0;
        if (!value_host(&c, se, ac, h, u, &x) && !value_net(&c, se, ac, h, u, &x) &&
            !value_nfs(&c, se, ac, h, u, &x) && !value_fs(&c, se, ac, h, u, &x))
            x = 0;
        ids[n] = s;
        v[n++] = x;
    }
    return n;
}

/* Advances a target's counters over up_s seconds of steady training
 * before its first scrape (output discarded). */
static int history(struct gw_sim_gen *g, uint32_t node, int job, struct gw_sim_target *tg,
                   int64_t t, double up_s, struct gw_error *err)
{
    struct gw_sim_node_state st;
    memset(&st, 0, sizeof(st));
    st.phase = GW_SIM_PHASE_TRAIN;
    st.session = -1;
    st.checkpoint = -1;
    struct gctx_all a;
    uint64_t rk = gw_sim_mix(g->cfg.seed ^ ((uint64_t)node << 24) ^ 0x4157);
    memset(&a.n, 0, sizeof(a.n));
    node_ctx(g, node, &st, t, rk, &a.n);
    int rc = GW_OK;
    if (job == GW_SIM_JOB_DCGM) {
        for (uint32_t i = 0; i < g->cfg.gpus; i++)
            gpu_base(g, node, i, &st, t, rk, &a.gpu[i]);
        emit_dcgm(g, node, tg, &a, t, up_s, 0, err, &rc);
    } else {
        double maxslots[GW_SIM_MAX_TRANSPORTS];
        memcpy(maxslots, g->rt[node].maxslots, sizeof(maxslots));
        double l[3] = {g->rt[node].load1, g->rt[node].load5, g->rt[node].load15};
        emit_node(g, node, tg, &a.n, t, up_s, rk, 0);
        memcpy(g->rt[node].maxslots, maxslots, sizeof(maxslots));
        g->rt[node].load1 = l[0];
        g->rt[node].load5 = l[1];
        g->rt[node].load15 = l[2];
    }
    return rc;
}

/* Computes one target's scrape at t; returns the number of samples (0:
 * nothing to send) or a negative error. */
static int scrape(struct gw_sim_gen *g, uint32_t node, int job, int64_t t, int64_t round,
                  struct gw_error *err)
{
    struct gw_sim_target *tg = &g->targets[node * 2 + (uint32_t)job];
    struct gw_sim_node_state st;
    int rc = gw_sim_node_state_at(g->tl, node, t, &st);
    if (rc != GW_OK)
        return gw_error_set(err, rc, "simulator: node state of node %u at %lld", node, (long long)t);
    /* node down: no samples at all */
    for (uint32_t k = 0; k < st.n_failures && k < GW_SIM_STATE_MAX_ACTIVE; k++) {
        uint32_t fi = st.failures[k];
        if (fi < g->tl->n_failures) {
            const struct gw_sim_failure *f = &g->tl->failures[fi];
            if (f->effect == GW_SIM_EFF_NODE_DOWN && in_window(t, f->t_fault, f->t_recovered))
                return 0;
            if (f->effect == GW_SIM_EFF_OS_COLLAPSE && in_window(t, f->t_silent, f->t_recovered))
                return 0;
        }
    }
    uint64_t tk = gw_sim_mix(g->cfg.seed ^ ((uint64_t)(node * 2 + (uint32_t)job) << 32) ^ 0x5c7a9e);
    uint64_t rk = gw_sim_mix(tk ^ (uint64_t)round * 0x9E3779B97F4A7C15ull);
    /* scrape gaps (bait) and random misses: nothing */
    if (gw_sim_u01(gw_sim_mix(rk ^ 0x3155)) < g->cfg.scrape_miss_prob)
        return 0;
    for (uint32_t k = 0; k < st.n_baits && k < GW_SIM_STATE_MAX_ACTIVE; k++) {
        uint32_t bi = st.baits[k];
        if (bi < g->tl->n_baits) {
            const struct gw_sim_bait *b = &g->tl->baits[bi];
            if (b->kind == GW_SIM_BAIT_SCRAPE_GAP && (b->job == (uint32_t)job || b->job == 2) &&
                in_window(t, b->t_start, b->t_end))
                return 0;
        }
    }
    int up = job == GW_SIM_JOB_DCGM ? st.dcgm_up : st.node_up;
    uint32_t restarts = job == GW_SIM_JOB_DCGM ? st.dcgm_restarts : st.node_restarts;
    size_t n = 0;
    size_t before = g->n_series;
    double extra = 0;
    if (up) {
        int64_t prev = tg->last_t == INT64_MIN ? t - g->cfg.interval_ms : tg->last_t;
        double dt = (double)(t - prev) / 1000.0;
        /* the first scrape's counters hold everything since boot: one
         * silent pass over the uptime with an average training state */
        if (tg->last_t == INT64_MIN) {
            double up_s = (double)t / 1000.0 - g->rt[node].boot_time_s - dt;
            if (up_s > 2 * 86400.0)
                up_s = 2 * 86400.0;   /* keeps long runs' byte counters below 1e15 */
            if (up_s > 0 && (rc = history(g, node, job, tg, t, up_s, err)) != GW_OK)
                return rc;
        }
        tg->last_t = t;
        if (restarts != tg->restarts) {
            if (restarts > tg->restarts && tg->started)
                reset_counters(g, tg, node, job);
            tg->restarts = restarts;
        }
        /* node-scope shared noise key: both targets of a node see the same round */
        uint64_t nk = gw_sim_mix(g->cfg.seed ^ ((uint64_t)node << 24) ^ 0xa11);
        uint64_t nrk = gw_sim_mix(nk ^ (uint64_t)(t / 1000));
        struct gctx_all a;
        if (job != GW_SIM_JOB_DCGM)
            memset(a.gpu, 0, sizeof(a.gpu));
        if (job == GW_SIM_JOB_DCGM) {
            for (uint32_t i = 0; i < g->cfg.gpus; i++) {
                gpu_base(g, node, i, &st, t, nrk, &a.gpu[i]);
                struct gw_sim_gpu *gs = &g->rt[node].gpu[i];
                /* GPU replaced after a memory failure: remap counts start over */
                if (gs->mem_failure >= 0) {
                    const struct gw_sim_failure *f = &g->tl->failures[gs->mem_failure];
                    if (f->t_recovered != GW_SIM_NO_TIME && t >= f->t_recovered &&
                        f->action == GW_SIM_ACT_DRAIN_NODE) {
                        for (uint32_t k = 0; k < tg->n_sids; k++) {
                            const struct gw_sim_series *se = &g->series[tg->sids[k]];
                            if (se->gpu == (int8_t)i && (se->fam == F_CORR_REMAP || se->fam == F_UNCORR_REMAP))
                                g->acc[tg->sids[k]] = 0;
                        }
                    }
                    if (f->t_recovered != GW_SIM_NO_TIME && t >= f->t_recovered)
                        gs->mem_failure = -1;
                }
                /* a GPU reset or reboot clears the latched XID */
                if (gs->latched_failure >= 0) {
                    const struct gw_sim_failure *f = &g->tl->failures[gs->latched_failure];
                    if (f->t_recovered != GW_SIM_NO_TIME && t >= f->t_recovered &&
                        f->action != GW_SIM_ACT_RESTART_APP && f->action != GW_SIM_ACT_NONE) {
                        gs->latched = 0;
                        gs->latched_failure = -1;
                    }
                }
            }
        }
        memset(&a.n, 0, sizeof(a.n));
        node_ctx(g, node, &st, t, nrk, &a.n);
        if ((rc = apply_events(g, node, &st, t, prev, nrk, job, &a, err)) != GW_OK)
            return rc;
        if (a.n.nvl_fault) {
            a.n.intr = (70000.0 + 30000.0 * gw_sim_u01(gw_sim_mix(nrk ^ 0x1f))) / 30.0;
            a.n.procs_running = floor(1.5 * gw_sim_u01(gw_sim_mix(nrk ^ 0x2f)));
            for (uint32_t i = 0; i < g->cfg.gpus; i++)
                a.gpu[i].nvl_bps = 0;   /* peers flatline */
        }
        if (a.n.os_collapse) {
            /* OS wedged: interrupts at intr_frac of normal, nothing runnable */
            a.n.intr *= a.n.intr_frac;
            a.n.ctxt *= a.n.intr_frac;
            a.n.procs_running = floor(2.0 * gw_sim_u01(gw_sim_mix(nrk ^ 0x3f)));
            a.n.rdma_bps = 2e5;
        }
        if (job == GW_SIM_JOB_DCGM) {
            struct gctx *last = (struct gctx *)g->last_ctx + (size_t)node * GW_SIM_MAX_GPUS;
            uint8_t *has = g->has_last + (size_t)node * GW_SIM_MAX_GPUS;
            for (uint32_t i = 0; i < g->cfg.gpus; i++)
                if (!a.gpu[i].frozen) {
                    last[i] = a.gpu[i];
                    has[i] = 1;
                }
        }
        extra = a.n.scrape_extra;
        if (job == GW_SIM_JOB_DCGM) {
            n = emit_dcgm(g, node, tg, &a, t, dt, 0, err, &rc);
            if (rc != GW_OK)
                return rc;
        } else {
            n = emit_node(g, node, tg, &a.n, t, dt, rk, 0);
        }
    }
    /* what Prometheus adds */
    uint64_t hm = gw_sim_mix(rk ^ 0x3e7a);
    double um = gw_sim_u01(hm);
    size_t exported = n;
    double dur = !up ? 0.001 + 0.002 * um
                     : (job == GW_SIM_JOB_DCGM ? 0.03 + 0.09 * um : 0.25 + 0.35 * um) + extra;
    double added = !tg->started ? (double)exported : (double)(g->n_series - before);
    double meta[5] = {up ? 1.0 : 0.0, floor(dur * 1e6) / 1e6, (double)exported, (double)exported,
                      up ? added : 0.0};
    for (int i = 0; i < 5; i++)
        if (tg->meta_sid[i] != UINT32_MAX && n < g->out_cap) {
            g->out_ids[n] = tg->meta_sid[i];
            g->out_v[n++] = meta[i];
        }
    if (up)
        tg->started = 1;
    return (int)n;
}

int gw_sim_gen_next(struct gw_sim_gen *g, struct gw_sim_scrape *s, struct gw_error *err)
{
    if (!g || !s)
        return gw_error_set(err, GW_EINVAL, "simulator: no generator");
    uint32_t nt = g->cfg.nodes * 2;
    for (;;) {
        if (g->round >= g->n_rounds)
            return 0;
        int64_t r = g->round;
        uint32_t k = g->cursor++;
        if (g->cursor >= nt) {
            g->cursor = 0;
            g->round++;
        }
        const struct gw_sim_target *tg = &g->targets[k];
        int64_t t = g->cfg.start_ms + r * g->cfg.interval_ms + tg->offset_ms;
        if (g->jitter_ms > 0) {
            uint64_t h = gw_sim_mix(g->cfg.seed ^ 0x717e ^ ((uint64_t)k << 40) ^ (uint64_t)r);
            t += (int64_t)(h % (uint64_t)(2 * g->jitter_ms + 1)) - g->jitter_ms;
        }
        int n = scrape(g, k / 2, (int)(k % 2), t, r, err);
        if (n < 0)
            return n;
        if (n == 0)
            continue;
        s->node = k / 2;
        s->job = (enum gw_sim_job)(k % 2);
        s->t = t;
        s->n = (size_t)n;
        s->series = g->out_ids;
        s->v = g->out_v;
        return 1;
    }
}
