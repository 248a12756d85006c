/* quant_iq3_avx2.c — AVX2 dot products of IQ3_XXS / IQ3_S weight rows with Q8_K activations
 * (the scheme of quant_iq3_simd.h), and the 4-token IQ3_XXS dot (the prefill GEMM of
 * gemm_avx2.c with one row). Per super-block the 8 sub-block dots are summed as int32 lanes and
 * scaled with one fma by x.d * y.d, like llama.cpp's AVX2 kernels; the scalar references are
 * quant_iq3.c's (tests/test_quant_iq3.c compares them). */
#include "quant/gemm.h"
#include "quant/x86/quant_iq3_simd.h"

void e0_vec_dot_iq3_xxs_avx2(int64_t n, float *s, const void *vw, const void *va) {
    const e0_block_q8_K *y = va;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *x = (const uint8_t *)vw + (size_t)i * IQ3_XXS_SIZE;
        e0_prefetch_bytes(x + E0_PREFETCH_BLOCKS * IQ3_XXS_SIZE, IQ3_XXS_SIZE);
        const float d = h2f(x) * y[i].d;
        __m256i sum = _mm256_setzero_si256();
        for (int ib = 0; ib < QK_K / 32; ib++) {
            __m256i grid, signs, scale;
            iq3_xxs_unpack(x, ib, &grid, &signs, &scale);
            sum = _mm256_add_epi32(sum, iq3_dot32(grid, signs, scale, y[i].qs + 32 * ib));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sum), acc);
    }
    *s = 0.25f * hsum_ps(acc);
}

void e0_vec_dot_iq3_s_avx2(int64_t n, float *s, const void *vw, const void *va) {
    const e0_block_q8_K *y = va;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *x = (const uint8_t *)vw + (size_t)i * IQ3_S_SIZE;
        e0_prefetch_bytes(x + E0_PREFETCH_BLOCKS * IQ3_S_SIZE, IQ3_S_SIZE);
        const float d = h2f(x) * y[i].d;
        __m256i sum = _mm256_setzero_si256();
        for (int ib = 0; ib < QK_K / 32; ib++) {
            __m256i grid, signs, scale;
            iq3_s_unpack(x, ib, &grid, &signs, &scale);
            sum = _mm256_add_epi32(sum, iq3_dot32(grid, signs, scale, y[i].qs + 32 * ib));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sum), acc);
    }
    *s = hsum_ps(acc);
}

void e0_vec_dot_4_iq3_xxs_avx2(int64_t n, float *s, size_t s_stride, const void *w, const void *a, size_t a_stride) {
    e0_gemm_iq3_xxs_avx2(n, 1, w, 0, E0_DOT_TOKENS, a, a_stride, s, s_stride);
}
