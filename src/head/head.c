/* head.c - the in-memory head (see head.h): two chained hash tables (label
 * hash -> series, sid -> series) that double when they fill, per-series
 * open XOR chunk and pending list, and a dirty list of series with chunks
 * waiting for the store. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/block.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/head.h"

struct gw_head {
    struct gw_buf scratch;            /* block encoding when freezing */
    int no_freeze;                    /* replay: keep XOR only */
    int64_t window_ms;
    uint32_t max_samples;
    struct gw_head_series **by_hash;  /* buckets */
    struct gw_head_series **by_sid;
    size_t nbuckets;                  /* power of two, same for both tables */
    size_t count;
    struct gw_head_series *dirty;     /* series with pending chunks */
};

static size_t sid_bucket(uint64_t sid, size_t nb)
{
    uint64_t x = sid * 0x9E3779B97F4A7C15ull;
    return (size_t)(x >> 32) & (nb - 1);
}

struct gw_head *gw_head_new(int64_t window_ms, uint32_t max_samples)
{
    struct gw_head *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    gw_buf_init(&h->scratch, 0);
    h->window_ms = window_ms > 0 ? window_ms : 2 * 3600 * 1000;
    h->max_samples = max_samples && max_samples <= GW_XOR_MAX_SAMPLES ? max_samples : 1024;
    h->nbuckets = 1024;
    h->by_hash = calloc(h->nbuckets, sizeof *h->by_hash);
    h->by_sid = calloc(h->nbuckets, sizeof *h->by_sid);
    if (!h->by_hash || !h->by_sid) {
        free(h->by_hash);
        free(h->by_sid);
        free(h);
        return NULL;
    }
    return h;
}

static void hchunk_init(struct gw_hchunk *c)
{
    memset(c, 0, sizeof *c);
    gw_xor_init(&c->x);
}

static void hchunk_free(struct gw_hchunk *c)
{
    free(c->frozen);
    gw_xor_free(&c->x);
    hchunk_init(c);
}

size_t gw_hchunk_mem(const struct gw_hchunk *c)
{
    return c->frozen_cap + gw_xor_mem(&c->x);
}

int gw_hchunk_clone(struct gw_hchunk *dst, const struct gw_hchunk *src)
{
    hchunk_init(dst);
    if (src->frozen_len) {
        dst->frozen = malloc(src->frozen_len);
        if (!dst->frozen) return GW_ENOMEM;
        memcpy(dst->frozen, src->frozen, src->frozen_len);
        dst->frozen_len = dst->frozen_cap = src->frozen_len;
        dst->frozen_n = src->frozen_n;
    }
    int rc = gw_xor_clone(&dst->x, &src->x);
    if (rc) {
        hchunk_free(dst);
        return rc;
    }
    return GW_OK;
}

void gw_hchunk_release(struct gw_hchunk *c) { hchunk_free(c); }

int gw_hchunk_decode(const struct gw_hchunk *c, int64_t *t, double *v, size_t cap, size_t *n)
{
    size_t got = 0, off = 0;
    while (off < c->frozen_len) {
        uint64_t len;
        size_t k = gw_uvarint_get(c->frozen + off, c->frozen_len - off, &len);
        if (!k || len > c->frozen_len - off - k) return GW_ECORRUPT;
        off += k;
        size_t m = 0;
        int rc = gw_block_decode(c->frozen + off, (size_t)len, t + got, v + got, cap - got, &m);
        if (rc) return rc;
        got += m;
        off += (size_t)len;
    }
    if (c->x.n) {
        if (cap - got < c->x.n) return GW_ELIMIT;
        struct gw_xor_chunk tmp = c->x;
        size_t blen;
        const uint8_t *b = gw_xor_bytes(&tmp, &blen);
        struct gw_xor_iter it;
        int rc = gw_xor_iter_init(&it, b, blen);
        if (rc) return rc;
        while (gw_xor_iter_next(&it, &t[got], &v[got])) got++;
        if (it.err) return it.err;
    }
    *n = got;
    return GW_OK;
}

