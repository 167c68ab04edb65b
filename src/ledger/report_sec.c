/* src/ledger/report_sec.c - three sections of `gpuwatch report`:
 * checkpoints (D7's events with their diagnosis, and which bottleneck
 * dominates), exclusions and the lemon ranking, retry chains and recovery.
 * Written through the format-neutral helpers of report.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/detect.h"
#include "gpuwatch/ledger.h"
#include "report_int.h"

#define GB 1e9

/* -------------------------------------------------------------- checkpoints */

struct diag_count {
    uint32_t saves, loads;
    double queue_sum, util_sum;      /* over the events that know them */
    uint32_t queue_n, util_n;
};

static void count_diags(const struct rep *p, struct diag_count d[GW_CKPT_DIAG_COUNT_])
{
    memset(d, 0, GW_CKPT_DIAG_COUNT_ * sizeof d[0]);
    for (size_t i = 0; i < p->in->n_ckpts; i++) {
        const struct gw_det_ckpt *e = &p->in->ckpts[i];
        int k = e->diag >= 0 && e->diag < GW_CKPT_DIAG_COUNT_ ? e->diag : GW_CKPT_UNKNOWN;
        if (e->phase == GW_CKPT_LOAD) d[k].loads++;
        else d[k].saves++;
        if (isfinite(e->queue_share)) d[k].queue_sum += e->queue_share, d[k].queue_n++;
        if (isfinite(e->link_util)) d[k].util_sum += e->link_util, d[k].util_n++;
    }
}

/* Which cause limits the checkpoints most often, in one sentence. */
static void bottleneck_finding(struct rep *p, const struct diag_count *d)
{
    size_t n = p->in->n_ckpts;
    int worst = -1;
    uint32_t worst_n = 0;
    for (int k = GW_CKPT_SLOTS; k < GW_CKPT_DIAG_COUNT_; k++) {
        uint32_t c = d[k].saves + d[k].loads;
        if (c > worst_n) worst = k, worst_n = c;
    }
    double q = 0, u = 0;
    uint32_t qn = 0, un = 0;
    for (int k = 0; k < GW_CKPT_DIAG_COUNT_; k++) q += d[k].queue_sum, qn += d[k].queue_n;
    for (int k = 0; k < GW_CKPT_DIAG_COUNT_; k++) u += d[k].util_sum, un += d[k].util_n;
    if (p->html) rep_raw(p, "<p class=\"finding\" id=\"ckpt-finding\">");
    if (worst >= 0) {
        rep_textf(p, "Bottleneck: %s in %u of %zu checkpoints (%.0f %%). Remedy: %s. ", gw_ckpt_diag_name(worst),
                  worst_n, n, 100.0 * worst_n / (double)n, gw_ckpt_remedy(worst));
    } else if (d[GW_CKPT_HEALTHY].saves + d[GW_CKPT_HEALTHY].loads) {
        rep_textf(p, "No bottleneck: %u of %zu checkpoints were healthy, the rest undiagnosed. ",
                  d[GW_CKPT_HEALTHY].saves + d[GW_CKPT_HEALTHY].loads, n);
    } else {
        rep_text(p, "No diagnosis: the NFS clients export no mountstats timing counters. ");
    }
    if (qn) rep_textf(p, "Queue time was %.1f %% of the NFS request time on average", 100.0 * q / qn);
    if (un) rep_textf(p, "%s the links carrying NFS were %.1f %% busy", qn ? ", while" : "Links carrying NFS were",
                      100.0 * u / un);
    if (qn || un) rep_text(p, ".");
    rep_para_end(p);
}

