/* score.c - scores detector alerts against the simulator's ground truth
 * (the protocol in evaluate.h's top comment, DESIGN.md section 4) and
 * prints the result as a table or as JSON.
 *
 * Scoring is a few passes over small arrays (alerts x hardware failures of
 * the same node): every alert is classified once as catching (it names a
 * failing node and is firing within [t_fault - before, t_fault + after]),
 * info, explained (an injected application XID on its node in the same
 * window), related (names a node whose failure is under way) or false.
 * Each failure keeps its earliest detection time per detector and
 * combined; the rows are then computed from the failure list, so that
 * totals over several seeds pool the same per-failure values.
 *
 * JSON output (gw_eval_print_flags with GW_EVAL_PRINT_JSON), one object:
 *   {"runs":[{"seed":1,"profile":"paper","days":55,"nodes":63,"gpus":8,
 *             "samples":123,"series":45,"seconds":61.2,"det_ns_per_sample":40.1,
 *             "rows":[{"name":"D1","failures":16,"caught":11,"with_precursor":4,
 *                      "precursor_caught_early":0,"caught_before_xid":0,
 *                      "lead_median_min":null,"lead_p90_min":null,
 *                      "delay_median_min":0.6,"delay_p90_min":1.0,"alerts":80,
 *                      "false_alarms":2,"false_per_day":0.036,"info_alerts":140,
 *                      "related_alerts":3,"explained_alerts":1}, ...],
 *             "classes":{"nvlink":{"caught":5,"total":5}, ...},
 *             "failures":[...], "false_alarms":[...]}],     (lists only when verbose)
 *    "totals":{"runs":1,"days":55,"rows":[...],"classes":{...}},
 *    "report_v1":{"caught":10,"failures":10,"caught_before_xid":2,
 *                 "false_per_day":0.84,"withdrawn":true}}
 * Missing medians (nothing to take them over) are null. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuwatch/evaluate.h"
#include "gpuwatch/json.h"
#include "eval/eval_int.h"

#define MIN_MS 60000.0
#define DAY_MS 86400000.0

void gw_eval_opts_default(struct gw_eval_opts *o)
{
    memset(o, 0, sizeof *o);
    o->before_ms = 60 * 60000LL;
    o->after_ms = 5 * 60000LL;
    o->merge_ms = 30 * 60000LL;
    o->match_gpu = 0;
}

void gw_eval_report_free(struct gw_eval_report *r)
{
    if (r == NULL)
        return;
    free(r->failures);
    free(r->false_alarms);
    r->failures = NULL;
    r->n_failures = 0;
    r->false_alarms = NULL;
    r->n_false_alarms = 0;
}

/* 1..8 for "D1".."D8", 0 otherwise. */
static int det_index(const char *d)
{
    if (d[0] == 'D' && d[1] >= '1' && d[1] <= '0' + GW_EVAL_MAX_DET && d[2] == '\0')
        return d[1] - '0';
    return 0;
}

static int is_hardware(enum gw_sim_class c)
{
    return c != GW_SIM_APP_XID && c != GW_SIM_COLLECTIVE && (unsigned)c < GW_SIM_CLASS_COUNT_;
}

static int64_t alert_end(const struct gw_eval_alert *a)
{
    return a->resolved_at == INT64_MIN ? INT64_MAX : a->resolved_at;
}

/* Firing at some time within [w0, w1]; *t_det = fired_at. */
static int firing_within(const struct gw_eval_alert *a, int64_t w0, int64_t w1, int64_t *t_det)
{
    if (a->fired_at == INT64_MIN || a->fired_at > w1 || alert_end(a) <= w0)
        return 0;
    if (t_det != NULL)
        *t_det = a->fired_at;   /* an alert firing since before the window: its real lead */
    return 1;
}

/* The XID reference: the first scrape showing the XID, else the fault. */
static int64_t xid_ref(const struct gw_eval_failure *f)
{
    return f->t_xid_visible != GW_SIM_NO_TIME ? f->t_xid_visible : f->t_fault;
}

/* ------------------------------------------------------------ row accumulator */
struct acc {
    uint32_t failures, caught, with_pre, pre_early, before_xid;
    double *lead, *delay;
    size_t n_lead, n_delay, cap;
    int oom;
};

static void acc_free(struct acc *a)
{
    free(a->lead);
    free(a->delay);
    memset(a, 0, sizeof *a);
}

static void acc_push(struct acc *a, double **arr, size_t *n, double v)
{
    if (a->oom)
        return;
    if (*n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 32;
        double *l = realloc(a->lead, cap * sizeof *l);
        if (l == NULL) {
            a->oom = 1;
            return;
        }
        a->lead = l;
        double *d = realloc(a->delay, cap * sizeof *d);
        if (d == NULL) {
            a->oom = 1;
            return;
        }
        a->delay = d;
        a->cap = cap;
    }
    (*arr)[(*n)++] = v;
}

