/* tests/test_forward.c - forwarding: the cursor file, the answer policy
 * (ack / retry / drop), backoff and Retry-After, header and internal-series
 * checks, the WAL hold on segment deletion, the WAL reader (batches split
 * inside a record and resumed, torn tails, internal series left out,
 * labels from the callback), segment release past the disk bound, and a
 * running forwarder that releases segments while its destination is down. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "db_fixture.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "forward/forward_int.h"
#include "gpuwatch/arena.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/db.h"
#include "gpuwatch/labels.h"
#include "gpuwatch/rw.h"
#include "gpuwatch/wal.h"

struct fx {
    char dir[1024];
    char wal[1100];
};

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb; (void)flag; (void)ftw;
    return remove(path);
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    if (!f) return -1;
    if (gw_fx_mkdtemp(f->dir, sizeof f->dir, "gwfwd") != 0) {
        free(f);
        return -1;
    }
    snprintf(f->wal, sizeof f->wal, "%s/wal", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(f);
    return 0;
}

/* Canonical labels of {__name__=name, host=h}. */
static size_t canon(uint8_t *out, const char *name, const char *host)
{
    struct gw_label ls[2] = {{"__name__", 8, name, (uint32_t)strlen(name)}, {"host", 4, host, (uint32_t)strlen(host)}};
    return gw_labels_encode(ls, 2, out);
}

/* Appends a SERIES record for sid with the labels, committed. */
static void put_series(struct gw_wal *w, uint64_t sid, const char *name, const char *host)
{
    uint8_t lab[256];
    struct gw_buf b;
    gw_buf_init(&b, 0);
    size_t n = canon(lab, name, host);
    assert_int_equal(gw_rec_series_add(&b, sid, lab, n), GW_OK);
    uint64_t pos;
    assert_int_equal(gw_wal_append(w, GW_REC_SERIES, b.data, b.len, &pos), GW_OK);
    assert_int_equal(gw_wal_commit(w, pos, NULL), GW_OK);
    gw_buf_free(&b);
}

/* Appends a SAMPLES record of n samples (sid sids[i % nsids], t0 + i, value i). */
static void put_samples(struct gw_wal *w, const uint64_t *sids, size_t nsids, int64_t t0, size_t n)
{
    struct gw_buf b;
    gw_buf_init(&b, 0);
    assert_int_equal(gw_rec_samples_begin(&b, t0), GW_OK);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(gw_rec_samples_add(&b, t0, sids[i % nsids], t0 + (int64_t)i, (double)i), GW_OK);
    uint64_t pos;
    assert_int_equal(gw_wal_append(w, GW_REC_SAMPLES, b.data, b.len, &pos), GW_OK);
    assert_int_equal(gw_wal_commit(w, pos, NULL), GW_OK);
    gw_buf_free(&b);
}

static struct gw_wal *wal_open(const char *dir, uint64_t seg_bytes, uint64_t (*hold)(void *), void *ud)
{
    struct gw_wal *w = NULL;
    struct gw_wal_opts o = {.dir = dir, .segment_bytes = seg_bytes, .fsync = GW_FSYNC_OFF, .hold = hold, .hold_ud = ud};
    assert_int_equal(gw_wal_open(&w, &o, NULL), GW_OK);
    return w;
}

/* Decodes a batch: samples' timestamps and the __name__ of each into out. */
struct got {
    int64_t t[64];
    char name[64][32];
    size_t n;
};
static void decode_batch(const struct gw_fwd_batch *b, struct got *g)
{
    struct gw_arena a;
    struct gw_rw_request req;
    struct gw_error e = {0};
    gw_arena_init(&a, 0, 0);
    assert_int_equal(gw_rw_decode(b->pb.data, b->pb.len, 1, &a, &req, &e), GW_OK);
    g->n = 0;
    for (size_t i = 0; i < req.n_series; i++) {
        const struct gw_rw_series *s = &req.series[i];
        for (uint32_t j = 0; j < s->n_samples && g->n < 64; j++) {
            g->t[g->n] = s->samples[j].t;
            for (uint32_t k = 0; k < s->n_labels; k++)
                if (s->labels[k].name_len == 8 && !memcmp(s->labels[k].name, "__name__", 8))
                    snprintf(g->name[g->n], 32, "%.*s", (int)s->labels[k].value_len, s->labels[k].value);
            g->n++;
        }
    }
    gw_arena_free(&a);
}

