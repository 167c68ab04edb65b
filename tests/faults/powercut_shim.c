/* powercut_shim.c - LD_PRELOAD layer that records what a power cut would
 * take back: an undo journal of every write not yet synced, for files under
 * one directory.
 *
 * Env: GW_PC_DIR      the directory whose files are watched (absolute)
 *      GW_PC_JOURNAL  the journal file (outside GW_PC_DIR)
 * Without both the shim only passes calls through.
 *
 * Before each write(2)-family call or ftruncate on a watched regular file,
 * the bytes the call will overwrite (and the file's size) are appended to
 * the journal, then the call runs; the mutex held over both keeps the
 * pre-image and the write together. fsync/fdatasync of a file discards that
 * file's earlier entries; of a directory, the creations in it; sync and
 * syncfs discard everything. "Earlier" is by journal sequence number taken
 * when the sync call starts, so a write racing a sync stays undoable. A
 * write through an O_SYNC/O_DSYNC descriptor is durable when it returns and
 * is not journaled. sync_file_range starts writeback but promises nothing,
 * so it discards nothing.
 *
 * After kill -9 of the process, tests/faults/powercut_restore.py applies
 * the journal backwards (pre-images, sizes, creations) and the directory
 * looks as after a power loss at the moment of the kill; its --torn mode
 * keeps a random prefix of each page's unsynced writes instead.
 *
 * Not modelled, so treated as durable at once: writes through stdio (glibc
 * calls its own write internally, past this layer), rename and unlink.
 * A writable shared mapping of a watched file cannot be journaled: mmap of
 * one writes an 'X' record and the restore refuses the journal. LMDB lock
 * files (*lock.mdb) are not persistent state and are not watched.
 *
 * Journal record: struct pc_rec, then path[plen], then pre-image[olen].
 *   W  off, wlen: region written; olen bytes of it existed before (the
 *      pre-image); old_size: the file's size before. Also for ftruncate.
 *   S  fsync/fdatasync of (dev, ino): entries of it with seq < upto synced
 *   C  (dev, ino) at path was created (file or directory)
 *   D  fsync of directory path: creations in it with seq < upto synced
 *   G  sync/syncfs: everything with seq < upto synced
 *   X  a writable shared mapping of path (the journal is not complete) */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define PC_MAGIC 0x31435047u /* "GPC1" */

struct pc_rec {
    uint32_t magic, type;
    uint64_t seq, dev, ino;
    int64_t off;
    uint64_t wlen, olen;
    int64_t old_size;
    uint64_t upto;
    uint32_t plen, pad;
};

static pthread_mutex_t pc_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t pc_once = PTHREAD_ONCE_INIT;
static int pc_jfd = -1;
static char pc_dir[4096];
static size_t pc_dirlen;
static uint64_t pc_seq;

#define REAL(ret, name, ...)                                                                                  \
    static ret (*real_##name)(__VA_ARGS__);                                                                   \
    static void load_##name(void)                                                                             \
    {                                                                                                         \
        if (!real_##name) real_##name = (ret(*)(__VA_ARGS__))dlsym(RTLD_NEXT, #name);                         \
    }
REAL(ssize_t, write, int, const void *, size_t)
REAL(ssize_t, pwrite, int, const void *, size_t, off_t)
REAL(ssize_t, pwrite64, int, const void *, size_t, off_t)
REAL(ssize_t, writev, int, const struct iovec *, int)
REAL(ssize_t, pwritev, int, const struct iovec *, int, off_t)
REAL(ssize_t, pwritev64, int, const struct iovec *, int, off_t)
REAL(int, ftruncate, int, off_t)
REAL(int, ftruncate64, int, off_t)
REAL(int, fsync, int)
REAL(int, fdatasync, int)
REAL(void, sync, void)
REAL(int, syncfs, int)
REAL(int, open, const char *, int, ...)
REAL(int, open64, const char *, int, ...)
REAL(int, openat, int, const char *, int, ...)
REAL(int, openat64, int, const char *, int, ...)
REAL(int, creat, const char *, mode_t)
REAL(int, mkdir, const char *, mode_t)
REAL(int, mkdirat, int, const char *, mode_t)
REAL(void *, mmap, void *, size_t, int, int, int, off_t)
REAL(void *, mmap64, void *, size_t, int, int, int, off_t)

static void pc_init(void)
{
    const char *d = getenv("GW_PC_DIR"), *j = getenv("GW_PC_JOURNAL");
    if (!d || !j || !d[0] || strlen(d) >= sizeof pc_dir - 1) return;
    if (!realpath(d, pc_dir)) {
        /* not there yet: use it as given (it must be absolute) */
        snprintf(pc_dir, sizeof pc_dir, "%s", d);
    }
    pc_dirlen = strlen(pc_dir);
    while (pc_dirlen > 1 && pc_dir[pc_dirlen - 1] == '/') pc_dir[--pc_dirlen] = '\0';
    load_open();
    pc_jfd = real_open(j, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (pc_jfd < 0) {
        fprintf(stderr, "powercut_shim: cannot open journal %s: %s\n", j, strerror(errno));
        abort();
    }
    /* continue the numbering of a journal left by an earlier process */
    struct stat st;
    if (fstat(pc_jfd, &st) == 0 && st.st_size > 0) pc_seq = (uint64_t)st.st_size;
}

static int pc_on(void)
{
    pthread_once(&pc_once, pc_init);
    return pc_jfd >= 0;
}

/* Canonical path of fd into buf; 1 when it lies under pc_dir (or is it). */
static int fd_path(int fd, char *buf, size_t cap)
{
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, buf, cap - 1);
    if (n <= 0) return 0;
    buf[n] = '\0';
    if (strncmp(buf, pc_dir, pc_dirlen) != 0 || (buf[pc_dirlen] != '/' && buf[pc_dirlen] != '\0')) return 0;
    size_t bl = (size_t)n;
    if (bl >= 8 && strcmp(buf + bl - 8, "lock.mdb") == 0) return 0;
    return 1;
}

/* 1 = watched regular file, 2 = watched directory, 0 = neither. */
static int watched(int fd, struct stat *st, char *path, size_t cap)
{
    if (fd < 0 || fstat(fd, st) != 0) return 0;
    if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode)) return 0;
    if (!fd_path(fd, path, cap)) return 0;
    return S_ISREG(st->st_mode) ? 1 : 2;
}

