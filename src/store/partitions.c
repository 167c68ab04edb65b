/* partitions.c - the day partitions of the LMDB series store (one DBI
 * "p%08lld" per UTC day): the process-wide partition cache (day -> DBI,
 * sorted by day), the partitions a transaction may read, creation of a
 * day's DBI in a write transaction, and retention (dropping whole days).
 * How handles enter the cache and when they are valid: top of store.c. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lmdb.h>

#include "gpuwatch/store.h"
#include "store/store_int.h"

/* ------------------------------------------------------- partition cache */

static int pv_push(struct part_vec *pv, int64_t day, MDB_dbi dbi)
{
    if (pv->n == pv->cap) {
        size_t cap = pv->cap ? pv->cap * 2 : 32;
        struct part *v = realloc(pv->v, cap * sizeof *v);
        if (!v)
            return GW_ENOMEM;
        pv->v = v;
        pv->cap = cap;
    }
    pv->v[pv->n].day = day;
    pv->v[pv->n].dbi = dbi;
    pv->n++;
    return GW_OK;
}

/* Index of the first entry with day >= d. */
static size_t pv_lower(const struct part_vec *pv, int64_t d)
{
    size_t lo = 0, hi = pv->n;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (pv->v[m].day < d)
            lo = m + 1;
        else
            hi = m;
    }
    return lo;
}

/* Inserts or replaces into a sorted vec. */
static int pv_insert_sorted(struct part_vec *pv, int64_t day, MDB_dbi dbi)
{
    size_t i = pv_lower(pv, day);
    if (i < pv->n && pv->v[i].day == day) {
        pv->v[i].dbi = dbi;
        return GW_OK;
    }
    int rc = pv_push(pv, day, dbi);
    if (rc != GW_OK)
        return rc;
    memmove(pv->v + i + 1, pv->v + i, (pv->n - 1 - i) * sizeof *pv->v);
    pv->v[i].day = day;
    pv->v[i].dbi = dbi;
    return GW_OK;
}

static void pv_remove_at(struct part_vec *pv, size_t i)
{
    memmove(pv->v + i, pv->v + i + 1, (pv->n - i - 1) * sizeof *pv->v);
    pv->n--;
}

static int pv_find(const struct part_vec *pv, int64_t day, MDB_dbi *dbi)
{
    for (size_t i = 0; i < pv->n; i++) {
        if (pv->v[i].day == day) {
            *dbi = pv->v[i].dbi;
            return 1;
        }
    }
    return 0;
}

static int cmp_part(const void *a, const void *b)
{
    const struct part *x = a, *y = b;
    return (x->day > y->day) - (x->day < y->day);
}

void gw_store_parts_publish_locked(struct gw_store *s, const struct part_vec *pv)
{
    for (size_t i = 0; i < pv->n; i++) {
        /* On ENOMEM the partition stays unknown to readers until reopen;
         * its data is intact. */
        (void)pv_insert_sorted(&s->parts, pv->v[i].day, pv->v[i].dbi);
    }
}

void gw_store_parts_publish(struct gw_store *s, const struct part_vec *pv)
{
    if (pv->n == 0)
        return;
    pthread_mutex_lock(&s->part_mu);
    gw_store_parts_publish_locked(s, pv);
    pthread_mutex_unlock(&s->part_mu);
}

/* Opens every partition DBI that exists in txn's snapshot into pv. The
 * caller guarantees no concurrent mdb_dbi_open in this process. */
