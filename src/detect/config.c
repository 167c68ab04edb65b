/* config.c - the detector configuration file.
 *
 * Format: one "key = value" per line; '#' starts a comment; blank lines
 * ignored. Values: numbers ("0.4", "1e15"), durations with a unit
 * ("90s", "5m", "72h", "7d", "500ms"), on/off for d1..d6. Unknown keys and
 * bad values are errors naming the file, line and key. Example:
 *
 *   # fewer, later memory warnings
 *   remap_count = 3
 *   remap_window = 48h
 *   d4 = off
 *
 * gw_det_config_write() prints every key with its current value and its
 * meaning: `gpuwatch serve --print-detector-config` shows the defaults. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpuwatch/codec.h"
#include "gpuwatch/detect.h"

enum kind { K_BOOL, K_DUR, K_DBL, K_U32, K_STR };

struct key {
    const char *name;
    enum kind kind;
    size_t off;
    const char *doc;
    double def;          /* the default (K_STR: sdef) */
    const char *sdef;
};

#define F(f) offsetof(struct gw_det_config, f)
static const struct key k_keys[] = {
    {"d1", K_BOOL, F(enable[1]), "D1 XID onsets", 1, NULL},
    {"d2", K_BOOL, F(enable[2]), "D2 memory degradation", 1, NULL},
    {"d3", K_BOOL, F(enable[3]), "D3 interconnect error rates", 1, NULL},
    {"d4", K_BOOL, F(enable[4]), "D4 multi-signal collapse against peers", 1, NULL},
    {"d5", K_BOOL, F(enable[5]), "D5 telemetry structure (vanished GPU, sentinels, silent node)", 1, NULL},
    {"d6", K_BOOL, F(enable[6]), "D6 throttling and temperature", 1, NULL},
    {"d7", K_BOOL, F(ckpt_enable), "D7 checkpoint I/O: save/load events and their bottleneck", 1, NULL},
    {"d8", K_BOOL, F(act_enable), "D8 node activity (gpuwatch_node_activity): the ledger's sessions and retry chains", 1, NULL},
    {"interval", K_DUR, F(interval_ms), "scrape interval; 0 = learn it from the data", 0, NULL},
    {"grace", K_DUR, F(grace_ms), "unused, kept so older files load (see lateness)", 0, NULL},
    {"lateness", K_DUR, F(lateness_ms), "a bucket waits this long for series that are late to arrive; 0 = 150 s, kept within 2 to 8 intervals", 0, NULL},
    {"node_labels", K_STR, F(node_labels), "labels that name a series' node, first present wins (comma-separated)", 0, "node,kubernetes_node,nodename,hostname,Hostname,host,exported_instance,instance"},
    {"node_regex", K_STR, F(node_regex), "optional regex (anchored) whose first group is the node name in that label's value", 0, NULL},
    {"node_map", K_STR, F(node_map), "optional explicit names: alias=node pairs, comma-separated", 0, NULL},
    {"strip_domain", K_BOOL, F(strip_domain), "drop the domain of host names (gpu071.example.com -> gpu071)", 1, NULL},
    {"sentinel_min", K_DBL, F(sentinel_min), "values at or above this are the exporter's sentinels", 1e15, NULL},
    {"xid_hold", K_DUR, F(xid_hold_ms), "an XID alert stays active this long after its newest onset", 30 * 60000, NULL},
    {"collective_window", K_DUR, F(collective_window_ms), "application XIDs of one code within this window ...", 60000, NULL},
    {"collective_nodes", K_U32, F(collective_nodes), "... on at least this many nodes are one job-level abort", 3, NULL},
    {"repeat_bursts", K_U32, F(repeat_bursts), "application-XID bursts on one GPU within repeat_window: hardware suspect", 5, NULL},
    {"repeat_window", K_DUR, F(repeat_window_ms), "window of repeat_bursts", 24 * 3600000LL, NULL},
    {"burst_gap", K_DUR, F(burst_gap_ms), "onsets of one XID on one GPU closer than this are one burst", 180000, NULL},
    {"remap_count", K_U32, F(remap_count), "correctable remapped rows added within remap_window: warning", 2, NULL},
    {"remap_window", K_DUR, F(remap_window_ms), "window of remap_count", 72 * 3600000LL, NULL},
    {"sbe_count", K_U32, F(sbe_count), "scrapes with new single-bit ECC errors within sbe_window: warning", 3, NULL},
    {"sbe_window", K_DUR, F(sbe_window_ms), "window of sbe_count", 24 * 3600000LL, NULL},
    {"pending_for", K_DUR, F(pending_for_ms), "a pending row remap this long: warning", 60000, NULL},
    {"memory_hold", K_DUR, F(memory_hold_ms), "memory trend alerts stay active this long after the newest sign", 7 * 86400000LL, NULL},
    {"link_hits", K_U32, F(link_hits), "scrapes with new link errors ...", 2, NULL},
    {"link_of", K_U32, F(link_of), "... of the last this many scrapes (1-8): warning", 4, NULL},
    {"link_burst", K_DBL, F(link_burst), "or this many new link errors in one scrape", 1000, NULL},
    {"link_hold", K_DUR, F(link_hold_ms), "link alerts stay active this long after the newest hit", 60 * 60000, NULL},
    {"frozen_util", K_DBL, F(frozen_util), "frozen GPU: utilisation (%) at least this ...", 90, NULL},
    {"frozen_power_ratio", K_DBL, F(frozen_power_ratio), "... and power below this share of the busy GPUs' median ...", 0.4, NULL},
    {"frozen_clock_ratio", K_DBL, F(frozen_clock_ratio), "... and SM clock below this share of their median ...", 0.5, NULL},
    {"frozen_buckets", K_U32, F(frozen_buckets), "... for this many evaluations (and at least a minute)", 2, NULL},
    {"frozen_same", K_U32, F(frozen_same), "a GPU reading unchanged on this many samples (and at least a minute) while its siblings' change is frozen", 3, NULL},
    {"collapse_ratio", K_DBL, F(collapse_ratio), "a node's interrupt rate, runnable processes or GPU util below this share of its own baseline and of the busy nodes' median ...", 0.5, NULL},
    {"collapse_buckets", K_U32, F(collapse_buckets), "... for this many evaluations", 2, NULL},
    {"mem_avail_ratio", K_DBL, F(mem_avail_ratio), "memory pressure: MemAvailable below this share of MemTotal ...", 0.05, NULL},
    {"swap_rate", K_DBL, F(swap_rate), "... or more pages swapped out per second than this ...", 2000, NULL},
    {"mempress_buckets", K_U32, F(mempress_buckets), "... for this many evaluations", 2, NULL},
    {"mask_fraction", K_DBL, F(mask_fraction), "this share of nodes changing busy state at once is a job start/stop ...", 0.5, NULL},
    {"mask_duration", K_DUR, F(mask_ms), "... and masks node collapse checks this long", 5 * 60000, NULL},
    {"min_peers", K_U32, F(min_peers), "peer medians need at least this many members", 4, NULL},
    {"vanish_intervals", K_DBL, F(vanish_intervals), "a GPU silent this many intervals while its exporter answers has vanished", 2.5, NULL},
    {"sentinel_scrapes", K_U32, F(sentinel_scrapes), "sentinel values on this many consecutive evaluations", 2, NULL},
    {"exporter_down", K_DUR, F(exporter_down_ms), "one exporter not answering this long: warning", 5 * 60000, NULL},
    {"silent_intervals", K_DBL, F(silent_intervals), "no exporter of a node answering this many intervals: node silent", 6, NULL},
    {"throttle_hits", K_U32, F(throttle_hits), "throttle reasons with clock loss on this many ...", 2, NULL},
    {"throttle_of", K_U32, F(throttle_of), "... of the last this many evaluations (1-8): warning", 3, NULL},
    {"throttle_clock_loss", K_DBL, F(throttle_clock_loss), "SM clock this share below the sibling GPUs' median counts as loss", 0.05, NULL},
    {"throttle_temp_excess", K_DBL, F(throttle_temp_excess), "die temperature this many C above the siblings' median counts as heat", 5, NULL},
    {"throttle_long", K_DUR, F(throttle_long_ms), "throttle reasons alone for this long: warning", 5 * 60000, NULL},
    {"temp_warn", K_DBL, F(temp_warn), "die temperature (C) warning band ...", 85, NULL},
    {"temp_warn_for", K_DUR, F(temp_warn_ms), "... held this long (also for the HBM band)", 5 * 60000, NULL},
    {"temp_crit", K_DBL, F(temp_crit), "die temperature (C) critical band ...", 92, NULL},
    {"temp_crit_for", K_DUR, F(temp_crit_ms), "... held this long", 2 * 60000, NULL},
    {"hbm_temp_warn", K_DBL, F(hbm_temp_warn), "HBM temperature (C) warning band", 95, NULL},
    {"slow_hold", K_DUR, F(slow_hold_ms), "throttle and temperature alerts stay active this long", 30 * 60000, NULL},
    {"ckpt_min_nodes", K_U32, F(ckpt_min_nodes), "a checkpoint starts when this many nodes (at least 2) move NFS data in bulk at once", 3, NULL},
    {"ckpt_rise_ratio", K_DBL, F(ckpt_rise_ratio), "a node moves data in bulk at this multiple of its own NFS rate outside checkpoints ...", 10, NULL},
    {"ckpt_floor_bps", K_DBL, F(ckpt_floor_bps), "... and at least this many bytes/s", 16.0 * 1048576.0, NULL},
    {"ckpt_end_buckets", K_U32, F(ckpt_end_buckets), "a checkpoint ends after this many evaluations without it", 2, NULL},
    {"ckpt_min_buckets", K_U32, F(ckpt_min_buckets), "bursts shorter than this many evaluations are no checkpoint", 2, NULL},
    {"ckpt_queue_share", K_DBL, F(ckpt_queue_share), "slot-limited: RPC queue time at least this share of the request time ...", 0.5, NULL},
    {"ckpt_backlog", K_DBL, F(ckpt_backlog), "... and transport backlog per send at least this", 1, NULL},
    {"ckpt_link_util", K_DBL, F(ckpt_link_util), "link-limited: the links carrying NFS at this share of their speed", 0.8, NULL},
    {"ckpt_server_rtt_ratio", K_DBL, F(ckpt_server_rtt_ratio), "server-limited: response time per request this multiple of its level outside checkpoints", 4, NULL},
    {"ckpt_stall_ratio", K_DBL, F(ckpt_stall_ratio), "CheckpointStalled: a save this multiple of the median of the recent saves ...", 3, NULL},
    {"ckpt_stall_history", K_U32, F(ckpt_stall_history), "... once this many saves are known ...", 5, NULL},
    {"ckpt_stall_max_ratio", K_DBL, F(ckpt_stall_max_ratio), "... and this multiple of the longest of the recent saves", 1.5, NULL},
    {"act_train_util", K_DBL, F(act_train_util), "D8: a node computes when its GPUs' mean util is at least this (%)", 30, NULL},
    {"act_fb_mib", K_DBL, F(act_fb_mib), "D8: a node is allocated when half of its GPUs hold at least this frame buffer (MiB)", 1024, NULL},
};

