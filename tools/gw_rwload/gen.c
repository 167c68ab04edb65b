/* gen.c - the series generator of gw_rwload: dcgm-exporter and node_exporter
 * shaped series per node, values as pure functions of (seed, series,
 * timestamp), the scrape grid and its inverse (top of main.c). */
#include "rwload.h"

struct lbl { const char *name; const char *value; };

static int lbl_cmp(const void *a, const void *b)
{
    const struct lbl *x = a, *y = b;
    return strcmp(x->name, y->name);
}

void encode_label(struct gw_buf *b, const char *n, size_t nl, const char *v, size_t vl)
{
    size_t inner = 1 + varint_len(nl) + nl + 1 + varint_len(vl) + vl;
    bputc(b, 0x0A);
    bvarint(b, inner);
    bputc(b, 0x0A);
    bvarint(b, nl);
    bput(b, n, nl);
    bputc(b, 0x12);
    bvarint(b, vl);
    bput(b, v, vl);
}

void gen_host(const struct gen *g, int node, char *out, size_t cap)
{
    (void)g;
    snprintf(out, cap, "gpu%03d", node + 1);
}

static void add_series(struct gen *g, int node, int job, const char *name, enum model m,
                       double p1, double p2, const struct lbl *extra, size_t n_extra)
{
    struct lbl ls[16];
    char inst[300], host[256];
    if (n_extra + 3 > 16) die("too many labels");
    gen_host(g, node, host, sizeof host);
    snprintf(inst, sizeof inst, "%s:%d", host, job == JOB_DCGM ? 9400 : 9100);
    size_t n = 0;
    ls[n++] = (struct lbl){ "__name__", name };
    ls[n++] = (struct lbl){ "job", job == JOB_DCGM ? "dcgm" : "node" };
    ls[n++] = (struct lbl){ "instance", inst };
    for (size_t i = 0; i < n_extra; i++) ls[n++] = extra[i];
    qsort(ls, n, sizeof ls[0], lbl_cmp);
    if (g->n == g->cap) {
        g->cap = g->cap ? g->cap * 2 : 4096;
        g->s = realloc(g->s, g->cap * sizeof *g->s);
        if (!g->s) die("out of memory");
    }
    struct series *s = &g->s[g->n];
    s->node = (uint32_t)node;
    s->job = (uint8_t)job;
    s->model = (uint8_t)m;
    s->p1 = p1;
    s->p2 = p2;
    s->h = mix64(g->seed ^ mix64((uint64_t)g->n + 1));
    s->lbl_off = (uint32_t)g->lbl.len;
    for (size_t i = 0; i < n; i++)
        encode_label(&g->lbl, ls[i].name, strlen(ls[i].name), ls[i].value, strlen(ls[i].value));
    s->lbl_len = (uint32_t)(g->lbl.len - s->lbl_off);
    g->n++;
}

/* One labelled dimension for node_exporter families. */
static void add_node(struct gen *g, int node, const char *name, enum model m, double p1, double p2,
                     const char *k1, const char *v1, const char *k2, const char *v2,
                     const char *k3, const char *v3, const char *k4, const char *v4)
{
    struct lbl ex[4] = { { NULL, NULL }, { NULL, NULL }, { NULL, NULL }, { NULL, NULL } };
    size_t n = 0;
    if (k1) ex[n++] = (struct lbl){ k1, v1 };
    if (k2) ex[n++] = (struct lbl){ k2, v2 };
    if (k3) ex[n++] = (struct lbl){ k3, v3 };
    if (k4) ex[n++] = (struct lbl){ k4, v4 };
    add_series(g, node, JOB_NODE, name, m, p1, p2, ex, n);
}

struct dcgm_metric { const char *name; enum model m; double p1, p2; };

