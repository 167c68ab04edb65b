/* test_detect.c - the detectors D1-D6 on crafted series: each fires on its
 * signature and stays quiet on the baits (checkpoint-like load changes, job
 * start/stop, collective XID bursts, benign clock bits, idle spare nodes,
 * exporter restarts, single stray error ticks, brief scrape gaps, a hot
 * inlet); the config file; the snapshot across a restart.
 *
 * A small fake fleet (8 nodes x 8 GPUs, 30 s scrapes, dcgm-exporter and
 * node_exporter series with their real names and labels) is generated
 * step by step; a hook per test changes values, drops series or adds
 * events. Alerts are read back from the alert table (alert.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuwatch/alert.h"
#include "gpuwatch/detect.h"
#include "gpuwatch/labels.h"

#define T0 1764000000000LL
#define IV 30000LL
#define MIN 60000LL
#define NODES 8
#define GPUS 8

/* ------------------------------------------------------------ fake fleet */

struct fleet {
    struct gw_alerts *al;
    struct gw_det *d;
    uint64_t next_id;
    /* series ids by (metric slot, node, gpu) */
    uint32_t h[64][NODES][GPUS + 1];
    int64_t t;
    int step;              /* scrapes so far: hooks see it, runs continue it */
};

enum {
    M_UTIL, M_POWER, M_CLOCK, M_TEMP, M_MEMTEMP, M_REASONS, M_SBE, M_CORR, M_UNCORR, M_PENDING, M_FLIT, M_PCIE,
    M_INTR, M_PROCS, M_UP_DCGM, M_UP_NODE, M_IB, M_COUNT
};
static const char *k_metric[M_COUNT] = {
    "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL",
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_ROW_REMAP_PENDING", "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "node_intr_total", "node_procs_running", "up", "up",
    "node_infiniband_symbol_error_total",
};

/* Labels in canonical (name) order. */
static void sort_labels(struct gw_label *ls, size_t n)
{
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(ls[j - 1].name, ls[j].name) > 0; j--) {
            struct gw_label x = ls[j];
            ls[j] = ls[j - 1];
            ls[j - 1] = x;
        }
}

static uint32_t reg(struct fleet *f, const char *metric, int node, int gpu, const char *extra_name,
                    const char *extra_value, int dcgm_job)
{
    char host[16], inst[32], gpus[8];
    snprintf(host, sizeof host, "gpu%03d", node + 1);
    snprintf(inst, sizeof inst, "%s:%s", host, dcgm_job ? "9400" : "9100");
    snprintf(gpus, sizeof gpus, "%d", gpu);
    struct gw_label ls[8];
    size_t n = 0;
#define L(nm, v) ls[n++] = (struct gw_label){nm, (uint32_t)strlen(nm), v, (uint32_t)strlen(v)}
    L("__name__", metric);
    if (extra_name) L(extra_name, extra_value);
    if (gpu >= 0) L("gpu", gpus);
    if (gpu >= 0) L("hostname", host);
    L("instance", inst);
    L("job", dcgm_job ? "dcgm" : "node");
    if (!strncmp(metric, "node_infiniband", 15)) L("port", "1");
#undef L
    sort_labels(ls, n);
    uint8_t buf[512];
    size_t len = gw_labels_encode(ls, n, buf);
    return gw_det_series(f->d, f->next_id++, buf, len);
}

static void fleet_open(struct fleet *f, const struct gw_det_config *c)
{
    memset(f, 0, sizeof *f);
    struct gw_alerts_opts ao;
    gw_alerts_opts_default(&ao);
    struct gw_error err = {0};
    assert_int_equal(gw_alerts_open(&f->al, &ao, &err), GW_OK);
    assert_int_equal(gw_det_new(&f->d, c, f->al, &err), GW_OK);
    f->next_id = 1;
    for (int m = 0; m < M_COUNT; m++)
        for (int n = 0; n < NODES; n++) {
            if (m == M_INTR || m == M_PROCS || m == M_UP_NODE || m == M_IB) {
                f->h[m][n][GPUS] = reg(f, k_metric[m], n, -1, NULL, NULL, 0);
                assert_true(f->h[m][n][GPUS] != 0);
            } else if (m == M_UP_DCGM) {
                f->h[m][n][GPUS] = reg(f, k_metric[m], n, -1, NULL, NULL, 1);
            } else {
                for (int g = 0; g < GPUS; g++) {
                    f->h[m][n][g] = reg(f, k_metric[m], n, g, NULL, NULL, 1);
                    assert_true(f->h[m][n][g] != 0);
                }
            }
        }
    f->t = T0;
}

static void fleet_close(struct fleet *f)
{
    gw_det_free(f->d);
    gw_alerts_close(f->al);
}

/* Values of one scrape; a hook edits them. */
struct scrape {
    double v[M_COUNT][NODES][GPUS + 1];
    uint8_t skip[M_COUNT][NODES][GPUS + 1];   /* 1: not sent */
};

typedef void (*hook_fn)(struct scrape *s, int64_t t, int step, void *ud);

/* counters keep running totals */
static double g_cnt[M_COUNT][NODES][GPUS + 1];

static void fleet_defaults(struct scrape *s, int64_t t, int busy)
{
    memset(s, 0, sizeof *s);
    for (int n = 0; n < NODES; n++) {
        for (int g = 0; g < GPUS; g++) {
            unsigned jit = (unsigned)((t / IV + (uint64_t)n * 7 + (uint64_t)g * 3) % 5);
            s->v[M_UTIL][n][g] = busy ? 96 + jit : 0;
            s->v[M_POWER][n][g] = busy ? 800 + 20.0 * jit : 140 + jit;
            s->v[M_CLOCK][n][g] = busy ? 1950 - 5.0 * jit : 345;
            s->v[M_TEMP][n][g] = busy ? 65 + jit : 33 + jit % 2;
            s->v[M_MEMTEMP][n][g] = busy ? 61 + jit : 30;
            s->v[M_REASONS][n][g] = busy ? 0 : 1;
            s->v[M_SBE][n][g] = g_cnt[M_SBE][n][g];
            s->v[M_CORR][n][g] = g_cnt[M_CORR][n][g];
            s->v[M_UNCORR][n][g] = g_cnt[M_UNCORR][n][g];
            s->v[M_PENDING][n][g] = 0;
            s->v[M_FLIT][n][g] = g_cnt[M_FLIT][n][g];
            s->v[M_PCIE][n][g] = g_cnt[M_PCIE][n][g];
        }
        g_cnt[M_INTR][n][GPUS] += busy ? 300000 : 75000;
        s->v[M_INTR][n][GPUS] = g_cnt[M_INTR][n][GPUS];
        s->v[M_PROCS][n][GPUS] = busy ? 40 + n : 2;
        s->v[M_UP_DCGM][n][GPUS] = 1;
        s->v[M_UP_NODE][n][GPUS] = 1;
        s->v[M_IB][n][GPUS] = g_cnt[M_IB][n][GPUS];
    }
}

/* Adds inc to a counter from now on. */
static void bump(struct scrape *s, int m, int n, int g, double inc)
{
    g_cnt[m][n][g] += inc;
    s->v[m][n][g] = g_cnt[m][n][g];
}

static void run(struct fleet *f, int steps, int busy, hook_fn hook, void *ud)
{
    static struct scrape s;
    for (int i = 0; i < steps; i++) {
        f->t += IV;
        fleet_defaults(&s, f->t, busy);
        if (hook) hook(&s, f->t, f->step, ud);
        f->step++;
        for (int n = 0; n < NODES; n++)
            for (int m = 0; m < M_COUNT; m++)
                for (int g = 0; g <= GPUS; g++) {
                    if (!f->h[m][n][g] || s.skip[m][n][g]) continue;
                    /* per-target jitter: 0-2 s */
                    int64_t ts = f->t + (m == M_INTR || m == M_PROCS || m == M_UP_NODE || m == M_IB ? 700 : 1300) + n * 10;
                    gw_det_sample(f->d, f->h[m][n][g], ts, s.v[m][n][g]);
                }
        gw_det_advance(f->d, f->t + 2000);
    }
}

static void reset_counters(void)
{
    memset(g_cnt, 0, sizeof g_cnt);
}

/* ------------------------------------------------------------ alert checks */

