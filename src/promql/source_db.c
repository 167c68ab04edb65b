/* src/promql/source_db.c - the PromQL sample source over a gpuwatch
 * database: select() is gw_db_select with with_samples = 1 and
 * only_with_data = 1, so the evaluator sees every series matching all
 * matchers that has at least one sample in [mint, maxt], with those
 * samples in time order; select_view reads through a gw_db_view (rollups
 * of downsampled days, docs/downsampling.md). The evaluator enforces its own sample limit, so
 * the database is asked for no limit of its own. */
#include <string.h>

#include "gpuwatch/db.h"
#include "gpuwatch/promql.h"

static int db_select(void *ud, const struct gw_matcher *ms, size_t n_ms, int64_t mint,
                     int64_t maxt, gw_pq_series_cb cb, void *cb_ud, struct gw_error *err)
{
    struct gw_db_select q;
    memset(&q, 0, sizeof(q));
    q.matchers = ms;
    q.n_matchers = n_ms;
    q.mint = mint;
    q.maxt = maxt;
    q.with_samples = 1;
    q.only_with_data = 1;
    q.max_samples = 0;
    return gw_db_select((struct gw_db *)ud, &q, cb, cb_ud, err);
}

static int db_select_view(void *ud, const struct gw_matcher *ms, size_t n_ms, int64_t mint, int64_t maxt,
                          const struct gw_pq_view *view, gw_pq_series_cb cb, void *cb_ud, struct gw_error *err)
{
    struct gw_db_view v;
    memset(&v, 0, sizeof(v));
    v.kind = view->kind == GW_PQ_VIEW_LAST ? GW_DB_VIEW_LAST
             : view->kind == GW_PQ_VIEW_LAST_VALUE ? GW_DB_VIEW_LAST_VALUE
             : view->kind == GW_PQ_VIEW_MAX ? GW_DB_VIEW_MAX
             : view->kind == GW_PQ_VIEW_MIN ? GW_DB_VIEW_MIN : GW_DB_VIEW_RAW;
    v.exact_ms = view->exact_ms;
    v.accept_ms = view->accept_ms == GW_PQ_RES_RAW ? GW_DB_RES_RAW : view->accept_ms;
    struct gw_db_select q;
    memset(&q, 0, sizeof(q));
    q.matchers = ms;
    q.n_matchers = n_ms;
    q.mint = mint;
    q.maxt = maxt;
    q.with_samples = 1;
    q.only_with_data = 1;
    q.view = &v;
    return gw_db_select((struct gw_db *)ud, &q, cb, cb_ud, err);
}

void gw_pq_source_db(struct gw_pq_source *src, struct gw_db *db)
{
    src->ud = db;
    src->select = db_select;
    src->select_view = db_select_view;
}
