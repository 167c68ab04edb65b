/* src/promql/parse_int.h - what the PromQL lexer (lex.c), parser (parse.c)
 * and printer (print.c) share: the token kinds, the tokenizer, Go-style
 * quoting and unquoting, numbers, Prometheus durations and Go's float
 * formatting. Nothing outside these three files includes it. */
#ifndef GW_PROMQL_PARSE_INT_H
#define GW_PROMQL_PARSE_INT_H

#include <stddef.h>
#include <stdint.h>
#include "gpuwatch/buf.h"
#include "gpuwatch/promql.h"

enum pq_tok {
    PQ_T_EOF = 0,
    PQ_T_ERROR,          /* lexer error: message in the lexer, position in pos */
    PQ_T_IDENT,          /* [a-zA-Z_][a-zA-Z0-9_]* that is not a keyword */
    PQ_T_METRIC_IDENT,   /* an identifier containing ':' */
    PQ_T_NUMBER,         /* 1, 0x1f, 1e3, .5, 1_000, Inf, NaN */
    PQ_T_DURATION,       /* 5m, 1h30m, 10ms */
    PQ_T_STRING,         /* "..." '...' `...` as written (quotes included) */
    PQ_T_LPAREN, PQ_T_RPAREN, PQ_T_LBRACE, PQ_T_RBRACE, PQ_T_LBRACKET, PQ_T_RBRACKET,
    PQ_T_COMMA, PQ_T_EQL, PQ_T_COLON,
    /* operators (Prometheus prints them as <op:x>) */
    PQ_T_ADD, PQ_T_SUB, PQ_T_MUL, PQ_T_DIV, PQ_T_MOD, PQ_T_POW,
    PQ_T_EQLC, PQ_T_NEQ, PQ_T_LTE, PQ_T_LSS, PQ_T_GTE, PQ_T_GTR,
    PQ_T_EQL_REGEX, PQ_T_NEQ_REGEX, PQ_T_AT, PQ_T_ATAN2, PQ_T_LAND, PQ_T_LOR, PQ_T_LUNLESS,
    /* aggregators (<aggr:x>); which one is in pq_token.agg */
    PQ_T_AGG,
    /* keywords (<x>) */
    PQ_T_BOOL, PQ_T_BY, PQ_T_GROUP_LEFT, PQ_T_GROUP_RIGHT, PQ_T_IGNORING, PQ_T_OFFSET,
    PQ_T_ON, PQ_T_WITHOUT,
    /* @ modifier preprocessors */
    PQ_T_START, PQ_T_END
};

struct pq_token {
    enum pq_tok type;
    int agg;             /* enum gw_pq_agg for PQ_T_AGG */
    uint32_t pos;        /* byte offset of the first byte */
    uint32_t len;        /* bytes */
};

/* The whole query as tokens; comments are dropped. The array always ends
 * with PQ_T_EOF or PQ_T_ERROR (then err_msg says why, as Prometheus' lexer
 * words it, and the token's pos is where Prometheus reports it). */
struct pq_tokens {
    struct pq_token *t;  /* owned (free()) */
    size_t n, cap;
    char err_msg[160];
};

/* GW_OK or GW_ENOMEM. Lexer errors are not failures here: they end the
 * token array with PQ_T_ERROR. */
int pq_lex(const char *q, size_t len, struct pq_tokens *out);
void pq_tokens_free(struct pq_tokens *ts);

/* Token description as Prometheus' parser words it in "unexpected ..."
 * messages: `identifier "foo"`, `<op:+>`, `<aggr:sum>`, `<by>`, `"("`,
 * `end of input`, `number "1"`, `string "\"abc\""`. */
void pq_token_desc(const char *q, const struct pq_token *t, char *out, size_t out_len);

/* Decodes a string token (quotes included) with Go escapes into a
 * NUL-terminated copy in out (out_cap >= len is always enough). The lexer
 * has already validated it. Returns the decoded length. */
size_t pq_unquote(const char *s, size_t len, char *out);

/* Go's strconv.Quote (with '"') of s into b; with max_runes > 0 only the
 * first max_runes characters are quoted (Go's %.Nq). */
int pq_quote(struct gw_buf *b, const char *s, size_t len, size_t max_runes);
/* Go's %q of one rune (single quotes). */
void pq_quote_rune(int32_t r, char *out, size_t out_len);

/* Prometheus' number(): strconv.ParseInt(s, 0, 64) then ParseFloat.
 * GW_OK or GW_EPARSE with a message in msg. */
int pq_parse_number(const char *s, size_t len, double *out, char *msg, size_t msg_len);

/* Prometheus' model.ParseDuration plus "duration must be greater than 0"
 * when allow_zero is 0. Result in milliseconds. */
int pq_parse_duration(const char *s, size_t len, int allow_zero, int64_t *ms, char *msg,
                      size_t msg_len);

/* model.Duration(ms).String(): "1h30m", "5m", "1y", "10ms", "0s". ms >= 0. */
int pq_format_duration(struct gw_buf *b, int64_t ms);

/* Go's strconv.FormatFloat(v, 'g', -1, 64) / fmt.Sprint(v): "1", "0.5",
 * "1e+06", "+Inf", "-Inf", "NaN". */
int pq_format_float(struct gw_buf *b, double v);

/* 1 if s is a valid legacy label name [a-zA-Z_][a-zA-Z0-9_]*. */
int pq_is_label_name(const char *s, size_t len);

/* 1 if s is a label name Prometheus 3 accepts (UTF-8 names): non-empty,
 * valid UTF-8; NUL bytes are refused too (grouping labels are kept as
 * NUL-terminated strings). */
int pq_is_valid_utf8_label(const char *s, size_t len);

#endif /* GW_PROMQL_PARSE_INT_H */