/* ------------------------------------------------------------- policy */

static void test_cursor_file(void **state)
{
    struct fx *f = *state;
    char path[1200];
    struct gw_error e = {0};
    gw_fwd_cursor_path(path, sizeof path, f->dir, "http://a:1/w");
    struct gw_fwd_cursor c = {0}, w = {7, 123456, 42};
    assert_int_equal(gw_fwd_cursor_load(path, "http://a:1/w", &c, &e), GW_ENOTFOUND);
    assert_int_equal(gw_fwd_cursor_save(path, "http://a:1/w", &w, &e), GW_OK);
    assert_int_equal(gw_fwd_cursor_load(path, "http://a:1/w", &c, &e), GW_OK);
    assert_int_equal(c.seg, 7);
    assert_int_equal(c.off, 123456);
    assert_int_equal(c.skip, 42);
    assert_int_equal(gw_fwd_cursor_load(path, "http://b:1/w", &c, &e), GW_ECORRUPT);
    assert_non_null(strstr(e.msg, "another URL"));
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("gpuwatch-forward-cursor 1\nurl http://a:1/w\nposition 7 x 1\n", fp);
    fclose(fp);
    assert_int_equal(gw_fwd_cursor_load(path, "http://a:1/w", &c, &e), GW_ECORRUPT);
    char other[1200];
    gw_fwd_cursor_path(other, sizeof other, f->dir, "http://b:1/w");
    assert_string_not_equal(path, other);
}

static void test_policy(void **state)
{
    (void)state;
    assert_int_equal(gw_fwd_classify(GW_OK, 200), GW_FWD_ACK);
    assert_int_equal(gw_fwd_classify(GW_OK, 204), GW_FWD_ACK);
    assert_int_equal(gw_fwd_classify(GW_OK, 500), GW_FWD_RETRY);
    assert_int_equal(gw_fwd_classify(GW_OK, 503), GW_FWD_RETRY);
    assert_int_equal(gw_fwd_classify(GW_OK, 429), GW_FWD_RETRY);
    assert_int_equal(gw_fwd_classify(GW_EIO, 0), GW_FWD_RETRY);
    assert_int_equal(gw_fwd_classify(GW_ETIMEOUT, 0), GW_FWD_RETRY);
    assert_int_equal(gw_fwd_classify(GW_OK, 400), GW_FWD_DROP);
    assert_int_equal(gw_fwd_classify(GW_OK, 404), GW_FWD_DROP);
    assert_int_equal(gw_fwd_classify(GW_OK, 413), GW_FWD_DROP);

    uint32_t b = 0, seq[10];
    for (int i = 0; i < 10; i++) seq[i] = b = gw_fwd_backoff_next(b, 30, 5000);
    assert_int_equal(seq[0], 30);
    assert_int_equal(seq[1], 60);
    assert_int_equal(seq[5], 960);
    assert_int_equal(seq[7], 3840);
    assert_int_equal(seq[8], 5000);
    assert_int_equal(seq[9], 5000);

    int64_t now = 1700000000000;   /* Tue, 14 Nov 2023 22:13:20 GMT */
    assert_int_equal(gw_fwd_retry_after_ms("2", 1, now), 2000);
    assert_int_equal(gw_fwd_retry_after_ms("0", 1, now), 0);
    assert_int_equal(gw_fwd_retry_after_ms("999999", 6, now), 3600 * 1000);
    const char *date = "Tue, 14 Nov 2023 22:13:50 GMT";
    assert_int_equal(gw_fwd_retry_after_ms(date, strlen(date), now), 30000);
    assert_int_equal(gw_fwd_retry_after_ms("soon", 4, now), -1);
    assert_int_equal(gw_fwd_retry_after_ms("5s", 2, now), -1);
    assert_int_equal(gw_fwd_retry_after_ms(NULL, 0, now), -1);
}

