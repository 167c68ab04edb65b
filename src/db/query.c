/* query.c - reading the database: series selection by matchers (postings
 * algebra over the store's index), sample gathering from stored blocks and
 * the head (decoded by helper threads when there is more than one CPU:
 * several series in parallel, or the blocks of a single series; see
 * "reading the samples of selected series"), label names/values, metadata
 * and statistics. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "db_int.h"
#include "downsample_int.h"
#include "gpuwatch/block.h"
#include "gpuwatch/labels.h"

/* ---- postings for matchers (Prometheus PostingsForMatchers) ---- */

struct pred_ctx {
    const struct gw_matcher *m;
    int invert;
};

static int pred_fn(void *ud, const char *v, size_t len)
{
    struct pred_ctx *c = ud;
    int r = gw_matcher_matches(c->m, v, len);
    return c->invert ? !r : r;
}

/* Series having label m->name with a value for which (matches(m) != invert). */
static int postings_values(struct gw_store_txn *t, const struct gw_matcher *m, int invert, struct gw_postings *out)
{
    if (!invert && m->type == GW_MATCH_EQ)
        return gw_store_postings_get(t, m->name, m->name_len, m->value, m->value_len, out);
    if (invert && m->type == GW_MATCH_NEQ)
        return gw_store_postings_get(t, m->name, m->name_len, m->value, m->value_len, out);
    if (!invert && m->type == GW_MATCH_RE && m->re_match_all)
        return gw_store_postings_any(t, m->name, m->name_len, out);
    struct pred_ctx pc = {.m = m, .invert = invert};
    return gw_store_postings_matching(t, m->name, m->name_len, pred_fn, &pc, out);
}

static int select_postings(struct gw_store_txn *t, const struct gw_matcher *ms, size_t n, struct gw_postings *out)
{
    struct gw_postings acc, tmp, cur;
    gw_postings_init(&acc);
    gw_postings_init(&tmp);
    gw_postings_init(&cur);
    int have = 0, rc = GW_OK;
    struct gw_postings sub;
    gw_postings_init(&sub);
    for (size_t i = 0; i < n && rc == GW_OK; i++) {
        const struct gw_matcher *m = &ms[i];
        if (gw_matcher_matches_empty(m)) {
            /* Matches series without the label too: remove the series
             * whose value does not match instead. */
            rc = postings_values(t, m, 1, &cur);
            if (rc) break;
            rc = gw_postings_merge(&sub, &cur, &tmp);
            if (rc) break;
            gw_postings_swap(&sub, &tmp);
        } else {
            rc = postings_values(t, m, 0, &cur);
            if (rc) break;
            if (!have) {
                gw_postings_swap(&acc, &cur);
                have = 1;
            } else {
                rc = gw_postings_intersect(&acc, &cur, &tmp);
                if (rc) break;
                gw_postings_swap(&acc, &tmp);
            }
        }
    }
    if (rc == GW_OK && !have) rc = gw_store_postings_all(t, &acc);
    if (rc == GW_OK && sub.n) {
        rc = gw_postings_subtract(&acc, &sub, &tmp);
        if (rc == GW_OK) gw_postings_swap(&acc, &tmp);
    }
    if (rc == GW_OK) gw_postings_swap(out, &acc);
    gw_postings_free(&acc);
    gw_postings_free(&tmp);
    gw_postings_free(&cur);
    gw_postings_free(&sub);
    return rc;
}

/* ---- samples ---- */

struct sample_vec {
    int64_t *t;
    double *v;
    size_t n, cap;
};

static int sv_push(struct sample_vec *s, int64_t t, double v)
{
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 256;
        int64_t *nt = realloc(s->t, nc * sizeof *nt);
        if (!nt) return GW_ENOMEM;
        s->t = nt;
        double *nv = realloc(s->v, nc * sizeof *nv);
        if (!nv) return GW_ENOMEM;
        s->v = nv;
        s->cap = nc;
    }
    s->t[s->n] = t;
    s->v[s->n] = v;
    s->n++;
    return GW_OK;
}

static void sv_free(struct sample_vec *s)
{
    free(s->t);
    free(s->v);
    memset(s, 0, sizeof *s);
}

/* ---- sample buffers kept between queries ----
 * The decoded samples of a series live in a buffer that a query drops at
 * its end; freed, its pages go back to the system (the allocator trims
 * its heaps) and the next query takes a page fault for every 4 KiB it
 * decodes into. Up to SV_POOL_N buffers of at most SV_POOL_ONE_MAX
 * samples each (SV_POOL_MAX_BYTES in all) are kept here instead and
 * handed to the next reader, whichever thread or query it is. */
#define SV_POOL_N 32
#define SV_POOL_ONE_MAX ((size_t)1 << 19)
#define SV_POOL_MAX_BYTES ((size_t)48 << 20)
#define SV_BYTES(cap) ((cap) * (sizeof(int64_t) + sizeof(double)))

static pthread_mutex_t sv_pool_mu = PTHREAD_MUTEX_INITIALIZER;
static struct sample_vec sv_pool[SV_POOL_N];
static size_t sv_pool_n, sv_pool_bytes;

/* Gives an unallocated s a kept buffer for want samples, if there is
 * one: the smallest that holds want, else the largest. */
static void sv_pool_take(struct sample_vec *s, size_t want)
{
    if (s->cap != 0) return;
    pthread_mutex_lock(&sv_pool_mu);
    if (sv_pool_n > 0) {
        size_t best = 0;
        for (size_t i = 1; i < sv_pool_n; i++) {
            size_t c = sv_pool[i].cap, b = sv_pool[best].cap;
            if (b >= want ? (c >= want && c < b) : c > b) best = i;
        }
        *s = sv_pool[best];
        sv_pool[best] = sv_pool[--sv_pool_n];
        sv_pool_bytes -= SV_BYTES(s->cap);
        s->n = 0;
    }
    pthread_mutex_unlock(&sv_pool_mu);
}

/* Keeps the buffer of s for a later reader (or frees it); s is emptied. */
static void sv_pool_put(struct sample_vec *s)
{
    if (s->cap == 0 || s->cap > SV_POOL_ONE_MAX) {
        sv_free(s);
        return;
    }
    pthread_mutex_lock(&sv_pool_mu);
    if (sv_pool_n < SV_POOL_N && sv_pool_bytes + SV_BYTES(s->cap) <= SV_POOL_MAX_BYTES) {
        sv_pool_bytes += SV_BYTES(s->cap);
        sv_pool[sv_pool_n++] = *s;
        memset(s, 0, sizeof *s);
    }
    pthread_mutex_unlock(&sv_pool_mu);
    sv_free(s);
}

/* One selected series: its labels (copied) and head samples (copied). */
struct sel {
    uint64_t sid;
    uint32_t node_id;
    uint16_t gpu;
    uint8_t *labels;
    size_t labels_len;
    struct sample_vec head;       /* samples from the head in range */
    int64_t head_mint, head_maxt; /* of all head data of the series */
    int in_head;
    struct gw_hchunk *copies;     /* head chunks copied under the mutex */
    size_t n_copies;
};

static int sel_cmp(const void *a, const void *b)
{
    const struct sel *x = a, *y = b;
    return gw_labels_compare(x->labels, x->labels_len, y->labels, y->labels_len);
}

