/* fuzz_rollup.c - libFuzzer target for the rollup decoders that queries
 * and gpuwatch verify use (src/db/downsample.c, src/db/downsample_prof.c):
 * a node's record of time profiles and one series' value (versions 1, 2
 * and 3) decoded with it.
 *
 * Input: byte 0, bit 0: fix both checksums first (so inputs reach what
 * lies behind them); then u16 LE record length, the record, the value.
 * What must hold: every refusal is GW_ECORRUPT (or GW_ENOMEM);
 * gw_ds_profiles_used agrees with the decode; a value that decodes gives
 * each column alone (with what it refers to) with the same bits as all
 * columns together; and, with increasing bucket ends, it encodes again as
 * version 3 with fresh profiles and as version 2, and both decode to the
 * same bucket ends and column bits.
 * Build: cmake -B build-fuzz -DCMAKE_C_COMPILER=clang -DGW_FUZZ=ON (docs/fuzzing.md).
 * Seeds: tests/corpus/rollup/ (fuzz_make_seeds). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/buf.h"
#include "gpuwatch/codec.h"
#include "db/downsample_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ALL ((1u << GW_DS_NCOL) - 1)

static void check(int cond)
{
    if (!cond)
        abort();
}

static void fix_sum(uint8_t *p, size_t len, int first_ok)
{
    if (len >= 5 && first_ok)
        gw_put_be32(p + len - 4, (uint32_t)gw_hash64(p, len - 4));
}

static int same_cols(const struct gw_ds_cols *a, const struct gw_ds_cols *b)
{
    if (a->nb != b->nb || memcmp(a->end, b->end, a->nb * sizeof *a->end) != 0)
        return 0;
    for (int c = 0; c < GW_DS_NCOL; c++)
        if (memcmp(a->c[c], b->c[c], a->nb * sizeof(double)) != 0)
            return 0;
    return 1;
}

/* Encodes d again (v3 with fresh profiles, and v2) and decodes both. */
static void reencode(const struct gw_ds_cols *d)
{
    for (size_t k = 1; k < d->nb; k++)
        if (d->end[k] <= d->end[k - 1])
            return;
    struct gw_ds_profiles ps = {0}, rd = {0};
    struct gw_ds_cols e = {0};
    struct gw_buf v3, v2, rec;
    gw_buf_init(&v3, 0);
    gw_buf_init(&v2, 0);
    gw_buf_init(&rec, 0);
    int rc = gw_ds_encode(d, &ps, &v3);
    check(rc == GW_OK || rc == GW_ENOMEM);
    if (rc == GW_OK && ps.n) {
        rc = gw_ds_profiles_encode(&ps, &rec);
        check(rc == GW_OK || rc == GW_ENOMEM);
        if (rc == GW_OK)
            check(gw_ds_profiles_decode(rec.data, rec.len, &rd) == GW_OK);
    }
    if (rc == GW_OK) {
        rc = gw_ds_decode_p(v3.data, v3.len, ALL, &rd, &e);
        check(rc == GW_ENOMEM || (rc == GW_OK && same_cols(d, &e)));
    }
    rc = gw_ds_encode_v2(d, &v2);
    check(rc == GW_OK || rc == GW_ENOMEM);
    if (rc == GW_OK) {
        rc = gw_ds_decode(v2.data, v2.len, ALL, &e);
        check(rc == GW_ENOMEM || (rc == GW_OK && same_cols(d, &e)));
    }
    gw_buf_free(&v3);
    gw_buf_free(&v2);
    gw_buf_free(&rec);
    gw_ds_cols_free(&e);
    gw_ds_profiles_free(&ps);
    gw_ds_profiles_free(&rd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    size_t rlen = (size_t)data[1] | (size_t)data[2] << 8;
    if (rlen > size - 3)
        return 0;
    size_t vlen = size - 3 - rlen;
    uint8_t *rec = malloc(rlen + 1), *val = malloc(vlen + 1);
    check(rec && val);
    memcpy(rec, data + 3, rlen);
    memcpy(val, data + 3 + rlen, vlen);
    if (data[0] & 1) {
        fix_sum(rec, rlen, 1);
        fix_sum(val, vlen, vlen && (val[0] == 2 || val[0] == 3));
    }
    struct gw_ds_profiles ps = {0};
    struct gw_ds_cols d = {0}, one = {0};
    int prc = gw_ds_profiles_decode(rec, rlen, &ps);
    check(prc == GW_OK || prc == GW_ECORRUPT || prc == GW_ENOMEM);
    const struct gw_ds_profiles *use = prc == GW_OK ? &ps : NULL;
    int used = gw_ds_profiles_used(val, vlen);
    check(used >= 0 || used == GW_ECORRUPT);
    int rc = gw_ds_decode_p(val, vlen, ALL, use, &d);
    check(rc == GW_OK || rc == GW_ECORRUPT || rc == GW_ENOMEM);
    if (rc == GW_OK) {
        check(used >= 0 && (used == 0 || (use && (unsigned)used <= use->n)));
        for (int c = 0; c < GW_DS_NCOL; c++) {
            int r1 = gw_ds_decode_p(val, vlen, 1u << c, use, &one);
            check(r1 == GW_OK || r1 == GW_ENOMEM);
            if (r1 == GW_OK)
                check(one.nb == d.nb && memcmp(one.c[c], d.c[c], d.nb * sizeof(double)) == 0);
        }
        if (d.nb <= 4096)
            reencode(&d);
    }
    gw_ds_cols_free(&d);
    gw_ds_cols_free(&one);
    gw_ds_profiles_free(&ps);
    free(rec);
    free(val);
    return 0;
}
