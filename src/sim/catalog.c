/* catalog.c - the simulator's series catalogue: every metric family with
 * its type and help, and the series of every node with their labels,
 * encoded once as canonical bytes (labels.h) and as protobuf.
 *
 * Per node, job="dcgm", instance="<host>:9400" (dcgm-exporter), per GPU:
 *   the 25 default fields, the ECC / NVLink-error / violation counters,
 *   ROW_REMAP_PENDING, CLOCKS_EVENT_REASONS, ENFORCED_POWER_LIMIT,
 *   FB_TOTAL, PROF_SM_ACTIVE, PROF_NVLINK_TX/RX_BYTES; labels gpu, UUID,
 *   pci_bus_id, device, modelName (cfg.gpu_model), hostname (Hostname
 *   with cfg.legacy_hostname), DCGM_FI_DRIVER_VERSION, job, instance.
 *   cfg.label_style changes the node's identity: "kube" names DCGM
 *   series by the exporter pod (Hostname, pod) with the node in `node`,
 *   pod IP instances and Kubernetes target labels, node_exporter on the
 *   host IP with no node label but node_uname_info's nodename; "fqdn" and
 *   "ip" change the instances (docs/simulator.md section 10).
 *   DCGM_FI_DEV_XID_ERRORS also carries err_code and err_msg: one series
 *   per distinct code, created when the code first shows (err_code="0",
 *   err_msg="No Error" exists from the start). DCGM_EXP_XID_ERRORS_COUNT
 *   carries xid and window_size_in_ms="300000", one series per code seen.
 * Per node, job="node", instance="<host>:9100" (node_exporter with the
 *   mountstats collector on): cpu (112 CPUs x 8 modes), stat, loadavg,
 *   vmstat, meminfo, netdev + netclass per NIC (lo, a management NIC,
 *   cfg.compute_nics RoCE NICs, cfg.storage_nics storage NICs),
 *   infiniband per mlx5 port, nfs client, mountstats of the one NFS
 *   mount (20 operations, cfg.nfs_transports transports), filesystem.
 * Both targets also get what Prometheus adds per scrape: up,
 *   scrape_duration_seconds, scrape_samples_scraped,
 *   scrape_samples_post_metric_relabeling, scrape_series_added.
 * With the defaults a node has 2,056 series (dcgm 373, node 1,683) before
 * any XID shows.
 *
 * Protobuf bytes of one series (remote write 1.0 TimeSeries field 1,
 * prometheus.Label {string name = 1; string value = 2}), labels in the
 * same sorted order as the canonical bytes; for {__name__="up", job="node"}:
 *   0a 0e  0a 08 "__name__"  12 02 "up"     Label, 14 bytes
 *   0a 0b  0a 03 "job"       12 04 "node"   Label, 11 bytes
 * 29 bytes in total; a writer appends field 2 (samples) after them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/labels.h"
#include "gpuwatch/rw.h"
#include "sim/gen_int.h"

const struct gw_sim_family gw_sim_families[F_COUNT_] = {
#define GW_SIM_FAM_ROW(id, name, type, job, help) [id] = {name, type, help, job},
    GW_SIM_FAMILIES(GW_SIM_FAM_ROW)
#undef GW_SIM_FAM_ROW
};

const char *const gw_sim_cpu_modes[GW_SIM_CPU_MODES] = {
    "idle", "iowait", "irq", "nice", "softirq", "steal", "system", "user"};

const char *const gw_sim_ms_ops[GW_SIM_MS_OPS] = {
    "READ", "WRITE", "GETATTR", "COMMIT", "LOOKUP", "ACCESS", "OPEN", "CLOSE", "SETATTR",
    "FSINFO", "RENEW", "LOCK", "LOCKT", "LOCKU", "REMOVE", "RENAME", "CREATE", "READDIR",
    "STATFS", "SEQUENCE"};

static const char *const nfs_methods[GW_SIM_NFS_METHODS] = {
    "Read", "Write", "Commit", "Open", "OpenConfirm", "OpenNoattr", "OpenDowngrade", "Close",
    "Setattr", "FsInfo", "Renew", "SetClientID", "SetClientIDConfirm", "Lock", "Lockt", "Locku",
    "Access", "Getattr", "Lookup", "LookupRoot"};

static const struct { const char *dev, *fstype, *mnt; } mounts[GW_SIM_MOUNTS] = {
    {"/dev/nvme0n1p2", "ext4", "/"},       {"/dev/nvme0n1p1", "vfat", "/boot/efi"},
    {"/dev/md0", "xfs", "/raid"},          {"tmpfs", "tmpfs", "/run"},
    {"tmpfs", "tmpfs", "/dev/shm"},        {"vast01:/ckpt", "nfs4", "/ckpt"}};

/* HGX 8-GPU baseboard bus numbers; further GPUs continue the pattern. */
static const unsigned gpu_bus[8] = {0x1b, 0x43, 0x52, 0x61, 0x9d, 0xc3, 0xd1, 0xdf};
static const unsigned nic_bus[8] = {24, 42, 58, 93, 154, 171, 186, 219};

