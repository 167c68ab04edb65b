/* wal/wal.c - write-ahead log: numbered segment files of checksummed
 * records, group commit, and replay with repair of a torn or corrupt tail.
 *
 * FORMAT
 *   DIR/%08u.wal          one segment; numbers increase, never reused
 *   segment  = magic record*
 *   magic    = 8 bytes "GWWAL\0\0\1"
 *   record   = u32 LE payload_len | u32 LE crc | u8 type | payload
 *   crc      = CRC-32C (gw_crc32c) over the type byte followed by payload
 *   payload_len <= GW_WAL_MAX_RECORD; a record never spans two segments.
 *   position = (segment number << 32) | byte offset of the record's first
 *              byte in its segment; the first record of a segment is at 8.
 *
 * Worked example: a fresh WAL in an empty DIR opens 00000001.wal; appending
 * type 1 with payload "hi" (CRC-32C of 01 68 69 = 0xc1d99f14) gives
 *   47 57 57 41 4c 00 00 01   magic "GWWAL\0\0\1"
 *   02 00 00 00               payload_len 2
 *   14 9f d9 c1               crc 0xc1d99f14
 *   01                        type
 *   68 69                     "hi"
 * at position 0x0000000100000008; the next record starts at offset 19.
 * A segment is cut before a record that would take it past segment_bytes
 * (unless the segment holds no record yet, so one big record always fits).
 *
 * WRITING
 * gw_wal_append() copies a record into a pending buffer under the mutex.
 * Pending data is a list of per-segment buffers; a buffer that starts a new
 * segment begins with the magic. gw_wal_commit() is group commit: the first
 * committer that finds no write in progress becomes the leader, takes every
 * pending buffer, and with the mutex released writes them (creating each new
 * segment file, fsyncing the directory, and fdatasyncing + closing the
 * previous segment), then, under GW_FSYNC_ALWAYS, fdatasyncs once. Other
 * committers wait on a condition variable until the written (or synced) end
 * passes their position, or become the next leader. Under GW_FSYNC_BATCH a
 * thread fdatasyncs (a dup of) the current segment every batch interval when
 * something was written since the last sync. Any failed write or sync marks
 * the WAL failed: every later append and commit returns GW_EIO (GW_EFULL
 * when the failure was ENOSPC or EDQUOT: a full disk) until the WAL
 * is reopened, because after a failed fsync the kernel may have dropped the
 * dirty pages and a retry could report success for lost data.
 *
 * REPLAY
 * Segments are read in numeric order; each record's length (<= the cap and
 * within the file) and CRC are checked. The first torn or failing record
 * ends replay: its segment is truncated at the record's start (a segment
 * whose magic is wrong or incomplete is deleted), every later segment is
 * deleted, and the directory is fsynced. Zero-length segments (created but
 * never written) are removed without counting as corruption. */
#include "wal/wal_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/metrics.h"
#include "gpuwatch/wal.h"

#define WAL_HDR GW_WAL_MAGIC_LEN
#define WAL_REC GW_WAL_REC_HDR_LEN
#define WAL_DEFAULT_SEGMENT (64ull << 20)
#define WAL_DEFAULT_BATCH_MS 100u
#define WAL_READ_CHUNK (1u << 20)       /* replay read window */
#define WAL_KEEP_BUF (4u << 20)         /* larger pending buffers are freed after a write */
#define WAL_NAME_MAX 32
#define WAL_MSG_MAX 200

static const uint8_t wal_magic[WAL_HDR] = {'G', 'W', 'W', 'A', 'L', 0, 0, 1};

static ssize_t io_write(int fd, const void *buf, size_t n) { return write(fd, buf, n); }
static int io_fdatasync(int fd) { return fdatasync(fd); }
struct gw_wal_io gw_wal_io = {io_write, io_fdatasync};

/* Pending bytes for one segment; end = position just past its last byte. */
struct pend {
    uint32_t seg;
    uint8_t *data;
    size_t len, cap;
    uint64_t end;
};
/* Entries [n, cap) keep their buffers for reuse. */
struct pendv {
    struct pend *v;
    size_t n, cap;
};

struct gw_wal {
    pthread_mutex_t mu;
    pthread_cond_t cv;       /* a leader finished, or the WAL is stopping */
    pthread_cond_t sync_cv;  /* wakes the batch sync thread (monotonic clock) */
    pthread_t syncer;
    int syncer_started;
    int dirfd;
    char *dir;
    enum gw_fsync_mode mode;
    uint64_t segment_bytes;
    uint32_t batch_ms;
    uint64_t (*hold)(void *ud);   /* readers' lowest needed position (opts) */
    void *hold_ud;

    /* Append side, under mu. */
    uint32_t cur_seg;        /* segment receiving appends */
    uint64_t cur_off;        /* offset of the next record in cur_seg */
    uint64_t last_pos;       /* position of the last appended record, 0 if none */
    struct pendv pend, spare;

