/* src/ledger/events.c - scheduler events (ledger.h, "scheduler events"):
 * the strict JSON-lines reader behind POST /api/v1/events, the canonical
 * JSON writer, and the event store DIR/events/ (kv.h, LMDB underneath).
 *
 * Reading (gw_led_events_parse). The body is untrusted: one JSON object
 * per line ('\n', an optional '\r' before it; blank lines skipped), each
 * line at most LEV_MAX_LINE bytes and nested at most LEV_MAX_DEPTH deep
 * (checked before jansson sees it), decoded by jansson with
 * JSON_REJECT_DUPLICATES, then checked field by field against the table
 * lev_rules: known "type" only, required fields present, no field of
 * another type, no unknown field, the right JSON type for every value,
 * string lengths below their buffers, ids and reasons without control
 * characters, node names host-name-like ([A-Za-z0-9._-], starting with a
 * letter or digit, lower-cased), "nodes" 1..LEV_MAX_NODES names without a
 * duplicate. "time" is RFC 3339 (Z or +hh:mm/-hh:mm, any fraction,
 * truncated to ms) or Unix seconds as a JSON number (fraction rounded to
 * ms, as Prometheus reads its time parameters), between 1970 and 9999.
 * "seq" (what GET gives back) is accepted and kept; the store replaces it.
 * The first bad line ends the parse: GW_EINVAL "line N: <problem>" and no
 * events (GW_ELIMIT past max_events).
 *
 * Store layout (kv.h tables, integers big-endian so that byte order is
 * numeric order; times biased, t XOR 2^63, so negative times sort first):
 *   events   time(be64 biased) seq(be64) -> the event's canonical JSON
 *            (gw_led_event_json, "seq" included), read back with the
 *            same strict reader, so the store holds nothing the API
 *            would refuse
 *   meta     "next_seq" -> be64, the seq the next stored event gets
 *            (first 1; continues across restarts)
 * Worked example: the 5th event stored,
 *   {"type":"session_start","time":"2026-12-01T10:00:00Z",
 *    "session":"job-7","nodes":["gpu-a1","GPU-A2"]}
 * (t = 1796119200000 ms) is
 *   key   80 00 01 a2 31 0c 01 00  00 00 00 00 00 00 00 05
 *   value {"seq":5,"time":"2026-12-01T10:00:00Z","type":"session_start",
 *          "session":"job-7","nodes":["gpu-a1","gpu-a2"]}
 * and meta "next_seq" becomes 00 00 00 00 00 00 00 06.
 *
 * Concurrency: appends take the handle's lock exclusively (one writer, and
 * gw_kv_grow needs no transaction open in the process), loads share it.
 * Private names start with lev_ (the other files of src/ledger/ have
 * theirs). */
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/json.h"
#include "gpuwatch/kv.h"
#include "gpuwatch/ledger.h"

#define LEV_MAX_LINE ((size_t)4 << 20)   /* one line (16384 nodes of 127 bytes fit) */
#define LEV_MAX_DEPTH 4                  /* our objects nest 2 deep */
#define LEV_MAX_NODES 16384              /* members of one session */
#define LEV_MAX_MS 253402300799999LL     /* 9999-12-31T23:59:59.999Z */
#define LEV_MAP_BYTES ((size_t)4 << 20)
#define LEV_MAP_MAX ((size_t)16 << 30)
#define LEV_BIAS 0x8000000000000000ULL

enum { LEV_T_EVENTS, LEV_T_META };
static const char *const lev_tables[] = {"events", "meta"};

struct gw_led_events {
    struct gw_kv *kv;
    pthread_rwlock_t lock;   /* shared: load; exclusive: append (and grow) */
};

/* ------------------------------------------------------------- fields */

enum lev_field {
    LF_TYPE, LF_TIME, LF_SEQ, LF_SESSION, LF_CHAIN, LF_ATTEMPT, LF_RETRY_OF, LF_NODES, LF_OUTCOME, LF_NODE,
    LF_REASON, LF_N_
};
static const char *const lev_field_names[LF_N_] = {
    "type", "time", "seq", "session", "chain", "attempt", "retry_of", "nodes", "outcome", "node", "reason",
};
#define B(f) (1u << (f))
#define LEV_COMMON (B(LF_TYPE) | B(LF_TIME) | B(LF_SEQ))

