// CUB: each step asks cub::DeviceRadixSort::SortKeys how much temporary storage it needs,
// allocates it, the input (a copy of a slice of the keys) and the output with cudaMalloc, sorts,
// and frees all three with cudaFree (sortcheck.cuh says what is printed). Arguments:
// [KEYS [STEPS]], 4 Mi keys and 200 steps by default.
#include <cub/device/device_radix_sort.cuh>

#include "sortcheck.cuh"

int main(int argc, char **argv)
{
    sortcheck::Args a = sortcheck::parse(argc, argv);
    std::vector<uint32_t> keys = sortcheck::make_keys(a.keys);
    uint32_t *all = nullptr;
    SORTCHECK(cudaMalloc(&all, keys.size() * sizeof keys[0]));
    SORTCHECK(cudaMemcpy(all, keys.data(), keys.size() * sizeof keys[0], cudaMemcpyHostToDevice));
    sortcheck::Steps steps(keys, a.steps);
    steps.run([&](int s, size_t off, size_t len) {
        uint32_t *in = nullptr, *out = nullptr;
        void *temp = nullptr;
        size_t temp_bytes = 0;
        SORTCHECK(cudaMalloc(&in, len * sizeof *in));
        SORTCHECK(cudaMemcpy(in, all + off, len * sizeof *in, cudaMemcpyDeviceToDevice));
        SORTCHECK(cudaMalloc(&out, len * sizeof *out));
        SORTCHECK(cub::DeviceRadixSort::SortKeys(nullptr, temp_bytes, in, out, len));
        SORTCHECK(cudaMalloc(&temp, temp_bytes));
        SORTCHECK(cub::DeviceRadixSort::SortKeys(temp, temp_bytes, in, out, len));
        sortcheck::queue_digest(out, len, steps.acc, s);
        SORTCHECK(cudaFree(temp));
        SORTCHECK(cudaFree(out));
        SORTCHECK(cudaFree(in));
    });
    SORTCHECK(cudaFree(all));
    return steps.report("cub");
}