static void diag_table(struct rep *p, const struct diag_count *d)
{
    static const char *const h[] = {"diagnosis", "saves", "loads", "share", "mean queue share",
                                    "mean link utilisation", "remedy"};
    rep_tbl_begin(p, "tbl-ckpt-diag", h, 7);
    for (int k = 0; k < GW_CKPT_DIAG_COUNT_; k++) {
        uint32_t c = d[k].saves + d[k].loads;
        if (!c) continue;
        rep_row(p);
        rep_cell_swatch(p, rep_diag_color(k), gw_ckpt_diag_name(k));
        rep_cellf(p, "%u", d[k].saves);
        rep_cellf(p, "%u", d[k].loads);
        rep_cell_pct(p, (double)c / (double)p->in->n_ckpts);
        rep_cell_pct(p, d[k].queue_n ? d[k].queue_sum / d[k].queue_n : NAN);
        rep_cell_pct(p, d[k].util_n ? d[k].util_sum / d[k].util_n : NAN);
        rep_cell(p, gw_ckpt_remedy(k)[0] ? gw_ckpt_remedy(k) : "-");
    }
    rep_tbl_end(p);
}

void rep_sec_checkpoints(struct rep *p)
{
    rep_section_begin(p, "sec-checkpoints", "Checkpoints");
    size_t n = p->in->n_ckpts;
    if (!n) {
        rep_none(p, "checkpoint events");
        if (p->html) rep_chart_ckpt(p);
        rep_section_end(p);
        return;
    }
    struct diag_count d[GW_CKPT_DIAG_COUNT_];
    count_diags(p, d);
    bottleneck_finding(p, d);
    if (p->html) rep_chart_ckpt(p);
    diag_table(p, d);
    static const char *const h[] = {"start", "phase", "duration", "nodes", "GB moved", "mean GB/s", "peak GB/s",
                                    "link utilisation (mean / max)", "queue share", "diagnosis", "remedy"};
    rep_fold_begin(p, n, "checkpoints");
    rep_tbl_begin(p, "tbl-ckpts", h, 11);
    for (size_t i = 0; i < n; i++) {
        const struct gw_det_ckpt *e = &p->in->ckpts[i];
        rep_row(p);
        rep_cell_time(p, e->t_start);
        rep_cell(p, gw_ckpt_phase_name(e->phase));
        rep_cell_dur(p, e->t_end - e->t_start);
        rep_cellf(p, "%u", e->nodes);
        rep_cell_num(p, e->bytes / GB, 1);
        rep_cell_num(p, e->mean_bps / GB, 2);
        rep_cell_num(p, e->peak_bps / GB, 2);
        if (isfinite(e->link_util))
            rep_cellf(p, "%.1f %% / %.1f %%", 100.0 * e->link_util,
                      100.0 * (isfinite(e->link_util_max) ? e->link_util_max : e->link_util));
        else
            rep_cell(p, "-");
        rep_cell_pct(p, e->queue_share);
        rep_cell_swatch(p, rep_diag_color(e->diag), gw_ckpt_diag_name(e->diag));
        rep_cell(p, gw_ckpt_remedy(e->diag)[0] ? gw_ckpt_remedy(e->diag) : "-");
    }
    rep_tbl_end(p);
    rep_fold_end(p, n);
    rep_section_end(p);
}

/* ----------------------------------------------------- exclusions, lemons */

static void ledger_table(struct rep *p)
{
    const struct gw_led_result *r = p->r;
    static const char *const h[] = {"rank", "node", "score", "failures", "exclusions", "repeats", "MTBF (h)",
                                    "lemon", "excluded now"};
    size_t quiet = 0;
    rep_tbl_begin(p, "tbl-ledger", h, 9);
    for (size_t i = 0; i < r->n_ledger; i++) {
        const struct gw_led_node *l = &r->ledger[i];
        if (!(l->score > 0) && !l->failures && !l->exclusions && !l->excluded) {
            quiet++;
            continue;
        }
        rep_row(p);
        rep_cellf(p, "%u", l->rank);
        rep_cell(p, rep_node(p, l->node));
        rep_cell_num(p, l->score, 2);
        rep_cellf(p, "%u", l->failures);
        rep_cellf(p, "%u", l->exclusions);
        rep_cellf(p, "%u", l->repeats);
        rep_cell_num(p, l->mtbf_h, 1);
        rep_cell(p, l->lemon ? "lemon" : "");
        rep_cell(p, l->excluded ? "yes" : "");
    }
    rep_tbl_end(p);
    if (quiet) {
        rep_para_begin(p);
        rep_textf(p, "%zu nodes without failures or exclusions are not listed.", quiet);
        rep_para_end(p);
    }
}

