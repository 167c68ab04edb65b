/* run.c - gw_eval_run: one simulated cluster fed through the detectors and
 * scored against its ground truth.
 *
 * Pipeline (single thread, deterministic for a config and seed):
 *   timeline (gw_sim_timeline_build)
 *   -> generator restricted to the metrics a detector reads
 *      (gw_sim_gen_open with gw_det_wants_metric as the filter)
 *   -> per scrape: series seen for the first time are classified once
 *      (gw_det_series), every sample goes to gw_det_sample through a
 *      handle array indexed by the generator's series id (no hashing or
 *      allocation per sample; the array doubles when new ids appear),
 *      then gw_det_advance(scrape time)
 *   -> gw_det_finish at the end of the simulated window
 *   -> every alert that fired, as its latest state (gw_alerts_on_change
 *      keeps one record per alert id), mapped from hostname to the
 *      timeline's node index, scored by gw_eval_score.
 * The alert engine runs without log or notifier and with its ALERTS
 * samples turned off (nothing stores them here); whatever it buffers is
 * still drained and discarded every DRAIN_SCRAPES scrapes.
 *
 * Cost accounting: wall time of the whole run, and the thread CPU time
 * (CLOCK_THREAD_CPUTIME_ID) spent inside detector calls, read once per
 * scrape around its batch of calls, divided by the samples fed. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuwatch/evaluate.h"

#define DRAIN_SCRAPES 4096
#define NO_HANDLE UINT32_MAX
#define MAX_ALERTS 10000000u   /* a detector raising more than this is broken: stop collecting */

/* ------------------------------------------------------------- alert store */
struct alert_rec {
    uint64_t id;
    struct gw_eval_alert a;
    char host[GW_ALERT_HOST_MAX];
};

struct collector {
    struct alert_rec *v;   /* sorted by id (ids increase, so appends keep the order) */
    size_t n, cap;
    int oom;
    const struct gw_eval_opts *o;   /* its hooks */
};

static struct alert_rec *find_rec(struct collector *c, uint64_t id)
{
    if (c->n > 0 && c->v[c->n - 1].id == id)
        return &c->v[c->n - 1];
    size_t lo = 0, hi = c->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->v[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < c->n && c->v[lo].id == id ? &c->v[lo] : NULL;
}

static void on_change(void *ud, const struct gw_alert *al)
{
    struct collector *c = ud;
    if (c->o->on_alert) c->o->on_alert(c->o->hook_ud, al);
    struct alert_rec *r = find_rec(c, al->id);
    if (r == NULL) {
        if (c->oom || c->n >= MAX_ALERTS)
            return;
        if (c->n == c->cap) {
            size_t cap = c->cap ? c->cap * 2 : 256;
            struct alert_rec *v = realloc(c->v, cap * sizeof *v);
            if (v == NULL) {
                c->oom = 1;
                return;
            }
            c->v = v;
            c->cap = cap;
        }
        /* ids are increasing; an out-of-order id is inserted in place */
        size_t at = c->n;
        while (at > 0 && c->v[at - 1].id > al->id)
            at--;
        memmove(&c->v[at + 1], &c->v[at], (c->n - at) * sizeof *c->v);
        c->n++;
        r = &c->v[at];
        memset(r, 0, sizeof *r);
        r->id = al->id;
    }
    struct gw_eval_alert *a = &r->a;
    snprintf(a->alertname, sizeof a->alertname, "%s", al->alertname);
    snprintf(a->detector, sizeof a->detector, "%s", al->detector);
    snprintf(a->cls, sizeof a->cls, "%s", al->cls);
    snprintf(r->host, sizeof r->host, "%s", al->hostname);
    a->gpu = al->gpu;
    a->severity = al->severity;
    a->active_at = al->active_at;
    a->fired_at = al->fired_at;
    a->resolved_at = al->resolved_at;
}

static int discard_samples(void *ud, const uint8_t *labels, size_t len, const int64_t *t, const double *v, size_t n)
{
    (void)ud, (void)labels, (void)len, (void)t, (void)v, (void)n;
    return 0;
}

static int want_metric(void *ud, const char *metric)
{
    (void)ud;
    return gw_det_wants_metric(metric, strlen(metric));
}

/* ------------------------------------------------------------ D7 events */

struct ckpt_store {
    struct gw_det_ckpt *v;
    size_t n, cap;
    int oom;
    const struct gw_eval_opts *o;   /* its on_ckpt hook */
};

static int keep_ckpt(void *ud, const struct gw_det_ckpt *e, const int64_t *t, const double *bps, size_t n)
{
    struct ckpt_store *c = ud;
    (void)t, (void)bps, (void)n;
    if (c->o && c->o->on_ckpt) c->o->on_ckpt(c->o->hook_ud, e);
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 256;
        struct gw_det_ckpt *v = realloc(c->v, cap * sizeof *v);
        if (!v) {
            c->oom = 1;
            return 0;
        }
        c->v = v;
        c->cap = cap;
    }
    c->v[c->n++] = *e;
    return 0;
}

