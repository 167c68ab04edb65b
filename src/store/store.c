/* store.c - the LMDB series store: opening and closing the environment
 * (format version check), the meta counters, metric metadata and stats.
 * The other store.h operations live beside it: txn.c (transactions, map
 * growth), partitions.c (per-day DBIs, retention), series.c (series and
 * nodes), index.c (postings, label values), blocks.c (blobs of blocks).
 * Key and value layouts are documented at the top of keys.c.
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
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <lmdb.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/store.h"
#include "store/store_int.h"

#define GW_STORE_MAXDBS 1100          /* three years of days + fixed DBs */
#define GW_STORE_MAXREADERS 512
#define GW_STORE_DEFAULT_MAP (UINT64_C(1) << 30)
#define GW_STORE_DEFAULT_MAX (UINT64_C(4) << 40)
#define GW_STORE_MIN_MAP (UINT64_C(128) << 10)
/* Format 3 adds "GWB2" blobs (shared timestamp columns, keys.c), format 4
 * "GWB3" blobs (GWB2 with checksums) and version 2 rollup values (with a
 * checksum, src/db/downsample.c), format 5 the block codec's linear
 * prediction value order and ANS sequence kind (src/chunk/block.c) in any
 * block, blob or rollup value, and version 3 rollup values with their
 * nodes' records of time profiles (src/db/downsample_prof.c). Older stores are read as they are and
 * marked 5 by the first read-write open, so older builds refuse it by its
 * version instead of meeting blocks they cannot read. */
#define GW_STORE_FORMAT 5
#define GW_STORE_FORMAT_MIN 2

/* Names and flags of the fixed databases (enum in store_int.h). */
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

/* ------------------------------------------------------------ open/close */

int gw_store_fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int r = fsync(fd);
    int e = errno;
    close(fd);
    errno = e;
    return r;
}

