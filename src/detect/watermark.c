/* watermark.c - when is a bucket of data time complete?
 *
 * Prometheus spreads one scrape's series over several remote-write shards
 * (by series hash), each sending its own batches; shards drift apart by
 * seconds, by minutes when one retries. A bucket judged when the first
 * sample past it arrives sees whatever happened to arrive: the alerts then
 * depend on the arrival. Here a bucket is judged only when it is complete,
 * as a stream processor's watermark does:
 *
 *  - per node, the next bucket b not yet complete (wm_b) and the count of
 *    its *live* series still before the bucket's end T = (b+1) iv
 *    (`waiting`); a series is live when it has two or more samples and its
 *    newest is within `lateness` L before T (a series that stopped - a GPU
 *    that fell off the bus - stops being waited for after L). The node's
 *    bucket is complete when no live series waits and some sample is past
 *    T, or when the node's newest sample is L past T;
 *  - for the fleet, the next bucket to judge (fleet_b): it is judged when
 *    every node is complete for it, except dormant nodes (nothing newer
 *    than T - L: a dead node holds nobody up for more than L), or when more
 *    than half of the non-dormant nodes are L past it (a node that just
 *    died, or one whose shard stalls for longer than L).
 * So any arrival whose series are at most L apart gives the same
 * evaluations; a sample that arrives after its bucket was judged is still
 * stored and counted (`late`) but changes no judged bucket.
 *
 * Cost: one comparison per sample; each time a node's bucket completes,
 * one pass over that node's series (about one per sample); each fleet step
 * one pass over the nodes. */
#include "detect_int.h"

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static int64_t end_of(const struct gw_det *d, int64_t b)
{
    return (b + 1) * d->k.iv;
}

static int waits(const struct gw_det *d, int64_t t, uint32_t nsamp, int64_t T)
{
    return nsamp >= 2 && t != INT64_MIN && t >= T - d->k.lateness && t < T;
}

static uint32_t count_waiting(const struct gw_det *d, const struct det_node *n, int64_t T)
{
    uint32_t w = 0;
    for (uint32_t i = n->series_head; i; i = d->series[i - 1].next) {
        const struct det_series *s = &d->series[i - 1];
        w += (uint32_t)waits(d, s->last_t, s->nsamp, T);
    }
    return w;
}

static void flags_of(struct gw_det *d, struct det_node *n)
{
    int64_t T = end_of(d, d->k.fleet_b), L = d->k.lateness;
    n->dormant = n->max_t == INT64_MIN || n->max_t < T - L;
    n->behind = !n->dormant && n->wm_b <= d->k.fleet_b;
    n->ahead = !n->dormant && n->max_t >= T + L;
}

static void fleet_recount(struct gw_det *d)
{
    d->n_behind = d->n_ahead = d->n_live = 0;
    for (uint32_t i = 0; i < d->n_nodes; i++) {
        struct det_node *n = &d->nodes[i];
        if (!det_node_live(n)) continue;
        flags_of(d, n);
        d->n_live += !n->dormant;
        d->n_behind += n->behind;
        d->n_ahead += n->ahead;
    }
}

/* Moves the node's watermark over every complete bucket. */
static void node_check(struct gw_det *d, struct det_node *n)
{
    int64_t iv = d->k.iv, L = d->k.lateness;
    for (int guard = 0; guard < 1000000; guard++) {
        int64_t T = end_of(d, n->wm_b);
        if (n->max_t != INT64_MIN && n->max_t >= T + L) {
            int64_t nb = floor_div(n->max_t - L, iv);
            if (nb > n->wm_b) {
                n->wm_b = nb;
                n->waiting = count_waiting(d, n, end_of(d, nb));
                continue;
            }
        }
        if (n->waiting == 0 && n->max_t != INT64_MIN && n->max_t >= T) {
            n->wm_b++;
            n->waiting = count_waiting(d, n, end_of(d, n->wm_b));
            continue;
        }
        break;
    }
    if (n->behind && n->wm_b > d->k.fleet_b) {
        n->behind = 0;
        d->n_behind--;
    }
}

