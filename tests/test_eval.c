/* test_eval.c - unit tests of the evaluation (evaluate.h): gw_eval_score on
 * a hand-built timeline with crafted alerts (catch window, leads and
 * delays, false alarms and their merging, info / explained / related
 * alerts, per-detector rows), the printers, and one small end-to-end
 * gw_eval_run on the smoke profile through the real detectors. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/evaluate.h"

#define T0 1767225600000LL /* 2026-01-01T00:00:00Z */
#define MIN 60000LL
#define HOUR 3600000LL

/* ---------------------------------------------------------------- fixtures */
static void failure(struct gw_sim_failure *f, uint32_t id, enum gw_sim_class cls, uint32_t node, int32_t gpu,
                    uint32_t xid, int64_t t_fault)
{
    memset(f, 0, sizeof *f);
    f->id = id;
    f->cls = cls;
    f->node = node;
    f->gpu = gpu;
    f->xid = xid;
    f->t_fault = t_fault;
    f->t_precursor_start = GW_SIM_NO_TIME;
    f->t_xid_visible = xid ? t_fault + 30000 : GW_SIM_NO_TIME;
    f->t_recovered = t_fault + 30 * MIN;
    f->session = -1;
    f->n_nodes = 1;
}

/* f0 nvlink on node 1 GPU 2 with a precursor and XID 149 at 5 h; f1 an app
 * XID on node 2 at 8 h; f2 other_hw (no XID) on node 3 at 12 h; f3 memory
 * XID 95 on node 0 GPU 4 at 18 h; f4 a collective burst at 20 h. */
static void make_timeline(struct gw_sim_timeline *tl, struct gw_sim_failure *fs)
{
    memset(tl, 0, sizeof *tl);
    gw_sim_config_default(&tl->cfg);
    snprintf(tl->cfg.profile, sizeof tl->cfg.profile, "custom");
    tl->cfg.seed = 7;
    tl->cfg.nodes = 4;
    tl->cfg.spare_nodes = 1;
    tl->cfg.start_ms = T0;
    tl->cfg.duration_ms = 24 * HOUR;
    failure(&fs[0], 0, GW_SIM_NVLINK, 1, 2, 149, T0 + 5 * HOUR);
    fs[0].precursor = GW_SIM_PRE_NVLINK_CRC;
    fs[0].t_precursor_start = T0 + 5 * HOUR - 30 * MIN;
    failure(&fs[1], 1, GW_SIM_APP_XID, 2, 0, 13, T0 + 8 * HOUR);
    failure(&fs[2], 2, GW_SIM_OTHER_HW, 3, -1, 0, T0 + 12 * HOUR);
    fs[2].t_recovered = T0 + 13 * HOUR;
    failure(&fs[3], 3, GW_SIM_MEMORY, 0, 4, 95, T0 + 18 * HOUR);
    failure(&fs[4], 4, GW_SIM_COLLECTIVE, 1, -1, 43, T0 + 20 * HOUR);
    fs[4].n_nodes = 3;
    tl->failures = fs;
    tl->n_failures = 5;
}

static struct gw_eval_alert alert(const char *name, const char *det, enum gw_severity sev, uint32_t node, int gpu,
                                  int64_t fired, int64_t resolved)
{
    struct gw_eval_alert a;
    memset(&a, 0, sizeof a);
    snprintf(a.alertname, sizeof a.alertname, "%s", name);
    snprintf(a.detector, sizeof a.detector, "%s", det);
    snprintf(a.cls, sizeof a.cls, "test");
    a.node = node;
    a.gpu = gpu;
    a.severity = sev;
    a.active_at = fired == INT64_MIN ? T0 : fired;
    a.fired_at = fired;
    a.resolved_at = resolved;
    return a;
}

static const struct gw_eval_row *row(const struct gw_eval_report *r, const char *name)
{
    for (size_t i = 0; i < r->n_rows; i++)
        if (strcmp(r->rows[i].name, name) == 0)
            return &r->rows[i];
    fail_msg("no row %s", name);
    return NULL;
}

static const struct gw_eval_failure *fail_by_id(const struct gw_eval_report *r, uint32_t id)
{
    for (size_t i = 0; i < r->n_failures; i++)
        if (r->failures[i].failure == id)
            return &r->failures[i];
    fail_msg("no failure %u", id);
    return NULL;
}

static void score(const struct gw_sim_timeline *tl, const struct gw_eval_alert *al, size_t n,
                  struct gw_eval_report *rep)
{
    struct gw_eval_opts o;
    struct gw_error err = {0};
    gw_eval_opts_default(&o);
    memset(rep, 0, sizeof *rep);
    assert_int_equal(gw_eval_score(tl, al, n, &o, rep, &err), GW_OK);
}

/* ------------------------------------------------------------------- tests */
static void test_eval_opts_default(void **state)
{
    (void)state;
    struct gw_eval_opts o;
    gw_eval_opts_default(&o);
    assert_int_equal(o.before_ms, 60 * MIN);
    assert_int_equal(o.after_ms, 5 * MIN);
    assert_int_equal(o.merge_ms, 30 * MIN);
    assert_int_equal(o.match_gpu, 0);
}

