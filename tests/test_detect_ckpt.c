/* test_detect_ckpt.c - D7 on crafted node_exporter series: checkpoint
 * phases with scrape gaps and exporter restarts, each diagnosis (slots,
 * server, link, healthy) with its alert, the baits that must stay quiet (a
 * large copy on one node, a single busy node, an exporter restart on every
 * node at once), label styles, scrape intervals and cluster sizes, shuffled
 * arrival (identical events), CheckpointStalled, the event encoding.
 *
 * A scenario gives every node's NFS write/read rate, RPC queue share,
 * response time, backlog per send, slot high-water and link speed per
 * scrape; the generator turns them into mountstats, transport, NIC and
 * `up` series with their real names and labels (counters accumulate,
 * restarts reset them), one sample list that is replayed in time order or
 * in shuffled shards. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuwatch/alert.h"
#include "gpuwatch/detect.h"
#include "gpuwatch/labels.h"

#define T0 1764000000000LL
#define MAXN 48
#define MIB 1048576.0

enum { STYLE_HOST, STYLE_FQDN, STYLE_IP, STYLE_COUNT };

/* What one node does at one scrape. */
struct rates {
    double w, r;          /* NFS bytes/s */
    double q, rtt;        /* queue share of the request time, response time (s) of the busy direction */
    double backlog;       /* backlog per send */
    double slots;         /* transport_maximum_rpc_slots */
    double speed;         /* storage NIC speed, bytes/s */
    int skip;             /* no scrape */
    int reset;            /* exporter restarted: counters from 0 */
};

struct scn;
typedef void (*rates_fn)(const struct scn *s, int node, int step, struct rates *r);

struct scn {
    int nodes, steps, style;
    int64_t iv;
    rates_fn fn;
    int arg;              /* scenario parameter */
};

struct smp {
    uint32_t series;
    int64_t t;
    double v;
    uint64_t key;         /* shuffled order */
};

enum { S_WB, S_RB, S_WQ, S_WRESP, S_WREQT, S_WREQS, S_RQ, S_RRESP, S_RREQT, S_RREQS, S_BL0, S_SE0, S_BL1, S_SE1,
       S_MS0, S_MS1, S_TX, S_RX, S_SPEED, S_UP, S_UNAME, S_PER_NODE };

struct gen {
    struct smp *v;
    size_t n, cap;
    uint8_t labels[MAXN * S_PER_NODE][400];
    size_t len[MAXN * S_PER_NODE];
    double acc[MAXN * S_PER_NODE];
};

static void push(struct gen *g, uint32_t series, int64_t t, double v)
{
    if (g->n == g->cap) {
        g->cap = g->cap ? g->cap * 2 : 4096;
        g->v = realloc(g->v, g->cap * sizeof *g->v);
        assert_non_null(g->v);
    }
    g->v[g->n++] = (struct smp){series, t, v, 0};
}

static void sort_labels(struct gw_label *ls, size_t n)
{
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(ls[j - 1].name, ls[j].name) > 0; j--) {
            struct gw_label x = ls[j];
            ls[j] = ls[j - 1];
            ls[j - 1] = x;
        }
}

static const char *k_name[S_PER_NODE] = {
    "node_mountstats_nfs_operations_sent_bytes_total", "node_mountstats_nfs_operations_received_bytes_total",
    "node_mountstats_nfs_operations_queue_time_seconds_total", "node_mountstats_nfs_operations_response_time_seconds_total",
    "node_mountstats_nfs_operations_request_time_seconds_total", "node_mountstats_nfs_operations_requests_total",
    "node_mountstats_nfs_operations_queue_time_seconds_total", "node_mountstats_nfs_operations_response_time_seconds_total",
    "node_mountstats_nfs_operations_request_time_seconds_total", "node_mountstats_nfs_operations_requests_total",
    "node_mountstats_nfs_transport_backlog_queue_total", "node_mountstats_nfs_transport_sends_total",
    "node_mountstats_nfs_transport_backlog_queue_total", "node_mountstats_nfs_transport_sends_total",
    "node_mountstats_nfs_transport_maximum_rpc_slots", "node_mountstats_nfs_transport_maximum_rpc_slots",
    "node_network_transmit_bytes_total", "node_network_receive_bytes_total", "node_network_speed_bytes", "up",
    "node_uname_info",
};

