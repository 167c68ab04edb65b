/* tests/test_wal.c - write-ahead log: round trips across segments, fsync
 * modes, group commit from several threads, torn tails, CRC mismatches, bad
 * magic, truncation, size caps, and injected write/sync failures through
 * the gw_wal_io seam of wal/wal_int.h. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/wal.h"
#include "wal/wal_int.h"

/* ------------------------------------------------------------ fixtures */

struct fx {
    char dir[1024];            /* short enough to build sub-paths into PATH_MAX */
};

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb; (void)flag; (void)ftw;
    return remove(path);
}

static void restore_io(void)
{
    gw_wal_io.write = write;
    gw_wal_io.fdatasync = fdatasync;
}

static int setup(void **state)
{
    const char *base = getenv("GW_TEST_TMP");
    if (!base || !base[0]) base = "/tmp";
    mkdir(base, 0755);
    struct fx *f = calloc(1, sizeof *f);
    if (!f) return -1;
    snprintf(f->dir, sizeof f->dir, "%s/gwwal.XXXXXX", base);
    if (!mkdtemp(f->dir)) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    restore_io();
    nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(f);
    return 0;
}

/* ------------------------------------------------------------ helpers */

static void seg_path(char *buf, size_t n, const char *dir, uint32_t seg)
{
    snprintf(buf, n, "%s/%08u.wal", dir, seg);
}

static int seg_exists(const char *dir, uint32_t seg)
{
    char p[PATH_MAX];
    struct stat st;
    seg_path(p, sizeof p, dir, seg);
    return stat(p, &st) == 0;
}

static int64_t seg_size(const char *dir, uint32_t seg)
{
    char p[PATH_MAX];
    struct stat st;
    seg_path(p, sizeof p, dir, seg);
    if (stat(p, &st) != 0) return -1;
    return (int64_t)st.st_size;
}

static void write_file(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    if (len) assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
}

static void flip_byte(const char *path, uint64_t off)
{
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    uint8_t b;
    assert_int_equal(pread(fd, &b, 1, (off_t)off), 1);
    b ^= 0x5a;
    assert_int_equal(pwrite(fd, &b, 1, (off_t)off), 1);
    close(fd);
}

/* Deterministic records of varied sizes: empty, small, a few tens of KiB. */
static size_t rec_len(uint32_t i)
{
    switch (i % 17) {
    case 0: return 0;
    case 5: return 20000 + i % 5000;
    default: return (i * 7919u) % 1500;
    }
}

static uint8_t rec_type(uint32_t i) { return (uint8_t)(i * 31u + 7u); }

static void rec_fill(uint32_t i, uint8_t *buf, size_t len)
{
    uint64_t x = (uint64_t)i * 0x9E3779B97F4A7C15ull + 1;
    for (size_t k = 0; k < len; k++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        buf[k] = (uint8_t)x;
    }
}

static uint8_t scratch[32768];

static void append_rec(struct gw_wal *w, uint32_t i, uint64_t *pos)
{
    size_t len = rec_len(i);
    rec_fill(i, scratch, len);
    assert_int_equal(gw_wal_append(w, rec_type(i), scratch, len, pos), GW_OK);
}

/* Replay collector: expects records first..first+n-1 in order at pos[]. */
struct coll {
    uint32_t first, next, stop_at;
    const uint64_t *pos;     /* indexed by record number, may be NULL */
    uint64_t last_pos;
};

static int coll_cb(void *ud, uint8_t type, const uint8_t *payload, size_t len, uint64_t pos)
{
    struct coll *c = ud;
    uint8_t buf[32768];
    uint32_t i = c->next;
    assert_int_equal(type, rec_type(i));
    assert_int_equal(len, rec_len(i));
    rec_fill(i, buf, len);
    if (len) assert_memory_equal(payload, buf, len);
    if (c->pos) assert_int_equal(pos, c->pos[i]);
    assert_true(pos > c->last_pos);
    c->last_pos = pos;
    c->next++;
    if (c->stop_at && c->next == c->stop_at) return GW_ELIMIT;
    return GW_OK;
}

