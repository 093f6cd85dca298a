/* sd_exec.c: what a stream worker does when an op reaches the head of its queue. Device
 * memory is checked against the live allocations and VMM mappings first: a bad access touches
 * nothing and faults the device, as a GPU would. */
#include <string.h>

#include "sd_capture.h"

/* One side of a memory access: a device id (or -1 for host memory), a name for the fault
 * line, the address, and whether it is written (read-only VMM mappings refuse writes). */
struct side {
    int dev;
    const char *what;
    const void *p;
    bool write;
};

/* Validates one side of an access (host pointers pass) and takes its device's read lock. */
static bool claim(struct sd_stream *s, const struct side *v, size_t n, struct sd_device **locked)
{
    *locked = NULL;
    if (v->dev < 0)
        return true;
    struct sd_device *owner = &sd_dev[v->dev];
    if (!sd_dev_check_access(s->dev, owner, v->what, (uintptr_t)v->p, n, v->write))
        return false;
    pthread_rwlock_rdlock(&owner->access);
    *locked = owner;
    return true;
}

static void release(struct sd_device **locked, int k)
{
    while (k-- > 0)
        if (locked[k])
            pthread_rwlock_unlock(&locked[k]->access);
}

/* Claims every side in order unless the stream's device is already faulted; on failure
 * releases what it took. Takes and drops sd_lock. */
static bool claim_all(struct sd_stream *s, const struct side *v, int k, size_t n,
                      struct sd_device **locked)
{
    pthread_mutex_lock(&sd_lock);
    bool ok = !s->dev->sticky;
    int got = 0;
    while (ok && got < k) {
        ok = claim(s, &v[got], n, &locked[got]);
        if (ok)
            got++;
    }
    if (!ok)
        release(locked, got);
    pthread_mutex_unlock(&sd_lock);
    return ok;
}

static void exec_copy(struct sd_stream *s, struct sd_op *op)
{
    size_t n = op->u.copy.n;
    const struct side v[2] = {
        {op->u.copy.dst_dev, "write (memcpy destination)", op->u.copy.dst, true},
        {op->u.copy.src_dev, "read (memcpy source)", op->u.copy.src, false},
    };
    struct sd_device *locked[2];
    if (!n || !claim_all(s, v, 2, n, locked))
        return;
    memmove(op->u.copy.dst, op->u.copy.src, n);
    release(locked, 2);
}

static void exec_set(struct sd_stream *s, struct sd_op *op)
{
    size_t n = op->u.set.n;
    const struct side v = {op->u.set.dev, "memset", op->u.set.dst, true};
    struct sd_device *locked;
    if (!n || !claim_all(s, &v, 1, n, &locked))
        return;
    memset(op->u.set.dst, op->u.set.value, n);
    release(&locked, 1);
}

void sd_op_execute(struct sd_stream *s, struct sd_op *op)
{
    switch (op->kind) {
    case OP_COPY:
        exec_copy(s, op);
        break;
    case OP_SET:
        exec_set(s, op);
        break;
    case OP_HOSTFN:
        op->u.hostfn.fn(op->u.hostfn.arg);
        break;
    case OP_CALLBACK: {
        pthread_mutex_lock(&sd_lock);
        int status = s->dev->sticky;
        pthread_mutex_unlock(&sd_lock);
        op->u.callback.cb(op->u.callback.handle, status, op->u.callback.arg);
        break;
    }
    case OP_GMEM:
        sd_gmem_execute(op);
        break;
    case OP_NOP:
    case OP_EVENT:
    case OP_FREE: /* takes effect at completion, under the lock */
        break;
    }
}
