/* exemplars.c - the in-memory exemplar store (gpuwatch/exemplars.h).
 *
 * Layout, after Prometheus' CircularExemplarStorage:
 *   ring[cap]   exemplars in insertion order; next_slot is where the next
 *               one goes (overwriting the oldest once the ring is full);
 *               each entry links to the next newer exemplar of its series;
 *   ser[]       one entry per series holding exemplars: canonical labels,
 *               oldest and newest ring slot; freed entries are chained;
 *   ht[]        open addressing (linear probing, backward-shift delete)
 *               from the series' label hash to ser index + 1.
 * The ring and ser grow by doubling up to cap, so an idle store costs
 * almost nothing whatever cap is. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/exemplars.h"

#define NONE UINT32_MAX

struct ent {
    int64_t t;
    double v;
    uint32_t next;          /* next newer exemplar of the series, NONE: newest */
    uint32_t ser;           /* series entry, NONE: an empty slot */
    uint8_t *lab;           /* canonical exemplar labels, owned (NULL: none) */
    uint32_t llen;
};

struct sent {
    uint64_t hash;
    uint8_t *lab;           /* canonical series labels, owned */
    uint32_t llen;
    uint32_t oldest, newest;
    uint32_t next_free;     /* free list link when unused */
};

struct gw_exemplars {
    pthread_rwlock_t lock;
    uint64_t cap;
    struct ent *ring;
    uint32_t ring_len, ring_alloc;    /* used slots, allocated slots */
    uint32_t next_slot;
    struct sent *ser;
    uint32_t ser_len, ser_alloc, free_ser, n_series;
    uint32_t *ht;                     /* ser index + 1, 0 empty */
    uint32_t ht_mask;                 /* ht size - 1 (0: no table yet) */
    uint64_t appended, out_of_order;
};

struct gw_exemplars *gw_exemplars_new(uint64_t cap)
{
    if (cap > GW_EXEMPLARS_MAX_CAP)
        return NULL;
    struct gw_exemplars *ex = calloc(1, sizeof *ex);
    if (!ex)
        return NULL;
    if (pthread_rwlock_init(&ex->lock, NULL) != 0) {
        free(ex);
        return NULL;
    }
    ex->cap = cap;
    ex->free_ser = NONE;
    return ex;
}

void gw_exemplars_free(struct gw_exemplars *ex)
{
    if (!ex)
        return;
    for (uint32_t i = 0; i < ex->ring_alloc; i++)
        free(ex->ring[i].lab);
    for (uint32_t i = 0; i < ex->ser_len; i++)
        free(ex->ser[i].lab);
    free(ex->ring);
    free(ex->ser);
    free(ex->ht);
    pthread_rwlock_destroy(&ex->lock);
    free(ex);
}

/* ---- the series table ---- */

static uint32_t ht_find(const struct gw_exemplars *ex, uint64_t hash, const uint8_t *lab, size_t len, uint32_t *slot)
{
    if (!ex->ht_mask)
        return NONE;
    for (uint32_t i = (uint32_t)hash & ex->ht_mask;; i = (i + 1) & ex->ht_mask) {
        uint32_t e = ex->ht[i];
        if (e == 0) {
            *slot = i;
            return NONE;
        }
        const struct sent *s = &ex->ser[e - 1];
        if (s->hash == hash && s->llen == len && memcmp(s->lab, lab, len) == 0) {
            *slot = i;
            return e - 1;
        }
    }
}

static int ht_grow(struct gw_exemplars *ex)
{
    uint32_t size = ex->ht_mask ? (ex->ht_mask + 1) * 2 : 64;
    uint32_t *nt = calloc(size, sizeof *nt);
    if (!nt)
        return GW_ENOMEM;
    for (uint32_t k = 0; ex->ht_mask && k <= ex->ht_mask; k++) {
        uint32_t e = ex->ht[k];
        if (e == 0)
            continue;
        uint32_t i = (uint32_t)ex->ser[e - 1].hash & (size - 1);
        while (nt[i])
            i = (i + 1) & (size - 1);
        nt[i] = e;
    }
    free(ex->ht);
    ex->ht = nt;
    ex->ht_mask = size - 1;
    return GW_OK;
}

