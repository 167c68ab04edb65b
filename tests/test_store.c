/* test_store.c - the LMDB series store: persistence across reopen, the
 * format version check, series records built from label-pair ids (labels
 * rebuilt byte for byte, maxt kept in the record), postings and label index
 * over the pair dictionary (long values included), metadata, nodes,
 * per-node window blobs (directory search edge cases, seqs, day
 * partitions, corrupt blob detection; GWB2 blobs with shared timestamp
 * columns next to GWB1 blobs), partition listing and retention
 * drops, map growth under a concurrent reader, the map ceiling, read-only
 * access from a second process, and the index size per series on
 * exporter-shaped data. Each test gets a fresh temp dir. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lmdb.h>
#include <xxhash.h>

#include "gpuwatch/block.h"
#include "gpuwatch/buf.h"
#include "gpuwatch/store.h"
#include "store/store_int.h"

/* ------------------------------------------------------------- fixtures */

struct fx {
    char dir[512];
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    const char *base = getenv("GW_TEST_TMP");
    if (!base || !base[0])
        base = "/tmp";
    mkdir(base, 0755);
    snprintf(f->dir, sizeof f->dir, "%s/gw_store_XXXXXX", base);
    if (!mkdtemp(f->dir)) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static void rm_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
            rm_tree(p);
        else
            unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

static int teardown(void **state)
{
    struct fx *f = *state;
    rm_tree(f->dir);
    free(f);
    return 0;
}

static struct gw_store *open_store(const char *dir, uint64_t initial, uint64_t max)
{
    struct gw_store_opts o = {.dir = dir, .initial_map_bytes = initial, .max_map_bytes = max};
    struct gw_store *s = NULL;
    struct gw_error err = {0};
    int rc = gw_store_open(&s, &o, &err);
    if (rc != GW_OK)
        print_error("open: %s\n", err.msg);
    assert_int_equal(rc, GW_OK);
    assert_non_null(s);
    return s;
}

/* Canonical labels from name/value pairs (already sorted by name). */
static size_t enc_uvarint(uint8_t *b, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        b[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b[n++] = (uint8_t)v;
    return n;
}

static size_t canon(uint8_t *out, const char *const *kv, size_t pairs)
{
    size_t o = 0;
    for (size_t i = 0; i < pairs; i++) {
        size_t nl = strlen(kv[2 * i]), vl = strlen(kv[2 * i + 1]);
        o += enc_uvarint(out + o, nl);
        memcpy(out + o, kv[2 * i], nl);
        o += nl;
        o += enc_uvarint(out + o, vl);
        memcpy(out + o, kv[2 * i + 1], vl);
        o += vl;
    }
    return o;
}

/* ---------------------------------------------------- write callbacks */

struct series_def {
    uint64_t sid;
    uint32_t node;
    uint16_t gpu;
    uint8_t labels[4096];
    size_t len;
    uint64_t hash;
};

struct put_series_ud {
    struct series_def *defs;
    size_t n;
};

static int put_series_fn(struct gw_store_txn *t, void *ud)
{
    struct put_series_ud *u = ud;
    for (size_t i = 0; i < u->n; i++) {
        struct series_def *d = &u->defs[i];
        int rc = gw_store_series_put(t, d->sid, d->hash, d->node, d->gpu, d->labels, d->len);
        if (rc != GW_OK)
            return rc;
    }
    return GW_OK;
}

static void def_series(struct series_def *d, uint64_t sid, const char *const *kv, size_t pairs)
{
    memset(d, 0, sizeof *d);
    d->sid = sid;
    d->node = (uint32_t)(sid % 3);
    d->gpu = (uint16_t)(sid % 8);
    d->len = canon(d->labels, kv, pairs);
    d->hash = XXH3_64bits(d->labels, d->len);
}

static void write_series(struct gw_store *s, struct series_def *defs, size_t n)
{
    struct put_series_ud u = {defs, n};
    struct gw_error err = {0};
    int rc = gw_store_write(s, put_series_fn, &u, &err);
    if (rc != GW_OK)
        print_error("write: %s\n", err.msg);
    assert_int_equal(rc, GW_OK);
}

/* ---------------------------------------------------------------- tests */

static int meta_put_fn(struct gw_store_txn *t, void *ud)
{
    return gw_store_meta_put_u64(t, "answer", *(uint64_t *)ud);
}

static int fail_fn(struct gw_store_txn *t, void *ud)
{
    (void)ud;
    int rc = gw_store_meta_put_u64(t, "answer", 1);
    return rc != GW_OK ? rc : GW_EINVAL;
}

static void test_store_open_close_reopen(void **state)
{
    struct fx *f = *state;
    char sub[600];
    snprintf(sub, sizeof sub, "%s/a/b/store", f->dir);
    struct gw_store *s = open_store(sub, 0, 0);
    uint64_t v = 42;
    assert_int_equal(gw_store_write(s, meta_put_fn, &v, NULL), GW_OK);
    /* An aborted write leaves no trace. */
    struct gw_error err = {0};
    assert_int_equal(gw_store_write(s, fail_fn, NULL, &err), GW_EINVAL);
    assert_int_equal(gw_store_sync(s, NULL), GW_OK);
    gw_store_close(s);
    gw_store_close(NULL);

    s = open_store(sub, 0, 0);
    struct gw_store_txn *t;
    assert_int_equal(gw_store_read_begin(s, &t, NULL), GW_OK);
    uint64_t got = 0;
    assert_int_equal(gw_store_meta_get_u64(t, "answer", &got), GW_OK);
    assert_int_equal(got, 42);
    assert_int_equal(gw_store_meta_get_u64(t, "format_version", &got), GW_OK);
    assert_int_equal(got, 5);
    assert_int_equal(gw_store_meta_get_u64(t, "missing", &got), GW_ENOTFOUND);
    /* writes in a read txn are refused */
    assert_int_equal(gw_store_meta_put_u64(t, "x", 1), GW_EINVAL);
    /* a write while this thread holds a read txn is refused, not hung */
    assert_int_equal(gw_store_write(s, meta_put_fn, &v, &err), GW_EINVAL);
    gw_store_read_end(t);
    gw_store_read_end(NULL);

    struct gw_store_stats st;
    assert_int_equal(gw_store_stats(s, &st, NULL), GW_OK);
    assert_true(st.map_bytes >= (UINT64_C(1) << 30));
    assert_true(st.file_bytes > 0);
    assert_true(st.used_bytes > 0);
    assert_int_equal(st.page_size, 4096);
    assert_int_equal(st.series, 0);
    gw_store_close(s);

    /* read-only open of a missing store fails cleanly */
    char missing[600];
    snprintf(missing, sizeof missing, "%s/nope", f->dir);
    struct gw_store_opts o = {.dir = missing, .read_only = 1};
    struct gw_store *ro = NULL;
    assert_int_not_equal(gw_store_open(&ro, &o, &err), GW_OK);
    assert_null(ro);
}

struct collect_series {
    uint64_t sids[64];
    size_t n;
};

static int collect_series_cb(void *ud, const struct gw_store_series *s)
{
    struct collect_series *c = ud;
    if (c->n < 64)
        c->sids[c->n++] = s->sid;
    return GW_OK;
}

static int delete_fn(struct gw_store_txn *t, void *ud)
{
    return gw_store_series_delete(t, *(uint64_t *)ud);
}

static int maxt_fn(struct gw_store_txn *t, void *ud)
{
    (void)ud;
    int rc = gw_store_series_maxt_put(t, 10, 77);
    if (rc == GW_OK)
        rc = gw_store_series_maxt_put(t, 10, -5); /* overwrites */
    if (rc == GW_OK)
        rc = gw_store_series_maxt_put(t, 11, INT64_MAX);
    if (rc != GW_OK)
        return rc;
    int64_t mt = 0;
    rc = gw_store_series_maxt_get(t, 10, &mt); /* visible inside the write txn */
    if (rc != GW_OK || mt != -5)
        return GW_ECORRUPT;
    /* no record to hold it */
    return gw_store_series_maxt_put(t, 99, 1) == GW_ENOTFOUND ? GW_OK : GW_ECORRUPT;
}

static void test_store_series_roundtrip(void **state)
{
    struct fx *f = *state;
    struct gw_store *s = open_store(f->dir, 0, 0);
    static struct series_def defs[3];
    const char *a[] = {"__name__", "up", "gpu", "3", "hostname", "n1"};
    const char *b[] = {"__name__", "up", "gpu", "4", "hostname", "n1"};
    const char *c[] = {"__name__", "temp", "hostname", "n2"};
    def_series(&defs[0], 11, a, 3);
    def_series(&defs[1], 10, b, 3);
    def_series(&defs[2], 12, c, 2);
    defs[2].hash = 777; /* not the XXH3 of its labels: delete must still clean it */
    write_series(s, defs, 3);
    write_series(s, defs, 1); /* same sid + same labels: fine */

    /* same sid, other labels: refused */
    static struct series_def clash;
    def_series(&clash, 11, c, 2);
    struct put_series_ud u = {&clash, 1};
    assert_int_equal(gw_store_write(s, put_series_fn, &u, NULL), GW_EINVAL);
    assert_int_equal(gw_store_write(s, maxt_fn, NULL, NULL), GW_OK);

    struct gw_store_txn *t;
    assert_int_equal(gw_store_read_begin(s, &t, NULL), GW_OK);
    struct gw_store_series se;
    assert_int_equal(gw_store_series_get(t, 11, &se), GW_OK);
    assert_int_equal(se.sid, 11);
    assert_int_equal(se.node_id, defs[0].node);
    assert_int_equal(se.gpu, defs[0].gpu);
    assert_int_equal(se.labels_len, defs[0].len);
    assert_memory_equal(se.labels, defs[0].labels, defs[0].len);
    assert_int_equal(gw_store_series_get(t, 99, &se), GW_ENOTFOUND);

    uint64_t sids[4];
    size_t n = 9;
    assert_int_equal(gw_store_series_by_hash(t, defs[1].hash, sids, 4, &n), GW_OK);
    assert_int_equal(n, 1);
    assert_int_equal(sids[0], 10);
    assert_int_equal(gw_store_series_by_hash(t, 777, sids, 4, &n), GW_OK);
    assert_int_equal(n, 1);
    assert_int_equal(sids[0], 12);
    assert_int_equal(gw_store_series_by_hash(t, 1234, sids, 4, &n), GW_OK);
    assert_int_equal(n, 0);

    struct collect_series cs = {0};
    assert_int_equal(gw_store_series_each(t, collect_series_cb, &cs), GW_OK);
    assert_int_equal(cs.n, 3);
    assert_int_equal(cs.sids[0], 10);
    assert_int_equal(cs.sids[1], 11);
    assert_int_equal(cs.sids[2], 12);

    int64_t mt;
    assert_int_equal(gw_store_series_maxt_get(t, 10, &mt), GW_OK);
    assert_int_equal(mt, -5);
    assert_int_equal(gw_store_series_maxt_get(t, 11, &mt), GW_OK);
    assert_true(mt == INT64_MAX);
    assert_int_equal(gw_store_series_maxt_get(t, 12, &mt), GW_OK);
    assert_true(mt == INT64_MIN);
    /* the maxt update left the rest of the record intact */
    assert_int_equal(gw_store_series_get(t, 10, &se), GW_OK);
    assert_int_equal(se.node_id, defs[1].node);
    assert_int_equal(se.gpu, defs[1].gpu);
    assert_int_equal(se.labels_len, defs[1].len);
    assert_memory_equal(se.labels, defs[1].labels, defs[1].len);
    /* labels of earlier gets stay valid until the txn ends */
    struct gw_store_series se11;
    assert_int_equal(gw_store_series_get(t, 11, &se11), GW_OK);
    assert_int_equal(gw_store_series_get(t, 12, &se), GW_OK);
    assert_memory_equal(se11.labels, defs[0].labels, defs[0].len);
    assert_memory_equal(se.labels, defs[2].labels, defs[2].len);
    gw_store_read_end(t);

    uint64_t del = 12;
    assert_int_equal(gw_store_write(s, delete_fn, &del, NULL), GW_OK);
    del = 11;
    assert_int_equal(gw_store_write(s, delete_fn, &del, NULL), GW_OK);
    assert_int_equal(gw_store_write(s, delete_fn, &del, NULL), GW_ENOTFOUND);

    assert_int_equal(gw_store_read_begin(s, &t, NULL), GW_OK);
    assert_int_equal(gw_store_series_get(t, 12, &se), GW_ENOTFOUND);
    assert_int_equal(gw_store_series_by_hash(t, 777, sids, 4, &n), GW_OK);
    assert_int_equal(n, 0);
    assert_int_equal(gw_store_series_by_hash(t, defs[0].hash, sids, 4, &n), GW_OK);
    assert_int_equal(n, 0);
    struct gw_postings p;
    gw_postings_init(&p);
    assert_int_equal(gw_store_postings_get(t, "__name__", 8, "up", 2, &p), GW_OK);
    assert_int_equal(p.n, 1);
    assert_int_equal(p.ids[0], 10);
    assert_int_equal(gw_store_postings_get(t, "__name__", 8, "temp", 4, &p), GW_OK);
    assert_int_equal(p.n, 0);
    assert_int_equal(gw_store_postings_all(t, &p), GW_OK);
    assert_int_equal(p.n, 1);
    assert_int_equal(p.ids[0], 10);
    assert_int_equal(gw_store_series_maxt_get(t, 11, &mt), GW_OK);
    assert_true(mt == INT64_MIN);
    assert_int_equal(gw_store_postings_get(t, "gpu", 3, "3", 1, &p), GW_OK);
    assert_int_equal(p.n, 0);
    assert_int_equal(gw_store_postings_get(t, "gpu", 3, "4", 1, &p), GW_OK);
    assert_int_equal(p.n, 1);
    assert_int_equal(gw_store_postings_any(t, "hostname", 8, &p), GW_OK);
    assert_int_equal(p.n, 1);
    assert_int_equal(p.ids[0], 10);
    gw_postings_free(&p);
    gw_store_read_end(t);

    /* a deleted sid can be used again; pairs are reused */
    write_series(s, &defs[2], 1);
    assert_int_equal(gw_store_read_begin(s, &t, NULL), GW_OK);
    assert_int_equal(gw_store_series_get(t, 12, &se), GW_OK);
    assert_memory_equal(se.labels, defs[2].labels, defs[2].len);
    gw_postings_init(&p);
    assert_int_equal(gw_store_postings_get(t, "hostname", 8, "n2", 2, &p), GW_OK);
    assert_int_equal(p.n, 1);
    assert_int_equal(p.ids[0], 12);
    gw_postings_free(&p);
    gw_store_read_end(t);

    struct gw_store_stats st;
    assert_int_equal(gw_store_stats(s, &st, NULL), GW_OK);
    assert_int_equal(st.series, 2);
    assert_true(st.index_bytes > 0);
    gw_store_close(s);
}

struct strs {
    char *v[64];
    size_t len[64];
    size_t n;
    size_t stop_after;
};

static int collect_str(void *ud, const char *v, size_t len)
{
    struct strs *c = ud;
    assert_true(c->n < 64);
    c->v[c->n] = malloc(len + 1);
    assert_non_null(c->v[c->n]);
    memcpy(c->v[c->n], v, len);
    c->v[c->n][len] = 0;
    c->len[c->n] = len;
    c->n++;
    return c->stop_after && c->n >= c->stop_after ? 1 : GW_OK;
}

static void strs_free(struct strs *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->v[i]);
    c->n = 0;
}

static int pred_prefix_b(void *ud, const char *v, size_t len)
{
    (void)ud;
    return len > 0 && v[0] == 'b';
}

static int pred_long(void *ud, const char *v, size_t len)
{
    (void)ud;
    (void)v;
    return len > 1000;
}

static void test_store_postings_and_label_index(void **state)
{
    struct fx *f = *state;
    struct gw_store *s = open_store(f->dir, 0, 0);
    /* Two long values sharing a 400+ byte prefix, ordered so that their
     * hash order and byte order may disagree, plus a 2000-byte value. */
    static char long1[2001], long2[1201], long3[1201];
    memset(long1, 'x', 2000);
    long1[2000] = 0;
    memset(long2, 'm', 1200);
    long2[1200] = 0;
    memcpy(long3, long2, sizeof long2);
    long3[1000] = 'z';
    /* Pick long2 < long3 in byte order but with the larger hash, so key
     * order (prefix, 0xff, hash) disagrees with value order. */
    for (char ch = 'a'; ch < 'z'; ch++) {
        long2[1000] = ch;
        if (XXH3_64bits(long2, 1200) > XXH3_64bits(long3, 1200))
            break;
    }
    assert_true(XXH3_64bits(long2, 1200) > XXH3_64bits(long3, 1200));
    static char mid[451]; /* long key per P rule but fits in full: 10+1+450 <= 480 */
    memset(mid, 'm', 450);
    mid[450] = 0;

    const char *l0[] = {"__name__", "up", "job", "alpha"};
    const char *l1[] = {"__name__", "up", "job", "beta"};
    const char *l2[] = {"__name__", "temp", "job", "bravo", "zone", "eu"};
    const char *l3[] = {"__name__", "temp", "job", long1};
    const char *l4[] = {"__name__", "temp", "job", long3};
    const char *l5[] = {"__name__", "temp", "job", long2};
    const char *l6[] = {"__name__", "temp", "job", mid};
    static struct series_def defs[7];
    const char *const *ls[] = {l0, l1, l2, l3, l4, l5, l6};
    size_t pairs[] = {2, 2, 3, 2, 2, 2, 2};
    for (size_t i = 0; i < 7; i++)
        def_series(&defs[i], 100 + i, ls[i], pairs[i]);
    write_series(s, defs, 7);

    struct gw_store_txn *t;
    assert_int_equal(gw_store_read_begin(s, &t, NULL), GW_OK);
    /* labels with long values come back byte for byte */
    for (size_t i = 0; i < 7; i++) {
        struct gw_store_series se;
        assert_int_equal(gw_store_series_get(t, 100 + i, &se), GW_OK);
        assert_int_equal(se.labels_len, defs[i].len);
        assert_memory_equal(se.labels, defs[i].labels, defs[i].len);
    }
    struct gw_postings p;
    gw_postings_init(&p);
    assert_int_equal(gw_store_postings_get(t, "__name__", 8, "temp", 4, &p), GW_OK);
    assert_int_equal(p.n, 5);
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(p.ids[i], 102 + i);
    assert_int_equal(gw_store_postings_get(t, "job", 3, long1, 2000, &p), GW_OK);
    assert_int_equal(p.n, 1);
    assert_int_equal(p.ids[0], 103);
    assert_int_equal(gw_store_postings_get(t, "job", 3, long2, 1200, &p), GW_OK);
    assert_int_equal(p.n, 1);
    assert_int_equal(p.ids[0], 105);
    assert_int_equal(gw_store_postings_get(t, "job", 3, long3, 1200, &p), GW_OK);
    assert_int_equal(p.n, 1);
    assert_int_equal(p.ids[0], 104);
    /* same 400-byte prefix, never stored */
    static char long4[1201];
    memcpy(long4, long2, sizeof long2);
    long4[1100] = 'q';
    assert_int_equal(gw_store_postings_get(t, "job", 3, long4, 1200, &p), GW_OK);
    assert_int_equal(p.n, 0);
    assert_int_equal(gw_store_postings_get(t, "job", 3, "gamma", 5, &p), GW_OK);
    assert_int_equal(p.n, 0);
    assert_int_equal(gw_store_postings_get(t, "nolabel", 7, "x", 1, &p), GW_OK);
    assert_int_equal(p.n, 0);

    assert_int_equal(gw_store_postings_any(t, "zone", 4, &p), GW_OK);
    assert_int_equal(p.n, 1);
    assert_int_equal(p.ids[0], 102);
    assert_int_equal(gw_store_postings_any(t, "job", 3, &p), GW_OK);
    assert_int_equal(p.n, 7);
    for (size_t i = 1; i < p.n; i++)
        assert_true(p.ids[i - 1] < p.ids[i]);
    assert_int_equal(gw_store_postings_all(t, &p), GW_OK);
    assert_int_equal(p.n, 7);

    assert_int_equal(gw_store_postings_matching(t, "job", 3, pred_prefix_b, NULL, &p), GW_OK);
    assert_int_equal(p.n, 2);
    assert_int_equal(p.ids[0], 101);
    assert_int_equal(p.ids[1], 102);
    assert_int_equal(gw_store_postings_matching(t, "job", 3, pred_long, NULL, &p), GW_OK);
    assert_int_equal(p.n, 3);
    assert_int_equal(p.ids[0], 103);
    assert_int_equal(p.ids[1], 104);
    assert_int_equal(p.ids[2], 105);

    /* label values: byte order, full long values */
    struct strs vals = {0};
    assert_int_equal(gw_store_label_values(t, "job", 3, collect_str, &vals), GW_OK);
    assert_int_equal(vals.n, 7);
    assert_string_equal(vals.v[0], "alpha");
    assert_string_equal(vals.v[1], "beta");
    assert_string_equal(vals.v[2], "bravo");
    assert_string_equal(vals.v[3], mid);
    assert_string_equal(vals.v[4], long2);
    assert_string_equal(vals.v[5], long3);
    assert_string_equal(vals.v[6], long1);
    assert_int_equal(vals.len[6], 2000);
    for (size_t i = 1; i < vals.n; i++)
        assert_true(strcmp(vals.v[i - 1], vals.v[i]) < 0);
    strs_free(&vals);
    vals.stop_after = 2;
    assert_int_equal(gw_store_label_values(t, "job", 3, collect_str, &vals), GW_OK);
    assert_int_equal(vals.n, 2);
    strs_free(&vals);
    vals.stop_after = 0;
    assert_int_equal(gw_store_label_values(t, "__name__", 8, collect_str, &vals), GW_OK);
    assert_int_equal(vals.n, 2);
    assert_string_equal(vals.v[0], "temp");
    assert_string_equal(vals.v[1], "up");
    strs_free(&vals);
    assert_int_equal(gw_store_label_values(t, "jo", 2, collect_str, &vals), GW_OK);
    assert_int_equal(vals.n, 0);

    struct strs names = {0};
    assert_int_equal(gw_store_label_names(t, collect_str, &names), GW_OK);
    assert_int_equal(names.n, 3);
    assert_string_equal(names.v[0], "__name__");
    assert_string_equal(names.v[1], "job");
    assert_string_equal(names.v[2], "zone");
    strs_free(&names);
    gw_postings_free(&p);
    gw_store_read_end(t);
    gw_store_close(s);
}

/* Many series under one value: exercises MDB_GET_MULTIPLE across pages. */
struct many_ud {
    uint64_t n;
};

static int many_fn(struct gw_store_txn *t, void *ud)
{
    struct many_ud *u = ud;
    uint8_t lab[128];
    /* even i ascending (appends), then odd i descending (inserts) */
    for (int pass = 0; pass < 2; pass++) {
        for (uint64_t j = 0; j < u->n; j++) {
            uint64_t i = pass == 0 ? j : u->n - 1 - j;
            if ((i & 1) != (uint64_t)pass)
                continue;
            char inst[32];
            snprintf(inst, sizeof inst, "i%llu", (unsigned long long)i);
            const char *kv[] = {"__name__", "m", "instance", inst, "parity", (i & 1) ? "odd" : "even"};
            size_t len = canon(lab, kv, 3);
            int rc = gw_store_series_put(t, i * 7 + 1, XXH3_64bits(lab, len), 0, 0xFFFF, lab, len);
            if (rc != GW_OK)
                return rc;
        }
    }
    return GW_OK;
}

static void test_store_postings_large_list(void **state)
{
    struct fx *f = *state;
    struct gw_store *s = open_store(f->dir, 0, 0);
    struct many_ud u = {5000};
    assert_int_equal(gw_store_write(s, many_fn, &u, NULL), GW_OK);
    struct gw_store_txn *t;
    assert_int_equal(gw_store_read_begin(s, &t, NULL), GW_OK);
    struct gw_postings p;
    gw_postings_init(&p);
    assert_int_equal(gw_store_postings_get(t, "__name__", 8, "m", 1, &p), GW_OK);
    assert_int_equal(p.n, 5000);
    for (size_t i = 0; i < p.n; i++)
        assert_int_equal(p.ids[i], i * 7 + 1);
    assert_int_equal(gw_store_postings_get(t, "parity", 6, "odd", 3, &p), GW_OK);
    assert_int_equal(p.n, 2500);
    for (size_t i = 0; i < p.n; i++)
        assert_int_equal(p.ids[i], (2 * i + 1) * 7 + 1);
    assert_int_equal(gw_store_postings_any(t, "instance", 8, &p), GW_OK);
    assert_int_equal(p.n, 5000);
    for (size_t i = 0; i < p.n; i++)
        assert_int_equal(p.ids[i], i * 7 + 1);
    assert_int_equal(gw_store_postings_any(t, "parity", 6, &p), GW_OK);
    assert_int_equal(p.n, 5000);
    for (size_t i = 0; i < p.n; i++)
        assert_int_equal(p.ids[i], i * 7 + 1);
    assert_int_equal(gw_store_postings_all(t, &p), GW_OK);
    assert_int_equal(p.n, 5000);
    struct gw_store_series se;
    assert_int_equal(gw_store_series_get(t, 4999 * 7 + 1, &se), GW_OK);
    const char *v;
    size_t vl;
    assert_int_equal(gw_store_labels_find(se.labels, se.labels_len, "instance", 8, &v, &vl), 1);
    assert_int_equal(vl, 5);
    assert_memory_equal(v, "i4999", 5);
    gw_postings_free(&p);
    gw_store_read_end(t);
    gw_store_close(s);
}

struct node_ud {
    uint32_t a, b, a2, empty;
};

static int nodes_fn(struct gw_store_txn *t, void *ud)
{
    struct node_ud *u = ud;
    int rc = gw_store_node_id(t, "node-a", 6, 1, &u->a);
    if (rc == GW_OK)
        rc = gw_store_node_id(t, "node-b", 6, 1, &u->b);
    if (rc == GW_OK)
        rc = gw_store_node_id(t, "node-a", 6, 1, &u->a2);
    if (rc == GW_OK)
        rc = gw_store_node_id(t, "", 0, 1, &u->empty);
    return rc;
}

static void test_store_nodes(void **state)
{
    struct fx *f = *state;
    struct gw_store *s = open_store(f->dir, 0, 0);
    struct node_ud u = {9, 9, 9, 9};
    assert_int_equal(gw_store_write(s, nodes_fn, &u, NULL), GW_OK);
    assert_int_equal(u.a, 1);
    assert_int_equal(u.b, 2);
    assert_int_equal(u.a2, 1);
    assert_int_equal(u.empty, 0);
    gw_store_close(s);
    s = open_store(f->dir, 0, 0);
    struct gw_store_txn *t;
    assert_int_equal(gw_store_read_begin(s, &t, NULL), GW_OK);
    uint32_t id = 0;
    assert_int_equal(gw_store_node_id(t, "node-b", 6, 0, &id), GW_OK);
    assert_int_equal(id, 2);
    assert_int_equal(gw_store_node_id(t, "node-c", 6, 0, &id), GW_ENOTFOUND);
    assert_int_equal(gw_store_node_id(t, "node-c", 6, 1, &id), GW_EINVAL); /* read txn */
    const char *name;
    size_t len;
    assert_int_equal(gw_store_node_name(t, 1, &name, &len), GW_OK);
    assert_int_equal(len, 6);
    assert_memory_equal(name, "node-a", 6);
    assert_int_equal(gw_store_node_name(t, 0, &name, &len), GW_OK);
    assert_int_equal(len, 0);
    assert_int_equal(gw_store_node_name(t, 77, &name, &len), GW_ENOTFOUND);
    gw_store_read_end(t);
    /* ids keep counting after reopen */
    struct node_ud u2;
    assert_int_equal(gw_store_write(s, nodes_fn, &u2, NULL), GW_OK);
    assert_int_equal(u2.a, 1);
    assert_int_equal(u2.b, 2);
    gw_store_close(s);
}

static int mmeta_put_fn(struct gw_store_txn *t, void *ud)
{
    (void)ud;
    static char help[300];
    memset(help, 'h', sizeof help);
    int rc = gw_store_metadata_put(t, "gpu_temp", 8, 1, "GPU temperature", 15, "celsius", 7);
    if (rc == GW_OK)
        rc = gw_store_metadata_put(t, "aaa_total", 9, 2, help, sizeof help, "", 0);
    if (rc == GW_OK)
        rc = gw_store_metadata_put(t, "gpu_temp", 8, 1, "GPU temp (C)", 12, "celsius", 7); /* replaces */
    return rc;
}

struct mmeta_seen {
    int n;
    char metric[2][32];
    uint8_t type[2];
    size_t help_len[2], unit_len[2];
    char help0[32], unit1[16];
};

static int mmeta_cb(void *ud, const char *metric, size_t metric_len, uint8_t type, const char *help,
                    size_t help_len, const char *unit, size_t unit_len)
{
    struct mmeta_seen *m = ud;
    assert_true(m->n < 2);
    assert_true(metric_len < 32);
    memcpy(m->metric[m->n], metric, metric_len);
    m->metric[m->n][metric_len] = 0;
    m->type[m->n] = type;
    m->help_len[m->n] = help_len;
    m->unit_len[m->n] = unit_len;
    if (m->n == 1) {
        memcpy(m->help0, help, help_len < 31 ? help_len : 31);
        memcpy(m->unit1, unit, unit_len < 15 ? unit_len : 15);
    }
    m->n++;
    return GW_OK;
}

static void test_store_metadata_roundtrip(void **state)
{
    struct fx *f = *state;
    struct gw_store *s = open_store(f->dir, 0, 0);
    assert_int_equal(gw_store_write(s, mmeta_put_fn, NULL, NULL), GW_OK);
    struct gw_store_txn *t;
    assert_int_equal(gw_store_read_begin(s, &t, NULL), GW_OK);
    struct mmeta_seen m;
    memset(&m, 0, sizeof m);
    assert_int_equal(gw_store_metadata_each(t, mmeta_cb, &m), GW_OK);
    assert_int_equal(m.n, 2);
    assert_string_equal(m.metric[0], "aaa_total");
    assert_int_equal(m.type[0], 2);
    assert_int_equal(m.help_len[0], 300);
    assert_int_equal(m.unit_len[0], 0);
    assert_string_equal(m.metric[1], "gpu_temp");
    assert_int_equal(m.type[1], 1);
    assert_string_equal(m.help0, "GPU temp (C)");
    assert_string_equal(m.unit1, "celsius");
    gw_store_read_end(t);
    gw_store_close(s);
}

/* -------------------------------------------------------------- blobs */

#define D GW_DAY_MS
#define H2 7200000LL

/* Block content is a function of (sid, window, k, len). */
static void fill_block(uint8_t *buf, uint64_t sid, int64_t ws, unsigned k, size_t len)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)(sid * 31 + (uint64_t)ws + k * 7 + i);
}

