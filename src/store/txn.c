/* txn.c - transactions of the LMDB series store: read and write
 * transactions, the re-run of a write callback after growing the map, the
 * refresh of the partition cache in read-only mode, and the mapping of
 * LMDB errors to gw_err codes. Locks and their order: top of store.c. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lmdb.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/store.h"
#include "store/store_int.h"

/* Read txns open on this thread: gw_store_write refuses to run while one is
 * open, since a map resize or partition drop would wait for it forever. */
static _Thread_local unsigned tl_read_txns;

/* Frees what the txn allocated for scratch: the arena of rebuilt labels,
 * the join buffer and the table of checked blobs. */
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

/* ---------------------------------------------------------------- errors */

int gw_store_map_mdb(int mrc)
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
int gw_store_terr(struct gw_store_txn *t, int mrc, const char *what)
{
    if (mrc == MDB_MAP_FULL)
        t->map_full = 1;
    if (mrc != MDB_NOTFOUND && t->mdb_rc == 0) {
        t->mdb_rc = mrc;
        snprintf(t->msg, sizeof t->msg, "%s: %s", what, mdb_strerror(mrc));
    }
    return gw_store_map_mdb(mrc);
}

/* --------------------------------------------------------- transactions */

/* Begins an LMDB txn holding txn_lock shared (and gate shared when
 * with_gate). Handles MDB_MAP_RESIZED (another process grew the map). */
int gw_store_txn_begin_locked(struct gw_store *s, unsigned flags, int with_gate, MDB_txn **out,
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
        return gw_error_set(err, gw_store_map_mdb(mrc), "cannot begin transaction in %s: %s", s->dir,
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
        rc = gw_error_set(err, gw_store_map_mdb(mrc), "cannot read map size: %s", mdb_strerror(mrc));
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
    if (gw_store_parts_scan(txn, &pv, msg, sizeof msg) == GW_OK && mdb_txn_commit(txn) == MDB_SUCCESS) {
        gw_store_parts_publish(s, &pv);
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
        rc = gw_store_txn_begin_locked(s, 0, 0, &t.txn, err);
        if (rc != GW_OK)
            break;
        rc = fn(&t, ud);
        int committed = 0;
        if (rc == GW_OK && !t.map_full) {
            int mrc = mdb_txn_commit(t.txn);
            if (mrc == MDB_SUCCESS)
                committed = 1;
            else
                rc = gw_store_terr(&t, mrc, "commit");
        } else {
            mdb_txn_abort(t.txn);
        }
        t.txn = NULL;
        if (committed)
            gw_store_parts_publish(s, &t.pending);
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
    int rc = gw_store_txn_begin_locked(s, MDB_RDONLY, 0, &txn, err);
    if (rc != GW_OK)
        return rc;
    struct part_vec pv = {0};
    char msg[128];
    pthread_mutex_lock(&s->part_mu);
    size_t txnid = mdb_txn_id(txn);
    rc = gw_store_parts_scan(txn, &pv, msg, sizeof msg);
    if (rc == GW_OK) {
        int mrc = mdb_txn_commit(txn);
        if (mrc == MDB_SUCCESS) {
            gw_store_parts_publish_locked(s, &pv);
            s->ro_seen_txnid = txnid;
        } else {
            rc = gw_error_set(err, gw_store_map_mdb(mrc), "cannot refresh partitions: %s", mdb_strerror(mrc));
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
    int rc = gw_store_txn_begin_locked(s, MDB_RDONLY, 1, &t->txn, err);
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
