/* cmd_import.c - `gpuwatch import`: backfills samples from files.
 *
 *   gpuwatch import --data-dir DIR FILE...     (no serve running on DIR)
 *   gpuwatch import --url http://127.0.0.1:9201 FILE...
 *
 * A file is OpenMetrics or Prometheus text with timestamps (gw_om_parse),
 * or a remote-write body (snappy-compressed protobuf, as POSTed to
 * /api/v1/write), told apart by content. Samples go through the same
 * ingest as remote write: to a data dir with gw_db_append, to a serve as
 * remote-write requests (batches of --batch samples). Labels are validated
 * and out-of-order, duplicate, too-old and too-new samples refused as for
 * remote write; the counts per reason are printed. A malformed line stops
 * the import of its file with FILE:LINE; the samples of the lines before
 * it were imported and are counted. When a serve holds DIR, its address in
 * DIR/serve.addr is used. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuwatch/arena.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/db.h"
#include "gpuwatch/httpc.h"
#include "gpuwatch/labels.h"
#include "gpuwatch/rw.h"
#include "cli.h"
#include "cli_export.h"
#include "cli_parse.h"

#define IMPORT_MAX_FILES 256

struct import_args {
    const char *dir, *url;
    uint64_t batch;
};

static const struct gw_cli_opt import_opts[] = {
    {.name = "--data-dir", .arg = "DIR", .help = "import into this data dir (or --url)", .type = GW_CLI_STR,
     GW_CLI_AT(struct import_args, dir), .flags = GW_CLI_NONEMPTY},
    {.name = "--url", .arg = "URL", .help = "import through a running serve (remote write)", .type = GW_CLI_STR,
     GW_CLI_AT(struct import_args, url), .flags = GW_CLI_NONEMPTY},
    {.name = "--batch", .arg = "N", .help = "samples per request (default 10000)", .type = GW_CLI_UINT,
     GW_CLI_AT(struct import_args, batch), .min = 1, .max = 1000000},
    {0},
};

static const struct gw_cli_cmd import_cmd = {
    .name = "import",
    .synopsis = "--data-dir DIR|--url URL FILE...",
    .intro = "Backfills samples from files: OpenMetrics text (timestamps in seconds, '# EOF'\n"
             "last, as 'gpuwatch export' writes it), Prometheus text with millisecond\n"
             "timestamps, or remote-write bodies (snappy-compressed protobuf), told apart by\n"
             "content. The same validation as remote write applies (labels, out of order,\n"
             "duplicates, retention, future); counts of accepted and refused samples are\n"
             "printed. A malformed line stops its file with FILE:LINE (what came before it\n"
             "is imported).\n",
    .opts = import_opts,
    .outro = "\nexit status: 0 all imported, 1 errors or refused samples, 2 usage error\n",
};

struct ser {
    size_t lab_off, nlab, smp_off, nsmp;
};

struct imp {
    struct gw_db *db;
    struct gw_httpc *c;
    const char *url;
    size_t batch_max;
    struct gw_label *lab;
    size_t nlab, caplab;
    struct ser *ser;
    size_t nser, capser;
    struct gw_sample *smp;
    size_t nsmp, capsmp;
    struct gw_arena strings;
    struct gw_append_result tot;
    uint64_t sent, refused_batches;
    char server_msg[300];
    struct gw_error *err;
};

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return GW_OK;
    size_t nc = *cap ? *cap * 2 : 256;
    while (nc < need)
        nc *= 2;
    void *np = realloc(*p, nc * size);
    if (!np)
        return GW_ENOMEM;
    *p = np;
    *cap = nc;
    return GW_OK;
}

static void sum_result(struct gw_append_result *t, const struct gw_append_result *r)
{
    t->accepted += r->accepted;
    t->duplicates += r->duplicates;
    t->conflicts += r->conflicts;
    t->out_of_order += r->out_of_order;
    t->too_old += r->too_old;
    t->too_new += r->too_new;
    t->invalid_series += r->invalid_series;
    t->invalid_samples += r->invalid_samples;
    t->histograms += r->histograms;
    t->exemplars += r->exemplars;
    if (!t->first_invalid[0] && r->first_invalid[0])
        memcpy(t->first_invalid, r->first_invalid, sizeof t->first_invalid);
}

static int label_cmp(const void *a, const void *b)
{
    const struct gw_label *x = a, *y = b;
    size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
    int c = memcmp(x->name, y->name, n);
    return c ? c : (x->name_len > y->name_len) - (x->name_len < y->name_len);
}

/* POSTs one remote-write body; 204 counts as accepted, 400 keeps the
 * server's message, anything else is an error. */
