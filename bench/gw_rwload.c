/* gw_rwload - remote-write load generator, remote-read verifier and wire
 * helpers for the integration tests and the ingest benchmark.
 *
 *   gw_rwload send   --url http://H:P/api/v1/write [generator flags]
 *                    [--conns 4] [--batch 2000] [--ack-log F] [--realtime]
 *                    [--max-rate N] [--retry-for 300s] [--timeout 60s]
 *   gw_rwload verify --read-url http://H:P/api/v1/read --ack-log F
 *                    [generator flags] [--streamed]
 *   gw_rwload info   [generator flags]         series count, samples total
 *   gw_rwload body   --series 'n=v,n=v' [--series ...] [--ts MS] [--value V]
 *                    --out F                   raw (uncompressed) v1 protobuf
 *   gw_rwload snappy --in F --out G            snappy block compress
 *   gw_rwload unsnappy --in F --out G          snappy block decompress
 *   gw_rwload send-text --url http://H:P/api/v1/write --in F [--batch 2000]
 *                    [--retry-for 300s] [--timeout 60s]
 *                                              samples from a text file
 *
 * send-text input: one sample per line, '#' lines and blank lines ignored:
 *   <labels> <unix ms> <value>
 * <labels> is `name{a="b",...}` or `{__name__="name",a="b",...}` (label
 * values in double quotes with the escapes \\ \" \n; an empty value is
 * kept as given); <value> is anything strtod reads (1, -2.5e-300, NaN,
 * +Inf, -Inf, 0x1p-3) or the keyword `stale` for the stale-marker NaN
 * (bits 0x7ff0000000000002). The samples of one series must come in
 * strictly increasing time order; series may interleave. Example:
 *   up{job="node",instance="h0:9100"} 1700000000123 1
 *   {__name__="up",job="node",instance="h1:9100"} 1700000000400 0
 *   up{job="node",instance="h0:9100"} 1700000015087 stale
 * Labels are sorted by name before sending; a repeated label name is an
 * error. All samples are sorted by timestamp (file order on ties) and sent
 * over one connection in requests of --batch samples, each holding one
 * TimeSeries per series with its samples of that batch, so a receiver that
 * only accepts samples near its newest one (Prometheus' head) gets them in
 * time order. Retries and refusals as for send; exit status 1 if anything
 * was refused or the sender gave up.
 *
 * Generator flags: --nodes 63 --gpus 8 --interval 15s --duration 1h
 * --start <unix ms | now | now-65m> --seed N --hostname-label
 * hostname|Hostname|mixed.
 *
 * The generator: per node, per GPU 47 dcgm-exporter series (job="dcgm",
 * instance="<host>:9400", labels gpu UUID pci_bus_id device modelName
 * hostname|Hostname DCGM_FI_DRIVER_VERSION) and ~1575 node_exporter
 * series (job="node", instance="<host>:9100": cpu, softnet, memory,
 * vmstat, network, infiniband, NFS mountstats, filesystem, disk, hwmon).
 * Values are pure functions of (seed, series index, timestamp): integer
 * temperatures drifting slowly, power with 3 decimals, counters in whole
 * units with noisy increments, constant gauges, ratios 0..1. Scrape j of
 * a target is stamped start + j*interval + offset(target) + jitter(0..2
 * ms), offset < min(interval/2, 1000 ms), so verify can map a timestamp
 * back to j and regenerate the value bit for bit.
 *
 * Sending: the series are split into --conns contiguous ranges, one
 * thread and one keep-alive connection each; a thread sends scrape j of
 * its range in requests of --batch series (one sample per series), like a
 * Prometheus shard. Threads stay within 2 scrapes of each other so a
 * receiver that refuses samples far behind its newest one (Prometheus'
 * head) gets them in time order. 5xx, 429 and connection errors are
 * retried with exponential backoff (30 ms .. 5 s) for up to --retry-for;
 * other 4xx are counted as refused and make the exit status 1.
 *
 * Ack log (text, one write(2) per record, so every line written survives
 * the sender's death):
 *   # gw_rwload nodes=4 gpus=8 interval=15000 start=1700000000000 seed=1 host=mixed steps=960
 *   <scrape j> <series lo> <series hi>          series [lo, hi) acked at j
 * e.g. "17 2000 4000" = scrape 17 of series 2000..3999 got a 2xx.
 *
 * verify reads every (node, job) back with remote read (SAMPLES, or
 * STREAMED_XOR_CHUNKS with --streamed, decoding the XOR chunks itself) in
 * windows of <= ~1M samples, and fails on: an acked sample missing, any
 * returned value not bit-identical to the generator, a timestamp seen
 * twice, a timestamp off the scrape grid, an unknown series, unsorted
 * labels or samples. Samples that were sent but never acked may be
 * present (the ack was lost) and are checked like the others. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "gpuwatch/buf.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/rw.h"

#define MAX_SNAPPY_OUT ((size_t)1 << 30)
#define LAG_STEPS 2
#define TIME_BASE_MS 1600000000000LL

/* ------------------------------------------------------------------ */
/* small utilities                                                     */
/* ------------------------------------------------------------------ */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("gw_rwload: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static void errtext(int e, char *buf, size_t cap)
{
    /* GNU strerror_r may return a static string instead of filling buf. */
    const char *s = strerror_r(e, buf, cap);
    if (s != buf) snprintf(buf, cap, "%s", s);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(int64_t ms)
{
    if (ms <= 0) return;
    struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static uint64_t mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

static double unit01(uint64_t h) { return (double)(h >> 11) * 0x1.0p-53; }

static uint64_t fnv1a(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) { h ^= p[i]; h *= 0x100000001b3ULL; }
    return mix64(h);
}

static int64_t parse_i64(const char *s, const char *what)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0') die("invalid %s: %s", what, s);
    return (int64_t)v;
}

static int64_t parse_dur(const char *s, const char *what)
{
    int64_t ms = 0;
    if (gw_parse_duration_ms(s, &ms) != GW_OK || ms <= 0) die("invalid duration for %s: %s", what, s);
    return ms;
}

static void bput(struct gw_buf *b, const void *p, size_t n)
{
    if (gw_buf_append(b, p, n) != GW_OK) die("out of memory");
}

static void bputc(struct gw_buf *b, uint8_t c) { bput(b, &c, 1); }

static void bvarint(struct gw_buf *b, uint64_t v)
{
    uint8_t tmp[10];
    bput(b, tmp, gw_uvarint_put(tmp, v));
}

static size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) { v >>= 7; n++; }
    return n;
}

static void write_file(const char *path, const uint8_t *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) die("cannot create %s", path);
    if (n && fwrite(p, 1, n, f) != n) die("cannot write %s", path);
    if (fclose(f) != 0) die("cannot write %s", path);
}

static void read_file(const char *path, struct gw_buf *out)
{
    FILE *f = fopen(path, "rb");
    if (!f) die("cannot open %s", path);
    uint8_t tmp[65536];
    size_t n;
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0) bput(out, tmp, n);
    if (ferror(f)) die("cannot read %s", path);
    fclose(f);
}

/* ------------------------------------------------------------------ */
/* protobuf reading                                                    */
/* ------------------------------------------------------------------ */

struct pb { const uint8_t *p, *end; };

static int pb_varint(struct pb *r, uint64_t *v)
{
    size_t n = gw_uvarint_get(r->p, (size_t)(r->end - r->p), v);
    if (n == 0) return -1;
    r->p += n;
    return 0;
}

/* Reads the next field header; for length-delimited fields sets *sub to
 * the payload, for varint/fixed fields sets *v. 0 ok, 1 end, -1 bad. */
static int pb_next(struct pb *r, uint32_t *field, uint32_t *wt, uint64_t *v, struct pb *sub)
{
    if (r->p >= r->end) return 1;
    uint64_t key;
    if (pb_varint(r, &key) != 0) return -1;
    *field = (uint32_t)(key >> 3);
    *wt = (uint32_t)(key & 7);
    switch (*wt) {
    case 0: return pb_varint(r, v);
    case 1:
        if (r->end - r->p < 8) return -1;
        memcpy(v, r->p, 8);   /* little-endian host assumed (x86/arm64) */
        r->p += 8;
        return 0;
    case 2: {
        uint64_t len;
        if (pb_varint(r, &len) != 0 || len > (uint64_t)(r->end - r->p)) return -1;
        sub->p = r->p;
        sub->end = r->p + len;
        r->p += len;
        return 0;
    }
    case 5:
        if (r->end - r->p < 4) return -1;
        *v = 0;
        memcpy(v, r->p, 4);
        r->p += 4;
        return 0;
    default: return -1;
    }
}

/* ------------------------------------------------------------------ */
/* generator                                                           */
/* ------------------------------------------------------------------ */

enum model {
    M_CONST, M_ZERO, M_TEMP, M_G3, M_INTG, M_RATIO, M_COUNTER, M_CFLOAT,
    M_RARE, M_XID, M_BITS, M_TIME, M_LOAD
};

enum { JOB_DCGM = 0, JOB_NODE = 1 };
enum { HOST_LOWER, HOST_UPPER, HOST_MIXED };

struct series {
    uint32_t node;
    uint8_t job;
    uint8_t model;
    double p1, p2;
    uint64_t h;                 /* per-series hash */
    uint32_t lbl_off, lbl_len;  /* protobuf-encoded Label fields (sorted) */
};

struct gen {
    uint64_t seed;
    int nodes, gpus, host_mode;
    int64_t interval_ms, duration_ms, start_ms, n_steps;
    struct series *s;
    size_t n, cap;
    struct gw_buf lbl;          /* all label bytes */
    size_t *node_first;         /* node_first[node*2+job] .. first series index */
    size_t *node_end;
    /* hash table label bytes -> series index (verify) */
    uint32_t *ht;
    size_t ht_cap;
};

struct lbl { const char *name; const char *value; };

static int lbl_cmp(const void *a, const void *b)
{
    const struct lbl *x = a, *y = b;
    return strcmp(x->name, y->name);
}

static void encode_label(struct gw_buf *b, const char *n, size_t nl, const char *v, size_t vl)
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

static void gen_host(const struct gen *g, int node, char *out, size_t cap)
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

