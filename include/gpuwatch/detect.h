/* gpuwatch/detect.h - the inline failure detectors (D1-D7 of DESIGN.md
 * section 4). Ingest hands every accepted sample to gw_det_sample(); the
 * detectors keep small fixed state per series, per GPU and per node, and
 * raise alerts through alert.h on data time.
 *
 *  D1 XID onsets (edges of the latched gauge, count increases), dedup of
 *     bursts, cluster-wide collective aborts reported once as job-level,
 *     repeats of application XIDs on one GPU escalated;
 *  D2 memory degradation: uncorrectable remaps / DBE, remap failure,
 *     pending remaps, trends of correctable remaps and single-bit ECC;
 *  D3 interconnect error rates: NVLink CRC/replay/recovery, PCIe replay,
 *     InfiniBand port errors, persistent over several scrapes;
 *  D4 multi-signal collapse against peers: a GPU busy but drawing idle
 *     power at idle clocks (frozen), a node in a job whose interrupts and
 *     runnable processes collapse while the fleet's do not;
 *  D5 telemetry structure: a GPU vanished while its exporter answers,
 *     sentinel values, an exporter down, a node silent;
 *  D6 fail-slow: throttle reasons with clock loss against peers,
 *     temperature bands, violation counters;
 *  D7 checkpoint I/O: save/load phases of the fleet from the NFS
 *     mountstats, each one an event with its bottleneck (RPC slots, NFS
 *     server, link) and the remedy (gw_det_ckpt_drain);
 *  D8 node activity: idle, allocated or computing per node and bucket
 *     (gw_det_activity_drain), the input of the node ledger (ledger.h).
 *
 * Series are classified once (gw_det_series) by metric name and labels.
 * The node is one canonical name per machine across exporters and label
 * styles (identity.c, docs/detectors.md "Node identity"): the first of
 * the configured node labels (node, kubernetes_node, nodename, hostname,
 * Hostname, host, exported_instance, instance) that names a host - a
 * dcgm-exporter pod name is never a node - lower-cased, without port and
 * domain; an IP address is mapped to its node through joins learnt from
 * the data (node_uname_info{nodename}, DCGM's Hostname next to its
 * instance). The GPU is the `gpu` label.
 *
 * Arrival order: data time is cut into buckets of the scrape interval
 * (learnt from the data on a fixed grid, or configured); a bucket is
 * judged once it is complete - every node has delivered each of its live
 * series past the bucket's end, or the fleet has moved `lateness` past it
 * - and every evaluation reads values at the bucket's end. So any
 * interleaving of the same data (shards, batches, retried duplicates)
 * whose series are at most `lateness` apart gives the same alerts.
 *
 * Thread-safety: every function takes the engine's mutex, so the engine
 * may be fed from any thread and snapshotted from another; per-series time
 * order is the caller's job (ingest feeds it under the database's append
 * lock, in the order samples are accepted). */
#ifndef GW_DETECT_H
#define GW_DETECT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "gpuwatch/alert.h"
#include "gpuwatch/err.h"

/* Thresholds; every field has a config-file key (see docs/detectors.md and
 * gw_det_config_write()). */
