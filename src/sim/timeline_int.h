/* timeline_int.h - private to the simulator's timeline (config.c,
 * timeline.c, truth.c): the deterministic PRNG every timeline draw comes
 * from, the model constants, and the per-node indexes kept in tl->priv.
 *
 * PRNG: xoshiro256** (Blackman & Vigna) whose 256-bit state is filled by
 * four splitmix64 steps from the config seed. The same seed gives the same
 * sequence on every platform (only 64-bit integer arithmetic; doubles are
 * built from the top 53 bits). Example: seed 1 -> splitmix64 outputs
 * 0x910a2dec89025cc1, 0xbeeb8da1658eec67, ... as the four state words. */
#ifndef GW_SIM_TIMELINE_INT_H
#define GW_SIM_TIMELINE_INT_H

#include <math.h>
#include <stdint.h>

#include "gpuwatch/sim.h"

#define GW_SIM_MIN_MS 60000LL
#define GW_SIM_HOUR_MS 3600000LL
#define GW_SIM_DAY_MS 86400000LL

/* ------------------------------------------------------------------ PRNG */
struct gw_sim_rng { uint64_t s[4]; };

static inline uint64_t gw_sim_splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline void gw_sim_rng_seed(struct gw_sim_rng *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = gw_sim_splitmix64(&x);
}

static inline uint64_t gw_sim_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t gw_sim_rng_u64(struct gw_sim_rng *r)
{
    uint64_t *s = r->s;
    uint64_t res = gw_sim_rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t;
    s[3] = gw_sim_rotl(s[3], 45);
    return res;
}

/* Uniform in [0, 1). */
static inline double gw_sim_rng_unit(struct gw_sim_rng *r)
{
    return (double)(gw_sim_rng_u64(r) >> 11) * 0x1.0p-53;
}

/* Uniform in [lo, hi). */
static inline double gw_sim_rng_uniform(struct gw_sim_rng *r, double lo, double hi)
{
    return lo + (hi - lo) * gw_sim_rng_unit(r);
}

/* Uniform integer in [0, n), n > 0 (Lemire's multiply-shift, tiny bias
 * irrelevant at these n). */
static inline uint32_t gw_sim_rng_below(struct gw_sim_rng *r, uint32_t n)
{
    return (uint32_t)(((gw_sim_rng_u64(r) >> 32) * (uint64_t)n) >> 32);
}

/* Exponential with the given mean. */
static inline double gw_sim_rng_exp(struct gw_sim_rng *r, double mean)
{
    return -mean * log1p(-gw_sim_rng_unit(r));
}

static inline int gw_sim_rng_chance(struct gw_sim_rng *r, double p)
{
    return gw_sim_rng_unit(r) < p;
}

/* Uniform milliseconds in [lo_min, hi_min) minutes. */
static inline int64_t gw_sim_rng_minutes(struct gw_sim_rng *r, double lo_min, double hi_min)
{
    return (int64_t)(gw_sim_rng_uniform(r, lo_min, hi_min) * (double)GW_SIM_MIN_MS);
}

/* Stateless hash of two words to [0, 1): per-(checkpoint, node) weights
 * that do not consume PRNG draws. */
static inline double gw_sim_hash_unit(uint64_t a, uint64_t b)
{
    uint64_t x = a * 0x9e3779b97f4a7c15ULL ^ (b + 0x632be59bd9b4e019ULL);
    return (double)(gw_sim_splitmix64(&x) >> 11) * 0x1.0p-53;
}

/* ------------------------------------------------------ model constants */
/* Save-phase rate shape: the first GW_SIM_SAVE_HEAD of a save writes at
 * GW_SIM_SAVE_PEAK x the save's average rate, the rest at
 * GW_SIM_SAVE_TAIL x; 0.2 * 2.4 + 0.8 * 0.65 = 1 keeps the average. */
#define GW_SIM_SAVE_HEAD 0.2
#define GW_SIM_SAVE_PEAK 2.4
#define GW_SIM_SAVE_TAIL 0.65

/* ------------------------------------------- checkpoint bottlenecks */
#define GW_SIM_SLOT_LIMIT 128.0            /* RPC slots per transport (RDMA default, vendor cap) */
#define GW_SIM_STORAGE_NIC_BPS 25e9        /* storage NIC line rate: 200 Gb/s in bytes/s */

/* Draw k of the bottleneck model for a checkpoint (node = UINT32_MAX) or a
 * (checkpoint, node) pair: a stateless stream of its own, so choosing and
 * shaping bottlenecks consumes nothing from the timeline's PRNG. */
static inline double gw_sim_bn_unit(uint64_t seed, uint32_t ckpt, uint32_t node, uint32_t k)
{
    return gw_sim_hash_unit(seed ^ 0xb0771e7ec0ffeeULL ^ ((uint64_t)k << 48),
                            ((uint64_t)ckpt << 24) ^ ((uint64_t)node + 1));
}

/* Share of its storage links' line rate a node's checkpoint I/O reaches
 * when the link is the bottleneck: 0.86-0.96 per (checkpoint, node). */
static inline double gw_sim_link_util(uint64_t seed, uint32_t ckpt, uint32_t node)
{
    return 0.86 + 0.10 * gw_sim_bn_unit(seed, ckpt, node, 1);
}

/* ------------------------------------------------------------- indexes */
/* An interval index entry: event idx active on [t_start, t_end);
 * max_end is the running maximum of t_end up to this entry (stabbing
 * queries walk back only while max_end > t). */
struct gw_sim_ival {
    int64_t t_start, t_end, max_end;
    uint32_t idx;
};

struct gw_sim_node_idx {
    uint32_t *sess; size_t n_sess;                    /* sessions it takes part in, in order */
    struct gw_sim_ival *fails; size_t n_fails;
    struct gw_sim_ival *baits; size_t n_baits;
    int64_t *dcgm_restarts; size_t n_dcgm_restarts;   /* sorted restart times */
    int64_t *node_restarts; size_t n_node_restarts;
};

struct gw_sim_priv {
    char (*names)[16];              /* hostnames by node index */
    uint8_t *spare;                 /* spare[i] = 1: spare node */
    uint8_t **fail_nodes;           /* per failure: nodes showing it (collectives), else NULL */
    double *ckpt_avg_bps;           /* per checkpoint: cluster average rate over its planned span */
    int64_t *ckpt_planned_ms;       /* per checkpoint: planned duration (rate shape) */
    double *ckpt_norm;              /* per checkpoint: member count / sum of node weights */
    uint32_t *ckpt_members;         /* per checkpoint: nodes taking part */
    struct gw_sim_node_idx *nodes;
};

/* Per-(checkpoint, node) weight in [0.7, 1.3) before normalisation. */
static inline double gw_sim_ckpt_weight(uint32_t ckpt, uint32_t node)
{
    return 0.7 + 0.6 * gw_sim_hash_unit((uint64_t)ckpt + 1, (uint64_t)node + 1);
}

/* Integral of the save shape over [0, d) of a save planned for D ms, in
 * units of "average-rate milliseconds". */
static inline double gw_sim_save_shape_integral(int64_t d, int64_t D)
{
    double head = GW_SIM_SAVE_HEAD * (double)D;
    double x = (double)d;
    if (x <= head) return GW_SIM_SAVE_PEAK * x;
    return GW_SIM_SAVE_PEAK * head + GW_SIM_SAVE_TAIL * (x - head);
}

#endif /* GW_SIM_TIMELINE_INT_H */
