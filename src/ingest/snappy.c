/* snappy.c - snappy block format (not the framed/stream format), the
 * Content-Encoding of remote write and SAMPLES remote read bodies.
 *
 * Block layout: uvarint decoded_length | elements (literals and copies).
 * Example: "aaaa" compresses to 04 0c 61 61 61 61 (length 4, one 4-byte
 * literal with tag (4-1)<<2 = 0x0c). The declared length is read and
 * checked against the caller's cap before a single byte is allocated. */
#include <snappy-c.h>

#include "gpuwatch/rw.h"

int gw_snappy_decode(const uint8_t *in, size_t len, size_t max_out, struct gw_buf *out,
                     struct gw_error *err)
{
    size_t n = 0;
    char dummy = 0;
    int rc;

    gw_buf_reset(out);
    if (in == NULL && len > 0)
        return gw_error_set(err, GW_EINVAL, "snappy: NULL input");
    if (snappy_uncompressed_length((const char *)in, len, &n) != SNAPPY_OK)
        return gw_error_set(err, GW_EPARSE, "snappy: corrupt input");
    if (n > max_out)
        return gw_error_set(err, GW_ETOOLARGE, "snappy: decoded length %zu exceeds limit %zu",
                            n, max_out);
    rc = gw_buf_reserve(out, n);
    if (rc == GW_ETOOLARGE)
        return gw_error_set(err, rc, "snappy: decoded length %zu exceeds buffer limit %zu",
                            n, out->max_bytes);
    if (rc != GW_OK)
        return gw_error_set(err, rc, "snappy: cannot allocate %zu bytes", n);
    {
        size_t got = n;
        char *dst = n > 0 ? (char *)out->data : &dummy;
        if (snappy_uncompress((const char *)in, len, dst, &got) != SNAPPY_OK || got != n)
            return gw_error_set(err, GW_EPARSE, "snappy: corrupt input");
    }
    out->len = n;
    return GW_OK;
}

int gw_snappy_encode(const uint8_t *in, size_t len, struct gw_buf *out)
{
    size_t max = snappy_max_compressed_length(len);
    size_t got;
    char dummy = 0;
    int rc;

    if (in == NULL && len > 0)
        return GW_EINVAL;
    rc = gw_buf_reserve(out, max);
    if (rc != GW_OK)
        return rc;
    got = max;
    if (snappy_compress(len > 0 ? (const char *)in : &dummy, len,
                        (char *)out->data + out->len, &got) != SNAPPY_OK)
        return GW_EINVAL;
    out->len += got;
    return GW_OK;
}
