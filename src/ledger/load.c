/* src/ledger/load.c - the ledger's inputs from a data dir (read-only, next
 * to a running serve) or from serve's open handles:
 *  - activity: every gpuwatch_node_activity{node} series in the range;
 *  - alerts: the alert log, from a day before the range (so that a
 *    failure's first signs are not cut) to its end;
 *  - scheduler events: DIR/events/, from a week before the range;
 *  - checkpoints (data dir only): D7's events in DIR/checkpoints/.
 * Node names: every node with activity, then every node named by an alert
 * or an event, in that order of discovery. A range given as INT64_MIN /
 * INT64_MAX is narrowed to the activity found. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/db.h"
#include "gpuwatch/kv.h"
#include "gpuwatch/labels.h"
#include "gpuwatch/matcher.h"
#include "ledger/ledger_int.h"

#define ALERT_LEAD_MS (86400000LL)
#define EVENT_LEAD_MS (7 * 86400000LL)

struct loader {
    struct gw_led_data *d;
    size_t cap_nodes, cap_act, cap_alerts, cap_ckpts;
    uint32_t *slots;             /* open addressing by name hash: node index + 1 */
    size_t mask;
    struct gw_error *err;
};

static int rehash(struct loader *L, size_t nmask)
{
    uint32_t *ns = calloc(nmask + 1, sizeof *ns);
    if (!ns) return gw_error_set(L->err, GW_ENOMEM, "out of memory (nodes)");
    const struct gw_led_input *in = &L->d->in;
    for (uint32_t i = 0; i < in->n_nodes; i++) {
        size_t k = gw_hash64(in->nodes[i], strlen(in->nodes[i])) & nmask;
        while (ns[k]) k = (k + 1) & nmask;
        ns[k] = i + 1;
    }
    free(L->slots);
    L->slots = ns;
    L->mask = nmask;
    return GW_OK;
}

static int add_node(struct loader *L, const char *name, size_t len, uint32_t *out)
{
    struct gw_led_input *in = &L->d->in;
    if ((in->n_nodes + 1) * 2 > (L->slots ? L->mask + 1 : 0) && rehash(L, L->slots ? L->mask * 2 + 1 : 255) != GW_OK)
        return L->err->code;
    size_t k = gw_hash64(name, len) & L->mask;
    for (; L->slots[k]; k = (k + 1) & L->mask) {
        const char *n = in->nodes[L->slots[k] - 1];
        if (strlen(n) == len && memcmp(n, name, len) == 0) {
            *out = L->slots[k] - 1;
            return GW_OK;
        }
    }
    if (in->n_nodes == L->cap_nodes) {
        size_t nc = L->cap_nodes ? L->cap_nodes * 2 : 64;
        char **p = realloc(in->nodes, nc * sizeof *p);
        if (!p) return gw_error_set(L->err, GW_ENOMEM, "out of memory (nodes)");
        in->nodes = p;
        L->cap_nodes = nc;
    }
    char *s = strndup(name, len);
    if (!s) return gw_error_set(L->err, GW_ENOMEM, "out of memory (nodes)");
    in->nodes[in->n_nodes] = s;
    L->slots[k] = in->n_nodes + 1;
    *out = in->n_nodes++;
    return GW_OK;
}

static int on_activity(void *ud, uint64_t sid, const uint8_t *labels, size_t len, const int64_t *t, const double *v,
                       size_t n)
{
    (void)sid;
    struct loader *L = ud;
    struct gw_led_input *in = &L->d->in;
    const char *node;
    size_t nl;
    if (!gw_labels_get(labels, len, "node", 4, &node, &nl) || nl == 0 || n == 0) return GW_OK;
    uint32_t ni;
    int rc = add_node(L, node, nl, &ni);
    if (rc != GW_OK) return rc;
    if (in->n_act + n > L->cap_act) {
        size_t nc = L->cap_act ? L->cap_act : 4096;
        while (nc < in->n_act + n) nc *= 2;
        struct gw_led_act *p = realloc(in->act, nc * sizeof *p);
        if (!p) return gw_error_set(L->err, GW_ENOMEM, "out of memory (activity)");
        in->act = p;
        L->cap_act = nc;
    }
    for (size_t i = 0; i < n; i++) {
        if (v[i] != v[i] || v[i] < 0 || v[i] > 2) continue;   /* stale markers, foreign values */
        in->act[in->n_act++] = (struct gw_led_act){.t = t[i], .node = ni, .level = (uint8_t)v[i]};
    }
    return GW_OK;
}

