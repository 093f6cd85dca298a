/* cachealloc-top --serve: the statistics of every process, scraped over HTTP by Prometheus. */
#ifndef CACHEALLOC_TOP_SERVE_H
#define CACHEALLOC_TOP_SERVE_H

/* Serve GET /metrics (and a page at /) on where, "[ADDR:]PORT" (ADDR an IPv4 address, a
 * bracketed IPv6 one or a host name; 127.0.0.1 when absent), with the segments of dir, until
 * SIGINT, SIGTERM or SIGHUP. The exit status: 0 after a signal, 1 when it cannot listen, 2
 * for a malformed where. */
int top_serve(const char *where, const char *dir);

#endif
