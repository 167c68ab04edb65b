/* src/promql/eval_binary.c - PromQL binary operations over step matrices:
 * scalar/scalar, vector/scalar, scalar/vector and vector/vector with
 * on/ignoring, group_left/group_right and the set operators and/or/unless.
 *
 * Matching signatures (the on-labels, or all labels but __name__ and the
 * ignoring-labels) are computed once per series and interned to small ids;
 * each step then matches ids in arrays stamped with the step number, so a
 * step costs O(series). An output series of vector matching is one (many
 * side, one side) pair of input series; its labels are computed once when
 * the pair first matches. Errors are Prometheus' own, raised at the first
 * step where they occur:
 *   found duplicate series for the match group {..} on the right hand-side
 *     of the operation: [..];many-to-many matching not allowed: matching
 *     labels must be unique on one side
 *   multiple matches for labels: many-to-one matching must be explicit
 *     (group_left/group_right)
 *   multiple matches for labels: grouping labels must ensure unique matches
 *   vector cannot contain metrics with the same labelset
 * Arithmetic and bool comparisons drop __name__; filtering comparisons keep
 * it (and keep the left-hand value, as Prometheus does). atan2 drops it in
 * compat 3 only: Prometheus 2.42's list of name-dropping operators lacks
 * atan2 (+ - * / % ^), Prometheus 3's includes it. */
#include <string.h>

#include "gpuwatch/labels.h"
#include "promql/eval_int.h"

static int is_arith(enum gw_pq_op op)
{
    switch (op) {
    case GW_PQ_OP_ADD: case GW_PQ_OP_SUB: case GW_PQ_OP_MUL: case GW_PQ_OP_DIV:
    case GW_PQ_OP_MOD: case GW_PQ_OP_POW: case GW_PQ_OP_ATAN2:
        return 1;
    default:
        return 0;
    }
}

/* Whether the result of arithmetic operator op loses __name__. */
static int drops_name(const struct pq_ctx *ctx, enum gw_pq_op op)
{
    if (op == GW_PQ_OP_ATAN2 && ctx->o.compat == 2)
        return 0;
    return is_arith(op);
}

static int is_cmp(enum gw_pq_op op)
{
    switch (op) {
    case GW_PQ_OP_EQL: case GW_PQ_OP_NEQ: case GW_PQ_OP_GTR: case GW_PQ_OP_LSS:
    case GW_PQ_OP_GTE: case GW_PQ_OP_LTE:
        return 1;
    default:
        return 0;
    }
}

/* ------------------------------------------------------------ scalars */

static int scalar_scalar(struct pq_ctx *ctx, const struct gw_pq_node *n, const struct pq_grid *g,
                         struct pq_val *l, struct pq_val *r, struct pq_val *out)
{
    (void)ctx;
    *out = *l;
    for (size_t i = 0; i < g->n; i++) {
        double v;
        pq_binop(n->u.bin.op, l->sc[i], r->sc[i], 1, &v);
        out->sc[i] = v;
    }
    return GW_OK;
}

static int vector_scalar(struct pq_ctx *ctx, const struct gw_pq_node *n, const struct pq_grid *g,
                         struct pq_val *vec, const double *sc, int swap, struct pq_val *out)
{
    enum gw_pq_op op = n->u.bin.op;
    int rb = n->u.bin.return_bool, rc;
    int drop = drops_name(ctx, op) || rb;
    for (size_t k = 0; k < vec->nvs; k++) {
        struct pq_vser *s = &vec->vs[k];
        if ((rc = pq_check_time(ctx)))
            return rc;
        for (size_t i = 0; i < g->n; i++) {
            if (!pq_bm_get(s->pres, i))
                continue;
            double lf = s->v[i], rf = sc[i], val;
            if (swap) {
                lf = sc[i];
                rf = s->v[i];
            }
            int keep = pq_binop(op, lf, rf, 0, &val);
            if (is_cmp(op) && swap)
                val = rf;
            if (rb) {
                val = keep ? 1.0 : 0.0;
                keep = 1;
            }
            if (!keep) {
                pq_bm_clr(s->pres, i);
                continue;
            }
            s->v[i] = val;
        }
        s->ts = NULL;
        if (drop && (rc = pq_lab_drop_name(ctx, s->lab, s->llen, &s->lab, &s->llen)))
            return rc;
    }
    *out = *vec;
    return pq_vec_dedupe(ctx, out, g->n, 0);
}

