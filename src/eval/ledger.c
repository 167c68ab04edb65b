/* src/eval/ledger.c - the ledger (D8) against the simulator's ground truth
 * (`gpuwatch evaluate --ledger`).
 *
 * gw_eval_run feeds the simulation through the detectors with two hooks:
 * every alert change is kept (the full record, as the alert log has it)
 * and the node activity D8 judges is drained into the ledger's input. The
 * ledger is built once at the end (now = the end of the data) and scored:
 *
 *  - sessions: truth sessions with at least 2 nodes against inferred ones;
 *    a pair matches when their starts differ by at most 5 min and their
 *    node sets overlap by at least 80 % (Jaccard); each at most once,
 *    greedily in start order. Precision = matched / inferred, recall =
 *    matched / truth;
 *  - outcomes: of the matched pairs, those with the same outcome class
 *    (completed / failed or failed in start-up / running);
 *  - retry chains: the truth's episodes are read off its sessions with the
 *    rule the ledger applies to what it sees (chains.c): a failed session
 *    whose next session is an automatic attempt (same chain id, attempt >
 *    0) opens a chain; it succeeds at the first attempt reaching steady
 *    training; intervals from the failed end, or from the start of an
 *    attempt that failed in start-up. Success rate and median interval of
 *    both are printed side by side;
 *  - lemons: the ranks of the truth's lemon nodes in the ledger's ranking,
 *    and how many of those with at least two hardware failures in the data
 *    (one failure does not set a lemon apart) are in the top max(3, lemons);
 *  - exclusion concentration: the top-3 share of the truth's exclusions
 *    (session.excluded_node) and of the ledger's;
 *  - evidence: exclusions (now, and implied by sessions) traceable to a
 *    failure with at least one alert of the log. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <errno.h>
#include <sys/stat.h>

#include "gpuwatch/db.h"
#include "gpuwatch/evaluate.h"
#include "gpuwatch/kv.h"
#include "gpuwatch/labels.h"
#include "gpuwatch/rw.h"
#include "gpuwatch/ledger.h"
#include "eval/eval_int.h"

struct hook {
    struct gw_det_ckpt *ckpts;   /* D7's events (only when writing a history) */
    size_t n_ckpts, cap_ckpts;
    struct gw_alert *alerts;     /* by id */
    size_t n_alerts, cap_alerts;
    struct gw_led_act *act;
    size_t n_act, cap_act;
    char **names;
    uint32_t n_names, cap_names, last;
    int oom;
};

static struct gw_alert *alert_slot(struct hook *h, uint64_t id)
{
    size_t lo = 0, hi = h->n_alerts;
    if (hi > 0 && h->alerts[hi - 1].id < id) lo = hi;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (h->alerts[mid].id < id) lo = mid + 1;
        else hi = mid;
    }
    if (lo < h->n_alerts && h->alerts[lo].id == id) return &h->alerts[lo];
    if (h->n_alerts == h->cap_alerts) {
        size_t nc = h->cap_alerts ? h->cap_alerts * 2 : 1024;
        struct gw_alert *p = realloc(h->alerts, nc * sizeof *p);
        if (!p) return NULL;
        h->alerts = p;
        h->cap_alerts = nc;
    }
    memmove(&h->alerts[lo + 1], &h->alerts[lo], (h->n_alerts - lo) * sizeof *h->alerts);
    h->n_alerts++;
    return &h->alerts[lo];
}

static void on_alert(void *ud, const struct gw_alert *al)
{
    struct hook *h = ud;
    struct gw_alert *a = h->oom ? NULL : alert_slot(h, al->id);
    if (!a) {
        h->oom = 1;
        return;
    }
    *a = *al;
}

