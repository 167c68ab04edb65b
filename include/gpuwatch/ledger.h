/* gpuwatch/ledger.h - from detection to recovery (D8): training sessions
 * and retry chains, scheduler events, the node reliability ledger (lemon
 * ranking, exclusions, escalation of repeats) and recovery accounting
 * (MTBF, goodput, time to detection and to the next steady training).
 *
 * Inputs, all plain arrays the caller loads (ledger_load.c loads them
 * read-only from a data dir; `serve` from its own db and alert table):
 *  - node activity: the step series gpuwatch_node_activity{node} the
 *    detector engine writes every bucket (detect.h, gw_det_activity_drain):
 *    0 idle, 1 allocated but not computing (start-up, a wedged process),
 *    2 computing (training, checkpoint I/O);
 *  - the alert log (alert.h): every alert with its class, action, XID;
 *  - scheduler events (POST /api/v1/events, this header's second half);
 *  - checkpoint events of D7 (detect.h), for the report only.
 *
 * gw_led_build() turns them into sessions, failures (incidents), retry
 * chains, per-node ledger entries, exclusions and fleet statistics
 * (docs/ledger.md has every rule and threshold). It is a pure function of
 * its inputs: the same inputs give the same result whatever their order.
 * Layer: L4 features (src/ledger/); includes only its layer and below
 * (docs/architecture.md). */
#ifndef GW_LEDGER_H
#define GW_LEDGER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "gpuwatch/alert.h"
#include "gpuwatch/buf.h"
#include "gpuwatch/detect.h"
#include "gpuwatch/err.h"

#define GW_LED_NAME 128          /* node names */
#define GW_LED_ID 128            /* scheduler session ids */
#define GW_LED_TEXT 256          /* reasons */
#define GW_LED_NO_TIME INT64_MIN

/* ------------------------------------------------------------ scheduler events */

enum gw_led_ev_type {
    GW_LEV_SESSION_START = 1,    /* "session_start": session, nodes[, chain, attempt, retry_of] */
    GW_LEV_SESSION_END,          /* "session_end": session[, outcome "completed"|"cancelled"] */
    GW_LEV_SESSION_FAIL,         /* "session_fail": session[, reason, node] */
    GW_LEV_SESSION_RETRY,        /* "session_retry": session (the new one), retry_of[, nodes] */
    GW_LEV_NODE_EXCLUDED,        /* "node_excluded": node[, reason] */
    GW_LEV_NODE_RETURNED,        /* "node_returned": node[, reason] */
    GW_LEV_COUNT_
};
const char *gw_led_ev_name(enum gw_led_ev_type t);   /* "session_start", ...; "?" */

/* One scheduler event. Strings are NUL-terminated ("" when absent). */
struct gw_led_event {
    uint64_t seq;                /* storage order (assigned by gw_led_events_append) */
    int64_t t;                   /* event time (Unix ms) */
    enum gw_led_ev_type type;
    char session[GW_LED_ID];
    char retry_of[GW_LED_ID];
    char chain[GW_LED_ID];
    int32_t attempt;             /* -1 absent */
    char outcome[16];            /* session_end: "completed", "cancelled"; "" absent */
    char node[GW_LED_NAME];      /* node_* and session_fail: the node */
    char reason[GW_LED_TEXT];
    char **nodes;                /* session_start / session_retry: members (owned: the array and each
                                    string, malloc'd; gw_led_events_free frees them) */
    uint32_t n_nodes;
};

/* Parses a request body of JSON lines (one object per line, blank lines
 * skipped; at most max_events, 0 = no limit) into *out (owned: free with
 * gw_led_events_free). Times are "time" (required): RFC 3339 or Unix
 * seconds (a number, fractions allowed). Unknown fields, a missing
 * required field, a wrong type, an unknown "type", a node name that is
 * not a host name (letters, digits, '-', '.', '_'; lower-cased), a
 * duplicate node: GW_EINVAL with the message naming the line
 * ("line 3: session_start needs \"nodes\""), and nothing in *out;
 * GW_ELIMIT past max_events. "seq" is accepted (GET's answers can be
 * posted again) and replaced when stored. Rules: src/ledger/events.c. */
int gw_led_events_parse(const char *body, size_t len, size_t max_events, struct gw_led_event **out,
                        size_t *n, struct gw_error *err);