static int load_activity(struct loader *L, struct gw_db *db, int64_t from, int64_t to)
{
    struct gw_matcher m;
    static const char name[] = "gpuwatch_node_activity";
    int rc = gw_matcher_init(&m, GW_MATCH_EQ, "__name__", 8, name, sizeof name - 1, L->err);
    if (rc != GW_OK) return rc;
    struct gw_db_select q = {.matchers = &m, .n_matchers = 1, .mint = from, .maxt = to, .with_samples = 1,
                             .only_with_data = 1};
    rc = gw_db_select(db, &q, on_activity, L, L->err);
    gw_matcher_free(&m);
    return rc;
}

static int on_alert(void *ud, const struct gw_alert *al)
{
    struct loader *L = ud;
    struct gw_led_data *d = L->d;
    if (d->in.n_alerts == L->cap_alerts) {
        size_t nc = L->cap_alerts ? L->cap_alerts * 2 : 256;
        struct gw_alert *p = realloc(d->alerts, nc * sizeof *p);
        if (!p) {
            gw_error_set(L->err, GW_ENOMEM, "out of memory (alerts)");
            return 1;
        }
        d->alerts = p;
        d->in.alerts = p;
        L->cap_alerts = nc;
    }
    d->alerts[d->in.n_alerts++] = *al;
    return 0;
}

/* The range actually covered by the data when it was left open: from the
 * oldest activity or alert, to the newest of anything (gw_led_data_newest). */
static void narrow(struct gw_led_data *d)
{
    struct gw_led_input *in = &d->in;
    if (in->from == INT64_MIN) {
        int64_t lo = INT64_MAX;
        for (size_t i = 0; i < in->n_act; i++)
            if (in->act[i].t < lo) lo = in->act[i].t;
        for (size_t i = 0; i < in->n_alerts; i++)
            if (in->alerts[i].active_at < lo) lo = in->alerts[i].active_at;
        in->from = lo == INT64_MAX ? 0 : lo;
    }
    if (in->to == INT64_MAX) {
        int64_t hi = gw_led_data_newest(d);
        in->to = hi == INT64_MAX ? in->from : hi;
    }
    in->now = in->to;
}

/* Nodes named only by alerts and events join the list (a node dead all
 * along still has a ledger entry). */
static int name_others(struct loader *L)
{
    struct gw_led_data *d = L->d;
    uint32_t ni;
    for (size_t i = 0; i < d->in.n_alerts; i++)
        if (d->alerts[i].hostname[0]) {
            int rc = add_node(L, d->alerts[i].hostname, strlen(d->alerts[i].hostname), &ni);
            if (rc != GW_OK) return rc;
        }
    for (size_t i = 0; i < d->in.n_events; i++) {
        const struct gw_led_event *e = &d->events[i];
        if (e->node[0] && add_node(L, e->node, strlen(e->node), &ni) != GW_OK) return L->err->code;
        for (uint32_t k = 0; k < e->n_nodes; k++)   /* session members too */
            if (add_node(L, e->nodes[k], strlen(e->nodes[k]), &ni) != GW_OK) return L->err->code;
    }
    return GW_OK;
}

static int on_ckpt(void *ud, const void *k, size_t kl, const void *v, size_t vl)
{
    (void)k;
    (void)kl;
    struct loader *L = ud;
    struct gw_led_data *d = L->d;
    struct gw_det_ckpt e;
    if (gw_det_ckpt_decode(v, vl, &e) != GW_OK) return 0;   /* another version: skipped */
    if (e.t_start > d->in.to) return 1;
    if (e.t_end < d->in.from) return 0;
    if (d->n_ckpts == L->cap_ckpts) {
        size_t nc = L->cap_ckpts ? L->cap_ckpts * 2 : 128;
        struct gw_det_ckpt *p = realloc(d->ckpts, nc * sizeof *p);
        if (!p) return gw_error_set(L->err, GW_ENOMEM, "out of memory (checkpoints)");
        d->ckpts = p;
        L->cap_ckpts = nc;
    }
    d->ckpts[d->n_ckpts++] = e;
    return 0;
}

