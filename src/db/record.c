/* record.c - WAL record payloads written by the db.
 *
 * SERIES (type 1): repeated { uvarint sid | uvarint len | canonical labels }
 * SAMPLES (type 2): zigzag-varint base_t, then repeated
 *                   { uvarint sid | zigzag varint (t - base_t) | 8 bytes value, LE bits }
 * Example: sid 7 at t=1000 with value 1.0, base_t 1000:
 *   d0 0f | 07 00 00 00 00 00 00 00 f0 3f
 * Records are written whole by the WAL (checksummed there); these parsers
 * still bound every read, since a checksum only proves the bytes are the
 * ones written, not that the writer was right. */
#include <string.h>

#include "db_int.h"
#include "gpuwatch/codec.h"

int gw_rec_series_add(struct gw_buf *b, uint64_t sid, const uint8_t *labels, size_t len)
{
    uint8_t tmp[20];
    size_t n = gw_uvarint_put(tmp, sid);
    n += gw_uvarint_put(tmp + n, len);
    int rc = gw_buf_append(b, tmp, n);
    return rc ? rc : gw_buf_append(b, labels, len);
}

int gw_rec_samples_begin(struct gw_buf *b, int64_t base_t)
{
    return gw_buf_put_uvarint(b, gw_zigzag(base_t));
}

int gw_rec_samples_add(struct gw_buf *b, int64_t base_t, uint64_t sid, int64_t t, double v)
{
    int rc = gw_buf_reserve(b, 28);
    if (rc) return rc;
    uint8_t *p = b->data + b->len;
    size_t n = gw_uvarint_put(p, sid);
    n += gw_uvarint_put(p + n, gw_zigzag((int64_t)((uint64_t)t - (uint64_t)base_t)));
    uint64_t u;
    memcpy(&u, &v, 8);
    for (int i = 0; i < 8; i++) p[n + (size_t)i] = (uint8_t)(u >> (8 * i));
    b->len += n + 8;
    return GW_OK;
}

int gw_rec_series_each(const uint8_t *p, size_t len, gw_rec_series_fn fn, void *ud)
{
    size_t off = 0;
    while (off < len) {
        uint64_t sid, l;
        size_t k = gw_uvarint_get(p + off, len - off, &sid);
        if (!k) return GW_ECORRUPT;
        off += k;
        k = gw_uvarint_get(p + off, len - off, &l);
        if (!k || l > len - off - k) return GW_ECORRUPT;
        off += k;
        int rc = fn(ud, sid, p + off, (size_t)l);
        if (rc) return rc;
        off += (size_t)l;
    }
    return GW_OK;
}

int gw_rec_samples_each(const uint8_t *p, size_t len, gw_rec_sample_fn fn, void *ud)
{
    uint64_t zb;
    size_t off = gw_uvarint_get(p, len, &zb);
    if (!off) return GW_ECORRUPT;
    int64_t base = gw_unzigzag(zb);
    while (off < len) {
        uint64_t sid, zd;
        size_t k = gw_uvarint_get(p + off, len - off, &sid);
        if (!k) return GW_ECORRUPT;
        off += k;
        k = gw_uvarint_get(p + off, len - off, &zd);
        if (!k) return GW_ECORRUPT;
        off += k;
        if (len - off < 8) return GW_ECORRUPT;
        uint64_t u = 0;
        for (int i = 7; i >= 0; i--) u = (u << 8) | p[off + (size_t)i];
        off += 8;
        double v;
        memcpy(&v, &u, 8);
        int64_t t = (int64_t)((uint64_t)base + (uint64_t)gw_unzigzag(zd));
        int rc = fn(ud, sid, t, v);
        if (rc) return rc;
    }
    return GW_OK;
}
