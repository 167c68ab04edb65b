/* test_sim_output.c - the simulator's output: request bodies decode with
 * the project's own remote-write decoder back to the generator's series
 * and values, per shard in generation order; --out files and index.tsv
 * round-trip and are byte-identical for the same seed; over HTTP every
 * series stays on one connection in time order with the remote-write
 * headers, and a slow connection holds the others back (lockstep); a 503
 * is retried until success; a 400 is reported with the receiver's text;
 * dry-run counts the same samples. Runs a 4-node smoke cluster for a few
 * simulated minutes. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpuwatch/arena.h"
#include "gpuwatch/buf.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/labels.h"
#include "gpuwatch/rw.h"
#include "gpuwatch/sim.h"

#define SIM_MINUTES 6

/* ------------------------------------------------------------ fixtures */

struct fx {
    struct gw_sim_config cfg;
    struct gw_sim_timeline *tl;
    char dir[512];
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    struct gw_error err = {0};
    const char *base = getenv("GW_TEST_TMP");
    if (!f) return -1;
    if (!base || !*base) base = "/tmp";
    mkdir(base, 0777);
    snprintf(f->dir, sizeof f->dir, "%s/gw-sim-output-XXXXXX", base);
    if (!mkdtemp(f->dir)) return -1;
    gw_sim_config_default(&f->cfg);
    if (gw_sim_config_profile(&f->cfg, "smoke", &err) != GW_OK) return -1;
    f->cfg.seed = 7;
    f->cfg.duration_ms = SIM_MINUTES * 60000;
    f->cfg.start_ms = 1764000000000LL;   /* fixed: a deterministic run */
    if (gw_sim_config_check(&f->cfg, &err) != GW_OK) return -1;
    if (gw_sim_timeline_build(&f->cfg, &f->tl, &err) != GW_OK) {
        fprintf(stderr, "timeline: %s\n", err.msg);
        return -1;
    }
    *state = f;
    return 0;
}

static void rm_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[1024];
    if (!d) return;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) rm_tree(p);
        else unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

static int teardown(void **state)
{
    struct fx *f = *state;
    gw_sim_timeline_free(f->tl);
    rm_tree(f->dir);
    free(f);
    return 0;
}

static struct gw_sim_gen *gen(struct fx *f)
{
    struct gw_sim_gen *g = NULL;
    struct gw_error err = {0};
    assert_int_equal(gw_sim_gen_open(&g, f->tl, NULL, NULL, &err), GW_OK);
    return g;
}

/* Expected samples of every shard in generation order (a second generator). */
struct exp_sample { uint32_t id; int64_t t; uint64_t bits; };
struct expected {
    struct exp_sample **s;
    size_t *n, *cap, *pos;
    unsigned shards;
    uint64_t total;
    struct gw_sim_gen *g;
};

static void expected_build(struct fx *f, unsigned shards, struct expected *e)
{
    struct gw_sim_scrape sc;
    struct gw_error err = {0};
    int rc;
    memset(e, 0, sizeof *e);
    e->shards = shards;
    e->s = calloc(shards, sizeof *e->s);
    e->n = calloc(shards, sizeof *e->n);
    e->cap = calloc(shards, sizeof *e->cap);
    e->pos = calloc(shards, sizeof *e->pos);
    e->g = gen(f);
    while ((rc = gw_sim_gen_next(e->g, &sc, &err)) == 1) {
        for (size_t i = 0; i < sc.n; i++) {
            unsigned k = sc.series[i] % shards;
            if (e->n[k] == e->cap[k]) {
                e->cap[k] = e->cap[k] ? e->cap[k] * 2 : 4096;
                e->s[k] = realloc(e->s[k], e->cap[k] * sizeof **e->s);
                assert_non_null(e->s[k]);
            }
            struct exp_sample *x = &e->s[k][e->n[k]++];
            x->id = sc.series[i];
            x->t = sc.t;
            memcpy(&x->bits, &sc.v[i], 8);
            e->total++;
        }
    }
    assert_int_equal(rc, 0);
    assert_true(e->total > 1000);
}

