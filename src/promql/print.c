/* print.c - PromQL syntax tree to text: the canonical one-line form
 * (Prometheus' String()) and the prettified form of /api/v1/format_query
 * (Prometheus' Pretty(0)).
 *
 * Canonical form, node by node:
 *   number     Go's %v of the float: 1, 0.5, 1e+06, +Inf, NaN
 *              (a duration literal prints as its seconds: 5m -> 300)
 *   string     Go's %q: "a\nb"
 *   selector   name{l1="v",l2=~"r"} @ 123.000 offset 5m  (matchers sorted by
 *              their printed text, __name__="name" left out, label names
 *              that are not [a-zA-Z_][a-zA-Z0-9_]* quoted; offsets as
 *              Prometheus durations, negative ones as "offset -5m")
 *   range      name{...}[5m] @ 123.000 offset 5m
 *   subquery   expr[1h:5m] @ end() offset 1m     ([1h:] without a step)
 *   call       rate(x[5m])          args joined by ", "
 *   aggregate  sum by (a, b) (x)    topk(5, x)   grouping always first;
 *              an empty by () is dropped
 *   binary     a + on (x) group_left (y) b      a > bool b
 *   unary      -x       paren  (x)
 * Example: `sum(rate(foo{bar="baz"}[5m]offset 1m))by(job)` prints as
 *   sum by (job) (rate(foo{bar="baz"}[5m] offset 1m))
 *
 * Pretty form: a node whose canonical text is longer than 100 bytes is
 * split: aggregations and calls put each argument on its own line one
 * level (two spaces) deeper, binary operators put the operator on its own
 * line between the operands, parentheses put the inner expression on its
 * own line; everything that fits stays on one line. As in Prometheus, a
 * subquery short enough for one line is not indented. Example (over 100
 * bytes): `sum(first_long_metric_name + second_long_metric_name)` becomes
 *   sum(
 *       first_long_metric_name
 *     +
 *       second_long_metric_name
 *   )                                                               */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gpuwatch/err.h"
#include "gpuwatch/promql.h"
#include "promql/parse_int.h"

#define PRETTY_COLUMNS 100

static int put(struct gw_buf *b, const char *s) { return gw_buf_append(b, s, strlen(s)); }

/* A grouping label printed bare must lex as a label again: "inf" and "nan"
 * (any case) lex as numbers, so they are quoted like other odd names. */
static int grouping_label_bare(const char *s, size_t l)
{
    if (l == 3 && (strncasecmp(s, "inf", 3) == 0 || strncasecmp(s, "nan", 3) == 0))
        return 0;
    return pq_is_label_name(s, l);
}

static int print_labels(struct gw_buf *b, char **ls, size_t n)
{
    int rc = GW_OK;
    for (size_t i = 0; rc == GW_OK && i < n; i++) {
        if (i > 0)
            rc = put(b, ", ");
        if (rc != GW_OK)
            break;
        size_t l = strlen(ls[i]);
        rc = grouping_label_bare(ls[i], l) ? gw_buf_append(b, ls[i], l) : pq_quote(b, ls[i], l, 0);
    }
    return rc;
}

static const char *match_op(enum gw_match_type t)
{
    switch (t) {
    case GW_MATCH_EQ: return "=";
    case GW_MATCH_NEQ: return "!=";
    case GW_MATCH_RE: return "=~";
    case GW_MATCH_NRE: return "!~";
    }
    return "=";
}

/* Go's labels.Matcher.String(). */
static int print_matcher(struct gw_buf *b, const struct gw_matcher *m)
{
    int rc;
    if (pq_is_label_name(m->name, m->name_len))
        rc = gw_buf_append(b, m->name, m->name_len);
    else
        rc = pq_quote(b, m->name, m->name_len, 0);
    if (rc == GW_OK)
        rc = put(b, match_op(m->type));
    if (rc == GW_OK)
        rc = pq_quote(b, m->value, m->value_len, 0);
    return rc;
}

static int print_at_offset(struct gw_buf *b, enum gw_pq_at at, int64_t at_ms, int64_t offset_ms)
{
    int rc = GW_OK;
    switch (at) {
    case GW_PQ_AT_TIME:
        rc = gw_buf_printf(b, " @ %.3f", (double)at_ms / 1000.0);
        break;
    case GW_PQ_AT_START:
        rc = put(b, " @ start()");
        break;
    case GW_PQ_AT_END:
        rc = put(b, " @ end()");
        break;
    case GW_PQ_AT_NONE:
        break;
    }
    if (rc == GW_OK && offset_ms > 0) {
        rc = put(b, " offset ");
        if (rc == GW_OK)
            rc = pq_format_duration(b, offset_ms);
    } else if (rc == GW_OK && offset_ms < 0) {
        rc = put(b, " offset -");
        if (rc == GW_OK)
            rc = pq_format_duration(b, offset_ms == INT64_MIN ? INT64_MAX : -offset_ms);
    }
    return rc;
}

