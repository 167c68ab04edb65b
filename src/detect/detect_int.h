/* detect_int.h - the detector engine's state, shared by the framework
 * (engine.c, identity.c, watermark.c) and the detectors (d1_xid.c ..
 * d6_slow.c).
 *
 * Every structure that outlives a call is flat (indices, no pointers) so
 * the whole state can be written to a snapshot file and read back
 * (snapshot.c). Handles given to callers are 1-based indices into
 * series[]. Nodes own a fixed array of GPUs (index = the `gpu` label,
 * 0..DET_MAX_GPUS-1).
 *
 * Time model (docs/detectors.md "Arrival order"): data time is cut into
 * buckets of the fleet's scrape interval iv; bucket b covers
 * [b*iv, (b+1)*iv) and is judged at its end T = (b+1)*iv, once it is
 * complete: every node has delivered every live series past T (or is
 * dormant), or the fleet has moved `lateness` past T. Every evaluation
 * reads values *at* T from small per-series rings, never "the newest
 * value", so the same data gives the same alerts whatever order it
 * arrived in (up to the lateness). Event detectors (D1-D3) compute their
 * events per series in the series' own time order and hand their raises
 * to a queue that the evaluation of the bucket holding them delivers in
 * (time, identity) order. */
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
#define DET_RING 32           /* per-series (time, value) ring read by the evaluations */
#define DET_XID_RING 1024     /* application-XID onsets awaiting the collective decision */
#define DET_ONSETS 4096       /* XID onset candidates awaiting their bucket */
#define DET_QRAISES 4096      /* event raises awaiting their bucket */
#define DET_GRID 10           /* scrape-interval grid (det_grid_ms) */

enum det_role {
    R_NONE = 0,
    /* D1 */
    R_XID, R_XID_COUNT,
    /* D2 */
    R_REMAP_CORR, R_REMAP_UNCORR, R_REMAP_PENDING, R_REMAP_FAILURE, R_SBE_VOL, R_SBE_AGG, R_DBE_VOL, R_DBE_AGG,
    /* D3 */
    R_NVL_CRC_FLIT, R_NVL_CRC_DATA, R_NVL_REPLAY, R_NVL_RECOVERY, R_PCIE_REPLAY, R_IB_ERROR,
    /* GPU gauges: D4, D5, D6 */
    R_GPU_UTIL, R_POWER, R_SM_CLOCK, R_MEM_CLOCK, R_GPU_TEMP, R_MEM_TEMP, R_FB_USED, R_CLOCK_REASONS,
    R_THERMAL_VIOL, R_POWER_VIOL, R_POWER_LIMIT, R_GPU_OTHER,
    /* node: D4, D5, identity */
    R_INTR, R_PROCS_RUNNING, R_MEM_AVAIL, R_MEM_TOTAL, R_PGPGOUT, R_PSWPOUT, R_SCRAPE_DUR, R_UNAME, R_NODE_OTHER,
    R_UP,
    /* D7: mountstats, NIC and InfiniBand counters (the kind is in series.code) */
    R_CKPT,
    R_COUNT_
};

/* Per-GPU gauge slots: the series feeding each (its ring is read at T). */
enum det_gslot { G_UTIL, G_POWER, G_CLOCK, G_MCLOCK, G_TEMP, G_MEMTEMP, G_FB, G_REASONS, G_LIMIT, G_NSLOT };
/* Per-node slots (rates for counters). */
enum det_nslot { N_INTR, N_PROCS, N_MEMAVAIL, N_MEMTOTAL, N_PGPGOUT, N_PSWPOUT, N_SCRAPE_DCGM, N_SCRAPE_NODE, N_NSLOT };

enum { JOB_DCGM = 0, JOB_NODE = 1, JOB_UNKNOWN = 2 };

