/* One runtime (CUDA or HIP) as the shim sees it: the real functions it forwards to, the numeric
 * codes it answers with and its special stream handles. front.c and backend.c hold every piece
 * of logic and work on a descriptor only; cuda/descriptor.c (CUDA) and hip/hip.c each define one
 * descriptor.
 *
 * Handles (streams, events) are opaque void * here. The real prototypes take typed pointers
 * (struct CUstream_st *, struct ihipStream_t *); on every ABI the shim supports a pointer is a
 * pointer, and abi_check_*.c prove at build time that the shapes below match the real headers. */
#ifndef CACHEALLOC_SHIM_RUNTIME_H
#define CACHEALLOC_SHIM_RUNTIME_H

#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>

#include "arena/arena.h"
#include "base/ca_compiler.h"

/* cudaError_t and hipError_t are enums without negative values: compatible with unsigned int
 * under gcc and clang (asserted by the ABI checks). */
typedef unsigned int ca_rt_err;

/* The library is built with -fvisibility=hidden; this marks the symbols exports.map lets out. */
#define CA_EXPORT __attribute__((visibility("default")))

/* Code that runs before a sanitizer runtime has set itself up: AddressSanitizer looks up its
 * interceptors' real functions with dlsym(RTLD_NEXT, ...) during its own start, when its shadow
 * memory does not exist yet, and that dlsym is the shim's; ThreadSanitizer likewise. */
#define CA_BEFORE_SANITIZERS __attribute__((no_sanitize("address", "thread")))

