/* downsample.c - downsampling finished UTC days into 5-minute and 1-hour
 * aggregates ("rollups"), and the schedule that drops raw days once their
 * rollups exist (docs/downsampling.md). The store keeps the bytes
 * (src/store/rollup.c: DBIs "ds5m:<day>" / "ds1h:<day>", key node_id be32 |
 * sid be32, and a done marker); this file defines them.
 *
 * Buckets are left-open like PromQL windows: bucket k of size B holds the
 * samples with k*B < t <= (k+1)*B and is stamped with its end (k+1)*B. A
 * day's rollup holds the samples of its raw partition, t in [d*D, (d+1)*D)
 * (D = 86400000), so the bucket ending at midnight d*D is split: its part
 * before midnight is in day d-1's rollup, the sample at exactly d*D (if
 * any) in day d's. Readers that take one synthetic sample per stored
 * bucket (a real sample time inside the bucket) see both parts.
 *
 * Value of one series and day, version 3 (what this build writes; all
 * integers uvarint unless noted):
 *   u8 version = 3 | nb (buckets, >= 1) | ncol (= 11) |
 *   col_len | timestamp column: gw_block_ts_encode of the nb bucket ends |
 *   ncol columns, in the order count, first_v, last_v, first_dt, last_dt,
 *   min, max, sum, lastall_v, lastall_dt, resets (ORDER below), each:
 *     u8 ref = 0: own values: len | value part (gw_block_values_encode of
 *               nb doubles)
 *     u8 ref = r + 1 (r a column number coming earlier in ORDER): the
 *               column has the bits of column r except at nexc buckets:
 *               nexc (< nb) | nexc x gap (bucket index - previous listed
 *               index - 1; the first: its index) | when nexc > 0: len |
 *               value part of the nexc values in bucket order
 *     u8 ref = 12 + j (j < 16; time columns first_dt, last_dt,
 *               lastall_dt): the column has the dts of time profile j of
 *               the node's record for this day and resolution (top of
 *               downsample_prof.c) at its bucket ends, except at nexc
 *               buckets, listed as above; a bucket the profile does not
 *               have must be one of them
 *   be32 checksum: the low 32 bits of XXH3-64 of every byte before it.
 * The encoder tries, per column, its own value part, a reference to the
 * earlier column with the fewest differing buckets and, for a time column,
 * a reference to the node's profile with the fewest, and keeps the
 * smallest (profiles: downsample_prof.c). Every series of one scrape
 * target has the same times, so a node's time columns cost their few
 * profiles once plus ~2 bytes per column and value. Version 2 (format 4
 * builds) is version 3 without profile references (u8 version = 2).
 * Other references drop what is redundant within a series: lastall_v /
 * lastall_dt equal last_v / last_dt unless a bucket ends with a stale
 * marker; a counter's min and max equal its first and
 * last value unless it reset; a bucket of one sample has min = max =
 * first = last (= sum, but for -0). Version 1 (older builds, read as is):
 *   u8 version = 1 | nb | ncol (= 11) | col_len | timestamp column |
 *   ncol x { len | value part of nb doubles }, in column-number order, no
 *   checksum.
 * Columns, per bucket (stale markers 0x7ff0000000000002 are skipped by
 * every column but 8 and 9, exactly as PromQL range windows drop them;
 * other NaNs are ordinary values):
 *   0 count      non-stale samples (0: the bucket holds only stale markers;
 *                columns 1-7 are then NaN / 0)
 *   1 min        min_over_time's rule over the bucket (NaN only if all NaN)
 *   2 max        max_over_time's rule
 *   3 sum        Kahan-Neumaier sum in time order, sum + c (sum if +-Inf):
 *                sum_over_time of exactly the bucket's samples
 *   4 first_v    first non-stale value     5 first_dt  its time - bucket end (<= 0)
 *   6 last_v     last non-stale value      7 last_dt   its time - bucket end
 *   8 lastall_v  last sample, stale marker included (bits kept)
 *   9 lastall_dt its time - bucket end
 *  10 resets     sum of the values before each counter reset inside the
 *                bucket (v[i] < v[i-1], non-stale samples), so the counter
 *                increase inside the bucket is last_v - first_v + resets;
 *                a reset between two buckets shows as next first_v < last_v
 * Timestamps and the value parts come back bit-exact (block.h). Example:
 * one bucket ending at 300000 with samples (100000, 1) (200000, 3): nb 1,
 * columns count 2, min 1, max 3, sum 4, first 1 @ -200000, last 3 @
 * -100000, lastall 3 @ -100000, resets 0. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/block.h"
#include "gpuwatch/buf.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/db.h"
#include "gpuwatch/log.h"
#include "db/db_int.h"
#include "db/downsample_int.h"

#define STALE_BITS UINT64_C(0x7ff0000000000002)

static int is_stale(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b == STALE_BITS;
}

void gw_ds_cols_free(struct gw_ds_cols *o)
{
    free(o->end);
    for (int c = 0; c < GW_DS_NCOL; c++)
        free(o->c[c]);
    memset(o, 0, sizeof *o);
}

static int cols_grow(struct gw_ds_cols *o)
{
    if (o->nb < o->cap)
        return GW_OK;
    size_t nc = o->cap ? o->cap * 2 : 64;
    int64_t *ne = realloc(o->end, nc * sizeof *ne);
    if (!ne)
        return GW_ENOMEM;
    o->end = ne;
    for (int c = 0; c < GW_DS_NCOL; c++) {
        double *nv = realloc(o->c[c], nc * sizeof *nv);
        if (!nv)
            return GW_ENOMEM;
        o->c[c] = nv;
    }
    o->cap = nc;
    return GW_OK;
}

int64_t gw_ds_bucket_end(int64_t t, int64_t b)
{
    int64_t q = t / b, r = t % b;
    if (r < 0)
        q--;
    return r == 0 ? t : (q + 1) * b;
}

/* Prometheus' Kahan-Babuska step (kahansum.Inc). */
static void kahan_inc(double inc, double *sum, double *c)
{
    double t = *sum + inc;
    if (isinf(t))
        *c = 0;
    else if (fabs(*sum) >= fabs(inc))
        *c += (*sum - t) + inc;
    else
        *c += (inc - t) + *sum;
    *sum = t;
}

