/* cli_sim.c - the simulated cluster's options shared by simulate and
 * evaluate (cli_sim.h). */
#include "cli_sim.h"

#include <math.h>
#include <stddef.h>

static int set_label_style(void *p, const char *v)
{
    return gw_sim_label_style_parse(v, p) == 0 ? 0 : -1;
}

static int set_gpu_model(void *p, const char *v)
{
    return gw_sim_gpu_model_parse(v, p) == 0 ? 0 : -1;
}

static int set_bottleneck(void *p, const char *v)
{
    return gw_sim_bottleneck_parse(v, p) == 0 ? 0 : -1;
}

static const char *const shape_names[] = {"fixed", "random", NULL};

const struct gw_cli_opt gw_cli_cluster_opts[] = {
    {.name = "--nodes", .arg = "N", .type = GW_CLI_UINT, GW_CLI_AT(struct gw_cli_cluster, nodes),
     GW_CLI_SEEN(struct gw_cli_cluster, have_nodes), .min = 1, .max = GW_SIM_MAX_NODES,
     .help = "nodes, spares included (1..1024)"},
    {.name = "--days", .arg = "D", .type = GW_CLI_DOUBLE, GW_CLI_AT(struct gw_cli_cluster, days),
     GW_CLI_SEEN(struct gw_cli_cluster, have_days), .dmin = 0, .dmax = 400, .flags = GW_CLI_ABOVE_MIN,
     .expect = "a number of days > 0 and <= 400, e.g. 1 or 0.25",
     .help = "simulated days (fractions allowed, e.g. 0.25)"},
    {.name = "--interval", .arg = "DUR", .type = GW_CLI_DUR, GW_CLI_AT(struct gw_cli_cluster, interval_ms),
     GW_CLI_SEEN(struct gw_cli_cluster, have_interval), .min = 1000, .max = 3600000,
     .expect = "a duration from 1s to 1h, e.g. 30s or 15s", .help = "scrape interval (default 30s; 15s option)"},
    {.name = "--label-style", .arg = "S", .type = GW_CLI_CALL, GW_CLI_AT(struct gw_cli_cluster, style),
     GW_CLI_SEEN(struct gw_cli_cluster, have_style), .set = set_label_style,
     .expect = "hostname, Hostname, kube, fqdn or ip",
     .help = "how series name their node: hostname (default), Hostname,\n"
             "kube (GPU operator: Hostname = exporter pod, node label, pod\n"
             "and host IPs), fqdn, ip"},
    {.name = "--gpu-model", .arg = "M", .type = GW_CLI_CALL, GW_CLI_AT(struct gw_cli_cluster, model),
     GW_CLI_SEEN(struct gw_cli_cluster, have_model), .set = set_gpu_model, .expect = "a100, h100 or b200",
     .help = "b200 (default), h100 or a100: power, clocks, memory, modelName"},
    {.name = "--bait-scale", .arg = "X", .type = GW_CLI_DOUBLE, GW_CLI_AT(struct gw_cli_cluster, bait_scale),
     GW_CLI_SEEN(struct gw_cli_cluster, have_baits), .dmin = 0, .dmax = 100,
     .expect = "a factor from 0 to 100", .help = "multiply every bait hazard by X (0..100, default 1)"},
    {.name = "--failure-shapes", .arg = "S", .type = GW_CLI_CHOICE, GW_CLI_AT(struct gw_cli_cluster, shapes_random),
     GW_CLI_SEEN(struct gw_cli_cluster, have_shapes), .choices = shape_names,
     .help = "fixed (default) or random: failure signatures drawn per\n"
             "failure within the documented ranges"},
    {.name = "--checkpoint-bottleneck", .arg = "K", .type = GW_CLI_CALL,
     GW_CLI_AT(struct gw_cli_cluster, bottleneck), GW_CLI_SEEN(struct gw_cli_cluster, have_bottleneck),
     .set = set_bottleneck, .expect = "slots, server, link, none or mixed",
     .help = "\nwhat limits checkpoint I/O: slots (default: the client's RPC\n"
             "slot table, as in the paper), server (slow NFS server), link\n"
             "(storage NICs at line rate), none (healthy), or mixed: drawn\n"
             "per checkpoint (slots 40%, none 25%, server 25%, link 10%).\n"
             "Sessions under 8 nodes never saturate slots or server: their\n"
             "checkpoints are none. The truth names each checkpoint's kind"},
    {0},
};

void gw_cli_cluster_apply(const struct gw_cli_cluster *c, struct gw_sim_config *cfg)
{
    if (c->have_nodes)
        gw_sim_config_set_nodes(cfg, (uint32_t)c->nodes);
    if (c->have_days)
        cfg->duration_ms = (int64_t)llround(c->days * 86400000.0);
    if (c->have_interval)
        cfg->interval_ms = c->interval_ms;
    if (cfg->jitter_ms * 2 >= cfg->interval_ms)
        cfg->jitter_ms = cfg->interval_ms / 2 - 1;
    if (c->have_style)
        cfg->label_style = c->style;
    if (c->have_model)
        cfg->gpu_model = c->model;
    if (c->have_baits)
        cfg->bait_scale = c->bait_scale;
    if (c->have_shapes)
        cfg->shape_jitter = c->shapes_random;
    if (c->have_bottleneck)
        cfg->ckpt_bottleneck = c->bottleneck;
}