/* Removes the table slot i (backward-shift deletion keeps probes intact). */
static void ht_remove(struct gw_exemplars *ex, uint32_t i)
{
    uint32_t j = i;
    for (;;) {
        j = (j + 1) & ex->ht_mask;
        uint32_t e = ex->ht[j];
        if (e == 0)
            break;
        uint32_t home = (uint32_t)ex->ser[e - 1].hash & ex->ht_mask;
        /* e may move to i when i lies cyclically in [home, j) */
        if (((j - home) & ex->ht_mask) >= ((j - i) & ex->ht_mask)) {
            ex->ht[i] = e;
            i = j;
        }
    }
    ex->ht[i] = 0;
}

static void series_drop(struct gw_exemplars *ex, uint32_t si)
{
    struct sent *s = &ex->ser[si];
    uint32_t slot = 0;
    if (ht_find(ex, s->hash, s->lab, s->llen, &slot) == si)
        ht_remove(ex, slot);
    free(s->lab);
    s->lab = NULL;
    s->next_free = ex->free_ser;
    ex->free_ser = si;
    ex->n_series--;
}

/* The series entry for canonical labels, created (with *created = 1) when
 * missing. NONE on ENOMEM. */
static uint32_t series_get(struct gw_exemplars *ex, const uint8_t *lab, size_t len, int *created)
{
    uint64_t hash = gw_labels_hash(lab, len);
    uint32_t slot = 0, si = ht_find(ex, hash, lab, len, &slot);
    *created = 0;
    if (si != NONE)
        return si;
    if ((uint64_t)(ex->n_series + 1) * 2 > (uint64_t)ex->ht_mask + (ex->ht_mask ? 1 : 0)) {
        if (ht_grow(ex) != GW_OK)
            return NONE;
        (void)ht_find(ex, hash, lab, len, &slot);
    }
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy)
        return NONE;
    memcpy(copy, lab, len);
    if (ex->free_ser != NONE) {
        si = ex->free_ser;
        ex->free_ser = ex->ser[si].next_free;
    } else {
        if (ex->ser_len == ex->ser_alloc) {
            uint32_t na = ex->ser_alloc ? ex->ser_alloc * 2 : 16;
            struct sent *ns = realloc(ex->ser, (size_t)na * sizeof *ns);
            if (!ns) {
                free(copy);
                return NONE;
            }
            ex->ser = ns;
            ex->ser_alloc = na;
        }
        si = ex->ser_len++;
    }
    ex->ser[si] = (struct sent){.hash = hash, .lab = copy, .llen = (uint32_t)len, .oldest = NONE, .newest = NONE,
                                .next_free = NONE};
    ex->ht[slot] = si + 1;
    ex->n_series++;
    *created = 1;
    return si;
}

/* ---- adding ---- */

/* Bytes of the UTF-8 sequence at p[0..n), or 1 for an invalid byte (Go's
 * utf8.DecodeRune: overlong forms, surrogates and values past U+10FFFF
 * are invalid). */
static size_t rune_len(const unsigned char *p, size_t n)
{
    unsigned char b = p[0], lo = 0x80, hi = 0xBF;
    size_t need;
    if (b < 0x80)
        return 1;
    if (b >= 0xC2 && b <= 0xDF) {
        need = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
        need = 3;
        lo = b == 0xE0 ? 0xA0 : 0x80;
        hi = b == 0xED ? 0x9F : 0xBF;
    } else if (b >= 0xF0 && b <= 0xF4) {
        need = 4;
        lo = b == 0xF0 ? 0x90 : 0x80;
        hi = b == 0xF4 ? 0x8F : 0xBF;
    } else {
        return 1;
    }
    if (n < need || p[1] < lo || p[1] > hi)
        return 1;
    for (size_t k = 2; k < need; k++)
        if (p[k] < 0x80 || p[k] > 0xBF)
            return 1;
    return need;
}

/* Runes of s as Go's utf8.RuneCountInString counts them (an invalid byte
 * is one rune), so a rune is never more than 4 bytes. */
static size_t runes(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t r = 0;
    for (size_t i = 0; i < n; r++)
        i += rune_len(p + i, n - i);
    return r;
}

