/* compact.c - compaction and retention by size of the database (db.h):
 * which days are finished, re-encoding them (gw_store_compact_day), the
 * removal of dead series, and the compacting copy of the LMDB file when
 * the db is open offline.
 *
 * Dead series: a series is dead when no blob of any partition names it and
 * the head does not hold it. The flusher is kept out (flush_mu) from the
 * scan of the blob directories to the last delete, so no series gains
 * stored data meanwhile; each batch of deletes runs under the ingest mutex
 * (db.mu), which is what ingest holds while it finds a series in the store,
 * after checking that the head does not hold the series (lock order
 * flush_mu -> mu -> store, docs/architecture.md). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_int.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/log.h"

#define GW_DEAD_BATCH 512

static pthread_mutex_t compact_mu = PTHREAD_MUTEX_INITIALIZER;

static int64_t day_floor(int64_t t)
{
    return t >= 0 ? t / GW_DAY_MS : -1 - (-t - 1) / GW_DAY_MS;
}

/* ------------------------------------------------ retention by size */

struct oldest_ctx {
    int64_t oldest, newest;
    size_t n;
};

static int oldest_cb(void *ud, const struct gw_store_partition *p)
{
    struct oldest_ctx *c = ud;
    if (c->n == 0 || p->day < c->oldest) c->oldest = p->day;
    if (c->n == 0 || p->day > c->newest) c->newest = p->day;
    c->n++;
    return GW_OK;
}

static int partitions_span(struct gw_db *db, struct oldest_ctx *c, struct gw_error *err)
{
    struct gw_store_txn *t;
    memset(c, 0, sizeof *c);
    int rc = gw_store_read_begin(db->store, &t, err);
    if (rc) return rc;
    rc = gw_store_partitions(t, oldest_cb, c);
    gw_store_read_end(t);
    if (rc) return gw_error_set(err, rc, "cannot list partitions: %s", gw_strerror(rc));
    return GW_OK;
}

struct drop_one {
    int64_t before_day;
    unsigned dropped;
};

static int drop_one_fn(struct gw_store_txn *t, void *ud)
{
    struct drop_one *c = ud;
    c->dropped = 0;
    return gw_store_partitions_drop_before(t, c->before_day, &c->dropped);
}

int gw_db_retention_size(struct gw_db *db, uint64_t max_bytes, unsigned *dropped, struct gw_error *err)
{
    if (max_bytes == 0) return gw_error_set(err, GW_EINVAL, "retention size must be positive");
    if (db->o.read_only) return gw_error_set(err, GW_EINVAL, "the data dir is open read-only");
    unsigned total = 0;
    int rc = GW_OK;
    for (;;) {
        struct gw_store_stats st;
        if ((rc = gw_store_stats(db->store, &st, err))) break;
        if (st.live_bytes <= max_bytes) break;
        struct oldest_ctx span;
        if ((rc = partitions_span(db, &span, err))) break;
        if (span.n <= 1) break;   /* the newest day stays */
        struct drop_one c = {.before_day = span.oldest + 1};
        if ((rc = gw_store_write(db->store, drop_one_fn, &c, err))) break;
        if (c.dropped == 0) break;
        total += c.dropped;
    }
    if (dropped) *dropped = total;
    return rc;
}

/* ------------------------------------------------------- finished days */

struct head_min {
    int64_t t;
};

static void head_min_cb(void *ud, struct gw_head_series *s)
{
    struct head_min *m = ud;
    if (gw_hchunk_n(&s->open) && s->open_mint < m->t) m->t = s->open_mint;
    if (s->pending && s->pending->mint < m->t) m->t = s->pending->mint;
}

/* Oldest sample time held by the head (INT64_MAX when none). */
static int64_t head_oldest(struct gw_db *db)
{
    struct head_min m = {.t = INT64_MAX};
    if (!db->head) return m.t;
    pthread_mutex_lock(&db->mu);
    gw_head_each(db->head, head_min_cb, &m);
    pthread_mutex_unlock(&db->mu);
    return m.t;
}