/* The real functions. Identical shapes for both runtimes; NULL where a runtime lacks one. */
typedef struct ca_rt_fns {
    ca_rt_err (*malloc)(void **ptr, size_t size);
    ca_rt_err (*free)(void *ptr);
    ca_rt_err (*malloc_async)(void **ptr, size_t size, void *stream);
    ca_rt_err (*free_async)(void *ptr, void *stream);
    ca_rt_err (*get_device)(int *dev);
    /* Optional: what names the current device for a lane (lane.h), more cheaply than
     * get_device where it can: the current context, where the runtime has one (the CUDA
     * driver; NULL when none is current), else the ordinal plus one. No lane without it. */
    ca_rt_err (*current)(void **ctx);
    ca_rt_err (*set_device)(int dev);
    ca_rt_err (*event_create_with_flags)(void **ev, unsigned flags);
    ca_rt_err (*event_record)(void *ev, void *stream);
    ca_rt_err (*event_query)(void *ev);
    ca_rt_err (*event_synchronize)(void *ev);
    ca_rt_err (*event_destroy)(void *ev);
    ca_rt_err (*stream_wait_event)(void *stream, void *ev, unsigned flags);
    ca_rt_err (*device_synchronize)(void);
    ca_rt_err (*mem_get_info)(size_t *free_bytes, size_t *total_bytes);
    ca_rt_err (*get_last_error)(void);
    ca_rt_err (*peek_last_error)(void); /* optional: where queries leave "not ready" behind */
    ca_rt_err (*device_reset)(void);
    ca_rt_err (*stream_create)(void **stream);
    ca_rt_err (*stream_create_with_flags)(void **stream, unsigned flags);
    ca_rt_err (*stream_create_with_priority)(void **stream, unsigned flags, int priority);
    ca_rt_err (*stream_destroy)(void *stream);
    ca_rt_err (*stream_get_flags)(void *stream, unsigned *flags);
    ca_rt_err (*stream_query)(void *stream); /* optional: fences then skip idle streams */
    /* Optional: CUDA's per-thread-default-stream forms, HIP's flagged allocation. */
    ca_rt_err (*malloc_async_ptsz)(void **ptr, size_t size, void *stream);
    ca_rt_err (*free_async_ptsz)(void *ptr, void *stream);
    ca_rt_err (*ext_malloc_with_flags)(void **ptr, size_t size, unsigned flags);
    /* Optional: virtual memory management, for expandable segments. A device address
     * (CUdeviceptr) and an allocation handle (CUmemGenericAllocationHandle,
     * hipMemGenericAllocationHandle_t) are 64-bit values passed as a pointer is; properties
     * and access descriptors are the runtime's own structures (ca_rt_vmm_desc). */
    ca_rt_err (*mem_address_reserve)(void **ptr, size_t size, size_t align, void *addr,
                                     unsigned long long flags);
    ca_rt_err (*mem_address_free)(void *ptr, size_t size);
    ca_rt_err (*mem_create)(void **handle, size_t size, const void *prop,
                            unsigned long long flags);
    ca_rt_err (*mem_release)(void *handle);
    ca_rt_err (*mem_map)(void *ptr, size_t size, size_t offset, void *handle,
                         unsigned long long flags);
    ca_rt_err (*mem_unmap)(void *ptr, size_t size);
    ca_rt_err (*mem_set_access)(void *ptr, size_t size, const void *desc, size_t count);
    ca_rt_err (*mem_get_granularity)(size_t *granularity, const void *prop, int option);
    /* Optional: mapped memory shared with another process (ipc/mapped.c) by a POSIX file
     * descriptor, handle type 1 in both runtimes. */
    ca_rt_err (*mem_retain_handle)(void **handle, void *addr);
    ca_rt_err (*mem_export_handle)(void *shareable, void *handle, int type,
                                   unsigned long long flags);
    ca_rt_err (*mem_import_handle)(void **handle, void *os_handle, int type);
    /* Optional: page-locked host memory (host_front.c), the driver's or runtime's own calls. */
    ca_rt_err (*host_alloc)(void **ptr, size_t size, unsigned flags);
    ca_rt_err (*host_free)(void *ptr);
    /* Optional, HIP's door: the address queries it answers for the cache's blocks. */
    ca_rt_err (*mem_get_address_range)(void **base, size_t *size, void *ptr);
    ca_rt_err (*mem_ptr_get_info)(void *ptr, size_t *size);
    /* The current device's ordinal, as a VMM property names it (a context's device). */
    ca_rt_err (*device_ordinal)(int *dev);
    /* Optional: a device's attribute (its ordinal; codes in ca_runtime.pci_attrs) and UUID
     * (16 bytes; CUDA only: ROCm's is a string of its own), for the statistics' labels. */
    ca_rt_err (*device_attribute)(int *value, int attr, int ordinal);
    ca_rt_err (*device_uuid)(void *uuid, int ordinal);
    /* Optional, HIP's door: the program's peer access calls, which it wraps (the CUDA door
     * wraps the driver's, whose real functions cuda/served.c holds). */
    ca_rt_err (*device_enable_peer)(int peer, unsigned flags);
    ca_rt_err (*device_disable_peer)(int peer);
    /* Optional, stream capture (capture.c): whether a stream captures (the per-thread form
     * too), and HIP's begin and end, which its door wraps. */
    ca_rt_err (*stream_is_capturing)(void *stream, unsigned *status);
    ca_rt_err (*stream_is_capturing_ptsz)(void *stream, unsigned *status);
    ca_rt_err (*stream_begin_capture)(void *stream, unsigned mode);
    ca_rt_err (*stream_end_capture)(void *stream, void **graph);
} ca_rt_fns;

/* A runtime's allocation property for pinned device memory of one device, in its own layout
 * (CUmemAllocationProp is 32 bytes; HIP's orders its fields otherwise). */
typedef struct ca_rt_vmm_desc {
    _Alignas(8) unsigned char prop[64];
} ca_rt_vmm_desc;

/* An access descriptor, which CUDA (CUmemAccessDesc) and HIP (hipMemAccessDesc) lay out alike,
 * with the same constants: abi_check_cuda.c and abi_check_hip.c prove both against the real
 * headers, so one builder (backend.c) serves both doors. */
typedef struct ca_rt_access_desc {
    struct {
        int type, id;
    } location;
    int flags;
} ca_rt_access_desc;
#define CA_RT_LOCATION_DEVICE 1
#define CA_RT_ACCESS_NONE 0
#define CA_RT_ACCESS_READWRITE 3
/* CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, hipMemHandleTypePosixFileDescriptor. */
#define CA_RT_HANDLE_POSIX_FD 1

/* Where a real function lives in ca_rt_fns and what the runtime calls it. */
typedef struct ca_rt_sym {
    size_t offset;  /* offsetof(ca_rt_fns, field) */
    const char *name;
    int required;
} ca_rt_sym;