static void test_headers_and_internal(void **state)
{
    (void)state;
    char buf[256];
    const char *n, *v;
    struct gw_error e = {0};
    assert_int_equal(gw_fwd_header_parse("X-Scope-OrgID:  tenant-1 ", buf, sizeof buf, &n, &v, &e), GW_OK);
    assert_string_equal(n, "X-Scope-OrgID");
    assert_string_equal(v, "tenant-1");
    assert_int_equal(gw_fwd_header_parse("no colon", buf, sizeof buf, &n, &v, &e), GW_EINVAL);
    assert_int_equal(gw_fwd_header_parse("Bad Name: x", buf, sizeof buf, &n, &v, &e), GW_EINVAL);
    assert_int_equal(gw_fwd_header_parse("content-type: x", buf, sizeof buf, &n, &v, &e), GW_EINVAL);
    assert_non_null(strstr(e.msg, "set by gpuwatch"));
    assert_int_equal(gw_fwd_header_parse("X: a\nb", buf, sizeof buf, &n, &v, &e), GW_EINVAL);

    uint8_t lab[256];
    assert_true(gw_fwd_is_internal(lab, canon(lab, "ALERTS", "n1")));
    assert_true(gw_fwd_is_internal(lab, canon(lab, "gpuwatch_checkpoint_phase", "n1")));
    assert_true(gw_fwd_is_internal(lab, canon(lab, "gpuwatch_node_activity", "n1")));
    assert_false(gw_fwd_is_internal(lab, canon(lab, "ALERTS_X", "n1")));
    assert_false(gw_fwd_is_internal(lab, canon(lab, "DCGM_FI_DEV_XID_ERRORS", "n1")));

    struct gw_fwd_dest_opts d;
    gw_fwd_dest_opts_default(&d);
    d.url = "http://127.0.0.1:1/api/v1/write";
    assert_int_equal(gw_fwd_check_dest(&d, &e), GW_OK);
    d.protocol = 2;
    assert_int_equal(gw_fwd_check_dest(&d, &e), GW_OK);
    d.protocol = 3;
    assert_int_equal(gw_fwd_check_dest(&d, &e), GW_EINVAL);
    d.protocol = 1;
    d.url = "ftp://x/";
    assert_int_equal(gw_fwd_check_dest(&d, &e), GW_EUNSUPPORTED);
}

/* ------------------------------------------------------------ the WAL */

static uint64_t hold_at;
static uint64_t test_hold(void *ud)
{
    (void)ud;
    return hold_at;
}

static void test_wal_hold(void **state)
{
    struct fx *f = *state;
    uint64_t sids[1] = {1};
    struct gw_wal *w = wal_open(f->wal, 256, test_hold, NULL);
    put_series(w, 1, "m", "n1");
    for (int i = 0; i < 6; i++) {
        put_samples(w, sids, 1, 1000 * i, 10);
        uint64_t next;
        assert_int_equal(gw_wal_cut(w, &next, NULL), GW_OK);
    }
    uint32_t *segs = NULL;
    size_t n = 0;
    assert_int_equal(gw_wal_segments(f->wal, &segs, &n, NULL), GW_OK);
    uint32_t first = segs[0], last = segs[n - 1];
    free(segs);
    assert_true(last - first >= 5);
    hold_at = (uint64_t)(first + 2) << 32;          /* a reader still needs first + 2 */
    assert_int_equal(gw_wal_truncate_before(w, (uint64_t)last << 32, NULL), GW_OK);
    assert_int_equal(gw_wal_segments(f->wal, &segs, &n, NULL), GW_OK);
    assert_int_equal(segs[0], first + 2);
    free(segs);
    hold_at = UINT64_MAX;                            /* nobody: down to the checkpoint's position */
    assert_int_equal(gw_wal_truncate_before(w, (uint64_t)last << 32, NULL), GW_OK);
    assert_int_equal(gw_wal_segments(f->wal, &segs, &n, NULL), GW_OK);
    assert_int_equal(segs[0], last);
    free(segs);
    gw_wal_close(w);
}

static int labels_from_store(void *ud, uint64_t sid, struct gw_buf *out, struct gw_error *err)
{
    (void)ud;
    (void)err;
    uint8_t lab[256];
    if (sid != 9) return GW_ENOTFOUND;
    return gw_buf_append(out, lab, canon(lab, "from_store", "n9"));
}