static void test_eval_catch_window(void **state)
{
    (void)state;
    struct gw_sim_timeline tl;
    struct gw_sim_failure fs[5];
    make_timeline(&tl, fs);
    const int64_t tf = fs[2].t_fault; /* other_hw, node 3, no XID */
    struct gw_eval_report rep;

    /* fired at the window's last instant: caught, delay 5 min */
    struct gw_eval_alert a = alert("NodeSilent", "D5", GW_SEV_CRITICAL, 3, -1, tf + 5 * MIN, INT64_MAX);
    score(&tl, &a, 1, &rep);
    assert_int_equal(row(&rep, "combined")->caught, 1);
    assert_true(fabs(row(&rep, "combined")->delay_median_min - 5.0) < 1e-9);
    assert_int_equal(row(&rep, "combined")->caught_before_xid, 0);
    gw_eval_report_free(&rep);

    /* one millisecond later: missed, and related (the node is down), not false */
    a.fired_at = tf + 5 * MIN + 1;
    score(&tl, &a, 1, &rep);
    assert_int_equal(row(&rep, "combined")->caught, 0);
    assert_int_equal(row(&rep, "combined")->false_alarms, 0);
    assert_int_equal(row(&rep, "combined")->related_alerts, 1);
    assert_true(isnan(row(&rep, "combined")->delay_median_min));
    gw_eval_report_free(&rep);

    /* fired 3 h before, still firing through the window: caught, with its whole 3 h lead */
    a = alert("Early", "D6", GW_SEV_WARNING, 3, -1, tf - 3 * HOUR, tf + 10 * MIN);
    score(&tl, &a, 1, &rep);
    const struct gw_eval_failure *e = fail_by_id(&rep, 2);
    assert_true(e->caught);
    assert_int_equal(e->t_detect, tf - 3 * HOUR);
    assert_int_equal(row(&rep, "combined")->caught_before_xid, 1); /* no XID: before the fault */
    assert_true(fabs(row(&rep, "combined")->lead_median_min - 180.0) < 1e-9);
    assert_true(fabs(row(&rep, "D6")->delay_median_min + 180.0) < 1e-9);
    gw_eval_report_free(&rep);

    /* resolved exactly at the window's start: not firing within it, so false */
    a = alert("Early", "D6", GW_SEV_WARNING, 3, -1, tf - 3 * HOUR, tf - 60 * MIN);
    score(&tl, &a, 1, &rep);
    assert_int_equal(row(&rep, "combined")->caught, 0);
    assert_int_equal(row(&rep, "combined")->false_alarms, 1);
    gw_eval_report_free(&rep);
}

static void test_eval_wrong_node_is_false(void **state)
{
    (void)state;
    struct gw_sim_timeline tl;
    struct gw_sim_failure fs[5];
    make_timeline(&tl, fs);
    const int64_t tf = fs[0].t_fault;
    struct gw_eval_alert a = alert("GpuNvlinkErrors", "D3", GW_SEV_WARNING, 2, 2, tf - 10 * MIN, tf + 10 * MIN);
    struct gw_eval_report rep;
    score(&tl, &a, 1, &rep);
    assert_int_equal(row(&rep, "combined")->caught, 0);
    assert_int_equal(row(&rep, "combined")->false_alarms, 1);
    assert_int_equal(row(&rep, "D3")->false_alarms, 1);
    assert_int_equal(rep.n_false_alarms, 1);
    assert_int_equal(rep.false_alarms[0].node, 2);
    assert_string_equal(rep.false_alarms[0].alertname, "GpuNvlinkErrors");
    assert_string_equal(rep.false_alarms[0].host, "node2");
    assert_true(fabs(row(&rep, "combined")->false_per_day - 1.0) < 1e-9);
    gw_eval_report_free(&rep);
}

static void test_eval_false_merge(void **state)
{
    (void)state;
    struct gw_sim_timeline tl;
    struct gw_sim_failure fs[5];
    make_timeline(&tl, fs);
    const int64_t t = T0 + 15 * HOUR; /* nothing happens on node 2 then */
    struct gw_eval_alert al[4] = {
        alert("GpuThrottle", "D6", GW_SEV_WARNING, 2, 1, t, t + 5 * MIN),
        alert("GpuThrottle", "D6", GW_SEV_WARNING, 2, 3, t + 10 * MIN, t + 15 * MIN),   /* merged */
        alert("GpuThrottle", "D6", GW_SEV_WARNING, 2, 3, t + 2 * HOUR, t + 2 * HOUR + MIN), /* new */
        alert("GpuThrottle", "D6", GW_SEV_WARNING, 1, 3, t + 11 * MIN, t + 12 * MIN), /* other node */
    };
    struct gw_eval_report rep;
    score(&tl, al, 4, &rep);
    assert_int_equal(row(&rep, "combined")->alerts, 4);
    assert_int_equal(row(&rep, "combined")->false_alarms, 3);
    assert_int_equal(row(&rep, "D6")->false_alarms, 3);
    assert_int_equal(rep.n_false_alarms, 4);
    size_t groups = 0;
    for (size_t i = 0; i < rep.n_false_alarms; i++)
        groups += rep.false_alarms[i].group_first != 0;
    assert_int_equal(groups, 3);
    gw_eval_report_free(&rep);
}

