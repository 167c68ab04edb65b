/* cmd_verify.c - `gpuwatch verify`: checks a data dir read-only
 * (gw_db_verify: every block decoded, the index cross-checked, every WAL
 * record and CRC) and lists each problem with where it is.
 *
 *   gpuwatch verify --data-dir /var/lib/gpuwatch [--json] [--quiet]
 *
 * Exit status 0 when clean, 1 when problems were found (or the check could
 * not run), 2 on a usage error. Safe next to a running serve: one LMDB read
 * transaction, WAL segments only read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuwatch/buf.h"
#include "gpuwatch/db.h"
#include "gpuwatch/json.h"
#include "cli.h"
#include "cli_parse.h"
#include "cli_progress.h"

struct verify_args {
    const char *dir;
    int json, quiet;
};

static const struct gw_cli_opt verify_opts[] = {
    {.name = "--data-dir", .arg = "DIR", .help = "the data directory (required)", .type = GW_CLI_STR,
     GW_CLI_AT(struct verify_args, dir), .flags = GW_CLI_REQUIRED | GW_CLI_NONEMPTY},
    {.name = "--json", .help = "one JSON object on stdout instead of text", .type = GW_CLI_FLAG,
     GW_CLI_AT(struct verify_args, json)},
    {.name = "--quiet", .help = "no progress on stderr", .type = GW_CLI_FLAG, GW_CLI_AT(struct verify_args, quiet)},
    {0},
};

static const struct gw_cli_cmd verify_cmd = {
    .name = "verify",
    .synopsis = "--data-dir DIR [--json] [--quiet]",
    .intro = "Checks a data dir without changing it: compares every checksum and decodes\n"
             "every block of every day partition (blob directories, timestamp columns,\n"
             "value parts) and every 5m/1h aggregate value, cross-checks\n"
             "the index (series records, label pairs, postings, label hashes, nodes,\n"
             "counters) and reads every WAL segment (record lengths, CRCs, payloads).\n"
             "Each problem is printed with where it is (partition day, node, window, seq,\n"
             "series id, WAL segment and byte offset). A torn record at the end of the\n"
             "newest WAL segment is normal after a crash and is reported, not counted.\n"
             "Safe while 'gpuwatch serve' runs on DIR.\n",
    .opts = verify_opts,
    .outro = "\nexit status: 0 clean, 1 problems found (or the check could not run), 2 usage error\n",
};

struct verify_out {
    struct gw_cli_progress prog;
    int json;
    struct gw_buf js;           /* the problems array, JSON */
    uint64_t n;
};

static void fmt_day(char *out, size_t cap, int64_t day)
{
    time_t s = (time_t)(day * 86400);
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(out, cap, "%Y-%m-%d", &tm);
}

