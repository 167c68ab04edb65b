/* db.c - open/close, WAL replay, ingest, background flush, checkpoints and
 * retention of the database (see db.h).
 *
 * Where a sample lives: in its series' open head chunk, in a cut chunk on
 * the series' pending list, or in a block in the store; the flusher moves
 * pending chunks to the store (commit first, then unlink under the mutex),
 * so a reader that copies the head first and reads the store second sees
 * every sample at least once (it drops repeats by timestamp).
 *
 * WAL truncation: a checkpoint takes the smallest WAL position any open or
 * pending chunk still needs, syncs the store, then deletes whole segments
 * before that position. Replay skips samples at or before a series'
 * persisted maximum, so replaying an overlap is harmless. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "db_int.h"
#include "gpuwatch/block.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/labels.h"
#include "gpuwatch/log.h"
#include "gpuwatch/metrics.h"

#define GW_IDLE_GRACE_MS (15 * 60 * 1000)
#define GW_WAL_CHECKPOINT_BYTES (256ull << 20)
#define GW_STARTUP_CHECKPOINT_BYTES (32ull << 20)

void gw_db_opts_default(struct gw_db_opts *o)
{
    memset(o, 0, sizeof *o);
    o->retention_ms = 55LL * GW_DAY_MS;
    o->fsync = GW_FSYNC_BATCH;
    o->block_window_ms = 2LL * 3600 * 1000;
    o->max_block_samples = 1024;
    o->initial_map_bytes = 1ull << 30;
    o->future_tolerance_ms = 10LL * 60 * 1000;
}

static char *path_join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", a, b);
    return p;
}

static int mkdir_p(const char *dir, struct gw_error *err)
{
    if (mkdir(dir, 0755) == 0 || errno == EEXIST) return GW_OK;
    char e[128];
    return gw_error_set(err, GW_EIO, "cannot create directory %s: %s", dir,
                        strerror_r(errno, e, sizeof e) == 0 ? e : "error");
}

/* ---- series creation shared by ingest and replay ---- */

struct new_series {
    uint64_t sid;
    uint64_t hash;          /* store hash (gw_labels_hash) */
    uint64_t lo, hi;        /* head key */
    const uint8_t *labels;
    size_t len;
    uint32_t node_id;   /* out */
    uint16_t gpu;       /* out */
};

struct create_ctx {
    struct new_series *ns;
    size_t n;
    uint64_t next_sid;
};

static int create_series_fn(struct gw_store_txn *t, void *ud)
{
    struct create_ctx *c = ud;
    for (size_t i = 0; i < c->n; i++) {
        struct new_series *s = &c->ns[i];
        struct gw_label ls[GW_LABELS_MAX];
        size_t nl = 0;
        int rc = gw_labels_decode(s->labels, s->len, ls, GW_LABELS_MAX, &nl);
        if (rc) return rc;
        const char *node;
        size_t node_len;
        gw_labels_locality(ls, nl, &node, &node_len, &s->gpu);
        if (node_len > 255) node_len = 255;   /* a grouping key, not an identity */
        rc = gw_store_node_id(t, node, node_len, 1, &s->node_id);
        if (rc) return rc;
        rc = gw_store_series_put(t, s->sid, s->hash, s->node_id, s->gpu, s->labels, s->len);
        if (rc) return rc;
    }
    return gw_store_meta_put_u64(t, "next_sid", c->next_sid);
}

/* ---- open / replay ---- */

struct replay_ctx {
    struct gw_db *db;
    struct gw_store_txn *rt;      /* read txn for lookups, renewed per record */
    uint64_t skipped_persisted, applied, orphan, series_created;
    struct gw_error *err;
    /* sid -> series for the replay: sids are dense counters, and a direct
     * index avoids a hash walk per sample */
    struct gw_head_series **by_sid;
    size_t by_sid_cap;
    struct gw_db_replay_prog prog;
};


static struct gw_head_series *observe(struct gw_db *db, struct gw_head_series *s, const uint8_t *labels, size_t len)
{
    const struct gw_db_observer *ob = db->o.observer;
    if (s && ob && ob->series) s->observer = ob->series(ob->ud, s->sid, labels, len);
    return s;
}

static struct gw_head_series *load_series(struct gw_db *db, struct gw_store_txn *t, uint64_t sid)
{
    struct gw_store_series ss;
    if (gw_store_series_get(t, sid, &ss) != GW_OK) return NULL;
    int64_t maxt = INT64_MIN;
    if (gw_store_series_maxt_get(t, sid, &maxt) != GW_OK) maxt = INT64_MIN;
    uint64_t lo, hi;
    gw_head_key(ss.labels, ss.labels_len, &lo, &hi);
    return observe(db, gw_head_add(db->head, sid, lo, hi, ss.node_id, ss.gpu, maxt), ss.labels, ss.labels_len);
}

static struct gw_head_series *replay_series(struct replay_ctx *c, uint64_t sid)
{
    if (sid < c->by_sid_cap && c->by_sid[sid]) return c->by_sid[sid];
    struct gw_head_series *s = gw_head_find_sid(c->db->head, sid);
    if (!s) s = load_series(c->db, c->rt, sid);
    if (s && sid < ((size_t)1 << 28)) {
        if (sid >= c->by_sid_cap) {
            size_t nc = c->by_sid_cap ? c->by_sid_cap : 4096;
            while (nc <= sid) nc *= 2;
            struct gw_head_series **p = realloc(c->by_sid, nc * sizeof *p);
            if (p) {
                memset(p + c->by_sid_cap, 0, (nc - c->by_sid_cap) * sizeof *p);
                c->by_sid = p;
                c->by_sid_cap = nc;
            }
        }
        if (sid < c->by_sid_cap) c->by_sid[sid] = s;
    }
    return s;
}

struct replay_series_ctx {
    struct replay_ctx *rc;
    struct new_series *ns;
    size_t n, cap;
};

static int replay_series_one(void *ud, uint64_t sid, const uint8_t *labels, size_t len)
{
    struct replay_series_ctx *c = ud;
    struct gw_db *db = c->rc->db;
    if (sid >= db->next_sid) db->next_sid = sid + 1;
    struct gw_store_series ss;
    if (gw_store_series_get(c->rc->rt, sid, &ss) == GW_OK) return GW_OK;
    if (c->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 64;
        struct new_series *p = realloc(c->ns, nc * sizeof *p);
        if (!p) return GW_ENOMEM;
        c->ns = p;
        c->cap = nc;
    }
    c->ns[c->n++] = (struct new_series){.sid = sid, .hash = gw_labels_hash(labels, len), .labels = labels, .len = len};
    return GW_OK;
}

static int replay_sample_one(void *ud, uint64_t sid, int64_t t, double v)
{
    struct replay_ctx *c = ud;
    struct gw_db *db = c->db;
    struct gw_head_series *s = replay_series(c, sid);
    if (!s) {
        c->orphan++;
        return GW_OK;
    }
    if (t <= s->persisted_maxt) {
        c->skipped_persisted++;
        return GW_OK;
    }
    enum gw_head_append_result r;
    int rc = gw_head_append(db->head, s, t, v, c->db->last_wal_pos, &r);
    if (rc) return rc;
    if (r == GW_HEAD_ACCEPTED) {
        c->applied++;
        if (t > db->max_t) db->max_t = t;
        if (s->observer) db->o.observer->sample(db->o.observer->ud, s->observer, t, v);
    }
    return GW_OK;
}

