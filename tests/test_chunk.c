/* tests/test_chunk.c - unit tests for the Prometheus XOR chunk (src/chunk/xor.c).
 *
 * Golden bytes are derived by hand in the comments below. A second, literal
 * model of the reference bit stream (a last byte with `count` free bits,
 * writeBit / writeByte / writeBits as the reference defines them) re-encodes
 * random series and must produce identical bytes, including the trailing free
 * byte the reference leaves after a whole-byte write on a byte boundary. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/chunk.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}

static uint64_t dbits(double v) { uint64_t u; memcpy(&u, &v, 8); return u; }
static double bitsd(uint64_t u) { double v; memcpy(&v, &u, 8); return v; }

/* ---- literal model of the reference bit stream ------------------------- */
struct model {
    uint8_t s[4096];
    size_t len;
    unsigned count; /* free bits in the last byte */
    int64_t t;
    uint64_t tdelta, v;
    uint8_t lead, trail;
    unsigned n;
};

static void m_append_byte(struct model *m, uint8_t b) { assert_true(m->len < sizeof m->s); m->s[m->len++] = b; }
static void m_bit(struct model *m, int bit)
{
    if (m->count == 0) { m_append_byte(m, 0); m->count = 8; }
    if (bit) m->s[m->len - 1] |= (uint8_t)(1u << (m->count - 1));
    m->count--;
}
static void m_byte(struct model *m, uint8_t byt)
{
    if (m->count == 0) { m_append_byte(m, 0); m->count = 8; }
    m->s[m->len - 1] |= (uint8_t)(byt >> (8 - m->count));
    m_append_byte(m, (uint8_t)(m->count == 8 ? 0 : byt << m->count));
}
static void m_bits(struct model *m, uint64_t u, int nbits)
{
    u <<= 64 - nbits;
    while (nbits >= 8) { m_byte(m, (uint8_t)(u >> 56)); u <<= 8; nbits -= 8; }
    while (nbits > 0) { m_bit(m, (int)(u >> 63)); u <<= 1; nbits--; }
}
static void m_init(struct model *m) { memset(m, 0, sizeof *m); m->len = 2; m->lead = 0xff; }
static int m_range(int64_t x, int k) { return -((1ll << (k - 1)) - 1) <= x && x <= (1ll << (k - 1)); }
static void m_vdelta(struct model *m, uint64_t vb)
{
    uint64_t x = vb ^ m->v;
    if (!x) { m_bit(m, 0); return; }
    m_bit(m, 1);
    uint8_t lead = (uint8_t)__builtin_clzll(x), trail = (uint8_t)__builtin_ctzll(x);
    if (lead >= 32) lead = 31;
    if (m->lead != 0xff && lead >= m->lead && trail >= m->trail) {
        m_bit(m, 0);
        m_bits(m, x >> m->trail, 64 - m->lead - m->trail);
    } else {
        m->lead = lead; m->trail = trail;
        m_bit(m, 1);
        m_bits(m, lead, 5);
        int sig = 64 - lead - trail;
        m_bits(m, (uint64_t)sig, 6);
        m_bits(m, x >> trail, sig);
    }
}
static void m_append(struct model *m, int64_t t, double v)
{
    uint64_t tdelta = 0;
    uint8_t buf[10];
    if (m->n == 0) {
        uint64_t zz = ((uint64_t)t << 1) ^ (uint64_t)(t >> 63);
        int k = 0;
        while (zz >= 0x80) { buf[k++] = (uint8_t)(zz | 0x80); zz >>= 7; }
        buf[k++] = (uint8_t)zz;
        for (int i = 0; i < k; i++) m_byte(m, buf[i]);
        m_bits(m, dbits(v), 64);
    } else if (m->n == 1) {
        tdelta = (uint64_t)t - (uint64_t)m->t;
        uint64_t u = tdelta;
        int k = 0;
        while (u >= 0x80) { buf[k++] = (uint8_t)(u | 0x80); u >>= 7; }
        buf[k++] = (uint8_t)u;
        for (int i = 0; i < k; i++) m_byte(m, buf[i]);
        m_vdelta(m, dbits(v));
    } else {
        tdelta = (uint64_t)t - (uint64_t)m->t;
        int64_t dod = (int64_t)(tdelta - m->tdelta);
        if (dod == 0) m_bit(m, 0);
        else if (m_range(dod, 14)) { m_bits(m, 2, 2); m_bits(m, (uint64_t)dod, 14); }
        else if (m_range(dod, 17)) { m_bits(m, 6, 3); m_bits(m, (uint64_t)dod, 17); }
        else if (m_range(dod, 20)) { m_bits(m, 14, 4); m_bits(m, (uint64_t)dod, 20); }
        else { m_bits(m, 15, 4); m_bits(m, (uint64_t)dod, 64); }
        m_vdelta(m, dbits(v));
    }
    m->t = t; m->v = dbits(v); m->tdelta = tdelta; m->n++;
    m->s[0] = (uint8_t)(m->n >> 8); m->s[1] = (uint8_t)m->n;
}