void gw_led_events_free(struct gw_led_event *ev, size_t n);   /* NULL ok */
/* One event as a JSON object (the same fields, "time" in RFC 3339). */
int gw_led_event_json(struct gw_buf *b, const struct gw_led_event *e);

/* The event store: DIR/events/ (kv.h), key = time (biased) then seq;
 * layout and worked example atop src/ledger/events.c. One handle may be
 * used by many threads. Errors as kv.h. */
struct gw_led_events;
int gw_led_events_open(struct gw_led_events **out, const char *data_dir, struct gw_error *err);
void gw_led_events_close(struct gw_led_events *s);   /* NULL ok */
/* Stores all n events in one transaction (all or nothing), setting their
 * seq (1, 2, ... continuing across restarts) only on success; an event
 * the parser would refuse is GW_EINVAL and nothing is stored. */
int gw_led_events_append(struct gw_led_events *s, struct gw_led_event *ev, size_t n, struct gw_error *err);
/* Events with mint <= t <= maxt in time order, then seq (at most limit,
 * 0 = all) into *out (owned: gw_led_events_free). */
int gw_led_events_load(struct gw_led_events *s, int64_t mint, int64_t maxt, size_t limit,
                       struct gw_led_event **out, size_t *n, struct gw_error *err);

/* ------------------------------------------------------------------- inputs */

enum gw_led_level { GW_LED_IDLE = 0, GW_LED_ALLOC = 1, GW_LED_TRAIN = 2 };

/* One activity sample: node (index into gw_led_input.nodes) at time t. */
struct gw_led_act {
    int64_t t;
    uint32_t node;
    uint8_t level;               /* enum gw_led_level */
};

struct gw_led_input {
    char **nodes;                /* node names (borrowed); activity and results index them */
    uint32_t n_nodes;
    struct gw_led_act *act;      /* any order (sorted inside) */
    size_t n_act;
    int64_t interval_ms;         /* activity spacing; 0 = learn from act */
    const struct gw_alert *alerts;   /* the alert log over the range (any order) */
    size_t n_alerts;
    const struct gw_led_event *events;   /* scheduler events (any order) */
    size_t n_events;
    const struct gw_det_ckpt *ckpts;     /* D7's checkpoint saves (optional: work lost since the last save) */
    size_t n_ckpts;
    uint32_t gpus_per_node;      /* for GPU-hours (0 = 8) */
    int64_t from, to;            /* the range analysed (Unix ms) */
    int64_t now;                 /* "now" for exclusions and decay (normally to) */
};

struct gw_led_config {
    int64_t gap_ms;              /* activity gaps up to this are bridged (3 intervals, >= 90 s) */
    int64_t start_tol_ms;        /* nodes starting within this are one session (5 min) */
    uint32_t min_nodes;          /* sessions have at least this many nodes (2) */
    int64_t fail_window_ms;      /* a hardware alert on a member within this before the end fails it (30 min) */
    int64_t retry_window_ms;     /* a start within this after a failed end is an automatic retry (30 min) */
    int64_t merge_ms;            /* alerts on one node within this are one failure (30 min) */
    int64_t half_life_ms;        /* decay of the ledger score (14 d) */
    int64_t repeat_window_ms;    /* the same XID / GPU again within this escalates (30 d) */
    int64_t probation_ms;        /* a failed node stays excluded this long without a healthy run (24 h) */
    double lemon_score;          /* decayed score at or above which a node is a lemon (2.0) */
    uint32_t top_k;              /* the lemon ranking's top-k share (3) */
};
void gw_led_config_default(struct gw_led_config *c);

/* ------------------------------------------------------------------ results */

enum gw_led_outcome {
    GW_LED_COMPLETED,            /* ended without a failure on a member */
    GW_LED_FAILED,               /* ended by a failure after reaching steady training */
    GW_LED_STARTUP_FAILED,       /* ended before steady training */
    GW_LED_RUNNING               /* still running at the end of the range */
};
const char *gw_led_outcome_name(enum gw_led_outcome o);   /* "completed", "failed", "startup_failed", "running" */

