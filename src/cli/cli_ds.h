/* cli/cli_ds.h - downsampling options shared by `gpuwatch downsample` and
 * `gpuwatch serve`, and serve's downsampling thread (cmd_downsample.c). */
#ifndef GW_CLI_DS_H
#define GW_CLI_DS_H

#include <stdint.h>

#include "gpuwatch/db.h"
#include "cli_parse.h"

struct gw_cli_ds {
    int64_t raw_ms;          /* --downsample.raw-retention (0: forever) */
    int64_t res5m_ms;        /* --downsample.5m-retention (0: forever) */
    int64_t interval_ms;     /* serve: --downsample.interval (0: off) */
    char raw_s[32], res5m_s[32];   /* as given, for the HTTP hand-over */
};
void gw_cli_ds_default(struct gw_cli_ds *d);
/* The two retentions (GW_CLI_TABLE into a struct gw_cli_ds), and serve's
 * table: the retentions and --downsample.interval. */
extern const struct gw_cli_opt gw_cli_ds_opts[];
extern const struct gw_cli_opt gw_cli_ds_serve_opts[];

/* serve: a thread that runs gw_db_downsample_run a minute after start and
 * then every interval_ms (none when it is 0; *t is then NULL). stop takes
 * NULL. */
struct gw_cli_ds_thread;
int gw_cli_ds_start(struct gw_cli_ds_thread **t, struct gw_db *db, const struct gw_cli_ds *o);
void gw_cli_ds_stop(struct gw_cli_ds_thread *t);

#endif /* GW_CLI_DS_H */