/* Re-encodes the XOR part as a block appended to the frozen list. */
static int hchunk_freeze(struct gw_head *h, struct gw_hchunk *c)
{
    int64_t tl[GW_HEAD_FREEZE_SAMPLES];
    double vl[GW_HEAD_FREEZE_SAMPLES];
    int64_t *t = tl;
    double *v = vl;
    size_t n = 0, want = c->x.n;
    /* more than the usual 64 after a replay, which does not freeze */
    if (want > GW_HEAD_FREEZE_SAMPLES) {
        t = malloc(want * sizeof *t);
        v = malloc(want * sizeof *v);
    }
    int rc = GW_ENOMEM;
    if (!t || !v) goto out;
    struct gw_xor_chunk tmp = c->x;
    size_t blen;
    const uint8_t *b = gw_xor_bytes(&tmp, &blen);
    struct gw_xor_iter it;
    if ((rc = gw_xor_iter_init(&it, b, blen))) goto out;
    while (n < want && gw_xor_iter_next(&it, &t[n], &v[n])) n++;
    rc = GW_ECORRUPT;
    if (it.err || n != want) goto out;
    gw_buf_reset(&h->scratch);
    rc = gw_block_encode(t, v, n, &h->scratch);
out:
    if (t != tl) free(t);
    if (v != vl) free(v);
    if (rc) return rc;
    uint8_t lb[10];
    size_t ll = gw_uvarint_put(lb, h->scratch.len);
    size_t need = (size_t)c->frozen_len + ll + h->scratch.len;
    if (need > UINT32_MAX) return GW_ELIMIT;
    if (need > c->frozen_cap) {
        size_t ncap = need + need / 4 + 16;
        uint8_t *p = realloc(c->frozen, ncap);
        if (!p) return GW_ENOMEM;
        c->frozen = p;
        c->frozen_cap = (uint32_t)ncap;
    }
    memcpy(c->frozen + c->frozen_len, lb, ll);
    memcpy(c->frozen + c->frozen_len + ll, h->scratch.data, h->scratch.len);
    c->frozen_len = (uint32_t)need;
    c->frozen_n += (uint32_t)n;
    gw_xor_free(&c->x);
    gw_xor_init(&c->x);
    return GW_OK;
}

static void free_pending(struct gw_head_series *s)
{
    struct gw_head_chunk *c = s->pending;
    while (c) {
        struct gw_head_chunk *n = c->next;
        hchunk_free(&c->x);
        free(c);
        c = n;
    }
    s->pending = s->pending_tail = NULL;
}

void gw_head_set_freeze(struct gw_head *h, int on) { h->no_freeze = !on; }

void gw_head_free(struct gw_head *h)
{
    if (!h) return;
    for (size_t i = 0; i < h->nbuckets; i++) {
        struct gw_head_series *s = h->by_sid[i];
        while (s) {
            struct gw_head_series *n = s->snext;
            hchunk_free(&s->open);
            free_pending(s);
            free(s);
            s = n;
        }
    }
    free(h->by_hash);
    free(h->by_sid);
    gw_buf_free(&h->scratch);
    free(h);
}

void gw_head_key(const uint8_t *labels, size_t len, uint64_t *lo, uint64_t *hi)
{
    struct gw_hash128 x = gw_hash128(labels, len);
    *lo = x.lo;
    *hi = x.hi;
}

struct gw_head_series *gw_head_find(struct gw_head *h, uint64_t lo, uint64_t hi)
{
    for (struct gw_head_series *s = h->by_hash[lo & (h->nbuckets - 1)]; s; s = s->hnext)
        if (s->hash_lo == lo && s->hash_hi == hi) return s;
    return NULL;
}

void gw_head_prefetch(const struct gw_head *h, uint64_t lo)
{
    struct gw_head_series *const *b = &h->by_hash[lo & (h->nbuckets - 1)];
    __builtin_prefetch(b);
    if (*b) __builtin_prefetch(*b);
}

struct gw_head_series *gw_head_find_sid(struct gw_head *h, uint64_t sid)
{
    for (struct gw_head_series *s = h->by_sid[sid_bucket(sid, h->nbuckets)]; s; s = s->snext)
        if (s->sid == sid) return s;
    return NULL;
}

static int grow(struct gw_head *h)
{
    size_t nb = h->nbuckets * 2;
    struct gw_head_series **bh = calloc(nb, sizeof *bh), **bs = calloc(nb, sizeof *bs);
    if (!bh || !bs) {
        free(bh);
        free(bs);
        return GW_ENOMEM;
    }
    for (size_t i = 0; i < h->nbuckets; i++) {
        struct gw_head_series *s = h->by_sid[i];
        while (s) {
            struct gw_head_series *n = s->snext;
            size_t b = sid_bucket(s->sid, nb);
            s->snext = bs[b];
            bs[b] = s;
            size_t hb = s->hash_lo & (nb - 1);
            s->hnext = bh[hb];
            bh[hb] = s;
            s = n;
        }
    }
    free(h->by_hash);
    free(h->by_sid);
    h->by_hash = bh;
    h->by_sid = bs;
    h->nbuckets = nb;
    return GW_OK;
}