#define MS_EXPORT "vast01:/ckpt"
#define MS_MOUNTADDR "10.200.0.10"
#define MS_PROTO "tcp"
#define DRIVER_VERSION "570.133.20"

/* ---- stable byte storage ------------------------------------------------ */

static uint8_t *blk_alloc(struct gw_sim_gen *g, size_t n)
{
    struct gw_sim_blk *b = g->blk;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > (256u << 10) ? n : (256u << 10);
        struct gw_sim_blk *nb = malloc(sizeof(*nb) + cap);
        if (!nb)
            return NULL;
        nb->next = b;
        nb->used = 0;
        nb->cap = cap;
        g->blk = nb;
        b = nb;
    }
    uint8_t *p = b->data + b->used;
    b->used += n;
    return p;
}

void gw_sim_cat_free(struct gw_sim_gen *g)
{
    struct gw_sim_blk *b = g->blk;
    while (b) {
        struct gw_sim_blk *n = b->next;
        free(b);
        b = n;
    }
    g->blk = NULL;
    free(g->series);
    free(g->acc);
    g->series = NULL;
    g->acc = NULL;
    g->n_series = g->cap_series = 0;
}

/* ---- one series ---------------------------------------------------------- */

#define MAX_LABELS 24

struct lset {
    struct gw_label l[MAX_LABELS];
    size_t n;
};

static void lset_add(struct lset *s, const char *name, const char *value)
{
    if (s->n >= MAX_LABELS)
        return;
    s->l[s->n].name = name;
    s->l[s->n].name_len = (uint32_t)strlen(name);
    s->l[s->n].value = value;
    s->l[s->n].value_len = (uint32_t)strlen(value);
    s->n++;
}

static uint64_t series_key(uint64_t seed, uint32_t node, unsigned fam, int gpu, uint32_t sub)
{
    uint64_t k = gw_sim_mix(seed ^ 0x5eed0fca7a109ull);
    k = gw_sim_mix(k ^ node);
    k = gw_sim_mix(k ^ ((uint64_t)fam << 8) ^ (uint64_t)(gpu + 1));
    return gw_sim_mix(k ^ sub);
}

/* Appends one series (labels s plus __name__) when its family is kept;
 * *sid = its id or UINT32_MAX when filtered out. */
