/* wal/check.c - read-only check of a WAL directory (gw_wal_check): the
 * same record walk as replay (format at the top of wal.c), but nothing is
 * repaired or deleted, every segment is read, and each problem is reported
 * with its segment and byte offset. A failing record at the end of the
 * last segment is a torn tail, which replay repairs silently: it is counted,
 * not reported. So is a failing record in the last segment whose header is
 * all zeros, with whatever follows it: after a power loss the unsynced tail
 * can read as a hole followed by blocks that did reach the disk. */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/wal.h"
#include "wal/wal_int.h"

static const uint8_t check_magic[GW_WAL_MAGIC_LEN] = {'G', 'W', 'W', 'A', 'L', 0, 0, 1};
static const uint8_t zero_hdr[GW_WAL_REC_HDR_LEN];

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Reads the whole segment file into *buf (size in *len). 1 read, 0 gone
 * (deleted meanwhile), or an error. */
static int slurp(const char *path, uint8_t **buf, size_t *len, struct gw_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        return gw_error_set(err, GW_EIO, "cannot open wal segment %s: %s", path, strerror(errno));
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return gw_error_set(err, GW_EIO, "cannot stat wal segment %s: %s", path, strerror(e));
    }
    size_t size = sb.st_size > 0 ? (size_t)sb.st_size : 0;
    uint8_t *b = malloc(size ? size : 1);
    if (!b) {
        close(fd);
        return gw_error_set(err, GW_ENOMEM, "out of memory reading %s", path);
    }
    size_t got = 0;
    while (got < size) {
        ssize_t k = pread(fd, b + got, size - got, (off_t)got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            int e = errno;
            close(fd);
            free(b);
            return gw_error_set(err, GW_EIO, "cannot read wal segment %s: %s", path, strerror(e));
        }
        if (k == 0)
            break;   /* shrank meanwhile: check what is there */
        got += (size_t)k;
    }
    close(fd);
    *buf = b;
    *len = got;
    return 1;
}

static void problem(gw_wal_problem_cb cb, void *ud, struct gw_wal_check_stats *st, uint32_t seg, uint64_t off,
                    const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static void problem(gw_wal_problem_cb cb, void *ud, struct gw_wal_check_stats *st, uint32_t seg, uint64_t off,
                    const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    st->problems++;
    if (cb)
        cb(ud, seg, off, msg);
}

/* Walks one segment's bytes. last: it is the newest segment. */
static int check_segment(uint32_t seg, const uint8_t *b, size_t size, int last, gw_wal_replay_cb rec_cb,
                         gw_wal_problem_cb prob_cb, void *ud, struct gw_wal_check_stats *st)
{
    if (size < GW_WAL_MAGIC_LEN || memcmp(b, check_magic, GW_WAL_MAGIC_LEN) != 0) {
        if (last && size < GW_WAL_MAGIC_LEN && memcmp(b, check_magic, size) == 0) {
            st->torn_tail = 1;
            st->torn_segment = seg;
            st->torn_offset = 0;
            st->torn_bytes = size;
            return GW_OK;
        }
        problem(prob_cb, ud, st, seg, 0, "bad segment magic (%zu bytes unreadable)", size);
        return GW_OK;
    }
    size_t off = GW_WAL_MAGIC_LEN;
    while (off < size) {
        size_t rest = size - off;
        uint32_t len = rest >= GW_WAL_REC_HDR_LEN ? le32(b + off) : 0;
        int short_hdr = rest < GW_WAL_REC_HDR_LEN;
        int past_end = !short_hdr && (size_t)len > rest - GW_WAL_REC_HDR_LEN;
        int too_big = !short_hdr && len > GW_WAL_MAX_RECORD;
        int bad_crc = !short_hdr && !past_end && !too_big &&
                      gw_crc32c(0, b + off + 8, 1 + (size_t)len) != le32(b + off + 4);
        if (!short_hdr && !past_end && !too_big && !bad_crc) {
            st->records++;
            st->bytes += len;
            if (rec_cb) {
                int rc = rec_cb(ud, b[off + 8], b + off + GW_WAL_REC_HDR_LEN, len, (uint64_t)seg << 32 | off);
                if (rc != GW_OK)
                    return rc;
            }
            off += GW_WAL_REC_HDR_LEN + (size_t)len;
            continue;
        }
        int at_end = short_hdr || past_end || off + GW_WAL_REC_HDR_LEN + (size_t)len == size;
        /* An all-zero header is no record ever written (an empty record's
         * CRC is not 0): blocks of the unsynced tail that a power cut lost
         * while later ones reached the disk. */
        int hole = !short_hdr && !memcmp(b + off, zero_hdr, GW_WAL_REC_HDR_LEN);
        if (last && (at_end || hole) && !too_big) {
            st->torn_tail = 1;
            st->torn_segment = seg;
            st->torn_offset = off;
            st->torn_bytes = rest;
            return GW_OK;
        }
        if (short_hdr)
            problem(prob_cb, ud, st, seg, off, "segment ends inside a record header (%zu bytes)", rest);
        else if (too_big)
            problem(prob_cb, ud, st, seg, off, "record length %u is over the %u-byte limit", len,
                    (unsigned)GW_WAL_MAX_RECORD);
        else if (past_end)
            problem(prob_cb, ud, st, seg, off, "record of %u bytes runs past the segment's end (%zu bytes left)",
                    len, rest - GW_WAL_REC_HDR_LEN);
        else
            problem(prob_cb, ud, st, seg, off, "record (type %u, %u bytes) fails its CRC", b[off + 8], len);
        if (rest > GW_WAL_REC_HDR_LEN + (size_t)len && !past_end && !too_big)
            problem(prob_cb, ud, st, seg, off + GW_WAL_REC_HDR_LEN + len,
                    "%zu bytes after a failed record not checked", rest - GW_WAL_REC_HDR_LEN - len);
        return GW_OK;
    }
    return GW_OK;
}

int gw_wal_check(const char *dir, gw_wal_replay_cb rec_cb, gw_wal_problem_cb prob_cb, void *ud,
                 struct gw_wal_check_stats *st, struct gw_error *err)
{
    struct gw_wal_check_stats local;
    if (!st)
        st = &local;
    memset(st, 0, sizeof *st);
    uint32_t *segs = NULL;
    size_t n = 0;
    int rc = gw_wal_segments(dir, &segs, &n, err);
    if (rc == GW_ENOTFOUND)
        return GW_OK;   /* no WAL yet */
    if (rc != GW_OK)
        return rc;
    size_t dl = strlen(dir);
    char *path = malloc(dl + 32);
    if (!path) {
        free(segs);
        return gw_error_set(err, GW_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n && rc == GW_OK; i++) {
        memcpy(path, dir, dl);
        path[dl] = '/';
        gw_wal_segment_name(path + dl + 1, 31, segs[i]);
        uint8_t *b = NULL;
        size_t len = 0;
        int r = slurp(path, &b, &len, err);
        if (r < 0) {
            rc = r;
            break;
        }
        if (r == 0 || len == 0) {
            free(b);
            continue;   /* deleted by a checkpoint, or created and not yet written */
        }
        st->segments++;
        rc = check_segment(segs[i], b, len, i + 1 == n, rec_cb, prob_cb, ud, st);
        free(b);
    }
    free(path);
    free(segs);
    return rc;
}