static int64_t ts_of(const struct gen *g, uint32_t node, int job, int64_t j)
{
    uint64_t jit = mix64(g->seed ^ ((uint64_t)node << 32) ^ ((uint64_t)job << 31) ^ (uint64_t)j) % 3;
    return g->start_ms + j * g->interval_ms + target_offset(g, node, job) + (int64_t)jit;
}

/* Inverse: -1 when t is not on the grid. */
static int64_t step_of(const struct gen *g, uint32_t node, int job, int64_t t)
{
    int64_t rel = t - g->start_ms - target_offset(g, node, job);
    if (rel < 0) return -1;
    int64_t j = rel / g->interval_ms;
    if (j >= g->n_steps || ts_of(g, node, job, j) != t) return -1;
    return j;
}

static double gen_value(const struct gen *g, const struct series *s, int64_t t)
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

struct gen_opts {
    int nodes, gpus, host_mode;
    int64_t interval_ms, duration_ms, start_ms;
    int start_set;
    uint64_t seed;
    unsigned set;               /* OPT_* bits of flags given explicitly */
};

enum { OPT_NODES = 1, OPT_GPUS = 2, OPT_INTERVAL = 4, OPT_DURATION = 8, OPT_SEED = 16, OPT_HOST = 32 };

/* verify: generator parameters not given on the command line come from
 * the ack log header written by send. */
static void opts_from_ack_log(struct gen_opts *o, const char *path)
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

static const char *host_mode_name(int m)
{
    return m == HOST_LOWER ? "hostname" : (m == HOST_UPPER ? "Hostname" : "mixed");
}

static void gen_init(struct gen *g, const struct gen_opts *o)
{
    memset(g, 0, sizeof *g);
    g->seed = o->seed;
    g->nodes = o->nodes;
    g->gpus = o->gpus;
    g->host_mode = o->host_mode;
    g->interval_ms = o->interval_ms;
    g->duration_ms = o->duration_ms;
    g->start_ms = o->start_ms;
    g->n_steps = o->duration_ms / o->interval_ms;
    if (g->n_steps < 1) g->n_steps = 1;
    gen_build(g);
}

static void gen_free(struct gen *g)
{
    free(g->s);
    free(g->node_first);
    free(g->node_end);
    free(g->ht);
    gw_buf_free(&g->lbl);
}

static void gen_index(struct gen *g)
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

static int64_t gen_lookup(const struct gen *g, const uint8_t *p, size_t n)
{
    size_t k = fnv1a(p, n) & (g->ht_cap - 1);
    while (g->ht[k] != UINT32_MAX) {
        const struct series *s = &g->s[g->ht[k]];
        if (s->lbl_len == n && memcmp(g->lbl.data + s->lbl_off, p, n) == 0) return g->ht[k];
        k = (k + 1) & (g->ht_cap - 1);
    }
    return -1;
}

/* ------------------------------------------------------------------ */
/* HTTP/1.1 client (blocking, keep-alive)                              */
/* ------------------------------------------------------------------ */

struct url { char host[256]; char port[16]; char path[1024]; };

static void parse_url(const char *s, struct url *u)
{
    const char *p = s;
    if (strncmp(p, "http://", 7) != 0) die("only http:// URLs are supported: %s", s);
    p += 7;
    const char *slash = strchr(p, '/');
    const char *hostend = slash ? slash : p + strlen(p);
    const char *colon = memchr(p, ':', (size_t)(hostend - p));
    size_t hl = (size_t)((colon ? colon : hostend) - p);
    if (hl == 0 || hl >= sizeof u->host) die("bad host in URL %s", s);
    memcpy(u->host, p, hl);
    u->host[hl] = '\0';
    if (colon) {
        size_t pl = (size_t)(hostend - colon - 1);
        if (pl == 0 || pl >= sizeof u->port) die("bad port in URL %s", s);
        memcpy(u->port, colon + 1, pl);
        u->port[pl] = '\0';
    } else {
        snprintf(u->port, sizeof u->port, "80");
    }
    snprintf(u->path, sizeof u->path, "%s", slash ? slash : "/");
}

struct http {
    struct url url;
    int fd;
    int timeout_ms;
    struct gw_buf in;           /* bytes read but not consumed */
    size_t in_pos;
    char err[512];
};

struct http_resp {
    int status;
    char ctype[256];
    char cenc[64];
    struct gw_buf body;
};

static void http_init(struct http *c, const char *url, int timeout_ms)
{
    memset(c, 0, sizeof *c);
    parse_url(url, &c->url);
    c->fd = -1;
    c->timeout_ms = timeout_ms;
    gw_buf_init(&c->in, 0);
}

static void http_close(struct http *c)
{
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    gw_buf_reset(&c->in);
    c->in_pos = 0;
}

static void http_free(struct http *c)
{
    http_close(c);
    gw_buf_free(&c->in);
}

static int http_connect(struct http *c)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(c->url.host, c->url.port, &hints, &res);
    if (rc != 0) {
        snprintf(c->err, sizeof c->err, "resolve %s: %s", c->url.host, gai_strerror(rc));
        return -1;
    }
    int fd = -1;
    char eb[128] = "no address";
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        struct timeval tv = { c->timeout_ms / 1000, (c->timeout_ms % 1000) * 1000 };
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
        errtext(errno, eb, sizeof eb);
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        snprintf(c->err, sizeof c->err, "connect %s:%s: %s", c->url.host, c->url.port, eb);
        return -1;
    }
    c->fd = fd;
    gw_buf_reset(&c->in);
    c->in_pos = 0;
    return 0;
}

static int send_all(struct http *c, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) continue;
            char eb[128];
            errtext(errno, eb, sizeof eb);
            snprintf(c->err, sizeof c->err, "send: %s", eb);
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads more bytes into c->in. 1 got bytes, 0 EOF, -1 error. */
static int fill(struct http *c)
{
    if (c->in_pos > 0 && c->in_pos == c->in.len) {
        gw_buf_reset(&c->in);
        c->in_pos = 0;
    }
    if (gw_buf_reserve(&c->in, 65536) != GW_OK) die("out of memory");
    for (;;) {
        ssize_t r = recv(c->fd, c->in.data + c->in.len, 65536, 0);
        if (r > 0) { c->in.len += (size_t)r; return 1; }
        if (r == 0) { snprintf(c->err, sizeof c->err, "connection closed by peer"); return 0; }
        if (errno == EINTR) continue;
        char eb[128];
        errtext(errno, eb, sizeof eb);
        snprintf(c->err, sizeof c->err, "recv: %s", eb);
        return -1;
    }
}

/* Finds "\r\n" from c->in_pos; returns line length or -1 (needs more). */
static long find_crlf(struct http *c)
{
    for (size_t i = c->in_pos; i + 1 < c->in.len; i++)
        if (c->in.data[i] == '\r' && c->in.data[i + 1] == '\n') return (long)(i - c->in_pos);
    return -1;
}

static int read_line(struct http *c, char *out, size_t cap)
{
    long n;
    while ((n = find_crlf(c)) < 0) {
        if (c->in.len - c->in_pos > 65536) { snprintf(c->err, sizeof c->err, "header line too long"); return -1; }
        if (fill(c) <= 0) return -1;
    }
    size_t k = (size_t)n < cap - 1 ? (size_t)n : cap - 1;
    memcpy(out, c->in.data + c->in_pos, k);
    out[k] = '\0';
    c->in_pos += (size_t)n + 2;
    return 0;
}

static int read_exact(struct http *c, struct gw_buf *out, size_t n)
{
    while (n > 0) {
        if (c->in_pos == c->in.len && fill(c) <= 0) return -1;
        size_t avail = c->in.len - c->in_pos;
        size_t k = avail < n ? avail : n;
        if (out) bput(out, c->in.data + c->in_pos, k);
        c->in_pos += k;
        n -= k;
    }
    return 0;
}

static int hdr_is(const char *line, const char *name, const char **val)
{
    size_t n = strlen(name);
    if (strncasecmp(line, name, n) != 0 || line[n] != ':') return 0;
    const char *v = line + n + 1;
    while (*v == ' ' || *v == '\t') v++;
    *val = v;
    return 1;
}

/* Copies a header value that must fit whole: 0, or -1 (c->err set) when
 * it is longer than the field, so that no value is compared cut short. */
static int hdr_copy(struct http *c, char *dst, size_t cap, const char *name, const char *v)
{
    size_t n = strlen(v);
    if (n >= cap) {
        snprintf(c->err, sizeof c->err, "%s header longer than %zu bytes", name, cap - 1);
        return -1;
    }
    memcpy(dst, v, n + 1);
    return 0;
}

/* One request/response. 0: got a response (any status); -1: transport
 * error (c->err says what; the connection is closed). */
