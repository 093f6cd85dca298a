/* An Accept header is a comma-separated list of media ranges, each with ;-separated
 * parameters, q among them (RFC 9110, section 12.5.1). Prometheus 2.42 asks, by default, for
 * OpenMetrics 1.0.0 (q 1), OpenMetrics 0.0.1 (q 0.75), text/plain 0.0.4 (q 0.5) and any type
 * (q 0.1). */
#include "negotiate.h"

#include <string.h>
#include <strings.h>

/* s[0..n) with blanks cut at both ends. */
static const char *trim(const char *s, size_t *n)
{
    while (*n && (*s == ' ' || *s == '\t')) {
        s++;
        (*n)--;
    }
    while (*n && (s[*n - 1] == ' ' || s[*n - 1] == '\t'))
        (*n)--;
    return s;
}

static int is(const char *s, size_t n, const char *word)
{
    return strlen(word) == n && strncasecmp(s, word, n) == 0;
}

/* A qvalue as RFC 9110 writes it: "0" or "1", then up to three decimals ("1" only with zeros);
 * -1 for anything else. */
static double qvalue(const char *s, size_t n)
{
    if (n == 0 || (s[0] != '0' && s[0] != '1') || (n > 1 && (s[1] != '.' || n > 5)))
        return -1.0;
    double q = s[0] - '0', scale = 0.1;
    for (size_t i = 2; i < n; i++, scale /= 10) {
        if (s[i] < '0' || s[i] > '9' || (s[0] == '1' && s[i] != '0'))
            return -1.0;
        q += (s[i] - '0') * scale;
    }
    return q;
}

/* One media range, range[0..n): its quality (1 unless q says otherwise; 0 for a bad q) and,
 * for OpenMetrics, whether its version is one this serves. */
static double quality(const char *range, size_t n, int *version_ok)
{
    double q = 1.0;
    *version_ok = 1;
    const char *end = range + n, *p = memchr(range, ';', n);
    while (p && p < end) {
        const char *next = memchr(p + 1, ';', (size_t)(end - p - 1));
        size_t len = (size_t)((next ? next : end) - (p + 1));
        const char *param = trim(p + 1, &len);
        const char *eq = memchr(param, '=', len);
        if (eq) {
            size_t kn = (size_t)(eq - param), vn = len - kn - 1;
            const char *key = trim(param, &kn), *val = trim(eq + 1, &vn);
            if (vn >= 2 && val[0] == '"' && val[vn - 1] == '"') { /* a quoted string */
                val++;
                vn -= 2;
            }
            if (is(key, kn, "q")) {
                q = qvalue(val, vn);
                if (q < 0.0)
                    return 0.0;
            } else if (is(key, kn, "version")) {
                *version_ok = is(val, vn, "1.0.0");
            }
        }
        p = next;
    }
    return q;
}

int top_wants_openmetrics(const char *accept)
{
    double om = 0.0, text = 0.0;
    const char *s = accept;
    while (s && *s) {
        const char *comma = strchr(s, ',');
        size_t n = comma ? (size_t)(comma - s) : strlen(s);
        size_t tn = n;
        const char *semi = memchr(s, ';', n);
        if (semi)
            tn = (size_t)(semi - s);
        const char *type = trim(s, &tn);
        int version_ok;
        double q = quality(s, n, &version_ok);
        if (is(type, tn, "application/openmetrics-text")) {
            if (version_ok && q > om)
                om = q;
        } else if (is(type, tn, "text/plain") || is(type, tn, "text/*") || is(type, tn, "*/*")) {
            if (q > text)
                text = q;
        }
        s = comma ? comma + 1 : NULL;
    }
    return om > 0.0 && om >= text;
}
