/* test_alert.c - the alert module: lifecycle on data time, ALERTS samples,
 * the LMDB alert log across close/open, the /api/v1/alerts and
 * /api/v1/rules bodies, and the Alertmanager notifier against a small HTTP
 * server run by the test. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "gpuwatch/alert.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/labels.h"

#define T0 1700000000000LL
#define S 1000LL

static char tmpdir[512];

static int mk_tmp(void **state)
{
    (void)state;
    const char *base = getenv("GW_TEST_TMP");
    if (!base || !*base) base = "/tmp";
    char cmd[600];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", base);
    if (system(cmd) != 0) return -1;
    snprintf(tmpdir, sizeof tmpdir, "%s/gw-alert.XXXXXX", base);
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int rm_tmp(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static struct gw_alert_spec spec(const char *name, const char *host, int gpu, int64_t for_ms, int64_t hold_ms)
{
    struct gw_alert_spec s = {0};
    s.alertname = name;
    s.severity = GW_SEV_CRITICAL;
    s.hostname = host;
    s.gpu = gpu;
    s.detector = "D1";
    s.cls = "gpu_lost";
    s.action = "reset_gpu";
    s.summary = "GPU fell off the bus";
    s.evidence = "xid 79 at t";
    s.score = 0.9;
    s.for_ms = for_ms;
    s.hold_ms = hold_ms;
    return s;
}

/* ---- helpers: find alerts, record transitions ---- */

struct found {
    struct gw_alert v[32];
    size_t n;
};

static int collect(void *ud, const struct gw_alert *al)
{
    struct found *f = ud;
    if (f->n < 32) f->v[f->n++] = *al;
    return 0;
}

static struct found all_alerts(struct gw_alerts *a)
{
    struct found f;
    memset(&f, 0, sizeof f);
    assert_int_equal(gw_alerts_foreach(a, collect, &f), 0);
    return f;
}

struct changes {
    int n;
    enum gw_alert_state st[32];
    uint64_t id[32];
    int64_t fired[32];
};

static void on_change(void *ud, const struct gw_alert *al)
{
    struct changes *c = ud;
    if (c->n < 32) {
        c->st[c->n] = al->state;
        c->id[c->n] = al->id;
        c->fired[c->n] = al->fired_at;
        c->n++;
    }
}

static struct gw_alerts *open_alerts(const char *log_dir, int64_t interval)
{
    struct gw_alerts_opts o;
    gw_alerts_opts_default(&o);
    o.log_dir = log_dir;
    o.samples_interval_ms = interval;
    struct gw_alerts *a = NULL;
    struct gw_error err = {0};
    assert_int_equal(gw_alerts_open(&a, &o, &err), GW_OK);
    return a;
}

/* ---- lifecycle ---- */

