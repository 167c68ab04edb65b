/* forward/reader.c - reads the WAL segment files (format at the top of
 * src/wal/wal.c: 8-byte magic, then records u32 len | u32 crc32c(type |
 * payload) | u8 type | payload) from a cursor and builds one remote-write
 * batch from the db's SAMPLES records (payloads: src/db/record.c).
 *
 * The writer appends to the newest segment while this reads it, so a
 * short or checksum-failing record at the end of the newest segment is
 * "not written yet": the read ends there and is retried later. Segments
 * are written one after the other (a segment is complete before the next
 * file is created), so the same in an older segment is a torn tail left by
 * a crash: the read goes on with the next segment. Series are named by sid
 * in SAMPLES records; their labels come from SERIES records read so far,
 * else from the labels callback (the store). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "forward/forward_int.h"
#include "gpuwatch/arena.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/db.h"
#include "gpuwatch/labels.h"
#include "gpuwatch/rw.h"
#include "gpuwatch/wal.h"

#define SEG_MAGIC 8u
#define REC_HDR 9u
#define SIDS_POOL_MAX (256u << 20)    /* label bytes cached before the map is cleared */

struct gw_fwd_sid {
    uint64_t sid;                     /* 0: empty slot */
    uint64_t off;                     /* into pool */
    uint32_t len;
    uint8_t internal;
    uint32_t gen, series;             /* protocol 2: batch it was last seen in, its index there */
};

/* ---------------------------------------------------------------- sid map */

static struct gw_fwd_sid *sids_find(struct gw_fwd_sids *m, uint64_t sid)
{
    if (!m->cap) return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = (size_t)(sid * 0x9E3779B97F4A7C15ull) & mask;; i = (i + 1) & mask) {
        if (m->v[i].sid == sid) return &m->v[i];
        if (m->v[i].sid == 0) return NULL;
    }
}

static void sids_clear(struct gw_fwd_sids *m)
{
    free(m->v);
    m->v = NULL;
    m->cap = m->n = 0;
    gw_buf_reset(&m->pool);
}

/* Adds sid with canonical labels (their remote-write label fields are
 * stored); an existing entry is kept. GW_OK, GW_ENOMEM, GW_ECORRUPT. */
static int sids_put(struct gw_fwd_sids *m, uint64_t sid, const uint8_t *labels, size_t len)
{
    if (sid == 0 || sids_find(m, sid)) return GW_OK;
    if (m->pool.len > SIDS_POOL_MAX) sids_clear(m);
    if ((m->n + 1) * 2 > m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 1024;
        struct gw_fwd_sid *nv = calloc(nc, sizeof *nv);
        if (!nv) return GW_ENOMEM;
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->v[i].sid) continue;
            size_t j = (size_t)(m->v[i].sid * 0x9E3779B97F4A7C15ull) & (nc - 1);
            while (nv[j].sid) j = (j + 1) & (nc - 1);
            nv[j] = m->v[i];
        }
        free(m->v);
        m->v = nv;
        m->cap = nc;
    }
    struct gw_label ls[GW_LABELS_MAX];
    size_t n;
    if (gw_labels_decode(labels, len, ls, GW_LABELS_MAX, &n) != GW_OK) return GW_ECORRUPT;
    size_t need = gw_rw_labels_pb_size(ls, n);
    if (need > UINT32_MAX) return GW_ECORRUPT;
    int rc = gw_buf_reserve(&m->pool, need);
    if (rc) return rc;
    size_t off = m->pool.len;
    m->pool.len += gw_rw_labels_pb(ls, n, m->pool.data + off);
    size_t j = (size_t)(sid * 0x9E3779B97F4A7C15ull) & (m->cap - 1);
    while (m->v[j].sid) j = (j + 1) & (m->cap - 1);
    m->v[j] = (struct gw_fwd_sid){sid, off, (uint32_t)need, (uint8_t)gw_fwd_is_internal(labels, len), 0, 0};
    m->n++;
    return GW_OK;
}

