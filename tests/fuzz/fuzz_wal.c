/* fuzz_wal.c - libFuzzer target for WAL replay (src/wal/wal.c) and the
 * read-only WAL checker (src/wal/check.c), with the db's record parsers
 * (src/db/record.c) on every record replay hands out, as at startup.
 *
 * Input: byte 0 is flags, the rest is segment bytes. The rest is cut into
 * segment files 00000001.wal, 00000002.wal, ... at every segment magic
 * "GWWAL\0\0\1" after its first byte (at most 8 segments), written into a
 * directory in memory (/dev/shm, else $TMPDIR or /tmp). Flag bit 0: first
 * give every record whose length fits a correct CRC, so mutations reach
 * the record payloads instead of failing the checksum.
 * Then, in order:
 *   gw_wal_check    must run (problems are reported, not returned);
 *   gw_wal_replay   must give the records check found valid when check
 *                   found no problem, and repair the rest;
 *   gw_wal_replay   again: nothing left to repair, the same records;
 *   gw_wal_check    after repair: no problem, no torn tail;
 *   gw_wal_open     + one append + commit + close, then a replay must see
 *                   that record last.
 * Build: cmake -B build-fuzz -DCMAKE_C_COMPILER=clang -DGW_FUZZ=ON (docs/fuzzing.md).
 * Seeds: tests/corpus/wal/ (segments written by the WAL writer, fuzz_make_seeds). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db/db_int.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/labels.h"
#include "gpuwatch/wal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_SEGS 8
#define GW_REC_HDR_LEN 9   /* u32 length, u32 crc, u8 type (src/wal/wal.c) */
static const uint8_t magic[8] = { 'G', 'W', 'W', 'A', 'L', 0, 0, 1 };
static char dir[256];

static void clean_dir(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[512];
    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
}

static void remove_dir(void)
{
    clean_dir();
    rmdir(dir);
}

static void make_dir(void)
{
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    if (base == NULL || *base == 0)
        base = "/tmp";
    snprintf(dir, sizeof dir, "%s/gw-fuzz-wal-%ld", base, (long)getpid());
    if (mkdir(dir, 0700) != 0 && access(dir, W_OK) != 0)
        abort();
    atexit(remove_dir);
}

static void write_segment(uint32_t seg, const uint8_t *b, size_t len)
{
    char name[32], path[512];
    gw_wal_segment_name(name, sizeof name, seg);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL || (len && fwrite(b, 1, len, f) != len))
        abort();
    fclose(f);
}

/* Gives every whole record of segment b a correct CRC. */
static void fix_crcs(uint8_t *b, size_t len)
{
    size_t off = sizeof magic;
    while (off + GW_REC_HDR_LEN <= len) {
        uint32_t n = (uint32_t)b[off] | (uint32_t)b[off + 1] << 8 | (uint32_t)b[off + 2] << 16 |
                     (uint32_t)b[off + 3] << 24;
        if (n > len - off - GW_REC_HDR_LEN)
            return;
        uint32_t c = gw_crc32c(0, b + off + 8, 1 + (size_t)n);
        for (int i = 0; i < 4; i++)
            b[off + 4 + (size_t)i] = (uint8_t)(c >> (8 * i));
        off += GW_REC_HDR_LEN + n;
    }
}

struct seen {
    uint64_t records, last_pos;
    uint8_t last_type;
    size_t last_len;
};

static int on_series(void *ud, uint64_t sid, const uint8_t *labels, size_t len)
{
    struct gw_label ls[GW_LABELS_MAX];
    size_t n;
    (void)ud;
    (void)sid;
    (void)gw_labels_decode(labels, len, ls, GW_LABELS_MAX, &n);
    return GW_OK;
}

static int on_sample(void *ud, uint64_t sid, int64_t t, double v)
{
    (void)ud;
    (void)sid;
    (void)t;
    (void)v;
    return GW_OK;
}

static int on_record(void *ud, uint8_t type, const uint8_t *p, size_t len, uint64_t pos)
{
    struct seen *s = ud;
    if (s->records > 0 && pos <= s->last_pos)
        abort();   /* positions increase */
    s->records++;
    s->last_pos = pos;
    s->last_type = type;
    s->last_len = len;
    int rc = GW_OK;
    if (type == GW_REC_SERIES)
        rc = gw_rec_series_each(p, len, on_series, NULL);
    else if (type == GW_REC_SAMPLES)
        rc = gw_rec_samples_each(p, len, on_sample, NULL);
    if (rc != GW_OK && rc != GW_ECORRUPT)
        abort();
    return GW_OK;
}

static void on_problem(void *ud, uint32_t segment, uint64_t offset, const char *what)
{
    (void)ud;
    (void)segment;
    (void)offset;
    if (what == NULL || *what == 0)
        abort();
}

static void check_and_replay(void)
{
    struct gw_wal_check_stats cs;
    struct gw_wal_replay_stats rs;
    struct gw_error err;
    struct seen c = { 0 }, r = { 0 }, r2 = { 0 };
    if (gw_wal_check(dir, on_record, on_problem, &c, &cs, &err) != GW_OK)
        abort();
    if (gw_wal_replay(dir, 0, on_record, &r, &rs, &err) != GW_OK)
        abort();
    if (cs.problems == 0 && !cs.torn_tail && (rs.corrupt || r.records != c.records))
        abort();   /* a clean check means nothing to repair */
    if (gw_wal_replay(dir, 0, on_record, &r2, &rs, &err) != GW_OK || rs.corrupt || r2.records != r.records)
        abort();   /* repair is complete the first time */
    memset(&c, 0, sizeof c);
    if (gw_wal_check(dir, on_record, on_problem, &c, &cs, &err) != GW_OK || cs.problems || cs.torn_tail ||
        c.records != r.records)
        abort();

    struct gw_wal_opts o = { .dir = dir, .segment_bytes = 0, .fsync = GW_FSYNC_OFF };
    struct gw_wal *w;
    uint64_t pos;
    if (gw_wal_open(&w, &o, &err) != GW_OK)
        abort();
    if (gw_wal_append(w, 7, "tail", 4, &pos) != GW_OK || gw_wal_commit(w, pos, &err) != GW_OK)
        abort();
    gw_wal_close(w);
    memset(&r2, 0, sizeof r2);
    if (gw_wal_replay(dir, 0, on_record, &r2, &rs, &err) != GW_OK || rs.corrupt || r2.records != r.records + 1 ||
        r2.last_pos != pos || r2.last_type != 7 || r2.last_len != 4)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (dir[0] == 0)
        make_dir();
    if (size < 1 || size > (4u << 20))
        return 0;
    int fix = data[0] & 1;
    uint8_t *b = malloc(size);
    if (b == NULL)
        return 0;
    memcpy(b, data + 1, size - 1);
    size_t len = size - 1, start = 0;
    uint32_t seg = 1;
    clean_dir();
    while (start < len) {
        size_t end = len;
        if (seg < MAX_SEGS) {
            uint8_t *m = len - start > 1 ? memmem(b + start + 1, len - start - 1, magic, sizeof magic) : NULL;
            if (m != NULL)
                end = (size_t)(m - b);
        }
        if (fix)
            fix_crcs(b + start, end - start);
        write_segment(seg++, b + start, end - start);
        start = end;
    }
    free(b);
    check_and_replay();
    clean_dir();
    return 0;
}
