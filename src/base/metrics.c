/* metrics.c - lock-free latency histograms and their text rendering
 * (gpuwatch/metrics.h). */
#include "gpuwatch/metrics.h"

#include "gpuwatch/err.h"

const double gw_hist_bounds[GW_HIST_BUCKETS] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                 0.01,   0.025,   0.05,   0.1,   0.25,   0.5,
                                                 1,      2.5,     5,      10,    30,     60};

/* The bounds in nanoseconds, for the observe path (no floating point). */
static const uint64_t bounds_ns[GW_HIST_BUCKETS] = {
    100000ull,    250000ull,     500000ull,     1000000ull,    2500000ull,     5000000ull,
    10000000ull,  25000000ull,   50000000ull,   100000000ull,  250000000ull,   500000000ull,
    1000000000ull, 2500000000ull, 5000000000ull, 10000000000ull, 30000000000ull, 60000000000ull};

struct gw_hist gw_hist_wal_fsync;
struct gw_hist gw_hist_db_flush;
struct gw_hist gw_hist_db_checkpoint;
struct gw_hist gw_hist_query[2];

void gw_hist_observe_ns(struct gw_hist *h, uint64_t ns)
{
    unsigned i = 0;
    while (i < GW_HIST_BUCKETS && ns > bounds_ns[i])
        i++;
    atomic_fetch_add_explicit(&h->bucket[i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_ns, ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
}

int gw_hist_write(struct gw_buf *b, const char *name, const char *labels, const struct gw_hist *h)
{
    const char *sep = labels && labels[0] ? "," : "";
    const char *lb = labels ? labels : "";
    uint64_t cum = 0;
    int rc = GW_OK;
    for (unsigned i = 0; rc == GW_OK && i <= GW_HIST_BUCKETS; i++) {
        cum += atomic_load_explicit(&h->bucket[i], memory_order_relaxed);
        if (i < GW_HIST_BUCKETS)
            rc = gw_buf_printf(b, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, lb, sep, gw_hist_bounds[i],
                               (unsigned long long)cum);
        else
            rc = gw_buf_printf(b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, lb, sep, (unsigned long long)cum);
    }
    /* count is the +Inf bucket, so the two always agree within a scrape */
    if (rc == GW_OK)
        rc = gw_buf_printf(b, "%s_sum%s%s%s %.9f\n%s_count%s%s%s %llu\n", name, lb[0] ? "{" : "", lb,
                           lb[0] ? "}" : "",
                           (double)atomic_load_explicit(&h->sum_ns, memory_order_relaxed) / 1e9, name,
                           lb[0] ? "{" : "", lb, lb[0] ? "}" : "", (unsigned long long)cum);
    return rc;
}
