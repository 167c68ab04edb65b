/* src/promql/eval_agg.c - PromQL aggregations over step matrices: sum, avg,
 * count, min, max, group, stddev, stdvar, quantile, topk, bottomk,
 * count_values, and (experimental) limitk and limit_ratio; by/without.
 *
 * The group of an input series depends on its labels only, so groups are
 * computed once per series (by: the listed labels; without: all but the
 * listed labels and __name__) and stored as member lists; each step then
 * folds the present members of every group in input order, exactly as
 * Prometheus' aggregation() does per step:
 *   sum    Kahan-Babuska (pq_kahan);
 *   avg    Kahan sum divided by the count, switching to Prometheus'
 *          incremental Kahan mean once the sum would overflow (compat 2:
 *          2.42's incremental mean throughout, avg_v2_step);
 *   min/max  a NaN is replaced by any later value;
 *   stddev/stdvar  Welford, NaN/Inf first values poison the group;
 *   quantile  pq_quantile over the group's values;
 *   topk/bottomk/limitk/limit_ratio  Go's container/heap operations, so the
 *          same elements win ties; the parameter is read at every step.
 * topk/bottomk/limitk/limit_ratio keep the input labels (with __name__);
 * count_values formats values like Go's strconv.FormatFloat(v, 'f', -1). */
#include <math.h>
#include <string.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/labels.h"
#include "promql/eval_int.h"

struct hent {
    double f;
    size_t k;      /* input series */
};

/* topk order: Less(i, j) = h[i] < h[j] || (NaN(h[i]) && !NaN(h[j])); bottomk reverses. */
static int hless(int bottom, const struct hent *a, const struct hent *b)
{
    if (bottom)
        return a->f > b->f || (isnan(a->f) && !isnan(b->f));
    return a->f < b->f || (isnan(a->f) && !isnan(b->f));
}

static void hswap(struct hent *h, size_t i, size_t j)
{
    struct hent t = h[i];
    h[i] = h[j];
    h[j] = t;
}

static void hup(int bottom, struct hent *h, size_t j)
{
    while (j > 0) {
        size_t i = (j - 1) / 2;
        if (!hless(bottom, &h[j], &h[i]))
            break;
        hswap(h, i, j);
        j = i;
    }
}

static int hdown(int bottom, struct hent *h, size_t i0, size_t n)
{
    size_t i = i0;
    for (;;) {
        size_t j1 = 2 * i + 1;
        if (j1 >= n)
            break;
        size_t j = j1;
        if (j1 + 1 < n && hless(bottom, &h[j1 + 1], &h[j1]))
            j = j1 + 1;
        if (!hless(bottom, &h[j], &h[i]))
            break;
        hswap(h, i, j);
        i = j;
    }
    return i > i0;
}

/* Prometheus' labels.Hash(): XXH64 over name 0xff value 0xff ... */
static uint64_t prom_hash(struct pq_ctx *ctx, const uint8_t *lab, size_t len)
{
    struct gw_label ls[GW_LABELS_MAX];
    size_t n = 0;
    struct gw_xxh64 st;
    static const uint8_t sep = 0xff;
    (void)ctx;
    gw_xxh64_reset(&st, 0);
    if (gw_labels_decode(lab, len, ls, GW_LABELS_MAX, &n) == GW_OK) {
        for (size_t i = 0; i < n; i++) {
            gw_xxh64_update(&st, ls[i].name, ls[i].name_len);
            gw_xxh64_update(&st, &sep, 1);
            gw_xxh64_update(&st, ls[i].value, ls[i].value_len);
            gw_xxh64_update(&st, &sep, 1);
        }
    }
    return gw_xxh64_digest(&st);
}

static int group_labels(struct pq_ctx *ctx, const struct gw_pq_node *n, struct pq_lb *b,
                        const uint8_t *lab, size_t llen, const uint8_t **out, size_t *olen)
{
    int rc = pq_lb_load(ctx, b, lab, llen);
    if (rc)
        return rc;
    if (n->u.agg.without) {
        for (size_t i = 0; i < n->u.agg.n_grouping; i++)
            pq_lb_del(b, n->u.agg.grouping[i], strlen(n->u.agg.grouping[i]));
        pq_lb_del(b, "__name__", 8);
    } else {
        pq_lb_keep(b, n->u.agg.grouping, n->u.agg.n_grouping);
    }
    return pq_lb_encode(ctx, b, out, olen);
}

