/* config.c - the simulator's configuration: defaults, the "smoke" and
 * "paper" profiles, and range checks that name the offending field.
 *
 * Defaults are the paper profile (63 nodes incl. 3 spares x 8 GPUs, 55
 * days, 30 s scrapes with +-1 s jitter, 0.1% missed scrapes, hostnames
 * gpuNNN drawn from gpu001..gpu130, 8 compute + 2 storage NICs, 8 NFS
 * transports, checkpoint saves every 150 min, failure scale 1), starting at
 * now - duration aligned down to the scrape interval. */
#include <stdio.h>
#include <string.h>

#include "gpuwatch/codec.h"
#include "gpuwatch/sim.h"
#include "sim/timeline_int.h"

/* Upper bounds that keep every derived quantity (event counts, per-node
 * indexes, hostnames) small and every time sum far from overflow. */
#define GW_SIM_MAX_DURATION_MS (400LL * GW_SIM_DAY_MS)
#define GW_SIM_MAX_INTERVAL_MS GW_SIM_HOUR_MS
#define GW_SIM_MAX_HOST_NUM 999999u
#define GW_SIM_MAX_HOST_SPAN 100000u
#define GW_SIM_MAX_SCALE 100.0
/* nodes x days x failure_scale: bounds the number of sessions and failures
 * (the paper profile is 3,465; 100x it is still allowed). */
#define GW_SIM_MAX_SCALED_NODE_DAYS 1.5e6
/* An end this close to now marks a start that was computed as "now -
 * duration" (see gw_sim_config_profile). */
#define GW_SIM_NOW_SLACK_MS GW_SIM_HOUR_MS

static int64_t align_down(int64_t t, int64_t step)
{
    int64_t r = t % step;
    if (r < 0) r += step;
    return t - r;
}

void gw_sim_config_default(struct gw_sim_config *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->profile, sizeof c->profile, "%s", "paper");
    c->seed = 1;
    c->nodes = 63;
    c->spare_nodes = 3;
    c->gpus = 8;
    c->host_base = 1;
    c->host_span = 130;
    c->duration_ms = 55 * GW_SIM_DAY_MS;
    c->interval_ms = 30000;
    c->jitter_ms = 1000;
    c->scrape_miss_prob = 0.001;
    c->legacy_hostname = 0;
    c->compute_nics = 8;
    c->storage_nics = 2;
    c->nfs_transports = 8;
    c->ckpt_interval_ms = 150 * GW_SIM_MIN_MS;
    c->failure_scale = 1.0;
    c->label_style = GW_SIM_LABELS_HOSTNAME;
    c->gpu_model = GW_SIM_GPU_B200;
    c->bait_scale = 1.0;
    c->shape_jitter = 0;
    c->ckpt_bottleneck = GW_SIM_BN_SLOTS;
    c->start_ms = align_down(gw_now_ms() - c->duration_ms, c->interval_ms);
}

int gw_sim_config_profile(struct gw_sim_config *c, const char *name, struct gw_error *err)
{
    if (!name) return gw_error_set(err, GW_EINVAL, "profile: missing name");
    uint32_t nodes, spares;
    int64_t duration;
    if (strcmp(name, "smoke") == 0) {
        nodes = 4; spares = 1; duration = GW_SIM_DAY_MS;
    } else if (strcmp(name, "paper") == 0) {
        nodes = 63; spares = 3; duration = 55 * GW_SIM_DAY_MS;
    } else {
        return gw_error_set(err, GW_EINVAL, "profile: unknown profile '%.32s' (smoke, paper)", name);
    }
    /* A start that was "now - duration" stays anchored at now: the new
     * duration ends where the old one did. Any other start is kept. */
    int64_t interval = c->interval_ms > 0 ? c->interval_ms : 30000;
    int64_t now = gw_now_ms();
    if (c->duration_ms > 0 && c->duration_ms <= GW_SIM_MAX_DURATION_MS &&
        c->start_ms > now - GW_SIM_MAX_DURATION_MS - GW_SIM_NOW_SLACK_MS &&
        c->start_ms < now) {
        int64_t end = c->start_ms + c->duration_ms;
        if (end > now - GW_SIM_NOW_SLACK_MS && end <= now + GW_SIM_NOW_SLACK_MS)
            c->start_ms = align_down(end - duration, interval);
    }
    snprintf(c->profile, sizeof c->profile, "%s", name);
    c->nodes = nodes;
    c->spare_nodes = spares;
    c->gpus = 8;
    c->duration_ms = duration;
    return GW_OK;
}

