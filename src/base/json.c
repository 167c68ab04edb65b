/* src/base/json.c - the JSON writer every module uses: strings, numbers,
 * Prometheus sample values and timestamps, RFC 3339 times.
 *
 * Sample values are JSON strings formatted like Go's
 * strconv.AppendFloat(v, fmt, -1, 64) where fmt is 'e' when v != 0 and
 * |v| < 1e-6 or |v| >= 1e21, else 'f' (Prometheus util/jsonutil):
 *   0 -> "0", -0 -> "-0", 0.1 -> "0.1", 1e-7 -> "1e-07",
 *   123456789012 -> "123456789012", 1e21 -> "1e+21", 1.5e300 -> "1.5e+300",
 *   NaN -> "NaN", +Inf -> "+Inf", -Inf -> "-Inf".
 * The digits are the shortest decimal that reads back to the same double
 * (short decimals found directly; else 15, 16, then 17 correctly rounded
 * significant digits, trailing zeros stripped - see the reasoning inline).
 * Plain JSON numbers (gw_json_num) are Go encoding/json's float64: the
 * same digits, the exponent without a leading zero (1e-7, 1e+21).
 * Timestamps are JSON numbers in seconds, three decimals unless the
 * fraction is zero (as Prometheus writes them): 1435781451781 ms ->
 * 1435781451.781, -1500 ms -> -1.500, 1435781460000 ms -> 1435781460.
 * Strings escape '"', '\\', control characters (\n \r \t, others \u00XX),
 * '<' '>' '&' and U+2028/U+2029 as \u escapes, and replace invalid UTF-8
 * with U+FFFD, as Go's encoding/json does.
 * RFC 3339 times are Go's time.RFC3339Nano at millisecond resolution:
 * 2026-01-01T00:00:00Z, 2026-01-01T00:00:00.5Z, ...00.123Z. */
#include <math.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "gpuwatch/codec.h"
#include "gpuwatch/json.h"

static size_t put_str(char *out, size_t cap, const char *s)
{
    size_t n = strlen(s);
    if (cap == 0)
        return 0;
    if (n >= cap)
        n = cap - 1;
    memcpy(out, s, n);
    out[n] = '\0';
    return n;
}

/* Copies the n bytes of res and a NUL into out (truncated to cap). */
static size_t put_res(char *out, size_t cap, const char *res, size_t n)
{
    if (cap == 0)
        return 0;
    if (n >= cap)
        n = cap - 1;
    memcpy(out, res, n);
    out[n] = '\0';
    return n;
}

static const char digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

static const uint64_t pow10_u64[20] = {1ull,
                                        10ull,
                                        100ull,
                                        1000ull,
                                        10000ull,
                                        100000ull,
                                        1000000ull,
                                        10000000ull,
                                        100000000ull,
                                        1000000000ull,
                                        10000000000ull,
                                        100000000000ull,
                                        1000000000000ull,
                                        10000000000000ull,
                                        100000000000000ull,
                                        1000000000000000ull,
                                        10000000000000000ull,
                                        100000000000000000ull,
                                        1000000000000000000ull,
                                        10000000000000000000ull};

/* The digits of x < 10^8 ending at e, at least min digits (zero-padded);
 * returns where they start. */
static char *u32_digits_back(uint32_t x, char *e, int min)
{
    char *stop = e - min;
    while (x >= 100) {
        uint32_t r = x % 100;
        x /= 100;
        *--e = digit_pairs[2 * r + 1];
        *--e = digit_pairs[2 * r];
    }
    if (x >= 10) {
        *--e = digit_pairs[2 * x + 1];
        *--e = digit_pairs[2 * x];
    } else if (x > 0 || e > stop) {
        *--e = (char)('0' + x);
    }
    while (e > stop)
        *--e = '0';
    return e;
}

/* Decimal digits of n into b (no NUL); returns their count (1..20): the
 * count from the bit length, then written from the end in 8-digit parts
 * (32-bit arithmetic, two digits per step). */
