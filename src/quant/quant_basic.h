/* quant_basic.h — internal to the quant_basic*.c files: ggml's legacy block layouts (Q4_0, Q4_1,
 * Q5_0, Q5_1, Q8_0, Q8_1) as byte offsets, and the kernels each SIMD file exports.
 *
 * Blocks are read through byte offsets and memcpy, never through struct pointers: rows come from
 * untrusted files at any alignment. Every block holds 32 elements. In the 4/5-bit types, byte j
 * of qs holds element j in its low nibble and element j+16 in its high nibble; bit j of the
 * little-endian 32-bit qh is the fifth bit of element j. */
#ifndef E0_QUANT_BASIC_H
#define E0_QUANT_BASIC_H

#include <stdint.h>
#include <string.h>

#include "quant/quant.h"

#define E0_QK 32 /* elements per legacy block */

/* Bytes per block and offsets of the fields (d and m/s are fp16). */
enum {
    Q4_0_SIZE = 18, Q4_0_QS = 2,                       /* d, qs[16] */
    Q4_1_SIZE = 20, Q4_1_M = 2, Q4_1_QS = 4,           /* d, m, qs[16] */
    Q5_0_SIZE = 22, Q5_0_QH = 2, Q5_0_QS = 6,          /* d, qh[4], qs[16] */
    Q5_1_SIZE = 24, Q5_1_M = 2, Q5_1_QH = 4, Q5_1_QS = 8, /* d, m, qh[4], qs[16] */
    Q8_0_SIZE = 34, Q8_0_QS = 2,                       /* d, qs[32] (int8) */
    Q8_1_SIZE = 36, Q8_1_S = 2, Q8_1_QS = 4,           /* d, s = d * sum(qs), qs[32] */
};

static inline uint16_t e0_rd16(const uint8_t *p) {
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}
static inline uint32_t e0_rd32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
/* A float at any alignment (F32 rows may sit at odd offsets). */
static inline float e0_rdf32(const void *p) {
    float v;
    memcpy(&v, p, 4);
    return v;
}
static inline void e0_wr16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }

/* Activation quantizers for Q8_0/Q8_1 exactly as llama.cpp's x86 CPU backend computes them
 * (d = amax/127, id = 127/amax, round half to even) — the bytes our logits depend on. The
 * scalar versions (quant_basic.c) define the result; the AVX2 ones must match byte for byte. */
void e0_quantize_act_q8_0_scalar(const float *x, void *y, int64_t n);
void e0_quantize_act_q8_1_scalar(const float *x, void *y, int64_t n);

/* quant_basic_avx2.c (AVX2 + FMA + F16C) */
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
/* quant_basic_x4_avx2.c: 4-token version (see e0_vec_dot_4_fn) */
void e0_vec_dot_4_q8_0_avx2(int64_t n, float *s, size_t s_stride, const void *w, const void *a, size_t a_stride);

/* quant_basic_avx512.c (AVX-512 F/BW/VL/DQ + VNNI); only the kernels that beat AVX2 exist. */
void e0_vec_dot_f32_avx512(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_f16_avx512(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_bf16_avx512(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_q4_0_avx512(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_q4_1_avx512(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_q5_0_avx512(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_q5_1_avx512(int64_t n, float *s, const void *w, const void *a);

#endif
