/* labels.c - label sets: sort + validation, canonical bytes, lookup,
 * ordering, hashing and the node/GPU locality key.
 *
 * Canonical byte layout (written by gw_labels_encode, read everywhere else):
 *
 *   repeated, in ascending name order (bytewise, shorter name first on a tie):
 *     uvarint name_len | name bytes | uvarint value_len | value bytes
 *
 * No count prefix and no terminator: the set ends where the bytes end.
 * Invariants a reader checks: every name and value non-empty, name_len <=
 * GW_LABEL_NAME_MAX, value_len <= GW_LABEL_VALUE_MAX, names strictly
 * increasing. Worked example for {__name__="up", job="node"}:
 *
 *   08 5f 5f 6e 61 6d 65 5f 5f   len 8, "__name__"
 *   02 75 70                     len 2, "up"
 *   03 6a 6f 62                  len 3, "job"
 *   04 6e 6f 64 65               len 4, "node"
 *
 * 21 bytes in total. Equal label sets have equal canonical bytes, so the
 * XXH3-64 of these bytes is the series hash. */
#include <stdio.h>
#include <string.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/labels.h"
#include "model/model_int.h"

#define METRIC_NAME "__name__"
#define METRIC_NAME_LEN 8u

/* ---- small helpers ------------------------------------------------------ */

/* Bytewise name order: memcmp over the common prefix, then shorter first. */
static int cmp_bytes(const char *a, size_t alen, const char *b, size_t blen)
{
    size_t m = alen < blen ? alen : blen;
    int c = m ? memcmp(a, b, m) : 0;
    if (c != 0)
        return c < 0 ? -1 : 1;
    if (alen == blen)
        return 0;
    return alen < blen ? -1 : 1;
}

/* Renders up to QUOTE_MAX bytes of s for an error message: printable ASCII
 * as is, `"` and `\` escaped, everything else as \xNN; "..." when cut. */
const char *gw_model_quote(char *dst, size_t cap, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    size_t n = len < QUOTE_MAX ? len : QUOTE_MAX;
    for (size_t i = 0; i < n && s; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            if (o + 3 > cap)
                break;
            dst[o++] = '\\';
            dst[o++] = (char)c;
        } else if (c >= 0x20 && c < 0x7f) {
            if (o + 2 > cap)
                break;
            dst[o++] = (char)c;
        } else {
            if (o + 5 > cap)
                break;
            dst[o++] = '\\';
            dst[o++] = 'x';
            dst[o++] = hex[c >> 4];
            dst[o++] = hex[c & 15];
        }
    }
    if (len > n && o + 4 <= cap) {
        memcpy(dst + o, "...", 3);
        o += 3;
    }
    dst[o] = '\0';
    return dst;
}

static int is_alpha_(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* [a-zA-Z_][a-zA-Z0-9_]* ; with colon=1 also ':' everywhere. */
static int valid_name(const char *s, size_t len, int colon)
{
    if (len == 0)
        return 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (is_alpha_(c) || (colon && c == ':'))
            continue;
        if (i > 0 && is_digit(c))
            continue;
        return 0;
    }
    return 1;
}

/* ---- normalize ------------------------------------------------------------ */

static int label_cmp(const struct gw_label *a, const struct gw_label *b)
{
    return cmp_bytes(a->name, a->name_len, b->name, b->name_len);
}

