// Shared by the sorting loops of scripts/gpu-check.sh's libraries section (lib_thrust.cu,
// lib_cub.cu): programs that allocate their temporary storage with cudaMalloc on every call, as
// code nobody here wrote does. Each step sorts a slice of keys made on the host from a fixed
// seed (its length and offset change from step to step, so the sizes asked for change too),
// and a kernel of this file folds the sorted slice into that step's digest on the device. The
// last line is JSON: "result" (the digest of every step, whether each was sorted and held the
// slice's keys) must be the same plainly and under the cache; "step_s" is the median seconds of
// a step (allocations, sort, digest, frees, then a device synchronization), 5 warm-up steps
// left out. Exits 1 at a failed call (the error on stderr), or when a step was not sorted or
// lost keys (after the JSON line).
#ifndef CA_GPU_SORTCHECK_CUH
#define CA_GPU_SORTCHECK_CUH

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

#define SORTCHECK(call)                                                                       \
    do {                                                                                      \
        cudaError_t st_ = (call);                                                             \
        if (st_ != cudaSuccess) {                                                             \
            std::fprintf(stderr, "%s:%d: %s returned %d (%s)\n", __FILE__, __LINE__, #call,   \
                         (int)st_, cudaGetErrorString(st_));                                  \
            std::exit(1);                                                                     \
        }                                                                                     \
    } while (0)

namespace sortcheck {

struct Args {
    size_t keys = size_t(1) << 22; // 4 Mi keys of 32 bits: 16 MiB
    int steps = 200;
};

// [KEYS [STEPS]]; a bad argument exits 2.
inline Args parse(int argc, char **argv)
{
    Args a;
    if (argc > 1)
        a.keys = std::strtoull(argv[1], nullptr, 10);
    if (argc > 2)
        a.steps = std::atoi(argv[2]);
    if (argc > 3 || a.keys < 1024 || a.steps < 6) {
        std::fprintf(stderr, "usage: %s [KEYS (1024 or more) [STEPS (6 or more)]]\n", argv[0]);
        std::exit(2);
    }
    return a;
}

// The keys, the same on every run: xorshift64* from a fixed seed.
inline std::vector<uint32_t> make_keys(size_t n)
{
    std::vector<uint32_t> k(n);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < n; i++) {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        k[i] = (uint32_t)((x * 0x2545F4914F6CDD1Dull) >> 32);
    }
    return k;
}

// Step s sorts keys [off, off + len): between half the keys and all of them.
inline void slice(size_t n, int s, size_t *off, size_t *len)
{
    size_t half = n / 2;
    *len = half + (size_t)(((uint64_t)s * 2654435761u) % (n - half + 1));
    *off = (size_t)(((uint64_t)s * 40503u) % (n - *len + 1));
}

// acc[0] += the sum of k[i] * (i + 1), acc[1] += the sum of k[i], acc[2] += the number of i with
// k[i] > k[i + 1]; all modulo 2^64, so that the order of the additions does not matter.
__global__ void digest(const uint32_t *k, size_t n, unsigned long long *acc)
{
    unsigned long long w = 0, sum = 0, bad = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        w += (unsigned long long)k[i] * (i + 1);
        sum += k[i];
        bad += (i + 1 < n && k[i] > k[i + 1]);
    }
    for (int o = 16; o > 0; o >>= 1) {
        w += __shfl_down_sync(0xffffffffu, w, o);
        sum += __shfl_down_sync(0xffffffffu, sum, o);
        bad += __shfl_down_sync(0xffffffffu, bad, o);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicAdd(&acc[0], w);
        atomicAdd(&acc[1], sum);
        atomicAdd(&acc[2], bad);
    }
}

// Queues the digest of a sorted slice into step s's three counters.
inline void queue_digest(const uint32_t *dev, size_t n, unsigned long long *acc, int s)
{
    digest<<<256, 256>>>(dev, n, acc + 3 * (size_t)s);
    SORTCHECK(cudaGetLastError());
}

// What every step records: its counters on the device, its time on the host.
struct Steps {
    const std::vector<uint32_t> &keys;
    int steps;
    unsigned long long *acc = nullptr;
    std::vector<double> secs;

    Steps(const std::vector<uint32_t> &k, int n) : keys(k), steps(n)
    {
        SORTCHECK(cudaMalloc(&acc, 3 * sizeof *acc * (size_t)n));
        SORTCHECK(cudaMemset(acc, 0, 3 * sizeof *acc * (size_t)n));
    }

    // Runs one(s, off, len) for every step, each followed by a device synchronization, timed.
    template <typename F> void run(F one)
    {
        for (int s = 0; s < steps; s++) {
            size_t off, len;
            slice(keys.size(), s, &off, &len);
            auto t0 = std::chrono::steady_clock::now();
            one(s, off, len);
            SORTCHECK(cudaDeviceSynchronize());
            secs.push_back(
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
    }

    // Prints the summary line and the JSON line; the exit status of the program.
    int report(const char *name)
    {
        std::vector<unsigned long long> h(3 * (size_t)steps);
        SORTCHECK(cudaMemcpy(h.data(), acc, h.size() * sizeof h[0], cudaMemcpyDeviceToHost));
        SORTCHECK(cudaFree(acc));
        std::vector<unsigned long long> prefix(keys.size() + 1, 0);
        for (size_t i = 0; i < keys.size(); i++)
            prefix[i + 1] = prefix[i] + keys[i];
        unsigned long long d = 1469598103934665603ull; // the steps' counters, folded FNV-style
        int unsorted = 0, lost = 0;
        for (int s = 0; s < steps; s++) {
            size_t off, len;
            slice(keys.size(), s, &off, &len);
            unsorted += h[3 * s + 2] != 0;
            lost += h[3 * s + 1] != prefix[off + len] - prefix[off];
            for (int j = 0; j < 3; j++)
                d = (d ^ h[3 * s + j]) * 1099511628211ull;
        }
        std::vector<double> t(secs.begin() + 5, secs.end());
        std::sort(t.begin(), t.end());
        double med = t.size() % 2 ? t[t.size() / 2] : (t[t.size() / 2 - 1] + t[t.size() / 2]) / 2;
        std::printf("%s: %d steps of %zu to %zu keys: %d unsorted, %d with keys lost; "
                    "median %.3f ms a step\n", name, steps, keys.size() / 2, keys.size(),
                    unsorted, lost, med * 1e3);
        std::printf("{\"result\": {\"digest\": \"%016llx\", \"sorted\": %s, \"same_keys\": %s, "
                    "\"keys\": %zu, \"steps\": %d}, \"step_s\": %.9f, \"steps\": %d}\n",
                    d, unsorted ? "false" : "true", lost ? "false" : "true", keys.size(), steps,
                    med, steps);
        std::fflush(stdout);
        return unsorted || lost ? 1 : 0;
    }
};

} // namespace sortcheck

#endif
