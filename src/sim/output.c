/* output.c - the simulator's output: runs the generator to its end and
 * sends every sample as Prometheus remote write 1.0 over several
 * keep-alive connections, and/or writes the same request bodies to files.
 *
 * Requests. A body is a snappy block (gw_snappy_encode) of a protobuf
 * prometheus.WriteRequest built by hand from the generator's prebuilt
 * label bytes (gw_sim_gen_series_pb), one TimeSeries per sample:
 *   0a <len> TimeSeries {
 *       <labels pb: (0a len Label{0a len name 12 len value})*>
 *       12 <len> Sample { 09 <double LE, omitted when all bits 0> 10 <varint t> } }
 * e.g. up{instance="a:1"}=1 at t=1700000000000 (varint 80 d0 95 ff bc 31):
 *   0a 33 | 0a 0e 0a 08 "__name__" 12 02 "up" | 0a 0f 0a 08 "instance" 12 03 "a:1"
 *         | 12 10 09 00 00 00 00 00 00 f0 3f 10 80 d0 95 ff bc 31
 * (33 label bytes + 2 + a 16-byte Sample = 0x33 bytes of TimeSeries).
 * Posted with Content-Encoding: snappy, Content-Type:
 * application/x-protobuf, X-Prometheus-Remote-Write-Version: 0.1.0,
 * User-Agent: gpuwatch-simulate. The first request carries only the
 * metric metadata (WriteRequest field 3, one MetricMetadata per family
 * from gw_sim_gen_families), encoded by gw_rw_encode_v1.
 *
 * Sharding and order. Series id s goes to shard s % connections; one
 * thread and one connection per shard sends that shard's requests in
 * order, so every series' samples arrive in time order. A request holds
 * up to max_samples_per_request samples (or 16 MiB of protobuf).
 *
 * Lockstep. Scrapes come round by round; a new round starts when the
 * (node, job) of a scrape is not after the previous one's. Before the
 * samples of round r are generated, every sample of rounds <= r - 2 must
 * have been acknowledged (partial requests holding such samples are sent
 * first), so no connection runs more than about two scrape rounds ahead of
 * the slowest; a Prometheus receiver refuses samples far behind its newest.
 *
 * Retries. Connection errors, timeouts, 5xx and 429 are retried with
 * exponential backoff (30 ms doubling to 5 s) for up to 5 minutes per
 * request, then the run fails. Any other non-2xx answer counts the
 * request's samples as refused; the run goes on and ends with GW_EINVAL
 * naming the counts and the first refusal's status and text.
 *
 * Speed. 0: as fast as possible. s > 0: a scrape stamped t is produced
 * when the wall clock reaches wall_start + (t - t_first) / s (1 = real
 * time); pending partial requests are sent before each wait.
 *
 * Files (out_dir). Every request body, the metadata request included, is
 * written as DIR/000000001.rw, DIR/000000002.rw, ... (9-digit sequence
 * number, the order they were made: replaying them in that order, or each
 * shard's files in order in parallel, keeps per-series order), and
 * DIR/index.tsv lists them, tab-separated, after a header line:
 *   file          samples  min_t          max_t          shard
 *   000000001.rw  0        -              -              0
 *   000000002.rw  2000     1764000000000  1764000030500  1
 * (times in Unix ms; "-" for the metadata request, which has no samples).
 *
 * Random sharded arrival (shard_seed != 0): series go to connections by a
 * seeded hash of their id; each request's size is drawn in [1, max
 * samples]; a sealed request is held back 0..max_skew scrape rounds (per
 * connection, redrawn every 20 rounds), so connections run up to max_skew
 * scrapes apart in data time; held requests are released in a seeded
 * connection order each round; ~1% of requests are sent twice (a retried
 * duplicate). Each connection keeps its requests in order, so per-series
 * order holds. The same seed gives the same plan (and the same files).
 *
 * Neither url nor out_dir: the bodies are built and compressed but
 * dropped (measures the generator and encoder alone). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "gpuwatch/buf.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/httpc.h"
#include "gpuwatch/json.h"
#include "gpuwatch/progress.h"
#include "gpuwatch/rw.h"
#include "gpuwatch/sim.h"

#define LAG_ROUNDS 2
#define MAX_QUEUED 64                     /* sealed requests waiting per shard */
#define MAX_PB_BYTES (16u << 20)          /* seal a request above this much protobuf */
#define MAX_SAMPLES_PER_REQUEST 100000
#define MAX_CONNECTIONS 256
#define RETRY_FOR_NS (300ull * 1000000000ull)
#define BACKOFF_MIN_MS 30
#define BACKOFF_MAX_MS 5000
#define REQUEST_TIMEOUT_MS 120000

struct req {
    struct req *next;
    uint8_t *body;                /* snappy, owned */
    size_t len;
    uint64_t samples;
    uint64_t min_round;
};

