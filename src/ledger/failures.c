/* src/ledger/failures.c - failures from the alert log, and the escalation
 * of repeats.
 *
 * A hardware-class alert is a fired alert on a node (hostname set) whose
 * class is not "app", "checkpoint_io" or "telemetry" (application XIDs,
 * checkpoint I/O and exporter outages are not the node's hardware). The
 * hardware-class alerts of one node whose activeAt lie within merge_ms of
 * the previous one are one incident; an incident with at least one
 * critical alert is a failure (warnings alone are signs, not failures).
 * Its defining alert is its first hardware XID alert, else its first
 * critical alert; class, GPU, XID and action come from it.
 *
 * Escalation (reference 1.3: a recurring XID 79 on one node means
 * replacement): a failure repeating an earlier failure of the same node
 * within repeat_window - the same XID, or the same class, on the same GPU -
 * escalates to replace_gpu; a node's third failure within repeat_window
 * (any kind) escalates to drain_node for diagnosis. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuwatch/json.h"
#include "ledger/ledger_int.h"

static int hw_class(const struct gw_alert *a)
{
    return a->hostname[0] && a->fired_at != INT64_MIN && a->severity >= GW_SEV_WARNING &&
           strcmp(a->cls, "app") != 0 && strcmp(a->cls, "checkpoint_io") != 0 && strcmp(a->cls, "telemetry") != 0;
}

static uint32_t xid_of(const struct gw_alert *a)
{
    if (strcmp(a->extra_name, "xid") != 0) return 0;
    return (uint32_t)strtoul(a->extra_value, NULL, 10);
}

struct ref {
    const struct gw_alert *a;
    int32_t node;
};

static int cmp_ref(const void *p, const void *q)
{
    const struct ref *x = p, *y = q;
    if (x->node != y->node) return x->node < y->node ? -1 : 1;
    if (x->a->active_at != y->a->active_at) return x->a->active_at < y->a->active_at ? -1 : 1;
    return (x->a->id > y->a->id) - (x->a->id < y->a->id);
}

static int cmp_failure(const void *p, const void *q)
{
    const struct gw_led_failure *x = p, *y = q;
    if (x->t_first != y->t_first) return x->t_first < y->t_first ? -1 : 1;
    return (x->node > y->node) - (x->node < y->node);
}

/* The failure of the incident refs[0..n), or 0 when it has no critical alert. */
static int make_failure(const struct ref *refs, size_t n, struct gw_led_failure *f)
{
    const struct gw_alert *def = NULL, *crit = NULL;
    memset(f, 0, sizeof *f);
    f->t_first = refs[0].a->active_at;
    f->t_detect = f->t_xid = f->t_session_end = f->t_next_steady = GW_LED_NO_TIME;
    f->session = -1;
    for (size_t i = 0; i < n; i++) {
        const struct gw_alert *a = refs[i].a;
        if (a->severity == GW_SEV_CRITICAL) {
            if (!crit) crit = a;
            if (f->t_detect == GW_LED_NO_TIME || a->fired_at < f->t_detect) f->t_detect = a->fired_at;
        }
        if (xid_of(a)) {
            if (!def) def = a;
            if (f->t_xid == GW_LED_NO_TIME || a->active_at < f->t_xid) f->t_xid = a->active_at;
        }
        if (f->n_alert_ids < 8) f->alert_ids[f->n_alert_ids++] = a->id;
    }
    if (!crit) return 0;
    if (!def) def = crit;
    f->node = (uint32_t)refs[0].node;
    f->gpu = def->gpu;
    f->xid = xid_of(def);
    snprintf(f->cls, sizeof f->cls, "%s", def->cls);
    snprintf(f->alertname, sizeof f->alertname, "%s", def->alertname);
    snprintf(f->detector, sizeof f->detector, "%s", def->detector);
    snprintf(f->action, sizeof f->action, "%s", def->action[0] ? def->action : "none");
    snprintf(f->evidence, sizeof f->evidence, "%s", def->evidence[0] ? def->evidence : def->summary);
    return 1;
}

