/* src/http/api_format.c - /api/v1/format_query (GET or form POST, parameter
 * query): parses the expression and answers it prettified the way
 * Prometheus' Pretty(0) prints it (gw_pq_format), e.g.
 *   query=sum(rate(x{a="b"}[5m]))by(job)
 *   -> {"status":"success","data":"sum by (job) (rate(x{a=\"b\"}[5m]))"}
 * A parse error is 400 bad_data "invalid parameter \"query\": <parser message>",
 * as Prometheus answers it. */
#include <string.h>
#include "gpuwatch/promql.h"
#include "http/http_int.h"

/* Longest answer of a formatted query: the query is capped at
 * GW_PQ_MAX_QUERY_BYTES; indentation can grow it, never beyond this. */
#define FORMAT_MAX_BYTES ((size_t)64 << 20)

void gw_api_format_query(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    const struct gw_param *p = gw_params_get(&rq->params, "query");
    struct gw_pq_expr *e = NULL;
    struct gw_error err;
    struct gw_buf text;
    int rc;

    gw_error_clear(&err);
    rc = gw_pq_parse(p ? p->val : "", p ? p->val_len : 0, NULL, &e, &err);
    if (rc == GW_ENOMEM) {
        gw_resp_api_error(rs, "internal", "out of memory");
        return;
    }
    if (rc != GW_OK) {
        gw_resp_api_error(rs, "bad_data", "invalid parameter \"query\": %s",
                          err.msg[0] ? err.msg : gw_strerror(rc));
        return;
    }
    gw_buf_init(&text, FORMAT_MAX_BYTES);
    rc = gw_pq_format(e->root, &text);
    gw_buf_reset(&rs->body);
    if (rc == GW_OK)
        rc = gw_buf_printf(&rs->body, "{\"status\":\"success\",\"data\":");
    if (rc == GW_OK)
        rc = gw_json_str(&rs->body, (const char *)text.data, text.len);
    if (rc == GW_OK)
        rc = gw_buf_putc(&rs->body, '}');
    if (rc != GW_OK) {
        gw_resp_api_error(rs, "internal", "cannot format the query: %s", gw_strerror(rc));
    } else {
        rs->status = 200;
        rs->content_type = "application/json";
        rs->content_encoding = NULL;
    }
    gw_buf_free(&text);
    gw_pq_expr_free(e);
}