struct gw_led_session {
    uint32_t id;                 /* index in result.sessions */
    char ext_id[GW_LED_ID];      /* the scheduler's id when it reported it, else "" */
    int from_events;             /* 1: bounds from scheduler events, 0: inferred from activity */
    int64_t t_start, t_steady, t_end;   /* t_steady GW_LED_NO_TIME when never reached */
    enum gw_led_outcome outcome;
    int32_t failure;             /* index in result.failures that ended it, -1 */
    int32_t chain;               /* index in result.chains it is part of (as failed or retry), -1 */
    uint32_t attempt;            /* 0 a fresh start, 1.. an automatic retry */
    uint32_t *nodes;             /* member node indices, ascending */
    uint32_t n_nodes;
    int32_t excluded[4];         /* nodes of the previous session left out of this one (-1 padding) */
};

/* One failure: the hardware-class alerts of one node within merge_ms. */
struct gw_led_failure {
    uint32_t id;
    uint32_t node;
    int gpu;                     /* -1 node-level or several GPUs */
    uint32_t xid;                /* the XID when one was seen, else 0 */
    char cls[32];                /* class of the defining alert ("nvlink", "memory", ...) */
    char alertname[GW_ALERT_NAME_MAX];   /* the defining alert (XID first, else the first critical) */
    char detector[8];
    char action[32];             /* recommended action after escalation */
    char escalation[GW_LED_TEXT];   /* why the action was escalated, "" none */
    uint32_t repeat;             /* 1 first of its kind on this node/GPU within repeat_window, 2 second, ... */
    int64_t t_first;             /* first alert (warning or critical) of the failure */
    int64_t t_detect;            /* first critical alert fired */
    int64_t t_xid;               /* first XID alert's activeAt, GW_LED_NO_TIME none */
    int64_t t_session_end;       /* end of the session it ended, GW_LED_NO_TIME none */
    int64_t t_next_steady;       /* next session reaching steady training after it, GW_LED_NO_TIME none */
    int32_t session;             /* session it ended, -1 */
    double lost_gpu_hours;       /* GPU-hours lost: from the last save (or start) to the next steady training */
    uint64_t alert_ids[8];       /* evidence: alert log ids */
    uint32_t n_alert_ids;
    char evidence[GW_ALERT_TEXT_MAX];   /* the defining alert's evidence */
};

/* An automatic retry chain: a failed session and its automatic retries. */
struct gw_led_chain {
    uint32_t id;
    int32_t failed_session;      /* the session whose failure started it */
    int32_t failure;             /* its failure, -1 unknown */
    uint32_t attempts;           /* retries submitted */
    int success;                 /* an attempt reached steady training */
    int automatic;               /* 1 retries within retry_window, 0 manual recovery */
    int64_t t_fail, t_recovered; /* failed end; steady training of the successful attempt (or NO_TIME) */
    int64_t median_interval_ms;  /* between a failed end and the next attempt's start */
    int64_t intervals[16];       /* first 16 intervals */
    uint32_t n_intervals;
};

struct gw_led_node {
    uint32_t node;               /* index into input.nodes */
    double score;                /* decayed failure score at input.now */
    uint32_t failures;           /* hardware failures in the range */
    uint32_t exclusions;         /* sessions it was left out of after a failure, plus scheduler exclusions */
    uint32_t repeats;            /* failures that repeated an earlier one */
    double hours_observed;       /* hours with activity data */
    double mtbf_h;               /* hours_observed / failures, INFINITY none */
    uint32_t rank;               /* 1 = worst */
    int lemon;                   /* score >= lemon_score */
    int excluded;                /* in the exclusion list now */
};

enum gw_led_excl_source { GW_LEX_FAILURE, GW_LEX_REPEAT, GW_LEX_LEMON, GW_LEX_SCHEDULER };
const char *gw_led_excl_source_name(enum gw_led_excl_source s);   /* "failure", "repeat", "lemon", "scheduler" */

struct gw_led_exclusion {
    uint32_t node;
    enum gw_led_excl_source source;
    int64_t since;
    int64_t until;               /* GW_LED_NO_TIME: until returned by hand */
    char action[32];             /* what to do with it */
    char reason[GW_LED_TEXT];
    int32_t failure;             /* evidence: the failure behind it, -1 */
    uint64_t alert_ids[8];
    uint32_t n_alert_ids;
};

struct gw_led_cause {            /* goodput lost per failure class */
    char cls[32];
    uint32_t failures;
    double lost_gpu_hours;
};