static void test_reader_batches(void **state)
{
    struct fx *f = *state;
    struct gw_wal *w = wal_open(f->wal, 1 << 20, NULL, NULL);
    put_series(w, 1, "gpu_temp", "n1");
    put_series(w, 2, "ALERTS", "n1");
    uint64_t s12[2] = {1, 2};
    put_samples(w, s12, 2, 1000, 10);    /* t 1000..1009: even -> gpu_temp, odd -> ALERTS */

    struct gw_fwd_reader r;
    struct gw_fwd_batch b;
    struct gw_error e = {0};
    struct got g;
    assert_int_equal(gw_fwd_reader_init(&r, f->wal, 0), GW_OK);
    r.labels = labels_from_store;
    gw_fwd_batch_init(&b);
    struct gw_fwd_cursor c;
    assert_int_equal(gw_fwd_first_cursor(f->wal, &c, &e), GW_OK);

    /* 3 samples, then the batch is full inside the record */
    assert_int_equal(gw_fwd_read_batch(&r, &c, 3, &b, &e), GW_OK);
    assert_int_equal(b.n, 3);
    assert_int_equal(b.filtered, 2);
    assert_false(b.caught_up);
    decode_batch(&b, &g);
    assert_int_equal(g.t[0], 1000);
    assert_int_equal(g.t[2], 1004);
    assert_string_equal(g.name[1], "gpu_temp");
    assert_int_equal(b.end.skip, 5);     /* samples 0..4 consumed; 5 is next */
    c = b.end;
    assert_int_equal(gw_fwd_read_batch(&r, &c, 100, &b, &e), GW_OK);
    assert_int_equal(b.n, 2);
    assert_true(b.caught_up);
    assert_int_equal(b.max_t, 1008);
    c = b.end;
    assert_int_equal(c.skip, 0);

    /* a sid whose SERIES record is gone: labels from the callback; unknown: counted */
    uint64_t s9[2] = {9, 77};
    put_samples(w, s9, 2, 2000, 4);
    assert_int_equal(gw_fwd_read_batch(&r, &c, 100, &b, &e), GW_OK);
    assert_int_equal(b.n, 2);
    assert_int_equal(b.missing, 2);
    decode_batch(&b, &g);
    assert_string_equal(g.name[0], "from_store");
    c = b.end;

    /* a half-written record at the end of the newest segment: wait, no error */
    char path[1300], name[32];
    gw_wal_segment_name(name, sizeof name, c.seg);
    snprintf(path, sizeof path, "%s/%s", f->wal, name);
    int fd = open(path, O_WRONLY | O_APPEND);
    assert_true(fd >= 0);
    uint8_t torn[5] = {100, 0, 0, 0, 1};
    assert_int_equal(write(fd, torn, sizeof torn), (ssize_t)sizeof torn);
    close(fd);
    assert_int_equal(gw_fwd_read_batch(&r, &c, 100, &b, &e), GW_OK);
    assert_int_equal(b.n, 0);
    assert_true(b.caught_up);
    assert_int_equal(b.end.off, c.off);
    gw_wal_close(w);

    /* the WAL reopened after a crash: that torn tail is in an older segment now */
    w = wal_open(f->wal, 1 << 20, NULL, NULL);
    put_samples(w, s12, 1, 3000, 2);
    assert_int_equal(gw_fwd_read_batch(&r, &c, 100, &b, &e), GW_OK);
    assert_int_equal(b.n, 2);
    assert_true(b.end.seg > c.seg);
    decode_batch(&b, &g);
    assert_int_equal(g.t[1], 3001);

    /* include_internal: ALERTS goes too */
    struct gw_fwd_reader r2;
    assert_int_equal(gw_fwd_reader_init(&r2, f->wal, 1), GW_OK);
    assert_int_equal(gw_fwd_first_cursor(f->wal, &c, &e), GW_OK);
    assert_int_equal(gw_fwd_read_batch(&r2, &c, 100, &b, &e), GW_OK);
    assert_int_equal(b.filtered, 0);
    assert_int_equal(b.n, 10 + 2);   /* sids 9 and 77 unknown here (no callback) */
    gw_fwd_reader_free(&r2);

    gw_wal_close(w);
    gw_fwd_batch_free(&b);
    gw_fwd_reader_free(&r);
}