/* ------------------------------------------------------------ signatures */

static int signature(struct pq_ctx *ctx, const struct pq_vser *s, const struct gw_pq_vmatch *vm,
                     struct pq_lb *b, const uint8_t **sig, size_t *slen)
{
    int rc = pq_lb_load(ctx, b, s->lab, s->llen);
    if (rc)
        return rc;
    if (vm && vm->on) {
        pq_lb_keep(b, vm->labels, vm->n_labels);
    } else {
        pq_lb_del(b, "__name__", 8);
        for (size_t i = 0; vm && i < vm->n_labels; i++)
            pq_lb_del(b, vm->labels[i], strlen(vm->labels[i]));
    }
    return pq_lb_encode(ctx, b, sig, slen);
}

static int sig_ids(struct pq_ctx *ctx, const struct pq_val *v, const struct gw_pq_vmatch *vm,
                   struct pq_itab *t, struct pq_lb *b, size_t **ids, const uint8_t ***sigs,
                   size_t **siglen)
{
    *ids = pq_alloc(ctx, (v->nvs ? v->nvs : 1) * sizeof(size_t));
    if (sigs) {
        *sigs = pq_alloc(ctx, (v->nvs ? v->nvs : 1) * sizeof(uint8_t *));
        *siglen = pq_alloc(ctx, (v->nvs ? v->nvs : 1) * sizeof(size_t));
        if (!*sigs || !*siglen)
            return GW_ENOMEM;
    }
    if (!*ids)
        return GW_ENOMEM;
    for (size_t k = 0; k < v->nvs; k++) {
        const uint8_t *sig;
        size_t sl;
        int found, rc = signature(ctx, &v->vs[k], vm, b, &sig, &sl);
        if (!rc)
            rc = pq_itab_get(ctx, t, sig, sl, 1, &(*ids)[k], &found);
        if (rc)
            return rc;
        if (sigs) {
            (*sigs)[k] = sig;
            (*siglen)[k] = sl;
        }
    }
    return GW_OK;
}

static int any_at(const struct pq_val *v, size_t i)
{
    for (size_t k = 0; k < v->nvs; k++)
        if (pq_bm_get(v->vs[k].pres, i))
            return 1;
    return 0;
}

/* ------------------------------------------------------------ and / or / unless */

