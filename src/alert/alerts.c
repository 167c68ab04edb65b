/* src/alert/alerts.c - the alert table: Prometheus' alert lifecycle on data
 * time (pending, firing, resolved), the rule registry, the ALERTS samples
 * and the snapshots behind gw_alerts_foreach() and the JSON bodies.
 *
 * Structure: active alerts sit in a chained hash table keyed by their
 * identity (alertname, hostname, gpu, extra identity label) and in a list
 * in creation order; resolved alerts move to a second list and stay there
 * for resolved_keep_ms of wall clock (for the API and the notifier), then
 * are freed once the log and the ALERTS drain no longer need them.
 *
 * Data time. Every event of an alert is a deterministic data time:
 *   fires at     activeAt + for_ms            (when that is <= last raise + hold_ms)
 *   resolves at  last raise + hold_ms         (once data time passes it)
 * so the same samples give the same alerts however the clock is advanced.
 * An alert is "settled" up to a data time t by processing its events up to
 * t in order; advance settles every active alert, but only when data time
 * reaches next_due (the earliest event of any active alert), so advance is
 * a compare in the common case.
 *
 * ALERTS samples: value 1 at activeAt, activeAt + interval, ... on
 * ALERTS{alertstate="pending",...} while pending (times < firedAt), then
 * at firedAt, firedAt + interval, ... on alertstate="firing" while firing
 * (times < resolvedAt); a series that had samples gets a stale marker
 * (NaN 0x7ff0000000000002) when its state ends (at firedAt or resolvedAt).
 * The series labels are taken when the state begins. Example, interval
 * 30 s, for_ms 60 s, raised at 0, 30 s, ..., 150 s, hold_ms 60 s:
 *   pending: t=0 v=1, t=30000 v=1, t=60000 stale
 *   firing:  t=60000 .. t=180000 v=1 every 30 s, t=210000 stale
 *   (last raise 150000 + hold 60000 = resolvedAt 210000) */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/labels.h"
#include "alert/alert_int.h"

#define DEFAULT_SAMPLES_INTERVAL_MS 30000
#define DEFAULT_RESOLVED_KEEP_MS (15 * 60 * 1000)
#define DEFAULT_MAX_ACTIVE 10000
#define DEFAULT_MAX_BUFFERED ((size_t)1 << 20)
/* A data-time jump never produces more than this many samples per series. */
#define MAX_SAMPLES_PER_SETTLE 100000

const char *gw_severity_name(enum gw_severity s)
{
    switch (s) {
    case GW_SEV_INFO: return "info";
    case GW_SEV_WARNING: return "warning";
    case GW_SEV_CRITICAL: return "critical";
    }
    return "info";
}

const char *gw_alert_state_name(enum gw_alert_state s)
{
    switch (s) {
    case GW_ALERT_PENDING: return "pending";
    case GW_ALERT_FIRING: return "firing";
    case GW_ALERT_RESOLVED: return "resolved";
    }
    return "resolved";
}

void gw_alerts_opts_default(struct gw_alerts_opts *o)
{
    memset(o, 0, sizeof *o);
    o->samples_interval_ms = DEFAULT_SAMPLES_INTERVAL_MS;
    o->resolved_keep_ms = DEFAULT_RESOLVED_KEEP_MS;
    o->max_active = DEFAULT_MAX_ACTIVE;
    o->max_buffered_samples = DEFAULT_MAX_BUFFERED;
}

static int64_t sat_add(int64_t a, int64_t b)
{
    if (b > 0 && a > INT64_MAX - b) return INT64_MAX;
    if (b < 0 && a < INT64_MIN - b) return INT64_MIN;
    return a + b;
}

/* Copies src into dst (cap bytes, NUL-terminated), cutting at a UTF-8
 * character boundary. */
static void copy_str(char *dst, size_t cap, const char *src)
{
    size_t n = src ? strlen(src) : 0;
    if (n >= cap) {
        n = cap - 1;
        while (n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80) n--;
    }
    if (n) memcpy(dst, src, n);
    dst[n] = '\0';
}

const char *gw_alert_gpu_str(const struct gw_alert *al, char *buf, size_t cap)
{
    if (al->gpu < 0) {
        buf[0] = '\0';
        return buf;
    }
    snprintf(buf, cap, "%d", al->gpu);
    return buf;
}

static int samples_on(const struct gw_alerts *a) { return a->opts.samples_interval_ms > 0; }

/* ---- identity and hash table ---- */

