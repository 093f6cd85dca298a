/* A probe for scripts/gpu-check.sh (a record, no verdict): what the driver charges for memory
 * by allocation and by virtual memory management, size by size, and what it allows of mapped
 * memory. The arena's expandable segments map 2 MiB pages one handle each; whether a handle of
 * a whole request costs less, and whether mapped memory can be exported at all, decides how
 * they could become the default (docs/arena.md, "Expandable segments").
 *
 * Prints one line per figure: the median of ROUNDS timings in microseconds, and the driver's
 * answers as numbers. Runs in a few seconds; touches at most 256 MiB at a time. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "probe_util.h"

#define MIB ((size_t)1 << 20)
#define ROUNDS 9

static CUresult (*mem_alloc)(CUdeviceptr *, size_t);
static CUresult (*mem_free)(CUdeviceptr);
static CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
static CUresult (*addr_free)(CUdeviceptr, size_t);
static CUresult (*create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                          unsigned long long);
static CUresult (*release)(CUmemGenericAllocationHandle);
static CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                       unsigned long long);
static CUresult (*unmap)(CUdeviceptr, size_t);
static CUresult (*set_access)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
static CUresult (*granularity)(size_t *, const CUmemAllocationProp *,
                               CUmemAllocationGranularity_flags);
static CUresult (*ipc_get)(CUipcMemHandle *, CUdeviceptr);
static CUresult (*export_)(void *, CUmemGenericAllocationHandle, CUmemAllocationHandleType,
                           unsigned long long);
static CUresult (*retain_handle)(CUmemGenericAllocationHandle *, void *);
static CUresult (*range)(CUdeviceptr *, size_t *, CUdeviceptr);
static CUresult (*memset8)(CUdeviceptr, unsigned char, size_t);
static CUresult (*sync_)(void);


static CUmemAllocationProp prop_of(CUdevice dev, CUmemAllocationHandleType types)
{
    CUmemAllocationProp p;
    memset(&p, 0, sizeof p);
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = dev;
    p.requestedHandleTypes = types;
    return p;
}

static CUmemAccessDesc access_of(CUdevice dev)
{
    CUmemAccessDesc a;
    memset(&a, 0, sizeof a);
    a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    a.location.id = dev;
    a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return a;
}

/* cuMemAlloc and cuMemFree of n bytes, with a first touch (a memset) between them. */
static void plain(size_t n)
{
    double a[ROUNDS], f[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        CUdeviceptr p = 0;
        double t0 = now_us();
        if (mem_alloc(&p, n) != CUDA_SUCCESS) {
            printf("alloc.%zuMiB=failed\n", n / MIB);
            return;
        }
        double t1 = now_us();
        memset8(p, 1, n);
        sync_();
        double t2 = now_us();
        mem_free(p);
        f[r] = now_us() - t2;
        a[r] = t1 - t0;
    }
    printf("alloc_us.%zuMiB=%.1f free_us.%zuMiB=%.1f\n", n / MIB, median(a, ROUNDS), n / MIB,
           median(f, ROUNDS));
}

/* n bytes mapped as handles of `piece` bytes each (piece == n: one handle), the way an
 * expandable range grows: create, map and release each handle, one access call for the run;
 * then unmapped piece by piece. */
static void mapped(CUdevice dev, size_t n, size_t piece, CUmemAllocationHandleType types,
                   const char *label)
{
    CUmemAllocationProp prop = prop_of(dev, types);
    CUmemAccessDesc acc = access_of(dev);
    CUdeviceptr base = 0;
    if (reserve(&base, n, 0, 0, 0) != CUDA_SUCCESS) {
        printf("%s.%zuMiB=reserve failed\n", label, n / MIB);
        return;
    }
    double c[ROUNDS], m[ROUNDS], s[ROUNDS], u[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        double tc = 0, tm = 0;
        for (size_t off = 0; off < n; off += piece) {
            CUmemGenericAllocationHandle h;
            double t0 = now_us();
            CUresult e = create(&h, piece, &prop, 0);
            double t1 = now_us();
            if (e != CUDA_SUCCESS) {
                printf("%s.%zuMiB=create failed %d\n", label, n / MIB, (int)e);
                addr_free(base, n);
                return;
            }
            map(base + off, piece, 0, h, 0);
            release(h);
            tm += now_us() - t1;
            tc += t1 - t0;
        }
        double t2 = now_us();
        set_access(base, n, &acc, 1);
        double t3 = now_us();
        memset8(base, 1, n);
        sync_();
        double t4 = now_us();
        for (size_t off = 0; off < n; off += piece)
            unmap(base + off, piece);
        u[r] = now_us() - t4;
        c[r] = tc;
        m[r] = tm;
        s[r] = t3 - t2;
    }
    addr_free(base, n);
    printf("%s.%zuMiB.piece%zuMiB create_us=%.1f map_release_us=%.1f access_us=%.1f "
           "unmap_us=%.1f\n", label, n / MIB, piece / MIB, median(c, ROUNDS), median(m, ROUNDS),
           median(s, ROUNDS), median(u, ROUNDS));
}

