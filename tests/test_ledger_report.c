/* test_ledger_report.c - `gpuwatch report` rendering (gw_led_report) on a
 * ledger result built by hand: four nodes (one named "<b>x&y"), sessions,
 * failures with and without an XID, an automatic and a manual retry chain,
 * exclusions, D7 checkpoint events with each diagnosis. Renders Markdown
 * and HTML to memory and checks sections, ids, tables, SVG marks,
 * escaping, determinism and the empty result.
 *
 * With GW_REPORT_SAMPLE_DIR set, the sample HTML and Markdown are also
 * written there (report.html, report.md) for tests/check_report_html.sh. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/alert.h"
#include "gpuwatch/detect.h"
#include "gpuwatch/ledger.h"

#define T0 1764547200000LL   /* 2025-12-01T00:00:00Z */
#define MIN 60000LL
#define HOUR 3600000LL
#define NT GW_LED_NO_TIME

struct fixture {
    char *names[4];
    uint32_t members[4][4];
    struct gw_led_session sessions[6];
    struct gw_led_failure failures[3];
    struct gw_led_chain chains[2];
    struct gw_led_node ledger[4];
    struct gw_led_exclusion excl[2];
    struct gw_led_result r;
    struct gw_det_ckpt ckpts[4];
    struct gw_alert alerts[5];
    struct gw_led_report_in in;
};

static void session(struct fixture *f, uint32_t i, const char *ext, int64_t start, int64_t steady, int64_t end,
                    enum gw_led_outcome o, int32_t chain, int32_t failure)
{
    struct gw_led_session *s = &f->sessions[i];
    memset(s, 0, sizeof *s);
    s->id = i;
    snprintf(s->ext_id, sizeof s->ext_id, "%s", ext);
    s->t_start = start, s->t_steady = steady, s->t_end = end;
    s->outcome = o;
    s->chain = chain;
    s->failure = failure;
    for (uint32_t k = 0; k < 4; k++) f->members[i % 4][k] = k;
    s->nodes = f->members[i % 4];
    s->n_nodes = 4;
    for (int k = 0; k < 4; k++) s->excluded[k] = -1;
}

static void failure(struct fixture *f, uint32_t i, uint32_t node, int gpu, uint32_t xid, const char *cls,
                    const char *det, const char *alert, int64_t t_first, int64_t t_detect, int64_t t_xid,
                    int32_t sess)
{
    struct gw_led_failure *fl = &f->failures[i];
    memset(fl, 0, sizeof *fl);
    fl->id = i, fl->node = node, fl->gpu = gpu, fl->xid = xid;
    snprintf(fl->cls, sizeof fl->cls, "%s", cls);
    snprintf(fl->detector, sizeof fl->detector, "%s", det);
    snprintf(fl->alertname, sizeof fl->alertname, "%s", alert);
    snprintf(fl->action, sizeof fl->action, "%s", xid == 79 ? "reboot_node" : "reset_gpu");
    fl->repeat = 1;
    fl->t_first = t_first, fl->t_detect = t_detect, fl->t_xid = t_xid;
    fl->session = sess;
    fl->t_session_end = sess >= 0 ? t_detect + 2 * MIN : NT;
    fl->t_next_steady = t_detect + 40 * MIN;
    fl->lost_gpu_hours = 12.5 * (i + 1);
    fl->alert_ids[0] = 100 + i;
    fl->n_alert_ids = 1;
    snprintf(fl->evidence, sizeof fl->evidence, "ecc_dbe=3 <row-remap> & \"pending\"");
}

static void ckpt(struct fixture *f, uint32_t i, int64_t t, int phase, int diag, double mean_gbs, double util)
{
    struct gw_det_ckpt *e = &f->ckpts[i];
    memset(e, 0, sizeof *e);
    e->id = i + 1;
    e->t_start = t, e->t_end = t + 6 * MIN;
    e->phase = phase, e->diag = diag;
    e->nodes = 4, e->buckets = 12, e->interval_ms = 30000;
    e->mean_bps = mean_gbs * 1e9, e->peak_bps = mean_gbs * 1.6e9;
    e->bytes = e->mean_bps * 360;
    e->link_util = util, e->link_util_max = isfinite(util) ? util * 1.5 : NAN;
    e->queue_share = diag == GW_CKPT_SLOTS ? 0.93 : 0.2;
    e->rtt_ms = e->rtt_base_ms = e->backlog_per_send = e->slot_high = e->slot_limit = e->slots_at_limit = NAN;
}