static void jwrite(const void *p, size_t n)
{
    load_write();
    const char *c = p;
    while (n) {
        ssize_t w = real_write(pc_jfd, c, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            fprintf(stderr, "powercut_shim: journal write failed: %s\n", strerror(errno));
            abort();
        }
        c += w;
        n -= (size_t)w;
    }
}

/* Appends a record; the caller holds pc_mu. The pre-image is read from
 * fd (through its own read-only descriptor) when olen > 0. */
static void jrec(uint32_t type, const struct stat *st, const char *path, int64_t off, uint64_t wlen, uint64_t upto,
                 int fd)
{
    struct pc_rec r;
    memset(&r, 0, sizeof r);
    r.magic = PC_MAGIC;
    r.type = type;
    r.seq = ++pc_seq;
    r.dev = st ? (uint64_t)st->st_dev : 0;
    r.ino = st ? (uint64_t)st->st_ino : 0;
    r.off = off;
    r.wlen = wlen;
    r.old_size = st ? (int64_t)st->st_size : 0;
    r.upto = upto;
    r.plen = path ? (uint32_t)strlen(path) : 0;
    char *old = NULL;
    if (type == 'W' && st && off < st->st_size) {
        uint64_t have = (uint64_t)(st->st_size - off);
        r.olen = have < wlen ? have : wlen;
        old = malloc(r.olen ? r.olen : 1);
        char link[64];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        load_open();
        int rfd = real_open(link, O_RDONLY | O_CLOEXEC);
        size_t got = 0;
        while (rfd >= 0 && got < r.olen) {
            ssize_t n = pread(rfd, old + got, r.olen - got, off + (off_t)got);
            if (n <= 0) break;
            got += (size_t)n;
        }
        if (rfd >= 0) close(rfd);
        if (!old || got != r.olen) {
            fprintf(stderr, "powercut_shim: cannot read the pre-image of %s\n", path);
            abort();
        }
    }
    jwrite(&r, sizeof r);
    if (r.plen) jwrite(path, r.plen);
    if (r.olen) jwrite(old, r.olen);
    free(old);
}

/* Journals a write of n bytes at off (-1: the current position) to fd if it
 * is watched and not synchronous. Returns with pc_mu held when it locked. */
static int before_write(int fd, int64_t off, uint64_t n)
{
    if (!pc_on()) return 0;
    struct stat st;
    char path[4096];
    if (watched(fd, &st, path, sizeof path) != 1) return 0;
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0 && (fl & (O_SYNC | O_DSYNC))) return 0;
    pthread_mutex_lock(&pc_mu);
    if (fstat(fd, &st) != 0) return 1;
    if (off < 0) off = (fl >= 0 && (fl & O_APPEND)) ? (int64_t)st.st_size : (int64_t)lseek(fd, 0, SEEK_CUR);
    jrec('W', &st, path, off, n, 0, fd);
    return 1;
}

