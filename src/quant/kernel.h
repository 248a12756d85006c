/* kernel.h — what every kernel file and the type table agree on: the kernel signatures, the
 * token count of the 4-token dot products, and the prefetch helper the SIMD kernels use.
 * Header-only: kernel files include it (with blocks.h and fp16.h) instead of quant.h, so the
 * kernels depend on nothing in quant.c. */
#ifndef E0_KERNEL_H
#define E0_KERNEL_H

#include <stddef.h>
#include <stdint.h>

/* n is a number of elements (a multiple of the type's block size). */
typedef void (*e0_to_float_fn)(const void *src, float *dst, int64_t n);
typedef void (*e0_from_float_fn)(const float *src, void *dst, int64_t n);
/* *s = dot product of weight row w with activation row a (already in the weight's vec_dot_type). */
typedef void (*e0_vec_dot_fn)(int64_t n, float *s, const void *w, const void *a);
/* One weight row against 4 activation rows: s[k * s_stride] = dot(w, a + k * a_stride) for
 * k = 0..3. Unpacks each weight block once for the 4 tokens (prefill); bit-identical to 4 calls
 * of the vec_dot of the same SIMD level, so results never depend on how tokens are batched. */
#define E0_DOT_TOKENS 4
typedef void (*e0_vec_dot_4_fn)(int64_t n, float *s, size_t s_stride, const void *w, const void *a, size_t a_stride);
/* Prefill GEMM (x86/gemm_avx2.c): n_rows <= E0_GEMM_ROWS weight rows (w, row stride w_stride)
 * against nt activation rows, 1 <= nt <= E0_GEMM_TOKENS (a, stride a_stride):
 * s[r + k * s_stride] = dot(row r, token k). Each weight block is unpacked once for all nt tokens
 * and each token's per-block terms once for all rows; bit-identical to the vec_dot of the same
 * SIMD level on each (row, token), so results never depend on how tokens are batched.
 * 16 tokens (was 8): each weight block is unpacked half as often, and a 16-sequence batched
 * decode step is one call per row block; tools/qspeed_gemm measured +13% on q4_K / q6_K.
 * 32 rows (was 16): the per-call work on the tokens (pairing their sub-blocks, see gemm_avx2.c)
 * serves twice the rows, +4% more. */
#define E0_GEMM_TOKENS 16
#define E0_GEMM_ROWS 32
/* A type's gemm may take more tokens a call (e0_type_traits.gemm_tokens, up to this): matmul then
 * groups the tokens by that count, so a kernel whose per-row unpacking is the larger cost (the
 * grid lookups of IQ2_XXS) unpacks each weight block for up to 32 tokens at once. */
#define E0_GEMM_TOKENS_MAX 32
typedef void (*e0_gemm_fn)(int64_t n, int n_rows, const void *w, size_t w_stride, int nt, const void *a, size_t a_stride,
                           float *s, size_t s_stride);

/* Decode reads each weight row from memory exactly once, and the hardware prefetcher alone left
 * a third of the bandwidth unused here: kernels ask for the block `PREFETCH_BLOCKS` ahead (about
 * one 2048-wide row of K-quant blocks) before working on the current one. Measured with
 * `edge0-bench ab`: +36% decode on a Q4_K model (docs/perf.md). Prefetches never fault. */
#define E0_PREFETCH_BLOCKS 8
static inline void e0_prefetch_bytes(const void *p, unsigned bytes) {
    for (unsigned o = 0; o < bytes; o += 64) __builtin_prefetch((const char *)p + o, 0, 3);
}

#endif
