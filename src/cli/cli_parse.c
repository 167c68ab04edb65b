/* cli_parse.c - the one option reader of the gpuwatch subcommands and the
 * help printer over the same table (cli_parse.h). */
#include "cli_parse.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/err.h"

#define MAX_OPTS 128    /* options in one table */
#define HELP_COL 23     /* where the help text of an option starts */

int gw_cli_parse_u64(const char *v, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end;
    if (v[0] == '-' || v[0] == '+' || v[0] == '\0' || v[0] == ' ' || v[0] == '\t')
        return -1;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || *end || x < lo || x > hi)
        return -1;
    *out = x;
    return 0;
}

int gw_cli_parse_double(const char *v, double *out)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(x))
        return -1;
    *out = x;
    return 0;
}

/* ------------------------------------------------------------ help */

/* The help text of one option: continuation lines start at HELP_COL. */
static void usage_text(FILE *f, const char *help, size_t col)
{
    const char *p = help ? help : "";
    if (*p == '\n') {
        col = HELP_COL + 1;   /* start below the name */
        p++;
    }
    for (;;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (col > HELP_COL)
            fprintf(f, "\n%*s", HELP_COL, "");
        else
            fprintf(f, "%*s", (int)(HELP_COL - col), "");
        fprintf(f, "%.*s", (int)len, p);
        if (!nl)
            break;
        p = nl + 1;
        col = HELP_COL + 1;
    }
    fputc('\n', f);
}

static int is_end(const struct gw_cli_opt *o)
{
    return !o->name && !o->help && o->type != GW_CLI_TABLE;
}

static void usage_opts(const struct gw_cli_opt *opts, FILE *f)
{
    for (const struct gw_cli_opt *o = opts; o && !is_end(o); o++) {
        if (o->type == GW_CLI_TABLE) {
            usage_opts(o->sub, f);
            continue;
        }
        if (!o->name) {
            fprintf(f, "%s\n", o->help);
            continue;
        }
        int n = fprintf(f, "  %s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        size_t col = n < 0 ? 0 : (size_t)n;
        if (col + 2 > HELP_COL && o->help && o->help[0] != '\n') {
            fputs("  ", f);      /* a long name: the text follows two spaces on */
            col = HELP_COL;
        }
        usage_text(f, o->help, col);
        if (o->alias)
            fprintf(f, "%*s(also %s)\n", HELP_COL, "", o->alias);
    }
}

void gw_cli_usage(const struct gw_cli_cmd *cmd, FILE *f)
{
    fprintf(f, "usage: gpuwatch %s %s\n", cmd->name, cmd->synopsis ? cmd->synopsis : "[options]");
    if (cmd->intro)
        fprintf(f, "\n%s", cmd->intro);
    fputc('\n', f);
    usage_opts(cmd->opts, f);
    if (cmd->outro)
        fputs(cmd->outro, f);
}

int gw_cli_usage_error(const struct gw_cli_cmd *cmd, int with_usage, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "gpuwatch %s: ", cmd->name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (with_usage) {
        fputc('\n', stderr);
        gw_cli_usage(cmd, stderr);
    }
    return 2;
}

/* ------------------------------------------------------------ values */

static void *field(void *base, size_t at)
{
    return (char *)base + (at - 1);
}

/* An integer into a field of 1, 2, 4 or 8 bytes (the caller checked the range). */
static void store_int(void *p, size_t size, uint64_t v)
{
    switch (size) {
    case 1: { uint8_t x = (uint8_t)v; memcpy(p, &x, 1); break; }
    case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
    case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
    default: memcpy(p, &v, 8); break;
    }
}

static int choice_index(const char *const *choices, const char *v)
{
    for (int i = 0; choices && choices[i]; i++)
        if (!strcmp(choices[i], v))
            return i;
    return -1;
}

/* "a, b or c" */
static void choices_text(const char *const *choices, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; choices[i] && len < cap; i++) {
        const char *sep = i == 0 ? "" : choices[i + 1] ? ", " : " or ";
        int n = snprintf(out + len, cap - len, "%s%s", sep, choices[i]);
        if (n < 0)
            break;
        len += (size_t)n;
    }
}