static int block_ok(const uint8_t *b, uint64_t sid, int64_t ws, unsigned k, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (b[i] != (uint8_t)(sid * 31 + (uint64_t)ws + k * 7 + i))
            return 0;
    return 1;
}

struct bspec {
    uint64_t sid;
    unsigned k;       /* block number of this sid in the window */
    size_t len;
};

struct blob_def {
    uint32_t node;
    int64_t ws;
    const struct bspec *e;
    size_t n;
};

struct blobs_ud {
    const struct blob_def *b;
    size_t n;
};

static int put_one_blob(struct gw_store_txn *t, const struct blob_def *bd)
{
    struct gw_store_blob_entry ents[32];
    uint8_t *bufs[32];
    assert_true(bd->n <= 32);
    for (size_t i = 0; i < bd->n; i++) {
        bufs[i] = malloc(bd->e[i].len ? bd->e[i].len : 1);
        assert_non_null(bufs[i]);
        fill_block(bufs[i], bd->e[i].sid, bd->ws, bd->e[i].k, bd->e[i].len);
        ents[i].sid = bd->e[i].sid;
        ents[i].block = bufs[i];
        ents[i].len = bd->e[i].len;
    }
    int rc = gw_store_blob_put(t, bd->node, bd->ws, ents, bd->n);
    for (size_t i = 0; i < bd->n; i++)
        free(bufs[i]);
    return rc;
}

