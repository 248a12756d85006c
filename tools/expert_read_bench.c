/* expert_read_bench.c — micro benchmark of expert reads from a GGUF file: MB/s of a pool of
 * pread threads vs io_uring, through the page cache and with O_DIRECT, and of the expert cache
 * itself (experts.c acquire). The workload is what decode does: batches of n_expert_used random
 * experts of one random layer (3 matrix reads each), a batch finished before the next starts.
 * The page cache is dropped before each run (echo 3 > /proc/sys/vm/drop_caches when permitted,
 * else posix_fadvise(DONTNEED) on the file); the report says which.
 * Measured here (2026-11-29, 2-core VM, virtio disk /dev/vda ext4, the 17 GB Qwen3-30B-A3B-shape
 * Q4_K file, 48 batches of 8 experts of 2.65 MB = 1 GB per run, two rounds): every method is
 * disk-bound at 0.85-1.5 GB/s; pread pool x8 1.05/1.05 GB/s cached, 1.55/1.12 direct; io_uring
 * qd24 0.85/0.93 cached, 1.14/1.27 direct; e0_experts x8 1.02/0.99 cached, 1.15/0.92 direct. So
 * the cache uses a pread pool (io_uring gained nothing) of 8 threads. Batches of 2 experts
 * (BENCH_K=2, a decode step with a warm cache): pool x8 1.07-1.39 GB/s cached, 1.55-2.49 direct;
 * e0_experts x8 1.14-1.23 cached, 1.36-1.44 direct. Splitting matrices into 256 KiB reads
 * (BENCH_CHUNK=262144) halved cached throughput (0.5-0.65 GB/s) and changed direct by +-15%, so
 * each matrix is one read. Run-to-run noise on this shared VM is about +-30%.
 * Built by `make` into build/tools/expert_read_bench (the only program linked with liburing).
 * Environment: BENCH_ROUNDS (default 2), BENCH_METHODS (see want()), BENCH_NO_DROP (warm
 * cache: CPU cost only), BENCH_BIG_DST (pool reads to distinct touched buffers, like slots),
 * BENCH_POOL_PASS0 (an unmeasured pool pass first), BENCH_K (experts per batch, <= n_expert_used),
 * BENCH_CHUNK (pool/uring: split each matrix into reads of this many bytes).
 *   ./build/expert_read_bench MODEL.gguf [n_batches [threads,...]]   (default n_layer batches = one decode token; 4,8,16) */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/experts.h"
#include "quant/quant.h"

#define ALIGN 4096

typedef struct range {
    uint64_t off;
    size_t len;
} range;

static const e0_model *M;
static range *R;          /* all reads, batch after batch */
static int n_batch, per_batch; /* reads per batch = 3 * k (more with BENCH_CHUNK) */
static int K_batch;            /* experts per batch: n_expert_used, or BENCH_K */
static size_t chunk;           /* BENCH_CHUNK: split each matrix read into reads of this many bytes */
static size_t max_len;
static const char *drop_how = "?";
static uint8_t *big_dst; /* BENCH_BIG_DST: every read to its own place (touched first), like slots */

static void drop_cache(int fd) {
    if (getenv("BENCH_NO_DROP")) { /* measure reads from a warm page cache (CPU cost only) */
        drop_how = "none (BENCH_NO_DROP)";
        return;
    }
    FILE *f = fopen("/proc/sys/vm/drop_caches", "w");
    sync();
    if (f && fputs("3\n", f) >= 0 && fclose(f) == 0) {
        drop_how = "drop_caches";
        return;
    }
    if (f) fclose(f);
    drop_how = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0 ? "fadvise(DONTNEED)" : "none";
}

/* BENCH_METHODS: comma-separated names among pool, uring, cache (methods) and cached, direct
 * (modes); with none of a kind named, all of that kind run. */
static bool named(const char *list, const char *w) {
    size_t n = strlen(w);
    for (const char *p = list; (p = strstr(p, w)); p += n)
        if ((p == list || p[-1] == ',') && (p[n] == ',' || !p[n])) return true;
    return false;
}
static bool want(const char *what) {
    const char *m = getenv("BENCH_METHODS");
    if (!m) return true;
    bool mode = !strcmp(what, "cached") || !strcmp(what, "direct");
    bool any = mode ? !named(m, "cached") && !named(m, "direct")
                    : !named(m, "pool") && !named(m, "uring") && !named(m, "cache");
    return any || named(m, what);
}

static uint8_t *aligned(size_t n) {
    void *p = NULL;
    return posix_memalign(&p, ALIGN, n) ? NULL : p;
}

