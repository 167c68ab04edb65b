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
/* Time profiles: per node, day and resolution, up to GW_DS_MAX_PROFILES
 * maps bucket end -> dt shared by the time columns (first_dt, last_dt,
 * lastall_dt) of the node's series (layout at the top of
 * downsample_prof.c). end[] increasing, n >= 1. */
#define GW_DS_MAX_PROFILES 16
#define GW_DS_PROFILE_MAX_BUCKETS 1024
struct gw_ds_profile {
    size_t n, cap;
    int64_t *end;
    double *dt;
};
struct gw_ds_profiles {
    unsigned n;
    struct gw_ds_profile p[GW_DS_MAX_PROFILES];
};
/* Empties ps (keeps its buffers for reuse); _free releases them. */
void gw_ds_profiles_reset(struct gw_ds_profiles *ps);
void gw_ds_profiles_free(struct gw_ds_profiles *ps);
/* Appends the node record of ps (ps->n >= 1) to out, with its checksum.
 * GW_OK, GW_EINVAL (no profile), GW_ENOMEM. */
int gw_ds_profiles_encode(const struct gw_ds_profiles *ps, struct gw_buf *out);
/* Decodes a node record into ps (reused). Untrusted input: GW_ECORRUPT
 * (also for a checksum that does not match), GW_ENOMEM. */
int gw_ds_profiles_decode(const uint8_t *p, size_t len, struct gw_ds_profiles *ps);
/* 1 when node record p's checksum matches. */
int gw_ds_profiles_sum_ok(const uint8_t *p, size_t len);
/* Profile j's dts at the bucket ends end[0..nb): al[k] and has[k] = 1
 * where the profile has end[k], has[k] = 0 elsewhere. */
void gw_ds_profile_align(const struct gw_ds_profile *pr, const int64_t *end, size_t nb, double *al, uint8_t *has);
/* Encoder side: the profile column dt (nb buckets ending at end) should
 * be referred to, after it was found to differ too much from every
 * profile: adds it when there is room and nb is within the cap. Returns
 * the profile's number, -1 when not added, or GW_ENOMEM (< -1). */
int gw_ds_profile_add(struct gw_ds_profiles *ps, const int64_t *end, const double *dt, size_t nb);
/* Adds to profile pr the buckets of end[0..nb) it lacks (has[k] == 0),
 * with dt[k]: entries already there never change, so values that referred
 * to pr before still decode the same. GW_OK, GW_ENOMEM. */
int gw_ds_profile_grow(struct gw_ds_profile *pr, const int64_t *end, const double *dt, const uint8_t *has,
                       size_t nb);

/* Appends the value bytes of o to out: version 3 (what this build
 * writes), with its checksum. ps (may be NULL: no profile reference) is
 * the node's profiles of this day and resolution: the time columns may
 * refer to them, and the encoder adds or grows profiles as it goes; the
 * node record (gw_ds_profiles_encode) must be written with the values,
 * after the node's last series. GW_OK, GW_EINVAL (no bucket), GW_ENOMEM. */
int gw_ds_encode(const struct gw_ds_cols *o, struct gw_ds_profiles *ps, struct gw_buf *out);
/* The same in version 2 (references between columns, no profiles) and
 * version 1 (no checksum, every column in full), as older builds wrote
 * them: kept so tests can build old stores. */
int gw_ds_encode_v2(const struct gw_ds_cols *o, struct gw_buf *out);
int gw_ds_encode_v1(const struct gw_ds_cols *o, struct gw_buf *out);
/* Decodes the bucket ends and the columns whose bit is set in want
 * (1u << GW_DS_...; a version 2 or 3 value also decodes the columns they
 * refer to), version 1, 2 or 3; ps (may be NULL) is the node's profiles
 * for a version 3 value. Untrusted input: GW_ECORRUPT (also for a
 * checksum that does not match, and for a reference to a profile that ps
 * does not have), GW_ENOMEM. gw_ds_decode is gw_ds_decode_p without ps. */
int gw_ds_decode_p(const uint8_t *p, size_t len, unsigned want, const struct gw_ds_profiles *ps,
                   struct gw_ds_cols *o);
int gw_ds_decode(const uint8_t *p, size_t len, unsigned want, struct gw_ds_cols *o);
/* The number of profiles a value refers to at most (highest profile
 * number + 1; 0: none, also for versions 1 and 2), or GW_ECORRUPT. */
int gw_ds_profiles_used(const uint8_t *p, size_t len);

/* Reading values with their node's profiles: a small cache of decoded
 * node records, keyed by (resolution, day, node), owned by one reader
 * and valid with one read transaction (gw_ds_pcache_free, or _reset
 * when the transaction changes). */
#define GW_DS_PCACHE_SLOTS 64
struct gw_ds_pcache_slot {
    int used, rc;               /* rc: the record's GW_OK, GW_ENOTFOUND, GW_ECORRUPT */
    int res;
    int64_t day;
    uint32_t node;
    struct gw_ds_profiles ps;
};
struct gw_ds_pcache {
    struct gw_ds_pcache_slot s[GW_DS_PCACHE_SLOTS];
};
void gw_ds_pcache_reset(struct gw_ds_pcache *pc);
void gw_ds_pcache_free(struct gw_ds_pcache *pc);
/* Reads and decodes series sid's value of (res, day, node) from t with
 * the node's profiles (fetched once per cache slot). GW_OK,
 * GW_ENOTFOUND (no value), GW_ECORRUPT (the value, or a profile record
 * it needs that is missing or corrupt: *why, may be NULL, says which),
 * store errors, GW_ENOMEM. */
struct gw_store_txn;
int gw_ds_read(struct gw_store_txn *t, int res, int64_t day, uint32_t node, uint64_t sid, unsigned want,
               struct gw_ds_pcache *pc, struct gw_ds_cols *o, const char **why);

/* 1 when value p has no checksum (version 1) or its checksum matches. */
int gw_ds_sum_ok(const uint8_t *p, size_t len);
/* Checks every rollup value and node profile record in t (checksum,
 * full decode with the node's profiles, increasing bucket ends); bad is
 * called for each that fails, with what names it (sid
 * GW_ROLLUP_NODE_SID: the node's profile record).
 * *values (may be NULL) gets the number checked. GW_OK or an error of the
 * store (a bad value is not an error). */
typedef void (*gw_ds_bad_cb)(void *ud, int res, int64_t day, uint32_t node_id, uint64_t sid, const char *what);
int gw_ds_verify(struct gw_store_txn *t, gw_ds_bad_cb bad, void *ud, uint64_t *values);

/* downsample_read.c: rollup values read by queries since start (a
 * statistic; tests check that qualifying queries really use rollups). */
extern uint64_t gw_ds_rollup_reads;
/* downsample_read.c: gw_db_select with a view (called by gw_db_select). */
int gw_db_select_view(struct gw_db *db, const struct gw_db_select *q, gw_db_series_cb cb, void *ud,
                      struct gw_error *err);

#endif /* GW_DOWNSAMPLE_INT_H */
