/* restore.c - checking a backup (its MANIFEST, format at the top of
 * backup.c) and restoring it into a data dir: every listed file is checked
 * (size and CRC-32C) before anything is written, the copy goes to a temp
 * dir next to DIR that is renamed into place when complete, a non-empty DIR
 * is replaced only with force, and never while a process holds DIR/LOCK. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db_int.h"
#include "gpuwatch/codec.h"

#define RS_BUF (1u << 20)

struct mfile {
    char *rel;
    uint32_t crc;
    uint64_t size;
};

struct manifest {
    struct mfile *f;
    size_t n, cap;
    uint64_t wal_position;
    char *text;
};

static void manifest_free(struct manifest *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->f[i].rel);
    free(m->f);
    free(m->text);
}

/* A relative path that stays inside its root. */
static int safe_rel(const char *r)
{
    if (!r[0] || r[0] == '/')
        return 0;
    for (const char *s = r; *s;) {
        const char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
            return 0;
        s += n + (e ? 1 : 0);
    }
    return 1;
}

static int read_all(const char *path, char **out, size_t *len, struct gw_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return gw_error_set(err, errno == ENOENT ? GW_ENOTFOUND : GW_EIO,
                            "%s: %s (not a complete gpuwatch backup)", path, strerror(errno));
    struct gw_buf b;
    gw_buf_init(&b, 64u << 20);
    char tmp[65536];
    size_t k;
    int rc = GW_OK;
    while (rc == GW_OK && (k = fread(tmp, 1, sizeof tmp, f)) > 0)
        rc = gw_buf_append(&b, tmp, k);
    fclose(f);
    if (rc == GW_OK)
        rc = gw_buf_putc(&b, 0);
    if (rc != GW_OK) {
        gw_buf_free(&b);
        return gw_error_set(err, rc, "%s: too large or out of memory", path);
    }
    size_t n = 0;
    *out = (char *)gw_buf_steal(&b, &n);
    *len = n - 1;
    return GW_OK;
}

static int bad_manifest(struct gw_error *err, const char *from, size_t line, const char *why)
{
    return gw_error_set(err, GW_ECORRUPT, "%s/MANIFEST line %zu: %s (not a complete gpuwatch backup)", from, line,
                        why);
}

static int manifest_line(struct manifest *m, char *s, const char *from, size_t ln, struct gw_error *err)
{
    if (!strncmp(s, "created_ms ", 11) || !strcmp(s, "gpuwatch-backup 1"))
        return GW_OK;
    if (!strncmp(s, "wal_position ", 13)) {
        m->wal_position = strtoull(s + 13, NULL, 10);
        return GW_OK;
    }
    unsigned crc;
    unsigned long long size;
    int off = 0;
    if (sscanf(s, "file %8x %llu %n", &crc, &size, &off) != 2 || off == 0 || !safe_rel(s + off))
        return bad_manifest(err, from, ln, "malformed line");
    if (m->n == m->cap) {
        size_t nc = m->cap ? 2 * m->cap : 64;
        struct mfile *nf = realloc(m->f, nc * sizeof *nf);
        if (!nf)
            return gw_error_set(err, GW_ENOMEM, "out of memory");
        m->f = nf;
        m->cap = nc;
    }
    m->f[m->n] = (struct mfile){.rel = strdup(s + off), .crc = crc, .size = size};
    if (!m->f[m->n].rel)
        return gw_error_set(err, GW_ENOMEM, "out of memory");
    m->n++;
    return GW_OK;
}

