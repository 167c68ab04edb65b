/* store.c - the LMDB series store: environment, transactions, map growth,
 * partition (per-day DBI) management and every store.h operation. Key and
 * value layouts are documented at the top of keys.c.
 *
 * Locking (all process-local; LMDB's own writer lock serializes writers
 * across processes):
 *   write_mu  one gw_store_write() at a time in this process; also guards
 *             every mdb_dbi_open in read-write mode (LMDB forbids concurrent
 *             mdb_dbi_open from different transactions).
 *   txn_lock  rwlock held shared by every transaction, exclusive while the
 *             map is resized (LMDB requires no active transaction then).
 *   gate      rwlock held shared by read transactions; a write transaction
 *             that drops partitions takes it exclusive until it ends, since
 *             mdb_drop(.., 1) closes the DBI handle process-wide at once.
 *   part_mu   protects the partition cache (day -> DBI, sorted by day).
 * Lock order: write_mu, txn_lock, gate, part_mu.
 *
 * Partition DBIs: opened at store open (all that exist); new ones are created
 * inside write transactions and enter the cache only after commit (a handle
 * opened in an aborted transaction is invalid). Read transactions use cached
 * handles only, after checking with mdb_dbi_flags() that the handle is valid
 * in their snapshot. In read-only mode the cache is refreshed at the start
 * of each read transaction when another process has committed since.
 *
 * Invariant: a pointer into the map never outlives its transaction. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <lmdb.h>

#include "gpuwatch/arena.h"
#include "gpuwatch/block.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/store.h"
#include "store/store_int.h"

#define GW_STORE_MAXDBS 1100          /* three years of days + fixed DBs */
#define GW_STORE_MAXREADERS 512
#define GW_STORE_DEFAULT_MAP (UINT64_C(1) << 30)
#define GW_STORE_DEFAULT_MAX (UINT64_C(4) << 40)
#define GW_STORE_MIN_MAP (UINT64_C(128) << 10)
/* Format 3 adds "GWB2" blobs (shared timestamp columns, keys.c). A format 2
 * store is read as is and marked 3 by the first read-write open, so older
 * builds refuse it by its version instead of meeting blobs they cannot
 * read. */
#define GW_STORE_FORMAT 3
#define GW_STORE_FORMAT_MIN 2

enum {
    DB_META,
    DB_PAIRS,
    DB_PAIR_IDS,
    DB_SERIES,
    DB_SHASH,
    DB_POSTINGS,
    DB_NODES,
    DB_NODE_IDS,
    DB_MMETA,
    DB_COUNT
};

static const struct {
    const char *name;
    unsigned flags;
} fixed_dbs[DB_COUNT] = {
    [DB_META] = {"meta", 0},
    [DB_PAIRS] = {"pairs", 0},
    [DB_PAIR_IDS] = {"pair_ids", 0},
    [DB_SERIES] = {"series", 0},
    [DB_SHASH] = {"shash", MDB_DUPSORT | MDB_DUPFIXED},
    [DB_POSTINGS] = {"postings", MDB_DUPSORT | MDB_DUPFIXED},
    [DB_NODES] = {"nodes", 0},
    [DB_NODE_IDS] = {"node_ids", 0},
    [DB_MMETA] = {"mmeta", 0},
};

struct part {
    int64_t day;
    MDB_dbi dbi;
};

struct part_vec {
    struct part *v;
    size_t n, cap;
};

struct gw_store {
    MDB_env *env;
    MDB_dbi dbi[DB_COUNT];
    int have[DB_COUNT];
    int read_only;
    uint64_t max_map_bytes;
    char *dir;
    pthread_mutex_t write_mu;
    pthread_rwlock_t txn_lock;
    pthread_rwlock_t gate;
    pthread_mutex_t part_mu;
    struct part_vec parts;        /* sorted by day, unique days */
    size_t ro_seen_txnid;         /* read-only: last txn id the cache reflects */
};

/* Read txns open on this thread: gw_store_write refuses to run while one is
 * open, since a map resize or partition drop would wait for it forever. */
static _Thread_local unsigned tl_read_txns;

struct gw_store_txn {
    struct gw_store *s;
    MDB_txn *txn;
    int write;
    int map_full;                 /* an operation hit MDB_MAP_FULL */
    int gate_held;
    int dropped;                  /* partitions were dropped in this txn */
    struct part_vec pending;      /* partitions opened in this write txn */
    struct gw_arena arena;        /* scratch (rebuilt labels), freed at txn end */
    int arena_on;
    struct gw_buf join;           /* a joined block handed to a block callback */
    int join_on;
    const void **seen;            /* read txn: blobs whose directories were checked
                                     (map addresses; open addressing, NULL = free) */
    size_t seen_cap, seen_n;
    int mdb_rc;
    char msg[200];
};

static void scratch_free(struct gw_store_txn *t);

/* ---------------------------------------------------------------- errors */

static int map_mdb(int mrc)
{
    switch (mrc) {
    case MDB_SUCCESS:
        return GW_OK;
    case MDB_NOTFOUND:
        return GW_ENOTFOUND;
    case MDB_MAP_FULL:
    case ENOSPC:
        return GW_EFULL;
    case MDB_CORRUPTED:
    case MDB_PAGE_NOTFOUND:
    case MDB_INVALID:
        return GW_ECORRUPT;
    case ENOMEM:
        return GW_ENOMEM;
    case EIO:
        return GW_EIO;
    default:
        return GW_ESTORE;
    }
}

/* Records an LMDB failure in the txn (first one wins) and maps it. */
static int terr(struct gw_store_txn *t, int mrc, const char *what)
{
    if (mrc == MDB_MAP_FULL)
        t->map_full = 1;
    if (mrc != MDB_NOTFOUND && t->mdb_rc == 0) {
        t->mdb_rc = mrc;
        snprintf(t->msg, sizeof t->msg, "%s: %s", what, mdb_strerror(mrc));
    }
    return map_mdb(mrc);
}

/* ------------------------------------------------------- partition cache */

static int pv_push(struct part_vec *pv, int64_t day, MDB_dbi dbi)
{
    if (pv->n == pv->cap) {
        size_t cap = pv->cap ? pv->cap * 2 : 32;
        struct part *v = realloc(pv->v, cap * sizeof *v);
        if (!v)
            return GW_ENOMEM;
        pv->v = v;
        pv->cap = cap;
    }
    pv->v[pv->n].day = day;
    pv->v[pv->n].dbi = dbi;
    pv->n++;
    return GW_OK;
}

/* Index of the first entry with day >= d. */
static size_t pv_lower(const struct part_vec *pv, int64_t d)
{
    size_t lo = 0, hi = pv->n;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (pv->v[m].day < d)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

/* Inserts or replaces into a sorted vec. */
static int pv_insert_sorted(struct part_vec *pv, int64_t day, MDB_dbi dbi)
{
    size_t i = pv_lower(pv, day);
    if (i < pv->n && pv->v[i].day == day) {
        pv->v[i].dbi = dbi;
        return GW_OK;
    }
    int rc = pv_push(pv, day, dbi);
    if (rc != GW_OK)
        return rc;
    memmove(pv->v + i + 1, pv->v + i, (pv->n - 1 - i) * sizeof *pv->v);
    pv->v[i].day = day;
    pv->v[i].dbi = dbi;
    return GW_OK;
}

static void pv_remove_at(struct part_vec *pv, size_t i)
{
    memmove(pv->v + i, pv->v + i + 1, (pv->n - i - 1) * sizeof *pv->v);
    pv->n--;
}

static int pv_find(const struct part_vec *pv, int64_t day, MDB_dbi *dbi)
{
    for (size_t i = 0; i < pv->n; i++) {
        if (pv->v[i].day == day) {
            *dbi = pv->v[i].dbi;
            return 1;
        }
    }
    return 0;
}

static int cmp_part(const void *a, const void *b)
{
    const struct part *x = a, *y = b;
    return (x->day > y->day) - (x->day < y->day);
}

static void parts_publish_locked(struct gw_store *s, const struct part_vec *pv)
{
    for (size_t i = 0; i < pv->n; i++) {
        /* On ENOMEM the partition stays unknown to readers until reopen;
         * its data is intact. */
        (void)pv_insert_sorted(&s->parts, pv->v[i].day, pv->v[i].dbi);
    }
}

static void parts_publish(struct gw_store *s, const struct part_vec *pv)
{
    if (pv->n == 0)
        return;
    pthread_mutex_lock(&s->part_mu);
    parts_publish_locked(s, pv);
    pthread_mutex_unlock(&s->part_mu);
}

/* Opens every partition DBI that exists in txn's snapshot into pv. The
 * caller guarantees no concurrent mdb_dbi_open in this process. */
static int parts_scan(MDB_txn *txn, struct part_vec *pv, char *msg, size_t msg_cap)
{
    MDB_dbi main_dbi;
    MDB_cursor *c = NULL;
    int mrc = mdb_dbi_open(txn, NULL, 0, &main_dbi);
    if (mrc == MDB_SUCCESS)
        mrc = mdb_cursor_open(txn, main_dbi, &c);
    if (mrc != MDB_SUCCESS) {
        snprintf(msg, msg_cap, "cannot list partitions: %s", mdb_strerror(mrc));
        return map_mdb(mrc);
    }
    MDB_val k, d;
    int rc = GW_OK;
    for (mrc = mdb_cursor_get(c, &k, &d, MDB_FIRST); mrc == MDB_SUCCESS;
         mrc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
        int64_t day;
        if (!gw_store_part_parse(k.mv_data, k.mv_size, &day))
            continue;
        char name[GW_PART_NAME_MAX];
        memcpy(name, k.mv_data, k.mv_size);
        name[k.mv_size] = 0;
        MDB_dbi dbi;
        int orc = mdb_dbi_open(txn, name, 0, &dbi);
        if (orc == MDB_INCOMPATIBLE || orc == MDB_NOTFOUND)
            continue;
        if (orc != MDB_SUCCESS) {
            snprintf(msg, msg_cap, "cannot open partition %s: %s", name, mdb_strerror(orc));
            rc = map_mdb(orc);
            break;
        }
        rc = pv_push(pv, day, dbi);
        if (rc != GW_OK)
            break;
    }
    if (rc == GW_OK && mrc != MDB_NOTFOUND && mrc != MDB_SUCCESS) {
        snprintf(msg, msg_cap, "cannot list partitions: %s", mdb_strerror(mrc));
        rc = map_mdb(mrc);
    }
    mdb_cursor_close(c);
    return rc;
}

/* --------------------------------------------------------- transactions */

/* Begins an LMDB txn holding txn_lock shared (and gate shared when
 * with_gate). Handles MDB_MAP_RESIZED (another process grew the map). */
static int txn_begin_locked(struct gw_store *s, unsigned flags, int with_gate, MDB_txn **out,
                            struct gw_error *err)
{
    for (int tries = 0;; tries++) {
        pthread_rwlock_rdlock(&s->txn_lock);
        if (with_gate)
            pthread_rwlock_rdlock(&s->gate);
        MDB_txn *txn = NULL;
        int mrc = mdb_txn_begin(s->env, NULL, flags, &txn);
        if (mrc == MDB_SUCCESS) {
            *out = txn;
            return GW_OK;
        }
        if (with_gate)
            pthread_rwlock_unlock(&s->gate);
        pthread_rwlock_unlock(&s->txn_lock);
        if (mrc == MDB_MAP_RESIZED && tries < 8) {
            pthread_rwlock_wrlock(&s->txn_lock);
            mrc = mdb_env_set_mapsize(s->env, 0);
            pthread_rwlock_unlock(&s->txn_lock);
            if (mrc == MDB_SUCCESS)
                continue;
        }
        return gw_error_set(err, map_mdb(mrc), "cannot begin transaction in %s: %s", s->dir,
                            mdb_strerror(mrc));
    }
}

/* Grows the map (double, capped). Called with no transaction of this
 * process active except those blocked on txn_lock. */
static int grow_map(struct gw_store *s, struct gw_error *err)
{
    pthread_rwlock_wrlock(&s->txn_lock);
    MDB_envinfo info;
    MDB_stat st;
    int rc = GW_OK;
    int mrc = mdb_env_info(s->env, &info);
    if (mrc == MDB_SUCCESS)
        mrc = mdb_env_stat(s->env, &st);
    if (mrc != MDB_SUCCESS) {
        rc = gw_error_set(err, map_mdb(mrc), "cannot read map size: %s", mdb_strerror(mrc));
        goto out;
    }
    uint64_t cur = info.me_mapsize, psize = st.ms_psize ? st.ms_psize : 4096;
    if (cur >= s->max_map_bytes) {
        rc = gw_error_set(err, GW_EFULL, "store map full at %llu bytes (limit %llu)",
                          (unsigned long long)cur, (unsigned long long)s->max_map_bytes);
        goto out;
    }
    uint64_t next = cur > s->max_map_bytes / 2 ? s->max_map_bytes : cur * 2;
    next -= next % psize;
    if (next <= cur) {
        rc = gw_error_set(err, GW_EFULL, "store map full at %llu bytes (limit %llu)",
                          (unsigned long long)cur, (unsigned long long)s->max_map_bytes);
        goto out;
    }
    mrc = mdb_env_set_mapsize(s->env, (size_t)next);
    if (mrc != MDB_SUCCESS)
        rc = gw_error_set(err, GW_EFULL, "cannot grow store map to %llu bytes: %s",
                          (unsigned long long)next, mdb_strerror(mrc));
out:
    pthread_rwlock_unlock(&s->txn_lock);
    return rc;
}

/* After an aborted write txn that dropped partitions, the dropped handles
 * are closed although the databases still exist: reopen them. Called with
 * write_mu, txn_lock (shared) and gate (exclusive) held. */
static void parts_reopen_after_abort(struct gw_store *s)
{
    MDB_txn *txn = NULL;
    if (mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn) != MDB_SUCCESS)
        return;
    struct part_vec pv = {0};
    char msg[128];
    if (parts_scan(txn, &pv, msg, sizeof msg) == GW_OK && mdb_txn_commit(txn) == MDB_SUCCESS) {
        parts_publish(s, &pv);
    } else {
        mdb_txn_abort(txn);
    }
    free(pv.v);
}

