/* src/ledger/runs.c - per-node runs of activity.
 *
 * The activity samples of each node (gpuwatch_node_activity: 0 idle,
 * 1 allocated, 2 computing) are read in time order; a run is a stretch of
 * samples at level >= 1 with no gap longer than ctx->gap between them (a
 * missed scrape or two does not split a job). A run ends at its last active
 * sample plus one interval. The interval is the median spacing of
 * consecutive samples (or the input's). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ledger/ledger_int.h"

static int cmp_act(const void *a, const void *b)
{
    const struct gw_led_act *x = a, *y = b;
    if (x->node != y->node) return x->node < y->node ? -1 : 1;
    return (x->t > y->t) - (x->t < y->t);
}

static int cmp_run(const void *a, const void *b)
{
    const struct led_run *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return (x->node > y->node) - (x->node < y->node);
}

/* Median spacing of consecutive samples of a node (at most 4096 looked at). */
static int64_t learn_interval(const struct gw_led_act *a, size_t n)
{
    int64_t d[4096];
    size_t k = 0, step = n / 4096 + 1;
    for (size_t i = 1; i < n && k < 4096; i += step)
        if (a[i].node == a[i - 1].node && a[i].t > a[i - 1].t) d[k++] = a[i].t - a[i - 1].t;
    if (k == 0) return 30000;
    led_qsort(d, k, sizeof *d, led_cmp_i64);
    return d[k / 2];
}

static int push_run(struct led_ctx *x, size_t *cap, const struct led_run *r, struct gw_error *err)
{
    if (x->n_runs == *cap) {
        size_t nc = *cap ? *cap * 2 : 256;
        struct led_run *p = realloc(x->runs, nc * sizeof *p);
        if (!p) return gw_error_set(err, GW_ENOMEM, "out of memory (activity runs)");
        x->runs = p;
        *cap = nc;
    }
    x->runs[x->n_runs++] = *r;
    return GW_OK;
}

int led_runs(struct led_ctx *x, struct gw_error *err)
{
    const struct gw_led_input *in = x->in;
    size_t n = in->n_act;
    struct gw_led_act *a = n ? malloc(n * sizeof *a) : NULL;
    x->node_hours = calloc(in->n_nodes ? in->n_nodes : 1, sizeof *x->node_hours);
    if ((n && !a) || !x->node_hours) {
        free(a);
        return gw_error_set(err, GW_ENOMEM, "out of memory (activity)");
    }
    if (n) memcpy(a, in->act, n * sizeof *a);
    led_qsort(a, n, sizeof *a, cmp_act);
    x->iv = in->interval_ms > 0 ? in->interval_ms : learn_interval(a, n);
    x->gap = x->c.gap_ms > 0 ? x->c.gap_ms : (3 * x->iv > 90000 ? 3 * x->iv : 90000);
    size_t cap = 0;
    int rc = GW_OK;
    struct led_run cur;
    int open = 0;
    int64_t last_active = 0;
    for (size_t i = 0; i < n && rc == GW_OK; i++) {
        const struct gw_led_act *s = &a[i];
        if (s->node >= in->n_nodes) continue;
        int same = i > 0 && a[i - 1].node == s->node;
        if (same && s->t == a[i - 1].t) continue;   /* a duplicate */
        int64_t dt = same ? s->t - a[i - 1].t : x->iv;
        x->node_hours[s->node] += (double)(dt < x->gap ? dt : x->iv) / 3600000.0;
        if (s->t + x->iv > x->data_end) x->data_end = s->t + x->iv;
        if (open && (!same || s->t - last_active > x->gap || s->level == GW_LED_IDLE)) {
            cur.end = last_active + x->iv;
            rc = push_run(x, &cap, &cur, err);
            open = 0;
        }
        if (s->level == GW_LED_IDLE || rc != GW_OK) continue;
        if (!open) {
            cur = (struct led_run){.node = s->node, .start = s->t, .first_compute = GW_LED_NO_TIME,
                                   .last_compute = GW_LED_NO_TIME, .session = -1};
            open = 1;
        }
        last_active = s->t;
        if (s->level == GW_LED_TRAIN) {
            if (cur.first_compute == GW_LED_NO_TIME) cur.first_compute = s->t;
            cur.last_compute = s->t + x->iv;
        }
    }
    if (open && rc == GW_OK) {
        cur.end = last_active + x->iv;
        rc = push_run(x, &cap, &cur, err);
    }
    free(a);
    if (rc == GW_OK) led_qsort(x->runs, x->n_runs, sizeof *x->runs, cmp_run);
    return rc;
}
