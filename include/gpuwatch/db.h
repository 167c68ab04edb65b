/* gpuwatch/db.h - the database: WAL + in-memory head + LMDB store behind
 * one facade. Ingest appends a decoded remote-write request; readers select
 * series by matchers and get their samples from stored blocks and the head
 * alike. A data dir holds DIR/wal/ and DIR/store/.
 *
 * Ingest semantics (Prometheus' TSDB with out_of_order_time_window 0):
 *  - a sample equal in timestamp and value bits to the newest one of its
 *    series is a silent no-op (a retried batch is idempotent);
 *  - the same timestamp with another value is refused (duplicate);
 *  - an older timestamp than the newest of the series is refused
 *    (out of order); in-order backfill is accepted anywhere inside the
 *    retention window;
 *  - older than now - retention is refused (too old); more than 10 min
 *    ahead of now is refused (too new);
 *  - series with invalid labels are refused with all their samples;
 *  - native histograms and exemplars are counted and refused by name.
 * Valid samples of a request are kept whatever else in it was refused.
 * gw_db_append() returns once the accepted samples are durable under the
 * fsync policy.
 *
 * Thread-safety: every function may be called from any thread.
 * Layer: L3 database (src/db/); includes only its layer and below (docs/architecture.md). */
#ifndef GW_DB_H
#define GW_DB_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include "gpuwatch/err.h"
#include "gpuwatch/matcher.h"
#include "gpuwatch/rw.h"
#include "gpuwatch/store.h"
#include "gpuwatch/wal.h"

struct gw_db;

/* Sees every accepted sample, in time order per series, on the thread that
 * appends, under the database's append lock (so calls are serialized):
 * series() once per series when it enters the head (created, found in the
 * store, or replayed), returning a handle (0: no interest); sample() for
 * each accepted sample of a series with a handle, WAL replay included;
 * advance() after each request or replayed record with the newest sample
 * time so far. No I/O and no blocking in the callbacks. */
struct gw_db_observer {
    void *ud;
    uint32_t (*series)(void *ud, uint64_t sid, const uint8_t *labels, size_t len);
    void (*sample)(void *ud, uint32_t handle, int64_t t, double v);
    void (*advance)(void *ud, int64_t t);
};

/* Progress of the WAL replay inside gw_db_open, readable from other
 * threads while it runs (an HTTP server started before the open). Segment
 * numbers as Prometheus' /api/v1/status/walreplay reports them: the
 * first, the last and the one being read; bytes for a percentage. The
 * caller zeroes it; gw_db_open fills it. */
struct gw_db_replay_state {
    _Atomic int64_t first, last, current;   /* segment numbers; -1: no segment */
    _Atomic uint64_t bytes_done, bytes_total;
    _Atomic int started, done;              /* replay begun / ended (success or not) */
    _Atomic int64_t corruptions;            /* 1 when the replay repaired a torn or corrupt tail */
};

struct gw_db_opts {
    const char *dir;
    int64_t retention_ms;          /* default 55 d */
    enum gw_fsync_mode fsync;      /* default GW_FSYNC_BATCH */
    int64_t block_window_ms;       /* head chunks are cut at multiples of this; default 2 h */
    uint32_t max_block_samples;    /* also cut when a head chunk holds this many; default 1024 */
    uint64_t initial_map_bytes;    /* LMDB map start size; default 1 GiB */
    int background;                /* 1: start the flush/retention thread (serve) */
    int64_t future_tolerance_ms;   /* default 10 min */
    int read_only;                 /* CLI readers next to a running serve */
    const struct gw_db_observer *observer;  /* NULL: none; borrowed, must outlive the db */
    uint64_t retention_bytes;      /* 0: none; else the background thread also drops the
                                      oldest days while pages in use exceed it */
    struct gw_db_replay_state *replay;      /* NULL: none; borrowed, filled during gw_db_open */
    uint64_t (*wal_hold)(void *ud);         /* NULL: none; passed to the WAL as its hold()
                                               (wal.h): segments a reader such as
                                               forwarding still needs are kept */
    void *wal_hold_ud;
};
void gw_db_opts_default(struct gw_db_opts *o);

