/* membw.h — measure the machine's memory read bandwidth (the bound for decode speed). */
#ifndef E0_MEMBW_H
#define E0_MEMBW_H
#include <stddef.h>
/* Best-of-`reps` read bandwidth in bytes/second over a buffer of `bytes`, with n_threads
 * threads. Returns 0 on allocation failure. */
double e0_measure_read_bandwidth(size_t bytes, int n_threads, int reps);
#endif