static void test_eval_info_and_explained_never_false(void **state)
{
    (void)state;
    struct gw_sim_timeline tl;
    struct gw_sim_failure fs[5];
    make_timeline(&tl, fs);
    const int64_t ta = fs[1].t_fault; /* app XID on node 2 */
    struct gw_eval_alert al[5] = {
        alert("GpuXidError", "D1", GW_SEV_INFO, 2, 0, ta + 30000, ta + 30 * MIN),
        alert("GpuCollapse", "D4", GW_SEV_WARNING, 2, -1, ta + MIN, ta + 20 * MIN),        /* explained */
        alert("CollectiveAbort", "D1", GW_SEV_INFO, UINT32_MAX, -1, fs[4].t_fault, INT64_MAX),
        alert("NeverFired", "D4", GW_SEV_CRITICAL, 2, -1, INT64_MIN, T0 + 23 * HOUR),      /* ignored */
        alert("GpuXidError", "D1", GW_SEV_WARNING, 1, 0, fs[4].t_fault + MIN, INT64_MAX), /* collective's node */
    };
    struct gw_eval_report rep;
    score(&tl, al, 5, &rep);
    const struct gw_eval_row *c = row(&rep, "combined");
    assert_int_equal(c->info_alerts, 2);
    assert_int_equal(c->explained_alerts, 2);
    assert_int_equal(c->false_alarms, 0);
    assert_int_equal(c->alerts, 2);
    assert_int_equal(c->caught, 0);
    assert_int_equal(row(&rep, "D1")->info_alerts, 2);
    assert_int_equal(row(&rep, "D4")->explained_alerts, 1);
    gw_eval_report_free(&rep);

    /* the same warning 3 h after the app XID is false */
    al[1].fired_at = ta + 3 * HOUR;
    al[1].resolved_at = ta + 4 * HOUR;
    score(&tl, al, 5, &rep);
    assert_int_equal(row(&rep, "combined")->false_alarms, 1);
    assert_int_equal(row(&rep, "D4")->false_alarms, 1);
    gw_eval_report_free(&rep);
}

static void test_eval_rows_leads_and_delays(void **state)
{
    (void)state;
    struct gw_sim_timeline tl;
    struct gw_sim_failure fs[5];
    make_timeline(&tl, fs);
    const int64_t t0 = fs[0].t_fault, t2 = fs[2].t_fault, t3 = fs[3].t_fault;
    struct gw_eval_alert al[] = {
        alert("GpuNvlinkErrors", "D3", GW_SEV_WARNING, 1, 2, t0 - 20 * MIN, t0 + 40 * MIN),
        alert("GpuXidError", "D1", GW_SEV_CRITICAL, 1, 2, t0 + 31000, t0 + 30 * MIN),
        alert("NodeSilent", "D5", GW_SEV_CRITICAL, 3, -1, t2 + 3 * MIN, t2 + 60 * MIN),
        alert("GpuRemapTrend", "D2", GW_SEV_WARNING, 0, 4, t3 - 3 * HOUR, INT64_MAX),
        alert("NodeSilent", "D5", GW_SEV_WARNING, 3, -1, t2 + 40 * MIN, t2 + 50 * MIN), /* related */
    };
    struct gw_eval_report rep;
    score(&tl, al, sizeof al / sizeof al[0], &rep);
    assert_int_equal(rep.n_rows, 7);
    assert_int_equal(rep.n_failures, 3);
    assert_int_equal(rep.seed, 7);
    assert_true(fabs(rep.days - 1.0) < 1e-12);

    const struct gw_eval_row *c = row(&rep, "combined");
    assert_int_equal(c->failures, 3);
    assert_int_equal(c->caught, 3);
    assert_int_equal(c->with_precursor, 1);
    assert_int_equal(c->precursor_caught_early, 1);
    assert_int_equal(c->caught_before_xid, 2);
    /* leads: f0 20.5 (XID at +30 s, detection 20 min early), f3 180.5 (fired 3 h ahead) */
    assert_true(fabs(c->lead_median_min - 100.5) < 1e-9);
    assert_true(fabs(c->lead_p90_min - 164.5) < 1e-9);
    /* delays: -180, -20, +3 */
    assert_true(fabs(c->delay_median_min + 20.0) < 1e-9);
    assert_true(fabs(c->delay_p90_min + 1.6) < 1e-9);
    assert_int_equal(c->false_alarms, 0);
    assert_int_equal(c->related_alerts, 1);
    assert_int_equal(c->alerts, 5);

    const struct gw_eval_row *d1 = row(&rep, "D1");
    assert_int_equal(d1->caught, 1);
    assert_int_equal(d1->caught_before_xid, 0); /* 1 s after the XID scrape */
    assert_true(isnan(d1->lead_median_min));
    const struct gw_eval_row *d3 = row(&rep, "D3");
    assert_int_equal(d3->caught, 1);
    assert_int_equal(d3->precursor_caught_early, 1);
    assert_int_equal(row(&rep, "D2")->caught, 1);
    assert_int_equal(row(&rep, "D5")->caught, 1);
    assert_int_equal(row(&rep, "D5")->related_alerts, 1);
    assert_int_equal(row(&rep, "D4")->caught, 0);
    assert_int_equal(row(&rep, "D6")->alerts, 0);

    const struct gw_eval_failure *e = fail_by_id(&rep, 0);
    assert_true(e->caught);
    assert_string_equal(e->first_detector, "D3");
    assert_string_equal(e->first_alert, "GpuNvlinkErrors");
    assert_int_equal(e->detectors_mask, (1u << 1) | (1u << 3));
    assert_int_equal(e->t_detect_by[1], t0 + 31000);
    assert_int_equal(e->t_detect_by[3], t0 - 20 * MIN);
    assert_int_equal(e->t_detect_by[2], INT64_MIN);
    assert_int_equal(fail_by_id(&rep, 3)->t_detect, t3 - 3 * HOUR);
    gw_eval_report_free(&rep);
}