/* Opens (creating if needed), replays the WAL into the head, reporting
 * progress (progress.h: a bar on a terminal, log lines otherwise) and in
 * o->replay.
 * GW_OK, GW_EIO, GW_ECORRUPT, GW_ESTORE, GW_ENOMEM. */
int gw_db_open(struct gw_db **out, const struct gw_db_opts *o, struct gw_error *err);
/* Stops background work, flushes what is buffered, closes. NULL ok. */
void gw_db_close(struct gw_db *db);

struct gw_append_result {
    uint64_t accepted;          /* samples stored */
    uint64_t duplicates;        /* same t, same value: silent no-op */
    uint64_t conflicts;         /* same t, other value */
    uint64_t out_of_order;
    uint64_t too_old;
    uint64_t too_new;
    uint64_t invalid_series;    /* series refused for their labels */
    uint64_t invalid_samples;   /* samples of those series */
    uint64_t histograms;        /* refused: native histograms are not stored */
    uint64_t exemplars;         /* refused: exemplars are not stored */
    uint64_t metadata;          /* metadata entries stored */
    char first_invalid[GW_ERROR_MSG_LEN];    /* message of the first label problem */
};

/* Appends a decoded request (labels may be unsorted; they are normalized in
 * place). now_ms bounds the too-old/too-new checks. Returns GW_OK when the
 * request was processed (look at res for refused data) or a storage error
 * (GW_EIO, GW_EFULL, GW_ESTORE, GW_ENOMEM, GW_ESHUTDOWN) when accepted data
 * could not be made durable: then the client must retry. */
int gw_db_append(struct gw_db *db, struct gw_rw_request *req, int64_t now_ms,
                 struct gw_append_result *res, struct gw_error *err);

/* ---- reading ---- */
/* Called once per matching series, in Prometheus label order. labels are the
 * canonical bytes; t/v hold the samples in [mint, maxt] (maybe zero of
 * them when with_samples is 0). All pointers are borrowed for the call.
 * Return GW_OK to continue, 1 to stop, or an error. The callback always runs
 * on the thread that called gw_db_select, one series at a time; with
 * samples and no max_samples, helper threads (CPUs - 1, at most 3) decode
 * the next series (or a single series' blocks) meanwhile. */
typedef int (*gw_db_series_cb)(void *ud, uint64_t sid, const uint8_t *labels, size_t labels_len,
                               const int64_t *t, const double *v, size_t n);

/* Reading downsampled aggregates instead of raw samples (src/db/downsample.c,
 * docs/downsampling.md). A view hands out one sample per aggregate bucket
 * (5 min or 1 h, buckets (k*B, (k+1)*B]) for the days that have fresh
 * rollups, raw samples elsewhere; the caller picks the kind so that its
 * function over the synthetic samples gives the answer it wants. */
enum gw_db_view_kind {
    GW_DB_VIEW_RAW = 0,         /* raw samples only (as with no view) */
    GW_DB_VIEW_LAST,            /* the bucket's last sample, stale marker included, at its time */
    GW_DB_VIEW_LAST_VALUE,      /* the bucket's last non-stale sample */
    GW_DB_VIEW_MAX,             /* max_over_time of the bucket, at its last non-stale sample's time */
    GW_DB_VIEW_MIN              /* min_over_time of the bucket, likewise */
};
#define GW_DB_RES_RAW (-1)      /* gw_db_view.accept_ms: raw data only */
struct gw_db_view {
    int kind;                   /* enum gw_db_view_kind */
    int64_t exact_ms;           /* 0, or 5 min / 1 h: the caller proved that rollups of
                                   this bucket size give the raw answer (5 min ones
                                   also serve 1 h) */
    int64_t accept_ms;          /* max_source_resolution: GW_DB_RES_RAW; 0 (default:
                                   rollups where exact, and on days whose raw data is
                                   gone); 5 min or 1 h: rollups up to that size
                                   wherever they are fresh */
};

