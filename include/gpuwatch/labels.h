/* gpuwatch/labels.h - label sets: validation, canonical bytes, hashing,
 * node/GPU locality key.
 *
 * A label set in memory is an array of struct gw_label sorted by name (byte
 * order), names unique, every name and value non-empty. Strings are NOT
 * NUL-terminated; they are borrowed from whatever buffer the caller owns.
 *
 * Canonical bytes (what the store keeps and what is hashed):
 *   repeated { uvarint name_len | name | uvarint value_len | value }
 * in sorted order. Two label sets are equal iff their canonical bytes are.
 * Layer: L1 encoding (src/model/); includes only its layer and below (docs/architecture.md). */
#ifndef GW_LABELS_H
#define GW_LABELS_H

#include <stddef.h>
#include <stdint.h>
#include "gpuwatch/err.h"

#define GW_LABELS_MAX 128            /* labels per series accepted          */
#define GW_LABEL_NAME_MAX 256        /* bytes per label name (index key limit) */
#define GW_LABEL_VALUE_MAX 65536     /* bytes per label value               */

struct gw_label {
    const char *name;
    uint32_t name_len;
    const char *value;
    uint32_t value_len;
};

/* Sorts ls in place by name if needed, then validates: n >= 1, n <=
 * GW_LABELS_MAX, a non-empty __name__ present, names match
 * [a-zA-Z_][a-zA-Z0-9_]* (except __name__'s value which must match
 * [a-zA-Z_:][a-zA-Z0-9_:]*), no empty name or value, no duplicate name,
 * valid UTF-8 values, lengths within limits. GW_OK or GW_EINVAL with a
 * message naming the offending label. */
int gw_labels_normalize(struct gw_label *ls, size_t n, struct gw_error *err);

/* Bytes needed for the canonical encoding of ls (assumed normalized). */
size_t gw_labels_encoded_size(const struct gw_label *ls, size_t n);
/* Writes canonical bytes into out (cap >= gw_labels_encoded_size); returns
 * bytes written. */
size_t gw_labels_encode(const struct gw_label *ls, size_t n, uint8_t *out);
/* Parses canonical bytes into ls (max entries); strings borrow from b.
 * GW_OK, GW_ECORRUPT (bad bytes) or GW_ELIMIT (more than max labels). */
int gw_labels_decode(const uint8_t *b, size_t len, struct gw_label *ls, size_t max, size_t *n);

/* Looks up a label by name in canonical bytes; returns 1 and sets
 * *value and *value_len (borrowed) when present, 0 when absent or corrupt. */
int gw_labels_get(const uint8_t *b, size_t len, const char *name, size_t name_len,
                  const char **value, size_t *value_len);

/* Compares two canonical label sets the way Prometheus orders series
 * (labels.Compare): pairwise by name then value, shorter set first. */
int gw_labels_compare(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen);

/* XXH3-64 of the canonical bytes. */
uint64_t gw_labels_hash(const uint8_t *canon, size_t len);

/* Locality: the node is the value of `hostname`, else `Hostname`, else
 * `instance` with any ":port" suffix removed; GPU is the integer value of
 * `gpu` (0..65534) or GW_GPU_NONE for node-level series (also when `gpu`
 * is not a small integer). Node empty (len 0) when none of the labels exist. */
#define GW_GPU_NONE 0xFFFFu
void gw_labels_locality(const struct gw_label *ls, size_t n,
                        const char **node, size_t *node_len, uint16_t *gpu);

#endif /* GW_LABELS_H */
