/* gpuwatch/metrics.h - process-wide self-metrics for /metrics: latency
 * histograms that any thread feeds with one call and no lock, and their
 * Prometheus text rendering.
 *
 * A histogram is a fixed array of C11 atomic counters (one per bucket,
 * not cumulative), a count and a sum in nanoseconds; gw_hist_observe_ns()
 * is a short linear search over GW_HIST_BUCKETS bounds and three relaxed
 * atomic adds, cheap enough for one call per request, fsync or flush (not
 * per sample). Readers (gw_hist_write) see each counter atomically; a
 * scrape racing an observation may see the count before the bucket, which
 * Prometheus tolerates (the next scrape is consistent).
 *
 * The histograms of work done below the HTTP layer (WAL fsync, flush,
 * checkpoint, WAL replay) are process-wide variables declared here and fed
 * by the module doing the work, like a default registry: one serve per
 * process, so process-wide is per server.
 *
 *   static struct gw_hist h;               // zero-initialised = empty
 *   uint64_t t0 = gw_mono_ns();
 *   ...work...
 *   gw_hist_observe_ns(&h, gw_mono_ns() - t0);
 *   gw_hist_write(buf, "gpuwatch_x_duration_seconds", "handler=\"write\"", &h);
 *
 * Layer: L0 base (src/base/); includes only its layer and below (docs/architecture.md). */
#ifndef GW_METRICS_H
#define GW_METRICS_H

#include <stdatomic.h>
#include <stdint.h>
#include "gpuwatch/buf.h"

/* Upper bounds of the buckets in seconds: 100 us .. 60 s, then +Inf. */
#define GW_HIST_BUCKETS 18
extern const double gw_hist_bounds[GW_HIST_BUCKETS];

struct gw_hist {
    _Atomic uint64_t bucket[GW_HIST_BUCKETS + 1];   /* per bucket, not cumulative; last: +Inf */
    _Atomic uint64_t count;
    _Atomic uint64_t sum_ns;
};

/* One observation of ns nanoseconds. Thread-safe, lock-free. */
void gw_hist_observe_ns(struct gw_hist *h, uint64_t ns);

/* Appends name_bucket{labels,le="..."} (cumulative), name_sum and
 * name_count lines; labels is "" or `k="v",k2="v2"` (no braces). No HELP
 * or TYPE lines: the caller writes them once per family. GW_OK or the
 * buffer's error. */
int gw_hist_write(struct gw_buf *b, const char *name, const char *labels, const struct gw_hist *h);

/* Process-wide histograms (see the top of this file). */
extern struct gw_hist gw_hist_wal_fsync;      /* wal.c: each fdatasync of a segment */
extern struct gw_hist gw_hist_db_flush;       /* db.c: each flush of settled head chunks to the store */
extern struct gw_hist gw_hist_db_checkpoint;  /* db.c: each checkpoint (flush, store sync, WAL truncation) */
extern struct gw_hist gw_hist_query[2];       /* http/api_query.c: PromQL evaluation, [0] instant, [1] range */

#endif /* GW_METRICS_H */
