/* codec.c - varints, CRC-32C, XXH3/XXH64 (the project's only xxHash user), clocks and Prometheus durations. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/err.h"

size_t gw_uvarint_put(uint8_t *buf, uint64_t v)
{
    size_t i = 0;
    while (v >= 0x80) {
        buf[i++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    buf[i++] = (uint8_t)v;
    return i;
}

size_t gw_uvarint_get(const uint8_t *p, size_t len, uint64_t *v)
{
    uint64_t x = 0;
    unsigned shift = 0;
    for (size_t i = 0; i < len && i < 10; i++) {
        uint8_t b = p[i];
        if (i == 9 && b > 1) return 0;          /* overflows 64 bits */
        x |= (uint64_t)(b & 0x7f) << shift;
        if (b < 0x80) {
            *v = x;
            return i + 1;
        }
        shift += 7;
    }
    return 0;
}

/* CRC-32C, reflected polynomial 0x82F63B78, slicing-by-8 tables built once. */
static uint32_t crc_tab[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
        crc_tab[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^ crc_tab[0][crc_tab[t - 1][i] & 0xff];
}

uint32_t gw_crc32c(uint32_t crc, const void *data, size_t len)
{
    pthread_once(&crc_once, crc_init);
    const uint8_t *p = data;
    crc = ~crc;
    while (len >= 8) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + 4, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        lo = __builtin_bswap32(lo);
        hi = __builtin_bswap32(hi);
#endif
        lo ^= crc;
        crc = crc_tab[7][lo & 0xff] ^ crc_tab[6][(lo >> 8) & 0xff] ^ crc_tab[5][(lo >> 16) & 0xff] ^
              crc_tab[4][lo >> 24] ^ crc_tab[3][hi & 0xff] ^ crc_tab[2][(hi >> 8) & 0xff] ^
              crc_tab[1][(hi >> 16) & 0xff] ^ crc_tab[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    while (len--) crc = (crc >> 8) ^ crc_tab[0][(crc ^ *p++) & 0xff];
    return ~crc;
}

uint64_t gw_hash64(const void *data, size_t len) { return XXH3_64bits(data, len); }

struct gw_hash128 gw_hash128(const void *data, size_t len)
{
    XXH128_hash_t x = XXH3_128bits(data, len);
    return (struct gw_hash128){.lo = x.low64, .hi = x.high64};
}

_Static_assert(sizeof(XXH64_state_t) <= sizeof(((struct gw_xxh64 *)0)->opaque),
               "struct gw_xxh64 too small for XXH64_state_t");
_Static_assert(_Alignof(XXH64_state_t) <= 8, "struct gw_xxh64 under-aligned for XXH64_state_t");

void gw_xxh64_reset(struct gw_xxh64 *st, uint64_t seed) { XXH64_reset((XXH64_state_t *)(void *)st->opaque, seed); }

void gw_xxh64_update(struct gw_xxh64 *st, const void *data, size_t len)
{
    XXH64_update((XXH64_state_t *)(void *)st->opaque, data, len);
}

uint64_t gw_xxh64_digest(const struct gw_xxh64 *st)
{
    return XXH64_digest((const XXH64_state_t *)(const void *)st->opaque);
}

uint64_t gw_xxh64(const void *data, size_t len, uint64_t seed) { return XXH64(data, len, seed); }

int64_t gw_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t gw_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Prometheus model.ParseDuration: units y w d h m s ms, in that order, each
 * at most once, integer counts; "0" alone is allowed. */
int gw_parse_duration_ms(const char *s, int64_t *out_ms)
{
    static const struct { const char *u; int64_t ms; } units[] = {
        {"y", 365LL * 86400000}, {"w", 7LL * 86400000}, {"d", 86400000}, {"h", 3600000},
        {"m", 60000}, {"s", 1000}, {"ms", 1},
    };
    if (!s || !*s) return GW_EPARSE;
    if (strcmp(s, "0") == 0) { *out_ms = 0; return GW_OK; }
    int64_t total = 0;
    int last_unit = -1;
    const char *p = s;
    while (*p) {
        if (*p < '0' || *p > '9') return GW_EPARSE;
        int64_t n = 0;
        while (*p >= '0' && *p <= '9') {
            if (n > (INT64_MAX - 9) / 10) return GW_EPARSE;
            n = n * 10 + (*p++ - '0');
        }
        int u = -1;
        if (p[0] == 'm' && p[1] == 's') { u = 6; p += 2; }
        else {
            for (int i = 0; i < 6; i++)
                if (*p == units[i].u[0]) { u = i; p++; break; }
        }
        if (u < 0 || u <= last_unit) return GW_EPARSE;
        last_unit = u;
        if (n > INT64_MAX / units[u].ms || total > INT64_MAX - n * units[u].ms) return GW_EPARSE;
        total += n * units[u].ms;
    }
    *out_ms = total;
    return GW_OK;
}

int gw_parse_size_bytes(const char *s, uint64_t *out)
{
    static const struct { const char *u; double mul; } units[] = {
        {"", 1}, {"b", 1}, {"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12}, {"pb", 1e15},
        {"kib", 1024.0}, {"mib", 1048576.0}, {"gib", 1073741824.0}, {"tib", 1099511627776.0},
        {"pib", 1125899906842624.0},
    };
    if (!s || !*s) return GW_EPARSE;
    const char *p = s;
    uint64_t ip = 0;
    int digits = 0;
    while (*p >= '0' && *p <= '9') {
        uint64_t d = (uint64_t)(*p++ - '0');
        if (ip > UINT64_MAX / 10 || (ip == UINT64_MAX / 10 && d > UINT64_MAX % 10)) return GW_EPARSE;
        ip = ip * 10 + d;
        digits++;
    }
    double frac = 0, scale = 1;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') {
            scale /= 10;
            frac += (*p++ - '0') * scale;
            digits++;
        }
    }
    if (!digits) return GW_EPARSE;
    char unit[8];
    size_t n = strlen(p);
    if (n >= sizeof unit) return GW_EPARSE;
    for (size_t i = 0; i <= n; i++) unit[i] = (char)(p[i] >= 'A' && p[i] <= 'Z' ? p[i] - 'A' + 'a' : p[i]);
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(unit, units[i].u) != 0) continue;
        if (frac == 0 && units[i].mul == 1) {
            *out = ip;
            return GW_OK;
        }
        double v = ((double)ip + frac) * units[i].mul;
        if (!(v < 18446744073709551616.0)) return GW_EPARSE;
        *out = (uint64_t)v;
        return GW_OK;
    }
    return GW_EPARSE;
}

/* ---- UTF-8 ---- */

size_t gw_utf8_decode(const uint8_t *p, size_t len, uint32_t *cp)
{
    uint8_t c = p[0];
    size_t n;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
        n = 2; v = c & 0x1Fu; min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3; v = c & 0x0Fu; min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4; v = c & 0x07u; min = 0x10000;
    } else {
        return 0;   /* continuation byte, C0/C1 overlong lead, F5..FF */
    }
    if (len < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        v = (v << 6) | (p[i] & 0x3Fu);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return n;
}

size_t gw_utf8_encode(uint32_t cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

int gw_utf8_valid(const char *str, size_t len)
{
    const uint8_t *s = (const uint8_t *)str;
    size_t i = 0;
    while (i < len) {
        if (s[i] < 0x80) {   /* ASCII fast path: label values are mostly ASCII */
            i++;
            continue;
        }
        uint32_t cp;
        size_t n = gw_utf8_decode(s + i, len - i, &cp);
        if (n == 0)
            return 0;
        i += n;
    }
    return 1;
}