/* ------------------------------------------------------------------ files */

int gw_fwd_reader_init(struct gw_fwd_reader *r, const char *wal_dir, int include_internal)
{
    memset(r, 0, sizeof *r);
    r->fd = -1;
    r->include_internal = include_internal;
    gw_buf_init(&r->rec, GW_WAL_MAX_RECORD + 16);
    gw_buf_init(&r->lab, 0);
    gw_buf_init(&r->sids.pool, 0);
    r->wal_dir = strdup(wal_dir);
    return r->wal_dir ? GW_OK : GW_ENOMEM;
}

void gw_fwd_reader_free(struct gw_fwd_reader *r)
{
    if (r->fd >= 0) close(r->fd);
    r->fd = -1;
    free(r->wal_dir);
    r->wal_dir = NULL;
    gw_buf_free(&r->rec);
    gw_buf_free(&r->lab);
    sids_clear(&r->sids);
    gw_buf_free(&r->sids.pool);
}

void gw_fwd_batch_init(struct gw_fwd_batch *b)
{
    memset(b, 0, sizeof *b);
    gw_buf_init(&b->pb, 0);
    gw_buf_init(&b->v2lab, 0);
    gw_buf_init(&b->v2samp, 0);
}

void gw_fwd_batch_free(struct gw_fwd_batch *b)
{
    gw_buf_free(&b->pb);
    gw_buf_free(&b->v2lab);
    gw_buf_free(&b->v2samp);
}

/* Opens segment seg into r->fd. 1 opened, 0 no such file, -1 error. */
static int seg_open(struct gw_fwd_reader *r, uint32_t seg)
{
    if (r->fd >= 0 && r->fd_seg == seg) return 1;
    if (r->fd >= 0) close(r->fd);
    r->fd = -1;
    char path[4200], name[32];
    gw_wal_segment_name(name, sizeof name, seg);
    snprintf(path, sizeof path, "%s/%s", r->wal_dir, name);
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0) return errno == ENOENT ? 0 : -1;
    r->fd_seg = seg;
    return 1;
}

/* The smallest segment number > seg on disk, 0 when none. */
static uint32_t seg_after(const char *wal_dir, uint32_t seg)
{
    uint32_t *segs = NULL, found = 0;
    size_t n = 0;
    if (gw_wal_segments(wal_dir, &segs, &n, NULL) != GW_OK) return 0;
    for (size_t i = 0; i < n && !found; i++)
        if (segs[i] > seg) found = segs[i];
    free(segs);
    return found;
}

int gw_fwd_first_cursor(const char *wal_dir, struct gw_fwd_cursor *c, struct gw_error *err)
{
    uint32_t *segs = NULL;
    size_t n = 0;
    int rc = gw_wal_segments(wal_dir, &segs, &n, err);
    if (rc == GW_ENOTFOUND) rc = GW_OK;
    if (rc != GW_OK) return rc;
    *c = (struct gw_fwd_cursor){n ? segs[0] : 0, SEG_MAGIC, 0};
    free(segs);
    return GW_OK;
}

uint64_t gw_fwd_pending_bytes(const char *wal_dir, const struct gw_fwd_cursor *c, size_t *n_segs)
{
    uint32_t *segs = NULL;
    size_t n = 0, k = 0;
    uint64_t total = 0;
    if (gw_wal_segments(wal_dir, &segs, &n, NULL) == GW_OK) {
        char path[4200], name[32];
        for (size_t i = 0; i < n; i++) {
            if (segs[i] < c->seg) continue;
            struct stat st;
            gw_wal_segment_name(name, sizeof name, segs[i]);
            snprintf(path, sizeof path, "%s/%s", wal_dir, name);
            if (stat(path, &st) != 0) continue;
            uint64_t sz = (uint64_t)st.st_size, from = segs[i] == c->seg ? c->off : SEG_MAGIC;
            if (sz > from) total += sz - from;
            k++;
        }
    }
    free(segs);
    if (n_segs) *n_segs = k;
    return total;
}

