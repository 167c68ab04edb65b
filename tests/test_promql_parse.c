/* test_promql_parse.c - the PromQL lexer, parser, type checker and
 * printers: valid queries with their canonical printed form and result
 * type, invalid queries with Prometheus' error message and position,
 * print/parse round trips, every function's arity and argument types,
 * precedence and associativity in the tree, the tree's fields, the
 * prettified form, and hostile input (deep nesting, huge numbers,
 * invalid UTF-8, NUL bytes, unterminated strings, random bytes). The
 * tables of valid and invalid queries are data files (tests/data/promql/
 * parse_ok.txt, parse_err.txt; format at load_cases below). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/promql.h"

struct ok_case {
    const char *q;
    const char *printed;
    enum gw_pq_type type;
};

struct err_case {
    const char *q;
    const char *err;
};

/* The case tables are data: tests/data/promql/parse_ok.txt and
 * parse_err.txt (GW_PROMQL_TESTDATA, from CMake), one case per line,
 * fields separated by a tab, `#` lines and blank lines ignored. Inside a
 * field `\\`, `\t`, `\n` and `\xHH` stand for a backslash, a tab, a
 * newline and any byte. parse_ok.txt: query, printed form, type (scalar,
 * vector, matrix or string); parse_err.txt: query, error message. A
 * missing, unreadable or malformed file fails the test. */
static const struct ok_case *ok_cases;
static size_t n_ok_cases;
static const struct err_case *err_cases;
static size_t n_err_cases;

/* Unescapes field [p, end) into a NUL-terminated malloc'd string; NULL
 * when an escape is malformed. */
static char *case_field(const char *p, const char *end)
{
    char *out = malloc((size_t)(end - p) + 1);
    assert_non_null(out);
    size_t n = 0;
    while (p < end) {
        if (*p != '\\') {
            out[n++] = *p++;
            continue;
        }
        if (end - p < 2)
            goto bad;
        char c = p[1];
        p += 2;
        if (c == '\\') {
            out[n++] = '\\';
        } else if (c == 't') {
            out[n++] = '\t';
        } else if (c == 'n') {
            out[n++] = '\n';
        } else if (c == 'x' && end - p >= 2 && isxdigit((unsigned char)p[0]) && isxdigit((unsigned char)p[1])) {
            char hex[3] = { p[0], p[1], 0 };
            out[n++] = (char)strtoul(hex, NULL, 16);
            p += 2;
        } else {
            goto bad;
        }
    }
    out[n] = 0;
    return out;
bad:
    free(out);
    return NULL;
}

/* Splits the lines of tests/data/promql/<file> into nf fields each; calls
 * add(fields, path, line) per case. Returns the number of cases. */
static size_t load_case_file(const char *file, size_t nf, void (*add)(char **f, const char *path, int line))
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", GW_PROMQL_TESTDATA, file);
    FILE *fp = fopen(path, "rb");
    if (!fp)
        fail_msg("cannot open PromQL parse cases %s (errno %d)", path, errno);
    char *line = NULL;
    size_t cap = 0, count = 0;
    ssize_t len;
    int lineno = 0;
    while ((len = getline(&line, &cap, fp)) >= 0) {
        lineno++;
        if (len > 0 && line[len - 1] == '\n')
            line[--len] = 0;
        if (len == 0 || line[0] == '#')
            continue;
        char *f[4] = { 0 };
        const char *p = line, *end = line + len;
        for (size_t i = 0; i < nf; i++) {
            const char *tab = i + 1 < nf ? memchr(p, '\t', (size_t)(end - p)) : end;
            if (!tab || (i + 1 == nf && memchr(p, '\t', (size_t)(end - p))))
                fail_msg("%s:%d: want %zu tab-separated fields", path, lineno, nf);
            f[i] = case_field(p, tab);
            if (!f[i])
                fail_msg("%s:%d: bad escape in field %zu", path, lineno, i + 1);
            p = tab + 1;
        }
        add(f, path, lineno);
        count++;
    }
    int bad = ferror(fp);
    free(line);
    fclose(fp);
    if (bad)
        fail_msg("cannot read PromQL parse cases %s", path);
    if (count == 0)
        fail_msg("%s holds no cases", path);
    return count;
}

static struct ok_case *ok_v;
static size_t ok_n, ok_cap;
static struct err_case *err_v;
static size_t err_n, err_cap;

static void add_ok(char **f, const char *path, int line)
{
    static const struct { const char *name; enum gw_pq_type t; } types[] = {
        { "scalar", GW_PQ_T_SCALAR }, { "vector", GW_PQ_T_VECTOR },
        { "matrix", GW_PQ_T_MATRIX }, { "string", GW_PQ_T_STRING },
    };
    size_t k = 0;
    while (k < sizeof types / sizeof types[0] && strcmp(types[k].name, f[2]) != 0)
        k++;
    if (k == sizeof types / sizeof types[0])
        fail_msg("%s:%d: unknown type '%s'", path, line, f[2]);
    if (ok_n == ok_cap) {
        ok_cap = ok_cap ? 2 * ok_cap : 256;
        ok_v = realloc(ok_v, ok_cap * sizeof *ok_v);
        assert_non_null(ok_v);
    }
    ok_v[ok_n++] = (struct ok_case){ .q = f[0], .printed = f[1], .type = types[k].t };
    free(f[2]);
}

static void add_err(char **f, const char *path, int line)
{
    (void)path;
    (void)line;
    if (err_n == err_cap) {
        err_cap = err_cap ? 2 * err_cap : 256;
        err_v = realloc(err_v, err_cap * sizeof *err_v);
        assert_non_null(err_v);
    }
    err_v[err_n++] = (struct err_case){ .q = f[0], .err = f[1] };
}

/* Loads both tables once (they stay for the life of the process). */
static void load_cases(void)
{
    if (ok_cases && err_cases)
        return;
    ok_n = err_n = 0;
    n_ok_cases = load_case_file("parse_ok.txt", 3, add_ok);
    ok_cases = ok_v;
    n_err_cases = load_case_file("parse_err.txt", 2, add_err);
    err_cases = err_v;
}

/* ------------------------------------------------------------ helpers */