/* ---- helpers ------------------------------------------------------------ */

static void check_roundtrip(const int64_t *t, const double *v, size_t n)
{
    struct gw_xor_chunk c;
    gw_xor_init(&c);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(gw_xor_append(&c, t[i], v[i]), GW_OK);
    size_t len;
    const uint8_t *b = gw_xor_bytes(&c, &len);
    struct gw_xor_iter it;
    assert_int_equal(gw_xor_iter_init(&it, b, len), GW_OK);
    int64_t tt;
    double vv;
    size_t i = 0;
    while (gw_xor_iter_next(&it, &tt, &vv)) {
        assert_true(i < n);
        assert_true(tt == t[i]);
        assert_true(dbits(vv) == dbits(v[i]));
        i++;
    }
    assert_int_equal(it.err, GW_OK);
    assert_int_equal(i, n);
    gw_xor_free(&c);
}

/* ---- tests -------------------------------------------------------------- */

static void test_chunk_golden_small(void **state)
{
    (void)state;
    /* (1000, 1.0), (2000, 1.0), (3000, 2.0):
     *   00 03                    count
     *   d0 0f                    varint(1000): zigzag 2000 = 0b1111_1010000 -> d0 0f
     *   3f f0 00 00 00 00 00 00  1.0
     *   e8 07                    uvarint(1000) = 0b111_1101000 -> e8 07
     *   '0'                      v1 == v0
     *   '0'                      dod 0
     *   '11' '00001' '001011' '11111111111'
     *                            x = 0x7ff0000000000000: lead 1, 11 sig bits
     *   -> 00110000 10010111 11111111 11(000000) = 30 97 ff c0 */
    static const uint8_t want[] = {0x00, 0x03, 0xd0, 0x0f, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0,
                                   0xe8, 0x07, 0x30, 0x97, 0xff, 0xc0};
    struct gw_xor_chunk c;
    gw_xor_init(&c);
    assert_int_equal(gw_xor_append(&c, 1000, 1.0), GW_OK);
    assert_int_equal(gw_xor_append(&c, 2000, 1.0), GW_OK);
    assert_int_equal(gw_xor_append(&c, 3000, 2.0), GW_OK);
    size_t len;
    const uint8_t *b = gw_xor_bytes(&c, &len);
    assert_int_equal(len, sizeof want);
    assert_memory_equal(b, want, sizeof want);
    gw_xor_free(&c);
}

static void test_chunk_golden_one_sample(void **state)
{
    (void)state;
    /* (-1, 0.5): varint(-1) = zigzag 1 -> 01; 0.5 = 3f e0 00..; the 64-bit
     * write ends on a byte boundary, so the reference stream holds one free
     * zero byte at the end: 12 bytes. */
    static const uint8_t want[] = {0x00, 0x01, 0x01, 0x3f, 0xe0, 0, 0, 0, 0, 0, 0, 0x00};
    struct gw_xor_chunk c;
    gw_xor_init(&c);
    size_t len;
    const uint8_t *b = gw_xor_bytes(&c, &len);
    assert_int_equal(len, 2);
    assert_int_equal(b[0] | b[1], 0);
    assert_int_equal(gw_xor_append(&c, -1, 0.5), GW_OK);
    b = gw_xor_bytes(&c, &len);
    assert_int_equal(len, sizeof want);
    assert_memory_equal(b, want, sizeof want);
    gw_xor_free(&c);
}

