/* model_int.h - helpers shared by labels.c and matcher.c only. */
#ifndef GW_MODEL_INT_H
#define GW_MODEL_INT_H

#include <stddef.h>

#define QUOTE_MAX 64 /* bytes of an offending name/value shown in messages */

/* Renders up to QUOTE_MAX bytes of s for an error message into dst (cap
 * bytes, at least QUOTE_MAX * 4 + 8 for no truncation): printable ASCII as
 * is, `"` and `\` escaped, everything else as \xNN; "..." when cut.
 * Returns dst. */
const char *gw_model_quote(char *dst, size_t cap, const char *s, size_t len);

#endif /* GW_MODEL_INT_H */
