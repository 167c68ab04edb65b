/* identity.c - one node per machine, whatever the exporters call it.
 *
 * dcgm-exporter names the host in `hostname` (since May 2026) or
 * `Hostname`; on Kubernetes that label holds the exporter *pod's* name and
 * `instance` the pod IP, while the node name reaches the series only
 * through relabelling (`node`, `kubernetes_node`). node_exporter is named
 * by its `instance` (a short name, an FQDN or an IP, with a port), and
 * says its own host name in node_uname_info{nodename}. A receiver that
 * takes one label literally sees two or three nodes per machine, or names
 * the exporter pod.
 *
 * The canonical node of a series:
 *  1. the first label of `node_labels` (default node, kubernetes_node,
 *     nodename, hostname, Hostname, host, exported_instance, instance)
 *     that is present and not empty, skipping a hostname/Hostname that is
 *     the series' own `pod`/`exported_pod` or looks like a dcgm-exporter
 *     pod ("...dcgm-exporter-...");
 *  2. `node_regex` (optional, anchored): its first group of that value;
 *  3. normalised: lower case, without `:port` (and the brackets of an IPv6
 *     literal), without the domain (`strip_domain`, not for IPs);
 *  4. `node_map` (optional "alias=node" pairs) applied to the result;
 *  5. an IP address is looked up among the learnt joins.
 * Joins are learnt from any series that names its host by a label other
 * than an instance and carries an `instance` whose host is an IP address
 * (node_uname_info{nodename}, DCGM's Hostname next to its instance,
 * kube's `node` next to the pod IP): the instance's IP becomes
 * an alias of the node. A node created earlier under the alias (series
 * that arrived before the join) is merged into the canonical node: its
 * series move, its state folds in, and its name resolves to the canonical
 * node from then on. The first join of an alias wins; a conflicting one
 * is counted and ignored. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "detect_int.h"
#include "gpuwatch/labels.h"
#include "gpuwatch/matcher.h"

#define MAX_LABELS 16
#define MAX_MAP 256

struct ident {
    char labels[MAX_LABELS][40];
    size_t n_labels;
    struct gw_matcher re;            /* node_regex, type GW_MATCH_RE when set */
    int has_re;
    struct {
        char from[DET_NODE_NAME], to[DET_NODE_NAME];
    } map[MAX_MAP];
    size_t n_map;
};

static const char k_default_labels[] = "node,kubernetes_node,nodename,hostname,Hostname,host,exported_instance,instance";

static void lower_copy(char *out, size_t cap, const char *s, size_t n)
{
    if (n >= cap) n = cap - 1;
    for (size_t i = 0; i < n; i++) out[i] = (char)tolower((unsigned char)s[i]);
    out[n] = 0;
}

static int parse_list(struct ident *id, const char *list, struct gw_error *err)
{
    const char *p = list && list[0] ? list : k_default_labels;
    while (*p) {
        while (*p == ' ' || *p == ',') p++;
        const char *e = p;
        while (*e && *e != ',' && *e != ' ') e++;
        if (e > p) {
            if (id->n_labels == MAX_LABELS || (size_t)(e - p) >= sizeof id->labels[0])
                return gw_error_set(err, GW_EINVAL, "node_labels: at most %d labels of at most %zu characters",
                                    MAX_LABELS, sizeof id->labels[0] - 1);
            memcpy(id->labels[id->n_labels], p, (size_t)(e - p));
            id->labels[id->n_labels][e - p] = 0;
            id->n_labels++;
        }
        p = e;
    }
    if (id->n_labels == 0) return gw_error_set(err, GW_EINVAL, "node_labels: no label named");
    return GW_OK;
}

static int parse_map(struct ident *id, const char *map, struct gw_error *err)
{
    const char *p = map;
    while (p && *p) {
        while (*p == ' ' || *p == ',') p++;
        if (!*p) break;
        const char *e = p;
        while (*e && *e != ',') e++;
        const char *eq = memchr(p, '=', (size_t)(e - p));
        if (!eq || eq == p || eq + 1 >= e)
            return gw_error_set(err, GW_EINVAL, "node_map: '%.*s' is not alias=node", (int)(e - p), p);
        if (id->n_map == MAX_MAP) return gw_error_set(err, GW_EINVAL, "node_map: at most %d pairs", MAX_MAP);
        const char *a = p, *ae = eq, *b = eq + 1, *be = e;
        while (ae > a && ae[-1] == ' ') ae--;
        while (b < be && *b == ' ') b++;
        while (be > b && be[-1] == ' ') be--;
        lower_copy(id->map[id->n_map].from, DET_NODE_NAME, a, (size_t)(ae - a));
        lower_copy(id->map[id->n_map].to, DET_NODE_NAME, b, (size_t)(be - b));
        id->n_map++;
        p = e;
    }
    return GW_OK;
}