struct gw_det_config {
    int enable[7];                  /* [1]..[6]: detector on (1) / off (0) */
    /* framework */
    int64_t interval_ms;            /* scrape interval; 0 = learn from the data (default) */
    int64_t grace_ms;               /* kept for old config files; unused (see lateness_ms) */
    int64_t lateness_ms;            /* a bucket waits this long for late series (0 = 150 s within 2-8 intervals) */
    /* node identity */
    char node_labels[256];          /* labels naming the node, in order (comma-separated) */
    char node_regex[256];           /* optional: the node is the first group of this regex on that value */
    char node_map[2048];            /* optional: "alias=node,alias=node" explicit names */
    int strip_domain;               /* drop the domain of a host name (1) */
    double sentinel_min;            /* values >= this are exporter sentinels (1e15) */
    /* D1 */
    int64_t xid_hold_ms;            /* an XID alert stays active this long (30 min) */
    int64_t collective_window_ms;   /* app XIDs of one code within this window ... (60 s) */
    uint32_t collective_nodes;      /* ... on at least this many nodes = job-level (3) */
    uint32_t repeat_bursts;         /* app-XID bursts on one GPU within repeat_window = suspect (5) */
    int64_t repeat_window_ms;       /* (24 h) */
    int64_t burst_gap_ms;           /* onsets closer than this are one burst (180 s) */
    /* D2 */
    uint32_t remap_count;           /* correctable remaps ... (2) */
    int64_t remap_window_ms;        /* ... within this window warn (72 h) */
    uint32_t sbe_count;             /* scrapes with new single-bit errors ... (3) */
    int64_t sbe_window_ms;          /* ... within this window warn (24 h) */
    int64_t pending_for_ms;         /* remap pending this long warns (60 s) */
    int64_t memory_hold_ms;         /* degradation alerts stay active this long after the last sign (7 d) */
    /* D3 */
    uint32_t link_hits;             /* scrapes with error increments ... (2) */
    uint32_t link_of;               /* ... of the last N scrapes (4) */
    double link_burst;              /* or one scrape with at least this many new errors (1000) */
    int64_t link_hold_ms;           /* (60 min) */
    /* D4 */
    double frozen_util;             /* GPU util >= this (%) ... (90) */
    double frozen_power_ratio;      /* ... and power < ratio x busy peers' median (0.4) */
    double frozen_clock_ratio;      /* ... and SM clock < ratio x busy peers' median (0.5) */
    uint32_t frozen_buckets;        /* for this many buckets (2) */
    uint32_t frozen_same;           /* a reading unchanged on this many samples is frozen (3) */
    double collapse_ratio;          /* node signal below ratio x its own baseline and the peers' median (0.5) */
    uint32_t collapse_buckets;      /* (2) */
    double mem_avail_ratio;         /* MemAvailable below this share of MemTotal is memory pressure (0.05) */
    double swap_rate;               /* or pages swapped out per second above this (2000) */
    uint32_t mempress_buckets;      /* for this many evaluations (2) */
    double mask_fraction;           /* fleet transition mask: this share of nodes changed state (0.5) */
    int64_t mask_ms;                /* ... within / for this long (5 min) */
    uint32_t min_peers;             /* peer statistics need this many members (4) */
    /* D5 */
    double vanish_intervals;        /* a GPU missing this many intervals while its exporter answers (2.5) */
    uint32_t sentinel_scrapes;      /* sentinel values on this many consecutive scrapes (2) */
    int64_t exporter_down_ms;       /* an exporter not answering this long (5 min) */
    double silent_intervals;        /* a node sending nothing for this many intervals (6) */
    /* D6 */
    uint32_t throttle_hits;         /* evaluations with loss bits and clock loss or heat ... (2) */
    uint32_t throttle_of;           /* ... of the last N (3) */
    double throttle_clock_loss;     /* SM clock below the sibling GPUs' median by this share (0.05) */
    double throttle_temp_excess;    /* die temperature above the siblings' median by this (C, 5) */
    int64_t throttle_long_ms;       /* throttle reasons alone for this long (5 min) */
    double temp_warn, temp_crit;    /* die temperature bands (85, 92 C) */
    int64_t temp_warn_ms, temp_crit_ms; /* (5 min, 2 min) */
    double hbm_temp_warn;           /* HBM (95 C, temp_warn_ms) */
    int64_t slow_hold_ms;           /* (30 min) */
    /* D7 checkpoint I/O (docs/detectors.md "D7") */
    int ckpt_enable;                /* D7 on (1) */
    uint32_t ckpt_min_nodes;        /* a checkpoint starts when this many nodes move data in bulk at once (3) */
    double ckpt_rise_ratio;         /* a node moves data in bulk at this multiple of its own idle rate ... (10) */
    double ckpt_floor_bps;          /* ... and at least this many bytes/s (16 MiB/s) */
    uint32_t ckpt_end_buckets;      /* a checkpoint ends after this many quiet evaluations (2) */
    uint32_t ckpt_min_buckets;      /* shorter bursts are no checkpoint (2) */
    double ckpt_queue_share;        /* slot-limited: queue time at least this share of the round trip ... (0.5) */
    double ckpt_backlog;            /* ... and backlog per send at least this, or the slots at their limit (1) */
    double ckpt_link_util;          /* link-limited: NIC/IB link of the NFS traffic at this share of its speed (0.8) */
    double ckpt_server_rtt_ratio;   /* server-limited: response time this multiple of its idle level (4) */
    double ckpt_stall_ratio;        /* CheckpointStalled: a save this multiple of the median recent save (3) */
    uint32_t ckpt_stall_history;    /* ... once this many saves are known (5) ... */
    double ckpt_stall_max_ratio;    /* ... and this multiple of the longest of them (1.5) */
    /* D8 node activity */
    int act_enable;                 /* D8 on (1) */
    double act_train_util;          /* computing: the node's mean GPU util at least this (30 %) */
    double act_fb_mib;              /* allocated: half of its GPUs hold at least this frame buffer (1024 MiB) */
};
void gw_det_config_default(struct gw_det_config *c);
/* Reads "key = value" lines (# comments; durations like 30s, 5m, 72h, 7d;
 * numbers; on/off for d1..d6) over c's current values. GW_EINVAL naming
 * the file, line and key for unknown keys or bad values; GW_EIO when the
 * file cannot be read. */
