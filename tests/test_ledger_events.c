/* test_ledger_events.c - scheduler events (ledger.h, src/ledger/events.c):
 * every refusal of the strict JSON-lines reader names its line and
 * returns nothing; times in RFC 3339 and Unix seconds; node names
 * lower-cased; parse -> JSON -> parse gives the same events; the store
 * answers time ranges in order, appends all or nothing, keeps seq going
 * across a reopen, grows its map when it is full and takes appends from
 * several threads; gw_led_data_newest. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpuwatch/buf.h"
#include "gpuwatch/ledger.h"

static void tmpdir(char *buf, size_t cap)
{
    const char *base = getenv("GW_TEST_TMP");
    if (base && *base) mkdir(base, 0755);
    snprintf(buf, cap, "%s/gwlevXXXXXX", base && *base ? base : "/tmp");
    assert_non_null(mkdtemp(buf));
}

static void rm_rf(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static int parse(const char *body, struct gw_led_event **ev, size_t *n, struct gw_error *err)
{
    return gw_led_events_parse(body, strlen(body), 0, ev, n, err);
}

#define GOOD1                                                                                            \
    "{\"type\":\"session_start\",\"time\":\"2026-12-01T10:00:00Z\",\"session\":\"j1\",\"nodes\":[\"a1\",\"a2\"]}\n"
#define GOOD2 "{\"type\":\"session_end\",\"time\":1796119300,\"session\":\"j1\"}\n"

/* Each body has two good lines, then a bad one on line 3 (or the line given). */
static void test_ledger_events_refusals(void **state)
{
    (void)state;
    static const struct {
        const char *line;       /* the bad line */
        const char *want;       /* in the message after "line 3: " */
    } cases[] = {
        {"{\"type\":\"session_start\",\"time\":1,\"session\":\"j\"", "invalid JSON"},
        {"not json", "invalid JSON"},
        {"[1,2]", "not a JSON object"},
        {"{\"type\":\"session_end\",\"time\":1,\"session\":\"j\",\"session\":\"k\"}", "duplicate"},
        {"{\"type\":\"x\",\"time\":1}", "unknown type \"x\""},
        {"{\"type\":7,\"time\":1}", "\"type\" must be a string"},
        {"{\"time\":1,\"session\":\"j\"}", "missing \"type\""},
        {"{\"type\":\"session_end\",\"time\":1,\"session\":\"j\",\"foo\":1}", "unknown field \"foo\""},
        {"{\"type\":\"session_end\",\"time\":1,\"session\":\"j\",\"nodes\":[\"a\"]}",
         "field \"nodes\" is not allowed in session_end"},
        {"{\"type\":\"session_start\",\"time\":1,\"session\":\"j\"}", "session_start needs \"nodes\""},
        {"{\"type\":\"session_retry\",\"time\":1,\"session\":\"j\"}", "session_retry needs \"retry_of\""},
        {"{\"type\":\"node_excluded\",\"time\":1}", "node_excluded needs \"node\""},
        {"{\"type\":\"session_end\",\"session\":\"j\"}", "session_end needs \"time\""},
        {"{\"type\":\"session_end\",\"time\":\"yesterday\",\"session\":\"j\"}", "not an RFC 3339 time"},
        {"{\"type\":\"session_end\",\"time\":\"2026-02-30T00:00:00Z\",\"session\":\"j\"}", "not an RFC 3339 time"},
        {"{\"type\":\"session_end\",\"time\":\"2026-12-01T10:00:00\",\"session\":\"j\"}", "not an RFC 3339 time"},
        {"{\"type\":\"session_end\",\"time\":\"2026-12-01T24:00:00Z\",\"session\":\"j\"}", "not an RFC 3339 time"},
        {"{\"type\":\"session_end\",\"time\":-5,\"session\":\"j\"}", "outside 1970..9999"},
        {"{\"type\":\"session_end\",\"time\":1e300,\"session\":\"j\"}", "outside 1970..9999"},
        {"{\"type\":\"session_end\",\"time\":\"1969-12-31T23:59:59Z\",\"session\":\"j\"}", "outside 1970..9999"},
        {"{\"type\":\"session_end\",\"time\":true,\"session\":\"j\"}", "must be an RFC 3339 string or Unix seconds"},
        {"{\"type\":\"session_end\",\"time\":1,\"session\":5}", "\"session\" must be a string"},
        {"{\"type\":\"session_end\",\"time\":1,\"session\":\"\"}", "\"session\" is empty"},
        {"{\"type\":\"session_end\",\"time\":1,\"session\":\"a\\nb\"}", "\"session\" has a control character"},
        {"{\"type\":\"session_end\",\"time\":1,\"session\":\"j\",\"outcome\":\"ok\"}",
         "\"outcome\" must be \"completed\" or \"cancelled\""},
        {"{\"type\":\"session_start\",\"time\":1,\"session\":\"j\",\"nodes\":\"a1\"}", "\"nodes\" must be an array"},
        {"{\"type\":\"session_start\",\"time\":1,\"session\":\"j\",\"nodes\":[]}", "\"nodes\" is empty"},
        {"{\"type\":\"session_start\",\"time\":1,\"session\":\"j\",\"nodes\":[\"a1\",3]}",
         "\"nodes\" must be a string"},
        {"{\"type\":\"session_start\",\"time\":1,\"session\":\"j\",\"nodes\":[\"a 1\"]}", "is not a host name"},
        {"{\"type\":\"session_start\",\"time\":1,\"session\":\"j\",\"nodes\":[\"-a1\"]}", "is not a host name"},
        {"{\"type\":\"session_start\",\"time\":1,\"session\":\"j\",\"nodes\":[\"a1\",\"b\",\"A1\"]}",
         "node \"a1\" appears twice"},
        {"{\"type\":\"session_start\",\"time\":1,\"session\":\"j\",\"nodes\":[[\"a\"]]}", "must be a string"},
        {"{\"type\":\"session_start\",\"time\":1,\"session\":\"j\",\"nodes\":[\"a\"],\"attempt\":1.5}",
         "\"attempt\" must be an integer"},
        {"{\"type\":\"session_start\",\"time\":1,\"session\":\"j\",\"nodes\":[\"a\"],\"attempt\":-1}",
         "\"attempt\" must be an integer"},
        {"{\"type\":\"session_end\",\"time\":1,\"session\":\"j\",\"seq\":\"1\"}", "\"seq\" must be"},
        {"{\"type\":\"node_excluded\",\"time\":1,\"node\":\"n/1\"}", "is not a host name"},
        {"{\"type\":\"node_excluded\",\"time\":1,\"node\":\"n1\",\"reason\":7}", "\"reason\" must be a string"},
        {"{\"type\":\"session_end\",\"time\":1,\"session\":\"j\",\"x\":[[[[[1]]]]]}", "nested deeper than"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char body[2048];
        snprintf(body, sizeof body, GOOD1 GOOD2 "%s\n" GOOD2, cases[i].line);
        struct gw_led_event *ev = (void *)1;
        size_t n = 99;
        struct gw_error err = {0};
        int rc = parse(body, &ev, &n, &err);
        if (rc != GW_EINVAL || strncmp(err.msg, "line 3: ", 8) != 0 || !strstr(err.msg, cases[i].want))
            fail_msg("case %zu (%s): rc %d, message \"%s\", want \"line 3: ...%s\"", i, cases[i].line, rc, err.msg,
                     cases[i].want);
        assert_null(ev);
        assert_int_equal(n, 0);
    }
    /* long strings, each one past its limit */
    char big[400], body[1024];
    memset(big, 'x', 300);
    big[300] = '\0';
    struct gw_led_event *ev;
    size_t n;
    struct gw_error err = {0};
    snprintf(body, sizeof body, "\n{\"type\":\"session_end\",\"time\":1,\"session\":\"%.128s\"}", big);
    assert_int_equal(parse(body, &ev, &n, &err), GW_EINVAL);
    assert_string_equal(err.msg, "line 2: \"session\" is longer than 127 bytes");
    snprintf(body, sizeof body, "{\"type\":\"node_excluded\",\"time\":1,\"node\":\"%.128s\"}", big);
    assert_int_equal(parse(body, &ev, &n, &err), GW_EINVAL);
    assert_string_equal(err.msg, "line 1: \"node\" is longer than 127 bytes");
    snprintf(body, sizeof body, "{\"type\":\"node_excluded\",\"time\":1,\"node\":\"a\",\"reason\":\"%.256s%s\"}", big,
             big);
    assert_int_equal(parse(body, &ev, &n, &err), GW_EINVAL);
    assert_string_equal(err.msg, "line 1: \"reason\" is longer than 255 bytes");
    /* too many events, too many nodes */
    assert_int_equal(gw_led_events_parse(GOOD1 GOOD2 GOOD2, strlen(GOOD1 GOOD2 GOOD2), 2, &ev, &n, &err), GW_ELIMIT);
    assert_string_equal(err.msg, "line 3: more than 2 events in one request");
    struct gw_buf b;
    gw_buf_init(&b, 0);
    assert_int_equal(gw_buf_printf(&b, "{\"type\":\"session_start\",\"time\":1,\"session\":\"j\",\"nodes\":["), GW_OK);
    for (int i = 0; i < 16385; i++) assert_int_equal(gw_buf_printf(&b, "%s\"n%d\"", i ? "," : "", i), GW_OK);
    assert_int_equal(gw_buf_printf(&b, "]}"), GW_OK);
    assert_int_equal(gw_led_events_parse((const char *)b.data, b.len, 0, &ev, &n, &err), GW_EINVAL);
    assert_string_equal(err.msg, "line 1: \"nodes\" has more than 16384 names");
    gw_buf_free(&b);
}

static void test_ledger_events_parse_fields(void **state)
{
    (void)state;
    const char *body =
        "\r\n  \n"
        "{\"type\":\"session_start\",\"time\":\"2026-12-01T11:00:00.123456+01:00\",\"session\":\"job-7\","
        "\"nodes\":[\"GPU-A1\",\"gpu_a2.rack3\"],\"chain\":\"c1\",\"attempt\":2,\"retry_of\":\"job-6\"}\r\n"
        "{\"type\":\"session_end\",\"time\":1796119200.0006,\"session\":\"job-7\",\"outcome\":\"cancelled\"}\n"
        "{\"type\":\"session_fail\",\"time\":\"2026-12-01t10:00:00.5z\",\"session\":\"job-7\",\"node\":\"N1\","
        "\"reason\":\"NCCL timeout \\u00e9\"}\n"
        "{\"type\":\"session_retry\",\"time\":1796119200,\"session\":\"job-8\",\"retry_of\":\"job-7\"}\n"
        "{\"type\":\"node_excluded\",\"time\":0,\"node\":\"n2\"}\n"
        "{\"reason\":\"back\",\"node\":\"n2\",\"time\":\"9999-12-31T23:59:59.999Z\",\"type\":\"node_returned\"}";
    struct gw_led_event *ev;
    size_t n;
    struct gw_error err = {0};
    assert_int_equal(parse(body, &ev, &n, &err), GW_OK);
    assert_int_equal(n, 6);
    assert_int_equal(ev[0].type, GW_LEV_SESSION_START);
    assert_int_equal(ev[0].t, 1796119200123LL);   /* 10:00:00.123Z, fraction truncated */
    assert_string_equal(ev[0].session, "job-7");
    assert_int_equal(ev[0].n_nodes, 2);
    assert_string_equal(ev[0].nodes[0], "gpu-a1");
    assert_string_equal(ev[0].nodes[1], "gpu_a2.rack3");
    assert_string_equal(ev[0].chain, "c1");
    assert_int_equal(ev[0].attempt, 2);
    assert_string_equal(ev[0].retry_of, "job-6");
    assert_int_equal(ev[1].t, 1796119200001LL);   /* seconds rounded to ms */
    assert_int_equal(ev[1].attempt, -1);
    assert_string_equal(ev[1].outcome, "cancelled");
    assert_int_equal(ev[2].t, 1796119200500LL);
    assert_string_equal(ev[2].node, "n1");
    assert_string_equal(ev[2].reason, "NCCL timeout \xc3\xa9");
    assert_int_equal(ev[3].type, GW_LEV_SESSION_RETRY);
    assert_int_equal(ev[3].n_nodes, 0);
    assert_null(ev[3].nodes);
    assert_int_equal(ev[4].t, 0);
    assert_int_equal(ev[5].type, GW_LEV_NODE_RETURNED);
    assert_int_equal(ev[5].t, 253402300799999LL);
    gw_led_events_free(ev, n);
    /* empty body: no events */
    assert_int_equal(parse("\n\n", &ev, &n, &err), GW_OK);
    assert_int_equal(n, 0);
    gw_led_events_free(ev, n);
}

static void test_ledger_events_json_round_trip(void **state)
{
    (void)state;
    const char *body =
        "{\"type\":\"session_start\",\"time\":\"2026-12-01T10:00:00Z\",\"session\":\"job-7\","
        "\"nodes\":[\"gpu-a1\",\"GPU-A2\"]}\n"
        "{\"type\":\"session_start\",\"time\":1796119200.25,\"session\":\"j<8>\",\"nodes\":[\"x\"],\"chain\":\"c\","
        "\"attempt\":0,\"retry_of\":\"j\\\"7\"}\n"
        "{\"type\":\"session_end\",\"time\":1,\"session\":\"j\",\"outcome\":\"completed\"}\n"
        "{\"type\":\"session_fail\",\"time\":2,\"session\":\"j\",\"node\":\"n\",\"reason\":\"a\\tb\\\\c\"}\n"
        "{\"type\":\"session_retry\",\"time\":3,\"session\":\"k\",\"retry_of\":\"j\",\"nodes\":[\"n\",\"m\"]}\n"
        "{\"type\":\"node_excluded\",\"time\":4,\"node\":\"n\",\"reason\":\"\"}\n"
        "{\"type\":\"node_returned\",\"time\":5,\"node\":\"n\"}\n";
    struct gw_led_event *ev, *ev2;
    size_t n, n2;
    struct gw_error err = {0};
    /* a tab is a control character: refused in reason too */
    assert_int_equal(parse(body, &ev, &n, &err), GW_EINVAL);
    assert_string_equal(err.msg, "line 4: \"reason\" has a control character");
    char *fixed = strdup(body);
    char *tab = strstr(fixed, "a\\tb");
    tab[1] = ' ';
    tab[2] = ' ';
    assert_int_equal(parse(fixed, &ev, &n, &err), GW_OK);
    free(fixed);
    assert_int_equal(n, 7);
    struct gw_buf b;
    gw_buf_init(&b, 0);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(gw_led_event_json(&b, &ev[i]), GW_OK);
        assert_int_equal(gw_buf_putc(&b, '\n'), GW_OK);
    }
    const char *first = "{\"time\":\"2026-12-01T10:00:00Z\",\"type\":\"session_start\",\"session\":\"job-7\","
                        "\"nodes\":[\"gpu-a1\",\"gpu-a2\"]}\n";
    assert_memory_equal(b.data, first, strlen(first));
    assert_int_equal(gw_led_events_parse((const char *)b.data, b.len, 0, &ev2, &n2, &err), GW_OK);
    assert_int_equal(n2, n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(ev[i].t, ev2[i].t);
        assert_int_equal(ev[i].type, ev2[i].type);
        assert_string_equal(ev[i].session, ev2[i].session);
        assert_string_equal(ev[i].retry_of, ev2[i].retry_of);
        assert_string_equal(ev[i].chain, ev2[i].chain);
        assert_int_equal(ev[i].attempt, ev2[i].attempt);
        assert_string_equal(ev[i].outcome, ev2[i].outcome);
        assert_string_equal(ev[i].node, ev2[i].node);
        assert_string_equal(ev[i].reason, ev2[i].reason);
        assert_int_equal(ev[i].n_nodes, ev2[i].n_nodes);
        for (uint32_t k = 0; k < ev[i].n_nodes; k++) assert_string_equal(ev[i].nodes[k], ev2[i].nodes[k]);
    }
    /* and the second rendering is byte-identical to the first */
    struct gw_buf b2;
    gw_buf_init(&b2, 0);
    for (size_t i = 0; i < n2; i++) {
        assert_int_equal(gw_led_event_json(&b2, &ev2[i]), GW_OK);
        assert_int_equal(gw_buf_putc(&b2, '\n'), GW_OK);
    }
    assert_int_equal(b.len, b2.len);
    assert_memory_equal(b.data, b2.data, b.len);
    gw_buf_free(&b);
    gw_buf_free(&b2);
    gw_led_events_free(ev, n);
    gw_led_events_free(ev2, n2);
}