int det_ident_init(struct gw_det *d, struct gw_error *err)
{
    struct ident *id = calloc(1, sizeof *id);
    if (!id) return gw_error_set(err, GW_ENOMEM, "out of memory");
    int rc = parse_list(id, d->c.node_labels, err);
    if (rc == GW_OK) rc = parse_map(id, d->c.node_map, err);
    if (rc == GW_OK && d->c.node_regex[0]) {
        struct gw_error e2 = {0};
        if (gw_matcher_init_capturing(&id->re, "node", 4, d->c.node_regex, strlen(d->c.node_regex), &e2) != GW_OK)
            rc = gw_error_set(err, GW_EINVAL, "node_regex: %s", e2.msg);
        else
            id->has_re = 1;
    }
    if (rc != GW_OK) {
        free(id);
        return rc;
    }
    d->ident = id;
    return GW_OK;
}

void det_ident_free(struct gw_det *d)
{
    struct ident *id = d->ident;
    if (!id) return;
    if (id->has_re) gw_matcher_free(&id->re);
    free(id);
    d->ident = NULL;
}

/* ------------------------------------------------------------ names */

static int is_ipv4(const char *s, size_t n)
{
    int dots = 0, digits = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '.') {
            if (!digits) return 0;
            dots++;
            digits = 0;
        } else if (s[i] >= '0' && s[i] <= '9') {
            if (++digits > 3) return 0;
        } else {
            return 0;
        }
    }
    return dots == 3 && digits > 0;
}

static int is_ip(const char *s, size_t n)
{
    if (is_ipv4(s, n)) return 1;
    int colons = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ':') colons++;
        else if (!isxdigit((unsigned char)s[i]) && s[i] != '.') return 0;
    }
    return colons >= 2;
}

/* The host part of a value: without "[...]" brackets and ":port". */
static void host_part(const char **s, size_t *n)
{
    const char *p = *s;
    size_t len = *n;
    if (len && p[0] == '[') {
        const char *e = memchr(p, ']', len);
        if (e) {
            *s = p + 1;
            *n = (size_t)(e - p) - 1;
            return;
        }
    }
    const char *colon = memchr(p, ':', len);
    if (colon && !memchr(colon + 1, ':', len - (size_t)(colon + 1 - p))) {
        /* one colon: host:port when the rest is digits */
        int digits = colon + 1 < p + len;
        for (const char *q = colon + 1; q < p + len; q++) digits &= *q >= '0' && *q <= '9';
        if (digits) len = (size_t)(colon - p);
    }
    *n = len;
}

/* Normalises a raw value into out; returns 1 when it is an IP address. */
static int normalise(const struct gw_det *d, const char *s, size_t n, char *out, size_t cap)
{
    host_part(&s, &n);
    while (n && (s[n - 1] == '.')) n--;   /* a trailing root dot */
    int ip = is_ip(s, n);
    if (!ip && d->c.strip_domain) {
        const char *dot = memchr(s, '.', n);
        if (dot && dot > s) n = (size_t)(dot - s);
    }
    lower_copy(out, cap, s, n);
    return ip;
}

static const char *map_name(const struct ident *id, const char *name)
{
    for (size_t i = 0; i < id->n_map; i++)
        if (!strcmp(id->map[i].from, name)) return id->map[i].to;
    return name;
}

static int looks_like_pod(const uint8_t *labels, size_t len, const char *v, size_t n)
{
    static const char *const pods[] = {"pod", "exported_pod", "kubernetes_pod_name", "pod_name"};
    for (size_t i = 0; i < sizeof pods / sizeof pods[0]; i++) {
        const char *p;
        size_t pn;
        if (gw_labels_get(labels, len, pods[i], strlen(pods[i]), &p, &pn) && pn == n && !memcmp(p, v, n)) return 1;
    }
    for (size_t i = 0; i + 14 <= n; i++)
        if (!strncasecmp(v + i, "dcgm-exporter-", 14)) return 1;
    return 0;
}

uint32_t det_node_resolve(const struct gw_det *d, uint32_t ni)
{
    for (int hops = 0; ni < d->n_nodes && d->nodes[ni].merged_into && hops < 8; hops++) ni = d->nodes[ni].merged_into - 1;
    return ni;
}

/* ------------------------------------------------------------ merging */