static int sv_reserve(struct sample_vec *s, size_t extra);

/* Appends the samples of head chunk c in [mint, maxt] to dst, decoded in
 * place (the ones before mint skipped, stopping at the first after maxt). */
static int copy_chunk(struct sample_vec *dst, const struct gw_hchunk *c, int64_t mint, int64_t maxt)
{
    size_t want = gw_hchunk_n(c);
    if (want == 0) return GW_OK;
    int rc = sv_reserve(dst, want);
    if (rc) return rc;
    int64_t *t = dst->t + dst->n;
    double *v = dst->v + dst->n;
    size_t n = 0, w = 0;
    if ((rc = gw_hchunk_decode(c, t, v, want, &n))) return rc;
    for (size_t i = 0; i < n; i++) {
        if (t[i] < mint) continue;
        if (t[i] > maxt) break;
        t[w] = t[i];
        v[w] = v[i];
        w++;
    }
    dst->n += w;
    return GW_OK;
}

/* has_data(): does a block of the series overlap [mint, maxt]? */
struct probe_ctx {
    int64_t mint, maxt;
    int found;
};

/* Reads a block's header (count, first and last timestamp): 1 when it
 * overlaps [mint, maxt], 0 when it does not, or a negative error for a
 * corrupt header. */
static int block_overlaps(const uint8_t *b, size_t len, int64_t mint, int64_t maxt, uint32_t *n,
                          int64_t *mi, int64_t *ma)
{
    int rc = gw_block_info(b, len, n, mi, ma);
    if (rc) return rc;
    return !(*ma < mint || *mi > maxt);
}

static int probe_cb(void *ud, int64_t block_mint, const uint8_t *b, size_t len)
{
    struct probe_ctx *c = ud;
    (void)block_mint;
    uint32_t n;
    int64_t mi, ma;
    int rc = block_overlaps(b, len, c->mint, c->maxt, &n, &mi, &ma);
    if (rc <= 0) return rc;
    c->found = 1;
    return 1;
}

/* Merges stored samples a (time-ordered blocks) and head samples b into out,
 * dropping repeated timestamps (a chunk seen both pending and stored). */
static int merge_samples(const struct sample_vec *a, const struct sample_vec *b, struct sample_vec *out)
{
    size_t i = 0, j = 0;
    int64_t last = INT64_MIN;
    int have = 0, rc;
    while (i < a->n || j < b->n) {
        int64_t t;
        double v;
        if (j >= b->n || (i < a->n && a->t[i] <= b->t[j])) {
            t = a->t[i];
            v = a->v[i];
            i++;
        } else {
            t = b->t[j];
            v = b->v[j];
            j++;
        }
        if (have && t <= last) continue;
        if ((rc = sv_push(out, t, v))) return rc;
        last = t;
        have = 1;
    }
    return GW_OK;
}

static int is_sorted_unique(const struct sample_vec *s)
{
    for (size_t i = 1; i < s->n; i++)
        if (s->t[i] <= s->t[i - 1]) return 0;
    return 1;
}

static void free_sels(struct sel *sels, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(sels[i].labels);
        sv_free(&sels[i].head);
        for (size_t k = 0; k < sels[i].n_copies; k++) gw_hchunk_release(&sels[i].copies[k]);
        free(sels[i].copies);
    }
    free(sels);
}

/* Collects the selected series with labels and (optionally) head samples.
 *
 * Order matters twice. No store transaction is held while the ingest mutex
 * is taken (ingest takes the mutex first and the store's locks second), and
 * the head is copied before the caller opens the transaction it reads
 * blocks with: the flusher commits a chunk to the store before it drops it
 * from the head, so every sample is in the head copy or in that later
 * snapshot (repeats are dropped by timestamp). */
static int collect(struct gw_db *db, const struct gw_matcher *ms, size_t nm, int64_t mint, int64_t maxt,
                   int with_samples, struct sel **out, size_t *n_out)
{
    struct gw_store_txn *t = NULL;
    int rc = gw_store_read_begin(db->store, &t, NULL);
    if (rc) return rc;
    struct gw_postings p;
    gw_postings_init(&p);
    rc = select_postings(t, ms, nm, &p);
    if (rc) {
        gw_postings_free(&p);
        gw_store_read_end(t);
        return rc;
    }
    struct sel *sels = calloc(p.n ? p.n : 1, sizeof *sels);
    if (!sels) {
        gw_postings_free(&p);
        gw_store_read_end(t);
        return GW_ENOMEM;
    }
    size_t n = 0;
    for (size_t i = 0; i < p.n; i++) {
        struct gw_store_series ss;
        if (gw_store_series_get(t, p.ids[i], &ss) != GW_OK) continue;
        /* The index may hold series whose labels no longer match a regex
         * shortcut; check every matcher on the labels themselves. */
        if (!gw_matchers_match_labels(ms, nm, ss.labels, ss.labels_len)) continue;
        struct sel *s = &sels[n];
        s->sid = ss.sid;
        s->node_id = ss.node_id;
        s->gpu = ss.gpu;
        s->labels = malloc(ss.labels_len ? ss.labels_len : 1);
        if (!s->labels) {
            rc = GW_ENOMEM;
            break;
        }
        memcpy(s->labels, ss.labels, ss.labels_len);
        s->labels_len = ss.labels_len;
        s->head_mint = INT64_MAX;
        s->head_maxt = INT64_MIN;
        n++;
    }
    gw_postings_free(&p);
    gw_store_read_end(t);
    if (rc == GW_OK && db->head) {
        /* Under the ingest mutex only copy the chunks (memcpy); decode after. */
        pthread_mutex_lock(&db->mu);
        for (size_t i = 0; i < n && rc == GW_OK; i++) {
            struct gw_head_series *hs = gw_head_find_sid(db->head, sels[i].sid);
            if (!hs) continue;
            size_t want = gw_hchunk_n(&hs->open) ? 1 : 0;
            for (struct gw_head_chunk *c = hs->pending; c; c = c->next) want++;
            if (with_samples && want) {
                sels[i].copies = calloc(want, sizeof *sels[i].copies);
                if (!sels[i].copies) {
                    rc = GW_ENOMEM;
                    break;
                }
            }
            for (struct gw_head_chunk *c = hs->pending; c && rc == GW_OK; c = c->next) {
                if (c->mint < sels[i].head_mint) sels[i].head_mint = c->mint;
                if (c->maxt > sels[i].head_maxt) sels[i].head_maxt = c->maxt;
                if (with_samples && c->maxt >= mint && c->mint <= maxt) {
                    rc = gw_hchunk_clone(&sels[i].copies[sels[i].n_copies], &c->x);
                    if (rc == GW_OK) sels[i].n_copies++;
                }
            }
            if (rc == GW_OK && gw_hchunk_n(&hs->open)) {
                if (hs->open_mint < sels[i].head_mint) sels[i].head_mint = hs->open_mint;
                if (hs->last_t > sels[i].head_maxt) sels[i].head_maxt = hs->last_t;
                if (with_samples && hs->last_t >= mint && hs->open_mint <= maxt) {
                    rc = gw_hchunk_clone(&sels[i].copies[sels[i].n_copies], &hs->open);
                    if (rc == GW_OK) sels[i].n_copies++;
                }
            }
            sels[i].in_head = sels[i].head_mint <= sels[i].head_maxt;
        }
        pthread_mutex_unlock(&db->mu);
        /* the copies are decoded by whichever thread reads the series
         * (head_decode) */
    }
    if (rc) {
        free_sels(sels, n);
        return rc;
    }
    *out = sels;
    *n_out = n;
    return GW_OK;
}