struct gw_db_select {
    const struct gw_matcher *matchers;
    size_t n_matchers;
    int64_t mint, maxt;          /* inclusive */
    int with_samples;            /* 0: labels only (series API) */
    int only_with_data;          /* 1: skip series with no sample in range */
    uint64_t max_samples;        /* 0 = unlimited; else GW_ELIMIT when passed */
    const struct gw_db_view *view; /* NULL: raw samples */
};
int gw_db_select(struct gw_db *db, const struct gw_db_select *q, gw_db_series_cb cb, void *ud,
                 struct gw_error *err);

/* Distinct label names / values of series that match every matcher set in
 * sets (a union over sets; no sets = all series) with data in [mint, maxt].
 * Sorted, unique; cb as in gw_store_value_cb. */
typedef int (*gw_db_string_cb)(void *ud, const char *s, size_t len);
struct gw_db_matcher_set {
    const struct gw_matcher *matchers;
    size_t n;
};
int gw_db_label_names(struct gw_db *db, const struct gw_db_matcher_set *sets, size_t n_sets,
                      int64_t mint, int64_t maxt, gw_db_string_cb cb, void *ud, struct gw_error *err);
int gw_db_label_values(struct gw_db *db, const char *name, size_t name_len,
                       const struct gw_db_matcher_set *sets, size_t n_sets,
                       int64_t mint, int64_t maxt, gw_db_string_cb cb, void *ud, struct gw_error *err);

/* The canonical labels of series sid, appended to out (for readers of the
 * WAL, whose samples records name series by sid). GW_OK, GW_ENOTFOUND,
 * GW_ENOMEM or a store error. */
int gw_db_series_labels(struct gw_db *db, uint64_t sid, struct gw_buf *out, struct gw_error *err);

/* ---- WAL record payloads (src/db/record.c; layouts at its top), for
 * readers of DIR/wal/ other than the db (forwarding) ---- */
enum { GW_REC_SERIES = 1, GW_REC_SAMPLES = 2 };
int gw_rec_series_add(struct gw_buf *b, uint64_t sid, const uint8_t *labels, size_t len);
int gw_rec_samples_begin(struct gw_buf *b, int64_t base_t);
int gw_rec_samples_add(struct gw_buf *b, int64_t base_t, uint64_t sid, int64_t t, double v);
/* Visit each entry; a non-GW_OK return of fn stops and is returned;
 * GW_ECORRUPT for a malformed payload. */
typedef int (*gw_rec_series_fn)(void *ud, uint64_t sid, const uint8_t *labels, size_t len);
typedef int (*gw_rec_sample_fn)(void *ud, uint64_t sid, int64_t t, double v);
int gw_rec_series_each(const uint8_t *p, size_t len, gw_rec_series_fn fn, void *ud);
int gw_rec_samples_each(const uint8_t *p, size_t len, gw_rec_sample_fn fn, void *ud);

/* Metric metadata stored from remote write. */
typedef int (*gw_db_metadata_cb)(void *ud, const char *metric, size_t metric_len, uint8_t type,
                                 const char *help, size_t help_len, const char *unit, size_t unit_len);
int gw_db_metadata(struct gw_db *db, gw_db_metadata_cb cb, void *ud, struct gw_error *err);

/* ---- maintenance ---- */
/* Cuts every head chunk and writes it to the store, syncs, drops the WAL
 * segments this made redundant. */
int gw_db_flush(struct gw_db *db, struct gw_error *err);
/* Drops partitions older than keep_ms before now. */
int gw_db_retention(struct gw_db *db, int64_t keep_ms, int64_t now_ms, unsigned *dropped,
                    struct gw_error *err);

/* Drops the oldest day partitions, one at a time, until the store's pages
 * in use (LMDB pages less its free list, not the file's high-water size)
 * are at most max_bytes; the newest partition always stays. */
int gw_db_retention_size(struct gw_db *db, uint64_t max_bytes, unsigned *dropped, struct gw_error *err);