/* Adds one failure as seen by detector d (0 = combined). */
static void acc_add(struct acc *a, const struct gw_eval_failure *f, int d)
{
    int64_t t = d == 0 ? (f->caught ? f->t_detect : INT64_MIN) : f->t_detect_by[d];
    a->failures++;
    a->with_pre += f->has_precursor != 0;
    if (t == INT64_MIN)
        return;
    a->caught++;
    acc_push(a, &a->delay, &a->n_delay, (double)(t - f->t_fault) / MIN_MS);
    int64_t ref = xid_ref(f);
    if (t < ref) {
        a->before_xid++;
        a->pre_early += f->has_precursor != 0;
        acc_push(a, &a->lead, &a->n_lead, (double)(ref - t) / MIN_MS);
    }
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

double gw_eval_quantile(double *v, size_t n, double q)
{
    if (n == 0)
        return NAN;
    qsort(v, n, sizeof *v, cmp_double);
    double pos = q * (double)(n - 1);
    size_t i = (size_t)pos;
    if (i + 1 >= n)
        return v[n - 1];
    return v[i] + (pos - (double)i) * (v[i + 1] - v[i]);
}

static void acc_finish(struct acc *a, struct gw_eval_row *r)
{
    r->failures = a->failures;
    r->caught = a->caught;
    r->with_precursor = a->with_pre;
    r->precursor_caught_early = a->pre_early;
    r->caught_before_xid = a->before_xid;
    if (a->oom) {
        r->lead_median_min = r->lead_p90_min = r->delay_median_min = r->delay_p90_min = NAN;
        return;
    }
    r->lead_median_min = gw_eval_quantile(a->lead, a->n_lead, 0.5);
    r->lead_p90_min = gw_eval_quantile(a->lead, a->n_lead, 0.9);
    r->delay_median_min = gw_eval_quantile(a->delay, a->n_delay, 0.5);
    r->delay_p90_min = gw_eval_quantile(a->delay, a->n_delay, 0.9);
}

static void row_name(int d, char *out, size_t n)
{
    if (d == 0)
        snprintf(out, n, "combined");
    else
        snprintf(out, n, "D%d", d);
}

/* Row order: D1..D6, then combined. */
static int row_det(size_t i)
{
    return i < 6 ? (int)i + 1 : 0;
}

/* ------------------------------------------------------------------ scoring */
static int cmp_fault(const void *x, const void *y)
{
    const struct gw_eval_failure *a = x, *b = y;
    if (a->t_fault != b->t_fault)
        return a->t_fault < b->t_fault ? -1 : 1;
    return (a->failure > b->failure) - (a->failure < b->failure);
}

enum verdict { V_IGNORED, V_INFO, V_CATCH, V_EXPLAINED, V_RELATED, V_FALSE };

/* 1 when a collective burst f shows on node (its recorded node, or the
 * node state of a built timeline lists it). */
static int collective_on(const struct gw_sim_timeline *tl, size_t fi, uint32_t node)
{
    const struct gw_sim_failure *f = &tl->failures[fi];
    if (f->node == node)
        return 1;
    struct gw_sim_node_state st;
    if (gw_sim_node_state_at(tl, node, f->t_fault, &st) != GW_OK)
        return 0;
    for (uint32_t k = 0; k < st.n_failures && k < GW_SIM_STATE_MAX_ACTIVE; k++)
        if (st.failures[k] == fi)
            return 1;
    return 0;
}

static int explained_by_app_xid(const struct gw_sim_timeline *tl, const struct gw_eval_alert *a,
                                const struct gw_eval_opts *o)
{
    for (size_t i = 0; i < tl->n_failures; i++) {
        const struct gw_sim_failure *f = &tl->failures[i];
        if (f->cls != GW_SIM_APP_XID && f->cls != GW_SIM_COLLECTIVE)
            continue;
        if (!firing_within(a, f->t_fault - o->before_ms, f->t_fault + o->after_ms, NULL))
            continue;
        if (a->node == UINT32_MAX) {
            if (f->cls == GW_SIM_COLLECTIVE)
                return 1;
            continue;
        }
        if (f->cls == GW_SIM_APP_XID ? f->node == a->node : collective_on(tl, i, a->node))
            return 1;
    }
    return 0;
}

static int related_to_failure(const struct gw_sim_timeline *tl, const struct gw_eval_alert *a,
                              const struct gw_eval_opts *o)
{
    if (a->node == UINT32_MAX)
        return 0;
    for (size_t i = 0; i < tl->n_failures; i++) {
        const struct gw_sim_failure *f = &tl->failures[i];
        if (!is_hardware(f->cls) || f->node != a->node)
            continue;
        int64_t w0 = f->t_fault - o->before_ms;
        if (f->t_precursor_start != GW_SIM_NO_TIME && f->t_precursor_start < w0)
            w0 = f->t_precursor_start;
        int64_t rec = f->t_recovered != GW_SIM_NO_TIME && f->t_recovered > f->t_fault ? f->t_recovered : f->t_fault;
        if (firing_within(a, w0, rec + o->after_ms, NULL))
            return 1;
    }
    return 0;
}

static void host_of(const struct gw_sim_timeline *tl, uint32_t node, char *out, size_t n)
{
    const char *h = node == UINT32_MAX ? NULL : gw_sim_node_name(tl, node);
    if (h != NULL)
        snprintf(out, n, "%s", h);
    else if (node == UINT32_MAX)
        snprintf(out, n, "(job)");
    else
        snprintf(out, n, "node%" PRIu32, node);
}

struct fa_ref {
    uint32_t node;
    int64_t fired_at;
    size_t alert;
};

static int cmp_fa(const void *x, const void *y)
{
    const struct fa_ref *a = x, *b = y;
    if (a->node != b->node)
        return a->node < b->node ? -1 : 1;
    if (a->fired_at != b->fired_at)
        return a->fired_at < b->fired_at ? -1 : 1;
    return (a->alert > b->alert) - (a->alert < b->alert);
}

/* Sorted false alerts -> merged count; marks group starts in first[] (may be NULL). */
static uint32_t merge_count(const struct fa_ref *r, size_t n, int64_t merge_ms, int *first)
{
    uint32_t groups = 0;
    int64_t last_start = 0;
    for (size_t i = 0; i < n; i++) {
        int new_group = i == 0 || r[i].node != r[i - 1].node || r[i].fired_at - last_start > merge_ms;
        if (new_group)
            groups++;
        last_start = r[i].fired_at;
        if (first != NULL)
            first[i] = new_group;
    }
    return groups;
}

/* The hardware failures of tl into fs (n_hw of them), in t_fault order. */
static void score_failures(const struct gw_sim_timeline *tl, struct gw_eval_failure *fs, size_t n_hw)
{
    size_t k = 0;
    for (size_t i = 0; i < tl->n_failures; i++) {
        const struct gw_sim_failure *f = &tl->failures[i];
        if (!is_hardware(f->cls))
            continue;
        struct gw_eval_failure *e = &fs[k++];
        e->failure = (uint32_t)i;
        e->t_detect = INT64_MIN;
        e->cls = f->cls;
        e->node = f->node;
        e->gpu = f->gpu;
        e->xid = f->xid;
        e->precursor = f->precursor;
        e->has_precursor = f->t_precursor_start != GW_SIM_NO_TIME && f->t_precursor_start < f->t_fault;
        e->t_precursor_start = f->t_precursor_start;
        e->t_fault = f->t_fault;
        e->t_xid_visible = f->t_xid_visible;
        e->t_recovered = f->t_recovered;
        host_of(tl, f->node, e->host, sizeof e->host);
        for (int d = 0; d <= GW_EVAL_MAX_DET; d++)
            e->t_detect_by[d] = INT64_MIN;
    }
    if (n_hw > 1)
        qsort(fs, n_hw, sizeof *fs, cmp_fault);
}

/* The failure of fs (t_fault order) that alert a catches, or NULL; *t
 * when it fired in the failure's window. */
static struct gw_eval_failure *caught_failure(const struct gw_eval_alert *a, struct gw_eval_failure *fs, size_t n_hw,
                                              const struct gw_eval_opts *o, int64_t *t)
{
    /* pass 0: failures of the alert's own GPU (or node-level ones); pass 1: any of its node */
    for (size_t i = 0, pass = 0; pass < 2 && a->node != UINT32_MAX; i++) {
        if (i == n_hw) {
            i = (size_t)-1;
            pass++;
            continue;
        }
        struct gw_eval_failure *e = &fs[i];
        if (e->node != a->node)
            continue;
        int other_gpu = e->gpu >= 0 && a->gpu >= 0 && e->gpu != a->gpu;
        if (other_gpu && (o->match_gpu || pass == 0))
            continue;
        if (!other_gpu && pass == 1)
            continue;
        if (!firing_within(a, e->t_fault - o->before_ms, e->t_fault + o->after_ms, t))
            continue;
        /* an alert catches one failure: the earliest whose window it fires in (failures are in
           t_fault order), its own GPU's first, so an alert that lingers from one failure is not
           credited with a lead on the next failure of its node */
        return e;
    }
    return NULL;
}

/* The verdict on alert a; a catch is credited to its failure in fs. *present
 * gets a's detector, *n_unknown counts alerts naming a host that is no node. */
static uint8_t score_alert(const struct gw_sim_timeline *tl, const struct gw_eval_alert *a, struct gw_eval_failure *fs,
                           size_t n_hw, const struct gw_eval_opts *o, uint32_t *present, uint32_t *n_unknown)
{
    if (a->fired_at == INT64_MIN)
        return V_IGNORED;
    if (a->severity == GW_SEV_INFO)
        return V_INFO;
    int d = det_index(a->detector);
    if (d > 0)
        *present |= 1u << d;
    if (a->node == UINT32_MAX && a->host[0] != '\0') {
        /* names a host that is no node (an exporter pod, an IP): a false alarm */
        ++*n_unknown;
        return V_FALSE;
    }
    int64_t t;
    struct gw_eval_failure *e = caught_failure(a, fs, n_hw, o, &t);
    if (e != NULL) {
        if (d > 0) {
            e->detectors_mask |= 1u << d;
            if (t < e->t_detect_by[d] || e->t_detect_by[d] == INT64_MIN)
                e->t_detect_by[d] = t;
        }
        int fd = det_index(e->first_detector);
        if (!e->caught || t < e->t_detect || (t == e->t_detect && d > 0 && (fd == 0 || d < fd))) {
            e->caught = 1;
            e->t_detect = t;
            snprintf(e->first_detector, sizeof e->first_detector, "%s", a->detector);
            snprintf(e->first_alert, sizeof e->first_alert, "%s", a->alertname);
        }
        return V_CATCH;
    }
    if (explained_by_app_xid(tl, a, o))
        return V_EXPLAINED;
    if (related_to_failure(tl, a, o))
        return V_RELATED;
    return V_FALSE;
}

/* The combined row's false alarms (refs[0..nf), merged groups marked by
 * first) as the report lists them; NULL on ENOMEM. */
static struct gw_eval_false_alarm *false_alarm_list(const struct gw_sim_timeline *tl,
                                                    const struct gw_eval_alert *alerts, const struct fa_ref *refs,
                                                    const int *first, size_t nf)
{
    struct gw_eval_false_alarm *fal = calloc(nf, sizeof *fal);
    if (fal == NULL)
        return NULL;
    for (size_t i = 0; i < nf; i++) {
        const struct gw_eval_alert *a = &alerts[refs[i].alert];
        struct gw_eval_false_alarm *x = &fal[i];
        x->node = a->node;
        x->gpu = a->gpu;
        if (a->node == UINT32_MAX && a->host[0] != '\0')
            snprintf(x->host, sizeof x->host, "%.31s", a->host);
        else
            host_of(tl, a->node, x->host, sizeof x->host);
        snprintf(x->alertname, sizeof x->alertname, "%s", a->alertname);
        snprintf(x->detector, sizeof x->detector, "%s", a->detector);
        x->severity = a->severity;
        x->fired_at = a->fired_at;
        x->resolved_at = alert_end(a);
        x->group_first = first[i];
    }
    return fal;
}

/* Row ri (detector d = row_det(ri); 0 = combined) from the failures and
 * the alerts' verdicts; refs and first are scratch of n_alerts. Returns the
 * row's false alarms before merging (refs[0..nf) holds them). */
static size_t score_row(const struct gw_eval_alert *alerts, size_t n_alerts, const uint8_t *verdict, const struct gw_eval_failure *fs, size_t n_hw,
                        const struct gw_eval_opts *o, int d, double days, struct fa_ref *refs, int *first,
                        struct gw_eval_row *row)
{
    struct acc acc;
    memset(&acc, 0, sizeof acc);
    for (size_t i = 0; i < n_hw; i++)
        acc_add(&acc, &fs[i], d);
    acc_finish(&acc, row);
    acc_free(&acc);
    row_name(d, row->name, sizeof row->name);
    size_t nf = 0;
    for (size_t j = 0; j < n_alerts; j++) {
        const struct gw_eval_alert *a = &alerts[j];
        if (verdict[j] == V_IGNORED || (d > 0 && det_index(a->detector) != d))
            continue;
        switch ((enum verdict)verdict[j]) {
        case V_INFO: row->info_alerts++; continue;
        case V_EXPLAINED: row->explained_alerts++; break;
        case V_RELATED: row->related_alerts++; break;
        case V_FALSE:
            refs[nf].node = a->node;
            refs[nf].fired_at = a->fired_at;
            refs[nf].alert = j;
            nf++;
            break;
        case V_CATCH: break;
        case V_IGNORED: continue;
        }
        row->alerts++;
    }
    if (nf > 0)
        qsort(refs, nf, sizeof *refs, cmp_fa);
    row->false_alarms = merge_count(refs, nf, o->merge_ms, d == 0 ? first : NULL);
    row->false_per_day = days > 0 ? row->false_alarms / days : 0.0;
    return nf;
}

int gw_eval_score(const struct gw_sim_timeline *tl, const struct gw_eval_alert *alerts, size_t n_alerts,
                  const struct gw_eval_opts *o, struct gw_eval_report *rep, struct gw_error *err)
{
    if (tl == NULL || rep == NULL || o == NULL || (alerts == NULL && n_alerts > 0))
        return gw_error_set(err, GW_EINVAL, "evaluate: missing timeline, options or report");
    const int64_t year = 366LL * 86400000LL;
    if (o->before_ms < 0 || o->before_ms > year || o->after_ms < 0 || o->after_ms > year || o->merge_ms < 0 ||
        o->merge_ms > year)
        return gw_error_set(err, GW_EINVAL, "evaluate: window/merge durations must be within 0..1 year");

    int rc = GW_OK;
    struct gw_eval_failure *fs = NULL;
    struct gw_eval_false_alarm *fal = NULL;
    uint8_t *verdict = NULL;
    struct fa_ref *refs = NULL;
    int *first = NULL;
    size_t n_hw = 0, n_fal = 0;
    uint32_t rep_present = 0, n_unknown = 0;

    for (size_t i = 0; i < tl->n_failures; i++)
        n_hw += is_hardware(tl->failures[i].cls);
    if (n_hw > 0 && (fs = calloc(n_hw, sizeof *fs)) == NULL)
        goto oom;
    if (n_alerts > 0 && ((verdict = calloc(n_alerts, 1)) == NULL || (refs = calloc(n_alerts, sizeof *refs)) == NULL ||
                         (first = calloc(n_alerts, sizeof *first)) == NULL))
        goto oom;
    score_failures(tl, fs, n_hw);

    /* catches */
    for (size_t j = 0; j < n_alerts; j++)
        verdict[j] = score_alert(tl, &alerts[j], fs, n_hw, o, &rep_present, &n_unknown);

    struct gw_eval_row rows[GW_EVAL_MAX_ROWS];
    memset(rows, 0, sizeof rows);
    double days = (double)tl->cfg.duration_ms / DAY_MS;
    for (size_t ri = 0; ri < 7; ri++) {
        int d = row_det(ri);
        size_t nf = score_row(alerts, n_alerts, verdict, fs, n_hw, o, d, days, refs, first, &rows[ri]);
        if (d == 0 && nf > 0) {
            if ((fal = false_alarm_list(tl, alerts, refs, first, nf)) == NULL)
                goto oom;
            n_fal = nf;
        }
    }
    gw_eval_report_free(rep);   /* earlier arrays, if the report is reused */
    memcpy(rep->rows, rows, sizeof rows);
    rep->n_rows = 7;
    rep->failures = fs;
    rep->n_failures = n_hw;
    rep->false_alarms = fal;
    rep->n_false_alarms = n_fal;
    rep->seed = tl->cfg.seed;
    rep->days = days;
    rep->nodes = tl->cfg.nodes;
    rep->gpus = tl->cfg.gpus;
    rep->det_present = rep_present;
    rep->unknown_host_alerts = n_unknown;
    snprintf(rep->profile, sizeof rep->profile, "%s", tl->cfg.profile);
    goto out;
oom:
    rc = gw_error_set(err, GW_ENOMEM, "evaluate: out of memory scoring %zu alerts", n_alerts);
    free(fs);
    free(fal);
out:
    free(verdict);
    free(refs);
    free(first);
    return rc;
}

/* ----------------------------------------------------------------- printing */
static const char *const v1_note = "the report's first version; withdrawn in later versions of the report";

static const enum gw_sim_class print_classes[] = {GW_SIM_NVLINK, GW_SIM_MEMORY, GW_SIM_FELL_OFF_BUS,
                                                  GW_SIM_GSP, GW_SIM_FAIL_SLOW, GW_SIM_OTHER_HW};
#define N_PRINT_CLASSES (sizeof print_classes / sizeof print_classes[0])

static void fmt_time(int64_t ms, char *out, size_t n)
{
    if (ms == INT64_MIN || ms == GW_SIM_NO_TIME) {
        snprintf(out, n, "-");
        return;
    }
    if (ms == INT64_MAX) {
        snprintf(out, n, "(active)");
        return;
    }
    gw_format_rfc3339_s(ms, out, n);
}

static void fmt_num(double v, char *out, size_t n)
{
    if (isnan(v))
        snprintf(out, n, "-");
    else
        snprintf(out, n, "%.1f", v);
}

/* Rows pooled over several reports (one report: the same as its rows,
 * recomputed from the failure list). */
static void pooled_rows(const struct gw_eval_report *reps, size_t n, struct gw_eval_row *rows, double *days)
{
    *days = 0;
    for (size_t k = 0; k < n; k++)
        *days += reps[k].days;
    for (size_t ri = 0; ri < 7; ri++) {
        int d = row_det(ri);
        struct acc a;
        memset(&a, 0, sizeof a);
        struct gw_eval_row *r = &rows[ri];
        memset(r, 0, sizeof *r);
        for (size_t k = 0; k < n; k++) {
            for (size_t i = 0; i < reps[k].n_failures; i++)
                acc_add(&a, &reps[k].failures[i], d);
            if (ri < reps[k].n_rows) {
                const struct gw_eval_row *s = &reps[k].rows[ri];
                r->alerts += s->alerts;
                r->false_alarms += s->false_alarms;
                r->info_alerts += s->info_alerts;
                r->related_alerts += s->related_alerts;
                r->explained_alerts += s->explained_alerts;
            }
        }
        acc_finish(&a, r);
        acc_free(&a);
        row_name(d, r->name, sizeof r->name);
        r->false_per_day = *days > 0 ? r->false_alarms / *days : 0.0;
    }
}

static void class_counts(const struct gw_eval_report *reps, size_t n, uint32_t *caught, uint32_t *total)
{
    for (size_t c = 0; c < N_PRINT_CLASSES; c++)
        caught[c] = total[c] = 0;
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; i < reps[k].n_failures; i++)
            for (size_t c = 0; c < N_PRINT_CLASSES; c++)
                if (reps[k].failures[i].cls == print_classes[c]) {
                    total[c]++;
                    caught[c] += reps[k].failures[i].caught != 0;
                }
}

