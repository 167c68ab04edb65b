/* src/http/params.c - application/x-www-form-urlencoded parameters, from
 * the URL query string and from POST bodies. Pairs keep their arrival
 * order so repeated keys (match[]) come back in the order sent; '+' is a
 * space and %XX a byte. Both key and value are decoded into owned,
 * NUL-terminated copies. Example: "match%5B%5D=up&match%5B%5D=%7Bjob%3D%22a+b%22%7D"
 * gives ("match[]","up"), ("match[]","{job=\"a b\"}"). */
#include <stdlib.h>
#include <string.h>
#include "http/http_int.h"

void gw_params_init(struct gw_params *p)
{
    p->v = NULL;
    p->n = p->cap = 0;
}

void gw_params_free(struct gw_params *p)
{
    if (p == NULL)
        return;
    for (size_t i = 0; i < p->n; i++) {
        free(p->v[i].key);
        free(p->v[i].val);
    }
    free(p->v);
    gw_params_init(p);
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

long gw_url_decode(const char *in, size_t len, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        char c = in[i];
        if (c == '+') {
            out[o++] = ' ';
        } else if (c == '%') {
            int hi, lo;
            if (i + 2 >= len)
                return -1;
            hi = hexval(in[i + 1]);
            lo = hexval(in[i + 2]);
            if (hi < 0 || lo < 0)
                return -1;
            out[o++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            out[o++] = c;
        }
    }
    out[o] = '\0';
    return (long)o;
}

static char *decode_dup(const char *s, size_t len, size_t *out_len, int *rc)
{
    char *d = malloc(len + 1);
    long n;
    if (d == NULL) {
        *rc = GW_ENOMEM;
        return NULL;
    }
    n = gw_url_decode(s, len, d);
    if (n < 0) {
        free(d);
        *rc = GW_EPARSE;
        return NULL;
    }
    *out_len = (size_t)n;
    return d;
}

int gw_params_parse(struct gw_params *p, const char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        size_t end = i, eq;
        while (end < len && s[end] != '&')
            end++;
        if (end == i) {
            i = end + 1;
            continue;
        }
        eq = i;
        while (eq < end && s[eq] != '=')
            eq++;
        if (p->n >= GW_PARAMS_MAX)
            return GW_ELIMIT;
        if (p->n == p->cap) {
            size_t nc = p->cap ? p->cap * 2 : 8;
            struct gw_param *nv = realloc(p->v, nc * sizeof *nv);
            if (nv == NULL)
                return GW_ENOMEM;
            p->v = nv;
            p->cap = nc;
        }
        int rc = GW_OK;
        struct gw_param *q = &p->v[p->n];
        q->key = decode_dup(s + i, eq - i, &q->key_len, &rc);
        if (q->key == NULL)
            return rc;
        if (eq < end)
            q->val = decode_dup(s + eq + 1, end - eq - 1, &q->val_len, &rc);
        else
            q->val = decode_dup("", 0, &q->val_len, &rc);
        if (q->val == NULL) {
            free(q->key);
            return rc;
        }
        p->n++;
        i = end + 1;
    }
    return GW_OK;
}

const struct gw_param *gw_params_get(const struct gw_params *p, const char *key)
{
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->v[i].key, key) == 0)
            return &p->v[i];
    return NULL;
}

int gw_http_time_param(struct gw_http_req *rq, struct gw_http_resp *rs, const char *name, int64_t def, int64_t *out)
{
    const struct gw_param *p = gw_params_get(&rq->params, name);
    *out = def;
    if (!p || p->val_len == 0) return 0;
    if (gw_parse_time_ms(p->val, out) != GW_OK) {
        gw_resp_api_error(rs, "bad_data", "invalid parameter \"%s\": cannot parse \"%.100s\" to a valid timestamp",
                          name, p->val);
        return -1;
    }
    return 0;
}