struct days_ctx {
    int64_t *d;
    size_t n, cap;
};

static int days_cb(void *ud, const struct gw_store_partition *p)
{
    struct days_ctx *c = ud;
    if (c->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 64;
        int64_t *nd = realloc(c->d, nc * sizeof *nd);
        if (!nd) return GW_ENOMEM;
        c->d = nd;
        c->cap = nc;
    }
    c->d[c->n++] = p->day;
    return GW_OK;
}

/* The finished days that need work, ascending, into c: before today (UTC,
 * wall clock) and wholly before the oldest sample the head still holds
 * (open or waiting to be flushed), so the flusher writes nothing more
 * into them except late data. */
static int finished_days(struct gw_db *db, struct days_ctx *c, struct gw_error *err)
{
    int64_t oldest = head_oldest(db);
    int64_t head_day = oldest == INT64_MAX ? INT64_MAX : day_floor(oldest);
    struct gw_store_txn *t;
    int rc = gw_store_read_begin(db->store, &t, err);
    if (rc) return rc;
    rc = gw_store_partitions(t, days_cb, c);
    size_t w = 0;
    int64_t today = day_floor(gw_now_ms());
    for (size_t i = 0; rc == GW_OK && i < c->n; i++) {
        if (c->d[i] >= today || c->d[i] >= head_day) continue;
        int need = gw_store_day_needs_compact(t, c->d[i]);
        if (need < 0) rc = need;
        else if (need) c->d[w++] = c->d[i];
    }
    gw_store_read_end(t);
    if (rc) return gw_error_set(err, rc, "cannot list the days to compact: %s", gw_strerror(rc));
    c->n = w;
    return GW_OK;
}

struct day_progress {
    const struct gw_db_compact_opts *o;
    uint64_t base, total_units;
    uint64_t samples0;
};

static void day_progress_cb(void *ud, uint64_t done, uint64_t total, uint64_t samples)
{
    struct day_progress *p = ud;
    uint64_t part = total ? done * 1000 / total : 1000;
    if (p->o->progress) p->o->progress(p->o->ud, "days", p->base + part, p->total_units, p->samples0 + samples);
}

static int compact_days(struct gw_db *db, const struct gw_db_compact_opts *o, struct gw_db_compact_result *r,
                        struct gw_error *err)
{
    struct days_ctx days = {0};
    int rc = finished_days(db, &days, err);
    struct gw_store_compact_stats st;
    memset(&st, 0, sizeof st);
    int64_t now = gw_now_ms();
    /* progress in days x 1000 units: a day's nodes fill its share */
    for (size_t i = 0; rc == GW_OK && i < days.n; i++) {
        if (o->stop && o->stop(o->ud)) {
            rc = gw_error_set(err, GW_ESHUTDOWN, "compaction stopped");
            break;
        }
        uint64_t before = st.node_days;
        struct day_progress dp = {.o = o, .base = i * 1000, .total_units = days.n * 1000, .samples0 = 0};
        struct gw_store_compact_stats ds;
        memset(&ds, 0, sizeof ds);
        dp.samples0 = st.samples;
        rc = gw_store_compact_day(db->store, days.d[i], now, &ds, day_progress_cb, &dp, err);
        st.node_days += ds.node_days;
        st.node_days_raced += ds.node_days_raced;
        st.blobs_before += ds.blobs_before;
        st.blobs_after += ds.blobs_after;
        st.bytes_before += ds.bytes_before;
        st.bytes_after += ds.bytes_after;
        st.samples += ds.samples;
        st.cols_after += ds.cols_after;
        st.col_bytes_after += ds.col_bytes_after;
        if (st.node_days > before) r->days++;
        gw_log(GW_LOG_INFO, "db", "msg=\"day compacted\" day=%lld nodes=%llu blobs_before=%llu blobs_after=%llu "
               "bytes_before=%llu bytes_after=%llu samples=%llu columns=%llu column_bytes=%llu",
               (long long)days.d[i], (unsigned long long)ds.node_days, (unsigned long long)ds.blobs_before,
               (unsigned long long)ds.blobs_after, (unsigned long long)ds.bytes_before,
               (unsigned long long)ds.bytes_after, (unsigned long long)ds.samples,
               (unsigned long long)ds.cols_after, (unsigned long long)ds.col_bytes_after);
    }
    free(days.d);
    r->node_days = st.node_days;
    r->node_days_raced = st.node_days_raced;
    r->blobs_before = st.blobs_before;
    r->blobs_after = st.blobs_after;
    r->bytes_before = st.bytes_before;
    r->bytes_after = st.bytes_after;
    r->samples = st.samples;
    return rc;
}

