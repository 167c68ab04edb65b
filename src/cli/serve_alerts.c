/* serve_alerts.c - the alert side of `gpuwatch serve`:
 *  - the database observer that hands every accepted sample to the
 *    detector engine (called under the database's append lock, also during
 *    the WAL replay at open);
 *  - a background thread that every second appends the ALERTS samples the
 *    alert table produced (gw_alerts_drain_samples -> gw_db_append), every
 *    10 s writes alert log changes (gw_alerts_sync), stores D7's finished
 *    checkpoint events in DIR/checkpoints/ and writes them back as the
 *    series gpuwatch_checkpoint_throughput_bytes{phase} (fleet NFS bytes/s
 *    per bucket of the checkpoint, 0 one interval after it) and
 *    gpuwatch_checkpoint_phase{phase} (1 during, 0 after), and every 5 minutes and
 *    at stop saves the detector state to DATA/detect.state
 *    (gw_det_snapshot_save, which takes the engine's own lock). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuwatch/alert.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/db.h"
#include "gpuwatch/detect.h"
#include "gpuwatch/labels.h"
#include "gpuwatch/log.h"
#include "gpuwatch/rw.h"
#include "cli_thread.h"
#include "serve_alerts.h"

#define TICK_MS 1000
#define SYNC_EVERY_MS 10000
#define SNAPSHOT_EVERY_MS (5 * 60 * 1000)

/* ---- observer ---- */

static uint32_t ob_series(void *ud, uint64_t sid, const uint8_t *labels, size_t len)
{
    return gw_det_series(ud, sid, labels, len);
}

static void ob_sample(void *ud, uint32_t handle, int64_t t, double v)
{
    gw_det_sample(ud, handle, t, v);
}

static void ob_advance(void *ud, int64_t t)
{
    gw_det_advance(ud, t);
}

void gw_serve_observer(struct gw_db_observer *ob, struct gw_det *det)
{
    memset(ob, 0, sizeof *ob);
    ob->ud = det;
    ob->series = ob_series;
    ob->sample = ob_sample;
    ob->advance = ob_advance;
}

/* ---- background thread ---- */

struct gw_serve_alerts {
    struct gw_db *db;
    struct gw_alerts *alerts;
    struct gw_det *det;          /* NULL with --no-detectors */
    struct gw_kv *ckpt;          /* checkpoint event store, or NULL */
    char state_path[4096];
    pthread_t thr;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    int64_t last_append_err_log;
    uint64_t appended, refused;
};

static void append_request(struct gw_serve_alerts *s, struct gw_rw_request *req)
{
    struct gw_append_result res;
    memset(&res, 0, sizeof res);
    struct gw_error err = {0};
    int64_t now = gw_now_ms();
    int rc = gw_db_append(s->db, req, now, &res, &err);
    s->appended += res.accepted;
    uint64_t refused = res.conflicts + res.out_of_order + res.too_old + res.too_new + res.invalid_samples;
    s->refused += refused;
    if ((rc != GW_OK || refused) && now - s->last_append_err_log >= 60000) {
        s->last_append_err_log = now;
        if (rc != GW_OK)
            gw_log(GW_LOG_WARN, "serve", "msg=\"cannot store written-back samples\" err=\"%s\"", err.msg);
        else
            gw_log(GW_LOG_INFO, "serve",
                   "msg=\"written-back samples refused\" refused=%llu out_of_order=%llu too_old=%llu too_new=%llu",
                   (unsigned long long)refused, (unsigned long long)res.out_of_order,
                   (unsigned long long)res.too_old, (unsigned long long)res.too_new);
    }
}

static int append_labels(struct gw_serve_alerts *s, struct gw_label *ls, size_t nl, const int64_t *t, const double *v,
                         size_t n)
{
    if (n == 0) return 0;
    struct gw_sample *smp = malloc(n * sizeof *smp);
    if (!smp) return GW_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        smp[i].t = t[i];
        smp[i].v = v[i];
    }
    struct gw_rw_series ser = {.labels = ls, .n_labels = (uint32_t)nl, .samples = smp, .n_samples = (uint32_t)n};
    struct gw_rw_request req = {.version = 1, .series = &ser, .n_series = 1, .n_samples = n};
    append_request(s, &req);
    free(smp);
    return 0;
}

static int append_series(void *ud, const uint8_t *labels, size_t len, const int64_t *t, const double *v, size_t n)
{
    struct gw_label ls[GW_LABELS_MAX];
    size_t nl = 0;
    if (n == 0 || gw_labels_decode(labels, len, ls, GW_LABELS_MAX, &nl) != GW_OK) return 0;
    return append_labels(ud, ls, nl, t, v, n);
}