struct out;

/* A sealed request held back to emulate a lagging connection (shard_seed). */
struct held {
    struct held *next;
    uint8_t *body;
    size_t len;
    uint64_t samples, min_round, due_round;
    int64_t min_t, max_t;
};

struct shard {
    struct out *o;
    unsigned idx;
    /* builder: main thread only */
    struct gw_buf pb;
    uint64_t n_pending;
    int64_t min_t, max_t;
    uint64_t min_round, max_round;
    uint64_t limit;               /* samples that seal the next request */
    uint64_t n_sealed;
    struct held *hold_head, *hold_tail;
    /* queue: under o->mu */
    struct req *head, *tail;      /* head stays queued until acknowledged */
    size_t queued;
    pthread_cond_t cv;
    pthread_t th;
    int started;
    struct gw_httpc *http;
};

struct out {
    const struct gw_sim_output_opts *opts;
    struct gw_sim_gen *g;
    unsigned n_shards;
    struct shard *shards;
    size_t max_samples;
    int sending;                  /* url given */
    FILE *index;                  /* out_dir given */
    char dir[4096];
    uint64_t seq;                 /* last file number */
    uint64_t shard_seed;          /* 0: lockstep, id % shards */
    struct gw_progress *bar;      /* --progress: data time sent (progress.h) */
    int64_t bar_first;            /* data time of the first scrape */
    unsigned max_skew;
    uint64_t duplicates;
    struct gw_buf snappy;         /* scratch for bodies that are not queued */

    pthread_mutex_t mu;
    pthread_cond_t cv_main;
    int done;                     /* no more requests will be queued */
    int failed;
    int fail_rc;
    struct gw_error fail_err;
    uint64_t acked_requests, refused_requests, refused_samples, retries;
    int first_refused_status;
    char first_refused[200];
};

/* ------------------------------------------------------------------ util */

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static int is_failed(struct out *o)
{
    pthread_mutex_lock(&o->mu);
    int f = o->failed;
    pthread_mutex_unlock(&o->mu);
    return f;
}

static void set_failed(struct out *o, int rc, const char *msg)
{
    pthread_mutex_lock(&o->mu);
    if (!o->failed) {
        o->failed = 1;
        o->fail_rc = rc;
        gw_error_set(&o->fail_err, rc, "%s", msg);
    }
    for (unsigned i = 0; i < o->n_shards; i++)
        pthread_cond_signal(&o->shards[i].cv);
    pthread_cond_broadcast(&o->cv_main);
    pthread_mutex_unlock(&o->mu);
}

/* --------------------------------------------------------------- sending */

static const struct gw_httpc_header rw_headers[] = {
    {"Content-Encoding", "snappy"},
    {"Content-Type", "application/x-protobuf"},
    {"X-Prometheus-Remote-Write-Version", "0.1.0"},
};

/* Copies the start of a response body as one printable line. */
static void body_excerpt(const struct gw_buf *b, char *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < b->len && n + 1 < cap; i++) {
        unsigned char ch = b->data[i];
        out[n++] = (ch < ' ' || ch > '~') ? ' ' : (char)ch;
    }
    while (n > 0 && out[n - 1] == ' ')
        n--;
    out[n] = '\0';
}

/* Sends one request until it is acknowledged or refused. GW_OK, or the
 * error that ends the run (detail in msg). */
static int send_req(struct shard *sh, const struct req *r, struct gw_httpc_response *resp, char *msg,
                    size_t msg_cap)
{
    struct out *o = sh->o;
    uint64_t first_fail = 0;
    int backoff_ms = BACKOFF_MIN_MS;

    for (;;) {
        struct gw_error err = {0};
        char why[300];
        int rc = gw_httpc_request(sh->http, "POST", NULL, rw_headers, 3, r->body, r->len, resp, &err);
        if (rc == GW_OK && resp->status >= 200 && resp->status < 300) {
            pthread_mutex_lock(&o->mu);
            o->acked_requests++;
            pthread_mutex_unlock(&o->mu);
            return GW_OK;
        }
        if (rc == GW_OK && resp->status != 429 && resp->status < 500) {
            pthread_mutex_lock(&o->mu);
            o->refused_requests++;
            o->refused_samples += r->samples;
            if (o->first_refused_status == 0) {
                o->first_refused_status = resp->status;
                body_excerpt(&resp->body, o->first_refused, sizeof o->first_refused);
            }
            pthread_mutex_unlock(&o->mu);
            return GW_OK;
        }
        if (rc == GW_EINVAL || rc == GW_EUNSUPPORTED || rc == GW_ENOMEM) {
            snprintf(msg, msg_cap, "%s", err.msg);
            return rc;
        }
        if (rc == GW_OK) {
            char ex[160];
            body_excerpt(&resp->body, ex, sizeof ex);
            snprintf(why, sizeof why, "HTTP %d: %s", resp->status, ex);
        } else {
            snprintf(why, sizeof why, "%s", err.msg);
        }
        uint64_t now = gw_mono_ns();
        if (first_fail == 0) {
            first_fail = now;
            if (o->opts->progress)
                fprintf(stderr, "simulate: connection %u: %s; retrying\n", sh->idx, why);
        }
        else if (now - first_fail > RETRY_FOR_NS) {
            snprintf(msg, msg_cap, "connection %u: gave up after retrying for %llu s: %.180s", sh->idx,
                     (unsigned long long)(RETRY_FOR_NS / 1000000000u), why);
            return rc == GW_OK ? GW_EIO : rc;
        }
        pthread_mutex_lock(&o->mu);
        o->retries++;
        pthread_mutex_unlock(&o->mu);
        for (int slept = 0; slept < backoff_ms; slept += 50) {
            if (is_failed(o)) {
                snprintf(msg, msg_cap, "stopped");
                return GW_ESHUTDOWN;
            }
            int step = backoff_ms - slept < 50 ? backoff_ms - slept : 50;
            sleep_ns((uint64_t)step * 1000000u);
        }
        backoff_ms = backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff_ms * 2;
    }
}

