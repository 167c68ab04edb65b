/* src/http/auth.c - bearer-token and HTTP basic authentication of the
 * three route classes (write, read, admin; routes.c decides a request's
 * class), and the per-request hook server.c calls once the headers are
 * known (docs/security.md).
 *
 * Files (read at the start and on every reload; a file that does not load
 * keeps the credentials in use):
 *   bearer token file: one token a line (several: any is accepted, for
 *                      rotation); blank lines and lines starting with '#'
 *                      are skipped, trailing blanks and CR dropped;
 *   basic auth file:   "user:password" or "user:sha256:<64 hex digits>"
 *                      (the SHA-256 of the password) lines, same rules.
 * Only SHA-256 digests of the secrets are kept in memory. A presented
 * token, user name or password is hashed and compared with every entry in
 * constant time (no early exit), so the answer's timing tells nothing
 * about how much of a secret matched or which user exists.
 *
 * A refused request gets 401 with WWW-Authenticate (Basic and/or Bearer,
 * realm "gpuwatch") answered at once: its body is never read. With client CAs
 * configured (tls.c) a request without a verified client certificate gets
 * 403 before any credential is looked at. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include "http/http_int.h"

#define DIGEST 32
#define AUTH_FILE_MAX ((size_t)1 << 20)
#define AUTH_ENTRIES_MAX 10000
#define N_CLASSES 3   /* write, read, admin: enum gw_auth_class - 1 */

struct auth_user {
    uint8_t name[DIGEST];
    uint8_t pw[DIGEST];
};

struct auth_set {
    uint8_t (*tokens)[DIGEST];
    size_t n_tokens;
    struct auth_user *users;
    size_t n_users;
    int bearer, basic;   /* a file of that kind is configured */
};

struct gw_auth {
    pthread_rwlock_t mu;
    char *files[N_CLASSES][2];   /* [class][0 bearer, 1 basic], owned */
    struct auth_set set[N_CLASSES];
};

static const char *const class_names[] = {"open", "write", "read", "admin"};

const char *gw_auth_class_name(enum gw_auth_class c)
{
    return (unsigned)c < 4 ? class_names[c] : "?";
}

int gw_ct_equal(const void *a, const void *b, size_t n)
{
    const volatile uint8_t *x = a, *y = b;
    uint8_t d = 0;
    for (size_t i = 0; i < n; i++)
        d |= (uint8_t)(x[i] ^ y[i]);
    return d == 0;
}

static void sha256(const void *p, size_t n, uint8_t out[DIGEST])
{
    if (gnutls_hash_fast(GNUTLS_DIG_SHA256, p, n, out) != 0)
        memset(out, 0xff, DIGEST);   /* cannot happen with GnuTLS' built-in SHA-256 */
}

