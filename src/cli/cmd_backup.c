/* cmd_backup.c - `gpuwatch backup` and `gpuwatch restore`.
 *
 *   gpuwatch backup --data-dir DIR --out DIR2      consistent copy (serve may run)
 *   gpuwatch restore --from DIR2 --data-dir DIR [--force]
 *
 * backup: when no process holds DIR/LOCK the copy is made here
 * (gw_db_backup_dir); when a serve runs on DIR (its address in
 * DIR/serve.addr, or --url) it is asked to make it (POST
 * /api/v1/admin/backup?out=ABS), since only it knows which WAL records are
 * acknowledged; ingest goes on meanwhile. restore checks the backup's
 * manifest and every file before writing anything, then moves it into DIR
 * through a temp dir (gw_db_restore). Format: top of src/db/backup.c. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuwatch/db.h"
#include "gpuwatch/httpc.h"
#include "cli.h"
#include "cli_export.h"
#include "cli_parse.h"

struct backup_args {
    const char *dir, *out, *url;
};

static const struct gw_cli_opt backup_opts[] = {
    {.name = "--data-dir", .arg = "DIR", .help = "the data directory to back up (required)", .type = GW_CLI_STR,
     GW_CLI_AT(struct backup_args, dir), .flags = GW_CLI_REQUIRED | GW_CLI_NONEMPTY},
    {.name = "--out", .arg = "DIR2", .help = "where to write the backup: absent or empty (required)",
     .type = GW_CLI_STR, GW_CLI_AT(struct backup_args, out), .flags = GW_CLI_REQUIRED | GW_CLI_NONEMPTY},
    {.name = "--url", .arg = "URL", .help = "the serve running on DIR (default: from DIR/serve.addr)",
     .type = GW_CLI_STR, GW_CLI_AT(struct backup_args, url), .flags = GW_CLI_NONEMPTY},
    {0},
};

static const struct gw_cli_cmd backup_cmd = {
    .name = "backup",
    .synopsis = "--data-dir DIR --out DIR2 [--url URL]",
    .intro = "Writes a consistent copy of a data dir: the series store (an LMDB snapshot),\n"
             "the WAL segments up to the moment the backup began and the other files (alert\n"
             "log, events, checkpoints), with a MANIFEST of sizes and checksums written last.\n"
             "Every sample acknowledged before the backup began is in it. When 'gpuwatch\n"
             "serve' runs on DIR, serve makes the backup (ingest is not paused; DIR2 is a\n"
             "path on serve's machine); otherwise it is made here. An interrupted backup\n"
             "leaves DIR2.partial.* behind, which restore refuses.\n",
    .opts = backup_opts,
};

struct restore_args {
    const char *from, *dir;
    int force, check;
};

static const struct gw_cli_opt restore_opts[] = {
    {.name = "--from", .arg = "DIR2", .help = "the backup (required)", .type = GW_CLI_STR,
     GW_CLI_AT(struct restore_args, from), .flags = GW_CLI_REQUIRED | GW_CLI_NONEMPTY},
    {.name = "--data-dir", .arg = "DIR", .help = "the data dir to restore into (required unless --check)",
     .type = GW_CLI_STR, GW_CLI_AT(struct restore_args, dir), .flags = GW_CLI_NONEMPTY},
    {.name = "--force", .help = "replace a non-empty DIR", .type = GW_CLI_FLAG,
     GW_CLI_AT(struct restore_args, force)},
    {.name = "--check", .help = "only check the backup (manifest, sizes, checksums)", .type = GW_CLI_FLAG,
     GW_CLI_AT(struct restore_args, check)},
    {0},
};

static const struct gw_cli_cmd restore_cmd = {
    .name = "restore",
    .synopsis = "--from DIR2 --data-dir DIR [--force] | --from DIR2 --check",
    .intro = "Restores a backup made by 'gpuwatch backup'. Every file is checked against the\n"
             "backup's MANIFEST before anything is written; the copy goes to a temp dir next\n"
             "to DIR that is renamed into place when complete. A non-empty DIR is replaced\n"
             "only with --force, and never while a gpuwatch process runs on it. Start\n"
             "'gpuwatch serve' on DIR afterwards: it replays the restored WAL.\n",
    .opts = restore_opts,
};

/* The absolute form of path (whose last part may not exist yet). */
static int abs_path(const char *path, char *out, size_t cap)
{
    if (path[0] == '/') {
        snprintf(out, cap, "%s", path);
        return 0;
    }
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return -1;
    size_t cl = strlen(cwd), pl = strlen(path);
    if (cl + 1 + pl + 1 > cap)
        return -1;
    memcpy(out, cwd, cl);
    out[cl] = '/';
    memcpy(out + cl + 1, path, pl + 1);
    return 0;
}