static void test_alert_lifecycle(void **state)
{
    (void)state;
    struct gw_alerts *a = open_alerts(NULL, -1);
    struct changes ch = {0};
    gw_alerts_on_change(a, on_change, &ch);
    struct gw_alert_spec s = spec("GpuXidError", "node-a", 3, 60 * S, 120 * S);

    gw_alerts_raise(a, &s, T0);
    struct found f = all_alerts(a);
    assert_int_equal(f.n, 1);
    assert_int_equal(f.v[0].state, GW_ALERT_PENDING);
    assert_int_equal(f.v[0].active_at, T0);
    assert_true(f.v[0].fired_at == INT64_MIN);
    uint64_t id1 = f.v[0].id;

    gw_alerts_raise(a, &s, T0 + 30 * S);
    gw_alerts_advance(a, T0 + 59 * S);
    assert_int_equal(all_alerts(a).v[0].state, GW_ALERT_PENDING);
    gw_alerts_advance(a, T0 + 60 * S);
    f = all_alerts(a);
    assert_int_equal(f.v[0].state, GW_ALERT_FIRING);
    assert_int_equal(f.v[0].fired_at, T0 + 60 * S);
    assert_int_equal(f.v[0].id, id1);

    /* held while raised; resolves once data time passes last raise + hold */
    s.summary = "newer summary";
    gw_alerts_raise(a, &s, T0 + 90 * S);
    gw_alerts_advance(a, T0 + 210 * S);
    f = all_alerts(a);
    assert_int_equal(f.v[0].state, GW_ALERT_FIRING);
    assert_string_equal(f.v[0].summary, "newer summary");
    gw_alerts_advance(a, T0 + 211 * S);
    f = all_alerts(a);
    assert_int_equal(f.n, 1);
    assert_int_equal(f.v[0].state, GW_ALERT_RESOLVED);
    assert_int_equal(f.v[0].resolved_at, T0 + 210 * S);

    /* a raise after resolution starts a new alert */
    gw_alerts_raise(a, &s, T0 + 300 * S);
    f = all_alerts(a);
    assert_int_equal(f.n, 2);
    assert_int_equal(f.v[1].state, GW_ALERT_PENDING);
    assert_int_equal(f.v[1].active_at, T0 + 300 * S);
    assert_true(f.v[1].id > id1);

    /* a pending alert not raised again within hold is dropped unfired */
    struct gw_alert_spec p = spec("GpuSlow", "node-b", -1, 300 * S, 60 * S);
    p.severity = GW_SEV_WARNING;
    gw_alerts_raise(a, &p, T0 + 300 * S);
    gw_alerts_advance(a, T0 + 361 * S);
    f = all_alerts(a);
    int seen = 0;
    for (size_t i = 0; i < f.n; i++)
        if (!strcmp(f.v[i].alertname, "GpuSlow")) {
            seen = 1;
            assert_int_equal(f.v[i].state, GW_ALERT_RESOLVED);
            assert_true(f.v[i].fired_at == INT64_MIN);
            assert_int_equal(f.v[i].resolved_at, T0 + 360 * S);
            assert_int_equal(f.v[i].gpu, -1);
        }
    assert_true(seen);

    /* transitions: pending, firing, resolved, pending (new alert), pending
     * (GpuSlow), then at 360 s the new alert fires and GpuSlow is dropped */
    assert_int_equal(ch.n, 7);
    assert_int_equal(ch.st[0], GW_ALERT_PENDING);
    assert_int_equal(ch.st[1], GW_ALERT_FIRING);
    assert_int_equal(ch.st[2], GW_ALERT_RESOLVED);
    assert_int_equal(ch.st[3], GW_ALERT_PENDING);
    assert_true(ch.id[3] != ch.id[0]);
    assert_int_equal(ch.st[4], GW_ALERT_PENDING);
    assert_int_equal(ch.st[5], GW_ALERT_FIRING);
    assert_int_equal(ch.id[5], ch.id[3]);
    assert_int_equal(ch.st[6], GW_ALERT_RESOLVED);
    assert_true(ch.fired[6] == INT64_MIN);

    /* for 0 fires at once; data time never moves backwards */
    struct gw_alert_spec z = spec("GpuLost", "node-c", 0, 0, 60 * S);
    gw_alerts_raise(a, &z, T0 + 400 * S);
    gw_alerts_advance(a, T0 + 100 * S);
    f = all_alerts(a);
    for (size_t i = 0; i < f.n; i++)
        if (!strcmp(f.v[i].alertname, "GpuLost")) {
            assert_int_equal(f.v[i].state, GW_ALERT_FIRING);
            assert_int_equal(f.v[i].fired_at, T0 + 400 * S);
        }
    struct gw_alerts_stats st;
    gw_alerts_stats(a, &st);
    assert_int_equal(st.data_time, T0 + 361 * S);
    assert_int_equal(gw_alerts_dropped(a), 0);
    gw_alerts_close(a);
}

static void test_alert_identity(void **state)
{
    (void)state;
    struct gw_alerts *a = open_alerts(NULL, -1);
    struct gw_alert_spec s = spec("GpuXidError", "node-a", 0, 0, 60 * S);
    s.extra_name = "xid";
    s.extra_value = "79";
    gw_alerts_raise(a, &s, T0);
    s.extra_value = "48";
    gw_alerts_raise(a, &s, T0);
    s.gpu = 1;
    gw_alerts_raise(a, &s, T0);
    s.hostname = "node-b";
    gw_alerts_raise(a, &s, T0);
    gw_alerts_raise(a, &s, T0 + S);       /* same as the previous */
    s.severity = GW_SEV_WARNING;          /* non-identity: same alert, newer severity */
    gw_alerts_raise(a, &s, T0 + 2 * S);
    struct found f = all_alerts(a);
    assert_int_equal(f.n, 4);
    assert_int_equal(f.v[3].severity, GW_SEV_WARNING);
    assert_int_equal(f.v[3].last_raised, T0 + 2 * S);
    /* a reserved name is not taken as the extra identity label */
    struct gw_alert_spec r = spec("Other", "node-a", 0, 0, 60 * S);
    r.extra_name = "severity";
    r.extra_value = "x";
    gw_alerts_raise(a, &r, T0);
    f = all_alerts(a);
    assert_int_equal(f.n, 5);
    assert_string_equal(f.v[4].extra_name, "");
    /* no alertname: counted, ignored */
    struct gw_alert_spec bad = spec(NULL, "node-a", 0, 0, 1);
    gw_alerts_raise(a, &bad, T0);
    assert_int_equal(gw_alerts_dropped(a), 1);
    gw_alerts_close(a);
}

/* ---- ALERTS samples ---- */

struct series {
    char labels[512];
    int64_t t[64];
    double v[64];
    size_t n;
};
struct drained {
    struct series s[8];
    size_t n;
};

