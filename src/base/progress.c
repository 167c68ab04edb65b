/* progress.c - the progress reporter of gpuwatch/progress.h: a redrawn bar
 * on a terminal, throttled log lines elsewhere. */
#include "gpuwatch/progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/log.h"

int gw_progress_quiet;

struct gw_progress {
    char what[64];
    uint64_t total, done;
    enum gw_progress_unit unit;
    int tty;                 /* stderr is a terminal: redraw one line */
    int quiet;
    uint64_t t0_ns;          /* start */
    uint64_t last_ns;        /* last report */
    unsigned last_decile;    /* log mode: last 10 % step reported */
    uint64_t last_done;      /* log mode: done at the last report */
};

#define TTY_EVERY_NS 100000000ull      /* 10 redraws a second at most */
#define LOG_EVERY_NS 5000000000ull     /* a log line every 5 s while moving */

static void human(char *out, size_t cap, double v, enum gw_progress_unit unit)
{
    if (unit == GW_PROGRESS_SECONDS) {
        uint64_t s = (uint64_t)v;
        if (s >= 86400)
            snprintf(out, cap, "%llud%lluh", (unsigned long long)(s / 86400), (unsigned long long)(s % 86400 / 3600));
        else if (s >= 3600)
            snprintf(out, cap, "%lluh%llum", (unsigned long long)(s / 3600), (unsigned long long)(s % 3600 / 60));
        else
            snprintf(out, cap, "%llum%llus", (unsigned long long)(s / 60), (unsigned long long)(s % 60));
        return;
    }
    if (unit == GW_PROGRESS_BYTES) {
        static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
        int i = 0;
        while (v >= 1024 && i < 4) {
            v /= 1024;
            i++;
        }
        snprintf(out, cap, i == 0 ? "%.0f %s" : "%.1f %s", v, u[i]);
    } else {
        static const char *const u[] = {"", "k", "M", "G", "T"};
        int i = 0;
        while (v >= 1000 && i < 4) {
            v /= 1000;
            i++;
        }
        snprintf(out, cap, i == 0 ? "%.0f%s" : "%.1f%s", v, u[i]);
    }
}

void gw_progress_format(char *out, unsigned cap, uint64_t done, uint64_t total, double elapsed_s,
                        enum gw_progress_unit unit)
{
    char d[32], t[32], r[32];
    double rate = elapsed_s > 0 ? (double)done / elapsed_s : 0;
    human(d, sizeof d, (double)done, unit);
    if (unit == GW_PROGRESS_SECONDS)
        snprintf(r, sizeof r, "%.0fx", rate);   /* x real time */
    else
        human(r, sizeof r, rate, unit);
    if (total == 0) {
        snprintf(out, cap, "%s %s/s", d, r);
        return;
    }
    human(t, sizeof t, (double)total, unit);
    unsigned pct = done >= total ? 100 : (unsigned)((double)done * 100.0 / (double)total);
    if (rate > 0 && done < total) {
        uint64_t eta = (uint64_t)((double)(total - done) / rate + 0.5);
        snprintf(out, cap, "%3u%% %s/%s %s/s ETA %llu:%02llu", pct, d, t, r, (unsigned long long)(eta / 60),
                 (unsigned long long)(eta % 60));
    } else {
        snprintf(out, cap, "%3u%% %s/%s %s/s", pct, d, t, r);
    }
}

struct gw_progress *gw_progress_start(const char *what, uint64_t total, enum gw_progress_unit unit)
{
    struct gw_progress *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    snprintf(p->what, sizeof p->what, "%s", what ? what : "work");
    p->total = total;
    p->unit = unit;
    p->quiet = gw_progress_quiet || getenv("GW_PROGRESS_QUIET") != NULL;
    p->tty = isatty(STDERR_FILENO);
    p->t0_ns = p->last_ns = gw_mono_ns();
    return p;
}

void gw_progress_set_total(struct gw_progress *p, uint64_t total)
{
    if (p) p->total = total;
}

static unsigned decile(const struct gw_progress *p)
{
    if (p->total == 0) return 0;
    return p->done >= p->total ? 10 : (unsigned)((double)p->done * 10.0 / (double)p->total);
}

static void draw(struct gw_progress *p, uint64_t now, int final)
{
    char line[160];
    double el = (double)(now - p->t0_ns) / 1e9;
    gw_progress_format(line, sizeof line, p->done, p->total, el, p->unit);
    if (p->tty) {
        char bar[21];
        unsigned fill = p->total ? (unsigned)(p->done >= p->total ? 20 : p->done * 20 / p->total) : 0;
        for (unsigned i = 0; i < 20; i++) bar[i] = i < fill ? '#' : '-';
        bar[20] = '\0';
        if (p->total)
            fprintf(stderr, "\r%s [%s] %s\033[K%s", p->what, bar, line, final ? "\n" : "");
        else
            fprintf(stderr, "\r%s %s\033[K%s", p->what, line, final ? "\n" : "");
        fflush(stderr);
        return;
    }
    double rate = el > 0 ? (double)p->done / el : 0;
    if (p->total)
        gw_log(GW_LOG_INFO, "progress", "msg=\"%s%s\" done=%llu total=%llu percent=%u rate=%.0f/s eta_s=%.0f",
               p->what, final ? " finished" : "", (unsigned long long)p->done, (unsigned long long)p->total,
               p->done >= p->total ? 100u : (unsigned)((double)p->done * 100.0 / (double)p->total), rate,
               rate > 0 && p->done < p->total ? (double)(p->total - p->done) / rate : 0.0);
    else
        gw_log(GW_LOG_INFO, "progress", "msg=\"%s%s\" done=%llu rate=%.0f/s", p->what, final ? " finished" : "",
               (unsigned long long)p->done, rate);
}

void gw_progress_set(struct gw_progress *p, uint64_t done)
{
    if (!p) return;
    p->done = done;
    if (p->quiet) return;
    uint64_t now = gw_mono_ns();
    if (p->tty) {
        if (now - p->last_ns < TTY_EVERY_NS) return;
    } else {
        unsigned dc = decile(p);
        int step = dc > p->last_decile && dc < 10;
        int timed = now - p->last_ns >= LOG_EVERY_NS && done != p->last_done;
        if (!step && !timed) return;
        p->last_decile = dc;
        p->last_done = done;
    }
    p->last_ns = now;
    draw(p, now, 0);
}

void gw_progress_end(struct gw_progress *p)
{
    if (!p) return;
    if (!p->quiet) draw(p, gw_mono_ns(), 1);
    free(p);
}
