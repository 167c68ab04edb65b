/* forward/forward_int.h - internals of forwarding shared by its files and
 * tests/test_forward.c: the cursor file, the retry policy, and the WAL
 * reader that builds one batch. Nothing else includes this. */
#ifndef GW_FORWARD_INT_H
#define GW_FORWARD_INT_H

#include <stddef.h>
#include <stdint.h>

#include "gpuwatch/buf.h"
#include "gpuwatch/err.h"
#include "gpuwatch/forward.h"

/* Where a destination stands in the WAL: the record at (seg, off), of
 * which the first skip samples were already sent. */
struct gw_fwd_cursor {
    uint32_t seg;
    uint64_t off;
    uint64_t skip;
};

/* ---- cursor.c ---- */
/* Cursor file (text, one destination):
 *   gpuwatch-forward-cursor 1
 *   url <url>
 *   position <seg> <off> <skip>
 * Written to PATH.tmp, then renamed over PATH (atomic against a crash of
 * the process). load: GW_OK, GW_ENOTFOUND (no file), GW_ECORRUPT (not a
 * cursor, or one of another URL: err says which), GW_EIO. */
int gw_fwd_cursor_load(const char *path, const char *url, struct gw_fwd_cursor *c, struct gw_error *err);
int gw_fwd_cursor_save(const char *path, const char *url, const struct gw_fwd_cursor *c, struct gw_error *err);
/* "DIR/<16 hex digits of the URL's hash>.cursor" into buf. */
void gw_fwd_cursor_path(char *buf, size_t cap, const char *dir, const char *url);

/* Retry policy. What to do with an HTTP status (or a transport error,
 * status 0). */
enum gw_fwd_verdict { GW_FWD_ACK = 0, GW_FWD_RETRY = 1, GW_FWD_DROP = 2 };
enum gw_fwd_verdict gw_fwd_classify(int transport_rc, int status);
/* The next backoff: min for cur 0, else doubled, at most max. */
uint32_t gw_fwd_backoff_next(uint32_t cur_ms, uint32_t min_ms, uint32_t max_ms);
/* Retry-After (delay-seconds or an IMF-fixdate HTTP date) in ms from
 * now_ms, at most 1 h; -1 when absent or unparsable. */
int64_t gw_fwd_retry_after_ms(const char *v, size_t len, int64_t now_ms);

/* 1 when canonical labels name a series serve writes itself (ALERTS,
 * gpuwatch_checkpoint_*, gpuwatch_node_activity). */
int gw_fwd_is_internal(const uint8_t *labels, size_t len);

/* "Name: value" split into name and value (blanks around the value
 * removed, the name a token without blanks). GW_OK or GW_EINVAL with the
 * reason; reserved names (Host, Content-Length, Content-Type,
 * Content-Encoding, User-Agent, X-Prometheus-Remote-Write-Version) are
 * refused as well. name and value are NUL-terminated copies in buf. */
int gw_fwd_header_parse(const char *hv, char *buf, size_t cap, const char **name, const char **value,
                        struct gw_error *err);

/* ---- reader.c ---- */
/* sid -> remote-write label fields (gw_rw_labels_pb), with the internal
 * flag; cleared when its bytes pass a cap. */
struct gw_fwd_sids {
    struct gw_fwd_sid *v;     /* open addressing, sid 0 = empty */
    size_t cap, n;
    struct gw_buf pool;       /* label field bytes */
};

struct gw_fwd_reader {
    char *wal_dir;
    int include_internal;
    gw_fwd_labels_fn labels;  /* may be NULL */
    void *labels_ud;
    int fd;                   /* open segment, -1 none */
    uint32_t fd_seg;
    struct gw_buf rec;        /* record payload scratch */
    struct gw_buf lab;        /* canonical labels scratch */
    struct gw_fwd_sids sids;
    int protocol;             /* 1 (default, also 0) or 2: the batch body's format */
    uint32_t gen;             /* batches built, marks the sids seen in this one */
};

/* One batch: a WriteRequest body (uncompressed protobuf; protocol 2: an
 * io.prometheus.write.v2.Request) of n samples, and the cursor just past
 * them. */
struct gw_fwd_batch {
    struct gw_buf pb;
    struct gw_buf v2lab;      /* protocol 2: one v1 TimeSeries of labels per series of the batch */
    struct gw_buf v2samp;     /* protocol 2: the samples read, with their series' index */
    uint32_t n_series;        /* protocol 2: series in v2lab */
    uint64_t n;
    int64_t max_t;            /* newest sample timestamp, INT64_MIN if none */
    struct gw_fwd_cursor end;
    uint64_t missing;         /* samples skipped: series unknown */
    uint64_t filtered;        /* internal samples left out */
    uint64_t lost_segments;   /* segments found deleted before they were read */
    int caught_up;            /* the read reached the end of the WAL */
};

int gw_fwd_reader_init(struct gw_fwd_reader *r, const char *wal_dir, int include_internal);
void gw_fwd_reader_free(struct gw_fwd_reader *r);
void gw_fwd_batch_init(struct gw_fwd_batch *b);
void gw_fwd_batch_free(struct gw_fwd_batch *b);
/* Reads from *from up to max samples into b (reset first). Protocol 2:
 * one TimeSeries per series with its samples of the batch in WAL order. A torn or
 * half-written record at the end of the newest segment ends the read
 * (caught_up); one in an older segment (a crash's torn tail) moves on to
 * the next segment. GW_OK, GW_ENOMEM, GW_EIO. */
int gw_fwd_read_batch(struct gw_fwd_reader *r, const struct gw_fwd_cursor *from, uint64_t max,
                      struct gw_fwd_batch *b, struct gw_error *err);
/* The first cursor of the oldest segment on disk (seg 0 when none). */
int gw_fwd_first_cursor(const char *wal_dir, struct gw_fwd_cursor *c, struct gw_error *err);
/* WAL bytes from c to the end of the newest segment (*n_segs: segments
 * holding them). */
uint64_t gw_fwd_pending_bytes(const char *wal_dir, const struct gw_fwd_cursor *c, size_t *n_segs);
/* Samples from c to the end of c's segment (what releasing that segment
 * drops); *next gets the first cursor of the next segment. */
int gw_fwd_release_segment(struct gw_fwd_reader *r, const struct gw_fwd_cursor *c, uint64_t *samples,
                           struct gw_fwd_cursor *next, struct gw_error *err);

#endif /* GW_FORWARD_INT_H */
