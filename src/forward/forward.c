/* forward/forward.c - the sender threads of forwarding (one per
 * destination), the WAL hold and the per-destination counters; see
 * gpuwatch/forward.h for the behaviour and docs/operations.md
 * "Forwarding" for the operator's view.
 *
 * One destination's loop: enforce the disk bound (release whole oldest
 * segments while the pending bytes exceed it), build a batch from the
 * cursor (reader.c), send it until it is acknowledged, refused, or given
 * up (shutdown, or the bound passed while retrying), then move the
 * cursor past it and write the cursor file. Batches are always rebuilt
 * from the cursor, so what was not acknowledged is read again. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "forward/forward_int.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/log.h"
#include "gpuwatch/rw.h"

#define DEFAULT_BATCH 2000u
#define DEFAULT_MAX_PENDING (10ull << 30)
#define DEFAULT_MIN_BACKOFF_MS 30u
#define DEFAULT_MAX_BACKOFF_MS 5000u
#define DEFAULT_POLL_MS 200u
#define RETRY_LOG_EVERY_MS 30000
#define FIXED_HEADERS 3

enum send_result { SENT = 0, REFUSED = 1, GIVEN_UP = 2 };

struct dest {
    struct gw_fwd *f;
    struct gw_fwd_dest_opts o;
    char cursor_path[4200];
    char hbuf[GW_FWD_MAX_HEADERS][1100];
    struct gw_httpc_header hdr[GW_FWD_MAX_HEADERS + FIXED_HEADERS];
    size_t n_hdr;
    struct gw_fwd_cursor cur;          /* the sender thread's */
    _Atomic uint64_t hold_pos;         /* (cur.seg << 32), read by gw_fwd_hold */
    pthread_t th;
    int started;
    _Atomic int caught_up;
    _Atomic int64_t caught_up_ms;      /* wall time it last was */
    _Atomic uint64_t pending, samples_sent, batches_sent, retried, failed;
    _Atomic uint64_t dropped_rejected, dropped_max_pending, dropped_missing;
    _Atomic int64_t last_error_ms, highest_sent_ms;
    int64_t last_retry_log_ms;
};

struct gw_fwd {
    struct gw_fwd_opts o;
    char *wal_dir, *state_dir;
    struct dest d[GW_FWD_MAX_DESTS];
    size_t n;
    gw_fwd_labels_fn labels;
    void *labels_ud;
    pthread_mutex_t mu;
    pthread_cond_t cv;                 /* wakes sleeping senders at stop */
    int stop;
};

void gw_fwd_dest_opts_default(struct gw_fwd_dest_opts *d)
{
    memset(d, 0, sizeof *d);
    d->protocol = 1;
    d->batch_samples = DEFAULT_BATCH;
    d->max_pending_bytes = DEFAULT_MAX_PENDING;
    gw_httpc_opts_default(&d->http);
}

void gw_fwd_opts_default(struct gw_fwd_opts *o)
{
    memset(o, 0, sizeof *o);
    o->min_backoff_ms = DEFAULT_MIN_BACKOFF_MS;
    o->max_backoff_ms = DEFAULT_MAX_BACKOFF_MS;
    o->poll_ms = DEFAULT_POLL_MS;
}

static uint64_t pos_of(const struct gw_fwd_cursor *c) { return (uint64_t)c->seg << 32; }

uint64_t gw_fwd_hold(void *ud)
{
    struct gw_fwd *f = ud;
    uint64_t m = UINT64_MAX;
    for (size_t i = 0; f && i < f->n; i++) {
        uint64_t p = atomic_load(&f->d[i].hold_pos);
        if (p < m) m = p;
    }
    return m;
}

/* ------------------------------------------------------------------ setup */

int gw_fwd_check_dest(const struct gw_fwd_dest_opts *d, struct gw_error *err)
{
    struct gw_url u;
    if (!d->url) return gw_error_set(err, GW_EINVAL, "forward: destination without a URL");
    int rc = gw_url_parse(d->url, &u, err);
    if (rc != GW_OK) return rc;
    if (d->protocol != 1 && d->protocol != 2 && d->protocol != 0)
        return gw_error_set(err, GW_EINVAL, "forward to %s: protocol must be 1 or 2, not %d", d->url, d->protocol);
    if (d->n_headers > GW_FWD_MAX_HEADERS)
        return gw_error_set(err, GW_EINVAL, "forward to %s: more than %d headers", d->url, GW_FWD_MAX_HEADERS);
    for (size_t i = 0; i < d->n_headers; i++) {
        char buf[1100];
        const char *n, *v;
        rc = gw_fwd_header_parse(d->headers[i], buf, sizeof buf, &n, &v, err);
        if (rc != GW_OK) return rc;
    }
    return GW_OK;
}