static int add_series(struct gw_sim_gen *g, uint32_t node, unsigned job, unsigned fam, int gpu,
                      uint32_t sub, struct lset *s, uint32_t *sid, struct gw_error *err)
{
    *sid = UINT32_MAX;
    if (!g->keep[fam])
        return GW_OK;
    if (g->n_series >= UINT32_MAX - 1)
        return gw_error_set(err, GW_ELIMIT, "simulator: too many series");
    if (g->n_series == g->cap_series) {
        size_t nc = g->cap_series ? g->cap_series * 2 : 4096;
        struct gw_sim_series *ns = realloc(g->series, nc * sizeof(*ns));
        if (!ns)
            return gw_error_set(err, GW_ENOMEM, "simulator: out of memory for series");
        g->series = ns;
        double *na = realloc(g->acc, nc * sizeof(*na));
        if (!na)
            return gw_error_set(err, GW_ENOMEM, "simulator: out of memory for series");
        g->acc = na;
        g->cap_series = nc;
    }
    struct lset ls = *s;
    lset_add(&ls, "__name__", gw_sim_families[fam].name);
    int rc = gw_labels_normalize(ls.l, ls.n, err);
    if (rc != GW_OK)
        return rc;
    size_t clen = gw_labels_encoded_size(ls.l, ls.n);
    size_t plen = gw_rw_labels_pb_size(ls.l, ls.n);   /* the remote-write label fields, encoded once */
    uint8_t *mem = blk_alloc(g, clen + plen);
    if (!mem)
        return gw_error_set(err, GW_ENOMEM, "simulator: out of memory for labels");
    gw_labels_encode(ls.l, ls.n, mem);
    gw_rw_labels_pb(ls.l, ls.n, mem + clen);

    struct gw_sim_series *se = &g->series[g->n_series];
    se->node = node;
    se->fam = (uint16_t)fam;
    se->gpu = (int8_t)gpu;
    se->job = (uint8_t)job;
    se->sub = sub;
    se->key = series_key(g->cfg.seed, node, fam, gpu, sub);
    se->canon = mem;
    se->canon_len = (uint32_t)clen;
    se->pb = mem + clen;
    se->pb_len = (uint32_t)plen;
    g->acc[g->n_series] = 0;
    *sid = (uint32_t)g->n_series++;
    return GW_OK;
}

/* Appends a kept series id to a target's static list. */
static int target_push(struct gw_sim_target *tg, size_t *cap, uint32_t sid, struct gw_error *err)
{
    if (sid == UINT32_MAX)
        return GW_OK;
    if (tg->n_sids == *cap) {
        size_t nc = *cap ? *cap * 2 : 256;
        uint32_t *n = realloc(tg->sids, nc * sizeof(*n));
        if (!n)
            return gw_error_set(err, GW_ENOMEM, "simulator: out of memory for targets");
        tg->sids = n;
        *cap = nc;
    }
    tg->sids[tg->n_sids++] = sid;
    return GW_OK;
}

/* ---- identity strings ---------------------------------------------------- */

struct gpu_ident {
    char gpu[8], uuid[48], pci[24], device[16];
};

static void gpu_identity(const struct gw_sim_gen *g, const char *host, uint32_t i,
                         struct gpu_ident *id)
{
    uint64_t h = gw_hash64(host, strlen(host));
    uint64_t a = gw_sim_mix(g->cfg.seed ^ h ^ ((uint64_t)i << 56) ^ 0x6770755555ull);
    uint64_t b = gw_sim_mix(a ^ 0x1d);
    snprintf(id->gpu, sizeof(id->gpu), "%u", i);
    snprintf(id->uuid, sizeof(id->uuid), "GPU-%08x-%04x-%04x-%04x-%012llx",
             (unsigned)(a >> 32), (unsigned)(a >> 16) & 0xffffu, (unsigned)a & 0xffffu,
             (unsigned)(b >> 48), (unsigned long long)(b & 0xffffffffffffull));
    unsigned bus = i < 8 ? gpu_bus[i] : (0x20u + 0x10u * i) & 0xffu;
    snprintf(id->pci, sizeof(id->pci), "00000000:%02X:00.0", bus);
    snprintf(id->device, sizeof(id->device), "nvidia%u", i);
}

