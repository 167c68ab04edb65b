/* lex.c - the PromQL tokenizer, and the text helpers the parser and the
 * printer share (Go-style quoting and unquoting, numbers, durations,
 * Go's float formatting).
 *
 * The tokenizer follows Prometheus' lexer state for state, so the same
 * input gives the same tokens and the same error at the same place:
 *   - outside braces: operators, ( ) [ ] { } , @ : numbers, durations,
 *     strings, identifiers; words are matched case-insensitively against
 *     the keywords (and or unless atan2 by without on ignoring group_left
 *     group_right bool offset start end, the aggregation names) and
 *     inf/nan (numbers); a word containing ':' is a metric identifier.
 *   - inside braces every word is a plain identifier (so `{on="x"}` works)
 *     and only , = != =~ !~ } strings and identifiers are allowed.
 *   - inside brackets only numbers, durations and ':' (once) are allowed.
 *   - `#` starts a comment to the end of the line (dropped).
 * Numbers: decimal with optional fraction and exponent (1, .5, 5., 1e-3),
 * hex integers (0x1F), digit separators (1_000), Inf and NaN. A number
 * directly followed by a unit is a duration (5m, 1h30m, 10ms, 1y2w).
 * Strings: "..." and '...' take Go escapes (\a \b \f \n \r \t \v \\, the
 * quote itself, \xHH, \NNN octal, \uHHHH, \UHHHHHHHH) and end at a line
 * break; `...` is raw (no escapes, may span lines).
 *
 * Example: `sum by (job) (rate(x{a=~"b"}[5m]))` gives
 *   <aggr:sum> <by> "(" identifier "job" ")" "(" identifier "rate" "("
 *   identifier "x" "{" identifier "a" <op:=~> string "\"b\"" "}" "["
 *   duration "5m" "]" ")" ")" end-of-input
 * and `1:5` style positions are computed by the parser from the byte
 * offsets kept in each token. */
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/err.h"
#include "promql/parse_int.h"

#define RUNE_ERROR 0xFFFD
#define EOF_RUNE (-1)

/* ------------------------------------------------------------ UTF-8 */

/* Go's utf8.DecodeRune: invalid or truncated sequences give U+FFFD of
 * width 1. At the end of input gives EOF_RUNE with width 0. */
static int32_t decode_rune(const char *s, size_t len, size_t pos, size_t *width)
{
    uint32_t cp;
    if (pos >= len) {
        *width = 0;
        return EOF_RUNE;
    }
    size_t n = gw_utf8_decode((const uint8_t *)s + pos, len - pos, &cp);
    if (n == 0) {
        *width = 1;
        return RUNE_ERROR;
    }
    *width = n;
    return (int32_t)cp;
}

static size_t encode_rune(uint32_t r, char *out)
{
    return gw_utf8_encode(r, out);
}

/* Go's unicode.IsPrint, approximated: every assigned graphic character is
 * printable; controls, the C1 block, non-ASCII spaces, format characters
 * (soft hyphen, zero-width and bidi controls, BOM), private use and
 * non-characters are not. */
static int is_print(int32_t r)
{
    if (r < 0x20 || (r >= 0x7F && r <= 0xA0) || r == 0xAD)
        return 0;
    if ((r >= 0x2000 && r <= 0x200F) || (r >= 0x2028 && r <= 0x202F) ||
        (r >= 0x205F && r <= 0x206F) || r == 0x3000 || r == 0xFEFF ||
        (r >= 0xFFF9 && r <= 0xFFFB) || r == 0xFFFE || r == 0xFFFF)
        return 0;
    if ((r >= 0xE000 && r <= 0xF8FF) || r >= 0xF0000 || r == 0x1680 || r == 0x180E ||
        (r >= 0xD800 && r <= 0xDFFF) || r > 0x10FFFF)
        return 0;
    return 1;
}

/* --------------------------------------------------------------- quoting */

static int quote_rune_into(struct gw_buf *b, int32_t r, size_t width, unsigned char raw,
                           char quote)
{
    char tmp[16];
    if (r == RUNE_ERROR && width == 1) {
        snprintf(tmp, sizeof tmp, "\\x%02x", raw);
        return gw_buf_append(b, tmp, strlen(tmp));
    }
    if (r == quote || r == '\\') {
        tmp[0] = '\\';
        tmp[1] = (char)r;
        return gw_buf_append(b, tmp, 2);
    }
    if (is_print(r)) {
        size_t n = encode_rune((uint32_t)r, tmp);
        return gw_buf_append(b, tmp, n);
    }
    switch (r) {
    case '\a': return gw_buf_append(b, "\\a", 2);
    case '\b': return gw_buf_append(b, "\\b", 2);
    case '\f': return gw_buf_append(b, "\\f", 2);
    case '\n': return gw_buf_append(b, "\\n", 2);
    case '\r': return gw_buf_append(b, "\\r", 2);
    case '\t': return gw_buf_append(b, "\\t", 2);
    case '\v': return gw_buf_append(b, "\\v", 2);
    default: break;
    }
    if (r < ' ' || r == 0x7F)
        snprintf(tmp, sizeof tmp, "\\x%02x", (unsigned)r);
    else if (r < 0x10000)
        snprintf(tmp, sizeof tmp, "\\u%04x", (unsigned)r);
    else
        snprintf(tmp, sizeof tmp, "\\U%08x", (unsigned)r);
    return gw_buf_append(b, tmp, strlen(tmp));
}