int gw_labels_normalize(struct gw_label *ls, size_t n, struct gw_error *err)
{
    char q[QUOTE_MAX * 4 + 8];
    if (n == 0 || ls == NULL)
        return gw_error_set(err, GW_EINVAL, "empty label set: missing metric name (__name__)");
    if (n > GW_LABELS_MAX)
        return gw_error_set(err, GW_EINVAL, "too many labels: %zu (limit %d)", n, GW_LABELS_MAX);

    /* Insertion sort: sets are small and usually already sorted. */
    for (size_t i = 1; i < n; i++) {
        if (label_cmp(&ls[i - 1], &ls[i]) <= 0)
            continue;
        struct gw_label cur = ls[i];
        size_t j = i;
        while (j > 0 && label_cmp(&ls[j - 1], &cur) > 0) {
            ls[j] = ls[j - 1];
            j--;
        }
        ls[j] = cur;
    }

    int have_name = 0;
    for (size_t i = 0; i < n; i++) {
        const struct gw_label *l = &ls[i];
        if (l->name_len == 0 || l->name == NULL)
            return gw_error_set(err, GW_EINVAL, "empty label name (value \"%s\")",
                                gw_model_quote(q, sizeof q, l->value, l->value ? l->value_len : 0));
        if (l->name_len > GW_LABEL_NAME_MAX)
            return gw_error_set(err, GW_EINVAL, "label name \"%s\" too long: %u bytes (limit %d)",
                                gw_model_quote(q, sizeof q, l->name, l->name_len), l->name_len,
                                GW_LABEL_NAME_MAX);
        if (!valid_name(l->name, l->name_len, 0))
            return gw_error_set(err, GW_EINVAL, "invalid label name \"%s\"",
                                gw_model_quote(q, sizeof q, l->name, l->name_len));
        if (i > 0 && label_cmp(&ls[i - 1], l) == 0)
            return gw_error_set(err, GW_EINVAL, "duplicate label name \"%s\"",
                                gw_model_quote(q, sizeof q, l->name, l->name_len));
        if (l->value_len == 0 || l->value == NULL)
            return gw_error_set(err, GW_EINVAL, "empty value for label \"%s\"",
                                gw_model_quote(q, sizeof q, l->name, l->name_len));
        if (l->value_len > GW_LABEL_VALUE_MAX)
            return gw_error_set(err, GW_EINVAL, "value of label \"%s\" too long: %u bytes (limit %d)",
                                gw_model_quote(q, sizeof q, l->name, l->name_len), l->value_len,
                                GW_LABEL_VALUE_MAX);
        if (!gw_utf8_valid(l->value, l->value_len))
            return gw_error_set(err, GW_EINVAL, "invalid UTF-8 in value of label \"%s\"",
                                gw_model_quote(q, sizeof q, l->name, l->name_len));
        if (l->name_len == METRIC_NAME_LEN && memcmp(l->name, METRIC_NAME, METRIC_NAME_LEN) == 0) {
            if (!valid_name(l->value, l->value_len, 1))
                return gw_error_set(err, GW_EINVAL, "invalid metric name \"%s\"",
                                    gw_model_quote(q, sizeof q, l->value, l->value_len));
            have_name = 1;
        }
    }
    if (!have_name)
        return gw_error_set(err, GW_EINVAL, "missing metric name (__name__)");
    return GW_OK;
}

/* ---- canonical bytes -------------------------------------------------------- */

size_t gw_labels_encoded_size(const struct gw_label *ls, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += gw_uvarint_len(ls[i].name_len) + ls[i].name_len +
                 gw_uvarint_len(ls[i].value_len) + ls[i].value_len;
    return total;
}

size_t gw_labels_encode(const struct gw_label *ls, size_t n, uint8_t *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        o += gw_uvarint_put(out + o, ls[i].name_len);
        if (ls[i].name_len)
            memcpy(out + o, ls[i].name, ls[i].name_len);
        o += ls[i].name_len;
        o += gw_uvarint_put(out + o, ls[i].value_len);
        if (ls[i].value_len)
            memcpy(out + o, ls[i].value, ls[i].value_len);
        o += ls[i].value_len;
    }
    return o;
}

/* Reads one length-prefixed string at *pos; 0 on any violation. */
static int read_str(const uint8_t *b, size_t len, size_t *pos, size_t max,
                    const char **s, uint32_t *slen)
{
    uint64_t v;
    size_t k = gw_uvarint_get(b + *pos, len - *pos, &v);
    if (k == 0 || v == 0 || v > max)
        return 0;
    *pos += k;
    if (v > len - *pos)
        return 0;
    *s = (const char *)(b + *pos);
    *slen = (uint32_t)v;
    *pos += (size_t)v;
    return 1;
}

/* Cursor over canonical bytes. next(): 1 = pair, 0 = end, -1 = corrupt. */
struct canon_it {
    const uint8_t *b;
    size_t len, pos;
};

static int canon_next(struct canon_it *it, struct gw_label *out)
{
    if (it->pos >= it->len)
        return 0;
    if (!read_str(it->b, it->len, &it->pos, GW_LABEL_NAME_MAX, &out->name, &out->name_len))
        return -1;
    if (it->pos >= it->len)
        return -1;
    if (!read_str(it->b, it->len, &it->pos, GW_LABEL_VALUE_MAX, &out->value, &out->value_len))
        return -1;
    return 1;
}

int gw_labels_decode(const uint8_t *b, size_t len, struct gw_label *ls, size_t max, size_t *n)
{
    struct canon_it it = { b, b ? len : 0, 0 };
    struct gw_label cur, prev = { 0 };
    size_t count = 0;
    int r;
    while ((r = canon_next(&it, &cur)) == 1) {
        if (count > 0 && label_cmp(&prev, &cur) >= 0)
            return GW_ECORRUPT; /* unsorted or duplicate names */
        if (count >= max)
            return GW_ELIMIT;
        ls[count++] = cur;
        prev = cur;
    }
    if (r < 0)
        return GW_ECORRUPT;
    *n = count;
    return GW_OK;
}