static int post_body(struct imp *m, const uint8_t *body, size_t len, uint64_t samples)
{
    static const struct gw_httpc_header h[] = {{"Content-Encoding", "snappy"},
                                               {"Content-Type", "application/x-protobuf"},
                                               {"X-Prometheus-Remote-Write-Version", "0.1.0"}};
    struct gw_httpc_response r;
    gw_httpc_response_init(&r);
    int rc = gw_httpc_request(m->c, "POST", "/api/v1/write", h, 3, body, len, &r, m->err);
    if (rc == GW_OK && r.status / 100 == 2) {
        m->tot.accepted += samples;
    } else if (rc == GW_OK && r.status == 400) {
        m->refused_batches++;
        if (!m->server_msg[0])
            snprintf(m->server_msg, sizeof m->server_msg, "%.*s", (int)r.body.len,
                     r.body.len ? (const char *)r.body.data : "");
    } else if (rc == GW_OK) {
        rc = gw_error_set(m->err, GW_EIO, "%s answered %d: %.200s", m->url, r.status,
                          r.body.len ? (const char *)r.body.data : "");
    }
    gw_httpc_response_free(&r);
    if (rc == GW_OK)
        m->sent += samples;
    return rc;
}

static int send_request(struct imp *m, struct gw_rw_request *req)
{
    if (m->db) {
        struct gw_append_result res;
        int rc = gw_db_append(m->db, req, gw_now_ms(), &res, m->err);
        if (rc == GW_OK) {
            sum_result(&m->tot, &res);
            m->sent += req->n_samples;
        }
        return rc;
    }
    for (size_t i = 0; i < req->n_series; i++)   /* the encoder wants sorted labels */
        qsort(req->series[i].labels, req->series[i].n_labels, sizeof(struct gw_label), label_cmp);
    struct gw_buf pb, body;
    gw_buf_init(&pb, 0);
    gw_buf_init(&body, 0);
    int rc = gw_rw_encode_v1(req, &pb);
    if (rc == GW_OK)
        rc = gw_snappy_encode(pb.data, pb.len, &body);
    if (rc != GW_OK)
        gw_error_set(m->err, rc, "cannot encode a remote-write request: %s", gw_strerror(rc));
    else
        rc = post_body(m, body.data, body.len, req->n_samples);
    gw_buf_free(&pb);
    gw_buf_free(&body);
    return rc;
}

static int flush_batch(struct imp *m)
{
    if (!m->nsmp)
        return GW_OK;
    struct gw_rw_series *s = calloc(m->nser, sizeof *s);
    if (!s)
        return gw_error_set(m->err, GW_ENOMEM, "out of memory");
    for (size_t i = 0; i < m->nser; i++)
        s[i] = (struct gw_rw_series){.labels = m->lab + m->ser[i].lab_off, .n_labels = (uint32_t)m->ser[i].nlab,
                                     .samples = m->smp + m->ser[i].smp_off, .n_samples = (uint32_t)m->ser[i].nsmp};
    struct gw_rw_request req = {.version = 1, .series = s, .n_series = m->nser, .n_samples = m->nsmp};
    int rc = send_request(m, &req);
    free(s);
    m->nlab = m->nser = m->nsmp = 0;
    gw_arena_reset(&m->strings);
    return rc;
}

static int same_labels(const struct imp *m, const struct gw_label *ls, size_t n)
{
    if (!m->nser || m->ser[m->nser - 1].nlab != n)
        return 0;
    const struct gw_label *c = m->lab + m->ser[m->nser - 1].lab_off;
    for (size_t i = 0; i < n; i++)
        if (c[i].name_len != ls[i].name_len || c[i].value_len != ls[i].value_len ||
            memcmp(c[i].name, ls[i].name, ls[i].name_len) || memcmp(c[i].value, ls[i].value, ls[i].value_len))
            return 0;
    return 1;
}

