/* index.c - the label index of the LMDB series store: postings of one
 * label pair, of every value of a name matching a predicate, of a name;
 * label names and values. Matchers are applied as Prometheus'
 * PostingsForMatchers does (docs/storage.md, "Index"). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lmdb.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/store.h"
#include "store/store_int.h"

/* ------------------------------------------------------ postings / index */

int gw_store_postings_get(struct gw_store_txn *t, const char *name, size_t name_len, const char *value,
                          size_t value_len, struct gw_postings *out)
{
    out->n = 0;
    static const int which[] = {DB_POSTINGS, DB_PAIRS, DB_PAIR_IDS};
    MDB_dbi db[3];
    int rc = gw_store_fixed_dbis(t, 0, which, 3, db);
    if (rc != GW_OK)
        return rc == GW_ENOTFOUND ? GW_OK : rc;
    MDB_dbi dp = db[0], dpr = db[1], dpi = db[2];
    uint8_t key[GW_KEY_MAX];
    size_t kl;
    if (gw_store_pair_key(key, &kl, name, name_len, value, value_len) != GW_OK)
        return GW_OK; /* such a label can never be stored */
    uint32_t id;
    rc = gw_store_pair_lookup(t, dpr, dpi, key, kl, name, name_len, value, value_len, &id);
    if (rc == GW_ENOTFOUND || rc == GW_ELIMIT)
        return GW_OK;
    if (rc != GW_OK)
        return rc;
    MDB_cursor *c;
    if ((rc = gw_store_cursor_open(t, dp, &c)) != GW_OK)
        return rc;
    uint8_t ib[4];
    gw_put_be32(ib, id);
    rc = gw_store_read_ids(t, c, ib, 4, out);
    mdb_cursor_close(c);
    if (rc != GW_OK)
        out->n = 0;
    return rc;
}

/* One pair key of a label name while scanning its values. */
struct vent {
    MDB_val key;
    const char *v;     /* full value (borrowed from the map) */
    size_t len;
    uint32_t id;
    int trunc;
};

typedef int (*value_visit)(struct gw_store_txn *t, void *ud, const char *v, size_t len, uint32_t id);

struct vscan {
    struct gw_store_txn *t;
    MDB_dbi dids;
    const char *name;
    size_t name_len;
    value_visit visit;
    void *ud;
    struct vent *g;    /* group of long keys sharing their first P bytes */
    size_t gn, gcap;
    int gtrunc;
};

/* Full value of a truncated key, from pair_ids. */
static int resolve_long(struct vscan *vs, struct vent *e, uint64_t hash)
{
    MDB_val pt;
    int rc = gw_store_pair_text(vs->t, vs->dids, e->id, &pt);
    if (rc != GW_OK)
        return rc;
    const uint8_t *p = pt.mv_data;
    if (pt.mv_size <= vs->name_len + 1 || memcmp(p, vs->name, vs->name_len) != 0 || p[vs->name_len] != 0)
        return GW_ECORRUPT;
    const char *v = (const char *)p + vs->name_len + 1;
    size_t vl = pt.mv_size - vs->name_len - 1;
    if (gw_hash64(v, vl) != hash)
        return GW_ECORRUPT;
    e->v = v;
    e->len = vl;
    return GW_OK;
}

static int cmp_vent(const void *a, const void *b)
{
    const struct vent *x = a, *y = b;
    size_t m = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->v, y->v, m);
    if (c)
        return c;
    return (x->len > y->len) - (x->len < y->len);
}

static int group_flush(struct vscan *vs)
{
    int rc = GW_OK;
    if (vs->gn == 0)
        return GW_OK;
    if (vs->gtrunc) {
        for (size_t i = 0; i < vs->gn && rc == GW_OK; i++) {
            struct vent *e = &vs->g[i];
            uint64_t h;
            const uint8_t *vp = (const uint8_t *)e->key.mv_data + vs->name_len + 1;
            if (e->trunc && gw_store_value_is_truncated(vs->name_len, vp, e->key.mv_size - vs->name_len - 1, &h))
                rc = resolve_long(vs, e, h);
        }
        if (rc == GW_OK)
            qsort(vs->g, vs->gn, sizeof *vs->g, cmp_vent);
    }
    for (size_t i = 0; i < vs->gn && rc == GW_OK; i++)
        rc = vs->visit(vs->t, vs->ud, vs->g[i].v, vs->g[i].len, vs->g[i].id);
    vs->gn = 0;
    vs->gtrunc = 0;
    return rc;
}

/* Visits every value of a label name (keys "name\0..." of `pairs`) in byte
 * order. With resolve == 0 values are not needed (v is NULL) and come in
 * key order. visit returns 0 to go on, 1 to stop, or an error. */
