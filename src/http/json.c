/* src/http/json.c - label sets as JSON objects (the writer itself is
 * base's gpuwatch/json.h), and the parsers for Prometheus' time and
 * duration parameters. */
#include <errno.h>
#include <math.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpuwatch/codec.h"
#include "gpuwatch/labels.h"
#include "http/http_int.h"

int gw_json_labels(struct gw_buf *b, const uint8_t *canon, size_t len)
{
    struct gw_label ls[GW_LABELS_MAX];
    size_t n = 0;
    int rc = gw_labels_decode(canon, len, ls, GW_LABELS_MAX, &n);
    if (rc != GW_OK)
        return rc;
    rc = gw_buf_putc(b, '{');
    for (size_t i = 0; rc == GW_OK && i < n; i++) {
        if (i)
            rc = gw_buf_putc(b, ',');
        if (rc == GW_OK)
            rc = gw_json_str(b, ls[i].name, ls[i].name_len);
        if (rc == GW_OK)
            rc = gw_buf_putc(b, ':');
        if (rc == GW_OK)
            rc = gw_json_str(b, ls[i].value, ls[i].value_len);
    }
    if (rc == GW_OK)
        rc = gw_buf_putc(b, '}');
    return rc;
}

/* ---- time parameters ---- */

/* Parses a whole-string finite double; 0 on success. */
static int parse_double(const char *s, double *out)
{
    char *end = NULL;
    if (*s == '\0' || (*s != '-' && *s != '+' && *s != '.' && (*s < '0' || *s > '9')))
        return -1;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno == ERANGE || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

int gw_parse_time_ms(const char *s, int64_t *out_ms)
{
    double v;
    if (s == NULL)
        return GW_EPARSE;
    if (parse_double(s, &v) == 0) {
        /* Whole seconds plus milliseconds rounded, as Prometheus does. */
        double ip, frac = modf(v, &ip);
        if (fabs(ip) > 9.2e15)
            return GW_EPARSE;
        *out_ms = (int64_t)ip * 1000 + (int64_t)llround(frac * 1000.0);
        return GW_OK;
    }
    return gw_parse_rfc3339(s, out_ms);
}

int gw_parse_step_ms(const char *s, int64_t *out_ms)
{
    double v;
    if (s == NULL || *s == '\0')
        return GW_EPARSE;
    if (parse_double(s, &v) == 0) {
        double ms = v * 1000.0;
        if (ms > 9.2e18 || ms < -9.2e18)
            return GW_EPARSE;
        *out_ms = (int64_t)llround(ms);
        return GW_OK;
    }
    return gw_parse_duration_ms(s, out_ms) == GW_OK ? GW_OK : GW_EPARSE;
}
