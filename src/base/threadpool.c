/* threadpool.c — persistent worker threads (see threadpool.h).
 *
 * A job is nth tasks (ith = 0..nth-1). The caller publishes fn/arg, resets `next` (the next
 * unclaimed task) and `done`, then bumps `gen`. Every thread, the caller included, claims tasks
 * with an atomic increment of `next` until none are left; a thread that arrives after the last
 * claim does nothing, so the job never waits for a thread that has not started. The caller then
 * waits for `done` to reach nth.
 *
 * Waiting: a worker spins on `gen` for up to SPIN_NS (only while fewer than usable-CPUs-minus-one
 * workers spin), then sleeps on the futex `gen`; the caller spins on `done` for up to SPIN_NS,
 * then sleeps on the futex `done`. Sleeping gives the CPU to whichever thread holds the work
 * (on a shared or oversubscribed machine that may be the thread we wait for). A worker counts
 * itself in `sleepers` before it sleeps; the next job's caller takes the count and wakes that
 * many once (a woken worker may wait for a CPU: later jobs neither wake it again nor wait for
 * it). The counts and the futex values close the lost-wake-up races (seq_cst on both sides). */
#include "base/threadpool.h"

#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/cpus.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield")
#else
#define cpu_relax() ((void)0)
#endif

/* How long a waiting thread spins before it sleeps: longer than the gap between the small jobs
 * of a decode step, short enough that an idle pool costs nothing measurable. */
#define SPIN_NS 50000
#define SPINS_PER_CLOCK_CHECK 16

struct e0_pool {
    int n;             /* threads, the caller included; also the tasks per job (nth) */
    int max_spinners;  /* workers allowed to spin at once */
    int n_started;     /* worker threads created (1..n_started-1 are valid in threads[]) */
    pthread_t *threads;
    e0_task_fn fn;     /* the current job: written before `next` is reset */
    void *arg;
    _Alignas(64) _Atomic uint32_t next; /* next unclaimed task (>= n: none left) */
    _Alignas(64) _Atomic uint32_t done; /* tasks finished; futex word of the caller */
    _Atomic uint32_t caller_sleeping;
    _Alignas(64) _Atomic uint32_t gen;  /* bumped per job and at stop; futex word of the workers */
    _Atomic int sleepers; /* workers gone to sleep since the last wake-up */
    _Atomic int spinners;
    _Atomic int stop;
};

static void futex_wait(_Atomic uint32_t *addr, uint32_t expected) {
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *addr, int n) {
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Spin while (*w == v) == equal, at most SPIN_NS. Returns the last value read. */
static uint32_t spin(_Atomic uint32_t *w, uint32_t v, bool equal) {
    int64_t deadline = 0;
    uint32_t cur;
    for (;;) {
        for (int i = 0; i < SPINS_PER_CLOCK_CHECK; i++) {
            cur = atomic_load_explicit(w, memory_order_acquire);
            if ((cur == v) != equal) return cur;
            cpu_relax();
        }
        int64_t t = now_ns();
        if (!deadline) deadline = t + SPIN_NS;
        else if (t >= deadline) return cur;
    }
}

/* Claim and run tasks of the current job until none are left. */
static void run_tasks(e0_pool *p) {
    const uint32_t n = (uint32_t)p->n;
    for (;;) {
        /* acquire: pairs with the caller's release of `next`, so fn/arg are the claimed job's */
        uint32_t i = atomic_fetch_add_explicit(&p->next, 1, memory_order_acquire);
        if (i >= n) return;
        p->fn(p->arg, (int)i, (int)n);
        if (atomic_fetch_add(&p->done, 1) + 1 == n && atomic_load(&p->caller_sleeping)) futex_wake(&p->done, 1);
    }
}

static void *worker(void *varg) {
    e0_pool *p = varg;
    for (;;) {
        uint32_t g = atomic_load_explicit(&p->gen, memory_order_acquire);
        if (atomic_load(&p->stop)) return NULL;
        run_tasks(p);
        /* wait for the next job (gen != g) */
        if (atomic_fetch_add(&p->spinners, 1) < p->max_spinners) spin(&p->gen, g, true);
        atomic_fetch_sub(&p->spinners, 1);
        if (atomic_load(&p->gen) == g) {
            atomic_fetch_add(&p->sleepers, 1); /* seq_cst; the caller that wakes us resets it */
            while (atomic_load(&p->gen) == g) futex_wait(&p->gen, g);
        }
    }
}

e0_pool *e0_pool_new(int n_threads) {
    /* the struct's hot words have cache lines of their own: 64-byte aligned memory */
    e0_pool *p = aligned_alloc(64, (sizeof *p + 63) / 64 * 64);
    if (!p) return NULL;
    memset(p, 0, sizeof *p);
    p->n = e0_threads_cap(n_threads);
    int usable = e0_usable_cpus();
    p->max_spinners = (usable < p->n ? usable : p->n) - 1;
    p->n_started = 1;
    atomic_init(&p->next, (uint32_t)p->n); /* no job yet: nothing to claim */
    atomic_init(&p->done, (uint32_t)p->n);
    p->threads = calloc((size_t)p->n, sizeof *p->threads);
    if (!p->threads) {
        free(p);
        return NULL;
    }
    for (int i = 1; i < p->n; i++) {
        if (pthread_create(&p->threads[i], NULL, worker, p) != 0) {
            e0_pool_free(p);
            return NULL;
        }
        p->n_started = i + 1;
    }
    return p;
}

void e0_pool_run(e0_pool *p, e0_task_fn fn, void *arg) {
    if (p->n == 1) {
        fn(arg, 0, 1);
        return;
    }
    const uint32_t n = (uint32_t)p->n;
    p->fn = fn;
    p->arg = arg;
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    atomic_store_explicit(&p->next, 0, memory_order_release);
    atomic_fetch_add(&p->gen, 1); /* seq_cst: pairs with the workers' sleepers increment */
    /* Wake the sleepers once: a woken worker may wait a while for a CPU, and the next jobs
     * must not pay for waking it again (nor wait for it: the caller takes its tasks). */
    int s = atomic_exchange(&p->sleepers, 0);
    if (s > 0) futex_wake(&p->gen, s);
    run_tasks(p);
    if (spin(&p->done, n, false) == n) return;
    atomic_store(&p->caller_sleeping, 1); /* seq_cst: pairs with the last task's check */
    uint32_t d;
    while ((d = atomic_load(&p->done)) != n) futex_wait(&p->done, d);
    atomic_store(&p->caller_sleeping, 0);
}

int e0_pool_size(const e0_pool *p) { return p->n; }

void e0_pool_free(e0_pool *p) {
    if (!p) return;
    atomic_store(&p->stop, 1);
    atomic_fetch_add(&p->gen, 1);
    futex_wake(&p->gen, INT_MAX);
    for (int i = 1; i < p->n_started; i++) pthread_join(p->threads[i], NULL);
    free(p->threads);
    free(p);
}
