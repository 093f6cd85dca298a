/* ipc_peer.h: the second process of an interprocess-memory test. The test runs its own
 * program again (/proc/self/exe) with a role and the 64-byte handle in hex on the command line,
 * waits for it, and reads its exit status; the exporter is alive all that time, as a real
 * driver needs. Header-only, for the sim and integration suites alike. */
#ifndef SIMDEV_IPC_PEER_H
#define SIMDEV_IPC_PEER_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define IPC_PEER_HANDLE 64

/* Writes the handle as 128 hex digits and a NUL into out. */
static inline void ipc_peer_hex(const void *handle, char out[2 * IPC_PEER_HANDLE + 1])
{
    const unsigned char *b = (const unsigned char *)handle;
    for (int i = 0; i < IPC_PEER_HANDLE; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/* Reads 128 hex digits back into a handle; 0 on success. */
static inline int ipc_peer_unhex(const char *hex, void *handle)
{
    unsigned char *b = (unsigned char *)handle;
    if (strlen(hex) != 2 * IPC_PEER_HANDLE)
        return -1;
    for (int i = 0; i < IPC_PEER_HANDLE; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1)
            return -1;
        b[i] = (unsigned char)v;
    }
    return 0;
}

/* Keeps only the LD_PRELOAD entries that do not name the cache (a sanitizer's runtime stays). */
static inline void ipc_peer_drop_shim(void)
{
    const char *pre = getenv("LD_PRELOAD");
    if (!pre)
        return;
    char kept[4096] = "", buf[4096];
    snprintf(buf, sizeof buf, "%s", pre);
    for (char *save = NULL, *tok = strtok_r(buf, ": ", &save); tok;
         tok = strtok_r(NULL, ": ", &save))
        if (!strstr(tok, "cachealloc") && strlen(kept) + strlen(tok) + 2 < sizeof kept) {
            if (kept[0])
                strcat(kept, ":");
            strcat(kept, tok);
        }
    setenv("LD_PRELOAD", kept, 1);
}

/* Runs this program again as `role` with the handle and an optional extra argument; with
 * `without_shim` the child runs without the preloaded cache. Returns the child's exit status,
 * or 128 + the signal that ended it. */
static inline int ipc_peer_run(const char *role, const void *handle, const char *extra,
                               int without_shim)
{
    char hex[2 * IPC_PEER_HANDLE + 1];
    ipc_peer_hex(handle, hex);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return 127;
    if (pid == 0) {
        if (without_shim)
            ipc_peer_drop_shim();
        char *argv[] = {(char *)"ipc-peer", (char *)role, hex, (char *)extra, NULL};
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    int st = 0;
    if (waitpid(pid, &st, 0) != pid)
        return 127;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#endif
