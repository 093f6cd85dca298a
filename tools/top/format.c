#include "format.h"

#include <pwd.h>
#include <sys/types.h>

char *top_human_size(uint64_t bytes, char *buf, size_t len)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024) {
        snprintf(buf, len, "%u B", (unsigned)bytes);
        return buf;
    }
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 6) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, len, v < 10.0 ? "%.2f %s" : v < 100.0 ? "%.1f %s" : "%.0f %s", v, unit[u]);
    return buf;
}

void top_json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

void top_label_escape(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\')
            fputs("\\\\", out);
        else if (*s == '"')
            fputs("\\\"", out);
        else if (*s == '\n')
            fputs("\\n", out);
        else
            fputc(*s, out);
    }
}

char *top_user_name(unsigned uid, char *buf, size_t len)
{
    struct passwd pw, *res = NULL;
    char tmp[1024];
    if (getpwuid_r((uid_t)uid, &pw, tmp, sizeof tmp, &res) == 0 && res)
        snprintf(buf, len, "%s", res->pw_name);
    else
        snprintf(buf, len, "%u", uid);
    return buf;
}
