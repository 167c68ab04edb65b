/* api_admin.c - maintenance endpoints for the CLI next to a running serve:
 *   POST /api/v1/admin/retention?keep=55d   drop day partitions older than keep
 *   POST /api/v1/admin/retention?size=500GB drop the oldest day partitions until the
 *                                           store's pages in use fit (keep and size may
 *                                           be given together)
 *   POST /api/v1/admin/flush                write every head chunk to the store
 *   POST /api/v1/admin/compact[?keep_dead=1] re-encode finished days, drop dead series
 *                                           (the compacting copy of the file runs only
 *                                           offline, docs/storage.md)
 *   POST /api/v1/admin/backup?out=DIR       consistent backup into DIR (absent or
 *                                           empty; a path on the server's machine)
 *   POST /api/v1/admin/downsample?raw_retention=14d&res5m_retention=90d
 *                                           gw_db_downsample_run (0: keep forever;
 *                                           absent: the defaults of db.h)
 * They change or delete data: with admin credentials configured
 * (--web.auth.admin.*, auth.c) they answer any client that gives them,
 * otherwise only clients on a loopback address (403 for the others). */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "gpuwatch/codec.h"
#include "http/http_int.h"

/* A loopback client, or one that gave the configured admin credentials. */
static int from_loopback(struct gw_http_req *rq)
{
    if (rq->admin_authed) return 1;
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

static int admin_refused(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    if (from_loopback(rq)) return 0;
    gw_resp_api_error(rs, "bad_data", "admin endpoints answer loopback clients only");
    rs->status = 403;
    return 1;
}

void gw_api_admin_retention(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    if (admin_refused(rq, rs)) return;
    const struct gw_param *p = gw_params_get(&rq->params, "keep");
    const struct gw_param *ps = gw_params_get(&rq->params, "size");
    int64_t keep = 0;
    uint64_t size = 0;
    if ((!p && !ps) || (p && (gw_parse_duration_ms(p->val, &keep) != GW_OK || keep <= 0))) {
        gw_resp_api_error(rs, "bad_data", "invalid parameter \"keep\": expected a positive duration like 55d");
        return;
    }
    if (ps && (gw_parse_size_bytes(ps->val, &size) != GW_OK || size == 0)) {
        gw_resp_api_error(rs, "bad_data", "invalid parameter \"size\": expected a positive size like 500GB or 20GiB");
        return;
    }
    unsigned dropped = 0, dropped_size = 0;
    struct gw_error err = {0};
    if ((p && gw_db_retention(rq->h->db, keep, gw_now_ms(), &dropped, &err) != GW_OK) ||
        (ps && gw_db_retention_size(rq->h->db, size, &dropped_size, &err) != GW_OK)) {
        gw_resp_api_error(rs, "internal", "%s", err.msg);
        return;
    }
    rs->status = 200;
    rs->content_type = "application/json";
    gw_buf_printf(&rs->body, "{\"status\":\"success\",\"data\":{\"droppedPartitions\":%u}}", dropped + dropped_size);
}

void gw_api_admin_compact(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    if (admin_refused(rq, rs)) return;
    const struct gw_param *p = gw_params_get(&rq->params, "keep_dead");
    struct gw_db_compact_opts o = {.keep_dead = p && !strcmp(p->val, "1")};
    struct gw_db_compact_result r;
    struct gw_error err = {0};
    int rc = gw_db_compact(rq->h->db, &o, &r, &err);
    if (rc != GW_OK) {
        gw_resp_api_error(rs, rc == GW_ELIMIT ? "unavailable" : "internal", "%s", err.msg);
        if (rc == GW_ELIMIT) rs->status = 503;
        return;
    }
    rs->status = 200;
    rs->content_type = "application/json";
    gw_buf_printf(&rs->body,
                  "{\"status\":\"success\",\"data\":{\"days\":%u,\"nodeDays\":%llu,\"nodeDaysRaced\":%llu,"
                  "\"blobsBefore\":%llu,\"blobsAfter\":%llu,\"bytesBefore\":%llu,\"bytesAfter\":%llu,"
                  "\"samples\":%llu,\"seriesDropped\":%llu,\"pairsDropped\":%llu,\"fileBytesBefore\":%llu,"
                  "\"fileBytesAfter\":%llu,\"liveBytesBefore\":%llu,\"liveBytesAfter\":%llu,\"fileCopied\":%s}}",
                  r.days, (unsigned long long)r.node_days, (unsigned long long)r.node_days_raced,
                  (unsigned long long)r.blobs_before, (unsigned long long)r.blobs_after,
                  (unsigned long long)r.bytes_before, (unsigned long long)r.bytes_after,
                  (unsigned long long)r.samples, (unsigned long long)r.series_dropped,
                  (unsigned long long)r.pairs_dropped, (unsigned long long)r.file_before,
                  (unsigned long long)r.file_after, (unsigned long long)r.live_before,
                  (unsigned long long)r.live_after, r.file_copied ? "true" : "false");
}

void gw_api_admin_flush(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    if (admin_refused(rq, rs)) return;
    struct gw_error err = {0};
    if (gw_db_flush(rq->h->db, &err) != GW_OK) {
        gw_resp_api_error(rs, "internal", "%s", err.msg);
        return;
    }
    rs->status = 200;
    rs->content_type = "application/json";
    gw_buf_printf(&rs->body, "{\"status\":\"success\",\"data\":null}");
}

void gw_api_admin_backup(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    if (!from_loopback(rq)) {
        gw_resp_api_error(rs, "bad_data", "admin endpoints answer loopback clients only");
        rs->status = 403;
        return;
    }
    const struct gw_param *p = gw_params_get(&rq->params, "out");
    if (!p || !p->val[0]) {
        gw_resp_api_error(rs, "bad_data", "missing parameter \"out\": the directory to write the backup to");
        return;
    }
    struct gw_db_backup_stats st;
    struct gw_error err = {0};
    int rc = gw_db_backup(rq->h->db, p->val, &st, &err);
    if (rc != GW_OK) {
        gw_resp_api_error(rs, rc == GW_EINVAL ? "bad_data" : "internal", "%s", err.msg);
        return;
    }
    rs->status = 200;
    rs->content_type = "application/json";
    gw_buf_printf(&rs->body,
                  "{\"status\":\"success\",\"data\":{\"files\":%llu,\"bytes\":%llu,\"walSegments\":%llu,"
                  "\"walPosition\":%llu}}",
                  (unsigned long long)st.files, (unsigned long long)st.bytes, (unsigned long long)st.wal_segments,
                  (unsigned long long)st.wal_position);
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

int gw_http_is_loopback(struct gw_http_req *rq)
{
    return from_loopback(rq);
}