static void expected_free(struct expected *e)
{
    for (unsigned k = 0; k < e->shards; k++) free(e->s[k]);
    free(e->s);
    free(e->n);
    free(e->cap);
    free(e->pos);
    gw_sim_gen_close(e->g);
}

/* Decodes one snappy body and checks it against shard k's next expected
 * samples. Returns samples in it; *n_meta gets the metadata count. */
static uint64_t check_body(struct expected *e, unsigned k, const uint8_t *body, size_t len, size_t *n_meta,
                           int64_t *min_t, int64_t *max_t)
{
    struct gw_buf pb;
    struct gw_arena a;
    struct gw_rw_request req;
    struct gw_error err = {0};
    uint64_t n = 0;
    gw_buf_init(&pb, GW_RW_MAX_BODY);
    gw_arena_init(&a, 1 << 16, 0);
    assert_int_equal(gw_snappy_decode(body, len, GW_RW_MAX_BODY, &pb, &err), GW_OK);
    assert_int_equal(gw_rw_decode(pb.data, pb.len, 1, &a, &req, &err), GW_OK);
    *n_meta = req.n_metadata;
    *min_t = INT64_MAX;
    *max_t = INT64_MIN;
    for (size_t i = 0; i < req.n_series; i++) {
        const struct gw_rw_series *s = &req.series[i];
        assert_int_equal(s->n_samples, 1);
        assert_true(e->pos[k] < e->n[k]);
        const struct exp_sample *x = &e->s[k][e->pos[k]++];
        size_t cl = 0;
        const uint8_t *canon = gw_sim_gen_series_labels(e->g, x->id, &cl);
        size_t need = gw_labels_encoded_size(s->labels, s->n_labels);
        uint8_t *got = malloc(need ? need : 1);
        assert_int_equal(gw_labels_encode(s->labels, s->n_labels, got), need);
        assert_int_equal(need, cl);
        assert_memory_equal(got, canon, cl);
        free(got);
        assert_int_equal(s->samples[0].t, x->t);
        uint64_t bits;
        memcpy(&bits, &s->samples[0].v, 8);
        assert_int_equal(bits, x->bits);
        if (x->t < *min_t) *min_t = x->t;
        if (x->t > *max_t) *max_t = x->t;
        n++;
    }
    gw_arena_free(&a);
    gw_buf_free(&pb);
    return n;
}

static int count_families(void *ud, const char *m, const char *t, const char *h)
{
    (void)m; (void)t; (void)h;
    (*(size_t *)ud)++;
    return GW_OK;
}

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n + 1);
    assert_int_equal(fread(b, 1, (size_t)n, fp), (size_t)n);
    fclose(fp);
    *len = (size_t)n;
    return b;
}

/* ---------------------------------------------------------------- files */

static void test_sim_output_files_roundtrip(void **state)
{
    struct fx *f = *state;
    struct gw_sim_gen *g = gen(f);
    struct gw_sim_output_opts o = {.out_dir = f->dir, .connections = 3, .max_samples_per_request = 700};
    struct gw_sim_output_stats st;
    struct gw_error err = {0};
    struct expected e;
    size_t families = 0;

    assert_int_equal(gw_sim_output_run(g, &o, &st, &err), GW_OK);
    gw_sim_gen_families(g, count_families, &families);
    assert_true(families > 0);
    assert_int_equal(st.series, gw_sim_gen_series_count(g));
    gw_sim_gen_close(g);

    expected_build(f, 3, &e);
    assert_int_equal(st.samples, e.total);

    char path[1024], line[256];
    snprintf(path, sizeof path, "%s/index.tsv", f->dir);
    FILE *idx = fopen(path, "r");
    assert_non_null(idx);
    assert_non_null(fgets(line, sizeof line, idx));
    assert_string_equal(line, "file\tsamples\tmin_t\tmax_t\tshard\n");
    uint64_t files = 0, samples = 0;
    while (fgets(line, sizeof line, idx)) {
        char name[64], mins[32], maxs[32];
        unsigned long long n;
        unsigned shard;
        assert_int_equal(sscanf(line, "%63s %llu %31s %31s %u", name, &n, mins, maxs, &shard), 5);
        files++;
        char want[32];
        snprintf(want, sizeof want, "%09" PRIu64 ".rw", files);
        assert_string_equal(name, want);   /* numbered in order, none missing */
        snprintf(path, sizeof path, "%s/%s", f->dir, name);
        size_t len, n_meta;
        uint8_t *body = slurp(path, &len);
        int64_t mint, maxt;
        assert_true(shard < 3);
        uint64_t got = check_body(&e, shard, body, len, &n_meta, &mint, &maxt);
        free(body);
        assert_int_equal(got, n);
        assert_true(n <= 700);
        if (files == 1) {
            assert_int_equal(n, 0);
            assert_int_equal(n_meta, families);   /* metadata first */
            assert_string_equal(mins, "-");
        } else {
            assert_int_equal(n_meta, 0);
            assert_true(n > 0);
            assert_int_equal(strtoll(mins, NULL, 10), mint);
            assert_int_equal(strtoll(maxs, NULL, 10), maxt);
        }
        samples += n;
    }
    fclose(idx);
    assert_int_equal(files, st.requests);
    assert_int_equal(samples, st.samples);
    for (unsigned k = 0; k < 3; k++) assert_int_equal(e.pos[k], e.n[k]);   /* all consumed, in order */
    expected_free(&e);
}