static void bucket_open(struct gw_ds_cols *o, int64_t e)
{
    size_t k = o->nb++;
    o->end[k] = e;
    for (int c = 0; c < GW_DS_NCOL; c++)
        o->c[c][k] = NAN;
    o->c[GW_DS_COUNT][k] = 0;
    o->c[GW_DS_SUM][k] = 0;
    o->c[GW_DS_FIRST_DT][k] = 0;
    o->c[GW_DS_LAST_DT][k] = 0;
    o->c[GW_DS_RESETS][k] = 0;
}

static void bucket_close(struct gw_ds_cols *o, double sum, double c)
{
    size_t k = o->nb - 1;
    if (o->c[GW_DS_COUNT][k] > 0)
        o->c[GW_DS_SUM][k] = isinf(sum) ? sum : sum + c;
    else
        o->c[GW_DS_SUM][k] = NAN;
}

int gw_ds_aggregate(const int64_t *t, const double *v, size_t n, int64_t b, struct gw_ds_cols *o)
{
    o->nb = 0;
    double sum = 0, c = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t e = gw_ds_bucket_end(t[i], b);
        if (o->nb == 0 || o->end[o->nb - 1] != e) {
            if (o->nb)
                bucket_close(o, sum, c);
            if (cols_grow(o) != GW_OK)
                return GW_ENOMEM;
            bucket_open(o, e);
            sum = c = 0;
        }
        size_t k = o->nb - 1;
        double x = v[i], dt = (double)(t[i] - e);
        o->c[GW_DS_LASTALL_V][k] = x;
        o->c[GW_DS_LASTALL_DT][k] = dt;
        if (is_stale(x))
            continue;
        double *col_n = &o->c[GW_DS_COUNT][k];
        if (*col_n == 0) {
            o->c[GW_DS_FIRST_V][k] = o->c[GW_DS_MIN][k] = o->c[GW_DS_MAX][k] = x;
            o->c[GW_DS_FIRST_DT][k] = dt;
        } else {
            double mx = o->c[GW_DS_MAX][k], mn = o->c[GW_DS_MIN][k], prev = o->c[GW_DS_LAST_V][k];
            if (x > mx || isnan(mx))
                o->c[GW_DS_MAX][k] = x;
            if (x < mn || isnan(mn))
                o->c[GW_DS_MIN][k] = x;
            if (x < prev)
                o->c[GW_DS_RESETS][k] += prev;
        }
        kahan_inc(x, &sum, &c);
        o->c[GW_DS_LAST_V][k] = x;
        o->c[GW_DS_LAST_DT][k] = dt;
        *col_n += 1;
    }
    if (o->nb)
        bucket_close(o, sum, c);
    return GW_OK;
}

