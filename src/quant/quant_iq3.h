/* quant_iq3.h — the i-quants on a 3-bit grid, IQ3_XXS (ggml type 18) and IQ3_S (21): the scalar
 * kernels of quant_iq3.c (dequantize, the reference quantizer with optional importance weights,
 * the reference dot against Q8_K) and the AVX2 ones of x86/quant_iq3_avx2.c. Block layouts:
 * blocks.h. The grids are ggml's format constants. */
#ifndef E0_QUANT_IQ3_H
#define E0_QUANT_IQ3_H

#include <stddef.h>
#include <stdint.h>

#include "quant/blocks.h"
#include "quant/kernel.h"

/* Grid points: 4 magnitudes per entry, one per byte (little-endian: value 0 in the low byte). */
extern const uint32_t e0_iq3_xxs_grid[256]; /* magnitudes 4, 12, 20, 28, 36, 44, 52, 62 */
extern const uint32_t e0_iq3_s_grid[512];   /* magnitudes 1, 3, 5, ..., 15 */

/* The 8 sign bits of a group of 8 iq3_xxs values from its 7-bit index: bit 7 makes the number
 * of set bits even. */
static inline uint8_t e0_iq3_xxs_signs(uint32_t idx7) {
    idx7 &= 127;
    return (uint8_t)(idx7 | ((uint32_t)__builtin_parity(idx7) << 7));
}

/* ---- quant_iq3.c ---- */
void e0_iq3_xxs_to_float(const void *src, float *dst, int64_t n);
void e0_iq3_s_to_float(const void *src, float *dst, int64_t n);
/* One row of n values (a multiple of 256). qw: n importance weights (llama.cpp's imatrix row,
 * > 0), or NULL for the plain x^2 weighting. Same algorithm and float operations as ggml's
 * quantize_iq3_xxs / quantize_iq3_s. */
void e0_quantize_iq3_xxs(const float *x, void *dst, int64_t n, const float *qw);
void e0_quantize_iq3_s(const float *x, void *dst, int64_t n, const float *qw);
void e0_iq3_xxs_from_float_ref(const float *x, void *dst, int64_t n); /* qw = NULL */
void e0_iq3_s_from_float_ref(const float *x, void *dst, int64_t n);
void e0_vec_dot_iq3_xxs_ref(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_iq3_s_ref(int64_t n, float *s, const void *w, const void *a);

/* ---- x86/quant_iq3_avx2.c (AVX2 CPUs only) ---- */
void e0_vec_dot_iq3_xxs_avx2(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_iq3_s_avx2(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_4_iq3_xxs_avx2(int64_t n, float *s, size_t s_stride, const void *w, const void *a, size_t a_stride);
/* x86/gemm_iq3_avx2.c: the 4-token IQ3_S dot (its GEMM with one row) */
void e0_vec_dot_4_iq3_s_avx2(int64_t n, float *s, size_t s_stride, const void *w, const void *a, size_t a_stride);

#endif