static int replay_cb(void *ud, uint8_t type, const uint8_t *payload, size_t len, uint64_t pos)
{
    struct replay_ctx *c = ud;
    struct gw_db *db = c->db;
    int rc;
    db->last_wal_pos = pos;
    gw_db_replay_prog_at(&c->prog, pos, len);
    if (!c->rt) {
        rc = gw_store_read_begin(db->store, &c->rt, c->err);
        if (rc) return rc;
    }
    if (type == GW_REC_SERIES) {
        struct replay_series_ctx sc = {.rc = c};
        rc = gw_rec_series_each(payload, len, replay_series_one, &sc);
        if (rc == GW_OK && sc.n) {
            struct create_ctx cc = {.ns = sc.ns, .n = sc.n, .next_sid = db->next_sid};
            gw_store_read_end(c->rt);
            c->rt = NULL;
            rc = gw_store_write(db->store, create_series_fn, &cc, c->err);
            c->series_created += sc.n;
        }
        free(sc.ns);
        if (rc == GW_ECORRUPT) {
            gw_log(GW_LOG_WARN, "db", "msg=\"skipping malformed series record\" pos=%llu", (unsigned long long)pos);
            rc = GW_OK;
        }
        return rc;
    }
    if (type == GW_REC_SAMPLES) {
        rc = gw_rec_samples_each(payload, len, replay_sample_one, c);
        if (db->o.observer && db->o.observer->advance && db->max_t != INT64_MIN)
            db->o.observer->advance(db->o.observer->ud, db->max_t);
        if (rc == GW_ECORRUPT) {
            gw_log(GW_LOG_WARN, "db", "msg=\"skipping malformed samples record\" pos=%llu", (unsigned long long)pos);
            rc = GW_OK;
        }
        return rc;
    }
    gw_log(GW_LOG_WARN, "db", "msg=\"unknown WAL record type\" type=%u pos=%llu", type, (unsigned long long)pos);
    return GW_OK;
}

static void *bg_main(void *arg);
static int checkpoint(struct gw_db *db, int all, struct gw_error *err);

int gw_db_open(struct gw_db **out, const struct gw_db_opts *o, struct gw_error *err)
{
    struct gw_db *db = calloc(1, sizeof *db);
    if (!db) return gw_error_set(err, GW_ENOMEM, "out of memory");
    db->o = *o;
    struct gw_db_opts def;
    gw_db_opts_default(&def);
    if (db->o.retention_ms <= 0) db->o.retention_ms = def.retention_ms;
    if (db->o.block_window_ms <= 0 || GW_DAY_MS % db->o.block_window_ms) db->o.block_window_ms = def.block_window_ms;
    if (!db->o.max_block_samples) db->o.max_block_samples = def.max_block_samples;
    if (!db->o.initial_map_bytes) db->o.initial_map_bytes = def.initial_map_bytes;
    if (db->o.future_tolerance_ms <= 0) db->o.future_tolerance_ms = def.future_tolerance_ms;
    db->lock_fd = -1;
    db->max_t = INT64_MIN;
    db->next_sid = 1;
    pthread_mutex_init(&db->mu, NULL);
    pthread_rwlock_init(&db->wal_rw, NULL);
    pthread_mutex_init(&db->flush_mu, NULL);
    pthread_mutex_init(&db->bg_mu, NULL);
    pthread_cond_init(&db->bg_cv, NULL);
    gw_buf_init(&db->rec, GW_WAL_MAX_RECORD);
    gw_buf_init(&db->srec, GW_WAL_MAX_RECORD);
    int rc;
    uint64_t replayed_bytes = 0;
    char *store_dir = NULL, *wal_dir = NULL, *lock_path = NULL;
    db->dir = strdup(o->dir ? o->dir : "");
    if (!db->dir || !*db->dir) {
        rc = gw_error_set(err, GW_EINVAL, "no data dir given");
        goto fail;
    }
    if (!o->read_only && (rc = mkdir_p(db->dir, err))) goto fail;
    store_dir = path_join(db->dir, "store");
    wal_dir = path_join(db->dir, "wal");
    lock_path = path_join(db->dir, "LOCK");
    if (!store_dir || !wal_dir || !lock_path) {
        rc = gw_error_set(err, GW_ENOMEM, "out of memory");
        goto fail;
    }
    if (!o->read_only) {
        db->lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (db->lock_fd < 0 || flock(db->lock_fd, LOCK_EX | LOCK_NB) != 0) {
            rc = gw_error_set(err, GW_EIO, "data dir %s is in use by another gpuwatch process", db->dir);
            goto fail;
        }
    } else {
        struct stat st;
        if (stat(store_dir, &st) != 0) {
            rc = gw_error_set(err, GW_ENOTFOUND, "no gpuwatch store in %s", db->dir);
            goto fail;
        }
    }
    struct gw_store_opts so = {.dir = store_dir, .initial_map_bytes = db->o.initial_map_bytes,
                               .durable = 0, .read_only = o->read_only,
                               /* power-loss safe (no torn store) unless --fsync off */
                               .ordered = o->fsync != GW_FSYNC_OFF};
    rc = gw_store_open(&db->store, &so, err);
    if (rc) goto fail;
    {
        struct gw_store_txn *t;
        rc = gw_store_read_begin(db->store, &t, err);
        if (rc) goto fail;
        uint64_t ns;
        if (gw_store_meta_get_u64(t, "next_sid", &ns) == GW_OK && ns > db->next_sid) db->next_sid = ns;
        gw_store_read_end(t);
    }
    if (o->read_only) goto done;

    db->head = gw_head_new(db->o.block_window_ms, db->o.max_block_samples);
    if (!db->head) {
        rc = gw_error_set(err, GW_ENOMEM, "out of memory");
        goto fail;
    }
    {
        struct replay_ctx rcx = {.db = db, .err = err};
        struct gw_wal_replay_stats st;
        memset(&st, 0, sizeof st);
        uint64_t t0 = gw_mono_ns();
        gw_head_set_freeze(db->head, 0);   /* faster replay; chunks freeze after it */
        gw_db_replay_prog_begin(&rcx.prog, wal_dir, db->o.replay);
        rc = gw_wal_replay(wal_dir, 0, replay_cb, &rcx, &st, err);
        gw_db_replay_prog_end(&rcx.prog);
        if (db->o.replay && st.corrupt) atomic_store(&db->o.replay->corruptions, 1);
        gw_head_set_freeze(db->head, 1);
        gw_store_read_end(rcx.rt);
        free(rcx.by_sid);
        replayed_bytes = st.bytes;
        if (rc) goto fail;
        if (st.records)
            gw_log(GW_LOG_INFO, "db",
                   "msg=\"WAL replayed\" records=%llu segments=%llu samples=%llu skipped_persisted=%llu "
                   "series_created=%llu orphans=%llu ms=%llu",
                   (unsigned long long)st.records, (unsigned long long)st.segments,
                   (unsigned long long)rcx.applied, (unsigned long long)rcx.skipped_persisted,
                   (unsigned long long)rcx.series_created, (unsigned long long)rcx.orphan,
                   (unsigned long long)((gw_mono_ns() - t0) / 1000000));
        if (st.corrupt)
            gw_log(GW_LOG_WARN, "db", "msg=\"WAL tail repaired\" truncated_bytes=%llu removed_segments=%llu",
                   (unsigned long long)st.truncated_bytes, (unsigned long long)st.removed_segments);
    }
    {
        struct gw_wal_opts wo = {.dir = wal_dir, .segment_bytes = 32u << 20, .fsync = db->o.fsync,
                                 .batch_interval_ms = 100, .hold = db->o.wal_hold, .hold_ud = db->o.wal_hold_ud};
        rc = gw_wal_open(&db->wal, &wo, err);
        if (rc) goto fail;
        /* Replayed chunks keep their old positions; new chunks get positions
         * from here on, which is a lower bound of their real records. */
    }
    if (replayed_bytes > GW_STARTUP_CHECKPOINT_BYTES) {
        /* Write settled windows to the store and drop the WAL they came
         * from now, so that a process that keeps crashing does not replay
         * an ever longer WAL at every start. */
        struct gw_error ce = {0};
        if (checkpoint(db, 0, &ce) != GW_OK)
            gw_log(GW_LOG_WARN, "db", "msg=\"checkpoint after replay failed\" err=\"%s\"", ce.msg);
    }
    if (db->o.background) {
        if (pthread_create(&db->bg, NULL, bg_main, db) != 0) {
            rc = gw_error_set(err, GW_ENOMEM, "cannot start background thread");
            goto fail;
        }
        db->bg_running = 1;
    }
done:
    free(store_dir);
    db->wal_dir = wal_dir;
    free(lock_path);
    *out = db;
    return GW_OK;
fail:
    free(store_dir);
    free(wal_dir);
    free(lock_path);
    gw_wal_close(db->wal);
    db->wal = NULL;
    gw_head_free(db->head);
    db->head = NULL;
    gw_store_close(db->store);
    db->store = NULL;
    if (db->lock_fd >= 0) close(db->lock_fd);
    gw_buf_free(&db->rec);
    gw_buf_free(&db->srec);
    free(db->dir);
    free(db);
    return rc;
}

