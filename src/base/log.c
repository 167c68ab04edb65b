/* log.c - key=value log lines on stderr with an RFC3339 timestamp. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "gpuwatch/log.h"

int gw_log_min_level = GW_LOG_INFO;

static const char *const level_names[] = {"debug", "info", "warn", "error"};

void gw_log_write(int level, const char *component, const char *fmt, ...)
{
    char line[1024];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    if (level < 0) level = 0;
    if (level > 3) level = 3;
    int n = snprintf(line, sizeof line, "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=%s component=%s ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     ts.tv_nsec / 1000000, level_names[level], component ? component : "-");
    if (n < 0) return;
    if ((size_t)n < sizeof line) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
        va_end(ap);
    }
    fprintf(stderr, "%s\n", line);
}