static void test_sim_output_dry_run_counts(void **state)
{
    struct fx *f = *state;
    struct gw_sim_gen *g = gen(f);
    struct gw_sim_output_opts o = {.connections = 4, .max_samples_per_request = 2000};
    struct gw_sim_output_stats st;
    struct gw_error err = {0};
    struct expected e;
    assert_int_equal(gw_sim_output_run(g, &o, &st, &err), GW_OK);
    gw_sim_gen_close(g);
    expected_build(f, 4, &e);
    assert_int_equal(st.samples, e.total);
    assert_true(st.requests >= 1 + e.total / 2000);
    assert_true(st.bytes > 0);
    expected_free(&e);

    g = gen(f);
    o.speed = -1;
    assert_int_equal(gw_sim_output_run(g, &o, &st, &err), GW_EINVAL);
    o.speed = 0;
    o.connections = 100000;
    assert_int_equal(gw_sim_output_run(g, &o, &st, &err), GW_EINVAL);
    o.connections = 1;
    o.url = "ftp://127.0.0.1:1/api/v1/write";   /* https is fine, other schemes are not */
    assert_int_equal(gw_sim_output_run(g, &o, &st, &err), GW_EUNSUPPORTED);
    gw_sim_gen_close(g);
}

/* --------------------------------------------------------- HTTP server */

struct rx {                    /* one received request */
    int conn;
    uint8_t *body;
    size_t len;
};

struct srv {
    int lfd, port;
    pthread_t th;
    pthread_mutex_t mu;
    int stop;
    int fail_first;            /* answer 503 to this many requests */
    int refuse;                /* answer 400 to every request */
    int slow_conn;             /* this connection (id + 1; 0 none) answers 5 ms late */
    int conns, requests;
    int bad_headers;
    struct rx *rx;
    size_t n_rx, cap_rx;
    pthread_t conn_th[64];
    int conn_fd[64];
};

struct conn_arg { struct srv *s; int fd, id; };

static int read_req(int fd, char *head, size_t cap, uint8_t **body, size_t *blen)
{
    size_t n = 0;
    char *end = NULL;
    while (!end) {
        if (n + 1 >= cap) return 0;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 10000) <= 0) return 0;
        ssize_t r = recv(fd, head + n, cap - 1 - n, 0);
        if (r <= 0) return 0;
        n += (size_t)r;
        head[n] = '\0';
        end = strstr(head, "\r\n\r\n");
    }
    size_t hl = (size_t)(end - head) + 4;
    const char *cl = strcasestr(head, "\r\nContent-Length:");
    size_t clen = cl ? (size_t)strtoul(cl + 17, NULL, 10) : 0;
    if (clen > (64u << 20)) return 0;
    *body = malloc(clen + 1);
    size_t have = n - hl < clen ? n - hl : clen;
    memcpy(*body, head + hl, have);
    while (have < clen) {
        ssize_t r = recv(fd, *body + have, clen - have, 0);
        if (r <= 0) { free(*body); return 0; }
        have += (size_t)r;
    }
    head[hl] = '\0';
    *blen = clen;
    return 1;
}

