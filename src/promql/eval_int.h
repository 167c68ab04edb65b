/* src/promql/eval_int.h - internals shared by the PromQL evaluator's files
 * (eval.c: selectors, subqueries, results; eval_binary.c; eval_agg.c;
 * eval_funcs.c). Nothing outside src/promql/eval*.c includes it.
 *
 * The evaluator works on all steps of a query at once. A "grid" is the set
 * of evaluation times start, start + step, ... (n of them). Every node
 * evaluates over a grid to a value:
 *   scalar  one double per step (always present);
 *   vector  a "step matrix": series with canonical labels (labels.h bytes),
 *           one value per step and a presence bitmap (bit i = a point at
 *           step i); labels never change across steps, so everything keyed
 *           by labels (grouping, matching signatures) is computed once;
 *   matrix  raw samples per series (range selectors and subqueries), stale
 *           markers removed, plus the window parameters (range, offset, @)
 *           a consumer applies per step;
 *   string  a string literal.
 * Everything lives in the query's scratch arena; values are immutable once
 * returned except by the parent node that consumes them. */
#ifndef GW_PQ_EVAL_INT_H
#define GW_PQ_EVAL_INT_H

#include <stddef.h>
#include <stdint.h>

#include "gpuwatch/arena.h"
#include "gpuwatch/labels.h"
#include "gpuwatch/promql.h"
#include "promql/promql_int.h"

struct pq_grid {
    int64_t start, step;   /* step > 0 */
    size_t n;              /* >= 1 */
};
static inline int64_t pq_grid_t(const struct pq_grid *g, size_t i)
{
    return g->start + (int64_t)i * g->step;
}

#define PQ_BM_WORDS(n) (((n) + 63) / 64)
static inline int pq_bm_get(const uint64_t *b, size_t i)
{
    return (int)((b[i >> 6] >> (i & 63)) & 1u);
}
static inline void pq_bm_set(uint64_t *b, size_t i)
{
    b[i >> 6] |= (uint64_t)1 << (i & 63);
}
static inline void pq_bm_clr(uint64_t *b, size_t i)
{
    b[i >> 6] &= ~((uint64_t)1 << (i & 63));
}

struct pq_vser {
    const uint8_t *lab;    /* canonical labels (never modified in place) */
    size_t llen;
    double *v;             /* n steps */
    uint64_t *pres;        /* PQ_BM_WORDS(n) words */
    int64_t *ts;           /* sample times (instant selectors under timestamp()), or NULL */
};

struct pq_raw {
    const uint8_t *lab;
    size_t llen;
    int64_t *t;
    double *v;
    size_t n;
};

struct pq_val {
    enum gw_pq_type type;
    double *sc;                       /* scalar: n steps */
    struct pq_vser *vs;               /* vector */
    size_t nvs;
    struct pq_raw *rs;                /* matrix */
    size_t nrs;
    int64_t range_ms, offset_ms;      /* matrix windows */
    int has_at;
    int64_t at_ms;
    const struct gw_pq_node *sel;     /* matrix from a selector (absent_over_time labels) */
    const char *str;                  /* string */
};

struct pq_ctx {
    const struct gw_pq_source *src;
    struct gw_pq_opts o;
    struct gw_arena a;                /* scratch for the whole evaluation */
    int64_t q_start, q_end;           /* for @ start() / @ end() */
    uint64_t cur_samples;             /* charged against o.max_samples */
    uint64_t touched;
    int64_t deadline_ms;              /* monotonic clock */
    unsigned tick;
    int over_limit;                   /* an allocation failed at the scratch ceiling */
    int64_t *tmp_t;                   /* heap scratch for one series (pq_tmp_reserve) */
    double *tmp_v;
    size_t tmp_cap;
    struct gw_error *err;
};

/* ---- eval.c ---- */
int pq_eval(struct pq_ctx *ctx, const struct gw_pq_node *n, const struct pq_grid *g,
            struct pq_val *out);
void *pq_alloc(struct pq_ctx *ctx, size_t n);                /* sets GW_ENOMEM */
void *pq_calloc(struct pq_ctx *ctx, size_t n, size_t size);  /* zeroed; sets GW_ENOMEM */
int pq_nomem(struct pq_ctx *ctx);
int pq_check_time(struct pq_ctx *ctx);                        /* GW_ETIMEOUT when past */
int pq_charge(struct pq_ctx *ctx, uint64_t n);                /* GW_ELIMIT when over */

/* A vector value with cap series slots (nvs = 0). */
int pq_vec_init(struct pq_ctx *ctx, struct pq_val *v, size_t cap);
/* Allocates s->v / s->pres (zeroed) for g->n steps. */
int pq_vser_alloc(struct pq_ctx *ctx, struct pq_vser *s, size_t nsteps);
size_t pq_vser_count(const struct pq_vser *s, size_t nsteps);
/* Series with equal labels: strict = any two -> error (matrix functions,
 * unary minus, label_replace); otherwise two at the same step -> error and
 * series present at different steps merge (Prometheus' rangeEval). */
int pq_vec_dedupe(struct pq_ctx *ctx, struct pq_val *v, size_t nsteps, int strict);
/* Evaluates n to a scalar per step (scalar typed nodes only). */
int pq_eval_scalar(struct pq_ctx *ctx, const struct gw_pq_node *n, const struct pq_grid *g,
                   double **out);

/* Evaluation time seen by a selector/subquery at grid step i, and the
 * window [start, end] (start exclusive in compat 3) of a matrix value. */
