/* gpuwatch/err.h - error codes and error detail shared by every module.
 *
 * Every fallible function returns int: GW_OK (0) or a negative enum gw_err.
 * Raw errno and MDB_* values never cross a module boundary. Detail goes in an
 * optional last argument struct gw_error *err (may be NULL), filled with
 * gw_error_set().
 * Layer: L0 base (src/base/); includes only its layer and below (docs/architecture.md). */
#ifndef GW_ERR_H
#define GW_ERR_H

#include <stdarg.h>

enum gw_err {
    GW_OK = 0,
    GW_ENOMEM = -1,       /* allocation failed                         */
    GW_EINVAL = -2,       /* invalid argument or invalid data          */
    GW_EPARSE = -3,       /* malformed input (protobuf, snappy, query) */
    GW_ECORRUPT = -4,     /* stored data fails its checks              */
    GW_ETOOLARGE = -5,    /* input over a size cap                     */
    GW_EOOO = -6,         /* out-of-order sample                       */
    GW_EDUP = -7,         /* same timestamp, different value           */
    GW_ETOOOLD = -8,      /* older than the retention window           */
    GW_ELIMIT = -9,       /* a configured limit was hit                */
    GW_ENOTFOUND = -10,   /* no such key / series / file               */
    GW_EFULL = -11,       /* disk or map full even after growing       */
    GW_EIO = -12,         /* read/write/fsync failed                   */
    GW_ESTORE = -13,      /* other storage engine failure              */
    GW_EUNSUPPORTED = -14,/* valid but not supported (type, encoding)  */
    GW_ETOONEW = -15,     /* timestamp too far in the future           */
    GW_ESHUTDOWN = -16,   /* the component is shutting down            */
    GW_ETIMEOUT = -17     /* a deadline passed (query timeout)         */
};

#define GW_ERROR_MSG_LEN 256

struct gw_error {
    int code;                      /* last GW_E* code, GW_OK if none */
    char msg[GW_ERROR_MSG_LEN];    /* human-readable detail, NUL-terminated */
};

/* Static text for a code; never NULL. */
const char *gw_strerror(int rc);

/* Sets err->code = rc and formats msg (truncating). err may be NULL.
 * Returns rc so callers can write `return gw_error_set(err, GW_EINVAL, ...)`. */
int gw_error_set(struct gw_error *err, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int gw_error_setv(struct gw_error *err, int rc, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* Clears err (code GW_OK, empty msg). NULL is a no-op. */
void gw_error_clear(struct gw_error *err);

/* "Can't happen but recover": evaluates to x, logs once when x is true. */
#define GW_NEVER(x) ((x) ? (gw_never_hit(__FILE__, __LINE__), 1) : 0)
void gw_never_hit(const char *file, int line);

#endif /* GW_ERR_H */
