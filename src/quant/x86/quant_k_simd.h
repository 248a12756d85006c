/* quant_k_simd.h — the SSE/AVX helpers of the K-quant kernels, shared by quant_k_avx2.c,
 * quant_k_avx512.c and their 4-token versions (include only from files compiled with at least
 * -mavx2 -mfma -mf16c). */
#ifndef E0_QUANT_K_SIMD_H
#define E0_QUANT_K_SIMD_H

#include "quant/quant_k.h"
#include "quant/x86/simd.h"

/* q4_K / q5_K: the 12 packed scale bytes (see k_scale_min) to 8 scales (bytes 0..7) and 8 mins
 * (bytes 8..15), all in vector registers. Reads 16 bytes at p: in both block layouts the scales
 * are followed by at least 4 more bytes of the same block. */
static inline __m128i k_unpack_scales_mins_simd(const uint8_t *p) {
    const __m128i v = _mm_loadu_si128((const __m128i *)p);
    /* low parts: scales 0-3 = b0-3 & 63, scales 4-7 = b8-11 & 15, mins 0-3 = b4-7 & 63,
     * mins 4-7 = b8-11 >> 4 */
    const __m128i s1 = _mm_shuffle_epi8(v, _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11));
    const __m128i lo = _mm_or_si128(
        _mm_and_si128(s1, _mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0)),
        _mm_and_si128(_mm_srli_epi16(s1, 4), _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15)));
    /* high 2 bits of scales / mins 4-7: top bits of b0-3 / b4-7, moved to bits 4-5 */
    const __m128i s2 = _mm_shuffle_epi8(v, _mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7));
    return _mm_or_si128(lo, _mm_and_si128(_mm_srli_epi16(s2, 2), _mm_set1_epi8(0x30)));
}

/* The final reductions of the q4_K / q5_K dots (acc: scaled block sums, acc_m: min terms). Each
 * 4-token kernel must use the one of its one-token kernel so that results stay bit-identical. */
static inline float q45_finish_avx2(__m256 acc, __m128 acc_m) { /* quant_k_avx2.c's order */
    acc_m = _mm_add_ps(acc_m, _mm_movehl_ps(acc_m, acc_m));
    acc_m = _mm_add_ss(acc_m, _mm_movehdup_ps(acc_m));
    return hsum_ps(acc) + _mm_cvtss_f32(acc_m);
}
static inline float q45_finish_avx512(__m256 acc, __m128 acc_m) { /* quant_k_avx512.c's order */
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    r = _mm_add_ps(r, acc_m);
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

/* q6_K: the 4 code vectors (u = q + 32 in 0..63, 32 values each) of one 128-value half of a
 * block, from its 64 ql bytes and 32 qh bytes: u[g] = nibbles | high bits << 4. The high bits are
 * moved to bits 4-5 by one 16-bit shift each (bits that cross into the next byte are masked
 * off), 17 operations instead of 21; shared by the one-token, 4-token and GEMM kernels. */
static inline __attribute__((always_inline)) void q6_codes(const uint8_t *ql, const uint8_t *qh, __m256i u[4]) {
    const __m256i m4 = _mm256_set1_epi8(0xF), m30 = _mm256_set1_epi8(0x30);
    const __m256i ql0 = _mm256_loadu_si256((const __m256i *)ql), ql1 = _mm256_loadu_si256((const __m256i *)(ql + 32));
    const __m256i h = _mm256_loadu_si256((const __m256i *)qh);
    u[0] = _mm256_or_si256(_mm256_and_si256(ql0, m4), _mm256_and_si256(_mm256_slli_epi16(h, 4), m30));
    u[1] = _mm256_or_si256(_mm256_and_si256(ql1, m4), _mm256_and_si256(_mm256_slli_epi16(h, 2), m30));
    u[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4), _mm256_and_si256(h, m30));
    u[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4), _mm256_and_si256(_mm256_srli_epi16(h, 2), m30));
}

#endif