static int on_sample(void *ud, const struct gw_label *ls, size_t n, int64_t t, double v, size_t line)
{
    (void)line;
    struct imp *m = ud;
    if (!same_labels(m, ls, n)) {
        if (grow((void **)&m->ser, &m->capser, m->nser + 1, sizeof *m->ser) ||
            grow((void **)&m->lab, &m->caplab, m->nlab + n, sizeof *m->lab))
            return gw_error_set(m->err, GW_ENOMEM, "out of memory");
        for (size_t i = 0; i < n; i++) {
            char *nm = gw_arena_alloc(&m->strings, ls[i].name_len + ls[i].value_len + 1);
            if (!nm)
                return gw_error_set(m->err, GW_ENOMEM, "out of memory");
            memcpy(nm, ls[i].name, ls[i].name_len);
            memcpy(nm + ls[i].name_len, ls[i].value, ls[i].value_len);
            m->lab[m->nlab + i] = (struct gw_label){nm, ls[i].name_len, nm + ls[i].name_len, ls[i].value_len};
        }
        m->ser[m->nser++] = (struct ser){.lab_off = m->nlab, .nlab = n, .smp_off = m->nsmp};
        m->nlab += n;
    }
    if (grow((void **)&m->smp, &m->capsmp, m->nsmp + 1, sizeof *m->smp))
        return gw_error_set(m->err, GW_ENOMEM, "out of memory");
    m->smp[m->nsmp++] = (struct gw_sample){t, v};
    m->ser[m->nser - 1].nsmp++;
    return m->nsmp >= m->batch_max ? flush_batch(m) : GW_OK;
}