static int http_do_once(struct http *c, const char *method, const char *extra_hdrs,
                        const uint8_t *body, size_t len, struct http_resp *r, int *reused)
{
    *reused = c->fd >= 0;
    if (c->fd < 0 && http_connect(c) != 0) return -1;
    char head[2048];
    int hn = snprintf(head, sizeof head,
                      "%s %s HTTP/1.1\r\nHost: %s:%s\r\nUser-Agent: gw_rwload/1.0\r\n%sContent-Length: %zu\r\n\r\n",
                      method, c->url.path, c->url.host, c->url.port, extra_hdrs ? extra_hdrs : "", len);
    if (hn < 0 || (size_t)hn >= sizeof head) die("request header too long");
    if (send_all(c, (const uint8_t *)head, (size_t)hn) != 0 || (len && send_all(c, body, len) != 0)) goto fail;
    char line[4096];
    if (read_line(c, line, sizeof line) != 0) goto fail;
    *reused = 0;   /* got a response byte: not a stale keep-alive connection */
    int major = 0, minor = 0, status = 0;
    if (sscanf(line, "HTTP/%d.%d %d", &major, &minor, &status) != 3) {
        snprintf(c->err, sizeof c->err, "bad status line: %.100s", line);
        goto fail;
    }
    r->status = status;
    r->ctype[0] = r->cenc[0] = '\0';
    gw_buf_reset(&r->body);
    long long clen = -1;
    int chunked = 0, conn_close = (major == 1 && minor == 0);
    for (;;) {
        if (read_line(c, line, sizeof line) != 0) goto fail;
        if (line[0] == '\0') break;
        const char *v;
        if (hdr_is(line, "Content-Length", &v)) {
            char *end;
            clen = strtoll(v, &end, 10);
            if (end == v || clen < 0) { snprintf(c->err, sizeof c->err, "bad Content-Length"); goto fail; }
        } else if (hdr_is(line, "Transfer-Encoding", &v)) {
            chunked = strcasestr(v, "chunked") != NULL;
        } else if (hdr_is(line, "Connection", &v)) {
            if (strcasestr(v, "close")) conn_close = 1;
        } else if (hdr_is(line, "Content-Type", &v)) {
            if (hdr_copy(c, r->ctype, sizeof r->ctype, "Content-Type", v) != 0) goto fail;
        } else if (hdr_is(line, "Content-Encoding", &v)) {
            if (hdr_copy(c, r->cenc, sizeof r->cenc, "Content-Encoding", v) != 0) goto fail;
        }
    }
    int no_body = status == 204 || status == 304 || (status >= 100 && status < 200) || strcmp(method, "HEAD") == 0;
    if (no_body) {
        /* nothing */
    } else if (chunked) {
        for (;;) {
            if (read_line(c, line, sizeof line) != 0) goto fail;
            char *end;
            errno = 0;
            unsigned long long sz = strtoull(line, &end, 16);
            if (end == line || errno != 0) { snprintf(c->err, sizeof c->err, "bad chunk size"); goto fail; }
            if (sz == 0) {
                do {
                    if (read_line(c, line, sizeof line) != 0) goto fail;
                } while (line[0] != '\0');
                break;
            }
            if (read_exact(c, &r->body, (size_t)sz) != 0) goto fail;
            if (read_line(c, line, sizeof line) != 0) goto fail;
        }
    } else if (clen >= 0) {
        if (read_exact(c, &r->body, (size_t)clen) != 0) goto fail;
    } else {
        for (;;) {
            if (c->in_pos < c->in.len) {
                bput(&r->body, c->in.data + c->in_pos, c->in.len - c->in_pos);
                c->in_pos = c->in.len;
            }
            int f = fill(c);
            if (f == 0) break;
            if (f < 0) goto fail;
        }
        conn_close = 1;
    }
    if (conn_close) http_close(c);
    return 0;
fail:
    http_close(c);
    return -1;
}

static int http_do(struct http *c, const char *method, const char *extra_hdrs, const uint8_t *body, size_t len,
                   struct http_resp *r)
{
    int reused = 0;
    int rc = http_do_once(c, method, extra_hdrs, body, len, r, &reused);
    if (rc != 0 && reused) rc = http_do_once(c, method, extra_hdrs, body, len, r, &reused);
    return rc;
}

/* ------------------------------------------------------------------ */
/* send                                                                */
/* ------------------------------------------------------------------ */

struct sender {
    struct gen *g;
    const char *url;
    int conns;
    size_t batch;
    int ack_fd;
    int realtime;
    double max_rate;
    int64_t retry_for_ms;
    int timeout_ms;
    int quiet;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int64_t *progress;
    int failed;                 /* a thread gave up */
    uint64_t samples_acked, requests_ok, retries, refused_requests, refused_samples, bytes_sent;
    double t0;
};

struct worker { struct sender *s; int id; size_t lo, hi; };

static void wait_lag(struct sender *s, int id, int64_t j)
{
    pthread_mutex_lock(&s->mu);
    s->progress[id] = j;
    pthread_cond_broadcast(&s->cv);
    for (;;) {
        int64_t minp = INT64_MAX;
        for (int i = 0; i < s->conns; i++)
            if (s->progress[i] < minp) minp = s->progress[i];
        if (minp >= j - LAG_STEPS || s->failed) break;
        pthread_cond_wait(&s->cv, &s->mu);
    }
    pthread_mutex_unlock(&s->mu);
}

static void build_write(const struct gen *g, size_t lo, size_t hi, int64_t j, struct gw_buf *pb)
{
    gw_buf_reset(pb);
    for (size_t i = lo; i < hi; i++) {
        const struct series *s = &g->s[i];
        int64_t t = ts_of(g, s->node, s->job, j);
        double v = gen_value(g, s, t);
        size_t sample_len = 1 + 8 + 1 + varint_len((uint64_t)t);
        size_t ts_len = s->lbl_len + 1 + varint_len(sample_len) + sample_len;
        bputc(pb, 0x0A);
        bvarint(pb, ts_len);
        bput(pb, g->lbl.data + s->lbl_off, s->lbl_len);
        bputc(pb, 0x12);
        bvarint(pb, sample_len);
        bputc(pb, 0x09);
        bput(pb, &v, 8);          /* little-endian host */
        bputc(pb, 0x10);
        bvarint(pb, (uint64_t)t);
    }
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct sender *s = w->s;
    struct gen *g = s->g;
    struct http c;
    struct http_resp r;
    struct gw_buf pb, sn;
    http_init(&c, s->url, s->timeout_ms);
    gw_buf_init(&r.body, 0);
    gw_buf_init(&pb, 0);
    gw_buf_init(&sn, 0);
    const char *hdrs = "Content-Type: application/x-protobuf\r\nContent-Encoding: snappy\r\n"
                       "X-Prometheus-Remote-Write-Version: 0.1.0\r\n";
    uint64_t my_samples = 0;
    for (int64_t j = 0; j < g->n_steps; j++) {
        wait_lag(s, w->id, j);
        if (s->failed) break;
        if (s->realtime) {
            int64_t due = g->start_ms + j * g->interval_ms;
            sleep_ms(due - gw_now_ms());
        }
        for (size_t lo = w->lo; lo < w->hi; lo += s->batch) {
            size_t hi = lo + s->batch < w->hi ? lo + s->batch : w->hi;
            if (s->max_rate > 0) {
                double due = s->t0 + (double)my_samples / (s->max_rate / s->conns);
                double wait = due - now_s();
                if (wait > 0) sleep_ms((int64_t)(wait * 1000.0));
            }
            build_write(g, lo, hi, j, &pb);
            gw_buf_reset(&sn);
            if (gw_snappy_encode(pb.data, pb.len, &sn) != GW_OK) die("snappy encode failed");
            int64_t backoff = 30, t_first_fail = 0;
            for (;;) {
                int rc = http_do(&c, "POST", hdrs, sn.data, sn.len, &r);
                if (rc == 0 && r.status >= 200 && r.status < 300) {
                    char line[96];
                    int n = snprintf(line, sizeof line, "%" PRId64 " %zu %zu\n", j, lo, hi);
                    if (s->ack_fd >= 0 && write(s->ack_fd, line, (size_t)n) != n) die("cannot write ack log");
                    pthread_mutex_lock(&s->mu);
                    s->samples_acked += hi - lo;
                    s->requests_ok++;
                    s->bytes_sent += sn.len;
                    pthread_mutex_unlock(&s->mu);
                    break;
                }
                if (rc == 0 && r.status >= 400 && r.status < 500 && r.status != 429) {
                    pthread_mutex_lock(&s->mu);
                    s->refused_requests++;
                    s->refused_samples += hi - lo;
                    uint64_t nref = s->refused_requests;
                    pthread_mutex_unlock(&s->mu);
                    if (nref <= 5)
                        fprintf(stderr, "gw_rwload: refused (HTTP %d) scrape %" PRId64 " series %zu..%zu: %.*s\n",
                                r.status, j, lo, hi, (int)(r.body.len > 300 ? 300 : r.body.len),
                                r.body.data ? (const char *)r.body.data : "");
                    break;
                }
                int64_t nowm = gw_now_ms();
                if (t_first_fail == 0) t_first_fail = nowm;
                if (nowm - t_first_fail > s->retry_for_ms) {
                    fprintf(stderr, "gw_rwload: giving up after %" PRId64 " ms: %s\n", nowm - t_first_fail,
                            rc == 0 ? "server error" : c.err);
                    pthread_mutex_lock(&s->mu);
                    s->failed = 1;
                    pthread_cond_broadcast(&s->cv);
                    pthread_mutex_unlock(&s->mu);
                    goto out;
                }
                pthread_mutex_lock(&s->mu);
                uint64_t nret = ++s->retries;
                pthread_mutex_unlock(&s->mu);
                if (!s->quiet && (nret <= 3 || nret % 100 == 0)) {
                    if (rc == 0)
                        fprintf(stderr, "gw_rwload: HTTP %d, retrying (retry #%" PRIu64 "): %.*s\n", r.status, nret,
                                (int)(r.body.len > 200 ? 200 : r.body.len), r.body.data ? (const char *)r.body.data : "");
                    else
                        fprintf(stderr, "gw_rwload: %s, retrying (retry #%" PRIu64 ")\n", c.err, nret);
                }
                sleep_ms(backoff);
                backoff = backoff * 2 > 5000 ? 5000 : backoff * 2;
            }
            my_samples += hi - lo;
        }
    }
out:
    pthread_mutex_lock(&s->mu);
    s->progress[w->id] = INT64_MAX;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    http_free(&c);
    gw_buf_free(&r.body);
    gw_buf_free(&pb);
    gw_buf_free(&sn);
    return NULL;
}

/* ------------------------------------------------------------------ */
/* remote read client + verify                                         */
/* ------------------------------------------------------------------ */

struct verifier {
    struct gen *g;
    uint8_t *acked, *seen;       /* bitmaps [series][step] */
    uint64_t n_seen, n_dup, n_mismatch, n_offgrid, n_unknown, n_unsorted, n_wrongq, n_series_seen;
    uint64_t n_errors_printed;
    uint8_t *series_seen;
    size_t q_first, q_end;       /* series range the current query may return */
    int64_t q_start, q_endt;
    struct gw_buf canon;
};

static int bit_get(const uint8_t *b, uint64_t i) { return (b[i >> 3] >> (i & 7)) & 1; }
static void bit_set(uint8_t *b, uint64_t i) { b[i >> 3] |= (uint8_t)(1u << (i & 7)); }

