/* gpuwatch/wal.h - write-ahead log: numbered segments of checksummed
 * records, group commit, replay with repair of a torn or corrupt tail.
 *
 * On disk (format at the top of src/wal/wal.c):
 *   DIR/00000001.wal ...   segment = 8-byte magic "GWWAL\0\0\1" then records
 *   record = u32 LE payload_len | u32 LE crc32c(type|payload) | u8 type | payload
 * A position (struct-free uint64) is (segment << 32) | byte offset of the
 * record's first byte; positions increase monotonically.
 *
 * Durability: gw_wal_append() only copies into the WAL's buffer; the record
 * is durable once gw_wal_commit() for its position returns GW_OK:
 *   GW_FSYNC_ALWAYS  written and fdatasync'ed (survives power loss); callers
 *                    committing at the same time share one fdatasync;
 *   GW_FSYNC_BATCH   written to the kernel (survives kill -9); a background
 *                    thread fdatasyncs every batch interval;
 *   GW_FSYNC_OFF     written to the kernel; synced only at segment close.
 * All functions are thread-safe.
 * Layer: L2 storage and wire (src/wal/); includes only its layer and below (docs/architecture.md). */
#ifndef GW_WAL_H
#define GW_WAL_H

#include <stddef.h>
#include <stdint.h>
#include "gpuwatch/err.h"

enum gw_fsync_mode { GW_FSYNC_ALWAYS = 0, GW_FSYNC_BATCH = 1, GW_FSYNC_OFF = 2 };

#define GW_WAL_MAX_RECORD (64u << 20)     /* payload bytes per record */

struct gw_wal_opts {
    const char *dir;                 /* created if missing */
    uint64_t segment_bytes;          /* cut a new segment past this; default 64 MiB,
                                        at most 1 GiB; a record that would take
                                        a non-empty segment past it starts the
                                        next segment */
    enum gw_fsync_mode fsync;
    uint32_t batch_interval_ms;      /* GW_FSYNC_BATCH period; default 100 */
    /* Readers of the segment files (forwarding) that still need old
     * segments: hold() returns the lowest position any of them still needs
     * (UINT64_MAX: none), and gw_wal_truncate_before never deletes its
     * segment or later ones. Called from the truncating thread; must not
     * call into this WAL. NULL: no hold. */
    uint64_t (*hold)(void *ud);
    void *hold_ud;
};

struct gw_wal;

/* Opens the WAL for appending. Existing segments are left for
 * gw_wal_replay(); appends always go to a new segment numbered after the
 * last existing one. GW_OK, GW_EIO, GW_ENOMEM. */
int gw_wal_open(struct gw_wal **out, const struct gw_wal_opts *o, struct gw_error *err);
/* Writes and syncs what is buffered, stops the sync thread, closes. NULL ok. */
void gw_wal_close(struct gw_wal *w);

/* Copies one record into the WAL buffer. *pos gets its position.
 * GW_OK, GW_ETOOLARGE (payload > GW_WAL_MAX_RECORD), GW_ENOMEM,
 * GW_EINVAL (payload NULL with len > 0),
 * GW_EIO (an earlier write failed; the WAL stays failed until reopened;
 * GW_EFULL instead when that failure was a full disk: ENOSPC, EDQUOT). */
int gw_wal_append(struct gw_wal *w, uint8_t type, const void *payload, size_t len, uint64_t *pos);
/* Blocks until every record at or before pos is durable per the policy
 * (a pos past the last appended record means everything appended so far).
 * GW_OK, GW_EIO (with detail) or GW_EFULL (the disk is full). */
int gw_wal_commit(struct gw_wal *w, uint64_t pos, struct gw_error *err);

/* Closes the current segment and starts a new one; returns the position of
 * the new segment's first record. Everything before it is in older
 * segments, written and synced. When the current segment holds no record
 * yet, no new one is made. GW_OK, GW_ENOMEM or GW_EIO. */
int gw_wal_cut(struct gw_wal *w, uint64_t *next_pos, struct gw_error *err);
/* Deletes whole segments that end before pos (segment number < pos >> 32).
 * Never deletes the segment being written, nor the segment of the opts'
 * hold() position or later ones. GW_OK or GW_EIO. */
int gw_wal_truncate_before(struct gw_wal *w, uint64_t pos, struct gw_error *err);
/* Bytes in all segments on disk (for stats). */
uint64_t gw_wal_disk_bytes(const struct gw_wal *w);

/* Replay, called before gw_wal_open() on the same dir (created if missing).
 * Calls cb for every valid record at or after from_pos in position order; cb
 * returns GW_OK to go on or an error to stop (returned as is). cb may be
 * NULL to only verify and repair. Segments before from_pos's segment are not
 * read; that segment is checked from its start. A torn or checksum-failing
 * record ends the replay: that segment is truncated at the record (deleted
 * if its magic is bad) and later segments are removed (counts in *st);
 * zero-length segments are removed silently. Returns GW_OK (also after a
 * repair), the callback's error, GW_EIO, GW_ENOMEM or GW_EINVAL. The payload
 * pointer is borrowed for the duration of the callback. st may be NULL; it
 * is filled on every return. */
struct gw_wal_replay_stats {
    uint64_t records, bytes, segments;   /* records and payload bytes passed
                                            to cb, non-empty segments read */
    uint64_t truncated_bytes;        /* bytes cut off by repair */
    uint64_t removed_segments;       /* later segments deleted by repair */
    int corrupt;                     /* 1 if repair happened */
};
typedef int (*gw_wal_replay_cb)(void *ud, uint8_t type, const uint8_t *payload, size_t len, uint64_t pos);
int gw_wal_replay(const char *dir, uint64_t from_pos, gw_wal_replay_cb cb, void *ud,
                  struct gw_wal_replay_stats *st, struct gw_error *err);


/* Sorted numbers of the segment files in dir (*out owned by the caller,
 * NULL when none). GW_OK, GW_ENOTFOUND (no dir), GW_EIO, GW_ENOMEM. */
int gw_wal_segments(const char *dir, uint32_t **out, size_t *n, struct gw_error *err);
/* Segment file name of number seg ("%08u.wal") into buf (>= 16 bytes). */
void gw_wal_segment_name(char *buf, size_t cap, uint32_t seg);

/* Read-only check of every segment (check.c), safe next to a writer: the
 * magic, every record's length and CRC. rec_cb (may be NULL) gets every
 * valid record as replay would. A record that fails in the LAST segment
 * and reaches its end is a torn tail (a write cut short; normal after a
 * crash or while a writer appends): counted in st, not a problem. Any other
 * failure goes to prob_cb with the segment and byte offset; the rest of
 * that segment is skipped (its record boundaries are lost) and checking
 * goes on with the next. Segments deleted while checking (a checkpoint)
 * are skipped. GW_OK when the check ran (problems in st->problems), the
 * callback's error, GW_EIO or GW_ENOMEM. */
struct gw_wal_check_stats {
    uint64_t segments, records, bytes;  /* bytes: payload bytes of valid records */
    uint64_t problems;
    int torn_tail;                      /* 1: the last segment ends in a torn record */
    uint32_t torn_segment;
    uint64_t torn_offset, torn_bytes;
};
typedef void (*gw_wal_problem_cb)(void *ud, uint32_t segment, uint64_t offset, const char *what);
int gw_wal_check(const char *dir, gw_wal_replay_cb rec_cb, gw_wal_problem_cb prob_cb, void *ud,
                 struct gw_wal_check_stats *st, struct gw_error *err);

#endif /* GW_WAL_H */
