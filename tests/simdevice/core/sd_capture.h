/* sd_capture.h: stream capture and graphs inside the core. A capture sequence records what its
 * streams are given into a graph of nodes instead of running it; a launch of an executable
 * graph queues the nodes on a stream. Everything here runs under sd_lock. */
#ifndef SD_CAPTURE_H
#define SD_CAPTURE_H

#include "sd_internal.h"

/* One node: the op a launch queues, and the nodes it depends on (always created before it, so
 * creation order is an order its dependencies allow). */
struct sd_gnode {
    struct sd_op *op;
    size_t index;
    size_t ndeps;
    struct sd_gnode **deps;
};

/* A set of nodes, grown by doubling: a stream's current dependencies, an event's. */
struct sd_nodeset {
    struct sd_gnode **v;
    size_t n, cap;
};

struct sd_graph {
    struct sd_nodeset nodes;
    bool capturing; /* its capture is under way: neither instantiated nor destroyed yet */
};

struct sd_capture {
    uint64_t id;
    int mode;
    pthread_t thread;            /* the thread that began it */
    struct sd_stream *origin;
    bool invalid;
    struct sd_graph *graph;
    struct sd_stream **streams;  /* every stream taking part, each holding a reference */
    size_t nstreams, capstreams;
    struct sd_capture *next;
};

/* A stream's part in a capture. */
struct sd_capstream {
    struct sd_capture *c;
    struct sd_nodeset tail;      /* what its next node depends on */
    void *edges;                 /* zeroed edge data for cuStreamGetCaptureInfo_v3 */
    size_t nedges;
};

/* An event whose latest record was made inside a capture: that capture and the nodes the
 * record stood after. */
struct sd_capmark {
    uint64_t id;
    struct sd_nodeset deps;
};

/* Capture rules (sd_capture.c; the begin, end and info calls are in sd_capture_api.c). */
/* Every capture under way, newest first. */
extern struct sd_capture *sd_captures;

/* The capture under way with this id, or NULL once it ended. */
struct sd_capture *sd_capture_by_id(uint64_t id);
/* Marks c invalid: its end answers SD_ECAPINVALID and returns no graph. */
void sd_capture_invalidate(struct sd_capture *c);
/* Whether the calling thread began c. */
bool sd_capture_begun_here(const struct sd_capture *c);
/* Ends c: its streams leave it (dropping their references) and it is forgotten. */
void sd_capture_finish(struct sd_capture *c);
/* Whether a blocking stream of d captures: the legacy stream would depend on its work. With
 * `invalidate`, those captures are invalidated. */
bool sd_capture_legacy_blocked(const struct sd_device *d, bool invalidate);
/* A potentially unsafe call of the calling thread (allocation, free, synchronization, query):
 * SD_ECAPUNSUP, after invalidating the captures that forbid it, when the thread's mode and the
 * captures under way forbid it; else SD_OK. */
int sd_capture_unsafe(void);
/* A synchronization of device d: SD_ECAPUNSUP, invalidating them, while streams of d capture. */
int sd_capture_device_sync(struct sd_device *d);
/* Work for stream s: SD_ECAPIMPLICIT, invalidating them, when s is the legacy stream and a
 * blocking stream of its device captures; else SD_OK. */
int sd_capture_legacy(struct sd_stream *s);
/* A host-side wait for or query of stream s: SD_ECAPUNSUP (invalidating) when s captures,
 * SD_ECAPIMPLICIT when s is the legacy stream beside a capture, else SD_OK. */
int sd_capture_stream_wait(struct sd_stream *s);
/* Op for stream s: when s captures, records it as a node (taking op; *taken) or answers the
 * capture's error; SD_ECAPIMPLICIT for the legacy stream beside a capture; else SD_OK with op
 * left to the caller. */
int sd_capture_take(struct sd_stream *s, struct sd_op *op, bool *taken);
/* Appends a node for op (taken) to the capture of s, after the stream's current dependencies;
 * the node becomes them. NULL when out of memory (op is then freed). */
struct sd_gnode *sd_capture_add(struct sd_capstream *cs, struct sd_op *op);
/* Joins stream s to capture c with dependencies deps (a fork). */
int sd_capture_join(struct sd_capture *c, struct sd_stream *s, const struct sd_nodeset *deps);
/* Stream s is being closed: it leaves its capture, which it invalidates (or ends, as origin). */
void sd_capture_stream_gone(struct sd_stream *s);

/* Events (sd_capture_event.c). */
/* Record of e on s: taken into the capture when s captures (*taken). */
int sd_capture_record(struct sd_event *e, struct sd_stream *s, bool *taken);
/* Query or synchronization of e: SD_ECAPEVENT when recorded in a capture under way, then the
 * unsafe-call rule; SD_OK otherwise (an event recorded in an ended capture counts as never
 * recorded). */
int sd_capture_event_use(struct sd_event *e);
/* Wait of stream s for e: the capture rules of joining, merging and isolation. *handled when
 * the wait was settled here (nothing to queue). */
int sd_capture_wait_event(struct sd_stream *s, struct sd_event *e, bool *handled);

/* Node sets (sd_capture_nodes.c). */
int sd_nodeset_add(struct sd_nodeset *set, struct sd_gnode *n);
int sd_nodeset_copy(struct sd_nodeset *dst, const struct sd_nodeset *src);
void sd_nodeset_free(struct sd_nodeset *set);
/* Forgets an event's capture record. */
void sd_capmark_free(struct sd_capmark *m);
/* Whether every node of `of` is one of `from` or an ancestor of one (in graph g). */
bool sd_nodeset_reaches(const struct sd_graph *g, const struct sd_nodeset *from,
                        const struct sd_nodeset *of);
/* A graph under capture. */
struct sd_graph *sd_graph_new(void);
/* Frees a graph and its nodes, dropping their references to graph memory. */
void sd_graph_free(struct sd_graph *g);
/* Registers a graph handle for the program (sd_graph.c). */
int sd_graph_publish(struct sd_graph *g);

/* Graph memory (sd_graph_mem.c, and its records from sd_gmem_execute on in sd_graph_mem_table.c):
 * an allocation node's memory is reserved at capture, for the graph's life, and accessible only
 * between its allocation and its free in stream order. */
/* Records an allocation node on capturing stream s: *p gets the reserved address. */
int sd_gmem_capture_alloc(struct sd_stream *s, size_t n, void **p);
/* Records a free node of graph memory a (on owner) on capturing stream s. */
int sd_gmem_capture_free(struct sd_stream *s, struct sd_device *owner, struct sd_alloc *a);
/* Frees graph memory a outside a capture: on stream s in stream order, or (s NULL) at once. */
int sd_gmem_free(struct sd_stream *s, struct sd_device *owner, struct sd_alloc *a);
/* A launch reached a memory node: (un)maps graph memory id. Takes and drops sd_lock. */
void sd_gmem_execute(const struct sd_op *op);
/* Accounts a launch's memory nodes at enqueue time (what the next free may take). */
void sd_gmem_launched(const struct sd_op *op);
/* Takes and drops a reference to graph memory id, held by each graph and executable graph with
 * a node for it; the last drop releases the reservation. */
void sd_gmem_ref(uint64_t id);
void sd_gmem_unref(uint64_t id);

#endif