/* Every threshold's default comes from its table row. */
void gw_det_config_default(struct gw_det_config *c)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < sizeof k_keys / sizeof k_keys[0]; i++) {
        const struct key *k = &k_keys[i];
        char *base = (char *)c + k->off;
        switch (k->kind) {
        case K_BOOL: *(int *)base = (int)k->def; break;
        case K_DUR: *(int64_t *)base = (int64_t)k->def; break;
        case K_DBL: *(double *)base = k->def; break;
        case K_U32: *(uint32_t *)base = (uint32_t)k->def; break;
        case K_STR:
            if (k->sdef) snprintf(base, sizeof c->node_labels, "%s", k->sdef);
            break;
        }
    }
}
#undef F

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n')) s[--n] = 0;
    return s;
}

static int set_value(struct gw_det_config *c, const struct key *k, const char *v)
{
    char *base = (char *)c + k->off;
    char *end;
    switch (k->kind) {
    case K_BOOL:
        if (!strcmp(v, "on") || !strcmp(v, "true") || !strcmp(v, "1")) *(int *)base = 1;
        else if (!strcmp(v, "off") || !strcmp(v, "false") || !strcmp(v, "0")) *(int *)base = 0;
        else return -1;
        return 0;
    case K_DUR: {
        int64_t ms;
        if (!strcmp(v, "0")) ms = 0;
        else if (gw_parse_duration_ms(v, &ms) != GW_OK || ms < 0) return -1;
        *(int64_t *)base = ms;
        return 0;
    }
    case K_DBL: {
        errno = 0;
        double x = strtod(v, &end);
        if (errno || end == v || *end || x != x || x < 0) return -1;
        *(double *)base = x;
        return 0;
    }
    case K_STR: {
        size_t n = strlen(v);
        size_t cap = k->off == offsetof(struct gw_det_config, node_map) ? sizeof c->node_map
                     : k->off == offsetof(struct gw_det_config, node_regex) ? sizeof c->node_regex
                                                                              : sizeof c->node_labels;
        if (n >= 2 && ((v[0] == '"' && v[n - 1] == '"') || (v[0] == '\'' && v[n - 1] == '\''))) {
            v++;
            n -= 2;
        }
        if (n >= cap) return -1;
        memcpy(base, v, n);
        base[n] = 0;
        return 0;
    }
    case K_U32: {
        errno = 0;
        long x = strtol(v, &end, 10);
        if (errno || end == v || *end || x < 1 || x > 1000000) return -1;
        *(uint32_t *)base = (uint32_t)x;
        return 0;
    }
    }
    return -1;
}

