/* quant_basic_avx512.c — AVX-512 (F/BW/VL/DQ + VNNI) kernels for the float and legacy block types,
 * kept only where a micro benchmark (tools/qspeed_basic.c) showed a gain over AVX2. Registered
 * only when the CPU also has AVX512-VNNI (quant_basic.c checks).
 *
 * Float types: 512-bit FMAs (F16/BF16 widened on load). Block types: vpdpbusd (u8 x s8 -> int32,
 * no saturation) gives each block's exact integer dot in fewer uops than AVX2's maddubs chain;
 * Q4_x/Q5_x stay 256-bit (one block per vector, two accumulators), Q8_0 goes 512-bit with two
 * blocks per vector. Then one float FMA per block applies the scales, as in ggml. */
#include <immintrin.h>

#include "quant_basic.h"

static inline __m256i load32(const uint8_t *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* The 32 quant bytes of two blocks `stride` bytes apart, as one vector. */
static inline __m512i load_2x32(const uint8_t *p, int stride) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(load32(p)), load32(p + stride), 1);
}

/* ---------------- float weights ---------------- */

void e0_vec_dot_f32_avx512(int64_t n, float *s, const void *w, const void *a) {
    const float *x = w, *y = a;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i), acc0);
        acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(y + i + 16), acc1);
        acc2 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 32), _mm512_loadu_ps(y + i + 32), acc2);
        acc3 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 48), _mm512_loadu_ps(y + i + 48), acc3);
    }
    for (; i + 16 <= n; i += 16) acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i), acc0);
    if (i < n) { /* masked tail: lanes past n load as zero */
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        acc1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i), acc1);
    }
    *s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc0, acc1), _mm512_add_ps(acc2, acc3)));
}

static inline __m512 load_f16x16(const uint8_t *p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}

void e0_vec_dot_f16_avx512(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w;
    const float *y = a;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        acc0 = _mm512_fmadd_ps(load_f16x16(x + 2 * i), _mm512_loadu_ps(y + i), acc0);
        acc1 = _mm512_fmadd_ps(load_f16x16(x + 2 * i + 32), _mm512_loadu_ps(y + i + 16), acc1);
        acc2 = _mm512_fmadd_ps(load_f16x16(x + 2 * i + 64), _mm512_loadu_ps(y + i + 32), acc2);
        acc3 = _mm512_fmadd_ps(load_f16x16(x + 2 * i + 96), _mm512_loadu_ps(y + i + 48), acc3);
    }
    for (; i + 16 <= n; i += 16) acc0 = _mm512_fmadd_ps(load_f16x16(x + 2 * i), _mm512_loadu_ps(y + i), acc0);
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        __m512 wx = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, x + 2 * i));
        acc1 = _mm512_fmadd_ps(wx, _mm512_maskz_loadu_ps(m, y + i), acc1);
    }
    *s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc0, acc1), _mm512_add_ps(acc2, acc3)));
}

static inline __m512 bf16x16(__m256i v) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
}

void e0_vec_dot_bf16_avx512(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w;
    const float *y = a;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        acc0 = _mm512_fmadd_ps(bf16x16(load32(x + 2 * i)), _mm512_loadu_ps(y + i), acc0);
        acc1 = _mm512_fmadd_ps(bf16x16(load32(x + 2 * i + 32)), _mm512_loadu_ps(y + i + 16), acc1);
        acc2 = _mm512_fmadd_ps(bf16x16(load32(x + 2 * i + 64)), _mm512_loadu_ps(y + i + 32), acc2);
        acc3 = _mm512_fmadd_ps(bf16x16(load32(x + 2 * i + 96)), _mm512_loadu_ps(y + i + 48), acc3);
    }
    for (; i + 16 <= n; i += 16) acc0 = _mm512_fmadd_ps(bf16x16(load32(x + 2 * i)), _mm512_loadu_ps(y + i), acc0);
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        __m512 wx = bf16x16(_mm256_maskz_loadu_epi16(m, x + 2 * i));
        acc1 = _mm512_fmadd_ps(wx, _mm512_maskz_loadu_ps(m, y + i), acc1);
    }
    *s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc0, acc1), _mm512_add_ps(acc2, acc3)));
}