static void alert(struct fixture *f, uint32_t i, const char *name, const char *det, enum gw_severity sev,
                  const char *host)
{
    struct gw_alert *a = &f->alerts[i];
    memset(a, 0, sizeof *a);
    a->id = 100 + i;
    snprintf(a->alertname, sizeof a->alertname, "%s", name);
    snprintf(a->detector, sizeof a->detector, "%s", det);
    snprintf(a->hostname, sizeof a->hostname, "%s", host);
    a->severity = sev;
    a->active_at = T0 + i * HOUR;
    a->fired_at = sev == GW_SEV_CRITICAL ? a->active_at + MIN : INT64_MIN;
    if (i == 3) a->fired_at = T0;
}

static void ledger_node(struct fixture *f, uint32_t i, uint32_t node, double score, uint32_t fails, uint32_t excl,
                        int lemon)
{
    f->ledger[i] = (struct gw_led_node){.node = node, .score = score, .failures = fails, .exclusions = excl,
                                        .hours_observed = 48, .mtbf_h = fails ? 48.0 / fails : INFINITY,
                                        .rank = i + 1, .lemon = lemon, .excluded = lemon};
}

static struct fixture *fixture_new(void)
{
    struct fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    static char n0[] = "gpu-node-01", n1[] = "gpu-node-02", n2[] = "<b>x&y", n3[] = "gpu-node-04";
    f->names[0] = n0, f->names[1] = n1, f->names[2] = n2, f->names[3] = n3;
    session(f, 0, "job-7", T0 + HOUR, T0 + HOUR + 10 * MIN, T0 + 5 * HOUR, GW_LED_FAILED, 0, 0);
    session(f, 1, "", T0 + 5 * HOUR + 11 * MIN, NT, T0 + 5 * HOUR + 20 * MIN, GW_LED_STARTUP_FAILED, 0, -1);
    session(f, 2, "", T0 + 5 * HOUR + 31 * MIN, T0 + 5 * HOUR + 45 * MIN, T0 + 20 * HOUR, GW_LED_FAILED, 0, 1);
    session(f, 3, "job-9", T0 + 21 * HOUR, T0 + 21 * HOUR + 5 * MIN, T0 + 30 * HOUR, GW_LED_COMPLETED, -1, -1);
    session(f, 4, "job-10", T0 + 31 * HOUR, NT, T0 + 31 * HOUR + 9 * MIN, GW_LED_STARTUP_FAILED, 1, 2);
    session(f, 5, "job-11", T0 + 34 * HOUR, T0 + 34 * HOUR + 8 * MIN, T0 + 48 * HOUR, GW_LED_RUNNING, -1, -1);
    failure(f, 0, 2, 3, 79, "gpu_lost", "D1", "GpuFellOffBus", T0 + 4 * HOUR + 50 * MIN, T0 + 4 * HOUR + 55 * MIN,
            T0 + 4 * HOUR + 58 * MIN, 0);
    failure(f, 1, 2, -1, 0, "memory", "D2", "RowRemapPending", T0 + 19 * HOUR, T0 + 19 * HOUR + 50 * MIN, NT, 2);
    failure(f, 2, 1, 5, 145, "nvlink", "D3", "NvlinkErrors", T0 + 31 * HOUR, T0 + 31 * HOUR + 2 * MIN,
            T0 + 31 * HOUR + MIN, 4);
    snprintf(f->failures[1].escalation, sizeof f->failures[1].escalation, "second memory failure on GPU | 30 d");
    f->failures[1].alert_ids[1] = 103;   /* NvlinkErrors (D3), critical, fired before RowRemapPending */
    f->failures[1].n_alert_ids = 2;
    f->chains[0] = (struct gw_led_chain){.id = 0, .failed_session = 0, .failure = 0, .attempts = 2, .success = 1,
                                         .automatic = 1, .t_fail = T0 + 5 * HOUR,
                                         .t_recovered = T0 + 5 * HOUR + 45 * MIN, .median_interval_ms = 11 * MIN,
                                         .intervals = {11 * MIN, 11 * MIN}, .n_intervals = 2};
    f->chains[1] = (struct gw_led_chain){.id = 1, .failed_session = 4, .failure = 2, .attempts = 0, .success = 0,
                                         .automatic = 0, .t_fail = T0 + 31 * HOUR + 9 * MIN, .t_recovered = NT};
    ledger_node(f, 0, 2, 3.4, 2, 3, 1);
    ledger_node(f, 1, 1, 1.0, 1, 1, 0);
    ledger_node(f, 2, 0, 0, 0, 0, 0);
    ledger_node(f, 3, 3, 0, 0, 0, 0);
    f->excl[0] = (struct gw_led_exclusion){.node = 2, .source = GW_LEX_LEMON, .since = T0 + 20 * HOUR, .until = NT,
                                           .failure = 1, .alert_ids = {101, 102}, .n_alert_ids = 2};
    snprintf(f->excl[0].action, sizeof f->excl[0].action, "replace");
    snprintf(f->excl[0].reason, sizeof f->excl[0].reason, "lemon: score 3.4 <script>alert(1)</script>");
    f->excl[1] = (struct gw_led_exclusion){.node = 1, .source = GW_LEX_FAILURE, .since = T0 + 31 * HOUR,
                                           .until = T0 + 55 * HOUR, .failure = 2};
    snprintf(f->excl[1].action, sizeof f->excl[1].action, "reset_gpu");
    snprintf(f->excl[1].reason, sizeof f->excl[1].reason, "XID 145 on GPU 5");
    ckpt(f, 0, T0 + 2 * HOUR, GW_CKPT_SAVE, GW_CKPT_SLOTS, 40, 0.05);
    ckpt(f, 1, T0 + 6 * HOUR, GW_CKPT_LOAD, GW_CKPT_HEALTHY, 150, 0.1);
    ckpt(f, 2, T0 + 12 * HOUR, GW_CKPT_SAVE, GW_CKPT_SLOTS, 38, 0.048);
    ckpt(f, 3, T0 + 22 * HOUR, GW_CKPT_SAVE, GW_CKPT_UNKNOWN, 35, NAN);
    alert(f, 0, "GpuFellOffBus", "D1", GW_SEV_CRITICAL, "<b>x&y");
    alert(f, 1, "RowRemapPending", "D2", GW_SEV_WARNING, "<b>x&y");
    alert(f, 2, "RowRemapPending", "D2", GW_SEV_CRITICAL, "<b>x&y");
    alert(f, 3, "NvlinkErrors", "D3", GW_SEV_CRITICAL, "gpu-node-02");
    alert(f, 4, "CheckpointSlotLimited", "D7", GW_SEV_WARNING, "");