struct strref {
    const char *s;
    size_t len;
};

static int cmp_strref(const void *a, const void *b)
{
    const struct strref *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->s, y->s, n);
    if (c != 0)
        return c;
    return x->len < y->len ? -1 : x->len > y->len;
}

/* The selector without range, @ and offset. */
static int print_selector_core(struct gw_buf *b, const struct gw_pq_node *n)
{
    const char *name = n->u.sel.name ? n->u.sel.name : "";
    size_t name_len = strlen(name);
    int rc = gw_buf_append(b, name, name_len);
    if (rc != GW_OK)
        return rc;
    size_t nm = n->u.sel.n_matchers, cnt = 0;
    if (nm == 0)
        return GW_OK;
    /* print each matcher to a scratch buffer, then sort the texts */
    struct gw_buf tmp;
    gw_buf_init(&tmp, b->max_bytes);
    size_t *offs = calloc(nm + 1, sizeof *offs);
    struct strref *refs = calloc(nm, sizeof *refs);
    if (offs == NULL || refs == NULL) {
        rc = GW_ENOMEM;
        goto out;
    }
    for (size_t k = 0; k < nm && rc == GW_OK; k++) {
        const struct gw_matcher *m = &n->u.sel.matchers[k];
        if (name_len > 0 && m->type == GW_MATCH_EQ && strcmp(m->name, "__name__") == 0 &&
            m->value_len == name_len && memcmp(m->value, name, name_len) == 0)
            continue;
        offs[cnt] = tmp.len;
        rc = print_matcher(&tmp, m);
        refs[cnt].len = tmp.len - offs[cnt];
        cnt++;
    }
    if (rc != GW_OK || cnt == 0)
        goto out;
    for (size_t k = 0; k < cnt; k++)
        refs[k].s = (const char *)tmp.data + offs[k];
    qsort(refs, cnt, sizeof *refs, cmp_strref);
    rc = gw_buf_putc(b, '{');
    for (size_t k = 0; k < cnt && rc == GW_OK; k++) {
        if (k > 0)
            rc = gw_buf_putc(b, ',');
        if (rc == GW_OK)
            rc = gw_buf_append(b, refs[k].s, refs[k].len);
    }
    if (rc == GW_OK)
        rc = gw_buf_putc(b, '}');
out:
    free(offs);
    free(refs);
    gw_buf_free(&tmp);
    return rc;
}

static int print_matching(struct gw_buf *b, const struct gw_pq_node *n)
{
    const struct gw_pq_vmatch *vm = n->u.bin.vm;
    int rc = GW_OK;
    if (vm == NULL)
        return GW_OK;
    int grouped = vm->card == GW_PQ_CARD_MANY_TO_ONE || vm->card == GW_PQ_CARD_ONE_TO_MANY;
    if (vm->n_labels > 0 || vm->on || grouped) {
        rc = put(b, vm->on ? " on (" : " ignoring (");
        if (rc == GW_OK)
            rc = print_labels(b, vm->labels, vm->n_labels);
        if (rc == GW_OK)
            rc = gw_buf_putc(b, ')');
    }
    if (rc == GW_OK && grouped) {
        rc = put(b, vm->card == GW_PQ_CARD_MANY_TO_ONE ? " group_left (" : " group_right (");
        if (rc == GW_OK)
            rc = print_labels(b, vm->include, vm->n_include);
        if (rc == GW_OK)
            rc = gw_buf_putc(b, ')');
    }
    return rc;
}

static int agg_has_param(enum gw_pq_agg a)
{
    return a == GW_PQ_AGG_TOPK || a == GW_PQ_AGG_BOTTOMK || a == GW_PQ_AGG_COUNT_VALUES ||
           a == GW_PQ_AGG_QUANTILE || a == GW_PQ_AGG_LIMITK || a == GW_PQ_AGG_LIMIT_RATIO;
}

