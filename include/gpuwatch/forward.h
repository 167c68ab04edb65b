/* gpuwatch/forward.h - forwarding every accepted sample to remote-write
 * destinations (Mimir, Thanos Receive, VictoriaMetrics, Prometheus),
 * read back from gpuwatch's own WAL (docs/operations.md "Forwarding").
 *
 * One thread per destination reads the WAL segment files from disk (never
 * the ingest path's memory or locks), turns SAMPLES records into remote
 * write 1.0 requests of up to batch_samples samples, and sends them with
 * retries: 5xx, 429 (Retry-After honoured) and connection errors are
 * retried with exponential backoff; any other non-2xx answer drops the
 * batch (counted and logged, as Prometheus does). After each acknowledged
 * batch the destination's cursor (segment, offset, samples already sent
 * of that record) is written atomically to DIR/forward/<id>.cursor, so a
 * restart resumes where it stopped.
 *
 * Disk bound: gw_fwd_hold() is the WAL's hold (wal.h): segments a
 * destination has not sent are kept past the checkpoint that would delete
 * them, while that destination's pending bytes (WAL bytes from its cursor
 * to the end) are at most max_pending_bytes. Past the bound its oldest
 * segments are released: the cursor jumps to the next segment and the
 * samples skipped are counted as dropped (reason "max_pending").
 *
 * Internal series (ALERTS, gpuwatch_checkpoint_*, gpuwatch_node_activity,
 * written by serve itself through the same WAL) are left out unless
 * include_internal; they are recognised by metric name.
 * Layer: L4 features (src/forward/); includes only its layer and below (docs/architecture.md). */
#ifndef GW_FORWARD_H
#define GW_FORWARD_H

#include <stddef.h>
#include <stdint.h>
#include "gpuwatch/buf.h"
#include "gpuwatch/err.h"
#include "gpuwatch/httpc.h"

#define GW_FWD_MAX_DESTS 8
#define GW_FWD_MAX_HEADERS 16

struct gw_fwd_dest_opts {
    const char *url;                  /* http(s)://host:port/path of the remote-write endpoint */
    const char *headers[GW_FWD_MAX_HEADERS];   /* "Name: value", sent with every request */
    size_t n_headers;
    int protocol;                     /* remote write version: 1 (0 = 1) or 2 */
    uint32_t batch_samples;           /* samples per request; default 2000 */
    uint64_t max_pending_bytes;       /* WAL bytes kept for this destination; default 10 GiB */
    /* Connection settings handed to gw_httpc_open as they are: timeouts,
     * and the TLS (and later authentication) settings of httpc.h. */
    struct gw_httpc_opts http;
};
/* Defaults into d (url and headers NULL). */
void gw_fwd_dest_opts_default(struct gw_fwd_dest_opts *d);

/* The labels of a series whose SERIES record the reader did not see (an
 * older, deleted segment): canonical bytes appended to out. GW_OK,
 * GW_ENOTFOUND, or an error. */
typedef int (*gw_fwd_labels_fn)(void *ud, uint64_t sid, struct gw_buf *out, struct gw_error *err);

struct gw_fwd_opts {
    const char *wal_dir;              /* DIR/wal */
    const char *state_dir;            /* cursor files go here (DIR/forward), created */
    struct gw_fwd_dest_opts dests[GW_FWD_MAX_DESTS];
    size_t n_dests;
    int include_internal;
    uint32_t min_backoff_ms, max_backoff_ms;  /* default 30 ms, 5 s (Prometheus') */
    uint32_t poll_ms;                 /* pause when caught up; default 200 */
};
void gw_fwd_opts_default(struct gw_fwd_opts *o);

/* Checks one destination's settings (URL, headers, protocol) as
 * gw_fwd_new does: GW_OK, or GW_EINVAL / GW_EUNSUPPORTED naming the
 * problem. */
int gw_fwd_check_dest(const struct gw_fwd_dest_opts *d, struct gw_error *err);

struct gw_fwd;
/* Checks every destination (URL, headers, protocol), loads the cursors
 * (a destination without one starts at the oldest segment on disk).
 * Starts no thread: gw_fwd_hold works from here on, so pass it to the
 * database before its WAL opens. GW_OK, GW_EINVAL / GW_EUNSUPPORTED
 * naming the bad setting, GW_EIO, GW_ENOMEM. */
int gw_fwd_new(struct gw_fwd **out, const struct gw_fwd_opts *o, struct gw_error *err);
/* Starts one sender thread per destination. labels resolves series not
 * seen in the WAL read so far. GW_OK or GW_ENOMEM. */
int gw_fwd_start(struct gw_fwd *f, gw_fwd_labels_fn labels, void *labels_ud, struct gw_error *err);
/* Stops the threads (a request in flight is finished, its cursor
 * written). NULL ok. gw_fwd_hold keeps working: stop before closing the
 * database the labels come from, free after it (its last checkpoint
 * still asks the hold). */
void gw_fwd_stop(struct gw_fwd *f);
/* Stops if needed, frees. NULL ok. */
void gw_fwd_free(struct gw_fwd *f);

/* The lowest WAL position a destination still needs (UINT64_MAX: none);
 * a gw_wal_opts.hold (ud = the struct gw_fwd). */
uint64_t gw_fwd_hold(void *ud);

/* Counters of one destination, for /metrics. */
struct gw_fwd_stats {
    const char *url;                  /* borrowed */
    double lag_seconds;               /* 0 when caught up, else time since it last was */
    uint64_t pending_bytes;           /* WAL bytes from the cursor to the end */
    uint64_t samples_sent, batches_sent;
    uint64_t batches_retried;         /* attempts that will be retried */
    uint64_t batches_failed;          /* batches dropped on a non-retryable answer */
    uint64_t dropped_rejected;        /* samples in those batches */
    uint64_t dropped_max_pending;     /* samples released past max_pending_bytes */
    uint64_t dropped_missing;         /* samples of unknown series or deleted segments */
    double last_error_s;              /* wall time of the last failed attempt, 0 if none */
    double highest_sent_s;            /* newest sample timestamp acknowledged */
};
size_t gw_fwd_n_dests(const struct gw_fwd *f);
/* i < gw_fwd_n_dests; GW_OK or GW_EINVAL. Safe while the threads run. */
int gw_fwd_stats(struct gw_fwd *f, size_t i, struct gw_fwd_stats *st);

#endif /* GW_FORWARD_H */