/* Checks d's settings and builds its request headers. */
static int dest_setup(struct dest *d, struct gw_error *err)
{
    int rc = gw_fwd_check_dest(&d->o, err);
    if (rc != GW_OK) return rc;
    if (d->o.protocol == 0) d->o.protocol = 1;
    if (!d->o.batch_samples) d->o.batch_samples = DEFAULT_BATCH;
    if (!d->o.max_pending_bytes) d->o.max_pending_bytes = DEFAULT_MAX_PENDING;
    d->hdr[0] = (struct gw_httpc_header){"Content-Encoding", "snappy"};
    if (d->o.protocol == 2) {
        d->hdr[1] = (struct gw_httpc_header){"Content-Type", "application/x-protobuf;proto=io.prometheus.write.v2.Request"};
        d->hdr[2] = (struct gw_httpc_header){"X-Prometheus-Remote-Write-Version", "2.0.0"};
    } else {
        d->hdr[1] = (struct gw_httpc_header){"Content-Type", "application/x-protobuf"};
        d->hdr[2] = (struct gw_httpc_header){"X-Prometheus-Remote-Write-Version", "0.1.0"};
    }
    d->n_hdr = FIXED_HEADERS;
    for (size_t i = 0; i < d->o.n_headers; i++) {
        struct gw_httpc_header *h = &d->hdr[d->n_hdr++];
        rc = gw_fwd_header_parse(d->o.headers[i], d->hbuf[i], sizeof d->hbuf[i], &h->name, &h->value, err);
        if (rc != GW_OK) return rc;
    }
    return GW_OK;
}

/* The cursor file's position, or the oldest segment's start. */
static int dest_load_cursor(struct gw_fwd *f, struct dest *d, struct gw_error *err)
{
    gw_fwd_cursor_path(d->cursor_path, sizeof d->cursor_path, f->state_dir, d->o.url);
    struct gw_error ce = {0};
    int rc = gw_fwd_cursor_load(d->cursor_path, d->o.url, &d->cur, &ce);
    if (rc == GW_OK) {
        gw_log(GW_LOG_INFO, "forward", "msg=\"resuming\" url=%s segment=%u offset=%llu skip=%llu", d->o.url,
               d->cur.seg, (unsigned long long)d->cur.off, (unsigned long long)d->cur.skip);
    } else if (rc == GW_EIO) {
        return gw_error_set(err, rc, "%s", ce.msg);
    } else {
        if (rc == GW_ECORRUPT)
            gw_log(GW_LOG_WARN, "forward", "msg=\"cursor not usable, starting at the oldest WAL segment\" err=\"%s\"",
                   ce.msg);
        rc = gw_fwd_first_cursor(f->wal_dir, &d->cur, err);
        if (rc != GW_OK) return rc;
    }
    atomic_store(&d->hold_pos, pos_of(&d->cur));
    return GW_OK;
}