static void *conn_main(void *arg)
{
    struct conn_arg *ca = arg;
    struct srv *s = ca->s;
    char *head = malloc(65536);
    uint8_t *body;
    size_t blen;
    while (read_req(ca->fd, head, 65536, &body, &blen)) {
        int ok_headers = strstr(head, "POST /api/v1/write HTTP/1.1\r\n") == head &&
                         strcasestr(head, "\r\nContent-Encoding: snappy\r\n") &&
                         strcasestr(head, "\r\nContent-Type: application/x-protobuf\r\n") &&
                         strcasestr(head, "\r\nX-Prometheus-Remote-Write-Version: 0.1.0\r\n") &&
                         strcasestr(head, "\r\nUser-Agent: gpuwatch-simulate\r\n");
        const char *resp;
        pthread_mutex_lock(&s->mu);
        s->requests++;
        s->bad_headers += !ok_headers;
        if (s->refuse) {
            resp = "HTTP/1.1 400 Bad Request\r\nContent-Length: 27\r\n\r\nout of order sample: bad t\n";
            free(body);
        } else if (s->fail_first > 0) {
            s->fail_first--;
            resp = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 5\r\n\r\nbusy\n";
            free(body);
        } else {
            if (s->n_rx == s->cap_rx) {
                s->cap_rx = s->cap_rx ? s->cap_rx * 2 : 256;
                s->rx = realloc(s->rx, s->cap_rx * sizeof *s->rx);
            }
            s->rx[s->n_rx++] = (struct rx){.conn = ca->id, .body = body, .len = blen};
            resp = "HTTP/1.1 204 No Content\r\n\r\n";
        }
        int slow = s->slow_conn == ca->id + 1;
        pthread_mutex_unlock(&s->mu);
        if (slow) usleep(5000);
        if (send(ca->fd, resp, strlen(resp), MSG_NOSIGNAL) < 0) break;
    }
    free(head);
    close(ca->fd);
    free(ca);
    return NULL;
}

static void *accept_main(void *arg)
{
    struct srv *s = arg;
    for (;;) {
        struct pollfd p = {.fd = s->lfd, .events = POLLIN};
        pthread_mutex_lock(&s->mu);
        int stop = s->stop;
        pthread_mutex_unlock(&s->mu);
        if (stop) break;
        if (poll(&p, 1, 50) <= 0) continue;
        int fd = accept(s->lfd, NULL, NULL);
        if (fd < 0) continue;
        pthread_mutex_lock(&s->mu);
        if (s->conns >= 64) {
            pthread_mutex_unlock(&s->mu);
            close(fd);
            continue;
        }
        struct conn_arg *ca = malloc(sizeof *ca);
        *ca = (struct conn_arg){.s = s, .fd = fd, .id = s->conns};
        pthread_create(&s->conn_th[s->conns], NULL, conn_main, ca);
        s->conns++;
        pthread_mutex_unlock(&s->mu);
    }
    return NULL;
}

static void srv_start(struct srv *s)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(s->lfd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(s->lfd, 64), 0);
    assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &al), 0);
    s->port = ntohs(a.sin_port);
    pthread_create(&s->th, NULL, accept_main, s);
}

static void srv_stop(struct srv *s)
{
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->th, NULL);
    close(s->lfd);
    for (int i = 0; i < s->conns; i++) pthread_join(s->conn_th[i], NULL);   /* clients closed */
}

static void srv_free(struct srv *s)
{
    for (size_t i = 0; i < s->n_rx; i++) free(s->rx[i].body);
    free(s->rx);
    pthread_mutex_destroy(&s->mu);
}

/* Runs the output against the server; the clients are closed on return. */
static int run_http(struct fx *f, struct srv *s, unsigned conns, size_t batch, struct gw_sim_output_stats *st,
                    struct gw_error *err)
{
    char url[96];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/api/v1/write", s->port);
    struct gw_sim_gen *g = gen(f);
    struct gw_sim_output_opts o = {.url = url, .connections = conns, .max_samples_per_request = batch};
    int rc = gw_sim_output_run(g, &o, st, err);
    gw_sim_gen_close(g);
    return rc;
}

