/* gpuwatch/sim.h - a simulated GPU training cluster: dcgm-exporter and
 * node_exporter series of N nodes x 8 GPUs with sessions, checkpoints,
 * exporter restarts, scrape jitter and misses, injected failures with
 * optional precursors, baits, and a ground truth of every event.
 *
 * Three parts, each deterministic for a given config (seed included):
 *  - the timeline (timeline.c): what happens when - sessions and retry
 *    chains, checkpoint saves and loads, failures, baits, exporter
 *    restarts - and the per-node state at any time; written as ground
 *    truth JSON lines;
 *  - the generator (gen.c, catalog.c): the series of every node and their
 *    value at every scrape, driven by the timeline;
 *  - the output (output.c): remote write 1.0 to a URL over several
 *    connections, or files.
 * The model follows reference/gpu-telemetry.md sections 2-4 and 7. */
#ifndef GW_SIM_H
#define GW_SIM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "gpuwatch/err.h"

#define GW_SIM_MAX_NODES 1024
#define GW_SIM_MAX_GPUS 16

/* ----------------------------------------------------------------- config */
/* How the series name their node (docs/simulator.md section 10). */
enum gw_sim_label_style {
    GW_SIM_LABELS_HOSTNAME,    /* DCGM hostname="gpu071", instance="gpu071:9400" / ":9100" (default) */
    GW_SIM_LABELS_LEGACY,      /* the same with the legacy "Hostname" label */
    GW_SIM_LABELS_KUBE,        /* kube-prometheus + GPU operator: Hostname = exporter pod, pod IPs,
                                  node="gpu071" on DCGM series, node_exporter on host IPs */
    GW_SIM_LABELS_FQDN,        /* instance="gpu071.cluster.example.com:9100" / ":9400" */
    GW_SIM_LABELS_IP,          /* instance="10.0.X.Y:9100" / ":9400", DCGM Hostname="gpu071" */
    GW_SIM_LABELS_COUNT_
};
/* "hostname", "Hostname", "kube", "fqdn", "ip"; parse returns -1 when unknown. */
const char *gw_sim_label_style_name(enum gw_sim_label_style s);
int gw_sim_label_style_parse(const char *s, enum gw_sim_label_style *out);

enum gw_sim_gpu_model { GW_SIM_GPU_B200, GW_SIM_GPU_A100, GW_SIM_GPU_H100, GW_SIM_GPU_COUNT_ };
/* "b200", "a100", "h100"; parse returns -1 when unknown. */
const char *gw_sim_gpu_model_name(enum gw_sim_gpu_model m);
int gw_sim_gpu_model_parse(const char *s, enum gw_sim_gpu_model *out);
/* Published figures of a model (docs/simulator.md section 10). */
struct gw_sim_gpu_spec {
    const char *model_name;    /* modelName label, e.g. "NVIDIA H100 80GB HBM3" */
    double power_limit_w, idle_power_w;
    double busy_power_lo_w, busy_power_hi_w;   /* steady training */
    double sm_clock_max_mhz, sm_clock_idle_mhz, mem_clock_mhz;
    double fb_total_mib, fb_session_lo_mib, fb_session_hi_mib;
};
const struct gw_sim_gpu_spec *gw_sim_gpu_spec(enum gw_sim_gpu_model m);