static struct gw_wal *open_wal(const char *dir, uint64_t seg_bytes, enum gw_fsync_mode mode, uint32_t batch_ms)
{
    struct gw_wal_opts o = {.dir = dir, .segment_bytes = seg_bytes, .fsync = mode, .batch_interval_ms = batch_ms};
    struct gw_wal *w = NULL;
    struct gw_error e = {0};
    int rc = gw_wal_open(&w, &o, &e);
    if (rc != GW_OK) fail_msg("gw_wal_open: %s", e.msg);
    assert_non_null(w);
    return w;
}

/* Appends records [first, first+n), committing every `every`, into pos[]. */
static void write_records(struct gw_wal *w, uint32_t first, uint32_t n, uint32_t every, uint64_t *pos)
{
    uint64_t prev = 0;
    for (uint32_t i = first; i < first + n; i++) {
        append_rec(w, i, &pos[i]);
        assert_true(pos[i] > prev);
        prev = pos[i];
        if ((i - first) % every == every - 1) assert_int_equal(gw_wal_commit(w, pos[i], NULL), GW_OK);
    }
    assert_int_equal(gw_wal_commit(w, prev, NULL), GW_OK);
}

static struct gw_wal_replay_stats replay_all(const char *dir, uint64_t from, struct coll *c)
{
    struct gw_wal_replay_stats st;
    struct gw_error e = {0};
    int rc = gw_wal_replay(dir, from, coll_cb, c, &st, &e);
    if (rc != GW_OK) fail_msg("gw_wal_replay: %s", e.msg);
    return st;
}

/* ------------------------------------------------------------ tests */

static void test_wal_format_bytes(void **state)
{
    struct fx *f = *state;
    struct gw_wal *w = open_wal(f->dir, 0, GW_FSYNC_ALWAYS, 0);
    uint64_t pos = 0;
    assert_int_equal(gw_wal_append(w, 1, "hi", 2, &pos), GW_OK);
    assert_int_equal(pos, 0x0000000100000008ull);
    assert_int_equal(gw_wal_commit(w, pos, NULL), GW_OK);
    gw_wal_close(w);

    static const uint8_t want[] = {0x47, 0x57, 0x57, 0x41, 0x4c, 0x00, 0x00, 0x01, 0x02, 0x00,
                                   0x00, 0x00, 0x14, 0x9f, 0xd9, 0xc1, 0x01, 0x68, 0x69};
    char p[PATH_MAX];
    seg_path(p, sizeof p, f->dir, 1);
    uint8_t got[64];
    int fd = open(p, O_RDONLY);
    assert_true(fd >= 0);
    ssize_t n = read(fd, got, sizeof got);
    close(fd);
    assert_int_equal(n, (ssize_t)sizeof want);
    assert_memory_equal(got, want, sizeof want);
}

static void test_wal_roundtrip_segments(void **state)
{
    struct fx *f = *state;
    enum { N = 3000, M = 500 };
    static uint64_t pos[N + M];
    struct gw_wal *w = open_wal(f->dir, 64 * 1024, GW_FSYNC_OFF, 0);
    write_records(w, 0, N, 10, pos);
    uint64_t disk = gw_wal_disk_bytes(w);
    gw_wal_close(w);

    uint32_t last_seg = (uint32_t)(pos[N - 1] >> 32);
    assert_int_equal(pos[0] >> 32, 1);
    assert_true(last_seg >= 4);
    uint64_t sum = 0;
    for (uint32_t s = 1; s <= last_seg; s++) {
        assert_true(seg_exists(f->dir, s));
        assert_true(seg_size(f->dir, s) <= 64 * 1024 || s == last_seg);
        sum += (uint64_t)seg_size(f->dir, s);
    }
    assert_int_equal(disk, sum);

    struct coll c = {.pos = pos};
    struct gw_wal_replay_stats st = replay_all(f->dir, 0, &c);
    assert_int_equal(c.next, N);
    assert_int_equal(st.records, N);
    assert_int_equal(st.segments, last_seg);
    assert_int_equal(st.corrupt, 0);
    assert_int_equal(st.removed_segments, 0);
    uint64_t payload = 0;
    for (uint32_t i = 0; i < N; i++) payload += rec_len(i);
    assert_int_equal(st.bytes, payload);

    /* Reopen: a new segment after the highest; records continue after. */
    w = open_wal(f->dir, 64 * 1024, GW_FSYNC_ALWAYS, 0);
    write_records(w, N, M, 7, pos);
    gw_wal_close(w);
    assert_int_equal(pos[N] >> 32, last_seg + 1);
    assert_int_equal(pos[N] & 0xffffffffu, 8);
    c = (struct coll){.pos = pos};
    st = replay_all(f->dir, 0, &c);
    assert_int_equal(c.next, N + M);
    assert_int_equal(st.corrupt, 0);

    /* from_pos starts at a record in the middle of a segment. */
    uint32_t k = 1234;
    c = (struct coll){.first = k, .next = k, .pos = pos};
    st = replay_all(f->dir, pos[k], &c);
    assert_int_equal(c.next, N + M);
    assert_int_equal(st.records, N + M - k);

    /* The callback's error stops replay and is returned as is. */
    c = (struct coll){.pos = pos, .stop_at = 10};
    struct gw_wal_replay_stats st2;
    assert_int_equal(gw_wal_replay(f->dir, 0, coll_cb, &c, &st2, NULL), GW_ELIMIT);
    assert_int_equal(c.next, 10);
}