static int looks_like_text(const uint8_t *p, size_t len)
{
    size_t i = 0;
    while (i < len && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r'))
        i++;
    if (i == len)
        return 1;
    uint8_t c = p[i];
    return c == '#' || c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int import_rw(struct imp *m, const char *file, const uint8_t *p, size_t len)
{
    struct gw_buf pb;
    gw_buf_init(&pb, 0);
    struct gw_arena a;
    gw_arena_init(&a, 1 << 20, 0);
    struct gw_rw_request req;
    struct gw_error e = {0};
    int rc = gw_snappy_decode(p, len, GW_RW_MAX_BODY, &pb, &e);
    if (rc == GW_OK && gw_rw_decode(pb.data, pb.len, 1, &a, &req, &e) != GW_OK) {
        gw_arena_reset(&a);
        rc = gw_rw_decode(pb.data, pb.len, 2, &a, &req, &e);
    }
    if (rc != GW_OK)
        rc = gw_error_set(m->err, GW_EPARSE, "%s: neither text nor a remote-write body: %s", file, e.msg);
    else   /* to a serve re-encoded as 1.0, whatever version the file is */
        rc = send_request(m, &req);
    gw_arena_free(&a);
    gw_buf_free(&pb);
    return rc;
}

static int import_file(struct imp *m, const char *file)
{
    FILE *f = fopen(file, "rb");
    if (!f)
        return gw_error_set(m->err, GW_EIO, "cannot open %s: %s", file, strerror(errno));
    struct gw_buf b;
    gw_buf_init(&b, 0);
    char tmp[65536];
    size_t k;
    int rc = GW_OK;
    while (rc == GW_OK && (k = fread(tmp, 1, sizeof tmp, f)) > 0)
        rc = gw_buf_append(&b, tmp, k);
    if (rc == GW_OK && ferror(f))
        rc = gw_error_set(m->err, GW_EIO, "cannot read %s", file);
    fclose(f);
    if (rc == GW_OK && gw_buf_putc(&b, 0) != GW_OK)
        rc = GW_ENOMEM;
    if (rc == GW_ENOMEM)
        gw_error_set(m->err, rc, "out of memory reading %s", file);
    uint64_t before = m->sent;
    if (rc == GW_OK && looks_like_text(b.data, b.len - 1)) {
        rc = gw_om_parse(file, (const char *)b.data, b.len - 1, NULL, on_sample, m, m->err);
        int frc = flush_batch(m);   /* the lines before an error are imported too */
        if (rc == GW_OK)
            rc = frc;
    } else if (rc == GW_OK) {
        rc = import_rw(m, file, b.data, b.len - 1);
    }
    fprintf(stderr, "gpuwatch import: %s: %llu samples sent%s\n", file, (unsigned long long)(m->sent - before),
            rc == GW_OK ? "" : " before the error");
    gw_buf_free(&b);
    return rc;
}

/* Splits argv into options (for gw_cli_parse) and files. */
static int split_args(int argc, char **argv, char **opts, int *nopt, const char **files, size_t *nfiles)
{
    *nopt = 0;
    *nfiles = 0;
    for (int i = 0; i < argc; i++) {
        const char *s = argv[i];
        if (s[0] == '-' && s[1]) {
            opts[(*nopt)++] = argv[i];
            int takes = (!strcmp(s, "--data-dir") || !strcmp(s, "--url") || !strcmp(s, "--batch"));
            if (takes && i + 1 < argc)
                opts[(*nopt)++] = argv[++i];
        } else if (*nfiles < IMPORT_MAX_FILES) {
            files[(*nfiles)++] = s;
        } else {
            return -1;
        }
    }
    return 0;
}

static void print_totals(const struct imp *m)
{
    const struct gw_append_result *t = &m->tot;
    if (!m->db)
        printf("sent %llu samples: %llu in requests the server answered 2xx (resent duplicates included)",
               (unsigned long long)m->sent, (unsigned long long)t->accepted);
    else
        printf("imported %llu samples: accepted %llu", (unsigned long long)m->sent, (unsigned long long)t->accepted);
    if (m->db)
        printf(", duplicates %llu, conflicts %llu, out of order %llu, too old %llu, too new %llu, "
               "invalid series %llu (%llu samples)",
               (unsigned long long)t->duplicates, (unsigned long long)t->conflicts,
               (unsigned long long)t->out_of_order, (unsigned long long)t->too_old, (unsigned long long)t->too_new,
               (unsigned long long)t->invalid_series, (unsigned long long)t->invalid_samples);
    printf("\n");
    if (t->first_invalid[0])
        printf("first invalid series: %s\n", t->first_invalid);
    if (m->refused_batches)
        printf("%llu request(s) partly refused by the server, e.g.: %s\n", (unsigned long long)m->refused_batches,
               m->server_msg);
}

int gw_cli_import(int argc, char **argv)
{
    char **opts = calloc((size_t)argc + 1, sizeof *opts);
    const char *files[IMPORT_MAX_FILES];
    size_t nfiles = 0;
    int nopt = 0;
    if (!opts)
        return 1;
    if (split_args(argc, argv, opts, &nopt, files, &nfiles) != 0) {
        free(opts);
        return gw_cli_usage_error(&import_cmd, 0, "at most %d files at once", IMPORT_MAX_FILES);
    }
    struct import_args a = {.batch = 10000};
    int rc = gw_cli_parse(&import_cmd, nopt, opts, &a);
    free(opts);
    if (rc >= 0)
        return rc;
    if (!a.dir == !a.url)
        return gw_cli_usage_error(&import_cmd, 1, "give exactly one of --data-dir and --url");
    if (!nfiles)
        return gw_cli_usage_error(&import_cmd, 1, "no FILE given");
    rc = GW_OK;
    struct gw_error err = {0};
    struct imp m = {.batch_max = (size_t)a.batch, .err = &err, .url = a.url};
    gw_arena_init(&m.strings, 1 << 20, 0);
    char url[400];
    if (a.dir) {
        struct gw_db_opts o;
        gw_db_opts_default(&o);
        o.dir = a.dir;
        rc = gw_db_open(&m.db, &o, &err);
        if (rc != GW_OK && gw_cli_serve_url(a.dir, url, sizeof url) == 0) {
            gw_error_clear(&err);
            m.url = url;
            rc = GW_OK;
        }
    }
    if (rc == GW_OK && m.url) {
        struct gw_httpc_opts ho;
        gw_httpc_opts_default(&ho);
        ho.timeout_ms = 120000;
        ho.user_agent = "gpuwatch-cli";
        rc = gw_httpc_open(&m.c, m.url, &ho, &err);
    }
    for (size_t i = 0; rc == GW_OK && i < nfiles; i++)
        rc = import_file(&m, files[i]);
    print_totals(&m);
    if (rc != GW_OK)
        fprintf(stderr, "gpuwatch import: %s\n", err.msg[0] ? err.msg : gw_strerror(rc));
    gw_db_close(m.db);
    gw_httpc_close(m.c);
    gw_arena_free(&m.strings);
    free(m.lab);
    free(m.ser);
    free(m.smp);
    const struct gw_append_result *t = &m.tot;
    uint64_t refused = t->conflicts + t->out_of_order + t->too_old + t->too_new + t->invalid_samples;
    return rc != GW_OK || refused || m.refused_batches ? 1 : 0;
}
