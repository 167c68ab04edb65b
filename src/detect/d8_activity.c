/* src/detect/d8_activity.c - D8's input: what every node is doing, judged
 * once per bucket like every other evaluation (so it does not depend on
 * arrival order), as one level per node and bucket:
 *
 *   2 computing   the node's mean GPU util at T >= act_train_util (30 %):
 *                 training, also checkpoint saves and loads;
 *   1 allocated   not computing, but at least half of its GPUs hold at
 *                 least act_fb_mib (1 GiB) of frame buffer: a job's
 *                 start-up (image pull, NCCL init) or processes wedged
 *                 after their job died;
 *   0 idle        neither.
 *
 * A node with no GPU util value at T (silent, or no DCGM series) gets no
 * level for that bucket: a gap, not "idle". The levels are queued and
 * drained by the caller (gw_det_activity_drain): `serve` writes them as
 * the series gpuwatch_node_activity{node}, from which the ledger infers
 * training sessions and retry chains (docs/ledger.md). The queue is not
 * part of the snapshot: at most the levels of the last second are lost on
 * a crash, and the ledger bridges short gaps. */
#include <stdlib.h>
#include <string.h>

#include "detect/detect_int.h"

#define ACT_QUEUE_MAX (1u << 20)     /* ~20 MB: minutes of a 16k-node fleet */

static void act_push(struct gw_det *d, int64_t T, uint32_t node, uint8_t level)
{
    struct det_act *a = &d->act;
    if (a->n == a->cap) {
        if (a->cap >= ACT_QUEUE_MAX) {
            a->dropped++;
            return;
        }
        uint32_t nc = a->cap ? a->cap * 2 : 1024;
        struct det_act_out *p = malloc((size_t)nc * sizeof *p);
        if (!p) {
            a->dropped++;
            return;
        }
        for (uint32_t i = 0; i < a->n; i++) p[i] = a->q[(a->head + i) % a->cap];
        free(a->q);
        a->q = p;
        a->head = 0;
        a->cap = nc;
    }
    a->q[(a->head + a->n) % a->cap] = (struct det_act_out){.t = T, .node = node, .level = level};
    a->n++;
}

/* The level of node n at T, or -1 when it has no GPU util value at T. */
static int node_level(const struct gw_det *d, const struct det_node *n, int64_t T)
{
    double usum = 0, v;
    unsigned un = 0, alloc = 0, gpus = 0;
    for (unsigned g = 0; g < n->gpu_count; g++) {
        const struct det_gpu *x = &n->gpus[g];
        if (!x->slot[G_UTIL] && !x->slot[G_FB]) continue;
        gpus++;
        if (det_at(d, x->slot[G_UTIL], T, &v) && v >= 0 && v < d->c.sentinel_min) {
            usum += v;
            un++;
        }
        if (det_at(d, x->slot[G_FB], T, &v) && v >= d->c.act_fb_mib && v < d->c.sentinel_min) alloc++;
    }
    if (un == 0) return -1;
    if (usum / un >= d->c.act_train_util) return GW_ACT_COMPUTING;
    return 2 * alloc >= gpus && alloc > 0 ? GW_ACT_ALLOCATED : GW_ACT_IDLE;
}

void det_d8_eval(struct gw_det *d, int64_t T)
{
    if (!d->c.act_enable) return;
    for (uint32_t i = 0; i < d->n_nodes; i++) {
        const struct det_node *n = &d->nodes[i];
        if (n->merged_into || !det_node_live(n)) continue;
        int lv = node_level(d, n, T);
        if (lv >= 0) act_push(d, T, i, (uint8_t)lv);
    }
}

void det_d8_free(struct gw_det *d)
{
    free(d->act.q);
    memset(&d->act, 0, sizeof d->act);
}

uint64_t gw_det_activity_dropped(struct gw_det *d)
{
    if (!d) return 0;
    pthread_mutex_lock(&d->mu);
    uint64_t v = d->act.dropped;
    pthread_mutex_unlock(&d->mu);
    return v;
}

int gw_det_activity_drain(struct gw_det *d, gw_det_activity_cb cb, void *ud)
{
    if (!d) return GW_OK;
    enum { CHUNK = 4096 };
    struct item {
        int64_t t;
        uint8_t level;
        char name[DET_NODE_NAME];
    } *buf = malloc(CHUNK * sizeof *buf);
    if (!buf) return GW_ENOMEM;
    int rc = GW_OK;
    for (;;) {
        pthread_mutex_lock(&d->mu);
        uint32_t n = d->act.n < CHUNK ? d->act.n : CHUNK;
        for (uint32_t i = 0; i < n; i++) {
            const struct det_act_out *o = &d->act.q[(d->act.head + i) % d->act.cap];
            uint32_t ni = o->node < d->n_nodes ? det_node_resolve(d, o->node) : o->node;
            buf[i].t = o->t;
            buf[i].level = o->level;
            if (ni < d->n_nodes)
                memcpy(buf[i].name, d->nodes[ni].name, DET_NODE_NAME);
            else
                buf[i].name[0] = '\0';
        }
        pthread_mutex_unlock(&d->mu);
        if (n == 0) break;
        uint32_t done = 0;
        for (; done < n; done++)
            if ((rc = cb(ud, buf[done].name, buf[done].t, buf[done].level)) != 0) break;
        pthread_mutex_lock(&d->mu);
        /* only the drain removes entries, so the first `done` are still ours */
        d->act.head = (d->act.head + done) % d->act.cap;
        d->act.n -= done;
        pthread_mutex_unlock(&d->mu);
        if (rc) break;
    }
    free(buf);
    return rc;
}
