/* ledger_int.h - the pieces of gw_led_build (build.c), one file per step:
 *   runs.c      per-node runs of activity (allocated or computing)
 *   sessions.c  runs starting together -> sessions; scheduler events
 *   failures.c  hardware-class alerts -> failures; escalation of repeats
 *   chains.c    outcomes, retry chains, recovery times
 *   nodes.c     the node ledger, exclusions, fleet statistics
 * Every step reads the context and fills its part of ctx->r. */
#ifndef GW_LEDGER_INT_H
#define GW_LEDGER_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include "gpuwatch/ledger.h"

/* One node's uninterrupted stretch of activity (level >= 1). */
struct led_run {
    uint32_t node;
    int64_t start, end;          /* first active sample; last active sample + one interval */
    int64_t first_compute;       /* first computing sample, GW_LED_NO_TIME none */
    int64_t last_compute;        /* last computing sample + one interval, GW_LED_NO_TIME none */
    int32_t session;             /* -1 none */
};

struct led_ctx {
    const struct gw_led_input *in;
    struct gw_led_config c;
    struct gw_led_result *r;
    int64_t iv;                  /* activity interval */
    int64_t gap;                 /* bridged gap */
    uint32_t gpus;               /* GPUs per node */
    struct led_run *runs;        /* by (start, node) */
    size_t n_runs;
    double *node_hours;          /* per node: hours with activity data */
    int64_t data_end;            /* newest activity sample + iv */
    uint32_t *by_name;           /* node indices sorted by name (led_node_index) */
    size_t cap_sessions;
};

int led_runs(struct led_ctx *x, struct gw_error *err);
int led_sessions(struct led_ctx *x, struct gw_error *err);
int led_sessions_from_events(struct led_ctx *x, struct gw_error *err);
int led_failures(struct led_ctx *x, struct gw_error *err);
int led_outcomes(struct led_ctx *x, struct gw_error *err);
int led_chains(struct led_ctx *x, struct gw_error *err);
int led_nodes(struct led_ctx *x, struct gw_error *err);
void led_stats(struct led_ctx *x);

/* qsort that accepts an empty (NULL) array: qsort's base must not be NULL. */
static inline void led_qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    if (n > 1) qsort(base, n, size, cmp);
}

/* helpers (build.c) */
int led_node_index(const struct led_ctx *x, const char *name);   /* -1 unknown (binary search) */
int led_is_member(const struct gw_led_session *s, uint32_t node);
double led_quantile(double *v, size_t n, double q);   /* sorts v; NAN when n == 0 */
int led_cmp_i64(const void *a, const void *b);
struct gw_led_session *led_session_add(struct led_ctx *x, struct gw_error *err);

#endif /* GW_LEDGER_INT_H */