static void url_encode(const char *s, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (; *s && o + 4 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("-_.~/", c)) {
            out[o++] = (char)c;
        } else {
            out[o++] = '%';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    out[o] = 0;
}

static int backup_online(const char *url, const char *out)
{
    char absout[PATH_MAX], enc[3 * PATH_MAX], path[3 * PATH_MAX + 64];
    if (abs_path(out, absout, sizeof absout) != 0) {
        fprintf(stderr, "gpuwatch backup: cannot resolve %s: %s\n", out, strerror(errno));
        return 1;
    }
    url_encode(absout, enc, sizeof enc);
    snprintf(path, sizeof path, "/api/v1/admin/backup?out=%s", enc);
    struct gw_error err = {0};
    struct gw_httpc *c = NULL;
    struct gw_httpc_opts o;
    gw_httpc_opts_default(&o);
    o.timeout_ms = 6 * 3600 * 1000;   /* a large store takes a while */
    o.user_agent = "gpuwatch-cli";
    int status = -1;
    struct gw_httpc_response r;
    gw_httpc_response_init(&r);
    if (gw_httpc_open(&c, url, &o, &err) == GW_OK && gw_httpc_request(c, "POST", path, NULL, 0, NULL, 0, &r, &err) == GW_OK)
        status = r.status;
    gw_httpc_close(c);
    int rc = 0;
    if (status == 200) {
        printf("backup written by the running server at %s to %s: %.*s\n", url, absout, (int)r.body.len,
               r.body.len ? (const char *)r.body.data : "");
    } else if (status < 0) {
        fprintf(stderr, "gpuwatch backup: the running server at %s does not answer: %s\n", url, err.msg);
        rc = 1;
    } else {
        fprintf(stderr, "gpuwatch backup: the running server at %s answered %d: %.*s\n", url, status,
                (int)r.body.len, r.body.len ? (const char *)r.body.data : "");
        rc = 1;
    }
    gw_httpc_response_free(&r);
    return rc;
}

int gw_cli_backup(int argc, char **argv)
{
    struct backup_args a = {0};
    int rc = gw_cli_parse(&backup_cmd, argc, argv, &a);
    if (rc >= 0)
        return rc;
    char url[400];
    if (a.url)
        return backup_online(a.url, a.out);
    struct gw_db_backup_stats st;
    struct gw_error err = {0};
    rc = gw_db_backup_dir(a.dir, a.out, &st, &err);
    if (rc == GW_ELIMIT) {
        if (gw_cli_serve_url(a.dir, url, sizeof url) == 0)
            return backup_online(url, a.out);
        fprintf(stderr, "gpuwatch backup: %s, and DIR/serve.addr does not say where it listens; give --url\n",
                err.msg);
        return 1;
    }
    if (rc != GW_OK) {
        fprintf(stderr, "gpuwatch backup: %s\n", err.msg);
        return 1;
    }
    printf("backup of %s written to %s: %llu files, %llu bytes, %llu WAL segments\n", a.dir, a.out,
           (unsigned long long)st.files, (unsigned long long)st.bytes, (unsigned long long)st.wal_segments);
    return 0;
}

int gw_cli_restore(int argc, char **argv)
{
    struct restore_args a = {0};
    int rc = gw_cli_parse(&restore_cmd, argc, argv, &a);
    if (rc >= 0)
        return rc;
    if (!a.check && !a.dir)
        return gw_cli_usage_error(&restore_cmd, 1, "--data-dir is required (or --check)");
    struct gw_db_backup_stats st;
    struct gw_error err = {0};
    if (a.check) {
        rc = gw_db_backup_check(a.from, &st, &err);
        if (rc != GW_OK) {
            fprintf(stderr, "gpuwatch restore: %s\n", err.msg);
            return 1;
        }
        printf("backup %s is complete: %llu files, %llu bytes match the manifest\n", a.from,
               (unsigned long long)st.files, (unsigned long long)st.bytes);
        return 0;
    }
    rc = gw_db_restore(a.from, a.dir, a.force, &st, &err);
    if (rc != GW_OK) {
        fprintf(stderr, "gpuwatch restore: %s\n", err.msg);
        return 1;
    }
    printf("restored %s into %s: %llu files, %llu bytes, %llu WAL segments\n", a.from, a.dir,
           (unsigned long long)st.files, (unsigned long long)st.bytes, (unsigned long long)st.wal_segments);
    return 0;
}