/* Column numbers in the order version 2 stores them; a reference points
 * to a column earlier in this order. */
static const int ORDER[GW_DS_NCOL] = {GW_DS_COUNT,   GW_DS_FIRST_V,   GW_DS_LAST_V,     GW_DS_FIRST_DT,
                                      GW_DS_LAST_DT, GW_DS_MIN,       GW_DS_MAX,        GW_DS_SUM,
                                      GW_DS_LASTALL_V, GW_DS_LASTALL_DT, GW_DS_RESETS};
#define DS_VERSION 3
#define DS_SUM_LEN 4

static int same_bits(double a, double b)
{
    uint64_t x, y;
    memcpy(&x, &a, sizeof x);
    memcpy(&y, &b, sizeof y);
    return x == y;
}


static int is_time_col(int c)
{
    return c == GW_DS_FIRST_DT || c == GW_DS_LAST_DT || c == GW_DS_LASTALL_DT;
}

/* Scratch of the encoder, nb buckets. */
struct enc_scratch {
    struct gw_buf own, ref, pref, part;
    double *exc, *al;
    uint8_t *has;
};

static void enc_scratch_free(struct enc_scratch *sc)
{
    gw_buf_free(&sc->own);
    gw_buf_free(&sc->ref);
    gw_buf_free(&sc->pref);
    gw_buf_free(&sc->part);
    free(sc->exc);
    free(sc->al);
    free(sc->has);
}

static int enc_scratch_init(struct enc_scratch *sc, size_t nb)
{
    memset(sc, 0, sizeof *sc);
    gw_buf_init(&sc->own, 0);
    gw_buf_init(&sc->ref, 0);
    gw_buf_init(&sc->pref, 0);
    gw_buf_init(&sc->part, 0);
    sc->exc = malloc(nb * sizeof *sc->exc);
    sc->al = malloc(nb * sizeof *sc->al);
    sc->has = malloc(nb);
    return sc->exc && sc->al && sc->has ? GW_OK : GW_ENOMEM;
}

/* Buckets where v differs from r (or r has no value: has[k] == 0; has
 * may be NULL), counting no further than limit. */
static size_t count_exc(const double *v, const double *r, const uint8_t *has, size_t nb, size_t limit)
{
    size_t n = 0;
    for (size_t k = 0; k < nb && n < limit; k++)
        n += (has && !has[k]) || !same_bits(v[k], r[k]);
    return n;
}

/* Writes into b the column v as a reference: code, nexc, the gaps and the
 * value part of the exceptions (the buckets count_exc counts). */
static int put_ref(struct gw_buf *b, uint64_t code, const double *v, const double *r, const uint8_t *has, size_t nb,
                   struct enc_scratch *sc)
{
    size_t nexc = count_exc(v, r, has, nb, nb + 1), n = 0, prev = 0;
    gw_buf_reset(b);
    int rc = gw_buf_put_uvarint(b, code);
    if (rc == GW_OK)
        rc = gw_buf_put_uvarint(b, nexc);
    for (size_t k = 0; k < nb && rc == GW_OK; k++) {
        if ((!has || has[k]) && same_bits(v[k], r[k]))
            continue;
        rc = gw_buf_put_uvarint(b, k - (n ? prev + 1 : 0));
        prev = k;
        sc->exc[n++] = v[k];
    }
    if (rc == GW_OK && n) {
        gw_buf_reset(&sc->part);
        if ((rc = gw_block_values_encode(sc->exc, n, &sc->part)) == GW_OK)
            rc = gw_buf_put_part(b, sc->part.data, sc->part.len);
    }
    return rc;
}

/* For time column v: the profile of ps that differs in the fewest
 * buckets where it has a dt, or a new one when that is more than an
 * eighth of them and so is intra_n (the differences from the best earlier
 * column); the profile gets the buckets it lacks. *pj = -1 when there is
 * none; else sc->al / sc->has hold its alignment. */
