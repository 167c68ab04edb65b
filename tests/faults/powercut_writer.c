/* powercut_writer.c - fixed file operations for the power-cut shim's own
 * test (tests/faults/powercut_shim_test.sh), run under the shim; it ends
 * with _exit and no sync, as a process killed by a power cut.
 *
 * Usage: powercut_writer DIR
 * In DIR (which exists and is empty):
 *   a   4096 x 'A', fsynced, DIR fsynced; then unsynced: pwrite "BBBB" at 0,
 *       write of 100 x 'C' at the end                 -> restore: 4096 x 'A'
 *   b   created, "hello" written and fsynced, DIR fsynced later -> stays
 *   c   "old" fsynced (DIR fsynced); then "new" by pwritev at 0 + fdatasync
 *                                                      -> "new" stays
 *   d   8192 x 'D' fsynced; ftruncate to 10, not synced -> 8192 x 'D'
 *   e   writev of "x" + "yz" to a fresh file, fsync, then writev "QQ" at 0
 *       and syncfs() (before all the unsynced writes below), then an unsynced
 *       writev "RR" at 0                               -> "QQz"
 *   f   O_DSYNC descriptor, write "sync"               -> "sync" stays
 *   g   created after the last DIR fsync, written, fsynced -> removed
 *   sub/ mkdir, not synced                             -> removed */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

static void die(const char *what)
{
    perror(what);
    exit(1);
}

static int mk(const char *dir, const char *name, int extra)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    int fd = open(p, O_RDWR | O_CREAT | extra, 0644);
    if (fd < 0) die(p);
    return fd;
}

static void put(int fd, char ch, size_t n)
{
    char *b = malloc(n);
    if (!b) die("malloc");
    memset(b, ch, n);
    if (write(fd, b, n) != (ssize_t)n) die("write");
    free(b);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: powercut_writer DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (dfd < 0) die(dir);

    int a = mk(dir, "a", 0), c = mk(dir, "c", 0), d = mk(dir, "d", 0), e = mk(dir, "e", 0);
    put(a, 'A', 4096);
    if (write(c, "old", 3) != 3) die("write c");
    put(d, 'D', 8192);
    struct iovec v[2] = {{"x", 1}, {"yz", 2}};
    if (writev(e, v, 2) != 3) die("writev e");
    if (fsync(a) || fsync(c) || fsync(d) || fsync(e) || fsync(dfd)) die("fsync");

    struct iovec q[1] = {{"QQ", 2}};
    if (lseek(e, 0, SEEK_SET) != 0 || writev(e, q, 1) != 2) die("writev e 2");
    if (syncfs(dfd)) die("syncfs");
    if (pwrite(a, "BBBB", 4, 0) != 4 || lseek(a, 0, SEEK_END) < 0) die("pwrite a");
    put(a, 'C', 100);
    int b = mk(dir, "b", 0);
    if (write(b, "hello", 5) != 5 || fsync(b)) die("b");
    struct iovec nv[1] = {{"new", 3}};
    if (pwritev(c, nv, 1, 0) != 3 || fdatasync(c)) die("c");
    if (ftruncate(d, 10)) die("ftruncate d");
    struct iovec r[1] = {{"RR", 2}};
    if (lseek(e, 0, SEEK_SET) != 0 || writev(e, r, 1) != 2) die("writev e 3");
    int f = mk(dir, "f", O_DSYNC);
    if (fsync(dfd)) die("fsync dir"); /* f's name durable; b too, then undone below */
    char p[4096];
    snprintf(p, sizeof p, "%s/g", dir);
    int g = open(p, O_RDWR | O_CREAT, 0644); /* created after the last dir fsync */
    if (g < 0 || write(g, "gone", 4) != 4 || fsync(g)) die("g");
    if (write(f, "sync", 4) != 4) die("write f");
    snprintf(p, sizeof p, "%s/sub", dir);
    if (mkdir(p, 0755)) die("mkdir");
    _exit(0);
}
