/* parse.c - the PromQL parser and type checker: query text to the syntax
 * tree of promql.h, with Prometheus 3's grammar, precedence and error
 * messages.
 *
 * Grammar (precedence climbing; lowest binding first):
 *   expr     := binary
 *   binary   := unary (binop modifiers binary)*      by precedence:
 *               or < and unless < == != > < >= <= < + - < * / % atan2 < ^
 *               all left-associative except ^ (right)
 *   modifiers:= [bool] [(on|ignoring) labels [(group_left|group_right) [labels]]]
 *   unary    := ('+'|'-') binary-above-*  |  postfix
 *               (unary binds like '*': -2^2 = -(2^2), -a*b = (-a)*b;
 *               a sign directly on a number literal folds into it)
 *   postfix  := primary ( '[' dur ']' | '[' dur ':' [dur] ']'
 *                        | offset ['-'] dur | '@' (number | start() | end()) )*
 *   primary  := number | duration | string | '(' expr ')'
 *             | aggr [by|without labels] '(' args ')' [by|without labels]
 *             | ident '(' [args] ')'          function call
 *             | metric ['{' matchers '}'] | '{' matchers '}'
 * A duration where a number is expected is its length in seconds, and a
 * number where a duration is expected is seconds (Prometheus 3).
 * Words that are keywords elsewhere (sum, by, offset, and, start ...) are
 * metric names where an expression starts, as in Prometheus.
 *
 * Errors are GW_EPARSE with "<line>:<col>: parse error: <message>", the
 * line and column (1-based, bytes) of the offending token, and the message
 * Prometheus gives. Parsing stops at the first error. Syntax is checked
 * first; when it is valid a second pass checks types and arity exactly as
 * Prometheus' checkAST does (so "expected type range vector in call to
 * function \"rate\", got instant vector" is reported only for queries that
 * parse).
 *
 * Memory: the gw_pq_expr, its nodes, strings and arrays live in one arena;
 * matchers own their PCRE2 objects and are listed so gw_pq_expr_free
 * releases them (also after a failed parse). Tree height and parser
 * recursion are capped at GW_PQ_MAX_DEPTH, the query at
 * GW_PQ_MAX_QUERY_BYTES, label matchers at PQ_MAX_MATCHERS per query, the
 * arena at PQ_ARENA_MAX. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/err.h"
#include "gpuwatch/promql.h"
#include "promql/parse_int.h"

#define PQ_ARENA_MAX ((size_t)512 << 20)
#define PQ_MAX_DURATION_MS (INT64_MAX / 1000000) /* Go's time.Duration limit */
/* Label matchers in one query: each regex owns compiled PCRE2 code, so a
 * 1 MiB query of regexes would otherwise hold hundreds of MiB. */
#define PQ_MAX_MATCHERS 10000

/* A node and its height (1 for leaves). */
struct pq_nodex {
    struct gw_pq_node n;
    uint32_t h;
};

struct sel_list {
    struct gw_matcher *ms;
    size_t n;
    struct sel_list *next;
};

/* What gw_pq_parse allocates; e is what callers see. */
struct pq_expr_priv {
    struct gw_pq_expr e;
    struct sel_list *sels;
};

struct parser {
    const char *q;
    size_t len;
    struct pq_tokens ts;
    size_t i;
    struct gw_arena *a;
    struct pq_expr_priv *x;
    int experimental;
    int compat;          /* 2: Prometheus 2's function names too */
    struct gw_error *err;
    int rc;
    int depth;
    size_t n_matchers;   /* in the whole query so far */
};

/* ------------------------------------------------------------- errors */

