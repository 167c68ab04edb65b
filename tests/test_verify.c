/* test_verify.c - gw_db_verify finds injected damage of each kind and says
 * where it is: a corrupt blob (bytes overwritten through LMDB directly),
 * postings naming a series that does not exist, a series record with an
 * unknown label pair id, a WAL record that fails its CRC; a single flipped
 * value bit (one that still decodes) in a raw window blob, a compacted day
 * blob and a rollup value, found by their checksums and named (reads of
 * the damaged block fail too); and it passes a clean data dir, one whose
 * newest WAL segment ends in a torn record, and one written in the older
 * formats (GWB2 blobs, version 1 rollup values, no checksums). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lmdb.h>

#include "gpuwatch/block.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/db.h"
#include "gpuwatch/labels.h"
#include "gpuwatch/store.h"
#include "db/db_int.h"
#include "db/downsample_int.h"
#include "store/store_int.h"
#include "db_fixture.h"

#define MIN_MS 60000LL
#define HOUR_MS 3600000LL

static char tmpdir[512];

static int setup(void **state)
{
    (void)state;
    return gw_fx_mkdtemp(tmpdir, sizeof tmpdir, "gwverify");
}

static int teardown(void **state)
{
    (void)state;
    return gw_fx_rmrf(tmpdir);
}

static struct gw_db *open_db(void)
{
    return gw_fx_open_db(tmpdir, 0);
}

/* Appends n samples every 5 min from t0 to 3 series on each of 2 nodes. */
static int append_some(struct gw_db *db, int64_t t0, int n, int64_t now)
{
    static char names[3][8] = {"a_total", "b", "c"};
    static char hosts[2][8] = {"node1", "node2"};
    struct gw_rw_series s[6];
    struct gw_label l[6][2];
    struct gw_sample smp[6][32];
    struct gw_rw_request r = {.version = 1, .series = s, .n_series = 6};
    for (int i = 0; i < 6; i++) {
        l[i][0] = (struct gw_label){"__name__", 8, names[i % 3], (uint32_t)strlen(names[i % 3])};
        l[i][1] = (struct gw_label){"hostname", 8, hosts[i / 3], 5};
        s[i] = (struct gw_rw_series){.labels = l[i], .n_labels = 2, .samples = smp[i], .n_samples = (uint32_t)n};
        for (int k = 0; k < n; k++) smp[i][k] = (struct gw_sample){t0 + k * 5 * MIN_MS, 100.5 * i + k};
        r.n_samples += (uint64_t)n;
    }
    struct gw_append_result res;
    struct gw_error err = {0};
    int rc = gw_db_append(db, &r, now, &res, &err);
    return rc == GW_OK && res.accepted == (uint64_t)(6 * n) ? 0 : -1;
}

/* A store with flushed blocks, then a WAL left by a "crashed" writer. */
static void make_dir(void)
{
    int64_t now = gw_now_ms();
    struct gw_db *db = open_db();
    assert_int_equal(append_some(db, now - 6 * HOUR_MS, 24, now), 0);
    struct gw_error err = {0};
    assert_int_equal(gw_db_flush(db, &err), GW_OK);
    gw_db_close(db);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct gw_db *d2 = open_db();
        if (append_some(d2, now - 30 * MIN_MS, 4, now) != 0) _exit(3);
        if (append_some(d2, now - 10 * MIN_MS, 2, now) != 0) _exit(3);
        _exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

struct seen {
    size_t n;
    struct gw_db_problem p[64];
};

static void on_problem(void *ud, const struct gw_db_problem *p)
{
    struct seen *s = ud;
    if (s->n < 64) s->p[s->n++] = *p;
    fprintf(stderr, "  problem: %s %s sid=%llu pair=%u day=%lld seg=%lld off=%llu: %s\n", p->area, p->kind,
            (unsigned long long)p->sid, p->pair_id, (long long)p->day, (long long)p->wal_segment,
            (unsigned long long)p->wal_offset, p->what);
}

static void run_verify(struct seen *s, struct gw_db_verify_stats *st)
{
    memset(s, 0, sizeof *s);
    struct gw_error err = {0};
    int rc = gw_db_verify(tmpdir, on_problem, NULL, s, st, &err);
    if (rc) fprintf(stderr, "verify: %s\n", err.msg);
    assert_int_equal(rc, GW_OK);
    assert_int_equal(st->problems, s->n);
}

static const struct gw_db_problem *find(const struct seen *s, const char *area, const char *kind)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->p[i].area, area) && !strcmp(s->p[i].kind, kind)) return &s->p[i];
    return NULL;
}