struct gw_led_stats {
    uint32_t sessions, completed, failed, startup_failed, running;
    uint32_t chains_auto, chains_auto_ok, chains_manual, chains_manual_ok;
    double chain_success_auto, chain_success_manual;   /* 0..1, NAN when none */
    double retry_interval_med_min, retry_interval_p25_min, retry_interval_p75_min;   /* NAN none */
    uint32_t attempts_auto;
    uint32_t failures, hw_nodes;
    double fleet_mtbf_h;         /* node-hours observed / hardware failures */
    double top_k_share;          /* share of exclusions on the top_k nodes (0..1, NAN none) */
    double gini;                 /* of exclusions over nodes */
    double gpu_hours_total, gpu_hours_train, gpu_hours_lost;
    double goodput;              /* train / (train + lost), NAN unknown */
    struct gw_led_cause causes[16];
    uint32_t n_causes;
};

struct gw_led_result {
    struct gw_led_config cfg;
    int64_t from, to, now;
    char **nodes;                /* copies of the input names */
    uint32_t n_nodes;
    struct gw_led_session *sessions;   /* by t_start */
    size_t n_sessions;
    struct gw_led_failure *failures;   /* by t_first */
    size_t n_failures;
    struct gw_led_chain *chains;       /* by t_fail */
    size_t n_chains;
    struct gw_led_node *ledger;        /* by rank */
    size_t n_ledger;
    struct gw_led_exclusion *exclusions;   /* by node name */
    size_t n_exclusions;
    struct gw_led_stats stats;
};

int gw_led_build(const struct gw_led_input *in, const struct gw_led_config *c, struct gw_led_result **out,
                 struct gw_error *err);
void gw_led_result_free(struct gw_led_result *r);   /* NULL ok */

/* JSON bodies of the API (the "data" member of a Prometheus-style answer). */
int gw_led_sessions_json(struct gw_buf *b, const struct gw_led_result *r);
int gw_led_exclusions_json(struct gw_buf *b, const struct gw_led_result *r);
int gw_led_ledger_json(struct gw_buf *b, const struct gw_led_result *r);
/* The excluded hosts, one per line ("hosts") or comma-separated ("slurm"). */
int gw_led_exclusions_hosts(struct gw_buf *b, const struct gw_led_result *r, int comma);

/* --------------------------------------------------------------- loading */

/* Everything gw_led_build and the report read, loaded read-only from a
 * data dir (a running serve may be writing it): activity from the series
 * store, the alert log, scheduler events and D7's checkpoint events. */
struct gw_led_data {
    struct gw_led_input in;
    struct gw_alert *alerts;     /* owned copies behind in.alerts */
    struct gw_led_event *events; /* owned */
    struct gw_det_ckpt *ckpts;   /* D7's checkpoint events in the range, by t_start */
    size_t n_ckpts;
    void *priv;
};
int gw_led_load(const char *data_dir, int64_t from, int64_t to, struct gw_led_data *d, struct gw_error *err);
/* The same from serve's open handles: activity from db, the alert log
 * through alerts (gw_alerts_log_foreach), events from ev (NULL: none),
 * checkpoints not loaded. */
struct gw_db;
int gw_led_load_live(struct gw_db *db, struct gw_alerts *alerts, struct gw_led_events *ev, int64_t from,
                     int64_t to, struct gw_led_data *d, struct gw_error *err);
void gw_led_data_free(struct gw_led_data *d);   /* frees what a load filled; d itself is the caller's */
/* The newest time in d's inputs (activity samples, alert times, scheduler
 * events) not after d->in.to, or d->in.to when there is none: the "now"
 * of `gpuwatch exclusions` and /api/v1/exclusions (src/ledger/newest.c). */
int64_t gw_led_data_newest(const struct gw_led_data *d);

/* ---------------------------------------------------------------- report */

enum gw_led_format { GW_LED_MD, GW_LED_HTML };
struct gw_led_report_in {
    const struct gw_led_result *r;
    const struct gw_det_ckpt *ckpts;   /* D7 events in the range, by t_start */
    size_t n_ckpts;
    const struct gw_alert *alerts;     /* the alert log (for per-detector counts) */
    size_t n_alerts;
    const char *title;                 /* NULL: "gpuwatch report" */
    int64_t generated_at;              /* wall clock (ms) */
};
/* The report as Markdown or as one self-contained HTML file with inline
 * SVG charts (no external assets, no script needed to read it). */
int gw_led_report(FILE *f, const struct gw_led_report_in *in, enum gw_led_format fmt, struct gw_error *err);

#endif /* GW_LEDGER_H */
