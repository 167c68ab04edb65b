/* src/alert/alert_log.c - the alert log: every alert (labels, annotations,
 * activeAt, firedAt, resolvedAt) in its own key-value environment
 * DIR/alerts/ (kv.h, LMDB underneath),
 * separate from the series store so that alert writes never wait on a
 * store transaction. Written by gw_alerts_sync() (never on the raise path);
 * read at open to reload the active alerts.
 *
 * Tables (integers big-endian so that key order is numeric order;
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/kv.h"
#include "alert/alert_int.h"

#define LOG_VERSION 1
#define LOG_MAP_BYTES ((size_t)256 << 20)
#define LOG_MAP_MAX ((size_t)64 << 30)
#define BIAS 0x8000000000000000ULL

enum { T_ALERTS, T_BY_TIME, T_ACTIVE, T_META };
static const char *const k_tables[] = {"alerts", "by_time", "active", "meta"};

struct gw_alert_log {
    struct gw_kv *kv;
};

static uint64_t bias(int64_t t) { return (uint64_t)t ^ BIAS; }
static int64_t unbias(uint64_t v) { return (int64_t)(v ^ BIAS); }

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
    gw_kv_close(l->kv);
    free(l);
}

static int meta_u64(struct gw_kv_txn *t, const char *k, uint64_t *v, struct gw_error *err)
{
    const void *p;
    size_t n;
    int rc = gw_kv_get(t, T_META, k, strlen(k), &p, &n, err);
    if (rc != GW_OK) return rc;
    if (n != 8) return gw_error_set(err, GW_ECORRUPT, "alert log: bad meta value %s", k);
    *v = gw_get_be64(p);
    return GW_OK;
}

struct reload {
    struct gw_alerts *a;
    struct gw_kv_txn *t;
    struct gw_error *err;
};

/* One id of the active table: decode its record and restore it. */
static int reload_one(void *ud, const void *k, size_t kl, const void *v, size_t vl)
{
    (void)v;
    (void)vl;
    struct reload *r = ud;
    if (kl != 8) return gw_error_set(r->err, GW_ECORRUPT, "alert log: bad active key");
    const void *rv;
    size_t rl;
    int g = gw_kv_get(r->t, T_ALERTS, k, 8, &rv, &rl, r->err);
    if (g == GW_ENOTFOUND) return 0;
    if (g != GW_OK) return g;
    struct gw_alert al;
    if (record_decode(gw_get_be64(k), rv, rl, &al) != GW_OK)
        return gw_error_set(r->err, GW_ECORRUPT, "alert log: record %llu is corrupt",
                            (unsigned long long)gw_get_be64(k));
    if (gw_alerts_restore_locked(r->a, &al) == GW_ENOMEM)
        return gw_error_set(r->err, GW_ENOMEM, "out of memory reloading alerts");
    return 0;
}

int gw_alert_log_open(struct gw_alerts *a, const char *dir, struct gw_alert_log **out, uint64_t *next_id,
                      int64_t *now, struct gw_error *err)
{
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/alerts", dir);
    if (n < 0 || (size_t)n >= sizeof path) return gw_error_set(err, GW_EINVAL, "alert log dir too long: %s", dir);
    struct gw_alert_log *l = calloc(1, sizeof *l);
    if (!l) return gw_error_set(err, GW_ENOMEM, "out of memory");
    int rc = gw_kv_open(&l->kv, path, k_tables, 4, LOG_MAP_BYTES, LOG_MAP_MAX, err);
    if (rc != GW_OK) {
        free(l);
        return rc;
    }
    struct gw_kv_txn *t = NULL;
    uint64_t nid = 1, nw = bias(INT64_MIN);
    rc = gw_kv_begin(l->kv, 1, &t, err);
    if (rc == GW_OK) {
        rc = meta_u64(t, "next_id", &nid, err);
        if (rc == GW_ENOTFOUND) rc = GW_OK;
    }
    if (rc == GW_OK) {
        rc = meta_u64(t, "now", &nw, err);
        if (rc == GW_ENOTFOUND) rc = GW_OK;
    }
    if (rc == GW_OK) {
        /* the largest id stored bounds next_id too */
        const void *k;
        size_t kl;
        rc = gw_kv_last(t, T_ALERTS, &k, &kl, err);
        if (rc == GW_OK && kl == 8 && gw_get_be64(k) >= nid) nid = gw_get_be64(k) + 1;
        if (rc == GW_ENOTFOUND) rc = GW_OK;
    }
    if (rc == GW_OK) {
        struct reload r = {a, t, err};
        rc = gw_kv_scan(t, T_ACTIVE, NULL, 0, reload_one, &r, err);
    }
    if (rc == GW_OK) {
        rc = gw_kv_commit(t, err);
        t = NULL;
    }
    if (rc != GW_OK) {
        gw_kv_abort(t);
        gw_alert_log_close(l);
        return rc;
    }
    *next_id = nid;
    *now = unbias(nw);
    *out = l;
    return GW_OK;
}

/* ---- write ---- */

