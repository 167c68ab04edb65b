/* kv.c - the small transactional key-value store of kv.h on LMDB: one
 * environment per directory, named tables (LMDB named databases) opened
 * once at open, keys compared as bytes (LMDB's default). */
#include <errno.h>
#include <lmdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "gpuwatch/kv.h"
#include "store/store_int.h"

#define KV_MAX_TABLES 16

struct gw_kv {
    MDB_env *env;
    MDB_dbi dbi[KV_MAX_TABLES];
    unsigned n_tables;
    size_t map_bytes, map_max;
    char path[512];
};

struct gw_kv_txn {
    struct gw_kv *kv;
    MDB_txn *txn;
};

static int kv_err(int rc, struct gw_error *err, const struct gw_kv *kv, const char *what)
{
    const char *p = kv ? kv->path : "";
    if (rc == MDB_MAP_FULL) return gw_error_set(err, GW_EFULL, "%s: %s: %s", p, what, mdb_strerror(rc));
    if (rc == MDB_NOTFOUND) return gw_error_set(err, GW_ENOTFOUND, "%s: %s: not found", p, what);
    if (rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND || rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH)
        return gw_error_set(err, GW_ECORRUPT, "%s: %s: %s", p, what, mdb_strerror(rc));
    if (rc == ENOMEM) return gw_error_set(err, GW_ENOMEM, "%s: %s: out of memory", p, what);
    return gw_error_set(err, GW_ESTORE, "%s: %s: %s", p, what, mdb_strerror(rc));
}

void gw_kv_close(struct gw_kv *kv)
{
    if (!kv) return;
    if (kv->env) mdb_env_close(kv->env);
    free(kv);
}

int gw_kv_open(struct gw_kv **out, const char *path, const char *const *tables, unsigned n_tables,
               size_t map_bytes, size_t map_max, struct gw_error *err)
{
    *out = NULL;
    if (n_tables == 0 || n_tables > KV_MAX_TABLES) return gw_error_set(err, GW_EINVAL, "kv: 1 to 16 tables");
    if (strlen(path) >= sizeof((struct gw_kv *)0)->path) return gw_error_set(err, GW_EINVAL, "kv: path too long");
    if (gw_store_mkdir_durable(path) != 0) {
        char eb[128];
        return gw_error_set(err, GW_EIO, "cannot create %s: %s", path, strerror_r(errno, eb, sizeof eb));
    }
    struct gw_kv *kv = calloc(1, sizeof *kv);
    if (!kv) return gw_error_set(err, GW_ENOMEM, "out of memory");
    memcpy(kv->path, path, strlen(path) + 1);
    kv->n_tables = n_tables;
    kv->map_bytes = map_bytes;
    kv->map_max = map_max < map_bytes ? map_bytes : map_max;
    MDB_txn *txn = NULL;
    int rc = mdb_env_create(&kv->env);
    if (rc == 0) rc = mdb_env_set_maxdbs(kv->env, KV_MAX_TABLES);
    if (rc == 0) rc = mdb_env_set_mapsize(kv->env, kv->map_bytes);
    if (rc == 0) rc = mdb_env_open(kv->env, path, MDB_NOTLS, 0644);
    if (rc == 0 && gw_store_fsync_dir(path) != 0) rc = errno ? errno : EIO;   /* data.mdb's name */
    if (rc == 0) rc = mdb_txn_begin(kv->env, NULL, 0, &txn);
    for (unsigned i = 0; rc == 0 && i < n_tables; i++) rc = mdb_dbi_open(txn, tables[i], MDB_CREATE, &kv->dbi[i]);
    if (rc == 0) {
        rc = mdb_txn_commit(txn);
        txn = NULL;
    }
    if (rc != 0) {
        int e = kv_err(rc, err, kv, "open");
        if (txn) mdb_txn_abort(txn);
        gw_kv_close(kv);
        return e;
    }
    *out = kv;
    return GW_OK;
}

int gw_kv_grow(struct gw_kv *kv, struct gw_error *err)
{
    if (kv->map_bytes >= kv->map_max) return gw_error_set(err, GW_EFULL, "%s: map at its maximum", kv->path);
    size_t nb = kv->map_bytes * 2 > kv->map_max ? kv->map_max : kv->map_bytes * 2;
    int rc = mdb_env_set_mapsize(kv->env, nb);
    if (rc != 0) return kv_err(rc, err, kv, "grow");
    kv->map_bytes = nb;
    return GW_OK;
}