int pq_quote(struct gw_buf *b, const char *s, size_t len, size_t max_runes)
{
    int rc = gw_buf_putc(b, '"');
    size_t i = 0, n = 0;
    while (rc == GW_OK && i < len && (max_runes == 0 || n < max_runes)) {
        size_t w;
        int32_t r = decode_rune(s, len, i, &w);
        rc = quote_rune_into(b, r, w, (unsigned char)s[i], '"');
        i += w;
        n++;
    }
    if (rc == GW_OK)
        rc = gw_buf_putc(b, '"');
    return rc;
}

void pq_quote_rune(int32_t r, char *out, size_t out_len)
{
    struct gw_buf b;
    gw_buf_init(&b, 64);
    if (r < 0 || r > 0x10FFFF || (r >= 0xD800 && r <= 0xDFFF))
        r = RUNE_ERROR;
    if (gw_buf_putc(&b, '\'') == GW_OK && quote_rune_into(&b, r, 3, 0, '\'') == GW_OK &&
        gw_buf_putc(&b, '\'') == GW_OK)
        snprintf(out, out_len, "%.*s", (int)b.len, (const char *)b.data);
    else
        snprintf(out, out_len, "'?'");
    gw_buf_free(&b);
}

/* Go's %#U: "U+0078 'x'" (without the character when not printable). */
static void fmt_rune_u(int32_t r, char *out, size_t out_len)
{
    if (r >= 0 && r <= 0x10FFFF && is_print(r)) {
        char enc[5];
        size_t n = encode_rune((uint32_t)r, enc);
        snprintf(out, out_len, "U+%04X '%.*s'", (unsigned)r, (int)n, enc);
    } else {
        snprintf(out, out_len, "U+%04X", (unsigned)(r < 0 ? RUNE_ERROR : r));
    }
}

static int hexval(int32_t c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return 16;
}

size_t pq_unquote(const char *s, size_t len, char *out)
{
    size_t o = 0;
    if (len < 2) {
        out[0] = '\0';
        return 0;
    }
    char q = s[0];
    size_t i = 1, end = len - 1;
    if (q == '`') {
        memcpy(out, s + 1, len - 2);
        out[len - 2] = '\0';
        return len - 2;
    }
    while (i < end) {
        if (s[i] != '\\') {
            out[o++] = s[i++];
            continue;
        }
        i++;
        if (i >= end)
            break;
        char c = s[i++];
        uint32_t x = 0;
        int n = 0, base = 0, is_byte = 0;
        switch (c) {
        case 'a': out[o++] = '\a'; continue;
        case 'b': out[o++] = '\b'; continue;
        case 'f': out[o++] = '\f'; continue;
        case 'n': out[o++] = '\n'; continue;
        case 'r': out[o++] = '\r'; continue;
        case 't': out[o++] = '\t'; continue;
        case 'v': out[o++] = '\v'; continue;
        case 'x': n = 2; base = 16; is_byte = 1; break;
        case 'u': n = 4; base = 16; break;
        case 'U': n = 8; base = 16; break;
        default:
            if (c >= '0' && c <= '7') {
                n = 2; /* the first digit is c */
                base = 8;
                is_byte = 1;
                x = (uint32_t)(c - '0');
                break;
            }
            out[o++] = c; /* \\ \' \" */
            continue;
        }
        for (int k = 0; k < n && i < end; k++, i++)
            x = x * (uint32_t)base + (uint32_t)hexval((unsigned char)s[i]);
        if (is_byte)
            out[o++] = (char)(x & 0xFF);
        else
            o += encode_rune(x, out + o);
    }
    out[o] = '\0';
    return o;
}

/* ------------------------------------------------------------- the lexer */

struct lexer {
    const char *q;
    size_t len;
    size_t pos, start;
    int paren_depth;
    int brace_open, bracket_open, got_colon;
    struct pq_tokens *ts;
    int done;
};

