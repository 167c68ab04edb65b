/* tests/db_fixture.h - what the db test files share: a fresh temp dir per
 * test (under $GW_TEST_TMP, default /tmp), its removal, and opening a db
 * with default options and a small initial map, a select by selector
 * text. Include after <cmocka.h>. */
#ifndef GW_TEST_DB_FIXTURE_H
#define GW_TEST_DB_FIXTURE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuwatch/db.h"
#include "gpuwatch/matcher.h"
#include "gpuwatch/promql.h"

/* Makes BASE/NAME.XXXXXX into dir (cap bytes). 0, or -1. */
static inline int gw_fx_mkdtemp(char *dir, size_t cap, const char *name)
{
    const char *base = getenv("GW_TEST_TMP");
    if (!base) base = "/tmp";
    char cmd[600];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", base);
    if (system(cmd) != 0) return -1;
    snprintf(dir, cap, "%s/%s.XXXXXX", base, name);
    return mkdtemp(dir) ? 0 : -1;
}

/* rm -rf dir. 0, or -1. */
static inline int gw_fx_rmrf(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Opens the db on dir (retention_ms 0: the default); fails the test when
 * it cannot. */
static inline struct gw_db *gw_fx_open_db(const char *dir, int64_t retention_ms)
{
    struct gw_db_opts o;
    gw_db_opts_default(&o);
    o.dir = dir;
    o.initial_map_bytes = 1 << 20;
    if (retention_ms) o.retention_ms = retention_ms;
    struct gw_db *db = NULL;
    struct gw_error err = {0};
    int rc = gw_db_open(&db, &o, &err);
    if (rc) fprintf(stderr, "open %s: %s\n", dir, err.msg);
    assert_int_equal(rc, GW_OK);
    return db;
}

/* The series matching selector sel (at most 8 matchers) with their samples
 * in [mint, maxt], series without data left out, to cb; fails the test on
 * an error. */
static inline void gw_fx_select(struct gw_db *db, const char *sel, int64_t mint, int64_t maxt, gw_db_series_cb cb,
                                void *ud)
{
    struct gw_matcher ms[8];
    size_t nm = 0;
    struct gw_error err = {0};
    assert_int_equal(gw_pq_parse_selector(sel, strlen(sel), ms, 8, &nm, &err), GW_OK);
    struct gw_db_select q = {.matchers = ms, .n_matchers = nm, .mint = mint, .maxt = maxt, .with_samples = 1,
                             .only_with_data = 1};
    int rc = gw_db_select(db, &q, cb, ud, &err);
    if (rc) fprintf(stderr, "select: %s\n", err.msg);
    assert_int_equal(rc, GW_OK);
    for (size_t i = 0; i < nm; i++) gw_matcher_free(&ms[i]);
}

#endif /* GW_TEST_DB_FIXTURE_H */