static void build_labels(struct gen *g, const struct scn *s, int node, int k)
{
    char host[32], inst[96];
    snprintf(host, sizeof host, "gpu%03d", node + 7);
    if (s->style == STYLE_HOST) snprintf(inst, sizeof inst, "%s:9100", host);
    else if (s->style == STYLE_FQDN) snprintf(inst, sizeof inst, "%s.cluster.example.com:9100", host);
    else snprintf(inst, sizeof inst, "10.0.%d.%d:9100", node / 200, node % 200 + 10);
    struct gw_label ls[10];
    size_t n = 0;
#define L(nm, v) ls[n++] = (struct gw_label){nm, (uint32_t)strlen(nm), v, (uint32_t)strlen(v)}
    L("__name__", k_name[k]);
    L("instance", inst);
    L("job", "node");
    if (k <= S_MS1) {
        L("export", "vast01:/ckpt");
        L("mountaddr", "10.9.0.1");
        L("protocol", "tcp");
    }
    if (k <= S_WREQS) L("operation", k == S_RB ? "READ" : "WRITE");
    else if (k <= S_RREQS) L("operation", "READ");
    else if (k <= S_MS1) L("transport", (k == S_BL0 || k == S_SE0 || k == S_MS0) ? "0" : "1");
    else if (k <= S_SPEED) L("device", "enp200s0f0np0");
    if (k == S_UNAME) L("nodename", host);
#undef L
    sort_labels(ls, n);
    g->len[node * S_PER_NODE + k] = gw_labels_encode(ls, n, g->labels[node * S_PER_NODE + k]);
}

static double jit(int node, int step, int64_t iv)
{
    uint32_t h = (uint32_t)(node * 2654435761u) ^ (uint32_t)(step * 40503u);
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    return ((double)(h % 1000) / 1000.0 - 0.5) * (double)iv / 15.0;
}

static void default_rates(struct rates *r)
{
    memset(r, 0, sizeof *r);
    r->w = 20000 + 0;
    r->r = 30000;
    r->q = 0.02;
    r->rtt = 0.005;
    r->backlog = 0.01;
    r->slots = 40;
    r->speed = 25e9;
}

static void cnt(struct gen *g, uint32_t id, double inc)
{
    g->acc[id] += inc > 0 ? floor(inc) : 0;
}