struct gw_sim_config {
    char profile[16];          /* "smoke", "paper" or "custom" */
    uint64_t seed;
    uint32_t nodes;            /* total, spares included (paper: 63) */
    uint32_t spare_nodes;      /* not in training sessions unless swapped in (paper: 3) */
    uint32_t gpus;             /* per node (8) */
    uint32_t host_base;        /* hostnames gpuNNN drawn from [host_base, host_base + host_span) */
    uint32_t host_span;
    int64_t start_ms;          /* first scrape; default: now - duration, aligned to interval */
    int64_t duration_ms;       /* smoke 1 d, paper 55 d */
    int64_t interval_ms;       /* scrape interval, 30 s (15 s option) */
    int64_t jitter_ms;         /* +- scrape jitter (1 s) */
    double scrape_miss_prob;   /* per target and scrape (0.001) */
    int legacy_hostname;       /* "Hostname" instead of "hostname" on DCGM series */
    uint32_t compute_nics;     /* RoCE NICs per node (8) */
    uint32_t storage_nics;     /* storage NICs per node (2) */
    uint32_t nfs_transports;   /* nconnect transports of the NFS mount (8) */
    int64_t ckpt_interval_ms;  /* checkpoint save period within a session (150 min) */
    double failure_scale;      /* multiplies every failure hazard (1.0) */
    /* variation knobs (defaults = the behaviour before they existed) */
    enum gw_sim_label_style label_style;   /* GW_SIM_LABELS_HOSTNAME; legacy_hostname = 1 with
                                              HOSTNAME means LEGACY */
    enum gw_sim_gpu_model gpu_model;       /* GW_SIM_GPU_B200 */
    double bait_scale;         /* multiplies every bait hazard (1.0; 0..100) */
    int shape_jitter;          /* 0: fixed failure signatures; 1: drawn per failure within the
                                  documented ranges (docs/simulator.md 5.5) */
    int ckpt_bottleneck;       /* enum gw_sim_ckpt_bottleneck for every checkpoint, or
                                  GW_SIM_BN_MIXED (drawn per checkpoint) */
};
/* Sets nodes (spares included) with ~5% spares (at least 1 from 2 nodes)
 * and a host numbering wide enough for them. */
void gw_sim_config_set_nodes(struct gw_sim_config *c, uint32_t nodes);
/* The label style in effect (legacy_hostname folded in). */
enum gw_sim_label_style gw_sim_config_label_style(const struct gw_sim_config *c);
/* Defaults = the paper profile with start = now - duration. */
void gw_sim_config_default(struct gw_sim_config *c);
/* Applies "smoke" (4 nodes incl. 1 spare, 1 day) or "paper" (63 nodes
 * incl. 3 spares, 55 days) over c's current values (keeps the seed and an
 * explicitly set start; a default start stays "now - duration").
 * GW_EINVAL with a message naming the profile when unknown. */
int gw_sim_config_profile(struct gw_sim_config *c, const char *name, struct gw_error *err);
/* Checks ranges (nodes 1..GW_SIM_MAX_NODES, gpus 1..GW_SIM_MAX_GPUS,
 * interval >= 1 s, duration > 0, ...); GW_EINVAL naming the field. */
int gw_sim_config_check(const struct gw_sim_config *c, struct gw_error *err);

/* ---------------------------------------------------------------- timeline */
enum gw_sim_class {
    GW_SIM_NVLINK,         /* XID 74 / 145 / 149 */
    GW_SIM_MEMORY,         /* XID 48 / 63 / 64 / 94 / 95, remaps */
    GW_SIM_FELL_OFF_BUS,   /* XID 79 */
    GW_SIM_GSP,            /* XID 119 / 120 */
    GW_SIM_FAIL_SLOW,      /* thermal / power throttling, no XID */
    GW_SIM_OTHER_HW,       /* PSU / board / other */
    GW_SIM_APP_XID,        /* XID 13 / 31 / 43 / 45 on one GPU: application level */
    GW_SIM_COLLECTIVE,     /* same app XID on many nodes within 30 s: job-level abort */
    GW_SIM_CLASS_COUNT_
};
const char *gw_sim_class_name(enum gw_sim_class c);   /* "nvlink", "memory", ... */

enum gw_sim_action {
    GW_SIM_ACT_NONE, GW_SIM_ACT_RESTART_APP, GW_SIM_ACT_RESET_GPU, GW_SIM_ACT_REBOOT_NODE,
    GW_SIM_ACT_DRAIN_NODE
};
const char *gw_sim_action_name(enum gw_sim_action a);  /* "none", "restart_app", "reset_gpu", "reboot_node", "drain_node" */

