/* matcher.c - label matchers (= != =~ !~). Selectors in text form are
 * parsed by the PromQL parser (gw_pq_parse_selector), the one grammar.
 *
 * Regexes follow Prometheus: RE2 syntax, fully anchored, `.` matches
 * newline. They run on PCRE2 (8-bit, UTF mode) compiled with
 * PCRE2_ANCHORED | PCRE2_ENDANCHORED (no textual wrapping, so `a)|(b`
 * cannot escape an added group), PCRE2_DOTALL and PCRE2_DOLLAR_ENDONLY
 * (Go's `$` does not match before a trailing newline). PCRE-only syntax
 * that RE2 lacks (backreferences, lookaround, recursion, conditionals,
 * atomic groups, possessive quantifiers, (*VERBS), \C) is refused before
 * compiling, so patterns behave as they would in Prometheus.
 *
 * Matching: plain literals compare bytes, ".*" matches everything, ".+"
 * anything non-empty; otherwise PCRE2 (JIT when available) under a match
 * limit (and a bounded JIT stack). When the backtracking matcher hits a
 * limit the same subject is run through pcre2_dfa_match, which does not
 * backtrack and so decides cases like `(a|aa)+b` on a long subject; its
 * work is capped too (a step budget counted through auto-callouts). If
 * both give up the value matches neither =~ nor !~, so `(a+)+$` on
 * "aaa...ab" costs milliseconds, never an exponential search.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/labels.h"
#include "gpuwatch/matcher.h"
#include "model/model_int.h"

#define DFA_WS_INTS 1000 /* automaton workspace (PCRE2's customary size) */
#define DFA_STEP_BUDGET 4000000u /* automaton steps before giving up */
#define JIT_STACK_MAX (512u * 1024u)
#define RE_COMPILE_OPTS (PCRE2_UTF | PCRE2_DOTALL | PCRE2_DOLLAR_ENDONLY | PCRE2_ANCHORED | \
                         PCRE2_ENDANCHORED | PCRE2_NEVER_BACKSLASH_C | PCRE2_NO_AUTO_CAPTURE)
#define DEPTH_LIMIT 10000u
#define HEAP_LIMIT_KIB (32u * 1024u)

struct re_ctx {
    pcre2_match_context *bt;   /* backtracking / JIT matcher limits */
    pcre2_jit_stack *jit_stack;/* NULL when JIT is unavailable */
    pcre2_match_context *dfa;  /* fallback automaton matcher, budget callout */
    pcre2_code *dfa_re;        /* same pattern with auto-callouts, built lazily */
    int dfa_re_failed;         /* building dfa_re failed once: don't retry */
    uint64_t dfa_steps;        /* callouts seen in the current fallback run */
};


static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* ---- RE2 compatibility check --------------------------------------------- */

/* Parses a counted repetition {n}, {n,}, {n,m} at p[i] == '{'. Returns the
 * index just past '}' or 0 when it is not one (then '{' is a literal). */
static size_t counted_rep_end(const char *p, size_t len, size_t i)
{
    size_t j = i + 1, d = 0;
    while (j < len && is_digit((unsigned char)p[j])) {
        j++;
        d++;
    }
    if (d == 0)
        return 0;
    if (j < len && p[j] == ',') {
        j++;
        while (j < len && is_digit((unsigned char)p[j]))
            j++;
    }
    if (j < len && p[j] == '}')
        return j + 1;
    return 0;
}

/* Returns NULL when the pattern uses only RE2-compatible constructs, else a
 * description of the first offending construct and its offset in *off. */