    /* Durability, under mu. */
    uint64_t written_end;    /* everything before this position is written */
    uint64_t synced_end;     /* everything before this position is synced */
    int writing;             /* a leader (or close) owns the file state */
    int failed;
    int stop;
    uint32_t pub_seg;        /* fd_seg as of the last leader run */
    char fail_msg[WAL_MSG_MAX];
    int fail_rc;             /* GW_EFULL when a full disk failed it, else GW_EIO */

    /* File state: owned by whoever set writing = 1 (or open/close). */
    int fd;
    uint32_t fd_seg;
};

/* ---------------------------------------------------------------- helpers */

static const char *errtext(int e, char *buf, size_t n)
{
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
    return strerror_r(e, buf, n);
#else
    if (strerror_r(e, buf, n) != 0) snprintf(buf, n, "errno %d", e);
    return buf;
#endif
}

static void seg_name(char *buf, size_t n, uint32_t seg) { snprintf(buf, n, "%08u.wal", seg); }

static void put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static uint64_t mkpos(uint32_t seg, uint64_t off) { return ((uint64_t)seg << 32) | off; }

/* Parses a canonical segment file name ("%08u.wal"); 1 on success. */
static int parse_seg_name(const char *name, uint32_t *seg)
{
    size_t n = strlen(name);
    if (n < 12 || n > 14 || strcmp(name + n - 4, ".wal") != 0) return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < n - 4; i++) {
        if (name[i] < '0' || name[i] > '9') return 0;
        v = v * 10 + (uint64_t)(name[i] - '0');
    }
    if (v == 0 || v > UINT32_MAX) return 0;
    char canon[WAL_NAME_MAX];
    seg_name(canon, sizeof canon, (uint32_t)v);
    if (strcmp(canon, name) != 0) return 0;
    *seg = (uint32_t)v;
    return 1;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Sorted segment numbers in the directory. *out is owned by the caller. */
static int list_segments(int dirfd, const char *dir, uint32_t **out, size_t *n_out, struct gw_error *err)
{
    char eb[128];
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return gw_error_set(err, GW_EIO, "cannot list wal dir %s: %s", dir, errtext(e, eb, sizeof eb));
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        return gw_error_set(err, GW_EIO, "cannot list wal dir %s: %s", dir, errtext(e, eb, sizeof eb));
    }
    uint32_t *v = NULL;
    size_t n = 0, cap = 0;
    int rc = GW_OK;
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            if (errno != 0) {
                int e = errno;
                rc = gw_error_set(err, GW_EIO, "cannot list wal dir %s: %s", dir, errtext(e, eb, sizeof eb));
            }
            break;
        }
        uint32_t seg;
        if (!parse_seg_name(de->d_name, &seg)) continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            if (nc > SIZE_MAX / sizeof *v) { rc = gw_error_set(err, GW_ENOMEM, "too many wal segments"); break; }
            uint32_t *nv = realloc(v, nc * sizeof *v);
            if (!nv) { rc = gw_error_set(err, GW_ENOMEM, "out of memory listing wal segments"); break; }
            v = nv;
            cap = nc;
        }
        v[n++] = seg;
    }
    closedir(d);
    if (rc != GW_OK) {
        free(v);
        return rc;
    }
    if (n > 1) qsort(v, n, sizeof *v, cmp_u32);
    *out = v;
    *n_out = n;
    return GW_OK;
}

/* mkdir -p, fsyncing the parent of each directory it creates. */
static int make_dirs(const char *dir, struct gw_error *err)
{
    char eb[128];
    size_t n = strlen(dir);
    if (n == 0 || n >= PATH_MAX) return gw_error_set(err, GW_EINVAL, "bad wal dir path");
    char path[PATH_MAX];
    memcpy(path, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != '\0') continue;
        if (path[i - 1] == '/') continue;
        char saved = path[i];
        path[i] = '\0';
        if (mkdir(path, 0755) == 0) {
            char parent[PATH_MAX];
            memcpy(parent, path, i + 1);
            char *slash = strrchr(parent, '/');
            if (slash == parent) slash[1] = '\0';
            else if (slash) *slash = '\0';
            else { parent[0] = '.'; parent[1] = '\0'; }
            int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (pfd >= 0) {
                int src = fsync(pfd);
                int e = errno;
                close(pfd);
                if (src != 0)
                    return gw_error_set(err, GW_EIO, "cannot sync dir %s: %s", parent, errtext(e, eb, sizeof eb));
            }
        } else if (errno != EEXIST) {
            int e = errno;
            return gw_error_set(err, GW_EIO, "cannot create wal dir %s: %s", path, errtext(e, eb, sizeof eb));
        }
        path[i] = saved;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return gw_error_set(err, GW_EIO, "wal dir %s is not a directory", dir);
    return GW_OK;
}