static void print_rows_text(const struct gw_eval_row *rows, size_t n_rows, FILE *f)
{
    fprintf(f, "%-9s %7s %10s %11s %15s %15s %7s %6s %9s %7s %9s %6s\n", "row", "caught", "before-XID",
            "precursor", "lead med/p90", "delay med/p90", "alerts", "false", "false/day", "related", "explained",
            "info");
    for (size_t i = 0; i < n_rows; i++) {
        const struct gw_eval_row *r = &rows[i];
        char c1[24], c2[24], c3[24], l1[16], l2[16], d1[16], d2[16], lead[40], delay[40];
        snprintf(c1, sizeof c1, "%" PRIu32 "/%" PRIu32, r->caught, r->failures);
        snprintf(c2, sizeof c2, "%" PRIu32 "/%" PRIu32, r->caught_before_xid, r->failures);
        snprintf(c3, sizeof c3, "%" PRIu32 "/%" PRIu32, r->precursor_caught_early, r->with_precursor);
        fmt_num(r->lead_median_min, l1, sizeof l1);
        fmt_num(r->lead_p90_min, l2, sizeof l2);
        fmt_num(r->delay_median_min, d1, sizeof d1);
        fmt_num(r->delay_p90_min, d2, sizeof d2);
        snprintf(lead, sizeof lead, "%s/%s", l1, l2);
        snprintf(delay, sizeof delay, "%s/%s", d1, d2);
        fprintf(f, "%-9s %7s %10s %11s %15s %15s %7" PRIu32 " %6" PRIu32 " %9.3f %7" PRIu32 " %9" PRIu32
                   " %6" PRIu32 "\n",
                r->name, c1, c2, c3, lead, delay, r->alerts, r->false_alarms, r->false_per_day, r->related_alerts,
                r->explained_alerts, r->info_alerts);
    }
    fprintf(f, "%-9s %7s %10s %11s %15s %15s %7s %6s %9s   (%s)\n", "report v1", "10/10", "2/10", "-", "-", "-",
            "-", "-", "~0.84", v1_note);
}