static int set_op(struct pq_ctx *ctx, const struct gw_pq_node *n, const struct pq_grid *g,
                  struct pq_val *l, struct pq_val *r, struct pq_val *out)
{
    enum gw_pq_op op = n->u.bin.op;
    struct pq_itab t;
    struct pq_lb *b = pq_alloc(ctx, sizeof(*b));
    size_t *lid, *rid;
    int rc;
    if (!b)
        return GW_ENOMEM;
    if ((rc = pq_itab_init(ctx, &t, l->nvs + r->nvs)))
        return rc;
    if ((rc = sig_ids(ctx, l, n->u.bin.vm, &t, b, &lid, NULL, NULL)) ||
        (rc = sig_ids(ctx, r, n->u.bin.vm, &t, b, &rid, NULL, NULL)))
        return rc;
    size_t *stamp = pq_calloc(ctx, t.n ? t.n : 1, sizeof(size_t));
    if (!stamp)
        return GW_ENOMEM;
    /* new presence of lhs (and / unless) or rhs (or) */
    struct pq_val *flt = op == GW_PQ_OP_OR ? r : l;
    struct pq_val *ref = op == GW_PQ_OP_OR ? l : r;
    size_t *fid = op == GW_PQ_OP_OR ? rid : lid, *refid = op == GW_PQ_OP_OR ? lid : rid;
    for (size_t i = 0; i < g->n; i++) {
        if ((rc = pq_check_time(ctx)))
            return rc;
        int lany = any_at(l, i), rany = any_at(r, i);
        if (op == GW_PQ_OP_AND && (!lany || !rany)) {
            for (size_t k = 0; k < l->nvs; k++)
                pq_bm_clr(l->vs[k].pres, i);
            continue;
        }
        for (size_t k = 0; k < ref->nvs; k++)
            if (pq_bm_get(ref->vs[k].pres, i))
                stamp[refid[k]] = i + 1;
        for (size_t k = 0; k < flt->nvs; k++) {
            if (!pq_bm_get(flt->vs[k].pres, i))
                continue;
            int match = stamp[fid[k]] == i + 1;
            int keep = op == GW_PQ_OP_AND ? match : !match;
            if (!keep)
                pq_bm_clr(flt->vs[k].pres, i);
        }
    }
    if (op != GW_PQ_OP_OR) {
        *out = *l;
        return pq_vec_dedupe(ctx, out, g->n, 0);
    }
    if ((rc = pq_vec_init(ctx, out, l->nvs + r->nvs)))
        return rc;
    memcpy(out->vs, l->vs, l->nvs * sizeof(*l->vs));
    memcpy(out->vs + l->nvs, r->vs, r->nvs * sizeof(*r->vs));
    out->nvs = l->nvs + r->nvs;
    return pq_vec_dedupe(ctx, out, g->n, 0);
}

/* ------------------------------------------------------------ vector matching */

struct outs {
    struct pq_vser *s;
    size_t n, cap;
    size_t *lid;     /* interned label id per output */
    size_t *sig;     /* match group per output */
};

static int outs_add(struct pq_ctx *ctx, struct outs *o, const struct pq_grid *g, size_t *idx)
{
    if (o->n == o->cap) {
        size_t nc = o->cap ? o->cap * 2 : 16;
        struct pq_vser *ns = pq_alloc(ctx, nc * sizeof(*ns));
        size_t *nl = pq_alloc(ctx, nc * sizeof(size_t));
        size_t *nsg = pq_alloc(ctx, nc * sizeof(size_t));
        if (!ns || !nl || !nsg)
            return GW_ENOMEM;
        if (o->n) {
            memcpy(ns, o->s, o->n * sizeof(*ns));
            memcpy(nl, o->lid, o->n * sizeof(size_t));
            memcpy(nsg, o->sig, o->n * sizeof(size_t));
        }
        o->s = ns;
        o->lid = nl;
        o->sig = nsg;
        o->cap = nc;
    }
    int rc = pq_vser_alloc(ctx, &o->s[o->n], g->n);
    if (rc)
        return rc;
    *idx = o->n++;
    return GW_OK;
}

static int result_labels(struct pq_ctx *ctx, const struct gw_pq_node *n, const struct pq_vser *ms,
                         const struct pq_vser *os, struct pq_lb *b, const uint8_t **lab,
                         size_t *llen)
{
    const struct gw_pq_vmatch *vm = n->u.bin.vm;
    int rc = pq_lb_load(ctx, b, ms->lab, ms->llen);
    if (rc)
        return rc;
    if (drops_name(ctx, n->u.bin.op))
        pq_lb_del(b, "__name__", 8);
    if (vm && vm->card == GW_PQ_CARD_ONE_TO_ONE) {
        if (vm->on) {
            pq_lb_keep(b, vm->labels, vm->n_labels);
        } else {
            for (size_t i = 0; i < vm->n_labels; i++)
                pq_lb_del(b, vm->labels[i], strlen(vm->labels[i]));
        }
    }
    for (size_t i = 0; vm && i < vm->n_include; i++) {
        const char *nm = vm->include[i], *v = NULL;
        size_t nl = strlen(nm), vl = 0;
        if (gw_labels_get(os->lab, os->llen, nm, nl, &v, &vl) && vl) {
            if ((rc = pq_lb_set(ctx, b, nm, nl, v, vl)))
                return rc;
        } else {
            pq_lb_del(b, nm, nl);
        }
    }
    if (n->u.bin.return_bool)
        pq_lb_del(b, "__name__", 8);
    return pq_lb_encode(ctx, b, lab, llen);
}

