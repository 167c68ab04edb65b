/* functions_table.c - the PromQL function table (names, argument types,
 * variadic rule, return type, experimental flag) as Prometheus 3 defines
 * it in promql/parser/functions.go, plus the names of types, operators and
 * aggregations.
 *
 * Variadic follows Prometheus: 0 means exactly n_args arguments; k > 0
 * means the last declared argument is optional and at most k arguments
 * may follow the other n_args - 1 (round(v) or round(v, 5);
 * hour() or hour(v)); -1 means at least n_args - 1 arguments and the last
 * type repeats without bound (label_join(v, "dst", "sep", "a", "b", ...)).
 *
 * The table is indexed by enum gw_pq_func_id; lookups by name are a
 * linear scan over the names (a few dozen short compares). */
#include <stddef.h>
#include <string.h>

#include "gpuwatch/promql.h"

#define S GW_PQ_T_SCALAR
#define V GW_PQ_T_VECTOR
#define M GW_PQ_T_MATRIX
#define T GW_PQ_T_STRING

static const struct gw_pq_func funcs[GW_PQ_F_COUNT_] = {
    { GW_PQ_F_ABS, "abs", { V }, 1, 0, V, 0 },
    { GW_PQ_F_ABSENT, "absent", { V }, 1, 0, V, 0 },
    { GW_PQ_F_ABSENT_OVER_TIME, "absent_over_time", { M }, 1, 0, V, 0 },
    { GW_PQ_F_ACOS, "acos", { V }, 1, 0, V, 0 },
    { GW_PQ_F_ACOSH, "acosh", { V }, 1, 0, V, 0 },
    { GW_PQ_F_ASIN, "asin", { V }, 1, 0, V, 0 },
    { GW_PQ_F_ASINH, "asinh", { V }, 1, 0, V, 0 },
    { GW_PQ_F_ATAN, "atan", { V }, 1, 0, V, 0 },
    { GW_PQ_F_ATANH, "atanh", { V }, 1, 0, V, 0 },
    { GW_PQ_F_AVG_OVER_TIME, "avg_over_time", { M }, 1, 0, V, 0 },
    { GW_PQ_F_CEIL, "ceil", { V }, 1, 0, V, 0 },
    { GW_PQ_F_CHANGES, "changes", { M }, 1, 0, V, 0 },
    { GW_PQ_F_CLAMP, "clamp", { V, S, S }, 3, 0, V, 0 },
    { GW_PQ_F_CLAMP_MAX, "clamp_max", { V, S }, 2, 0, V, 0 },
    { GW_PQ_F_CLAMP_MIN, "clamp_min", { V, S }, 2, 0, V, 0 },
    { GW_PQ_F_COS, "cos", { V }, 1, 0, V, 0 },
    { GW_PQ_F_COSH, "cosh", { V }, 1, 0, V, 0 },
    { GW_PQ_F_COUNT_OVER_TIME, "count_over_time", { M }, 1, 0, V, 0 },
    { GW_PQ_F_DAYS_IN_MONTH, "days_in_month", { V }, 1, 1, V, 0 },
    { GW_PQ_F_DAY_OF_MONTH, "day_of_month", { V }, 1, 1, V, 0 },
    { GW_PQ_F_DAY_OF_WEEK, "day_of_week", { V }, 1, 1, V, 0 },
    { GW_PQ_F_DAY_OF_YEAR, "day_of_year", { V }, 1, 1, V, 0 },
    { GW_PQ_F_DEG, "deg", { V }, 1, 0, V, 0 },
    { GW_PQ_F_DELTA, "delta", { M }, 1, 0, V, 0 },
    { GW_PQ_F_DERIV, "deriv", { M }, 1, 0, V, 0 },
    { GW_PQ_F_EXP, "exp", { V }, 1, 0, V, 0 },
    { GW_PQ_F_FIRST_OVER_TIME, "first_over_time", { M }, 1, 0, V, 1 },
    { GW_PQ_F_FLOOR, "floor", { V }, 1, 0, V, 0 },
    { GW_PQ_F_HISTOGRAM_AVG, "histogram_avg", { V }, 1, 0, V, 0 },
    { GW_PQ_F_HISTOGRAM_COUNT, "histogram_count", { V }, 1, 0, V, 0 },
    { GW_PQ_F_HISTOGRAM_SUM, "histogram_sum", { V }, 1, 0, V, 0 },
    { GW_PQ_F_HISTOGRAM_STDDEV, "histogram_stddev", { V }, 1, 0, V, 0 },
    { GW_PQ_F_HISTOGRAM_STDVAR, "histogram_stdvar", { V }, 1, 0, V, 0 },
    { GW_PQ_F_HISTOGRAM_FRACTION, "histogram_fraction", { S, S, V }, 3, 0, V, 0 },
    { GW_PQ_F_HISTOGRAM_QUANTILE, "histogram_quantile", { S, V }, 2, 0, V, 0 },
    { GW_PQ_F_HOUR, "hour", { V }, 1, 1, V, 0 },
    { GW_PQ_F_IDELTA, "idelta", { M }, 1, 0, V, 0 },
    { GW_PQ_F_INCREASE, "increase", { M }, 1, 0, V, 0 },
    { GW_PQ_F_IRATE, "irate", { M }, 1, 0, V, 0 },
    { GW_PQ_F_LABEL_REPLACE, "label_replace", { V, T, T, T, T }, 5, 0, V, 0 },
    { GW_PQ_F_LABEL_JOIN, "label_join", { V, T, T, T }, 4, -1, V, 0 },
    { GW_PQ_F_LAST_OVER_TIME, "last_over_time", { M }, 1, 0, V, 0 },
    { GW_PQ_F_LN, "ln", { V }, 1, 0, V, 0 },
    { GW_PQ_F_LOG10, "log10", { V }, 1, 0, V, 0 },
    { GW_PQ_F_LOG2, "log2", { V }, 1, 0, V, 0 },
    { GW_PQ_F_MAX_OVER_TIME, "max_over_time", { M }, 1, 0, V, 0 },
    { GW_PQ_F_MIN_OVER_TIME, "min_over_time", { M }, 1, 0, V, 0 },
    { GW_PQ_F_MINUTE, "minute", { V }, 1, 1, V, 0 },
    { GW_PQ_F_MONTH, "month", { V }, 1, 1, V, 0 },
    { GW_PQ_F_PI, "pi", { GW_PQ_T_NONE }, 0, 0, S, 0 },
    { GW_PQ_F_PREDICT_LINEAR, "predict_linear", { M, S }, 2, 0, V, 0 },
    { GW_PQ_F_PRESENT_OVER_TIME, "present_over_time", { M }, 1, 0, V, 0 },
    { GW_PQ_F_QUANTILE_OVER_TIME, "quantile_over_time", { S, M }, 2, 0, V, 0 },
    { GW_PQ_F_RAD, "rad", { V }, 1, 0, V, 0 },
    { GW_PQ_F_RATE, "rate", { M }, 1, 0, V, 0 },
    { GW_PQ_F_RESETS, "resets", { M }, 1, 0, V, 0 },
    { GW_PQ_F_ROUND, "round", { V, S }, 2, 1, V, 0 },
    { GW_PQ_F_SCALAR, "scalar", { V }, 1, 0, S, 0 },
    { GW_PQ_F_SGN, "sgn", { V }, 1, 0, V, 0 },
    { GW_PQ_F_SIN, "sin", { V }, 1, 0, V, 0 },
    { GW_PQ_F_SINH, "sinh", { V }, 1, 0, V, 0 },
    { GW_PQ_F_SORT, "sort", { V }, 1, 0, V, 0 },
    { GW_PQ_F_SORT_DESC, "sort_desc", { V }, 1, 0, V, 0 },
    { GW_PQ_F_SQRT, "sqrt", { V }, 1, 0, V, 0 },
    { GW_PQ_F_STDDEV_OVER_TIME, "stddev_over_time", { M }, 1, 0, V, 0 },
    { GW_PQ_F_STDVAR_OVER_TIME, "stdvar_over_time", { M }, 1, 0, V, 0 },
    { GW_PQ_F_SUM_OVER_TIME, "sum_over_time", { M }, 1, 0, V, 0 },
    { GW_PQ_F_TAN, "tan", { V }, 1, 0, V, 0 },
    { GW_PQ_F_TANH, "tanh", { V }, 1, 0, V, 0 },
    { GW_PQ_F_TIME, "time", { GW_PQ_T_NONE }, 0, 0, S, 0 },
    { GW_PQ_F_TIMESTAMP, "timestamp", { V }, 1, 0, V, 0 },
    { GW_PQ_F_VECTOR, "vector", { S }, 1, 0, V, 0 },
    { GW_PQ_F_YEAR, "year", { V }, 1, 1, V, 0 },
    { GW_PQ_F_DOUBLE_EXPONENTIAL_SMOOTHING, "double_exponential_smoothing", { M, S, S }, 3, 0, V, 1 },
    { GW_PQ_F_MAD_OVER_TIME, "mad_over_time", { M }, 1, 0, V, 1 },
    { GW_PQ_F_SORT_BY_LABEL, "sort_by_label", { V, T }, 2, -1, V, 1 },
    { GW_PQ_F_SORT_BY_LABEL_DESC, "sort_by_label_desc", { V, T }, 2, -1, V, 1 },
    { GW_PQ_F_TS_OF_MAX_OVER_TIME, "ts_of_max_over_time", { M }, 1, 0, V, 1 },
    { GW_PQ_F_TS_OF_MIN_OVER_TIME, "ts_of_min_over_time", { M }, 1, 0, V, 1 },
    { GW_PQ_F_TS_OF_LAST_OVER_TIME, "ts_of_last_over_time", { M }, 1, 0, V, 1 },
    { GW_PQ_F_TS_OF_FIRST_OVER_TIME, "ts_of_first_over_time", { M }, 1, 0, V, 1 },
};

