/* quant_basic_x4_avx2.c — AVX2 4-token dot product for prefill: one q8_0 weight row against 4
 * Q8_0 activation rows (e0_vec_dot_4_fn).
 *
 * Per weight block, its bytes, their absolute values and its fp16 scale are loaded once for the
 * 4 tokens. Per token the operations are those of e0_vec_dot_q8_0_avx2 (quant_basic_avx2.c) in
 * the same order, so each result is bit-identical to it (tests/test_gemm.c). */
#include "quant/quant_basic.h"
#include "quant/x86/simd.h"

#define NT E0_DOT_TOKENS

void e0_vec_dot_4_q8_0_avx2(int64_t n, float *s, size_t s_stride, const void *w, const void *a, size_t a_stride) {
    const uint8_t *x = w;
    __m256 acc[NT];
    for (int k = 0; k < NT; k++) acc[k] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / E0_QK; i++, x += Q8_0_SIZE) {
        const __m256i xq = _mm256_loadu_si256((const __m256i *)(x + Q8_0_QS));
        const __m256i xabs = _mm256_sign_epi8(xq, xq);
        const __m128 xd = h2f_blk(x);
        #pragma GCC unroll 4
        for (int k = 0; k < NT; k++) {
            const uint8_t *y = (const uint8_t *)a + (size_t)k * a_stride + (size_t)i * Q8_0_SIZE;
            /* x's sign moved onto y, as dot_ss8 there */
            const __m256i ys = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(y + Q8_0_QS)), xq);
            const __m256i p16 = _mm256_maddubs_epi16(xabs, ys);
            const __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
            const __m256 scale = _mm256_broadcastss_ps(_mm_mul_ss(xd, h2f_blk(y)));
            acc[k] = _mm256_fmadd_ps(scale, dot, acc[k]);
        }
    }
    const float summs = 0; /* the one-token loop adds its (here zero) min terms: keeps -0 + 0 = +0 */
    for (int k = 0; k < NT; k++) s[(size_t)k * s_stride] = hsum_ps(acc[k]) + summs;
}