static const char *kind_hint(enum kind k)
{
    switch (k) {
    case K_BOOL: return "on or off";
    case K_DUR: return "a duration like 90s, 5m, 72h or 7d";
    case K_DBL: return "a non-negative number";
    case K_STR: return "a string (optionally quoted) within its length limit";
    default: return "an integer from 1 to 1000000";
    }
}

int gw_det_config_load(struct gw_det_config *c, const char *path, struct gw_error *err)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        char eb[128];
        const char *m = strerror_r(errno, eb, sizeof eb);
        return gw_error_set(err, GW_EIO, "cannot read detector config %s: %s", path, m);
    }
    struct gw_det_config tmp = *c;
    char line[1024];
    unsigned ln = 0;
    int rc = GW_OK;
    while (fgets(line, sizeof line, f)) {
        ln++;
        if (!strchr(line, '\n') && !feof(f)) {
            rc = gw_error_set(err, GW_EINVAL, "%s:%u: line too long", path, ln);
            break;
        }
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        char *s = trim(line);
        if (!*s) continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            rc = gw_error_set(err, GW_EINVAL, "%s:%u: expected \"key = value\", got \"%.60s\"", path, ln, s);
            break;
        }
        *eq = 0;
        char *key = trim(s), *val = trim(eq + 1);
        const struct key *k = NULL;
        for (size_t i = 0; i < sizeof k_keys / sizeof k_keys[0]; i++)
            if (!strcmp(k_keys[i].name, key)) k = &k_keys[i];
        if (!k) {
            rc = gw_error_set(err, GW_EINVAL, "%s:%u: unknown key \"%.60s\"", path, ln, key);
            break;
        }
        if (set_value(&tmp, k, val)) {
            rc = gw_error_set(err, GW_EINVAL, "%s:%u: bad value \"%.60s\" for %s: expected %s", path, ln, val, key,
                              kind_hint(k->kind));
            break;
        }
    }
    if (rc == GW_OK && ferror(f)) rc = gw_error_set(err, GW_EIO, "cannot read detector config %s", path);
    fclose(f);
    if (rc == GW_OK && (tmp.link_of < 1 || tmp.link_of > 8 || tmp.throttle_of < 1 || tmp.throttle_of > 8))
        rc = gw_error_set(err, GW_EINVAL, "%s: link_of and throttle_of must be 1 to 8", path);
    if (rc == GW_OK) *c = tmp;
    return rc;
}