static void test_sim_output_http_sharding_keeps_order(void **state)
{
    struct fx *f = *state;
    struct srv s;
    struct gw_sim_output_stats st;
    struct gw_error err = {0};
    struct expected e;
    srv_start(&s);
    assert_int_equal(run_http(f, &s, 4, 500, &st, &err), GW_OK);
    srv_stop(&s);   /* joins the connection threads: s is stable now */
    assert_int_equal(s.conns, 4);
    assert_int_equal(s.bad_headers, 0);
    assert_int_equal((uint64_t)s.n_rx, st.requests);
    assert_int_equal(st.retries, 0);

    /* Per connection, requests arrive in order: check each against the
     * shard it carries (the shard is found from its first sample). */
    expected_build(f, 4, &e);
    int shard_of_conn[64];
    for (int i = 0; i < 64; i++) shard_of_conn[i] = -1;
    uint64_t samples = 0;
    size_t meta_total = 0;
    for (size_t i = 0; i < s.n_rx; i++) {
        struct rx *r = &s.rx[i];
        size_t n_meta;
        int64_t mint, maxt;
        if (shard_of_conn[r->conn] < 0) {
            /* the first request of a connection names its shard: try each */
            struct gw_buf pb;
            struct gw_arena a;
            struct gw_rw_request req;
            gw_buf_init(&pb, 0);
            gw_arena_init(&a, 1 << 16, 0);
            assert_int_equal(gw_snappy_decode(r->body, r->len, GW_RW_MAX_BODY, &pb, NULL), GW_OK);
            assert_int_equal(gw_rw_decode(pb.data, pb.len, 1, &a, &req, NULL), GW_OK);
            if (req.n_series == 0) {
                shard_of_conn[r->conn] = 0;   /* metadata goes first on shard 0 */
            } else {
                size_t cl;
                for (unsigned k = 0; k < 4; k++) {
                    if (e.n[k] == 0) continue;
                    const uint8_t *canon = gw_sim_gen_series_labels(e.g, e.s[k][0].id, &cl);
                    size_t need = gw_labels_encoded_size(req.series[0].labels, req.series[0].n_labels);
                    uint8_t *got = malloc(need);
                    gw_labels_encode(req.series[0].labels, req.series[0].n_labels, got);
                    if (need == cl && !memcmp(got, canon, cl)) shard_of_conn[r->conn] = (int)k;
                    free(got);
                }
            }
            gw_arena_free(&a);
            gw_buf_free(&pb);
            assert_true(shard_of_conn[r->conn] >= 0);
            for (int c = 0; c < 64; c++)
                if (c != r->conn) assert_int_not_equal(shard_of_conn[c], shard_of_conn[r->conn]);
        }
        samples += check_body(&e, (unsigned)shard_of_conn[r->conn], r->body, r->len, &n_meta, &mint, &maxt);
        meta_total += n_meta;
    }
    assert_int_equal(samples, st.samples);
    assert_int_equal(samples, e.total);
    assert_true(meta_total > 0);
    for (unsigned k = 0; k < 4; k++) assert_int_equal(e.pos[k], e.n[k]);
    expected_free(&e);
    srv_free(&s);
}

/* With one connection answering slowly, the others wait for it: no
 * request arrives carrying samples more than about two scrape rounds older
 * than the newest sample already delivered. */
