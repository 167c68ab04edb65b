/* test_backup.c - backup and restore: an offline backup restores to the
 * same samples and verifies clean; a backup taken while a writer thread
 * keeps appending holds every sample acknowledged before it began; backups
 * killed at several points never leave anything restore accepts and never
 * harm the source; restore refuses a non-empty dir without --force, a dir
 * in use, and a damaged backup. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/db.h"
#include "gpuwatch/kv.h"
#include "gpuwatch/labels.h"
#include "gpuwatch/matcher.h"
#include "db_fixture.h"

#define MIN_MS 60000LL
#define HOUR_MS 3600000LL
#define NSER 4

static char tmpdir[512], src[600], out[600], dst[600];

static int setup(void **state)
{
    (void)state;
    if (gw_fx_mkdtemp(tmpdir, sizeof tmpdir, "gwbackup") != 0) return -1;
    snprintf(src, sizeof src, "%s/src", tmpdir);
    snprintf(out, sizeof out, "%s/bk", tmpdir);
    snprintf(dst, sizeof dst, "%s/dst", tmpdir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return gw_fx_rmrf(tmpdir);
}

static struct gw_db *open_dir(const char *dir)
{
    return gw_fx_open_db(dir, 0);
}

static char names[NSER][8] = {"m0", "m1", "m2", "m3"};

/* One sample per series at t. */
static int append_at(struct gw_db *db, int64_t t, int64_t now)
{
    struct gw_rw_series s[NSER];
    struct gw_label l[NSER][2];
    struct gw_sample smp[NSER];
    struct gw_rw_request r = {.version = 1, .series = s, .n_series = NSER, .n_samples = NSER};
    for (int i = 0; i < NSER; i++) {
        l[i][0] = (struct gw_label){"__name__", 8, names[i], 2};
        l[i][1] = (struct gw_label){"hostname", 8, "n1", 2};
        smp[i] = (struct gw_sample){t, (double)t / 1000.0 + i};
        s[i] = (struct gw_rw_series){.labels = l[i], .n_labels = 2, .samples = &smp[i], .n_samples = 1};
    }
    struct gw_append_result res;
    struct gw_error err = {0};
    int rc = gw_db_append(db, &r, now, &res, &err);
    return rc == GW_OK && res.accepted == NSER ? 0 : -1;
}

struct count {
    size_t series, samples;
    int64_t maxt;
};

static int count_cb(void *ud, uint64_t sid, const uint8_t *labels, size_t len, const int64_t *t, const double *v,
                    size_t n)
{
    (void)sid;
    (void)labels;
    (void)len;
    struct count *c = ud;
    c->series++;
    c->samples += n;
    for (size_t i = 0; i < n; i++) {
        if (v[i] != (double)t[i] / 1000.0 + (double)(c->series - 1)) return GW_ECORRUPT;
        if (t[i] > c->maxt) c->maxt = t[i];
    }
    return GW_OK;
}

static struct count count_dir(const char *dir)
{
    struct gw_db *db = open_dir(dir);
    struct gw_matcher m;
    memset(&m, 0, sizeof m);
    struct gw_error err = {0};
    assert_int_equal(gw_matcher_init(&m, GW_MATCH_EQ, "hostname", 8, "n1", 2, &err), GW_OK);
    struct gw_db_select q = {.matchers = &m, .n_matchers = 1, .mint = INT64_MIN + 1, .maxt = INT64_MAX - 1,
                             .with_samples = 1};
    struct count c = {.maxt = INT64_MIN};
    assert_int_equal(gw_db_select(db, &q, count_cb, &c, &err), GW_OK);
    gw_matcher_free(&m);
    gw_db_close(db);
    return c;
}

static void verify_clean(const char *dir)
{
    struct gw_db_verify_stats st;
    struct gw_error err = {0};
    assert_int_equal(gw_db_verify(dir, NULL, NULL, NULL, &st, &err), GW_OK);
    assert_int_equal(st.problems, 0);
}


