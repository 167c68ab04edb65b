/* db_int.h - internals shared by the db module's files (db.c, record.c,
 * query.c). Nothing outside src/db/ includes this. */
#ifndef GW_DB_INT_H
#define GW_DB_INT_H

#include <pthread.h>
#include <stdint.h>

#include "gpuwatch/buf.h"
#include "gpuwatch/db.h"
#include "gpuwatch/head.h"
#include "gpuwatch/store.h"
#include "gpuwatch/wal.h"

/* WAL record types and payload codecs: gpuwatch/db.h (record.c). */

struct gw_db {
    struct gw_db_opts o;
    char *dir;
    int lock_fd;                 /* flock on DIR/LOCK (serve and writers) */
    struct gw_store *store;
    struct gw_wal *wal;          /* NULL when read_only, or after a failed reopen */
    pthread_rwlock_t wal_rw;     /* writers of WAL records hold it shared; swapping
                                    in a fresh WAL after a failure holds it exclusive */
    char *wal_dir;
    struct gw_head *head;        /* NULL when read_only */

    pthread_mutex_t mu;          /* head, next_sid, last_wal_pos, wal record order */
    uint64_t next_sid;
    uint64_t last_wal_pos;       /* position of the newest appended record */
    int64_t max_t;               /* newest accepted timestamp */
    int64_t min_t_seen;          /* oldest timestamp held (head + store), estimate */
    struct gw_buf rec;           /* record scratch, under mu */
    struct gw_buf srec;          /* series record scratch, under mu */

    pthread_mutex_t flush_mu;    /* one flush at a time */
    pthread_t bg;                /* background flush / retention thread */
    int bg_running;
    pthread_mutex_t bg_mu;
    pthread_cond_t bg_cv;
    int stopping;
    int failed;                  /* a storage failure made the db refuse writes */
    int fail_rc;                 /* its code: GW_EFULL (a full disk) or GW_EIO */

    uint64_t stat_appended, stat_refused;
};

/* replay_progress.c: WAL replay progress (segments and bytes) into the
 * caller's gw_db_replay_state and a progress reporter. */
struct gw_progress;
struct gw_db_replay_prog {
    struct gw_db_replay_state *st;    /* may be NULL */
    struct gw_progress *bar;
    uint32_t *segs;                   /* segment numbers, ascending */
    uint64_t *before;                 /* bytes of the segments before segs[i] */
    size_t n, at;                     /* segments; index of the one being read */
};
void gw_db_replay_prog_begin(struct gw_db_replay_prog *p, const char *wal_dir, struct gw_db_replay_state *st);
void gw_db_replay_prog_at(struct gw_db_replay_prog *p, uint64_t pos, size_t rec_len);
void gw_db_replay_prog_end(struct gw_db_replay_prog *p);

/* db.c */
int gw_db_flush_pending(struct gw_db *db, struct gw_error *err);

/* Series time (series x range, ms) below which gw_db_select reads every
 * series in the caller's thread, without helper threads (query.c); tests
 * lower it to 0 to reach the threaded paths with small data. */
extern double gw_db_par_min_series_ms;

/* backup.c: "a/b" in a new malloc'd string (NULL when out of memory);
 * backup and restore build their paths with it. */
char *gw_db_path_join(const char *a, const char *b);

#endif /* GW_DB_INT_H */