static void escalate(struct gw_led_result *r, struct gw_led_failure *f, const struct gw_led_config *c)
{
    uint32_t same = 1, on_node = 1;
    const struct gw_led_failure *first = NULL;
    for (size_t i = 0; i < r->n_failures; i++) {
        const struct gw_led_failure *p = &r->failures[i];
        if (p == f) break;
        if (p->node != f->node || f->t_first - p->t_first > c->repeat_window_ms) continue;
        on_node++;
        int same_gpu = p->gpu >= 0 && p->gpu == f->gpu;
        if (same_gpu && ((f->xid && p->xid == f->xid) || strcmp(p->cls, f->cls) == 0)) {
            same++;
            if (!first) first = p;
        }
    }
    f->repeat = same;
    char when[40];
    if (first) {
        gw_format_rfc3339_s(first->t_first, when, sizeof when);
        snprintf(f->action, sizeof f->action, "replace_gpu");
        if (f->xid)
            snprintf(f->escalation, sizeof f->escalation,
                     "XID %u again on GPU %d (first %s, %u in %lld d): replace the GPU rather than %s", f->xid, f->gpu,
                     when, same, (long long)(c->repeat_window_ms / 86400000), first->action);
        else
            snprintf(f->escalation, sizeof f->escalation,
                     "%s failure again on GPU %d (first %s, %u in %lld d): replace the GPU", f->cls, f->gpu, when,
                     same, (long long)(c->repeat_window_ms / 86400000));
    } else if (on_node >= 3) {
        snprintf(f->action, sizeof f->action, "drain_node");
        snprintf(f->escalation, sizeof f->escalation,
                 "hardware failure %u of this node in %lld d: drain it for diagnosis", on_node,
                 (long long)(c->repeat_window_ms / 86400000));
    }
}

int led_failures(struct led_ctx *x, struct gw_error *err)
{
    const struct gw_led_input *in = x->in;
    struct gw_led_result *r = x->r;
    struct ref *refs = malloc((in->n_alerts ? in->n_alerts : 1) * sizeof *refs);
    if (!refs) return gw_error_set(err, GW_ENOMEM, "out of memory (alerts)");
    size_t n = 0;
    for (size_t i = 0; i < in->n_alerts; i++) {
        const struct gw_alert *a = &in->alerts[i];
        if (!hw_class(a)) continue;
        int ni = led_node_index(x, a->hostname);
        if (ni < 0) continue;
        refs[n++] = (struct ref){a, ni};
    }
    led_qsort(refs, n, sizeof *refs, cmp_ref);
    size_t cap = 0;
    int rc = GW_OK;
    for (size_t i = 0; i < n && rc == GW_OK;) {
        size_t j = i + 1;
        while (j < n && refs[j].node == refs[i].node &&
               refs[j].a->active_at - refs[j - 1].a->active_at <= x->c.merge_ms)
            j++;
        struct gw_led_failure f;
        if (make_failure(refs + i, j - i, &f)) {
            if (r->n_failures == cap) {
                size_t nc = cap ? cap * 2 : 32;
                struct gw_led_failure *p = realloc(r->failures, nc * sizeof *p);
                if (!p) rc = gw_error_set(err, GW_ENOMEM, "out of memory (failures)");
                else {
                    r->failures = p;
                    cap = nc;
                }
            }
            if (rc == GW_OK) r->failures[r->n_failures++] = f;
        }
        i = j;
    }
    free(refs);
    if (rc != GW_OK) return rc;
    led_qsort(r->failures, r->n_failures, sizeof *r->failures, cmp_failure);
    for (size_t i = 0; i < r->n_failures; i++) {
        r->failures[i].id = (uint32_t)i;
        escalate(r, &r->failures[i], &x->c);
    }
    return GW_OK;
}