static void *shard_main(void *arg)
{
    struct shard *sh = arg;
    struct out *o = sh->o;
    struct gw_httpc_response resp;

    gw_httpc_response_init(&resp);
    pthread_mutex_lock(&o->mu);
    for (;;) {
        while (sh->head == NULL && !o->done && !o->failed)
            pthread_cond_wait(&sh->cv, &o->mu);
        if (o->failed || sh->head == NULL)
            break;
        struct req *r = sh->head;
        pthread_mutex_unlock(&o->mu);
        char msg[GW_ERROR_MSG_LEN];
        int rc = send_req(sh, r, &resp, msg, sizeof msg);
        if (rc != GW_OK) {
            if (rc != GW_ESHUTDOWN)
                set_failed(o, rc, msg);
            pthread_mutex_lock(&o->mu);
            break;
        }
        pthread_mutex_lock(&o->mu);
        sh->head = r->next;
        if (sh->head == NULL)
            sh->tail = NULL;
        sh->queued--;
        pthread_cond_broadcast(&o->cv_main);
        free(r->body);
        free(r);
    }
    pthread_mutex_unlock(&o->mu);
    gw_httpc_response_free(&resp);
    return NULL;
}

/* ------------------------------------------------------------- building */

static int write_file(struct out *o, const uint8_t *body, size_t len, uint64_t samples, int64_t min_t,
                      int64_t max_t, unsigned shard, struct gw_error *err)
{
    char path[4200];
    FILE *f;

    snprintf(path, sizeof path, "%s/%09" PRIu64 ".rw", o->dir, o->seq);
    f = fopen(path, "wb");
    if (f == NULL)
        return gw_error_set(err, GW_EIO, "cannot create %s: %s", path, strerror_r(errno, (char[128]){0}, 128));
    int bad = len > 0 && fwrite(body, 1, len, f) != len;
    if (fclose(f) != 0)
        bad = 1;
    if (bad)
        return gw_error_set(err, GW_EIO, "cannot write %s", path);
    if (samples > 0)
        fprintf(o->index, "%09" PRIu64 ".rw\t%" PRIu64 "\t%" PRId64 "\t%" PRId64 "\t%u\n", o->seq, samples, min_t,
                max_t, shard);
    else
        fprintf(o->index, "%09" PRIu64 ".rw\t0\t-\t-\t%u\n", o->seq, shard);
    if (ferror(o->index))
        return gw_error_set(err, GW_EIO, "cannot write %s/index.tsv", o->dir);
    return GW_OK;
}

static uint64_t smix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* Hands a compressed body on: file, queue, or nothing. Takes body. */
static int deliver(struct out *o, unsigned shard, uint8_t *body, size_t len, uint64_t samples, int64_t min_t,
                   int64_t max_t, uint64_t min_round, struct gw_error *err)
{
    int rc;
    o->seq++;
    if (o->index != NULL && (rc = write_file(o, body, len, samples, min_t, max_t, shard, err)) != GW_OK) {
        free(body);
        return rc;
    }
    if (!o->sending) {
        free(body);
        return GW_OK;
    }
    struct shard *sh = &o->shards[shard];
    struct req *r = calloc(1, sizeof *r);
    if (r == NULL) {
        free(body);
        return gw_error_set(err, GW_ENOMEM, "out of memory");
    }
    r->body = body;
    r->len = len;
    r->samples = samples;
    r->min_round = min_round;
    pthread_mutex_lock(&o->mu);
    while (sh->queued >= MAX_QUEUED && !o->failed)
        pthread_cond_wait(&o->cv_main, &o->mu);
    if (o->failed) {
        pthread_mutex_unlock(&o->mu);
        free(r->body);
        free(r);
        return GW_ESHUTDOWN;
    }
    if (sh->tail)
        sh->tail->next = r;
    else
        sh->head = r;
    sh->tail = r;
    sh->queued++;
    pthread_cond_signal(&sh->cv);
    pthread_mutex_unlock(&o->mu);
    return GW_OK;
}

