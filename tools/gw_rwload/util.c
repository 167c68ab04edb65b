/* util.c - small utilities of gw_rwload (errors, clocks, hashes, numbers and
 * durations from flags, buffers, files) and a minimal protobuf reader. */
#include "rwload.h"

void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("gw_rwload: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

void errtext(int e, char *buf, size_t cap)
{
    /* GNU strerror_r may return a static string instead of filling buf. */
    const char *s = strerror_r(e, buf, cap);
    if (s != buf) snprintf(buf, cap, "%s", s);
}

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void sleep_ms(int64_t ms)
{
    if (ms <= 0) return;
    struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

uint64_t mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

double unit01(uint64_t h) { return (double)(h >> 11) * 0x1.0p-53; }

uint64_t fnv1a(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) { h ^= p[i]; h *= 0x100000001b3ULL; }
    return mix64(h);
}

int64_t parse_i64(const char *s, const char *what)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0') die("invalid %s: %s", what, s);
    return (int64_t)v;
}

int64_t parse_dur(const char *s, const char *what)
{
    int64_t ms = 0;
    if (gw_parse_duration_ms(s, &ms) != GW_OK || ms <= 0) die("invalid duration for %s: %s", what, s);
    return ms;
}

void bput(struct gw_buf *b, const void *p, size_t n)
{
    if (gw_buf_append(b, p, n) != GW_OK) die("out of memory");
}

void bputc(struct gw_buf *b, uint8_t c) { bput(b, &c, 1); }

void bvarint(struct gw_buf *b, uint64_t v)
{
    uint8_t tmp[10];
    bput(b, tmp, gw_uvarint_put(tmp, v));
}

size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) { v >>= 7; n++; }
    return n;
}

void write_file(const char *path, const uint8_t *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) die("cannot create %s", path);
    if (n && fwrite(p, 1, n, f) != n) die("cannot write %s", path);
    if (fclose(f) != 0) die("cannot write %s", path);
}

void read_file(const char *path, struct gw_buf *out)
{
    FILE *f = fopen(path, "rb");
    if (!f) die("cannot open %s", path);
    uint8_t tmp[65536];
    size_t n;
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0) bput(out, tmp, n);
    if (ferror(f)) die("cannot read %s", path);
    fclose(f);
}

static int pb_varint(struct pb *r, uint64_t *v)
{
    size_t n = gw_uvarint_get(r->p, (size_t)(r->end - r->p), v);
    if (n == 0) return -1;
    r->p += n;
    return 0;
}

/* Reads the next field header; for length-delimited fields sets *sub to
 * the payload, for varint/fixed fields sets *v. 0 ok, 1 end, -1 bad. */
int pb_next(struct pb *r, uint32_t *field, uint32_t *wt, uint64_t *v, struct pb *sub)
{
    if (r->p >= r->end) return 1;
    uint64_t key;
    if (pb_varint(r, &key) != 0) return -1;
    *field = (uint32_t)(key >> 3);
    *wt = (uint32_t)(key & 7);
    switch (*wt) {
    case 0: return pb_varint(r, v);
    case 1:
        if (r->end - r->p < 8) return -1;
        memcpy(v, r->p, 8);   /* little-endian host assumed (x86/arm64) */
        r->p += 8;
        return 0;
    case 2: {
        uint64_t len;
        if (pb_varint(r, &len) != 0 || len > (uint64_t)(r->end - r->p)) return -1;
        sub->p = r->p;
        sub->end = r->p + len;
        r->p += len;
        return 0;
    }
    case 5:
        if (r->end - r->p < 4) return -1;
        *v = 0;
        memcpy(v, r->p, 4);
        r->p += 4;
        return 0;
    default: return -1;
    }
}
