/* backup.c - consistent backups of a data dir and their restore.
 *
 * A backup is a directory:
 *   MANIFEST            text, written last (format below)
 *   store/data.mdb      a compacting LMDB copy (gw_store_copy_fd): one
 *                       consistent snapshot of the series store
 *   wal/%08u.wal        the WAL segments up to the position noted at start
 *   alerts/ events/ ... every other file of the data dir (LMDB lock files,
 *                       LOCK and serve.addr left out); offline the other LMDB
 *                       environments are copied through LMDB (consistent),
 *                       while serve runs as files (they are serve's to write)
 *
 * Consistency while serve writes (gw_db_backup): the WAL is cut first
 * (gw_wal_cut: every record appended so far, so every acknowledged sample,
 * is in a closed, synced segment before position P); the segments before P
 * are copied; THEN the store is copied. A checkpoint may delete a segment
 * meanwhile, but only after the samples in it were committed to the store,
 * so the later store snapshot holds them; a segment open before it was
 * deleted is read whole. WAL replay skips samples the store already has, so
 * the overlap is harmless. Ingest is never paused: the cut is one append.
 *
 * Crash safety: everything is written into OUT.partial.XXXXXX, fsynced,
 * and renamed to OUT only after MANIFEST (whose last line checksums the
 * rest) is complete; restore refuses a directory without a complete,
 * matching manifest, so a killed backup is never restored.
 *
 * MANIFEST:
 *   gpuwatch-backup 1
 *   created_ms <ms since epoch>
 *   wal_position <P, decimal; 18446744073709551615 = all segments (offline)>
 *   file <crc32c, 8 hex> <size> <relative path>     one per file
 *   end <crc32c, 8 hex, of every byte before this line>
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db_int.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/progress.h"

#define BK_BUF (1u << 20)

struct bk {
    char *tmp;                   /* OUT.partial.XXXXXX */
    struct gw_buf man;
    struct gw_db_backup_stats *st;
    uint8_t *buf;                /* BK_BUF copy buffer */
    int offline;                 /* no process has the dir's LMDB environments open */
    struct gw_progress *prog;    /* bytes copied so far */
    struct gw_error *err;
};

char *gw_db_path_join(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *p = malloc(la + lb + 2);
    if (p) {
        memcpy(p, a, la);
        p[la] = '/';
        memcpy(p + la + 1, b, lb + 1);
    }
    return p;
}

static int sys_err(struct gw_error *err, const char *what, const char *path)
{
    int e = errno;
    return gw_error_set(err, e == ENOSPC ? GW_EFULL : GW_EIO, "cannot %s %s: %s", what, path, strerror(e));
}

static int fsync_path(const char *path, struct gw_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sys_err(err, "open", path);
    int r = fsync(fd);
    close(fd);
    return r == 0 ? GW_OK : sys_err(err, "sync", path);
}

/* mkdir -p of rel's directories under root. */
static int mkdirs_for(const char *root, const char *rel, struct gw_error *err)
{
    char *p = gw_db_path_join(root, rel);
    if (!p)
        return gw_error_set(err, GW_ENOMEM, "out of memory");
    size_t rl = strlen(root) + 1;
    for (char *s = p + rl; *s; s++) {
        if (*s != '/')
            continue;
        *s = 0;
        if (mkdir(p, 0755) != 0 && errno != EEXIST) {
            int rc = sys_err(err, "create directory", p);
            free(p);
            return rc;
        }
        *s = '/';
    }
    free(p);
    return GW_OK;
}

/* CRC-32C and size of a file. */
static int file_sum(const char *path, uint8_t *buf, uint32_t *crc, uint64_t *size, struct gw_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sys_err(err, "open", path);
    uint32_t c = 0;
    uint64_t n = 0;
    for (;;) {
        ssize_t k = read(fd, buf, BK_BUF);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            int rc = sys_err(err, "read", path);
            close(fd);
            return rc;
        }
        if (k == 0)
            break;
        c = gw_crc32c(c, buf, (size_t)k);
        n += (uint64_t)k;
    }
    close(fd);
    *crc = c;
    *size = n;
    return GW_OK;
}

static int man_add(struct bk *b, const char *rel, uint32_t crc, uint64_t size)
{
    b->st->files++;
    b->st->bytes += size;
    gw_progress_set(b->prog, b->st->bytes);
    return gw_buf_printf(&b->man, "file %08x %llu %s\n", crc, (unsigned long long)size, rel) == GW_OK
               ? GW_OK
               : gw_error_set(b->err, GW_ENOMEM, "out of memory");
}

/* Copies src to root/rel (fsynced), checksumming what was written. A
 * missing src is skipped when missing_ok (1 returned). */