/* Delivers a body, and with shard_seed a retried duplicate of it ~1% of
 * the time (the receiver answers exact duplicates with success). */
static int deliver_maybe_twice(struct out *o, unsigned shard, uint8_t *body, size_t len, uint64_t samples,
                               int64_t min_t, int64_t max_t, uint64_t min_round, struct gw_sim_output_stats *st,
                               struct gw_error *err)
{
    int dup = o->shard_seed != 0 && samples > 0 && smix(o->shard_seed ^ 0xd0b1e ^ (o->seq + 1) * 0x2545F4914F6CDD1Dull) % 100 == 0;
    uint8_t *copy = NULL;
    if (dup) {
        copy = malloc(len ? len : 1);
        if (copy == NULL) {
            free(body);
            return gw_error_set(err, GW_ENOMEM, "out of memory");
        }
        memcpy(copy, body, len);
    }
    int rc = deliver(o, shard, body, len, samples, min_t, max_t, min_round, err);
    if (dup) {
        if (rc == GW_OK) {
            st->requests++;
            st->bytes += len;
            o->duplicates++;
            rc = deliver(o, shard, copy, len, samples, min_t, max_t, min_round, err);
        } else {
            free(copy);
        }
    }
    return rc;
}

/* Releases, shard by shard in order, held requests due at round (all of
 * them with force). */
static int release_held(struct out *o, uint64_t round, int force, struct gw_sim_output_stats *st,
                        struct gw_error *err)
{
    for (;;) {
        int any = 0;
        for (unsigned k = 0; k < o->n_shards; k++) {
            /* shards in a seeded order per round: interleavings vary */
            unsigned i = (unsigned)((k + smix(o->shard_seed ^ round) % o->n_shards) % o->n_shards);
            struct shard *sh = &o->shards[i];
            struct held *h = sh->hold_head;
            if (h == NULL || (!force && h->due_round > round))
                continue;
            sh->hold_head = h->next;
            if (sh->hold_head == NULL)
                sh->hold_tail = NULL;
            int rc = deliver_maybe_twice(o, i, h->body, h->len, h->samples, h->min_t, h->max_t, h->min_round, st, err);
            free(h);
            if (rc != GW_OK)
                return rc;
            any = 1;
        }
        if (!any)
            return GW_OK;
    }
}

/* Compresses a protobuf body and hands it on (held back first with shard_seed). */
static int emit(struct out *o, unsigned shard, const uint8_t *pb, size_t pb_len, uint64_t samples,
                int64_t min_t, int64_t max_t, uint64_t min_round, struct gw_sim_output_stats *st,
                struct gw_error *err)
{
    int rc;

    gw_buf_reset(&o->snappy);
    rc = gw_snappy_encode(pb, pb_len, &o->snappy);
    if (rc != GW_OK)
        return gw_error_set(err, rc, "cannot compress a request of %zu bytes", pb_len);
    st->requests++;
    st->bytes += o->snappy.len;
    size_t len = 0;
    uint8_t *body = gw_buf_steal(&o->snappy, &len);
    if (body == NULL && len > 0)
        return gw_error_set(err, GW_ENOMEM, "out of memory");
    if (body == NULL) {
        body = malloc(1);
        if (body == NULL)
            return gw_error_set(err, GW_ENOMEM, "out of memory");
    }
    if (o->shard_seed == 0 || samples == 0)
        return deliver(o, shard, body, len, samples, min_t, max_t, min_round, err);
    /* hold it while its connection lags: 0..max_skew rounds, changing
       every 20 rounds, seeded per connection */
    struct shard *sh = &o->shards[shard];
    struct held *h = calloc(1, sizeof *h);
    if (h == NULL) {
        free(body);
        return gw_error_set(err, GW_ENOMEM, "out of memory");
    }
    uint64_t lag = smix(o->shard_seed ^ ((uint64_t)shard << 40) ^ (sh->max_round / 20) * 0x9E3779B97F4A7C15ull) %
                   ((uint64_t)o->max_skew + 1);
    h->body = body;
    h->len = len;
    h->samples = samples;
    h->min_t = min_t;
    h->max_t = max_t;
    h->min_round = min_round;
    h->due_round = sh->max_round + lag;
    if (sh->hold_tail)
        sh->hold_tail->next = h;
    else
        sh->hold_head = h;
    sh->hold_tail = h;
    return GW_OK;
}

