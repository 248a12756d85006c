/* quant_k_avx512.c — AVX-512 (F/BW/VL/DQ + VNNI) dot products for the K-quants that matter
 * most for decode speed: q4_K, q5_K, q6_K with Q8_K activations.
 *
 * Same integer scheme as quant_k_avx2.c, with the scale multiply plus accumulation fused into one
 * VNNI vpdpwssd (int16 pairs -> int32). q6_K uses 512-bit vectors (64 codes per instruction,
 * scale vectors from one vpermw each); q4_K / q5_K stay at 256 bits. Only kept where it measured
 * faster than AVX2 (tools/qspeed_k.c); q2_K / q3_K use the AVX2 kernels. */
#include "quant/x86/quant_k_simd.h"

/* q4_K / q5_K: 512-bit vectors measured slower here (the per-block scale/min work dominates and
 * the cross-lane shuffles they need compete for one port), so this is the AVX2 kernel with
 * madd + add fused into VNNI vpdpwssd on 256-bit vectors. Chunk j of 64 values: low nibbles
 * use scale 2j, high nibbles scale 2j+1; qh bit 2j / 2j+1 is the 5th bit of each (q5_K). */
static inline void q45_block(const uint8_t *scales_packed, const e0_block_q8_K *y, const uint8_t *qs, const uint8_t *qh,
                             float d, float dmin, __m256 *acc, __m128 *acc_m) {
    const __m256i m4 = _mm256_set1_epi8(0xF), m1 = _mm256_set1_epi8(1);
    const __m256i mins_scales = _mm256_cvtepu8_epi16(k_unpack_scales_mins_simd(scales_packed));
    const __m256i bsums = _mm256_loadu_si256((const __m256i *)y->bsums);
    const __m128i bsum_pairs = _mm_hadd_epi16(_mm256_castsi256_si128(bsums), _mm256_extracti128_si256(bsums, 1));
    const __m128i mprod = _mm_madd_epi16(_mm256_extracti128_si256(mins_scales, 1), bsum_pairs);
    *acc_m = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(mprod), *acc_m);
    const __m128i sc128 = _mm256_castsi256_si128(mins_scales);
    const __m256i scales = _mm256_set_m128i(sc128, sc128);
    const __m256i hbits = qh ? _mm256_loadu_si256((const __m256i *)qh) : _mm256_setzero_si256();
    const int8_t *q8 = y->qs;
    __m256i sum_lo = _mm256_setzero_si256(), sum_hi = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        const __m256i bits = _mm256_loadu_si256((const __m256i *)(qs + 32 * j));
        __m256i ul = _mm256_and_si256(bits, m4), uh = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
        if (qh) {
            ul = _mm256_or_si256(ul, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * j), m1), 4));
            uh = _mm256_or_si256(uh, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * j + 1), m1), 4));
        }
        const __m256i pl = _mm256_maddubs_epi16(ul, _mm256_loadu_si256((const __m256i *)q8));
        const __m256i ph = _mm256_maddubs_epi16(uh, _mm256_loadu_si256((const __m256i *)(q8 + 32)));
        sum_lo = _mm256_dpwssd_epi32(sum_lo, pl, _mm256_shuffle_epi8(scales, word_ctrl(2 * j)));
        sum_hi = _mm256_dpwssd_epi32(sum_hi, ph, _mm256_shuffle_epi8(scales, word_ctrl(2 * j + 1)));
        q8 += 64;
    }
    *acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_add_epi32(sum_lo, sum_hi)), *acc);
}

void e0_vec_dot_q4_K_avx512(int64_t n, float *s, const void *vw, const void *va) {
    const e0_block_q4_K *x = vw;
    const e0_block_q8_K *y = va;
    __m256 acc = _mm256_setzero_ps();
    __m128 acc_m = _mm_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        e0_prefetch_bytes(x + i + E0_PREFETCH_BLOCKS, sizeof *x);
        q45_block(x[i].scales, &y[i], x[i].qs, NULL, y[i].d * fp16(x[i].d), -y[i].d * fp16(x[i].dmin), &acc, &acc_m);
    }
    *s = q45_finish_avx512(acc, acc_m);
}