void gw_db_close(struct gw_db *db)
{
    if (!db) return;
    if (db->bg_running) {
        pthread_mutex_lock(&db->bg_mu);
        db->stopping = 1;
        pthread_cond_broadcast(&db->bg_cv);
        pthread_mutex_unlock(&db->bg_mu);
        pthread_join(db->bg, NULL);
    }
    if (db->head && db->wal) {
        struct gw_error e = {0};
        if (gw_db_flush(db, &e) != GW_OK)
            gw_log(GW_LOG_WARN, "db", "msg=\"flush at close failed; the WAL keeps the data\" err=\"%s\"", e.msg);
    }
    gw_wal_close(db->wal);
    gw_head_free(db->head);
    gw_store_close(db->store);
    if (db->lock_fd >= 0) close(db->lock_fd);
    gw_buf_free(&db->rec);
    gw_buf_free(&db->srec);
    pthread_mutex_destroy(&db->mu);
    pthread_rwlock_destroy(&db->wal_rw);
    free(db->wal_dir);
    pthread_mutex_destroy(&db->flush_mu);
    pthread_mutex_destroy(&db->bg_mu);
    pthread_cond_destroy(&db->bg_cv);
    free(db->dir);
    free(db);
}

/* ---- ingest ---- */

struct prep {
    size_t off, len;          /* canonical labels in the scratch buffer */
    uint64_t lo, hi;          /* head key */
    struct gw_head_series *s;
    int valid;
    int new_idx;              /* index into new series, -1 */
};

static int label_name_cmp(const struct gw_label *a, const struct gw_label *b)
{
    size_t n = a->name_len < b->name_len ? a->name_len : b->name_len;
    int c = memcmp(a->name, b->name, n);
    if (c) return c;
    return a->name_len < b->name_len ? -1 : a->name_len > b->name_len;
}

/* Sorts by name (insertion sort: label sets are small and nearly always
 * sorted already, as the remote-write spec asks senders to). */
static void sort_labels(struct gw_label *ls, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        if (label_name_cmp(&ls[i - 1], &ls[i]) <= 0) continue;
        struct gw_label x = ls[i];
        size_t j = i;
        while (j > 0 && label_name_cmp(&ls[j - 1], &x) > 0) {
            ls[j] = ls[j - 1];
            j--;
        }
        ls[j] = x;
    }
}

struct lookup_ctx {
    struct gw_store_txn *t;
};

static struct gw_head_series *lookup_store(struct gw_db *db, struct gw_store_txn *t, uint64_t hash, uint64_t lo,
                                           uint64_t hi, const uint8_t *labels, size_t len)
{
    uint64_t sids[8];
    size_t n = 0;
    if (gw_store_series_by_hash(t, hash, sids, 8, &n) != GW_OK) return NULL;
    for (size_t i = 0; i < n; i++) {
        struct gw_store_series ss;
        if (gw_store_series_get(t, sids[i], &ss) != GW_OK) continue;
        if (ss.labels_len == len && memcmp(ss.labels, labels, len) == 0) {
            int64_t maxt = INT64_MIN;
            if (gw_store_series_maxt_get(t, sids[i], &maxt) != GW_OK) maxt = INT64_MIN;
            return observe(db, gw_head_add(db->head, sids[i], lo, hi, ss.node_id, ss.gpu, maxt), labels, len);
        }
    }
    return NULL;
}

struct old_ctx {
    int64_t t;
    int found;
    uint64_t bits;
};

static int old_block_cb(void *ud, int64_t block_mint, const uint8_t *b, size_t len)
{
    struct old_ctx *c = ud;
    (void)block_mint;
    uint32_t n;
    int64_t mi, ma;
    if (gw_block_info(b, len, &n, &mi, &ma) != GW_OK || c->t < mi || c->t > ma) return GW_OK;
    int64_t *tb = malloc((size_t)n * sizeof *tb);
    double *vb = malloc((size_t)n * sizeof *vb);
    size_t got = 0;
    if (tb && vb && gw_block_decode(b, len, tb, vb, n, &got) == GW_OK) {
        for (size_t i = 0; i < got; i++)
            if (tb[i] == c->t) {
                c->found = 1;
                memcpy(&c->bits, &vb[i], 8);
                break;
            }
    }
    free(tb);
    free(vb);
    return c->found ? 1 : GW_OK;
}

/* A sample older than the newest of its series: an exact copy of a stored
 * one (a retried batch) is a duplicate, another value at a stored timestamp
 * a conflict, anything else out of order. Runs only on that path. */
static enum gw_head_append_result classify_old(struct gw_db *db, struct gw_head_series *s, int64_t t, double v)
{
    uint64_t bits, vb;
    memcpy(&vb, &v, 8);
    int found = gw_head_lookup(s, t, &bits);
    if (!found && t <= s->persisted_maxt) {
        struct gw_store_txn *rt = NULL;
        if (gw_store_read_begin(db->store, &rt, NULL) == GW_OK) {
            struct old_ctx c = {.t = t};
            gw_store_blocks_get(rt, s->node_id, s->sid, t - db->o.block_window_ms, t, old_block_cb, &c);
            gw_store_read_end(rt);
            found = c.found;
            bits = c.bits;
        }
    }
    if (!found) return GW_HEAD_OUT_OF_ORDER;
    return bits == vb ? GW_HEAD_DUPLICATE : GW_HEAD_CONFLICT;
}

struct md_ctx {
    const struct gw_rw_request *req;
};

static int metadata_fn(struct gw_store_txn *t, void *ud)
{
    struct md_ctx *c = ud;
    for (size_t i = 0; i < c->req->n_metadata; i++) {
        const struct gw_rw_metadata *m = &c->req->metadata[i];
        if (!m->name_len || m->name_len > 400) continue;
        int rc = gw_store_metadata_put(t, m->name, m->name_len, m->type, m->help, m->help_len, m->unit, m->unit_len);
        if (rc) return rc;
    }
    return GW_OK;
}

/* gw_db_append runs in phases, one function each:
 *   1. append_prepare (no lock): sorted labels, canonical bytes, head keys;
 *   2. append_find_series, append_create_series (db->mu): series found in
 *      the head or the store, the missing ones created in the store and the
 *      head, their WAL series record built;
 *   3. append_samples (db->mu): samples checked and appended, the WAL
 *      samples record built, the observer told;
 *   4. append_wal_records (db->mu): both records written to the WAL;
 *   5. append_commit (no lock): durability under the fsync policy, then
 *      the request's metadata. */

/* Phase 1, no lock: sorted labels, canonical bytes, head keys. Labels are
 * validated in phase 2 only for series the head does not know: a known
 * series was valid when it was created, with the same bytes. */