static void print_classes_text(const struct gw_eval_report *reps, size_t n, FILE *f)
{
    uint32_t caught[N_PRINT_CLASSES], total[N_PRINT_CLASSES];
    class_counts(reps, n, caught, total);
    fprintf(f, "by class (caught/total):");
    for (size_t c = 0; c < N_PRINT_CLASSES; c++)
        fprintf(f, " %s %" PRIu32 "/%" PRIu32, gw_sim_class_name(print_classes[c]), caught[c], total[c]);
    fputc('\n', f);
}

static void print_failures_text(const struct gw_eval_report *r, FILE *f)
{
    fprintf(f, "failures (lead: before the XID, or the fault when no XID shows; delay: detection - fault):\n");
    fprintf(f, "  %4s %-12s %-8s %3s %4s %-13s %-20s %-20s %-3s %-28s %8s %8s\n", "id", "class", "node", "gpu", "xid",
            "precursor", "t_fault", "detected", "by", "alert", "lead", "delay");
    for (size_t i = 0; i < r->n_failures; i++) {
        const struct gw_eval_failure *e = &r->failures[i];
        char tf[32], td[32], gpu[16], lead[24] = "-", delay[24] = "-";
        fmt_time(e->t_fault, tf, sizeof tf);
        fmt_time(e->caught ? e->t_detect : INT64_MIN, td, sizeof td);
        if (e->gpu >= 0)
            snprintf(gpu, sizeof gpu, "%d", (int)e->gpu);
        else
            snprintf(gpu, sizeof gpu, "-");
        if (e->caught) {
            snprintf(delay, sizeof delay, "%.1f", (double)(e->t_detect - e->t_fault) / MIN_MS);
            if (e->t_detect < xid_ref(e))
                snprintf(lead, sizeof lead, "%.1f", (double)(xid_ref(e) - e->t_detect) / MIN_MS);
        }
        fprintf(f, "  %4" PRIu32 " %-12s %-8s %3s %4" PRIu32 " %-13s %-20s %-20s %-3s %-28s %8s %8s\n", e->failure,
                gw_sim_class_name(e->cls), e->host, gpu, e->xid,
                e->has_precursor ? gw_sim_precursor_name(e->precursor) : "-", tf, e->caught ? td : "MISSED",
                e->caught ? e->first_detector : "-", e->caught ? e->first_alert : "-", lead, delay);
    }
}

