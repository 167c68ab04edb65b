/* rwload.h - what the files of gw_rwload share: the series generator
 * (gen.c), the protobuf reader and small utilities (util.c), the blocking
 * HTTP/1.1 client (http.c). The commands live in send.c (send), verify.c
 * (verify), text.c (send-text) and main.c (flags, info, body, snappy,
 * unsnappy); what each does: top of main.c. */
#ifndef GW_RWLOAD_H
#define GW_RWLOAD_H

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "gpuwatch/buf.h"
#include "gpuwatch/codec.h"
#include "gpuwatch/rw.h"

#define MAX_SNAPPY_OUT ((size_t)1 << 30)
#define LAG_STEPS 2
#define TIME_BASE_MS 1600000000000LL

struct pb { const uint8_t *p, *end; };

enum model {
    M_CONST, M_ZERO, M_TEMP, M_G3, M_INTG, M_RATIO, M_COUNTER, M_CFLOAT,
    M_RARE, M_XID, M_BITS, M_TIME, M_LOAD
};

enum { JOB_DCGM = 0, JOB_NODE = 1 };

enum { HOST_LOWER, HOST_UPPER, HOST_MIXED };

struct series {
    uint32_t node;
    uint8_t job;
    uint8_t model;
    double p1, p2;
    uint64_t h;                 /* per-series hash */
    uint32_t lbl_off, lbl_len;  /* protobuf-encoded Label fields (sorted) */
};

struct gen {
    uint64_t seed;
    int nodes, gpus, host_mode;
    int dcgm_only;              /* --jobs dcgm */
    int64_t interval_ms, duration_ms, start_ms, n_steps;
    struct series *s;
    size_t n, cap;
    struct gw_buf lbl;          /* all label bytes */
    size_t *node_first;         /* node_first[node*2+job] .. first series index */
    size_t *node_end;
    /* hash table label bytes -> series index (verify) */
    uint32_t *ht;
    size_t ht_cap;
};

struct gen_opts {
    int nodes, gpus, host_mode;
    int dcgm_only;              /* --jobs dcgm: only the dcgm-exporter series */
    int64_t interval_ms, duration_ms, start_ms;
    int start_set;
    uint64_t seed;
    unsigned set;               /* OPT_* bits of flags given explicitly */
};

enum { OPT_NODES = 1, OPT_GPUS = 2, OPT_INTERVAL = 4, OPT_DURATION = 8, OPT_SEED = 16, OPT_HOST = 32 };

struct url { char host[256]; char port[16]; char path[1024]; };

struct http {
    struct url url;
    int fd;
    int timeout_ms;
    struct gw_buf in;           /* bytes read but not consumed */
    size_t in_pos;
    char err[512];
};

struct http_resp {
    int status;
    char ctype[256];
    char cenc[64];
    struct gw_buf body;
};

/* util.c */
void bput(struct gw_buf *b, const void *p, size_t n);
void bputc(struct gw_buf *b, uint8_t c);
void bvarint(struct gw_buf *b, uint64_t v);
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void errtext(int e, char *buf, size_t cap);
uint64_t fnv1a(const uint8_t *p, size_t n);
uint64_t mix64(uint64_t x);
double now_s(void);
int64_t parse_dur(const char *s, const char *what);
int64_t parse_i64(const char *s, const char *what);
int pb_next(struct pb *r, uint32_t *field, uint32_t *wt, uint64_t *v, struct pb *sub);
void read_file(const char *path, struct gw_buf *out);
void sleep_ms(int64_t ms);
double unit01(uint64_t h);
size_t varint_len(uint64_t v);
void write_file(const char *path, const uint8_t *p, size_t n);

/* gen.c */
void encode_label(struct gw_buf *b, const char *n, size_t nl, const char *v, size_t vl);
void gen_free(struct gen *g);
void gen_host(const struct gen *g, int node, char *out, size_t cap);
void gen_index(struct gen *g);
void gen_init(struct gen *g, const struct gen_opts *o);
int64_t gen_lookup(const struct gen *g, const uint8_t *p, size_t n);
double gen_value(const struct gen *g, const struct series *s, int64_t t);
const char *host_mode_name(int m);
void opts_from_ack_log(struct gen_opts *o, const char *path);
int64_t step_of(const struct gen *g, uint32_t node, int job, int64_t t);
int64_t ts_of(const struct gen *g, uint32_t node, int job, int64_t j);

/* http.c */
int http_do(struct http *c, const char *method, const char *extra_hdrs, const uint8_t *body, size_t len, struct http_resp *r);
void http_free(struct http *c);
void http_init(struct http *c, const char *url, int timeout_ms);

/* send.c */
struct send_opts {
    const char *url, *ack_log;
    int conns;
    size_t batch;
    int realtime;
    double max_rate;
    int64_t retry_for_ms;
    int timeout_ms;
    int quiet;
};
int cmd_send(struct gen *g, const struct gen_opts *o, const struct send_opts *so);

/* verify.c */
int cmd_verify(struct gen *g, const struct gen_opts *o, const char *read_url, const char *ack_log, int streamed, int timeout_ms);

/* text.c */
int cmd_send_text(const char *url, const char *path, size_t batch, int64_t retry_for_ms, int timeout_ms);

#endif /* GW_RWLOAD_H */