enum gw_sim_precursor {
    GW_SIM_PRE_NONE,
    GW_SIM_PRE_REMAP_RAMP,     /* correctable remapped rows +1 every 2-24 h for days */
    GW_SIM_PRE_SBE_RAMP,       /* single-bit ECC increments accelerating */
    GW_SIM_PRE_PENDING_REMAP,  /* XID 63 + ROW_REMAP_PENDING=1 before the fatal XID */
    GW_SIM_PRE_NVLINK_CRC,     /* NVLink CRC/replay rate ramps 10-60 min before */
    GW_SIM_PRE_PCIE_REPLAY,    /* PCIe replay burst minutes before */
    GW_SIM_PRE_THROTTLE,       /* throttle/thermal episodes before a fail-slow or failure */
    GW_SIM_PRE_MEM_PRESSURE,   /* host memory pressure (MemAvailable falling, paging out) before
                                  a node OS collapse */
    GW_SIM_PRE_COUNT_
};
const char *gw_sim_precursor_name(enum gw_sim_precursor p);

/* What the failing GPU's series do at the fault. */
enum gw_sim_fault_effect {
    GW_SIM_EFF_NONE,           /* series continue (app XID, fail-slow) */
    GW_SIM_EFF_VANISH,         /* the GPU's DCGM series stop being exported */
    GW_SIM_EFF_SENTINEL,       /* they return the exporter's sentinel values */
    GW_SIM_EFF_FROZEN,         /* util frozen, power/clocks to idle (GSP) */
    GW_SIM_EFF_NODE_DOWN,      /* the whole node stops answering scrapes */
    GW_SIM_EFF_OS_COLLAPSE     /* node OS wedged: interrupts/procs collapse, GPU util falls with
                                  FB still allocated; node silent from t_silent */
};

/* Parameters of a failure's signature in the series: fixed defaults, or
 * drawn within documented ranges with shape_jitter (docs/simulator.md 5.5). */
struct gw_sim_signature {
    double mag;                /* precursor magnitude multiplier (1) */
    double onset;              /* share of the precursor ramp before its signal shows (0.3) */
    int64_t episode_ms;        /* throttle episode period (20 min) */
    double clk_deficit;        /* SM clock deficit of throttling (0.1 + 0.2 severity) */
    double temp_rise;          /* die temperature rise of throttling / fail-slow, C */
    int64_t ramp_ms;           /* fail-slow temperature ramp (5 min) */
    uint32_t reason_bits;      /* fail-slow clock event bits (0x8|0x20, 0x40 at high severity) */
    double scrape_extra_s;     /* added dcgm scrape duration of vanish/sentinel/frozen (1.5-4.5) */
    double util_level;         /* OS collapse: GPU util % after the fault (5) */
    double intr_frac;          /* OS collapse: interrupt rate share of normal (0.275) */
    double mem_floor;          /* OS collapse precursor: MemAvailable share reached (0.03) */
};

#define GW_SIM_NO_TIME INT64_MIN

struct gw_sim_failure {
    uint32_t id;
    enum gw_sim_class cls;
    uint32_t node;
    int32_t gpu;                   /* -1: node-level */
    uint32_t xid;                  /* 0: none shown */
    enum gw_sim_action action;
    enum gw_sim_precursor precursor;
    enum gw_sim_fault_effect effect;
    int64_t t_precursor_start;     /* GW_SIM_NO_TIME when none in the data */
    int64_t t_ramp_origin;         /* the precursor's own start: before t_precursor_start when
                                      it was under way when the data starts (a slow ramp is at
                                      its late rate then), else equal to it */
    int64_t t_fault;
    int64_t t_xid_visible;         /* first scrape showing the XID; GW_SIM_NO_TIME when never */
    int64_t t_recovered;           /* GPU/node back to normal (reset, reboot, replacement) */
    int32_t session;               /* session killed by it, -1 none */
    double severity;               /* 0..1, scales precursor and effect sizes */
    uint32_t n_nodes;              /* GW_SIM_COLLECTIVE: nodes showing the XID */
    int64_t t_kill;                /* when the session it hits dies: t_fault, later for OS collapse */
    int64_t t_silent;              /* GW_SIM_EFF_OS_COLLAPSE: node stops answering; else GW_SIM_NO_TIME */
    struct gw_sim_signature sig;
};

