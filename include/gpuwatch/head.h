/* gpuwatch/head.h - the in-memory head: one entry per active series with
 * its open XOR chunk, the chunks cut from it that still wait to be written
 * to the store, and the newest sample (for duplicate/out-of-order checks).
 *
 * No locking and no I/O here: the db serializes every call with its ingest
 * mutex. Series are found by series id, and by a 128-bit hash (XXH3-128)
 * of their canonical labels: the labels themselves live in the store only,
 * which keeps the head small; two label sets sharing a 128-bit hash is
 * not a practical concern (about 1 in 10^28 for a million series).
 *
 * Chunk cutting: the open chunk covers one aligned window
 * [k*window_ms, (k+1)*window_ms); a sample past the window end, or a chunk
 * holding max_samples, moves the open chunk to the pending list. Windows
 * divide a UTC day, so a cut chunk never spans two days.
 * Layer: L2 storage and wire (src/head/); includes only its layer and below (docs/architecture.md). */
#ifndef GW_HEAD_H
#define GW_HEAD_H

#include <stddef.h>
#include <stdint.h>
#include "gpuwatch/chunk.h"
#include "gpuwatch/err.h"

/* A head chunk: the newest samples in an XOR chunk; every
 * GW_HEAD_FREEZE_SAMPLES of them are re-encoded as a block (about a third
 * of the memory of XOR on jittered exporter data) and appended to
 * `frozen`. Samples in frozen blocks precede those in x. */
#define GW_HEAD_FREEZE_SAMPLES 64

struct gw_hchunk {
    uint8_t *frozen;             /* owned: repeated { uvarint len | block } */
    uint32_t frozen_len, frozen_cap;
    uint32_t frozen_n;           /* samples in frozen blocks */
    struct gw_xor_chunk x;       /* owned: the newest samples */
};

static inline uint32_t gw_hchunk_n(const struct gw_hchunk *c) { return c->frozen_n + c->x.n; }
/* Decodes every sample, oldest first, into t/v (capacity cap >=
 * gw_hchunk_n). GW_OK, GW_ELIMIT, GW_ECORRUPT. */
int gw_hchunk_decode(const struct gw_hchunk *c, int64_t *t, double *v, size_t cap, size_t *n);
size_t gw_hchunk_mem(const struct gw_hchunk *c);
/* Deep copy (readers copy under the db mutex and decode after it). */
int gw_hchunk_clone(struct gw_hchunk *dst, const struct gw_hchunk *src);
/* Frees the memory of a chunk (a clone, or one the head gave up). */
void gw_hchunk_release(struct gw_hchunk *c);

struct gw_head_chunk {
    struct gw_head_chunk *next;  /* newer pending chunk */
    int64_t mint, maxt;
    uint64_t wal_pos;            /* WAL position at or before its first sample */
    struct gw_hchunk x;          /* owned */
};

struct gw_head_series {
    uint64_t sid;
    uint64_t hash_lo, hash_hi;   /* XXH3-128 of the canonical labels */
    uint32_t node_id;
    uint16_t gpu;
    uint8_t on_dirty;            /* linked in the head's dirty list */
    uint32_t observer;           /* handle the db observer gave the series (0: none) */
    struct gw_hchunk open;       /* open chunk; gw_hchunk_n(&open) == 0 when none;
                                    its newest sample is last_t */
    int64_t open_mint;
    int64_t window_end;          /* exclusive end of the open chunk's window */
    uint64_t open_wal_pos;       /* WAL position at or before the open chunk's first sample */
    int64_t last_t;              /* newest timestamp accepted or persisted; INT64_MIN if none */
    uint64_t last_v;             /* its value bits */
    int64_t persisted_maxt;      /* newest timestamp in the store; INT64_MIN if none */
    struct gw_head_chunk *pending, *pending_tail; /* cut, not yet stored; oldest first */
    struct gw_head_series *hnext;   /* hash chain */
    struct gw_head_series *snext;   /* sid chain */
    struct gw_head_series *dnext;   /* dirty list */
};

struct gw_head;

