/* test_metrics.c - the self-metrics histograms (gpuwatch/metrics.h: bucket
 * edges, cumulative rendering, many writers at once) and the progress
 * reporter's text (gpuwatch/progress.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/buf.h"
#include "gpuwatch/err.h"
#include "gpuwatch/metrics.h"
#include "gpuwatch/progress.h"

static void test_metrics_hist_buckets(void **state)
{
    (void)state;
    struct gw_hist h;
    memset(&h, 0, sizeof h);
    gw_hist_observe_ns(&h, 100000);         /* exactly 100 us: le="0.0001" (upper bounds are inclusive) */
    gw_hist_observe_ns(&h, 100001);         /* le="0.00025" */
    gw_hist_observe_ns(&h, 3000000000ull);  /* 3 s: le="5" */
    gw_hist_observe_ns(&h, 120000000000ull);/* 2 min: +Inf only */
    struct gw_buf b;
    gw_buf_init(&b, 0);
    assert_int_equal(gw_hist_write(&b, "x_seconds", "handler=\"w\"", &h), GW_OK);
    assert_int_equal(gw_buf_putc(&b, 0), GW_OK);
    const char *t = (const char *)b.data;
    assert_non_null(strstr(t, "x_seconds_bucket{handler=\"w\",le=\"0.0001\"} 1\n"));
    assert_non_null(strstr(t, "x_seconds_bucket{handler=\"w\",le=\"0.00025\"} 2\n"));
    assert_non_null(strstr(t, "x_seconds_bucket{handler=\"w\",le=\"2.5\"} 2\n"));
    assert_non_null(strstr(t, "x_seconds_bucket{handler=\"w\",le=\"5\"} 3\n"));
    assert_non_null(strstr(t, "x_seconds_bucket{handler=\"w\",le=\"60\"} 3\n"));
    assert_non_null(strstr(t, "x_seconds_bucket{handler=\"w\",le=\"+Inf\"} 4\n"));
    assert_non_null(strstr(t, "x_seconds_sum{handler=\"w\"} 123.000200001\n"));
    assert_non_null(strstr(t, "x_seconds_count{handler=\"w\"} 4\n"));
    /* no labels: no braces on _sum and _count */
    gw_buf_reset(&b);
    assert_int_equal(gw_hist_write(&b, "y", "", &h), GW_OK);
    assert_int_equal(gw_buf_putc(&b, 0), GW_OK);
    assert_non_null(strstr((const char *)b.data, "y_bucket{le=\"+Inf\"} 4\ny_sum 123.000200001\ny_count 4\n"));
    gw_buf_free(&b);
}

#define WRITERS 4
#define PER_WRITER 100000

static void *writer(void *arg)
{
    struct gw_hist *h = arg;
    for (int i = 0; i < PER_WRITER; i++) gw_hist_observe_ns(h, (uint64_t)(i % 7) * 1000000ull);
    return NULL;
}

static void test_metrics_hist_threads(void **state)
{
    (void)state;
    static struct gw_hist h;
    pthread_t t[WRITERS];
    for (int i = 0; i < WRITERS; i++) assert_int_equal(pthread_create(&t[i], NULL, writer, &h), 0);
    for (int i = 0; i < WRITERS; i++) pthread_join(t[i], NULL);
    uint64_t total = 0;
    for (int i = 0; i <= GW_HIST_BUCKETS; i++) total += atomic_load(&h.bucket[i]);
    assert_int_equal(total, (uint64_t)WRITERS * PER_WRITER);
    assert_int_equal(atomic_load(&h.count), (uint64_t)WRITERS * PER_WRITER);
}

static void test_metrics_progress_text(void **state)
{
    (void)state;
    char out[128];
    gw_progress_format(out, sizeof out, 512ull << 20, 1024ull << 20, 4.0, GW_PROGRESS_BYTES);
    assert_string_equal(out, " 50% 512.0 MiB/1.0 GiB 128.0 MiB/s ETA 0:04");
    gw_progress_format(out, sizeof out, 1500, 0, 1.0, GW_PROGRESS_ITEMS);
    assert_string_equal(out, "1.5k 1.5k/s");
    gw_progress_format(out, sizeof out, 3 * 3600 + 720, 86400, 10.0, GW_PROGRESS_SECONDS);
    assert_string_equal(out, " 13% 3h12m/1d0h 1152x/s ETA 1:05");
    gw_progress_format(out, sizeof out, 10, 10, 0.0, GW_PROGRESS_ITEMS);
    assert_string_equal(out, "100% 10/10 0/s");
    /* quiet reporters and NULL are accepted everywhere */
    gw_progress_quiet = 1;
    struct gw_progress *p = gw_progress_start("x", 10, GW_PROGRESS_ITEMS);
    gw_progress_set(p, 5);
    gw_progress_set_total(p, 20);
    gw_progress_end(p);
    gw_progress_set(NULL, 1);
    gw_progress_end(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics_hist_buckets),
        cmocka_unit_test(test_metrics_hist_threads),
        cmocka_unit_test(test_metrics_progress_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