static void fmt_time(char *out, size_t cap, int64_t ms)
{
    time_t s = (time_t)(ms / 1000);
    if (ms % 1000 < 0)
        s--;
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void print_text(const struct gw_db_problem *p)
{
    char where[400], tmp[64];
    size_t o = 0;
    where[0] = 0;
#define ADD(...) o += (size_t)snprintf(where + o, o < sizeof where ? sizeof where - o : 0, __VA_ARGS__)
    if (p->day != INT64_MIN) {
        fmt_day(tmp, sizeof tmp, p->day);
        ADD(" partition p%08lld (%s)", (long long)p->day, tmp);
    }
    if (p->window_start != INT64_MIN) {
        fmt_time(tmp, sizeof tmp, p->window_start);
        ADD(" node %u window %s seq %lld", p->node_id, tmp, (long long)p->seq);
    } else if (p->node_id) {
        ADD(" node %u", p->node_id);
    }
    if (p->sid)
        ADD(" series %llu", (unsigned long long)p->sid);
    if (p->pair_id)
        ADD(" pair %u", p->pair_id);
    if (p->wal_segment >= 0)
        ADD(" segment %08lld.wal offset %llu", (long long)p->wal_segment, (unsigned long long)p->wal_offset);
#undef ADD
    printf("%s %s:%s: %s\n", p->area, p->kind, where, p->what);
}

static void json_problem(struct gw_buf *b, const struct gw_db_problem *p)
{
    gw_buf_printf(b, "%s{\"area\":\"%s\",\"kind\":\"%s\"", b->len > 1 ? "," : "", p->area, p->kind);
    if (p->day != INT64_MIN)
        gw_buf_printf(b, ",\"day\":%lld", (long long)p->day);
    if (p->window_start != INT64_MIN)
        gw_buf_printf(b, ",\"node_id\":%u,\"window_start\":%lld,\"seq\":%lld", p->node_id,
                      (long long)p->window_start, (long long)p->seq);
    else if (p->node_id)
        gw_buf_printf(b, ",\"node_id\":%u", p->node_id);
    if (p->sid)
        gw_buf_printf(b, ",\"series_id\":%llu", (unsigned long long)p->sid);
    if (p->pair_id)
        gw_buf_printf(b, ",\"pair_id\":%u", p->pair_id);
    if (p->wal_segment >= 0)
        gw_buf_printf(b, ",\"wal_segment\":%lld,\"wal_offset\":%llu", (long long)p->wal_segment,
                      (unsigned long long)p->wal_offset);
    gw_buf_printf(b, ",\"what\":");
    gw_json_cstr(b, p->what);
    gw_buf_putc(b, '}');
}

static void on_problem(void *ud, const struct gw_db_problem *p)
{
    struct verify_out *o = ud;
    o->n++;
    if (o->json) {
        json_problem(&o->js, p);
        return;
    }
    gw_cli_progress_end(&o->prog);
    print_text(p);
    fflush(stdout);
}

static void on_progress(void *ud, const char *phase, uint64_t done, uint64_t total)
{
    struct verify_out *o = ud;
    gw_cli_progress_update(&o->prog, phase, done, total);
}

static void print_summary(const struct verify_out *o, const struct gw_db_verify_stats *st)
{
    const struct gw_store_verify_stats *s = &st->store;
    const struct gw_wal_check_stats *w = &st->wal;
    if (o->json) {
        printf("{\"ok\":%s,\"problems\":%.*s],\"store\":{\"partitions\":%llu,\"blobs\":%llu,\"blocks\":%llu,"
               "\"columns\":%llu,\"samples\":%llu,\"series\":%llu,\"postings\":%llu,\"shash\":%llu,"
               "\"pairs\":%llu,\"nodes\":%llu},\"wal\":{\"segments\":%llu,\"records\":%llu,\"series\":%llu,"
               "\"samples\":%llu,\"torn_tail\":",
               st->problems ? "false" : "true", (int)o->js.len, (const char *)o->js.data,
               (unsigned long long)s->partitions, (unsigned long long)s->blobs, (unsigned long long)s->blocks,
               (unsigned long long)s->columns, (unsigned long long)s->samples, (unsigned long long)s->series,
               (unsigned long long)s->postings, (unsigned long long)s->shash, (unsigned long long)s->pairs,
               (unsigned long long)s->nodes, (unsigned long long)w->segments, (unsigned long long)w->records,
               (unsigned long long)st->wal_series, (unsigned long long)st->wal_samples);
        if (w->torn_tail)
            printf("{\"segment\":%u,\"offset\":%llu,\"bytes\":%llu}}}\n", w->torn_segment,
                   (unsigned long long)w->torn_offset, (unsigned long long)w->torn_bytes);
        else
            printf("null}}\n");
        return;
    }
    printf("store: %llu partitions, %llu blobs, %llu blocks (%llu timestamp columns), %llu samples; "
           "%llu series, %llu postings, %llu label pairs, %llu nodes\n",
           (unsigned long long)s->partitions, (unsigned long long)s->blobs, (unsigned long long)s->blocks,
           (unsigned long long)s->columns, (unsigned long long)s->samples, (unsigned long long)s->series,
           (unsigned long long)s->postings, (unsigned long long)s->pairs, (unsigned long long)s->nodes);
    printf("wal: %llu segments, %llu records (%llu series, %llu samples)\n", (unsigned long long)w->segments,
           (unsigned long long)w->records, (unsigned long long)st->wal_series, (unsigned long long)st->wal_samples);
    if (w->torn_tail)
        printf("wal: torn tail in %08u.wal at offset %llu (%llu bytes; normal after a crash or while serve "
               "writes; replay drops it)\n",
               w->torn_segment, (unsigned long long)w->torn_offset, (unsigned long long)w->torn_bytes);
    if (st->problems)
        printf("%llu problem(s) found\n", (unsigned long long)st->problems);
    else
        printf("ok: no problems found\n");
}

int gw_cli_verify(int argc, char **argv)
{
    struct verify_args a = {0};
    int rc = gw_cli_parse(&verify_cmd, argc, argv, &a);
    if (rc >= 0)
        return rc;
    struct verify_out o = {.json = a.json};
    gw_cli_progress_init(&o.prog, "verify", a.quiet);
    gw_buf_init(&o.js, 0);
    gw_buf_putc(&o.js, '[');
    struct gw_db_verify_stats st;
    struct gw_error err = {0};
    rc = gw_db_verify(a.dir, on_problem, on_progress, &o, &st, &err);
    gw_cli_progress_end(&o.prog);
    if (rc != GW_OK) {
        fprintf(stderr, "gpuwatch verify: %s\n", err.msg[0] ? err.msg : gw_strerror(rc));
        gw_buf_free(&o.js);
        return 1;
    }
    print_summary(&o, &st);
    gw_buf_free(&o.js);
    return st.problems ? 1 : 0;
}
