/* src/ledger/report.c - `gpuwatch report`: the ledger's result rendered as
 * GitHub-flavoured Markdown or as one self-contained HTML page (inline CSS
 * and SVG, no script, no external asset).
 *
 * Both formats come from the same section code: a section, paragraph or
 * table helper writes Markdown or HTML depending on rep.html, and every
 * piece of text that comes from data goes through rep_text / rep_cell*,
 * which escape it for the format (HTML entities; in Markdown also the
 * table pipe and the emphasis characters). Sections, tables and charts
 * carry stable ids (sec-*, tbl-*, chart-*; docs/ledger.md lists them) that
 * tests and tests/check_report_html.sh look for.
 *
 * Sections: summary, failures (how each was detected, per class and per
 * detector), checkpoints (report_sec.c), nodes (exclusions, lemon ranking),
 * retries (automatic vs manual recovery), MTBF and goodput. The output is
 * a pure function of the input except the generated_at line. */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/json.h"
#include "gpuwatch/ledger.h"
#include "report_int.h"

/* ------------------------------------------------------------ text output */

void rep_raw(struct rep *p, const char *s)
{
    fputs(s, p->f);
}

void rep_rawf(struct rep *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(p->f, fmt, ap);
    va_end(ap);
}

void rep_html_esc(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* Markdown: entities for what GitHub would read as HTML, a backslash
 * before what it would read as a table pipe or emphasis, newlines as
 * spaces (a table row is one line). */
static void md_esc(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '\n': case '\r': fputc(' ', f); break;
        case '|': case '*': case '_': case '`': case '[': case ']': case '\\':
            fputc('\\', f);
            fputc(*s, f);
            break;
        default: fputc(*s, f);
        }
    }
}

void rep_text(struct rep *p, const char *s)
{
    if (p->html) rep_html_esc(p->f, s);
    else md_esc(p->f, s);
}