/* One read; direct: the covering aligned range. Returns bytes of the exact range or -1. */
static int do_pread(int fd, bool direct, uint8_t *buf, const range *r) {
    uint64_t off = r->off;
    size_t len = r->len;
    if (direct) {
        uint64_t a0 = off & ~(uint64_t)(ALIGN - 1);
        len = ((off + len - a0) + ALIGN - 1) & ~(size_t)(ALIGN - 1);
        off = a0;
    }
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(fd, buf + got, len - got, (off_t)(off + got));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return direct && n == 0 ? 0 : -1;
        got += (size_t)n;
    }
    return 0;
}

/* ---- pread pool: the threads take the reads of a batch; the batch ends when all are done ---- */
typedef struct pool {
    int fd;
    bool direct;
    int n_threads;
    pthread_mutex_t mu;
    pthread_cond_t cv, done;
    int batch, next, left; /* current batch, next read in it, reads not finished */
    bool stop;
    int errors;
} pool;

static void *pool_main(void *arg) {
    pool *p = arg;
    uint8_t *buf = aligned(max_len + 2 * ALIGN);
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->next >= per_batch) pthread_cond_wait(&p->cv, &p->mu);
        if (p->stop) break;
        size_t ri = (size_t)p->batch * per_batch + p->next++;
        const range *r = &R[ri];
        pthread_mutex_unlock(&p->mu);
        int rc = do_pread(p->fd, p->direct, big_dst ? big_dst + ri * (max_len + 2 * ALIGN) : buf, r);
        pthread_mutex_lock(&p->mu);
        if (rc) p->errors++;
        if (--p->left == 0) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    free(buf);
    return NULL;
}

static double run_pool(int fd, bool direct, int n_threads) {
    pool p = {.fd = fd, .direct = direct, .n_threads = n_threads, .next = per_batch};
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv, NULL);
    pthread_cond_init(&p.done, NULL);
    pthread_t th[64];
    for (int i = 0; i < n_threads; i++) pthread_create(&th[i], NULL, pool_main, &p);
    double t0 = e0_now();
    for (int b = 0; b < n_batch; b++) {
        pthread_mutex_lock(&p.mu);
        p.batch = b;
        p.next = 0;
        p.left = per_batch;
        pthread_cond_broadcast(&p.cv);
        while (p.left) pthread_cond_wait(&p.done, &p.mu);
        pthread_mutex_unlock(&p.mu);
    }
    double t = e0_now() - t0;
    pthread_mutex_lock(&p.mu);
    p.stop = true;
    pthread_cond_broadcast(&p.cv);
    pthread_mutex_unlock(&p.mu);
    for (int i = 0; i < n_threads; i++) pthread_join(th[i], NULL);
    if (p.errors) fprintf(stderr, "pool: %d read errors\n", p.errors);
    return t;
}

/* ---- io_uring: one ring, all reads of a batch submitted at once (queue depth = batch) ---- */
static double run_uring(int fd, bool direct, int depth) {
    struct io_uring ring;
    if (io_uring_queue_init((unsigned)depth, &ring, 0) < 0) return -1;
    uint8_t **bufs = calloc((size_t)depth, sizeof *bufs);
    for (int i = 0; i < depth; i++) bufs[i] = aligned(max_len + 2 * ALIGN);
    int errors = 0;
    double t0 = e0_now();
    for (int b = 0; b < n_batch; b++) {
        /* Submit up to `depth` reads; refill as completions arrive (short reads finished by pread). */
        int next = 0, inflight = 0;
        while (next < per_batch || inflight) {
            while (next < per_batch && inflight < depth) {
                const range *r = &R[(size_t)b * per_batch + next];
                uint64_t off = r->off;
                size_t len = r->len;
                if (direct) {
                    uint64_t a0 = off & ~(uint64_t)(ALIGN - 1);
                    len = ((off + len - a0) + ALIGN - 1) & ~(size_t)(ALIGN - 1);
                    off = a0;
                }
                int slot = next % depth;
                struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
                io_uring_prep_read(sqe, fd, bufs[slot], (unsigned)len, off);
                io_uring_sqe_set_data64(sqe, (uint64_t)next);
                next++, inflight++;
            }
            io_uring_submit(&ring);
            struct io_uring_cqe *cqe;
            if (io_uring_wait_cqe(&ring, &cqe) < 0) {
                errors++;
                break;
            }
            int idx = (int)io_uring_cqe_get_data64(cqe);
            const range *r = &R[(size_t)b * per_batch + idx];
            if (cqe->res < (int)r->len && !(direct && cqe->res > 0)) {
                /* Short or failed: finish it synchronously (rare; keeps the comparison honest). */
                if (do_pread(fd, direct, bufs[idx % depth], r)) errors++;
            }
            io_uring_cqe_seen(&ring, cqe);
            inflight--;
        }
    }
    double t = e0_now() - t0;
    io_uring_queue_exit(&ring);
    for (int i = 0; i < depth; i++) free(bufs[i]);
    free(bufs);
    if (errors) fprintf(stderr, "uring: %d read errors\n", errors);
    return t;
}

