/* src/alert/alert_json.c - JSON for alerts, shaped exactly like
 * Prometheus' (web/api/v1/api.go, 2.42 and 3.x):
 *
 * GET /api/v1/alerts:
 *   {"status":"success","data":{"alerts":[
 *     {"labels":{...},"annotations":{...},"state":"firing",
 *      "activeAt":"2026-11-29T22:06:48.5Z","value":"9e-01"}]}}
 * GET /api/v1/rules (one group per detector, in name order):
 *   {"status":"success","data":{"groups":[
 *     {"name":"gpuwatch-D1","file":"gpuwatch-detectors","rules":[
 *       {"state":"firing","name":"GpuXidError","query":"...","duration":0,
 *        "keepFiringFor":1800,"labels":{"detector":"D1","severity":"critical"},
 *        "annotations":{},"alerts":[...],"health":"ok","evaluationTime":0,
 *        "lastEvaluation":"...","type":"alerting"}],
 *      "interval":30,"limit":0,"evaluationTime":0,"lastEvaluation":"..."}]}}
 *
 * Alert labels (sorted by name, as Go marshals labels.Labels): action,
 * alertname, class, detector, gpu (GPU-level only), hostname (when set),
 * severity and the extra identity label. Annotations: evidence (when
 * set), score, summary. "value" is the alert's score in Go's 'e' format;
 * "activeAt" RFC 3339 in UTC with trailing zeros of the fraction dropped
 * (Go's RFC3339Nano). Rule state: firing if one of its alerts fires, else
 * pending if one is pending, else inactive. Only pending and firing alerts
 * are listed (resolved ones are not, as in Prometheus). Filters follow
 * Prometheus 3 (type=record, rule_name[], rule_group[]; a group left
 * without rules is left out); Prometheus 2.42 ignores rule_name[] and
 * rule_group[] and keeps such groups with "rules":[]. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/json.h"
#include "alert/alert_int.h"

#define LIT(b, s) gw_buf_append((b), (s), sizeof(s) - 1)

size_t gw_alert_format_float_e(double v, char *out, size_t cap)
{
    int n;
    if (isnan(v)) n = snprintf(out, cap, "NaN");
    else if (isinf(v)) n = snprintf(out, cap, v > 0 ? "+Inf" : "-Inf");
    else {
        n = 0;
        for (int p = 0; p <= 17; p++) {
            n = snprintf(out, cap, "%.*e", p, v);
            if (strtod(out, NULL) == v) break;
        }
    }
    return n < 0 ? 0 : (size_t)n;
}

/* Shortest decimal that reads back as v ("0.9", "1", "0.125"). */
static void short_float(double v, char *out, size_t cap)
{
    if (!isfinite(v)) {
        snprintf(out, cap, "%s", isnan(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf");
        return;
    }
    for (int p = 1; p <= 17; p++) {
        snprintf(out, cap, "%.*g", p, v);
        if (strtod(out, NULL) == v) return;
    }
}

struct kv {
    const char *k, *v;
};

static int cmp_kv(const void *x, const void *y) { return strcmp(((const struct kv *)x)->k, ((const struct kv *)y)->k); }

static int json_kvs(struct gw_buf *b, struct kv *kv, size_t n)
{
    qsort(kv, n, sizeof *kv, cmp_kv);
    int rc = gw_buf_putc(b, '{');
    for (size_t i = 0; rc == GW_OK && i < n; i++) {
        if (i) rc = gw_buf_putc(b, ',');
        if (rc == GW_OK) rc = gw_json_str(b, kv[i].k, strlen(kv[i].k));
        if (rc == GW_OK) rc = gw_buf_putc(b, ':');
        if (rc == GW_OK) rc = gw_json_str(b, kv[i].v, strlen(kv[i].v));
    }
    if (rc == GW_OK) rc = gw_buf_putc(b, '}');
    return rc;
}

int gw_alert_json_labels(struct gw_buf *b, const struct gw_alert *al)
{
    struct kv kv[9];
    size_t n = 0;
    char gpu[16];
    kv[n++] = (struct kv){"alertname", al->alertname};
    kv[n++] = (struct kv){"severity", gw_severity_name(al->severity)};
    if (al->hostname[0]) kv[n++] = (struct kv){"hostname", al->hostname};
    if (al->gpu >= 0) kv[n++] = (struct kv){"gpu", gw_alert_gpu_str(al, gpu, sizeof gpu)};
    if (al->detector[0]) kv[n++] = (struct kv){"detector", al->detector};
    if (al->cls[0]) kv[n++] = (struct kv){"class", al->cls};
    if (al->action[0]) kv[n++] = (struct kv){"action", al->action};
    if (al->extra_name[0] && al->extra_value[0]) kv[n++] = (struct kv){al->extra_name, al->extra_value};
    return json_kvs(b, kv, n);
}

int gw_alert_json_annotations(struct gw_buf *b, const struct gw_alert *al)
{
    struct kv kv[3];
    size_t n = 0;
    char score[40];
    short_float(al->score, score, sizeof score);
    if (al->summary[0]) kv[n++] = (struct kv){"summary", al->summary};
    if (al->evidence[0]) kv[n++] = (struct kv){"evidence", al->evidence};
    kv[n++] = (struct kv){"score", score};
    return json_kvs(b, kv, n);
}

static int api_alert(struct gw_buf *b, const struct gw_alert *al)
{
    char ts[40], val[40];
    int rc = LIT(b, "{\"labels\":");
    if (rc == GW_OK) rc = gw_alert_json_labels(b, al);
    if (rc == GW_OK) rc = LIT(b, ",\"annotations\":");
    if (rc == GW_OK) rc = gw_alert_json_annotations(b, al);
    gw_format_rfc3339(al->active_at, ts, sizeof ts);
    gw_alert_format_float_e(al->score, val, sizeof val);
    if (rc == GW_OK)
        rc = gw_buf_printf(b, ",\"state\":\"%s\",\"activeAt\":\"%s\",\"value\":\"%s\"}", gw_alert_state_name(al->state),
                           ts, val);
    return rc;
}

int gw_alerts_api_alerts(struct gw_alerts *a, struct gw_buf *out)
{
    struct gw_alert *v = NULL;
    size_t n = 0;
    int rc = a ? gw_alerts_snapshot(a, 0, &v, &n) : GW_OK;
    if (rc != GW_OK) return rc;
    rc = LIT(out, "{\"status\":\"success\",\"data\":{\"alerts\":[");
    for (size_t i = 0; rc == GW_OK && i < n; i++) {
        if (i) rc = gw_buf_putc(out, ',');
        if (rc == GW_OK) rc = api_alert(out, &v[i]);
    }
    if (rc == GW_OK) rc = LIT(out, "]}}");
    free(v);
    return rc;
}

static int in_list(const char *s, const char *const *list, size_t n)
{
    if (!list || n == 0) return 1;
    for (size_t i = 0; i < n; i++)
        if (list[i] && !strcmp(list[i], s)) return 1;
    return 0;
}

static int cmp_rule_group(const void *x, const void *y)
{
    const struct al_rule *p = x, *q = y;
    return strcmp(p->detector, q->detector);
}

int gw_alerts_api_rules(struct gw_alerts *a, const char *type, const char *const *rule_names, size_t n_rule_names,
                        const char *const *group_names, size_t n_group_names, struct gw_buf *out)
{
    int want_alerts = !type || !type[0] || !strcmp(type, "alert");
    if (type && type[0] && strcmp(type, "alert") && strcmp(type, "record")) return GW_EINVAL;
    struct al_rule *rules = NULL;
    size_t nr = 0;
    struct gw_alert *al = NULL;
    size_t na = 0;
    int64_t now = INT64_MIN, interval_ms = 30000;
    int rc = GW_OK;
    if (a && want_alerts) {
        rc = gw_alerts_rules_copy(a, &rules, &nr);
        if (rc == GW_OK) rc = gw_alerts_snapshot(a, 0, &al, &na);
        pthread_mutex_lock(&a->mu);
        now = a->now;
        if (a->opts.samples_interval_ms > 0) interval_ms = a->opts.samples_interval_ms;
        pthread_mutex_unlock(&a->mu);
    }
    if (rc != GW_OK) goto out;
    /* Stable sort by group (detector), keeping registration order inside. */
    for (size_t i = 1; i < nr; i++)
        for (size_t j = i; j > 0 && cmp_rule_group(&rules[j - 1], &rules[j]) > 0; j--) {
            struct al_rule t = rules[j - 1];
            rules[j - 1] = rules[j];
            rules[j] = t;
        }
    char last_eval[40];
    gw_format_rfc3339(now == INT64_MIN ? -62135596800000LL : now, last_eval, sizeof last_eval);
    rc = LIT(out, "{\"status\":\"success\",\"data\":{\"groups\":[");
    int first_group = 1;
    for (size_t i = 0; rc == GW_OK && i < nr;) {
        size_t j = i;
        while (j < nr && !strcmp(rules[j].detector, rules[i].detector)) j++;
        char gname[64];
        snprintf(gname, sizeof gname, "gpuwatch-%s", rules[i].detector);
        size_t group_start = out->len;
        int n_in = 0;
        if (in_list(gname, group_names, n_group_names)) {
            rc = gw_buf_printf(out, "%s{\"name\":", first_group ? "" : ",");
            if (rc == GW_OK) rc = gw_json_str(out, gname, strlen(gname));
            if (rc == GW_OK) rc = LIT(out, ",\"file\":\"gpuwatch-detectors\",\"rules\":[");
            for (size_t r = i; rc == GW_OK && r < j; r++) {
                const struct al_rule *ru = &rules[r];
                if (!in_list(ru->alertname, rule_names, n_rule_names)) continue;
                int firing = 0, pending = 0;
                for (size_t k = 0; k < na; k++)
                    if (!strcmp(al[k].alertname, ru->alertname)) {
                        firing |= al[k].state == GW_ALERT_FIRING;
                        pending |= al[k].state == GW_ALERT_PENDING;
                    }
                rc = gw_buf_printf(out, "%s{\"state\":\"%s\",\"name\":", n_in ? "," : "",
                                   firing ? "firing" : pending ? "pending" : "inactive");
                n_in++;
                if (rc == GW_OK) rc = gw_json_str(out, ru->alertname, strlen(ru->alertname));
                if (rc == GW_OK) rc = LIT(out, ",\"query\":");
                if (rc == GW_OK) rc = gw_json_str(out, ru->expr, strlen(ru->expr));
                if (rc == GW_OK) rc = LIT(out, ",\"duration\":");
                if (rc == GW_OK) rc = gw_json_num(out, (double)ru->for_ms / 1000.0);
                if (rc == GW_OK) rc = LIT(out, ",\"keepFiringFor\":");
                if (rc == GW_OK) rc = gw_json_num(out, (double)ru->hold_ms / 1000.0);
                struct kv lk[2];
                size_t nl = 0;
                if (ru->detector[0]) lk[nl++] = (struct kv){"detector", ru->detector};
                lk[nl++] = (struct kv){"severity", gw_severity_name(ru->severity)};
                if (rc == GW_OK) rc = LIT(out, ",\"labels\":");
                if (rc == GW_OK) rc = json_kvs(out, lk, nl);
                if (rc == GW_OK) rc = LIT(out, ",\"annotations\":{},\"alerts\":[");
                int na_rule = 0;
                for (size_t k = 0; rc == GW_OK && k < na; k++) {
                    if (strcmp(al[k].alertname, ru->alertname)) continue;
                    if (na_rule++) rc = gw_buf_putc(out, ',');
                    if (rc == GW_OK) rc = api_alert(out, &al[k]);
                }
                if (rc == GW_OK)
                    rc = gw_buf_printf(out, "],\"health\":\"ok\",\"evaluationTime\":0,\"lastEvaluation\":\"%s\","
                                            "\"type\":\"alerting\"}",
                                       last_eval);
            }
            if (rc == GW_OK) rc = LIT(out, "],\"interval\":");
            if (rc == GW_OK) rc = gw_json_num(out, (double)interval_ms / 1000.0);
            if (rc == GW_OK)
                rc = gw_buf_printf(out, ",\"limit\":0,\"evaluationTime\":0,\"lastEvaluation\":\"%s\"}", last_eval);
            /* A group whose rules were all filtered out is left out. */
            if (rc == GW_OK && n_in == 0) out->len = group_start;
            else if (rc == GW_OK) first_group = 0;
        }
        i = j;
    }
    if (rc == GW_OK) rc = LIT(out, "]}}");
out:
    gw_alerts_rules_free(rules, nr);
    free(al);
    return rc;
}
