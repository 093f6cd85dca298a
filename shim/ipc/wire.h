/* The messages between a process that opens the cache's record of mapped memory and the one
 * that exported it (ipc/mapped.c), over a SOCK_SEQPACKET Unix socket: a request, a head, and
 * the mappings' descriptors in chunks, each acknowledged. docs/shim.md, "Interprocess memory",
 * describes the exchange. */
#ifndef CACHEALLOC_SHIM_IPC_WIRE_H
#define CACHEALLOC_SHIM_IPC_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Descriptors per message: below SCM_MAX_FD (253), and few enough that an importer near its
 * descriptor limit still takes a chunk, since it holds one chunk's at a time. */
#define CA_IPC_CHUNK 128

/* The most mappings one exported block may span: a 128 GiB block of 2 MiB pieces. Bounds what
 * either side lists or accepts, whatever the peer says. */
#define CA_IPC_MAX_PIECES 65536

/* The exporter's first answer. */
typedef struct ca_ipc_head {
    uint32_t status;       /* the exporter runtime's code; the rest is meaningful on success */
    uint32_t count;        /* mappings, 1 to CA_IPC_MAX_PIECES */
    uint64_t first_offset; /* the block's start from the first mapping's */
    uint64_t total;        /* the mappings' sizes added up: what the importer reserves */
} ca_ipc_head;

/* Then ceil(count / CA_IPC_CHUNK) of these, n descriptors attached to each; a status other
 * than success (no descriptors) ends the exchange. */
typedef struct ca_ipc_chunk {
    uint32_t status;
    uint32_t n;
    uint64_t size[CA_IPC_CHUNK]; /* each mapping's, whole: the driver maps a handle whole */
} ca_ipc_chunk;

/* After every chunk but the last, the importer answers the number of mappings received so
 * far, and the exporter sends no more until it has: no more than a chunk of descriptors is
 * ever in flight (Linux counts those against the sender's descriptor limit). */
typedef uint32_t ca_ipc_ack;

/* Whether a successful head may be acted on by an importer of a block of `size` bytes: a count
 * within bounds, a total this process can reserve, and the block inside it. */
bool ca_ipc_head_ok(const ca_ipc_head *h, uint64_t size);

/* Whether a successful chunk that came with fds descriptors is the next of an exchange that
 * awaits `want` mappings in it, with `room` bytes of the reservation left: want sizes and
 * descriptors, every size nonzero, and all of them within room. */
bool ca_ipc_chunk_ok(const ca_ipc_chunk *ch, int fds, uint32_t want, uint64_t room);

/* Sends len bytes at msg as one message with the n descriptors at fds attached (n at most
 * CA_IPC_CHUNK): 0, or -1 when it did not go. The caller keeps its descriptors. */
int ca_ipc_send(int sock, const void *msg, size_t len, const int *fds, int n);

/* Receives one message of exactly len bytes into msg and at most max descriptors into fds:
 * how many came, or -1 (with every descriptor that came closed) on any other message. */
int ca_ipc_recv(int sock, void *msg, size_t len, int *fds, int max);

/* Closes the n descriptors at fds. */
void ca_ipc_close_all(const int *fds, int n);

#endif