/* NIC i of a node: netdev name, and mlx5 device (empty for lo/mgmt). */
static enum gw_sim_nic_role nic_info(const struct gw_sim_gen *g, uint32_t i, char *dev, size_t dn,
                                     char *ib, size_t ibn)
{
    uint32_t nc = g->cfg.compute_nics;
    ib[0] = 0;
    if (i == 0) {
        snprintf(dev, dn, "lo");
        return GW_SIM_NIC_LO;
    }
    if (i == 1) {
        snprintf(dev, dn, "eno1");
        return GW_SIM_NIC_MGMT;
    }
    uint32_t k = i - 2;
    snprintf(ib, ibn, "mlx5_%u", k);
    if (k < nc) {
        unsigned bus = k < 8 ? nic_bus[k] : 16u + 8u * k;
        snprintf(dev, dn, "enp%us0np0", bus);
        return GW_SIM_NIC_COMPUTE;
    }
    uint32_t s = k - nc;
    snprintf(dev, dn, "enp%us0f%unp%u", 200u + s / 2u, s % 2u, s % 2u);
    return GW_SIM_NIC_STORAGE;
}

/* ---- XID messages (dcgm-exporter's err_msg) ------------------------------ */

const char *gw_sim_xid_msg(uint32_t code)
{
    switch (code) {
    case 0: return "No Error";
    case 8: return "GPU stopped processing";
    case 13: return "Graphics Engine Exception";
    case 31: return "GPU memory page fault";
    case 43: return "GPU stopped processing";
    case 45: return "Preemptive cleanup, due to previous errors -- Most likely to see when running multiple cuda applications and hitting a DBE";
    case 48: return "Double Bit ECC Error";
    case 62: return "Internal micro-controller halt";
    case 63: return "ECC page retirement or row remapping recording event";
    case 64: return "ECC page retirement or row remapper recording failure";
    case 74: return "NVLINK Error";
    case 79: return "GPU has fallen off the bus";
    case 92: return "High single-bit ECC error rate";
    case 94: return "Contained ECC error";
    case 95: return "Uncontained ECC error";
    case 109: return "Context Switch Timeout Error";
    case 119: return "GSP RPC Timeout";
    case 120: return "GSP Error";
    case 145: return "NVLink RLW Error";
    case 149: return "NVLink NETIR Error";
    default: return "Unknown Error";
    }
}

/* ---- per-node build ------------------------------------------------------ */

struct node_common {
    enum gw_sim_label_style style;
    char host[64];                 /* the node's name (gpu071) */
    const char *host_label;        /* "hostname" or "Hostname" on DCGM series */
    char host_value[64];           /* its value: the node, or the exporter pod (kube) */
    char inst_dcgm[128], inst_node[128];
    const char *job_dcgm, *job_node;
    char pod_dcgm[64], pod_node[64];
};

/* Target labels Prometheus attaches to every series of a target (job,
 * instance, and with kube the service discovery's namespace, pod,
 * container, service, endpoint; node on the GPU operator's exporter). */
static void target_labels(const struct node_common *nc, unsigned job, struct lset *s)
{
    if (job == GW_SIM_JOB_DCGM) {
        lset_add(s, "job", nc->job_dcgm);
        lset_add(s, "instance", nc->inst_dcgm);
        if (nc->style == GW_SIM_LABELS_KUBE) {
            lset_add(s, "namespace", "gpu-operator");
            lset_add(s, "pod", nc->pod_dcgm);
            lset_add(s, "container", "nvidia-dcgm-exporter");
            lset_add(s, "service", "nvidia-dcgm-exporter");
            lset_add(s, "endpoint", "gpu-metrics");
            lset_add(s, "node", nc->host);
        }
    } else {
        lset_add(s, "job", nc->job_node);
        lset_add(s, "instance", nc->inst_node);
        if (nc->style == GW_SIM_LABELS_KUBE) {
            lset_add(s, "namespace", "monitoring");
            lset_add(s, "pod", nc->pod_node);
            lset_add(s, "container", "node-exporter");
            lset_add(s, "service", "node-exporter");
            lset_add(s, "endpoint", "metrics");
        }
    }
}

