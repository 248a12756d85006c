/* common.c — the messages every edge0-bench subcommand prints: errors and progress lines on
 * stderr, each prefixed "edge0-bench: ". Below every other bench/ file: it uses none of them. */
#include <stdarg.h>
#include <stdio.h>

#include "bench.h"

int bench_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("edge0-bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

void bench_progress(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("edge0-bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    fflush(stderr);
    va_end(ap);
}
