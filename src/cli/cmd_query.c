/* cmd_query.c - `gpuwatch query`: evaluates one PromQL expression, either
 * against a running server over HTTP (POST /api/v1/query or
 * /api/v1/query_range, form-encoded) or directly on a data dir opened
 * read-only (safe next to a running serve), and prints the answer as a
 * readable table, or with --json the API's JSON exactly as the server
 * sends it (httpc.h is the client).
 *
 *   gpuwatch query 'sum by (instance) (rate(node_cpu_seconds_total[5m]))' --time now-1h
 *   gpuwatch query 'DCGM_FI_DEV_GPU_TEMP' --data-dir /var/lib/gpuwatch --start now-1h --step 1m
 *
 * Table output (a vector; a matrix prints one block per series with one
 * "time value" row per point; a scalar or string one line):
 *   SERIES                                  VALUE
 *   up{instance="a:9100", job="node"}       1
 *   1 series at 2026-11-29T19:00:00Z
 *
 * Times: float Unix seconds, RFC 3339, "now" or "now-DURATION"
 * (now-1h30m). Without --step a range query takes (end - start) / 250,
 * at least 1 s. Exit status: 0 success, 1 the query failed (the API's
 * errorType and message go to stderr), 2 bad usage. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuwatch/buf.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/db.h"
#include "gpuwatch/http.h"
#include "gpuwatch/httpc.h"
#include "cli_parse.h"

int gw_cli_query(int argc, char **argv);

#define RESP_MAX ((size_t)1 << 30)
#define JSON_MAX_DEPTH 64

/* ------------------------------------------------------------ helpers */

static int url_encode(struct gw_buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    int rc = GW_OK;
    for (; rc == GW_OK && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
            c == '.' || c == '~') {
            rc = gw_buf_putc(b, c);
        } else {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            rc = gw_buf_append(b, e, 3);
        }
    }
    return rc;
}

static int add_param(struct gw_buf *b, const char *k, const char *v)
{
    int rc = GW_OK;
    if (v == NULL)
        return GW_OK;
    if (b->len)
        rc = gw_buf_putc(b, '&');
    if (rc == GW_OK)
        rc = gw_buf_printf(b, "%s=", k);
    if (rc == GW_OK)
        rc = url_encode(b, v);
    return rc;
}

/* "now", "now-1h", float seconds -> ms (returns 1); other forms (RFC 3339)
 * are left to the API (returns 0); -1 on a malformed now-DURATION. */
static int cli_time_ms(const char *s, int64_t now, int64_t *out)
{
    char *end;
    double v;
    if (strcmp(s, "now") == 0) {
        *out = now;
        return 1;
    }
    if (strncmp(s, "now-", 4) == 0) {
        int64_t d;
        if (gw_parse_duration_ms(s + 4, &d) != GW_OK || d < 0)
            return -1;
        *out = now - d;
        return 1;
    }
    errno = 0;
    v = strtod(s, &end);
    if (end != s && *end == '\0' && errno == 0 && isfinite(v) && fabs(v) < 9.2e15) {
        *out = (int64_t)llround(v * 1000.0);
        return 1;
    }
    return 0;
}

/* Time parameter as the API takes it: seconds with ms when known, else the
 * text as given. */
static const char *api_time(const char *s, int64_t now, char *buf, size_t cap, int64_t *ms, int *known)
{
    int k = cli_time_ms(s, now, ms);
    if (k < 0)
        return NULL;
    *known = k;
    if (!k)
        return s;
    snprintf(buf, cap, "%" PRId64 ".%03d", *ms / 1000 - (*ms % 1000 < 0), (int)(((*ms % 1000) + 1000) % 1000));
    return buf;
}

static void fmt_time(double sec, char *out, size_t cap)
{
    time_t t = (time_t)floor(sec);
    int ms = (int)llround((sec - floor(sec)) * 1000.0);
    struct tm tm;
    char base[32];
    if (ms >= 1000) {
        t++;
        ms -= 1000;
    }
    if (ms < 0)
        ms = 0;
    gmtime_r(&t, &tm);
    if (strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm) == 0)
        base[0] = '\0';
    if (ms)
        snprintf(out, cap, "%s.%03dZ", base, ms % 1000);
    else
        snprintf(out, cap, "%sZ", base);
}