static int is_alpha(int32_t r) { return r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'); }
static int is_digit(int32_t r) { return r >= '0' && r <= '9'; }
static int is_alnum(int32_t r) { return is_alpha(r) || is_digit(r); }
static int is_space(int32_t r) { return r == ' ' || r == '\t' || r == '\n' || r == '\r'; }

static int32_t lx_next(struct lexer *l, size_t *w)
{
    int32_t r = decode_rune(l->q, l->len, l->pos, w);
    l->pos += *w;
    return r;
}

static int32_t lx_peek(struct lexer *l)
{
    size_t w;
    return decode_rune(l->q, l->len, l->pos, &w);
}

static int lx_accept(struct lexer *l, const char *valid)
{
    int32_t r = lx_peek(l);
    if (r > 0 && r < 128 && strchr(valid, (int)r) != NULL) {
        l->pos++;
        return 1;
    }
    return 0;
}

static int lx_is(struct lexer *l, const char *valid)
{
    int32_t r = lx_peek(l);
    return r > 0 && r < 128 && strchr(valid, (int)r) != NULL;
}

static int lx_push(struct lexer *l, enum pq_tok type, size_t pos, size_t len, int agg)
{
    struct pq_tokens *ts = l->ts;
    if (ts->n == ts->cap) {
        size_t nc = ts->cap ? ts->cap * 2 : 64;
        struct pq_token *t = realloc(ts->t, nc * sizeof *t);
        if (t == NULL)
            return GW_ENOMEM;
        ts->t = t;
        ts->cap = nc;
    }
    ts->t[ts->n].type = type;
    ts->t[ts->n].agg = agg;
    ts->t[ts->n].pos = (uint32_t)pos;
    ts->t[ts->n].len = (uint32_t)len;
    ts->n++;
    return GW_OK;
}

static int lx_emit(struct lexer *l, enum pq_tok type)
{
    int rc = lx_push(l, type, l->start, l->pos - l->start, 0);
    l->start = l->pos;
    return rc;
}

/* Ends the token stream with an error at byte offset `at`. */
static int lx_error(struct lexer *l, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int lx_error(struct lexer *l, size_t at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->ts->err_msg, sizeof l->ts->err_msg, fmt, ap);
    va_end(ap);
    l->done = 1;
    return lx_push(l, PQ_T_ERROR, at, 0, 0);
}

static void lx_skip_comment(struct lexer *l)
{
    while (l->pos < l->len && l->q[l->pos] != '\n' && l->q[l->pos] != '\r')
        l->pos++;
    l->start = l->pos;
}

/* Go's strconv underscoreOK rules are enforced by the scanner below the
 * same way Prometheus' scanNumber does; returns 1 when a number was read. */
static int scan_number(struct lexer *l)
{
    size_t initial = l->pos;
    const char *digits = "0123456789";
    int hex = 0;
    if (lx_accept(l, "0")) {
        if (lx_accept(l, "xX")) {
            lx_accept(l, "_");
            digits = "0123456789abcdefABCDEF";
            hex = 1;
        }
    }
    char all[64];
    snprintf(all, sizeof all, "%s._eE", digits);
    lx_accept(l, ".");
    lx_accept(l, digits);
    int dot = 0, expo = 0;
    while (lx_is(l, all)) {
        if (lx_is(l, ".") && dot) {
            lx_accept(l, ".");
            return 0;
        }
        if (lx_is(l, "eE") && expo && !hex) {
            lx_accept(l, "eE");
            return 0;
        }
        if (lx_accept(l, ".")) {
            dot = 1;
            if (lx_accept(l, "_."))
                return 0;
            if (hex)
                return 0;
            continue;
        }
        if (!hex && lx_accept(l, "eE")) {
            expo = 1;
            lx_accept(l, "+-");
            if (lx_accept(l, "._eE") || lx_peek(l) == EOF_RUNE)
                return 0;
            continue;
        }
        if (lx_accept(l, "_")) {
            if (lx_accept(l, "._eE") || lx_peek(l) == EOF_RUNE)
                return 0;
            continue;
        }
        while (lx_accept(l, digits)) {
        }
    }
    if (l->pos == initial)
        return 0;
    return !is_alnum(lx_peek(l));
}

/* Consumes a duration's units after its first number as Prometheus does:
 * the rune after the duration is read (w = its width) so the caller can
 * step back over it on success; on failure the text up to pos is what
 * the error shows. */
static int accept_remaining_duration(struct lexer *l, size_t *w)
{
    *w = 0;
    if (!lx_accept(l, "smhdwy"))
        return 0;
    lx_accept(l, "s");
    while (lx_accept(l, "0123456789")) {
        while (lx_accept(l, "0123456789")) {
        }
        if (!lx_accept(l, "smhdw"))
            return 0;
        lx_accept(l, "s");
    }
    return !is_alnum(lx_next(l, w));
}

static int lex_number_or_duration(struct lexer *l)
{
    size_t w;
    if (scan_number(l))
        return lx_emit(l, PQ_T_NUMBER);
    if (accept_remaining_duration(l, &w)) {
        l->pos -= w;
        return lx_emit(l, PQ_T_DURATION);
    }
    struct gw_buf b;
    gw_buf_init(&b, 256);
    int rc = pq_quote(&b, l->q + l->start, l->pos - l->start, 64);
    if (rc == GW_OK)
        rc = lx_error(l, l->start, "bad number or duration syntax: %.*s", (int)b.len,
                      (const char *)b.data);
    gw_buf_free(&b);
    return rc;
}

static int lex_escape(struct lexer *l, int32_t quote)
{
    size_t w;
    int32_t ch = lx_next(l, &w);
    int n;
    uint32_t base, max;
    char u[32];
    switch (ch) {
    case 'a': case 'b': case 'f': case 'n': case 'r': case 't': case 'v': case '\\':
        return 1;
    case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7':
        n = 3; base = 8; max = 255;
        break;
    case 'x':
        ch = lx_next(l, &w);
        n = 2; base = 16; max = 255;
        break;
    case 'u':
        ch = lx_next(l, &w);
        n = 4; base = 16; max = 0x10FFFF;
        break;
    case 'U':
        ch = lx_next(l, &w);
        n = 8; base = 16; max = 0x10FFFF;
        break;
    case EOF_RUNE:
        lx_error(l, l->start, "escape sequence not terminated");
        return 0;
    default:
        if (ch == quote)
            return 1;
        fmt_rune_u(ch, u, sizeof u);
        lx_error(l, l->start, "unknown escape sequence %s", u);
        return 0;
    }
    uint32_t x = 0;
    while (n > 0) {
        uint32_t d = (uint32_t)hexval(ch);
        if (d >= base) {
            if (ch == EOF_RUNE) {
                lx_error(l, l->start, "escape sequence not terminated");
                return 0;
            }
            fmt_rune_u(ch, u, sizeof u);
            lx_error(l, l->start, "illegal character %s in escape sequence", u);
            return 0;
        }
        x = x * base + d;
        n--;
        if (n > 0)
            ch = lx_next(l, &w);
    }
    if (x > max || (x >= 0xD800 && x < 0xE000)) {
        lx_error(l, l->start, "escape sequence is an invalid Unicode code point");
        return 0;
    }
    return 1;
}

static int lex_string(struct lexer *l, int32_t quote)
{
    size_t w;
    for (;;) {
        int32_t r = lx_next(l, &w);
        if (r == '\\') {
            if (!lex_escape(l, quote))
                return l->done ? GW_OK : GW_ENOMEM;
            continue;
        }
        if (r == RUNE_ERROR)
            return lx_error(l, l->start, "invalid UTF-8 rune");
        if (r == EOF_RUNE || r == '\n')
            return lx_error(l, l->start, "unterminated quoted string");
        if (r == quote)
            break;
    }
    return lx_emit(l, PQ_T_STRING);
}

static int lex_raw_string(struct lexer *l)
{
    size_t w;
    for (;;) {
        int32_t r = lx_next(l, &w);
        if (r == RUNE_ERROR)
            return lx_error(l, l->start, "invalid UTF-8 rune");
        if (r == EOF_RUNE)
            return lx_error(l, l->start, "unterminated raw string");
        if (r == '`')
            break;
    }
    return lx_emit(l, PQ_T_STRING);
}

struct keyword {
    const char *word;
    enum pq_tok type;
    int agg;
};
static const struct keyword keywords[] = {
    { "and", PQ_T_LAND, 0 },          { "or", PQ_T_LOR, 0 },
    { "unless", PQ_T_LUNLESS, 0 },    { "atan2", PQ_T_ATAN2, 0 },
    { "sum", PQ_T_AGG, GW_PQ_AGG_SUM },
    { "avg", PQ_T_AGG, GW_PQ_AGG_AVG },
    { "count", PQ_T_AGG, GW_PQ_AGG_COUNT },
    { "min", PQ_T_AGG, GW_PQ_AGG_MIN },
    { "max", PQ_T_AGG, GW_PQ_AGG_MAX },
    { "group", PQ_T_AGG, GW_PQ_AGG_GROUP },
    { "stddev", PQ_T_AGG, GW_PQ_AGG_STDDEV },
    { "stdvar", PQ_T_AGG, GW_PQ_AGG_STDVAR },
    { "topk", PQ_T_AGG, GW_PQ_AGG_TOPK },
    { "bottomk", PQ_T_AGG, GW_PQ_AGG_BOTTOMK },
    { "count_values", PQ_T_AGG, GW_PQ_AGG_COUNT_VALUES },
    { "quantile", PQ_T_AGG, GW_PQ_AGG_QUANTILE },
    { "limitk", PQ_T_AGG, GW_PQ_AGG_LIMITK },
    { "limit_ratio", PQ_T_AGG, GW_PQ_AGG_LIMIT_RATIO },
    { "offset", PQ_T_OFFSET, 0 },     { "by", PQ_T_BY, 0 },
    { "without", PQ_T_WITHOUT, 0 },   { "on", PQ_T_ON, 0 },
    { "ignoring", PQ_T_IGNORING, 0 }, { "group_left", PQ_T_GROUP_LEFT, 0 },
    { "group_right", PQ_T_GROUP_RIGHT, 0 }, { "bool", PQ_T_BOOL, 0 },
    { "start", PQ_T_START, 0 },       { "end", PQ_T_END, 0 },
    { "inf", PQ_T_NUMBER, 0 },        { "nan", PQ_T_NUMBER, 0 },
};

static int lex_keyword_or_identifier(struct lexer *l)
{
    int colon = 0;
    while (l->pos < l->len && (is_alnum((unsigned char)l->q[l->pos]) || l->q[l->pos] == ':')) {
        colon |= l->q[l->pos] == ':';
        l->pos++;
    }
    size_t n = l->pos - l->start;
    const char *w = l->q + l->start;
    for (size_t k = 0; k < sizeof keywords / sizeof keywords[0]; k++) {
        if (strlen(keywords[k].word) == n && strncasecmp(keywords[k].word, w, n) == 0) {
            int rc = lx_push(l, keywords[k].type, l->start, n, keywords[k].agg);
            l->start = l->pos;
            return rc;
        }
    }
    return lx_emit(l, colon ? PQ_T_METRIC_IDENT : PQ_T_IDENT);
}

static int lex_inside_braces(struct lexer *l)
{
    size_t w;
    char rq[16];
    if (l->pos < l->len && l->q[l->pos] == '#') {
        lx_skip_comment(l);
        return GW_OK;
    }
    int32_t r = lx_next(l, &w);
    if (r == EOF_RUNE)
        return lx_error(l, l->start, "unexpected end of input inside braces");
    if (is_space(r)) {
        l->start = l->pos;
        return GW_OK;
    }
    if (is_alpha(r)) {
        while (l->pos < l->len && is_alnum((unsigned char)l->q[l->pos]))
            l->pos++;
        return lx_emit(l, PQ_T_IDENT);
    }
    switch (r) {
    case ',':
        return lx_emit(l, PQ_T_COMMA);
    case '"':
    case '\'':
        return lex_string(l, r);
    case '`':
        return lex_raw_string(l);
    case '=':
        if (lx_peek(l) == '~') {
            l->pos++;
            return lx_emit(l, PQ_T_EQL_REGEX);
        }
        return lx_emit(l, PQ_T_EQL);
    case '!': {
        int32_t nr = lx_next(l, &w);
        if (nr == '~')
            return lx_emit(l, PQ_T_NEQ_REGEX);
        if (nr == '=')
            return lx_emit(l, PQ_T_NEQ);
        pq_quote_rune(nr, rq, sizeof rq);
        return lx_error(l, l->start, "unexpected character after '!' inside braces: %s", rq);
    }
    case '{':
        return lx_error(l, l->start, "unexpected left brace '{'");
    case '}':
        l->brace_open = 0;
        return lx_emit(l, PQ_T_RBRACE);
    default:
        pq_quote_rune(r, rq, sizeof rq);
        return lx_error(l, l->start, "unexpected character inside braces: %s", rq);
    }
}

static int lex_statement(struct lexer *l)
{
    size_t w;
    char rq[16];
    if (l->brace_open)
        return lex_inside_braces(l);
    if (l->pos < l->len && l->q[l->pos] == '#') {
        lx_skip_comment(l);
        return GW_OK;
    }
    int32_t r = lx_next(l, &w);
    if (r == EOF_RUNE) {
        if (l->paren_depth != 0)
            return lx_error(l, l->start, "unclosed left parenthesis");
        if (l->bracket_open)
            return lx_error(l, l->start, "unclosed left bracket");
        l->done = 1;
        return lx_emit(l, PQ_T_EOF);
    }
    if (is_space(r)) {
        while (is_space(lx_peek(l)))
            l->pos++;
        l->start = l->pos;
        return GW_OK;
    }
    if (is_digit(r) || (r == '.' && is_digit(lx_peek(l)))) {
        l->pos = l->start;
        return lex_number_or_duration(l);
    }
    if (is_alpha(r) || r == ':') {
        if (!l->bracket_open) {
            l->pos = l->start;
            return lex_keyword_or_identifier(l);
        }
        if (r == ':') {
            if (l->got_colon)
                return lx_error(l, l->start, "unexpected colon ':'");
            l->got_colon = 1;
            return lx_emit(l, PQ_T_COLON);
        }
        pq_quote_rune(r, rq, sizeof rq);
        return lx_error(l, l->start, "unexpected character: %s, expected ':'", rq);
    }
    switch (r) {
    case ',': return lx_emit(l, PQ_T_COMMA);
    case '*': return lx_emit(l, PQ_T_MUL);
    case '/': return lx_emit(l, PQ_T_DIV);
    case '%': return lx_emit(l, PQ_T_MOD);
    case '+': return lx_emit(l, PQ_T_ADD);
    case '-': return lx_emit(l, PQ_T_SUB);
    case '^': return lx_emit(l, PQ_T_POW);
    case '@': return lx_emit(l, PQ_T_AT);
    case '=': {
        int32_t t = lx_peek(l);
        if (t == '=') {
            l->pos++;
            return lx_emit(l, PQ_T_EQLC);
        }
        if (t == '~')
            return lx_error(l, l->start, "unexpected character after '=': '~'");
        return lx_emit(l, PQ_T_EQL);
    }
    case '!': {
        int32_t t = lx_next(l, &w);
        if (t != '=') {
            pq_quote_rune(t, rq, sizeof rq);
            return lx_error(l, l->start, "unexpected character after '!': %s", rq);
        }
        return lx_emit(l, PQ_T_NEQ);
    }
    case '<':
        if (lx_peek(l) == '=') {
            l->pos++;
            return lx_emit(l, PQ_T_LTE);
        }
        return lx_emit(l, PQ_T_LSS);
    case '>':
        if (lx_peek(l) == '=') {
            l->pos++;
            return lx_emit(l, PQ_T_GTE);
        }
        return lx_emit(l, PQ_T_GTR);
    case '"':
    case '\'':
        return lex_string(l, r);
    case '`':
        return lex_raw_string(l);
    case '(':
        l->paren_depth++;
        return lx_emit(l, PQ_T_LPAREN);
    case ')': {
        int rc = lx_emit(l, PQ_T_RPAREN);
        l->paren_depth--;
        if (rc == GW_OK && l->paren_depth < 0) {
            l->ts->n--; /* Prometheus replaces the token by the error */
            return lx_error(l, l->pos, "unexpected right parenthesis ')'");
        }
        return rc;
    }
    case '{':
        l->brace_open = 1;
        return lx_emit(l, PQ_T_LBRACE);
    case '[':
        if (l->bracket_open)
            return lx_error(l, l->start, "unexpected left bracket '['");
        l->got_colon = 0;
        l->bracket_open = 1;
        return lx_emit(l, PQ_T_LBRACKET);
    case ']':
        if (!l->bracket_open)
            return lx_error(l, l->start, "unexpected right bracket ']'");
        l->bracket_open = 0;
        return lx_emit(l, PQ_T_RBRACKET);
    default:
        pq_quote_rune(r, rq, sizeof rq);
        return lx_error(l, l->start, "unexpected character: %s", rq);
    }
}

int pq_lex(const char *q, size_t len, struct pq_tokens *out)
{
    struct lexer l;
    memset(&l, 0, sizeof l);
    memset(out, 0, sizeof *out);
    l.q = q;
    l.len = len;
    l.ts = out;
    while (!l.done) {
        int rc = lex_statement(&l);
        if (rc != GW_OK) {
            pq_tokens_free(out);
            return rc;
        }
    }
    return GW_OK;
}

void pq_tokens_free(struct pq_tokens *ts)
{
    if (ts == NULL)
        return;
    free(ts->t);
    ts->t = NULL;
    ts->n = ts->cap = 0;
}

void pq_token_desc(const char *q, const struct pq_token *t, char *out, size_t out_len)
{
    const char *val = q + t->pos;
    int len = (int)t->len;
    const char *kind = NULL;
    switch (t->type) {
    case PQ_T_EOF:
        snprintf(out, out_len, "end of input");
        return;
    case PQ_T_ERROR:
        snprintf(out, out_len, "error");
        return;
    case PQ_T_ADD: case PQ_T_SUB: case PQ_T_MUL: case PQ_T_DIV: case PQ_T_MOD: case PQ_T_POW:
    case PQ_T_EQLC: case PQ_T_NEQ: case PQ_T_LTE: case PQ_T_LSS: case PQ_T_GTE: case PQ_T_GTR:
    case PQ_T_EQL_REGEX: case PQ_T_NEQ_REGEX: case PQ_T_AT: case PQ_T_ATAN2: case PQ_T_LAND:
    case PQ_T_LOR: case PQ_T_LUNLESS:
        snprintf(out, out_len, "<op:%.*s>", len, val);
        return;
    case PQ_T_AGG:
        snprintf(out, out_len, "<aggr:%.*s>", len, val);
        return;
    case PQ_T_BOOL: case PQ_T_BY: case PQ_T_GROUP_LEFT: case PQ_T_GROUP_RIGHT:
    case PQ_T_IGNORING: case PQ_T_OFFSET: case PQ_T_ON: case PQ_T_WITHOUT:
        snprintf(out, out_len, "<%.*s>", len, val);
        return;
    case PQ_T_IDENT: kind = "identifier"; break;
    case PQ_T_METRIC_IDENT: kind = "metric identifier"; break;
    case PQ_T_NUMBER: kind = "number"; break;
    case PQ_T_DURATION: kind = "duration"; break;
    case PQ_T_STRING: kind = "string"; break;
    default: break;
    }
    struct gw_buf b;
    gw_buf_init(&b, 4096);
    int trunc = kind != NULL && t->type != PQ_T_IDENT && t->type != PQ_T_METRIC_IDENT;
    size_t runes = 0;
    if (trunc) {
        for (size_t i = 0; i < t->len; runes++) {
            size_t w;
            decode_rune(val, t->len, i, &w);
            i += w;
        }
    }
    int cut = trunc && runes > 10;
    if (pq_quote(&b, val, t->len, cut ? 10 : 0) == GW_OK) {
        if (kind)
            snprintf(out, out_len, "%s %.*s%s", kind, (int)b.len, (const char *)b.data,
                     cut ? "..." : "");
        else
            snprintf(out, out_len, "%.*s", (int)b.len, (const char *)b.data);
    } else {
        snprintf(out, out_len, "%s", kind ? kind : "token");
    }
    gw_buf_free(&b);
}

/* ------------------------------------------------------------- numbers */

/* Go's underscoreOK: '_' only between digits, or after a base prefix. */
static int underscore_ok(const char *s, size_t len)
{
    char saw = '^';
    size_t i = 0;
    int hex = 0;
    if (len >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        i = 2;
        saw = '0';
        hex = 1;
    }
    for (; i < len; i++) {
        char c = s[i];
        if (is_digit(c) || (hex && hexval(c) < 16)) {
            saw = '0';
            continue;
        }
        if (c == '_') {
            if (saw != '0')
                return 0;
            saw = '_';
            continue;
        }
        if (saw == '_')
            return 0;
        saw = '!';
    }
    return saw != '_';
}

/* strconv.ParseInt(s, 0, 64) for what the lexer produces. 1 on success. */
static int parse_int0(const char *s, size_t len, int64_t *out)
{
    unsigned base = 10;
    size_t i = 0;
    if (len == 0)
        return 0;
    if (s[0] == '0') {
        if (len >= 3 && (s[1] == 'x' || s[1] == 'X')) {
            base = 16;
            i = 2;
        } else {
            base = 8;
            i = 1;
        }
    }
    uint64_t n = 0;
    int any_us = 0;
    for (; i < len; i++) {
        char c = s[i];
        if (c == '_') {
            any_us = 1;
            continue;
        }
        unsigned d = (unsigned)hexval((unsigned char)c);
        if (d >= base)
            return 0;
        if (n > (UINT64_MAX - d) / base)
            return 0;
        n = n * base + d;
    }
    if (any_us && !underscore_ok(s, len))
        return 0;
    if (n > (uint64_t)INT64_MAX)
        return 0;
    *out = (int64_t)n;
    return 1;
}

int pq_parse_number(const char *s, size_t len, double *out, char *msg, size_t msg_len)
{
    int64_t iv;
    char buf[128];
    if (parse_int0(s, len, &iv)) {
        *out = (double)iv;
        return GW_OK;
    }
    if ((len == 3 && strncasecmp(s, "inf", 3) == 0)) {
        *out = INFINITY;
        return GW_OK;
    }
    if (len == 3 && strncasecmp(s, "nan", 3) == 0) {
        *out = NAN;
        return GW_OK;
    }
    int hex = len >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    size_t o = 0;
    int ok = !hex && len < sizeof buf && underscore_ok(s, len);
    for (size_t i = 0; ok && i < len; i++) {
        if (s[i] != '_')
            buf[o++] = s[i];
    }
    if (ok) {
        buf[o] = '\0';
        char *end = NULL;
        errno = 0;
        double v = strtod(buf, &end);
        if (end == buf + o && o > 0 && (is_digit(buf[0]) || buf[0] == '.')) {
            if (isinf(v)) {
                snprintf(msg, msg_len,
                         "error parsing number: strconv.ParseFloat: parsing \"%.*s\": value out of range",
                         (int)(len > 64 ? 64 : len), s);
                return GW_EPARSE;
            }
            *out = v;
            return GW_OK;
        }
    }
    snprintf(msg, msg_len, "error parsing number: strconv.ParseFloat: parsing \"%.*s\": invalid syntax",
             (int)(len > 64 ? 64 : len), s);
    return GW_EPARSE;
}

/* ------------------------------------------------------------ durations */

int pq_parse_duration(const char *s, size_t len, int allow_zero, int64_t *ms, char *msg,
                      size_t msg_len)
{
    static const struct {
        const char *u;
        uint64_t mult_ms;
        int pos;
    } units[] = {
        { "y", 365ull * 86400000ull, 1 }, { "w", 7ull * 86400000ull, 2 },
        { "d", 86400000ull, 3 },          { "h", 3600000ull, 4 },
        { "m", 60000ull, 5 },             { "s", 1000ull, 6 },
        { "ms", 1ull, 7 },
    };
    const uint64_t max_ms = (uint64_t)INT64_MAX / 1000000ull; /* time.Duration in ns */
    int show = (int)(len > 64 ? 64 : len);
    if (len == 1 && s[0] == '0') {
        *ms = 0;
        goto zero;
    }
    if (len == 0) {
        snprintf(msg, msg_len, "empty duration string");
        return GW_EPARSE;
    }
    uint64_t total = 0;
    int last = 0;
    size_t i = 0;
    while (i < len) {
        if (!is_digit(s[i]))
            goto invalid;
        uint64_t v = 0;
        int ovf = 0;
        while (i < len && is_digit(s[i])) {
            if (v > (UINT64_MAX - 9) / 10)
                ovf = 1;
            else
                v = v * 10 + (uint64_t)(s[i] - '0');
            i++;
        }
        if (ovf)
            goto invalid;
        size_t us = i;
        while (i < len && !is_digit(s[i]))
            i++;
        if (i == us)
            goto invalid;
        int found = -1;
        for (size_t k = 0; k < sizeof units / sizeof units[0]; k++)
            if (strlen(units[k].u) == i - us && memcmp(units[k].u, s + us, i - us) == 0)
                found = (int)k;
        if (found < 0) {
            snprintf(msg, msg_len, "unknown unit \"%.*s\" in duration \"%.*s\"",
                     (int)((i - us) > 16 ? 16 : (i - us)), s + us, show, s);
            return GW_EPARSE;
        }
        if (units[found].pos <= last)
            goto invalid;
        last = units[found].pos;
        if (v > max_ms / units[found].mult_ms) {
            snprintf(msg, msg_len, "duration out of range");
            return GW_EPARSE;
        }
        total += v * units[found].mult_ms;
        if (total > max_ms) {
            snprintf(msg, msg_len, "duration out of range");
            return GW_EPARSE;
        }
    }
    *ms = (int64_t)total;
zero:
    if (*ms == 0 && !allow_zero) {
        snprintf(msg, msg_len, "duration must be greater than 0");
        return GW_EPARSE;
    }
    return GW_OK;
invalid:
    snprintf(msg, msg_len, "not a valid duration string: \"%.*s\"", show, s);
    return GW_EPARSE;
}

int pq_format_duration(struct gw_buf *b, int64_t ms)
{
    static const struct {
        const char *u;
        int64_t mult;
        int exact;
    } units[] = {
        { "y", 365LL * 86400000LL, 1 }, { "w", 7LL * 86400000LL, 1 }, { "d", 86400000LL, 0 },
        { "h", 3600000LL, 0 },          { "m", 60000LL, 0 },          { "s", 1000LL, 0 },
        { "ms", 1LL, 0 },
    };
    if (ms <= 0)
        return gw_buf_append(b, "0s", 2);
    for (size_t k = 0; k < sizeof units / sizeof units[0]; k++) {
        if (units[k].exact && ms % units[k].mult != 0)
            continue;
        int64_t v = ms / units[k].mult;
        if (v > 0) {
            int rc = gw_buf_printf(b, "%lld%s", (long long)v, units[k].u);
            if (rc != GW_OK)
                return rc;
            ms -= v * units[k].mult;
        }
    }
    return GW_OK;
}

/* ------------------------------------------------------------- floats */

int pq_format_float(struct gw_buf *b, double v)
{
    if (isnan(v))
        return gw_buf_append(b, "NaN", 3);
    if (isinf(v))
        return v > 0 ? gw_buf_append(b, "+Inf", 4) : gw_buf_append(b, "-Inf", 4);
    char e[64];
    /* shortest digits that read back as v */
    int p;
    for (p = 0; p < 17; p++) {
        snprintf(e, sizeof e, "%.*e", p, v);
        if (strtod(e, NULL) == v)
            break;
    }
    if (p == 17)
        snprintf(e, sizeof e, "%.16e", v);
    /* e is [-]d[.ddd]e[+-]xx: split digits and exponent */
    char digs[32];
    size_t nd = 0;
    const char *c = e;
    int neg = 0;
    if (*c == '-') {
        neg = 1;
        c++;
    }
    while (*c && *c != 'e') {
        if (is_digit(*c) && nd < sizeof digs - 1)
            digs[nd++] = *c;
        c++;
    }
    int exp10 = (*c == 'e') ? (int)strtol(c + 1, NULL, 10) : 0;
    while (nd > 1 && digs[nd - 1] == '0')
        nd--;
    digs[nd] = '\0';
    int zero = nd == 1 && digs[0] == '0';
    if (zero)
        exp10 = 0;
    int rc = GW_OK;
    if (neg)
        rc = gw_buf_putc(b, '-');
    if (rc != GW_OK)
        return rc;
    if (!zero && (exp10 < -4 || exp10 >= 6)) {
        /* %e form: Go's shortest 'g' switches at exponents < -4 or >= 6 */
        rc = gw_buf_putc(b, digs[0]);
        if (rc == GW_OK && nd > 1) {
            rc = gw_buf_putc(b, '.');
            if (rc == GW_OK)
                rc = gw_buf_append(b, digs + 1, nd - 1);
        }
        if (rc == GW_OK)
            rc = gw_buf_printf(b, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
        return rc;
    }
    /* %f form with exactly the shortest digits */
    int dp = exp10 + 1; /* digits before the decimal point */
    if (dp <= 0) {
        rc = gw_buf_append(b, "0.", 2);
        for (int k = 0; rc == GW_OK && k < -dp; k++)
            rc = gw_buf_putc(b, '0');
        if (rc == GW_OK)
            rc = gw_buf_append(b, digs, nd);
        return rc;
    }
    for (int k = 0; rc == GW_OK && k < dp; k++)
        rc = gw_buf_putc(b, (size_t)k < nd ? digs[k] : '0');
    if (rc == GW_OK && (size_t)dp < nd) {
        rc = gw_buf_putc(b, '.');
        if (rc == GW_OK)
            rc = gw_buf_append(b, digs + dp, nd - (size_t)dp);
    }
    return rc;
}

int pq_is_label_name(const char *s, size_t len)
{
    if (len == 0)
        return 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!(is_alpha(c) || (i > 0 && is_digit(c))))
            return 0;
    }
    return 1;
}

int pq_is_valid_utf8_label(const char *s, size_t len)
{
    if (len == 0)
        return 0;
    for (size_t i = 0; i < len;) {
        size_t w;
        int32_t r = decode_rune(s, len, i, &w);
        if ((r == RUNE_ERROR && w == 1) || r == 0)
            return 0;
        i += w;
    }
    return 1;
}
