/* quant_basic.h — the kernels of the float types (F32, F16, BF16) and the legacy block types
 * (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1): the scalar ones of quant_basic.c and the SIMD ones of
 * x86/quant_basic_*.c, which the type table in quant.c points at. Block layouts: blocks.h. */
#ifndef E0_QUANT_BASIC_H
#define E0_QUANT_BASIC_H

#include <stddef.h>
#include <stdint.h>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/kernel.h"

/* ---- quant_basic.c: scalar (to_float, reference quantizer, reference dot per type) ---- */
void e0_f32_to_float(const void *src, float *dst, int64_t n);
void e0_f32_from_float(const float *src, void *dst, int64_t n);
void e0_vec_dot_f32_ref(int64_t n, float *s, const void *w, const void *a);
void e0_f16_to_float(const void *src, float *dst, int64_t n);
void e0_f16_from_float(const float *src, void *dst, int64_t n);
void e0_vec_dot_f16_ref(int64_t n, float *s, const void *w, const void *a);
void e0_bf16_to_float(const void *src, float *dst, int64_t n);
void e0_bf16_from_float(const float *src, void *dst, int64_t n);
void e0_vec_dot_bf16_ref(int64_t n, float *s, const void *w, const void *a);
void e0_q4_0_to_float(const void *src, float *dst, int64_t n);
void e0_q4_0_from_float_ref(const float *x, void *dst, int64_t n);
void e0_vec_dot_q4_0_ref(int64_t n, float *s, const void *w, const void *a);
void e0_q4_1_to_float(const void *src, float *dst, int64_t n);
void e0_q4_1_from_float_ref(const float *x, void *dst, int64_t n);
void e0_vec_dot_q4_1_ref(int64_t n, float *s, const void *w, const void *a);
void e0_q5_0_to_float(const void *src, float *dst, int64_t n);
void e0_q5_0_from_float_ref(const float *x, void *dst, int64_t n);
void e0_vec_dot_q5_0_ref(int64_t n, float *s, const void *w, const void *a);
void e0_q5_1_to_float(const void *src, float *dst, int64_t n);
void e0_q5_1_from_float_ref(const float *x, void *dst, int64_t n);
void e0_vec_dot_q5_1_ref(int64_t n, float *s, const void *w, const void *a);
void e0_q8_0_to_float(const void *src, float *dst, int64_t n);
void e0_q8_0_from_float_ref(const float *x, void *dst, int64_t n);
void e0_vec_dot_q8_0_ref(int64_t n, float *s, const void *w, const void *a);
void e0_q8_1_to_float(const void *src, float *dst, int64_t n);
void e0_q8_1_from_float_ref(const float *x, void *dst, int64_t n);
void e0_vec_dot_q8_1_ref(int64_t n, float *s, const void *w, const void *a);

/* Activation quantizers for Q8_0/Q8_1 exactly as llama.cpp's x86 CPU backend computes them
 * (d = amax/127, id = 127/amax, round half to even) — the bytes our logits depend on. The
 * scalar versions (quant_basic.c) define the result; the AVX2 ones must match byte for byte. */
void e0_quantize_act_q8_0_scalar(const float *x, void *y, int64_t n);
void e0_quantize_act_q8_1_scalar(const float *x, void *y, int64_t n);

/* ---- x86/quant_basic_avx2.c (AVX2 + FMA + F16C) ---- */
void e0_quantize_act_q8_0_avx2(const float *x, void *y, int64_t n);
void e0_quantize_act_q8_1_avx2(const float *x, void *y, int64_t n);
void e0_vec_dot_f32_avx2(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_f16_avx2(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_bf16_avx2(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_q4_0_avx2(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_q4_1_avx2(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_q5_0_avx2(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_q5_1_avx2(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_q8_0_avx2(int64_t n, float *s, const void *w, const void *a);
/* x86/quant_basic_x4_avx2.c: 4-token version (see e0_vec_dot_4_fn) */
void e0_vec_dot_4_q8_0_avx2(int64_t n, float *s, size_t s_stride, const void *w, const void *a, size_t a_stride);

/* ---- x86/quant_basic_avx512.c (AVX-512 F/BW/VL/DQ + VNNI); only the kernels that beat AVX2 ---- */
void e0_vec_dot_f32_avx512(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_f16_avx512(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_bf16_avx512(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_q4_0_avx512(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_q4_1_avx512(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_q5_0_avx512(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_q5_1_avx512(int64_t n, float *s, const void *w, const void *a);

#endif
