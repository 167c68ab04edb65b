/* src/ledger/names.c - the ledger's names and default configuration
 * (docs/ledger.md lists every threshold and why). */
#include <stddef.h>

#include "gpuwatch/ledger.h"

const char *gw_led_ev_name(enum gw_led_ev_type t)
{
    static const char *const k[GW_LEV_COUNT_] = {
        [GW_LEV_SESSION_START] = "session_start", [GW_LEV_SESSION_END] = "session_end",
        [GW_LEV_SESSION_FAIL] = "session_fail",   [GW_LEV_SESSION_RETRY] = "session_retry",
        [GW_LEV_NODE_EXCLUDED] = "node_excluded", [GW_LEV_NODE_RETURNED] = "node_returned",
    };
    return (int)t > 0 && t < GW_LEV_COUNT_ ? k[t] : "?";
}

const char *gw_led_outcome_name(enum gw_led_outcome o)
{
    switch (o) {
    case GW_LED_COMPLETED: return "completed";
    case GW_LED_FAILED: return "failed";
    case GW_LED_STARTUP_FAILED: return "startup_failed";
    case GW_LED_RUNNING: return "running";
    }
    return "?";
}

const char *gw_led_excl_source_name(enum gw_led_excl_source s)
{
    switch (s) {
    case GW_LEX_FAILURE: return "failure";
    case GW_LEX_REPEAT: return "repeat";
    case GW_LEX_LEMON: return "lemon";
    case GW_LEX_SCHEDULER: return "scheduler";
    }
    return "?";
}

void gw_led_config_default(struct gw_led_config *c)
{
    *c = (struct gw_led_config){
        .gap_ms = 0,                            /* 0: 3 intervals, at least 90 s */
        .start_tol_ms = 5 * 60000,
        .min_nodes = 2,
        .fail_window_ms = 30 * 60000,
        .retry_window_ms = 30 * 60000,
        .merge_ms = 30 * 60000,
        .half_life_ms = 14 * 86400000LL,
        .repeat_window_ms = 30 * 86400000LL,
        .probation_ms = 24 * 3600000LL,
        .lemon_score = 2.0,
        .top_k = 3,
    };
}
