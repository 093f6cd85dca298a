/* Not linked against the runtime: loads the plugin (argv[1]) RTLD_LOCAL, runs it, and checks
 * with the simulator's counters that its ten allocations made one driver allocation. With
 * argv[2], loads that file RTLD_LOCAL first: the runtime under another file name (a wheel
 * repaired by auditwheel ships libcudart-<hash>.so.13), which the plugin then uses through its
 * soname. */
#include "gpu.h"

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    if (argc > 2 && dlopen(argv[2], RTLD_NOW | RTLD_LOCAL) == NULL) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    void *sym = dlsym(h, "ca_plugin_run");
    EXPECT(sym != NULL);
    int (*run)(void);
    memcpy(&run, &sym, sizeof run);
    EXPECT(run() == 0);
    struct simdev_counters c = sim_counters(-1);
    printf("plugin: %llu driver allocations for 10 allocations\n",
           (unsigned long long)simdev_allocs(c));
    EXPECT(simdev_allocs(c) == 1);
    return 0;
}
