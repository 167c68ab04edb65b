/* test_cli_parse.c - the subcommands' option reader (src/cli/cli_parse.h):
 * value forms, kinds and ranges, refusals with exit status 2, operands,
 * shared sub-tables, and the help printed from the table. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_parse.h"

struct sub {
    uint64_t n;
    int n_seen;
};

struct args {
    const char *name, *mode, *urls[2], *expr;
    int flag, n_urls, color, called, have_ratio;
    unsigned small;
    uint64_t big;
    int64_t dur_ms;
    double ratio;
    struct sub sub;
};

static int set_called(void *p, const char *v)
{
    int *called = p;
    if (strcmp(v, "bad") == 0)
        return -1;
    *called = (int)strlen(v);
    return 0;
}

static const char *const modes[] = {"fast", "slow", NULL};
static const char *const colors[] = {"red", "green", NULL};
static const int color_values[] = {10, 20};

static const struct gw_cli_opt sub_opts[] = {
    {.name = "--sub-n", .arg = "N", .help = "a number of the sub-table", .type = GW_CLI_UINT,
     GW_CLI_AT(struct sub, n), GW_CLI_SEEN(struct sub, n_seen), .min = 1, .max = 9},
    {0},
};

static const struct gw_cli_opt opts[] = {
    {.name = "--name", .arg = "S", .help = "a name (required)", .type = GW_CLI_STR, GW_CLI_AT(struct args, name),
     .flags = GW_CLI_REQUIRED | GW_CLI_NONEMPTY},
    {.name = "--mode", .arg = "M", .help = "fast or slow", .type = GW_CLI_STR, GW_CLI_AT(struct args, mode),
     .choices = modes},
    {.name = "--url", .arg = "URL", .help = "repeatable, up to 2", .type = GW_CLI_STRS, GW_CLI_AT(struct args, urls),
     GW_CLI_SEEN(struct args, n_urls)},
    {.name = "--color", .arg = "C", .help = "red or green", .type = GW_CLI_CHOICE, GW_CLI_AT(struct args, color),
     .choices = colors, .values = color_values},
    {.help = "\nnumbers:"},
    {.name = "--small", .arg = "N", .help = "1..256", .type = GW_CLI_UINT, GW_CLI_AT(struct args, small), .min = 1,
     .max = 256},
    {.name = "--big", .arg = "N", .help = "any", .type = GW_CLI_UINT, GW_CLI_AT(struct args, big)},
    {.name = "--dur", .arg = "DUR", .help = "1s..1h", .type = GW_CLI_DUR, GW_CLI_AT(struct args, dur_ms),
     .min = 1000, .max = 3600000},
    {.name = "--ratio", .arg = "X", .help = "first line\nsecond line", .type = GW_CLI_DOUBLE,
     GW_CLI_AT(struct args, ratio), GW_CLI_SEEN(struct args, have_ratio), .dmin = 0, .dmax = 1,
     .flags = GW_CLI_ABOVE_MIN},
    {.name = "--call", .arg = "V", .help = "\nbelow the name", .type = GW_CLI_CALL, GW_CLI_AT(struct args, called),
     .set = set_called},
    {.name = "--flag", .help = "a flag", .type = GW_CLI_FLAG, GW_CLI_AT(struct args, flag)},
    {.name = "--a-very-long-option-name", .help = "text after two spaces", .type = GW_CLI_FLAG,
     GW_CLI_AT(struct args, flag)},
    {.type = GW_CLI_TABLE, .sub = sub_opts, GW_CLI_AT(struct args, sub)},
    {0},
};

static const struct gw_cli_cmd cmd = {
    .name = "demo",
    .synopsis = "--name S [options] EXPR",
    .intro = "A demo.\n",
    .opts = opts,
    .outro = "\nThe end.\n",
    .operand = "expression",
    GW_CLI_AT(struct args, expr),
};

/* Parses the NULL-terminated arguments into a (zeroed first). */
static int parse(struct args *a, ...)
{
    char *argv[32];
    int argc = 0;
    va_list ap;
    va_start(ap, a);
    for (char *s; (s = va_arg(ap, char *)) != NULL && argc < 32;)
        argv[argc++] = s;
    va_end(ap);
    memset(a, 0, sizeof *a);
    return gw_cli_parse(&cmd, argc, argv, a);
}

