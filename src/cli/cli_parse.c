/* cli_parse.c - strict number and option parsing for the command-line tools. */
#include "cli_parse.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/err.h"

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

static int in_list(const char *const *list, const char *name)
{
    for (; list && *list; list++)
        if (!strcmp(*list, name))
            return 1;
    return 0;
}

int gw_cli_option(int argc, char **argv, int *i, const char *cmd, const char *usage, const char *const *flags,
                  const char *const *known, char *name, size_t cap, const char **value)
{
    const char *a = argv[*i], *eq = strchr(a, '=');
    size_t nl = eq ? (size_t)(eq - a) : strlen(a);
    *value = NULL;
    if (strncmp(a, "--", 2) != 0 || nl >= cap) {
        fprintf(stderr, "gpuwatch %s: unexpected argument \"%s\"\n\n%s", cmd, a, usage);
        return 2;
    }
    memcpy(name, a, nl);
    name[nl] = '\0';
    if (known && !in_list(known, name)) {
        fprintf(stderr, "gpuwatch %s: unknown option \"%s\"\n\n%s", cmd, name, usage);
        return 2;
    }
    if (in_list(flags, name)) {
        if (eq) {
            fprintf(stderr, "gpuwatch %s: %s takes no value\n", cmd, name);
            return 2;
        }
    } else if (eq) {
        *value = eq + 1;
    } else if (*i + 1 < argc) {
        *value = argv[++*i];
    } else {
        fprintf(stderr, "gpuwatch %s: option %s needs a value\n", cmd, name);
        return 2;
    }
    return 0;
}

int gw_cli_want_help(int argc, char **argv)
{
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return 1;
    return 0;
}

const char *gw_cli_opt_value(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0) return NULL;
    if (argv[*i][n] == '=') return argv[*i] + n + 1;
    if (argv[*i][n] != '\0') return NULL;
    if (*i + 1 >= argc) {
        fprintf(stderr, "gpuwatch: option %s needs a value\n", name);
        exit(2);
    }
    (*i)++;
    return argv[*i];
}

int64_t gw_cli_parse_dur_or_exit(const char *opt, const char *v)
{
    int64_t ms;
    if (gw_parse_duration_ms(v, &ms) != GW_OK || ms <= 0) {
        fprintf(stderr, "gpuwatch: invalid duration for %s: \"%s\" (examples: 55d, 12h, 8w)\n", opt, v);
        exit(2);
    }
    return ms;
}

long gw_cli_parse_long_or_exit(const char *opt, const char *v, long lo, long hi)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) {
        fprintf(stderr, "gpuwatch: invalid value for %s: \"%s\" (expected %ld..%ld)\n", opt, v, lo, hi);
        exit(2);
    }
    return x;
}