/* A batch as "name:host t v;" per sample, grouped by series in the order
 * the series first appear, each series' samples in batch order. */
static void batch_text(const struct gw_fwd_batch *b, int version, char *out, size_t cap, size_t *n_series)
{
    struct gw_arena a;
    struct gw_rw_request req;
    struct gw_error e = {0};
    gw_arena_init(&a, 0, 0);
    assert_int_equal(gw_rw_decode(b->pb.data, b->pb.len, version, &a, &req, &e), GW_OK);
    size_t len = 0, k = 0;
    char seen[64][64];
    out[0] = 0;
    for (size_t i = 0; i < req.n_series; i++) {
        const struct gw_rw_series *s = &req.series[i];
        char key[64];
        assert_int_equal(s->n_labels, 2);
        snprintf(key, sizeof key, "%.*s:%.*s", (int)s->labels[0].value_len, s->labels[0].value,
                 (int)s->labels[1].value_len, s->labels[1].value);
        size_t j = 0;
        while (j < k && strcmp(seen[j], key)) j++;
        if (j < k) continue;          /* v1: taken with the series' first sample */
        assert_true(k < 64);
        snprintf(seen[k++], 64, "%s", key);
        for (size_t x = i; x < req.n_series; x++) {
            const struct gw_rw_series *y = &req.series[x];
            char kx[64];
            snprintf(kx, sizeof kx, "%.*s:%.*s", (int)y->labels[0].value_len, y->labels[0].value,
                     (int)y->labels[1].value_len, y->labels[1].value);
            if (strcmp(kx, key)) continue;
            for (uint32_t m = 0; m < y->n_samples; m++)
                len += (size_t)snprintf(out + len, cap - len, "%s %lld %g;", key, (long long)y->samples[m].t,
                                        y->samples[m].v);
            assert_true(len < cap);
        }
    }
    *n_series = k;
    gw_arena_free(&a);
}

/* Protocol 2: the batch is one io.prometheus.write.v2.Request that decodes
 * to exactly the samples protocol 1 sends, one TimeSeries per series. */
static void test_reader_v2(void **state)
{
    struct fx *f = *state;
    struct gw_wal *w = wal_open(f->wal, 1 << 20, NULL, NULL);
    put_series(w, 1, "gpu_temp", "n1");
    put_series(w, 2, "gpu_power", "n1");
    put_series(w, 3, "gpu_temp", "n2");
    put_series(w, 4, "ALERTS", "n1");
    uint64_t s1234[4] = {1, 2, 3, 4}, s319[3] = {3, 1, 9};
    put_samples(w, s1234, 4, 1000, 13);
    put_samples(w, s319, 3, 2000, 8);

    struct gw_fwd_reader r1, r2;
    struct gw_fwd_batch b1, b2;
    struct gw_error e = {0};
    assert_int_equal(gw_fwd_reader_init(&r1, f->wal, 0), GW_OK);
    assert_int_equal(gw_fwd_reader_init(&r2, f->wal, 0), GW_OK);
    r1.labels = r2.labels = labels_from_store;
    r2.protocol = 2;
    gw_fwd_batch_init(&b1);
    gw_fwd_batch_init(&b2);
    static char t1[8192], t2[8192];
    for (uint64_t max = 1; max <= 30; max += 4) {      /* batches ending inside and between records */
        struct gw_fwd_cursor c1, c2;
        assert_int_equal(gw_fwd_first_cursor(f->wal, &c1, &e), GW_OK);
        c2 = c1;
        uint64_t total = 0;
        for (int guard = 0; guard < 100; guard++) {
            assert_int_equal(gw_fwd_read_batch(&r1, &c1, max, &b1, &e), GW_OK);
            assert_int_equal(gw_fwd_read_batch(&r2, &c2, max, &b2, &e), GW_OK);
            assert_int_equal(b1.n, b2.n);
            assert_int_equal(b1.max_t, b2.max_t);
            assert_int_equal(b1.filtered, b2.filtered);
            assert_int_equal(b1.end.off, b2.end.off);
            assert_int_equal(b1.end.skip, b2.end.skip);
            size_t n1, n2;
            batch_text(&b1, 1, t1, sizeof t1, &n1);
            batch_text(&b2, 2, t2, sizeof t2, &n2);
            assert_string_equal(t1, t2);
            assert_int_equal(n1, n2);
            assert_int_equal(b2.n_series, n2);       /* one TimeSeries per series */
            total += b2.n;
            c1 = b1.end;
            c2 = b2.end;
            if (b1.caught_up) break;
        }
        assert_int_equal(total, 13 - 3 + 8);         /* ALERTS left out */
    }
    /* the whole WAL in one batch: gpu_temp:n1 has 1000,1004,1008,1012,2001,2004,2007 */
    struct gw_fwd_cursor c;
    size_t ns;
    assert_int_equal(gw_fwd_first_cursor(f->wal, &c, &e), GW_OK);
    assert_int_equal(gw_fwd_read_batch(&r2, &c, 100, &b2, &e), GW_OK);
    batch_text(&b2, 2, t2, sizeof t2, &ns);
    assert_int_equal(ns, 4);
    assert_non_null(strstr(t2, "gpu_temp:n1 1000 0;gpu_temp:n1 1004 4;gpu_temp:n1 1008 8;gpu_temp:n1 1012 12;"
                               "gpu_temp:n1 2001 1;gpu_temp:n1 2004 4;gpu_temp:n1 2007 7;gpu_power"));
    assert_non_null(strstr(t2, "from_store:n9 2002 2;from_store:n9 2005 5;"));
    gw_wal_close(w);
    gw_fwd_batch_free(&b1);
    gw_fwd_batch_free(&b2);
    gw_fwd_reader_free(&r1);
    gw_fwd_reader_free(&r2);
}

