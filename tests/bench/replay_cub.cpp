// Trace replay through CUB's cub::CachingDeviceAllocator (header-only, ships with the CUDA
// toolkit), the peer the cache is compared with. Default bins unless --cub-bins is given.
#include <cub/util_allocator.cuh>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "replay_core.h"

namespace {

struct cub_ctx {
    cub::CachingDeviceAllocator *alloc = nullptr;
    bool custom = false;
    unsigned growth = 8, min_bin = 3, max_bin = 7;
    size_t max_cached = 6 * 1024 * 1024 - 1;
};

int cub_alloc(void *ctx, void **p, size_t size)
{
    return static_cast<cub_ctx *>(ctx)->alloc->DeviceAllocate(p, size) == cudaSuccess ? 0 : -1;
}

int cub_free(void *ctx, void *p)
{
    return static_cast<cub_ctx *>(ctx)->alloc->DeviceFree(p) == cudaSuccess ? 0 : -1;
}

// --cub-bins GROWTH,MIN_BIN,MAX_BIN[,MAX_CACHED_BYTES]: CUB's own constructor arguments.
int cub_option(void *ctx, const char *opt, const char *val)
{
    auto *c = static_cast<cub_ctx *>(ctx);
    if (std::strcmp(opt, "--cub-bins") != 0)
        return -1;
    unsigned long long cached = 0;
    unsigned g = 0, lo = 0, hi = 0;
    char tail = 0;
    int n = std::sscanf(val, "%u,%u,%u,%llu%c", &g, &lo, &hi, &cached, &tail);
    if ((n != 3 && n != 4) || g < 2 || lo > hi || hi > 40)
        return -1;
    c->growth = g;
    c->min_bin = lo;
    c->max_bin = hi;
    c->max_cached = n == 4 ? static_cast<size_t>(cached) : static_cast<size_t>(-1);
    c->custom = true;
    return 0;
}

int cub_setup(void *ctx)
{
    auto *c = static_cast<cub_ctx *>(ctx);
    c->alloc = c->custom ? new cub::CachingDeviceAllocator(c->growth, c->min_bin, c->max_bin,
                                                           c->max_cached)
                         : new cub::CachingDeviceAllocator();
    std::printf("cub_bins=%u,%u,%u,%zu\n", c->alloc->bin_growth, c->alloc->min_bin,
                c->alloc->max_bin, c->alloc->max_cached_bytes);
    return 0;
}

void cub_teardown(void *ctx)
{
    auto *c = static_cast<cub_ctx *>(ctx);
    delete c->alloc;  // FreeAllCached
    c->alloc = nullptr;
}

}  // namespace

int main(int argc, char **argv)
{
    cub_ctx ctx;
    replay_allocator al{};
    al.name = "cub";
    al.ctx = &ctx;
    al.alloc = cub_alloc;
    al.free = cub_free;
    al.option = cub_option;
    al.setup = cub_setup;
    al.teardown = cub_teardown;
    al.usage_extra = " [--cub-bins GROWTH,MIN_BIN,MAX_BIN[,MAX_CACHED_BYTES]]";
    return replay_main(argc, argv, &al);
}