static uint64_t identity_hash(const struct gw_alert *al)
{
    uint8_t key[GW_ALERT_NAME_MAX + GW_ALERT_HOST_MAX + 4 + 32 + 64 + 8];
    size_t n = 0, l;
    l = strlen(al->alertname); memcpy(key + n, al->alertname, l); n += l; key[n++] = 0;
    l = strlen(al->hostname); memcpy(key + n, al->hostname, l); n += l; key[n++] = 0;
    uint32_t g = (uint32_t)al->gpu;
    memcpy(key + n, &g, 4); n += 4;
    l = strlen(al->extra_name); memcpy(key + n, al->extra_name, l); n += l; key[n++] = 0;
    l = strlen(al->extra_value); memcpy(key + n, al->extra_value, l); n += l;
    return gw_hash64(key, n);
}

static int same_identity(const struct gw_alert *x, const struct gw_alert *y)
{
    return x->gpu == y->gpu && !strcmp(x->alertname, y->alertname) && !strcmp(x->hostname, y->hostname) &&
           !strcmp(x->extra_name, y->extra_name) && !strcmp(x->extra_value, y->extra_value);
}

static struct al_entry *hash_find(struct gw_alerts *a, const struct gw_alert *key, uint64_t h)
{
    for (struct al_entry *e = a->buckets[h & (a->n_buckets - 1)]; e; e = e->hnext)
        if (e->hash == h && same_identity(&e->al, key)) return e;
    return NULL;
}

static void hash_grow(struct gw_alerts *a)
{
    size_t nb = a->n_buckets * 2;
    struct al_entry **b = calloc(nb, sizeof *b);
    if (!b) return;   /* longer chains, still correct */
    for (size_t i = 0; i < a->n_buckets; i++) {
        struct al_entry *e = a->buckets[i];
        while (e) {
            struct al_entry *nx = e->hnext;
            e->hnext = b[e->hash & (nb - 1)];
            b[e->hash & (nb - 1)] = e;
            e = nx;
        }
    }
    free(a->buckets);
    a->buckets = b;
    a->n_buckets = nb;
}

static void hash_insert(struct gw_alerts *a, struct al_entry *e)
{
    if (a->active.n + 1 > a->n_buckets) hash_grow(a);
    size_t i = e->hash & (a->n_buckets - 1);
    e->hnext = a->buckets[i];
    a->buckets[i] = e;
}

static void hash_remove(struct gw_alerts *a, struct al_entry *e)
{
    struct al_entry **pp = &a->buckets[e->hash & (a->n_buckets - 1)];
    while (*pp) {
        if (*pp == e) {
            *pp = e->hnext;
            e->hnext = NULL;
            return;
        }
        pp = &(*pp)->hnext;
    }
}

static void list_push(struct al_list *l, struct al_entry *e)
{
    e->next = NULL;
    e->prev = l->tail;
    if (l->tail) l->tail->next = e;
    else l->head = e;
    l->tail = e;
    l->n++;
}

static void list_remove(struct al_list *l, struct al_entry *e)
{
    if (e->prev) e->prev->next = e->next;
    else l->head = e->next;
    if (e->next) e->next->prev = e->prev;
    else l->tail = e->prev;
    e->prev = e->next = NULL;
    l->n--;
}

/* ---- ALERTS series ---- */

static const char *const reserved_labels[] = {"__name__", "alertname", "alertstate", "severity", "hostname",
                                              "gpu", "detector", "class", "action"};