static int manifest_read(const char *from, struct manifest *m, struct gw_error *err)
{
    memset(m, 0, sizeof *m);
    char *path = gw_db_path_join(from, "MANIFEST");
    size_t len = 0;
    if (!path)
        return gw_error_set(err, GW_ENOMEM, "out of memory");
    int rc = read_all(path, &m->text, &len, err);
    free(path);
    if (rc != GW_OK)
        return rc;
    char *t = m->text;
    if (strncmp(t, "gpuwatch-backup 1\n", 18) != 0)
        return bad_manifest(err, from, 1, "not a gpuwatch backup manifest (version 1)");
    char *end = NULL;
    for (char *p = t; (p = strstr(p, "end ")) != NULL; p++)
        if (p == t || p[-1] == '\n')
            end = p;
    unsigned want;
    if (!end || sscanf(end, "end %8x", &want) != 1 || end[12] != '\n' || end[13] != 0)
        return bad_manifest(err, from, 0, "no end line: the backup was not finished");
    if (gw_crc32c(0, t, (size_t)(end - t)) != want)
        return bad_manifest(err, from, 0, "checksum of the manifest does not match");
    *end = 0;
    size_t ln = 0;
    for (char *s = t, *nl; rc == GW_OK && *s; s = nl + 1) {
        ln++;
        nl = strchr(s, '\n');
        if (!nl)
            return bad_manifest(err, from, ln, "unterminated line");
        *nl = 0;
        rc = manifest_line(m, s, from, ln, err);
    }
    if (rc == GW_OK && m->n == 0)
        return bad_manifest(err, from, ln, "lists no files");
    return rc;
}

/* Copies (when dst) and checks one listed file. */
static int check_copy(const char *from, const struct mfile *f, const char *dst_root, uint8_t *buf,
                      struct gw_error *err)
{
    char *src = gw_db_path_join(from, f->rel), *dst = dst_root ? gw_db_path_join(dst_root, f->rel) : NULL;
    int in = src ? open(src, O_RDONLY | O_CLOEXEC) : -1, out = -1, rc = GW_OK;
    if (!src || (dst_root && !dst))
        rc = gw_error_set(err, GW_ENOMEM, "out of memory");
    else if (in < 0)
        rc = gw_error_set(err, GW_ECORRUPT, "backup file %s is missing: %s", src, strerror(errno));
    if (rc == GW_OK && dst) {
        for (char *s = dst + strlen(dst_root) + 1; *s; s++)
            if (*s == '/') {
                *s = 0;
                mkdir(dst, 0755);
                *s = '/';
            }
        out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (out < 0)
            rc = gw_error_set(err, GW_EIO, "cannot create %s: %s", dst, strerror(errno));
    }
    uint32_t crc = 0;
    uint64_t size = 0;
    while (rc == GW_OK) {
        ssize_t k = read(in, buf, RS_BUF);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (k < 0)
                rc = gw_error_set(err, GW_EIO, "cannot read %s: %s", src, strerror(errno));
            break;
        }
        crc = gw_crc32c(crc, buf, (size_t)k);
        size += (uint64_t)k;
        if (out >= 0 && write(out, buf, (size_t)k) != k)
            rc = gw_error_set(err, errno == ENOSPC ? GW_EFULL : GW_EIO, "cannot write %s: %s", dst, strerror(errno));
    }
    if (rc == GW_OK && (size != f->size || crc != f->crc))
        rc = gw_error_set(err, GW_ECORRUPT, "backup file %s does not match its manifest (%llu bytes, crc %08x; "
                          "expected %llu bytes, crc %08x)", src, (unsigned long long)size, crc,
                          (unsigned long long)f->size, f->crc);
    if (rc == GW_OK && out >= 0 && fsync(out) != 0)
        rc = gw_error_set(err, GW_EIO, "cannot sync %s: %s", dst, strerror(errno));
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
    free(src);
    free(dst);
    return rc;
}

int gw_db_backup_check(const char *from, struct gw_db_backup_stats *st, struct gw_error *err)
{
    struct manifest m;
    int rc = manifest_read(from, &m, err);
    uint8_t *buf = rc == GW_OK ? malloc(RS_BUF) : NULL;
    if (rc == GW_OK && !buf)
        rc = gw_error_set(err, GW_ENOMEM, "out of memory");
    if (st)
        memset(st, 0, sizeof *st);
    for (size_t i = 0; rc == GW_OK && i < m.n; i++) {
        rc = check_copy(from, &m.f[i], NULL, buf, err);
        if (st) {
            st->files++;
            st->bytes += m.f[i].size;
            st->wal_segments += !strncmp(m.f[i].rel, "wal/", 4);
        }
    }
    if (st)
        st->wal_position = m.wal_position;
    free(buf);
    manifest_free(&m);
    return rc;
}