static int put_blobs_fn(struct gw_store_txn *t, void *ud)
{
    struct blobs_ud *u = ud;
    for (size_t i = 0; i < u->n; i++) {
        int rc = put_one_blob(t, &u->b[i]);
        if (rc != GW_OK)
            return rc;
    }
    return GW_OK;
}

struct got_blocks {
    int64_t ws[64];
    size_t len[64];
    const uint8_t *ptr[64];
    const uint8_t *first[64];  /* first byte, to match against (sid, ws, k) */
    size_t n, stop_after;
    int fail_with;
};

static int got_block_cb(void *ud, int64_t ws, const uint8_t *block, size_t len)
{
    struct got_blocks *g = ud;
    assert_true(g->n < 64);
    g->ws[g->n] = ws;
    g->len[g->n] = len;
    g->ptr[g->n] = block;
    g->n++;
    if (g->fail_with)
        return g->fail_with;
    return g->stop_after && g->n >= g->stop_after ? 1 : GW_OK;
}

static const int64_t W0 = 19675 * D, W1 = 19675 * D + H2, W2 = 19676 * D + 11 * H2, WN = -D;

static const struct bspec bA[] = {{3, 0, 100}, {5, 0, 50}, {5, 1, 60}, {9, 0, 10}};
static const struct bspec bB[] = {{5, 2, 20}};                          /* late data, seq 1 */
static const struct bspec bC[] = {{1, 0, 5}, {5, 0, 40000}, {UINT32_MAX, 0, 7}};
static const struct bspec bD[] = {{5, 0, 30}};                          /* other node */
static const struct bspec bE[] = {{5, 0, 3}, {6, 0, 0}};                /* next day, empty block */
static const struct bspec bF[] = {{5, 0, 8}};                           /* before the epoch */
static const struct bspec bG[] = {{2, 0, 4}, {5, 3, 9}};                /* seq 2 */

static const struct blob_def test_blobs[] = {
    {1, W0, bA, 4}, {1, W0, bB, 1}, {1, W1, bC, 3}, {2, W0, bD, 1}, {1, W2, bE, 2}, {1, WN, bF, 1},
};

/* The blocks of sid 5 on node 1 in the order blocks_get must return them. */
struct want {
    int64_t ws;
    unsigned k;
    size_t len;
};
static const struct want want5[] = {{WN, 0, 8}, {W0, 0, 50}, {W0, 1, 60}, {W0, 2, 20},
                                    {W0, 3, 9}, {W1, 0, 40000}, {W2, 0, 3}};