static int valid_label_name(const char *s)
{
    if (!s || !*s) return 0;
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return 0;
    for (const char *p = s + 1; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return 0;
    for (size_t i = 0; i < sizeof reserved_labels / sizeof reserved_labels[0]; i++)
        if (!strcmp(s, reserved_labels[i])) return 0;
    return 1;
}

/* Builds the canonical labels of the ALERTS series of state idx. */
static int series_labels(struct al_entry *e, int idx)
{
    const struct gw_alert *al = &e->al;
    char gpu[16];
    struct gw_label ls[10];
    size_t n = 0;
#define ADD(nm, val)                                                                             \
    do {                                                                                         \
        const char *v_ = (val);                                                                  \
        if (v_ && *v_) {                                                                         \
            ls[n].name = (nm); ls[n].name_len = (uint32_t)strlen(nm);                            \
            ls[n].value = v_; ls[n].value_len = (uint32_t)strlen(v_); n++;                       \
        }                                                                                        \
    } while (0)
    ADD("__name__", "ALERTS");
    ADD("alertname", al->alertname);
    ADD("alertstate", idx == 0 ? "pending" : "firing");
    ADD("severity", gw_severity_name(al->severity));
    ADD("hostname", al->hostname);
    ADD("gpu", gw_alert_gpu_str(al, gpu, sizeof gpu));
    ADD("detector", al->detector);
    ADD("class", al->cls);
    ADD("action", al->action);
    if (al->extra_name[0]) ADD(al->extra_name, al->extra_value);
#undef ADD
    if (gw_labels_normalize(ls, n, NULL) != GW_OK) return GW_EINVAL;
    size_t need = gw_labels_encoded_size(ls, n);
    struct al_series *s = &e->ser[idx];
    if (need > s->labels_cap) {
        uint8_t *p = realloc(s->labels, need);
        if (!p) return GW_ENOMEM;
        s->labels = p;
        s->labels_cap = need;
    }
    s->len = gw_labels_encode(ls, n, s->labels);
    return GW_OK;
}

/* Starts the series of state idx with its first sample due at t. */
static void series_begin(struct gw_alerts *a, struct al_entry *e, int idx, int64_t t)
{
    struct al_series *s = &e->ser[idx];
    s->started = 0;
    s->ended = 0;
    s->next = INT64_MAX;
    if (!samples_on(a)) return;
    if (series_labels(e, idx) != GW_OK) {
        s->len = 0;
        a->samples_dropped++;
        return;
    }
    s->next = t > s->floor_t ? t : s->floor_t;
}

static void series_push(struct gw_alerts *a, struct al_series *s, int64_t t, double v)
{
    if (s->len == 0) return;
    if (a->samples_buffered >= a->opts.max_buffered_samples) {
        a->samples_dropped++;
        return;
    }
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 8;
        int64_t *nt = realloc(s->t, nc * sizeof *nt);
        if (!nt) {
            a->samples_dropped++;
            return;
        }
        s->t = nt;
        double *nv = realloc(s->v, nc * sizeof *nv);
        if (!nv) {
            a->samples_dropped++;
            return;
        }
        s->v = nv;
        s->cap = nc;
    }
    s->t[s->n] = t;
    s->v[s->n] = v;
    s->n++;
    a->samples_buffered++;
}

/* Samples due on series idx at data times < until and <= t. */
static void series_emit(struct gw_alerts *a, struct al_entry *e, int idx, int64_t until, int64_t t)
{
    struct al_series *s = &e->ser[idx];
    int64_t iv = a->opts.samples_interval_ms;
    if (s->next == INT64_MAX || s->ended || until == INT64_MIN) return;
    int64_t limit = until - 1 < t ? until - 1 : t;
    if (s->next > limit) return;
    uint64_t k = ((uint64_t)limit - (uint64_t)s->next) / (uint64_t)iv;
    if (k > MAX_SAMPLES_PER_SETTLE) {
        a->samples_dropped += k - MAX_SAMPLES_PER_SETTLE;
        s->next = sat_add(s->next, (int64_t)(k - MAX_SAMPLES_PER_SETTLE) * iv);
    }
    while (s->next <= limit) {
        series_push(a, s, s->next, 1.0);
        s->started = 1;
        s->last_t = s->next;
        s->next = sat_add(s->next, iv);
        if (s->next == INT64_MAX) break;
    }
}

static void series_end(struct gw_alerts *a, struct al_entry *e, int idx, int64_t t)
{
    struct al_series *s = &e->ser[idx];
    if (!s->ended && s->started) {
        double stale;
        uint64_t bits = GW_STALE_NAN_BITS;
        memcpy(&stale, &bits, sizeof stale);
        if (t <= s->last_t) t = s->last_t + 1;
        series_push(a, s, t, stale);
        s->last_t = t;
    }
    s->ended = 1;
    s->next = INT64_MAX;
}

/* ---- lifecycle ---- */

static void changed(struct gw_alerts *a, struct al_entry *e, int notify)
{
    if (a->log_dir) e->dirty = 1;
    if (a->change_cb) a->change_cb(a->change_ud, &e->al);
    if (notify && a->notifier) {
        a->notify_kick = 1;
        pthread_cond_signal(&a->notify_cv);
    }
}

static void resolve(struct gw_alerts *a, struct al_entry *e, int64_t at)
{
    int idx = e->al.state == GW_ALERT_FIRING ? 1 : 0;
    int fired = e->al.state == GW_ALERT_FIRING;
    series_end(a, e, idx, at);
    e->al.state = GW_ALERT_RESOLVED;
    e->al.resolved_at = at;
    e->resolved_wall = gw_now_ms();
    hash_remove(a, e);
    list_remove(&a->active, e);
    list_push(&a->resolved, e);
    changed(a, e, fired);
}