static atomic_int n_syncs;
static int counting_fdatasync(int fd)
{
    atomic_fetch_add(&n_syncs, 1);
    return fdatasync(fd);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static void test_wal_fsync_modes(void **state)
{
    struct fx *f = *state;
    static uint64_t pos[400];
    enum gw_fsync_mode modes[] = {GW_FSYNC_ALWAYS, GW_FSYNC_BATCH, GW_FSYNC_OFF};
    for (int m = 0; m < 3; m++) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/mode%d", f->dir, m);
        gw_wal_io.fdatasync = counting_fdatasync;
        struct gw_wal *w = open_wal(dir, 1 << 20, modes[m], 10);
        atomic_store(&n_syncs, 0);
        for (uint32_t i = 0; i < 100; i++) {
            append_rec(w, i, &pos[i]);
            assert_int_equal(gw_wal_commit(w, pos[i], NULL), GW_OK);
        }
        int after_commits = atomic_load(&n_syncs);
        if (modes[m] == GW_FSYNC_ALWAYS) assert_int_equal(after_commits, 100);
        if (modes[m] == GW_FSYNC_OFF) assert_int_equal(after_commits, 0);
        /* The batch thread syncs what was written within a few intervals. */
        sleep_ms(200);
        int after_wait = atomic_load(&n_syncs);
        if (modes[m] == GW_FSYNC_BATCH) assert_true(after_wait >= 1);
        else assert_int_equal(after_wait, after_commits);
        write_records(w, 100, 300, 13, pos);
        gw_wal_close(w);
        restore_io();

        struct coll c = {.pos = pos};
        struct gw_wal_replay_stats st = replay_all(dir, 0, &c);
        assert_int_equal(c.next, 400);
        assert_int_equal(st.corrupt, 0);
    }
}