/* Allowed and required fields per type (the comments of ledger.h). */
static const struct {
    unsigned allowed, required;
} lev_rules[GW_LEV_COUNT_] = {
    [GW_LEV_SESSION_START] = {LEV_COMMON | B(LF_SESSION) | B(LF_NODES) | B(LF_CHAIN) | B(LF_ATTEMPT) | B(LF_RETRY_OF),
                              B(LF_SESSION) | B(LF_NODES)},
    [GW_LEV_SESSION_END] = {LEV_COMMON | B(LF_SESSION) | B(LF_OUTCOME), B(LF_SESSION)},
    [GW_LEV_SESSION_FAIL] = {LEV_COMMON | B(LF_SESSION) | B(LF_REASON) | B(LF_NODE), B(LF_SESSION)},
    [GW_LEV_SESSION_RETRY] = {LEV_COMMON | B(LF_SESSION) | B(LF_RETRY_OF) | B(LF_NODES),
                              B(LF_SESSION) | B(LF_RETRY_OF)},
    [GW_LEV_NODE_EXCLUDED] = {LEV_COMMON | B(LF_NODE) | B(LF_REASON), B(LF_NODE)},
    [GW_LEV_NODE_RETURNED] = {LEV_COMMON | B(LF_NODE) | B(LF_REASON), B(LF_NODE)},
};

