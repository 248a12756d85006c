/* kv_avx2.c — F16C / AVX2 row conversions of the KV cache (kv.c calls them when the CPU has
 * AVX2 + F16C; the results equal the scalar conversions in quant/fp16.h bit for bit: F16C
 * rounds to nearest even, as e0_fp32_to_fp16 does, and keeps NaNs quiet the same way). */
#include <immintrin.h>

#include "engine/ctx_impl.h"
#include "quant/quant.h"

void e0_kv_f32_to_f16_avx2(const float *x, uint8_t *row, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(row + 2 * i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    for (; i < n; i++) e0_wr16(row + 2 * i, e0_fp32_to_fp16(x[i]));
}

void e0_kv_f16_to_f32_avx2(const uint8_t *row, float *out, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(row + 2 * i))));
    for (; i < n; i++) out[i] = e0_fp16_to_fp32(e0_rd16(row + 2 * i));
}

void e0_kv_bf16_to_f32_avx2(const uint8_t *row, float *out, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(row + 2 * i)));
        _mm256_storeu_ps(out + i, _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)));
    }
    for (; i < n; i++) out[i] = e0_bf16_to_fp32(e0_rd16(row + 2 * i));
}

void e0_kv_round_f16_avx2(float *w, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(w + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(w + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
    for (; i < n; i++) w[i] = e0_fp16_to_fp32(e0_fp32_to_fp16(w[i]));
}