static void test_cli_parse_forms(void **state)
{
    (void)state;
    struct args a;
    assert_int_equal(parse(&a, "--name", "x", "--mode=slow", "--flag", "--small=7", "--big", "18446744073709551615",
                           "--dur", "90s", "--ratio=0.5", "--color", "green", "--call", "abc", "--sub-n", "3",
                           "up", NULL),
                     -1);
    assert_string_equal(a.name, "x");
    assert_string_equal(a.mode, "slow");
    assert_int_equal(a.flag, 1);
    assert_int_equal(a.small, 7);
    assert_true(a.big == UINT64_MAX);
    assert_int_equal(a.dur_ms, 90000);
    assert_true(a.ratio == 0.5);
    assert_int_equal(a.have_ratio, 1);
    assert_int_equal(a.color, 20);
    assert_int_equal(a.called, 3);
    assert_int_equal(a.sub.n, 3);
    assert_int_equal(a.sub.n_seen, 1);
    assert_string_equal(a.expr, "up");
}

static void test_cli_parse_repeatable(void **state)
{
    (void)state;
    struct args a;
    assert_int_equal(parse(&a, "--name", "x", "--url", "u1", "--url=u2", NULL), -1);
    assert_int_equal(a.n_urls, 2);
    assert_string_equal(a.urls[0], "u1");
    assert_string_equal(a.urls[1], "u2");
    assert_int_equal(parse(&a, "--name", "x", "--url", "u1", "--url", "u2", "--url", "u3", NULL), 2);
    /* a repeated single-valued option keeps its last value */
    assert_int_equal(parse(&a, "--name", "x", "--small", "1", "--small", "2", NULL), -1);
    assert_int_equal(a.small, 2);
}

static void test_cli_parse_refusals(void **state)
{
    (void)state;
    struct args a;
    assert_int_equal(parse(&a, NULL), 2);                                   /* --name is required */
    assert_int_equal(parse(&a, "--name", "", NULL), 2);                     /* non-empty */
    assert_int_equal(parse(&a, "--name", "x", "--bogus", NULL), 2);         /* unknown option */
    assert_int_equal(parse(&a, "--name", "x", "--small", NULL), 2);         /* missing value */
    assert_int_equal(parse(&a, "--name", "x", "--flag=1", NULL), 2);        /* a flag takes none */
    assert_int_equal(parse(&a, "--name", "x", "--small", "0", NULL), 2);    /* below min */
    assert_int_equal(parse(&a, "--name", "x", "--small", "257", NULL), 2);  /* above max */
    assert_int_equal(parse(&a, "--name", "x", "--small", "-1", NULL), 2);
    assert_int_equal(parse(&a, "--name", "x", "--small", "1x", NULL), 2);
    assert_int_equal(parse(&a, "--name", "x", "--dur", "500ms", NULL), 2);
    assert_int_equal(parse(&a, "--name", "x", "--dur", "2h", NULL), 2);
    assert_int_equal(parse(&a, "--name", "x", "--ratio", "0", NULL), 2);    /* open at dmin */
    assert_int_equal(parse(&a, "--name", "x", "--ratio", "nan", NULL), 2);
    assert_int_equal(parse(&a, "--name", "x", "--mode", "medium", NULL), 2);
    assert_int_equal(parse(&a, "--name", "x", "--color", "blue", NULL), 2);
    assert_int_equal(parse(&a, "--name", "x", "--call", "bad", NULL), 2);
    assert_int_equal(parse(&a, "--name", "x", "--sub-n", "10", NULL), 2);
    assert_int_equal(parse(&a, "--name", "x", "e1", "e2", NULL), 2);        /* one operand */
}

static void test_cli_parse_help_and_dashdash(void **state)
{
    (void)state;
    struct args a;
    assert_int_equal(parse(&a, "--bogus", "-h", NULL), 0);
    assert_int_equal(parse(&a, "--help", NULL), 0);
    /* after "--" everything is an operand, even "--help" */
    assert_int_equal(parse(&a, "--name", "x", "--", "--help", NULL), -1);
    assert_string_equal(a.expr, "--help");
    /* a value may start with dashes */
    assert_int_equal(parse(&a, "--name", "--flag", NULL), -1);
    assert_string_equal(a.name, "--flag");
    assert_int_equal(a.flag, 0);
}