static int u64_digits(uint64_t n, char *b)
{
    int bits = 64 - __builtin_clzll(n | 1);
    int k = (bits * 1233 >> 12) + 1;   /* 1233 / 4096 ~ log10(2): k or k - 1 */
    if (k > 20)
        k = 20;
    if (n < pow10_u64[k - 1])
        k--;
    if (k == 0)
        k = 1;
    char *e = b + k;
    while (n >= 100000000u) {
        uint32_t lo = (uint32_t)(n % 100000000u);
        n /= 100000000u;
        e = u32_digits_back(lo, e, 8);
    }
    u32_digits_back((uint32_t)n, e, 1);
    return k;
}

/* "-"? n / 10^d in fixed notation ("0.00ddd", "dd.ddd", "ddd") into res;
 * returns the length. */
static size_t put_fixed(char *res, int neg, uint64_t n, int d)
{
    char ib[24];
    size_t r = 0;
    int il = u64_digits(n, ib);
    if (neg)
        res[r++] = '-';
    if (il <= d) {
        res[r++] = '0';
        res[r++] = '.';
        for (int i = 0; i < d - il; i++)
            res[r++] = '0';
        memcpy(res + r, ib, (size_t)il);
        r += (size_t)il;
    } else {
        memcpy(res + r, ib, (size_t)(il - d));
        r += (size_t)(il - d);
        if (d > 0) {
            res[r++] = '.';
            memcpy(res + r, ib + il - d, (size_t)d);
            r += (size_t)d;
        }
    }
    res[r] = '\0';
    return r;
}

static const unsigned __int128 p10x[24] = {
    (unsigned __int128)1u,
    (unsigned __int128)10u,
    (unsigned __int128)100u,
    (unsigned __int128)1000u,
    (unsigned __int128)10000u,
    (unsigned __int128)100000u,
    (unsigned __int128)1000000u,
    (unsigned __int128)10000000u,
    (unsigned __int128)100000000u,
    (unsigned __int128)1000000000u,
    (unsigned __int128)10000000000ull,
    (unsigned __int128)100000000000ull,
    (unsigned __int128)1000000000000ull,
    (unsigned __int128)10000000000000ull,
    (unsigned __int128)100000000000000ull,
    (unsigned __int128)1000000000000000ull,
    (unsigned __int128)10000000000000000ull,
    (unsigned __int128)100000000000000000ull,
    (unsigned __int128)1000000000000000000ull,
    (unsigned __int128)10000000000000000000u,
    (unsigned __int128)10000000000000000000u * 10u,
    (unsigned __int128)10000000000000000000u * 100u,
    (unsigned __int128)10000000000000000000u * 1000u,
    (unsigned __int128)10000000000000000000u * 10000u};

/* The shortest of the correctly rounded 15-, 16- and 17-digit decimals of a
 * (normal, 2^-20 <= a < 2^50; callers use 1e-6 <= a < 1e15) that reads back as a, found with exact
 * 128-bit integer arithmetic: a = m * 2^-s, a candidate n * 10^-k reads
 * back as a when |n * 2^(s+1) - 2m * 10^k| < 10^k (<= when m is even: ties
 * go to the even mantissa, Go's inclusive bounds). Returns 0 when it cannot
 * decide (m a power of two: uneven bounds), else sets *n_out, *k_out. */
