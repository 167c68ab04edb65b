/* fuzz_remote_write.c - libFuzzer target for the remote write path:
 * snappy block decode (with the body cap) and the zero-copy v1/v2 protobuf
 * decoder, plus Content-Type parsing. Not built by default (-DGW_FUZZ=ON,
 * clang -fsanitize=fuzzer,address,undefined).
 *
 * Input layout: byte 0 selects the mode
 *   bit 0: 0 = v1 WriteRequest, 1 = v2 Request
 *   bit 1: 1 = the rest is snappy-compressed, 0 = raw protobuf
 *   bit 2: 1 = also run the rest, NUL-terminated, as a Content-Type
 * bytes 1.. are the body. Every result must be GW_OK or a documented error
 * code; a decoded request must only point inside the body. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/arena.h"
#include "gpuwatch/buf.h"
#include "gpuwatch/rw.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_request(const struct gw_rw_request *r, const uint8_t *b, size_t n)
{
    uint64_t samples = 0;
    for (size_t i = 0; i < r->n_series; i++) {
        const struct gw_rw_series *s = &r->series[i];
        for (uint32_t j = 0; j < s->n_labels; j++) {
            const struct gw_label *l = &s->labels[j];
            if ((l->name_len && ((const uint8_t *)l->name < b || (const uint8_t *)l->name + l->name_len > b + n)) ||
                (l->value_len && ((const uint8_t *)l->value < b || (const uint8_t *)l->value + l->value_len > b + n)))
                abort();
        }
        samples += s->n_samples;
    }
    if (samples != r->n_samples)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gw_arena a;
    struct gw_buf plain;
    struct gw_rw_request r;
    struct gw_error err;
    const uint8_t *body;
    size_t len;
    int version, rc;

    if (size < 1)
        return 0;
    version = (data[0] & 1) ? 2 : 1;
    body = data + 1;
    len = size - 1;

    if (data[0] & 4) {
        char *ct = malloc(len + 1);
        if (ct == NULL)
            return 0;
        memcpy(ct, body, len);
        ct[len] = 0;
        rc = gw_rw_version_from_content_type(ct);
        if (rc != 1 && rc != 2 && rc != GW_EUNSUPPORTED)
            abort();
        free(ct);
    }

    gw_buf_init(&plain, GW_RW_MAX_BODY);
    if (data[0] & 2) {
        rc = gw_snappy_decode(body, len, 1u << 20, &plain, &err);
        if (rc != GW_OK) {
            if (rc != GW_EPARSE && rc != GW_ETOOLARGE)
                abort();
            gw_buf_free(&plain);
            return 0;
        }
        body = plain.data;
        len = plain.len;
    }
    gw_arena_init(&a, 0, 64u << 20);
    rc = gw_rw_decode(body, len, version, &a, &r, &err);
    if (rc == GW_OK)
        check_request(&r, body, len);
    else if (rc != GW_EPARSE && rc != GW_ENOMEM)
        abort();
    gw_arena_free(&a);
    gw_buf_free(&plain);
    return 0;
}