static void test_chunk_golden_dod_buckets(void **state)
{
    (void)state;
    /* t: 0, 10, 20 (dod 0), 38 (dod 8 -> '10' + 14 bits), all values 0.0:
     *   00 04 | 00 | 00*8 | 0a | then bits:
     *   v1 '0' | dod '0' v '0' | '10' 00000000001000 '0'
     *   = 000 10 00000000001000 0 (20 bits)
     *   = 00010000 00000001 0000(0000) -> 10 01 00 */
    static const uint8_t want[] = {0x00, 0x04, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0x0a,
                                   0x10, 0x01, 0x00};
    struct gw_xor_chunk c;
    gw_xor_init(&c);
    assert_int_equal(gw_xor_append(&c, 0, 0.0), GW_OK);
    assert_int_equal(gw_xor_append(&c, 10, 0.0), GW_OK);
    assert_int_equal(gw_xor_append(&c, 20, 0.0), GW_OK);
    assert_int_equal(gw_xor_append(&c, 38, 0.0), GW_OK);
    size_t len;
    const uint8_t *b = gw_xor_bytes(&c, &len);
    assert_int_equal(len, sizeof want);
    assert_memory_equal(b, want, sizeof want);
    gw_xor_free(&c);
}

static void test_chunk_matches_reference_model(void **state)
{
    (void)state;
    static const int64_t dods[] = {0, 1, -1, 8192, -8191, -8192, 8193, 65536, -65535, -65536,
                                   65537, 524288, -524287, -524288, 524289, 1ll << 40, -(1ll << 40)};
    struct model *m = malloc(sizeof *m);
    assert_non_null(m);
    for (int round = 0; round < 300; round++) {
        struct gw_xor_chunk c;
        gw_xor_init(&c);
        m_init(m);
        int64_t t = (int64_t)(rnd() % 2000000000000ull) - 1000000000000ll;
        int64_t d = 1 + (int64_t)(rnd() % 100000);
        double v = 0;
        unsigned n = 1 + (unsigned)(rnd() % 120);
        for (unsigned i = 0; i < n; i++) {
            switch (rnd() % 6) {
            case 0: v = bitsd(rnd()); break;
            case 1: break;
            case 2: v = (double)(rnd() % 1000) / 8.0; break;
            case 3: v += 0.25; break;
            case 4: v = (double)(rnd() % 100000) / 1000.0; break;
            default: v = bitsd(dbits(v) ^ (rnd() & 0xffff)); break;
            }
            assert_int_equal(gw_xor_append(&c, t, v), GW_OK);
            m_append(m, t, v);
            size_t len;
            const uint8_t *b = gw_xor_bytes(&c, &len);
            assert_int_equal(len, m->len);
            assert_memory_equal(b, m->s, len);
            int64_t nd = d + dods[rnd() % (sizeof dods / sizeof dods[0])];
            if (nd < 1 || nd > (1ll << 42))
                nd = d;
            d = nd;
            t += d;
        }
        gw_xor_free(&c);
    }
    free(m);
}

static void test_chunk_roundtrip_special_values(void **state)
{
    (void)state;
    double v[] = {
        bitsd(0x7ff0000000000002ull), /* stale marker */
        NAN, bitsd(0x7ff8000000000001ull), bitsd(0xfff0000000000001ull), bitsd(0x7fffffffffffffffull),
        INFINITY, -INFINITY, -0.0, 0.0, 4.9e-324, -4.9e-324, 2.2250738585072009e-308,
        1.7976931348623157e308, -1.7976931348623157e308, 1.0, 1.0, 1.0,
        bitsd(0x7ff0000000000002ull), 0.1, 0.30000000000000004, 1e-300,
    };
    size_t n = sizeof v / sizeof v[0];
    int64_t t[sizeof v / sizeof v[0]];
    /* Negative start, huge and tiny gaps, every dod bucket. */
    int64_t gaps[] = {1, 1, 15000, 15000, 1ll << 50, 1, 3, 1000000, 1, 123456789, 2, 2, 2,
                      1ll << 40, 7, 7, 8, 1, 1000, 999999999999, 5};
    t[0] = INT64_MIN + 5;
    for (size_t i = 1; i < n; i++)
        t[i] = t[i - 1] + gaps[i - 1];
    check_roundtrip(t, v, n);
    /* Spans the whole int64 range: first delta ~ 2^64 - 1 wraps. */
    int64_t t2[3] = {INT64_MIN, INT64_MAX - 1, INT64_MAX};
    double v2[3] = {1, 2, 3};
    check_roundtrip(t2, v2, 3);
    int64_t t3[1] = {INT64_MIN};
    check_roundtrip(t3, v2, 1);
}

