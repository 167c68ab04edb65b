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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "detect_int.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/json.h"
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
    {"DCGM_FI_DEV_MEM_CLOCK", R_MEM_CLOCK},
    {"DCGM_FI_DEV_GPU_TEMP", R_GPU_TEMP},
    {"DCGM_FI_DEV_MEMORY_TEMP", R_MEM_TEMP},
    {"DCGM_FI_DEV_FB_USED", R_FB_USED},
    {"DCGM_FI_DEV_CLOCKS_EVENT_REASONS", R_CLOCK_REASONS},
    {"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", R_CLOCK_REASONS},   /* older dcgm-exporter name */
    {"DCGM_FI_DEV_THERMAL_VIOLATION", R_THERMAL_VIOL},
    {"DCGM_FI_DEV_POWER_VIOLATION", R_POWER_VIOL},
    {"DCGM_FI_DEV_ENFORCED_POWER_LIMIT", R_POWER_LIMIT},
    {"node_intr_total", R_INTR},
    {"node_procs_running", R_PROCS_RUNNING},
    {"node_memory_MemAvailable_bytes", R_MEM_AVAIL},
    {"node_memory_MemTotal_bytes", R_MEM_TOTAL},
    {"node_vmstat_pgpgout", R_PGPGOUT},
    {"node_vmstat_pswpout", R_PSWPOUT},
    {"scrape_duration_seconds", R_SCRAPE_DUR},
    {"node_uname_info", R_UNAME},
    {"node_load1", R_NODE_OTHER},
    {"up", R_UP},
    /* D7 (the kind and the operation/device filter: det_d7_code) */
    {"node_mountstats_nfs_operations_sent_bytes_total", R_CKPT},
    {"node_mountstats_nfs_operations_received_bytes_total", R_CKPT},
    {"node_mountstats_nfs_write_bytes_total", R_CKPT},
    {"node_mountstats_nfs_read_bytes_total", R_CKPT},
    {"node_mountstats_nfs_operations_queue_time_seconds_total", R_CKPT},
    {"node_mountstats_nfs_operations_response_time_seconds_total", R_CKPT},
    {"node_mountstats_nfs_operations_request_time_seconds_total", R_CKPT},
    {"node_mountstats_nfs_operations_requests_total", R_CKPT},
    {"node_mountstats_nfs_transport_backlog_queue_total", R_CKPT},
    {"node_mountstats_nfs_transport_sends_total", R_CKPT},
    {"node_mountstats_nfs_transport_maximum_rpc_slots", R_CKPT},
    {"node_network_transmit_bytes_total", R_CKPT},
    {"node_network_receive_bytes_total", R_CKPT},
    {"node_network_speed_bytes", R_CKPT},
    {"node_infiniband_port_data_transmitted_bytes_total", R_CKPT},
    {"node_infiniband_port_data_received_bytes_total", R_CKPT},
    {"node_infiniband_rate_bytes_per_second", R_CKPT},
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


/* ------------------------------------------------------------------ helpers */

/* Scrape intervals are learnt on this grid, so jitter cannot make the
 * bucket width depend on which samples arrived first. */
static const int64_t k_grid[DET_GRID] = {1000, 2000, 5000, 10000, 15000, 20000, 30000, 60000, 120000, 300000};

static int grid_slot(int64_t dt)
{
    for (int i = 0; i < DET_GRID; i++)
        if (dt >= k_grid[i] * 4 / 5 && dt <= k_grid[i] * 6 / 5) return i;
    return -1;
}

int64_t det_interval(const struct gw_det *d)
{
    if (d->k.iv > 0) return d->k.iv;
    if (d->c.interval_ms > 0) return d->c.interval_ms;
    return 30000;
}

/* A node scraped slower than the fleet is judged by its own interval. */
int64_t det_node_interval(const struct gw_det *d, const struct det_node *n)
{
    int64_t iv = det_interval(d);
    if (d->c.interval_ms > 0) return iv;
    return n->iv_node > iv ? n->iv_node : iv;
}

/* The grid value seen most often in a node's histogram (0 under 2 counts). */
static int64_t node_grid_interval(const struct det_node *n)
{
    int best = -1;
    uint32_t cnt = 0, total = 0;
    for (int i = 0; i < DET_GRID; i++) {
        total += n->ivh[i];
        if (n->ivh[i] > cnt) {
            cnt = n->ivh[i];
            best = i;
        }
    }
    return best >= 0 && total >= 2 ? k_grid[best] : 0;
}

int det_node_interval_known(const struct gw_det *d, const struct det_node *n)
{
    return d->c.interval_ms > 0 || n->iv_node > 0;
}

