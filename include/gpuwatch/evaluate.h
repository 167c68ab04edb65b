/* gpuwatch/evaluate.h - scoring the detectors against the simulator's
 * ground truth (`gpuwatch evaluate`).
 *
 * gw_eval_run() builds a simulator timeline, generates only the series a
 * detector reads (gw_det_wants_metric) and feeds every sample, in the
 * generator's time order, through the same detector engine ingest runs
 * (detect.h, alert.h without log or notifier), collecting every alert.
 * gw_eval_score() then matches alerts to failures with the protocol of
 * DESIGN.md section 4:
 *  - an alert (severity warning or critical) catches a failure when it
 *    names the failure's node (and, when both are GPU-level, any GPU of
 *    it) and is active (firing) at some time within
 *    [t_fault - before_ms, t_fault + after_ms]; its detection time is
 *    fired_at (an alert firing since before the window keeps its whole
 *    lead); an alert catches one failure at
 *    most: one of its own GPU (or a node-level one) before any other GPU
 *    of its node, the earliest (by t_fault) whose window it fires in, so an alert
 *    lingering from one failure is not credited with the next one;
 *  - caught before the XID: detection time < t_xid_visible (failures with
 *    no visible XID: < t_fault); lead = that difference;
 *  - delay = detection time - t_fault (negative when early);
 *  - false alarms: warning/critical alerts that catch no failure and are not
 *    explained by an injected application XID on the same node within the
 *    same window, after merging such alerts on one node that start within
 *    merge_ms of each other; per day of simulated time;
 *  - info alerts (application XIDs, job-level collective aborts) are counted
 *    apart and never as false alarms;
 *  - related alerts: warning/critical alerts that catch no failure but name
 *    a failing node while its failure is under way - active at some time
 *    within [t_precursor_start (else t_fault - before_ms), t_recovered +
 *    after_ms] - are counted apart (a repeat during an outage, a precursor
 *    sign more than before_ms ahead): there is a real fault behind them, so
 *    they are not false alarms.
 * Hardware failures are the timeline's failures of every class but
 * GW_SIM_APP_XID and GW_SIM_COLLECTIVE; a failure "has a precursor in the
 * data" when t_precursor_start != GW_SIM_NO_TIME and < t_fault. Alerts
 * that never fired (fired_at INT64_MIN) are ignored.
 * Per detector (alerts of that detector only) and combined. */
#ifndef GW_EVALUATE_H
#define GW_EVALUATE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "gpuwatch/alert.h"
#include "gpuwatch/detect.h"
#include "gpuwatch/err.h"
#include "gpuwatch/sim.h"

/* One alert as the evaluation sees it. */
struct gw_eval_alert {
    uint32_t node;             /* timeline node index; UINT32_MAX when job-level or unknown host */
    char host[GW_ALERT_HOST_MAX]; /* the alert's hostname as given ("" job-level); an unknown host
                                  (an exporter pod, an IP) is a false alarm */
    int gpu;                   /* -1 node-level */
    char alertname[GW_ALERT_NAME_MAX];
    char detector[8];          /* "D1".."D8" */
    char cls[32];
    enum gw_severity severity;
    int64_t active_at, fired_at, resolved_at;   /* resolved_at INT64_MAX when still active at the end */
};

struct gw_eval_opts {
    int64_t before_ms;         /* 60 min */
    int64_t after_ms;          /* 5 min */
    int64_t merge_ms;          /* 30 min */
    int match_gpu;             /* 1: a GPU-level alert must name the failing GPU of a GPU-level
                                  failure (stricter than the protocol); default 0 */
    /* gw_eval_run's arrival order: 0 = the generator's time order; else
       Prometheus-like remote-write shards emulated in process (see
       struct gw_eval_shuffler), seeded with this */
    uint64_t shuffle_seed;
    unsigned shuffle_shards;   /* 4 */
    unsigned shuffle_skew;     /* scrapes a shard may lag (3) */
    /* hooks of gw_eval_run (NULL: none): every change of an alert, and the
       engine after its queues were drained (every few scrapes and at the
       end: the caller may drain more, e.g. gw_det_activity_drain) */
    void (*on_alert)(void *ud, const struct gw_alert *al);
    void (*on_drain)(void *ud, struct gw_det *d);
    void (*on_ckpt)(void *ud, const struct gw_det_ckpt *e);   /* each finished D7 event */
    void *hook_ud;
    const char *log_dir;       /* keep the alert log in log_dir/alerts/ as serve does (NULL: none) */
};
void gw_eval_opts_default(struct gw_eval_opts *o);

