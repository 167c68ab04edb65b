/* replay_main.c - runs a fuzz target's LLVMFuzzerTestOneInput over saved
 * inputs without libFuzzer, so every `make test` (gcc, and the ASan build)
 * replays the corpora in tests/corpus/<target>/. Each argument is a file or
 * a directory (its regular files, in name order). An input that crashes,
 * aborts or trips a sanitizer fails the test; GW_REPLAY_VERBOSE=1 names
 * each file before it runs, to find the one that failed.
 * Exit 0 with "replayed N inputs", 1 on an unreadable path or no inputs. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int verbose;

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    size_t cap = 4096, len = 0;
    uint8_t *b = malloc(cap);
    size_t k;
    while (b != NULL && (k = fread(b + len, 1, cap - len, f)) > 0) {
        len += k;
        if (len == cap) {
            uint8_t *nb = realloc(b, cap * 2);
            if (nb == NULL)
                free(b);
            b = nb;
            cap *= 2;
        }
    }
    int bad = b == NULL || ferror(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        free(b);
        return -1;
    }
    if (verbose)
        fprintf(stderr, "replay: %s (%zu bytes)\n", path, len);
    /* an exact-size copy, so ASan sees a read one past the input */
    uint8_t *in = malloc(len ? len : 1);
    if (in == NULL) {
        free(b);
        return -1;
    }
    memcpy(in, b, len);
    free(b);
    LLVMFuzzerTestOneInput(in, len);
    free(in);
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every regular file of dir in name order; the count, or -1. */
static long run_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        fprintf(stderr, "replay: cannot open directory %s\n", dir);
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nn = realloc(names, cap * sizeof *nn);
            if (nn == NULL)
                break;
            names = nn;
        }
        names[n] = malloc(strlen(dir) + strlen(e->d_name) + 2);
        if (names[n] == NULL)
            break;
        sprintf(names[n], "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    if (n > 0)
        qsort(names, n, sizeof *names, cmp_names);
    long done = 0;
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (done >= 0 && stat(names[i], &st) == 0 && S_ISREG(st.st_mode))
            done = run_file(names[i]) == 0 ? done + 1 : -1;
        free(names[i]);
    }
    free(names);
    return done;
}

int main(int argc, char **argv)
{
    const char *v = getenv("GW_REPLAY_VERBOSE");
    verbose = v != NULL && strcmp(v, "1") == 0;
    long total = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        long k;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: no such file or directory\n", argv[i]);
            return 1;
        }
        k = S_ISDIR(st.st_mode) ? run_dir(argv[i]) : (run_file(argv[i]) == 0 ? 1 : -1);
        if (k < 0)
            return 1;
        total += k;
    }
    if (total == 0) {
        fprintf(stderr, "replay: no inputs (usage: %s FILE|DIR...)\n", argv[0]);
        return 1;
    }
    printf("replayed %ld inputs\n", total);
    return 0;
}