static int pick_profile(const struct gw_ds_cols *o, const double *v, size_t intra_n, struct gw_ds_profiles *ps,
                        struct enc_scratch *sc, int *pj)
{
    size_t nb = o->nb, best_n = nb + 1;
    int best = -1;
    *pj = -1;
    for (unsigned j = 0; j < ps->n; j++) {
        gw_ds_profile_align(&ps->p[j], o->end, nb, sc->al, sc->has);
        size_t n = 0;
        for (size_t k = 0; k < nb && n < best_n; k++)
            n += sc->has[k] && !same_bits(v[k], sc->al[k]);
        if (n < best_n) {
            best_n = n;
            best = (int)j;
        }
    }
    if ((best < 0 || best_n * 8 > nb) && intra_n * 8 > nb) {
        int a = gw_ds_profile_add(ps, o->end, v, nb);
        if (a < -1)
            return GW_ENOMEM;
        if (a >= 0)
            best = a;
    }
    if (best < 0)
        return GW_OK;
    gw_ds_profile_align(&ps->p[best], o->end, nb, sc->al, sc->has);
    int rc = gw_ds_profile_grow(&ps->p[best], o->end, v, sc->has, nb);
    if (rc != GW_OK)
        return rc;
    gw_ds_profile_align(&ps->p[best], o->end, nb, sc->al, sc->has);
    *pj = best;
    return GW_OK;
}

/* Appends column ORDER[j]: its own value part, a reference to the earlier
 * column that differs in the fewest buckets, or (time columns, ps given)
 * a reference to a profile of the node, whichever is smallest. */
static int enc_column(const struct gw_ds_cols *o, int j, struct gw_ds_profiles *ps, struct enc_scratch *sc,
                      struct gw_buf *out)
{
    const double *v = o->c[ORDER[j]];
    size_t nb = o->nb, best_n = nb;
    int best = -1, pj = -1;
    for (int i = 0; i < j && best_n; i++) {
        size_t n = count_exc(v, o->c[ORDER[i]], NULL, nb, best_n);
        if (n < best_n) {
            best_n = n;
            best = ORDER[i];
        }
    }
    int rc = GW_OK;
    if (ps && is_time_col(ORDER[j]) && best_n > 0)
        rc = pick_profile(o, v, best_n, ps, sc, &pj);
    if (pj >= 0 && count_exc(v, sc->al, sc->has, nb, nb) >= nb)
        pj = -1;
    gw_buf_reset(&sc->own);
    if (rc == GW_OK)
        rc = gw_buf_put_uvarint(&sc->own, 0);
    gw_buf_reset(&sc->part);
    if (rc == GW_OK && (rc = gw_block_values_encode(v, nb, &sc->part)) == GW_OK)
        rc = gw_buf_put_part(&sc->own, sc->part.data, sc->part.len);
    if (rc == GW_OK && best >= 0)
        rc = put_ref(&sc->ref, (uint64_t)best + 1, v, o->c[best], NULL, nb, sc);
    if (rc == GW_OK && pj >= 0)
        rc = put_ref(&sc->pref, (uint64_t)(GW_DS_NCOL + 1 + pj), v, sc->al, sc->has, nb, sc);
    if (rc != GW_OK)
        return rc;
    const struct gw_buf *pick = &sc->own;
    if (best >= 0 && sc->ref.len < pick->len)
        pick = &sc->ref;
    if (pj >= 0 && sc->pref.len < pick->len)
        pick = &sc->pref;
    return gw_buf_append(out, pick->data, pick->len);
}

static int encode_version(const struct gw_ds_cols *o, int version, struct gw_ds_profiles *ps, struct gw_buf *out)
{
    if (o->nb == 0)
        return GW_EINVAL;
    struct enc_scratch sc;
    int rc = enc_scratch_init(&sc, o->nb);
    size_t start = out->len;
    uint8_t hdr[32];
    size_t h = 0;
    hdr[h++] = (uint8_t)version;
    h += gw_uvarint_put(hdr + h, o->nb);
    h += gw_uvarint_put(hdr + h, GW_DS_NCOL);
    if (rc == GW_OK)
        rc = gw_buf_append(out, hdr, h);
    if (rc == GW_OK)
        rc = gw_block_ts_encode(o->end, o->nb, &sc.part);
    if (rc == GW_OK)
        rc = gw_buf_put_part(out, sc.part.data, sc.part.len);
    for (int j = 0; rc == GW_OK && j < GW_DS_NCOL; j++)
        rc = enc_column(o, j, ps, &sc, out);
    if (rc == GW_OK) {
        uint8_t sum[DS_SUM_LEN];
        gw_put_be32(sum, (uint32_t)gw_hash64(out->data + start, out->len - start));
        rc = gw_buf_append(out, sum, sizeof sum);
    }
    enc_scratch_free(&sc);
    return rc;
}

int gw_ds_encode(const struct gw_ds_cols *o, struct gw_ds_profiles *ps, struct gw_buf *out)
{
    return encode_version(o, DS_VERSION, ps, out);
}