/* An alert-log-like LMDB environment next to the store: key k -> v. */
static void kv_put_one(const char *dir, const char *k, const char *v)
{
    static const char *const tables[] = {"t"};
    struct gw_kv *kv;
    struct gw_kv_txn *t;
    struct gw_error err = {0};
    assert_int_equal(gw_kv_open(&kv, dir, tables, 1, 1 << 20, 1 << 24, &err), GW_OK);
    assert_int_equal(gw_kv_begin(kv, 1, &t, &err), GW_OK);
    assert_int_equal(gw_kv_put(t, 0, k, strlen(k), v, strlen(v), &err), GW_OK);
    assert_int_equal(gw_kv_commit(t, &err), GW_OK);
    gw_kv_close(kv);
}

static int kv_has(const char *dir, const char *k, const char *v)
{
    static const char *const tables[] = {"t"};
    struct gw_kv *kv;
    struct gw_kv_txn *t;
    struct gw_error err = {0};
    assert_int_equal(gw_kv_open(&kv, dir, tables, 1, 1 << 20, 1 << 24, &err), GW_OK);
    assert_int_equal(gw_kv_begin(kv, 0, &t, &err), GW_OK);
    const void *got;
    size_t gl;
    int ok = gw_kv_get(t, 0, k, strlen(k), &got, &gl, &err) == GW_OK && gl == strlen(v) && !memcmp(got, v, gl);
    gw_kv_abort(t);
    gw_kv_close(kv);
    return ok;
}

static void test_offline_round_trip(void **state)
{
    (void)state;
    int64_t now = gw_now_ms(), t0 = now - 5 * HOUR_MS;
    struct gw_db *db = open_dir(src);
    for (int k = 0; k < 50; k++) assert_int_equal(append_at(db, t0 + k * 5 * MIN_MS, now), 0);
    gw_db_close(db);   /* flushes: data in the store */
    db = open_dir(src);
    for (int k = 50; k < 58; k++) assert_int_equal(append_at(db, t0 + k * 5 * MIN_MS, now), 0);
    /* the db holds the lock: an offline backup is refused */
    struct gw_db_backup_stats st;
    struct gw_error err = {0};
    assert_int_equal(gw_db_backup_dir(src, out, &st, &err), GW_ELIMIT);
    gw_db_close(db);

    char kvs[700], kvd[700];
    snprintf(kvs, sizeof kvs, "%s/alerts", src);
    snprintf(kvd, sizeof kvd, "%s/alerts", dst);
    kv_put_one(kvs, "alert-1", "firing");
    assert_int_equal(gw_db_backup_dir(src, out, &st, &err), GW_OK);
    assert_true(st.files >= 2);
    assert_int_equal(gw_db_backup_check(out, NULL, &err), GW_OK);
    assert_int_equal(gw_db_restore(out, dst, 0, &st, &err), GW_OK);
    verify_clean(dst);
    assert_true(kv_has(kvd, "alert-1", "firing"));
    struct count a = count_dir(src), b = count_dir(dst);
    assert_int_equal(a.series, NSER);
    assert_int_equal(a.samples, 58 * NSER);
    assert_int_equal(b.series, a.series);
    assert_int_equal(b.samples, a.samples);

    /* restore refuses a non-empty dir, and replaces it with force */
    assert_int_equal(gw_db_restore(out, dst, 0, &st, &err), GW_EINVAL);
    assert_non_null(strstr(err.msg, "--force"));
    assert_int_equal(gw_db_restore(out, dst, 1, &st, &err), GW_OK);
    /* ... but not while a process uses it */
    db = open_dir(dst);
    assert_int_equal(gw_db_restore(out, dst, 1, &st, &err), GW_ELIMIT);
    gw_db_close(db);
    /* a backup target that is not empty is refused */
    assert_int_equal(gw_db_backup_dir(src, out, &st, &err), GW_EINVAL);
}