/* ---- the expert cache: acquire each batch (slots = n_expert_used, so every batch misses) ---- */
static int *batch_layer, *batch_ids;
static uint64_t build_workload(uint64_t seed);
static uint64_t next_seed = 1;
static double run_cache(int mode, int n_threads, const char **why, uint64_t *misses) {
    e0_err e = {0};
    int k = K_batch;
    e0_experts *x = e0_experts_new(M, &(e0_experts_params){.slots = M->hp.n_expert_used, .read_mode = mode, .n_io_threads = n_threads}, &e);
    if (!x) {
        fprintf(stderr, "%s\n", e.msg);
        return -1;
    }
    e0_experts_read_mode(x, why);
    e0_expert_ptrs ptr[256];
    double t = 0;
    /* The first passes touch every slot's memory (first-touch page faults are a one-time cost);
     * the last, on fresh experts and a dropped cache, is measured. */
    int passes = ((int)M->hp.n_expert_used + k - 1) / k + 1;
    for (int pass = 0; pass < passes; pass++) {
        build_workload(next_seed++);
        drop_cache(M->gguf->fd);
        e0_experts_reset_stats(x);
        double t0 = e0_now();
        for (int b = 0; b < n_batch; b++) {
            if (e0_experts_acquire(x, batch_layer[b], batch_ids + (size_t)b * k, k, ptr, &e) < 0) {
                fprintf(stderr, "%s\n", e.msg);
                break;
            }
            e0_experts_release(x, batch_layer[b]);
        }
        t = e0_now() - t0;
    }
    *misses = e0_experts_get_stats(x)->misses;
    e0_experts_free(x);
    return t;
}

/* Random batches (a fresh seed per run, so no run reads what an earlier one read: a host-side
 * cache under a virtual disk cannot favour later runs). Returns the bytes of one run. */
static uint64_t build_workload(uint64_t seed) {
    const e0_model *m = M;
    int k = K_batch, nr = 0;
    uint64_t rng = 0x2545F4914F6CDD1Dull * seed, bytes = 0;
    for (int b = 0; b < n_batch; b++) {
        int il = b % (int)m->hp.n_layer; /* layers in order, as decode visits them */
        batch_layer[b] = il;
        const e0_layer *L = &m->layers[il];
        for (int i = 0; i < k; i++) {
            int id, again;
            do {
                rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
                id = (int)(rng % (uint64_t)m->hp.n_expert);
                again = 0;
                for (int j = 0; j < i; j++) again |= batch_ids[(size_t)b * k + j] == id;
            } while (again);
            batch_ids[(size_t)b * k + i] = id;
            const e0_weight *w[3] = {&L->gate_exps, &L->up_exps, &L->down_exps};
            for (int q = 0; q < 3; q++) {
                uint64_t off = w[q]->t->offset + (uint64_t)id * w[q]->matrix_bytes;
                size_t len = w[q]->matrix_bytes, c = chunk ? chunk : len;
                for (size_t done = 0; done < len; done += c) {
                    range *r = &R[nr++];
                    r->off = off + done;
                    r->len = len - done < c ? len - done : c;
                    if (r->len > max_len) max_len = r->len;
                }
                bytes += len;
            }
        }
    }
    return bytes;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf [n_batches [threads,...]]\n", argv[0]);
        return 1;
    }
    n_batch = argc > 2 ? atoi(argv[2]) : 0;
    int threads[8] = {4, 8, 16}, n_thr = 3;
    if (argc > 3) {
        n_thr = 0;
        for (char *s = strtok(argv[3], ","); s && n_thr < 8; s = strtok(NULL, ",")) threads[n_thr++] = atoi(s);
    }
    e0_err e = {0};
    e0_model *m = e0_model_load(argv[1], &(e0_model_params){.experts_resident = false}, true, &e);
    if (!m || !e0_model_is_moe(m)) {
        fprintf(stderr, "%s\n", m ? "not a MoE model" : e.msg);
        return 1;
    }
    if (m->gguf->n_splits > 1) { /* its raw reads (build_workload) take offsets in one file */
        fprintf(stderr, "%s: a split model (%u files): this benchmark reads one file; merge it first\n", argv[1],
                m->gguf->n_splits);
        return 1;
    }
    M = m;
    if (n_batch <= 0) n_batch = (int)m->hp.n_layer; /* one decode token */
    int k = K_batch = getenv("BENCH_K") ? atoi(getenv("BENCH_K")) : (int)m->hp.n_expert_used;
    if (k < 1 || k > m->hp.n_expert_used) k = K_batch = (int)m->hp.n_expert_used;
    chunk = getenv("BENCH_CHUNK") ? (size_t)atoll(getenv("BENCH_CHUNK")) : 0;
    per_batch = 0; /* reads per expert must be the same in every layer */
    for (int il = 0; il < m->hp.n_layer; il++) {
        const e0_layer *L = &m->layers[il];
        const e0_weight *w[3] = {&L->gate_exps, &L->up_exps, &L->down_exps};
        int nr = 0;
        for (int q = 0; q < 3; q++) nr += chunk ? (int)((w[q]->matrix_bytes + chunk - 1) / chunk) : 1;
        if (il && nr != per_batch) {
            fprintf(stderr, "BENCH_CHUNK needs the same matrix sizes in every layer\n");
            return 1;
        }
        per_batch = nr;
    }
    per_batch *= k;
    R = calloc((size_t)n_batch * per_batch, sizeof *R);
    batch_layer = calloc((size_t)n_batch, sizeof *batch_layer);
    batch_ids = calloc((size_t)n_batch * k, sizeof *batch_ids);
    if (!R || !batch_layer || !batch_ids) return 1;
    uint64_t bytes = build_workload(next_seed);
    if (getenv("BENCH_BIG_DST")) {
        size_t n = (size_t)n_batch * per_batch * (max_len + 2 * ALIGN);
        big_dst = aligned(n);
        memset(big_dst, 1, n);
    }
    int fd = m->gguf->fd, fdd = open(argv[1], O_RDONLY | O_DIRECT);
    printf("%s: %d batches of %d experts (%d reads, %.2f MB each batch), %.1f MB in all, expert %.2f MB\n", argv[1],
           n_batch, k, per_batch, bytes / 1e6 / n_batch, bytes / 1e6, e0_expert_bytes(m, 0) / 1e6);
    printf("%-28s %8s %10s\n", "method", "seconds", "MB/s");