/* NULL on ENOMEM. window_ms must divide a day; max_samples <= GW_XOR_MAX_SAMPLES. */
struct gw_head *gw_head_new(int64_t window_ms, uint32_t max_samples);
void gw_head_free(struct gw_head *h);
/* Turns freezing of full XOR parts on (default) or off (WAL replay). */
void gw_head_set_freeze(struct gw_head *h, int on);

/* 128-bit identity of canonical labels. */
void gw_head_key(const uint8_t *labels, size_t len, uint64_t *lo, uint64_t *hi);
struct gw_head_series *gw_head_find(struct gw_head *h, uint64_t lo, uint64_t hi);
struct gw_head_series *gw_head_find_sid(struct gw_head *h, uint64_t sid);
/* Hints the CPU to fetch the bucket (and its first series) of key lo. */
void gw_head_prefetch(const struct gw_head *h, uint64_t lo);
/* Adds a series. NULL on ENOMEM. */
struct gw_head_series *gw_head_add(struct gw_head *h, uint64_t sid, uint64_t lo, uint64_t hi, uint32_t node_id,
                                   uint16_t gpu, int64_t persisted_maxt);

enum gw_head_append_result {
    GW_HEAD_ACCEPTED = 0,
    GW_HEAD_DUPLICATE = 1,      /* same t, same bits: no-op */
    GW_HEAD_CONFLICT = 2,       /* same t, other value */
    GW_HEAD_OUT_OF_ORDER = 3    /* older than the newest sample, or equal to a
                                   newest sample held only in the store: the
                                   caller may look it up (gw_head_lookup, store) */
};
/* Checks and appends one sample. *res tells the outcome. GW_OK or
 * GW_ENOMEM. wal_pos is recorded when the sample opens a chunk. */
int gw_head_append(struct gw_head *h, struct gw_head_series *s, int64_t t, double v, uint64_t wal_pos,
                   enum gw_head_append_result *res);
/* Only checks (no change): the outcome gw_head_append would have. */
enum gw_head_append_result gw_head_check(const struct gw_head_series *s, int64_t t, double v);

/* Looks for a sample at exactly t in the series' open and pending chunks;
 * 1 and *bits = its value bits when found, else 0. O(samples held). */
int gw_head_lookup(const struct gw_head_series *s, int64_t t, uint64_t *bits);

/* Moves the open chunk (if any) to the pending list. GW_OK or GW_ENOMEM. */
int gw_head_cut(struct gw_head *h, struct gw_head_series *s);
/* Cuts every open chunk whose window ended at or before t. Returns count. */
size_t gw_head_cut_idle(struct gw_head *h, int64_t t);
/* Cuts every open chunk. */
size_t gw_head_cut_all(struct gw_head *h);

/* Series with pending chunks, taken as a list (h's list becomes empty).
 * Walk with s->dnext; each s->on_dirty is cleared by gw_head_pending_done. */
struct gw_head_series *gw_head_take_dirty(struct gw_head *h);
/* Frees pending chunks of s up to and including `upto` (which must be on
 * its list), sets persisted_maxt, and re-lists s as dirty if more remain. */
void gw_head_pending_done(struct gw_head *h, struct gw_head_series *s, struct gw_head_chunk *upto);

/* Drops series that hold no head data (no open or pending chunk) and whose
 * newest sample is older than t: they live on in the store and come back
 * on their next sample. Returns how many were dropped. */
size_t gw_head_evict_idle(struct gw_head *h, int64_t t);

/* Smallest WAL position still needed by open or pending chunks
 * (UINT64_MAX when none). */
uint64_t gw_head_min_wal_pos(const struct gw_head *h);

struct gw_head_stats {
    uint64_t series, open_chunks, pending_chunks, samples, bytes;
};
void gw_head_stats(const struct gw_head *h, struct gw_head_stats *st);

/* Visits every series (no changes to the head inside cb). */
typedef void (*gw_head_series_cb)(void *ud, struct gw_head_series *s);
void gw_head_each(struct gw_head *h, gw_head_series_cb cb, void *ud);

#endif /* GW_HEAD_H */