static void dcgm_labels(const struct gw_sim_gen *g, const struct node_common *nc,
                        const struct gpu_ident *id, struct lset *s)
{
    s->n = 0;
    lset_add(s, "gpu", id->gpu);
    lset_add(s, "UUID", id->uuid);
    lset_add(s, "pci_bus_id", id->pci);
    lset_add(s, "device", id->device);
    lset_add(s, "modelName", gw_sim_gpu_spec(g->cfg.gpu_model)->model_name);
    lset_add(s, nc->host_label, nc->host_value);
    lset_add(s, "DCGM_FI_DRIVER_VERSION", DRIVER_VERSION);
    target_labels(nc, GW_SIM_JOB_DCGM, s);
}

/* Kubernetes pod name suffix: 5 lowercase alphanumerics, stable per node. */
static void pod_suffix(uint64_t seed, const char *host, uint64_t salt, char out[6])
{
    static const char an[] = "bcdfghjklmnpqrstvwxz2456789";   /* Kubernetes' rand.String alphabet */
    uint64_t h = gw_sim_mix(seed ^ gw_hash64(host, strlen(host)) ^ salt);
    for (int i = 0; i < 5; i++) {
        out[i] = an[h % (sizeof an - 1)];
        h /= sizeof an - 1;
    }
    out[5] = 0;
}

static void node_common_init(const struct gw_sim_gen *g, uint32_t node, struct node_common *nc)
{
    const char *h = gw_sim_node_name(g->tl, node);
    snprintf(nc->host, sizeof(nc->host), "%s", h ? h : "node");
    nc->style = gw_sim_config_label_style(&g->cfg);
    nc->host_label = nc->style == GW_SIM_LABELS_HOSTNAME || nc->style == GW_SIM_LABELS_FQDN ? "hostname"
                                                                                              : "Hostname";
    snprintf(nc->host_value, sizeof(nc->host_value), "%s", nc->host);
    nc->job_dcgm = "dcgm";
    nc->job_node = "node";
    nc->pod_dcgm[0] = nc->pod_node[0] = 0;
    /* host IP 10.0.X.Y from the host number (stable per node name), pod IP
     * 10.244.<node + 1>.Y (one /24 pod range per node) */
    unsigned num = 0;
    for (const char *p = nc->host; *p; p++)
        if (*p >= '0' && *p <= '9')
            num = num * 10u + (unsigned)(*p - '0');
    char host_ip[32], pod_ip[32];
    snprintf(host_ip, sizeof host_ip, "10.0.%u.%u", (num / 250u) % 256u, num % 250u + 2u);
    snprintf(pod_ip, sizeof pod_ip, "10.244.%u.%u", (node + 1u) % 256u,
             (unsigned)(2u + gw_sim_mix(g->cfg.seed ^ 0x90d1full ^ node) % 250u));
    switch (nc->style) {
    case GW_SIM_LABELS_KUBE: {
        char sfx[6];
        pod_suffix(g->cfg.seed, nc->host, 0xdc9aull, sfx);
        snprintf(nc->pod_dcgm, sizeof(nc->pod_dcgm), "nvidia-dcgm-exporter-%s", sfx);
        pod_suffix(g->cfg.seed, nc->host, 0x40deull, sfx);
        snprintf(nc->pod_node, sizeof(nc->pod_node), "node-exporter-%s", sfx);
        snprintf(nc->host_value, sizeof(nc->host_value), "%s", nc->pod_dcgm);
        snprintf(nc->inst_dcgm, sizeof(nc->inst_dcgm), "%s:9400", pod_ip);
        snprintf(nc->inst_node, sizeof(nc->inst_node), "%s:9100", host_ip);
        nc->job_dcgm = "nvidia-dcgm-exporter";
        nc->job_node = "node-exporter";
        break;
    }
    case GW_SIM_LABELS_FQDN:
        snprintf(nc->inst_dcgm, sizeof(nc->inst_dcgm), "%s.cluster.example.com:9400", nc->host);
        snprintf(nc->inst_node, sizeof(nc->inst_node), "%s.cluster.example.com:9100", nc->host);
        break;
    case GW_SIM_LABELS_IP:
        snprintf(nc->inst_dcgm, sizeof(nc->inst_dcgm), "%s:9400", host_ip);
        snprintf(nc->inst_node, sizeof(nc->inst_node), "%s:9100", host_ip);
        break;
    case GW_SIM_LABELS_HOSTNAME:
    case GW_SIM_LABELS_LEGACY:
    case GW_SIM_LABELS_COUNT_:
    default:
        snprintf(nc->inst_dcgm, sizeof(nc->inst_dcgm), "%s:9400", nc->host);
        snprintf(nc->inst_node, sizeof(nc->inst_node), "%s:9100", nc->host);
        break;
    }
}