/* n_events node_excluded events at t = t0 + i * step, node "n<i>". */
static void make_events(struct gw_led_event *ev, size_t n, int64_t t0, int64_t step)
{
    memset(ev, 0, n * sizeof *ev);
    for (size_t i = 0; i < n; i++) {
        ev[i].type = GW_LEV_NODE_EXCLUDED;
        ev[i].t = t0 + (int64_t)i * step;
        ev[i].attempt = -1;
        snprintf(ev[i].node, sizeof ev[i].node, "n%zu", i);
    }
}

static void test_ledger_events_store(void **state)
{
    (void)state;
    char dir[256];
    tmpdir(dir, sizeof dir);
    struct gw_error err = {0};
    struct gw_led_events *s;
    assert_int_equal(gw_led_events_open(&s, dir, &err), GW_OK);
    struct gw_led_event ev[10], *out;
    size_t n;
    /* stored out of time order; loaded in time order */
    make_events(ev, 10, 1000000, -1000);   /* times 1000000, 999000, ... 991000 */
    assert_int_equal(gw_led_events_append(s, ev, 10, &err), GW_OK);
    for (size_t i = 0; i < 10; i++) assert_int_equal(ev[i].seq, i + 1);
    assert_int_equal(gw_led_events_load(s, INT64_MIN, INT64_MAX, 0, &out, &n, &err), GW_OK);
    assert_int_equal(n, 10);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(out[i].t, 991000 + (int64_t)i * 1000);
        assert_int_equal(out[i].seq, 10 - i);
    }
    gw_led_events_free(out, n);
    /* inclusive range, limit */
    assert_int_equal(gw_led_events_load(s, 993000, 996000, 0, &out, &n, &err), GW_OK);
    assert_int_equal(n, 4);
    assert_int_equal(out[0].t, 993000);
    assert_int_equal(out[3].t, 996000);
    gw_led_events_free(out, n);
    assert_int_equal(gw_led_events_load(s, 993000, 996000, 2, &out, &n, &err), GW_OK);
    assert_int_equal(n, 2);
    assert_int_equal(out[1].t, 994000);
    gw_led_events_free(out, n);
    assert_int_equal(gw_led_events_load(s, 996000, 993000, 0, &out, &n, &err), GW_OK);
    assert_int_equal(n, 0);
    gw_led_events_free(out, n);
    /* equal times: seq order */
    make_events(ev, 2, 993000, 0);
    assert_int_equal(gw_led_events_append(s, ev, 2, &err), GW_OK);
    assert_int_equal(gw_led_events_load(s, 993000, 993000, 0, &out, &n, &err), GW_OK);
    assert_int_equal(n, 3);
    assert_int_equal(out[0].seq, 8);
    assert_int_equal(out[1].seq, 11);
    assert_int_equal(out[2].seq, 12);
    gw_led_events_free(out, n);

    /* all or nothing: one invalid event (a bad node name) refuses the lot */
    make_events(ev, 3, 5000000, 1);
    snprintf(ev[1].node, sizeof ev[1].node, "bad name");
    assert_int_equal(gw_led_events_append(s, ev, 3, &err), GW_EINVAL);
    assert_non_null(strstr(err.msg, "line 2: \"node\""));
    assert_int_equal(ev[0].seq, 0);
    assert_int_equal(gw_led_events_load(s, 4000000, INT64_MAX, 0, &out, &n, &err), GW_OK);
    assert_int_equal(n, 0);
    gw_led_events_free(out, n);

    /* seq continues across a reopen */
    gw_led_events_close(s);
    assert_int_equal(gw_led_events_open(&s, dir, &err), GW_OK);
    make_events(ev, 1, 7, 0);
    assert_int_equal(gw_led_events_append(s, ev, 1, &err), GW_OK);
    assert_int_equal(ev[0].seq, 13);
    assert_int_equal(gw_led_events_load(s, 0, 7, 0, &out, &n, &err), GW_OK);
    assert_int_equal(n, 1);
    assert_int_equal(out[0].seq, 13);
    assert_string_equal(out[0].node, "n0");
    gw_led_events_free(out, n);
    gw_led_events_close(s);
    gw_led_events_close(NULL);
    rm_rf(dir);
}

