/* fuzz_xor.c - libFuzzer target for the XOR (Gorilla) chunk decoder
 * (gw_xor_iter, src/chunk/xor.c): head chunks and the chunks of remote read
 * STREAMED_XOR_CHUNKS frames. Input: chunk bytes. The iterator must stop
 * within the header's sample count with GW_OK or GW_ECORRUPT, and the
 * samples it gives, encoded again with gw_xor_append, must decode to the
 * same timestamps and value bits.
 * Build: cmake -B build-fuzz -DCMAKE_C_COMPILER=clang -DGW_FUZZ=ON (docs/fuzzing.md).
 * Seeds: tests/corpus/xor/ (fuzz_make_seeds). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/chunk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t bits(double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    return u;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int64_t t[GW_XOR_MAX_SAMPLES + 1];
    static double v[GW_XOR_MAX_SAMPLES + 1];
    struct gw_xor_iter it;
    size_t n = 0;
    int increasing = 1;
    if (gw_xor_iter_init(&it, data, size) != GW_OK)
        return 0;
    while (gw_xor_iter_next(&it, &t[n], &v[n])) {
        if (n > 0 && t[n] <= t[n - 1])
            increasing = 0;
        if (++n > it.n)
            abort();   /* more samples than the header says */
    }
    if (it.err != GW_OK && it.err != GW_ECORRUPT)
        abort();
    if (it.err != GW_OK || !increasing)
        return 0;
    struct gw_xor_chunk c;
    gw_xor_init(&c);
    for (size_t i = 0; i < n; i++)
        if (gw_xor_append(&c, t[i], v[i]) != GW_OK)
            abort();
    size_t len;
    const uint8_t *b = gw_xor_bytes(&c, &len);
    if (gw_xor_iter_init(&it, b, len) != GW_OK)
        abort();
    int64_t t2;
    double v2;
    for (size_t i = 0; i < n; i++)
        if (!gw_xor_iter_next(&it, &t2, &v2) || t2 != t[i] || bits(v2) != bits(v[i]))
            abort();
    if (gw_xor_iter_next(&it, &t2, &v2) || it.err != GW_OK)
        abort();
    gw_xor_free(&c);
    return 0;
}
