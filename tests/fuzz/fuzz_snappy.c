/* fuzz_snappy.c - libFuzzer target for the snappy block framing
 * (gw_snappy_decode / gw_snappy_encode, src/ingest/snappy.c), the
 * Content-Encoding of remote write and remote read bodies.
 * Input: a compressed block. It must decode or be refused with GW_EPARSE /
 * GW_ETOOLARGE (declared length over the 1 MiB cap, checked before any
 * allocation); what decodes must encode and decode back to the same bytes,
 * and the input itself, taken as plain bytes, must round trip too.
 * Build: cmake -B build-fuzz -DCMAKE_C_COMPILER=clang -DGW_FUZZ=ON (docs/fuzzing.md).
 * Seeds: tests/corpus/snappy/ (fuzz_make_seeds). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/buf.h"
#include "gpuwatch/rw.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CAP (1u << 20)

/* in must encode and decode back to itself. */
static void roundtrip(const uint8_t *in, size_t len)
{
    struct gw_buf z, back;
    struct gw_error err;
    gw_buf_init(&z, 0);
    gw_buf_init(&back, 0);
    if (gw_snappy_encode(in, len, &z) != GW_OK)
        abort();
    if (gw_snappy_decode(z.data, z.len, len, &back, &err) != GW_OK)
        abort();
    if (back.len != len || (len && memcmp(back.data, in, len) != 0))
        abort();
    gw_buf_free(&z);
    gw_buf_free(&back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gw_buf out;
    struct gw_error err;
    gw_buf_init(&out, 0);
    int rc = gw_snappy_decode(data, size, CAP, &out, &err);
    if (rc == GW_OK) {
        if (out.len > CAP)
            abort();
        roundtrip(out.data, out.len);
    } else if (rc != GW_EPARSE && rc != GW_ETOOLARGE) {
        abort();
    } else if (out.len != 0) {
        abort();   /* a refusal leaves nothing */
    }
    gw_buf_free(&out);
    roundtrip(data, size);
    return 0;
}
