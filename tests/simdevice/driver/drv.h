/* drv.h: the simulated CUDA driver (libcuda.so.1) over the simulator's core. The ABI types it
 * needs are declared here because the simulator must build without the CUDA toolkit; values and
 * layouts are CUDA 13's (the sim suite checks them against the real cuda.h). */
#ifndef DRV_H
#define DRV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../core/sd.h"

#define API __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
typedef uintptr_t CUdeviceptr;
typedef void *CUstream;
typedef void *CUevent;
typedef struct drv_ctx *CUcontext;
typedef void *CUgraph;
typedef void *CUgraphExec;
typedef void *CUgraphNode;
/* What cuGraphInstantiateWithParams reads and writes. */
typedef struct {
    uint64_t flags;
    CUstream hUploadStream;
    CUgraphNode hErrNode_out;
    int result_out;
} CUDA_GRAPH_INSTANTIATE_PARAMS;
typedef struct { char bytes[16]; } CUuuid;
/* What cuMemCreate and cuMemGetAllocationGranularity read: pinned memory on a device. */
typedef struct {
    int type;
    int requested_handle_types;
    struct { int type, id; } location;
    void *win32_meta;
    unsigned char alloc_flags[8];
} CUmemAllocationProp;
/* The handle types of requested_handle_types and the shareable-handle calls: Linux has only
 * the POSIX descriptor (an int) without IMEX. */
enum { CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1 };

/* CUipcMemHandle: 64 opaque bytes, passed by value. */
typedef struct { char reserved[SD_IPC_HANDLE_SIZE]; } CUipcMemHandle;

/* A memory location: type 1 is a device, id its ordinal. */
typedef struct { int type, id; } CUmemLocation;
/* What cuMemPoolCreate reads: CUDA 13's CUmemPoolProps. */
typedef struct {
    int alloc_type;
    int handle_types;
    struct { int type, id; } location;
    void *win32_attrs;
    size_t max_size;
    unsigned short usage;
    unsigned char reserved[54];
} CUmemPoolProps;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_DEINITIALIZED = 4,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_MAP_FAILED = 205,
    CUDA_ERROR_CONTEXT_ALREADY_IN_USE = 216,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_NOT_READY = 600,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE = 708,
    CUDA_ERROR_CONTEXT_IS_DESTROYED = 709,
    CUDA_ERROR_NOT_SUPPORTED = 801,
    CUDA_ERROR_ILLEGAL_STATE = SD_EILLSTATE,
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = SD_ECAPUNSUP,
    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = SD_ECAPINVALID,
    CUDA_ERROR_STREAM_CAPTURE_MERGE = SD_ECAPMERGE,
    CUDA_ERROR_STREAM_CAPTURE_UNMATCHED = SD_ECAPUNMATCHED,
    CUDA_ERROR_STREAM_CAPTURE_UNJOINED = SD_ECAPUNJOINED,
    CUDA_ERROR_STREAM_CAPTURE_ISOLATION = SD_ECAPISOLATION,
    CUDA_ERROR_STREAM_CAPTURE_IMPLICIT = SD_ECAPIMPLICIT,
    CUDA_ERROR_CAPTURED_EVENT = SD_ECAPEVENT,
    CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD = SD_ECAPTHREAD,
};

/* The driver version this stand-in reports (CUDA 13.0). */
#define DRV_VERSION 13000

/* A context: the primary context of each device is a static object whose address never
 * changes (the runtime caches it); created contexts are heap objects. */
struct drv_ctx {
    uint32_t magic;
    int dev;
    bool primary;
    int refs;          /* primary: retain count; created: 1 until destroyed. Atomic: drv_enter
                        * reads it without the lock on every call */
    unsigned flags;
    uint64_t id;
    struct drv_kv *storage; /* context-local storage of the runtime's export table */
};

/* Any entry point, as stored in the export tables and the lookup table. */
typedef void (*drv_fn)(void);
/* A function pointer as the void * that cuGetProcAddress hands out (POSIX guarantees that a
 * function pointer fits a void *). Inline: the lookup table and the export tables both use it,
 * and neither file should depend on the other for it. */
static inline void *drv_fn_ptr(drv_fn f)
{
    void *p;
    memcpy(&p, &f, sizeof p);
    return p;
}

/* Device identity, also hashed by the runtime's integrity check. */
CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev);
CUresult cuDeviceGetAttribute(int *value, int attr, CUdevice dev);

/* Maps a core code to a CUresult (the core's bad-free and memcpy-kind codes differ). */
CUresult drv_ret(int rc);
/* Checks the driver is initialized and the thread has a live current context, and points the
 * core at it (device, owner of new allocations). CUDA_SUCCESS or the driver's error. */
CUresult drv_enter(void);
/* Like drv_enter, then runs the core's sticky-fault check. */
CUresult drv_enter_live(void);
/* For the calls NVIDIA's driver serves by their handle alone (frees, stream destruction): with
 * no current context, only checks the driver is initialized; else drv_enter (live: then
 * drv_enter_live). */
CUresult drv_enter_or_none(int live);
/* Returns the error from the enclosing entry point when the check `rc` fails. */
#define DRV_TRY(rc)          \
    do {                     \
        CUresult rc_ = (rc); \
        if (rc_)             \
            return rc_;      \
    } while (0)

/* True once cuInit succeeded. */
bool drv_initialized(void);
/* The calling thread's current context, or NULL. */
struct drv_ctx *drv_current(void);
/* True when c is a live context handle. */
bool drv_ctx_valid(const struct drv_ctx *c);
/* The primary context of a device (never NULL for a valid ordinal). */
struct drv_ctx *drv_primary(int dev);
/* Device count from the core (0 when SIMDEV_DEVICES=0). */
int drv_device_count(void);

/* The export table for a 16-byte id, or NULL. */
const void *drv_export_table(const unsigned char id[16]);

/* Looks a driver entry point up by base name, ABI version and per-thread flag. Returns
 * CUDA_SUCCESS with *fn set, or CUDA_ERROR_NOT_FOUND with *status 1 (not found) or 2 (version
 * not sufficient). */
CUresult drv_proc_lookup(const char *name, int version, bool per_thread, void **fn, int *status);

#endif