    struct gw_led_result *r = &f->r;
    gw_led_config_default(&r->cfg);
    r->from = T0, r->to = T0 + 48 * HOUR, r->now = r->to;
    r->nodes = f->names, r->n_nodes = 4;
    r->sessions = f->sessions, r->n_sessions = 6;
    r->failures = f->failures, r->n_failures = 3;
    r->chains = f->chains, r->n_chains = 2;
    r->ledger = f->ledger, r->n_ledger = 4;
    r->exclusions = f->excl, r->n_exclusions = 2;
    struct gw_led_stats *s = &r->stats;
    s->sessions = 6, s->completed = 1, s->failed = 2, s->startup_failed = 2, s->running = 1;
    s->chains_auto = 1, s->chains_auto_ok = 1, s->chains_manual = 1, s->chains_manual_ok = 0;
    s->chain_success_auto = 1.0, s->chain_success_manual = 0.0;
    s->retry_interval_med_min = 11, s->retry_interval_p25_min = 10, s->retry_interval_p75_min = 11;
    s->attempts_auto = 2;
    s->failures = 3, s->hw_nodes = 2;
    s->fleet_mtbf_h = 64;
    s->top_k_share = 1.0, s->gini = 0.62;
    s->gpu_hours_total = 1536, s->gpu_hours_train = 1100, s->gpu_hours_lost = 75;
    s->goodput = 1100.0 / 1175.0;
    s->causes[0] = (struct gw_led_cause){.cls = "nvlink", .failures = 1, .lost_gpu_hours = 37.5};
    s->causes[1] = (struct gw_led_cause){.cls = "memory", .failures = 1, .lost_gpu_hours = 25};
    s->causes[2] = (struct gw_led_cause){.cls = "gpu_lost", .failures = 1, .lost_gpu_hours = 12.5};
    s->n_causes = 3;
    f->in = (struct gw_led_report_in){.r = r, .ckpts = f->ckpts, .n_ckpts = 4, .alerts = f->alerts, .n_alerts = 5,
                                      .title = "Cluster <A> & B", .generated_at = T0 + 49 * HOUR};
    return f;
}