static int label_cmp(const void *a, const void *b)
{
    const struct gw_label *x = a, *y = b;
    size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
    int c = memcmp(x->name, y->name, n);
    if (c)
        return c;
    return x->name_len < y->name_len ? -1 : x->name_len > y->name_len;
}

/* Drops empty-valued labels, sorts the rest; the new count, or SIZE_MAX
 * when names and values hold more than GW_EXEMPLAR_MAX_LABEL_RUNES runes. */
static size_t exemplar_labels(struct gw_label *ls, size_t n)
{
    size_t k = 0, total = 0;
    for (size_t i = 0; i < n; i++) {
        if (ls[i].value_len == 0)
            continue;
        total += runes(ls[i].name, ls[i].name_len) + runes(ls[i].value, ls[i].value_len);
        if (total > GW_EXEMPLAR_MAX_LABEL_RUNES)
            return SIZE_MAX;
        ls[k++] = ls[i];
    }
    if (k > 1)
        qsort(ls, k, sizeof *ls, label_cmp);
    return k;
}

/* The ring slot for the next exemplar, its previous occupant unlinked
 * from that series (and the series dropped when it was its last). NONE on
 * ENOMEM. */
static uint32_t take_slot(struct gw_exemplars *ex)
{
    uint32_t i = ex->next_slot;
    if (i == ex->ring_alloc) {      /* still growing (ring_len == ring_alloc < cap) */
        uint64_t na = ex->ring_alloc ? (uint64_t)ex->ring_alloc * 2 : 64;
        if (na > ex->cap)
            na = ex->cap;
        struct ent *nr = realloc(ex->ring, (size_t)na * sizeof *nr);
        if (!nr)
            return NONE;
        memset(nr + ex->ring_alloc, 0, (size_t)(na - ex->ring_alloc) * sizeof *nr);
        ex->ring = nr;
        ex->ring_alloc = (uint32_t)na;
    }
    if (i < ex->ring_len) {         /* full: overwrite the oldest exemplar */
        struct ent *old = &ex->ring[i];
        if (old->ser != NONE && old->next == NONE)
            series_drop(ex, old->ser);
        else if (old->ser != NONE)
            ex->ser[old->ser].oldest = old->next;
        old->ser = NONE;
    } else {
        ex->ring_len++;
    }
    ex->next_slot = (uint32_t)((i + 1) % ex->cap);
    return i;
}

static int same_exemplar(const struct ent *e, const uint8_t *lab, size_t llen, int64_t t, double v)
{
    return e->t == t && memcmp(&e->v, &v, sizeof v) == 0 && e->llen == llen &&
           (llen == 0 || memcmp(e->lab, lab, llen) == 0);
}

/* Under the write lock: lab/llen are the exemplar's canonical labels. */
static int add_locked(struct gw_exemplars *ex, const uint8_t *series, size_t len, const uint8_t *lab, size_t llen,
                      int64_t t, double v, enum gw_exemplar_outcome *out)
{
    uint64_t hash = gw_labels_hash(series, len);
    uint32_t slot = 0, si = ht_find(ex, hash, series, len, &slot);
    if (si != NONE) {
        const struct ent *newest = &ex->ring[ex->ser[si].newest];
        if (same_exemplar(newest, lab, llen, t, v)) {
            *out = GW_EXEMPLAR_DUPLICATE;
            return GW_OK;
        }
        if (t <= newest->t) {
            ex->out_of_order++;
            *out = GW_EXEMPLAR_OUT_OF_ORDER;
            return GW_OK;
        }
    }
    /* room for the labels first, so that ENOMEM changes nothing */
    uint8_t *buf = NULL;
    if (llen > 0) {
        if (!(buf = malloc(llen)))
            return GW_ENOMEM;
        memcpy(buf, lab, llen);
    }
    uint32_t ri = take_slot(ex);
    int created = 0;
    if (ri != NONE)
        si = series_get(ex, series, len, &created);
    if (ri == NONE || si == NONE) {
        free(buf);
        return GW_ENOMEM;   /* a taken slot stays empty (ser NONE): only the oldest is lost */
    }
    struct ent *e = &ex->ring[ri];
    free(e->lab);
    *e = (struct ent){.t = t, .v = v, .next = NONE, .ser = si, .lab = buf, .llen = (uint32_t)llen};
    struct sent *s = &ex->ser[si];
    if (created || s->newest == NONE)
        s->oldest = ri;
    else
        ex->ring[s->newest].next = ri;
    s->newest = ri;
    ex->appended++;
    *out = GW_EXEMPLAR_STORED;
    return GW_OK;
}