static int seal(struct out *o, struct shard *sh, struct gw_sim_output_stats *st, struct gw_error *err)
{
    int rc;
    if (sh->n_pending == 0)
        return GW_OK;
    rc = emit(o, sh->idx, sh->pb.data, sh->pb.len, sh->n_pending, sh->min_t, sh->max_t, sh->min_round, st, err);
    gw_buf_reset(&sh->pb);
    sh->n_pending = 0;
    sh->n_sealed++;
    if (o->shard_seed != 0)   /* the next request's size: uniform in [1, max] */
        sh->limit = 1 + smix(o->shard_seed ^ ((uint64_t)sh->idx << 48) ^ sh->n_sealed * 0x9E3779B97F4A7C15ull) %
                            o->max_samples;
    return rc;
}

static int seal_all(struct out *o, struct gw_sim_output_stats *st, struct gw_error *err)
{
    for (unsigned i = 0; i < o->n_shards; i++) {
        int rc = seal(o, &o->shards[i], st, err);
        if (rc != GW_OK)
            return rc;
    }
    return GW_OK;
}

/* Appends one sample of series id as a TimeSeries to its shard. */
static int add_sample(struct out *o, uint32_t id, int64_t t, double v, uint64_t round,
                      struct gw_sim_output_stats *st, struct gw_error *err)
{
    unsigned si = o->shard_seed != 0 ? (unsigned)(smix(o->shard_seed ^ ((uint64_t)id * 0x9E3779B97F4A7C15ull)) % o->n_shards)
                                     : id % o->n_shards;
    struct shard *sh = &o->shards[si];
    size_t ll = 0;
    const uint8_t *lb = gw_sim_gen_series_pb(o->g, id, &ll);
    int rc;

    if (lb == NULL)
        return gw_error_set(err, GW_EINVAL, "generator returned no labels for series %u", id);
    if ((rc = gw_rw_append_sample(&sh->pb, lb, ll, t, v)) != GW_OK)
        return gw_error_set(err, rc, "out of memory building a request");
    if (sh->n_pending == 0) {
        sh->min_t = sh->max_t = t;
        sh->min_round = sh->max_round = round;
    } else {
        if (round > sh->max_round)
            sh->max_round = round;
        if (t < sh->min_t)
            sh->min_t = t;
        if (t > sh->max_t)
            sh->max_t = t;
    }
    sh->n_pending++;
    st->samples++;
    if (sh->n_pending >= sh->limit || sh->pb.len >= MAX_PB_BYTES)
        return seal(o, sh, st, err);
    return GW_OK;
}

/* Before round r: everything of rounds <= r - LAG_ROUNDS acknowledged. */
static int lockstep(struct out *o, uint64_t round, struct gw_sim_output_stats *st, struct gw_error *err)
{
    if (o->shard_seed != 0) {
        int rc = release_held(o, round, 0, st, err);
        if (rc != GW_OK)
            return rc;
    }
    uint64_t lag_rounds = LAG_ROUNDS + (o->shard_seed != 0 ? o->max_skew : 0);
    if (!o->sending || round < lag_rounds)
        return GW_OK;
    uint64_t limit = round - lag_rounds;
    for (unsigned i = 0; i < o->n_shards; i++) {
        struct shard *sh = &o->shards[i];
        if (sh->n_pending > 0 && sh->min_round <= limit) {
            int rc = seal(o, sh, st, err);
            if (rc != GW_OK)
                return rc;
        }
    }
    if (o->shard_seed != 0) {   /* what was sealed here and is overdue goes out now */
        int rc = release_held(o, round, 0, st, err);
        if (rc != GW_OK)
            return rc;
    }
    pthread_mutex_lock(&o->mu);
    for (;;) {
        int behind = 0;
        for (unsigned i = 0; i < o->n_shards && !behind; i++)
            behind = o->shards[i].head != NULL && o->shards[i].head->min_round <= limit;
        if (!behind || o->failed)
            break;
        pthread_cond_wait(&o->cv_main, &o->mu);
    }
    pthread_mutex_unlock(&o->mu);
    return GW_OK;
}

/* -------------------------------------------------------------- metadata */

struct meta_collect {
    struct gw_buf strings;        /* name\0type\0help\0 ... */
    size_t n;
    int rc;
};

static int meta_cb(void *ud, const char *metric, const char *type, const char *help)
{
    struct meta_collect *m = ud;
    const char *s[3] = {metric ? metric : "", type ? type : "", help ? help : ""};
    for (int i = 0; i < 3; i++) {
        int rc = gw_buf_append(&m->strings, s[i], strlen(s[i]) + 1);
        if (rc != GW_OK)
            return m->rc = rc;
    }
    m->n++;
    return GW_OK;
}