static void test_sim_output_http_lockstep(void **state)
{
    struct fx *f = *state;
    struct srv s;
    struct gw_sim_output_stats st;
    struct gw_error err = {0};
    srv_start(&s);
    s.slow_conn = 2;
    assert_int_equal(run_http(f, &s, 4, 300, &st, &err), GW_OK);
    srv_stop(&s);
    assert_int_equal(s.conns, 4);
    int64_t newest = INT64_MIN, worst = 0, slack = 3 * f->cfg.interval_ms + 2 * f->cfg.jitter_ms;
    int slow_requests = 0;
    for (size_t i = 0; i < s.n_rx; i++) {
        struct gw_buf pb;
        struct gw_arena a;
        struct gw_rw_request req;
        gw_buf_init(&pb, 0);
        gw_arena_init(&a, 1 << 16, 0);
        assert_int_equal(gw_snappy_decode(s.rx[i].body, s.rx[i].len, GW_RW_MAX_BODY, &pb, NULL), GW_OK);
        assert_int_equal(gw_rw_decode(pb.data, pb.len, 1, &a, &req, NULL), GW_OK);
        int64_t mint = INT64_MAX, maxt = INT64_MIN;
        for (size_t k = 0; k < req.n_series; k++) {
            int64_t t = req.series[k].samples[0].t;
            if (t < mint) mint = t;
            if (t > maxt) maxt = t;
        }
        if (req.n_series > 0) {
            if (newest != INT64_MIN && newest - mint > worst) worst = newest - mint;
            if (maxt > newest) newest = maxt;
        }
        slow_requests += s.rx[i].conn == 1;
        gw_arena_free(&a);
        gw_buf_free(&pb);
    }
    assert_true(slow_requests > 10);
    if (worst > slack)
        fail_msg("a request arrived with samples %lld ms older than the newest delivered (allowed %lld)",
                 (long long)worst, (long long)slack);
    srv_free(&s);
}

/* The same config and seed give byte-identical request files. */
static void test_sim_output_files_deterministic(void **state)
{
    struct fx *f = *state;
    char d1[600], d2[600];
    snprintf(d1, sizeof d1, "%s/a", f->dir);
    snprintf(d2, sizeof d2, "%s/b", f->dir);
    const char *dirs[2] = {d1, d2};
    struct gw_sim_output_stats st[2];
    for (int i = 0; i < 2; i++) {
        struct gw_sim_gen *g = gen(f);
        struct gw_sim_output_opts o = {.out_dir = dirs[i], .connections = 2, .max_samples_per_request = 1000};
        struct gw_error err = {0};
        assert_int_equal(gw_sim_output_run(g, &o, &st[i], &err), GW_OK);
        gw_sim_gen_close(g);
    }
    assert_int_equal(st[0].requests, st[1].requests);
    assert_int_equal(st[0].bytes, st[1].bytes);
    for (uint64_t n = 1; n <= st[0].requests; n++) {
        char p1[700], p2[700];
        size_t l1, l2;
        snprintf(p1, sizeof p1, "%s/%09" PRIu64 ".rw", d1, n);
        snprintf(p2, sizeof p2, "%s/%09" PRIu64 ".rw", d2, n);
        uint8_t *b1 = slurp(p1, &l1), *b2 = slurp(p2, &l2);
        assert_int_equal(l1, l2);
        assert_memory_equal(b1, b2, l1);
        free(b1);
        free(b2);
    }
}

static void test_sim_output_http_retries_503(void **state)
{
    struct fx *f = *state;
    struct srv s;
    struct gw_sim_output_stats st;
    struct gw_error err = {0};
    srv_start(&s);
    s.fail_first = 3;
    assert_int_equal(run_http(f, &s, 2, 4000, &st, &err), GW_OK);
    srv_stop(&s);
    assert_int_equal(st.retries, 3);
    assert_int_equal((uint64_t)s.n_rx, st.requests);
    assert_int_equal((uint64_t)s.requests, st.requests + 3);
    uint64_t samples = 0;
    for (size_t i = 0; i < s.n_rx; i++) {
        struct gw_buf pb;
        struct gw_arena a;
        struct gw_rw_request req;
        gw_buf_init(&pb, 0);
        gw_arena_init(&a, 1 << 16, 0);
        assert_int_equal(gw_snappy_decode(s.rx[i].body, s.rx[i].len, GW_RW_MAX_BODY, &pb, NULL), GW_OK);
        assert_int_equal(gw_rw_decode(pb.data, pb.len, 1, &a, &req, NULL), GW_OK);
        samples += req.n_samples;
        gw_arena_free(&a);
        gw_buf_free(&pb);
    }
    assert_int_equal(samples, st.samples);   /* nothing lost, nothing twice */
    srv_free(&s);
}