/* ------------------------------------------------------------ HTTP client */

/* POSTs the form to the server's endpoint (below the URL's path); the
 * answer's body goes to out; returns the HTTP status, -1 on a transport
 * error (reported). */
static int http_post_form(const char *url, const char *endpoint, const struct gw_buf *form, int64_t timeout_ms,
                          struct gw_buf *out)
{
    static const struct gw_httpc_header hdrs[] = {
        {"Content-Type", "application/x-www-form-urlencoded"},
        {"Accept", "application/json"},
    };
    struct gw_httpc_opts o;
    struct gw_httpc *c = NULL;
    struct gw_httpc_response resp;
    struct gw_error err = {0};
    char path[2304];
    size_t pl;
    int status = -1;

    gw_httpc_opts_default(&o);
    o.timeout_ms = timeout_ms + 10000 > INT32_MAX ? INT32_MAX : (int)(timeout_ms + 10000);
    o.max_body_bytes = RESP_MAX;
    o.user_agent = "gpuwatch-query";
    if (gw_httpc_open(&c, url, &o, &err) != GW_OK) {
        fprintf(stderr, "gpuwatch query: cannot use server URL \"%s\": %s\n", url, err.msg);
        return -1;
    }
    pl = strlen(gw_httpc_url(c)->path);
    while (pl > 0 && gw_httpc_url(c)->path[pl - 1] == '/')
        pl--;
    snprintf(path, sizeof path, "%.*s%s", (int)pl, gw_httpc_url(c)->path, endpoint);
    gw_httpc_response_init(&resp);
    if (gw_httpc_request(c, "POST", path, hdrs, sizeof hdrs / sizeof hdrs[0], form->data ? form->data : (void *)"",
                         form->len, &resp, &err) != GW_OK) {
        fprintf(stderr, "gpuwatch query: request to %s failed: %s\n", url, err.msg);
    } else if (gw_buf_append(out, resp.body.data ? resp.body.data : (uint8_t *)"", resp.body.len) != GW_OK) {
        fprintf(stderr, "gpuwatch query: out of memory\n");
    } else {
        status = resp.status;
    }
    gw_httpc_response_free(&resp);
    gw_httpc_close(c);
    return status;
}

/* ------------------------------------------------------------ JSON */

/* A small JSON reader for the API's answers: values live in one array of
 * nodes; objects and arrays list their children by index. */
enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };
struct jnode {
    enum jtype type;
    char *s;              /* J_STR: decoded, NUL-terminated; object member key in key */
    char *key;
    double num;
    size_t first, n;      /* J_ARR/J_OBJ: children are kids[first .. first+n) */
};
struct jdoc {
    const char *p, *end;
    struct jnode *nodes;
    size_t n_nodes, cap_nodes;
    size_t *kids;
    size_t n_kids, cap_kids;
    int depth;
};

static void jdoc_free(struct jdoc *d)
{
    for (size_t i = 0; i < d->n_nodes; i++) {
        free(d->nodes[i].s);
        free(d->nodes[i].key);
    }
    free(d->nodes);
    free(d->kids);
}

static void jws(struct jdoc *d)
{
    while (d->p < d->end && (*d->p == ' ' || *d->p == '\t' || *d->p == '\n' || *d->p == '\r'))
        d->p++;
}

static long jnew(struct jdoc *d)
{
    if (d->n_nodes == d->cap_nodes) {
        size_t nc = d->cap_nodes ? d->cap_nodes * 2 : 256;
        struct jnode *nn = realloc(d->nodes, nc * sizeof *nn);
        if (nn == NULL)
            return -1;
        d->nodes = nn;
        d->cap_nodes = nc;
    }
    memset(&d->nodes[d->n_nodes], 0, sizeof d->nodes[0]);
    return (long)d->n_nodes++;
}

