/* eval_int.h - helpers shared by the evaluation's files (score.c,
 * variations.c). */
#ifndef GW_EVAL_INT_H
#define GW_EVAL_INT_H

#include <stddef.h>

/* The q-quantile of v (sorted in place) by linear interpolation between
 * the closest ranks; NAN for no values. */
double gw_eval_quantile(double *v, size_t n, double q);

#endif /* GW_EVAL_INT_H */