static int set_err(struct parser *p, int rc, uint32_t pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int set_err(struct parser *p, int rc, uint32_t pos, const char *fmt, ...)
{
    if (p->rc != GW_OK)
        return p->rc;
    p->rc = rc;
    if (p->err == NULL)
        return rc;
    char msg[GW_ERROR_MSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (rc != GW_EPARSE) {
        gw_error_set(p->err, rc, "%s", msg);
        return rc;
    }
    size_t line = 1;
    long last_nl = -1;
    if (pos > p->len)
        pos = (uint32_t)p->len;
    for (size_t k = 0; k < pos; k++) {
        if (p->q[k] == '\n') {
            line++;
            last_nl = (long)k;
        }
    }
    gw_error_set(p->err, rc, "%zu:%ld: parse error: %s", line, (long)pos - last_nl, msg);
    return rc;
}

#define perr(p, pos, ...) set_err((p), GW_EPARSE, (pos), __VA_ARGS__)

static void *oom(struct parser *p)
{
    set_err(p, GW_ENOMEM, 0, "out of memory parsing query");
    return NULL;
}

static const struct pq_token *cur(struct parser *p) { return &p->ts.t[p->i]; }

static const struct pq_token *peek_tok(struct parser *p, size_t k)
{
    size_t j = p->i + k;
    return &p->ts.t[j < p->ts.n ? j : p->ts.n - 1];
}

static void adv(struct parser *p)
{
    if (p->i + 1 < p->ts.n)
        p->i++;
}

/* Reports the current token as unexpected (or the lexer's error when the
 * current token is one), with an optional context and expectation. */
static void *unexpected(struct parser *p, const char *ctx, const char *expected)
{
    const struct pq_token *t = cur(p);
    if (t->type == PQ_T_ERROR) {
        perr(p, t->pos, "%s", p->ts.err_msg);
        return NULL;
    }
    char d[96];
    pq_token_desc(p->q, t, d, sizeof d);
    perr(p, t->pos, "unexpected %s%s%s%s%s", d, ctx && *ctx ? " in " : "", ctx ? ctx : "",
         expected && *expected ? ", expected " : "", expected ? expected : "");
    return NULL;
}

/* ------------------------------------------------------------ helpers */

static struct gw_pq_node *new_node(struct parser *p, enum gw_pq_kind kind, uint32_t pos,
                                   uint32_t end)
{
    struct pq_nodex *x = gw_arena_calloc(p->a, 1, sizeof *x);
    if (x == NULL)
        return oom(p);
    x->n.kind = kind;
    x->n.pos = pos;
    x->n.end = end;
    x->h = 1;
    return &x->n;
}

static uint32_t height(const struct gw_pq_node *n)
{
    return n ? ((const struct pq_nodex *)(const void *)n)->h : 0;
}

/* Sets n's height from a child; 0 when the tree got too deep. */
static int grow(struct parser *p, struct gw_pq_node *n, const struct gw_pq_node *child)
{
    struct pq_nodex *x = (struct pq_nodex *)(void *)n;
    uint32_t h = height(child) + 1;
    if (h > x->h)
        x->h = h;
    if (x->h > GW_PQ_MAX_DEPTH) {
        perr(p, n->pos, "expression nesting too deep (more than %d levels)", GW_PQ_MAX_DEPTH);
        return 0;
    }
    return 1;
}

static char *arena_strndup(struct parser *p, const char *s, size_t n)
{
    char *d = gw_arena_alloc(p->a, n + 1);
    if (d == NULL)
        return oom(p);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

/* Decodes a string token into the arena. */
static char *tok_string(struct parser *p, const struct pq_token *t, size_t *len)
{
    char *d = gw_arena_alloc(p->a, (size_t)t->len + 1);
    if (d == NULL)
        return oom(p);
    *len = pq_unquote(p->q + t->pos, t->len, d);
    return d;
}

/* Appends v to an arena array *arr of *n elements (capacity *cap). */
static int push_ptr(struct parser *p, void ***arr, size_t *n, size_t *cap, void *v)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 4;
        void **na = gw_arena_calloc(p->a, nc, sizeof *na);
        if (na == NULL) {
            oom(p);
            return 0;
        }
        if (*n)
            memcpy(na, *arr, *n * sizeof *na);
        *arr = na;
        *cap = nc;
    }
    (*arr)[(*n)++] = v;
    return 1;
}

static int is_match_op(enum pq_tok t)
{
    return t == PQ_T_EQL || t == PQ_T_NEQ || t == PQ_T_EQL_REGEX || t == PQ_T_NEQ_REGEX;
}

/* Tokens that may name a label in by(...)/on(...)/group_x(...). */
static int is_maybe_label(enum pq_tok t)
{
    switch (t) {
    case PQ_T_AGG: case PQ_T_BOOL: case PQ_T_BY: case PQ_T_GROUP_LEFT: case PQ_T_GROUP_RIGHT:
    case PQ_T_IDENT: case PQ_T_IGNORING: case PQ_T_LAND: case PQ_T_LOR: case PQ_T_LUNLESS:
    case PQ_T_METRIC_IDENT: case PQ_T_OFFSET: case PQ_T_ON: case PQ_T_START: case PQ_T_END:
    case PQ_T_ATAN2:
        return 1;
    default:
        return 0;
    }
}

/* Tokens that may be a metric name where an expression starts. */
static int is_metric_identifier(enum pq_tok t)
{
    switch (t) {
    case PQ_T_AGG: case PQ_T_BY: case PQ_T_IDENT: case PQ_T_LAND: case PQ_T_LOR:
    case PQ_T_LUNLESS: case PQ_T_METRIC_IDENT: case PQ_T_OFFSET: case PQ_T_WITHOUT:
    case PQ_T_START: case PQ_T_END:
        return 1;
    default:
        return 0;
    }
}

struct binop {
    enum pq_tok tok;
    enum gw_pq_op op;
    int prec;
};
static const struct binop binops[] = {
    { PQ_T_LOR, GW_PQ_OP_OR, 1 },      { PQ_T_LAND, GW_PQ_OP_AND, 2 },
    { PQ_T_LUNLESS, GW_PQ_OP_UNLESS, 2 }, { PQ_T_EQLC, GW_PQ_OP_EQL, 3 },
    { PQ_T_NEQ, GW_PQ_OP_NEQ, 3 },     { PQ_T_GTR, GW_PQ_OP_GTR, 3 },
    { PQ_T_LSS, GW_PQ_OP_LSS, 3 },     { PQ_T_GTE, GW_PQ_OP_GTE, 3 },
    { PQ_T_LTE, GW_PQ_OP_LTE, 3 },     { PQ_T_ADD, GW_PQ_OP_ADD, 4 },
    { PQ_T_SUB, GW_PQ_OP_SUB, 4 },     { PQ_T_MUL, GW_PQ_OP_MUL, 5 },
    { PQ_T_DIV, GW_PQ_OP_DIV, 5 },     { PQ_T_MOD, GW_PQ_OP_MOD, 5 },
    { PQ_T_ATAN2, GW_PQ_OP_ATAN2, 5 }, { PQ_T_POW, GW_PQ_OP_POW, 6 },
};
#define PREC_MUL 5
#define PREC_POW 6

static const struct binop *binop_of(enum pq_tok t)
{
    for (size_t k = 0; k < sizeof binops / sizeof binops[0]; k++)
        if (binops[k].tok == t)
            return &binops[k];
    return NULL;
}

static struct gw_pq_node *parse_expr(struct parser *p, int min_prec);

/* ------------------------------------------------------------ literals */

/* A number or duration token as seconds. */
static int tok_seconds(struct parser *p, const struct pq_token *t, double *out)
{
    char msg[200];
    if (t->type == PQ_T_NUMBER) {
        if (pq_parse_number(p->q + t->pos, t->len, out, msg, sizeof msg) != GW_OK) {
            perr(p, t->pos, "%s", msg);
            return 0;
        }
        return 1;
    }
    int64_t ms;
    if (pq_parse_duration(p->q + t->pos, t->len, 0, &ms, msg, sizeof msg) != GW_OK) {
        perr(p, t->pos, "%s", msg);
        return 0;
    }
    *out = (double)ms / 1000.0;
    return 1;
}

/* A number or duration token where a duration is expected, in ms. */
static int tok_duration_ms(struct parser *p, const struct pq_token *t, int64_t *ms)
{
    char msg[200];
    if (t->type == PQ_T_DURATION) {
        if (pq_parse_duration(p->q + t->pos, t->len, 0, ms, msg, sizeof msg) != GW_OK) {
            perr(p, t->pos, "%s", msg);
            return 0;
        }
        return 1;
    }
    double v;
    if (!tok_seconds(p, t, &v))
        return 0;
    if (!(v * 1000.0 > -(double)PQ_MAX_DURATION_MS && v * 1000.0 < (double)PQ_MAX_DURATION_MS)) {
        perr(p, t->pos, "duration out of range");
        return 0;
    }
    *ms = (int64_t)(v * 1000.0);
    return 1;
}

/* --------------------------------------------------------- selectors */

struct lm_item {
    enum gw_match_type type;
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
    uint32_t pos;
};

static int match_type_of(enum pq_tok t)
{
    switch (t) {
    case PQ_T_NEQ: return GW_MATCH_NEQ;
    case PQ_T_EQL_REGEX: return GW_MATCH_RE;
    case PQ_T_NEQ_REGEX: return GW_MATCH_NRE;
    default: return GW_MATCH_EQ;
    }
}

/* name_tok: the metric name token before '{', or NULL (then cur is '{'). */
static struct gw_pq_node *parse_selector(struct parser *p, const struct pq_token *name_tok)
{
    uint32_t pos = name_tok ? name_tok->pos : cur(p)->pos;
    uint32_t end = name_tok ? name_tok->pos + name_tok->len : pos;
    void **items = NULL;
    size_t n_items = 0, cap = 0;

    if (name_tok)
        adv(p);
    if (cur(p)->type == PQ_T_LBRACE) {
        adv(p);
        for (;;) {
            const struct pq_token *t = cur(p);
            if (t->type == PQ_T_RBRACE)
                break;
            struct lm_item *it = gw_arena_calloc(p->a, 1, sizeof *it);
            if (it == NULL)
                return oom(p);
            it->pos = t->pos;
            if (t->type == PQ_T_IDENT || t->type == PQ_T_STRING) {
                if (t->type == PQ_T_IDENT) {
                    it->name = p->q + t->pos;
                    it->name_len = t->len;
                } else {
                    it->name = tok_string(p, t, &it->name_len);
                    if (it->name == NULL)
                        return NULL;
                    if (!pq_is_valid_utf8_label(it->name, it->name_len))
                        return perr(p, t->pos, "%s", it->name_len ? "label or metric name is not valid UTF-8"
                                                                   : "empty label or metric name"), NULL;
                }
                adv(p);
                if (is_match_op(cur(p)->type)) {
                    it->type = match_type_of(cur(p)->type);
                    adv(p);
                    if (cur(p)->type != PQ_T_STRING)
                        return unexpected(p, "label matching", "string");
                    it->value = tok_string(p, cur(p), &it->value_len);
                    if (it->value == NULL)
                        return NULL;
                    adv(p);
                } else if (t->type == PQ_T_STRING) {
                    /* {"my.metric"}: a quoted metric name */
                    it->type = GW_MATCH_EQ;
                    it->value = it->name;
                    it->value_len = it->name_len;
                    it->name = "__name__";
                    it->name_len = 8;
                } else {
                    return unexpected(p, "label matching", "label matching operator");
                }
            } else {
                return unexpected(p, "label matching", "identifier or \"}\"");
            }
            if (!push_ptr(p, &items, &n_items, &cap, it))
                return NULL;
            if (cur(p)->type == PQ_T_COMMA) {
                adv(p);
                continue;
            }
            if (cur(p)->type != PQ_T_RBRACE)
                return unexpected(p, "label matching", "\",\" or \"}\"");
        }
        end = cur(p)->pos + 1;
        adv(p);
    }

    struct gw_pq_node *n = new_node(p, GW_PQ_VECTOR_SEL, pos, end);
    if (n == NULL)
        return NULL;
    n->type = GW_PQ_T_VECTOR;
    size_t total = n_items + (name_tok ? 1 : 0);
    p->n_matchers += total;
    if (p->n_matchers > PQ_MAX_MATCHERS)
        return perr(p, pos, "too many label matchers in the query (more than %d)", PQ_MAX_MATCHERS),
               NULL;
    struct sel_list *sl = gw_arena_calloc(p->a, 1, sizeof *sl);
    struct gw_matcher *ms = total ? gw_arena_calloc(p->a, total, sizeof *ms) : NULL;
    if (sl == NULL || (total && ms == NULL))
        return oom(p);
    sl->ms = ms;
    sl->next = p->x->sels;
    p->x->sels = sl;
    struct gw_error merr;
    size_t k = 0;
    if (name_tok) {
        n->u.sel.name = arena_strndup(p, p->q + name_tok->pos, name_tok->len);
        if (n->u.sel.name == NULL)
            return NULL;
        int rc = gw_matcher_init(&ms[k], GW_MATCH_EQ, "__name__", 8, n->u.sel.name,
                                 name_tok->len, &merr);
        if (rc != GW_OK)
            return rc == GW_ENOMEM ? oom(p) : (perr(p, pos, "%s", merr.msg), NULL);
        sl->n = ++k;
    }
    for (size_t j = 0; j < n_items; j++) {
        const struct lm_item *it = items[j];
        gw_error_clear(&merr);
        int rc = gw_matcher_init(&ms[k], it->type, it->name, it->name_len, it->value,
                                 it->value_len, &merr);
        if (rc == GW_ENOMEM)
            return oom(p);
        if (rc != GW_OK) {
            const char *m = merr.msg;
            /* drop the matcher module's own position prefix */
            const char *colon = strstr(m, ": ");
            if (strncmp(m, "parse error", 11) == 0 && colon)
                m = colon + 2;
            perr(p, it->pos, "%s", m);
            return NULL;
        }
        sl->n = ++k;
    }
    n->u.sel.matchers = ms;
    n->u.sel.n_matchers = total;
    return n;
}

/* ------------------------------------------------------------ grouping */

static int parse_grouping(struct parser *p, char ***out, size_t *n_out)
{
    void **labels = NULL;
    size_t n = 0, cap = 0;
    if (cur(p)->type != PQ_T_LPAREN) {
        unexpected(p, "grouping opts", "\"(\"");
        return 0;
    }
    adv(p);
    while (cur(p)->type != PQ_T_RPAREN) {
        const struct pq_token *t = cur(p);
        char *name;
        size_t l = t->len;
        if (is_maybe_label(t->type)) {
            name = arena_strndup(p, p->q + t->pos, t->len);
        } else if (t->type == PQ_T_STRING) {
            name = tok_string(p, t, &l);
        } else {
            unexpected(p, "grouping opts", "label");
            return 0;
        }
        if (name != NULL && !pq_is_valid_utf8_label(name, l)) {
            struct gw_buf qb;
            gw_buf_init(&qb, 512);
            if (pq_quote(&qb, name, l, 64) == GW_OK)
                perr(p, t->pos, "invalid label name for grouping: %.*s", (int)qb.len,
                     (const char *)qb.data);
            else
                oom(p);
            gw_buf_free(&qb);
            return 0;
        }
        if (name == NULL || !push_ptr(p, &labels, &n, &cap, name))
            return 0;
        adv(p);
        if (cur(p)->type == PQ_T_COMMA) {
            adv(p);
            continue;
        }
        if (cur(p)->type != PQ_T_RPAREN) {
            unexpected(p, "grouping opts", "\",\" or \")\"");
            return 0;
        }
    }
    adv(p);
    *out = (char **)labels;
    *n_out = n;
    return 1;
}

/* ------------------------------------------------------ calls and aggrs */

/* '(' [expr (',' expr)*] ')' ; cur is '('. */
static int parse_args(struct parser *p, struct gw_pq_node ***out, size_t *n_out,
                      struct gw_pq_node *parent)
{
    void **args = NULL;
    size_t n = 0, cap = 0;
    adv(p);
    if (cur(p)->type == PQ_T_RPAREN) {
        parent->end = cur(p)->pos + 1;
        adv(p);
        *out = NULL;
        *n_out = 0;
        return 1;
    }
    for (;;) {
        struct gw_pq_node *e = parse_expr(p, 0);
        if (e == NULL || !push_ptr(p, &args, &n, &cap, e) || !grow(p, parent, e))
            return 0;
        if (cur(p)->type == PQ_T_COMMA) {
            uint32_t comma = cur(p)->pos;
            adv(p);
            if (cur(p)->type == PQ_T_RPAREN) {
                perr(p, comma, "trailing commas not allowed in function call args");
                return 0;
            }
            continue;
        }
        if (cur(p)->type != PQ_T_RPAREN) {
            unexpected(p, NULL, NULL);
            return 0;
        }
        parent->end = cur(p)->pos + 1;
        adv(p);
        break;
    }
    *out = (struct gw_pq_node **)args;
    *n_out = n;
    return 1;
}

/* Prometheus 2's holt_winters: the function Prometheus 3 renamed
 * double_exponential_smoothing (and made experimental). Known under
 * compat 2 only; evaluated as double_exponential_smoothing, printed as
 * holt_winters. */
static const struct gw_pq_func holt_winters_v2 = {
    GW_PQ_F_DOUBLE_EXPONENTIAL_SMOOTHING, "holt_winters",
    { GW_PQ_T_MATRIX, GW_PQ_T_SCALAR, GW_PQ_T_SCALAR }, 3, 0, GW_PQ_T_VECTOR, 0
};

static const struct gw_pq_func *func_lookup(const struct parser *p, const char *name, size_t len)
{
    const struct gw_pq_func *f = gw_pq_func_lookup(name, len);
    if (f == NULL && p->compat == 2 && len == 12 && memcmp(name, "holt_winters", 12) == 0)
        f = &holt_winters_v2;
    return f;
}

static struct gw_pq_node *parse_call(struct parser *p)
{
    const struct pq_token *name = cur(p);
    struct gw_pq_node *n = new_node(p, GW_PQ_CALL, name->pos, name->pos + name->len);
    if (n == NULL)
        return NULL;
    adv(p); /* cur is '(' */
    if (!parse_args(p, &n->u.call.args, &n->u.call.n_args, n))
        return NULL;
    const struct gw_pq_func *f = func_lookup(p, p->q + name->pos, name->len);
    if (f == NULL)
        return perr(p, name->pos, "unknown function with name \"%.*s\"", (int)name->len,
                    p->q + name->pos),
               NULL;
    if (f->experimental && !p->experimental)
        return perr(p, name->pos, "function \"%s\" is not enabled", f->name), NULL;
    n->u.call.func = f;
    n->type = f->ret;
    return n;
}

static int agg_has_param(enum gw_pq_agg a)
{
    return a == GW_PQ_AGG_TOPK || a == GW_PQ_AGG_BOTTOMK || a == GW_PQ_AGG_COUNT_VALUES ||
           a == GW_PQ_AGG_QUANTILE || a == GW_PQ_AGG_LIMITK || a == GW_PQ_AGG_LIMIT_RATIO;
}

static int parse_agg_modifier(struct parser *p, struct gw_pq_node *n)
{
    n->u.agg.without = cur(p)->type == PQ_T_WITHOUT;
    n->u.agg.by_given = 1;
    adv(p);
    return parse_grouping(p, &n->u.agg.grouping, &n->u.agg.n_grouping);
}

static struct gw_pq_node *parse_aggregate(struct parser *p)
{
    const struct pq_token *op = cur(p);
    struct gw_pq_node *n = new_node(p, GW_PQ_AGGREGATE, op->pos, op->pos + op->len);
    if (n == NULL)
        return NULL;
    n->type = GW_PQ_T_VECTOR;
    n->u.agg.op = (enum gw_pq_agg)op->agg;
    adv(p);
    int modifier_first = 0;
    if (cur(p)->type == PQ_T_BY || cur(p)->type == PQ_T_WITHOUT) {
        if (!parse_agg_modifier(p, n))
            return NULL;
        modifier_first = 1;
    }
    if (cur(p)->type != PQ_T_LPAREN)
        return unexpected(p, "aggregation", NULL);
    struct gw_pq_node **args;
    size_t n_args;
    if (!parse_args(p, &args, &n_args, n))
        return NULL;
    if (!modifier_first && (cur(p)->type == PQ_T_BY || cur(p)->type == PQ_T_WITHOUT)) {
        if (!parse_agg_modifier(p, n))
            return NULL;
        n->u.agg.grouping_after = 1;
        n->end = p->ts.t[p->i - 1].pos + 1;
    }
    if (n_args == 0)
        return perr(p, n->pos, "no arguments for aggregate expression provided"), NULL;
    size_t want = 1;
    if (agg_has_param(n->u.agg.op)) {
        if (!p->experimental &&
            (n->u.agg.op == GW_PQ_AGG_LIMITK || n->u.agg.op == GW_PQ_AGG_LIMIT_RATIO))
            return perr(p, n->pos,
                        "%s() is experimental and must be enabled with "
                        "--enable-feature=promql-experimental-functions",
                        gw_pq_agg_name(n->u.agg.op)),
                   NULL;
        want = 2;
        n->u.agg.param = args[0];
    }
    if (n_args != want)
        return perr(p, n->pos,
                    "wrong number of arguments for aggregate expression provided, expected %zu, got %zu",
                    want, n_args),
               NULL;
    n->u.agg.expr = args[want - 1];
    return n;
}

/* ------------------------------------------------------------- postfix */

static int sel_target(struct gw_pq_node *e, int64_t **offset, enum gw_pq_at **at, int64_t **at_ms)
{
    if (e->kind == GW_PQ_VECTOR_SEL || e->kind == GW_PQ_MATRIX_SEL) {
        *offset = &e->u.sel.offset_ms;
        *at = &e->u.sel.at;
        *at_ms = &e->u.sel.at_ms;
        return 1;
    }
    if (e->kind == GW_PQ_SUBQUERY) {
        *offset = &e->u.sub.offset_ms;
        *at = &e->u.sub.at;
        *at_ms = &e->u.sub.at_ms;
        return 1;
    }
    return 0;
}

static struct gw_pq_node *parse_bracket(struct parser *p, struct gw_pq_node *e)
{
    uint32_t lb = cur(p)->pos;
    adv(p);
    const struct pq_token *t = cur(p);
    if (t->type != PQ_T_NUMBER && t->type != PQ_T_DURATION)
        return unexpected(p, "subquery selector", "number or duration");
    int64_t range;
    if (!tok_duration_ms(p, t, &range))
        return NULL;
    /* a number that rounds to no time at all is refused like "0s": a
     * zero range selects nothing and would print as an invalid [0s] */
    if (range <= 0)
        return perr(p, t->pos, "duration must be greater than 0"), NULL;
    adv(p);
    if (cur(p)->type == PQ_T_RBRACKET) {
        uint32_t end = cur(p)->pos + 1;
        const char *msg = NULL;
        if (e->kind != GW_PQ_VECTOR_SEL)
            msg = "ranges only allowed for vector selectors";
        else if (e->u.sel.offset_ms != 0)
            msg = "no offset modifiers allowed before range";
        else if (e->u.sel.at != GW_PQ_AT_NONE)
            msg = "no @ modifiers allowed before range";
        if (msg)
            return perr(p, lb, "%s", msg), NULL;
        adv(p);
        e->kind = GW_PQ_MATRIX_SEL;
        e->type = GW_PQ_T_MATRIX;
        e->u.sel.range_ms = range;
        e->end = end;
        return e;
    }
    if (cur(p)->type != PQ_T_COLON)
        return unexpected(p, "subquery or range", "\":\" or \"]\"");
    adv(p);
    int64_t step = 0;
    t = cur(p);
    if (t->type == PQ_T_NUMBER || t->type == PQ_T_DURATION) {
        if (!tok_duration_ms(p, t, &step))
            return NULL;
        adv(p);
        if (cur(p)->type != PQ_T_RBRACKET)
            return unexpected(p, "subquery selector", "\"]\"");
    } else if (t->type != PQ_T_RBRACKET) {
        return unexpected(p, "subquery selector", "number or duration or \"]\"");
    }
    struct gw_pq_node *n = new_node(p, GW_PQ_SUBQUERY, e->pos, cur(p)->pos + 1);
    if (n == NULL || !grow(p, n, e))
        return NULL;
    adv(p);
    n->type = GW_PQ_T_MATRIX;
    n->u.sub.expr = e;
    n->u.sub.range_ms = range;
    n->u.sub.step_ms = step;
    return n;
}

static struct gw_pq_node *parse_offset(struct parser *p, struct gw_pq_node *e)
{
    adv(p);
    int neg = 0;
    if (cur(p)->type == PQ_T_SUB) {
        neg = 1;
        adv(p);
    }
    const struct pq_token *t = cur(p);
    if (t->type != PQ_T_NUMBER && t->type != PQ_T_DURATION)
        return unexpected(p, "offset", "number or duration");
    int64_t ms;
    if (!tok_duration_ms(p, t, &ms))
        return NULL;
    uint32_t end = t->pos + t->len;
    adv(p);
    int64_t *off;
    enum gw_pq_at *at;
    int64_t *at_ms;
    if (!sel_target(e, &off, &at, &at_ms))
        return perr(p, e->pos,
                    "offset modifier must be preceded by an instant vector selector or range "
                    "vector selector or a subquery"),
               NULL;
    if (*off != 0)
        return perr(p, e->pos, "offset may not be set multiple times"), NULL;
    *off = neg ? -ms : ms;
    e->end = end;
    return e;
}

static struct gw_pq_node *parse_at(struct parser *p, struct gw_pq_node *e)
{
    adv(p);
    const struct pq_token *t = cur(p);
    enum gw_pq_at kind = GW_PQ_AT_TIME;
    double v = 0;
    uint32_t end;
    if (t->type == PQ_T_START || t->type == PQ_T_END) {
        kind = t->type == PQ_T_START ? GW_PQ_AT_START : GW_PQ_AT_END;
        adv(p);
        if (cur(p)->type != PQ_T_LPAREN)
            return unexpected(p, NULL, NULL);
        adv(p);
        if (cur(p)->type != PQ_T_RPAREN)
            return unexpected(p, NULL, NULL);
        end = cur(p)->pos + 1;
        adv(p);
    } else {
        int neg = 0;
        if (t->type == PQ_T_ADD || t->type == PQ_T_SUB) {
            neg = t->type == PQ_T_SUB;
            adv(p);
            t = cur(p);
        }
        if (t->type != PQ_T_NUMBER && t->type != PQ_T_DURATION)
            return unexpected(p, "@", "timestamp");
        if (!tok_seconds(p, t, &v))
            return NULL;
        if (neg)
            v = -v;
        end = t->pos + t->len;
        adv(p);
        /* Go's int64(math.Round(ts*1000)) must be representable */
        if (isnan(v) || !(v > -9.2e15 && v < 9.2e15)) {
            if (isinf(v))
                return perr(p, e->pos, "timestamp out of bounds for @ modifier: %sInf",
                            v > 0 ? "+" : "-"),
                       NULL;
            if (isnan(v))
                return perr(p, e->pos, "timestamp out of bounds for @ modifier: NaN"), NULL;
            return perr(p, e->pos, "timestamp out of bounds for @ modifier: %f", v), NULL;
        }
    }
    int64_t *off;
    enum gw_pq_at *at;
    int64_t *at_ms;
    if (!sel_target(e, &off, &at, &at_ms))
        return perr(p, e->pos,
                    "@ modifier must be preceded by an instant vector selector or range vector "
                    "selector or a subquery"),
               NULL;
    if (*at != GW_PQ_AT_NONE)
        return perr(p, e->pos, "@ <timestamp> may not be set multiple times"), NULL;
    *at = kind;
    if (kind == GW_PQ_AT_TIME)
        *at_ms = (int64_t)llround(v * 1000.0);
    e->end = end;
    return e;
}

/* ------------------------------------------------------------- primary */

static struct gw_pq_node *parse_primary(struct parser *p)
{
    const struct pq_token *t = cur(p);
    switch (t->type) {
    case PQ_T_NUMBER:
    case PQ_T_DURATION: {
        struct gw_pq_node *n = new_node(p, GW_PQ_NUMBER, t->pos, t->pos + t->len);
        if (n == NULL || !tok_seconds(p, t, &n->u.number))
            return NULL;
        n->type = GW_PQ_T_SCALAR;
        adv(p);
        return n;
    }
    case PQ_T_STRING: {
        struct gw_pq_node *n = new_node(p, GW_PQ_STRING_LIT, t->pos, t->pos + t->len);
        if (n == NULL)
            return NULL;
        n->u.str.s = tok_string(p, t, &n->u.str.len);
        if (n->u.str.s == NULL)
            return NULL;
        n->type = GW_PQ_T_STRING;
        adv(p);
        return n;
    }
    case PQ_T_LPAREN: {
        struct gw_pq_node *n = new_node(p, GW_PQ_PAREN, t->pos, t->pos + 1);
        if (n == NULL)
            return NULL;
        adv(p);
        struct gw_pq_node *e = parse_expr(p, 0);
        if (e == NULL || !grow(p, n, e))
            return NULL;
        if (cur(p)->type != PQ_T_RPAREN)
            return unexpected(p, NULL, NULL);
        n->end = cur(p)->pos + 1;
        adv(p);
        n->u.paren = e;
        n->type = e->type;
        return n;
    }
    case PQ_T_LBRACE:
        return parse_selector(p, NULL);
    case PQ_T_IDENT:
        if (peek_tok(p, 1)->type == PQ_T_LPAREN)
            return parse_call(p);
        return parse_selector(p, t);
    case PQ_T_AGG: {
        enum pq_tok nx = peek_tok(p, 1)->type;
        /* otherwise the word is a metric name (`sum + 1`, `sum{a="b"}`);
         * `sum foo` then fails on `foo` as Prometheus reports it */
        if (nx == PQ_T_LPAREN || nx == PQ_T_BY || nx == PQ_T_WITHOUT)
            return parse_aggregate(p);
        return parse_selector(p, t);
    }
    default:
        if (is_metric_identifier(t->type))
            return parse_selector(p, t);
        return unexpected(p, NULL, NULL);
    }
}

static struct gw_pq_node *parse_postfix(struct parser *p, struct gw_pq_node *e)
{
    while (e != NULL) {
        switch (cur(p)->type) {
        case PQ_T_LBRACKET:
            e = parse_bracket(p, e);
            break;
        case PQ_T_OFFSET:
            e = parse_offset(p, e);
            break;
        case PQ_T_AT:
            e = parse_at(p, e);
            break;
        default:
            return e;
        }
    }
    return NULL;
}

static struct gw_pq_node *parse_unary(struct parser *p)
{
    const struct pq_token *t = cur(p);
    if (t->type != PQ_T_ADD && t->type != PQ_T_SUB)
        return parse_postfix(p, parse_primary(p));
    uint32_t pos = t->pos;
    int neg = t->type == PQ_T_SUB;
    adv(p);
    struct gw_pq_node *e = parse_expr(p, PREC_POW);
    if (e == NULL)
        return NULL;
    if (e->kind == GW_PQ_NUMBER) {
        if (neg)
            e->u.number = -e->u.number;
        e->pos = pos;
        return e;
    }
    struct gw_pq_node *n = new_node(p, GW_PQ_UNARY, pos, e->end);
    if (n == NULL || !grow(p, n, e))
        return NULL;
    n->u.unary.op = neg ? GW_PQ_OP_SUB : GW_PQ_OP_ADD;
    n->u.unary.expr = e;
    n->type = e->type;
    return n;
}

static struct gw_pq_node *parse_binary_rest(struct parser *p, struct gw_pq_node *lhs,
                                            int min_prec)
{
    while (lhs != NULL) {
        const struct binop *bo = binop_of(cur(p)->type);
        if (bo == NULL || bo->prec < min_prec)
            break;
        adv(p);
        struct gw_pq_vmatch *vm = gw_arena_calloc(p->a, 1, sizeof *vm);
        struct gw_pq_node *n = new_node(p, GW_PQ_BINARY, lhs->pos, lhs->end);
        if (vm == NULL || n == NULL)
            return oom(p);
        vm->card = GW_PQ_CARD_ONE_TO_ONE;
        if (cur(p)->type == PQ_T_BOOL) {
            n->u.bin.return_bool = 1;
            adv(p);
        }
        if (cur(p)->type == PQ_T_ON || cur(p)->type == PQ_T_IGNORING) {
            vm->on = cur(p)->type == PQ_T_ON;
            vm->on_given = 1;
            adv(p);
            if (!parse_grouping(p, &vm->labels, &vm->n_labels))
                return NULL;
            enum pq_tok g = cur(p)->type;
            if (g == PQ_T_GROUP_LEFT || g == PQ_T_GROUP_RIGHT) {
                vm->card = g == PQ_T_GROUP_LEFT ? GW_PQ_CARD_MANY_TO_ONE : GW_PQ_CARD_ONE_TO_MANY;
                adv(p);
                if (cur(p)->type == PQ_T_LPAREN &&
                    !parse_grouping(p, &vm->include, &vm->n_include))
                    return NULL;
            }
        }
        struct gw_pq_node *rhs = parse_expr(p, bo->op == GW_PQ_OP_POW ? bo->prec : bo->prec + 1);
        if (rhs == NULL || !grow(p, n, lhs) || !grow(p, n, rhs))
            return NULL;
        n->end = rhs->end;
        n->u.bin.op = bo->op;
        n->u.bin.lhs = lhs;
        n->u.bin.rhs = rhs;
        n->u.bin.vm = vm;
        n->type = (lhs->type == GW_PQ_T_SCALAR && rhs->type == GW_PQ_T_SCALAR) ? GW_PQ_T_SCALAR
                                                                              : GW_PQ_T_VECTOR;
        lhs = n;
    }
    return lhs;
}

static struct gw_pq_node *parse_expr(struct parser *p, int min_prec)
{
    if (++p->depth > GW_PQ_MAX_DEPTH) {
        perr(p, cur(p)->pos, "expression nesting too deep (more than %d levels)", GW_PQ_MAX_DEPTH);
        return NULL;
    }
    struct gw_pq_node *e = parse_binary_rest(p, parse_unary(p), min_prec);
    p->depth--;
    return e;
}

/* -------------------------------------------------------- type checking */

static const char *doc_type(enum gw_pq_type t)
{
    switch (t) {
    case GW_PQ_T_VECTOR: return "instant vector";
    case GW_PQ_T_MATRIX: return "range vector";
    default: return gw_pq_type_name(t);
    }
}

static enum gw_pq_type check(struct parser *p, struct gw_pq_node *n);

static void expect_type(struct parser *p, struct gw_pq_node *n, enum gw_pq_type want,
                        const char *ctx)
{
    enum gw_pq_type t = check(p, n);
    if (p->rc == GW_OK && t != want)
        perr(p, n->pos, "expected type %s in %s, got %s", doc_type(want), ctx, doc_type(t));
}

static void check_selector(struct parser *p, struct gw_pq_node *n)
{
    const struct gw_matcher *ms = n->u.sel.matchers;
    size_t nm = n->u.sel.n_matchers;
    if (n->u.sel.name != NULL) {
        for (size_t k = 1; k < nm; k++) {
            if (strcmp(ms[k].name, "__name__") == 0) {
                struct gw_buf qa, qv;
                gw_buf_init(&qa, 512);
                gw_buf_init(&qv, 512);
                if (pq_quote(&qa, n->u.sel.name, strlen(n->u.sel.name), 64) == GW_OK &&
                    pq_quote(&qv, ms[k].value, ms[k].value_len, 64) == GW_OK)
                    perr(p, n->pos, "metric name must not be set twice: %.*s or %.*s",
                         (int)qa.len, (const char *)qa.data, (int)qv.len, (const char *)qv.data);
                else
                    oom(p);
                gw_buf_free(&qa);
                gw_buf_free(&qv);
                return;
            }
        }
        return;
    }
    for (size_t k = 0; k < nm; k++)
        if (!gw_matcher_matches_empty(&ms[k]))
            return;
    perr(p, n->pos, "vector selector must contain at least one non-empty matcher");
}

/* The operator's position: the first non-space byte after the lhs. */
static uint32_t op_pos(struct parser *p, const struct gw_pq_node *n)
{
    uint32_t k = n->u.bin.lhs->end;
    while (k < p->len && (p->q[k] == ' ' || p->q[k] == '\t' || p->q[k] == '\n' || p->q[k] == '\r'))
        k++;
    return k;
}

static enum gw_pq_type check(struct parser *p, struct gw_pq_node *n)
{
    if (p->rc != GW_OK)
        return n->type;
    switch (n->kind) {
    case GW_PQ_NUMBER:
    case GW_PQ_STRING_LIT:
        break;
    case GW_PQ_VECTOR_SEL:
    case GW_PQ_MATRIX_SEL:
        check_selector(p, n);
        break;
    case GW_PQ_PAREN:
        check(p, n->u.paren);
        break;
    case GW_PQ_UNARY: {
        enum gw_pq_type t = check(p, n->u.unary.expr);
        if (p->rc == GW_OK && t != GW_PQ_T_SCALAR && t != GW_PQ_T_VECTOR)
            perr(p, n->pos,
                 "unary expression only allowed on expressions of type scalar or instant vector, got \"%s\"",
                 doc_type(t));
        break;
    }
    case GW_PQ_SUBQUERY: {
        enum gw_pq_type t = check(p, n->u.sub.expr);
        if (p->rc == GW_OK && t != GW_PQ_T_VECTOR)
            perr(p, n->pos, "subquery is only allowed on instant vector, got %s instead",
                 gw_pq_type_name(t));
        break;
    }
    case GW_PQ_AGGREGATE:
        expect_type(p, n->u.agg.expr, GW_PQ_T_VECTOR, "aggregation expression");
        if (n->u.agg.op == GW_PQ_AGG_COUNT_VALUES)
            expect_type(p, n->u.agg.param, GW_PQ_T_STRING, "aggregation parameter");
        else if (agg_has_param(n->u.agg.op))
            expect_type(p, n->u.agg.param, GW_PQ_T_SCALAR, "aggregation parameter");
        break;
    case GW_PQ_CALL: {
        const struct gw_pq_func *f = n->u.call.func;
        size_t na = n->u.call.n_args, nargs = (size_t)f->n_args;
        if (f->variadic == 0) {
            if (nargs != na) {
                perr(p, n->pos, "expected %zu argument(s) in call to \"%s\", got %zu", nargs,
                     f->name, na);
                break;
            }
        } else {
            size_t min = nargs - 1;
            if (min > na) {
                perr(p, n->pos, "expected at least %zu argument(s) in call to \"%s\", got %zu",
                     min, f->name, na);
                break;
            }
            if (f->variadic > 0 && min + (size_t)f->variadic < na) {
                perr(p, n->pos, "expected at most %zu argument(s) in call to \"%s\", got %zu",
                     min + (size_t)f->variadic, f->name, na);
                break;
            }
        }
        char ctx[96];
        snprintf(ctx, sizeof ctx, "call to function \"%s\"", f->name);
        for (size_t k = 0; k < na && p->rc == GW_OK; k++) {
            size_t ti = k;
            if (ti >= nargs) {
                if (f->variadic == 0)
                    break;
                ti = nargs - 1;
            }
            expect_type(p, n->u.call.args[k], f->arg_types[ti], ctx);
        }
        break;
    }
    case GW_PQ_BINARY: {
        enum gw_pq_type lt = check(p, n->u.bin.lhs);
        enum gw_pq_type rt = check(p, n->u.bin.rhs);
        if (p->rc != GW_OK)
            break;
        enum gw_pq_op op = n->u.bin.op;
        struct gw_pq_vmatch *vm = n->u.bin.vm;
        if (n->u.bin.return_bool && !gw_pq_op_is_comparison(op)) {
            perr(p, op_pos(p, n), "bool modifier can only be used on comparison operators");
            break;
        }
        if (gw_pq_op_is_comparison(op) && !n->u.bin.return_bool && lt == GW_PQ_T_SCALAR &&
            rt == GW_PQ_T_SCALAR) {
            perr(p, op_pos(p, n), "comparisons between scalars must use BOOL modifier");
            break;
        }
        if (gw_pq_op_is_set(op) && vm->card == GW_PQ_CARD_ONE_TO_ONE)
            vm->card = GW_PQ_CARD_MANY_TO_MANY;
        if (vm->on) {
            for (size_t a = 0; a < vm->n_labels; a++)
                for (size_t b = 0; b < vm->n_include; b++)
                    if (strcmp(vm->labels[a], vm->include[b]) == 0) {
                        perr(p, op_pos(p, n),
                             "label \"%s\" must not occur in ON and GROUP clause at once",
                             vm->labels[a]);
                        return n->type;
                    }
        }
        if (lt != GW_PQ_T_SCALAR && lt != GW_PQ_T_VECTOR) {
            perr(p, n->u.bin.lhs->pos,
                 "binary expression must contain only scalar and instant vector types");
            break;
        }
        if (rt != GW_PQ_T_SCALAR && rt != GW_PQ_T_VECTOR) {
            perr(p, n->u.bin.rhs->pos,
                 "binary expression must contain only scalar and instant vector types");
            break;
        }
        if (lt != GW_PQ_T_VECTOR || rt != GW_PQ_T_VECTOR) {
            if (vm->n_labels > 0) {
                perr(p, n->pos, "vector matching only allowed between instant vectors");
                break;
            }
            n->u.bin.vm = NULL;
        } else if (gw_pq_op_is_set(op)) {
            if (vm->card == GW_PQ_CARD_ONE_TO_MANY || vm->card == GW_PQ_CARD_MANY_TO_ONE) {
                perr(p, n->pos, "no grouping allowed for \"%s\" operation", gw_pq_op_name(op));
                break;
            }
        }
        if ((lt == GW_PQ_T_SCALAR || rt == GW_PQ_T_SCALAR) && gw_pq_op_is_set(op))
            perr(p, n->pos, "set operator \"%s\" not allowed in binary scalar expression",
                 gw_pq_op_name(op));
        break;
    }
    }
    return n->type;
}

/* --------------------------------------------------------------- API */

void gw_pq_expr_free(struct gw_pq_expr *e)
{
    if (e == NULL)
        return;
    struct pq_expr_priv *x = (struct pq_expr_priv *)(void *)e;
    for (struct sel_list *s = x->sels; s != NULL; s = s->next)
        for (size_t k = 0; k < s->n; k++)
            gw_matcher_free(&s->ms[k]);
    gw_arena_free(&x->e.arena);
    free(x);
}

int gw_pq_parse(const char *q, size_t len, const struct gw_pq_parse_opts *opts,
                struct gw_pq_expr **out, struct gw_error *err)
{
    struct parser p;
    memset(&p, 0, sizeof p);
    if (out == NULL || (q == NULL && len > 0))
        return gw_error_set(err, GW_EINVAL, "invalid arguments to the query parser");
    if (len > GW_PQ_MAX_QUERY_BYTES)
        return gw_error_set(err, GW_ETOOLARGE, "query is %zu bytes, more than the limit of %u",
                            len, (unsigned)GW_PQ_MAX_QUERY_BYTES);
    if (q == NULL)
        q = "";
    struct pq_expr_priv *x = calloc(1, sizeof *x);
    if (x == NULL)
        return gw_error_set(err, GW_ENOMEM, "out of memory parsing query");
    gw_arena_init(&x->e.arena, 16384, PQ_ARENA_MAX);
    p.q = q;
    p.len = len;
    p.a = &x->e.arena;
    p.x = x;
    p.err = err;
    p.experimental = opts ? opts->experimental : 0;
    p.compat = opts && opts->compat == 2 ? 2 : 3;

    int rc = pq_lex(q, len, &p.ts);
    if (rc != GW_OK) {
        set_err(&p, rc, 0, "out of memory parsing query");
        goto fail;
    }
    x->e.text = arena_strndup(&p, q, len);
    x->e.text_len = len;
    if (x->e.text == NULL)
        goto fail;
    if (cur(&p)->type == PQ_T_EOF) {
        perr(&p, 0, "no expression found in input");
        goto fail;
    }
    struct gw_pq_node *root = parse_expr(&p, 0);
    if (root == NULL)
        goto fail;
    if (cur(&p)->type != PQ_T_EOF) {
        unexpected(&p, NULL, NULL);
        goto fail;
    }
    check(&p, root);
    if (p.rc != GW_OK)
        goto fail;
    x->e.root = root;
    pq_tokens_free(&p.ts);
    *out = &x->e;
    return GW_OK;
fail:
    if (p.rc == GW_OK)
        set_err(&p, GW_ENOMEM, 0, "out of memory parsing query");
    pq_tokens_free(&p.ts);
    gw_pq_expr_free(&x->e);
    return p.rc;
}
