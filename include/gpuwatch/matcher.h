/* gpuwatch/matcher.h - label matchers (= != =~ !~) with Prometheus
 * semantics: regexes are fully anchored, RE2-style syntax through PCRE2
 * (compiled once, JIT when available), `.` matches newline. A label that is
 * absent matches as the empty string. */
#ifndef GW_MATCHER_H
#define GW_MATCHER_H

#include <stddef.h>
#include <stdint.h>
#include "gpuwatch/err.h"

enum gw_match_type { GW_MATCH_EQ = 0, GW_MATCH_NEQ = 1, GW_MATCH_RE = 2, GW_MATCH_NRE = 3 };

struct gw_matcher {
    enum gw_match_type type;
    char *name;          /* owned, NUL-terminated */
    size_t name_len;
    char *value;         /* owned, NUL-terminated (the pattern for =~ !~) */
    size_t value_len;
    void *re;            /* owned compiled regex (pcre2_code*), NULL for = != */
    void *md;            /* owned match data */
    /* Regex shortcuts computed at compile time (never change results): */
    int re_literal;      /* pattern is a plain literal: compare bytes */
    int re_match_all;    /* pattern is ".*" */
};

/* Builds a matcher; copies name and value. GW_OK, GW_EPARSE (bad regex, with
 * the PCRE2 message and offset in err), GW_ENOMEM. */
int gw_matcher_init(struct gw_matcher *m, enum gw_match_type type,
                    const char *name, size_t name_len,
                    const char *value, size_t value_len, struct gw_error *err);
void gw_matcher_free(struct gw_matcher *m);   /* NULL ok; idempotent */

/* 1 if value (not NUL-terminated) satisfies m, else 0. Not thread-safe per
 * matcher (it owns its match data): one matcher per query/thread. */
int gw_matcher_matches(const struct gw_matcher *m, const char *value, size_t len);

/* 1 if m matches the empty string (i.e. series without the label). */
int gw_matcher_matches_empty(const struct gw_matcher *m);

/* 1 if the whole canonical label set satisfies every matcher. */
int gw_matchers_match_labels(const struct gw_matcher *ms, size_t n,
                             const uint8_t *canon, size_t len);

/* Parses a series selector like `up`, `{job="x"}`, `node_cpu{mode!~"idle|iowait",cpu="0"}`
 * (the form used by match[] and remote-read tests) into up to max matchers.
 * Strings take Go-style escapes in "..." '...' or `...`. The metric name
 * becomes __name__="...". Fails with GW_EPARSE ("parse error at char N: ...")
 * or GW_EINVAL when no matcher requires a non-empty value. */
int gw_selector_parse(const char *s, size_t len, struct gw_matcher *out, size_t max,
                      size_t *n, struct gw_error *err);

#endif /* GW_MATCHER_H */
