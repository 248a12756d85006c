/* strbuf.c — a growing text buffer for the Markdown and SVG renderers. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"

void sb_printf(strbuf *b, const char *fmt, ...) {
    if (b->oom) return;
    for (;;) {
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
        size_t ncap = b->cap ? b->cap * 2 : 4096;
        while (ncap < b->len + (size_t)n + 1) ncap *= 2;
        char *np = realloc(b->p, ncap);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = ncap;
        b->p[b->len] = 0;
    }
}

char *sb_take(strbuf *b) {
    if (b->oom) {
        free(b->p);
        return NULL;
    }
    if (!b->p) return calloc(1, 1);
    return b->p;
}