static void exclusion_evidence(const struct rep *p, const struct gw_led_exclusion *x, char *out, size_t cap)
{
    size_t o = 0;
    out[0] = '\0';
    if (x->failure >= 0 && (size_t)x->failure < p->r->n_failures) {
        const struct gw_led_failure *fl = &p->r->failures[x->failure];
        char t[40];
        rep_fmt_time(fl->t_first, t, sizeof t);
        o += (size_t)snprintf(out, cap, "failure %u at %s (%s): %s", fl->id, t, fl->cls, fl->evidence);
    }
    for (uint32_t i = 0; i < x->n_alert_ids && i < 8 && o < cap; i++)
        o += (size_t)snprintf(out + o, cap - o, "%s%llu", i ? ", " : (o ? "; alerts " : "alerts "),
                              (unsigned long long)x->alert_ids[i]);
}

static void exclusions_table(struct rep *p)
{
    const struct gw_led_result *r = p->r;
    rep_raw(p, p->html ? "<h3>Current exclusions</h3>\n" : "### Current exclusions\n\n");
    if (!r->n_exclusions) {
        rep_none(p, "exclusions");
        return;
    }
    static const char *const h[] = {"node", "source", "since", "until", "action", "reason", "evidence"};
    char ev[GW_ALERT_TEXT_MAX + 256];
    rep_tbl_begin(p, "tbl-exclusions", h, 7);
    for (size_t i = 0; i < r->n_exclusions; i++) {
        const struct gw_led_exclusion *x = &r->exclusions[i];
        rep_row(p);
        rep_cell(p, rep_node(p, x->node));
        rep_cell(p, gw_led_excl_source_name(x->source));
        rep_cell_time(p, x->since);
        if (x->until == GW_LED_NO_TIME) rep_cell(p, "returned by hand");
        else rep_cell_time(p, x->until);
        rep_cell(p, x->action);
        rep_cell(p, x->reason);
        exclusion_evidence(p, x, ev, sizeof ev);
        rep_cell(p, ev[0] ? ev : "-");
    }
    rep_tbl_end(p);
}

void rep_sec_nodes(struct rep *p)
{
    const struct gw_led_result *r = p->r;
    const struct gw_led_stats *s = &r->stats;
    rep_section_begin(p, "sec-nodes", "Exclusions and lemon ranking");
    if (p->html) rep_raw(p, "<p class=\"finding\" id=\"lemon-finding\">");
    if (isfinite(s->top_k_share))
        rep_textf(p, "The top %u of %u nodes took %.1f %% of all exclusions (Gini %.2f over nodes). ",
                  r->cfg.top_k, r->n_nodes, 100.0 * s->top_k_share, isfinite(s->gini) ? s->gini : 0.0);
    else
        rep_text(p, "No exclusions, so no concentration to measure. ");
    rep_textf(p, "A node is a lemon at a decayed failure score of %.2f or more (half-life %.1f d).",
              r->cfg.lemon_score, (double)r->cfg.half_life_ms / 86400000.0);
    rep_para_end(p);
    if (!r->n_ledger) {
        rep_none(p, "ledger entries");
        if (p->html) rep_chart_lemons(p);
    } else {
        if (p->html) rep_chart_lemons(p);
        ledger_table(p);
    }
    exclusions_table(p);
    rep_section_end(p);
}

/* ----------------------------------------------------------------- retries */