/* Processes e's events up to data time t (see the top of the file). */
static void settle(struct gw_alerts *a, struct al_entry *e, int64_t t)
{
    for (;;) {
        int64_t end = sat_add(e->al.last_raised, e->al.hold_ms);
        if (e->al.state == GW_ALERT_PENDING) {
            int64_t fire = sat_add(e->al.active_at, e->al.for_ms);
            if (fire <= end && fire <= t) {
                series_emit(a, e, 0, fire, t);
                series_end(a, e, 0, fire);
                e->al.state = GW_ALERT_FIRING;
                e->al.fired_at = fire;
                series_begin(a, e, 1, fire);
                changed(a, e, 1);
                continue;
            }
            if (end < t) {
                series_emit(a, e, 0, end, t);
                resolve(a, e, end);
                return;
            }
            series_emit(a, e, 0, INT64_MAX, t);
            return;
        }
        if (e->al.state == GW_ALERT_FIRING) {
            if (end < t) {
                series_emit(a, e, 1, end, t);
                resolve(a, e, end);
                return;
            }
            series_emit(a, e, 1, INT64_MAX, t);
        }
        return;
    }
}

/* Earliest data time at which e has something to do. */
static int64_t due(const struct al_entry *e)
{
    int64_t end = sat_add(e->al.last_raised, e->al.hold_ms);
    int64_t d = sat_add(end, 1);
    if (e->al.state == GW_ALERT_PENDING) {
        int64_t fire = sat_add(e->al.active_at, e->al.for_ms);
        if (fire <= end && fire < d) d = fire;
        if (e->ser[0].next < d) d = e->ser[0].next;
    } else if (e->al.state == GW_ALERT_FIRING) {
        if (e->ser[1].next < d) d = e->ser[1].next;
    }
    return d;
}

static void apply_spec(struct al_entry *e, const struct gw_alert_spec *s)
{
    struct gw_alert *al = &e->al;
    al->severity = (s->severity >= GW_SEV_INFO && s->severity <= GW_SEV_CRITICAL) ? s->severity : GW_SEV_INFO;
    copy_str(al->detector, sizeof al->detector, s->detector);
    copy_str(al->cls, sizeof al->cls, s->cls);
    copy_str(al->action, sizeof al->action, s->action);
    copy_str(al->summary, sizeof al->summary, s->summary);
    copy_str(al->evidence, sizeof al->evidence, s->evidence);
    al->score = s->score == s->score ? s->score : 0;
    al->hold_ms = s->hold_ms > 0 ? s->hold_ms : 1;
}

static void fill_identity(struct gw_alert *k, const struct gw_alert_spec *s)
{
    copy_str(k->alertname, sizeof k->alertname, s->alertname);
    copy_str(k->hostname, sizeof k->hostname, s->hostname);
    k->gpu = s->gpu >= 0 ? s->gpu : -1;
    if (s->extra_name && valid_label_name(s->extra_name) && s->extra_value && s->extra_value[0]) {
        copy_str(k->extra_name, sizeof k->extra_name, s->extra_name);
        copy_str(k->extra_value, sizeof k->extra_value, s->extra_value);
    } else {
        k->extra_name[0] = k->extra_value[0] = '\0';
    }
}

/* Makes room under max_active: resolves the oldest info alert at t. 1 when
 * there is room. */
static int make_room(struct gw_alerts *a, const struct gw_alert_spec *s, int64_t t)
{
    if (a->active.n < a->opts.max_active) return 1;
    if (s->severity == GW_SEV_INFO) return 0;
    for (struct al_entry *e = a->active.head; e; e = e->next)
        if (e->al.severity == GW_SEV_INFO) {
            int64_t at = t > e->al.last_raised ? t : e->al.last_raised;
            a->evicted++;
            resolve(a, e, at);
            return 1;
        }
    return 0;
}

static struct al_entry *entry_new(struct gw_alerts *a, const struct gw_alert *key, uint64_t h)
{
    struct al_entry *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->al = *key;
    e->hash = h;
    e->al.id = a->next_id++;
    e->ser[0].next = e->ser[1].next = INT64_MAX;
    e->ser[0].ended = e->ser[1].ended = 1;
    e->ser[0].floor_t = e->ser[1].floor_t = INT64_MIN;
    /* A raise that arrives late (after data time passed the end of the
     * previous alert of this identity) must not put ALERTS samples before
     * that alert's last ones: the series have the same labels. */
    for (struct al_entry *o = a->resolved.tail; o; o = o->prev)
        if (o->hash == h && same_identity(&o->al, key)) {
            for (int i = 0; i < 2; i++)
                if (o->ser[i].started) e->ser[i].floor_t = sat_add(o->ser[i].last_t, 1);
            break;
        }
    hash_insert(a, e);
    list_push(&a->active, e);
    return e;
}

