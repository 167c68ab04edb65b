/* d7_ckpt.c - D7: checkpoint saves and loads of the fleet, read from the
 * NFS client's mountstats, each one an event with its bottleneck and the
 * remedy (docs/detectors.md "D7").
 *
 * Inputs, per node (node_exporter, series kinds in det_series.code):
 * mountstats WRITE sent / READ received bytes (or write_bytes_total /
 * read_bytes_total), the WRITE and READ operations' queue, response and
 * request time and request counts, every transport's backlog and sends and
 * its maximum_rpc_slots gauge, and the NIC (node_network_*_bytes_total over
 * node_network_speed_bytes) and InfiniBand port (port_data_*_bytes_total
 * over rate_bytes_per_second) byte counters.
 *
 * Per evaluation (bucket end T, docs/detectors.md "Arrival order") each
 * counter's increase over the bucket is read from its ring: the newest
 * sample before T against the newest before T - iv (so the buckets tile
 * and bytes add up), over the real time between them. A counter that went
 * down (an exporter restart, a remount) gives no value for that bucket:
 * never a spike. A node moves data in bulk when its NFS rate is at least
 * ckpt_rise_ratio x its own rate outside checkpoints and ckpt_floor_bps,
 * and keeps doing so down to a quarter of that (hysteresis); a bucket
 * without a new sample of the node keeps its state for two intervals. The fleet
 * enters a save (load) when ckpt_min_nodes nodes write (read) in bulk in
 * one bucket, stays in it while at least two do, and leaves it after
 * ckpt_end_buckets quiet evaluations; buckets nobody reported in hold the
 * state (scrape gaps). Nodes are visited in name order, so sums do not
 * depend on the arrival order. The event is judged at its end:
 *   link-limited   the links carrying the NFS traffic (those moving at
 *                  least a quarter of the node's NFS bytes) at
 *                  ckpt_link_util of their speed on average;
 *   slot-limited   queue time >= ckpt_queue_share of the request time and
 *                  backlog per send >= ckpt_backlog (without transport
 *                  counters: half of the node-buckets at 90 % of the slot
 *                  limit);
 *   server-limited response time per request ckpt_server_rtt_ratio x its
 *                  level outside checkpoints;
 *   healthy        none of these.
 * Slot limit: the highest transport_maximum_rpc_slots read anywhere so far
 * (a high-water mark; saturated transports pin it at the limit).
 * Alerts: CheckpointIoBottleneck at the end of a limited save,
 * CheckpointStalled while a save runs longer than ckpt_stall_ratio x the
 * median of the recent saves and ckpt_stall_max_ratio x the longest. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "detect_int.h"
#include "gpuwatch/labels.h"

#define CK_DEVS 48            /* NIC + IB devices per node read for link utilisation */

enum ck_kind {
    K_W_OPBYTES, K_R_OPBYTES, K_W_BYTES, K_R_BYTES,
    K_OP,                     /* K_OP + 4 x dir + {queue, response, request, requests} */
    K_BACKLOG = K_OP + 8, K_SENDS, K_MAXSLOTS,
    K_NET_TX, K_NET_RX, K_NET_SPEED, K_IB_TX, K_IB_RX, K_IB_RATE,
    K_COUNT_
};

struct det_ck_out {
    struct gw_det_ckpt e;
    int64_t t0;
    uint32_t n;
    double tp[GW_CKPT_MAX_BUCKETS];
};

/* ------------------------------------------------------------ names */

const char *gw_ckpt_phase_name(int phase)
{
    return phase == GW_CKPT_SAVE ? "save" : phase == GW_CKPT_LOAD ? "load" : "?";
}

const char *gw_ckpt_diag_name(int diag)
{
    switch (diag) {
    case GW_CKPT_HEALTHY: return "healthy";
    case GW_CKPT_SLOTS: return "slot_limited";
    case GW_CKPT_SERVER: return "server_limited";
    case GW_CKPT_LINK: return "link_limited";
    default: return "unknown";
    }
}

const char *gw_ckpt_remedy(int diag)
{
    switch (diag) {
    case GW_CKPT_SLOTS:
        return "raise the client's RPC slot table (sysctl sunrpc.tcp_max_slot_table_entries for TCP, "
               "module parameter rdma_slot_table_entries for NFSoRDMA; 128 is a common cap) and/or mount "
               "with more connections (nconnect=N multiplies the slots)";
    case GW_CKPT_SERVER:
        return "the NFS server is the limit: check its load, disks and per-client limits with the storage "
               "vendor; client tuning will not help";
    case GW_CKPT_LINK:
        return "the network link carrying NFS is saturated: spread NFS over more links (nconnect with "
               "multipath, more storage NICs) or raise the fabric's capacity";
    default:
        return "";
    }
}

/* ------------------------------------------------------------ encoding */

