/* gemm_avx2.c — AVX2+FMA prefill kernels (e0_gemm_fn, see kernel.h): up to E0_GEMM_ROWS q4_K /
 * q5_K / q6_K / q8_0 weight rows against up to E0_GEMM_TOKENS_MAX (q4_K, q5_K, q6_K: their type
 * rows' gemm_tokens) or E0_GEMM_TOKENS (q8_0) activation rows (Q8_K / Q8_0), on the plain (not
 * repacked) weight layout. 32 tokens a call rather than 16: a routed expert of a 512-token chunk
 * of Qwen3-30B-A3B gets ~26 tokens (128 experts, 8 used), which 16 split into two calls that
 * each unpack every weight block; one call of 26 is +6-8% (scratch A/B of the two groupings, same
 * bits). The accumulators of 32 x 32 (row, token) pairs take 48 KiB of stack, more than some L1
 * caches, but each is touched once per super-block and the measured rate still rose.
 *
 * Loop order above GEMM_ROW1_NT tokens (below: the rows one at a time, see "the two loop orders"),
 * per super-block (q8_0: per group of 4 blocks):
 *   1. the tokens' per-block terms that do not depend on the weight row, once for all rows
 *      (Q8_K: scale d, the pair sums of bsums and, for q4_K/q5_K/q6_K, the 8 activation vectors
 *      with their sub-blocks paired, see pair_words; Q8_0: the fp16 scales as floats);
 *   2. per row: the weight block unpacked once into 8 ymm registers of codes (paired likewise),
 *      its sub-block scale vectors written to a small stack buffer, the row's scale times every
 *      token's scale in vector multiplies;
 *   3. a runtime loop over the tokens streams each token's block past those registers: per 64
 *      values (K-quants) two activation loads, two maddubs, one add and one madd (the scale a
 *      memory operand); q8_0 per 32 values one load, sign, maddubs and madd. The float
 *      accumulators of all (row, token) pairs live in a stack array.
 * This keeps ~12 of the 16 ymm registers busy whatever the token count; a fixed 4-token
 * unrolled kernel (quant_k_x4_avx2.c) makes GCC spill, and reloading the activations' terms per
 * row cost ~15% more.
 *
 * Per (row, token) the operations are those of the one-token kernels (quant_k_avx2.c,
 * quant_basic_avx2.c): the same exact integer block sums (int32 adds in any order give the same
 * sum), the same float products and the same float accumulation order, so every result is
 * bit-identical to e0_vec_dot_*_avx2 (tests/test_gemm.c checks it with memcmp). */
#include "quant/gemm.h"
#include "quant/quant_basic.h"
#include "quant/x86/quant_k_simd.h"
#include "quant/x86/gemm_simd.h"

#define MAXT E0_GEMM_TOKENS_MAX
_Static_assert(MAXT % 8 == 0, "the per-token scales are multiplied in vectors of 8 floats");
#define MAXR E0_GEMM_ROWS

/* IN_MEMORY (keeps the scale vectors as memory operands) and zero_acc: x86/simd.h. */

/* Sub-block pairing (pair_words, pair_subblocks): x86/gemm_simd.h. */

/* Shuffle control: word 2m of the scale vector into the even words, word 2m+1 into the odd. */
static inline __m256i scale_pair_ctrl(int m) { return _mm256_set1_epi32((4 * m) | (4 * m + 1) << 8 | (4 * m + 2) << 16 | (4 * m + 3) << 24); }

/* Sum over the 4 pairs of one super-block: int32 lanes as the one-token kernel's. */
AI __m256i paired_dot(const __m256i u[8], const __m256i q[8], const __m256i sc2[4]) {
    __m256i sum = _mm256_setzero_si256();
    #pragma GCC unroll 4
    for (int m = 0; m < 4; m++) {
        const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(u[2 * m], q[2 * m]), _mm256_maddubs_epi16(u[2 * m + 1], q[2 * m + 1]));
        sum = _mm256_add_epi32(sum, _mm256_madd_epi16(p, sc2[m]));
    }
    return sum;
}