int gw_store_write(struct gw_store *s, gw_store_write_fn fn, void *ud, struct gw_error *err)
{
    if (!s || !fn)
        return gw_error_set(err, GW_EINVAL, "gw_store_write: missing store or callback");
    if (s->read_only)
        return gw_error_set(err, GW_EINVAL, "store %s is open read-only", s->dir);
    if (tl_read_txns)
        return gw_error_set(err, GW_EINVAL, "gw_store_write with a read transaction open on this thread");
    pthread_mutex_lock(&s->write_mu);
    int rc;
    for (;;) {
        struct gw_store_txn t;
        memset(&t, 0, sizeof t);
        t.s = s;
        t.write = 1;
        rc = txn_begin_locked(s, 0, 0, &t.txn, err);
        if (rc != GW_OK)
            break;
        rc = fn(&t, ud);
        int committed = 0;
        if (rc == GW_OK && !t.map_full) {
            int mrc = mdb_txn_commit(t.txn);
            if (mrc == MDB_SUCCESS)
                committed = 1;
            else
                rc = terr(&t, mrc, "commit");
        } else {
            mdb_txn_abort(t.txn);
        }
        t.txn = NULL;
        if (committed)
            parts_publish(s, &t.pending);
        else if (t.dropped)
            parts_reopen_after_abort(s);
        free(t.pending.v);
        scratch_free(&t);
        if (t.gate_held)
            pthread_rwlock_unlock(&s->gate);
        pthread_rwlock_unlock(&s->txn_lock);
        if (committed) {
            rc = GW_OK;
            break;
        }
        if (t.map_full) {
            rc = grow_map(s, err);
            if (rc != GW_OK)
                break;
            continue;
        }
        if (t.mdb_rc)
            gw_error_set(err, rc, "store %s: %s", s->dir, t.msg);
        else
            gw_error_set(err, rc, "store write aborted: %s", gw_strerror(rc));
        break;
    }
    pthread_mutex_unlock(&s->write_mu);
    return rc;
}

/* Read-only mode: pick up partitions created by the writing process. */
static int ro_refresh(struct gw_store *s, struct gw_error *err)
{
    MDB_envinfo info;
    if (mdb_env_info(s->env, &info) == MDB_SUCCESS) {
        pthread_mutex_lock(&s->part_mu);
        int same = info.me_last_txnid == s->ro_seen_txnid;
        pthread_mutex_unlock(&s->part_mu);
        if (same)
            return GW_OK;
    }
    MDB_txn *txn;
    int rc = txn_begin_locked(s, MDB_RDONLY, 0, &txn, err);
    if (rc != GW_OK)
        return rc;
    struct part_vec pv = {0};
    char msg[128];
    pthread_mutex_lock(&s->part_mu);
    size_t txnid = mdb_txn_id(txn);
    rc = parts_scan(txn, &pv, msg, sizeof msg);
    if (rc == GW_OK) {
        int mrc = mdb_txn_commit(txn);
        if (mrc == MDB_SUCCESS) {
            parts_publish_locked(s, &pv);
            s->ro_seen_txnid = txnid;
        } else {
            rc = gw_error_set(err, map_mdb(mrc), "cannot refresh partitions: %s", mdb_strerror(mrc));
        }
    } else {
        mdb_txn_abort(txn);
        gw_error_set(err, rc, "%s", msg);
    }
    pthread_mutex_unlock(&s->part_mu);
    pthread_rwlock_unlock(&s->txn_lock);
    free(pv.v);
    return rc;
}

int gw_store_read_begin(struct gw_store *s, struct gw_store_txn **out, struct gw_error *err)
{
    if (!s || !out)
        return gw_error_set(err, GW_EINVAL, "gw_store_read_begin: missing argument");
    if (s->read_only) {
        int rc = ro_refresh(s, err);
        if (rc != GW_OK)
            return rc;
    }
    struct gw_store_txn *t = calloc(1, sizeof *t);
    if (!t)
        return gw_error_set(err, GW_ENOMEM, "out of memory");
    t->s = s;
    int rc = txn_begin_locked(s, MDB_RDONLY, 1, &t->txn, err);
    if (rc != GW_OK) {
        free(t);
        return rc;
    }
    tl_read_txns++;
    *out = t;
    return GW_OK;
}

void gw_store_read_end(struct gw_store_txn *t)
{
    if (!t || t->write)
        return;
    struct gw_store *s = t->s;
    mdb_txn_abort(t->txn);
    pthread_rwlock_unlock(&s->gate);
    pthread_rwlock_unlock(&s->txn_lock);
    if (tl_read_txns)
        tl_read_txns--;
    scratch_free(t);
    free(t);
}

/* ------------------------------------------------------------ open/close */

static int mkdir_p(const char *dir, struct gw_error *err)
{
    size_t n = strlen(dir);
    char *p = malloc(n + 1);
    if (!p)
        return gw_error_set(err, GW_ENOMEM, "out of memory");
    memcpy(p, dir, n + 1);
    int rc = GW_OK;
    for (size_t i = 1; i <= n; i++) {
        if (p[i] != '/' && p[i] != 0)
            continue;
        char c = p[i];
        p[i] = 0;
        if (mkdir(p, 0755) != 0 && errno != EEXIST) {
            char eb[128];
            const char *m = strerror_r(errno, eb, sizeof eb);
            rc = gw_error_set(err, GW_EIO, "cannot create directory %s: %s", p, m);
            break;
        }
        p[i] = c;
    }
    free(p);
    return rc;
}

/* The message for a store of another format version. */
static int version_refused(char *msg, size_t cap, uint64_t ver)
{
    snprintf(msg, cap, "store format version %llu is not supported; expected %d to %d", (unsigned long long)ver,
             GW_STORE_FORMAT_MIN, GW_STORE_FORMAT);
    return GW_ECORRUPT;
}

/* First write txn of a read-write open: checks the format version,
 * creates the fixed DBIs and opens every existing partition. */
static int open_init_fn(struct gw_store_txn *t, void *ud)
{
    (void)ud;
    struct gw_store *s = t->s;
    int mrc = mdb_dbi_open(t->txn, fixed_dbs[DB_META].name, fixed_dbs[DB_META].flags | MDB_CREATE, &s->dbi[DB_META]);
    if (mrc != MDB_SUCCESS)
        return terr(t, mrc, fixed_dbs[DB_META].name);
    s->have[DB_META] = 1;
    uint64_t ver;
    int rc = gw_store_meta_get_u64(t, "format_version", &ver);
    int fresh = rc == GW_ENOTFOUND;
    if (rc == GW_OK && (ver < GW_STORE_FORMAT_MIN || ver > GW_STORE_FORMAT)) {
        t->mdb_rc = -1;
        return version_refused(t->msg, sizeof t->msg, ver);
    }
    if (rc != GW_OK && !fresh)
        return rc;
    if (rc == GW_OK && ver != GW_STORE_FORMAT && (rc = gw_store_meta_put_u64(t, "format_version", GW_STORE_FORMAT)))
        return rc;
    for (int i = 0; i < DB_COUNT; i++) {
        if (i == DB_META)
            continue;
        mrc = mdb_dbi_open(t->txn, fixed_dbs[i].name, fixed_dbs[i].flags | MDB_CREATE, &s->dbi[i]);
        if (mrc != MDB_SUCCESS)
            return terr(t, mrc, fixed_dbs[i].name);
        s->have[i] = 1;
    }
    if (fresh) {
        rc = gw_store_meta_put_u64(t, "format_version", GW_STORE_FORMAT);
        if (rc == GW_OK)
            rc = gw_store_meta_put_u64(t, "next_node_id", 1);
        if (rc == GW_OK)
            rc = gw_store_meta_put_u64(t, "next_pair_id", 1);
        if (rc != GW_OK)
            return rc;
    }
    rc = parts_scan(t->txn, &t->pending, t->msg, sizeof t->msg);
    if (rc != GW_OK && t->mdb_rc == 0)
        t->mdb_rc = -1;
    return rc;
}

static int open_read_only(struct gw_store *s, struct gw_error *err)
{
    MDB_txn *txn;
    int rc = txn_begin_locked(s, MDB_RDONLY, 0, &txn, err);
    if (rc != GW_OK)
        return rc;
    for (int i = 0; i < DB_COUNT; i++) {
        int mrc = mdb_dbi_open(txn, fixed_dbs[i].name, 0, &s->dbi[i]);
        if (mrc == MDB_SUCCESS) {
            s->have[i] = 1;
        } else if (mrc != MDB_NOTFOUND) {
            mdb_txn_abort(txn);
            pthread_rwlock_unlock(&s->txn_lock);
            return gw_error_set(err, map_mdb(mrc), "cannot open database %s in %s: %s", fixed_dbs[i].name,
                                s->dir, mdb_strerror(mrc));
        }
    }
    size_t txnid = mdb_txn_id(txn);
    char msg[128];
    struct part_vec pv = {0};
    if (s->have[DB_META]) {
        MDB_val k = {sizeof "format_version" - 1, (void *)"format_version"}, d;
        int mrc = mdb_get(txn, s->dbi[DB_META], &k, &d);
        if (mrc == MDB_SUCCESS && d.mv_size != 8) {
            rc = GW_ECORRUPT;
            snprintf(msg, sizeof msg, "bad format version record");
        } else if (mrc == MDB_SUCCESS && (gw_store_get_be64(d.mv_data) < GW_STORE_FORMAT_MIN ||
                                          gw_store_get_be64(d.mv_data) > GW_STORE_FORMAT)) {
            rc = version_refused(msg, sizeof msg, gw_store_get_be64(d.mv_data));
        } else if (mrc != MDB_SUCCESS && mrc != MDB_NOTFOUND) {
            rc = map_mdb(mrc);
            snprintf(msg, sizeof msg, "cannot read format version: %s", mdb_strerror(mrc));
        }
    }
    if (rc == GW_OK)
        rc = parts_scan(txn, &pv, msg, sizeof msg);
    if (rc == GW_OK) {
        int mrc = mdb_txn_commit(txn);
        if (mrc != MDB_SUCCESS)
            rc = gw_error_set(err, map_mdb(mrc), "cannot open store %s: %s", s->dir, mdb_strerror(mrc));
    } else {
        mdb_txn_abort(txn);
        gw_error_set(err, rc, "cannot open store %s: %s", s->dir, msg);
    }
    pthread_rwlock_unlock(&s->txn_lock);
    if (rc == GW_OK) {
        parts_publish(s, &pv);
        s->ro_seen_txnid = txnid;
    }
    free(pv.v);
    return rc;
}

