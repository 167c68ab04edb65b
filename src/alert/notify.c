/* src/alert/notify.c - delivery to Alertmanager (API v2) on a thread of its
 * own, with Prometheus' sender semantics:
 *  - POST <url>/api/v2/alerts, Content-Type application/json, a JSON array
 *    of at most 256 alerts per request, to every URL independently;
 *  - a firing alert is sent when it starts firing and again every
 *    resend_ms, with endsAt = now + 4 x resend_ms (an Alertmanager that
 *    stops hearing from us lets the alert expire instead of resolving it);
 *  - a resolved alert (one that fired) is sent when it resolves and again
 *    every resend_ms for resolved_keep_ms, with endsAt = its resolvedAt;
 *  - pending alerts are never sent; startsAt = firedAt;
 *  - https and credentials as the options' tls and auth (httpc.h: CA file,
 *    client certificate, server name, bearer token or basic auth);
 *  - generatorURL = external URL + /graph?g0.expr=ALERTS{alertname="..."}&g0.tab=1;
 *  - a failed POST (connection, timeout, non-2xx) is logged (first failure
 *    and then once a minute per URL), counted, and retried after a backoff
 *    that doubles from 1 s up to resend_ms; the alerts stay due meanwhile.
 * Body example (one firing alert):
 *   [{"labels":{"action":"reset_gpu","alertname":"GpuXidError","class":"gpu_lost",
 *     "detector":"D1","gpu":"3","hostname":"node-a","severity":"critical","xid":"79"},
 *     "annotations":{"evidence":"...","score":"0.9","summary":"XID 79"},
 *     "startsAt":"2023-11-14T22:13:20Z","endsAt":"2026-11-29T22:10:00Z",
 *     "generatorURL":"http://gw:9201/graph?g0.expr=ALERTS%7Balertname%3D%22GpuXidError%22%7D&g0.tab=1"}]
 * The thread wakes every second and at once on a firing/resolved transition
 * (gw_alerts signals notify_cv). It holds the table lock only while it
 * builds a batch, never during the POST. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/httpc.h"
#include "gpuwatch/json.h"
#include "gpuwatch/log.h"
#include "alert/alert_int.h"

#define LIT(b, s) gw_buf_append((b), (s), sizeof(s) - 1)

#define BATCH_MAX 256
#define DEFAULT_RESEND_MS 60000
#define DEFAULT_TIMEOUT_MS 10000

struct gw_notifier {
    pthread_t thr;
    int stop;                              /* under a->mu */
    size_t n_urls;
    char *urls[GW_NOTIFY_MAX_URLS];        /* as given, for logs */
    char *paths[GW_NOTIFY_MAX_URLS];       /* base path + /api/v2/alerts */
    struct gw_httpc *c[GW_NOTIFY_MAX_URLS];
    int64_t retry_at[GW_NOTIFY_MAX_URLS];  /* wall clock; 0 = no backoff */
    int64_t backoff_ms[GW_NOTIFY_MAX_URLS];
    int64_t last_err_log[GW_NOTIFY_MAX_URLS];
    char *external_url;
    int64_t resend_ms;
    _Atomic uint64_t sent, errors, dropped;
    struct gw_buf body;
    struct gw_httpc_response resp;
    struct al_entry *batch[BATCH_MAX];
    uint8_t batch_state[BATCH_MAX];
};

static int need_send(const struct al_entry *e, size_t u, int64_t wall, int64_t resend, int64_t keep)
{
    if (e->al.state == GW_ALERT_PENDING) return 0;
    if (e->al.state == GW_ALERT_RESOLVED) {
        if (e->al.fired_at == INT64_MIN) return 0;
        if (wall - e->resolved_wall > keep) return 0;
    }
    return e->sent_state[u] != (uint8_t)e->al.state || wall - e->last_sent[u] >= resend;
}

static int url_escape(struct gw_buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    int rc = GW_OK;
    for (const unsigned char *p = (const unsigned char *)s; rc == GW_OK && *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
            *p == '_' || *p == '.' || *p == '~')
            rc = gw_buf_putc(b, *p);
        else {
            char esc[3] = {'%', hex[*p >> 4], hex[*p & 15]};
            rc = gw_buf_append(b, esc, 3);
        }
    }
    return rc;
}