static int on_samples(void *ud, const uint8_t *labels, size_t len, const int64_t *t, const double *v, size_t n)
{
    struct drained *d = ud;
    struct gw_label ls[16];
    size_t nl;
    assert_int_equal(gw_labels_decode(labels, len, ls, 16, &nl), GW_OK);
    char txt[512];
    size_t o = 0;
    for (size_t i = 0; i < nl; i++)
        o += (size_t)snprintf(txt + o, sizeof txt - o, "%.*s=%.*s,", (int)ls[i].name_len, ls[i].name,
                              (int)ls[i].value_len, ls[i].value);
    struct series *s = NULL;
    for (size_t i = 0; i < d->n; i++)
        if (!strcmp(d->s[i].labels, txt)) s = &d->s[i];
    if (!s) {
        assert_true(d->n < 8);
        s = &d->s[d->n++];
        snprintf(s->labels, sizeof s->labels, "%s", txt);
    }
    for (size_t i = 0; i < n; i++) {
        assert_true(s->n < 64);
        if (s->n) assert_true(t[i] > s->t[s->n - 1]);
        s->t[s->n] = t[i];
        s->v[s->n] = v[i];
        s->n++;
    }
    return 0;
}

static int is_stale(double v)
{
    uint64_t b;
    memcpy(&b, &v, 8);
    return b == 0x7ff0000000000002ULL;
}

static void test_alert_samples(void **state)
{
    (void)state;
    struct gw_alerts *a = open_alerts(NULL, 30 * S);
    struct gw_alert_spec s = spec("GpuXidError", "node-a", 3, 60 * S, 60 * S);
    struct drained d = {0};
    for (int64_t t = 0; t <= 150 * S; t += 30 * S) {
        gw_alerts_raise(a, &s, T0 + t);
        gw_alerts_advance(a, T0 + t);
        if (t == 60 * S) assert_int_equal(gw_alerts_drain_samples(a, on_samples, &d), 0);
    }
    gw_alerts_advance(a, T0 + 300 * S);
    assert_int_equal(gw_alerts_drain_samples(a, on_samples, &d), 0);
    assert_int_equal(d.n, 2);
    struct series *pend = NULL, *fire = NULL;
    for (size_t i = 0; i < d.n; i++) {
        if (strstr(d.s[i].labels, "alertstate=pending,")) pend = &d.s[i];
        if (strstr(d.s[i].labels, "alertstate=firing,")) fire = &d.s[i];
    }
    assert_non_null(pend);
    assert_non_null(fire);
    assert_string_equal(pend->labels, "__name__=ALERTS,action=reset_gpu,alertname=GpuXidError,alertstate=pending,"
                                      "class=gpu_lost,detector=D1,gpu=3,hostname=node-a,severity=critical,");
    /* pending: 0, 30 s, stale at 60 s */
    assert_int_equal(pend->n, 3);
    assert_int_equal(pend->t[0], T0);
    assert_int_equal(pend->t[1], T0 + 30 * S);
    assert_true(pend->v[0] == 1.0 && pend->v[1] == 1.0);
    assert_int_equal(pend->t[2], T0 + 60 * S);
    assert_true(is_stale(pend->v[2]));
    /* firing: 60 .. 180 s every 30 s, stale at 210 s (150 + hold 60) */
    assert_int_equal(fire->n, 6);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(fire->t[i], T0 + (60 + 30 * i) * S);
        assert_true(fire->v[i] == 1.0);
    }
    assert_int_equal(fire->t[5], T0 + 210 * S);
    assert_true(is_stale(fire->v[5]));
    /* nothing more */
    struct drained d2 = {0};
    gw_alerts_advance(a, T0 + 900 * S);
    assert_int_equal(gw_alerts_drain_samples(a, on_samples, &d2), 0);
    assert_int_equal(d2.n, 0);
    gw_alerts_close(a);
}

static void test_alert_samples_late_raise(void **state)
{
    (void)state;
    struct gw_alerts *a = open_alerts(NULL, 30 * S);
    struct gw_alert_spec s = spec("GpuXidError", "node-a", 3, 0, 60 * S);
    struct drained d = {0};
    gw_alerts_raise(a, &s, T0);
    gw_alerts_advance(a, T0 + 120 * S);   /* resolved at 60 s: samples 0, 30 s, stale 60 s */
    /* a raise for 50 s arriving after the resolution starts a new alert,
     * whose samples on the same series come after the old stale marker */
    gw_alerts_raise(a, &s, T0 + 50 * S);
    gw_alerts_advance(a, T0 + 130 * S);
    assert_int_equal(gw_alerts_drain_samples(a, on_samples, &d), 0);   /* asserts time order */
    assert_int_equal(d.n, 1);
    assert_int_equal(d.s[0].t[0], T0);
    assert_int_equal(d.s[0].t[1], T0 + 30 * S);
    assert_int_equal(d.s[0].t[2], T0 + 60 * S);
    assert_true(is_stale(d.s[0].v[2]));
    assert_true(d.s[0].n >= 5);
    assert_int_equal(d.s[0].t[3], T0 + 60 * S + 1);
    assert_true(is_stale(d.s[0].v[d.s[0].n - 1]));   /* the new alert resolved at 110 s */
    struct found f = all_alerts(a);
    assert_int_equal(f.n, 2);
    assert_int_equal(f.v[1].active_at, T0 + 50 * S);
    gw_alerts_close(a);
}

/* ---- log ---- */

