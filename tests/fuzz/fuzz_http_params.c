/* fuzz_http_params.c - libFuzzer target for the HTTP API's parameter
 * parsing, called directly (no socket): form decoding of query strings and
 * POST bodies (gw_params_parse, src/http/params.c), the time parameter
 * (gw_http_time_param: RFC 3339 or Unix seconds, and its 400 answer),
 * durations and steps (gw_parse_step_ms), and match[] selectors
 * (gw_pq_parse_selector). Input: a query string / form body.
 * Checks: decoded pairs are NUL-terminated and no longer than their text;
 * percent-encoding every decoded pair again and parsing gives the same
 * pairs; a time or step that parses (within 2^50 ms), printed back as
 * seconds with three decimals, parses to the same milliseconds; an error
 * answer is valid JSON.
 * Build: cmake -B build-fuzz -DCMAKE_C_COMPILER=clang -DGW_FUZZ=ON (docs/fuzzing.md).
 * Seeds: tests/corpus/http_params/. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/buf.h"
#include "gpuwatch/matcher.h"
#include "gpuwatch/promql.h"
#include "http/http_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void pct(struct gw_buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        uint8_t c = (uint8_t)s[i];
        int plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                    c == '_' || c == '.';
        if (plain ? gw_buf_putc(b, c) : (gw_buf_putc(b, '%') || gw_buf_putc(b, (uint8_t)hex[c >> 4]) ||
                                         gw_buf_putc(b, (uint8_t)hex[c & 15])))
            abort();
    }
}

static void reencode(const struct gw_params *p)
{
    struct gw_buf b;
    struct gw_params q;
    gw_buf_init(&b, 0);
    gw_params_init(&q);
    for (size_t i = 0; i < p->n; i++) {
        if (i > 0 && gw_buf_putc(&b, '&'))
            abort();
        pct(&b, p->v[i].key, p->v[i].key_len);
        if (gw_buf_putc(&b, '='))
            abort();
        pct(&b, p->v[i].val, p->v[i].val_len);
    }
    /* an empty pair ("&&", or "" as key and value) encodes to "=": kept */
    if (gw_params_parse(&q, (const char *)b.data, b.len) != GW_OK || q.n != p->n)
        abort();
    for (size_t i = 0; i < p->n; i++)
        if (q.v[i].key_len != p->v[i].key_len || q.v[i].val_len != p->v[i].val_len ||
            memcmp(q.v[i].key, p->v[i].key, p->v[i].key_len) || memcmp(q.v[i].val, p->v[i].val, p->v[i].val_len))
            abort();
    gw_params_free(&q);
    gw_buf_free(&b);
}

/* ms as Unix seconds with three decimals. */
static void secs(char *buf, size_t cap, int64_t ms)
{
    uint64_t a = ms < 0 ? (uint64_t)0 - (uint64_t)ms : (uint64_t)ms;
    snprintf(buf, cap, "%s%llu.%03u", ms < 0 ? "-" : "", (unsigned long long)(a / 1000), (unsigned)(a % 1000));
}

/* Printed as seconds, |ms| below 2^50 reads back exactly as a double (like
 * Prometheus, float seconds are float64: "6666666666666666" is
 * 6666666666666665984 ms while "6666666666666666s" is exact). */
static int exact_secs(int64_t ms)
{
    return ms > -(INT64_C(1) << 50) && ms < (INT64_C(1) << 50);
}

static void check_value(struct gw_http_req *rq, const struct gw_param *pm)
{
    int64_t ms, ms2;
    char buf[64];
    if (gw_parse_time_ms(pm->val, &ms) == GW_OK && exact_secs(ms)) {
        secs(buf, sizeof buf, ms);
        if (gw_parse_time_ms(buf, &ms2) != GW_OK || ms2 != ms)
            abort();
    }
    if (gw_parse_step_ms(pm->val, &ms) == GW_OK && exact_secs(ms)) {
        secs(buf, sizeof buf, ms);
        if (gw_parse_step_ms(buf, &ms2) != GW_OK || ms2 != ms)
            abort();
    }
    struct gw_http_resp rs;
    memset(&rs, 0, sizeof rs);
    gw_buf_init(&rs.body, 0);
    if (gw_http_time_param(rq, &rs, pm->key, 7, &ms) != 0) {
        json_error_t je;
        json_t *j = json_loadb((const char *)rs.body.data, rs.body.len, 0, &je);
        if (j == NULL || rs.status != 400)
            abort();   /* the 400 answer is JSON whatever the value held */
        json_decref(j);
    }
    gw_buf_free(&rs.body);
    if (strcmp(pm->key, "match[]") == 0) {
        struct gw_matcher m[32];
        size_t n = 0;
        struct gw_error err;
        if (gw_pq_parse_selector(pm->val, pm->val_len, m, 32, &n, &err) == GW_OK)
            for (size_t i = 0; i < n; i++)
                gw_matcher_free(&m[i]);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gw_http_req rq;
    memset(&rq, 0, sizeof rq);
    gw_params_init(&rq.params);
    int rc = gw_params_parse(&rq.params, (const char *)data, size);
    if (rc != GW_OK && rc != GW_EPARSE && rc != GW_ELIMIT)
        abort();
    for (size_t i = 0; i < rq.params.n; i++) {
        const struct gw_param *pm = &rq.params.v[i];
        if (pm->key[pm->key_len] != 0 || pm->val[pm->val_len] != 0 || pm->key_len + pm->val_len > size)
            abort();
    }
    if (rc == GW_OK) {
        reencode(&rq.params);
        for (size_t i = 0; i < rq.params.n && i < 64; i++)
            check_value(&rq, &rq.params.v[i]);
    }
    gw_params_free(&rq.params);
    return 0;
}