struct find {
    const char *name;
    const char *host;      /* NULL any */
    int gpu;               /* -2 any */
    int count;
    enum gw_severity sev;
    char detector[8], action[32], cls[32], evidence[GW_ALERT_TEXT_MAX];
    enum gw_alert_state state;
};

static int find_cb(void *ud, const struct gw_alert *a)
{
    struct find *f = ud;
    if (f->name && strcmp(a->alertname, f->name)) return 0;
    if (f->host && strcmp(a->hostname, f->host)) return 0;
    if (f->gpu != -2 && a->gpu != f->gpu) return 0;
    f->count++;
    f->sev = a->severity;
    f->state = a->state;
    snprintf(f->detector, sizeof f->detector, "%s", a->detector);
    snprintf(f->action, sizeof f->action, "%s", a->action);
    snprintf(f->cls, sizeof f->cls, "%s", a->cls);
    snprintf(f->evidence, sizeof f->evidence, "%s", a->evidence);
    return 0;
}

static struct find alerts_of(struct fleet *f, const char *name, const char *host, int gpu)
{
    struct find x = {.name = name, .host = host, .gpu = gpu};
    gw_alerts_foreach(f->al, find_cb, &x);
    return x;
}

/* warning or critical alerts of any kind (printed, to see what fired) */
static int non_info_cb(void *ud, const struct gw_alert *a)
{
    int *n = ud;
    if (a->severity != GW_SEV_INFO) {
        (*n)++;
        fprintf(stderr, "  alert: %s %s gpu=%d %s: %s\n", a->alertname, a->hostname, a->gpu, a->detector, a->evidence);
    }
    return 0;
}

static int count_non_info(struct fleet *f)
{
    int n = 0;
    gw_alerts_foreach(f->al, non_info_cb, &n);
    return n;
}

/* XID series are created on the fly */
static void xid(struct fleet *f, int node, int gpu, int code, int64_t t)
{
    char c[16];
    snprintf(c, sizeof c, "%d", code);
    uint32_t h = reg(f, "DCGM_FI_DEV_XID_ERRORS", node, gpu, "err_code", c, 1);
    assert_true(h != 0);
    gw_det_sample(f->d, h, t, code);
}

/* ------------------------------------------------------------ baits: quiet */

static void hook_baits(struct scrape *s, int64_t t, int step, void *ud)
{
    (void)t;
    step -= *(const int *)ud;   /* steps from the start of the busy run */
    /* benign clock bits on node 1 GPU 2 throughout */
    s->v[M_REASONS][1][2] = (double)(0x1 | 0x4);
    /* stray single ticks */
    if (step == 10) bump(s, M_SBE, 2, 3, 1);
    if (step == 20) bump(s, M_FLIT, 3, 1, 1);
    if (step == 30) bump(s, M_PCIE, 4, 5, 1);
    if (step == 40) bump(s, M_IB, 5, GPUS, 1);
    if (step == 45) bump(s, M_CORR, 6, 6, 1);
    /* hot inlet on node 6: +5 C for an hour */
    if (step >= 50 && step < 170)
        for (int g = 0; g < GPUS; g++) s->v[M_TEMP][6][g] += 5;
    /* brief scrape gap: node 2 sends nothing for 2 scrapes */
    if (step == 60 || step == 61)
        for (int m = 0; m < M_COUNT; m++)
            for (int g = 0; g <= GPUS; g++) s->skip[m][2][g] = 1;
    /* exporter restart on node 3: DCGM down 60 s (up 0, no series), counters back to 0 */
    if (step == 80 || step == 81) {
        for (int m = 0; m < M_COUNT; m++)
            for (int g = 0; g < GPUS; g++) s->skip[m][3][g] = 1;
        s->v[M_UP_DCGM][3][GPUS] = 0;
    }
    if (step == 82)
        for (int g = 0; g < GPUS; g++) {
            g_cnt[M_SBE][3][g] = g_cnt[M_FLIT][3][g] = g_cnt[M_PCIE][3][g] = 0;
            s->v[M_SBE][3][g] = s->v[M_FLIT][3][g] = s->v[M_PCIE][3][g] = 0;
        }
    /* a checkpoint save: util down to ~50 % on every node for 4 minutes, power down */
    if (step >= 100 && step < 108)
        for (int n = 0; n < NODES; n++)
            for (int g = 0; g < GPUS; g++) {
                s->v[M_UTIL][n][g] = 50;
                s->v[M_POWER][n][g] = 500;
            }
}

static void test_detect_baits_stay_quiet(void **state)
{
    (void)state;
    reset_counters();
    struct fleet f;
    fleet_open(&f, NULL);
    run(&f, 20, 0, NULL, NULL);             /* idle fleet (spares, between jobs) */
    int from = f.step;
    run(&f, 200, 1, hook_baits, &from);     /* job starts, baits while training */
    run(&f, 40, 0, NULL, NULL);             /* job stops everywhere at once */
    /* collective abort: XID 43 on 6 nodes within 20 s */
    for (int n = 0; n < 6; n++) xid(&f, n, n % GPUS, 43, f.t + 1000 + n * 3000);
    run(&f, 10, 0, NULL, NULL);
    assert_int_equal(count_non_info(&f), 0);
    struct find c = alerts_of(&f, "GpuCollectiveXidBurst", NULL, -2);
    assert_int_equal(c.count, 1);
    assert_int_equal(c.sev, GW_SEV_INFO);
    /* no per-GPU alert for the collective onsets */
    assert_int_equal(alerts_of(&f, "GpuXidError", NULL, -2).count, 0);
    fleet_close(&f);
}

/* ------------------------------------------------------------ D1 */

static void test_detect_d1_xid_onsets(void **state)
{
    (void)state;
    reset_counters();
    struct fleet f;
    fleet_open(&f, NULL);
    /* a latched XID seen at the first sight of a GPU is a level, not an onset */
    xid(&f, 7, 0, 79, f.t + 1300);
    run(&f, 10, 1, NULL, NULL);
    assert_int_equal(alerts_of(&f, "GpuXidError", NULL, -2).count, 0);
    /* a new XID on a known GPU: hardware, at once */
    xid(&f, 2, 5, 149, f.t + 1300);
    run(&f, 1, 1, NULL, NULL);
    struct find a = alerts_of(&f, "GpuXidError", "gpu003", 5);
    assert_int_equal(a.count, 1);
    assert_int_equal(a.sev, GW_SEV_CRITICAL);
    assert_string_equal(a.action, "reset_gpu");
    assert_string_equal(a.cls, "nvlink");
    assert_string_equal(a.detector, "D1");
    assert_non_null(strstr(a.evidence, "149"));
    /* the latched value repeating is no new onset */
    run(&f, 5, 1, NULL, NULL);
    assert_int_equal(alerts_of(&f, "GpuXidError", NULL, -2).count, 1);
    /* an application XID on one node: info, restart_app */
    xid(&f, 4, 1, 31, f.t + 1300);
    run(&f, 4, 1, NULL, NULL);
    a = alerts_of(&f, "GpuXidError", "gpu005", 1);
    assert_int_equal(a.count, 1);
    assert_int_equal(a.sev, GW_SEV_INFO);
    assert_string_equal(a.action, "restart_app");
    /* XID 79: reboot the node */
    xid(&f, 5, 2, 79, f.t + 1300);
    run(&f, 1, 1, NULL, NULL);
    a = alerts_of(&f, "GpuXidError", "gpu006", 2);
    assert_int_equal(a.count, 1);
    assert_string_equal(a.action, "reboot_node");
    fleet_close(&f);
}

static void test_detect_d1_repeats_escalate(void **state)
{
    (void)state;
    reset_counters();
    struct fleet f;
    fleet_open(&f, NULL);
    run(&f, 5, 1, NULL, NULL);
    /* XID 13 and 31 alternating on one GPU, a burst every hour */
    for (int i = 0; i < 5; i++) {
        xid(&f, 1, 3, i % 2 ? 13 : 31, f.t + 1300);
        run(&f, 120, 1, NULL, NULL);
        assert_int_equal(alerts_of(&f, "GpuXidRepeated", NULL, -2).count, i >= 4 ? 1 : 0);
    }
    struct find a = alerts_of(&f, "GpuXidRepeated", "gpu002", 3);
    assert_int_equal(a.sev, GW_SEV_WARNING);
    fleet_close(&f);
}