int gw_sim_cat_xid_series(struct gw_sim_gen *g, uint32_t node, uint32_t gpu, uint32_t code,
                          int count, uint32_t *sid, struct gw_error *err)
{
    struct gw_sim_gpu *gs = &g->rt[node].gpu[gpu];
    uint32_t *codes = count ? gs->cnt_code : gs->xid_code;
    uint32_t *sids = count ? gs->cnt_sid : gs->xid_sid;
    uint32_t *n = count ? &gs->n_cnt : &gs->n_xid;
    for (uint32_t i = 0; i < *n; i++)
        if (codes[i] == code) {
            *sid = sids[i];
            return GW_OK;
        }
    unsigned fam = count ? F_XID_COUNT : F_XID_ERRORS;
    if (!g->keep[fam]) {
        *sid = UINT32_MAX;
        return GW_OK;
    }
    if (*n >= GW_SIM_XID_SLOTS) {   /* more distinct codes than remembered: reuse the last */
        *sid = sids[*n - 1];
        return GW_OK;
    }
    struct node_common nc;
    struct gpu_ident id;
    struct lset s;
    char cbuf[16];
    node_common_init(g, node, &nc);
    gpu_identity(g, nc.host, gpu, &id);
    dcgm_labels(g, &nc, &id, &s);
    snprintf(cbuf, sizeof(cbuf), "%u", code);
    if (count) {
        lset_add(&s, "xid", cbuf);
        lset_add(&s, "window_size_in_ms", "300000");
    } else {
        lset_add(&s, "err_code", cbuf);
        lset_add(&s, "err_msg", gw_sim_xid_msg(code));
    }
    int rc = add_series(g, node, GW_SIM_JOB_DCGM, fam, (int)gpu, code, &s, sid, err);
    if (rc != GW_OK)
        return rc;
    codes[*n] = code;
    sids[*n] = *sid;
    if (count)
        gs->cnt_last[*n] = INT64_MIN;
    (*n)++;
    return GW_OK;
}

static int build_meta(struct gw_sim_gen *g, uint32_t node, unsigned job, const struct node_common *nc,
                      struct gw_sim_target *tg, struct gw_error *err)
{
    struct lset s = {.n = 0};
    target_labels(nc, job, &s);
    for (unsigned i = 0; i < 5; i++) {
        int rc = add_series(g, node, job, F_UP + i, -1, job, &s, &tg->meta_sid[i], err);
        if (rc != GW_OK)
            return rc;
    }
    return GW_OK;
}

static int build_dcgm(struct gw_sim_gen *g, uint32_t node, const struct node_common *nc,
                      struct gw_error *err)
{
    struct gw_sim_target *tg = &g->targets[node * 2 + GW_SIM_JOB_DCGM];
    size_t cap = 0;
    int rc;
    struct gpu_ident ids[GW_SIM_MAX_GPUS];
    for (uint32_t i = 0; i < g->cfg.gpus; i++)
        gpu_identity(g, nc->host, i, &ids[i]);
    for (unsigned f = F_SM_CLOCK; f <= F_NVLINK_RX; f++) {
        if (f == F_XID_ERRORS)
            continue;
        for (uint32_t i = 0; i < g->cfg.gpus; i++) {
            struct lset s;
            uint32_t sid;
            dcgm_labels(g, nc, &ids[i], &s);
            if ((rc = add_series(g, node, GW_SIM_JOB_DCGM, f, (int)i, 0, &s, &sid, err)) != GW_OK ||
                (rc = target_push(tg, &cap, sid, err)) != GW_OK)
                return rc;
        }
    }
    for (uint32_t i = 0; i < g->cfg.gpus; i++) {
        uint32_t sid;
        if ((rc = gw_sim_cat_xid_series(g, node, i, 0, 0, &sid, err)) != GW_OK)
            return rc;
    }
    return build_meta(g, node, GW_SIM_JOB_DCGM, nc, tg, err);
}

