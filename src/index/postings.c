/* postings.c - sorted lists of series ids (strictly increasing uint64) and
 * their set algebra: intersection (galloping when one side is much smaller),
 * union, difference and a heap-based k-way union.
 *
 * Invariant: every list handed to or produced by the algebra functions is
 * strictly increasing. Lists built out of order are fixed with
 * gw_postings_sort_unique(). Growth is checked against size_t overflow. */
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/postings.h"

#define GALLOP_RATIO 8

void gw_postings_init(struct gw_postings *p)
{
    p->ids = NULL;
    p->n = 0;
    p->cap = 0;
}

void gw_postings_free(struct gw_postings *p)
{
    if (!p)
        return;
    free(p->ids);
    gw_postings_init(p);
}

/* Makes room for at least want ids (keeps contents). */
static int reserve(struct gw_postings *p, size_t want)
{
    if (want <= p->cap)
        return GW_OK;
    size_t cap = p->cap ? p->cap : 16;
    while (cap < want) {
        if (cap > SIZE_MAX / 2)
            return GW_ENOMEM;
        cap *= 2;
    }
    if (cap > SIZE_MAX / sizeof(uint64_t))
        return GW_ENOMEM;
    uint64_t *ids = realloc(p->ids, cap * sizeof(uint64_t));
    if (!ids)
        return GW_ENOMEM;
    p->ids = ids;
    p->cap = cap;
    return GW_OK;
}