void e0_vec_dot_q5_K_avx512(int64_t n, float *s, const void *vw, const void *va) {
    const e0_block_q5_K *x = vw;
    const e0_block_q8_K *y = va;
    __m256 acc = _mm256_setzero_ps();
    __m128 acc_m = _mm_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        e0_prefetch_bytes(x + i + E0_PREFETCH_BLOCKS, sizeof *x);
        q45_block(x[i].scales, &y[i], x[i].qs, x[i].qh, y[i].d * fp16(x[i].d), -y[i].d * fp16(x[i].dmin), &acc, &acc_m);
    }
    *s = q45_finish_avx512(acc, acc_m);
}

/* q6_K: per 128 values, ql[0..63] as one vector gives the low nibbles of values 0..63 and (>> 4)
 * of values 64..127; qh (32 bytes, broadcast to both halves) gives bit pairs 0/2 and 4/6. The 64
 * values of one vector cover four sub-blocks of 16: words 8s..8s+7 take scale s. */
void e0_vec_dot_q6_K_avx512(int64_t n, float *s, const void *vw, const void *va) {
    const e0_block_q6_K *x = vw;
    const e0_block_q8_K *y = va;
    const __m512i m4 = _mm512_set1_epi8(0xF), m3 = _mm512_set1_epi8(3);
    const __m512i shift_lo = _mm512_inserti64x4(_mm512_set1_epi16(0), _mm256_set1_epi16(2), 1);
    const __m512i shift_hi = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(6), 1);
    __m512i sidx[4];
    for (int q = 0; q < 4; q++) /* group q (64 values) uses scales 4q..4q+3, 8 words each */
        sidx[q] = _mm512_inserti64x4(
            _mm512_castsi256_si512(_mm256_set_m128i(_mm_set1_epi16((short)(4 * q + 1)), _mm_set1_epi16((short)(4 * q)))),
            _mm256_set_m128i(_mm_set1_epi16((short)(4 * q + 3)), _mm_set1_epi16((short)(4 * q + 2))), 1);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        e0_prefetch_bytes(x + i + E0_PREFETCH_BLOCKS, sizeof *x);
        const float d = y[i].d * fp16(x[i].d);
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x[i].scales));
        const __m256i offs = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)y[i].bsums));
        /* codes are stored as u = q + 32 in 0..63: subtract 32 * sum(scale * bsum) */
        __m512i sumi = _mm512_zextsi256_si512(_mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(offs, 5)));
        const __m512i sc = _mm512_castsi256_si512(sc16);
        #pragma GCC unroll 4
        for (int c = 0; c < 2; c++) {
            const __m512i ql = _mm512_loadu_si512(x[i].ql + 64 * c);
            const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(x[i].qh + 32 * c)));
            const __m512i u01 = _mm512_or_si512(_mm512_and_si512(ql, m4),
                                                _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, shift_lo), m3), 4));
            const __m512i u23 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), m4),
                                                _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(qh, shift_hi), m3), 4));
            const __m512i p01 = _mm512_maddubs_epi16(u01, _mm512_loadu_si512(y[i].qs + 128 * c));
            const __m512i p23 = _mm512_maddubs_epi16(u23, _mm512_loadu_si512(y[i].qs + 128 * c + 64));
            sumi = _mm512_dpwssd_epi32(sumi, p01, _mm512_permutexvar_epi16(sidx[2 * c], sc));
            sumi = _mm512_dpwssd_epi32(sumi, p23, _mm512_permutexvar_epi16(sidx[2 * c + 1], sc));
        }
        acc = _mm512_fmadd_ps(_mm512_set1_ps(d), _mm512_cvtepi32_ps(sumi), acc);
    }
    *s = _mm512_reduce_add_ps(acc);
}