static void test_alert_log_reload(void **state)
{
    (void)state;
    struct gw_error err = {0};
    struct gw_alerts *a = open_alerts(tmpdir, 30 * S);
    struct gw_alert_spec s = spec("GpuXidError", "node-a", 3, 0, 600 * S);
    s.extra_name = "xid";
    s.extra_value = "79";
    gw_alerts_raise(a, &s, T0);
    struct gw_alert_spec r = spec("NodeSilent", "node-b", -1, 0, 60 * S);
    gw_alerts_raise(a, &r, T0);
    gw_alerts_advance(a, T0 + 120 * S);   /* NodeSilent resolves at T0 + 60 s */
    struct found f = all_alerts(a);
    assert_int_equal(f.n, 2);
    uint64_t id = 0;
    for (size_t i = 0; i < f.n; i++)
        if (!strcmp(f.v[i].alertname, "GpuXidError")) id = f.v[i].id;
    assert_true(id > 0);
    assert_int_equal(gw_alerts_sync(a, &err), GW_OK);
    gw_alerts_close(a);

    a = open_alerts(tmpdir, 30 * S);
    struct changes ch = {0};
    gw_alerts_on_change(a, on_change, &ch);
    f = all_alerts(a);
    assert_int_equal(f.n, 1);   /* the resolved one is not reloaded */
    assert_int_equal(f.v[0].id, id);
    assert_int_equal(f.v[0].state, GW_ALERT_FIRING);
    assert_int_equal(f.v[0].fired_at, T0);
    assert_string_equal(f.v[0].extra_value, "79");
    assert_string_equal(f.v[0].summary, "GPU fell off the bus");
    struct gw_alerts_stats st;
    gw_alerts_stats(a, &st);
    assert_int_equal(st.data_time, T0 + 120 * S);
    /* a raise continues it: no new id, no new firing transition */
    gw_alerts_raise(a, &s, T0 + 150 * S);
    f = all_alerts(a);
    assert_int_equal(f.n, 1);
    assert_int_equal(f.v[0].id, id);
    assert_int_equal(f.v[0].last_raised, T0 + 150 * S);
    assert_int_equal(ch.n, 0);
    /* ALERTS continues after the last raise seen before the restart (T0) */
    struct drained d = {0};
    gw_alerts_advance(a, T0 + 180 * S);
    assert_int_equal(gw_alerts_drain_samples(a, on_samples, &d), 0);
    assert_int_equal(d.n, 1);
    assert_int_equal(d.s[0].t[0], T0 + 30 * S);
    /* a new alert gets a larger id */
    gw_alerts_raise(a, &r, T0 + 200 * S);
    f = all_alerts(a);
    assert_int_equal(f.n, 2);
    assert_true(f.v[1].id > id);
    assert_int_equal(gw_alerts_sync(a, &err), GW_OK);
    /* the log holds every alert, resolved ones included, by activeAt */
    struct found lf;
    memset(&lf, 0, sizeof lf);
    assert_int_equal(gw_alerts_log_foreach(a, T0, T0 + 1000 * S, collect, &lf, &err), GW_OK);
    assert_int_equal(lf.n, 3);
    assert_int_equal(lf.v[0].active_at, T0);
    assert_int_equal(lf.v[2].active_at, T0 + 200 * S);
    int resolved = 0;
    for (size_t i = 0; i < lf.n; i++) resolved += lf.v[i].state == GW_ALERT_RESOLVED;
    assert_int_equal(resolved, 1);
    memset(&lf, 0, sizeof lf);
    assert_int_equal(gw_alerts_log_foreach(a, T0 + 1, T0 + 1000 * S, collect, &lf, &err), GW_OK);
    assert_int_equal(lf.n, 1);
    gw_alerts_close(a);
}

/* ---- JSON ---- */

