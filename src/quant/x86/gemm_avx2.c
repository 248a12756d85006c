/* gemm_avx2.c — AVX2+FMA prefill kernels (e0_gemm_fn): one q4_K / q5_K / q6_K / q8_0 weight row
 * against up to E0_GEMM_TOKENS activation rows (Q8_K / Q8_0), on the plain (not repacked) layout.
 *
 * Structure: each weight super-block (or group of 4 q8_0 blocks) is unpacked once into 8 ymm
 * registers of codes, its per-sub-block scale vectors are written to a small stack buffer, and
 * then a runtime loop over the tokens streams each token's activation block past them: per 32
 * values and token one activation load, one maddubs and one madd (with the scale as a memory
 * operand). The float accumulators of the tokens live in a stack array, updated once per
 * super-block. This keeps register use at ~12 of the 16 ymm registers whatever the token count,
 * where a fixed 4-token unrolled kernel (quant_k_x4_avx2.c) makes GCC spill.
 *
 * Per token, the operations are those of the one-token kernels (quant_k_avx2.c,
 * quant_basic_avx2.c): the same exact integer block sums (integer adds in any order give the same
 * int32) and the same float operations in the same order, so every result is bit-identical to
 * e0_vec_dot_*_avx2 on that token (tests/test_gemm.c checks it with memcmp). */
#include "quant/gemm.h"
#include "quant/quant_basic.h"
#include "quant/x86/quant_k_simd.h"

#define MAXT E0_GEMM_TOKENS

/* Makes the compiler treat buffer p as read and written here: the scale vectors stay in memory
 * (used as memory operands) instead of taking 8 more registers and being spilled anyway. */
#define IN_MEMORY(p) __asm__ volatile("" : : "r"(p) : "memory")

/* ---- q4_K / q5_K ---- */

/* Exactly one of x4 / x5 is non-NULL (a constant at each call site). */
static inline __attribute__((always_inline)) void q45_gemm(int64_t n, int nt, float *s, size_t s_stride,
                                                           const e0_block_q4_K *x4, const e0_block_q5_K *x5,
                                                           const uint8_t *a, size_t a_stride) {
    const __m256i m4 = _mm256_set1_epi8(0xF), m1 = _mm256_set1_epi8(1);
    __m256 acc[MAXT];
    __m128 acc_m[MAXT];
    __m256i sc[8];
    for (int t = 0; t < nt; t++) {
        acc[t] = _mm256_setzero_ps();
        acc_m[t] = _mm_setzero_ps();
    }
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *scp = x4 ? x4[i].scales : x5[i].scales, *qs = x4 ? x4[i].qs : x5[i].qs;
        const float xd = fp16(x4 ? x4[i].d : x5[i].d), xdmin = fp16(x4 ? x4[i].dmin : x5[i].dmin);
        const __m256i mins_scales = _mm256_cvtepu8_epi16(k_unpack_scales_mins_simd(scp));
        const __m128i mins = _mm256_extracti128_si256(mins_scales, 1);
        const __m128i sc128 = _mm256_castsi256_si128(mins_scales);
        const __m256i scales = _mm256_set_m128i(sc128, sc128);
        __m256i u[8];
        #pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            const __m256i bits = _mm256_loadu_si256((const __m256i *)(qs + 32 * j));
            u[2 * j] = _mm256_and_si256(bits, m4);
            u[2 * j + 1] = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
            if (x5) {
                const __m256i hbits = _mm256_loadu_si256((const __m256i *)x5[i].qh);
                u[2 * j] = _mm256_or_si256(u[2 * j], _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * j), m1), 4));
                u[2 * j + 1] = _mm256_or_si256(u[2 * j + 1], _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * j + 1), m1), 4));
            }
            sc[2 * j] = _mm256_shuffle_epi8(scales, word_ctrl(2 * j));
            sc[2 * j + 1] = _mm256_shuffle_epi8(scales, word_ctrl(2 * j + 1));
        }
        IN_MEMORY(sc);
        for (int t = 0; t < nt; t++) {
            const e0_block_q8_K *y = (const e0_block_q8_K *)(a + (size_t)t * a_stride) + i;
            const float d = y->d * xd, dmin = -y->d * xdmin;
            const __m256i bsums = _mm256_loadu_si256((const __m256i *)y->bsums);
            const __m128i bsum_pairs = _mm_hadd_epi16(_mm256_castsi256_si128(bsums), _mm256_extracti128_si256(bsums, 1));
            acc_m[t] = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(_mm_madd_epi16(mins, bsum_pairs)), acc_m[t]);
            __m256i sum = _mm256_setzero_si256();
            #pragma GCC unroll 8
            for (int j = 0; j < 8; j++) {
                const __m256i q8 = _mm256_loadu_si256((const __m256i *)(y->qs + 32 * j));
                sum = _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_maddubs_epi16(u[j], q8), sc[j]));
            }
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sum), acc[t]);
        }
    }
    for (int t = 0; t < nt; t++) s[(size_t)t * s_stride] = q45_finish_avx2(acc[t], acc_m[t]);
}

void e0_gemm_q4_K_avx2(int64_t n, int nt, float *s, size_t s_stride, const void *w, const void *a, size_t a_stride) {
    q45_gemm(n, nt, s, s_stride, w, NULL, a, a_stride);
}

void e0_gemm_q5_K_avx2(int64_t n, int nt, float *s, size_t s_stride, const void *w, const void *a, size_t a_stride) {
    q45_gemm(n, nt, s, s_stride, NULL, w, a, a_stride);
}

