/* gemm.h — the prefill GEMM kernels (e0_gemm_fn, see kernel.h): up to E0_GEMM_ROWS weight rows
 * against up to E0_GEMM_TOKENS activation rows, bit-identical to the vec_dot of the same level. */
#ifndef E0_GEMM_H
#define E0_GEMM_H

#include "quant/kernel.h"

/* x86/gemm_avx2.c */
void e0_gemm_q4_K_avx2(int64_t n, int n_rows, const void *w, size_t w_stride, int nt, const void *a, size_t a_stride,
                       float *s, size_t s_stride);
void e0_gemm_q5_K_avx2(int64_t n, int n_rows, const void *w, size_t w_stride, int nt, const void *a, size_t a_stride,
                       float *s, size_t s_stride);
void e0_gemm_q6_K_avx2(int64_t n, int n_rows, const void *w, size_t w_stride, int nt, const void *a, size_t a_stride,
                       float *s, size_t s_stride);
void e0_gemm_q8_0_avx2(int64_t n, int n_rows, const void *w, size_t w_stride, int nt, const void *a, size_t a_stride,
                       float *s, size_t s_stride);

/* x86/gemm_iq3_avx2.c */
void e0_gemm_iq3_xxs_avx2(int64_t n, int n_rows, const void *w, size_t w_stride, int nt, const void *a, size_t a_stride,
                          float *s, size_t s_stride);
void e0_gemm_iq3_s_avx2(int64_t n, int n_rows, const void *w, size_t w_stride, int nt, const void *a, size_t a_stride,
                        float *s, size_t s_stride);

/* x86/gemm_iq2_avx2.c (IQ2_XXS), x86/quant_iq2_avx2.c (IQ1_S, IQ1_M) */
void e0_gemm_iq2_xxs_avx2(int64_t n, int n_rows, const void *w, size_t w_stride, int nt, const void *a, size_t a_stride,
                          float *s, size_t s_stride);
void e0_gemm_iq1_s_avx2(int64_t n, int n_rows, const void *w, size_t w_stride, int nt, const void *a, size_t a_stride,
                        float *s, size_t s_stride);
void e0_gemm_iq1_m_avx2(int64_t n, int n_rows, const void *w, size_t w_stride, int nt, const void *a, size_t a_stride,
                        float *s, size_t s_stride);

#endif