static void put_test_blobs(struct gw_store *s)
{
    struct blobs_ud u = {test_blobs, sizeof test_blobs / sizeof test_blobs[0]};
    struct gw_error err = {0};
    int rc = gw_store_write(s, put_blobs_fn, &u, &err);
    if (rc != GW_OK)
        print_error("blobs: %s\n", err.msg);
    assert_int_equal(rc, GW_OK);
    /* another write txn: seq continues after the largest one */
    static const struct blob_def g = {1, W0, bG, 2};
    u.b = &g;
    u.n = 1;
    assert_int_equal(gw_store_write(s, put_blobs_fn, &u, &err), GW_OK);
}

static size_t count_blocks(struct gw_store_txn *t, uint32_t node, uint64_t sid, int64_t lo, int64_t hi)
{
    struct got_blocks g;
    memset(&g, 0, sizeof g);
    assert_int_equal(gw_store_blocks_get(t, node, sid, lo, hi, got_block_cb, &g), GW_OK);
    return g.n;
}

struct pb_seen {
    size_t n, bytes, empty;
    uint64_t sid_sum;
};

static int pb_cb(void *ud, uint64_t sid, const uint8_t *block, size_t len)
{
    struct pb_seen *p = ud;
    (void)block;
    p->n++;
    p->bytes += len;
    p->empty += len == 0;
    p->sid_sum += sid;
    return GW_OK;
}

static int pb_stop_cb(void *ud, uint64_t sid, const uint8_t *block, size_t len)
{
    (void)sid;
    (void)block;
    (void)len;
    size_t *n = ud;
    return ++*n == 2 ? 1 : GW_OK;
}

static void test_store_blobs_roundtrip(void **state)
{
    struct fx *f = *state;
    struct gw_store *s = open_store(f->dir, 0, 0);
    put_test_blobs(s);
    for (int reopen = 0; reopen < 2; reopen++) {
        struct gw_store_txn *t;
        assert_int_equal(gw_store_read_begin(s, &t, NULL), GW_OK);
        struct got_blocks g;
        memset(&g, 0, sizeof g);
        assert_int_equal(gw_store_blocks_get(t, 1, 5, INT64_MIN, INT64_MAX, got_block_cb, &g), GW_OK);
        size_t nw = sizeof want5 / sizeof want5[0];
        assert_int_equal(g.n, nw);
        for (size_t i = 0; i < nw; i++) {
            assert_true(g.ws[i] == want5[i].ws);
            assert_int_equal(g.len[i], want5[i].len);
            assert_true(block_ok(g.ptr[i], 5, want5[i].ws, want5[i].k, want5[i].len));
        }
        /* zero copy: a second scan hands out the same addresses */
        struct got_blocks g2;
        memset(&g2, 0, sizeof g2);
        assert_int_equal(gw_store_blocks_get(t, 1, 5, INT64_MIN, INT64_MAX, got_block_cb, &g2), GW_OK);
        assert_int_equal(g2.n, nw);
        for (size_t i = 0; i < nw; i++)
            assert_ptr_equal(g.ptr[i], g2.ptr[i]);

        /* directory search: first, last, single, absent sids */
        memset(&g, 0, sizeof g);
        assert_int_equal(gw_store_blocks_get(t, 1, 1, W1, W1, got_block_cb, &g), GW_OK);
        assert_int_equal(g.n, 1);
        assert_true(block_ok(g.ptr[0], 1, W1, 0, 5));
        memset(&g, 0, sizeof g);
        assert_int_equal(gw_store_blocks_get(t, 1, UINT32_MAX, INT64_MIN, INT64_MAX, got_block_cb, &g), GW_OK);
        assert_int_equal(g.n, 1);
        assert_int_equal(g.len[0], 7);
        assert_true(block_ok(g.ptr[0], UINT32_MAX, W1, 0, 7));
        assert_int_equal(count_blocks(t, 1, 3, INT64_MIN, INT64_MAX), 1);
        assert_int_equal(count_blocks(t, 1, 9, INT64_MIN, INT64_MAX), 1);
        assert_int_equal(count_blocks(t, 1, 2, INT64_MIN, INT64_MAX), 1); /* only in the seq 2 blob */
        assert_int_equal(count_blocks(t, 1, 0, INT64_MIN, INT64_MAX), 0); /* before the first */
        assert_int_equal(count_blocks(t, 1, 4, INT64_MIN, INT64_MAX), 0); /* between */
        assert_int_equal(count_blocks(t, 1, 10, INT64_MIN, INT64_MAX), 0); /* after A's last */
        assert_int_equal(count_blocks(t, 1, (uint64_t)UINT32_MAX + 1, INT64_MIN, INT64_MAX), 0);
        memset(&g, 0, sizeof g);
        assert_int_equal(gw_store_blocks_get(t, 1, 6, INT64_MIN, INT64_MAX, got_block_cb, &g), GW_OK);
        assert_int_equal(g.n, 1);
        assert_int_equal(g.len[0], 0);

        /* other nodes stay apart */
        memset(&g, 0, sizeof g);
        assert_int_equal(gw_store_blocks_get(t, 2, 5, INT64_MIN, INT64_MAX, got_block_cb, &g), GW_OK);
        assert_int_equal(g.n, 1);
        assert_true(g.ws[0] == W0);
        assert_true(block_ok(g.ptr[0], 5, W0, 0, 30));
        assert_int_equal(count_blocks(t, 3, 5, INT64_MIN, INT64_MAX), 0);
        assert_int_equal(count_blocks(t, 0, 5, INT64_MIN, INT64_MAX), 0);

        /* window_start in [mint_lo, maxt], inclusive, across days */
        assert_int_equal(count_blocks(t, 1, 5, W0, W0), 4);
        assert_int_equal(count_blocks(t, 1, 5, W1, W1), 1);
        assert_int_equal(count_blocks(t, 1, 5, W0 + 1, W2), 2);
        assert_int_equal(count_blocks(t, 1, 5, W0 + 1, W2 - 1), 1);
        assert_int_equal(count_blocks(t, 1, 5, W2 + 1, INT64_MAX), 0);
        assert_int_equal(count_blocks(t, 1, 5, 10, 5), 0);

        /* early stop (1 -> GW_OK) and errors from the callback */
        memset(&g, 0, sizeof g);
        g.stop_after = 2;
        assert_int_equal(gw_store_blocks_get(t, 1, 5, INT64_MIN, INT64_MAX, got_block_cb, &g), GW_OK);
        assert_int_equal(g.n, 2);
        memset(&g, 0, sizeof g);
        g.fail_with = GW_ELIMIT;
        assert_int_equal(gw_store_blocks_get(t, 1, 5, INT64_MIN, INT64_MAX, got_block_cb, &g), GW_ELIMIT);
        assert_int_equal(g.n, 1);
        assert_int_equal(gw_store_blocks_get(t, 1, 5, INT64_MIN, INT64_MAX, NULL, NULL), GW_EINVAL);

        assert_int_equal(gw_store_blocks_any(t, 1, 5, W0 + 1, W1 - 1), 0);
        assert_int_equal(gw_store_blocks_any(t, 1, 5, W1, W1), 1);
        assert_int_equal(gw_store_blocks_any(t, 1, 4, INT64_MIN, INT64_MAX), 0);
        assert_int_equal(gw_store_blocks_any(t, 2, 5, 0, INT64_MAX), 1);
        assert_int_equal(gw_store_blocks_any(t, 3, 5, INT64_MIN, INT64_MAX), 0);

        /* every block of a day */
        struct pb_seen pb;
        memset(&pb, 0, sizeof pb);
        assert_int_equal(gw_store_partition_blocks_each(t, 19675, pb_cb, &pb), GW_OK);
        assert_int_equal(pb.n, 4 + 1 + 3 + 1 + 2);
        assert_int_equal(pb.bytes, 100 + 50 + 60 + 10 + 20 + 5 + 40000 + 7 + 30 + 4 + 9);
        assert_true(pb.sid_sum == 3 + 5 + 5 + 9 + 5 + 1 + 5 + (uint64_t)UINT32_MAX + 5 + 2 + 5);
        memset(&pb, 0, sizeof pb);
        assert_int_equal(gw_store_partition_blocks_each(t, 19676, pb_cb, &pb), GW_OK);
        assert_int_equal(pb.n, 2);
        assert_int_equal(pb.empty, 1);
        memset(&pb, 0, sizeof pb);
        assert_int_equal(gw_store_partition_blocks_each(t, 5, pb_cb, &pb), GW_OK);
        assert_int_equal(pb.n, 0);
        size_t stop_n = 0;
        assert_int_equal(gw_store_partition_blocks_each(t, 19675, pb_stop_cb, &stop_n), GW_OK);
        assert_int_equal(stop_n, 2);
        gw_store_read_end(t);
        gw_store_close(s);
        s = open_store(f->dir, 0, 0);
    }
    gw_store_close(s);
}

struct bad_blob_ud {
    int which;
};

static int bad_blob_fn(struct gw_store_txn *t, void *ud)
{
    struct bad_blob_ud *u = ud;
    uint8_t b[4] = {1, 2, 3, 4};
    struct gw_store_blob_entry e[2] = {{5, b, 4, 0}, {3, b, 4, 0}};
    switch (u->which) {
    case 0:
        return gw_store_blob_put(t, 1, 0, e, 2); /* unsorted */
    case 1:
        e[0].sid = (uint64_t)UINT32_MAX + 1;
        return gw_store_blob_put(t, 1, 0, e, 1);
    case 2:
        e[0].block = NULL;
        return gw_store_blob_put(t, 1, 0, e, 1);
    case 3:
        return gw_store_blob_put(t, 1, 0, NULL, 0); /* nothing to write */
    default:
        return gw_store_blob_put(t, 1, 0, NULL, 1);
    }
}

static void test_store_blob_put_rejects(void **state)
{
    struct fx *f = *state;
    struct gw_store *s = open_store(f->dir, 0, 0);
    struct bad_blob_ud u = {0};
    assert_int_equal(gw_store_write(s, bad_blob_fn, &u, NULL), GW_EINVAL);
    u.which = 1;
    assert_int_equal(gw_store_write(s, bad_blob_fn, &u, NULL), GW_ELIMIT);
    u.which = 2;
    assert_int_equal(gw_store_write(s, bad_blob_fn, &u, NULL), GW_EINVAL);
    u.which = 3;
    assert_int_equal(gw_store_write(s, bad_blob_fn, &u, NULL), GW_OK);
    u.which = 4;
    assert_int_equal(gw_store_write(s, bad_blob_fn, &u, NULL), GW_EINVAL);
    struct gw_store_txn *t;
    assert_int_equal(gw_store_read_begin(s, &t, NULL), GW_OK);
    uint8_t b[1] = {0};
    struct gw_store_blob_entry e = {1, b, 1, 0};
    assert_int_equal(gw_store_blob_put(t, 1, 0, &e, 1), GW_EINVAL); /* read txn */
    gw_store_read_end(t);
    gw_store_close(s);
}

