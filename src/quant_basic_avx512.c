/* quant_basic_avx512.c — AVX-512 (F/BW/VL/DQ + VNNI) kernels for the float and legacy block types,
 * kept only where a micro benchmark (tools/qspeed_basic.c) showed a gain over AVX2. Registered
 * only when the CPU also has AVX512-VNNI (quant_basic.c checks).
 *
 * Quantized dots handle two 32-element blocks per 512-bit vector: one vpdpbusd gives the exact
 * per-block integer dot as 8 int32 partial sums per block, then one FMA applies both blocks'
 * scales. */
#include <immintrin.h>

#include "quant_basic.h"

static inline float h2f(const uint8_t *p) { return _cvtsh_ss(e0_rd16(p)); }

static inline __m256i load32(const uint8_t *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* The 32 quant bytes of two blocks `stride` bytes apart, as one vector. */
static inline __m512i load_2x32(const uint8_t *p, int stride) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(load32(p)), load32(p + stride), 1);
}

/* Scale d0 for the low 8 lanes (first block), d1 for the high 8. */
static inline __m512 scales2(float d0, float d1) {
    return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_set1_ps(d0)), _mm256_set1_ps(d1), 1);
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

/* ---------------- legacy quants ---------------- */

/* Per-4-byte sums of x[i] * y[i] for signed x (any byte) and signed y (never -128): |x| as the
 * unsigned operand, x's sign moved onto y. */
static inline __m512i dot_ss8(__m512i qx, __m512i qy) {
    __m512i sy = _mm512_mask_sub_epi8(qy, _mm512_movepi8_mask(qx), _mm512_setzero_si512(), qy);
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(qx), sy);
}

void e0_vec_dot_q8_0_avx512(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w, *y = a;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0;
    int64_t nb = n / E0_QK, i = 0;
    for (; i + 4 <= nb; i += 4, x += 4 * Q8_0_SIZE, y += 4 * Q8_0_SIZE) {
        __m512i p0 = dot_ss8(load_2x32(x + Q8_0_QS, Q8_0_SIZE), load_2x32(y + Q8_0_QS, Q8_0_SIZE));
        __m512i p1 = dot_ss8(load_2x32(x + 2 * Q8_0_SIZE + Q8_0_QS, Q8_0_SIZE),
                             load_2x32(y + 2 * Q8_0_SIZE + Q8_0_QS, Q8_0_SIZE));
        __m512 d0 = scales2(h2f(x) * h2f(y), h2f(x + Q8_0_SIZE) * h2f(y + Q8_0_SIZE));
        __m512 d1 = scales2(h2f(x + 2 * Q8_0_SIZE) * h2f(y + 2 * Q8_0_SIZE),
                            h2f(x + 3 * Q8_0_SIZE) * h2f(y + 3 * Q8_0_SIZE));
        acc0 = _mm512_fmadd_ps(d0, _mm512_cvtepi32_ps(p0), acc0);
        acc1 = _mm512_fmadd_ps(d1, _mm512_cvtepi32_ps(p1), acc1);
    }
    float sum = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
    for (; i < nb; i++, x += Q8_0_SIZE, y += Q8_0_SIZE) { /* 0..3 leftover blocks */
        __m256i qx = load32(x + Q8_0_QS), qy = load32(y + Q8_0_QS);
        __m256i sy = _mm256_sign_epi8(qy, qx);
        __m256i p = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_abs_epi8(qx), sy);
        __m256 v = _mm256_cvtepi32_ps(p);
        __m128 r = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        r = _mm_add_ps(r, _mm_movehl_ps(r, r));
        r = _mm_add_ss(r, _mm_movehdup_ps(r));
        sum += _mm_cvtss_f32(r) * (h2f(x) * h2f(y));
    }
    *s = sum;
}

/* Two Q4_0 blocks' nibbles: [lo0, hi0, lo1, hi1] in 128-bit lanes = elements of block 0 then 1. */
static inline __m512i nibbles_2x32(const uint8_t *qs0, const uint8_t *qs1) {
    __m256i v = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)qs1), _mm_loadu_si128((const __m128i *)qs0));
    __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(v), _mm256_srli_epi16(v, 4), 1);
    /* both = [lo0', lo1', hi0', hi1'] (before masking); reorder lanes to [0, 2, 1, 3] */
    both = _mm512_shuffle_i64x2(both, both, _MM_SHUFFLE(3, 1, 2, 0));
    return _mm512_and_si512(both, _mm512_set1_epi8(0x0f));
}

void e0_vec_dot_q4_0_avx512(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w, *y = a;
    const __m512i eight = _mm512_set1_epi8(8), zero = _mm512_setzero_si512();
    __m512 acc = _mm512_setzero_ps();
    int64_t nb = n / E0_QK, i = 0;
    for (; i + 2 <= nb; i += 2, x += 2 * Q4_0_SIZE, y += 2 * Q8_0_SIZE) {
        __m512i qx = nibbles_2x32(x + Q4_0_QS, x + Q4_0_SIZE + Q4_0_QS);
        __m512i qy = load_2x32(y + Q8_0_QS, Q8_0_SIZE);
        /* sum (q - 8) * y = sum q * y - sum 8 * y, both exact in int32 */
        __m512i p = _mm512_sub_epi32(_mm512_dpbusd_epi32(zero, qx, qy), _mm512_dpbusd_epi32(zero, eight, qy));
        __m512 d = scales2(h2f(x) * h2f(y), h2f(x + Q4_0_SIZE) * h2f(y + Q8_0_SIZE));
        acc = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(p), acc);
    }
    float sum = _mm512_reduce_add_ps(acc);
    if (i < nb) { /* odd block count: one block left */
        __m128i v = _mm_loadu_si128((const __m128i *)(x + Q4_0_QS));
        __m256i qx = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(v, 4), v), _mm256_set1_epi8(0x0f));
        __m256i qy = load32(y + Q8_0_QS), z = _mm256_setzero_si256();
        __m256i p = _mm256_sub_epi32(_mm256_dpbusd_epi32(z, qx, qy), _mm256_dpbusd_epi32(z, _mm256_set1_epi8(8), qy));
        __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(p), _mm256_extracti128_si256(p, 1));
        s4 = _mm_add_epi32(s4, _mm_unpackhi_epi64(s4, s4));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 1));
        sum += (float)_mm_cvtsi128_si32(s4) * (h2f(x) * h2f(y));
    }
    *s = sum;
}