int gw_store_open(struct gw_store **out, const struct gw_store_opts *o, struct gw_error *err)
{
    if (!out || !o || !o->dir || !o->dir[0])
        return gw_error_set(err, GW_EINVAL, "gw_store_open: missing directory");
    struct gw_store *s = calloc(1, sizeof *s);
    if (!s)
        return gw_error_set(err, GW_ENOMEM, "out of memory");
    int rc = GW_OK, locks = 0;
    size_t dl = strlen(o->dir);
    s->dir = malloc(dl + 1);
    if (!s->dir) {
        rc = gw_error_set(err, GW_ENOMEM, "out of memory");
        goto fail;
    }
    memcpy(s->dir, o->dir, dl + 1);
    s->read_only = o->read_only != 0;
    s->max_map_bytes = o->max_map_bytes ? o->max_map_bytes : GW_STORE_DEFAULT_MAX;
    uint64_t map = o->initial_map_bytes ? o->initial_map_bytes : GW_STORE_DEFAULT_MAP;
    if (map < GW_STORE_MIN_MAP)
        map = GW_STORE_MIN_MAP;
    if (s->max_map_bytes < map)
        s->max_map_bytes = map;
    if (map > SIZE_MAX || s->max_map_bytes > SIZE_MAX) {
        rc = gw_error_set(err, GW_EINVAL, "map size too large for this platform");
        goto fail;
    }
    map -= map % 4096;

    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    /* Writer preference so a resize or drop is not starved by readers. */
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_mutex_init(&s->write_mu, NULL);
    pthread_mutex_init(&s->part_mu, NULL);
    pthread_rwlock_init(&s->txn_lock, &ra);
    pthread_rwlock_init(&s->gate, &ra);
    pthread_rwlockattr_destroy(&ra);
    locks = 1;

    if (!s->read_only && (rc = mkdir_p(s->dir, err)) != GW_OK)
        goto fail;
    int mrc = mdb_env_create(&s->env);
    if (mrc != MDB_SUCCESS) {
        s->env = NULL;
        rc = gw_error_set(err, map_mdb(mrc), "cannot create store env: %s", mdb_strerror(mrc));
        goto fail;
    }
    mrc = mdb_env_set_maxdbs(s->env, GW_STORE_MAXDBS);
    if (mrc == MDB_SUCCESS)
        mrc = mdb_env_set_maxreaders(s->env, GW_STORE_MAXREADERS);
    /* Read-only without an explicit size: map what the file's meta says. */
    if (mrc == MDB_SUCCESS && (!s->read_only || o->initial_map_bytes))
        mrc = mdb_env_set_mapsize(s->env, (size_t)map);
    if (mrc != MDB_SUCCESS) {
        rc = gw_error_set(err, map_mdb(mrc), "cannot configure store env: %s", mdb_strerror(mrc));
        goto fail;
    }
    unsigned flags = MDB_NOTLS;
    if (s->read_only)
        flags |= MDB_RDONLY;
    else if (!o->durable)
        flags |= MDB_NOSYNC;
    mrc = mdb_env_open(s->env, s->dir, flags, 0644);
    if (mrc != MDB_SUCCESS) {
        rc = gw_error_set(err, mrc == ENOENT ? GW_ENOTFOUND : map_mdb(mrc), "cannot open store %s: %s",
                          s->dir, mdb_strerror(mrc));
        goto fail;
    }
    if (s->read_only) {
        rc = open_read_only(s, err);
    } else {
        rc = gw_store_write(s, open_init_fn, NULL, err);
    }
    if (rc != GW_OK)
        goto fail;
    *out = s;
    return GW_OK;
fail:
    if (s->env)
        mdb_env_close(s->env);
    if (locks) {
        pthread_mutex_destroy(&s->write_mu);
        pthread_mutex_destroy(&s->part_mu);
        pthread_rwlock_destroy(&s->txn_lock);
        pthread_rwlock_destroy(&s->gate);
    }
    free(s->parts.v);
    free(s->dir);
    free(s);
    return rc;
}

void gw_store_close(struct gw_store *s)
{
    if (!s)
        return;
    mdb_env_close(s->env);
    pthread_mutex_destroy(&s->write_mu);
    pthread_mutex_destroy(&s->part_mu);
    pthread_rwlock_destroy(&s->txn_lock);
    pthread_rwlock_destroy(&s->gate);
    free(s->parts.v);
    free(s->dir);
    free(s);
}

int gw_store_sync(struct gw_store *s, struct gw_error *err)
{
    if (!s)
        return gw_error_set(err, GW_EINVAL, "gw_store_sync: no store");
    if (s->read_only)
        return GW_OK;
    int mrc = mdb_env_sync(s->env, 1);
    if (mrc != MDB_SUCCESS)
        return gw_error_set(err, mrc == EIO ? GW_EIO : map_mdb(mrc), "cannot sync store %s: %s", s->dir,
                            mdb_strerror(mrc));
    return GW_OK;
}

/* ------------------------------------------------------------ helpers */

static int fixed(struct gw_store_txn *t, int which, MDB_dbi *dbi)
{
    if (!t || !t->txn)
        return GW_EINVAL;
    if (!t->s->have[which])
        return GW_ENOTFOUND;
    *dbi = t->s->dbi[which];
    return GW_OK;
}

static int need_write(struct gw_store_txn *t)
{
    return (t && t->txn && t->write) ? GW_OK : GW_EINVAL;
}

static int cursor_open(struct gw_store_txn *t, MDB_dbi dbi, MDB_cursor **c)
{
    int mrc = mdb_cursor_open(t->txn, dbi, c);
    return mrc == MDB_SUCCESS ? GW_OK : terr(t, mrc, "cursor open");
}

/* ------------------------------------------------------------------ meta */

int gw_store_meta_get_u64(struct gw_store_txn *t, const char *key, uint64_t *v)
{
    MDB_dbi dbi;
    int rc = fixed(t, DB_META, &dbi);
    if (rc != GW_OK)
        return rc;
    if (!key || !key[0] || strlen(key) > GW_KEY_MAX)
        return GW_EINVAL;
    MDB_val k = {strlen(key), (void *)key}, d;
    int mrc = mdb_get(t->txn, dbi, &k, &d);
    if (mrc != MDB_SUCCESS)
        return terr(t, mrc, "meta get");
    if (d.mv_size != 8)
        return GW_ECORRUPT;
    *v = gw_store_get_be64(d.mv_data);
    return GW_OK;
}

int gw_store_meta_put_u64(struct gw_store_txn *t, const char *key, uint64_t v)
{
    MDB_dbi dbi;
    int rc = need_write(t);
    if (rc == GW_OK)
        rc = fixed(t, DB_META, &dbi);
    if (rc != GW_OK)
        return rc;
    if (!key || !key[0] || strlen(key) > GW_KEY_MAX)
        return GW_EINVAL;
    uint8_t b[8];
    gw_store_put_be64(b, v);
    MDB_val k = {strlen(key), (void *)key}, d = {8, b};
    int mrc = mdb_put(t->txn, dbi, &k, &d, 0);
    return mrc == MDB_SUCCESS ? GW_OK : terr(t, mrc, "meta put");
}

/* ---------------------------------------------------------------- series */

/* The transaction's scratch arena (rebuilt labels); freed when it ends. */
static struct gw_arena *scratch(struct gw_store_txn *t)
{
    if (!t->arena_on) {
        gw_arena_init(&t->arena, 16384, 0);
        t->arena_on = 1;
    }
    return &t->arena;
}

static void scratch_free(struct gw_store_txn *t)
{
    if (t->arena_on) {
        gw_arena_free(&t->arena);
        t->arena_on = 0;
    }
    if (t->join_on) {
        gw_buf_free(&t->join);
        t->join_on = 0;
    }
    free(t->seen);
    t->seen = NULL;
    t->seen_cap = t->seen_n = 0;
}

static size_t seen_slot(const void *p, size_t cap)
{
    uint64_t h = (uint64_t)(uintptr_t)p * UINT64_C(0x9e3779b97f4a7c15);
    return (size_t)(h >> 32) & (cap - 1);
}

static int seen_has(const struct gw_store_txn *t, const void *p)
{
    if (!t->seen_n)
        return 0;
    for (size_t i = seen_slot(p, t->seen_cap);; i = (i + 1) & (t->seen_cap - 1)) {
        if (t->seen[i] == p)
            return 1;
        if (!t->seen[i])
            return 0;
    }
}

/* Remembers p; on allocation failure nothing is remembered (the next
 * parse checks again). */
static void seen_add(struct gw_store_txn *t, const void *p)
{
    if (2 * (t->seen_n + 1) > t->seen_cap) {
        size_t nc = t->seen_cap ? 2 * t->seen_cap : 64;
        const void **nv = calloc(nc, sizeof *nv);
        if (!nv)
            return;
        for (size_t i = 0; i < t->seen_cap; i++) {
            if (!t->seen[i])
                continue;
            size_t j = seen_slot(t->seen[i], nc);
            while (nv[j])
                j = (j + 1) & (nc - 1);
            nv[j] = t->seen[i];
        }
        free(t->seen);
        t->seen = nv;
        t->seen_cap = nc;
    }
    size_t j = seen_slot(p, t->seen_cap);
    while (t->seen[j]) {
        if (t->seen[j] == p)
            return;
        j = (j + 1) & (t->seen_cap - 1);
    }
    t->seen[j] = p;
    t->seen_n++;
}

/* gw_store_blob_parse, with the directory checks done once per blob and
 * read transaction: a blob is visited once per selected series, and its
 * bytes cannot change while the snapshot lives. Write transactions (whose
 * pages may change under a pointer) always check. */
static int blob_parse_txn(struct gw_store_txn *t, const MDB_val *d, struct gw_store_blob *b)
{
    if (t->write)
        return gw_store_blob_parse(d->mv_data, d->mv_size, b);
    if (seen_has(t, d->mv_data))
        return gw_store_blob_parse_known(d->mv_data, d->mv_size, b);
    int rc = gw_store_blob_parse(d->mv_data, d->mv_size, b);
    if (rc == GW_OK)
        seen_add(t, d->mv_data);
    return rc;
}

/* Entry j of blob b as a whole block (joined into the txn's buffer when it
 * is a value part; valid until the next call). */
static int blob_entry(struct gw_store_txn *t, const struct gw_store_blob *b, uint32_t j, const uint8_t **p,
                      size_t *len)
{
    if (!t->join_on) {
        gw_buf_init(&t->join, 0);
        t->join_on = 1;
    }
    return gw_store_blob_resolve(b, j, &t->join, p, len);
}

static size_t uvarint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* Checks canonical labels are well formed, minimally encoded (so they are
 * rebuilt byte for byte) and indexable; *count gets the number of labels. */
static int labels_check(const uint8_t *labels, size_t len, size_t *count)
{
    struct gw_store_lab_iter it;
    gw_store_lab_iter_init(&it, labels, len);
    const char *n, *v;
    size_t nl, vl, c = 0, total = 0;
    int rc;
    uint8_t key[GW_KEY_MAX];
    size_t kl;
    while ((rc = gw_store_lab_iter_next(&it, &n, &nl, &v, &vl)) == 1) {
        int krc = gw_store_pair_key(key, &kl, n, nl, v, vl);
        if (krc != GW_OK)
            return krc;
        total += uvarint_len(nl) + nl + uvarint_len(vl) + vl;
        c++;
    }
    if (rc != 0 || c == 0 || total != len)
        return GW_EINVAL;
    *count = c;
    return GW_OK;
}

/* The full name \0 value of a pair id. */
static int pair_text(struct gw_store_txn *t, MDB_dbi dids, uint32_t id, MDB_val *out)
{
    uint8_t ib[4];
    gw_store_put_be32(ib, id);
    MDB_val k = {4, ib};
    int mrc = mdb_get(t->txn, dids, &k, out);
    if (mrc == MDB_NOTFOUND)
        return GW_ECORRUPT;
    if (mrc != MDB_SUCCESS)
        return terr(t, mrc, "pair id get");
    if (out->mv_size < 3 || !memchr(out->mv_data, 0, out->mv_size))
        return GW_ECORRUPT;
    return GW_OK;
}

static int pair_text_eq(const MDB_val *pt, const char *n, size_t nl, const char *v, size_t vl)
{
    const uint8_t *p = pt->mv_data;
    return pt->mv_size == nl + 1 + vl && memcmp(p, n, nl) == 0 && p[nl] == 0 && memcmp(p + nl + 1, v, vl) == 0;
}

/* Id of the pair whose key is key (built by gw_store_pair_key for n=v).
 * GW_OK, GW_ENOTFOUND, GW_ELIMIT when a long key's stored value differs
 * (two values sharing prefix and hash), or an error. */
static int pair_lookup(struct gw_store_txn *t, MDB_dbi dpairs, MDB_dbi dids, const uint8_t *key, size_t klen,
                       const char *n, size_t nl, const char *v, size_t vl, uint32_t *id)
{
    MDB_val k = {klen, (void *)key}, d;
    int mrc = mdb_get(t->txn, dpairs, &k, &d);
    if (mrc == MDB_NOTFOUND)
        return GW_ENOTFOUND;
    if (mrc != MDB_SUCCESS)
        return terr(t, mrc, "pair get");
    if (d.mv_size != 4)
        return GW_ECORRUPT;
    *id = gw_store_get_be32(d.mv_data);
    if (klen != nl + 1 + vl) {
        MDB_val pt;
        int rc = pair_text(t, dids, *id, &pt);
        if (rc != GW_OK)
            return rc;
        if (!pair_text_eq(&pt, n, nl, v, vl))
            return GW_ELIMIT;
    }
    return GW_OK;
}

