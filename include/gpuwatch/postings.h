/* gpuwatch/postings.h - sorted lists of series ids and their algebra
 * (Prometheus index/postings.go: Intersect, Merge, Without).
 * A list is strictly increasing uint64 ids. Owned arrays, growable.
 * Layer: L1 encoding (src/index/); includes only its layer and below (docs/architecture.md). */
#ifndef GW_POSTINGS_H
#define GW_POSTINGS_H

#include <stddef.h>
#include <stdint.h>
#include "gpuwatch/err.h"

struct gw_postings {
    uint64_t *ids;   /* owned */
    size_t n, cap;
};

void gw_postings_init(struct gw_postings *p);
void gw_postings_free(struct gw_postings *p);          /* NULL ok */
int gw_postings_push(struct gw_postings *p, uint64_t id); /* caller keeps order */
/* Sorts and removes duplicates (for lists built out of order). */
void gw_postings_sort_unique(struct gw_postings *p);
/* out = a ∩ b, a ∪ b, a \ b. out must not alias a or b; it is overwritten.
 * GW_OK or GW_ENOMEM. Intersect gallops when sizes differ a lot. */
int gw_postings_intersect(const struct gw_postings *a, const struct gw_postings *b, struct gw_postings *out);
int gw_postings_merge(const struct gw_postings *a, const struct gw_postings *b, struct gw_postings *out);
int gw_postings_subtract(const struct gw_postings *a, const struct gw_postings *b, struct gw_postings *out);
/* k-way union of many lists (label regex matchers): GW_OK or GW_ENOMEM. */
int gw_postings_merge_many(struct gw_postings *const *lists, size_t k, struct gw_postings *out);
void gw_postings_swap(struct gw_postings *a, struct gw_postings *b);

#endif /* GW_POSTINGS_H */