static int put_utf8(struct gw_buf *b, uint32_t cp)
{
    uint8_t u[4];
    size_t k;
    if (cp < 0x80) {
        u[0] = (uint8_t)cp; k = 1;
    } else if (cp < 0x800) {
        u[0] = (uint8_t)(0xC0 | (cp >> 6)); u[1] = (uint8_t)(0x80 | (cp & 0x3F)); k = 2;
    } else if (cp < 0x10000) {
        u[0] = (uint8_t)(0xE0 | (cp >> 12)); u[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (uint8_t)(0x80 | (cp & 0x3F)); k = 3;
    } else {
        u[0] = (uint8_t)(0xF0 | (cp >> 18)); u[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F)); u[3] = (uint8_t)(0x80 | (cp & 0x3F)); k = 4;
    }
    return gw_buf_append(b, u, k);
}

static int hex4(const char *p, const char *end, uint32_t *out)
{
    uint32_t v = 0;
    if (end - p < 4)
        return -1;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int dd = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                                       : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
        if (dd < 0)
            return -1;
        v = v * 16 + (uint32_t)dd;
    }
    *out = v;
    return 0;
}

static char *jstring(struct jdoc *d)
{
    struct gw_buf b;
    gw_buf_init(&b, RESP_MAX);
    if (d->p >= d->end || *d->p != '"')
        return NULL;
    d->p++;
    while (d->p < d->end && *d->p != '"') {
        int rc;
        if (*d->p == '\\') {
            char c;
            if (d->end - d->p < 2)
                goto bad;
            c = d->p[1];
            d->p += 2;
            switch (c) {
            case 'n': rc = gw_buf_putc(&b, '\n'); break;
            case 't': rc = gw_buf_putc(&b, '\t'); break;
            case 'r': rc = gw_buf_putc(&b, '\r'); break;
            case 'b': rc = gw_buf_putc(&b, '\b'); break;
            case 'f': rc = gw_buf_putc(&b, '\f'); break;
            case '"': case '\\': case '/': rc = gw_buf_putc(&b, (uint8_t)c); break;
            case 'u': {
                uint32_t cp, lo;
                if (hex4(d->p, d->end, &cp))
                    goto bad;
                d->p += 4;
                if (cp >= 0xD800 && cp < 0xDC00 && d->end - d->p >= 6 && d->p[0] == '\\' && d->p[1] == 'u' &&
                    hex4(d->p + 2, d->end, &lo) == 0 && lo >= 0xDC00 && lo < 0xE000) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    d->p += 6;
                } else if (cp >= 0xD800 && cp < 0xE000) {
                    cp = 0xFFFD;
                }
                rc = put_utf8(&b, cp);
                break;
            }
            default:
                goto bad;
            }
        } else {
            rc = gw_buf_putc(&b, (uint8_t)*d->p++);
        }
        if (rc != GW_OK)
            goto bad;
    }
    if (d->p >= d->end)
        goto bad;
    d->p++;
    if (gw_buf_putc(&b, '\0') != GW_OK)
        goto bad;
    return (char *)b.data;
bad:
    gw_buf_free(&b);
    return NULL;
}

static long jvalue(struct jdoc *d);

