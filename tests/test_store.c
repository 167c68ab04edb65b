/* test_store.c - the LMDB series store: persistence across reopen, series,
 * postings and label index (long values included), metadata, nodes, day
 * partitioned blocks, partition listing and retention drops, map growth
 * under a concurrent reader, the map ceiling, and read-only access from a
 * second process. Each test gets a fresh temp dir. */
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

#include <xxhash.h>

#include "gpuwatch/store.h"

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
    assert_int_equal(got, 1);
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
    int rc = gw_store_series_maxt_put(t, 10, -5);
    if (rc == GW_OK)
        rc = gw_store_series_maxt_put(t, 11, INT64_MAX);
    return rc;
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
    gw_postings_free(&p);
    gw_store_read_end(t);

    struct gw_store_stats st;
    assert_int_equal(gw_store_stats(s, &st, NULL), GW_OK);
    assert_int_equal(st.series, 1);
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
    for (uint64_t i = 0; i < u->n; i++) {
        char inst[32];
        snprintf(inst, sizeof inst, "i%llu", (unsigned long long)i);
        const char *kv[] = {"__name__", "m", "instance", inst};
        size_t len = canon(lab, kv, 2);
        int rc = gw_store_series_put(t, i * 7 + 1, XXH3_64bits(lab, len), 0, 0xFFFF, lab, len);
        if (rc != GW_OK)
            return rc;
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
    assert_int_equal(gw_store_postings_any(t, "instance", 8, &p), GW_OK);
    assert_int_equal(p.n, 5000);
    for (size_t i = 0; i < p.n; i++)
        assert_int_equal(p.ids[i], i * 7 + 1);
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

/* ------------------------------------------------------------- blocks */

struct blk {
    uint32_t node;
    uint16_t gpu;
    uint64_t sid;
    int64_t mint;
    size_t len;
};

struct blocks_ud {
    const struct blk *b;
    size_t n;
};

static void fill_block(uint8_t *buf, const struct blk *b)
{
    for (size_t i = 0; i < b->len; i++)
        buf[i] = (uint8_t)(b->sid * 31 + (uint64_t)b->mint + i);
}

static int put_blocks_fn(struct gw_store_txn *t, void *ud)
{
    struct blocks_ud *u = ud;
    static uint8_t buf[65536];
    for (size_t i = 0; i < u->n; i++) {
        fill_block(buf, &u->b[i]);
        int rc = gw_store_block_put(t, u->b[i].node, u->b[i].gpu, u->b[i].sid, u->b[i].mint, buf, u->b[i].len);
        if (rc != GW_OK)
            return rc;
    }
    return GW_OK;
}

struct got_blocks {
    int64_t mint[64];
    size_t len[64];
    int bad;
    size_t n, stop_after;
    uint64_t sid;
};

static int got_block_cb(void *ud, int64_t mint, const uint8_t *block, size_t len)
{
    struct got_blocks *g = ud;
    assert_true(g->n < 64);
    struct blk b = {0, 0, g->sid, mint, len};
    static uint8_t want[65536];
    fill_block(want, &b);
    if (memcmp(want, block, len) != 0)
        g->bad++;
    g->mint[g->n] = mint;
    g->len[g->n] = len;
    g->n++;
    return g->stop_after && g->n >= g->stop_after ? 1 : GW_OK;
}

#define D GW_DAY_MS

static const struct blk test_blocks[] = {
    {1, 0, 5, 19675 * D + 1000, 100},
    {1, 0, 5, 19675 * D + 7200000, 40000}, /* overflow pages */
    {1, 0, 5, 19676 * D + 5, 3},
    {1, 0, 5, 19678 * D + 86399999, 10},
    {1, 0, 5, -D + 10, 7},                  /* before the epoch: day -1 */
    {1, 0, 6, 19675 * D + 2000, 50},        /* other series, same node/gpu */
    {1, 1, 5, 19675 * D + 2000, 50},        /* other gpu */
    {2, 0, 5, 19676 * D, 50},               /* other node */
};

static void put_test_blocks(struct gw_store *s)
{
    struct blocks_ud u = {test_blocks, sizeof test_blocks / sizeof test_blocks[0]};
    struct gw_error err = {0};
    int rc = gw_store_write(s, put_blocks_fn, &u, &err);
    if (rc != GW_OK)
        print_error("blocks: %s\n", err.msg);
    assert_int_equal(rc, GW_OK);
}

static void test_store_blocks_across_days(void **state)
{
    struct fx *f = *state;
    struct gw_store *s = open_store(f->dir, 0, 0);
    put_test_blocks(s);
    for (int reopen = 0; reopen < 2; reopen++) {
        struct gw_store_txn *t;
        assert_int_equal(gw_store_read_begin(s, &t, NULL), GW_OK);
        struct got_blocks g = {.sid = 5};
        assert_int_equal(gw_store_blocks_get(t, 1, 0, 5, INT64_MIN, INT64_MAX, got_block_cb, &g), GW_OK);
        assert_int_equal(g.n, 5);
        assert_int_equal(g.bad, 0);
        assert_true(g.mint[0] == -D + 10);
        assert_true(g.mint[1] == 19675 * D + 1000);
        assert_true(g.mint[2] == 19675 * D + 7200000);
        assert_int_equal(g.len[2], 40000);
        assert_true(g.mint[3] == 19676 * D + 5);
        assert_true(g.mint[4] == 19678 * D + 86399999);

        /* [mint_lo, maxt] bounds are inclusive and cut across days */
        memset(&g, 0, sizeof g);
        g.sid = 5;
        assert_int_equal(gw_store_blocks_get(t, 1, 0, 5, 19675 * D + 7200000, 19676 * D + 5, got_block_cb, &g),
                         GW_OK);
        assert_int_equal(g.n, 2);
        assert_true(g.mint[0] == 19675 * D + 7200000);
        assert_true(g.mint[1] == 19676 * D + 5);
        /* early stop */
        memset(&g, 0, sizeof g);
        g.sid = 5;
        g.stop_after = 1;
        assert_int_equal(gw_store_blocks_get(t, 1, 0, 5, 0, INT64_MAX, got_block_cb, &g), GW_OK);
        assert_int_equal(g.n, 1);
        /* other series and gpus stay apart */
        memset(&g, 0, sizeof g);
        g.sid = 6;
        assert_int_equal(gw_store_blocks_get(t, 1, 0, 6, INT64_MIN, INT64_MAX, got_block_cb, &g), GW_OK);
        assert_int_equal(g.n, 1);
        assert_int_equal(g.bad, 0);

        assert_int_equal(gw_store_blocks_any(t, 1, 0, 5, 19677 * D, 19678 * D), 0);
        assert_int_equal(gw_store_blocks_any(t, 1, 0, 5, 19677 * D, 19678 * D + 86399999), 1);
        assert_int_equal(gw_store_blocks_any(t, 1, 1, 5, 0, INT64_MAX), 1);
        assert_int_equal(gw_store_blocks_any(t, 3, 0, 5, INT64_MIN, INT64_MAX), 0);
        assert_int_equal(gw_store_blocks_any(t, 1, 0, 5, 10, 5), 0);
        gw_store_read_end(t);
        gw_store_close(s);
        s = open_store(f->dir, 0, 0);
    }
    gw_store_close(s);
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
        uint8_t b[4] = {1, 2, 3, 4};
        rc = gw_store_block_put(t, 9, 9, 9, 19675 * D + 1, b, 4); /* recreates day 19675 */
        if (rc != GW_OK)
            return rc;
    }
    return u->then_fail ? GW_EINVAL : GW_OK;
}