void rep_textf(struct rep *p, const char *fmt, ...)
{
    char b[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    rep_text(p, b);
}

void rep_section_begin(struct rep *p, const char *id, const char *title)
{
    if (p->html) {
        rep_rawf(p, "<section id=\"%s\">\n<h2>", id);
        rep_text(p, title);
        rep_raw(p, "</h2>\n");
    } else {
        rep_rawf(p, "\n<a id=\"%s\"></a>\n\n## ", id);
        rep_text(p, title);
        rep_raw(p, "\n\n");
    }
}

void rep_section_end(struct rep *p)
{
    if (p->html) rep_raw(p, "</section>\n");
}

void rep_para_begin(struct rep *p)
{
    if (p->html) rep_raw(p, "<p>");
}

void rep_para_end(struct rep *p)
{
    rep_raw(p, p->html ? "</p>\n" : "\n\n");
}

void rep_none(struct rep *p, const char *what)
{
    char b[128];
    snprintf(b, sizeof b, "%s", what);
    b[0] = (char)toupper((unsigned char)b[0]);
    if (p->html) rep_raw(p, "<p class=\"none\">");
    rep_text(p, b);
    rep_raw(p, ": none in this range.");
    rep_para_end(p);
}

/* ------------------------------------------------------------------ tables */

void rep_tbl_begin(struct rep *p, const char *id, const char *const *headers, int n)
{
    if (p->html) {
        rep_rawf(p, "<div class=\"tw\"><table id=\"%s\">\n<thead><tr>", id);
        for (int i = 0; i < n; i++) {
            rep_raw(p, "<th>");
            rep_text(p, headers[i]);
            rep_raw(p, "</th>");
        }
        rep_raw(p, "</tr></thead>\n<tbody>");
        return;
    }
    rep_rawf(p, "<a id=\"%s\"></a>\n\n|", id);
    for (int i = 0; i < n; i++) {
        rep_raw(p, " ");
        rep_text(p, headers[i]);
        rep_raw(p, " |");
    }
    rep_raw(p, "\n|");
    for (int i = 0; i < n; i++) rep_raw(p, "---|");
    /* the first rep_row ends this line */
}

void rep_row(struct rep *p)
{
    if (p->html) rep_raw(p, "\n<tr>");
    else rep_raw(p, "\n|");
}

void rep_cell(struct rep *p, const char *s)
{
    if (p->html) {
        rep_raw(p, s && strlen(s) > 40 ? "<td class=\"w\">" : "<td>");
        rep_text(p, s);
        rep_raw(p, "</td>");
    } else {
        rep_raw(p, " ");
        rep_text(p, s && *s ? s : " ");
        rep_raw(p, " |");
    }
}

void rep_cellf(struct rep *p, const char *fmt, ...)
{
    char b[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    rep_cell(p, b);
}

void rep_cell_time(struct rep *p, int64_t t)
{
    char b[40];
    rep_fmt_time(t, b, sizeof b);
    rep_cell(p, b);
}

void rep_cell_dur(struct rep *p, int64_t ms)
{
    char b[40];
    rep_fmt_dur(ms, b, sizeof b);
    rep_cell(p, b);
}

void rep_cell_num(struct rep *p, double v, int decimals)
{
    if (!isfinite(v)) rep_cell(p, "-");
    else rep_cellf(p, "%.*f", decimals, v);
}

void rep_cell_pct(struct rep *p, double share)
{
    if (!isfinite(share)) rep_cell(p, "-");
    else rep_cellf(p, "%.1f %%", share * 100.0);
}

void rep_cell_swatch(struct rep *p, const char *color, const char *s)
{
    if (!p->html) {
        rep_cell(p, s);
        return;
    }
    rep_rawf(p, "<td><span class=\"sw\" style=\"background:%s\"></span>", color);
    rep_text(p, s);
    rep_raw(p, "</td>");
}

void rep_tbl_end(struct rep *p)
{
    rep_raw(p, p->html ? "\n</tbody></table></div>\n" : "\n\n");
}

void rep_fold_begin(struct rep *p, size_t rows, const char *what)
{
    if (!p->html || rows <= REP_FOLD_ROWS) return;
    rep_rawf(p, "<details><summary>All %zu ", rows);
    rep_text(p, what);
    rep_raw(p, "</summary>\n");
}

void rep_fold_end(struct rep *p, size_t rows)
{
    if (p->html && rows > REP_FOLD_ROWS) rep_raw(p, "</details>\n");
}

/* ------------------------------------------------------------------ values */

void rep_fmt_time(int64_t t, char *out, size_t cap)
{
    if (t == GW_LED_NO_TIME) snprintf(out, cap, "-");
    else gw_format_rfc3339_s(t, out, cap);
}

void rep_fmt_dur(int64_t ms, char *out, size_t cap)
{
    if (ms == GW_LED_NO_TIME) {
        snprintf(out, cap, "-");
        return;
    }
    const char *sign = ms < 0 ? "-" : "";
    uint64_t s = (uint64_t)(ms < 0 ? -(ms / 1000) : ms / 1000);
    if (s < 60) snprintf(out, cap, "%s%us", sign, (unsigned)s);
    else if (s < 3600) snprintf(out, cap, "%s%um %02us", sign, (unsigned)(s / 60), (unsigned)(s % 60));
    else if (s < 86400) snprintf(out, cap, "%s%uh %02um", sign, (unsigned)(s / 3600), (unsigned)(s % 3600 / 60));
    else snprintf(out, cap, "%s%ud %02uh", sign, (unsigned)(s / 86400), (unsigned)(s % 86400 / 3600));
}

int64_t rep_diff(int64_t a, int64_t b)
{
    if (a == GW_LED_NO_TIME || b == GW_LED_NO_TIME) return GW_LED_NO_TIME;
    return a - b;
}

const char *rep_node(const struct rep *p, uint32_t node)
{
    if (node >= p->r->n_nodes || !p->r->nodes || !p->r->nodes[node]) return "?";
    return p->r->nodes[node];
}

static const char *const rep_palette[REP_MAX_CLASSES] = {
    "#e63946", "#457b9d", "#f4a261", "#2a9d8f", "#9b5de5", "#e9c46a", "#f15bb5", "#00bbf9",
    "#8d99ae", "#6a994e", "#bc4749", "#3a86ff", "#fb8500", "#606c38", "#b5838d", "#264653",
};

const char *rep_class_color(const struct rep *p, const char *cls)
{
    for (uint32_t i = 0; i < p->n_classes; i++)
        if (!strcmp(p->classes[i], cls)) return rep_palette[i];
    return "#555555";
}

const char *rep_diag_color(int diag)
{
    switch (diag) {
    case GW_CKPT_HEALTHY: return "#2a9d8f";
    case GW_CKPT_SLOTS: return "#e63946";
    case GW_CKPT_SERVER: return "#f4a261";
    case GW_CKPT_LINK: return "#9b5de5";
    default: return "#8d99ae";
    }
}

const char *rep_outcome_color(enum gw_led_outcome o)
{
    switch (o) {
    case GW_LED_COMPLETED: return "#2a9d8f";
    case GW_LED_FAILED: return "#e63946";
    case GW_LED_STARTUP_FAILED: return "#f4a261";
    case GW_LED_RUNNING: return "#457b9d";
    }
    return "#8d99ae";
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

/* The failure classes present, sorted, so a class keeps its colour
 * whatever the order of the failures. */
static void collect_classes(struct rep *p)
{
    const struct gw_led_result *r = p->r;
    for (size_t i = 0; i < r->n_failures; i++) {
        const char *c = r->failures[i].cls;
        int seen = 0;
        for (uint32_t k = 0; k < p->n_classes && !seen; k++) seen = !strcmp(p->classes[k], c);
        if (!seen && p->n_classes < REP_MAX_CLASSES)
            snprintf(p->classes[p->n_classes++], sizeof p->classes[0], "%s", c);
    }
    led_qsort(p->classes, p->n_classes, sizeof p->classes[0], cmp_str);
}

/* The charts' time axis: the range analysed, else what the data spans. */
static void time_axis(struct rep *p)
{
    const struct gw_led_result *r = p->r;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
#define SPAN(t)                                                                                                \
    do {                                                                                                       \
        int64_t t_ = (t);                                                                                      \
        if (t_ != GW_LED_NO_TIME) {                                                                            \
            if (t_ < lo) lo = t_;                                                                              \
            if (t_ > hi) hi = t_;                                                                              \
        }                                                                                                      \
    } while (0)
    for (size_t i = 0; i < r->n_sessions; i++) {
        SPAN(r->sessions[i].t_start);
        SPAN(r->sessions[i].t_end);
    }
    for (size_t i = 0; i < r->n_failures; i++) SPAN(r->failures[i].t_first);
    for (size_t i = 0; i < r->n_chains; i++) SPAN(r->chains[i].t_fail);
    for (size_t i = 0; i < p->in->n_ckpts; i++) SPAN(p->in->ckpts[i].t_start);
#undef SPAN
    if (r->to > r->from && r->from != GW_LED_NO_TIME && r->from > 0) {
        lo = r->from;
        hi = r->to;
    }
    if (lo > hi) lo = hi = 0;
    if (hi - lo < 60000) hi = lo + 60000;
    p->t0 = lo;
    p->t1 = hi;
}

/* ------------------------------------------------------------------ summary */

static void kpi(struct rep *p, const char *label, const char *value)
{
    rep_raw(p, "<div class=\"kpi\"><div class=\"v\">");
    rep_text(p, value);
    rep_raw(p, "</div><div class=\"l\">");
    rep_text(p, label);
    rep_raw(p, "</div></div>");
}

static void fmt_num(double v, int decimals, const char *unit, char *out, size_t cap)
{
    if (!isfinite(v)) snprintf(out, cap, "-");
    else snprintf(out, cap, "%.*f%s", decimals, v, unit);
}

static uint32_t count_lemons(const struct gw_led_result *r, uint32_t *excluded)
{
    uint32_t n = 0;
    *excluded = 0;
    for (size_t i = 0; i < r->n_ledger; i++) {
        n += r->ledger[i].lemon != 0;
        *excluded += r->ledger[i].excluded != 0;
    }
    return n;
}

static void kv_row(struct rep *p, const char *key)
{
    rep_row(p);
    rep_cell(p, key);
}

static void sec_summary(struct rep *p)
{
    const struct gw_led_result *r = p->r;
    const struct gw_led_stats *s = &r->stats;
    char from[40], to[40], gp[32], mtbf[32], lost[32], chains[64];
    rep_fmt_time(r->from, from, sizeof from);
    rep_fmt_time(r->to, to, sizeof to);
    fmt_num(s->goodput * 100.0, 1, " %", gp, sizeof gp);
    fmt_num(s->fleet_mtbf_h, 1, " h", mtbf, sizeof mtbf);
    fmt_num(s->gpu_hours_lost, 1, "", lost, sizeof lost);
    uint32_t excl_now, lemons = count_lemons(r, &excl_now);
    rep_section_begin(p, "sec-summary", "Summary");
    if (p->html) {
        char b[32];
        rep_raw(p, "<div class=\"kpis\" id=\"kpis\">");
        snprintf(b, sizeof b, "%u", s->failures);
        kpi(p, "failures", b);
        kpi(p, "goodput", gp);
        kpi(p, "fleet MTBF", mtbf);
        kpi(p, "GPU-hours lost", lost);
        snprintf(b, sizeof b, "%zu", r->n_sessions);
        kpi(p, "sessions", b);
        snprintf(b, sizeof b, "%u", excl_now);
        kpi(p, "nodes excluded now", b);
        rep_raw(p, "</div>\n");
    }
    static const char *const h[] = {"what", "value"};
    rep_tbl_begin(p, "tbl-summary", h, 2);
    kv_row(p, "range");
    rep_cellf(p, "%s .. %s", from, to);
    kv_row(p, "nodes");
    rep_cellf(p, "%u (%u with hardware failures)", r->n_nodes, s->hw_nodes);
    kv_row(p, "sessions");
    rep_cellf(p, "%zu: %u completed, %u failed, %u failed at start-up, %u running", r->n_sessions, s->completed,
              s->failed, s->startup_failed, s->running);
    kv_row(p, "failures");
    rep_cellf(p, "%zu", r->n_failures);
    kv_row(p, "goodput");
    rep_cell(p, gp);
    kv_row(p, "GPU-hours (training / lost / observed)");
    rep_cellf(p, "%.1f / %s / %.1f", s->gpu_hours_train, lost, s->gpu_hours_total);
    kv_row(p, "fleet MTBF");
    rep_cell(p, mtbf);
    snprintf(chains, sizeof chains, "%zu (%u automatic, %u manual)", r->n_chains, s->chains_auto, s->chains_manual);
    kv_row(p, "retry chains");
    rep_cell(p, chains);
    kv_row(p, "checkpoints");
    rep_cellf(p, "%zu", p->in->n_ckpts);
    kv_row(p, "lemon nodes / excluded now");
    rep_cellf(p, "%u / %u", lemons, excl_now);
    rep_tbl_end(p);
    rep_section_end(p);
}

/* ----------------------------------------------------------------- failures */

/* The failure's critical alert that fired first (its evidence ids looked
 * up in the alert log), NULL when the log does not have them. */
static const struct gw_alert *first_critical(const struct rep *p, const struct gw_led_failure *fl)
{
    const struct gw_alert *best = NULL;
    for (uint32_t k = 0; k < fl->n_alert_ids && k < 8; k++)
        for (size_t i = 0; i < p->in->n_alerts; i++) {
            const struct gw_alert *a = &p->in->alerts[i];
            if (a->id != fl->alert_ids[k] || a->severity != GW_SEV_CRITICAL || a->fired_at == INT64_MIN) continue;
            if (!best || a->fired_at < best->fired_at) best = a;
        }
    return best;
}

static void failure_row(struct rep *p, const struct gw_led_failure *fl)
{
    char act[GW_LED_TEXT + 48];
    rep_row(p);
    rep_cell_time(p, fl->t_first);
    rep_cell(p, rep_node(p, fl->node));
    if (fl->gpu >= 0) rep_cellf(p, "%d", fl->gpu);
    else rep_cell(p, "node");
    rep_cell_swatch(p, rep_class_color(p, fl->cls), fl->cls);
    if (fl->xid) rep_cellf(p, "%u", fl->xid);
    else rep_cell(p, "-");
    const struct gw_alert *first = first_critical(p, fl);
    if (first && strcmp(first->alertname, fl->alertname) != 0)
        rep_cellf(p, "%s %s (first: %s %s)", fl->detector, fl->alertname, first->detector, first->alertname);
    else
        rep_cellf(p, "%s %s", fl->detector, fl->alertname);
    rep_cell_dur(p, rep_diff(fl->t_xid, fl->t_detect));
    rep_cell_dur(p, rep_diff(fl->t_detect, fl->t_first));
    rep_cell_dur(p, rep_diff(fl->t_session_end, fl->t_detect));
    rep_cell_dur(p, rep_diff(fl->t_next_steady, fl->t_detect));
    rep_cell_num(p, fl->lost_gpu_hours, 1);
    if (fl->escalation[0]) snprintf(act, sizeof act, "%s (escalated: %s)", fl->action, fl->escalation);
    else if (fl->repeat > 1) snprintf(act, sizeof act, "%s (repeat %u)", fl->action, fl->repeat);
    else snprintf(act, sizeof act, "%s", fl->action);
    rep_cell(p, act);
}

struct cls_count {
    char name[32];
    uint32_t n, escalated, with_xid, before_xid;
    double lost;
};

static void per_class(struct rep *p)
{
    const struct gw_led_result *r = p->r;
    struct cls_count c[REP_MAX_CLASSES + 1];
    memset(c, 0, sizeof c);
    uint32_t n = p->n_classes;
    for (uint32_t i = 0; i < n; i++) snprintf(c[i].name, sizeof c[i].name, "%s", p->classes[i]);
    snprintf(c[n].name, sizeof c[n].name, "(other)");
    for (size_t i = 0; i < r->n_failures; i++) {
        const struct gw_led_failure *fl = &r->failures[i];
        uint32_t k = 0;
        while (k < n && strcmp(c[k].name, fl->cls)) k++;
        c[k].n++;
        c[k].escalated += fl->escalation[0] != '\0';
        c[k].with_xid += fl->t_xid != GW_LED_NO_TIME;
        c[k].before_xid += fl->t_xid != GW_LED_NO_TIME && fl->t_detect != GW_LED_NO_TIME && fl->t_detect < fl->t_xid;
    }
    /* GPU-hours lost per class: the fleet figures (stats.causes), which
     * count every failed session's loss by the class of its failure */
    for (uint32_t k = 0; k < n; k++)
        for (uint32_t i = 0; i < r->stats.n_causes && i < 16; i++)
            if (!strcmp(c[k].name, r->stats.causes[i].cls)) c[k].lost += r->stats.causes[i].lost_gpu_hours;
    rep_raw(p, p->html ? "<h3>Per class</h3>\n" : "### Per class\n\n");
    static const char *const h[] = {"class", "failures", "with XID", "detected before the XID", "escalated",
                                    "GPU-hours lost"};
    rep_tbl_begin(p, "tbl-fail-class", h, 6);
    for (uint32_t k = 0; k <= n; k++) {
        if (!c[k].n) continue;
        rep_row(p);
        rep_cell_swatch(p, rep_class_color(p, c[k].name), c[k].name);
        rep_cellf(p, "%u", c[k].n);
        rep_cellf(p, "%u", c[k].with_xid);
        rep_cellf(p, "%u", c[k].before_xid);
        rep_cellf(p, "%u", c[k].escalated);
        rep_cell_num(p, c[k].lost, 1);
    }
    rep_tbl_end(p);
}

struct det_count {
    char name[8];
    uint32_t alerts, critical, failures;
};

static struct det_count *det_slot(struct det_count *d, uint32_t *n, uint32_t cap, const char *name)
{
    for (uint32_t i = 0; i < *n; i++)
        if (!strcmp(d[i].name, name)) return &d[i];
    if (*n == cap) return NULL;
    memset(&d[*n], 0, sizeof d[0]);
    snprintf(d[*n].name, sizeof d[0].name, "%s", name[0] ? name : "-");
    return &d[(*n)++];
}

static int cmp_det(const void *a, const void *b)
{
    return strcmp(((const struct det_count *)a)->name, ((const struct det_count *)b)->name);
}

static void per_detector(struct rep *p)
{
    struct det_count d[32];
    uint32_t n = 0;
    for (size_t i = 0; i < p->in->n_alerts; i++) {
        const struct gw_alert *a = &p->in->alerts[i];
        struct det_count *s = det_slot(d, &n, 32, a->detector);
        if (!s) continue;
        s->alerts++;
        s->critical += a->severity == GW_SEV_CRITICAL;
    }
    for (size_t i = 0; i < p->r->n_failures; i++) {
        struct det_count *s = det_slot(d, &n, 32, p->r->failures[i].detector);
        if (s) s->failures++;
    }
    rep_raw(p, p->html ? "<h3>Per detector</h3>\n" : "### Per detector\n\n");
    if (!n) {
        rep_none(p, "alerts");
        return;
    }
    led_qsort(d, n, sizeof d[0], cmp_det);
    static const char *const h[] = {"detector", "alerts", "critical alerts", "failures it defined"};
    rep_tbl_begin(p, "tbl-fail-detector", h, 4);
    for (uint32_t i = 0; i < n; i++) {
        rep_row(p);
        rep_cell(p, d[i].name);
        rep_cellf(p, "%u", d[i].alerts);
        rep_cellf(p, "%u", d[i].critical);
        rep_cellf(p, "%u", d[i].failures);
    }
    rep_tbl_end(p);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* "Of N failures with an XID, K were detected before it (median lead M)." */
static void lead_finding(struct rep *p)
{
    const struct gw_led_result *r = p->r;
    int64_t *leads = malloc((r->n_failures ? r->n_failures : 1) * sizeof *leads);
    size_t n = 0, with_xid = 0;
    for (size_t i = 0; i < r->n_failures; i++) {
        const struct gw_led_failure *fl = &r->failures[i];
        if (fl->t_xid == GW_LED_NO_TIME || fl->t_detect == GW_LED_NO_TIME) continue;
        with_xid++;
        if (fl->t_detect < fl->t_xid && leads) leads[n++] = fl->t_xid - fl->t_detect;
    }
    rep_para_begin(p);
    rep_textf(p, "%zu failures on %u nodes. ", r->n_failures, r->stats.hw_nodes);
    if (with_xid) {
        char med[40] = "-";
        if (n) {
            led_qsort(leads, n, sizeof leads[0], cmp_i64);
            rep_fmt_dur(leads[n / 2], med, sizeof med);
        }
        rep_textf(p, "Of the %zu with an XID, %zu %s detected before the XID (median lead time %s). ", with_xid, n,
                  n == 1 ? "was" : "were", med);
    }
    rep_text(p, "Lead = XID time minus detection (critical alert) time; delay = detection minus the first "
                "warning; the last two durations run from detection.");
    rep_para_end(p);
    free(leads);
}

static void sec_failures(struct rep *p)
{
    const struct gw_led_result *r = p->r;
    rep_section_begin(p, "sec-failures", "Failures and how each was detected");
    if (!r->n_failures) {
        rep_none(p, "failures");
        if (p->html) rep_chart_timeline(p);
        per_detector(p);
        rep_section_end(p);
        return;
    }
    lead_finding(p);
    if (p->html) rep_chart_timeline(p);
    static const char *const h[] = {"time", "node", "GPU", "class", "XID", "detector / alert", "lead before XID",
                                    "delay", "to session end", "to next steady training", "GPU-h lost",
                                    "action"};
    rep_tbl_begin(p, "tbl-failures", h, 12);
    for (size_t i = 0; i < r->n_failures; i++) failure_row(p, &r->failures[i]);
    rep_tbl_end(p);
    per_class(p);
    per_detector(p);
    rep_section_end(p);
}

/* ------------------------------------------------------------ MTBF, goodput */

static int cmp_node_name(const void *a, const void *b, void *ud)
{
    const struct rep *p = ud;
    const struct gw_led_node *x = a, *y = b;
    return strcmp(rep_node(p, x->node), rep_node(p, y->node));
}

static void mtbf_table(struct rep *p)
{
    const struct gw_led_result *r = p->r;
    rep_raw(p, p->html ? "<h3>MTBF per node</h3>\n" : "### MTBF per node\n\n");
    struct gw_led_node *v = r->n_ledger ? malloc(r->n_ledger * sizeof *v) : NULL;
    if (!v) {
        rep_none(p, "nodes with activity data");
        return;
    }
    memcpy(v, r->ledger, r->n_ledger * sizeof *v);
    qsort_r(v, r->n_ledger, sizeof *v, cmp_node_name, p);
    static const char *const h[] = {"node", "hours observed", "failures", "MTBF (h)"};
    rep_fold_begin(p, r->n_ledger, "nodes");
    rep_tbl_begin(p, "tbl-mtbf", h, 4);
    for (size_t i = 0; i < r->n_ledger; i++) {
        rep_row(p);
        rep_cell(p, rep_node(p, v[i].node));
        rep_cell_num(p, v[i].hours_observed, 1);
        rep_cellf(p, "%u", v[i].failures);
        if (isinf(v[i].mtbf_h) && !v[i].failures) rep_cell(p, "no failure");
        else rep_cell_num(p, v[i].mtbf_h, 1);
    }
    rep_tbl_end(p);
    rep_fold_end(p, r->n_ledger);
    free(v);
}

static void sec_goodput(struct rep *p)
{
    const struct gw_led_stats *s = &p->r->stats;
    rep_section_begin(p, "sec-goodput", "MTBF, goodput and GPU-hours lost per cause");
    rep_para_begin(p);
    if (isfinite(s->goodput))
        rep_textf(p, "Goodput %.1f %%: %.1f GPU-hours of training against %.1f lost to failures. ",
                  s->goodput * 100.0, s->gpu_hours_train, s->gpu_hours_lost);
    else
        rep_text(p, "Goodput unknown (no training observed). ");
    if (isfinite(s->fleet_mtbf_h) && s->failures)
        rep_textf(p, "Fleet MTBF %.1f h (node-hours observed per hardware failure).", s->fleet_mtbf_h);
    else
        rep_text(p, "Fleet MTBF: no hardware failure in this range.");
    rep_para_end(p);
    rep_raw(p, p->html ? "<h3>GPU-hours lost per cause</h3>\n" : "### GPU-hours lost per cause\n\n");
    if (!s->n_causes) {
        rep_none(p, "GPU-hours lost");
    } else {
        if (p->html) rep_chart_causes(p);
        static const char *const h[] = {"cause", "failures", "GPU-hours lost", "share of lost"};
        rep_tbl_begin(p, "tbl-causes", h, 4);
        for (uint32_t i = 0; i < s->n_causes && i < 16; i++) {
            const struct gw_led_cause *c = &s->causes[i];
            rep_row(p);
            rep_cell_swatch(p, rep_class_color(p, c->cls), c->cls);
            rep_cellf(p, "%u", c->failures);
            rep_cell_num(p, c->lost_gpu_hours, 1);
            rep_cell_pct(p, s->gpu_hours_lost > 0 ? c->lost_gpu_hours / s->gpu_hours_lost : NAN);
        }
        rep_tbl_end(p);
    }
    mtbf_table(p);
    rep_section_end(p);
}

/* --------------------------------------------------------------- the page */

static const char rep_css[] =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0;color:#1d2433;"
    "background:#f5f6f8}\n"
    "header{background:#1d3557;color:#fff;padding:18px 32px}header h1{margin:0 0 4px;font-size:22px}\n"
    "header .sub{opacity:.8;font-size:13px}nav{margin-top:10px}nav a{color:#a8dadc;margin-right:14px;"
    "text-decoration:none;font-size:13px}\n"
    "main{max-width:1320px;margin:0 auto;padding:8px 24px 40px}\n"
    "section{background:#fff;border-radius:8px;box-shadow:0 1px 3px rgba(0,0,0,.08);margin:18px 0;"
    "padding:6px 22px 18px}\n"
    "h2{font-size:18px;border-bottom:2px solid #e9ecef;padding-bottom:6px}h3{font-size:15px;margin-top:22px}\n"
    ".kpis{display:flex;flex-wrap:wrap;gap:12px;margin:10px 0 16px}.kpi{flex:1 1 150px;background:#f1faee;"
    "border-radius:6px;padding:10px 14px}\n"
    ".kpi .v{font-size:24px;font-weight:600;color:#1d3557}.kpi .l{font-size:12px;color:#555}\n"
    ".tw{overflow-x:auto}table{border-collapse:collapse;font-size:12.5px;margin:6px 0 12px}\n"
    "th{background:#edf2f7;text-align:left;padding:5px 8px;vertical-align:bottom}td{padding:4px 8px;"
    "border-top:1px solid #edf0f3;vertical-align:top;white-space:nowrap}td.w{white-space:normal;min-width:200px}\n"
    "tbody tr:nth-child(even){background:#fafbfc}.sw{display:inline-block;width:9px;height:9px;"
    "border-radius:50%;margin-right:5px}\n"
    "summary{cursor:pointer;color:#1d3557;margin:6px 0}.none{color:#6c757d;font-style:italic}.finding{background:#fff8e1;border-left:4px solid #f4a261;"
    "padding:8px 12px}\n"
    "svg.chart{width:100%;height:auto;display:block;margin:8px 0 14px;background:#fff}\n"
    "svg text{font:11px system-ui,sans-serif;fill:#333}svg .ax{stroke:#adb5bd;stroke-width:1}"
    "svg .grid{stroke:#e9ecef;stroke-width:1}\n"
    "footer{color:#6c757d;font-size:12px;text-align:center;padding:10px}\n";

static const char *const rep_nav[][2] = {
    {"sec-summary", "Summary"},       {"sec-failures", "Failures"}, {"sec-checkpoints", "Checkpoints"},
    {"sec-nodes", "Exclusions and lemons"}, {"sec-retries", "Retries"},  {"sec-goodput", "MTBF and goodput"},
};

static void page_begin(struct rep *p, const char *title)
{
    char from[40], to[40], gen[40];
    rep_fmt_time(p->r->from, from, sizeof from);
    rep_fmt_time(p->r->to, to, sizeof to);
    rep_fmt_time(p->in->generated_at, gen, sizeof gen);
    if (!p->html) {
        rep_raw(p, "# ");
        rep_text(p, title);
        rep_rawf(p, "\n\nRange %s .. %s, %u nodes.\n\ngenerated_at: %s\n", from, to, p->r->n_nodes, gen);
        return;
    }
    rep_raw(p, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
               "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n<title>");
    rep_text(p, title);
    rep_rawf(p, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<header>\n<h1 id=\"title\">", rep_css);
    rep_text(p, title);
    rep_rawf(p, "</h1>\n<div class=\"sub\">Range %s .. %s, %u nodes</div>\n<nav>", from, to, p->r->n_nodes);
    for (size_t i = 0; i < sizeof rep_nav / sizeof rep_nav[0]; i++)
        rep_rawf(p, "<a href=\"#%s\">%s</a>", rep_nav[i][0], rep_nav[i][1]);
    rep_raw(p, "</nav>\n</header>\n<main>\n");
}

static void page_end(struct rep *p)
{
    char gen[40];
    rep_fmt_time(p->in->generated_at, gen, sizeof gen);
    if (p->html)
        rep_rawf(p, "</main>\n<footer>gpuwatch report, generated_at: %s</footer>\n</body>\n</html>\n", gen);
}

int gw_led_report(FILE *f, const struct gw_led_report_in *in, enum gw_led_format fmt, struct gw_error *err)
{
    if (!f || !in || !in->r || (fmt != GW_LED_MD && fmt != GW_LED_HTML))
        return gw_error_set(err, GW_EINVAL, "report: no output, no result or an unknown format");
    struct rep p = {.f = f, .html = fmt == GW_LED_HTML, .in = in, .r = in->r};
    collect_classes(&p);
    time_axis(&p);
    page_begin(&p, in->title && in->title[0] ? in->title : "gpuwatch report");
    sec_summary(&p);
    sec_failures(&p);
    rep_sec_checkpoints(&p);
    rep_sec_nodes(&p);
    rep_sec_retries(&p);
    sec_goodput(&p);
    page_end(&p);
    if (fflush(f) != 0 || ferror(f)) return gw_error_set(err, GW_EIO, "report: cannot write the output");
    return GW_OK;
}