/* ---- q6_K (scheme of e0_vec_dot_q6_K_avx2) ---- */

void e0_gemm_q6_K_avx2(int64_t n, int nt, float *s, size_t s_stride, const void *vw, const void *va, size_t a_stride) {
    const e0_block_q6_K *x = vw;
    const uint8_t *a = va;
    const __m256i m4 = _mm256_set1_epi8(0xF), m3 = _mm256_set1_epi8(3);
    __m256 acc[MAXT];
    __m256i sc[8];
    for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float xd = fp16(x[i].d);
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x[i].scales));
        __m256i u[8];
        #pragma GCC unroll 2
        for (int c = 0; c < 2; c++) {
            const __m256i scs = _mm256_permute4x64_epi64(sc16, c ? 0xEE : 0x44);
            const __m256i ql0 = _mm256_loadu_si256((const __m256i *)(x[i].ql + 64 * c));
            const __m256i ql1 = _mm256_loadu_si256((const __m256i *)(x[i].ql + 64 * c + 32));
            const __m256i qh = _mm256_loadu_si256((const __m256i *)(x[i].qh + 32 * c));
            u[4 * c + 0] = _mm256_or_si256(_mm256_and_si256(ql0, m4), _mm256_slli_epi16(_mm256_and_si256(qh, m3), 4));
            u[4 * c + 1] = _mm256_or_si256(_mm256_and_si256(ql1, m4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m3), 4));
            u[4 * c + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4),
                                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m3), 4));
            u[4 * c + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m3), 4));
            #pragma GCC unroll 4
            for (int g = 0; g < 4; g++) sc[4 * c + g] = _mm256_shuffle_epi8(scs, word_pair_ctrl(2 * g, 2 * g + 1));
        }
        IN_MEMORY(sc);
        for (int t = 0; t < nt; t++) {
            const e0_block_q8_K *y = (const e0_block_q8_K *)(a + (size_t)t * a_stride) + i;
            /* codes are stored as u = q + 32 in 0..63: subtract 32 * sum(scale * bsum) */
            const __m256i offs = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)y->bsums));
            __m256i sum = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(offs, 5));
            #pragma GCC unroll 8
            for (int j = 0; j < 8; j++) {
                const __m256i q8 = _mm256_loadu_si256((const __m256i *)(y->qs + 32 * j));
                sum = _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_maddubs_epi16(u[j], q8), sc[j]));
            }
            const float d = y->d * xd;
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sum), acc[t]);
        }
    }
    for (int t = 0; t < nt; t++) s[(size_t)t * s_stride] = hsum_ps(acc[t]);
}

/* ---- q8_0 (scheme of e0_vec_dot_q8_0_avx2: per block, |x| times y with x's sign, one float
 * fma with the product of the two fp16 scales) ---- */

#define Q8G 4 /* blocks unpacked at a time: 8 registers of |x| and x */

void e0_gemm_q8_0_avx2(int64_t n, int nt, float *s, size_t s_stride, const void *w, const void *va, size_t a_stride) {
    const uint8_t *x = w, *a = va;
    const int64_t nb = n / E0_QK;
    __m256 acc[MAXT];
    for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + Q8G <= nb; i += Q8G) {
        __m256i xq[Q8G], xabs[Q8G];
        float xd[Q8G];
        #pragma GCC unroll 4
        for (int b = 0; b < Q8G; b++) {
            const uint8_t *xb = x + (size_t)(i + b) * Q8_0_SIZE;
            xq[b] = _mm256_loadu_si256((const __m256i *)(xb + Q8_0_QS));
            xabs[b] = _mm256_sign_epi8(xq[b], xq[b]);
            xd[b] = _mm_cvtss_f32(h2f_blk(xb));
        }
        IN_MEMORY(xd);
        for (int t = 0; t < nt; t++) {
            const uint8_t *y = a + (size_t)t * a_stride + (size_t)i * Q8_0_SIZE;
            __m256 ac = acc[t];
            #pragma GCC unroll 4
            for (int b = 0; b < Q8G; b++, y += Q8_0_SIZE) {
                const __m256i ys = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(y + Q8_0_QS)), xq[b]);
                const __m256i p16 = _mm256_maddubs_epi16(xabs[b], ys);
                const __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
                const __m256 scale = _mm256_broadcastss_ps(_mm_mul_ss(_mm_set_ss(xd[b]), h2f_blk(y)));
                ac = _mm256_fmadd_ps(scale, dot, ac);
            }
            acc[t] = ac;
        }
    }
    for (; i < nb; i++) { /* the last < Q8G blocks */
        const uint8_t *xb = x + (size_t)i * Q8_0_SIZE;
        const __m256i xq = _mm256_loadu_si256((const __m256i *)(xb + Q8_0_QS)), xabs = _mm256_sign_epi8(xq, xq);
        const __m128 xd = h2f_blk(xb);
        for (int t = 0; t < nt; t++) {
            const uint8_t *y = a + (size_t)t * a_stride + (size_t)i * Q8_0_SIZE;
            const __m256i ys = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(y + Q8_0_QS)), xq);
            const __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_maddubs_epi16(xabs, ys), _mm256_set1_epi16(1)));
            acc[t] = _mm256_fmadd_ps(_mm256_broadcastss_ps(_mm_mul_ss(xd, h2f_blk(y))), dot, acc[t]);
        }
    }
    const float summs = 0; /* the one-token loop adds its (here zero) min terms: keeps -0 + 0 = +0 */
    for (int t = 0; t < nt; t++) s[(size_t)t * s_stride] = hsum_ps(acc[t]) + summs;
}