static int valid_label_name(struct pq_ctx *ctx, const char *s)
{
    size_t n = strlen(s);
    if (n == 0)
        return 0;
    if (ctx->o.compat != 2)
        return 1;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
              (i > 0 && c >= '0' && c <= '9')))
            return 0;
    }
    return 1;
}

/* ------------------------------------------------------------ count_values */

static int count_values(struct pq_ctx *ctx, const struct gw_pq_node *n, const struct pq_grid *g,
                        const struct pq_val *in, struct pq_val *out)
{
    const struct gw_pq_node *p = n->u.agg.param;
    while (p && p->kind == GW_PQ_PAREN)
        p = p->u.paren;
    if (!p || p->kind != GW_PQ_STRING_LIT)
        return gw_error_set(ctx->err, GW_EINVAL, "count_values(): expected a string parameter");
    const char *vl = p->u.str.s ? p->u.str.s : "";
    if (!valid_label_name(ctx, vl))
        return gw_error_set(ctx->err, GW_EINVAL, "invalid label name \"%s\"", vl);
    struct pq_lb *b = pq_alloc(ctx, sizeof(*b));
    char **grp = pq_alloc(ctx, (n->u.agg.n_grouping + 1) * sizeof(char *));
    struct pq_itab t;
    int rc;
    if (!b || !grp)
        return GW_ENOMEM;
    if ((rc = pq_itab_init(ctx, &t, in->nvs)))
        return rc;
    for (size_t i = 0; i < n->u.agg.n_grouping; i++)
        grp[i] = n->u.agg.grouping[i];
    size_t ngrp = n->u.agg.n_grouping;
    if (!n->u.agg.without)
        grp[ngrp++] = (char *)vl;
    struct pq_vser *os = NULL;
    size_t no = 0, cap = 0;
    /* a series' value seldom changes between steps: remember its group */
    uint64_t *last_bits = pq_alloc(ctx, (in->nvs ? in->nvs : 1) * sizeof(uint64_t));
    size_t *last_id = pq_alloc(ctx, (in->nvs ? in->nvs : 1) * sizeof(size_t));
    if (!last_bits || !last_id)
        return GW_ENOMEM;
    for (size_t k = 0; k < in->nvs; k++)
        last_id[k] = SIZE_MAX;
    for (size_t i = 0; i < g->n; i++) {
        if ((rc = pq_check_time(ctx)))
            return rc;
        for (size_t k = 0; k < in->nvs; k++) {
            const struct pq_vser *s = &in->vs[k];
            if (!pq_bm_get(s->pres, i))
                continue;
            uint64_t bits;
            memcpy(&bits, &s->v[i], sizeof(bits));
            if (last_id[k] != SIZE_MAX && last_bits[k] == bits) {
                struct pq_vser *lo = &os[last_id[k]];
                if (!pq_bm_get(lo->pres, i)) {
                    lo->v[i] = 0;
                    pq_bm_set(lo->pres, i);
                }
                lo->v[i] += 1;
                continue;
            }
            char num[PQ_FMT_GO_F_MAX];
            pq_fmt_go_f(s->v[i], num, sizeof(num));
            size_t nl = strlen(num);
            char *nv = pq_alloc(ctx, nl + 1);
            if (!nv)
                return GW_ENOMEM;
            memcpy(nv, num, nl + 1);
            if ((rc = pq_lb_load(ctx, b, s->lab, s->llen)) ||
                (rc = pq_lb_set(ctx, b, vl, strlen(vl), nv, nl)))
                return rc;
            if (n->u.agg.without) {
                for (size_t j = 0; j < ngrp; j++)
                    pq_lb_del(b, grp[j], strlen(grp[j]));
                pq_lb_del(b, "__name__", 8);
            } else {
                pq_lb_keep(b, grp, ngrp);
            }
            const uint8_t *lab;
            size_t llen, id;
            int found;
            if ((rc = pq_lb_encode(ctx, b, &lab, &llen)) ||
                (rc = pq_itab_get(ctx, &t, lab, llen, 1, &id, &found)))
                return rc;
            if (!found) {
                if (no == cap) {
                    size_t nc = cap ? cap * 2 : 16;
                    struct pq_vser *ns = pq_alloc(ctx, nc * sizeof(*ns));
                    if (!ns)
                        return GW_ENOMEM;
                    if (no)
                        memcpy(ns, os, no * sizeof(*ns));
                    os = ns;
                    cap = nc;
                }
                if ((rc = pq_vser_alloc(ctx, &os[no], g->n)))
                    return rc;
                os[no].lab = lab;
                os[no].llen = llen;
                no++;
            }
            last_id[k] = id;
            last_bits[k] = bits;
            struct pq_vser *o = &os[id];
            if (!pq_bm_get(o->pres, i)) {
                o->v[i] = 0;
                pq_bm_set(o->pres, i);
            }
            o->v[i] += 1;
        }
    }
    memset(out, 0, sizeof(*out));
    out->type = GW_PQ_T_VECTOR;
    if (!os)
        return pq_vec_init(ctx, out, 1);
    out->vs = os;
    out->nvs = no;
    return GW_OK;
}