static int lev_fail(struct gw_error *err, int rc, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int lev_fail(struct gw_error *err, int rc, size_t line, const char *fmt, ...)
{
    char m[GW_ERROR_MSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    return gw_error_set(err, rc, "line %zu: %s", line, m);
}

/* ---------------------------------------------------------------- time */

static int lev_time(json_t *v, size_t line, int64_t *out, struct gw_error *err)
{
    int64_t t;
    if (json_is_string(v)) {
        if (strlen(json_string_value(v)) != json_string_length(v) || gw_parse_rfc3339(json_string_value(v), &t) != GW_OK)
            return lev_fail(err, GW_EINVAL, line, "\"time\" \"%.40s\" is not an RFC 3339 time", json_string_value(v));
    } else if (json_is_integer(v)) {
        json_int_t s = json_integer_value(v);
        if (s < 0 || s > LEV_MAX_MS / 1000)
            return lev_fail(err, GW_EINVAL, line, "\"time\" %lld is outside 1970..9999 (Unix seconds expected)",
                            (long long)s);
        t = (int64_t)s * 1000;
    } else if (json_is_real(v)) {
        double s = json_real_value(v);
        if (!(s >= 0 && s < (double)(LEV_MAX_MS / 1000 + 1)))
            return lev_fail(err, GW_EINVAL, line, "\"time\" %g is outside 1970..9999 (Unix seconds expected)", s);
        double ip;
        double fr = modf(s, &ip);
        t = (int64_t)ip * 1000 + (int64_t)llround(fr * 1000);
    } else {
        return lev_fail(err, GW_EINVAL, line, "\"time\" must be an RFC 3339 string or Unix seconds");
    }
    if (t < 0 || t > LEV_MAX_MS) return lev_fail(err, GW_EINVAL, line, "\"time\" is outside 1970..9999");
    *out = t;
    return GW_OK;
}

/* -------------------------------------------------------------- strings */

enum lev_kind { LEV_ID, LEV_TEXT, LEV_HOST };

/* Checks and copies a string value of field f into dst (cap bytes). */
static int lev_str(json_t *v, size_t line, const char *f, enum lev_kind kind, char *dst, size_t cap,
                   struct gw_error *err)
{
    if (!json_is_string(v)) return lev_fail(err, GW_EINVAL, line, "\"%s\" must be a string", f);
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n >= cap) return lev_fail(err, GW_EINVAL, line, "\"%s\" is longer than %zu bytes", f, cap - 1);
    if (n == 0 && kind != LEV_TEXT) return lev_fail(err, GW_EINVAL, line, "\"%s\" is empty", f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (kind == LEV_HOST) {
            int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
            if (!alnum && (i == 0 || (c != '-' && c != '.' && c != '_')))
                return lev_fail(err, GW_EINVAL, line, "\"%s\": \"%.*s\" is not a host name", f,
                                (int)(n < 64 ? n : 64), s);
            dst[i] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
        } else {
            if (c < 0x20 || c == 0x7f)
                return lev_fail(err, GW_EINVAL, line, "\"%s\" has a control character", f);
            dst[i] = (char)c;
        }
    }
    dst[n] = '\0';
    return GW_OK;
}

static int lev_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void lev_free_nodes(char **nodes, uint32_t n)
{
    if (!nodes) return;
    for (uint32_t i = 0; i < n; i++) free(nodes[i]);
    free(nodes);
}

static int lev_nodes(json_t *v, size_t line, struct gw_led_event *e, struct gw_error *err)
{
    if (!json_is_array(v)) return lev_fail(err, GW_EINVAL, line, "\"nodes\" must be an array of host names");
    size_t n = json_array_size(v);
    if (n == 0) return lev_fail(err, GW_EINVAL, line, "\"nodes\" is empty");
    if (n > LEV_MAX_NODES) return lev_fail(err, GW_EINVAL, line, "\"nodes\" has more than %d names", LEV_MAX_NODES);
    char **nodes = calloc(n, sizeof *nodes);
    char **sorted = malloc(n * sizeof *sorted);
    int rc = GW_OK;
    if (!nodes || !sorted) rc = gw_error_set(err, GW_ENOMEM, "out of memory");
    char name[GW_LED_NAME];
    for (size_t i = 0; rc == GW_OK && i < n; i++) {
        rc = lev_str(json_array_get(v, i), line, "nodes", LEV_HOST, name, sizeof name, err);
        if (rc == GW_OK && !(nodes[i] = strdup(name))) rc = gw_error_set(err, GW_ENOMEM, "out of memory");
        if (rc == GW_OK) sorted[i] = nodes[i];
    }
    if (rc == GW_OK) {
        if (n > 1) qsort(sorted, n, sizeof *sorted, lev_cmp_str);
        for (size_t i = 1; rc == GW_OK && i < n; i++)
            if (strcmp(sorted[i - 1], sorted[i]) == 0)
                rc = lev_fail(err, GW_EINVAL, line, "node \"%s\" appears twice in \"nodes\"", sorted[i]);
    }
    free(sorted);
    if (rc != GW_OK) {
        lev_free_nodes(nodes, (uint32_t)n);
        return rc;
    }
    e->nodes = nodes;
    e->n_nodes = (uint32_t)n;
    return GW_OK;
}

/* ------------------------------------------------------------- one line */

static int lev_type(json_t *v, size_t line, enum gw_led_ev_type *out, struct gw_error *err)
{
    if (!v) return lev_fail(err, GW_EINVAL, line, "missing \"type\"");
    if (!json_is_string(v)) return lev_fail(err, GW_EINVAL, line, "\"type\" must be a string");
    for (int t = 1; t < GW_LEV_COUNT_; t++)
        if (strcmp(json_string_value(v), gw_led_ev_name((enum gw_led_ev_type)t)) == 0) {
            *out = (enum gw_led_ev_type)t;
            return GW_OK;
        }
    return lev_fail(err, GW_EINVAL, line, "unknown type \"%.40s\"", json_string_value(v));
}

/* The fields of one decoded object into e (zeroed by the caller). */
static int lev_fields(json_t *o, size_t line, struct gw_led_event *e, struct gw_error *err)
{
    json_t *val[LF_N_] = {0};
    unsigned seen = 0;
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        int f = 0;
        while (f < LF_N_ && strcmp(key, lev_field_names[f]) != 0) f++;
        if (f == LF_N_) return lev_fail(err, GW_EINVAL, line, "unknown field \"%.40s\"", key);
        val[f] = v;
        seen |= B(f);
    }
    int rc = lev_type(val[LF_TYPE], line, &e->type, err);
    if (rc) return rc;
    const char *tn = gw_led_ev_name(e->type);
    for (int f = 0; f < LF_N_; f++) {
        if ((seen & B(f)) && !(lev_rules[e->type].allowed & B(f)))
            return lev_fail(err, GW_EINVAL, line, "field \"%s\" is not allowed in %s", lev_field_names[f], tn);
        if (!(seen & B(f)) && (lev_rules[e->type].required & B(f)))
            return lev_fail(err, GW_EINVAL, line, "%s needs \"%s\"", tn, lev_field_names[f]);
    }
    if (!val[LF_TIME]) return lev_fail(err, GW_EINVAL, line, "%s needs \"time\"", tn);
    rc = lev_time(val[LF_TIME], line, &e->t, err);
    if (!rc && val[LF_SEQ]) {
        if (!json_is_integer(val[LF_SEQ]) || json_integer_value(val[LF_SEQ]) < 0)
            return lev_fail(err, GW_EINVAL, line, "\"seq\" must be a non-negative integer");
        e->seq = (uint64_t)json_integer_value(val[LF_SEQ]);
    }
    e->attempt = -1;
    if (!rc && val[LF_ATTEMPT]) {
        if (!json_is_integer(val[LF_ATTEMPT]) || json_integer_value(val[LF_ATTEMPT]) < 0 ||
            json_integer_value(val[LF_ATTEMPT]) > INT32_MAX)
            return lev_fail(err, GW_EINVAL, line, "\"attempt\" must be an integer from 0 to %d", INT32_MAX);
        e->attempt = (int32_t)json_integer_value(val[LF_ATTEMPT]);
    }
    if (!rc && val[LF_SESSION])
        rc = lev_str(val[LF_SESSION], line, "session", LEV_ID, e->session, sizeof e->session, err);
    if (!rc && val[LF_RETRY_OF])
        rc = lev_str(val[LF_RETRY_OF], line, "retry_of", LEV_ID, e->retry_of, sizeof e->retry_of, err);
    if (!rc && val[LF_CHAIN]) rc = lev_str(val[LF_CHAIN], line, "chain", LEV_ID, e->chain, sizeof e->chain, err);
    if (!rc && val[LF_NODE]) rc = lev_str(val[LF_NODE], line, "node", LEV_HOST, e->node, sizeof e->node, err);
    if (!rc && val[LF_REASON])
        rc = lev_str(val[LF_REASON], line, "reason", LEV_TEXT, e->reason, sizeof e->reason, err);
    if (!rc && val[LF_OUTCOME]) {
        rc = lev_str(val[LF_OUTCOME], line, "outcome", LEV_ID, e->outcome, sizeof e->outcome, err);
        if (!rc && strcmp(e->outcome, "completed") != 0 && strcmp(e->outcome, "cancelled") != 0)
            rc = lev_fail(err, GW_EINVAL, line, "\"outcome\" must be \"completed\" or \"cancelled\"");
    }
    if (!rc && val[LF_NODES]) rc = lev_nodes(val[LF_NODES], line, e, err);
    return rc;
}