/* Blob layout checks on hand-made values. */
static void test_store_blob_parse_checks(void **state)
{
    (void)state;
    /* the worked example of keys.c */
    static const uint8_t ok[] = {'G', 'W', 'B', '1', 0, 0, 0, 2, 0, 0, 0, 5, 0, 0, 0, 3,
                                 0, 0, 0, 7, 0, 0, 0, 5, 'a', 'b', 'c', 'd', 'e'};
    struct gw_store_blob b;
    assert_int_equal(gw_store_blob_parse(ok, sizeof ok, &b), GW_OK);
    assert_int_equal(b.n, 2);
    assert_int_equal(b.data_len, 5);
    assert_int_equal(gw_store_blob_lower(&b, 0), 0);
    assert_int_equal(gw_store_blob_lower(&b, 5), 0);
    assert_int_equal(gw_store_blob_lower(&b, 6), 1);
    assert_int_equal(gw_store_blob_lower(&b, 7), 1);
    assert_int_equal(gw_store_blob_lower(&b, 8), 2);
    const uint8_t *p;
    size_t len;
    gw_store_blob_block(&b, 1, &p, &len);
    assert_int_equal(len, 2);
    assert_memory_equal(p, "de", 2);

    uint8_t v[sizeof ok];
    memcpy(v, ok, sizeof ok);
    v[0] = 'X'; /* magic */
    assert_int_equal(gw_store_blob_parse(v, sizeof v, &b), GW_ECORRUPT);
    memcpy(v, ok, sizeof ok);
    v[7] = 4; /* n: directory past the value */
    assert_int_equal(gw_store_blob_parse(v, sizeof v, &b), GW_ECORRUPT);
    memcpy(v, ok, sizeof ok);
    v[4] = 0x80; /* huge n */
    assert_int_equal(gw_store_blob_parse(v, sizeof v, &b), GW_ECORRUPT);
    memcpy(v, ok, sizeof ok);
    v[23] = 6; /* last end past the block area */
    assert_int_equal(gw_store_blob_parse(v, sizeof v, &b), GW_ECORRUPT);
    memcpy(v, ok, sizeof ok);
    v[15] = 5; /* offsets not monotonic: 5 then 5 is fine ... */
    assert_int_equal(gw_store_blob_parse(v, sizeof v, &b), GW_OK);
    v[23] = 4; /* ... 5 then 4 is not */
    assert_int_equal(gw_store_blob_parse(v, sizeof v, &b), GW_ECORRUPT);
    memcpy(v, ok, sizeof ok);
    v[19] = 4; /* sids out of order */
    assert_int_equal(gw_store_blob_parse(v, sizeof v, &b), GW_ECORRUPT);
    assert_int_equal(gw_store_blob_parse(ok, 7, &b), GW_ECORRUPT); /* short */
    assert_int_equal(gw_store_blob_parse(ok, 23, &b), GW_ECORRUPT); /* cut in the directory */
    static const uint8_t empty[] = {'G', 'W', 'B', '1', 0, 0, 0, 0};
    assert_int_equal(gw_store_blob_parse(empty, sizeof empty, &b), GW_OK);
    assert_int_equal(b.n, 0);
    assert_int_equal(gw_store_blob_lower(&b, 1), 0);
}

/* The GWB2 worked example of keys.c: one timestamp column shared by sid 5
 * (a value part) and sid 7 (a whole block "de"). */
static const uint8_t gwb2_example[] = {
    'G', 'W', 'B', '2', 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 8,           /* n 2, m 1, col end 8 */
    0, 0, 0, 5, 0, 0, 0, 8, 0, 0, 0, 7, 0, 0, 0, 11,                  /* directory */
    0x10, 0x03, 0xd0, 0x0f, 0xb0, 0xea, 0x01, 0x00,                   /* column */
    0x01, 0x00, 0x11, 0x00, 0x01, 0x1e, 0x32, 0x32, 0x00, 'd', 'e'};  /* entries */
static const uint8_t example_block[] = {0x10, 0x03, 0xd0, 0x0f, 0xb0, 0xea, 0x01, 0x00,
                                        0x11, 0x00, 0x01, 0x1e, 0x32, 0x32};

static void test_store_blob2_parse_checks(void **state)
{
    (void)state;
    struct gw_store_blob b;
    assert_int_equal(gw_store_blob_parse(gwb2_example, sizeof gwb2_example, &b), GW_OK);
    assert_int_equal(b.n, 2);
    assert_int_equal(b.ncols, 1);
    struct gw_buf j;
    gw_buf_init(&j, 0);
    const uint8_t *p;
    size_t len;
    assert_int_equal(gw_store_blob_resolve(&b, 0, &j, &p, &len), GW_OK);
    assert_int_equal(len, sizeof example_block);
    assert_memory_equal(p, example_block, sizeof example_block);
    assert_int_equal(gw_store_blob_resolve(&b, 1, &j, &p, &len), GW_OK);
    assert_int_equal(len, 2);
    assert_memory_equal(p, "de", 2);
    /* unjoined: entry 0 is column 0 + its value part, entry 1 a whole block */
    const uint8_t *col;
    size_t clen;
    assert_int_equal(gw_store_blob_split(&b, 0, &p, &len, &col, &clen), GW_OK);
    assert_int_equal(clen, 8);
    assert_memory_equal(col, example_block, 8);
    assert_int_equal(len, 7);
    assert_memory_equal(p, gwb2_example + 41, 7);
    assert_int_equal(gw_store_blob_split(&b, 1, &p, &len, &col, &clen), GW_OK);
    assert_null(col);
    assert_int_equal(len, 2);
    assert_memory_equal(p, "de", 2);
    /* a blob known to be good parses to the same view without the checks */
    struct gw_store_blob bk;
    assert_int_equal(gw_store_blob_parse_known(gwb2_example, sizeof gwb2_example, &bk), GW_OK);
    assert_int_equal(bk.n, b.n);
    assert_ptr_equal(bk.dir, b.dir);
    assert_ptr_equal(bk.data, b.data);
    assert_ptr_equal(bk.cols, b.cols);

    uint8_t v[sizeof gwb2_example];
    memcpy(v, gwb2_example, sizeof v);
    v[11] = 9; /* column count past the value */
    assert_int_equal(gw_store_blob_parse(v, sizeof v, &b), GW_ECORRUPT);
    memcpy(v, gwb2_example, sizeof v);
    v[15] = 60; /* column area past the value */
    assert_int_equal(gw_store_blob_parse(v, sizeof v, &b), GW_ECORRUPT);
    memcpy(v, gwb2_example, sizeof v);
    v[31] = 12; /* last entry past the block area */
    assert_int_equal(gw_store_blob_parse(v, sizeof v, &b), GW_ECORRUPT);
    memcpy(v, gwb2_example, sizeof v);
    v[40] = 0x02; /* column ref 2 of 1 */
    assert_int_equal(gw_store_blob_parse(v, sizeof v, &b), GW_OK);
    assert_int_equal(gw_store_blob_resolve(&b, 0, &j, &p, &len), GW_ECORRUPT);
    assert_int_equal(gw_store_blob_split(&b, 0, &p, &len, &col, &clen), GW_ECORRUPT);
    memcpy(v, gwb2_example, sizeof v);
    v[41] = 0x07; /* bad value part kind */
    assert_int_equal(gw_store_blob_parse(v, sizeof v, &b), GW_OK);
    assert_int_equal(gw_store_blob_resolve(&b, 0, &j, &p, &len), GW_ECORRUPT);
    memcpy(v, gwb2_example, sizeof v);
    v[32] = 0x11; /* column flags: zstd is never valid there */
    assert_int_equal(gw_store_blob_parse(v, sizeof v, &b), GW_OK);
    assert_int_equal(gw_store_blob_resolve(&b, 0, &j, &p, &len), GW_ECORRUPT);
    for (size_t cut = 0; cut < sizeof gwb2_example; cut++) {
        if (gw_store_blob_parse(gwb2_example, cut, &b) != GW_OK)
            continue;
        for (uint32_t i = 0; i < b.n; i++) {
            int rc = gw_store_blob_resolve(&b, i, &j, &p, &len);
            assert_true(rc == GW_OK || rc == GW_ECORRUPT);
        }
    }
    gw_buf_free(&j);
}

struct cols_ud {
    int64_t t[2][40];
    double v[4][40];
    int bad;
};

/* Node 1, window W0: sids 2, 4, 6 share column 1 (40 samples), sid 8 has
 * column 2 (20 samples), sid 10 is a whole block; then a GWB1 blob (seq 1)
 * with sid 4's later block. */
static int put_cols_fn(struct gw_store_txn *t, void *ud)
{
    struct cols_ud *u = ud;
    struct gw_buf c1, c2, parts[4], whole, late;
    gw_buf_init(&c1, 0);
    gw_buf_init(&c2, 0);
    gw_buf_init(&whole, 0);
    gw_buf_init(&late, 0);
    for (int i = 0; i < 4; i++)
        gw_buf_init(&parts[i], 0);
    assert_int_equal(gw_block_ts_encode(u->t[0], 40, &c1), GW_OK);
    assert_int_equal(gw_block_ts_encode(u->t[1], 20, &c2), GW_OK);
    for (int i = 0; i < 3; i++)
        assert_int_equal(gw_block_values_encode(u->v[i], 40, &parts[i]), GW_OK);
    assert_int_equal(gw_block_values_encode(u->v[3], 20, &parts[3]), GW_OK);
    assert_int_equal(gw_block_encode(u->t[0], u->v[3], 40, &whole), GW_OK);
    struct gw_store_blob_col cols[2] = {{c1.data, c1.len}, {c2.data, c2.len}};
    struct gw_store_blob_entry e[5] = {
        {2, parts[0].data, parts[0].len, 1}, {4, parts[1].data, parts[1].len, 1},
        {6, parts[2].data, parts[2].len, 1}, {8, parts[3].data, parts[3].len, 2},
        {10, whole.data, whole.len, 0}};
    int rc = gw_store_blob_put_cols(t, 1, W0, cols, 2, e, 5);
    /* a column ref past the columns is refused */
    struct gw_store_blob_entry bad = {12, parts[0].data, parts[0].len, 3};
    if (rc == GW_OK && gw_store_blob_put_cols(t, 1, W0 + 1, cols, 2, &bad, 1) != GW_EINVAL)
        u->bad = 1;
    int64_t lt[3] = {W0 + 3000000, W0 + 3015000, W0 + 3030000};
    double lv[3] = {7, 8, 9};
    if (rc == GW_OK) rc = gw_block_encode(lt, lv, 3, &late);
    struct gw_store_blob_entry le = {4, late.data, late.len, 0};
    if (rc == GW_OK) rc = gw_store_blob_put(t, 1, W0, &le, 1);
    gw_buf_free(&c1);
    gw_buf_free(&c2);
    gw_buf_free(&whole);
    gw_buf_free(&late);
    for (int i = 0; i < 4; i++)
        gw_buf_free(&parts[i]);
    return rc;
}

struct dec_blocks {
    int64_t t[128];
    double v[128];
    size_t n, blocks;
};

static int dec_block_cb(void *ud, int64_t ws, const uint8_t *block, size_t len)
{
    struct dec_blocks *d = ud;
    (void)ws;
    size_t got = 0;
    int rc = gw_block_decode(block, len, d->t + d->n, d->v + d->n, 128 - d->n, &got);
    if (rc) return rc;
    d->n += got;
    d->blocks++;
    return GW_OK;
}

/* gw_store_block_parts_get: columns and value parts decoded apart. */
struct dec_parts {
    int64_t t[128];
    double v[128];
    size_t n, whole, parts;
    const uint8_t *col[8];
};

static int dec_part_cb(void *ud, const struct gw_store_block_part *bp)
{
    struct dec_parts *d = ud;
    size_t got = 0;
    int rc;
    if (!bp->col) {
        assert_null(bp->val);
        rc = gw_block_decode(bp->block, bp->len, d->t + d->n, d->v + d->n, 128 - d->n, &got);
        if (rc) return rc;
        d->whole++;
    } else {
        assert_null(bp->block);
        rc = gw_block_ts_decode(bp->col, bp->col_len, d->t + d->n, 128 - d->n, &got);
        if (rc) return rc;
        rc = gw_block_values_decode(bp->val, bp->val_len, got, d->v + d->n);
        if (rc) return rc;
        if (d->parts < 8) d->col[d->parts] = bp->col;
        d->parts++;
    }
    d->n += got;
    return GW_OK;
}