static struct gw_pq_expr *parse_opts(const char *q, size_t len, int experimental)
{
    struct gw_pq_expr *e = NULL;
    struct gw_error err;
    struct gw_pq_parse_opts o = { .experimental = experimental };
    gw_error_clear(&err);
    int rc = gw_pq_parse(q, len, &o, &e, &err);
    if (rc != GW_OK)
        fail_msg("parse of '%s' failed: rc=%d %s", q, rc, err.msg);
    return e;
}

static struct gw_pq_expr *parse_ok(const char *q) { return parse_opts(q, strlen(q), 0); }

/* Parses q, prints it into a NUL-terminated malloc'd string. */
static char *print_str(const struct gw_pq_node *n, int pretty)
{
    struct gw_buf b;
    gw_buf_init(&b, 0);
    int rc = pretty ? gw_pq_format(n, &b) : gw_pq_print(n, &b);
    assert_int_equal(rc, GW_OK);
    assert_int_equal(gw_buf_putc(&b, 0), GW_OK);
    size_t len;
    return (char *)gw_buf_steal(&b, &len);
}

static char *reprint(const char *q)
{
    struct gw_pq_expr *e = parse_ok(q);
    char *s = print_str(e->root, 0);
    gw_pq_expr_free(e);
    return s;
}

static int parse_err(const char *q, size_t len, struct gw_error *err)
{
    struct gw_pq_expr *e = (struct gw_pq_expr *)(uintptr_t)1;
    gw_error_clear(err);
    int rc = gw_pq_parse(q, len, NULL, &e, err);
    if (rc == GW_OK) {
        gw_pq_expr_free(e);
        return rc;
    }
    /* out-param untouched on failure */
    assert_ptr_equal(e, (struct gw_pq_expr *)(uintptr_t)1);
    return rc;
}

/* -------------------------------------------------------------- tables */

static void test_promql_parse_valid_cases(void **state)
{
    (void)state;
    load_cases();
    for (size_t i = 0; i < n_ok_cases; i++) {
        const struct ok_case *c = &ok_cases[i];
        struct gw_pq_expr *e = parse_ok(c->q);
        char *s = print_str(e->root, 0);
        if (strcmp(s, c->printed) != 0)
            fail_msg("'%s' printed as '%s', want '%s'", c->q, s, c->printed);
        if (e->root->type != c->type)
            fail_msg("'%s' has type %s, want %s", c->q, gw_pq_type_name(e->root->type),
                     gw_pq_type_name(c->type));
        assert_int_equal(e->text_len, strlen(c->q));
        assert_memory_equal(e->text, c->q, e->text_len);
        free(s);
        gw_pq_expr_free(e);
    }
}

static void test_promql_parse_invalid_cases(void **state)
{
    (void)state;
    load_cases();
    for (size_t i = 0; i < n_err_cases; i++) {
        const struct err_case *c = &err_cases[i];
        struct gw_error err;
        int rc = parse_err(c->q, strlen(c->q), &err);
        if (rc != GW_EPARSE)
            fail_msg("'%s': rc=%d, want GW_EPARSE", c->q, rc);
        assert_int_equal(err.code, GW_EPARSE);
        if (strcmp(err.msg, c->err) != 0)
            fail_msg("'%s': error '%s', want '%s'", c->q, err.msg, c->err);
    }
}

static void test_promql_parse_round_trip(void **state)
{
    (void)state;
    load_cases();
    for (size_t i = 0; i < n_ok_cases; i++) {
        char *p1 = reprint(ok_cases[i].q);
        char *p2 = reprint(p1);
        if (strcmp(p1, p2) != 0)
            fail_msg("'%s': '%s' reprints as '%s'", ok_cases[i].q, p1, p2);
        /* the pretty form parses back to the same tree */
        struct gw_pq_expr *e = parse_ok(p1);
        char *pretty = print_str(e->root, 1);
        char *p3 = reprint(pretty);
        if (strcmp(p1, p3) != 0)
            fail_msg("'%s': pretty '%s' reprints as '%s'", ok_cases[i].q, pretty, p3);
        free(p1);
        free(p2);
        free(p3);
        free(pretty);
        gw_pq_expr_free(e);
    }
}

static void test_promql_parse_multiline_and_comments(void **state)
{
    (void)state;
    char *s = reprint("sum(\n  rate(foo[5m]) # per second\n) # total\n");
    assert_string_equal(s, "sum(rate(foo[5m]))");
    free(s);
    s = reprint("foo{a=\"b\", # comment inside braces\n c=\"d\"}");
    assert_string_equal(s, "foo{a=\"b\",c=\"d\"}");
    free(s);
    s = reprint("foo # \"not a string");
    assert_string_equal(s, "foo");
    free(s);
    s = reprint("`multi\nline`");
    assert_string_equal(s, "\"multi\\nline\"");
    free(s);

    struct gw_error err;
    const char *q = "sum(\n  rate(foo[5m])\n  bar)";
    assert_int_equal(parse_err(q, strlen(q), &err), GW_EPARSE);
    assert_string_equal(err.msg, "3:3: parse error: unexpected identifier \"bar\"");
    q = "foo +\n\n  )";
    assert_int_equal(parse_err(q, strlen(q), &err), GW_EPARSE);
    assert_string_equal(err.msg, "3:4: parse error: unexpected right parenthesis ')'");
    q = "# only a comment";
    assert_int_equal(parse_err(q, strlen(q), &err), GW_EPARSE);
    assert_string_equal(err.msg, "1:1: parse error: no expression found in input");
    q = "\"line\nbreak\"";
    assert_int_equal(parse_err(q, strlen(q), &err), GW_EPARSE);
    assert_string_equal(err.msg, "1:1: parse error: unterminated quoted string");
    q = "foo{a=\"b\" # c\n";
    assert_int_equal(parse_err(q, strlen(q), &err), GW_EPARSE);
    assert_string_equal(err.msg, "2:1: parse error: unexpected end of input inside braces");
    q = "   ";
    assert_int_equal(parse_err(q, strlen(q), &err), GW_EPARSE);
    assert_string_equal(err.msg, "1:1: parse error: no expression found in input");
    assert_int_equal(parse_err(NULL, 0, &err), GW_EPARSE);
}

/* -------------------------------------------------------- the tree */