#define GW_EVAL_MAX_ROWS 8     /* D1..D6, combined */
#define GW_EVAL_MAX_DET 8      /* detectors D1..D8 tracked per failure */

struct gw_eval_row {
    char name[16];             /* "D1" .. "D6", "combined" */
    uint32_t failures;         /* hardware failures in the run */
    uint32_t caught;
    uint32_t with_precursor;   /* failures with a precursor in the data */
    uint32_t precursor_caught_early;   /* of those, caught before the XID */
    uint32_t caught_before_xid;        /* all failures caught before the XID */
    double lead_median_min, lead_p90_min;    /* over caught-before-XID failures; NAN when none */
    double delay_median_min, delay_p90_min;  /* fault -> detection over caught failures; NAN when none */
    uint32_t alerts;           /* warning/critical alerts of this row */
    uint32_t false_alarms;     /* after merging */
    double false_per_day;
    uint32_t info_alerts;
    uint32_t related_alerts;   /* see "related alerts" above: neither caught nor false */
    uint32_t explained_alerts; /* explained by an injected application XID */
};

/* Per failure: which detectors caught it and when. */
struct gw_eval_failure {
    uint32_t failure;          /* index into the timeline's failures */
    int caught;                /* by any detector */
    int64_t t_detect;          /* earliest detection time; INT64_MIN when missed */
    char first_detector[8];
    char first_alert[GW_ALERT_NAME_MAX];
    uint32_t detectors_mask;   /* bit d set when D<d> caught it */
    /* the failure as the timeline has it (so a report prints without it) */
    enum gw_sim_class cls;
    uint32_t node;
    int32_t gpu;
    uint32_t xid;
    enum gw_sim_precursor precursor;
    int has_precursor;         /* precursor in the data (t_precursor_start < t_fault) */
    int64_t t_precursor_start, t_fault, t_xid_visible, t_recovered;
    char host[32];             /* node name, "node<N>" when the timeline has none */
    int64_t t_detect_by[GW_EVAL_MAX_DET + 1];   /* [1]..[8]: detection time by D<d>; INT64_MIN when missed */
};

/* A warning/critical alert that caught no failure and was not explained:
 * listed so thresholds can be debugged. Alerts of one node starting within
 * merge_ms of each other form one false alarm; group_first is 1 on the
 * first alert of each group. */
struct gw_eval_false_alarm {
    uint32_t node;             /* UINT32_MAX: job-level / unknown host */
    int gpu;
    char host[32];
    char alertname[GW_ALERT_NAME_MAX];
    char detector[8];
    enum gw_severity severity;
    int64_t fired_at, resolved_at;
    int group_first;
};

/* `--checkpoints`: D7's checkpoint events against the timeline's
 * checkpoints. An event matches the truth checkpoint of the same phase it
 * overlaps most (each at most once); start/end errors are event - truth.
 * A CheckpointIoBottleneck alert belongs to the save whose end precedes
 * its activeAt by at most 10 min (else it is unmatched). */
struct gw_eval_ckpt {
    uint32_t truth, events, matched;
    uint32_t truth_by[GW_SIM_BN_COUNT_];          /* truth checkpoints per bottleneck */
    uint32_t confusion[GW_SIM_BN_COUNT_][GW_CKPT_DIAG_COUNT_];   /* matched: truth bottleneck x diagnosis */
    uint32_t start_within2, end_within2;          /* matched with |error| <= 2 scrape intervals */
    double start_err_med_s, start_err_max_s;      /* |error|, seconds; NAN without matches */
    double end_err_med_s, end_err_max_s;
    uint32_t bn_alerts;                           /* CheckpointIoBottleneck alerts */
    uint32_t bn_alerts_healthy;                   /* ... on a healthy truth save */
    uint32_t bn_alerts_unmatched;                 /* ... on no truth save */
    uint32_t limited_saves, limited_saves_alerted;/* truth saves limited by slots/server/link; alerted */
    uint32_t stalled_alerts;
    int64_t interval_ms;
};