static void verr(struct verifier *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void verr(struct verifier *v, const char *fmt, ...)
{
    if (v->n_errors_printed++ >= 20) return;
    va_list ap;
    va_start(ap, fmt);
    fputs("verify: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void series_name(const struct gen *g, size_t i, char *out, size_t cap)
{
    /* renders {k="v",...} from the stored label bytes */
    const struct series *s = &g->s[i];
    struct pb r = { g->lbl.data + s->lbl_off, g->lbl.data + s->lbl_off + s->lbl_len };
    size_t o = 0;
    out[0] = '\0';
    uint32_t f, wt;
    uint64_t val;
    struct pb sub;
    while (pb_next(&r, &f, &wt, &val, &sub) == 0) {
        struct pb lr = sub;
        struct pb nm = { 0 }, vv = { 0 };
        while (pb_next(&lr, &f, &wt, &val, &sub) == 0) {
            if (f == 1) nm = sub;
            if (f == 2) vv = sub;
        }
        int n = snprintf(out + o, cap - o, "%s%.*s=\"%.*s\"", o ? "," : "{", (int)(nm.end - nm.p), (const char *)nm.p,
                         (int)(vv.end - vv.p), (const char *)vv.p);
        if (n < 0 || (size_t)n >= cap - o) break;
        o += (size_t)n;
    }
    if (o + 2 < cap) { out[o] = '}'; out[o + 1] = '\0'; }
}

/* Called per series of a response with its label submessages in lbls
 * (raw Label messages concatenated as field-1 entries). */
static int64_t v_series(struct verifier *v, struct pb lbls_field_list[], size_t n_lbls)
{
    struct gen *g = v->g;
    gw_buf_reset(&v->canon);
    const uint8_t *prev_name = NULL;
    size_t prev_len = 0;
    int sorted = 1;
    for (size_t i = 0; i < n_lbls; i++) {
        struct pb lr = lbls_field_list[i], sub, nm = { 0 }, vv = { 0 };
        uint32_t f, wt;
        uint64_t val;
        int rc;
        while ((rc = pb_next(&lr, &f, &wt, &val, &sub)) == 0) {
            if (f == 1 && wt == 2) nm = sub;
            if (f == 2 && wt == 2) vv = sub;
        }
        if (rc < 0) return -2;
        size_t nl = (size_t)(nm.end - nm.p), vl = (size_t)(vv.end - vv.p);
        if (prev_name) {
            size_t m = prev_len < nl ? prev_len : nl;
            int c = memcmp(prev_name, nm.p, m);
            if (c > 0 || (c == 0 && prev_len >= nl)) sorted = 0;
        }
        prev_name = nm.p;
        prev_len = nl;
        encode_label(&v->canon, (const char *)nm.p, nl, (const char *)vv.p, vl);
    }
    if (!sorted) {
        v->n_unsorted++;
        verr(v, "labels not sorted in a returned series");
    }
    int64_t idx = gen_lookup(g, v->canon.data, v->canon.len);
    if (idx < 0) {
        v->n_unknown++;
        verr(v, "unknown series returned (%zu labels)", n_lbls);
        return -1;
    }
    if ((size_t)idx < v->q_first || (size_t)idx >= v->q_end) {
        v->n_wrongq++;
        char nm[1024];
        series_name(g, (size_t)idx, nm, sizeof nm);
        verr(v, "series %s does not match the query", nm);
        return -1;
    }
    if (!v->series_seen[idx]) { v->series_seen[idx] = 1; v->n_series_seen++; }
    return idx;
}

static void v_sample(struct verifier *v, size_t idx, int64_t t, double val)
{
    struct gen *g = v->g;
    const struct series *s = &g->s[idx];
    char nm[1024];
    if (t < v->q_start || t > v->q_endt) {
        series_name(g, idx, nm, sizeof nm);
        verr(v, "%s: sample t=%" PRId64 " outside the queried range [%" PRId64 ",%" PRId64 "]", nm, t, v->q_start,
             v->q_endt);
        v->n_offgrid++;
        return;
    }
    int64_t j = step_of(g, s->node, s->job, t);
    if (j < 0) {
        series_name(g, idx, nm, sizeof nm);
        verr(v, "%s: sample t=%" PRId64 " is not a timestamp that was sent", nm, t);
        v->n_offgrid++;
        return;
    }
    uint64_t bit = (uint64_t)idx * (uint64_t)g->n_steps + (uint64_t)j;
    if (bit_get(v->seen, bit)) {
        series_name(g, idx, nm, sizeof nm);
        verr(v, "%s: timestamp %" PRId64 " returned twice", nm, t);
        v->n_dup++;
        return;
    }
    bit_set(v->seen, bit);
    v->n_seen++;
    double want = gen_value(g, s, t);
    uint64_t a, b;
    memcpy(&a, &val, 8);
    memcpy(&b, &want, 8);
    if (a != b) {
        series_name(g, idx, nm, sizeof nm);
        verr(v, "%s: t=%" PRId64 " value %.17g (0x%016" PRIx64 ") != sent %.17g (0x%016" PRIx64 ")", nm, t, val, a,
             want, b);
        v->n_mismatch++;
    }
}

/* TimeSeries{labels=1, samples=2} */
static int v_timeseries(struct verifier *v, struct pb ts)
{
    struct pb lbls[64];
    size_t nl = 0;
    struct pb r = ts, sub;
    uint32_t f, wt;
    uint64_t val;
    int rc;
    while ((rc = pb_next(&r, &f, &wt, &val, &sub)) == 0)
        if (f == 1 && wt == 2) {
            if (nl == 64) return -1;
            lbls[nl++] = sub;
        }
    if (rc < 0) return -1;
    int64_t idx = v_series(v, lbls, nl);
    if (idx == -2) return -1;
    int64_t prev_t = INT64_MIN;
    r = ts;
    while ((rc = pb_next(&r, &f, &wt, &val, &sub)) == 0) {
        if (f != 2 || wt != 2) continue;
        double d = 0;
        int64_t t = 0;
        struct pb sr = sub, s2;
        uint64_t sv;
        while ((rc = pb_next(&sr, &f, &wt, &sv, &s2)) == 0) {
            if (f == 1 && wt == 1) memcpy(&d, &sv, 8);
            if (f == 2 && wt == 0) t = (int64_t)sv;
        }
        if (rc < 0) return -1;
        if (idx < 0) continue;
        if (t <= prev_t) {
            v->n_unsorted++;
            verr(v, "samples not in increasing time order (t=%" PRId64 " after %" PRId64 ")", t, prev_t);
        }
        prev_t = t;
        v_sample(v, (size_t)idx, t, d);
    }
    return rc < 0 ? -1 : 0;
}

/* SAMPLES: ReadResponse{results=1 QueryResult{timeseries=1}} */
static int v_samples_response(struct verifier *v, const uint8_t *p, size_t n)
{
    struct pb r = { p, p + n }, qr, ts;
    uint32_t f, wt;
    uint64_t val;
    int rc;
    while ((rc = pb_next(&r, &f, &wt, &val, &qr)) == 0) {
        if (f != 1 || wt != 2) continue;
        int rc2;
        while ((rc2 = pb_next(&qr, &f, &wt, &val, &ts)) == 0)
            if (f == 1 && wt == 2 && v_timeseries(v, ts) != 0) return -1;
        if (rc2 < 0) return -1;
    }
    return rc < 0 ? -1 : 0;
}

/* Prometheus XOR chunk decoder (MSB-first bit stream). */
struct bits { const uint8_t *p; size_t n_bits, pos; };

static int bits_read(struct bits *b, unsigned n, uint64_t *out)
{
    if (n > 64 || b->pos + n > b->n_bits) return -1;
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++) {
        size_t k = b->pos + i;
        v = (v << 1) | ((b->p[k >> 3] >> (7 - (k & 7))) & 1u);
    }
    b->pos += n;
    *out = v;
    return 0;
}

static int xor_decode(struct verifier *v, size_t idx, const uint8_t *data, size_t len, int64_t mint, int64_t maxt,
                      int64_t *prev_t)
{
    if (len < 2) return -1;
    unsigned count = gw_get_be16(data);
    const uint8_t *p = data + 2;
    size_t rem = len - 2;
    int64_t t = 0, delta = 0;
    uint64_t vbits = 0;
    unsigned leading = 0, trailing = 0;
    struct bits b = { p, rem * 8, 0 };
    for (unsigned k = 0; k < count; k++) {
        if (k == 0) {
            uint64_t z;
            size_t used = gw_uvarint_get(p, rem, &z);
            if (used == 0) return -1;
            t = gw_unzigzag(z);
            b.pos = used * 8;
            if (bits_read(&b, 64, &vbits) != 0) return -1;
        } else if (k == 1) {
            if (b.pos % 8 != 0) return -1;
            uint64_t d;
            size_t used = gw_uvarint_get(p + b.pos / 8, rem - b.pos / 8, &d);
            if (used == 0) return -1;
            b.pos += used * 8;
            delta = (int64_t)d;
            t += delta;
        } else {
            unsigned ones = 0;
            uint64_t bit;
            while (ones < 4) {
                if (bits_read(&b, 1, &bit) != 0) return -1;
                if (!bit) break;
                ones++;
            }
            int64_t dod = 0;
            unsigned sz = ones == 0 ? 0 : ones == 1 ? 14 : ones == 2 ? 17 : ones == 3 ? 20 : 64;
            if (sz) {
                uint64_t raw;
                if (bits_read(&b, sz, &raw) != 0) return -1;
                if (sz < 64 && raw > (1ULL << (sz - 1))) raw -= 1ULL << sz;   /* sign (asymmetric, as Prometheus) */
                dod = (int64_t)raw;
            }
            delta += dod;
            t += delta;
        }
        if (k > 0) {
            uint64_t bit;
            if (bits_read(&b, 1, &bit) != 0) return -1;
            if (bit) {
                if (bits_read(&b, 1, &bit) != 0) return -1;
                if (bit) {
                    uint64_t l, sig;
                    if (bits_read(&b, 5, &l) != 0 || bits_read(&b, 6, &sig) != 0) return -1;
                    if (sig == 0) sig = 64;
                    if (l + sig > 64) return -1;
                    leading = (unsigned)l;
                    trailing = 64 - leading - (unsigned)sig;
                }
                unsigned sig = 64 - leading - trailing;
                uint64_t x;
                if (sig == 0 || bits_read(&b, sig, &x) != 0) return -1;
                vbits ^= x << trailing;
            }
        }
        double d;
        memcpy(&d, &vbits, 8);
        if (t < mint || t > maxt) {
            verr(v, "chunk sample t=%" PRId64 " outside the chunk's [%" PRId64 ",%" PRId64 "]", t, mint, maxt);
            v->n_offgrid++;
        }
        if (t <= *prev_t) {
            v->n_unsorted++;
            verr(v, "chunk samples not in increasing time order");
        }
        *prev_t = t;
        v_sample(v, idx, t, d);
    }
    return 0;
}

static int v_chunked_series(struct verifier *v, struct pb cs)
{
    struct pb lbls[64], r = cs, sub;
    size_t nl = 0;
    uint32_t f, wt;
    uint64_t val;
    int rc;
    while ((rc = pb_next(&r, &f, &wt, &val, &sub)) == 0)
        if (f == 1 && wt == 2) {
            if (nl == 64) return -1;
            lbls[nl++] = sub;
        }
    if (rc < 0) return -1;
    int64_t idx = v_series(v, lbls, nl);
    if (idx == -2) return -1;
    if (idx < 0) return 0;
    int64_t prev_t = INT64_MIN;
    r = cs;
    while ((rc = pb_next(&r, &f, &wt, &val, &sub)) == 0) {
        if (f != 2 || wt != 2) continue;
        int64_t mint = 0, maxt = 0;
        uint64_t type = 0;
        struct pb data = { NULL, NULL }, cr = sub, s2;
        uint64_t cv;
        while ((rc = pb_next(&cr, &f, &wt, &cv, &s2)) == 0) {
            if (f == 1 && wt == 0) mint = (int64_t)cv;
            if (f == 2 && wt == 0) maxt = (int64_t)cv;
            if (f == 3 && wt == 0) type = cv;
            if (f == 4 && wt == 2) data = s2;
        }
        if (rc < 0) return -1;
        if (type != 1) {
            verr(v, "chunk encoding %" PRIu64 " is not XOR", type);
            return -1;
        }
        if (!data.p || xor_decode(v, (size_t)idx, data.p, (size_t)(data.end - data.p), mint, maxt, &prev_t) != 0) {
            verr(v, "undecodable XOR chunk");
            return -1;
        }
    }
    return rc < 0 ? -1 : 0;
}

static int v_streamed_response(struct verifier *v, const uint8_t *p, size_t n)
{
    size_t off = 0;
    while (off < n) {
        uint64_t len;
        size_t used = gw_uvarint_get(p + off, n - off, &len);
        if (used == 0 || len > n - off - used || n - off - used - len < 4) {
            verr(v, "truncated frame at byte %zu", off);
            return -1;
        }
        off += used;
        uint32_t crc = gw_get_be32(p + off);
        off += 4;
        if (gw_crc32c(0, p + off, (size_t)len) != crc) {
            verr(v, "frame CRC mismatch at byte %zu", off);
            return -1;
        }
        struct pb r = { p + off, p + off + len }, sub;
        uint32_t f, wt;
        uint64_t val;
        int rc;
        while ((rc = pb_next(&r, &f, &wt, &val, &sub)) == 0) {
            if (f == 1 && wt == 2 && v_chunked_series(v, sub) != 0) return -1;
            if (f == 2 && wt == 0 && val != 0) {
                verr(v, "frame query_index %" PRIu64 " != 0", val);
                return -1;
            }
        }
        if (rc < 0) return -1;
        off += (size_t)len;
    }
    return 0;
}

static void encode_read_request(struct gw_buf *out, int64_t start, int64_t end, const char *lname,
                                const char *lvalue, int streamed)
{
    struct gw_buf m, q;
    gw_buf_init(&m, 0);
    gw_buf_init(&q, 0);
    /* LabelMatcher{type=1 EQ(0) omitted, name=2, value=3} */
    bputc(&m, 0x12);
    bvarint(&m, strlen(lname));
    bput(&m, lname, strlen(lname));
    bputc(&m, 0x1A);
    bvarint(&m, strlen(lvalue));
    bput(&m, lvalue, strlen(lvalue));
    /* Query{start=1, end=2, matchers=3} */
    bputc(&q, 0x08);
    bvarint(&q, (uint64_t)start);
    bputc(&q, 0x10);
    bvarint(&q, (uint64_t)end);
    bputc(&q, 0x1A);
    bvarint(&q, m.len);
    bput(&q, m.data, m.len);
    gw_buf_reset(out);
    bputc(out, 0x0A);
    bvarint(out, q.len);
    bput(out, q.data, q.len);
    /* accepted_response_types=2, packed */
    bputc(out, 0x12);
    if (streamed) {
        bputc(out, 2);
        bputc(out, 1);   /* STREAMED_XOR_CHUNKS */
        bputc(out, 0);   /* SAMPLES */
    } else {
        bputc(out, 1);
        bputc(out, 0);
    }
    gw_buf_free(&m);
    gw_buf_free(&q);
}

static int load_ack_log(struct verifier *v, const char *path, const struct gen_opts *o)
{
    struct gen *g = v->g;
    FILE *f = fopen(path, "r");
    if (!f) die("cannot open ack log %s", path);
    char line[512];
    uint64_t n_lines = 0, n_acked = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') {
            char want[512];
            snprintf(want, sizeof want, "# gw_rwload nodes=%d gpus=%d interval=%" PRId64 " start=%" PRId64
                     " seed=%" PRIu64 " host=%s steps=%" PRId64 "\n", o->nodes, o->gpus, o->interval_ms,
                     g->start_ms, o->seed, host_mode_name(o->host_mode), g->n_steps);
            if (strcmp(line, want) != 0) die("ack log was written with other generator flags:\n  log:  %s  flags: %s", line, want);
            continue;
        }
        long long j, lo, hi;
        if (sscanf(line, "%lld %lld %lld", &j, &lo, &hi) != 3) continue;   /* torn last line */
        if (j < 0 || j >= g->n_steps || lo < 0 || hi > (long long)g->n || lo > hi) die("ack log line out of range: %s", line);
        for (long long i = lo; i < hi; i++) {
            uint64_t bit = (uint64_t)i * (uint64_t)g->n_steps + (uint64_t)j;
            if (!bit_get(v->acked, bit)) { bit_set(v->acked, bit); n_acked++; }
        }
        n_lines++;
    }
    fclose(f);
    fprintf(stderr, "verify: ack log %s: %" PRIu64 " records, %" PRIu64 " acked samples\n", path, n_lines, n_acked);
    return 0;
}