static void test_promql_parse_precedence_tree(void **state)
{
    (void)state;
    struct gw_pq_expr *e = parse_ok("1 + 2 * 3");
    const struct gw_pq_node *r = e->root;
    assert_int_equal(r->kind, GW_PQ_BINARY);
    assert_int_equal(r->u.bin.op, GW_PQ_OP_ADD);
    assert_int_equal(r->u.bin.rhs->kind, GW_PQ_BINARY);
    assert_int_equal(r->u.bin.rhs->u.bin.op, GW_PQ_OP_MUL);
    assert_null(r->u.bin.vm); /* scalar operands: no vector matching */
    gw_pq_expr_free(e);

    e = parse_ok("2 ^ 3 ^ 2"); /* right-associative */
    r = e->root;
    assert_int_equal(r->u.bin.op, GW_PQ_OP_POW);
    assert_int_equal(r->u.bin.lhs->kind, GW_PQ_NUMBER);
    assert_int_equal(r->u.bin.rhs->kind, GW_PQ_BINARY);
    gw_pq_expr_free(e);

    e = parse_ok("1 - 2 - 3"); /* left-associative */
    r = e->root;
    assert_int_equal(r->u.bin.op, GW_PQ_OP_SUB);
    assert_int_equal(r->u.bin.lhs->kind, GW_PQ_BINARY);
    assert_true(r->u.bin.rhs->kind == GW_PQ_NUMBER && r->u.bin.rhs->u.number == 3);
    gw_pq_expr_free(e);

    e = parse_ok("-2 ^ 2"); /* unary minus binds looser than ^ */
    r = e->root;
    assert_int_equal(r->kind, GW_PQ_UNARY);
    assert_int_equal(r->u.unary.op, GW_PQ_OP_SUB);
    assert_int_equal(r->u.unary.expr->u.bin.op, GW_PQ_OP_POW);
    gw_pq_expr_free(e);

    e = parse_ok("-foo * 2"); /* ... and as tight as * */
    r = e->root;
    assert_int_equal(r->kind, GW_PQ_BINARY);
    assert_int_equal(r->u.bin.lhs->kind, GW_PQ_UNARY);
    gw_pq_expr_free(e);

    e = parse_ok("-1"); /* a sign on a literal folds into it */
    assert_int_equal(e->root->kind, GW_PQ_NUMBER);
    assert_true(e->root->u.number == -1.0);
    assert_int_equal(e->root->pos, 0);
    gw_pq_expr_free(e);

    e = parse_ok("a or b and c unless d");
    r = e->root;
    assert_int_equal(r->u.bin.op, GW_PQ_OP_OR);
    assert_int_equal(r->u.bin.rhs->u.bin.op, GW_PQ_OP_UNLESS);
    assert_int_equal(r->u.bin.rhs->u.bin.lhs->u.bin.op, GW_PQ_OP_AND);
    assert_non_null(r->u.bin.vm);
    assert_int_equal(r->u.bin.vm->card, GW_PQ_CARD_MANY_TO_MANY);
    gw_pq_expr_free(e);

    e = parse_ok("a > b + c * d ^ e");
    r = e->root;
    assert_int_equal(r->u.bin.op, GW_PQ_OP_GTR);
    assert_int_equal(r->u.bin.rhs->u.bin.op, GW_PQ_OP_ADD);
    assert_int_equal(r->u.bin.rhs->u.bin.rhs->u.bin.op, GW_PQ_OP_MUL);
    assert_int_equal(r->u.bin.rhs->u.bin.rhs->u.bin.rhs->u.bin.op, GW_PQ_OP_POW);
    gw_pq_expr_free(e);

    e = parse_ok("a atan2 b + c");
    assert_int_equal(e->root->u.bin.op, GW_PQ_OP_ADD);
    assert_int_equal(e->root->u.bin.lhs->u.bin.op, GW_PQ_OP_ATAN2);
    gw_pq_expr_free(e);

    e = parse_ok("a + b offset 5m"); /* offset binds to the nearest selector */
    assert_int_equal(e->root->u.bin.lhs->u.sel.offset_ms, 0);
    assert_int_equal(e->root->u.bin.rhs->u.sel.offset_ms, 300000);
    gw_pq_expr_free(e);
}

static void test_promql_parse_selector_fields(void **state)
{
    (void)state;
    struct gw_pq_expr *e = parse_ok("foo{a=\"b\", c!~\"d.*\"}[5m] offset -1m @ 1609746000.5");
    const struct gw_pq_node *r = e->root;
    assert_int_equal(r->kind, GW_PQ_MATRIX_SEL);
    assert_int_equal(r->type, GW_PQ_T_MATRIX);
    assert_string_equal(r->u.sel.name, "foo");
    assert_int_equal(r->u.sel.n_matchers, 3);
    assert_string_equal(r->u.sel.matchers[0].name, "__name__");
    assert_string_equal(r->u.sel.matchers[0].value, "foo");
    assert_string_equal(r->u.sel.matchers[1].name, "a");
    assert_int_equal(r->u.sel.matchers[1].type, GW_MATCH_EQ);
    assert_int_equal(r->u.sel.matchers[2].type, GW_MATCH_NRE);
    assert_non_null(r->u.sel.matchers[2].re);
    assert_false(gw_matcher_matches(&r->u.sel.matchers[2], "dx", 2));
    assert_true(gw_matcher_matches(&r->u.sel.matchers[2], "xd", 2));
    assert_int_equal(r->u.sel.range_ms, 300000);
    assert_int_equal(r->u.sel.offset_ms, -60000);
    assert_int_equal(r->u.sel.at, GW_PQ_AT_TIME);
    assert_int_equal(r->u.sel.at_ms, 1609746000500LL);
    assert_int_equal(r->pos, 0);
    gw_pq_expr_free(e);

    e = parse_ok("{\"my.metric\", \"a.b\"=\"x\"}");
    r = e->root;
    assert_null(r->u.sel.name);
    assert_int_equal(r->u.sel.n_matchers, 2);
    assert_string_equal(r->u.sel.matchers[0].name, "__name__");
    assert_string_equal(r->u.sel.matchers[0].value, "my.metric");
    assert_string_equal(r->u.sel.matchers[1].name, "a.b");
    gw_pq_expr_free(e);

    e = parse_ok("x[1h:5m] @ end() offset 10m");
    r = e->root;
    assert_int_equal(r->kind, GW_PQ_SUBQUERY);
    assert_int_equal(r->u.sub.range_ms, 3600000);
    assert_int_equal(r->u.sub.step_ms, 300000);
    assert_int_equal(r->u.sub.offset_ms, 600000);
    assert_int_equal(r->u.sub.at, GW_PQ_AT_END);
    assert_int_equal(r->u.sub.expr->kind, GW_PQ_VECTOR_SEL);
    gw_pq_expr_free(e);

    e = parse_ok("x[90s:]");
    assert_int_equal(e->root->u.sub.step_ms, 0);
    assert_int_equal(e->root->u.sub.range_ms, 90000);
    gw_pq_expr_free(e);

    e = parse_ok("x @ start()");
    assert_int_equal(e->root->u.sel.at, GW_PQ_AT_START);
    gw_pq_expr_free(e);

    e = parse_ok("\"a\\x41\\101\\u00e9\\U0001F600\\n\"");
    assert_int_equal(e->root->kind, GW_PQ_STRING_LIT);
    assert_int_equal(e->root->u.str.len, 10);
    assert_memory_equal(e->root->u.str.s, "aAA\xc3\xa9\xf0\x9f\x98\x80\n", 10);
    gw_pq_expr_free(e);

    e = parse_ok("\"\\xff\""); /* byte escapes may build invalid UTF-8 */
    assert_int_equal(e->root->u.str.len, 1);
    assert_int_equal((unsigned char)e->root->u.str.s[0], 0xff);
    char *s = print_str(e->root, 0);
    assert_string_equal(s, "\"\\xff\"");
    free(s);
    gw_pq_expr_free(e);
}

