/* openmetrics.c - samples as text with timestamps, for export and import:
 * the OpenMetrics text format (timestamps in seconds, "# EOF" last) and
 * the Prometheus text format (timestamps in integer milliseconds).
 *
 * Writing (OpenMetrics): one "# TYPE <name> unknown" per metric family
 * (series arrive sorted by labels, so a family's series are contiguous),
 * then one line per sample
 *   name{a="x",b="y"} <value> <seconds with exactly 3 decimals>
 * values in the shortest decimal that reads back to the same double,
 * "+Inf", "-Inf", "NaN" for Prometheus' NaN (bits 0x7ff8000000000001).
 * Any other NaN (a stale marker is 0x7ff0000000000002) has no OpenMetrics
 * spelling: it is written as "NaN:<16 hex digits of its bits>", which
 * gpuwatch import reads back bit-exact; with strict, stale markers are
 * left out (counted) and other NaNs written as "NaN".
 *
 * Reading: the format is OpenMetrics when the last non-blank line is
 * "# EOF" (then timestamps are seconds), else Prometheus text (integer
 * milliseconds). Comment lines (# TYPE/HELP/UNIT, others) are skipped;
 * exemplars after a sample are ignored; every sample needs a timestamp.
 * Errors name the line. Label names and values are not validated here
 * (the database does that, as for remote write). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/labels.h"
#include "gpuwatch/rw.h"

#define OM_NORMAL_NAN UINT64_C(0x7ff8000000000001)
#define OM_STALE_NAN UINT64_C(0x7ff0000000000002)

static uint64_t dbits(double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    return u;
}

static double bitsd(uint64_t u)
{
    double v;
    memcpy(&v, &u, 8);
    return v;
}

void gw_om_writer_init(struct gw_om_writer *w, int strict)
{
    memset(w, 0, sizeof *w);
    w->strict = strict;
}

/* The value of a sample as text into buf (>= 40 bytes); 0 when it is to
 * be left out. */
static int om_value(const struct gw_om_writer *w, double v, char *buf, size_t cap)
{
    uint64_t u = dbits(v);
    if (isnan(v)) {
        if (u == OM_NORMAL_NAN || (w->strict && u != OM_STALE_NAN)) {
            snprintf(buf, cap, "NaN");
            return 1;
        }
        if (w->strict)
            return 0;
        snprintf(buf, cap, "NaN:%016llx", (unsigned long long)u);
        return 1;
    }
    if (isinf(v)) {
        snprintf(buf, cap, v > 0 ? "+Inf" : "-Inf");
        return 1;
    }
    for (int p = 15; p <= 17; p++) {
        snprintf(buf, cap, "%.*g", p, v);
        if (dbits(strtod(buf, NULL)) == u)
            break;
    }
    return 1;
}

static int om_escaped(struct gw_buf *out, const char *s, size_t n)
{
    int rc = GW_OK;
    for (size_t i = 0; i < n && rc == GW_OK; i++) {
        if (s[i] == '\\' || s[i] == '"')
            rc = gw_buf_putc(out, '\\') == GW_OK ? gw_buf_putc(out, (uint8_t)s[i]) : GW_ENOMEM;
        else if (s[i] == '\n')
            rc = gw_buf_append(out, "\\n", 2);
        else
            rc = gw_buf_putc(out, (uint8_t)s[i]);
    }
    return rc;
}

/* name{labels} of a series (labels other than __name__), into out. */
static int om_series_text(struct gw_buf *out, const struct gw_label *ls, size_t nl, const struct gw_label *name)
{
    int rc = gw_buf_append(out, name->value, name->value_len);
    int first = 1;
    for (size_t i = 0; i < nl && rc == GW_OK; i++) {
        if (&ls[i] == name)
            continue;
        rc = gw_buf_putc(out, first ? '{' : ',');
        first = 0;
        if (rc == GW_OK)
            rc = gw_buf_append(out, ls[i].name, ls[i].name_len);
        if (rc == GW_OK)
            rc = gw_buf_append(out, "=\"", 2);
        if (rc == GW_OK)
            rc = om_escaped(out, ls[i].value, ls[i].value_len);
        if (rc == GW_OK)
            rc = gw_buf_putc(out, '"');
    }
    if (rc == GW_OK && !first)
        rc = gw_buf_putc(out, '}');
    return rc;
}