/* Nesting depth of the JSON text in s (brackets outside strings). */
static int lev_depth_ok(const char *s, size_t n)
{
    int depth = 0, in_str = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\') i++;
            else if (c == '"') in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (c == '{' || c == '[') {
            if (++depth > LEV_MAX_DEPTH) return 0;
        } else if (c == '}' || c == ']') {
            depth--;
        }
    }
    return 1;
}

/* One line (no newline in it) into *e; on error e holds nothing. */
static int lev_parse_line(const char *s, size_t n, size_t line, struct gw_led_event *e, struct gw_error *err)
{
    memset(e, 0, sizeof *e);
    if (n > LEV_MAX_LINE) return lev_fail(err, GW_EINVAL, line, "longer than %zu bytes", LEV_MAX_LINE);
    if (!lev_depth_ok(s, n)) return lev_fail(err, GW_EINVAL, line, "nested deeper than %d", LEV_MAX_DEPTH);
    json_error_t je;
    json_t *o = json_loadb(s, n, JSON_REJECT_DUPLICATES, &je);
    if (!o) return lev_fail(err, GW_EINVAL, line, "invalid JSON at column %d: %s", je.column, je.text);
    int rc = json_is_object(o) ? lev_fields(o, line, e, err) : lev_fail(err, GW_EINVAL, line, "not a JSON object");
    json_decref(o);
    if (rc != GW_OK) {
        lev_free_nodes(e->nodes, e->n_nodes);
        memset(e, 0, sizeof *e);
    }
    return rc;
}