static int dir_is_empty(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return errno == ENOENT ? 1 : -1;
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

/* Checks and copies every file into a new temp dir next to dir; *tmp_out
 * gets its path. */
static int restore_stage(const char *from, const struct manifest *m, const char *dir, char **tmp_out,
                         struct gw_db_backup_stats *st, struct gw_error *err)
{
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/')
        dl--;
    char *tmp = malloc(dl + sizeof ".restore.XXXXXX");
    uint8_t *buf = malloc(RS_BUF);
    if (!tmp || !buf) {
        free(tmp);
        free(buf);
        return gw_error_set(err, GW_ENOMEM, "out of memory");
    }
    memcpy(tmp, dir, dl);
    memcpy(tmp + dl, ".restore.XXXXXX", sizeof ".restore.XXXXXX");
    int rc = mkdtemp(tmp) ? GW_OK : gw_error_set(err, GW_EIO, "cannot create %s: %s", tmp, strerror(errno));
    for (size_t i = 0; rc == GW_OK && i < m->n; i++) {
        rc = check_copy(from, &m->f[i], tmp, buf, err);
        st->files++;
        st->bytes += m->f[i].size;
        st->wal_segments += !strncmp(m->f[i].rel, "wal/", 4);
    }
    if (rc == GW_OK) {
        char *w = gw_db_path_join(tmp, "wal");
        if (w)
            mkdir(w, 0755);   /* an empty WAL dir when the backup had no segment */
        free(w);
    }
    free(buf);
    if (rc != GW_OK) {
        gw_db_rmtree(tmp);
        free(tmp);
        return rc;
    }
    *tmp_out = tmp;
    return GW_OK;
}

int gw_db_restore(const char *from, const char *dir, int force, struct gw_db_backup_stats *st, struct gw_error *err)
{
    struct gw_db_backup_stats local;
    if (!st)
        st = &local;
    memset(st, 0, sizeof *st);
    if (!from || !from[0] || !dir || !dir[0])
        return gw_error_set(err, GW_EINVAL, "restore: missing directory");
    int empty = dir_is_empty(dir);
    if (empty < 0)
        return gw_error_set(err, GW_EIO, "cannot read %s: %s", dir, strerror(errno));
    if (!empty && !force)
        return gw_error_set(err, GW_EINVAL, "%s is not empty; give --force to replace it", dir);
    int lock = -1;
    int rc = empty ? GW_OK : gw_db_lock_dir(dir, &lock, err);
    if (rc != GW_OK)
        return rc;
    struct manifest m;
    char *tmp = NULL, *old = NULL;
    rc = manifest_read(from, &m, err);
    if (rc == GW_OK)
        rc = restore_stage(from, &m, dir, &tmp, st, err);
    st->wal_position = m.wal_position;
    manifest_free(&m);
    if (rc == GW_OK && !empty) {
        size_t dl = strlen(dir);
        old = malloc(dl + 32);
        if (!old)
            rc = gw_error_set(err, GW_ENOMEM, "out of memory");
        else
            snprintf(old, dl + 32, "%s.old.%ld", dir, (long)getpid());
        if (rc == GW_OK && rename(dir, old) != 0)
            rc = gw_error_set(err, GW_EIO, "cannot move %s aside: %s", dir, strerror(errno));
    } else if (rc == GW_OK) {
        rmdir(dir);   /* an empty dir is replaced */
    }
    if (rc == GW_OK) {
        static const char *const sub[] = {"store", "wal", NULL};
        for (int i = 0; sub[i]; i++) {
            char *p = gw_db_path_join(tmp, sub[i]);
            int fd = p ? open(p, O_RDONLY | O_CLOEXEC) : -1;
            if (fd >= 0) {
                fsync(fd);
                close(fd);
            }
            free(p);
        }
    }
    if (rc == GW_OK && rename(tmp, dir) != 0) {
        rc = gw_error_set(err, GW_EIO, "cannot rename %s to %s: %s", tmp, dir, strerror(errno));
        if (old)
            rename(old, dir);
    }
    if (rc == GW_OK && old)
        gw_db_rmtree(old);
    if (rc != GW_OK && tmp)
        gw_db_rmtree(tmp);
    if (lock >= 0)
        close(lock);
    free(tmp);
    free(old);
    return rc;
}