/* ---- compaction (src/db/compact.c, docs/storage.md "Compaction") ----
 * Re-encodes every finished UTC day (before today by the wall clock, and
 * wholly before the oldest sample still in the head) into one day blob
 * per node, drops series with no data in any partition and none in the
 * head (with label pairs no series uses any more), and, only when the db
 * was opened without the background thread (offline: no serve on the
 * dir), rewrites the LMDB file with a compacting copy so freed pages go
 * back to the file system. One compaction at a time per process (a second
 * call gets GW_ELIMIT). Ingest is not blocked: each node's day is swapped
 * in its own short write transaction, dead series are deleted in batches. */
struct gw_db_compact_opts {
    int copy_file;              /* 1: also the compacting copy (offline only; ignored online) */
    int keep_dead;              /* 1: leave dead series in the index */
    /* progress: phase ("days", "series", "copy"), done of total units, samples so far */
    void (*progress)(void *ud, const char *phase, uint64_t done, uint64_t total, uint64_t samples);
    /* NULL, or asked between days and batches: nonzero stops the run with
     * GW_ESHUTDOWN (what is done stays done) */
    int (*stop)(void *ud);
    void *ud;
};
struct gw_db_compact_result {
    unsigned days;              /* days with at least one node re-encoded */
    uint64_t node_days, node_days_raced;
    uint64_t blobs_before, blobs_after;
    uint64_t bytes_before, bytes_after;     /* blob bytes of the re-encoded node-days */
    uint64_t samples;
    uint64_t series_dropped, pairs_dropped;
    uint64_t file_before, file_after;       /* LMDB data file size */
    uint64_t live_before, live_after;       /* LMDB pages in use */
    int file_copied;            /* the compacting copy ran */
};
int gw_db_compact(struct gw_db *db, const struct gw_db_compact_opts *o, struct gw_db_compact_result *r,
                  struct gw_error *err);

/* Downsampling (src/db/downsample.c, docs/downsampling.md). Every finished
 * UTC day (ended at least an hour before now_ms) whose raw partition has no
 * fresh 5 min and 1 h rollups gets them (a day whose raw partition got
 * blobs since is re-done); then raw days older than raw_retention_ms are
 * dropped when both rollups of the day are fresh, 5 min rollups older than
 * res5m_retention_ms when the day's 1 h rollup exists, and every rollup
 * older than the database's retention. Idempotent; safe while serving
 * (reads in short read transactions, one write transaction per node and
 * day). A retention of 0 keeps that kind forever. */
struct gw_db_downsample {
    int64_t raw_retention_ms;    /* in: default 14 d (gw_db_downsample_default) */
    int64_t res5m_retention_ms;  /* in: default 90 d */
    unsigned days_done;          /* out: days downsampled now (first time) */
    unsigned days_redone;        /* out: days re-done after late blobs */
    unsigned days_fresh;         /* out: days already done */
    unsigned raw_dropped;        /* out: raw day partitions dropped */
    unsigned res5m_dropped;      /* out: 5 min rollup days dropped */
    unsigned res1h_dropped;      /* out: 1 h rollup days dropped (retention) */
    uint64_t series;             /* out: series aggregated */
    uint64_t samples;            /* out: raw samples read */
    uint64_t buckets_5m, buckets_1h; /* out: buckets written */
    uint64_t bytes;              /* out: rollup value bytes written */
};
void gw_db_downsample_default(struct gw_db_downsample *ds);
int gw_db_downsample_run(struct gw_db *db, int64_t now_ms, struct gw_db_downsample *ds, struct gw_error *err);

struct gw_db_stats {
    uint64_t series;             /* in the store */
    uint64_t head_series;        /* with an open head chunk */
    uint64_t head_samples;
    uint64_t head_bytes;         /* memory held by head chunks + series */
    uint64_t head_chunks;        /* open and cut-but-unflushed head chunks */
    uint64_t stored_samples;     /* in persisted blocks */
    uint64_t stored_block_bytes; /* payload bytes of persisted blocks */
    uint64_t store_file_bytes;   /* LMDB data file */
    uint64_t store_used_bytes;   /* LMDB pages in use */
    uint64_t store_map_bytes;    /* LMDB map size (grows on demand) */
    uint64_t wal_bytes;
    int64_t mint, maxt;          /* oldest and newest sample of stored + head data; INT64_MAX/MIN when empty */
    /* counters since open */
    uint64_t appended, refused;
};
int gw_db_stats(struct gw_db *db, struct gw_db_stats *st, struct gw_error *err);