static void test_wal_torn_tail(void **state)
{
    struct fx *f = *state;
    enum { N = 193 };        /* record N-1 = 192 is a 20 KB record (192 % 17 == 5) */
    static uint64_t pos[N];
    struct gw_wal *w = open_wal(f->dir, 0, GW_FSYNC_ALWAYS, 0);
    write_records(w, 0, N, 50, pos);
    gw_wal_close(w);
    uint64_t at = pos[N - 1];
    size_t len = rec_len(N - 1);
    assert_true(len > 20000);

    char p[PATH_MAX];
    seg_path(p, sizeof p, f->dir, 1);
    uint64_t rec_off = at & 0xffffffffu;
    assert_int_equal(seg_size(f->dir, 1), (int64_t)(rec_off + 9 + len));
    assert_int_equal(truncate(p, (off_t)(rec_off + 9 + len / 2)), 0);

    struct coll c = {.pos = pos};
    struct gw_wal_replay_stats st = replay_all(f->dir, 0, &c);
    assert_int_equal(c.next, N - 1);
    assert_int_equal(st.corrupt, 1);
    assert_int_equal(st.truncated_bytes, 9 + len / 2);
    assert_int_equal(seg_size(f->dir, 1), (int64_t)rec_off);

    c = (struct coll){.pos = pos};
    st = replay_all(f->dir, 0, &c);
    assert_int_equal(c.next, N - 1);
    assert_int_equal(st.corrupt, 0);

    /* A partial header (4 of 9 bytes) is torn too. */
    uint64_t prev_off = pos[N - 2] & 0xffffffffu;
    assert_int_equal(truncate(p, (off_t)(prev_off + 4)), 0);
    c = (struct coll){.pos = pos};
    st = replay_all(f->dir, 0, &c);
    assert_int_equal(c.next, N - 2);
    assert_int_equal(st.corrupt, 1);
    assert_int_equal(st.truncated_bytes, 4);
    assert_int_equal(seg_size(f->dir, 1), (int64_t)prev_off);

    /* After repair, appends go to a fresh segment and replay stays clean. */
    w = open_wal(f->dir, 0, GW_FSYNC_ALWAYS, 0);
    uint64_t np;
    append_rec(w, N - 2, &np);
    pos[N - 2] = np;
    assert_int_equal(np >> 32, 2);
    assert_int_equal(gw_wal_commit(w, np, NULL), GW_OK);
    gw_wal_close(w);
    c = (struct coll){.pos = pos};
    st = replay_all(f->dir, 0, &c);
    assert_int_equal(c.next, N - 1);
    assert_int_equal(st.corrupt, 0);
}

static void test_wal_crc_mismatch(void **state)
{
    struct fx *f = *state;
    enum { N = 1500 };
    static uint64_t pos[N];
    struct gw_wal *w = open_wal(f->dir, 32 * 1024, GW_FSYNC_OFF, 0);
    write_records(w, 0, N, 25, pos);
    gw_wal_close(w);
    uint32_t last_seg = (uint32_t)(pos[N - 1] >> 32);
    assert_true(last_seg >= 5);

    /* A non-empty record in the middle of segment 2 (not its first). */
    uint32_t k = 0, first2 = UINT32_MAX;
    for (uint32_t i = 0; i < N; i++) {
        if ((pos[i] >> 32) != 2) continue;
        if (first2 == UINT32_MAX) first2 = i;
        else if (i > first2 + 1 && rec_len(i) > 10 && (i + 1 < N && (pos[i + 1] >> 32) == 2)) { k = i; break; }
    }
    assert_true(k > 0);
    char p[PATH_MAX];
    seg_path(p, sizeof p, f->dir, 2);
    int64_t size2 = seg_size(f->dir, 2);
    uint64_t off = pos[k] & 0xffffffffu;
    flip_byte(p, off + 9 + 3);

    struct coll c = {.pos = pos};
    struct gw_wal_replay_stats st = replay_all(f->dir, 0, &c);
    assert_int_equal(c.next, k);
    assert_int_equal(st.corrupt, 1);
    assert_int_equal(st.truncated_bytes, (uint64_t)size2 - off);
    assert_int_equal(st.removed_segments, last_seg - 2);
    assert_int_equal(seg_size(f->dir, 2), (int64_t)off);
    assert_true(seg_exists(f->dir, 1));
    for (uint32_t s = 3; s <= last_seg; s++) assert_false(seg_exists(f->dir, s));

    c = (struct coll){.pos = pos};
    st = replay_all(f->dir, 0, &c);
    assert_int_equal(c.next, k);
    assert_int_equal(st.corrupt, 0);

    /* A length field over the cap is corruption, not an allocation. */
    uint32_t j = k - 1;
    uint64_t joff = pos[j] & 0xffffffffu;
    flip_byte(p, joff + 3);   /* top byte of payload_len */
    c = (struct coll){.pos = pos};
    st = replay_all(f->dir, 0, &c);
    assert_int_equal(c.next, j);
    assert_int_equal(st.corrupt, 1);
    assert_int_equal(seg_size(f->dir, 2), (int64_t)joff);
}