/* ------------------------------------------------------------ D2 */

struct memhook {
    int uncorr_at, sbe_every, sbe_from, sbe_n, corr_at1, corr_at2, pending_from;
};

static void hook_mem(struct scrape *s, int64_t t, int step, void *ud)
{
    (void)t;
    struct memhook *h = ud;
    if (step == h->uncorr_at) bump(s, M_UNCORR, 0, 1, 2);
    if (h->sbe_every && step >= h->sbe_from && (step - h->sbe_from) % h->sbe_every == 0 &&
        (step - h->sbe_from) / h->sbe_every < h->sbe_n)
        bump(s, M_SBE, 1, 2, 3);
    if (step == h->corr_at1 || step == h->corr_at2) bump(s, M_CORR, 2, 7, 1);
    if (h->pending_from >= 0 && step >= h->pending_from) s->v[M_PENDING][3][4] = 1;
}

static void test_detect_d2_memory(void **state)
{
    (void)state;
    reset_counters();
    struct fleet f;
    fleet_open(&f, NULL);
    struct memhook h = {.uncorr_at = 5, .sbe_every = 100, .sbe_from = 10, .sbe_n = 2, .corr_at1 = 20,
                        .corr_at2 = -1, .pending_from = -1};
    run(&f, 300, 1, hook_mem, &h);
    struct find a = alerts_of(&f, "GpuMemoryUncorrectable", "gpu001", 1);
    assert_int_equal(a.count, 1);
    assert_int_equal(a.sev, GW_SEV_CRITICAL);
    /* two SBE increments and one correctable remap: below the trend bounds */
    assert_int_equal(alerts_of(&f, "GpuSbeRising", NULL, -2).count, 0);
    assert_int_equal(alerts_of(&f, "GpuRemappedRowsRising", NULL, -2).count, 0);
    /* the third SBE increment within 24 h and a second remap within 72 h: trends */
    h = (struct memhook){.uncorr_at = -1, .sbe_every = 100, .sbe_from = 300, .sbe_n = 1, .corr_at1 = 900,
                         .corr_at2 = -1, .pending_from = 1000};
    run(&f, 710, 1, hook_mem, &h);
    a = alerts_of(&f, "GpuSbeRising", "gpu002", 2);
    assert_int_equal(a.count, 1);
    assert_string_equal(a.detector, "D2");
    a = alerts_of(&f, "GpuRemappedRowsRising", "gpu003", 7);
    assert_int_equal(a.count, 1);
    assert_int_equal(a.sev, GW_SEV_WARNING);
    /* pending remap: pending first, firing after pending_for (60 s) */
    a = alerts_of(&f, "GpuRowRemapPending", "gpu004", 4);
    assert_int_equal(a.count, 1);
    assert_int_equal(a.state, GW_ALERT_FIRING);
    fleet_close(&f);
}

/* ------------------------------------------------------------ D3 */

static void hook_link(struct scrape *s, int64_t t, int step, void *ud)
{
    (void)t;
    (void)ud;
    /* NVLink CRC ramp on node 0 GPU 6 from step 30: errors every other scrape, growing */
    if (step >= 30 && step % 2 == 0) bump(s, M_FLIT, 0, 6, 1 + (step - 30) / 4);
    /* PCIe replay burst on node 1 GPU 0 */
    if (step >= 50 && step < 54) bump(s, M_PCIE, 1, 0, 20);
    /* stray ticks elsewhere, 10 scrapes apart */
    if (step == 10 || step == 20) bump(s, M_FLIT, 2, 2, 1);
}

static void test_detect_d3_link_errors(void **state)
{
    (void)state;
    reset_counters();
    struct fleet f;
    fleet_open(&f, NULL);
    run(&f, 29, 1, hook_link, NULL);
    assert_int_equal(count_non_info(&f), 0);   /* two stray ticks 10 scrapes apart */
    run(&f, 40, 1, hook_link, NULL);
    struct find a = alerts_of(&f, "GpuNvlinkErrors", "gpu001", 6);
    assert_int_equal(a.count, 1);
    assert_string_equal(a.action, "reset_gpu");
    assert_non_null(strstr(a.evidence, "NVLINK_CRC_FLIT"));
    a = alerts_of(&f, "GpuPcieReplays", "gpu002", 0);
    assert_int_equal(a.count, 1);
    assert_int_equal(alerts_of(&f, "GpuNvlinkErrors", "gpu003", -2).count, 0);
    fleet_close(&f);
}

/* ------------------------------------------------------------ D4 */

static void hook_frozen(struct scrape *s, int64_t t, int step, void *ud)
{
    (void)t;
    (void)ud;
    if (step >= 10) {   /* node 4 GPU 1: util stuck, power and clock idle */
        s->v[M_UTIL][4][1] = 100;
        s->v[M_POWER][4][1] = 130;
        s->v[M_CLOCK][4][1] = 345;
    }
}

static void test_detect_d4_frozen_gpu(void **state)
{
    (void)state;
    reset_counters();
    struct fleet f;
    fleet_open(&f, NULL);
    run(&f, 11, 1, hook_frozen, NULL);
    assert_int_equal(alerts_of(&f, "GpuFrozen", NULL, -2).count, 0);   /* one evaluation is not enough */
    run(&f, 4, 1, hook_frozen, NULL);
    struct find a = alerts_of(&f, "GpuFrozen", "gpu005", 1);
    assert_int_equal(a.count, 1);
    assert_int_equal(a.sev, GW_SEV_CRITICAL);
    assert_string_equal(a.detector, "D4");
    assert_string_equal(a.cls, "gsp");
    fleet_close(&f);
}

static void hook_collapse(struct scrape *s, int64_t t, int step, void *ud)
{
    (void)t;
    (void)ud;
    if (step >= 20) {   /* node 6: GPUs still report busy, the OS has stopped */
        g_cnt[M_INTR][6][GPUS] -= 300000 - 60000;
        s->v[M_INTR][6][GPUS] = g_cnt[M_INTR][6][GPUS];
        s->v[M_PROCS][6][GPUS] = 0;
    }
}

static void test_detect_d4_node_collapse(void **state)
{
    (void)state;
    reset_counters();
    struct fleet f;
    fleet_open(&f, NULL);
    run(&f, 30, 1, hook_collapse, NULL);
    struct find a = alerts_of(&f, "NodeActivityCollapse", "gpu007", -1);
    assert_int_equal(a.count, 1);
    assert_non_null(strstr(a.evidence, "interrupts"));
    fleet_close(&f);
}

/* ------------------------------------------------------------ D5 */

struct vanish {
    int node, gpu, from, to, silent_node, silent_from, sentinel_node;
};

static void hook_vanish(struct scrape *s, int64_t t, int step, void *ud)
{
    (void)t;
    struct vanish *v = ud;
    if (step >= v->from && step < v->to)
        for (int m = 0; m < M_COUNT; m++) s->skip[m][v->node][v->gpu] = 1;
    if (v->silent_node >= 0 && step >= v->silent_from)
        for (int m = 0; m < M_COUNT; m++)
            for (int g = 0; g <= GPUS; g++) s->skip[m][v->silent_node][g] = 1;
    if (v->sentinel_node >= 0 && step >= 5) {
        s->v[M_TEMP][v->sentinel_node][3] = 9223372036854775794.0;
        s->v[M_POWER][v->sentinel_node][3] = 9223372036854775794.0;
        s->v[M_CLOCK][v->sentinel_node][3] = 9223372036854775794.0;
    }
}