/* Reads the record at (r's open segment, off) into r->rec. 1: a valid
 * record (*type, payload in r->rec, *next offset); 0: none there (end of
 * the written data, or a torn / failing record); -1: read error. */
static int rec_read(struct gw_fwd_reader *r, uint64_t off, uint8_t *type, uint64_t *next)
{
    uint8_t h[REC_HDR];
    ssize_t k = pread(r->fd, h, REC_HDR, (off_t)off);
    if (k < 0) return -1;
    if ((size_t)k < REC_HDR) return 0;
    uint32_t len = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 24;
    uint32_t crc = (uint32_t)h[4] | (uint32_t)h[5] << 8 | (uint32_t)h[6] << 16 | (uint32_t)h[7] << 24;
    if (len > GW_WAL_MAX_RECORD) return 0;
    gw_buf_reset(&r->rec);
    if (gw_buf_reserve(&r->rec, len ? len : 1) != GW_OK) return -1;
    size_t got = 0;
    while (got < len) {
        k = pread(r->fd, r->rec.data + got, len - got, (off_t)(off + REC_HDR + got));
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return -1;
        if (k == 0) return 0;
        got += (size_t)k;
    }
    uint32_t c = gw_crc32c(0, &h[8], 1);
    if (len) c = gw_crc32c(c, r->rec.data, len);
    if (c != crc) return 0;
    r->rec.len = len;
    *type = h[8];
    *next = off + REC_HDR + len;
    return 1;
}

/* ------------------------------------------------------------------ batch */

struct fill {
    struct gw_fwd_reader *r;
    struct gw_fwd_batch *b;
    uint64_t max, index, skip;      /* sample index in the record, samples to skip */
    int full;
    struct gw_error *err;
};

static int on_series(void *ud, uint64_t sid, const uint8_t *labels, size_t len)
{
    struct fill *f = ud;
    int rc = sids_put(&f->r->sids, sid, labels, len);
    return rc == GW_ECORRUPT ? GW_OK : rc;
}

#define FILL_FULL 1     /* stops gw_rec_samples_each: the batch is full */

/* The map entry of sid, asking the labels callback when it is unknown;
 * NULL when no labels are to be had (or on ENOMEM, *rc set). */
static struct gw_fwd_sid *sid_lookup(struct fill *f, uint64_t sid, int *rc)
{
    struct gw_fwd_reader *r = f->r;
    struct gw_fwd_sid *e = sids_find(&r->sids, sid);
    if (e || !r->labels) return e;
    gw_buf_reset(&r->lab);
    struct gw_error le = {0};
    if (r->labels(r->labels_ud, sid, &r->lab, &le) != GW_OK) return NULL;
    if ((*rc = sids_put(&r->sids, sid, r->lab.data, r->lab.len)) == GW_ECORRUPT) *rc = GW_OK;
    return sids_find(&r->sids, sid);
}

/* ---------------------------------------------------- protocol 2 batches */

struct v2_sample {
    uint32_t series;
    int64_t t;
    double v;
};

/* Notes a sample of e's series: its labels join v2lab (as a v1 TimeSeries
 * holding only them) the first time the series is seen in this batch. */
static int v2_add(struct gw_fwd_reader *r, struct gw_fwd_batch *b, struct gw_fwd_sid *e, int64_t t, double v)
{
    int rc;
    if (e->gen != r->gen) {
        uint8_t h[1 + 10];
        h[0] = 0x0a;                               /* WriteRequest.timeseries */
        size_t k = 1 + gw_uvarint_put(h + 1, e->len);
        if ((rc = gw_buf_append(&b->v2lab, h, k)) != GW_OK) return rc;
        if ((rc = gw_buf_append(&b->v2lab, r->sids.pool.data + e->off, e->len)) != GW_OK) return rc;
        e->gen = r->gen;
        e->series = b->n_series++;
    }
    struct v2_sample s = {e->series, t, v};
    return gw_buf_append(&b->v2samp, &s, sizeof s);
}