/* Rebuilds the canonical labels of a record into memory from a. */
static int rebuild_labels(struct gw_store_txn *t, MDB_dbi dids, const struct gw_store_rec *r, struct gw_arena *a,
                          const uint8_t **out, size_t *out_len)
{
    MDB_val local[64];
    MDB_val *tx = local;
    if (r->n > 64) {
        tx = gw_arena_calloc(a, (size_t)r->n, sizeof *tx);
        if (!tx)
            return GW_ENOMEM;
    }
    size_t off = 0, total = 0;
    for (uint64_t i = 0; i < r->n; i++) {
        uint32_t id;
        int rc = gw_store_rec_next_id(r, &off, &id);
        if (rc == GW_OK)
            rc = pair_text(t, dids, id, &tx[i]);
        if (rc != GW_OK)
            return rc;
        size_t nl = (size_t)((const uint8_t *)memchr(tx[i].mv_data, 0, tx[i].mv_size) - (const uint8_t *)tx[i].mv_data);
        size_t vl = tx[i].mv_size - nl - 1;
        if (nl == 0 || vl == 0)
            return GW_ECORRUPT;
        total += uvarint_len(nl) + nl + uvarint_len(vl) + vl;
    }
    if (off != r->ids_len)
        return GW_ECORRUPT;
    uint8_t *b = gw_arena_alloc(a, total);
    if (!b)
        return GW_ENOMEM;
    size_t o = 0;
    for (uint64_t i = 0; i < r->n; i++) {
        const uint8_t *p = tx[i].mv_data;
        size_t nl = (size_t)((const uint8_t *)memchr(p, 0, tx[i].mv_size) - p);
        size_t vl = tx[i].mv_size - nl - 1;
        o += gw_uvarint_put(b + o, nl);
        memcpy(b + o, p, nl);
        o += nl;
        o += gw_uvarint_put(b + o, vl);
        memcpy(b + o, p + nl + 1, vl);
        o += vl;
    }
    *out = b;
    *out_len = total;
    return GW_OK;
}

/* Decodes a series record, labels rebuilt into a. */
static int series_decode(struct gw_store_txn *t, uint64_t sid, const MDB_val *d, struct gw_arena *a,
                         struct gw_store_series *out)
{
    MDB_dbi dids;
    int rc = fixed(t, DB_PAIR_IDS, &dids);
    if (rc != GW_OK)
        return rc == GW_ENOTFOUND ? GW_ECORRUPT : rc;
    struct gw_store_rec r;
    if ((rc = gw_store_rec_parse(d->mv_data, d->mv_size, &r)) != GW_OK)
        return rc;
    out->sid = sid;
    out->node_id = r.node_id;
    out->gpu = r.gpu;
    return rebuild_labels(t, dids, &r, a, &out->labels, &out->labels_len);
}

int gw_store_series_put(struct gw_store_txn *t, uint64_t sid, uint64_t hash, uint32_t node_id,
                        uint16_t gpu, const uint8_t *labels, size_t labels_len)
{
    MDB_dbi ds, dh, dp, dpr, dpi;
    int rc = need_write(t);
    if (rc == GW_OK)
        rc = fixed(t, DB_SERIES, &ds);
    if (rc == GW_OK)
        rc = fixed(t, DB_SHASH, &dh);
    if (rc == GW_OK)
        rc = fixed(t, DB_POSTINGS, &dp);
    if (rc == GW_OK)
        rc = fixed(t, DB_PAIRS, &dpr);
    if (rc == GW_OK)
        rc = fixed(t, DB_PAIR_IDS, &dpi);
    if (rc != GW_OK)
        return rc;
    if (sid > UINT32_MAX)
        return GW_ELIMIT;
    if (!labels || labels_len == 0)
        return GW_EINVAL;
    size_t count;
    if ((rc = labels_check(labels, labels_len, &count)) != GW_OK)
        return rc;

    uint8_t kb[8];
    gw_store_put_be64(kb, sid);
    MDB_val k = {8, kb}, d;
    int mrc = mdb_get(t->txn, ds, &k, &d);
    if (mrc == MDB_SUCCESS) {
        struct gw_store_series se;
        if ((rc = series_decode(t, sid, &d, scratch(t), &se)) != GW_OK)
            return rc;
        if (se.node_id == node_id && se.gpu == gpu && se.labels_len == labels_len &&
            memcmp(se.labels, labels, labels_len) == 0)
            return GW_OK;
        return GW_EINVAL;
    }
    if (mrc != MDB_NOTFOUND)
        return terr(t, mrc, "series get");

    /* count <= labels_len / 4, so this cannot overflow */
    size_t cap = GW_SERIES_FIXED + 10 + 5 * count;
    uint8_t local[GW_SERIES_FIXED + 10 + 5 * 64];
    uint8_t *rec = cap <= sizeof local ? local : gw_arena_alloc(scratch(t), cap);
    if (!rec)
        return GW_ENOMEM;
    gw_store_put_be64(rec, gw_store_bias(INT64_MIN));
    gw_store_put_be32(rec + 8, node_id);
    gw_store_put_be16(rec + 12, gpu);
    size_t o = GW_SERIES_FIXED + gw_uvarint_put(rec + GW_SERIES_FIXED, count);

    uint64_t next = 0;
    int loaded = 0;
    struct gw_store_lab_iter it;
    gw_store_lab_iter_init(&it, labels, labels_len);
    const char *n, *v;
    size_t nl, vl;
    uint8_t key[GW_KEY_MAX];
    size_t kl;
    while (gw_store_lab_iter_next(&it, &n, &nl, &v, &vl) == 1) {
        if (gw_store_pair_key(key, &kl, n, nl, v, vl) != GW_OK)
            return GW_EINVAL;
        uint32_t id;
        rc = pair_lookup(t, dpr, dpi, key, kl, n, nl, v, vl, &id);
        if (rc == GW_ENOTFOUND) {
            if (!loaded) {
                rc = gw_store_meta_get_u64(t, "next_pair_id", &next);
                if (rc == GW_ENOTFOUND)
                    next = 1;
                else if (rc != GW_OK)
                    return rc;
                loaded = 1;
            }
            if (next == 0 || next > UINT32_MAX)
                return GW_ELIMIT;
            id = (uint32_t)next++;
            uint8_t ib[4];
            gw_store_put_be32(ib, id);
            MDB_val pk = {kl, key}, iv = {4, ib};
            mrc = mdb_put(t->txn, dpr, &pk, &iv, MDB_NOOVERWRITE);
            if (mrc != MDB_SUCCESS)
                return terr(t, mrc, "pair put");
            MDB_val tv = {nl + 1 + vl, NULL};
            mrc = mdb_put(t->txn, dpi, &iv, &tv, MDB_APPEND | MDB_RESERVE);
            if (mrc == MDB_KEYEXIST)
                return GW_ECORRUPT; /* next_pair_id behind the stored ids */
            if (mrc != MDB_SUCCESS)
                return terr(t, mrc, "pair id put");
            uint8_t *w = tv.mv_data;
            memcpy(w, n, nl);
            w[nl] = 0;
            memcpy(w + nl + 1, v, vl);
        } else if (rc != GW_OK) {
            return rc;
        }
        o += gw_uvarint_put(rec + o, id);
    }
    if (loaded && (rc = gw_store_meta_put_u64(t, "next_pair_id", next)) != GW_OK)
        return rc;

    /* sids come from a counter: usually the largest key so far */
    MDB_val rv = {o, rec};
    mrc = mdb_put(t->txn, ds, &k, &rv, MDB_APPEND);
    if (mrc == MDB_KEYEXIST) {
        rv.mv_data = rec;
        rv.mv_size = o;
        mrc = mdb_put(t->txn, ds, &k, &rv, MDB_NOOVERWRITE);
    }
    if (mrc != MDB_SUCCESS)
        return terr(t, mrc, "series put");

    uint8_t sb[4], hb[8];
    gw_store_put_be32(sb, (uint32_t)sid);
    gw_store_put_be64(hb, hash);
    MDB_val hk = {8, hb}, sv = {4, sb};
    mrc = mdb_put(t->txn, dh, &hk, &sv, MDB_NODUPDATA);
    if (mrc != MDB_SUCCESS && mrc != MDB_KEYEXIST)
        return terr(t, mrc, "series hash put");

    struct gw_store_rec r;
    if (gw_store_rec_parse(rec, o, &r) != GW_OK)
        return GW_ECORRUPT;
    size_t off = 0;
    for (uint64_t i = 0; i < r.n; i++) {
        uint32_t id;
        if (gw_store_rec_next_id(&r, &off, &id) != GW_OK)
            return GW_ECORRUPT;
        uint8_t ib[4];
        gw_store_put_be32(ib, id);
        MDB_val pk = {4, ib}, pv = {4, sb};
        mrc = mdb_put(t->txn, dp, &pk, &pv, MDB_APPENDDUP);
        if (mrc == MDB_KEYEXIST) {
            pv.mv_data = sb;
            pv.mv_size = 4;
            mrc = mdb_put(t->txn, dp, &pk, &pv, MDB_NODUPDATA);
        }
        if (mrc != MDB_SUCCESS && mrc != MDB_KEYEXIST)
            return terr(t, mrc, "postings put");
    }
    return GW_OK;
}

int gw_store_series_get(struct gw_store_txn *t, uint64_t sid, struct gw_store_series *out)
{
    MDB_dbi ds;
    int rc = fixed(t, DB_SERIES, &ds);
    if (rc != GW_OK)
        return rc;
    uint8_t kb[8];
    gw_store_put_be64(kb, sid);
    MDB_val k = {8, kb}, d;
    int mrc = mdb_get(t->txn, ds, &k, &d);
    if (mrc != MDB_SUCCESS)
        return terr(t, mrc, "series get");
    return series_decode(t, sid, &d, scratch(t), out);
}

/* Reads every 4-byte dup of the cursor's current key (after MDB_SET_KEY
 * filled first) with MDB_GET_MULTIPLE / MDB_NEXT_MULTIPLE. visit gets a
 * run of be32 values; returning nonzero stops. */
typedef int (*dup_visit)(void *ud, const uint8_t *p, size_t n);

static int dups_read(struct gw_store_txn *t, MDB_cursor *c, MDB_val *first, dup_visit visit, void *ud)
{
    MDB_val k, d = *first;
    int mrc = mdb_cursor_get(c, &k, &d, MDB_GET_MULTIPLE);
    if (mrc != MDB_SUCCESS)
        return terr(t, mrc, "postings read");
    for (;;) {
        if (d.mv_size % 4 != 0)
            return GW_ECORRUPT;
        int rc = visit(ud, d.mv_data, d.mv_size / 4);
        if (rc != 0)
            return rc;
        mrc = mdb_cursor_get(c, &k, &d, MDB_NEXT_MULTIPLE);
        if (mrc == MDB_NOTFOUND)
            return GW_OK;
        if (mrc != MDB_SUCCESS)
            return terr(t, mrc, "postings read");
    }
}

static int push_ids(void *ud, const uint8_t *p, size_t n)
{
    struct gw_postings *out = ud;
    for (size_t i = 0; i < n; i++) {
        int rc = gw_postings_push(out, gw_store_get_be32(p + 4 * i));
        if (rc != GW_OK)
            return rc;
    }
    return 0;
}

/* Appends the sids stored under key (shash or postings) to out. */
static int read_ids(struct gw_store_txn *t, MDB_cursor *c, const void *key, size_t klen, struct gw_postings *out)
{
    MDB_val k = {klen, (void *)key}, d;
    int mrc = mdb_cursor_get(c, &k, &d, MDB_SET_KEY);
    if (mrc == MDB_NOTFOUND)
        return GW_OK;
    if (mrc != MDB_SUCCESS)
        return terr(t, mrc, "postings seek");
    if (d.mv_size != 4)
        return GW_ECORRUPT;
    return dups_read(t, c, &d, push_ids, out);
}

int gw_store_series_by_hash(struct gw_store_txn *t, uint64_t hash, uint64_t *sids, size_t max, size_t *n)
{
    MDB_dbi dh;
    int rc = fixed(t, DB_SHASH, &dh);
    if (rc == GW_ENOTFOUND) {
        *n = 0;
        return GW_OK;
    }
    if (rc != GW_OK)
        return rc;
    MDB_cursor *c;
    if ((rc = cursor_open(t, dh, &c)) != GW_OK)
        return rc;
    struct gw_postings p;
    gw_postings_init(&p);
    uint8_t hb[8];
    gw_store_put_be64(hb, hash);
    rc = read_ids(t, c, hb, 8, &p);
    mdb_cursor_close(c);
    if (rc == GW_OK) {
        size_t m = p.n < max ? p.n : max;
        if (m)
            memcpy(sids, p.ids, m * sizeof(uint64_t));
        *n = m;
    }
    gw_postings_free(&p);
    return rc;
}

int gw_store_series_each(struct gw_store_txn *t, gw_store_series_cb cb, void *ud)
{
    MDB_dbi ds;
    int rc = fixed(t, DB_SERIES, &ds);
    if (rc == GW_ENOTFOUND)
        return GW_OK;
    if (rc != GW_OK)
        return rc;
    MDB_cursor *c;
    if ((rc = cursor_open(t, ds, &c)) != GW_OK)
        return rc;
    /* Labels live until the callback returns: one series at a time. */
    struct gw_arena a;
    gw_arena_init(&a, 16384, 0);
    MDB_val k, d;
    int mrc;
    for (mrc = mdb_cursor_get(c, &k, &d, MDB_FIRST); mrc == MDB_SUCCESS;
         mrc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
        if (k.mv_size != 8) {
            rc = GW_ECORRUPT;
            break;
        }
        gw_arena_reset(&a);
        struct gw_store_series se;
        if ((rc = series_decode(t, gw_store_get_be64(k.mv_data), &d, &a, &se)) != GW_OK)
            break;
        rc = cb(ud, &se);
        if (rc != GW_OK)
            break;
    }
    if (rc == GW_OK && mrc != MDB_NOTFOUND && mrc != MDB_SUCCESS)
        rc = terr(t, mrc, "series scan");
    mdb_cursor_close(c);
    gw_arena_free(&a);
    return rc < 0 ? rc : GW_OK;
}

