/* threadpool.h — a persistent pool of worker threads for data-parallel kernels.
 *
 * e0_pool_run(pool, fn, arg) calls fn(arg, ith, nth) once on each of the nth threads (the
 * calling thread is ith = 0) and returns when all have finished. Workers are created once and
 * wait between jobs (spinning briefly, then sleeping), so a decode step can dispatch hundreds of
 * small jobs without creating threads or allocating. */
#ifndef E0_THREADPOOL_H
#define E0_THREADPOOL_H

typedef void (*e0_task_fn)(void *arg, int ith, int nth);
typedef struct e0_pool e0_pool;

e0_pool *e0_pool_new(int n_threads); /* NULL on failure; n_threads >= 1 */
void e0_pool_run(e0_pool *p, e0_task_fn fn, void *arg);
void e0_pool_free(e0_pool *p);

/* Split [0, n) into nth nearly equal parts; part ith is [*lo, *hi). */
static inline void e0_split(long n, int ith, int nth, long *lo, long *hi) {
    long base = n / nth, rem = n % nth;
    *lo = ith * base + (ith < rem ? ith : rem);
    *hi = *lo + base + (ith < rem ? 1 : 0);
}

#endif
