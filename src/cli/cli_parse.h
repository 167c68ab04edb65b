/* cli_parse.h - the one option reader of the gpuwatch subcommands, and the
 * help text it prints from the same table.
 *
 * A subcommand describes its options once, in a table of struct gw_cli_opt,
 * wraps it in a struct gw_cli_cmd (name, synopsis, text around the options)
 * and calls gw_cli_parse. The table says where each value goes (an offset
 * into the caller's struct, so the table can be static const), what kind of
 * value it is, and the help line; `gpuwatch CMD --help` is printed from it,
 * so the help cannot drift from what is parsed.
 *
 * Accepted: "--name value", "--name=value", flags as "--name" (an option's
 * alias, its older name, works the same); "--help" or
 * "-h" anywhere prints the help (stdout, exit 0); "--" ends the options.
 * Refused with "gpuwatch CMD: ..." on stderr and exit status 2: unknown
 * options (with the usage), a missing value, a value for a flag, a value
 * that is not of the option's kind or range, a missing required option, an
 * argument that is not an option (unless the command takes an operand).
 * A repeated option keeps its last value (GW_CLI_STRS collects them all).
 *
 * Example (a hypothetical `gpuwatch report`, in src/cli/cmd_report.c):
 *
 *   struct report_args {
 *       const char *dir;
 *       int64_t window_ms;
 *       uint64_t top;
 *       int json, top_given;
 *   };
 *   static const struct gw_cli_opt report_opts[] = {
 *       {.name = "--data-dir", .arg = "DIR", .help = "data directory (required)",
 *        .type = GW_CLI_STR, GW_CLI_AT(struct report_args, dir), .flags = GW_CLI_REQUIRED},
 *       {.name = "--window", .arg = "DUR", .help = "how far back to look\n(default 7d)",
 *        .type = GW_CLI_DUR, GW_CLI_AT(struct report_args, window_ms)},
 *       {.name = "--top", .arg = "N", .help = "worst N nodes (1..1000)", .type = GW_CLI_UINT,
 *        GW_CLI_AT(struct report_args, top), GW_CLI_SEEN(struct report_args, top_given),
 *        .min = 1, .max = 1000},
 *       {.name = "--json", .help = "one JSON object", .type = GW_CLI_FLAG,
 *        GW_CLI_AT(struct report_args, json)},
 *       {0}
 *   };
 *   static const struct gw_cli_cmd report_cmd = {
 *       .name = "report", .synopsis = "--data-dir DIR [options]",
 *       .intro = "Prints the node ledger of a data dir.\n", .opts = report_opts,
 *   };
 *   int gw_cli_report(int argc, char **argv)
 *   {
 *       struct report_args a = {.window_ms = 7 * 86400000LL, .top = 20};
 *       int rc = gw_cli_parse(&report_cmd, argc, argv, &a);
 *       if (rc >= 0)
 *           return rc;      // 0 after --help, 2 after a usage error
 *       ...                 // a is filled in
 *   }
 *
 * The help of that table:
 *
 *   usage: gpuwatch report --data-dir DIR [options]
 *
 *   Prints the node ledger of a data dir.
 *
 *     --data-dir DIR       data directory (required)
 *     --window DUR         how far back to look
 *                          (default 7d)
 *     --top N              worst N nodes (1..1000)
 *     --json               one JSON object
 */
#ifndef GW_CLI_PARSE_H
#define GW_CLI_PARSE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* What an option's value is, and the type of the field it is stored in. */
enum gw_cli_type {
    GW_CLI_FLAG = 1, /* no value; int field set to 1 */
    GW_CLI_STR,      /* const char * field: the value, borrowed from argv; with
                      * choices, it must be one of them; GW_CLI_NONEMPTY refuses "" */
    GW_CLI_STRS,     /* const char *field[K]: repeatable, values in order, at most K;
                      * the count goes to the SEEN field (required for STRS) */
    GW_CLI_CHOICE,   /* int or enum field: values[i] (or i) for the value choices[i] */
    GW_CLI_UINT,     /* unsigned integer field of any width (or int, size_t):
                      * a decimal number in [min, max] (max 0: the field's limit) */
    GW_CLI_DUR,      /* int64_t field: a Prometheus duration (5m, 1h30m, 55d) in
                      * ms, > 0, and in [min, max] when max is not 0 */
    GW_CLI_DOUBLE,   /* double field: a finite number in [dmin, dmax], or in
                      * (dmin, dmax] with GW_CLI_ABOVE_MIN */
    GW_CLI_CALL,     /* set(p, value) decides: p is the field given by GW_CLI_AT,
                      * or base without one; value is NULL when arg is NULL (a flag) */
    GW_CLI_TABLE,    /* the options of another table (sub), whose offsets point
                      * into the field given by GW_CLI_AT: options two commands share */
};

