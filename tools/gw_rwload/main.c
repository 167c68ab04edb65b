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
 * hostname|Hostname|mixed --jobs all|dcgm (dcgm: only the dcgm-exporter
 * series, for long-range query benchmarks).
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
#include "rwload.h"

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

/* gw_rwload snappy|unsnappy: one file through the snappy block format. */
static int cmd_snappy(int compress, const char *in, const char *out)
{
    struct gw_buf a, b;
    gw_buf_init(&a, 0);
    gw_buf_init(&b, 0);
    read_file(in, &a);
    if (compress) {
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

/* gw_rwload body: a WriteRequest of the --series specs, one sample each. */
static int cmd_body(const char *const *specs, size_t n_specs, int64_t ts, double value, int compress,
                    const char *out)
{
    struct gw_buf pb, sn;
    gw_buf_init(&pb, 0);
    gw_buf_init(&sn, 0);
    for (size_t k = 0; k < n_specs; k++) body_add_series(&pb, specs[k], ts, value);
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

static void usage(void)
{
    fputs("usage: gw_rwload send|send-text|verify|info|body|snappy|unsnappy [flags]  (see the top of tools/gw_rwload/main.c)\n", stderr);
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
        else if (strcmp(a, "--jobs") == 0) {
            NEED();
            if (strcmp(val, "dcgm") == 0) o.dcgm_only = 1;
            else if (strcmp(val, "all") == 0) o.dcgm_only = 0;
            else die("--jobs must be all or dcgm");
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
        return cmd_snappy(cmd[0] == 's', in, out);
    }
    if (strcmp(cmd, "send-text") == 0) {
        if (!url || !in) die("send-text needs --url and --in");
        return cmd_send_text(url, in, (size_t)batch, retry_for_ms, (int)timeout_ms);
    }
    if (strcmp(cmd, "body") == 0) {
        if (!out || n_specs == 0) die("body needs --out and at least one --series");
        return cmd_body(series_specs, n_specs, ts ? ts : gw_now_ms(), value, compress, out);
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
        struct send_opts so = { .url = url, .ack_log = ack_log, .conns = conns, .batch = (size_t)batch,
                                .realtime = realtime, .max_rate = max_rate, .retry_for_ms = retry_for_ms,
                                .timeout_ms = (int)timeout_ms, .quiet = quiet };
        rc = cmd_send(&g, &o, &so);
    } else if (strcmp(cmd, "verify") == 0) {
        rc = cmd_verify(&g, &o, read_url, ack_log, streamed, (int)timeout_ms);
    } else {
        usage();
    }
    gen_free(&g);
    return rc;
}