static void test_promql_parse_binary_and_aggregate_fields(void **state)
{
    (void)state;
    struct gw_pq_expr *e = parse_ok("a > bool on(x, y) group_left(z) b");
    const struct gw_pq_node *r = e->root;
    assert_int_equal(r->u.bin.op, GW_PQ_OP_GTR);
    assert_true(r->u.bin.return_bool);
    const struct gw_pq_vmatch *vm = r->u.bin.vm;
    assert_non_null(vm);
    assert_int_equal(vm->card, GW_PQ_CARD_MANY_TO_ONE);
    assert_true(vm->on);
    assert_true(vm->on_given);
    assert_int_equal(vm->n_labels, 2);
    assert_string_equal(vm->labels[0], "x");
    assert_string_equal(vm->labels[1], "y");
    assert_int_equal(vm->n_include, 1);
    assert_string_equal(vm->include[0], "z");
    gw_pq_expr_free(e);

    e = parse_ok("a / ignoring(i) group_right b");
    vm = e->root->u.bin.vm;
    assert_int_equal(vm->card, GW_PQ_CARD_ONE_TO_MANY);
    assert_false(vm->on);
    assert_true(vm->on_given);
    assert_int_equal(vm->n_include, 0);
    gw_pq_expr_free(e);

    e = parse_ok("a - b");
    vm = e->root->u.bin.vm;
    assert_non_null(vm);
    assert_int_equal(vm->card, GW_PQ_CARD_ONE_TO_ONE);
    assert_false(vm->on_given);
    gw_pq_expr_free(e);

    e = parse_ok("a * 2");
    assert_null(e->root->u.bin.vm);
    assert_int_equal(e->root->type, GW_PQ_T_VECTOR);
    gw_pq_expr_free(e);

    e = parse_ok("topk(3, x) without (a, b)");
    r = e->root;
    assert_int_equal(r->kind, GW_PQ_AGGREGATE);
    assert_int_equal(r->u.agg.op, GW_PQ_AGG_TOPK);
    assert_true(r->u.agg.without);
    assert_true(r->u.agg.by_given);
    assert_true(r->u.agg.grouping_after);
    assert_int_equal(r->u.agg.n_grouping, 2);
    assert_string_equal(r->u.agg.grouping[1], "b");
    assert_int_equal(r->u.agg.param->kind, GW_PQ_NUMBER);
    assert_true(r->u.agg.param->u.number == 3);
    assert_int_equal(r->u.agg.expr->kind, GW_PQ_VECTOR_SEL);
    gw_pq_expr_free(e);

    e = parse_ok("sum by () (x)");
    r = e->root;
    assert_true(r->u.agg.by_given);
    assert_false(r->u.agg.without);
    assert_int_equal(r->u.agg.n_grouping, 0);
    assert_false(r->u.agg.grouping_after);
    assert_null(r->u.agg.param);
    gw_pq_expr_free(e);

    e = parse_ok("count_values(\"v\", x)");
    assert_int_equal(e->root->u.agg.param->kind, GW_PQ_STRING_LIT);
    assert_string_equal(e->root->u.agg.param->u.str.s, "v");
    gw_pq_expr_free(e);

    e = parse_ok("(x)");
    assert_int_equal(e->root->kind, GW_PQ_PAREN);
    assert_int_equal(e->root->u.paren->kind, GW_PQ_VECTOR_SEL);
    assert_int_equal(e->root->end, 3);
    gw_pq_expr_free(e);

    e = parse_ok("rate(x[5m])");
    assert_int_equal(e->root->u.call.func->id, GW_PQ_F_RATE);
    assert_int_equal(e->root->u.call.n_args, 1);
    assert_int_equal(e->root->pos, 0);
    assert_int_equal(e->root->end, 11);
    gw_pq_expr_free(e);
}