#undef S
#undef V
#undef M
#undef T

const struct gw_pq_func *gw_pq_func_lookup(const char *name, size_t len)
{
    if (name == NULL)
        return NULL;
    /* linear over ~80 short names: a few hundred byte compares per call,
     * once per function call node at parse time */
    for (size_t i = 0; i < GW_PQ_F_COUNT_; i++) {
        const char *n = funcs[i].name;
        if (n != NULL && strlen(n) == len && memcmp(n, name, len) == 0)
            return &funcs[i];
    }
    return NULL;
}

const struct gw_pq_func *gw_pq_func_by_id(enum gw_pq_func_id id)
{
    if ((int)id < 0 || id >= GW_PQ_F_COUNT_)
        return NULL;
    return &funcs[id];
}

const char *gw_pq_type_name(enum gw_pq_type t)
{
    switch (t) {
    case GW_PQ_T_NONE: return "none";
    case GW_PQ_T_SCALAR: return "scalar";
    case GW_PQ_T_VECTOR: return "vector";
    case GW_PQ_T_MATRIX: return "matrix";
    case GW_PQ_T_STRING: return "string";
    }
    return "none";
}

const char *gw_pq_op_name(enum gw_pq_op op)
{
    switch (op) {
    case GW_PQ_OP_ADD: return "+";
    case GW_PQ_OP_SUB: return "-";
    case GW_PQ_OP_MUL: return "*";
    case GW_PQ_OP_DIV: return "/";
    case GW_PQ_OP_MOD: return "%";
    case GW_PQ_OP_POW: return "^";
    case GW_PQ_OP_ATAN2: return "atan2";
    case GW_PQ_OP_EQL: return "==";
    case GW_PQ_OP_NEQ: return "!=";
    case GW_PQ_OP_GTR: return ">";
    case GW_PQ_OP_LSS: return "<";
    case GW_PQ_OP_GTE: return ">=";
    case GW_PQ_OP_LTE: return "<=";
    case GW_PQ_OP_AND: return "and";
    case GW_PQ_OP_OR: return "or";
    case GW_PQ_OP_UNLESS: return "unless";
    }
    return "?";
}

