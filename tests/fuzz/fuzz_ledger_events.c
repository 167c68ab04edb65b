/* fuzz_ledger_events.c - libFuzzer target for the scheduler-event reader
 * (gw_led_events_parse, src/ledger/events.c): a POST /api/v1/events body.
 * Whatever parses is written back (gw_led_event_json), which must parse
 * again to the same rendering; a refusal must leave no events.
 * Build: cmake -B build-fuzz -DCMAKE_C_COMPILER=clang -DGW_FUZZ=ON, then
 *   build-fuzz/fuzz_ledger_events -max_total_time=60 tests/corpus/ledger_events
 * Seeds: one body per file in tests/corpus/ledger_events/. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/buf.h"
#include "gpuwatch/ledger.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void render(struct gw_buf *b, const struct gw_led_event *ev, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (gw_led_event_json(b, &ev[i]) != GW_OK || gw_buf_putc(b, '\n') != GW_OK) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gw_led_event *ev = NULL, *ev2 = NULL;
    size_t n = 0, n2 = 0;
    struct gw_error err;
    if (gw_led_events_parse((const char *)data, size, 1000, &ev, &n, &err) != GW_OK) {
        if (ev || n) abort();   /* a refusal returns nothing */
        return 0;
    }
    struct gw_buf a, b;
    gw_buf_init(&a, 0);
    gw_buf_init(&b, 0);
    render(&a, ev, n);
    if (gw_led_events_parse((const char *)a.data, a.len, 0, &ev2, &n2, &err) != GW_OK || n2 != n) abort();
    render(&b, ev2, n2);
    if (a.len != b.len || (a.len && memcmp(a.data, b.data, a.len) != 0)) abort();
    gw_buf_free(&a);
    gw_buf_free(&b);
    gw_led_events_free(ev, n);
    gw_led_events_free(ev2, n2);
    return 0;
}