/* "sum", "sum by (a) ", "sum without (a) " */
static int print_agg_op(struct gw_buf *b, const struct gw_pq_node *n)
{
    int rc = put(b, gw_pq_agg_name(n->u.agg.op));
    if (rc != GW_OK)
        return rc;
    if (n->u.agg.without || n->u.agg.n_grouping > 0) {
        rc = put(b, n->u.agg.without ? " without (" : " by (");
        if (rc == GW_OK)
            rc = print_labels(b, n->u.agg.grouping, n->u.agg.n_grouping);
        if (rc == GW_OK)
            rc = put(b, ") ");
    }
    return rc;
}

static int print_sub_suffix(struct gw_buf *b, const struct gw_pq_node *n)
{
    int rc = gw_buf_putc(b, '[');
    if (rc == GW_OK)
        rc = pq_format_duration(b, n->u.sub.range_ms);
    if (rc == GW_OK)
        rc = gw_buf_putc(b, ':');
    if (rc == GW_OK && n->u.sub.step_ms != 0)
        rc = pq_format_duration(b, n->u.sub.step_ms);
    if (rc == GW_OK)
        rc = gw_buf_putc(b, ']');
    if (rc == GW_OK)
        rc = print_at_offset(b, n->u.sub.at, n->u.sub.at_ms, n->u.sub.offset_ms);
    return rc;
}

/* Canonical text length of every node, filled by one print of the whole
 * tree so the pretty printer decides every split without reprinting
 * subtrees (open addressing on the node address). */
struct len_map {
    const struct gw_pq_node **key;
    size_t *len;
    size_t cap; /* power of two */
};

static size_t map_slot(const struct len_map *m, const struct gw_pq_node *n)
{
    uint64_t h = (uint64_t)(uintptr_t)n * 0x9E3779B97F4A7C15ull;
    size_t i = (size_t)(h >> 17) & (m->cap - 1);
    while (m->key[i] != NULL && m->key[i] != n)
        i = (i + 1) & (m->cap - 1);
    return i;
}

static int print_node(struct gw_buf *b, const struct gw_pq_node *n, struct len_map *m);

static int print_node_body(struct gw_buf *b, const struct gw_pq_node *n, struct len_map *m)
{
    int rc = GW_OK;
    if (n == NULL)
        return GW_EINVAL;
    switch (n->kind) {
    case GW_PQ_NUMBER:
        return pq_format_float(b, n->u.number);
    case GW_PQ_STRING_LIT:
        return pq_quote(b, n->u.str.s, n->u.str.len, 0);
    case GW_PQ_VECTOR_SEL:
        rc = print_selector_core(b, n);
        if (rc == GW_OK)
            rc = print_at_offset(b, n->u.sel.at, n->u.sel.at_ms, n->u.sel.offset_ms);
        return rc;
    case GW_PQ_MATRIX_SEL:
        rc = print_selector_core(b, n);
        if (rc == GW_OK)
            rc = gw_buf_putc(b, '[');
        if (rc == GW_OK)
            rc = pq_format_duration(b, n->u.sel.range_ms);
        if (rc == GW_OK)
            rc = gw_buf_putc(b, ']');
        if (rc == GW_OK)
            rc = print_at_offset(b, n->u.sel.at, n->u.sel.at_ms, n->u.sel.offset_ms);
        return rc;
    case GW_PQ_SUBQUERY:
        rc = print_node(b, n->u.sub.expr, m);
        if (rc == GW_OK)
            rc = print_sub_suffix(b, n);
        return rc;
    case GW_PQ_CALL:
        rc = put(b, n->u.call.func->name);
        if (rc == GW_OK)
            rc = gw_buf_putc(b, '(');
        for (size_t k = 0; rc == GW_OK && k < n->u.call.n_args; k++) {
            if (k > 0)
                rc = put(b, ", ");
            if (rc == GW_OK)
                rc = print_node(b, n->u.call.args[k], m);
        }
        if (rc == GW_OK)
            rc = gw_buf_putc(b, ')');
        return rc;
    case GW_PQ_AGGREGATE:
        rc = print_agg_op(b, n);
        if (rc == GW_OK)
            rc = gw_buf_putc(b, '(');
        if (rc == GW_OK && agg_has_param(n->u.agg.op) && n->u.agg.param != NULL) {
            rc = print_node(b, n->u.agg.param, m);
            if (rc == GW_OK)
                rc = put(b, ", ");
        }
        if (rc == GW_OK)
            rc = print_node(b, n->u.agg.expr, m);
        if (rc == GW_OK)
            rc = gw_buf_putc(b, ')');
        return rc;
    case GW_PQ_BINARY:
        rc = print_node(b, n->u.bin.lhs, m);
        if (rc == GW_OK)
            rc = gw_buf_putc(b, ' ');
        if (rc == GW_OK)
            rc = put(b, gw_pq_op_name(n->u.bin.op));
        if (rc == GW_OK && n->u.bin.return_bool)
            rc = put(b, " bool");
        if (rc == GW_OK)
            rc = print_matching(b, n);
        if (rc == GW_OK)
            rc = gw_buf_putc(b, ' ');
        if (rc == GW_OK)
            rc = print_node(b, n->u.bin.rhs, m);
        return rc;
    case GW_PQ_UNARY:
        rc = put(b, n->u.unary.op == GW_PQ_OP_SUB ? "-" : "+");
        if (rc == GW_OK)
            rc = print_node(b, n->u.unary.expr, m);
        return rc;
    case GW_PQ_PAREN:
        rc = gw_buf_putc(b, '(');
        if (rc == GW_OK)
            rc = print_node(b, n->u.paren, m);
        if (rc == GW_OK)
            rc = gw_buf_putc(b, ')');
        return rc;
    }
    return GW_EINVAL;
}