int gw_store_parts_scan(MDB_txn *txn, struct part_vec *pv, char *msg, size_t msg_cap)
{
    MDB_dbi main_dbi;
    MDB_cursor *c = NULL;
    int mrc = mdb_dbi_open(txn, NULL, 0, &main_dbi);
    if (mrc == MDB_SUCCESS)
        mrc = mdb_cursor_open(txn, main_dbi, &c);
    if (mrc != MDB_SUCCESS) {
        snprintf(msg, msg_cap, "cannot list partitions: %s", mdb_strerror(mrc));
        return gw_store_map_mdb(mrc);
    }
    MDB_val k, d;
    int rc = GW_OK;
    for (mrc = mdb_cursor_get(c, &k, &d, MDB_FIRST); mrc == MDB_SUCCESS;
         mrc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
        int64_t day;
        if (!gw_store_part_parse(k.mv_data, k.mv_size, &day))
            continue;
        char name[GW_PART_NAME_MAX];
        memcpy(name, k.mv_data, k.mv_size);
        name[k.mv_size] = 0;
        MDB_dbi dbi;
        int orc = mdb_dbi_open(txn, name, 0, &dbi);
        if (orc == MDB_INCOMPATIBLE || orc == MDB_NOTFOUND)
            continue;
        if (orc != MDB_SUCCESS) {
            snprintf(msg, msg_cap, "cannot open partition %s: %s", name, mdb_strerror(orc));
            rc = gw_store_map_mdb(orc);
            break;
        }
        rc = pv_push(pv, day, dbi);
        if (rc != GW_OK)
            break;
    }
    if (rc == GW_OK && mrc != MDB_NOTFOUND && mrc != MDB_SUCCESS) {
        snprintf(msg, msg_cap, "cannot list partitions: %s", mdb_strerror(mrc));
        rc = gw_store_map_mdb(mrc);
    }
    mdb_cursor_close(c);
    return rc;
}

/* Partition DBI for day in a write txn, created when missing. */
int gw_store_part_for_write(struct gw_store_txn *t, int64_t day, MDB_dbi *dbi)
{
    struct gw_store *s = t->s;
    if (pv_find(&t->pending, day, dbi))
        return GW_OK;
    pthread_mutex_lock(&s->part_mu);
    size_t i = pv_lower(&s->parts, day);
    int found = i < s->parts.n && s->parts.v[i].day == day;
    if (found)
        *dbi = s->parts.v[i].dbi;
    pthread_mutex_unlock(&s->part_mu);
    if (found)
        return GW_OK;
    char name[GW_PART_NAME_MAX];
    gw_store_part_name(name, sizeof name, day);
    int mrc = mdb_dbi_open(t->txn, name, MDB_CREATE, dbi);
    if (mrc != MDB_SUCCESS)
        return gw_store_terr(t, mrc, "partition create");
    return pv_push(&t->pending, day, *dbi);
}

/* Partitions with day in [dlo, dhi] valid in this txn, sorted by day. */
int gw_store_parts_collect(struct gw_store_txn *t, int64_t dlo, int64_t dhi, struct part_vec *out)
{
    struct gw_store *s = t->s;
    /* A range starting among raw days never reaches the rollup days. */
    if (dlo < GW_PART_RAW_END && dhi >= GW_PART_RAW_END)
        dhi = GW_PART_RAW_END - 1;
    int rc = GW_OK;
    pthread_mutex_lock(&s->part_mu);
    for (size_t i = pv_lower(&s->parts, dlo); i < s->parts.n && s->parts.v[i].day <= dhi; i++) {
        if ((rc = pv_push(out, s->parts.v[i].day, s->parts.v[i].dbi)) != GW_OK)
            break;
    }
    pthread_mutex_unlock(&s->part_mu);
    if (rc != GW_OK)
        return rc;
    int extra = 0;
    for (size_t i = 0; i < t->pending.n; i++) {
        if (t->pending.v[i].day >= dlo && t->pending.v[i].day <= dhi) {
            if ((rc = pv_push(out, t->pending.v[i].day, t->pending.v[i].dbi)) != GW_OK)
                return rc;
            extra = 1;
        }
    }
    if (extra)
        qsort(out->v, out->n, sizeof *out->v, cmp_part);
    /* Drop handles this snapshot does not know (created after it began). */
    size_t w = 0;
    for (size_t i = 0; i < out->n; i++) {
        unsigned fl;
        if (mdb_dbi_flags(t->txn, out->v[i].dbi, &fl) == MDB_SUCCESS)
            out->v[w++] = out->v[i];
    }
    out->n = w;
    return GW_OK;
}

