/* src/alert/alert_int.h - internals shared by the files of the alert
 * module: the alert table (alerts.c), the LMDB alert log (alert_log.c), the
 * Alertmanager notifier (notify.c) and the JSON bodies (alert_json.c).
 * Nothing outside src/alert/ includes this file.
 *
 * Locking: a->mu guards everything in struct gw_alerts except the log
 * handle (a->log_mu, taken without a->mu held, so log I/O never blocks a
 * raise) and the notifier's own fields (owned by its thread). */
#ifndef GW_ALERT_INT_H
#define GW_ALERT_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include "gpuwatch/alert.h"
#include "gpuwatch/buf.h"

/* Prometheus' stale marker: a NaN with this bit pattern ends a series. */
#define GW_STALE_NAN_BITS 0x7ff0000000000002ULL

/* One ALERTS series of an alert (index 0: alertstate="pending", 1: "firing").
 * Samples go to the front arrays; a drain swaps front and back and hands the
 * back arrays out without the lock, so steady state allocates nothing. */
struct al_series {
    uint8_t *labels;          /* canonical bytes, fixed when the state begins */
    size_t len, labels_cap;
    int64_t *t;               /* front */
    double *v;
    size_t n, cap;
    int64_t *bt;              /* back (being drained) */
    double *bv;
    size_t bn, bcap;
    int64_t next;             /* data time of the next sample due; INT64_MAX when none */
    int64_t last_t;           /* data time of the newest sample produced */
    int64_t floor_t;          /* samples start after this (a resolved alert's series with the same labels) */
    int started;              /* a sample was produced */
    int ended;                /* the stale marker was produced */
};

struct al_entry {
    struct gw_alert al;
    uint64_t hash;                   /* identity hash */
    struct al_entry *hnext;          /* hash chain (active alerts only) */
    struct al_entry *prev, *next;    /* active list or resolved list */
    struct al_series ser[2];
    int64_t resolved_wall;           /* wall clock at resolution */
    int dirty;                       /* the log has not seen the newest change */
    int logged_active;               /* the log lists it among active alerts */
    int draining;                    /* back arrays are out with a drain */
    int notifying;                   /* in a batch the notifier is sending */
    int64_t last_sent[GW_NOTIFY_MAX_URLS];   /* wall clock of the last delivery, per URL */
    uint8_t sent_state[GW_NOTIFY_MAX_URLS];  /* state delivered last, per URL (0 none) */
};

struct al_rule {
    char *alertname, *detector, *expr;
    enum gw_severity severity;
    int64_t for_ms, hold_ms;
};

struct al_list {
    struct al_entry *head, *tail;
    size_t n;
};

struct gw_alert_log;       /* alert_log.c */
struct gw_notifier;        /* notify.c */

struct gw_alerts {
    pthread_mutex_t mu;
    struct gw_alerts_opts opts;
    char *log_dir;

    struct al_entry **buckets;       /* identity hash -> active alert */
    size_t n_buckets;
    struct al_list active;           /* pending and firing, oldest first */
    struct al_list resolved;         /* resolved, kept resolved_keep_ms of wall clock */

    int64_t now;                     /* data time; INT64_MIN before the first advance */
    int64_t next_due;                /* no active alert has an event before this data time */
    uint64_t next_id;
    uint64_t dropped;                /* raises ignored (memory, cap) */
    uint64_t evicted;                /* info alerts resolved early for the cap */
    uint64_t raises;
    uint64_t samples_buffered;       /* front samples waiting for a drain */
    uint64_t samples_dropped;        /* over max_buffered_samples */
    int64_t synced_now;              /* data time written to the log by the last sync */

    struct al_rule *rules;
    size_t n_rules, cap_rules;

    gw_alerts_change_cb change_cb;
    void *change_ud;

    pthread_mutex_t drain_mu;        /* one drain at a time */

    pthread_mutex_t log_mu;          /* the log handle; never taken with mu held */
    struct gw_alert_log *log;

    struct gw_notifier *notifier;
    pthread_cond_t notify_cv;        /* signalled (with mu) on firing/resolved transitions */
    int notify_kick;
};

/* ---- alerts.c ---- */
/* Entry for a reloaded active alert (log open): inserted as active, its
 * ALERTS samples continuing after last_raised. Called with mu held. */
int gw_alerts_restore_locked(struct gw_alerts *a, const struct gw_alert *al);
/* Frees resolved entries past resolved_keep_ms that nothing still needs. mu held. */
void gw_alerts_gc_locked(struct gw_alerts *a, int64_t now_wall);
/* Copies of the active alerts (and, with include_resolved, those resolved
 * within resolved_keep_ms), oldest activeAt first. Caller frees *out. */
int gw_alerts_snapshot(struct gw_alerts *a, int include_resolved, struct gw_alert **out, size_t *n);
/* Copies of the rules (strings owned by the copy, free with gw_alerts_rules_free). */
int gw_alerts_rules_copy(struct gw_alerts *a, struct al_rule **out, size_t *n);
void gw_alerts_rules_free(struct al_rule *r, size_t n);
/* Label value of the gpu as decimal into buf (cap >= 12); "" when gpu < 0. */
const char *gw_alert_gpu_str(const struct gw_alert *al, char *buf, size_t cap);

/* ---- alert_log.c ---- */
/* Opens (creating) DIR/alerts/ and calls gw_alerts_restore_locked() for each
 * active alert (mu held by the caller), sets *next_id and *now. */
int gw_alert_log_open(struct gw_alerts *a, const char *dir, struct gw_alert_log **out, uint64_t *next_id,
                      int64_t *now, struct gw_error *err);
void gw_alert_log_close(struct gw_alert_log *l);
/* Writes the alerts (new versions of records), the active set and the meta
 * (next id, data time) in one transaction. */
int gw_alert_log_write(struct gw_alert_log *l, const struct gw_alert *als, size_t n, uint64_t next_id,
                       int64_t now, struct gw_error *err);
int gw_alert_log_foreach(struct gw_alert_log *l, int64_t mint, int64_t maxt, gw_alerts_cb cb, void *ud,
                         struct gw_error *err);

/* ---- notify.c ---- */
void gw_notifier_stop(struct gw_alerts *a);   /* sends what is due once more, joins, frees */

/* ---- alert_json.c ---- */
/* (strings, numbers and RFC 3339 times: gpuwatch/json.h) */
/* The labels object of an alert: {"action":..,"alertname":..,...} sorted by name. */
int gw_alert_json_labels(struct gw_buf *b, const struct gw_alert *al);
/* {"evidence":..,"score":..,"summary":..}. */
int gw_alert_json_annotations(struct gw_buf *b, const struct gw_alert *al);
/* Go strconv.FormatFloat(v, 'e', -1, 64): "1e+00", "8.5e-01". */
size_t gw_alert_format_float_e(double v, char *out, size_t cap);

#endif /* GW_ALERT_INT_H */