static void test_wal_bad_magic_and_empty_segments(void **state)
{
    struct fx *f = *state;
    enum { N = 600 };
    static uint64_t pos[N];
    struct gw_wal *w = open_wal(f->dir, 32 * 1024, GW_FSYNC_OFF, 0);
    write_records(w, 0, N, 50, pos);
    gw_wal_close(w);
    uint32_t last_seg = (uint32_t)(pos[N - 1] >> 32);
    assert_true(last_seg >= 3);

    /* A zero-length segment after the last one: removed, not corruption. */
    char p[PATH_MAX];
    seg_path(p, sizeof p, f->dir, last_seg + 1);
    write_file(p, "", 0);
    struct coll c = {.pos = pos};
    struct gw_wal_replay_stats st = replay_all(f->dir, 0, &c);
    assert_int_equal(c.next, N);
    assert_int_equal(st.corrupt, 0);
    assert_false(seg_exists(f->dir, last_seg + 1));

    /* A segment holding part of the magic (crash while creating it). */
    write_file(p, "GWWA", 4);
    c = (struct coll){.pos = pos};
    st = replay_all(f->dir, 0, &c);
    assert_int_equal(c.next, N);
    assert_int_equal(st.corrupt, 1);
    assert_int_equal(st.truncated_bytes, 4);
    assert_false(seg_exists(f->dir, last_seg + 1));

    /* Bad magic in segment 2: only segment 1 survives. */
    uint32_t in_seg1 = 0;
    while (in_seg1 < N && (pos[in_seg1] >> 32) == 1) in_seg1++;
    seg_path(p, sizeof p, f->dir, 2);
    flip_byte(p, 1);
    c = (struct coll){.pos = pos};
    st = replay_all(f->dir, 0, &c);
    assert_int_equal(c.next, in_seg1);
    assert_int_equal(st.corrupt, 1);
    assert_int_equal(st.removed_segments, last_seg - 2);
    assert_true(seg_exists(f->dir, 1));
    for (uint32_t s = 2; s <= last_seg; s++) assert_false(seg_exists(f->dir, s));
}

static void test_wal_empty_and_missing_dir(void **state)
{
    struct fx *f = *state;
    struct coll c = {0};
    struct gw_wal_replay_stats st = replay_all(f->dir, 0, &c);
    assert_int_equal(st.records, 0);
    assert_int_equal(st.segments, 0);
    assert_int_equal(st.corrupt, 0);

    char sub[2048];
    snprintf(sub, sizeof sub, "%s/a/b/wal", f->dir);
    st = replay_all(sub, 0, &c);
    assert_int_equal(st.records, 0);
    struct stat sb;
    assert_int_equal(stat(sub, &sb), 0);
    assert_true(S_ISDIR(sb.st_mode));

    /* Files that are not canonical segment names are ignored. */
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/1.wal", sub);
    write_file(p, "junk", 4);
    snprintf(p, sizeof p, "%s/00000001.wal.tmp", sub);
    write_file(p, "junk", 4);
    st = replay_all(sub, 0, &c);
    assert_int_equal(st.segments, 0);
    assert_int_equal(st.corrupt, 0);

    /* Open on a missing dir creates it with segment 1; closing without
     * appends leaves just the magic. */
    snprintf(sub, sizeof sub, "%s/x/y", f->dir);
    struct gw_wal *w = open_wal(sub, 0, GW_FSYNC_BATCH, 0);
    assert_int_equal(gw_wal_commit(w, 0, NULL), GW_OK);
    gw_wal_close(w);
    assert_int_equal(seg_size(sub, 1), 8);
    st = replay_all(sub, 0, &c);
    assert_int_equal(st.segments, 1);
    assert_int_equal(st.records, 0);
    assert_int_equal(st.corrupt, 0);
}