/* ---- checkpoint events ---- */

static int put_event(struct gw_kv *kv, const struct gw_det_ckpt *e, struct gw_error *err)
{
    uint8_t k[GW_CKPT_KEY_BYTES], v[GW_CKPT_ENC_BYTES];
    gw_det_ckpt_key(e->t_start, e->id, k);
    gw_det_ckpt_encode(e, v);
    for (int attempt = 0;; attempt++) {
        struct gw_kv_txn *t = NULL;
        int rc = gw_kv_begin(kv, 1, &t, err);
        if (rc == GW_OK) rc = gw_kv_put(t, 0, k, sizeof k, v, sizeof v, err);
        if (rc == GW_OK) rc = gw_kv_commit(t, err);
        else gw_kv_abort(t);
        if (rc != GW_EFULL || attempt > 0 || gw_kv_grow(kv, err) != GW_OK) return rc;
    }
}

static int store_ckpt(void *ud, const struct gw_det_ckpt *e, const int64_t *t, const double *bps, size_t n)
{
    struct gw_serve_alerts *s = ud;
    struct gw_error err = {0};
    if (s->ckpt && put_event(s->ckpt, e, &err) != GW_OK)
        gw_log(GW_LOG_WARN, "serve", "msg=\"cannot store a checkpoint event\" err=\"%s\"", err.msg);
    gw_log(GW_LOG_INFO, "serve", "msg=\"checkpoint\" phase=%s nodes=%u seconds=%.0f gbytes=%.3g diagnosis=%s",
           gw_ckpt_phase_name(e->phase), e->nodes, (double)(e->t_end - e->t_start) / 1000.0, e->bytes / 1e9,
           gw_ckpt_diag_name(e->diag));
    if (n == 0 || n >= GW_CKPT_MAX_BUCKETS) return 0;
    int64_t tt[GW_CKPT_MAX_BUCKETS + 1];
    double vv[GW_CKPT_MAX_BUCKETS + 1], one[GW_CKPT_MAX_BUCKETS + 1];
    memcpy(tt, t, n * sizeof *t);
    memcpy(vv, bps, n * sizeof *bps);
    for (size_t i = 0; i < n; i++) one[i] = 1;
    tt[n] = e->t_end + e->interval_ms;
    vv[n] = one[n] = 0;
    const char *ph = gw_ckpt_phase_name(e->phase);
    struct gw_label ls[2] = {{"__name__", 8, NULL, 0}, {"phase", 5, ph, (uint32_t)strlen(ph)}};
    ls[0].value = "gpuwatch_checkpoint_throughput_bytes";
    ls[0].value_len = (uint32_t)strlen(ls[0].value);
    append_labels(s, ls, 2, tt, vv, n + 1);
    ls[0].value = "gpuwatch_checkpoint_phase";
    ls[0].value_len = (uint32_t)strlen(ls[0].value);
    append_labels(s, ls, 2, tt, one, n + 1);
    return 0;
}

/* ---- node activity (D8) ---- */

struct act_item {
    char node[64];
    int64_t t;
    double level;
};
struct act_acc {
    struct act_item *v;
    size_t n, cap;
};

static int collect_activity(void *ud, const char *node, int64_t t, int level)
{
    struct act_acc *a = ud;
    if (a->n == a->cap) {
        size_t nc = a->cap ? a->cap * 2 : 256;
        struct act_item *p = realloc(a->v, nc * sizeof *p);
        if (!p) return GW_ENOMEM;
        a->v = p;
        a->cap = nc;
    }
    struct act_item *it = &a->v[a->n++];
    snprintf(it->node, sizeof it->node, "%s", node);
    it->t = t;
    it->level = level;
    return 0;
}

static int cmp_act(const void *a, const void *b)
{
    const struct act_item *x = a, *y = b;
    int c = strcmp(x->node, y->node);
    if (c) return c;
    return (x->t > y->t) - (x->t < y->t);
}

/* One request of series {__name__=name, node=...}, a run of a per node
 * (a sorted by node, then time). */
