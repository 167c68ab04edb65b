/* eval_int.h - helpers shared by the evaluation's files (score.c,
 * variations.c). */
#ifndef GW_EVAL_INT_H
#define GW_EVAL_INT_H

#include <stddef.h>
#include <stdio.h>

/* The q-quantile of v (sorted in place) by linear interpolation between
 * the closest ranks; NAN for no values. */
double gw_eval_quantile(double *v, size_t n, double q);

/* score.c: a JSON string / number (gpuwatch/json.h) written to f. */
void gw_eval_json_str(FILE *f, const char *s);
void gw_eval_json_num(FILE *f, double v);

#endif /* GW_EVAL_INT_H */
