/* cli/cli_export.h - helpers of export/import/backup shared inside the
 * gpuwatch command (cmd_export.c). */
#ifndef GW_CLI_EXPORT_H
#define GW_CLI_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "gpuwatch/err.h"
#include "gpuwatch/matcher.h"
#include "gpuwatch/rw.h"

/* T as --from/--to take it: "now", "now-DUR" or "-DUR", RFC 3339, or Unix
 * seconds (fractions allowed). 0, or -1. */
int gw_cli_time_arg(const char *v, int64_t now, int64_t *out);
/* "http://ADDR/" of the serve on dir (DIR/serve.addr); 0, or -1. */
int gw_cli_serve_url(const char *dir, char *out, size_t cap);
/* Raw samples of the series matching m in [from, to] from a serve's
 * remote-read endpoint, to cb per series. */
int gw_cli_remote_read(const char *url, struct gw_matcher *m, size_t nm, int64_t from, int64_t to,
                       gw_read_series_cb cb, void *ud, struct gw_error *err);

#endif /* GW_CLI_EXPORT_H */