static void session_label(const struct rep *p, int32_t s, char *out, size_t cap)
{
    if (s < 0 || (size_t)s >= p->r->n_sessions) snprintf(out, cap, "-");
    else if (p->r->sessions[s].ext_id[0]) snprintf(out, cap, "%s", p->r->sessions[s].ext_id);
    else snprintf(out, cap, "#%d", s);
}

static void recovery_table(struct rep *p)
{
    const struct gw_led_stats *s = &p->r->stats;
    static const char *const h[] = {"recovery", "chains", "succeeded", "success rate"};
    rep_tbl_begin(p, "tbl-recovery", h, 4);
    rep_row(p);
    rep_cell(p, "automatic retry");
    rep_cellf(p, "%u", s->chains_auto);
    rep_cellf(p, "%u", s->chains_auto_ok);
    rep_cell_pct(p, s->chain_success_auto);
    rep_row(p);
    rep_cell(p, "manual");
    rep_cellf(p, "%u", s->chains_manual);
    rep_cellf(p, "%u", s->chains_manual_ok);
    rep_cell_pct(p, s->chain_success_manual);
    rep_tbl_end(p);
}

static void chain_row(struct rep *p, const struct gw_led_chain *c)
{
    char sess[GW_LED_ID + 8];
    rep_row(p);
    rep_cellf(p, "%u", c->id);
    session_label(p, c->failed_session, sess, sizeof sess);
    rep_cell(p, sess);
    rep_cell_time(p, c->t_fail);
    if (c->failure >= 0 && (size_t)c->failure < p->r->n_failures) {
        const struct gw_led_failure *fl = &p->r->failures[c->failure];
        rep_cellf(p, "%s on %s", fl->cls, rep_node(p, fl->node));
    } else {
        rep_cell(p, "-");
    }
    rep_cell(p, c->automatic ? "automatic" : "manual");
    rep_cellf(p, "%u", c->attempts);
    rep_cell(p, c->success ? "recovered" : "not recovered");
    rep_cell_time(p, c->t_recovered);
    rep_cell_dur(p, rep_diff(c->t_recovered, c->t_fail));
    rep_cell_dur(p, c->n_intervals ? c->median_interval_ms : GW_LED_NO_TIME);
}

void rep_sec_retries(struct rep *p)
{
    const struct gw_led_result *r = p->r;
    const struct gw_led_stats *s = &r->stats;
    rep_section_begin(p, "sec-retries", "Retry chains and recovery");
    if (!r->n_chains) {
        rep_none(p, "retry chains");
        if (p->html) rep_chart_retries(p);
        rep_section_end(p);
        return;
    }
    if (p->html) rep_raw(p, "<p class=\"finding\" id=\"retry-finding\">");
    if (isfinite(s->chain_success_auto))
        rep_textf(p, "Automatic retry chains succeeded in %u of %u (%.1f %%) with %u attempts. ", s->chains_auto_ok,
                  s->chains_auto, 100.0 * s->chain_success_auto, s->attempts_auto);
    if (isfinite(s->chain_success_manual))
        rep_textf(p, "Manual recovery succeeded in %u of %u (%.1f %%). ", s->chains_manual_ok, s->chains_manual,
                  100.0 * s->chain_success_manual);
    if (isfinite(s->retry_interval_med_min))
        rep_textf(p, "Median retry interval %.1f min (IQR %.1f-%.1f min).", s->retry_interval_med_min,
                  s->retry_interval_p25_min, s->retry_interval_p75_min);
    rep_para_end(p);
    recovery_table(p);
    if (p->html) rep_chart_retries(p);
    static const char *const h[] = {"chain", "failed session", "failed at", "failure", "recovery", "attempts",
                                    "outcome", "recovered at", "time to recover", "median retry interval"};
    rep_tbl_begin(p, "tbl-chains", h, 10);
    for (size_t i = 0; i < r->n_chains; i++) chain_row(p, &r->chains[i]);
    rep_tbl_end(p);
    rep_section_end(p);
}
