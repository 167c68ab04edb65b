/* gpuwatch/promql.h - PromQL: the syntax tree, the parser and printer, and
 * the evaluator (instant and range queries) over a sample source.
 *
 * Semantics follow Prometheus 3 by default (left-open range selectors and
 * lookback windows: (t - r, t]); compat 2 selects Prometheus 2's closed
 * windows ([t - r, t]). Everything else - extrapolation of rate/increase/
 * delta, staleness, Kahan summation, vector matching and its errors,
 * histogram_quantile on classic buckets, label handling - matches
 * Prometheus bit for bit.
 *
 * Life cycle:
 *   struct gw_pq_expr *e;
 *   gw_pq_parse(q, strlen(q), &e, &err);          // 400 bad_data on failure
 *   gw_pq_eval_range(&src, e, start, end, step, &opts, &res, &err);
 *   ... res.type, res.series ...
 *   gw_pq_result_free(&res); gw_pq_expr_free(e);
 *
 * Times are Unix milliseconds; durations milliseconds.
 * Layer: L4 features (src/promql/); includes only its layer and below (docs/architecture.md). */
#ifndef GW_PROMQL_H
#define GW_PROMQL_H

#include <stddef.h>
#include <stdint.h>
#include "gpuwatch/arena.h"
#include "gpuwatch/buf.h"
#include "gpuwatch/err.h"
#include "gpuwatch/matcher.h"

/* ------------------------------------------------------------------ types */

enum gw_pq_type {
    GW_PQ_T_NONE = 0,
    GW_PQ_T_SCALAR,
    GW_PQ_T_VECTOR,   /* instant vector */
    GW_PQ_T_MATRIX,   /* range vector */
    GW_PQ_T_STRING
};
/* "scalar", "vector", "matrix", "string" (the JSON resultType names). */
const char *gw_pq_type_name(enum gw_pq_type t);

enum gw_pq_kind {
    GW_PQ_NUMBER,        /* 1, 0x1f, 1e3, Inf, NaN, 5m (as seconds) */
    GW_PQ_STRING_LIT,    /* "abc" */
    GW_PQ_VECTOR_SEL,    /* metric{a="b"} offset 5m @ 123 */
    GW_PQ_MATRIX_SEL,    /* metric{a="b"}[5m] offset 5m @ 123 */
    GW_PQ_SUBQUERY,      /* expr[30m:1m] offset 5m @ end() */
    GW_PQ_CALL,          /* rate(x[5m]) */
    GW_PQ_AGGREGATE,     /* sum by (a) (x) */
    GW_PQ_BINARY,        /* a + on(b) group_left(c) b */
    GW_PQ_UNARY,         /* -a */
    GW_PQ_PAREN          /* (a) */
};

enum gw_pq_op {
    GW_PQ_OP_ADD, GW_PQ_OP_SUB, GW_PQ_OP_MUL, GW_PQ_OP_DIV, GW_PQ_OP_MOD, GW_PQ_OP_POW,
    GW_PQ_OP_ATAN2,
    GW_PQ_OP_EQL, GW_PQ_OP_NEQ, GW_PQ_OP_GTR, GW_PQ_OP_LSS, GW_PQ_OP_GTE, GW_PQ_OP_LTE,
    GW_PQ_OP_AND, GW_PQ_OP_OR, GW_PQ_OP_UNLESS
};
/* "+", "-", ..., "atan2", "==", ..., "and", "or", "unless". */
const char *gw_pq_op_name(enum gw_pq_op op);
int gw_pq_op_is_comparison(enum gw_pq_op op);
int gw_pq_op_is_set(enum gw_pq_op op);

enum gw_pq_agg {
    GW_PQ_AGG_SUM, GW_PQ_AGG_AVG, GW_PQ_AGG_COUNT, GW_PQ_AGG_MIN, GW_PQ_AGG_MAX,
    GW_PQ_AGG_GROUP, GW_PQ_AGG_STDDEV, GW_PQ_AGG_STDVAR, GW_PQ_AGG_TOPK, GW_PQ_AGG_BOTTOMK,
    GW_PQ_AGG_COUNT_VALUES, GW_PQ_AGG_QUANTILE, GW_PQ_AGG_LIMITK, GW_PQ_AGG_LIMIT_RATIO
};
const char *gw_pq_agg_name(enum gw_pq_agg a);

