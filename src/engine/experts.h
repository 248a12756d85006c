/* experts.h — the routed-expert cache: per layer, a few expert slots in memory, filled from the
 * GGUF file on demand (pread by a pool of I/O threads, or O_DIRECT with aligned buffers), so a
 * mixture-of-experts model whose experts do not fit in memory can run.
 *
 * One expert of layer L = its three matrices: gate_exps[:, :, x], up_exps[:, :, x] and
 * down_exps[:, :, x], each a contiguous byte range of the file (the tensors' expert stride).
 *
 *   e0_experts_acquire(x, L, ids, n, ptrs)  -> all n experts resident (reads what is missing,
 *                                              waits for it), pinned until release
 *   e0_experts_acquire_begin(x, L, ids, n)  -> the same without waiting: pinned, missing ones
 *   e0_experts_take_ready(x, L, ids, n, ptrs)     being read; then those read so far, in turns
 *   e0_experts_release(x, L)                -> they may be evicted again
 *   e0_experts_prefetch(x, L, ids, n)       -> start reading in the background, no wait
 *
 * Pointers stay valid and unchanged while pinned. Reads are bit-exact copies of the file bytes,
 * so computing with streamed experts gives exactly the results of resident ones.
 *
 * Threads: acquire, release, prefetch, the stats calls and free are called from one thread (the
 * engine's main thread); the cache owns its I/O threads. Each matrix of an expert is one read
 * request (three per expert), served by whichever I/O thread is free, so the experts of one
 * acquire are read in parallel. Reads for acquire go ahead of queued prefetch reads.
 *
 * Memory: each layer's slots are one e0_alloc(E0_MEM_EXPERTS, its slots * slot stride + 4096) (the
 * stride: each matrix's page-aligned region, its bytes rounded up to pages plus one page, so that
 * O_DIRECT reads land in the slot itself; no staging buffers).
 *
 * The cache only does what it is asked; which experts to prefetch (predicted routing,
 * predict_ahead, prefetch, prefill_read=auto) is decided by experts_predict.c. */
#ifndef E0_EXPERTS_H
#define E0_EXPERTS_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/model.h"

/* cached: pread through the page cache. direct: O_DIRECT; each matrix's covering 4096-aligned
 * range is read straight into the slot, where the matrix sits at its file offset modulo 4096. */
enum e0_expert_read { E0_READ_CACHED = 0, E0_READ_DIRECT = 1 };
/* Eviction policies, chosen by replaying the shared routing traces (docs/perf.md, "Expert-cache
 * policies under real routing"). Each picks a victim among the unpinned, idle experts of a layer:
 *   LRU   the expert used longest ago.
 *   LFU   the fewest uses in this layer (counts kept per expert across evictions, halved every
 *         4 * n_expert requests of the layer so old popularity fades); ties: least recently used.
 *   LRFU  frequency and recency in one score: each use adds 1 to the expert's score, and the
 *         score decays by 2^-E0_LRFU_LAMBDA per acquire call of the layer (a token in decode);
 *         the lowest score goes (ties: least recently used). Lambda -> 0 is LFU, large is LRU.
 *   PIN   the layer's most used experts (the top 3/4 of its slots by use count, counted as LFU
 *         does) are never evicted while they stay on top; among the rest, least recently used.
 * Prediction-aware eviction (e0_experts_params.protect_predicted, any policy): an expert named
 * by the latest e0_experts_prefetch of its layer and not acquired since is not evicted by a
 * prefetch, and by an acquire only when no other unpinned expert is left. */
enum e0_evict { E0_EVICT_LRU = 0, E0_EVICT_LFU = 1, E0_EVICT_LRFU = 2, E0_EVICT_PIN = 3, E0_EVICT_COUNT };
#define E0_LRFU_LAMBDA 0.05 /* decay per layer step; 0.03-0.1 measured best on every shared trace */
/* An LRFU score `steps` layer steps after it was `score` (tools/expert_policy_sim uses it too). */
double e0_lrfu_decay(double score, uint64_t steps);
/* "lru", "lfu", "lrfu", "pin" (NULL for an unknown value) */
const char *e0_evict_name(int evict);

typedef struct e0_experts_params {
    int64_t slots;          /* expert slots per layer, 1..n_expert (fewer than n_expert_used: the forward pass takes turns) */
    int64_t extra_layers;   /* this many layers (0 .. layers with experts - 1) have slots + 1, spread evenly over the
                             * depth (e0_experts_layer_slots): what a budget has left after `slots` in every layer */
    int read_mode;          /* e0_expert_read */
    int evict;              /* e0_evict */
    bool protect_predicted; /* prediction-aware eviction (see e0_evict) */
    int n_io_threads;       /* 0 = default (E0_EXPERTS_DEFAULT_IO_THREADS); at most E0_EXPERTS_MAX_IO_THREADS */
} e0_experts_params;

#define E0_EXPERTS_DEFAULT_IO_THREADS 8
#define E0_EXPERTS_MAX_IO_THREADS 64 /* the one limit: the cache's reader array and --model-option io_threads */

typedef struct e0_expert_ptrs {
    const uint8_t *gate, *up, *down;
} e0_expert_ptrs;

