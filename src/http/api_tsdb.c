/* api_tsdb.c - GET /api/v1/status/tsdb: Prometheus' cardinality view.
 * headStats comes from the head (numSeries: series with an open head
 * chunk; chunkCount: open and unflushed head chunks; minTime and maxTime:
 * the oldest and newest sample held; with no data, INT64_MAX and
 * INT64_MIN as Prometheus answers for an empty head). The four top-10 lists count every
 * series of the store (like `promtool tsdb analyze`), read once per call:
 *   seriesCountByMetricName       series per __name__
 *   labelValueCountByLabelName    distinct values per label name
 *   memoryInBytesByLabelName      bytes of those distinct values
 *   seriesCountByLabelValuePair   series per name=value pair
 * numLabelPairs is the number of distinct name=value pairs. */
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/labels.h"
#include "gpuwatch/matcher.h"
#include "http/http_int.h"

#define TOP_N 10

/* A string -> (count, bytes) table with open addressing. */
struct cnt_ent {
    char *key;          /* owned; NULL: free slot */
    size_t len;
    uint64_t n, bytes;
};
struct cnt_tab {
    struct cnt_ent *e;
    size_t cap, used;   /* cap: a power of two */
};

static void tab_free(struct cnt_tab *t)
{
    for (size_t i = 0; i < t->cap; i++) free(t->e[i].key);
    free(t->e);
    memset(t, 0, sizeof *t);
}

static struct cnt_ent *tab_slot(struct cnt_ent *e, size_t cap, const char *k, size_t len)
{
    size_t i = (size_t)gw_hash64(k, len) & (cap - 1);
    while (e[i].key && (e[i].len != len || memcmp(e[i].key, k, len) != 0)) i = (i + 1) & (cap - 1);
    return &e[i];
}

static int tab_grow(struct cnt_tab *t)
{
    size_t nc = t->cap ? t->cap * 2 : 1024;
    struct cnt_ent *ne = calloc(nc, sizeof *ne);
    if (!ne) return GW_ENOMEM;
    for (size_t i = 0; i < t->cap; i++)
        if (t->e[i].key) *tab_slot(ne, nc, t->e[i].key, t->e[i].len) = t->e[i];
    free(t->e);
    t->e = ne;
    t->cap = nc;
    return GW_OK;
}

/* Adds n to key's count; *fresh = 1 when the key is new. */
static int tab_add(struct cnt_tab *t, const char *k, size_t len, uint64_t n, uint64_t bytes, int *fresh)
{
    if ((t->used + 1) * 2 > t->cap && tab_grow(t) != GW_OK) return GW_ENOMEM;
    struct cnt_ent *e = tab_slot(t->e, t->cap, k, len);
    if (fresh) *fresh = e->key == NULL;
    if (!e->key) {
        e->key = malloc(len + 1);
        if (!e->key) return GW_ENOMEM;
        memcpy(e->key, k, len);
        e->key[len] = '\0';
        e->len = len;
        t->used++;
    }
    e->n += n;
    e->bytes += bytes;
    return GW_OK;
}

struct tsdb_ctx {
    struct cnt_tab metrics, pairs, names;
    uint64_t series;
    char pair[GW_LABEL_NAME_MAX + GW_LABEL_VALUE_MAX + 2];
    int rc;
};

static int tsdb_series(void *ud, uint64_t sid, const uint8_t *labels, size_t labels_len, const int64_t *t,
                       const double *v, size_t n)
{
    struct tsdb_ctx *c = ud;
    struct gw_label ls[GW_LABELS_MAX];
    size_t nl = 0;
    (void)sid, (void)t, (void)v, (void)n;
    if (gw_labels_decode(labels, labels_len, ls, GW_LABELS_MAX, &nl) != GW_OK) return GW_OK;
    c->series++;
    for (size_t i = 0; i < nl && c->rc == GW_OK; i++) {
        int fresh = 0;
        if (ls[i].name_len == 8 && memcmp(ls[i].name, "__name__", 8) == 0)
            c->rc = tab_add(&c->metrics, ls[i].value, ls[i].value_len, 1, 0, NULL);
        if (c->rc != GW_OK) break;
        memcpy(c->pair, ls[i].name, ls[i].name_len);
        c->pair[ls[i].name_len] = '=';
        memcpy(c->pair + ls[i].name_len + 1, ls[i].value, ls[i].value_len);
        c->rc = tab_add(&c->pairs, c->pair, ls[i].name_len + 1 + ls[i].value_len, 1, 0, &fresh);
        if (c->rc == GW_OK && fresh)   /* a new value of this name */
            c->rc = tab_add(&c->names, ls[i].name, ls[i].name_len, 1, ls[i].value_len, NULL);
    }
    return c->rc;
}

