/* sd_share.c: what a device's capacity has left, and under SIMDEV_SHARED=<name> its sharing
 * with the other processes of that name, as processes share a real GPU. They meet in
 * /dev/shm/simdev.<uid>.<name>: one slot per process with its pid, start time and bytes used
 * per device, a copy of its d->used. Charges hold an exclusive flock on the file, so two
 * processes never both take the last free bytes. Whoever meets the slot of a dead process
 * clears it: a process that crashed gives its memory back, as on a GPU. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sd_internal.h"
#include "simdev.h"

#define SLOTS SIMDEV_SHARED_SLOTS

/* The layout is simdev.h's, so that tests can read the table. */
_Static_assert(SD_MAX_DEVICES == SIMDEV_MAX_DEVICES, "a slot has a word per device");

static struct simdev_shared_slot *slots; /* the mapped table; NULL while not sharing */
static struct simdev_shared_slot *mine;
static int fd = -1;
static pid_t attached;  /* who mapped it: a forked child must take a slot and a lock of its own */
static bool given_up;

/* Field 22 of /proc/<pid>/stat, the start time in clock ticks after boot; 0 when the process
 * is gone, a zombie (its memory is gone too) or /proc cannot be read. */
static uint64_t start_of(pid_t pid)
{
    char path[32], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int f = open(path, O_RDONLY | O_CLOEXEC);
    if (f < 0)
        return 0;
    ssize_t n = read(f, buf, sizeof buf - 1);
    close(f);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    /* The command name (field 2) may hold spaces and parentheses: count from its end. */
    char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
        return 0;
    p++;
    for (int field = 3; field < 22 && p; field++) /* p: the space before field `field` */
        p = strchr(p + 1, ' ');
    return p ? strtoull(p + 1, NULL, 10) : 0;
}

/* A reused pid has another start time; a zombie has none. */
static bool dead(const struct simdev_shared_slot *s)
{
    return (kill((pid_t)s->pid, 0) != 0 && errno == ESRCH) || start_of((pid_t)s->pid) != s->start;
}

/* Bytes of device dev that the other live processes use; clears the slots of the dead.
 * Under the file lock. */
static uint64_t others(int dev)
{
    uint64_t sum = 0;
    for (struct simdev_shared_slot *s = slots; s < slots + SLOTS; s++) {
        if (s == mine || !s->pid)
            continue;
        if (dead(s))
            memset(s, 0, sizeof *s);
        else
            sum += __atomic_load_n(&s->used[dev], __ATOMIC_RELAXED);
    }
    return sum;
}

static void lock_file(int op)
{
    while (flock(fd, op) != 0 && errno == EINTR)
        ;
}

static void detach(void)
{
    if (slots)
        munmap(slots, SLOTS * sizeof *slots);
    if (fd >= 0)
        close(fd);
    slots = mine = NULL;
    fd = -1;
}

/* Maps the table and takes a free slot, or one left by a dead process or by this pid before an
 * exec. Under the file lock. */
static const char *claim(void)
{
    struct stat st;
    size_t size = SLOTS * sizeof *slots;
    if (fstat(fd, &st) != 0 || st.st_uid != getuid())
        return "not this user's file";
    if (st.st_size == 0 && ftruncate(fd, (off_t)size) != 0)
        return strerror(errno);
    if (st.st_size != 0 && (size_t)st.st_size != size)
        return "a file of another layout";
    void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        return strerror(errno);
    slots = m;
    pid_t me = getpid();
    for (struct simdev_shared_slot *s = slots; s < slots + SLOTS; s++)
        if (!s->pid || s->pid == me || dead(s)) {
            memset(s, 0, sizeof *s);
            s->pid = me;
            s->start = start_of(me);
            mine = s;
            return NULL;
        }
    return "all 64 process slots are taken";
}

/* True while this process shares its devices; attaches at the first call (and again in a
 * forked child), or gives up for good with one line on stderr. Under sd_lock. */
static bool sharing(void)
{
    if (!sd_cfg.shared || given_up)
        return false;
    if (slots && attached == getpid())
        return true;
    detach();
    attached = getpid();
    char path[128];
    snprintf(path, sizeof path, "/dev/shm/simdev.%u.%s", (unsigned)getuid(), sd_cfg.shared);
    fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    const char *why = fd < 0 ? strerror(errno) : NULL;
    if (!why) {
        lock_file(LOCK_EX);
        why = claim();
        lock_file(LOCK_UN);
    }
    if (why) {
        fprintf(stderr, "simdevice: SIMDEV_SHARED: %s: %s; this process does not share its "
                "devices\n", path, why);
        detach();
        given_up = true;
        return false;
    }
    return true;
}

static void publish(const struct sd_device *d, size_t used)
{
    __atomic_store_n(&mine->used[d->id], (uint64_t)used, __ATOMIC_RELAXED);
}

/* What d has left for this process, given what live others use (0 unshared). */
static size_t room(const struct sd_device *d, uint64_t others_used)
{
    uint64_t taken = d->used + others_used;
    return taken < sd_cfg.memory ? sd_cfg.memory - taken : 0;
}

/* Checks and claims n more bytes of d for this process (contract in sd_internal.h). */
bool sd_dev_fits(struct sd_device *d, size_t n)
{
    if (!sharing())
        return n <= room(d, 0);
    lock_file(LOCK_EX);
    bool ok = n <= room(d, others(d->id));
    if (ok)
        publish(d, d->used + n);
    lock_file(LOCK_UN);
    return ok;
}

/* d's bytes that no live process uses. */
size_t sd_dev_free(const struct sd_device *d)
{
    if (!sharing())
        return room(d, 0);
    lock_file(LOCK_EX);
    size_t n = room(d, others(d->id));
    lock_file(LOCK_UN);
    return n;
}

/* Sets d's use: its counters, and this process's slot. */
static void set_used(struct sd_device *d, size_t used)
{
    d->used = used;
    d->c.reserved_bytes = used;
    if (used > d->c.peak_reserved_bytes)
        d->c.peak_reserved_bytes = used;
    if (sharing())
        publish(d, used);
}

/* Adds n bytes to d's use. */
void sd_dev_grow(struct sd_device *d, size_t n)
{
    set_used(d, d->used + n);
}

/* Takes n bytes off d's use. */
void sd_dev_shrink(struct sd_device *d, size_t n)
{
    set_used(d, d->used - n);
}
