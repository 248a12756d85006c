/* membw.c — memory read bandwidth: threads sum disjoint slices of a large buffer. */
#include "measure/membw.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/threadpool.h"
#include "base/util.h"

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

/* ---- disk ---- */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    int fd;
    size_t block;
    uint64_t n_blocks;
    _Atomic int next;
    int n_reads;
    _Atomic int failed;
} disk_task;

static void *disk_worker(void *arg) {
    disk_task *t = arg;
    void *buf = aligned_alloc(4096, t->block);
    if (!buf) {
        atomic_store(&t->failed, ENOMEM);
        return NULL;
    }
    int i;
    while ((i = atomic_fetch_add(&t->next, 1)) < t->n_reads) {
        /* a fixed pseudo-random permutation-ish sequence of block indexes */
        uint64_t z = (uint64_t)i * 0x9E3779B97F4A7C15ull;
        z ^= z >> 29;
        uint64_t off = (z % t->n_blocks) * t->block;
        ssize_t r = pread(t->fd, buf, t->block, (off_t)off);
        if (r < 0) atomic_store(&t->failed, errno);
    }
    free(buf);
    return NULL;
}

double e0_measure_disk_bandwidth(const char *path, size_t block, int n_threads, int n_reads, int *direct_used, e0_err *e) {
    block = (block + 4095) & ~(size_t)4095;
    int fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
    *direct_used = fd >= 0;
    if (fd < 0) fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return e0_fail(e, "cannot open %s: %s", path, strerror(errno)), 0;
    struct stat st;
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_size < block * 4) {
        close(fd);
        return e0_fail(e, "%s: too small to measure with %zu-byte reads", path, block), 0;
    }
    disk_task t = {.fd = fd, .block = block, .n_blocks = (uint64_t)st.st_size / block, .n_reads = n_reads};
    pthread_t th[64];
    if (n_threads > 64) n_threads = 64;
    double t0 = e0_now();
    int started = 0;
    for (int i = 0; i < n_threads; i++)
        if (pthread_create(&th[i], NULL, disk_worker, &t) == 0) started++;
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    double dt = e0_now() - t0;
    close(fd);
    if (!started) return e0_fail(e, "cannot start threads"), 0;
    if (atomic_load(&t.failed)) return e0_fail(e, "%s: read failed: %s", path, strerror(atomic_load(&t.failed))), 0;
    return (double)block * n_reads / dt;
}