static void test_detect_d5_structure(void **state)
{
    (void)state;
    reset_counters();
    struct fleet f;
    fleet_open(&f, NULL);
    struct vanish v = {.node = 1, .gpu = 6, .from = 10, .to = 40, .silent_node = 5, .silent_from = 20,
                       .sentinel_node = 2};
    run(&f, 12, 1, hook_vanish, &v);
    assert_int_equal(alerts_of(&f, "GpuVanished", NULL, -2).count, 0);   /* 2 intervals: not yet */
    /* fires at data time step 12 (3 intervals); known once the stopped
     * series are no longer waited for (lateness, 5 intervals) */
    run(&f, 7, 1, hook_vanish, &v);
    struct find a = alerts_of(&f, "GpuVanished", "gpu002", 6);
    assert_int_equal(a.count, 1);
    assert_string_equal(a.action, "reboot_node");
    a = alerts_of(&f, "GpuSentinelValues", "gpu003", 3);
    assert_int_equal(a.count, 1);
    /* the node went silent at step 20: after 6 intervals */
    run(&f, 8, 1, hook_vanish, &v);
    assert_int_equal(alerts_of(&f, "NodeSilent", NULL, -2).count, 0);
    run(&f, 6, 1, hook_vanish, &v);
    a = alerts_of(&f, "NodeSilent", "gpu006", -1);
    assert_int_equal(a.count, 1);
    assert_int_equal(a.sev, GW_SEV_CRITICAL);
    /* no vanish alerts for the silent node's GPUs */
    assert_int_equal(alerts_of(&f, "GpuVanished", "gpu006", -2).count, 0);
    /* the GPU comes back: its alert resolves */
    run(&f, 40, 1, hook_vanish, &v);
    a = alerts_of(&f, "GpuVanished", "gpu002", 6);
    assert_int_equal(a.count, 1);
    assert_int_equal(a.state, GW_ALERT_RESOLVED);
    fleet_close(&f);
}

static void hook_slow_node(struct scrape *s, int64_t t, int step, void *ud)
{
    (void)t;
    (void)ud;
    /* node 7 is scraped every 4 minutes (8 fleet intervals) */
    if (step % 8 != 0)
        for (int m = 0; m < M_COUNT; m++)
            for (int g = 0; g <= GPUS; g++) s->skip[m][7][g] = 1;
}

static void test_detect_d5_slow_node_is_not_silent(void **state)
{
    (void)state;
    reset_counters();
    struct fleet f;
    fleet_open(&f, NULL);
    run(&f, 240, 1, hook_slow_node, NULL);
    assert_int_equal(count_non_info(&f), 0);
    fleet_close(&f);
}

static void hook_gap_node2(struct scrape *s, int64_t t, int step, void *ud)
{
    (void)t;
    (void)ud;
    if (step >= 10 && step < 14)   /* node 2's DCGM exporter: a 2-minute scrape gap */
        for (int m = 0; m < M_COUNT; m++)
            for (int g = 0; g < GPUS; g++) s->skip[m][2][g] = 1;
    if (step >= 10 && step < 14) s->skip[M_UP_DCGM][2][GPUS] = 1;
}

static void test_detect_d5_gap_then_scrape_in_pieces(void **state)
{
    (void)state;
    reset_counters();
    struct fleet f;
    fleet_open(&f, NULL);
    run(&f, 14, 1, hook_gap_node2, NULL);
    /* the first scrape after the gap arrives in pieces: GPU 0 first, then data time moves on
       (another shard's newer samples) and evaluations run, then the other GPUs */
    int64_t ts = f.t + IV + 1300;
    for (int m = 0; m < M_COUNT; m++)
        if (f.h[m][2][0]) gw_det_sample(f.d, f.h[m][2][0], ts, m == M_UTIL ? 97 : m == M_POWER ? 800 : 60);
    gw_det_advance(f.d, ts + 2 * IV);
    for (int m = 0; m < M_COUNT; m++)
        for (int g = 1; g < GPUS; g++)
            if (f.h[m][2][g]) gw_det_sample(f.d, f.h[m][2][g], ts, m == M_UTIL ? 97 : m == M_POWER ? 800 : 60);
    assert_int_equal(alerts_of(&f, "GpuVanished", NULL, -2).count, 0);
    fleet_close(&f);
}

static void test_detect_d5_sample_from_the_future(void **state)
{
    (void)state;
    reset_counters();
    struct fleet f;
    fleet_open(&f, NULL);
    run(&f, 20, 1, NULL, NULL);
    /* one sender's clock is 9 minutes ahead for one sample: nobody is silent */
    gw_det_sample(f.d, f.h[M_UP_NODE][0][GPUS], f.t + 9 * MIN, 1);
    run(&f, 30, 1, NULL, NULL);
    assert_int_equal(count_non_info(&f), 0);
    fleet_close(&f);
}

/* ------------------------------------------------------------ D6 */

static void hook_throttle(struct scrape *s, int64_t t, int step, void *ud)
{
    (void)t;
    (void)ud;
    if (step >= 10) {   /* node 3 GPU 0: HW slowdown + SW thermal, clock -20 %, hotter */
        s->v[M_REASONS][3][0] = 0x8 | 0x20;
        s->v[M_CLOCK][3][0] = 1560;
        s->v[M_TEMP][3][0] = 78;
    }
    if (step >= 10) {   /* node 2 GPU 4 idle (a spare) but in HW slowdown */
        s->v[M_UTIL][2][4] = 0;
        s->v[M_POWER][2][4] = 140;
        s->v[M_CLOCK][2][4] = 260;
        s->v[M_REASONS][2][4] = 0x1 | 0x8 | 0x40;
    }
    if (step >= 5) {    /* node 5 GPU 7 at 93 C */
        s->v[M_TEMP][5][7] = 93;
    }
}

static void test_detect_d6_throttle_and_heat(void **state)
{
    (void)state;
    reset_counters();
    struct fleet f;
    fleet_open(&f, NULL);
    run(&f, 12, 1, hook_throttle, NULL);
    assert_int_equal(alerts_of(&f, "GpuThrottling", NULL, -2).count, 0);
    run(&f, 3, 1, hook_throttle, NULL);
    struct find a = alerts_of(&f, "GpuThrottling", "gpu004", 0);
    assert_int_equal(a.count, 1);
    assert_string_equal(a.cls, "fail_slow");
    assert_non_null(strstr(a.evidence, "0x28"));
    assert_int_equal(alerts_of(&f, "GpuThrottling", "gpu003", 4).count, 1);
    a = alerts_of(&f, "GpuTemperatureHigh", "gpu006", 7);
    assert_int_equal(a.count, 1);
    assert_int_equal(a.sev, GW_SEV_CRITICAL);
    fleet_close(&f);
}

/* ------------------------------------------------------------ config */

static void write_file(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static void test_detect_config_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/gwdetcfgXXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/det.conf", dir);
    struct gw_det_config c;
    struct gw_error err = {0};
    gw_det_config_default(&c);
    write_file(path, "# comment\nremap_count = 3\nremap_window = 48h\n d4 = off \nfrozen_power_ratio=0.3\n\n");
    assert_int_equal(gw_det_config_load(&c, path, &err), GW_OK);
    assert_int_equal(c.remap_count, 3);
    assert_int_equal(c.remap_window_ms, 48 * 3600000LL);
    assert_int_equal(c.enable[4], 0);
    assert_true(c.frozen_power_ratio == 0.3);
    write_file(path, "remap_count = 2\nno_such_key = 1\n");
    assert_int_equal(gw_det_config_load(&c, path, &err), GW_EINVAL);
    assert_non_null(strstr(err.msg, ":2:"));
    assert_non_null(strstr(err.msg, "no_such_key"));
    assert_int_equal(c.remap_count, 3);   /* unchanged on error */
    write_file(path, "remap_window = soon\n");
    assert_int_equal(gw_det_config_load(&c, path, &err), GW_EINVAL);
    assert_non_null(strstr(err.msg, "remap_window"));
    write_file(path, "link_of = 9\n");
    assert_int_equal(gw_det_config_load(&c, path, &err), GW_EINVAL);
    /* the written defaults load back to the same values */
    struct gw_det_config d, e;
    gw_det_config_default(&d);
    FILE *fp = fopen(path, "w");
    assert_int_equal(gw_det_config_write(&d, fp), GW_OK);
    fclose(fp);
    memset(&e, 0x55, sizeof e);
    gw_det_config_default(&e);
    e.remap_count = 99;
    assert_int_equal(gw_det_config_load(&e, path, &err), GW_OK);
    assert_int_equal(e.remap_count, d.remap_count);
    assert_int_equal(e.memory_hold_ms, d.memory_hold_ms);
    assert_true(e.sentinel_min == d.sentinel_min);
    snprintf(path, sizeof path, "%s/missing.conf", dir);
    assert_int_equal(gw_det_config_load(&c, path, &err), GW_EIO);
    snprintf(path, sizeof path, "%s/det.conf", dir);
    unlink(path);
    rmdir(dir);
}