static void pres_fold(struct det_pres *into, const struct det_pres *from)
{
    if (from->base == INT64_MIN) return;
    for (int i = 0; i < 64; i++)
        if (from->bits >> i & 1) det_pres_set(into, from->base - i);
}

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Folds alias node a into canonical node c and points a's name at c. */
static void merge_node(struct gw_det *d, uint32_t a, uint32_t c)
{
    struct det_node *na = &d->nodes[a], *nc = &d->nodes[c];
    /* move the series, keeping the order of each list */
    uint32_t tail = 0;
    for (uint32_t i = nc->series_head; i; i = d->series[i - 1].next) tail = i;
    for (uint32_t i = na->series_head; i; i = d->series[i - 1].next) d->series[i - 1].node = c;
    if (tail) d->series[tail - 1].next = na->series_head;
    else nc->series_head = na->series_head;
    na->series_head = 0;
    if (!nc->dcgm_inst) nc->dcgm_inst = na->dcgm_inst;
    if (na->first_seen != INT64_MIN) nc->first_seen = nc->first_seen == INT64_MIN ? na->first_seen : min64(nc->first_seen, na->first_seen);
    nc->max_t = max64(nc->max_t, na->max_t);
    for (int j = 0; j < 2; j++) {
        pres_fold(&nc->answered[j], &na->answered[j]);
        pres_fold(&nc->up_seen[j], &na->up_seen[j]);
        nc->last_answer[j] = max64(nc->last_answer[j], na->last_answer[j]);
    }
    pres_fold(&nc->any_gpu, &na->any_gpu);
    for (int k = 0; k < N_NSLOT; k++)
        if (!nc->slot[k]) nc->slot[k] = na->slot[k];
    for (int k = 0; k < DET_GRID; k++) nc->ivh[k] = (uint16_t)(nc->ivh[k] + na->ivh[k] > 65535 ? 65535 : nc->ivh[k] + na->ivh[k]);
    if (!nc->iv_node) nc->iv_node = na->iv_node;
    if (na->gpu_count > nc->gpu_count) nc->gpu_count = na->gpu_count;
    for (int g = 0; g < DET_MAX_GPUS; g++) {
        struct det_gpu *ga = &na->gpus[g], *gc = &nc->gpus[g];
        if (ga->first_seen == INT64_MIN) continue;
        if (gc->first_seen == INT64_MIN) {
            *gc = *ga;
            continue;
        }
        gc->first_seen = min64(gc->first_seen, ga->first_seen);
        gc->last_seen = max64(gc->last_seen, ga->last_seen);
        for (int k = 0; k < G_NSLOT; k++)
            if (!gc->slot[k]) gc->slot[k] = ga->slot[k];
        pres_fold(&gc->pres, &ga->pres);
    }
    /* the alias keeps its name (so lookups find it) and nothing else */
    char name[DET_NODE_NAME];
    uint64_t h = na->name_hash;
    memcpy(name, na->name, sizeof name);
    memset(na, 0, sizeof *na);
    memcpy(na->name, name, sizeof name);
    na->name_hash = h;
    na->first_seen = INT64_MIN;
    na->merged_into = c + 1;
    d->k.joins++;
    det_wm_recount(d);
}

/* Records alias -> canonical node c. */
static void learn_join(struct gw_det *d, const char *alias, uint32_t c)
{
    uint32_t a = det_node_get(d, alias, strlen(alias));
    if (a == UINT32_MAX || a == c) return;
    struct det_node *na = &d->nodes[a];
    if (na->merged_into) {
        if (det_node_resolve(d, a) != c) d->k.join_conflicts++;
        return;
    }
    /* c itself must not be an alias of a (no cycles) */
    if (det_node_resolve(d, c) == a) return;
    merge_node(d, a, c);
}

/* ------------------------------------------------------------ the rule */

uint32_t det_ident_node(struct gw_det *d, const uint8_t *labels, size_t len)
{
    struct ident *id = d->ident;
    if (!id) return UINT32_MAX;
    char name[DET_NODE_NAME];
    int name_ip = 0, found = 0;
    size_t from_label = 0;
    for (size_t i = 0; i < id->n_labels && !found; i++) {
        const char *v;
        size_t n;
        const char *ln = id->labels[i];
        if (!gw_labels_get(labels, len, ln, strlen(ln), &v, &n) || n == 0) continue;
        if ((!strcmp(ln, "hostname") || !strcmp(ln, "Hostname")) && looks_like_pod(labels, len, v, n)) continue;
        if (id->has_re) {
            const char *gv;
            size_t gn;
            if (!gw_matcher_group(&id->re, v, n, &gv, &gn) || gn == 0) continue;
            name_ip = normalise(d, gv, gn, name, sizeof name);
        } else {
            name_ip = normalise(d, v, n, name, sizeof name);
        }
        if (!name[0]) continue;
        found = 1;
        from_label = i;
    }
    if (!found) return UINT32_MAX;
    const char *mapped = map_name(id, name);
    if (mapped != name) {
        snprintf(name, sizeof name, "%s", mapped);
        name_ip = is_ip(name, strlen(name));
    }
    uint32_t ni = det_node_get(d, name, strlen(name));
    if (ni == UINT32_MAX) return UINT32_MAX;
    ni = det_node_resolve(d, ni);
    /* learn: a real name next to an instance that names the host otherwise */
    const char *ln = id->labels[from_label];
    if (!name_ip && strcmp(ln, "instance") && strcmp(ln, "exported_instance")) {
        const char *v;
        size_t n;
        if (gw_labels_get(labels, len, "instance", 8, &v, &n) && n > 0) {
            char alias[DET_NODE_NAME];
            int alias_ip = normalise(d, v, n, alias, sizeof alias);
            const char *am = map_name(id, alias);
            /* only IPs and names of another host form: a central exporter's
             * instance would join everything it reports */
            if (alias[0] && am == alias && strcmp(alias, d->nodes[ni].name) && alias_ip) learn_join(d, alias, ni);
        }
    }
    return det_node_resolve(d, ni);
}
