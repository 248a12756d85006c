/* quant_k_x4_avx2.c — AVX2+FMA 4-token dot products for prefill: one q4_K / q5_K / q6_K weight
 * row against 4 Q8_K activation rows (e0_vec_dot_4_fn).
 *
 * Each weight block is unpacked once (nibbles, high bits, scales) and used for the 4 tokens.
 * Per token, the operations are those of quant_k_avx2.c in the same order — the same integer
 * block sums and the same float accumulation — so every result is bit-identical to calling
 * e0_vec_dot_*_avx2 per token (tests/test_gemm.c checks it with memcmp). */
#include "quant/x86/quant_k_simd.h"

#define NT E0_DOT_TOKENS

/* q4_K / q5_K: one super-block for NT tokens; y[k] is token k's Q8_K block (scheme of
 * q45_K_block in quant_k_avx2.c). */
static inline __attribute__((always_inline)) void q45_block_x4(const uint8_t *scales_packed, const e0_block_q8_K *const y[NT], const uint8_t *qs,
                                const uint8_t *qh, const float d[NT], const float dmin[NT], __m256 acc[NT],
                                __m128 acc_m[NT]) {
    const __m256i m4 = _mm256_set1_epi8(0xF), m1 = _mm256_set1_epi8(1);
    const __m256i mins_scales = _mm256_cvtepu8_epi16(k_unpack_scales_mins_simd(scales_packed));
    const __m128i mins = _mm256_extracti128_si256(mins_scales, 1);
    #pragma GCC unroll 4
    for (int k = 0; k < NT; k++) {
        const __m256i bsums = _mm256_loadu_si256((const __m256i *)y[k]->bsums);
        const __m128i bsum_pairs = _mm_hadd_epi16(_mm256_castsi256_si128(bsums), _mm256_extracti128_si256(bsums, 1));
        acc_m[k] = _mm_fmadd_ps(_mm_set1_ps(dmin[k]), _mm_cvtepi32_ps(_mm_madd_epi16(mins, bsum_pairs)), acc_m[k]);
    }
    const __m128i sc128 = _mm256_castsi256_si128(mins_scales);
    const __m256i scales = _mm256_set_m128i(sc128, sc128);
    const __m256i hbits = qh ? _mm256_loadu_si256((const __m256i *)qh) : _mm256_setzero_si256();
    __m256i sum[NT];
    #pragma GCC unroll 4
    for (int k = 0; k < NT; k++) sum[k] = _mm256_setzero_si256();
    #pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        const __m256i bits = _mm256_loadu_si256((const __m256i *)(qs + 32 * j));
        __m256i ul = _mm256_and_si256(bits, m4), uh = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
        if (qh) {
            ul = _mm256_or_si256(ul, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * j), m1), 4));
            uh = _mm256_or_si256(uh, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * j + 1), m1), 4));
        }
        const __m256i sc_lo = _mm256_shuffle_epi8(scales, word_ctrl(2 * j));
        const __m256i sc_hi = _mm256_shuffle_epi8(scales, word_ctrl(2 * j + 1));
        #pragma GCC unroll 4
        for (int k = 0; k < NT; k++) {
            const int8_t *q8 = y[k]->qs + 64 * j;
            const __m256i pl = _mm256_madd_epi16(_mm256_maddubs_epi16(ul, _mm256_loadu_si256((const __m256i *)q8)), sc_lo);
            const __m256i ph = _mm256_madd_epi16(_mm256_maddubs_epi16(uh, _mm256_loadu_si256((const __m256i *)(q8 + 32))), sc_hi);
            sum[k] = _mm256_add_epi32(sum[k], _mm256_add_epi32(pl, ph));
        }
    }
    #pragma GCC unroll 4
    for (int k = 0; k < NT; k++) acc[k] = _mm256_fmadd_ps(_mm256_set1_ps(d[k]), _mm256_cvtepi32_ps(sum[k]), acc[k]);
}

/* Shared by q4_K and q5_K: exactly one of x4 / x5 is non-NULL (a constant at each call site, so
 * the compiler drops the other branch). */
