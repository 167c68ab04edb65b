/* test_kv.c - the small key-value store (kv.h): tables, put/get/delete,
 * ordered scans from a key, the last key, transactions (abort discards),
 * growth when the map is full, reopen keeps the data. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuwatch/kv.h"

static const char *const k_tables[] = {"a", "b"};

static void tmpdir(char *buf, size_t cap)
{
    const char *base = getenv("GW_TEST_TMP");
    snprintf(buf, cap, "%s/gwkvXXXXXX", base && *base ? base : "/tmp");
    assert_non_null(mkdtemp(buf));
}

static void rm_rf(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

struct seen {
    char keys[16][16];
    int n;
};

static int seen_cb(void *ud, const void *k, size_t kl, const void *v, size_t vl)
{
    (void)v;
    (void)vl;
    struct seen *s = ud;
    if (s->n == 3) return 7;   /* stop after three with a value of our own */
    snprintf(s->keys[s->n++], sizeof s->keys[0], "%.*s", (int)kl, (const char *)k);
    return 0;
}

static void test_kv_put_get_scan(void **state)
{
    (void)state;
    char dir[256], path[300];
    tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/kv", dir);
    struct gw_kv *kv;
    struct gw_kv_txn *t;
    struct gw_error err = {0};
    assert_int_equal(gw_kv_open(&kv, path, k_tables, 2, 1 << 20, 64 << 20, &err), GW_OK);
    assert_int_equal(gw_kv_begin(kv, 1, &t, &err), GW_OK);
    const char *keys[] = {"k3", "k1", "k5", "k2", "k4"};
    for (int i = 0; i < 5; i++) assert_int_equal(gw_kv_put(t, 0, keys[i], 2, "v", 1, &err), GW_OK);
    assert_int_equal(gw_kv_put(t, 1, "other", 5, "x", 1, &err), GW_OK);
    assert_int_equal(gw_kv_del(t, 0, "k4", 2, &err), GW_OK);
    assert_int_equal(gw_kv_del(t, 0, "nope", 4, &err), GW_OK);
    assert_int_equal(gw_kv_put(t, 5, "k", 1, "v", 1, &err), GW_EINVAL);
    assert_int_equal(gw_kv_commit(t, &err), GW_OK);
    /* an aborted write leaves nothing */
    assert_int_equal(gw_kv_begin(kv, 1, &t, &err), GW_OK);
    assert_int_equal(gw_kv_put(t, 0, "k9", 2, "v", 1, &err), GW_OK);
    gw_kv_abort(t);
    assert_int_equal(gw_kv_begin(kv, 0, &t, &err), GW_OK);
    const void *v;
    size_t vl;
    assert_int_equal(gw_kv_get(t, 0, "k9", 2, &v, &vl, &err), GW_ENOTFOUND);
    assert_int_equal(gw_kv_get(t, 1, "other", 5, &v, &vl, &err), GW_OK);
    assert_int_equal(vl, 1);
    assert_memory_equal(v, "x", 1);
    struct seen s = {0};
    assert_int_equal(gw_kv_scan(t, 0, "k2", 2, seen_cb, &s, &err), GW_OK);   /* the table ends */
    assert_int_equal(s.n, 3);
    assert_string_equal(s.keys[0], "k2");
    assert_string_equal(s.keys[1], "k3");
    assert_string_equal(s.keys[2], "k5");   /* k4 deleted */
    const void *lk;
    size_t ll;
    assert_int_equal(gw_kv_last(t, 0, &lk, &ll, &err), GW_OK);
    assert_int_equal(ll, 2);
    assert_memory_equal(lk, "k5", 2);
    gw_kv_abort(t);
    gw_kv_close(kv);
    /* reopened: the data is there */
    assert_int_equal(gw_kv_open(&kv, path, k_tables, 2, 1 << 20, 64 << 20, &err), GW_OK);
    assert_int_equal(gw_kv_begin(kv, 0, &t, &err), GW_OK);
    s = (struct seen){0};
    assert_int_equal(gw_kv_scan(t, 0, NULL, 0, seen_cb, &s, &err), 7);   /* stopped by the callback */
    assert_string_equal(s.keys[0], "k1");
    assert_string_equal(s.keys[2], "k3");
    assert_int_equal(gw_kv_last(t, 1, &lk, &ll, &err), GW_OK);
    gw_kv_abort(t);
    gw_kv_close(kv);
    rm_rf(dir);
}

static void test_kv_grows_when_full(void **state)
{
    (void)state;
    char dir[256], path[300];
    tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/kv", dir);
    struct gw_kv *kv;
    struct gw_error err = {0};
    /* a small map (64 KiB) and a bigger maximum */
    assert_int_equal(gw_kv_open(&kv, path, k_tables, 2, 64 << 10, 16 << 20, &err), GW_OK);
    static uint8_t big[4000];
    memset(big, 0xab, sizeof big);
    int grown = 0;
    for (uint32_t i = 0; i < 400; i++) {
        for (;;) {
            struct gw_kv_txn *t;
            assert_int_equal(gw_kv_begin(kv, 1, &t, &err), GW_OK);
            uint8_t k[4] = {(uint8_t)(i >> 24), (uint8_t)(i >> 16), (uint8_t)(i >> 8), (uint8_t)i};
            int rc = gw_kv_put(t, 0, k, 4, big, sizeof big, &err);
            if (rc == GW_OK) rc = gw_kv_commit(t, &err);
            else gw_kv_abort(t);
            if (rc == GW_OK) break;
            assert_int_equal(rc, GW_EFULL);
            assert_int_equal(gw_kv_grow(kv, &err), GW_OK);
            grown++;
        }
    }
    assert_true(grown > 0);
    struct gw_kv_txn *t;
    assert_int_equal(gw_kv_begin(kv, 0, &t, &err), GW_OK);
    const void *lk;
    size_t ll;
    assert_int_equal(gw_kv_last(t, 0, &lk, &ll, &err), GW_OK);
    assert_int_equal(((const uint8_t *)lk)[3], 399 & 0xff);
    gw_kv_abort(t);
    gw_kv_close(kv);
    /* a maximum reached is GW_EFULL from grow */
    assert_int_equal(gw_kv_open(&kv, path, k_tables, 2, 16 << 20, 16 << 20, &err), GW_OK);
    assert_int_equal(gw_kv_grow(kv, &err), GW_EFULL);
    gw_kv_close(kv);
    rm_rf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kv_put_get_scan),
        cmocka_unit_test(test_kv_grows_when_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
