/* snapshot.c - the detector engine's state on disk, so a restart neither
 * loses nor repeats what the detectors know.
 *
 * File layout (host byte order; written and read by the same build - the
 * structure sizes in the header must match, else the file is refused):
 *   0   8  magic "GWDETS3\0"
 *   8   4  sizeof(struct det_series)     12  4  sizeof(struct det_node)
 *   16  4  sizeof(struct det_xid_onset)  20  4  n_series
 *   24  4  n_nodes                       28  4  xr_n (collective ring entries)
 *   32  4  on_n (onset candidates)       36  4  sizeof(struct det_core)
 *   40  4  sizeof(struct det_ck_core)    44  4  sizeof(struct det_ck_node)
 *   48  ... det_core (interval, buckets, baselines, counters),
 *           n_series x det_series, n_nodes x det_node,
 *           xr_n x det_xid_onset (oldest first), on_n x det_xid_onset,
 *           det_ck_core, n_nodes x det_ck_node (D7)
 *   end 8  XXH3-64 of every byte before it
 * Example: 1,000 series and 10 nodes of this build give a file of
 * 48 + sizeof(det_core) + 1000 x sizeof(det_series) + 10 x sizeof(det_node)
 * + sizeof(det_ck_core) + 10 x sizeof(det_ck_node) + 8 bytes. Raises of D2/D3 still waiting for their bucket are not kept
 * (at most one bucket's worth). After a load the completeness counters are
 * rebuilt from the series (watermark.c).
 * Written to PATH.tmp, fsynced, renamed over PATH. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "detect_int.h"
#include "gpuwatch/buf.h"
#include "gpuwatch/codec.h"

#define HDR 48

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

int gw_det_snapshot_save(struct gw_det *d, const char *path, struct gw_error *err)
{
    pthread_mutex_lock(&d->mu);
    size_t n = HDR + sizeof(struct det_core) + (size_t)d->n_series * sizeof(struct det_series) +
               (size_t)d->n_nodes * sizeof(struct det_node) + ((size_t)d->xr_n + d->on_n) * sizeof(struct det_xid_onset) +
               det_d7_snap_size(d) + 8;
    uint8_t *b = malloc(n);
    if (!b) {
        pthread_mutex_unlock(&d->mu);
        return gw_error_set(err, GW_ENOMEM, "out of memory writing the detector snapshot");
    }
    memset(b, 0, HDR);
    memcpy(b, "GWDETS3", 8);
    put32(b + 8, sizeof(struct det_series));
    put32(b + 12, sizeof(struct det_node));
    put32(b + 16, sizeof(struct det_xid_onset));
    put32(b + 20, d->n_series);
    put32(b + 24, d->n_nodes);
    put32(b + 28, d->xr_n);
    put32(b + 32, d->on_n);
    put32(b + 36, sizeof(struct det_core));
    put32(b + 40, sizeof(struct det_ck_core));
    put32(b + 44, sizeof(struct det_ck_node));
    size_t off = HDR;
    memcpy(b + off, &d->k, sizeof d->k);
    off += sizeof d->k;
    if (d->n_series) memcpy(b + off, d->series, (size_t)d->n_series * sizeof(struct det_series));
    off += (size_t)d->n_series * sizeof(struct det_series);
    if (d->n_nodes) memcpy(b + off, d->nodes, (size_t)d->n_nodes * sizeof(struct det_node));
    off += (size_t)d->n_nodes * sizeof(struct det_node);
    for (uint32_t i = 0; i < d->xr_n; i++) {
        memcpy(b + off, &d->xr[(d->xr_head + i) % DET_XID_RING], sizeof(struct det_xid_onset));
        off += sizeof(struct det_xid_onset);
    }
    if (d->on_n) memcpy(b + off, d->on, (size_t)d->on_n * sizeof(struct det_xid_onset));
    off += (size_t)d->on_n * sizeof(struct det_xid_onset);
    det_d7_snap_write(d, b + off);
    off += det_d7_snap_size(d);
    pthread_mutex_unlock(&d->mu);
    put64(b + off, gw_hash64(b, off));
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp) {
        free(b);
        return gw_error_set(err, GW_EINVAL, "snapshot path too long");
    }
    FILE *f = fopen(tmp, "wb");
    int rc = GW_OK;
    if (!f || fwrite(b, 1, n, f) != n || fflush(f) != 0 || fsync(fileno(f)) != 0) {
        char eb[128];
        const char *m = strerror_r(errno, eb, sizeof eb);
        rc = gw_error_set(err, GW_EIO, "cannot write %s: %s", tmp, m);
    }
    if (f && fclose(f) != 0 && rc == GW_OK) rc = gw_error_set(err, GW_EIO, "cannot close %s", tmp);
    if (rc == GW_OK && rename(tmp, path) != 0) {
        char eb[128];
        const char *m = strerror_r(errno, eb, sizeof eb);
        rc = gw_error_set(err, GW_EIO, "cannot rename %s: %s", tmp, m);
    }
    if (rc != GW_OK) unlink(tmp);
    free(b);
    return rc;
}

int gw_det_snapshot_load(struct gw_det *d, const char *path, struct gw_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        char eb[128];
        const char *m = strerror_r(errno, eb, sizeof eb);
        return gw_error_set(err, errno == ENOENT ? GW_ENOTFOUND : GW_EIO, "cannot read %s: %s", path, m);
    }
    struct gw_buf buf;
    gw_buf_init(&buf, 0);
    uint8_t chunk[65536];
    size_t got;
    int rc = GW_OK;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0)
        if ((rc = gw_buf_append(&buf, chunk, got))) break;
    fclose(f);
    if (rc) {
        gw_buf_free(&buf);
        return gw_error_set(err, rc, "out of memory reading %s", path);
    }
    const uint8_t *b = buf.data;
    size_t n = buf.len;
    if (n < HDR + 8 || memcmp(b, "GWDETS3", 8) != 0 || get32(b + 8) != sizeof(struct det_series) ||
        get32(b + 12) != sizeof(struct det_node) || get32(b + 16) != sizeof(struct det_xid_onset) ||
        get32(b + 36) != sizeof(struct det_core) || get32(b + 40) != sizeof(struct det_ck_core) ||
        get32(b + 44) != sizeof(struct det_ck_node)) {
        gw_buf_free(&buf);
        return gw_error_set(err, GW_ECORRUPT, "%s is not a detector snapshot of this version", path);
    }
    uint32_t ns = get32(b + 20), nn = get32(b + 24), nx = get32(b + 28), no = get32(b + 32);
    uint64_t want = HDR + sizeof(struct det_core) + (uint64_t)ns * sizeof(struct det_series) +
                    (uint64_t)nn * sizeof(struct det_node) + ((uint64_t)nx + no) * sizeof(struct det_xid_onset) +
                    sizeof(struct det_ck_core) + (uint64_t)nn * sizeof(struct det_ck_node) + 8;
    if (nx > DET_XID_RING || no > DET_ONSETS || want != n || get64(b + n - 8) != gw_hash64(b, n - 8)) {
        gw_buf_free(&buf);
        return gw_error_set(err, GW_ECORRUPT, "%s: detector snapshot damaged (size or checksum)", path);
    }
    struct det_series *series = ns ? malloc((size_t)ns * sizeof *series) : NULL;
    struct det_node *nodes = nn ? malloc((size_t)nn * sizeof *nodes) : NULL;
    if ((ns && !series) || (nn && !nodes)) {
        free(series);
        free(nodes);
        gw_buf_free(&buf);
        return gw_error_set(err, GW_ENOMEM, "out of memory loading %s", path);
    }
    size_t off = HDR;
    struct det_core core;
    memcpy(&core, b + off, sizeof core);
    off += sizeof core;
    if (ns) memcpy(series, b + off, (size_t)ns * sizeof *series);
    off += (size_t)ns * sizeof *series;
    if (nn) memcpy(nodes, b + off, (size_t)nn * sizeof *nodes);
    off += (size_t)nn * sizeof *nodes;
    /* indices inside must stay in range: a damaged file must not reach the engine */
    for (uint32_t i = 0; i < ns; i++)
        if (series[i].node >= nn || series[i].role >= R_COUNT_ || series[i].gpu >= DET_MAX_GPUS || series[i].gpu < -1 ||
            series[i].n_inc > DET_HIST || series[i].inc_head >= DET_HIST || series[i].ring_n > DET_RING ||
            series[i].ring_head >= DET_RING || series[i].next > ns || series[i].job > JOB_UNKNOWN)
            rc = GW_ECORRUPT;
    for (uint32_t i = 0; i < nn; i++) {
        nodes[i].name[DET_NODE_NAME - 1] = 0;
        if (nodes[i].gpu_count > DET_MAX_GPUS || nodes[i].merged_into > nn || nodes[i].series_head > ns) rc = GW_ECORRUPT;
        for (int k = 0; k < N_NSLOT; k++)
            if (nodes[i].slot[k] > ns) rc = GW_ECORRUPT;
        for (int g = 0; g < DET_MAX_GPUS; g++) {
            if (nodes[i].gpus[g].app_burst_n > DET_HIST || nodes[i].gpus[g].app_burst_head >= DET_HIST) rc = GW_ECORRUPT;
            for (int k = 0; k < G_NSLOT; k++)
                if (nodes[i].gpus[g].slot[k] > ns) rc = GW_ECORRUPT;
        }
    }
    /* a series list must not loop: each series is on at most one list */
    if (rc == GW_OK) {
        uint32_t steps = 0;
        for (uint32_t i = 0; i < nn && rc == GW_OK; i++)
            for (uint32_t h = nodes[i].series_head; h && rc == GW_OK; h = series[h - 1].next)
                if (++steps > ns) rc = GW_ECORRUPT;
    }
    if (core.iv < 0 || core.iv > 86400000 || core.lateness < 0) rc = GW_ECORRUPT;
    if (rc) {
        free(series);
        free(nodes);
        gw_buf_free(&buf);
        return gw_error_set(err, GW_ECORRUPT, "%s: detector snapshot holds out-of-range state", path);
    }
    pthread_mutex_lock(&d->mu);
    free(d->series);
    free(d->nodes);
    free(d->sid_slots);
    free(d->node_slots);
    d->sid_slots = NULL;
    d->node_slots = NULL;
    d->mask_sid = d->mask_node = 0;
    d->series = series;
    d->n_series = d->cap_series = ns;
    d->nodes = nodes;
    d->n_nodes = d->cap_nodes = nn;
    d->k = core;
    d->xr_head = 0;
    d->xr_n = nx;
    for (uint32_t i = 0; i < nx; i++) {
        memcpy(&d->xr[i], b + off, sizeof d->xr[i]);
        if (d->xr[i].node >= nn || d->xr[i].gpu < 0 || d->xr[i].gpu >= DET_MAX_GPUS) d->xr[i].decided = 1;
        off += sizeof d->xr[i];
    }
    d->on_n = no;
    for (uint32_t i = 0; i < no; i++) {
        memcpy(&d->on[i], b + off, sizeof d->on[i]);
        if (d->on[i].node >= nn || d->on[i].gpu < 0 || d->on[i].gpu >= DET_MAX_GPUS) d->on[i].t = INT64_MIN;
        off += sizeof d->on[i];
    }
    d->q_n = 0;
    rc = det_d7_snap_read(d, b + off);
    if (rc == GW_OK) rc = det_rebuild_tables(d);
    if (rc == GW_OK) det_wm_recount(d);
    pthread_mutex_unlock(&d->mu);
    gw_buf_free(&buf);
    if (rc) return gw_error_set(err, rc, rc == GW_ECORRUPT ? "%s: detector snapshot holds out-of-range D7 state" : "out of memory loading %s", path);
    return GW_OK;
}