struct gw_eval_report {
    uint64_t seed;
    double days;
    uint32_t nodes, gpus;
    struct gw_eval_row rows[GW_EVAL_MAX_ROWS];
    size_t n_rows;
    struct gw_eval_failure *failures;      /* n_failures entries (hardware failures only) */
    size_t n_failures;
    uint64_t samples;                      /* fed to the detectors */
    double seconds;                        /* wall time of the run */
    double det_ns_per_sample;              /* detector CPU per sample */
    struct gw_eval_false_alarm *false_alarms;   /* n_false_alarms entries, by node then fired_at */
    size_t n_false_alarms;
    char profile[16];                      /* the simulator profile (informational) */
    uint64_t series;                       /* series registered with the detectors */
    uint32_t det_present;                  /* bit d set when D<d> raised a warning/critical alert */
    uint32_t unknown_host_alerts;          /* alerts naming a host that is no node (false alarms) */
    struct gw_eval_ckpt ckpt;              /* D7 (its alerts are scored here, not against failures) */
};
/* Scores D7's events and alerts (any order) against tl's checkpoints. */
int gw_eval_ckpt_score(const struct gw_sim_timeline *tl, const struct gw_det_ckpt *ev, size_t n_ev,
                       const struct gw_eval_alert *alerts, size_t n_alerts, struct gw_eval_ckpt *out);
/* Prints the checkpoint section of n reports (per seed, then totals) as a
 * table, or with json one object {"seeds":[...],"totals":{...}}. */
int gw_eval_ckpt_print(const struct gw_eval_report *reps, size_t n, int json, FILE *f);
void gw_eval_report_free(struct gw_eval_report *r);

/* Scores alerts (any order) against tl. The report owns its arrays. */
int gw_eval_score(const struct gw_sim_timeline *tl, const struct gw_eval_alert *alerts, size_t n_alerts,
                  const struct gw_eval_opts *o, struct gw_eval_report *rep, struct gw_error *err);

/* Runs one simulation (cfg with its seed) through the detectors with
 * config dc and scores it. alerts_out (may be NULL) receives the alerts
 * (caller frees *alerts_out). */
int gw_eval_run(const struct gw_sim_config *cfg, const struct gw_det_config *dc, const struct gw_eval_opts *o,
                struct gw_eval_report *rep, struct gw_eval_alert **alerts_out, size_t *n_alerts_out,
                struct gw_error *err);

/* `--ledger`: the node ledger (D8, ledger.h) against the ground truth
 * (src/eval/ledger.c has the matching rules). */
struct gw_eval_ledger {
    uint64_t seed;
    double days;
    uint32_t truth_sessions, found_sessions, matched, outcome_agree;
    uint32_t truth_chains, chains;             /* automatic retry chains */
    double truth_chain_success, chain_success; /* 0..1, NAN none */
    double truth_interval_med_min, interval_med_min;
    uint32_t truth_manual, manual;             /* manual recoveries */
    double truth_manual_success, manual_success;
    uint32_t failures;                         /* the ledger's failures */
    uint32_t n_lemons, lemon_rank[16], lemon_hw[16];   /* per truth lemon: rank (0 unranked), hardware failures */
    uint32_t lemons_failing, lemons_in_top;
    double truth_top3_share, top3_share;
    uint32_t truth_exclusions, implied_exclusions;
    uint32_t implied_checked, implied_traceable;
    uint32_t exclusions_now, exclusions_traceable;
    size_t activity_samples;
    double build_ms;                           /* gw_led_build's wall time */
};
int gw_eval_ledger_run(const struct gw_sim_config *cfg, const struct gw_det_config *dc, const struct gw_eval_opts *o,
                       struct gw_eval_ledger *v, struct gw_error *err);
int gw_eval_ledger_print(const struct gw_eval_ledger *v, size_t n, FILE *f);

