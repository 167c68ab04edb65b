/* gpuwatch/progress.h - one progress reporter for long work (WAL replay,
 * evaluate, simulate; later compaction and backup).
 *
 *   struct gw_progress *p = gw_progress_start("wal replay", total_bytes, GW_PROGRESS_BYTES);
 *   while (...) gw_progress_set(p, done_bytes);    // cheap: any rate of calls
 *   gw_progress_end(p);                            // final line, frees
 *
 * Where it goes: when stderr is a terminal, one line redrawn in place (at
 * most 10 times a second): "what [#####-----]  45% 1.2 GiB/2.7 GiB
 * 95.3 MiB/s ETA 0:16"; otherwise (a log file, a service), one log line
 * (log.h, component "progress") at each further 10 % and at least every
 * 5 s while it moves: msg="wal replay" done=.. total=.. percent=45
 * rate=../s eta_s=16. total 0 means unknown: no percent and no ETA.
 * GW_PROGRESS_QUIET in the environment (any value) or gw_progress_quiet = 1
 * silences every reporter (tests).
 *
 * gw_progress_set may be called from any one thread at a time per
 * reporter; the reporter keeps no lock. NULL is accepted everywhere (a
 * reporter that could not be allocated reports nothing).
 * Layer: L0 base (src/base/); includes only its layer and below (docs/architecture.md). */
#ifndef GW_PROGRESS_H
#define GW_PROGRESS_H

#include <stdint.h>

enum gw_progress_unit {
    GW_PROGRESS_ITEMS = 0,   /* plain counts: "1.2M/3.0M 45.1k/s" */
    GW_PROGRESS_BYTES = 1,   /* "1.2 GiB/2.7 GiB 95.3 MiB/s" */
    GW_PROGRESS_SECONDS = 2, /* data time in seconds: "3h12m/1d0h 450x/s" (x real time) */
};

extern int gw_progress_quiet;   /* 1: report nothing (also: env GW_PROGRESS_QUIET) */

struct gw_progress;
/* Starts a reporter; what names the work in every line (copied). */
struct gw_progress *gw_progress_start(const char *what, uint64_t total, enum gw_progress_unit unit);
/* done so far (absolute, not a delta); reports when the throttle allows. */
void gw_progress_set(struct gw_progress *p, uint64_t done);
/* Changes the total when it becomes known or grows. */
void gw_progress_set_total(struct gw_progress *p, uint64_t total);
/* Reports the final state (with the elapsed time) and frees p. */
void gw_progress_end(struct gw_progress *p);

/* The line gw_progress_set would print for these numbers, without the
 * bar (tests, status pages): "45% 1.2 GiB/2.7 GiB 95.3 MiB/s ETA 0:16". */
void gw_progress_format(char *out, unsigned cap, uint64_t done, uint64_t total, double elapsed_s,
                        enum gw_progress_unit unit);

#endif /* GW_PROGRESS_H */
