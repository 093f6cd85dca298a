/* drv_ipc.c: the driver's interprocess memory between two processes. The parent allocates and
 * exports; a second process (this program again, ipc_peer.h) opens the handle and checks what
 * it sees. A handle names the whole allocation holding the pointer, so an interior pointer
 * exports the allocation and the importer gets its base. Run with SIMDEV_MEMORY=2G. */
#include <stdint.h>

#include "drv_check.h"
#include "ipc_peer.h"

#define MiB ((size_t)1 << 20)
#define SIZE (3 * 4096 + 100) /* more than a page, not a whole number of pages */

static unsigned char pattern(size_t i, int seed)
{
    return (unsigned char)(i * 7 + (size_t)seed);
}

static void fill(CUdeviceptr p, size_t n, int seed)
{
    unsigned char *h = malloc(n);
    for (size_t i = 0; i < n; i++)
        h[i] = pattern(i, seed);
    CU_OK(cuMemcpyHtoD(p, h, n));
    free(h);
}

/* 1 when the n bytes at p hold pattern `seed`. */
static int holds(CUdeviceptr p, size_t n, int seed)
{
    unsigned char *h = malloc(n);
    CU_OK(cuMemcpyDtoH(h, p, n));
    int ok = 1;
    for (size_t i = 0; i < n && ok; i++)
        ok = h[i] == pattern(i, seed);
    free(h);
    return ok;
}

/* The importer: opens the handle, checks pattern 1 over SIZE bytes at what it got, writes
 * pattern 2 for the parent to see, and checks the refusals that concern imported memory. */
