/* quant_k_x4_avx512.c — AVX-512 (+VNNI) 4-token dot products for prefill: one q4_K / q5_K / q6_K
 * weight row against 4 Q8_K activation rows (e0_vec_dot_4_fn).
 *
 * Each weight block is unpacked once (nibbles, high bits, scales) and used for the 4 tokens.
 * Per token, the operations are those of quant_k_avx512.c in the same order — the same integer
 * block sums and the same float accumulation — so every result is bit-identical to calling
 * e0_vec_dot_*_avx512 per token (tests/test_gemm.c checks it with memcmp). */
#include "quant/x86/quant_k_simd.h"

#define NT E0_DOT_TOKENS

/* q4_K / q5_K: one super-block for NT tokens; y[k] is token k's Q8_K block. Unlike the one-token
 * kernel this uses 512-bit vectors: chunk j of 64 values is one vector whose low half holds the
 * low nibbles of qs[32j..32j+31] (scale 2j) and whose high half holds their high nibbles (scale
 * 2j+1), matching 64 consecutive activations. Lane i + lane 8+i of the int32 sum is exactly
 * lane i of the one-token kernel's sum_lo + sum_hi, so the float steps see the same integers. */
typedef struct {
    /* words 0-15 = 2j, words 16-31 = 2j+1: the vpermw index of the two scales of chunk j, and
     * (q5_K) the shift of qh that brings down the 5th bits of its two halves */
    __m512i pair[4];
} q45_consts;

static inline void q45_consts_init(q45_consts *c) {
    for (int j = 0; j < 4; j++)
        c->pair[j] = _mm512_inserti64x4(_mm512_set1_epi16((short)(2 * j)), _mm256_set1_epi16((short)(2 * j + 1)), 1);
}

static inline __attribute__((always_inline)) void q45_block_x4(const q45_consts *c, const uint8_t *scales_packed,
                                                                const e0_block_q8_K *const y[NT], const uint8_t *qs,
                                                                const uint8_t *qh, const float d[NT], const float dmin[NT],
                                                                __m256 acc[NT], __m128 acc_m[NT]) {
    const __m512i m4 = _mm512_set1_epi8(0xF), m1 = _mm512_set1_epi8(1);
    const __m256i mins_scales = _mm256_cvtepu8_epi16(k_unpack_scales_mins_simd(scales_packed));
    const __m128i mins = _mm256_extracti128_si256(mins_scales, 1);
    #pragma GCC unroll 4
    for (int k = 0; k < NT; k++) {
        const __m256i bsums = _mm256_loadu_si256((const __m256i *)y[k]->bsums);
        const __m128i bsum_pairs = _mm_hadd_epi16(_mm256_castsi256_si128(bsums), _mm256_extracti128_si256(bsums, 1));
        acc_m[k] = _mm_fmadd_ps(_mm_set1_ps(dmin[k]), _mm_cvtepi32_ps(_mm_madd_epi16(mins, bsum_pairs)), acc_m[k]);
    }
    const __m512i scales = _mm512_castsi256_si512(mins_scales);
    const __m512i hbits = qh ? _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)qh)) : _mm512_setzero_si512();
    __m512i sum[NT];
    #pragma GCC unroll 4
    for (int k = 0; k < NT; k++) sum[k] = _mm512_setzero_si512();
    #pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        const __m512i bits = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(qs + 32 * j)));
        __m512i u = _mm512_and_si512(_mm512_mask_srli_epi16(bits, 0xFFFF0000u, bits, 4), m4);
        if (qh) u = _mm512_or_si512(u, _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(hbits, c->pair[j]), m1), 4));
        const __m512i sc = _mm512_permutexvar_epi16(c->pair[j], scales);
        #pragma GCC unroll 4
        for (int k = 0; k < NT; k++)
            sum[k] = _mm512_dpwssd_epi32(sum[k], _mm512_maddubs_epi16(u, _mm512_loadu_si512(y[k]->qs + 64 * j)), sc);
    }
    #pragma GCC unroll 4
    for (int k = 0; k < NT; k++) {
        const __m256i s8 = _mm256_add_epi32(_mm512_castsi512_si256(sum[k]), _mm512_extracti64x4_epi64(sum[k], 1));
        acc[k] = _mm256_fmadd_ps(_mm256_set1_ps(d[k]), _mm256_cvtepi32_ps(s8), acc[k]);
    }
}

/* Shared by q4_K and q5_K: exactly one of x4 / x5 is non-NULL (a constant at each call site, so
 * the compiler drops the other branch). */
