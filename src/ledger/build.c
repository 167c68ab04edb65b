/* src/ledger/build.c - gw_led_build: the steps of ledger_int.h in order,
 * and the helpers they share. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ledger/ledger_int.h"

int led_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double led_quantile(double *v, size_t n, double q)
{
    if (n == 0) return NAN;
    led_qsort(v, n, sizeof *v, cmp_dbl);
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)pos;
    if (lo + 1 >= n) return v[n - 1];
    return v[lo] + (pos - (double)lo) * (v[lo + 1] - v[lo]);
}

int led_is_member(const struct gw_led_session *s, uint32_t node)
{
    size_t lo = 0, hi = s->n_nodes;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->nodes[mid] < node) lo = mid + 1;
        else hi = mid;
    }
    return lo < s->n_nodes && s->nodes[lo] == node;
}

int led_node_index(const struct led_ctx *x, const char *name)
{
    const struct gw_led_result *r = x->r;
    size_t lo = 0, hi = r->n_nodes;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(r->nodes[x->by_name[mid]], name);
        if (c == 0) return (int)x->by_name[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

struct name_ref {
    const char *name;
    uint32_t i;
};

static int cmp_name_ref(const void *a, const void *b)
{
    const struct name_ref *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->i > y->i) - (x->i < y->i);
}

/* by_name: the first index of each name wins (duplicates are unreachable). */
static int index_names(struct led_ctx *x, struct gw_error *err)
{
    const struct gw_led_result *r = x->r;
    struct name_ref *v = malloc((r->n_nodes ? r->n_nodes : 1) * sizeof *v);
    x->by_name = malloc((r->n_nodes ? r->n_nodes : 1) * sizeof *x->by_name);
    if (!v || !x->by_name) {
        free(v);
        return gw_error_set(err, GW_ENOMEM, "out of memory (nodes)");
    }
    for (uint32_t i = 0; i < r->n_nodes; i++) v[i] = (struct name_ref){r->nodes[i], i};
    led_qsort(v, r->n_nodes, sizeof *v, cmp_name_ref);
    for (uint32_t i = 0; i < r->n_nodes; i++) x->by_name[i] = v[i].i;
    free(v);
    return GW_OK;
}

static int cmp_session(const void *a, const void *b)
{
    const struct gw_led_session *x = a, *y = b;
    if (x->t_start != y->t_start) return x->t_start < y->t_start ? -1 : 1;
    if (x->n_nodes != y->n_nodes) return x->n_nodes > y->n_nodes ? -1 : 1;
    return (x->nodes && y->nodes && x->n_nodes) ? (x->nodes[0] > y->nodes[0]) - (x->nodes[0] < y->nodes[0]) : 0;
}

/* Drops emptied sessions, sorts by start, renumbers. */
static void compact_sessions(struct gw_led_result *r)
{
    size_t k = 0;
    for (size_t i = 0; i < r->n_sessions; i++)
        if (r->sessions[i].n_nodes > 0) r->sessions[k++] = r->sessions[i];
        else free(r->sessions[i].nodes);
    r->n_sessions = k;
    led_qsort(r->sessions, r->n_sessions, sizeof *r->sessions, cmp_session);
    for (size_t i = 0; i < r->n_sessions; i++) r->sessions[i].id = (uint32_t)i;
}

static int copy_nodes(struct gw_led_result *r, const struct gw_led_input *in, struct gw_error *err)
{
    r->nodes = calloc(in->n_nodes ? in->n_nodes : 1, sizeof *r->nodes);
    if (!r->nodes) return gw_error_set(err, GW_ENOMEM, "out of memory (nodes)");
    for (uint32_t i = 0; i < in->n_nodes; i++) {
        r->nodes[i] = strdup(in->nodes[i] ? in->nodes[i] : "");
        if (!r->nodes[i]) return gw_error_set(err, GW_ENOMEM, "out of memory (nodes)");
        r->n_nodes = i + 1;
    }
    return GW_OK;
}

int gw_led_build(const struct gw_led_input *in, const struct gw_led_config *c, struct gw_led_result **out,
                 struct gw_error *err)
{
    *out = NULL;
    struct gw_led_result *r = calloc(1, sizeof *r);
    if (!r) return gw_error_set(err, GW_ENOMEM, "out of memory (ledger)");
    struct led_ctx x = {.in = in, .r = r, .gpus = in->gpus_per_node ? in->gpus_per_node : 8};
    if (c) x.c = *c;
    else gw_led_config_default(&x.c);
    if (x.c.min_nodes < 1) x.c.min_nodes = 1;
    if (x.c.half_life_ms <= 0) x.c.half_life_ms = 14 * 86400000LL;
    r->cfg = x.c;
    r->from = in->from;
    r->to = in->to;
    r->now = in->now ? in->now : in->to;
    int rc = copy_nodes(r, in, err);
    if (rc == GW_OK) rc = index_names(&x, err);
    if (rc == GW_OK) rc = led_runs(&x, err);
    if (rc == GW_OK) rc = led_sessions(&x, err);
    if (rc == GW_OK) rc = led_sessions_from_events(&x, err);
    if (rc == GW_OK) {
        compact_sessions(r);
        rc = led_failures(&x, err);
    }
    if (rc == GW_OK) rc = led_outcomes(&x, err);
    if (rc == GW_OK) rc = led_chains(&x, err);
    if (rc == GW_OK) rc = led_nodes(&x, err);
    if (rc == GW_OK) led_stats(&x);
    free(x.runs);
    free(x.node_hours);
    free(x.by_name);
    if (rc != GW_OK) {
        gw_led_result_free(r);
        return rc;
    }
    *out = r;
    return GW_OK;
}

void gw_led_result_free(struct gw_led_result *r)
{
    if (!r) return;
    for (uint32_t i = 0; i < r->n_nodes; i++) free(r->nodes[i]);
    free(r->nodes);
    for (size_t i = 0; i < r->n_sessions; i++) free(r->sessions[i].nodes);
    free(r->sessions);
    free(r->failures);
    free(r->chains);
    free(r->ledger);
    free(r->exclusions);
    free(r);
}
