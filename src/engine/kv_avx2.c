/* kv_avx2.c — F16C / AVX2 code of the KV cache, used when the CPU has AVX2 + F16C: row
 * conversions (kv.c; equal to the scalar conversions bit for bit: F16C rounds to nearest even,
 * as e0_fp32_to_fp16 does, and keeps NaNs quiet the same way; every KV type back to floats
 * through kv_load8: exact, or one float product (q * d, (q - 8) * d) as in the type table's
 * to_float, so the scalar conversion's bits; tests/test_attn_tiled.c checks them) and the
 * attention loops over F16 keys and values (forward.c attend), one key or value row for all the
 * heads of its group, equal bit for bit to the type table's F16 dot product and e0_axpy on the
 * converted row. */
#include <immintrin.h>

#include "engine/ctx_impl.h"
#include "quant/blocks.h"
#include "quant/quant.h"

/* Whether kv_load8 converts heads of n values of type: a KV type, n whole groups of 8 (blocks
 * of 32 for Q8_0 / Q4_0). */
static bool kv_simd_takes(uint32_t type, int64_t n) {
    if (type == E0_TYPE_Q8_0 || type == E0_TYPE_Q4_0) return n % E0_QK == 0;
    return (type == E0_TYPE_F32 || type == E0_TYPE_F16 || type == E0_TYPE_BF16) && n % 8 == 0;
}

/* Values d .. d + 7 of the head at p (d % 8 == 0; a block type's head is whole blocks of 32). */
static inline __attribute__((always_inline)) __m256 kv_load8(uint32_t type, const uint8_t *p, int64_t d) {
    switch (type) {
    case E0_TYPE_F32:
        return _mm256_loadu_ps((const float *)(const void *)(p + 4 * d));
    case E0_TYPE_F16:
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 2 * d)));
    case E0_TYPE_BF16:
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(p + 2 * d))), 16));
    case E0_TYPE_Q8_0: {
        const uint8_t *b = p + (size_t)(d / E0_QK) * Q8_0_SIZE;
        const __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(b + Q8_0_QS + d % E0_QK)));
        return _mm256_mul_ps(_mm256_cvtepi32_ps(q), _mm256_set1_ps(_cvtsh_ss(e0_rd16(b))));
    }
    default: { /* Q4_0: byte j of qs holds element j (low nibble) and j + 16 (high) */
        const uint8_t *b = p + (size_t)(d / E0_QK) * Q4_0_SIZE;
        const int o = (int)(d % E0_QK);
        __m256i q = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(b + Q4_0_QS + o % 16)));
        q = o < 16 ? _mm256_and_si256(q, _mm256_set1_epi32(0xF)) : _mm256_srli_epi32(q, 4);
        q = _mm256_sub_epi32(q, _mm256_set1_epi32(8));
        return _mm256_mul_ps(_mm256_cvtepi32_ps(q), _mm256_set1_ps(_cvtsh_ss(e0_rd16(b))));
    }
    }
}


void e0_kv_f32_to_f16_avx2(const float *x, uint8_t *row, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(row + 2 * i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    for (; i < n; i++) e0_wr16(row + 2 * i, e0_fp32_to_fp16(x[i]));
}

bool e0_kv_to_f32_avx2(uint32_t type, const uint8_t *row, float *out, int64_t n) {
    if (!kv_simd_takes(type, n)) return false;
    switch (type) { /* one loop per type: kv_load8's switch resolved outside it */
    case E0_TYPE_F32: for (int64_t i = 0; i < n; i += 8) _mm256_storeu_ps(out + i, kv_load8(E0_TYPE_F32, row, i)); break;
    case E0_TYPE_F16: for (int64_t i = 0; i < n; i += 8) _mm256_storeu_ps(out + i, kv_load8(E0_TYPE_F16, row, i)); break;
    case E0_TYPE_BF16: for (int64_t i = 0; i < n; i += 8) _mm256_storeu_ps(out + i, kv_load8(E0_TYPE_BF16, row, i)); break;
    case E0_TYPE_Q8_0: for (int64_t i = 0; i < n; i += 8) _mm256_storeu_ps(out + i, kv_load8(E0_TYPE_Q8_0, row, i)); break;
    default: for (int64_t i = 0; i < n; i += 8) _mm256_storeu_ps(out + i, kv_load8(E0_TYPE_Q4_0, row, i)); break;
    }
    return true;
}

void e0_kv_round_f16_avx2(float *w, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(w + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(w + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
    for (; i < n; i++) w[i] = e0_fp16_to_fp32(e0_fp32_to_fp16(w[i]));
}

/* One F16 key row k (n values) against q (n floats already rounded to F16): the loop of
 * e0_vec_dot_f16_avx2 (quant/x86) without its rounding of q, so the result equals it bit for bit. */
static inline float dot_f16(int64_t n, const uint8_t *k, const float *q) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        acc0 = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(k + 2 * i))), _mm256_loadu_ps(q + i), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(k + 2 * i + 16))), _mm256_loadu_ps(q + i + 8), acc1);
        acc2 = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(k + 2 * i + 32))), _mm256_loadu_ps(q + i + 16), acc2);
        acc3 = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(k + 2 * i + 48))), _mm256_loadu_ps(q + i + 24), acc3);
    }
    for (; i + 8 <= n; i += 8)
        acc0 = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(k + 2 * i))), _mm256_loadu_ps(q + i), acc0);
    __m256 v = _mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3));
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)); /* hsum in llama.cpp's order */
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    float sum = _mm_cvtss_f32(r);
    for (; i < n; i++) sum += e0_fp16_to_fp32(e0_rd16(k + 2 * i)) * q[i];
    return sum;
}

void e0_kv_scores_f16_avx2(int64_t n, const uint8_t *k, const float *q, int n_h, float scale, float *s, size_t s_stride) {
    for (int h = 0; h < n_h; h++) s[(size_t)h * s_stride] = dot_f16(n, k, q + (size_t)h * (size_t)n) * scale;
}

void e0_kv_axpy_f16_avx2(int64_t n, const float *w, size_t w_stride, int n_h, const uint8_t *v, float *att) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(v + 2 * i)));
        for (int h = 0; h < n_h; h++) {
            float *y = att + (size_t)h * (size_t)n + i;
            _mm256_storeu_ps(y, _mm256_fmadd_ps(_mm256_set1_ps(w[(size_t)h * w_stride]), x, _mm256_loadu_ps(y)));
        }
    }
    for (; i < n; i++)
        for (int h = 0; h < n_h; h++) att[(size_t)h * (size_t)n + i] += w[(size_t)h * w_stride] * e0_fp16_to_fp32(e0_rd16(v + 2 * i));
}
