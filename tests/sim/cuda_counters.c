/* cuda_counters.c: the counters file written at exit (SIMDEV_COUNTERS_FILE), per device and in
 * total, pinned host memory's included. A child process does the work so the parent can read
 * the file after it exits. */
#include <cuda_runtime_api.h>
#include <sys/wait.h>

#include "check.h"

static void child(const char *path)
{
    setenv("SIMDEV_COUNTERS_FILE", path, 1);
    void *a, *b, *c, *h1, *h2;
    cudaStream_t s;
    cudaEvent_t e;
    CHECK_EQ(cudaMalloc(&a, 1000), cudaSuccess);
    CHECK_EQ(cudaMalloc(&b, 3000), cudaSuccess);
    CHECK_EQ(cudaFree(a), cudaSuccess);
    CHECK_EQ(cudaFree(a), cudaErrorInvalidValue);
    CHECK_EQ(cudaStreamCreate(&s), cudaSuccess);
    CHECK_EQ(cudaEventCreate(&e), cudaSuccess);
    CHECK_EQ(cudaMallocAsync(&c, 512, s), cudaSuccess);
    CHECK_EQ(cudaFreeAsync(c, s), cudaSuccess);
    CHECK_EQ(cudaEventRecord(e, s), cudaSuccess);
    CHECK_EQ(cudaStreamWaitEvent(0, e, 0), cudaSuccess);
    CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
    CHECK_EQ(cudaMallocHost(&h1, 5000), cudaSuccess);
    CHECK_EQ(cudaHostAlloc(&h2, 3000, cudaHostAllocPortable), cudaSuccess);
    CHECK_EQ(cudaFreeHost(h1), cudaSuccess); /* waits for the device: a sync */
    exit(0);
}

static int has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)); p += n)
        if ((p == text || p[-1] == '\n') && p[n] == '\n')
            return 1;
    return 0;
}

int main(void)
{
    sim_begin("simdevice cuda driver");
    char path[] = "/tmp/simdev_countersXXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
        child(path);
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    static char text[8192];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    unlink(path);
    fputs(text, stdout);
    static const char *expect[] = {
        "malloc_calls=2", "malloc_bytes=4000", "free_calls=1", "free_bytes=1000",
        "malloc_async_calls=1", "free_async_calls=1", "device_syncs=3", "faults=0",
        /* NVIDIA's runtime releases the primary context at exit, which frees b. */
        "invalid_frees=1", "reserved_bytes=0", "peak_reserved_bytes=2097664" /* one shared page, a 512-byte pool block */, "oom=0",
        "events_recorded=1", "stream_waits=1", "injected_faults=0",
        /* Pinned memory: h2 is still held at exit. */
        "host_allocs=2", "host_frees=1", "host_bytes=3000",
    };
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++) {
        char dev[64];
        snprintf(dev, sizeof dev, "device.0.%s", expect[i]);
        if (!has_line(text, expect[i]) || !has_line(text, dev)) {
            fprintf(stderr, "FAIL: missing line %s (or %s)\n", expect[i], dev);
            return 1;
        }
    }
    printf("cuda_counters: all passed\n");
    return 0;
}
