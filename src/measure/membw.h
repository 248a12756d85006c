/* membw.h — measure the machine's memory read bandwidth (the bound for decode speed). */
#ifndef E0_MEMBW_H
#define E0_MEMBW_H
#include <stddef.h>
/* Best-of-`reps` read bandwidth in bytes/second over a buffer of `bytes`, with n_threads
 * threads. Returns 0 on allocation failure. */
double e0_measure_read_bandwidth(size_t bytes, int n_threads, int reps);

/* Disk read bandwidth of `path` in bytes/second: n_reads reads of `block` bytes at random
 * block-aligned offsets, by n_threads threads in parallel, with O_DIRECT (so the page cache does
 * not flatter it; falls back to cached reads when refused, *direct_used says which). 0 on error
 * with *e filled. */
#include "base/util.h"
double e0_measure_disk_bandwidth(const char *path, size_t block, int n_threads, int n_reads, int *direct_used, e0_err *e);
#endif
