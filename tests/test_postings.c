/* test_postings.c - sorted id list algebra checked against naive reference
 * implementations on random lists (dense, sparse, skewed sizes, empty and
 * disjoint inputs). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "gpuwatch/postings.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
    /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ULL;
}

/* Random strictly increasing list of n ids drawn from [base, base + span). */
static void make_list(struct gw_postings *p, size_t n, uint64_t base, uint64_t span)
{
    gw_postings_init(p);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(gw_postings_push(p, base + rnd() % span), GW_OK);
    gw_postings_sort_unique(p);
}

static int contains(const struct gw_postings *p, uint64_t x)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->ids[i] == x)
            return 1;
    return 0;
}

static void assert_strictly_increasing(const struct gw_postings *p)
{
    for (size_t i = 1; i < p->n; i++)
        assert_true(p->ids[i - 1] < p->ids[i]);
}

static void assert_same(const struct gw_postings *a, const struct gw_postings *b)
{
    assert_int_equal(a->n, b->n);
    for (size_t i = 0; i < a->n; i++)
        assert_int_equal(a->ids[i], b->ids[i]);
}

/* Reference: membership-based set operations, then sort. */
static void ref_intersect(const struct gw_postings *a, const struct gw_postings *b, struct gw_postings *r)
{
    gw_postings_init(r);
    for (size_t i = 0; i < a->n; i++)
        if (contains(b, a->ids[i]))
            assert_int_equal(gw_postings_push(r, a->ids[i]), GW_OK);
    gw_postings_sort_unique(r);
}

static void ref_merge(const struct gw_postings *a, const struct gw_postings *b, struct gw_postings *r)
{
    gw_postings_init(r);
    for (size_t i = 0; i < a->n; i++)
        assert_int_equal(gw_postings_push(r, a->ids[i]), GW_OK);
    for (size_t i = 0; i < b->n; i++)
        assert_int_equal(gw_postings_push(r, b->ids[i]), GW_OK);
    gw_postings_sort_unique(r);
}

static void ref_subtract(const struct gw_postings *a, const struct gw_postings *b, struct gw_postings *r)
{
    gw_postings_init(r);
    for (size_t i = 0; i < a->n; i++)
        if (!contains(b, a->ids[i]))
            assert_int_equal(gw_postings_push(r, a->ids[i]), GW_OK);
}

struct shape {
    size_t na, nb;
    uint64_t base_a, span_a, base_b, span_b;
};

static const struct shape shapes[] = {
    {0, 0, 0, 1, 0, 1},                  /* both empty */
    {0, 50, 0, 1, 0, 100},               /* a empty */
    {50, 0, 0, 100, 0, 1},               /* b empty */
    {100, 100, 0, 200, 0, 200},          /* dense overlap */
    {100, 100, 0, 100, 1000, 100},       /* disjoint, a before b */
    {100, 100, 1000, 100, 0, 100},       /* disjoint, b before a */
    {5, 2000, 0, 4000, 0, 4000},         /* skewed: gallop on b */
    {2000, 5, 0, 4000, 0, 4000},         /* skewed: gallop on a */
    {3, 3000, 0, 3000, 0, 3000},         /* tiny vs nearly full range */
    {300, 300, 0, UINT64_MAX / 2, 0, UINT64_MAX / 2}, /* sparse, huge ids */
    {1, 1, 7, 1, 7, 1},                  /* single equal element */
};

static void test_postings_algebra_matches_reference(void **state)
{
    (void)state;
    for (int round = 0; round < 20; round++) {
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            const struct shape *sh = &shapes[s];
            struct gw_postings a, b, out, ref;
            make_list(&a, sh->na, sh->base_a, sh->span_a);
            make_list(&b, sh->nb, sh->base_b, sh->span_b);
            gw_postings_init(&out);

            assert_int_equal(gw_postings_intersect(&a, &b, &out), GW_OK);
            ref_intersect(&a, &b, &ref);
            assert_strictly_increasing(&out);
            assert_same(&out, &ref);
            gw_postings_free(&ref);

            assert_int_equal(gw_postings_merge(&a, &b, &out), GW_OK);
            ref_merge(&a, &b, &ref);
            assert_strictly_increasing(&out);
            assert_same(&out, &ref);
            gw_postings_free(&ref);

            assert_int_equal(gw_postings_subtract(&a, &b, &out), GW_OK);
            ref_subtract(&a, &b, &ref);
            assert_strictly_increasing(&out);
            assert_same(&out, &ref);
            gw_postings_free(&ref);

            assert_int_equal(gw_postings_subtract(&b, &a, &out), GW_OK);
            ref_subtract(&b, &a, &ref);
            assert_same(&out, &ref);
            gw_postings_free(&ref);

            gw_postings_free(&out);
            gw_postings_free(&a);
            gw_postings_free(&b);
        }
    }
}

