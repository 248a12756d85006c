/* simd.h — the SSE/AVX2/F16C helpers shared by the x86 kernel files. Include only from files
 * compiled with at least -mavx2 -mfma -mf16c (the *_avx2.c and *_avx512.c files). */
#ifndef E0_X86_SIMD_H
#define E0_X86_SIMD_H

#include <immintrin.h>

#include "quant/blocks.h"
#include "quant/kernel.h"

/* Sum of the 8 lanes, in llama.cpp's order (hsum_float_8); results depend on the order. */
static inline float hsum_ps(__m256 v) {
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

/* Makes the compiler treat buffer p as read and written here: vectors stored in p stay in memory
 * (used as memory operands) instead of taking registers and being spilled anyway. */
#define IN_MEMORY(p) __asm__ volatile("" : : "r"(p) : "memory")

/* Zeroes n accumulators with plain vector stores: GCC turns the loop into a memset call per row
 * otherwise (1.3% of prefill cycles for a few hundred bytes). */
static inline __attribute__((always_inline)) void zero_acc(__m256 *acc, int n) {
    for (int k = 0; k < n; k++) {
        acc[k] = _mm256_setzero_ps();
        IN_MEMORY(acc);
    }
}

/* ---- GEMMs with few tokens ----
 * A GEMM over nr weight rows with many tokens takes block i of every row, then block i + 1 (the
 * tokens' terms of a block made once for all rows). With at most GEMM_ROW1_NT tokens there is too
 * little work per block to hide nr interleaved streams from memory, so the rows go one at a time
 * (one sequential stream), block i of row r + GEMM_AHEAD asked for while row r's is used; the
 * results are the same bits either way. The q6_KX output head of Qwen3-30B-A3B from memory, one
 * thread, took 37.5 ms at 2 tokens interleaved against 15.4 row by row; in cache the two orders
 * are equal up to 8 tokens and the interleaved one wins from 12 (docs/perf.md, session 17). */
#define GEMM_ROW1_NT 8
#define GEMM_AHEAD 4

/* Every 64-byte line of bytes p .. p + bytes - 1 asked into the cache (all levels): an unaligned
 * block of b bytes can touch one line more than b / 64 rounded up. Prefetches never fault, so p
 * may lie past the matrix. */
static inline __attribute__((always_inline)) void prefetch_lines(const uint8_t *p, size_t bytes) {
    const uintptr_t first = (uintptr_t)p & ~(uintptr_t)63, last = ((uintptr_t)p + bytes - 1) & ~(uintptr_t)63;
    for (uintptr_t l = first; l <= last; l += 64) __builtin_prefetch((const void *)l, 0, 3);
}

/* y.d of super-block i of nt Q8_K token rows (a_stride bytes apart) into yd, zero past nt up to a
 * multiple of 8 (the GEMMs multiply the scales 8 tokens to a vector). */
static inline __attribute__((always_inline)) void q8_K_token_scales(const uint8_t *a, size_t a_stride, int nt, int64_t i, float *yd) {
    for (int t = 0; t < nt; t++) yd[t] = ((const e0_block_q8_K *)(a + (size_t)t * a_stride) + i)->d;
    for (int t = nt; t % 8; t++) yd[t] = 0;
}

/* fp16 -> float with F16C: a value, or the fp16 at byte p (any alignment). */
static inline float fp16(uint16_t h) { return _cvtsh_ss(h); }
static inline float h2f(const uint8_t *p) { return _cvtsh_ss(e0_rd16(p)); }

/* fp16 at p (lane 0), converted straight from a 16-byte load — inside the block, since every
 * legacy block is >= 18 bytes and p is at most 2 bytes in — which avoids the shuffle-port uops
 * of a scalar fp16 load and conversion. */
static inline __m128 h2f_blk(const uint8_t *p) {
    return _mm256_castps256_ps128(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)));
}
/* Product of the fp16 scales of two legacy blocks (at x and y), broadcast. */
static inline __m256 block_scales(const uint8_t *x, const uint8_t *y) {
    return _mm256_broadcastss_ps(_mm_mul_ss(h2f_blk(x), h2f_blk(y)));
}

static inline __m256i load32(const uint8_t *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* 16 bytes of nibbles -> 32 bytes: low nibbles (elements 0..15), then high nibbles (16..31).
 * A broadcast load and a per-lane shift keep this off the shuffle port (the bottleneck here). */
static inline __m256i nibbles32(const uint8_t *qs) {
    __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs));
    v = _mm256_srlv_epi32(v, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4));
    return _mm256_and_si256(v, _mm256_set1_epi8(0x0f));
}

/* vpshufb control that copies int16 word w (0..7) of each 128-bit lane to all of that lane. */
static inline __m256i word_ctrl(int w) { return _mm256_set1_epi16((short)((2 * w) | ((2 * w + 1) << 8))); }
/* Word lo in the low lane, word hi in the high lane. */
static inline __m256i word_pair_ctrl(int lo, int hi) {
    return _mm256_set_m128i(_mm_set1_epi16((short)((2 * hi) | ((2 * hi + 1) << 8))),
                            _mm_set1_epi16((short)((2 * lo) | ((2 * lo + 1) << 8))));
}

#endif
