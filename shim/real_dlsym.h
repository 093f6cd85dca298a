/* The C library's own dlsym, behind the shim's interposed one. */
#ifndef CACHEALLOC_SHIM_REAL_DLSYM_H
#define CACHEALLOC_SHIM_REAL_DLSYM_H

typedef void *(*ca_dlsym_fn)(void *handle, const char *name);

/* The real dlsym (never the shim's hook); NULL only if the C library has none. */
ca_dlsym_fn ca_real_dlsym(void);

#endif