/* ---- the two loop orders (x86/simd.h, "GEMMs with few tokens") ----
 * More than GEMM_ROW1_NT tokens: per super-block i the tokens' terms (step 1 above) once, then the
 * nr rows interleaved (block i of each, prefetch_next asking for its next block). Up to
 * GEMM_ROW1_NT tokens: the terms of TB blocks at a time, then the rows one at a time over those
 * blocks, block i of row r + GEMM_AHEAD prefetched. The same operations per (row, token) in the
 * same order either way. */
#define TB 8 /* 8 blocks x 8 tokens of paired activations: 16 KiB */

/* ---- q4_K / q5_K (scheme of q45_K_block in quant_k_avx2.c) ---- */

/* The tokens' terms of super-block i: qa[t] the paired activations, yd[t] = y.d (0 past nt up to a
 * multiple of 8) and, by token pairs, the bsum pairs and -y.d of the min term: lanes 0..3 token
 * 2p's, 4..7 token 2p+1's (0 past nt), so that one multiply by x.dmin gives the pair's dmin =
 * -y.d * x.dmin (the same products as one by one). */
AI void q45_terms(const uint8_t *a, size_t a_stride, int nt, int64_t i, __m256i (*qa)[8], float *yd, __m256i *bsum_pairs2,
                  __m256 *nyd2) {
    __m128i bsum_pairs[MAXT + 1];
    float nyd[MAXT + 1] = {0};
    for (int t = 0; t < nt; t++) {
        const e0_block_q8_K *y = (const e0_block_q8_K *)(a + (size_t)t * a_stride) + i;
        const __m256i bsums = _mm256_loadu_si256((const __m256i *)y->bsums);
        bsum_pairs[t] = _mm_hadd_epi16(_mm256_castsi256_si128(bsums), _mm256_extracti128_si256(bsums, 1));
        yd[t] = y->d;
        nyd[t] = -y->d;
    }
    for (int t = nt; t % 8; t++) yd[t] = 0;
    for (int t = 0; t < nt; t++) pair_subblocks((const uint8_t *)((const e0_block_q8_K *)(a + (size_t)t * a_stride) + i)->qs, qa[t]);
    q45_token_pairs(nt, bsum_pairs, nyd, bsum_pairs2, nyd2);
    IN_MEMORY(nyd2);
}

/* One row's block blk against the nt tokens' terms: acc[t] and, by token pairs, the min terms
 * acc_m2[t / 2] (lanes 0..3 token 2p's 4-lane accumulator of the one-token kernel, 4..7 token
 * 2p+1's: one 8-lane madd, convert and fma do the two tokens' 4-lane operations, lane by lane the
 * same, half the multiply-port work of one xmm chain per token). */
