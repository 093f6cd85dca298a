// bench_pairs.c's allocation pairs through CUB's CachingDeviceAllocator (cub/util_allocator.cuh,
// shipped with the CUDA toolkit), over NVIDIA's static runtime: the peer the shim's pairs are
// compared with. Default bins (powers of 8 from 512 B to 2 MiB), so a 1 MiB pair is a cache
// hit after the first; "plain" allocates on the legacy stream, "async" on the thread's stream.
#include <cub/util_allocator.cuh>

// Made once and never destroyed: its destructor would free at exit, after the runtime's own
// teardown may have begun.
static cub::CachingDeviceAllocator *cub_alloc;

// Make the allocator, once the runtime has a context; 0 on success.
extern "C" int cub_pairs_init(void)
{
    if (cudaFree(nullptr) != cudaSuccess)
        return 1;
    cub_alloc = new cub::CachingDeviceAllocator();
    return 0;
}

// A non-blocking stream for a thread of the stream-ordered loop; 0 on success.
extern "C" int cub_pairs_stream_new(void **s)
{
    cudaStream_t st;
    if (cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess)
        return 1;
    *s = st;
    return 0;
}

// One pair on the legacy stream; 0 on success.
extern "C" int cub_pairs_plain(size_t n)
{
    void *p;
    return cub_alloc->DeviceAllocate(&p, n) != cudaSuccess || cub_alloc->DeviceFree(p) != cudaSuccess;
}

// One pair on stream s; 0 on success.
extern "C" int cub_pairs_async(size_t n, void *s)
{
    void *p;
    return cub_alloc->DeviceAllocate(&p, n, static_cast<cudaStream_t>(s)) != cudaSuccess ||
           cub_alloc->DeviceFree(p) != cudaSuccess;
}