/* ---------------- legacy quants ---------------- */

/* fp16 at the start of a block, converted straight from a 16-byte load (inside the block: every
 * block is >= 18 bytes, and the field offsets used are <= 2), which keeps the conversion off the
 * shuffle port. Lane 0 holds the value. */
static inline __m128 h2f_blk(const uint8_t *p) {
    return _mm256_castps256_ps128(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)));
}

/* Scales of two block pairs: lanes 0..7 get dx0*dy0, lanes 8..15 get dx1*dy1. */
static inline __m512 scales_2(const uint8_t *x0, const uint8_t *x1, const uint8_t *y0, const uint8_t *y1) {
    __m128 dx = _mm_unpacklo_ps(h2f_blk(x0), h2f_blk(x1)), dy = _mm_unpacklo_ps(h2f_blk(y0), h2f_blk(y1));
    __m512 d = _mm512_castps128_ps512(_mm_mul_ps(dx, dy));
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1), d);
}
static inline __m256 scale_1(const uint8_t *x, const uint8_t *y) {
    return _mm256_broadcastss_ps(_mm_mul_ss(h2f_blk(x), h2f_blk(y)));
}

static inline float hsum256(__m256 v) {
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

/* Per-4-byte sums of x * y for signed x (any byte, |-128| = 128 unsigned) and signed y (never
 * -128): |x| as vpdpbusd's unsigned operand, x's sign moved onto y. */
static inline __m512i dot_ss8_512(__m512i qx, __m512i qy) {
    __m512i sy = _mm512_mask_sub_epi8(qy, _mm512_movepi8_mask(qx), _mm512_setzero_si512(), qy);
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(qx), sy);
}
static inline __m256i dot_ss8_256(__m256i qx, __m256i qy) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_abs_epi8(qx), _mm256_sign_epi8(qy, qx));
}

/* 16 bytes of nibbles -> 32 bytes: low nibbles (elements 0..15), then high nibbles (16..31). */
static inline __m256i nibbles32(const uint8_t *qs) {
    __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs));
    v = _mm256_srlv_epi32(v, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4));
    return _mm256_and_si256(v, _mm256_set1_epi8(0x0f));
}

/* sum (q - 8) * y over each 4 bytes = sum q * y - sum 8 * y, both exact in int32. */
static inline __m256i q4_0_dot256(const uint8_t *x, const uint8_t *y) {
    __m256i qy = load32(y + Q8_0_QS), z = _mm256_setzero_si256();
    return _mm256_sub_epi32(_mm256_dpbusd_epi32(z, nibbles32(x + Q4_0_QS), qy),
                            _mm256_dpbusd_epi32(z, _mm256_set1_epi8(8), qy));
}

/* Q5: the fifth bits straight into a mask register, 16 added where set (AVX512BW/VL). */
static inline __m256i q5_quants(const uint8_t *qh, const uint8_t *qs) {
    __m256i nib = nibbles32(qs);
    return _mm256_mask_add_epi8(nib, (__mmask32)e0_rd32(qh), nib, _mm256_set1_epi8(16));
}

/* Per-block integer dots as 8 int32 partial sums. Offsets (-8, -16) are subtracted as offset *
 * sum y, also with vpdpbusd; everything stays exact in int32. */
static inline __m256i q4_1_dot256(const uint8_t *x, const uint8_t *y) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), nibbles32(x + Q4_1_QS), load32(y + Q8_1_QS));
}
static inline __m256i q5_0_dot256(const uint8_t *x, const uint8_t *y) {
    __m256i qy = load32(y + Q8_0_QS), z = _mm256_setzero_si256();
    return _mm256_sub_epi32(_mm256_dpbusd_epi32(z, q5_quants(x + Q5_0_QH, x + Q5_0_QS), qy),
                            _mm256_dpbusd_epi32(z, _mm256_set1_epi8(16), qy));
}
static inline __m256i q5_1_dot256(const uint8_t *x, const uint8_t *y) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), q5_quants(x + Q5_1_QH, x + Q5_1_QS), load32(y + Q8_1_QS));
}

