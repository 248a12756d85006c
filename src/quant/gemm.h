/* gemm.h — the prefill GEMM kernels (e0_gemm_fn, see kernel.h): one weight row against up to
 * E0_GEMM_TOKENS activation rows, bit-identical per token to the vec_dot of the same level. */
#ifndef E0_GEMM_H
#define E0_GEMM_H

#include "quant/kernel.h"

/* x86/gemm_avx2.c */
void e0_gemm_q4_K_avx2(int64_t n, int nt, float *s, size_t s_stride, const void *w, const void *a, size_t a_stride);
void e0_gemm_q5_K_avx2(int64_t n, int nt, float *s, size_t s_stride, const void *w, const void *a, size_t a_stride);
void e0_gemm_q6_K_avx2(int64_t n, int nt, float *s, size_t s_stride, const void *w, const void *a, size_t a_stride);
void e0_gemm_q8_0_avx2(int64_t n, int nt, float *s, size_t s_stride, const void *w, const void *a, size_t a_stride);

#endif