int gw_pq_op_is_comparison(enum gw_pq_op op)
{
    return op == GW_PQ_OP_EQL || op == GW_PQ_OP_NEQ || op == GW_PQ_OP_GTR || op == GW_PQ_OP_LSS ||
           op == GW_PQ_OP_GTE || op == GW_PQ_OP_LTE;
}

int gw_pq_op_is_set(enum gw_pq_op op)
{
    return op == GW_PQ_OP_AND || op == GW_PQ_OP_OR || op == GW_PQ_OP_UNLESS;
}

const char *gw_pq_agg_name(enum gw_pq_agg a)
{
    switch (a) {
    case GW_PQ_AGG_SUM: return "sum";
    case GW_PQ_AGG_AVG: return "avg";
    case GW_PQ_AGG_COUNT: return "count";
    case GW_PQ_AGG_MIN: return "min";
    case GW_PQ_AGG_MAX: return "max";
    case GW_PQ_AGG_GROUP: return "group";
    case GW_PQ_AGG_STDDEV: return "stddev";
    case GW_PQ_AGG_STDVAR: return "stdvar";
    case GW_PQ_AGG_TOPK: return "topk";
    case GW_PQ_AGG_BOTTOMK: return "bottomk";
    case GW_PQ_AGG_COUNT_VALUES: return "count_values";
    case GW_PQ_AGG_QUANTILE: return "quantile";
    case GW_PQ_AGG_LIMITK: return "limitk";
    case GW_PQ_AGG_LIMIT_RATIO: return "limit_ratio";
    }
    return "?";
}