int gw_det_config_load(struct gw_det_config *c, const char *path, struct gw_error *err);
/* Writes every key with its value and a comment: the documented default file. */
int gw_det_config_write(const struct gw_det_config *c, FILE *f);

struct gw_det;
/* alerts is borrowed and must outlive the engine; the engine registers its
 * rules there. */
int gw_det_new(struct gw_det **out, const struct gw_det_config *c, struct gw_alerts *alerts,
               struct gw_error *err);
void gw_det_free(struct gw_det *d);    /* NULL ok */
/* Applies c's thresholds to a running engine (a configuration reload).
 * What was fixed when the engine started stays as it was: which detectors
 * run (d1..d8), node identity (node_labels, node_regex, node_map,
 * strip_domain) and interval; the keys among these whose new value differs
 * are listed in kept ("d7,node_labels", may be NULL) and counted in the
 * return value (they take effect at the next start). */
int gw_det_set_config(struct gw_det *d, const struct gw_det_config *c, char *kept, size_t kept_cap);
/* The configuration the engine runs with now. */
void gw_det_get_config(struct gw_det *d, struct gw_det_config *c);

/* 1 when some detector reads series of this metric name (evaluate uses it
 * to generate only those). */
int gw_det_wants_metric(const char *name, size_t len);

/* Classifies a series (canonical label bytes, labels.h) once. Returns a
 * handle for gw_det_sample(), or 0 when no detector reads it. id is the
 * caller's stable series id: the same id given twice returns the same
 * handle. */
uint32_t gw_det_series(struct gw_det *d, uint64_t id, const uint8_t *labels, size_t len);
/* One accepted sample of a series (samples of a series in time order;
 * older or equal timestamps than the series' newest are ignored). */
void gw_det_sample(struct gw_det *d, uint32_t handle, int64_t t, double v);
/* Moves data time to at least t and evaluates due buckets (ingest calls
 * it after each request; samples also move it). */
void gw_det_advance(struct gw_det *d, int64_t t);
/* Evaluates every open bucket and resolves what is due at data time t
 * (end of a replay or an evaluation run). */
void gw_det_finish(struct gw_det *d, int64_t t);

struct gw_det_stats {
    uint64_t series, nodes, gpus;   /* tracked */
    uint64_t samples;               /* seen by a detector */
    uint64_t buckets;               /* evaluated */
    uint64_t raises[7];             /* per detector */
    int64_t interval_ms;            /* learnt or configured */
    uint64_t bytes;                 /* memory held */
    uint64_t late;                  /* samples that arrived after their bucket was judged */
    uint64_t joins;                 /* instance -> node joins learnt (IP or name aliases) */
    int64_t judged_t;               /* end of the newest judged bucket (INT64_MIN before) */
    uint64_t eval_ns[9];            /* bucket evaluation time since start: [0] peer
                                     * statistics, [1]..[8] D1..D8 (D2/D3 work per sample,
                                     * untimed: they show 0) */
};
void gw_det_stats(struct gw_det *d, struct gw_det_stats *st);

/* Detector state across restarts: the whole engine state (no pointers
 * inside) written atomically to path (tmp + rename) / read back. After a
 * load, samples at or before each series' newest seen timestamp are
 * ignored, so replaying the WAL over a snapshot neither loses nor repeats
 * events. GW_ECORRUPT when the file is not a snapshot of this version. */
int gw_det_snapshot_save(struct gw_det *d, const char *path, struct gw_error *err);
int gw_det_snapshot_load(struct gw_det *d, const char *path, struct gw_error *err);

/* ------------------------------------------------ D7: checkpoint events
 * Every checkpoint save or load the fleet performs is one event, judged
 * at its end (data time). Events wait in the engine (at most
 * GW_CKPT_QUEUE; older ones are dropped and counted) until drained. */
enum gw_ckpt_phase { GW_CKPT_SAVE = 1, GW_CKPT_LOAD = 2 };
enum gw_ckpt_diag {
    GW_CKPT_UNKNOWN = 0,   /* no mountstats timing counters */
    GW_CKPT_HEALTHY,       /* nothing saturated */
    GW_CKPT_SLOTS,         /* client RPC slot table: queue time dominates, backlog, slots at the limit */
    GW_CKPT_SERVER,        /* the NFS server: response time far above its idle level, little queueing */
    GW_CKPT_LINK,          /* the NIC / InfiniBand link carrying NFS near its speed */
    GW_CKPT_DIAG_COUNT_
};
#define GW_CKPT_QUEUE 64
#define GW_CKPT_MAX_BUCKETS 480   /* per-bucket throughput kept per event (4 h at 30 s) */
const char *gw_ckpt_phase_name(int phase);   /* "save", "load", "?" */
const char *gw_ckpt_diag_name(int diag);     /* "unknown", "healthy", "slot_limited", "server_limited", "link_limited" */
const char *gw_ckpt_remedy(int diag);        /* what to change for that cause ("" healthy/unknown) */

