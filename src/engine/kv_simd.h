/* kv_simd.h — eight values of a KV cache head as floats, for the AVX2 files (kv_avx2.c,
 * attn_tiled_avx2.c; include only where AVX2 + F16C are enabled). Every KV type llama.cpp's
 * --cache-type-k/-v accepts: F32, F16, BF16, Q8_0 and Q4_0 (kv.c). Each conversion is exact or one
 * float product (q * d, (q - 8) * d) as in the type table's to_float, so the results equal the
 * scalar conversion bit for bit (tests/test_attn_tiled.c checks it). */
#ifndef E0_KV_SIMD_H
#define E0_KV_SIMD_H

#include <immintrin.h>
#include <stdbool.h>

#include "quant/blocks.h"
#include "quant/quant.h"

/* Whether kv_load8 converts heads of n values of type: a KV type, n whole groups of 8 (blocks
 * of 32 for Q8_0 / Q4_0). */
static inline bool kv_simd_takes(uint32_t type, int64_t n) {
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

#endif