/* One tracked series. */
struct det_series {
    uint64_t id;
    int64_t last_t;           /* INT64_MIN before the first sample */
    double last_v;
    uint64_t inst_hash;       /* hash of the `instance` value (0 none) */
    uint32_t node;            /* index into nodes */
    uint32_t code;            /* R_XID / R_XID_COUNT: the XID */
    uint32_t next;            /* next series of the same node: index + 1, 0 = end */
    uint32_t nsamp;           /* samples seen (saturates) */
    int8_t gpu;               /* -1 node-level */
    uint8_t role;
    uint8_t job;              /* JOB_DCGM, JOB_NODE, JOB_UNKNOWN (decided at its samples) */
    uint8_t hits;             /* D3: bit i = the i-th newest sample had new errors */
    uint8_t n_inc;            /* D2: valid entries of inc_t */
    uint8_t inc_head;
    uint8_t ring_n, ring_head;    /* ring of (time, value): ring_head = newest */
    int64_t inc_t[DET_HIST];  /* D2: times of the newest increments */
    int64_t rt[DET_RING];
    double rv[DET_RING];      /* value, or per-second rate for counters read as rates */
};

/* Buckets seen: bit i = bucket base - i. */
struct det_pres {
    int64_t base;             /* INT64_MIN: none yet */
    uint64_t bits;
};

struct det_gpu {
    int64_t first_seen, last_seen;   /* any DCGM sample of this GPU; INT64_MIN never */
    uint32_t slot[G_NSLOT];          /* series index + 1 per gauge, 0 none */
    struct det_pres pres;            /* buckets with a DCGM sample of this GPU */
    /* D1 */
    int64_t xid_last_onset[4];       /* per recent code slot: time of the newest onset */
    uint32_t xid_code[4];
    int64_t app_burst_t[DET_HIST];   /* starts of application-XID bursts (ring) */
    uint8_t app_burst_n, app_burst_head;
    /* D4 / D5 / D6 streaks */
    uint8_t frozen_streak;
    uint8_t sentinel_streak;
    uint8_t throttle_hist;           /* bit i: the i-th newest evaluation was a throttle hit */
    uint8_t pad[3];
    /* D2 */
    int64_t pending_since;           /* ROW_REMAP_PENDING > 0 since; INT64_MIN when 0 */
    /* D4 */
    double base_power;               /* slow average of this GPU's power while busy; 0 unknown */
    /* D6 */
    int64_t bad_reason_since;        /* loss-causing throttle reasons set since; INT64_MIN */
    int64_t temp_warn_since, temp_crit_since, hbm_warn_since;
    double viol_thermal_last, viol_power_last;   /* violation counters grown since the last evaluation */
};

struct det_node {
    char name[DET_NODE_NAME];
    uint64_t name_hash;
    uint64_t dcgm_inst;              /* hash of the DCGM exporter's `instance`, 0 unknown */
    uint32_t merged_into;            /* index + 1 of the node this name is joined to; 0 = itself */
    uint32_t series_head;            /* first series of this node: index + 1 */
    int64_t first_seen;              /* earliest sample */
    int64_t max_t;                   /* newest sample of any series (arrival, not judgement) */
    /* completeness (watermark.c) */
    int64_t wm_b;                    /* next bucket not yet complete for this node */
    uint32_t waiting;                /* live series not yet past the end of bucket wm_b */
    uint8_t dormant, ahead, behind;  /* flags behind the fleet counters */
    uint8_t gpu_count;               /* highest GPU index seen + 1 */
    /* structure (D5) */
    struct det_pres answered[2];     /* per exporter: buckets with data or up == 1 */
    struct det_pres up_seen[2];      /* per exporter: buckets with an `up` sample */
    struct det_pres any_gpu;         /* buckets with a sample of any GPU */
    int64_t last_answer[2];          /* newest answer per exporter (evidence) */
    uint32_t slot[N_NSLOT];
    uint16_t ivh[DET_GRID];          /* this node's scrape-interval histogram */
    int64_t iv_node;                 /* its interval from ivh (0: not known yet), kept current by learn_interval */
    uint8_t collapse_streak, mempress_streak, busy, busy_prev, stall_streak;
    uint8_t pad[3];
    /* D4: this node's own slow baselines while training (0 unknown) */
    double base_intr, base_procs, base_util, base_fb;
    double idle_intr, idle_procs;    /* the same while it idles (no job): slow averages, 0 unknown */
    struct det_gpu gpus[DET_MAX_GPUS];
};