static char *render(const struct gw_led_report_in *in, enum gw_led_format fmt)
{
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    assert_non_null(f);
    struct gw_error err = {0};
    assert_int_equal(gw_led_report(f, in, fmt, &err), GW_OK);
    fclose(f);
    assert_non_null(s);
    return s;
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

/* The text of the <svg id="id"> element. */
static char *svg_of(const char *html, const char *id)
{
    char key[64];
    snprintf(key, sizeof key, "<svg id=\"%s\"", id);
    const char *a = strstr(html, key);
    if (!a) return NULL;
    const char *b = strstr(a, "</svg>");
    assert_non_null(b);
    return strndup(a, (size_t)(b - a));
}

/* Body rows of the HTML table with that id. */
static size_t rows_of(const char *html, const char *id)
{
    char key[64];
    snprintf(key, sizeof key, "<table id=\"%s\">", id);
    const char *a = strstr(html, key);
    assert_non_null(a);
    a = strstr(a, "<tbody>");
    const char *b = strstr(a, "</table>");
    size_t n = 0;
    for (const char *p = strstr(a, "<tr>"); p && p < b; p = strstr(p + 1, "<tr>")) n++;
    return n;
}

static void save_sample(const char *name, const char *text)
{
    const char *dir = getenv("GW_REPORT_SAMPLE_DIR");
    if (!dir || !*dir) return;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static const char *const sections[] = {"sec-summary", "sec-failures", "sec-checkpoints",
                                       "sec-nodes",   "sec-retries",  "sec-goodput"};
static const char *const tables[] = {"tbl-summary",  "tbl-failures", "tbl-fail-class", "tbl-fail-detector",
                                     "tbl-ckpt-diag", "tbl-ckpts",   "tbl-ledger",     "tbl-exclusions",
                                     "tbl-recovery", "tbl-chains",   "tbl-causes",     "tbl-mtbf"};
static const char *const charts[] = {"chart-timeline", "chart-ckpt", "chart-lemons", "chart-retries",
                                     "chart-causes"};

static void test_ledger_report_html_sections(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    char *h = render(&f->in, GW_LED_HTML);
    save_sample("report.html", h);
    char key[80];
    assert_non_null(strstr(h, "<!DOCTYPE html>"));
    assert_non_null(strstr(h, "<style>"));
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) {
        snprintf(key, sizeof key, "<section id=\"%s\">", sections[i]);
        assert_non_null(strstr(h, key));
    }
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        snprintf(key, sizeof key, "<table id=\"%s\">", tables[i]);
        assert_non_null(strstr(h, key));
    }
    assert_int_equal(count(h, "<section "), count(h, "</section>"));
    assert_int_equal(count(h, "<table "), count(h, "</table>"));
    assert_int_equal(count(h, "<svg "), count(h, "</svg>"));
    /* self-contained: no script, no external asset */
    assert_null(strstr(h, "<script"));
    assert_null(strstr(h, "<link"));
    assert_null(strstr(h, "src="));
    assert_null(strstr(h, "url("));
    assert_int_equal(count(h, "http://"), count(h, "xmlns=\"http://www.w3.org/2000/svg\""));
    /* the findings of the paper's kind */
    assert_non_null(strstr(h, "Bottleneck: slot_limited in 2 of 4 checkpoints (50 %)"));
    assert_non_null(strstr(h, "The top 3 of 4 nodes took 100.0 % of all exclusions"));
    assert_non_null(strstr(h, "Median retry interval 11.0 min (IQR 10.0-11.0 min)"));
    assert_non_null(strstr(h, "Of the 2 with an XID, 1 was detected before the XID (median lead time 3m 00s)"));
    /* lead before the XID: 3 min for failure 0, -1 min for failure 2 */
    assert_non_null(strstr(h, "<td>3m 00s</td>"));
    assert_non_null(strstr(h, "<td>-1m 00s</td>"));
    assert_non_null(strstr(h, "2025-12-01T04:50:00Z"));
    /* how it was detected: the defining alert, and the critical one that fired first when another */
    assert_non_null(strstr(h, ">D2 RowRemapPending (first: D3 NvlinkErrors)</td>"));
    assert_non_null(strstr(h, "<td>D1 GpuFellOffBus</td>"));
    free(h);
    free(f);
}