/* ------------------------------------------------------------ snapshot */

static void hook_sbe_once(struct scrape *s, int64_t t, int step, void *ud)
{
    (void)t;
    (void)ud;
    if (step % 10 == 3) bump(s, M_SBE, 6, 0, 1);
}

static void test_detect_snapshot_restart(void **state)
{
    (void)state;
    reset_counters();
    char dir[] = "/tmp/gwdetsnapXXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/detect.state", dir);
    struct gw_error err = {0};
    struct fleet f;
    fleet_open(&f, NULL);
    /* two SBE increments before the restart */
    run(&f, 10, 1, hook_sbe_once, NULL);
    run(&f, 10, 1, hook_sbe_once, NULL);
    assert_int_equal(gw_det_snapshot_save(f.d, path, &err), GW_OK);
    int64_t t = f.t;
    fleet_close(&f);
    /* a new engine from the snapshot: same handles for the same ids */
    struct fleet g;
    memset(&g, 0, sizeof g);
    struct gw_alerts_opts ao;
    gw_alerts_opts_default(&ao);
    assert_int_equal(gw_alerts_open(&g.al, &ao, &err), GW_OK);
    assert_int_equal(gw_det_new(&g.d, NULL, g.al, &err), GW_OK);
    assert_int_equal(gw_det_snapshot_load(g.d, path, &err), GW_OK);
    /* re-register in the same order: the ids map to the loaded series */
    struct fleet tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.d = g.d;
    tmp.al = g.al;
    tmp.next_id = 1;
    for (int m = 0; m < M_COUNT; m++)
        for (int n = 0; n < NODES; n++) {
            if (m == M_INTR || m == M_PROCS || m == M_UP_NODE || m == M_IB)
                g.h[m][n][GPUS] = reg(&tmp, k_metric[m], n, -1, NULL, NULL, 0);
            else if (m == M_UP_DCGM)
                g.h[m][n][GPUS] = reg(&tmp, k_metric[m], n, -1, NULL, NULL, 1);
            else
                for (int gg = 0; gg < GPUS; gg++) g.h[m][n][gg] = reg(&tmp, k_metric[m], n, gg, NULL, NULL, 1);
        }
    g.next_id = tmp.next_id;
    g.t = t;
    g.step = 0;
    /* replaying an already-seen sample changes nothing (older or equal timestamps) */
    gw_det_sample(g.d, g.h[M_SBE][6][0], t - 5 * IV, 0);
    /* the third increment after the restart completes the trend */
    run(&g, 10, 1, hook_sbe_once, NULL);
    struct find a = alerts_of(&g, "GpuSbeRising", "gpu007", 0);
    assert_int_equal(a.count, 1);
    /* a damaged file is refused */
    FILE *fp = fopen(path, "r+b");
    assert_non_null(fp);
    fseek(fp, 100, SEEK_SET);
    fputc(0x5a, fp);
    fclose(fp);
    struct gw_det *d2;
    assert_int_equal(gw_det_new(&d2, NULL, NULL, &err), GW_OK);
    assert_int_equal(gw_det_snapshot_load(d2, path, &err), GW_ECORRUPT);
    gw_det_free(d2);
    fleet_close(&g);
    unlink(path);
    rmdir(dir);
}

static void test_detect_wants_metric(void **state)
{
    (void)state;
    assert_true(gw_det_wants_metric("DCGM_FI_DEV_XID_ERRORS", 22));
    assert_true(gw_det_wants_metric("up", 2));
    assert_false(gw_det_wants_metric("node_cpu_seconds_total", 22));
    assert_false(gw_det_wants_metric("DCGM_FI_DEV_XID", 15));
}

/* ------------------------------------------------------------ mini cluster
 * A second generator for the generalisation tests: any scrape interval,
 * five label styles (dcgm-exporter `hostname` / `Hostname`, kube-prometheus
 * with the exporter pod in Hostname and the node in `node`, node_exporter
 * under an FQDN, or under an IP joined by node_uname_info), failure
 * signatures and baits switched on per scenario. Every sample is recorded
 * in time order, so the same data can be replayed in any arrival order. */

enum { ST_HOSTNAME, ST_LEGACY, ST_KUBE, ST_FQDN, ST_IP, ST_COUNT };
enum { MS_UTIL, MS_POWER, MS_CLOCK, MS_MCLOCK, MS_TEMP, MS_MEMTEMP, MS_FB, MS_REASONS, MS_GPU_N };
enum { MN_INTR, MN_PROCS, MN_AVAIL, MN_TOTAL, MN_UNAME, MN_UP_DCGM, MN_UP_NODE, MN_SCRAPE_DCGM, MN_N };
static const char *k_gm[MS_GPU_N] = {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_SM_CLOCK",
                                     "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEMORY_TEMP",
                                     "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"};
static const char *k_nm[MN_N] = {"node_intr_total", "node_procs_running", "node_memory_MemAvailable_bytes",
                                 "node_memory_MemTotal_bytes", "node_uname_info", "up", "up", "scrape_duration_seconds"};

#define MC_NODES 8
#define MC_GPUS 8
#define MC_SERIES (MC_NODES * (MC_GPUS * MS_GPU_N + MN_N) + 64)

struct mc_scn {
    int64_t iv;
    int style;
    int steps;
    int frozen_at, collapse_at, throttle_at, vanish_at, xid_at, mempress_at;   /* step, -1 off */
    int ckpt_at, jobend_at, idle_gpu;                                        /* baits */
    int silent_at;                                  /* node 7 stops answering at this step, 0 off */
};

struct mc_sample {
    uint32_t series;
    int64_t t;
    double v;
};

struct mc {
    struct mc_scn sc;
    uint8_t lab[MC_SERIES][400];
    size_t lab_len[MC_SERIES];
    uint32_t n_series;
    uint32_t gs[MC_NODES][MC_GPUS][MS_GPU_N], ns[MC_NODES][MN_N], xid[MC_NODES];
    struct mc_sample *smp;
    size_t n, cap;
};

static uint32_t mc_hash(uint32_t a, uint32_t b)
{
    uint32_t h = a * 2654435761u ^ (b + 0x9e3779b9u + (a << 6) + (a >> 2));
    h ^= h >> 15;
    h *= 0x2c1b3c6dU;
    h ^= h >> 12;
    return h;
}

static uint32_t mc_series(struct mc *m, const char *metric, int node, int gpu, int job_dcgm, const char *xname,
                          const char *xval)
{
    char host[16], fqdn[64], ip[32], pod[48], node_ip[32], gpus[8], inst[80];
    snprintf(host, sizeof host, "dgx%03d", node + 11);
    snprintf(fqdn, sizeof fqdn, "%s.cluster.example.com", host);
    snprintf(ip, sizeof ip, "10.0.3.%d", 20 + node);
    snprintf(pod, sizeof pod, "nvidia-dcgm-exporter-%c%c%c%c%c", 'a' + node, 'k', 'q' + node % 5, 'x', 'b' + node % 3);
    snprintf(node_ip, sizeof node_ip, "10.244.%d.7", node + 1);
    snprintf(gpus, sizeof gpus, "%d", gpu);
    struct gw_label ls[16];
    size_t n = 0;
#define L(nm, v) ls[n++] = (struct gw_label){nm, (uint32_t)strlen(nm), v, (uint32_t)strlen(v)}
    L("__name__", metric);
    if (xname) L(xname, xval);
    if (gpu >= 0) L("gpu", gpus);
    if (job_dcgm) {
        L("job", m->sc.style == ST_KUBE ? "nvidia-dcgm-exporter" : "dcgm");
        switch (m->sc.style) {
        case ST_HOSTNAME: snprintf(inst, sizeof inst, "%s:9400", host); if (gpu >= 0) L("hostname", host); break;
        case ST_LEGACY: snprintf(inst, sizeof inst, "%s:9400", host); if (gpu >= 0) L("Hostname", host); break;
        case ST_KUBE:
            snprintf(inst, sizeof inst, "%s:9400", node_ip);
            if (gpu >= 0) L("Hostname", pod);
            L("pod", pod);
            L("namespace", "gpu-operator");
            L("node", host);
            break;
        case ST_FQDN: snprintf(inst, sizeof inst, "%s:9400", fqdn); if (gpu >= 0) L("hostname", host); break;
        default: snprintf(inst, sizeof inst, "%s:9400", ip); if (gpu >= 0) L("Hostname", host); break;
        }
    } else {
        L("job", m->sc.style == ST_KUBE ? "node-exporter" : "node");
        if (m->sc.style == ST_FQDN) snprintf(inst, sizeof inst, "%s:9100", fqdn);
        else if (m->sc.style == ST_KUBE || m->sc.style == ST_IP) snprintf(inst, sizeof inst, "%s:9100", m->sc.style == ST_KUBE ? node_ip : ip);
        else snprintf(inst, sizeof inst, "%s:9100", host);
        if (!strcmp(metric, "node_uname_info")) L("nodename", m->sc.style == ST_FQDN ? fqdn : host);
    }
    L("instance", inst);
#undef L
    sort_labels(ls, n);
    assert_true(m->n_series < MC_SERIES);
    uint32_t id = m->n_series++;
    m->lab_len[id] = gw_labels_encode(ls, n, m->lab[id]);
    return id;
}