/* Node-level series with job/instance plus up to 4 extra labels. */
static int add_node(struct gw_sim_gen *g, uint32_t node, const struct node_common *nc,
                    struct gw_sim_target *tg, size_t *cap, unsigned fam, uint32_t sub,
                    const char *const *kv, size_t nkv, struct gw_error *err)
{
    struct lset s = {.n = 0};
    target_labels(nc, GW_SIM_JOB_NODE, &s);
    for (size_t i = 0; i + 1 < nkv * 2; i += 2)
        lset_add(&s, kv[i], kv[i + 1]);
    uint32_t sid;
    int rc = add_series(g, node, GW_SIM_JOB_NODE, fam, -1, sub, &s, &sid, err);
    if (rc != GW_OK)
        return rc;
    return target_push(tg, cap, sid, err);
}

static int build_node(struct gw_sim_gen *g, uint32_t node, const struct node_common *nc,
                      struct gw_error *err)
{
    struct gw_sim_target *tg = &g->targets[node * 2 + GW_SIM_JOB_NODE];
    size_t cap = 0;
    int rc = GW_OK;
    char b1[64], b2[64];
#define ADD(fam, sub, ...)                                                              \
    do {                                                                                \
        const char *kv_[] = {__VA_ARGS__};                                              \
        rc = add_node(g, node, nc, tg, &cap, (fam), (sub), kv_, sizeof(kv_) / sizeof(kv_[0]) / 2, \
                      err);                                                             \
        if (rc != GW_OK)                                                                \
            return rc;                                                                  \
    } while (0)
#define ADD0(fam)                                                                       \
    do {                                                                                \
        rc = add_node(g, node, nc, tg, &cap, (fam), 0, NULL, 0, err);                   \
        if (rc != GW_OK)                                                                \
            return rc;                                                                  \
    } while (0)

    for (uint32_t c = 0; c < GW_SIM_CPUS; c++) {
        snprintf(b1, sizeof(b1), "%u", c);
        for (uint32_t m = 0; m < GW_SIM_CPU_MODES; m++)
            ADD(F_CPU_SECONDS, c * GW_SIM_CPU_MODES + m, "cpu", b1, "mode", gw_sim_cpu_modes[m]);
    }
    for (unsigned f = F_INTR; f <= F_MEM_HP_SIZE; f++) {
        if (f == F_UNAME)
            ADD(F_UNAME, 0, "domainname", "(none)", "machine", "x86_64", "nodename", nc->host,
                "release", "6.8.0-60-generic", "sysname", "Linux", "version",
                "#63-Ubuntu SMP PREEMPT_DYNAMIC Tue Apr 15 19:04:15 UTC 2025");
        else
            ADD0(f);
    }
    for (uint32_t i = 0; i < g->n_nics; i++) {
        enum gw_sim_nic_role r = nic_info(g, i, b1, sizeof(b1), b2, sizeof(b2));
        for (unsigned f = F_NET_RX_BYTES; f <= F_NET_UP; f++) {
            if (f == F_NET_SPEED && r == GW_SIM_NIC_LO)
                continue;   /* lo has no link speed */
            ADD(f, i, "device", b1);
        }
    }
    for (uint32_t i = 2; i < g->n_nics; i++) {
        nic_info(g, i, b1, sizeof(b1), b2, sizeof(b2));
        ADD(F_IB_INFO, i, "device", b2, "board_id", "MT_0000000838", "firmware_version",
            "28.43.2026", "hca_type", "MT4129");
        for (unsigned f = F_IB_RX_BYTES; f <= F_IB_RATE; f++)
            ADD(f, i, "device", b2, "port", "1");
    }
    for (uint32_t m = 0; m < GW_SIM_NFS_METHODS; m++)
        ADD(F_NFS_REQUESTS, m, "proto", "4", "method", nfs_methods[m]);
    for (unsigned f = F_NFS_RPCS; f <= F_NFS_CONNECTIONS; f++)
        ADD0(f);
    ADD(F_NFS_PACKETS, 0, "protocol", "tcp");
    ADD(F_NFS_PACKETS, 1, "protocol", "udp");