static int append_prepare(struct gw_rw_request *req, struct prep *pp, struct gw_buf *lab, struct gw_error *err)
{
    int rc;
    for (size_t i = 0; i < req->n_series; i++) {
        struct gw_rw_series *rs = &req->series[i];
        pp[i].new_idx = -1;
        if (rs->n_samples == 0) continue;
        sort_labels(rs->labels, rs->n_labels);
        size_t need = gw_labels_encoded_size(rs->labels, rs->n_labels);
        if ((rc = gw_buf_reserve(lab, need))) return gw_error_set(err, rc, "out of memory");
        pp[i].off = lab->len;
        pp[i].len = gw_labels_encode(rs->labels, rs->n_labels, lab->data + lab->len);
        lab->len += pp[i].len;
        gw_head_key(lab->data + pp[i].off, pp[i].len, &pp[i].lo, &pp[i].hi);
        pp[i].valid = 1;
    }
    return GW_OK;
}

/* Phase 2a, db->mu held: each series found in the head or the store; a
 * series found in neither is validated and planned in (*ns)[0..*n_new)
 * with its new series id (once per request). */
static int append_find_series(struct gw_db *db, struct gw_rw_request *req, struct prep *pp, const struct gw_buf *lab,
                              struct new_series **ns, size_t *n_new, struct gw_append_result *res,
                              struct gw_error *err)
{
    int rc = GW_OK;
    struct gw_store_txn *rt = NULL;
    for (size_t i = 0; i < req->n_series; i++) {
        if (!pp[i].valid) continue;
        const uint8_t *l = lab->data + pp[i].off;
        if (i + 4 < req->n_series) gw_head_prefetch(db->head, pp[i + 4].lo);
        pp[i].s = gw_head_find(db->head, pp[i].lo, pp[i].hi);
        if (pp[i].s) continue;
        struct gw_rw_series *rs = &req->series[i];
        struct gw_error le = {0};
        if (gw_labels_normalize(rs->labels, rs->n_labels, &le) != GW_OK) {
            pp[i].valid = 0;
            res->invalid_series++;
            res->invalid_samples += rs->n_samples;
            if (!res->first_invalid[0]) snprintf(res->first_invalid, sizeof res->first_invalid, "%s", le.msg);
            continue;
        }
        /* the same new series twice in one request */
        for (size_t k = 0; k < *n_new; k++)
            if ((*ns)[k].lo == pp[i].lo && (*ns)[k].hi == pp[i].hi) {
                pp[i].new_idx = (int)k;
                break;
            }
        if (pp[i].new_idx >= 0) continue;
        if (!rt && (rc = gw_store_read_begin(db->store, &rt, err))) break;
        uint64_t hash = gw_labels_hash(l, pp[i].len);
        pp[i].s = lookup_store(db, rt, hash, pp[i].lo, pp[i].hi, l, pp[i].len);
        if (pp[i].s) continue;
        if ((*n_new & (*n_new - 1)) == 0) {
            struct new_series *p = realloc(*ns, (*n_new ? *n_new * 2 : 1) * sizeof *p);
            if (!p) {
                rc = gw_error_set(err, GW_ENOMEM, "out of memory");
                break;
            }
            *ns = p;
        }
        (*ns)[*n_new] = (struct new_series){.sid = db->next_sid++, .hash = hash, .lo = pp[i].lo, .hi = pp[i].hi,
                                            .labels = l, .len = pp[i].len};
        pp[i].new_idx = (int)(*n_new)++;
    }
    gw_store_read_end(rt);
    return rc;
}

/* Phase 2b, db->mu held: the planned series created in the store, added
 * to the head (and shown to the observer), recorded in db->srec. */
static int append_create_series(struct gw_db *db, struct gw_rw_request *req, struct prep *pp, struct new_series *ns,
                                size_t n_new, struct gw_error *err)
{
    struct create_ctx cc = {.ns = ns, .n = n_new, .next_sid = db->next_sid};
    int rc = gw_store_write(db->store, create_series_fn, &cc, err);
    if (rc != GW_OK) return rc;
    gw_buf_reset(&db->srec);
    for (size_t k = 0; k < n_new && rc == GW_OK; k++) {
        struct gw_head_series *s = observe(
            db, gw_head_add(db->head, ns[k].sid, ns[k].lo, ns[k].hi, ns[k].node_id, ns[k].gpu, INT64_MIN),
            ns[k].labels, ns[k].len);
        if (!s) rc = gw_error_set(err, GW_ENOMEM, "out of memory");
        else rc = gw_rec_series_add(&db->srec, ns[k].sid, ns[k].labels, ns[k].len);
    }
    for (size_t i = 0; i < req->n_series && rc == GW_OK; i++)
        if (pp[i].valid && !pp[i].s && pp[i].new_idx >= 0) pp[i].s = gw_head_find_sid(db->head, ns[pp[i].new_idx].sid);
    return rc;
}

/* Phase 3, db->mu held: each sample checked (too old or new, duplicate,
 * conflict, out of order) and appended to its series' head chunk, the WAL
 * samples record built in db->rec, the observer told. */
static int append_samples(struct gw_db *db, const struct gw_rw_request *req, const struct prep *pp, int64_t now_ms,
                          struct gw_append_result *res, struct gw_error *err)
{
    int rc = GW_OK;
    int64_t too_old_before = now_ms - db->o.retention_ms;
    int64_t too_new_after = now_ms + db->o.future_tolerance_ms;
    int64_t base_t = 0;
    int have_base = 0;
    gw_buf_reset(&db->rec);
    uint64_t chunk_pos = db->last_wal_pos;
    for (size_t i = 0; i < req->n_series && rc == GW_OK; i++) {
        /* each series' chunk tail is a cache miss: ask for a few ahead */
        if (i + 4 < req->n_series && pp[i + 4].s && pp[i + 4].s->open.x.b)
            __builtin_prefetch(pp[i + 4].s->open.x.b + 2 + pp[i + 4].s->open.x.nbits / 8, 1);
        if (!pp[i].valid || !pp[i].s) continue;
        struct gw_head_series *s = pp[i].s;
        const struct gw_rw_series *rs = &req->series[i];
        for (uint32_t j = 0; j < rs->n_samples; j++) {
            int64_t t = rs->samples[j].t;
            double v = rs->samples[j].v;
            if (t < too_old_before) { res->too_old++; continue; }
            if (t > too_new_after) { res->too_new++; continue; }
            enum gw_head_append_result r;
            if ((rc = gw_head_append(db->head, s, t, v, chunk_pos, &r))) {
                gw_error_set(err, rc, "out of memory appending to the head");
                break;
            }
            if (r == GW_HEAD_OUT_OF_ORDER) r = classify_old(db, s, t, v);
            if (r == GW_HEAD_DUPLICATE) { res->duplicates++; continue; }
            if (r == GW_HEAD_CONFLICT) { res->conflicts++; continue; }
            if (r == GW_HEAD_OUT_OF_ORDER) { res->out_of_order++; continue; }
            if (!have_base) {
                base_t = t;
                have_base = 1;
                if ((rc = gw_rec_samples_begin(&db->rec, base_t))) break;
            }
            if ((rc = gw_rec_samples_add(&db->rec, base_t, s->sid, t, v))) {
                gw_error_set(err, rc, "request too large for one WAL record");
                break;
            }
            res->accepted++;
            if (t > db->max_t) db->max_t = t;
            if (s->observer) db->o.observer->sample(db->o.observer->ud, s->observer, t, v);
        }
    }
    if (res->accepted && db->o.observer && db->o.observer->advance)
        db->o.observer->advance(db->o.observer->ud, db->max_t);
    return rc;
}