static void test_eval_alert_catches_one_failure(void **state)
{
    (void)state;
    struct gw_sim_timeline tl;
    struct gw_sim_failure fs[5];
    make_timeline(&tl, fs);
    /* a second failure on node 1, 61 min after the first (listed first, so
       the order of the timeline's array does not matter) */
    struct gw_sim_failure two[2];
    two[1] = fs[0];
    failure(&two[0], 9, GW_SIM_GSP, 1, 6, 0, fs[0].t_fault + 61 * MIN);
    tl.failures = two;
    tl.n_failures = 2;
    const int64_t t0 = fs[0].t_fault;
    /* fires at the first fault and lingers past the second's window start */
    struct gw_eval_alert a = alert("GpuXidError", "D1", GW_SEV_CRITICAL, 1, 2, t0 + 31000, t0 + 90 * MIN);
    struct gw_eval_report rep;
    score(&tl, &a, 1, &rep);
    assert_int_equal(rep.failures[0].failure, 1); /* sorted by t_fault */
    assert_true(fail_by_id(&rep, 1)->caught);
    assert_false(fail_by_id(&rep, 0)->caught);
    assert_int_equal(row(&rep, "combined")->caught, 1);
    assert_int_equal(row(&rep, "combined")->false_alarms, 0);
    gw_eval_report_free(&rep);
}

static void test_eval_match_gpu(void **state)
{
    (void)state;
    struct gw_sim_timeline tl;
    struct gw_sim_failure fs[5];
    make_timeline(&tl, fs);
    const int64_t t0 = fs[0].t_fault; /* GPU 2 of node 1 */
    struct gw_eval_alert a = alert("GpuNvlinkErrors", "D3", GW_SEV_WARNING, 1, 5, t0, t0 + 10 * MIN);
    struct gw_eval_opts o;
    struct gw_eval_report rep;
    gw_eval_opts_default(&o);
    memset(&rep, 0, sizeof rep);
    assert_int_equal(gw_eval_score(&tl, &a, 1, &o, &rep, NULL), GW_OK);
    assert_int_equal(row(&rep, "combined")->caught, 1); /* any GPU of the node */
    o.match_gpu = 1;
    assert_int_equal(gw_eval_score(&tl, &a, 1, &o, &rep, NULL), GW_OK);
    assert_int_equal(row(&rep, "combined")->caught, 0);
    assert_int_equal(row(&rep, "combined")->related_alerts, 1);
    gw_eval_report_free(&rep);

    o.before_ms = -1;
    struct gw_error err = {0};
    assert_int_equal(gw_eval_score(&tl, &a, 1, &o, &rep, &err), GW_EINVAL);
    assert_non_null(strstr(err.msg, "window"));
}

static void test_eval_alert_prefers_its_own_gpu(void **state)
{
    (void)state;
    struct gw_sim_timeline tl;
    struct gw_sim_failure fs[5];
    make_timeline(&tl, fs);
    /* a second failure on node 1, GPU 6, 30 min after the one on GPU 2 */
    failure(&fs[1], 1, GW_SIM_MEMORY, 1, 6, 95, fs[0].t_fault + 30 * MIN);
    const int64_t t0 = fs[0].t_fault;
    /* GPU 6's degradation alert fires before both and lasts through both windows */
    struct gw_eval_alert a = alert("GpuSbeRising", "D2", GW_SEV_WARNING, 1, 6, t0 - 2 * HOUR, t0 + 2 * HOUR);
    struct gw_eval_report rep;
    score(&tl, &a, 1, &rep);
    assert_false(fail_by_id(&rep, 0)->caught);   /* GPU 2's failure is not credited to GPU 6's alert */
    assert_true(fail_by_id(&rep, 1)->caught);
    assert_int_equal(fail_by_id(&rep, 1)->t_detect, t0 - 2 * HOUR);
    gw_eval_report_free(&rep);
    /* an alert of another GPU still catches when its own GPU has no failure */
    a = alert("GpuSbeRising", "D2", GW_SEV_WARNING, 1, 3, t0 - 2 * HOUR, t0 + 2 * HOUR);
    score(&tl, &a, 1, &rep);
    assert_true(fail_by_id(&rep, 0)->caught);
    gw_eval_report_free(&rep);
}