/* Three full segments of 20 samples each, then an open one. */
static struct gw_wal *three_segments(struct fx *f, uint64_t (*hold)(void *), void *ud)
{
    uint64_t sids[1] = {1};
    struct gw_wal *w = wal_open(f->wal, 1 << 20, hold, ud);
    put_series(w, 1, "m", "n1");
    for (int i = 0; i < 3; i++) {
        put_samples(w, sids, 1, 10000 * (i + 1), 20);
        uint64_t next;
        assert_int_equal(gw_wal_cut(w, &next, NULL), GW_OK);
    }
    return w;
}

static void test_release_and_pending(void **state)
{
    struct fx *f = *state;
    struct gw_wal *w = three_segments(f, NULL, NULL);
    struct gw_fwd_reader r;
    struct gw_error e = {0};
    assert_int_equal(gw_fwd_reader_init(&r, f->wal, 0), GW_OK);
    struct gw_fwd_cursor c, next;
    assert_int_equal(gw_fwd_first_cursor(f->wal, &c, &e), GW_OK);
    size_t nseg = 0;
    uint64_t all = gw_fwd_pending_bytes(f->wal, &c, &nseg);
    assert_int_equal(nseg, 4);
    assert_true(all > 0);
    struct gw_fwd_batch b;
    gw_fwd_batch_init(&b);
    assert_int_equal(gw_fwd_read_batch(&r, &c, 5, &b, &e), GW_OK);   /* 5 of the first 20 sent */
    assert_int_equal(b.end.skip, 5);
    c = b.end;
    gw_fwd_batch_free(&b);
    uint64_t n = 0;
    assert_int_equal(gw_fwd_release_segment(&r, &c, &n, &next, &e), GW_OK);
    assert_int_equal(n, 15);
    assert_int_equal(next.seg, c.seg + 1);
    assert_int_equal(next.off, 8);
    assert_true(gw_fwd_pending_bytes(f->wal, &next, &nseg) < all);
    assert_int_equal(nseg, 3);
    gw_wal_close(w);
    gw_fwd_reader_free(&r);
}

/* A destination that refuses connections, with a bound below the WAL's
 * size: the forwarder releases the oldest segments (counting their
 * samples) and its hold moves up so a checkpoint may delete them. */