/* Parses the members of an array or object into node idx. */
static int jcontainer(struct jdoc *d, long idx, int obj)
{
    size_t *tmp = NULL, nt = 0, ct = 0;
    char close_c = obj ? '}' : ']';
    int ok = 0;
    d->p++;
    jws(d);
    if (d->p < d->end && *d->p == close_c) {
        d->p++;
        d->nodes[idx].first = d->n_kids;
        return 0;
    }
    for (;;) {
        char *key = NULL;
        long v;
        jws(d);
        if (obj) {
            key = jstring(d);
            if (key == NULL)
                break;
            jws(d);
            if (d->p >= d->end || *d->p != ':') {
                free(key);
                break;
            }
            d->p++;
        }
        v = jvalue(d);
        if (v < 0) {
            free(key);
            break;
        }
        d->nodes[v].key = key;
        if (nt == ct) {
            size_t nc = ct ? ct * 2 : 16;
            size_t *nn = realloc(tmp, nc * sizeof *nn);
            if (nn == NULL)
                break;
            tmp = nn;
            ct = nc;
        }
        tmp[nt++] = (size_t)v;
        jws(d);
        if (d->p < d->end && *d->p == ',') {
            d->p++;
            continue;
        }
        if (d->p < d->end && *d->p == close_c) {
            d->p++;
            ok = 1;
        }
        break;
    }
    if (ok) {
        if (d->n_kids + nt > d->cap_kids) {
            size_t nc = d->cap_kids ? d->cap_kids : 256;
            while (nc < d->n_kids + nt)
                nc *= 2;
            size_t *nk = realloc(d->kids, nc * sizeof *nk);
            if (nk == NULL)
                ok = 0;
            else {
                d->kids = nk;
                d->cap_kids = nc;
            }
        }
    }
    if (ok) {
        d->nodes[idx].first = d->n_kids;
        d->nodes[idx].n = nt;
        if (nt)
            memcpy(d->kids + d->n_kids, tmp, nt * sizeof *tmp);
        d->n_kids += nt;
    }
    free(tmp);
    return ok ? 0 : -1;
}

static long jvalue(struct jdoc *d)
{
    long idx;
    jws(d);
    if (d->p >= d->end || ++d->depth > JSON_MAX_DEPTH)
        return -1;
    idx = jnew(d);
    if (idx < 0)
        return -1;
    switch (*d->p) {
    case '{':
    case '[':
        d->nodes[idx].type = *d->p == '{' ? J_OBJ : J_ARR;
        if (jcontainer(d, idx, *d->p == '{'))
            return -1;
        break;
    case '"':
        d->nodes[idx].type = J_STR;
        d->nodes[idx].s = jstring(d);
        if (d->nodes[idx].s == NULL)
            return -1;
        break;
    case 't':
    case 'f':
    case 'n': {
        const char *w = *d->p == 't' ? "true" : *d->p == 'f' ? "false" : "null";
        size_t wl = strlen(w);
        if ((size_t)(d->end - d->p) < wl || memcmp(d->p, w, wl) != 0)
            return -1;
        d->nodes[idx].type = *w == 'n' ? J_NULL : J_BOOL;
        d->nodes[idx].num = *w == 't';
        d->p += wl;
        break;
    }
    default: {
        char *e;
        d->nodes[idx].type = J_NUM;
        d->nodes[idx].num = strtod(d->p, &e);
        if (e == d->p || e > d->end)
            return -1;
        d->p = e;
    }
    }
    d->depth--;
    return idx;
}

static const struct jnode *jkid(const struct jdoc *d, const struct jnode *n, size_t i)
{
    return i < n->n ? &d->nodes[d->kids[n->first + i]] : NULL;
}

static const struct jnode *jget(const struct jdoc *d, const struct jnode *n, const char *key)
{
    if (n == NULL || n->type != J_OBJ)
        return NULL;
    for (size_t i = 0; i < n->n; i++) {
        const struct jnode *k = jkid(d, n, i);
        if (k->key && strcmp(k->key, key) == 0)
            return k;
    }
    return NULL;
}

/* ------------------------------------------------------------ printing */

static int is_plain_name(const char *s)
{
    if (!*s || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_' || *s == ':'))
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_' ||
              *s == ':'))
            return 0;
    return 1;
}

static int quoted(struct gw_buf *b, const char *s)
{
    int rc = gw_buf_putc(b, '"');
    for (; rc == GW_OK && *s; s++) {
        if (*s == '"' || *s == '\\')
            rc = gw_buf_putc(b, '\\');
        if (rc == GW_OK) {
            if (*s == '\n')
                rc = gw_buf_append(b, "\\n", 2);
            else
                rc = gw_buf_putc(b, (uint8_t)*s);
        }
    }
    if (rc == GW_OK)
        rc = gw_buf_putc(b, '"');
    return rc;
}