/* ------------------------------------------------------------ k-selection */

static int int64_ok(double v)
{
    return v >= -9223372036854775808.0 && v <= 9223372036854775807.0;
}

static int aggregate_k(struct pq_ctx *ctx, const struct gw_pq_node *n, const struct pq_grid *g,
                       const struct pq_val *in, const double *param, const size_t *gstart,
                       const size_t *mem, size_t ng, struct pq_val *out)
{
    enum gw_pq_agg op = n->u.agg.op;
    int bottom = op == GW_PQ_AGG_BOTTOMK;
    int rc;
    size_t *outidx = pq_alloc(ctx, (in->nvs ? in->nvs : 1) * sizeof(size_t));
    struct hent *h = pq_alloc(ctx, (in->nvs ? in->nvs : 1) * sizeof(*h));
    uint64_t *hash = NULL;
    if (!outidx || !h)
        return GW_ENOMEM;
    for (size_t k = 0; k < in->nvs; k++)
        outidx[k] = SIZE_MAX;
    if ((rc = pq_vec_init(ctx, out, in->nvs)))
        return rc;
    if (op == GW_PQ_AGG_LIMIT_RATIO) {
        hash = pq_alloc(ctx, (in->nvs ? in->nvs : 1) * sizeof(uint64_t));
        if (!hash)
            return GW_ENOMEM;
        for (size_t k = 0; k < in->nvs; k++)
            hash[k] = prom_hash(ctx, in->vs[k].lab, in->vs[k].llen);
    }
    for (size_t i = 0; i < g->n; i++) {
        if ((rc = pq_check_time(ctx)))
            return rc;
        int64_t k64 = 0;
        double ratio = 0;
        if (op == GW_PQ_AGG_LIMIT_RATIO) {
            double pr = param[i];
            if (isnan(pr))
                return gw_error_set(ctx->err, GW_EINVAL, "Ratio value NaN is NaN");
            if (pr == 0)
                continue;
            ratio = pr < -1.0 ? -1.0 : pr > 1.0 ? 1.0 : pr;
        } else {
            if (!int64_ok(param[i])) {
                char b[48];
                pq_fmt_go_v(param[i], b, sizeof(b));
                return gw_error_set(ctx->err, GW_EINVAL, "Scalar value %s overflows int64", b);
            }
            /* 2^63 passes Go's check and converts to MinInt64 on amd64 */
            k64 = param[i] >= 9223372036854775808.0 ? INT64_MIN : (int64_t)param[i];
            if (k64 > (int64_t)in->nvs)
                k64 = (int64_t)in->nvs;
            if (k64 < 1)
                continue;
        }
        size_t kk = (size_t)k64;
        for (size_t gi = 0; gi < ng; gi++) {
            size_t hn = 0;
            for (size_t m = gstart[gi]; m < gstart[gi + 1]; m++) {
                size_t k = mem[m];
                const struct pq_vser *s = &in->vs[k];
                if (!pq_bm_get(s->pres, i))
                    continue;
                struct hent e = { s->v[i], k };
                if (op == GW_PQ_AGG_LIMIT_RATIO) {
                    double off = (double)hash[k] / 18446744073709551615.0;
                    int add = (ratio >= 0 && off < ratio) || (ratio < 0 && off >= 1.0 + ratio);
                    if (add) {
                        h[hn++] = e;
                        hup(0, h, hn - 1);
                    }
                } else if (op == GW_PQ_AGG_LIMITK) {
                    if (hn < kk) {
                        h[hn++] = e;
                        hup(0, h, hn - 1);
                    }
                } else if (hn < kk) {
                    h[hn++] = e;
                    hup(bottom, h, hn - 1);
                } else {
                    int repl = bottom ? (h[0].f > e.f || (isnan(h[0].f) && !isnan(e.f)))
                                      : (h[0].f < e.f || (isnan(h[0].f) && !isnan(e.f)));
                    if (repl) {
                        h[0] = e;
                        if (kk > 1 && !hdown(bottom, h, 0, hn))
                            hup(bottom, h, 0);
                    }
                }
            }
            if (op == GW_PQ_AGG_TOPK || op == GW_PQ_AGG_BOTTOMK) {
                /* sort.Reverse(heap): greatest first by the heap's Less (stable) */
                for (size_t a = 1; a < hn; a++) {
                    struct hent x = h[a];
                    size_t b = a;
                    while (b > 0 && hless(bottom, &h[b - 1], &x)) {
                        h[b] = h[b - 1];
                        b--;
                    }
                    h[b] = x;
                }
            }
            for (size_t q = 0; q < hn; q++) {
                size_t k = h[q].k;
                if (outidx[k] == SIZE_MAX) {
                    struct pq_vser *o = &out->vs[out->nvs];
                    if ((rc = pq_vser_alloc(ctx, o, g->n)))
                        return rc;
                    o->lab = in->vs[k].lab;
                    o->llen = in->vs[k].llen;
                    outidx[k] = out->nvs++;
                }
                struct pq_vser *o = &out->vs[outidx[k]];
                o->v[i] = h[q].f;
                pq_bm_set(o->pres, i);
            }
        }
    }
    return GW_OK;
}

