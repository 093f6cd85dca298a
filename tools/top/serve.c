/* The exporter. libmicrohttpd parses HTTP and bounds what a client may cost: one polling
 * thread (epoll), a limit of connections in all and per client address (so that one client
 * cannot hold every connection), a memory limit per connection (which bounds the request line and
 * headers: past it the client gets 431), and a timeout that closes idle connections. Each
 * scrape reads the segments afresh, as --prometheus does; nothing is kept between scrapes, so
 * a process that ended leaves the output at the next one. The exporter writes nothing: it
 * neither removes dead processes' segments nor posts reclaim requests. A scan waits at most a
 * second in all for records a writer is inside, and never for a dead process's (seg_scan.c),
 * so neither a stopped process nor a crafted segment holds a scrape for long. */
#include "serve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "negotiate.h"
#include "report.h"
#include "seg_scan.h"

#define MAX_CONNECTIONS 256
#define MAX_PER_CLIENT 8 /* one client address: a scraper needs one or two */
#define CONNECTION_MEMORY (16 * 1024) /* request line, headers and MHD's own buffers */
#define IDLE_TIMEOUT_S 10

static const char INDEX_PAGE[] =
    "<!DOCTYPE html>\n<html><head><title>cachealloc exporter</title></head><body>\n"
    "<h1>cachealloc exporter</h1>\n<p>The GPU memory caches of the processes on this "
    "machine that run with libcachealloc.so: <a href=\"/metrics\">/metrics</a>.</p>\n"
    "</body></html>\n";

#define CT_OPENMETRICS "application/openmetrics-text; version=1.0.0; charset=utf-8"
#define CT_TEXT "text/plain; version=0.0.4; charset=utf-8"

/* Queue a response made from a static text. */
static enum MHD_Result answer(struct MHD_Connection *c, unsigned status, const char *type,
                              const char *body)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)body,
                                                             MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    enum MHD_Result rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result metrics(struct MHD_Connection *c, const char *dir)
{
    const char *accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
    int om = top_wants_openmetrics(accept);
    top_list l;
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    if (!out)
        return answer(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain", "out of memory\n");
    /* Bad segments are skipped silently here: a note a scrape would print every 15 s. Stale
     * segments are never removed: an exporter in another pid namespace than the processes
     * (a container without the host's) would take every live one for dead. */
    if (top_scan(dir, 0, 0, &l, NULL) != 0) {
        fclose(out);
        free(buf);
        return answer(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain",
                      "cannot read the statistics directory\n");
    }
    top_report_prometheus(out, &l, om);
    top_list_clear(&l);
    if (fclose(out) != 0) {
        free(buf);
        return answer(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain", "out of memory\n");
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(buf);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, om ? CT_OPENMETRICS : CT_TEXT);
    MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, MHD_HTTP_HEADER_ACCEPT);
    enum MHD_Result rc = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_size, void **state)
{
    (void)version;
    (void)upload_data;
    static int seen;
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return answer(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", "only GET is served\n");
    if (*state == NULL) { /* the headers are in; a body, if any, comes in later calls */
        *state = &seen;
        return MHD_YES;
    }
    if (*upload_size != 0) { /* a GET with a body: nothing here reads one */
        *upload_size = 0;
        return MHD_YES;
    }
    if (strcmp(url, "/metrics") == 0)
        return metrics(c, cls);
    if (strcmp(url, "/") == 0)
        return answer(c, MHD_HTTP_OK, "text/html; charset=utf-8", INDEX_PAGE);
    return answer(c, MHD_HTTP_NOT_FOUND, "text/plain", "not found: try /metrics\n");
}

/* where as "[ADDR:]PORT" into addr; 0, or -1 with one line on stderr. */
static int parse_listen(const char *where, struct sockaddr_storage *addr, socklen_t *alen)
{
    char host[256] = "127.0.0.1";
    const char *port = where;
    const char *colon = strrchr(where, ':');
    if (where[0] == '[') { /* [IPv6]:PORT */
        const char *close = strchr(where, ']');
        if (!close || close[1] != ':' || (size_t)(close - where - 1) >= sizeof host)
            goto bad;
        memcpy(host, where + 1, (size_t)(close - where - 1));
        host[close - where - 1] = '\0';
        port = close + 2;
    } else if (colon) {
        if (strchr(where, ':') != colon || (size_t)(colon - where) >= sizeof host ||
            colon == where)
            goto bad;
        memcpy(host, where, (size_t)(colon - where));
        host[colon - where] = '\0';
        port = colon + 1;
    }
    char *end;
    errno = 0;
    long p = strtol(port, &end, 10);
    if (errno || !(*port >= '0' && *port <= '9') || *end || p < 1 || p > 65535)
        goto bad;
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0 || !res) {
        fprintf(stderr, "cachealloc-top: --serve: cannot use address '%s': %s\n", host,
                gai_strerror(rc));
        return -1;
    }
    memcpy(addr, res->ai_addr, res->ai_addrlen);
    *alen = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
bad:
    fprintf(stderr, "cachealloc-top: --serve wants [ADDR:]PORT (a port from 1 to 65535; an "
                    "IPv6 address in brackets), not '%s'\n", where);
    return -1;
}

int top_serve(const char *where, const char *dir)
{
    struct sockaddr_storage addr;
    socklen_t alen = 0;
    if (parse_listen(where, &addr, &alen) != 0)
        return 2;
    char shown[INET6_ADDRSTRLEN + 16];
    char ip[INET6_ADDRSTRLEN] = "?";
    unsigned port;
    if (addr.ss_family == AF_INET6) {
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&addr;
        inet_ntop(AF_INET6, &a6->sin6_addr, ip, sizeof ip);
        port = ntohs(a6->sin6_port);
        snprintf(shown, sizeof shown, "[%s]:%u", ip, port);
    } else {
        struct sockaddr_in *a4 = (struct sockaddr_in *)&addr;
        inet_ntop(AF_INET, &a4->sin_addr, ip, sizeof ip);
        port = ntohs(a4->sin_port);
        snprintf(shown, sizeof shown, "%s:%u", ip, port);
    }
    /* The signals that stop the exporter are taken by this thread alone, with sigwait:
     * blocked before the server's thread starts, so that it inherits the mask. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN); /* a scraper that hangs up mid-answer */
    /* No MHD_USE_ERROR_LOG: a line per bad request would let any client fill the log. */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL;
    if (addr.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    errno = 0; /* what is left of the address lookup is not the server's reason */
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, (uint16_t)port, NULL, NULL, on_request, (void *)dir, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *)&addr, MHD_OPTION_CONNECTION_LIMIT, (unsigned)MAX_CONNECTIONS,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)MAX_PER_CLIENT,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_MEMORY,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_TIMEOUT_S, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "cachealloc-top: --serve: cannot listen on %s (%s)\n", shown,
                errno ? strerror(errno) : "the HTTP server did not start");
        return 1;
    }
    fprintf(stderr, "cachealloc-top: serving http://%s/metrics\n", shown);
    fflush(stderr);
    int sig = 0;
    while (sigwait(&stop, &sig) != 0) {
    }
    MHD_stop_daemon(d);
    fprintf(stderr, "cachealloc-top: stopped by signal %d\n", sig);
    return 0;
}