static void test_store_partitions_drop(void **state)
{
    struct fx *f = *state;
    struct gw_store *s = open_store(f->dir, 0, 0);
    put_test_blocks(s);
    struct parts_seen ps;
    list_parts(s, &ps);
    assert_int_equal(ps.n, 4);
    assert_true(ps.day[0] == -1);
    assert_true(ps.day[1] == 19675);
    assert_true(ps.day[2] == 19676);
    assert_true(ps.day[3] == 19678);
    assert_int_equal(ps.entries[1], 4);
    assert_int_equal(ps.entries[2], 2);
    assert_true(ps.bytes[1] >= 40000); /* the overflow pages count */
    assert_true(ps.bytes[3] > 0);

    /* A drop in an aborted txn changes nothing, handles stay usable. */
    struct drop_ud u = {.before = 19677, .then_fail = 1};
    assert_int_equal(gw_store_write(s, drop_fn, &u, NULL), GW_EINVAL);
    list_parts(s, &ps);
    assert_int_equal(ps.n, 4);
    struct gw_store_txn *t;
    assert_int_equal(gw_store_read_begin(s, &t, NULL), GW_OK);
    assert_int_equal(gw_store_blocks_any(t, 1, 0, 5, 19675 * D, 19675 * D + 5000), 1);
    gw_store_read_end(t);

    /* A reader that began before the drop keeps working until it ends;
     * here it ends first because the drop waits for it. */
    memset(&u, 0, sizeof u);
    u.before = 19676;
    assert_int_equal(gw_store_write(s, drop_fn, &u, NULL), GW_OK);
    assert_int_equal(u.dropped, 2);
    list_parts(s, &ps);
    assert_int_equal(ps.n, 2);
    assert_true(ps.day[0] == 19676);
    assert_true(ps.day[1] == 19678);
    assert_int_equal(gw_store_read_begin(s, &t, NULL), GW_OK);
    assert_int_equal(gw_store_blocks_any(t, 1, 0, 5, INT64_MIN, 19676 * D - 1), 0);
    assert_int_equal(gw_store_blocks_any(t, 1, 0, 5, 19676 * D, INT64_MAX), 1);
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
    assert_int_equal(ps.n, 2);
    assert_true(ps.day[0] == 19675);
    assert_int_equal(ps.entries[0], 1);
    assert_true(ps.day[1] == 19678);
    memset(&u, 0, sizeof u);
    u.before = INT64_MAX;
    assert_int_equal(gw_store_write(s, drop_fn, &u, NULL), GW_OK);
    assert_int_equal(u.dropped, 2);
    list_parts(s, &ps);
    assert_int_equal(ps.n, 0);
    gw_store_close(s);
}

