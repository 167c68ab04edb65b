/* downsample_prof.c - the time profiles of a node's rollup values: every
 * series of one scrape target has the same sample times, so the time
 * columns (first_dt, last_dt, lastall_dt; top of downsample.c) of a node's
 * series are mostly the same few columns. A version 3 value may store
 * such a column as "profile j of the node, except at these buckets"
 * (reference code GW_DS_NCOL + 1 + j, the exceptions as for a reference
 * to an earlier column), and the profiles are stored once per node, day
 * and resolution, in the node's record (src/store/rollup.c: key node_id
 * be32 | ff ff ff ff of the same rollup DBI), written in the same write
 * transaction as the node's values (docs/downsampling.md).
 *
 * Node record, version 1 (integers uvarint):
 *   u8 version = 1 | nprof (1..16) |
 *   nprof x { len | timestamp column (gw_block_ts_encode of the profile's
 *             bucket ends, increasing, at most 1024) |
 *             len | value part (gw_block_values_encode of its dts) } |
 *   be32 checksum: the low 32 bits of XXH3-64 of every byte before it.
 * A profile maps bucket end -> dt. A value's column that refers to
 * profile j takes, for each of its buckets, the profile's dt at the same
 * bucket end, then its exceptions; a bucket the profile does not have
 * must be an exception (else the value is corrupt). The encoder finds the
 * profiles greedily while it encodes the node's series in sid order: a
 * time column that differs from every profile in more than an eighth of
 * its buckets becomes a new profile (at most 16), and a profile that lacks
 * buckets of a column referring to it gets them (a profile only grows:
 * entries never change, so earlier values still decode the same).
 * Example: series A and B of node 7 scraped at 100000 and 200000 have
 * first_dt -200000 and last_dt -100000 in the bucket ending at 300000;
 * A's first_dt becomes profile 0 {300000: -200000}, its last_dt profile 1
 * {300000: -100000}; B's columns are then "ref 12, 0 exceptions" and
 * "ref 13, 0 exceptions" (2 bytes each). */
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/block.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/store.h"
#include "db/downsample_int.h"

#define PROF_VERSION 1
#define PROF_SUM_LEN 4

static int prof_room(struct gw_ds_profile *pr, size_t n)
{
    if (n <= pr->cap)
        return GW_OK;
    size_t nc = pr->cap ? pr->cap : 64;
    while (nc < n)
        nc *= 2;
    int64_t *ne = realloc(pr->end, nc * sizeof *ne);
    if (!ne)
        return GW_ENOMEM;
    pr->end = ne;
    double *nd = realloc(pr->dt, nc * sizeof *nd);
    if (!nd)
        return GW_ENOMEM;
    pr->dt = nd;
    pr->cap = nc;
    return GW_OK;
}

void gw_ds_profiles_reset(struct gw_ds_profiles *ps)
{
    for (unsigned j = 0; j < GW_DS_MAX_PROFILES; j++)
        ps->p[j].n = 0;
    ps->n = 0;
}

void gw_ds_profiles_free(struct gw_ds_profiles *ps)
{
    for (unsigned j = 0; j < GW_DS_MAX_PROFILES; j++) {
        free(ps->p[j].end);
        free(ps->p[j].dt);
    }
    memset(ps, 0, sizeof *ps);
}

void gw_ds_profile_align(const struct gw_ds_profile *pr, const int64_t *end, size_t nb, double *al, uint8_t *has)
{
    size_t i = 0;
    for (size_t k = 0; k < nb; k++) {
        while (i < pr->n && pr->end[i] < end[k])
            i++;
        has[k] = i < pr->n && pr->end[i] == end[k];
        al[k] = has[k] ? pr->dt[i] : 0;
    }
}

int gw_ds_profile_add(struct gw_ds_profiles *ps, const int64_t *end, const double *dt, size_t nb)
{
    if (ps->n >= GW_DS_MAX_PROFILES || nb < 2 || nb > GW_DS_PROFILE_MAX_BUCKETS)
        return -1;
    struct gw_ds_profile *pr = &ps->p[ps->n];
    if (prof_room(pr, nb) != GW_OK)
        return GW_ENOMEM;
    memcpy(pr->end, end, nb * sizeof *end);
    memcpy(pr->dt, dt, nb * sizeof *dt);
    pr->n = nb;
    return (int)ps->n++;
}