/* --------------------------------------------------------- dead series */

struct dead_ctx {
    const uint8_t *bits;
    uint64_t nbits, limit;
    uint64_t *sids;
    size_t n, cap;
};

static int dead_cb(void *ud, const struct gw_store_series *s)
{
    struct dead_ctx *c = ud;
    if (s->sid >= c->limit) return GW_OK;
    if (s->sid < c->nbits && (c->bits[s->sid >> 3] >> (s->sid & 7)) & 1) return GW_OK;
    if (c->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 1024;
        uint64_t *ns = realloc(c->sids, nc * sizeof *ns);
        if (!ns) return GW_ENOMEM;
        c->sids = ns;
        c->cap = nc;
    }
    c->sids[c->n++] = s->sid;
    return GW_OK;
}

struct del_ctx {
    const uint64_t *sids;
    size_t n;
    uint64_t deleted, pairs;
};

static int del_fn(struct gw_store_txn *t, void *ud)
{
    struct del_ctx *c = ud;
    c->deleted = c->pairs = 0;
    for (size_t i = 0; i < c->n; i++) {
        int rc = gw_store_series_delete_gc(t, c->sids[i], &c->pairs);
        if (rc == GW_ENOTFOUND) continue;
        if (rc) return rc;
        c->deleted++;
    }
    return GW_OK;
}

/* The dead series (candidates) under flush_mu: the blob directories of
 * every partition against the series records below next_sid. */
static int dead_candidates(struct gw_db *db, struct dead_ctx *dc, struct gw_error *err)
{
    pthread_mutex_lock(&db->mu);
    dc->limit = db->next_sid;
    pthread_mutex_unlock(&db->mu);
    dc->nbits = dc->limit;
    uint8_t *bits = calloc((size_t)(dc->nbits / 8 + 1), 1);
    if (!bits) return gw_error_set(err, GW_ENOMEM, "out of memory");
    dc->bits = bits;
    struct gw_store_txn *t;
    int rc = gw_store_read_begin(db->store, &t, err);
    if (rc) return rc;
    rc = gw_store_sids_with_data(t, bits, dc->nbits);
    if (rc == GW_OK) rc = gw_store_series_each(t, dead_cb, dc);
    gw_store_read_end(t);
    if (rc) return gw_error_set(err, rc, "cannot find dead series: %s", gw_strerror(rc));
    return GW_OK;
}

static int drop_dead(struct gw_db *db, const struct gw_db_compact_opts *o, struct gw_db_compact_result *r,
                     struct gw_error *err)
{
    struct dead_ctx dc = {0};
    pthread_mutex_lock(&db->flush_mu);
    int rc = dead_candidates(db, &dc, err);
    uint64_t batch[GW_DEAD_BATCH];
    for (size_t i = 0; rc == GW_OK && i < dc.n;) {
        if (o->stop && o->stop(o->ud)) {
            rc = gw_error_set(err, GW_ESHUTDOWN, "compaction stopped");
            break;
        }
        size_t nb = 0;
        pthread_mutex_lock(&db->mu);
        for (; i < dc.n && nb < GW_DEAD_BATCH; i++)
            if (!db->head || !gw_head_find_sid(db->head, dc.sids[i])) batch[nb++] = dc.sids[i];
        struct del_ctx c = {.sids = batch, .n = nb};
        if (nb) rc = gw_store_write(db->store, del_fn, &c, err);
        pthread_mutex_unlock(&db->mu);
        if (rc == GW_OK) {
            r->series_dropped += c.deleted;
            r->pairs_dropped += c.pairs;
        }
        if (o->progress) o->progress(o->ud, "series", i, dc.n, r->samples);
    }
    pthread_mutex_unlock(&db->flush_mu);
    free((void *)dc.bits);
    free(dc.sids);
    return rc;
}

