/* src/http/ui.c - the built-in status page: GET / (index.html) and
 * GET /ui/<file> (its script and style sheet), all embedded in the binary
 * (src/http/ui/, turned into a byte-array table by cmake/gw_embed.cmake).
 *
 * The page loads nothing from elsewhere: every answer carries a
 * Content-Security-Policy that allows only this origin (no inline script or
 * style, no frames), nosniff, and Cache-Control no-cache (a browser keeps
 * the copy but asks again, so a new binary's page is seen at once). The
 * page reads the JSON APIs of this server only (/api/v1/query,
 * /api/v1/query_range, /api/v1/alerts, /api/v1/checkpoints,
 * /api/v1/exclusions). */
#include <string.h>
#include "http/http_int.h"
#include "http/ui_int.h"

#define GW_UI_CSP "default-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

const struct gw_ui_asset *gw_ui_find(const char *path)
{
    if (path == NULL)
        return NULL;
    if (strcmp(path, "/") == 0 || strcmp(path, "/ui/") == 0)
        path = "/ui/index.html";
    for (const struct gw_ui_asset *a = gw_ui_assets; a->path != NULL; a++)
        if (strcmp(a->path, path) == 0)
            return a;
    return NULL;
}

void gw_http_ui(struct gw_http_req *rq, struct gw_http_resp *rs)
{
    const struct gw_ui_asset *a = gw_ui_find(rq->path);
    if (a == NULL) {
        gw_resp_text(rs, 404, "404 page not found");
        return;
    }
    gw_buf_reset(&rs->body);
    if (gw_buf_append(&rs->body, a->data, a->len) != GW_OK) {
        gw_resp_text(rs, 500, "out of memory");
        return;
    }
    rs->status = 200;
    rs->content_type = a->content_type;
    rs->content_encoding = NULL;
    gw_resp_header(rs, "Cache-Control", "no-cache");
    gw_resp_header(rs, "Content-Security-Policy", "%s", GW_UI_CSP);
    gw_resp_header(rs, "X-Content-Type-Options", "nosniff");
    gw_resp_header(rs, "Referrer-Policy", "no-referrer");
    gw_resp_header(rs, "X-Frame-Options", "DENY");
}