static int exact_shortest(double a, uint64_t *n_out, int *k_out)
{
    uint64_t bits;
    memcpy(&bits, &a, sizeof bits);
    int be = (int)((bits >> 52) & 0x7ff);
    uint64_t m = (bits & ((1ull << 52) - 1)) | (1ull << 52);
    int s = 1075 - be;                       /* a = m * 2^-s */
    if (be == 0 || s < 3 || s > 72 || m == (1ull << 52))
        return 0;
    /* floor(log10(a)) from the binary exponent (be - 1023 = floor(log2 a)):
     * at most one too low, raised by the table; an e10 still off by one is
     * corrected by the loop below */
    static const double p10e[23] = {1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1e0, 1e1, 1e2, 1e3, 1e4,
                                    1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
    int e10 = (int)floor((double)(be - 1023) * 0.30102999566398120);
    if (e10 >= -7 && e10 < 15 && a >= p10e[e10 + 8])
        e10++;
    for (int p = 15; p <= 17; p++) {
        for (int tries = 0; tries < 3; tries++) {
            int k = p - 1 - e10;
            if (k < 0 || k > 22)
                return 0;
            unsigned __int128 pk = p10x[k];
            unsigned __int128 x = (unsigned __int128)m * pk;     /* < 2^53 * 10^22 < 2^127 */
            unsigned __int128 q = x >> s, rem = x - (q << s), half = (unsigned __int128)1 << (s - 1);
            if (rem > half || (rem == half && (q & 1)))
                q++;                                             /* round half to even */
            unsigned __int128 lo = p10x[p - 1], hi = p10x[p];
            if (q >= hi) {
                e10++;
                continue;
            }
            if (q < lo) {
                e10--;
                continue;
            }
            unsigned __int128 l = q << (s + 1), rr = ((unsigned __int128)m * 2) * pk;
            unsigned __int128 diff = l > rr ? l - rr : rr - l;
            if (diff < pk || (diff == pk && (m & 1) == 0)) {
                uint64_t n = (uint64_t)q;
                while (k > 0 && n % 10 == 0) {
                    n /= 10;
                    k--;
                }
                *n_out = n;
                *k_out = k;
                return 1;
            }
            break;
        }
    }
    return 0;
}

size_t gw_json_format_float(double v, char *out, size_t cap)
{
    char tmp[40], digits[24], res[400];
    size_t nd = 0, r = 0;
    int exp10 = 0, neg;
    if (isnan(v))
        return put_str(out, cap, "NaN");
    if (isinf(v))
        return put_str(out, cap, v > 0 ? "+Inf" : "-Inf");
    neg = signbit(v) != 0;
    double a = fabs(v);
    if (a == 0)   /* counters without increase: the commonest rate */
        return put_str(out, cap, neg ? "-0" : "0");
    /* Exporter values are mostly short decimals: find the fewest decimal
     * places d <= 3 such that n / 10^d == a for the integer n nearest to
     * a * 10^d (n < 2^53 and 10^d are exact, so the division is the
     * correctly rounded value of the decimal n e-d - what reading the
     * string gives). The fewest places give the fewest significant digits
     * and, when no neighbour n +- 1 reads back as a too, n is the only
     * such decimal: Go's shortest form. */
    if (a >= 1e-6 && a < 1e15) {
        static const double p10[16] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                       1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
        for (int d = 0; d < 4; d++) {   /* more places: exact_shortest below, faster than trying each */
            double m = a * p10[d];
            if (m >= 9007199254740992.0)
                break;
            uint64_t n = (uint64_t)(m + 0.5);
            /* n / 10^d == a needs |m - n| <= m * 2^-51 (two roundings of
             * at most half an ulp each): a cheap filter before the division */
            if (fabs(m - (double)n) > m * 0x1p-50 || (double)n / p10[d] != a)
                continue;
            /* a neighbour reading back as a too: the decimal spacing is
             * below the double's, pick the nearest the slow, exact way */
            if ((double)(n + 1) / p10[d] == a || (n > 0 && (double)(n - 1) / p10[d] == a))
                break;
            if (cap >= 32)   /* put_fixed writes at most 26 bytes here */
                return put_fixed(out, neg, n, d);
            r = put_fixed(res, neg, n, d);
            return put_res(out, cap, res, r);
        }
    }
    /* Shortest correctly rounded digit string that reads back as a. If a
     * k <= 15 digit decimal reads back as a, it is the nearest 15-digit
     * decimal to a (a double's half ulp is below half the 15-digit
     * spacing), so %.14e finds it, padded with zeros that are stripped
     * below; otherwise 16 and then 17 digits, each correctly rounded (the
     * nearest of its length, as Go's shortest formatting picks). */
    if (a >= 1e-6 && a < 1e15) {
        uint64_t n;
        int k;
        if (exact_shortest(a, &n, &k)) {
            if (cap >= 32)
                return put_fixed(out, neg, n, k);
            r = put_fixed(res, neg, n, k);
            return put_res(out, cap, res, r);
        }
    }
    for (int p = a < DBL_MIN ? 1 : 15; p <= 17; p++) {   /* subnormals: fewer bits, search all */
        snprintf(tmp, sizeof tmp, "%.*e", p - 1, a);
        if (strtod(tmp, NULL) == a)
            break;
    }
    {
        const char *q = tmp;
        for (; *q && *q != 'e'; q++)
            if (*q >= '0' && *q <= '9' && nd < sizeof digits - 1)
                digits[nd++] = *q;
        digits[nd] = '\0';
        if (*q == 'e')
            exp10 = (int)strtol(q + 1, NULL, 10);
    }
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    if (neg)
        res[r++] = '-';
    if (a != 0 && (a < 1e-6 || a >= 1e21)) {
        res[r++] = digits[0];
        if (nd > 1) {
            res[r++] = '.';
            memcpy(res + r, digits + 1, nd - 1);
            r += nd - 1;
        }
        int e = exp10;
        res[r++] = 'e';
        res[r++] = e < 0 ? '-' : '+';
        if (e < 0)
            e = -e;
        char eb[8];
        int en = snprintf(eb, sizeof eb, "%02d", e);
        memcpy(res + r, eb, (size_t)en);
        r += (size_t)en;
    } else {
        int dp = exp10 + 1;   /* digits before the point */
        if (a == 0) {
            res[r++] = '0';
        } else if (dp <= 0) {
            res[r++] = '0';
            res[r++] = '.';
            for (int i = 0; i < -dp; i++)
                res[r++] = '0';
            memcpy(res + r, digits, nd);
            r += nd;
        } else if ((size_t)dp >= nd) {
            memcpy(res + r, digits, nd);
            r += nd;
            for (size_t i = nd; i < (size_t)dp; i++)
                res[r++] = '0';
        } else {
            memcpy(res + r, digits, (size_t)dp);
            r += (size_t)dp;
            res[r++] = '.';
            memcpy(res + r, digits + dp, nd - (size_t)dp);
            r += nd - (size_t)dp;
        }
    }
    return put_res(out, cap, res, r);
}

size_t gw_json_format_ts(int64_t t_ms, char *out, size_t cap)
{
    char res[32];
    size_t r = 0;
    uint64_t u = t_ms < 0 ? (uint64_t)0 - (uint64_t)t_ms : (uint64_t)t_ms;
    unsigned frac = (unsigned)(u % 1000);
    if (t_ms < 0)
        res[r++] = '-';
    r += (size_t)u64_digits(u / 1000, res + r);
    if (frac != 0) {
        /* always three digits, as Prometheus' MarshalTimestamp: 1.5 s is "1.500" */
        res[r++] = '.';
        res[r++] = (char)('0' + frac / 100);
        res[r++] = (char)('0' + frac / 10 % 10);
        res[r++] = (char)('0' + frac % 10);
    }
    return put_res(out, cap, res, r);
}

int gw_json_value(struct gw_buf *b, double v)
{
    char s[48];
    size_t n = gw_json_format_float(v, s + 1, sizeof s - 2);
    s[0] = '"';
    s[n + 1] = '"';
    return gw_buf_append(b, s, n + 2);
}

int gw_json_ts(struct gw_buf *b, int64_t t_ms)
{
    char s[32];
    size_t n = gw_json_format_ts(t_ms, s, sizeof s);
    return gw_buf_append(b, s, n);
}


int gw_json_str(struct gw_buf *b, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    const uint8_t *p = (const uint8_t *)s;
    size_t i = 0, run = 0;
    int rc = gw_buf_putc(b, '"');
    while (rc == GW_OK && i < len) {
        uint8_t c = p[i];
        const char *esc = NULL;
        char u[8];
        size_t adv = 1;
        if (c >= 0x80) {
            uint32_t cp;
            size_t n = gw_utf8_decode(p + i, len - i, &cp);
            if (n == 0) {
                esc = "\\ufffd";
            } else if (cp == 0x2028 || cp == 0x2029) {
                esc = cp == 0x2028 ? "\\u2028" : "\\u2029";
                adv = n;
            } else {
                i += n;
                run += n;
                continue;
            }
        } else if (c == '"') {
            esc = "\\\"";
        } else if (c == '\\') {
            esc = "\\\\";
        } else if (c == '\n') {
            esc = "\\n";
        } else if (c == '\r') {
            esc = "\\r";
        } else if (c == '\t') {
            esc = "\\t";
        } else if (c < 0x20 || c == '<' || c == '>' || c == '&') {
            u[0] = '\\'; u[1] = 'u'; u[2] = '0'; u[3] = '0';
            u[4] = hex[c >> 4]; u[5] = hex[c & 15]; u[6] = '\0';
            esc = u;
        } else {
            i++;
            run++;
            continue;
        }
        if (run)
            rc = gw_buf_append(b, p + i - run, run);
        run = 0;
        if (rc == GW_OK)
            rc = gw_buf_append(b, esc, strlen(esc));
        i += adv;
    }
    if (rc == GW_OK && run)
        rc = gw_buf_append(b, p + i - run, run);
    if (rc == GW_OK)
        rc = gw_buf_putc(b, '"');
    return rc;
}


int gw_json_cstr(struct gw_buf *b, const char *s)
{
    return gw_json_str(b, s ? s : "", s ? strlen(s) : 0);
}

int gw_json_num(struct gw_buf *b, double v)
{
    if (!isfinite(v))
        return gw_buf_append(b, "null", 4);
    char s[48];
    size_t n = gw_json_format_float(v, s, sizeof s);
    /* encoding/json writes e-7 where strconv writes e-07 */
    if (n >= 4 && s[n - 4] == 'e' && s[n - 3] == '-' && s[n - 2] == '0') {
        s[n - 2] = s[n - 1];
        s[--n] = '\0';
    }
    return gw_buf_append(b, s, n);
}

size_t gw_format_rfc3339(int64_t t_ms, char *out, size_t cap)
{
    /* Years 1..9999 only (Go's own limit for RFC 3339). */
    if (t_ms < -62135596800000LL || t_ms > 253402300799999LL) t_ms = -62135596800000LL;
    int64_t sec = t_ms / 1000, ms = t_ms % 1000;
    if (ms < 0) {
        ms += 1000;
        sec--;
    }
    time_t tt = (time_t)sec;
    struct tm tm;
    if (gmtime_r(&tt, &tm) == NULL) memset(&tm, 0, sizeof tm);
    /* ".ddd" without its trailing zeros: 500 ms -> ".5", 120 -> ".12", 7 -> ".007" */
    char frac[8] = "";
    if (ms) {
        int digits = 3, f = (int)ms;
        while (f % 10 == 0) {
            f /= 10;
            digits--;
        }
        snprintf(frac, sizeof frac, ".%0*d", digits, f);
    }
    int n = snprintf(out, cap, "%04d-%02d-%02dT%02d:%02d:%02d%sZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap ? cap - 1 : 0;
}

size_t gw_format_rfc3339_s(int64_t t_ms, char *out, size_t cap)
{
    if (t_ms < -62135596800000LL || t_ms > 253402300799999LL) t_ms = -62135596800000LL;
    int64_t ms = t_ms % 1000;
    return gw_format_rfc3339(t_ms - (ms < 0 ? ms + 1000 : ms), out, cap);
}

int gw_json_time(struct gw_buf *b, int64_t t_ms)
{
    char s[48];
    size_t n = gw_format_rfc3339(t_ms, s + 1, sizeof s - 2);
    s[0] = '"';
    s[n + 1] = '"';
    return gw_buf_append(b, s, n + 2);
}

/* ---- RFC 3339 reading (the HTTP API's time parameters, the CLI) ---- */

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

int gw_parse_rfc3339(const char *s, int64_t *out_ms)
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