int gw_fwd_new(struct gw_fwd **out, const struct gw_fwd_opts *o, struct gw_error *err)
{
    *out = NULL;
    if (!o->wal_dir || !o->state_dir) return gw_error_set(err, GW_EINVAL, "forward: missing directories");
    if (o->n_dests == 0 || o->n_dests > GW_FWD_MAX_DESTS)
        return gw_error_set(err, GW_EINVAL, "forward: between 1 and %d destinations", GW_FWD_MAX_DESTS);
    struct gw_fwd *f = calloc(1, sizeof *f);
    if (!f) return gw_error_set(err, GW_ENOMEM, "out of memory");
    f->o = *o;
    if (!f->o.min_backoff_ms) f->o.min_backoff_ms = DEFAULT_MIN_BACKOFF_MS;
    if (!f->o.max_backoff_ms) f->o.max_backoff_ms = DEFAULT_MAX_BACKOFF_MS;
    if (!f->o.poll_ms) f->o.poll_ms = DEFAULT_POLL_MS;
    pthread_mutex_init(&f->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&f->cv, &ca);
    pthread_condattr_destroy(&ca);
    f->wal_dir = strdup(o->wal_dir);
    f->state_dir = strdup(o->state_dir);
    int rc = GW_OK;
    if (!f->wal_dir || !f->state_dir) rc = gw_error_set(err, GW_ENOMEM, "out of memory");
    else if (mkdir(f->state_dir, 0755) != 0 && errno != EEXIST)
        rc = gw_error_set(err, GW_EIO, "cannot create %s: %s", f->state_dir, strerror(errno));
    for (size_t i = 0; i < o->n_dests && rc == GW_OK; i++) {
        struct dest *d = &f->d[i];
        d->f = f;
        d->o = o->dests[i];
        for (size_t j = 0; j < i; j++)
            if (!strcmp(o->dests[j].url ? o->dests[j].url : "", d->o.url ? d->o.url : ""))
                rc = gw_error_set(err, GW_EINVAL, "forward: destination %s given twice", d->o.url);
        if (rc == GW_OK) rc = dest_setup(d, err);
        if (rc == GW_OK) rc = dest_load_cursor(f, d, err);
        atomic_store(&d->caught_up_ms, gw_now_ms());
        f->n = i + 1;
    }
    if (rc != GW_OK) {
        gw_fwd_free(f);
        return rc;
    }
    *out = f;
    return GW_OK;
}

/* ----------------------------------------------------------------- sender */

/* Sleeps up to ms unless stopping. 1 when stopping. */
static int nap(struct gw_fwd *f, int64_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&f->mu);
    while (!f->stop && pthread_cond_timedwait(&f->cv, &f->mu, &ts) != ETIMEDOUT) {}
    int s = f->stop;
    pthread_mutex_unlock(&f->mu);
    return s;
}

static int stopping(struct gw_fwd *f)
{
    pthread_mutex_lock(&f->mu);
    int s = f->stop;
    pthread_mutex_unlock(&f->mu);
    return s;
}

static void save_cursor(struct dest *d)
{
    struct gw_error e = {0};
    atomic_store(&d->hold_pos, pos_of(&d->cur));
    if (gw_fwd_cursor_save(d->cursor_path, d->o.url, &d->cur, &e) != GW_OK)
        gw_log(GW_LOG_WARN, "forward", "msg=\"cannot save the cursor\" url=%s err=\"%s\"", d->o.url, e.msg);
}

/* Releases d's oldest segments while its pending bytes exceed the bound
 * (never the newest segment). */
static void enforce_bound(struct dest *d, struct gw_fwd_reader *r)
{
    size_t nseg = 0;
    uint64_t pending = gw_fwd_pending_bytes(d->f->wal_dir, &d->cur, &nseg);
    while (pending > d->o.max_pending_bytes && nseg > 1) {
        uint64_t n = 0;
        struct gw_fwd_cursor next;
        struct gw_error e = {0};
        if (gw_fwd_release_segment(r, &d->cur, &n, &next, &e) != GW_OK || next.seg == d->cur.seg) {
            if (e.msg[0]) gw_log(GW_LOG_WARN, "forward", "msg=\"cannot release a segment\" err=\"%s\"", e.msg);
            break;
        }
        atomic_fetch_add(&d->dropped_max_pending, n);
        if (d->cur.seg != 0)   /* 0: the WAL had no segment yet */
            gw_log(GW_LOG_WARN, "forward", "msg=\"pending data over --forward.max-pending, oldest segment released\" "
                   "url=%s segment=%u samples_dropped=%llu pending_bytes=%llu", d->o.url, d->cur.seg,
                   (unsigned long long)n, (unsigned long long)pending);
        d->cur = next;
        save_cursor(d);
        pending = gw_fwd_pending_bytes(d->f->wal_dir, &d->cur, &nseg);
    }
    atomic_store(&d->pending, pending);
}

static void note_retry(struct dest *d, int rc, int status, const struct gw_error *e)
{
    int64_t now = gw_now_ms();
    atomic_store(&d->last_error_ms, now);
    atomic_fetch_add(&d->retried, 1);
    if (now - d->last_retry_log_ms < RETRY_LOG_EVERY_MS) return;
    d->last_retry_log_ms = now;
    if (rc != GW_OK)
        gw_log(GW_LOG_WARN, "forward", "msg=\"send failed, retrying\" url=%s err=\"%s\"", d->o.url, e->msg);
    else
        gw_log(GW_LOG_WARN, "forward", "msg=\"send failed, retrying\" url=%s status=%d", d->o.url, status);
}