/* The runtime's own numeric codes. */
typedef struct ca_rt_codes {
    ca_rt_err success;
    ca_rt_err invalid_value;
    ca_rt_err out_of_memory;
    ca_rt_err not_initialized; /* answered when the real runtime cannot be found */
    ca_rt_err not_ready;
    ca_rt_err invalid_device_pointer;
} ca_rt_codes;

typedef struct ca_runtime {
    /* Constant description, filled by cuda/descriptor.c / hip/hip.c. */
    const char *api;             /* "cuda" or "hip": the stats segment's API name          */
    const char *door;            /* for CACHEALLOC_VERBOSE: where the calls are served      */
    const char *real_what;       /* ... and what the real functions are ("driver")          */
    const char *(*found_how)(void); /* ... and how they were found (NULL: by symbol)        */
    const char *const *tool_envs; /* set by debugging tools that must see every allocation  */
    const ca_rt_sym *syms;       /* terminated by a NULL name; syms[0], the allocation
                                  * function, identifies the runtime's object              */
    int (*resolve)(struct ca_runtime *rt); /* fills fn its own way (the CUDA driver), returning
                                  * a CA_REAL_* code; NULL: found by syms (real.c)          */
    ca_rt_codes codes;
    void *legacy_stream;         /* handle meaning the legacy default stream to the runtime */
    void *per_thread_stream;     /* handle meaning the calling thread's default stream      */
    unsigned stream_nonblocking; /* the flag bit of a non-blocking stream                  */
    unsigned event_flags;        /* flags of the shim's own events (timing disabled)        */
    void (*vmm_desc)(int ordinal, ca_rt_vmm_desc *out); /* fills the VMM property        */
    int index;                   /* 0 for CUDA, 1 for HIP: per-runtime arrays by it    */
    int pci_attrs[3];            /* attribute codes of the PCI bus, device and domain       */
    /* Expandable segments when CACHEALLOC_EXPANDABLE is auto: on where the door exports their
     * blocks to other processes (ipc/mapped.c), since a default must not break IPC. */
    int expandable_default;
    /* The reuse contract when CACHEALLOC_REUSE is auto: sync where the runtime's documentation
     * promises its free's synchronization (HIP), safe where only practice does (CUDA). */
    ca_reuse_kind reuse_default;
    /* Optional, where memory belongs to a context (the CUDA driver): what a pinned block
     * belongs to, asked when it is pinned, and the wait of its free given that (host_front.c);
     * without them, the current device's fn.device_synchronize. */
    void *(*host_owner)(void);
    ca_rt_err (*host_wait)(struct ca_runtime *rt, void *owner);

    /* State, owned by init.c: filled once, then read without locks. */
    ca_rt_fns fn;
    ca_arena *arena;
    bool free_syncs;             /* CACHEALLOC_REUSE=sync: a plain free synchronizes its
                                  * device first (ca_free_synced), never kept on the lane   */
    struct ca_host_pool *_Atomic host_pool; /* pinned host memory, made at its first use */
    atomic_int ready;            /* 1 once fn and arena are usable                          */
    atomic_int passthrough;      /* 1: the runtime lacks a required function (or the arena
                                  * could not be made): fn holds what was found, calls go
                                  * straight to it, uncached                                */
    pthread_mutex_t init_lock;
    /* Programs built for per-thread default streams (ptsz_scan.c): found at the first call and
     * looked for again after every dlopen; each device then leaves the single-stream mode
     * at its first plain allocation. */
    atomic_int per_thread_default;
    atomic_uint scanned_gen;     /* ca_dlopen_gen when the loaded objects were last scanned */
    atomic_ullong ptd_devices;   /* devices already told                                   */
    /* A sticky device error (illegal address and the like) one of the cache's own calls saw on
     * each device: the real, synchronizing free would return it, so the served ones do too,
     * until the device (context) is reset. */
    atomic_uint sticky[CA_MAX_DEVICES];
    /* 1 once the process exported one of the cache's blocks through this runtime (the CUDA
     * door, cuda/ipc.c): its plain allocations are then the real driver's own, each an
     * allocation that exports correctly. */
    atomic_int plain_dedicated;
} ca_runtime;

#define CA_RT_COUNT 2
enum { CA_RT_CUDA = 0, CA_RT_HIP = 1 }; /* the indexes */

#endif
