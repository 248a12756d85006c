/* quant_iq3_simd.h — AVX2 unpacking of IQ3_XXS / IQ3_S sub-blocks (32 values), shared by the dot
 * kernels of quant_iq3_avx2.c and the prefill GEMM of gemm_avx2.c (include only from files
 * compiled with at least -mavx2 -mfma -mf16c). A sub-block unpacks into three vectors: the 32
 * grid magnitudes (unsigned bytes, <= 62), the 32 signs as +1/-1 bytes (applied to the
 * activations with vpsignb, so that vpmaddubsw keeps its unsigned operand), and the scale
 * 2*ls+1 as 16 int16 lanes. A dot per sub-block is then
 *   madd(maddubs(grid, sign(q8, signs)), scale)  -> 8 int32 lanes, lane j = groups j (4 values),
 * exact (|maddubs| <= 2*62*127, no saturation), so any kernel using it gives the same integers. */
#ifndef E0_QUANT_IQ3_SIMD_H
#define E0_QUANT_IQ3_SIMD_H

#include "quant/quant_iq3.h"
#include "quant/x86/simd.h"

/* +1/-1 bytes for 32 values from their 32 sign bits (bit k of s: value k negative). */
static inline __m256i iq3_sign_vec(uint32_t s) {
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3,
                                            3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    const __m256i v = _mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32((int)s), spread), bit);
    return _mm256_or_si256(_mm256_cmpeq_epi8(v, bit), _mm256_set1_epi8(1));
}

/* The 8 grid points of indices idx[0..7] (any table of 4-byte points), as 32 bytes. */
static inline __m256i iq3_grid8(const uint32_t *grid, const unsigned idx[8]) {
    return _mm256_setr_epi32((int)grid[idx[0]], (int)grid[idx[1]], (int)grid[idx[2]], (int)grid[idx[3]], (int)grid[idx[4]],
                             (int)grid[idx[5]], (int)grid[idx[6]], (int)grid[idx[7]]);
}

/* Sub-block ib of the IQ3_XXS block at b. */
static inline void iq3_xxs_unpack(const uint8_t *b, int ib, __m256i *grid, __m256i *signs, __m256i *scale) {
    const uint8_t *q = b + IQ3_XXS_QS + 8 * ib;
    const unsigned idx[8] = {q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7]};
    *grid = iq3_grid8(e0_iq3_xxs_grid, idx);
    const uint32_t aux = e0_rd32(b + IQ3_XXS_SAS + 4 * ib);
    const uint32_t s = (uint32_t)e0_iq3_xxs_signs(aux) | (uint32_t)e0_iq3_xxs_signs(aux >> 7) << 8 |
                       (uint32_t)e0_iq3_xxs_signs(aux >> 14) << 16 | (uint32_t)e0_iq3_xxs_signs(aux >> 21) << 24;
    *signs = iq3_sign_vec(s);
    *scale = _mm256_set1_epi16((short)(2 * (aux >> 28) + 1));
}

/* Sub-block ib of the IQ3_S block at b. */
static inline void iq3_s_unpack(const uint8_t *b, int ib, __m256i *grid, __m256i *signs, __m256i *scale) {
    const uint8_t *q = b + IQ3_S_QS + 8 * ib;
    const unsigned h = b[IQ3_S_QH + ib];
    unsigned idx[8];
    for (int g = 0; g < 8; g++) idx[g] = q[g] | ((h >> g & 1) << 8);
    *grid = iq3_grid8(e0_iq3_s_grid, idx);
    *signs = iq3_sign_vec(e0_rd32(b + IQ3_S_SIGNS + 4 * ib));
    *scale = _mm256_set1_epi16((short)(2 * ((b[IQ3_S_SCALES + ib / 2] >> (4 * (ib % 2))) & 0xf) + 1));
}

/* The per-sub-block integer dot (see the top of the file). */
static inline __m256i iq3_dot32(__m256i grid, __m256i signs, __m256i scale, const int8_t *q8) {
    const __m256i y = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)q8), signs);
    return _mm256_madd_epi16(_mm256_maddubs_epi16(grid, y), scale);
}

#endif