static const char *re2_check(const char *p, size_t len, size_t *off)
{
    int in_class = 0;
    size_t class_start = 0;
    size_t i = 0;
    while (i < len) {
        char c = p[i];
        *off = i;
        if (c == '\\') {
            if (i + 1 >= len)
                return NULL; /* trailing backslash: PCRE2 reports it */
            char d = p[i + 1];
            if (d == 'Q') {
                const char *e = NULL;
                for (size_t k = i + 2; k + 1 < len; k++)
                    if (p[k] == '\\' && p[k + 1] == 'E') {
                        e = p + k;
                        break;
                    }
                i = e ? (size_t)(e - p) + 2 : len;
                continue;
            }
            if (!in_class) {
                /* \1..\9 alone is a backreference; \1 followed by an octal
                 * digit is an octal escape in both RE2 and PCRE2. */
                char after = i + 2 < len ? p[i + 2] : '\0';
                if (d >= '1' && d <= '9' && (d >= '8' || after < '0' || after > '7'))
                    return "backreferences are not supported";
                if (d == 'g' || d == 'k')
                    return "backreferences are not supported";
            }
            if (d == 'C')
                return "\\C is not supported";
            i += 2;
            if (!in_class && i < len && (p[i] == '*' || p[i] == '+' || p[i] == '?') &&
                i + 1 < len && p[i + 1] == '+') {
                *off = i + 1;
                return "possessive quantifiers are not supported";
            }
            continue;
        }
        if (in_class) {
            if (c == '[' && i + 1 < len && p[i + 1] == ':') {
                /* POSIX class [:alpha:] - skip to ":]" */
                size_t k = i + 2;
                while (k + 1 < len && !(p[k] == ':' && p[k + 1] == ']'))
                    k++;
                if (k + 1 < len) {
                    i = k + 2;
                    continue;
                }
            }
            if (c == ']' && i > class_start)
                in_class = 0;
            i++;
            continue;
        }
        switch (c) {
        case '[':
            in_class = 1;
            i++;
            if (i < len && p[i] == '^')
                i++;
            class_start = i; /* a ']' right here is a literal */
            if (i < len && p[i] == ']')
                i++;
            continue;
        case '(':
            if (i + 1 < len && p[i + 1] == '*')
                return "(*VERB) constructs are not supported";
            if (i + 1 < len && p[i + 1] == '?') {
                char e = i + 2 < len ? p[i + 2] : '\0';
                char f = i + 3 < len ? p[i + 3] : '\0';
                if (e == ':') {
                    i += 3;
                    continue;
                }
                if (e == '=' || e == '!')
                    return "lookahead assertions are not supported";
                if (e == '<' && (f == '=' || f == '!'))
                    return "lookbehind assertions are not supported";
                if (e == '<') { /* (?<name>...) */
                    i += 3;
                    continue;
                }
                if (e == 'P' && f == '<') {
                    i += 4;
                    continue;
                }
                if (e == 'P' && f == '=')
                    return "backreferences are not supported";
                if (e == 'P' && f == '>')
                    return "recursion is not supported";
                /* flag groups (?i) (?s-m:...) with RE2's flags only */
                size_t k = i + 2;
                while (k < len && (p[k] == 'i' || p[k] == 'm' || p[k] == 's' || p[k] == 'U' ||
                                   p[k] == '-'))
                    k++;
                if (k > i + 2 && k < len && (p[k] == ')' || p[k] == ':')) {
                    i = k + 1;
                    continue;
                }
                if (e == '>')
                    return "atomic groups are not supported";
                if (e == '(')
                    return "conditional groups are not supported";
                if (e == 'R' || e == '&' || is_digit((unsigned char)e) || e == '+' ||
                    (e == '-' && is_digit((unsigned char)f)))
                    return "recursion is not supported";
                return "unsupported group syntax";
            }
            i++;
            continue;
        case '*':
        case '+':
        case '?':
            if (i + 1 < len && p[i + 1] == '+') {
                *off = i + 1;
                return "possessive quantifiers are not supported";
            }
            i++;
            continue;
        case '{': {
            size_t end = counted_rep_end(p, len, i);
            if (end == 0) {
                i++;
                continue;
            }
            if (end < len && p[end] == '+') {
                *off = end;
                return "possessive quantifiers are not supported";
            }
            i = end;
            continue;
        }
        default:
            i++;
            continue;
        }
    }
    return NULL;
}