static void mc_put(struct mc *m, uint32_t series, int64_t t, double v)
{
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 65536;
        m->smp = realloc(m->smp, m->cap * sizeof *m->smp);
        assert_non_null(m->smp);
    }
    m->smp[m->n++] = (struct mc_sample){series, t, v};
}

/* Generates the whole scenario into m->smp (time order, node by node). */
static void mc_build(struct mc *m, const struct mc_scn *sc)
{
    memset(m, 0, sizeof *m);
    m->sc = *sc;
    for (int n = 0; n < MC_NODES; n++) {
        for (int g = 0; g < MC_GPUS; g++)
            for (int k = 0; k < MS_GPU_N; k++) m->gs[n][g][k] = mc_series(m, k_gm[k], n, g, 1, NULL, NULL);
        for (int k = 0; k < MN_N; k++)
            m->ns[n][k] = mc_series(m, k_nm[k], n, -1, k == MN_UP_DCGM || k == MN_SCRAPE_DCGM, NULL, NULL);
        m->xid[n] = UINT32_MAX;
    }
    double intr[MC_NODES] = {0}, frozen[MS_GPU_N] = {0};
    int64_t t0 = 1764000000000LL - 1764000000000LL % sc->iv;
    for (int st = 0; st < sc->steps; st++) {
        int64_t base = t0 + (int64_t)st * sc->iv;
        int ckpt = sc->ckpt_at >= 0 && st >= sc->ckpt_at && st < sc->ckpt_at + 6;
        for (int n = 0; n < MC_NODES; n++) {
            if (sc->silent_at > 0 && n == 7 && st >= sc->silent_at) continue;   /* powered off */
            int64_t td = base + 900 + n * 37, tn = base + 400 + n * 41;   /* per-target offsets */
            int collapsed = sc->collapse_at >= 0 && n == 2 && st >= sc->collapse_at;
            int ended = sc->jobend_at >= 0 && n == 5 && st >= sc->jobend_at;
            for (int g = 0; g < MC_GPUS; g++) {
                if (sc->vanish_at >= 0 && n == 4 && g == 6 && st >= sc->vanish_at) continue;
                uint32_t j = mc_hash((uint32_t)(n * 16 + g), (uint32_t)st) % 7;
                int idle = ended || (sc->idle_gpu && n == 6 && g == 3);
                double v[MS_GPU_N];
                v[MS_UTIL] = idle ? 0 : collapsed ? 3 + j % 3 : ckpt ? 35 + j : 95 + j % 5;
                v[MS_POWER] = idle ? 72 : collapsed ? 90 + j : ckpt ? 330 + 5 * j : 600 + 10.0 * j;
                v[MS_CLOCK] = idle ? 210 : 1950 - 15.0 * j;
                v[MS_MCLOCK] = idle ? 405 : 2619 - (double)(j % 2);
                v[MS_TEMP] = idle ? 31 : 62 + (double)(j % 4) + (double)(st % 9 == 0);
                v[MS_MEMTEMP] = idle ? 29 : 58 + (double)(j % 3);
                v[MS_FB] = ended ? 0 : idle ? 0 : 71000 + 3.0 * j;
                v[MS_REASONS] = idle ? 1 : 0;
                if (sc->throttle_at >= 0 && n == 3 && g == 1 && st >= sc->throttle_at) {
                    v[MS_REASONS] = 0x20;
                    v[MS_CLOCK] = 1590 - 10.0 * j;
                    v[MS_TEMP] += 6 + (st - sc->throttle_at < 6 ? st - sc->throttle_at : 6);
                }
                if (sc->frozen_at >= 0 && n == 1 && g == 5) {
                    if (st == sc->frozen_at - 1)
                        for (int k = 0; k < MS_GPU_N; k++) frozen[k] = v[k];
                    if (st >= sc->frozen_at) {
                        for (int k = 0; k < MS_GPU_N; k++) v[k] = frozen[k];
                        v[MS_POWER] = 80 + (double)(j % 3);
                    }
                }
                for (int k = 0; k < MS_GPU_N; k++) mc_put(m, m->gs[n][g][k], td, v[k]);
            }
            if (sc->xid_at >= 0 && n == 7 && st >= sc->xid_at) {
                if (m->xid[n] == UINT32_MAX) m->xid[n] = mc_series(m, "DCGM_FI_DEV_XID_ERRORS", n, 0, 1, "err_code", "79");
                mc_put(m, m->xid[n], td, 79);
            }
            intr[n] += (collapsed ? 0.25 : ended ? 0.3 : 1.0) * 10000.0 * (double)sc->iv / 1000.0 *
                       (1 + 0.02 * (double)(mc_hash((uint32_t)n, (uint32_t)st) % 5));
            double total = 2.0e12, avail = 1.2e12;
            if (sc->mempress_at >= 0 && n == 2 && st >= sc->mempress_at) avail = 0.03e12;
            mc_put(m, m->ns[n][MN_INTR], tn, intr[n]);
            mc_put(m, m->ns[n][MN_PROCS], tn, collapsed ? 0 : ended ? 1 : 40 + n);
            mc_put(m, m->ns[n][MN_AVAIL], tn, avail);
            mc_put(m, m->ns[n][MN_TOTAL], tn, total);
            mc_put(m, m->ns[n][MN_UNAME], tn, 1);
            mc_put(m, m->ns[n][MN_UP_DCGM], td, 1);
            mc_put(m, m->ns[n][MN_UP_NODE], tn, 1);
            /* the DCGM scrape takes 0.1 s, seconds while a GPU of the node hangs */
            int hung = sc->frozen_at >= 0 && n == 1 && st >= sc->frozen_at && st < sc->frozen_at + 20;
            mc_put(m, m->ns[n][MN_SCRAPE_DCGM], td, hung ? 2.5 + 0.1 * (double)(st % 5) : 0.1 + 0.01 * (double)(mc_hash((uint32_t)n, (uint32_t)st) % 7));
        }
    }
}

static void mc_free(struct mc *m)
{
    free(m->smp);
}

/* Alert transitions as the alert table reports them: the arrival-order
 * invariant compares these lists. */
struct transitions {
    char line[4096][320];
    size_t n;
};

static void on_transition(void *ud, const struct gw_alert *a)
{
    struct transitions *tr = ud;
    if (tr->n < 4096)
        snprintf(tr->line[tr->n++], sizeof tr->line[0], "%s %s gpu=%d %s active=%lld fired=%lld resolved=%lld",
                 a->alertname, a->hostname, a->gpu, gw_alert_state_name(a->state), (long long)a->active_at,
                 (long long)a->fired_at, (long long)a->resolved_at);
}

static int cmp_line(const void *a, const void *b)
{
    return strcmp(a, b);
}

struct replay {
    struct gw_alerts *al;
    struct gw_det *d;
    uint32_t h[MC_SERIES];
    struct transitions *tr;
};

