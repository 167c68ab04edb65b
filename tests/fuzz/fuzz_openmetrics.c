/* fuzz_openmetrics.c - libFuzzer target for the OpenMetrics / Prometheus
 * text reader (gw_om_parse, src/ingest/openmetrics.c) that `gpuwatch
 * import` runs on files. Input: file text. It must parse or fail with
 * GW_EPARSE; every sample handed out is normalized like ingest does, and a
 * sample whose names are plain ([a-zA-Z_:][a-zA-Z0-9_:]*) is written back
 * with the export writer (gw_om_series, not strict) and read again: the
 * same labels, timestamp and value bits (NaN payloads included).
 * Build: cmake -B build-fuzz -DCMAKE_C_COMPILER=clang -DGW_FUZZ=ON (docs/fuzzing.md).
 * Seeds: tests/corpus/openmetrics/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/buf.h"
#include "gpuwatch/labels.h"
#include "gpuwatch/rw.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct one {
    uint8_t canon[GW_LABELS_MAX * 64];
    size_t len, n;
    int64_t t;
    uint64_t v;
};

static int plain_name(const char *s, size_t n, int metric)
{
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (metric && c == ':') ||
                 (i > 0 && c >= '0' && c <= '9');
        if (!ok)
            return 0;
    }
    return 1;
}

/* Canonical bytes of a sample's labels into o; 0 when they do not normalize. */
static int canon(const struct gw_label *ls, size_t n, struct one *o)
{
    struct gw_label cp[GW_LABELS_MAX];
    if (n > GW_LABELS_MAX)
        return 0;
    memcpy(cp, ls, n * sizeof *ls);
    if (gw_labels_normalize(cp, n, NULL) != GW_OK || gw_labels_encoded_size(cp, n) > sizeof o->canon)
        return 0;
    o->len = gw_labels_encode(cp, n, o->canon);
    return 1;
}

static int on_again(void *ud, const struct gw_label *ls, size_t n, int64_t t, double v, size_t line)
{
    struct one *o = ud;
    (void)line;
    o->n++;
    o->t = t;
    memcpy(&o->v, &v, 8);
    if (!canon(ls, n, o))
        abort();
    return GW_OK;
}

static void roundtrip(const struct one *s, double v)
{
    struct gw_om_writer w;
    struct gw_buf out;
    struct gw_error err;
    struct one back = { .n = 0 };
    gw_om_writer_init(&w, 0);
    gw_buf_init(&out, 0);
    if (gw_om_series(&w, &out, s->canon, s->len, &s->t, &v, 1) != GW_OK || gw_om_finish(&w, &out) != GW_OK)
        abort();
    if (w.samples != 1)
        return;   /* a sample the writer leaves out (counted) */
    if (gw_om_parse("rt", (const char *)out.data, out.len, NULL, on_again, &back, &err) != GW_OK)
        abort();
    if (back.n != 1 || back.len != s->len || memcmp(back.canon, s->canon, s->len) != 0 || back.t != s->t ||
        back.v != s->v)
        abort();
    gw_buf_free(&out);
}

static int on_sample(void *ud, const struct gw_label *ls, size_t n, int64_t t, double v, size_t line)
{
    struct one s;
    size_t *count = ud;
    (void)line;
    (*count)++;
    if (n == 0 || !canon(ls, n, &s))
        return GW_OK;   /* ingest refuses such a sample */
    for (size_t i = 0; i < n; i++)
        if (!plain_name(ls[i].name, ls[i].name_len, 0) ||
            (ls[i].name_len == 8 && memcmp(ls[i].name, "__name__", 8) == 0 &&
             !plain_name(ls[i].value, ls[i].value_len, 1)))
            return GW_OK;
    s.t = t;
    memcpy(&s.v, &v, 8);
    roundtrip(&s, v);
    return GW_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gw_error err;
    size_t count = 0;
    int is_om;
    int rc = gw_om_parse("fuzz", (const char *)data, size, &is_om, on_sample, &count, &err);
    if (rc != GW_OK && rc != GW_EPARSE)
        abort();
    if (rc == GW_EPARSE && strncmp(err.msg, "fuzz:", 5) != 0)
        abort();   /* errors name the file and line */
    return 0;
}
