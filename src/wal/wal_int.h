/* wal/wal_int.h - internals of the write-ahead log shared with its tests.
 *
 * gw_wal_io is the seam through which the WAL performs its data writes and
 * data syncs. It points at write(2) and fdatasync(2); the fault-path tests
 * swap in functions that fail or write short to prove the WAL reports
 * GW_EIO and never claims durability it does not have. Change it only while
 * no WAL is open. Nothing outside src/wal/ and tests/test_wal.c includes
 * this file. */
#ifndef GW_WAL_INT_H
#define GW_WAL_INT_H

#include <stddef.h>
#include <sys/types.h>

struct gw_wal_io {
    ssize_t (*write)(int fd, const void *buf, size_t n);   /* like write(2) */
    int (*fdatasync)(int fd);                                /* like fdatasync(2) */
};

extern struct gw_wal_io gw_wal_io;

/* Segment file layout constants (see the top of src/wal/wal.c). */
#define GW_WAL_MAGIC_LEN 8u
#define GW_WAL_REC_HDR_LEN 9u
#define GW_WAL_MAX_SEGMENT (1ull << 30)   /* segment_bytes is clamped to this */

#endif /* GW_WAL_INT_H */