/* Phase 4, db->mu held: the series record, then the samples record, into
 * the WAL; *pos is the last one's position, *need_commit 1 when any was
 * written. */
static int append_wal_records(struct gw_db *db, uint64_t *pos, int *need_commit)
{
    int rc = GW_OK;
    if (db->srec.len) {
        rc = gw_wal_append(db->wal, GW_REC_SERIES, db->srec.data, db->srec.len, pos);
        *need_commit = 1;
    }
    if (rc == GW_OK && db->rec.len) {
        rc = gw_wal_append(db->wal, GW_REC_SAMPLES, db->rec.data, db->rec.len, pos);
        *need_commit = 1;
    }
    return rc;
}

/* Phase 5, no lock: waits for the WAL under the fsync policy (a failure
 * stops every write until the db recovers), then stores the metadata. */
static int append_commit(struct gw_db *db, const struct gw_rw_request *req, uint64_t pos, int need_commit,
                         struct gw_append_result *res, struct gw_error *err)
{
    int rc = need_commit ? gw_wal_commit(db->wal, pos, err) : GW_OK;
    if (rc) {
        /* The samples are in the head but not durable: refuse every write
         * until the head is in the store and a fresh WAL is open, or a retry
         * of these samples would be answered 2xx as duplicates. */
        pthread_mutex_lock(&db->mu);
        db->failed = 1;
        db->fail_rc = rc == GW_EFULL ? GW_EFULL : GW_EIO;
        pthread_mutex_unlock(&db->mu);
        return rc;
    }
    if (req->n_metadata) {
        struct md_ctx mc = {.req = req};
        int mrc = gw_store_write(db->store, metadata_fn, &mc, NULL);
        if (mrc == GW_OK) res->metadata = req->n_metadata;
    }
    return GW_OK;
}

int gw_db_append(struct gw_db *db, struct gw_rw_request *req, int64_t now_ms, struct gw_append_result *res,
                 struct gw_error *err)
{
    memset(res, 0, sizeof *res);
    if (!db->head) return gw_error_set(err, GW_EINVAL, "database opened read-only");
    int rc = GW_OK, wal_locked = 0, need_commit = 0;
    struct prep *pp = NULL;
    struct new_series *ns = NULL;
    size_t n_new = 0;
    uint64_t pos = 0;
    struct gw_buf lab;
    gw_buf_init(&lab, 0);
    res->histograms = req->n_histograms;
    res->exemplars = req->n_exemplars;

    if (req->n_series) {
        pp = calloc(req->n_series, sizeof *pp);
        if (!pp) return gw_error_set(err, GW_ENOMEM, "out of memory");
    }
    if ((rc = append_prepare(req, pp, &lab, err))) goto out;

    pthread_rwlock_rdlock(&db->wal_rw);
    wal_locked = 1;
    pthread_mutex_lock(&db->mu);
    if (db->failed || !db->wal) {
        rc = db->failed && db->fail_rc == GW_EFULL ? GW_EFULL : GW_EIO;
        pthread_mutex_unlock(&db->mu);
        rc = gw_error_set(err, rc, rc == GW_EFULL ? "disk full: the write-ahead log cannot be written; "
                                                    "writes resume by themselves when space returns"
                                                  : "write-ahead log unavailable after a write failure; "
                                                    "retrying until it recovers");
        goto out;
    }
    rc = append_find_series(db, req, pp, &lab, &ns, &n_new, res, err);
    if (rc == GW_OK && n_new) rc = append_create_series(db, req, pp, ns, n_new, err);
    if (rc) {
        pthread_mutex_unlock(&db->mu);
        goto out;
    }
    rc = append_samples(db, req, pp, now_ms, res, err);
    if (rc == GW_OK) rc = append_wal_records(db, &pos, &need_commit);
    if (need_commit && rc == GW_OK) db->last_wal_pos = pos;
    gw_buf_reset(&db->srec);
    if (rc && rc != GW_ENOMEM && rc != GW_ETOOLARGE) {
        db->failed = 1;
        db->fail_rc = rc == GW_EFULL ? GW_EFULL : GW_EIO;
    }
    db->stat_appended += res->accepted;
    db->stat_refused += res->conflicts + res->out_of_order + res->too_old + res->too_new + res->invalid_samples;
    pthread_mutex_unlock(&db->mu);
    if (rc) {
        if (!err || !err->msg[0]) gw_error_set(err, rc, "cannot write the WAL: %s", gw_strerror(rc));
        goto out;
    }
    rc = append_commit(db, req, pos, need_commit, res, err);
out:
    if (wal_locked) pthread_rwlock_unlock(&db->wal_rw);
    free(pp);
    free(ns);
    gw_buf_free(&lab);
    return rc;
}

/* ---- flushing pending chunks to the store ----
 *
 * Cut chunks wait on their series' pending list until their window has
 * settled (the newest data is past the window end by GW_SETTLE_MS, so every
 * series of a node has cut its chunk of that window), then all chunks of
 * one node and window are encoded as blocks and written as one blob. A
 * full flush (shutdown, gw_db_flush) takes everything. */

#define GW_SETTLE_MS (2 * 60 * 1000)

struct flush_item {
    struct gw_head_series *s;
    struct gw_head_chunk *upto;   /* last pending chunk taken */
};

struct flush_block {
    uint32_t node_id;
    int64_t window;
    uint64_t sid;
    int64_t mint, maxt;
    uint32_t n;                   /* samples */
    uint32_t col;                 /* index into flush_ctx.cols */
    size_t off, len;              /* value part in data */
};

/* A timestamp column: the distinct timestamps of one or more series of one
 * node and window (every series of one scrape target shares them), stored
 * once per blob (gw_store_blob_put_cols). */
struct flush_col {
    uint32_t node_id;
    int64_t window;
    uint64_t hash;                /* XXH3 of the timestamps */
    size_t n;
    size_t toff;                  /* timestamps in flush_ctx.ts */
    size_t off, len;              /* gw_block_ts_encode output in data */
    uint32_t local;               /* 1-based index within the blob being written */
    int kept;                     /* timestamps kept in ts and the column in ht */
};

struct flush_ctx {
    struct flush_block *blocks;
    size_t n_blocks;
    struct gw_buf data;
    struct flush_item *items;
    size_t n_items;
    struct gw_store_blob_entry *entries;   /* scratch for one blob */
    struct flush_col *cols;
    size_t n_cols, cap_cols;
    uint32_t *ht;                 /* open addressing: col index + 1, 0 empty */
    size_t ht_cap;                /* power of two, > 2 * n_cols */
    int64_t *ts;                  /* timestamps of every column */
    size_t n_ts, cap_ts;
    struct gw_store_blob_col *bcols;       /* scratch for one blob */
};

static void flush_ctx_free_cols(struct flush_ctx *c)
{
    free(c->cols);
    free(c->ht);
    free(c->ts);
    free(c->bcols);
}

static uint64_t col_hash(uint32_t node_id, int64_t window, const int64_t *t, size_t n)
{
    uint64_t h = gw_hash64(t, n * sizeof *t);
    return h ^ (((uint64_t)node_id << 32) * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)window * 0xC2B2AE3D27D4EB4Full);
}

#define GW_FLUSH_TS_MAX ((size_t)4 << 20)   /* 32 MiB of kept timestamps per flush round */

static int ht_grow(struct flush_ctx *c)
{
    size_t cap = c->ht_cap ? c->ht_cap * 2 : 1024;
    uint32_t *ht = calloc(cap, sizeof *ht);
    if (!ht) return GW_ENOMEM;
    for (size_t i = 0; i < c->n_cols; i++) {
        if (!c->cols[i].kept) continue;
        size_t j = (size_t)c->cols[i].hash & (cap - 1);
        while (ht[j]) j = (j + 1) & (cap - 1);
        ht[j] = (uint32_t)i + 1;
    }
    free(c->ht);
    c->ht = ht;
    c->ht_cap = cap;
    return GW_OK;
}