struct det_xid_onset {
    int64_t t;
    uint32_t node, code;
    int8_t gpu;
    uint8_t decided;
    uint8_t first;                   /* candidates: the first sample of its series (level or event?) */
    uint8_t pad[5];
};

/* A raise of an event detector waiting for its bucket (not snapshotted:
 * at most one bucket of raises is lost across a restart). */
struct det_qraise {
    int64_t t;
    int64_t for_ms, hold_ms;
    double score;
    const char *alertname, *cls, *action;   /* static strings */
    uint32_t node;
    int8_t gpu;
    uint8_t severity, detector;
    char summary[200];
    char evidence[360];
};

/* Scalar engine state: saved and loaded as one block. */
struct det_core {
    int64_t iv;                      /* fleet bucket width (ms); 0 until learnt or configured */
    int64_t lateness;                /* ms a bucket waits for late series (derived from iv) */
    int64_t fleet_b;                 /* next bucket to judge; INT64_MIN before the first */
    int64_t max_t;                   /* newest sample anywhere */
    int64_t min_t;                   /* oldest sample before the interval was known */
    int64_t mask_until;              /* fleet transition mask (D4) */
    uint32_t ivh[DET_GRID];          /* fleet scrape-interval histogram */
    struct det_pres pres_any;        /* buckets with any sample at all (the pipeline is alive) */
    double ref_power, ref_clock;     /* slow averages of the busy medians (0 unknown) */
    uint64_t samples, buckets, raises[7];
    uint64_t untracked, late;        /* series refused by caps; samples of already judged buckets */
    uint64_t joins, join_conflicts;  /* learnt instance -> node joins */
};

/* D8 (d8_activity.c): node levels awaiting gw_det_activity_drain (a ring). */
struct det_act_out {
    int64_t t;
    uint32_t node;
    uint8_t level;
};
struct det_act {
    struct det_act_out *q;
    uint32_t head, n, cap;
    uint64_t dropped;
};

struct gw_det {
    pthread_mutex_t mu;
    struct gw_det_config c;
    struct gw_alerts *alerts;
    struct det_core k;
    /* series: handles are index + 1 */
    struct det_series *series;
    uint32_t n_series, cap_series;
    uint32_t *sid_slots;             /* open addressing: handle or 0; size mask_sid + 1 */
    uint64_t mask_sid;
    /* nodes (canonical ones and joined aliases) */
    struct det_node *nodes;
    uint32_t n_nodes, cap_nodes;
    uint32_t *node_slots;            /* open addressing by name hash: node index + 1 */
    uint64_t mask_node;
    /* fleet counters (recomputed at each fleet step) */
    uint32_t n_behind, n_ahead, n_live;
    int in_eval;                     /* raises go straight to the alert table while set */
    /* D1 */
    struct det_xid_onset xr[DET_XID_RING];   /* app XIDs awaiting the collective decision */
    uint32_t xr_head, xr_n;
    struct det_xid_onset on[DET_ONSETS];     /* onset candidates awaiting their bucket */
    uint32_t on_n;
    /* D2/D3 raises awaiting their bucket */
    struct det_qraise *q;
    uint32_t q_n;
    /* peer statistics of the bucket being judged */
    double med_power, med_clock, med_intr, med_procs, med_util;
    double med_intr_idle;            /* idle nodes' median interrupt rate */
    uint32_t n_busy_gpus, n_busy_nodes;
    /* scratch (not part of the snapshot) */
    double *scratch;
    size_t scratch_cap;
    /* node identity (identity.c): compiled regex, parsed label list and map */
    void *ident;
    /* D7 (d7_ckpt.c) */
    struct det_ck *ck;
    /* D8 (d8_activity.c) */
    struct det_act act;
    /* evaluation cost for /metrics, ns (not part of the snapshot):
     * [0] peer statistics, [1]..[8] D1..D8 */
    uint64_t eval_ns[9];
};