/* Prints a report table (per detector rows + combined, the report's v1
 * figures beside: 10/10 caught, 2/10 before the XID, ~0.84 false alarms a
 * day) or, with json, one JSON object. Several reports (seeds) are printed
 * one after the other, then their totals. */
int gw_eval_print(const struct gw_eval_report *reps, size_t n, int json, FILE *f);

/* gw_eval_print with flags: GW_EVAL_PRINT_JSON, GW_EVAL_PRINT_VERBOSE (the
 * per-failure list and every false alarm, in the table and in the JSON).
 * Returns GW_OK or GW_EIO when writing fails. */
#define GW_EVAL_PRINT_JSON 1
#define GW_EVAL_PRINT_VERBOSE 2
int gw_eval_print_flags(const struct gw_eval_report *reps, size_t n, unsigned flags, FILE *f);

/* ------------------------------------------------------ shuffled arrival
 * Emulates Prometheus remote-write shards in process: series are assigned
 * to `shards` queues by a seeded hash of their id; each queue lags the
 * generator by 0..max_skew scrape rounds (seeded per shard, redrawn every
 * 20 rounds); at each round the due samples are delivered in batches of
 * random size (1..500) from shards picked at random, so batches of
 * different shards interleave. A queue is FIFO, so per-series order is
 * kept. The same seed gives the same order. deliver() gets every sample,
 * batch_end() the largest timestamp of each batch. */
struct gw_eval_shuffler;
typedef void (*gw_eval_deliver_fn)(void *ud, uint32_t id, int64_t t, double v);
typedef void (*gw_eval_batch_end_fn)(void *ud, int64_t t_max);
int gw_eval_shuffler_new(struct gw_eval_shuffler **out, uint64_t seed, unsigned shards, unsigned max_skew,
                         gw_eval_deliver_fn deliver, gw_eval_batch_end_fn batch_end, void *ud);
/* Buffers one generator scrape (scrapes in generator order); delivers
 * what is due when a new round starts. */
int gw_eval_shuffler_scrape(struct gw_eval_shuffler *s, const struct gw_sim_scrape *sc);
/* Delivers everything still buffered. */
void gw_eval_shuffler_flush(struct gw_eval_shuffler *s);
void gw_eval_shuffler_free(struct gw_eval_shuffler *s);

/* ---------------------------------------------------------- variations
 * `gpuwatch evaluate --variations`: named families of simulator variations
 * (docs/evaluation.md section 5), each a modification of the paper
 * profile with random failure shapes, scored on its own. */
size_t gw_eval_family_count(void);
const char *gw_eval_family_name(size_t family);
/* The simulator config and options of run `index` (0, 1, ... over the
 * seeds) of a family: base is the paper profile with the start and days
 * to use; families alternate some settings by index. */
int gw_eval_family_config(size_t family, size_t index, uint64_t seed, const struct gw_sim_config *base,
                          struct gw_sim_config *cfg, struct gw_eval_opts *o, struct gw_error *err);

struct gw_eval_var_row {
    char name[32];
    uint32_t runs, failures, caught, with_precursor, precursor_caught_early, false_alarms;
    uint32_t unknown_host_alerts;
    double days;
    double false_per_day_504;   /* false alarms per day scaled to 504 GPUs: fa/day x 504 / (nodes x gpus) */
    uint32_t det_present;       /* bit d: D<d> alerted in some run */
    uint32_t det_caught[GW_EVAL_MAX_DET + 1];          /* [0] combined */
    double delay_median_min[GW_EVAL_MAX_DET + 1];      /* fault -> firing, over caught failures; NAN none */
    double delay_p90_min[GW_EVAL_MAX_DET + 1];
};
/* Pools n reports (one family, or all for the totals) into one row. */
int gw_eval_var_row(const struct gw_eval_report *reps, size_t n, const char *name, struct gw_eval_var_row *row);
/* Prints family rows then the totals row (the last of rows) as a table, or
 * with json one object {"families":[...],"totals":{...}}. */
int gw_eval_var_print(const struct gw_eval_var_row *rows, size_t n, int json, FILE *f);

#endif /* GW_EVALUATE_H */
