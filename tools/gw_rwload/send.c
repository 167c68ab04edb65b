/* send.c - gw_rwload send: the generated series over --conns keep-alive
 * connections in lockstep, retries with backoff, the ack log. */
#include "rwload.h"

struct sender {
    struct gen *g;
    const char *url;
    int conns;
    size_t batch;
    int ack_fd;
    int realtime;
    double max_rate;
    int64_t retry_for_ms;
    int timeout_ms;
    int quiet;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int64_t *progress;
    int failed;                 /* a thread gave up */
    uint64_t samples_acked, requests_ok, retries, refused_requests, refused_samples, bytes_sent;
    double t0;
};

struct worker { struct sender *s; int id; size_t lo, hi; };

static void wait_lag(struct sender *s, int id, int64_t j)
{
    pthread_mutex_lock(&s->mu);
    s->progress[id] = j;
    pthread_cond_broadcast(&s->cv);
    for (;;) {
        int64_t minp = INT64_MAX;
        for (int i = 0; i < s->conns; i++)
            if (s->progress[i] < minp) minp = s->progress[i];
        if (minp >= j - LAG_STEPS || s->failed) break;
        pthread_cond_wait(&s->cv, &s->mu);
    }
    pthread_mutex_unlock(&s->mu);
}

static void build_write(const struct gen *g, size_t lo, size_t hi, int64_t j, struct gw_buf *pb)
{
    gw_buf_reset(pb);
    for (size_t i = lo; i < hi; i++) {
        const struct series *s = &g->s[i];
        int64_t t = ts_of(g, s->node, s->job, j);
        double v = gen_value(g, s, t);
        size_t sample_len = 1 + 8 + 1 + varint_len((uint64_t)t);
        size_t ts_len = s->lbl_len + 1 + varint_len(sample_len) + sample_len;
        bputc(pb, 0x0A);
        bvarint(pb, ts_len);
        bput(pb, g->lbl.data + s->lbl_off, s->lbl_len);
        bputc(pb, 0x12);
        bvarint(pb, sample_len);
        bputc(pb, 0x09);
        bput(pb, &v, 8);          /* little-endian host */
        bputc(pb, 0x10);
        bvarint(pb, (uint64_t)t);
    }
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct sender *s = w->s;
    struct gen *g = s->g;
    struct http c;
    struct http_resp r;
    struct gw_buf pb, sn;
    http_init(&c, s->url, s->timeout_ms);
    gw_buf_init(&r.body, 0);
    gw_buf_init(&pb, 0);
    gw_buf_init(&sn, 0);
    const char *hdrs = "Content-Type: application/x-protobuf\r\nContent-Encoding: snappy\r\n"
                       "X-Prometheus-Remote-Write-Version: 0.1.0\r\n";
    uint64_t my_samples = 0;
    for (int64_t j = 0; j < g->n_steps; j++) {
        wait_lag(s, w->id, j);
        if (s->failed) break;
        if (s->realtime) {
            int64_t due = g->start_ms + j * g->interval_ms;
            sleep_ms(due - gw_now_ms());
        }
        for (size_t lo = w->lo; lo < w->hi; lo += s->batch) {
            size_t hi = lo + s->batch < w->hi ? lo + s->batch : w->hi;
            if (s->max_rate > 0) {
                double due = s->t0 + (double)my_samples / (s->max_rate / s->conns);
                double wait = due - now_s();
                if (wait > 0) sleep_ms((int64_t)(wait * 1000.0));
            }
            build_write(g, lo, hi, j, &pb);
            gw_buf_reset(&sn);
            if (gw_snappy_encode(pb.data, pb.len, &sn) != GW_OK) die("snappy encode failed");
            int64_t backoff = 30, t_first_fail = 0;
            for (;;) {
                int rc = http_do(&c, "POST", hdrs, sn.data, sn.len, &r);
                if (rc == 0 && r.status >= 200 && r.status < 300) {
                    char line[96];
                    int n = snprintf(line, sizeof line, "%" PRId64 " %zu %zu\n", j, lo, hi);
                    if (s->ack_fd >= 0 && write(s->ack_fd, line, (size_t)n) != n) die("cannot write ack log");
                    pthread_mutex_lock(&s->mu);
                    s->samples_acked += hi - lo;
                    s->requests_ok++;
                    s->bytes_sent += sn.len;
                    pthread_mutex_unlock(&s->mu);
                    break;
                }
                if (rc == 0 && r.status >= 400 && r.status < 500 && r.status != 429) {
                    pthread_mutex_lock(&s->mu);
                    s->refused_requests++;
                    s->refused_samples += hi - lo;
                    uint64_t nref = s->refused_requests;
                    pthread_mutex_unlock(&s->mu);
                    if (nref <= 5)
                        fprintf(stderr, "gw_rwload: refused (HTTP %d) scrape %" PRId64 " series %zu..%zu: %.*s\n",
                                r.status, j, lo, hi, (int)(r.body.len > 300 ? 300 : r.body.len),
                                r.body.data ? (const char *)r.body.data : "");
                    break;
                }
                int64_t nowm = gw_now_ms();
                if (t_first_fail == 0) t_first_fail = nowm;
                if (nowm - t_first_fail > s->retry_for_ms) {
                    fprintf(stderr, "gw_rwload: giving up after %" PRId64 " ms: %s\n", nowm - t_first_fail,
                            rc == 0 ? "server error" : c.err);
                    pthread_mutex_lock(&s->mu);
                    s->failed = 1;
                    pthread_cond_broadcast(&s->cv);
                    pthread_mutex_unlock(&s->mu);
                    goto out;
                }
                pthread_mutex_lock(&s->mu);
                uint64_t nret = ++s->retries;
                pthread_mutex_unlock(&s->mu);
                if (!s->quiet && (nret <= 3 || nret % 100 == 0)) {
                    if (rc == 0)
                        fprintf(stderr, "gw_rwload: HTTP %d, retrying (retry #%" PRIu64 "): %.*s\n", r.status, nret,
                                (int)(r.body.len > 200 ? 200 : r.body.len), r.body.data ? (const char *)r.body.data : "");
                    else
                        fprintf(stderr, "gw_rwload: %s, retrying (retry #%" PRIu64 ")\n", c.err, nret);
                }
                sleep_ms(backoff);
                backoff = backoff * 2 > 5000 ? 5000 : backoff * 2;
            }
            my_samples += hi - lo;
        }
    }
out:
    pthread_mutex_lock(&s->mu);
    s->progress[w->id] = INT64_MAX;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    http_free(&c);
    gw_buf_free(&r.body);
    gw_buf_free(&pb);
    gw_buf_free(&sn);
    return NULL;
}

