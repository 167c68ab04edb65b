/* cli_sim.h - the simulated cluster's options that `gpuwatch simulate` and
 * `gpuwatch evaluate` share: one option table (included in both commands'
 * tables with GW_CLI_TABLE) and one way to apply it to a gw_sim_config. */
#ifndef GW_CLI_SIM_H
#define GW_CLI_SIM_H

#include <stdint.h>

#include "gpuwatch/sim.h"
#include "cli_parse.h"

/* The shared options; have_* count how often each was given. */
struct gw_cli_cluster {
    uint64_t nodes;
    double days, bait_scale;
    int64_t interval_ms;
    enum gw_sim_label_style style;
    enum gw_sim_gpu_model model;
    int shapes_random, bottleneck;
    int have_nodes, have_days, have_interval, have_style, have_model, have_baits, have_shapes, have_bottleneck;
};

/* --nodes --days --interval --label-style --gpu-model --bait-scale
 * --failure-shapes --checkpoint-bottleneck, into a struct gw_cli_cluster. */
extern const struct gw_cli_opt gw_cli_cluster_opts[];

/* The options given into cfg (after gw_sim_config_profile): nodes,
 * duration, interval (jitter kept below half of it), label style, GPU
 * model, bait scale, failure shapes, checkpoint bottleneck. */
void gw_cli_cluster_apply(const struct gw_cli_cluster *c, struct gw_sim_config *cfg);

#endif /* GW_CLI_SIM_H */
