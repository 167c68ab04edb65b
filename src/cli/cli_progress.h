/* cli/cli_progress.h - progress of a long CLI job that runs in phases
 * (verify: blocks, index, wal; compact: days, series, copy): one
 * gpuwatch/progress.h reporter per phase, named "<cmd> <phase>", so every
 * long job reports the same way (a bar with rate and ETA on a terminal,
 * log lines otherwise). */
#ifndef GW_CLI_PROGRESS_H
#define GW_CLI_PROGRESS_H

#include <stdint.h>

#include "gpuwatch/progress.h"

struct gw_cli_progress {
    const char *cmd;            /* "verify" */
    int quiet;                  /* 1: report nothing */
    char phase[32];             /* the phase of rep */
    uint64_t total;             /* rep's total */
    struct gw_progress *rep;    /* NULL before the first update and after end */
};

void gw_cli_progress_init(struct gw_cli_progress *p, const char *cmd, int quiet);
/* done of total units of phase ("blocks"); total 0 = unknown. A new phase
 * ends the previous one's reporter. Any rate of calls. */
void gw_cli_progress_update(struct gw_cli_progress *p, const char *phase, uint64_t done, uint64_t total);
/* Ends the current phase (its final line). */
void gw_cli_progress_end(struct gw_cli_progress *p);

#endif /* GW_CLI_PROGRESS_H */