static int alert_json(struct gw_notifier *n, const struct gw_alert *al, int64_t wall, int first)
{
    struct gw_buf *b = &n->body;
    char ts[40];
    int rc = (first ? LIT(b, "{\"labels\":") : LIT(b, ",{\"labels\":"));
    if (rc == GW_OK) rc = gw_alert_json_labels(b, al);
    if (rc == GW_OK) rc = LIT(b, ",\"annotations\":");
    if (rc == GW_OK) rc = gw_alert_json_annotations(b, al);
    gw_format_rfc3339(al->fired_at, ts, sizeof ts);
    if (rc == GW_OK) rc = gw_buf_printf(b, ",\"startsAt\":\"%s\"", ts);
    int64_t ends = al->state == GW_ALERT_RESOLVED ? al->resolved_at : wall + 4 * n->resend_ms;
    gw_format_rfc3339(ends, ts, sizeof ts);
    if (rc == GW_OK) rc = gw_buf_printf(b, ",\"endsAt\":\"%s\"", ts);
    if (rc == GW_OK && n->external_url && n->external_url[0]) {
        struct gw_buf u;
        gw_buf_init(&u, 1 << 16);
        rc = gw_buf_printf(&u, "%s/graph?g0.expr=", n->external_url);
        char expr[GW_ALERT_NAME_MAX + 32];
        snprintf(expr, sizeof expr, "ALERTS{alertname=\"%s\"}", al->alertname);
        if (rc == GW_OK) rc = url_escape(&u, expr);
        if (rc == GW_OK) rc = LIT(&u, "&g0.tab=1");
        if (rc == GW_OK) rc = LIT(b, ",\"generatorURL\":");
        if (rc == GW_OK) rc = gw_json_str(b, (const char *)u.data, u.len);
        gw_buf_free(&u);
    }
    if (rc == GW_OK) rc = gw_buf_putc(b, '}');
    return rc;
}

/* Builds the next batch for URL u under the lock; returns its size. */
static size_t build_batch(struct gw_alerts *a, struct gw_notifier *n, size_t u, int64_t wall)
{
    size_t k = 0;
    gw_buf_reset(&n->body);
    int rc = gw_buf_putc(&n->body, '[');
    struct al_list *lists[2] = {&a->active, &a->resolved};
    for (int l = 0; l < 2 && rc == GW_OK; l++)
        for (struct al_entry *e = lists[l]->head; e && k < BATCH_MAX && rc == GW_OK; e = e->next) {
            if (e->notifying || !need_send(e, u, wall, n->resend_ms, a->opts.resolved_keep_ms)) continue;
            rc = alert_json(n, &e->al, wall, k == 0);
            if (rc != GW_OK) break;
            e->notifying = 1;
            n->batch[k] = e;
            n->batch_state[k] = (uint8_t)e->al.state;
            k++;
        }
    if (rc == GW_OK) rc = gw_buf_putc(&n->body, ']');
    if (rc != GW_OK) {
        for (size_t i = 0; i < k; i++) n->batch[i]->notifying = 0;
        atomic_fetch_add(&n->dropped, k);
        return 0;
    }
    return k;
}

static void fail_log(struct gw_notifier *n, size_t u, int64_t wall, const char *what)
{
    atomic_fetch_add(&n->errors, 1);
    n->backoff_ms[u] = n->backoff_ms[u] ? n->backoff_ms[u] * 2 : 1000;
    if (n->backoff_ms[u] > n->resend_ms) n->backoff_ms[u] = n->resend_ms;
    n->retry_at[u] = wall + n->backoff_ms[u];
    if (n->last_err_log[u] == 0 || wall - n->last_err_log[u] >= 60000) {
        n->last_err_log[u] = wall;
        gw_log(GW_LOG_WARN, "notify", "msg=\"cannot send alerts to Alertmanager, will retry\" url=%s err=\"%s\"",
               n->urls[u], what);
    }
}