/* flags of an option */
#define GW_CLI_REQUIRED 1u  /* refused when not given: "gpuwatch CMD: --x is required" */
#define GW_CLI_NONEMPTY 2u  /* GW_CLI_STR(S): "" is an invalid value */
#define GW_CLI_ABOVE_MIN 4u /* GW_CLI_DOUBLE: the value must be > dmin */

/* Where a value goes: a field of the struct passed to gw_cli_parse as base
 * (stored as offset + 1, so that 0 means "nowhere"). */
#define GW_CLI_AT(type, field) .at = offsetof(type, field) + 1, .size = sizeof(((type *)0)->field)
/* An int field of base counting how often the option was given. */
#define GW_CLI_SEEN(type, field) .seen = offsetof(type, field) + 1

/* One option, or (name NULL, help set) a line of text between options,
 * printed as is (e.g. "\nalerts:"); the table ends with {0}. */
struct gw_cli_opt {
    const char *name;          /* "--seed" */
    const char *alias;         /* NULL, or an older name accepted as well ("--listen" for
                                * "--web.listen-address"); the help shows it */
    const char *arg;           /* the value's placeholder in the help ("N", "DUR"); NULL: takes no value */
    const char *help;          /* help text; '\n' starts a continuation line (indented by the
                                * printer); a leading '\n' starts the text below the name */
    enum gw_cli_type type;
    size_t at, size;           /* GW_CLI_AT: destination (optional for GW_CLI_CALL) */
    size_t seen;               /* GW_CLI_SEEN: optional given-count (int) */
    uint64_t min, max;         /* GW_CLI_UINT, GW_CLI_DUR (ms) */
    double dmin, dmax;         /* GW_CLI_DOUBLE */
    const char *const *choices;/* GW_CLI_CHOICE, GW_CLI_STR: allowed values, NULL-terminated */
    const int *values;         /* GW_CLI_CHOICE: stored for choices[i]; NULL: i */
    const char *expect;        /* what a valid value looks like, for the "invalid value"
                                * message; NULL: derived from the type and range */
    unsigned flags;            /* GW_CLI_REQUIRED, GW_CLI_NONEMPTY, GW_CLI_ABOVE_MIN */
    /* GW_CLI_CALL: 0 when taken; -1 for an invalid value (the parser says so,
     * with expect); else the exit status after printing the problem itself. */
    int (*set)(void *p, const char *value);
    const struct gw_cli_opt *sub;  /* GW_CLI_TABLE */
};

/* A subcommand: its help is
 *   "usage: gpuwatch NAME SYNOPSIS\n" ["\n" INTRO] "\n" OPTIONS [OUTRO]
 * where INTRO and OUTRO are printed as given (end them with "\n"). */
struct gw_cli_cmd {
    const char *name;          /* "simulate" */
    const char *synopsis;      /* after "usage: gpuwatch NAME "; may span lines */
    const char *intro;         /* NULL or text before the options */
    const struct gw_cli_opt *opts;
    const char *outro;         /* NULL or text after the options */
    /* Arguments that are not options: operand names one ("expression"),
     * stored in the const char * field given by GW_CLI_AT (at, size); NULL:
     * none is taken ("unexpected argument"). A second one is refused. */
    const char *operand;
    size_t at, size;
};

/* Reads argv[0..argc) (the arguments after the subcommand's name) into
 * base, a struct the table's offsets point into (fields not given keep
 * the values they have: set defaults before). Returns -1 when the command
 * should go on, 0 after printing the help (--help, -h), 2 after printing
 * a usage error to stderr. */
int gw_cli_parse(const struct gw_cli_cmd *cmd, int argc, char **argv, void *base);

/* Each option's current value in base as text, for a flags listing
 * (Prometheus' /api/v1/status/flags): cb gets the name without its
 * leading dashes and the value ("true"/"false" for flags, durations as
 * "55d" or "90s", repeated values joined by ","); value is NULL for a
 * GW_CLI_CALL option without a field (the caller knows what it set). */
typedef void (*gw_cli_value_cb)(void *ud, const char *name, const char *value);
void gw_cli_values(const struct gw_cli_cmd *cmd, const void *base, gw_cli_value_cb cb, void *ud);

/* The help of cmd, as --help prints it. */
void gw_cli_usage(const struct gw_cli_cmd *cmd, FILE *f);

/* For a check that needs more than the table (options that exclude each
 * other, say): prints "gpuwatch CMD: " and the message (a newline added),
 * then the usage when with_usage; returns 2. */
int gw_cli_usage_error(const struct gw_cli_cmd *cmd, int with_usage, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Strict number parsing, for values inside a GW_CLI_CALL or an operand. */
/* A whole decimal number in [lo, hi], nothing else (no sign, no blanks):
 * 0, or -1 when v is not one. */
int gw_cli_parse_u64(const char *v, uint64_t lo, uint64_t hi, uint64_t *out);
/* A finite number (strtod syntax, nothing after it): 0, or -1. */
int gw_cli_parse_double(const char *v, double *out);

#endif /* GW_CLI_PARSE_H */
