/* src/http/ui_int.h - the status page's files (src/http/ui/), embedded in
 * the binary at build time (cmake/gw_embed.cmake writes ui_assets.c into
 * the build directory) and served by ui.c. */
#ifndef GW_HTTP_UI_INT_H
#define GW_HTTP_UI_INT_H

#include <stddef.h>

struct gw_ui_asset {
    const char *path;           /* "/ui/app.js"; index.html is also "/" */
    const char *content_type;   /* static */
    const unsigned char *data;  /* static, not NUL-terminated */
    size_t len;
};
/* Ends with an entry whose path is NULL. */
extern const struct gw_ui_asset gw_ui_assets[];
/* The asset served at path ("/" is index.html), NULL when there is none. */
const struct gw_ui_asset *gw_ui_find(const char *path);

#endif /* GW_HTTP_UI_INT_H */