/* The column of timestamps t[0..n) of a node and window: found, or encoded
 * and added. */
static int col_get(struct flush_ctx *c, uint32_t node_id, int64_t window, const int64_t *t, size_t n,
                   uint32_t *idx)
{
    if (2 * (c->n_cols + 1) > c->ht_cap) {
        int rc = ht_grow(c);
        if (rc) return rc;
    }
    uint64_t h = col_hash(node_id, window, t, n);
    size_t j = (size_t)h & (c->ht_cap - 1);
    for (; c->ht[j]; j = (j + 1) & (c->ht_cap - 1)) {
        const struct flush_col *f = &c->cols[c->ht[j] - 1];
        if (f->hash == h && f->node_id == node_id && f->window == window && f->n == n &&
            memcmp(c->ts + f->toff, t, n * sizeof *t) == 0) {
            *idx = c->ht[j] - 1;
            return GW_OK;
        }
    }
    if (c->n_cols == c->cap_cols) {
        size_t cap = c->cap_cols ? c->cap_cols * 2 : 256;
        struct flush_col *p = realloc(c->cols, cap * sizeof *p);
        if (!p) return GW_ENOMEM;
        c->cols = p;
        c->cap_cols = cap;
    }
    /* Columns are kept for comparison up to GW_FLUSH_TS_MAX timestamps per
     * round; past that (series that share little) new columns are written
     * but not looked up, so memory stays bounded. */
    int keep = n <= GW_FLUSH_TS_MAX - c->n_ts;
    if (keep && n > c->cap_ts - c->n_ts) {
        size_t cap = c->cap_ts ? c->cap_ts : 4096;
        while (cap - c->n_ts < n) cap *= 2;
        int64_t *p = realloc(c->ts, cap * sizeof *p);
        if (!p) return GW_ENOMEM;
        c->ts = p;
        c->cap_ts = cap;
    }
    size_t off = c->data.len;
    int rc = gw_block_ts_encode(t, n, &c->data);
    if (rc) return rc;
    c->cols[c->n_cols] = (struct flush_col){.node_id = node_id, .window = window, .hash = h, .n = n,
                                            .toff = c->n_ts, .off = off, .len = c->data.len - off,
                                            .kept = keep};
    if (keep) {
        memcpy(c->ts + c->n_ts, t, n * sizeof *t);
        c->n_ts += n;
        c->ht[j] = (uint32_t)c->n_cols + 1;
    }
    *idx = (uint32_t)c->n_cols++;
    return GW_OK;
}

static int block_order(const void *a, const void *b)
{
    const struct flush_block *x = a, *y = b;
    if (x->node_id != y->node_id) return x->node_id < y->node_id ? -1 : 1;
    if (x->window != y->window) return x->window < y->window ? -1 : 1;
    if (x->sid != y->sid) return x->sid < y->sid ? -1 : 1;
    return x->mint < y->mint ? -1 : x->mint > y->mint;
}

/* Adds to the running totals of a day partition kept in meta
 * ("stat.<day>.blocks|samples|bytes"). */
static int add_day_stats(struct gw_store_txn *t, int64_t day, uint64_t blocks, uint64_t samples, uint64_t bytes)
{
    static const char *const what[3] = {"blocks", "samples", "bytes"};
    uint64_t add[3] = {blocks, samples, bytes};
    for (int i = 0; i < 3; i++) {
        char key[64];
        snprintf(key, sizeof key, "stat.%lld.%s", (long long)day, what[i]);
        uint64_t v = 0;
        if (gw_store_meta_get_u64(t, key, &v) != GW_OK) v = 0;
        int rc = gw_store_meta_put_u64(t, key, v + add[i]);
        if (rc) return rc;
    }
    return GW_OK;
}

struct day_acc {
    struct { int64_t day; uint64_t blocks, samples, bytes; } d[8];
    size_t n;
};

static int day_add(struct gw_store_txn *t, struct day_acc *a, int64_t w, uint64_t blocks, uint64_t samples,
                   uint64_t bytes)
{
    int64_t day = w >= 0 ? w / GW_DAY_MS : -((-w + GW_DAY_MS - 1) / GW_DAY_MS);
    size_t d = 0;
    while (d < a->n && a->d[d].day != day) d++;
    if (d == a->n) {
        if (a->n == sizeof a->d / sizeof a->d[0]) {
            int rc = add_day_stats(t, a->d[0].day, a->d[0].blocks, a->d[0].samples, a->d[0].bytes);
            if (rc) return rc;
            memmove(a->d, a->d + 1, (a->n - 1) * sizeof a->d[0]);
            d = --a->n;
        }
        a->d[d].day = day;
        a->d[d].blocks = a->d[d].samples = a->d[d].bytes = 0;
        a->n++;
    }
    a->d[d].blocks += blocks;
    a->d[d].samples += samples;
    a->d[d].bytes += bytes;
    return GW_OK;
}

static int flush_write_fn(struct gw_store_txn *t, void *ud)
{
    struct flush_ctx *c = ud;
    /* Per-day totals for `gpuwatch stats`, so it need not read every block
     * (bytes: value parts with their column refs, plus the columns). */
    struct day_acc days = {.n = 0};
    size_t i = 0;
    while (i < c->n_blocks) {
        size_t j = i, nc = 0;
        for (size_t k = i; k < c->n_blocks && c->blocks[k].node_id == c->blocks[i].node_id &&
                           c->blocks[k].window == c->blocks[i].window; k++)
            c->cols[c->blocks[k].col].local = 0;
        uint64_t bytes = 0;
        while (j < c->n_blocks && c->blocks[j].node_id == c->blocks[i].node_id &&
               c->blocks[j].window == c->blocks[i].window) {
            struct flush_col *f = &c->cols[c->blocks[j].col];
            if (!f->local) {
                c->bcols[nc] = (struct gw_store_blob_col){.col = c->data.data + f->off, .len = f->len};
                f->local = (uint32_t)++nc;
                bytes += f->len;
            }
            c->entries[j - i] = (struct gw_store_blob_entry){
                .sid = c->blocks[j].sid, .block = c->data.data + c->blocks[j].off, .len = c->blocks[j].len,
                .col = f->local};
            bytes += c->blocks[j].len + (f->local < 128 ? 1 : f->local < 16384 ? 2 : 3);
            int rc = day_add(t, &days, c->blocks[j].window, 1, c->blocks[j].n, 0);
            if (rc) return rc;
            j++;
        }
        int rc = gw_store_blob_put_cols(t, c->blocks[i].node_id, c->blocks[i].window, c->bcols, nc,
                                        c->entries, j - i);
        if (rc == GW_OK) rc = day_add(t, &days, c->blocks[i].window, 0, 0, bytes);
        if (rc) return rc;
        i = j;
    }
    /* A series' newest persisted timestamp is found from its blobs
     * (gw_store_series_maxt_get); series records are not rewritten. */
    for (size_t d = 0; d < days.n; d++) {
        int rc = add_day_stats(t, days.d[d].day, days.d[d].blocks, days.d[d].samples, days.d[d].bytes);
        if (rc) return rc;
    }
    return GW_OK;
}

static int64_t window_of(const struct gw_db *db, int64_t t)
{
    int64_t w = db->o.block_window_ms;
    int64_t k = t / w;
    if (t < 0 && t % w) k--;
    return k * w;
}