static int cmd_verify(struct gen *g, const struct gen_opts *o, const char *read_url, const char *ack_log,
                      int streamed, int timeout_ms)
{
    struct verifier v;
    memset(&v, 0, sizeof v);
    v.g = g;
    uint64_t nbits = (uint64_t)g->n * (uint64_t)g->n_steps;
    if (nbits > (uint64_t)1 << 36) die("too many samples to verify");
    v.acked = calloc((size_t)(nbits / 8 + 1), 1);
    v.seen = calloc((size_t)(nbits / 8 + 1), 1);
    v.series_seen = calloc(g->n, 1);
    if (!v.acked || !v.seen || !v.series_seen) die("out of memory");
    gw_buf_init(&v.canon, 0);
    gen_index(g);
    load_ack_log(&v, ack_log, o);

    struct http c;
    struct http_resp r;
    struct gw_buf req, sn, plain;
    http_init(&c, read_url, timeout_ms);
    gw_buf_init(&r.body, 0);
    gw_buf_init(&req, 0);
    gw_buf_init(&sn, 0);
    gw_buf_init(&plain, 0);
    const char *hdrs = "Content-Type: application/x-protobuf\r\nContent-Encoding: snappy\r\n"
                       "Accept-Encoding: snappy\r\nX-Prometheus-Remote-Read-Version: 0.1.0\r\n";
    int fatal = 0;
    uint64_t n_requests = 0;
    double t0 = now_s();
    for (int node = 0; node < g->nodes && !fatal; node++) {
        for (int job = 0; job < 2 && !fatal; job++) {
            size_t first = g->node_first[node * 2 + job], end = g->node_end[node * 2 + job];
            size_t per_step = end - first;
            if (per_step == 0) continue;
            int64_t win_steps = (int64_t)(1000000 / per_step);
            if (win_steps < 1) win_steps = 1;
            char host[64], inst[128];
            gen_host(g, node, host, sizeof host);
            snprintf(inst, sizeof inst, "%s:%d", host, job == JOB_DCGM ? 9400 : 9100);
            for (int64_t w0 = 0; w0 < g->n_steps && !fatal; w0 += win_steps) {
                int64_t w1 = w0 + win_steps < g->n_steps ? w0 + win_steps : g->n_steps;
                v.q_first = first;
                v.q_end = end;
                v.q_start = g->start_ms + w0 * g->interval_ms;
                v.q_endt = g->start_ms + w1 * g->interval_ms - 1;
                encode_read_request(&req, v.q_start, v.q_endt, "instance", inst, streamed);
                gw_buf_reset(&sn);
                if (gw_snappy_encode(req.data, req.len, &sn) != GW_OK) die("snappy encode failed");
                n_requests++;
                if (http_do(&c, "POST", hdrs, sn.data, sn.len, &r) != 0) {
                    verr(&v, "remote read %s: %s", read_url, c.err);
                    fatal = 1;
                    break;
                }
                if (r.status != 200) {
                    verr(&v, "remote read HTTP %d: %.*s", r.status, (int)(r.body.len > 300 ? 300 : r.body.len),
                         r.body.data ? (const char *)r.body.data : "");
                    fatal = 1;
                    break;
                }
                int is_stream = strncmp(r.ctype, "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse",
                                        69) == 0;
                if (streamed != is_stream) {
                    verr(&v, "unexpected response Content-Type \"%s\"", r.ctype);
                    fatal = 1;
                    break;
                }
                int rc;
                if (is_stream) {
                    rc = v_streamed_response(&v, r.body.data, r.body.len);
                } else {
                    struct gw_error e;
                    gw_buf_reset(&plain);
                    if (gw_snappy_decode(r.body.data, r.body.len, MAX_SNAPPY_OUT, &plain, &e) != GW_OK) {
                        verr(&v, "response is not valid snappy: %s", e.msg);
                        fatal = 1;
                        break;
                    }
                    rc = v_samples_response(&v, plain.data, plain.len);
                }
                if (rc != 0) {
                    verr(&v, "malformed remote read response for %s", inst);
                    fatal = 1;
                }
            }
        }
    }
    uint64_t n_acked = 0, n_missing = 0;
    for (size_t i = 0; i < g->n; i++)
        for (int64_t j = 0; j < g->n_steps; j++) {
            uint64_t bit = (uint64_t)i * (uint64_t)g->n_steps + (uint64_t)j;
            if (!bit_get(v.acked, bit)) continue;
            n_acked++;
            if (!bit_get(v.seen, bit)) {
                n_missing++;
                if (n_missing <= 10) {
                    char nm[1024];
                    const struct series *s = &g->s[i];
                    series_name(g, i, nm, sizeof nm);
                    verr(&v, "acked sample missing: %s t=%" PRId64 " (scrape %" PRId64 ")", nm,
                         ts_of(g, s->node, s->job, j), j);
                }
            }
        }
    uint64_t n_expected_series = 0;
    for (size_t i = 0; i < g->n; i++) {
        for (int64_t j = 0; j < g->n_steps; j++)
            if (bit_get(v.acked, (uint64_t)i * (uint64_t)g->n_steps + (uint64_t)j)) { n_expected_series++; break; }
    }
    int ok = !fatal && n_missing == 0 && v.n_mismatch == 0 && v.n_dup == 0 && v.n_offgrid == 0 && v.n_unknown == 0 &&
             v.n_unsorted == 0 && v.n_wrongq == 0;
    printf("verify: mode=%s requests=%" PRIu64 " series_with_acks=%" PRIu64 " series_returned=%" PRIu64
           " samples_returned=%" PRIu64 " acked=%" PRIu64 " missing=%" PRIu64 " mismatched=%" PRIu64
           " duplicates=%" PRIu64 " off_grid=%" PRIu64 " unknown_series=%" PRIu64 " unsorted=%" PRIu64
           " wrong_query=%" PRIu64 " elapsed_s=%.2f result=%s\n",
           streamed ? "streamed" : "samples", n_requests, n_expected_series, v.n_series_seen, v.n_seen, n_acked,
           n_missing, v.n_mismatch, v.n_dup, v.n_offgrid, v.n_unknown, v.n_unsorted, v.n_wrongq, now_s() - t0,
           ok ? "OK" : "FAIL");
    http_free(&c);
    gw_buf_free(&r.body);
    gw_buf_free(&req);
    gw_buf_free(&sn);
    gw_buf_free(&plain);
    gw_buf_free(&v.canon);
    free(v.acked);
    free(v.seen);
    free(v.series_seen);
    return ok ? 0 : 1;
}

