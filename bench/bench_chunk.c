/* bench/bench_chunk.c - bytes/sample and speed of the XOR chunk and the block
 * codec on exporter-shaped data (DCGM + node_exporter at 15 s scrapes).
 *
 * Usage: bench_chunk [series] [samples_per_series] [seed]
 * Defaults: 2000 series x 1920 samples (8 h), so 960-sample windows fit twice.
 * Prints a table: bytes/sample for XOR chunks of 120 samples and for blocks of
 * 240 / 480 / 960 samples, encode and decode ns/sample, the cost of the
 * checksum a read compares (XXH3-64 of the block's bytes, as the store's
 * GWB3 entries carry), and a per-kind breakdown. Every block is decoded and compared bit-exactly. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/block.h"
#include "gpuwatch/buf.h"
#include "gpuwatch/chunk.h"
#include "gpuwatch/codec.h"

enum kind { K_TEMP, K_POWER, K_ENERGY, K_BYTES, K_BYTES_IDLE, K_CPU_SEC, K_CONST, K_RATIO, K_CLOCK, K_NKINDS };
static const char *kind_name[K_NKINDS] = {"temperature", "power_w_3dec", "energy_mj", "bytes_busy",
                                          "bytes_idle", "cpu_seconds", "constant", "ratio_0_1",
                                          "clock_mhz"};
/* Share of series per kind, in percent (sums to 100). */
static const int kind_pct[K_NKINDS] = {12, 8, 8, 12, 10, 10, 25, 10, 5};