/* Two blocks per step into two accumulators; `has_min` adds the m_x * s_y terms (Q4_1, Q5_1). */
#define VNNI_DOT_LOOP(DOT, WSIZE, ASIZE, has_min, min_off)                                              \
    const uint8_t *x = w, *y = a;                                                                        \
    __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0;                                                      \
    __m128 summs = _mm_setzero_ps();                                                                     \
    int64_t nb = n / E0_QK, i = 0;                                                                       \
    for (; i + 2 <= nb; i += 2, x += 2 * (WSIZE), y += 2 * (ASIZE)) {                                    \
        acc0 = _mm256_fmadd_ps(scale_1(x, y), _mm256_cvtepi32_ps(DOT(x, y)), acc0);                      \
        acc1 = _mm256_fmadd_ps(scale_1(x + (WSIZE), y + (ASIZE)),                                        \
                               _mm256_cvtepi32_ps(DOT(x + (WSIZE), y + (ASIZE))), acc1);                 \
        if (has_min) {                                                                                   \
            summs = _mm_fmadd_ss(h2f_blk(x + (min_off)), h2f_blk(y + Q8_1_S), summs);                    \
            summs = _mm_fmadd_ss(h2f_blk(x + (WSIZE) + (min_off)), h2f_blk(y + (ASIZE) + Q8_1_S), summs); \
        }                                                                                                \
    }                                                                                                    \
    if (i < nb) {                                                                                        \
        acc0 = _mm256_fmadd_ps(scale_1(x, y), _mm256_cvtepi32_ps(DOT(x, y)), acc0);                      \
        if (has_min) summs = _mm_fmadd_ss(h2f_blk(x + (min_off)), h2f_blk(y + Q8_1_S), summs);           \
    }                                                                                                    \
    *s = hsum256(_mm256_add_ps(acc0, acc1)) + _mm_cvtss_f32(summs)

void e0_vec_dot_q4_0_avx512(int64_t n, float *s, const void *w, const void *a) {
    VNNI_DOT_LOOP(q4_0_dot256, Q4_0_SIZE, Q8_0_SIZE, 0, 0);
}
void e0_vec_dot_q4_1_avx512(int64_t n, float *s, const void *w, const void *a) {
    VNNI_DOT_LOOP(q4_1_dot256, Q4_1_SIZE, Q8_1_SIZE, 1, Q4_1_M);
}
void e0_vec_dot_q5_0_avx512(int64_t n, float *s, const void *w, const void *a) {
    VNNI_DOT_LOOP(q5_0_dot256, Q5_0_SIZE, Q8_0_SIZE, 0, 0);
}
void e0_vec_dot_q5_1_avx512(int64_t n, float *s, const void *w, const void *a) {
    VNNI_DOT_LOOP(q5_1_dot256, Q5_1_SIZE, Q8_1_SIZE, 1, Q5_1_M);
}

/* Q8_0: 512-bit, two blocks per vector, four per step (measured a little faster from DRAM than
 * the AVX2 kernel; equal in cache). */
void e0_vec_dot_q8_0_avx512(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w, *y = a;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0;
    int64_t nb = n / E0_QK, i = 0;
    const int S = Q8_0_SIZE;
    for (; i + 4 <= nb; i += 4, x += 4 * S, y += 4 * S) {
        __m512i p0 = dot_ss8_512(load_2x32(x + Q8_0_QS, S), load_2x32(y + Q8_0_QS, S));
        __m512i p1 = dot_ss8_512(load_2x32(x + 2 * S + Q8_0_QS, S), load_2x32(y + 2 * S + Q8_0_QS, S));
        acc0 = _mm512_fmadd_ps(scales_2(x, x + S, y, y + S), _mm512_cvtepi32_ps(p0), acc0);
        acc1 = _mm512_fmadd_ps(scales_2(x + 2 * S, x + 3 * S, y + 2 * S, y + 3 * S), _mm512_cvtepi32_ps(p1), acc1);
    }
    __m256 acc = _mm256_setzero_ps();
    for (; i < nb; i++, x += S, y += S) /* 0..3 blocks left */
        acc = _mm256_fmadd_ps(scale_1(x, y),
                              _mm256_cvtepi32_ps(dot_ss8_256(load32(x + Q8_0_QS), load32(y + Q8_0_QS))), acc);
    *s = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1)) + hsum256(acc);
}
