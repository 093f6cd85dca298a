/* The plain driver of a fuzz target, for builds without libFuzzer: it runs every file of a
 * seed corpus directory, then N random mutations of them (bytes flipped, inserted, removed,
 * corpus files spliced), with a fixed seed so that a failure repeats.
 *   fuzz_X_driver CORPUS_DIR N */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_FILES 256
#define MAX_LEN 65536

static unsigned char *files[MAX_FILES];
static size_t lens[MAX_FILES];
static int nfiles;

static void load(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL && nfiles < MAX_FILES) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        unsigned char *b = malloc(MAX_LEN);
        size_t n = b ? fread(b, 1, MAX_LEN, f) : 0;
        fclose(f);
        files[nfiles] = b;
        lens[nfiles++] = n;
    }
    if (d)
        closedir(d);
}

/* Runs one input from a buffer of exactly its length, so an overread is caught by ASan. */
static void run(const unsigned char *b, size_t n)
{
    unsigned char *copy = malloc(n ? n : 1);
    memcpy(copy, b, n);
    LLVMFuzzerTestOneInput(copy, n);
    free(copy);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s CORPUS_DIR MUTATIONS\n", argv[0]);
        return 2;
    }
    load(argv[1]);
    if (nfiles == 0) {
        fprintf(stderr, "%s: no corpus files in %s\n", argv[0], argv[1]);
        return 1;
    }
    long mutations = atol(argv[2]);
    for (int i = 0; i < nfiles; i++)
        run(files[i], lens[i]);
    srand(1);
    static unsigned char buf[2 * MAX_LEN];
    for (long m = 0; m < mutations; m++) {
        int i = rand() % nfiles;
        size_t n = lens[i];
        memcpy(buf, files[i], n);
        for (int k = 1 + rand() % 8; k > 0; k--) {
            size_t at = n ? (size_t)rand() % n : 0;
            switch (rand() % 4) {
            case 0: /* flip */
                if (n)
                    buf[at] ^= (unsigned char)(1u << (rand() % 8));
                break;
            case 1: /* insert */
                if (n + 1 < sizeof buf) {
                    memmove(buf + at + 1, buf + at, n - at);
                    buf[at] = (unsigned char)rand();
                    n++;
                }
                break;
            case 2: /* remove */
                if (n) {
                    memmove(buf + at, buf + at + 1, n - at - 1);
                    n--;
                }
                break;
            default: { /* splice another file's tail */
                int j = rand() % nfiles;
                size_t from = lens[j] ? (size_t)rand() % lens[j] : 0, take = lens[j] - from;
                if (at + take > sizeof buf)
                    take = sizeof buf - at;
                memcpy(buf + at, files[j] + from, take);
                n = at + take;
            }
            }
        }
        run(buf, n);
    }
    printf("%d corpus files and %ld mutations: no crash\n", nfiles, mutations);
    for (int i = 0; i < nfiles; i++)
        free(files[i]);
    return 0;
}