int gw_ds_profile_grow(struct gw_ds_profile *pr, const int64_t *end, const double *dt, const uint8_t *has,
                       size_t nb)
{
    size_t add = 0;
    for (size_t k = 0; k < nb; k++)
        add += !has[k];
    if (add == 0 || pr->n + add > GW_DS_PROFILE_MAX_BUCKETS)
        return GW_OK;   /* those buckets stay exceptions */
    size_t n = pr->n + add;
    if (prof_room(pr, n) != GW_OK)
        return GW_ENOMEM;
    /* merge from the back, in place */
    size_t i = pr->n, k = nb, o = n;
    while (k > 0) {
        if (has[k - 1]) {
            k--;
            continue;
        }
        if (i > 0 && pr->end[i - 1] > end[k - 1]) {
            o--;
            i--;
            pr->end[o] = pr->end[i];
            pr->dt[o] = pr->dt[i];
            continue;
        }
        o--;
        k--;
        pr->end[o] = end[k];
        pr->dt[o] = dt[k];
    }
    pr->n = n;
    return GW_OK;
}


int gw_ds_profiles_encode(const struct gw_ds_profiles *ps, struct gw_buf *out)
{
    if (ps->n == 0 || ps->n > GW_DS_MAX_PROFILES)
        return GW_EINVAL;
    size_t start = out->len;
    uint8_t v = PROF_VERSION;
    int rc = gw_buf_append(out, &v, 1);
    if (rc == GW_OK)
        rc = gw_buf_put_uvarint(out, ps->n);
    struct gw_buf part;
    gw_buf_init(&part, 0);
    for (unsigned j = 0; rc == GW_OK && j < ps->n; j++) {
        gw_buf_reset(&part);
        rc = gw_block_ts_encode(ps->p[j].end, ps->p[j].n, &part);
        if (rc == GW_OK)
            rc = gw_buf_put_part(out, part.data, part.len);
        gw_buf_reset(&part);
        if (rc == GW_OK)
            rc = gw_block_values_encode(ps->p[j].dt, ps->p[j].n, &part);
        if (rc == GW_OK)
            rc = gw_buf_put_part(out, part.data, part.len);
    }
    gw_buf_free(&part);
    if (rc == GW_OK) {
        uint8_t sum[PROF_SUM_LEN];
        gw_put_be32(sum, (uint32_t)gw_hash64(out->data + start, out->len - start));
        rc = gw_buf_append(out, sum, sizeof sum);
    }
    return rc;
}

static int get_part(const uint8_t *p, size_t len, size_t *o, const uint8_t **part, size_t *part_len)
{
    uint64_t l;
    size_t k = gw_uvarint_get(p + *o, len - *o, &l);
    if (k == 0 || l > len - *o - k)
        return GW_ECORRUPT;
    *part = p + *o + k;
    *part_len = (size_t)l;
    *o += k + (size_t)l;
    return GW_OK;
}

/* One profile: its timestamp column and value part at *o. */
static int prof_decode_one(const uint8_t *p, size_t len, size_t *o, struct gw_ds_profile *pr)
{
    const uint8_t *col, *val;
    size_t col_len, val_len, n;
    uint32_t cnt;
    int64_t mi, ma;
    if (get_part(p, len, o, &col, &col_len) != GW_OK || get_part(p, len, o, &val, &val_len) != GW_OK)
        return GW_ECORRUPT;
    if (gw_block_info(col, col_len, &cnt, &mi, &ma) != GW_OK || cnt == 0 || cnt > GW_DS_PROFILE_MAX_BUCKETS)
        return GW_ECORRUPT;
    int rc = prof_room(pr, cnt);
    if (rc != GW_OK)
        return rc;
    if ((rc = gw_block_ts_decode(col, col_len, pr->end, pr->cap, &n)) != GW_OK)
        return rc == GW_ENOMEM ? rc : GW_ECORRUPT;
    if (n != cnt)
        return GW_ECORRUPT;
    if ((rc = gw_block_values_decode(val, val_len, n, pr->dt)) != GW_OK)
        return rc == GW_ENOMEM ? rc : GW_ECORRUPT;
    for (size_t k = 1; k < n; k++)
        if (pr->end[k] <= pr->end[k - 1])
            return GW_ECORRUPT;
    pr->n = n;
    return GW_OK;
}