/* The map starts at 4 MiB: a few big session_start events fill it, and
 * the append grows it instead of failing. */
static void test_ledger_events_store_grows(void **state)
{
    (void)state;
    char dir[256];
    tmpdir(dir, sizeof dir);
    struct gw_error err = {0};
    struct gw_led_events *s;
    assert_int_equal(gw_led_events_open(&s, dir, &err), GW_OK);
    enum { N = 8, NODES = 16384 };
    struct gw_led_event ev[N];
    memset(ev, 0, sizeof ev);
    for (int i = 0; i < N; i++) {
        ev[i].type = GW_LEV_SESSION_START;
        ev[i].t = 1000 + i;
        ev[i].attempt = -1;
        snprintf(ev[i].session, sizeof ev[i].session, "job-%d", i);
        ev[i].nodes = calloc(NODES, sizeof(char *));
        ev[i].n_nodes = NODES;
        for (int k = 0; k < NODES; k++) {
            char name[GW_LED_NAME];
            snprintf(name, sizeof name, "node-with-a-long-name-in-rack-%06d.cluster.example", k);
            ev[i].nodes[k] = strdup(name);
        }
    }
    assert_int_equal(gw_led_events_append(s, ev, N, &err), GW_OK);
    struct gw_led_event *out;
    size_t n;
    assert_int_equal(gw_led_events_load(s, 0, INT64_MAX, 0, &out, &n, &err), GW_OK);
    assert_int_equal(n, N);
    assert_int_equal(out[N - 1].n_nodes, NODES);
    assert_string_equal(out[N - 1].nodes[NODES - 1], "node-with-a-long-name-in-rack-016383.cluster.example");
    gw_led_events_free(out, n);
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < NODES; k++) free(ev[i].nodes[k]);
        free(ev[i].nodes);
    }
    gw_led_events_close(s);
    rm_rf(dir);
}

