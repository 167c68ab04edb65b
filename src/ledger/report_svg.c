/* src/ledger/report_svg.c - the inline SVG charts of the HTML report:
 * chart-timeline (failures and exclusions per node over time, sessions as
 * a band on top), chart-lemons (the lemon ranking), chart-ckpt (checkpoint
 * throughput against the link capacity), chart-retries (retry chains as
 * rows of attempts) and chart-causes (GPU-hours lost per cause).
 *
 * Every chart is an <svg class="chart" id=...> with a viewBox (it scales
 * to the page), a <title>, and a <title> on each mark so a browser shows
 * the details on hover without any script. Coordinates are printed with
 * one decimal, so the same input gives the same bytes. An empty chart
 * still draws its frame and says "none in this range". */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuwatch/detect.h"
#include "gpuwatch/ledger.h"
#include "report_int.h"

#define W 1200.0                 /* viewBox width of every chart */
#define LABEL_W 170.0            /* left margin for row labels */
#define RIGHT_W 30.0
#define MAX_ROWS 60              /* node rows / chains drawn at most */

struct tscale {
    int64_t t0, t1;
    double x0, x1;
};

static double tx(const struct tscale *s, int64_t t)
{
    if (t < s->t0) t = s->t0;
    if (t > s->t1) t = s->t1;
    return s->x0 + (double)(t - s->t0) * (s->x1 - s->x0) / (double)(s->t1 - s->t0);
}

static void svg_open(struct rep *p, const char *id, double h, const char *label)
{
    rep_rawf(p, "<svg id=\"%s\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %.0f %.0f\" "
                "role=\"img\" aria-label=\"",
             id, W, h);
    rep_html_esc(p->f, label);
    rep_raw(p, "\"><title>");
    rep_html_esc(p->f, label);
    rep_rawf(p, "</title>\n<rect class=\"frame\" x=\"0.5\" y=\"0.5\" width=\"%.0f\" height=\"%.0f\" fill=\"#fff\" "
                "stroke=\"#e9ecef\"/>\n",
             W - 1, h - 1);
}

static void svg_text(struct rep *p, double x, double y, const char *anchor, const char *s)
{
    rep_rawf(p, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">", x, y, anchor);
    rep_html_esc(p->f, s);
    rep_raw(p, "</text>\n");
}

static void svg_none(struct rep *p, double h)
{
    svg_text(p, W / 2, h / 2, "middle", "none in this range");
    rep_raw(p, "</svg>\n");
}

/* A legend entry at (x, y): a dot (shape 0), a square (1) or a dashed line
 * (2) and its text; returns the x of the next entry. */
static double legend(struct rep *p, double x, double y, const char *color, int shape, const char *s)
{
    if (shape == 0) rep_rawf(p, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\"/>", x + 5, y - 4, color);
    else if (shape == 1)
        rep_rawf(p, "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"10\" fill=\"%s\"/>", x, y - 9, color);
    else
        rep_rawf(p, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\" "
                    "stroke-dasharray=\"6 3\"/>",
                 x - 4, y - 4, x + 14, y - 4, color);
    svg_text(p, x + 16, y, "start", s);
    return x + 30 + 6.5 * (double)strlen(s);
}

/* Vertical grid lines and UTC labels along a time axis at y_label. */
static void time_grid(struct rep *p, const struct tscale *s, double y_top, double y_bot)
{
    static const int64_t steps[] = {60000,    300000,    900000,    1800000,    3600000,    10800000,
                                    21600000, 43200000,  86400000,  172800000,  604800000,  1209600000,
                                    2592000000LL, 7776000000LL, 31536000000LL};
    int64_t span = s->t1 - s->t0, step = steps[0];
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        step = steps[i];
        if (span / step <= 8) break;
    }
    int64_t t = s->t0 - (s->t0 % step + step) % step;
    if (t < s->t0) t += step;
    rep_rawf(p, "<line class=\"ax\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", s->x0, y_bot, s->x1, y_bot);
    for (; t <= s->t1; t += step) {
        double x = tx(s, t);
        char b[32];
        time_t tt = (time_t)(t / 1000);
        struct tm tm;
        gmtime_r(&tt, &tm);
        strftime(b, sizeof b, step >= 86400000 ? "%m-%d" : "%m-%d %H:%M", &tm);
        rep_rawf(p, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x, y_top, x, y_bot);
        svg_text(p, x, y_bot + 14, x > s->x1 - 35 ? "end" : x < s->x0 + 35 ? "start" : "middle", b);
    }
}