/* Every sample of a scenario, in time order. */
static void generate(struct gen *g, const struct scn *s)
{
    memset(g, 0, sizeof *g);
    for (int n = 0; n < s->nodes; n++)
        for (int k = 0; k < S_PER_NODE; k++) build_labels(g, s, n, k);
    double dt = (double)s->iv / 1000.0;
    for (int step = 0; step < s->steps; step++)
        for (int n = 0; n < s->nodes; n++) {
            struct rates r;
            default_rates(&r);
            s->fn(s, n, step, &r);
            uint32_t b = (uint32_t)(n * S_PER_NODE);
            if (r.reset)
                for (int k = 0; k < S_PER_NODE; k++) g->acc[b + k] = 0;
            /* the busier direction carries the bottleneck's timings, the other idles */
            double wq = r.w > r.r ? r.q : 0.02, wrtt = r.w > r.r ? r.rtt : 0.005;
            double rq = r.r >= r.w ? r.q : 0.02, rrtt = r.r >= r.w ? r.rtt : 0.003;
            double wreq = r.w / MIB * dt + 2 * dt, rreq = r.r / MIB * dt + 3 * dt;
            cnt(g, b + S_WB, r.w * dt);
            cnt(g, b + S_RB, r.r * dt);
            g->acc[b + S_WQ] += wreq * wrtt * wq / (1 - wq);
            g->acc[b + S_WRESP] += wreq * wrtt;
            g->acc[b + S_WREQT] += wreq * wrtt / (1 - wq);
            cnt(g, b + S_WREQS, wreq);
            g->acc[b + S_RQ] += rreq * rrtt * rq / (1 - rq);
            g->acc[b + S_RRESP] += rreq * rrtt;
            g->acc[b + S_RREQT] += rreq * rrtt / (1 - rq);
            cnt(g, b + S_RREQS, rreq);
            double sends = (wreq + rreq) / 2;
            cnt(g, b + S_SE0, sends);
            cnt(g, b + S_SE1, sends);
            cnt(g, b + S_BL0, sends * r.backlog);
            cnt(g, b + S_BL1, sends * r.backlog);
            cnt(g, b + S_TX, (r.w + 1e6) * dt);
            cnt(g, b + S_RX, (r.r + 1e6) * dt);
            if (r.skip) continue;
            int64_t t = T0 + step * s->iv + (int64_t)jit(n, step, s->iv);
            for (int k = 0; k < S_PER_NODE; k++) {
                double v = g->acc[b + k];
                if (k == S_MS0 || k == S_MS1) v = r.slots;
                else if (k == S_SPEED) v = r.speed;
                else if (k == S_UP || k == S_UNAME) v = 1;
                else if (k == S_WQ || k == S_WRESP || k == S_WREQT || k == S_RQ || k == S_RRESP || k == S_RREQT)
                    v = floor(v * 1000) / 1000;
                if (k == S_UNAME && s->style != STYLE_IP) continue;
                push(g, b + (uint32_t)k, t, v);
            }
        }
}

/* ------------------------------------------------------------ replay */

struct out {
    struct gw_det_ckpt ev[64];
    size_t n;
    int bottleneck_alerts, stalled_alerts;
    char causes[8][64];
};

static int keep(void *ud, const struct gw_det_ckpt *e, const int64_t *t, const double *bps, size_t n)
{
    struct out *o = ud;
    (void)t, (void)bps, (void)n;
    if (o->n < 64) o->ev[o->n++] = *e;
    return 0;
}

static int count_alerts(void *ud, const struct gw_alert *a)
{
    struct out *o = ud;
    if (!strcmp(a->alertname, "CheckpointIoBottleneck")) {
        if (o->bottleneck_alerts < 8) snprintf(o->causes[o->bottleneck_alerts], 64, "%s", a->extra_value);
        o->bottleneck_alerts++;
    } else if (!strcmp(a->alertname, "CheckpointStalled")) {
        o->stalled_alerts++;
    }
    return 0;
}

static int cmp_key(const void *a, const void *b)
{
    const struct smp *x = a, *y = b;
    return (x->key > y->key) - (x->key < y->key);
}

/* shuffle_seed 0: time order; else series in 4 shards, each lagging a
 * fixed 0..2 intervals (at most 120 s), random order within a scrape. */
static const char *g_snap_path;   /* set: save the state halfway, continue in a new engine loaded from it */