void gw_alerts_raise(struct gw_alerts *a, const struct gw_alert_spec *s, int64_t t)
{
    if (!a) return;
    struct gw_alert key;
    memset(&key, 0, sizeof key);
    if (!s || !s->alertname || !s->alertname[0]) {
        pthread_mutex_lock(&a->mu);
        a->dropped++;
        pthread_mutex_unlock(&a->mu);
        return;
    }
    fill_identity(&key, s);
    uint64_t h = identity_hash(&key);
    pthread_mutex_lock(&a->mu);
    a->raises++;
    struct al_entry *e = hash_find(a, &key, h);
    if (e) {
        settle(a, e, t);
        if (e->al.state == GW_ALERT_RESOLVED) e = NULL;
    }
    if (e) {
        if (t > e->al.last_raised) e->al.last_raised = t;
        apply_spec(e, s);
        if (a->log_dir) e->dirty = 1;
    } else {
        if (!make_room(a, s, t) || !(e = entry_new(a, &key, h))) {
            a->dropped++;
            pthread_mutex_unlock(&a->mu);
            return;
        }
        apply_spec(e, s);
        e->al.state = GW_ALERT_PENDING;
        e->al.active_at = e->al.last_raised = t;
        e->al.fired_at = e->al.resolved_at = INT64_MIN;
        e->al.for_ms = s->for_ms > 0 ? s->for_ms : 0;
        series_begin(a, e, 0, t);
        changed(a, e, 0);
    }
    settle(a, e, t);
    if (e->al.state != GW_ALERT_RESOLVED) {
        int64_t d = due(e);
        if (d < a->next_due) a->next_due = d;
    }
    pthread_mutex_unlock(&a->mu);
}

void gw_alerts_advance(struct gw_alerts *a, int64_t t)
{
    if (!a) return;
    pthread_mutex_lock(&a->mu);
    if (a->now == INT64_MIN || t > a->now) {
        a->now = t;
        if (t >= a->next_due) {
            int64_t nd = INT64_MAX;
            struct al_entry *e = a->active.head;
            while (e) {
                struct al_entry *nx = e->next;
                settle(a, e, t);
                if (e->al.state != GW_ALERT_RESOLVED) {
                    int64_t d = due(e);
                    if (d < nd) nd = d;
                }
                e = nx;
            }
            a->next_due = nd;
        }
    }
    pthread_mutex_unlock(&a->mu);
}

uint64_t gw_alerts_dropped(const struct gw_alerts *a)
{
    if (!a) return 0;
    pthread_mutex_lock((pthread_mutex_t *)&a->mu);
    uint64_t d = a->dropped;
    pthread_mutex_unlock((pthread_mutex_t *)&a->mu);
    return d;
}

void gw_alerts_on_change(struct gw_alerts *a, gw_alerts_change_cb cb, void *ud)
{
    if (!a) return;
    pthread_mutex_lock(&a->mu);
    a->change_cb = cb;
    a->change_ud = ud;
    pthread_mutex_unlock(&a->mu);
}

int gw_alerts_restore_locked(struct gw_alerts *a, const struct gw_alert *al)
{
    struct gw_alert key = *al;
    if (al->state != GW_ALERT_PENDING && al->state != GW_ALERT_FIRING) return GW_EINVAL;
    uint64_t h = identity_hash(&key);
    if (hash_find(a, &key, h)) return GW_EINVAL;
    uint64_t keep_next = a->next_id;
    struct al_entry *e = entry_new(a, &key, h);
    a->next_id = keep_next;
    if (!e) return GW_ENOMEM;
    e->al.id = al->id;
    e->logged_active = 1;
    int idx = al->state == GW_ALERT_FIRING ? 1 : 0;
    int64_t start = idx ? al->fired_at : al->active_at;
    series_begin(a, e, idx, start);
    if (e->ser[idx].next != INT64_MAX) {
        /* Samples up to the last raise were produced before the restart. */
        int64_t iv = a->opts.samples_interval_ms;
        if (al->last_raised >= start) {
            uint64_t k = ((uint64_t)al->last_raised - (uint64_t)start) / (uint64_t)iv + 1;
            e->ser[idx].next = sat_add(start, (int64_t)(k * (uint64_t)iv));
        }
        e->ser[idx].started = 1;
        e->ser[idx].last_t = e->ser[idx].next - iv;
    }
    int64_t d = due(e);
    if (d < a->next_due) a->next_due = d;
    return GW_OK;
}

/* ---- rules ---- */

static char *dup_str(const char *s)
{
    return strdup(s ? s : "");
}

static void rule_free(struct al_rule *r)
{
    free(r->alertname);
    free(r->detector);
    free(r->expr);
}

