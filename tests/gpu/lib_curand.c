/* cuRAND: a million uniform floats per round from a seeded generator. */
#include <curand.h>

#include "libcheck.h"

int main(void)
{
    enum { N = 1 << 20 };
    double total = 0;
    for (int r = 0; r < ROUNDS; r++) {
        curandGenerator_t g;
        LIBCHECK(curandCreateGenerator(&g, CURAND_RNG_PSEUDO_DEFAULT));
        LIBCHECK(curandSetPseudoRandomGeneratorSeed(g, 1234ull + (unsigned long long)r));
        float *x;
        LIBCHECK(cudaMalloc((void **)&x, N * sizeof(float)));
        LIBCHECK(curandGenerateUniform(g, x, N));
        total += device_sum(x, N);
        LIBCHECK(curandDestroyGenerator(g));
        LIBCHECK(cudaFree(x));
    }
    printf("curand checksum %.17g\n", total);
    return 0;
}