/* ------------------------------------------------------------------ */
/* helper modes                                                        */
/* ------------------------------------------------------------------ */

/* --series 'a=b,c=d' -> one TimeSeries with the pairs in the given order
 * (not sorted, duplicates kept: the point is to build bad input too). */
static void body_add_series(struct gw_buf *pb, const char *spec, int64_t t, double val)
{
    struct gw_buf ts;
    gw_buf_init(&ts, 0);
    const char *p = spec;
    while (*p) {
        const char *comma = strchr(p, ',');
        const char *end = comma ? comma : p + strlen(p);
        const char *eq = memchr(p, '=', (size_t)(end - p));
        if (!eq) die("bad --series pair in %s (want name=value)", spec);
        encode_label(&ts, p, (size_t)(eq - p), eq + 1, (size_t)(end - eq - 1));
        p = comma ? comma + 1 : end;
    }
    size_t sample_len = 1 + 8 + 1 + varint_len((uint64_t)t);
    bputc(&ts, 0x12);
    bvarint(&ts, sample_len);
    bputc(&ts, 0x09);
    bput(&ts, &val, 8);
    bputc(&ts, 0x10);
    bvarint(&ts, (uint64_t)t);
    bputc(pb, 0x0A);
    bvarint(pb, ts.len);
    bput(pb, ts.data, ts.len);
    gw_buf_free(&ts);
}

/* ------------------------------------------------------------------ */
/* send-text: samples from a text file                                 */
/* ------------------------------------------------------------------ */

#define TEXT_MAX_FILE ((size_t)1 << 30)
#define TEXT_MAX_LINE 65536
#define TEXT_MAX_LABELS 128
#define STALE_NAN_BITS 0x7ff0000000000002ULL

struct text_series {
    uint32_t lbl_off, lbl_len;  /* protobuf Label fields (sorted) in text_in.lbl */
    uint64_t hash;
    int64_t last_t;
    uint64_t n_samples;
};

struct text_sample {
    int64_t t;
    double v;
    uint32_t series;
    uint64_t seq;               /* position in the file: ties keep file order */
};

struct text_in {
    struct gw_buf lbl;
    struct text_series *s;
    size_t n_s, cap_s;
    uint32_t *ht;               /* series index + 1, 0 = empty */
    size_t ht_cap;
    struct text_sample *x;
    size_t n_x, cap_x;
};

struct text_pair { const char *n; size_t nl; const char *v; size_t vl; };

static int text_pair_cmp(const void *a, const void *b)
{
    const struct text_pair *x = a, *y = b;
    size_t m = x->nl < y->nl ? x->nl : y->nl;
    int c = memcmp(x->n, y->n, m);
    if (c != 0) return c;
    return x->nl < y->nl ? -1 : (x->nl > y->nl ? 1 : 0);
}

static int label_name_char(char c, int first)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':') return 1;
    return !first && c >= '0' && c <= '9';
}

static void text_grow_ht(struct text_in *in)
{
    size_t cap = in->ht_cap ? in->ht_cap * 2 : 1024;
    uint32_t *ht = calloc(cap, sizeof *ht);
    if (!ht) die("out of memory");
    for (size_t i = 0; i < in->n_s; i++) {
        size_t k = (size_t)in->s[i].hash & (cap - 1);
        while (ht[k]) k = (k + 1) & (cap - 1);
        ht[k] = (uint32_t)(i + 1);
    }
    free(in->ht);
    in->ht = ht;
    in->ht_cap = cap;
}

/* Finds or adds the series whose encoded labels are the last enc_len
 * bytes of in->lbl (they are dropped again if the series exists). */
static uint32_t text_series_of(struct text_in *in, size_t enc_off)
{
    const uint8_t *p = in->lbl.data + enc_off;
    size_t n = in->lbl.len - enc_off;
    uint64_t h = fnv1a(p, n);
    if ((in->n_s + 1) * 2 > in->ht_cap) text_grow_ht(in);
    size_t k = (size_t)h & (in->ht_cap - 1);
    while (in->ht[k]) {
        struct text_series *s = &in->s[in->ht[k] - 1];
        if (s->hash == h && s->lbl_len == n && memcmp(in->lbl.data + s->lbl_off, p, n) == 0) {
            in->lbl.len = enc_off;
            return in->ht[k] - 1;
        }
        k = (k + 1) & (in->ht_cap - 1);
    }
    if (in->n_s >= UINT32_MAX - 1 || in->lbl.len > UINT32_MAX) die("too many series");
    if (in->n_s == in->cap_s) {
        in->cap_s = in->cap_s ? in->cap_s * 2 : 256;
        in->s = realloc(in->s, in->cap_s * sizeof *in->s);
        if (!in->s) die("out of memory");
    }
    struct text_series *s = &in->s[in->n_s];
    s->lbl_off = (uint32_t)enc_off;
    s->lbl_len = (uint32_t)n;
    s->hash = h;
    s->last_t = INT64_MIN;
    s->n_samples = 0;
    in->ht[k] = (uint32_t)(in->n_s + 1);
    return (uint32_t)in->n_s++;
}

/* Parses one label value in double quotes at *pp (escapes \\ \" \n) into
 * val (unescaped, NUL-free). Returns 0 or -1. */
static int text_value(const char **pp, const char *end, struct gw_buf *val)
{
    const char *p = *pp;
    if (p >= end || *p != '"') return -1;
    p++;
    gw_buf_reset(val);
    while (p < end && *p != '"') {
        char c = *p++;
        if (c == '\\') {
            if (p >= end) return -1;
            c = *p++;
            if (c == 'n') c = '\n';
            else if (c != '\\' && c != '"') return -1;
        }
        bputc(val, (uint8_t)c);
    }
    if (p >= end) return -1;
    *pp = p + 1;
    return 0;
}