static void print_false_text(const struct gw_eval_report *r, const struct gw_eval_opts *o, FILE *f)
{
    fprintf(f, "false alarms (alerts of one node starting within %.0f min of each other count once; '+' = merged):\n",
            (double)o->merge_ms / MIN_MS);
    if (r->n_false_alarms == 0)
        fprintf(f, "  none\n");
    for (size_t i = 0; i < r->n_false_alarms; i++) {
        const struct gw_eval_false_alarm *x = &r->false_alarms[i];
        char t0[32], t1[32], gpu[16];
        fmt_time(x->fired_at, t0, sizeof t0);
        fmt_time(x->resolved_at, t1, sizeof t1);
        if (x->gpu >= 0)
            snprintf(gpu, sizeof gpu, "%d", x->gpu);
        else
            snprintf(gpu, sizeof gpu, "-");
        fprintf(f, "  %c %-8s gpu %-2s %-28s %-3s %-8s fired %s resolved %s\n", x->group_first ? ' ' : '+', x->host,
                gpu, x->alertname, x->detector, gw_severity_name(x->severity), t0, t1);
    }
}

static void print_run_header(const struct gw_eval_report *r, FILE *f)
{
    uint32_t pre = 0;
    for (size_t i = 0; i < r->n_failures; i++)
        pre += r->failures[i].has_precursor != 0;
    fprintf(f, "seed %" PRIu64 " (profile %s): %.1f days, %" PRIu32 " nodes x %" PRIu32 " GPUs, %zu hardware failures"
               " (%" PRIu32 " with a precursor in the data)\n",
            r->seed, r->profile[0] ? r->profile : "custom", r->days, r->nodes, r->gpus, r->n_failures, pre);
    fprintf(f, "  %" PRIu64 " samples of %" PRIu64 " series to the detectors in %.1f s wall; detectors %.1f ns CPU/sample\n",
            r->samples, r->series, r->seconds, r->det_ns_per_sample);
}