/* The largest value an unsigned field of size bytes holds. */
static uint64_t field_max(size_t size)
{
    return size >= 8 ? UINT64_MAX : (UINT64_C(1) << (8 * size)) - 1;
}

/* What a valid value of o looks like, for the "invalid value" message. */
static const char *expect_text(const struct gw_cli_opt *o, char *buf, size_t cap)
{
    if (o->expect)
        return o->expect;
    switch (o->type) {
    case GW_CLI_UINT:
        snprintf(buf, cap, "%llu..%llu", (unsigned long long)o->min,
                 (unsigned long long)(o->max ? o->max : field_max(o->size)));
        return buf;
    case GW_CLI_DUR:
        return "a duration such as 30s, 5m, 12h or 55d";
    case GW_CLI_DOUBLE:
        snprintf(buf, cap, "a number %s %g and <= %g", o->flags & GW_CLI_ABOVE_MIN ? ">" : ">=", o->dmin, o->dmax);
        return buf;
    case GW_CLI_CHOICE:
    case GW_CLI_STR:
        if (o->choices) {
            choices_text(o->choices, buf, cap);
            return buf;
        }
        return "a non-empty value";
    case GW_CLI_FLAG:
    case GW_CLI_STRS:
    case GW_CLI_CALL:
    case GW_CLI_TABLE:
        break;
    }
    return "see --help";
}

/* v into o's field. 0, -1 for an invalid value, else an exit status
 * (the problem printed). n_given: how often o came before this one. */
static int apply(const struct gw_cli_cmd *cmd, const struct gw_cli_opt *o, const char *v, int n_given, void *base)
{
    void *p = o->at ? field(base, o->at) : NULL;
    /* a table naming a field of the wrong type is a programming error */
    assert(o->type == GW_CLI_CALL || p != NULL);
    switch (o->type) {
    case GW_CLI_FLAG:
        assert(o->size == sizeof(int));
        *(int *)p = 1;
        return 0;
    case GW_CLI_STR:
        if ((o->flags & GW_CLI_NONEMPTY) && v[0] == '\0')
            return -1;
        if (o->choices && choice_index(o->choices, v) < 0)
            return -1;
        assert(o->size == sizeof(const char *));
        *(const char **)p = v;
        return 0;
    case GW_CLI_STRS:
        if ((o->flags & GW_CLI_NONEMPTY) && v[0] == '\0')
            return -1;
        if ((size_t)n_given >= o->size / sizeof(const char *))
            return gw_cli_usage_error(cmd, 0, "at most %zu %s", o->size / sizeof(const char *), o->name);
        ((const char **)p)[n_given] = v;
        return 0;
    case GW_CLI_CHOICE: {
        int i = choice_index(o->choices, v);
        if (i < 0)
            return -1;
        int x = o->values ? o->values[i] : i;
        assert(o->size == sizeof x);
        memcpy(p, &x, sizeof x);
        return 0;
    }
    case GW_CLI_UINT: {
        uint64_t x;
        if (gw_cli_parse_u64(v, o->min, o->max ? o->max : field_max(o->size), &x) != 0)
            return -1;
        store_int(p, o->size, x);
        return 0;
    }
    case GW_CLI_DUR: {
        int64_t ms;
        if (gw_parse_duration_ms(v, &ms) != GW_OK || ms <= 0 || (uint64_t)ms < o->min ||
            (o->max && (uint64_t)ms > o->max))
            return -1;
        assert(o->size == sizeof(int64_t));
        *(int64_t *)p = ms;
        return 0;
    }
    case GW_CLI_DOUBLE: {
        double x;
        if (gw_cli_parse_double(v, &x) != 0 || x < o->dmin || x > o->dmax ||
            ((o->flags & GW_CLI_ABOVE_MIN) && !(x > o->dmin)))
            return -1;
        assert(o->size == sizeof(double));
        *(double *)p = x;
        return 0;
    }
    case GW_CLI_CALL:
        return o->set(p ? p : base, v);
    case GW_CLI_TABLE:
        break;
    }
    return -1;
}

/* ------------------------------------------------------------ parse */

/* How often each option was given so far. */
struct given {
    const struct gw_cli_opt *o[MAX_OPTS];
    int n[MAX_OPTS];
    size_t len;
};