/* ------------------------------------------------------------ host lookup */
struct host_ix {
    const char *name;
    uint32_t node;
};

static int cmp_host(const void *x, const void *y)
{
    return strcmp(((const struct host_ix *)x)->name, ((const struct host_ix *)y)->name);
}

static uint32_t node_of(const struct host_ix *ix, size_t n, const char *host)
{
    if (host[0] == '\0' || ix == NULL)
        return UINT32_MAX;
    struct host_ix key = {host, 0};
    const struct host_ix *h = bsearch(&key, ix, n, sizeof *ix, cmp_host);
    return h ? h->node : UINT32_MAX;
}

static uint64_t cpu_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Grows the handle array to hold id (new slots NO_HANDLE). */
static int grow_handles(uint32_t **h, size_t *cap, size_t need)
{
    size_t cap2 = *cap ? *cap : 1024;
    while (cap2 <= need) {
        if (cap2 > SIZE_MAX / 2 / sizeof **h)
            return GW_ENOMEM;
        cap2 *= 2;
    }
    uint32_t *v = realloc(*h, cap2 * sizeof *v);
    if (v == NULL)
        return GW_ENOMEM;
    for (size_t i = *cap; i < cap2; i++)
        v[i] = NO_HANDLE;
    *h = v;
    *cap = cap2;
    return GW_OK;
}

/* ------------------------------------------------------------- feeding */
struct feed {
    struct gw_det *d;
    struct gw_sim_gen *g;
    uint32_t **handles;
    size_t *cap;
    uint64_t *samples, *series;
    struct gw_eval_shuffler *sh;
    int oom;
};

/* One sample to the detectors: the series is classified on first sight. */
static void feed_sample(void *ud, uint32_t id, int64_t t, double v)
{
    struct feed *f = ud;
    if ((size_t)id >= *f->cap && grow_handles(f->handles, f->cap, id) != GW_OK) {
        f->oom = 1;
        return;
    }
    uint32_t h = (*f->handles)[id];
    if (h == NO_HANDLE) {
        size_t len = 0;
        const uint8_t *lab = gw_sim_gen_series_labels(f->g, id, &len);
        h = lab ? gw_det_series(f->d, id, lab, len) : 0;
        (*f->handles)[id] = h;
        *f->series += h != 0;
    }
    if (h != 0) {
        gw_det_sample(f->d, h, t, v);
        (*f->samples)++;
    }
}

/* After each delivered batch, as ingest does after each request. */
static void feed_batch_end(void *ud, int64_t t_max)
{
    struct feed *f = ud;
    gw_det_advance(f->d, t_max);
}

/* One evaluation's resources, released by run_close, and its counters. */
struct run {
    const struct gw_sim_config *cfg;
    struct gw_sim_timeline *tl;
    struct gw_sim_gen *g;
    struct gw_alerts *al;
    struct gw_det *d;
    uint32_t *handles;
    size_t cap;
    struct collector col;
    struct host_ix *hosts;
    struct gw_eval_alert *out;     /* the fired alerts, D1-D6 first, then D7 */
    size_t n_out, n_fail_alerts;
    struct ckpt_store ck;
    uint64_t samples, series, det_ns, scrapes;
    struct feed fd;
};

/* Timeline, generator (detector series only), alert set, detectors and,
 * with o->shuffle_seed, the arrival shuffler. */