static void test_eval_print_table_and_json(void **state)
{
    (void)state;
    struct gw_sim_timeline tl;
    struct gw_sim_failure fs[5];
    make_timeline(&tl, fs);
    struct gw_eval_alert al[2] = {
        alert("GpuNvlinkErrors", "D3", GW_SEV_WARNING, 1, 2, fs[0].t_fault - 20 * MIN, fs[0].t_fault),
        alert("GpuThrottle", "D6", GW_SEV_WARNING, 2, 1, T0 + 15 * HOUR, T0 + 16 * HOUR),
    };
    struct gw_eval_report reps[2];
    score(&tl, al, 2, &reps[0]);
    score(&tl, al, 1, &reps[1]);

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(gw_eval_print_flags(reps, 2, GW_EVAL_PRINT_VERBOSE, f), GW_OK);
    fclose(f);
    assert_non_null(strstr(buf, "combined"));
    assert_non_null(strstr(buf, "withdrawn"));
    assert_non_null(strstr(buf, "total over 2 seeds"));
    assert_non_null(strstr(buf, "GpuThrottle"));
    assert_non_null(strstr(buf, "MISSED"));
    assert_non_null(strstr(buf, "nvlink 1/1"));
    assert_non_null(strstr(buf, "other_hw 0/2")); /* totals: 2 seeds x 1 */
    free(buf);

    buf = NULL;
    f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(gw_eval_print(reps, 2, 1, f), GW_OK);
    fclose(f);
    assert_int_equal(buf[0], '{');
    assert_non_null(strstr(buf, "\"totals\":{\"runs\":2,\"days\":2"));
    assert_non_null(strstr(buf, "\"report_v1\":{\"caught\":10"));
    assert_non_null(strstr(buf, "\"lead_median_min\":null"));
    /* pooled: 1 false alarm over 2 days */
    assert_non_null(strstr(buf, "\"false_alarms\":1,\"false_per_day\":0.5"));
    free(buf);
    gw_eval_report_free(&reps[0]);
    gw_eval_report_free(&reps[1]);
}

/* End to end: a one-day smoke cluster with many failures through the real
 * detectors and alert engine. */
static void test_eval_run_smoke(void **state)
{
    (void)state;
    struct gw_sim_config cfg;
    struct gw_det_config dc;
    struct gw_eval_opts o;
    struct gw_eval_report rep;
    struct gw_error err = {0};
    gw_sim_config_default(&cfg);
    cfg.start_ms = T0;
    assert_int_equal(gw_sim_config_profile(&cfg, "smoke", &err), GW_OK);
    cfg.seed = 7;            /* 4 hardware failures, 1 with a precursor */
    cfg.failure_scale = 60;
    gw_det_config_default(&dc);
    gw_eval_opts_default(&o);
    memset(&rep, 0, sizeof rep);
    struct gw_eval_alert *al = NULL;
    size_t n_al = 0;
    int rc = gw_eval_run(&cfg, &dc, &o, &rep, &al, &n_al, &err);
    assert_int_equal(rc, GW_OK);
    assert_true(rep.samples > 0);
    assert_true(rep.series > 0);
    assert_int_equal(rep.nodes, 4);
    assert_true(rep.days > 0.99 && rep.days < 1.01);
    assert_true(rep.seconds > 0);
    assert_true(rep.det_ns_per_sample > 0);
    assert_int_equal(rep.n_rows, 7);
    assert_true(rep.n_failures > 0);
    for (size_t i = 0; i < rep.n_rows; i++) {
        const struct gw_eval_row *r = &rep.rows[i];
        assert_int_equal(r->failures, rep.n_failures);
        assert_true(r->caught <= r->failures);
        assert_true(r->caught_before_xid <= r->caught);
        assert_true(r->precursor_caught_early <= r->with_precursor);
        assert_true(r->false_alarms <= r->alerts);
        assert_true(r->caught <= row(&rep, "combined")->caught);
    }
    size_t fired = 0;
    for (size_t i = 0; i < n_al; i++) {
        assert_true(al[i].fired_at != INT64_MIN);
        assert_true(al[i].resolved_at >= al[i].fired_at);
        assert_true(al[i].node < 4 || al[i].node == UINT32_MAX);
        fired += al[i].severity != GW_SEV_INFO;
    }
    assert_int_equal(fired, row(&rep, "combined")->alerts);
    assert_int_equal(rep.n_false_alarms >= row(&rep, "combined")->false_alarms, 1);
    /* scoring the returned alerts again gives the same rows */
    struct gw_sim_timeline *tl = NULL;
    assert_int_equal(gw_sim_timeline_build(&cfg, &tl, &err), GW_OK);
    struct gw_eval_report again;
    memset(&again, 0, sizeof again);
    assert_int_equal(gw_eval_score(tl, al, n_al, &o, &again, &err), GW_OK);
    assert_memory_equal(again.rows, rep.rows, sizeof rep.rows);
    gw_eval_report_free(&again);
    gw_sim_timeline_free(tl);
    free(al);
    gw_eval_report_free(&rep);
}