static void test_chunk_roundtrip_random(void **state)
{
    (void)state;
    enum { N = 2000 };
    int64_t *t = malloc(N * sizeof *t);
    double *v = malloc(N * sizeof *v);
    assert_non_null(t);
    assert_non_null(v);
    for (int round = 0; round < 50; round++) {
        size_t n = 1 + rnd() % N;
        t[0] = (int64_t)rnd() >> 2;
        for (size_t i = 0; i < n; i++) {
            if (i)
                t[i] = t[i - 1] + 1 + (int64_t)(rnd() % ((round % 5) ? 30000 : (1ull << 45)));
            switch ((rnd() >> 7) % 4) {
            case 0: v[i] = bitsd(rnd()); break;
            case 1: v[i] = (double)(int64_t)(rnd() % 200) - 100; break;
            case 2: v[i] = i ? v[i - 1] : 3.0; break;
            default: v[i] = (double)(rnd() % 1000000) / 1000.0; break;
            }
        }
        check_roundtrip(t, v, n);
    }
    free(t);
    free(v);
}

static void test_chunk_full_and_out_of_order(void **state)
{
    (void)state;
    struct gw_xor_chunk c;
    gw_xor_init(&c);
    assert_int_equal(gw_xor_append(&c, 100, 1.0), GW_OK);
    assert_int_equal(gw_xor_append(&c, 100, 2.0), GW_EOOO);
    assert_int_equal(gw_xor_append(&c, 99, 2.0), GW_EOOO);
    for (int64_t i = 1; i < GW_XOR_MAX_SAMPLES; i++)
        assert_int_equal(gw_xor_append(&c, 100 + i * 15000, (double)(i % 7)), GW_OK);
    assert_int_equal(c.n, GW_XOR_MAX_SAMPLES);
    assert_int_equal(gw_xor_append(&c, INT64_MAX, 1.0), GW_EFULL);
    size_t len;
    const uint8_t *b = gw_xor_bytes(&c, &len);
    assert_int_equal(b[0], 0xff);
    assert_int_equal(b[1], 0xff);
    struct gw_xor_iter it;
    assert_int_equal(gw_xor_iter_init(&it, b, len), GW_OK);
    int64_t tt;
    double vv;
    size_t k = 0;
    while (gw_xor_iter_next(&it, &tt, &vv)) {
        assert_true(tt == 100 + (int64_t)k * 15000);
        assert_true(vv == (k == 0 ? 1.0 : (double)(k % 7)));
        k++;
    }
    assert_int_equal(it.err, GW_OK);
    assert_int_equal(k, GW_XOR_MAX_SAMPLES);
    /* Clone is deep and equal. */
    struct gw_xor_chunk d;
    assert_int_equal(gw_xor_clone(&d, &c), GW_OK);
    size_t dlen;
    const uint8_t *db = gw_xor_bytes(&d, &dlen);
    assert_int_equal(dlen, len);
    assert_memory_equal(db, b, len);
    assert_true(db != b);
    assert_true(gw_xor_mem(&d) >= dlen);
    gw_xor_free(&c);
    assert_int_equal(gw_xor_mem(&c), 0);
    gw_xor_free(&d);
    gw_xor_free(NULL);
}

