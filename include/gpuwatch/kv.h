/* gpuwatch/kv.h - a small transactional key-value store: one LMDB
 * environment in a directory with a fixed list of named tables, byte-string
 * keys in byte order. For the data gpuwatch keeps next to the series store
 * (the alert log), so that only the store module talks to LMDB.
 *
 * Transactions: any number of readers, one writer at a time (a second
 * write transaction waits). The map grows on demand: a put or commit that
 * finds the map full returns GW_EFULL; abort, call gw_kv_grow() with no
 * transaction open, and retry.
 *
 * Errors: GW_EIO (directory / open), GW_EFULL (map full at its maximum or
 * until grown), GW_ECORRUPT (LMDB reports damage), GW_ESTORE (other LMDB
 * failure), GW_ENOTFOUND (get / last on a missing key), GW_ENOMEM.
 * Layer: L2 storage and wire (src/store/); includes only its layer and below (docs/architecture.md). */
#ifndef GW_KV_H
#define GW_KV_H

#include <stddef.h>
#include <stdint.h>
#include "gpuwatch/err.h"

struct gw_kv;
struct gw_kv_txn;

/* Opens (creating dir and tables as needed) path with the tables named in
 * tables[0..n_tables) (at most 16); a table is later named by its index.
 * The map starts at map_bytes and may grow up to map_max. */
int gw_kv_open(struct gw_kv **out, const char *path, const char *const *tables, unsigned n_tables,
               size_t map_bytes, size_t map_max, struct gw_error *err);
void gw_kv_close(struct gw_kv *kv);   /* NULL ok; no transaction may be open */

/* Doubles the map up to its maximum: GW_OK, or GW_EFULL at the maximum.
 * No transaction may be open. */
int gw_kv_grow(struct gw_kv *kv, struct gw_error *err);

int gw_kv_begin(struct gw_kv *kv, int write, struct gw_kv_txn **out, struct gw_error *err);
/* Commit ends the transaction whatever it returns. */
int gw_kv_commit(struct gw_kv_txn *t, struct gw_error *err);
void gw_kv_abort(struct gw_kv_txn *t);   /* NULL ok */

/* *v / *vl borrowed until the transaction ends. */
int gw_kv_get(struct gw_kv_txn *t, unsigned table, const void *k, size_t kl, const void **v, size_t *vl,
              struct gw_error *err);
int gw_kv_put(struct gw_kv_txn *t, unsigned table, const void *k, size_t kl, const void *v, size_t vl,
              struct gw_error *err);
/* Deleting a missing key is not an error. */
int gw_kv_del(struct gw_kv_txn *t, unsigned table, const void *k, size_t kl, struct gw_error *err);
/* The largest key of a table (borrowed); GW_ENOTFOUND when empty. */
int gw_kv_last(struct gw_kv_txn *t, unsigned table, const void **k, size_t *kl, struct gw_error *err);

/* Calls cb for every entry with key >= from (from_len 0: all), in key
 * order, until cb returns nonzero (then that value is returned) or the
 * table ends (GW_OK). Pointers are borrowed for the call. */
typedef int (*gw_kv_cb)(void *ud, const void *k, size_t kl, const void *v, size_t vl);
int gw_kv_scan(struct gw_kv_txn *t, unsigned table, const void *from, size_t from_len, gw_kv_cb cb, void *ud,
               struct gw_error *err);

#endif /* GW_KV_H */
