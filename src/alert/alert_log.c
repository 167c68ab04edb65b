/* src/alert/alert_log.c - the alert log: every alert (labels, annotations,
 * activeAt, firedAt, resolvedAt) in its own LMDB environment DIR/alerts/,
 * separate from the series store so that alert writes never wait on a
 * store transaction. Written by gw_alerts_sync() (never on the raise path);
 * read at open to reload the active alerts.
 *
 * Named databases (integers big-endian so that key order is numeric order;
 * times biased: stored as t XOR 2^63 so negative times sort first):
 *   alerts   id(be64) -> record (below); rewritten at each change
 *   by_time  activeAt(be64 biased) id(be64) -> ""   (gw_alerts_log_foreach)
 *   active   id(be64) -> ""                         pending and firing alerts
 *   meta     "next_id" -> be64; "now" -> be64 biased (data time at the last sync)
 *
 * Record, version 1:
 *   u8 version=1 | u8 state (1 pending, 2 firing, 3 resolved) | u8 severity
 *   | u8 0 | be32 gpu (two's complement, -1 none)
 *   | be64 activeAt | be64 firedAt | be64 lastRaised | be64 resolvedAt (biased)
 *   | be64 for_ms | be64 hold_ms (biased) | be64 score (IEEE 754 bits)
 *   | 9 x { uvarint len | bytes }: alertname, hostname, detector, class,
 *     action, extra_name, extra_value, summary, evidence
 * Worked example: alert 7 "GpuXidError" critical on node-a gpu 3, D1,
 * class "gpu_lost", action "reset_gpu", extra xid=79, firing since
 * 1700000000000, pending since the same time (for 0), last raised
 * 1700000030000, hold 1800000, score 0.9, summary "XID 79", no evidence:
 *   key   00 00 00 00 00 00 00 07
 *   value 01 02 02 00 00 00 00 03
 *         80 00 01 8b cf e5 68 00   (activeAt 1700000000000 ^ 2^63)
 *         80 00 01 8b cf e5 68 00   (firedAt)
 *         80 00 01 8b cf e5 dd 30   (lastRaised 1700000030000)
 *         00 00 00 00 00 00 00 00   (resolvedAt INT64_MIN)
 *         80 00 00 00 00 00 00 00   (for 0)  80 00 00 00 00 1b 77 40 (hold)
 *         3f ec cc cc cc cc cc cd   (0.9)
 *         0b "GpuXidError" 06 "node-a" 02 "D1" 08 "gpu_lost" 09 "reset_gpu"
 *         03 "xid" 02 "79" 06 "XID 79" 00 */
#include <errno.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "gpuwatch/codec.h"
#include "alert/alert_int.h"

#define LOG_VERSION 1
#define LOG_MAP_BYTES ((size_t)256 << 20)
#define LOG_MAP_MAX ((size_t)64 << 30)
#define BIAS 0x8000000000000000ULL

struct gw_alert_log {
    MDB_env *env;
    MDB_dbi alerts, by_time, active, meta;
    size_t map_bytes;
};

static uint64_t bias(int64_t t) { return (uint64_t)t ^ BIAS; }
static int64_t unbias(uint64_t v) { return (int64_t)(v ^ BIAS); }

static int map_err(int rc, struct gw_error *err, const char *what)
{
    if (rc == MDB_MAP_FULL) return gw_error_set(err, GW_EFULL, "alert log %s: %s", what, mdb_strerror(rc));
    if (rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND || rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH)
        return gw_error_set(err, GW_ECORRUPT, "alert log %s: %s", what, mdb_strerror(rc));
    return gw_error_set(err, GW_ESTORE, "alert log %s: %s", what, mdb_strerror(rc));
}

/* ---- record codec ---- */

static size_t put_str(uint8_t *p, const char *s)
{
    size_t l = strlen(s);
    size_t n = gw_uvarint_put(p, l);
    memcpy(p + n, s, l);
    return n + l;
}

#define RECORD_MAX (64 + 9 * 10 + sizeof(struct gw_alert))