#define REPORT(name, expr)                                                                                    \
    do {                                                                                                      \
        double t_ = (expr); /* evaluated once: a second evaluation would read from a warm cache */            \
        printf("%-28s %8.3f %10.1f   (cache drop: %s)\n", name, t_, t_ > 0 ? bytes / 1e6 / t_ : 0, drop_how); \
    } while (0)
    char name[64];
    int rounds = getenv("BENCH_ROUNDS") ? atoi(getenv("BENCH_ROUNDS")) : 2;
    for (int round = 0; round < rounds; round++) {
        for (int ti = 0; ti < n_thr && want("pool"); ti++)
            for (int direct = 0; direct < 2; direct++) {
                if ((direct && fdd < 0) || !want(direct ? "direct" : "cached")) continue;
                snprintf(name, sizeof name, "pread pool x%d %s", threads[ti], direct ? "direct" : "cached");
                if (getenv("BENCH_POOL_PASS0")) { /* an unmeasured pass first, as for e0_experts */
                    build_workload(next_seed++);
                    drop_cache(fd);
                    run_pool(direct ? fdd : fd, direct, threads[ti]);
                }
                build_workload(next_seed++);
                drop_cache(fd);
                REPORT(name, run_pool(direct ? fdd : fd, direct, threads[ti]));
            }
        for (int direct = 0; direct < 2 && want("uring"); direct++) {
            if ((direct && fdd < 0) || !want(direct ? "direct" : "cached")) continue;
            snprintf(name, sizeof name, "io_uring qd%d %s", per_batch, direct ? "direct" : "cached");
            build_workload(next_seed++);
            drop_cache(fd);
            REPORT(name, run_uring(direct ? fdd : fd, direct, per_batch));
        }
        for (int ti = 0; ti < n_thr && want("cache"); ti++)
            for (int mode = 0; mode < 2; mode++) {
                if (!want(mode ? "direct" : "cached")) continue;
                const char *why = NULL;
                uint64_t misses = 0;
                double t = run_cache(mode, threads[ti], &why, &misses);
                snprintf(name, sizeof name, "e0_experts x%d %s", threads[ti], mode ? "direct" : "cached");
                double mb = (double)misses * (double)e0_expert_bytes(M, 0) / 1e6; /* what it read */
                printf("%-28s %8.3f %10.1f   (cache drop: %s)\n", name, t, t > 0 ? mb / t : 0, drop_how);
                printf("  (%llu of %d experts read%s%s)\n", (unsigned long long)misses, n_batch * K_batch,
                       why ? "; " : "", why ? why : "");
            }
    }
    drop_cache(fd);
    if (fdd >= 0) close(fdd);
    free(R);
    free(batch_layer);
    free(batch_ids);
    e0_model_free(m);
    return 0;
}
