/* drv_procaddr.c: cuGetProcAddress answers by base name, ABI version and stream flags, as every
 * copy of NVIDIA's runtime relies on, and before cuInit, since the runtime looks up cuInit
 * itself this way. The 5-argument form is the one cuda.h names cuGetProcAddress. */
#include <cudaTypedefs.h>

#include "drv_check.h"

static void *driver;

/* The exported symbol, as a program that bypasses the lookup would bind it. */
static void *sym(const char *name)
{
    void *f = dlsym(driver, name);
    CHECK(f != NULL);
    return f;
}

/* Looks name up and checks it answers the exported symbol `want`. */
static void expect(const char *name, int version, cuuint64_t flags, const char *want)
{
    void *f = NULL;
    CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)-1;
    CUresult rc = cuGetProcAddress(name, &f, version, flags, &st);
    if (rc != CUDA_SUCCESS || st != CU_GET_PROC_ADDRESS_SUCCESS || f != sym(want)) {
        fprintf(stderr, "FAIL: %s at %d, flags %d gave result %d, status %d, not %s\n", name,
                version, (int)flags, rc, (int)st, want);
        check_failed();
    }
}

/* Looks name up and checks it is refused with `status` and no pointer. */
static void refused(const char *name, int version, CUdriverProcAddressQueryResult status)
{
    void *f = &f;
    CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)-1;
    CHECK_EQ(cuGetProcAddress(name, &f, version, 0, &st), CUDA_ERROR_NOT_FOUND);
    CHECK_EQ(st, status);
    CHECK(f == NULL);
}

static void versions(void)
{
    expect("cuMemAlloc", 3020, CU_GET_PROC_ADDRESS_DEFAULT, "cuMemAlloc_v2");
    expect("cuMemAlloc", 13000, CU_GET_PROC_ADDRESS_DEFAULT, "cuMemAlloc_v2");
    /* The CUDA 2.0 ABI (32-bit sizes) is not implemented: an old caller must not get _v2. */
    refused("cuMemAlloc", 2000, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    expect("cuCtxSynchronize", 2000, 0, "cuCtxSynchronize");
    expect("cuCtxSynchronize", 12000, 0, "cuCtxSynchronize");
    expect("cuCtxSynchronize", 13000, 0, "cuCtxSynchronize_v2");
    expect("cuCtxGetDevice", 13000, 0, "cuCtxGetDevice_v2");
    /* The runtime's start-up probe: an empty name must be "not found", not a stub's error. */
    refused("", 0, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    refused("cuNoSuchEntryPoint", 13000, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    refused("cuMemAlloc_v2", 13000, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND); /* base names only */
}

/* The shareable-handle calls of virtual memory, at cudaTypedefs.h's versions. */
static void vmm_sharing(void)
{
    expect("cuMemExportToShareableHandle", 10020, 0, "cuMemExportToShareableHandle");
    expect("cuMemImportFromShareableHandle", 10020, 0, "cuMemImportFromShareableHandle");
    expect("cuMemImportFromShareableHandle", 13000, 0, "cuMemImportFromShareableHandle");
    expect("cuMemRetainAllocationHandle", 11000, 0, "cuMemRetainAllocationHandle");
    expect("cuMemRetainAllocationHandle", 13000, 0, "cuMemRetainAllocationHandle");
    refused("cuMemRetainAllocationHandle", 10020, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
}

static void stream_flags(void)
{
    /* Each variant at the version cudaTypedefs.h gives it (_ptsz forms began in CUDA 7.0). */
    expect("cuMemcpyAsync", 7000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
           "cuMemcpyAsync_ptsz");
    expect("cuMemcpyAsync", 7000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, "cuMemcpyAsync");
    expect("cuMemcpyAsync", 4000, CU_GET_PROC_ADDRESS_DEFAULT, "cuMemcpyAsync");
    expect("cuMemAllocAsync", 11020, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
           "cuMemAllocAsync_ptsz");
    expect("cuMemcpyHtoD", 7000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
           "cuMemcpyHtoD_v2_ptds");
    /* A call without a per-thread variant answers a per-thread build with its only one. */
    expect("cuMemAlloc", 3020, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuMemAlloc_v2");
    void *f;
    CHECK_EQ(cuGetProcAddress("cuMemAlloc", &f, 3020, 4, NULL), CUDA_ERROR_INVALID_VALUE);
}

/* The lookup hands itself out, so that the runtime's later lookups reach the same table. */
static void self_lookup(void)
{
    void *f = NULL, *g = NULL;
    CU_OK(cuGetProcAddress("cuGetProcAddress", &f, 12000, 0, NULL));
    PFN_cuGetProcAddress_v12000 lookup = (PFN_cuGetProcAddress_v12000)(uintptr_t)f;
    CHECK(lookup != NULL);
    CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)-1;
    CU_OK(lookup("cuMemAlloc", &g, 3020, 0, &st));
    CHECK_EQ(st, CU_GET_PROC_ADDRESS_SUCCESS);
    CHECK(g == sym("cuMemAlloc_v2"));
    st = (CUdriverProcAddressQueryResult)-1;
    CHECK_EQ(lookup("cuNoSuchEntryPoint", &g, 3020, 0, &st), CUDA_ERROR_NOT_FOUND);
    CHECK_EQ(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    /* At 11030 it is the 4-argument form of CUDA 11.3. */
    f = g = NULL;
    CU_OK(cuGetProcAddress("cuGetProcAddress", &f, 11030, 0, NULL));
    PFN_cuGetProcAddress_v11030 lookup4 = (PFN_cuGetProcAddress_v11030)(uintptr_t)f;
    CU_OK(lookup4("cuCtxSynchronize", &g, 13000, 0));
    CHECK(g == sym("cuCtxSynchronize_v2"));
}

int main(void)
{
    sim_begin("simdevice cuda driver");
    driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    CHECK(driver != NULL);
    versions();
    vmm_sharing();
    stream_flags();
    self_lookup();
    /* What the lookup gave before cuInit works after it. */
    void *f = NULL;
    int v = 0;
    CU_OK(cuGetProcAddress("cuDriverGetVersion", &f, 2020, 0, NULL));
    CU_OK(cuInit(0));
    CU_OK(((PFN_cuDriverGetVersion_v2020)(uintptr_t)f)(&v));
    CHECK_EQ(v, 13000);
    printf("drv_procaddr: all passed\n");
    return 0;
}
