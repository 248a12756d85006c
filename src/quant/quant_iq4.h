/* quant_iq4.h — the kernels of the non-linear 4-bit types IQ4_NL and IQ4_XS and the FP4 types
 * MXFP4 and NVFP4: the scalar ones of quant_iq4.c and the AVX2 ones of x86/quant_iq4_avx2.c and
 * x86/gemm_iq4_avx2.c, which the type table in quant.c points at, and the small value tables
 * and scale decoders they share. Block layouts: blocks.h.
 *
 * Activations (llama.cpp's pairing, ggml-cpu.c): IQ4_NL, MXFP4 and NVFP4 dot with Q8_0 blocks
 * (NVFP4's 64-element block spans two of them), IQ4_XS with Q8_K. */
#ifndef E0_QUANT_IQ4_H
#define E0_QUANT_IQ4_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/kernel.h"

/* The 16 code values of IQ4_NL / IQ4_XS (ggml's kvalues_iq4nl) and of the FP4 types (twice the
 * E2M1 values: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives; ggml's kvalues_mxfp4). */
extern const int8_t e0_kvalues_iq4nl[16];
extern const int8_t e0_kvalues_fp4[16];

/* E8M0 exponent e -> 2^(e - 128), i.e. half of 2^(e - 127) (MXFP4's scale, halved because the
 * code values are doubled); e 0 and 1 give the subnormals 2^-128 and 2^-127. */
static inline float e0_e8m0_to_fp32_half(uint8_t e) {
    uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* UE4M3 (NVFP4's sub-block scale: 4 exponent bits, bias 7, 3 mantissa bits; the top bit is
 * ignored, 0x7F decodes as 0) -> its value times 0.5 (the code values are doubled), exactly as
 * ggml_ue4m3_to_fp32. All 256 results are exact floats (quant_iq4.c builds them). */
extern const float e0_ue4m3_half[256];
static inline float e0_ue4m3_to_fp32_half(uint8_t x) { return e0_ue4m3_half[x]; }
/* ggml_fp32_to_ue4m3: the scale code for a positive float (0 for x <= 0 or NaN). */
uint8_t e0_fp32_to_ue4m3(float x);

/* ---- quant_iq4.c: scalar (to_float, reference quantizer, reference dot per type) ---- */
void e0_iq4_nl_to_float(const void *src, float *dst, int64_t n);
void e0_iq4_nl_from_float_ref(const float *x, void *dst, int64_t n);
void e0_vec_dot_iq4_nl_ref(int64_t n, float *s, const void *w, const void *a);
void e0_iq4_xs_to_float(const void *src, float *dst, int64_t n);
void e0_iq4_xs_from_float_ref(const float *x, void *dst, int64_t n);
void e0_vec_dot_iq4_xs_ref(int64_t n, float *s, const void *w, const void *a);
void e0_mxfp4_to_float(const void *src, float *dst, int64_t n);
void e0_mxfp4_from_float_ref(const float *x, void *dst, int64_t n);
void e0_vec_dot_mxfp4_ref(int64_t n, float *s, const void *w, const void *a);
void e0_nvfp4_to_float(const void *src, float *dst, int64_t n);
void e0_nvfp4_from_float_ref(const float *x, void *dst, int64_t n);
void e0_vec_dot_nvfp4_ref(int64_t n, float *s, const void *w, const void *a);

/* Importance-weighted quantization of nrow rows of n_per_row floats (ggml's quantize_iq4_nl /
 * quantize_iq4_xs): imatrix holds n_per_row weights (one per column, from llama.cpp's imatrix
 * tool) or is NULL. With NULL the bytes are those of from_float_ref, which is what
 * llama_model_quantize writes without an imatrix (the search over 15 scales, ntry = 7). */
void e0_quantize_iq4_nl(const float *src, void *dst, int64_t nrow, int64_t n_per_row, const float *imatrix);
void e0_quantize_iq4_xs(const float *src, void *dst, int64_t nrow, int64_t n_per_row, const float *imatrix);

/* ---- x86/quant_iq4_avx2.c (AVX2 + FMA + F16C) ---- */
void e0_vec_dot_iq4_nl_avx2(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_nvfp4_avx2(int64_t n, float *s, const void *w, const void *a);
/* x86/gemm_iq4_avx2.c: the one-token kernels of IQ4_XS and MXFP4 and their prefill GEMMs
 * (e0_gemm_fn), one code path so the two are bit-identical. */
void e0_vec_dot_iq4_xs_avx2(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_mxfp4_avx2(int64_t n, float *s, const void *w, const void *a);
void e0_gemm_iq4_xs_avx2(int64_t n, int n_rows, const void *w, size_t w_stride, int nt, const void *a, size_t a_stride,
                         float *s, size_t s_stride);
void e0_gemm_mxfp4_avx2(int64_t n, int n_rows, const void *w, size_t w_stride, int nt, const void *a, size_t a_stride,
                        float *s, size_t s_stride);
/* IQ4_NL's GEMM: the per-block steps of e0_vec_dot_iq4_nl_avx2 (quant_iq4_avx2.c) */
void e0_gemm_iq4_nl_avx2(int64_t n, int n_rows, const void *w, size_t w_stride, int nt, const void *a, size_t a_stride,
                         float *s, size_t s_stride);

#endif