/* The state of one vector-to-vector match: M is the side whose every
 * element may produce an output ("many" side, or the left for one-to-one),
 * O the side it is matched against. Per-step stamps hold step + 1. */
struct vmatch {
    const struct gw_pq_node *n;
    const struct pq_grid *g;
    struct pq_val *M, *O;
    int card, swapped;
    struct pq_itab t, pairs, labs;   /* match groups; (k, ok) pairs; output label sets */
    struct pq_lb *b;
    size_t *mid, *oid, *osl;         /* match group of each M and O element */
    const uint8_t **osig;            /* O's match-group labels, for messages */
    size_t *one;                     /* O index per match group at the step */
    size_t *ostamp;                  /* match group seen on O at the step */
    size_t *mstamp;                  /* one-to-one: match group matched at the step */
    size_t *cur_o, *cur_out;         /* last pair of each M element and its output */
    struct outs o;
    size_t lcap;
    size_t *lstamp;                  /* output label set written at the step */
};

static int vm_init(struct pq_ctx *ctx, struct vmatch *m, const struct gw_pq_node *n, const struct pq_grid *g,
                   struct pq_val *l, struct pq_val *r)
{
    const struct gw_pq_vmatch *vm = n->u.bin.vm;
    int rc;
    memset(m, 0, sizeof *m);
    m->n = n;
    m->g = g;
    m->card = vm ? (int)vm->card : GW_PQ_CARD_ONE_TO_ONE;
    m->swapped = m->card == GW_PQ_CARD_ONE_TO_MANY;
    m->M = m->swapped ? r : l;
    m->O = m->swapped ? l : r;
    m->b = pq_alloc(ctx, sizeof(*m->b));
    if (!m->b)
        return GW_ENOMEM;
    if ((rc = pq_itab_init(ctx, &m->t, l->nvs + r->nvs)) ||
        (rc = pq_itab_init(ctx, &m->pairs, m->M->nvs)) || (rc = pq_itab_init(ctx, &m->labs, m->M->nvs)))
        return rc;
    if ((rc = sig_ids(ctx, m->M, vm, &m->t, m->b, &m->mid, NULL, NULL)) ||
        (rc = sig_ids(ctx, m->O, vm, &m->t, m->b, &m->oid, &m->osig, &m->osl)))
        return rc;
    size_t nsig = m->t.n ? m->t.n : 1;
    m->one = pq_alloc(ctx, nsig * sizeof(size_t));
    m->ostamp = pq_calloc(ctx, nsig, sizeof(size_t));
    m->mstamp = pq_calloc(ctx, nsig, sizeof(size_t));
    if (!m->one || !m->ostamp || !m->mstamp)
        return GW_ENOMEM;
    m->cur_o = pq_alloc(ctx, (m->M->nvs ? m->M->nvs : 1) * sizeof(size_t));
    m->cur_out = pq_alloc(ctx, (m->M->nvs ? m->M->nvs : 1) * sizeof(size_t));
    if (!m->cur_o || !m->cur_out)
        return GW_ENOMEM;
    for (size_t k = 0; k < m->M->nvs; k++)
        m->cur_o[k] = SIZE_MAX;
    m->lcap = 16;
    m->lstamp = pq_calloc(ctx, m->lcap, sizeof(size_t));
    if (!m->lstamp)
        return GW_ENOMEM;
    return GW_OK;
}

/* Step i of the O side: each match group's one element (two are an
 * error). */