/* One round: every URL gets what is due. Called with a->mu held; drops it
 * around each POST. */
static void round_locked(struct gw_alerts *a, struct gw_notifier *n, int final)
{
    for (size_t u = 0; u < n->n_urls; u++) {
        for (int guard = 0; guard < 1000; guard++) {
            int64_t wall = gw_now_ms();
            if (!final && n->retry_at[u] && wall < n->retry_at[u]) break;
            size_t k = build_batch(a, n, u, wall);
            if (k == 0) break;
            pthread_mutex_unlock(&a->mu);
            struct gw_error err = {0};
            struct gw_httpc_header h[] = {{"Content-Type", "application/json"}};
            int rc = gw_httpc_request(n->c[u], "POST", n->paths[u], h, 1, n->body.data, n->body.len, &n->resp,
                                      &err);
            char what[GW_ERROR_MSG_LEN + 64];
            int ok = rc == GW_OK && n->resp.status >= 200 && n->resp.status < 300;
            if (rc != GW_OK)
                snprintf(what, sizeof what, "%s", err.msg[0] ? err.msg : gw_strerror(rc));
            else if (!ok)
                snprintf(what, sizeof what, "HTTP %d: %.120s", n->resp.status,
                         n->resp.body.data ? (const char *)n->resp.body.data : "");
            pthread_mutex_lock(&a->mu);
            for (size_t i = 0; i < k; i++) {
                struct al_entry *e = n->batch[i];
                e->notifying = 0;
                if (ok) {
                    e->sent_state[u] = n->batch_state[i];
                    e->last_sent[u] = wall;
                }
            }
            if (!ok) {
                fail_log(n, u, wall, what);
                break;
            }
            atomic_fetch_add(&n->sent, k);
            if (n->backoff_ms[u]) {
                gw_log(GW_LOG_INFO, "notify", "msg=\"Alertmanager reachable again\" url=%s", n->urls[u]);
                n->backoff_ms[u] = 0;
                n->retry_at[u] = 0;
                n->last_err_log[u] = 0;
            }
        }
    }
}

static void *notifier_main(void *arg)
{
    struct gw_alerts *a = arg;
    struct gw_notifier *n = a->notifier;
    pthread_mutex_lock(&a->mu);
    while (!n->stop) {
        a->notify_kick = 0;
        round_locked(a, n, 0);
        if (n->stop) break;
        if (!a->notify_kick) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 1;
            pthread_cond_timedwait(&a->notify_cv, &a->mu, &ts);
        }
    }
    round_locked(a, n, 1);
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

static void notifier_free(struct gw_notifier *n)
{
    if (!n) return;
    for (size_t i = 0; i < GW_NOTIFY_MAX_URLS; i++) {
        free(n->urls[i]);
        free(n->paths[i]);
        gw_httpc_close(n->c[i]);
    }
    free(n->external_url);
    gw_buf_free(&n->body);
    gw_httpc_response_free(&n->resp);
    free(n);
}