/* ---- JSON */
/* Strings and numbers through the one JSON writer (gpuwatch/json.h). */
static void json_put(FILE *f, struct gw_buf *b, int rc)
{
    if (rc == GW_OK) fwrite(b->data, 1, b->len, f);
    gw_buf_free(b);
}

void gw_eval_json_str(FILE *f, const char *s)
{
    struct gw_buf b;
    gw_buf_init(&b, 0);
    json_put(f, &b, gw_json_cstr(&b, s));
}

void gw_eval_json_num(FILE *f, double v)
{
    struct gw_buf b;
    gw_buf_init(&b, 0);
    json_put(f, &b, gw_json_num(&b, v));
}

#define json_str gw_eval_json_str
#define json_num gw_eval_json_num

static void json_time(FILE *f, int64_t t)
{
    if (t == INT64_MIN || t == INT64_MAX)
        fputs("null", f);
    else
        fprintf(f, "%" PRId64, t);
}

static void json_rows(FILE *f, const struct gw_eval_row *rows, size_t n)
{
    fputs("[", f);
    for (size_t i = 0; i < n; i++) {
        const struct gw_eval_row *r = &rows[i];
        fprintf(f, "%s{\"name\":", i ? "," : "");
        json_str(f, r->name);
        fprintf(f, ",\"failures\":%" PRIu32 ",\"caught\":%" PRIu32 ",\"with_precursor\":%" PRIu32
                   ",\"precursor_caught_early\":%" PRIu32 ",\"caught_before_xid\":%" PRIu32 ",\"lead_median_min\":",
                r->failures, r->caught, r->with_precursor, r->precursor_caught_early, r->caught_before_xid);
        json_num(f, r->lead_median_min);
        fputs(",\"lead_p90_min\":", f);
        json_num(f, r->lead_p90_min);
        fputs(",\"delay_median_min\":", f);
        json_num(f, r->delay_median_min);
        fputs(",\"delay_p90_min\":", f);
        json_num(f, r->delay_p90_min);
        fprintf(f, ",\"alerts\":%" PRIu32 ",\"false_alarms\":%" PRIu32 ",\"false_per_day\":", r->alerts,
                r->false_alarms);
        json_num(f, r->false_per_day);
        fprintf(f, ",\"info_alerts\":%" PRIu32 ",\"related_alerts\":%" PRIu32 ",\"explained_alerts\":%" PRIu32 "}",
                r->info_alerts, r->related_alerts, r->explained_alerts);
    }
    fputs("]", f);
}