static void test_store_blob_shared_columns(void **state)
{
    struct fx *f = *state;
    struct gw_store *s = open_store(f->dir, 0, 0);
    struct cols_ud u;
    memset(&u, 0, sizeof u);
    for (int i = 0; i < 40; i++) {
        u.t[0][i] = W0 + 15000 * i + (i % 3) * 7;   /* jittered, shared */
        if (i < 20) u.t[1][i] = W0 + 30000 * i + 11;
        u.v[0][i] = i * 0.25;
        u.v[1][i] = 1e6 + i * 17;
        u.v[2][i] = i % 5 ? (double)i / 3.0 : -0.0;
        u.v[3][i] = 42.5 - i;
    }
    struct gw_error err = {0};
    assert_int_equal(gw_store_write(s, put_cols_fn, &u, &err), GW_OK);
    assert_int_equal(u.bad, 0);
    for (int reopen = 0; reopen < 2; reopen++) {
        struct gw_store_txn *t;
        assert_int_equal(gw_store_read_begin(s, &t, NULL), GW_OK);
        static const uint64_t sids[4] = {2, 4, 6, 8};
        for (int k = 0; k < 4; k++) {
            struct dec_blocks d;
            memset(&d, 0, sizeof d);
            assert_int_equal(gw_store_blocks_get(t, 1, sids[k], INT64_MIN, INT64_MAX, dec_block_cb, &d), GW_OK);
            size_t n = k == 3 ? 20 : 40;
            assert_int_equal(d.n, n + (k == 1 ? 3 : 0));
            for (size_t i = 0; i < n; i++) {
                assert_true(d.t[i] == u.t[k == 3][i]);
                assert_memory_equal(&d.v[i], &u.v[k][i], 8);
            }
            if (k == 1) /* the later GWB1 blob of the same window follows */
                assert_true(d.t[40] == W0 + 3000000 && d.v[42] == 9);
        }
        /* unjoined: the same samples; sids 2, 4, 6 name one column, 8
         * another; asked twice in one transaction (the second time the
         * blob's directory is known) */
        const uint8_t *shared = NULL, *other = NULL;
        for (int pass = 0; pass < 2; pass++) {
            for (int k = 0; k < 4; k++) {
                struct dec_parts dp;
                memset(&dp, 0, sizeof dp);
                assert_int_equal(
                    gw_store_block_parts_get(t, 1, sids[k], INT64_MIN, INT64_MAX, dec_part_cb, &dp), GW_OK);
                size_t n = k == 3 ? 20 : 40;
                assert_int_equal(dp.n, n + (k == 1 ? 3 : 0));
                assert_int_equal(dp.parts, 1);
                assert_int_equal(dp.whole, k == 1 ? 1 : 0);
                for (size_t i = 0; i < n; i++) {
                    assert_true(dp.t[i] == u.t[k == 3][i]);
                    assert_memory_equal(&dp.v[i], &u.v[k][i], 8);
                }
                if (k == 1) assert_true(dp.t[40] == W0 + 3000000 && dp.v[42] == 9);
                if (k < 3) {
                    if (!shared) shared = dp.col[0];
                    assert_ptr_equal(dp.col[0], shared);
                } else {
                    other = dp.col[0];
                }
            }
        }
        assert_non_null(other);
        assert_ptr_not_equal(other, shared);
        struct dec_parts dp;
        memset(&dp, 0, sizeof dp);
        assert_int_equal(gw_store_block_parts_get(t, 1, 10, INT64_MIN, INT64_MAX, dec_part_cb, &dp), GW_OK);
        assert_int_equal(dp.n, 40);
        assert_int_equal(dp.whole, 1);
        assert_int_equal(gw_store_block_parts_get(t, 1, 10, INT64_MIN, INT64_MAX, NULL, NULL), GW_EINVAL);
        struct dec_blocks d;
        memset(&d, 0, sizeof d);
        assert_int_equal(gw_store_blocks_get(t, 1, 10, INT64_MIN, INT64_MAX, dec_block_cb, &d), GW_OK);
        assert_int_equal(d.n, 40);
        assert_true(d.v[39] == 42.5 - 39 && d.t[39] == u.t[0][39]);
        struct pb_seen pb;
        memset(&pb, 0, sizeof pb);
        assert_int_equal(gw_store_partition_blocks_each(t, 19675, pb_cb, &pb), GW_OK);
        assert_int_equal(pb.n, 6);
        assert_int_equal(pb.sid_sum, 2 + 4 + 6 + 8 + 10 + 4);
        gw_store_read_end(t);
        if (reopen == 0) {
            gw_store_close(s);
            s = open_store(f->dir, 0, 0);
        }
    }
    gw_store_close(s);
}