int gw_om_series(struct gw_om_writer *w, struct gw_buf *out, const uint8_t *labels, size_t len, const int64_t *t,
                 const double *v, size_t n)
{
    struct gw_label ls[GW_LABELS_MAX];
    size_t nl = 0;
    if (gw_labels_decode(labels, len, ls, GW_LABELS_MAX, &nl) != GW_OK)
        return GW_ECORRUPT;
    const struct gw_label *name = NULL;
    for (size_t i = 0; i < nl; i++)
        if (ls[i].name_len == 8 && !memcmp(ls[i].name, "__name__", 8))
            name = &ls[i];
    if (!name || name->value_len == 0 || name->value_len >= sizeof w->family)
        return GW_EINVAL;
    int rc = GW_OK;
    if (strlen(w->family) != name->value_len || memcmp(w->family, name->value, name->value_len) != 0) {
        memcpy(w->family, name->value, name->value_len);
        w->family[name->value_len] = 0;
        rc = gw_buf_printf(out, "# TYPE %s unknown\n", w->family);
    }
    size_t start = out->len;
    if (rc == GW_OK)
        rc = om_series_text(out, ls, nl, name);
    size_t series_len = out->len - start;
    int first = 1;
    for (size_t i = 0; i < n && rc == GW_OK; i++) {
        char val[48];
        if (!om_value(w, v[i], val, sizeof val)) {
            w->dropped++;
            continue;
        }
        if (!first) {   /* repeat the series text */
            rc = gw_buf_reserve(out, series_len);
            if (rc == GW_OK)
                rc = gw_buf_append(out, out->data + start, series_len);
        }
        first = 0;
        int64_t ms = t[i];
        uint64_t a = ms < 0 ? (uint64_t)0 - (uint64_t)ms : (uint64_t)ms;
        if (rc == GW_OK)
            rc = gw_buf_printf(out, " %s %s%llu.%03llu\n", val, ms < 0 ? "-" : "", (unsigned long long)(a / 1000),
                               (unsigned long long)(a % 1000));
        w->samples++;
    }
    if (first && rc == GW_OK)
        out->len = start;   /* every sample left out: no series line */
    return rc;
}

int gw_om_finish(struct gw_om_writer *w, struct gw_buf *out)
{
    (void)w;
    return gw_buf_append(out, "# EOF\n", 6);
}

/* ------------------------------------------------------------- reading */

struct om_line {
    const char *p, *end;
    size_t line;
    struct gw_error *err;
    const char *file;
};

static int om_fail(struct om_line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int om_fail(struct om_line *l, const char *fmt, ...)
{
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return gw_error_set(l->err, GW_EPARSE, "%s:%zu: %s", l->file, l->line, msg);
}

static int name_start(int c, int metric)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (metric && c == ':');
}

static int name_char(int c, int metric)
{
    return name_start(c, metric) || (c >= '0' && c <= '9');
}

static void skip_blanks(struct om_line *l)
{
    while (l->p < l->end && (*l->p == ' ' || *l->p == '\t'))
        l->p++;
}

/* A quoted label value, unescaped into scratch (*off, *len in scratch). */
static int om_quoted(struct om_line *l, struct gw_buf *scratch, size_t *off, size_t *len)
{
    if (l->p >= l->end || *l->p != '"')
        return om_fail(l, "expected '\"' to start a label value");
    l->p++;
    *off = scratch->len;
    while (l->p < l->end && *l->p != '"') {
        char c = *l->p++;
        if (c == '\\') {
            if (l->p >= l->end)
                break;
            c = *l->p++;
            if (c == 'n')
                c = '\n';
            else if (c != '\\' && c != '"')
                return om_fail(l, "invalid escape '\\%c' in a label value", c);
        }
        if (gw_buf_putc(scratch, (uint8_t)c) != GW_OK)
            return gw_error_set(l->err, GW_ENOMEM, "out of memory");
    }
    if (l->p >= l->end)
        return om_fail(l, "unterminated label value");
    l->p++;
    *len = scratch->len - *off;
    return GW_OK;
}