static uint64_t iov_len(const struct iovec *iov, int cnt)
{
    uint64_t n = 0;
    for (int i = 0; i < cnt; i++) n += iov[i].iov_len;
    return n;
}

#define AFTER(locked)                                                                                          \
    do {                                                                                                      \
        int e_ = errno;                                                                                       \
        if (locked) pthread_mutex_unlock(&pc_mu);                                                             \
        errno = e_;                                                                                           \
    } while (0)

ssize_t write(int fd, const void *b, size_t n)
{
    load_write();
    int l = before_write(fd, -1, n);
    ssize_t r = real_write(fd, b, n);
    AFTER(l);
    return r;
}

ssize_t pwrite(int fd, const void *b, size_t n, off_t off)
{
    load_pwrite();
    int l = before_write(fd, off, n);
    ssize_t r = real_pwrite(fd, b, n, off);
    AFTER(l);
    return r;
}

ssize_t pwrite64(int fd, const void *b, size_t n, off_t off)
{
    load_pwrite64();
    int l = before_write(fd, off, n);
    ssize_t r = real_pwrite64(fd, b, n, off);
    AFTER(l);
    return r;
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    load_writev();
    int l = before_write(fd, -1, iov_len(iov, cnt));
    ssize_t r = real_writev(fd, iov, cnt);
    AFTER(l);
    return r;
}

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
    load_pwritev();
    int l = before_write(fd, off, iov_len(iov, cnt));
    ssize_t r = real_pwritev(fd, iov, cnt, off);
    AFTER(l);
    return r;
}

ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off_t off)
{
    load_pwritev64();
    int l = before_write(fd, off, iov_len(iov, cnt));
    ssize_t r = real_pwritev64(fd, iov, cnt, off);
    AFTER(l);
    return r;
}

/* A truncation is a write of the region between the old and new size. */
static int before_truncate(int fd, off_t len)
{
    if (!pc_on()) return 0;
    struct stat st;
    char path[4096];
    if (watched(fd, &st, path, sizeof path) != 1) return 0;
    pthread_mutex_lock(&pc_mu);
    if (fstat(fd, &st) != 0) return 1;
    if (len < st.st_size)
        jrec('W', &st, path, len, (uint64_t)(st.st_size - len), 0, fd);
    else if (len > st.st_size)
        jrec('W', &st, path, st.st_size, (uint64_t)(len - st.st_size), 0, fd);
    return 1;
}

int ftruncate(int fd, off_t len)
{
    load_ftruncate();
    int l = before_truncate(fd, len);
    int r = real_ftruncate(fd, len);
    AFTER(l);
    return r;
}

int ftruncate64(int fd, off_t len)
{
    load_ftruncate64();
    int l = before_truncate(fd, len);
    int r = real_ftruncate64(fd, len);
    AFTER(l);
    return r;
}

/* The sequence number a sync starting now covers. */
static uint64_t seq_now(void)
{
    pthread_mutex_lock(&pc_mu);
    uint64_t s = pc_seq + 1;
    pthread_mutex_unlock(&pc_mu);
    return s;
}

static int do_sync(int fd, int data_only)
{
    load_fsync();
    load_fdatasync();
    struct stat st;
    char path[4096];
    int kind = pc_on() ? watched(fd, &st, path, sizeof path) : 0;
    uint64_t upto = kind ? seq_now() : 0;
    int r = data_only ? real_fdatasync(fd) : real_fsync(fd);
    if (r == 0 && kind) {
        int e = errno;
        pthread_mutex_lock(&pc_mu);
        jrec(kind == 1 ? 'S' : 'D', &st, path, 0, 0, upto, fd);
        pthread_mutex_unlock(&pc_mu);
        errno = e;
    }
    return r;
}

int fsync(int fd) { return do_sync(fd, 0); }
int fdatasync(int fd) { return do_sync(fd, 1); }

static void global_synced(uint64_t upto)
{
    pthread_mutex_lock(&pc_mu);
    jrec('G', NULL, NULL, 0, 0, upto, -1);
    pthread_mutex_unlock(&pc_mu);
}

void sync(void)
{
    load_sync();
    uint64_t upto = pc_on() ? seq_now() : 0;
    real_sync();
    if (upto) global_synced(upto);
}

int syncfs(int fd)
{
    load_syncfs();
    uint64_t upto = pc_on() ? seq_now() : 0;
    int r = real_syncfs(fd);
    if (r == 0 && upto) {
        int e = errno;
        global_synced(upto);
        errno = e;
    }
    return r;
}