/* Every function of Prometheus 3 (parser/functions.go). Those marked
 * experimental are parsed only when gw_pq_parse_opts.experimental is set,
 * as Prometheus does behind --enable-feature=promql-experimental-functions. */
enum gw_pq_func_id {
    GW_PQ_F_ABS, GW_PQ_F_ABSENT, GW_PQ_F_ABSENT_OVER_TIME, GW_PQ_F_ACOS, GW_PQ_F_ACOSH,
    GW_PQ_F_ASIN, GW_PQ_F_ASINH, GW_PQ_F_ATAN, GW_PQ_F_ATANH, GW_PQ_F_AVG_OVER_TIME,
    GW_PQ_F_CEIL, GW_PQ_F_CHANGES, GW_PQ_F_CLAMP, GW_PQ_F_CLAMP_MAX, GW_PQ_F_CLAMP_MIN,
    GW_PQ_F_COS, GW_PQ_F_COSH, GW_PQ_F_COUNT_OVER_TIME, GW_PQ_F_DAYS_IN_MONTH,
    GW_PQ_F_DAY_OF_MONTH, GW_PQ_F_DAY_OF_WEEK, GW_PQ_F_DAY_OF_YEAR, GW_PQ_F_DEG,
    GW_PQ_F_DELTA, GW_PQ_F_DERIV, GW_PQ_F_EXP, GW_PQ_F_FIRST_OVER_TIME, GW_PQ_F_FLOOR,
    GW_PQ_F_HISTOGRAM_AVG, GW_PQ_F_HISTOGRAM_COUNT, GW_PQ_F_HISTOGRAM_SUM,
    GW_PQ_F_HISTOGRAM_STDDEV, GW_PQ_F_HISTOGRAM_STDVAR, GW_PQ_F_HISTOGRAM_FRACTION,
    GW_PQ_F_HISTOGRAM_QUANTILE, GW_PQ_F_HOUR, GW_PQ_F_IDELTA, GW_PQ_F_INCREASE,
    GW_PQ_F_IRATE, GW_PQ_F_LABEL_REPLACE, GW_PQ_F_LABEL_JOIN, GW_PQ_F_LAST_OVER_TIME,
    GW_PQ_F_LN, GW_PQ_F_LOG10, GW_PQ_F_LOG2, GW_PQ_F_MAX_OVER_TIME, GW_PQ_F_MIN_OVER_TIME,
    GW_PQ_F_MINUTE, GW_PQ_F_MONTH, GW_PQ_F_PI, GW_PQ_F_PREDICT_LINEAR,
    GW_PQ_F_PRESENT_OVER_TIME, GW_PQ_F_QUANTILE_OVER_TIME, GW_PQ_F_RAD, GW_PQ_F_RATE,
    GW_PQ_F_RESETS, GW_PQ_F_ROUND, GW_PQ_F_SCALAR, GW_PQ_F_SGN, GW_PQ_F_SIN, GW_PQ_F_SINH,
    GW_PQ_F_SORT, GW_PQ_F_SORT_DESC, GW_PQ_F_SQRT, GW_PQ_F_STDDEV_OVER_TIME,
    GW_PQ_F_STDVAR_OVER_TIME, GW_PQ_F_SUM_OVER_TIME, GW_PQ_F_TAN, GW_PQ_F_TANH,
    GW_PQ_F_TIME, GW_PQ_F_TIMESTAMP, GW_PQ_F_VECTOR, GW_PQ_F_YEAR,
    /* experimental */
    GW_PQ_F_DOUBLE_EXPONENTIAL_SMOOTHING, GW_PQ_F_MAD_OVER_TIME, GW_PQ_F_SORT_BY_LABEL,
    GW_PQ_F_SORT_BY_LABEL_DESC, GW_PQ_F_TS_OF_MAX_OVER_TIME, GW_PQ_F_TS_OF_MIN_OVER_TIME,
    GW_PQ_F_TS_OF_LAST_OVER_TIME, GW_PQ_F_TS_OF_FIRST_OVER_TIME,
    GW_PQ_F_COUNT_
};