static void test_promql_parse_numbers(void **state)
{
    (void)state;
    static const struct {
        const char *q;
        double v;
    } cases[] = {
        { "0x10", 16 },      { "0XfF", 255 },      { "1_000_000", 1e6 }, { "1e-3", 0.001 },
        { ".5e1", 5 },       { "010", 8 },         { "0", 0 },           { "1.25", 1.25 },
        { "5m", 300 },       { "1h30m", 5400 },    { "10ms", 0.01 },     { "1w", 604800 },
        { "1y", 31536000 },  { "-0x10", -16 },     { "9223372036854775807", 9223372036854775807.0 },
        { "99999999999999999999", 1e20 },          { "1.7976931348623157e308", 1.7976931348623157e308 },
        { "4.9e-324", 4.9e-324 },                  { "2ms", 0.002 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct gw_pq_expr *e = parse_ok(cases[i].q);
        assert_int_equal(e->root->kind, GW_PQ_NUMBER);
        if (e->root->u.number != cases[i].v)
            fail_msg("%s = %.17g, want %.17g", cases[i].q, e->root->u.number, cases[i].v);
        gw_pq_expr_free(e);
    }
    struct gw_pq_expr *e = parse_ok("-Inf");
    assert_true(isinf(e->root->u.number) && e->root->u.number < 0);
    gw_pq_expr_free(e);
    e = parse_ok("NaN");
    assert_true(isnan(e->root->u.number));
    gw_pq_expr_free(e);

    /* printing follows Go's %v */
    static const struct {
        const char *q, *p;
    } pr[] = {
        { "0.1", "0.1" },         { "1e20", "1e+20" },     { "123456", "123456" },
        { "1234567", "1.234567e+06" }, { "0.000123", "0.000123" }, { "1.5e-7", "1.5e-07" },
        { "1e100", "1e+100" },    { "3.14159", "3.14159" }, { "4.9e-324", "5e-324" },
        { "0.3", "0.3" },         { "1/3", "1 / 3" },
    };
    for (size_t i = 0; i < sizeof pr / sizeof pr[0]; i++) {
        char *s = reprint(pr[i].q);
        if (strcmp(s, pr[i].p) != 0)
            fail_msg("%s printed as %s, want %s", pr[i].q, s, pr[i].p);
        free(s);
    }
}

/* -------------------------------------------------------- functions */

static const char *arg_for(enum gw_pq_type t)
{
    switch (t) {
    case GW_PQ_T_SCALAR: return "1";
    case GW_PQ_T_VECTOR: return "v";
    case GW_PQ_T_MATRIX: return "m[5m]";
    case GW_PQ_T_STRING: return "\"s\"";
    default: return "?";
    }
}

static void build_call(char *buf, size_t cap, const struct gw_pq_func *f, int nargs)
{
    size_t o = (size_t)snprintf(buf, cap, "%s(", f->name);
    for (int k = 0; k < nargs; k++) {
        int ti = k < f->n_args ? k : f->n_args - 1;
        const char *a = ti < 0 ? "1" : arg_for(f->arg_types[ti]);
        o += (size_t)snprintf(buf + o, cap - o, "%s%s", k ? ", " : "", a);
    }
    snprintf(buf + o, cap - o, ")");
}

static void test_promql_parse_every_function(void **state)
{
    (void)state;
    char q[512], want[600];
    for (int id = 0; id < GW_PQ_F_COUNT_; id++) {
        const struct gw_pq_func *f = gw_pq_func_by_id((enum gw_pq_func_id)id);
        assert_non_null(f);
        assert_int_equal(f->id, id);
        assert_ptr_equal(gw_pq_func_lookup(f->name, strlen(f->name)), f);
        int min = f->variadic ? f->n_args - 1 : f->n_args;
        int max = f->variadic > 0 ? min + f->variadic : f->variadic < 0 ? f->n_args + 2 : f->n_args;
        for (int n = min; n <= max; n++) {
            build_call(q, sizeof q, f, n);
            struct gw_pq_expr *e = parse_opts(q, strlen(q), 1);
            assert_int_equal(e->root->kind, GW_PQ_CALL);
            assert_ptr_equal(e->root->u.call.func, f);
            assert_int_equal(e->root->u.call.n_args, (size_t)n);
            assert_int_equal(e->root->type, f->ret);
            char *s = print_str(e->root, 0);
            assert_string_equal(s, q);
            free(s);
            gw_pq_expr_free(e);
            /* experimental ones are refused without the option */
            struct gw_error err;
            int rc = parse_err(q, strlen(q), &err);
            if (f->experimental) {
                assert_int_equal(rc, GW_EPARSE);
                snprintf(want, sizeof want, "1:1: parse error: function \"%s\" is not enabled", f->name);
                assert_string_equal(err.msg, want);
            } else {
                assert_int_equal(rc, GW_OK);
            }
        }
        /* one argument too many (bounded ones) and one too few */
        if (f->variadic >= 0) {
            build_call(q, sizeof q, f, max + 1);
            struct gw_error err;
            struct gw_pq_expr *e = NULL;
            struct gw_pq_parse_opts o = { .experimental = 1 };
            assert_int_equal(gw_pq_parse(q, strlen(q), &o, &e, &err), GW_EPARSE);
            if (f->variadic == 0)
                snprintf(want, sizeof want,
                         "1:1: parse error: expected %d argument(s) in call to \"%s\", got %d",
                         f->n_args, f->name, max + 1);
            else
                snprintf(want, sizeof want,
                         "1:1: parse error: expected at most %d argument(s) in call to \"%s\", got %d",
                         max, f->name, max + 1);
            assert_string_equal(err.msg, want);
        }
        if (min > 0) {
            build_call(q, sizeof q, f, min - 1);
            struct gw_error err;
            struct gw_pq_expr *e = NULL;
            struct gw_pq_parse_opts o = { .experimental = 1 };
            assert_int_equal(gw_pq_parse(q, strlen(q), &o, &e, &err), GW_EPARSE);
            assert_non_null(strstr(err.msg, "argument(s) in call to"));
        }
        /* a wrong type for the first argument */
        if (f->n_args > 0) {
            snprintf(q, sizeof q, "%s(%s", f->name,
                     f->arg_types[0] == GW_PQ_T_STRING ? "1" : "\"s\"");
            size_t o = strlen(q);
            for (int k = 1; k < min; k++)
                o += (size_t)snprintf(q + o, sizeof q - o, ", %s", arg_for(f->arg_types[k]));
            snprintf(q + o, sizeof q - o, ")");
            struct gw_error err;
            struct gw_pq_expr *e = NULL;
            struct gw_pq_parse_opts op = { .experimental = 1 };
            assert_int_equal(gw_pq_parse(q, strlen(q), &op, &e, &err), GW_EPARSE);
            assert_non_null(strstr(err.msg, "expected type"));
        }
    }
    assert_null(gw_pq_func_lookup("nope", 4));
    assert_null(gw_pq_func_lookup("rat", 3));
    assert_null(gw_pq_func_by_id(GW_PQ_F_COUNT_));
    assert_int_equal(gw_pq_func_lookup("rate", 4)->id, GW_PQ_F_RATE);
    assert_int_equal(gw_pq_func_lookup("label_join", 10)->variadic, -1);
    assert_int_equal(gw_pq_func_lookup("round", 5)->variadic, 1);
    assert_true(gw_pq_func_lookup("sort_by_label", 13)->experimental);
    assert_false(gw_pq_func_lookup("histogram_quantile", 18)->experimental);
}

static void test_promql_parse_names(void **state)
{
    (void)state;
    assert_string_equal(gw_pq_type_name(GW_PQ_T_SCALAR), "scalar");
    assert_string_equal(gw_pq_type_name(GW_PQ_T_VECTOR), "vector");
    assert_string_equal(gw_pq_type_name(GW_PQ_T_MATRIX), "matrix");
    assert_string_equal(gw_pq_type_name(GW_PQ_T_STRING), "string");
    assert_string_equal(gw_pq_op_name(GW_PQ_OP_ATAN2), "atan2");
    assert_string_equal(gw_pq_op_name(GW_PQ_OP_UNLESS), "unless");
    assert_string_equal(gw_pq_op_name(GW_PQ_OP_GTE), ">=");
    assert_true(gw_pq_op_is_comparison(GW_PQ_OP_NEQ));
    assert_false(gw_pq_op_is_comparison(GW_PQ_OP_POW));
    assert_true(gw_pq_op_is_set(GW_PQ_OP_OR));
    assert_false(gw_pq_op_is_set(GW_PQ_OP_ADD));
    assert_string_equal(gw_pq_agg_name(GW_PQ_AGG_COUNT_VALUES), "count_values");
    assert_string_equal(gw_pq_agg_name(GW_PQ_AGG_LIMIT_RATIO), "limit_ratio");

    struct gw_pq_expr *e = parse_opts("limitk(2, x) + limit_ratio(0.5, x)", 34, 1);
    assert_int_equal(e->root->u.bin.lhs->u.agg.op, GW_PQ_AGG_LIMITK);
    assert_int_equal(e->root->u.bin.rhs->u.agg.op, GW_PQ_AGG_LIMIT_RATIO);
    gw_pq_expr_free(e);
}

/* ------------------------------------------------------------ pretty */

static void test_promql_parse_format(void **state)
{
    (void)state;
    static const struct {
        const char *q, *want;
    } cases[] = {
        { "sum(rate(foo[5m])) by (job)", "sum by (job) (rate(foo[5m]))" },
        { "a_very_long_metric_name_number_one_for_testing_the_prettier + "
          "another_very_long_metric_name_number_two_for_testing",
          "  a_very_long_metric_name_number_one_for_testing_the_prettier\n"
          "+\n"
          "  another_very_long_metric_name_number_two_for_testing" },
        { "label_replace(some_quite_long_metric_name_here_for_sure{job=\"node-exporter\"}, "
          "\"destination_label\", \"$1\", \"source_label\", \"(.*)\")",
          "label_replace(\n"
          "  some_quite_long_metric_name_here_for_sure{job=\"node-exporter\"},\n"
          "  \"destination_label\",\n"
          "  \"$1\",\n"
          "  \"source_label\",\n"
          "  \"(.*)\"\n"
          ")" },
        { "sum by (instance) (rate(first_metric_with_a_long_name_total[5m])) / on (instance) "
          "sum by (instance) (rate(second_metric_with_a_long_name_total[5m]))",
          "  sum by (instance) (rate(first_metric_with_a_long_name_total[5m]))\n"
          "/ on (instance)\n"
          "  sum by (instance) (rate(second_metric_with_a_long_name_total[5m]))" },
        { "sum(first_quite_long_metric_name_for_the_nested_case_x + second_quite_long_metric_name_for_the_nested_case_x)",
          "sum(\n"
          "    first_quite_long_metric_name_for_the_nested_case_x\n"
          "  +\n"
          "    second_quite_long_metric_name_for_the_nested_case_x\n"
          ")" },
        { "topk(10, sum by (job, instance) (rate(node_network_receive_bytes_total_long_name{device!=\"lo\"}[5m])))",
          "topk(\n"
          "  10,\n"
          "  sum by (job, instance) (rate(node_network_receive_bytes_total_long_name{device!=\"lo\"}[5m]))\n"
          ")" },
        { "-(first_quite_long_metric_name_for_the_unary_case_x + second_quite_long_metric_name_for_the_unary_case_x)",
          "-(\n"
          "    first_quite_long_metric_name_for_the_unary_case_x\n"
          "  +\n"
          "    second_quite_long_metric_name_for_the_unary_case_x\n"
          ")" },
        { "sum by (instance, job) (max_over_time(rate(a_long_metric_name_for_the_subquery_total_abc[5m])[1h:1m]))",
          "sum by (instance, job) (\n"
          "  max_over_time(rate(a_long_metric_name_for_the_subquery_total_abc[5m])[1h:1m])\n"
          ")" },
        { "quantile_over_time(0.99, rate(a_long_metric_name_for_the_subquery_case_total_xyz{job=\"x\"}[5m])[1h:1m])",
          "quantile_over_time(\n"
          "  0.99,\n"
          "rate(a_long_metric_name_for_the_subquery_case_total_xyz{job=\"x\"}[5m])[1h:1m]\n"
          ")" },
        { "max_over_time(rate(a_long_metric_name_for_the_subquery_case_total{job=\"x\"}[5m])[1h:1m]) > bool 100",
          "max_over_time(rate(a_long_metric_name_for_the_subquery_case_total{job=\"x\"}[5m])[1h:1m]) > bool 100" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct gw_pq_expr *e = parse_ok(cases[i].q);
        char *s = print_str(e->root, 1);
        if (strcmp(s, cases[i].want) != 0)
            fail_msg("format of '%s':\n%s\nwant:\n%s", cases[i].q, s, cases[i].want);
        free(s);
        gw_pq_expr_free(e);
    }
}

/* ------------------------------------------------------------ hostile */

static void expect_fail(const char *q, size_t len, int want_rc, const char *substr)
{
    struct gw_error err;
    int rc = parse_err(q, len, &err);
    if (rc != want_rc)
        fail_msg("rc=%d, want %d (%s)", rc, want_rc, err.msg);
    if (substr != NULL && strstr(err.msg, substr) == NULL)
        fail_msg("error '%s' lacks '%s'", err.msg, substr);
}

static char *repeat(const char *pre, size_t n, const char *mid, const char *post, size_t m)
{
    size_t lp = strlen(pre), lm = strlen(mid), lq = strlen(post);
    char *s = malloc(lp * n + lm + lq * m + 1);
    assert_non_null(s);
    size_t o = 0;
    for (size_t i = 0; i < n; i++, o += lp)
        memcpy(s + o, pre, lp);
    memcpy(s + o, mid, lm);
    o += lm;
    for (size_t i = 0; i < m; i++, o += lq)
        memcpy(s + o, post, lq);
    s[o] = '\0';
    return s;
}

static void test_promql_parse_hostile_nesting(void **state)
{
    (void)state;
    char *q = repeat("(", 200000, "1", ")", 200000);
    expect_fail(q, strlen(q), GW_EPARSE, "nesting too deep");
    free(q);
    q = repeat("-", 300000, "1", "", 0);
    expect_fail(q, strlen(q), GW_EPARSE, "nesting too deep");
    free(q);
    q = repeat("abs(", 100000, "x", ")", 100000);
    expect_fail(q, strlen(q), GW_EPARSE, "nesting too deep");
    free(q);
    q = repeat("x + ", 100000, "x", "", 0); /* left-deep tree */
    expect_fail(q, strlen(q), GW_EPARSE, "nesting too deep");
    free(q);
    q = repeat("x ^ ", 100000, "x", "", 0); /* right-deep tree */
    expect_fail(q, strlen(q), GW_EPARSE, "nesting too deep");
    free(q);
    q = repeat("sum(", 1000, "x", ")", 1000);
    expect_fail(q, strlen(q), GW_EPARSE, "nesting too deep");
    free(q);
    q = repeat("{a=\"b\"", 1, "", "", 0);
    expect_fail(q, strlen(q), GW_EPARSE, "inside braces");
    free(q);

    /* within the limit everything works and prints back */
    q = repeat("(", 200, "1", ")", 200);
    struct gw_pq_expr *e = parse_ok(q);
    char *s = print_str(e->root, 0);
    assert_string_equal(s, q);
    free(s);
    gw_pq_expr_free(e);
    free(q);
    q = repeat("x + ", 300, "x", "", 0);
    e = parse_ok(q);
    s = print_str(e->root, 0);
    assert_string_equal(s, q);
    free(s);
    s = print_str(e->root, 1);
    assert_non_null(strchr(s, '\n'));
    free(s);
    gw_pq_expr_free(e);
    free(q);
    /* wide is fine: many arguments and matchers */
    q = repeat("x{a=\"b\",", 1, "", "c=~\"d|e\",", 2000);
    size_t l = strlen(q);
    q[l - 1] = '}';
    e = parse_ok(q);
    assert_int_equal(e->root->u.sel.n_matchers, 2002);
    gw_pq_expr_free(e);
    free(q);
    /* but not without bound: regexes own compiled code */
    q = repeat("x{", 1, "", "a=~\"b|c\",", 10001);
    q[strlen(q) - 1] = '}';
    expect_fail(q, strlen(q), GW_EPARSE, "1:1: parse error: too many label matchers in the query");
    free(q);
    q = repeat("x{", 1, "", "a=~\"b|c\",", 9999);
    q[strlen(q) - 1] = '}';
    e = parse_ok(q);
    assert_int_equal(e->root->u.sel.n_matchers, 10000);
    gw_pq_expr_free(e);
    free(q);
    /* the pretty printer measures each node once: a long, deep query
     * formats quickly */
    q = repeat("a_metric_name_that_is_not_short{label=\"value\"} + ", 500, "x", "", 0);
    e = parse_ok(q);
    s = print_str(e->root, 1);
    assert_int_equal(s[0], ' ');
    free(s);
    gw_pq_expr_free(e);
    free(q);
}

static void test_promql_parse_hostile_bytes(void **state)
{
    (void)state;
    expect_fail("foo\0bar", 7, GW_EPARSE, "unexpected character: '\\x00'");
    expect_fail("\"a\0b\"", 5, GW_OK, NULL);
    expect_fail("\"\xff\"", 3, GW_EPARSE, "1:1: parse error: invalid UTF-8 rune");
    expect_fail("`\xc3`", 3, GW_EPARSE, "invalid UTF-8 rune");
    expect_fail("foo{a=\"\xed\xa0\x80\"}", 12, GW_EPARSE, "invalid UTF-8 rune");
    expect_fail("\xff", 1, GW_EPARSE, "unexpected character: '\xef\xbf\xbd'");
    expect_fail("foo\xe2\x82", 5, GW_EPARSE, "1:4: parse error: unexpected character");
    expect_fail("\"abc", 4, GW_EPARSE, "unterminated quoted string");
    expect_fail("'abc\\", 5, GW_EPARSE, "escape sequence not terminated");
    expect_fail("\"\\u12", 5, GW_EPARSE, "escape sequence not terminated");
    expect_fail("`abc", 4, GW_EPARSE, "unterminated raw string");
    expect_fail("foo{a=\"b", 8, GW_EPARSE, "unterminated quoted string");
    expect_fail("1e999999999", 11, GW_EPARSE, "value out of range");
    expect_fail("foo[99999999999999999999999999s]", 32, GW_EPARSE, "not a valid duration string");
    expect_fail("foo[1e300]", 10, GW_EPARSE, "duration out of range");
    expect_fail("foo offset 1e300", 16, GW_EPARSE, "duration out of range");
    expect_fail("foo @ 1e300", 11, GW_EPARSE, "timestamp out of bounds");
    expect_fail("foo @ -9.3e15", 13, GW_EPARSE, "timestamp out of bounds");
    expect_fail(NULL, 5, GW_EINVAL, NULL);
    expect_fail("sum by (\"a\\x00b\") (x)", 21, GW_EPARSE,
                "1:9: parse error: invalid label name for grouping: \"a\\x00b\"");
    expect_fail("x + on(\"\\xff\") y", 16, GW_EPARSE, "invalid label name for grouping");

    /* a query past the size cap is refused before any work */
    size_t big = GW_PQ_MAX_QUERY_BYTES + 1;
    char *q = malloc(big);
    assert_non_null(q);
    memset(q, '1', big);
    expect_fail(q, big, GW_ETOOLARGE, NULL);
    /* at the cap a 1 MiB query still parses (a long number) */
    struct gw_error err;
    struct gw_pq_expr *e = NULL;
    memset(q, ' ', big);
    q[0] = 'x';
    assert_int_equal(gw_pq_parse(q, GW_PQ_MAX_QUERY_BYTES, NULL, &e, &err), GW_OK);
    gw_pq_expr_free(e);
    free(q);

    /* a string with a NUL byte in it is kept whole */
    e = parse_opts("\"a\\x00b\"", 8, 0);
    assert_int_equal(e->root->u.str.len, 3);
    assert_memory_equal(e->root->u.str.s, "a\0b", 3);
    char *s = print_str(e->root, 0);
    assert_string_equal(s, "\"a\\x00b\"");
    free(s);
    gw_pq_expr_free(e);

    gw_pq_expr_free(NULL);
}

/* xorshift: deterministic pseudo-random input */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void test_promql_parse_random_input(void **state)
{
    (void)state;
    static const char *frags[] = {
        "foo", "bar{a=\"b\"}", "(", ")", "[5m]", "[1h:1m]", " offset 5m", " @ 10", " @ end()",
        " + ", " - ", " * ", " / ", " ^ ", " and ", " or ", " unless ", " > bool ", " == ",
        " on(a) ", " ignoring(b) ", " group_left(c) ", "sum", " by (x) ", " without (y) ",
        "rate(", "topk(", "count_values(", ", ", "1", "0x1f", "Inf", "NaN", "\"s\"", "'q'", "`r`",
        "-", "{", "}", "]", "[", ":", "#c\n", "\xff", "\0", "label_join(", "5m", "@", "bool",
        "histogram_quantile(", "0.9", "{\"a.b\"=~\".*\"}", "abs(", "vector(", "time()",
    };
    size_t nf = sizeof frags / sizeof frags[0];
    char q[512];
    unsigned parsed = 0;
    for (int it = 0; it < 20000; it++) {
        size_t o = 0;
        int n = 1 + (int)(rnd() % 12);
        for (int k = 0; k < n; k++) {
            const char *f = frags[rnd() % nf];
            size_t l = f[0] == '\0' ? 1 : strlen(f);
            if (o + l >= sizeof q)
                break;
            memcpy(q + o, f, l);
            o += l;
        }
        if (rnd() % 4 == 0 && o > 0) /* and some raw byte noise */
            q[rnd() % o] = (char)(rnd() & 0xff);
        struct gw_pq_expr *e = NULL;
        struct gw_error err;
        int rc = gw_pq_parse(q, o, NULL, &e, &err);
        if (rc != GW_OK) {
            assert_int_equal(rc, GW_EPARSE);
            assert_non_null(strstr(err.msg, "parse error: "));
            continue;
        }
        parsed++;
        char *p1 = print_str(e->root, 0);
        char *p2 = reprint(p1);
        /* Prometheus prints +Inf with its sign, so `Inf ^ x` prints as
         * `+Inf ^ x`, which reads back as +(Inf ^ x): the one form whose
         * printed text is not a fixed point, in Prometheus as here */
        if (strstr(p1, "Inf ^") == NULL && strcmp(p1, p2) != 0)
            fail_msg("'%.*s': '%s' reprints as '%s'", (int)o, q, p1, p2);
        char *pf = print_str(e->root, 1);
        free(pf);
        free(p1);
        free(p2);
        gw_pq_expr_free(e);
    }
    assert_true(parsed > 100);
}

/* holt_winters is Prometheus 2's name of double_exponential_smoothing: a
 * normal function under compat 2, unknown under compat 3. */
static void test_promql_parse_holt_winters_compat2(void **state)
{
    (void)state;
    const char *q = "holt_winters(x[5m], 0.5, 0.1)";
    struct gw_pq_parse_opts o2 = { .compat = 2 };
    struct gw_pq_expr *e = NULL;
    struct gw_error err;
    gw_error_clear(&err);
    assert_int_equal(gw_pq_parse(q, strlen(q), &o2, &e, &err), GW_OK);
    assert_int_equal(e->root->kind, GW_PQ_CALL);
    assert_int_equal(e->root->u.call.func->id, GW_PQ_F_DOUBLE_EXPONENTIAL_SMOOTHING);
    assert_false(e->root->u.call.func->experimental);
    assert_int_equal(e->root->type, GW_PQ_T_VECTOR);
    char *s = print_str(e->root, 0);
    assert_string_equal(s, q);
    free(s);
    gw_pq_expr_free(e);
    /* argument checks as for any function */
    const char *bad = "holt_winters(x, 0.5, 0.1)";
    assert_int_equal(gw_pq_parse(bad, strlen(bad), &o2, &e, &err), GW_EPARSE);
    assert_string_equal(err.msg, "1:14: parse error: expected type range vector in call to function "
                                 "\"holt_winters\", got instant vector");
    const char *few = "holt_winters(x[5m], 0.5)";
    assert_int_equal(gw_pq_parse(few, strlen(few), &o2, &e, &err), GW_EPARSE);
    assert_non_null(strstr(err.msg, "argument(s) in call to \"holt_winters\""));
    /* compat 3 (and the default, 0) as Prometheus 3: unknown */
    struct gw_pq_parse_opts o3 = { .compat = 3, .experimental = 1 };
    assert_int_equal(gw_pq_parse(q, strlen(q), &o3, &e, &err), GW_EPARSE);
    assert_string_equal(err.msg, "1:1: parse error: unknown function with name \"holt_winters\"");
    assert_int_equal(parse_err(q, strlen(q), &err), GW_EPARSE);
    assert_string_equal(err.msg, "1:1: parse error: unknown function with name \"holt_winters\"");
    /* the new name stays experimental in both modes */
    const char *des = "double_exponential_smoothing(x[5m], 0.5, 0.1)";
    assert_int_equal(gw_pq_parse(des, strlen(des), &o2, &e, &err), GW_EPARSE);
    assert_non_null(strstr(err.msg, "is not enabled"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_promql_parse_valid_cases),
        cmocka_unit_test(test_promql_parse_invalid_cases),
        cmocka_unit_test(test_promql_parse_round_trip),
        cmocka_unit_test(test_promql_parse_multiline_and_comments),
        cmocka_unit_test(test_promql_parse_precedence_tree),
        cmocka_unit_test(test_promql_parse_selector_fields),
        cmocka_unit_test(test_promql_parse_binary_and_aggregate_fields),
        cmocka_unit_test(test_promql_parse_numbers),
        cmocka_unit_test(test_promql_parse_every_function),
        cmocka_unit_test(test_promql_parse_holt_winters_compat2),
        cmocka_unit_test(test_promql_parse_names),
        cmocka_unit_test(test_promql_parse_format),
        cmocka_unit_test(test_promql_parse_hostile_nesting),
        cmocka_unit_test(test_promql_parse_hostile_bytes),
        cmocka_unit_test(test_promql_parse_random_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
