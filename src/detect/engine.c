/* engine.c - the detector framework: classifies series once, keeps the
 * per-series / per-GPU / per-node state, moves data time, runs the
 * per-interval evaluations with peer statistics, and hands raises to the
 * alert table (alert.h).
 *
 * Per sample: one array index (the handle), a timestamp check, a switch on
 * the series' role; nothing allocates after a series is registered. Every
 * interval of data time (learnt from the data unless configured) the
 * evaluation computes the busy peers' medians (GPU power and SM clock over
 * GPUs at >= 80 % util; interrupt rate and runnable processes over nodes
 * whose GPUs are busy) in O(GPUs), then runs D4-D6 and the timers of D1/D2. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "detect_int.h"
#include "gpuwatch/labels.h"

/* --------------------------------------------------------------- catalogue */

struct role_name {
    const char *name;
    uint8_t role;
};

/* Metric names the detectors read. */
static const struct role_name k_roles[] = {
    {"DCGM_FI_DEV_XID_ERRORS", R_XID},
    {"DCGM_EXP_XID_ERRORS_COUNT", R_XID_COUNT},
    {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", R_REMAP_CORR},
    {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", R_REMAP_UNCORR},
    {"DCGM_FI_DEV_ROW_REMAP_PENDING", R_REMAP_PENDING},
    {"DCGM_FI_DEV_ROW_REMAP_FAILURE", R_REMAP_FAILURE},
    {"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", R_SBE_VOL},
    {"DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", R_SBE_AGG},
    {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", R_DBE_VOL},
    {"DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", R_DBE_AGG},
    {"DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", R_NVL_CRC_FLIT},
    {"DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", R_NVL_CRC_DATA},
    {"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", R_NVL_REPLAY},
    {"DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", R_NVL_RECOVERY},
    {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", R_PCIE_REPLAY},
    {"node_infiniband_symbol_error_total", R_IB_ERROR},
    {"node_infiniband_link_error_recovery_total", R_IB_ERROR},
    {"node_infiniband_link_downed_total", R_IB_ERROR},
    {"node_infiniband_port_receive_remote_physical_errors_total", R_IB_ERROR},
    {"node_infiniband_local_link_integrity_errors_total", R_IB_ERROR},
    {"node_infiniband_excessive_buffer_overrun_errors_total", R_IB_ERROR},
    {"DCGM_FI_DEV_GPU_UTIL", R_GPU_UTIL},
    {"DCGM_FI_DEV_POWER_USAGE", R_POWER},
    {"DCGM_FI_DEV_SM_CLOCK", R_SM_CLOCK},
    {"DCGM_FI_DEV_GPU_TEMP", R_GPU_TEMP},
    {"DCGM_FI_DEV_MEMORY_TEMP", R_MEM_TEMP},
    {"DCGM_FI_DEV_CLOCKS_EVENT_REASONS", R_CLOCK_REASONS},
    {"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", R_CLOCK_REASONS},   /* older dcgm-exporter name */
    {"DCGM_FI_DEV_THERMAL_VIOLATION", R_THERMAL_VIOL},
    {"DCGM_FI_DEV_POWER_VIOLATION", R_POWER_VIOL},
    {"DCGM_FI_DEV_ENFORCED_POWER_LIMIT", R_POWER_LIMIT},
    {"node_intr_total", R_INTR},
    {"node_procs_running", R_PROCS_RUNNING},
    {"node_load1", R_NODE_OTHER},
    {"up", R_UP},
};

static int role_of(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof k_roles / sizeof k_roles[0]; i++)
        if (strlen(k_roles[i].name) == len && memcmp(k_roles[i].name, name, len) == 0) return k_roles[i].role;
    return R_NONE;
}

int gw_det_wants_metric(const char *name, size_t len)
{
    return role_of(name, len) != R_NONE;
}

/* ------------------------------------------------------------------ config */

void gw_det_config_default(struct gw_det_config *c)
{
    memset(c, 0, sizeof *c);
    for (int i = 1; i <= 6; i++) c->enable[i] = 1;
    c->interval_ms = 0;
    c->grace_ms = 0;
    c->sentinel_min = 1e15;
    c->xid_hold_ms = 30 * 60000;
    c->collective_window_ms = 60000;
    c->collective_nodes = 3;
    c->repeat_bursts = 5;
    c->repeat_window_ms = 24 * 3600000LL;
    c->burst_gap_ms = 180000;
    c->remap_count = 2;
    c->remap_window_ms = 72 * 3600000LL;
    c->sbe_count = 3;
    c->sbe_window_ms = 24 * 3600000LL;
    c->pending_for_ms = 60000;
    c->memory_hold_ms = 7 * 86400000LL;
    c->link_hits = 2;
    c->link_of = 4;
    c->link_burst = 1000;
    c->link_hold_ms = 60 * 60000;
    c->frozen_util = 90;
    c->frozen_power_ratio = 0.4;
    c->frozen_clock_ratio = 0.5;
    c->frozen_buckets = 2;
    c->collapse_ratio = 0.35;
    c->collapse_buckets = 3;
    c->mask_fraction = 0.5;
    c->mask_ms = 5 * 60000;
    c->min_peers = 4;
    c->vanish_intervals = 2.5;
    c->sentinel_scrapes = 2;
    c->exporter_down_ms = 5 * 60000;
    c->silent_intervals = 6;
    c->throttle_hits = 3;
    c->throttle_of = 4;
    c->throttle_clock_loss = 0.05;
    c->throttle_long_ms = 10 * 60000;
    c->temp_warn = 85;
    c->temp_crit = 92;
    c->temp_warn_ms = 5 * 60000;
    c->temp_crit_ms = 2 * 60000;
    c->hbm_temp_warn = 95;
    c->slow_hold_ms = 30 * 60000;
}

/* ------------------------------------------------------------------ helpers */

int64_t det_interval(const struct gw_det *d)
{
    if (d->c.interval_ms > 0) return d->c.interval_ms;
    if (d->interval_est >= 1000) return (int64_t)(d->interval_est + 0.5);
    return 30000;
}

/* A node scraped slower than the fleet is judged by its own interval. */
int64_t det_node_interval(const struct gw_det *d, const struct det_node *n)
{
    int64_t iv = det_interval(d);
    if (d->c.interval_ms <= 0 && n->iv_est >= 1000 && n->iv_est > (double)iv) return (int64_t)(n->iv_est + 0.5);
    return iv;
}

void det_fmt_time(int64_t t, char *out, size_t cap)
{
    time_t s = (time_t)(t / 1000);
    struct tm tm;
    if (!gmtime_r(&s, &tm) || strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0) snprintf(out, cap, "%lld", (long long)t);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double det_median(double *v, size_t n)
{
    if (n == 0) return NAN;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void det_raise(struct gw_det *d, const struct gw_alert_spec *s, int64_t t, int detector)
{
    if (detector < 1 || detector > 6 || !d->c.enable[detector]) return;
    d->raises[detector]++;
    if (d->alerts) gw_alerts_raise(d->alerts, s, t);
}

static uint64_t hash64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static uint64_t hash_bytes(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= (uint8_t)p[i];
        h *= 1099511628211ULL;
    }
    return h ? h : 1;
}

/* ------------------------------------------------------------ tables */

static int sid_rehash(struct gw_det *d, uint64_t nmask)
{
    uint32_t *ns = calloc(nmask + 1, sizeof *ns);
    if (!ns) return GW_ENOMEM;
    for (uint32_t i = 0; i < d->n_series; i++) {
        uint64_t k = hash64(d->series[i].id) & nmask;
        while (ns[k]) k = (k + 1) & nmask;
        ns[k] = i + 1;
    }
    free(d->sid_slots);
    d->sid_slots = ns;
    d->mask_sid = nmask;
    return GW_OK;
}

static uint32_t sid_find(const struct gw_det *d, uint64_t id)
{
    if (!d->sid_slots) return 0;
    uint64_t k = hash64(id) & d->mask_sid;
    while (d->sid_slots[k]) {
        if (d->series[d->sid_slots[k] - 1].id == id) return d->sid_slots[k];
        k = (k + 1) & d->mask_sid;
    }
    return 0;
}

static int node_rehash(struct gw_det *d, uint64_t nmask)
{
    uint32_t *ns = calloc(nmask + 1, sizeof *ns);
    if (!ns) return GW_ENOMEM;
    for (uint32_t i = 0; i < d->n_nodes; i++) {
        uint64_t k = d->nodes[i].name_hash & nmask;
        while (ns[k]) k = (k + 1) & nmask;
        ns[k] = i + 1;
    }
    free(d->node_slots);
    d->node_slots = ns;
    d->mask_node = nmask;
    return GW_OK;
}

static void node_init(struct det_node *n)
{
    memset(n, 0, sizeof *n);
    n->first_seen = n->last_data = n->last_dcgm = n->last_node = INT64_MIN;
    n->up_t[0] = n->up_t[1] = INT64_MIN;
    n->up_ok_t[0] = n->up_ok_t[1] = INT64_MIN;
    n->dcgm_down_since = n->node_down_since = INT64_MIN;
    n->procs.t = INT64_MIN;
    n->intr_rate_t = INT64_MIN;
    for (int g = 0; g < DET_MAX_GPUS; g++) {
        struct det_gpu *x = &n->gpus[g];
        x->first_seen = x->last_seen = INT64_MIN;
        x->util.t = x->power.t = x->clock.t = x->temp.t = x->memtemp.t = x->reasons.t = x->limit.t = INT64_MIN;
        x->pending_since = x->bad_reason_since = INT64_MIN;
        x->temp_warn_since = x->temp_crit_since = x->hbm_warn_since = INT64_MIN;
        x->viol_t = INT64_MIN;
    }
}

int det_rebuild_tables(struct gw_det *d)
{
    uint64_t m = 2047;
    while ((uint64_t)d->n_series * 2 > m + 1) m = m * 2 + 1;
    if (sid_rehash(d, m) != GW_OK) return GW_ENOMEM;
    m = 127;
    while ((uint64_t)d->n_nodes * 2 > m + 1) m = m * 2 + 1;
    return node_rehash(d, m);
}

/* Node index for a name, created when new; UINT32_MAX on ENOMEM. */
static uint32_t node_get(struct gw_det *d, const char *name, size_t len)
{
    if (len >= DET_NODE_NAME) len = DET_NODE_NAME - 1;
    uint64_t h = hash_bytes(name, len);
    if (d->node_slots) {
        uint64_t k = h & d->mask_node;
        while (d->node_slots[k]) {
            struct det_node *n = &d->nodes[d->node_slots[k] - 1];
            if (n->name_hash == h && strlen(n->name) == len && memcmp(n->name, name, len) == 0)
                return d->node_slots[k] - 1;
            k = (k + 1) & d->mask_node;
        }
    }
    if (d->n_nodes >= DET_MAX_NODES) return UINT32_MAX;
    if (d->n_nodes == d->cap_nodes) {
        uint32_t nc = d->cap_nodes ? d->cap_nodes * 2 : 64;
        struct det_node *p = realloc(d->nodes, (size_t)nc * sizeof *p);
        if (!p) return UINT32_MAX;
        d->nodes = p;
        d->cap_nodes = nc;
    }
    if ((uint64_t)(d->n_nodes + 1) * 2 > d->mask_node + 1 &&
        node_rehash(d, d->mask_node ? d->mask_node * 2 + 1 : 127) != GW_OK)
        return UINT32_MAX;
    struct det_node *n = &d->nodes[d->n_nodes];
    node_init(n);
    memcpy(n->name, name, len);
    n->name[len] = 0;
    n->name_hash = h;
    uint64_t k = h & d->mask_node;
    while (d->node_slots[k]) k = (k + 1) & d->mask_node;
    d->node_slots[k] = d->n_nodes + 1;
    return d->n_nodes++;
}

/* ------------------------------------------------------------ lifecycle */

int gw_det_new(struct gw_det **out, const struct gw_det_config *c, struct gw_alerts *alerts, struct gw_error *err)
{
    *out = NULL;
    struct gw_det *d = calloc(1, sizeof *d);
    if (!d) return gw_error_set(err, GW_ENOMEM, "out of memory");
    if (c) d->c = *c;
    else gw_det_config_default(&d->c);
    d->alerts = alerts;
    d->now = INT64_MIN;
    d->next_eval = INT64_MIN;
    d->mask_until = INT64_MIN;
    pthread_mutex_init(&d->mu, NULL);
    if (alerts) {
        det_d1_rules(alerts, &d->c);
        det_d2_rules(alerts, &d->c);
        det_d3_rules(alerts, &d->c);
        det_d4_rules(alerts, &d->c);
        det_d5_rules(alerts, &d->c);
        det_d6_rules(alerts, &d->c);
    }
    *out = d;
    return GW_OK;
}

void gw_det_free(struct gw_det *d)
{
    if (!d) return;
    pthread_mutex_destroy(&d->mu);
    free(d->series);
    free(d->sid_slots);
    free(d->nodes);
    free(d->node_slots);
    free(d->scratch);
    free(d);
}

/* ------------------------------------------------------------ series */

static uint32_t series_add(struct gw_det *d, uint64_t id, const uint8_t *labels, size_t len)
{
    const char *name;
    size_t name_len;
    if (!gw_labels_get(labels, len, "__name__", 8, &name, &name_len)) return 0;
    int role = role_of(name, name_len);
    if (role == R_NONE) return 0;
    const char *host = NULL, *inst = NULL, *gpu_s = NULL;
    size_t host_len = 0, inst_len = 0, gpu_len = 0;
    if (!gw_labels_get(labels, len, "hostname", 8, &host, &host_len) || host_len == 0)
        if (!gw_labels_get(labels, len, "Hostname", 8, &host, &host_len)) host_len = 0;
    if (!gw_labels_get(labels, len, "instance", 8, &inst, &inst_len)) inst_len = 0;
    if (host_len == 0 && inst_len > 0) {
        host = inst;
        host_len = inst_len;
        /* strip ":port" (and the brackets of an IPv6 literal) */
        if (host[0] == '[') {
            const char *e = memchr(host, ']', host_len);
            if (e) {
                host_len = (size_t)(e - host) - 1;
                host++;
            }
        } else {
            const char *colon = memchr(host, ':', host_len);
            if (colon && !memchr(colon + 1, ':', host_len - (size_t)(colon + 1 - host))) host_len = (size_t)(colon - host);
        }
    }
    if (host_len == 0) return 0;
    int gpu = -1;
    if (gw_labels_get(labels, len, "gpu", 3, &gpu_s, &gpu_len) && gpu_len > 0 && gpu_len <= 2) {
        int g = 0, ok = 1;
        for (size_t i = 0; i < gpu_len; i++) {
            if (gpu_s[i] < '0' || gpu_s[i] > '9') ok = 0;
            else g = g * 10 + (gpu_s[i] - '0');
        }
        if (ok && g < DET_MAX_GPUS) gpu = g;
    }
    /* GPU-level roles need a GPU; node-level roles ignore one */
    if (role >= R_XID && role <= R_PCIE_REPLAY && gpu < 0) return 0;
    if (role >= R_GPU_UTIL && role <= R_GPU_OTHER && gpu < 0) return 0;
    uint32_t code = 0;
    if (role == R_XID || role == R_XID_COUNT) {
        const char *cs;
        size_t cl;
        if (gw_labels_get(labels, len, role == R_XID ? "err_code" : "xid", role == R_XID ? 8 : 3, &cs, &cl)) {
            for (size_t i = 0; i < cl && i < 9; i++)
                if (cs[i] >= '0' && cs[i] <= '9') code = code * 10 + (uint32_t)(cs[i] - '0');
        }
    }
    uint32_t ni = d->n_series < DET_MAX_SERIES ? node_get(d, host, host_len) : UINT32_MAX;
    if (ni == UINT32_MAX) {
        d->untracked++;
        return 0;
    }
    if (d->n_series == d->cap_series) {
        uint32_t nc = d->cap_series ? d->cap_series * 2 : 1024;
        struct det_series *p = realloc(d->series, (size_t)nc * sizeof *p);
        if (!p) return 0;
        d->series = p;
        d->cap_series = nc;
    }
    if ((uint64_t)(d->n_series + 1) * 2 > d->mask_sid + 1 &&
        sid_rehash(d, d->mask_sid ? d->mask_sid * 2 + 1 : 2047) != GW_OK)
        return 0;
    struct det_series *s = &d->series[d->n_series];
    memset(s, 0, sizeof *s);
    s->id = id;
    s->last_t = INT64_MIN;
    s->node = ni;
    s->gpu = (int8_t)gpu;
    s->role = (uint8_t)role;
    s->code = code;
    s->inst_hash = inst_len ? hash_bytes(inst, inst_len) : 0;
    struct det_node *n = &d->nodes[ni];
    if (gpu >= 0) {
        if ((uint8_t)(gpu + 1) > n->gpu_count) n->gpu_count = (uint8_t)(gpu + 1);
        if (s->inst_hash) n->dcgm_inst = s->inst_hash;
    }
    uint64_t k = hash64(id) & d->mask_sid;
    while (d->sid_slots[k]) k = (k + 1) & d->mask_sid;
    d->sid_slots[k] = d->n_series + 1;
    return ++d->n_series;
}

uint32_t gw_det_series(struct gw_det *d, uint64_t id, const uint8_t *labels, size_t len)
{
    if (!d) return 0;
    pthread_mutex_lock(&d->mu);
    uint32_t h = sid_find(d, id);
    if (!h) h = series_add(d, id, labels, len);
    pthread_mutex_unlock(&d->mu);
    return h;
}

/* ------------------------------------------------------------ evaluation */

static void peer_stats(struct gw_det *d, int64_t t, int64_t iv)
{
    size_t need = (size_t)d->n_nodes * DET_MAX_GPUS * 2 + (size_t)d->n_nodes * 2 + 4;
    if (need > d->scratch_cap) {
        double *p = realloc(d->scratch, need * sizeof *p);
        if (!p) {
            d->med_power = d->med_clock = d->med_intr = d->med_procs = NAN;
            d->n_busy_gpus = d->n_busy_nodes = 0;
            return;
        }
        d->scratch = p;
        d->scratch_cap = need;
    }
    double *pw = d->scratch, *ck = pw + (size_t)d->n_nodes * DET_MAX_GPUS;
    double *ir = ck + (size_t)d->n_nodes * DET_MAX_GPUS, *pr = ir + d->n_nodes;
    size_t npw = 0, nck = 0, nir = 0, npr = 0;
    uint32_t changed = 0, tracked = 0;
    for (uint32_t i = 0; i < d->n_nodes; i++) {
        struct det_node *n = &d->nodes[i];
        double usum = 0;
        unsigned un = 0;
        for (unsigned g = 0; g < n->gpu_count; g++) {
            struct det_gpu *x = &n->gpus[g];
            if (!det_fresh(&x->util, t, iv) || x->util.v >= d->c.sentinel_min) continue;
            usum += x->util.v;
            un++;
            if (x->util.v < 80) continue;
            if (det_fresh(&x->power, t, iv) && x->power.v < d->c.sentinel_min) pw[npw++] = x->power.v;
            if (det_fresh(&x->clock, t, iv) && x->clock.v < d->c.sentinel_min) ck[nck++] = x->clock.v;
        }
        n->busy_prev = n->busy;
        n->busy = un > 0 && usum / un >= 50;
        if (un > 0) {
            tracked++;
            if (n->busy != n->busy_prev) changed++;
        }
        if (n->busy) {
            if (n->intr_rate_t != INT64_MIN && t - n->intr_rate_t <= 2 * iv) ir[nir++] = n->intr_rate;
            if (det_fresh(&n->procs, t, iv)) pr[npr++] = n->procs.v;
        }
    }
    d->n_busy_gpus = (uint32_t)npw;
    d->n_busy_nodes = (uint32_t)nir;
    d->med_power = npw >= d->c.min_peers ? det_median(pw, npw) : NAN;
    d->med_clock = nck >= d->c.min_peers ? det_median(ck, nck) : NAN;
    d->med_intr = nir >= d->c.min_peers ? det_median(ir, nir) : NAN;
    d->med_procs = npr >= d->c.min_peers ? det_median(pr, npr) : NAN;
    if (d->med_power == d->med_power) d->ref_power = d->ref_power > 0 ? 0.95 * d->ref_power + 0.05 * d->med_power : d->med_power;
    if (d->med_clock == d->med_clock) d->ref_clock = d->ref_clock > 0 ? 0.95 * d->ref_clock + 0.05 * d->med_clock : d->med_clock;
    /* a fleet-wide transition (job start/stop) masks peer-relative checks */
    if (tracked >= d->c.min_peers && (double)changed >= d->c.mask_fraction * tracked) d->mask_until = t + d->c.mask_ms;
}

static void evaluate(struct gw_det *d, int64_t t)
{
    int64_t iv = det_interval(d);
    d->buckets++;
    peer_stats(d, t, iv);
    det_d1_eval(d, t);
    det_d4_eval(d, t);
    det_d5_eval(d, t);
    det_d6_eval(d, t);
}

static void run_due(struct gw_det *d)
{
    if (d->now == INT64_MIN) return;
    int64_t iv = det_interval(d);
    int64_t grace = d->c.grace_ms > 0 ? d->c.grace_ms : iv;
    if (d->next_eval == INT64_MIN) d->next_eval = (d->now / iv + 1) * iv;
    /* a long jump in data time: evaluate once at its end, not every step */
    if (d->now - grace - d->next_eval > 10 * iv) d->next_eval = ((d->now - grace) / iv) * iv;
    int ran = 0;
    while (d->next_eval + grace <= d->now) {
        evaluate(d, d->next_eval);
        d->next_eval += iv;
        ran = 1;
    }
    if (ran && d->alerts) gw_alerts_advance(d->alerts, d->now);
}

void gw_det_advance(struct gw_det *d, int64_t t)
{
    if (!d) return;
    pthread_mutex_lock(&d->mu);
    if (t > d->now) d->now = t;
    run_due(d);
    pthread_mutex_unlock(&d->mu);
}

void gw_det_finish(struct gw_det *d, int64_t t)
{
    if (!d) return;
    pthread_mutex_lock(&d->mu);
    if (t > d->now) d->now = t;
    run_due(d);
    if (d->next_eval != INT64_MIN && d->next_eval <= d->now) evaluate(d, d->now);
    if (d->alerts) gw_alerts_advance(d->alerts, d->now);
    pthread_mutex_unlock(&d->mu);
}

/* ------------------------------------------------------------ samples */

static int is_stale(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b == 0x7ff0000000000002ULL;
}

static void gpu_value(struct det_gpu *x, int role, int64_t t, double v)
{
    struct det_val *dv = NULL;
    switch (role) {
    case R_GPU_UTIL: dv = &x->util; break;
    case R_POWER: dv = &x->power; break;
    case R_SM_CLOCK: dv = &x->clock; break;
    case R_GPU_TEMP: dv = &x->temp; break;
    case R_MEM_TEMP: dv = &x->memtemp; break;
    case R_CLOCK_REASONS: dv = &x->reasons; break;
    case R_POWER_LIMIT: dv = &x->limit; break;
    default: return;
    }
    dv->v = v;
    dv->t = t;
}

static void sample_locked(struct gw_det *d, uint32_t handle, int64_t t, double v)
{
    if (handle == 0 || handle > d->n_series) return;
    struct det_series *s = &d->series[handle - 1];
    if (s->last_t != INT64_MIN && t <= s->last_t) return;
    d->samples++;
    struct det_node *n = &d->nodes[s->node];
    if (is_stale(v)) {
        /* the series went away: keep its last value for a reseed, count nothing as seen */
        s->last_t = t;
        return;
    }
    if (n->first_seen == INT64_MIN) n->first_seen = t;
    if ((s->role == R_GPU_TEMP || s->role == R_UP) && s->last_t != INT64_MIN && d->c.interval_ms <= 0) {
        double dt = (double)(t - s->last_t);
        if (dt >= 1000 && dt <= 600000) {
            d->interval_est = d->interval_est > 0 ? d->interval_est * 0.995 + dt * 0.005 : dt;
            n->iv_est = n->iv_est > 0 ? n->iv_est * 0.95 + dt * 0.05 : dt;
        }
    }
    if (s->role == R_UP) {
        int which = (n->dcgm_inst && s->inst_hash == n->dcgm_inst) ? 0 : 1;
        n->up_t[which] = t;
        n->up_v[which] = v;
        if (v == 1) n->up_ok_t[which] = t;
        if (which == 0 && v == 1 && (n->last_dcgm == INT64_MIN || t > n->last_dcgm + det_interval(d) / 2) &&
            n->up_without_gpu < 255)
            n->up_without_gpu++;
    } else {
        if (t > n->last_data) n->last_data = t;
        if (s->gpu >= 0) {
            if (n->last_dcgm == INT64_MIN || t > n->last_dcgm + det_interval(d) / 2) n->dcgm_scrapes++;
            if (t > n->last_dcgm) n->last_dcgm = t;
            n->up_without_gpu = 0;
            struct det_gpu *x = &n->gpus[s->gpu];
            x->scrape_no = n->dcgm_scrapes;
            if (x->first_seen == INT64_MIN) x->first_seen = t;
            if (t > x->last_seen) x->last_seen = t;
            gpu_value(x, s->role, t, v);
        } else if (t > n->last_node) {
            n->last_node = t;
        }
    }
    switch (s->role) {
    case R_XID:
    case R_XID_COUNT:
        det_d1_sample(d, s, t, v);
        break;
    case R_REMAP_CORR: case R_REMAP_UNCORR: case R_REMAP_PENDING: case R_REMAP_FAILURE:
    case R_SBE_VOL: case R_SBE_AGG: case R_DBE_VOL: case R_DBE_AGG:
        det_d2_sample(d, s, t, v);
        break;
    case R_NVL_CRC_FLIT: case R_NVL_CRC_DATA: case R_NVL_REPLAY: case R_NVL_RECOVERY:
    case R_PCIE_REPLAY: case R_IB_ERROR:
        det_d3_sample(d, s, t, v);
        break;
    case R_THERMAL_VIOL:
    case R_POWER_VIOL: {
        struct det_gpu *x = &n->gpus[s->gpu];
        double dlt = det_counter_delta(s, v);
        if (s->role == R_THERMAL_VIOL) x->viol_thermal_last += dlt;
        else x->viol_power_last += dlt;
        break;
    }
    case R_INTR:
        if (s->last_t != INT64_MIN && v >= s->last_v && t > s->last_t) {
            n->intr_rate = (v - s->last_v) * 1000.0 / (double)(t - s->last_t);
            n->intr_rate_t = t;
        }
        break;
    case R_PROCS_RUNNING:
        n->procs.v = v;
        n->procs.t = t;
        break;
    default:
        break;
    }
    s->last_t = t;
    s->last_v = v;
    if (t > d->now) {
        d->now = t;
        run_due(d);
    }
}

void gw_det_sample(struct gw_det *d, uint32_t handle, int64_t t, double v)
{
    if (!d) return;
    pthread_mutex_lock(&d->mu);
    sample_locked(d, handle, t, v);
    pthread_mutex_unlock(&d->mu);
}

void gw_det_stats(struct gw_det *d, struct gw_det_stats *st)
{
    memset(st, 0, sizeof *st);
    if (!d) return;
    pthread_mutex_lock(&d->mu);
    st->series = d->n_series;
    st->nodes = d->n_nodes;
    for (uint32_t i = 0; i < d->n_nodes; i++)
        for (unsigned g = 0; g < d->nodes[i].gpu_count; g++)
            if (d->nodes[i].gpus[g].first_seen != INT64_MIN) st->gpus++;
    st->samples = d->samples;
    st->buckets = d->buckets;
    memcpy(st->raises, d->raises, sizeof st->raises);
    st->interval_ms = det_interval(d);
    st->bytes = sizeof *d + (uint64_t)d->cap_series * sizeof(struct det_series) + (d->mask_sid + 1) * 4 +
                (uint64_t)d->cap_nodes * sizeof(struct det_node) + (d->mask_node + 1) * 4 +
                d->scratch_cap * sizeof(double);
    pthread_mutex_unlock(&d->mu);
}