int gw_sim_config_check(const struct gw_sim_config *c, struct gw_error *err)
{
    if (!c) return gw_error_set(err, GW_EINVAL, "config: missing");
    if (c->nodes < 1 || c->nodes > GW_SIM_MAX_NODES)
        return gw_error_set(err, GW_EINVAL, "nodes: %u outside 1..%d", c->nodes, GW_SIM_MAX_NODES);
    if (c->spare_nodes >= c->nodes)
        return gw_error_set(err, GW_EINVAL, "spare_nodes: %u must be below nodes (%u)",
                            c->spare_nodes, c->nodes);
    if (c->gpus < 1 || c->gpus > GW_SIM_MAX_GPUS)
        return gw_error_set(err, GW_EINVAL, "gpus: %u outside 1..%d", c->gpus, GW_SIM_MAX_GPUS);
    if (c->host_span < c->nodes || c->host_span > GW_SIM_MAX_HOST_SPAN)
        return gw_error_set(err, GW_EINVAL, "host_span: %u must be in nodes (%u)..%u",
                            c->host_span, c->nodes, GW_SIM_MAX_HOST_SPAN);
    if (c->host_base > GW_SIM_MAX_HOST_NUM + 1 - c->host_span)
        return gw_error_set(err, GW_EINVAL, "host_base: %u + host_span %u exceeds gpu%u",
                            c->host_base, c->host_span, GW_SIM_MAX_HOST_NUM);
    if (c->interval_ms < 1000 || c->interval_ms > GW_SIM_MAX_INTERVAL_MS)
        return gw_error_set(err, GW_EINVAL, "interval_ms: %lld outside 1000..%lld",
                            (long long)c->interval_ms, (long long)GW_SIM_MAX_INTERVAL_MS);
    if (c->duration_ms <= 0 || c->duration_ms > GW_SIM_MAX_DURATION_MS)
        return gw_error_set(err, GW_EINVAL, "duration_ms: %lld outside 1..%lld",
                            (long long)c->duration_ms, (long long)GW_SIM_MAX_DURATION_MS);
    if (c->duration_ms < c->interval_ms)
        return gw_error_set(err, GW_EINVAL, "duration_ms: %lld shorter than one interval",
                            (long long)c->duration_ms);
    /* Leave a year of headroom past the end for recoveries and ramps. */
    if (c->start_ms < 0 || c->start_ms > INT64_MAX / 2)
        return gw_error_set(err, GW_EINVAL, "start_ms: %lld out of range", (long long)c->start_ms);
    if (c->jitter_ms < 0 || c->jitter_ms * 2 >= c->interval_ms)
        return gw_error_set(err, GW_EINVAL, "jitter_ms: %lld must be in 0..interval/2",
                            (long long)c->jitter_ms);
    if (!(c->scrape_miss_prob >= 0.0 && c->scrape_miss_prob < 1.0))
        return gw_error_set(err, GW_EINVAL, "scrape_miss_prob: %g outside [0, 1)", c->scrape_miss_prob);
    if (c->compute_nics < 1 || c->compute_nics > 64)
        return gw_error_set(err, GW_EINVAL, "compute_nics: %u outside 1..64", c->compute_nics);
    if (c->storage_nics > 16)
        return gw_error_set(err, GW_EINVAL, "storage_nics: %u outside 0..16", c->storage_nics);
    if (c->nfs_transports < 1 || c->nfs_transports > 256)
        return gw_error_set(err, GW_EINVAL, "nfs_transports: %u outside 1..256", c->nfs_transports);
    if (c->ckpt_interval_ms < 10 * GW_SIM_MIN_MS || c->ckpt_interval_ms > 7 * GW_SIM_DAY_MS)
        return gw_error_set(err, GW_EINVAL, "ckpt_interval_ms: %lld outside 10 min..7 days",
                            (long long)c->ckpt_interval_ms);
    if (!(c->failure_scale >= 0.0 && c->failure_scale <= GW_SIM_MAX_SCALE))
        return gw_error_set(err, GW_EINVAL, "failure_scale: %g outside 0..%g", c->failure_scale,
                            GW_SIM_MAX_SCALE);
    double scaled = (double)c->nodes * ((double)c->duration_ms / GW_SIM_DAY_MS) * c->failure_scale;
    if (scaled > GW_SIM_MAX_SCALED_NODE_DAYS)
        return gw_error_set(err, GW_EINVAL,
                            "failure_scale: %g too high for %u nodes x %.0f days (nodes x days x scale <= %.0f)",
                            c->failure_scale, c->nodes, (double)c->duration_ms / GW_SIM_DAY_MS,
                            GW_SIM_MAX_SCALED_NODE_DAYS);
    if ((unsigned)c->label_style >= GW_SIM_LABELS_COUNT_)
        return gw_error_set(err, GW_EINVAL, "label_style: %d unknown (hostname, Hostname, kube, fqdn, ip)",
                            (int)c->label_style);
    if ((unsigned)c->gpu_model >= GW_SIM_GPU_COUNT_)
        return gw_error_set(err, GW_EINVAL, "gpu_model: %d unknown (a100, h100, b200)", (int)c->gpu_model);
    if (!(c->bait_scale >= 0.0 && c->bait_scale <= GW_SIM_MAX_SCALE))
        return gw_error_set(err, GW_EINVAL, "bait_scale: %g outside 0..%g", c->bait_scale, GW_SIM_MAX_SCALE);
    if (c->ckpt_bottleneck != GW_SIM_BN_MIXED &&
        (c->ckpt_bottleneck < 0 || c->ckpt_bottleneck >= GW_SIM_BN_COUNT_))
        return gw_error_set(err, GW_EINVAL, "ckpt_bottleneck: %d is not a bottleneck kind", c->ckpt_bottleneck);
    if (c->shape_jitter != 0 && c->shape_jitter != 1)
        return gw_error_set(err, GW_EINVAL, "shape_jitter: %d must be 0 (fixed) or 1 (random)", c->shape_jitter);
    if (c->profile[0] == 0 || memchr(c->profile, 0, sizeof c->profile) == NULL)
        return gw_error_set(err, GW_EINVAL, "profile: empty or unterminated");
    return GW_OK;
}