static void json_classes(FILE *f, const struct gw_eval_report *reps, size_t n)
{
    uint32_t caught[N_PRINT_CLASSES], total[N_PRINT_CLASSES];
    class_counts(reps, n, caught, total);
    fputs("{", f);
    for (size_t c = 0; c < N_PRINT_CLASSES; c++) {
        fprintf(f, "%s", c ? "," : "");
        json_str(f, gw_sim_class_name(print_classes[c]));
        fprintf(f, ":{\"caught\":%" PRIu32 ",\"total\":%" PRIu32 "}", caught[c], total[c]);
    }
    fputs("}", f);
}

static void json_failures(FILE *f, const struct gw_eval_report *r)
{
    fputs("[", f);
    for (size_t i = 0; i < r->n_failures; i++) {
        const struct gw_eval_failure *e = &r->failures[i];
        fprintf(f, "%s{\"id\":%" PRIu32 ",\"class\":", i ? "," : "", e->failure);
        json_str(f, gw_sim_class_name(e->cls));
        fputs(",\"node\":", f);
        json_str(f, e->host);
        if (e->gpu >= 0)
            fprintf(f, ",\"gpu\":%d", (int)e->gpu);
        else
            fputs(",\"gpu\":null", f);
        fprintf(f, ",\"xid\":%" PRIu32 ",\"precursor\":", e->xid);
        json_str(f, e->has_precursor ? gw_sim_precursor_name(e->precursor) : "none");
        fputs(",\"t_fault\":", f);
        json_time(f, e->t_fault);
        fputs(",\"t_xid_visible\":", f);
        json_time(f, e->t_xid_visible);
        fprintf(f, ",\"caught\":%s,\"t_detect\":", e->caught ? "true" : "false");
        json_time(f, e->caught ? e->t_detect : INT64_MIN);
        fputs(",\"detector\":", f);
        if (e->caught)
            json_str(f, e->first_detector);
        else
            fputs("null", f);
        fputs(",\"alertname\":", f);
        if (e->caught)
            json_str(f, e->first_alert);
        else
            fputs("null", f);
        fputs(",\"delay_min\":", f);
        json_num(f, e->caught ? (double)(e->t_detect - e->t_fault) / MIN_MS : NAN);
        fputs(",\"lead_min\":", f);
        json_num(f, e->caught && e->t_detect < xid_ref(e) ? (double)(xid_ref(e) - e->t_detect) / MIN_MS : NAN);
        fputs(",\"detectors\":[", f);
        int first = 1;
        for (int d = 1; d <= 6; d++)
            if (e->detectors_mask & (1u << d)) {
                fprintf(f, "%s\"D%d\"", first ? "" : ",", d);
                first = 0;
            }
        fputs("]}", f);
    }
    fputs("]", f);
}

