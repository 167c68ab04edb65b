/* fuzz_selector.c - libFuzzer target for the series selector parser
 * (gw_pq_parse_selector: match[] parameters, remote read) and the matchers
 * it builds. Input: selector text, optionally followed by a NUL
 * byte and a label value that every parsed matcher is then tested against
 * (so regex compilation and matching see hostile patterns and subjects).
 * Build: cmake -B build-fuzz -DCMAKE_C_COMPILER=clang -DGW_FUZZ=ON (docs/fuzzing.md).
 * Seeds: tests/corpus/selector/. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gpuwatch/labels.h"
#include "gpuwatch/matcher.h"
#include "gpuwatch/promql.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *sel = (const char *)data;
    size_t sel_len = size;
    const char *val = "";
    size_t val_len = 0;
    const uint8_t *nul = memchr(data, 0, size);
    if (nul != NULL) {
        sel_len = (size_t)(nul - data);
        val = (const char *)nul + 1;
        val_len = size - sel_len - 1;
    }

    struct gw_matcher ms[16];
    size_t n = 0;
    struct gw_error err;
    if (gw_pq_parse_selector(sel, sel_len, ms, 16, &n, &err) != GW_OK)
        return 0;
    for (size_t i = 0; i < n; i++) {
        (void)gw_matcher_matches(&ms[i], val, val_len);
        (void)gw_matcher_matches_empty(&ms[i]);
    }
    /* the value as a label set {__name__="f", v=<value>} */
    struct gw_label ls[2] = { { "__name__", 8, "f", 1 }, { "v", 1, val, (uint32_t)val_len } };
    if (val_len <= GW_LABEL_VALUE_MAX && gw_labels_normalize(ls, 2, NULL) == GW_OK) {
        uint8_t buf[GW_LABEL_VALUE_MAX + 64];
        size_t len = gw_labels_encode(ls, 2, buf);
        (void)gw_matchers_match_labels(ms, n, buf, len);
    }
    for (size_t i = 0; i < n; i++)
        gw_matcher_free(&ms[i]);
    return 0;
}
