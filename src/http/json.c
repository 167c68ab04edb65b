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

/* Days since 1970-01-01 of a proleptic Gregorian date. */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? (unsigned)-3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static int digits_n(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9')
            return -1;
        v = v * 10 + (c - '0');
    }
    *p += n;
    *out = v;
    return 0;
}

/* RFC3339: YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM). */
static int parse_rfc3339(const char *s, int64_t *out_ms)
{
    const char *p = s;
    int y, mo, d, hh, mm, ss, ms = 0, tzs = 0;
    if (digits_n(&p, 4, &y) || *p++ != '-' || digits_n(&p, 2, &mo) || *p++ != '-' ||
        digits_n(&p, 2, &d) || (*p != 'T' && *p != 't'))
        return GW_EPARSE;
    p++;
    if (digits_n(&p, 2, &hh) || *p++ != ':' || digits_n(&p, 2, &mm) || *p++ != ':' ||
        digits_n(&p, 2, &ss))
        return GW_EPARSE;
    if (*p == '.' || *p == ',') {
        p++;
        int nd = 0;
        if (*p < '0' || *p > '9')
            return GW_EPARSE;
        while (*p >= '0' && *p <= '9') {
            if (nd < 3)
                ms = ms * 10 + (*p - '0');
            nd++;
            p++;
        }
        for (; nd < 3; nd++)
            ms *= 10;
    }
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p == '-' ? -1 : 1, th, tm;
        p++;
        if (digits_n(&p, 2, &th) || *p++ != ':' || digits_n(&p, 2, &tm) || th > 23 || tm > 59)
            return GW_EPARSE;
        tzs = sign * (th * 3600 + tm * 60);
    } else {
        return GW_EPARSE;
    }
    if (*p != '\0')
        return GW_EPARSE;
    static const unsigned mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (mo < 1 || mo > 12 || d < 1 || (unsigned)d > mdays[mo - 1] || hh > 23 || mm > 59 || ss > 59)
        return GW_EPARSE;
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (mo == 2 && d == 29 && !leap)
        return GW_EPARSE;
    int64_t days = days_from_civil(y, (unsigned)mo, (unsigned)d);
    int64_t secs = days * 86400 + hh * 3600 + mm * 60 + ss - tzs;
    *out_ms = secs * 1000 + ms;
    return GW_OK;
}

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
    return parse_rfc3339(s, out_ms);
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