static void replay_open(struct replay *r, const struct gw_det_config *c)
{
    memset(r, 0, sizeof *r);
    struct gw_alerts_opts ao;
    gw_alerts_opts_default(&ao);
    struct gw_error err = {0};
    assert_int_equal(gw_alerts_open(&r->al, &ao, &err), GW_OK);
    r->tr = calloc(1, sizeof *r->tr);
    assert_non_null(r->tr);
    gw_alerts_on_change(r->al, on_transition, r->tr);
    assert_int_equal(gw_det_new(&r->d, c, r->al, &err), GW_OK);
}

static void replay_feed(struct replay *r, const struct mc *m, size_t i)
{
    const struct mc_sample *x = &m->smp[i];
    if (!r->h[x->series]) r->h[x->series] = gw_det_series(r->d, x->series + 1, m->lab[x->series], m->lab_len[x->series]);
    if (r->h[x->series] != UINT32_MAX) gw_det_sample(r->d, r->h[x->series], x->t, x->v);
}

static void replay_close(struct replay *r)
{
    gw_det_free(r->d);
    gw_alerts_close(r->al);
    free(r->tr);
}

/* In time order. */
static void replay_in_order(struct replay *r, const struct mc *m)
{
    for (size_t i = 0; i < m->n; i++) {
        replay_feed(r, m, i);
        if (i + 1 == m->n || m->smp[i + 1].t / m->sc.iv != m->smp[i].t / m->sc.iv) gw_det_advance(r->d, m->smp[i].t);
    }
    gw_det_finish(r->d, m->smp[m->n - 1].t + m->sc.iv);
}

/* As Prometheus' remote-write shards deliver it: series spread over
 * `shards` queues by hash, each queue lagging 0..max_lag_ms behind (its
 * lag changing every 20 scrapes), batches of random size interleaved at
 * random, about 1 % of the batches sent twice (a retry). Per-series order
 * is kept. */
static void replay_sharded(struct replay *r, const struct mc *m, uint32_t seed, unsigned shards, int64_t max_lag_ms)
{
    size_t *next = calloc(shards, sizeof *next);
    size_t **idx = calloc(shards, sizeof *idx), *cnt = calloc(shards, sizeof *cnt);
    assert_non_null(next);
    for (unsigned k = 0; k < shards; k++) idx[k] = malloc(m->n * sizeof **idx);
    for (size_t i = 0; i < m->n; i++) {
        unsigned k = mc_hash(m->smp[i].series, seed) % shards;
        idx[k][cnt[k]++] = i;
    }
    uint32_t rng = seed * 7919u + 1;
    int64_t first = m->smp[0].t, last = m->smp[m->n - 1].t;
    int64_t step = m->sc.iv / 3;
    for (int64_t w = first; ; w += step) {
        int more = 0;
        for (;;) {
            /* shards with something releasable at wall time w */
            unsigned ready[64], nr = 0;
            for (unsigned k = 0; k < shards; k++) {
                int64_t lag = (int64_t)(mc_hash(k + 100, (uint32_t)((w - first) / (20 * m->sc.iv)) + seed) % 1000) *
                              max_lag_ms / 999;
                if (next[k] < cnt[k] && m->smp[idx[k][next[k]]].t <= w - lag) ready[nr++] = k;
            }
            if (!nr) break;
            rng = rng * 1103515245u + 12345u;
            unsigned k = ready[(rng >> 8) % nr];
            int64_t lag = (int64_t)(mc_hash(k + 100, (uint32_t)((w - first) / (20 * m->sc.iv)) + seed) % 1000) *
                          max_lag_ms / 999;
            rng = rng * 1103515245u + 12345u;
            size_t batch = 1 + (rng >> 8) % 300, from = next[k];
            while (batch-- && next[k] < cnt[k] && m->smp[idx[k][next[k]]].t <= w - lag) replay_feed(r, m, idx[k][next[k]++]);
            rng = rng * 1103515245u + 12345u;
            if ((rng >> 8) % 100 == 0)   /* a retried batch: exact duplicates */
                for (size_t i = from; i < next[k]; i++) replay_feed(r, m, idx[k][i]);
        }
        gw_det_advance(r->d, w);
        for (unsigned k = 0; k < shards; k++) more |= next[k] < cnt[k];
        if (!more && w > last) break;
    }
    gw_det_finish(r->d, last + m->sc.iv);
    for (unsigned k = 0; k < shards; k++) free(idx[k]);
    free(idx);
    free(cnt);
    free(next);
}

static void sort_tr(struct transitions *tr)
{
    qsort(tr->line, tr->n, sizeof tr->line[0], cmp_line);
}

static int has_alert(const struct transitions *tr, const char *what)
{
    for (size_t i = 0; i < tr->n; i++)
        if (strstr(tr->line[i], what)) return 1;
    return 0;
}

static void print_tr(const char *title, const struct transitions *tr)
{
    fprintf(stderr, "%s (%zu transitions)\n", title, tr->n);
    for (size_t i = 0; i < tr->n; i++) fprintf(stderr, "  %s\n", tr->line[i]);
}

static const struct mc_scn k_failures = {
    .iv = 30000, .style = ST_HOSTNAME, .steps = 160, .frozen_at = 40, .collapse_at = 70, .throttle_at = 100,
    .vanish_at = 120, .xid_at = 60, .mempress_at = 55, .ckpt_at = 20, .jobend_at = -1, .idle_gpu = 1,
};

/* Each deployment style names the same eight machines, once each. */
static void test_detect_identity_styles(void **state)
{
    (void)state;
    for (int style = 0; style < ST_COUNT; style++) {
        struct mc_scn sc = k_failures;
        sc.style = style;
        sc.steps = 90;
        struct mc *m = malloc(sizeof *m);
        mc_build(m, &sc);
        struct replay r;
        replay_open(&r, NULL);
        replay_in_order(&r, m);
        struct gw_det_stats st;
        gw_det_stats(r.d, &st);
        if (st.nodes != MC_NODES) fprintf(stderr, "style %d: %llu nodes\n", style, (unsigned long long)st.nodes);
        assert_int_equal(st.nodes, MC_NODES);
        assert_int_equal(st.gpus, MC_NODES * MC_GPUS);
        /* alerts name the machine (dgx013 is node 2), never a pod or an IP */
        sort_tr(r.tr);
        if (!has_alert(r.tr, "NodeActivityCollapse dgx013 gpu=-1 firing")) print_tr("styles", r.tr);
        assert_true(has_alert(r.tr, "NodeActivityCollapse dgx013 gpu=-1 firing"));
        assert_true(has_alert(r.tr, "GpuFrozen dgx012 gpu=5 firing"));
        for (size_t i = 0; i < r.tr->n; i++) {
            assert_null(strstr(r.tr->line[i], "dcgm-exporter"));
            assert_null(strstr(r.tr->line[i], " 10."));
        }
        replay_close(&r);
        mc_free(m);
        free(m);
    }
}

static void test_detect_identity_overrides(void **state)
{
    (void)state;
    struct gw_det_config c;
    gw_det_config_default(&c);
    snprintf(c.node_labels, sizeof c.node_labels, "instance");
    snprintf(c.node_regex, sizeof c.node_regex, "(dgx[0-9]+).*");
    snprintf(c.node_map, sizeof c.node_map, "dgx011 = head-node");
    struct mc_scn sc = k_failures;
    sc.style = ST_FQDN;
    sc.steps = 20;
    struct mc *m = malloc(sizeof *m);
    mc_build(m, &sc);
    struct replay r;
    replay_open(&r, &c);
    replay_in_order(&r, m);
    struct gw_det_stats st;
    gw_det_stats(r.d, &st);
    assert_int_equal(st.nodes, MC_NODES);
    replay_close(&r);
    /* a configured interval judges buckets from the first sample on */
    gw_det_config_default(&c);
    c.interval_ms = 30000;
    sc = k_failures;
    struct mc *m2 = malloc(sizeof *m2);
    mc_build(m2, &sc);
    replay_open(&r, &c);
    replay_in_order(&r, m2);
    assert_true(has_alert(r.tr, "GpuFrozen dgx012 gpu=5 firing"));
    assert_true(has_alert(r.tr, "GpuVanished dgx015 gpu=6 firing"));
    replay_close(&r);
    mc_free(m2);
    free(m2);
    snprintf(c.node_labels, sizeof c.node_labels, "instance");
    /* a bad regex is refused with a message */
    snprintf(c.node_regex, sizeof c.node_regex, "(dgx[0-9+");
    struct gw_det *d = NULL;
    struct gw_error err = {0};
    assert_int_equal(gw_det_new(&d, &c, NULL, &err), GW_EINVAL);
    assert_non_null(strstr(err.msg, "node_regex"));
    mc_free(m);
    free(m);
}