/* Builds b->pb from v2lab and v2samp: the labels are decoded back with
 * the remote-write decoder, the samples grouped by series (a counting
 * sort, so each series keeps its WAL order), then encoded as 2.0. */
static int v2_finish(struct gw_fwd_batch *b)
{
    struct gw_arena a;
    struct gw_rw_request req;
    struct gw_error de = {0};
    const struct v2_sample *in = (const struct v2_sample *)(void *)b->v2samp.data;
    size_t n = b->v2samp.len / sizeof *in;
    gw_arena_init(&a, 64u << 10, 0);
    int rc = gw_rw_decode(b->v2lab.data, b->v2lab.len, 1, &a, &req, &de);
    if (rc == GW_OK && GW_NEVER(req.n_series != b->n_series)) rc = GW_ECORRUPT;
    struct gw_sample *all = rc == GW_OK && n ? gw_arena_alloc(&a, n * sizeof *all) : NULL;
    if (rc == GW_OK && n && !all) rc = GW_ENOMEM;
    if (rc == GW_OK) {
        for (size_t i = 0; i < n; i++) req.series[in[i].series].n_samples++;
        size_t at = 0;
        for (size_t i = 0; i < req.n_series; i++) {
            req.series[i].samples = all + at;
            at += req.series[i].n_samples;
            req.series[i].n_samples = 0;
            req.series[i].n_exemplars = 0;
        }
        for (size_t i = 0; i < n; i++) {
            struct gw_rw_series *s = &req.series[in[i].series];
            s->samples[s->n_samples++] = (struct gw_sample){in[i].t, in[i].v};
        }
        req.n_metadata = 0;
        rc = gw_rw_encode_v2(&req, &b->pb);
    }
    gw_arena_free(&a);
    return rc;
}

static int on_sample(void *ud, uint64_t sid, int64_t t, double v)
{
    struct fill *f = ud;
    if (f->index++ < f->skip) return GW_OK;
    if (f->b->n >= f->max) {
        f->index--;
        f->full = 1;
        return FILL_FULL;
    }
    int rc = GW_OK;
    struct gw_fwd_sid *e = sid_lookup(f, sid, &rc);
    if (rc) return rc;
    if (!e) {
        f->b->missing++;
        return GW_OK;
    }
    if (e->internal && !f->r->include_internal) {
        f->b->filtered++;
        return GW_OK;
    }
    if (f->r->protocol == 2)
        rc = v2_add(f->r, f->b, e, t, v);
    else
        rc = gw_rw_append_sample(&f->b->pb, f->r->sids.pool.data + e->off, e->len, t, v);
    if (rc) return rc;
    f->b->n++;
    if (t > f->b->max_t) f->b->max_t = t;
    return GW_OK;
}

/* At the end of the readable data of segment c->seg: 0 when c is at the
 * end of the WAL; 1 when the read goes on: a later segment exists, so
 * this one is complete - either a record arrived at c meanwhile (c stays)
 * or c moves to the next segment. */
static int seg_end(struct gw_fwd_reader *r, struct gw_fwd_cursor *c, struct gw_fwd_batch *b)
{
    uint32_t next = seg_after(r->wal_dir, c->seg);
    if (!next) return 0;
    uint8_t type;
    uint64_t at;
    int o = seg_open(r, c->seg);
    if (o == 1 && rec_read(r, c->off, &type, &at) == 1) return 1;   /* more arrived */
    if (o == 0 && c->seg != 0) b->lost_segments++;                  /* deleted before it was read */
    *c = (struct gw_fwd_cursor){next, SEG_MAGIC, 0};
    return 1;
}

