/* threadpool.h — a persistent pool of worker threads for data-parallel kernels.
 *
 * e0_pool_run(pool, fn, arg) calls fn(arg, ith, nth) once for each ith in [0, nth), where nth is
 * the pool's size, and returns when all have finished. The calling thread takes part, and each
 * ith goes to whichever thread is free first: a worker that is slow to start (descheduled on a
 * busy machine) has its part done by the others instead of holding everyone up. Each ith runs
 * exactly once per call, so per-ith scratch buffers stay private. Workers are created once and
 * wait between jobs, spinning briefly (decode dispatches hundreds of tiny jobs back to back),
 * then sleeping on a futex; no more workers spin than there are CPUs to spare.
 *
 * The pool never has more threads than the CPUs the process may use (cpus.h: affinity mask,
 * cgroup CPU quota) unless E0_FORCE_THREADS=1 is set: e0_pool_size() tells how many it has. */
#ifndef E0_THREADPOOL_H
#define E0_THREADPOOL_H

typedef void (*e0_task_fn)(void *arg, int ith, int nth);
typedef struct e0_pool e0_pool;

/* NULL on failure; n_threads < 1 counts as 1; capped as above (silently: the CLI warns). */
e0_pool *e0_pool_new(int n_threads);
/* One dispatching thread at a time per pool. */
void e0_pool_run(e0_pool *p, e0_task_fn fn, void *arg);
int e0_pool_size(const e0_pool *p);
void e0_pool_free(e0_pool *p);

/* Split [0, n) into nth nearly equal parts; part ith is [*lo, *hi). */
static inline void e0_split(long n, int ith, int nth, long *lo, long *hi) {
    long base = n / nth, rem = n % nth;
    *lo = ith * base + (ith < rem ? ith : rem);
    *hi = *lo + base + (ith < rem ? 1 : 0);
}

#endif