static int64_t block_lookback(const struct gw_db *db)
{
    return db->o.block_window_ms;
}

static int has_data(struct gw_db *db, struct gw_store_txn *t, const struct sel *s, int64_t mint, int64_t maxt)
{
    if (s->in_head && s->head_maxt >= mint && s->head_mint <= maxt) return 1;
    struct probe_ctx bc = {.mint = mint, .maxt = maxt, .found = 0};
    int64_t lo = mint > INT64_MIN + block_lookback(db) ? mint - block_lookback(db) : INT64_MIN;
    gw_store_blocks_get(t, s->node_id, s->sid, lo, maxt, probe_cb, &bc);
    return bc.found;
}

/* ---- reading the samples of selected series ----
 *
 * One series is read by read_series(): its stored blocks overlapping
 * [mint, maxt] are decoded straight into a growing sample vector (no copy
 * per sample; only the first and last block are trimmed to the range),
 * then the head samples are appended (or merged when they overlap the
 * stored ones: a chunk seen both pending and stored).
 *
 * With several series and more than one CPU, helper threads decode series
 * ahead of the caller's callback: every thread (the caller's included)
 * takes the next undecoded series index, decodes it into one of W slots
 * (series i uses slot i % W) with its own read transaction, and marks it
 * ready; the caller runs the callbacks strictly in series order, each
 * after that series is ready, so the callback sees exactly the sequence
 * of the single-threaded read and is never called concurrently. A thread
 * only takes series i while i < next callback + W, which bounds memory to
 * W decoded series. Helpers begin their transaction before taking work,
 * so the caller never waits for a helper that is itself waiting (e.g. on
 * a store map resize, which waits for the caller's transaction to end):
 * the caller then decodes everything itself. */

#define PAR_MAX_HELPERS 3

struct rdr {
    struct sample_vec stored, merged;
    const struct sample_vec *res;
};

static int sv_reserve(struct sample_vec *s, size_t extra)
{
    if (extra > SIZE_MAX / 2 - s->n)
        return GW_ENOMEM;
    size_t need = s->n + extra;
    if (need <= s->cap) return GW_OK;
    size_t nc = s->cap ? s->cap : 256;
    while (nc < need) nc *= 2;
    if (s->n == 0) {   /* nothing to keep: no copy of the old contents */
        free(s->t);
        free(s->v);
        s->t = NULL;
        s->v = NULL;
        s->cap = 0;
    }
    int64_t *nt = realloc(s->t, nc * sizeof *nt);
    if (!nt) return GW_ENOMEM;
    s->t = nt;
    double *nv = realloc(s->v, nc * sizeof *nv);
    if (!nv) return GW_ENOMEM;
    s->v = nv;
    s->cap = nc;
    return GW_OK;
}

/* Room for the first block of a series (n samples in [mi, ma]) and, at
 * its sampling rate, for the rest of [mint, maxt] (capped at
 * SV_GUESS_MAX samples): one allocation instead of a doubling series of
 * copies into fresh pages. 3 days at 15 s in 2-hour blocks of 480
 * samples: 17,280 reserved at the first block instead of 7 reallocations. */
#define SV_GUESS_MAX (1u << 19)

static int sv_reserve_first(struct sample_vec *s, uint32_t n, int64_t mi, int64_t ma, int64_t mint, int64_t maxt)
{
    size_t want = n;
    if (s->n == 0 && n > 1 && ma > mi && maxt > mi) {
        int64_t from = mi > mint ? mi : mint;
        double guess = (double)n * ((double)maxt - (double)from) / ((double)ma - (double)mi) + (double)n;
        if (guess > (double)SV_GUESS_MAX) guess = (double)SV_GUESS_MAX;
        if (guess > (double)want) want = (size_t)guess;
    }
    if (s->n == 0) sv_pool_take(s, want);
    return sv_reserve(s, want);
}

struct dec_ctx {
    struct sample_vec *out;
    int64_t mint, maxt;
    int disorder;       /* a block did not start after the previous one's end */
};

/* Notes whether the samples appended at out->t[n0..] start after the ones
 * before them (within a block, decoded times strictly ascend). */
static void note_order(struct dec_ctx *c, size_t n0)
{
    const struct sample_vec *o = c->out;
    if (n0 > 0 && o->n > n0 && o->t[n0 - 1] >= o->t[n0]) c->disorder = 1;
}

/* ---- timestamp columns, decoded once per reader ----
 * Series scraped together share one timestamp column per blob (store
 * format 3), and a query reads many series of one node: each column is
 * decoded the first time a reader meets it and kept, keyed by its address
 * in the map (fixed while the reader's transaction lasts: one cache per
 * thread and transaction). Beyond TS_CACHE_MAX_BYTES of kept timestamps,
 * further columns are decoded into a scratch array every time. */
#define TS_CACHE_MAX_BYTES (32u << 20)

struct ts_ent {
    const uint8_t *col;           /* NULL: free slot */
    int64_t *t;
    uint32_t n;
};

struct ts_cache {
    struct ts_ent *e;
    size_t cap, n, bytes;
    int64_t *scratch;             /* an uncached column */
    size_t scratch_cap;
};

static void ts_cache_free(struct ts_cache *c)
{
    for (size_t i = 0; i < c->cap; i++) free(c->e[i].t);
    free(c->e);
    free(c->scratch);
    memset(c, 0, sizeof *c);
}

static size_t ts_slot(const uint8_t *col, size_t cap)
{
    uint64_t h = (uint64_t)(uintptr_t)col * UINT64_C(0x9e3779b97f4a7c15);
    return (size_t)(h >> 32) & (cap - 1);
}

static int ts_cache_grow(struct ts_cache *c)
{
    size_t nc = c->cap ? 2 * c->cap : 64;
    struct ts_ent *ne = calloc(nc, sizeof *ne);
    if (!ne) return GW_ENOMEM;
    for (size_t i = 0; i < c->cap; i++) {
        if (!c->e[i].col) continue;
        size_t j = ts_slot(c->e[i].col, nc);
        while (ne[j].col) j = (j + 1) & (nc - 1);
        ne[j] = c->e[i];
    }
    free(c->e);
    c->e = ne;
    c->cap = nc;
    return GW_OK;
}