static void test_forwarder_bound(void **state)
{
    struct fx *f = *state;
    struct gw_fwd_opts o;
    gw_fwd_opts_default(&o);
    char st[1200];
    snprintf(st, sizeof st, "%s/forward", f->dir);
    o.wal_dir = f->wal;
    o.state_dir = st;
    o.n_dests = 1;
    gw_fwd_dest_opts_default(&o.dests[0]);
    o.dests[0].url = "http://127.0.0.1:1/api/v1/write";   /* nothing listens on port 1 */
    o.dests[0].max_pending_bytes = 1;
    o.dests[0].http.connect_timeout_ms = 200;
    o.min_backoff_ms = o.max_backoff_ms = 10;
    o.poll_ms = 10;
    mkdir(f->wal, 0755);
    struct gw_fwd *fw = NULL;
    struct gw_error e = {0};
    assert_int_equal(gw_fwd_new(&fw, &o, &e), GW_OK);
    struct gw_wal *w = three_segments(f, gw_fwd_hold, fw);
    uint32_t *segs = NULL;
    size_t n = 0;
    assert_int_equal(gw_wal_segments(f->wal, &segs, &n, NULL), GW_OK);
    uint32_t newest = segs[n - 1];
    free(segs);
    assert_true(gw_fwd_hold(fw) < ((uint64_t)newest << 32));
    assert_int_equal(gw_fwd_start(fw, NULL, NULL, &e), GW_OK);
    struct gw_fwd_stats s;
    for (int i = 0; i < 500; i++) {
        assert_int_equal(gw_fwd_stats(fw, 0, &s), GW_OK);
        if (s.dropped_max_pending >= 60 && gw_fwd_hold(fw) == ((uint64_t)newest << 32)) break;
        usleep(10000);
    }
    assert_int_equal(s.dropped_max_pending, 60);
    uint64_t one[1] = {1};
    put_samples(w, one, 1, 50000, 5);               /* the newest segment is never released */
    for (int i = 0; i < 500 && s.batches_retried < 3; i++) {
        usleep(10000);
        assert_int_equal(gw_fwd_stats(fw, 0, &s), GW_OK);
    }
    assert_int_equal(s.dropped_max_pending, 60);
    assert_int_equal(s.samples_sent, 0);
    assert_true(s.batches_retried >= 3);
    assert_true(s.pending_bytes > 0);
    assert_true(s.last_error_s > 0);
    assert_int_equal(gw_fwd_hold(fw), (uint64_t)newest << 32);
    gw_fwd_stop(fw);
    /* the checkpoint may now delete everything before the newest segment */
    assert_int_equal(gw_wal_truncate_before(w, (uint64_t)newest << 32, NULL), GW_OK);
    assert_int_equal(gw_wal_segments(f->wal, &segs, &n, NULL), GW_OK);
    assert_int_equal(n, 1);
    free(segs);
    gw_wal_close(w);
    gw_fwd_free(fw);

    /* restarted: resumes from the cursor file (the newest segment) */
    assert_int_equal(gw_fwd_new(&fw, &o, &e), GW_OK);
    assert_int_equal(gw_fwd_hold(fw), (uint64_t)newest << 32);
    gw_fwd_free(fw);
}

/* A one-connection-at-a-time HTTP server answering requests with the
 * statuses of script[] in turn (then 204), closing after each. */
struct fake {
    int fd;
    uint16_t port;
    const int *script;
    size_t n_script, served;
    pthread_t th;
};

static void *fake_main(void *arg)
{
    struct fake *s = arg;
    for (;;) {
        int c = accept(s->fd, NULL, NULL);
        if (c < 0) return NULL;
        char buf[1 << 16];
        size_t got = 0;
        long need = -1;
        while (got < sizeof buf) {
            ssize_t k = read(c, buf + got, sizeof buf - got);
            if (k <= 0) break;
            got += (size_t)k;
            char *end = memmem(buf, got, "\r\n\r\n", 4);
            if (end && need < 0) {
                char *cl = strcasestr(buf, "Content-Length:");
                need = (end - buf) + 4 + (cl ? strtol(cl + 15, NULL, 10) : 0);
            }
            if (need >= 0 && (long)got >= need) break;
        }
        int st = s->served < s->n_script ? s->script[s->served] : 204;
        s->served++;
        char resp[256];
        int n = snprintf(resp, sizeof resp, "HTTP/1.1 %d X\r\n%sContent-Length: 2\r\nConnection: close\r\n\r\nno",
                         st, st == 429 ? "Retry-After: 0\r\n" : "");
        if (write(c, resp, (size_t)n) != n) {}
        close(c);
    }
}