/* ------------------------------------------------ the compacting copy */

static int copy_file(struct gw_db *db, const struct gw_db_compact_opts *o, struct gw_db_compact_result *r,
                     struct gw_error *err)
{
    size_t n = strlen(db->dir) + sizeof "/store";
    char *store_dir = malloc(n);
    if (!store_dir) return gw_error_set(err, GW_ENOMEM, "out of memory");
    snprintf(store_dir, n, "%s/store", db->dir);
    if (o->progress) o->progress(o->ud, "copy", 0, 1, r->samples);
    int rc = gw_store_sync(db->store, err);
    if (rc == GW_OK) {
        gw_store_close(db->store);
        db->store = NULL;
        rc = gw_store_copy_compact(store_dir, &r->file_before, &r->file_after, err);
        struct gw_error oe = {0};
        struct gw_store_opts so = {.dir = store_dir, .initial_map_bytes = db->o.initial_map_bytes, .durable = 0,
                                   .ordered = db->o.fsync != GW_FSYNC_OFF};
        int orc = gw_store_open(&db->store, &so, &oe);
        if (orc != GW_OK && rc == GW_OK) rc = gw_error_set(err, orc, "cannot reopen the store: %s", oe.msg);
        if (rc == GW_OK) r->file_copied = 1;
    }
    if (o->progress) o->progress(o->ud, "copy", 1, 1, r->samples);
    free(store_dir);
    return rc;
}

static void live_and_file(struct gw_db *db, uint64_t *live, uint64_t *file)
{
    struct gw_store_stats st;
    struct gw_error e = {0};
    if (db->store && gw_store_stats(db->store, &st, &e) == GW_OK) {
        *live = st.live_bytes;
        *file = st.file_bytes;
    }
}

int gw_db_compact(struct gw_db *db, const struct gw_db_compact_opts *o, struct gw_db_compact_result *r,
                  struct gw_error *err)
{
    static const struct gw_db_compact_opts none;
    if (!o) o = &none;
    memset(r, 0, sizeof *r);
    if (db->o.read_only) return gw_error_set(err, GW_EINVAL, "the data dir is open read-only");
    if (pthread_mutex_trylock(&compact_mu) != 0)
        return gw_error_set(err, GW_ELIMIT, "a compaction is already running");
    live_and_file(db, &r->live_before, &r->file_before);
    int rc = compact_days(db, o, r, err);
    if (rc == GW_OK && !o->keep_dead) rc = drop_dead(db, o, r, err);
    if (rc == GW_OK) rc = gw_store_sync(db->store, err);
    uint64_t file_before = r->file_before;
    if (rc == GW_OK && o->copy_file && !db->o.background) rc = copy_file(db, o, r, err);
    r->file_before = file_before;
    live_and_file(db, &r->live_after, &r->file_after);
    pthread_mutex_unlock(&compact_mu);
    if (rc == GW_OK)
        gw_log(GW_LOG_INFO, "db", "msg=\"compaction done\" days=%u node_days=%llu raced=%llu series_dropped=%llu "
               "file_before=%llu file_after=%llu",
               r->days, (unsigned long long)r->node_days, (unsigned long long)r->node_days_raced,
               (unsigned long long)r->series_dropped, (unsigned long long)r->file_before,
               (unsigned long long)r->file_after);
    return rc;
}