/* {name="value",...} after the metric name: labels into ls (strings in
 * scratch, as offsets fixed up by the caller). */
struct om_lab {
    size_t noff, nlen, voff, vlen;
};

static int om_labels(struct om_line *l, struct gw_buf *scratch, struct om_lab *lab, size_t *n)
{
    l->p++;   /* '{' */
    for (;;) {
        skip_blanks(l);
        if (l->p < l->end && *l->p == '}') {
            l->p++;
            return GW_OK;
        }
        if (*n >= GW_LABELS_MAX - 1)
            return om_fail(l, "more than %d labels", GW_LABELS_MAX - 1);
        const char *s = l->p;
        if (l->p >= l->end || !name_start((unsigned char)*l->p, 0))
            return om_fail(l, "expected a label name or '}'");
        while (l->p < l->end && name_char((unsigned char)*l->p, 0))
            l->p++;
        struct om_lab *x = &lab[(*n)++];
        x->noff = scratch->len;
        x->nlen = (size_t)(l->p - s);
        if (gw_buf_append(scratch, s, x->nlen) != GW_OK)
            return gw_error_set(l->err, GW_ENOMEM, "out of memory");
        skip_blanks(l);
        if (l->p >= l->end || *l->p != '=')
            return om_fail(l, "expected '=' after a label name");
        l->p++;
        skip_blanks(l);
        int rc = om_quoted(l, scratch, &x->voff, &x->vlen);
        if (rc != GW_OK)
            return rc;
        skip_blanks(l);
        if (l->p < l->end && *l->p == ',')
            l->p++;
        else if (l->p >= l->end || *l->p != '}')
            return om_fail(l, "expected ',' or '}' after a label value");
    }
}

static int om_token(struct om_line *l, char *buf, size_t cap)
{
    skip_blanks(l);
    const char *s = l->p;
    while (l->p < l->end && *l->p != ' ' && *l->p != '\t')
        l->p++;
    size_t n = (size_t)(l->p - s);
    if (n == 0 || n >= cap)
        return 0;
    memcpy(buf, s, n);
    buf[n] = 0;
    return 1;
}

static int om_parse_value(const char *s, double *v)
{
    if (!strcmp(s, "NaN")) {
        *v = bitsd(OM_NORMAL_NAN);
        return 1;
    }
    if (!strncmp(s, "NaN:", 4)) {
        char *e;
        errno = 0;
        unsigned long long u = strtoull(s + 4, &e, 16);
        if (errno || *e || strlen(s + 4) != 16 || !isnan(bitsd(u)))
            return 0;
        *v = bitsd(u);
        return 1;
    }
    if (!strcmp(s, "+Inf") || !strcmp(s, "Inf")) {
        *v = INFINITY;
        return 1;
    }
    if (!strcmp(s, "-Inf")) {
        *v = -INFINITY;
        return 1;
    }
    char *e;
    *v = strtod(s, &e);
    return *e == 0 && e != s && !isnan(*v) && !isinf(*v);
}

/* Seconds (OpenMetrics) or milliseconds (Prometheus text) into ms. */
static int om_parse_ts(const char *s, int om, int64_t *t)
{
    char *e;
    if (!om) {
        errno = 0;
        long long v = strtoll(s, &e, 10);
        if (errno || *e || e == s)
            return 0;
        *t = v;
        return 1;
    }
    int neg = s[0] == '-';
    const char *p = s + (neg || s[0] == '+');
    uint64_t sec = 0, frac = 0;
    int digits = 0, fd = 0;
    for (; *p >= '0' && *p <= '9'; p++, digits++) {
        if (sec > UINT64_C(9000000000000000) / 10)
            return 0;
        sec = sec * 10 + (uint64_t)(*p - '0');
    }
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++, fd++)
            if (fd < 3)
                frac = frac * 10 + (uint64_t)(*p - '0');
    for (int k = fd; k < 3; k++)
        frac *= 10;
    if (*p == 0 && digits > 0) {
        uint64_t ms = sec * 1000 + frac;
        *t = neg ? -(int64_t)ms : (int64_t)ms;
        return 1;
    }
    double d = strtod(s, &e);   /* exponent forms: 1.7e9 */
    if (*e || e == s || !isfinite(d) || fabs(d) > 9e15)
        return 0;
    *t = (int64_t)llround(d * 1000.0);
    return 1;
}

