/* gemm_iq2_avx2.c — AVX2 kernels of IQ2_XXS against Q8_K: the one-token vec_dot (decode), the
 * prefill GEMM (e0_gemm_fn, see kernel.h: up to E0_GEMM_ROWS rows x E0_GEMM_TOKENS tokens) and
 * the 4-token dot (the GEMM with one row). Declared in quant_iq2.h and gemm.h.
 *
 * A sub-block of 32 weights is 8 bytes: four grid indices (one group of 8 magnitudes 8/25/43
 * each, e0_iq2xxs_grid) and a 32-bit word of four 7-bit sign fields plus a 4-bit scale ls. The
 * signs come from a table of +1/-1 bytes (e0_iq2_sign_pm1, parity bit included), four 8-byte
 * lookups per sub-block, so no bit fiddling per element.
 *
 *  vec_dot: per sub-block the signed weights v = grid * sign (int8, |v| <= 43), then
 *           maddubs(|q8|, v * sign(q8)) -> int16 pairs, madd with 2*ls+1 -> int32 lanes; two
 *           sub-blocks in flight (independent sums). |q8| is taken as unsigned, so q8 = -128
 *           is exact too (the shortcut sign(q8, signs) is not: -(-128) wraps); the shuffle-port
 *           work of the table lookups, not these multiplies, bounds this loop.
 *  gemm:    each row's sub-block is unpacked once into signed weights v = grid * sign (int8,
 *           |v| <= 43) and shared by all tokens; the activations are offset to unsigned bytes
 *           u = q8 + 128 once per token and block, so one maddubs(u, v) per (row, token,
 *           sub-block) does the products (pairs <= 2*255*43, no saturation). The offset adds
 *           128 * sum(v) per sub-block, a term of the row alone: it is summed once per row
 *           (with the same scales) and subtracted. The 8 tokens' int32 lanes are summed
 *           together (a transposing hadd tree: lane t = token t's block sum).
 * Every integer sum is exact for any int8 activations (|block sum| < 2^27), so both give the scalar reference's integer
 * per block; the float steps are the reference's, in its order, lane-wise (d = x.d * y.d, then
 * sumf += d * bsum, then 0.125 * sumf): results equal e0_vec_dot_iq2_xxs_ref bit for bit,
 * whatever the batch (tests/test_quant_iq2.c checks with memcmp). */
#include <immintrin.h>

#include "quant/gemm.h"
#include "quant/quant_iq2.h"

#define AI static inline __attribute__((always_inline))
#define MAXT 8 /* this kernel's token lanes: one __m256i (a call with more tokens runs in groups of 8) */
#define MAXR E0_GEMM_ROWS


/* The 32 grid magnitudes of the sub-block whose indices are q[0..3]. */
AI __m256i xxs_grid(const uint8_t *q) {
    const uint64_t *g = e0_iq2xxs_grid;
    return _mm256_set_epi64x((long long)g[q[3]], (long long)g[q[2]], (long long)g[q[1]], (long long)g[q[0]]);
}

/* The 32 signs (+1/-1 bytes) of the sub-block whose sign-and-scale word is aux. */
AI __m256i xxs_signs(uint32_t aux) {
    const uint64_t *t = e0_iq2_sign_pm1;
    return _mm256_set_epi64x((long long)t[aux >> 21 & 127], (long long)t[aux >> 14 & 127], (long long)t[aux >> 7 & 127],
                             (long long)t[aux & 127]);
}

AI __m256i xxs_scale(uint32_t aux) { return _mm256_set1_epi16((short)(2 * (aux >> 28) + 1)); }

AI int hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

/* Lane t = the sum of the 8 int32 lanes of v[t], t = 0..7. */
AI __m256i hsum8_i32(const __m256i v[8]) {
    const __m256i a = _mm256_hadd_epi32(v[0], v[1]), b = _mm256_hadd_epi32(v[2], v[3]);
    const __m256i c = _mm256_hadd_epi32(v[4], v[5]), d = _mm256_hadd_epi32(v[6], v[7]);
    const __m256i ab = _mm256_hadd_epi32(a, b), cd = _mm256_hadd_epi32(c, d);
    /* ab: lanes 0-3 = v[0..3] elements 0-3, lanes 4-7 = v[0..3] elements 4-7; cd likewise */
    return _mm256_add_epi32(_mm256_permute2x128_si256(ab, cd, 0x20), _mm256_permute2x128_si256(ab, cd, 0x31));
}

void e0_vec_dot_iq2_xxs_avx2(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w;
    const e0_block_q8_K *y = a;
    float sumf = 0;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *b = x + (size_t)i * IQ2XXS_SIZE, *q = b + IQ2XXS_QS;
        e0_prefetch_bytes(b + E0_PREFETCH_BLOCKS * IQ2XXS_SIZE, IQ2XXS_SIZE);
        const int8_t *q8 = y[i].qs;
        __m256i s1 = _mm256_setzero_si256(), s2 = _mm256_setzero_si256();
        #pragma GCC unroll 4
        for (int ib = 0; ib < 8; ib += 2) {
            const uint32_t a1 = e0_rd32(q + 8 * ib + 4), a2 = e0_rd32(q + 8 * ib + 12);
            const __m256i y1 = _mm256_loadu_si256((const __m256i *)(q8 + 32 * ib));
            const __m256i y2 = _mm256_loadu_si256((const __m256i *)(q8 + 32 * ib + 32));
            const __m256i v1 = _mm256_sign_epi8(xxs_grid(q + 8 * ib), xxs_signs(a1));
            const __m256i v2 = _mm256_sign_epi8(xxs_grid(q + 8 * ib + 8), xxs_signs(a2));
            const __m256i p1 = _mm256_maddubs_epi16(_mm256_abs_epi8(y1), _mm256_sign_epi8(v1, y1));
            const __m256i p2 = _mm256_maddubs_epi16(_mm256_abs_epi8(y2), _mm256_sign_epi8(v2, y2));
            s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(p1, xxs_scale(a1)));
            s2 = _mm256_add_epi32(s2, _mm256_madd_epi16(p2, xxs_scale(a2)));
        }
        const float d = e0_fp16_to_fp32(e0_rd16(b)) * y[i].d;
        const float term = d * (float)hsum_i32(_mm256_add_epi32(s1, s2));
        sumf += term; /* own statement: no compiler may fuse it into an fma (the reference has none) */
    }
    *s = 0.125f * sumf;
}