static int fleet_ready(const struct gw_det *d)
{
    if (d->k.iv <= 0 || d->k.fleet_b == INT64_MIN) return 0;
    int64_t T = end_of(d, d->k.fleet_b);
    if (d->k.max_t == INT64_MIN || d->k.max_t < T) return 0;
    return d->n_behind == 0 || (d->n_live > 0 && 2 * d->n_ahead > d->n_live);
}

void det_wm_run(struct gw_det *d)
{
    while (fleet_ready(d)) {
        det_evaluate(d, end_of(d, d->k.fleet_b));
        d->k.fleet_b++;
        fleet_recount(d);
        /* nodes that were waiting only for the fleet to move on */
        for (uint32_t i = 0; i < d->n_nodes && d->n_behind; i++) {
            struct det_node *n = &d->nodes[i];
            if (det_node_live(n) && n->behind) node_check(d, n);
        }
    }
}

void det_wm_recount(struct gw_det *d)
{
    if (d->k.iv <= 0 || d->k.fleet_b == INT64_MIN) return;
    for (uint32_t i = 0; i < d->n_nodes; i++) {
        struct det_node *n = &d->nodes[i];
        if (!det_node_live(n)) continue;
        if (n->wm_b == INT64_MIN) n->wm_b = d->k.fleet_b;
        n->waiting = count_waiting(d, n, end_of(d, n->wm_b));
    }
    fleet_recount(d);
    for (uint32_t i = 0; i < d->n_nodes; i++)
        if (det_node_live(&d->nodes[i])) node_check(d, &d->nodes[i]);
}

void det_wm_locked_interval(struct gw_det *d)
{
    d->k.lateness = det_default_lateness(d);
    int64_t first = d->k.min_t != INT64_MAX ? d->k.min_t : d->k.max_t;
    d->k.fleet_b = first == INT64_MIN ? 0 : floor_div(first, d->k.iv);
    for (uint32_t i = 0; i < d->n_nodes; i++) d->nodes[i].wm_b = d->k.fleet_b;
    det_wm_recount(d);
    det_wm_run(d);
}

void det_wm_node_added(struct gw_det *d, uint32_t ni)
{
    if (d->k.iv <= 0 || d->k.fleet_b == INT64_MIN) return;
    struct det_node *n = &d->nodes[ni];
    n->wm_b = d->k.fleet_b;
    n->waiting = 0;
    n->dormant = 1;   /* until its first sample is accounted in det_wm_sample */
    n->behind = n->ahead = 0;
}

void det_wm_sample(struct gw_det *d, struct det_series *s, int64_t old_t, uint32_t old_nsamp)
{
    if (d->k.iv <= 0 || d->k.fleet_b == INT64_MIN) return;
    struct det_node *n = &d->nodes[s->node];
    int64_t T = end_of(d, n->wm_b), L = d->k.lateness;
    int was = waits(d, old_t, old_nsamp, T), is = waits(d, s->last_t, s->nsamp, T);
    if (was && !is && n->waiting) n->waiting--;
    else if (!was && is) n->waiting++;
    /* fleet flags follow the node's newest sample */
    int64_t TF = end_of(d, d->k.fleet_b);
    if (n->dormant && n->max_t != INT64_MIN && n->max_t >= TF - L) {
        n->dormant = 0;
        d->n_live++;
        if (n->wm_b <= d->k.fleet_b) {
            n->behind = 1;
            d->n_behind++;
        }
    }
    if (!n->dormant && !n->ahead && n->max_t >= TF + L) {
        n->ahead = 1;
        d->n_ahead++;
    }
    if (n->waiting == 0 || n->max_t >= T + L) node_check(d, n);
    if (fleet_ready(d)) det_wm_run(d);
}