/* ------------------------------------------------------------ variations */
static void test_eval_unknown_host_is_false(void **state)
{
    (void)state;
    struct gw_sim_timeline tl;
    struct gw_sim_failure fs[5];
    make_timeline(&tl, fs);   /* f0: nvlink on node 1 GPU 2 at 5 h */
    const int64_t tf = T0 + 5 * HOUR;
    struct gw_eval_alert al[2];
    al[0] = alert("GpuNvlinkErrors", "D1", GW_SEV_CRITICAL, UINT32_MAX, 2, tf, tf + 10 * MIN);
    snprintf(al[0].host, sizeof al[0].host, "nvidia-dcgm-exporter-x7k2p");
    al[1] = alert("GpuNvlinkErrors", "D7", GW_SEV_CRITICAL, 1, 2, tf + 30000, tf + 10 * MIN);
    struct gw_eval_report rep;
    memset(&rep, 0, sizeof rep);
    score(&tl, al, 2, &rep);
    assert_int_equal(rep.unknown_host_alerts, 1);
    assert_int_equal(row(&rep, "combined")->false_alarms, 1);
    assert_int_equal(rep.n_false_alarms, 1);
    assert_string_equal(rep.false_alarms[0].host, "nvidia-dcgm-exporter-x7k2p");
    assert_true(rep.det_present & (1u << 7));
    assert_int_equal(fail_by_id(&rep, 0)->t_detect_by[7], tf + 30000);
    struct gw_eval_var_row vr;
    assert_int_equal(gw_eval_var_row(&rep, 1, "x", &vr), GW_OK);
    assert_int_equal(vr.det_caught[7], 1);
    assert_true(fabs(vr.delay_median_min[7] - 0.5) < 1e-9);
    gw_eval_report_free(&rep);
}

struct order_rec {
    uint32_t *id;
    int64_t *t;
    size_t n, cap, batches;
    int64_t last_batch_t;
};

static void rec_sample(void *ud, uint32_t id, int64_t t, double v)
{
    struct order_rec *r = ud;
    (void)v;
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 4096;
        r->id = realloc(r->id, r->cap * sizeof *r->id);
        r->t = realloc(r->t, r->cap * sizeof *r->t);
        assert_true(r->id && r->t);
    }
    r->id[r->n] = id;
    r->t[r->n++] = t;
}

static void rec_batch(void *ud, int64_t t)
{
    struct order_rec *r = ud;
    r->batches++;
    r->last_batch_t = t;
}

static void shuffle_run(uint64_t seed, struct order_rec *r, struct order_rec *in)
{
    struct gw_sim_config cfg;
    struct gw_error err = {0};
    gw_sim_config_default(&cfg);
    cfg.start_ms = T0;
    assert_int_equal(gw_sim_config_profile(&cfg, "smoke", &err), GW_OK);
    cfg.duration_ms = 40 * MIN;
    struct gw_sim_timeline *tl = NULL;
    struct gw_sim_gen *g = NULL;
    assert_int_equal(gw_sim_timeline_build(&cfg, &tl, &err), GW_OK);
    assert_int_equal(gw_sim_gen_open(&g, tl, NULL, NULL, &err), GW_OK);
    struct gw_eval_shuffler *sh = NULL;
    assert_int_equal(gw_eval_shuffler_new(&sh, seed, 4, 3, rec_sample, rec_batch, r), GW_OK);
    struct gw_sim_scrape s;
    while (gw_sim_gen_next(g, &s, &err) == 1) {
        if (in)
            for (size_t i = 0; i < s.n; i++)
                rec_sample(in, s.series[i], s.t, s.v[i]);
        assert_int_equal(gw_eval_shuffler_scrape(sh, &s), GW_OK);
    }
    gw_eval_shuffler_flush(sh);
    gw_eval_shuffler_free(sh);
    gw_sim_gen_close(g);
    gw_sim_timeline_free(tl);
}

static void test_eval_shuffler_keeps_series_order(void **state)
{
    (void)state;
    struct order_rec a = {0}, b = {0}, c = {0}, in = {0};
    shuffle_run(5, &a, &in);
    shuffle_run(5, &b, NULL);
    shuffle_run(6, &c, NULL);
    assert_int_equal(a.n, in.n);
    assert_true(a.batches > 100);
    /* per-series order kept; every sample delivered once */
    size_t max_id = 0;
    for (size_t i = 0; i < a.n; i++) if (a.id[i] > max_id) max_id = a.id[i];
    int64_t *last = malloc((max_id + 1) * sizeof *last);
    size_t *cnt = calloc(max_id + 1, sizeof *cnt);
    for (size_t i = 0; i <= max_id; i++) last[i] = INT64_MIN;
    for (size_t i = 0; i < a.n; i++) {
        assert_true(a.t[i] > last[a.id[i]]);
        last[a.id[i]] = a.t[i];
        cnt[a.id[i]]++;
    }
    for (size_t i = 0; i < in.n; i++) cnt[in.id[i]]--;
    for (size_t i = 0; i <= max_id; i++) assert_int_equal(cnt[i], 0);
    /* deterministic for a seed, another order for another seed and than the input */
    assert_int_equal(a.n, b.n);
    assert_memory_equal(a.id, b.id, a.n * sizeof *a.id);
    size_t diff_c = 0, diff_in = 0;
    int64_t newest = INT64_MIN, skew = 0;
    for (size_t i = 0; i < a.n; i++) {
        diff_c += a.id[i] != c.id[i];
        diff_in += a.id[i] != in.id[i];
        if (a.t[i] > newest) newest = a.t[i];
        if (newest - a.t[i] > skew) skew = newest - a.t[i];
    }
    assert_true(diff_c > a.n / 10 && diff_in > a.n / 10);
    assert_true(skew > 30000 && skew < 6 * 30000);   /* shards lag each other by scrapes */
    free(last);
    free(cnt);
    free(a.id); free(a.t); free(b.id); free(b.t); free(c.id); free(c.t); free(in.id); free(in.t);
}

