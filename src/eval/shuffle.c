/* shuffle.c - the shuffled arrival feeder of `gpuwatch evaluate`: the
 * generator's samples delivered as Prometheus remote write would deliver
 * them with several shards (evaluate.h, struct gw_eval_shuffler).
 *
 * Samples are buffered per shard (series id -> shard by a seeded hash) in
 * FIFO queues tagged with their scrape round. A round starts when a
 * scrape's (node, job) is not after the previous one's. At the start of
 * round R, shard k may deliver the samples of rounds <= R - 1 - lag_k,
 * lag_k in 0..max_skew seeded per (shard, R / 20). Delivery picks a shard
 * with due samples at random and hands on a batch of 1..500 of them, then
 * calls batch_end(max timestamp of the batch), until nothing is due.
 * Everything is seeded by hashing (no PRNG state shared with anything
 * else), so a seed always gives the same order. */
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/evaluate.h"

#define MAX_BATCH 500
#define LAG_PERIOD 20

struct qent {
    uint32_t id;
    uint32_t round;
    int64_t t;
    double v;
};

struct queue {
    struct qent *v;
    size_t head, n, cap;   /* live entries [head, n) */
};

struct gw_eval_shuffler {
    uint64_t seed;
    unsigned shards, max_skew;
    gw_eval_deliver_fn deliver;
    gw_eval_batch_end_fn batch_end;
    void *ud;
    struct queue *q;
    uint64_t round, draws;
    int have_prev;
    uint32_t prev_key;
};

static uint64_t mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

int gw_eval_shuffler_new(struct gw_eval_shuffler **out, uint64_t seed, unsigned shards, unsigned max_skew,
                         gw_eval_deliver_fn deliver, gw_eval_batch_end_fn batch_end, void *ud)
{
    if (out == NULL || deliver == NULL || shards == 0 || shards > 1024)
        return GW_EINVAL;
    struct gw_eval_shuffler *s = calloc(1, sizeof *s);
    if (s == NULL)
        return GW_ENOMEM;
    s->q = calloc(shards, sizeof *s->q);
    if (s->q == NULL) {
        free(s);
        return GW_ENOMEM;
    }
    s->seed = seed;
    s->shards = shards;
    s->max_skew = max_skew;
    s->deliver = deliver;
    s->batch_end = batch_end;
    s->ud = ud;
    *out = s;
    return GW_OK;
}

void gw_eval_shuffler_free(struct gw_eval_shuffler *s)
{
    if (s == NULL)
        return;
    for (unsigned i = 0; i < s->shards; i++)
        free(s->q[i].v);
    free(s->q);
    free(s);
}

static int push(struct queue *q, uint32_t id, uint32_t round, int64_t t, double v)
{
    if (q->n == q->cap) {
        if (q->head > 0 && q->head * 2 >= q->n) {   /* reclaim the delivered front */
            memmove(q->v, q->v + q->head, (q->n - q->head) * sizeof *q->v);
            q->n -= q->head;
            q->head = 0;
        } else {
            size_t cap = q->cap ? q->cap * 2 : 1024;
            struct qent *nv = realloc(q->v, cap * sizeof *nv);
            if (nv == NULL)
                return GW_ENOMEM;
            q->v = nv;
            q->cap = cap;
        }
    }
    q->v[q->n++] = (struct qent){.id = id, .round = round, .t = t, .v = v};
    return GW_OK;
}

static uint64_t lag_of(const struct gw_eval_shuffler *s, unsigned k, uint64_t round)
{
    return mix(s->seed ^ ((uint64_t)k << 44) ^ (round / LAG_PERIOD) * 0x2545F4914F6CDD1Dull) %
           ((uint64_t)s->max_skew + 1);
}

/* Entries of shard k deliverable now: rounds <= limit_k (all with force). */
static size_t due_count(const struct gw_eval_shuffler *s, unsigned k, int force)
{
    const struct queue *q = &s->q[k];
    if (force)
        return q->n - q->head;
    uint64_t lag = lag_of(s, k, s->round);
    if (s->round < 1 + lag)
        return 0;
    uint64_t limit = s->round - 1 - lag;
    size_t m = 0;
    for (size_t i = q->head; i < q->n && q->v[i].round <= limit; i++)
        m++;
    return m;
}

static void deliver_due(struct gw_eval_shuffler *s, int force)
{
    size_t *due = calloc(s->shards, sizeof *due);
    if (due == NULL)
        force = 1;   /* cannot plan: deliver in shard order */
    size_t total = 0;
    for (unsigned k = 0; k < s->shards; k++) {
        size_t m = due_count(s, k, force);
        if (due)
            due[k] = m;
        total += m;
    }
    while (total > 0) {
        unsigned k;
        size_t m;
        if (due) {
            /* a random shard among those with due samples */
            uint64_t pick = mix(s->seed ^ 0xba7c4ull ^ ++s->draws * 0x9E3779B97F4A7C15ull) % total;
            for (k = 0; k < s->shards && pick >= due[k]; k++)
                pick -= due[k];
            if (k >= s->shards)
                k = s->shards - 1;
            m = 1 + mix(s->seed ^ 0x5123ull ^ ++s->draws * 0xD1B54A32D192ED03ull) % MAX_BATCH;
            if (m > due[k])
                m = due[k];
        } else {
            for (k = 0; k < s->shards && s->q[k].n == s->q[k].head; k++)
                ;
            if (k >= s->shards)
                break;
            m = s->q[k].n - s->q[k].head;
        }
        struct queue *q = &s->q[k];
        int64_t tmax = INT64_MIN;
        for (size_t i = 0; i < m; i++) {
            const struct qent *e = &q->v[q->head + i];
            s->deliver(s->ud, e->id, e->t, e->v);
            if (e->t > tmax)
                tmax = e->t;
        }
        q->head += m;
        if (q->head == q->n)
            q->head = q->n = 0;
        if (s->batch_end)
            s->batch_end(s->ud, tmax);
        total -= m;
        if (due)
            due[k] -= m;
    }
    free(due);
}

int gw_eval_shuffler_scrape(struct gw_eval_shuffler *s, const struct gw_sim_scrape *sc)
{
    if (s == NULL || sc == NULL)
        return GW_EINVAL;
    uint32_t key = sc->node * 2u + (sc->job == GW_SIM_JOB_NODE);
    if (s->have_prev && key <= s->prev_key) {
        s->round++;
        deliver_due(s, 0);
    }
    s->have_prev = 1;
    s->prev_key = key;
    for (size_t i = 0; i < sc->n; i++) {
        uint32_t id = sc->series[i];
        unsigned k = (unsigned)(mix(s->seed ^ (uint64_t)id * 0x9E3779B97F4A7C15ull) % s->shards);
        int rc = push(&s->q[k], id, (uint32_t)s->round, sc->t, sc->v[i]);
        if (rc != GW_OK)
            return rc;
    }
    return GW_OK;
}

void gw_eval_shuffler_flush(struct gw_eval_shuffler *s)
{
    if (s == NULL)
        return;
    deliver_due(s, 1);
}