static void test_alert_json(void **state)
{
    (void)state;
    struct gw_alerts *a = open_alerts(NULL, 30 * S);
    struct gw_alert_rule r1 = {"GpuXidError", "D1", "XID onset on a GPU", GW_SEV_CRITICAL, 0, 1800 * S};
    struct gw_alert_rule r2 = {"GpuMemoryDegraded", "D2", "remaps", GW_SEV_WARNING, 60 * S, 500};
    struct gw_alert_rule r3 = {"GpuXidRepeat", "D1", "repeats", GW_SEV_WARNING, 0, 0};
    assert_int_equal(gw_alerts_add_rule(a, &r2), GW_OK);
    assert_int_equal(gw_alerts_add_rule(a, &r1), GW_OK);
    assert_int_equal(gw_alerts_add_rule(a, &r3), GW_OK);
    struct gw_alert_spec s = spec("GpuXidError", "node-a", 3, 0, 1800 * S);
    s.evidence = "xid=79 <since> \"t\"";
    s.extra_name = "xid";
    s.extra_value = "79";
    gw_alerts_raise(a, &s, T0 + 500);
    gw_alerts_advance(a, T0 + 1000);

    struct gw_buf b;
    gw_buf_init(&b, 1 << 20);
    assert_int_equal(gw_alerts_api_alerts(a, &b), GW_OK);
    const char *alert =
        "{\"labels\":{\"action\":\"reset_gpu\",\"alertname\":\"GpuXidError\",\"class\":\"gpu_lost\","
        "\"detector\":\"D1\",\"gpu\":\"3\",\"hostname\":\"node-a\",\"severity\":\"critical\",\"xid\":\"79\"},"
        "\"annotations\":{\"evidence\":\"xid=79 \\u003csince\\u003e \\\"t\\\"\",\"score\":\"0.9\","
        "\"summary\":\"GPU fell off the bus\"},\"state\":\"firing\",\"activeAt\":\"2023-11-14T22:13:20.5Z\","
        "\"value\":\"9e-01\"}";
    char want[2048];
    snprintf(want, sizeof want, "{\"status\":\"success\",\"data\":{\"alerts\":[%s]}}", alert);
    assert_int_equal(gw_buf_putc(&b, 0), GW_OK);
    assert_string_equal((const char *)b.data, want);

    gw_buf_reset(&b);
    assert_int_equal(gw_alerts_api_rules(a, NULL, NULL, 0, NULL, 0, &b), GW_OK);
    gw_buf_putc(&b, 0);
    const char *ts = "2023-11-14T22:13:21Z";
    char want_rules[8192];
    snprintf(want_rules, sizeof want_rules,
             "{\"status\":\"success\",\"data\":{\"groups\":["
             "{\"name\":\"gpuwatch-D1\",\"file\":\"gpuwatch-detectors\",\"rules\":["
             "{\"state\":\"firing\",\"name\":\"GpuXidError\",\"query\":\"XID onset on a GPU\",\"duration\":0,"
             "\"keepFiringFor\":1800,\"labels\":{\"detector\":\"D1\",\"severity\":\"critical\"},\"annotations\":{},"
             "\"alerts\":[%s],\"health\":\"ok\",\"evaluationTime\":0,\"lastEvaluation\":\"%s\",\"type\":\"alerting\"},"
             "{\"state\":\"inactive\",\"name\":\"GpuXidRepeat\",\"query\":\"repeats\",\"duration\":0,"
             "\"keepFiringFor\":0,\"labels\":{\"detector\":\"D1\",\"severity\":\"warning\"},\"annotations\":{},"
             "\"alerts\":[],\"health\":\"ok\",\"evaluationTime\":0,\"lastEvaluation\":\"%s\",\"type\":\"alerting\"}],"
             "\"interval\":30,\"limit\":0,\"evaluationTime\":0,\"lastEvaluation\":\"%s\"},"
             "{\"name\":\"gpuwatch-D2\",\"file\":\"gpuwatch-detectors\",\"rules\":["
             "{\"state\":\"inactive\",\"name\":\"GpuMemoryDegraded\",\"query\":\"remaps\",\"duration\":60,"
             "\"keepFiringFor\":0.5,\"labels\":{\"detector\":\"D2\",\"severity\":\"warning\"},\"annotations\":{},"
             "\"alerts\":[],\"health\":\"ok\",\"evaluationTime\":0,\"lastEvaluation\":\"%s\",\"type\":\"alerting\"}],"
             "\"interval\":30,\"limit\":0,\"evaluationTime\":0,\"lastEvaluation\":\"%s\"}]}}",
             alert, ts, ts, ts, ts, ts);
    assert_string_equal((const char *)b.data, want_rules);

    /* filters */
    const char *names[] = {"GpuMemoryDegraded"};
    gw_buf_reset(&b);
    assert_int_equal(gw_alerts_api_rules(a, "alert", names, 1, NULL, 0, &b), GW_OK);
    gw_buf_putc(&b, 0);
    assert_non_null(strstr((const char *)b.data, "\"name\":\"gpuwatch-D2\""));
    assert_null(strstr((const char *)b.data, "gpuwatch-D1"));
    const char *groups[] = {"gpuwatch-D1"};
    gw_buf_reset(&b);
    assert_int_equal(gw_alerts_api_rules(a, NULL, NULL, 0, groups, 1, &b), GW_OK);
    gw_buf_putc(&b, 0);
    assert_non_null(strstr((const char *)b.data, "GpuXidRepeat"));
    assert_null(strstr((const char *)b.data, "gpuwatch-D2"));
    gw_buf_reset(&b);
    assert_int_equal(gw_alerts_api_rules(a, "record", NULL, 0, NULL, 0, &b), GW_OK);
    gw_buf_putc(&b, 0);
    assert_string_equal((const char *)b.data, "{\"status\":\"success\",\"data\":{\"groups\":[]}}");
    gw_buf_reset(&b);
    assert_int_equal(gw_alerts_api_rules(a, "bogus", NULL, 0, NULL, 0, &b), GW_EINVAL);
    /* no table: empty answers */
    gw_buf_reset(&b);
    assert_int_equal(gw_alerts_api_alerts(NULL, &b), GW_OK);
    gw_buf_putc(&b, 0);
    assert_string_equal((const char *)b.data, "{\"status\":\"success\",\"data\":{\"alerts\":[]}}");
    gw_buf_free(&b);
    gw_alerts_close(a);
}