static int name_index(struct hook *h, const char *node, uint32_t *out)
{
    if (h->n_names && strcmp(h->names[h->last], node) == 0) {
        *out = h->last;
        return 0;
    }
    for (uint32_t i = h->n_names; i-- > 0;)
        if (strcmp(h->names[i], node) == 0) {
            *out = h->last = i;
            return 0;
        }
    if (h->n_names == h->cap_names) {
        uint32_t nc = h->cap_names ? h->cap_names * 2 : 64;
        char **p = realloc(h->names, nc * sizeof *p);
        if (!p) return -1;
        h->names = p;
        h->cap_names = nc;
    }
    if (!(h->names[h->n_names] = strdup(node))) return -1;
    *out = h->n_names++;
    return 0;
}

static int on_level(void *ud, const char *node, int64_t t, int level)
{
    struct hook *h = ud;
    uint32_t ni;
    if (name_index(h, node, &ni) != 0) return GW_ENOMEM;
    if (h->n_act == h->cap_act) {
        size_t nc = h->cap_act ? h->cap_act * 2 : 65536;
        struct gw_led_act *p = realloc(h->act, nc * sizeof *p);
        if (!p) return GW_ENOMEM;
        h->act = p;
        h->cap_act = nc;
    }
    h->act[h->n_act++] = (struct gw_led_act){.t = t, .node = ni, .level = (uint8_t)level};
    return 0;
}

static void on_ckpt(void *ud, const struct gw_det_ckpt *e)
{
    struct hook *h = ud;
    if (h->n_ckpts == h->cap_ckpts) {
        size_t nc = h->cap_ckpts ? h->cap_ckpts * 2 : 256;
        struct gw_det_ckpt *p = realloc(h->ckpts, nc * sizeof *p);
        if (!p) {
            h->oom = 1;
            return;
        }
        h->ckpts = p;
        h->cap_ckpts = nc;
    }
    h->ckpts[h->n_ckpts++] = *e;
}

/* ---- a history for `gpuwatch report` ---- */

static int cmp_act_node(const void *a, const void *b)
{
    const struct gw_led_act *x = a, *y = b;
    if (x->node != y->node) return x->node < y->node ? -1 : 1;
    return (x->t > y->t) - (x->t < y->t);
}

/* What serve writes next to the alert log: gpuwatch_node_activity in the
 * series store, D7's events in DIR/checkpoints/. */
static int write_history(const char *dir, struct hook *h, int64_t end, struct gw_error *err)
{
    struct gw_db_opts o;
    gw_db_opts_default(&o);
    o.dir = dir;
    o.retention_ms = 3650LL * 86400000;   /* simulated time may lie in the past */
    struct gw_db *db = NULL;
    int rc = gw_db_open(&db, &o, err);
    if (rc != GW_OK) return rc;
    if (h->n_act > 1) qsort(h->act, h->n_act, sizeof *h->act, cmp_act_node);
    enum { CHUNK = 1 << 16 };
    struct gw_sample *smp = malloc(CHUNK * sizeof *smp);
    if (!smp) rc = gw_error_set(err, GW_ENOMEM, "out of memory");
    for (size_t i = 0; rc == GW_OK && i < h->n_act;) {
        size_t j = i, k = 0;
        while (j < h->n_act && h->act[j].node == h->act[i].node && k < CHUNK) {
            smp[k++] = (struct gw_sample){.t = h->act[j].t, .v = h->act[j].level};
            j++;
        }
        const char *node = h->names[h->act[i].node];
        struct gw_label ls[2] = {{"__name__", 8, "gpuwatch_node_activity", 22}, {"node", 4, node, (uint32_t)strlen(node)}};
        struct gw_rw_series ser = {.labels = ls, .n_labels = 2, .samples = smp, .n_samples = (uint32_t)k};
        struct gw_rw_request req = {.version = 1, .series = &ser, .n_series = 1, .n_samples = k};
        struct gw_append_result res;
        memset(&res, 0, sizeof res);
        rc = gw_db_append(db, &req, end, &res, err);
        i = j;
    }
    free(smp);
    if (rc == GW_OK) rc = gw_db_flush(db, err);
    gw_db_close(db);
    char path[4096];
    snprintf(path, sizeof path, "%s/checkpoints", dir);
    static const char *const tables[] = {GW_CKPT_TABLE};
    struct gw_kv *kv = NULL;
    struct gw_kv_txn *t = NULL;
    if (rc == GW_OK) rc = gw_kv_open(&kv, path, tables, 1, (size_t)16 << 20, (size_t)4 << 30, err);
    if (rc == GW_OK) rc = gw_kv_begin(kv, 1, &t, err);
    for (size_t i = 0; rc == GW_OK && i < h->n_ckpts; i++) {
        uint8_t k[GW_CKPT_KEY_BYTES], v[GW_CKPT_ENC_BYTES];
        gw_det_ckpt_key(h->ckpts[i].t_start, h->ckpts[i].id, k);
        gw_det_ckpt_encode(&h->ckpts[i], v);
        rc = gw_kv_put(t, 0, k, sizeof k, v, sizeof v, err);
    }
    if (t) {
        if (rc == GW_OK) rc = gw_kv_commit(t, err);
        else gw_kv_abort(t);
    }
    gw_kv_close(kv);
    return rc;
}