AI void q45_row_block(const uint8_t *blk, const int is5, int nt, const __m256i (*qa)[8], const float *yd, const __m256i *bsum_pairs2,
                      const __m256 *nyd2, __m256 *acc, __m256 *acc_m2) {
    const __m256i m4 = _mm256_set1_epi8(0xF), m1 = _mm256_set1_epi8(1);
    const e0_block_q4_K *x4 = (const e0_block_q4_K *)blk;
    const e0_block_q5_K *x5 = (const e0_block_q5_K *)blk;
    const uint8_t *scp = is5 ? x5->scales : x4->scales, *qs = is5 ? x5->qs : x4->qs;
    float d[MAXT];
    /* the one-token kernel's d = y.d * x.d and dmin = -y.d * x.dmin, all tokens at once */
    const __m256 xd = _mm256_set1_ps(fp16(is5 ? x5->d : x4->d)), xdmin = _mm256_set1_ps(fp16(is5 ? x5->dmin : x4->dmin));
    for (int v = 0; v < nt; v += 8) _mm256_storeu_ps(d + v, _mm256_mul_ps(_mm256_loadu_ps(yd + v), xd));
    const __m256i mins_scales = _mm256_cvtepu8_epi16(k_unpack_scales_mins_simd(scp));
    const __m128i mins = _mm256_extracti128_si256(mins_scales, 1);
    const __m256i mins2 = _mm256_set_m128i(mins, mins);
    const __m128i sc128 = _mm256_castsi256_si128(mins_scales);
    const __m256i scales = _mm256_set_m128i(sc128, sc128);
    __m256i u[8], sc2[4];
    #pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        const __m256i bits = _mm256_loadu_si256((const __m256i *)(qs + 32 * j));
        u[2 * j] = _mm256_and_si256(bits, m4);
        u[2 * j + 1] = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
        if (is5) {
            const __m256i hbits = _mm256_loadu_si256((const __m256i *)x5->qh);
            u[2 * j] = _mm256_or_si256(u[2 * j], _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * j), m1), 4));
            u[2 * j + 1] = _mm256_or_si256(u[2 * j + 1], _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * j + 1), m1), 4));
        }
        pair_words(&u[2 * j]);
        sc2[j] = _mm256_shuffle_epi8(scales, scale_pair_ctrl(j));
    }
    IN_MEMORY(sc2);
    for (unsigned p = 0; p < (unsigned)(nt + 1) / 2; p++) {
        const __m256 dm = _mm256_mul_ps(nyd2[p], xdmin);
        acc_m2[p] = _mm256_fmadd_ps(dm, _mm256_cvtepi32_ps(_mm256_madd_epi16(mins2, bsum_pairs2[p])), acc_m2[p]);
    }
    for (int t = 0; t < nt; t++) acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d[t]), _mm256_cvtepi32_ps(paired_dot(u, qa[t], sc2)), acc[t]);
}

AI void q45_gemm(int64_t n, int nr, const uint8_t *w, size_t w_stride, int nt, const uint8_t *a, size_t a_stride, float *s,
                 size_t s_stride, const int is5) {
    const size_t bsize = is5 ? sizeof(e0_block_q5_K) : sizeof(e0_block_q4_K);
    const int64_t nb = n / QK_K;
    __m256 acc[MAXR][MAXT], acc_m2[MAXR][MAXT / 2];
    for (int r = 0; r < nr; r++) {
        zero_acc(acc[r], nt);
        zero_acc(acc_m2[r], (nt + 1) / 2);
    }
    if (nt <= GEMM_ROW1_NT) {
        __m256i qa[TB][GEMM_ROW1_NT][8], bsum_pairs2[TB][GEMM_ROW1_NT / 2];
        __m256 nyd2[TB][GEMM_ROW1_NT / 2];
        float yd[TB][GEMM_ROW1_NT];
        for (int64_t i0 = 0; i0 < nb; i0 += TB) {
            const int64_t nbc = nb - i0 < TB ? nb - i0 : TB;
            for (int64_t i = 0; i < nbc; i++) q45_terms(a, a_stride, nt, i0 + i, qa[i], yd[i], bsum_pairs2[i], nyd2[i]);
            for (int r = 0; r < nr; r++)
                for (int64_t i = 0; i < nbc; i++) {
                    prefetch_lines(w + (size_t)(r + GEMM_AHEAD) * w_stride + (size_t)(i0 + i) * bsize, bsize);
                    q45_row_block(w + (size_t)r * w_stride + (size_t)(i0 + i) * bsize, is5, nt, (const __m256i(*)[8])qa[i], yd[i],
                                  bsum_pairs2[i], nyd2[i], acc[r], acc_m2[r]);
                }
        }
    } else {
        __m256i qa[MAXT][8], bsum_pairs2[MAXT / 2];
        __m256 nyd2[MAXT / 2];
        float yd[MAXT];
        for (int64_t i = 0; i < nb; i++) {
            q45_terms(a, a_stride, nt, i, qa, yd, bsum_pairs2, nyd2);
            for (int r = 0; r < nr; r++) {
                prefetch_next(w, w_stride, nr, r, i, nb, bsize);
                q45_row_block(w + (size_t)r * w_stride + (size_t)i * bsize, is5, nt, (const __m256i(*)[8])qa, yd, bsum_pairs2, nyd2,
                              acc[r], acc_m2[r]);
            }
        }
    }
    q45_store_rows(&acc[0][0], MAXT, &acc_m2[0][0], MAXT / 2, nr, nt, s, s_stride);
}