static int run_open(struct run *r, const struct gw_det_config *dc, const struct gw_eval_opts *o,
                    struct gw_error *err)
{
    int rc;
    if ((rc = gw_sim_timeline_build(r->cfg, &r->tl, err)) != GW_OK)
        return rc;
    if ((rc = gw_sim_gen_open(&r->g, r->tl, want_metric, NULL, err)) != GW_OK)
        return rc;
    struct gw_alerts_opts ao;
    gw_alerts_opts_default(&ao);
    ao.log_dir = o->log_dir;   /* NULL: no log */
    ao.max_active = 1000000;
    ao.samples_interval_ms = -1;   /* no ALERTS series: nothing stores them here */
    if ((rc = gw_alerts_open(&r->al, &ao, err)) != GW_OK)
        return rc;
    gw_alerts_on_change(r->al, on_change, &r->col);
    if ((rc = gw_det_new(&r->d, dc, r->al, err)) != GW_OK)
        return rc;
    r->fd.d = r->d;
    r->fd.g = r->g;
    if (o->shuffle_seed != 0 &&
        (rc = gw_eval_shuffler_new(&r->fd.sh, o->shuffle_seed, o->shuffle_shards ? o->shuffle_shards : 4,
                                   o->shuffle_skew ? o->shuffle_skew : 3, feed_sample, feed_batch_end, &r->fd)) !=
            GW_OK)
        return gw_error_set(err, rc, "evaluate: out of memory for the arrival shuffler");
    return GW_OK;
}

/* Every scrape through the detectors (directly or through the shuffler),
 * then the end of the data; the detectors' CPU time into r->det_ns. */
static int run_feed(struct run *r, struct gw_error *err)
{
    struct gw_sim_scrape s;
    int64_t last_t = r->cfg->start_ms;
    int rc;
    for (;;) {
        int more = gw_sim_gen_next(r->g, &s, err);
        if (more < 0)
            return more;
        if (more == 0)
            break;
        uint64_t c0 = cpu_ns();
        if (r->fd.sh != NULL) {
            if ((rc = gw_eval_shuffler_scrape(r->fd.sh, &s)) != GW_OK)
                return gw_error_set(err, rc, "evaluate: out of memory buffering samples");
        } else {
            for (size_t i = 0; i < s.n; i++)
                feed_sample(&r->fd, s.series[i], s.t, s.v[i]);
            gw_det_advance(r->d, s.t);
        }
        r->det_ns += cpu_ns() - c0;
        if (r->fd.oom)
            return gw_error_set(err, GW_ENOMEM, "evaluate: out of memory for series handles");
        if (s.t > last_t)
            last_t = s.t;
        if (++r->scrapes % DRAIN_SCRAPES == 0) {
            gw_alerts_drain_samples(r->al, discard_samples, NULL);
            gw_det_ckpt_drain(r->d, keep_ckpt, &r->ck);
            if (r->col.o->on_drain) r->col.o->on_drain(r->col.o->hook_ud, r->d);
        }
    }
    if (r->fd.sh != NULL) {
        uint64_t c1 = cpu_ns();
        gw_eval_shuffler_flush(r->fd.sh);
        r->det_ns += cpu_ns() - c1;
        if (r->fd.oom)
            return gw_error_set(err, GW_ENOMEM, "evaluate: out of memory for series handles");
    }
    int64_t end = r->cfg->start_ms + r->cfg->duration_ms;
    uint64_t c0 = cpu_ns();
    gw_det_finish(r->d, end > last_t ? end : last_t);
    r->det_ns += cpu_ns() - c0;
    gw_alerts_drain_samples(r->al, discard_samples, NULL);
    gw_det_ckpt_drain(r->d, keep_ckpt, &r->ck);
    if (r->col.o->on_drain) r->col.o->on_drain(r->col.o->hook_ud, r->d);
    if (r->col.oom || r->ck.oom)
        return gw_error_set(err, GW_ENOMEM, "evaluate: out of memory collecting alerts");
    return GW_OK;
}

/* The alerts that fired, with their node (by hostname), into r->out:
 * D1-D6's first (r->n_fail_alerts of them), then D7's. */