/* Sends body until acknowledged (SENT), refused (REFUSED) or given up
 * (GIVEN_UP: stopping, or the disk bound passed meanwhile). */
static enum send_result send_batch(struct dest *d, struct gw_httpc *c, const struct gw_buf *body, uint64_t n,
                                   struct gw_httpc_response *resp)
{
    uint32_t backoff = 0;
    for (;;) {
        struct gw_error e = {0};
        int rc = gw_httpc_request(c, "POST", NULL, d->hdr, d->n_hdr, body->data, body->len, resp, &e);
        enum gw_fwd_verdict v = gw_fwd_classify(rc, resp->status);
        if (v == GW_FWD_ACK) return SENT;
        if (v == GW_FWD_DROP) {
            atomic_store(&d->last_error_ms, gw_now_ms());
            atomic_fetch_add(&d->failed, 1);
            atomic_fetch_add(&d->dropped_rejected, n);
            gw_log(GW_LOG_WARN, "forward", "msg=\"batch refused, dropped\" url=%s status=%d samples=%llu body=\"%.200s\"",
                   d->o.url, resp->status, (unsigned long long)n, resp->body.data ? (const char *)resp->body.data : "");
            return REFUSED;
        }
        note_retry(d, rc, resp->status, &e);
        backoff = gw_fwd_backoff_next(backoff, d->f->o.min_backoff_ms, d->f->o.max_backoff_ms);
        int64_t wait = backoff;
        if (rc == GW_OK && resp->status == 429) {
            size_t len = 0;
            const char *ra = gw_httpc_response_header(resp, "Retry-After", &len);
            int64_t ms = gw_fwd_retry_after_ms(ra, len, gw_now_ms());
            if (ms >= 0) wait = ms;
        }
        if (nap(d->f, wait)) return GIVEN_UP;
        size_t nseg;
        uint64_t pending = gw_fwd_pending_bytes(d->f->wal_dir, &d->cur, &nseg);
        atomic_store(&d->pending, pending);
        if (pending > d->o.max_pending_bytes && nseg > 1) return GIVEN_UP;
    }
}

/* After a batch was sent or refused: counters, cursor. */
static void batch_done(struct dest *d, const struct gw_fwd_batch *b, enum send_result sr)
{
    if (sr == SENT && b->n) {
        atomic_fetch_add(&d->samples_sent, b->n);
        atomic_fetch_add(&d->batches_sent, 1);
        if (b->max_t > atomic_load(&d->highest_sent_ms)) atomic_store(&d->highest_sent_ms, b->max_t);
    }
    if (b->missing) atomic_fetch_add(&d->dropped_missing, b->missing);
    if (b->lost_segments)
        gw_log(GW_LOG_WARN, "forward", "msg=\"WAL segments deleted before they were sent\" url=%s segments=%llu",
               d->o.url, (unsigned long long)b->lost_segments);
    d->cur = b->end;
    save_cursor(d);
    if (b->caught_up) {
        atomic_store(&d->caught_up, 1);
        atomic_store(&d->caught_up_ms, gw_now_ms());
    } else {
        atomic_store(&d->caught_up, 0);
    }
}