/* Overwrites the value of the first key of a partition using LMDB directly. */
static void raw_put_first(const char *dir, const char *dbname, const void *val, size_t len)
{
    MDB_env *env;
    assert_int_equal(mdb_env_create(&env), 0);
    assert_int_equal(mdb_env_set_maxdbs(env, 64), 0);
    assert_int_equal(mdb_env_set_mapsize(env, (size_t)1 << 30), 0);
    assert_int_equal(mdb_env_open(env, dir, 0, 0644), 0);
    MDB_txn *txn;
    assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
    MDB_dbi dbi;
    assert_int_equal(mdb_dbi_open(txn, dbname, 0, &dbi), 0);
    MDB_cursor *c;
    assert_int_equal(mdb_cursor_open(txn, dbi, &c), 0);
    MDB_val k, d;
    assert_int_equal(mdb_cursor_get(c, &k, &d, MDB_FIRST), 0);
    uint8_t key[64];
    assert_true(k.mv_size <= sizeof key);
    memcpy(key, k.mv_data, k.mv_size);
    MDB_val nk = {k.mv_size, key}, nd = {len, (void *)val};
    mdb_cursor_close(c);
    assert_int_equal(mdb_put(txn, dbi, &nk, &nd, 0), 0);
    assert_int_equal(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
}

static void test_store_corrupt_blob_detected(void **state)
{
    struct fx *f = *state;
    struct gw_store *s = open_store(f->dir, 0, 0);
    put_test_blobs(s);
    gw_store_close(s);
    /* day -1 holds one blob (node 1, WN): directory claims 3 entries */
    static const uint8_t bad[] = {'G', 'W', 'B', '1', 0, 0, 0, 3, 0, 0, 0, 5, 0, 0, 0, 1, 'x'};
    raw_put_first(f->dir, "p-0000001", bad, sizeof bad);
    s = open_store(f->dir, 0, 0);
    struct gw_store_txn *t;
    assert_int_equal(gw_store_read_begin(s, &t, NULL), GW_OK);
    struct got_blocks g;
    memset(&g, 0, sizeof g);
    assert_int_equal(gw_store_blocks_get(t, 1, 5, INT64_MIN, INT64_MAX, got_block_cb, &g), GW_ECORRUPT);
    assert_int_equal(gw_store_blocks_any(t, 1, 5, WN, WN), GW_ECORRUPT);
    /* a blob refused once is checked (and refused) again */
    assert_int_equal(gw_store_blocks_get(t, 1, 5, INT64_MIN, INT64_MAX, got_block_cb, &g), GW_ECORRUPT);
    struct dec_parts dp;
    memset(&dp, 0, sizeof dp);
    assert_int_equal(gw_store_block_parts_get(t, 1, 5, INT64_MIN, INT64_MAX, dec_part_cb, &dp), GW_ECORRUPT);
    struct pb_seen pb;
    memset(&pb, 0, sizeof pb);
    assert_int_equal(gw_store_partition_blocks_each(t, -1, pb_cb, &pb), GW_ECORRUPT);
    /* other days are fine */
    assert_int_equal(count_blocks(t, 1, 5, W0, INT64_MAX), 6);
    gw_store_read_end(t);
    gw_store_close(s);
}

static void test_store_old_format_refused(void **state)
{
    struct fx *f = *state;
    struct gw_store *s = open_store(f->dir, 0, 0);
    gw_store_close(s);
    uint8_t v1[8] = {0, 0, 0, 0, 0, 0, 0, 1};
    MDB_env *env;
    assert_int_equal(mdb_env_create(&env), 0);
    assert_int_equal(mdb_env_set_maxdbs(env, 64), 0);
    assert_int_equal(mdb_env_open(env, f->dir, 0, 0644), 0);
    MDB_txn *txn;
    assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
    MDB_dbi dbi;
    assert_int_equal(mdb_dbi_open(txn, "meta", 0, &dbi), 0);
    MDB_val k = {14, (void *)"format_version"}, d = {8, v1};
    assert_int_equal(mdb_put(txn, dbi, &k, &d, 0), 0);
    assert_int_equal(mdb_txn_commit(txn), 0);
    mdb_env_close(env);

    struct gw_store_opts o = {.dir = f->dir};
    struct gw_error err = {0};
    s = NULL;
    assert_int_equal(gw_store_open(&s, &o, &err), GW_ECORRUPT);
    assert_null(s);
    assert_non_null(strstr(err.msg, "store format version 1 is not supported; expected 2 to 5"));
    o.read_only = 1;
    memset(&err, 0, sizeof err);
    assert_int_equal(gw_store_open(&s, &o, &err), GW_ECORRUPT);
    assert_null(s);
    assert_non_null(strstr(err.msg, "store format version 1 is not supported; expected 2 to 5"));

    /* formats 2 (GWB1 blobs only), 3 (GWB2) and 4 (GWB3, no LPC or ANS
     * value forms) are read as is and marked 5 by a read-write open; a
     * newer format is refused */
    for (uint8_t ver = 2; ver <= 6; ver++) {
        if (ver == 5)
            continue;
        uint8_t vb[8] = {0, 0, 0, 0, 0, 0, 0, ver};
        assert_int_equal(mdb_env_create(&env), 0);
        assert_int_equal(mdb_env_set_maxdbs(env, 64), 0);
        assert_int_equal(mdb_env_open(env, f->dir, 0, 0644), 0);
        assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
        assert_int_equal(mdb_dbi_open(txn, "meta", 0, &dbi), 0);
        d.mv_size = 8;
        d.mv_data = vb;
        assert_int_equal(mdb_put(txn, dbi, &k, &d, 0), 0);
        assert_int_equal(mdb_txn_commit(txn), 0);
        mdb_env_close(env);
        o.read_only = 0;
        memset(&err, 0, sizeof err);
        s = NULL;
        if (ver == 6) {
            assert_int_equal(gw_store_open(&s, &o, &err), GW_ECORRUPT);
            assert_non_null(strstr(err.msg, "store format version 6 is not supported; expected 2 to 5"));
            continue;
        }
        o.read_only = 1;
        assert_int_equal(gw_store_open(&s, &o, &err), GW_OK);
        gw_store_close(s);
        o.read_only = 0;
        assert_int_equal(gw_store_open(&s, &o, &err), GW_OK);
        struct gw_store_txn *t;
        uint64_t now_ver = 0;
        assert_int_equal(gw_store_read_begin(s, &t, NULL), GW_OK);
        assert_int_equal(gw_store_meta_get_u64(t, "format_version", &now_ver), GW_OK);
        assert_int_equal(now_ver, 5);
        gw_store_read_end(t);
        gw_store_close(s);
    }
}

struct parts_seen {
    int64_t day[16];
    uint64_t entries[16], bytes[16];
    size_t n;
};

static int parts_cb(void *ud, const struct gw_store_partition *p)
{
    struct parts_seen *ps = ud;
    assert_true(ps->n < 16);
    ps->day[ps->n] = p->day;
    ps->entries[ps->n] = p->entries;
    ps->bytes[ps->n] = p->bytes;
    ps->n++;
    return GW_OK;
}

static void list_parts(struct gw_store *s, struct parts_seen *ps)
{
    struct gw_store_txn *t;
    memset(ps, 0, sizeof *ps);
    assert_int_equal(gw_store_read_begin(s, &t, NULL), GW_OK);
    assert_int_equal(gw_store_partitions(t, parts_cb, ps), GW_OK);
    gw_store_read_end(t);
}

struct drop_ud {
    int64_t before;
    unsigned dropped;
    int then_fail;
    int put_after;
};

static int drop_fn(struct gw_store_txn *t, void *ud)
{
    struct drop_ud *u = ud;
    int rc = gw_store_partitions_drop_before(t, u->before, &u->dropped);
    if (rc != GW_OK)
        return rc;
    if (u->put_after) {
        static const struct bspec e[] = {{9, 0, 4}};
        struct blob_def bd = {9, 19675 * D + 1, e, 1}; /* recreates day 19675 */
        rc = put_one_blob(t, &bd);
        if (rc != GW_OK)
            return rc;
    }
    return u->then_fail ? GW_EINVAL : GW_OK;
}

static void test_store_partitions_drop(void **state)
{
    struct fx *f = *state;
    struct gw_store *s = open_store(f->dir, 0, 0);
    put_test_blobs(s);
    struct parts_seen ps;
    list_parts(s, &ps);
    assert_int_equal(ps.n, 3);
    assert_true(ps.day[0] == -1);
    assert_true(ps.day[1] == 19675);
    assert_true(ps.day[2] == 19676);
    assert_int_equal(ps.entries[0], 1);
    assert_int_equal(ps.entries[1], 5); /* blobs, not blocks */
    assert_int_equal(ps.entries[2], 1);
    assert_true(ps.bytes[1] >= 40000); /* the overflow pages count */
    assert_true(ps.bytes[2] > 0);

    /* A drop in an aborted txn changes nothing, handles stay usable. */
    struct drop_ud u = {.before = 19677, .then_fail = 1};
    assert_int_equal(gw_store_write(s, drop_fn, &u, NULL), GW_EINVAL);
    list_parts(s, &ps);
    assert_int_equal(ps.n, 3);
    struct gw_store_txn *t;
    assert_int_equal(gw_store_read_begin(s, &t, NULL), GW_OK);
    assert_int_equal(gw_store_blocks_any(t, 1, 5, W0, W0 + 5000), 1);
    gw_store_read_end(t);

    memset(&u, 0, sizeof u);
    u.before = 19676;
    assert_int_equal(gw_store_write(s, drop_fn, &u, NULL), GW_OK);
    assert_int_equal(u.dropped, 2);
    list_parts(s, &ps);
    assert_int_equal(ps.n, 1);
    assert_true(ps.day[0] == 19676);
    assert_int_equal(gw_store_read_begin(s, &t, NULL), GW_OK);
    assert_int_equal(gw_store_blocks_any(t, 1, 5, INT64_MIN, 19676 * D - 1), 0);
    assert_int_equal(gw_store_blocks_any(t, 1, 5, 19676 * D, INT64_MAX), 1);
    gw_store_read_end(t);

    /* drop and recreate a day in one txn; persists across reopen */
    memset(&u, 0, sizeof u);
    u.before = 19677;
    u.put_after = 1;
    assert_int_equal(gw_store_write(s, drop_fn, &u, NULL), GW_OK);
    assert_int_equal(u.dropped, 1);
    gw_store_close(s);
    s = open_store(f->dir, 0, 0);
    list_parts(s, &ps);
    assert_int_equal(ps.n, 1);
    assert_true(ps.day[0] == 19675);
    assert_int_equal(ps.entries[0], 1);
    assert_int_equal(gw_store_read_begin(s, &t, NULL), GW_OK);
    assert_int_equal(count_blocks(t, 9, 9, 19675 * D, 19675 * D + 1), 1);
    gw_store_read_end(t);
    memset(&u, 0, sizeof u);
    u.before = INT64_MAX;
    assert_int_equal(gw_store_write(s, drop_fn, &u, NULL), GW_OK);
    assert_int_equal(u.dropped, 1);
    list_parts(s, &ps);
    assert_int_equal(ps.n, 0);
    gw_store_close(s);
}

/* ------------------------------------------------------------ map growth */

/* Bulk blobs: node 1, window i * 2 h from `first`, `sids` series with one
 * block of `len` bytes each (sid s gets block k = window number). */
struct bulk_ud {
    uint64_t first;
    unsigned n;
    unsigned sids;
    size_t len;
};

static int bulk_fn(struct gw_store_txn *t, void *ud)
{
    struct bulk_ud *u = ud;
    struct gw_store_blob_entry ents[64];
    assert_true(u->sids <= 64);
    uint8_t *buf = malloc((size_t)u->sids * u->len);
    assert_non_null(buf);
    int rc = GW_OK;
    for (unsigned i = 0; i < u->n && rc == GW_OK; i++) {
        int64_t ws = (int64_t)(u->first + i) * H2;
        for (unsigned j = 0; j < u->sids; j++) {
            fill_block(buf + j * u->len, j + 1, ws, 0, u->len);
            ents[j].sid = j + 1;
            ents[j].block = buf + j * u->len;
            ents[j].len = u->len;
        }
        rc = gw_store_blob_put(t, 1, ws, ents, u->sids);
    }
    free(buf);
    return rc;
}

struct count_ud {
    uint64_t sid;
    uint64_t good, bad;
};

static int count_cb(void *ud, int64_t ws, const uint8_t *block, size_t len)
{
    struct count_ud *c = ud;
    if (block_ok(block, c->sid, ws, 0, len))
        c->good++;
    else
        c->bad++;
    return GW_OK;
}

struct grow_ctx {
    struct gw_store *s;
    volatile int done;
    int reads, errors;
};

static void *reader_main(void *arg)
{
    struct grow_ctx *c = arg;
    while (!__atomic_load_n(&c->done, __ATOMIC_ACQUIRE)) {
        struct gw_store_txn *t;
        if (gw_store_read_begin(c->s, &t, NULL) != GW_OK) {
            c->errors++;
            continue;
        }
        struct count_ud cu = {.sid = 3};
        if (gw_store_blocks_get(t, 1, 3, INT64_MIN, INT64_MAX, count_cb, &cu) != GW_OK || cu.bad)
            c->errors++;
        gw_store_read_end(t);
        c->reads++;
        usleep(200);
    }
    return NULL;
}

static void test_store_map_growth_with_reader(void **state)
{
    struct fx *f = *state;
    struct gw_store *s = open_store(f->dir, 128 << 10, 0);
    struct bulk_ud seed = {0, 1, 4, 500};
    assert_int_equal(gw_store_write(s, bulk_fn, &seed, NULL), GW_OK);

    struct grow_ctx c = {.s = s};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, reader_main, &c), 0);
    /* 12 commits of one ~1 MB blob each (16 series x 64 KiB), then one
     * commit of three */
    uint64_t next = 1;
    for (int i = 0; i < 12; i++) {
        struct bulk_ud u = {next, 1, 16, 65536};
        struct gw_error err = {0};
        int rc = gw_store_write(s, bulk_fn, &u, &err);
        if (rc != GW_OK)
            print_error("bulk: %s\n", err.msg);
        assert_int_equal(rc, GW_OK);
        next++;
    }
    struct bulk_ud big = {next, 3, 16, 65536};
    assert_int_equal(gw_store_write(s, bulk_fn, &big, NULL), GW_OK);
    next += 3;
    __atomic_store_n(&c.done, 1, __ATOMIC_RELEASE);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(c.errors, 0);
    assert_true(c.reads > 0);

    struct gw_store_stats st;
    assert_int_equal(gw_store_stats(s, &st, NULL), GW_OK);
    assert_true(st.map_bytes >= (UINT64_C(16) << 20));
    assert_true(st.used_bytes >= (UINT64_C(15) << 20));

    for (int reopen = 0; reopen < 2; reopen++) {
        struct gw_store_txn *t;
        assert_int_equal(gw_store_read_begin(s, &t, NULL), GW_OK);
        struct count_ud cu = {.sid = 1}; /* in the seed and in every bulk blob */
        assert_int_equal(gw_store_blocks_get(t, 1, 1, INT64_MIN, INT64_MAX, count_cb, &cu), GW_OK);
        assert_int_equal(cu.good, next);
        assert_int_equal(cu.bad, 0);
        gw_store_read_end(t);
        gw_store_close(s);
        /* the grown map persists */
        s = open_store(f->dir, 128 << 10, 0);
    }
    gw_store_close(s);
}

static void test_store_map_limit_is_efull(void **state)
{
    struct fx *f = *state;
    struct gw_store *s = open_store(f->dir, 128 << 10, 1 << 20);
    struct bulk_ud u = {0, 3, 16, 65536}; /* 3 MB in one txn > 1 MiB ceiling */
    struct gw_error err = {0};
    assert_int_equal(gw_store_write(s, bulk_fn, &u, &err), GW_EFULL);
    assert_true(err.msg[0] != 0);
    /* still usable for small writes */
    struct bulk_ud small = {1000, 2, 2, 100};
    assert_int_equal(gw_store_write(s, bulk_fn, &small, NULL), GW_OK);
    gw_store_close(s);
}

/* ----------------------------------------------------- read-only child */

static int child_count(struct gw_store *ro, uint64_t *n)
{
    struct gw_store_txn *t;
    if (gw_store_read_begin(ro, &t, NULL) != GW_OK)
        return -1;
    struct count_ud cu = {.sid = 2};
    int rc = gw_store_blocks_get(t, 1, 2, INT64_MIN, INT64_MAX, count_cb, &cu);
    gw_store_read_end(t);
    *n = cu.bad ? 0 : cu.good;
    return rc;
}

static int child_main(const char *dir, int rfd, int wfd)
{
    struct gw_store_opts o = {.dir = dir, .read_only = 1, .initial_map_bytes = 128 << 10};
    struct gw_store *ro = NULL;
    if (gw_store_open(&ro, &o, NULL) != GW_OK)
        return 10;
    uint64_t n = 0;
    if (child_count(ro, &n) != GW_OK || n != 3)
        return 11;
    struct gw_store_txn *t;
    if (gw_store_read_begin(ro, &t, NULL) != GW_OK)
        return 12;
    struct gw_store_series se;
    int rc = gw_store_series_get(t, 100, &se);
    int lab_ok = rc == GW_OK && se.labels_len == 12 && memcmp(se.labels, "\x08__name__\x02up", 12) == 0;
    gw_store_read_end(t);
    if (rc != GW_OK || se.node_id != 100 % 3 || !lab_ok)
        return 13;
    char c = 'r';
    if (write(wfd, &c, 1) != 1 || read(rfd, &c, 1) != 1)
        return 14;
    /* the parent added blobs in new day partitions meanwhile */
    if (child_count(ro, &n) != GW_OK || n != 3 + 60)
        return 15;
    struct gw_store_stats st;
    if (gw_store_stats(ro, &st, NULL) != GW_OK || st.series != 1)
        return 16;
    gw_store_close(ro);
    return 0;
}

static void test_store_read_only_second_process(void **state)
{
    struct fx *f = *state;
    /* small map: the parent grows it while the child has it mapped, so the
     * child sees MDB_MAP_RESIZED and must adopt the new size */
    struct gw_store *s = open_store(f->dir, 128 << 10, 0);
    static struct series_def def;
    const char *kv[] = {"__name__", "up"};
    def_series(&def, 100, kv, 1);
    write_series(s, &def, 1);
    struct bulk_ud u = {0, 3, 2, 100};
    assert_int_equal(gw_store_write(s, bulk_fn, &u, NULL), GW_OK);

    int to_child[2], to_parent[2];
    assert_int_equal(pipe(to_child), 0);
    assert_int_equal(pipe(to_parent), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(to_child[1]);
        close(to_parent[0]);
        _exit(child_main(f->dir, to_child[0], to_parent[1]));
    }
    close(to_child[0]);
    close(to_parent[1]);
    char c;
    assert_int_equal(read(to_parent[0], &c, 1), 1);
    struct bulk_ud later = {12 * 6, 60, 2, 40000}; /* ~4.8 MB, 6 days later, 5 days */
    assert_int_equal(gw_store_write(s, bulk_fn, &later, NULL), GW_OK);
    assert_int_equal(write(to_child[1], "g", 1), 1);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    close(to_child[1]);
    close(to_parent[0]);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    gw_store_close(s);
}

