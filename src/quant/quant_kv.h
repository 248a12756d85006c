/* quant_kv.h — q4_K and q6_K repacked at load for the AVX-512 VNNI kernels ("q4_KV", "q6_KV":
 * engine-internal types, never in a file) and their activation type Q8_KV: the layout, the
 * repacking, and the kernels quant.c's table points at (scalar here in quant_kv.c, AVX-512 in
 * x86/quant_kv_avx512.c). quant_kx.h is the AVX2 counterpart.
 *
 * Why: VNNI's vpdpbusd multiplies unsigned codes by signed activations and adds four products
 * into an int32 lane in one instruction — but the four must share a scale. In q4_K's file layout
 * a 64-byte vector holds two sub-blocks, so a plain kernel must widen, scale and add per
 * sub-block. Here every 64-byte code vector holds 16 runs of 4 natural values, and dword lane j
 * of every vector belongs to natural run j of 16 values (values 16j .. 16j + 15): the four
 * vpdpbusd of a block add into one int32 vector whose lane j is the exact integer dot of run j.
 * Run j has q6_K's scale j and q4_K's scale j/2, and Q8_K's bsums are the sums of the same runs,
 * so scales, mins and q6_K's offset apply lane-wise afterwards (quant_kv_avx512.c).
 *
 * The permutation: code vector v (0..3) byte p (0..63) holds natural value
 * kv_natural(v, p) = 16 (p/4) + 4v + p%4 — a 16 x 4 transpose of the block's 64 dwords. Q8_KV
 * is Q8_K (same d, same bsums) with qs[64v + p] = Q8_K's qs[kv_natural(v, p)]: one activation
 * type for both weight types.
 *   q4_KV: q4_K's d, dmin and scales; qs[64k + p] = code(2k, p) | code(2k + 1, p) << 4.
 *   q6_KV: q6_K's scales and d; ql[64k + p] = code(2k, p) & 15 | (code(2k + 1, p) & 15) << 4,
 *          qh[p] = sum over g of (code(g, p) >> 4) << 2g.
 *
 * Results: the integer run sums are exact; the float work is per run lane (16 lanes), so the last
 * bits differ from the plain kernels'. The scalar dots here repeat the AVX-512 kernels' float
 * operations in their order (fmaf, the same reduction tree), so reference, dot and GEMM give the
 * same bits (tests/test_quant_kv.c). */
#ifndef E0_QUANT_KV_H
#define E0_QUANT_KV_H

#include <stddef.h>
#include <stdint.h>

/* Natural index (0..255) of code vector v (0..3), byte p (0..63). */
static inline int kv_natural(int v, int p) { return 16 * (p / 4) + 4 * v + p % 4; }

/* n blocks in place: q4_K -> q4_KV, q6_K -> q6_KV, and back; Q8_K -> Q8_KV. */
void e0_q4_K_to_KV(void *blocks, int64_t n_blocks);
void e0_q4_KV_unpack(void *blocks, int64_t n_blocks);
void e0_q6_K_to_KV(void *blocks, int64_t n_blocks);
void e0_q6_KV_unpack(void *blocks, int64_t n_blocks);
void e0_q8_KV_permute(void *blocks, int64_t n_blocks);

void e0_q4_KV_to_float(const void *src, float *dst, int64_t n);
void e0_q4_KV_from_float_ref(const float *x, void *dst, int64_t n);
void e0_vec_dot_q4_KV_ref(int64_t n, float *s, const void *w, const void *a);
void e0_q6_KV_to_float(const void *src, float *dst, int64_t n);
void e0_q6_KV_from_float_ref(const float *x, void *dst, int64_t n);
void e0_vec_dot_q6_KV_ref(int64_t n, float *s, const void *w, const void *a);
void e0_q8_KV_to_float(const void *src, float *dst, int64_t n);
void e0_q8_KV_from_float_ref(const float *x, void *dst, int64_t n);

/* x86/quant_kv_avx512.c (AVX-512 level) */
void e0_q4_K_to_KV_avx512(void *blocks, int64_t n_blocks); /* e0_q4_K_to_KV's bytes */
void e0_q6_K_to_KV_avx512(void *blocks, int64_t n_blocks);
void e0_q8_KV_from_float_avx512(const float *x, void *dst, int64_t n);
void e0_vec_dot_q4_KV_avx512(int64_t n, float *s, const void *w, const void *a);
void e0_gemm_q4_KV_avx512(int64_t n, int nr, const void *w, size_t w_stride, int nt, const void *a, size_t a_stride, float *s,
                          size_t s_stride);
void e0_vec_dot_q6_KV_avx512(int64_t n, float *s, const void *w, const void *a);
void e0_gemm_q6_KV_avx512(int64_t n, int nr, const void *w, size_t w_stride, int nt, const void *a, size_t a_stride, float *s,
                          size_t s_stride);

#endif