int gw_ds_encode_v2(const struct gw_ds_cols *o, struct gw_buf *out)
{
    return encode_version(o, 2, NULL, out);
}

int gw_ds_encode_v1(const struct gw_ds_cols *o, struct gw_buf *out)
{
    struct gw_buf part;
    gw_buf_init(&part, 0);
    uint8_t hdr[32];
    size_t h = 0;
    hdr[h++] = 1;
    h += gw_uvarint_put(hdr + h, o->nb);
    h += gw_uvarint_put(hdr + h, GW_DS_NCOL);
    int rc = gw_buf_append(out, hdr, h);
    if (rc == GW_OK)
        rc = gw_block_ts_encode(o->end, o->nb, &part);
    for (int c = -1; rc == GW_OK && c < GW_DS_NCOL; c++) {
        if (c >= 0) {
            gw_buf_reset(&part);
            rc = gw_block_values_encode(o->c[c], o->nb, &part);
        }
        uint8_t lb[10];
        size_t k = gw_uvarint_put(lb, part.len);
        if (rc == GW_OK)
            rc = gw_buf_append(out, lb, k);
        if (rc == GW_OK)
            rc = gw_buf_append(out, part.data, part.len);
    }
    gw_buf_free(&part);
    return rc;
}

/* One stored column of a version 2 or 3 value. */
struct ds_colref {
    int ref;                    /* -1: own values or a profile; else the column referred to */
    int prof;                   /* -1, or the profile referred to (version 3) */
    uint64_t nexc;
    const uint8_t *gaps;        /* nexc uvarints */
    size_t gaps_len;
    const uint8_t *part;        /* value part (nb or nexc values; NULL when nexc == 0) */
    size_t part_len;
};

static int get_uv(const uint8_t *p, size_t len, size_t *o, uint64_t *v)
{
    size_t k = gw_uvarint_get(p + *o, len - *o, v);
    *o += k;
    return k != 0;
}

/* Parses the reference code of column ORDER[j] into c; seen: the columns
 * before it. */
static int ds2_ref(uint64_t ref, int version, unsigned seen, struct ds_colref *c)
{
    c->ref = c->prof = -1;
    if (ref == 0)
        return GW_OK;
    if (ref <= GW_DS_NCOL) {
        if (!(seen & (1u << (ref - 1))))
            return GW_ECORRUPT;
        c->ref = (int)ref - 1;
        return GW_OK;
    }
    if (version < 3 || ref > GW_DS_NCOL + GW_DS_MAX_PROFILES)
        return GW_ECORRUPT;
    c->prof = (int)(ref - GW_DS_NCOL - 1);
    return GW_OK;
}

/* Parses the columns of a version 2 or 3 value (checksum checked first). */
static int ds2_split(const uint8_t *p, size_t len, uint64_t *nb, const uint8_t **col, size_t *col_len,
                     struct ds_colref cr[GW_DS_NCOL])
{
    uint64_t ncol, l;
    size_t o = 1;
    if (len < 1 + DS_SUM_LEN || (uint32_t)gw_hash64(p, len - DS_SUM_LEN) != gw_get_be32(p + len - DS_SUM_LEN))
        return GW_ECORRUPT;
    int version = p[0];
    len -= DS_SUM_LEN;
    if (!get_uv(p, len, &o, nb) || *nb == 0 || *nb > GW_BLOCK_MAX_SAMPLES)
        return GW_ECORRUPT;
    if (!get_uv(p, len, &o, &ncol) || ncol != GW_DS_NCOL || !get_uv(p, len, &o, &l) || l > len - o)
        return GW_ECORRUPT;
    *col = p + o;
    *col_len = (size_t)l;
    o += (size_t)l;
    unsigned seen = 0;
    for (int j = 0; j < GW_DS_NCOL; j++) {
        struct ds_colref *c = &cr[ORDER[j]];
        uint64_t ref;
        memset(c, 0, sizeof *c);
        if (!get_uv(p, len, &o, &ref) || ds2_ref(ref, version, seen, c) != GW_OK)
            return GW_ECORRUPT;
        seen |= 1u << ORDER[j];
        if (ref) {
            if (!get_uv(p, len, &o, &c->nexc) || c->nexc >= *nb)
                return GW_ECORRUPT;
            c->gaps = p + o;
            for (uint64_t e = 0; e < c->nexc; e++)
                if (!get_uv(p, len, &o, &l))
                    return GW_ECORRUPT;
            c->gaps_len = (size_t)(p + o - c->gaps);
        }
        if (ref && c->nexc == 0)
            continue;
        if (!get_uv(p, len, &o, &l) || l > len - o)
            return GW_ECORRUPT;
        c->part = p + o;
        c->part_len = (size_t)l;
        o += (size_t)l;
    }
    return o == len ? GW_OK : GW_ECORRUPT;
}

