/* membw.c — memory read bandwidth: threads sum disjoint slices of a large buffer. */
#include "membw.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "threadpool.h"
#include "util.h"

typedef struct {
    const uint64_t *buf;
    size_t n;
    uint64_t sums[64];
} bw_task;

static void bw_worker(void *arg, int ith, int nth) {
    bw_task *t = arg;
    long lo, hi;
    e0_split((long)(t->n / 8), ith, nth, &lo, &hi);
    uint64_t a = 0, b = 0, c = 0, d = 0, e = 0, f = 0, g = 0, h = 0;
    for (long i = lo * 8; i < hi * 8; i += 8) {
        a += t->buf[i], b += t->buf[i + 1], c += t->buf[i + 2], d += t->buf[i + 3];
        e += t->buf[i + 4], f += t->buf[i + 5], g += t->buf[i + 6], h += t->buf[i + 7];
    }
    if (ith < 64) t->sums[ith] = a + b + c + d + e + f + g + h;
}

double e0_measure_read_bandwidth(size_t bytes, int n_threads, int reps) {
    size_t n = bytes / sizeof(uint64_t) / 8 * 8;
    uint64_t *buf = aligned_alloc(64, n * sizeof(uint64_t));
    e0_pool *pool = e0_pool_new(n_threads);
    if (!buf || !pool) {
        free(buf);
        e0_pool_free(pool);
        return 0;
    }
    for (size_t i = 0; i < n; i++) buf[i] = i;
    bw_task t = {buf, n, {0}};
    double best = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = e0_now();
        e0_pool_run(pool, bw_worker, &t);
        double dt = e0_now() - t0;
        double bw = (double)(n * sizeof(uint64_t)) / dt;
        if (bw > best) best = bw;
    }
    volatile uint64_t sink = t.sums[0];
    (void)sink;
    e0_pool_free(pool);
    free(buf);
    return best;
}