#define GW_PQ_MAX_FUNC_ARGS 8
struct gw_pq_func {
    enum gw_pq_func_id id;
    const char *name;
    enum gw_pq_type arg_types[GW_PQ_MAX_FUNC_ARGS];
    int n_args;            /* declared argument types */
    int variadic;          /* 0: exactly n_args; -1: the last type repeats without bound;
                              k > 0: the last declared argument is optional and up to
                              n_args - 1 + k arguments are allowed (Prometheus' rule) */
    enum gw_pq_type ret;
    int experimental;
};
/* NULL when unknown. */
const struct gw_pq_func *gw_pq_func_lookup(const char *name, size_t len);
const struct gw_pq_func *gw_pq_func_by_id(enum gw_pq_func_id id);

/* -------------------------------------------------------------- the tree */

enum gw_pq_at { GW_PQ_AT_NONE = 0, GW_PQ_AT_TIME, GW_PQ_AT_START, GW_PQ_AT_END };

/* Vector matching of a binary operation between two instant vectors. */
struct gw_pq_vmatch {
    enum { GW_PQ_CARD_ONE_TO_ONE, GW_PQ_CARD_MANY_TO_ONE, GW_PQ_CARD_ONE_TO_MANY,
           GW_PQ_CARD_MANY_TO_MANY } card;   /* and/or/unless are many-to-many */
    int on;                /* 1: on(labels); 0: ignoring(labels) (or neither given) */
    int on_given;          /* on/ignoring written in the query (printer) */
    char **labels;         /* on/ignoring list, NUL-terminated strings */
    size_t n_labels;
    char **include;        /* group_left/group_right extra labels */
    size_t n_include;
};

struct gw_pq_node {
    enum gw_pq_kind kind;
    enum gw_pq_type type;          /* result type, set by the parser */
    uint32_t pos, end;             /* byte range in the query text [pos, end) */
    union {
        double number;
        struct {
            char *s;               /* decoded (escapes resolved), NUL-terminated */
            size_t len;
        } str;
        struct {                   /* GW_PQ_VECTOR_SEL and GW_PQ_MATRIX_SEL */
            char *name;            /* metric name as written before '{', or NULL */
            struct gw_matcher *matchers;  /* all matchers incl. __name__="name" */
            size_t n_matchers;
            int64_t range_ms;      /* MATRIX_SEL only */
            int64_t offset_ms;     /* may be negative */
            enum gw_pq_at at;
            int64_t at_ms;         /* GW_PQ_AT_TIME */
        } sel;
        struct {
            struct gw_pq_node *expr;
            int64_t range_ms;
            int64_t step_ms;       /* 0 = default (the evaluation interval) */
            int64_t offset_ms;
            enum gw_pq_at at;
            int64_t at_ms;
        } sub;
        struct {
            const struct gw_pq_func *func;
            struct gw_pq_node **args;
            size_t n_args;
        } call;
        struct {
            enum gw_pq_agg op;
            struct gw_pq_node *expr;
            struct gw_pq_node *param;   /* topk/bottomk/quantile/count_values/limitk/limit_ratio */
            char **grouping;            /* NUL-terminated label names */
            size_t n_grouping;
            int without;
            int by_given;               /* by(...) or without(...) was written */
            int grouping_after;         /* written after the arguments (recorded; the printer,
                                           like Prometheus', puts by/without first) */
        } agg;
        struct {
            enum gw_pq_op op;
            struct gw_pq_node *lhs, *rhs;
            int return_bool;
            struct gw_pq_vmatch *vm;    /* NULL unless both sides are instant vectors */
        } bin;
        struct {
            enum gw_pq_op op;           /* GW_PQ_OP_ADD or GW_PQ_OP_SUB */
            struct gw_pq_node *expr;
        } unary;
        struct gw_pq_node *paren;
    } u;
};