static size_t record_encode(const struct gw_alert *al, uint8_t *p)
{
    uint64_t sb;
    memcpy(&sb, &al->score, 8);
    p[0] = LOG_VERSION;
    p[1] = (uint8_t)al->state;
    p[2] = (uint8_t)al->severity;
    p[3] = 0;
    gw_put_be32(p + 4, (uint32_t)al->gpu);
    gw_put_be64(p + 8, bias(al->active_at));
    gw_put_be64(p + 16, bias(al->fired_at));
    gw_put_be64(p + 24, bias(al->last_raised));
    gw_put_be64(p + 32, bias(al->resolved_at));
    gw_put_be64(p + 40, bias(al->for_ms));
    gw_put_be64(p + 48, bias(al->hold_ms));
    gw_put_be64(p + 56, sb);
    size_t n = 64;
    n += put_str(p + n, al->alertname);
    n += put_str(p + n, al->hostname);
    n += put_str(p + n, al->detector);
    n += put_str(p + n, al->cls);
    n += put_str(p + n, al->action);
    n += put_str(p + n, al->extra_name);
    n += put_str(p + n, al->extra_value);
    n += put_str(p + n, al->summary);
    n += put_str(p + n, al->evidence);
    return n;
}

static int get_str(const uint8_t *p, size_t len, size_t *off, char *dst, size_t cap)
{
    uint64_t l;
    size_t n = gw_uvarint_get(p + *off, len - *off, &l);
    if (n == 0 || l >= cap || l > len - *off - n) return GW_ECORRUPT;
    memcpy(dst, p + *off + n, (size_t)l);
    dst[l] = '\0';
    *off += n + (size_t)l;
    return GW_OK;
}

static int record_decode(uint64_t id, const uint8_t *p, size_t len, struct gw_alert *al)
{
    memset(al, 0, sizeof *al);
    if (len < 64 || p[0] != LOG_VERSION || p[1] < GW_ALERT_PENDING || p[1] > GW_ALERT_RESOLVED || p[2] > GW_SEV_CRITICAL)
        return GW_ECORRUPT;
    al->id = id;
    al->state = (enum gw_alert_state)p[1];
    al->severity = (enum gw_severity)p[2];
    al->gpu = (int32_t)gw_get_be32(p + 4);
    if (al->gpu < -1) return GW_ECORRUPT;
    al->active_at = unbias(gw_get_be64(p + 8));
    al->fired_at = unbias(gw_get_be64(p + 16));
    al->last_raised = unbias(gw_get_be64(p + 24));
    al->resolved_at = unbias(gw_get_be64(p + 32));
    al->for_ms = unbias(gw_get_be64(p + 40));
    al->hold_ms = unbias(gw_get_be64(p + 48));
    uint64_t sb = gw_get_be64(p + 56);
    memcpy(&al->score, &sb, 8);
    size_t off = 64;
    int rc = GW_OK;
    if (rc == GW_OK) rc = get_str(p, len, &off, al->alertname, sizeof al->alertname);
    if (rc == GW_OK) rc = get_str(p, len, &off, al->hostname, sizeof al->hostname);
    if (rc == GW_OK) rc = get_str(p, len, &off, al->detector, sizeof al->detector);
    if (rc == GW_OK) rc = get_str(p, len, &off, al->cls, sizeof al->cls);
    if (rc == GW_OK) rc = get_str(p, len, &off, al->action, sizeof al->action);
    if (rc == GW_OK) rc = get_str(p, len, &off, al->extra_name, sizeof al->extra_name);
    if (rc == GW_OK) rc = get_str(p, len, &off, al->extra_value, sizeof al->extra_value);
    if (rc == GW_OK) rc = get_str(p, len, &off, al->summary, sizeof al->summary);
    if (rc == GW_OK) rc = get_str(p, len, &off, al->evidence, sizeof al->evidence);
    if (rc == GW_OK && (off != len || !al->alertname[0])) rc = GW_ECORRUPT;
    return rc;
}

/* ---- open ---- */

void gw_alert_log_close(struct gw_alert_log *l)
{
    if (!l) return;
    if (l->env) mdb_env_close(l->env);
    free(l);
}

static int meta_u64(MDB_txn *txn, MDB_dbi dbi, const char *k, uint64_t *v)
{
    MDB_val key = {strlen(k), (void *)k}, val;
    int rc = mdb_get(txn, dbi, &key, &val);
    if (rc != 0) return rc;
    if (val.mv_size != 8) return MDB_CORRUPTED;
    *v = gw_get_be64(val.mv_data);
    return 0;
}