static void text_parse_line(struct text_in *in, const char *line, size_t len, uint64_t lineno, struct gw_buf *scratch)
{
    const char *p = line, *end = line + len;
    struct text_pair pairs[TEXT_MAX_LABELS];
    size_t np = 0;
    gw_buf_reset(scratch);
    /* Value bytes go to scratch; offsets are patched into pairs after the
     * last append (scratch may move while it grows). */
    size_t voff[TEXT_MAX_LABELS];
    const char *name_start = p;
    while (p < end && label_name_char(*p, p == name_start)) p++;
    if (p > name_start) {
        pairs[np].n = "__name__";
        pairs[np].nl = 8;
        voff[np] = scratch->len;
        pairs[np].vl = (size_t)(p - name_start);
        bput(scratch, name_start, pairs[np].vl);
        np++;
    }
    if (p < end && *p == '{') {
        p++;
        struct gw_buf val;
        gw_buf_init(&val, 0);
        for (;;) {
            while (p < end && (*p == ' ' || *p == '\t')) p++;
            if (p < end && *p == '}') { p++; break; }
            const char *ns = p;
            while (p < end && label_name_char(*p, p == ns)) p++;
            if (p == ns) die("line %" PRIu64 ": bad label name", lineno);
            if (np == TEXT_MAX_LABELS) die("line %" PRIu64 ": more than %d labels", lineno, TEXT_MAX_LABELS);
            pairs[np].n = ns;
            pairs[np].nl = (size_t)(p - ns);
            while (p < end && (*p == ' ' || *p == '\t')) p++;
            if (p >= end || *p != '=') die("line %" PRIu64 ": expected '=' after a label name", lineno);
            p++;
            while (p < end && (*p == ' ' || *p == '\t')) p++;
            if (text_value(&p, end, &val) != 0) die("line %" PRIu64 ": bad label value", lineno);
            voff[np] = scratch->len;
            pairs[np].vl = val.len;
            bput(scratch, val.data ? val.data : (const uint8_t *)"", val.len);
            np++;
            while (p < end && (*p == ' ' || *p == '\t')) p++;
            if (p < end && *p == ',') { p++; continue; }
            if (p < end && *p == '}') { p++; break; }
            die("line %" PRIu64 ": expected ',' or '}' in the label set", lineno);
        }
        gw_buf_free(&val);
    }
    if (np == 0) die("line %" PRIu64 ": no labels", lineno);
    for (size_t i = 0; i < np; i++) pairs[i].v = (const char *)scratch->data + voff[i];
    qsort(pairs, np, sizeof pairs[0], text_pair_cmp);
    int has_name = 0;
    for (size_t i = 0; i < np; i++) {
        if (i > 0 && text_pair_cmp(&pairs[i - 1], &pairs[i]) == 0)
            die("line %" PRIu64 ": label %.*s given twice", lineno, (int)pairs[i].nl, pairs[i].n);
        if (pairs[i].nl == 8 && memcmp(pairs[i].n, "__name__", 8) == 0 && pairs[i].vl > 0) has_name = 1;
    }
    if (!has_name) die("line %" PRIu64 ": no metric name (__name__)", lineno);

    /* timestamp and value */
    char tok[64];
    int64_t t = 0;
    double v = 0;
    for (int field = 0; field < 2; field++) {
        if (p >= end || (*p != ' ' && *p != '\t')) die("line %" PRIu64 ": expected a space before field %d", lineno, field + 2);
        while (p < end && (*p == ' ' || *p == '\t')) p++;
        const char *ts = p;
        while (p < end && *p != ' ' && *p != '\t' && *p != '\r') p++;
        size_t tl = (size_t)(p - ts);
        if (tl == 0 || tl >= sizeof tok) die("line %" PRIu64 ": bad field %d", lineno, field + 2);
        memcpy(tok, ts, tl);
        tok[tl] = '\0';
        if (field == 0) {
            char *e;
            errno = 0;
            long long ll = strtoll(tok, &e, 10);
            if (errno != 0 || *e != '\0') die("line %" PRIu64 ": bad timestamp %s", lineno, tok);
            t = (int64_t)ll;
        } else if (strcmp(tok, "stale") == 0) {
            uint64_t bits = STALE_NAN_BITS;
            memcpy(&v, &bits, sizeof v);
        } else {
            char *e;
            errno = 0;
            v = strtod(tok, &e);
            if (*e != '\0' || (errno != 0 && errno != ERANGE)) die("line %" PRIu64 ": bad value %s", lineno, tok);
        }
    }
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r')) p++;
    if (p != end) die("line %" PRIu64 ": trailing text", lineno);

    size_t enc_off = in->lbl.len;
    for (size_t i = 0; i < np; i++) encode_label(&in->lbl, pairs[i].n, pairs[i].nl, pairs[i].v, pairs[i].vl);
    uint32_t si = text_series_of(in, enc_off);
    struct text_series *s = &in->s[si];
    if (t <= s->last_t)
        die("line %" PRIu64 ": timestamp %" PRId64 " not after the previous sample of the series (%" PRId64 ")", lineno, t,
            s->last_t);
    s->last_t = t;
    s->n_samples++;
    if (in->n_x == in->cap_x) {
        in->cap_x = in->cap_x ? in->cap_x * 2 : 4096;
        in->x = realloc(in->x, in->cap_x * sizeof *in->x);
        if (!in->x) die("out of memory");
    }
    in->x[in->n_x] = (struct text_sample){ .t = t, .v = v, .series = si, .seq = in->n_x };
    in->n_x++;
}

static int text_by_time(const void *a, const void *b)
{
    const struct text_sample *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return x->seq < y->seq ? -1 : (x->seq > y->seq);
}

static int text_by_series(const void *a, const void *b)
{
    const struct text_sample *x = a, *y = b;
    if (x->series != y->series) return x->series < y->series ? -1 : 1;
    return x->seq < y->seq ? -1 : (x->seq > y->seq);
}

/* One remote-write 1.0 WriteRequest for samples x[0..n) (sorted by series,
 * then file order): one TimeSeries per run of the same series. */
static void text_build_write(const struct text_in *in, const struct text_sample *x, size_t n, struct gw_buf *pb)
{
    gw_buf_reset(pb);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && x[j].series == x[i].series) j++;
        const struct text_series *s = &in->s[x[i].series];
        size_t ts_len = s->lbl_len;
        for (size_t k = i; k < j; k++) {
            size_t sample_len = 1 + 8 + 1 + varint_len((uint64_t)x[k].t);
            ts_len += 1 + varint_len(sample_len) + sample_len;
        }
        bputc(pb, 0x0A);
        bvarint(pb, ts_len);
        bput(pb, in->lbl.data + s->lbl_off, s->lbl_len);
        for (size_t k = i; k < j; k++) {
            size_t sample_len = 1 + 8 + 1 + varint_len((uint64_t)x[k].t);
            bputc(pb, 0x12);
            bvarint(pb, sample_len);
            bputc(pb, 0x09);
            bput(pb, &x[k].v, 8);     /* little-endian host */
            bputc(pb, 0x10);
            bvarint(pb, (uint64_t)x[k].t);
        }
        i = j;
    }
}

