/* selector.c - series selectors in their text form (`up`,
 * `node_cpu{mode!~"idle|iowait"}`, `{"my.metric", job="x"}`) for match[]
 * and every other place that takes one: parsed by the PromQL parser, so a
 * selector means exactly what it means inside a query. Only a plain vector
 * selector is a series selector: a range, offset, @ or any expression
 * around it is refused. */
#include <string.h>

#include "gpuwatch/promql.h"

static const char *kind_text(enum gw_pq_kind k)
{
    switch (k) {
    case GW_PQ_MATRIX_SEL: return "a range selector";
    case GW_PQ_SUBQUERY: return "a subquery";
    case GW_PQ_CALL: return "a function call";
    case GW_PQ_AGGREGATE: return "an aggregation";
    case GW_PQ_BINARY: return "a binary expression";
    case GW_PQ_UNARY: return "a unary expression";
    case GW_PQ_PAREN: return "a parenthesized expression";
    case GW_PQ_NUMBER: return "a number";
    case GW_PQ_STRING_LIT: return "a string";
    default: return "an expression";
    }
}

int gw_pq_parse_selector(const char *s, size_t len, struct gw_matcher *out, size_t max, size_t *n,
                         struct gw_error *err)
{
    if (s == NULL || out == NULL || n == NULL)
        return gw_error_set(err, GW_EINVAL, "selector is NULL");
    if (len > GW_SELECTOR_MAX_BYTES)
        return gw_error_set(err, GW_ETOOLARGE, "selector too long: %zu bytes (limit %u)", len,
                            (unsigned)GW_SELECTOR_MAX_BYTES);
    struct gw_pq_expr *e = NULL;
    int rc = gw_pq_parse(s, len, NULL, &e, err);
    if (rc != GW_OK)
        return rc;
    const struct gw_pq_node *r = e->root;
    if (r->kind != GW_PQ_VECTOR_SEL) {
        rc = gw_error_set(err, GW_EPARSE, "1:1: parse error: expected a series selector, got %s", kind_text(r->kind));
    } else if (r->u.sel.offset_ms != 0 || r->u.sel.at != GW_PQ_AT_NONE) {
        rc = gw_error_set(err, GW_EPARSE, "1:1: parse error: a series selector takes no offset or @ modifier");
    } else if (r->u.sel.n_matchers > max) {
        rc = gw_error_set(err, GW_ELIMIT, "too many matchers in selector (limit %zu)", max);
    }
    if (rc != GW_OK) {
        gw_pq_expr_free(e);
        return rc;
    }
    /* the metric name first (the database picks its first matcher to look up) */
    size_t nm = r->u.sel.n_matchers, first = nm;
    for (size_t i = 0; i < nm && first == nm; i++) {
        const struct gw_matcher *m = &r->u.sel.matchers[i];
        if (m->type == GW_MATCH_EQ && m->name_len == 8 && memcmp(m->name, "__name__", 8) == 0) first = i;
    }
    size_t k = 0;
    for (size_t j = 0; j < nm && rc == GW_OK; j++) {
        size_t i = first == nm ? j : j == 0 ? first : j <= first ? j - 1 : j;
        const struct gw_matcher *m = &r->u.sel.matchers[i];
        rc = gw_matcher_init(&out[k], m->type, m->name, m->name_len, m->value, m->value_len, err);
        if (rc == GW_OK) k++;
    }
    gw_pq_expr_free(e);
    if (rc != GW_OK) {
        while (k > 0) gw_matcher_free(&out[--k]);
        return rc;
    }
    *n = k;
    return GW_OK;
}