static void fake_start(struct fake *s)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    s->fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(s->fd >= 0);
    assert_int_equal(bind(s->fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(s->fd, 8), 0);
    assert_int_equal(getsockname(s->fd, (struct sockaddr *)&a, &al), 0);
    s->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&s->th, NULL, fake_main, s), 0);
}

static void fake_stop(struct fake *s)
{
    shutdown(s->fd, SHUT_RDWR);
    close(s->fd);
    pthread_join(s->th, NULL);
}

/* 503 and 429 are retried, 400 drops its batch, 204 moves on: 30 samples
 * in batches of 10 end as 20 sent, 10 dropped, the cursor at the end. */
static void test_forwarder_answers(void **state)
{
    struct fx *f = *state;
    static const int script[] = {503, 429, 204, 400, 204};
    struct fake srv = {.script = script, .n_script = 5};
    fake_start(&srv);
    uint64_t sids[1] = {1};
    struct gw_wal *w = wal_open(f->wal, 1 << 20, NULL, NULL);
    put_series(w, 1, "m", "n1");
    put_samples(w, sids, 1, 1000, 30);
    struct gw_fwd_opts o;
    gw_fwd_opts_default(&o);
    char st[1200], url[64];
    snprintf(st, sizeof st, "%s/forward", f->dir);
    snprintf(url, sizeof url, "http://127.0.0.1:%u/api/v1/write", srv.port);
    o.wal_dir = f->wal;
    o.state_dir = st;
    o.n_dests = 1;
    gw_fwd_dest_opts_default(&o.dests[0]);
    o.dests[0].url = url;
    o.dests[0].batch_samples = 10;
    o.min_backoff_ms = o.max_backoff_ms = 10;
    o.poll_ms = 10;
    struct gw_fwd *fw = NULL;
    struct gw_error e = {0};
    assert_int_equal(gw_fwd_new(&fw, &o, &e), GW_OK);
    assert_int_equal(gw_fwd_start(fw, NULL, NULL, &e), GW_OK);
    struct gw_fwd_stats s;
    for (int i = 0; i < 500; i++) {
        assert_int_equal(gw_fwd_stats(fw, 0, &s), GW_OK);
        if (s.samples_sent + s.dropped_rejected >= 30 && s.lag_seconds == 0) break;
        usleep(10000);
    }
    assert_int_equal(s.samples_sent, 20);
    assert_int_equal(s.batches_sent, 2);
    assert_int_equal(s.batches_failed, 1);
    assert_int_equal(s.dropped_rejected, 10);
    assert_int_equal(s.batches_retried, 2);
    assert_int_equal(llround(s.highest_sent_s * 1000), 1029);
    assert_int_equal(srv.served, 5);
    gw_fwd_free(fw);
    /* the cursor file says: everything done */
    char path[1300];
    struct gw_fwd_cursor c;
    gw_fwd_cursor_path(path, sizeof path, st, url);
    assert_int_equal(gw_fwd_cursor_load(path, url, &c, &e), GW_OK);
    struct gw_fwd_reader r;
    struct gw_fwd_batch b;
    assert_int_equal(gw_fwd_reader_init(&r, f->wal, 0), GW_OK);
    gw_fwd_batch_init(&b);
    assert_int_equal(gw_fwd_read_batch(&r, &c, 100, &b, &e), GW_OK);
    assert_int_equal(b.n, 0);
    assert_true(b.caught_up);
    gw_fwd_batch_free(&b);
    gw_fwd_reader_free(&r);
    gw_wal_close(w);
    fake_stop(&srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_cursor_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_policy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_headers_and_internal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wal_hold, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reader_batches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reader_v2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_release_and_pending, setup, teardown),
        cmocka_unit_test_setup_teardown(test_forwarder_bound, setup, teardown),
        cmocka_unit_test_setup_teardown(test_forwarder_answers, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