static void test_eval_variation_families(void **state)
{
    (void)state;
    struct gw_sim_config base;
    struct gw_det_config dc;
    struct gw_error err = {0};
    gw_sim_config_default(&base);
    base.start_ms = T0;
    assert_int_equal(gw_sim_config_profile(&base, "smoke", &err), GW_OK);
    base.duration_ms = 3 * 3600000LL;
    base.failure_scale = 30;
    gw_det_config_default(&dc);
    size_t nf = gw_eval_family_count();
    assert_true(nf >= 10);
    const char *want[] = {"baseline", "labels-kube", "labels-fqdn-ip", "interval-15s", "interval-60s",
                          "small-cluster", "large-cluster", "gpu-a100-h100", "baits-x2", "arrival-shuffled"};
    struct gw_eval_var_row rows[16];
    struct gw_eval_report all[32];
    size_t n_all = 0;
    memset(all, 0, sizeof all);
    for (size_t f = 0; f < nf && f < 15; f++) {
        assert_string_equal(gw_eval_family_name(f), want[f]);
        struct gw_eval_report reps[2];
        memset(reps, 0, sizeof reps);
        for (size_t i = 0; i < 2; i++) {
            struct gw_sim_config cfg;
            struct gw_eval_opts o;
            assert_int_equal(gw_eval_family_config(f, i, 1 + i, &base, &cfg, &o, &err), GW_OK);
            assert_int_equal(cfg.shape_jitter, 1);
            if (!strcmp(want[f], "labels-fqdn-ip"))
                assert_int_equal(cfg.label_style, i ? GW_SIM_LABELS_IP : GW_SIM_LABELS_FQDN);
            if (!strcmp(want[f], "gpu-a100-h100"))
                assert_int_equal(cfg.gpu_model, i ? GW_SIM_GPU_H100 : GW_SIM_GPU_A100);
            if (!strcmp(want[f], "interval-60s")) assert_int_equal(cfg.interval_ms, 60000);
            if (!strcmp(want[f], "small-cluster")) assert_int_equal(cfg.nodes, 8);
            if (!strcmp(want[f], "large-cluster")) {
                assert_int_equal(cfg.nodes, 128);
                cfg.duration_ms = 3600000;   /* keep the unit test fast */
            }
            if (!strcmp(want[f], "baits-x2")) assert_true(cfg.bait_scale == 2.0);
            if (!strcmp(want[f], "arrival-shuffled")) assert_true(o.shuffle_seed != 0);
            else assert_true(o.shuffle_seed == 0);
            if (cfg.nodes > 8 && cfg.nodes < 128) {
                gw_sim_config_set_nodes(&cfg, 4);
            }
            assert_int_equal(gw_eval_run(&cfg, &dc, &o, &reps[i], NULL, NULL, &err), GW_OK);
            all[n_all++] = reps[i];
        }
        assert_int_equal(gw_eval_var_row(reps, 2, want[f], &rows[f]), GW_OK);
        assert_int_equal(rows[f].runs, 2);
        assert_string_equal(rows[f].name, want[f]);
        assert_true(rows[f].caught <= rows[f].failures);
        assert_true(rows[f].days > 0);
    }
    assert_int_equal(gw_eval_var_row(all, n_all, "total", &rows[nf]), GW_OK);
    uint32_t fsum = 0;
    for (size_t f = 0; f < nf; f++) fsum += rows[f].failures;
    assert_int_equal(rows[nf].failures, fsum);
    assert_true(fsum > 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *mf = open_memstream(&buf, &len);
    assert_int_equal(gw_eval_var_print(rows, nf + 1, 1, mf), GW_OK);
    fclose(mf);
    assert_non_null(strstr(buf, "{\"families\":[{\"name\":\"baseline\""));
    assert_non_null(strstr(buf, "\"name\":\"arrival-shuffled\""));
    assert_non_null(strstr(buf, "\"totals\":{\"name\":\"total\""));
    free(buf);
    mf = open_memstream(&buf, &len);
    assert_int_equal(gw_eval_var_print(rows, nf + 1, 0, mf), GW_OK);
    fclose(mf);
    assert_non_null(strstr(buf, "interval-15s"));
    free(buf);
    for (size_t i = 0; i < n_all; i++) gw_eval_report_free(&all[i]);
}

/* D7 scoring on a crafted timeline: matching by phase and overlap, start/end
 * errors, the confusion matrix, bottleneck alerts on healthy saves. */
static void test_eval_checkpoints(void **state)
{
    (void)state;
    const int64_t M = 60000, T = 1767225600000LL;
    struct gw_sim_checkpoint cks[4] = {
        {0, 0, GW_SIM_CKPT_LOAD, T, T + 5 * M, 0, GW_SIM_BN_SLOTS},
        {1, 0, GW_SIM_CKPT_SAVE, T + 60 * M, T + 64 * M, 0, GW_SIM_BN_NONE},
        {2, 0, GW_SIM_CKPT_SAVE, T + 120 * M, T + 126 * M, 0, GW_SIM_BN_SERVER},
        {3, 0, GW_SIM_CKPT_SAVE, T + 180 * M, T + 183 * M, 0, GW_SIM_BN_LINK},
    };
    struct gw_sim_timeline tl;
    memset(&tl, 0, sizeof tl);
    gw_sim_config_default(&tl.cfg);
    tl.cfg.interval_ms = 30000;
    tl.checkpoints = cks;
    tl.n_checkpoints = 4;
    struct gw_det_ckpt ev[4];
    memset(ev, 0, sizeof ev);
    /* the load found 30 s late, the healthy save right, the server save called slots, a stray save */
    ev[0] = (struct gw_det_ckpt){.t_start = T + 30000, .t_end = T + 5 * M, .phase = GW_CKPT_LOAD, .diag = GW_CKPT_SLOTS};
    ev[1] = (struct gw_det_ckpt){.t_start = T + 60 * M, .t_end = T + 65 * M, .phase = GW_CKPT_SAVE, .diag = GW_CKPT_HEALTHY};
    ev[2] = (struct gw_det_ckpt){.t_start = T + 120 * M, .t_end = T + 126 * M, .phase = GW_CKPT_SAVE, .diag = GW_CKPT_SLOTS};
    ev[3] = (struct gw_det_ckpt){.t_start = T + 300 * M, .t_end = T + 303 * M, .phase = GW_CKPT_SAVE, .diag = GW_CKPT_SLOTS};
    struct gw_eval_alert al[3];
    memset(al, 0, sizeof al);
    for (int i = 0; i < 3; i++) {
        snprintf(al[i].detector, sizeof al[i].detector, "D7");
        snprintf(al[i].alertname, sizeof al[i].alertname, "CheckpointIoBottleneck");
    }
    al[0].active_at = T + 65 * M;    /* after the healthy save */
    al[1].active_at = T + 127 * M;   /* after the server save */
    al[2].active_at = T + 400 * M;   /* after no save */
    struct gw_eval_ckpt c;
    assert_int_equal(gw_eval_ckpt_score(&tl, ev, 4, al, 3, &c), GW_OK);
    assert_int_equal(c.truth, 4);
    assert_int_equal(c.events, 4);
    assert_int_equal(c.matched, 3);
    assert_int_equal(c.confusion[GW_SIM_BN_SLOTS][GW_CKPT_SLOTS], 1);
    assert_int_equal(c.confusion[GW_SIM_BN_NONE][GW_CKPT_HEALTHY], 1);
    assert_int_equal(c.confusion[GW_SIM_BN_SERVER][GW_CKPT_SLOTS], 1);
    assert_int_equal(c.start_within2, 3);
    assert_int_equal(c.end_within2, 3);
    assert_true(fabs(c.start_err_max_s - 30) < 1e-9 && fabs(c.end_err_max_s - 60) < 1e-9);
    assert_int_equal(c.bn_alerts, 3);
    assert_int_equal(c.bn_alerts_healthy, 1);
    assert_int_equal(c.bn_alerts_unmatched, 1);
    assert_int_equal(c.limited_saves, 2);
    assert_int_equal(c.limited_saves_alerted, 1);
    struct gw_eval_report rep;
    memset(&rep, 0, sizeof rep);
    rep.ckpt = c;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(gw_eval_ckpt_print(&rep, 1, 1, f), GW_OK);
    fclose(f);
    assert_non_null(strstr(buf, "\"precision\":0.75"));
    assert_non_null(strstr(buf, "\"bottleneck_alerts_on_healthy\":1"));
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eval_opts_default),
        cmocka_unit_test(test_eval_catch_window),
        cmocka_unit_test(test_eval_wrong_node_is_false),
        cmocka_unit_test(test_eval_false_merge),
        cmocka_unit_test(test_eval_info_and_explained_never_false),
        cmocka_unit_test(test_eval_rows_leads_and_delays),
        cmocka_unit_test(test_eval_alert_catches_one_failure),
        cmocka_unit_test(test_eval_match_gpu),
        cmocka_unit_test(test_eval_alert_prefers_its_own_gpu),
        cmocka_unit_test(test_eval_print_table_and_json),
        cmocka_unit_test(test_eval_run_smoke),
        cmocka_unit_test(test_eval_unknown_host_is_false),
        cmocka_unit_test(test_eval_shuffler_keeps_series_order),
        cmocka_unit_test(test_eval_variation_families),
        cmocka_unit_test(test_eval_checkpoints),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