static uint64_t rs = 88172645463325252ull;
static uint64_t sum_sink; /* keeps the checksum calls */
static uint64_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}
static double urand(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }
static double nrand(void)
{
    double u1 = urand(), u2 = urand();
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
static uint64_t dbits(double v) { uint64_t u; memcpy(&u, &v, 8); return u; }
static double bitsd(uint64_t u) { double v; memcpy(&v, &u, 8); return v; }
/* What a scrape parser yields for the decimal text m * 10^-k. */
static double dec(int64_t m, int k)
{
    static const double p[] = {1, 10, 100, 1000, 10000};
    return (double)m / p[k];
}

static void gen_series(enum kind k, size_t n, int64_t *t, double *v)
{
    int64_t base = 1700000000000ll + (int64_t)(rnd() % 15000);
    for (size_t i = 0; i < n; i++) {
        int64_t j = 0;
        if (rnd() % 100 < 4) /* scrape jitter on a few samples */
            j = (int64_t)(rnd() % 41) - 20;
        t[i] = base + (int64_t)i * 15000 + j;
    }
    double level = 30 + urand() * 50, ar = 0;
    int64_t ctr = (int64_t)(rnd() % 1000000000000ull);
    double pw = 100 + urand() * 300;
    double rate = exp(8 + urand() * 8);
    double cpu = floor(urand() * 1e6) / 100;
    double ratio = urand();
    double cval = (rnd() % 3 == 0) ? (double)(rnd() % 100000000000ull) : (double)(rnd() % 4);
    double clk = 1000 + 15 * (double)(rnd() % 80);
    for (size_t i = 0; i < n; i++) {
        switch (k) {
        case K_TEMP:
            if (urand() < 0.15) level += (urand() < 0.5) ? -1 : 1;
            v[i] = floor(level);
            break;
        case K_POWER:
            ar = 0.8 * ar + nrand() * 8;
            v[i] = dec((int64_t)llround((pw + ar) * 1000), 3);
            break;
        case K_ENERGY:
            ar = 0.8 * ar + nrand() * 8;
            ctr += (int64_t)llround((pw + ar) * 15000);
            v[i] = (double)ctr;
            break;
        case K_BYTES:
            ctr += (int64_t)llround(rate * exp(nrand() * 0.5));
            v[i] = (double)ctr;
            break;
        case K_BYTES_IDLE:
            if (urand() < 0.1) ctr += 60 + (int64_t)(rnd() % 2000);
            v[i] = (double)ctr;
            break;
        case K_CPU_SEC: {
            double u = 15 * ratio + nrand() * 0.3;
            if (u < 0) u = 0;
            cpu += floor(u * 100) / 100;
            v[i] = dec((int64_t)llround(cpu * 100), 2);
            break;
        }
        case K_CONST:
            v[i] = cval;
            break;
        case K_RATIO:
            ratio += nrand() * 0.03;
            if (ratio < 0) ratio = 0;
            if (ratio > 1) ratio = 1;
            v[i] = dec((int64_t)llround(ratio * 100), 2);
            break;
        case K_CLOCK:
            if (urand() < 0.05) clk = 1000 + 15 * (double)(rnd() % 80);
            v[i] = clk;
            break;
        default:
            break;
        }
    }
    /* Occasionally a target disappears for a while: a stale marker. */
    if (rnd() % 50 == 0) {
        size_t at = rnd() % n;
        v[at] = bitsd(0x7ff0000000000002ull);
    }
}

struct acc {
    double bytes, samples, enc_ns, dec_ns, sum_ns;
};

int main(int argc, char **argv)
{
    size_t nseries = 2000, nsamp = 1920;
    if (argc > 1) nseries = strtoul(argv[1], NULL, 10);
    if (argc > 2) nsamp = strtoul(argv[2], NULL, 10);
    if (argc > 3) rs = strtoull(argv[3], NULL, 10) | 1;
    if (nseries == 0 || nsamp < 960 || nsamp > 100000) {
        fprintf(stderr, "usage: bench_chunk [series>0] [samples>=960] [seed]\n");
        return 2;
    }
    int64_t *t = malloc(nsamp * sizeof *t), *dt = malloc(nsamp * sizeof *dt);
    double *v = malloc(nsamp * sizeof *v), *dv = malloc(nsamp * sizeof *dv);
    if (!t || !dt || !v || !dv)
        return 1;
    static const size_t wins[3] = {240, 480, 960};
    struct acc xor_all = {0}, blk_all[3] = {{0}}, per_kind[K_NKINDS][4];
    memset(per_kind, 0, sizeof per_kind);
    struct gw_buf out;
    gw_buf_init(&out, 0);
    int bad = 0;
    for (size_t s = 0; s < nseries; s++) {
        enum kind k = K_CONST;
        int pick = (int)(s * 100 / nseries), accp = 0;
        for (int q = 0; q < K_NKINDS; q++) {
            accp += kind_pct[q];
            if (pick < accp) { k = (enum kind)q; break; }
        }
        gen_series(k, nsamp, t, v);
        /* (a) XOR chunks of 120 samples. */
        for (size_t off = 0; off + 120 <= nsamp; off += 120) {
            struct gw_xor_chunk c;
            gw_xor_init(&c);
            uint64_t t0 = gw_mono_ns();
            for (size_t i = 0; i < 120; i++)
                if (gw_xor_append(&c, t[off + i], v[off + i]) != GW_OK) bad++;
            uint64_t t1 = gw_mono_ns();
            size_t len;
            const uint8_t *b = gw_xor_bytes(&c, &len);
            struct gw_xor_iter it;
            gw_xor_iter_init(&it, b, len);
            int64_t tt;
            double vv;
            size_t i = 0;
            while (gw_xor_iter_next(&it, &tt, &vv)) {
                if (tt != t[off + i] || dbits(vv) != dbits(v[off + i])) bad++;
                i++;
            }
            uint64_t t2 = gw_mono_ns();
            if (i != 120) bad++;
            xor_all.bytes += (double)len;
            xor_all.samples += 120;
            xor_all.enc_ns += (double)(t1 - t0);
            xor_all.dec_ns += (double)(t2 - t1);
            per_kind[k][0].bytes += (double)len;
            per_kind[k][0].samples += 120;
            gw_xor_free(&c);
        }
        /* (b) blocks per window size. */
        for (int w = 0; w < 3; w++) {
            size_t win = wins[w];
            for (size_t off = 0; off + win <= nsamp; off += win) {
                gw_buf_reset(&out);
                uint64_t t0 = gw_mono_ns();
                if (gw_block_encode(t + off, v + off, win, &out) != GW_OK) { bad++; continue; }
                uint64_t t1 = gw_mono_ns();
                size_t got = 0;
                if (gw_block_decode(out.data, out.len, dt, dv, nsamp, &got) != GW_OK || got != win) bad++;
                uint64_t t2 = gw_mono_ns();
                sum_sink ^= gw_hash64(out.data, out.len);
                uint64_t t3 = gw_mono_ns();
                blk_all[w].sum_ns += (double)(t3 - t2);
                for (size_t i = 0; i < got; i++)
                    if (dt[i] != t[off + i] || dbits(dv[i]) != dbits(v[off + i])) { bad++; break; }
                blk_all[w].bytes += (double)out.len;
                blk_all[w].samples += (double)win;
                blk_all[w].enc_ns += (double)(t1 - t0);
                blk_all[w].dec_ns += (double)(t2 - t1);
                per_kind[k][w + 1].bytes += (double)out.len;
                per_kind[k][w + 1].samples += (double)win;
            }
        }
    }
    printf("exporter-shaped data: %zu series x %zu samples @15s (jitter on 4%% of scrapes)\n\n", nseries, nsamp);
    printf("%-22s %12s %12s %12s %12s\n", "codec", "bytes/sample", "enc ns/smp", "dec ns/smp", "sum ns/smp");
    printf("%-22s %12.3f %12.1f %12.1f %12s\n", "xor chunk (120)", xor_all.bytes / xor_all.samples,
           xor_all.enc_ns / xor_all.samples, xor_all.dec_ns / xor_all.samples, "-");
    for (int w = 0; w < 3; w++) {
        char name[32];
        snprintf(name, sizeof name, "block (%zu)", wins[w]);
        printf("%-22s %12.3f %12.1f %12.1f %12.2f\n", name, blk_all[w].bytes / blk_all[w].samples,
               blk_all[w].enc_ns / blk_all[w].samples, blk_all[w].dec_ns / blk_all[w].samples,
               blk_all[w].sum_ns / blk_all[w].samples);
    }
    printf("\nbytes/sample by kind   %8s %8s %8s %8s %6s\n", "xor120", "blk240", "blk480", "blk960", "share");
    for (int q = 0; q < K_NKINDS; q++) {
        printf("%-22s", kind_name[q]);
        for (int c = 0; c < 4; c++)
            printf(" %8.3f", per_kind[q][c].samples ? per_kind[q][c].bytes / per_kind[q][c].samples : 0.0);
        printf(" %5d%%\n", kind_pct[q]);
    }
    if (sum_sink == 1)
        printf("\n");
    if (bad)
        printf("\nROUND-TRIP MISMATCHES: %d\n", bad);
    gw_buf_free(&out);
    free(t); free(dt); free(v); free(dv);
    return bad ? 1 : 0;
}