static int vm_index_other(struct pq_ctx *ctx, struct vmatch *m, size_t i)
{
    const struct pq_val *O = m->O;
    for (size_t k = 0; k < O->nvs; k++) {
        if (!pq_bm_get(O->vs[k].pres, i))
            continue;
        size_t s = m->oid[k];
        if (m->ostamp[s] == i + 1) {
            /* label sets shortened so the whole message fits the error buffer */
            char ml[40], a[48], d[48];
            pq_lab_format(m->osig[k], m->osl[k], ml, sizeof(ml));
            pq_lab_format(O->vs[k].lab, O->vs[k].llen, a, sizeof(a));
            pq_lab_format(O->vs[m->one[s]].lab, O->vs[m->one[s]].llen, d, sizeof(d));
            return gw_error_set(ctx->err, GW_EINVAL,
                                "found duplicate series for the match group %s on the %s hand-side of the operation: [%s, %s];many-to-many matching not allowed: matching labels must be unique on one side",
                                ml, m->swapped ? "left" : "right", a, d);
        }
        m->ostamp[s] = i + 1;
        m->one[s] = k;
    }
    return GW_OK;
}

/* The output series of the pair (M element k, O element ok) in match group
 * s, created with its result labels on first use: *idx into m->o. */
static int vm_output(struct pq_ctx *ctx, struct vmatch *m, size_t k, size_t ok, size_t s, size_t *idx)
{
    int rc, found = 1;
    /* the pair rarely changes from one step to the next, so the last one
     * is remembered */
    if (m->cur_o[k] == ok) {
        *idx = m->cur_out[k];
    } else {
        size_t key[2] = { k, ok };
        if ((rc = pq_itab_get(ctx, &m->pairs, (const uint8_t *)key, sizeof(key), 0, idx, &found)))
            return rc;
        if (!found) {
            uint8_t *kb = pq_alloc(ctx, sizeof(key));
            if (!kb)
                return GW_ENOMEM;
            memcpy(kb, key, sizeof(key));
            if ((rc = pq_itab_get(ctx, &m->pairs, kb, sizeof(key), 1, idx, &found)))
                return rc;
            found = 0;
        }
        m->cur_o[k] = ok;
        m->cur_out[k] = *idx;
    }
    if (found)
        return GW_OK;
    size_t oi;
    if ((rc = outs_add(ctx, &m->o, m->g, &oi)))
        return rc;
    struct pq_vser *os = &m->o.s[oi];
    if ((rc = result_labels(ctx, m->n, &m->M->vs[k], &m->O->vs[ok], m->b, &os->lab, &os->llen)))
        return rc;
    size_t lid;
    if ((rc = pq_itab_get(ctx, &m->labs, os->lab, os->llen, 1, &lid, &found)))
        return rc;
    m->o.lid[oi] = lid;
    m->o.sig[oi] = s;
    if (lid >= m->lcap) {
        size_t nc = m->lcap * 2;
        size_t *nl = pq_calloc(ctx, nc, sizeof(size_t));
        if (!nl)
            return GW_ENOMEM;
        memcpy(nl, m->lstamp, m->lcap * sizeof(size_t));
        m->lstamp = nl;
        m->lcap = nc;
    }
    return GW_OK;
}