/* The decoded timestamps of column col (n of them, from its header). */
static int ts_cache_get(struct ts_cache *c, const uint8_t *col, size_t col_len, uint32_t n, const int64_t **t)
{
    size_t j = 0;
    if (c->cap) {
        for (j = ts_slot(col, c->cap); c->e[j].col; j = (j + 1) & (c->cap - 1)) {
            if (c->e[j].col == col) {
                if (c->e[j].n != n) return GW_ECORRUPT;
                *t = c->e[j].t;
                return GW_OK;
            }
        }
    }
    size_t got = 0;
    int rc;
    if (c->bytes + (size_t)n * sizeof(int64_t) > TS_CACHE_MAX_BYTES) {
        if (c->scratch_cap < n) {
            int64_t *ns = realloc(c->scratch, (size_t)n * sizeof *ns);
            if (!ns) return GW_ENOMEM;
            c->scratch = ns;
            c->scratch_cap = n;
        }
        if ((rc = gw_block_ts_decode(col, col_len, c->scratch, n, &got))) return rc;
        if (got != n) return GW_ECORRUPT;
        *t = c->scratch;
        return GW_OK;
    }
    int64_t *d = malloc((size_t)n * sizeof *d);
    if (!d) return GW_ENOMEM;
    rc = gw_block_ts_decode(col, col_len, d, n, &got);
    if (rc == GW_OK && got != n) rc = GW_ECORRUPT;
    if (rc == GW_OK && 2 * (c->n + 1) > c->cap) rc = ts_cache_grow(c);
    if (rc) {
        free(d);
        return rc;
    }
    for (j = ts_slot(col, c->cap); c->e[j].col; j = (j + 1) & (c->cap - 1)) {}
    c->e[j] = (struct ts_ent){.col = col, .t = d, .n = n};
    c->n++;
    c->bytes += (size_t)n * sizeof *d;
    *t = d;
    return GW_OK;
}

/* Decodes one block into out (appended), keeping [mint, maxt]. */
static int dec_block_cb(void *ud, int64_t block_mint, const uint8_t *b, size_t len)
{
    struct dec_ctx *c = ud;
    (void)block_mint;
    uint32_t n;
    int64_t mi, ma;
    int rc = block_overlaps(b, len, c->mint, c->maxt, &n, &mi, &ma);
    if (rc <= 0) return rc;
    if ((rc = sv_reserve_first(c->out, n, mi, ma, c->mint, c->maxt))) return rc;
    struct sample_vec *o = c->out;
    size_t got = 0;
    rc = gw_block_decode(b, len, o->t + o->n, o->v + o->n, o->cap - o->n, &got);
    if (rc) return rc;
    size_t n0 = o->n;
    if (mi >= c->mint && ma <= c->maxt) {
        o->n += got;
        note_order(c, n0);
        return GW_OK;
    }
    /* Partly in range: keep the samples inside (decoded times ascend). */
    int64_t *t = o->t + o->n;
    double *v = o->v + o->n;
    size_t lo = 0, hi = got;
    while (lo < hi && t[lo] < c->mint) lo++;
    while (hi > lo && t[hi - 1] > c->maxt) hi--;
    if (lo > 0 && hi > lo) {
        memmove(t, t + lo, (hi - lo) * sizeof *t);
        memmove(v, v + lo, (hi - lo) * sizeof *v);
    }
    o->n += hi - lo;
    note_order(c, n0);
    return GW_OK;
}

struct part_ctx_dec {
    struct dec_ctx d;
    struct ts_cache *tc;
};

/* One block from gw_store_block_parts_get: a whole block as dec_block_cb
 * does, a value part with its column's timestamps from the cache. */
static int dec_part_cb(void *ud, const struct gw_store_block_part *bp)
{
    struct part_ctx_dec *c = ud;
    if (!bp->col) return dec_block_cb(&c->d, bp->window_start, bp->block, bp->len);
    uint32_t n;
    int64_t mi, ma;
    int rc = block_overlaps(bp->col, bp->col_len, c->d.mint, c->d.maxt, &n, &mi, &ma);
    if (rc <= 0) return rc;
    const int64_t *ts;
    if ((rc = ts_cache_get(c->tc, bp->col, bp->col_len, n, &ts))) return rc;
    struct sample_vec *o = c->d.out;
    if ((rc = sv_reserve_first(o, n, mi, ma, c->d.mint, c->d.maxt))) return rc;
    double *v = o->v + o->n;
    if ((rc = gw_block_values_decode(bp->val, bp->val_len, n, v))) return rc;
    size_t lo = 0, hi = n;
    if (mi < c->d.mint)
        while (lo < hi && ts[lo] < c->d.mint) lo++;
    if (ma > c->d.maxt)
        while (hi > lo && ts[hi - 1] > c->d.maxt) hi--;
    if (hi > lo) {
        memcpy(o->t + o->n, ts + lo, (hi - lo) * sizeof *ts);
        if (lo > 0) memmove(v, v + lo, (hi - lo) * sizeof *v);
    }
    size_t n0 = o->n;
    o->n += hi - lo;
    note_order(&c->d, n0);
    return GW_OK;
}

/* Decodes the head chunk copies of s (taken by collect) into s->head,
 * keeping [mint, maxt], and frees them. */
static int head_decode(struct sel *s, int64_t mint, int64_t maxt)
{
    int rc = GW_OK;
    for (size_t k = 0; k < s->n_copies && rc == GW_OK; k++) rc = copy_chunk(&s->head, &s->copies[k], mint, maxt);
    for (size_t k = 0; k < s->n_copies; k++) gw_hchunk_release(&s->copies[k]);
    free(s->copies);
    s->copies = NULL;
    s->n_copies = 0;
    return rc;
}

/* Adds the head samples of s (decoded here) to the stored ones in
 * r->stored (in time order without repeats unless disorder) and points
 * r->res at the result. */
static int add_head(struct sel *s, const struct gw_db_select *q, struct rdr *r, int disorder)
{
    int rc = head_decode(s, q->mint, q->maxt);
    if (rc) return rc;
    r->merged.n = 0;
    r->res = &r->stored;
    const struct sample_vec *st = &r->stored, *hd = &s->head;
    if (disorder) {
        if (hd->n == 0) {
            struct sample_vec empty = {0};
            if ((rc = merge_samples(st, &empty, &r->merged))) return rc;
            r->res = &r->merged;
            return GW_OK;
        }
    } else if (hd->n == 0) {
        return GW_OK;
    } else if (st->n == 0 && is_sorted_unique(hd)) {
        r->res = hd;
        return GW_OK;
    } else if (hd->t[0] > st->t[st->n - 1] && is_sorted_unique(hd)) {
        /* the usual case: head samples follow the stored ones */
        if ((rc = sv_reserve(&r->stored, hd->n))) return rc;
        memcpy(r->stored.t + r->stored.n, hd->t, hd->n * sizeof *hd->t);
        memcpy(r->stored.v + r->stored.n, hd->v, hd->n * sizeof *hd->v);
        r->stored.n += hd->n;
        return GW_OK;
    }
    if ((rc = merge_samples(st, hd, &r->merged))) return rc;
    r->res = &r->merged;
    return GW_OK;
}

/* Samples of s in [q->mint, q->maxt] into r->res (valid until the next
 * read into r). */
static int read_series(struct gw_store_txn *t, struct ts_cache *tc, struct sel *s, const struct gw_db_select *q,
                       int64_t lo, struct rdr *r)
{
    r->stored.n = 0;
    struct part_ctx_dec dc = {.d = {.out = &r->stored, .mint = q->mint, .maxt = q->maxt}, .tc = tc};
    int rc = gw_store_block_parts_get(t, s->node_id, s->sid, lo, q->maxt, dec_part_cb, &dc);
    if (rc && rc != 1) return rc;
    return add_head(s, q, r, dc.d.disorder);
}