struct writer {
    struct gw_db *db;
    int64_t t0, now;
    atomic_int stop;        /* set by the test, read by the writer */
    pthread_mutex_t mu;
    int64_t acked;          /* newest t whose append returned OK */
    int failed;
};

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    for (int64_t k = 0; !atomic_load(&w->stop); k++) {
        int64_t t = w->t0 + k * 1000;
        if (t > w->now) break;
        if (append_at(w->db, t, w->now) != 0) {
            w->failed = 1;
            break;
        }
        pthread_mutex_lock(&w->mu);
        w->acked = t;
        pthread_mutex_unlock(&w->mu);
    }
    return NULL;
}

static void test_online_backup_has_acked_samples(void **state)
{
    (void)state;
    int64_t now = gw_now_ms();
    struct writer w = {.t0 = now - 3 * HOUR_MS, .now = now, .acked = INT64_MIN};
    pthread_mutex_init(&w.mu, NULL);
    w.db = open_dir(src);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, writer_main, &w), 0);
    while (1) {   /* let it write a while, with a flush in between */
        pthread_mutex_lock(&w.mu);
        int64_t a = w.acked;
        pthread_mutex_unlock(&w.mu);
        if (a != INT64_MIN && a - w.t0 > 3000 * 1000) break;
        usleep(1000);
    }
    struct gw_error err = {0};
    assert_int_equal(gw_db_flush(w.db, &err), GW_OK);
    usleep(20000);
    pthread_mutex_lock(&w.mu);
    int64_t acked_before = w.acked;
    pthread_mutex_unlock(&w.mu);
    struct gw_db_backup_stats st;
    assert_int_equal(gw_db_backup(w.db, out, &st, &err), GW_OK);
    atomic_store(&w.stop, 1);
    pthread_join(th, NULL);
    assert_int_equal(w.failed, 0);
    gw_db_close(w.db);
    assert_int_equal(gw_db_restore(out, dst, 0, &st, &err), GW_OK);
    verify_clean(dst);
    struct count c = count_dir(dst);
    assert_int_equal(c.series, NSER);
    assert_true(c.maxt >= acked_before);
    /* every acknowledged second from t0 up to acked_before is there */
    assert_true(c.samples >= (size_t)((acked_before - w.t0) / 1000 + 1) * NSER);
    pthread_mutex_destroy(&w.mu);
}

static void test_killed_backups(void **state)
{
    (void)state;
    int64_t now = gw_now_ms(), t0 = now - 5 * HOUR_MS;
    struct gw_db *db = open_dir(src);
    for (int k = 0; k < 200; k++) assert_int_equal(append_at(db, t0 + k * MIN_MS, now), 0);
    gw_db_close(db);
    struct count before = count_dir(src);
    static const int delays_us[] = {0, 100, 300, 1000, 2000, 5000, 20000};
    for (size_t i = 0; i < sizeof delays_us / sizeof delays_us[0]; i++) {
        char o[700];
        snprintf(o, sizeof o, "%s/kill%zu", tmpdir, i);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            struct gw_error e = {0};
            _exit(gw_db_backup_dir(src, o, NULL, &e) == GW_OK ? 0 : 1);
        }
        if (delays_us[i]) usleep((useconds_t)delays_us[i]);
        kill(pid, SIGKILL);
        int status = 0;
        waitpid(pid, &status, 0);
        struct gw_error err = {0};
        struct stat sb;
        int finished = stat(o, &sb) == 0;
        char d[700];
        snprintf(d, sizeof d, "%s/restored%zu", tmpdir, i);
        int rc = gw_db_restore(o, d, 0, NULL, &err);
        if (finished) {
            /* the rename happened: the backup is whole */
            assert_int_equal(rc, GW_OK);
            struct count c = count_dir(d);
            assert_int_equal(c.samples, before.samples);
        } else {
            assert_int_not_equal(rc, GW_OK);
            assert_true(stat(d, &sb) != 0);   /* nothing written */
        }
    }
    verify_clean(src);
    struct count after = count_dir(src);
    assert_int_equal(after.samples, before.samples);
}