static int copy_file(struct bk *b, const char *root, const char *src, const char *rel, int missing_ok)
{
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0) {
        if (errno == ENOENT && missing_ok)
            return 1;
        return sys_err(b->err, "open", src);
    }
    int rc = mkdirs_for(root, rel, b->err);
    char *dst = rc == GW_OK ? gw_db_path_join(root, rel) : NULL;
    int out = dst ? open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
    if (rc == GW_OK && out < 0)
        rc = dst ? sys_err(b->err, "create", dst) : gw_error_set(b->err, GW_ENOMEM, "out of memory");
    uint32_t crc = 0;
    uint64_t size = 0;
    while (rc == GW_OK) {
        ssize_t k = read(in, b->buf, BK_BUF);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            rc = sys_err(b->err, "read", src);
            break;
        }
        if (k == 0)
            break;
        for (ssize_t w = 0; w < k;) {
            ssize_t m = write(out, b->buf + w, (size_t)(k - w));
            if (m < 0 && errno == EINTR)
                continue;
            if (m < 0) {
                rc = sys_err(b->err, "write", dst);
                break;
            }
            w += m;
        }
        crc = gw_crc32c(crc, b->buf, (size_t)k);
        size += (uint64_t)k;
    }
    if (rc == GW_OK && fsync(out) != 0)
        rc = sys_err(b->err, "sync", dst);
    if (out >= 0)
        close(out);
    close(in);
    free(dst);
    return rc == GW_OK ? man_add(b, rel, crc, size) : rc;
}

/* Writes a copy of an LMDB environment to rel under the backup, synced, and
 * lists it in the manifest: of the open store s, or (s NULL) of the
 * environment in src_dir, which no process uses, copied through LMDB
 * itself (alerts/, events/, ...). */
static int copy_lmdb(struct bk *b, const char *rel, struct gw_store *s, const char *src_dir)
{
    int rc = mkdirs_for(b->tmp, rel, b->err);
    char *dst = rc == GW_OK ? gw_db_path_join(b->tmp, rel) : NULL;
    if (rc == GW_OK && !dst)
        rc = gw_error_set(b->err, GW_ENOMEM, "out of memory");
    int fd = rc == GW_OK ? open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
    if (rc == GW_OK && fd < 0)
        rc = sys_err(b->err, "create", dst);
    if (rc == GW_OK)
        rc = s ? gw_store_copy_fd(s, fd, b->err) : gw_store_env_copy_fd(src_dir, fd, b->err);
    if (rc == GW_OK && fsync(fd) != 0)
        rc = sys_err(b->err, "sync", dst);
    if (fd >= 0)
        close(fd);
    uint32_t crc = 0;
    uint64_t size = 0;
    if (rc == GW_OK)
        rc = file_sum(dst, b->buf, &crc, &size, b->err);
    if (rc == GW_OK)
        rc = man_add(b, rel, crc, size);
    free(dst);
    return rc;
}

static int copy_env(struct bk *b, const char *src_dir, const char *rel)
{
    return copy_lmdb(b, rel, NULL, src_dir);
}

static int skip_name(const char *rel_dir, const char *name)
{
    if (!strcmp(name, ".") || !strcmp(name, "..") || !strcmp(name, "lock.mdb"))
        return 1;
    if (!rel_dir[0])
        return !strcmp(name, "store") || !strcmp(name, "wal") || !strcmp(name, "LOCK") ||
               !strcmp(name, "serve.addr") || !strncmp(name, "serve.addr.", 11);
    return 0;
}

/* Copies every regular file under dir/rel_dir (recursively) but the store,
 * the WAL and lock files. */
static int copy_others(struct bk *b, const char *dir, const char *rel_dir)
{
    char *src = rel_dir[0] ? gw_db_path_join(dir, rel_dir) : strdup(dir);
    DIR *d = src ? opendir(src) : NULL;
    if (!d) {
        int rc = src ? sys_err(b->err, "list", src) : gw_error_set(b->err, GW_ENOMEM, "out of memory");
        free(src);
        return rc;
    }
    int rc = GW_OK;
    struct dirent *e;
    while (rc == GW_OK && (e = readdir(d))) {
        if (skip_name(rel_dir, e->d_name) || strchr(e->d_name, '\n'))
            continue;
        char *path = gw_db_path_join(src, e->d_name);
        char *rel = rel_dir[0] ? gw_db_path_join(rel_dir, e->d_name) : strdup(e->d_name);
        struct stat sb;
        if (!path || !rel)
            rc = gw_error_set(b->err, GW_ENOMEM, "out of memory");
        else if (lstat(path, &sb) != 0)
            rc = errno == ENOENT ? GW_OK : sys_err(b->err, "stat", path);
        else if (S_ISDIR(sb.st_mode))
            rc = copy_others(b, dir, rel);
        else if (S_ISREG(sb.st_mode) && b->offline && rel_dir[0] && !strcmp(e->d_name, "data.mdb"))
            rc = copy_env(b, src, rel);
        else if (S_ISREG(sb.st_mode)) {
            int r = copy_file(b, b->tmp, path, rel, 1);
            rc = r < 0 ? r : GW_OK;
        }
        free(path);
        free(rel);
    }
    closedir(d);
    free(src);
    return rc;
}