static void test_wal_cut_and_truncate_before(void **state)
{
    struct fx *f = *state;
    enum { N = 800 };
    static uint64_t pos[N];
    struct gw_wal *w = open_wal(f->dir, 32 * 1024, GW_FSYNC_ALWAYS, 0);
    write_records(w, 0, 400, 40, pos);
    uint64_t next;
    assert_int_equal(gw_wal_cut(w, &next, NULL), GW_OK);
    uint32_t cut_seg = (uint32_t)(next >> 32);
    assert_int_equal(cut_seg, (pos[399] >> 32) + 1);
    assert_int_equal(next & 0xffffffffu, 8);
    assert_true(seg_exists(f->dir, cut_seg));
    /* Cutting an empty segment does not make another one. */
    uint64_t next2;
    assert_int_equal(gw_wal_cut(w, &next2, NULL), GW_OK);
    assert_int_equal(next2, next);
    write_records(w, 400, 400, 40, pos);
    assert_int_equal(pos[400], next);
    uint32_t last_seg = (uint32_t)(pos[N - 1] >> 32);
    assert_true(last_seg >= cut_seg + 2);

    /* Segments below 3 go; 3 and later stay. */
    assert_int_equal(gw_wal_truncate_before(w, ((uint64_t)3 << 32) | 100, NULL), GW_OK);
    assert_false(seg_exists(f->dir, 1));
    assert_false(seg_exists(f->dir, 2));
    for (uint32_t s = 3; s <= last_seg; s++) assert_true(seg_exists(f->dir, s));

    /* Everything before the cut. */
    assert_int_equal(gw_wal_truncate_before(w, next, NULL), GW_OK);
    for (uint32_t s = 1; s < cut_seg; s++) assert_false(seg_exists(f->dir, s));
    for (uint32_t s = cut_seg; s <= last_seg; s++) assert_true(seg_exists(f->dir, s));

    /* Never the segment being written. */
    assert_int_equal(gw_wal_truncate_before(w, UINT64_MAX, NULL), GW_OK);
    assert_true(seg_exists(f->dir, last_seg));
    for (uint32_t s = 1; s < last_seg; s++) assert_false(seg_exists(f->dir, s));
    assert_int_equal(gw_wal_disk_bytes(w), (uint64_t)seg_size(f->dir, last_seg));
    gw_wal_close(w);

    uint32_t first_left = 0;
    while ((pos[first_left] >> 32) != last_seg) first_left++;
    struct coll c = {.first = first_left, .next = first_left, .pos = pos};
    struct gw_wal_replay_stats st = replay_all(f->dir, 0, &c);
    assert_int_equal(c.next, N);
    assert_int_equal(st.corrupt, 0);
}

enum { THREADS = 4, PER_THREAD = 2000 };
struct worker {
    struct gw_wal *w;
    uint32_t id;
    uint64_t pos[PER_THREAD];
    int failures;
};

static void *worker_main(void *arg)
{
    struct worker *wk = arg;
    uint8_t buf[256];
    for (uint32_t s = 0; s < PER_THREAD; s++) {
        size_t len = 8 + (s * 37u + wk->id * 11u) % 200;
        memcpy(buf, &wk->id, 4);
        memcpy(buf + 4, &s, 4);
        for (size_t k = 8; k < len; k++) buf[k] = (uint8_t)(s + k + wk->id);
        if (gw_wal_append(wk->w, (uint8_t)wk->id, buf, len, &wk->pos[s]) != GW_OK) wk->failures++;
        else if (gw_wal_commit(wk->w, wk->pos[s], NULL) != GW_OK) wk->failures++;
    }
    return NULL;
}

struct conc_check {
    struct worker *wk;
    uint32_t next[THREADS];
    uint64_t last_pos, n;
};

static int conc_cb(void *ud, uint8_t type, const uint8_t *payload, size_t len, uint64_t pos)
{
    struct conc_check *cc = ud;
    uint32_t id, s;
    assert_true(len >= 8);
    memcpy(&id, payload, 4);
    memcpy(&s, payload + 4, 4);
    assert_true(id < THREADS);
    assert_int_equal(type, id);
    assert_int_equal(s, cc->next[id]);
    assert_int_equal(len, 8 + (s * 37u + id * 11u) % 200);
    for (size_t k = 8; k < len; k++) assert_int_equal(payload[k], (uint8_t)(s + k + id));
    assert_int_equal(pos, cc->wk[id].pos[s]);
    assert_true(pos > cc->last_pos);
    cc->last_pos = pos;
    cc->next[id]++;
    cc->n++;
    return GW_OK;
}