static void test_sim_output_http_refused_400(void **state)
{
    struct fx *f = *state;
    struct srv s;
    struct gw_sim_output_stats st;
    struct gw_error err = {0};
    srv_start(&s);
    s.refuse = 1;
    assert_int_equal(run_http(f, &s, 2, 2000, &st, &err), GW_EINVAL);
    srv_stop(&s);
    assert_non_null(strstr(err.msg, "HTTP 400"));
    assert_non_null(strstr(err.msg, "out of order sample: bad t"));
    assert_int_equal(st.retries, 0);               /* a 400 is not retried */
    assert_int_equal((uint64_t)s.requests, st.requests);
    srv_free(&s);
}

static void test_sim_output_bad_scheme_fails_at_once(void **state)
{
    struct fx *f = *state;
    /* not retried: an unsupported scheme can never succeed */
    struct gw_sim_gen *g = gen(f);
    struct gw_sim_output_opts o = {.url = "ftp://127.0.0.1/x", .connections = 2};
    struct gw_sim_output_stats st;
    struct gw_error err = {0};
    assert_int_equal(gw_sim_output_run(g, &o, &st, &err), GW_EUNSUPPORTED);
    assert_non_null(strstr(err.msg, "ftp"));
    gw_sim_gen_close(g);
}


/* Writes the run's files with a shard seed; returns its stats. */
static struct gw_sim_output_stats shard_run(struct fx *f, const char *dir, uint64_t seed)
{
    struct gw_sim_gen *g = gen(f);
    struct gw_sim_output_opts o = {.out_dir = dir, .connections = 4, .max_samples_per_request = 300,
                                   .shard_seed = seed, .max_skew = 3};
    struct gw_sim_output_stats st;
    struct gw_error err = {0};
    assert_int_equal(gw_sim_output_run(g, &o, &st, &err), GW_OK);
    gw_sim_gen_close(g);
    return st;
}

struct seen { uint64_t h; int64_t t; };

static int cmp_seen(const void *a, const void *b)
{
    uint64_t x = ((const struct seen *)a)->h, y = ((const struct seen *)b)->h;
    return (x > y) - (x < y);
}

/* Replays the files in order: per-series timestamps must increase (an
 * exact duplicate of a shard's previous request is skipped, as the
 * receiver answers it with success). Returns the samples kept. */
static uint64_t replay_check(const char *dir, uint64_t requests, size_t *n_dup, size_t *distinct_sizes,
                             int64_t *max_skew_ms)
{
    struct seen *v = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    uint8_t *prev[64] = {0};
    size_t prev_len[64] = {0}, sizes[8] = {0}, n_sizes = 0;
    int64_t newest = INT64_MIN;
    *n_dup = 0;
    *max_skew_ms = 0;
    char line[256];
    char path[700];
    snprintf(path, sizeof path, "%s/index.tsv", dir);
    FILE *ix = fopen(path, "r");
    assert_non_null(ix);
    assert_non_null(fgets(line, sizeof line, ix));
    for (uint64_t k = 1; k <= requests; k++) {
        unsigned shard = 0;
        char name[64], mn[32], mx[32];
        unsigned long long ns = 0;
        assert_non_null(fgets(line, sizeof line, ix));
        assert_int_equal(sscanf(line, "%63s %llu %31s %31s %u", name, &ns, mn, mx, &shard), 5);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        size_t len;
        uint8_t *body = slurp(path, &len);
        if (ns > 0 && shard < 64 && prev[shard] && prev_len[shard] == len && memcmp(prev[shard], body, len) == 0) {
            (*n_dup)++;
            free(body);
            continue;
        }
        if (ns > 0 && n_sizes < 8) {
            int found = 0;
            for (size_t i = 0; i < n_sizes; i++) found |= sizes[i] == ns;
            if (!found) sizes[n_sizes++] = ns;
        }
        struct gw_buf pb;
        struct gw_arena a;
        struct gw_rw_request req;
        struct gw_error err = {0};
        gw_buf_init(&pb, GW_RW_MAX_BODY);
        gw_arena_init(&a, 1 << 16, 0);
        assert_int_equal(gw_snappy_decode(body, len, GW_RW_MAX_BODY, &pb, &err), GW_OK);
        assert_int_equal(gw_rw_decode(pb.data, pb.len, 1, &a, &req, &err), GW_OK);
        for (size_t i = 0; i < req.n_series; i++) {
            const struct gw_rw_series *sr = &req.series[i];
            size_t need = gw_labels_encoded_size(sr->labels, sr->n_labels);
            uint8_t *got = malloc(need ? need : 1);
            gw_labels_encode(sr->labels, sr->n_labels, got);
            uint64_t h = gw_hash64(got, need);
            free(got);
            int64_t t = sr->samples[0].t;
            if (t > newest) newest = t;
            if (newest - t > *max_skew_ms) *max_skew_ms = newest - t;
            size_t j;
            for (j = 0; j < n && v[j].h != h; j++)
                ;
            if (j == n) {
                if (n == cap) { cap = cap ? cap * 2 : 1024; v = realloc(v, cap * sizeof *v); assert_non_null(v); }
                v[n].h = h;
                v[n].t = INT64_MIN;
                n++;
            }
            if (t <= v[j].t)
                fail_msg("series %016llx: sample at %lld after %lld", (unsigned long long)h, (long long)t,
                         (long long)v[j].t);
            v[j].t = t;
            total++;
        }
        gw_arena_free(&a);
        gw_buf_free(&pb);
        if (shard < 64) {
            free(prev[shard]);
            prev[shard] = body;
            prev_len[shard] = len;
        } else {
            free(body);
        }
    }
    fclose(ix);
    for (int i = 0; i < 64; i++) free(prev[i]);
    qsort(v, n, sizeof *v, cmp_seen);
    free(v);
    *distinct_sizes = n_sizes;
    return total;
}