/* ------------------------------------------------------------ entry */

/* pq_kahan_add's step (Prometheus' kahansum.Inc: Neumaier, compensation
 * reset when the sum becomes infinite), here where the compiler can
 * inline it into the per-step loops of sum and avg. */
static inline void agg_kahan_add(struct pq_kahan *k, double inc)
{
    double t = k->sum + inc;
    if (isinf(t))
        k->c = 0;
    else if (fabs(k->sum) >= fabs(inc))
        k->c += (k->sum - t) + inc;
    else
        k->c += (inc - t) + k->sum;
    k->sum = t;
}

/* One step of avg as Prometheus 2.42 aggregates (engine.go, case AVG):
 * an incremental mean from the first member on, without compensation; an
 * infinite mean stays as it is while finite values or an infinity of its
 * own sign follow. Near the float64 limit this differs from Prometheus 3's
 * sum-then-incremental mean: {1.7e308, 1.7e308, -1.7e308, -1.7e308}
 * averages to 0 here. */
static inline void avg_v2_step(double *mean, double f, double cnt)
{
    if (isinf(*mean)) {
        if (isinf(f) && (*mean > 0) == (f > 0))
            return;
        if (!isinf(f) && !isnan(f))
            return;
    }
    *mean += f / cnt - *mean / cnt;
}

/* The groups of an aggregation, in order of first appearance: group gi has
 * the labels glab[gi] (gll[gi] bytes) and the members mem[gstart[gi] ..
 * gstart[gi + 1]) (indexes into the input, in input order). */
struct agg_groups {
    size_t ng;
    const uint8_t **glab;
    size_t *gll;
    size_t *gstart;
    size_t *mem;
};