static void replay(const struct scn *s, struct gen *g, uint64_t shuffle_seed, struct out *o)
{
    memset(o, 0, sizeof *o);
    if (shuffle_seed) {
        int64_t maxlag = 2 * s->iv < 120000 ? 2 * s->iv : 120000;
        uint64_t x = shuffle_seed * 0x9e3779b97f4a7c15ULL;
        int64_t lag[4];
        for (int i = 0; i < 4; i++) {
            x ^= x >> 29, x *= 0xbf58476d1ce4e5b9ULL, x ^= x >> 32;
            lag[i] = (int64_t)(x % (uint64_t)(maxlag + 1));
        }
        for (size_t i = 0; i < g->n; i++) {
            uint32_t sh = (g->v[i].series * 2654435761u >> 7) % 4;
            x ^= x >> 29, x *= 0xbf58476d1ce4e5b9ULL, x ^= x >> 32;
            uint64_t rnd = x % (uint64_t)(s->iv / 4);
            g->v[i].key = (uint64_t)(g->v[i].t - T0 + lag[sh] + (int64_t)rnd);
        }
        qsort(g->v, g->n, sizeof *g->v, cmp_key);   /* per series: same lag, gaps >> rnd, so its order holds */
    }
    struct gw_alerts *al;
    struct gw_det *d;
    struct gw_alerts_opts ao;
    gw_alerts_opts_default(&ao);
    ao.samples_interval_ms = -1;
    struct gw_error err = {0};
    assert_int_equal(gw_alerts_open(&al, &ao, &err), GW_OK);
    assert_int_equal(gw_det_new(&d, NULL, al, &err), GW_OK);
    uint32_t h[MAXN * S_PER_NODE];
    memset(h, 0xff, sizeof h);
    int64_t tmax = 0;
    for (size_t i = 0; i < g->n; i++) {
        uint32_t id = g->v[i].series;
        if (h[id] == UINT32_MAX) h[id] = gw_det_series(d, id + 1, g->labels[id], g->len[id]);
        gw_det_sample(d, h[id], g->v[i].t, g->v[i].v);
        if (g->v[i].t > tmax) tmax = g->v[i].t;
        if (i % 97 == 0) gw_det_advance(d, tmax);
        if (g_snap_path && i == g->n / 2) {   /* restart mid-run: state to disk, a new engine from it */
            assert_int_equal(gw_det_ckpt_drain(d, keep, o), GW_OK);
            assert_int_equal(gw_det_snapshot_save(d, g_snap_path, &err), GW_OK);
            gw_det_free(d);
            assert_int_equal(gw_det_new(&d, NULL, al, &err), GW_OK);
            assert_int_equal(gw_det_snapshot_load(d, g_snap_path, &err), GW_OK);
            memset(h, 0xff, sizeof h);
        }
    }
    gw_det_finish(d, tmax + 10 * s->iv);
    assert_int_equal(gw_det_ckpt_drain(d, keep, o), GW_OK);
    gw_alerts_foreach(al, count_alerts, o);
    gw_det_free(d);
    gw_alerts_close(al);
    free(g->v);
    g->v = NULL;
}

static struct out *run_scn(const struct scn *s, uint64_t shuffle_seed)
{
    static struct gen g;
    static struct out o;
    generate(&g, s);
    replay(s, &g, shuffle_seed, &o);
    return &o;
}

static void expect_event(const struct gw_det_ckpt *e, int phase, int diag, int64_t t0_step, int64_t t1_step,
                         int64_t iv)
{
    int64_t ts = T0 + t0_step * iv, te = T0 + t1_step * iv;
    if (e->phase != phase || e->diag != diag || llabs(e->t_start - ts) > 2 * iv || llabs(e->t_end - te) > 2 * iv)
        fail_msg("event %s %s [%lld, %lld] s, expected %s %s [%lld, %lld] s", gw_ckpt_phase_name(e->phase),
                 gw_ckpt_diag_name(e->diag), (long long)(e->t_start - T0) / 1000, (long long)(e->t_end - T0) / 1000,
                 gw_ckpt_phase_name(phase), gw_ckpt_diag_name(diag), (long long)(ts - T0) / 1000,
                 (long long)(te - T0) / 1000);
}

/* ------------------------------------------------------------ scenarios */

static void slot_limited(struct rates *r, double bps, int load)
{
    if (load) r->r = bps;
    else r->w = bps;
    r->q = 0.93;
    r->rtt = 0.012;
    r->backlog = 2.5;
    r->slots = 128;
}

/* steps 40-59 save (slots), 100-111 load (slots), 160-189 save with a
 * fleet-wide scrape gap at 170-171 and exporter restarts on two nodes at
 * 175 and 180 (counters reset). */
static void fn_phases(const struct scn *s, int node, int step, struct rates *r)
{
    double per = 40e9 / s->nodes;
    if (step >= 40 && step < 60) slot_limited(r, per, 0);
    if (step >= 100 && step < 112) slot_limited(r, 150e9 / s->nodes, 1);
    if (step >= 160 && step < 190) slot_limited(r, per, 0);
    if (step == 170 || step == 171) r->skip = 1;
    if ((step == 175 && node == 1) || (step == 180 && node == 3)) r->reset = 1;
}

