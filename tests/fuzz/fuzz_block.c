/* fuzz_block.c - libFuzzer target for the block decoders: whole blocks
 * (src/chunk/block.c), the split form (a timestamp column plus a value
 * part, joined or decoded apart) and the store's blobs, including the
 * compacted day blobs ("GWB1"/"GWB2", gw_store_blob_parse and the entry
 * resolution that gpuwatch verify and every query use, src/store/keys.c).
 *
 * Input: byte 0 selects the mode (mod 3), the rest is the payload:
 *   0  a block: gw_block_info + gw_block_decode; what decodes must encode
 *      again and decode to the same timestamps and value bits;
 *   1  split form: u16 LE column length, the column, then the value part:
 *      gw_block_ts_decode + gw_block_values_decode must agree with
 *      gw_block_join + gw_block_decode whenever both succeed;
 *   2  a blob: every entry resolved (joined when a value part) and
 *      decoded, every column of a GWB2 blob decoded.
 * Every refusal must be one of the documented codes.
 * Build: cmake -B build-fuzz -DCMAKE_C_COMPILER=clang -DGW_FUZZ=ON (docs/fuzzing.md).
 * Seeds: tests/corpus/block/ (fuzz_make_seeds). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/block.h"
#include "gpuwatch/buf.h"
#include "store/store_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Decode arrays (grown on demand, kept between runs). */
static int64_t *T, *T2;
static double *V, *V2;
static size_t CAP;

static void reserve(size_t n)
{
    if (n <= CAP)
        return;
    free(T);
    free(T2);
    free(V);
    free(V2);
    T = malloc(n * sizeof *T);
    T2 = malloc(n * sizeof *T2);
    V = malloc(n * sizeof *V);
    V2 = malloc(n * sizeof *V2);
    if (!T || !T2 || !V || !V2)
        abort();
    CAP = n;
}

static int same(const int64_t *t, const double *v, const int64_t *t2, const double *v2, size_t n)
{
    return memcmp(t, t2, n * sizeof *t) == 0 && memcmp(v, v2, n * sizeof *v) == 0;
}

/* Decodes block b into T/V; the count, or 0 when refused. */
static size_t decode(const uint8_t *b, size_t len)
{
    uint32_t n;
    int64_t mint, maxt;
    size_t got = 0;
    int rc = gw_block_info(b, len, &n, &mint, &maxt);
    if (rc != GW_OK) {
        if (rc != GW_ECORRUPT)
            abort();
        return 0;
    }
    if (n > GW_BLOCK_MAX_SAMPLES)
        return 0;
    reserve(n ? n : 1);
    rc = gw_block_decode(b, len, T, V, n, &got);
    if (rc != GW_OK) {
        if (rc != GW_ECORRUPT && rc != GW_ENOMEM)
            abort();
        return 0;
    }
    if (got != n || (n && (T[0] != mint || T[n - 1] != maxt)))
        abort();
    for (size_t i = 1; i < got; i++)
        if (T[i] <= T[i - 1])
            abort();   /* a decoded block has increasing timestamps */
    return got;
}

static void mode_block(const uint8_t *b, size_t len)
{
    size_t n = decode(b, len);
    if (n == 0)
        return;
    struct gw_buf e;
    gw_buf_init(&e, 0);
    if (gw_block_encode(T, V, n, &e) != GW_OK)
        abort();
    memcpy(T2, T, n * sizeof *T);
    memcpy(V2, V, n * sizeof *V);
    if (decode(e.data, e.len) != n || !same(T, V, T2, V2, n))
        abort();
    gw_buf_free(&e);
}

static void mode_split(const uint8_t *b, size_t len)
{
    if (len < 2)
        return;
    size_t cl = (size_t)b[0] | (size_t)b[1] << 8;
    b += 2;
    len -= 2;
    if (cl > len)
        cl = len;
    const uint8_t *col = b, *val = b + cl;
    size_t vl = len - cl, n = 0;
    uint32_t cn;
    int64_t mint, maxt;
    int ok_apart = 0;
    if (gw_block_info(col, cl, &cn, &mint, &maxt) == GW_OK && cn > 0 && cn <= GW_BLOCK_MAX_SAMPLES) {
        reserve(cn);
        int rc = gw_block_ts_decode(col, cl, T2, cn, &n);
        if (rc == GW_OK && n == cn) {
            rc = gw_block_values_decode(val, vl, n, V2);
            ok_apart = rc == GW_OK;
        }
        if (rc != GW_OK && rc != GW_ECORRUPT && rc != GW_EINVAL && rc != GW_ENOMEM)
            abort();
    }
    struct gw_buf j;
    gw_buf_init(&j, 0);
    int rc = gw_block_join(col, cl, val, vl, &j);
    if (rc == GW_OK) {
        size_t jn = decode(j.data, j.len);
        if (ok_apart && jn > 0 && (jn != n || !same(T, V, T2, V2, n)))
            abort();   /* both ways must give the same samples */
    } else if (rc != GW_ECORRUPT && rc != GW_ENOMEM && rc != GW_ETOOLARGE) {
        abort();
    }
    gw_buf_free(&j);
}

static void mode_blob(const uint8_t *b, size_t len)
{
    struct gw_store_blob blob;
    if (gw_store_blob_parse(b, len, &blob) != GW_OK)
        return;
    struct gw_buf scratch;
    gw_buf_init(&scratch, 0);
    for (uint32_t i = 0; i < blob.n && i < 4096; i++) {
        const uint8_t *p, *col;
        size_t pl, cl;
        (void)gw_store_blob_sid(&blob, i);
        int rc = gw_store_blob_split(&blob, i, &p, &pl, &col, &cl);
        if (rc != GW_OK && rc != GW_ECORRUPT)
            abort();
        rc = gw_store_blob_resolve(&blob, i, &scratch, &p, &pl);
        if (rc == GW_OK)
            (void)decode(p, pl);
        else if (rc != GW_ECORRUPT && rc != GW_ENOMEM)
            abort();
    }
    for (uint32_t c = 0; blob.v2 && c < blob.ncols && c < 4096; c++) {
        const uint8_t *p;
        size_t pl, n;
        uint32_t cn;
        int64_t mint, maxt;
        gw_store_blob_col(&blob, c, &p, &pl);
        if (gw_block_info(p, pl, &cn, &mint, &maxt) == GW_OK && cn <= GW_BLOCK_MAX_SAMPLES) {
            reserve(cn ? cn : 1);
            (void)gw_block_ts_decode(p, pl, T, cn, &n);
        }
    }
    gw_buf_free(&scratch);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    switch (data[0] % 3) {
    case 0: mode_block(data + 1, size - 1); break;
    case 1: mode_split(data + 1, size - 1); break;
    default: mode_blob(data + 1, size - 1); break;
    }
    return 0;
}
