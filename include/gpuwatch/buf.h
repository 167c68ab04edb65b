/* gpuwatch/buf.h - growable byte buffer with a hard ceiling.
 * Every buffer filled from input carries max_bytes; growing past it fails with
 * GW_ETOOLARGE instead of allocating. Owned: free with gw_buf_free().
 * Layer: L0 base (src/base/); includes only its layer and below (docs/architecture.md). */
#ifndef GW_BUF_H
#define GW_BUF_H

#include <stddef.h>
#include <stdint.h>

struct gw_buf {
    uint8_t *data;     /* owned, may be NULL while cap == 0 */
    size_t len;        /* bytes used */
    size_t cap;        /* bytes allocated */
    size_t max_bytes;  /* ceiling for len; 0 means SIZE_MAX */
};

void gw_buf_init(struct gw_buf *b, size_t max_bytes);
void gw_buf_free(struct gw_buf *b);          /* leaves b re-initable; NULL ok */
void gw_buf_reset(struct gw_buf *b);         /* len = 0, keeps memory */
/* Ensure room for `extra` more bytes. GW_OK, GW_ETOOLARGE, GW_ENOMEM. */
int gw_buf_reserve(struct gw_buf *b, size_t extra);
int gw_buf_append(struct gw_buf *b, const void *p, size_t n);
int gw_buf_putc(struct gw_buf *b, uint8_t c);
/* Appends v as an unsigned LEB128 varint (1..10 bytes). */
int gw_buf_put_uvarint(struct gw_buf *b, uint64_t v);
/* Appends a length-prefixed part: the varint len, then the bytes. */
int gw_buf_put_part(struct gw_buf *b, const void *p, size_t len);
int gw_buf_printf(struct gw_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Hand the bytes to the caller (caller frees with free()); b becomes empty. */
uint8_t *gw_buf_steal(struct gw_buf *b, size_t *len);

#endif /* GW_BUF_H */
