/* detect_int.h - the detector engine's state, shared by the framework
 * (engine.c) and the detectors (d1_xid.c .. d6_slow.c).
 *
 * Every structure is flat (indices, no pointers) so the whole state can be
 * written to a snapshot file and read back (snapshot.c). Handles given to
 * callers are 1-based indices into series[]. Nodes own a fixed array of
 * GPUs (index = the `gpu` label, 0..DET_MAX_GPUS-1). */
#ifndef GW_DETECT_INT_H
#define GW_DETECT_INT_H

#include <pthread.h>
#include <stdint.h>
#include "gpuwatch/alert.h"
#include "gpuwatch/detect.h"

#define DET_MAX_GPUS 16
#define DET_MAX_NODES 16384   /* beyond this, new hosts are not tracked (bounded memory) */
#define DET_MAX_SERIES (4u << 20)
#define DET_NODE_NAME 64
#define DET_HIST 8            /* increment-time rings */
#define DET_XID_RING 1024     /* application-XID onsets awaiting the collective decision */

enum det_role {
    R_NONE = 0,
    /* D1 */
    R_XID, R_XID_COUNT,
    /* D2 */
    R_REMAP_CORR, R_REMAP_UNCORR, R_REMAP_PENDING, R_REMAP_FAILURE, R_SBE_VOL, R_SBE_AGG, R_DBE_VOL, R_DBE_AGG,
    /* D3 */
    R_NVL_CRC_FLIT, R_NVL_CRC_DATA, R_NVL_REPLAY, R_NVL_RECOVERY, R_PCIE_REPLAY, R_IB_ERROR,
    /* GPU gauges: D4, D5, D6 */
    R_GPU_UTIL, R_POWER, R_SM_CLOCK, R_GPU_TEMP, R_MEM_TEMP, R_CLOCK_REASONS, R_THERMAL_VIOL, R_POWER_VIOL,
    R_POWER_LIMIT, R_GPU_OTHER,
    /* node: D4, D5 */
    R_INTR, R_PROCS_RUNNING, R_NODE_OTHER, R_UP,
    R_COUNT_
};

/* One tracked series. */
struct det_series {
    uint64_t id;
    int64_t last_t;           /* INT64_MIN before the first sample */
    double last_v;
    uint64_t inst_hash;       /* R_UP: hash of the `instance` value */
    uint32_t node;            /* index into nodes */
    uint32_t code;            /* R_XID / R_XID_COUNT: the XID; R_IB_ERROR: port slot */
    int8_t gpu;               /* -1 node-level */
    uint8_t role;
    uint8_t hits;             /* D3: bit i = the i-th newest sample had new errors */
    uint8_t n_inc;            /* D2: valid entries of inc_t */
    int64_t inc_t[DET_HIST];  /* D2: times of the newest increments (ring, newest at inc_head) */
    uint8_t inc_head;
    uint8_t pad[7];
};

/* Latest value of a GPU gauge and its time. */
struct det_val {
    double v;
    int64_t t;
};

struct det_gpu {
    int64_t first_seen, last_seen;   /* any DCGM sample of this GPU; INT64_MIN never */
    struct det_val util, power, clock, temp, memtemp, reasons, limit;
    /* D1 */
    int64_t xid_last_onset[4];       /* per recent code slot: time of the newest onset */
    uint32_t xid_code[4];
    int64_t app_burst_t[DET_HIST];   /* starts of application-XID bursts (ring) */
    uint8_t app_burst_n, app_burst_head;
    /* D2 */
    int64_t pending_since;           /* ROW_REMAP_PENDING > 0 since; INT64_MIN when 0 */
    /* D4 */
    uint8_t frozen_streak;
    /* D5 */
    uint8_t sentinel_streak;
    uint32_t scrape_no;              /* the node's DCGM scrape count at this GPU's newest sample */
    /* D6 */
    uint8_t throttle_hist;           /* bit i: the i-th newest evaluation was a throttle hit */
    int64_t bad_reason_since;        /* throttle reasons set since; INT64_MIN */
    int64_t temp_warn_since, temp_crit_since, hbm_warn_since;
    double viol_thermal_last, viol_power_last;   /* violation counters at the last evaluation */
    int64_t viol_t;
};

