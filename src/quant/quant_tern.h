/* quant_tern.h — the kernels of the ternary types TQ1_0 and TQ2_0 (BitNet b1.58 / TriLM) and
 * the 1- and 2-bit types Q1_0 and Q2_0: the scalar ones of quant_tern.c and the AVX2 ones of
 * x86/quant_tern_avx2.c, which the type table in quant.c points at. Block layouts: blocks.h.
 *
 * Activations (llama.cpp's pairing, ggml-cpu.c): TQ1_0 and TQ2_0 dot with Q8_K blocks; Q1_0
 * (128 elements) and Q2_0 (64) with Q8_0 blocks, four and two of them per weight block.
 * None of llama.cpp's quantizers for these types uses an importance matrix (quantize_q1_0 /
 * quantize_q2_0 accept one and ignore it; quantize_tq*_0 ignore it), so neither do ours. */
#ifndef E0_QUANT_TERN_H
#define E0_QUANT_TERN_H

#include <stddef.h>
#include <stdint.h>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/kernel.h"

/* ---- quant_tern.c: scalar (to_float, reference quantizer, reference dot per type) ---- */
void e0_tq1_0_to_float(const void *src, float *dst, int64_t n);
void e0_tq1_0_from_float_ref(const float *x, void *dst, int64_t n);
void e0_vec_dot_tq1_0_ref(int64_t n, float *s, const void *w, const void *a);
void e0_tq2_0_to_float(const void *src, float *dst, int64_t n);
void e0_tq2_0_from_float_ref(const float *x, void *dst, int64_t n);
void e0_vec_dot_tq2_0_ref(int64_t n, float *s, const void *w, const void *a);
void e0_q1_0_to_float(const void *src, float *dst, int64_t n);
void e0_q1_0_from_float_ref(const float *x, void *dst, int64_t n);
void e0_vec_dot_q1_0_ref(int64_t n, float *s, const void *w, const void *a);
void e0_q2_0_to_float(const void *src, float *dst, int64_t n);
void e0_q2_0_from_float_ref(const float *x, void *dst, int64_t n);
void e0_vec_dot_q2_0_ref(int64_t n, float *s, const void *w, const void *a);

/* The 256 unsigned trits (0..2, value + 1) of a TQ1_0 block in element order (shared by the
 * scalar dot and the tests). */
void e0_tq1_0_trits(const uint8_t *blk, uint8_t t[QK_K]);

/* ---- x86/quant_tern_avx2.c (AVX2 + FMA + F16C). The integer block sums are exact and the
 * float scaling is the scalar one, operation for operation: these return the reference's bits. */
void e0_vec_dot_tq1_0_avx2(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_tq2_0_avx2(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_q1_0_avx2(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_q2_0_avx2(int64_t n, float *s, const void *w, const void *a);

#endif