static const struct dcgm_metric DCGM[] = {
    { "DCGM_FI_DEV_SM_CLOCK", M_INTG, 1200, 780 },
    { "DCGM_FI_DEV_MEM_CLOCK", M_CONST, 3996, 0 },
    { "DCGM_FI_DEV_GPU_TEMP", M_TEMP, 48, 9 },
    { "DCGM_FI_DEV_MEMORY_TEMP", M_TEMP, 55, 7 },
    { "DCGM_FI_DEV_POWER_USAGE", M_G3, 640, 300 },
    { "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", M_COUNTER, 700000, 1e12 },
    { "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", M_RARE, 2e6, 0 },
    { "DCGM_FI_DEV_GPU_UTIL", M_INTG, 0, 100 },
    { "DCGM_FI_DEV_MEM_COPY_UTIL", M_INTG, 0, 60 },
    { "DCGM_FI_DEV_ENC_UTIL", M_ZERO, 0, 0 },
    { "DCGM_FI_DEV_DEC_UTIL", M_ZERO, 0, 0 },
    { "DCGM_FI_DEV_XID_ERRORS", M_XID, 0, 0 },
    { "DCGM_FI_DEV_FB_FREE", M_INTG, 20000, 100000 },
    { "DCGM_FI_DEV_FB_USED", M_INTG, 60000, 100000 },
    { "DCGM_FI_DEV_FB_RESERVED", M_CONST, 613, 0 },
    { "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", M_COUNTER, 4e6, 1e12 },
    { "DCGM_FI_DEV_VGPU_LICENSE_STATUS", M_ZERO, 0, 0 },
    { "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", M_ZERO, 0, 0 },
    { "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", M_RARE, 5e7, 0 },
    { "DCGM_FI_DEV_ROW_REMAP_FAILURE", M_ZERO, 0, 0 },
    { "DCGM_FI_PROF_GR_ENGINE_ACTIVE", M_RATIO, 0, 0 },
    { "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", M_RATIO, 0, 0 },
    { "DCGM_FI_PROF_DRAM_ACTIVE", M_RATIO, 0, 0 },
    { "DCGM_FI_PROF_PCIE_TX_BYTES", M_INTG, 1e8, 2e10 },
    { "DCGM_FI_PROF_PCIE_RX_BYTES", M_INTG, 1e8, 2e10 },
    { "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", M_RARE, 3e6, 0 },
    { "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", M_ZERO, 0, 0 },
    { "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", M_RARE, 1e6, 0 },
    { "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", M_ZERO, 0, 0 },
    { "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", M_RARE, 4e5, 0 },
    { "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", M_RARE, 8e5, 0 },
    { "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", M_RARE, 2e6, 0 },
    { "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", M_RARE, 9e6, 0 },
    { "DCGM_FI_DEV_POWER_VIOLATION", M_COUNTER, 3e7, 1e15 },
    { "DCGM_FI_DEV_THERMAL_VIOLATION", M_RARE, 1e5, 0 },
    { "DCGM_FI_DEV_SYNC_BOOST_VIOLATION", M_ZERO, 0, 0 },
    { "DCGM_FI_DEV_BOARD_LIMIT_VIOLATION", M_ZERO, 0, 0 },
    { "DCGM_FI_DEV_LOW_UTIL_VIOLATION", M_COUNTER, 1e8, 1e15 },
    { "DCGM_FI_DEV_RELIABILITY_VIOLATION", M_ZERO, 0, 0 },
    { "DCGM_FI_DEV_ROW_REMAP_PENDING", M_ZERO, 0, 0 },
    { "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", M_BITS, 0, 0 },
    { "DCGM_FI_DEV_ENFORCED_POWER_LIMIT", M_CONST, 1000, 0 },
    { "DCGM_FI_DEV_FB_TOTAL", M_CONST, 183359, 0 },
    { "DCGM_FI_PROF_SM_ACTIVE", M_RATIO, 0, 0 },
    { "DCGM_FI_PROF_SM_OCCUPANCY", M_RATIO, 0, 0 },
    { "DCGM_FI_PROF_NVLINK_TX_BYTES", M_INTG, 1e9, 8e10 },
    { "DCGM_FI_PROF_NVLINK_RX_BYTES", M_INTG, 1e9, 8e10 },
};