int gw_exemplars_add(struct gw_exemplars *ex, const uint8_t *series, size_t len, struct gw_label *ls, size_t n,
                     int64_t t, double v, enum gw_exemplar_outcome *out)
{
    uint8_t stack[1536];
    if (!ex || ex->cap == 0) {
        *out = GW_EXEMPLAR_DISABLED;
        return GW_OK;
    }
    n = exemplar_labels(ls, n);
    if (n == SIZE_MAX) {
        *out = GW_EXEMPLAR_TOO_LONG;
        return GW_OK;
    }
    /* 128 runes are at most 512 bytes, plus two 2-byte varints for each
     * of at most 128 labels (an empty name needs a non-empty value) */
    size_t need = gw_labels_encoded_size(ls, n);
    if (need > sizeof stack)
        return GW_ENOMEM;    /* cannot happen within the rune limit */
    size_t llen = gw_labels_encode(ls, n, stack);
    pthread_rwlock_wrlock(&ex->lock);
    int rc = add_locked(ex, series, len, stack, llen, t, v, out);
    pthread_rwlock_unlock(&ex->lock);
    return rc;
}

static void note_problem(struct gw_exemplars_result *res, const char *what, const struct gw_rw_series *rs)
{
    const char *name = "";
    uint32_t nl = 0;
    if (res->first_problem[0])
        return;
    for (uint32_t i = 0; i < rs->n_labels; i++)
        if (rs->labels[i].name_len == 8 && memcmp(rs->labels[i].name, "__name__", 8) == 0) {
            name = rs->labels[i].value;
            nl = rs->labels[i].value_len;
        }
    snprintf(res->first_problem, sizeof res->first_problem, "%s (series %.*s)", what, (int)(nl > 60 ? 60 : nl),
             name);
}

/* The exemplars of one series with canonical labels lab[0..len). */
static int append_series(struct gw_exemplars *ex, const struct gw_rw_series *rs, const uint8_t *lab, size_t len,
                         struct gw_exemplars_result *res)
{
    for (uint32_t j = 0; j < rs->n_exemplars; j++) {
        struct gw_rw_exemplar *e = &rs->exemplars[j];
        enum gw_exemplar_outcome o;
        int rc = gw_exemplars_add(ex, lab, len, e->labels, e->n_labels, e->t, e->v, &o);
        if (rc != GW_OK)
            return rc;
        switch (o) {
        case GW_EXEMPLAR_STORED: res->stored++; break;
        case GW_EXEMPLAR_DUPLICATE: res->duplicate++; break;
        case GW_EXEMPLAR_OUT_OF_ORDER:
            res->out_of_order++;
            note_problem(res, "out of order exemplar", rs);
            break;
        case GW_EXEMPLAR_TOO_LONG:
            res->too_long++;
            note_problem(res, "exemplar labels over 128 runes", rs);
            break;
        case GW_EXEMPLAR_DISABLED: res->disabled++; break;
        }
    }
    return GW_OK;
}

int gw_exemplars_append(struct gw_exemplars *ex, struct gw_rw_request *req, struct gw_exemplars_result *res)
{
    uint8_t stack[4096];
    memset(res, 0, sizeof *res);
    int rc = GW_OK;
    for (size_t i = 0; i < req->n_series && rc == GW_OK; i++) {
        struct gw_rw_series *rs = &req->series[i];
        if (rs->n_exemplars == 0)
            continue;
        if (!ex || ex->cap == 0) {
            res->disabled += rs->n_exemplars;
            continue;
        }
        struct gw_error le = {0};
        if (gw_labels_normalize(rs->labels, rs->n_labels, &le) != GW_OK) {
            res->invalid_series += rs->n_exemplars;
            if (!res->first_problem[0])
                snprintf(res->first_problem, sizeof res->first_problem, "exemplar of an invalid series: %.100s",
                         le.msg);
            continue;
        }
        size_t len = gw_labels_encoded_size(rs->labels, rs->n_labels);
        uint8_t *lab = len <= sizeof stack ? stack : malloc(len);
        if (!lab)
            return GW_ENOMEM;
        len = gw_labels_encode(rs->labels, rs->n_labels, lab);
        rc = append_series(ex, rs, lab, len, res);
        if (lab != stack)
            free(lab);
    }
    return rc;
}

