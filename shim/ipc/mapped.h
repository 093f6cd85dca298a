/* Interprocess export of the cache's mapped memory (expandable segments), which the driver's
 * legacy export refuses: the handle is the cache's own record, opened by another process under
 * the cache with file descriptors the exporter hands over a Unix socket. Both doors' IPC calls
 * use it; docs/shim.md, "Interprocess memory", says what a program sees. */
#ifndef CACHEALLOC_SHIM_IPC_MAPPED_H
#define CACHEALLOC_SHIM_IPC_MAPPED_H

#include <stdbool.h>

#include "arena/arena.h"
#include "runtime.h"

/* The size of CUipcMemHandle and hipIpcMemHandle_t. */
#define CA_IPC_HANDLE_SIZE 64

/* Fills the 64 bytes at handle with the record of the live block `at` of an expandable range of
 * rt's arena, after checking that the driver exports its mappings and that they are at most
 * CA_IPC_MAX_PIECES (ipc/wire.h); starts the thread that answers importers at the first
 * export. codes.success, or the code to refuse with. */
ca_rt_err ca_ipc_mapped_export(ca_runtime *rt, const ca_place *at, void *handle);

/* Whether the 64 bytes at handle are the cache's record rather than the driver's. */
bool ca_ipc_mapped_is_record(const void *handle);

/* Whether the record at handle was made by this very process (which the driver refuses to open
 * its own exports in). */
bool ca_ipc_mapped_is_own(const void *handle);

/* Maps the block a record names into the current device of this process and gives its address
 * (the block's start) in *out. codes.success, or the code of what failed; nothing is left
 * mapped on failure. */
ca_rt_err ca_ipc_mapped_open(ca_runtime *rt, const void *handle, void **out);

/* Unmaps what ca_ipc_mapped_open mapped at p: true with *e the result, false when p is not such
 * an address (the driver's own import, then). */
bool ca_ipc_mapped_close(ca_runtime *rt, void *p, ca_rt_err *e);

#endif