/* ------------------------------------------------------------------ timeline */

static int node_has_events(const struct rep *p, uint32_t node)
{
    const struct gw_led_result *r = p->r;
    for (size_t i = 0; i < r->n_failures; i++)
        if (r->failures[i].node == node) return 1;
    for (size_t i = 0; i < r->n_exclusions; i++)
        if (r->exclusions[i].node == node) return 1;
    return 0;
}

/* The nodes with failures or exclusions, worst (ledger rank) first. */
static size_t timeline_rows(const struct rep *p, uint32_t *rows, size_t cap)
{
    const struct gw_led_result *r = p->r;
    size_t n = 0;
    for (size_t i = 0; i < r->n_ledger && n < cap; i++)
        if (node_has_events(p, r->ledger[i].node)) rows[n++] = r->ledger[i].node;
    for (uint32_t node = 0; node < r->n_nodes && n < cap; node++) {
        int seen = 0;
        for (size_t k = 0; k < n && !seen; k++) seen = rows[k] == node;
        if (!seen && node_has_events(p, node)) rows[n++] = node;
    }
    return n;
}

#define LANES 6
/* The lane of a session: the first whose last session ended before it
 * starts (the last lane when all are busy). */
static int session_lane(int64_t lane_end[LANES], const struct gw_led_session *se, int64_t t1)
{
    int lane = LANES - 1;
    for (int k = 0; k < LANES; k++)
        if (lane_end[k] < se->t_start) {
            lane = k;
            break;
        }
    lane_end[lane] = se->t_end == GW_LED_NO_TIME ? t1 : se->t_end;
    return lane;
}

static int session_lanes(const struct rep *p)
{
    int64_t lane_end[LANES];
    int n = 1;
    for (int i = 0; i < LANES; i++) lane_end[i] = INT64_MIN;
    for (size_t i = 0; i < p->r->n_sessions; i++) {
        int l = session_lane(lane_end, &p->r->sessions[i], p->t1);
        if (l + 1 > n) n = l + 1;
    }
    return n;
}

/* Sessions as bars in lanes, coloured by outcome. */
static void session_band(struct rep *p, const struct tscale *s, double y)
{
    const struct gw_led_result *r = p->r;
    int64_t lane_end[LANES];
    for (int i = 0; i < LANES; i++) lane_end[i] = INT64_MIN;
    svg_text(p, LABEL_W - 8, y + 12, "end", "sessions");
    for (size_t i = 0; i < r->n_sessions; i++) {
        const struct gw_led_session *se = &r->sessions[i];
        int64_t end = se->t_end == GW_LED_NO_TIME ? s->t1 : se->t_end;
        int lane = session_lane(lane_end, se, s->t1);
        double x0 = tx(s, se->t_start), x1 = tx(s, end);
        char t0[40], t1[40];
        rep_fmt_time(se->t_start, t0, sizeof t0);
        rep_fmt_time(se->t_end, t1, sizeof t1);
        rep_rawf(p, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"7\" rx=\"2\" fill=\"%s\" opacity=\"0.85\">"
                    "<title>",
                 x0, y + 4 + lane * 9.0, x1 - x0 < 1.5 ? 1.5 : x1 - x0, rep_outcome_color(se->outcome));
        rep_rawf(p, "session %s%s%u: %s .. %s, %u nodes, %s", se->ext_id, se->ext_id[0] ? " " : "#", se->id, t0, t1,
                 se->n_nodes, gw_led_outcome_name(se->outcome));
        rep_raw(p, "</title></rect>\n");
    }
}