/* engine.c */
int det_rebuild_tables(struct gw_det *d);   /* hash tables from series[] and nodes[] */
int64_t det_interval(const struct gw_det *d);
int64_t det_node_interval(const struct gw_det *d, const struct det_node *n);
int det_node_interval_known(const struct gw_det *d, const struct det_node *n);   /* two samples' spacing seen */
int64_t det_default_lateness(const struct gw_det *d);
void det_raise(struct gw_det *d, const struct gw_alert_spec *s, int64_t t, int detector);
void det_fmt_time(int64_t t, char *out, size_t cap);
double det_median(double *v, size_t n);   /* reorders v */
/* Value of a slot's series at bucket end T: the newest sample in
 * [T - 2 iv, T). 1 and *v set when there is one. */
int det_at(const struct gw_det *d, uint32_t slot, int64_t T, double *v);
/* The newest n values before T (newest first) into out; returns how many. */
unsigned det_recent(const struct gw_det *d, uint32_t slot, int64_t T, double *out, unsigned n, int64_t *t_out);
int64_t det_bucket_of(const struct gw_det *d, int64_t t);
/* The node's DCGM scrape_duration_seconds at T: 1 when the newest is 3x
 * (and 1 s more than) the median of the 8 before the newest 4, and the one
 * before it 2x; *now and *usual set then. */
int det_scrape_slow(const struct gw_det *d, const struct det_node *n, int64_t T, double *now, double *usual);
int det_pres_has(const struct det_pres *p, int64_t b);
void det_pres_set(struct det_pres *p, int64_t b);
uint32_t det_node_get(struct gw_det *d, const char *name, size_t len);   /* UINT32_MAX on failure */

/* identity.c */
int det_ident_init(struct gw_det *d, struct gw_error *err);
void det_ident_free(struct gw_det *d);
/* Canonical node of a series' labels: index of the (canonical) node, or
 * UINT32_MAX when the labels name no host. May learn a join and merge an
 * alias node into its canonical one. */
uint32_t det_ident_node(struct gw_det *d, const uint8_t *labels, size_t len);
uint32_t det_node_resolve(const struct gw_det *d, uint32_t ni);   /* follows merged_into */

/* watermark.c */
void det_wm_locked_interval(struct gw_det *d);        /* the interval became known: start buckets */
void det_wm_sample(struct gw_det *d, struct det_series *s, int64_t old_t, uint32_t old_nsamp);
void det_wm_node_added(struct gw_det *d, uint32_t ni);
void det_wm_recount(struct gw_det *d);                /* after a load or a merge */
void det_wm_run(struct gw_det *d);                    /* judge every complete bucket */
void det_evaluate(struct gw_det *d, int64_t T);       /* engine.c: judge the bucket ending at T */

/* per-sample hooks (s still holds the previous sample in last_t/last_v) */
void det_d1_sample(struct gw_det *d, struct det_series *s, int64_t t, double v);
void det_d1_eval(struct gw_det *d, int64_t t);
void det_d2_sample(struct gw_det *d, struct det_series *s, int64_t t, double v);
void det_d3_sample(struct gw_det *d, struct det_series *s, int64_t t, double v);
/* per-evaluation hooks (every bucket of data time) */
void det_d4_eval(struct gw_det *d, int64_t t);
void det_d5_eval(struct gw_det *d, int64_t t);
void det_d6_eval(struct gw_det *d, int64_t t);
void det_d7_eval(struct gw_det *d, int64_t t);
void det_d8_eval(struct gw_det *d, int64_t t);
void det_d8_free(struct gw_det *d);
/* D7: the kind of a mountstats / NIC / InfiniBand series (series.code), or
 * UINT32_MAX when D7 does not read it (other NFS operations, lo). */