static void test_ledger_report_html_charts(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    char *h = render(&f->in, GW_LED_HTML);
    for (size_t i = 0; i < sizeof charts / sizeof charts[0]; i++) {
        char *svg = svg_of(h, charts[i]);
        assert_non_null(svg);
        assert_non_null(strstr(svg, "viewBox="));
        assert_null(strstr(svg, "none in this range"));
        free(svg);
    }
    char *tl = svg_of(h, "chart-timeline");
    /* 3 failures as dots (+ legend dots per class), 2 exclusion bands, 6 sessions */
    assert_int_equal(count(tl, "r=\"6\""), 3);
    assert_true(count(tl, "<rect") >= 1 + 2 + 6);
    assert_non_null(strstr(tl, ">&lt;b&gt;x&amp;y</text>"));
    free(tl);
    char *ck = svg_of(h, "chart-ckpt");
    assert_non_null(strstr(ck, "id=\"ckpt-capacity\""));
    assert_true(count(ck, "<g><title>") == 4);
    free(ck);
    char *rt = svg_of(h, "chart-retries");
    assert_int_equal(count(rt, "<title>attempt "), 2);
    assert_int_equal(count(rt, "<title>recovered at"), 1);
    assert_int_equal(count(rt, "<title>failed at"), 2);
    free(rt);
    char *lm = svg_of(h, "chart-lemons");
    assert_int_equal(count(lm, "rx=\"2\""), 2);        /* two nodes with a score */
    assert_non_null(strstr(lm, "fill=\"#e63946\""));    /* the lemon in red */
    free(lm);
    free(h);
    free(f);
}

