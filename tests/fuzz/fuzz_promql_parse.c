/* fuzz_promql_parse.c - libFuzzer target for the PromQL lexer, parser,
 * type checker and printers. Input: query text. Every query that parses is
 * printed in both forms, and the canonical form must parse again and print
 * the same (except `Inf ^ x`, which Prometheus too prints as `+Inf ^ x`).
 * Build: cmake -B build-fuzz -DCMAKE_C_COMPILER=clang -DGW_FUZZ=ON, or
 *   clang -fsanitize=fuzzer,address,undefined -Iinclude -Isrc
 *         tests/fuzz/fuzz_promql_parse.c src/promql/lex.c src/promql/parse.c
 *         src/promql/print.c src/promql/functions_table.c plus the .c files
 *         of src/base and src/model, -lpcre2-8 -lxxhash -lm
 * Seeds: one query per file in tests/corpus/promql_parse/. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/promql.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gw_pq_expr *e = NULL;
    struct gw_error err;
    struct gw_pq_parse_opts opts = { .experimental = (int)(size & 1) };
    if (gw_pq_parse((const char *)data, size, &opts, &e, &err) != GW_OK)
        return 0;
    struct gw_buf a, b, p;
    gw_buf_init(&a, 0);
    gw_buf_init(&b, 0);
    gw_buf_init(&p, 0);
    if (gw_pq_print(e->root, &a) != GW_OK || gw_pq_format(e->root, &p) != GW_OK)
        abort();
    struct gw_pq_expr *e2 = NULL;
    if (gw_pq_parse((const char *)a.data, a.len, &opts, &e2, &err) != GW_OK)
        abort(); /* the canonical form must parse */
    if (gw_pq_print(e2->root, &b) != GW_OK)
        abort();
    int inf_pow = memmem(a.data, a.len, "Inf ^", 5) != NULL;
    if (!inf_pow && (a.len != b.len || memcmp(a.data, b.data, a.len) != 0))
        abort(); /* and print back the same */
    if (e2->root->type != e->root->type)
        abort();
    gw_pq_expr_free(e2);
    gw_buf_free(&a);
    gw_buf_free(&b);
    gw_buf_free(&p);
    gw_pq_expr_free(e);
    return 0;
}