static void append_per_node(struct gw_serve_alerts *s, const char *name, const struct act_acc *a)
{
    size_t groups = 0;
    for (size_t i = 0; i < a->n; i++)
        if (i == 0 || strcmp(a->v[i].node, a->v[i - 1].node) != 0) groups++;
    struct gw_rw_series *ser = calloc(groups, sizeof *ser);
    struct gw_label *ls = calloc(groups * 2, sizeof *ls);
    struct gw_sample *smp = malloc(a->n * sizeof *smp);
    if (ser && ls && smp) {
        size_t g = 0;
        for (size_t i = 0; i < a->n; i++) {
            smp[i] = (struct gw_sample){.t = a->v[i].t, .v = a->v[i].level};
            if (i > 0 && strcmp(a->v[i].node, a->v[i - 1].node) == 0) {
                ser[g - 1].n_samples++;
                continue;
            }
            ls[2 * g] = (struct gw_label){"__name__", 8, name, (uint32_t)strlen(name)};
            ls[2 * g + 1] = (struct gw_label){"node", 4, a->v[i].node, (uint32_t)strlen(a->v[i].node)};
            ser[g] = (struct gw_rw_series){.labels = &ls[2 * g], .n_labels = 2, .samples = &smp[i], .n_samples = 1};
            g++;
        }
        struct gw_rw_request req = {.version = 1, .series = ser, .n_series = groups, .n_samples = a->n};
        append_request(s, &req);
    }
    free(ser);
    free(ls);
    free(smp);
}

/* gpuwatch_node_activity{node}: the ledger's input (docs/ledger.md). */
static void store_activity(struct gw_serve_alerts *s)
{
    struct act_acc a = {0};
    gw_det_activity_drain(s->det, collect_activity, &a);
    if (a.n > 0) {
        qsort(a.v, a.n, sizeof *a.v, cmp_act);
        append_per_node(s, "gpuwatch_node_activity", &a);
    }
    free(a.v);
}

static void save_state(struct gw_serve_alerts *s)
{
    struct gw_error err = {0};
    if (s->det && gw_det_snapshot_save(s->det, s->state_path, &err) != GW_OK)
        gw_log(GW_LOG_WARN, "serve", "msg=\"cannot save the detector state\" path=%s err=\"%s\"", s->state_path,
               err.msg);
}

static void sync_log(struct gw_serve_alerts *s)
{
    struct gw_error err = {0};
    if (gw_alerts_sync(s->alerts, &err) != GW_OK)
        gw_log(GW_LOG_WARN, "serve", "msg=\"cannot write the alert log\" err=\"%s\"", err.msg);
}

static void *serve_alerts_main(void *arg)
{
    struct gw_serve_alerts *s = arg;
    uint64_t last_sync = gw_mono_ns(), last_snap = gw_mono_ns();
    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += TICK_MS / 1000;
        pthread_cond_timedwait(&s->cv, &s->mu, &ts);
        if (s->stop) break;
        pthread_mutex_unlock(&s->mu);
        gw_alerts_drain_samples(s->alerts, append_series, s);
        if (s->det) gw_det_ckpt_drain(s->det, store_ckpt, s);
        if (s->det) store_activity(s);
        uint64_t now = gw_mono_ns();
        if (now - last_sync >= (uint64_t)SYNC_EVERY_MS * 1000000u) {
            sync_log(s);
            last_sync = now;
        }
        if (now - last_snap >= (uint64_t)SNAPSHOT_EVERY_MS * 1000000u) {
            save_state(s);
            last_snap = now;
        }
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

int gw_serve_alerts_start(struct gw_serve_alerts **out, struct gw_db *db, struct gw_alerts *alerts,
                          struct gw_det *det, struct gw_kv *ckpt, const char *state_path)
{
    struct gw_serve_alerts *s = calloc(1, sizeof *s);
    if (!s) return GW_ENOMEM;
    s->db = db;
    s->alerts = alerts;
    s->det = det;
    s->ckpt = ckpt;
    snprintf(s->state_path, sizeof s->state_path, "%s", state_path);
    if (gw_cli_thread_start(&s->thr, &s->mu, &s->cv, serve_alerts_main, s) != GW_OK) {
        free(s);
        return GW_ENOMEM;
    }
    *out = s;
    return GW_OK;
}

/* Stops the thread, appends the last ALERTS samples, saves the detector
 * state and syncs the log. NULL ok. */
void gw_serve_alerts_stop(struct gw_serve_alerts *s)
{
    if (!s) return;
    gw_cli_thread_stop(s->thr, &s->mu, &s->cv, &s->stop);
    gw_alerts_drain_samples(s->alerts, append_series, s);
    if (s->det) gw_det_ckpt_drain(s->det, store_ckpt, s);
    if (s->det) store_activity(s);
    save_state(s);
    sync_log(s);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