static const char *const MEMINFO[] = {
    "MemTotal", "MemFree", "MemAvailable", "Buffers", "Cached", "SwapCached", "Active",
    "Inactive", "Active_anon", "Inactive_anon", "Active_file", "Inactive_file", "Unevictable",
    "Mlocked", "SwapTotal", "SwapFree", "Dirty", "Writeback", "AnonPages", "Mapped", "Shmem",
    "KReclaimable", "Slab", "SReclaimable", "SUnreclaim", "KernelStack", "PageTables",
    "NFS_Unstable", "Bounce", "WritebackTmp", "CommitLimit", "Committed_AS", "VmallocTotal",
    "VmallocUsed", "VmallocChunk", "Percpu", "HardwareCorrupted", "AnonHugePages",
    "ShmemHugePages", "ShmemPmdMapped", "FileHugePages", "FilePmdMapped", "Hugepagesize",
    "Hugetlb", "DirectMap4k", "DirectMap2M", "DirectMap1G",
};
static const char *const CPU_MODES[] = { "idle", "iowait", "irq", "nice", "softirq", "steal", "system", "user" };
static const double CPU_MODE_RATE[] = { 0.55, 0.01, 0.001, 0.001, 0.02, 0.0001, 0.08, 0.33 };
static const char *const NFS_OPS[] = {
    "ACCESS", "COMMIT", "CREATE", "FSINFO", "FSSTAT", "GETATTR", "LINK", "LOOKUP", "MKDIR",
    "NULL", "PATHCONF", "READ", "READDIR", "READDIRPLUS", "READLINK", "REMOVE", "RENAME",
    "RMDIR", "SETATTR", "WRITE",
};
static const char *const NFS_OP_METRICS[] = {
    "requests_total", "transmissions_total", "major_timeouts_total", "sent_bytes_total",
    "received_bytes_total", "queue_time_seconds_total", "response_time_seconds_total",
    "request_time_seconds_total",
};
static const char *const NFS_TR_METRICS[] = {
    "transport_sends_total", "transport_receives_total", "transport_bad_transaction_ids_total",
    "transport_backlog_queue_total", "transport_pending_queue_total", "transport_maximum_rpc_slots",
};
static const char *const NFS_MOUNT_METRICS[] = {
    "read_bytes_total", "write_bytes_total", "direct_read_bytes_total", "direct_write_bytes_total",
    "total_read_bytes_total", "total_write_bytes_total", "read_pages_total", "write_pages_total",
    "age_seconds_total", "event_inode_revalidate_total",
};
static const char *const IB_METRICS[] = {
    "port_data_received_bytes_total", "port_data_transmitted_bytes_total",
    "port_packets_received_total", "port_packets_transmitted_total", "port_transmit_wait_total",
    "port_discards_received_total", "symbol_error_total", "link_downed_total",
    "link_error_recovery_total", "local_link_integrity_errors_total",
    "excessive_buffer_overrun_errors_total", "state_id",
};
static const char *const NET_DEVS[] = {
    "eno1", "eno2", "ens1f0np0", "ens1f1np1", "ibp26s0", "ibp60s0", "ibp77s0", "ibp94s0",
    "lo", "docker0",
};
static const char *const NET_METRICS[] = {
    "receive_bytes_total", "transmit_bytes_total", "receive_packets_total", "transmit_packets_total",
    "receive_errs_total", "transmit_errs_total", "receive_drop_total", "transmit_drop_total",
};
static const char *const DISKS[] = {
    "nvme0n1", "nvme1n1", "nvme2n1", "nvme3n1", "nvme4n1", "nvme5n1", "nvme6n1", "nvme7n1",
    "nvme8n1", "md0",
};
static const char *const DISK_METRICS[] = {
    "reads_completed_total", "writes_completed_total", "read_bytes_total", "written_bytes_total",
    "io_time_seconds_total", "read_time_seconds_total", "write_time_seconds_total", "io_now",
};
static const char *const FS_MOUNTS[] = {
    "/", "/boot", "/boot/efi", "/raid", "/var/lib/docker", "/scratch", "/home", "/checkpoints",
};
static const char *const FS_METRICS[] = {
    "node_filesystem_avail_bytes", "node_filesystem_free_bytes", "node_filesystem_size_bytes",
    "node_filesystem_files", "node_filesystem_files_free", "node_filesystem_readonly",
};
static const uint8_t PCI_BUS[] = { 0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB };

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static void gen_build(struct gen *g)
{
    char buf[8][128];
    gw_buf_init(&g->lbl, 0);
    g->node_first = calloc((size_t)g->nodes * 2, sizeof(size_t));
    g->node_end = calloc((size_t)g->nodes * 2, sizeof(size_t));
    if (!g->node_first || !g->node_end) die("out of memory");
    for (int node = 0; node < g->nodes; node++) {
        char host[64];
        gen_host(g, node, host, sizeof host);
        int upper = g->host_mode == HOST_UPPER || (g->host_mode == HOST_MIXED && (node & 1));
        /* dcgm-exporter */
        g->node_first[node * 2 + JOB_DCGM] = g->n;
        for (int gpu = 0; gpu < g->gpus; gpu++) {
            uint64_t u = mix64(g->seed ^ ((uint64_t)node << 20) ^ (uint64_t)gpu ^ 0xD1CEULL);
            snprintf(buf[0], sizeof buf[0], "%d", gpu);
            snprintf(buf[1], sizeof buf[1], "GPU-%08x-%04x-%04x-%04x-%012" PRIx64, (unsigned)(u >> 32),
                     (unsigned)(u >> 16) & 0xffffu, (unsigned)u & 0xffffu, (unsigned)(u >> 48) & 0xffffu,
                     (uint64_t)(mix64(u) & 0xffffffffffffULL));
            snprintf(buf[2], sizeof buf[2], "00000000:%02X:00.0",
                     gpu < 8 ? PCI_BUS[gpu] : (unsigned)(0x10 + gpu) & 0xffu);
            snprintf(buf[3], sizeof buf[3], "nvidia%d", gpu);
            struct lbl ex[7] = {
                { "gpu", buf[0] }, { "UUID", buf[1] }, { "pci_bus_id", buf[2] }, { "device", buf[3] },
                { "modelName", "NVIDIA B200" }, { upper ? "Hostname" : "hostname", host },
                { "DCGM_FI_DRIVER_VERSION", "570.124.06" },
            };
            for (size_t m = 0; m < NELEM(DCGM); m++)
                add_series(g, node, JOB_DCGM, DCGM[m].name, DCGM[m].m, DCGM[m].p1, DCGM[m].p2, ex, 7);
        }
        g->node_end[node * 2 + JOB_DCGM] = g->n;
        /* node_exporter */
        g->node_first[node * 2 + JOB_NODE] = g->n;
        for (int cpu = 0; cpu < 64; cpu++) {
            snprintf(buf[0], sizeof buf[0], "%d", cpu);
            for (size_t m = 0; m < NELEM(CPU_MODES); m++)
                add_node(g, node, "node_cpu_seconds_total", M_CFLOAT, CPU_MODE_RATE[m], 0,
                         "cpu", buf[0], "mode", CPU_MODES[m], NULL, NULL, NULL, NULL);
            add_node(g, node, "node_softnet_processed_total", M_COUNTER, 900, 1e7, "cpu", buf[0], NULL, NULL, NULL, NULL, NULL, NULL);
            add_node(g, node, "node_softnet_dropped_total", M_ZERO, 0, 0, "cpu", buf[0], NULL, NULL, NULL, NULL, NULL, NULL);
            add_node(g, node, "node_softnet_times_squeezed_total", M_RARE, 3e3, 0, "cpu", buf[0], NULL, NULL, NULL, NULL, NULL, NULL);
        }
        add_node(g, node, "node_intr_total", M_COUNTER, 2e5, 1e10, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        add_node(g, node, "node_context_switches_total", M_COUNTER, 4e5, 1e10, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        add_node(g, node, "node_forks_total", M_COUNTER, 40, 1e7, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        add_node(g, node, "node_boot_time_seconds", M_CONST, 1.754e9 + (double)node * 17, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        add_node(g, node, "node_time_seconds", M_TIME, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        add_node(g, node, "node_procs_running", M_INTG, 1, 60, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        add_node(g, node, "node_procs_blocked", M_INTG, 0, 4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        add_node(g, node, "node_load1", M_LOAD, 20, 40, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        add_node(g, node, "node_load5", M_LOAD, 25, 30, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        add_node(g, node, "node_load15", M_LOAD, 28, 20, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        add_node(g, node, "node_entropy_available_bits", M_CONST, 256, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        add_node(g, node, "node_vmstat_pgpgin", M_COUNTER, 5e4, 1e11, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        add_node(g, node, "node_vmstat_pgpgout", M_COUNTER, 8e4, 1e11, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        add_node(g, node, "node_vmstat_pswpin", M_ZERO, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        add_node(g, node, "node_vmstat_pswpout", M_ZERO, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        add_node(g, node, "node_vmstat_pgfault", M_COUNTER, 3e5, 1e12, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        add_node(g, node, "node_vmstat_pgmajfault", M_COUNTER, 2, 1e5, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        add_node(g, node, "node_vmstat_oom_kill", M_RARE, 5e6, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        for (size_t m = 0; m < NELEM(MEMINFO); m++) {
            char name[96];
            snprintf(name, sizeof name, "node_memory_%s_bytes", MEMINFO[m]);
            int gauge = m == 1 || m == 2 || m == 4 || m == 16 || m == 18 || m == 20;
            add_node(g, node, name, gauge ? M_INTG : M_CONST, gauge ? 1.0e11 : 2.0e12 / (double)(m + 1), 4.0e11,
                     NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        }
        add_node(g, node, "node_memory_HugePages_Total", M_ZERO, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        add_node(g, node, "node_memory_HugePages_Free", M_ZERO, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        add_node(g, node, "node_memory_HugePages_Rsvd", M_ZERO, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        add_node(g, node, "node_memory_HugePages_Surp", M_ZERO, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
        for (size_t d = 0; d < NELEM(NET_DEVS); d++) {
            for (size_t m = 0; m < NELEM(NET_METRICS); m++) {
                char name[96];
                snprintf(name, sizeof name, "node_network_%s", NET_METRICS[m]);
                int err = m >= 4;
                add_node(g, node, name, err ? M_RARE : M_COUNTER, err ? 2e5 : (m < 2 ? 3e8 : 3e5), 1e13,
                         "device", NET_DEVS[d], NULL, NULL, NULL, NULL, NULL, NULL);
            }
            add_node(g, node, "node_network_speed_bytes", M_CONST, d < 4 ? 5e10 : 5e10, 0, "device", NET_DEVS[d], NULL, NULL, NULL, NULL, NULL, NULL);
            add_node(g, node, "node_network_up", M_CONST, 1, 0, "device", NET_DEVS[d], NULL, NULL, NULL, NULL, NULL, NULL);
            add_node(g, node, "node_network_mtu_bytes", M_CONST, d >= 4 && d < 8 ? 4092 : 1500, 0, "device", NET_DEVS[d], NULL, NULL, NULL, NULL, NULL, NULL);
        }
        for (int port = 0; port < 8; port++) {
            snprintf(buf[0], sizeof buf[0], "mlx5_%d", port);
            for (size_t m = 0; m < NELEM(IB_METRICS); m++) {
                char name[96];
                snprintf(name, sizeof name, "node_infiniband_%s", IB_METRICS[m]);
                enum model md = m < 4 ? M_COUNTER : m == 4 ? M_COUNTER : m == 11 ? M_CONST : M_RARE;
                double p1 = m < 2 ? 5e9 : m < 4 ? 2e6 : m == 4 ? 1e5 : m == 11 ? 4 : 1e6;
                add_node(g, node, name, md, p1, 1e14, "device", buf[0], "port", "1", NULL, NULL, NULL, NULL);
            }
        }
        for (int mnt = 0; mnt < 2; mnt++) {
            const char *exp = mnt == 0 ? "nfs01:/checkpoints" : "nfs02:/datasets";
            const char *addr = mnt == 0 ? "10.1.0.11" : "10.1.0.12";
            for (size_t op = 0; op < NELEM(NFS_OPS); op++)
                for (size_t m = 0; m < NELEM(NFS_OP_METRICS); m++) {
                    char name[128];
                    snprintf(name, sizeof name, "node_mountstats_nfs_operations_%s", NFS_OP_METRICS[m]);
                    int secs = m >= 5;
                    add_node(g, node, name, secs ? M_CFLOAT : (m == 2 ? M_RARE : M_COUNTER),
                             secs ? 0.02 : (m == 2 ? 1e6 : (m >= 3 ? 1e5 : 300)), 1e9,
                             "export", exp, "mountaddr", addr, "operation", NFS_OPS[op], "protocol", "tcp");
                }
            for (int tr = 0; tr < 8; tr++) {
                snprintf(buf[0], sizeof buf[0], "%d", tr);
                for (size_t m = 0; m < NELEM(NFS_TR_METRICS); m++) {
                    char name[128];
                    snprintf(name, sizeof name, "node_mountstats_nfs_%s", NFS_TR_METRICS[m]);
                    add_node(g, node, name, m == 5 ? M_CONST : (m == 2 ? M_ZERO : M_COUNTER), m == 5 ? 65 : 200, 1e8,
                             "export", exp, "mountaddr", addr, "protocol", "tcp", "transport", buf[0]);
                }
            }
            for (size_t m = 0; m < NELEM(NFS_MOUNT_METRICS); m++) {
                char name[128];
                snprintf(name, sizeof name, "node_mountstats_nfs_%s", NFS_MOUNT_METRICS[m]);
                add_node(g, node, name, M_COUNTER, m < 6 ? 2e7 : 5e3, 1e12,
                         "export", exp, "mountaddr", addr, "protocol", "tcp", NULL, NULL);
            }
        }
        for (size_t f = 0; f < NELEM(FS_MOUNTS); f++) {
            snprintf(buf[0], sizeof buf[0], "/dev/nvme%zun1p1", f);
            for (size_t m = 0; m < NELEM(FS_METRICS); m++)
                add_node(g, node, FS_METRICS[m], m < 2 ? M_INTG : (m == 5 ? M_ZERO : M_CONST),
                         m < 2 ? 1e12 : 3.8e12, 1e11, "device", buf[0], "fstype", "ext4", "mountpoint", FS_MOUNTS[f], NULL, NULL);
        }
        for (size_t d = 0; d < NELEM(DISKS); d++)
            for (size_t m = 0; m < NELEM(DISK_METRICS); m++) {
                char name[96];
                snprintf(name, sizeof name, "node_disk_%s", DISK_METRICS[m]);
                add_node(g, node, name, m >= 4 && m < 7 ? M_CFLOAT : (m == 7 ? M_INTG : M_COUNTER),
                         m >= 4 && m < 7 ? 0.3 : (m == 7 ? 0 : (m == 2 || m == 3 ? 5e7 : 2e3)), m == 7 ? 8 : 1e12,
                         "device", DISKS[d], NULL, NULL, NULL, NULL, NULL, NULL);
            }
        for (int chip = 0; chip < 4; chip++)
            for (int sensor = 1; sensor <= 8; sensor++) {
                snprintf(buf[0], sizeof buf[0], "platform_coretemp_%d", chip);
                snprintf(buf[1], sizeof buf[1], "temp%d", sensor);
                add_node(g, node, "node_hwmon_temp_celsius", M_TEMP, 42 + chip, 6, "chip", buf[0], "sensor", buf[1], NULL, NULL, NULL, NULL);
            }
        g->node_end[node * 2 + JOB_NODE] = g->n;
        if (g->dcgm_only) /* --jobs dcgm: the node_exporter series are left out */
            g->n = g->node_end[node * 2 + JOB_NODE] = g->node_first[node * 2 + JOB_NODE];
    }
}

/* Scrape j of (node, job) is stamped ts_of(). */
static int64_t target_offset(const struct gen *g, uint32_t node, int job)
{
    int64_t span = g->interval_ms / 2;
    if (span > 1000) span = 1000;
    if (span < 1) span = 1;
    return (int64_t)(mix64(g->seed ^ ((uint64_t)node * 2 + (uint64_t)job) ^ 0x5CA7EULL) % (uint64_t)span);
}

int64_t ts_of(const struct gen *g, uint32_t node, int job, int64_t j)
{
    uint64_t jit = mix64(g->seed ^ ((uint64_t)node << 32) ^ ((uint64_t)job << 31) ^ (uint64_t)j) % 3;
    return g->start_ms + j * g->interval_ms + target_offset(g, node, job) + (int64_t)jit;
}

/* Inverse: -1 when t is not on the grid. */
int64_t step_of(const struct gen *g, uint32_t node, int job, int64_t t)
{
    int64_t rel = t - g->start_ms - target_offset(g, node, job);
    if (rel < 0) return -1;
    int64_t j = rel / g->interval_ms;
    if (j >= g->n_steps || ts_of(g, node, job, j) != t) return -1;
    return j;
}

double gen_value(const struct gen *g, const struct series *s, int64_t t)
{
    uint64_t h = s->h;
    double u = unit01(mix64(h ^ ((uint64_t)t * 0x9E3779B97F4A7C15ULL)));
    double ts = (double)(t - TIME_BASE_MS) / 1000.0;
    double period = 600.0 + (double)((h >> 40) % 3000);
    double phase = unit01(mix64(h + 1)) * 6.283185307179586;
    double sn = sin(6.283185307179586 * ts / period + phase);
    double rate = s->p1 * (0.5 + unit01(mix64(h + 2)));
    (void)g;
    switch ((enum model)s->model) {
    case M_CONST: return s->p1 == floor(s->p1) ? s->p1 : floor(s->p1);
    case M_ZERO: return 0.0;
    case M_TEMP: return rint(s->p1 + s->p2 * sn + (u < 0.15 ? -1.0 : (u > 0.85 ? 1.0 : 0.0)));
    case M_G3: return rint((s->p1 + s->p2 * sn + 0.03 * s->p2 * (u - 0.5)) * 1000.0) / 1000.0;
    case M_INTG: return floor(s->p1 + s->p2 * (0.5 + 0.5 * sn) * 0.98 + 0.02 * s->p2 * u);
    case M_RATIO: {
        double r = 0.5 + 0.45 * sn + 0.05 * (u - 0.5);
        return r < 0 ? 0 : (r > 1 ? 1 : r);
    }
    case M_COUNTER: return floor(unit01(mix64(h + 3)) * s->p2) + floor(rate * (ts + u));
    case M_CFLOAT: return rint(100.0 * rate * (ts + u)) / 100.0;
    case M_RARE: return floor(ts / (s->p1 * (1.0 + unit01(mix64(h + 4)))));
    case M_XID: {
        static const double codes[4] = { 79, 48, 94, 119 };
        return ((h >> 8) % 64 == 0 && fmod(ts, 7200.0) >= 3600.0) ? codes[(h >> 16) % 4] : 0.0;
    }
    case M_BITS: {
        static const double bits[4] = { 0, 1, 4, 0 };
        return bits[mix64(h ^ (uint64_t)(int64_t)(ts / 300.0)) % 4];
    }
    case M_TIME: return (double)t / 1000.0;
    case M_LOAD: return rint(100.0 * (s->p1 + s->p2 * (0.5 + 0.5 * sn) + 0.1 * u)) / 100.0;
    }
    return 0.0;
}

/* verify: generator parameters not given on the command line come from
 * the ack log header written by send. */
void opts_from_ack_log(struct gen_opts *o, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) die("cannot open ack log %s", path);
    char line[512], host[32];
    int nodes, gpus;
    long long interval, start, steps;
    unsigned long long seed;
    int got = 0;
    if (fgets(line, sizeof line, f) &&
        sscanf(line, "# gw_rwload nodes=%d gpus=%d interval=%lld start=%lld seed=%llu host=%31s steps=%lld", &nodes,
               &gpus, &interval, &start, &seed, host, &steps) == 7)
        got = 1;
    fclose(f);
    if (!got) die("ack log %s has no gw_rwload header line", path);
    if (!(o->set & OPT_NODES)) o->nodes = nodes;
    if (!(o->set & OPT_GPUS)) o->gpus = gpus;
    if (!(o->set & OPT_INTERVAL)) o->interval_ms = interval;
    if (!(o->set & OPT_SEED)) o->seed = seed;
    if (!(o->set & OPT_HOST))
        o->host_mode = strcmp(host, "Hostname") == 0 ? HOST_UPPER : (strcmp(host, "mixed") == 0 ? HOST_MIXED : HOST_LOWER);
    if (!(o->set & OPT_DURATION)) o->duration_ms = steps * o->interval_ms;
    if (!o->start_set) { o->start_ms = start; o->start_set = 1; }
}

const char *host_mode_name(int m)
{
    return m == HOST_LOWER ? "hostname" : (m == HOST_UPPER ? "Hostname" : "mixed");
}

void gen_init(struct gen *g, const struct gen_opts *o)
{
    memset(g, 0, sizeof *g);
    g->seed = o->seed;
    g->nodes = o->nodes;
    g->gpus = o->gpus;
    g->host_mode = o->host_mode;
    g->dcgm_only = o->dcgm_only;
    g->interval_ms = o->interval_ms;
    g->duration_ms = o->duration_ms;
    g->start_ms = o->start_ms;
    g->n_steps = o->duration_ms / o->interval_ms;
    if (g->n_steps < 1) g->n_steps = 1;
    gen_build(g);
}

void gen_free(struct gen *g)
{
    free(g->s);
    free(g->node_first);
    free(g->node_end);
    free(g->ht);
    gw_buf_free(&g->lbl);
}

void gen_index(struct gen *g)
{
    g->ht_cap = 1;
    while (g->ht_cap < g->n * 2) g->ht_cap <<= 1;
    g->ht = malloc(g->ht_cap * sizeof *g->ht);
    if (!g->ht) die("out of memory");
    memset(g->ht, 0xff, g->ht_cap * sizeof *g->ht);
    for (size_t i = 0; i < g->n; i++) {
        const struct series *s = &g->s[i];
        size_t k = fnv1a(g->lbl.data + s->lbl_off, s->lbl_len) & (g->ht_cap - 1);
        while (g->ht[k] != UINT32_MAX) k = (k + 1) & (g->ht_cap - 1);
        g->ht[k] = (uint32_t)i;
    }
}

int64_t gen_lookup(const struct gen *g, const uint8_t *p, size_t n)
{
    size_t k = fnv1a(p, n) & (g->ht_cap - 1);
    while (g->ht[k] != UINT32_MAX) {
        const struct series *s = &g->s[g->ht[k]];
        if (s->lbl_len == n && memcmp(g->lbl.data + s->lbl_off, p, n) == 0) return g->ht[k];
        k = (k + 1) & (g->ht_cap - 1);
    }
    return -1;
}
