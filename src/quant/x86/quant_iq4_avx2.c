/* quant_iq4_avx2.c — AVX2+FMA one-token dot products of IQ4_NL and NVFP4 against Q8_0 (the
 * IQ4_XS and MXFP4 ones share a file with their GEMMs: gemm_iq4_avx2.c).
 *
 * Codes become int8 values with a 16-entry vpshufb table; int8 x int8 products use the sign
 * trick (|v| times y with v's sign, vpmaddubsw), exact for activations in -127..127 (what the
 * Q8_0 quantizer writes). Per block an exact int32 sum, one float product of the scales and one
 * fma into 8 float lanes; the lanes are summed at the end (llama.cpp's order), so results differ
 * from the scalar reference only by float rounding (tests/test_quant_iq4.c bounds it). */
#include "quant/quant_iq4.h"
#include "quant/x86/simd.h"

/* Sum in int32 lanes of the products of int8 values v with int8 activations y: lane k holds
 * elements 4k..4k+3. */
static inline __m256i dot_i8(__m256i v, __m256i y) {
    const __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(v, v), _mm256_sign_epi8(y, v));
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

void e0_vec_dot_iq4_nl_avx2(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w, *y = a;
    const __m256i tbl = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)e0_kvalues_iq4nl));
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / E0_QK_IQ4_NL; i++, x += IQ4_NL_SIZE, y += Q8_0_SIZE) {
        e0_prefetch_bytes(x + E0_PREFETCH_BLOCKS * IQ4_NL_SIZE, IQ4_NL_SIZE);
        const __m256i v = _mm256_shuffle_epi8(tbl, nibbles32(x + IQ4_NL_QS));
        const __m256 dot = _mm256_cvtepi32_ps(dot_i8(v, load32(y + Q8_0_QS)));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(h2f(y) * h2f(x)), dot, acc);
    }
    *s = hsum_ps(acc);
}

/* NVFP4: one 64-element block per two Q8_0 blocks. The 32 code bytes, split into low and high
 * nibbles, are reordered so that Q8_0 block k sees its 32 values in element order: sub-block
 * 2k (bytes 16k..16k+7: low nibbles, then high) then sub-block 2k+1 (bytes 16k+8..16k+15).
 * The int32 lanes 0-3 then belong to sub-block 2k and 4-7 to 2k+1, each with its own scale. */
void e0_vec_dot_nvfp4_avx2(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w, *y = a;
    const __m256i tbl = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)e0_kvalues_fp4));
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / E0_QK_NVFP4; i++, x += NVFP4_SIZE, y += 2 * Q8_0_SIZE) {
        e0_prefetch_bytes(x + E0_PREFETCH_BLOCKS * NVFP4_SIZE, NVFP4_SIZE);
        const __m256i bytes = load32(x + NVFP4_QS);
        const __m256i lo = _mm256_and_si256(bytes, m4), hi = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), m4);
        const __m256i ul = _mm256_unpacklo_epi64(lo, hi), uh = _mm256_unpackhi_epi64(lo, hi);
        const __m256i codes[2] = {_mm256_permute2x128_si256(ul, uh, 0x20), _mm256_permute2x128_si256(ul, uh, 0x31)};
        for (int k = 0; k < 2; k++) {
            const uint8_t *yb = y + k * Q8_0_SIZE;
            const float dy = h2f(yb);
            const __m256 scale = _mm256_set_m128(_mm_set1_ps(dy * e0_ue4m3_to_fp32_half(x[2 * k + 1])),
                                                 _mm_set1_ps(dy * e0_ue4m3_to_fp32_half(x[2 * k])));
            const __m256i v = _mm256_shuffle_epi8(tbl, codes[k]);
            acc = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(dot_i8(v, load32(yb + Q8_0_QS))), acc);
        }
    }
    *s = hsum_ps(acc);
}