typedef int (*gw_db_partition_cb)(void *ud, int64_t day, uint64_t blocks, uint64_t samples,
                                  uint64_t payload_bytes, uint64_t page_bytes);
int gw_db_partitions(struct gw_db *db, gw_db_partition_cb cb, void *ud, struct gw_error *err);


/* ---- verification (verify.c) ----
 * Checks a data dir read-only, safe next to a running serve: the store
 * (gw_store_verify: every block decoded, the index cross-checked) in one
 * LMDB read transaction, then every WAL segment (gw_wal_check) and every
 * record's payload (SERIES labels canonical and valid, SAMPLES well formed
 * and naming series that exist in the store or in an earlier SERIES
 * record). Each problem goes to cb with where it is; fields that do not
 * apply hold day = window_start = INT64_MIN, seq = wal_segment = -1, the
 * others 0. A torn tail of the last WAL segment is normal (st->wal).
 * GW_OK when the checks ran (st->problems says whether anything was found);
 * GW_ENOTFOUND when DIR holds no store; other errors when a check could not
 * run. */
struct gw_db_problem {
    const char *area;           /* "store" or "wal" */
    const char *kind;           /* store: see gw_store_problem; wal: "segment", "series", "samples" */
    int64_t day;
    uint32_t node_id;
    int64_t window_start;
    int64_t seq;
    uint64_t sid;
    uint32_t pair_id;
    int64_t wal_segment;
    uint64_t wal_offset;
    char what[256];
};
typedef void (*gw_db_problem_cb)(void *ud, const struct gw_db_problem *p);
struct gw_db_verify_stats {
    struct gw_store_verify_stats store;
    struct gw_wal_check_stats wal;
    uint64_t wal_series, wal_samples;   /* in valid WAL records */
    uint64_t problems;                  /* store + WAL */
};
int gw_db_verify(const char *dir, gw_db_problem_cb cb, gw_store_verify_progress_cb progress, void *ud,
                 struct gw_db_verify_stats *st, struct gw_error *err);


/* ---- backup and restore (backup.c, restore.c; format at the top of
 * backup.c) ----
 * gw_db_backup: a consistent backup of an open, writing database (serve)
 * into out (absent or empty), without pausing ingest: the WAL is cut, the
 * segments before the cut copied, then the store snapshot (LMDB copy), then
 * the other files of the dir; every sample acknowledged before the call is
 * in the backup. Written to OUT.partial.XXXXXX and renamed when complete.
 * gw_db_backup_dir: the same for a data dir no process uses (takes
 * DIR/LOCK; GW_ELIMIT when a process holds it).
 * gw_db_backup_check: checks the manifest and every file (size, CRC).
 * gw_db_restore: checks, then copies into dir through a temp dir renamed
 * into place; a non-empty dir only with force (moved aside, then removed);
 * GW_ELIMIT when a process holds DIR/LOCK, GW_ECORRUPT for an incomplete or
 * damaged backup (nothing written then). */
struct gw_db_backup_stats {
    uint64_t files, bytes, wal_segments;
    uint64_t wal_position;       /* the cut (UINT64_MAX: all segments) */
};
int gw_db_backup(struct gw_db *db, const char *out, struct gw_db_backup_stats *st, struct gw_error *err);
int gw_db_backup_dir(const char *dir, const char *out, struct gw_db_backup_stats *st, struct gw_error *err);
int gw_db_backup_check(const char *from, struct gw_db_backup_stats *st, struct gw_error *err);
int gw_db_restore(const char *from, const char *dir, int force, struct gw_db_backup_stats *st,
                  struct gw_error *err);
/* Takes DIR/LOCK as serve does (*fd holds it; close to release): GW_OK,
 * GW_ELIMIT when another process holds it, GW_EIO. */
int gw_db_lock_dir(const char *dir, int *fd, struct gw_error *err);
/* rm -rf (no symlinks followed); 0 or -1. */
int gw_db_rmtree(const char *path);

#endif /* GW_DB_H */
