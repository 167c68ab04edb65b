/* cli_parse.c - strict number parsing for the command-line tools. */
#include "cli_parse.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

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
