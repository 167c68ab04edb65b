/* gpuwatch/matcher.h - label matchers (= != =~ !~) with Prometheus
 * semantics: regexes are fully anchored, RE2-style syntax through PCRE2
 * (compiled once, JIT when available), `.` matches newline. A label that is
 * absent matches as the empty string.
 * Layer: L1 encoding (src/model/); includes only its layer and below (docs/architecture.md). */
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
    int re_non_empty;    /* pattern is ".+" */
    void *mctx;          /* owned match contexts (limits), NULL for = != */
    int capture;         /* compiled with capture groups (gw_matcher_init_capturing) */
};

/* Regex engine limits: a hostile pattern cannot hang a query. The
 * backtracking matcher stops after GW_MATCHER_MATCH_LIMIT steps and the
 * match is then retried with PCRE2's non-backtracking automaton matcher
 * under its own step budget; if that gives up too the value matches
 * neither =~ nor !~ (the same holds for a value that is not valid UTF-8).
 * Patterns longer than GW_MATCHER_PATTERN_MAX bytes are refused with
 * GW_EPARSE. */
#define GW_MATCHER_MATCH_LIMIT 1000000u
#define GW_MATCHER_PATTERN_MAX (1u << 20)
/* Selector text longer than this is refused with GW_ETOOLARGE
 * (gw_pq_parse_selector in promql.h). */
#define GW_SELECTOR_MAX_BYTES (1u << 20)

/* Builds a matcher; copies name and value. GW_OK, GW_EPARSE (bad regex, with
 * the PCRE2 message and offset in err; also PCRE-only syntax that RE2 lacks:
 * backreferences, lookaround, recursion, atomic groups, possessive
 * quantifiers, verbs), GW_EINVAL (unknown type), GW_ENOMEM. On failure m is
 * left zeroed (gw_matcher_free on it is a no-op). */
int gw_matcher_init(struct gw_matcher *m, enum gw_match_type type,
                    const char *name, size_t name_len,
                    const char *value, size_t value_len, struct gw_error *err);
void gw_matcher_free(struct gw_matcher *m);   /* NULL ok; idempotent */
/* A =~ matcher whose groups are captured, for gw_matcher_group (label
 * matchers compile without captures: faster, same results). */
int gw_matcher_init_capturing(struct gw_matcher *m, const char *name, size_t name_len, const char *pattern,
                              size_t pattern_len, struct gw_error *err);

/* 1 if value (not NUL-terminated) satisfies m, else 0. Not thread-safe per
 * matcher (it owns its match data): one matcher per query/thread. */
int gw_matcher_matches(const struct gw_matcher *m, const char *value, size_t len);

/* For a capturing matcher: 1 when value matches and the pattern's first capture
 * group took part in the match; *group / *group_len then point into value
 * (as Prometheus' relabelling reads $1). The backtracking matcher only,
 * under GW_MATCHER_MATCH_LIMIT: a pattern that exceeds it yields 0. Not
 * thread-safe per matcher. */
int gw_matcher_group(const struct gw_matcher *m, const char *value, size_t len, const char **group,
                     size_t *group_len);

/* All capture groups, for label_replace's $1 ${1} $name expansion. For a
 * capturing matcher: when value matches, fills ovector[2*i], ovector[2*i+1]
 * with the start and end offsets in value of group i (group 0 is the whole
 * match) for i < the returned count, GW_MATCHER_UNSET in both for a group
 * that took no part in the match, and returns that count (>= 1; groups at
 * or above it took no part either; at most max_groups, so a caller that
 * wants them all passes gw_matcher_group_count(m)). Returns 0 when value
 * does not match, when m is not a capturing =~ matcher, when max_groups is
 * 0, and when the match exceeds the limits (same engine and limits as
 * gw_matcher_group). Not thread-safe per matcher. */
#define GW_MATCHER_UNSET ((size_t)-1)
size_t gw_matcher_groups(const struct gw_matcher *m, const char *value, size_t len, size_t *ovector,
                         size_t max_groups);
/* Capture groups of a capturing matcher's pattern plus one (group 0); 0 for
 * any other matcher. */
size_t gw_matcher_group_count(const struct gw_matcher *m);
/* Number of the group named name[0..len) in a capturing matcher's pattern
 * (`(?P<name>...)`, `(?<name>...)`), or -1 when there is none. */
long gw_matcher_group_number(const struct gw_matcher *m, const char *name, size_t len);

/* 1 if m matches the empty string (i.e. series without the label). */
int gw_matcher_matches_empty(const struct gw_matcher *m);

/* 1 if the whole canonical label set satisfies every matcher. */
int gw_matchers_match_labels(const struct gw_matcher *ms, size_t n,
                             const uint8_t *canon, size_t len);

#endif /* GW_MATCHER_H */
