/* The exporter's side of interprocess memory, as a server: the connections of a listening
 * socket, each answered on a thread of its own, so that an importer that stays silent or reads
 * slowly holds only its own connection (until the timeouts its answer sets), never the others. */
#ifndef CACHEALLOC_SHIM_IPC_SERVE_H
#define CACHEALLOC_SHIM_IPC_SERVE_H

/* Connections answered at once; more wait in the listening socket's backlog. Bounds the
 * exporter's threads and descriptors whatever the number of importers. */
#define CA_IPC_SERVING 8

/* Answers one connection; the server closes it afterwards. */
typedef void (*ca_ipc_answer_fn)(int c);

/* Starts a thread that accepts listener's connections for good and answers each with answer,
 * at most CA_IPC_SERVING at once; the threads take none of the program's signals. 0, or -1
 * when it cannot (the caller keeps the listener then). */
int ca_ipc_serve(int listener, ca_ipc_answer_fn answer);

#endif