void e0_gemm_q4_K_avx2(int64_t n, int nr, const void *w, size_t w_stride, int nt, const void *a, size_t a_stride, float *s,
                       size_t s_stride) {
    q45_gemm(n, nr, w, w_stride, nt, a, a_stride, s, s_stride, 0);
}

void e0_gemm_q5_K_avx2(int64_t n, int nr, const void *w, size_t w_stride, int nt, const void *a, size_t a_stride, float *s,
                       size_t s_stride) {
    q45_gemm(n, nr, w, w_stride, nt, a, a_stride, s, s_stride, 1);
}

/* ---- q6_K (scheme of e0_vec_dot_q6_K_avx2) ---- */

/* The tokens' terms of super-block i: paired activations, y.d (0 past nt up to a multiple of 8)
 * and the activation blocks (for their bsums). */
AI void q6_terms(const uint8_t *a, size_t a_stride, int nt, int64_t i, __m256i (*qa)[8], float *yd, const e0_block_q8_K **y) {
    for (int t = 0; t < nt; t++) {
        y[t] = (const e0_block_q8_K *)(a + (size_t)t * a_stride) + i;
        yd[t] = y[t]->d;
        pair_subblocks((const uint8_t *)y[t]->qs, qa[t]);
    }
    for (int t = nt; t % 8; t++) yd[t] = 0;
}

AI void q6_row_block(const e0_block_q6_K *x, int nt, const __m256i (*qa)[8], const float *yd, const e0_block_q8_K *const *y, __m256 *acc) {
    float d[MAXT];
    for (int v = 0; v < nt; v += 8) /* y.d * x.d */
        _mm256_storeu_ps(d + v, _mm256_mul_ps(_mm256_loadu_ps(yd + v), _mm256_set1_ps(fp16(x->d))));
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x->scales));
    const __m256i scs2[2] = {_mm256_permute4x64_epi64(sc16, 0x44), _mm256_permute4x64_epi64(sc16, 0xEE)};
    __m256i u[8], sc[8], sc2[4];
    #pragma GCC unroll 2
    for (int c = 0; c < 2; c++) {
        const __m256i scs = scs2[c];
        q6_codes(x->ql + 64 * c, x->qh + 32 * c, &u[4 * c]);
        #pragma GCC unroll 4
        for (int g = 0; g < 4; g++) sc[4 * c + g] = _mm256_shuffle_epi8(scs, word_pair_ctrl(2 * g, 2 * g + 1));
    }
    #pragma GCC unroll 4
    for (int m = 0; m < 4; m++) { /* sub-blocks paired (see pair_words) */
        pair_words(&u[2 * m]);
        sc2[m] = _mm256_blend_epi16(sc[2 * m], sc[2 * m + 1], 0xAA);
    }
    IN_MEMORY(sc2);
    for (int t = 0; t < nt; t++) {
        /* codes are stored as u = q + 32 in 0..63: subtract 32 * sum(scale * bsum) */
        const __m256i offs = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)y[t]->bsums));
        const __m256i sum = _mm256_sub_epi32(paired_dot(u, qa[t], sc2), _mm256_slli_epi32(offs, 5));
        acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d[t]), _mm256_cvtepi32_ps(sum), acc[t]);
    }
}