/* Decodes b[0..len) to the end; returns samples read, sets *err. */
static size_t drain(const uint8_t *b, size_t len, int *err, int64_t *t, double *v, size_t cap)
{
    struct gw_xor_iter it;
    if (gw_xor_iter_init(&it, b, len) != GW_OK) {
        *err = GW_ECORRUPT;
        return 0;
    }
    size_t k = 0;
    int64_t tt;
    double vv;
    while (gw_xor_iter_next(&it, &tt, &vv)) {
        if (k < cap) {
            t[k] = tt;
            v[k] = vv;
        }
        k++;
    }
    *err = it.err;
    return k;
}

static void test_chunk_truncated_and_corrupt(void **state)
{
    (void)state;
    enum { N = 150 };
    struct gw_xor_chunk c;
    gw_xor_init(&c);
    int64_t t[N];
    double v[N];
    int64_t ts = 1700000000000;
    for (int i = 0; i < N; i++) {
        ts += 15000 + (i % 9 == 0 ? (int64_t)(rnd() % 70000) : 0);
        t[i] = ts;
        v[i] = (i % 11 == 0) ? bitsd(rnd()) : (double)(i % 5) * 0.5;
        assert_int_equal(gw_xor_append(&c, t[i], v[i]), GW_OK);
    }
    size_t len;
    const uint8_t *b = gw_xor_bytes(&c, &len);
    int64_t ot[N];
    double ov[N];
    /* Every truncation: a heap copy of exactly that length, so ASan sees any
     * read past the end. Fewer samples than promised must flag corruption. */
    for (size_t l = 0; l < len; l++) {
        uint8_t *cp = malloc(l ? l : 1);
        assert_non_null(cp);
        memcpy(cp, b, l);
        int err;
        size_t k = drain(cp, l, &err, ot, ov, N);
        if (l < 2) {
            assert_int_equal(err, GW_ECORRUPT);
        } else if (k < N) {
            assert_int_equal(err, GW_ECORRUPT);
        }
        for (size_t i = 0; i < k && i < N; i++) {
            assert_true(ot[i] == t[i]);
            assert_true(dbits(ov[i]) == dbits(v[i]));
        }
        free(cp);
    }
    /* Random bit flips and byte garbage: must not crash or over-read. */
    uint8_t *cp = malloc(len);
    assert_non_null(cp);
    for (int round = 0; round < 20000; round++) {
        memcpy(cp, b, len);
        int flips = 1 + (int)(rnd() % 4);
        for (int f = 0; f < flips; f++) {
            size_t bit = rnd() % (len * 8);
            cp[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        }
        int err;
        size_t k = drain(cp, len, &err, ot, ov, N);
        assert_true(k <= 65535);
        assert_true(err == GW_OK || err == GW_ECORRUPT);
    }
    for (int round = 0; round < 2000; round++) {
        size_t l = rnd() % len;
        for (size_t i = 0; i < l; i++)
            cp[i] = (uint8_t)rnd();
        int err;
        (void)drain(cp, l, &err, ot, ov, N);
    }
    free(cp);
    struct gw_xor_iter it;
    assert_int_equal(gw_xor_iter_init(&it, NULL, 0), GW_ECORRUPT);
    int64_t tt;
    double vv;
    assert_int_equal(gw_xor_iter_next(&it, &tt, &vv), 0);
    /* An impossible window (lead 31 + 40 significant bits) is corruption. */
    static const uint8_t bad[] = {0x00, 0x02, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0x01,
                                  /* '1' '1' '11111' '111010'.. */ 0xff, 0xd0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    int err;
    size_t k = drain(bad, sizeof bad, &err, ot, ov, N);
    assert_int_equal(k, 1);
    assert_int_equal(err, GW_ECORRUPT);
    gw_xor_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chunk_golden_small),
        cmocka_unit_test(test_chunk_golden_one_sample),
        cmocka_unit_test(test_chunk_golden_dod_buckets),
        cmocka_unit_test(test_chunk_matches_reference_model),
        cmocka_unit_test(test_chunk_roundtrip_special_values),
        cmocka_unit_test(test_chunk_roundtrip_random),
        cmocka_unit_test(test_chunk_full_and_out_of_order),
        cmocka_unit_test(test_chunk_truncated_and_corrupt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
