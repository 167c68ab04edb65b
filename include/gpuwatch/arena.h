/* gpuwatch/arena.h - bump allocator for one request (decode, query).
 * Allocations live until gw_arena_reset()/gw_arena_free(). A ceiling bounds
 * total bytes so hostile input cannot make it grow without limit.
 * Layer: L0 base (src/base/); includes only its layer and below (docs/architecture.md). */
#ifndef GW_ARENA_H
#define GW_ARENA_H

#include <stddef.h>

struct gw_arena_block;
struct gw_arena {
    struct gw_arena_block *head;  /* newest block, owned */
    size_t used_total;            /* bytes handed out */
    size_t max_bytes;             /* ceiling; 0 = unlimited */
    size_t block_size;            /* default block size */
};

void gw_arena_init(struct gw_arena *a, size_t block_size, size_t max_bytes);
/* 16-byte aligned; NULL on ENOMEM or when the ceiling would be passed. */
void *gw_arena_alloc(struct gw_arena *a, size_t n);
/* n * size with overflow check; zeroed. */
void *gw_arena_calloc(struct gw_arena *a, size_t n, size_t size);
void gw_arena_reset(struct gw_arena *a);   /* keeps the first block */
void gw_arena_free(struct gw_arena *a);

#endif /* GW_ARENA_H */