/* ---- direct LMDB access to damage the store ---- */

static MDB_env *env_open(MDB_txn **txn)
{
    char path[600];
    snprintf(path, sizeof path, "%s/store", tmpdir);
    MDB_env *env;
    assert_int_equal(mdb_env_create(&env), 0);
    assert_int_equal(mdb_env_set_maxdbs(env, 256), 0);
    assert_int_equal(mdb_env_open(env, path, 0, 0644), 0);
    assert_int_equal(mdb_txn_begin(env, NULL, 0, txn), 0);
    return env;
}

static void env_commit(MDB_env *env, MDB_txn *txn)
{
    assert_int_equal(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
}

static MDB_dbi dbi_named(MDB_txn *txn, const char *name)
{
    MDB_dbi d;
    assert_int_equal(mdb_dbi_open(txn, name, 0, &d), 0);
    return d;
}

/* The name of the first day partition. */
static void first_partition(MDB_txn *txn, char *name, size_t cap)
{
    MDB_dbi main;
    assert_int_equal(mdb_dbi_open(txn, NULL, 0, &main), 0);
    MDB_cursor *c;
    assert_int_equal(mdb_cursor_open(txn, main, &c), 0);
    MDB_val k, d;
    name[0] = 0;
    for (int rc = mdb_cursor_get(c, &k, &d, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
        if (k.mv_size == 9 && ((const char *)k.mv_data)[0] == 'p' && k.mv_size < cap) {
            memcpy(name, k.mv_data, k.mv_size);
            name[k.mv_size] = 0;
            break;
        }
    }
    mdb_cursor_close(c);
    assert_true(name[0] == 'p');
}

static void test_clean(void **state)
{
    (void)state;
    make_dir();
    struct seen s;
    struct gw_db_verify_stats st;
    run_verify(&s, &st);
    assert_int_equal(s.n, 0);
    assert_true(st.store.blobs > 0);
    assert_true(st.store.blocks >= 6);
    assert_int_equal(st.store.series, 6);
    assert_true(st.wal.records >= 2);
    assert_true(st.wal_samples >= 36);
    assert_int_equal(st.wal.torn_tail, 0);
}

static void test_corrupt_blob(void **state)
{
    (void)state;
    make_dir();
    MDB_txn *txn;
    MDB_env *env = env_open(&txn);
    char pname[32];
    first_partition(txn, pname, sizeof pname);
    MDB_dbi p = dbi_named(txn, pname);
    MDB_cursor *c;
    assert_int_equal(mdb_cursor_open(txn, p, &c), 0);
    MDB_val k, d;
    assert_int_equal(mdb_cursor_get(c, &k, &d, MDB_FIRST), 0);
    uint8_t key[16];
    memcpy(key, k.mv_data, 16);
    size_t len = d.mv_size;
    uint8_t *v = malloc(len);
    memcpy(v, d.mv_data, len);
    mdb_cursor_close(c);
    /* Overwrite the start of the data after the directories: the first
     * timestamp column (GWB3). */
    assert_memory_equal(v, "GWB3", 4);
    uint32_t n = gw_get_be32(v + 8);
    size_t area = 16 + 8 * (size_t)gw_get_be32(v + 12) + 12 * (size_t)n;
    assert_true(area + 4 < len);
    memset(v + area, 0xff, 4);
    MDB_val nk = {16, key}, nv = {len, v};
    assert_int_equal(mdb_put(txn, p, &nk, &nv, 0), 0);
    env_commit(env, txn);
    free(v);

    struct seen s;
    struct gw_db_verify_stats st;
    run_verify(&s, &st);
    assert_true(s.n > 0);
    const struct gw_db_problem *pb = find(&s, "store", "column");
    if (!pb) pb = find(&s, "store", "block");
    assert_non_null(pb);
    int64_t day = strtoll(pname + 1, NULL, 10);
    assert_int_equal(pb->day, day);
    assert_int_equal(pb->node_id, gw_get_be32(key));
    assert_true(pb->window_start != INT64_MIN);
    assert_int_equal(pb->seq, 0);
}

static void test_postings_missing_series(void **state)
{
    (void)state;
    make_dir();
    MDB_txn *txn;
    MDB_env *env = env_open(&txn);
    MDB_dbi p = dbi_named(txn, "postings");
    uint8_t kb[4], vb[4];
    gw_put_be32(kb, 1);
    gw_put_be32(vb, 999);
    MDB_val k = {4, kb}, v = {4, vb};
    assert_int_equal(mdb_put(txn, p, &k, &v, 0), 0);
    env_commit(env, txn);

    struct seen s;
    struct gw_db_verify_stats st;
    run_verify(&s, &st);
    const struct gw_db_problem *pb = find(&s, "store", "postings");
    assert_non_null(pb);
    assert_int_equal(pb->sid, 999);
    assert_int_equal(pb->pair_id, 1);
    assert_non_null(strstr(pb->what, "does not exist"));
}

static void test_series_unknown_pair(void **state)
{
    (void)state;
    make_dir();
    MDB_txn *txn;
    MDB_env *env = env_open(&txn);
    MDB_dbi sd = dbi_named(txn, "series");
    uint8_t kb[8];
    gw_put_be64(kb, 2);
    MDB_val k = {8, kb}, d;
    assert_int_equal(mdb_get(txn, sd, &k, &d), 0);
    uint8_t rec[32];
    memcpy(rec, d.mv_data, 14);
    rec[14] = 1;                 /* one pair id ... */
    size_t o = 15 + gw_uvarint_put(rec + 15, 9999);  /* ... that does not exist */
    MDB_val nv = {o, rec};
    assert_int_equal(mdb_put(txn, sd, &k, &nv, 0), 0);
    env_commit(env, txn);

    struct seen s;
    struct gw_db_verify_stats st;
    run_verify(&s, &st);
    const struct gw_db_problem *pb = NULL;
    for (size_t i = 0; i < s.n; i++)
        if (!strcmp(s.p[i].kind, "series") && s.p[i].pair_id == 9999) pb = &s.p[i];
    assert_non_null(pb);
    assert_int_equal(pb->sid, 2);
    assert_non_null(strstr(pb->what, "does not exist"));
}

/* The newest WAL segment file (a path into buf). */
static void newest_segment(char *buf, size_t cap)
{
    uint32_t *segs = NULL;
    size_t n = 0;
    char wal[600];
    snprintf(wal, sizeof wal, "%s/wal", tmpdir);
    assert_int_equal(gw_wal_segments(wal, &segs, &n, NULL), GW_OK);
    assert_true(n > 0);
    /* the newest non-empty one */
    for (size_t i = n; i-- > 0;) {
        char name[32];
        gw_wal_segment_name(name, sizeof name, segs[i]);
        snprintf(buf, cap, "%s/%s", wal, name);
        struct stat sb;
        if (stat(buf, &sb) == 0 && sb.st_size > 8) break;
    }
    free(segs);
}

static void test_wal_crc(void **state)
{
    (void)state;
    make_dir();
    char path[700];
    newest_segment(path, sizeof path);
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    /* a payload byte of the first record (at offset 8: 9-byte header) */
    assert_int_equal(fseek(f, 8 + 9 + 2, SEEK_SET), 0);
    int ch = fgetc(f);
    assert_int_equal(fseek(f, 8 + 9 + 2, SEEK_SET), 0);
    fputc(ch ^ 0x40, f);
    fclose(f);

    struct seen s;
    struct gw_db_verify_stats st;
    run_verify(&s, &st);
    const struct gw_db_problem *pb = find(&s, "wal", "segment");
    assert_non_null(pb);
    assert_true(pb->wal_segment > 0);
    assert_int_equal(pb->wal_offset, 8);
    assert_non_null(strstr(pb->what, "CRC"));
}

static void test_wal_torn_tail_is_normal(void **state)
{
    (void)state;
    make_dir();
    char path[700];
    newest_segment(path, sizeof path);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(truncate(path, sb.st_size - 5), 0);
    struct seen s;
    struct gw_db_verify_stats st;
    run_verify(&s, &st);
    assert_int_equal(s.n, 0);
    assert_int_equal(st.wal.torn_tail, 1);
    assert_true(st.wal.torn_bytes > 0);
}

/* After a power loss the unsynced tail can be a hole (zeros) followed by
 * blocks that reached the disk: a torn tail too, in the newest segment only. */
static void test_wal_hole_in_tail_is_normal(void **state)
{
    (void)state;
    make_dir();
    char path[700];
    newest_segment(path, sizeof path);
    FILE *f = fopen(path, "ab");
    assert_non_null(f);
    static const uint8_t tail[64] = {[20] = 'x', [21] = 'y', [40] = 7};
    assert_int_equal(fwrite(tail, 1, sizeof tail, f), sizeof tail);
    fclose(f);
    struct seen s;
    struct gw_db_verify_stats st;
    run_verify(&s, &st);
    assert_int_equal(s.n, 0);
    assert_int_equal(st.wal.torn_tail, 1);
    assert_int_equal(st.wal.torn_bytes, 64);

    /* a non-zero header that fails mid-segment stays a problem */
    f = fopen(path, "r+b");
    assert_non_null(f);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(fseek(f, sb.st_size - 64, SEEK_SET), 0);
    fputc(1, f);
    fclose(f);
    run_verify(&s, &st);
    assert_non_null(find(&s, "wal", "segment"));
}

static void test_node_and_shash(void **state)
{
    (void)state;
    make_dir();
    MDB_txn *txn;
    MDB_env *env = env_open(&txn);
    MDB_dbi ni = dbi_named(txn, "node_ids"), sh = dbi_named(txn, "shash");
    uint8_t kb[8], vb[4];
    gw_put_be32(kb, 2);   /* node 2 ("node2") loses its name */
    MDB_val k = {4, kb};
    assert_int_equal(mdb_del(txn, ni, &k, NULL), 0);
    gw_put_be64(kb, 0x1234);   /* a hash entry for series 1 under a wrong hash */
    gw_put_be32(vb, 1);
    MDB_val hk = {8, kb}, hv = {4, vb};
    assert_int_equal(mdb_put(txn, sh, &hk, &hv, 0), 0);
    env_commit(env, txn);

    struct seen s;
    struct gw_db_verify_stats st;
    run_verify(&s, &st);
    int node = 0, hash = 0, names = 0;
    for (size_t i = 0; i < s.n; i++) {
        if (!strcmp(s.p[i].kind, "series") && s.p[i].node_id == 2 && strstr(s.p[i].what, "node id 2")) node = 1;
        if (!strcmp(s.p[i].kind, "nodes") && s.p[i].node_id == 2 && strstr(s.p[i].what, "node2")) names = 1;
        if (!strcmp(s.p[i].kind, "shash") && s.p[i].sid == 1 && strstr(s.p[i].what, "0000000000001234")) hash = 1;
    }
    assert_true(node);
    assert_true(names);
    assert_true(hash);
}

static void test_not_a_data_dir(void **state)
{
    (void)state;
    struct gw_error err = {0};
    char path[600];
    snprintf(path, sizeof path, "%s/nothing-here", tmpdir);
    assert_int_equal(gw_db_verify(path, NULL, NULL, NULL, NULL, &err), GW_ENOTFOUND);
    assert_non_null(strstr(err.msg, "no gpuwatch store"));
}


/* ---- a flipped value bit, found by the checksums ---- */

/* Yesterday 01:00 UTC: a finished day that compaction and downsampling take. */
static int64_t old_t0(void)
{
    return (gw_now_ms() / GW_DAY_MS - 1) * GW_DAY_MS + HOUR_MS;
}

/* 2 hours of yesterday, compacted into day blobs and
 * downsampled. */
static void make_old_day(void)
{
    int64_t now = gw_now_ms();
    struct gw_db *db = open_db();
    assert_int_equal(append_some(db, old_t0(), 24, now), 0);
    struct gw_error err = {0};
    assert_int_equal(gw_db_flush(db, &err), GW_OK);
    struct gw_db_compact_opts co = {0};
    struct gw_db_compact_result cr;
    assert_int_equal(gw_db_compact(db, &co, &cr, &err), GW_OK);
    assert_true(cr.node_days >= 2);
    struct gw_db_downsample ds;
    gw_db_downsample_default(&ds);
    assert_int_equal(gw_db_downsample_run(db, now, &ds, &err), GW_OK);
    gw_db_close(db);
}

/* In GWB3 blob v (len bytes), flips one bit of entry 0's value part such
 * that the part still decodes, to other values; returns entry 0's sid. */
static uint32_t flip_value_bit(uint8_t *v, size_t len)
{
    assert_memory_equal(v, "GWB3", 4);
    uint32_t n = gw_get_be32(v + 8), m = gw_get_be32(v + 12);
    const uint8_t *cdir = v + 16, *dir = cdir + 8 * (size_t)m;
    uint8_t *cols = (uint8_t *)dir + 12 * (size_t)n;
    uint8_t *area = cols + gw_get_be32(cdir + 8 * ((size_t)m - 1));
    uint32_t end = gw_get_be32(dir + 4);
    assert_true(n > 0 && m > 0 && area + end <= v + len);
    uint8_t ref = area[0];
    assert_true(ref >= 1 && ref <= m);
    uint32_t cstart = ref > 1 ? gw_get_be32(cdir + 8 * (size_t)(ref - 2)) : 0;
    uint32_t ns;
    assert_int_equal(gw_block_info(cols + cstart, gw_get_be32(cdir + 8 * (size_t)(ref - 1)) - cstart, &ns, NULL, NULL),
                     GW_OK);
    double *a = malloc(ns * sizeof *a), *b = malloc(ns * sizeof *b);
    uint8_t *part = area + 1;
    size_t plen = end - 1;
    assert_int_equal(gw_block_values_decode(part, plen, ns, a), GW_OK);
    int done = 0;
    for (size_t bit = 8 * plen; bit-- > 8 && !done;) {
        part[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        if (gw_block_values_decode(part, plen, ns, b) == GW_OK && memcmp(a, b, ns * sizeof *a) != 0)
            done = 1;
        else
            part[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    assert_true(done);
    free(a);
    free(b);
    return gw_get_be32(dir);
}

/* Flips a value bit in the blob of partition pname whose key has seq
 * (any seq when seq < 0); returns the sid and sets *node. */
static uint32_t flip_in_blob(const char *pname, int64_t seq, uint32_t *node)
{
    MDB_txn *txn;
    MDB_env *env = env_open(&txn);
    MDB_dbi p = dbi_named(txn, pname);
    MDB_cursor *c;
    assert_int_equal(mdb_cursor_open(txn, p, &c), 0);
    MDB_val k, d;
    int rc;
    for (rc = mdb_cursor_get(c, &k, &d, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &d, MDB_NEXT))
        if (seq < 0 || gw_get_be32((const uint8_t *)k.mv_data + 12) == (uint32_t)seq) break;
    assert_int_equal(rc, 0);
    uint8_t key[16];
    memcpy(key, k.mv_data, 16);
    uint8_t *v = malloc(d.mv_size);
    memcpy(v, d.mv_data, d.mv_size);
    mdb_cursor_close(c);
    uint32_t sid = flip_value_bit(v, d.mv_size);
    MDB_val nk = {16, key}, nv = {d.mv_size, v};
    assert_int_equal(mdb_put(txn, p, &nk, &nv, 0), 0);
    env_commit(env, txn);
    free(v);
    *node = gw_get_be32(key);
    return sid;
}

static const struct gw_db_problem *find_sid(const struct seen *s, const char *kind, uint64_t sid)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->p[i].kind, kind) && s->p[i].sid == sid) return &s->p[i];
    return NULL;
}

struct got {
    int series;
    size_t n;
    int64_t t[8];
    double v[8];
};

static int take_series(void *ud, uint64_t sid, const uint8_t *labels, size_t labels_len, const int64_t *t,
                       const double *v, size_t n)
{
    (void)sid;
    (void)labels;
    (void)labels_len;
    struct got *g = ud;
    g->series++;
    for (size_t i = 0; i < n && g->n < 8; i++) {
        g->t[g->n] = t[i];
        g->v[g->n++] = v[i];
    }
    return GW_OK;
}

/* A read of every series over [mint, maxt] answers GW_ECORRUPT. */
static void reads_fail(int64_t mint, int64_t maxt)
{
    struct gw_db *db = open_db();
    struct gw_matcher ms[1];
    size_t nm = 0;
    struct gw_error err = {0};
    const char *sel = "{hostname=~\"node.\"}";
    assert_int_equal(gw_pq_parse_selector(sel, strlen(sel), ms, 1, &nm, &err), GW_OK);
    struct gw_db_select q = {.matchers = ms, .n_matchers = nm, .mint = mint, .maxt = maxt, .with_samples = 1};
    struct got g = {0};
    assert_int_equal(gw_db_select(db, &q, take_series, &g, &err), GW_ECORRUPT);
    gw_matcher_free(&ms[0]);
    gw_db_close(db);
}

static void test_flipped_bit_raw_block(void **state)
{
    (void)state;
    make_dir();
    MDB_txn *txn;
    MDB_env *env = env_open(&txn);
    char pname[32];
    first_partition(txn, pname, sizeof pname);
    mdb_txn_abort(txn);
    mdb_env_close(env);
    uint32_t node;
    uint32_t sid = flip_in_blob(pname, -1, &node);

    struct seen s;
    struct gw_db_verify_stats st;
    run_verify(&s, &st);
    const struct gw_db_problem *pb = find_sid(&s, "block", sid);
    assert_non_null(pb);
    assert_int_equal(pb->node_id, node);
    assert_int_equal(pb->day, strtoll(pname + 1, NULL, 10));
    assert_non_null(strstr(pb->what, "checksum mismatch"));
    int64_t now = gw_now_ms();
    reads_fail(now - 7 * HOUR_MS, now);
}

static void test_flipped_bit_day_blob(void **state)
{
    (void)state;
    make_old_day();
    int64_t day = old_t0() / GW_DAY_MS;
    char pname[32];
    snprintf(pname, sizeof pname, "p%08lld", (long long)day);
    struct seen s;
    struct gw_db_verify_stats st;
    run_verify(&s, &st);
    assert_int_equal(s.n, 0);
    uint32_t node;
    uint32_t sid = flip_in_blob(pname, GW_STORE_DAY_SEQ, &node);
    run_verify(&s, &st);
    const struct gw_db_problem *pb = find_sid(&s, "block", sid);
    assert_non_null(pb);
    assert_int_equal(pb->node_id, node);
    assert_int_equal(pb->day, day);
    assert_int_equal(pb->seq, (int64_t)GW_STORE_DAY_SEQ);
    assert_non_null(strstr(pb->what, "checksum mismatch"));
    reads_fail(old_t0(), old_t0() + 3 * HOUR_MS);
}

/* make_old_day(), then its 5 m rollup DBI opened in a write txn. */
static MDB_dbi old_day_rollup(MDB_env **env, MDB_txn **txn, int64_t *day)
{
    make_old_day();
    *day = old_t0() / GW_DAY_MS;
    char name[32];
    snprintf(name, sizeof name, "ds5m:%08lld", (long long)*day);
    *env = env_open(txn);
    return dbi_named(*txn, name);
}

static void test_flipped_bit_rollup(void **state)
{
    (void)state;
    int64_t day;
    MDB_txn *txn;
    MDB_env *env;
    MDB_dbi p = old_day_rollup(&env, &txn, &day);
    MDB_cursor *c;
    assert_int_equal(mdb_cursor_open(txn, p, &c), 0);
    MDB_val k, d;
    assert_int_equal(mdb_cursor_get(c, &k, &d, MDB_FIRST), 0);
    assert_int_equal(k.mv_size, 8);
    uint8_t key[8];
    memcpy(key, k.mv_data, 8);
    uint8_t *v = malloc(d.mv_size);
    memcpy(v, d.mv_data, d.mv_size);
    mdb_cursor_close(c);
    assert_int_equal(v[0], 3);
    v[d.mv_size / 2] ^= 0x01;
    MDB_val nk = {8, key}, nv = {d.mv_size, v};
    assert_int_equal(mdb_put(txn, p, &nk, &nv, 0), 0);
    env_commit(env, txn);
    free(v);

    struct seen s;
    struct gw_db_verify_stats st;
    run_verify(&s, &st);
    const struct gw_db_problem *pb = find_sid(&s, "rollup", gw_get_be32(key + 4));
    assert_non_null(pb);
    assert_int_equal(pb->node_id, gw_get_be32(key));
    assert_int_equal(pb->day, day);
    assert_non_null(strstr(pb->what, "5m aggregates"));
    assert_non_null(strstr(pb->what, "checksum mismatch"));
}

/* The node records of rollup DBI name (key node | ff ff ff ff): *n of
 * them; the first's key into key. */
static void first_profile_key(MDB_txn *txn, MDB_dbi p, uint8_t key[8], int *n)
{
    MDB_cursor *c;
    assert_int_equal(mdb_cursor_open(txn, p, &c), 0);
    MDB_val k, d;
    *n = 0;
    for (int rc = mdb_cursor_get(c, &k, &d, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
        const uint8_t *kp = k.mv_data;
        if (k.mv_size != 8 || gw_get_be32(kp + 4) != UINT32_MAX || gw_get_be32(kp) == UINT32_MAX) continue;
        if ((*n)++ == 0) memcpy(key, kp, 8);
    }
    mdb_cursor_close(c);
}

/* A flipped bit in a node's record of time profiles is named by verify,
 * and so are the values that refer to it; a deleted record too, and a
 * query through the rollup fails with a clear error instead of answering. */
static void test_flipped_bit_rollup_profiles(void **state)
{
    (void)state;
    int64_t day;
    MDB_txn *txn;
    MDB_env *env;
    MDB_dbi p = old_day_rollup(&env, &txn, &day);
    uint8_t key[8];
    int nrec;
    first_profile_key(txn, p, key, &nrec);
    assert_int_equal(nrec, 2);      /* one per node */
    MDB_val k = {8, key}, d;
    assert_int_equal(mdb_get(txn, p, &k, &d), 0);
    uint8_t *v = malloc(d.mv_size);
    memcpy(v, d.mv_data, d.mv_size);
    size_t vlen = d.mv_size;
    v[vlen / 2] ^= 0x10;
    MDB_val nv = {vlen, v};
    assert_int_equal(mdb_put(txn, p, &k, &nv, 0), 0);
    env_commit(env, txn);

    struct seen s;
    struct gw_db_verify_stats st;
    run_verify(&s, &st);
    const struct gw_db_problem *pb = find_sid(&s, "rollup", GW_ROLLUP_NODE_SID);
    assert_non_null(pb);
    assert_int_equal(pb->node_id, gw_get_be32(key));
    assert_int_equal(pb->day, day);
    assert_non_null(strstr(pb->what, "5m time profiles of node"));
    assert_non_null(strstr(pb->what, "checksum mismatch"));
    int refs = 0;
    for (size_t i = 0; i < s.n; i++)
        if (s.p[i].sid != GW_ROLLUP_NODE_SID && strstr(s.p[i].what, "time profiles, which are corrupt")) refs++;
    assert_true(refs >= 1);

    /* the record gone: the values that refer to it are named */
    char name[32];
    snprintf(name, sizeof name, "ds5m:%08lld", (long long)day);
    env = env_open(&txn);
    p = dbi_named(txn, name);
    assert_int_equal(mdb_del(txn, p, &k, NULL), 0);
    env_commit(env, txn);
    run_verify(&s, &st);
    refs = 0;
    for (size_t i = 0; i < s.n; i++)
        if (strstr(s.p[i].what, "time profiles, which are missing")) refs++;
    assert_true(refs >= 1);

    /* a query that reads the 5m rollup (raw dropped) is an error, not a crash */
    struct gw_db *db = open_db();
    struct gw_error err = {0};
    struct gw_db_downsample ds;
    gw_db_downsample_default(&ds);
    ds.raw_retention_ms = 1;
    assert_int_equal(gw_db_downsample_run(db, gw_now_ms(), &ds, &err), GW_OK);
    assert_int_equal(ds.raw_dropped, 1);
    struct gw_matcher ms[1];
    size_t nm = 0;
    const char *sel = "{hostname=~\"node.\"}";
    assert_int_equal(gw_pq_parse_selector(sel, strlen(sel), ms, 1, &nm, &err), GW_OK);
    struct gw_db_view view = {.kind = GW_DB_VIEW_LAST, .accept_ms = 5 * MIN_MS};
    struct gw_db_select q = {.matchers = ms, .n_matchers = nm, .mint = old_t0(), .maxt = old_t0() + 3 * HOUR_MS,
                             .with_samples = 1, .view = &view};
    struct got g = {0};
    memset(&err, 0, sizeof err);
    assert_int_equal(gw_db_select(db, &q, take_series, &g, &err), GW_ECORRUPT);
    assert_non_null(strstr(err.msg, "time profile record is missing"));
    gw_matcher_free(&ms[0]);
    gw_db_close(db);
    free(v);
}

/* A store as format 3 builds wrote it: a GWB2 blob (no checksums) and a
 * version 1 rollup value open, verify clean and read back. */
struct old_fmt {
    int64_t ws, day;
    const struct gw_buf *col, *val, *agg;
};

static int write_old(struct gw_store_txn *t, void *ud)
{
    const struct old_fmt *o = ud;
    uint32_t node = 0;
    int rc = gw_store_series_node(t, 1, &node);
    struct gw_store_blob_col bc = {o->col->data, o->col->len};
    struct gw_store_blob_entry be = {.sid = 1, .block = o->val->data, .len = o->val->len, .col = 1};
    if (rc == GW_OK) rc = gw_store_blob_put_cols_v2(t, node, o->ws, &bc, 1, &be, 1);
    if (rc == GW_OK) rc = gw_store_rollup_begin_day(t, GW_ROLLUP_5M, o->day);
    if (rc == GW_OK) rc = gw_store_rollup_put(t, GW_ROLLUP_5M, o->day, node, 1, o->agg->data, o->agg->len);
    return rc;
}

static void test_old_formats_read(void **state)
{
    (void)state;
    make_dir();
    int64_t t0 = old_t0(), now = gw_now_ms();
    int64_t ts[3] = {t0 - HOUR_MS, t0 - HOUR_MS + 30000, t0 - HOUR_MS + 60000};
    double vs[3] = {1.5, 2.5, -0.0};
    struct gw_buf col, val, agg, agg2;
    gw_buf_init(&col, 0);
    gw_buf_init(&val, 0);
    gw_buf_init(&agg, 0);
    gw_buf_init(&agg2, 0);
    assert_int_equal(gw_block_ts_encode(ts, 3, &col), GW_OK);
    assert_int_equal(gw_block_values_encode(vs, 3, &val), GW_OK);
    assert_true(val.len < 60);
    struct gw_ds_cols dc = {0};
    assert_int_equal(gw_ds_aggregate(ts, vs, 3, GW_DS_5M_MS, &dc), GW_OK);
    assert_int_equal(gw_ds_encode_v1(&dc, &agg), GW_OK);
    assert_int_equal(gw_ds_encode_v2(&dc, &agg2), GW_OK);
    struct old_fmt of = {.ws = ts[0] - ts[0] % (2 * HOUR_MS), .day = t0 / GW_DAY_MS, .col = &col, .val = &val,
                         .agg = &agg};
    struct gw_db *db = open_db();
    struct gw_error err = {0};
    assert_int_equal(gw_store_write(db->store, write_old, &of, &err), GW_OK);
    gw_db_close(db);
    /* the version 1 value decodes to what the version 2 one holds */
    struct gw_ds_cols d1 = {0}, d2 = {0};
    assert_int_equal(gw_ds_decode(agg.data, agg.len, (1u << GW_DS_NCOL) - 1, &d1), GW_OK);
    assert_int_equal(gw_ds_decode(agg2.data, agg2.len, (1u << GW_DS_NCOL) - 1, &d2), GW_OK);
    assert_int_equal(d1.nb, d2.nb);
    for (int c = 0; c < GW_DS_NCOL; c++) assert_memory_equal(d1.c[c], d2.c[c], d1.nb * sizeof(double));
    gw_ds_cols_free(&d1);
    gw_ds_cols_free(&d2);
    gw_ds_cols_free(&dc);

    struct seen s;
    struct gw_db_verify_stats st;
    run_verify(&s, &st);
    assert_int_equal(s.n, 0);
    db = open_db();
    struct got g = {0};
    gw_fx_select(db, "{__name__=\"a_total\",hostname=\"node1\"}", ts[0], ts[2], take_series, &g);
    assert_int_equal(g.series, 1);
    assert_int_equal(g.n, 3);
    assert_memory_equal(g.t, ts, sizeof ts);
    assert_memory_equal(g.v, vs, sizeof vs);
    gw_db_close(db);
    (void)now;
    gw_buf_free(&col);
    gw_buf_free(&val);
    gw_buf_free(&agg);
    gw_buf_free(&agg2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_clean, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_blob, setup, teardown),
        cmocka_unit_test_setup_teardown(test_postings_missing_series, setup, teardown),
        cmocka_unit_test_setup_teardown(test_series_unknown_pair, setup, teardown),
        cmocka_unit_test_setup_teardown(test_node_and_shash, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wal_crc, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wal_torn_tail_is_normal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wal_hole_in_tail_is_normal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_a_data_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flipped_bit_raw_block, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flipped_bit_day_blob, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flipped_bit_rollup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flipped_bit_rollup_profiles, setup, teardown),
        cmocka_unit_test_setup_teardown(test_old_formats_read, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