static void put64le(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64le(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static void put32le(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#define CK_NDBL 12

static void dbl_fields(const struct gw_det_ckpt *e, double out[CK_NDBL])
{
    const double v[CK_NDBL] = {e->bytes, e->peak_bps, e->mean_bps, e->link_util, e->link_util_max, e->queue_share,
                               e->rtt_ms, e->rtt_base_ms, e->backlog_per_send, e->slot_high, e->slot_limit,
                               e->slots_at_limit};
    memcpy(out, v, sizeof v);
}

void gw_det_ckpt_encode(const struct gw_det_ckpt *e, uint8_t out[GW_CKPT_ENC_BYTES])
{
    uint8_t *p = out;
    *p++ = 1;
    put64le(p, e->id), p += 8;
    put64le(p, (uint64_t)e->t_start), p += 8;
    put64le(p, (uint64_t)e->t_end), p += 8;
    put32le(p, (uint32_t)e->phase), p += 4;
    put32le(p, (uint32_t)e->diag), p += 4;
    put32le(p, e->nodes), p += 4;
    put32le(p, e->buckets), p += 4;
    put64le(p, (uint64_t)e->interval_ms), p += 8;
    double v[CK_NDBL];
    dbl_fields(e, v);
    for (int i = 0; i < CK_NDBL; i++, p += 8) {
        uint64_t u;
        memcpy(&u, &v[i], 8);
        put64le(p, u);
    }
}

int gw_det_ckpt_decode(const uint8_t *b, size_t n, struct gw_det_ckpt *e)
{
    if (n != GW_CKPT_ENC_BYTES || b[0] != 1) return GW_ECORRUPT;
    const uint8_t *p = b + 1;
    memset(e, 0, sizeof *e);
    e->id = get64le(p), p += 8;
    e->t_start = (int64_t)get64le(p), p += 8;
    e->t_end = (int64_t)get64le(p), p += 8;
    e->phase = (int32_t)get32le(p), p += 4;
    e->diag = (int32_t)get32le(p), p += 4;
    e->nodes = get32le(p), p += 4;
    e->buckets = get32le(p), p += 4;
    e->interval_ms = (int64_t)get64le(p), p += 8;
    double v[CK_NDBL];
    for (int i = 0; i < CK_NDBL; i++, p += 8) {
        uint64_t u = get64le(p);
        memcpy(&v[i], &u, 8);
    }
    e->bytes = v[0], e->peak_bps = v[1], e->mean_bps = v[2], e->link_util = v[3], e->link_util_max = v[4];
    e->queue_share = v[5], e->rtt_ms = v[6], e->rtt_base_ms = v[7], e->backlog_per_send = v[8];
    e->slot_high = v[9], e->slot_limit = v[10], e->slots_at_limit = v[11];
    if ((e->phase != GW_CKPT_SAVE && e->phase != GW_CKPT_LOAD) || e->diag < 0 || e->diag >= GW_CKPT_DIAG_COUNT_)
        return GW_ECORRUPT;
    return GW_OK;
}

void gw_det_ckpt_key(int64_t t_start, uint64_t id, uint8_t out[GW_CKPT_KEY_BYTES])
{
    uint64_t t = (uint64_t)t_start ^ (1ULL << 63);   /* signed order as unsigned bytes */
    for (int i = 0; i < 8; i++) {
        out[i] = (uint8_t)(t >> (56 - 8 * i));
        out[8 + i] = (uint8_t)(id >> (56 - 8 * i));
    }
}

/* ------------------------------------------------------------ classification */

static int name_is(const char *name, size_t len, const char *w)
{
    return strlen(w) == len && !memcmp(name, w, len);
}

static int label_is(const uint8_t *labels, size_t len, const char *key, const char *val)
{
    const char *v;
    size_t vl;
    return gw_labels_get(labels, len, key, strlen(key), &v, &vl) && vl == strlen(val) && !memcmp(v, val, vl);
}

/* 24-bit key of a NIC (device) or an InfiniBand port (device, port). */
static uint32_t dev_key(const uint8_t *labels, size_t len, int ib)
{
    uint32_t h = ib ? 0x811c9dc5u ^ 0x5bu : 0x811c9dc5u;
    const char *v;
    size_t vl;
    if (gw_labels_get(labels, len, "device", 6, &v, &vl))
        for (size_t i = 0; i < vl; i++) h = (h ^ (uint8_t)v[i]) * 16777619u;
    h = (h ^ 0xffu) * 16777619u;
    if (ib && gw_labels_get(labels, len, "port", 4, &v, &vl))
        for (size_t i = 0; i < vl; i++) h = (h ^ (uint8_t)v[i]) * 16777619u;
    return (h ^ (h >> 24)) & 0xffffffu;
}

uint32_t det_d7_code(const uint8_t *labels, size_t len, const char *name, size_t name_len)
{
    static const char *const k_ms = "node_mountstats_nfs_";
    int op = -1;   /* 0 WRITE, 1 READ */
    if (label_is(labels, len, "operation", "WRITE")) op = 0;
    else if (label_is(labels, len, "operation", "READ")) op = 1;
    if (name_len > 20 && !memcmp(name, k_ms, 20)) {
        const char *s = name + 20;
        size_t n = name_len - 20;
        if (name_is(s, n, "operations_sent_bytes_total")) return op == 0 ? K_W_OPBYTES : UINT32_MAX;
        if (name_is(s, n, "operations_received_bytes_total")) return op == 1 ? K_R_OPBYTES : UINT32_MAX;
        if (name_is(s, n, "write_bytes_total")) return K_W_BYTES;
        if (name_is(s, n, "read_bytes_total")) return K_R_BYTES;
        if (name_is(s, n, "transport_backlog_queue_total")) return K_BACKLOG;
        if (name_is(s, n, "transport_sends_total")) return K_SENDS;
        if (name_is(s, n, "transport_maximum_rpc_slots")) return K_MAXSLOTS;
        if (op < 0) return UINT32_MAX;
        uint32_t base = K_OP + 4u * (uint32_t)op;
        if (name_is(s, n, "operations_queue_time_seconds_total")) return base;
        if (name_is(s, n, "operations_response_time_seconds_total")) return base + 1;
        if (name_is(s, n, "operations_request_time_seconds_total")) return base + 2;
        if (name_is(s, n, "operations_requests_total")) return base + 3;
        return UINT32_MAX;
    }
    if (label_is(labels, len, "device", "lo")) return UINT32_MAX;
    uint32_t kind;
    if (name_is(name, name_len, "node_network_transmit_bytes_total")) kind = K_NET_TX;
    else if (name_is(name, name_len, "node_network_receive_bytes_total")) kind = K_NET_RX;
    else if (name_is(name, name_len, "node_network_speed_bytes")) kind = K_NET_SPEED;
    else if (name_is(name, name_len, "node_infiniband_port_data_transmitted_bytes_total")) kind = K_IB_TX;
    else if (name_is(name, name_len, "node_infiniband_port_data_received_bytes_total")) kind = K_IB_RX;
    else if (name_is(name, name_len, "node_infiniband_rate_bytes_per_second")) kind = K_IB_RATE;
    else return UINT32_MAX;
    return kind | dev_key(labels, len, kind >= K_IB_TX) << 8;
}

/* ------------------------------------------------------------ config, rules */


void det_d7_rules(struct gw_alerts *a, const struct gw_det_config *c)
{
    if (!c->ckpt_enable) return;
    const struct gw_alert_rule r[] = {
        {"CheckpointIoBottleneck", "D7",
         "a checkpoint save of >= ckpt_min_nodes nodes limited by the RPC slot table (queue share >= "
         "ckpt_queue_share, backlog per send >= ckpt_backlog), the NFS server (response time >= "
         "ckpt_server_rtt_ratio x idle) or the link (>= ckpt_link_util of its speed)",
         GW_SEV_WARNING, 0, 10 * 60000},
        {"CheckpointStalled", "D7",
         "a save running longer than ckpt_stall_ratio x the median and ckpt_stall_max_ratio x the longest "
         "of this cluster's recent saves",
         GW_SEV_WARNING, 0, 0},
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) gw_alerts_add_rule(a, &r[i]);
}

/* ------------------------------------------------------------ state */

static int cmp_name(const void *x, const void *y)
{
    const char *const *a = x, *const *b = y;
    return strcmp(*a, *b);
}

/* The D7 state sized for the engine's nodes; NULL on ENOMEM. */
static struct det_ck *ck_state(struct gw_det *d)
{
    if (!d->ck) {
        d->ck = calloc(1, sizeof *d->ck);
        if (!d->ck) return NULL;
        d->ck->k.t_start = d->ck->k.t_last = INT64_MIN;
    }
    struct det_ck *c = d->ck;
    if (c->cap_nodes < d->n_nodes) {
        uint32_t nc = d->cap_nodes > d->n_nodes ? d->cap_nodes : d->n_nodes;
        struct det_ck_node *p = realloc(c->nodes, (size_t)nc * sizeof *p);
        if (!p) return NULL;
        memset(p + c->cap_nodes, 0, (size_t)(nc - c->cap_nodes) * sizeof *p);
        c->nodes = p;
        c->cap_nodes = nc;
    }
    if (c->n_order != d->n_nodes) {
        /* rebuilt only when a node appears: name pointers sorted, then indices */
        const char **names = malloc((size_t)d->n_nodes * sizeof *names);
        uint32_t *ord = realloc(c->order, (size_t)(d->n_nodes ? d->n_nodes : 1) * sizeof *ord);
        if (!names || !ord) {
            free(names);
            if (ord) c->order = ord;
            return NULL;
        }
        c->order = ord;
        for (uint32_t i = 0; i < d->n_nodes; i++) names[i] = d->nodes[i].name;
        qsort(names, d->n_nodes, sizeof *names, cmp_name);
        for (uint32_t i = 0; i < d->n_nodes; i++)
            ord[i] = (uint32_t)(((const char *)names[i] - (const char *)d->nodes[0].name) / (ptrdiff_t)sizeof *d->nodes);
        free(names);
        c->n_order = d->n_nodes;
    }
    return c;
}

void det_d7_free(struct gw_det *d)
{
    if (!d->ck) return;
    free(d->ck->nodes);
    free(d->ck->order);
    free(d->ck->out);
    free(d->ck);
    d->ck = NULL;
}

/* ------------------------------------------------------------ one node */

struct ck_dev {
    uint32_t key;
    double tx, rx, speed;
};

struct ck_dir {               /* one direction (0 write, 1 read) of a node's bucket */
    int has;                  /* NFS bytes known */
    double bps, bytes;
    double op[4];             /* queue, response, request time (s), requests */
    int has_op;
};

struct ck_meas {
    struct ck_dir dir[2];
    double plain_bps[2], plain_bytes[2];
    int has_plain[2];
    double backlog, sends;
    int has_tr;
    double maxslots;          /* NAN none */
    uint32_t n_dev;
    struct ck_dev dev[CK_DEVS];
};

/* Increase of a counter over the bucket ending at T (newest sample before
 * T against the newest before T - iv): 1 with *dv and *dt_ms; 0 when not
 * known (no new sample, a gap of more than 4 intervals, NaN, a reset). */
static int ck_delta(const struct det_series *s, int64_t T, int64_t iv, int64_t niv, double *dv, int64_t *dt_ms)
{
    int ia = -1;
    for (unsigned i = 0; i < s->ring_n; i++) {
        unsigned k = (s->ring_head + DET_RING - i) % DET_RING;
        if (s->rt[k] >= T) continue;
        if (ia < 0) {
            if (s->rt[k] < T - iv) return 0;   /* nothing new in the bucket */
            ia = (int)k;
            continue;
        }
        if (s->rt[k] >= T - iv) continue;
        if (s->rt[k] < T - iv - 4 * niv) return 0;
        double a = s->rv[ia], b = s->rv[k];
        if (a != a || b != b || a < b) return 0;   /* a reset: no value, never a spike */
        *dv = a - b;
        *dt_ms = s->rt[ia] - s->rt[k];
        return *dt_ms > 0;
    }
    return 0;
}

static int ck_gauge(const struct det_series *s, int64_t T, int64_t niv, double *v)
{
    for (unsigned i = 0; i < s->ring_n; i++) {
        unsigned k = (s->ring_head + DET_RING - i) % DET_RING;
        if (s->rt[k] >= T) continue;
        if (s->rt[k] < T - 2 * niv || s->rv[k] != s->rv[k]) return 0;
        *v = s->rv[k];
        return 1;
    }
    return 0;
}

static struct ck_dev *dev_of(struct ck_meas *m, uint32_t key)
{
    for (uint32_t i = 0; i < m->n_dev; i++)
        if (m->dev[i].key == key) return &m->dev[i];
    if (m->n_dev == CK_DEVS) return NULL;
    struct ck_dev *x = &m->dev[m->n_dev++];
    memset(x, 0, sizeof *x);
    x->key = key;
    return x;
}

static void measure_series(const struct det_series *s, int64_t T, int64_t iv, int64_t niv, struct ck_meas *m)
{
    uint32_t kind = s->code & 0xff;
    double dv, g;
    int64_t dt;
    if (kind == K_MAXSLOTS || kind == K_NET_SPEED || kind == K_IB_RATE) {
        if (!ck_gauge(s, T, niv, &g)) return;
        if (kind == K_MAXSLOTS) m->maxslots = m->maxslots == m->maxslots && m->maxslots > g ? m->maxslots : g;
        else {
            struct ck_dev *x = dev_of(m, s->code >> 8);
            if (x) x->speed = g;
        }
        return;
    }
    if (!ck_delta(s, T, iv, niv, &dv, &dt)) return;
    double rate = dv * 1000.0 / (double)dt;
    if (kind <= K_R_OPBYTES) {
        struct ck_dir *x = &m->dir[kind - K_W_OPBYTES];
        x->has = 1;
        x->bps += rate;
        x->bytes += dv;
    } else if (kind <= K_R_BYTES) {
        int w = kind - K_W_BYTES;
        m->has_plain[w] = 1;
        m->plain_bps[w] += rate;
        m->plain_bytes[w] += dv;
    } else if (kind < K_BACKLOG) {
        struct ck_dir *x = &m->dir[(kind - K_OP) / 4];
        x->op[(kind - K_OP) % 4] += dv;
        x->has_op = 1;
    } else if (kind == K_BACKLOG || kind == K_SENDS) {
        if (kind == K_BACKLOG) m->backlog += dv;
        else m->sends += dv;
        m->has_tr = 1;
    } else {
        struct ck_dev *x = dev_of(m, s->code >> 8);
        if (!x) return;
        if (kind == K_NET_TX || kind == K_IB_TX) x->tx = x->tx > rate ? x->tx : rate;
        else x->rx = x->rx > rate ? x->rx : rate;
    }
}

static void measure(const struct gw_det *d, const struct det_node *n, int64_t T, int64_t iv, struct ck_meas *m)
{
    memset(m, 0, offsetof(struct ck_meas, dev));
    m->maxslots = NAN;
    int64_t niv = det_node_interval(d, n);
    for (uint32_t h = n->series_head; h; h = d->series[h - 1].next) {
        const struct det_series *s = &d->series[h - 1];
        if (s->role == R_CKPT) measure_series(s, T, iv, niv, m);
    }
    for (int w = 0; w < 2; w++)
        if (!m->dir[w].has && m->has_plain[w]) {   /* no per-operation bytes: the syscall byte counters */
            m->dir[w].has = 1;
            m->dir[w].bps = m->plain_bps[w];
            m->dir[w].bytes = m->plain_bytes[w];
        }
}

/* Utilisation of the links carrying a node's NFS traffic in one direction:
 * the highest rate/speed among devices moving at least a quarter of it. */
static double link_util(const struct ck_meas *m, int w)
{
    double nfs = m->dir[w].bps, best = NAN;
    if (!(nfs > 0)) return NAN;
    for (uint32_t i = 0; i < m->n_dev; i++) {
        const struct ck_dev *x = &m->dev[i];
        double r = w == 0 ? x->tx : x->rx;
        if (x->speed > 0 && r >= 0.25 * nfs) {
            double u = r / x->speed;
            if (best != best || u > best) best = u;
        }
    }
    return best;
}

/* ------------------------------------------------------------ the fleet */

struct ck_acc {               /* one direction of the fleet's bucket: the bulk nodes */
    uint32_t nodes;
    double bps, bytes, op[4], backlog, sends;
    int has_op, has_tr;
    double link_sum, link_max;
    uint32_t link_n, slot_n, slot_at;
    double slot_high;
};

struct ck_fleet {
    uint32_t known;
    double all_op[2][4];      /* every node's operation sums (baselines outside checkpoints) */
    struct ck_acc a[2];
    double slot_max;          /* highest maximum_rpc_slots read at T */
};

static void judge_node(struct gw_det *d, struct det_ck *c, uint32_t i, const struct ck_meas *m, struct ck_fleet *f,
                       int64_t T, int64_t iv)
{
    struct det_ck_node *cn = &c->nodes[i];
    const struct gw_det_config *cf = &d->c;
    int known = 0;
    if (m->maxslots == m->maxslots && !(f->slot_max >= m->maxslots)) f->slot_max = m->maxslots;
    for (int w = 0; w < 2; w++) {
        const struct ck_dir *x = &m->dir[w];
        if (!x->has) {
            /* no new sample in this bucket (scrape phase near the bucket edge, a
               missed scrape): a node busy a bucket ago still counts as busy */
            if ((w == 0 ? cn->writing : cn->reading) && cn->t_known >= T - 2 * iv) f->a[w].nodes++;
            continue;
        }
        known = 1;
        double *base = w == 0 ? &cn->base_w : &cn->base_r;
        uint8_t *flag = w == 0 ? &cn->writing : &cn->reading;
        double enter = cf->ckpt_rise_ratio * *base;
        if (enter < cf->ckpt_floor_bps) enter = cf->ckpt_floor_bps;
        *flag = x->bps >= (*flag ? enter / 4 : enter);
        if (!*flag && c->k.phase == 0) *base = *base > 0 ? 0.95 * *base + 0.05 * x->bps : x->bps;
        for (int k = 0; k < 4; k++) f->all_op[w][k] += x->op[k];
        if (!*flag) continue;
        struct ck_acc *a = &f->a[w];
        a->nodes++;
        a->bps += x->bps;
        a->bytes += x->bytes;
        if (x->has_op) {
            for (int k = 0; k < 4; k++) a->op[k] += x->op[k];
            a->has_op = 1;
        }
        if (m->has_tr) {
            a->backlog += m->backlog;
            a->sends += m->sends;
            a->has_tr = 1;
        }
        double u = link_util(m, w);
        if (u == u) {
            a->link_sum += u;
            a->link_n++;
            if (u > a->link_max) a->link_max = u;
        }
        if (m->maxslots == m->maxslots) {
            a->slot_n++;
            double lim = c->k.slot_limit > m->maxslots ? c->k.slot_limit : m->maxslots;
            if (m->maxslots >= 0.9 * lim) a->slot_at++;
            if (m->maxslots > a->slot_high) a->slot_high = m->maxslots;
        }
    }
    if (known) {
        f->known++;
        cn->t_known = T;
    }
}

static void phase_reset(struct det_ck_core *k)
{
    k->phase = 0;
    k->quiet = 0;
    k->t_start = k->t_last = INT64_MIN;
    k->buckets = k->nodes_max = 0;
    k->bytes = k->peak_bps = 0;
    k->q_sum = k->reqt_sum = k->resp_sum = k->reqs_sum = k->backlog_sum = k->sends_sum = 0;
    k->link_sum = k->link_max = 0;
    k->link_n = k->slot_n = k->slot_at = 0;
    k->slot_high = 0;
    k->n_tp = 0;
    k->tp_t0 = INT64_MIN;
}

static void phase_add(struct det_ck_core *k, const struct ck_acc *a, int64_t T, int64_t iv)
{
    k->buckets++;
    k->t_last = T;
    k->quiet = 0;
    if (a->nodes > k->nodes_max) k->nodes_max = a->nodes;
    k->bytes += a->bytes;
    if (a->bps > k->peak_bps) k->peak_bps = a->bps;
    if (a->has_op) {
        k->q_sum += a->op[0];
        k->resp_sum += a->op[1];
        k->reqt_sum += a->op[2];
        k->reqs_sum += a->op[3];
    }
    if (a->has_tr) {
        k->backlog_sum += a->backlog;
        k->sends_sum += a->sends;
    }
    k->link_sum += a->link_sum;
    k->link_n += a->link_n;
    if (a->link_max > k->link_max) k->link_max = a->link_max;
    k->slot_n += a->slot_n;
    k->slot_at += a->slot_at;
    if (a->slot_high > k->slot_high) k->slot_high = a->slot_high;
    if (k->tp_t0 == INT64_MIN) k->tp_t0 = T;
    int64_t idx = (T - k->tp_t0) / iv;
    if (idx >= 0 && idx < GW_CKPT_MAX_BUCKETS) {
        while (k->n_tp < (uint32_t)idx) k->tp[k->n_tp++] = NAN;
        k->tp[idx] = a->bps;
        if (k->n_tp <= (uint32_t)idx) k->n_tp = (uint32_t)idx + 1;
    }
}

static int diagnose(const struct gw_det_config *c, const struct gw_det_ckpt *e)
{
    if (e->link_util == e->link_util && e->link_util >= c->ckpt_link_util) return GW_CKPT_LINK;
    if (e->queue_share != e->queue_share) return GW_CKPT_UNKNOWN;
    int slots = e->backlog_per_send == e->backlog_per_send ? e->backlog_per_send >= c->ckpt_backlog
                                                            : e->slots_at_limit >= 0.5;
    if (e->queue_share >= c->ckpt_queue_share && slots) return GW_CKPT_SLOTS;
    if (e->rtt_ms == e->rtt_ms && e->rtt_base_ms > 0 && e->rtt_ms >= c->ckpt_server_rtt_ratio * e->rtt_base_ms)
        return GW_CKPT_SERVER;
    return GW_CKPT_HEALTHY;
}

static void event_of(const struct gw_det *d, const struct det_ck_core *k, int64_t iv, struct gw_det_ckpt *e)
{
    memset(e, 0, sizeof *e);
    e->id = k->next_id;
    e->t_start = k->t_start;
    e->t_end = k->t_last;
    e->phase = k->phase;
    e->nodes = k->nodes_max;
    e->buckets = k->buckets;
    e->interval_ms = iv;
    e->bytes = k->bytes;
    e->peak_bps = k->peak_bps;
    e->mean_bps = e->t_end > e->t_start ? k->bytes * 1000.0 / (double)(e->t_end - e->t_start) : 0;
    e->link_util = k->link_n ? k->link_sum / k->link_n : NAN;
    e->link_util_max = k->link_n ? k->link_max : NAN;
    e->queue_share = k->reqt_sum > 0 ? k->q_sum / k->reqt_sum : NAN;
    e->rtt_ms = k->reqs_sum > 0 ? 1000.0 * k->resp_sum / k->reqs_sum : NAN;
    double base = k->rtt_base[k->phase == GW_CKPT_LOAD];
    e->rtt_base_ms = base > 0 ? 1000.0 * base : NAN;
    e->backlog_per_send = k->sends_sum > 0 ? k->backlog_sum / k->sends_sum : NAN;
    e->slot_high = k->slot_n ? k->slot_high : NAN;
    e->slot_limit = k->slot_limit > 0 ? k->slot_limit : NAN;
    e->slots_at_limit = k->slot_n ? (double)k->slot_at / k->slot_n : NAN;
    e->diag = diagnose(&d->c, e);
}

static void push_out(struct det_ck *c, const struct gw_det_ckpt *e)
{
    if (!c->out && !(c->out = calloc(GW_CKPT_QUEUE, sizeof *c->out))) {
        c->k.dropped++;
        return;
    }
    if (c->out_n == GW_CKPT_QUEUE) {   /* nobody drains: drop the oldest */
        c->out_head = (c->out_head + 1) % GW_CKPT_QUEUE;
        c->out_n--;
        c->k.dropped++;
    }
    struct det_ck_out *o = &c->out[(c->out_head + c->out_n) % GW_CKPT_QUEUE];
    c->out_n++;
    o->e = *e;
    o->t0 = c->k.tp_t0;
    o->n = c->k.n_tp;
    memcpy(o->tp, c->k.tp, (size_t)o->n * sizeof *o->tp);
}

static void fmt_num(char *out, size_t cap, const char *label, double v, double scale, const char *unit)
{
    if (v == v) snprintf(out, cap, "%s %.3g%s", label, v * scale, unit);
    else snprintf(out, cap, "%s n/a", label);
}

static void raise_bottleneck(struct gw_det *d, const struct gw_det_ckpt *e, int64_t T)
{
    char ts[32], q[48], r[64], b[48], s[64], u[64], sum[200], ev[1024];
    det_fmt_time(e->t_start, ts, sizeof ts);
    fmt_num(q, sizeof q, "queue share", e->queue_share, 100, "%");
    snprintf(r, sizeof r, "response %.3g ms (idle %.3g ms)", e->rtt_ms, e->rtt_base_ms);
    fmt_num(b, sizeof b, "backlog/send", e->backlog_per_send, 1, "");
    snprintf(s, sizeof s, "slot high-water %.0f of limit %.0f", e->slot_high, e->slot_limit);
    snprintf(u, sizeof u, "link %.3g%% of speed (max %.3g%%)", 100 * e->link_util, 100 * e->link_util_max);
    snprintf(sum, sizeof sum, "checkpoint save of %u nodes is %s: %.3g GB/s mean, %.3g GB/s peak", e->nodes,
             gw_ckpt_diag_name(e->diag), e->mean_bps / 1e9, e->peak_bps / 1e9);
    snprintf(ev, sizeof ev, "save %s, %.0f s, %.3g GB; %s; %s; %s; %s; %s. Remedy: %s", ts,
             (double)(e->t_end - e->t_start) / 1000.0, e->bytes / 1e9, q, r, b, s, u, gw_ckpt_remedy(e->diag));
    struct gw_alert_spec sp = {
        .alertname = "CheckpointIoBottleneck", .severity = GW_SEV_WARNING, .hostname = "", .gpu = -1,
        .detector = "D7", .cls = "checkpoint_io", .action = "none", .extra_name = "cause",
        .extra_value = gw_ckpt_diag_name(e->diag), .summary = sum, .evidence = ev, .score = 0.8,
        .for_ms = 0, .hold_ms = 10 * 60000,
    };
    d->ck->k.raises++;
    if (d->alerts) gw_alerts_raise(d->alerts, &sp, T);
}

static double hist_median(const struct det_ck_core *k)
{
    double v[DET_CK_HIST];
    for (uint32_t i = 0; i < k->hist_n; i++) v[i] = (double)k->hist[i];
    return det_median(v, k->hist_n);
}

static void check_stall(struct gw_det *d, struct det_ck *c, int64_t T, int64_t iv)
{
    struct det_ck_core *k = &c->k;
    if (k->phase != GW_CKPT_SAVE || k->hist_n < d->c.ckpt_stall_history || k->hist_n == 0) return;
    double med = hist_median(k), el = (double)(T - k->t_start), longest = 0;
    for (uint32_t i = 0; i < k->hist_n; i++)
        if ((double)k->hist[i] > longest) longest = (double)k->hist[i];
    /* far longer than this cluster's recent saves: a multiple of their median
       and well past the longest of them (saves vary 2-5x in normal operation) */
    if (!(el > d->c.ckpt_stall_ratio * med && el > d->c.ckpt_stall_max_ratio * longest &&
          el > med + 2.0 * (double)iv))
        return;
    char ts[32], sum[160], ev[300];
    det_fmt_time(k->t_start, ts, sizeof ts);
    snprintf(sum, sizeof sum, "checkpoint save running %.0f min, %.2gx the median of the last %u saves",
             el / 60000.0, el / med, k->hist_n);
    snprintf(ev, sizeof ev, "save since %s on %u nodes: %.0f s so far, median save %.0f s; %.3g GB written",
             ts, k->nodes_max, el / 1000.0, med / 1000.0, k->bytes / 1e9);
    struct gw_alert_spec sp = {
        .alertname = "CheckpointStalled", .severity = GW_SEV_WARNING, .hostname = "", .gpu = -1,
        .detector = "D7", .cls = "checkpoint_io", .action = "none", .summary = sum, .evidence = ev,
        .score = 0.6, .for_ms = 0, .hold_ms = 2 * iv,
    };
    k->raises++;
    if (d->alerts) gw_alerts_raise(d->alerts, &sp, T);
}

static void phase_end(struct gw_det *d, struct det_ck *c, int64_t T, int64_t iv)
{
    struct det_ck_core *k = &c->k;
    if (k->buckets >= d->c.ckpt_min_buckets) {
        struct gw_det_ckpt e;
        event_of(d, k, iv, &e);
        k->next_id++;
        k->events++;
        push_out(c, &e);
        if (e.phase == GW_CKPT_SAVE) {
            if (e.diag == GW_CKPT_SLOTS || e.diag == GW_CKPT_SERVER || e.diag == GW_CKPT_LINK) raise_bottleneck(d, &e, T);
            k->hist[k->hist_head] = e.t_end - e.t_start;
            k->hist_head = (k->hist_head + 1) % DET_CK_HIST;
            if (k->hist_n < DET_CK_HIST) k->hist_n++;
        }
    }
    phase_reset(k);
}

static void phase_step(struct gw_det *d, struct det_ck *c, const struct ck_fleet *f, int64_t T, int64_t iv)
{
    struct det_ck_core *k = &c->k;
    uint32_t start_n = d->c.ckpt_min_nodes > 2 ? d->c.ckpt_min_nodes : 2;
    uint32_t stay_n = (start_n + 1) / 2 > 2 ? (start_n + 1) / 2 : 2;
    if (f->slot_max > k->slot_limit) k->slot_limit = f->slot_max;
    int other = f->a[0].nodes >= f->a[1].nodes ? 0 : 1;   /* the busier direction */
    if (k->phase != 0) {
        int w = k->phase - 1;
        if (f->a[w].nodes >= stay_n) phase_add(k, &f->a[w], T, iv);
        else if (f->a[1 - w].nodes >= start_n || ++k->quiet >= d->c.ckpt_end_buckets) phase_end(d, c, T, iv);
        check_stall(d, c, T, iv);
    }
    if (k->phase == 0) {
        if (f->a[other].nodes >= start_n) {
            k->phase = other + 1;
            k->t_start = T - iv;
            phase_add(k, &f->a[other], T, iv);
            return;
        }
        for (int w = 0; w < 2; w++)   /* response time outside checkpoints */
            if (f->all_op[w][3] > 0) {
                double r = f->all_op[w][1] / f->all_op[w][3];
                k->rtt_base[w] = k->rtt_base[w] > 0 ? 0.95 * k->rtt_base[w] + 0.05 * r : r;
            }
    }
}

void det_d7_eval(struct gw_det *d, int64_t T)
{
    if (!d->c.ckpt_enable || d->n_nodes == 0) return;
    struct det_ck *c = ck_state(d);
    if (!c) return;
    int64_t iv = det_interval(d);
    struct ck_fleet f;
    memset(&f, 0, sizeof f);
    struct ck_meas m;
    for (uint32_t oi = 0; oi < c->n_order; oi++) {
        uint32_t i = c->order[oi];
        if (!det_node_live(&d->nodes[i])) continue;
        measure(d, &d->nodes[i], T, iv, &m);
        judge_node(d, c, i, &m, &f, T, iv);
    }
    if (f.known == 0) return;   /* nobody reported NFS counters: a gap holds the state */
    phase_step(d, c, &f, T, iv);
}

/* ------------------------------------------------------------ drain */

int gw_det_ckpt_drain(struct gw_det *d, gw_det_ckpt_cb cb, void *ud)
{
    if (!d) return GW_OK;
    struct det_ck_out *o = malloc(sizeof *o);
    if (!o) return GW_ENOMEM;
    int64_t *t = malloc(GW_CKPT_MAX_BUCKETS * sizeof *t);
    double *v = malloc(GW_CKPT_MAX_BUCKETS * sizeof *v);
    int rc = (t && v) ? GW_OK : GW_ENOMEM;
    while (rc == GW_OK) {
        pthread_mutex_lock(&d->mu);
        struct det_ck *c = d->ck;
        int have = c && c->out_n > 0;
        if (have) *o = c->out[c->out_head];
        pthread_mutex_unlock(&d->mu);
        if (!have) break;
        size_t n = 0;
        for (uint32_t i = 0; i < o->n; i++)
            if (o->tp[i] == o->tp[i]) {
                t[n] = o->t0 + (int64_t)i * o->e.interval_ms;
                v[n++] = o->tp[i];
            }
        rc = cb(ud, &o->e, t, v, n);
        if (rc) break;
        pthread_mutex_lock(&d->mu);
        if (d->ck && d->ck->out_n > 0 && d->ck->out[d->ck->out_head].e.id == o->e.id) {
            d->ck->out_head = (d->ck->out_head + 1) % GW_CKPT_QUEUE;
            d->ck->out_n--;
        }
        pthread_mutex_unlock(&d->mu);
    }
    free(o);
    free(t);
    free(v);
    return rc;
}

/* ------------------------------------------------------------ snapshot */

size_t det_d7_snap_size(const struct gw_det *d)
{
    return sizeof(struct det_ck_core) + (size_t)d->n_nodes * sizeof(struct det_ck_node);
}

void det_d7_snap_write(const struct gw_det *d, uint8_t *p)
{
    struct det_ck_core k;
    memset(&k, 0, sizeof k);
    if (d->ck) k = d->ck->k;
    else phase_reset(&k);
    memcpy(p, &k, sizeof k);
    p += sizeof k;
    for (uint32_t i = 0; i < d->n_nodes; i++, p += sizeof(struct det_ck_node)) {
        struct det_ck_node z;
        memset(&z, 0, sizeof z);
        memcpy(p, d->ck && i < d->ck->cap_nodes ? &d->ck->nodes[i] : &z, sizeof z);
    }
}

int det_d7_snap_read(struct gw_det *d, const uint8_t *p)
{
    det_d7_free(d);
    struct det_ck *c = ck_state(d);
    if (!c) return GW_ENOMEM;
    memcpy(&c->k, p, sizeof c->k);
    p += sizeof c->k;
    if (d->n_nodes) memcpy(c->nodes, p, (size_t)d->n_nodes * sizeof *c->nodes);
    struct det_ck_core *k = &c->k;
    if (k->phase < 0 || k->phase > GW_CKPT_LOAD || k->hist_n > DET_CK_HIST || k->hist_head >= DET_CK_HIST ||
        k->n_tp > GW_CKPT_MAX_BUCKETS)
        return GW_ECORRUPT;
    return GW_OK;
}