/* metric{a="b", c="d"} as Prometheus prints a label set; "{}" when empty. */
static int series_name(const struct jdoc *d, const struct jnode *metric, struct gw_buf *b)
{
    const struct jnode *name = jget(d, metric, "__name__");
    size_t shown = 0;
    int rc = GW_OK;
    gw_buf_reset(b);
    if (name && name->type == J_STR && is_plain_name(name->s))
        rc = gw_buf_append(b, name->s, strlen(name->s));
    else
        name = NULL;
    if (rc == GW_OK)
        rc = gw_buf_putc(b, '{');
    for (size_t i = 0; rc == GW_OK && metric && i < metric->n; i++) {
        const struct jnode *l = jkid(d, metric, i);
        if ((name && strcmp(l->key, "__name__") == 0) || l->type != J_STR)
            continue;
        if (shown++)
            rc = gw_buf_append(b, ", ", 2);
        if (rc == GW_OK)
            rc = is_plain_name(l->key) ? gw_buf_append(b, l->key, strlen(l->key)) : quoted(b, l->key);
        if (rc == GW_OK)
            rc = gw_buf_putc(b, '=');
        if (rc == GW_OK)
            rc = quoted(b, l->s);
    }
    if (rc == GW_OK)
        rc = gw_buf_putc(b, '}');
    if (rc == GW_OK && name && shown == 0)
        b->len -= 2;   /* "up" rather than "up{}" */
    if (rc == GW_OK)
        rc = gw_buf_putc(b, '\0');
    return rc;
}

/* A [t, "v"] pair. */
static int point(const struct jdoc *d, const struct jnode *p, double *t, const char **v)
{
    const struct jnode *a = jkid(d, p, 0), *b = jkid(d, p, 1);
    if (p->type != J_ARR || a == NULL || b == NULL || a->type != J_NUM || b->type != J_STR)
        return -1;
    *t = a->num;
    *v = b->s;
    return 0;
}

static int print_table(const char *body, size_t len)
{
    struct jdoc d;
    const struct jnode *root, *data, *rtype, *result, *warn;
    struct gw_buf name;
    char ts[64];
    int rc = 1;
    long r;
    memset(&d, 0, sizeof d);
    d.p = body;
    d.end = body + len;
    gw_buf_init(&name, RESP_MAX);
    r = jvalue(&d);
    if (r < 0) {
        fprintf(stderr, "gpuwatch query: the answer is not valid JSON\n");
        goto out;
    }
    root = &d.nodes[r];
    data = jget(&d, root, "data");
    rtype = jget(&d, data, "resultType");
    result = jget(&d, data, "result");
    if (rtype == NULL || rtype->type != J_STR || result == NULL || result->type != J_ARR) {
        fprintf(stderr, "gpuwatch query: the answer has no data.resultType/result\n");
        goto out;
    }
    if (strcmp(rtype->s, "scalar") == 0 || strcmp(rtype->s, "string") == 0) {
        double t;
        const char *v;
        if (point(&d, result, &t, &v)) {
            fprintf(stderr, "gpuwatch query: malformed %s result\n", rtype->s);
            goto out;
        }
        fmt_time(t, ts, sizeof ts);
        printf("%s %s at %s\n", rtype->s, v, ts);
    } else if (strcmp(rtype->s, "vector") == 0) {
        size_t width = 6;
        double at = 0;
        for (int pass = 0; pass < 2; pass++) {
            if (pass == 1)
                printf("%-*s  VALUE\n", (int)width, "SERIES");
            for (size_t i = 0; i < result->n; i++) {
                const struct jnode *s = jkid(&d, result, i);
                double t;
                const char *v;
                const struct jnode *val = jget(&d, s, "value");
                if (val == NULL || point(&d, val, &t, &v) || series_name(&d, jget(&d, s, "metric"), &name)) {
                    fprintf(stderr, "gpuwatch query: malformed vector sample\n");
                    goto out;
                }
                at = t;
                if (pass == 0 && name.len - 1 > width)
                    width = name.len - 1;
                if (pass == 1)
                    printf("%-*s  %s\n", (int)width, (const char *)name.data, v);
            }
        }
        if (result->n) {
            fmt_time(at, ts, sizeof ts);
            printf("%zu series at %s\n", result->n, ts);
        } else {
            printf("0 series\n");
        }
    } else if (strcmp(rtype->s, "matrix") == 0) {
        for (size_t i = 0; i < result->n; i++) {
            const struct jnode *s = jkid(&d, result, i);
            const struct jnode *vals = jget(&d, s, "values");
            if (vals == NULL || vals->type != J_ARR || series_name(&d, jget(&d, s, "metric"), &name)) {
                fprintf(stderr, "gpuwatch query: malformed matrix series\n");
                goto out;
            }
            printf("%s%s\n", i ? "\n" : "", (const char *)name.data);
            for (size_t k = 0; k < vals->n; k++) {
                double t;
                const char *v;
                if (point(&d, jkid(&d, vals, k), &t, &v)) {
                    fprintf(stderr, "gpuwatch query: malformed matrix point\n");
                    goto out;
                }
                fmt_time(t, ts, sizeof ts);
                printf("  %-24s  %s\n", ts, v);
            }
        }
        printf("%s%zu series\n", result->n ? "\n" : "", result->n);
    } else {
        fprintf(stderr, "gpuwatch query: unknown resultType \"%s\"\n", rtype->s);
        goto out;
    }
    warn = jget(&d, root, "warnings");
    for (size_t i = 0; warn && warn->type == J_ARR && i < warn->n; i++)
        if (jkid(&d, warn, i)->type == J_STR)
            fprintf(stderr, "warning: %s\n", jkid(&d, warn, i)->s);
    rc = 0;
out:
    gw_buf_free(&name);
    jdoc_free(&d);
    return rc;
}