static int values_scan(struct gw_store_txn *t, const char *name, size_t name_len, int resolve, value_visit visit,
                       void *ud)
{
    MDB_dbi dpr;
    struct vscan vs = {.t = t, .name = name, .name_len = name_len, .visit = visit, .ud = ud};
    int rc = gw_store_fixed_dbi(t, DB_PAIRS, &dpr);
    if (rc == GW_OK)
        rc = gw_store_fixed_dbi(t, DB_PAIR_IDS, &vs.dids);
    if (rc == GW_ENOTFOUND)
        return GW_OK;
    if (rc != GW_OK)
        return rc;
    if (name_len == 0 || name_len > GW_NAME_MAX_KEY || memchr(name, 0, name_len))
        return GW_OK;
    MDB_cursor *c = NULL;
    if ((rc = gw_store_cursor_open(t, dpr, &c)) != GW_OK)
        return rc;
    uint8_t prefix[GW_KEY_MAX];
    memcpy(prefix, name, name_len);
    prefix[name_len] = 0;
    size_t pl = name_len + 1, P = gw_store_value_prefix(name_len);
    MDB_val k = {pl, prefix}, d;
    int mrc;
    for (mrc = mdb_cursor_get(c, &k, &d, MDB_SET_RANGE); mrc == MDB_SUCCESS && rc == GW_OK;
         mrc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
        if (k.mv_size < pl || memcmp(k.mv_data, prefix, pl) != 0)
            break;
        if (d.mv_size != 4) {
            rc = GW_ECORRUPT;
            break;
        }
        uint32_t id = gw_get_be32(d.mv_data);
        const uint8_t *vp = (const uint8_t *)k.mv_data + pl;
        size_t vl = k.mv_size - pl;
        uint64_t h;
        int trunc = gw_store_value_is_truncated(name_len, vp, vl, &h);
        if (!resolve) {
            rc = visit(t, ud, NULL, 0, id);
            continue;
        }
        if (vl > P) {
            /* May sort differently than its key: collect the run of long
             * keys sharing the first P bytes, resolve, sort. */
            if (vs.gn && memcmp((const uint8_t *)vs.g[0].key.mv_data + pl, vp, P) != 0)
                rc = group_flush(&vs);
            if (rc != GW_OK)
                break;
            if (vs.gn == vs.gcap) {
                size_t cap = vs.gcap ? vs.gcap * 2 : 8;
                struct vent *g = realloc(vs.g, cap * sizeof *g);
                if (!g) {
                    rc = GW_ENOMEM;
                    break;
                }
                vs.g = g;
                vs.gcap = cap;
            }
            struct vent *e = &vs.g[vs.gn++];
            e->key = k;
            e->v = (const char *)vp;
            e->len = vl;
            e->id = id;
            e->trunc = trunc;
            vs.gtrunc |= trunc;
            continue;
        }
        rc = group_flush(&vs);
        if (rc == GW_OK)
            rc = visit(t, ud, (const char *)vp, vl, id);
    }
    if (rc == GW_OK && mrc != MDB_SUCCESS && mrc != MDB_NOTFOUND)
        rc = gw_store_terr(t, mrc, "label values scan");
    if (rc == GW_OK)
        rc = group_flush(&vs);
    free(vs.g);
    mdb_cursor_close(c);
    return rc < 0 ? rc : GW_OK;
}

struct values_ud {
    gw_store_value_cb cb;
    void *ud;
};

static int values_visit(struct gw_store_txn *t, void *ud, const char *v, size_t len, uint32_t id)
{
    (void)t;
    (void)id;
    struct values_ud *u = ud;
    return u->cb(u->ud, v, len);
}

int gw_store_label_values(struct gw_store_txn *t, const char *name, size_t name_len, gw_store_value_cb cb,
                          void *ud)
{
    struct values_ud u = {cb, ud};
    return values_scan(t, name, name_len, 1, values_visit, &u);
}

/* Postings of the matching pairs, read one after another into `all`;
 * list i is all.ids[start[i] .. start[i+1]). */
struct match_ud {
    gw_store_value_pred pred;
    void *ud;
    MDB_cursor *c;
    struct gw_postings all;
    size_t *start;
    size_t lists, cap;
};

static int match_visit(struct gw_store_txn *t, void *ud, const char *v, size_t len, uint32_t id)
{
    struct match_ud *m = ud;
    if (m->pred) {
        int p = m->pred(m->ud, v, len);
        if (p < 0)
            return p;
        if (p != 1)
            return 0;
    }
    if (m->lists + 1 >= m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 16;
        size_t *s = realloc(m->start, cap * sizeof *s);
        if (!s)
            return GW_ENOMEM;
        m->start = s;
        m->cap = cap;
    }
    m->start[m->lists++] = m->all.n;
    uint8_t ib[4];
    gw_put_be32(ib, id);
    return gw_store_read_ids(t, m->c, ib, 4, &m->all);
}