/* ---- reading ---- */

static int matches_some_set(const struct sent *s, const struct gw_matcher *const *sets, const size_t *lens,
                            size_t n_sets)
{
    for (size_t i = 0; i < n_sets; i++)
        if (gw_matchers_match_labels(sets[i], lens[i], s->lab, s->llen))
            return 1;
    return 0;
}

static int ser_cmp(const void *a, const void *b)
{
    const struct sent *x = *(const struct sent *const *)a, *y = *(const struct sent *const *)b;
    return gw_labels_compare(x->lab, x->llen, y->lab, y->llen);
}

/* Calls cb for series s with its exemplars in [start, end]; e is scratch
 * for every exemplar held. */
static int emit_series(const struct gw_exemplars *ex, const struct sent *s, int64_t start, int64_t end,
                       struct gw_exemplar *e, gw_exemplars_cb cb, void *ud)
{
    size_t n = 0;
    for (uint32_t k = s->oldest; k != NONE && ex->ring[k].t <= end; k = ex->ring[k].next) {
        const struct ent *r = &ex->ring[k];
        if (r->t < start)
            continue;
        e[n++] = (struct gw_exemplar){.labels = r->lab ? r->lab : (const uint8_t *)"", .labels_len = r->llen,
                                      .v = r->v, .t = r->t};
    }
    return n ? cb(ud, s->lab, s->llen, e, n) : GW_OK;
}

int gw_exemplars_select(struct gw_exemplars *ex, const struct gw_matcher *const *sets, const size_t *lens,
                        size_t n_sets, int64_t start, int64_t end, gw_exemplars_cb cb, void *ud)
{
    if (!ex || ex->cap == 0 || n_sets == 0)
        return GW_OK;
    pthread_rwlock_rdlock(&ex->lock);
    int rc = GW_OK;
    const struct sent **pick = malloc(((size_t)ex->n_series + 1) * sizeof *pick);
    struct gw_exemplar *e = malloc(((size_t)ex->ring_len + 1) * sizeof *e);
    size_t np = 0;
    if (!pick || !e)
        rc = GW_ENOMEM;
    for (uint32_t si = 0; rc == GW_OK && si < ex->ser_len; si++) {
        const struct sent *s = &ex->ser[si];
        if (!s->lab || s->newest == NONE)
            continue;
        if (ex->ring[s->oldest].t > end || ex->ring[s->newest].t < start)
            continue;
        if (matches_some_set(s, sets, lens, n_sets))
            pick[np++] = s;
    }
    if (rc == GW_OK && np > 1)
        qsort(pick, np, sizeof *pick, ser_cmp);
    for (size_t i = 0; rc == GW_OK && i < np; i++)
        rc = emit_series(ex, pick[i], start, end, e, cb, ud);
    pthread_rwlock_unlock(&ex->lock);
    free(pick);
    free(e);
    return rc;
}

void gw_exemplars_stats(struct gw_exemplars *ex, struct gw_exemplars_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!ex)
        return;
    pthread_rwlock_rdlock(&ex->lock);
    out->cap = ex->cap;
    out->in_storage = ex->ring_len;
    out->series = ex->n_series;
    out->appended = ex->appended;
    out->out_of_order = ex->out_of_order;
    if (ex->ring_len > 0) {
        uint32_t oldest = ex->ring_len == ex->cap ? ex->next_slot : 0;
        if (ex->ring[oldest].ser != NONE)
            out->oldest_ms = ex->ring[oldest].t;
    }
    pthread_rwlock_unlock(&ex->lock);
}