static void json_false(FILE *f, const struct gw_eval_report *r)
{
    fputs("[", f);
    for (size_t i = 0; i < r->n_false_alarms; i++) {
        const struct gw_eval_false_alarm *x = &r->false_alarms[i];
        fprintf(f, "%s{\"node\":", i ? "," : "");
        json_str(f, x->host);
        if (x->gpu >= 0)
            fprintf(f, ",\"gpu\":%d", x->gpu);
        else
            fputs(",\"gpu\":null", f);
        fputs(",\"alertname\":", f);
        json_str(f, x->alertname);
        fputs(",\"detector\":", f);
        json_str(f, x->detector);
        fputs(",\"severity\":", f);
        json_str(f, gw_severity_name(x->severity));
        fputs(",\"fired_at\":", f);
        json_time(f, x->fired_at);
        fputs(",\"resolved_at\":", f);
        json_time(f, x->resolved_at);
        fprintf(f, ",\"merged\":%s}", x->group_first ? "false" : "true");
    }
    fputs("]", f);
}

int gw_eval_print_flags(const struct gw_eval_report *reps, size_t n, unsigned flags, FILE *f)
{
    if (f == NULL || (reps == NULL && n > 0))
        return GW_EINVAL;
    struct gw_eval_opts o;
    gw_eval_opts_default(&o);
    struct gw_eval_row tot[GW_EVAL_MAX_ROWS];
    double days;
    int verbose = (flags & GW_EVAL_PRINT_VERBOSE) != 0;

    if (flags & GW_EVAL_PRINT_JSON) {
        fputs("{\"runs\":[", f);
        for (size_t k = 0; k < n; k++) {
            const struct gw_eval_report *r = &reps[k];
            fprintf(f, "%s{\"seed\":%" PRIu64 ",\"profile\":", k ? "," : "", r->seed);
            json_str(f, r->profile[0] ? r->profile : "custom");
            fputs(",\"days\":", f);
            json_num(f, r->days);
            fprintf(f, ",\"nodes\":%" PRIu32 ",\"gpus\":%" PRIu32 ",\"samples\":%" PRIu64 ",\"series\":%" PRIu64
                       ",\"seconds\":",
                    r->nodes, r->gpus, r->samples, r->series);
            json_num(f, r->seconds);
            fputs(",\"det_ns_per_sample\":", f);
            json_num(f, r->det_ns_per_sample);
            fputs(",\"rows\":", f);
            json_rows(f, r->rows, r->n_rows);
            fputs(",\"classes\":", f);
            json_classes(f, r, 1);
            if (verbose) {
                fputs(",\"failures\":", f);
                json_failures(f, r);
                fputs(",\"false_alarms\":", f);
                json_false(f, r);
            }
            fputs("}", f);
        }
        pooled_rows(reps, n, tot, &days);
        fprintf(f, "],\"totals\":{\"runs\":%zu,\"days\":", n);
        json_num(f, days);
        fputs(",\"rows\":", f);
        json_rows(f, tot, 7);
        fputs(",\"classes\":", f);
        json_classes(f, reps, n);
        fputs("},\"report_v1\":{\"caught\":10,\"failures\":10,\"caught_before_xid\":2,\"false_per_day\":0.84,"
              "\"withdrawn\":true,\"note\":",
              f);
        json_str(f, v1_note);
        fputs("}}\n", f);
        return ferror(f) ? GW_EIO : GW_OK;
    }

    for (size_t k = 0; k < n; k++) {
        const struct gw_eval_report *r = &reps[k];
        if (k > 0)
            fputc('\n', f);
        print_run_header(r, f);
        print_rows_text(r->rows, r->n_rows, f);
        print_classes_text(r, 1, f);
        if (verbose) {
            print_failures_text(r, f);
            print_false_text(r, &o, f);
        }
    }
    if (n > 1) {
        pooled_rows(reps, n, tot, &days);
        uint64_t samples = 0;
        double secs = 0, ns = 0;
        for (size_t k = 0; k < n; k++) {
            samples += reps[k].samples;
            secs += reps[k].seconds;
            ns += reps[k].det_ns_per_sample * (double)reps[k].samples;
        }
        fprintf(f, "\ntotal over %zu seeds: %.1f days; %" PRIu64 " samples, %.1f s of runs; detectors %.1f ns CPU/sample\n",
                n, days, samples, secs, samples > 0 ? ns / (double)samples : 0.0);
        print_rows_text(tot, 7, f);
        print_classes_text(reps, n, f);
    }
    fprintf(f, "protocol: caught = warning/critical alert on the failing node firing within [fault - %.0f min, fault + "
               "%.0f min]; false alarms merged per node within %.0f min;\n"
            "          precursor = failures with a precursor in the data caught before the XID / all such; lead and\n"
            "          delay in minutes (median/p90); related = alerts on a node whose failure is under way\n",
            (double)o.before_ms / MIN_MS, (double)o.after_ms / MIN_MS, (double)o.merge_ms / MIN_MS);
    return ferror(f) ? GW_EIO : GW_OK;
}

int gw_eval_print(const struct gw_eval_report *reps, size_t n, int json, FILE *f)
{
    return gw_eval_print_flags(reps, n, json ? GW_EVAL_PRINT_JSON : 0, f);
}