/* The invariant: any sharded arrival within the lateness gives exactly the
 * alerts of the in-order feed (same names, nodes, GPUs, start and end). */
static void check_arrival(const struct mc_scn *sc, const struct gw_det_config *c, unsigned runs, int64_t max_lag)
{
    struct mc *m = malloc(sizeof *m);
    mc_build(m, sc);
    struct replay ref;
    replay_open(&ref, c);
    replay_in_order(&ref, m);
    sort_tr(ref.tr);
    assert_true(ref.tr->n > 0);
    for (unsigned i = 0; i < runs; i++) {
        struct replay r;
        replay_open(&r, c);
        unsigned shards = 1 + mc_hash(i, 77) % 12;
        replay_sharded(&r, m, 1000 + i, shards, max_lag);
        sort_tr(r.tr);
        int same = r.tr->n == ref.tr->n;
        for (size_t k = 0; same && k < r.tr->n; k++) same = !strcmp(r.tr->line[k], ref.tr->line[k]);
        if (!same) {
            fprintf(stderr, "run %u (%u shards, lag up to %lld ms) differs\n", i, shards, (long long)max_lag);
            print_tr("in order", ref.tr);
            print_tr("sharded", r.tr);
        }
        assert_true(same);
        replay_close(&r);
    }
    replay_close(&ref);
    mc_free(m);
    free(m);
}

static void test_detect_arrival_order_independent(void **state)
{
    (void)state;
    /* default lateness (150 s at 30 s scrapes): shards up to 140 s apart */
    check_arrival(&k_failures, NULL, 12, 140000);
    /* shards several scrapes apart need a longer lateness */
    struct gw_det_config c;
    gw_det_config_default(&c);
    c.lateness_ms = 150000;
    check_arrival(&k_failures, &c, 6, 140000);
    /* other intervals and label styles */
    struct mc_scn sc = k_failures;
    sc.iv = 15000;   /* lateness 8 intervals = 120 s */
    sc.style = ST_KUBE;
    check_arrival(&sc, NULL, 6, 110000);
    sc.iv = 60000;   /* lateness 150 s */
    sc.style = ST_IP;
    check_arrival(&sc, NULL, 6, 140000);
}

/* First firing of an alert in a transition list (data time), or -1. */
static int64_t fired_at(const struct transitions *tr, const char *what)
{
    for (size_t i = 0; i < tr->n; i++)
        if (strstr(tr->line[i], what) && strstr(tr->line[i], " firing ")) {
            const char *f = strstr(tr->line[i], "fired=");
            return f ? atoll(f + 6) : -1;
        }
    return -1;
}

/* Time to alert: each signature fires within 5 minutes of its onset at
 * 15, 30 and 60 s scrapes; the baits (a checkpoint, an idle GPU next to
 * busy siblings, one node's job ending) raise nothing. */
static void test_detect_time_to_alert(void **state)
{
    (void)state;
    const int64_t ivs[3] = {15000, 30000, 60000};
    for (int k = 0; k < 3; k++) {
        struct mc_scn sc = k_failures;
        sc.iv = ivs[k];
        /* the same wall-clock schedule at every interval */
        int64_t per_min = 60000 / sc.iv;
        sc.steps = (int)(80 * per_min);
        sc.ckpt_at = (int)(10 * per_min);
        sc.frozen_at = (int)(20 * per_min);
        sc.mempress_at = (int)(27 * per_min);
        sc.xid_at = (int)(30 * per_min);
        sc.collapse_at = (int)(35 * per_min);
        sc.throttle_at = (int)(50 * per_min);
        sc.vanish_at = (int)(60 * per_min);
        sc.silent_at = (int)(70 * per_min);
        struct mc *m = malloc(sizeof *m);
        mc_build(m, &sc);
        struct replay r;
        replay_open(&r, NULL);
        replay_in_order(&r, m);
        int64_t t0 = m->smp[0].t - 900 - 0;   /* step 0 */
        t0 -= t0 % sc.iv;
        struct {
            const char *what;
            int at;
        } want[] = {
            {"GpuFrozen dgx012 gpu=5", sc.frozen_at},        {"NodeMemoryPressure dgx013", sc.mempress_at},
            {"DcgmExporterStalled dgx012", sc.frozen_at},
            {"GpuXidError dgx018 gpu=0", sc.xid_at},         {"NodeActivityCollapse dgx013", sc.collapse_at},
            {"GpuThrottling dgx014 gpu=1", sc.throttle_at},  {"GpuVanished dgx015 gpu=6", sc.vanish_at},
            {"NodeSilent dgx018", sc.silent_at},
        };
        for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
            int64_t f = fired_at(r.tr, want[i].what), onset = t0 + (int64_t)want[i].at * sc.iv;
            if (f < 0 || f - onset > 5 * MIN) {
                fprintf(stderr, "interval %lld ms: %s fired %lld s after its onset\n", (long long)sc.iv, want[i].what,
                        f < 0 ? -1LL : (long long)((f - onset) / 1000));
                print_tr("alerts", r.tr);
            }
            fprintf(stderr, "time to alert at %2lld s scrapes: %-28s %5.1f min\n", (long long)(sc.iv / 1000), want[i].what,
                    (double)(f - onset) / 60000.0);
            assert_true(f >= onset && f - onset <= 5 * MIN);
        }
        /* nothing else: the checkpoint, the idle GPU and every other node stay quiet */
        for (size_t i = 0; i < r.tr->n; i++) {
            int expected = 0;
            for (size_t j = 0; j < sizeof want / sizeof want[0]; j++) expected |= strstr(r.tr->line[i], want[j].what) != NULL;
            if (!expected) fprintf(stderr, "unexpected: %s\n", r.tr->line[i]);
            assert_true(expected);
        }
        replay_close(&r);
        mc_free(m);
        free(m);
    }
}

/* One node's job ends (GPUs idle, memory freed, interrupts down) while the
 * others train on: no collapse, no frozen GPU. */
static void test_detect_job_end_on_one_node_is_quiet(void **state)
{
    (void)state;
    struct mc_scn sc = {.iv = 30000, .style = ST_HOSTNAME, .steps = 120, .frozen_at = -1, .collapse_at = -1,
                        .throttle_at = -1, .vanish_at = -1, .xid_at = -1, .mempress_at = -1, .ckpt_at = 30,
                        .jobend_at = 60, .idle_gpu = 1};
    struct mc *m = malloc(sizeof *m);
    mc_build(m, &sc);
    struct replay r;
    replay_open(&r, NULL);
    replay_in_order(&r, m);
    if (r.tr->n) print_tr("job end", r.tr);
    assert_int_equal(r.tr->n, 0);
    replay_close(&r);
    mc_free(m);
    free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_detect_baits_stay_quiet),
        cmocka_unit_test(test_detect_d1_xid_onsets),
        cmocka_unit_test(test_detect_d1_repeats_escalate),
        cmocka_unit_test(test_detect_d2_memory),
        cmocka_unit_test(test_detect_d3_link_errors),
        cmocka_unit_test(test_detect_d4_frozen_gpu),
        cmocka_unit_test(test_detect_d4_node_collapse),
        cmocka_unit_test(test_detect_d5_structure),
        cmocka_unit_test(test_detect_d5_slow_node_is_not_silent),
        cmocka_unit_test(test_detect_d5_sample_from_the_future),
        cmocka_unit_test(test_detect_d5_gap_then_scrape_in_pieces),
        cmocka_unit_test(test_detect_d6_throttle_and_heat),
        cmocka_unit_test(test_detect_config_file),
        cmocka_unit_test(test_detect_snapshot_restart),
        cmocka_unit_test(test_detect_wants_metric),
        cmocka_unit_test(test_detect_identity_styles),
        cmocka_unit_test(test_detect_identity_overrides),
        cmocka_unit_test(test_detect_arrival_order_independent),
        cmocka_unit_test(test_detect_time_to_alert),
        cmocka_unit_test(test_detect_job_end_on_one_node_is_quiet),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