/* After a successful open: journal a creation if the file was not there. */
static void after_open(int fd, int existed)
{
    if (fd < 0 || existed || !pc_on()) return;
    int e = errno;
    struct stat st;
    char path[4096];
    if (watched(fd, &st, path, sizeof path)) {
        pthread_mutex_lock(&pc_mu);
        jrec('C', &st, path, 0, 0, 0, fd);
        pthread_mutex_unlock(&pc_mu);
    }
    errno = e;
}

/* Before an open: 1 when the file exists (or no O_CREAT). An O_TRUNC of an
 * existing watched file is journaled as a truncation to 0. */
static int exists_at(int dirfd, const char *p, int flags)
{
    struct stat st;
    int ex = !(flags & O_CREAT) || fstatat(dirfd, p, &st, 0) == 0;
    if ((flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY && pc_on()) {
        int e = errno;
        load_openat();
        int fd = real_openat(dirfd, p, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            if (before_truncate(fd, 0)) pthread_mutex_unlock(&pc_mu);
            close(fd);
        }
        errno = e;
    }
    return ex;
}

#define OPEN_MODE(flags, mode)                                                                                \
    mode_t mode = 0;                                                                                          \
    if ((flags) & (O_CREAT | __O_TMPFILE)) {                                                                  \
        va_list ap_;                                                                                          \
        va_start(ap_, flags);                                                                                 \
        mode = (mode_t)va_arg(ap_, int);                                                                      \
        va_end(ap_);                                                                                          \
    }

/* The four open variants: journal a creation around the real call. */
static int open_common(int (*fn_at)(int, const char *, int, ...), int (*fn)(const char *, int, ...), int dirfd,
                       const char *p, int flags, mode_t mode)
{
    int ex = exists_at(dirfd, p, flags);
    int fd = fn_at ? fn_at(dirfd, p, flags, mode) : fn(p, flags, mode);
    after_open(fd, ex);
    return fd;
}

int open(const char *p, int flags, ...)
{
    OPEN_MODE(flags, mode);
    load_open();
    return open_common(NULL, real_open, AT_FDCWD, p, flags, mode);
}

int open64(const char *p, int flags, ...)
{
    OPEN_MODE(flags, mode);
    load_open64();
    return open_common(NULL, real_open64, AT_FDCWD, p, flags, mode);
}

int openat(int dirfd, const char *p, int flags, ...)
{
    OPEN_MODE(flags, mode);
    load_openat();
    return open_common(real_openat, NULL, dirfd, p, flags, mode);
}

int openat64(int dirfd, const char *p, int flags, ...)
{
    OPEN_MODE(flags, mode);
    load_openat64();
    return open_common(real_openat64, NULL, dirfd, p, flags, mode);
}

int creat(const char *p, mode_t mode)
{
    load_creat();
    int ex = exists_at(AT_FDCWD, p, O_CREAT);
    int fd = real_creat(p, mode);
    after_open(fd, ex);
    return fd;
}

static void after_mkdir(int dirfd, const char *p)
{
    if (!pc_on()) return;
    int e = errno;
    load_openat();
    int fd = real_openat(dirfd, p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    after_open(fd, 0);
    if (fd >= 0) close(fd);
    errno = e;
}

int mkdir(const char *p, mode_t mode)
{
    load_mkdir();
    int r = real_mkdir(p, mode);
    if (r == 0) after_mkdir(AT_FDCWD, p);
    return r;
}

int mkdirat(int dirfd, const char *p, mode_t mode)
{
    load_mkdirat();
    int r = real_mkdirat(dirfd, p, mode);
    if (r == 0) after_mkdir(dirfd, p);
    return r;
}

static void check_map(int prot, int flags, int fd)
{
    if (!(prot & PROT_WRITE) || !(flags & MAP_SHARED) || fd < 0 || !pc_on()) return;
    int e = errno;
    struct stat st;
    char path[4096];
    if (watched(fd, &st, path, sizeof path) == 1) {
        pthread_mutex_lock(&pc_mu);
        jrec('X', &st, path, 0, 0, 0, fd);
        pthread_mutex_unlock(&pc_mu);
    }
    errno = e;
}

void *mmap(void *a, size_t n, int prot, int flags, int fd, off_t off)
{
    load_mmap();
    check_map(prot, flags, fd);
    return real_mmap(a, n, prot, flags, fd, off);
}

void *mmap64(void *a, size_t n, int prot, int flags, int fd, off_t off)
{
    load_mmap64();
    check_map(prot, flags, fd);
    return real_mmap64(a, n, prot, flags, fd, off);
}