static int blob_scan_newest(struct gw_store_txn *t, uint32_t node_id, uint64_t sid, int64_t *maxt);

/* The newest persisted timestamp: the record's maxt field (kept for stores
 * whose writer set it) or, found by walking the node's blobs from the
 * newest backwards, the last block of the series. The flusher does not
 * rewrite series records, so the blobs are the source. */
int gw_store_series_maxt_get(struct gw_store_txn *t, uint64_t sid, int64_t *maxt)
{
    MDB_dbi ds;
    int rc = fixed(t, DB_SERIES, &ds);
    if (rc == GW_ENOTFOUND) {
        *maxt = INT64_MIN;
        return GW_OK;
    }
    if (rc != GW_OK)
        return rc;
    uint8_t kb[8];
    gw_store_put_be64(kb, sid);
    MDB_val k = {8, kb}, d;
    int mrc = mdb_get(t->txn, ds, &k, &d);
    if (mrc == MDB_NOTFOUND) {
        *maxt = INT64_MIN;
        return GW_OK;
    }
    if (mrc != MDB_SUCCESS)
        return terr(t, mrc, "series get");
    if (d.mv_size < GW_SERIES_FIXED + 1)
        return GW_ECORRUPT;
    int64_t rec = gw_store_unbias(gw_store_get_be64(d.mv_data));
    uint32_t node_id = gw_store_get_be32((const uint8_t *)d.mv_data + 8);
    int64_t blob = INT64_MIN;
    rc = blob_scan_newest(t, node_id, sid, &blob);
    if (rc != GW_OK)
        return rc;
    *maxt = rec > blob ? rec : blob;
    return GW_OK;
}

int gw_store_series_maxt_put(struct gw_store_txn *t, uint64_t sid, int64_t maxt)
{
    MDB_dbi ds;
    int rc = need_write(t);
    if (rc == GW_OK)
        rc = fixed(t, DB_SERIES, &ds);
    if (rc != GW_OK)
        return rc;
    MDB_cursor *c;
    if ((rc = cursor_open(t, ds, &c)) != GW_OK)
        return rc;
    uint8_t kb[8], local[256];
    uint8_t *buf = NULL;
    gw_store_put_be64(kb, sid);
    MDB_val k = {8, kb}, d;
    int mrc = mdb_cursor_get(c, &k, &d, MDB_SET_KEY);
    if (mrc != MDB_SUCCESS) {
        rc = terr(t, mrc, "series get");
        goto out;
    }
    if (d.mv_size < GW_SERIES_FIXED + 1) {
        rc = GW_ECORRUPT;
        goto out;
    }
    /* Same size: MDB_CURRENT rewrites the record in place. */
    buf = d.mv_size <= sizeof local ? local : malloc(d.mv_size);
    if (!buf) {
        rc = GW_ENOMEM;
        goto out;
    }
    memcpy(buf, d.mv_data, d.mv_size);
    gw_store_put_be64(buf, gw_store_bias(maxt));
    MDB_val nv = {d.mv_size, buf};
    k.mv_data = kb;
    k.mv_size = 8;
    mrc = mdb_cursor_put(c, &k, &nv, MDB_CURRENT);
    if (mrc != MDB_SUCCESS)
        rc = terr(t, mrc, "series maxt put");
out:
    if (buf != local)
        free(buf);
    mdb_cursor_close(c);
    return rc;
}

/* Removes (hash, sid) from shash; when the stored hash differs from the
 * recomputed one, finds the entry by scanning. */
static int shash_delete(struct gw_store_txn *t, MDB_dbi dh, uint64_t hash, const uint8_t *sidb)
{
    uint8_t hb[8];
    gw_store_put_be64(hb, hash);
    MDB_val k = {8, hb}, d = {4, (void *)sidb};
    int mrc = mdb_del(t->txn, dh, &k, &d);
    if (mrc == MDB_SUCCESS)
        return GW_OK;
    if (mrc != MDB_NOTFOUND)
        return terr(t, mrc, "series hash delete");
    MDB_cursor *c;
    int rc = cursor_open(t, dh, &c);
    if (rc != GW_OK)
        return rc;
    for (mrc = mdb_cursor_get(c, &k, &d, MDB_FIRST); mrc == MDB_SUCCESS;
         mrc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
        if (d.mv_size == 4 && memcmp(d.mv_data, sidb, 4) == 0) {
            mrc = mdb_cursor_del(c, 0);
            break;
        }
    }
    mdb_cursor_close(c);
    if (mrc == MDB_SUCCESS || mrc == MDB_NOTFOUND)
        return GW_OK;
    return terr(t, mrc, "series hash delete");
}

int gw_store_series_delete(struct gw_store_txn *t, uint64_t sid)
{
    MDB_dbi ds, dh, dp;
    int rc = need_write(t);
    if (rc == GW_OK)
        rc = fixed(t, DB_SERIES, &ds);
    if (rc == GW_OK)
        rc = fixed(t, DB_SHASH, &dh);
    if (rc == GW_OK)
        rc = fixed(t, DB_POSTINGS, &dp);
    if (rc != GW_OK)
        return rc;
    if (sid > UINT32_MAX)
        return GW_ENOTFOUND;
    uint8_t kb[8], sb[4];
    gw_store_put_be64(kb, sid);
    gw_store_put_be32(sb, (uint32_t)sid);
    MDB_val k = {8, kb}, d;
    int mrc = mdb_get(t->txn, ds, &k, &d);
    if (mrc != MDB_SUCCESS)
        return terr(t, mrc, "series get");
    /* Copy: the page holding the record changes as we delete. */
    struct gw_arena *a = scratch(t);
    uint8_t *rec = gw_arena_alloc(a, d.mv_size);
    if (!rec)
        return GW_ENOMEM;
    memcpy(rec, d.mv_data, d.mv_size);
    MDB_val rv = {d.mv_size, rec};
    struct gw_store_series se;
    if ((rc = series_decode(t, sid, &rv, a, &se)) != GW_OK)
        return rc;
    struct gw_store_rec r;
    if ((rc = gw_store_rec_parse(rec, rv.mv_size, &r)) != GW_OK)
        return rc;

    rc = shash_delete(t, dh, gw_store_hash(se.labels, se.labels_len), sb);
    size_t off = 0;
    for (uint64_t i = 0; rc == GW_OK && i < r.n; i++) {
        uint32_t id;
        if ((rc = gw_store_rec_next_id(&r, &off, &id)) != GW_OK)
            break;
        uint8_t ib[4];
        gw_store_put_be32(ib, id);
        MDB_val pk = {4, ib}, pv = {4, sb};
        mrc = mdb_del(t->txn, dp, &pk, &pv);
        if (mrc != MDB_SUCCESS && mrc != MDB_NOTFOUND)
            rc = terr(t, mrc, "postings delete");
    }
    if (rc == GW_OK) {
        mrc = mdb_del(t->txn, ds, &k, NULL);
        if (mrc != MDB_SUCCESS)
            rc = terr(t, mrc, "series delete");
    }
    return rc;
}

/* ----------------------------------------------------------------- nodes */

int gw_store_node_id(struct gw_store_txn *t, const char *name, size_t len, int create, uint32_t *id)
{
    if (!t || !t->txn)
        return GW_EINVAL;
    if (len == 0) {
        *id = 0;
        return GW_OK;
    }
    if (len > GW_KEY_MAX)
        return GW_ETOOLARGE;
    MDB_dbi dn, di;
    int rc = fixed(t, DB_NODES, &dn);
    if (rc == GW_ENOTFOUND && !create)
        return GW_ENOTFOUND;
    if (rc != GW_OK)
        return rc;
    MDB_val k = {len, (void *)name}, d;
    int mrc = mdb_get(t->txn, dn, &k, &d);
    if (mrc == MDB_SUCCESS) {
        if (d.mv_size != 4)
            return GW_ECORRUPT;
        *id = gw_store_get_be32(d.mv_data);
        return GW_OK;
    }
    if (mrc != MDB_NOTFOUND)
        return terr(t, mrc, "node get");
    if (!create)
        return GW_ENOTFOUND;
    if ((rc = need_write(t)) != GW_OK)
        return rc;
    if ((rc = fixed(t, DB_NODE_IDS, &di)) != GW_OK)
        return rc;
    uint64_t next;
    rc = gw_store_meta_get_u64(t, "next_node_id", &next);
    if (rc == GW_ENOTFOUND) {
        next = 1;
    } else if (rc != GW_OK) {
        return rc;
    }
    if (next == 0 || next > UINT32_MAX)
        return GW_ELIMIT;
    uint8_t ib[4];
    gw_store_put_be32(ib, (uint32_t)next);
    MDB_val iv = {4, ib};
    mrc = mdb_put(t->txn, dn, &k, &iv, MDB_NOOVERWRITE);
    if (mrc != MDB_SUCCESS)
        return terr(t, mrc, "node put");
    MDB_val nv = {len, (void *)name};
    mrc = mdb_put(t->txn, di, &iv, &nv, 0);
    if (mrc != MDB_SUCCESS)
        return terr(t, mrc, "node id put");
    if ((rc = gw_store_meta_put_u64(t, "next_node_id", next + 1)) != GW_OK)
        return rc;
    *id = (uint32_t)next;
    return GW_OK;
}

int gw_store_node_name(struct gw_store_txn *t, uint32_t id, const char **name, size_t *len)
{
    if (!t || !t->txn)
        return GW_EINVAL;
    if (id == 0) {
        *name = "";
        *len = 0;
        return GW_OK;
    }
    MDB_dbi di;
    int rc = fixed(t, DB_NODE_IDS, &di);
    if (rc != GW_OK)
        return rc;
    uint8_t ib[4];
    gw_store_put_be32(ib, id);
    MDB_val k = {4, ib}, d;
    int mrc = mdb_get(t->txn, di, &k, &d);
    if (mrc != MDB_SUCCESS)
        return terr(t, mrc, "node name get");
    *name = d.mv_data;
    *len = d.mv_size;
    return GW_OK;
}

/* ------------------------------------------------------ postings / index */

int gw_store_postings_get(struct gw_store_txn *t, const char *name, size_t name_len, const char *value,
                          size_t value_len, struct gw_postings *out)
{
    out->n = 0;
    MDB_dbi dp, dpr, dpi;
    int rc = fixed(t, DB_POSTINGS, &dp);
    if (rc == GW_OK)
        rc = fixed(t, DB_PAIRS, &dpr);
    if (rc == GW_OK)
        rc = fixed(t, DB_PAIR_IDS, &dpi);
    if (rc == GW_ENOTFOUND)
        return GW_OK;
    if (rc != GW_OK)
        return rc;
    uint8_t key[GW_KEY_MAX];
    size_t kl;
    if (gw_store_pair_key(key, &kl, name, name_len, value, value_len) != GW_OK)
        return GW_OK; /* such a label can never be stored */
    uint32_t id;
    rc = pair_lookup(t, dpr, dpi, key, kl, name, name_len, value, value_len, &id);
    if (rc == GW_ENOTFOUND || rc == GW_ELIMIT)
        return GW_OK;
    if (rc != GW_OK)
        return rc;
    MDB_cursor *c;
    if ((rc = cursor_open(t, dp, &c)) != GW_OK)
        return rc;
    uint8_t ib[4];
    gw_store_put_be32(ib, id);
    rc = read_ids(t, c, ib, 4, out);
    mdb_cursor_close(c);
    if (rc != GW_OK)
        out->n = 0;
    return rc;
}

/* One pair key of a label name while scanning its values. */
struct vent {
    MDB_val key;
    const char *v;     /* full value (borrowed from the map) */
    size_t len;
    uint32_t id;
    int trunc;
};

typedef int (*value_visit)(struct gw_store_txn *t, void *ud, const char *v, size_t len, uint32_t id);

struct vscan {
    struct gw_store_txn *t;
    MDB_dbi dids;
    const char *name;
    size_t name_len;
    value_visit visit;
    void *ud;
    struct vent *g;    /* group of long keys sharing their first P bytes */
    size_t gn, gcap;
    int gtrunc;
};

/* Full value of a truncated key, from pair_ids. */
static int resolve_long(struct vscan *vs, struct vent *e, uint64_t hash)
{
    MDB_val pt;
    int rc = pair_text(vs->t, vs->dids, e->id, &pt);
    if (rc != GW_OK)
        return rc;
    const uint8_t *p = pt.mv_data;
    if (pt.mv_size <= vs->name_len + 1 || memcmp(p, vs->name, vs->name_len) != 0 || p[vs->name_len] != 0)
        return GW_ECORRUPT;
    const char *v = (const char *)p + vs->name_len + 1;
    size_t vl = pt.mv_size - vs->name_len - 1;
    if (gw_store_hash(v, vl) != hash)
        return GW_ECORRUPT;
    e->v = v;
    e->len = vl;
    return GW_OK;
}