static int vector_match(struct pq_ctx *ctx, const struct gw_pq_node *n, const struct pq_grid *g,
                        struct pq_val *l, struct pq_val *r, struct pq_val *out)
{
    enum gw_pq_op op = n->u.bin.op;
    int rb = n->u.bin.return_bool;
    struct vmatch m;
    int rc = vm_init(ctx, &m, n, g, l, r);
    if (rc)
        return rc;
    struct pq_val *M = m.M, *O = m.O;
    for (size_t i = 0; i < g->n; i++) {
        if ((rc = pq_check_time(ctx)))
            return rc;
        if (!any_at(M, i) || !any_at(O, i))
            continue;
        if ((rc = vm_index_other(ctx, &m, i)))
            return rc;
        int dup_pending = 0;
        for (size_t k = 0; k < M->nvs; k++) {
            if (!pq_bm_get(M->vs[k].pres, i))
                continue;
            size_t s = m.mid[k];
            if (m.ostamp[s] != i + 1)
                continue;
            size_t ok = m.one[s];
            double fl = M->vs[k].v[i], fr = O->vs[ok].v[i], val;
            if (m.swapped) {
                fl = O->vs[ok].v[i];
                fr = M->vs[k].v[i];
            }
            int keep = pq_binop(op, fl, fr, 0, &val);
            if (rb) {
                val = keep ? 1.0 : 0.0;
                keep = 1;
            }
            if (!keep)
                continue;
            if (m.card == GW_PQ_CARD_ONE_TO_ONE) {
                if (m.mstamp[s] == i + 1)
                    return gw_error_set(ctx->err, GW_EINVAL,
                                        "multiple matches for labels: many-to-one matching must be explicit (group_left/group_right)");
                m.mstamp[s] = i + 1;
            }
            size_t idx;
            if ((rc = vm_output(ctx, &m, k, ok, s, &idx)))
                return rc;
            struct pq_vser *os = &m.o.s[idx];
            size_t lid = m.o.lid[idx];
            if (m.lstamp[lid] == i + 1) {
                /* another output with these labels at this step */
                if (m.card != GW_PQ_CARD_ONE_TO_ONE) {
                    int same_group = 0;
                    for (size_t q = 0; q < m.o.n && !same_group; q++)
                        same_group = q != idx && m.o.lid[q] == lid && m.o.sig[q] == s &&
                                     pq_bm_get(m.o.s[q].pres, i);
                    if (same_group)
                        return gw_error_set(ctx->err, GW_EINVAL,
                                            "multiple matches for labels: grouping labels must ensure unique matches");
                }
                dup_pending = 1;
            }
            m.lstamp[lid] = i + 1;
            os->v[i] = val;
            pq_bm_set(os->pres, i);
        }
        if (dup_pending)
            return gw_error_set(ctx->err, GW_EINVAL,
                                "vector cannot contain metrics with the same labelset");
    }
    memset(out, 0, sizeof(*out));
    out->type = GW_PQ_T_VECTOR;
    out->vs = m.o.s;
    out->nvs = m.o.n;
    if (!out->vs)
        return pq_vec_init(ctx, out, 1);
    return pq_vec_dedupe(ctx, out, g->n, 0);
}

/* ------------------------------------------------------------ dispatch */

int pq_eval_binary(struct pq_ctx *ctx, const struct gw_pq_node *n, const struct pq_grid *g,
                   struct pq_val *out)
{
    struct pq_val l, r;
    int rc = pq_eval(ctx, n->u.bin.lhs, g, &l);
    if (rc)
        return rc;
    if ((rc = pq_eval(ctx, n->u.bin.rhs, g, &r)))
        return rc;
    enum gw_pq_op op = n->u.bin.op;
    if (l.type == GW_PQ_T_SCALAR && r.type == GW_PQ_T_SCALAR) {
        if (op == GW_PQ_OP_AND || op == GW_PQ_OP_OR || op == GW_PQ_OP_UNLESS)
            return gw_error_set(ctx->err, GW_EINVAL,
                                "set operator \"%s\" not allowed in binary scalar expression",
                                gw_pq_op_name(op));
        return scalar_scalar(ctx, n, g, &l, &r, out);
    }
    if (l.type == GW_PQ_T_VECTOR && r.type == GW_PQ_T_VECTOR) {
        if (op == GW_PQ_OP_AND || op == GW_PQ_OP_OR || op == GW_PQ_OP_UNLESS)
            return set_op(ctx, n, g, &l, &r, out);
        return vector_match(ctx, n, g, &l, &r, out);
    }
    if (op == GW_PQ_OP_AND || op == GW_PQ_OP_OR || op == GW_PQ_OP_UNLESS)
        return gw_error_set(ctx->err, GW_EINVAL,
                            "set operator \"%s\" not allowed in binary scalar expression",
                            gw_pq_op_name(op));
    if (l.type == GW_PQ_T_VECTOR && r.type == GW_PQ_T_SCALAR)
        return vector_scalar(ctx, n, g, &l, r.sc, 0, out);
    if (l.type == GW_PQ_T_SCALAR && r.type == GW_PQ_T_VECTOR)
        return vector_scalar(ctx, n, g, &r, l.sc, 1, out);
    return gw_error_set(ctx->err, GW_EINVAL, "binary expression must contain only scalar and instant vector types");
}