static int write_txn(struct gw_alert_log *l, const struct gw_alert *als, size_t n, uint64_t next_id, int64_t now,
                     struct gw_error *err)
{
    struct gw_kv_txn *t;
    uint8_t rec[RECORD_MAX];
    uint8_t kb[8], tk[16], mb[8];
    int rc = gw_kv_begin(l->kv, 1, &t, err);
    if (rc != GW_OK) return rc;
    for (size_t i = 0; rc == GW_OK && i < n; i++) {
        const struct gw_alert *al = &als[i];
        gw_put_be64(kb, al->id);
        rc = gw_kv_put(t, T_ALERTS, kb, 8, rec, record_encode(al, rec), err);
        if (rc == GW_OK)
            rc = al->state == GW_ALERT_RESOLVED ? gw_kv_del(t, T_ACTIVE, kb, 8, err)
                                                : gw_kv_put(t, T_ACTIVE, kb, 8, "", 0, err);
        if (rc == GW_OK) {
            gw_put_be64(tk, bias(al->active_at));
            gw_put_be64(tk + 8, al->id);
            rc = gw_kv_put(t, T_BY_TIME, tk, 16, "", 0, err);
        }
    }
    if (rc == GW_OK) {
        gw_put_be64(mb, next_id);
        rc = gw_kv_put(t, T_META, "next_id", 7, mb, 8, err);
    }
    if (rc == GW_OK) {
        gw_put_be64(mb, bias(now));
        rc = gw_kv_put(t, T_META, "now", 3, mb, 8, err);
    }
    if (rc != GW_OK) {
        gw_kv_abort(t);
        return rc;
    }
    return gw_kv_commit(t, err);
}

int gw_alert_log_write(struct gw_alert_log *l, const struct gw_alert *als, size_t n, uint64_t next_id,
                       int64_t now, struct gw_error *err)
{
    int rc;
    /* No transaction is open between tries (log_mu serialises every use). */
    while ((rc = write_txn(l, als, n, next_id, now, err)) == GW_EFULL)
        if (gw_kv_grow(l->kv, err) != GW_OK) break;
    return rc;
}

/* ---- read ---- */

struct collect {
    struct gw_kv_txn *t;
    int64_t maxt;
    struct gw_alert *v;
    size_t n, cap;
    struct gw_error *err;
};

static int collect_one(void *ud, const void *k, size_t kl, const void *val, size_t vl)
{
    (void)val;
    (void)vl;
    struct collect *c = ud;
    if (kl != 16) return gw_error_set(c->err, GW_ECORRUPT, "alert log: bad time index key");
    if (unbias(gw_get_be64(k)) > c->maxt) return 1;   /* past the range: stop */
    const uint8_t *ik = (const uint8_t *)k + 8;
    const void *rv;
    size_t rl;
    int g = gw_kv_get(c->t, T_ALERTS, ik, 8, &rv, &rl, c->err);
    if (g == GW_ENOTFOUND) return 0;
    if (g != GW_OK) return g;
    if (c->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 64;
        struct gw_alert *p = realloc(c->v, nc * sizeof *p);
        if (!p) return gw_error_set(c->err, GW_ENOMEM, "out of memory");
        c->v = p;
        c->cap = nc;
    }
    if (record_decode(gw_get_be64(ik), rv, rl, &c->v[c->n]) != GW_OK)
        return gw_error_set(c->err, GW_ECORRUPT, "alert log: record %llu is corrupt",
                            (unsigned long long)gw_get_be64(ik));
    c->n++;
    return 0;
}

int gw_alert_log_foreach(struct gw_alert_log *l, int64_t mint, int64_t maxt, gw_alerts_cb cb, void *ud,
                         struct gw_error *err)
{
    struct gw_kv_txn *t;
    int rc = gw_kv_begin(l->kv, 0, &t, err);
    if (rc != GW_OK) return rc;
    uint8_t from[16];
    gw_put_be64(from, bias(mint));
    gw_put_be64(from + 8, 0);
    struct collect c = {.t = t, .maxt = maxt, .err = err};
    rc = gw_kv_scan(t, T_BY_TIME, from, 16, collect_one, &c, err);
    if (rc == 1) rc = GW_OK;
    gw_kv_abort(t);
    for (size_t i = 0; rc == GW_OK && i < c.n; i++)
        if (cb(ud, &c.v[i]) != 0) break;
    free(c.v);
    return rc;
}

int gw_alerts_log_read(const char *data_dir, int64_t mint, int64_t maxt, gw_alerts_cb cb, void *ud,
                       struct gw_error *err)
{
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/alerts", data_dir);
    if (n < 0 || (size_t)n >= sizeof path) return gw_error_set(err, GW_EINVAL, "data dir too long: %s", data_dir);
    struct stat st;
    if (stat(path, &st) != 0) return GW_OK;   /* no alert log yet: no alerts */
    struct gw_alert_log l = {0};
    int rc = gw_kv_open(&l.kv, path, k_tables, 4, LOG_MAP_BYTES, LOG_MAP_MAX, err);
    if (rc != GW_OK) return rc;
    rc = gw_alert_log_foreach(&l, mint, maxt, cb, ud, err);
    gw_kv_close(l.kv);
    return rc;
}