/* A parsed query; all nodes and strings live in its arena. */
struct gw_pq_expr {
    struct gw_pq_node *root;
    struct gw_arena arena;
    char *text;            /* copy of the query text */
    size_t text_len;
};

struct gw_pq_parse_opts {
    int experimental;      /* accept experimental functions and aggregations */
    int compat;            /* 0 or 3: Prometheus 3's function set; 2: Prometheus
                            * 2's, where holt_winters is a normal function (the
                            * later double_exponential_smoothing, printed as
                            * holt_winters) */
};

/* Limits on what a query may be (hostile input cannot exhaust memory or stack). */
#define GW_PQ_MAX_QUERY_BYTES (1u << 20)
#define GW_PQ_MAX_DEPTH 512

/* Parses and type-checks. Errors are GW_EPARSE with Prometheus' message
 * substance and position, e.g.
 *   "1:5: parse error: unexpected <op:+>"  (line:column, 1-based),
 * GW_ETOOLARGE above GW_PQ_MAX_QUERY_BYTES, GW_ENOMEM. opts may be NULL. */
int gw_pq_parse(const char *q, size_t len, const struct gw_pq_parse_opts *opts,
                struct gw_pq_expr **out, struct gw_error *err);
void gw_pq_expr_free(struct gw_pq_expr *e);   /* NULL ok */

/* A series selector in text form - `up`, `{job="x"}`,
 * `node_cpu{mode!~"idle|iowait",cpu="0"}`, `{"my.metric"}` - as match[]
 * and remote-read tests write it, parsed by the PromQL parser (the one
 * selector grammar): the same strings, escapes, quoted names and errors
 * as inside a query; a range, offset, @ or any other expression is
 * refused. Up to max matchers into out; the metric name (__name__="...")
 * is out[0] when there is one. GW_EPARSE with the parser's message
 * ("1:6: parse error: ..."; also when no matcher requires a non-empty
 * value), GW_ELIMIT above max matchers, GW_ETOOLARGE above
 * GW_SELECTOR_MAX_BYTES, GW_ENOMEM. On success out[0..*n) are the
 * caller's (gw_matcher_free each); on failure nothing is left allocated
 * and *n is untouched. */
int gw_pq_parse_selector(const char *s, size_t len, struct gw_matcher *out, size_t max, size_t *n,
                         struct gw_error *err);

/* Prints n in Prometheus' canonical one-line form (what String() gives,
 * e.g. `sum by (job) (rate(http_requests_total{job="a"}[5m] offset 1m))`). */
int gw_pq_print(const struct gw_pq_node *n, struct gw_buf *out);
/* Prints n prettified like /api/v1/format_query (Prometheus' Pretty(0)):
 * one line when it fits in 100 columns, else split with 2-space indents. */
int gw_pq_format(const struct gw_pq_node *n, struct gw_buf *out);

/* --------------------------------------------------------------- sources */

/* Where the evaluator reads samples: every series matching all matchers
 * with its samples in [mint, maxt] (inclusive), in any series order, each
 * series' samples in time order. The callback is the database's. */
typedef int (*gw_pq_series_cb)(void *ud, uint64_t sid, const uint8_t *labels, size_t labels_len,
                               const int64_t *t, const double *v, size_t n);
/* Downsampled aggregates (docs/downsampling.md): a selector may ask for
 * one synthetic sample per aggregate bucket instead of the raw samples
 * (values as gw_db_view in db.h). exact_ms says the evaluator proved the
 * answer equal to raw for that bucket size; accept_ms is the query's
 * max_source_resolution. */