int gw_alerts_add_rule(struct gw_alerts *a, const struct gw_alert_rule *r)
{
    if (!a || !r || !r->alertname || !r->alertname[0]) return GW_EINVAL;
    struct al_rule nr = {dup_str(r->alertname), dup_str(r->detector), dup_str(r->expr), r->severity,
                         r->for_ms, r->hold_ms};
    if (!nr.alertname || !nr.detector || !nr.expr) {
        rule_free(&nr);
        return GW_ENOMEM;
    }
    pthread_mutex_lock(&a->mu);
    for (size_t i = 0; i < a->n_rules; i++)
        if (!strcmp(a->rules[i].alertname, nr.alertname)) {
            rule_free(&a->rules[i]);
            a->rules[i] = nr;
            pthread_mutex_unlock(&a->mu);
            return GW_OK;
        }
    if (a->n_rules == a->cap_rules) {
        size_t nc = a->cap_rules ? a->cap_rules * 2 : 16;
        struct al_rule *p = realloc(a->rules, nc * sizeof *p);
        if (!p) {
            pthread_mutex_unlock(&a->mu);
            rule_free(&nr);
            return GW_ENOMEM;
        }
        a->rules = p;
        a->cap_rules = nc;
    }
    a->rules[a->n_rules++] = nr;
    pthread_mutex_unlock(&a->mu);
    return GW_OK;
}

void gw_alerts_rules_free(struct al_rule *r, size_t n)
{
    if (!r) return;
    for (size_t i = 0; i < n; i++) rule_free(&r[i]);
    free(r);
}

int gw_alerts_rules_copy(struct gw_alerts *a, struct al_rule **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&a->mu);
    size_t m = a->n_rules;
    struct al_rule *r = calloc(m ? m : 1, sizeof *r);
    int rc = r ? GW_OK : GW_ENOMEM;
    for (size_t i = 0; rc == GW_OK && i < m; i++) {
        r[i] = a->rules[i];
        r[i].alertname = dup_str(a->rules[i].alertname);
        r[i].detector = dup_str(a->rules[i].detector);
        r[i].expr = dup_str(a->rules[i].expr);
        if (!r[i].alertname || !r[i].detector || !r[i].expr) {
            gw_alerts_rules_free(r, i + 1);
            r = NULL;
            rc = GW_ENOMEM;
        }
    }
    pthread_mutex_unlock(&a->mu);
    if (rc == GW_OK) {
        *out = r;
        *n = m;
    }
    return rc;
}

/* ---- snapshots ---- */

static int cmp_alert(const void *x, const void *y)
{
    const struct gw_alert *p = x, *q = y;
    if (p->active_at != q->active_at) return p->active_at < q->active_at ? -1 : 1;
    return p->id < q->id ? -1 : p->id > q->id;
}

int gw_alerts_snapshot(struct gw_alerts *a, int include_resolved, struct gw_alert **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    int64_t wall = gw_now_ms();
    pthread_mutex_lock(&a->mu);
    size_t m = a->active.n + (include_resolved ? a->resolved.n : 0);
    struct gw_alert *v = malloc((m ? m : 1) * sizeof *v);
    if (!v) {
        pthread_mutex_unlock(&a->mu);
        return GW_ENOMEM;
    }
    size_t k = 0;
    for (struct al_entry *e = a->active.head; e; e = e->next) v[k++] = e->al;
    if (include_resolved)
        for (struct al_entry *e = a->resolved.head; e; e = e->next)
            if (wall - e->resolved_wall <= a->opts.resolved_keep_ms) v[k++] = e->al;
    pthread_mutex_unlock(&a->mu);
    qsort(v, k, sizeof *v, cmp_alert);
    *out = v;
    *n = k;
    return GW_OK;
}

int gw_alerts_foreach(struct gw_alerts *a, gw_alerts_cb cb, void *ud)
{
    if (!a || !cb) return GW_EINVAL;
    struct gw_alert *v;
    size_t n;
    int rc = gw_alerts_snapshot(a, 1, &v, &n);
    if (rc != GW_OK) return rc;
    for (size_t i = 0; i < n; i++)
        if ((rc = cb(ud, &v[i])) != 0) break;
    free(v);
    return rc;
}

void gw_alerts_stats(struct gw_alerts *a, struct gw_alerts_stats *st)
{
    memset(st, 0, sizeof *st);
    st->data_time = INT64_MIN;
    if (!a) return;
    int64_t wall = gw_now_ms();
    pthread_mutex_lock(&a->mu);
    for (struct al_entry *e = a->active.head; e; e = e->next) {
        if (e->al.state == GW_ALERT_FIRING) st->firing++;
        else st->pending++;
    }
    for (struct al_entry *e = a->resolved.head; e; e = e->next)
        if (wall - e->resolved_wall <= a->opts.resolved_keep_ms) st->resolved_kept++;
    st->raises = a->raises;
    st->dropped = a->dropped;
    st->samples_dropped = a->samples_dropped;
    st->data_time = a->now;
    pthread_mutex_unlock(&a->mu);
}

