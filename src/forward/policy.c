/* forward/policy.c - the small decisions of forwarding: the cursor file,
 * what an answer means (send on, retry, drop), the backoff, Retry-After,
 * which series are serve's own, and --forward.header values. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "forward/forward_int.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/labels.h"

#define CURSOR_MAGIC "gpuwatch-forward-cursor 1"
#define RETRY_AFTER_MAX_MS (3600 * 1000)

void gw_fwd_cursor_path(char *buf, size_t cap, const char *dir, const char *url)
{
    snprintf(buf, cap, "%s/%016" PRIx64 ".cursor", dir, gw_hash64(url, strlen(url)));
}

int gw_fwd_cursor_load(const char *path, const char *url, struct gw_fwd_cursor *c, struct gw_error *err)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT) return GW_ENOTFOUND;
        return gw_error_set(err, GW_EIO, "cannot read forward cursor %s: %s", path, strerror(errno));
    }
    char line[4200];
    int rc = GW_OK;
    unsigned long long seg, off, skip;
    char tail;
    if (!fgets(line, sizeof line, f) || strcmp(line, CURSOR_MAGIC "\n") != 0) {
        rc = gw_error_set(err, GW_ECORRUPT, "forward cursor %s: not a cursor file", path);
    } else if (!fgets(line, sizeof line, f) || strncmp(line, "url ", 4) != 0 ||
               strlen(line + 4) != strlen(url) + 1 || strncmp(line + 4, url, strlen(url)) != 0) {
        rc = gw_error_set(err, GW_ECORRUPT, "forward cursor %s: written for another URL", path);
    } else if (!fgets(line, sizeof line, f) ||
               sscanf(line, "position %llu %llu %llu%c", &seg, &off, &skip, &tail) != 4 || tail != '\n' ||
               seg > UINT32_MAX || off > UINT32_MAX) {
        rc = gw_error_set(err, GW_ECORRUPT, "forward cursor %s: bad position line", path);
    } else {
        c->seg = (uint32_t)seg;
        c->off = off;
        c->skip = skip;
    }
    fclose(f);
    return rc;
}

int gw_fwd_cursor_save(const char *path, const char *url, const struct gw_fwd_cursor *c, struct gw_error *err)
{
    char tmp[4200], body[4400];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int n = snprintf(body, sizeof body, CURSOR_MAGIC "\nurl %s\nposition %u %llu %llu\n", url, c->seg,
                     (unsigned long long)c->off, (unsigned long long)c->skip);
    if (n < 0 || (size_t)n >= sizeof body) return gw_error_set(err, GW_EINVAL, "forward cursor: URL too long");
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return gw_error_set(err, GW_EIO, "cannot write forward cursor %s: %s", tmp, strerror(errno));
    ssize_t w = write(fd, body, (size_t)n);
    int e = errno;
    if (close(fd) != 0 && w == n) {
        w = -1;
        e = errno;
    }
    if (w != n) {
        unlink(tmp);
        return gw_error_set(err, GW_EIO, "cannot write forward cursor %s: %s", tmp, w < 0 ? strerror(e) : "short write");
    }
    if (rename(tmp, path) != 0) return gw_error_set(err, GW_EIO, "cannot rename %s: %s", tmp, strerror(errno));
    return GW_OK;
}

enum gw_fwd_verdict gw_fwd_classify(int transport_rc, int status)
{
    if (transport_rc != GW_OK) return GW_FWD_RETRY;       /* connect, send, receive, timeout */
    if (status >= 200 && status < 300) return GW_FWD_ACK;
    if (status >= 500 || status == 429) return GW_FWD_RETRY;
    return GW_FWD_DROP;                                   /* 4xx: the batch itself is refused */
}

uint32_t gw_fwd_backoff_next(uint32_t cur_ms, uint32_t min_ms, uint32_t max_ms)
{
    if (min_ms == 0) min_ms = 1;
    if (max_ms < min_ms) max_ms = min_ms;
    if (cur_ms == 0) return min_ms;
    return cur_ms >= max_ms / 2 ? max_ms : cur_ms * 2;
}

int64_t gw_fwd_retry_after_ms(const char *v, size_t len, int64_t now_ms)
{
    char s[64];
    if (!v || len == 0 || len >= sizeof s) return -1;
    memcpy(s, v, len);
    s[len] = '\0';
    char *end;
    if (s[0] >= '0' && s[0] <= '9') {
        errno = 0;
        unsigned long long sec = strtoull(s, &end, 10);
        if (errno || *end) return -1;
        return sec > RETRY_AFTER_MAX_MS / 1000 ? RETRY_AFTER_MAX_MS : (int64_t)sec * 1000;
    }
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    end = strptime(s, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    if (!end || *end) return -1;
    int64_t at = (int64_t)timegm(&tm) * 1000;
    int64_t d = at - now_ms;
    if (d < 0) d = 0;
    return d > RETRY_AFTER_MAX_MS ? RETRY_AFTER_MAX_MS : d;
}

int gw_fwd_is_internal(const uint8_t *labels, size_t len)
{
    const char *v;
    size_t n;
    if (!gw_labels_get(labels, len, "__name__", 8, &v, &n)) return 0;
    static const char ck[] = "gpuwatch_checkpoint_";
    return (n == 6 && !memcmp(v, "ALERTS", 6)) || (n == 22 && !memcmp(v, "gpuwatch_node_activity", 22)) ||
           (n > sizeof ck - 1 && !memcmp(v, ck, sizeof ck - 1));
}

int gw_fwd_header_parse(const char *hv, char *buf, size_t cap, const char **name, const char **value,
                        struct gw_error *err)
{
    static const char *const reserved[] = {"host", "content-length", "content-type", "content-encoding",
                                           "user-agent", "x-prometheus-remote-write-version"};
    size_t len = strlen(hv);
    const char *colon = strchr(hv, ':');
    if (!colon || colon == hv) return gw_error_set(err, GW_EINVAL, "header \"%.100s\" is not \"Name: value\"", hv);
    if (len + 2 > cap) return gw_error_set(err, GW_EINVAL, "header \"%.100s...\" is too long", hv);
    for (const char *p = hv; p < colon; p++)
        if (*p <= ' ' || *p >= 127 || strchr("()<>@,;:\\\"/[]?={}", *p))
            return gw_error_set(err, GW_EINVAL, "header \"%.100s\": the name holds '%c'", hv, *p == '\t' ? ' ' : *p);
    for (const char *p = colon + 1; *p; p++)
        if ((unsigned char)*p < ' ' && *p != '\t')
            return gw_error_set(err, GW_EINVAL, "header \"%.100s\": the value holds a control character", hv);
    size_t nl = (size_t)(colon - hv);
    memcpy(buf, hv, nl);
    buf[nl] = '\0';
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
        if (!strcasecmp(buf, reserved[i]))
            return gw_error_set(err, GW_EINVAL, "header %s is set by gpuwatch and cannot be given", buf);
    const char *vb = colon + 1, *ve = hv + len;
    while (*vb == ' ' || *vb == '\t') vb++;
    while (ve > vb && (ve[-1] == ' ' || ve[-1] == '\t')) ve--;
    char *vo = buf + nl + 1;
    memcpy(vo, vb, (size_t)(ve - vb));
    vo[ve - vb] = '\0';
    *name = buf;
    *value = vo;
    return GW_OK;
}