enum gw_pq_view_kind {
    GW_PQ_VIEW_RAW = 0,
    GW_PQ_VIEW_LAST,          /* bucket's last sample, stale markers included */
    GW_PQ_VIEW_LAST_VALUE,    /* bucket's last non-stale sample */
    GW_PQ_VIEW_MAX,           /* bucket's max_over_time */
    GW_PQ_VIEW_MIN            /* bucket's min_over_time */
};
#define GW_PQ_RES_RAW (-1)
struct gw_pq_view {
    int kind;
    int64_t exact_ms;
    int64_t accept_ms;
};
struct gw_pq_source {
    void *ud;
    int (*select)(void *ud, const struct gw_matcher *ms, size_t n_ms, int64_t mint, int64_t maxt,
                  gw_pq_series_cb cb, void *cb_ud, struct gw_error *err);
    /* optional: select through a view (NULL: select() is used) */
    int (*select_view)(void *ud, const struct gw_matcher *ms, size_t n_ms, int64_t mint, int64_t maxt,
                       const struct gw_pq_view *view, gw_pq_series_cb cb, void *cb_ud, struct gw_error *err);
};
struct gw_db;
/* A source over a database (gw_db_select with only_with_data). */
void gw_pq_source_db(struct gw_pq_source *src, struct gw_db *db);

/* ------------------------------------------------------------ evaluation */

struct gw_pq_opts {
    int64_t lookback_ms;       /* default 5 min */
    int compat;                /* 3 (default): (t-r, t]; 2: [t-r, t] */
    uint64_t max_samples;      /* samples held at once; default 50,000,000; 0 = default */
    int64_t timeout_ms;        /* default 120,000; 0 = default */
    int64_t max_points;        /* points per series of a range query; default 11,000 */
    size_t max_memory_bytes;   /* scratch memory of the evaluation (at least 4 MiB); 0 = 32 bytes
                                  x max_samples; past it GW_ELIMIT naming the memory limit */
    int experimental;          /* as gw_pq_parse_opts */
    int64_t max_source_resolution_ms; /* 0: aggregates only where they equal raw (and on
                                         days without raw data); GW_PQ_RES_RAW: raw only;
                                         300000 / 3600000: aggregates up to that bucket
                                         size wherever present (docs/downsampling.md) */
};
void gw_pq_opts_default(struct gw_pq_opts *o);

/* One series of a result. labels are canonical bytes (labels.h), sorted;
 * for a vector n == 1 and t[0] is the evaluation time. */
struct gw_pq_series {
    uint8_t *labels;
    size_t labels_len;
    int64_t *t;
    double *v;
    size_t n;
};

struct gw_pq_result {
    enum gw_pq_type type;
    /* scalar / string */
    int64_t t;
    double scalar;
    char *str;
    /* vector / matrix: vectors keep the order the query gives (sort(),
     * topk) or label order; matrices are in label order */
    struct gw_pq_series *series;
    size_t n_series;
    uint64_t samples_touched;  /* statistics */
    struct gw_arena arena;     /* owns everything above */
};
void gw_pq_result_free(struct gw_pq_result *r);   /* NULL ok */

/* Error codes of evaluation, mapped to the API's errorType:
 *   GW_EINVAL  execution (422): many-to-many matching, duplicate series,
 *              invalid arguments found at run time (e.g. label_replace regex)
 *   GW_ELIMIT  execution (422): "query processing would load too many samples
 *              into memory in query execution"
 *   GW_ETOOLARGE bad_data (400): more than max_points per series
 *   GW_ETIMEOUT timeout (503): timeout_ms passed
 *   GW_ENOMEM  internal (500); storage errors internal (500). */
int gw_pq_eval_instant(const struct gw_pq_source *src, const struct gw_pq_expr *e, int64_t t,
                       const struct gw_pq_opts *o, struct gw_pq_result *res, struct gw_error *err);
/* start <= end, step > 0; evaluation times start, start+step, ... <= end.
 * The result is a matrix (scalar expressions give one series with no
 * labels); a string expression is GW_EINVAL (Prometheus refuses it). */
int gw_pq_eval_range(const struct gw_pq_source *src, const struct gw_pq_expr *e, int64_t start,
                     int64_t end, int64_t step, const struct gw_pq_opts *o,
                     struct gw_pq_result *res, struct gw_error *err);

#endif /* GW_PROMQL_H */
