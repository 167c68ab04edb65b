/* serve_compact.h - the compaction schedule of `gpuwatch serve`
 * (--compact.schedule) and its thread; code in cmd_compact.c. */
#ifndef GW_SERVE_COMPACT_H
#define GW_SERVE_COMPACT_H

#include <stdint.h>

struct gw_db;

/* "off", "HH:MM" (daily, UTC) or an interval of at least 1m ("24h"). */
struct gw_compact_sched {
    int off;
    int daily;
    int minute_of_day;      /* daily: minutes after 00:00 UTC */
    int64_t every_ms;       /* else: the interval, from start */
};
#define GW_COMPACT_SCHED_DEFAULT "03:00"
/* 0, or -1 for a value that is none of the above. */
int gw_compact_sched_parse(const char *v, struct gw_compact_sched *out);
/* The next run after now_ms (INT64_MAX when off). */
int64_t gw_compact_sched_next(const struct gw_compact_sched *s, int64_t now_ms);

/* Starts the thread (nothing when off; *out stays NULL). Each run is
 * gw_db_compact without the file copy; stop ends a run between days. */
struct gw_serve_compact;
int gw_serve_compact_start(struct gw_serve_compact **out, struct gw_db *db, const struct gw_compact_sched *s);
void gw_serve_compact_stop(struct gw_serve_compact *c);   /* NULL ok */

#endif /* GW_SERVE_COMPACT_H */
