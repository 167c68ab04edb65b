/* bench/bench_rw_decode.c - remote write decode speed on Prometheus-shaped
 * bodies: batches of series with one sample each and ~10 labels per series
 * (DCGM exporter style), as a Prometheus shard sends them
 * (max_samples_per_send 2000).
 *
 * Usage: bench_rw_decode [series_per_body] [iterations]
 * Defaults: 2000 series, 2000 iterations. Prints body sizes and ns/sample
 * (CPU time, wall time in parentheses) for the protobuf decode alone and
 * for snappy + decode, and for comparison protobuf-c's generated
 * prometheus__write_request__unpack on the same bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "remote.pb-c.h"   /* protobuf-c's generated unpacker, for comparison */

#include "gpuwatch/arena.h"
#include "gpuwatch/buf.h"
#include "gpuwatch/rw.h"

/* CPU time of this process: on a shared machine wall time also counts the
 * time other processes held the core. Both are printed. */
static double cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static long arg_long(const char *s, long def)
{
    char *end;
    long v;
    if (s == NULL)
        return def;
    v = strtol(s, &end, 10);
    return (*end == 0 && v > 0) ? v : def;
}

int main(int argc, char **argv)
{
    static const char *names[] = { "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE",
                                   "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_GPU_UTIL",
                                   "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_XID_ERRORS" };
    size_t n_series = (size_t)arg_long(argc > 1 ? argv[1] : NULL, 2000);
    long iters = arg_long(argc > 2 ? argv[2] : NULL, 2000);
    struct gw_label *labels = calloc(n_series * 10, sizeof *labels);
    struct gw_sample *samples = calloc(n_series, sizeof *samples);
    struct gw_rw_series *series = calloc(n_series, sizeof *series);
    char (*vals)[4][32] = calloc(n_series, sizeof *vals);
    struct gw_rw_request req, out;
    struct gw_buf pb, comp, plain;
    struct gw_arena arena;
    struct gw_error err = { 0, "" };
    double t0, w0, dt_pb, dt_all, wt_pb, wt_all, per;

    if (!labels || !samples || !series || !vals) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < n_series; i++) {
        struct gw_label *l = &labels[i * 10];
        int gpu = (int)(i % 8), node = (int)(i / 48);
        snprintf(vals[i][0], sizeof vals[i][0], "%d", gpu);
        snprintf(vals[i][1], sizeof vals[i][1], "GPU-%08x-1c2d-4e5f", (unsigned)(i * 2654435761u));
        snprintf(vals[i][2], sizeof vals[i][2], "gpu-node-%04d", node);
        snprintf(vals[i][3], sizeof vals[i][3], "10.1.%d.%d:9400", node / 250, node % 250);
#define L(k, name, value) l[k] = (struct gw_label){ name, (uint32_t)strlen(name), value, (uint32_t)strlen(value) }
        L(0, "DCGM_FI_DRIVER_VERSION", "550.54.15");
        L(1, "Hostname", vals[i][2]);
        L(2, "UUID", vals[i][1]);
        L(3, "__name__", names[(i / 8) % 6]);
        L(4, "device", "nvidia0");
        L(5, "gpu", vals[i][0]);
        L(6, "instance", vals[i][3]);
        L(7, "job", "dcgm-exporter");
        L(8, "modelName", "NVIDIA H100 80GB HBM3");
        L(9, "pci_bus_id", "00000000:1B:00.0");
#undef L
        samples[i].t = 1760000000000 + (int64_t)(i % 7);
        samples[i].v = 40.0 + (double)(i % 50) * 0.5;
        series[i] = (struct gw_rw_series){ l, 10, &samples[i], 1, 0, 0, NULL };
    }
    memset(&req, 0, sizeof req);
    req.version = 1;
    req.series = series;
    req.n_series = n_series;
    req.n_samples = n_series;

    gw_buf_init(&pb, 0);
    gw_buf_init(&comp, 0);
    gw_buf_init(&plain, GW_RW_MAX_BODY);
    if (gw_rw_encode_v1(&req, &pb) != GW_OK || gw_snappy_encode(pb.data, pb.len, &comp) != GW_OK) {
        fprintf(stderr, "encode failed\n");
        return 1;
    }
    gw_arena_init(&arena, 1 << 20, 256u << 20);

    t0 = cpu_ns();
    w0 = wall_ns();
    for (long it = 0; it < iters; it++) {
        gw_arena_reset(&arena);
        if (gw_rw_decode(pb.data, pb.len, 1, &arena, &out, &err) != GW_OK) {
            fprintf(stderr, "decode failed: %s\n", err.msg);
            return 1;
        }
    }
    dt_pb = cpu_ns() - t0;
    wt_pb = wall_ns() - w0;
    if (out.n_series != n_series || out.series[n_series - 1].n_labels != 10) {
        fprintf(stderr, "decode result mismatch\n");
        return 1;
    }
    t0 = cpu_ns();
    w0 = wall_ns();
    for (long it = 0; it < iters; it++) {
        gw_arena_reset(&arena);
        if (gw_snappy_decode(comp.data, comp.len, GW_RW_MAX_BODY, &plain, &err) != GW_OK ||
            gw_rw_decode(plain.data, plain.len, 1, &arena, &out, &err) != GW_OK) {
            fprintf(stderr, "decode failed: %s\n", err.msg);
            return 1;
        }
    }
    dt_all = cpu_ns() - t0;
    wt_all = wall_ns() - w0;

    t0 = cpu_ns();
    w0 = wall_ns();
    long pbc_iters = iters / 4 > 0 ? iters / 4 : 1;
    for (long it = 0; it < pbc_iters; it++) {
        Prometheus__WriteRequest *wr = prometheus__write_request__unpack(NULL, pb.len, pb.data);
        if (!wr || wr->n_timeseries != n_series) {
            fprintf(stderr, "protobuf-c unpack failed\n");
            return 1;
        }
        prometheus__write_request__free_unpacked(wr, NULL);
    }
    double dt_pbc = cpu_ns() - t0, wt_pbc = wall_ns() - w0;

    printf("series/body %zu  labels/series 10  samples/series 1\n", n_series);
    printf("protobuf bytes/body %zu (%.1f/sample)  snappy bytes/body %zu (%.1f/sample)\n", pb.len,
           (double)pb.len / (double)n_series, comp.len, (double)comp.len / (double)n_series);
    per = (double)iters * (double)n_series;
    printf("decode protobuf:          %.1f ns/sample cpu (%.1f wall), %.0f MB/s\n", dt_pb / per,
           wt_pb / per, (double)pb.len * (double)iters / (dt_pb / 1e9) / 1e6);
    printf("decode snappy + protobuf: %.1f ns/sample cpu (%.1f wall)\n", dt_all / per, wt_all / per);
    double per_pbc = (double)pbc_iters * (double)n_series;
    printf("protobuf-c unpack + free: %.1f ns/sample cpu (%.1f wall)\n", dt_pbc / per_pbc, wt_pbc / per_pbc);

    gw_arena_free(&arena);
    gw_buf_free(&pb);
    gw_buf_free(&comp);
    gw_buf_free(&plain);
    free(labels);
    free(samples);
    free(series);
    free(vals);
    return 0;
}
