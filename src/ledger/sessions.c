/* src/ledger/sessions.c - training sessions.
 *
 * Inferred from activity runs (runs.c): the runs of different nodes that
 * start within start_tol of the earliest of them are one session (a job
 * starts on all its nodes at once; a node of an earlier job that is still
 * allocated - a wedged process - started long before and stays out). When
 * the runs starting together end in two groups more than 30 min apart,
 * each with at least min_nodes and a quarter of the nodes, they are two
 * jobs that started together. Bounds: start = the earliest run start;
 * end = the median run end (a node that died early or holds its memory
 * late does not move it); steady training = when half of the members
 * compute (the median first computing sample), never when fewer than
 * half ever compute. Sessions have at least min_nodes nodes.
 *
 * From scheduler events (session_start / session_retry with nodes, then
 * session_end or session_fail with the same id): the scheduler's bounds
 * and members win; steady training still comes from the activity of its
 * members; an inferred session starting within start_tol of it with half
 * of its nodes in common is the same session and is dropped. */
#include <stdlib.h>
#include <string.h>

#include "ledger/ledger_int.h"

#define SPLIT_GAP_MS (30 * 60000LL)

struct gw_led_session *led_session_add(struct led_ctx *x, struct gw_error *err)
{
    struct gw_led_result *r = x->r;
    if (r->n_sessions == x->cap_sessions) {
        size_t nc = x->cap_sessions ? x->cap_sessions * 2 : 64;
        struct gw_led_session *p = realloc(r->sessions, nc * sizeof *p);
        if (!p) {
            gw_error_set(err, GW_ENOMEM, "out of memory (sessions)");
            return NULL;
        }
        r->sessions = p;
        x->cap_sessions = nc;
    }
    struct gw_led_session *s = &r->sessions[r->n_sessions++];
    memset(s, 0, sizeof *s);
    s->id = (uint32_t)(r->n_sessions - 1);
    s->t_steady = GW_LED_NO_TIME;
    s->failure = s->chain = -1;
    for (int i = 0; i < 4; i++) s->excluded[i] = -1;
    return s;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Fills s from the runs idx[0..n): members, bounds, steady training. */
static int fill_from_runs(struct led_ctx *x, struct gw_led_session *s, const size_t *idx, size_t n,
                          struct gw_error *err)
{
    s->nodes = malloc(n * sizeof *s->nodes);
    int64_t *ends = malloc(n * sizeof *ends), *comp = malloc(n * sizeof *comp);
    if (!s->nodes || !ends || !comp) {
        free(ends);
        free(comp);
        return gw_error_set(err, GW_ENOMEM, "out of memory (session)");
    }
    size_t nc = 0;
    s->t_start = INT64_MAX;
    for (size_t i = 0; i < n; i++) {
        struct led_run *run = &x->runs[idx[i]];
        run->session = (int32_t)s->id;
        s->nodes[i] = run->node;
        ends[i] = run->end;
        if (run->start < s->t_start) s->t_start = run->start;
        if (run->first_compute != GW_LED_NO_TIME) comp[nc++] = run->first_compute;
    }
    s->n_nodes = (uint32_t)n;
    led_qsort(s->nodes, n, sizeof *s->nodes, cmp_u32);
    led_qsort(ends, n, sizeof *ends, led_cmp_i64);
    s->t_end = ends[(n - 1) / 2];
    if (2 * nc >= n && nc > 0) {
        led_qsort(comp, nc, sizeof *comp, led_cmp_i64);
        s->t_steady = comp[(n - 1) / 2 < nc ? (n - 1) / 2 : nc - 1];
        if (s->t_steady >= s->t_end) s->t_steady = GW_LED_NO_TIME;
    }
    free(ends);
    free(comp);
    return GW_OK;
}

static int end_cmp(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    return (*x > *y) - (*x < *y);
}

/* Splits the candidate runs idx[0..n) at their end gap when they are two
 * jobs: returns the split position (idx reordered by end), or 0. */
static size_t split_by_end(struct led_ctx *x, size_t *idx, size_t n)
{
    int64_t (*pairs)[2] = malloc(n * sizeof *pairs);
    if (!pairs) return 0;
    for (size_t i = 0; i < n; i++) {
        const struct led_run *run = &x->runs[idx[i]];
        pairs[i][0] = run->last_compute != GW_LED_NO_TIME ? run->last_compute : run->end;
        pairs[i][1] = (int64_t)idx[i];
    }
    led_qsort(pairs, n, sizeof *pairs, end_cmp);
    size_t best = 0;
    int64_t best_gap = SPLIT_GAP_MS;
    size_t min_side = x->c.min_nodes > (uint32_t)(n / 4) ? x->c.min_nodes : (uint32_t)(n / 4);
    for (size_t i = 1; i < n; i++) {
        int64_t g = pairs[i][0] - pairs[i - 1][0];
        if (g > best_gap && i >= min_side && n - i >= min_side) {
            best_gap = g;
            best = i;
        }
    }
    for (size_t i = 0; i < n; i++) idx[i] = (size_t)pairs[i][1];
    free(pairs);
    return best;
}

int led_sessions(struct led_ctx *x, struct gw_error *err)
{
    size_t *idx = malloc((x->n_runs ? x->n_runs : 1) * sizeof *idx);
    uint8_t *seen = calloc(x->in->n_nodes ? x->in->n_nodes : 1, 1);
    if (!idx || !seen) {
        free(idx);
        free(seen);
        return gw_error_set(err, GW_ENOMEM, "out of memory (sessions)");
    }
    int rc = GW_OK;
    for (size_t i = 0; i < x->n_runs && rc == GW_OK; i++) {
        if (x->runs[i].session >= 0) continue;
        size_t n = 0;
        for (size_t j = i; j < x->n_runs && x->runs[j].start <= x->runs[i].start + x->c.start_tol_ms; j++) {
            struct led_run *rj = &x->runs[j];
            if (rj->session >= 0 || seen[rj->node]) continue;
            seen[rj->node] = 1;
            idx[n++] = j;
        }
        for (size_t k = 0; k < n; k++) seen[x->runs[idx[k]].node] = 0;
        if (n < x->c.min_nodes || n == 0) continue;
        size_t cut = split_by_end(x, idx, n);
        size_t parts[2][2] = {{0, cut ? cut : n}, {cut, cut ? n : cut}};
        for (int p = 0; p < 2 && rc == GW_OK; p++) {
            size_t lo = parts[p][0], hi = parts[p][1];
            if (hi <= lo) continue;
            struct gw_led_session *s = led_session_add(x, err);
            if (!s) {
                rc = err->code ? err->code : GW_ENOMEM;
                break;
            }
            rc = fill_from_runs(x, s, idx + lo, hi - lo, err);
        }
    }
    free(idx);
    free(seen);
    return rc;
}

/* ---- sessions the scheduler reported ---- */

static const struct gw_led_event *find_end(const struct gw_led_input *in, const struct gw_led_event *start)
{
    const struct gw_led_event *best = NULL;
    for (size_t i = 0; i < in->n_events; i++) {
        const struct gw_led_event *e = &in->events[i];
        if ((e->type != GW_LEV_SESSION_END && e->type != GW_LEV_SESSION_FAIL) || e->t < start->t ||
            strcmp(e->session, start->session) != 0)
            continue;
        if (!best || e->t < best->t) best = e;
    }
    return best;
}

/* Steady training of an event session: the median first computing sample
 * of its members' runs that overlap it. */
static int64_t steady_of(const struct led_ctx *x, const struct gw_led_session *s)
{
    int64_t v[256];
    size_t n = 0;
    for (size_t i = 0; i < x->n_runs && n < 256; i++) {
        const struct led_run *run = &x->runs[i];
        if (run->start > s->t_end) break;
        if (run->end < s->t_start || !led_is_member(s, run->node) || run->first_compute == GW_LED_NO_TIME ||
            run->first_compute < s->t_start)
            continue;
        v[n++] = run->first_compute;
    }
    if (n == 0 || 2 * n < (s->n_nodes < 256 ? s->n_nodes : 256)) return GW_LED_NO_TIME;
    led_qsort(v, n, sizeof *v, led_cmp_i64);
    return v[(n - 1) / 2];
}

static void drop_inferred_twins(struct led_ctx *x, const struct gw_led_session *ev)
{
    struct gw_led_result *r = x->r;
    for (size_t i = 0; i < r->n_sessions; i++) {
        struct gw_led_session *s = &r->sessions[i];
        if (s->from_events || s->n_nodes == 0) continue;
        int64_t d = s->t_start - ev->t_start;
        if (d < -x->c.start_tol_ms || d > x->c.start_tol_ms) continue;
        uint32_t common = 0;
        for (uint32_t k = 0; k < s->n_nodes; k++) common += (uint32_t)led_is_member(ev, s->nodes[k]);
        if (2 * common >= s->n_nodes) {
            free(s->nodes);
            s->nodes = NULL;
            s->n_nodes = 0;          /* removed by build.c's compaction */
        }
    }
}

int led_sessions_from_events(struct led_ctx *x, struct gw_error *err)
{
    const struct gw_led_input *in = x->in;
    for (size_t i = 0; i < in->n_events; i++) {
        const struct gw_led_event *e = &in->events[i];
        if ((e->type != GW_LEV_SESSION_START && e->type != GW_LEV_SESSION_RETRY) || e->n_nodes == 0) continue;
        struct gw_led_session *s = led_session_add(x, err);
        if (!s) return err->code ? err->code : GW_ENOMEM;
        s->from_events = 1;
        snprintf(s->ext_id, sizeof s->ext_id, "%s", e->session);
        s->t_start = e->t;
        const struct gw_led_event *end = find_end(in, e);
        s->t_end = end ? end->t : (x->data_end > e->t ? x->data_end : e->t);
        s->nodes = malloc(e->n_nodes * sizeof *s->nodes);
        if (!s->nodes) return gw_error_set(err, GW_ENOMEM, "out of memory (session)");
        for (uint32_t k = 0; k < e->n_nodes; k++) {
            int ni = led_node_index(x, e->nodes[k]);
            if (ni >= 0) s->nodes[s->n_nodes++] = (uint32_t)ni;
        }
        led_qsort(s->nodes, s->n_nodes, sizeof *s->nodes, cmp_u32);
        s->t_steady = steady_of(x, s);
        if (e->type == GW_LEV_SESSION_RETRY) s->attempt = 1;
        if (end && end->type == GW_LEV_SESSION_FAIL) s->outcome = s->t_steady != GW_LED_NO_TIME ? GW_LED_FAILED
                                                                                                  : GW_LED_STARTUP_FAILED;
        else if (!end) s->outcome = GW_LED_RUNNING;
        else s->outcome = GW_LED_COMPLETED;
        drop_inferred_twins(x, s);
    }
    return GW_OK;
}