/* ---- memory ---- */

static void entry_free(struct al_entry *e)
{
    for (int i = 0; i < 2; i++) {
        free(e->ser[i].labels);
        free(e->ser[i].t);
        free(e->ser[i].v);
        free(e->ser[i].bt);
        free(e->ser[i].bv);
    }
    free(e);
}

void gw_alerts_gc_locked(struct gw_alerts *a, int64_t now_wall)
{
    struct al_entry *e = a->resolved.head;
    while (e) {
        struct al_entry *nx = e->next;
        if (now_wall - e->resolved_wall > a->opts.resolved_keep_ms && !e->dirty && !e->draining && !e->notifying &&
            e->ser[0].n == 0 && e->ser[1].n == 0) {
            list_remove(&a->resolved, e);
            entry_free(e);
        }
        e = nx;
    }
}

/* ---- ALERTS drain ---- */

int gw_alerts_drain_samples(struct gw_alerts *a, gw_alerts_samples_cb cb, void *ud)
{
    if (!a || !cb) return GW_EINVAL;
    struct al_series **out = NULL;
    size_t n = 0, cap = 0;
    int rc = GW_OK;
    pthread_mutex_lock(&a->drain_mu);
    pthread_mutex_lock(&a->mu);
    /* Resolved alerts first: a new alert with the identity of a resolved one
     * continues the same ALERTS series after the old one's stale marker. */
    struct al_list *lists[2] = {&a->resolved, &a->active};
    for (int l = 0; l < 2 && rc == GW_OK; l++)
        for (struct al_entry *e = lists[l]->head; e && rc == GW_OK; e = e->next)
            for (int i = 0; i < 2; i++) {
                struct al_series *s = &e->ser[i];
                if (s->n == 0) continue;
                if (n == cap) {
                    size_t nc = cap ? cap * 2 : 16;
                    struct al_series **p = realloc(out, nc * sizeof *p);
                    if (!p) {
                        rc = GW_ENOMEM;
                        break;
                    }
                    out = p;
                    cap = nc;
                }
                int64_t *tt = s->t; double *tv = s->v; size_t tc = s->cap;
                s->t = s->bt; s->v = s->bv; s->cap = s->bcap;
                s->bt = tt; s->bv = tv; s->bcap = tc;
                s->bn = s->n;
                s->n = 0;
                a->samples_buffered -= s->bn;
                e->draining = 1;
                out[n++] = s;
            }
    pthread_mutex_unlock(&a->mu);
    int cbrc = 0;
    for (size_t i = 0; i < n; i++) {
        int r = cb(ud, out[i]->labels, out[i]->len, out[i]->bt, out[i]->bv, out[i]->bn);
        if (r != 0 && cbrc == 0) cbrc = r;
    }
    pthread_mutex_lock(&a->mu);
    for (size_t i = 0; i < n; i++) out[i]->bn = 0;
    for (int l = 0; l < 2; l++)
        for (struct al_entry *e = lists[l]->head; e; e = e->next) e->draining = 0;
    gw_alerts_gc_locked(a, gw_now_ms());
    pthread_mutex_unlock(&a->mu);
    pthread_mutex_unlock(&a->drain_mu);
    free(out);
    return rc != GW_OK ? rc : cbrc;
}

/* ---- open / close / sync ---- */

