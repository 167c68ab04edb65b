/* src/ledger/report_int.h - what the files of `gpuwatch report` share
 * (report.c: entry point, text and tables in both formats; report_sec.c:
 * the checkpoint, node and retry sections; report_svg.c: the inline SVG
 * charts of the HTML version). Private to src/ledger/; every name rep_. */
#ifndef GW_LEDGER_REPORT_INT_H
#define GW_LEDGER_REPORT_INT_H

#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>

#include "gpuwatch/ledger.h"
#include "ledger/ledger_int.h"   /* led_qsort */

#define REP_MAX_CLASSES 16       /* distinct failure classes with their own colour */

struct rep {
    FILE *f;
    int html;                    /* 1 HTML, 0 Markdown */
    const struct gw_led_report_in *in;
    const struct gw_led_result *r;
    int64_t t0, t1;              /* time axis of the charts (ms), t1 > t0 */
    char classes[REP_MAX_CLASSES][32];   /* failure classes, sorted: their colour index */
    uint32_t n_classes;
};

/* ---- text (report.c) */
void rep_raw(struct rep *p, const char *s);                 /* as is */
void rep_rawf(struct rep *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rep_text(struct rep *p, const char *s);                /* escaped for the format */
void rep_textf(struct rep *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rep_html_esc(FILE *f, const char *s);                  /* HTML escaping, for SVG too */
void rep_section_begin(struct rep *p, const char *id, const char *title);
void rep_section_end(struct rep *p);
void rep_para_begin(struct rep *p);
void rep_para_end(struct rep *p);
void rep_none(struct rep *p, const char *what);             /* "<what>: none in this range." */

/* ---- tables: begin, then per row rep_row + one rep_cell* per header, end */
void rep_tbl_begin(struct rep *p, const char *id, const char *const *headers, int n);
void rep_row(struct rep *p);
void rep_cell(struct rep *p, const char *s);
void rep_cellf(struct rep *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rep_cell_time(struct rep *p, int64_t t);
void rep_cell_dur(struct rep *p, int64_t ms);               /* GW_LED_NO_TIME: "-" */
void rep_cell_num(struct rep *p, double v, int decimals);   /* NAN/INF: "-" */
void rep_cell_pct(struct rep *p, double share);             /* 0..1 as "12.5 %", NAN "-" */
void rep_cell_swatch(struct rep *p, const char *color, const char *s);   /* colour dot in HTML */
void rep_tbl_end(struct rep *p);
/* HTML: a table of more than REP_FOLD_ROWS rows folds into <details>
 * (open it with a click, no script); Markdown: nothing. */
#define REP_FOLD_ROWS 40
void rep_fold_begin(struct rep *p, size_t rows, const char *what);
void rep_fold_end(struct rep *p, size_t rows);

/* ---- values */
void rep_fmt_time(int64_t t, char *out, size_t cap);         /* RFC 3339 UTC to the second, "-" none */
void rep_fmt_dur(int64_t ms, char *out, size_t cap);         /* "1h 12m", "-3m 10s", "-" none */
int64_t rep_diff(int64_t a, int64_t b);                      /* a - b, GW_LED_NO_TIME when either is */
const char *rep_node(const struct rep *p, uint32_t node);    /* node name, "?" out of range */
const char *rep_class_color(const struct rep *p, const char *cls);
const char *rep_diag_color(int diag);
const char *rep_outcome_color(enum gw_led_outcome o);

/* ---- sections (report_sec.c) */
void rep_sec_checkpoints(struct rep *p);
void rep_sec_nodes(struct rep *p);
void rep_sec_retries(struct rep *p);

/* ---- charts (report_svg.c, HTML only) */
void rep_chart_timeline(struct rep *p);      /* id chart-timeline */
void rep_chart_ckpt(struct rep *p);          /* id chart-ckpt */
void rep_chart_lemons(struct rep *p);        /* id chart-lemons */
void rep_chart_retries(struct rep *p);       /* id chart-retries */
void rep_chart_causes(struct rep *p);        /* id chart-causes */

#endif /* GW_LEDGER_REPORT_INT_H */
