/* api_alerts.c - GET|POST /api/v1/alerts and /api/v1/rules, answered from
 * the alert table (alert.h) the server was given; without one both answer
 * empty lists, never an error.
 *   /api/v1/rules parameters (as Prometheus): type=alert|record (case
 *   insensitive; anything else is 400 bad_data `invalid parameter "type":
 *   not supported value "x"`), rule_name[] and rule_group[] (repeatable
 *   filters; groups left without rules are left out). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/alert.h"
#include "http/http_int.h"

#define MAX_FILTERS 1000

void gw_http_set_alerts(struct gw_http *h, struct gw_alerts *alerts)
{
    if (h) __atomic_store_n(&h->opts.alerts, alerts, __ATOMIC_RELEASE);
}

static struct gw_alerts *alerts_of(struct gw_http_req *rq)
{
    return __atomic_load_n(&rq->h->opts.alerts, __ATOMIC_ACQUIRE);
}

static void json_answer(struct gw_http_resp *rs, int rc)
{
    if (rc != GW_OK) {
        gw_resp_api_error(rs, "internal", "cannot render the answer: %s", gw_strerror(rc));
        return;
    }
    rs->status = 200;
    rs->content_type = "application/json";
}

void gw_api_alerts(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    gw_buf_reset(&rs->body);
    json_answer(rs, gw_alerts_api_alerts(alerts_of(rq), &rs->body));
}

/* Go's %q for the error message: quotes, with " and \ and control bytes escaped. */
static void go_quote(const char *s, char *out, size_t cap)
{
    size_t o = 0;
    if (cap < 3) return;
    out[o++] = '"';
    for (const unsigned char *p = (const unsigned char *)s; *p && o + 6 < cap; p++) {
        if (*p == '"' || *p == '\\') {
            out[o++] = '\\';
            out[o++] = (char)*p;
        } else if (*p < 0x20 || *p == 0x7f) {
            o += (size_t)snprintf(out + o, cap - o, "\\x%02x", *p);
        } else {
            out[o++] = (char)*p;
        }
    }
    out[o++] = '"';
    out[o] = '\0';
}

void gw_api_rules(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    const struct gw_param *tp = gw_params_get(&rq->params, "type");
    char typ[16] = "";
    if (tp && tp->val_len > 0) {
        if (tp->val_len >= sizeof typ) {
            char q[200];
            go_quote(tp->val, q, sizeof q);
            gw_resp_api_error(rs, "bad_data", "invalid parameter \"type\": not supported value %s", q);
            return;
        }
        for (size_t i = 0; i < tp->val_len; i++) typ[i] = (char)tolower((unsigned char)tp->val[i]);
        typ[tp->val_len] = '\0';
        if (strcmp(typ, "alert") && strcmp(typ, "record")) {
            char q[200];
            go_quote(typ, q, sizeof q);
            gw_resp_api_error(rs, "bad_data", "invalid parameter \"type\": not supported value %s", q);
            return;
        }
    }
    size_t n_names = 0, n_groups = 0;
    for (size_t i = 0; i < rq->params.n; i++) {
        if (!strcmp(rq->params.v[i].key, "rule_name[]")) n_names++;
        else if (!strcmp(rq->params.v[i].key, "rule_group[]")) n_groups++;
    }
    if (n_names > MAX_FILTERS || n_groups > MAX_FILTERS) {
        gw_resp_api_error(rs, "bad_data", "too many rule_name[] or rule_group[] parameters (at most %d)",
                          MAX_FILTERS);
        return;
    }
    const char **names = n_names ? calloc(n_names, sizeof *names) : NULL;
    const char **groups = n_groups ? calloc(n_groups, sizeof *groups) : NULL;
    if ((n_names && !names) || (n_groups && !groups)) {
        free(names);
        free(groups);
        gw_resp_api_error(rs, "internal", "out of memory");
        return;
    }
    size_t kn = 0, kg = 0;
    for (size_t i = 0; i < rq->params.n; i++) {
        if (!strcmp(rq->params.v[i].key, "rule_name[]")) names[kn++] = rq->params.v[i].val;
        else if (!strcmp(rq->params.v[i].key, "rule_group[]")) groups[kg++] = rq->params.v[i].val;
    }
    gw_buf_reset(&rs->body);
    struct gw_alerts *a = alerts_of(rq);
    int rc = gw_alerts_api_rules(a, typ, names, n_names, groups, n_groups, &rs->body);
    free(names);
    free(groups);
    json_answer(rs, rc);
}