static int agg_group(struct pq_ctx *ctx, const struct gw_pq_node *n, const struct pq_val *in, struct agg_groups *gr)
{
    int rc;
    size_t ns = in->nvs;
    size_t *grp = pq_alloc(ctx, (ns ? ns : 1) * sizeof(size_t));
    struct pq_lb *b = pq_alloc(ctx, sizeof(*b));
    struct pq_itab t;
    if (!grp || !b)
        return GW_ENOMEM;
    if ((rc = pq_itab_init(ctx, &t, ns)))
        return rc;
    const uint8_t **glab = pq_alloc(ctx, (ns ? ns : 1) * sizeof(uint8_t *));
    size_t *gll = pq_alloc(ctx, (ns ? ns : 1) * sizeof(size_t));
    if (!glab || !gll)
        return GW_ENOMEM;
    for (size_t k = 0; k < ns; k++) {
        const uint8_t *lab;
        size_t llen;
        int found;
        if ((rc = group_labels(ctx, n, b, in->vs[k].lab, in->vs[k].llen, &lab, &llen)) ||
            (rc = pq_itab_get(ctx, &t, lab, llen, 1, &grp[k], &found)))
            return rc;
        if (!found) {
            glab[grp[k]] = lab;
            gll[grp[k]] = llen;
        }
    }
    size_t ng = t.n;
    size_t *gstart = pq_calloc(ctx, ng + 1, sizeof(size_t));
    size_t *fill = pq_calloc(ctx, ng + 1, sizeof(size_t));
    size_t *mem = pq_alloc(ctx, (ns ? ns : 1) * sizeof(size_t));
    if (!gstart || !fill || !mem)
        return GW_ENOMEM;
    for (size_t k = 0; k < ns; k++)
        gstart[grp[k] + 1]++;
    for (size_t i = 0; i < ng; i++)
        gstart[i + 1] += gstart[i];
    for (size_t k = 0; k < ns; k++)
        mem[gstart[grp[k]] + fill[grp[k]]++] = k;

    gr->ng = ng;
    gr->glab = glab;
    gr->gll = gll;
    gr->gstart = gstart;
    gr->mem = mem;
    return GW_OK;
}

/* The value of one group (members mem[m0..m1)) at step i of an ordinary
 * aggregation (sum, avg, count, min, max, stddev, stdvar, group,
 * quantile): 1 with *out set, or 0 when no member has a sample there. qv
 * is scratch for quantile's values (room for every member). */
static int agg_step(struct pq_ctx *ctx, enum gw_pq_agg op, const struct pq_val *in, const size_t *mem, size_t m0,
                    size_t m1, size_t i, double *qv, const double *param, double *out)
{
    int seen = 0, incr = 0;
    double fv = 0, mean = 0, c = 0, cnt = 0;
    size_t nq = 0;
    for (size_t m = m0; m < m1; m++) {
        const struct pq_vser *s = &in->vs[mem[m]];
        if (!pq_bm_get(s->pres, i))
            continue;
        double f = s->v[i];
        if (!seen) {
            seen = 1;
            fv = f;
            mean = f;
            c = 0;
            cnt = 1;
            if (op == GW_PQ_AGG_STDDEV || op == GW_PQ_AGG_STDVAR)
                /* Prometheus 3 starts a group holding NaN or
                 * +-Inf at NaN; 2.42 starts every group at 0 */
                fv = ctx->o.compat != 2 && (isnan(f) || isinf(f)) ? NAN : 0;
            else if (op == GW_PQ_AGG_GROUP)
                fv = 1;
            else if (op == GW_PQ_AGG_QUANTILE)
                qv[nq++] = f;
            continue;
        }
        switch (op) {
        case GW_PQ_AGG_SUM: {
            struct pq_kahan kh = { fv, c };
            agg_kahan_add(&kh, f);
            fv = kh.sum;
            c = kh.c;
            break;
        }
        case GW_PQ_AGG_AVG: {
            cnt++;
            if (ctx->o.compat == 2) {
                avg_v2_step(&mean, f, cnt);
                break;
            }
            if (!incr) {
                struct pq_kahan kh = { fv, c };
                agg_kahan_add(&kh, f);
                if (!isinf(kh.sum)) {
                    fv = kh.sum;
                    c = kh.c;
                    break;
                }
                incr = 1;
                mean = fv / (cnt - 1);
                c /= cnt - 1;
            }
            if (isinf(mean)) {
                if (isinf(f) && (mean > 0) == (f > 0))
                    break;
                if (!isinf(f) && !isnan(f))
                    break;
            }
            double cur = mean + c;
            struct pq_kahan kh = { mean, c };
            agg_kahan_add(&kh, f / cnt - cur / cnt);
            mean = kh.sum;
            c = kh.c;
            break;
        }
        case GW_PQ_AGG_COUNT:
            cnt++;
            break;
        case GW_PQ_AGG_MIN:
            if (fv > f || isnan(fv))
                fv = f;
            break;
        case GW_PQ_AGG_MAX:
            if (fv < f || isnan(fv))
                fv = f;
            break;
        case GW_PQ_AGG_STDDEV:
        case GW_PQ_AGG_STDVAR: {
            cnt++;
            double delta = f - mean;
            mean += delta / cnt;
            fv += delta * (f - mean);
            break;
        }
        case GW_PQ_AGG_QUANTILE:
            qv[nq++] = f;
            break;
        default:
            break;
        }
    }
    if (!seen)
        return 0;
    double r = fv;
    switch (op) {
    case GW_PQ_AGG_SUM:
        r = fv + c;
        break;
    case GW_PQ_AGG_AVG:
        if (ctx->o.compat == 2)
            r = mean;
        else
            r = incr ? mean + c : (fv + c) / cnt;
        break;
    case GW_PQ_AGG_COUNT:
        r = cnt;
        break;
    case GW_PQ_AGG_STDVAR:
        r = fv / cnt;
        break;
    case GW_PQ_AGG_STDDEV:
        r = sqrt(fv / cnt);
        break;
    case GW_PQ_AGG_QUANTILE:
        r = pq_quantile(param[i], qv, nq);
        break;
    default:
        break;
    }
    *out = r;
    return 1;
}

