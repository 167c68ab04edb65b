/* buf.c - growable byte buffer with a hard ceiling (see buf.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/buf.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/err.h"

void gw_buf_init(struct gw_buf *b, size_t max_bytes)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->max_bytes = max_bytes;
}

void gw_buf_free(struct gw_buf *b)
{
    if (!b) return;
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void gw_buf_reset(struct gw_buf *b) { b->len = 0; }

int gw_buf_reserve(struct gw_buf *b, size_t extra)
{
    size_t max = b->max_bytes ? b->max_bytes : SIZE_MAX;
    if (extra > max || b->len > max - extra) return GW_ETOOLARGE;
    size_t need = b->len + extra;
    if (need <= b->cap) return GW_OK;
    size_t ncap = b->cap ? b->cap : 64;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2) { ncap = need; break; }
        ncap *= 2;
    }
    if (ncap > max) ncap = max;
    uint8_t *p = realloc(b->data, ncap);
    if (!p) return GW_ENOMEM;
    b->data = p;
    b->cap = ncap;
    return GW_OK;
}

int gw_buf_append(struct gw_buf *b, const void *p, size_t n)
{
    if (n == 0) return GW_OK;
    int rc = gw_buf_reserve(b, n);
    if (rc) return rc;
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return GW_OK;
}

int gw_buf_put_uvarint(struct gw_buf *b, uint64_t v)
{
    uint8_t t[10];
    return gw_buf_append(b, t, gw_uvarint_put(t, v));
}

int gw_buf_put_part(struct gw_buf *b, const void *p, size_t len)
{
    int rc = gw_buf_put_uvarint(b, len);
    return rc == GW_OK && len ? gw_buf_append(b, p, len) : rc;
}

int gw_buf_putc(struct gw_buf *b, uint8_t c)
{
    if (b->len < b->cap) {
        b->data[b->len++] = c;
        return GW_OK;
    }
    return gw_buf_append(b, &c, 1);
}

int gw_buf_printf(struct gw_buf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return GW_EINVAL;
    if ((size_t)n < sizeof small) return gw_buf_append(b, small, (size_t)n);
    int rc = gw_buf_reserve(b, (size_t)n + 1);
    if (rc) return rc;
    va_start(ap, fmt);
    vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return GW_OK;
}

uint8_t *gw_buf_steal(struct gw_buf *b, size_t *len)
{
    uint8_t *p = b->data;
    if (len) *len = b->len;
    b->data = NULL;
    b->len = b->cap = 0;
    return p;
}