static int cmp_vent(const void *a, const void *b)
{
    const struct vent *x = a, *y = b;
    size_t m = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->v, y->v, m);
    if (c)
        return c;
    return (x->len > y->len) - (x->len < y->len);
}

static int group_flush(struct vscan *vs)
{
    int rc = GW_OK;
    if (vs->gn == 0)
        return GW_OK;
    if (vs->gtrunc) {
        for (size_t i = 0; i < vs->gn && rc == GW_OK; i++) {
            struct vent *e = &vs->g[i];
            uint64_t h;
            const uint8_t *vp = (const uint8_t *)e->key.mv_data + vs->name_len + 1;
            if (e->trunc && gw_store_value_is_truncated(vs->name_len, vp, e->key.mv_size - vs->name_len - 1, &h))
                rc = resolve_long(vs, e, h);
        }
        if (rc == GW_OK)
            qsort(vs->g, vs->gn, sizeof *vs->g, cmp_vent);
    }
    for (size_t i = 0; i < vs->gn && rc == GW_OK; i++)
        rc = vs->visit(vs->t, vs->ud, vs->g[i].v, vs->g[i].len, vs->g[i].id);
    vs->gn = 0;
    vs->gtrunc = 0;
    return rc;
}

/* Visits every value of a label name (keys "name\0..." of `pairs`) in byte
 * order. With resolve == 0 values are not needed (v is NULL) and come in
 * key order. visit returns 0 to go on, 1 to stop, or an error. */
static int values_scan(struct gw_store_txn *t, const char *name, size_t name_len, int resolve, value_visit visit,
                       void *ud)
{
    MDB_dbi dpr;
    struct vscan vs = {.t = t, .name = name, .name_len = name_len, .visit = visit, .ud = ud};
    int rc = fixed(t, DB_PAIRS, &dpr);
    if (rc == GW_OK)
        rc = fixed(t, DB_PAIR_IDS, &vs.dids);
    if (rc == GW_ENOTFOUND)
        return GW_OK;
    if (rc != GW_OK)
        return rc;
    if (name_len == 0 || name_len > GW_NAME_MAX_KEY || memchr(name, 0, name_len))
        return GW_OK;
    MDB_cursor *c = NULL;
    if ((rc = cursor_open(t, dpr, &c)) != GW_OK)
        return rc;
    uint8_t prefix[GW_KEY_MAX];
    memcpy(prefix, name, name_len);
    prefix[name_len] = 0;
    size_t pl = name_len + 1, P = gw_store_value_prefix(name_len);
    MDB_val k = {pl, prefix}, d;
    int mrc;
    for (mrc = mdb_cursor_get(c, &k, &d, MDB_SET_RANGE); mrc == MDB_SUCCESS && rc == GW_OK;
         mrc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
        if (k.mv_size < pl || memcmp(k.mv_data, prefix, pl) != 0)
            break;
        if (d.mv_size != 4) {
            rc = GW_ECORRUPT;
            break;
        }
        uint32_t id = gw_store_get_be32(d.mv_data);
        const uint8_t *vp = (const uint8_t *)k.mv_data + pl;
        size_t vl = k.mv_size - pl;
        uint64_t h;
        int trunc = gw_store_value_is_truncated(name_len, vp, vl, &h);
        if (!resolve) {
            rc = visit(t, ud, NULL, 0, id);
            continue;
        }
        if (vl > P) {
            /* May sort differently than its key: collect the run of long
             * keys sharing the first P bytes, resolve, sort. */
            if (vs.gn && memcmp((const uint8_t *)vs.g[0].key.mv_data + pl, vp, P) != 0)
                rc = group_flush(&vs);
            if (rc != GW_OK)
                break;
            if (vs.gn == vs.gcap) {
                size_t cap = vs.gcap ? vs.gcap * 2 : 8;
                struct vent *g = realloc(vs.g, cap * sizeof *g);
                if (!g) {
                    rc = GW_ENOMEM;
                    break;
                }
                vs.g = g;
                vs.gcap = cap;
            }
            struct vent *e = &vs.g[vs.gn++];
            e->key = k;
            e->v = (const char *)vp;
            e->len = vl;
            e->id = id;
            e->trunc = trunc;
            vs.gtrunc |= trunc;
            continue;
        }
        rc = group_flush(&vs);
        if (rc == GW_OK)
            rc = visit(t, ud, (const char *)vp, vl, id);
    }
    if (rc == GW_OK && mrc != MDB_SUCCESS && mrc != MDB_NOTFOUND)
        rc = terr(t, mrc, "label values scan");
    if (rc == GW_OK)
        rc = group_flush(&vs);
    free(vs.g);
    mdb_cursor_close(c);
    return rc < 0 ? rc : GW_OK;
}

struct values_ud {
    gw_store_value_cb cb;
    void *ud;
};

static int values_visit(struct gw_store_txn *t, void *ud, const char *v, size_t len, uint32_t id)
{
    (void)t;
    (void)id;
    struct values_ud *u = ud;
    return u->cb(u->ud, v, len);
}

int gw_store_label_values(struct gw_store_txn *t, const char *name, size_t name_len, gw_store_value_cb cb,
                          void *ud)
{
    struct values_ud u = {cb, ud};
    return values_scan(t, name, name_len, 1, values_visit, &u);
}

/* Postings of the matching pairs, read one after another into `all`;
 * list i is all.ids[start[i] .. start[i+1]). */
struct match_ud {
    gw_store_value_pred pred;
    void *ud;
    MDB_cursor *c;
    struct gw_postings all;
    size_t *start;
    size_t lists, cap;
};

static int match_visit(struct gw_store_txn *t, void *ud, const char *v, size_t len, uint32_t id)
{
    struct match_ud *m = ud;
    if (m->pred) {
        int p = m->pred(m->ud, v, len);
        if (p < 0)
            return p;
        if (p != 1)
            return 0;
    }
    if (m->lists + 1 >= m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 16;
        size_t *s = realloc(m->start, cap * sizeof *s);
        if (!s)
            return GW_ENOMEM;
        m->start = s;
        m->cap = cap;
    }
    m->start[m->lists++] = m->all.n;
    uint8_t ib[4];
    gw_store_put_be32(ib, id);
    return read_ids(t, m->c, ib, 4, &m->all);
}

static int postings_union(struct gw_store_txn *t, const char *name, size_t name_len, gw_store_value_pred pred,
                          void *ud, struct gw_postings *out)
{
    out->n = 0;
    MDB_dbi dp;
    int rc = fixed(t, DB_POSTINGS, &dp);
    if (rc == GW_ENOTFOUND)
        return GW_OK;
    if (rc != GW_OK)
        return rc;
    struct match_ud m = {.pred = pred, .ud = ud};
    gw_postings_init(&m.all);
    if ((rc = cursor_open(t, dp, &m.c)) != GW_OK)
        return rc;
    rc = values_scan(t, name, name_len, pred != NULL, match_visit, &m);
    mdb_cursor_close(m.c);
    if (rc == GW_OK && m.lists == 1) {
        gw_postings_swap(&m.all, out);
    } else if (rc == GW_OK && m.lists > 1) {
        /* Views into `all`, merged k ways. */
        struct gw_postings *views = malloc(m.lists * sizeof *views);
        struct gw_postings **ptrs = malloc(m.lists * sizeof *ptrs);
        if (!views || !ptrs) {
            rc = GW_ENOMEM;
        } else {
            m.start[m.lists] = m.all.n;
            for (size_t i = 0; i < m.lists; i++) {
                views[i].ids = m.all.ids + m.start[i];
                views[i].n = m.start[i + 1] - m.start[i];
                views[i].cap = views[i].n;
                ptrs[i] = &views[i];
            }
            rc = gw_postings_merge_many(ptrs, m.lists, out);
        }
        free(views);
        free(ptrs);
    }
    gw_postings_free(&m.all);
    free(m.start);
    if (rc != GW_OK)
        out->n = 0;
    return rc;
}

int gw_store_postings_any(struct gw_store_txn *t, const char *name, size_t name_len, struct gw_postings *out)
{
    return postings_union(t, name, name_len, NULL, NULL, out);
}

int gw_store_postings_matching(struct gw_store_txn *t, const char *name, size_t name_len, gw_store_value_pred pred,
                               void *ud, struct gw_postings *out)
{
    if (!pred) {
        out->n = 0;
        return GW_EINVAL;
    }
    return postings_union(t, name, name_len, pred, ud, out);
}

int gw_store_label_names(struct gw_store_txn *t, gw_store_value_cb cb, void *ud)
{
    MDB_dbi dpr;
    int rc = fixed(t, DB_PAIRS, &dpr);
    if (rc == GW_ENOTFOUND)
        return GW_OK;
    if (rc != GW_OK)
        return rc;
    MDB_cursor *c;
    if ((rc = cursor_open(t, dpr, &c)) != GW_OK)
        return rc;
    uint8_t seek[GW_KEY_MAX + 1];
    MDB_val k, d;
    int mrc = mdb_cursor_get(c, &k, &d, MDB_FIRST);
    while (mrc == MDB_SUCCESS) {
        const uint8_t *z = memchr(k.mv_data, 0, k.mv_size);
        if (!z || z == k.mv_data) {
            rc = GW_ECORRUPT;
            break;
        }
        size_t nl = (size_t)(z - (const uint8_t *)k.mv_data);
        if (nl >= sizeof seek) {
            rc = GW_ECORRUPT;
            break;
        }
        memcpy(seek, k.mv_data, nl);
        rc = cb(ud, (const char *)seek, nl);
        if (rc != GW_OK)
            break;
        /* Next name: "name\1" is the smallest key above every "name\0...". */
        seek[nl] = 1;
        k.mv_data = seek;
        k.mv_size = nl + 1;
        mrc = mdb_cursor_get(c, &k, &d, MDB_SET_RANGE);
    }
    if (rc == GW_OK && mrc != MDB_SUCCESS && mrc != MDB_NOTFOUND)
        rc = terr(t, mrc, "label names scan");
    mdb_cursor_close(c);
    return rc < 0 ? rc : GW_OK;
}

int gw_store_postings_all(struct gw_store_txn *t, struct gw_postings *out)
{
    out->n = 0;
    MDB_dbi ds;
    int rc = fixed(t, DB_SERIES, &ds);
    if (rc == GW_ENOTFOUND)
        return GW_OK;
    if (rc != GW_OK)
        return rc;
    MDB_cursor *c;
    if ((rc = cursor_open(t, ds, &c)) != GW_OK)
        return rc;
    MDB_val k, d;
    int mrc;
    for (mrc = mdb_cursor_get(c, &k, &d, MDB_FIRST); mrc == MDB_SUCCESS;
         mrc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
        if (k.mv_size != 8) {
            rc = GW_ECORRUPT;
            break;
        }
        if ((rc = gw_postings_push(out, gw_store_get_be64(k.mv_data))) != GW_OK)
            break;
    }
    if (rc == GW_OK && mrc != MDB_NOTFOUND && mrc != MDB_SUCCESS)
        rc = terr(t, mrc, "series scan");
    mdb_cursor_close(c);
    if (rc != GW_OK)
        out->n = 0;
    return rc;
}

/* -------------------------------------------------------------- metadata */

int gw_store_metadata_put(struct gw_store_txn *t, const char *metric, size_t metric_len, uint8_t type,
                          const char *help, size_t help_len, const char *unit, size_t unit_len)
{
    MDB_dbi dm;
    int rc = need_write(t);
    if (rc == GW_OK)
        rc = fixed(t, DB_MMETA, &dm);
    if (rc != GW_OK)
        return rc;
    if (metric_len == 0)
        return GW_EINVAL;
    if (metric_len > GW_KEY_MAX)
        return GW_ETOOLARGE;
    if (help_len > SIZE_MAX / 4 || unit_len > SIZE_MAX / 4)
        return GW_ETOOLARGE;
    uint8_t vb[10];
    size_t vn = gw_uvarint_put(vb, help_len);
    MDB_val k = {metric_len, (void *)metric}, d = {1 + vn + help_len + unit_len, NULL};
    int mrc = mdb_put(t->txn, dm, &k, &d, MDB_RESERVE);
    if (mrc != MDB_SUCCESS)
        return terr(t, mrc, "metadata put");
    uint8_t *w = d.mv_data;
    w[0] = type;
    memcpy(w + 1, vb, vn);
    if (help_len)
        memcpy(w + 1 + vn, help, help_len);
    if (unit_len)
        memcpy(w + 1 + vn + help_len, unit, unit_len);
    return GW_OK;
}