void gw_led_events_free(struct gw_led_event *ev, size_t n)
{
    if (!ev) return;
    for (size_t i = 0; i < n; i++) lev_free_nodes(ev[i].nodes, ev[i].n_nodes);
    free(ev);
}

/* A growable array of events. */
struct lev_vec {
    struct gw_led_event *v;
    size_t n, cap;
};

static struct gw_led_event *lev_vec_next(struct lev_vec *a)
{
    if (a->n == a->cap) {
        size_t nc = a->cap ? a->cap * 2 : 16;
        struct gw_led_event *p = realloc(a->v, nc * sizeof *p);
        if (!p) return NULL;
        a->v = p;
        a->cap = nc;
    }
    return &a->v[a->n];
}

int gw_led_events_parse(const char *body, size_t len, size_t max_events, struct gw_led_event **out, size_t *n,
                        struct gw_error *err)
{
    *out = NULL;
    *n = 0;
    struct lev_vec a = {0};
    const char *p = body, *end = body + len;
    size_t line = 0;
    int rc = GW_OK;
    while (rc == GW_OK && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
        const char *s = p;
        p = nl ? nl + 1 : end;
        line++;
        if (l && s[l - 1] == '\r') l--;
        size_t k = 0;
        while (k < l && (s[k] == ' ' || s[k] == '\t')) k++;
        if (k == l) continue;   /* blank */
        if (max_events && a.n == max_events) {
            rc = lev_fail(err, GW_ELIMIT, line, "more than %zu events in one request", max_events);
            break;
        }
        struct gw_led_event *e = lev_vec_next(&a);
        if (!e) {
            rc = gw_error_set(err, GW_ENOMEM, "out of memory");
            break;
        }
        rc = lev_parse_line(s, l, line, e, err);
        if (rc == GW_OK) a.n++;
    }
    if (rc != GW_OK) {
        gw_led_events_free(a.v, a.n);
        return rc;
    }
    *out = a.v;
    *n = a.n;
    return GW_OK;
}

/* ---------------------------------------------------------------- JSON */

static int lev_json_field(struct gw_buf *b, const char *name, const char *v)
{
    if (!v[0]) return GW_OK;
    int rc = gw_buf_printf(b, ",\"%s\":", name);
    return rc ? rc : gw_json_cstr(b, v);
}

int gw_led_event_json(struct gw_buf *b, const struct gw_led_event *e)
{
    int rc = gw_buf_putc(b, '{');
    if (!rc && e->seq) rc = gw_buf_printf(b, "\"seq\":%llu,", (unsigned long long)e->seq);
    if (!rc) rc = gw_buf_printf(b, "\"time\":");
    if (!rc) rc = gw_json_time(b, e->t);
    if (!rc) rc = gw_buf_printf(b, ",\"type\":\"%s\"", gw_led_ev_name(e->type));
    if (!rc) rc = lev_json_field(b, "session", e->session);
    if (!rc) rc = lev_json_field(b, "chain", e->chain);
    if (!rc && e->attempt >= 0) rc = gw_buf_printf(b, ",\"attempt\":%d", (int)e->attempt);
    if (!rc) rc = lev_json_field(b, "retry_of", e->retry_of);
    if (!rc && e->n_nodes) {
        rc = gw_buf_printf(b, ",\"nodes\":[");
        for (uint32_t i = 0; !rc && i < e->n_nodes; i++) {
            if (i) rc = gw_buf_putc(b, ',');
            if (!rc) rc = gw_json_cstr(b, e->nodes[i]);
        }
        if (!rc) rc = gw_buf_putc(b, ']');
    }
    if (!rc) rc = lev_json_field(b, "outcome", e->outcome);
    if (!rc) rc = lev_json_field(b, "node", e->node);
    if (!rc) rc = lev_json_field(b, "reason", e->reason);
    if (!rc) rc = gw_buf_putc(b, '}');
    return rc;
}

