/* sd_exec.c: what a stream worker does when an op reaches the head of its queue. Device
 * memory is checked against the live allocations first: a bad access touches nothing and
 * faults the device, as a GPU would. */
#include <string.h>

#include "sd_internal.h"

/* Validates one side of an access (host pointers pass) and takes its device's read lock. */
static bool claim(struct sd_stream *s, int dev, const char *what, const void *p, size_t n,
                  struct sd_device **locked)
{
    *locked = NULL;
    if (dev < 0)
        return true;
    struct sd_device *owner = &sd_dev[dev];
    if (!sd_dev_check_access(s->dev, owner, what, (uintptr_t)p, n))
        return false;
    pthread_rwlock_rdlock(&owner->access);
    *locked = owner;
    return true;
}

static void exec_copy(struct sd_stream *s, struct sd_op *op)
{
    size_t n = op->u.copy.n;
    if (!n)
        return;
    struct sd_device *l1, *l2;
    pthread_mutex_lock(&sd_lock);
    if (s->dev->sticky) {
        pthread_mutex_unlock(&sd_lock);
        return;
    }
    if (!claim(s, op->u.copy.dst_dev, "write (memcpy destination)", op->u.copy.dst, n, &l1)) {
        pthread_mutex_unlock(&sd_lock);
        return;
    }
    if (!claim(s, op->u.copy.src_dev, "read (memcpy source)", op->u.copy.src, n, &l2)) {
        if (l1)
            pthread_rwlock_unlock(&l1->access);
        pthread_mutex_unlock(&sd_lock);
        return;
    }
    pthread_mutex_unlock(&sd_lock);
    memmove(op->u.copy.dst, op->u.copy.src, n);
    if (l2)
        pthread_rwlock_unlock(&l2->access);
    if (l1)
        pthread_rwlock_unlock(&l1->access);
}

static void exec_set(struct sd_stream *s, struct sd_op *op)
{
    size_t n = op->u.set.n;
    if (!n)
        return;
    struct sd_device *l;
    pthread_mutex_lock(&sd_lock);
    if (s->dev->sticky || !claim(s, op->u.set.dev, "memset", op->u.set.dst, n, &l)) {
        pthread_mutex_unlock(&sd_lock);
        return;
    }
    pthread_mutex_unlock(&sd_lock);
    memset(op->u.set.dst, op->u.set.value, n);
    if (l)
        pthread_rwlock_unlock(&l->access);
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
    case OP_NOP:
    case OP_EVENT:
    case OP_FREE: /* takes effect at completion, under the lock */
        break;
    }
}
