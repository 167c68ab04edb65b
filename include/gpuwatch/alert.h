/* gpuwatch/alert.h - alerts raised by the detectors: Prometheus' alert
 * lifecycle (pending, firing, resolved) on data time, the rule registry
 * behind /api/v1/rules, the ALERTS series, the alert log in LMDB, and
 * delivery to Alertmanager (v2 API).
 *
 * Lifecycle. A detector calls gw_alerts_raise() whenever its condition
 * holds (once for an event, on every evaluation for a state). An alert is
 * identified by its identity labels: alertname, hostname, gpu (when the
 * alert is GPU-level), and any extra identity label the spec gives.
 *  - the first raise makes it pending at t (activeAt = t);
 *  - it fires once data time reaches activeAt + for_ms (for_ms 0: at once;
 *    firedAt = that data time);
 *  - it stays active while raised again; it resolves when data time passes
 *    last raise + hold_ms (resolvedAt = that data time); a pending alert
 *    that is not raised again within hold_ms is dropped without firing;
 *  - raising a resolved alert again starts a new alert (new activeAt).
 * Annotations, score, severity and the non-identity labels of an active
 * alert follow the newest raise. Data time only moves forward through
 * gw_alerts_advance() (the detectors call it as their clock moves).
 *
 * Outputs, all fed from the same transitions:
 *  - gw_alerts_foreach(): active alerts and those resolved within the last
 *    15 min of wall-clock time, for /api/v1/alerts and the notifier;
 *  - ALERTS samples: while an alert is active, one sample of value 1 per
 *    `samples_interval_ms` of data time (the first at activeAt) on
 *    ALERTS{alertname, alertstate="pending"|"firing", <labels>}, and a
 *    stale marker when the state ends, drained by gw_alerts_drain_samples();
 *  - the alert log: every alert (labels, annotations, activeAt, firedAt,
 *    resolvedAt) kept in an LMDB environment DIR/alerts/ when log_dir is
 *    set; active alerts are reloaded from it at open, so a restart neither
 *    loses an alert nor fires it again (a raise after the restart continues
 *    the reloaded alert);
 *  - the notifier (gw_alerts_notifier_start): a thread that POSTs
 *    /api/v2/alerts to every Alertmanager URL: every firing alert each
 *    resend interval (default 1 min) with endsAt = now + 4 x resend
 *    interval, each transition at once, and resolved alerts (endsAt =
 *    resolution time) for 15 min after they resolved. startsAt = firedAt.
 *    Failures are logged and retried at the next round.
 *
 * Thread-safety: every function may be called from any thread (one mutex).
 * Raise/advance are O(1) amortised (hash table of alerts) and do no I/O:
 * log writes happen in gw_alerts_sync() (and gw_alerts_close()),
 * notifications on the notifier thread.
 * Layer: L4 features (src/alert/); includes only its layer and below (docs/architecture.md). */
#ifndef GW_ALERT_H
#define GW_ALERT_H

#include <stddef.h>
#include <stdint.h>
#include "gpuwatch/buf.h"
#include "gpuwatch/err.h"
#include "gpuwatch/httpc.h"

enum gw_severity { GW_SEV_INFO = 0, GW_SEV_WARNING = 1, GW_SEV_CRITICAL = 2 };
const char *gw_severity_name(enum gw_severity s);      /* "info", "warning", "critical" */

enum gw_alert_state { GW_ALERT_PENDING = 1, GW_ALERT_FIRING = 2, GW_ALERT_RESOLVED = 3 };
const char *gw_alert_state_name(enum gw_alert_state s); /* "pending", "firing", "resolved" */

#define GW_ALERT_NAME_MAX 64
#define GW_ALERT_HOST_MAX 128
#define GW_ALERT_TEXT_MAX 512
#define GW_NOTIFY_MAX_URLS 8       /* Alertmanager URLs per notifier */