static int postings_union(struct gw_store_txn *t, const char *name, size_t name_len, gw_store_value_pred pred,
                          void *ud, struct gw_postings *out)
{
    out->n = 0;
    MDB_dbi dp;
    int rc = gw_store_fixed_dbi(t, DB_POSTINGS, &dp);
    if (rc == GW_ENOTFOUND)
        return GW_OK;
    if (rc != GW_OK)
        return rc;
    struct match_ud m = {.pred = pred, .ud = ud};
    gw_postings_init(&m.all);
    if ((rc = gw_store_cursor_open(t, dp, &m.c)) != GW_OK)
        return rc;
    rc = values_scan(t, name, name_len, pred != NULL, match_visit, &m);
    mdb_cursor_close(m.c);
    if (rc == GW_OK && m.lists == 1) {
        gw_postings_swap(&m.all, out);
    } else if (rc == GW_OK && m.lists > 1) {
        /* Views into `all`, merged k ways. */
        struct gw_postings *views = malloc(m.lists * sizeof *views);
        struct gw_postings **ptrs = malloc(m.lists * sizeof *ptrs);
        if (!views || !ptrs) {
            rc = GW_ENOMEM;
        } else {
            m.start[m.lists] = m.all.n;
            for (size_t i = 0; i < m.lists; i++) {
                views[i].ids = m.all.ids + m.start[i];
                views[i].n = m.start[i + 1] - m.start[i];
                views[i].cap = views[i].n;
                ptrs[i] = &views[i];
            }
            rc = gw_postings_merge_many(ptrs, m.lists, out);
        }
        free(views);
        free(ptrs);
    }
    gw_postings_free(&m.all);
    free(m.start);
    if (rc != GW_OK)
        out->n = 0;
    return rc;
}

int gw_store_postings_any(struct gw_store_txn *t, const char *name, size_t name_len, struct gw_postings *out)
{
    return postings_union(t, name, name_len, NULL, NULL, out);
}

int gw_store_postings_matching(struct gw_store_txn *t, const char *name, size_t name_len, gw_store_value_pred pred,
                               void *ud, struct gw_postings *out)
{
    if (!pred) {
        out->n = 0;
        return GW_EINVAL;
    }
    return postings_union(t, name, name_len, pred, ud, out);
}

int gw_store_label_names(struct gw_store_txn *t, gw_store_value_cb cb, void *ud)
{
    MDB_cursor *c;
    int rc = gw_store_fixed_cursor(t, DB_PAIRS, &c);
    if (rc != GW_OK)
        return rc == GW_ENOTFOUND ? GW_OK : rc;
    uint8_t seek[GW_KEY_MAX + 1];
    MDB_val k, d;
    int mrc = mdb_cursor_get(c, &k, &d, MDB_FIRST);
    while (mrc == MDB_SUCCESS) {
        const uint8_t *z = memchr(k.mv_data, 0, k.mv_size);
        if (!z || z == k.mv_data) {
            rc = GW_ECORRUPT;
            break;
        }
        size_t nl = (size_t)(z - (const uint8_t *)k.mv_data);
        if (nl >= sizeof seek) {
            rc = GW_ECORRUPT;
            break;
        }
        memcpy(seek, k.mv_data, nl);
        rc = cb(ud, (const char *)seek, nl);
        if (rc != GW_OK)
            break;
        /* Next name: "name\1" is the smallest key above every "name\0...". */
        seek[nl] = 1;
        k.mv_data = seek;
        k.mv_size = nl + 1;
        mrc = mdb_cursor_get(c, &k, &d, MDB_SET_RANGE);
    }
    if (rc == GW_OK && mrc != MDB_SUCCESS && mrc != MDB_NOTFOUND)
        rc = gw_store_terr(t, mrc, "label names scan");
    mdb_cursor_close(c);
    return rc < 0 ? rc : GW_OK;
}

int gw_store_postings_all(struct gw_store_txn *t, struct gw_postings *out)
{
    out->n = 0;
    MDB_cursor *c;
    int rc = gw_store_fixed_cursor(t, DB_SERIES, &c);
    if (rc != GW_OK)
        return rc == GW_ENOTFOUND ? GW_OK : rc;
    MDB_val k, d;
    int mrc;
    for (mrc = mdb_cursor_get(c, &k, &d, MDB_FIRST); mrc == MDB_SUCCESS;
         mrc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
        if (k.mv_size != 8) {
            rc = GW_ECORRUPT;
            break;
        }
        if ((rc = gw_postings_push(out, gw_get_be64(k.mv_data))) != GW_OK)
            break;
    }
    if (rc == GW_OK && mrc != MDB_NOTFOUND && mrc != MDB_SUCCESS)
        rc = gw_store_terr(t, mrc, "series scan");
    mdb_cursor_close(c);
    if (rc != GW_OK)
        out->n = 0;
    return rc;
}