/* Prints the error envelope's type and message; returns 1. */
static int print_error(unsigned status, const char *body, size_t len)
{
    struct jdoc d;
    long r;
    memset(&d, 0, sizeof d);
    d.p = body;
    d.end = body + len;
    r = jvalue(&d);
    if (r >= 0) {
        const struct jnode *t = jget(&d, &d.nodes[r], "errorType"), *e = jget(&d, &d.nodes[r], "error");
        if (t && e && t->type == J_STR && e->type == J_STR) {
            fprintf(stderr, "gpuwatch query: %s (%u): %s\n", t->s, status, e->s);
            jdoc_free(&d);
            return 1;
        }
    }
    jdoc_free(&d);
    fprintf(stderr, "gpuwatch query: HTTP %u: %.*s\n", status, (int)(len > 500 ? 500 : len), body);
    return 1;
}

/* ------------------------------------------------------------ command */

/* What the command line asks for. */
struct query_opts {
    const char *expr, *server, *dir, *time_s, *start_s, *end_s, *step_s, *timeout_s;
    int json, compat, range;
    int64_t now, timeout_ms;
    char tbuf[3][48], stepbuf[48];
};

/* --timeout: checked here, sent to the API as given. */
static int query_timeout(void *base, const char *v)
{
    struct query_opts *q = base;
    if (gw_parse_duration_ms(v, &q->timeout_ms) != GW_OK || q->timeout_ms <= 0)
        return -1;
    q->timeout_s = v;
    return 0;
}

static const char *const compat_names[] = {"2", "3", NULL};
static const int compat_values[] = {2, 3};