/* What a detector raises. Strings are copied. */
struct gw_alert_spec {
    const char *alertname;     /* e.g. "GpuXidError"; required */
    enum gw_severity severity;
    const char *hostname;      /* the node; NULL/"" for cluster- or job-level alerts */
    int gpu;                   /* GPU index, -1 when node- or job-level */
    const char *detector;      /* "D1" .. "D6" */
    const char *cls;           /* label "class": "nvlink", "memory", "gpu_lost", "app", ... */
    const char *action;        /* "restart_app", "reset_gpu", "reboot_node", "drain_node", "none" */
    const char *extra_name;    /* optional extra identity label (e.g. "xid"), NULL when none */
    const char *extra_value;
    const char *summary;       /* annotation "summary" */
    const char *evidence;      /* annotation "evidence": which signals moved, by how much, since when */
    double score;              /* 0..1 confidence, annotation "score" */
    int64_t for_ms;            /* pending duration before firing */
    int64_t hold_ms;           /* stays active this long after the last raise */
};

/* An alert as stored and reported. */
struct gw_alert {
    uint64_t id;               /* unique, increasing; stable across restarts */
    char alertname[GW_ALERT_NAME_MAX];
    enum gw_severity severity;
    char hostname[GW_ALERT_HOST_MAX];
    int gpu;
    char detector[8];
    char cls[32];
    char action[32];
    char extra_name[32], extra_value[64];
    char summary[GW_ALERT_TEXT_MAX];
    char evidence[GW_ALERT_TEXT_MAX];
    double score;
    enum gw_alert_state state;
    int64_t active_at;         /* data time of the first raise */
    int64_t fired_at;          /* data time it fired; INT64_MIN while pending */
    int64_t last_raised;       /* data time of the newest raise */
    int64_t resolved_at;       /* data time it resolved; INT64_MIN while active */
    int64_t for_ms, hold_ms;
};

/* A rule: one alertname a detector can raise, for /api/v1/rules. */
struct gw_alert_rule {
    const char *alertname;
    const char *detector;      /* rule group = "gpuwatch-<detector>" */
    const char *expr;          /* human-readable condition, shown as "query" */
    enum gw_severity severity;
    int64_t for_ms;
    int64_t hold_ms;           /* shown as keepFiringFor */
};

struct gw_alerts_opts {
    const char *log_dir;            /* data dir: the log lives in log_dir/alerts/; NULL = no log */
    int64_t samples_interval_ms;    /* ALERTS sample spacing in data time; default 30 s */
    int64_t resolved_keep_ms;       /* resolved alerts kept for the API/notifier (wall clock); default 15 min */
    size_t max_active;              /* cap on active alerts (oldest info alerts dropped first); default 10000 */
    /* ALERTS samples waiting for gw_alerts_drain_samples(); past this cap new
     * samples are dropped and counted (default 1 << 20). A negative
     * samples_interval_ms turns the ALERTS samples off. */
    size_t max_buffered_samples;
};
void gw_alerts_opts_default(struct gw_alerts_opts *o);

struct gw_alerts;
int gw_alerts_open(struct gw_alerts **out, const struct gw_alerts_opts *o, struct gw_error *err);
/* Stops the notifier (sending what is due once more), syncs the log, frees. NULL ok. */
void gw_alerts_close(struct gw_alerts *a);

/* Registers a rule (copied). Rules with the same alertname replace. */
int gw_alerts_add_rule(struct gw_alerts *a, const struct gw_alert_rule *r);

/* Raises at data time t (see the lifecycle above). Never fails: on ENOMEM
 * the raise is counted in gw_alerts_dropped() and ignored. */
void gw_alerts_raise(struct gw_alerts *a, const struct gw_alert_spec *s, int64_t t);
/* Moves data time to t (never backwards): fires due pending alerts,
 * resolves expired ones, emits ALERTS samples up to t. */
void gw_alerts_advance(struct gw_alerts *a, int64_t t);
uint64_t gw_alerts_dropped(const struct gw_alerts *a);

/* Transition callback, called under the lock for every state change
 * (pending, firing, resolved; and when a pending alert is dropped, with
 * state RESOLVED and fired_at INT64_MIN). Must not call back into a. */