int gw_alerts_open(struct gw_alerts **out, const struct gw_alerts_opts *o, struct gw_error *err)
{
    struct gw_alerts *a = calloc(1, sizeof *a);
    if (!a) return gw_error_set(err, GW_ENOMEM, "out of memory");
    gw_alerts_opts_default(&a->opts);
    if (o) {
        a->opts.samples_interval_ms = o->samples_interval_ms ? o->samples_interval_ms : a->opts.samples_interval_ms;
        if (o->resolved_keep_ms > 0) a->opts.resolved_keep_ms = o->resolved_keep_ms;
        if (o->max_active > 0) a->opts.max_active = o->max_active;
        if (o->max_buffered_samples > 0) a->opts.max_buffered_samples = o->max_buffered_samples;
    }
    a->now = a->synced_now = INT64_MIN;
    a->next_due = INT64_MAX;
    a->next_id = 1;
    a->n_buckets = 64;
    a->buckets = calloc(a->n_buckets, sizeof *a->buckets);
    if (!a->buckets) {
        free(a);
        return gw_error_set(err, GW_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&a->mu, NULL);
    pthread_mutex_init(&a->drain_mu, NULL);
    pthread_mutex_init(&a->log_mu, NULL);
    pthread_cond_init(&a->notify_cv, NULL);
    if (o && o->log_dir && o->log_dir[0]) {
        a->log_dir = strdup(o->log_dir);
        if (!a->log_dir) {
            gw_alerts_close(a);
            return gw_error_set(err, GW_ENOMEM, "out of memory");
        }
        uint64_t next_id = 1;
        int64_t now = INT64_MIN;
        pthread_mutex_lock(&a->mu);
        int rc = gw_alert_log_open(a, a->log_dir, &a->log, &next_id, &now, err);
        if (rc == GW_OK) {
            if (next_id > a->next_id) a->next_id = next_id;
            a->now = a->synced_now = now;
        }
        pthread_mutex_unlock(&a->mu);
        if (rc != GW_OK) {
            gw_alerts_close(a);
            return rc;
        }
    }
    *out = a;
    return GW_OK;
}

int gw_alerts_sync(struct gw_alerts *a, struct gw_error *err)
{
    if (!a) return GW_EINVAL;
    if (!a->log_dir) {
        pthread_mutex_lock(&a->mu);
        gw_alerts_gc_locked(a, gw_now_ms());
        pthread_mutex_unlock(&a->mu);
        return GW_OK;
    }
    pthread_mutex_lock(&a->log_mu);
    if (!a->log) {
        pthread_mutex_unlock(&a->log_mu);
        return GW_OK;
    }
    pthread_mutex_lock(&a->mu);
    size_t m = 0;
    struct al_list *lists[2] = {&a->active, &a->resolved};
    for (int l = 0; l < 2; l++)
        for (struct al_entry *e = lists[l]->head; e; e = e->next) m += e->dirty != 0;
    struct gw_alert *v = m ? malloc(m * sizeof *v) : NULL;
    size_t k = 0;
    if (m && !v) {
        pthread_mutex_unlock(&a->mu);
        pthread_mutex_unlock(&a->log_mu);
        return gw_error_set(err, GW_ENOMEM, "out of memory");
    }
    for (int l = 0; l < 2; l++)
        for (struct al_entry *e = lists[l]->head; e; e = e->next)
            if (e->dirty) {
                v[k++] = e->al;
                e->dirty = 0;
            }
    uint64_t next_id = a->next_id;
    int64_t now = a->now;
    int skip = k == 0 && now == a->synced_now;
    pthread_mutex_unlock(&a->mu);
    int rc = skip ? GW_OK : gw_alert_log_write(a->log, v, k, next_id, now, err);
    pthread_mutex_lock(&a->mu);
    if (rc == GW_OK) a->synced_now = now;
    if (rc != GW_OK)   /* write them again next time */
        for (int l = 0; l < 2; l++)
            for (struct al_entry *e = lists[l]->head; e; e = e->next)
                for (size_t i = 0; i < k; i++)
                    if (v[i].id == e->al.id) e->dirty = 1;
    gw_alerts_gc_locked(a, gw_now_ms());
    pthread_mutex_unlock(&a->mu);
    pthread_mutex_unlock(&a->log_mu);
    free(v);
    return rc;
}

int gw_alerts_log_foreach(struct gw_alerts *a, int64_t mint, int64_t maxt, gw_alerts_cb cb, void *ud,
                          struct gw_error *err)
{
    if (!a || !cb) return gw_error_set(err, GW_EINVAL, "no alerts or callback");
    if (!a->log_dir) return gw_error_set(err, GW_EINVAL, "the alert log is off (no log_dir)");
    int rc = gw_alerts_sync(a, err);
    if (rc != GW_OK) return rc;
    pthread_mutex_lock(&a->log_mu);
    rc = a->log ? gw_alert_log_foreach(a->log, mint, maxt, cb, ud, err) : GW_EINVAL;
    pthread_mutex_unlock(&a->log_mu);
    return rc;
}

void gw_alerts_close(struct gw_alerts *a)
{
    if (!a) return;
    if (a->notifier) gw_notifier_stop(a);
    if (a->log) {
        struct gw_error err = {0};
        gw_alerts_sync(a, &err);
        gw_alert_log_close(a->log);
        a->log = NULL;
    }
    struct al_list *lists[2] = {&a->active, &a->resolved};
    for (int l = 0; l < 2; l++) {
        struct al_entry *e = lists[l]->head;
        while (e) {
            struct al_entry *nx = e->next;
            entry_free(e);
            e = nx;
        }
    }
    gw_alerts_rules_free(a->rules, a->n_rules);
    free(a->buckets);
    free(a->log_dir);
    pthread_cond_destroy(&a->notify_cv);
    pthread_mutex_destroy(&a->log_mu);
    pthread_mutex_destroy(&a->drain_mu);
    pthread_mutex_destroy(&a->mu);
    free(a);
}