int gw_alert_log_open(struct gw_alerts *a, const char *dir, struct gw_alert_log **out, uint64_t *next_id,
                      int64_t *now, struct gw_error *err)
{
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/alerts", dir);
    if (n < 0 || (size_t)n >= sizeof path) return gw_error_set(err, GW_EINVAL, "alert log dir too long: %s", dir);
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
        char eb[128];
        return gw_error_set(err, GW_EIO, "cannot create %s: %s", path, strerror_r(errno, eb, sizeof eb));
    }
    struct gw_alert_log *l = calloc(1, sizeof *l);
    if (!l) return gw_error_set(err, GW_ENOMEM, "out of memory");
    l->map_bytes = LOG_MAP_BYTES;
    MDB_txn *txn = NULL;
    MDB_cursor *cur = NULL;
    int rc = mdb_env_create(&l->env);
    if (rc == 0) rc = mdb_env_set_maxdbs(l->env, 8);
    if (rc == 0) rc = mdb_env_set_mapsize(l->env, l->map_bytes);
    if (rc == 0) rc = mdb_env_open(l->env, path, MDB_NOTLS, 0644);
    if (rc == 0) rc = mdb_txn_begin(l->env, NULL, 0, &txn);
    if (rc == 0) rc = mdb_dbi_open(txn, "alerts", MDB_CREATE, &l->alerts);
    if (rc == 0) rc = mdb_dbi_open(txn, "by_time", MDB_CREATE, &l->by_time);
    if (rc == 0) rc = mdb_dbi_open(txn, "active", MDB_CREATE, &l->active);
    if (rc == 0) rc = mdb_dbi_open(txn, "meta", MDB_CREATE, &l->meta);
    if (rc != 0) {
        int e = map_err(rc, err, "open");
        gw_error_set(err, e, "cannot open alert log %s: %s", path, mdb_strerror(rc));
        if (txn) mdb_txn_abort(txn);
        gw_alert_log_close(l);
        return e;
    }
    uint64_t nid = 1, nw = bias(INT64_MIN);
    int r1 = meta_u64(txn, l->meta, "next_id", &nid);
    int r2 = meta_u64(txn, l->meta, "now", &nw);
    if ((r1 != 0 && r1 != MDB_NOTFOUND) || (r2 != 0 && r2 != MDB_NOTFOUND)) {
        rc = r1 != 0 && r1 != MDB_NOTFOUND ? r1 : r2;
        goto fail;
    }
    /* The largest id stored bounds next_id too. */
    rc = mdb_cursor_open(txn, l->alerts, &cur);
    if (rc != 0) goto fail;
    MDB_val k, v;
    if (mdb_cursor_get(cur, &k, &v, MDB_LAST) == 0 && k.mv_size == 8 && gw_get_be64(k.mv_data) >= nid)
        nid = gw_get_be64(k.mv_data) + 1;
    mdb_cursor_close(cur);
    cur = NULL;
    rc = mdb_cursor_open(txn, l->active, &cur);
    if (rc != 0) goto fail;
    for (int op = MDB_FIRST; (rc = mdb_cursor_get(cur, &k, &v, (MDB_cursor_op)op)) == 0; op = MDB_NEXT) {
        if (k.mv_size != 8) {
            rc = MDB_CORRUPTED;
            goto fail;
        }
        MDB_val rv;
        int g = mdb_get(txn, l->alerts, &k, &rv);
        if (g == MDB_NOTFOUND) continue;
        if (g != 0) {
            rc = g;
            goto fail;
        }
        struct gw_alert al;
        if (record_decode(gw_get_be64(k.mv_data), rv.mv_data, rv.mv_size, &al) != GW_OK) {
            mdb_cursor_close(cur);
            mdb_txn_abort(txn);
            gw_alert_log_close(l);
            return gw_error_set(err, GW_ECORRUPT, "alert log %s: record %llu is corrupt", path,
                                (unsigned long long)gw_get_be64(k.mv_data));
        }
        int r = gw_alerts_restore_locked(a, &al);
        if (r == GW_ENOMEM) {
            mdb_cursor_close(cur);
            mdb_txn_abort(txn);
            gw_alert_log_close(l);
            return gw_error_set(err, GW_ENOMEM, "out of memory reloading alerts");
        }
    }
    if (rc != MDB_NOTFOUND) goto fail;
    mdb_cursor_close(cur);
    cur = NULL;
    rc = mdb_txn_commit(txn);
    txn = NULL;
    if (rc != 0) goto fail;
    *next_id = nid;
    *now = unbias(nw);
    *out = l;
    return GW_OK;
fail:
    if (cur) mdb_cursor_close(cur);
    if (txn) mdb_txn_abort(txn);
    gw_alert_log_close(l);
    return map_err(rc, err, "open");
}

/* ---- write ---- */