/* ------------------------------------------------------------ index size */

/* Exporter-shaped series: 32 nodes x (8 GPUs x 55 DCGM metrics with 12
 * labels + 29 node metrics with 5 labels) = 15,008 series. Shared values
 * (__name__, job, gpu, device, driver, model), per-node hostname/instance,
 * per-GPU UUID and PCI bus id. */
#define EXP_NODES 32
#define EXP_GPUS 8
#define EXP_GPU_METRICS 55
#define EXP_NODE_METRICS 29
#define EXP_PER_NODE (EXP_GPUS * EXP_GPU_METRICS + EXP_NODE_METRICS)

static size_t exp_labels(unsigned node, unsigned j, uint8_t *out, uint16_t *gpu)
{
    char host[32], inst[32], name[48], uuid[48], pci[32], dev[16], g[8];
    snprintf(host, sizeof host, "gpu-node-%03u", node);
    if (j < EXP_GPUS * EXP_GPU_METRICS) {
        unsigned gi = j / EXP_GPU_METRICS, m = j % EXP_GPU_METRICS;
        uint64_t h = XXH3_64bits(&(unsigned[2]){node, gi}, 2 * sizeof(unsigned));
        snprintf(inst, sizeof inst, "10.20.%u.%u:9400", node / 200, node % 200 + 10);
        snprintf(name, sizeof name, "DCGM_FI_DEV_METRIC_%02u_TOTAL", m);
        snprintf(uuid, sizeof uuid, "GPU-%08x-%04x-%04x-%04x-%012llx", (unsigned)(h >> 32), (unsigned)(h >> 16) & 0xffff,
                 (unsigned)h & 0xffff, (unsigned)(h >> 48), (unsigned long long)(h * 0x9e3779b97f4a7c15ULL) & 0xffffffffffffULL);
        snprintf(pci, sizeof pci, "00000000:%02X:00.0", 0x18 + gi * 0x10);
        snprintf(dev, sizeof dev, "nvidia%u", gi);
        snprintf(g, sizeof g, "%u", gi);
        const char *kv[] = {"DCGM_FI_DRIVER_VERSION", "535.129.03", "Hostname", host, "UUID", uuid,
                            "__name__", name, "cluster", "prod-eu-1", "device", dev, "gpu", g,
                            "hostname", host, "instance", inst, "job", "dcgm", "modelName",
                            "NVIDIA H100 80GB HBM3", "pci_bus_id", pci};
        *gpu = (uint16_t)gi;
        return canon(out, kv, 12);
    }
    snprintf(inst, sizeof inst, "10.20.%u.%u:9100", node / 200, node % 200 + 10);
    snprintf(name, sizeof name, "node_metric_%02u_seconds_total", j - EXP_GPUS * EXP_GPU_METRICS);
    const char *kv[] = {"__name__", name, "cluster", "prod-eu-1", "hostname", host, "instance", inst,
                        "job", "node-exporter"};
    *gpu = 0xFFFF;
    return canon(out, kv, 5);
}

static int exp_node_fn(struct gw_store_txn *t, void *ud)
{
    unsigned node = *(unsigned *)ud;
    uint8_t lab[1024];
    for (unsigned j = 0; j < EXP_PER_NODE; j++) {
        uint16_t gpu;
        size_t len = exp_labels(node, j, lab, &gpu);
        uint64_t sid = (uint64_t)node * EXP_PER_NODE + j + 1;
        int rc = gw_store_series_put(t, sid, XXH3_64bits(lab, len), node + 1, gpu, lab, len);
        if (rc != GW_OK)
            return rc;
    }
    return GW_OK;
}

static int count_values(void *ud, const char *v, size_t len)
{
    (void)v;
    (void)len;
    (*(size_t *)ud)++;
    return GW_OK;
}

static void test_store_index_size_exporter_shape(void **state)
{
    struct fx *f = *state;
    struct gw_store *s = open_store(f->dir, 0, 0);
    for (unsigned node = 0; node < EXP_NODES; node++) {
        struct gw_error err = {0};
        int rc = gw_store_write(s, exp_node_fn, &node, &err);
        if (rc != GW_OK)
            print_error("write: %s\n", err.msg);
        assert_int_equal(rc, GW_OK);
    }
    struct gw_store_stats st;
    assert_int_equal(gw_store_stats(s, &st, NULL), GW_OK);
    uint64_t nseries = (uint64_t)EXP_NODES * EXP_PER_NODE;
    assert_int_equal(st.series, nseries);
    double per = (double)st.index_bytes / (double)nseries;
    print_message("index: %llu bytes for %llu series = %.1f bytes/series\n", (unsigned long long)st.index_bytes,
                  (unsigned long long)nseries, per);
    /* index_bytes includes the pages of long postings lists (DUPSORT
     * sub-databases), which mdb_stat leaves out; measured 165 here
     * (series ~50, shash ~35, postings ~75, pairs ~5). */
    assert_true(st.index_bytes < 175 * nseries);
    assert_true(st.index_bytes > 60 * nseries); /* the sids alone take 48 */

    struct gw_store_txn *t;
    assert_int_equal(gw_store_read_begin(s, &t, NULL), GW_OK);
    uint8_t lab[1024];
    for (uint64_t sid = 1; sid <= nseries; sid += 97) {
        unsigned node = (unsigned)((sid - 1) / EXP_PER_NODE), j = (unsigned)((sid - 1) % EXP_PER_NODE);
        uint16_t gpu;
        size_t len = exp_labels(node, j, lab, &gpu);
        struct gw_store_series se;
        assert_int_equal(gw_store_series_get(t, sid, &se), GW_OK);
        assert_int_equal(se.node_id, node + 1);
        assert_int_equal(se.gpu, gpu);
        assert_int_equal(se.labels_len, len);
        assert_memory_equal(se.labels, lab, len);
        uint64_t sids[2];
        size_t n = 0;
        assert_int_equal(gw_store_series_by_hash(t, XXH3_64bits(lab, len), sids, 2, &n), GW_OK);
        assert_int_equal(n, 1);
        assert_int_equal(sids[0], sid);
    }
    struct gw_postings p;
    gw_postings_init(&p);
    assert_int_equal(gw_store_postings_get(t, "hostname", 8, "gpu-node-003", 12, &p), GW_OK);
    assert_int_equal(p.n, EXP_PER_NODE);
    assert_int_equal(p.ids[0], 3 * EXP_PER_NODE + 1);
    assert_int_equal(gw_store_postings_get(t, "gpu", 3, "3", 1, &p), GW_OK);
    assert_int_equal(p.n, EXP_NODES * EXP_GPU_METRICS);
    assert_int_equal(gw_store_postings_get(t, "job", 3, "dcgm", 4, &p), GW_OK);
    assert_int_equal(p.n, EXP_NODES * EXP_GPUS * EXP_GPU_METRICS);
    for (size_t i = 1; i < p.n; i++)
        assert_true(p.ids[i - 1] < p.ids[i]);
    assert_int_equal(gw_store_postings_any(t, "UUID", 4, &p), GW_OK);
    assert_int_equal(p.n, EXP_NODES * EXP_GPUS * EXP_GPU_METRICS);
    size_t nv = 0;
    assert_int_equal(gw_store_label_values(t, "UUID", 4, count_values, &nv), GW_OK);
    assert_int_equal(nv, EXP_NODES * EXP_GPUS);
    nv = 0;
    assert_int_equal(gw_store_label_names(t, count_values, &nv), GW_OK);
    assert_int_equal(nv, 12);
    gw_postings_free(&p);
    gw_store_read_end(t);
    gw_store_close(s);
}

/* ------------------------------------------------------- input checks */

static int bad_labels_fn(struct gw_store_txn *t, void *ud)
{
    int which = *(int *)ud;
    uint8_t lab[1200];
    size_t len;
    if (which == 0) {
        static const uint8_t trunc[] = {8, '_', '_', 'n'}; /* length says 8, 3 bytes follow */
        return gw_store_series_put(t, 1, 1, 0, 0, trunc, sizeof trunc);
    }
    if (which == 1) {
        char name[600];
        memset(name, 'a', sizeof name - 1);
        name[sizeof name - 1] = 0;
        const char *kv[] = {name, "v"};
        len = canon(lab, kv, 1);
        return gw_store_series_put(t, 1, 1, 0, 0, lab, len);
    }
    if (which == 2) {
        const char *kv[] = {"__name__", "up"};
        len = canon(lab, kv, 1);
        return gw_store_series_put(t, (uint64_t)UINT32_MAX + 1, 1, 0, 0, lab, len);
    }
    if (which == 3) {
        /* non-minimal length varint: could not be rebuilt byte for byte */
        static const uint8_t nonmin[] = {0x88, 0x00, '_', '_', 'n', 'a', 'm', 'e', '_', '_', 1, 'x'};
        return gw_store_series_put(t, 1, 1, 0, 0, nonmin, sizeof nonmin);
    }
    if (which == 4) {
        static const uint8_t ff[] = {1, 'a', 2, 'x', 0xff};
        return gw_store_series_put(t, 1, 1, 0, 0, ff, sizeof ff);
    }
    return gw_store_series_put(t, 1, 1, 0, 0, NULL, 0);
}

static void test_store_rejects_bad_labels(void **state)
{
    struct fx *f = *state;
    struct gw_store *s = open_store(f->dir, 0, 0);
    int which = 0;
    assert_int_equal(gw_store_write(s, bad_labels_fn, &which, NULL), GW_EINVAL);
    which = 1;
    assert_int_equal(gw_store_write(s, bad_labels_fn, &which, NULL), GW_ETOOLARGE);
    which = 2;
    assert_int_equal(gw_store_write(s, bad_labels_fn, &which, NULL), GW_ELIMIT);
    which = 3;
    assert_int_equal(gw_store_write(s, bad_labels_fn, &which, NULL), GW_EINVAL);
    which = 4;
    assert_int_equal(gw_store_write(s, bad_labels_fn, &which, NULL), GW_EINVAL);
    which = 5;
    assert_int_equal(gw_store_write(s, bad_labels_fn, &which, NULL), GW_EINVAL);
    struct gw_store_txn *t;
    assert_int_equal(gw_store_read_begin(s, &t, NULL), GW_OK);
    struct gw_postings p;
    gw_postings_init(&p);
    assert_int_equal(gw_store_postings_all(t, &p), GW_OK);
    assert_int_equal(p.n, 0);
    gw_postings_free(&p);
    gw_store_read_end(t);
    gw_store_close(s);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_store_open_close_reopen),
        T(test_store_series_roundtrip),
        T(test_store_postings_and_label_index),
        T(test_store_postings_large_list),
        T(test_store_nodes),
        T(test_store_metadata_roundtrip),
        T(test_store_blobs_roundtrip),
        T(test_store_blob_put_rejects),
        T(test_store_blob_parse_checks),
        T(test_store_blob2_parse_checks),
        T(test_store_blob_shared_columns),
        T(test_store_corrupt_blob_detected),
        T(test_store_old_format_refused),
        T(test_store_partitions_drop),
        T(test_store_map_growth_with_reader),
        T(test_store_map_limit_is_efull),
        T(test_store_read_only_second_process),
        T(test_store_rejects_bad_labels),
        T(test_store_index_size_exporter_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