static void test_ledger_report_escapes(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    char *h = render(&f->in, GW_LED_HTML);
    assert_null(strstr(h, "<b>x&y"));
    assert_true(count(h, "&lt;b&gt;x&amp;y") >= 4);
    assert_null(strstr(h, "<script>alert(1)"));
    assert_non_null(strstr(h, "&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert_non_null(strstr(h, "ecc_dbe=3 &lt;row-remap&gt; &amp; &quot;pending&quot;"));
    assert_non_null(strstr(h, "<title>Cluster &lt;A&gt; &amp; B</title>"));
    char *m = render(&f->in, GW_LED_MD);
    assert_null(strstr(m, "<b>x&y"));
    assert_non_null(strstr(m, "&lt;b&gt;x&amp;y"));
    assert_null(strstr(m, "<script>"));
    /* a pipe in data does not split a Markdown table cell */
    assert_non_null(strstr(m, "second memory failure on GPU \\| 30 d"));
    free(m);
    free(h);
    free(f);
}

static void test_ledger_report_markdown(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    char *m = render(&f->in, GW_LED_MD);
    save_sample("report.md", m);
    assert_non_null(strstr(m, "# Cluster &lt;A&gt; &amp; B\n"));
    static const char *const heads[] = {"## Summary\n", "## Failures and how each was detected\n",
                                        "## Checkpoints\n", "## Exclusions and lemon ranking\n",
                                        "## Retry chains and recovery\n",
                                        "## MTBF, goodput and GPU-hours lost per cause\n"};
    for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++) assert_non_null(strstr(m, heads[i]));
    char key[80];
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        snprintf(key, sizeof key, "<a id=\"%s\"></a>\n\n|", tables[i]);
        assert_non_null(strstr(m, key));
    }
    assert_non_null(strstr(m, "| time | node | GPU | class | XID |"));
    assert_non_null(strstr(m, "\n|---|---|---|---|---|---|---|---|---|---|---|---|\n"));
    assert_null(strstr(m, "<svg"));
    assert_null(strstr(m, "<table"));
    /* every table row has as many cells as its header */
    const char *t = strstr(m, "| time | node |");
    for (int rows = 0; rows < 5; rows++) {
        const char *e = strchr(t, '\n');
        size_t bars = 0;
        for (const char *c = t; c < e; c++) bars += *c == '|' && c[-1] != '\\';
        assert_int_equal(bars, 13);
        t = e + 1;
    }
    free(m);
    free(f);
}

static char *drop_generated(char *s)
{
    char *g = strstr(s, "generated_at: ");
    assert_non_null(g);
    memset(g, '#', strcspn(g, "<\n"));
    return s;
}

static void test_ledger_report_deterministic(void **state)
{
    (void)state;
    struct fixture *f = fixture_new();
    for (int fmt = GW_LED_MD; fmt <= GW_LED_HTML; fmt++) {
        char *a = drop_generated(render(&f->in, (enum gw_led_format)fmt));
        f->in.generated_at += 3600000;
        char *b = drop_generated(render(&f->in, (enum gw_led_format)fmt));
        assert_string_equal(a, b);
        free(a);
        free(b);
    }
    free(f);
}

static void test_ledger_report_empty(void **state)
{
    (void)state;
    struct gw_led_result r;
    memset(&r, 0, sizeof r);
    gw_led_config_default(&r.cfg);
    r.stats.goodput = r.stats.fleet_mtbf_h = r.stats.top_k_share = r.stats.gini = NAN;
    r.stats.chain_success_auto = r.stats.chain_success_manual = NAN;
    r.stats.retry_interval_med_min = r.stats.retry_interval_p25_min = r.stats.retry_interval_p75_min = NAN;
    struct gw_led_report_in in = {.r = &r};
    char *h = render(&in, GW_LED_HTML);
    save_sample("empty.html", h);
    char key[80];
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) {
        snprintf(key, sizeof key, "<section id=\"%s\">", sections[i]);
        assert_non_null(strstr(h, key));
    }
    for (size_t i = 0; i < 4; i++) {     /* chart-causes is drawn only with losses */
        char *svg = svg_of(h, charts[i]);
        assert_non_null(svg);
        assert_non_null(strstr(svg, "none in this range"));
        free(svg);
    }
    assert_non_null(strstr(h, "<title>gpuwatch report</title>"));
    assert_non_null(strstr(h, "Failures: none in this range."));
    assert_non_null(strstr(h, "Checkpoint events: none in this range."));
    assert_non_null(strstr(h, "Retry chains: none in this range."));
    assert_null(strstr(h, "nan"));
    free(h);
    char *m = render(&in, GW_LED_MD);
    assert_non_null(strstr(m, "## Summary"));
    assert_non_null(strstr(m, "Failures: none in this range."));
    assert_null(strstr(m, "nan"));
    free(m);
}

