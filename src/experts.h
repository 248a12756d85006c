/* experts.h — the routed-expert cache: per layer, `slots` expert slots in memory, filled from the
 * GGUF file on demand (pread by a pool of I/O threads, or O_DIRECT with aligned buffers), so a
 * mixture-of-experts model whose experts do not fit in memory can run.
 *
 * One expert of layer L = its three matrices: gate_exps[:, :, x], up_exps[:, :, x] and
 * down_exps[:, :, x], each a contiguous byte range of the file (the tensors' expert stride).
 *
 *   e0_experts_acquire(x, L, ids, n, ptrs)  -> all n experts resident (reads what is missing,
 *                                              waits for it), pinned until release
 *   e0_experts_release(x, L)                -> they may be evicted again
 *   e0_experts_prefetch(x, L, ids, n)       -> start reading in the background, no wait
 *
 * Pointers stay valid and unchanged while pinned. Reads are bit-exact copies of the file bytes,
 * so computing with streamed experts gives exactly the results of resident ones. */
#ifndef E0_EXPERTS_H
#define E0_EXPERTS_H

#include <stdbool.h>
#include <stdint.h>

#include "model.h"

enum e0_expert_read { E0_READ_CACHED = 0, E0_READ_DIRECT = 1 };
enum e0_evict { E0_EVICT_LRU = 0, E0_EVICT_LFU = 1 };

typedef struct e0_experts_params {
    int64_t slots;          /* expert slots per layer, >= n_expert_used, <= n_expert */
    int read_mode;          /* e0_expert_read */
    int evict;              /* e0_evict */
    int n_io_threads;       /* 0 = default */
} e0_experts_params;

typedef struct e0_expert_ptrs {
    const uint8_t *gate, *up, *down;
} e0_expert_ptrs;

typedef struct e0_experts_stats {
    uint64_t bytes_read, reads, hits, misses, prefetched, prefetch_hits, evictions;
    double wait_seconds; /* time acquire spent waiting for reads */
} e0_experts_stats;

typedef struct e0_experts e0_experts;

e0_experts *e0_experts_new(const e0_model *m, const e0_experts_params *p, e0_err *e);
void e0_experts_free(e0_experts *x);
int e0_experts_acquire(e0_experts *x, int layer, const int *ids, int n, e0_expert_ptrs *out, e0_err *e);
void e0_experts_release(e0_experts *x, int layer);
void e0_experts_prefetch(e0_experts *x, int layer, const int *ids, int n);
const e0_experts_stats *e0_experts_get_stats(const e0_experts *x);
void e0_experts_reset_stats(e0_experts *x);
/* Bytes of one expert (gate + up + down) of a layer; the slot size. */
uint64_t e0_expert_bytes(const e0_model *m, int layer);
/* The read mode actually in use (direct falls back to cached when the file system refuses
 * O_DIRECT; *why says so). */
int e0_experts_read_mode(const e0_experts *x, const char **why);

#endif