int gw_store_mkdir_durable(const char *path)
{
    if (mkdir(path, 0755) != 0)
        return errno == EEXIST ? 0 : -1;
    char parent[4096];
    size_t n = strlen(path);
    if (n >= sizeof parent)
        return 0;
    memcpy(parent, path, n + 1);
    char *slash = strrchr(parent, '/');
    if (slash == parent)
        slash[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        snprintf(parent, sizeof parent, ".");
    return gw_store_fsync_dir(parent);
}

/* mkdir -p; each directory it creates is made durable in its parent. */
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
        if (gw_store_mkdir_durable(p) != 0) {
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
        return gw_store_terr(t, mrc, fixed_dbs[DB_META].name);
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
            return gw_store_terr(t, mrc, fixed_dbs[i].name);
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
    rc = gw_store_parts_scan(t->txn, &t->pending, t->msg, sizeof t->msg);
    if (rc != GW_OK && t->mdb_rc == 0)
        t->mdb_rc = -1;
    return rc;
}

static int open_read_only(struct gw_store *s, struct gw_error *err)
{
    MDB_txn *txn;
    int rc = gw_store_txn_begin_locked(s, MDB_RDONLY, 0, &txn, err);
    if (rc != GW_OK)
        return rc;
    for (int i = 0; i < DB_COUNT; i++) {
        int mrc = mdb_dbi_open(txn, fixed_dbs[i].name, 0, &s->dbi[i]);
        if (mrc == MDB_SUCCESS) {
            s->have[i] = 1;
        } else if (mrc != MDB_NOTFOUND) {
            mdb_txn_abort(txn);
            pthread_rwlock_unlock(&s->txn_lock);
            return gw_error_set(err, gw_store_map_mdb(mrc), "cannot open database %s in %s: %s", fixed_dbs[i].name,
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
        } else if (mrc == MDB_SUCCESS && (gw_get_be64(d.mv_data) < GW_STORE_FORMAT_MIN ||
                                          gw_get_be64(d.mv_data) > GW_STORE_FORMAT)) {
            rc = version_refused(msg, sizeof msg, gw_get_be64(d.mv_data));
        } else if (mrc != MDB_SUCCESS && mrc != MDB_NOTFOUND) {
            rc = gw_store_map_mdb(mrc);
            snprintf(msg, sizeof msg, "cannot read format version: %s", mdb_strerror(mrc));
        }
    }
    if (rc == GW_OK)
        rc = gw_store_parts_scan(txn, &pv, msg, sizeof msg);
    if (rc == GW_OK) {
        int mrc = mdb_txn_commit(txn);
        if (mrc != MDB_SUCCESS)
            rc = gw_error_set(err, gw_store_map_mdb(mrc), "cannot open store %s: %s", s->dir, mdb_strerror(mrc));
    } else {
        mdb_txn_abort(txn);
        gw_error_set(err, rc, "cannot open store %s: %s", s->dir, msg);
    }
    pthread_rwlock_unlock(&s->txn_lock);
    if (rc == GW_OK) {
        gw_store_parts_publish(s, &pv);
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
        rc = gw_error_set(err, gw_store_map_mdb(mrc), "cannot create store env: %s", mdb_strerror(mrc));
        goto fail;
    }
    mrc = mdb_env_set_maxdbs(s->env, GW_STORE_MAXDBS);
    if (mrc == MDB_SUCCESS)
        mrc = mdb_env_set_maxreaders(s->env, GW_STORE_MAXREADERS);
    /* Read-only without an explicit size: map what the file's meta says. */
    if (mrc == MDB_SUCCESS && (!s->read_only || o->initial_map_bytes))
        mrc = mdb_env_set_mapsize(s->env, (size_t)map);
    if (mrc != MDB_SUCCESS) {
        rc = gw_error_set(err, gw_store_map_mdb(mrc), "cannot configure store env: %s", mdb_strerror(mrc));
        goto fail;
    }
    if (!s->read_only) {
        /* A compacting copy that did not reach its rename (compact.c). */
        char tmp[4096];
        if ((size_t)snprintf(tmp, sizeof tmp, "%s/%s", s->dir, GW_STORE_COMPACT_TMP) < sizeof tmp)
            (void)unlink(tmp);
    }
    unsigned flags = MDB_NOTLS;
    if (s->read_only)
        flags |= MDB_RDONLY;
    else if (!o->durable)
        flags |= o->ordered ? MDB_NOMETASYNC : MDB_NOSYNC;
    mrc = mdb_env_open(s->env, s->dir, flags, 0644);
    if (mrc != MDB_SUCCESS) {
        rc = gw_error_set(err, mrc == ENOENT ? GW_ENOTFOUND : gw_store_map_mdb(mrc), "cannot open store %s: %s",
                          s->dir, mdb_strerror(mrc));
        goto fail;
    }
    /* LMDB creates data.mdb but never syncs its directory: without this a
     * power cut can take the whole file away after the WAL that fed it was
     * truncated. */
    if (!s->read_only && gw_store_fsync_dir(s->dir) != 0) {
        char eb[128];
        rc = gw_error_set(err, GW_EIO, "cannot sync directory %s: %s", s->dir, strerror_r(errno, eb, sizeof eb));
        goto fail;
    }
    if (s->read_only) {
        rc = open_read_only(s, err);
    } else {
        rc = gw_store_write(s, open_init_fn, NULL, err);
        /* Commits do not sync (MDB_NOSYNC; checkpoints call gw_store_sync),
         * so a new store would stay an empty data.mdb on disk until the
         * first checkpoint, which read-only opens (gpuwatch verify) refuse. */
        if (rc == GW_OK)
            rc = gw_store_sync(s, err);
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
        return gw_error_set(err, mrc == EIO ? GW_EIO : gw_store_map_mdb(mrc), "cannot sync store %s: %s", s->dir,
                            mdb_strerror(mrc));
    return GW_OK;
}

/* ------------------------------------------------------------------ meta */

int gw_store_meta_get_u64(struct gw_store_txn *t, const char *key, uint64_t *v)
{
    MDB_dbi dbi;
    int rc = gw_store_fixed_dbi(t, DB_META, &dbi);
    if (rc != GW_OK)
        return rc;
    if (!key || !key[0] || strlen(key) > GW_KEY_MAX)
        return GW_EINVAL;
    MDB_val k = {strlen(key), (void *)key}, d;
    int mrc = mdb_get(t->txn, dbi, &k, &d);
    if (mrc != MDB_SUCCESS)
        return gw_store_terr(t, mrc, "meta get");
    if (d.mv_size != 8)
        return GW_ECORRUPT;
    *v = gw_get_be64(d.mv_data);
    return GW_OK;
}

int gw_store_meta_put_u64(struct gw_store_txn *t, const char *key, uint64_t v)
{
    MDB_dbi dbi;
    int rc = gw_store_need_write(t);
    if (rc == GW_OK)
        rc = gw_store_fixed_dbi(t, DB_META, &dbi);
    if (rc != GW_OK)
        return rc;
    if (!key || !key[0] || strlen(key) > GW_KEY_MAX)
        return GW_EINVAL;
    uint8_t b[8];
    gw_put_be64(b, v);
    MDB_val k = {strlen(key), (void *)key}, d = {8, b};
    int mrc = mdb_put(t->txn, dbi, &k, &d, 0);
    return mrc == MDB_SUCCESS ? GW_OK : gw_store_terr(t, mrc, "meta put");
}

/* -------------------------------------------------------------- metadata */

int gw_store_metadata_put(struct gw_store_txn *t, const char *metric, size_t metric_len, uint8_t type,
                          const char *help, size_t help_len, const char *unit, size_t unit_len)
{
    MDB_dbi dm;
    int rc = gw_store_need_write(t);
    if (rc == GW_OK)
        rc = gw_store_fixed_dbi(t, DB_MMETA, &dm);
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
        return gw_store_terr(t, mrc, "metadata put");
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
    MDB_cursor *c;
    int rc = gw_store_fixed_cursor(t, DB_MMETA, &c);
    if (rc != GW_OK)
        return rc == GW_ENOTFOUND ? GW_OK : rc;
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
        rc = gw_store_terr(t, mrc, "metadata scan");
    mdb_cursor_close(c);
    return rc < 0 ? rc : GW_OK;
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
        return gw_store_map_mdb(mrc);
    *trees = (uint64_t)fs.ms_branch_pages + fs.ms_leaf_pages + fs.ms_overflow_pages + ms.ms_branch_pages +
             ms.ms_leaf_pages + ms.ms_overflow_pages;
    MDB_cursor *c;
    if ((mrc = mdb_cursor_open(txn, 0, &c)) != MDB_SUCCESS)
        return gw_store_map_mdb(mrc);
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
        return gw_store_map_mdb(mrc);
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
        rc = gw_error_set(err, gw_store_map_mdb(mrc), "cannot stat store %s: %s", s->dir, mdb_strerror(mrc));
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
            rc = gw_error_set(err, gw_store_map_mdb(mrc), "cannot stat %s: %s", fixed_dbs[i].name, mdb_strerror(mrc));
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
    if (gw_store_parts_collect(t, INT64_MIN, INT64_MAX, &pv) != GW_OK) {
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
    st.live_bytes = st.used_bytes >= (2 + free_pages) * es.ms_psize ? live : 0;
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