static void test_cli_parse_usage(void **state)
{
    (void)state;
    char buf[4096];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    assert_non_null(f);
    gw_cli_usage(&cmd, f);
    fclose(f);
    const char *want =
        "usage: gpuwatch demo --name S [options] EXPR\n"
        "\n"
        "A demo.\n"
        "\n"
        "  --name S             a name (required)\n"
        "  --mode M             fast or slow\n"
        "  --url URL            repeatable, up to 2\n"
        "  --color C            red or green\n"
        "\n"
        "numbers:\n"
        "  --small N            1..256\n"
        "  --big N              any\n"
        "  --dur DUR            1s..1h\n"
        "  --ratio X            first line\n"
        "                       second line\n"
        "  --call V\n"
        "                       below the name\n"
        "  --flag               a flag\n"
        "  --a-very-long-option-name  text after two spaces\n"
        "  --sub-n N            a number of the sub-table\n"
        "\n"
        "The end.\n";
    assert_string_equal(buf, want);
}

/* ---- aliases (older names) and the flags listing of gw_cli_values ---- */

struct alias_args {
    const char *listen;
    int64_t keep_ms;
    int off, mode;
    uint32_t threads;
};

static const char *const a_modes[] = {"always", "batch", NULL};
static const int a_mode_values[] = {7, 9};

static const struct gw_cli_opt alias_opts[] = {
    {.name = "--web.listen-address", .alias = "--listen", .arg = "ADDR", .help = "where",
     .type = GW_CLI_STR, GW_CLI_AT(struct alias_args, listen)},
    {.name = "--storage.retention.time", .alias = "--retention", .arg = "DUR", .help = "keep",
     .type = GW_CLI_DUR, GW_CLI_AT(struct alias_args, keep_ms)},
    {.name = "--detector.disable", .alias = "--no-detectors", .help = "off", .type = GW_CLI_FLAG,
     GW_CLI_AT(struct alias_args, off)},
    {.name = "--storage.wal.fsync", .arg = "M", .help = "mode", .type = GW_CLI_CHOICE,
     GW_CLI_AT(struct alias_args, mode), .choices = a_modes, .values = a_mode_values},
    {.name = "--web.threads", .arg = "N", .help = "threads", .type = GW_CLI_UINT,
     GW_CLI_AT(struct alias_args, threads)},
    {0},
};
static const struct gw_cli_cmd alias_cmd = {.name = "demo", .opts = alias_opts};

struct collected {
    char text[512];
};

static void collect(void *ud, const char *name, const char *value)
{
    struct collected *c = ud;
    size_t len = strlen(c->text);
    snprintf(c->text + len, sizeof c->text - len, "%s=%s;", name, value ? value : "(null)");
}

static void test_cli_parse_aliases(void **state)
{
    (void)state;
    struct alias_args a = {.keep_ms = 55LL * 86400000, .mode = 9, .threads = 4};
    char *argv1[] = {"--listen", "127.0.0.1:1", "--retention=90s", "--no-detectors"};
    assert_int_equal(gw_cli_parse(&alias_cmd, 4, argv1, &a), -1);
    assert_string_equal(a.listen, "127.0.0.1:1");
    assert_int_equal(a.keep_ms, 90000);
    assert_int_equal(a.off, 1);
    char *argv2[] = {"--web.listen-address=:9", "--storage.retention.time", "8w"};
    assert_int_equal(gw_cli_parse(&alias_cmd, 3, argv2, &a), -1);
    assert_string_equal(a.listen, ":9");
    assert_int_equal(a.keep_ms, 8LL * 7 * 86400000);

    struct collected c = {.text = ""};
    a.mode = 7;
    gw_cli_values(&alias_cmd, &a, collect, &c);
    assert_string_equal(c.text, "web.listen-address=:9;storage.retention.time=8w;detector.disable=true;"
                                "storage.wal.fsync=always;web.threads=4;");

    char buf[2048] = "";
    FILE *f = fmemopen(buf, sizeof buf, "w");
    assert_non_null(f);
    gw_cli_usage(&alias_cmd, f);
    fclose(f);
    assert_non_null(strstr(buf, "  --web.listen-address ADDR  where\n"
                                "                       (also --listen)\n"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cli_parse_forms),
        cmocka_unit_test(test_cli_parse_repeatable),
        cmocka_unit_test(test_cli_parse_refusals),
        cmocka_unit_test(test_cli_parse_help_and_dashdash),
        cmocka_unit_test(test_cli_parse_usage),
        cmocka_unit_test(test_cli_parse_aliases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
