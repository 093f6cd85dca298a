/* Two copies of NVIDIA's static runtime in one process: two plugins (argv[1], argv[2]), each
 * linked with its own libcudart_static.a, loaded RTLD_LOCAL by a program linked against no
 * CUDA library. A block allocated through one copy and freed through the other goes back to
 * the one cache: the first copy's next allocation of that size gets it back, one driver
 * allocation in all, and the frees make no device synchronization. A bad pointer freed
 * through either copy answers cudaErrorInvalidValue, recorded as that copy's last error only. */
#include "gpu.h"

#define SIZE ((size_t)1 << 20)

struct plugin {
    int (*malloc)(void **p, size_t n);
    int (*free)(void *p);
    int (*last_error)(void);
};

static void *sym(void *h, const char *name)
{
    void *f = dlsym(h, name);
    EXPECT(f != NULL);
    return f;
}

static struct plugin load(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "%s\n", dlerror());
        exit(1);
    }
    struct plugin pl;
    void *f = sym(h, "ca_plugin_malloc");
    memcpy(&pl.malloc, &f, sizeof f);
    f = sym(h, "ca_plugin_free");
    memcpy(&pl.free, &f, sizeof f);
    f = sym(h, "ca_plugin_last_error");
    memcpy(&pl.last_error, &f, sizeof f);
    return pl;
}

int main(int argc, char **argv)
{
    EXPECT(argc == 3);
    struct plugin a = load(argv[1]), b = load(argv[2]);
    void *p = NULL, *q = NULL;
    EXPECT(a.malloc(&p, SIZE) == cudaSuccess);
    EXPECT(b.free(p) == cudaSuccess);
    EXPECT(a.malloc(&q, SIZE) == cudaSuccess);
    EXPECT(a.free(q) == cudaSuccess);
    struct simdev_counters c = sim_counters(-1);
    printf("block %s after a free by the other runtime; %llu driver allocations, "
           "%llu device synchronizations\n", q == p ? "back" : "not back",
           (unsigned long long)simdev_allocs(c), (unsigned long long)c.device_syncs);
    EXPECT(q == p);
    EXPECT(simdev_allocs(c) == 1 && c.device_syncs == 0);

    /* Bad pointers: inside a live block, then a block freed already, through each copy. */
    EXPECT(b.malloc(&p, SIZE) == cudaSuccess);
    EXPECT(a.free((char *)p + 256) == cudaErrorInvalidValue);
    EXPECT(b.last_error() == cudaSuccess); /* two runtimes: b's last error is its own */
    EXPECT(a.last_error() == cudaErrorInvalidValue);
    EXPECT(b.free((char *)p + 256) == cudaErrorInvalidValue);
    EXPECT(b.last_error() == cudaErrorInvalidValue);
    EXPECT(a.free(p) == cudaSuccess);
    EXPECT(b.free(p) == cudaErrorInvalidValue);
    EXPECT(a.free(p) == cudaErrorInvalidValue);
    EXPECT(simdev_allocs(sim_counters(-1)) == 1);
    return 0;
}