int gw_alerts_notifier_start(struct gw_alerts *a, const struct gw_notifier_opts *o, struct gw_error *err)
{
    if (!a || !o) return gw_error_set(err, GW_EINVAL, "no alerts or options");
    if (o->n_urls == 0) return gw_error_set(err, GW_EINVAL, "no Alertmanager URL");
    if (o->n_urls > GW_NOTIFY_MAX_URLS)
        return gw_error_set(err, GW_EINVAL, "too many Alertmanager URLs (%zu, at most %d)", o->n_urls,
                            GW_NOTIFY_MAX_URLS);
    if (a->notifier) return gw_error_set(err, GW_EINVAL, "the notifier is already running");
    struct gw_notifier *n = calloc(1, sizeof *n);
    if (!n) return gw_error_set(err, GW_ENOMEM, "out of memory");
    n->resend_ms = o->resend_ms > 0 ? o->resend_ms : DEFAULT_RESEND_MS;
    gw_buf_init(&n->body, (size_t)64 << 20);
    gw_httpc_response_init(&n->resp);
    struct gw_httpc_opts ho;
    gw_httpc_opts_default(&ho);
    ho.timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : DEFAULT_TIMEOUT_MS;
    if (ho.connect_timeout_ms > ho.timeout_ms) ho.connect_timeout_ms = ho.timeout_ms;
    ho.max_body_bytes = 1 << 20;
    ho.user_agent = "gpuwatch";
    ho.tls = o->tls;
    ho.auth = o->auth;
    for (size_t i = 0; i < o->n_urls; i++) {
        const char *url = o->urls[i];
        struct gw_error e2 = {0};
        if (!url || gw_httpc_open(&n->c[i], url, &ho, &e2) != GW_OK) {
            notifier_free(n);
            return gw_error_set(err, GW_EINVAL, "Alertmanager \"%s\": %s", url ? url : "(null)",
                                e2.msg[0] ? e2.msg : "invalid URL");
        }
        const char *p = gw_httpc_url(n->c[i])->path;
        size_t pl = strcspn(p, "?#");
        while (pl > 0 && p[pl - 1] == '/') pl--;
        size_t need = pl + sizeof "/api/v2/alerts";
        n->urls[i] = strdup(url);
        n->paths[i] = malloc(need);
        if (!n->urls[i] || !n->paths[i]) {
            notifier_free(n);
            return gw_error_set(err, GW_ENOMEM, "out of memory");
        }
        memcpy(n->paths[i], p, pl);
        memcpy(n->paths[i] + pl, "/api/v2/alerts", sizeof "/api/v2/alerts");
    }
    n->n_urls = o->n_urls;
    if (o->external_url && o->external_url[0]) {
        size_t l = strlen(o->external_url);
        while (l > 0 && o->external_url[l - 1] == '/') l--;
        n->external_url = strndup(o->external_url, l);
        if (!n->external_url) {
            notifier_free(n);
            return gw_error_set(err, GW_ENOMEM, "out of memory");
        }
    }
    pthread_mutex_lock(&a->mu);
    a->notifier = n;
    pthread_mutex_unlock(&a->mu);
    if (pthread_create(&n->thr, NULL, notifier_main, a) != 0) {
        pthread_mutex_lock(&a->mu);
        a->notifier = NULL;
        pthread_mutex_unlock(&a->mu);
        notifier_free(n);
        return gw_error_set(err, GW_ENOMEM, "cannot start the notifier thread");
    }
    return GW_OK;
}

void gw_notifier_stop(struct gw_alerts *a)
{
    pthread_mutex_lock(&a->mu);
    struct gw_notifier *n = a->notifier;
    if (!n) {
        pthread_mutex_unlock(&a->mu);
        return;
    }
    n->stop = 1;
    pthread_cond_broadcast(&a->notify_cv);
    pthread_mutex_unlock(&a->mu);
    pthread_join(n->thr, NULL);
    pthread_mutex_lock(&a->mu);
    a->notifier = NULL;
    pthread_mutex_unlock(&a->mu);
    notifier_free(n);
}

void gw_alerts_notifier_stats(struct gw_alerts *a, struct gw_notifier_stats *st)
{
    memset(st, 0, sizeof *st);
    if (!a) return;
    pthread_mutex_lock(&a->mu);
    struct gw_notifier *n = a->notifier;
    if (n) {
        st->sent = atomic_load(&n->sent);
        st->errors = atomic_load(&n->errors);
        st->dropped = atomic_load(&n->dropped);
        /* the queue: alerts due for at least one Alertmanager now */
        int64_t wall = gw_now_ms();
        struct al_list *lists[2] = {&a->active, &a->resolved};
        for (int l = 0; l < 2; l++)
            for (struct al_entry *e = lists[l]->head; e; e = e->next)
                for (size_t u = 0; u < n->n_urls; u++)
                    if (need_send(e, u, wall, n->resend_ms, a->opts.resolved_keep_ms)) {
                        st->queued++;
                        break;
                    }
    }
    pthread_mutex_unlock(&a->mu);
}
