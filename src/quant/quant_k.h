/* quant_k.h — internal: the K-quant block layouts (bit-compatible with ggml, QK_K = 256) and
 * the small decoders shared by the scalar (quant_k.c) and SIMD (quant_k_avx2.c,
 * quant_k_avx512.c) kernels.
 *
 * Packing summary (ggml's):
 *  q2_K  scales[j] = sub-block j's 4-bit scale (low nibble) and 4-bit min (high nibble);
 *        value = d*sc*q - dmin*m, q 2-bit.
 *  q3_K  sixteen 6-bit scales (minus 32) packed in 12 bytes; value = d*(sc-32)*(q-4), where q's
 *        low 2 bits are in qs and its bit 2 in hmask.
 *  q4_K  eight 6-bit scales and mins packed in 12 bytes (see k_scale_min); value = d*sc*q - dmin*m.
 *  q5_K  like q4_K plus a 5th bit per value in qh.
 *  q6_K  value = d*scales[j]*(q-32), q's low 4 bits in ql and high 2 bits in qh.
 *  q8_K  value = d*qs, bsums[j] = sum of qs[16j..16j+15] (used for the min / offset terms). */
#ifndef E0_QUANT_K_H
#define E0_QUANT_K_H

#include <stdint.h>
#include <string.h>

#include "quant/quant.h"

typedef struct {
    uint8_t scales[QK_K / 16];
    uint8_t qs[QK_K / 4];
    uint16_t d, dmin;
} e0_block_q2_K;

typedef struct {
    uint8_t hmask[QK_K / 8];
    uint8_t qs[QK_K / 4];
    uint8_t scales[12];
    uint16_t d;
} e0_block_q3_K;

typedef struct {
    uint16_t d, dmin;
    uint8_t scales[12];
    uint8_t qs[QK_K / 2];
} e0_block_q4_K;

typedef struct {
    uint16_t d, dmin;
    uint8_t scales[12];
    uint8_t qh[QK_K / 8];
    uint8_t qs[QK_K / 2];
} e0_block_q5_K;

typedef struct {
    uint8_t ql[QK_K / 2];
    uint8_t qh[QK_K / 4];
    int8_t scales[QK_K / 16];
    uint16_t d;
} e0_block_q6_K;

typedef struct {
    float d;
    int8_t qs[QK_K];
    int16_t bsums[QK_K / 16];
} e0_block_q8_K;

_Static_assert(sizeof(e0_block_q2_K) == 84, "q2_K block size");
_Static_assert(sizeof(e0_block_q3_K) == 110, "q3_K block size");
_Static_assert(sizeof(e0_block_q4_K) == 144, "q4_K block size");
_Static_assert(sizeof(e0_block_q5_K) == 176, "q5_K block size");
_Static_assert(sizeof(e0_block_q6_K) == 210, "q6_K block size");
_Static_assert(sizeof(e0_block_q8_K) == 292, "q8_K block size");

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

static inline uint16_t k_load_u16(const void *p) {
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

/* SIMD entry points (quant_k_avx2.c / quant_k_avx512.c); called only on CPUs that have them. */
void e0_vec_dot_q2_K_avx2(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_q3_K_avx2(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_q4_K_avx2(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_q5_K_avx2(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_q6_K_avx2(int64_t n, float *s, const void *w, const void *a);
void e0_quantize_q8_K_avx2(const float *x, void *y, int64_t n);
void e0_vec_dot_q4_K_avx512(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_q5_K_avx512(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_q6_K_avx512(int64_t n, float *s, const void *w, const void *a);
/* 4-token versions (quant_k_x4_avx2.c / quant_k_x4_avx512.c), see e0_vec_dot_4_fn. */
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