int pq_eval_aggregate(struct pq_ctx *ctx, const struct gw_pq_node *n, const struct pq_grid *g,
                      struct pq_val *out)
{
    enum gw_pq_agg op = n->u.agg.op;
    int rc;
    if ((op == GW_PQ_AGG_LIMITK || op == GW_PQ_AGG_LIMIT_RATIO) && !ctx->o.experimental)
        return gw_error_set(ctx->err, GW_EINVAL,
                            "limitk() and limit_ratio() are experimental and not enabled");
    double *param = NULL;
    if (op == GW_PQ_AGG_TOPK || op == GW_PQ_AGG_BOTTOMK || op == GW_PQ_AGG_QUANTILE ||
        op == GW_PQ_AGG_LIMITK || op == GW_PQ_AGG_LIMIT_RATIO) {
        if (!n->u.agg.param)
            return gw_error_set(ctx->err, GW_EINVAL, "%s(): missing parameter",
                                gw_pq_agg_name(op));
        if ((rc = pq_eval_scalar(ctx, n->u.agg.param, g, &param)))
            return rc;
    }
    struct pq_val in;
    if ((rc = pq_eval(ctx, n->u.agg.expr, g, &in)))
        return rc;
    if (in.type != GW_PQ_T_VECTOR)
        return gw_error_set(ctx->err, GW_EINVAL, "%s(): expected an instant vector",
                            gw_pq_agg_name(op));
    if (op == GW_PQ_AGG_COUNT_VALUES)
        return count_values(ctx, n, g, &in, out);

    struct agg_groups gr;
    if ((rc = agg_group(ctx, n, &in, &gr)))
        return rc;
    size_t ns = in.nvs, ng = gr.ng;
    if (op == GW_PQ_AGG_TOPK || op == GW_PQ_AGG_BOTTOMK || op == GW_PQ_AGG_LIMITK ||
        op == GW_PQ_AGG_LIMIT_RATIO)
        return aggregate_k(ctx, n, g, &in, param, gr.gstart, gr.mem, ng, out);

    if ((rc = pq_vec_init(ctx, out, ng)))
        return rc;
    for (size_t gi = 0; gi < ng; gi++) {
        struct pq_vser *o = &out->vs[gi];
        if ((rc = pq_vser_alloc(ctx, o, g->n)))
            return rc;
        o->lab = gr.glab[gi];
        o->llen = gr.gll[gi];
    }
    out->nvs = ng;
    double *qv = NULL;
    if (op == GW_PQ_AGG_QUANTILE && !(qv = pq_alloc(ctx, (ns ? ns : 1) * sizeof(double))))
        return GW_ENOMEM;

    for (size_t gi = 0; gi < ng; gi++) {
        struct pq_vser *o = &out->vs[gi];
        if ((rc = pq_check_time(ctx)))
            return rc;
        for (size_t i = 0; i < g->n; i++) {
            if (!agg_step(ctx, op, &in, gr.mem, gr.gstart[gi], gr.gstart[gi + 1], i, qv, param, &o->v[i]))
                continue;
            pq_bm_set(o->pres, i);
        }
    }
    return pq_vec_dedupe(ctx, out, g->n, 0);
}