static int encode_chunk(struct gw_db *db, struct flush_ctx *c, const struct gw_head_series *s,
                        const struct gw_head_chunk *ch, int64_t **tb, double **vb, size_t *cap)
{
    size_t want = gw_hchunk_n(&ch->x);
    if (want == 0) return GW_OK;
    if (*cap < want) {
        int64_t *nt = realloc(*tb, want * sizeof **tb);
        if (!nt) return GW_ENOMEM;
        *tb = nt;
        double *nv = realloc(*vb, want * sizeof **vb);
        if (!nv) return GW_ENOMEM;
        *vb = nv;
        *cap = want;
    }
    size_t n = 0;
    int rc = gw_hchunk_decode(&ch->x, *tb, *vb, *cap, &n);
    if (rc) return rc;
    if (n != want) return GW_ECORRUPT;
    int64_t window = window_of(db, (*tb)[0]);
    uint32_t col;
    rc = col_get(c, s->node_id, window, *tb, n, &col);
    if (rc) return rc;
    size_t off = c->data.len;
    rc = gw_block_values_encode(*vb, n, &c->data);
    if (rc) return rc;
    c->blocks[c->n_blocks++] = (struct flush_block){.node_id = s->node_id, .window = window,
                                                    .sid = s->sid, .mint = (*tb)[0], .maxt = (*tb)[n - 1],
                                                    .n = (uint32_t)n, .col = col, .off = off,
                                                    .len = c->data.len - off};
    return GW_OK;
}

/* The last pending chunk of s that may be flushed now (NULL: none). */
static struct gw_head_chunk *flushable_upto(const struct gw_db *db, const struct gw_head_series *s, int all,
                                            int64_t settled_before)
{
    if (all) return s->pending_tail;
    struct gw_head_chunk *upto = NULL;
    for (struct gw_head_chunk *ch = s->pending; ch; ch = ch->next) {
        if (window_of(db, ch->mint) + db->o.block_window_ms > settled_before) break;
        upto = ch;
    }
    return upto;
}

static int flush_pending_count(struct gw_db *db, int all, size_t *flushed, struct gw_error *err)
{
    int rc = GW_OK;
    if (flushed) *flushed = 0;
    pthread_mutex_lock(&db->flush_mu);
    for (;;) {
        struct flush_ctx c;
        memset(&c, 0, sizeof c);
        gw_buf_init(&c.data, 0);
        size_t cap_items = 0;
        struct gw_head_series *rest = NULL;
        pthread_mutex_lock(&db->mu);
        int64_t settled_before = db->max_t == INT64_MIN ? INT64_MIN : db->max_t - GW_SETTLE_MS;
        struct gw_head_series *d = gw_head_take_dirty(db->head);
        size_t nblk = 0;
        while (d) {
            struct gw_head_series *next = d->dnext;
            struct gw_head_chunk *upto = c.n_items < 50000 && rc == GW_OK ? flushable_upto(db, d, all, settled_before) : NULL;
            if (!upto) {
                d->dnext = rest;
                rest = d;
                d = next;
                continue;
            }
            if (c.n_items == cap_items) {
                cap_items = cap_items ? cap_items * 2 : 256;
                struct flush_item *p = realloc(c.items, cap_items * sizeof *p);
                if (!p) {
                    rc = GW_ENOMEM;
                    d->dnext = rest;
                    rest = d;
                    d = next;
                    continue;
                }
                c.items = p;
            }
            c.items[c.n_items++] = (struct flush_item){.s = d, .upto = upto};
            for (struct gw_head_chunk *ch = d->pending; ch; ch = ch->next) {
                nblk++;
                if (ch == upto) break;
            }
            d = next;
        }
        /* series not taken this round go back on the dirty list */
        size_t left = 0;
        while (rest) {
            struct gw_head_series *next = rest->dnext;
            gw_head_pending_done(db->head, rest, NULL);
            rest = next;
            left++;
        }
        pthread_mutex_unlock(&db->mu);
        if (rc != GW_OK || c.n_items == 0) {
            free(c.items);
            break;
        }
        c.blocks = malloc(nblk * sizeof *c.blocks);
        c.entries = malloc(nblk * sizeof *c.entries);
        if (!c.blocks || !c.entries) rc = GW_ENOMEM;
        int64_t *tb = NULL;
        double *vb = NULL;
        size_t cap = 0;
        for (size_t i = 0; i < c.n_items && rc == GW_OK; i++) {
            struct gw_head_series *s = c.items[i].s;
            for (struct gw_head_chunk *ch = s->pending; ch && rc == GW_OK; ch = ch->next) {
                rc = encode_chunk(db, &c, s, ch, &tb, &vb, &cap);
                if (ch == c.items[i].upto) break;
            }
        }
        free(tb);
        free(vb);
        if (rc == GW_OK && c.n_blocks) {
            qsort(c.blocks, c.n_blocks, sizeof *c.blocks, block_order);
            c.bcols = malloc((c.n_cols ? c.n_cols : 1) * sizeof *c.bcols);
            if (!c.bcols) rc = GW_ENOMEM;
            else rc = gw_store_write(db->store, flush_write_fn, &c, err);
        }
        pthread_mutex_lock(&db->mu);
        for (size_t i = 0; i < c.n_items; i++)
            gw_head_pending_done(db->head, c.items[i].s, rc == GW_OK ? c.items[i].upto : NULL);
        pthread_mutex_unlock(&db->mu);
        size_t taken = c.n_items;
        if (flushed && rc == GW_OK) *flushed += c.n_blocks;
        free(c.items);
        free(c.blocks);
        free(c.entries);
        flush_ctx_free_cols(&c);
        gw_buf_free(&c.data);
        if (rc) {
            if (!err || !err->msg[0]) gw_error_set(err, rc, "cannot flush head chunks: %s", gw_strerror(rc));
            break;
        }
        if (taken < 50000) break;   /* everything flushable was taken */
        (void)left;
    }
    pthread_mutex_unlock(&db->flush_mu);
    return rc;
}

static int flush_pending(struct gw_db *db, int all, struct gw_error *err)
{
    return flush_pending_count(db, all, NULL, err);
}

/* flush_pending_count timed into gw_hist_db_flush when it wrote anything. */
static int flush_pending_timed(struct gw_db *db, int all, size_t *flushed, struct gw_error *err)
{
    size_t n = 0;
    uint64_t t0 = gw_mono_ns();
    int rc = flush_pending_count(db, all, &n, err);
    if (n > 0) gw_hist_observe_ns(&gw_hist_db_flush, gw_mono_ns() - t0);
    if (flushed) *flushed = n;
    return rc;
}

int gw_db_flush_pending(struct gw_db *db, struct gw_error *err)
{
    return flush_pending(db, 0, err);
}

static int checkpoint_run(struct gw_db *db, int all, struct gw_error *err);

/* A checkpoint, timed into gw_hist_db_checkpoint. */
static int checkpoint(struct gw_db *db, int all, struct gw_error *err)
{
    uint64_t t0 = gw_mono_ns();
    int rc = checkpoint_run(db, all, err);
    gw_hist_observe_ns(&gw_hist_db_checkpoint, gw_mono_ns() - t0);
    return rc;
}

static int checkpoint_run(struct gw_db *db, int all, struct gw_error *err)
{
    int rc = flush_pending_timed(db, all, NULL, err);
    if (rc) return rc;
    uint64_t keep_from = UINT64_MAX;
    pthread_rwlock_rdlock(&db->wal_rw);
    if (!db->wal) {
        pthread_rwlock_unlock(&db->wal_rw);
        return gw_error_set(err, GW_EIO, "write-ahead log unavailable");
    }
    if (all) {
        rc = gw_wal_cut(db->wal, &keep_from, err);
        if (rc) goto out;
    }
    pthread_mutex_lock(&db->mu);
    uint64_t m = gw_head_min_wal_pos(db->head);
    pthread_mutex_unlock(&db->mu);
    if (m < keep_from) keep_from = m;
    rc = gw_store_sync(db->store, err);
    if (rc == GW_OK && keep_from != UINT64_MAX) rc = gw_wal_truncate_before(db->wal, keep_from, err);
out:
    pthread_rwlock_unlock(&db->wal_rw);
    return rc;
}