void e0_gemm_q6_K_avx2(int64_t n, int nr, const void *vw, size_t w_stride, int nt, const void *va, size_t a_stride, float *s,
                       size_t s_stride) {
    const uint8_t *w = vw, *a = va;
    const int64_t nb = n / QK_K;
    const size_t bsize = sizeof(e0_block_q6_K);
    __m256 acc[MAXR][MAXT];
    for (int r = 0; r < nr; r++)
        zero_acc(acc[r], nt);
    if (nt <= GEMM_ROW1_NT) {
        __m256i qa[TB][GEMM_ROW1_NT][8];
        float yd[TB][GEMM_ROW1_NT];
        const e0_block_q8_K *y[TB][GEMM_ROW1_NT];
        for (int64_t i0 = 0; i0 < nb; i0 += TB) {
            const int64_t nbc = nb - i0 < TB ? nb - i0 : TB;
            for (int64_t i = 0; i < nbc; i++) q6_terms(a, a_stride, nt, i0 + i, qa[i], yd[i], y[i]);
            for (int r = 0; r < nr; r++)
                for (int64_t i = 0; i < nbc; i++) {
                    prefetch_lines(w + (size_t)(r + GEMM_AHEAD) * w_stride + (size_t)(i0 + i) * bsize, bsize);
                    q6_row_block((const e0_block_q6_K *)(w + (size_t)r * w_stride) + i0 + i, nt, (const __m256i(*)[8])qa[i], yd[i], y[i], acc[r]);
                }
        }
    } else {
        __m256i qa[MAXT][8];
        float yd[MAXT];
        const e0_block_q8_K *y[MAXT];
        for (int64_t i = 0; i < nb; i++) {
            q6_terms(a, a_stride, nt, i, qa, yd, y);
            for (int r = 0; r < nr; r++) {
                prefetch_next(w, w_stride, nr, r, i, nb, bsize);
                q6_row_block((const e0_block_q6_K *)(w + (size_t)r * w_stride) + i, nt, (const __m256i(*)[8])qa, yd, y, acc[r]);
            }
        }
    }
    store_rows(&acc[0][0], MAXT, nr, nt, s, s_stride);
}

/* ---- q8_0 (scheme of e0_vec_dot_q8_0_avx2: per block, |x| times y with x's sign, and one float
 * fma with the product of the two fp16 scales) ---- */

#define Q8G 4 /* blocks per group: 8 registers of x and |x| */

/* The tokens' fp16 scales of blocks i .. i + gb - 1 as floats, yd[b][t] (0 past nt up to a
 * multiple of 8). */
AI void q8_0_token_scales(int64_t i, int gb, int nt, const uint8_t *a, size_t a_stride, float (*yd)[MAXT]) {
    for (int b = 0; b < gb; b++) {
        for (int t = 0; t < nt; t++) yd[b][t] = h2f(a + (size_t)t * a_stride + (size_t)(i + b) * Q8_0_SIZE);
        for (int t = nt; t % 8; t++) yd[b][t] = 0;
    }
}

/* Blocks i..i+gb-1 of nr rows for nt tokens (yd: their scales, q8_0_token_scales); gb is a
 * constant at each call site. */
