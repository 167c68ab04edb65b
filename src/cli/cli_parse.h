/* cli_parse.h - strict number and option parsing for the command-line tools. */
#ifndef GW_CLI_PARSE_H
#define GW_CLI_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* A whole decimal number in [lo, hi], nothing else (no sign, no blanks):
 * 0, or -1 when v is not one. */
int gw_cli_parse_u64(const char *v, uint64_t lo, uint64_t hi, uint64_t *out);
/* A finite number (strtod syntax, nothing after it): 0, or -1. */
int gw_cli_parse_double(const char *v, double *out);

/* The option at argv[*i]: "--name", "--name=value" or "--name value".
 * Names in flags (NULL-terminated) take no value, any other takes one; when
 * known (NULL-terminated) is given, other names are refused. Returns 0 with
 * the name copied (cap bytes) and *value set (NULL for a flag; *i moves past
 * a separate value), or 2 after printing the problem ("gpuwatch CMD: ...",
 * with usage for an unexpected argument or unknown option) to stderr. */
int gw_cli_option(int argc, char **argv, int *i, const char *cmd, const char *usage, const char *const *flags,
                  const char *const *known, char *name, size_t cap, const char **value);

/* The simple option reading of serve, stats and retention. */
/* 1 when any argument is --help or -h. */
int gw_cli_want_help(int argc, char **argv);
/* The value of option name at argv[*i] ("--x v" or "--x=v", *i moves past
 * a separate value), NULL when argv[*i] is another option; exits with 2
 * ("gpuwatch: option --x needs a value") when the value is missing. */
const char *gw_cli_opt_value(int argc, char **argv, int *i, const char *name);
/* A positive Prometheus duration in ms; exits with 2 and a message naming
 * opt when v is not one. */
int64_t gw_cli_parse_dur_or_exit(const char *opt, const char *v);
/* A decimal number in [lo, hi]; exits with 2 and a message naming opt. */
long gw_cli_parse_long_or_exit(const char *opt, const char *v, long lo, long hi);

#endif /* GW_CLI_PARSE_H */