/* ---- notifier against a small HTTP server ---- */

struct am_server {
    int fd;
    uint16_t port;
    pthread_t thr;
    _Atomic int stop;
    pthread_mutex_t mu;
    char *bodies[64];
    int64_t when[64];
    char paths[64][128];
    char auth[64][128];   /* Authorization header values ("" when absent) */
    int n;
    int status;   /* answer */
};

static void *am_main(void *arg)
{
    struct am_server *s = arg;
    while (!s->stop) {
        struct pollfd p = {s->fd, POLLIN, 0};
        if (poll(&p, 1, 50) <= 0) continue;
        int c = accept(s->fd, NULL, NULL);
        if (c < 0) continue;
        char buf[1 << 16];
        size_t len = 0;
        while (!s->stop) {
            struct pollfd pc = {c, POLLIN, 0};
            if (poll(&pc, 1, 50) <= 0) continue;
            ssize_t r = recv(c, buf + len, sizeof buf - 1 - len, 0);
            if (r <= 0) break;
            len += (size_t)r;
            buf[len] = 0;
            char *end = strstr(buf, "\r\n\r\n");
            if (!end) continue;
            size_t hl = (size_t)(end + 4 - buf);
            char *cl = strcasestr(buf, "Content-Length:");
            size_t blen = cl && cl < end ? (size_t)strtoul(cl + 15, NULL, 10) : 0;
            if (len < hl + blen) continue;
            pthread_mutex_lock(&s->mu);
            if (s->n < 64) {
                s->bodies[s->n] = strndup(buf + hl, blen);
                s->when[s->n] = gw_now_ms();
                sscanf(buf, "POST %127s", s->paths[s->n]);
                char *au = strcasestr(buf, "\r\nAuthorization: ");
                if (au && au < end)
                    snprintf(s->auth[s->n], sizeof s->auth[0], "%.*s", (int)strcspn(au + 17, "\r"), au + 17);
                s->n++;
            }
            int st = s->status;
            pthread_mutex_unlock(&s->mu);
            char resp[128];
            int rl = snprintf(resp, sizeof resp, "HTTP/1.1 %d X\r\nContent-Length: 0\r\n\r\n", st);
            if (send(c, resp, (size_t)rl, MSG_NOSIGNAL) < 0) break;
            memmove(buf, buf + hl + blen, len - hl - blen);
            len -= hl + blen;
        }
        close(c);
    }
    return NULL;
}

static void am_start(struct am_server *s)
{
    memset(s, 0, sizeof *s);
    s->status = 200;
    pthread_mutex_init(&s->mu, NULL);
    s->fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(s->fd >= 0);
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(s->fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(s->fd, 8), 0);
    socklen_t sl = sizeof sa;
    getsockname(s->fd, (struct sockaddr *)&sa, &sl);
    s->port = ntohs(sa.sin_port);
    assert_int_equal(pthread_create(&s->thr, NULL, am_main, s), 0);
}

static void am_stop(struct am_server *s)
{
    s->stop = 1;
    pthread_join(s->thr, NULL);
    close(s->fd);
    for (int i = 0; i < s->n; i++) free(s->bodies[i]);
    pthread_mutex_destroy(&s->mu);
}

static int am_wait(struct am_server *s, int n, int timeout_ms)
{
    for (int i = 0; i < timeout_ms / 10; i++) {
        pthread_mutex_lock(&s->mu);
        int k = s->n;
        pthread_mutex_unlock(&s->mu);
        if (k >= n) return 1;
        usleep(10000);
    }
    return 0;
}

/* Parses "...\"endsAt\":\"2026-...Z\"" of body into ms. */
static int64_t json_time(const char *body, const char *field)
{
    char key[32];
    snprintf(key, sizeof key, "\"%s\":\"", field);
    const char *p = strstr(body, key);
    assert_non_null(p);
    p += strlen(key);
    struct tm tm = {0};
    int ms = 0;
    char frac[8] = "";
    int n = sscanf(p, "%4d-%2d-%2dT%2d:%2d:%2d%7[.0-9]", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                   &tm.tm_min, &tm.tm_sec, frac);
    assert_true(n >= 6);
    if (frac[0] == '.') {
        char d[4] = "000";
        for (int i = 0; i < 3 && frac[1 + i]; i++) d[i] = frac[1 + i];
        ms = (int)strtol(d, NULL, 10);
    }
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return (int64_t)timegm(&tm) * 1000 + ms;
}