static int same_files(const char *d1, const char *d2)
{
    char p1[700], p2[700];
    snprintf(p1, sizeof p1, "%s/index.tsv", d1);
    snprintf(p2, sizeof p2, "%s/index.tsv", d2);
    size_t l1, l2;
    uint8_t *a = slurp(p1, &l1), *b = slurp(p2, &l2);
    int same = l1 == l2 && memcmp(a, b, l1) == 0;
    free(a);
    free(b);
    return same;
}

static void test_sim_output_shard_seed(void **state)
{
    struct fx *f = *state;
    char d1[600], d2[600], d3[600];
    snprintf(d1, sizeof d1, "%s/s1", f->dir);
    snprintf(d2, sizeof d2, "%s/s2", f->dir);
    snprintf(d3, sizeof d3, "%s/s3", f->dir);
    struct gw_sim_output_stats a = shard_run(f, d1, 11), b = shard_run(f, d2, 11), c = shard_run(f, d3, 12);
    /* same seed: the same arrival plan; another seed: another */
    assert_int_equal(a.requests, b.requests);
    assert_true(same_files(d1, d2));
    assert_false(same_files(d1, d3));
    size_t dup, sizes;
    int64_t skew;
    uint64_t kept = replay_check(d1, a.requests, &dup, &sizes, &skew);
    assert_int_equal(dup, a.duplicates);
    assert_int_equal(kept, a.samples);                        /* every sample once, duplicates aside */
    assert_true(a.duplicates > 0);
    assert_true(sizes > 3);                                   /* random batch sizes */
    assert_true(skew > f->cfg.interval_ms);                   /* connections apart in data time */
    assert_true(skew <= (3 + 3) * f->cfg.interval_ms);
    size_t dup3, sizes3;
    int64_t skew3;
    (void)replay_check(d3, c.requests, &dup3, &sizes3, &skew3);
    /* every sample once, whatever the plan */
    struct gw_sim_output_stats l;
    {
        struct gw_sim_gen *g = gen(f);
        struct gw_sim_output_opts o = {.connections = 4, .max_samples_per_request = 300};
        struct gw_error err = {0};
        assert_int_equal(gw_sim_output_run(g, &o, &l, &err), GW_OK);
        gw_sim_gen_close(g);
    }
    assert_int_equal(kept, l.samples);
    (void)b;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sim_output_files_roundtrip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sim_output_dry_run_counts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sim_output_http_sharding_keeps_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sim_output_http_lockstep, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sim_output_files_deterministic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sim_output_http_retries_503, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sim_output_http_refused_400, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sim_output_bad_scheme_fails_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sim_output_shard_seed, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