/* --------------------------------------------------------------- store */

static void lev_key(uint8_t k[16], int64_t t, uint64_t seq)
{
    gw_put_be64(k, (uint64_t)t ^ LEV_BIAS);
    gw_put_be64(k + 8, seq);
}

int gw_led_events_open(struct gw_led_events **out, const char *data_dir, struct gw_error *err)
{
    *out = NULL;
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/events", data_dir);
    if (n < 0 || (size_t)n >= sizeof path) return gw_error_set(err, GW_EINVAL, "data dir too long: %s", data_dir);
    struct gw_led_events *s = calloc(1, sizeof *s);
    if (!s) return gw_error_set(err, GW_ENOMEM, "out of memory");
    if (pthread_rwlock_init(&s->lock, NULL) != 0) {
        free(s);
        return gw_error_set(err, GW_ENOMEM, "cannot create the event store lock");
    }
    int rc = gw_kv_open(&s->kv, path, lev_tables, 2, LEV_MAP_BYTES, LEV_MAP_MAX, err);
    if (rc != GW_OK) {
        pthread_rwlock_destroy(&s->lock);
        free(s);
        return rc;
    }
    *out = s;
    return GW_OK;
}

void gw_led_events_close(struct gw_led_events *s)
{
    if (!s) return;
    gw_kv_close(s->kv);
    pthread_rwlock_destroy(&s->lock);
    free(s);
}

/* One try of an append: every event under a fresh seq, next_seq moved on. */
static int lev_append_txn(struct gw_led_events *s, const struct gw_led_event *ev, size_t n, uint64_t *first,
                          struct gw_buf *b, struct gw_error *err)
{
    struct gw_kv_txn *t;
    int rc = gw_kv_begin(s->kv, 1, &t, err);
    if (rc != GW_OK) return rc;
    const void *mv;
    size_t ml;
    uint64_t next = 1;
    rc = gw_kv_get(t, LEV_T_META, "next_seq", 8, &mv, &ml, err);
    if (rc == GW_OK && ml != 8) rc = gw_error_set(err, GW_ECORRUPT, "event store: bad next_seq");
    if (rc == GW_OK) next = gw_get_be64(mv);
    if (rc == GW_ENOTFOUND) rc = GW_OK;
    for (size_t i = 0; rc == GW_OK && i < n; i++) {
        struct gw_led_event e = ev[i];
        e.seq = next + i;
        uint8_t k[16];
        lev_key(k, e.t, e.seq);
        gw_buf_reset(b);
        rc = gw_led_event_json(b, &e);
        if (rc == GW_OK) rc = gw_kv_put(t, LEV_T_EVENTS, k, sizeof k, b->data, b->len, err);
        else rc = gw_error_set(err, rc, "event store: cannot encode an event: %s", gw_strerror(rc));
    }
    if (rc == GW_OK) {
        uint8_t nb[8];
        gw_put_be64(nb, next + n);
        rc = gw_kv_put(t, LEV_T_META, "next_seq", 8, nb, 8, err);
    }
    if (rc != GW_OK) {
        gw_kv_abort(t);
        return rc;
    }
    rc = gw_kv_commit(t, err);
    if (rc == GW_OK) *first = next;
    return rc;
}

/* Every event must read back through the strict reader before any is
 * stored (events built in code, not parsed, are checked here). */