static uint8_t meta_type(const char *t)
{
    static const char *const names[] = {"unknown", "counter", "gauge", "histogram", "gaugehistogram",
                                        "summary", "info", "stateset"};
    for (uint8_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(t, names[i]) == 0)
            return i;
    return 0;   /* "untyped" and anything else: UNKNOWN */
}

static int emit_metadata(struct out *o, struct gw_sim_output_stats *st, struct gw_error *err)
{
    struct meta_collect m = {.n = 0, .rc = GW_OK};
    struct gw_rw_metadata *md = NULL;
    struct gw_rw_request req;
    struct gw_buf pb;
    int rc;

    gw_buf_init(&m.strings, 0);
    gw_buf_init(&pb, 0);
    rc = gw_sim_gen_families(o->g, meta_cb, &m);
    if (rc == GW_OK)
        rc = m.rc;
    if (rc != GW_OK) {
        gw_error_set(err, rc, "cannot list the metric families: %s", gw_strerror(rc));
        goto out;
    }
    if (m.n == 0)
        goto out;
    md = calloc(m.n, sizeof *md);
    if (md == NULL) {
        rc = gw_error_set(err, GW_ENOMEM, "out of memory");
        goto out;
    }
    {
        const char *p = (const char *)m.strings.data;
        for (size_t i = 0; i < m.n; i++) {
            const char *name = p, *type = name + strlen(name) + 1, *help = type + strlen(type) + 1;
            p = help + strlen(help) + 1;
            md[i].type = meta_type(type);
            md[i].name = name;
            md[i].name_len = (uint32_t)strlen(name);
            md[i].help = help;
            md[i].help_len = (uint32_t)strlen(help);
            md[i].unit = "";
            md[i].unit_len = 0;
        }
    }
    memset(&req, 0, sizeof req);
    req.version = 1;
    req.metadata = md;
    req.n_metadata = m.n;
    rc = gw_rw_encode_v1(&req, &pb);
    if (rc != GW_OK) {
        gw_error_set(err, rc, "cannot encode the metadata: %s", gw_strerror(rc));
        goto out;
    }
    rc = emit(o, 0, pb.data, pb.len, 0, 0, 0, 0, st, err);
out:
    free(md);
    gw_buf_free(&pb);
    gw_buf_free(&m.strings);
    return rc;
}

/* ------------------------------------------------------------------- run */

/* Data time covered so far, for the progress reporter (started at the
 * first scrape). */
static void progress(struct out *o, int64_t t_first, int64_t t)
{
    if (!o->bar) {
        int64_t end = o->opts->progress_end_ms;
        o->bar = gw_progress_start("simulate", end > t_first ? (uint64_t)(end - t_first) / 1000 : 0,
                                   GW_PROGRESS_SECONDS);
    }
    gw_progress_set(o->bar, t > t_first ? (uint64_t)(t - t_first) / 1000 : 0);
}

static int open_dir(struct out *o, const char *dir, struct gw_error *err)
{
    char path[4200];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof o->dir)
        return gw_error_set(err, GW_EINVAL, "output directory name empty or too long");
    memcpy(o->dir, dir, n + 1);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return gw_error_set(err, GW_EIO, "cannot create directory %s: %s", dir,
                            strerror_r(errno, (char[128]){0}, 128));
    snprintf(path, sizeof path, "%s/index.tsv", dir);
    o->index = fopen(path, "w");
    if (o->index == NULL)
        return gw_error_set(err, GW_EIO, "cannot create %s: %s", path, strerror_r(errno, (char[128]){0}, 128));
    fprintf(o->index, "file\tsamples\tmin_t\tmax_t\tshard\n");
    return GW_OK;
}

/* The options gw_sim_output_run refuses. GW_OK or GW_EINVAL. */
static int output_check(const struct gw_sim_output_opts *opts, struct gw_error *err)
{
    if (!(opts->speed >= 0) || isinf(opts->speed))
        return gw_error_set(err, GW_EINVAL, "speed must be >= 0 (got %g)", opts->speed);
    if (opts->connections > MAX_CONNECTIONS)
        return gw_error_set(err, GW_EINVAL, "connections must be 1..%d (got %u)", MAX_CONNECTIONS, opts->connections);
    if (opts->shard_seed != 0 && opts->max_skew > 1000)
        return gw_error_set(err, GW_EINVAL, "max skew must be 0..1000 scrapes (got %u)", opts->max_skew);
    if (opts->max_samples_per_request > MAX_SAMPLES_PER_REQUEST)
        return gw_error_set(err, GW_EINVAL, "samples per request must be 1..%d (got %zu)", MAX_SAMPLES_PER_REQUEST,
                            opts->max_samples_per_request);
    return GW_OK;
}

/* Shards, the --out dir, the HTTP clients and sender threads. GW_OK, or
 * an error with what did open left in o for output_close. */