/* Counters since creation or the last reset. Every distinct id of an acquire call is one request
 * (an id repeated within a call counts once): hits + misses = requests. hits include experts still being read by a prefetch (acquire waits
 * for that read instead of reading again); prefetch_hits = hits on an expert a prefetch loaded
 * that had not been used since. Experts read = misses + prefetched, and bytes_read is the sum of
 * their exact sizes (e0_expert_bytes of their layer); bytes_device is what was asked of the file
 * (the aligned covering ranges under O_DIRECT, = bytes_read when cached). reads = read requests
 * queued (3 per expert read). */
typedef struct e0_experts_stats {
    uint64_t bytes_read, reads, hits, misses, prefetched, prefetch_hits, evictions;
    uint64_t requests, bytes_device;
    double wait_seconds; /* time acquire spent waiting for reads */
} e0_experts_stats;

typedef struct e0_experts e0_experts;

/* Errors: the model has no routed experts, slots outside 1..n_expert, a bad read mode / policy,
 * out of memory, threads that cannot start. O_DIRECT refused by the file system is not an error:
 * the cache falls back to cached reads (see e0_experts_read_mode). The model must outlive the
 * cache; its expert tensors may be resident or not (the cache always reads from the file). */
e0_experts *e0_experts_new(const e0_model *m, const e0_experts_params *p, e0_err *e);
/* Joins the I/O threads (reads in progress finish, queued ones are dropped) and frees all. */
void e0_experts_free(e0_experts *x);
/* Make experts ids[0..n) of `layer` resident and pinned; out[i] are ids[i]'s matrices. Ids may
 * repeat. Pins add up over several acquires of a layer until e0_experts_release(layer), and the
 * distinct pinned experts of a layer must fit its slots: asking for more is an error (the caller
 * batches). Errors: layer or id out of range, too many distinct experts, a read error
 * ("<path>: unexpected end of file reading expert 5 of layer 3"); on error this call pins
 * nothing (earlier pins stay) and out is not filled. */
int e0_experts_acquire(e0_experts *x, int layer, const int *ids, int n, e0_expert_ptrs *out, e0_err *e);
/* acquire in two steps, so that the caller can compute with the experts it has while the others
 * are read: acquire_begin pins ids[0..n) and starts reading the missing ones (the same checks,
 * counts and errors as acquire, but no read error yet, and no wait except for a slot to become
 * idle). Then each take_ready call, given ids[0..n) among those begun and not yet taken, waits
 * until at least one of them has been read, moves those read to the front of ids (keeping their
 * order) and returns how many, r >= 1 (0 when n == 0), with out[0..r) their matrices. A read
 * error: -1 with the error, and every pin of the layer released. */
int e0_experts_acquire_begin(e0_experts *x, int layer, const int *ids, int n, e0_err *e);
int e0_experts_take_ready(e0_experts *x, int layer, int *ids, int n, e0_expert_ptrs *out, e0_err *e);
/* Unpin every expert of `layer`. */
void e0_experts_release(e0_experts *x, int layer);
/* Queue background reads of those ids of `layer` that are neither resident nor being read, into
 * empty slots or by evicting unpinned, idle experts (never a pinned one, never one a read is
 * filling, and with protect_predicted never one this call names: the call's ids become the
 * layer's predicted set, replacing the previous one); ids beyond what fits are skipped, invalid
 * ids ignored. Does not wait. A read error here is silent: the expert is read again (and the
 * error reported) by acquire. */
void e0_experts_prefetch(e0_experts *x, int layer, const int *ids, int n);
const e0_experts_stats *e0_experts_get_stats(const e0_experts *x);
void e0_experts_reset_stats(e0_experts *x);
/* Bytes of one expert (gate + up + down) of a layer, exact (0 for a layer without experts). */
uint64_t e0_expert_bytes(const e0_model *m, int layer);
/* Bytes a cache with these parameters allocates in the memory ledger (its expert slots with their
 * padding), for choosing `slots` from a memory budget; 0 if the model has no routed experts. */
uint64_t e0_experts_memory(const e0_model *m, const e0_experts_params *p);
/* Slots of `layer` under p: p->slots, or p->slots + 1 for the p->extra_layers layers chosen evenly
 * over the layers with experts (the i-th of n when floor(((i + 1) X + n/2) / n) > floor((i X +
 * n/2) / n): one in the middle of each n/X layers); 0 for a leading dense layer. */
int64_t e0_experts_layer_slots(const e0_model *m, const e0_experts_params *p, int layer);
/* The slots the cache has in `layer` (0 for a layer without experts or out of range). */
int e0_experts_slots(const e0_experts *x, int layer);
/* The read mode actually in use (direct falls back to cached when the file system refuses
 * O_DIRECT; *why says so, else *why = NULL). */
int e0_experts_read_mode(const e0_experts *x, const char **why);
/* Test hook: while on, caches created act as if the file system refused O_DIRECT (EINVAL), so
 * the fallback path can be tested where the file system accepts it. */
void e0_experts_test_refuse_direct(bool on);
/* Is expert `id` of `layer` in a slot, read or being read (an acquire now would not read it again)? */
bool e0_experts_held(const e0_experts *x, int layer, int id);
/* Is expert `id` of `layer` resident and readable now (not being read)? For tests and stats. */
bool e0_experts_resident(const e0_experts *x, int layer, int id);

#endif