static void test_alert_notifier(void **state)
{
    (void)state;
    struct am_server am;
    am_start(&am);
    struct gw_alerts *a = open_alerts(NULL, 30 * S);
    int64_t t0 = gw_now_ms() - 3600 * S;
    t0 -= t0 % 1000;
    struct gw_alert_spec s = spec("GpuXidError", "node-a", 3, 0, 60 * S);
    gw_alerts_raise(a, &s, t0);
    struct gw_alert_spec p = spec("GpuPending", "node-a", 1, 3600 * S, 7200 * S);
    gw_alerts_raise(a, &p, t0);   /* pending: never sent */

    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/am/", am.port);
    const char *urls[] = {url};
    struct gw_notifier_opts no = {.urls = urls, .n_urls = 1, .external_url = "http://gw.example:9201/",
                                  .resend_ms = 200, .timeout_ms = 2000};
    struct gw_error err = {0};
    const char *bad[] = {"ftp://x"};
    struct gw_notifier_opts nb = {.urls = bad, .n_urls = 1, .resend_ms = 200, .timeout_ms = 2000};
    assert_int_equal(gw_alerts_notifier_start(a, &nb, &err), GW_EINVAL);
    assert_non_null(strstr(err.msg, "ftp://x"));
    assert_int_equal(gw_alerts_notifier_start(a, &no, &err), GW_OK);

    assert_true(am_wait(&am, 1, 3000));
    pthread_mutex_lock(&am.mu);
    const char *b0 = am.bodies[0];
    int64_t w0 = am.when[0];
    assert_string_equal(am.paths[0], "/am/api/v2/alerts");
    pthread_mutex_unlock(&am.mu);
    assert_true(b0[0] == '[');
    assert_non_null(strstr(b0, "\"labels\":{\"action\":\"reset_gpu\",\"alertname\":\"GpuXidError\",\"class\":\"gpu_lost\","
                               "\"detector\":\"D1\",\"gpu\":\"3\",\"hostname\":\"node-a\",\"severity\":\"critical\"}"));
    assert_null(strstr(b0, "GpuPending"));
    assert_non_null(strstr(b0, "\"generatorURL\":\"http://gw.example:9201/graph?g0.expr=ALERTS%7Balertname%3D%22GpuXidError%22%7D\\u0026g0.tab=1\""));
    assert_int_equal(json_time(b0, "startsAt"), t0);
    int64_t ends = json_time(b0, "endsAt");
    assert_true(ends >= w0 + 4 * 200 - 300 && ends <= w0 + 4 * 200 + 50);

    /* resent after resend_ms */
    assert_true(am_wait(&am, 2, 3000));
    pthread_mutex_lock(&am.mu);
    int64_t gap = am.when[1] - am.when[0];
    assert_non_null(strstr(am.bodies[1], "GpuXidError"));
    pthread_mutex_unlock(&am.mu);
    assert_true(gap >= 150);

    /* resolved: sent at once with endsAt = resolvedAt */
    pthread_mutex_lock(&am.mu);
    int before = am.n;
    pthread_mutex_unlock(&am.mu);
    gw_alerts_advance(a, t0 + 61 * S);
    assert_true(am_wait(&am, before + 1, 3000));
    pthread_mutex_lock(&am.mu);
    const char *br = am.bodies[before];
    assert_non_null(strstr(br, "GpuXidError"));
    assert_int_equal(json_time(br, "endsAt"), t0 + 60 * S);
    pthread_mutex_unlock(&am.mu);
    /* and again while it stays in the resolved window */
    assert_true(am_wait(&am, before + 2, 3000));

    /* an Alertmanager answering errors: counted, retried */
    pthread_mutex_lock(&am.mu);
    am.status = 500;
    pthread_mutex_unlock(&am.mu);
    struct gw_notifier_stats st0, st1;
    gw_alerts_notifier_stats(a, &st0);
    assert_true(st0.sent >= 3);
    for (int i = 0; i < 300; i++) {
        gw_alerts_notifier_stats(a, &st1);
        if (st1.errors > 0) break;
        usleep(10000);
    }
    assert_true(st1.errors > 0);
    gw_alerts_close(a);
    am_stop(&am);
}

static void test_alert_notifier_down(void **state)
{
    (void)state;
    /* a port nobody listens on: errors counted, close does not hang */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    socklen_t sl = sizeof sa;
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u", ntohs(sa.sin_port));
    close(fd);
    struct gw_alerts *a = open_alerts(NULL, 30 * S);
    struct gw_alert_spec s = spec("GpuXidError", "node-a", 3, 0, 60 * S);
    gw_alerts_raise(a, &s, gw_now_ms());
    const char *urls[] = {url};
    struct gw_notifier_opts no = {.urls = urls, .n_urls = 1, .resend_ms = 200, .timeout_ms = 500};
    struct gw_error err = {0};
    assert_int_equal(gw_alerts_notifier_start(a, &no, &err), GW_OK);
    struct gw_notifier_stats st;
    for (int i = 0; i < 300; i++) {
        gw_alerts_notifier_stats(a, &st);
        if (st.errors > 0) break;
        usleep(10000);
    }
    assert_true(st.errors > 0);
    assert_int_equal(st.sent, 0);
    gw_alerts_close(a);
}

/* Credentials from the options reach Alertmanager: basic from a password
 * file, then a bearer token file that is re-read at every request. */