struct gw_head_series *gw_head_add(struct gw_head *h, uint64_t sid, uint64_t lo, uint64_t hi, uint32_t node_id,
                                   uint16_t gpu, int64_t persisted_maxt)
{
    if (h->count >= h->nbuckets && grow(h) != GW_OK) return NULL;
    struct gw_head_series *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->sid = sid;
    s->hash_lo = lo;
    s->hash_hi = hi;
    s->node_id = node_id;
    s->gpu = gpu;
    hchunk_init(&s->open);
    s->persisted_maxt = persisted_maxt;
    s->last_t = persisted_maxt;
    s->last_v = 0;
    s->open_wal_pos = UINT64_MAX;
    size_t hb = lo & (h->nbuckets - 1);
    s->hnext = h->by_hash[hb];
    h->by_hash[hb] = s;
    size_t sb = sid_bucket(sid, h->nbuckets);
    s->snext = h->by_sid[sb];
    h->by_sid[sb] = s;
    h->count++;
    return s;
}

static uint64_t dbits(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

enum gw_head_append_result gw_head_check(const struct gw_head_series *s, int64_t t, double v)
{
    if (s->last_t == INT64_MIN || t > s->last_t) return GW_HEAD_ACCEPTED;
    if (t < s->last_t) return GW_HEAD_OUT_OF_ORDER;
    /* Same timestamp as the newest sample, which is only in the store: its
     * value is not at hand here, so let the caller look it up. */
    if (t == s->persisted_maxt && gw_hchunk_n(&s->open) == 0 && !s->pending) return GW_HEAD_OUT_OF_ORDER;
    return dbits(v) == s->last_v ? GW_HEAD_DUPLICATE : GW_HEAD_CONFLICT;
}

static int chunk_lookup(const struct gw_hchunk *c, int64_t t, uint64_t *bits)
{
    size_t n = gw_hchunk_n(c);
    if (n == 0) return 0;
    int64_t *tb = malloc(n * sizeof *tb);
    double *vb = malloc(n * sizeof *vb);
    int found = 0;
    size_t got = 0;
    if (tb && vb && gw_hchunk_decode(c, tb, vb, n, &got) == GW_OK) {
        for (size_t i = 0; i < got && tb[i] <= t; i++)
            if (tb[i] == t) {
                memcpy(bits, &vb[i], sizeof *bits);
                found = 1;
                break;
            }
    }
    free(tb);
    free(vb);
    return found;
}

int gw_head_lookup(const struct gw_head_series *s, int64_t t, uint64_t *bits)
{
    if (gw_hchunk_n(&s->open) && t >= s->open_mint) return chunk_lookup(&s->open, t, bits);
    for (const struct gw_head_chunk *c = s->pending; c; c = c->next)
        if (t >= c->mint && t <= c->maxt) return chunk_lookup(&c->x, t, bits);
    return 0;
}

static void list_dirty(struct gw_head *h, struct gw_head_series *s)
{
    if (s->on_dirty) return;
    s->on_dirty = 1;
    s->dnext = h->dirty;
    h->dirty = s;
}

int gw_head_cut(struct gw_head *h, struct gw_head_series *s)
{
    if (gw_hchunk_n(&s->open) == 0) return GW_OK;
    struct gw_head_chunk *c = calloc(1, sizeof *c);
    if (!c) return GW_ENOMEM;
    c->x = s->open;           /* move the chunk */
    c->mint = s->open_mint;
    c->maxt = s->last_t;
    c->wal_pos = s->open_wal_pos;
    hchunk_init(&s->open);
    s->open_wal_pos = UINT64_MAX;
    if (s->pending_tail) s->pending_tail->next = c;
    else s->pending = c;
    s->pending_tail = c;
    list_dirty(h, s);
    return GW_OK;
}

static int64_t window_end_of(const struct gw_head *h, int64_t t)
{
    int64_t w = h->window_ms;
    int64_t k = t / w;
    if (t < 0 && t % w) k--;          /* floor for negative timestamps */
    return (k + 1) * w;
}

int gw_head_append(struct gw_head *h, struct gw_head_series *s, int64_t t, double v, uint64_t wal_pos,
                   enum gw_head_append_result *res)
{
    enum gw_head_append_result r = gw_head_check(s, t, v);
    *res = r;
    if (r != GW_HEAD_ACCEPTED) return GW_OK;
    uint32_t held = gw_hchunk_n(&s->open);
    if (held > 0 && (t >= s->window_end || held >= h->max_samples)) {
        int rc = gw_head_cut(h, s);
        if (rc) return rc;
        held = 0;
    }
    if (held == 0) {
        s->open_mint = t;
        s->window_end = window_end_of(h, t);
        s->open_wal_pos = wal_pos;
    }
    int rc = gw_xor_append(&s->open.x, t, v);
    if (rc) return rc;
    s->last_t = t;
    s->last_v = dbits(v);
    if (s->open.x.n >= GW_HEAD_FREEZE_SAMPLES && !h->no_freeze) return hchunk_freeze(h, &s->open);
    return GW_OK;
}

size_t gw_head_cut_idle(struct gw_head *h, int64_t t)
{
    size_t n = 0;
    for (size_t i = 0; i < h->nbuckets; i++)
        for (struct gw_head_series *s = h->by_sid[i]; s; s = s->snext)
            if (gw_hchunk_n(&s->open) > 0 && s->window_end <= t && gw_head_cut(h, s) == GW_OK) n++;
    return n;
}

size_t gw_head_cut_all(struct gw_head *h)
{
    size_t n = 0;
    for (size_t i = 0; i < h->nbuckets; i++)
        for (struct gw_head_series *s = h->by_sid[i]; s; s = s->snext)
            if (gw_hchunk_n(&s->open) > 0 && gw_head_cut(h, s) == GW_OK) n++;
    return n;
}

size_t gw_head_evict_idle(struct gw_head *h, int64_t t)
{
    size_t n = 0;
    for (size_t i = 0; i < h->nbuckets; i++) {
        struct gw_head_series **pp = &h->by_sid[i];
        while (*pp) {
            struct gw_head_series *s = *pp;
            if (gw_hchunk_n(&s->open) || s->pending || s->on_dirty || s->last_t >= t) {
                pp = &s->snext;
                continue;
            }
            *pp = s->snext;
            struct gw_head_series **hp = &h->by_hash[s->hash_lo & (h->nbuckets - 1)];
            while (*hp && *hp != s) hp = &(*hp)->hnext;
            if (*hp) *hp = s->hnext;
            hchunk_free(&s->open);
            free(s);
            h->count--;
            n++;
        }
    }
    return n;
}

struct gw_head_series *gw_head_take_dirty(struct gw_head *h)
{
    struct gw_head_series *d = h->dirty;
    h->dirty = NULL;
    return d;
}

void gw_head_pending_done(struct gw_head *h, struct gw_head_series *s, struct gw_head_chunk *upto)
{
    s->on_dirty = 0;
    if (upto) {
        struct gw_head_chunk *c = s->pending;
        for (;;) {
            struct gw_head_chunk *n = c->next;
            if (c->maxt > s->persisted_maxt) s->persisted_maxt = c->maxt;
            int last = (c == upto);
            hchunk_free(&c->x);
            free(c);
            c = n;
            if (last || !c) break;
        }
        s->pending = c;
        if (!c) s->pending_tail = NULL;
    }
    if (s->pending) list_dirty(h, s);
}

uint64_t gw_head_min_wal_pos(const struct gw_head *h)
{
    uint64_t m = UINT64_MAX;
    for (size_t i = 0; i < h->nbuckets; i++)
        for (const struct gw_head_series *s = h->by_sid[i]; s; s = s->snext) {
            if (gw_hchunk_n(&s->open) > 0 && s->open_wal_pos < m) m = s->open_wal_pos;
            for (const struct gw_head_chunk *c = s->pending; c; c = c->next)
                if (c->wal_pos < m) m = c->wal_pos;
        }
    return m;
}

void gw_head_stats(const struct gw_head *h, struct gw_head_stats *st)
{
    memset(st, 0, sizeof *st);
    st->bytes = h->nbuckets * 2 * sizeof(void *) + sizeof *h;
    for (size_t i = 0; i < h->nbuckets; i++)
        for (const struct gw_head_series *s = h->by_sid[i]; s; s = s->snext) {
            st->series++;
            st->bytes += sizeof *s + gw_hchunk_mem(&s->open);
            if (gw_hchunk_n(&s->open)) {
                st->open_chunks++;
                st->samples += gw_hchunk_n(&s->open);
            }
            for (const struct gw_head_chunk *c = s->pending; c; c = c->next) {
                st->pending_chunks++;
                st->samples += gw_hchunk_n(&c->x);
                st->bytes += sizeof *c + gw_hchunk_mem(&c->x);
            }
        }
}

void gw_head_each(struct gw_head *h, gw_head_series_cb cb, void *ud)
{
    for (size_t i = 0; i < h->nbuckets; i++)
        for (struct gw_head_series *s = h->by_sid[i]; s; s = s->snext) cb(ud, s);
}