enum gw_sim_session_outcome { GW_SIM_SESS_COMPLETED, GW_SIM_SESS_FAILED, GW_SIM_SESS_STARTUP_FAILED };

struct gw_sim_session {
    uint32_t id;
    uint32_t chain;                /* retry chain id (a chain starts after a failure or anew) */
    uint32_t attempt;              /* 0 first submission, 1.. retries */
    int64_t t_start, t_steady, t_end;  /* startup is [t_start, t_steady) */
    enum gw_sim_session_outcome outcome;
    int32_t failure;               /* failure that ended it, -1 */
    int32_t excluded_node;         /* node left out of this attempt, -1 */
    uint8_t *nodes;                /* nodes[i] = 1 when node i takes part (length = config nodes) */
    uint32_t n_nodes;
};

enum gw_sim_ckpt_phase { GW_SIM_CKPT_SAVE, GW_SIM_CKPT_LOAD };
/* What limits one checkpoint's I/O (the ground truth D7 is scored on). */
enum gw_sim_ckpt_bottleneck {
    GW_SIM_BN_NONE,                /* healthy: nothing saturated */
    GW_SIM_BN_SLOTS,               /* client RPC slot table: queue time dominates, link idle */
    GW_SIM_BN_SERVER,              /* NFS server: response time dominates, queue share low */
    GW_SIM_BN_LINK,                /* NIC / InfiniBand near line rate */
    GW_SIM_BN_COUNT_
};
#define GW_SIM_BN_MIXED (-1)       /* config: drawn per checkpoint */
/* "none", "slots", "server", "link"; "?" out of range. */
const char *gw_sim_bottleneck_name(enum gw_sim_ckpt_bottleneck b);
/* Parses "none", "slots", "server", "link" or "mixed" (GW_SIM_BN_MIXED)
 * into *out, ready for cfg.ckpt_bottleneck; -1 when unknown (*out kept). */
int gw_sim_bottleneck_parse(const char *s, int *out);
/* Sessions with fewer nodes than this never saturate the RPC slots or the
 * server: their checkpoints come out GW_SIM_BN_NONE (docs/simulator.md 4.1). */
#define GW_SIM_BN_MIN_NODES 8
struct gw_sim_checkpoint {
    uint32_t id;
    uint32_t session;
    enum gw_sim_ckpt_phase phase;
    int64_t t_start, t_end;
    uint64_t bytes;                /* cluster total */
    enum gw_sim_ckpt_bottleneck bottleneck;
};

enum gw_sim_bait_kind {
    GW_SIM_BAIT_STRAY_SBE,         /* one SBE increment */
    GW_SIM_BAIT_STRAY_PCIE,        /* one PCIe replay tick */
    GW_SIM_BAIT_STRAY_NVLINK,      /* one NVLink CRC tick */
    GW_SIM_BAIT_BENIGN_CLOCK,      /* clock event bits 0x1 / 0x4 */
    GW_SIM_BAIT_SCRAPE_GAP,        /* a node's scrapes missing for 1-3 intervals */
    GW_SIM_BAIT_EXPORTER_RESTART,  /* counters reset, XID gauge cleared */
    GW_SIM_BAIT_HOT_INLET,         /* +3..5 C on a whole node for an hour, no loss */
    GW_SIM_BAIT_COUNT_
};
const char *gw_sim_bait_name(enum gw_sim_bait_kind k);

