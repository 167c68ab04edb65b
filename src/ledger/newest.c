/* src/ledger/newest.c - the newest time in loaded ledger inputs: the "now"
 * of the exclusion list (`gpuwatch exclusions`, /api/v1/exclusions), so
 * that a data dir read days after its data ends still shows the nodes
 * excluded at its end rather than nodes long past their probation. */
#include <stdint.h>

#include "gpuwatch/ledger.h"

static int64_t newer(int64_t best, int64_t t, int64_t to)
{
    return t != INT64_MIN && t <= to && t > best ? t : best;
}

int64_t gw_led_data_newest(const struct gw_led_data *d)
{
    const struct gw_led_input *in = &d->in;
    int64_t best = INT64_MIN;
    for (size_t i = 0; i < in->n_act; i++) best = newer(best, in->act[i].t, in->to);
    for (size_t i = 0; i < in->n_alerts; i++) {
        const struct gw_alert *a = &in->alerts[i];
        best = newer(best, a->active_at, in->to);
        best = newer(best, a->fired_at, in->to);
        best = newer(best, a->last_raised, in->to);
        best = newer(best, a->resolved_at, in->to);
    }
    for (size_t i = 0; i < in->n_events; i++) best = newer(best, in->events[i].t, in->to);
    return best == INT64_MIN ? in->to : best;
}