static void test_postings_intersect_disjoint_is_empty(void **state)
{
    (void)state;
    struct gw_postings a, b, out;
    gw_postings_init(&a);
    gw_postings_init(&b);
    gw_postings_init(&out);
    for (uint64_t i = 0; i < 1000; i++) {
        assert_int_equal(gw_postings_push(&a, 2 * i), GW_OK);
        assert_int_equal(gw_postings_push(&b, 2 * i + 1), GW_OK);
    }
    assert_int_equal(gw_postings_intersect(&a, &b, &out), GW_OK);
    assert_int_equal(out.n, 0);
    assert_int_equal(gw_postings_merge(&a, &b, &out), GW_OK);
    assert_int_equal(out.n, 2000);
    for (size_t i = 0; i < out.n; i++)
        assert_int_equal(out.ids[i], i);
    assert_int_equal(gw_postings_subtract(&a, &b, &out), GW_OK);
    assert_same(&out, &a);
    gw_postings_free(&a);
    gw_postings_free(&b);
    gw_postings_free(&out);
}

static void test_postings_merge_many_matches_reference(void **state)
{
    (void)state;
    for (int round = 0; round < 30; round++) {
        size_t k = (size_t)(rnd() % 12);
        struct gw_postings lists[12], *ptrs[12], out, ref;
        gw_postings_init(&ref);
        for (size_t i = 0; i < k; i++) {
            size_t n = (size_t)(rnd() % 4 == 0 ? 0 : rnd() % 500);
            uint64_t base = rnd() % 3 == 0 ? 100000 * i : 0;
            make_list(&lists[i], n, base, 2000);
            ptrs[i] = &lists[i];
            for (size_t j = 0; j < lists[i].n; j++)
                assert_int_equal(gw_postings_push(&ref, lists[i].ids[j]), GW_OK);
        }
        gw_postings_sort_unique(&ref);
        gw_postings_init(&out);
        assert_int_equal(gw_postings_push(&out, 424242), GW_OK); /* overwritten */
        assert_int_equal(gw_postings_merge_many(ptrs, k, &out), GW_OK);
        assert_strictly_increasing(&out);
        assert_same(&out, &ref);
        for (size_t i = 0; i < k; i++)
            gw_postings_free(&lists[i]);
        gw_postings_free(&out);
        gw_postings_free(&ref);
    }
}

static void test_postings_sort_unique(void **state)
{
    (void)state;
    struct gw_postings p;
    gw_postings_init(&p);
    gw_postings_sort_unique(&p);
    assert_int_equal(p.n, 0);
    uint64_t in[] = {9, 3, 3, 7, 1, 9, 9, 0, UINT64_MAX, 7};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
        assert_int_equal(gw_postings_push(&p, in[i]), GW_OK);
    gw_postings_sort_unique(&p);
    uint64_t want[] = {0, 1, 3, 7, 9, UINT64_MAX};
    assert_int_equal(p.n, 6);
    for (size_t i = 0; i < 6; i++)
        assert_int_equal(p.ids[i], want[i]);
    /* random: result equals the distinct sorted set */
    gw_postings_free(&p);
    gw_postings_init(&p);
    unsigned char seen[512];
    memset(seen, 0, sizeof seen);
    for (int i = 0; i < 3000; i++) {
        uint64_t x = rnd() % 512;
        seen[x] = 1;
        assert_int_equal(gw_postings_push(&p, x), GW_OK);
    }
    gw_postings_sort_unique(&p);
    size_t distinct = 0;
    for (size_t i = 0; i < 512; i++)
        distinct += seen[i];
    assert_int_equal(p.n, distinct);
    assert_strictly_increasing(&p);
    for (size_t i = 0; i < p.n; i++)
        assert_true(seen[p.ids[i]]);
    gw_postings_free(&p);
    gw_postings_free(NULL);
}

static void test_postings_swap(void **state)
{
    (void)state;
    struct gw_postings a, b;
    gw_postings_init(&a);
    gw_postings_init(&b);
    assert_int_equal(gw_postings_push(&a, 1), GW_OK);
    assert_int_equal(gw_postings_push(&a, 2), GW_OK);
    gw_postings_swap(&a, &b);
    assert_int_equal(a.n, 0);
    assert_int_equal(b.n, 2);
    assert_int_equal(b.ids[1], 2);
    gw_postings_free(&a);
    gw_postings_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_postings_algebra_matches_reference),
        cmocka_unit_test(test_postings_intersect_disjoint_is_empty),
        cmocka_unit_test(test_postings_merge_many_matches_reference),
        cmocka_unit_test(test_postings_sort_unique),
        cmocka_unit_test(test_postings_swap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