/* Decoding scratch, nb buckets. */
struct dec_scratch {
    double *exc;
    uint8_t *has;               /* NULL when no column refers to a profile */
};

/* Column c's base: the column referred to, or the profile's dts (has[k]
 * = 0 where the profile lacks bucket k). */
static int ds2_base(const struct ds_colref *c, int col, struct gw_ds_cols *o, size_t nb,
                    const struct gw_ds_profiles *ps, struct dec_scratch *sc)
{
    if (c->prof < 0) {
        memcpy(o->c[col], o->c[c->ref], nb * sizeof(double));
        return GW_OK;
    }
    if (!ps || (unsigned)c->prof >= ps->n || !sc->has)
        return GW_ECORRUPT;
    gw_ds_profile_align(&ps->p[c->prof], o->end, nb, o->c[col], sc->has);
    return GW_OK;
}

/* Decodes column c of a version 2 or 3 value into o->c[c] (its reference
 * is decoded already). */
static int ds2_column(const struct ds_colref *c, int col, struct gw_ds_cols *o, size_t nb,
                      const struct gw_ds_profiles *ps, struct dec_scratch *sc)
{
    if (c->ref < 0 && c->prof < 0)
        return gw_block_values_decode(c->part, c->part_len, nb, o->c[col]);
    int rc = ds2_base(c, col, o, nb, ps, sc);
    if (rc == GW_OK && c->nexc)
        rc = gw_block_values_decode(c->part, c->part_len, (size_t)c->nexc, sc->exc);
    if (rc != GW_OK)
        return rc;
    size_t g = 0, k = 0;
    for (uint64_t e = 0; e < c->nexc; e++) {
        uint64_t gap;
        if (!get_uv(c->gaps, c->gaps_len, &g, &gap) || gap >= nb - k)
            return GW_ECORRUPT;
        k += (size_t)gap;
        if (c->prof >= 0)
            sc->has[k] = 1;
        o->c[col][k++] = sc->exc[e];
    }
    if (c->prof >= 0)   /* a bucket the profile lacks must be an exception */
        for (k = 0; k < nb; k++)
            if (!sc->has[k])
                return GW_ECORRUPT;
    return GW_OK;
}

/* Splits a value into its timestamp column and column parts. */
static int ds_split(const uint8_t *p, size_t len, uint64_t *nb, const uint8_t **col, size_t *col_len,
                    const uint8_t *parts[GW_DS_NCOL], size_t part_len[GW_DS_NCOL])
{
    uint64_t ncol, l;
    size_t o = 1, k;
    if (len < 1 || p[0] != 1)
        return GW_ECORRUPT;
    if (!(k = gw_uvarint_get(p + o, len - o, nb)) || *nb == 0 || *nb > GW_BLOCK_MAX_SAMPLES)
        return GW_ECORRUPT;
    o += k;
    if (!(k = gw_uvarint_get(p + o, len - o, &ncol)) || ncol < GW_DS_NCOL)
        return GW_ECORRUPT;
    o += k;
    for (uint64_t c = 0; c <= ncol; c++) {
        if (!(k = gw_uvarint_get(p + o, len - o, &l)) || l > len - o - k)
            return GW_ECORRUPT;
        o += k;
        if (c == 0) {
            *col = p + o;
            *col_len = (size_t)l;
        } else if (c <= GW_DS_NCOL) {
            parts[c - 1] = p + o;
            part_len[c - 1] = (size_t)l;
        }
        o += (size_t)l;
    }
    return GW_OK;
}

static int ds_room(struct gw_ds_cols *o, uint64_t nb)
{
    while (o->cap < nb) {
        o->nb = o->cap;
        int rc = cols_grow(o);
        if (rc != GW_OK)
            return rc;
    }
    o->nb = 0;
    return GW_OK;
}