/* The WAL segments of wal_dir before position upto. */
static int copy_wal(struct bk *b, const char *wal_dir, uint64_t upto)
{
    uint32_t *segs = NULL;
    size_t n = 0;
    int rc = gw_wal_segments(wal_dir, &segs, &n, b->err);
    if (rc == GW_ENOTFOUND)
        return GW_OK;
    uint32_t last = (uint32_t)(upto >> 32);
    for (size_t i = 0; rc == GW_OK && i < n; i++) {
        if (upto != UINT64_MAX && segs[i] >= last)
            break;
        char name[32], rel[48];
        gw_wal_segment_name(name, sizeof name, segs[i]);
        snprintf(rel, sizeof rel, "wal/%s", name);
        char *src = gw_db_path_join(wal_dir, name);
        if (!src) {
            rc = gw_error_set(b->err, GW_ENOMEM, "out of memory");
            break;
        }
        int r = copy_file(b, b->tmp, src, rel, 1);   /* gone: a checkpoint put it in the store */
        free(src);
        if (r == GW_OK)
            b->st->wal_segments++;
        else if (r < 0)
            rc = r;
    }
    free(segs);
    return rc;
}

static int copy_store(struct bk *b, struct gw_store *s)
{
    return copy_lmdb(b, "store/data.mdb", s, NULL);
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path) != 0 && errno != ENOENT ? -1 : 0;
}

int gw_db_rmtree(const char *path)
{
    struct stat sb;
    if (lstat(path, &sb) != 0)
        return errno == ENOENT ? 0 : -1;
    return nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static char *parent_of(const char *path)
{
    char *p = strdup(path);
    if (!p)
        return NULL;
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/')
        p[--n] = 0;
    char *s = strrchr(p, '/');
    if (!s) {
        free(p);
        return strdup(".");
    }
    if (s == p)
        s[1] = 0;
    else
        *s = 0;
    return p;
}

/* 1 when path does not exist or is an empty directory. */
static int absent_or_empty(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return errno == ENOENT;
    struct dirent *e;
    int empty = 1;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            empty = 0;
            break;
        }
    closedir(d);
    return empty;
}

/* Writes MANIFEST, syncs, renames tmp to out. */
static int seal(struct bk *b, const char *out)
{
    char tail[32];
    snprintf(tail, sizeof tail, "end %08x\n", gw_crc32c(0, b->man.data, b->man.len));
    int rc = gw_buf_append(&b->man, tail, strlen(tail));
    char *mp = gw_db_path_join(b->tmp, "MANIFEST");
    if (rc != GW_OK || !mp) {
        free(mp);
        return gw_error_set(b->err, GW_ENOMEM, "out of memory");
    }
    int fd = open(mp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, b->man.data, b->man.len) != (ssize_t)b->man.len || fsync(fd) != 0)
        rc = sys_err(b->err, "write", mp);
    if (fd >= 0)
        close(fd);
    free(mp);
    char *sub[] = {"store", "wal", ""};
    for (int i = 0; rc == GW_OK && i < 3; i++) {
        char *p = sub[i][0] ? gw_db_path_join(b->tmp, sub[i]) : strdup(b->tmp);
        struct stat sb;
        if (p && stat(p, &sb) == 0)
            rc = fsync_path(p, b->err);
        free(p);
    }
    if (rc == GW_OK && absent_or_empty(out))
        rmdir(out);
    if (rc == GW_OK && rename(b->tmp, out) != 0)
        rc = sys_err(b->err, "rename the finished backup to", out);
    char *par = rc == GW_OK ? parent_of(out) : NULL;
    if (par)
        rc = fsync_path(par, b->err);
    free(par);
    return rc;
}

/* The whole backup from store s (a snapshot taken now) and the WAL
 * segments of wal_dir before upto, plus the other files of dir. */