/* ---- one series, its blocks decoded by several threads ----
 * The blocks overlapping the range are copied first (the store's block
 * pointer is valid only during its callback), each gets its place in the
 * output from the running sum of the counts in the block headers, the list
 * is cut into parts of about equal sample counts, one per thread, and the
 * ranges are trimmed afterwards. */
struct blk {
    size_t pos, len, off;   /* bytes at l->bytes + pos; samples at off */
    uint32_t n;
    int64_t mi, ma;
};

struct blk_list {
    struct blk *b;
    size_t n, cap, total;
    uint8_t *bytes;         /* copies of the blocks (valid only in the callback) */
    size_t nbytes, capbytes;
    int64_t mint, maxt;
};

static int gather_cb(void *ud, int64_t block_mint, const uint8_t *b, size_t len)
{
    struct blk_list *l = ud;
    (void)block_mint;
    uint32_t n;
    int64_t mi, ma;
    int rc = block_overlaps(b, len, l->mint, l->maxt, &n, &mi, &ma);
    if (rc <= 0) return rc;
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 32;
        struct blk *nb = realloc(l->b, nc * sizeof *nb);
        if (!nb) return GW_ENOMEM;
        l->b = nb;
        l->cap = nc;
    }
    if ((size_t)n > SIZE_MAX / 4 - l->total || len > SIZE_MAX / 4 - l->nbytes) return GW_ENOMEM;
    if (l->nbytes + len > l->capbytes) {
        size_t nc = l->capbytes ? l->capbytes : 4096;
        while (nc < l->nbytes + len) nc *= 2;
        uint8_t *nb = realloc(l->bytes, nc);
        if (!nb) return GW_ENOMEM;
        l->bytes = nb;
        l->capbytes = nc;
    }
    memcpy(l->bytes + l->nbytes, b, len);
    l->b[l->n++] = (struct blk){.pos = l->nbytes, .len = len, .off = l->total, .n = n, .mi = mi, .ma = ma};
    l->nbytes += len;
    l->total += n;
    return GW_OK;
}

struct blk_job {
    const struct blk_list *l;
    struct sample_vec *out;
    size_t from, to;
    int rc;
};

static void *blk_decode(void *arg)
{
    struct blk_job *j = arg;
    j->rc = GW_OK;
    for (size_t i = j->from; i < j->to && j->rc == GW_OK; i++) {
        const struct blk *b = &j->l->b[i];
        size_t got = 0;
        j->rc = gw_block_decode(j->l->bytes + b->pos, b->len, j->out->t + b->off, j->out->v + b->off, b->n, &got);
        if (j->rc == GW_OK && got != b->n) j->rc = GW_ECORRUPT;
    }
    return NULL;
}

#define BLK_PAR_MIN_BLOCKS 4
#define BLK_PAR_MIN_SAMPLES 4096

static size_t cpu_helpers(void);

static int read_series_split(struct gw_store_txn *t, struct sel *s, const struct gw_db_select *q, int64_t lo,
                             struct rdr *r)
{
    struct blk_list l = {.mint = q->mint, .maxt = q->maxt};
    int rc = gw_store_blocks_get(t, s->node_id, s->sid, lo, q->maxt, gather_cb, &l);
    if (rc && rc != 1) {
        free(l.b);
        free(l.bytes);
        return rc;
    }
    size_t helpers = cpu_helpers();
    if (helpers > l.n / 2) helpers = l.n / 2;
    if (l.n < BLK_PAR_MIN_BLOCKS || l.total < BLK_PAR_MIN_SAMPLES) helpers = 0;   /* not worth a thread */
    r->stored.n = 0;
    sv_pool_take(&r->stored, l.total);
    if ((rc = sv_reserve(&r->stored, l.total))) {
        free(l.b);
        free(l.bytes);
        return rc;
    }
    struct blk_job jobs[PAR_MAX_HELPERS + 1];
    pthread_t th[PAR_MAX_HELPERS];
    size_t parts = helpers + 1, from = 0;
    for (size_t k = 0; k < parts; k++) {
        /* part k ends at the first block whose end passes (k+1)/parts of the samples */
        size_t to = from;
        size_t goal = k + 1 == parts ? l.total : l.total / parts * (k + 1);
        while (to < l.n && (k + 1 == parts || l.b[to].off + l.b[to].n <= goal)) to++;
        if (to == from && to < l.n && k + 1 < parts) to++;
        jobs[k] = (struct blk_job){.l = &l, .out = &r->stored, .from = from, .to = to, .rc = GW_OK};
        from = to;
    }
    size_t started = 0;
    for (size_t k = 1; k < parts; k++) {
        if (jobs[k].from == jobs[k].to) continue;
        if (pthread_create(&th[started], NULL, blk_decode, &jobs[k]) != 0) {
            blk_decode(&jobs[k]);
            continue;
        }
        started++;
    }
    blk_decode(&jobs[0]);
    for (size_t k = 0; k < started; k++) pthread_join(th[k], NULL);
    for (size_t k = 0; k < parts && rc == GW_OK; k++) rc = jobs[k].rc;
    if (rc == GW_OK) {
        /* keep [mint, maxt] of every block, in block order */
        size_t w = 0;
        int disorder = 0;
        int64_t *tt = r->stored.t;
        double *vv = r->stored.v;
        for (size_t i = 0; i < l.n; i++) {
            const struct blk *b = &l.b[i];
            size_t a = b->off, e = b->off + b->n;
            if (b->mi < q->mint)
                while (a < e && tt[a] < q->mint) a++;
            if (b->ma > q->maxt)
                while (e > a && tt[e - 1] > q->maxt) e--;
            if (e > a && w > 0 && tt[w - 1] >= tt[a]) disorder = 1;
            if (a != w && e > a) {
                memmove(tt + w, tt + a, (e - a) * sizeof *tt);
                memmove(vv + w, vv + a, (e - a) * sizeof *vv);
            }
            w += e - a;
        }
        r->stored.n = w;
        rc = add_head(s, q, r, disorder);
    }
    free(l.b);
    free(l.bytes);
    return rc;
}

static void rdr_free(struct rdr *r)
{
    sv_pool_put(&r->stored);
    sv_pool_put(&r->merged);
}

#define PAR_SLOTS 16

struct par {
    struct gw_db *db;
    const struct gw_db_select *q;
    struct sel *sels;
    size_t n;
    int64_t lo;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t next;          /* next series index to decode */
    size_t cb_next;       /* next series index to hand to the callback */
    int stop;
    uint8_t *ready;       /* per series: decoded (rcs holds the result) */
    int *rcs;
    struct rdr slots[PAR_SLOTS];
};

/* Takes the next series index that may be decoded now; 0 when none. Under mu. */
static int par_take(struct par *p, size_t *i)
{
    if (p->stop || p->next >= p->n || p->next >= p->cb_next + PAR_SLOTS) return 0;
    *i = p->next++;
    return 1;
}