/* nr rows x NT tokens (NT a constant at each instance). */
AI void xxs_gemm(int64_t n, int nr, const uint8_t *w, size_t w_stride, const int NT, const uint8_t *a, size_t a_stride,
                 float *s, size_t s_stride) {
    const __m256i bias = _mm256_set1_epi8((char)0x80), ones = _mm256_set1_epi8(1);
    __m256 sumf[MAXR];
    for (int r = 0; r < nr; r++) sumf[r] = _mm256_setzero_ps();
    __m256i u[8][MAXT]; /* [sub-block][token]: activations + 128, as unsigned bytes */
    for (int64_t i = 0; i < n / QK_K; i++) {
        float yd[MAXT] = {0};
        for (int t = 0; t < NT; t++) {
            const e0_block_q8_K *y = (const e0_block_q8_K *)(a + (size_t)t * a_stride) + i;
            yd[t] = y->d;
            #pragma GCC unroll 8
            for (int ib = 0; ib < 8; ib++)
                u[ib][t] = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(y->qs + 32 * ib)), bias);
        }
        const __m256 ydv = _mm256_loadu_ps(yd);
        for (int r = 0; r < nr; r++) {
            const uint8_t *b = w + (size_t)r * w_stride + (size_t)i * IQ2XXS_SIZE, *q = b + IQ2XXS_QS;
            e0_prefetch_bytes(b + E0_PREFETCH_BLOCKS * IQ2XXS_SIZE, IQ2XXS_SIZE);
            __m256i acc[MAXT], corr = _mm256_setzero_si256();
            #pragma GCC unroll 8
            for (int t = 0; t < MAXT; t++) acc[t] = _mm256_setzero_si256();
            for (int ib = 0; ib < 8; ib++) {
                const uint32_t aux = e0_rd32(q + 8 * ib + 4);
                const __m256i v = _mm256_sign_epi8(xxs_grid(q + 8 * ib), xxs_signs(aux));
                const __m256i sc = xxs_scale(aux);
                corr = _mm256_add_epi32(corr, _mm256_madd_epi16(_mm256_maddubs_epi16(ones, v), sc));
                #pragma GCC unroll 8
                for (int t = 0; t < NT; t++)
                    acc[t] = _mm256_add_epi32(acc[t], _mm256_madd_epi16(_mm256_maddubs_epi16(u[ib][t], v), sc));
            }
            const __m256i bsum = _mm256_sub_epi32(hsum8_i32(acc), _mm256_set1_epi32(128 * hsum_i32(corr)));
            const __m256 d = _mm256_mul_ps(_mm256_set1_ps(e0_fp16_to_fp32(e0_rd16(b))), ydv);
            sumf[r] = _mm256_add_ps(sumf[r], _mm256_mul_ps(d, _mm256_cvtepi32_ps(bsum)));
        }
    }
    for (int r = 0; r < nr; r++) {
        float f[MAXT];
        _mm256_storeu_ps(f, sumf[r]);
        for (int t = 0; t < NT; t++) s[(size_t)r + (size_t)t * s_stride] = 0.125f * f[t];
    }
}

void e0_gemm_iq2_xxs_avx2(int64_t n, int nr, const void *w, size_t w_stride, int nt, const void *a, size_t a_stride,
                          float *s, size_t s_stride) {
    switch (nt) {
    case 1: xxs_gemm(n, nr, w, w_stride, 1, a, a_stride, s, s_stride); break;
    case 2: xxs_gemm(n, nr, w, w_stride, 2, a, a_stride, s, s_stride); break;
    case 3: xxs_gemm(n, nr, w, w_stride, 3, a, a_stride, s, s_stride); break;
    case 4: xxs_gemm(n, nr, w, w_stride, 4, a, a_stride, s, s_stride); break;
    case 5: xxs_gemm(n, nr, w, w_stride, 5, a, a_stride, s, s_stride); break;
    case 6: xxs_gemm(n, nr, w, w_stride, 6, a, a_stride, s, s_stride); break;
    case 7: xxs_gemm(n, nr, w, w_stride, 7, a, a_stride, s, s_stride); break;
    case 8: xxs_gemm(n, nr, w, w_stride, 8, a, a_stride, s, s_stride); break;
    default: /* more tokens than the contract's E0_GEMM_TOKENS: in groups of 8 */
        for (int t0 = 0; t0 < nt; t0 += MAXT)
            e0_gemm_iq2_xxs_avx2(n, nr, w, w_stride, nt - t0 < MAXT ? nt - t0 : MAXT, (const uint8_t *)a + (size_t)t0 * a_stride,
                                 a_stride, s + (size_t)t0 * s_stride, s_stride);
        break;
    }
}

void e0_vec_dot_4_iq2_xxs_avx2(int64_t n, float *s, size_t s_stride, const void *w, const void *a, size_t a_stride) {
    xxs_gemm(n, 1, w, 0, E0_DOT_TOKENS, a, a_stride, s, s_stride);
}