static int child_read_write(const CUipcMemHandle *h)
{
    CUdeviceptr p = 0, again = 0;
    CHECK_EQ(cuIpcOpenMemHandle(&p, *h, 2), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuIpcOpenMemHandle(NULL, *h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
             CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuIpcOpenMemHandle(&p, *h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    CHECK(holds(p, SIZE, 1));
    /* A second open in the same context: the same address, one reference more. */
    CU_OK(cuIpcOpenMemHandle(&again, *h, 0));
    CHECK_EQ(again, p);
    CUdeviceptr base = 0;
    size_t size = 0;
    CU_OK(cuMemGetAddressRange(&base, &size, p + 10));
    CHECK_EQ(base, p);
    CHECK_EQ(size, SIZE);
    /* Imported memory is freed by closing it, never by cuMemFree, nor exported again. */
    CHECK_EQ(cuMemFree(p), CUDA_ERROR_INVALID_VALUE);
    CUipcMemHandle re;
    CHECK_EQ(cuIpcGetMemHandle(&re, p), CUDA_ERROR_INVALID_VALUE);
    fill(p, SIZE, 2);
    CHECK_EQ(cuIpcCloseMemHandle(p + 1), CUDA_ERROR_INVALID_HANDLE);
    CU_OK(cuIpcCloseMemHandle(p));
    CU_OK(cuIpcCloseMemHandle(p));
    CHECK_EQ(cuIpcCloseMemHandle(p), CUDA_ERROR_INVALID_HANDLE);
    return 0;
}

/* The importer of a 1 GiB allocation the parent touched at its two ends only. */
static int child_sparse(const CUipcMemHandle *h)
{
    CUdeviceptr p = 0;
    CU_OK(cuIpcOpenMemHandle(&p, *h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    unsigned char head = 0, tail = 0, mid = 1;
    CU_OK(cuMemcpyDtoH(&head, p, 1));
    CU_OK(cuMemcpyDtoH(&tail, p + 1024 * MiB - 1, 1));
    CU_OK(cuMemcpyDtoH(&mid, p + 512 * MiB, 1));
    CHECK_EQ(head, 0xa5);
    CHECK_EQ(tail, 0x5a);
    CHECK_EQ(mid, 0);
    CU_OK(cuIpcCloseMemHandle(p));
    return 0;
}

/* The importer of a handle whose allocation the parent freed before: the mapping fails. */
static int child_gone(const CUipcMemHandle *h)
{
    CUdeviceptr p = 0;
    CHECK_EQ(cuIpcOpenMemHandle(&p, *h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
             CUDA_ERROR_MAP_FAILED);
    return 0;
}

static int child(const char *role, const char *hex)
{
    drv_begin();
    drv_use_primary(0);
    CUipcMemHandle h;
    CHECK(ipc_peer_unhex(hex, &h) == 0);
    if (strcmp(role, "read-write") == 0)
        return child_read_write(&h);
    if (strcmp(role, "sparse") == 0)
        return child_sparse(&h);
    if (strcmp(role, "gone") == 0)
        return child_gone(&h);
    return 99;
}

/* The base and an interior pointer export the same handle; the importer sees the allocation
 * from its start, and what it writes is what the exporter reads. */
static void shared_both_ways(void)
{
    CUdeviceptr p = 0;
    CU_OK(cuMemAlloc(&p, SIZE));
    fill(p, SIZE, 1);
    CUipcMemHandle h, inner;
    CU_OK(cuIpcGetMemHandle(&h, p));
    CU_OK(cuIpcGetMemHandle(&inner, p + 4096 + 3));
    CHECK(memcmp(&h, &inner, sizeof h) == 0);
    CHECK(holds(p, SIZE, 1)); /* the export kept the bytes */
    CHECK_EQ(ipc_peer_run("read-write", &inner, NULL, 0), 0);
    CHECK(holds(p, SIZE, 2));
    /* Exported memory is freed as any other; its address is then freed memory. */
    CU_OK(cuMemFree(p));
    CHECK_EQ(ipc_peer_run("gone", &h, NULL, 0), 0);
}

/* A sparse allocation keeps its bytes and costs no more than they do. */
static void sparse_allocation(void)
{
    CUdeviceptr p = 0;
    CU_OK(cuMemAlloc(&p, 1024 * MiB));
    CU_OK(cuMemsetD8(p, 0xa5, 1));
    CU_OK(cuMemsetD8(p + 1024 * MiB - 1, 0x5a, 1));
    CU_OK(cuCtxSynchronize());
    CUipcMemHandle h;
    CU_OK(cuIpcGetMemHandle(&h, p));
    CHECK_EQ(ipc_peer_run("sparse", &h, NULL, 0), 0);
    CU_OK(cuMemFree(p));
}

/* What cannot be exported or opened. */
static void refusals(void)
{
    CUipcMemHandle h, other;
    CUdeviceptr p = 0, q = 0, a = 0, opened = 0;
    int local = 0;
    CU_OK(cuMemAlloc(&p, 4096));
    CU_OK(cuMemAlloc(&q, 4096));
    CHECK_EQ(cuIpcGetMemHandle(NULL, p), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuIpcGetMemHandle(&h, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuIpcGetMemHandle(&h, (CUdeviceptr)&local), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemAllocAsync(&a, 4096, NULL));
    CHECK_EQ(cuIpcGetMemHandle(&h, a), CUDA_ERROR_INVALID_VALUE); /* pool memory */
    CU_OK(cuMemFreeAsync(a, NULL));
    CU_OK(cuIpcGetMemHandle(&h, p));
    CU_OK(cuIpcGetMemHandle(&other, q));
    CHECK(memcmp(&h, &other, sizeof h) != 0);
    /* The exporting process itself cannot open its handle. */
    CHECK_EQ(cuIpcOpenMemHandle(&opened, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
             CUDA_ERROR_INVALID_CONTEXT);
    memset(&other, 0, sizeof other);
    CHECK_EQ(cuIpcOpenMemHandle(&opened, other, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
             CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuIpcCloseMemHandle(p), CUDA_ERROR_INVALID_HANDLE);
    CU_OK(cuMemFree(p));
    CU_OK(cuMemFree(q));
    CU_OK(cuCtxSynchronize());
    CHECK_EQ(sim_counters(0).reserved_bytes, 0);
}

int main(int argc, char **argv)
{
    if (argc == 3)
        return child(argv[1], argv[2]);
    drv_begin();
    drv_use_primary(0);
    shared_both_ways();
    sparse_allocation();
    refusals();
    puts("drv_ipc: ok");
    return 0;
}