/* ------------------------------------------------------------ variations */
static const char *const style_names[GW_SIM_LABELS_COUNT_] = {"hostname", "Hostname", "kube", "fqdn", "ip"};

const char *gw_sim_label_style_name(enum gw_sim_label_style s)
{
    return (unsigned)s < GW_SIM_LABELS_COUNT_ ? style_names[s] : "unknown";
}

int gw_sim_label_style_parse(const char *s, enum gw_sim_label_style *out)
{
    for (unsigned i = 0; s && i < GW_SIM_LABELS_COUNT_; i++)
        if (strcmp(s, style_names[i]) == 0) {
            *out = (enum gw_sim_label_style)i;
            return 0;
        }
    return -1;
}

enum gw_sim_label_style gw_sim_config_label_style(const struct gw_sim_config *c)
{
    if (c->label_style == GW_SIM_LABELS_HOSTNAME && c->legacy_hostname)
        return GW_SIM_LABELS_LEGACY;
    return c->label_style;
}

static const char *const model_names[GW_SIM_GPU_COUNT_] = {"b200", "a100", "h100"};

const char *gw_sim_gpu_model_name(enum gw_sim_gpu_model m)
{
    return (unsigned)m < GW_SIM_GPU_COUNT_ ? model_names[m] : "unknown";
}

int gw_sim_gpu_model_parse(const char *s, enum gw_sim_gpu_model *out)
{
    for (unsigned i = 0; s && i < GW_SIM_GPU_COUNT_; i++)
        if (strcmp(s, model_names[i]) == 0) {
            *out = (enum gw_sim_gpu_model)i;
            return 0;
        }
    return -1;
}

/* Published figures: A100 SXM4 80GB (400 W TDP, 1410 MHz boost, 1593 MHz
 * HBM2e), H100 SXM5 80GB HBM3 (700 W, 1980 MHz, 2619 MHz HBM3), B200
 * (1000 W, the simulator's original values). Busy power is the steady
 * training range, idle what an idle GPU in a busy node draws. */
static const struct gw_sim_gpu_spec gpu_specs[GW_SIM_GPU_COUNT_] = {
    [GW_SIM_GPU_B200] = {"NVIDIA B200", 1000.0, 142.0, 715.0, 985.0, 1965.0, 345.0, 3996.0,
                         183359.0, 153600.0, 179200.0},
    [GW_SIM_GPU_A100] = {"NVIDIA A100-SXM4-80GB", 400.0, 55.0, 250.0, 400.0, 1410.0, 210.0, 1593.0,
                         81920.0, 66560.0, 76800.0},
    [GW_SIM_GPU_H100] = {"NVIDIA H100 80GB HBM3", 700.0, 80.0, 450.0, 700.0, 1980.0, 345.0, 2619.0,
                         81559.0, 66560.0, 76800.0},
};

const struct gw_sim_gpu_spec *gw_sim_gpu_spec(enum gw_sim_gpu_model m)
{
    return &gpu_specs[(unsigned)m < GW_SIM_GPU_COUNT_ ? m : GW_SIM_GPU_B200];
}

void gw_sim_config_set_nodes(struct gw_sim_config *c, uint32_t nodes)
{
    c->nodes = nodes;
    uint32_t spares = (uint32_t)((double)nodes * 0.05 + 0.5);
    if (spares < 1 && nodes >= 2)
        spares = 1;
    if (nodes < 2)
        spares = 0;
    c->spare_nodes = spares;
    if (c->host_span < nodes)
        c->host_span = nodes * 2 > GW_SIM_MAX_HOST_SPAN ? nodes : nodes * 2;
}
