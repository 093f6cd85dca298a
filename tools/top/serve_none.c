/* cachealloc-top built without libmicrohttpd: --serve says so. */
#include <stdio.h>

#include "serve.h"

int top_serve(const char *where, const char *dir)
{
    (void)where;
    (void)dir;
    fprintf(stderr, "cachealloc-top: --serve is not built in (libmicrohttpd was not found at "
                    "build time); use --prometheus\n");
    return 2;
}