static inline __attribute__((always_inline)) void q45_rows_x4(int64_t n, float *s, size_t s_stride,
                                                              const e0_block_q4_K *x4, const e0_block_q5_K *x5,
                                                              const void *va, size_t a_stride) {
    q45_consts c;
    q45_consts_init(&c);
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
        if (x4) q45_block_x4(&c, x4[i].scales, y, x4[i].qs, NULL, d, dmin, acc, acc_m);
        else q45_block_x4(&c, x5[i].scales, y, x5[i].qs, x5[i].qh, d, dmin, acc, acc_m);
    }
    for (int k = 0; k < NT; k++) s[(size_t)k * s_stride] = q45_finish_avx512(acc[k], acc_m[k]);
}

void e0_vec_dot_4_q4_K_avx512(int64_t n, float *s, size_t s_stride, const void *vw, const void *va, size_t a_stride) {
    q45_rows_x4(n, s, s_stride, vw, NULL, va, a_stride);
}

void e0_vec_dot_4_q5_K_avx512(int64_t n, float *s, size_t s_stride, const void *vw, const void *va, size_t a_stride) {
    q45_rows_x4(n, s, s_stride, NULL, vw, va, a_stride);
}

/* q6_K: as e0_vec_dot_q6_K_avx512 — codes of 64 values per vector, scales by vpermw. */
void e0_vec_dot_4_q6_K_avx512(int64_t n, float *s, size_t s_stride, const void *vw, const void *va, size_t a_stride) {
    const e0_block_q6_K *x = vw;
    const __m512i m4 = _mm512_set1_epi8(0xF), m3 = _mm512_set1_epi8(3);
    const __m512i shift_lo = _mm512_inserti64x4(_mm512_set1_epi16(0), _mm256_set1_epi16(2), 1);
    const __m512i shift_hi = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(6), 1);
    __m512i sidx[4];
    for (int q = 0; q < 4; q++)
        sidx[q] = _mm512_inserti64x4(
            _mm512_castsi256_si512(_mm256_set_m128i(_mm_set1_epi16((short)(4 * q + 1)), _mm_set1_epi16((short)(4 * q)))),
            _mm256_set_m128i(_mm_set1_epi16((short)(4 * q + 3)), _mm_set1_epi16((short)(4 * q + 2))), 1);
    const e0_block_q8_K *yrow[NT];
    __m512 acc[NT];
    for (int k = 0; k < NT; k++) {
        yrow[k] = (const e0_block_q8_K *)((const uint8_t *)va + (size_t)k * a_stride);
        acc[k] = _mm512_setzero_ps();
    }
    for (int64_t i = 0; i < n / QK_K; i++) {
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x[i].scales));
        const __m512i sc = _mm512_castsi256_si512(sc16);
        __m512i sumi[NT];
        #pragma GCC unroll 4
        for (int k = 0; k < NT; k++) {
            /* codes are stored as u = q + 32 in 0..63: subtract 32 * sum(scale * bsum) */
            const __m256i offs = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)yrow[k][i].bsums));
            sumi[k] = _mm512_zextsi256_si512(_mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(offs, 5)));
        }
        #pragma GCC unroll 2
        for (int c = 0; c < 2; c++) {
            const __m512i ql = _mm512_loadu_si512(x[i].ql + 64 * c);
            const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(x[i].qh + 32 * c)));
            const __m512i u01 = _mm512_or_si512(_mm512_and_si512(ql, m4),
                                                _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, shift_lo), m3), 4));
            const __m512i u23 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4),
                                                _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, shift_hi), m3), 4));
            const __m512i sc01 = _mm512_permutexvar_epi16(sidx[2 * c], sc);
            const __m512i sc23 = _mm512_permutexvar_epi16(sidx[2 * c + 1], sc);
            #pragma GCC unroll 4
            for (int k = 0; k < NT; k++) {
                const int8_t *q8 = yrow[k][i].qs + 128 * c;
                sumi[k] = _mm512_dpwssd_epi32(sumi[k], _mm512_maddubs_epi16(u01, _mm512_loadu_si512(q8)), sc01);
                sumi[k] = _mm512_dpwssd_epi32(sumi[k], _mm512_maddubs_epi16(u23, _mm512_loadu_si512(q8 + 64)), sc23);
            }
        }
        #pragma GCC unroll 4
        for (int k = 0; k < NT; k++) {
            const float d = yrow[k][i].d * fp16(x[i].d);
            acc[k] = _mm512_fmadd_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(sumi[k]), acc[k]);
        }
    }
    for (int k = 0; k < NT; k++) s[(size_t)k * s_stride] = _mm512_reduce_add_ps(acc[k]);
}