struct gw_sim_bait {
    uint32_t id;
    enum gw_sim_bait_kind kind;
    uint32_t node;
    int32_t gpu;                   /* -1 node-level */
    int64_t t_start, t_end;
    uint32_t job;                  /* for restarts / gaps: 0 dcgm, 1 node, 2 both */
};

struct gw_sim_timeline {
    struct gw_sim_config cfg;
    struct gw_sim_failure *failures;       /* sorted by t_fault */
    size_t n_failures;
    struct gw_sim_session *sessions;       /* sorted by t_start */
    size_t n_sessions;
    struct gw_sim_checkpoint *checkpoints; /* sorted by t_start */
    size_t n_checkpoints;
    struct gw_sim_bait *baits;             /* sorted by t_start */
    size_t n_baits;
    uint8_t *lemon;                        /* lemon[i] = 1: node i carries extra hazard */
    void *priv;                            /* indexes owned by timeline.c */
};

int gw_sim_timeline_build(const struct gw_sim_config *c, struct gw_sim_timeline **out,
                          struct gw_error *err);
void gw_sim_timeline_free(struct gw_sim_timeline *tl);   /* NULL ok */

/* Ground truth, one JSON object per line, e.g.
 *   {"type":"failure","id":3,"class":"nvlink","node":"gpu071","gpu":5,"xid":149,
 *    "action":"reset_gpu","precursor":"nvlink_crc","t_precursor_start":1764000000000,
 *    "t_fault":...,"t_xid_visible":...,"t_recovered":...,"session":12}
 *   {"type":"session",...} {"type":"bait",...}
 *   {"type":"checkpoint",...,"bytes":...,"nodes":58,"bottleneck":"slots"}
 * Times in Unix ms, null when absent. */
int gw_sim_truth_write(const struct gw_sim_timeline *tl, FILE *f, struct gw_error *err);

/* Node hostname ("gpu071"), stable for a config. */
const char *gw_sim_node_name(const struct gw_sim_timeline *tl, uint32_t node);

enum gw_sim_phase {
    GW_SIM_PHASE_IDLE,      /* in no session (spare, or between retries) */
    GW_SIM_PHASE_STARTUP,   /* image pull, NCCL init */
    GW_SIM_PHASE_TRAIN,
    GW_SIM_PHASE_SAVE,      /* checkpoint save */
    GW_SIM_PHASE_LOAD       /* checkpoint load after a (re)start */
};

#define GW_SIM_STATE_MAX_ACTIVE 8
/* The state of one node at one time: what the generator needs to compute
 * every series' value. Active failures are those whose precursor has
 * started or whose fault happened, and which have not recovered. */
struct gw_sim_node_state {
    enum gw_sim_phase phase;
    int32_t session;               /* index into sessions, -1 */
    int64_t phase_start, phase_end;
    int32_t checkpoint;            /* index into checkpoints during SAVE/LOAD, -1 */
    double nfs_write_bps;          /* this node's NFS write rate now (bytes/s) */
    double nfs_read_bps;
    uint32_t n_failures;
    uint32_t failures[GW_SIM_STATE_MAX_ACTIVE];   /* indices into failures */
    uint32_t n_baits;
    uint32_t baits[GW_SIM_STATE_MAX_ACTIVE];      /* indices into baits */
    uint32_t dcgm_restarts;        /* exporter restarts so far (counters reset at each) */
    uint32_t node_restarts;
    int dcgm_up, node_up;          /* 0: that target's scrape fails now */
};
/* A few binary searches per call; read-only, so concurrent callers are
 * safe. Above GW_SIM_STATE_MAX_ACTIVE active events the newest are kept. */
int gw_sim_node_state_at(const struct gw_sim_timeline *tl, uint32_t node, int64_t t,
                         struct gw_sim_node_state *st);

