/* gpuwatch/json.h - the one JSON writer: strings, numbers, Prometheus
 * sample values and timestamps, RFC 3339 times, appended to a gw_buf
 * (and RFC 3339 times read back).
 * Formats follow Go (encoding/json, strconv) so that what gpuwatch writes
 * reads exactly like what Prometheus and Alertmanager write; examples in
 * src/base/json.c. Every appender returns GW_OK or the gw_buf error.
 * Layer: L0 base (src/base/); includes only its layer and below (docs/architecture.md). */
#ifndef GW_JSON_H
#define GW_JSON_H

#include <stddef.h>
#include <stdint.h>
#include "gpuwatch/buf.h"
#include "gpuwatch/err.h"

/* Go strconv.AppendFloat(v, 'f' or 'e', -1, 64) as Prometheus chooses it for
 * sample values: exponent form when v != 0 and |v| < 1e-6 or >= 1e21;
 * "NaN", "+Inf", "-Inf". Writes a NUL-terminated string into out (cap >=
 * 32 is always enough); returns its length. */
size_t gw_json_format_float(double v, char *out, size_t cap);
/* Milliseconds as seconds with 3 decimals, none when the fraction is zero
 * (1435781451781 -> "1435781451.781", 1435781460100 -> "1435781460.100",
 * 1435781460000 -> "1435781460"), as Prometheus writes them. */
size_t gw_json_format_ts(int64_t t_ms, char *out, size_t cap);
/* RFC 3339 in UTC as Go's time.RFC3339Nano prints a millisecond time
 * ("2026-01-01T00:00:00Z", "2026-01-01T00:00:00.25Z"); years outside
 * 1..9999 print as 0001-01-01T00:00:00Z. NUL-terminated, truncated to
 * cap; returns the length written (cap >= 32 is always enough). */
size_t gw_format_rfc3339(int64_t t_ms, char *out, size_t cap);
/* The same, to the second (milliseconds dropped): for tables and logs. */
size_t gw_format_rfc3339_s(int64_t t_ms, char *out, size_t cap);
/* Reads YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM) (fraction cut to
 * ms, 't'/'z' accepted) as Unix ms: GW_OK, or GW_EPARSE for anything else
 * (an impossible date, no zone, text after it). */
int gw_parse_rfc3339(const char *s, int64_t *out_ms);

/* A quoted JSON string (escapes like Go's encoding/json with HTML escaping;
 * invalid UTF-8 becomes U+FFFD). gw_json_cstr: NUL-terminated, NULL = "". */
int gw_json_str(struct gw_buf *b, const char *s, size_t len);
int gw_json_cstr(struct gw_buf *b, const char *s);
/* A JSON number as Go's encoding/json writes a float64 (0.5, 1e-7, 1e+21,
 * 123456789); null for NaN and the infinities, which JSON cannot carry. */
int gw_json_num(struct gw_buf *b, double v);
/* "\"<value>\"" for a sample value (gw_json_format_float). */
int gw_json_value(struct gw_buf *b, double v);
/* A timestamp number (gw_json_format_ts). */
int gw_json_ts(struct gw_buf *b, int64_t t_ms);
/* A quoted RFC 3339 time (gw_format_rfc3339). */
int gw_json_time(struct gw_buf *b, int64_t t_ms);

#endif /* GW_JSON_H */