static int by_count_desc(const void *a, const void *b)
{
    const struct cnt_ent *x = *(const struct cnt_ent *const *)a, *y = *(const struct cnt_ent *const *)b;
    if (x->n != y->n) return x->n > y->n ? -1 : 1;
    return strcmp(x->key, y->key);
}

static int by_bytes_desc(const void *a, const void *b)
{
    const struct cnt_ent *x = *(const struct cnt_ent *const *)a, *y = *(const struct cnt_ent *const *)b;
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    return strcmp(x->key, y->key);
}

/* ,"key":[{"name":..,"value":..},...] with the top TOP_N of t. */
static int top_list(struct gw_buf *b, const char *key, const struct cnt_tab *t, int bytes)
{
    struct cnt_ent **v = t->used ? malloc(t->used * sizeof *v) : NULL;
    size_t n = 0;
    int rc;
    if (t->used && !v) return GW_ENOMEM;
    for (size_t i = 0; i < t->cap; i++)
        if (t->e[i].key) v[n++] = &t->e[i];
    if (n > 1) qsort(v, n, sizeof *v, bytes ? by_bytes_desc : by_count_desc);
    rc = gw_buf_printf(b, ",\"%s\":[", key);
    for (size_t i = 0; rc == GW_OK && i < n && i < TOP_N; i++) {
        rc = gw_buf_printf(b, "%s{\"name\":", i ? "," : "");
        if (rc == GW_OK) rc = gw_json_str(b, v[i]->key, v[i]->len);
        if (rc == GW_OK)
            rc = gw_buf_printf(b, ",\"value\":%llu}", (unsigned long long)(bytes ? v[i]->bytes : v[i]->n));
    }
    if (rc == GW_OK) rc = gw_buf_putc(b, ']');
    free(v);
    return rc;
}

static int tsdb_render(struct gw_buf *d, struct gw_db *db, struct tsdb_ctx *c, struct gw_error *err)
{
    struct gw_db_stats st;
    int rc = gw_db_stats(db, &st, err);
    if (rc != GW_OK) return rc;
    rc = gw_buf_printf(d,
                       "{\"headStats\":{\"numSeries\":%llu,\"numLabelPairs\":%llu,\"chunkCount\":%llu,"
                       "\"minTime\":%lld,\"maxTime\":%lld}",
                       (unsigned long long)st.head_series, (unsigned long long)c->pairs.used,
                       (unsigned long long)st.head_chunks, (long long)st.mint, (long long)st.maxt);
    if (rc == GW_OK) rc = top_list(d, "seriesCountByMetricName", &c->metrics, 0);
    if (rc == GW_OK) rc = top_list(d, "labelValueCountByLabelName", &c->names, 0);
    if (rc == GW_OK) rc = top_list(d, "memoryInBytesByLabelName", &c->names, 1);
    if (rc == GW_OK) rc = top_list(d, "seriesCountByLabelValuePair", &c->pairs, 0);
    if (rc == GW_OK) rc = gw_buf_putc(d, '}');
    return rc;
}

void gw_api_tsdb(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    struct gw_db *db = rq->h->db;
    struct tsdb_ctx *c = calloc(1, sizeof *c);
    struct gw_matcher m;
    struct gw_error err;
    struct gw_buf d;
    int rc;
    if (!c) {
        gw_resp_api_error(rs, "internal", "out of memory");
        return;
    }
    gw_error_clear(&err);
    gw_buf_init(&d, GW_HTTP_MAX_RESPONSE);
    rc = gw_matcher_init(&m, GW_MATCH_RE, "__name__", 8, ".+", 2, &err);
    if (rc == GW_OK) {
        struct gw_db_select q = {.matchers = &m, .n_matchers = 1, .mint = INT64_MIN, .maxt = INT64_MAX};
        rc = gw_db_select(db, &q, tsdb_series, c, &err);
        if (rc == GW_OK) rc = c->rc;
        gw_matcher_free(&m);
    }
    if (rc == GW_OK) rc = tsdb_render(&d, db, c, &err);
    if (rc != GW_OK) {
        gw_resp_api_error(rs, "internal", "%s", err.msg[0] ? err.msg : gw_strerror(rc));
    } else {
        gw_buf_reset(&rs->body);
        rs->status = 200;
        rs->content_type = "application/json";
        if (gw_buf_printf(&rs->body, "{\"status\":\"success\",\"data\":%.*s}", (int)d.len, (const char *)d.data) !=
            GW_OK)
            gw_resp_api_error(rs, "internal", "out of memory");
    }
    gw_buf_free(&d);
    tab_free(&c->metrics);
    tab_free(&c->pairs);
    tab_free(&c->names);
    free(c);
}
