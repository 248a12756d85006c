/* strbuf.c — the growing text buffer (strbuf.h). */
#include "base/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for `need` bytes (NUL included); -1 (and oom) when it cannot be had. */
static int reserve(e0_strbuf *b, size_t need) {
    if (b->oom) return -1;
    if (need <= b->cap) return 0;
    size_t ncap = b->cap ? b->cap * 2 : 256;
    while (ncap < need) ncap *= 2;
    char *np = realloc(b->p, ncap);
    if (!np) {
        b->oom = 1;
        return -1;
    }
    if (!b->p) np[0] = 0;
    b->p = np;
    b->cap = ncap;
    return 0;
}

int e0_sb_add(e0_strbuf *b, const char *s, size_t n) {
    if (reserve(b, b->len + n + 1) < 0) return -1;
    if (n) memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
    return 0;
}

void e0_sb_printf(e0_strbuf *b, const char *fmt, ...) {
    for (;;) {
        if (b->oom) return;
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = 1;
            return;
        }
        if (b->p && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        if (reserve(b, b->len + (size_t)n + 1) < 0) return;
    }
}

char *e0_sb_take(e0_strbuf *b) {
    if (b->oom) {
        free(b->p);
        return NULL;
    }
    return b->p ? b->p : calloc(1, 1);
}