int gw_kv_begin(struct gw_kv *kv, int write, struct gw_kv_txn **out, struct gw_error *err)
{
    *out = NULL;
    struct gw_kv_txn *t = calloc(1, sizeof *t);
    if (!t) return gw_error_set(err, GW_ENOMEM, "out of memory");
    t->kv = kv;
    int rc = mdb_txn_begin(kv->env, NULL, write ? 0 : MDB_RDONLY, &t->txn);
    if (rc != 0) {
        free(t);
        return kv_err(rc, err, kv, "begin");
    }
    *out = t;
    return GW_OK;
}

int gw_kv_commit(struct gw_kv_txn *t, struct gw_error *err)
{
    int rc = mdb_txn_commit(t->txn);
    struct gw_kv *kv = t->kv;
    free(t);
    return rc == 0 ? GW_OK : kv_err(rc, err, kv, "commit");
}

void gw_kv_abort(struct gw_kv_txn *t)
{
    if (!t) return;
    mdb_txn_abort(t->txn);
    free(t);
}

static int table_ok(const struct gw_kv_txn *t, unsigned table, struct gw_error *err)
{
    return table < t->kv->n_tables ? GW_OK : gw_error_set(err, GW_EINVAL, "kv: no table %u", table);
}

int gw_kv_get(struct gw_kv_txn *t, unsigned table, const void *k, size_t kl, const void **v, size_t *vl,
              struct gw_error *err)
{
    int rc = table_ok(t, table, err);
    if (rc) return rc;
    MDB_val key = {kl, (void *)k}, val;
    rc = mdb_get(t->txn, t->kv->dbi[table], &key, &val);
    if (rc != 0) return rc == MDB_NOTFOUND ? GW_ENOTFOUND : kv_err(rc, err, t->kv, "get");
    *v = val.mv_data;
    *vl = val.mv_size;
    return GW_OK;
}

int gw_kv_put(struct gw_kv_txn *t, unsigned table, const void *k, size_t kl, const void *v, size_t vl,
              struct gw_error *err)
{
    int rc = table_ok(t, table, err);
    if (rc) return rc;
    MDB_val key = {kl, (void *)k}, val = {vl, (void *)v};
    rc = mdb_put(t->txn, t->kv->dbi[table], &key, &val, 0);
    return rc == 0 ? GW_OK : kv_err(rc, err, t->kv, "put");
}

int gw_kv_del(struct gw_kv_txn *t, unsigned table, const void *k, size_t kl, struct gw_error *err)
{
    int rc = table_ok(t, table, err);
    if (rc) return rc;
    MDB_val key = {kl, (void *)k};
    rc = mdb_del(t->txn, t->kv->dbi[table], &key, NULL);
    return rc == 0 || rc == MDB_NOTFOUND ? GW_OK : kv_err(rc, err, t->kv, "delete");
}

int gw_kv_last(struct gw_kv_txn *t, unsigned table, const void **k, size_t *kl, struct gw_error *err)
{
    int rc = table_ok(t, table, err);
    if (rc) return rc;
    MDB_cursor *cur;
    rc = mdb_cursor_open(t->txn, t->kv->dbi[table], &cur);
    if (rc != 0) return kv_err(rc, err, t->kv, "cursor");
    MDB_val key, val;
    rc = mdb_cursor_get(cur, &key, &val, MDB_LAST);
    mdb_cursor_close(cur);
    if (rc != 0) return rc == MDB_NOTFOUND ? GW_ENOTFOUND : kv_err(rc, err, t->kv, "last");
    *k = key.mv_data;
    *kl = key.mv_size;
    return GW_OK;
}

int gw_kv_scan(struct gw_kv_txn *t, unsigned table, const void *from, size_t from_len, gw_kv_cb cb, void *ud,
               struct gw_error *err)
{
    int rc = table_ok(t, table, err);
    if (rc) return rc;
    MDB_cursor *cur;
    rc = mdb_cursor_open(t->txn, t->kv->dbi[table], &cur);
    if (rc != 0) return kv_err(rc, err, t->kv, "cursor");
    MDB_val key = {from_len, (void *)from}, val;
    int ret = GW_OK;
    for (rc = mdb_cursor_get(cur, &key, &val, from_len ? MDB_SET_RANGE : MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &key, &val, MDB_NEXT)) {
        ret = cb(ud, key.mv_data, key.mv_size, val.mv_data, val.mv_size);
        if (ret != 0) break;
    }
    if (ret == 0 && rc != MDB_NOTFOUND) ret = kv_err(rc, err, t->kv, "scan");
    mdb_cursor_close(cur);
    return ret;
}