static int is_literal(const char *p, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (memchr("\\.+*?()|[]{}^$", p[i], 14) != NULL)
            return 0;
    return 1;
}

/* ---- matcher lifecycle ------------------------------------------------------ */

static char *dup_bytes(const char *s, size_t len)
{
    char *d = malloc(len + 1);
    if (d == NULL)
        return NULL;
    if (len)
        memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

static void re_ctx_free(struct re_ctx *c)
{
    if (c == NULL)
        return;
    pcre2_match_context_free(c->bt);
    pcre2_match_context_free(c->dfa);
    pcre2_jit_stack_free(c->jit_stack);
    pcre2_code_free(c->dfa_re);
    free(c);
}

/* Auto-callout hook of the automaton fallback: aborts once the step budget
 * is spent, which bounds its time the way the match limit bounds the
 * backtracking matcher. */
static int dfa_budget(pcre2_callout_block *cb, void *data)
{
    (void)cb;
    struct re_ctx *ctx = data;
    return ++ctx->dfa_steps > DFA_STEP_BUDGET ? PCRE2_ERROR_CALLOUT : 0;
}

static int compile_regex(struct gw_matcher *m, struct gw_error *err)
{
    char q[QUOTE_MAX * 4 + 8];
    size_t off = 0;
    int rc = GW_ENOMEM;
    pcre2_compile_context *cc = NULL;
    pcre2_code *re = NULL;
    pcre2_match_data *md = NULL;
    struct re_ctx *ctx = NULL;

    if (m->value_len > GW_MATCHER_PATTERN_MAX) {
        rc = gw_error_set(err, GW_EPARSE, "regular expression too long: %zu bytes (limit %u)",
                          m->value_len, GW_MATCHER_PATTERN_MAX);
        goto out;
    }
    const char *why = re2_check(m->value, m->value_len, &off);
    if (why != NULL) {
        rc = gw_error_set(err, GW_EPARSE, "invalid regular expression \"%s\": %s (at offset %zu)",
                          gw_model_quote(q, sizeof q, m->value, m->value_len), why, off);
        goto out;
    }

    cc = pcre2_compile_context_create(NULL);
    if (cc == NULL)
        goto out;
    pcre2_set_max_pattern_length(cc, GW_MATCHER_PATTERN_MAX);

    int ecode = 0;
    PCRE2_SIZE eoff = 0;
    re = pcre2_compile((PCRE2_SPTR)m->value, m->value_len,
                       m->capture ? RE_COMPILE_OPTS & ~(uint32_t)PCRE2_NO_AUTO_CAPTURE : RE_COMPILE_OPTS, &ecode, &eoff, cc);
    if (re == NULL) {
        PCRE2_UCHAR msg[160];
        if (pcre2_get_error_message(ecode, msg, sizeof msg) < 0 && msg[0] == '\0')
            snprintf((char *)msg, sizeof msg, "error %d", ecode);
        if (ecode == PCRE2_ERROR_HEAP_FAILED) {
            rc = gw_error_set(err, GW_ENOMEM, "out of memory compiling regular expression");
            goto out;
        }
        rc = gw_error_set(err, GW_EPARSE, "invalid regular expression \"%s\": %s (at offset %zu)",
                          gw_model_quote(q, sizeof q, m->value, m->value_len), (const char *)msg,
                          (size_t)eoff);
        goto out;
    }
    int jit = pcre2_jit_compile(re, PCRE2_JIT_COMPLETE) == 0; /* else interpreter */

    md = pcre2_match_data_create_from_pattern(re, NULL);
    ctx = calloc(1, sizeof *ctx);
    if (md == NULL || ctx == NULL)
        goto out;
    ctx->bt = pcre2_match_context_create(NULL);
    ctx->dfa = pcre2_match_context_create(NULL);
    if (ctx->bt == NULL || ctx->dfa == NULL)
        goto out;
    if (jit) {
        ctx->jit_stack = pcre2_jit_stack_create(32 * 1024, JIT_STACK_MAX, NULL);
        if (ctx->jit_stack != NULL)
            pcre2_jit_stack_assign(ctx->bt, NULL, ctx->jit_stack);
    }
    pcre2_set_callout(ctx->dfa, dfa_budget, ctx);
    pcre2_set_match_limit(ctx->bt, GW_MATCHER_MATCH_LIMIT);
    pcre2_set_depth_limit(ctx->bt, DEPTH_LIMIT);
    pcre2_set_heap_limit(ctx->bt, HEAP_LIMIT_KIB);
    pcre2_set_heap_limit(ctx->dfa, HEAP_LIMIT_KIB);

    m->re = re;
    m->md = md;
    m->mctx = ctx;
    re = NULL;
    md = NULL;
    ctx = NULL;
    rc = GW_OK;
out:
    if (rc == GW_ENOMEM && (err == NULL || err->code != GW_ENOMEM))
        gw_error_set(err, GW_ENOMEM, "out of memory compiling regular expression");
    re_ctx_free(ctx);
    pcre2_match_data_free(md);
    pcre2_code_free(re);
    pcre2_compile_context_free(cc);
    return rc;
}

static int matcher_init(struct gw_matcher *m, enum gw_match_type type, const char *name, size_t name_len,
                        const char *value, size_t value_len, int capture, struct gw_error *err)
{
    struct gw_matcher t;
    int rc;
    memset(&t, 0, sizeof t);
    t.capture = capture;
    if (m == NULL)
        return gw_error_set(err, GW_EINVAL, "matcher is NULL");
    memset(m, 0, sizeof *m);
    if (type != GW_MATCH_EQ && type != GW_MATCH_NEQ && type != GW_MATCH_RE && type != GW_MATCH_NRE)
        return gw_error_set(err, GW_EINVAL, "unknown matcher type %d", (int)type);
    if ((name == NULL && name_len) || (value == NULL && value_len))
        return gw_error_set(err, GW_EINVAL, "matcher name or value is NULL");

    t.type = type;
    t.name = dup_bytes(name, name_len);
    t.value = dup_bytes(value, value_len);
    t.name_len = name_len;
    t.value_len = value_len;
    if (t.name == NULL || t.value == NULL) {
        rc = gw_error_set(err, GW_ENOMEM, "out of memory building matcher");
        goto fail;
    }
    if (type == GW_MATCH_RE || type == GW_MATCH_NRE) {
        /* Always compile, even for the shortcuts, so invalid patterns (e.g.
         * bad UTF-8) fail the same way whatever their shape. */
        rc = compile_regex(&t, err);
        if (rc != GW_OK)
            goto fail;
        t.re_literal = is_literal(t.value, t.value_len);
        t.re_match_all = value_len == 2 && memcmp(value, ".*", 2) == 0;
        t.re_non_empty = value_len == 2 && memcmp(value, ".+", 2) == 0;
    }
    *m = t;
    return GW_OK;
fail:
    gw_matcher_free(&t);
    return rc;
}

int gw_matcher_init(struct gw_matcher *m, enum gw_match_type type,
                    const char *name, size_t name_len,
                    const char *value, size_t value_len, struct gw_error *err)
{
    return matcher_init(m, type, name, name_len, value, value_len, 0, err);
}

int gw_matcher_init_capturing(struct gw_matcher *m, const char *name, size_t name_len, const char *pattern,
                              size_t pattern_len, struct gw_error *err)
{
    return matcher_init(m, GW_MATCH_RE, name, name_len, pattern, pattern_len, 1, err);
}

void gw_matcher_free(struct gw_matcher *m)
{
    if (m == NULL)
        return;
    free(m->name);
    free(m->value);
    pcre2_match_data_free((pcre2_match_data *)m->md);
    pcre2_code_free((pcre2_code *)m->re);
    re_ctx_free((struct re_ctx *)m->mctx);
    memset(m, 0, sizeof *m);
}

/* ---- matching ------------------------------------------------------------------- */

/* Automaton fallback after the backtracking matcher gave up: 1 match, 0 no
 * match, -1 undecided (budget or workspace exhausted, no memory). Runs a
 * copy of the pattern compiled with auto-callouts, so every automaton step
 * is counted. */
static int dfa_match(const struct gw_matcher *m, PCRE2_SPTR subj, size_t len)
{
    struct re_ctx *ctx = m->mctx;
    if (ctx->dfa_re == NULL) {
        int ecode;
        PCRE2_SIZE eoff;
        if (ctx->dfa_re_failed)
            return -1;
        ctx->dfa_re = pcre2_compile((PCRE2_SPTR)m->value, m->value_len,
                                    RE_COMPILE_OPTS | PCRE2_AUTO_CALLOUT, &ecode, &eoff, NULL);
        if (ctx->dfa_re == NULL) {
            ctx->dfa_re_failed = 1;
            return -1;
        }
    }
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    if (md == NULL)
        return -1;
    /* A small fixed workspace bounds the number of live automaton states
     * (patterns like `(a+)+` would otherwise grow it with the subject);
     * running out counts as "cannot decide". */
    int ws[DFA_WS_INTS];
    ctx->dfa_steps = 0;
    int rc = pcre2_dfa_match(ctx->dfa_re, subj, len, 0, PCRE2_ENDANCHORED, md, ctx->dfa, ws,
                             DFA_WS_INTS);
    /* rc 0 means more matches than ovector slots; slot 0 holds the longest,
     * which must span the whole subject. */
    int result = -1;
    if (rc >= 0)
        result = pcre2_get_ovector_pointer(md)[0] == 0 && pcre2_get_ovector_pointer(md)[1] == len;
    else if (rc == PCRE2_ERROR_NOMATCH)
        result = 0;
    pcre2_match_data_free(md);
    return result;
}

/* 1 match, 0 no match, -1 undecided (limits, subject not UTF-8). */
static int regex_matches(const struct gw_matcher *m, const char *value, size_t len)
{
    if (m->re_match_all)
        return 1;
    if (m->re_non_empty)
        return len > 0;
    if (m->re_literal)
        return len == m->value_len && (len == 0 || memcmp(value, m->value, len) == 0);
    if (m->re == NULL || m->md == NULL || m->mctx == NULL)
        return -1;
    PCRE2_SPTR subj = (PCRE2_SPTR)(value ? value : "");
    const struct re_ctx *ctx = m->mctx;
    int rc = pcre2_match((const pcre2_code *)m->re, subj, len, 0, 0,
                         (pcre2_match_data *)m->md, ctx->bt);
    if (rc >= 0)
        return 1;
    switch (rc) {
    case PCRE2_ERROR_NOMATCH:
        return 0;
    case PCRE2_ERROR_MATCHLIMIT:
    case PCRE2_ERROR_DEPTHLIMIT:
    case PCRE2_ERROR_HEAPLIMIT:
    case PCRE2_ERROR_JIT_STACKLIMIT:
    case PCRE2_ERROR_NOMEMORY:
        return dfa_match(m, subj, len);
    default:
        return -1; /* e.g. subject is not valid UTF-8 */
    }
}

int gw_matcher_matches(const struct gw_matcher *m, const char *value, size_t len)
{
    if (m == NULL)
        return 0;
    switch (m->type) {
    case GW_MATCH_EQ:
        return len == m->value_len && (len == 0 || memcmp(value, m->value, len) == 0);
    case GW_MATCH_NEQ:
        return !(len == m->value_len && (len == 0 || memcmp(value, m->value, len) == 0));
    case GW_MATCH_RE:
        return regex_matches(m, value, len) == 1;
    case GW_MATCH_NRE:
        return regex_matches(m, value, len) == 0; /* undecided matches neither */
    }
    return 0;
}

/* Runs a capturing matcher (backtracking/JIT matcher only, under its
 * limits): the pcre2_match result (>= 1 on a match: highest group set + 1),
 * or 0 / negative. */
static int capture_match(const struct gw_matcher *m, const char *value, size_t len)
{
    if (m == NULL || m->type != GW_MATCH_RE || m->re == NULL || m->md == NULL || m->mctx == NULL)
        return 0;
    const struct re_ctx *ctx = m->mctx;
    PCRE2_SPTR subj = (PCRE2_SPTR)(value ? value : "");
    return pcre2_match((const pcre2_code *)m->re, subj, len, 0, 0, (pcre2_match_data *)m->md, ctx->bt);
}

int gw_matcher_group(const struct gw_matcher *m, const char *value, size_t len, const char **group,
                     size_t *group_len)
{
    if (capture_match(m, value, len) < 2)
        return 0;
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer((pcre2_match_data *)m->md);
    if (ov[2] == PCRE2_UNSET || ov[3] < ov[2] || ov[3] > len)
        return 0;
    *group = value + ov[2];
    *group_len = ov[3] - ov[2];
    return 1;
}

size_t gw_matcher_groups(const struct gw_matcher *m, const char *value, size_t len, size_t *ovector,
                         size_t max_groups)
{
    if (max_groups == 0 || m == NULL || !m->capture)
        return 0;
    int rc = capture_match(m, value, len);
    if (rc <= 0)
        return 0;   /* rc 0 cannot happen: the match data holds every group */
    size_t n = (size_t)rc < max_groups ? (size_t)rc : max_groups;
    const PCRE2_SIZE *ov = pcre2_get_ovector_pointer((pcre2_match_data *)m->md);
    for (size_t i = 0; i < n; i++) {
        PCRE2_SIZE a = ov[2 * i], b = ov[2 * i + 1];
        if (a == PCRE2_UNSET || b < a || b > len)
            a = b = (PCRE2_SIZE)GW_MATCHER_UNSET;
        ovector[2 * i] = (size_t)a;
        ovector[2 * i + 1] = (size_t)b;
    }
    return n;
}

size_t gw_matcher_group_count(const struct gw_matcher *m)
{
    uint32_t n = 0;
    if (m == NULL || m->type != GW_MATCH_RE || !m->capture || m->re == NULL ||
        pcre2_pattern_info((const pcre2_code *)m->re, PCRE2_INFO_CAPTURECOUNT, &n) != 0)
        return 0;
    return (size_t)n + 1;
}

long gw_matcher_group_number(const struct gw_matcher *m, const char *name, size_t len)
{
    uint32_t cnt = 0, esz = 0;
    PCRE2_SPTR tab = NULL;
    if (m == NULL || m->type != GW_MATCH_RE || !m->capture || m->re == NULL)
        return -1;
    const pcre2_code *re = m->re;
    if (pcre2_pattern_info(re, PCRE2_INFO_NAMECOUNT, &cnt) != 0 ||
        pcre2_pattern_info(re, PCRE2_INFO_NAMEENTRYSIZE, &esz) != 0 ||
        pcre2_pattern_info(re, PCRE2_INFO_NAMETABLE, &tab) != 0)
        return -1;
    /* entries: 2-byte group number, NUL-terminated name */
    for (uint32_t k = 0; k < cnt && tab; k++) {
        PCRE2_SPTR ent = tab + (size_t)k * esz;
        const char *en = (const char *)(ent + 2);
        if (strlen(en) == len && memcmp(en, name, len) == 0)
            return (long)((ent[0] << 8) | ent[1]);
    }
    return -1;
}

int gw_matcher_matches_empty(const struct gw_matcher *m)
{
    return gw_matcher_matches(m, "", 0);
}

int gw_matchers_match_labels(const struct gw_matcher *ms, size_t n,
                             const uint8_t *canon, size_t len)
{
    for (size_t i = 0; i < n; i++) {
        const char *v = "";
        size_t vlen = 0;
        if (!gw_labels_get(canon, len, ms[i].name, ms[i].name_len, &v, &vlen)) {
            v = "";
            vlen = 0;
        }
        if (!gw_matcher_matches(&ms[i], v, vlen))
            return 0;
    }
    return 1;
}