static void set_free(struct auth_set *s)
{
    free(s->tokens);
    free(s->users);
    memset(s, 0, sizeof *s);
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* "sha256:<64 hex>" into out: 1; anything else 0. */
static int parse_hashed(const char *p, size_t n, uint8_t out[DIGEST])
{
    if (n != 7 + 2 * DIGEST || strncmp(p, "sha256:", 7) != 0)
        return 0;
    for (size_t i = 0; i < DIGEST; i++) {
        int hi = hexval(p[7 + 2 * i]), lo = hexval(p[8 + 2 * i]);
        if (hi < 0 || lo < 0)
            return 0;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 1;
}

static int read_file(const char *path, char **out, struct gw_error *err)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    size_t n;
    if (f == NULL) {
        char eb[128];
        return gw_error_set(err, GW_EIO, "cannot read %s: %s", path, strerror_r(errno, eb, sizeof eb));
    }
    buf = malloc(AUTH_FILE_MAX + 1);
    if (buf == NULL) {
        fclose(f);
        return gw_error_set(err, GW_ENOMEM, "out of memory reading %s", path);
    }
    n = fread(buf, 1, AUTH_FILE_MAX + 1, f);
    fclose(f);
    if (n > AUTH_FILE_MAX) {
        free(buf);
        return gw_error_set(err, GW_ETOOLARGE, "%s: larger than %zu bytes", path, AUTH_FILE_MAX);
    }
    buf[n] = '\0';
    if (memchr(buf, '\0', n) != NULL) {
        free(buf);
        return gw_error_set(err, GW_EINVAL, "%s: contains a NUL byte", path);
    }
    *out = buf;
    return GW_OK;
}

/* One entry line (blanks and comments skipped) into set s. */
static int add_line(struct auth_set *s, int basic, const char *path, int lineno, const char *l, size_t n,
                    struct gw_error *err)
{
    size_t cap = AUTH_ENTRIES_MAX;
    if (s->n_tokens + s->n_users >= cap)
        return gw_error_set(err, GW_ELIMIT, "%s: more than %zu entries", path, cap);
    if (!basic) {
        if (memchr(l, ' ', n) || memchr(l, '\t', n))
            return gw_error_set(err, GW_EINVAL, "%s:%d: a token cannot contain blanks", path, lineno);
        sha256(l, n, s->tokens[s->n_tokens++]);
        return GW_OK;
    }
    const char *colon = memchr(l, ':', n);
    if (colon == NULL || colon == l)
        return gw_error_set(err, GW_EINVAL, "%s:%d: expected user:password or user:sha256:<hex>", path, lineno);
    size_t ul = (size_t)(colon - l), pl = n - ul - 1;
    struct auth_user *u = &s->users[s->n_users];
    if (pl == 0)
        return gw_error_set(err, GW_EINVAL, "%s:%d: empty password for user %.*s", path, lineno, (int)ul, l);
    sha256(l, ul, u->name);
    if (!parse_hashed(colon + 1, pl, u->pw)) {
        if (pl >= 7 && strncmp(colon + 1, "sha256:", 7) == 0)
            return gw_error_set(err, GW_EINVAL, "%s:%d: sha256: must be followed by 64 hex digits", path, lineno);
        sha256(colon + 1, pl, u->pw);
    }
    for (size_t i = 0; i < s->n_users; i++)
        if (memcmp(s->users[i].name, u->name, DIGEST) == 0)
            return gw_error_set(err, GW_EINVAL, "%s:%d: user %.*s listed twice", path, lineno, (int)ul, l);
    s->n_users++;
    return GW_OK;
}

/* Reads a bearer (basic 0) or basic auth file into s. */
static int load_file(struct auth_set *s, int basic, const char *path, struct gw_error *err)
{
    char *text = NULL, *p;
    int rc = read_file(path, &text, err), lineno = 0;
    size_t before = basic ? s->n_users : s->n_tokens;
    if (rc != GW_OK)
        return rc;
    if (basic)
        s->users = calloc(AUTH_ENTRIES_MAX, sizeof *s->users);
    else
        s->tokens = calloc(AUTH_ENTRIES_MAX, sizeof *s->tokens);
    if (basic ? s->users == NULL : s->tokens == NULL) {
        free(text);
        return gw_error_set(err, GW_ENOMEM, "out of memory reading %s", path);
    }
    for (p = text; rc == GW_OK && *p;) {
        size_t n = strcspn(p, "\n");
        char *next = p[n] ? p + n + 1 : p + n;
        lineno++;
        while (n > 0 && (p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t'))
            n--;
        if (n > 0 && p[0] != '#')
            rc = add_line(s, basic, path, lineno, p, n, err);
        p = next;
    }
    free(text);
    if (rc == GW_OK && (basic ? s->n_users : s->n_tokens) == before)
        rc = gw_error_set(err, GW_EINVAL, "%s: no %s in the file", path, basic ? "user:password line" : "token");
    if (basic)
        s->basic = 1;
    else
        s->bearer = 1;
    return rc;
}

static int load_all(struct gw_auth *a, struct auth_set out[N_CLASSES], struct gw_error *err)
{
    int rc = GW_OK;
    memset(out, 0, N_CLASSES * sizeof out[0]);
    for (int c = 0; c < N_CLASSES && rc == GW_OK; c++)
        for (int k = 0; k < 2 && rc == GW_OK; k++)
            if (a->files[c][k] != NULL)
                rc = load_file(&out[c], k, a->files[c][k], err);
    if (rc != GW_OK)
        for (int c = 0; c < N_CLASSES; c++)
            set_free(&out[c]);
    return rc;
}

void gw_auth_free(struct gw_auth *a)
{
    if (a == NULL)
        return;
    for (int c = 0; c < N_CLASSES; c++) {
        set_free(&a->set[c]);
        free(a->files[c][0]);
        free(a->files[c][1]);
    }
    pthread_rwlock_destroy(&a->mu);
    free(a);
}

int gw_auth_new(struct gw_auth **out, const struct gw_http_security *sec, struct gw_error *err)
{
    const struct gw_http_auth_files *f[N_CLASSES] = {&sec->write, &sec->read, &sec->admin};
    struct gw_auth *a = calloc(1, sizeof *a);
    int rc;
    if (a == NULL)
        return gw_error_set(err, GW_ENOMEM, "out of memory");
    pthread_rwlock_init(&a->mu, NULL);
    for (int c = 0; c < N_CLASSES; c++) {
        const char *paths[2] = {f[c]->bearer_token_file, f[c]->basic_auth_file};
        for (int k = 0; k < 2; k++)
            if (paths[k] != NULL && (a->files[c][k] = strdup(paths[k])) == NULL) {
                gw_auth_free(a);
                return gw_error_set(err, GW_ENOMEM, "out of memory");
            }
    }
    rc = load_all(a, a->set, err);
    if (rc != GW_OK) {
        gw_auth_free(a);
        return rc;
    }
    *out = a;
    return GW_OK;
}

int gw_auth_reload(struct gw_auth *a, struct gw_error *err)
{
    struct auth_set fresh[N_CLASSES];
    int rc = load_all(a, fresh, err);
    if (rc != GW_OK)
        return rc;
    pthread_rwlock_wrlock(&a->mu);
    for (int c = 0; c < N_CLASSES; c++) {
        set_free(&a->set[c]);
        a->set[c] = fresh[c];
    }
    pthread_rwlock_unlock(&a->mu);
    return GW_OK;
}

int gw_auth_configured(struct gw_auth *a, enum gw_auth_class c)
{
    int on;
    if (a == NULL || c < GW_AUTH_WRITE || c > GW_AUTH_ADMIN)
        return 0;
    pthread_rwlock_rdlock(&a->mu);
    on = a->set[c - 1].bearer || a->set[c - 1].basic;
    pthread_rwlock_unlock(&a->mu);
    return on;
}

/* Standard base64 of n bytes into out (cap bytes); decoded length or -1. */
static long b64_decode(const char *in, size_t n, uint8_t *out, size_t cap)
{
    uint32_t acc = 0;
    int bits = 0;
    size_t o = 0, i = 0;
    for (; i < n && in[i] != '='; i++) {
        const char *al = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        const char *q = in[i] ? strchr(al, in[i]) : NULL;
        if (q == NULL)
            return -1;
        acc = acc << 6 | (uint32_t)(q - al);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o >= cap)
                return -1;
            out[o++] = (uint8_t)(acc >> bits);
        }
    }
    for (; i < n; i++)
        if (in[i] != '=')
            return -1;
    return (long)o;
}

static int check_bearer(const struct auth_set *s, const char *tok, size_t n)
{
    uint8_t d[DIGEST];
    int ok = 0;
    sha256(tok, n, d);
    for (size_t i = 0; i < s->n_tokens; i++)
        ok |= gw_ct_equal(d, s->tokens[i], DIGEST);
    return ok;
}

static int check_basic(const struct auth_set *s, const char *b64, size_t n)
{
    uint8_t dec[1024], du[DIGEST], dp[DIGEST];
    long len = b64_decode(b64, n, dec, sizeof dec);
    const uint8_t *colon;
    int ok = 0;
    if (len <= 0 || (colon = memchr(dec, ':', (size_t)len)) == NULL)
        return -1;
    sha256(dec, (size_t)(colon - dec), du);
    sha256(colon + 1, (size_t)(dec + len - colon - 1), dp);
    for (size_t i = 0; i < s->n_users; i++)
        ok |= gw_ct_equal(du, s->users[i].name, DIGEST) & gw_ct_equal(dp, s->users[i].pw, DIGEST);
    return ok;
}

/* What class c accepts, for messages: "a bearer token", "basic credentials", or both. */
static const char *accepted(const struct auth_set *s)
{
    if (s->bearer && s->basic)
        return "a bearer token or basic credentials";
    return s->bearer ? "a bearer token" : "basic credentials";
}

static int check_locked(const struct auth_set *s, enum gw_auth_class c, const char *h, char *msg, size_t cap)
{
    const char *name = gw_auth_class_name(c);
    size_t hl;
    if (h == NULL || h[0] == '\0') {
        snprintf(msg, cap, "unauthorized: the %s endpoints need %s (Authorization header)", name, accepted(s));
        return 401;
    }
    hl = strlen(h);
    if (hl > 7 && strncasecmp(h, "Bearer ", 7) == 0) {
        const char *t = h + 7;
        while (*t == ' ')
            t++;
        if (!s->bearer) {
            snprintf(msg, cap, "unauthorized: the %s endpoints take %s, not a bearer token", name, accepted(s));
            return 401;
        }
        if (check_bearer(s, t, strlen(t)))
            return 0;
        snprintf(msg, cap, "unauthorized: invalid bearer token for the %s endpoints", name);
        return 401;
    }
    if (hl > 6 && strncasecmp(h, "Basic ", 6) == 0) {
        const char *t = h + 6;
        int r;
        while (*t == ' ')
            t++;
        if (!s->basic) {
            snprintf(msg, cap, "unauthorized: the %s endpoints take %s, not basic credentials", name, accepted(s));
            return 401;
        }
        r = check_basic(s, t, strlen(t));
        if (r == 1)
            return 0;
        snprintf(msg, cap, r < 0 ? "unauthorized: malformed basic credentials (base64 of user:password expected)"
                                 : "unauthorized: invalid user name or password for the %s endpoints", name);
        return 401;
    }
    snprintf(msg, cap, "unauthorized: unsupported Authorization scheme; the %s endpoints need %s", name, accepted(s));
    return 401;
}

int gw_auth_check(struct gw_auth *a, enum gw_auth_class c, const char *authorization, char *msg, size_t cap)
{
    int rc = 0;
    if (a == NULL || c < GW_AUTH_WRITE || c > GW_AUTH_ADMIN)
        return 0;
    pthread_rwlock_rdlock(&a->mu);
    if (a->set[c - 1].bearer || a->set[c - 1].basic)
        rc = check_locked(&a->set[c - 1], c, authorization, msg, cap);
    pthread_rwlock_unlock(&a->mu);
    return rc;
}

int gw_auth_challenges(struct gw_auth *a, enum gw_auth_class c, char out[2][96])
{
    int n = 0;
    if (a == NULL || c < GW_AUTH_WRITE || c > GW_AUTH_ADMIN)
        return 0;
    pthread_rwlock_rdlock(&a->mu);
    if (a->set[c - 1].basic)
        snprintf(out[n++], 96, "Basic realm=\"gpuwatch %s\", charset=\"UTF-8\"", gw_auth_class_name(c));
    if (a->set[c - 1].bearer)
        snprintf(out[n++], 96, "Bearer realm=\"gpuwatch %s\"", gw_auth_class_name(c));
    pthread_rwlock_unlock(&a->mu);
    return n;
}

/* ---- the request hook ---- */

int gw_http_auth_request(struct gw_http_req *rq)
{
    struct gw_http *h = rq->h;
    enum gw_auth_class c;
    int st;
    if (h->auth == NULL && h->tls == NULL)
        return 0;
    c = gw_route_auth_class(rq->route, rq->method, h->opts.sec.metrics_open);
    if (c != GW_AUTH_OPEN && h->tls != NULL &&
        gw_tls_verify_client(h->tls, rq->conn, rq->early_msg, sizeof rq->early_msg) != 0) {
        rq->early_status = 403;
        return 1;
    }
    st = gw_auth_check(h->auth, c, gw_http_header(rq, "Authorization"), rq->early_msg, sizeof rq->early_msg);
    if (st != 0) {
        rq->early_status = st;
        return 1;
    }
    rq->admin_authed = c == GW_AUTH_ADMIN && gw_auth_configured(h->auth, c);
    return 0;
}

void gw_http_auth_challenge(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    char ch[2][96];
    int n = gw_auth_challenges(rq->h->auth, gw_route_auth_class(rq->route, rq->method, rq->h->opts.sec.metrics_open),
                               ch);
    for (int i = 0; i < n; i++)
        gw_resp_header(rs, "WWW-Authenticate", "%s", ch[i]);
}
