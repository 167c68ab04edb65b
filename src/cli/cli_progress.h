/* cli/cli_progress.h - progress of a long CLI job on stderr: a bar with
 * rate and ETA when stderr is a terminal, else a log line every few
 * seconds. Shared by verify, backup and export. */
#ifndef GW_CLI_PROGRESS_H
#define GW_CLI_PROGRESS_H

#include <stdint.h>

struct gw_cli_progress {
    const char *cmd;            /* "verify" */
    int tty;
    int quiet;                  /* 1: print nothing */
    uint64_t t0_ns, last_ns;
    char phase[32];
    int drawn;                  /* a bar is on the line */
};

void gw_cli_progress_init(struct gw_cli_progress *p, const char *cmd, int quiet);
/* done of total units of phase ("blocks"); total 0 = unknown. Rate-limited. */
void gw_cli_progress_update(struct gw_cli_progress *p, const char *phase, uint64_t done, uint64_t total);
/* Ends the bar's line (before printing other output). */
void gw_cli_progress_end(struct gw_cli_progress *p);

#endif /* GW_CLI_PROGRESS_H */