static void par_decode(struct par *p, struct gw_store_txn *t, struct ts_cache *tc, size_t i)
{
    int rc = read_series(t, tc, &p->sels[i], p->q, p->lo, &p->slots[i % PAR_SLOTS]);
    pthread_mutex_lock(&p->mu);
    p->rcs[i] = rc;
    p->ready[i] = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

static void *par_helper(void *arg)
{
    struct par *p = arg;
    struct gw_store_txn *t = NULL;
    if (gw_store_read_begin(p->db->store, &t, NULL) != GW_OK) return NULL;
    struct ts_cache tc = {0};
    pthread_mutex_lock(&p->mu);
    for (;;) {
        size_t i;
        if (par_take(p, &i)) {
            pthread_mutex_unlock(&p->mu);
            par_decode(p, t, &tc, i);
            pthread_mutex_lock(&p->mu);
            continue;
        }
        if (p->stop || p->next >= p->n) break;
        pthread_cond_wait(&p->cv, &p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    ts_cache_free(&tc);
    gw_store_read_end(t);
    return NULL;
}

/* Helper threads worth starting: one less than the CPUs (at most 3). */
static size_t cpu_helpers(void)
{
    /* sysconf reads /sys/devices/system/cpu/online on every call: asked
     * once a second at most (1.6% of a 1-hour node_cpu_busy query) */
    static long cached_cpus;
    static int64_t cached_at;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
    long cpus = __atomic_load_n(&cached_cpus, __ATOMIC_RELAXED);
    if (cpus == 0 || (int64_t)now.tv_sec != __atomic_load_n(&cached_at, __ATOMIC_RELAXED)) {
        cpus = sysconf(_SC_NPROCESSORS_ONLN);
        if (cpus < 1) cpus = 1;
        __atomic_store_n(&cached_cpus, cpus, __ATOMIC_RELAXED);
        __atomic_store_n(&cached_at, (int64_t)now.tv_sec, __ATOMIC_RELAXED);
    }
    if (cpus < 2) return 0;
    size_t h = (size_t)cpus - 1;
    return h > PAR_MAX_HELPERS ? PAR_MAX_HELPERS : h;
}

/* Threads pay off only with enough to decode: below gw_db_par_min_series_ms of
 * series time (series x range; 100 series-hours, about 24,000 samples at
 * a 15 s scrape), starting and waking a helper costs more than it saves
 * and the series are read in the caller's thread with one timestamp
 * cache. Measured (wall, 2 CPUs): 10 series x 1 h 1.25 -> 0.82 ms
 * without helpers, 1 series x 3 d 0.99 -> 0.75 ms; 10 series x 1 d
 * 3.87 -> 3.73 ms and 64 x 3 d 21 -> 10 ms with them. */
double gw_db_par_min_series_ms = 100.0 * 3600 * 1000;

static int worth_threads(size_t n_series, const struct gw_db_select *q)
{
    return (double)n_series * ((double)q->maxt - (double)q->mint) >= gw_db_par_min_series_ms;
}

static size_t helper_count(size_t n_series)
{
    size_t h = cpu_helpers();
    if (n_series < 2) return 0;
    return h > n_series - 1 ? n_series - 1 : h;
}

static int select_error(struct gw_error *err, const struct sel *s, int rc)
{
    if (rc == GW_ELIMIT) return gw_error_set(err, GW_ELIMIT, "query processing would load too many samples into memory");
    return gw_error_set(err, rc, "cannot read blocks of series %llu: %s", (unsigned long long)s->sid, gw_strerror(rc));
}

/* The samples of every series (no sample budget) with helper threads.
 * *t is the caller's transaction; it is ended (and set to NULL) before the
 * helpers are joined. */
static int select_parallel(struct gw_db *db, const struct gw_db_select *q, struct sel *sels, size_t n, int64_t lo,
                           size_t helpers, struct gw_store_txn **t, gw_db_series_cb cb, void *ud,
                           struct gw_error *err)
{
    struct par *p = calloc(1, sizeof *p);
    if (!p) return gw_error_set(err, GW_ENOMEM, "cannot select series: %s", gw_strerror(GW_ENOMEM));
    p->db = db;
    p->q = q;
    p->sels = sels;
    p->n = n;
    p->lo = lo;
    p->ready = calloc(n, 1);
    p->rcs = calloc(n, sizeof *p->rcs);
    if (!p->ready || !p->rcs) {
        free(p->ready);
        free(p->rcs);
        free(p);
        return gw_error_set(err, GW_ENOMEM, "cannot select series: %s", gw_strerror(GW_ENOMEM));
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    pthread_t th[PAR_MAX_HELPERS];
    size_t started = 0;
    for (size_t k = 0; k < helpers; k++) {
        if (pthread_create(&th[k], NULL, par_helper, p) != 0) break;
        started++;
    }
    int rc = GW_OK;
    struct ts_cache tc = {0};
    for (size_t i = 0; i < n && rc == GW_OK; i++) {
        pthread_mutex_lock(&p->mu);
        while (!p->ready[i]) {
            size_t j;
            if (par_take(p, &j)) {
                pthread_mutex_unlock(&p->mu);
                par_decode(p, *t, &tc, j);
                pthread_mutex_lock(&p->mu);
            } else {
                pthread_cond_wait(&p->cv, &p->mu);
            }
        }
        int drc = p->rcs[i];
        pthread_mutex_unlock(&p->mu);
        if (drc) {
            rc = select_error(err, &sels[i], drc);
            break;
        }
        const struct sample_vec *res = p->slots[i % PAR_SLOTS].res;
        if (!(res->n == 0 && q->only_with_data)) {
            rc = cb(ud, sels[i].sid, sels[i].labels, sels[i].labels_len, res->t, res->v, res->n);
            if (rc == 1) {
                rc = GW_OK;
                break;
            }
        }
        pthread_mutex_lock(&p->mu);
        p->cb_next = i + 1;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    ts_cache_free(&tc);
    gw_store_read_end(*t);
    *t = NULL;
    for (size_t k = 0; k < started; k++) pthread_join(th[k], NULL);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    for (size_t k = 0; k < PAR_SLOTS; k++) rdr_free(&p->slots[k]);
    free(p->ready);
    free(p->rcs);
    free(p);
    return rc;
}

int gw_db_select(struct gw_db *db, const struct gw_db_select *q, gw_db_series_cb cb, void *ud, struct gw_error *err)
{
    if (q->view && q->view->kind != GW_DB_VIEW_RAW && q->with_samples)
        return gw_db_select_view(db, q, cb, ud, err); /* downsample_read.c */
    struct sel *sels = NULL;
    size_t n = 0;
    int rc = collect(db, q->matchers, q->n_matchers, q->mint, q->maxt, q->with_samples, &sels, &n);
    if (rc) return gw_error_set(err, rc, "cannot select series: %s", gw_strerror(rc));
    struct gw_store_txn *t = NULL;
    rc = gw_store_read_begin(db->store, &t, err);
    if (rc) {
        free_sels(sels, n);
        return rc;
    }
    qsort(sels, n, sizeof *sels, sel_cmp);
    uint64_t budget = q->max_samples;
    int64_t lo = q->mint > INT64_MIN + block_lookback(db) ? q->mint - block_lookback(db) : INT64_MIN;
    int threads = q->with_samples && q->max_samples == 0 && worth_threads(n, q);
    size_t helpers = threads ? helper_count(n) : 0;
    if (helpers) {
        rc = select_parallel(db, q, sels, n, lo, helpers, &t, cb, ud, err);
        free_sels(sels, n);
        gw_store_read_end(t);
        return rc;
    }
    struct rdr r;
    memset(&r, 0, sizeof r);
    struct ts_cache tc = {0};
    for (size_t i = 0; i < n; i++) {
        struct sel *s = &sels[i];
        if (!q->with_samples) {
            if (q->only_with_data && !has_data(db, t, s, q->mint, q->maxt)) continue;
            rc = cb(ud, s->sid, s->labels, s->labels_len, NULL, NULL, 0);
        } else {
            rc = threads ? read_series_split(t, s, q, lo, &r) : read_series(t, &tc, s, q, lo, &r);
            if (rc) {
                rc = select_error(err, s, rc);
                break;
            }
            const struct sample_vec *res = r.res;
            if (q->max_samples) {
                if (res->n > budget) {
                    rc = select_error(err, s, GW_ELIMIT);
                    break;
                }
                budget -= res->n;
            }
            if (res->n == 0 && q->only_with_data) continue;
            rc = cb(ud, s->sid, s->labels, s->labels_len, res->t, res->v, res->n);
        }
        if (rc == 1) {
            rc = GW_OK;
            break;
        }
        if (rc) break;
    }
    rdr_free(&r);
    ts_cache_free(&tc);
    free_sels(sels, n);
    gw_store_read_end(t);
    return rc;
}

/* ---- label names and values ---- */

struct strset {
    char **s;
    size_t *len;
    size_t n, cap;
};

static int strset_add(struct strset *ss, const char *s, size_t len)
{
    if (ss->n == ss->cap) {
        size_t nc = ss->cap ? ss->cap * 2 : 64;
        char **p = realloc(ss->s, nc * sizeof *p);
        if (!p) return GW_ENOMEM;
        ss->s = p;
        size_t *l = realloc(ss->len, nc * sizeof *l);
        if (!l) return GW_ENOMEM;
        ss->len = l;
        ss->cap = nc;
    }
    char *c = malloc(len + 1);
    if (!c) return GW_ENOMEM;
    memcpy(c, s, len);
    c[len] = 0;
    ss->s[ss->n] = c;
    ss->len[ss->n] = len;
    ss->n++;
    return GW_OK;
}

static int idx_cmp(const void *a, const void *b, void *arg)
{
    const struct strset *ss = arg;
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    size_t li = ss->len[i], lj = ss->len[j];
    int c = memcmp(ss->s[i], ss->s[j], li < lj ? li : lj);
    if (c) return c;
    return li < lj ? -1 : li > lj;
}

static int strset_emit(struct strset *ss, gw_db_string_cb cb, void *ud)
{
    int rc = GW_OK;
    size_t *idx = malloc((ss->n ? ss->n : 1) * sizeof *idx);
    if (!idx) return GW_ENOMEM;
    for (size_t i = 0; i < ss->n; i++) idx[i] = i;
    qsort_r(idx, ss->n, sizeof *idx, idx_cmp, ss);
    for (size_t k = 0; k < ss->n; k++) {
        size_t i = idx[k];
        if (k > 0) {
            size_t p = idx[k - 1];
            if (ss->len[p] == ss->len[i] && memcmp(ss->s[p], ss->s[i], ss->len[i]) == 0) continue;
        }
        rc = cb(ud, ss->s[i], ss->len[i]);
        if (rc == 1) {
            rc = GW_OK;
            break;
        }
        if (rc) break;
    }
    free(idx);
    return rc;
}

static void strset_free(struct strset *ss)
{
    for (size_t i = 0; i < ss->n; i++) free(ss->s[i]);
    free(ss->s);
    free(ss->len);
}

static int covers_all(int64_t mint, int64_t maxt)
{
    return mint == INT64_MIN && maxt == INT64_MAX;
}

/* Labels of every series selected by the sets (or all) with data in range. */
static int gather(struct gw_db *db, const struct gw_db_matcher_set *sets, size_t n_sets, int64_t mint,
                  int64_t maxt, const char *name, size_t name_len, struct strset *out)
{
    size_t rounds = n_sets ? n_sets : 1;
    int rc = GW_OK;
    for (size_t k = 0; k < rounds && rc == GW_OK; k++) {
        struct sel *sels = NULL;
        size_t n = 0;
        rc = collect(db, n_sets ? sets[k].matchers : NULL, n_sets ? sets[k].n : 0, mint, maxt, 0, &sels, &n);
        if (rc) break;
        struct gw_store_txn *t = NULL;
        if ((rc = gw_store_read_begin(db->store, &t, NULL))) {
            free_sels(sels, n);
            break;
        }
        for (size_t i = 0; i < n && rc == GW_OK; i++) {
            if (!covers_all(mint, maxt) && !has_data(db, t, &sels[i], mint, maxt)) continue;
            struct gw_label ls[GW_LABELS_MAX];
            size_t nl = 0;
            if (gw_labels_decode(sels[i].labels, sels[i].labels_len, ls, GW_LABELS_MAX, &nl) != GW_OK) continue;
            for (size_t j = 0; j < nl && rc == GW_OK; j++) {
                if (name) {
                    if (ls[j].name_len == name_len && memcmp(ls[j].name, name, name_len) == 0)
                        rc = strset_add(out, ls[j].value, ls[j].value_len);
                } else {
                    rc = strset_add(out, ls[j].name, ls[j].name_len);
                }
            }
        }
        gw_store_read_end(t);
        free_sels(sels, n);
    }
    return rc;
}

int gw_db_label_names(struct gw_db *db, const struct gw_db_matcher_set *sets, size_t n_sets, int64_t mint,
                      int64_t maxt, gw_db_string_cb cb, void *ud, struct gw_error *err)
{
    struct gw_store_txn *t = NULL;
    int rc = gw_store_read_begin(db->store, &t, err);
    if (rc) return rc;
    if (n_sets == 0 && covers_all(mint, maxt)) {
        rc = gw_store_label_names(t, (gw_store_value_cb)cb, ud);
        gw_store_read_end(t);
        return rc == 1 ? GW_OK : rc;
    }
    gw_store_read_end(t);
    struct strset ss = {0};
    rc = gather(db, sets, n_sets, mint, maxt, NULL, 0, &ss);
    if (rc == GW_OK) rc = strset_emit(&ss, cb, ud);
    strset_free(&ss);
    if (rc) gw_error_set(err, rc, "cannot list label names: %s", gw_strerror(rc));
    return rc;
}

int gw_db_label_values(struct gw_db *db, const char *name, size_t name_len, const struct gw_db_matcher_set *sets,
                       size_t n_sets, int64_t mint, int64_t maxt, gw_db_string_cb cb, void *ud, struct gw_error *err)
{
    struct gw_store_txn *t = NULL;
    int rc = gw_store_read_begin(db->store, &t, err);
    if (rc) return rc;
    if (n_sets == 0 && covers_all(mint, maxt)) {
        rc = gw_store_label_values(t, name, name_len, (gw_store_value_cb)cb, ud);
        gw_store_read_end(t);
        return rc == 1 ? GW_OK : rc;
    }
    gw_store_read_end(t);
    struct strset ss = {0};
    rc = gather(db, sets, n_sets, mint, maxt, name, name_len, &ss);
    if (rc == GW_OK) rc = strset_emit(&ss, cb, ud);
    strset_free(&ss);
    if (rc) gw_error_set(err, rc, "cannot list label values: %s", gw_strerror(rc));
    return rc;
}

int gw_db_metadata(struct gw_db *db, gw_db_metadata_cb cb, void *ud, struct gw_error *err)
{
    struct gw_store_txn *t = NULL;
    int rc = gw_store_read_begin(db->store, &t, err);
    if (rc) return rc;
    rc = gw_store_metadata_each(t, (gw_store_metadata_cb)cb, ud);
    gw_store_read_end(t);
    return rc == 1 ? GW_OK : rc;
}

/* ---- statistics ---- */

struct part_ctx {
    struct gw_db *db;
    struct gw_store_txn *t;
    gw_db_partition_cb cb;
    void *ud;
    struct gw_db_stats *st;
    int64_t meta_min_day, meta_max_day;   /* oldest / newest day spanned from its totals, or INT64_MIN */
};

struct count_ctx {
    uint64_t blocks, samples, bytes;
    int64_t mint, maxt;
};

static int count_block_cb(void *ud, uint64_t sid, const uint8_t *b, size_t len)
{
    struct count_ctx *c = ud;
    (void)sid;
    uint32_t n;
    int64_t mi, ma;
    if (gw_block_info(b, len, &n, &mi, &ma) != GW_OK) return GW_OK;
    c->blocks++;
    c->samples += n;
    c->bytes += len;
    if (mi < c->mint) c->mint = mi;
    if (ma > c->maxt) c->maxt = ma;
    return GW_OK;
}

static int part_cb(void *ud, const struct gw_store_partition *p)
{
    struct part_ctx *c = ud;
    struct count_ctx cc = {.mint = INT64_MAX, .maxt = INT64_MIN};
    char kb[64], ks[64], ky[64];
    snprintf(kb, sizeof kb, "stat.%lld.blocks", (long long)p->day);
    snprintf(ks, sizeof ks, "stat.%lld.samples", (long long)p->day);
    snprintf(ky, sizeof ky, "stat.%lld.bytes", (long long)p->day);
    if (gw_store_meta_get_u64(c->t, kb, &cc.blocks) == GW_OK && gw_store_meta_get_u64(c->t, ks, &cc.samples) == GW_OK &&
        gw_store_meta_get_u64(c->t, ky, &cc.bytes) == GW_OK) {
        /* totals kept by the flusher; the day's time span is the day */
        cc.mint = p->day * GW_DAY_MS;
        cc.maxt = cc.mint + GW_DAY_MS - 1;
        if (c->meta_min_day == INT64_MIN || p->day < c->meta_min_day) c->meta_min_day = p->day;
        if (c->meta_max_day == INT64_MIN || p->day > c->meta_max_day) c->meta_max_day = p->day;
    } else {
        cc.blocks = cc.samples = cc.bytes = 0;
        int rc = gw_store_partition_blocks_each(c->t, p->day, count_block_cb, &cc);
        if (rc) return rc;
    }
    if (c->st) {
        c->st->stored_samples += cc.samples;
        c->st->stored_block_bytes += cc.bytes;
        if (cc.mint < c->st->mint) c->st->mint = cc.mint;
        if (cc.maxt > c->st->maxt) c->st->maxt = cc.maxt;
    }
    if (c->cb) return c->cb(c->ud, p->day, cc.blocks, cc.samples, cc.bytes, p->bytes);
    return GW_OK;
}

int gw_db_partitions(struct gw_db *db, gw_db_partition_cb cb, void *ud, struct gw_error *err)
{
    struct gw_store_txn *t = NULL;
    int rc = gw_store_read_begin(db->store, &t, err);
    if (rc) return rc;
    struct part_ctx c = {.db = db, .t = t, .cb = cb, .ud = ud};
    rc = gw_store_partitions(t, part_cb, &c);
    gw_store_read_end(t);
    return rc;
}

/* The per-day totals give a day's span, not its samples' times: read the
 * blocks of the oldest and newest such day for the exact oldest and newest
 * sample times (one day each, block headers only). */
static int exact_edges(struct part_ctx *c)
{
    int64_t days[2] = {c->meta_min_day, c->meta_max_day};
    for (int i = 0; i < 2; i++) {
        if (days[i] == INT64_MIN || (i == 1 && days[1] == days[0])) continue;
        struct count_ctx cc = {.mint = INT64_MAX, .maxt = INT64_MIN};
        int rc = gw_store_partition_blocks_each(c->t, days[i], count_block_cb, &cc);
        if (rc) return rc;
        if (cc.blocks == 0) continue;
        if (c->st->mint == days[i] * GW_DAY_MS) c->st->mint = cc.mint;
        if (c->st->maxt == days[i] * GW_DAY_MS + GW_DAY_MS - 1) c->st->maxt = cc.maxt;
    }
    return GW_OK;
}

int gw_db_stats(struct gw_db *db, struct gw_db_stats *st, struct gw_error *err)
{
    memset(st, 0, sizeof *st);
    st->mint = INT64_MAX;
    st->maxt = INT64_MIN;
    struct gw_store_stats ss;
    int rc = gw_store_stats(db->store, &ss, err);
    if (rc) return rc;
    st->series = ss.series;
    st->store_file_bytes = ss.file_bytes;
    st->store_used_bytes = ss.used_bytes;
    st->store_map_bytes = ss.map_bytes;
    struct gw_store_txn *t = NULL;
    rc = gw_store_read_begin(db->store, &t, err);
    if (rc) return rc;
    struct part_ctx c = {.db = db, .t = t, .st = st, .meta_min_day = INT64_MIN, .meta_max_day = INT64_MIN};
    rc = gw_store_partitions(t, part_cb, &c);
    if (rc == GW_OK) rc = exact_edges(&c);
    gw_store_read_end(t);
    if (rc) return rc;
    if (db->head) {
        struct gw_head_stats hs;
        pthread_mutex_lock(&db->mu);
        gw_head_stats(db->head, &hs);
        st->appended = db->stat_appended;
        st->refused = db->stat_refused;
        if (db->max_t > st->maxt) st->maxt = db->max_t;
        pthread_mutex_unlock(&db->mu);
        st->head_series = hs.series;
        st->head_samples = hs.samples;
        st->head_bytes = hs.bytes;
        st->head_chunks = hs.open_chunks + hs.pending_chunks;
        pthread_rwlock_rdlock(&db->wal_rw);
        st->wal_bytes = db->wal ? gw_wal_disk_bytes(db->wal) : 0;
        pthread_rwlock_unlock(&db->wal_rw);
    }
    return GW_OK;
}

int gw_db_series_labels(struct gw_db *db, uint64_t sid, struct gw_buf *out, struct gw_error *err)
{
    struct gw_store_txn *t;
    int rc = gw_store_read_begin(db->store, &t, err);
    if (rc != GW_OK) return rc;
    struct gw_store_series ss;
    rc = gw_store_series_get(t, sid, &ss);
    if (rc == GW_OK) rc = gw_buf_append(out, ss.labels, ss.labels_len);
    else if (rc == GW_ENOTFOUND) gw_error_set(err, rc, "no series %llu", (unsigned long long)sid);
    gw_store_read_end(t);
    return rc;
}
