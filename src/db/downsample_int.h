/* downsample_int.h - what the downsampling files of the db module share:
 * the aggregate columns of one series and day (layout at the top of
 * downsample.c), the run (downsample_run.c) and the reader
 * (downsample_read.c). Nothing outside src/db/ includes this (tests may). */
#ifndef GW_DOWNSAMPLE_INT_H
#define GW_DOWNSAMPLE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "gpuwatch/buf.h"
#include "gpuwatch/db.h"

#define GW_DS_5M_MS (5 * 60 * 1000LL)
#define GW_DS_1H_MS (60 * 60 * 1000LL)

enum {
    GW_DS_COUNT, GW_DS_MIN, GW_DS_MAX, GW_DS_SUM, GW_DS_FIRST_V, GW_DS_FIRST_DT, GW_DS_LAST_V,
    GW_DS_LAST_DT, GW_DS_LASTALL_V, GW_DS_LASTALL_DT, GW_DS_RESETS, GW_DS_NCOL
};

/* nb buckets: end[k] and one array per column. */
struct gw_ds_cols {
    size_t nb, cap;
    int64_t *end;
    double *c[GW_DS_NCOL];
};
void gw_ds_cols_free(struct gw_ds_cols *o);
/* End of the left-open bucket of size b holding t. */
int64_t gw_ds_bucket_end(int64_t t, int64_t b);
/* Aggregates n samples (t increasing) into buckets of size b (o reused). */
int gw_ds_aggregate(const int64_t *t, const double *v, size_t n, int64_t b, struct gw_ds_cols *o);
/* Appends the value bytes of o to out (version 2, with its checksum).
 * GW_OK, GW_EINVAL (no bucket), GW_ENOMEM. */
int gw_ds_encode(const struct gw_ds_cols *o, struct gw_buf *out);
/* The same in version 1 (no checksum, every column in full), as older
 * builds wrote it: kept so tests can build old stores. */
int gw_ds_encode_v1(const struct gw_ds_cols *o, struct gw_buf *out);
/* Decodes the bucket ends and the columns whose bit is set in want
 * (1u << GW_DS_...; a version 2 value also decodes the columns they refer
 * to), version 1 or 2. Untrusted input: GW_ECORRUPT (also for a version 2
 * checksum that does not match), GW_ENOMEM. */
int gw_ds_decode(const uint8_t *p, size_t len, unsigned want, struct gw_ds_cols *o);

/* 1 when value p has no checksum (version 1) or its checksum matches. */
int gw_ds_sum_ok(const uint8_t *p, size_t len);
/* Checks every rollup value in t (checksum, full decode, increasing
 * bucket ends); bad is called for each that fails, with what names it.
 * *values (may be NULL) gets the number checked. GW_OK or an error of the
 * store (a bad value is not an error). */
struct gw_store_txn;
typedef void (*gw_ds_bad_cb)(void *ud, int res, int64_t day, uint32_t node_id, uint64_t sid, const char *what);
int gw_ds_verify(struct gw_store_txn *t, gw_ds_bad_cb bad, void *ud, uint64_t *values);

/* downsample_read.c: rollup values read by queries since start (a
 * statistic; tests check that qualifying queries really use rollups). */
extern uint64_t gw_ds_rollup_reads;
/* downsample_read.c: gw_db_select with a view (called by gw_db_select). */
int gw_db_select_view(struct gw_db *db, const struct gw_db_select *q, gw_db_series_cb cb, void *ud,
                      struct gw_error *err);

#endif /* GW_DOWNSAMPLE_INT_H */