static void test_ckpt_phases_gaps_restarts(void **state)
{
    (void)state;
    struct scn s = {8, 230, STYLE_HOST, 30000, fn_phases, 0};
    struct out *o = run_scn(&s, 0);
    assert_int_equal(o->n, 3);
    expect_event(&o->ev[0], GW_CKPT_SAVE, GW_CKPT_SLOTS, 40, 60, s.iv);
    expect_event(&o->ev[1], GW_CKPT_LOAD, GW_CKPT_SLOTS, 100, 112, s.iv);
    expect_event(&o->ev[2], GW_CKPT_SAVE, GW_CKPT_SLOTS, 160, 190, s.iv);
    assert_int_equal(o->ev[0].nodes, 8);
    /* bytes: 40 GB/s for 10 min, within 10 % (the first partial scrape) */
    assert_true(fabs(o->ev[0].bytes - 40e9 * 600) < 0.1 * 40e9 * 600);
    /* the restarts give no spike: the peak stays near 40 GB/s */
    assert_true(o->ev[2].peak_bps < 1.3 * 40e9);
    assert_true(o->ev[0].queue_share > 0.9 && o->ev[0].backlog_per_send > 2);
    assert_true(o->ev[0].slot_high == 128 && o->ev[0].slot_limit == 128);
    assert_true(o->ev[0].link_util > 0.15 && o->ev[0].link_util < 0.3);   /* 5 GB/s of 25 */
    assert_int_equal(o->bottleneck_alerts, 2);   /* one per limited save (50 min apart: beyond the hold) */
}

/* Save k (steps 40 + 60k .. +12) limited by cause arg order: slots, server, link, healthy. */
static void fn_diag(const struct scn *s, int node, int step, struct rates *r)
{
    (void)node;
    int k = (step - 40) / 60, in = step >= 40 && (step - 40) % 60 < 12 && k < 4;
    if (!in) return;
    double per = 40e9 / s->nodes;
    r->w = per;
    int cause = (k + s->arg) % 4;
    switch (cause) {
    case 0: slot_limited(r, per, 0); break;
    case 1: r->q = 0.1, r->rtt = 0.09, r->backlog = 0.3; break;            /* server: response time 18x idle */
    case 2: r->q = 0.6, r->rtt = 0.008, r->backlog = 1.5, r->speed = per / 0.95; break;   /* link at 95 % */
    default: r->q = 0.05, r->rtt = 0.007, r->backlog = 0.1; break;         /* healthy */
    }
}

static void test_ckpt_each_diagnosis(void **state)
{
    (void)state;
    static const int want[4] = {GW_CKPT_SLOTS, GW_CKPT_SERVER, GW_CKPT_LINK, GW_CKPT_HEALTHY};
    for (int arg = 0; arg < 4; arg++) {
        struct scn s = {10, 300, STYLE_HOST, 30000, fn_diag, arg};
        struct out *o = run_scn(&s, 0);
        assert_int_equal(o->n, 4);
        for (int k = 0; k < 4; k++) expect_event(&o->ev[k], GW_CKPT_SAVE, want[(k + arg) % 4], 40 + 60 * k, 52 + 60 * k, s.iv);
        /* one alert per limited save (60 scrapes apart: beyond the 10 min hold), none for the healthy one */
        assert_int_equal(o->bottleneck_alerts, 3);
        for (int k = 0; k < 3; k++) assert_true(strcmp(o->causes[k], "healthy") != 0);
    }
}

/* Baits: arg 0 a 2 GB/s copy on one node for 20 min; 1 one node busy
 * writing and reading for an hour; 2 an exporter restart on every node at
 * step 100 (all counters back to 0); 3 two nodes writing (below
 * ckpt_min_nodes). */
