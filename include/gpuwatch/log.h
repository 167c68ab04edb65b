/* gpuwatch/log.h - one key=value line per event, to stderr.
 *   level=warn component=wal msg="segment truncated" seg=12
 * The level is checked before arguments are evaluated. L0-L2 modules do not
 * log; edges (http, db background loops, cli) do. Nothing logs per sample.
 * Layer: L0 base (src/base/); includes only its layer and below (docs/architecture.md). */
#ifndef GW_LOG_H
#define GW_LOG_H

enum gw_log_level { GW_LOG_DEBUG = 0, GW_LOG_INFO = 1, GW_LOG_WARN = 2, GW_LOG_ERROR = 3 };

extern int gw_log_min_level;   /* default GW_LOG_INFO */

void gw_log_write(int level, const char *component, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* fmt is the msg text plus optional trailing key=value pairs, e.g.
 * gw_log(GW_LOG_WARN, "wal", "segment truncated\" seg=%u err=\"%s", ...)
 * is awkward, so the convention is: fmt produces everything after msg=,
 * i.e. gw_log(GW_LOG_INFO, "http", "msg=\"listening\" addr=%s", addr). */
#define gw_log(level, component, ...)                                      \
    do {                                                                   \
        if ((level) >= gw_log_min_level)                                   \
            gw_log_write((level), (component), __VA_ARGS__);               \
    } while (0)

#endif /* GW_LOG_H */