static int write_txn(struct gw_alert_log *l, const struct gw_alert *als, size_t n, uint64_t next_id, int64_t now)
{
    MDB_txn *txn;
    uint8_t rec[RECORD_MAX];
    uint8_t kb[16], mb[8];
    int rc = mdb_txn_begin(l->env, NULL, 0, &txn);
    if (rc != 0) return rc;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const struct gw_alert *al = &als[i];
        gw_put_be64(kb, al->id);
        MDB_val k = {8, kb}, v = {record_encode(al, rec), rec};
        rc = mdb_put(txn, l->alerts, &k, &v, 0);
        if (rc == 0) {
            MDB_val e = {0, (void *)""};
            if (al->state == GW_ALERT_RESOLVED) {
                rc = mdb_del(txn, l->active, &k, NULL);
                if (rc == MDB_NOTFOUND) rc = 0;
            } else {
                rc = mdb_put(txn, l->active, &k, &e, 0);
            }
        }
        if (rc == 0) {
            uint8_t tk[16];
            gw_put_be64(tk, bias(al->active_at));
            gw_put_be64(tk + 8, al->id);
            MDB_val k2 = {16, tk}, e = {0, (void *)""};
            rc = mdb_put(txn, l->by_time, &k2, &e, 0);
        }
    }
    if (rc == 0) {
        gw_put_be64(mb, next_id);
        MDB_val k = {7, (void *)"next_id"}, v = {8, mb};
        rc = mdb_put(txn, l->meta, &k, &v, 0);
    }
    if (rc == 0) {
        gw_put_be64(mb, bias(now));
        MDB_val k = {3, (void *)"now"}, v = {8, mb};
        rc = mdb_put(txn, l->meta, &k, &v, 0);
    }
    if (rc != 0) {
        mdb_txn_abort(txn);
        return rc;
    }
    return mdb_txn_commit(txn);
}

int gw_alert_log_write(struct gw_alert_log *l, const struct gw_alert *als, size_t n, uint64_t next_id,
                       int64_t now, struct gw_error *err)
{
    int rc;
    for (;;) {
        rc = write_txn(l, als, n, next_id, now);
        if (rc != MDB_MAP_FULL || l->map_bytes >= LOG_MAP_MAX) break;
        /* No transaction is open here (log_mu serialises every use). */
        l->map_bytes *= 2;
        int r = mdb_env_set_mapsize(l->env, l->map_bytes);
        if (r != 0) {
            rc = r;
            break;
        }
    }
    return rc == 0 ? GW_OK : map_err(rc, err, "write");
}

/* ---- read ---- */

int gw_alert_log_foreach(struct gw_alert_log *l, int64_t mint, int64_t maxt, gw_alerts_cb cb, void *ud,
                         struct gw_error *err)
{
    MDB_txn *txn;
    MDB_cursor *cur;
    struct gw_alert *v = NULL;
    size_t n = 0, cap = 0;
    int rc = mdb_txn_begin(l->env, NULL, MDB_RDONLY, &txn);
    if (rc != 0) return map_err(rc, err, "read");
    rc = mdb_cursor_open(txn, l->by_time, &cur);
    if (rc != 0) {
        mdb_txn_abort(txn);
        return map_err(rc, err, "read");
    }
    uint8_t kb[16];
    gw_put_be64(kb, bias(mint));
    gw_put_be64(kb + 8, 0);
    MDB_val k = {16, kb}, val;
    int ret = GW_OK;
    for (rc = mdb_cursor_get(cur, &k, &val, MDB_SET_RANGE); rc == 0; rc = mdb_cursor_get(cur, &k, &val, MDB_NEXT)) {
        if (k.mv_size != 16) {
            ret = gw_error_set(err, GW_ECORRUPT, "alert log: bad time index key");
            break;
        }
        if (unbias(gw_get_be64(k.mv_data)) > maxt) break;
        MDB_val ik = {8, (uint8_t *)k.mv_data + 8}, rv;
        int g = mdb_get(txn, l->alerts, &ik, &rv);
        if (g == MDB_NOTFOUND) continue;
        if (g != 0) {
            ret = map_err(g, err, "read");
            break;
        }
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 64;
            struct gw_alert *p = realloc(v, nc * sizeof *p);
            if (!p) {
                ret = gw_error_set(err, GW_ENOMEM, "out of memory");
                break;
            }
            v = p;
            cap = nc;
        }
        if (record_decode(gw_get_be64(ik.mv_data), rv.mv_data, rv.mv_size, &v[n]) != GW_OK) {
            ret = gw_error_set(err, GW_ECORRUPT, "alert log: record %llu is corrupt",
                               (unsigned long long)gw_get_be64(ik.mv_data));
            break;
        }
        n++;
    }
    if (ret == GW_OK && rc != 0 && rc != MDB_NOTFOUND) ret = map_err(rc, err, "read");
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    for (size_t i = 0; ret == GW_OK && i < n; i++)
        if (cb(ud, &v[i]) != 0) break;
    free(v);
    return ret;
}