AI void q8_0_group(int64_t i, const int gb, int nr, const uint8_t *w, size_t w_stride, int nt, const uint8_t *a, size_t a_stride,
                   const float (*yd)[MAXT], __m256 acc[MAXR][MAXT]) {
    float scale[Q8G][MAXT];
    for (int r = 0; r < nr; r++) {
        const uint8_t *x = w + (size_t)r * w_stride + (size_t)i * Q8_0_SIZE;
        __m256i xq[Q8G], xabs[Q8G];
        #pragma GCC unroll 4
        for (int b = 0; b < gb; b++) {
            xq[b] = _mm256_loadu_si256((const __m256i *)(x + (size_t)b * Q8_0_SIZE + Q8_0_QS));
            xabs[b] = _mm256_sign_epi8(xq[b], xq[b]);
            /* the one-token kernel's x.d * y.d, all tokens at once */
            for (int v = 0; v < nt; v += 8)
                _mm256_storeu_ps(scale[b] + v, _mm256_mul_ps(_mm256_set1_ps(h2f(x + (size_t)b * Q8_0_SIZE)), _mm256_loadu_ps(yd[b] + v)));
        }
        IN_MEMORY(scale);
        for (int t = 0; t < nt; t++) {
            const uint8_t *y = a + (size_t)t * a_stride + (size_t)i * Q8_0_SIZE;
            __m256 ac = acc[r][t];
            #pragma GCC unroll 4
            for (int b = 0; b < gb; b++) {
                const __m256i ys = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(y + (size_t)b * Q8_0_SIZE + Q8_0_QS)), xq[b]);
                const __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_maddubs_epi16(xabs[b], ys), _mm256_set1_epi16(1)));
                ac = _mm256_fmadd_ps(_mm256_broadcast_ss(&scale[b][t]), dot, ac);
            }
            acc[r][t] = ac;
        }
    }
}

#define Q8_TB 64 /* blocks of token scales made at a time when the rows go one at a time */

void e0_gemm_q8_0_avx2(int64_t n, int nr, const void *vw, size_t w_stride, int nt, const void *va, size_t a_stride, float *s,
                       size_t s_stride) {
    const uint8_t *w = vw, *a = va;
    const int64_t nb = n / E0_QK;
    __m256 acc[MAXR][MAXT];
    for (int r = 0; r < nr; r++)
        zero_acc(acc[r], nt);
    if (nt <= GEMM_ROW1_NT) { /* the rows one at a time (the two loop orders, above) over chunks of Q8_TB blocks */
        float yd[Q8_TB][MAXT];
        for (int64_t i0 = 0; i0 < nb; i0 += Q8_TB) {
            const int64_t i1 = nb - i0 < Q8_TB ? nb : i0 + Q8_TB;
            q8_0_token_scales(i0, (int)(i1 - i0), nt, a, a_stride, yd);
            for (int r = 0; r < nr; r++) {
                const uint8_t *wr = w + (size_t)r * w_stride, *ahead = wr + (size_t)GEMM_AHEAD * w_stride;
                int64_t i = i0;
                for (; i + Q8G <= i1; i += Q8G) {
                    prefetch_lines(ahead + (size_t)i * Q8_0_SIZE, Q8G * Q8_0_SIZE);
                    q8_0_group(i, Q8G, 1, wr, w_stride, nt, a, a_stride, (const float(*)[MAXT])yd[i - i0], acc + r);
                }
                for (; i < i1; i++) q8_0_group(i, 1, 1, wr, w_stride, nt, a, a_stride, (const float(*)[MAXT])yd[i - i0], acc + r);
            }
        }
    } else {
        float yd[Q8G][MAXT];
        int64_t i = 0;
        for (; i + Q8G <= nb; i += Q8G) {
            q8_0_token_scales(i, Q8G, nt, a, a_stride, yd);
            q8_0_group(i, Q8G, nr, w, w_stride, nt, a, a_stride, (const float(*)[MAXT])yd, acc);
        }
        for (; i < nb; i++) {
            q8_0_token_scales(i, 1, nt, a, a_stride, yd);
            q8_0_group(i, 1, nr, w, w_stride, nt, a, a_stride, (const float(*)[MAXT])yd, acc);
        }
    }
    const float summs = 0; /* the one-token loop adds its (here zero) min terms: keeps -0 + 0 = +0 */
    int r = 0;
    for (; r + 8 <= nr; r += 8)
        for (int t = 0; t < nt; t++)
            _mm256_storeu_ps(&s[(size_t)r + (size_t)t * s_stride], _mm256_add_ps(hsum_8rows(acc[r], MAXT, t), _mm256_set1_ps(summs)));
    for (; r < nr; r++)
        for (int t = 0; t < nt; t++) s[(size_t)r + (size_t)t * s_stride] = hsum_ps(acc[r][t]) + summs;
}