/* Lateness: configured, else 150 s within 2 to 8 intervals. While a bucket
 * waits, a series may run up to about twice this ahead of it (the fleet
 * waits for its slowest node), and the evaluations still read up to 12 of
 * its samples before the bucket: the rings hold DET_RING = 32. */
int64_t det_default_lateness(const struct gw_det *d)
{
    int64_t iv = d->k.iv;
    int64_t cap = (DET_RING - 24) * iv;
    if (d->c.lateness_ms > 0) return d->c.lateness_ms < cap ? d->c.lateness_ms : cap;
    int64_t l = 150000;
    if (l < 2 * iv) l = 2 * iv;
    if (l > cap) l = cap;
    return l;
}

void det_fmt_time(int64_t t, char *out, size_t cap)
{
    gw_format_rfc3339_s(t, out, cap);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double det_median(double *v, size_t n)
{
    if (n == 0) return NAN;
    if (n <= 32) {   /* siblings and small fleets: insertion sort beats qsort's calls */
        for (size_t i = 1; i < n; i++) {
            double x = v[i];
            size_t j = i;
            for (; j > 0 && v[j - 1] > x; j--) v[j] = v[j - 1];
            v[j] = x;
        }
    } else {
        qsort(v, n, sizeof *v, cmp_double);
    }
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void raise_now(struct gw_det *d, const struct det_qraise *q)
{
    struct gw_alert_spec s = {
        .alertname = q->alertname, .severity = (enum gw_severity)q->severity, .hostname = d->nodes[q->node].name,
        .gpu = q->gpu, .detector = q->detector == 2 ? "D2" : "D3", .cls = q->cls, .action = q->action,
        .summary = q->summary, .evidence = q->evidence, .score = q->score, .for_ms = q->for_ms, .hold_ms = q->hold_ms,
    };
    if (d->alerts) gw_alerts_raise(d->alerts, &s, q->t);
}

/* Raises at data time t. Inside an evaluation the raise goes to the alert
 * table at once; from a sample hook (D2, D3: per-series events) it waits
 * for the evaluation of its bucket, which delivers the raises of the
 * bucket in (time, alert, node, GPU) order whatever order they came in. */
void det_raise(struct gw_det *d, const struct gw_alert_spec *s, int64_t t, int detector)
{
    if (detector < 1 || detector > 6 || !d->c.enable[detector]) return;
    d->k.raises[detector]++;
    if (!d->alerts) return;
    if (d->in_eval || (detector != 2 && detector != 3)) {
        gw_alerts_raise(d->alerts, s, t);
        return;
    }
    if (!d->q && !(d->q = calloc(DET_QRAISES, sizeof *d->q))) {
        gw_alerts_raise(d->alerts, s, t);
        return;
    }
    if (d->q_n == DET_QRAISES) {   /* full: deliver the oldest now (order no longer guaranteed) */
        raise_now(d, &d->q[0]);
        memmove(&d->q[0], &d->q[1], (DET_QRAISES - 1) * sizeof *d->q);
        d->q_n--;
    }
    struct det_qraise *q = &d->q[d->q_n++];
    memset(q, 0, sizeof *q);
    q->t = t;
    q->for_ms = s->for_ms;
    q->hold_ms = s->hold_ms;
    q->score = s->score;
    q->alertname = s->alertname;
    q->cls = s->cls;
    q->action = s->action;
    /* the hostname is a node's own name buffer: its index from the address */
    q->node = UINT32_MAX;
    uintptr_t base = (uintptr_t)d->nodes, p = (uintptr_t)s->hostname;
    if (d->n_nodes && p >= base && p < base + (uintptr_t)d->n_nodes * sizeof *d->nodes) {
        uint32_t i = (uint32_t)((p - base) / sizeof *d->nodes);
        if (d->nodes[i].name == s->hostname) q->node = i;
    }
    if (q->node == UINT32_MAX) {   /* not a node's own name buffer: deliver now */
        d->q_n--;
        gw_alerts_raise(d->alerts, s, t);
        return;
    }
    q->gpu = (int8_t)s->gpu;
    q->severity = (uint8_t)s->severity;
    q->detector = (uint8_t)detector;
    snprintf(q->summary, sizeof q->summary, "%s", s->summary ? s->summary : "");
    snprintf(q->evidence, sizeof q->evidence, "%s", s->evidence ? s->evidence : "");
}

static int cmp_qraise(const void *a, const void *b)
{
    const struct det_qraise *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    int c = strcmp(x->alertname, y->alertname);
    if (c) return c;
    if (x->node != y->node) return x->node < y->node ? -1 : 1;
    if (x->gpu != y->gpu) return x->gpu < y->gpu ? -1 : 1;
    return strcmp(x->evidence, y->evidence);
}

/* Delivers the queued raises before T (all of them when T is INT64_MAX). */
static void deliver_raises(struct gw_det *d, int64_t T)
{
    if (!d->q_n) return;
    uint32_t k = 0;
    /* due ones to the front, in their arrival order, then sorted */
    for (uint32_t i = 0; i < d->q_n; i++)
        if (d->q[i].t < T) {
            if (i != k) {
                struct det_qraise x = d->q[k];
                d->q[k] = d->q[i];
                d->q[i] = x;
            }
            k++;
        }
    if (!k) return;
    qsort(d->q, k, sizeof *d->q, cmp_qraise);
    for (uint32_t i = 0; i < k; i++) raise_now(d, &d->q[i]);
    memmove(&d->q[0], &d->q[k], (d->q_n - k) * sizeof *d->q);
    d->q_n -= k;
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

static void pres_init(struct det_pres *p)
{
    p->base = INT64_MIN;
    p->bits = 0;
}

static void node_init(struct det_node *n)
{
    memset(n, 0, sizeof *n);
    n->first_seen = n->max_t = INT64_MIN;
    n->wm_b = INT64_MIN;
    n->dormant = 1;
    n->last_answer[0] = n->last_answer[1] = INT64_MIN;
    for (int j = 0; j < 2; j++) {
        pres_init(&n->answered[j]);
        pres_init(&n->up_seen[j]);
    }
    pres_init(&n->any_gpu);
    for (int g = 0; g < DET_MAX_GPUS; g++) {
        struct det_gpu *x = &n->gpus[g];
        x->first_seen = x->last_seen = INT64_MIN;
        pres_init(&x->pres);
        x->pending_since = x->bad_reason_since = INT64_MIN;
        x->temp_warn_since = x->temp_crit_since = x->hbm_warn_since = INT64_MIN;
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
uint32_t det_node_get(struct gw_det *d, const char *name, size_t len)
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
    d->k.fleet_b = INT64_MIN;
    d->k.max_t = INT64_MIN;
    d->k.min_t = INT64_MAX;
    d->k.mask_until = INT64_MIN;
    pres_init(&d->k.pres_any);
    if (d->c.interval_ms > 0) {
        d->k.iv = d->c.interval_ms;
        d->k.lateness = det_default_lateness(d);
    }
    int rc = det_ident_init(d, err);
    if (rc != GW_OK) {
        free(d);
        return rc;
    }
    pthread_mutex_init(&d->mu, NULL);
    if (alerts) {
        det_d1_rules(alerts, &d->c);
        det_d2_rules(alerts, &d->c);
        det_d3_rules(alerts, &d->c);
        det_d4_rules(alerts, &d->c);
        det_d5_rules(alerts, &d->c);
        det_d6_rules(alerts, &d->c);
        det_d7_rules(alerts, &d->c);
    }
    *out = d;
    return GW_OK;
}

void gw_det_free(struct gw_det *d)
{
    if (!d) return;
    pthread_mutex_destroy(&d->mu);
    det_ident_free(d);
    free(d->series);
    free(d->sid_slots);
    free(d->nodes);
    free(d->node_slots);
    free(d->scratch);
    free(d->q);
    det_d7_free(d);
    det_d8_free(d);
    free(d);
}

/* ------------------------------------------------------------ buckets */

int det_scrape_slow(const struct gw_det *d, const struct det_node *n, int64_t T, double *now, double *usual)
{
    /* a fixed window (how many more samples a ring holds depends on the
     * arrival): the newest 4 scrapes against the median of the 8 before */
    double v[12];
    if (det_recent(d, n->slot[N_SCRAPE_DCGM], T, v, 12, NULL) < 12) return 0;
    double base = det_median(v + 4, 8);
    *now = v[0];
    *usual = base;
    return base > 0 && v[0] > 3 * base && v[0] > base + 1 && v[1] > 2 * base;
}

int64_t det_bucket_of(const struct gw_det *d, int64_t t)
{
    int64_t iv = d->k.iv, q = t / iv;
    return (t % iv != 0 && t < 0) ? q - 1 : q;
}

int det_pres_has(const struct det_pres *p, int64_t b)
{
    if (p->base == INT64_MIN || b > p->base || p->base - b >= 64) return 0;
    return (int)(p->bits >> (p->base - b) & 1);
}

void det_pres_set(struct det_pres *p, int64_t b)
{
    if (p->base == INT64_MIN || b > p->base) {
        int64_t sh = p->base == INT64_MIN ? 64 : b - p->base;
        p->bits = sh >= 64 ? 0 : p->bits << sh;
        p->base = b;
    }
    if (p->base - b < 64) p->bits |= 1ULL << (p->base - b);
}

/* ------------------------------------------------------------ rings */

static void ring_push(struct det_series *s, int64_t t, double v)
{
    s->ring_head = (uint8_t)((s->ring_head + 1) % DET_RING);
    s->rt[s->ring_head] = t;
    s->rv[s->ring_head] = v;
    if (s->ring_n < DET_RING) s->ring_n++;
}

int det_at(const struct gw_det *d, uint32_t slot, int64_t T, double *v)
{
    if (!slot || slot > d->n_series) return 0;
    const struct det_series *s = &d->series[slot - 1];
    int64_t fresh = 2 * det_node_interval(d, &d->nodes[s->node]);
    for (unsigned i = 0; i < s->ring_n; i++) {
        unsigned k = (s->ring_head + DET_RING - i) % DET_RING;
        if (s->rt[k] >= T) continue;
        if (s->rt[k] < T - fresh) return 0;
        *v = s->rv[k];
        return 1;
    }
    return 0;
}

unsigned det_recent(const struct gw_det *d, uint32_t slot, int64_t T, double *out, unsigned n, int64_t *t_out)
{
    if (!slot || slot > d->n_series) return 0;
    const struct det_series *s = &d->series[slot - 1];
    unsigned got = 0;
    for (unsigned i = 0; i < s->ring_n && got < n; i++) {
        unsigned k = (s->ring_head + DET_RING - i) % DET_RING;
        if (s->rt[k] >= T) continue;
        out[got++] = s->rv[k];
        if (t_out) *t_out = s->rt[k];
    }
    return got;
}

/* ------------------------------------------------------------ series */

static int gpu_slot_of(int role)
{
    switch (role) {
    case R_GPU_UTIL: return G_UTIL;
    case R_POWER: return G_POWER;
    case R_SM_CLOCK: return G_CLOCK;
    case R_MEM_CLOCK: return G_MCLOCK;
    case R_GPU_TEMP: return G_TEMP;
    case R_MEM_TEMP: return G_MEMTEMP;
    case R_FB_USED: return G_FB;
    case R_CLOCK_REASONS: return G_REASONS;
    case R_POWER_LIMIT: return G_LIMIT;
    default: return -1;
    }
}

static int node_slot_of(int role, int job)
{
    switch (role) {
    case R_INTR: return N_INTR;
    case R_PROCS_RUNNING: return N_PROCS;
    case R_MEM_AVAIL: return N_MEMAVAIL;
    case R_MEM_TOTAL: return N_MEMTOTAL;
    case R_PGPGOUT: return N_PGPGOUT;
    case R_PSWPOUT: return N_PSWPOUT;
    case R_SCRAPE_DUR: return job == JOB_DCGM ? N_SCRAPE_DCGM : job == JOB_NODE ? N_SCRAPE_NODE : -1;
    default: return -1;
    }
}

static int is_rate_role(int role)
{
    return role == R_INTR || role == R_PGPGOUT || role == R_PSWPOUT;
}

static int contains_ci(const char *s, size_t n, const char *w)
{
    size_t wn = strlen(w);
    for (size_t i = 0; i + wn <= n; i++)
        if (!strncasecmp(s + i, w, wn)) return 1;
    return 0;
}

/* Which exporter a series comes from: DCGM metrics and GPU series are the
 * DCGM exporter's, node_* node_exporter's; `up` and scrape_* by the job
 * name, the exporter's default port, or (decided at its samples) the
 * instance that carries the node's GPU series. */
static uint8_t job_of(const uint8_t *labels, size_t len, const char *name, size_t name_len, int gpu,
                      const char *inst, size_t inst_len)
{
    if (gpu >= 0 || (name_len > 5 && !memcmp(name, "DCGM_", 5))) return JOB_DCGM;
    if (name_len > 5 && !memcmp(name, "node_", 5)) return JOB_NODE;
    const char *j;
    size_t jn;
    if (gw_labels_get(labels, len, "job", 3, &j, &jn)) {
        if (contains_ci(j, jn, "dcgm") || contains_ci(j, jn, "gpu")) return JOB_DCGM;
        if (contains_ci(j, jn, "node")) return JOB_NODE;
    }
    if (inst_len > 5 && !memcmp(inst + inst_len - 5, ":9400", 5)) return JOB_DCGM;
    if (inst_len > 5 && !memcmp(inst + inst_len - 5, ":9100", 5)) return JOB_NODE;
    return JOB_UNKNOWN;
}

static uint32_t series_add(struct gw_det *d, uint64_t id, const uint8_t *labels, size_t len)
{
    const char *name;
    size_t name_len;
    if (!gw_labels_get(labels, len, "__name__", 8, &name, &name_len)) return 0;
    int role = role_of(name, name_len);
    if (role == R_NONE) return 0;
    const char *inst = NULL, *gpu_s = NULL;
    size_t inst_len = 0, gpu_len = 0;
    if (!gw_labels_get(labels, len, "instance", 8, &inst, &inst_len)) inst_len = 0;
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
    if (role >= R_INTR) gpu = -1;
    uint32_t code = 0;
    if (role == R_XID || role == R_XID_COUNT) {
        const char *cs;
        size_t cl;
        if (gw_labels_get(labels, len, role == R_XID ? "err_code" : "xid", role == R_XID ? 8 : 3, &cs, &cl)) {
            for (size_t i = 0; i < cl && i < 9; i++)
                if (cs[i] >= '0' && cs[i] <= '9') code = code * 10 + (uint32_t)(cs[i] - '0');
        }
    }
    if (role == R_CKPT && (!d->c.ckpt_enable || (code = det_d7_code(labels, len, name, name_len)) == UINT32_MAX)) return 0;
    uint32_t ni = d->n_series < DET_MAX_SERIES ? det_ident_node(d, labels, len) : UINT32_MAX;
    if (ni == UINT32_MAX) {
        d->k.untracked++;
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
    s->job = job_of(labels, len, name, name_len, gpu, inst, inst_len);
    s->ring_head = DET_RING - 1;
    struct det_node *n = &d->nodes[ni];
    s->next = n->series_head;
    n->series_head = d->n_series + 1;
    if (gpu >= 0) {
        if ((uint8_t)(gpu + 1) > n->gpu_count) n->gpu_count = (uint8_t)(gpu + 1);
        if (s->inst_hash && !n->dcgm_inst) n->dcgm_inst = s->inst_hash;
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

/* Peer statistics of the bucket ending at T: the busy GPUs' median power
 * and SM clock, the busy nodes' median interrupt rate, runnable processes
 * and GPU util, and the fleet transition mask. */
static void peer_stats(struct gw_det *d, int64_t T)
{
    size_t need = (size_t)d->n_nodes * DET_MAX_GPUS * 2 + (size_t)d->n_nodes * 4 + 4;
    if (need > d->scratch_cap) {
        double *p = realloc(d->scratch, need * sizeof *p);
        if (!p) {
            d->med_power = d->med_clock = d->med_intr = d->med_procs = d->med_util = d->med_intr_idle = NAN;
            d->n_busy_gpus = d->n_busy_nodes = 0;
            return;
        }
        d->scratch = p;
        d->scratch_cap = need;
    }
    double *pw = d->scratch, *ck = pw + (size_t)d->n_nodes * DET_MAX_GPUS;
    double *ir = ck + (size_t)d->n_nodes * DET_MAX_GPUS, *pr = ir + d->n_nodes, *ut = pr + d->n_nodes;
    double *idle = ut + d->n_nodes;
    size_t npw = 0, nck = 0, nir = 0, npr = 0, nut = 0, nidle = 0;
    uint32_t changed = 0, tracked = 0;
    for (uint32_t i = 0; i < d->n_nodes; i++) {
        struct det_node *n = &d->nodes[i];
        if (!det_node_live(n)) continue;
        double usum = 0, v;
        unsigned un = 0;
        for (unsigned g = 0; g < n->gpu_count; g++) {
            struct det_gpu *x = &n->gpus[g];
            double u;
            if (!det_at(d, x->slot[G_UTIL], T, &u) || u >= d->c.sentinel_min) continue;
            usum += u;
            un++;
            if (u < 80) continue;
            if (det_at(d, x->slot[G_POWER], T, &v) && v < d->c.sentinel_min) pw[npw++] = v;
            if (det_at(d, x->slot[G_CLOCK], T, &v) && v < d->c.sentinel_min) ck[nck++] = v;
        }
        n->busy_prev = n->busy;
        n->busy = un > 0 && usum / un >= 50;
        if (un > 0) {
            tracked++;
            if (n->busy != n->busy_prev) changed++;
        }
        if (n->busy) {
            ut[nut++] = usum / un;
            if (det_at(d, n->slot[N_INTR], T, &v)) ir[nir++] = v;
            if (det_at(d, n->slot[N_PROCS], T, &v)) pr[npr++] = v;
        } else if (un > 0 && det_at(d, n->slot[N_INTR], T, &v)) {
            idle[nidle++] = v;
        }
    }
    d->med_intr_idle = nidle >= d->c.min_peers ? det_median(idle, nidle) : NAN;
    d->n_busy_gpus = (uint32_t)npw;
    d->n_busy_nodes = (uint32_t)nut;
    d->med_power = npw >= d->c.min_peers ? det_median(pw, npw) : NAN;
    d->med_clock = nck >= d->c.min_peers ? det_median(ck, nck) : NAN;
    d->med_intr = nir >= d->c.min_peers ? det_median(ir, nir) : NAN;
    d->med_procs = npr >= d->c.min_peers ? det_median(pr, npr) : NAN;
    d->med_util = nut >= d->c.min_peers ? det_median(ut, nut) : NAN;
    if (d->med_power == d->med_power) d->k.ref_power = d->k.ref_power > 0 ? 0.95 * d->k.ref_power + 0.05 * d->med_power : d->med_power;
    if (d->med_clock == d->med_clock) d->k.ref_clock = d->k.ref_clock > 0 ? 0.95 * d->k.ref_clock + 0.05 * d->med_clock : d->med_clock;
    /* a fleet-wide transition (job start/stop) masks peer-relative checks */
    if (tracked >= d->c.min_peers && (double)changed >= d->c.mask_fraction * tracked) d->k.mask_until = T + d->c.mask_ms;
}

void det_evaluate(struct gw_det *d, int64_t T)
{
    d->in_eval = 1;
    deliver_raises(d, T);
    int64_t b = det_bucket_of(d, T - 1);
    uint64_t t0 = gw_mono_ns(), t1;
#define DET_TIMED(slot, call) (call, t1 = gw_mono_ns(), d->eval_ns[slot] += t1 - t0, t0 = t1)
    if (det_pres_has(&d->k.pres_any, b)) {
        d->k.buckets++;
        DET_TIMED(0, peer_stats(d, T));
        DET_TIMED(1, det_d1_eval(d, T));
        DET_TIMED(4, det_d4_eval(d, T));
        DET_TIMED(5, det_d5_eval(d, T));
        DET_TIMED(6, det_d6_eval(d, T));
        DET_TIMED(7, det_d7_eval(d, T));
        DET_TIMED(8, det_d8_eval(d, T));
    } else {
        DET_TIMED(1, det_d1_eval(d, T));   /* pending onsets and collective decisions still come due */
    }
#undef DET_TIMED
    d->in_eval = 0;
    if (d->alerts) gw_alerts_advance(d->alerts, T);
}

void gw_det_advance(struct gw_det *d, int64_t t)
{
    if (!d) return;
    (void)t;   /* buckets are judged when complete (watermark.c), not when data time moves */
    pthread_mutex_lock(&d->mu);
    det_wm_run(d);
    pthread_mutex_unlock(&d->mu);
}

void gw_det_finish(struct gw_det *d, int64_t t)
{
    if (!d) return;
    pthread_mutex_lock(&d->mu);
    if (t < d->k.max_t) t = d->k.max_t;
    if (d->k.iv > 0 && d->k.fleet_b != INT64_MIN) {
        /* judge every bucket up to t, complete or not */
        int64_t last = det_bucket_of(d, t);
        if (last - d->k.fleet_b > 100000) d->k.fleet_b = last - 100000;
        while (d->k.fleet_b <= last) {
            det_evaluate(d, (d->k.fleet_b + 1) * d->k.iv);
            d->k.fleet_b++;
        }
        det_wm_recount(d);
    }
    d->in_eval = 1;
    deliver_raises(d, INT64_MAX);
    d->in_eval = 0;
    if (d->alerts && t != INT64_MIN) gw_alerts_advance(d->alerts, t);
    pthread_mutex_unlock(&d->mu);
}

/* ------------------------------------------------------------ samples */

static int is_stale(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b == 0x7ff0000000000002ULL;
}

/* Exporter of a series; `up` / scrape_* without a job hint by the instance
 * that carries the node's GPU series. */
static uint8_t job_now(const struct det_node *n, const struct det_series *s)
{
    if (s->job != JOB_UNKNOWN) return s->job;
    return n->dcgm_inst ? (s->inst_hash == n->dcgm_inst ? JOB_DCGM : JOB_NODE) : JOB_NODE;
}

/* The buckets in which the pipeline, the node's exporters and its GPUs
 * delivered (D5 reads them). */
static void presence(struct gw_det *d, const struct det_series *s, uint8_t job, int64_t b, double v)
{
    struct det_node *n = &d->nodes[s->node];
    det_pres_set(&d->k.pres_any, b);
    if (s->role == R_UP) {
        det_pres_set(&n->up_seen[job], b);
        if (v == 1) det_pres_set(&n->answered[job], b);
    } else if (s->role != R_SCRAPE_DUR) {
        det_pres_set(&n->answered[job], b);
        if (s->gpu >= 0) {
            det_pres_set(&n->gpus[s->gpu].pres, b);
            det_pres_set(&n->any_gpu, b);
        }
    }
}

/* The interval became known: the samples before it get their buckets
 * from the rings, as if it had been known from the start. */
static void replay_presence(struct gw_det *d)
{
    for (uint32_t i = 0; i < d->n_series; i++) {
        const struct det_series *s = &d->series[i];
        const struct det_node *n = &d->nodes[s->node];
        for (unsigned k = 0; k < s->ring_n; k++) {
            unsigned at = (s->ring_head + DET_RING - k) % DET_RING;
            presence(d, s, job_now(n, s), det_bucket_of(d, s->rt[at]), s->rv[at]);
        }
    }
}

static void learn_interval(struct gw_det *d, struct det_node *n, int64_t dt)
{
    int g = grid_slot(dt);
    if (g < 0) return;
    if (n->ivh[g] < 65535) {
        n->ivh[g]++;
        n->iv_node = node_grid_interval(n);
    }
    if (d->k.iv > 0) return;
    d->k.ivh[g]++;
    uint32_t total = 0, best = 0;
    int bi = 0;
    for (int i = 0; i < DET_GRID; i++) {
        total += d->k.ivh[i];
        if (d->k.ivh[i] > best) {
            best = d->k.ivh[i];
            bi = i;
        }
    }
    if (total < 64) return;
    d->k.iv = k_grid[bi];
    replay_presence(d);
    det_wm_locked_interval(d);
}

static void set_slot(struct gw_det *d, uint32_t *slot, uint32_t handle, int64_t t)
{
    if (*slot == handle) return;
    if (*slot && *slot <= d->n_series && d->series[*slot - 1].last_t > t) return;   /* a newer series feeds it */
    *slot = handle;
}

static void sample_locked(struct gw_det *d, uint32_t handle, int64_t t, double v)
{
    if (handle == 0 || handle > d->n_series) return;
    struct det_series *s = &d->series[handle - 1];
    if (s->last_t != INT64_MIN && t <= s->last_t) return;
    d->k.samples++;
    struct det_node *n = &d->nodes[s->node];
    int64_t old_t = s->last_t;
    uint32_t old_ns = s->nsamp;
    int first_node_sample = n->first_seen == INT64_MIN;
    if (first_node_sample || t < n->first_seen) n->first_seen = t;
    if (t > n->max_t) n->max_t = t;
    if (t > d->k.max_t) d->k.max_t = t;
    if (d->k.fleet_b == INT64_MIN && t < d->k.min_t) d->k.min_t = t;
    if (first_node_sample) det_wm_node_added(d, s->node);
    int64_t b = d->k.iv > 0 ? det_bucket_of(d, t) : INT64_MIN;
    if (b != INT64_MIN && d->k.fleet_b != INT64_MIN && b < d->k.fleet_b) d->k.late++;
    if (is_stale(v)) {
        /* the series went away: keep its last value for a reseed */
        s->last_t = t;
        if (s->nsamp < UINT32_MAX) s->nsamp++;
        det_wm_sample(d, s, old_t, old_ns);
        return;
    }
    if ((s->role == R_GPU_TEMP || s->role == R_UP || s->role == R_PROCS_RUNNING) && old_t != INT64_MIN &&
        d->c.interval_ms <= 0)
        learn_interval(d, n, t - old_t);
    if (d->k.iv > 0 && d->k.fleet_b == INT64_MIN) {   /* a configured interval: buckets from the first sample */
        replay_presence(d);
        det_wm_locked_interval(d);
    }
    if (d->k.iv > 0 && b == INT64_MIN) b = det_bucket_of(d, t);
    uint8_t job = job_now(n, s);
    if (b != INT64_MIN) presence(d, s, job, b, v);
    if (s->role == R_UP) {
        if (v == 1 && t > n->last_answer[job]) n->last_answer[job] = t;
    } else if (s->role != R_SCRAPE_DUR) {
        if (t > n->last_answer[job]) n->last_answer[job] = t;
        if (s->gpu >= 0) {
            struct det_gpu *x = &n->gpus[s->gpu];
            if (x->first_seen == INT64_MIN || t < x->first_seen) x->first_seen = t;
            if (t > x->last_seen) x->last_seen = t;
        }
    }
    /* the ring the evaluations read */
    int gs = s->gpu >= 0 ? gpu_slot_of(s->role) : -1;
    int ns = s->gpu < 0 ? node_slot_of(s->role, job) : -1;
    if (is_rate_role(s->role)) {
        if (old_t != INT64_MIN && v >= s->last_v && t > old_t && s->last_v == s->last_v)
            ring_push(s, t, (v - s->last_v) * 1000.0 / (double)(t - old_t));
    } else {
        ring_push(s, t, v);   /* every series: the evaluations read gauges, the interval lock replays presence */
    }
    if (gs >= 0) set_slot(d, &n->gpus[s->gpu].slot[gs], handle, t);
    else if (ns >= 0) set_slot(d, &n->slot[ns], handle, t);
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
    default:
        break;
    }
    s->last_t = t;
    s->last_v = v;
    if (s->nsamp < UINT32_MAX) s->nsamp++;
    det_wm_sample(d, s, old_t, old_ns);
}

void gw_det_sample(struct gw_det *d, uint32_t handle, int64_t t, double v)
{
    if (!d) return;
    pthread_mutex_lock(&d->mu);
    sample_locked(d, handle, t, v);
    pthread_mutex_unlock(&d->mu);
}

int gw_det_set_config(struct gw_det *d, const struct gw_det_config *c, char *kept, size_t kept_cap)
{
    int n = 0;
    size_t len = 0;
    if (kept && kept_cap) kept[0] = '\0';
    if (!d) return 0;
    pthread_mutex_lock(&d->mu);
    struct gw_det_config nc = *c, *old = &d->c;
    /* what was decided when the engine started: which detectors (and their
     * rules) exist, how series map to nodes, the interval source */
#define KEEP(cond, field, name)                                                                 \
    do {                                                                                        \
        if (cond) {                                                                             \
            memcpy(&nc.field, &old->field, sizeof nc.field);                                    \
            n++;                                                                                \
            if (kept && len < kept_cap) {                                                       \
                int w = snprintf(kept + len, kept_cap - len, "%s%s", len ? "," : "", name);     \
                if (w > 0) len += (size_t)w;                                                    \
            }                                                                                   \
        }                                                                                       \
    } while (0)
    KEEP(memcmp(nc.enable, old->enable, sizeof nc.enable) != 0, enable, "d1..d6");
    KEEP(nc.ckpt_enable != old->ckpt_enable, ckpt_enable, "d7");
    KEEP(nc.act_enable != old->act_enable, act_enable, "d8");
    KEEP(nc.interval_ms != old->interval_ms, interval_ms, "interval");
    KEEP(strcmp(nc.node_labels, old->node_labels) != 0, node_labels, "node_labels");
    KEEP(strcmp(nc.node_regex, old->node_regex) != 0, node_regex, "node_regex");
    KEEP(strcmp(nc.node_map, old->node_map) != 0, node_map, "node_map");
    KEEP(nc.strip_domain != old->strip_domain, strip_domain, "strip_domain");
#undef KEEP
    d->c = nc;
    pthread_mutex_unlock(&d->mu);
    return n;
}

void gw_det_get_config(struct gw_det *d, struct gw_det_config *c)
{
    pthread_mutex_lock(&d->mu);
    *c = d->c;
    pthread_mutex_unlock(&d->mu);
}

void gw_det_stats(struct gw_det *d, struct gw_det_stats *st)
{
    memset(st, 0, sizeof *st);
    if (!d) return;
    pthread_mutex_lock(&d->mu);
    st->series = d->n_series;
    for (uint32_t i = 0; i < d->n_nodes; i++) {
        if (!det_node_live(&d->nodes[i])) continue;
        st->nodes++;
        for (unsigned g = 0; g < d->nodes[i].gpu_count; g++)
            if (d->nodes[i].gpus[g].first_seen != INT64_MIN) st->gpus++;
    }
    st->samples = d->k.samples;
    st->buckets = d->k.buckets;
    memcpy(st->raises, d->k.raises, sizeof st->raises);
    st->interval_ms = det_interval(d);
    st->late = d->k.late;
    st->joins = d->k.joins;
    memcpy(st->eval_ns, d->eval_ns, sizeof st->eval_ns);
    st->judged_t = d->k.iv > 0 && d->k.fleet_b != INT64_MIN ? d->k.fleet_b * d->k.iv : INT64_MIN;
    st->bytes = sizeof *d + (uint64_t)d->cap_series * sizeof(struct det_series) + (d->mask_sid + 1) * 4 +
                (uint64_t)d->cap_nodes * sizeof(struct det_node) + (d->mask_node + 1) * 4 +
                d->scratch_cap * sizeof(double) + (d->q ? DET_QRAISES * sizeof *d->q : 0);
    pthread_mutex_unlock(&d->mu);
}