/* One sample line. */
static int om_sample(struct om_line *l, int om, struct gw_buf *scratch, gw_om_sample_cb cb, void *ud)
{
    struct om_lab lab[GW_LABELS_MAX];
    size_t n = 0;
    gw_buf_reset(scratch);
    const char *s = l->p;
    if (!name_start((unsigned char)*l->p, 1))
        return om_fail(l, "expected a metric name");
    while (l->p < l->end && name_char((unsigned char)*l->p, 1))
        l->p++;
    lab[n++] = (struct om_lab){.noff = 0, .nlen = 8, .voff = 8, .vlen = (size_t)(l->p - s)};
    if (gw_buf_append(scratch, "__name__", 8) != GW_OK || gw_buf_append(scratch, s, lab[0].vlen) != GW_OK)
        return gw_error_set(l->err, GW_ENOMEM, "out of memory");
    int rc = GW_OK;
    if (l->p < l->end && *l->p == '{')
        rc = om_labels(l, scratch, lab, &n);
    if (rc != GW_OK)
        return rc;
    char vs[64] = "", ts[64] = "";
    double v;
    int64_t t;
    if (!om_token(l, vs, sizeof vs) || !om_parse_value(vs, &v))
        return om_fail(l, "missing or invalid sample value \"%.40s\"", vs);
    if (!om_token(l, ts, sizeof ts))
        return om_fail(l, "sample without a timestamp (import needs %s)",
                       om ? "OpenMetrics timestamps in seconds" : "timestamps in milliseconds");
    if (!om_parse_ts(ts, om, &t))
        return om_fail(l, "invalid timestamp \"%.40s\"", ts);
    skip_blanks(l);
    if (l->p < l->end && *l->p != '#')   /* '#': an exemplar, ignored */
        return om_fail(l, "unexpected text after the timestamp: \"%.*s\"",
                       (int)(l->end - l->p > 40 ? 40 : l->end - l->p), l->p);
    struct gw_label ls[GW_LABELS_MAX];
    for (size_t i = 0; i < n; i++)
        ls[i] = (struct gw_label){(const char *)scratch->data + lab[i].noff, (uint32_t)lab[i].nlen,
                                  (const char *)scratch->data + lab[i].voff, (uint32_t)lab[i].vlen};
    return cb(ud, ls, n, t, v, l->line);
}

int gw_om_parse(const char *file, const char *text, size_t len, int *is_om, gw_om_sample_cb cb, void *ud,
                struct gw_error *err)
{
    /* OpenMetrics when the last non-blank line is "# EOF" */
    size_t e = len;
    while (e > 0 && (text[e - 1] == '\n' || text[e - 1] == '\r' || text[e - 1] == ' '))
        e--;
    size_t b = e;
    while (b > 0 && text[b - 1] != '\n')
        b--;
    int om = e - b == 5 && !memcmp(text + b, "# EOF", 5);
    if (is_om)
        *is_om = om;
    struct gw_buf scratch;
    gw_buf_init(&scratch, 0);
    struct om_line l = {.err = err, .file = file};
    int rc = GW_OK;
    for (const char *p = text, *end = text + len; rc == GW_OK && p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        l.p = p;
        l.end = nl ? nl : end;
        l.line++;
        p = nl ? nl + 1 : end;
        if (l.end > l.p && l.end[-1] == '\r')
            l.end--;
        skip_blanks(&l);
        if (l.p == l.end)
            continue;
        if (*l.p == '#') {
            if (om && (size_t)(l.end - l.p) == 5 && !memcmp(l.p, "# EOF", 5))
                break;
            continue;
        }
        if (memchr(l.p, 0, (size_t)(l.end - l.p)))
            rc = om_fail(&l, "NUL byte in the line (binary data?)");
        else
            rc = om_sample(&l, om, &scratch, cb, ud);
    }
    gw_buf_free(&scratch);
    return rc;
}