static void run_concurrent(const char *dir, enum gw_fsync_mode mode)
{
    static struct worker wk[THREADS];
    struct gw_wal *w = open_wal(dir, 64 * 1024, mode, 5);
    pthread_t th[THREADS];
    for (uint32_t t = 0; t < THREADS; t++) {
        memset(&wk[t], 0, sizeof wk[t]);
        wk[t].w = w;
        wk[t].id = t;
        assert_int_equal(pthread_create(&th[t], NULL, worker_main, &wk[t]), 0);
    }
    for (uint32_t t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    gw_wal_close(w);
    for (uint32_t t = 0; t < THREADS; t++) assert_int_equal(wk[t].failures, 0);

    struct conc_check cc = {.wk = wk};
    struct gw_wal_replay_stats st;
    assert_int_equal(gw_wal_replay(dir, 0, conc_cb, &cc, &st, NULL), GW_OK);
    assert_int_equal(cc.n, THREADS * PER_THREAD);
    for (uint32_t t = 0; t < THREADS; t++) assert_int_equal(cc.next[t], PER_THREAD);
    assert_int_equal(st.corrupt, 0);
    assert_true(st.segments > 1);
}

static void test_wal_concurrent_committers(void **state)
{
    struct fx *f = *state;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/always", f->dir);
    run_concurrent(dir, GW_FSYNC_ALWAYS);
    snprintf(dir, sizeof dir, "%s/batch", f->dir);
    run_concurrent(dir, GW_FSYNC_BATCH);
}

static void test_wal_too_large(void **state)
{
    struct fx *f = *state;
    struct gw_wal *w = open_wal(f->dir, 0, GW_FSYNC_OFF, 0);
    uint8_t small[4] = {0};
    uint64_t pos = 12345;
    assert_int_equal(gw_wal_append(w, 1, small, (size_t)GW_WAL_MAX_RECORD + 1, &pos), GW_ETOOLARGE);
    assert_int_equal(pos, 12345);
    assert_int_equal(gw_wal_append(w, 1, NULL, 3, &pos), GW_EINVAL);
    /* The WAL is still usable, and a 1 MiB record round-trips. */
    size_t big = 1u << 20;
    uint8_t *buf = malloc(big);
    assert_non_null(buf);
    for (size_t i = 0; i < big; i++) buf[i] = (uint8_t)(i * 13);
    assert_int_equal(gw_wal_append(w, 9, buf, big, &pos), GW_OK);
    assert_int_equal(gw_wal_commit(w, pos, NULL), GW_OK);
    gw_wal_close(w);

    struct gw_wal_replay_stats st;
    assert_int_equal(gw_wal_replay(f->dir, 0, NULL, NULL, &st, NULL), GW_OK);
    assert_int_equal(st.records, 1);
    assert_int_equal(st.bytes, big);
    free(buf);
}

static atomic_int writes_left;
static ssize_t failing_write(int fd, const void *buf, size_t n)
{
    if (atomic_fetch_sub(&writes_left, 1) <= 0) {
        errno = ENOSPC;
        return -1;
    }
    return write(fd, buf, n);
}

static int failing_fdatasync(int fd)
{
    (void)fd;
    errno = EIO;
    return -1;
}

static void test_wal_write_failure(void **state)
{
    struct fx *f = *state;
    static uint64_t pos[100];
    struct gw_wal *w = open_wal(f->dir, 0, GW_FSYNC_ALWAYS, 0);
    write_records(w, 0, 20, 1, pos);
    atomic_store(&writes_left, 0);
    gw_wal_io.write = failing_write;
    append_rec(w, 20, &pos[20]);
    struct gw_error e = {0};
    /* ENOSPC: a full disk, told apart from other failures (GW_EFULL) */
    assert_int_equal(gw_wal_commit(w, pos[20], &e), GW_EFULL);
    assert_int_equal(e.code, GW_EFULL);
    assert_non_null(strstr(e.msg, "No space"));
    /* Failed until reopened, even once writes would work again. */
    restore_io();
    uint64_t p2;
    assert_int_equal(gw_wal_append(w, 1, "x", 1, &p2), GW_EFULL);
    assert_int_equal(gw_wal_commit(w, pos[19], NULL), GW_EFULL);
    uint64_t np;
    assert_int_equal(gw_wal_cut(w, &np, NULL), GW_EFULL);
    gw_wal_close(w);

    struct coll c = {.pos = pos};
    struct gw_wal_replay_stats st = replay_all(f->dir, 0, &c);
    assert_int_equal(c.next, 20);
    assert_int_equal(st.corrupt, 0);

    /* A failed fdatasync fails the commit too (never pretend durability). */
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/sync", f->dir);
    w = open_wal(dir, 0, GW_FSYNC_ALWAYS, 0);
    gw_wal_io.fdatasync = failing_fdatasync;
    append_rec(w, 0, &pos[0]);
    assert_int_equal(gw_wal_commit(w, pos[0], &e), GW_EIO);
    assert_non_null(strstr(e.msg, "sync"));
    assert_int_equal(gw_wal_append(w, 1, "x", 1, &p2), GW_EIO);
    gw_wal_close(w);
    restore_io();

    /* Under BATCH the background sync failure fails later commits. */
    snprintf(dir, sizeof dir, "%s/batch", f->dir);
    w = open_wal(dir, 0, GW_FSYNC_BATCH, 5);
    gw_wal_io.fdatasync = failing_fdatasync;
    append_rec(w, 0, &pos[0]);
    assert_int_equal(gw_wal_commit(w, pos[0], NULL), GW_OK);
    int rc = GW_OK;
    for (int i = 0; i < 200 && rc == GW_OK; i++) {
        sleep_ms(5);
        rc = gw_wal_append(w, 1, "x", 1, &p2);
        if (rc == GW_OK) rc = gw_wal_commit(w, p2, NULL);
    }
    assert_int_equal(rc, GW_EIO);
    gw_wal_close(w);
    restore_io();
}

static atomic_int write_calls;
static ssize_t short_write(int fd, const void *buf, size_t n)
{
    if (atomic_fetch_add(&write_calls, 1) % 3 == 2) {
        errno = EINTR;
        return -1;
    }
    return write(fd, buf, n > 1 ? (n + 1) / 2 : n);
}

static void test_wal_short_writes_and_eintr(void **state)
{
    struct fx *f = *state;
    enum { N = 300 };
    static uint64_t pos[N];
    atomic_store(&write_calls, 0);
    gw_wal_io.write = short_write;
    struct gw_wal *w = open_wal(f->dir, 16 * 1024, GW_FSYNC_OFF, 0);
    write_records(w, 0, N, 9, pos);
    gw_wal_close(w);
    restore_io();
    assert_true(atomic_load(&write_calls) > 3 * N / 9);

    struct coll c = {.pos = pos};
    struct gw_wal_replay_stats st = replay_all(f->dir, 0, &c);
    assert_int_equal(c.next, N);
    assert_int_equal(st.corrupt, 0);
}

static void test_wal_bad_args(void **state)
{
    struct fx *f = *state;
    struct gw_wal *w = NULL;
    struct gw_wal_opts o = {.dir = f->dir, .fsync = (enum gw_fsync_mode)7};
    assert_int_equal(gw_wal_open(&w, &o, NULL), GW_EINVAL);
    assert_null(w);
    o.dir = NULL;
    o.fsync = GW_FSYNC_OFF;
    assert_int_equal(gw_wal_open(&w, &o, NULL), GW_EINVAL);
    /* A dir path that is a regular file. */
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/file", f->dir);
    write_file(p, "x", 1);
    o.dir = p;
    struct gw_error e = {0};
    assert_int_equal(gw_wal_open(&w, &o, &e), GW_EIO);
    assert_true(e.msg[0] != '\0');
    assert_int_equal(gw_wal_replay(p, 0, NULL, NULL, NULL, NULL), GW_EIO);
    gw_wal_close(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_wal_format_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wal_roundtrip_segments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wal_fsync_modes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wal_torn_tail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wal_crc_mismatch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wal_bad_magic_and_empty_segments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wal_empty_and_missing_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wal_cut_and_truncate_before, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wal_concurrent_committers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wal_too_large, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wal_write_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wal_short_writes_and_eintr, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wal_bad_args, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