static void timeline_marks(struct rep *p, const struct tscale *s, uint32_t node, double y)
{
    const struct gw_led_result *r = p->r;
    char a[40], b[40];
    for (size_t i = 0; i < r->n_exclusions; i++) {
        const struct gw_led_exclusion *x = &r->exclusions[i];
        if (x->node != node) continue;
        double x0 = tx(s, x->since), x1 = tx(s, x->until == GW_LED_NO_TIME ? s->t1 : x->until);
        rep_fmt_time(x->since, a, sizeof a);
        rep_rawf(p, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"14\" fill=\"#adb5bd\" opacity=\"0.45\">"
                    "<title>excluded since %s (%s): ",
                 x0, y - 7, x1 - x0 < 2 ? 2 : x1 - x0, a, gw_led_excl_source_name(x->source));
        rep_html_esc(p->f, x->reason);
        rep_raw(p, "</title></rect>\n");
    }
    for (size_t i = 0; i < r->n_failures; i++) {
        const struct gw_led_failure *fl = &r->failures[i];
        if (fl->node != node) continue;
        rep_fmt_time(fl->t_first, a, sizeof a);
        rep_fmt_dur(rep_diff(fl->t_xid, fl->t_detect), b, sizeof b);
        rep_rawf(p, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"6\" fill=\"%s\" stroke=\"#fff\" stroke-width=\"1.5\"><title>",
                 tx(s, fl->t_first), y, rep_class_color(p, fl->cls));
        rep_html_esc(p->f, rep_node(p, node));
        rep_rawf(p, " GPU %d, %s at %s, XID %u, lead before XID %s: ", fl->gpu, fl->cls, a, fl->xid, b);
        rep_html_esc(p->f, fl->alertname);
        rep_raw(p, ", action ");
        rep_html_esc(p->f, fl->action);
        rep_raw(p, "</title></circle>\n");
    }
}

void rep_chart_timeline(struct rep *p)
{
    uint32_t rows[MAX_ROWS];
    size_t n = timeline_rows(p, rows, MAX_ROWS), more = 0;
    for (uint32_t node = 0; node < p->r->n_nodes; node++) more += node_has_events(p, node);
    more = more > n ? more - n : 0;
    double band = 14 + session_lanes(p) * 9.0, top = 34 + band, row_h = 24;
    double h = top + (n ? (double)n * row_h : 40) + 34;
    struct tscale s = {p->t0, p->t1, LABEL_W, W - RIGHT_W};
    svg_open(p, "chart-timeline", h, "Failures and exclusions per node over time, sessions on top");
    double lx = LABEL_W;
    for (uint32_t i = 0; i < p->n_classes; i++) lx = legend(p, lx, 20, rep_class_color(p, p->classes[i]), 0,
                                                            p->classes[i]);
    lx = legend(p, lx, 20, "#adb5bd", 1, "excluded");
    lx = legend(p, lx, 20, rep_outcome_color(GW_LED_COMPLETED), 1, "session completed");
    lx = legend(p, lx, 20, rep_outcome_color(GW_LED_FAILED), 1, "failed");
    lx = legend(p, lx, 20, rep_outcome_color(GW_LED_STARTUP_FAILED), 1, "start-up failed");
    legend(p, lx, 20, rep_outcome_color(GW_LED_RUNNING), 1, "running");
    time_grid(p, &s, 30, h - 30);
    session_band(p, &s, 30);
    if (!n) {
        svg_none(p, 2 * top + 40);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        double y = top + (double)i * row_h + row_h / 2;
        rep_rawf(p, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", LABEL_W, y,
                 W - RIGHT_W, y);
        svg_text(p, LABEL_W - 8, y + 4, "end", rep_node(p, rows[i]));
        timeline_marks(p, &s, rows[i], y);
    }
    if (more) {
        char b[80];
        snprintf(b, sizeof b, "and %zu more nodes (in the tables)", more);
        svg_text(p, LABEL_W - 8, h - 4, "end", b);
    }
    rep_raw(p, "</svg>\n");
}

