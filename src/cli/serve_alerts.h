/* cli/serve_alerts.h - the alert side of `gpuwatch serve` (serve_alerts.c):
 * the database observer feeding the detectors, and the thread that appends
 * ALERTS samples, syncs the alert log and saves the detector state. */
#ifndef GW_CLI_SERVE_ALERTS_H
#define GW_CLI_SERVE_ALERTS_H

#include "gpuwatch/alert.h"
#include "gpuwatch/db.h"
#include "gpuwatch/detect.h"
#include "gpuwatch/kv.h"

struct gw_serve_alerts;

/* Fills *ob so that every sample the database accepts goes to det. */
void gw_serve_observer(struct gw_db_observer *ob, struct gw_det *det);
/* Starts the thread; GW_OK with *out set, or GW_ENOMEM. ckpt (may be NULL)
 * receives D7's checkpoint events (table 0 = GW_CKPT_TABLE). */
int gw_serve_alerts_start(struct gw_serve_alerts **out, struct gw_db *db, struct gw_alerts *alerts,
                          struct gw_det *det, struct gw_kv *ckpt, const char *state_path);
/* Stops the thread, appends the last ALERTS samples, saves the detector
 * state and syncs the log. NULL ok. */
void gw_serve_alerts_stop(struct gw_serve_alerts *s);

#endif /* GW_CLI_SERVE_ALERTS_H */