static int *given_count(struct given *g, const struct gw_cli_opt *o)
{
    for (size_t i = 0; i < g->len; i++)
        if (g->o[i] == o)
            return &g->n[i];
    if (g->len == MAX_OPTS)
        return NULL;
    g->o[g->len] = o;
    g->n[g->len] = 0;
    return &g->n[g->len++];
}

/* The option called a[0..len) in opts (tables included), with the base
 * its offsets point into. */
static const struct gw_cli_opt *find_opt(const struct gw_cli_opt *opts, const char *a, size_t len, void **base)
{
    for (const struct gw_cli_opt *o = opts; o && !is_end(o); o++) {
        if (o->type == GW_CLI_TABLE) {
            void *sub = field(*base, o->at);
            const struct gw_cli_opt *r = find_opt(o->sub, a, len, &sub);
            if (r) {
                *base = sub;
                return r;
            }
        } else if (o->name && strlen(o->name) == len && !strncmp(o->name, a, len)) {
            return o;
        } else if (o->alias && strlen(o->alias) == len && !strncmp(o->alias, a, len)) {
            return o;
        }
    }
    return NULL;
}

static int want_help(int argc, char **argv)
{
    for (int i = 0; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return 1;
    return 0;
}

/* An argument that is not an option: the command's operand, if it takes one. */
static int operand(const struct gw_cli_cmd *cmd, const char *a, void *base)
{
    if (!cmd->operand)
        return gw_cli_usage_error(cmd, 1, "unexpected argument \"%s\"", a);
    const char **p = field(base, cmd->at);
    if (*p)
        return gw_cli_usage_error(cmd, 0, "one %s only (got \"%s\" too)", cmd->operand, a);
    *p = a;
    return 0;
}

/* The option at argv[*i] (*i moves past a separate value). 0, or 2. */
static int one_option(const struct gw_cli_cmd *cmd, int argc, char **argv, int *i, void *base, struct given *g)
{
    const char *a = argv[*i], *eq = strchr(a, '='), *v = NULL;
    size_t len = eq ? (size_t)(eq - a) : strlen(a);
    const struct gw_cli_opt *o = find_opt(cmd->opts, a, len, &base);
    int *n = o ? given_count(g, o) : NULL;
    if (!o || !n)
        return gw_cli_usage_error(cmd, 1, "unknown option \"%.*s\"", (int)len, a);
    if (!o->arg && eq)
        return gw_cli_usage_error(cmd, 0, "%s takes no value", o->name);
    if (o->arg) {
        if (eq)
            v = eq + 1;
        else if (*i + 1 < argc)
            v = argv[++*i];
        else
            return gw_cli_usage_error(cmd, 0, "option %s needs a value", o->name);
    }
    int rc = apply(cmd, o, v, *n, base);
    if (rc < 0) {
        char buf[160];
        return gw_cli_usage_error(cmd, 0, "invalid value for %s: \"%s\" (%s)", o->name, v ? v : "",
                                  expect_text(o, buf, sizeof buf));
    }
    if (rc > 0)
        return rc;
    ++*n;
    if (o->seen)
        *(int *)field(base, o->seen) = *n;
    return 0;
}

/* The first required option of opts not given, or NULL. */
static const struct gw_cli_opt *missing(const struct gw_cli_opt *opts, struct given *g)
{
    for (const struct gw_cli_opt *o = opts; o && !is_end(o); o++) {
        const struct gw_cli_opt *m = o->type == GW_CLI_TABLE ? missing(o->sub, g) : NULL;
        if (m)
            return m;
        int *n = o->name && (o->flags & GW_CLI_REQUIRED) ? given_count(g, o) : NULL;
        if (n && *n == 0)
            return o;
    }
    return NULL;
}

int gw_cli_parse(const struct gw_cli_cmd *cmd, int argc, char **argv, void *base)
{
    struct given g = {.len = 0};
    int rc, opts_done = 0;
    if (want_help(argc, argv)) {
        gw_cli_usage(cmd, stdout);
        return 0;
    }
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        rc = 0;
        if (!opts_done && !strcmp(a, "--"))
            opts_done = 1;
        else if (opts_done || strncmp(a, "--", 2) != 0)
            rc = operand(cmd, a, base);
        else
            rc = one_option(cmd, argc, argv, &i, base, &g);
        if (rc != 0)
            return rc;
    }
    const struct gw_cli_opt *m = missing(cmd->opts, &g);
    if (m)
        return gw_cli_usage_error(cmd, 0, "%s is required", m->name);
    return -1;
}