static int ds1_decode(const uint8_t *p, size_t len, unsigned want, struct gw_ds_cols *o)
{
    uint64_t nb;
    const uint8_t *col, *parts[GW_DS_NCOL];
    size_t col_len, part_len[GW_DS_NCOL];
    int rc = ds_split(p, len, &nb, &col, &col_len, parts, part_len);
    if (rc != GW_OK || (rc = ds_room(o, nb)) != GW_OK)
        return rc;
    size_t n;
    if ((rc = gw_block_ts_decode(col, col_len, o->end, o->cap, &n)) != GW_OK)
        return rc;
    if (n != nb)
        return GW_ECORRUPT;
    for (int c = 0; c < GW_DS_NCOL; c++) {
        if (!(want & (1u << c)))
            continue;
        if ((rc = gw_block_values_decode(parts[c], part_len[c], n, o->c[c])) != GW_OK)
            return rc;
    }
    o->nb = n;
    return GW_OK;
}

static int ds2_decode(const uint8_t *p, size_t len, unsigned want, const struct gw_ds_profiles *ps,
                      struct gw_ds_cols *o)
{
    uint64_t nb;
    const uint8_t *col;
    size_t col_len, n;
    struct ds_colref cr[GW_DS_NCOL];
    int rc = ds2_split(p, len, &nb, &col, &col_len, cr);
    if (rc != GW_OK || (rc = ds_room(o, nb)) != GW_OK)
        return rc;
    if ((rc = gw_block_ts_decode(col, col_len, o->end, o->cap, &n)) != GW_OK)
        return rc;
    if (n != nb)
        return GW_ECORRUPT;
    /* the columns wanted and those they refer to, latest in ORDER first */
    int profs = 0;
    for (int j = GW_DS_NCOL - 1; j >= 0; j--) {
        if ((want & (1u << ORDER[j])) && cr[ORDER[j]].ref >= 0)
            want |= 1u << cr[ORDER[j]].ref;
        profs |= (want & (1u << ORDER[j])) && cr[ORDER[j]].prof >= 0;
    }
    struct dec_scratch sc = {malloc(n * sizeof *sc.exc), profs ? malloc(n) : NULL};
    if (!sc.exc || (profs && !sc.has))
        rc = GW_ENOMEM;
    for (int j = 0; rc == GW_OK && j < GW_DS_NCOL; j++)
        if (want & (1u << ORDER[j]))
            rc = ds2_column(&cr[ORDER[j]], ORDER[j], o, n, ps, &sc);
    free(sc.exc);
    free(sc.has);
    if (rc == GW_OK)
        o->nb = n;
    return rc;
}

int gw_ds_decode_p(const uint8_t *p, size_t len, unsigned want, const struct gw_ds_profiles *ps,
                   struct gw_ds_cols *o)
{
    int rc = len >= 1 && (p[0] == 2 || p[0] == DS_VERSION) ? ds2_decode(p, len, want, ps, o)
                                                            : ds1_decode(p, len, want, o);
    /* a column holding more timestamps than the value's nb (GW_ELIMIT
     * from the block decoder) is bad data like any other */
    return rc == GW_OK || rc == GW_ENOMEM ? rc : GW_ECORRUPT;
}

int gw_ds_decode(const uint8_t *p, size_t len, unsigned want, struct gw_ds_cols *o)
{
    return gw_ds_decode_p(p, len, want, NULL, o);
}

int gw_ds_profiles_used(const uint8_t *p, size_t len)
{
    if (len < 1 || p[0] != DS_VERSION)
        return 0;
    uint64_t nb;
    const uint8_t *col;
    size_t col_len;
    struct ds_colref cr[GW_DS_NCOL];
    int rc = ds2_split(p, len, &nb, &col, &col_len, cr), used = 0;
    if (rc != GW_OK)
        return rc;
    for (int c = 0; c < GW_DS_NCOL; c++)
        if (cr[c].prof + 1 > used)
            used = cr[c].prof + 1;
    return used;
}

int gw_ds_sum_ok(const uint8_t *p, size_t len)
{
    if (len < 1 || (p[0] != 2 && p[0] != DS_VERSION))
        return 1;
    return len >= 1 + DS_SUM_LEN &&
           (uint32_t)gw_hash64(p, len - DS_SUM_LEN) == gw_get_be32(p + len - DS_SUM_LEN);
}

struct ds_verify {
    struct gw_store_txn *t;
    struct gw_ds_cols c;
    struct gw_ds_profiles ps;   /* of node pnode (prc: how its record read) */
    uint32_t pnode;
    int prc, have_p;
    gw_ds_bad_cb bad;
    void *ud;
    int res;
    int64_t day;
    uint64_t values;
};

static const char *res_name(int res)
{
    return res == GW_ROLLUP_1H ? "1h" : "5m";
}