static const struct gw_cli_opt query_opts[] = {
    {.name = "--server", .arg = "URL", .type = GW_CLI_STR, GW_CLI_AT(struct query_opts, server),
     .help = "a running gpuwatch (or any Prometheus API), e.g. http://127.0.0.1:9201\n"
             "(the default when --data-dir is not given)"},
    {.name = "--data-dir", .arg = "DIR", .type = GW_CLI_STR, GW_CLI_AT(struct query_opts, dir),
     .help = "evaluate directly on a data dir, read-only (safe next to a running serve;\n"
             "it sees the stored blocks, not a running serve's unflushed newest samples)"},
    {.name = "--time", .arg = "T", .type = GW_CLI_STR, GW_CLI_AT(struct query_opts, time_s),
     .help = "instant query at T (default now)"},
    {.name = "--start", .arg = "T", .type = GW_CLI_STR, GW_CLI_AT(struct query_opts, start_s),
     .help = "range query from T (to --end, by --step)"},
    {.name = "--end", .arg = "T", .type = GW_CLI_STR, GW_CLI_AT(struct query_opts, end_s),
     .help = "end of a range query (default now)"},
    {.name = "--step", .arg = "D", .type = GW_CLI_STR, GW_CLI_AT(struct query_opts, step_s),
     .help = "range query resolution, e.g. 15s, 1m (default (end - start) / 250)"},
    {.name = "--json", .type = GW_CLI_FLAG, GW_CLI_AT(struct query_opts, json),
     .help = "print the API's JSON answer instead of a table"},
    {.name = "--promql-compat", .arg = "N", .type = GW_CLI_CHOICE, GW_CLI_AT(struct query_opts, compat),
     .choices = compat_names, .values = compat_values,
     .help = "3: Prometheus 3 range windows (default); 2: Prometheus 2 (--data-dir only;\n"
             "a server uses its own setting)"},
    {.name = "--timeout", .arg = "D", .type = GW_CLI_CALL, .set = query_timeout,
     .expect = "a duration such as 30s or 2m", .help = "evaluation timeout (default 2m)"},
    {0},
};

static const struct gw_cli_cmd query_cmd = {
    .name = "query",
    .synopsis = "'EXPR' [--server URL | --data-dir DIR] [--time T]\n"
                "                      [--start T [--end T] [--step D]] [--json] [--promql-compat 2|3]",
    .opts = query_opts,
    .outro = "\nT is float Unix seconds, RFC 3339, now or now-DURATION (now-2h).\n",
    .operand = "expression",
    GW_CLI_AT(struct query_opts, expr),
};

/* Options into q. -1 to go on, else the exit status (0 after --help, 2
 * for a usage error). */
static int query_parse(struct query_opts *q, int argc, char **argv)
{
    int rc = gw_cli_parse(&query_cmd, argc, argv, q);
    if (rc >= 0)
        return rc;
    if (q->expr == NULL)
        return gw_cli_usage_error(&query_cmd, 1, "an expression is required");
    if (q->server && q->dir) {
        fprintf(stderr, "gpuwatch query: give --server or --data-dir, not both\n");
        return 2;
    }
    q->range = q->start_s != NULL || q->end_s != NULL || q->step_s != NULL;
    if (q->range && q->time_s) {
        fprintf(stderr, "gpuwatch query: --time is for instant queries; --start/--end/--step for range queries\n");
        return 2;
    }
    if (q->range && q->start_s == NULL) {
        fprintf(stderr, "gpuwatch query: a range query needs --start\n");
        return 2;
    }
    return -1;
}

/* The API request's form: query, then start/end/step or time, then
 * timeout. 0, or 2 after printing the problem. */