static void fn_bait(const struct scn *s, int node, int step, struct rates *r)
{
    (void)s;
    if (s->arg == 0 && node == 2 && step >= 50 && step < 90) r->w = 2e9, r->q = 0.7, r->backlog = 2, r->slots = 128;
    if (s->arg == 1 && node == 4 && step >= 30 && step < 150) r->w = 1.5e9, r->r = 1e9, r->q = 0.95, r->backlog = 3;
    if (s->arg == 2 && step == 100) r->reset = 1;
    if (s->arg == 3 && node < 2 && step >= 60 && step < 80) slot_limited(r, 3e9, 0);
}

static void test_ckpt_baits_stay_quiet(void **state)
{
    (void)state;
    for (int arg = 0; arg < 4; arg++) {
        struct scn s = {12, 200, STYLE_HOST, 30000, fn_bait, arg};
        struct out *o = run_scn(&s, 0);
        if (o->n != 0 || o->bottleneck_alerts || o->stalled_alerts)
            fail_msg("bait %d: %zu events, %d alerts", arg, o->n, o->bottleneck_alerts + o->stalled_alerts);
    }
}

/* A save (slots) and a load (healthy) on a fleet of any size. */
static void fn_small(const struct scn *s, int node, int step, struct rates *r)
{
    (void)node;
    int64_t per_min = 60000 / s->iv;
    if (step >= 20 * per_min && step < 26 * per_min) slot_limited(r, 2e9, 0);
    if (step >= 40 * per_min && step < 44 * per_min) r->r = 4e9, r->q = 0.1, r->rtt = 0.004;
}

static void test_ckpt_styles_intervals_sizes(void **state)
{
    (void)state;
    static const int64_t ivs[3] = {15000, 30000, 60000};
    static const int sizes[3] = {3, 16, 40};
    for (int st = 0; st < STYLE_COUNT; st++)
        for (int i = 0; i < 3; i++)
            for (int z = 0; z < 3; z++) {
                struct scn s = {sizes[z], (int)(60 * 60000 / ivs[i]), st, ivs[i], fn_small, 0};
                int64_t pm = 60000 / s.iv;
                struct out *o = run_scn(&s, 0);
                if (o->n != 2) fail_msg("style %d iv %lld nodes %d: %zu events", st, (long long)s.iv, s.nodes, o->n);
                expect_event(&o->ev[0], GW_CKPT_SAVE, GW_CKPT_SLOTS, 20 * pm, 26 * pm, s.iv);
                expect_event(&o->ev[1], GW_CKPT_LOAD, GW_CKPT_HEALTHY, 40 * pm, 44 * pm, s.iv);
                if (o->ev[0].nodes != (uint32_t)s.nodes) fail_msg("style %d iv %lld nodes %d: %u nodes", st, (long long)s.iv, s.nodes, o->ev[0].nodes);
            }
}

static void test_ckpt_arrival_order(void **state)
{
    (void)state;
    static const int64_t ivs[2] = {15000, 30000};
    for (int i = 0; i < 2; i++) {
        struct scn s = {8, (int)(230 * 30000 / ivs[i]), STYLE_FQDN, ivs[i], fn_phases, 0};
        struct out ref = *run_scn(&s, 0);
        assert_true(ref.n >= 2);
        for (uint64_t seed = 1; seed <= 3; seed++) {
            struct out *o = run_scn(&s, seed);
            assert_int_equal(o->n, ref.n);
            for (size_t k = 0; k < ref.n; k++)
                if (memcmp(&o->ev[k], &ref.ev[k], sizeof ref.ev[k]) != 0)
                    fail_msg("iv %lld seed %llu: event %zu differs", (long long)s.iv, (unsigned long long)seed, k);
            assert_int_equal(o->bottleneck_alerts, ref.bottleneck_alerts);
        }
    }
}

/* Six 4-minute saves every 30 min, then one of 25 minutes. */
static void fn_stall(const struct scn *s, int node, int step, struct rates *r)
{
    (void)s, (void)node;
    int k = step / 60, in = step % 60 >= 10 && step % 60 < (k == 6 ? 60 : 18);
    if (in) r->w = 1e9, r->q = 0.05, r->rtt = 0.006;
}

