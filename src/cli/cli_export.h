/* cli/cli_export.h - helpers of export/import/backup shared inside the
 * gpuwatch command (cmd_export.c); report, retention and downsample use
 * the time argument and the POST to a running serve too. */
#ifndef GW_CLI_EXPORT_H
#define GW_CLI_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "gpuwatch/err.h"
#include "gpuwatch/matcher.h"
#include "gpuwatch/rw.h"

/* T as --from/--to take it: "now", "now-DUR" or "-DUR" (DUR before now,
 * a Prometheus duration: 7d, 12h, 1h30m), RFC 3339, or Unix seconds
 * (fractions allowed; not_before_epoch rejects negative ones). 0, or -1. */
int gw_cli_time_arg(const char *v, int64_t now, int not_before_epoch, int64_t *out);
/* The first line of DIR/serve.addr (HOST:PORT, line end cut) into addr;
 * 0, or -1 when the file cannot be read. */
int gw_cli_serve_addr(const char *dir, char *addr, size_t cap);
/* "http://ADDR/" of the serve on dir (DIR/serve.addr, not empty); 0, or -1. */
int gw_cli_serve_url(const char *dir, char *out, size_t cap);
/* POSTs path to the serve at hostport ("HOST:PORT") with an empty body,
 * giving up after timeout_ms: the HTTP status, the body into resp
 * (truncated to resp_len); -1 with the reason in resp when there is no
 * answer. */
int gw_cli_http_post(const char *hostport, const char *path, int timeout_ms, char *resp, size_t resp_len);
/* Raw samples of the series matching m in [from, to] from a serve's
 * remote-read endpoint, to cb per series. */
int gw_cli_remote_read(const char *url, struct gw_matcher *m, size_t nm, int64_t from, int64_t to,
                       gw_read_series_cb cb, void *ud, struct gw_error *err);

#endif /* GW_CLI_EXPORT_H */