/* --------------------------------------------------------------- generator */
enum gw_sim_job { GW_SIM_JOB_DCGM = 0, GW_SIM_JOB_NODE = 1 };

/* One scrape of one target: values of its series at time t (jittered). */
struct gw_sim_scrape {
    uint32_t node;
    enum gw_sim_job job;
    int64_t t;
    size_t n;
    const uint32_t *series;   /* series ids (see gw_sim_gen_series_*) */
    const double *v;
};

struct gw_sim_gen;
/* which: bit 0 DCGM, bit 1 node_exporter; a filter callback may narrow the
 * series further (NULL: all). The timeline must outlive the generator. */
typedef int (*gw_sim_series_filter)(void *ud, const char *metric);
int gw_sim_gen_open(struct gw_sim_gen **out, const struct gw_sim_timeline *tl,
                    gw_sim_series_filter filter, void *filter_ud, struct gw_error *err);
void gw_sim_gen_close(struct gw_sim_gen *g);
/* Next scrape in time order (round by round, nodes in order within a
 * round). Returns 1 with *s filled (valid until the next call), 0 at the
 * end, or an error. */
int gw_sim_gen_next(struct gw_sim_gen *g, struct gw_sim_scrape *s, struct gw_error *err);
/* Series known so far (grows: each new XID err_code is a new series). */
size_t gw_sim_gen_series_count(const struct gw_sim_gen *g);
/* Canonical label bytes (labels.h) of a series. */
const uint8_t *gw_sim_gen_series_labels(const struct gw_sim_gen *g, uint32_t id, size_t *len);
/* The series' labels as protobuf: repeated prometheus.Label fields, ready
 * to be field 1 of a remote-write 1.0 TimeSeries. */
const uint8_t *gw_sim_gen_series_pb(const struct gw_sim_gen *g, uint32_t id, size_t *len);
/* Metric name of a series (NUL-terminated). */
const char *gw_sim_gen_series_metric(const struct gw_sim_gen *g, uint32_t id);
/* Every metric family the generator can emit with its type and help, for
 * remote-write metadata and the golden list: calls cb once per family. */
typedef int (*gw_sim_family_cb)(void *ud, const char *metric, const char *type, const char *help);
int gw_sim_gen_families(const struct gw_sim_gen *g, gw_sim_family_cb cb, void *ud);

/* ------------------------------------------------------------------ output */
struct gw_sim_output_opts {
    const char *url;           /* remote write endpoint, or NULL */
    const char *out_dir;       /* write files instead, or NULL */
    unsigned connections;      /* parallel connections (4) */
    size_t max_samples_per_request;  /* 2000 */
    uint64_t shard_seed;       /* 0: series id % connections, lockstep; else random sharded arrival:
                                  series -> connection by a seeded hash, batch sizes in [1, max],
                                  connections up to max_skew scrapes apart, ~1% duplicate requests */
    unsigned max_skew;         /* rounds a connection may run ahead/behind (3) with shard_seed */
    double speed;              /* 0: as fast as possible; 1: real time (a scrape is sent when
                                  the wall clock reaches its timestamp: a past start is
                                  backfilled first); k: k x real time from the first scrape */
    int progress;              /* report progress (progress.h: a bar on a terminal, log lines otherwise) */
    int64_t progress_end_ms;   /* data time of the last scrape, for the progress total (0: unknown) */
};
struct gw_sim_output_stats {
    uint64_t samples, requests, bytes, retries, series;
    uint64_t duplicates;       /* requests sent twice (shard_seed) */
    double seconds;
};
/* Runs the generator to its end, sending or writing everything. */
int gw_sim_output_run(struct gw_sim_gen *g, const struct gw_sim_output_opts *o,
                      struct gw_sim_output_stats *st, struct gw_error *err);

#endif /* GW_SIM_H */