/* gw_rwload send: the generated series over so->conns connections; 0 when
 * every request was acked, 1 when one was refused or a sender gave up. */
int cmd_send(struct gen *g, const struct gen_opts *o, const struct send_opts *so)
{
    struct sender s;
    memset(&s, 0, sizeof s);
    s.g = g;
    s.url = so->url;
    s.conns = so->conns;
    s.batch = so->batch;
    s.realtime = so->realtime;
    s.max_rate = so->max_rate;
    s.retry_for_ms = so->retry_for_ms;
    s.timeout_ms = so->timeout_ms;
    s.quiet = so->quiet;
    s.ack_fd = -1;
    if (so->ack_log) {
        s.ack_fd = open(so->ack_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (s.ack_fd < 0) die("cannot open ack log %s", so->ack_log);
        char hdr[512];
        int n = snprintf(hdr, sizeof hdr, "# gw_rwload nodes=%d gpus=%d interval=%" PRId64 " start=%" PRId64
                         " seed=%" PRIu64 " host=%s steps=%" PRId64 "\n", o->nodes, o->gpus, o->interval_ms,
                         g->start_ms, o->seed, host_mode_name(o->host_mode), g->n_steps);
        if (write(s.ack_fd, hdr, (size_t)n) != n) die("cannot write ack log");
    }
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.cv, NULL);
    s.progress = calloc((size_t)so->conns, sizeof *s.progress);
    struct worker *w = calloc((size_t)so->conns, sizeof *w);
    pthread_t *th = calloc((size_t)so->conns, sizeof *th);
    if (!s.progress || !w || !th) die("out of memory");
    fprintf(stderr, "gw_rwload: sending %zu series x %" PRId64 " scrapes = %" PRIu64 " samples, start=%" PRId64 "\n",
            g->n, g->n_steps, (uint64_t)g->n * (uint64_t)g->n_steps, g->start_ms);
    s.t0 = now_s();
    for (int k = 0; k < so->conns; k++) {
        w[k].s = &s;
        w[k].id = k;
        w[k].lo = g->n * (size_t)k / (size_t)so->conns;
        w[k].hi = g->n * (size_t)(k + 1) / (size_t)so->conns;
        if (pthread_create(&th[k], NULL, worker_main, &w[k]) != 0) die("cannot start thread");
    }
    for (int k = 0; k < so->conns; k++) pthread_join(th[k], NULL);
    double el = now_s() - s.t0;
    printf("send: series=%zu samples=%" PRIu64 " requests=%" PRIu64 " retries=%" PRIu64 " refused_requests=%" PRIu64
           " refused_samples=%" PRIu64 " wire_bytes=%" PRIu64 " elapsed_s=%.3f samples_per_s=%.0f result=%s\n",
           g->n, s.samples_acked, s.requests_ok, s.retries, s.refused_requests, s.refused_samples, s.bytes_sent, el,
           el > 0 ? (double)s.samples_acked / el : 0.0,
           s.failed ? "GAVE_UP" : (s.refused_requests ? "REFUSED" : "OK"));
    int rc = (s.failed || s.refused_requests) ? 1 : 0;
    if (s.ack_fd >= 0) close(s.ack_fd);
    free(s.progress);
    free(w);
    free(th);
    pthread_mutex_destroy(&s.mu);
    pthread_cond_destroy(&s.cv);
    return rc;
}