static void print_dur(FILE *f, int64_t ms)
{
    if (ms == 0) fputs("0", f);
    else if (ms % 86400000 == 0) fprintf(f, "%lldd", (long long)(ms / 86400000));
    else if (ms % 3600000 == 0) fprintf(f, "%lldh", (long long)(ms / 3600000));
    else if (ms % 60000 == 0) fprintf(f, "%lldm", (long long)(ms / 60000));
    else if (ms % 1000 == 0) fprintf(f, "%llds", (long long)(ms / 1000));
    else fprintf(f, "%lldms", (long long)ms);
}

int gw_det_config_write(const struct gw_det_config *c, FILE *f)
{
    fputs("# gpuwatch detector configuration (gpuwatch serve --detector-config FILE)\n", f);
    for (size_t i = 0; i < sizeof k_keys / sizeof k_keys[0]; i++) {
        const struct key *k = &k_keys[i];
        const char *base = (const char *)c + k->off;
        fprintf(f, "# %s\n%s = ", k->doc, k->name);
        switch (k->kind) {
        case K_BOOL: fputs(*(const int *)base ? "on" : "off", f); break;
        case K_DUR: print_dur(f, *(const int64_t *)base); break;
        case K_DBL: fprintf(f, "%.10g", *(const double *)base); break;
        case K_U32: fprintf(f, "%u", *(const uint32_t *)base); break;
        case K_STR: fprintf(f, "\"%s\"", base); break;
        }
        fputc('\n', f);
    }
    return ferror(f) ? GW_EIO : GW_OK;
}