/* ------------------------------------------------------------ map growth */

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
        struct got_blocks g = {.sid = 1};
        int rc = gw_store_blocks_get(t, 1, 0, 1, 0, INT64_MAX, got_block_cb, &g);
        /* at most 64 are collected; stop_after keeps the array bounded */
        (void)rc;
        if (g.bad)
            c->errors++;
        gw_store_read_end(t);
        c->reads++;
        usleep(200);
    }
    return NULL;
}

struct bulk_ud {
    uint64_t first;
    unsigned n;
    size_t len;
};

static int bulk_fn(struct gw_store_txn *t, void *ud)
{
    struct bulk_ud *u = ud;
    static uint8_t buf[65536];
    for (unsigned i = 0; i < u->n; i++) {
        struct blk b = {1, 0, 2, (int64_t)(u->first + i) * 60000, u->len};
        fill_block(buf, &b);
        int rc = gw_store_block_put(t, 1, 0, 2, b.mint, buf, b.len);
        if (rc != GW_OK)
            return rc;
    }
    return GW_OK;
}

static int count_cb(void *ud, int64_t mint, const uint8_t *block, size_t len)
{
    uint64_t *n = ud;
    struct blk b = {1, 0, 2, mint, len};
    static uint8_t want[65536];
    fill_block(want, &b);
    if (memcmp(want, block, len) == 0)
        (*n)++;
    return GW_OK;
}