/* A fleet of the paper's size: 63 nodes, 224 sessions, 200 failures, 523
 * checkpoints, 20 chains, 30 exclusions. Every failure is a table row; the
 * charts stay bounded (at most 60 timeline rows and chains). */
static void test_ledger_report_fleet(void **state)
{
    (void)state;
    enum { NN = 63, NS = 224, NF = 200, NC = 523, NCH = 20, NX = 30 };
    char (*names)[24] = calloc(NN, 24);
    char **np = calloc(NN, sizeof *np);
    struct gw_led_session *ss = calloc(NS, sizeof *ss);
    struct gw_led_failure *fs = calloc(NF, sizeof *fs);
    struct gw_det_ckpt *cs = calloc(NC, sizeof *cs);
    struct gw_led_chain *chs = calloc(NCH, sizeof *chs);
    struct gw_led_node *ls = calloc(NN, sizeof *ls);
    struct gw_led_exclusion *xs = calloc(NX, sizeof *xs);
    uint32_t members[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    assert_true(names && np && ss && fs && cs && chs && ls && xs);
    for (int i = 0; i < NN; i++) {
        snprintf(names[i], 24, "node-%02d", i);
        np[i] = names[i];
        ls[i] = (struct gw_led_node){.node = (uint32_t)i, .score = i < 10 ? 5.0 - i * 0.4 : 0, .failures = i < 40,
                                     .exclusions = i < 30 ? 30 - i : 0, .hours_observed = 1752,
                                     .mtbf_h = i < 40 ? 1752 : INFINITY, .rank = (uint32_t)i + 1, .lemon = i < 3};
    }
    for (int i = 0; i < NS; i++) {
        int64_t t = T0 + i * 7 * HOUR;
        ss[i] = (struct gw_led_session){.id = (uint32_t)i, .t_start = t, .t_steady = t + 10 * MIN,
                                        .t_end = t + 6 * HOUR, .outcome = (enum gw_led_outcome)(i % 4),
                                        .failure = -1, .chain = i < NCH ? i : -1, .nodes = members, .n_nodes = 8};
    }
    for (int i = 0; i < NF; i++) {
        int64_t t = T0 + i * 8 * HOUR;
        fs[i] = (struct gw_led_failure){.id = (uint32_t)i, .node = (uint32_t)(i % NN), .gpu = i % 8,
                                        .xid = i % 3 ? 79 : 0, .repeat = 1, .t_first = t, .t_detect = t + MIN,
                                        .t_xid = i % 3 ? t + 4 * MIN : NT, .t_session_end = NT,
                                        .t_next_steady = NT, .session = -1, .lost_gpu_hours = 8};
        snprintf(fs[i].cls, sizeof fs[i].cls, "%s", (const char *[]){"nvlink", "memory", "gpu_lost", "app",
                                                                        "thermal"}[i % 5]);
        snprintf(fs[i].detector, sizeof fs[i].detector, "D%d", 1 + i % 6);
    }
    for (int i = 0; i < NC; i++) {
        cs[i] = (struct gw_det_ckpt){.id = (uint64_t)i, .t_start = T0 + i * 3 * HOUR,
                                     .t_end = T0 + i * 3 * HOUR + 5 * MIN, .phase = 1 + i % 2,
                                     .diag = i % GW_CKPT_DIAG_COUNT_, .mean_bps = 4e10, .peak_bps = 6e10,
                                     .bytes = 1.2e13, .link_util = 0.016, .link_util_max = 0.1,
                                     .queue_share = 0.931};
    }
    for (int i = 0; i < NCH; i++)
        chs[i] = (struct gw_led_chain){.id = (uint32_t)i, .failed_session = i, .failure = i, .attempts = 6,
                                       .success = i % 3 == 0, .automatic = i < 12, .t_fail = ss[i].t_end,
                                       .t_recovered = i % 3 == 0 ? ss[i].t_end + HOUR : NT};
    for (int i = 0; i < NX; i++)
        xs[i] = (struct gw_led_exclusion){.node = (uint32_t)i, .source = GW_LEX_FAILURE,
                                          .since = T0 + i * 20 * HOUR, .until = NT, .failure = i};
    struct gw_led_result r;
    memset(&r, 0, sizeof r);
    gw_led_config_default(&r.cfg);
    r.from = T0, r.to = T0 + 73 * 24 * HOUR, r.now = r.to;
    r.nodes = np, r.n_nodes = NN;
    r.sessions = ss, r.n_sessions = NS;
    r.failures = fs, r.n_failures = NF;
    r.chains = chs, r.n_chains = NCH;
    r.ledger = ls, r.n_ledger = NN;
    r.exclusions = xs, r.n_exclusions = NX;
    r.stats.top_k_share = 0.52, r.stats.gini = 0.7, r.stats.goodput = 0.9, r.stats.fleet_mtbf_h = 500;
    r.stats.chain_success_auto = 4.0 / 12, r.stats.chain_success_manual = 1.0 / 8;
    r.stats.retry_interval_med_min = 11, r.stats.retry_interval_p25_min = 10, r.stats.retry_interval_p75_min = 11;
    struct gw_led_report_in in = {.r = &r, .ckpts = cs, .n_ckpts = NC, .generated_at = T0};
    char *h = render(&in, GW_LED_HTML);
    save_sample("fleet.html", h);
    assert_int_equal(rows_of(h, "tbl-failures"), NF);
    assert_int_equal(rows_of(h, "tbl-fail-class"), 5);
    assert_int_equal(rows_of(h, "tbl-fail-detector"), 6);
    assert_int_equal(rows_of(h, "tbl-ckpt-diag"), GW_CKPT_DIAG_COUNT_);
    assert_int_equal(rows_of(h, "tbl-ckpts"), NC);
    assert_int_equal(rows_of(h, "tbl-ledger"), 40);
    assert_int_equal(rows_of(h, "tbl-exclusions"), NX);
    assert_int_equal(rows_of(h, "tbl-chains"), NCH);
    assert_int_equal(rows_of(h, "tbl-mtbf"), NN);
    char *tl = svg_of(h, "chart-timeline");
    size_t drawn = 0;   /* the failures of the 60 nodes drawn */
    for (int i = 0; i < NF; i++) drawn += i % NN < 60;
    assert_int_equal(count(tl, "r=\"6\""), drawn);
    free(tl);
    char *rt = svg_of(h, "chart-retries");
    assert_int_equal(count(rt, "<title>failed at"), NCH);
    free(rt);
    assert_non_null(strstr(h, "The top 3 of 63 nodes took 52.0 % of all exclusions"));
    assert_non_null(strstr(h, "<details><summary>All 523 checkpoints</summary>\n<div class=\"tw\"><table id=\"tbl-ckpts\">"));
    assert_non_null(strstr(h, "and 3 more nodes (in the tables)</text>"));
    free(h);
    char *m = render(&in, GW_LED_MD);
    assert_true(count(m, "\n| 2025-") + count(m, "\n| 2026-") >= NF + NC);
    free(m);
    free(names), free(np), free(ss), free(fs), free(cs), free(chs), free(ls), free(xs);
}

static void test_ledger_report_args(void **state)
{
    (void)state;
    struct gw_error err = {0};
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    struct gw_led_report_in in = {0};
    assert_int_equal(gw_led_report(f, NULL, GW_LED_MD, &err), GW_EINVAL);
    assert_int_equal(gw_led_report(f, &in, GW_LED_MD, &err), GW_EINVAL);
    assert_int_equal(gw_led_report(NULL, &in, GW_LED_HTML, NULL), GW_EINVAL);
    fclose(f);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ledger_report_html_sections), cmocka_unit_test(test_ledger_report_html_charts),
        cmocka_unit_test(test_ledger_report_escapes),       cmocka_unit_test(test_ledger_report_markdown),
        cmocka_unit_test(test_ledger_report_deterministic), cmocka_unit_test(test_ledger_report_empty),
        cmocka_unit_test(test_ledger_report_fleet),         cmocka_unit_test(test_ledger_report_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