/* ------------------------------------------------ listing and retention */

int gw_store_partitions(struct gw_store_txn *t, gw_store_partition_cb cb, void *ud)
{
    if (!t || !t->txn || !cb)
        return GW_EINVAL;
    struct part_vec pv = {0};
    int rc = gw_store_parts_collect(t, INT64_MIN, INT64_MAX, &pv);
    for (size_t i = 0; rc == GW_OK && i < pv.n; i++) {
        MDB_stat st;
        int mrc = mdb_stat(t->txn, pv.v[i].dbi, &st);
        if (mrc == MDB_NOTFOUND)
            continue;
        if (mrc != MDB_SUCCESS) {
            rc = gw_store_terr(t, mrc, "partition stat");
            break;
        }
        struct gw_store_partition p = {
            .day = pv.v[i].day,
            .entries = st.ms_entries,
            .bytes = ((uint64_t)st.ms_branch_pages + st.ms_leaf_pages + st.ms_overflow_pages) * st.ms_psize,
        };
        rc = cb(ud, &p);
    }
    free(pv.v);
    return rc < 0 ? rc : GW_OK;
}

/* Drops every partition with day in [dlo, dhi] (raw days and rollup
 * days alike; the caller picks the region). */
static int drop_range(struct gw_store_txn *t, int64_t dlo, int64_t dhi, unsigned *dropped)
{
    int rc = gw_store_need_write(t);
    if (rc != GW_OK)
        return rc;
    if (dropped)
        *dropped = 0;
    if (dlo > dhi)
        return GW_OK;
    struct gw_store *s = t->s;
    if (!t->gate_held) {
        /* Readers must not hold a handle that mdb_drop closes. */
        pthread_rwlock_wrlock(&s->gate);
        t->gate_held = 1;
    }
    struct part_vec victims = {0};
    for (size_t i = 0; i < t->pending.n;) {
        if (t->pending.v[i].day >= dlo && t->pending.v[i].day <= dhi) {
            if ((rc = pv_push(&victims, t->pending.v[i].day, t->pending.v[i].dbi)) != GW_OK)
                goto out;
            pv_remove_at(&t->pending, i);
        } else {
            i++;
        }
    }
    pthread_mutex_lock(&s->part_mu);
    size_t from = pv_lower(&s->parts, dlo), cut = from;
    while (cut < s->parts.n && s->parts.v[cut].day <= dhi)
        cut++;
    for (size_t i = from; i < cut && rc == GW_OK; i++)
        rc = pv_push(&victims, s->parts.v[i].day, s->parts.v[i].dbi);
    if (rc == GW_OK) {
        memmove(s->parts.v + from, s->parts.v + cut, (s->parts.n - cut) * sizeof *s->parts.v);
        s->parts.n -= cut - from;
    }
    pthread_mutex_unlock(&s->part_mu);
    if (rc != GW_OK)
        goto out;
    t->dropped = t->dropped || victims.n > 0;
    unsigned n = 0;
    for (size_t i = 0; i < victims.n; i++) {
        int mrc = mdb_drop(t->txn, victims.v[i].dbi, 1);
        if (mrc != MDB_SUCCESS) {
            rc = gw_store_terr(t, mrc, "partition drop");
            goto out;
        }
        n++;
    }
    if (dropped)
        *dropped = n;
out:
    free(victims.v);
    return rc;
}

int gw_store_partitions_drop_before(struct gw_store_txn *t, int64_t before_day, unsigned *dropped)
{
    /* raw days only: rollup days live above GW_PART_RAW_END */
    int64_t hi = before_day < GW_PART_RAW_END ? before_day : GW_PART_RAW_END;
    return drop_range(t, INT64_MIN, hi - 1, dropped);
}

int gw_store_parts_drop_range(struct gw_store_txn *t, int64_t dlo, int64_t dhi, unsigned *dropped)
{
    return drop_range(t, dlo, dhi, dropped);
}