int gw_labels_get(const uint8_t *b, size_t len, const char *name, size_t name_len,
                  const char **value, size_t *value_len)
{
    struct canon_it it = { b, b ? len : 0, 0 };
    struct gw_label cur;
    while (canon_next(&it, &cur) == 1) {
        int c = cmp_bytes(cur.name, cur.name_len, name, name_len);
        if (c == 0) {
            *value = cur.value;
            *value_len = cur.value_len;
            return 1;
        }
        if (c > 0)
            return 0; /* sorted: passed the spot where it would be */
    }
    return 0;
}

int gw_labels_compare(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    struct canon_it ia = { a, a ? alen : 0, 0 }, ib = { b, b ? blen : 0, 0 };
    struct gw_label la = { 0 }, lb = { 0 };
    for (;;) {
        /* Corrupt input ends that side's set, which keeps the order total
         * and deterministic without reading out of bounds. */
        int ra = canon_next(&ia, &la) == 1;
        int rb = canon_next(&ib, &lb) == 1;
        if (!ra || !rb)
            return ra == rb ? 0 : (ra ? 1 : -1);
        int c = cmp_bytes(la.name, la.name_len, lb.name, lb.name_len);
        if (c != 0)
            return c;
        c = cmp_bytes(la.value, la.value_len, lb.value, lb.value_len);
        if (c != 0)
            return c;
    }
}

uint64_t gw_labels_hash(const uint8_t *canon, size_t len)
{
    return gw_hash64(canon, len);
}

/* ---- locality ------------------------------------------------------------------ */

static const struct gw_label *find_label(const struct gw_label *ls, size_t n, const char *name)
{
    size_t nl = strlen(name);
    for (size_t i = 0; i < n; i++)
        if (ls[i].name_len == nl && ls[i].value_len > 0 && ls[i].value &&
            memcmp(ls[i].name, name, nl) == 0)
            return &ls[i];
    return NULL;
}

static int all_digits(const char *s, size_t len)
{
    if (len == 0)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!is_digit((unsigned char)s[i]))
            return 0;
    return 1;
}

/* "host:9100" -> "host"; "[fe80::1]:9100" and "[fe80::1]" -> "fe80::1";
 * a bare IPv6 address or anything else unusual is kept whole. */
static void strip_port(const char **s, size_t *len)
{
    const char *p = *s;
    size_t n = *len;
    if (n >= 2 && p[0] == '[') {
        const char *close = memchr(p, ']', n);
        if (close == NULL)
            return;
        size_t host_len = (size_t)(close - p) - 1;
        size_t rest = n - (size_t)(close - p) - 1;
        if (host_len == 0)
            return;
        if (rest == 0 || (close[1] == ':' && all_digits(close + 2, rest - 1))) {
            *s = p + 1;
            *len = host_len;
        }
        return;
    }
    const char *colon = memchr(p, ':', n);
    if (colon == NULL || colon == p)
        return;
    size_t tail = n - (size_t)(colon - p) - 1;
    if (memchr(colon + 1, ':', tail) != NULL)
        return; /* more than one colon: bare IPv6, no port */
    if (all_digits(colon + 1, tail))
        *len = (size_t)(colon - p);
}

void gw_labels_locality(const struct gw_label *ls, size_t n,
                        const char **node, size_t *node_len, uint16_t *gpu)
{
    const struct gw_label *l;
    *node = NULL;
    *node_len = 0;
    *gpu = GW_GPU_NONE;
    if (ls == NULL)
        return;

    if ((l = find_label(ls, n, "hostname")) != NULL || (l = find_label(ls, n, "Hostname")) != NULL) {
        *node = l->value;
        *node_len = l->value_len;
    } else if ((l = find_label(ls, n, "instance")) != NULL) {
        const char *s = l->value;
        size_t len = l->value_len;
        strip_port(&s, &len);
        *node = s;
        *node_len = len;
    }

    if ((l = find_label(ls, n, "gpu")) != NULL && l->value_len <= 5 &&
        all_digits(l->value, l->value_len)) {
        uint32_t v = 0;
        for (size_t i = 0; i < l->value_len; i++)
            v = v * 10 + (uint32_t)(l->value[i] - '0');
        if (v < GW_GPU_NONE)
            *gpu = (uint16_t)v;
    }
}
