/* quant_k_avx2.c — AVX2+FMA dot products of K-quant rows with Q8_K rows, and an AVX2 Q8_K
 * quantizer that writes the same bytes as the scalar reference.
 *
 * Scheme (as llama.cpp's): per super-block, unsigned weight codes are multiplied with the int8
 * activations by maddubs (pairs -> int16, no saturation possible for <= 6-bit codes), then by the
 * sub-block scales with madd (-> int32); the integer sum of the block is exact and gets one float
 * scale. Constant offsets (q3_K's -4, q6_K's -32) and the mins of q2_K/q4_K/q5_K are applied
 * through the activation's bsums (sums of 16 activations), which costs one madd per block. */
#include "quant/x86/quant_k_simd.h"

/* For the types with 16 scales of 16 values: codes u (32 bytes = sub-blocks 2k and 2k+1) times
 * activations q8, scaled by words 2g / 2g+1 of sc8 (which holds scales 8c..8c+7 in both lanes,
 * k = 4c + g). */
static inline __m256i dot32_pair(__m256i u, const int8_t *q8, __m256i sc8, int g) {
    const __m256i p = _mm256_maddubs_epi16(u, _mm256_loadu_si256((const __m256i *)q8));
    return _mm256_madd_epi16(p, _mm256_shuffle_epi8(sc8, word_pair_ctrl(2 * g, 2 * g + 1)));
}

void e0_vec_dot_q2_K_avx2(int64_t n, float *s, const void *vw, const void *va) {
    const e0_block_q2_K *x = vw;
    const e0_block_q8_K *y = va;
    const __m256i m3 = _mm256_set1_epi8(3);
    const __m128i m4 = _mm_set1_epi8(0xF);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        e0_prefetch_bytes(x + i + E0_PREFETCH_BLOCKS, sizeof *x);
        const float dall = y[i].d * fp16(x[i].d), dmin = -y[i].d * fp16(x[i].dmin);
        const __m128i sc = _mm_loadu_si128((const __m128i *)x[i].scales);
        const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc, 4), m4));
        const __m256i bsums = _mm256_loadu_si256((const __m256i *)y[i].bsums);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(_mm256_madd_epi16(mins, bsums)), acc);
        const __m256i sc16 = _mm256_cvtepu8_epi16(_mm_and_si128(sc, m4));
        const __m256i scs[2] = {_mm256_permute4x64_epi64(sc16, 0x44), _mm256_permute4x64_epi64(sc16, 0xEE)};
        const int8_t *q8 = y[i].qs;
        __m256i sumi = _mm256_setzero_si256();
        #pragma GCC unroll 4
        for (int c = 0; c < 2; c++) {
            const __m256i q2 = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * c));
            #pragma GCC unroll 4
            for (int g = 0; g < 4; g++, q8 += 32) {
                const __m256i u = _mm256_and_si256(_mm256_srli_epi16(q2, 2 * g), m3);
                sumi = _mm256_add_epi32(sumi, dot32_pair(u, q8, scs[c], g));
            }
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(dall), _mm256_cvtepi32_ps(sumi), acc);
    }
    *s = hsum_ps(acc);
}

void e0_vec_dot_q3_K_avx2(int64_t n, float *s, const void *vw, const void *va) {
    const e0_block_q3_K *x = vw;
    const e0_block_q8_K *y = va;
    const __m256i m3 = _mm256_set1_epi8(3), m1 = _mm256_set1_epi8(1);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        e0_prefetch_bytes(x + i + E0_PREFETCH_BLOCKS, sizeof *x);
        const float d = y[i].d * fp16(x[i].d);
        uint32_t raw[4];
        k_unpack_q3_scales_raw(x[i].scales, raw);
        const __m128i sc8 = _mm_sub_epi8(_mm_setr_epi32((int)raw[0], (int)raw[1], (int)raw[2], (int)raw[3]), _mm_set1_epi8(32));
        const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
        const __m256i scs[2] = {_mm256_permute4x64_epi64(sc16, 0x44), _mm256_permute4x64_epi64(sc16, 0xEE)};
        /* codes are stored as u = q + 4 in 0..7: subtract 4 * sum(scale * bsum) */
        const __m256i offs = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)y[i].bsums));
        __m256i sumi = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(offs, 2));
        const __m256i hbits = _mm256_loadu_si256((const __m256i *)x[i].hmask);
        const int8_t *q8 = y[i].qs;
        #pragma GCC unroll 4
        for (int c = 0; c < 2; c++) {
            const __m256i q3 = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * c));
            #pragma GCC unroll 4
            for (int g = 0; g < 4; g++, q8 += 32) {
                const int k = 4 * c + g; /* hmask bit k holds bit 2 of the codes of this group */
                const __m256i hi = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, k), m1), 2);
                const __m256i u = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q3, 2 * g), m3), hi);
                sumi = _mm256_add_epi32(sumi, dot32_pair(u, q8, scs[c], g));
            }
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    *s = hsum_ps(acc);
}

