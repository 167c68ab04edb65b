/* cli_parse.h - strict number parsing for the command-line tools. */
#ifndef GW_CLI_PARSE_H
#define GW_CLI_PARSE_H

#include <stdint.h>

/* A whole decimal number in [lo, hi], nothing else (no sign, no blanks):
 * 0, or -1 when v is not one. */
int gw_cli_parse_u64(const char *v, uint64_t lo, uint64_t hi, uint64_t *out);
/* A finite number (strtod syntax, nothing after it): 0, or -1. */
int gw_cli_parse_double(const char *v, double *out);

#endif /* GW_CLI_PARSE_H */