/* After a WAL write or sync failure (a full disk, an I/O error): write the
 * whole head into the store and sync it, then replace the WAL with a fresh
 * one and delete the old segments, whose every record is now in the store.
 * Writes are refused until this succeeds; it is retried every 10 s. */
static int recover_wal(struct gw_db *db, struct gw_error *err)
{
    pthread_mutex_lock(&db->mu);
    gw_head_cut_all(db->head);
    pthread_mutex_unlock(&db->mu);
    int rc = flush_pending(db, 1, err);
    if (rc == GW_OK) rc = gw_store_sync(db->store, err);
    if (rc) return rc;
    pthread_rwlock_wrlock(&db->wal_rw);
    gw_wal_close(db->wal);    /* unwritten records belong to requests that got 5xx */
    db->wal = NULL;
    struct gw_wal_opts wo = {.dir = db->wal_dir, .segment_bytes = 32u << 20, .fsync = db->o.fsync,
                             .batch_interval_ms = 100, .hold = db->o.wal_hold, .hold_ud = db->o.wal_hold_ud};
    struct gw_wal *nw = NULL;
    uint64_t next = 0;
    rc = gw_wal_open(&nw, &wo, err);
    if (rc == GW_OK) rc = gw_wal_cut(nw, &next, err);
    if (rc == GW_OK) rc = gw_wal_truncate_before(nw, next, err);
    if (rc == GW_OK) {
        db->wal = nw;
        pthread_mutex_lock(&db->mu);
        db->failed = 0;
        db->last_wal_pos = next;
        pthread_mutex_unlock(&db->mu);
    } else {
        gw_wal_close(nw);
    }
    pthread_rwlock_unlock(&db->wal_rw);
    return rc;
}

int gw_db_flush(struct gw_db *db, struct gw_error *err)
{
    if (!db->head) return GW_OK;
    pthread_mutex_lock(&db->mu);
    gw_head_cut_all(db->head);
    pthread_mutex_unlock(&db->mu);
    return checkpoint(db, 1, err);
}

struct drop_ctx {
    int64_t before_day;
    unsigned dropped;
};

static int drop_fn(struct gw_store_txn *t, void *ud)
{
    struct drop_ctx *c = ud;
    c->dropped = 0;
    int rc = gw_store_partitions_drop_before(t, c->before_day, &c->dropped);
    /* rollups (downsample_run.c) of the same days go with them */
    for (int r = GW_ROLLUP_5M; rc == GW_OK && r <= GW_ROLLUP_1H; r++)
        rc = gw_store_rollup_drop(t, r, INT64_MIN, c->before_day - 1, NULL);
    return rc;
}

int gw_db_retention(struct gw_db *db, int64_t keep_ms, int64_t now_ms, unsigned *dropped, struct gw_error *err)
{
    if (keep_ms <= 0) return gw_error_set(err, GW_EINVAL, "retention must be positive");
    int64_t cutoff = now_ms - keep_ms;
    int64_t before_day = cutoff >= 0 ? cutoff / GW_DAY_MS : -1 - (-cutoff - 1) / GW_DAY_MS;
    /* A partition is dropped only when its whole day is older than the
     * cutoff: the day before the cutoff's day is the newest one to go. */
    struct drop_ctx c = {.before_day = before_day};
    int rc = gw_store_write(db->store, drop_fn, &c, err);
    if (rc == GW_OK && dropped) *dropped = c.dropped;
    return rc;
}

/* ---- background thread ---- */

static void *bg_main(void *arg)
{
    struct gw_db *db = arg;
    uint64_t tick = 0;
    uint64_t last_ckpt_wal_bytes = 0;
    for (;;) {
        pthread_mutex_lock(&db->bg_mu);
        if (!db->stopping) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 1;
            pthread_cond_timedwait(&db->bg_cv, &db->bg_mu, &ts);
        }
        int stop = db->stopping;
        pthread_mutex_unlock(&db->bg_mu);
        if (stop) break;
        tick++;
        struct gw_error e = {0};
        if (tick % 5 == 0) {
            pthread_mutex_lock(&db->mu);
            if (db->max_t != INT64_MIN) gw_head_cut_idle(db->head, db->max_t - GW_IDLE_GRACE_MS);
            pthread_mutex_unlock(&db->mu);
        }
        /* settled chunks go to the store within a second, so a fast backfill
         * does not hold finished windows in memory */
        size_t flushed = 0;
        if (flush_pending_timed(db, 0, &flushed, &e) != GW_OK)
            gw_log(GW_LOG_WARN, "db", "msg=\"flush failed; will retry\" err=\"%s\"", e.msg);
#ifdef __GLIBC__
        if (flushed >= 10000) malloc_trim(0);   /* hand the freed chunks back */
#endif
        if (tick % 60 == 30) {
            /* series silent for an hour leave the head (their data is stored) */
            pthread_mutex_lock(&db->mu);
            size_t ev = db->max_t == INT64_MIN ? 0 : gw_head_evict_idle(db->head, db->max_t - 3600 * 1000);
            pthread_mutex_unlock(&db->mu);
            if (ev) gw_log(GW_LOG_INFO, "db", "msg=\"idle series left the head\" count=%zu", ev);
        }
        pthread_mutex_lock(&db->mu);
        int failed = db->failed;
        pthread_mutex_unlock(&db->mu);
        if (failed) {
            if (tick % 10 == 0) {
                gw_error_clear(&e);
                if (recover_wal(db, &e) == GW_OK)
                    gw_log(GW_LOG_INFO, "db", "msg=\"write-ahead log recovered; accepting writes again\"");
                else
                    gw_log(GW_LOG_WARN, "db", "msg=\"write-ahead log still failing; writes refused\" err=\"%s\"", e.msg);
            }
            continue;
        }
        /* every minute, and sooner when a fast backfill grows the WAL */
        uint64_t wal_bytes = 0;
        if (tick % 5 == 0) {
            pthread_rwlock_rdlock(&db->wal_rw);
            wal_bytes = db->wal ? gw_wal_disk_bytes(db->wal) : 0;
            pthread_rwlock_unlock(&db->wal_rw);
        }
        if (tick % 60 == 0 || wal_bytes > last_ckpt_wal_bytes + GW_WAL_CHECKPOINT_BYTES) {
            gw_error_clear(&e);
            last_ckpt_wal_bytes = wal_bytes;
            if (checkpoint(db, 0, &e) != GW_OK)
                gw_log(GW_LOG_WARN, "db", "msg=\"checkpoint failed; will retry\" err=\"%s\"", e.msg);
        }
        if (tick % 600 == 30) {
            unsigned dropped = 0;
            gw_error_clear(&e);
            if (gw_db_retention(db, db->o.retention_ms, gw_now_ms(), &dropped, &e) != GW_OK)
                gw_log(GW_LOG_WARN, "db", "msg=\"retention failed\" err=\"%s\"", e.msg);
            else if (dropped)
                gw_log(GW_LOG_INFO, "db", "msg=\"retention dropped partitions\" count=%u", dropped);
            gw_error_clear(&e);
            if (db->o.retention_bytes && gw_db_retention_size(db, db->o.retention_bytes, &dropped, &e) != GW_OK)
                gw_log(GW_LOG_WARN, "db", "msg=\"retention by size failed\" err=\"%s\"", e.msg);
            else if (db->o.retention_bytes && dropped)
                gw_log(GW_LOG_INFO, "db", "msg=\"retention by size dropped partitions\" count=%u", dropped);
        }
    }
    return NULL;
}