int gw_store_metadata_each(struct gw_store_txn *t, gw_store_metadata_cb cb, void *ud)
{
    MDB_dbi dm;
    int rc = fixed(t, DB_MMETA, &dm);
    if (rc == GW_ENOTFOUND)
        return GW_OK;
    if (rc != GW_OK)
        return rc;
    MDB_cursor *c;
    if ((rc = cursor_open(t, dm, &c)) != GW_OK)
        return rc;
    MDB_val k, d;
    int mrc;
    for (mrc = mdb_cursor_get(c, &k, &d, MDB_FIRST); mrc == MDB_SUCCESS;
         mrc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
        const uint8_t *p = d.mv_data;
        uint64_t hl;
        size_t vn;
        if (d.mv_size < 2 || (vn = gw_uvarint_get(p + 1, d.mv_size - 1, &hl)) == 0 ||
            hl > d.mv_size - 1 - vn) {
            rc = GW_ECORRUPT;
            break;
        }
        const char *help = (const char *)p + 1 + vn;
        const char *unit = help + hl;
        size_t ul = d.mv_size - 1 - vn - (size_t)hl;
        rc = cb(ud, k.mv_data, k.mv_size, p[0], help, (size_t)hl, unit, ul);
        if (rc != GW_OK)
            break;
    }
    if (rc == GW_OK && mrc != MDB_NOTFOUND && mrc != MDB_SUCCESS)
        rc = terr(t, mrc, "metadata scan");
    mdb_cursor_close(c);
    return rc < 0 ? rc : GW_OK;
}

/* ---------------------------------------------------------------- blocks */

/* Partition DBI for day in a write txn, created when missing. */
static int part_for_write(struct gw_store_txn *t, int64_t day, MDB_dbi *dbi)
{
    struct gw_store *s = t->s;
    if (pv_find(&t->pending, day, dbi))
        return GW_OK;
    pthread_mutex_lock(&s->part_mu);
    size_t i = pv_lower(&s->parts, day);
    int found = i < s->parts.n && s->parts.v[i].day == day;
    if (found)
        *dbi = s->parts.v[i].dbi;
    pthread_mutex_unlock(&s->part_mu);
    if (found)
        return GW_OK;
    char name[GW_PART_NAME_MAX];
    gw_store_part_name(name, sizeof name, day);
    int mrc = mdb_dbi_open(t->txn, name, MDB_CREATE, dbi);
    if (mrc != MDB_SUCCESS)
        return terr(t, mrc, "partition create");
    return pv_push(&t->pending, day, *dbi);
}

/* Partitions with day in [dlo, dhi] valid in this txn, sorted by day. */
static int parts_collect(struct gw_store_txn *t, int64_t dlo, int64_t dhi, struct part_vec *out)
{
    struct gw_store *s = t->s;
    int rc = GW_OK;
    pthread_mutex_lock(&s->part_mu);
    for (size_t i = pv_lower(&s->parts, dlo); i < s->parts.n && s->parts.v[i].day <= dhi; i++) {
        if ((rc = pv_push(out, s->parts.v[i].day, s->parts.v[i].dbi)) != GW_OK)
            break;
    }
    pthread_mutex_unlock(&s->part_mu);
    if (rc != GW_OK)
        return rc;
    int extra = 0;
    for (size_t i = 0; i < t->pending.n; i++) {
        if (t->pending.v[i].day >= dlo && t->pending.v[i].day <= dhi) {
            if ((rc = pv_push(out, t->pending.v[i].day, t->pending.v[i].dbi)) != GW_OK)
                return rc;
            extra = 1;
        }
    }
    if (extra)
        qsort(out->v, out->n, sizeof *out->v, cmp_part);
    /* Drop handles this snapshot does not know (created after it began). */
    size_t w = 0;
    for (size_t i = 0; i < out->n; i++) {
        unsigned fl;
        if (mdb_dbi_flags(t->txn, out->v[i].dbi, &fl) == MDB_SUCCESS)
            out->v[w++] = out->v[i];
    }
    out->n = w;
    return GW_OK;
}

/* Writes one blob: "GWB1" when cols is NULL, else "GWB2" (layouts in keys.c). */
static int blob_put(struct gw_store_txn *t, uint32_t node_id, int64_t window_start,
                    const struct gw_store_blob_col *cols, size_t ncols,
                    const struct gw_store_blob_entry *entries, size_t n)
{
    int rc = need_write(t);
    if (rc != GW_OK)
        return rc;
    if (n == 0)
        return GW_OK;
    if (!entries || (ncols && !cols))
        return GW_EINVAL;
    int v2 = cols != NULL;
    size_t hdr = v2 ? GW_BLOB2_HDR : GW_BLOB_HDR;
    if (ncols > (GW_BLOB_MAX - hdr) / 4)
        return GW_ELIMIT;
    hdr += ncols * 4;
    if (n > (GW_BLOB_MAX - hdr) / GW_BLOB_ENT)
        return GW_ELIMIT;
    size_t total = hdr + n * GW_BLOB_ENT;
    for (size_t c = 0; c < ncols; c++) {
        if (!cols[c].col && cols[c].len)
            return GW_EINVAL;
        if (cols[c].len > GW_BLOB_MAX - total)
            return GW_ELIMIT;
        total += cols[c].len;
    }
    for (size_t i = 0; i < n; i++) {
        if (entries[i].sid > UINT32_MAX)
            return GW_ELIMIT;
        if (i && entries[i].sid < entries[i - 1].sid)
            return GW_EINVAL;
        if (!entries[i].block && entries[i].len)
            return GW_EINVAL;
        if (v2 && entries[i].col > ncols)
            return GW_EINVAL;
        size_t len = entries[i].len + (v2 ? uvarint_len(entries[i].col) : 0);
        if (len > GW_BLOB_MAX - total)
            return GW_ELIMIT;
        total += len;
    }
    MDB_dbi dbi;
    if ((rc = part_for_write(t, gw_store_day_of(window_start), &dbi)) != GW_OK)
        return rc;
    MDB_cursor *c;
    if ((rc = cursor_open(t, dbi, &c)) != GW_OK)
        return rc;
    /* seq: 1 + the largest one of this node and window, found just before
     * (node, window, 0xffffffff). */
    uint8_t key[GW_BLOB_KEY_LEN];
    gw_store_blob_key(key, node_id, window_start, UINT32_MAX);
    MDB_val k = {sizeof key, key}, d;
    uint32_t seq = 0;
    int mrc = mdb_cursor_get(c, &k, &d, MDB_SET_RANGE);
    if (mrc == MDB_SUCCESS) {
        if (k.mv_size == sizeof key && memcmp(k.mv_data, key, sizeof key) == 0) {
            rc = GW_ELIMIT; /* seq space of this window used up */
            goto out;
        }
        mrc = mdb_cursor_get(c, &k, &d, MDB_PREV);
    } else if (mrc == MDB_NOTFOUND) {
        mrc = mdb_cursor_get(c, &k, &d, MDB_LAST);
    }
    if (mrc == MDB_SUCCESS) {
        if (k.mv_size == sizeof key && memcmp(k.mv_data, key, 12) == 0)
            seq = gw_store_get_be32((const uint8_t *)k.mv_data + 12) + 1;
    } else if (mrc != MDB_NOTFOUND) {
        rc = terr(t, mrc, "blob seek");
        goto out;
    }
    gw_store_blob_key(key, node_id, window_start, seq);
    k.mv_data = key;
    k.mv_size = sizeof key;
    d.mv_data = NULL;
    d.mv_size = total;
    mrc = mdb_cursor_put(c, &k, &d, MDB_RESERVE);
    if (mrc != MDB_SUCCESS) {
        rc = terr(t, mrc, "blob put");
        goto out;
    }
    uint8_t *w = d.mv_data;
    memcpy(w, v2 ? "GWB2" : "GWB1", 4);
    gw_store_put_be32(w + 4, (uint32_t)n);
    uint8_t *dir = w + GW_BLOB_HDR;
    if (v2) {
        gw_store_put_be32(w + 8, (uint32_t)ncols);
        dir = w + hdr;
    }
    uint8_t *area = dir + n * GW_BLOB_ENT;
    uint32_t end = 0;
    for (size_t i = 0; i < ncols; i++) {
        if (cols[i].len)
            memcpy(area + end, cols[i].col, cols[i].len);
        end += (uint32_t)cols[i].len;
        gw_store_put_be32(w + GW_BLOB2_HDR + i * 4, end);
    }
    area += end;
    end = 0;
    for (size_t i = 0; i < n; i++) {
        if (v2) {
            size_t k2 = gw_uvarint_put(area + end, entries[i].col);
            end += (uint32_t)k2;
        }
        if (entries[i].len)
            memcpy(area + end, entries[i].block, entries[i].len);
        end += (uint32_t)entries[i].len;
        gw_store_put_be32(dir + i * GW_BLOB_ENT, (uint32_t)entries[i].sid);
        gw_store_put_be32(dir + i * GW_BLOB_ENT + 4, end);
    }
out:
    mdb_cursor_close(c);
    return rc;
}

int gw_store_blob_put(struct gw_store_txn *t, uint32_t node_id, int64_t window_start,
                      const struct gw_store_blob_entry *entries, size_t n)
{
    return blob_put(t, node_id, window_start, NULL, 0, entries, n);
}

int gw_store_blob_put_cols(struct gw_store_txn *t, uint32_t node_id, int64_t window_start,
                           const struct gw_store_blob_col *cols, size_t ncols,
                           const struct gw_store_blob_entry *entries, size_t n)
{
    static const struct gw_store_blob_col none;
    return blob_put(t, node_id, window_start, cols ? cols : &none, cols ? ncols : 0, entries, n);
}

/* Shared by blocks_get, block_parts_get and blocks_any: cb == NULL and
 * pcb == NULL means "stop at the first block and return 1". Blobs are
 * visited in key order (day, window start, seq), the blocks of a blob in
 * directory order. */
static int blocks_scan(struct gw_store_txn *t, uint32_t node_id, uint64_t sid, int64_t mint_lo, int64_t maxt,
                       gw_store_block_cb cb, gw_store_part_cb pcb, void *ud)
{
    if (!t || !t->txn)
        return GW_EINVAL;
    if (mint_lo > maxt || sid > UINT32_MAX)
        return 0;
    struct part_vec pv = {0};
    int rc = parts_collect(t, gw_store_day_of(mint_lo), gw_store_day_of(maxt), &pv);
    uint8_t seek[GW_BLOB_KEY_LEN];
    gw_store_blob_key(seek, node_id, mint_lo, 0);
    int done = 0, found = 0;
    for (size_t i = 0; rc == GW_OK && !done && i < pv.n; i++) {
        MDB_cursor *c;
        int mrc = mdb_cursor_open(t->txn, pv.v[i].dbi, &c);
        if (mrc != MDB_SUCCESS) {
            rc = terr(t, mrc, "partition cursor");
            break;
        }
        MDB_val k = {sizeof seek, seek}, d;
        for (mrc = mdb_cursor_get(c, &k, &d, MDB_SET_RANGE); mrc == MDB_SUCCESS && !done;
             mrc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
            if (k.mv_size != GW_BLOB_KEY_LEN) {
                rc = GW_ECORRUPT;
                break;
            }
            if (memcmp(k.mv_data, seek, 4) != 0)
                break;
            int64_t ws = gw_store_unbias(gw_store_get_be64((const uint8_t *)k.mv_data + 4));
            if (ws > maxt)
                break;
            struct gw_store_blob b;
            if ((rc = blob_parse_txn(t, &d, &b)) != GW_OK)
                break;
            for (uint32_t j = gw_store_blob_lower(&b, (uint32_t)sid); j < b.n && gw_store_blob_sid(&b, j) == sid;
                 j++) {
                found = 1;
                if (!cb && !pcb) {
                    done = 1;
                    break;
                }
                const uint8_t *p;
                size_t len;
                int crc;
                if (pcb) {
                    struct gw_store_block_part bp = {.window_start = ws};
                    if ((rc = gw_store_blob_split(&b, j, &p, &len, &bp.col, &bp.col_len)) != GW_OK) {
                        done = 1;
                        break;
                    }
                    if (bp.col) {
                        bp.val = p;
                        bp.val_len = len;
                    } else {
                        bp.block = p;
                        bp.len = len;
                    }
                    crc = pcb(ud, &bp);
                } else {
                    if ((rc = blob_entry(t, &b, j, &p, &len)) != GW_OK) {
                        done = 1;
                        break;
                    }
                    crc = cb(ud, ws, p, len);
                }
                if (crc != 0) {
                    rc = crc < 0 ? crc : GW_OK;
                    done = 1;
                    break;
                }
            }
        }
        /* NOTFOUND also covers a partition another process dropped. */
        if (rc == GW_OK && !done && mrc != MDB_SUCCESS && mrc != MDB_NOTFOUND)
            rc = terr(t, mrc, "blob scan");
        mdb_cursor_close(c);
    }
    free(pv.v);
    if (rc != GW_OK)
        return rc;
    return cb || pcb ? GW_OK : found;
}

/* Walks node_id's blobs from the newest partition and window backwards and
 * sets *maxt to the last timestamp of sid's last block in the first blob
 * that holds sid (later windows and seqs hold later data: ingest is in
 * order per series). INT64_MIN when none. */