static int backup_run(struct gw_store *s, const char *dir, const char *wal_dir, uint64_t upto, const char *out,
                      struct gw_db_backup_stats *st, struct gw_error *err)
{
    int offline = upto == UINT64_MAX;
    if (!absent_or_empty(out))
        return gw_error_set(err, GW_EINVAL, "backup target %s exists and is not empty", out);
    struct bk b = {.st = st, .err = err, .offline = offline};
    gw_buf_init(&b.man, 0);
    b.buf = malloc(BK_BUF);
    size_t ol = strlen(out);
    b.tmp = malloc(ol + sizeof ".partial.XXXXXX");
    if (!b.buf || !b.tmp) {
        free(b.buf);
        free(b.tmp);
        return gw_error_set(err, GW_ENOMEM, "out of memory");
    }
    memcpy(b.tmp, out, ol);
    while (ol > 1 && b.tmp[ol - 1] == '/')
        ol--;
    memcpy(b.tmp + ol, ".partial.XXXXXX", sizeof ".partial.XXXXXX");
    int rc = GW_OK;
    if (!mkdtemp(b.tmp))
        rc = sys_err(err, "create", b.tmp);
    b.prog = gw_progress_start("backup", 0, GW_PROGRESS_BYTES);
    st->wal_position = upto;
    if (rc == GW_OK)
        rc = gw_buf_printf(&b.man, "gpuwatch-backup 1\ncreated_ms %lld\nwal_position %llu\n",
                           (long long)gw_now_ms(), (unsigned long long)upto);
    if (rc == GW_OK)
        rc = copy_wal(&b, wal_dir, upto);
    if (rc == GW_OK)
        rc = copy_store(&b, s);
    if (rc == GW_OK)
        rc = copy_others(&b, dir, "");
    if (rc == GW_OK)
        rc = seal(&b, out);
    if (rc != GW_OK)
        gw_db_rmtree(b.tmp);
    gw_progress_end(b.prog);
    gw_buf_free(&b.man);
    free(b.buf);
    free(b.tmp);
    return rc;
}

int gw_db_backup(struct gw_db *db, const char *out, struct gw_db_backup_stats *st, struct gw_error *err)
{
    struct gw_db_backup_stats local;
    if (!st)
        st = &local;
    memset(st, 0, sizeof *st);
    if (!db || !out || !out[0])
        return gw_error_set(err, GW_EINVAL, "backup: missing target directory");
    if (!db->wal)
        return gw_error_set(err, GW_EINVAL, "backup: the database is not open for writing; "
                                            "use gw_db_backup_dir on a data dir no process uses");
    uint64_t upto = 0;
    pthread_rwlock_rdlock(&db->wal_rw);
    int rc = db->wal ? gw_wal_cut(db->wal, &upto, err)
                     : gw_error_set(err, GW_EIO, "write-ahead log unavailable");
    pthread_rwlock_unlock(&db->wal_rw);
    if (rc != GW_OK)
        return rc;
    return backup_run(db->store, db->dir, db->wal_dir, upto, out, st, err);
}

int gw_db_lock_dir(const char *dir, int *fd_out, struct gw_error *err)
{
    *fd_out = -1;
    char *lp = gw_db_path_join(dir, "LOCK");
    if (!lp)
        return gw_error_set(err, GW_ENOMEM, "out of memory");
    int fd = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    int rc = GW_OK;
    if (fd < 0)
        rc = sys_err(err, "open", lp);
    else if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        close(fd);
        rc = gw_error_set(err, GW_ELIMIT, "data dir %s is in use by another gpuwatch process", dir);
    } else {
        *fd_out = fd;
    }
    free(lp);
    return rc;
}

int gw_db_backup_dir(const char *dir, const char *out, struct gw_db_backup_stats *st, struct gw_error *err)
{
    struct gw_db_backup_stats local;
    if (!st)
        st = &local;
    memset(st, 0, sizeof *st);
    char *store_dir = gw_db_path_join(dir, "store"), *wal_dir = gw_db_path_join(dir, "wal");
    int lock = -1, rc = GW_OK;
    struct gw_store *s = NULL;
    struct stat sb;
    if (!store_dir || !wal_dir)
        rc = gw_error_set(err, GW_ENOMEM, "out of memory");
    else if (stat(store_dir, &sb) != 0)
        rc = gw_error_set(err, GW_ENOTFOUND, "no gpuwatch store in %s", dir);
    if (rc == GW_OK)
        rc = gw_db_lock_dir(dir, &lock, err);
    struct gw_store_opts so = {.dir = store_dir, .read_only = 1};
    if (rc == GW_OK)
        rc = gw_store_open(&s, &so, err);
    if (rc == GW_OK)
        rc = backup_run(s, dir, wal_dir, UINT64_MAX, out, st, err);
    gw_store_close(s);
    if (lock >= 0)
        close(lock);
    free(store_dir);
    free(wal_dir);
    return rc;
}