struct det_node {
    char name[DET_NODE_NAME];
    uint64_t name_hash;
    uint64_t dcgm_inst;              /* hash of the DCGM exporter's `instance`, 0 unknown */
    int64_t first_seen;
    int64_t last_data;               /* newest sample of any non-`up` series */
    int64_t last_dcgm, last_node;    /* newest sample per exporter (non-`up`) */
    int64_t up_t[2];                 /* newest `up` sample per exporter: 0 DCGM, 1 node */
    double up_v[2];
    int64_t up_ok_t[2];              /* newest `up` == 1 per exporter */
    int64_t dcgm_down_since, node_down_since;  /* INT64_MIN when answering */
    uint8_t silent, dcgm_down, node_down;
    uint8_t collapse_streak;
    uint8_t up_without_gpu;          /* DCGM `up` == 1 scrapes in a row that brought no GPU series */
    uint32_t dcgm_scrapes;           /* DCGM scrapes seen (a new one: a timestamp past the newest by
                                        half an interval) */
    uint8_t busy, busy_prev;         /* mean GPU util >= 50 at the newest evaluation */
    uint8_t gpu_count;               /* highest GPU index seen + 1 */
    double iv_est;                   /* this node's scrape interval (ms), learnt; 0 unknown */
    double intr_rate;                /* node_intr_total per second */
    int64_t intr_rate_t;
    struct det_val procs;
    struct det_gpu gpus[DET_MAX_GPUS];
};

struct det_xid_onset {
    int64_t t;
    uint32_t node, code;
    int8_t gpu;
    uint8_t decided;
};

struct gw_det {
    pthread_mutex_t mu;
    struct gw_det_config c;
    struct gw_alerts *alerts;
    /* series: handles are index + 1 */
    struct det_series *series;
    uint32_t n_series, cap_series;
    uint32_t *sid_slots;             /* open addressing: handle or 0; size mask_sid + 1 */
    uint64_t mask_sid;
    /* nodes */
    struct det_node *nodes;
    uint32_t n_nodes, cap_nodes;
    uint32_t *node_slots;            /* open addressing by name hash: node index + 1 */
    uint64_t mask_node;
    /* data time and evaluation */
    int64_t now;                     /* newest sample time seen (INT64_MIN before) */
    int64_t next_eval;               /* next evaluation time (INT64_MIN before the first) */
    double interval_est;             /* learnt scrape interval (ms), 0 unknown */
    /* fleet transition mask (D4) */
    int64_t mask_until;
    /* D1 collective decisions */
    struct det_xid_onset xr[DET_XID_RING];
    uint32_t xr_head, xr_n;
    /* peer statistics of the newest evaluation (recomputed each time) */
    double med_power, med_clock, med_intr, med_procs;
    double ref_power, ref_clock;     /* slow averages of the busy medians (0 unknown): the
                                        reference when too few peers are busy right now */
    uint32_t n_busy_gpus, n_busy_nodes;
    /* peer scratch (not part of the snapshot) */
    double *scratch;
    size_t scratch_cap;
    /* stats */
    uint64_t samples, buckets, raises[7];
    uint64_t untracked;              /* series refused by the node / series caps */
};

/* engine.c */
int det_rebuild_tables(struct gw_det *d);   /* hash tables from series[] and nodes[] */
int64_t det_interval(const struct gw_det *d);
int64_t det_node_interval(const struct gw_det *d, const struct det_node *n);
void det_raise(struct gw_det *d, const struct gw_alert_spec *s, int64_t t, int detector);
void det_fmt_time(int64_t t, char *out, size_t cap);
double det_median(double *v, size_t n);   /* reorders v */

/* per-sample hooks (s already holds the previous sample in last_t/last_v) */
void det_d1_sample(struct gw_det *d, struct det_series *s, int64_t t, double v);
void det_d1_eval(struct gw_det *d, int64_t t);
void det_d2_sample(struct gw_det *d, struct det_series *s, int64_t t, double v);
void det_d3_sample(struct gw_det *d, struct det_series *s, int64_t t, double v);
/* per-evaluation hooks (every interval of data time) */
void det_d4_eval(struct gw_det *d, int64_t t);
void det_d5_eval(struct gw_det *d, int64_t t);
void det_d6_eval(struct gw_det *d, int64_t t);
/* rule registration */
void det_d1_rules(struct gw_alerts *a, const struct gw_det_config *c);
void det_d2_rules(struct gw_alerts *a, const struct gw_det_config *c);
void det_d3_rules(struct gw_alerts *a, const struct gw_det_config *c);
void det_d4_rules(struct gw_alerts *a, const struct gw_det_config *c);
void det_d5_rules(struct gw_alerts *a, const struct gw_det_config *c);
void det_d6_rules(struct gw_alerts *a, const struct gw_det_config *c);

/* A counter's increase from the previous sample: 0 on the first sample and
 * after a reset (a decrease means the exporter restarted: reseed). */
static inline double det_counter_delta(const struct det_series *s, double v)
{
    if (s->last_t == INT64_MIN || v < s->last_v || v != v || s->last_v != s->last_v) return 0;
    return v - s->last_v;
}

/* Fresh: the value was updated within the last two intervals. */
static inline int det_fresh(const struct det_val *x, int64_t now, int64_t interval)
{
    return x->t != INT64_MIN && now - x->t <= 2 * interval;
}

#endif /* GW_DETECT_INT_H */