static inline __attribute__((always_inline)) void q45_rows_x4(int64_t n, float *s, size_t s_stride,
                                                              const e0_block_q4_K *x4, const e0_block_q5_K *x5,
                                                              const void *va, size_t a_stride) {
    const e0_block_q8_K *yrow[NT];
    __m256 acc[NT];
    __m128 acc_m[NT];
    for (int k = 0; k < NT; k++) {
        yrow[k] = (const e0_block_q8_K *)((const uint8_t *)va + (size_t)k * a_stride);
        acc[k] = _mm256_setzero_ps();
        acc_m[k] = _mm_setzero_ps();
    }
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float xd = fp16(x4 ? x4[i].d : x5[i].d), xdmin = fp16(x4 ? x4[i].dmin : x5[i].dmin);
        const e0_block_q8_K *y[NT];
        float d[NT], dmin[NT];
        for (int k = 0; k < NT; k++) {
            y[k] = &yrow[k][i];
            d[k] = y[k]->d * xd;
            dmin[k] = -y[k]->d * xdmin;
        }
        if (x4) q45_block_x4(x4[i].scales, y, x4[i].qs, NULL, d, dmin, acc, acc_m);
        else q45_block_x4(x5[i].scales, y, x5[i].qs, x5[i].qh, d, dmin, acc, acc_m);
    }
    for (int k = 0; k < NT; k++) s[(size_t)k * s_stride] = q45_finish_avx2(acc[k], acc_m[k]);
}

void e0_vec_dot_4_q4_K_avx2(int64_t n, float *s, size_t s_stride, const void *vw, const void *va, size_t a_stride) {
    q45_rows_x4(n, s, s_stride, vw, NULL, va, a_stride);
}

void e0_vec_dot_4_q5_K_avx2(int64_t n, float *s, size_t s_stride, const void *vw, const void *va, size_t a_stride) {
    q45_rows_x4(n, s, s_stride, NULL, vw, va, a_stride);
}

/* q6_K: as e0_vec_dot_q6_K_avx2 — 4 code vectors of 32 per 128 values, scales per pair of
 * sub-blocks from one vpshufb each. */
void e0_vec_dot_4_q6_K_avx2(int64_t n, float *s, size_t s_stride, const void *vw, const void *va, size_t a_stride) {
    const e0_block_q6_K *x = vw;
    const e0_block_q8_K *yrow[NT];
    __m256 acc[NT];
    for (int k = 0; k < NT; k++) {
        yrow[k] = (const e0_block_q8_K *)((const uint8_t *)va + (size_t)k * a_stride);
        acc[k] = _mm256_setzero_ps();
    }
    for (int64_t i = 0; i < n / QK_K; i++) {
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x[i].scales));
        const __m256i scs[2] = {_mm256_permute4x64_epi64(sc16, 0x44), _mm256_permute4x64_epi64(sc16, 0xEE)};
        __m256i sumi[NT];
        #pragma GCC unroll 4
        for (int k = 0; k < NT; k++) {
            /* codes are stored as u = q + 32 in 0..63: subtract 32 * sum(scale * bsum) */
            const __m256i offs = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)yrow[k][i].bsums));
            sumi[k] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(offs, 5));
        }
        #pragma GCC unroll 2
        for (int c = 0; c < 2; c++) {
            __m256i u[4];
            q6_codes(x[i].ql + 64 * c, x[i].qh + 32 * c, u);
            #pragma GCC unroll 4
            for (int g = 0; g < 4; g++) {
                const __m256i sc = _mm256_shuffle_epi8(scs[c], word_pair_ctrl(2 * g, 2 * g + 1));
                #pragma GCC unroll 4
                for (int k = 0; k < NT; k++) {
                    const int8_t *q8 = yrow[k][i].qs + 128 * c + 32 * g;
                    const __m256i p = _mm256_maddubs_epi16(u[g], _mm256_loadu_si256((const __m256i *)q8));
                    sumi[k] = _mm256_add_epi32(sumi[k], _mm256_madd_epi16(p, sc));
                }
            }
        }
        #pragma GCC unroll 4
        for (int k = 0; k < NT; k++) {
            const float d = yrow[k][i].d * fp16(x[i].d);
            acc[k] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi[k]), acc[k]);
        }
    }
    for (int k = 0; k < NT; k++) s[(size_t)k * s_stride] = hsum_ps(acc[k]);
}
