/* gpuwatch/exemplars.h - the in-memory exemplar store: exemplars that
 * arrive with remote write (1.0 Exemplar in TimeSeries, 2.0 exemplars with
 * label refs), served by /api/v1/query_exemplars.
 *
 * Modelled on Prometheus' CircularExemplarStorage (tsdb/exemplar.go):
 *  - one circular buffer of `cap` exemplars shared by every series; when it
 *    is full the oldest exemplar (of whichever series) is overwritten;
 *  - per series the exemplars form a list oldest -> newest; a new exemplar
 *    is checked against its series' newest one only: equal labels,
 *    timestamp and value bits -> a duplicate, silently kept as it is (a
 *    retried batch); a timestamp not newer -> out of order, dropped;
 *  - an exemplar whose label names and values hold more than
 *    GW_EXEMPLAR_MAX_LABEL_RUNES UTF-8 runes in total is refused (Prometheus'
 *    exemplar.ExemplarMaxLabelSetLength); labels with an empty value are
 *    dropped first (Prometheus' Labels.WithoutEmpty);
 *  - cap 0 keeps nothing (every exemplar is GW_EXEMPLAR_DISABLED).
 * Nothing is written to disk: exemplars do not survive a restart (neither
 * do Prometheus'). Differences from Prometheus: an exemplar is kept for a
 * series with valid labels whether or not that series has samples (Prometheus
 * drops exemplars of series its head does not know), and a duplicate compares
 * value bits (so a resent NaN exemplar is a duplicate, not out of order).
 *
 * Thread-safety: every function may be called from any thread (one
 * read-write lock; adds take it exclusive, selects shared). The lock is
 * taken alone, never nested in or around another (docs/architecture.md).
 * Layer: L3 database (src/db/); includes only its layer and below (docs/architecture.md). */
#ifndef GW_EXEMPLARS_H
#define GW_EXEMPLARS_H

#include <stddef.h>
#include <stdint.h>
#include "gpuwatch/labels.h"
#include "gpuwatch/matcher.h"
#include "gpuwatch/rw.h"

#define GW_EXEMPLAR_MAX_LABEL_RUNES 128
#define GW_EXEMPLARS_DEFAULT_CAP 100000
#define GW_EXEMPLARS_MAX_CAP 100000000u   /* --storage.exemplars.max-exemplars upper bound */

struct gw_exemplars;

/* A store of at most cap exemplars (0: keeps none; at most
 * GW_EXEMPLARS_MAX_CAP). Memory grows with what is stored. NULL on ENOMEM
 * or a cap over the limit. */
struct gw_exemplars *gw_exemplars_new(uint64_t cap);
void gw_exemplars_free(struct gw_exemplars *ex);   /* NULL ok */

enum gw_exemplar_outcome {
    GW_EXEMPLAR_STORED = 0,
    GW_EXEMPLAR_DUPLICATE,      /* equal to its series' newest: nothing changes */
    GW_EXEMPLAR_OUT_OF_ORDER,   /* timestamp not after its series' newest: dropped */
    GW_EXEMPLAR_TOO_LONG,       /* labels over GW_EXEMPLAR_MAX_LABEL_RUNES: refused */
    GW_EXEMPLAR_DISABLED        /* cap 0: not kept */
};

/* Adds one exemplar (t ms, v) with labels ls[0..n) (any order; sorted in
 * place) to the series whose canonical labels are series[0..len). GW_OK
 * with *out set, or GW_ENOMEM (nothing changed). */
int gw_exemplars_add(struct gw_exemplars *ex, const uint8_t *series, size_t len, struct gw_label *ls, size_t n,
                     int64_t t, double v, enum gw_exemplar_outcome *out);

/* What gw_exemplars_append did with a request's exemplars. */
struct gw_exemplars_result {
    uint64_t stored;            /* newly kept */
    uint64_t duplicate;         /* already kept (count as written) */
    uint64_t out_of_order;
    uint64_t too_long;
    uint64_t invalid_series;    /* exemplars of series with invalid labels */
    uint64_t disabled;          /* cap 0 */
    uint64_t skipped;           /* of series the caller refused (n_exemplars zeroed) */
    char first_problem[160];    /* the first refused exemplar, for the 400 message */
};

/* Adds the exemplars of every series of a decoded request: the series'
 * labels are normalized in place (gw_labels_normalize: sorted, validated;
 * a series that fails refuses its exemplars as invalid_series). GW_OK (look
 * at res) or GW_ENOMEM. ex NULL: every exemplar counts as disabled. */
int gw_exemplars_append(struct gw_exemplars *ex, struct gw_rw_request *req, struct gw_exemplars_result *res);

/* ---- reading ---- */
struct gw_exemplar {
    const uint8_t *labels;      /* canonical bytes (labels.h) */
    size_t labels_len;
    double v;
    int64_t t;                  /* ms */
};
/* Called once per series with its canonical labels and its exemplars in
 * [start, end], oldest first; everything borrowed for the call (made under
 * the store's read lock: no calls back into the store). Non-GW_OK stops. */
typedef int (*gw_exemplars_cb)(void *ud, const uint8_t *series, size_t len, const struct gw_exemplar *e, size_t n);

/* Series that satisfy every matcher of at least one of the n_sets sets
 * (set i: sets[i][0..lens[i])) and have exemplars in [start, end] ms, in
 * Prometheus label order (labels.Compare), like Prometheus'
 * CircularExemplarStorage.Select. GW_OK, GW_ENOMEM or cb's result. */
int gw_exemplars_select(struct gw_exemplars *ex, const struct gw_matcher *const *sets, const size_t *lens,
                        size_t n_sets, int64_t start, int64_t end, gw_exemplars_cb cb, void *ud);

/* For /metrics (Prometheus' prometheus_tsdb_exemplar_* family). */
struct gw_exemplars_stats {
    uint64_t cap;               /* max exemplars */
    uint64_t in_storage;        /* exemplars held */
    uint64_t series;            /* series with exemplars held */
    uint64_t appended;          /* stored since start */
    uint64_t out_of_order;      /* dropped as out of order since start */
    int64_t oldest_ms;          /* timestamp of the oldest held exemplar (0: none) */
};
void gw_exemplars_stats(struct gw_exemplars *ex, struct gw_exemplars_stats *out);

#endif /* GW_EXEMPLARS_H */
