/* Text helpers shared by the reports: sizes, escaping, user names. */
#ifndef CACHEALLOC_TOP_FORMAT_H
#define CACHEALLOC_TOP_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* "512 B", "1.5 KiB", "12.0 MiB", "3.25 GiB": powers of 1024, into buf. Returns buf. */
char *top_human_size(uint64_t bytes, char *buf, size_t len);

/* Write s as a JSON string literal (quotes included). */
void top_json_string(FILE *out, const char *s);

/* Write s escaped for an OpenMetrics label value (backslash, quote, newline). */
void top_label_escape(FILE *out, const char *s);

/* The user name of uid, or the number, into buf. Returns buf. */
char *top_user_name(unsigned uid, char *buf, size_t len);

#endif
