/* bench_sim_gen.c - samples/s of the simulator's generator alone (no
 * encoding, no output) for a paper-sized cluster (63 nodes x 8 GPUs) over
 * a few simulated hours. Usage: bench_sim_gen [hours=6] [seed=1]
 * Prints series, samples, seconds and samples/s; the first generated
 * scrape's time includes building the catalogue, reported apart. */
#include <stdio.h>
#include <stdlib.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/sim.h"

int main(int argc, char **argv)
{
    double hours = 6.0;
    unsigned long long seed = 1;
    if (argc > 1) {
        char *end;
        hours = strtod(argv[1], &end);
        if (*end || hours <= 0 || hours > 24.0 * 60) {
            fprintf(stderr, "usage: %s [hours (0..1440]] [seed]\n", argv[0]);
            return 2;
        }
    }
    if (argc > 2) {
        char *end;
        seed = strtoull(argv[2], &end, 10);
        if (*end) {
            fprintf(stderr, "usage: %s [hours] [seed]\n", argv[0]);
            return 2;
        }
    }
    struct gw_sim_config c;
    struct gw_error err = {0};
    gw_sim_config_default(&c);
    if (gw_sim_config_profile(&c, "paper", &err) != GW_OK) {
        fprintf(stderr, "profile: %s\n", err.msg);
        return 1;
    }
    c.seed = seed;
    c.duration_ms = (int64_t)(hours * 3600000.0);
    struct gw_sim_timeline *tl = NULL;
    uint64_t t0 = gw_mono_ns();
    if (gw_sim_timeline_build(&c, &tl, &err) != GW_OK) {
        fprintf(stderr, "timeline: %s\n", err.msg);
        return 1;
    }
    uint64_t t1 = gw_mono_ns();
    struct gw_sim_gen *g = NULL;
    if (gw_sim_gen_open(&g, tl, NULL, NULL, &err) != GW_OK) {
        fprintf(stderr, "generator: %s\n", err.msg);
        gw_sim_timeline_free(tl);
        return 1;
    }
    uint64_t t2 = gw_mono_ns();
    struct gw_sim_scrape s;
    uint64_t samples = 0, scrapes = 0;
    double sink = 0;
    int rc;
    while ((rc = gw_sim_gen_next(g, &s, &err)) == 1) {
        samples += s.n;
        scrapes++;
        sink += s.v[s.n - 1];
    }
    uint64_t t3 = gw_mono_ns();
    if (rc < 0) {
        fprintf(stderr, "generator: %s\n", err.msg);
        gw_sim_gen_close(g);
        gw_sim_timeline_free(tl);
        return 1;
    }
    double sec = (double)(t3 - t2) / 1e9;
    printf("bench_sim_gen: %u nodes x %u GPUs, %.1f simulated hours, seed %llu\n", c.nodes, c.gpus,
           hours, seed);
    printf("  timeline build %.3f s, catalogue %.3f s, series %zu\n", (double)(t1 - t0) / 1e9,
           (double)(t2 - t1) / 1e9, gw_sim_gen_series_count(g));
    printf("  %llu scrapes, %llu samples in %.3f s = %.2f M samples/s (checksum %g)\n",
           (unsigned long long)scrapes, (unsigned long long)samples, sec,
           sec > 0 ? (double)samples / sec / 1e6 : 0.0, sink);
    gw_sim_gen_close(g);
    gw_sim_timeline_free(tl);
    return 0;
}