static int cmd_send_text(const char *url, const char *path, size_t batch, int64_t retry_for_ms, int timeout_ms)
{
    struct gw_buf file;
    gw_buf_init(&file, TEXT_MAX_FILE);
    read_file(path, &file);
    struct text_in in;
    memset(&in, 0, sizeof in);
    gw_buf_init(&in.lbl, 0);
    struct gw_buf scratch;
    gw_buf_init(&scratch, 0);
    const char *p = (const char *)file.data, *end = p + file.len;
    uint64_t lineno = 0;
    while (p && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        lineno++;
        if ((size_t)(le - p) > TEXT_MAX_LINE) die("%s line %" PRIu64 ": longer than %d bytes", path, lineno, TEXT_MAX_LINE);
        const char *q = p;
        while (q < le && (*q == ' ' || *q == '\t' || *q == '\r')) q++;
        if (q < le && *q != '#') text_parse_line(&in, q, (size_t)(le - q), lineno, &scratch);
        p = nl ? nl + 1 : end;
    }
    gw_buf_free(&scratch);
    gw_buf_free(&file);
    qsort(in.x, in.n_x, sizeof *in.x, text_by_time);

    struct http c;
    struct http_resp r;
    struct gw_buf pb, sn;
    http_init(&c, url, timeout_ms);
    gw_buf_init(&r.body, 0);
    gw_buf_init(&pb, 0);
    gw_buf_init(&sn, 0);
    const char *hdrs = "Content-Type: application/x-protobuf\r\nContent-Encoding: snappy\r\n"
                       "X-Prometheus-Remote-Write-Version: 0.1.0\r\n";
    uint64_t requests = 0, retries = 0, refused_requests = 0, refused_samples = 0, sent = 0;
    int gave_up = 0;
    double t0 = now_s();
    struct text_sample *chunk = malloc((batch < in.n_x ? batch : in.n_x + 1) * sizeof *chunk);
    if (!chunk) die("out of memory");
    for (size_t lo = 0; lo < in.n_x && !gave_up; lo += batch) {
        size_t n = in.n_x - lo < batch ? in.n_x - lo : batch;
        memcpy(chunk, in.x + lo, n * sizeof *chunk);
        qsort(chunk, n, sizeof *chunk, text_by_series);
        text_build_write(&in, chunk, n, &pb);
        gw_buf_reset(&sn);
        if (gw_snappy_encode(pb.data, pb.len, &sn) != GW_OK) die("snappy encode failed");
        int64_t backoff = 30, t_first_fail = 0;
        for (;;) {
            int rc = http_do(&c, "POST", hdrs, sn.data, sn.len, &r);
            if (rc == 0 && r.status >= 200 && r.status < 300) {
                requests++;
                sent += n;
                break;
            }
            if (rc == 0 && r.status >= 400 && r.status < 500 && r.status != 429) {
                refused_requests++;
                refused_samples += n;
                if (refused_requests <= 5)
                    fprintf(stderr, "gw_rwload: refused (HTTP %d) samples %zu..%zu: %.*s\n", r.status, lo, lo + n,
                            (int)(r.body.len > 300 ? 300 : r.body.len), r.body.data ? (const char *)r.body.data : "");
                break;
            }
            int64_t nowm = gw_now_ms();
            if (t_first_fail == 0) t_first_fail = nowm;
            if (nowm - t_first_fail > retry_for_ms) {
                fprintf(stderr, "gw_rwload: giving up after %" PRId64 " ms: %s\n", nowm - t_first_fail,
                        rc == 0 ? "server error" : c.err);
                gave_up = 1;
                break;
            }
            retries++;
            sleep_ms(backoff);
            backoff = backoff * 2 > 5000 ? 5000 : backoff * 2;
        }
    }
    double el = now_s() - t0;
    printf("send-text: series=%zu samples=%" PRIu64 " requests=%" PRIu64 " retries=%" PRIu64 " refused_requests=%" PRIu64
           " refused_samples=%" PRIu64 " elapsed_s=%.3f result=%s\n",
           in.n_s, sent, requests, retries, refused_requests, refused_samples, el,
           gave_up ? "GAVE_UP" : (refused_requests ? "REFUSED" : "OK"));
    free(chunk);
    http_free(&c);
    gw_buf_free(&r.body);
    gw_buf_free(&pb);
    gw_buf_free(&sn);
    gw_buf_free(&in.lbl);
    free(in.s);
    free(in.ht);
    free(in.x);
    return (gave_up || refused_requests) ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* main                                                                */
/* ------------------------------------------------------------------ */

static void usage(void)
{
    fputs("usage: gw_rwload send|send-text|verify|info|body|snappy|unsnappy [flags]  (see the top of bench/gw_rwload.c)\n", stderr);
    exit(2);
}

static int64_t parse_start(const char *s)
{
    if (strcmp(s, "now") == 0) return gw_now_ms();
    if (strncmp(s, "now-", 4) == 0) return gw_now_ms() - parse_dur(s + 4, "--start");
    return parse_i64(s, "--start");
}

int main(int argc, char **argv)
{
    if (argc < 2) usage();
    const char *cmd = argv[1];
    struct gen_opts o = { .nodes = 63, .gpus = 8, .host_mode = HOST_LOWER, .interval_ms = 15000,
                          .duration_ms = 3600000, .start_ms = 0, .start_set = 0, .seed = 1 };
    const char *url = NULL, *read_url = NULL, *ack_log = NULL, *in = NULL, *out = NULL;
    const char *series_specs[256];
    size_t n_specs = 0;
    int conns = 4, realtime = 0, streamed = 0, quiet = 0, compress = 0;
    int64_t batch = 2000, retry_for_ms = 300000, timeout_ms = 60000, ts = 0;
    double max_rate = 0, value = 1.0;
    signal(SIGPIPE, SIG_IGN);
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED() do { if (!val) die("%s needs a value", a); i++; } while (0)
        if (strcmp(a, "--url") == 0) { NEED(); url = val; }
        else if (strcmp(a, "--read-url") == 0) { NEED(); read_url = val; }
        else if (strcmp(a, "--nodes") == 0) { NEED(); o.set |= OPT_NODES; o.nodes = (int)parse_i64(val, a); }
        else if (strcmp(a, "--gpus") == 0) { NEED(); o.set |= OPT_GPUS; o.gpus = (int)parse_i64(val, a); }
        else if (strcmp(a, "--interval") == 0) { NEED(); o.set |= OPT_INTERVAL; o.interval_ms = parse_dur(val, a); }
        else if (strcmp(a, "--duration") == 0) { NEED(); o.set |= OPT_DURATION; o.duration_ms = parse_dur(val, a); }
        else if (strcmp(a, "--start") == 0) { NEED(); o.start_ms = parse_start(val); o.start_set = 1; }
        else if (strcmp(a, "--seed") == 0) { NEED(); o.set |= OPT_SEED; o.seed = (uint64_t)parse_i64(val, a); }
        else if (strcmp(a, "--hostname-label") == 0) {
            NEED();
            o.set |= OPT_HOST;
            if (strcmp(val, "hostname") == 0) o.host_mode = HOST_LOWER;
            else if (strcmp(val, "Hostname") == 0) o.host_mode = HOST_UPPER;
            else if (strcmp(val, "mixed") == 0) o.host_mode = HOST_MIXED;
            else die("--hostname-label must be hostname, Hostname or mixed");
        }
        else if (strcmp(a, "--conns") == 0) { NEED(); conns = (int)parse_i64(val, a); }
        else if (strcmp(a, "--batch") == 0) { NEED(); batch = parse_i64(val, a); }
        else if (strcmp(a, "--ack-log") == 0) { NEED(); ack_log = val; }
        else if (strcmp(a, "--realtime") == 0) realtime = 1;
        else if (strcmp(a, "--streamed") == 0) streamed = 1;
        else if (strcmp(a, "--quiet") == 0) quiet = 1;
        else if (strcmp(a, "--max-rate") == 0) { NEED(); max_rate = (double)parse_i64(val, a); }
        else if (strcmp(a, "--retry-for") == 0) { NEED(); retry_for_ms = parse_dur(val, a); }
        else if (strcmp(a, "--timeout") == 0) { NEED(); timeout_ms = parse_dur(val, a); }
        else if (strcmp(a, "--in") == 0) { NEED(); in = val; }
        else if (strcmp(a, "--out") == 0) { NEED(); out = val; }
        else if (strcmp(a, "--series") == 0) { NEED(); if (n_specs == 256) die("too many --series"); series_specs[n_specs++] = val; }
        else if (strcmp(a, "--ts") == 0) { NEED(); ts = parse_i64(val, a); }
        else if (strcmp(a, "--value") == 0) {
            NEED();
            char *end;
            value = strtod(val, &end);
            if (end == val || *end) die("bad --value %s", val);
        }
        else if (strcmp(a, "--snappy") == 0) compress = 1;
        else die("unknown flag %s", a);
#undef NEED
    }
    if (o.nodes < 1 || o.nodes > 100000 || o.gpus < 0 || o.gpus > 64) die("bad --nodes/--gpus");
    if (conns < 1 || conns > 256 || batch < 1) die("bad --conns/--batch");

    if (strcmp(cmd, "snappy") == 0 || strcmp(cmd, "unsnappy") == 0) {
        if (!in || !out) die("%s needs --in and --out", cmd);
        struct gw_buf a, b;
        gw_buf_init(&a, 0);
        gw_buf_init(&b, 0);
        read_file(in, &a);
        if (cmd[0] == 's') {
            if (gw_snappy_encode(a.data, a.len, &b) != GW_OK) die("snappy encode failed");
        } else {
            struct gw_error e;
            if (gw_snappy_decode(a.data, a.len, MAX_SNAPPY_OUT, &b, &e) != GW_OK) die("snappy decode failed: %s", e.msg);
        }
        write_file(out, b.data, b.len);
        gw_buf_free(&a);
        gw_buf_free(&b);
        return 0;
    }
    if (strcmp(cmd, "send-text") == 0) {
        if (!url || !in) die("send-text needs --url and --in");
        return cmd_send_text(url, in, (size_t)batch, retry_for_ms, (int)timeout_ms);
    }
    if (strcmp(cmd, "body") == 0) {
        if (!out || n_specs == 0) die("body needs --out and at least one --series");
        if (ts == 0) ts = gw_now_ms();
        struct gw_buf pb, sn;
        gw_buf_init(&pb, 0);
        gw_buf_init(&sn, 0);
        for (size_t k = 0; k < n_specs; k++) body_add_series(&pb, series_specs[k], ts, value);
        if (compress) {
            if (gw_snappy_encode(pb.data, pb.len, &sn) != GW_OK) die("snappy encode failed");
            write_file(out, sn.data, sn.len);
        } else {
            write_file(out, pb.data, pb.len);
        }
        gw_buf_free(&pb);
        gw_buf_free(&sn);
        return 0;
    }

    if (strcmp(cmd, "verify") == 0) {
        if (!read_url || !ack_log) die("verify needs --read-url and --ack-log");
        opts_from_ack_log(&o, ack_log);
    }
    if (!o.start_set) o.start_ms = realtime ? gw_now_ms() : gw_now_ms() - o.duration_ms - 5 * 60000;
    struct gen g;
    gen_init(&g, &o);

    int rc = 0;
    if (strcmp(cmd, "info") == 0) {
        printf("series=%zu steps=%" PRId64 " samples=%" PRIu64 " start=%" PRId64 " end=%" PRId64 "\n", g.n, g.n_steps,
               (uint64_t)g.n * (uint64_t)g.n_steps, g.start_ms, g.start_ms + g.n_steps * g.interval_ms);
    } else if (strcmp(cmd, "send") == 0) {
        if (!url) die("send needs --url");
        struct sender s;
        memset(&s, 0, sizeof s);
        s.g = &g;
        s.url = url;
        s.conns = conns;
        s.batch = (size_t)batch;
        s.realtime = realtime;
        s.max_rate = max_rate;
        s.retry_for_ms = retry_for_ms;
        s.timeout_ms = (int)timeout_ms;
        s.quiet = quiet;
        s.ack_fd = -1;
        if (ack_log) {
            s.ack_fd = open(ack_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
            if (s.ack_fd < 0) die("cannot open ack log %s", ack_log);
            char hdr[512];
            int n = snprintf(hdr, sizeof hdr, "# gw_rwload nodes=%d gpus=%d interval=%" PRId64 " start=%" PRId64
                             " seed=%" PRIu64 " host=%s steps=%" PRId64 "\n", o.nodes, o.gpus, o.interval_ms,
                             g.start_ms, o.seed, host_mode_name(o.host_mode), g.n_steps);
            if (write(s.ack_fd, hdr, (size_t)n) != n) die("cannot write ack log");
        }
        pthread_mutex_init(&s.mu, NULL);
        pthread_cond_init(&s.cv, NULL);
        s.progress = calloc((size_t)conns, sizeof *s.progress);
        struct worker *w = calloc((size_t)conns, sizeof *w);
        pthread_t *th = calloc((size_t)conns, sizeof *th);
        if (!s.progress || !w || !th) die("out of memory");
        fprintf(stderr, "gw_rwload: sending %zu series x %" PRId64 " scrapes = %" PRIu64 " samples, start=%" PRId64 "\n",
                g.n, g.n_steps, (uint64_t)g.n * (uint64_t)g.n_steps, g.start_ms);
        s.t0 = now_s();
        for (int k = 0; k < conns; k++) {
            w[k].s = &s;
            w[k].id = k;
            w[k].lo = g.n * (size_t)k / (size_t)conns;
            w[k].hi = g.n * (size_t)(k + 1) / (size_t)conns;
            if (pthread_create(&th[k], NULL, worker_main, &w[k]) != 0) die("cannot start thread");
        }
        for (int k = 0; k < conns; k++) pthread_join(th[k], NULL);
        double el = now_s() - s.t0;
        printf("send: series=%zu samples=%" PRIu64 " requests=%" PRIu64 " retries=%" PRIu64 " refused_requests=%" PRIu64
               " refused_samples=%" PRIu64 " wire_bytes=%" PRIu64 " elapsed_s=%.3f samples_per_s=%.0f result=%s\n",
               g.n, s.samples_acked, s.requests_ok, s.retries, s.refused_requests, s.refused_samples, s.bytes_sent, el,
               el > 0 ? (double)s.samples_acked / el : 0.0,
               s.failed ? "GAVE_UP" : (s.refused_requests ? "REFUSED" : "OK"));
        rc = (s.failed || s.refused_requests) ? 1 : 0;
        if (s.ack_fd >= 0) close(s.ack_fd);
        free(s.progress);
        free(w);
        free(th);
        pthread_mutex_destroy(&s.mu);
        pthread_cond_destroy(&s.cv);
    } else if (strcmp(cmd, "verify") == 0) {
        rc = cmd_verify(&g, &o, read_url, ack_log, streamed, (int)timeout_ms);
    } else {
        usage();
    }
    gen_free(&g);
    return rc;
}