struct th_arg {
    struct gw_led_events *s;
    int id;
    int rc;
};

static void *th_append(void *p)
{
    struct th_arg *a = p;
    for (int i = 0; i < 50 && a->rc == GW_OK; i++) {
        struct gw_led_event ev[2];
        make_events(ev, 2, 1000 * a->id + i, 0);
        struct gw_error err = {0};
        a->rc = gw_led_events_append(a->s, ev, 2, &err);
        if (a->rc == GW_OK && ev[1].seq != ev[0].seq + 1) a->rc = -100;
    }
    return NULL;
}

static void *th_load(void *p)
{
    struct th_arg *a = p;
    for (int i = 0; i < 50 && a->rc == GW_OK; i++) {
        struct gw_led_event *out;
        size_t n;
        struct gw_error err = {0};
        a->rc = gw_led_events_load(a->s, INT64_MIN, INT64_MAX, 0, &out, &n, &err);
        if (a->rc == GW_OK) gw_led_events_free(out, n);
    }
    return NULL;
}

/* Appends from several threads while another loads: every event stored
 * once, seqs 1..N without a gap or a repeat. */
static void test_ledger_events_store_threads(void **state)
{
    (void)state;
    char dir[256];
    tmpdir(dir, sizeof dir);
    struct gw_error err = {0};
    struct gw_led_events *s;
    assert_int_equal(gw_led_events_open(&s, dir, &err), GW_OK);
    pthread_t th[5];
    struct th_arg a[5];
    for (int i = 0; i < 5; i++) {
        a[i] = (struct th_arg){s, i, GW_OK};
        assert_int_equal(pthread_create(&th[i], NULL, i < 4 ? th_append : th_load, &a[i]), 0);
    }
    for (int i = 0; i < 5; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(a[i].rc, GW_OK);
    }
    struct gw_led_event *out;
    size_t n;
    assert_int_equal(gw_led_events_load(s, INT64_MIN, INT64_MAX, 0, &out, &n, &err), GW_OK);
    assert_int_equal(n, 400);
    char seen[401] = {0};
    for (size_t i = 0; i < n; i++) {
        assert_true(out[i].seq >= 1 && out[i].seq <= 400);
        assert_false(seen[out[i].seq]);
        seen[out[i].seq] = 1;
        if (i) assert_true(out[i - 1].t <= out[i].t);
    }
    gw_led_events_free(out, n);
    gw_led_events_close(s);
    rm_rf(dir);
}

