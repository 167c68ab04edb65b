/* arena.c - bump allocator with a byte ceiling (see arena.h). Blocks are
 * chained newest first; reset keeps the oldest (first) block for reuse. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/arena.h"

struct gw_arena_block {
    struct gw_arena_block *next;  /* older block */
    size_t size, used;            /* payload bytes, bytes handed out */
    _Alignas(16) unsigned char data[];
};

void gw_arena_init(struct gw_arena *a, size_t block_size, size_t max_bytes)
{
    a->head = NULL;
    a->used_total = 0;
    a->max_bytes = max_bytes;
    a->block_size = block_size ? block_size : 64 * 1024;
}

void *gw_arena_alloc(struct gw_arena *a, size_t n)
{
    if (n == 0) n = 1;
    if (n > SIZE_MAX - 15) return NULL;
    n = (n + 15) & ~(size_t)15;
    if (a->max_bytes && (n > a->max_bytes || a->used_total > a->max_bytes - n)) return NULL;
    struct gw_arena_block *b = a->head;
    if (!b || b->size - b->used < n) {
        size_t sz = n > a->block_size ? n : a->block_size;
        b = malloc(sizeof *b + sz);
        if (!b) return NULL;
        b->size = sz;
        b->used = 0;
        b->next = a->head;
        a->head = b;
    }
    void *p = b->data + b->used;
    b->used += n;
    a->used_total += n;
    return p;
}

void *gw_arena_calloc(struct gw_arena *a, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) return NULL;
    void *p = gw_arena_alloc(a, n * size);
    if (p) memset(p, 0, n * size);
    return p;
}

void gw_arena_reset(struct gw_arena *a)
{
    struct gw_arena_block *b = a->head, *keep = NULL;
    while (b) {
        struct gw_arena_block *next = b->next;
        if (!next) keep = b; else free(b);
        b = next;
    }
    if (keep) keep->used = 0;
    a->head = keep;
    a->used_total = 0;
}

void gw_arena_free(struct gw_arena *a)
{
    struct gw_arena_block *b = a->head;
    while (b) {
        struct gw_arena_block *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
    a->used_total = 0;
}