static void test_alert_notifier_auth(void **state)
{
    (void)state;
    struct am_server am;
    char url[64], pw[64], tok[64];
    am_start(&am);
    snprintf(url, sizeof url, "http://127.0.0.1:%u/", am.port);
    snprintf(pw, sizeof pw, "/tmp/gw-am-pw.%d", (int)getpid());
    snprintf(tok, sizeof tok, "/tmp/gw-am-tok.%d", (int)getpid());
    FILE *f = fopen(pw, "w");
    assert_non_null(f);
    fputs("pw\n", f);   /* the newline is not part of the password */
    fclose(f);
    f = fopen(tok, "w");
    assert_non_null(f);
    fputs("t1\n", f);
    fclose(f);
    struct gw_alert_spec s = spec("GpuXidError", "node-a", 3, 0, 60 * S);
    const char *urls[] = {url};
    struct gw_notifier_opts no = {.urls = urls, .n_urls = 1, .resend_ms = 200, .timeout_ms = 2000};
    struct gw_error err = {0};
    no.auth.username = "am";
    no.auth.password_file = pw;
    struct gw_alerts *a = open_alerts(NULL, 30 * S);
    gw_alerts_raise(a, &s, gw_now_ms());
    assert_int_equal(gw_alerts_notifier_start(a, &no, &err), GW_OK);
    assert_true(am_wait(&am, 1, 5000));
    gw_alerts_close(a);
    pthread_mutex_lock(&am.mu);
    assert_string_equal(am.auth[0], "Basic YW06cHc=");   /* base64("am:pw") */
    int n0 = am.n;
    pthread_mutex_unlock(&am.mu);

    memset(&no.auth, 0, sizeof no.auth);
    no.auth.bearer_token_file = tok;
    a = open_alerts(NULL, 30 * S);
    gw_alerts_raise(a, &s, gw_now_ms());
    assert_int_equal(gw_alerts_notifier_start(a, &no, &err), GW_OK);
    assert_true(am_wait(&am, n0 + 1, 5000));
    f = fopen(tok, "w");   /* rotated: the next resend carries the new token */
    assert_non_null(f);
    fputs("t2", f);
    fclose(f);
    assert_true(am_wait(&am, n0 + 3, 5000));   /* resent every 200 ms */
    gw_alerts_close(a);
    pthread_mutex_lock(&am.mu);
    assert_string_equal(am.auth[n0], "Bearer t1");
    assert_string_equal(am.auth[am.n - 1], "Bearer t2");
    pthread_mutex_unlock(&am.mu);

    /* contradicting options and unreadable files are refused at the start */
    a = open_alerts(NULL, 30 * S);
    no.auth.username = "am";
    assert_int_equal(gw_alerts_notifier_start(a, &no, &err), GW_EINVAL);
    assert_non_null(strstr(err.msg, "at most one of bearer and basic"));
    memset(&no.auth, 0, sizeof no.auth);
    no.tls.ca_file = "/nonexistent/ca.pem";
    assert_int_equal(gw_alerts_notifier_start(a, &no, &err), GW_EINVAL);
    assert_non_null(strstr(err.msg, "/nonexistent/ca.pem"));
    gw_alerts_close(a);
    am_stop(&am);
    unlink(pw);
    unlink(tok);
}

static void test_alert_format(void **state)
{
    (void)state;
    /* samples off, cap on active alerts: info ones make room first */
    struct gw_alerts_opts o;
    gw_alerts_opts_default(&o);
    o.max_active = 2;
    o.samples_interval_ms = -1;
    struct gw_alerts *a = NULL;
    assert_int_equal(gw_alerts_open(&a, &o, NULL), GW_OK);
    struct gw_alert_spec i1 = spec("Info", "n1", -1, 0, 60 * S);
    i1.severity = GW_SEV_INFO;
    struct gw_alert_spec c1 = spec("Crit", "n1", -1, 0, 60 * S);
    struct gw_alert_spec c2 = spec("Crit", "n2", -1, 0, 60 * S);
    struct gw_alert_spec c3 = spec("Crit", "n3", -1, 0, 60 * S);
    gw_alerts_raise(a, &i1, T0);
    gw_alerts_raise(a, &c1, T0);
    gw_alerts_raise(a, &c2, T0);   /* evicts the info alert */
    gw_alerts_raise(a, &c3, T0);   /* no room: dropped */
    struct gw_alerts_stats st;
    gw_alerts_stats(a, &st);
    assert_int_equal(st.firing, 2);
    assert_int_equal(st.dropped, 1);
    gw_alerts_close(a);
    assert_string_equal(gw_severity_name(GW_SEV_WARNING), "warning");
    assert_string_equal(gw_alert_state_name(GW_ALERT_PENDING), "pending");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alert_lifecycle),
        cmocka_unit_test(test_alert_identity),
        cmocka_unit_test(test_alert_samples),
        cmocka_unit_test(test_alert_samples_late_raise),
        cmocka_unit_test_setup_teardown(test_alert_log_reload, mk_tmp, rm_tmp),
        cmocka_unit_test(test_alert_json),
        cmocka_unit_test(test_alert_notifier),
        cmocka_unit_test(test_alert_notifier_down),
        cmocka_unit_test(test_alert_notifier_auth),
        cmocka_unit_test(test_alert_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
