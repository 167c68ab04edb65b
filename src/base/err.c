/* err.c - gw_strerror and struct gw_error helpers. */
#include <stdio.h>
#include <string.h>

#include "gpuwatch/err.h"
#include "gpuwatch/log.h"

const char *gw_strerror(int rc)
{
    switch ((enum gw_err)rc) {
    case GW_OK: return "success";
    case GW_ENOMEM: return "out of memory";
    case GW_EINVAL: return "invalid argument";
    case GW_EPARSE: return "parse error";
    case GW_ECORRUPT: return "data corrupted";
    case GW_ETOOLARGE: return "too large";
    case GW_EOOO: return "out of order sample";
    case GW_EDUP: return "duplicate sample for timestamp";
    case GW_ETOOOLD: return "sample too old";
    case GW_ELIMIT: return "limit exceeded";
    case GW_ENOTFOUND: return "not found";
    case GW_EFULL: return "storage full";
    case GW_EIO: return "i/o error";
    case GW_ESTORE: return "storage engine error";
    case GW_EUNSUPPORTED: return "unsupported";
    case GW_ETOONEW: return "sample timestamp too far in the future";
    case GW_ESHUTDOWN: return "shutting down";
    case GW_ETIMEOUT: return "timed out";
    }
    return "unknown error";
}

int gw_error_setv(struct gw_error *err, int rc, const char *fmt, va_list ap)
{
    if (err) {
        err->code = rc;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    }
    return rc;
}

int gw_error_set(struct gw_error *err, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gw_error_setv(err, rc, fmt, ap);
    va_end(ap);
    return rc;
}

void gw_error_clear(struct gw_error *err)
{
    if (err) {
        err->code = GW_OK;
        err->msg[0] = '\0';
    }
}

void gw_never_hit(const char *file, int line)
{
    gw_log(GW_LOG_ERROR, "never", "msg=\"unexpected condition\" at=%s:%d", file, line);
}