static void test_ckpt_stalled(void **state)
{
    (void)state;
    struct scn s = {6, 7 * 60 + 5, STYLE_HOST, 30000, fn_stall, 0};
    struct out *o = run_scn(&s, 0);
    assert_int_equal(o->n, 7);
    assert_int_equal(o->bottleneck_alerts, 0);
    assert_int_equal(o->stalled_alerts, 1);
    for (size_t k = 0; k < 7; k++) assert_int_equal(o->ev[k].diag, GW_CKPT_HEALTHY);
}

/* A restart in the middle of a save (the snapshot at half the samples of
 * fn_phases is inside the first save) gives the same events. */
static void test_ckpt_snapshot_restart(void **state)
{
    (void)state;
    struct scn s = {8, 100, STYLE_HOST, 30000, fn_phases, 0};
    struct out ref = *run_scn(&s, 0);
    assert_int_equal(ref.n, 1);
    char path[256];
    const char *tmp = getenv("GW_TEST_TMP");
    snprintf(path, sizeof path, "%s/d7-snapshot-%d.state", tmp && *tmp ? tmp : "/tmp", (int)getpid());
    if (tmp && *tmp) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "mkdir -p '%s'", tmp);
        assert_int_equal(system(cmd), 0);
    }
    g_snap_path = path;
    struct out *o = run_scn(&s, 0);
    g_snap_path = NULL;
    unlink(path);
    assert_int_equal(o->n, 1);
    assert_memory_equal(&o->ev[0], &ref.ev[0], sizeof ref.ev[0]);
}

static void test_ckpt_encoding(void **state)
{
    (void)state;
    struct gw_det_ckpt e = {7, T0, T0 + 300000, GW_CKPT_SAVE, GW_CKPT_SLOTS, 60, 10, 30000, 1.2e13, 4e10, 3.9e10,
                            0.027, 0.05, 0.93, 12.5, 5.1, 2.7, 128, 128, 1.0};
    e.rtt_base_ms = NAN;
    uint8_t b[GW_CKPT_ENC_BYTES];
    gw_det_ckpt_encode(&e, b);
    struct gw_det_ckpt d;
    assert_int_equal(gw_det_ckpt_decode(b, sizeof b, &d), GW_OK);
    assert_memory_equal(&e, &d, sizeof e);
    b[0] = 2;
    assert_int_equal(gw_det_ckpt_decode(b, sizeof b, &d), GW_ECORRUPT);
    assert_int_equal(gw_det_ckpt_decode(b, sizeof b - 1, &d), GW_ECORRUPT);
    uint8_t k1[GW_CKPT_KEY_BYTES], k2[GW_CKPT_KEY_BYTES], k3[GW_CKPT_KEY_BYTES];
    gw_det_ckpt_key(-5, 9, k1);
    gw_det_ckpt_key(T0, 1, k2);
    gw_det_ckpt_key(T0, 2, k3);
    assert_true(memcmp(k1, k2, sizeof k1) < 0 && memcmp(k2, k3, sizeof k2) < 0);
    assert_string_equal(gw_ckpt_diag_name(GW_CKPT_SERVER), "server_limited");
    assert_non_null(strstr(gw_ckpt_remedy(GW_CKPT_SLOTS), "sunrpc.tcp_max_slot_table_entries"));
    assert_non_null(strstr(gw_ckpt_remedy(GW_CKPT_SLOTS), "nconnect"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ckpt_phases_gaps_restarts),
        cmocka_unit_test(test_ckpt_each_diagnosis),
        cmocka_unit_test(test_ckpt_baits_stay_quiet),
        cmocka_unit_test(test_ckpt_styles_intervals_sizes),
        cmocka_unit_test(test_ckpt_arrival_order),
        cmocka_unit_test(test_ckpt_stalled),
        cmocka_unit_test(test_ckpt_snapshot_restart),
        cmocka_unit_test(test_ckpt_encoding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
