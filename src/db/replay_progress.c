/* replay_progress.c - how far the WAL replay of gw_db_open has come: the
 * segments on disk are listed (and sized) before the replay; each replayed
 * record's position (segment << 32 | offset) then gives the bytes done.
 * Published in the caller's gw_db_replay_state (atomics, read by the HTTP
 * server's /-/ready and /api/v1/status/walreplay) and through a progress
 * reporter (progress.h). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "db_int.h"
#include "gpuwatch/progress.h"

static int seg_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Segment numbers of dir ("%08u.wal"), ascending; sizes into before[]. */
static void list(struct gw_db_replay_prog *p, const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    size_t cap = 0;
    if (!d) return;
    while ((e = readdir(d)) != NULL) {
        unsigned seg;
        char tail[8];
        if (strlen(e->d_name) != 12 || sscanf(e->d_name, "%8u%7s", &seg, tail) != 2 || strcmp(tail, ".wal") != 0)
            continue;
        if (p->n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            uint32_t *ns = realloc(p->segs, nc * sizeof *ns);
            if (!ns) break;
            p->segs = ns;
            cap = nc;
        }
        p->segs[p->n++] = seg;
    }
    closedir(d);
    if (p->n) qsort(p->segs, p->n, sizeof *p->segs, seg_cmp);
    p->before = calloc(p->n + 1, sizeof *p->before);
    if (!p->before) {
        p->n = 0;
        return;
    }
    for (size_t i = 0; i < p->n; i++) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%08u.wal", dir, p->segs[i]);
        p->before[i + 1] = p->before[i] + (stat(path, &st) == 0 && st.st_size > 0 ? (uint64_t)st.st_size : 0);
    }
}

void gw_db_replay_prog_begin(struct gw_db_replay_prog *p, const char *wal_dir, struct gw_db_replay_state *st)
{
    memset(p, 0, sizeof *p);
    p->st = st;
    list(p, wal_dir);
    uint64_t total = p->n ? p->before[p->n] : 0;
    if (st) {
        atomic_store(&st->first, p->n ? (int64_t)p->segs[0] : -1);
        atomic_store(&st->last, p->n ? (int64_t)p->segs[p->n - 1] : -1);
        atomic_store(&st->current, p->n ? (int64_t)p->segs[0] : -1);
        atomic_store(&st->bytes_total, total);
        atomic_store(&st->bytes_done, 0);
        atomic_store(&st->started, 1);
    }
    if (total > 0) p->bar = gw_progress_start("WAL replay", total, GW_PROGRESS_BYTES);
}

void gw_db_replay_prog_at(struct gw_db_replay_prog *p, uint64_t pos, size_t rec_len)
{
    uint32_t seg = (uint32_t)(pos >> 32);
    uint64_t off = pos & 0xffffffffu;
    if (p->n == 0) return;
    while (p->at + 1 < p->n && p->segs[p->at] < seg) p->at++;
    uint64_t done = p->before[p->at] + off + rec_len;
    if (done > p->before[p->n]) done = p->before[p->n];
    if (p->st) {
        atomic_store_explicit(&p->st->current, (int64_t)p->segs[p->at], memory_order_relaxed);
        atomic_store_explicit(&p->st->bytes_done, done, memory_order_relaxed);
    }
    gw_progress_set(p->bar, done);
}

void gw_db_replay_prog_end(struct gw_db_replay_prog *p)
{
    if (p->st) {
        if (p->n) {
            atomic_store(&p->st->current, (int64_t)p->segs[p->n - 1]);
            atomic_store(&p->st->bytes_done, p->before[p->n]);
        }
        atomic_store(&p->st->done, 1);
    }
    if (p->bar) {
        gw_progress_set(p->bar, p->n ? p->before[p->n] : 0);
        gw_progress_end(p->bar);
    }
    free(p->segs);
    free(p->before);
    memset(p, 0, sizeof *p);
}