/* The "now" of the exclusion list: the newest input time not after to. */
static void test_ledger_events_data_newest(void **state)
{
    (void)state;
    struct gw_led_data d;
    memset(&d, 0, sizeof d);
    d.in.to = 10000;
    assert_int_equal(gw_led_data_newest(&d), 10000);   /* no inputs */
    struct gw_led_act act[2] = {{.t = 4000}, {.t = 5000}};
    d.in.act = act;
    d.in.n_act = 2;
    assert_int_equal(gw_led_data_newest(&d), 5000);
    struct gw_alert al;
    memset(&al, 0, sizeof al);
    al.active_at = 3000;
    al.fired_at = 6000;
    al.last_raised = 6500;
    al.resolved_at = INT64_MIN;
    d.in.alerts = &al;
    d.in.n_alerts = 1;
    assert_int_equal(gw_led_data_newest(&d), 6500);
    struct gw_led_event ev[2];
    make_events(ev, 2, 7000, 5000);   /* 7000 and 12000, past to */
    d.in.events = ev;
    d.in.n_events = 2;
    assert_int_equal(gw_led_data_newest(&d), 7000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ledger_events_refusals),
        cmocka_unit_test(test_ledger_events_parse_fields),
        cmocka_unit_test(test_ledger_events_json_round_trip),
        cmocka_unit_test(test_ledger_events_store),
        cmocka_unit_test(test_ledger_events_store_grows),
        cmocka_unit_test(test_ledger_events_store_threads),
        cmocka_unit_test(test_ledger_events_data_newest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