int gw_postings_push(struct gw_postings *p, uint64_t id)
{
    if (p->n == p->cap) {
        if (p->n == SIZE_MAX)
            return GW_ENOMEM;
        int rc = reserve(p, p->n + 1);
        if (rc != GW_OK)
            return rc;
    }
    p->ids[p->n++] = id;
    return GW_OK;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

void gw_postings_sort_unique(struct gw_postings *p)
{
    if (p->n < 2)
        return;
    int sorted = 1;
    for (size_t i = 1; i < p->n; i++) {
        if (p->ids[i - 1] >= p->ids[i]) {
            sorted = 0;
            break;
        }
    }
    if (sorted)
        return;
    qsort(p->ids, p->n, sizeof(uint64_t), cmp_u64);
    size_t w = 1;
    for (size_t i = 1; i < p->n; i++) {
        if (p->ids[i] != p->ids[w - 1])
            p->ids[w++] = p->ids[i];
    }
    p->n = w;
}

/* First index i in [lo, n) with a[i] >= x, searching exponentially from lo. */
static size_t gallop(const uint64_t *a, size_t n, size_t lo, uint64_t x)
{
    if (lo >= n || a[lo] >= x)
        return lo;
    size_t step = 1, prev = lo, hi = lo + 1;
    while (hi < n && a[hi] < x) {
        prev = hi;
        if (step > (n - hi))
            step = n - hi;
        hi += step;
        step *= 2;
    }
    if (hi > n)
        hi = n;
    /* a[prev] < x, and a[hi] >= x or hi == n */
    size_t l = prev + 1, r = hi;
    while (l < r) {
        size_t m = l + (r - l) / 2;
        if (a[m] < x)
            l = m + 1;
        else
            r = m;
    }
    return l;
}

int gw_postings_intersect(const struct gw_postings *a, const struct gw_postings *b, struct gw_postings *out)
{
    out->n = 0;
    const struct gw_postings *s = a->n <= b->n ? a : b;
    const struct gw_postings *l = a->n <= b->n ? b : a;
    if (s->n == 0)
        return GW_OK;
    int rc = reserve(out, s->n);
    if (rc != GW_OK)
        return rc;
    size_t n = 0;
    if (s->n * GALLOP_RATIO < l->n || s->n > SIZE_MAX / GALLOP_RATIO) {
        size_t j = 0;
        for (size_t i = 0; i < s->n && j < l->n; i++) {
            j = gallop(l->ids, l->n, j, s->ids[i]);
            if (j < l->n && l->ids[j] == s->ids[i])
                out->ids[n++] = s->ids[i];
        }
    } else {
        size_t i = 0, j = 0;
        while (i < s->n && j < l->n) {
            uint64_t x = s->ids[i], y = l->ids[j];
            if (x < y) {
                i++;
            } else if (x > y) {
                j++;
            } else {
                out->ids[n++] = x;
                i++;
                j++;
            }
        }
    }
    out->n = n;
    return GW_OK;
}

int gw_postings_merge(const struct gw_postings *a, const struct gw_postings *b, struct gw_postings *out)
{
    out->n = 0;
    if (a->n > SIZE_MAX - b->n)
        return GW_ENOMEM;
    int rc = reserve(out, a->n + b->n);
    if (rc != GW_OK)
        return rc;
    size_t i = 0, j = 0, n = 0;
    while (i < a->n && j < b->n) {
        uint64_t x = a->ids[i], y = b->ids[j];
        if (x < y) {
            out->ids[n++] = x;
            i++;
        } else if (x > y) {
            out->ids[n++] = y;
            j++;
        } else {
            out->ids[n++] = x;
            i++;
            j++;
        }
    }
    if (i < a->n) {
        memcpy(out->ids + n, a->ids + i, (a->n - i) * sizeof(uint64_t));
        n += a->n - i;
    }
    if (j < b->n) {
        memcpy(out->ids + n, b->ids + j, (b->n - j) * sizeof(uint64_t));
        n += b->n - j;
    }
    out->n = n;
    return GW_OK;
}

int gw_postings_subtract(const struct gw_postings *a, const struct gw_postings *b, struct gw_postings *out)
{
    out->n = 0;
    if (a->n == 0)
        return GW_OK;
    int rc = reserve(out, a->n);
    if (rc != GW_OK)
        return rc;
    size_t n = 0, j = 0;
    int gal = b->n > a->n && b->n / GALLOP_RATIO > a->n;
    for (size_t i = 0; i < a->n; i++) {
        uint64_t x = a->ids[i];
        if (gal) {
            j = gallop(b->ids, b->n, j, x);
        } else {
            while (j < b->n && b->ids[j] < x)
                j++;
        }
        if (j < b->n && b->ids[j] == x)
            continue;
        out->ids[n++] = x;
    }
    out->n = n;
    return GW_OK;
}

/* k-way union: a binary min-heap of list cursors keyed by their head id. */
struct cur {
    const uint64_t *p, *end;
};

static void sift_down(struct cur *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && *h[l].p < *h[m].p)
            m = l;
        if (r < n && *h[r].p < *h[m].p)
            m = r;
        if (m == i)
            return;
        struct cur t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

int gw_postings_merge_many(struct gw_postings *const *lists, size_t k, struct gw_postings *out)
{
    out->n = 0;
    size_t total = 0, live = 0;
    for (size_t i = 0; i < k; i++) {
        if (!lists[i] || lists[i]->n == 0)
            continue;
        if (total > SIZE_MAX - lists[i]->n)
            return GW_ENOMEM;
        total += lists[i]->n;
        live++;
    }
    if (live == 0)
        return GW_OK;
    if (live == 1) {
        for (size_t i = 0; i < k; i++) {
            if (lists[i] && lists[i]->n) {
                int rc = reserve(out, lists[i]->n);
                if (rc != GW_OK)
                    return rc;
                memcpy(out->ids, lists[i]->ids, lists[i]->n * sizeof(uint64_t));
                out->n = lists[i]->n;
                return GW_OK;
            }
        }
    }
    if (live > SIZE_MAX / sizeof(struct cur))
        return GW_ENOMEM;
    struct cur *h = malloc(live * sizeof(struct cur));
    if (!h)
        return GW_ENOMEM;
    int rc = reserve(out, total);
    if (rc != GW_OK) {
        free(h);
        return rc;
    }
    size_t hn = 0;
    for (size_t i = 0; i < k; i++) {
        if (lists[i] && lists[i]->n) {
            h[hn].p = lists[i]->ids;
            h[hn].end = lists[i]->ids + lists[i]->n;
            hn++;
        }
    }
    for (size_t i = hn / 2; i-- > 0;)
        sift_down(h, hn, i);
    size_t n = 0;
    while (hn > 0) {
        uint64_t x = *h[0].p;
        if (n == 0 || out->ids[n - 1] != x)
            out->ids[n++] = x;
        if (++h[0].p == h[0].end)
            h[0] = h[--hn];
        if (hn > 0)
            sift_down(h, hn, 0);
    }
    out->n = n;
    free(h);
    return GW_OK;
}

void gw_postings_swap(struct gw_postings *a, struct gw_postings *b)
{
    struct gw_postings t = *a;
    *a = *b;
    *b = t;
}