int64_t pq_eval_time(struct pq_ctx *ctx, int has_at, int64_t at_ms, const struct pq_grid *g,
                     size_t i);
/* The window of step i over raw series r of matrix value m: samples
 * [w->lo, w->hi). Call with a zeroed w for step 0 of each series and then
 * with ascending steps (windows only move forward). */
struct pq_win_it {
    size_t lo, hi;
};
void pq_window(struct pq_ctx *ctx, const struct pq_val *m, const struct pq_raw *r,
               const struct pq_grid *g, size_t i, struct pq_win_it *w, int64_t *range_start,
               int64_t *range_end);

/* Label builder over canonical bytes. */
#define PQ_LB_MAX 512
struct pq_lb {
    struct gw_label l[PQ_LB_MAX];
    size_t n;
};
int pq_lb_load(struct pq_ctx *ctx, struct pq_lb *b, const uint8_t *lab, size_t len);
void pq_lb_del(struct pq_lb *b, const char *name, size_t nlen);
/* value_len 0 deletes, as Prometheus' labels.Builder.Set. */
int pq_lb_set(struct pq_ctx *ctx, struct pq_lb *b, const char *name, size_t nlen,
              const char *value, size_t vlen);
void pq_lb_keep(struct pq_lb *b, char *const *names, size_t n);
int pq_lb_encode(struct pq_ctx *ctx, struct pq_lb *b, const uint8_t **out, size_t *len);
int pq_lab_drop_name(struct pq_ctx *ctx, const uint8_t *lab, size_t len, const uint8_t **out,
                     size_t *olen);
/* Prometheus' labels.String(): {__name__="x", a="b"} (truncated to cap). */
void pq_lab_format(const uint8_t *lab, size_t len, char *buf, size_t cap);

/* Interning table: byte strings -> dense ids 0, 1, 2, ... */
struct pq_itab {
    struct pq_ient {
        uint64_t h;
        const uint8_t *b;
        size_t len;
        size_t id;
    } *e;
    size_t cap, n;
};
int pq_itab_init(struct pq_ctx *ctx, struct pq_itab *t, size_t expect);
/* *id of b; when absent and create, adds it (b must outlive the table). */
int pq_itab_get(struct pq_ctx *ctx, struct pq_itab *t, const uint8_t *b, size_t len, int create,
                size_t *id, int *found);

/* Go's strconv.FormatFloat(v, 'f', -1, 64) and %v of a float64. The 'f'
 * form writes every digit (1e-300 is "0.", 299 zeros and "1"); a buffer of
 * PQ_FMT_GO_F_MAX bytes holds any float64 in it: at most 1 sign, 324
 * digits before or after the point, the point and the NUL. */
#define PQ_FMT_GO_F_MAX 400
void pq_fmt_go_f(double v, char *buf, size_t cap);
void pq_fmt_go_v(double v, char *buf, size_t cap);

/* Streaming select: fn gets every matching series with samples in
 * [mint, maxt] (borrowed for the call), in the source's order. */
typedef int (*pq_series_fn)(struct pq_ctx *ctx, void *ud, const uint8_t *lab, size_t llen,
                            const int64_t *t, const double *v, size_t n);
int pq_select(struct pq_ctx *ctx, const struct gw_pq_node *sel, int64_t mint, int64_t maxt,
              pq_series_fn fn, void *ud);
/* pq_select through a gw_pq_view of kind (GW_PQ_VIEW_RAW: pq_select);
 * exact_ms as in gw_pq_view. pq_aligned_bucket: the bucket size (1 h, 5
 * min, 0) all evaluation times of a selector and range are multiples of. */
int pq_select_view(struct pq_ctx *ctx, const struct gw_pq_node *sel, int64_t mint, int64_t maxt, int kind,
                   int64_t exact_ms, pq_series_fn fn, void *ud);
int64_t pq_aligned_bucket(struct pq_ctx *ctx, int has_at, int64_t at, int64_t off, const struct pq_grid *g,
                          int64_t range);
/* Window parameters of range selector n (a matrix value without series)
 * and the sample span [mint, maxt] its windows over grid g need. */
int pq_matrix_params(struct pq_ctx *ctx, const struct gw_pq_node *n, const struct pq_grid *g,
                     struct pq_val *out, int64_t *mint, int64_t *maxt);
/* ctx->tmp_t / tmp_v hold at least n entries afterwards. */
int pq_tmp_reserve(struct pq_ctx *ctx, size_t n);
const uint8_t *pq_copy_labels(struct pq_ctx *ctx, const uint8_t *lab, size_t llen);
/* Makes room for one more series in v (cap is the slot count). */
int pq_vec_grow(struct pq_ctx *ctx, struct pq_val *v, size_t *cap);
void pq_vec_sort_labels(struct pq_val *v);

/* ---- other files ---- */
int pq_eval_binary(struct pq_ctx *ctx, const struct gw_pq_node *n, const struct pq_grid *g,
                   struct pq_val *out);
int pq_eval_aggregate(struct pq_ctx *ctx, const struct gw_pq_node *n, const struct pq_grid *g,
                      struct pq_val *out);
int pq_eval_call(struct pq_ctx *ctx, const struct gw_pq_node *n, const struct pq_grid *g,
                 struct pq_val *out);
/* The instant selector under timestamp(): keeps sample times in ts. */
int pq_eval_vector_sel(struct pq_ctx *ctx, const struct gw_pq_node *n, const struct pq_grid *g,
                       int want_ts, struct pq_val *out);

#endif /* GW_PQ_EVAL_INT_H */