uint32_t det_d7_code(const uint8_t *labels, size_t len, const char *name, size_t name_len);
void det_d7_free(struct gw_det *d);
/* D7's part of the snapshot: its size, written at p, read from p (after the nodes). */
size_t det_d7_snap_size(const struct gw_det *d);
void det_d7_snap_write(const struct gw_det *d, uint8_t *p);
int det_d7_snap_read(struct gw_det *d, const uint8_t *p);
/* rule registration */
void det_d1_rules(struct gw_alerts *a, const struct gw_det_config *c);
void det_d2_rules(struct gw_alerts *a, const struct gw_det_config *c);
void det_d3_rules(struct gw_alerts *a, const struct gw_det_config *c);
void det_d4_rules(struct gw_alerts *a, const struct gw_det_config *c);
void det_d5_rules(struct gw_alerts *a, const struct gw_det_config *c);
void det_d6_rules(struct gw_alerts *a, const struct gw_det_config *c);
void det_d7_rules(struct gw_alerts *a, const struct gw_det_config *c);

/* D7 state (d7_ckpt.c): flat, saved in the snapshot after the nodes. */
#define DET_CK_HIST 16               /* recent save durations (CheckpointStalled) */
struct det_ck_node {                 /* one per node, parallel to nodes[] */
    double base_w, base_r;           /* NFS bytes/s outside checkpoints (slow average; 0 unknown) */
    int64_t t_known;                 /* newest bucket end with NFS byte counts (0 never) */
    uint8_t writing, reading;        /* moving data in bulk (with hysteresis) */
    uint8_t pad[6];
};
struct det_ck_core {
    int32_t phase;                   /* 0 idle, GW_CKPT_SAVE, GW_CKPT_LOAD */
    uint32_t quiet;                  /* evaluations in a row without the phase's traffic */
    int64_t t_start, t_last;         /* the phase: start, end of its newest busy bucket */
    uint64_t next_id;
    uint32_t buckets, nodes_max;
    double bytes, peak_bps;
    double q_sum, reqt_sum, resp_sum, reqs_sum, backlog_sum, sends_sum;
    double link_sum, link_max;
    uint32_t link_n, slot_n, slot_at;
    uint32_t n_tp;
    double slot_high;
    double slot_limit;               /* highest transport_maximum_rpc_slots read at any bucket end */
    double rtt_base[2];              /* fleet WRITE / READ response time per request outside checkpoints (s) */
    int64_t hist[DET_CK_HIST];       /* durations of the newest saves (ms) */
    uint32_t hist_n, hist_head;
    uint64_t events, dropped, raises;
    int64_t tp_t0;                   /* end of the first bucket in tp */
    double tp[GW_CKPT_MAX_BUCKETS];  /* fleet bytes/s per busy bucket of the phase */
};
struct det_ck {
    struct det_ck_core k;
    struct det_ck_node *nodes;       /* cap_nodes entries */
    uint32_t cap_nodes;
    uint32_t *order;                 /* node indices by name: sums in one order whatever the arrival */
    uint32_t n_order;
    /* finished events awaiting gw_det_ckpt_drain (not in the snapshot) */
    struct det_ck_out *out;
    uint32_t out_head, out_n;
};

/* A counter's increase from the previous sample: 0 on the first sample and
 * after a reset (a decrease means the exporter restarted: reseed). */
static inline double det_counter_delta(const struct det_series *s, double v)
{
    if (s->last_t == INT64_MIN || v < s->last_v || v != v || s->last_v != s->last_v) return 0;
    return v - s->last_v;
}

static inline int det_node_live(const struct det_node *n)
{
    return n->merged_into == 0 && n->first_seen != INT64_MIN;
}

#endif /* GW_DETECT_INT_H */
