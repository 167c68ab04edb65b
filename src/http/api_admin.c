/* api_admin.c - maintenance endpoints for the CLI next to a running serve:
 *   POST /api/v1/admin/retention?keep=55d   drop day partitions older than keep
 *   POST /api/v1/admin/flush                write every head chunk to the store
 *   POST /api/v1/admin/downsample?raw_retention=14d&res5m_retention=90d
 *                                           gw_db_downsample_run (0: keep forever;
 *                                           absent: the defaults of db.h)
 * Answered only for clients on a loopback address (403 otherwise), since
 * they change or delete data and the API has no authentication. */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "gpuwatch/codec.h"
#include "http/http_int.h"

static int from_loopback(struct gw_http_req *rq)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(rq->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!ci || !ci->client_addr) return 0;
    const struct sockaddr *sa = ci->client_addr;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr)) return 1;
        if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) return in6->sin6_addr.s6_addr[12] == 127;
    }
    return 0;
}

void gw_api_admin_retention(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    if (!from_loopback(rq)) {
        gw_resp_api_error(rs, "bad_data", "admin endpoints answer loopback clients only");
        rs->status = 403;
        return;
    }
    const struct gw_param *p = gw_params_get(&rq->params, "keep");
    int64_t keep = 0;
    if (!p || gw_parse_duration_ms(p->val, &keep) != GW_OK || keep <= 0) {
        gw_resp_api_error(rs, "bad_data", "invalid parameter \"keep\": expected a positive duration like 55d");
        return;
    }
    unsigned dropped = 0;
    struct gw_error err = {0};
    if (gw_db_retention(rq->h->db, keep, gw_now_ms(), &dropped, &err) != GW_OK) {
        gw_resp_api_error(rs, "internal", "%s", err.msg);
        return;
    }
    rs->status = 200;
    rs->content_type = "application/json";
    gw_buf_printf(&rs->body, "{\"status\":\"success\",\"data\":{\"droppedPartitions\":%u}}", dropped);
}

void gw_api_admin_flush(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    if (!from_loopback(rq)) {
        gw_resp_api_error(rs, "bad_data", "admin endpoints answer loopback clients only");
        rs->status = 403;
        return;
    }
    struct gw_error err = {0};
    if (gw_db_flush(rq->h->db, &err) != GW_OK) {
        gw_resp_api_error(rs, "internal", "%s", err.msg);
        return;
    }
    rs->status = 200;
    rs->content_type = "application/json";
    gw_buf_printf(&rs->body, "{\"status\":\"success\",\"data\":null}");
}

/* A retention parameter: absent keeps *ms, "0" or a positive duration. */
static int ds_param(struct gw_http_req *rq, struct gw_http_resp *rs, const char *name, int64_t *ms)
{
    const struct gw_param *p = gw_params_get(&rq->params, name);
    if (!p)
        return 0;
    if (!strcmp(p->val, "0")) {
        *ms = 0;
        return 0;
    }
    if (gw_parse_duration_ms(p->val, ms) != GW_OK || *ms <= 0) {
        gw_resp_api_error(rs, "bad_data", "invalid parameter \"%s\": expected 0 or a duration like 14d", name);
        return -1;
    }
    return 0;
}

void gw_api_admin_downsample(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    if (!from_loopback(rq)) {
        gw_resp_api_error(rs, "bad_data", "admin endpoints answer loopback clients only");
        rs->status = 403;
        return;
    }
    struct gw_db_downsample ds;
    gw_db_downsample_default(&ds);
    if (ds_param(rq, rs, "raw_retention", &ds.raw_retention_ms) ||
        ds_param(rq, rs, "res5m_retention", &ds.res5m_retention_ms))
        return;
    struct gw_error err = {0};
    if (gw_db_downsample_run(rq->h->db, gw_now_ms(), &ds, &err) != GW_OK) {
        gw_resp_api_error(rs, "internal", "%s", err.msg);
        return;
    }
    rs->status = 200;
    rs->content_type = "application/json";
    gw_buf_printf(&rs->body,
                  "{\"status\":\"success\",\"data\":{\"daysDone\":%u,\"daysRedone\":%u,\"daysFresh\":%u,"
                  "\"series\":%llu,\"samples\":%llu,\"buckets5m\":%llu,\"buckets1h\":%llu,\"bytes\":%llu,"
                  "\"rawDaysDropped\":%u,\"res5mDaysDropped\":%u,\"res1hDaysDropped\":%u}}",
                  ds.days_done, ds.days_redone, ds.days_fresh, (unsigned long long)ds.series,
                  (unsigned long long)ds.samples, (unsigned long long)ds.buckets_5m,
                  (unsigned long long)ds.buckets_1h, (unsigned long long)ds.bytes, ds.raw_dropped,
                  ds.res5m_dropped, ds.res1h_dropped);
}