static int load_ckpts(struct loader *L, const char *dir)
{
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/checkpoints", dir);
    if (stat(path, &st) != 0) return GW_OK;
    static const char *const tables[] = {GW_CKPT_TABLE};
    struct gw_kv *kv = NULL;
    int rc = gw_kv_open(&kv, path, tables, 1, (size_t)16 << 20, (size_t)4 << 30, L->err);
    struct gw_kv_txn *t = NULL;
    if (rc == GW_OK) rc = gw_kv_begin(kv, 0, &t, L->err);
    if (rc == GW_OK) {
        rc = gw_kv_scan(t, 0, NULL, 0, on_ckpt, L, L->err);
        if (rc == 1) rc = GW_OK;
    }
    gw_kv_abort(t);
    gw_kv_close(kv);
    L->d->in.ckpts = L->d->ckpts;
    L->d->in.n_ckpts = L->d->n_ckpts;
    return rc;
}

static int load_common(struct loader *L, struct gw_db *db, struct gw_led_events *ev, int64_t from, int64_t to)
{
    struct gw_led_data *d = L->d;
    d->in.from = from;
    d->in.to = to;
    int rc = load_activity(L, db, from, to);
    if (rc == GW_OK && ev) {
        int64_t lo = from == INT64_MIN ? from : from - EVENT_LEAD_MS;
        rc = gw_led_events_load(ev, lo, to, 0, &d->events, &d->in.n_events, L->err);
        d->in.events = d->events;
    }
    return rc;
}

static int finish(struct loader *L, int rc)
{
    if (rc == GW_OK) rc = name_others(L);
    if (rc == GW_OK) narrow(L->d);
    return rc;
}

int gw_led_load(const char *data_dir, int64_t from, int64_t to, struct gw_led_data *d, struct gw_error *err)
{
    memset(d, 0, sizeof *d);
    struct loader L = {.d = d, .err = err};
    struct gw_db_opts o;
    gw_db_opts_default(&o);
    o.dir = data_dir;
    o.read_only = 1;
    struct gw_db *db = NULL;
    int rc = gw_db_open(&db, &o, err);
    if (rc != GW_OK) return rc;
    struct gw_led_events *ev = NULL;
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/events", data_dir);
    if (stat(path, &st) == 0) rc = gw_led_events_open(&ev, data_dir, err);
    if (rc == GW_OK) rc = load_common(&L, db, ev, from, to);
    gw_led_events_close(ev);
    gw_db_close(db);
    if (rc == GW_OK) {
        int64_t lo = from == INT64_MIN ? from : from - ALERT_LEAD_MS;
        rc = gw_alerts_log_read(data_dir, lo, to, on_alert, &L, err);
        if (rc == GW_OK && err->code) rc = err->code;
    }
    rc = finish(&L, rc);
    if (rc == GW_OK) rc = load_ckpts(&L, data_dir);
    free(L.slots);
    if (rc != GW_OK) gw_led_data_free(d);
    return rc;
}

int gw_led_load_live(struct gw_db *db, struct gw_alerts *alerts, struct gw_led_events *ev, int64_t from,
                     int64_t to, struct gw_led_data *d, struct gw_error *err)
{
    memset(d, 0, sizeof *d);
    struct loader L = {.d = d, .err = err};
    int rc = load_common(&L, db, ev, from, to);
    if (rc == GW_OK && alerts) {
        int64_t lo = from == INT64_MIN ? from : from - ALERT_LEAD_MS;
        rc = gw_alerts_log_foreach(alerts, lo, to, on_alert, &L, err);
        if (rc == GW_OK && err->code) rc = err->code;
    }
    rc = finish(&L, rc);
    free(L.slots);
    if (rc != GW_OK) gw_led_data_free(d);
    return rc;
}

void gw_led_data_free(struct gw_led_data *d)
{
    if (!d) return;
    for (uint32_t i = 0; i < d->in.n_nodes; i++) free(d->in.nodes[i]);
    free(d->in.nodes);
    free(d->in.act);
    free(d->alerts);
    gw_led_events_free(d->events, d->in.n_events);
    free(d->ckpts);
    memset(d, 0, sizeof *d);
}
