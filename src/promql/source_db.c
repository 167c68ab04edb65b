/* src/promql/source_db.c - the PromQL sample source over a gpuwatch
 * database: select() is gw_db_select with with_samples = 1 and
 * only_with_data = 1, so the evaluator sees every series matching all
 * matchers that has at least one sample in [mint, maxt], with those
 * samples in time order. The evaluator enforces its own sample limit, so
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

void gw_pq_source_db(struct gw_pq_source *src, struct gw_db *db)
{
    src->ud = db;
    src->select = db_select;
}