struct gw_det_ckpt {
    uint64_t id;                /* increasing per engine */
    int64_t t_start, t_end;     /* data time (ms): start of the first and end of the last busy bucket */
    int32_t phase;              /* enum gw_ckpt_phase */
    int32_t diag;               /* enum gw_ckpt_diag */
    uint32_t nodes;             /* most nodes moving data in one bucket */
    uint32_t buckets;           /* busy buckets */
    int64_t interval_ms;        /* bucket width */
    double bytes;               /* NFS bytes moved by the fleet in the phase's direction */
    double peak_bps, mean_bps;  /* fleet bytes/s: highest bucket, bytes / duration */
    double link_util;           /* mean utilisation of the links carrying the NFS traffic (0..1), NAN unknown */
    double link_util_max;       /* highest node-bucket */
    double queue_share;         /* queue time / request time of WRITE (save) or READ (load), NAN unknown */
    double rtt_ms;              /* response time per request, NAN unknown */
    double rtt_base_ms;         /* the same outside checkpoints (slow average), NAN unknown */
    double backlog_per_send;    /* transport backlog per send, NAN unknown */
    double slot_high;           /* highest transport_maximum_rpc_slots of the busy nodes, NAN unknown */
    double slot_limit;          /* the slot limit in use (see docs/detectors.md), NAN unknown */
    double slots_at_limit;      /* share of busy node-buckets at >= 90 % of the limit, NAN unknown */
};
/* Fixed encoding for the key-value store: version byte 1, then every field
 * little-endian (int64 / IEEE-754 doubles as uint64). */
#define GW_CKPT_ENC_BYTES 145
void gw_det_ckpt_encode(const struct gw_det_ckpt *e, uint8_t out[GW_CKPT_ENC_BYTES]);
/* GW_OK, or GW_ECORRUPT when b is not an encoding of this version. */
int gw_det_ckpt_decode(const uint8_t *b, size_t n, struct gw_det_ckpt *e);
/* The event store `serve` keeps (DIR/checkpoints/, one key-value table
 * GW_CKPT_TABLE): key = t_start (sign bit flipped) then id, each 8 bytes
 * big-endian (so a scan runs in start order), value = gw_det_ckpt_encode(). */
#define GW_CKPT_TABLE "events"
#define GW_CKPT_KEY_BYTES 16
void gw_det_ckpt_key(int64_t t_start, uint64_t id, uint8_t out[GW_CKPT_KEY_BYTES]);

/* Finished checkpoints since the last drain, oldest first: cb gets the
 * event and its fleet throughput per bucket (t = bucket ends, bps in the
 * phase's direction; at most GW_CKPT_MAX_BUCKETS, the newest kept).
 * Called without the engine's lock held; cb must not call into d.
 * Returns GW_OK or cb's nonzero value (the events not yet given stay). */
typedef int (*gw_det_ckpt_cb)(void *ud, const struct gw_det_ckpt *e, const int64_t *t, const double *bps,
                              size_t n);
int gw_det_ckpt_drain(struct gw_det *d, gw_det_ckpt_cb cb, void *ud);

/* D8: node activity, one level per live node and judged bucket (data
 * time T = the bucket's end): GW_ACT_IDLE, GW_ACT_ALLOCATED (frame buffer
 * held, GPUs not computing: start-up, wedged processes), GW_ACT_COMPUTING
 * (mean GPU util >= act_train_util). Nodes without a GPU util value at T
 * get none. Drained oldest first, in judgement order; cb gets the node's
 * canonical name; called without the engine's lock; cb must not call into
 * d. Returns GW_OK or cb's nonzero value (the levels not yet given stay).
 * The queue holds at most 2^20 levels; beyond, new ones are dropped and
 * counted (gw_det_activity_dropped). */
enum { GW_ACT_IDLE = 0, GW_ACT_ALLOCATED = 1, GW_ACT_COMPUTING = 2 };
typedef int (*gw_det_activity_cb)(void *ud, const char *node, int64_t t, int level);
int gw_det_activity_drain(struct gw_det *d, gw_det_activity_cb cb, void *ud);
uint64_t gw_det_activity_dropped(struct gw_det *d);

#endif /* GW_DETECT_H */