static int query_form(struct query_opts *q, struct gw_buf *form)
{
    int known_s = 0, known_e = 0, known_t = 0;
    int64_t start_ms = 0, end_ms = 0, t_ms = 0;
    int rc = add_param(form, "query", q->expr);
    if (q->range) {
        const char *s = api_time(q->start_s, q->now, q->tbuf[0], sizeof q->tbuf[0], &start_ms, &known_s);
        const char *e = api_time(q->end_s ? q->end_s : "now", q->now, q->tbuf[1], sizeof q->tbuf[1], &end_ms, &known_e);
        if (s == NULL || e == NULL) {
            fprintf(stderr, "gpuwatch query: invalid time (now-DURATION needs a duration like 1h30m)\n");
            return 2;
        }
        if (q->step_s == NULL) {
            int64_t st;
            if (!known_s || !known_e) {
                fprintf(stderr, "gpuwatch query: give --step with RFC 3339 times\n");
                return 2;
            }
            st = end_ms > start_ms ? (end_ms - start_ms) / 250 : 0;
            st = (st + 999) / 1000;
            snprintf(q->stepbuf, sizeof q->stepbuf, "%" PRId64, st < 1 ? (int64_t)1 : st);
            q->step_s = q->stepbuf;
        }
        if (rc == GW_OK)
            rc = add_param(form, "start", s);
        if (rc == GW_OK)
            rc = add_param(form, "end", e);
        if (rc == GW_OK)
            rc = add_param(form, "step", q->step_s);
    } else {
        const char *t = api_time(q->time_s ? q->time_s : "now", q->now, q->tbuf[2], sizeof q->tbuf[2], &t_ms, &known_t);
        if (t == NULL) {
            fprintf(stderr, "gpuwatch query: invalid --time \"%s\"\n", q->time_s);
            return 2;
        }
        if (rc == GW_OK)
            rc = add_param(form, "time", t);
    }
    if (rc == GW_OK && q->timeout_s)
        rc = add_param(form, "timeout", q->timeout_s);
    if (rc != GW_OK) {
        fprintf(stderr, "gpuwatch query: expression too long\n");
        return 2;
    }
    return 0;
}

/* The query against the data dir (read-only) or the server: the answer's
 * HTTP status and body. 0, or 1 after printing the problem. */
static int query_run(const struct query_opts *q, const struct gw_buf *form, unsigned *status, struct gw_buf *out)
{
    if (q->dir != NULL) {
        struct gw_db_opts o;
        struct gw_http_opts ho = {0};
        struct gw_error err = {0};
        struct gw_db *db = NULL;
        gw_db_opts_default(&o);
        o.dir = q->dir;
        o.read_only = 1;
        if (gw_db_open(&db, &o, &err) != GW_OK) {
            fprintf(stderr, "gpuwatch query: cannot open %s: %s\n", q->dir, err.msg);
            return 1;
        }
        gw_http_opts_default(&ho);
        ho.promql_compat = q->compat;
        ho.query_timeout_ms = q->timeout_ms;
        int rc = gw_http_api_query(db, &ho, q->range, (const char *)form->data, form->len, status, out);
        gw_db_close(db);
        if (rc != GW_OK) {
            fprintf(stderr, "gpuwatch query: %s\n", gw_strerror(rc));
            return 1;
        }
    } else {
        int st = http_post_form(q->server ? q->server : "http://127.0.0.1:9201",
                                q->range ? "/api/v1/query_range" : "/api/v1/query", form, q->timeout_ms, out);
        if (st < 0)
            return 1;
        *status = (unsigned)st;
    }
    return 0;
}

int gw_cli_query(int argc, char **argv)
{
    struct query_opts q = {.compat = 3, .now = gw_now_ms(), .timeout_ms = 120000};
    struct gw_buf form, out;
    unsigned status = 0;
    int ret = query_parse(&q, argc, argv);
    if (ret >= 0)
        return ret;
    gw_buf_init(&form, (size_t)4 << 20);
    gw_buf_init(&out, RESP_MAX);
    if ((ret = query_form(&q, &form)) != 0 || (ret = query_run(&q, &form, &status, &out)) != 0)
        goto out;
    ret = 1;
    /* The JSON reader relies on a NUL after the body (strtod stops there). */
    if (gw_buf_putc(&out, '\0') != GW_OK) {
        fprintf(stderr, "gpuwatch query: out of memory\n");
        goto out;
    }
    out.len--;
    if (status != 200) {
        ret = print_error(status, (const char *)out.data, out.len);
        if (q.json)
            printf("%.*s\n", (int)out.len, (const char *)out.data);
        goto out;
    }
    if (q.json) {
        fwrite(out.data, 1, out.len, stdout);
        putchar('\n');
        ret = 0;
    } else {
        ret = print_table((const char *)out.data, out.len);
    }
out:
    gw_buf_free(&form);
    gw_buf_free(&out);
    return ret;
}