int gw_ds_profiles_sum_ok(const uint8_t *p, size_t len)
{
    return len >= 2 + PROF_SUM_LEN && (uint32_t)gw_hash64(p, len - PROF_SUM_LEN) == gw_get_be32(p + len - PROF_SUM_LEN);
}

int gw_ds_profiles_decode(const uint8_t *p, size_t len, struct gw_ds_profiles *ps)
{
    gw_ds_profiles_reset(ps);
    if (!gw_ds_profiles_sum_ok(p, len) || p[0] != PROF_VERSION)
        return GW_ECORRUPT;
    len -= PROF_SUM_LEN;
    uint64_t np;
    size_t o = 1, k = gw_uvarint_get(p + o, len - o, &np);
    if (k == 0 || np == 0 || np > GW_DS_MAX_PROFILES)
        return GW_ECORRUPT;
    o += k;
    for (unsigned j = 0; j < np; j++) {
        int rc = prof_decode_one(p, len, &o, &ps->p[j]);
        if (rc != GW_OK) {
            gw_ds_profiles_reset(ps);
            return rc;
        }
    }
    if (o != len) {
        gw_ds_profiles_reset(ps);
        return GW_ECORRUPT;
    }
    ps->n = (unsigned)np;
    return GW_OK;
}

/* ---- readers ---- */

void gw_ds_pcache_reset(struct gw_ds_pcache *pc)
{
    for (int i = 0; i < GW_DS_PCACHE_SLOTS; i++)
        pc->s[i].used = 0;
}

void gw_ds_pcache_free(struct gw_ds_pcache *pc)
{
    for (int i = 0; i < GW_DS_PCACHE_SLOTS; i++)
        gw_ds_profiles_free(&pc->s[i].ps);
    memset(pc, 0, sizeof *pc);
}

/* The slot of (res, day, node), filled from t when it held another key:
 * GW_OK (slot->rc says how the record read) or GW_ENOMEM / a store error. */
static int pcache_get(struct gw_ds_pcache *pc, struct gw_store_txn *t, int res, int64_t day, uint32_t node,
                      struct gw_ds_pcache_slot **out)
{
    uint64_t h = ((uint64_t)day * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)node * 0xc2b2ae3d27d4eb4fULL) ^ (uint64_t)res;
    struct gw_ds_pcache_slot *s = &pc->s[(h ^ (h >> 29)) % GW_DS_PCACHE_SLOTS];
    *out = s;
    if (s->used && s->res == res && s->day == day && s->node == node)
        return GW_OK;
    s->used = 0;
    const uint8_t *p;
    size_t len;
    int rc = gw_store_rollup_get(t, res, day, node, GW_ROLLUP_NODE_SID, &p, &len);
    if (rc == GW_OK)
        rc = gw_ds_profiles_decode(p, len, &s->ps);
    if (rc != GW_OK && rc != GW_ENOTFOUND && rc != GW_ECORRUPT)
        return rc;
    if (rc != GW_OK)
        gw_ds_profiles_reset(&s->ps);
    s->rc = rc;
    s->res = res;
    s->day = day;
    s->node = node;
    s->used = 1;
    return GW_OK;
}

int gw_ds_read(struct gw_store_txn *t, int res, int64_t day, uint32_t node, uint64_t sid, unsigned want,
               struct gw_ds_pcache *pc, struct gw_ds_cols *o, const char **why)
{
    const uint8_t *val;
    size_t len;
    int rc = gw_store_rollup_get(t, res, day, node, sid, &val, &len);
    if (rc != GW_OK)
        return rc;
    struct gw_ds_pcache_slot *s = NULL;
    int used = gw_ds_profiles_used(val, len);
    if (used > 0 && (rc = pcache_get(pc, t, res, day, node, &s)) != GW_OK)
        return rc;
    rc = gw_ds_decode_p(val, len, want, s && s->rc == GW_OK ? &s->ps : NULL, o);
    if (rc == GW_ECORRUPT && why) {
        if (!s)
            *why = "the value is corrupt";
        else if (s->rc == GW_ENOTFOUND)
            *why = "the node's time profile record is missing";
        else if (s->rc != GW_OK)
            *why = "the node's time profile record is corrupt";
        else if ((unsigned)used > s->ps.n)
            *why = "the value refers to a time profile the node's record lacks";
        else
            *why = "the value is corrupt";
    }
    return rc;
}