static int print_node(struct gw_buf *b, const struct gw_pq_node *n, struct len_map *m)
{
    size_t start = b->len;
    int rc = print_node_body(b, n, m);
    if (rc == GW_OK && m != NULL) {
        size_t i = map_slot(m, n);
        m->key[i] = n;
        m->len[i] = b->len - start;
    }
    return rc;
}

int gw_pq_print(const struct gw_pq_node *n, struct gw_buf *out)
{
    if (out == NULL)
        return GW_EINVAL;
    return print_node(out, n, NULL);
}

/* ------------------------------------------------------------- pretty */

static int indent(struct gw_buf *b, int level)
{
    int rc = GW_OK;
    for (int k = 0; rc == GW_OK && k < level; k++)
        rc = gw_buf_append(b, "  ", 2);
    return rc;
}

/* 1 if n's canonical text is longer than the column limit. */
static int needs_split(const struct gw_pq_node *n, const struct len_map *m)
{
    size_t i = map_slot(m, n);
    return m->key[i] == n && m->len[i] > PRETTY_COLUMNS;
}

static int pretty(struct gw_buf *b, const struct gw_pq_node *n, int level, const struct len_map *m);

/* Pretty(level) of a unary operand, without its leading indentation and
 * trailing white space (Go's strings.TrimSpace). */
static int pretty_trimmed(struct gw_buf *b, const struct gw_pq_node *n, int level,
                          const struct len_map *m)
{
    struct gw_buf t;
    gw_buf_init(&t, b->max_bytes);
    int rc = pretty(&t, n, level, m);
    if (rc == GW_OK) {
        size_t s = 0, e = t.len;
        while (s < e && (t.data[s] == ' ' || t.data[s] == '\n' || t.data[s] == '\t' || t.data[s] == '\r'))
            s++;
        while (e > s && (t.data[e - 1] == ' ' || t.data[e - 1] == '\n' || t.data[e - 1] == '\t' ||
                         t.data[e - 1] == '\r'))
            e--;
        rc = gw_buf_append(b, t.data + s, e - s);
    }
    gw_buf_free(&t);
    return rc;
}