/* q4_K / q5_K: 4 chunks of 64 values; low nibbles use scale 2j, high nibbles scale 2j+1. */
static inline void q45_K_block(const uint8_t *scales_packed, const e0_block_q8_K *y, float d, float dmin,
                               const uint8_t *qs, const uint8_t *qh, __m256 *acc, __m128 *acc_m) {
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
    __m256i sumi = _mm256_setzero_si256();
    #pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        const __m256i bits = _mm256_loadu_si256((const __m256i *)(qs + 32 * j));
        __m256i ul = _mm256_and_si256(bits, m4), uh = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
        if (qh) {
            ul = _mm256_or_si256(ul, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * j), m1), 4));
            uh = _mm256_or_si256(uh, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * j + 1), m1), 4));
        }
        __m256i pl = _mm256_maddubs_epi16(ul, _mm256_loadu_si256((const __m256i *)q8));
        __m256i ph = _mm256_maddubs_epi16(uh, _mm256_loadu_si256((const __m256i *)(q8 + 32)));
        pl = _mm256_madd_epi16(pl, _mm256_shuffle_epi8(scales, word_ctrl(2 * j)));
        ph = _mm256_madd_epi16(ph, _mm256_shuffle_epi8(scales, word_ctrl(2 * j + 1)));
        sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(pl, ph));
        q8 += 64;
    }
    *acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), *acc);
}

void e0_vec_dot_q4_K_avx2(int64_t n, float *s, const void *vw, const void *va) {
    const e0_block_q4_K *x = vw;
    const e0_block_q8_K *y = va;
    __m256 acc = _mm256_setzero_ps();
    __m128 acc_m = _mm_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        e0_prefetch_bytes(x + i + E0_PREFETCH_BLOCKS, sizeof *x);
        q45_K_block(x[i].scales, &y[i], y[i].d * fp16(x[i].d), -y[i].d * fp16(x[i].dmin), x[i].qs, NULL, &acc, &acc_m);
    }
    *s = q45_finish_avx2(acc, acc_m);
}

void e0_vec_dot_q5_K_avx2(int64_t n, float *s, const void *vw, const void *va) {
    const e0_block_q5_K *x = vw;
    const e0_block_q8_K *y = va;
    __m256 acc = _mm256_setzero_ps();
    __m128 acc_m = _mm_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        e0_prefetch_bytes(x + i + E0_PREFETCH_BLOCKS, sizeof *x);
        q45_K_block(x[i].scales, &y[i], y[i].d * fp16(x[i].d), -y[i].d * fp16(x[i].dmin), x[i].qs, x[i].qh, &acc, &acc_m);
    }
    *s = q45_finish_avx2(acc, acc_m);
}