static int open_dir(const char *dir, int *out, struct gw_error *err)
{
    char eb[128];
    int rc = make_dirs(dir, err);
    if (rc != GW_OK) return rc;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return gw_error_set(err, GW_EIO, "cannot open wal dir %s: %s", dir, errtext(e, eb, sizeof eb));
    }
    *out = fd;
    return GW_OK;
}

/* write(2) loop through the seam: retries EINTR and short writes. */
static int write_all(int fd, const uint8_t *p, size_t n, int *err_no)
{
    while (n > 0) {
        ssize_t k = gw_wal_io.write(fd, p, n);
        if (k < 0) {
            if (errno == EINTR) continue;
            *err_no = errno;
            return -1;
        }
        if (k == 0 || (size_t)k > n) {
            *err_no = EIO;
            return -1;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static int sync_fd(int fd, int *err_no)
{
    uint64_t t0 = gw_mono_ns();
    for (;;) {
        if (gw_wal_io.fdatasync(fd) == 0) {
            gw_hist_observe_ns(&gw_hist_wal_fsync, gw_mono_ns() - t0);
            return 0;
        }
        if (errno != EINTR) {
            *err_no = errno;
            return -1;
        }
    }
}

/* ------------------------------------------------------------ pending data */

/* Finds or reserves the pending buffer for seg with room for need more
 * bytes. *is_new is set when the caller must count a fresh entry (n++).
 * Nothing observable changes on GW_ENOMEM. */
static int pend_reserve(struct pendv *pv, uint32_t seg, size_t need, struct pend **out, int *is_new)
{
    struct pend *p;
    *is_new = 0;
    if (pv->n > 0 && pv->v[pv->n - 1].seg == seg) {
        p = &pv->v[pv->n - 1];
    } else {
        if (pv->n == pv->cap) {
            size_t nc = pv->cap ? pv->cap * 2 : 4;
            if (nc > SIZE_MAX / sizeof *pv->v) return GW_ENOMEM;
            struct pend *nv = realloc(pv->v, nc * sizeof *nv);
            if (!nv) return GW_ENOMEM;
            memset(nv + pv->cap, 0, (nc - pv->cap) * sizeof *nv);
            pv->v = nv;
            pv->cap = nc;
        }
        p = &pv->v[pv->n];
        p->len = 0;
        *is_new = 1;
    }
    if (need > SIZE_MAX - p->len) return GW_ENOMEM;
    size_t want = p->len + need;
    if (want > p->cap) {
        size_t nc = p->cap ? p->cap : 4096;
        while (nc < want) {
            if (nc > SIZE_MAX / 2) { nc = want; break; }
            nc *= 2;
        }
        uint8_t *nd = realloc(p->data, nc);
        if (!nd) return GW_ENOMEM;
        p->data = nd;
        p->cap = nc;
    }
    *out = p;
    return GW_OK;
}

static void pendv_free(struct pendv *pv)
{
    for (size_t i = 0; i < pv->cap; i++) free(pv->v[i].data);
    free(pv->v);
    pv->v = NULL;
    pv->n = pv->cap = 0;
}

/* ------------------------------------------------------------------ writer */

/* e: the errno of the failed call (0: none). */
static void set_failed(struct gw_wal *w, const char *msg, int e)
{
    if (!w->failed) {
        snprintf(w->fail_msg, sizeof w->fail_msg, "%s", msg);
        w->fail_rc = e == ENOSPC || e == EDQUOT ? GW_EFULL : GW_EIO;
    }
    w->failed = 1;
}

/* Syncs and closes the current segment, creates seg and fsyncs the dir.
 * Runs with writing = 1 and mu released. */
static int switch_segment(struct gw_wal *w, uint32_t seg, char *msg, size_t msg_len, int *err_no)
{
    char eb[128], name[WAL_NAME_MAX];
    int e = 0;
    *err_no = 0;
    if (w->fd >= 0) {
        if (sync_fd(w->fd, &e) != 0) {
            snprintf(msg, msg_len, "cannot sync wal segment %08u: %s", w->fd_seg, errtext(e, eb, sizeof eb));
            *err_no = e;
            return -1;
        }
        close(w->fd);
        w->fd = -1;
    }
    seg_name(name, sizeof name, seg);
    int fd = openat(w->dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        e = errno;
        snprintf(msg, msg_len, "cannot create wal segment %s/%s: %s", w->dir, name, errtext(e, eb, sizeof eb));
        *err_no = e;
        return -1;
    }
    w->fd = fd;
    w->fd_seg = seg;
    if (fsync(w->dirfd) != 0) {
        e = errno;
        snprintf(msg, msg_len, "cannot sync wal dir %s: %s", w->dir, errtext(e, eb, sizeof eb));
        *err_no = e;
        return -1;
    }
    return 0;
}

/* Called with mu held and writing == 0; returns with mu held. Writes every
 * pending buffer, then fdatasyncs when do_sync and anything is unsynced. */
static void leader_run(struct gw_wal *w, int do_sync)
{
    struct pendv job = w->pend;
    w->pend = w->spare;
    w->pend.n = 0;
    w->spare = (struct pendv){0};
    uint64_t written = w->written_end, synced = w->synced_end;
    int need_sync = do_sync && (job.n > 0 || synced < written);
    w->writing = 1;
    pthread_mutex_unlock(&w->mu);

    char msg[WAL_MSG_MAX], eb[128];
    int ok = 1, e = 0;
    for (size_t i = 0; i < job.n && ok; i++) {
        struct pend *p = &job.v[i];
        if (p->seg != w->fd_seg || w->fd < 0) {
            int had_old = w->fd >= 0;
            if (switch_segment(w, p->seg, msg, sizeof msg, &e) != 0) { ok = 0; break; }
            /* The previous segment was synced before it was closed. */
            if (had_old && mkpos(p->seg, 0) > synced) synced = mkpos(p->seg, 0);
        }
        if (write_all(w->fd, p->data, p->len, &e) != 0) {
            snprintf(msg, sizeof msg, "cannot write wal segment %08u: %s", p->seg, errtext(e, eb, sizeof eb));
            ok = 0;
            break;
        }
        written = p->end;
    }
    if (ok && need_sync && w->fd >= 0) {
        if (sync_fd(w->fd, &e) != 0) {
            snprintf(msg, sizeof msg, "cannot sync wal segment %08u: %s", w->fd_seg, errtext(e, eb, sizeof eb));
            ok = 0;
        } else {
            synced = written;
        }
    }

    pthread_mutex_lock(&w->mu);
    if (written > w->written_end) w->written_end = written;
    if (synced > w->synced_end) w->synced_end = synced;
    if (!ok) set_failed(w, msg, e);
    w->pub_seg = w->fd_seg;
    for (size_t i = 0; i < job.n; i++) {
        job.v[i].len = 0;
        if (job.v[i].cap > WAL_KEEP_BUF) {
            free(job.v[i].data);
            job.v[i].data = NULL;
            job.v[i].cap = 0;
        }
    }
    job.n = 0;
    w->spare = job;
    w->writing = 0;
    pthread_cond_broadcast(&w->cv);
}

/* With mu held: until everything before target is written (or synced when
 * need_sync), lead a write or wait for the current leader. */
static int flush_locked(struct gw_wal *w, uint64_t target, int need_sync, struct gw_error *err)
{
    for (;;) {
        if (w->failed) return gw_error_set(err, w->fail_rc, "wal failed: %s", w->fail_msg);
        if ((need_sync ? w->synced_end : w->written_end) >= target) return GW_OK;
        if (!w->writing) leader_run(w, need_sync || w->mode == GW_FSYNC_ALWAYS);
        else pthread_cond_wait(&w->cv, &w->mu);
    }
}

static void *sync_main(void *arg)
{
    struct gw_wal *w = arg;
    char msg[WAL_MSG_MAX], eb[128];
    pthread_mutex_lock(&w->mu);
    while (!w->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += w->batch_ms / 1000;
        ts.tv_nsec += (long)(w->batch_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        while (!w->stop && pthread_cond_timedwait(&w->sync_cv, &w->mu, &ts) != ETIMEDOUT) {}
        while (!w->stop && w->writing) pthread_cond_wait(&w->cv, &w->mu);
        if (w->stop) break;
        if (w->failed || w->fd < 0 || w->synced_end >= w->written_end) continue;
        /* A dup shares the open file, so the leader may close its fd meanwhile. */
        int fd = dup(w->fd);
        if (fd < 0) continue;   /* out of descriptors: try again next tick */
        uint64_t target = w->written_end;
        uint32_t seg = w->fd_seg;
        pthread_mutex_unlock(&w->mu);
        int e = 0;
        int src = sync_fd(fd, &e);
        close(fd);
        pthread_mutex_lock(&w->mu);
        if (src != 0) {
            snprintf(msg, sizeof msg, "cannot sync wal segment %08u: %s", seg, errtext(e, eb, sizeof eb));
            set_failed(w, msg, e);
            pthread_cond_broadcast(&w->cv);
        } else if (target > w->synced_end) {
            w->synced_end = target;
        }
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* ------------------------------------------------------------- public API */

static void wal_destroy(struct gw_wal *w)
{
    if (w->fd >= 0) close(w->fd);
    if (w->dirfd >= 0) close(w->dirfd);
    pendv_free(&w->pend);
    pendv_free(&w->spare);
    pthread_cond_destroy(&w->sync_cv);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w->dir);
    free(w);
}

int gw_wal_open(struct gw_wal **out, const struct gw_wal_opts *o, struct gw_error *err)
{
    char eb[128], name[WAL_NAME_MAX];
    if (!out || !o || !o->dir || !o->dir[0]) return gw_error_set(err, GW_EINVAL, "wal: missing options or dir");
    if (o->fsync != GW_FSYNC_ALWAYS && o->fsync != GW_FSYNC_BATCH && o->fsync != GW_FSYNC_OFF)
        return gw_error_set(err, GW_EINVAL, "wal: bad fsync mode %d", (int)o->fsync);

    struct gw_wal *w = calloc(1, sizeof *w);
    if (!w) return gw_error_set(err, GW_ENOMEM, "wal: out of memory");
    w->fd = -1;
    w->dirfd = -1;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->sync_cv, &ca);
    pthread_condattr_destroy(&ca);

    w->mode = o->fsync;
    w->hold = o->hold;
    w->hold_ud = o->hold_ud;
    w->segment_bytes = o->segment_bytes ? o->segment_bytes : WAL_DEFAULT_SEGMENT;
    if (w->segment_bytes > GW_WAL_MAX_SEGMENT) w->segment_bytes = GW_WAL_MAX_SEGMENT;
    w->batch_ms = o->batch_interval_ms ? o->batch_interval_ms : WAL_DEFAULT_BATCH_MS;
    if (w->batch_ms > 3600u * 1000u) w->batch_ms = 3600u * 1000u;

    int rc;
    uint32_t *segs = NULL;
    size_t n_segs = 0;
    w->dir = strdup(o->dir);
    if (!w->dir) { rc = gw_error_set(err, GW_ENOMEM, "wal: out of memory"); goto fail; }
    rc = open_dir(o->dir, &w->dirfd, err);
    if (rc != GW_OK) goto fail;
    rc = list_segments(w->dirfd, w->dir, &segs, &n_segs, err);
    if (rc != GW_OK) goto fail;
    uint32_t seg = n_segs ? segs[n_segs - 1] : 0;
    free(segs);
    if (seg >= 99999999u) {
        rc = gw_error_set(err, GW_EIO, "wal dir %s: segment numbers exhausted", w->dir);
        goto fail;
    }
    seg++;

    seg_name(name, sizeof name, seg);
    w->fd = openat(w->dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    int e = 0;
    if (w->fd < 0) {
        e = errno;
        rc = gw_error_set(err, GW_EIO, "cannot create wal segment %s/%s: %s", w->dir, name, errtext(e, eb, sizeof eb));
        goto fail;
    }
    w->fd_seg = w->pub_seg = seg;
    if (fsync(w->dirfd) != 0) {
        e = errno;
        rc = gw_error_set(err, GW_EIO, "cannot sync wal dir %s: %s", w->dir, errtext(e, eb, sizeof eb));
        goto fail;
    }
    if (write_all(w->fd, wal_magic, sizeof wal_magic, &e) != 0 || sync_fd(w->fd, &e) != 0) {
        rc = gw_error_set(err, GW_EIO, "cannot write wal segment %s/%s: %s", w->dir, name, errtext(e, eb, sizeof eb));
        goto fail;
    }
    w->cur_seg = seg;
    w->cur_off = WAL_HDR;
    w->written_end = w->synced_end = mkpos(seg, WAL_HDR);

    if (w->mode == GW_FSYNC_BATCH) {
        if (pthread_create(&w->syncer, NULL, sync_main, w) != 0) {
            rc = gw_error_set(err, GW_ENOMEM, "wal: cannot start sync thread");
            goto fail;
        }
        w->syncer_started = 1;
    }
    *out = w;
    return GW_OK;

fail:
    wal_destroy(w);
    return rc;
}

void gw_wal_close(struct gw_wal *w)
{
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_signal(&w->sync_cv);
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    if (w->syncer_started) pthread_join(w->syncer, NULL);

    pthread_mutex_lock(&w->mu);
    flush_locked(w, mkpos(w->cur_seg, w->cur_off), 1, NULL);
    while (w->writing) pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
    wal_destroy(w);
}

int gw_wal_append(struct gw_wal *w, uint8_t type, const void *payload, size_t len, uint64_t *pos)
{
    if (!w || (len > 0 && !payload)) return GW_EINVAL;
    if (len > GW_WAL_MAX_RECORD) return GW_ETOOLARGE;
    uint8_t hdr[WAL_REC];
    uint32_t crc = gw_crc32c(0, &type, 1);
    if (len > 0) crc = gw_crc32c(crc, payload, len);
    put_le32(hdr, (uint32_t)len);
    put_le32(hdr + 4, crc);
    hdr[8] = type;
    size_t rec = WAL_REC + len;

    pthread_mutex_lock(&w->mu);
    int rc = GW_OK;
    if (w->failed) { rc = w->fail_rc; goto out; }
    int cut = w->cur_off > WAL_HDR && w->cur_off + rec > w->segment_bytes;
    if (cut && w->cur_seg >= 99999999u) {
        set_failed(w, "segment numbers exhausted", 0);
        rc = GW_EIO;
        goto out;
    }
    uint32_t seg = cut ? w->cur_seg + 1 : w->cur_seg;
    struct pend *p;
    int is_new;
    rc = pend_reserve(&w->pend, seg, rec + (cut ? WAL_HDR : 0), &p, &is_new);
    if (rc != GW_OK) goto out;
    if (is_new) {
        p->seg = seg;
        w->pend.n++;
    }
    if (cut) {
        memcpy(p->data + p->len, wal_magic, WAL_HDR);
        p->len += WAL_HDR;
        w->cur_seg = seg;
        w->cur_off = WAL_HDR;
    }
    memcpy(p->data + p->len, hdr, WAL_REC);
    if (len > 0) memcpy(p->data + p->len + WAL_REC, payload, len);
    p->len += rec;
    uint64_t at = mkpos(w->cur_seg, w->cur_off);
    w->cur_off += rec;
    p->end = mkpos(w->cur_seg, w->cur_off);
    w->last_pos = at;
    if (pos) *pos = at;
out:
    pthread_mutex_unlock(&w->mu);
    return rc;
}

int gw_wal_commit(struct gw_wal *w, uint64_t pos, struct gw_error *err)
{
    if (!w) return gw_error_set(err, GW_EINVAL, "wal: NULL handle");
    pthread_mutex_lock(&w->mu);
    int rc;
    if (w->failed) {
        rc = gw_error_set(err, w->fail_rc, "wal failed: %s", w->fail_msg);
    } else if (w->last_pos == 0) {
        rc = GW_OK;                       /* nothing appended since open */
    } else {
        if (pos > w->last_pos) pos = w->last_pos;
        rc = flush_locked(w, pos + 1, w->mode == GW_FSYNC_ALWAYS, err);
    }
    pthread_mutex_unlock(&w->mu);
    return rc;
}

int gw_wal_cut(struct gw_wal *w, uint64_t *next_pos, struct gw_error *err)
{
    if (!w) return gw_error_set(err, GW_EINVAL, "wal: NULL handle");
    pthread_mutex_lock(&w->mu);
    int rc = GW_OK;
    if (w->failed) {
        rc = gw_error_set(err, w->fail_rc, "wal failed: %s", w->fail_msg);
        goto out;
    }
    if (w->cur_off > WAL_HDR) {
        if (w->cur_seg >= 99999999u) {
            set_failed(w, "segment numbers exhausted", 0);
            rc = gw_error_set(err, w->fail_rc, "wal failed: %s", w->fail_msg);
            goto out;
        }
        struct pend *p;
        int is_new;
        rc = pend_reserve(&w->pend, w->cur_seg + 1, WAL_HDR, &p, &is_new);
        if (rc != GW_OK) {
            rc = gw_error_set(err, rc, "wal: out of memory");
            goto out;
        }
        /* is_new is always 1 here: no buffer exists yet for cur_seg + 1. */
        p->seg = w->cur_seg + 1;
        if (is_new) w->pend.n++;
        memcpy(p->data + p->len, wal_magic, WAL_HDR);
        p->len += WAL_HDR;
        w->cur_seg++;
        w->cur_off = WAL_HDR;
        p->end = mkpos(w->cur_seg, w->cur_off);
    }
    uint64_t target = mkpos(w->cur_seg, WAL_HDR);
    rc = flush_locked(w, target, 0, err);
    if (rc == GW_OK && next_pos) *next_pos = target;
out:
    pthread_mutex_unlock(&w->mu);
    return rc;
}

int gw_wal_truncate_before(struct gw_wal *w, uint64_t pos, struct gw_error *err)
{
    char eb[128], name[WAL_NAME_MAX];
    if (!w) return gw_error_set(err, GW_EINVAL, "wal: NULL handle");
    uint32_t limit = (uint32_t)(pos >> 32);
    pthread_mutex_lock(&w->mu);
    if (w->pub_seg < limit) limit = w->pub_seg;   /* never the open segment */
    pthread_mutex_unlock(&w->mu);
    if (w->hold) {                                 /* nor what a reader still needs */
        uint64_t h = w->hold(w->hold_ud);
        if ((h >> 32) < limit) limit = (uint32_t)(h >> 32);
    }

    uint32_t *segs = NULL;
    size_t n = 0;
    int rc = list_segments(w->dirfd, w->dir, &segs, &n, err);
    if (rc != GW_OK) return rc;
    int removed = 0;
    for (size_t i = 0; i < n && segs[i] < limit; i++) {
        seg_name(name, sizeof name, segs[i]);
        if (unlinkat(w->dirfd, name, 0) != 0) {
            if (errno == ENOENT) continue;
            int e = errno;
            rc = gw_error_set(err, GW_EIO, "cannot delete wal segment %s/%s: %s", w->dir, name,
                              errtext(e, eb, sizeof eb));
            break;
        }
        removed++;
    }
    free(segs);
    if (removed && fsync(w->dirfd) != 0 && rc == GW_OK) {
        int e = errno;
        rc = gw_error_set(err, GW_EIO, "cannot sync wal dir %s: %s", w->dir, errtext(e, eb, sizeof eb));
    }
    return rc;
}

uint64_t gw_wal_disk_bytes(const struct gw_wal *w)
{
    if (!w) return 0;
    uint32_t *segs = NULL;
    size_t n = 0;
    if (list_segments(w->dirfd, w->dir, &segs, &n, NULL) != GW_OK) return 0;
    uint64_t total = 0;
    char name[WAL_NAME_MAX];
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        seg_name(name, sizeof name, segs[i]);
        if (fstatat(w->dirfd, name, &st, 0) == 0 && st.st_size > 0) total += (uint64_t)st.st_size;
    }
    free(segs);
    return total;
}

/* ------------------------------------------------------------------ replay */

/* A read window over one segment file. */
struct reader {
    int fd;
    uint8_t *buf;
    size_t cap, len;
    uint64_t start;   /* file offset of buf[0] */
};

/* Returns n bytes at file offset off, or NULL (errno set) on a read error or
 * a file shorter than expected. The caller checked off + n <= file size. */
static const uint8_t *reader_get(struct reader *r, uint64_t off, size_t n)
{
    if (off >= r->start && off - r->start <= r->len && n <= r->len - (size_t)(off - r->start))
        return r->buf + (off - r->start);
    if (n > r->cap) {
        size_t nc = n > WAL_READ_CHUNK ? n : WAL_READ_CHUNK;
        uint8_t *nb = realloc(r->buf, nc);
        if (!nb) {
            errno = ENOMEM;
            return NULL;
        }
        r->buf = nb;
        r->cap = nc;
    }
    r->start = off;
    r->len = 0;
    while (r->len < r->cap) {
        ssize_t k = pread(r->fd, r->buf + r->len, r->cap - r->len, (off_t)(off + r->len));
        if (k < 0) {
            if (errno == EINTR) continue;
            r->len = 0;
            return NULL;
        }
        if (k == 0) break;
        r->len += (size_t)k;
    }
    if (r->len < n) {
        errno = EIO;
        return NULL;
    }
    return r->buf;
}

/* Truncates segment seg at off (deletes it when off is 0), deletes every
 * segment in later[0..n_later), fsyncs the dir. */
static int repair(int dirfd, const char *dir, uint32_t seg, uint64_t off, const uint32_t *later, size_t n_later,
                  struct gw_wal_replay_stats *s, struct gw_error *err)
{
    char eb[128], name[WAL_NAME_MAX];
    int e;
    seg_name(name, sizeof name, seg);
    if (off == 0) {
        if (unlinkat(dirfd, name, 0) != 0 && errno != ENOENT) {
            e = errno;
            return gw_error_set(err, GW_EIO, "cannot delete wal segment %s/%s: %s", dir, name, errtext(e, eb, sizeof eb));
        }
    } else {
        int fd = openat(dirfd, name, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || ftruncate(fd, (off_t)off) != 0 || fsync(fd) != 0) {
            e = errno;
            if (fd >= 0) close(fd);
            return gw_error_set(err, GW_EIO, "cannot truncate wal segment %s/%s: %s", dir, name,
                                errtext(e, eb, sizeof eb));
        }
        close(fd);
    }
    for (size_t i = 0; i < n_later; i++) {
        seg_name(name, sizeof name, later[i]);
        if (unlinkat(dirfd, name, 0) != 0) {
            if (errno == ENOENT) continue;
            e = errno;
            return gw_error_set(err, GW_EIO, "cannot delete wal segment %s/%s: %s", dir, name, errtext(e, eb, sizeof eb));
        }
        s->removed_segments++;
    }
    if (fsync(dirfd) != 0) {
        e = errno;
        return gw_error_set(err, GW_EIO, "cannot sync wal dir %s: %s", dir, errtext(e, eb, sizeof eb));
    }
    return GW_OK;
}

/* Stats: records and bytes (payload bytes) passed to cb, segments read.
 * *st is filled on every return, also when cb stops the replay. */
int gw_wal_replay(const char *dir, uint64_t from_pos, gw_wal_replay_cb cb, void *ud, struct gw_wal_replay_stats *st,
                  struct gw_error *err)
{
    char eb[128], name[WAL_NAME_MAX];
    struct gw_wal_replay_stats s = {0};
    if (!dir || !dir[0]) return gw_error_set(err, GW_EINVAL, "wal: missing dir");
    int dirfd = -1, rc;
    uint32_t *segs = NULL;
    size_t n = 0;
    struct reader r = {.fd = -1};
    int removed_empty = 0;

    rc = open_dir(dir, &dirfd, err);
    if (rc != GW_OK) goto out;
    rc = list_segments(dirfd, dir, &segs, &n, err);
    if (rc != GW_OK) goto out;

    uint32_t from_seg = (uint32_t)(from_pos >> 32);
    for (size_t i = 0; i < n; i++) {
        uint32_t seg = segs[i];
        if (seg < from_seg) continue;
        seg_name(name, sizeof name, seg);
        r.fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
        struct stat sb;
        if (r.fd < 0 || fstat(r.fd, &sb) != 0) {
            int e = errno;
            rc = gw_error_set(err, GW_EIO, "cannot open wal segment %s/%s: %s", dir, name, errtext(e, eb, sizeof eb));
            goto out;
        }
        uint64_t size = sb.st_size > 0 ? (uint64_t)sb.st_size : 0;
        r.start = 0;
        r.len = 0;
        if (size == 0) {
            /* Created but never written: nothing was lost, drop the file. */
            close(r.fd);
            r.fd = -1;
            if (unlinkat(dirfd, name, 0) != 0 && errno != ENOENT) {
                int e = errno;
                rc = gw_error_set(err, GW_EIO, "cannot delete wal segment %s/%s: %s", dir, name,
                                  errtext(e, eb, sizeof eb));
                goto out;
            }
            removed_empty = 1;
            continue;
        }
        s.segments++;

        uint64_t bad = UINT64_MAX;   /* offset where the valid prefix ends */
        const uint8_t *p;
        if (size < WAL_HDR) {
            bad = 0;
        } else {
            if (!(p = reader_get(&r, 0, WAL_HDR))) goto read_err;
            if (memcmp(p, wal_magic, WAL_HDR) != 0) bad = 0;
        }
        uint64_t off = WAL_HDR;
        while (bad == UINT64_MAX && off < size) {
            if (size - off < WAL_REC) { bad = off; break; }
            if (!(p = reader_get(&r, off, WAL_REC))) goto read_err;
            uint32_t len = get_le32(p), crc = get_le32(p + 4);
            if (len > GW_WAL_MAX_RECORD || len > size - off - WAL_REC) { bad = off; break; }
            if (!(p = reader_get(&r, off + 8, 1 + (size_t)len))) goto read_err;
            if (gw_crc32c(0, p, 1 + (size_t)len) != crc) { bad = off; break; }
            uint64_t at = mkpos(seg, off);
            if (at >= from_pos) {
                s.records++;
                s.bytes += len;
                if (cb) {
                    rc = cb(ud, p[0], p + 1, len, at);
                    if (rc != GW_OK) goto out;
                }
            }
            off += WAL_REC + (uint64_t)len;
        }
        close(r.fd);
        r.fd = -1;
        if (bad != UINT64_MAX) {
            s.corrupt = 1;
            s.truncated_bytes = size - bad;
            rc = repair(dirfd, dir, seg, bad, segs + i + 1, n - i - 1, &s, err);
            goto out;
        }
        continue;
    read_err: {
            int e = errno;
            rc = gw_error_set(err, GW_EIO, "cannot read wal segment %s/%s: %s", dir, name, errtext(e, eb, sizeof eb));
            goto out;
        }
    }
    if (removed_empty && fsync(dirfd) != 0) {
        int e = errno;
        rc = gw_error_set(err, GW_EIO, "cannot sync wal dir %s: %s", dir, errtext(e, eb, sizeof eb));
    }
out:
    if (r.fd >= 0) close(r.fd);
    free(r.buf);
    free(segs);
    if (dirfd >= 0) close(dirfd);
    if (st) *st = s;
    return rc;
}

/* ------------------------------------------------------------- listing */

int gw_wal_segments(const char *dir, uint32_t **out, size_t *n, struct gw_error *err)
{
    *out = NULL;
    *n = 0;
    if (!dir || !dir[0]) return gw_error_set(err, GW_EINVAL, "wal: missing dir");
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) {
        char eb[128];
        int e = errno;
        return gw_error_set(err, e == ENOENT ? GW_ENOTFOUND : GW_EIO, "cannot open wal dir %s: %s", dir,
                            errtext(e, eb, sizeof eb));
    }
    int rc = list_segments(dirfd, dir, out, n, err);
    close(dirfd);
    return rc;
}

void gw_wal_segment_name(char *buf, size_t cap, uint32_t seg) { seg_name(buf, cap, seg); }