typedef void (*gw_alerts_change_cb)(void *ud, const struct gw_alert *al);
void gw_alerts_on_change(struct gw_alerts *a, gw_alerts_change_cb cb, void *ud);

/* Calls cb for every active alert and every alert resolved within
 * resolved_keep_ms (wall clock), oldest activeAt first. Return nonzero to stop. */
typedef int (*gw_alerts_cb)(void *ud, const struct gw_alert *al);
int gw_alerts_foreach(struct gw_alerts *a, gw_alerts_cb cb, void *ud);
/* Every alert of the log with activeAt in [mint, maxt] (resolved ones
 * included), in activeAt order; needs log_dir. */
int gw_alerts_log_foreach(struct gw_alerts *a, int64_t mint, int64_t maxt, gw_alerts_cb cb, void *ud,
                          struct gw_error *err);
/* The same read from the log of a data dir (DIR/alerts/) without an alert
 * table: for readers next to a running serve (what serve has not synced
 * yet - at most 10 s - is missing). No log: GW_OK, no calls. */
int gw_alerts_log_read(const char *data_dir, int64_t mint, int64_t maxt, gw_alerts_cb cb, void *ud,
                       struct gw_error *err);
/* Writes pending log changes to LMDB now; nothing else writes them except
 * gw_alerts_close() and gw_alerts_log_foreach() (`gpuwatch serve` calls it
 * every 10 s). */
int gw_alerts_sync(struct gw_alerts *a, struct gw_error *err);

/* ALERTS samples produced since the last drain: cb gets canonical label
 * bytes (labels.h) of one series and its samples in time order. */
typedef int (*gw_alerts_samples_cb)(void *ud, const uint8_t *labels, size_t len, const int64_t *t,
                                    const double *v, size_t n);
int gw_alerts_drain_samples(struct gw_alerts *a, gw_alerts_samples_cb cb, void *ud);

/* JSON bodies exactly as Prometheus' /api/v1/alerts and /api/v1/rules
 * (data part of the success envelope included: {"status":"success","data":...}). */
int gw_alerts_api_alerts(struct gw_alerts *a, struct gw_buf *out);
/* type: NULL/"" all, "alert", "record" (record gives no groups);
 * rule_names / group_names filters as Prometheus' rule_name[] / rule_group[] (NULL = all). */
int gw_alerts_api_rules(struct gw_alerts *a, const char *type, const char *const *rule_names, size_t n_rule_names,
                        const char *const *group_names, size_t n_group_names, struct gw_buf *out);

/* Alertmanager delivery. urls: base URLs ("http://127.0.0.1:9093"); the
 * path /api/v2/alerts is appended. external_url is sent as generatorURL's
 * base. resend_ms default 60 s. */
struct gw_notifier_opts {
    const char *const *urls;
    size_t n_urls;
    const char *external_url;
    int64_t resend_ms;
    int timeout_ms;                 /* per POST, default 10 s */
    struct gw_httpc_tls tls;        /* https options for every URL (httpc.h) */
    struct gw_httpc_auth auth;      /* credentials sent to every URL (httpc.h) */
};
int gw_alerts_notifier_start(struct gw_alerts *a, const struct gw_notifier_opts *o, struct gw_error *err);
/* Counters for /metrics. */
struct gw_notifier_stats {
    uint64_t sent, errors, dropped;
    uint64_t queued;                /* alerts due for sending now (the notifier's queue) */
};
void gw_alerts_notifier_stats(struct gw_alerts *a, struct gw_notifier_stats *st);

/* Table counters for /metrics. */
struct gw_alerts_stats {
    uint64_t pending, firing;       /* active now */
    uint64_t resolved_kept;         /* resolved, still reported */
    uint64_t raises, dropped;       /* raises seen; raises ignored (memory, cap) */
    uint64_t samples_dropped;       /* ALERTS samples over max_buffered_samples */
    int64_t data_time;              /* INT64_MIN before the first advance */
};
void gw_alerts_stats(struct gw_alerts *a, struct gw_alerts_stats *st);

#endif /* GW_ALERT_H */