static int blob_scan_newest(struct gw_store_txn *t, uint32_t node_id, uint64_t sid, int64_t *maxt)
{
    *maxt = INT64_MIN;
    if (sid > UINT32_MAX)
        return GW_OK;
    struct part_vec pv = {0};
    int rc = parts_collect(t, INT64_MIN, INT64_MAX, &pv);
    uint8_t seek[GW_BLOB_KEY_LEN];
    memset(seek, 0xff, sizeof seek);
    gw_store_put_be32(seek, node_id);
    int done = 0;
    for (size_t i = pv.n; rc == GW_OK && !done && i-- > 0;) {
        MDB_cursor *c;
        int mrc = mdb_cursor_open(t->txn, pv.v[i].dbi, &c);
        if (mrc != MDB_SUCCESS) {
            rc = terr(t, mrc, "partition cursor");
            break;
        }
        MDB_val k = {sizeof seek, seek}, d;
        mrc = mdb_cursor_get(c, &k, &d, MDB_SET_RANGE);
        if (mrc == MDB_SUCCESS)
            mrc = mdb_cursor_get(c, &k, &d, MDB_PREV);
        else if (mrc == MDB_NOTFOUND)
            mrc = mdb_cursor_get(c, &k, &d, MDB_LAST);
        for (; mrc == MDB_SUCCESS && !done; mrc = mdb_cursor_get(c, &k, &d, MDB_PREV)) {
            if (k.mv_size != GW_BLOB_KEY_LEN) {
                rc = GW_ECORRUPT;
                break;
            }
            if (memcmp(k.mv_data, seek, 4) != 0)
                break;
            struct gw_store_blob b;
            if ((rc = gw_store_blob_parse(d.mv_data, d.mv_size, &b)) != GW_OK)
                break;
            uint32_t j = gw_store_blob_lower(&b, (uint32_t)sid);
            if (j >= b.n || gw_store_blob_sid(&b, j) != sid)
                continue;
            while (j + 1 < b.n && gw_store_blob_sid(&b, j + 1) == sid)
                j++;
            const uint8_t *p;
            size_t len;
            uint32_t n;
            int64_t mi, ma;
            if ((rc = blob_entry(t, &b, j, &p, &len)) != GW_OK)
                break;
            if (gw_block_info(p, len, &n, &mi, &ma) != GW_OK) {
                rc = GW_ECORRUPT;
                break;
            }
            *maxt = ma;
            done = 1;
        }
        if (rc == GW_OK && !done && mrc != MDB_SUCCESS && mrc != MDB_NOTFOUND)
            rc = terr(t, mrc, "blob scan");
        mdb_cursor_close(c);
    }
    free(pv.v);
    return rc;
}

int gw_store_blocks_get(struct gw_store_txn *t, uint32_t node_id, uint16_t gpu, uint64_t sid, int64_t mint_lo,
                        int64_t maxt, gw_store_block_cb cb, void *ud)
{
    (void)gpu;
    if (!cb)
        return GW_EINVAL;
    return blocks_scan(t, node_id, sid, mint_lo, maxt, cb, NULL, ud);
}

int gw_store_block_parts_get(struct gw_store_txn *t, uint32_t node_id, uint16_t gpu, uint64_t sid,
                             int64_t mint_lo, int64_t maxt, gw_store_part_cb cb, void *ud)
{
    (void)gpu;
    if (!cb)
        return GW_EINVAL;
    return blocks_scan(t, node_id, sid, mint_lo, maxt, NULL, cb, ud);
}

int gw_store_blocks_any(struct gw_store_txn *t, uint32_t node_id, uint16_t gpu, uint64_t sid, int64_t mint_lo,
                        int64_t maxt)
{
    (void)gpu;
    return blocks_scan(t, node_id, sid, mint_lo, maxt, NULL, NULL, NULL);
}

int gw_store_partition_blocks_each(struct gw_store_txn *t, int64_t day, gw_store_any_block_cb cb, void *ud)
{
    if (!t || !t->txn || !cb)
        return GW_EINVAL;
    struct part_vec pv = {0};
    int rc = parts_collect(t, day, day, &pv);
    if (rc != GW_OK || pv.n == 0) {
        free(pv.v);
        return rc;
    }
    MDB_cursor *c;
    int mrc = mdb_cursor_open(t->txn, pv.v[0].dbi, &c);
    free(pv.v);
    if (mrc != MDB_SUCCESS)
        return terr(t, mrc, "partition cursor");
    MDB_val k, d;
    int done = 0;
    for (mrc = mdb_cursor_get(c, &k, &d, MDB_FIRST); mrc == MDB_SUCCESS && !done;
         mrc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
        struct gw_store_blob b;
        if (k.mv_size != GW_BLOB_KEY_LEN || gw_store_blob_parse(d.mv_data, d.mv_size, &b) != GW_OK) {
            rc = GW_ECORRUPT;
            break;
        }
        for (uint32_t j = 0; j < b.n; j++) {
            const uint8_t *p;
            size_t len;
            if ((rc = blob_entry(t, &b, j, &p, &len)) != GW_OK) {
                done = 1;
                break;
            }
            int crc = cb(ud, gw_store_blob_sid(&b, j), p, len);
            if (crc != 0) {
                rc = crc < 0 ? crc : GW_OK;
                done = 1;
                break;
            }
        }
    }
    if (rc == GW_OK && !done && mrc != MDB_SUCCESS && mrc != MDB_NOTFOUND)
        rc = terr(t, mrc, "partition scan");
    mdb_cursor_close(c);
    return rc;
}

int gw_store_partitions(struct gw_store_txn *t, gw_store_partition_cb cb, void *ud)
{
    if (!t || !t->txn || !cb)
        return GW_EINVAL;
    struct part_vec pv = {0};
    int rc = parts_collect(t, INT64_MIN, INT64_MAX, &pv);
    for (size_t i = 0; rc == GW_OK && i < pv.n; i++) {
        MDB_stat st;
        int mrc = mdb_stat(t->txn, pv.v[i].dbi, &st);
        if (mrc == MDB_NOTFOUND)
            continue;
        if (mrc != MDB_SUCCESS) {
            rc = terr(t, mrc, "partition stat");
            break;
        }
        struct gw_store_partition p = {
            .day = pv.v[i].day,
            .entries = st.ms_entries,
            .bytes = ((uint64_t)st.ms_branch_pages + st.ms_leaf_pages + st.ms_overflow_pages) * st.ms_psize,
        };
        rc = cb(ud, &p);
    }
    free(pv.v);
    return rc < 0 ? rc : GW_OK;
}

int gw_store_partitions_drop_before(struct gw_store_txn *t, int64_t before_day, unsigned *dropped)
{
    int rc = need_write(t);
    if (rc != GW_OK)
        return rc;
    struct gw_store *s = t->s;
    if (!t->gate_held) {
        /* Readers must not hold a handle that mdb_drop closes. */
        pthread_rwlock_wrlock(&s->gate);
        t->gate_held = 1;
    }
    struct part_vec victims = {0};
    for (size_t i = 0; i < t->pending.n;) {
        if (t->pending.v[i].day < before_day) {
            if ((rc = pv_push(&victims, t->pending.v[i].day, t->pending.v[i].dbi)) != GW_OK)
                goto out;
            pv_remove_at(&t->pending, i);
        } else {
            i++;
        }
    }
    pthread_mutex_lock(&s->part_mu);
    size_t cut = pv_lower(&s->parts, before_day);
    for (size_t i = 0; i < cut && rc == GW_OK; i++)
        rc = pv_push(&victims, s->parts.v[i].day, s->parts.v[i].dbi);
    if (rc == GW_OK) {
        memmove(s->parts.v, s->parts.v + cut, (s->parts.n - cut) * sizeof *s->parts.v);
        s->parts.n -= cut;
    }
    pthread_mutex_unlock(&s->part_mu);
    if (rc != GW_OK)
        goto out;
    t->dropped = victims.n > 0;
    unsigned n = 0;
    for (size_t i = 0; i < victims.n; i++) {
        int mrc = mdb_drop(t->txn, victims.v[i].dbi, 1);
        if (mrc != MDB_SUCCESS) {
            rc = terr(t, mrc, "partition drop");
            goto out;
        }
        n++;
    }
    if (dropped)
        *dropped = n;
out:
    free(victims.v);
    return rc;
}

/* ----------------------------------------------------------------- stats */

static uint64_t pages_of(const MDB_stat *st)
{
    return ((uint64_t)st->ms_branch_pages + st->ms_leaf_pages + st->ms_overflow_pages) * st->ms_psize;
}

/* Pages on LMDB's free list in txn's snapshot, counted as mdb_stat -f
 * does (each record of the free DB, dbi 0, is an ID list whose first word
 * is its length), and *trees = pages of the free and main DB trees. */
static int free_list_pages(MDB_txn *txn, uint64_t *n, uint64_t *trees)
{
    MDB_stat fs, ms;
    MDB_dbi main_dbi;
    int mrc = mdb_stat(txn, 0, &fs);
    if (mrc == MDB_SUCCESS)
        mrc = mdb_dbi_open(txn, NULL, 0, &main_dbi);
    if (mrc == MDB_SUCCESS)
        mrc = mdb_stat(txn, main_dbi, &ms);
    if (mrc != MDB_SUCCESS)
        return map_mdb(mrc);
    *trees = (uint64_t)fs.ms_branch_pages + fs.ms_leaf_pages + fs.ms_overflow_pages + ms.ms_branch_pages +
             ms.ms_leaf_pages + ms.ms_overflow_pages;
    MDB_cursor *c;
    if ((mrc = mdb_cursor_open(txn, 0, &c)) != MDB_SUCCESS)
        return map_mdb(mrc);
    MDB_val k, d;
    uint64_t total = 0;
    while ((mrc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) == MDB_SUCCESS) {
        size_t cnt;
        if (d.mv_size < sizeof cnt)
            continue;
        memcpy(&cnt, d.mv_data, sizeof cnt);
        total += cnt;
    }
    mdb_cursor_close(c);
    if (mrc != MDB_NOTFOUND)
        return map_mdb(mrc);
    *n = total;
    return GW_OK;
}

int gw_store_stats(struct gw_store *s, struct gw_store_stats *out, struct gw_error *err)
{
    if (!s || !out)
        return gw_error_set(err, GW_EINVAL, "gw_store_stats: missing argument");
    struct gw_store_txn *t;
    int rc = gw_store_read_begin(s, &t, err);
    if (rc != GW_OK)
        return rc;
    struct gw_store_stats st;
    memset(&st, 0, sizeof st);
    MDB_envinfo info;
    MDB_stat es;
    int mrc = mdb_env_info(s->env, &info);
    if (mrc == MDB_SUCCESS)
        mrc = mdb_env_stat(s->env, &es);
    if (mrc != MDB_SUCCESS) {
        rc = gw_error_set(err, map_mdb(mrc), "cannot stat store %s: %s", s->dir, mdb_strerror(mrc));
        goto out;
    }
    st.map_bytes = info.me_mapsize;
    st.page_size = es.ms_psize;
    st.used_bytes = ((uint64_t)info.me_last_pgno + 1) * es.ms_psize;
    uint64_t named = 0; /* bytes of meta and partitions */
    for (int i = 0; i < DB_COUNT; i++) {
        if (!s->have[i])
            continue;
        MDB_stat ds;
        mrc = mdb_stat(t->txn, s->dbi[i], &ds);
        if (mrc != MDB_SUCCESS) {
            rc = gw_error_set(err, map_mdb(mrc), "cannot stat %s: %s", fixed_dbs[i].name, mdb_strerror(mrc));
            goto out;
        }
        if (i == DB_SERIES)
            st.series = ds.ms_entries;
        if (i != DB_META)
            st.index_bytes += pages_of(&ds);
        else
            named += pages_of(&ds);
    }
    /* mdb_stat leaves out the pages of DUPSORT sub-databases (long
     * postings lists). They are what remains of the live pages after every
     * named database, the main and the free-list trees. */
    struct part_vec pv = {0};
    if (parts_collect(t, INT64_MIN, INT64_MAX, &pv) != GW_OK) {
        free(pv.v);
        rc = gw_error_set(err, GW_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < pv.n; i++) {
        MDB_stat ps;
        if (mdb_stat(t->txn, pv.v[i].dbi, &ps) == MDB_SUCCESS)
            named += pages_of(&ps);
    }
    free(pv.v);
    uint64_t free_pages = 0, trees = 0;
    if ((rc = free_list_pages(t->txn, &free_pages, &trees)) != GW_OK) {
        gw_error_set(err, rc, "cannot read the free list of %s", s->dir);
        goto out;
    }
    uint64_t live = st.used_bytes - (2 + free_pages) * es.ms_psize; /* 2 meta pages */
    uint64_t known = st.index_bytes + named + trees * es.ms_psize;
    if (st.used_bytes >= (2 + free_pages) * es.ms_psize && live > known)
        st.index_bytes += live - known;
    size_t dl = strlen(s->dir);
    char *path = malloc(dl + sizeof "/data.mdb");
    if (!path) {
        rc = gw_error_set(err, GW_ENOMEM, "out of memory");
        goto out;
    }
    memcpy(path, s->dir, dl);
    memcpy(path + dl, "/data.mdb", sizeof "/data.mdb");
    struct stat fst;
    if (stat(path, &fst) == 0)
        st.file_bytes = (uint64_t)fst.st_size;
    free(path);
    *out = st;
out:
    gw_store_read_end(t);
    return rc;
}
