/* sysinfo.c — shared helpers of the probes: the "unavailable: <reason>" value, reading /proc and
 * /sys text files, and the "Key: N kB" parser. The probes live in sysinfo_<area>.c. */
#include "measure/sysinfo.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

json_t *e0_unavailable(const char *fmt, ...) {
    char buf[512];
    int k = snprintf(buf, sizeof buf, "unavailable: ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + k, sizeof buf - (size_t)k, fmt, ap);
    va_end(ap);
    return json_string(buf);
}

void e0_copy_str(char *dst, size_t cap, const char *src) {
    size_t n = strnlen(src, cap - 1);
    memcpy(dst, src, n);
    dst[n] = 0;
}

int e0_is_unavailable(const json_t *j) {
    return json_is_string(j) && !strncmp(json_string_value(j), "unavailable: ", 13);
}

char *e0_read_text(const char *path, size_t max, e0_err *e) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        e0_fail(e, "%s: %s", path, strerror(errno));
        return NULL;
    }
    /* Room for max + 1 bytes (and the NUL) so a file longer than max is detected. */
    size_t limit = max + 2, cap = 4096 < limit ? 4096 : limit, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        e0_fail(e, "%s: out of memory", path);
        return NULL;
    }
    for (;;) {
        if (n + 1 >= cap) {
            if (cap >= limit) { /* holds max + 1 bytes: too long */
                free(buf);
                close(fd);
                e0_fail(e, "%s: longer than %zu bytes", path, max);
                return NULL;
            }
            size_t ncap = cap * 2 < limit ? cap * 2 : limit;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                close(fd);
                e0_fail(e, "%s: out of memory", path);
                return NULL;
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int err = errno;
            free(buf);
            close(fd);
            e0_fail(e, "%s: %s", path, strerror(err));
            return NULL;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = 0;
    return buf;
}

int e0_parse_kb_field(const char *text, const char *key, uint64_t *bytes) {
    size_t klen = strlen(key);
    for (const char *p = text; p && *p;) {
        if (!strncmp(p, key, klen)) {
            const char *q = p + klen;
            while (*q == ' ' || *q == '\t') q++;
            if (*q < '0' || *q > '9') return -1;
            char *end;
            errno = 0;
            unsigned long long v = strtoull(q, &end, 10);
            if (errno || v > UINT64_MAX / 1024) return -1;
            while (*end == ' ') end++;
            if (strncmp(end, "kB", 2) != 0) return -1;
            *bytes = (uint64_t)v * 1024;
            return 0;
        }
        p = strchr(p, '\n');
        if (p) p++;
    }
    return -1;
}