static int lev_check_all(const struct gw_led_event *ev, size_t n, struct gw_buf *b, struct gw_error *err)
{
    for (size_t i = 0; i < n; i++) {
        struct gw_led_event e = ev[i], back;
        e.seq = 0;
        gw_buf_reset(b);
        int rc = gw_led_event_json(b, &e);
        if (rc != GW_OK) return gw_error_set(err, rc, "cannot encode event %zu: %s", i + 1, gw_strerror(rc));
        rc = lev_parse_line((const char *)b->data, b->len, i + 1, &back, err);
        if (rc != GW_OK) return rc;
        lev_free_nodes(back.nodes, back.n_nodes);
    }
    return GW_OK;
}

int gw_led_events_append(struct gw_led_events *s, struct gw_led_event *ev, size_t n, struct gw_error *err)
{
    if (n == 0) return GW_OK;
    struct gw_buf b;
    gw_buf_init(&b, LEV_MAX_LINE + 64);
    int rc = lev_check_all(ev, n, &b, err);
    uint64_t first = 0;
    if (rc == GW_OK) {
        pthread_rwlock_wrlock(&s->lock);
        /* GW_EFULL: no transaction is open (readers hold the lock shared). */
        while ((rc = lev_append_txn(s, ev, n, &first, &b, err)) == GW_EFULL)
            if (gw_kv_grow(s->kv, err) != GW_OK) break;
        pthread_rwlock_unlock(&s->lock);
    }
    gw_buf_free(&b);
    if (rc == GW_OK)
        for (size_t i = 0; i < n; i++) ev[i].seq = first + i;
    return rc;
}

struct lev_load {
    int64_t maxt;
    size_t limit;
    struct lev_vec a;
    struct gw_error *err;
};

static int lev_load_one(void *ud, const void *k, size_t kl, const void *v, size_t vl)
{
    struct lev_load *l = ud;
    if (kl != 16) return gw_error_set(l->err, GW_ECORRUPT, "event store: bad key");
    int64_t t = (int64_t)(gw_get_be64(k) ^ LEV_BIAS);
    uint64_t seq = gw_get_be64((const uint8_t *)k + 8);
    if (t > l->maxt) return 1;
    struct gw_led_event *e = lev_vec_next(&l->a);
    if (!e) return gw_error_set(l->err, GW_ENOMEM, "out of memory");
    struct gw_error pe = {0};
    if (lev_parse_line(v, vl, 1, e, &pe) != GW_OK)
        return gw_error_set(l->err, GW_ECORRUPT, "event store: event %llu is corrupt: %s", (unsigned long long)seq,
                            pe.msg);
    if (e->t != t || e->seq != seq) {
        lev_free_nodes(e->nodes, e->n_nodes);
        return gw_error_set(l->err, GW_ECORRUPT, "event store: event %llu does not match its key",
                            (unsigned long long)seq);
    }
    l->a.n++;
    return l->limit && l->a.n == l->limit ? 1 : 0;
}

int gw_led_events_load(struct gw_led_events *s, int64_t mint, int64_t maxt, size_t limit, struct gw_led_event **out,
                       size_t *n, struct gw_error *err)
{
    *out = NULL;
    *n = 0;
    if (mint > maxt) return GW_OK;
    struct lev_load l = {.maxt = maxt, .limit = limit, .err = err};
    uint8_t from[16];
    lev_key(from, mint, 0);
    pthread_rwlock_rdlock(&s->lock);
    struct gw_kv_txn *t;
    int rc = gw_kv_begin(s->kv, 0, &t, err);
    if (rc == GW_OK) {
        rc = gw_kv_scan(t, LEV_T_EVENTS, from, sizeof from, lev_load_one, &l, err);
        if (rc == 1) rc = GW_OK;
        gw_kv_abort(t);
    }
    pthread_rwlock_unlock(&s->lock);
    if (rc != GW_OK) {
        gw_led_events_free(l.a.v, l.a.n);
        return rc;
    }
    *out = l.a.v;
    *n = l.a.n;
    return GW_OK;
}
