/* quant_k.h — the kernels of the K-quants (Q2_K..Q6_K, Q8_K): the scalar ones of quant_k.c and
 * the SIMD ones of x86/quant_k_*.c, which the type table in quant.c points at, and the small
 * scale decoders they share. Block layouts: blocks.h. */
#ifndef E0_QUANT_K_H
#define E0_QUANT_K_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/kernel.h"

/* q4_K / q5_K: the 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes.
 * Bytes 0-3: scales 0-3 (low 6 bits); bytes 4-7: mins 0-3 (low 6 bits); bytes 8-11: low
 * nibble = scale 4-7 low 4 bits, high nibble = min 4-7 low 4 bits; the top 2 bits of bytes 0-3 /
 * 4-7 hold the high 2 bits of scales 4-7 / mins 4-7. */
static inline void k_scale_min(int j, const uint8_t *q, uint8_t *sc, uint8_t *m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

/* q4_K / q5_K: all eight scales into bytes 0..7 of out and the mins into bytes 8..15
 * (little-endian word arithmetic, same result as k_scale_min for j = 0..7). */
static inline void k_unpack_scales_mins(const uint8_t *q, uint32_t out[4]) {
    uint32_t w[3];
    memcpy(w, q, 12);
    out[0] = w[0] & 0x3f3f3f3fu;
    out[1] = (w[2] & 0x0f0f0f0fu) | (((w[0] >> 6) & 0x03030303u) << 4);
    out[2] = w[1] & 0x3f3f3f3fu;
    out[3] = ((w[2] >> 4) & 0x0f0f0f0fu) | (((w[1] >> 6) & 0x03030303u) << 4);
}

/* q3_K: the sixteen 6-bit scales, as stored (0..63, i.e. plus 32), into the 16 bytes of out.
 * Bytes 0-7 of the packing hold the low nibbles (sub-block j in byte j%8, high nibble for
 * j >= 8); bytes 8-11 hold the high 2 bits (sub-block j at byte 8 + j%4, bit pair j/4). */
static inline void k_unpack_q3_scales_raw(const uint8_t *q, uint32_t out[4]) {
    uint32_t w[3];
    memcpy(w, q, 12);
    const uint32_t tmp = w[2];
    out[0] = (w[0] & 0x0f0f0f0fu) | (((tmp >> 0) & 0x03030303u) << 4);
    out[1] = (w[1] & 0x0f0f0f0fu) | (((tmp >> 2) & 0x03030303u) << 4);
    out[2] = ((w[0] >> 4) & 0x0f0f0f0fu) | (((tmp >> 4) & 0x03030303u) << 4);
    out[3] = ((w[1] >> 4) & 0x0f0f0f0fu) | (((tmp >> 6) & 0x03030303u) << 4);
}

/* q3_K: the sixteen scales minus 32 (signed). */
static inline void k_unpack_q3_scales(const uint8_t *q, int8_t out[16]) {
    uint32_t raw[4];
    k_unpack_q3_scales_raw(q, raw);
    const uint8_t *b = (const uint8_t *)raw;
    for (int j = 0; j < 16; j++) out[j] = (int8_t)(b[j] - 32);
}

/* ---- quant_k.c: scalar (to_float, reference quantizer, reference dot per type) ---- */
void e0_q2_K_to_float(const void *src, float *dst, int64_t n);
void e0_q2_K_from_float_ref(const float *x, void *dst, int64_t n);
void e0_vec_dot_q2_K_ref(int64_t n, float *s, const void *w, const void *a);
void e0_q3_K_to_float(const void *src, float *dst, int64_t n);
void e0_q3_K_from_float_ref(const float *x, void *dst, int64_t n);
void e0_vec_dot_q3_K_ref(int64_t n, float *s, const void *w, const void *a);
void e0_q4_K_to_float(const void *src, float *dst, int64_t n);
void e0_q4_K_from_float_ref(const float *x, void *dst, int64_t n);
void e0_vec_dot_q4_K_ref(int64_t n, float *s, const void *w, const void *a);
void e0_q5_K_to_float(const void *src, float *dst, int64_t n);
void e0_q5_K_from_float_ref(const float *x, void *dst, int64_t n);
void e0_vec_dot_q5_K_ref(int64_t n, float *s, const void *w, const void *a);
void e0_q6_K_to_float(const void *src, float *dst, int64_t n);
void e0_q6_K_from_float_ref(const float *x, void *dst, int64_t n);
void e0_vec_dot_q6_K_ref(int64_t n, float *s, const void *w, const void *a);
void e0_q8_K_to_float(const void *src, float *dst, int64_t n);
void e0_q8_K_from_float_ref(const float *x, void *dst, int64_t n); /* exactly ggml's quantize_row_q8_K_ref */
void e0_vec_dot_q8_K_ref(int64_t n, float *s, const void *w, const void *a);

/* ---- SIMD (x86/quant_k_avx2.c, x86/quant_k_avx512.c); called only on CPUs that have them ---- */
void e0_vec_dot_q2_K_avx2(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_q3_K_avx2(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_q4_K_avx2(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_q5_K_avx2(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_q6_K_avx2(int64_t n, float *s, const void *w, const void *a);
void e0_quantize_q8_K_avx2(const float *x, void *y, int64_t n);
void e0_vec_dot_q4_K_avx512(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_q5_K_avx512(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_q6_K_avx512(int64_t n, float *s, const void *w, const void *a);
/* 4-token versions (x86/quant_k_x4_avx2.c, x86/quant_k_x4_avx512.c), see e0_vec_dot_4_fn. */
void e0_vec_dot_4_q4_K_avx2(int64_t n, float *s, size_t s_stride, const void *w, const void *a, size_t a_stride);
void e0_vec_dot_4_q5_K_avx2(int64_t n, float *s, size_t s_stride, const void *w, const void *a, size_t a_stride);
void e0_vec_dot_4_q6_K_avx2(int64_t n, float *s, size_t s_stride, const void *w, const void *a, size_t a_stride);
void e0_vec_dot_4_q4_K_avx512(int64_t n, float *s, size_t s_stride, const void *w, const void *a, size_t a_stride);
void e0_vec_dot_4_q5_K_avx512(int64_t n, float *s, size_t s_stride, const void *w, const void *a, size_t a_stride);
void e0_vec_dot_4_q6_K_avx512(int64_t n, float *s, size_t s_stride, const void *w, const void *a, size_t a_stride);

/* Scalar reference Q8_K quantization of one block (the SIMD version falls back to it for blocks
 * with non-finite values so its bytes always match). */
void e0_quantize_q8_K_block_ref(const float *x, e0_block_q8_K *y);

#endif