void e0_vec_dot_q6_K_avx2(int64_t n, float *s, const void *vw, const void *va) {
    const e0_block_q6_K *x = vw;
    const e0_block_q8_K *y = va;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        e0_prefetch_bytes(x + i + E0_PREFETCH_BLOCKS, sizeof *x);
        const float d = y[i].d * fp16(x[i].d);
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x[i].scales));
        const __m256i scs[2] = {_mm256_permute4x64_epi64(sc16, 0x44), _mm256_permute4x64_epi64(sc16, 0xEE)};
        /* codes are stored as u = q + 32 in 0..63: subtract 32 * sum(scale * bsum) */
        const __m256i offs = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)y[i].bsums));
        __m256i sumi = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(offs, 5));
        const int8_t *q8 = y[i].qs;
        #pragma GCC unroll 4
        for (int c = 0; c < 2; c++) {
            __m256i u[4];
            q6_codes(x[i].ql + 64 * c, x[i].qh + 32 * c, u);
            /* two independent int32 chains (integer adds: the same sum in any order) */
            const __m256i a = _mm256_add_epi32(dot32_pair(u[0], q8 + 0, scs[c], 0), dot32_pair(u[1], q8 + 32, scs[c], 1));
            const __m256i b = _mm256_add_epi32(dot32_pair(u[2], q8 + 64, scs[c], 2), dot32_pair(u[3], q8 + 96, scs[c], 3));
            sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(a, b));
            q8 += 128;
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    *s = hsum_ps(acc);
}

/* ======================================================================= Q8_K quantizer */

/* Same bytes as e0_quantize_q8_K_block_ref: the same float iscale = -127/max and x*iscale
 * rounded to nearest-even (cvtps uses MXCSR's default rounding, as ggml's nearest_int does);
 * blocks holding Inf/NaN go to the scalar code, whose integer trick differs from cvtps there. */
void e0_quantize_q8_K_avx2(const float *x, void *dst, int64_t n) {
    e0_block_q8_K *y = dst;
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256i exp_all = _mm256_set1_epi32(0x7f800000);
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K) {
        __m256 vmax = _mm256_setzero_ps();
        __m256i nonfinite = _mm256_setzero_si256();
        for (int k = 0; k < QK_K / 8; k++) {
            const __m256 a = _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * k));
            vmax = _mm256_max_ps(vmax, a);
            nonfinite = _mm256_or_si256(nonfinite, _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_castps_si256(a), exp_all), exp_all));
        }
        if (!_mm256_testz_si256(nonfinite, nonfinite)) {
            e0_quantize_q8_K_block_ref(x, &y[i]);
            continue;
        }
        __m128 m = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
        m = _mm_max_ps(m, _mm_movehl_ps(m, m));
        m = _mm_max_ss(m, _mm_movehdup_ps(m));
        const float amax = _mm_cvtss_f32(m);
        if (amax == 0) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        /* the signed value: the first element whose magnitude is amax (as the scalar scan) */
        float max = 0;
        const __m256 vam = _mm256_set1_ps(amax);
        for (int k = 0; k < QK_K / 8; k++) {
            const int mask = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * k)), vam, _CMP_EQ_OQ));
            if (mask) {
                max = x[8 * k + __builtin_ctz((unsigned)mask)];
                break;
            }
        }
        const float iscale = -127.f / max;
        const __m256 vis = _mm256_set1_ps(iscale);
        for (int k = 0; k < QK_K / 32; k++) {
            __m256i v[4];
            for (int t = 0; t < 4; t++) v[t] = _mm256_cvtps_epi32(_mm256_mul_ps(vis, _mm256_loadu_ps(x + 32 * k + 8 * t)));
            /* bsums: 16 values = two vectors */
            for (int h = 0; h < 2; h++) {
                __m256i sv = _mm256_add_epi32(v[2 * h], v[2 * h + 1]);
                __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(sv), _mm256_extracti128_si256(sv, 1));
                s4 = _mm_hadd_epi32(s4, s4);
                s4 = _mm_hadd_epi32(s4, s4);
                y[i].bsums[2 * k + h] = (int16_t)_mm_cvtsi128_si32(s4);
            }
            /* packs works per 128-bit lane: fix the order with a final dword permute */
            const __m256i p01 = _mm256_packs_epi32(v[0], v[1]), p23 = _mm256_packs_epi32(v[2], v[3]);
            const __m256i b = _mm256_packs_epi16(p01, p23);
            const __m256i ordered = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
            _mm256_storeu_si256((__m256i *)(y[i].qs + 32 * k), ordered);
        }
        y[i].d = 1 / iscale;
        memset(y[i].pad, 0, sizeof y[i].pad);
    }
}
