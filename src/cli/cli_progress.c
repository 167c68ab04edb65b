/* cli_progress.c - see cli_progress.h. */
#include <stdio.h>
#include <string.h>

#include "cli_progress.h"

void gw_cli_progress_init(struct gw_cli_progress *p, const char *cmd, int quiet)
{
    memset(p, 0, sizeof *p);
    p->cmd = cmd;
    p->quiet = quiet;
}

void gw_cli_progress_update(struct gw_cli_progress *p, const char *phase, uint64_t done, uint64_t total)
{
    if (p->quiet)
        return;
    if (p->rep == NULL || strncmp(p->phase, phase, sizeof p->phase - 1) != 0) {
        char what[64];
        gw_cli_progress_end(p);
        snprintf(p->phase, sizeof p->phase, "%s", phase);
        snprintf(what, sizeof what, "%s %s", p->cmd, phase);
        p->rep = gw_progress_start(what, total, GW_PROGRESS_ITEMS);
        p->total = total;
    } else if (total != p->total) {
        gw_progress_set_total(p->rep, total);
        p->total = total;
    }
    gw_progress_set(p->rep, done);
}

void gw_cli_progress_end(struct gw_cli_progress *p)
{
    gw_progress_end(p->rep);
    p->rep = NULL;
}
