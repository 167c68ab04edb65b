/* cli_progress.c - see cli_progress.h. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gpuwatch/codec.h"
#include "cli_progress.h"

void gw_cli_progress_init(struct gw_cli_progress *p, const char *cmd, int quiet)
{
    memset(p, 0, sizeof *p);
    p->cmd = cmd;
    p->quiet = quiet;
    p->tty = isatty(STDERR_FILENO);
    p->t0_ns = gw_mono_ns();
}

void gw_cli_progress_update(struct gw_cli_progress *p, const char *phase, uint64_t done, uint64_t total)
{
    if (p->quiet)
        return;
    uint64_t now = gw_mono_ns();
    int new_phase = strncmp(p->phase, phase, sizeof p->phase - 1) != 0;
    uint64_t every = p->tty ? 200000000ull : 5000000000ull;
    if (!new_phase && now - p->last_ns < every && !(total && done == total))
        return;
    if (new_phase)
        snprintf(p->phase, sizeof p->phase, "%s", phase);
    p->last_ns = now;
    double secs = (double)(now - p->t0_ns) / 1e9;
    double rate = secs > 0 ? (double)done / secs : 0;
    if (p->tty) {
        char bar[31];
        int fill = total ? (int)(30.0 * (double)done / (double)total) : 0;
        if (fill > 30)
            fill = 30;
        memset(bar, '#', (size_t)fill);
        memset(bar + fill, '.', (size_t)(30 - fill));
        bar[30] = 0;
        if (total) {
            double eta = rate > 0 ? (double)(total - (done < total ? done : total)) / rate : 0;
            fprintf(stderr, "\r%s: %-7s [%s] %llu/%llu %.0f/s ETA %.0fs   ", p->cmd, phase, bar,
                    (unsigned long long)done, (unsigned long long)total, rate, eta);
        } else {
            fprintf(stderr, "\r%s: %-7s %llu %.0f/s   ", p->cmd, phase, (unsigned long long)done, rate);
        }
        p->drawn = 1;
    } else {
        if (total)
            fprintf(stderr, "%s: %s %llu/%llu (%.0f/s)\n", p->cmd, phase, (unsigned long long)done,
                    (unsigned long long)total, rate);
        else
            fprintf(stderr, "%s: %s %llu\n", p->cmd, phase, (unsigned long long)done);
    }
    fflush(stderr);
}

void gw_cli_progress_end(struct gw_cli_progress *p)
{
    if (p->drawn) {
        fputc('\n', stderr);
        p->drawn = 0;
    }
}
