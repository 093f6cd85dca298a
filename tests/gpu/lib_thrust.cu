// Thrust: each step copies a slice of the keys into a new thrust::device_vector and sorts it
// with thrust::sort, whose temporary storage Thrust allocates with cudaMalloc and frees with
// cudaFree on every call; the vector is freed at the end of the step (sortcheck.cuh says what
// is printed). Arguments: [KEYS [STEPS]], 4 Mi keys and 200 steps by default.
#include <cstdio>
#include <exception>

#include <thrust/device_vector.h>
#include <thrust/sort.h>

#include "sortcheck.cuh"

int main(int argc, char **argv)
{
    sortcheck::Args a = sortcheck::parse(argc, argv);
    try {
        std::vector<uint32_t> keys = sortcheck::make_keys(a.keys);
        thrust::device_vector<uint32_t> all(keys.begin(), keys.end());
        sortcheck::Steps steps(keys, a.steps);
        steps.run([&](int s, size_t off, size_t len) {
            thrust::device_vector<uint32_t> v(all.begin() + off, all.begin() + off + len);
            thrust::sort(v.begin(), v.end());
            sortcheck::queue_digest(thrust::raw_pointer_cast(v.data()), len, steps.acc, s);
        });
        return steps.report("thrust");
    } catch (const std::exception &e) { // Thrust reports a failed call by throwing
        std::fprintf(stderr, "thrust: %s\n", e.what());
        return 1;
    }
}