/* ------------------------------------------------------------- bar charts */

struct bar {
    const char *label;
    double v;
    const char *color;
    char note[96];
};

/* Horizontal bars from 0 to max(v, mark); mark > 0 draws a dashed line. */
static void hbars(struct rep *p, const char *id, const char *label, const struct bar *b, size_t n, double mark,
                  const char *mark_label)
{
    double row_h = 22, h = 40 + (n ? (double)n : 1) * row_h + 10, max = mark > 0 ? mark : 0;
    svg_open(p, id, h, label);
    if (!n) {
        svg_none(p, h);
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (isfinite(b[i].v) && b[i].v > max) max = b[i].v;
    if (!(max > 0)) max = 1;
    double x0 = LABEL_W, x1 = W - 260;
    for (size_t i = 0; i < n; i++) {
        double y = 30 + (double)i * row_h, v = isfinite(b[i].v) && b[i].v > 0 ? b[i].v : 0;
        double w = (x1 - x0) * v / max;
        svg_text(p, x0 - 8, y + 14, "end", b[i].label);
        rep_rawf(p, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"16\" rx=\"2\" fill=\"%s\"><title>", x0,
                 y + 2, w < 1 ? 1 : w, b[i].color);
        rep_html_esc(p->f, b[i].label);
        rep_raw(p, ": ");
        rep_html_esc(p->f, b[i].note);
        rep_raw(p, "</title></rect>\n");
        svg_text(p, x0 + w + 6, y + 14, "start", b[i].note);
    }
    if (mark > 0) {
        double x = x0 + (x1 - x0) * mark / max;
        rep_rawf(p, "<line x1=\"%.1f\" y1=\"24\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#1d3557\" stroke-dasharray=\"5 3\"/>",
                 x, x, h - 6);
        svg_text(p, x, 18, "middle", mark_label);
    }
    rep_raw(p, "</svg>\n");
}

void rep_chart_lemons(struct rep *p)
{
    const struct gw_led_result *r = p->r;
    struct bar b[25];
    size_t n = 0;
    for (size_t i = 0; i < r->n_ledger && n < 25; i++) {
        const struct gw_led_node *l = &r->ledger[i];
        if (!(l->score > 0) && !l->failures && !l->exclusions) continue;
        b[n].label = rep_node(p, l->node);
        b[n].v = l->score;
        b[n].color = l->lemon ? "#e63946" : "#457b9d";
        snprintf(b[n].note, sizeof b[n].note, "score %.2f, %u failures, %u exclusions%s", l->score, l->failures,
                 l->exclusions, l->lemon ? ", lemon" : "");
        n++;
    }
    char mark[64];
    snprintf(mark, sizeof mark, "lemon at %.2f", r->cfg.lemon_score);
    hbars(p, "chart-lemons", "Lemon ranking: decayed failure score per node (worst first)", b, n, r->cfg.lemon_score,
          mark);
}

void rep_chart_causes(struct rep *p)
{
    const struct gw_led_stats *s = &p->r->stats;
    struct bar b[16];
    size_t n = 0;
    for (uint32_t i = 0; i < s->n_causes && i < 16; i++) {
        b[n].label = s->causes[i].cls;
        b[n].v = s->causes[i].lost_gpu_hours;
        b[n].color = rep_class_color(p, s->causes[i].cls);
        snprintf(b[n].note, sizeof b[n].note, "%.1f GPU-hours lost, %u failures", s->causes[i].lost_gpu_hours,
                 s->causes[i].failures);
        n++;
    }
    hbars(p, "chart-causes", "GPU-hours lost per cause", b, n, 0, NULL);
}

/* ------------------------------------------------------------- checkpoints */

/* Linear from 0, or logarithmic when the values span more than 20x. */
struct vscale {
    int log;
    double lo, hi, y0, y1;       /* values lo..hi onto y0 (bottom)..y1 (top) */
};

static double vy(const struct vscale *s, double v)
{
    double f = s->log ? (log10(v > s->lo ? v : s->lo) - log10(s->lo)) / (log10(s->hi) - log10(s->lo))
                      : (v - s->lo) / (s->hi - s->lo);
    if (f > 1) f = 1;
    if (f < 0) f = 0;
    return s->y0 + (s->y1 - s->y0) * f;
}

static double ckpt_capacity(const struct gw_det_ckpt *e)
{
    return isfinite(e->link_util) && e->link_util > 0 && e->mean_bps > 0 ? e->mean_bps / e->link_util / 1e9 : NAN;
}

static void ckpt_scale(const struct rep *p, struct vscale *s)
{
    double mn = INFINITY, mx = 0;
    for (size_t i = 0; i < p->in->n_ckpts; i++) {
        const struct gw_det_ckpt *e = &p->in->ckpts[i];
        double v[3] = {e->mean_bps / 1e9, e->peak_bps / 1e9, ckpt_capacity(e)};
        for (int k = 0; k < 3; k++) {
            if (!isfinite(v[k]) || v[k] <= 0) continue;
            if (v[k] < mn) mn = v[k];
            if (v[k] > mx) mx = v[k];
        }
    }
    if (!(mx > 0)) mn = mx = 1;
    s->log = mx / mn > 20;
    if (s->log) {
        s->lo = pow(10, floor(log10(mn)));
        s->hi = pow(10, ceil(log10(mx * 1.05)));
    } else {
        double step = pow(10, floor(log10(mx)));
        s->lo = 0;
        s->hi = ceil(mx * 1.1 / step) * step;
    }
}

static void ckpt_axis(struct rep *p, const struct vscale *s)
{
    double ticks[12];
    int n = 0;
    if (s->log) {
        for (double v = s->lo; v <= s->hi * 1.001 && n < 12; v *= 10) ticks[n++] = v;
    } else {
        double step = s->hi / 5;
        for (int i = 0; i <= 5; i++) ticks[n++] = step * i;
    }
    for (int i = 0; i < n; i++) {
        char b[32];
        double y = vy(s, ticks[i]);
        snprintf(b, sizeof b, ticks[i] >= 10 || ticks[i] == 0 ? "%.0f" : ticks[i] >= 1 ? "%.1f" : "%.2g",
                 ticks[i]);
        rep_rawf(p, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", LABEL_W - 40, y,
                 W - RIGHT_W, y);
        svg_text(p, LABEL_W - 46, y + 4, "end", b);
    }
    rep_rawf(p, "<text x=\"20\" y=\"%.1f\" transform=\"rotate(-90 20 %.1f)\" text-anchor=\"middle\">"
                "GB/s%s</text>\n",
             (s->y0 + s->y1) / 2, (s->y0 + s->y1) / 2, s->log ? " (log scale)" : "");
}

static void ckpt_mark(struct rep *p, const struct tscale *ts, const struct vscale *vs, const struct gw_det_ckpt *e)
{
    double x = tx(ts, e->t_start), ym = vy(vs, e->mean_bps / 1e9), yp = vy(vs, e->peak_bps / 1e9);
    const char *c = rep_diag_color(e->diag);
    char t[40], d[40];
    rep_fmt_time(e->t_start, t, sizeof t);
    rep_fmt_dur(e->t_end - e->t_start, d, sizeof d);
    rep_rawf(p, "<g><title>%s %s, %s: mean %.2f GB/s, peak %.2f GB/s, %.1f GB, %s</title>", gw_ckpt_phase_name(e->phase),
             t, d, e->mean_bps / 1e9, e->peak_bps / 1e9, e->bytes / 1e9, gw_ckpt_diag_name(e->diag));
    rep_rawf(p, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"/>", x, ym, x,
             yp, c);
    rep_rawf(p, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"/>", x - 4, yp,
             x + 4, yp, c);
    if (e->phase == GW_CKPT_LOAD)
        rep_rawf(p, "<rect x=\"%.1f\" y=\"%.1f\" width=\"9\" height=\"9\" fill=\"%s\"/>", x - 4.5, ym - 4.5, c);
    else
        rep_rawf(p, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\"/>", x, ym, c);
    rep_raw(p, "</g>\n");
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The link capacity (mean / utilisation): a faint tick per checkpoint that
 * knows it, and their median as a dashed line across the chart. */
static int ckpt_capacity_line(struct rep *p, const struct tscale *ts, const struct vscale *vs)
{
    size_t n = 0;
    double *caps = malloc((p->in->n_ckpts ? p->in->n_ckpts : 1) * sizeof *caps);
    if (!caps) return 0;
    for (size_t i = 0; i < p->in->n_ckpts; i++) {
        double cap = ckpt_capacity(&p->in->ckpts[i]), x = tx(ts, p->in->ckpts[i].t_start);
        if (!isfinite(cap)) continue;
        caps[n++] = cap;
        rep_rawf(p, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#1d3557\" opacity=\"0.35\"/>\n",
                 x - 3, vy(vs, cap), x + 3, vy(vs, cap));
    }
    if (n) {
        led_qsort(caps, n, sizeof *caps, cmp_dbl);
        double med = n % 2 ? caps[n / 2] : (caps[n / 2 - 1] + caps[n / 2]) / 2, y = vy(vs, med);
        char label[64];
        snprintf(label, sizeof label, "link capacity ~%.0f GB/s", med);
        rep_rawf(p, "<line id=\"ckpt-capacity\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#1d3557\" "
                    "stroke-width=\"1.5\" stroke-dasharray=\"6 3\"><title>link capacity: median %.1f GB/s over %zu "
                    "checkpoints (mean throughput / link utilisation)</title></line>\n",
                 ts->x0, y, ts->x1, y, med, n);
        svg_text(p, ts->x1 - 4, y - 6, "end", label);
    }
    free(caps);
    return n > 0;
}

void rep_chart_ckpt(struct rep *p)
{
    double h = p->in->n_ckpts ? 360 : 80;
    struct tscale ts = {p->t0, p->t1, LABEL_W, W - RIGHT_W};
    struct vscale vs = {.y0 = h - 40, .y1 = 40};
    svg_open(p, "chart-ckpt", h, "Checkpoint throughput (mean and peak GB/s) against the link capacity");
    double lx = LABEL_W;
    for (int k = 0; k < GW_CKPT_DIAG_COUNT_; k++) lx = legend(p, lx, 20, rep_diag_color(k), 0, gw_ckpt_diag_name(k));
    lx = legend(p, lx, 20, "#1d3557", 2, "link capacity");
    svg_text(p, lx, 20, "start", "(dot: save, square: load; line up to the peak)");
    if (!p->in->n_ckpts) {
        svg_none(p, h);
        return;
    }
    ckpt_scale(p, &vs);
    ckpt_axis(p, &vs);
    time_grid(p, &ts, vs.y1, vs.y0);
    if (!ckpt_capacity_line(p, &ts, &vs)) svg_text(p, W - RIGHT_W, 38, "end", "link capacity unknown");
    for (size_t i = 0; i < p->in->n_ckpts; i++) ckpt_mark(p, &ts, &vs, &p->in->ckpts[i]);
    rep_raw(p, "</svg>\n");
}

/* ------------------------------------------------------------------ retries */

static void chain_span(const struct rep *p, int64_t *lo, int64_t *hi)
{
    const struct gw_led_result *r = p->r;
    *lo = INT64_MAX, *hi = INT64_MIN;
    for (size_t i = 0; i < r->n_chains && i < MAX_ROWS; i++) {
        int64_t t[2] = {r->chains[i].t_fail, r->chains[i].t_recovered};
        for (int k = 0; k < 2; k++)
            if (t[k] != GW_LED_NO_TIME) *lo = t[k] < *lo ? t[k] : *lo, *hi = t[k] > *hi ? t[k] : *hi;
    }
    for (size_t i = 0; i < r->n_sessions; i++) {
        const struct gw_led_session *se = &r->sessions[i];
        if (se->chain < 0 || se->chain >= MAX_ROWS) continue;
        if (se->t_start < *lo) *lo = se->t_start;
        if (se->t_start > *hi) *hi = se->t_start;
    }
    if (*lo > *hi) *lo = *hi = p->t0;
    int64_t pad = (*hi - *lo) / 20 + 600000;
    *lo -= pad;
    *hi += pad;
}

static void chain_marks(struct rep *p, const struct tscale *s, size_t ci, double y)
{
    const struct gw_led_result *r = p->r;
    const struct gw_led_chain *c = &r->chains[ci];
    char t[40];
    uint32_t k = 0;
    for (size_t i = 0; i < r->n_sessions; i++) {
        const struct gw_led_session *se = &r->sessions[i];
        if (se->chain != (int32_t)ci || (int32_t)i == c->failed_session) continue;
        int ok = se->t_steady != GW_LED_NO_TIME;
        rep_fmt_time(se->t_start, t, sizeof t);
        rep_rawf(p, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\"><title>attempt %u at %s: %s</title></circle>\n",
                 tx(s, se->t_start), y, ok ? "#2a9d8f" : "#e63946", ++k, t,
                 ok ? "reached steady training" : gw_led_outcome_name(se->outcome));
    }
    rep_fmt_time(c->t_fail, t, sizeof t);
    double xf = tx(s, c->t_fail);
    rep_rawf(p, "<path d=\"M%.1f %.1fl8 8m0 -8l-8 8\" stroke=\"#e63946\" stroke-width=\"2.5\"><title>failed at %s"
                "</title></path>\n",
             xf - 4, y - 4, t);
    if (c->t_recovered != GW_LED_NO_TIME) {
        double xr = tx(s, c->t_recovered);
        rep_fmt_time(c->t_recovered, t, sizeof t);
        rep_rawf(p, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#2a9d8f\" stroke-width=\"1\"/>", xf,
                 y, xr, y);
        rep_rawf(p, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"8\" fill=\"none\" stroke=\"#2a9d8f\" stroke-width=\"2\">"
                    "<title>recovered at %s</title></circle>\n",
                 xr, y, t);
    }
    char note[64];
    snprintf(note, sizeof note, "%u attempts, %s", c->attempts, c->success ? "recovered" : "not recovered");
    svg_text(p, W - RIGHT_W + 26, y + 4, "end", note);
}

void rep_chart_retries(struct rep *p)
{
    const struct gw_led_result *r = p->r;
    size_t n = r->n_chains < MAX_ROWS ? r->n_chains : MAX_ROWS;
    double row_h = 26, top = 34, h = top + (n ? (double)n : 1) * row_h + 34;
    int64_t lo, hi;
    chain_span(p, &lo, &hi);
    struct tscale s = {lo, hi, LABEL_W, W - 160};
    svg_open(p, "chart-retries", h, "Retry chains: each chain's attempts over time");
    double lx = legend(p, LABEL_W, 20, "#e63946", 0, "failed attempt");
    lx = legend(p, lx, 20, "#2a9d8f", 0, "attempt reached steady training");
    svg_text(p, lx, 20, "start", "(x: the failure, ring: recovered)");
    if (!n) {
        svg_none(p, h);
        return;
    }
    time_grid(p, &s, top, h - 30);
    for (size_t i = 0; i < n; i++) {
        double y = top + (double)i * row_h + row_h / 2;
        char label[48];
        snprintf(label, sizeof label, "chain %u (%s)", r->chains[i].id, r->chains[i].automatic ? "auto" : "manual");
        svg_text(p, LABEL_W - 8, y + 4, "end", label);
        chain_marks(p, &s, i, y);
    }
    if (r->n_chains > n) {
        char b[80];
        snprintf(b, sizeof b, "and %zu more chains (in the table)", r->n_chains - n);
        svg_text(p, LABEL_W - 8, h - 4, "end", b);
    }
    rep_raw(p, "</svg>\n");
}