/* ------------------------------------------------------------ values */

/* ms as the shortest exact Prometheus duration: 55d, 90s, 1500ms. */
static void duration_text(int64_t ms, char *out, size_t cap)
{
    static const struct { int64_t ms; const char *u; } units[] = {
        {604800000, "w"}, {86400000, "d"}, {3600000, "h"}, {60000, "m"}, {1000, "s"}, {1, "ms"}};
    if (ms == 0) {
        snprintf(out, cap, "0s");
        return;
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (ms % units[i].ms == 0) {
            snprintf(out, cap, "%lld%s", (long long)(ms / units[i].ms), units[i].u);
            return;
        }
}

static uint64_t load_uint(const void *p, size_t size)
{
    switch (size) {
    case 1: { uint8_t x; memcpy(&x, p, 1); return x; }
    case 2: { uint16_t x; memcpy(&x, p, 2); return x; }
    case 4: { uint32_t x; memcpy(&x, p, 4); return x; }
    default: { uint64_t x; memcpy(&x, p, 8); return x; }
    }
}

/* The text of o's value at p into out. 0, or -1 when it has none. */
static int value_text(const struct gw_cli_opt *o, const void *p, char *out, size_t cap)
{
    out[0] = '\0';
    switch (o->type) {
    case GW_CLI_FLAG:
        snprintf(out, cap, "%s", *(const int *)p ? "true" : "false");
        return 0;
    case GW_CLI_STR:
        snprintf(out, cap, "%s", *(const char *const *)p ? *(const char *const *)p : "");
        return 0;
    case GW_CLI_STRS: {
        size_t len = 0, k = o->size / sizeof(const char *);
        for (size_t i = 0; i < k && ((const char *const *)p)[i] && len < cap; i++) {
            int w = snprintf(out + len, cap - len, "%s%s", i ? "," : "", ((const char *const *)p)[i]);
            if (w < 0) break;
            len += (size_t)w;
        }
        return 0;
    }
    case GW_CLI_CHOICE: {
        int x;
        memcpy(&x, p, sizeof x);
        for (int i = 0; o->choices && o->choices[i]; i++)
            if ((o->values ? o->values[i] : i) == x) {
                snprintf(out, cap, "%s", o->choices[i]);
                return 0;
            }
        snprintf(out, cap, "%d", x);
        return 0;
    }
    case GW_CLI_UINT:
        snprintf(out, cap, "%llu", (unsigned long long)load_uint(p, o->size));
        return 0;
    case GW_CLI_DUR:
        duration_text(*(const int64_t *)p, out, cap);
        return 0;
    case GW_CLI_DOUBLE:
        snprintf(out, cap, "%g", *(const double *)p);
        return 0;
    case GW_CLI_CALL:
    case GW_CLI_TABLE:
        break;
    }
    return -1;
}

void gw_cli_values(const struct gw_cli_cmd *cmd, const void *base, gw_cli_value_cb cb, void *ud)
{
    const struct gw_cli_opt *stack[8];
    const void *bases[8];
    int depth = 0;
    stack[0] = cmd->opts;
    bases[0] = base;
    while (depth >= 0) {
        const struct gw_cli_opt *o = stack[depth];
        if (!o || is_end(o)) {
            depth--;
            continue;
        }
        stack[depth] = o + 1;
        if (o->type == GW_CLI_TABLE) {
            if (depth + 1 < 8) {
                bases[depth + 1] = (const char *)bases[depth] + (o->at - 1);
                stack[++depth] = o->sub;
            }
            continue;
        }
        if (!o->name)
            continue;
        char text[1024];
        const char *name = o->name[0] == '-' && o->name[1] == '-' ? o->name + 2 : o->name;
        if (o->at && value_text(o, (const char *)bases[depth] + (o->at - 1), text, sizeof text) == 0)
            cb(ud, name, text);
        else
            cb(ud, name, NULL);
    }
}