static void *dest_main(void *arg)
{
    struct dest *d = arg;
    struct gw_fwd *f = d->f;
    struct gw_fwd_reader r;
    struct gw_fwd_batch b;
    struct gw_buf body;
    struct gw_httpc_response resp;
    struct gw_httpc *c = NULL;
    struct gw_error e = {0};
    gw_fwd_batch_init(&b);
    gw_buf_init(&body, 0);
    gw_httpc_response_init(&resp);
    int ok = gw_fwd_reader_init(&r, f->wal_dir, f->o.include_internal) == GW_OK &&
             gw_httpc_open(&c, d->o.url, &d->o.http, &e) == GW_OK;
    r.labels = f->labels;
    r.labels_ud = f->labels_ud;
    r.protocol = d->o.protocol;
    if (!ok) {   /* never holds the WAL back for a destination that cannot send */
        atomic_store(&d->hold_pos, UINT64_MAX);
        gw_log(GW_LOG_ERROR, "forward", "msg=\"cannot start\" url=%s err=\"%s\"", d->o.url, e.msg);
    }
    while (ok && !stopping(f)) {
        enforce_bound(d, &r);
        if (gw_fwd_read_batch(&r, &d->cur, d->o.batch_samples, &b, &e) != GW_OK) {
            gw_log(GW_LOG_WARN, "forward", "msg=\"cannot read the WAL\" url=%s err=\"%s\"", d->o.url, e.msg);
            nap(f, f->o.poll_ms * 5);
            continue;
        }
        enum send_result sr = SENT;
        if (b.n) {
            atomic_store(&d->caught_up, 0);   /* lag counts from the last time it was */
            gw_buf_reset(&body);
            if (gw_snappy_encode(b.pb.data, b.pb.len, &body) != GW_OK) {
                nap(f, f->o.poll_ms);
                continue;
            }
            sr = send_batch(d, c, &body, b.n, &resp);
        }
        if (sr == GIVEN_UP) continue;
        int moved = b.end.seg != d->cur.seg || b.end.off != d->cur.off || b.end.skip != d->cur.skip;
        if (moved || b.n) {
            batch_done(d, &b, sr);
        } else if (b.caught_up) {
            atomic_store(&d->caught_up, 1);
            atomic_store(&d->caught_up_ms, gw_now_ms());
        }
        if (b.caught_up) nap(f, f->o.poll_ms);
    }
    gw_httpc_close(c);
    gw_httpc_response_free(&resp);
    gw_buf_free(&body);
    gw_fwd_batch_free(&b);
    gw_fwd_reader_free(&r);
    return NULL;
}

int gw_fwd_start(struct gw_fwd *f, gw_fwd_labels_fn labels, void *labels_ud, struct gw_error *err)
{
    f->labels = labels;
    f->labels_ud = labels_ud;
    for (size_t i = 0; i < f->n; i++) {
        if (pthread_create(&f->d[i].th, NULL, dest_main, &f->d[i]) != 0)
            return gw_error_set(err, GW_ENOMEM, "forward: cannot start a thread");
        f->d[i].started = 1;
        pthread_setname_np(f->d[i].th, "gw-forward");   /* its CPU shows per thread */
        gw_log(GW_LOG_INFO, "forward", "msg=\"forwarding\" url=%s batch=%u max_pending_bytes=%llu", f->d[i].o.url,
               f->d[i].o.batch_samples, (unsigned long long)f->d[i].o.max_pending_bytes);
    }
    return GW_OK;
}

void gw_fwd_stop(struct gw_fwd *f)
{
    if (!f) return;
    pthread_mutex_lock(&f->mu);
    f->stop = 1;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    for (size_t i = 0; i < f->n; i++)
        if (f->d[i].started) pthread_join(f->d[i].th, NULL);
    for (size_t i = 0; i < f->n; i++) f->d[i].started = 0;
}

void gw_fwd_free(struct gw_fwd *f)
{
    if (!f) return;
    gw_fwd_stop(f);
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->cv);
    free(f->wal_dir);
    free(f->state_dir);
    free(f);
}

size_t gw_fwd_n_dests(const struct gw_fwd *f) { return f ? f->n : 0; }

int gw_fwd_stats(struct gw_fwd *f, size_t i, struct gw_fwd_stats *st)
{
    if (!f || i >= f->n) return GW_EINVAL;
    struct dest *d = &f->d[i];
    memset(st, 0, sizeof *st);
    st->url = d->o.url;
    int64_t now = gw_now_ms(), since = atomic_load(&d->caught_up_ms);
    st->lag_seconds = atomic_load(&d->caught_up) || now < since ? 0 : (double)(now - since) / 1000.0;
    st->pending_bytes = atomic_load(&d->pending);
    st->samples_sent = atomic_load(&d->samples_sent);
    st->batches_sent = atomic_load(&d->batches_sent);
    st->batches_retried = atomic_load(&d->retried);
    st->batches_failed = atomic_load(&d->failed);
    st->dropped_rejected = atomic_load(&d->dropped_rejected);
    st->dropped_max_pending = atomic_load(&d->dropped_max_pending);
    st->dropped_missing = atomic_load(&d->dropped_missing);
    st->last_error_s = (double)atomic_load(&d->last_error_ms) / 1000.0;
    int64_t hs = atomic_load(&d->highest_sent_ms);
    st->highest_sent_s = hs > 0 ? (double)hs / 1000.0 : 0;
    return GW_OK;
}