static int run_collect(struct run *r, struct gw_error *err)
{
    const struct gw_sim_config *cfg = r->cfg;
    if ((r->hosts = calloc(cfg->nodes, sizeof *r->hosts)) == NULL)
        return gw_error_set(err, GW_ENOMEM, "evaluate: out of memory");
    size_t nh = 0;
    for (uint32_t i = 0; i < cfg->nodes; i++) {
        const char *name = gw_sim_node_name(r->tl, i);
        if (name != NULL) {
            r->hosts[nh].name = name;
            r->hosts[nh].node = i;
            nh++;
        }
    }
    qsort(r->hosts, nh, sizeof *r->hosts, cmp_host);
    if (r->col.n > 0 && (r->out = calloc(r->col.n, sizeof *r->out)) == NULL)
        return gw_error_set(err, GW_ENOMEM, "evaluate: out of memory for %zu alerts", r->col.n);
    for (size_t i = 0; i < r->col.n; i++) {
        struct alert_rec *rec = &r->col.v[i];
        if (rec->a.fired_at == INT64_MIN)
            continue;   /* a pending alert dropped without firing is no alert */
        struct gw_eval_alert *a = &r->out[r->n_out++];
        *a = rec->a;
        a->node = node_of(r->hosts, nh, rec->host);
        snprintf(a->host, sizeof a->host, "%s", rec->host);
        if (a->resolved_at == INT64_MIN)
            a->resolved_at = INT64_MAX;
    }
    /* D7's alerts are cluster-level checkpoint diagnoses: scored against the
       checkpoints, not the failures */
    for (size_t i = 0; i < r->n_out; i++)
        if (strcmp(r->out[i].detector, "D7") != 0) {
            struct gw_eval_alert x = r->out[r->n_fail_alerts];
            r->out[r->n_fail_alerts++] = r->out[i];
            r->out[i] = x;
        }
    return GW_OK;
}

/* The report of the run into *rep (replacing what it held). */
static int run_score(struct run *r, const struct gw_eval_opts *o, uint64_t w0, struct gw_eval_report *rep,
                     struct gw_error *err)
{
    struct gw_eval_report tmp;
    int rc;
    memset(&tmp, 0, sizeof tmp);
    if ((rc = gw_eval_score(r->tl, r->out, r->n_fail_alerts, o, &tmp, err)) != GW_OK)
        return rc;
    if ((rc = gw_eval_ckpt_score(r->tl, r->ck.v, r->ck.n, r->out + r->n_fail_alerts, r->n_out - r->n_fail_alerts,
                                 &tmp.ckpt)) != GW_OK) {
        gw_eval_report_free(&tmp);
        return gw_error_set(err, rc, "evaluate: out of memory scoring checkpoints");
    }
    tmp.samples = r->samples;
    tmp.series = r->series;
    tmp.det_ns_per_sample = r->samples > 0 ? (double)r->det_ns / (double)r->samples : 0.0;
    tmp.seconds = (double)(wall_ns() - w0) / 1e9;
    gw_eval_report_free(rep);
    *rep = tmp;
    return GW_OK;
}

/* The one cleanup path: frees whatever r holds (each step takes NULL). */
static void run_close(struct run *r)
{
    gw_eval_shuffler_free(r->fd.sh);
    free(r->out);
    free(r->ck.v);
    free(r->hosts);
    gw_det_free(r->d);
    gw_alerts_close(r->al);
    free(r->col.v);
    free(r->handles);
    gw_sim_gen_close(r->g);
    gw_sim_timeline_free(r->tl);
}

int gw_eval_run(const struct gw_sim_config *cfg, const struct gw_det_config *dc, const struct gw_eval_opts *o,
                struct gw_eval_report *rep, struct gw_eval_alert **alerts_out, size_t *n_alerts_out,
                struct gw_error *err)
{
    if (cfg == NULL || dc == NULL || o == NULL || rep == NULL)
        return gw_error_set(err, GW_EINVAL, "evaluate: missing config, options or report");
    int rc = gw_sim_config_check(cfg, err);
    if (rc != GW_OK)
        return rc;

    uint64_t w0 = wall_ns();
    struct run r;
    memset(&r, 0, sizeof r);
    r.cfg = cfg;
    r.col.o = r.ck.o = o;
    r.fd = (struct feed){.handles = &r.handles, .cap = &r.cap, .samples = &r.samples, .series = &r.series};
    if ((rc = run_open(&r, dc, o, err)) == GW_OK && (rc = run_feed(&r, err)) == GW_OK &&
        (rc = run_collect(&r, err)) == GW_OK && (rc = run_score(&r, o, w0, rep, err)) == GW_OK &&
        alerts_out != NULL) {
        *alerts_out = r.out;
        r.out = NULL;
        if (n_alerts_out != NULL)
            *n_alerts_out = r.n_out;
    }
    run_close(&r);
    return rc;
}