int gw_fwd_read_batch(struct gw_fwd_reader *r, const struct gw_fwd_cursor *from, uint64_t max,
                      struct gw_fwd_batch *b, struct gw_error *err)
{
    gw_buf_reset(&b->pb);
    gw_buf_reset(&b->v2lab);
    gw_buf_reset(&b->v2samp);
    b->n_series = 0;
    if (++r->gen == 0) r->gen = 1;
    b->n = b->missing = b->filtered = b->lost_segments = 0;
    b->max_t = INT64_MIN;
    b->caught_up = 0;
    struct gw_fwd_cursor c = *from;
    if (c.off < SEG_MAGIC) c.off = SEG_MAGIC;
    struct fill f = {.r = r, .b = b, .max = max ? max : 1, .err = err};
    int rc = GW_OK;
    while (b->n < f.max && rc == GW_OK) {
        int o = seg_open(r, c.seg);
        if (o < 0) return gw_error_set(err, GW_EIO, "forward: cannot open wal segment %u: %s", c.seg, strerror(errno));
        uint8_t type = 0;
        uint64_t next = 0;
        int got = o == 1 ? rec_read(r, c.off, &type, &next) : 0;
        if (got < 0) return gw_error_set(err, GW_EIO, "forward: cannot read wal segment %u: %s", c.seg, strerror(errno));
        if (got == 0) {
            if (!seg_end(r, &c, b)) {
                b->caught_up = 1;
                break;
            }
            continue;
        }
        if (type == GW_REC_SERIES) {
            rc = gw_rec_series_each(r->rec.data, r->rec.len, on_series, &f);
        } else if (type == GW_REC_SAMPLES) {
            f.index = 0;
            f.skip = c.skip;
            f.full = 0;
            rc = gw_rec_samples_each(r->rec.data, r->rec.len, on_sample, &f);
            if (rc == FILL_FULL || f.full) {
                c.skip = f.index;       /* the first sample not taken */
                rc = GW_OK;
                break;
            }
        }
        if (rc == GW_ECORRUPT) rc = GW_OK;   /* a malformed payload is skipped, as replay does */
        c.off = next;
        c.skip = 0;
    }
    if (rc == GW_OK && r->protocol == 2) rc = v2_finish(b);
    if (rc != GW_OK) return gw_error_set(err, rc, "forward: %s while building a batch", gw_strerror(rc));
    b->end = c;
    return GW_OK;
}

/* Counts the samples of c's segment from c on. */
static int count_sample(void *ud, uint64_t sid, int64_t t, double v)
{
    (void)sid;
    (void)t;
    (void)v;
    (*(uint64_t *)ud)++;
    return GW_OK;
}

int gw_fwd_release_segment(struct gw_fwd_reader *r, const struct gw_fwd_cursor *c, uint64_t *samples,
                           struct gw_fwd_cursor *next, struct gw_error *err)
{
    uint64_t n = 0, off = c->off < SEG_MAGIC ? SEG_MAGIC : c->off, at;
    uint8_t type;
    int o = seg_open(r, c->seg), got = 0;
    while (o == 1 && (got = rec_read(r, off, &type, &at)) == 1) {
        if (type == GW_REC_SERIES) {
            struct fill f = {.r = r};
            gw_rec_series_each(r->rec.data, r->rec.len, on_series, &f);   /* labels stay known */
        } else if (type == GW_REC_SAMPLES) {
            uint64_t k = 0;
            gw_rec_samples_each(r->rec.data, r->rec.len, count_sample, &k);
            n += off == c->off && k >= c->skip ? k - c->skip : k;
        }
        off = at;
    }
    if (o < 0 || got < 0) return gw_error_set(err, GW_EIO, "forward: cannot read wal segment %u: %s", c->seg, strerror(errno));
    uint32_t s = seg_after(r->wal_dir, c->seg);
    *samples = n;
    *next = s ? (struct gw_fwd_cursor){s, SEG_MAGIC, 0} : (struct gw_fwd_cursor){c->seg, off, 0};
    return GW_OK;
}