static int pretty(struct gw_buf *b, const struct gw_pq_node *n, int level, const struct len_map *m)
{
    int rc = GW_OK;
    if (n == NULL)
        return GW_EINVAL;
    if (n->kind == GW_PQ_UNARY) {
        rc = indent(b, level);
        if (rc == GW_OK)
            rc = put(b, n->u.unary.op == GW_PQ_OP_SUB ? "-" : "+");
        if (rc == GW_OK)
            rc = pretty_trimmed(b, n->u.unary.expr, level, m);
        return rc;
    }
    int split = 0;
    switch (n->kind) {
    case GW_PQ_AGGREGATE:
    case GW_PQ_BINARY:
    case GW_PQ_CALL:
    case GW_PQ_PAREN:
    case GW_PQ_SUBQUERY:
        split = needs_split(n, m);
        break;
    default:
        break;
    }
    if (!split || (n->kind == GW_PQ_CALL && n->u.call.n_args == 0)) {
        /* Prometheus' SubqueryExpr.Pretty returns a short subquery
         * without the indentation every other node gets */
        if (n->kind != GW_PQ_SUBQUERY)
            rc = indent(b, level);
        if (rc == GW_OK)
            rc = print_node(b, n, NULL);
        return rc;
    }
    switch (n->kind) {
    case GW_PQ_AGGREGATE:
        rc = indent(b, level);
        if (rc == GW_OK)
            rc = print_agg_op(b, n);
        if (rc == GW_OK)
            rc = put(b, "(\n");
        if (rc == GW_OK && agg_has_param(n->u.agg.op) && n->u.agg.param != NULL) {
            rc = pretty(b, n->u.agg.param, level + 1, m);
            if (rc == GW_OK)
                rc = put(b, ",\n");
        }
        if (rc == GW_OK)
            rc = pretty(b, n->u.agg.expr, level + 1, m);
        if (rc == GW_OK)
            rc = gw_buf_putc(b, '\n');
        if (rc == GW_OK)
            rc = indent(b, level);
        if (rc == GW_OK)
            rc = gw_buf_putc(b, ')');
        return rc;
    case GW_PQ_BINARY:
        rc = pretty(b, n->u.bin.lhs, level + 1, m);
        if (rc == GW_OK)
            rc = gw_buf_putc(b, '\n');
        if (rc == GW_OK)
            rc = indent(b, level);
        if (rc == GW_OK)
            rc = put(b, gw_pq_op_name(n->u.bin.op));
        if (rc == GW_OK && n->u.bin.return_bool)
            rc = put(b, " bool");
        if (rc == GW_OK)
            rc = print_matching(b, n);
        if (rc == GW_OK)
            rc = gw_buf_putc(b, '\n');
        if (rc == GW_OK)
            rc = pretty(b, n->u.bin.rhs, level + 1, m);
        return rc;
    case GW_PQ_CALL:
        rc = indent(b, level);
        if (rc == GW_OK)
            rc = put(b, n->u.call.func->name);
        if (rc == GW_OK)
            rc = put(b, "(\n");
        for (size_t k = 0; rc == GW_OK && k < n->u.call.n_args; k++) {
            if (k > 0)
                rc = put(b, ",\n");
            if (rc == GW_OK)
                rc = pretty(b, n->u.call.args[k], level + 1, m);
        }
        if (rc == GW_OK)
            rc = gw_buf_putc(b, '\n');
        if (rc == GW_OK)
            rc = indent(b, level);
        if (rc == GW_OK)
            rc = gw_buf_putc(b, ')');
        return rc;
    case GW_PQ_PAREN:
        rc = indent(b, level);
        if (rc == GW_OK)
            rc = put(b, "(\n");
        if (rc == GW_OK)
            rc = pretty(b, n->u.paren, level + 1, m);
        if (rc == GW_OK)
            rc = gw_buf_putc(b, '\n');
        if (rc == GW_OK)
            rc = indent(b, level);
        if (rc == GW_OK)
            rc = gw_buf_putc(b, ')');
        return rc;
    case GW_PQ_SUBQUERY:
        rc = pretty(b, n->u.sub.expr, level, m);
        if (rc == GW_OK)
            rc = print_sub_suffix(b, n);
        return rc;
    default:
        return GW_EINVAL;
    }
}

static size_t count_nodes(const struct gw_pq_node *n)
{
    if (n == NULL)
        return 0;
    switch (n->kind) {
    case GW_PQ_SUBQUERY: return 1 + count_nodes(n->u.sub.expr);
    case GW_PQ_AGGREGATE: return 1 + count_nodes(n->u.agg.expr) + count_nodes(n->u.agg.param);
    case GW_PQ_BINARY: return 1 + count_nodes(n->u.bin.lhs) + count_nodes(n->u.bin.rhs);
    case GW_PQ_UNARY: return 1 + count_nodes(n->u.unary.expr);
    case GW_PQ_PAREN: return 1 + count_nodes(n->u.paren);
    case GW_PQ_CALL: {
        size_t c = 1;
        for (size_t k = 0; k < n->u.call.n_args; k++)
            c += count_nodes(n->u.call.args[k]);
        return c;
    }
    default: return 1;
    }
}

int gw_pq_format(const struct gw_pq_node *n, struct gw_buf *out)
{
    if (out == NULL || n == NULL)
        return GW_EINVAL;
    struct len_map m = { NULL, NULL, 16 };
    size_t nodes = count_nodes(n);
    while (m.cap < 2 * nodes)
        m.cap *= 2;
    m.key = calloc(m.cap, sizeof *m.key);
    m.len = calloc(m.cap, sizeof *m.len);
    struct gw_buf scratch;
    gw_buf_init(&scratch, out->max_bytes);
    int rc = (m.key == NULL || m.len == NULL) ? GW_ENOMEM : print_node(&scratch, n, &m);
    gw_buf_free(&scratch);
    if (rc == GW_OK)
        rc = pretty(out, n, 0, &m);
    free(m.key);
    free(m.len);
    return rc;
}