    const char *ms[] = {"export", MS_EXPORT, "protocol", MS_PROTO, "mountaddr", MS_MOUNTADDR};
    ADD(F_MS_AGE, 0, ms[0], ms[1], ms[2], ms[3], ms[4], ms[5]);
    ADD(F_MS_MOUNT_INFO, 0, ms[0], ms[1], ms[2], ms[3], ms[4], ms[5], "mountpoint", "/ckpt");
    for (unsigned f = F_MS_READ_BYTES; f <= F_MS_WRITE_PAGES; f++)
        ADD(f, 0, ms[0], ms[1], ms[2], ms[3], ms[4], ms[5]);
    for (uint32_t t = 0; t < g->n_transports; t++) {
        snprintf(b1, sizeof(b1), "%u", t);
        for (unsigned f = F_MS_TR_BIND; f <= F_MS_TR_PENDING; f++)
            ADD(f, t, ms[0], ms[1], ms[2], ms[3], ms[4], ms[5], "transport", b1);
    }
    for (uint32_t o = 0; o < GW_SIM_MS_OPS; o++)
        for (unsigned f = F_MS_OP_REQUESTS; f <= F_MS_OP_ERRORS; f++)
            ADD(f, o, ms[0], ms[1], ms[2], ms[3], ms[4], ms[5], "operation", gw_sim_ms_ops[o]);
    for (unsigned f = F_MS_EV_INODE_REVAL; f <= F_MS_EV_JUKEBOX; f++)
        ADD(f, 0, ms[0], ms[1], ms[2], ms[3], ms[4], ms[5]);
    for (uint32_t m = 0; m < GW_SIM_MOUNTS; m++)
        for (unsigned f = F_FS_AVAIL; f <= F_FS_DEVICE_ERROR; f++)
            ADD(f, m, "device", mounts[m].dev, "fstype", mounts[m].fstype, "mountpoint",
                mounts[m].mnt);
#undef ADD
#undef ADD0
    return build_meta(g, node, GW_SIM_JOB_NODE, nc, tg, err);
}

int gw_sim_cat_build(struct gw_sim_gen *g, struct gw_error *err)
{
    for (unsigned f = 0; f < F_COUNT_; f++)
        g->keep[f] = g->filter ? (g->filter(g->filter_ud, gw_sim_families[f].name) != 0) : 1;
    g->n_nics = 2 + g->cfg.compute_nics + g->cfg.storage_nics;
    g->n_transports = g->cfg.nfs_transports;
    if (g->n_nics > GW_SIM_MAX_NICS)
        return gw_error_set(err, GW_EINVAL, "simulator: at most %d NICs per node",
                            GW_SIM_MAX_NICS - 2);
    if (g->n_transports < 1 || g->n_transports > GW_SIM_MAX_TRANSPORTS)
        return gw_error_set(err, GW_EINVAL, "simulator: nfs_transports must be 1..%d",
                            GW_SIM_MAX_TRANSPORTS);
    for (uint32_t node = 0; node < g->cfg.nodes; node++) {
        struct node_common nc;
        node_common_init(g, node, &nc);
        int rc = build_dcgm(g, node, &nc, err);
        if (rc == GW_OK)
            rc = build_node(g, node, &nc, err);
        if (rc != GW_OK)
            return rc;
    }
    return GW_OK;
}
