/* Content negotiation of a scrape (the Prometheus exposition formats' rules). */
#ifndef CACHEALLOC_TOP_NEGOTIATE_H
#define CACHEALLOC_TOP_NEGOTIATE_H

/* Whether a scrape whose Accept header is accept (NULL: none) gets OpenMetrics 1.0.0 rather
 * than the text format 0.0.4: when it names application/openmetrics-text (version 1.0.0, or
 * none given) with a quality above 0 and at least that of any text/plain or wildcard range. */
int top_wants_openmetrics(const char *accept);

#endif