/* The node's profile record, checked where the scan meets it. */
static void verify_profiles(struct ds_verify *v, uint32_t node_id, const uint8_t *val, size_t len)
{
    char what[160];
    int rc = gw_ds_profiles_decode(val, len, &v->ps);
    v->have_p = 0;      /* ps now holds this record: re-read before the next use */
    if (rc == GW_OK)
        return;
    if (rc == GW_ENOMEM)
        return;     /* not a fault of the store; the values' check says more */
    snprintf(what, sizeof what, "%s time profiles of node %u (%zu bytes): %s", res_name(v->res), node_id, len,
             !gw_ds_profiles_sum_ok(val, len) ? "checksum mismatch" : "do not decode");
    v->bad(v->ud, v->res, v->day, node_id, GW_ROLLUP_NODE_SID, what);
}

/* Loads node_id's profiles into v->ps once per node. */
static void verify_load(struct ds_verify *v, uint32_t node_id)
{
    if (v->have_p && v->pnode == node_id)
        return;
    const uint8_t *p;
    size_t len;
    v->pnode = node_id;
    v->have_p = 1;
    v->prc = gw_store_rollup_get(v->t, v->res, v->day, node_id, GW_ROLLUP_NODE_SID, &p, &len);
    if (v->prc == GW_OK)
        v->prc = gw_ds_profiles_decode(p, len, &v->ps);
}

/* What is wrong with a value that does not decode. */
static const char *value_fault(struct ds_verify *v, const uint8_t *val, size_t len, char *buf, size_t cap)
{
    int used = gw_ds_profiles_used(val, len);
    if (used <= 0)
        return "do not decode";
    if (v->prc == GW_ENOTFOUND)
        return "refer to the node's time profiles, which are missing";
    if (v->prc != GW_OK)
        return "refer to the node's time profiles, which are corrupt";
    if ((unsigned)used > v->ps.n) {
        snprintf(buf, cap, "refer to time profile %d, the node has %u", used - 1, v->ps.n);
        return buf;
    }
    return "do not decode with the node's time profiles";
}

static int verify_value(void *ud, uint32_t node_id, uint64_t sid, const uint8_t *val, size_t len)
{
    struct ds_verify *v = ud;
    char what[160], why[64];
    const char *res = res_name(v->res);
    if (sid == GW_ROLLUP_NODE_SID) {
        verify_profiles(v, node_id, val, len);
        return 0;
    }
    v->values++;
    if (!gw_ds_sum_ok(val, len)) {
        snprintf(what, sizeof what, "%s aggregates of series %llu (%zu bytes): checksum mismatch", res,
                 (unsigned long long)sid, len);
        v->bad(v->ud, v->res, v->day, node_id, sid, what);
        return 0;
    }
    verify_load(v, node_id);
    int rc = gw_ds_decode_p(val, len, (1u << GW_DS_NCOL) - 1, v->prc == GW_OK ? &v->ps : NULL, &v->c);
    if (rc == GW_ENOMEM)
        return rc;
    if (rc != GW_OK) {
        snprintf(what, sizeof what, "%s aggregates of series %llu (%zu bytes): %s", res, (unsigned long long)sid,
                 len, value_fault(v, val, len, why, sizeof why));
        v->bad(v->ud, v->res, v->day, node_id, sid, what);
        return 0;
    }
    for (size_t k = 1; k < v->c.nb; k++)
        if (v->c.end[k] <= v->c.end[k - 1]) {
            snprintf(what, sizeof what, "%s aggregates of series %llu: bucket ends not increasing", res,
                     (unsigned long long)sid);
            v->bad(v->ud, v->res, v->day, node_id, sid, what);
            break;
        }
    return 0;
}

static int verify_day(void *ud, int64_t day)
{
    struct ds_verify *v = ud;
    v->day = day;
    v->have_p = 0;
    int rc = gw_store_rollup_scan(v->t, v->res, day, verify_value, v);
    return rc == GW_ENOTFOUND ? 0 : rc;
}

int gw_ds_verify(struct gw_store_txn *t, gw_ds_bad_cb bad, void *ud, uint64_t *values)
{
    struct ds_verify v = {.t = t, .bad = bad, .ud = ud};
    int rc = GW_OK;
    for (int res = GW_ROLLUP_5M; rc == GW_OK && res <= GW_ROLLUP_1H; res++) {
        v.res = res;
        rc = gw_store_rollup_days(t, res, verify_day, &v);
    }
    gw_ds_cols_free(&v.c);
    gw_ds_profiles_free(&v.ps);
    if (values)
        *values = v.values;
    return rc;
}