static void test_store_map_growth_with_reader(void **state)
{
    struct fx *f = *state;
    struct gw_store *s = open_store(f->dir, 128 << 10, 0);
    /* a few blocks for the reader to see */
    static const struct blk seed[] = {{1, 0, 1, 1000, 500}, {1, 0, 1, 2000, 9000}};
    struct blocks_ud su = {seed, 2};
    assert_int_equal(gw_store_write(s, put_blocks_fn, &su, NULL), GW_OK);

    struct grow_ctx c = {.s = s};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, reader_main, &c), 0);
    /* ~6 MB in 60 small commits, then one 1 MB commit */
    uint64_t next = 0;
    for (int i = 0; i < 60; i++) {
        struct bulk_ud u = {next, 50, 2000};
        struct gw_error err = {0};
        int rc = gw_store_write(s, bulk_fn, &u, &err);
        if (rc != GW_OK)
            print_error("bulk: %s\n", err.msg);
        assert_int_equal(rc, GW_OK);
        next += 50;
    }
    struct bulk_ud big = {next, 32, 32768};
    assert_int_equal(gw_store_write(s, bulk_fn, &big, NULL), GW_OK);
    next += 32;
    __atomic_store_n(&c.done, 1, __ATOMIC_RELEASE);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(c.errors, 0);
    assert_true(c.reads > 0);

    struct gw_store_stats st;
    assert_int_equal(gw_store_stats(s, &st, NULL), GW_OK);
    assert_true(st.map_bytes >= (UINT64_C(4) << 20));
    assert_true(st.used_bytes >= (UINT64_C(5) << 20));

    struct gw_store_txn *t;
    assert_int_equal(gw_store_read_begin(s, &t, NULL), GW_OK);
    uint64_t n = 0;
    assert_int_equal(gw_store_blocks_get(t, 1, 0, 2, 0, INT64_MAX, count_cb, &n), GW_OK);
    assert_int_equal(n, next);
    gw_store_read_end(t);
    gw_store_close(s);

    /* the grown map persists */
    s = open_store(f->dir, 128 << 10, 0);
    assert_int_equal(gw_store_read_begin(s, &t, NULL), GW_OK);
    n = 0;
    assert_int_equal(gw_store_blocks_get(t, 1, 0, 2, 0, INT64_MAX, count_cb, &n), GW_OK);
    assert_int_equal(n, next);
    gw_store_read_end(t);
    gw_store_close(s);
}

static void test_store_map_limit_is_efull(void **state)
{
    struct fx *f = *state;
    struct gw_store *s = open_store(f->dir, 128 << 10, 1 << 20);
    struct bulk_ud u = {0, 100, 30000}; /* 3 MB in one txn > 1 MiB ceiling */
    struct gw_error err = {0};
    assert_int_equal(gw_store_write(s, bulk_fn, &u, &err), GW_EFULL);
    assert_true(err.msg[0] != 0);
    /* still usable for small writes */
    struct bulk_ud small = {1000, 2, 100};
    assert_int_equal(gw_store_write(s, bulk_fn, &small, NULL), GW_OK);
    gw_store_close(s);
}

/* ----------------------------------------------------- read-only child */

static int child_count(struct gw_store *ro, int64_t lo, int64_t hi, uint64_t *n)
{
    struct gw_store_txn *t;
    if (gw_store_read_begin(ro, &t, NULL) != GW_OK)
        return -1;
    *n = 0;
    int rc = gw_store_blocks_get(t, 1, 0, 2, lo, hi, count_cb, n);
    gw_store_read_end(t);
    return rc;
}

static int child_main(const char *dir, int rfd, int wfd)
{
    struct gw_store_opts o = {.dir = dir, .read_only = 1, .initial_map_bytes = 128 << 10};
    struct gw_store *ro = NULL;
    if (gw_store_open(&ro, &o, NULL) != GW_OK)
        return 10;
    uint64_t n = 0;
    if (child_count(ro, INT64_MIN, INT64_MAX, &n) != GW_OK || n != 3)
        return 11;
    struct gw_store_txn *t;
    if (gw_store_read_begin(ro, &t, NULL) != GW_OK)
        return 12;
    struct gw_store_series se;
    int rc = gw_store_series_get(t, 100, &se);
    gw_store_read_end(t);
    if (rc != GW_OK || se.node_id != 100 % 3)
        return 13;
    char c = 'r';
    if (write(wfd, &c, 1) != 1 || read(rfd, &c, 1) != 1)
        return 14;
    /* the parent added blocks in a new day partition meanwhile */
    if (child_count(ro, INT64_MIN, INT64_MAX, &n) != GW_OK || n != 203)
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
    struct bulk_ud u = {0, 3, 100};
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
    struct bulk_ud later = {3 * 1440 * 2, 200, 20000}; /* 4 MB, 6 days later */
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
        T(test_store_blocks_across_days),
        T(test_store_partitions_drop),
        T(test_store_map_growth_with_reader),
        T(test_store_map_limit_is_efull),
        T(test_store_read_only_second_process),
        T(test_store_rejects_bad_labels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