static int output_open(struct out *o, struct gw_sim_gen *g, const struct gw_sim_output_opts *opts,
                       struct gw_error *err)
{
    int rc = GW_OK;
    o->opts = opts;
    o->g = g;
    o->n_shards = opts->connections ? opts->connections : 4;
    o->max_samples = opts->max_samples_per_request ? opts->max_samples_per_request : 2000;
    o->shard_seed = opts->shard_seed;
    o->max_skew = opts->max_skew ? opts->max_skew : 3;
    o->sending = opts->url != NULL && opts->url[0] != '\0';
    pthread_mutex_init(&o->mu, NULL);
    pthread_cond_init(&o->cv_main, NULL);
    gw_buf_init(&o->snappy, 0);
    o->shards = calloc(o->n_shards, sizeof *o->shards);
    if (o->shards == NULL)
        return gw_error_set(err, GW_ENOMEM, "out of memory");
    for (unsigned i = 0; i < o->n_shards; i++) {
        o->shards[i].o = o;
        o->shards[i].idx = i;
        o->shards[i].limit = o->max_samples;
        if (o->shard_seed != 0)
            o->shards[i].limit = 1 + smix(o->shard_seed ^ ((uint64_t)i << 48)) % o->max_samples;
        gw_buf_init(&o->shards[i].pb, 0);
        pthread_cond_init(&o->shards[i].cv, NULL);
    }
    if (opts->out_dir != NULL && opts->out_dir[0] != '\0' && (rc = open_dir(o, opts->out_dir, err)) != GW_OK)
        return rc;
    if (o->sending) {
        struct gw_httpc_opts ho;
        gw_httpc_opts_default(&ho);
        ho.user_agent = "gpuwatch-simulate";
        ho.timeout_ms = REQUEST_TIMEOUT_MS;
        ho.max_body_bytes = 1u << 20;
        for (unsigned i = 0; i < o->n_shards; i++) {
            if ((rc = gw_httpc_open(&o->shards[i].http, opts->url, &ho, err)) != GW_OK)
                return rc;
        }
        for (unsigned i = 0; i < o->n_shards; i++) {
            if (pthread_create(&o->shards[i].th, NULL, shard_main, &o->shards[i]) != 0)
                return gw_error_set(err, GW_ENOMEM, "cannot start a sender thread");
            o->shards[i].started = 1;
        }
    }
    return rc;
}

/* With --speed: waits until scrape s is due (sealing what is batched
 * first), printing progress meanwhile. */
static int output_pace(struct out *o, const struct gw_sim_scrape *s, int64_t t_first, uint64_t t0_ns,
                       uint64_t *next_progress, struct gw_sim_output_stats *st, struct gw_error *err)
{
    const struct gw_sim_output_opts *opts = o->opts;
    int rc;
    if (!(opts->speed > 0 && s->t > t_first))
        return GW_OK;
    double due_ms = (double)(s->t - t_first) / opts->speed;
    uint64_t due = t0_ns + (uint64_t)(due_ms * 1e6);
    if (opts->speed == 1.0) {
        /* real time: a scrape is due when the wall clock reaches its
         * timestamp, so a start in the past is backfilled first */
        int64_t ahead_ms = s->t - gw_now_ms();
        due = gw_mono_ns() + (ahead_ms > 0 ? (uint64_t)ahead_ms * 1000000u : 0);
    }
    uint64_t now = gw_mono_ns();
    if (due <= now)
        return GW_OK;
    if ((rc = seal_all(o, st, err)) != GW_OK)
        return rc;
    while ((now = gw_mono_ns()) < due && !is_failed(o)) {
        uint64_t left = due - now;
        sleep_ns(left > 200000000u ? 200000000u : left);
        if (opts->progress && gw_mono_ns() >= *next_progress) {
            progress(o, t_first, s->t);
            *next_progress = gw_mono_ns() + 100000000u;
        }
    }
    return GW_OK;
}

/* Every scrape of the generator into the outputs; the lockstep rounds
 * counted in *round. GW_OK or an error. */
static int output_loop(struct out *o, uint64_t t0_ns, uint64_t *round, struct gw_sim_output_stats *st,
                       struct gw_error *err)
{
    const struct gw_sim_output_opts *opts = o->opts;
    struct gw_sim_scrape s;
    uint64_t next_progress = t0_ns + 1000000000u;
    int64_t t_first = 0;
    int rc, have_prev = 0, prev_key = 0, have_first = 0;
    for (;;) {
        rc = gw_sim_gen_next(o->g, &s, err);
        if (rc == 0)
            break;
        if (rc < 0)
            return rc;
        int key = (int)(s.node * 2 + (s.job == GW_SIM_JOB_NODE));
        if (have_prev && key <= prev_key) {
            ++*round;
            if ((rc = lockstep(o, *round, st, err)) != GW_OK)
                return rc;
        }
        have_prev = 1;
        prev_key = key;
        if (!have_first) {
            have_first = 1;
            t_first = s.t;
            o->bar_first = s.t;
            if (opts->progress)
                progress(o, t_first, s.t);   /* the reporter's clock starts here */
        }
        if ((rc = output_pace(o, &s, t_first, t0_ns, &next_progress, st, err)) != GW_OK)
            return rc;
        if (o->sending && is_failed(o))
            return GW_OK;
        for (size_t i = 0; i < s.n; i++) {
            if ((rc = add_sample(o, s.series[i], s.t, s.v[i], *round, st, err)) != GW_OK)
                return rc;
        }
        if (opts->progress && gw_mono_ns() >= next_progress) {
            progress(o, t_first, s.t);
            next_progress = gw_mono_ns() + 100000000u;   /* the reporter throttles its output */
        }
    }
    rc = seal_all(o, st, err);
    if (rc == GW_OK && o->shard_seed != 0)
        rc = release_held(o, *round, 1, st, err);
    return rc;
}