/* The same with the backup made by a process that has the db open and
 * writes (as serve does), killed at several points: the source keeps every
 * sample the killed process had acknowledged before the backup began. */
static void test_killed_online_backups(void **state)
{
    (void)state;
    int64_t now = gw_now_ms(), t0 = now - 5 * HOUR_MS;
    static const int delays_us[] = {0, 500, 2000, 8000, 30000};
    int64_t k0 = 0;
    for (size_t i = 0; i < sizeof delays_us / sizeof delays_us[0]; i++) {
        char o[700];
        snprintf(o, sizeof o, "%s/okill%zu", tmpdir, i);
        int pipefd[2];
        assert_int_equal(pipe(pipefd), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(pipefd[0]);
            struct gw_db *db = open_dir(src);
            for (int k = 0; k < 40; k++)
                if (append_at(db, t0 + (k0 + k) * MIN_MS, now) != 0) _exit(3);
            if (write(pipefd[1], "x", 1) != 1) _exit(4);   /* acknowledged: now back up */
            struct gw_error e = {0};
            _exit(gw_db_backup(db, o, NULL, &e) == GW_OK ? 0 : 1);
        }
        close(pipefd[1]);
        char ch;
        assert_int_equal(read(pipefd[0], &ch, 1), 1);
        close(pipefd[0]);
        if (delays_us[i]) usleep((useconds_t)delays_us[i]);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        k0 += 40;
        struct stat sb;
        struct gw_error err = {0};
        char d[700];
        snprintf(d, sizeof d, "%s/orestored%zu", tmpdir, i);
        int rc = gw_db_restore(o, d, 0, NULL, &err);
        if (stat(o, &sb) == 0) {
            assert_int_equal(rc, GW_OK);
            struct count c = count_dir(d);
            assert_int_equal(c.samples, (size_t)k0 * NSER);
        } else {
            assert_int_not_equal(rc, GW_OK);
        }
        struct count c = count_dir(src);   /* replays what the killed process wrote */
        assert_int_equal(c.samples, (size_t)k0 * NSER);
    }
    verify_clean(src);
}

static void test_damaged_backup_refused(void **state)
{
    (void)state;
    int64_t now = gw_now_ms();
    struct gw_db *db = open_dir(src);
    for (int k = 0; k < 20; k++) assert_int_equal(append_at(db, now - HOUR_MS + k * MIN_MS, now), 0);
    gw_db_close(db);
    struct gw_error err = {0};
    assert_int_equal(gw_db_backup_dir(src, out, NULL, &err), GW_OK);
    char p[700];
    snprintf(p, sizeof p, "%s/store/data.mdb", out);
    FILE *f = fopen(p, "r+b");
    assert_non_null(f);
    fseek(f, 5000, SEEK_SET);
    int ch = fgetc(f);
    fseek(f, 5000, SEEK_SET);
    fputc(ch ^ 1, f);
    fclose(f);
    assert_int_equal(gw_db_backup_check(out, NULL, &err), GW_ECORRUPT);
    assert_non_null(strstr(err.msg, "does not match"));
    assert_int_equal(gw_db_restore(out, dst, 0, NULL, &err), GW_ECORRUPT);
    struct stat sb;
    assert_true(stat(dst, &sb) != 0);
    /* a missing manifest: not a backup */
    snprintf(p, sizeof p, "%s/MANIFEST", out);
    unlink(p);
    assert_int_equal(gw_db_restore(out, dst, 0, NULL, &err), GW_ENOTFOUND);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_offline_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_online_backup_has_acked_samples, setup, teardown),
        cmocka_unit_test_setup_teardown(test_killed_backups, setup, teardown),
        cmocka_unit_test_setup_teardown(test_killed_online_backups, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_backup_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