/* What the driver answers about mapped memory: a legacy IPC export, a file-descriptor export,
 * and the range of an address inside a mapping of two handles. */
static void answers(CUdevice dev, size_t page)
{
    CUmemAccessDesc acc = access_of(dev);
    CUdeviceptr base = 0;
    reserve(&base, 4 * page, 0, 0, 0);
    CUmemGenericAllocationHandle h[2];
    CUmemAllocationProp plainp = prop_of(dev, CU_MEM_HANDLE_TYPE_NONE);
    CUmemAllocationProp fdp = prop_of(dev, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    printf("create.none=%d ", (int)create(&h[0], page, &plainp, 0));
    printf("create.fd=%d\n", (int)create(&h[1], page, &fdp, 0));
    map(base, page, 0, h[0], 0);
    map(base + page, page, 0, h[1], 0);
    set_access(base, 2 * page, &acc, 1);
    CUipcMemHandle ih;
    printf("ipc_get.mapped=%d\n", (int)ipc_get(&ih, base));
    int fd = -1;
    if (export_ != NULL) {
        printf("export_fd.none=%d ",
               (int)export_(&fd, h[0], CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
        fd = -1;
        CUresult e = export_(&fd, h[1], CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
        printf("export_fd.fd=%d fd_valid=%d\n", (int)e, fd >= 0);
        if (fd >= 0)
            close(fd);
    } else {
        printf("export_fd=missing\n");
    }
    CUmemGenericAllocationHandle again;
    if (retain_handle != NULL &&
        retain_handle(&again, (void *)(base + page + 4096)) == CUDA_SUCCESS) {
        printf("retain_handle.inside=0 ");
        release(again);
    } else {
        printf("retain_handle.inside=%s ", retain_handle ? "failed" : "missing");
    }
    CUdeviceptr rb = 0;
    size_t rs = 0;
    CUresult e = range(&rb, &rs, base + page + 4096);
    printf("range.inside=%d base_offset=%lld size=%zu\n", (int)e, (long long)(rb - base), rs);
    release(h[0]);
    release(h[1]);
    unmap(base, page);
    unmap(base + page, page);
    addr_free(base, 4 * page);
    CUdeviceptr p = 0;
    mem_alloc(&p, 8 * page);
    e = range(&rb, &rs, p + page);
    printf("range.alloc=%d base_offset=%lld size=%zu\n", (int)e, (long long)(rb - p), rs);
    printf("ipc_get.alloc_inside=%d\n", (int)ipc_get(&ih, p + page));
    mem_free(p);
}

int main(void)
{
    CUdevice dev;
    CUcontext ctx;
    void *lib = probe_open(&dev, &ctx);
    LOAD(mem_alloc, "cuMemAlloc_v2");
    LOAD(mem_free, "cuMemFree_v2");
    LOAD(reserve, "cuMemAddressReserve");
    LOAD(addr_free, "cuMemAddressFree");
    LOAD(create, "cuMemCreate");
    LOAD(release, "cuMemRelease");
    LOAD(map, "cuMemMap");
    LOAD(unmap, "cuMemUnmap");
    LOAD(set_access, "cuMemSetAccess");
    LOAD(granularity, "cuMemGetAllocationGranularity");
    LOAD(ipc_get, "cuIpcGetMemHandle");
    LOAD_OPTIONAL(export_, "cuMemExportToShareableHandle");
    LOAD_OPTIONAL(retain_handle, "cuMemRetainAllocationHandle");
    LOAD(range, "cuMemGetAddressRange_v2");
    LOAD(memset8, "cuMemsetD8_v2");
    LOAD(sync_, "cuCtxSynchronize");
    CUmemAllocationProp p0 = prop_of(dev, CU_MEM_HANDLE_TYPE_NONE);
    size_t page = 0;
    granularity(&page, &p0, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    printf("granularity=%zu\n", page);
    if (page == 0)
        return 1;
    static const size_t sizes[] = {2, 4, 20, 64, 256};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        plain(sizes[i] * MIB);
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        size_t n = sizes[i] * MIB;
        mapped(dev, n, page, CU_MEM_HANDLE_TYPE_NONE, "pages");
        if (n > page)
            mapped(dev, n, n, CU_MEM_HANDLE_TYPE_NONE, "whole");
        mapped(dev, n, n, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, "whole_fd");
    }
    answers(dev, page);
    return 0;
}