/* The one cleanup path: stops the senders, collects their failure and
 * the refused requests into rc, closes and frees what o holds. */
static int output_close(struct out *o, int rc, const struct gw_sim_output_stats *st, struct gw_error *err)
{
    if (rc == GW_ESHUTDOWN)
        rc = GW_OK;   /* the senders' failure is reported below */
    pthread_mutex_lock(&o->mu);
    o->done = 1;
    if (rc != GW_OK && !o->failed)
        o->failed = 1;   /* stop the senders without draining */
    for (unsigned i = 0; o->shards && i < o->n_shards; i++)
        pthread_cond_signal(&o->shards[i].cv);
    pthread_mutex_unlock(&o->mu);
    for (unsigned i = 0; o->shards && i < o->n_shards; i++)
        if (o->shards[i].started)
            pthread_join(o->shards[i].th, NULL);
    if (rc == GW_OK && o->failed) {
        rc = o->fail_rc;
        gw_error_set(err, rc, "%s", o->fail_err.msg);
    }
    if (rc == GW_OK && o->refused_requests > 0)
        rc = gw_error_set(err, GW_EINVAL,
                          "the receiver refused %" PRIu64 " of %" PRIu64 " requests (%" PRIu64
                          " samples); first: HTTP %d: %s",
                          o->refused_requests, st->requests, o->refused_samples, o->first_refused_status,
                          o->first_refused);
    if (o->index != NULL && fclose(o->index) != 0 && rc == GW_OK)
        rc = gw_error_set(err, GW_EIO, "cannot write %s/index.tsv", o->dir);
    for (unsigned i = 0; o->shards && i < o->n_shards; i++) {
        struct shard *sh = &o->shards[i];
        while (sh->head) {
            struct req *r = sh->head;
            sh->head = r->next;
            free(r->body);
            free(r);
        }
        while (sh->hold_head) {
            struct held *h = sh->hold_head;
            sh->hold_head = h->next;
            free(h->body);
            free(h);
        }
        gw_buf_free(&sh->pb);
        gw_httpc_close(sh->http);
        pthread_cond_destroy(&sh->cv);
    }
    free(o->shards);
    gw_buf_free(&o->snappy);
    pthread_cond_destroy(&o->cv_main);
    pthread_mutex_destroy(&o->mu);
    return rc;
}

int gw_sim_output_run(struct gw_sim_gen *g, const struct gw_sim_output_opts *opts,
                      struct gw_sim_output_stats *st_out, struct gw_error *err)
{
    struct out o;
    struct gw_sim_output_stats st;
    uint64_t t0_ns = gw_mono_ns(), round = 0;
    int rc;

    if (g == NULL || opts == NULL)
        return gw_error_set(err, GW_EINVAL, "simulate output: missing generator or options");
    if ((rc = output_check(opts, err)) != GW_OK)
        return rc;
    memset(&o, 0, sizeof o);
    memset(&st, 0, sizeof st);
    if ((rc = output_open(&o, g, opts, err)) == GW_OK && (rc = emit_metadata(&o, &st, err)) == GW_OK)
        rc = output_loop(&o, t0_ns, &round, &st, err);
    rc = output_close(&o, rc, &st, err);
    st.retries = o.retries;
    st.duplicates = o.duplicates;
    st.series = gw_sim_gen_series_count(g);
    st.seconds = (double)(gw_mono_ns() - t0_ns) / 1e9;
    if (st_out != NULL)
        *st_out = st;
    if (o.bar && rc == GW_OK && opts->progress_end_ms > o.bar_first)
        progress(&o, o.bar_first, opts->progress_end_ms);   /* all of it */
    gw_progress_end(o.bar);   /* NULL without --progress */
    if (opts->progress)
        fprintf(stderr, "simulate: done: %" PRIu64 " samples in %" PRIu64 " requests, %.1f s\n", st.samples,
                st.requests, st.seconds);
    return rc;
}