static void on_drain(void *ud, struct gw_det *d)
{
    struct hook *h = ud;
    if (gw_det_activity_drain(d, on_level, h) != GW_OK) h->oom = 1;
}

/* ---- truth ---- */

static int truth_reached(const struct gw_sim_session *s)
{
    return s->outcome != GW_SIM_SESS_STARTUP_FAILED && s->t_end > s->t_steady;
}

static int truth_failed(const struct gw_sim_session *s)
{
    return s->outcome == GW_SIM_SESS_FAILED || s->outcome == GW_SIM_SESS_STARTUP_FAILED;
}

struct tchains {
    uint32_t autos, auto_ok, manual, manual_ok;
    double iv[4096];
    size_t n_iv;
};

static void truth_chains(const struct gw_sim_timeline *tl, struct tchains *c)
{
    memset(c, 0, sizeof *c);
    int open = 0, attempts = 0;
    for (size_t i = 0; i < tl->n_sessions; i++) {
        const struct gw_sim_session *s = &tl->sessions[i];
        if (!truth_failed(s) || s->t_end >= tl->cfg.start_ms + tl->cfg.duration_ms) continue;
        const struct gw_sim_session *n = i + 1 < tl->n_sessions ? &tl->sessions[i + 1] : NULL;
        int retry = n && n->chain == s->chain && n->attempt > 0;
        int in_chain = open && s->attempt > 0;
        if (!in_chain) attempts = 0;
        open = 0;
        if (!retry) {
            if (attempts == 0) {
                c->manual++;
                c->manual_ok += (uint32_t)(n && truth_reached(n));
            } else {
                c->autos++;
            }
            continue;
        }
        attempts++;
        if (c->n_iv < 4096)
            c->iv[c->n_iv++] = (double)(n->t_start - (truth_reached(s) ? s->t_end : s->t_start)) / 60000.0;
        if (truth_reached(n)) {
            c->autos++;
            c->auto_ok++;
        } else {
            open = 1;
        }
    }
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static uint64_t wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- scoring ---- */

static int truth_node(const struct gw_sim_timeline *tl, const char *name)
{
    for (uint32_t i = 0; i < tl->cfg.nodes; i++) {
        const char *n = gw_sim_node_name(tl, i);
        if (n && strcmp(n, name) == 0) return (int)i;
    }
    return -1;
}

static double jaccard(const struct gw_sim_session *t, const struct gw_led_session *s, const int *tmap)
{
    uint32_t common = 0;
    for (uint32_t k = 0; k < s->n_nodes; k++) {
        int tn = tmap[s->nodes[k]];
        if (tn >= 0 && t->nodes[tn]) common++;
    }
    uint32_t uni = t->n_nodes + s->n_nodes - common;
    return uni ? (double)common / uni : 0;
}

static int outcome_class_truth(const struct gw_sim_session *t, int64_t end)
{
    if (t->t_end >= end) return 2;
    return truth_failed(t) ? 1 : 0;
}

static int outcome_class(const struct gw_led_session *s)
{
    if (s->outcome == GW_LED_RUNNING) return 2;
    return s->outcome == GW_LED_COMPLETED ? 0 : 1;
}

static void score_sessions(const struct gw_sim_timeline *tl, const struct gw_led_result *r, const int *tmap,
                           struct gw_eval_ledger *v)
{
    int64_t end = tl->cfg.start_ms + tl->cfg.duration_ms;
    uint8_t *used = calloc(r->n_sessions ? r->n_sessions : 1, 1);
    if (!used) return;
    for (size_t i = 0; i < tl->n_sessions; i++) {
        const struct gw_sim_session *t = &tl->sessions[i];
        if (t->n_nodes < 2) continue;
        v->truth_sessions++;
        for (size_t j = 0; j < r->n_sessions; j++) {
            const struct gw_led_session *s = &r->sessions[j];
            if (used[j] || s->t_start < t->t_start - 5 * 60000 || s->t_start > t->t_start + 5 * 60000) continue;
            if (jaccard(t, s, tmap) < 0.8) continue;
            used[j] = 1;
            v->matched++;
            if (outcome_class_truth(t, end) == outcome_class(s)) v->outcome_agree++;
            break;
        }
    }
    v->found_sessions = (uint32_t)r->n_sessions;
    free(used);
}

static void score_lemons(const struct gw_sim_timeline *tl, const struct gw_led_result *r, const int *tmap,
                         struct gw_eval_ledger *v)
{
    uint32_t n_lemons = 0;
    for (uint32_t i = 0; i < tl->cfg.nodes; i++) n_lemons += tl->lemon[i];
    uint32_t top = n_lemons > 3 ? n_lemons : 3;
    for (uint32_t i = 0; i < tl->cfg.nodes && v->n_lemons < 16; i++) {
        if (!tl->lemon[i]) continue;
        uint32_t hw = 0;
        for (size_t k = 0; k < tl->n_failures; k++)
            if (tl->failures[k].node == i && tl->failures[k].cls != GW_SIM_APP_XID &&
                tl->failures[k].cls != GW_SIM_COLLECTIVE)
                hw++;
        uint32_t rank = 0;
        for (size_t k = 0; k < r->n_ledger; k++)
            if (tmap[r->ledger[k].node] == (int)i) rank = r->ledger[k].rank;
        v->lemon_hw[v->n_lemons] = hw;
        v->lemon_rank[v->n_lemons++] = rank;
        if (hw >= 2) {   /* one failure does not tell a lemon from any node */
            v->lemons_failing++;
            if (rank > 0 && rank <= top) v->lemons_in_top++;
        }
    }
}

static void score_exclusions(const struct gw_sim_timeline *tl, const struct gw_led_result *r,
                             const struct hook *h, struct gw_eval_ledger *v)
{
    /* truth: excluded_node per session */
    double *cnt = calloc(tl->cfg.nodes ? tl->cfg.nodes : 1, sizeof *cnt);
    if (cnt) {
        double total = 0;
        for (size_t i = 0; i < tl->n_sessions; i++)
            if (tl->sessions[i].excluded_node >= 0 && (uint32_t)tl->sessions[i].excluded_node < tl->cfg.nodes) {
                cnt[tl->sessions[i].excluded_node]++;
                total++;
            }
        qsort(cnt, tl->cfg.nodes, sizeof *cnt, cmp_dbl);
        double top = 0;
        for (uint32_t i = 0; i < 3 && i < tl->cfg.nodes; i++) top += cnt[tl->cfg.nodes - 1 - i];
        v->truth_top3_share = total > 0 ? top / total : NAN;
        v->truth_exclusions = (uint32_t)total;
        free(cnt);
    }
    v->top3_share = r->stats.top_k_share;
    for (size_t i = 0; i < r->n_ledger; i++) v->implied_exclusions += r->ledger[i].exclusions;
    for (size_t i = 0; i < r->n_sessions; i++)
        for (int k = 0; k < 4; k++) {
            int32_t x = r->sessions[i].excluded[k];
            if (x < 0) continue;
            /* traceable: the previous session's failure is on that node, with alerts */
            int ok = 0;
            for (size_t j = 0; j < r->n_failures && !ok; j++)
                ok = r->failures[j].node == (uint32_t)x && r->failures[j].n_alert_ids > 0 &&
                     r->failures[j].t_first <= r->sessions[i].t_start;
            v->implied_traceable += (uint32_t)ok;
            v->implied_checked++;
        }
    v->exclusions_now = (uint32_t)r->n_exclusions;
    for (size_t i = 0; i < r->n_exclusions; i++) {
        const struct gw_led_exclusion *e = &r->exclusions[i];
        int ok = e->failure >= 0 && e->n_alert_ids > 0;
        for (uint32_t k = 0; ok && k < e->n_alert_ids; k++) {
            int found = 0;
            for (size_t j = 0; j < h->n_alerts && !found; j++) found = h->alerts[j].id == e->alert_ids[k];
            ok = found;
        }
        v->exclusions_traceable += (uint32_t)ok;
    }
}

int gw_eval_ledger_run(const struct gw_sim_config *cfg, const struct gw_det_config *dc, const struct gw_eval_opts *o,
                       struct gw_eval_ledger *v, struct gw_error *err)
{
    memset(v, 0, sizeof *v);
    v->seed = cfg->seed;
    struct hook h = {0};
    struct gw_eval_opts oo = *o;
    oo.on_alert = on_alert;
    oo.on_drain = on_drain;
    oo.on_ckpt = o->log_dir ? on_ckpt : NULL;
    oo.hook_ud = &h;
    struct gw_eval_report rep;
    memset(&rep, 0, sizeof rep);
    struct gw_sim_timeline *tl = NULL;
    struct gw_led_result *r = NULL;
    int *tmap = NULL;
    int rc = GW_OK;
    if (o->log_dir && mkdir(o->log_dir, 0755) != 0 && errno != EEXIST)
        rc = gw_error_set(err, GW_EIO, "evaluate: cannot create %s: %s", o->log_dir, strerror(errno));
    if (rc == GW_OK) rc = gw_eval_run(cfg, dc, &oo, &rep, NULL, NULL, err);
    if (rc == GW_OK && h.oom) rc = gw_error_set(err, GW_ENOMEM, "evaluate: out of memory collecting activity");
    if (rc == GW_OK) rc = gw_sim_timeline_build(cfg, &tl, err);
    int64_t end = cfg->start_ms + cfg->duration_ms;
    if (rc == GW_OK) {
        struct gw_led_input in = {.nodes = h.names, .n_nodes = h.n_names, .act = h.act, .n_act = h.n_act,
                                  .alerts = h.alerts, .n_alerts = h.n_alerts, .from = cfg->start_ms, .to = end,
                                  .now = end, .gpus_per_node = cfg->gpus};
        uint64_t t0 = wall_ns();
        rc = gw_led_build(&in, NULL, &r, err);
        v->build_ms = (double)(wall_ns() - t0) / 1e6;
    }
    if (rc == GW_OK && !(tmap = malloc((h.n_names ? h.n_names : 1) * sizeof *tmap)))
        rc = gw_error_set(err, GW_ENOMEM, "evaluate: out of memory");
    if (rc == GW_OK) {
        for (uint32_t i = 0; i < h.n_names; i++) tmap[i] = truth_node(tl, h.names[i]);
        v->days = (double)cfg->duration_ms / 86400000.0;
        score_sessions(tl, r, tmap, v);
        struct tchains tc;
        truth_chains(tl, &tc);
        v->truth_chains = tc.autos;
        v->truth_chain_success = tc.autos ? (double)tc.auto_ok / tc.autos : NAN;
        v->truth_interval_med_min = gw_eval_quantile(tc.iv, tc.n_iv, 0.5);
        v->truth_manual = tc.manual;
        v->truth_manual_success = tc.manual ? (double)tc.manual_ok / tc.manual : NAN;
        v->chains = r->stats.chains_auto;
        v->chain_success = r->stats.chain_success_auto;
        v->interval_med_min = r->stats.retry_interval_med_min;
        v->manual = r->stats.chains_manual;
        v->manual_success = r->stats.chain_success_manual;
        v->failures = (uint32_t)r->n_failures;
        score_lemons(tl, r, tmap, v);
        score_exclusions(tl, r, &h, v);
        v->activity_samples = h.n_act;
        if (o->log_dir) rc = write_history(o->log_dir, &h, end, err);
    }
    gw_led_result_free(r);
    free(tmap);
    gw_sim_timeline_free(tl);
    gw_eval_report_free(&rep);
    for (uint32_t i = 0; i < h.n_names; i++) free(h.names[i]);
    free(h.names);
    free(h.act);
    free(h.alerts);
    free(h.ckpts);
    return rc;
}

static void pct(FILE *f, double v)
{
    if (v == v) fprintf(f, "%6.1f%%", 100 * v);
    else fprintf(f, "%7s", "-");
}

static void minutes(FILE *f, double v)
{
    if (v == v) fprintf(f, "%6.1f", v);
    else fprintf(f, "%6s", "-");
}

int gw_eval_ledger_print(const struct gw_eval_ledger *v, size_t n, FILE *f)
{
    fprintf(f, "%-6s %4s | %5s %5s %5s %6s %6s %6s | %6s %8s %8s %6s %6s | %6s %8s %8s | %-14s %6s | %6s %6s | %s\n",
            "seed", "days", "truth", "found", "match", "prec", "recall", "outc", "chains", "ok", "truth_ok",
            "iv_med", "t_iv", "manual", "ok", "truth_ok", "lemon ranks", "in_top", "top3", "t_top3", "evidence");
    for (size_t i = 0; i < n; i++) {
        const struct gw_eval_ledger *x = &v[i];
        double prec = x->found_sessions ? (double)x->matched / x->found_sessions : NAN;
        double rec = x->truth_sessions ? (double)x->matched / x->truth_sessions : NAN;
        double oc = x->matched ? (double)x->outcome_agree / x->matched : NAN;
        fprintf(f, "%-6llu %4.0f | %5u %5u %5u ", (unsigned long long)x->seed, x->days, x->truth_sessions,
                x->found_sessions, x->matched);
        pct(f, prec);
        pct(f, rec);
        pct(f, oc);
        fprintf(f, " | %2u/%-3u ", x->chains, x->truth_chains);
        pct(f, x->chain_success);
        fprintf(f, " ");
        pct(f, x->truth_chain_success);
        fprintf(f, " ");
        minutes(f, x->interval_med_min);
        fprintf(f, " ");
        minutes(f, x->truth_interval_med_min);
        fprintf(f, " | %2u/%-3u ", x->manual, x->truth_manual);
        pct(f, x->manual_success);
        fprintf(f, " ");
        pct(f, x->truth_manual_success);
        fprintf(f, " | ");
        char ranks[64] = "";
        size_t off = 0;
        for (uint32_t k = 0; k < x->n_lemons && off < sizeof ranks - 12; k++)
            off += (size_t)snprintf(ranks + off, sizeof ranks - off, "%s%u(%u)", k ? "," : "", x->lemon_rank[k],
                                    x->lemon_hw[k]);
        fprintf(f, "%-14s %2u/%-3u | ", ranks, x->lemons_in_top, x->lemons_failing);
        pct(f, x->top3_share);
        pct(f, x->truth_top3_share);
        fprintf(f, " | %u/%u implied, %u/%u now\n", x->implied_traceable, x->implied_checked,
                x->exclusions_traceable, x->exclusions_now);
    }
    fprintf(f, "lemon ranks: rank(hardware failures in the data) per truth lemon; in_top: lemons with >= 2 failures in "
               "the top max(3, lemons); evidence: exclusions traceable to a failure with alerts\n");
    return ferror(f) ? GW_EIO : GW_OK;
}
