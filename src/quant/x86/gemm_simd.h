/* gemm_simd.h — the helpers the K-quant GEMM kernels share (gemm_avx2.c, quant_kx_avx2.c): the
 * sub-block pairing, the prefetch of the next weight block of a strided row walk (prefetch_next)
 * and the final reductions of 8 tokens' accumulators at once. Include only from files compiled
 * with at least -mavx2 -mfma -mf16c. */
#ifndef E0_X86_GEMM_SIMD_H
#define E0_X86_GEMM_SIMD_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "quant/x86/quant_k_simd.h"

#define AI static inline __attribute__((always_inline))

/* ---- sub-block pairing (q4_K, q5_K, q6_K; stored by q6_KX, quant_kx.h) ----
 * The one-token kernels compute, per 32 values j of a super-block, madd(maddubs(u_j, q_j), sc_j):
 * int32 lane k gets sc_j * (the 4 products of bytes 4k..4k+3), and lanes are summed over j. Here
 * sub-blocks j, j' = 2m, 2m+1 are interleaved by 16-bit words (in every 32-bit lane: A = low words
 * of j and j', B = high words of j and j'), the same for weights and activations, so that
 * maddubs(A_u, A_q) + maddubs(B_u, B_q) holds in each 32-bit lane the two 4-product sums of j
 * and j' (int16: at most 4 * 63 * 128 = 32256, no overflow for 4-, 5- and 6-bit codes), and one
 * madd with [sc_j, sc_j'] gives lane k's sc_j * S_jk + sc_j' * S_j'k. The int32 lane sums are the
 * same integers as the one-token kernel's, from 3 instead of 4 multiply-port operations per 64
 * values (the activations are interleaved once per super-block for all rows). */

/* v[0], v[1] (sub-blocks j, j') -> A, B in place. */
AI void pair_words(__m256i v[2]) {
    const __m256i j = v[0], jj = v[1];
    v[0] = _mm256_blend_epi16(j, _mm256_slli_epi32(jj, 16), 0xAA);
    v[1] = _mm256_blend_epi16(_mm256_srli_epi32(j, 16), jj, 0xAA);
}

/* The 8 activation vectors of one super-block (256 int8), paired. */
AI void pair_subblocks(const uint8_t *q8, __m256i out[8]) {
    for (int m = 0; m < 4; m++) {
        out[2 * m] = _mm256_loadu_si256((const __m256i *)(q8 + 64 * m));
        out[2 * m + 1] = _mm256_loadu_si256((const __m256i *)(q8 + 64 * m + 32));
        pair_words(&out[2 * m]);
    }
}

/* Weight rows are read in a strided pattern (block i of nr rows, then block i + 1 of them), which
 * the hardware prefetcher follows poorly: while a row's block i is used, its block i + 1 is asked
 * for (one super-block step, nr rows times nt tokens of work, ahead); in the last step, block 0 of
 * the same row of the next nr rows (usually the next call's). */
AI void prefetch_next(const uint8_t *w, size_t w_stride, int nr, int r, int64_t i, int64_t nb, size_t bsize) {
    prefetch_lines(i + 1 < nb ? w + (size_t)r * w_stride + (size_t)(i + 1) * bsize : w + (size_t)(nr + r) * w_stride, bsize);
}

/* ---- final reductions, 8 tokens at a time ----
 * hsum_ps (and q45_finish_avx2's min part) of 8 accumulators at once, with the same float adds
 * per token (adds are commutative, so swapped operands give the same bits): v[2q] and v[2q+1]
 * hold tokens 2q (low 128 bits) and 2q+1 (high) of 4-lane partial sums; returns the token sums
 * in the order [0, 2, 4, 6 | 1, 3, 5, 7]. */
AI __m256 sum4_pairs(const __m256 v[4]) {
    /* r + movehl(r): lanes 0, 1 of tokens 2q / 2q+1 */
    const __m256 u0 = _mm256_add_ps(_mm256_shuffle_ps(v[0], v[1], _MM_SHUFFLE(1, 0, 1, 0)), _mm256_shuffle_ps(v[0], v[1], _MM_SHUFFLE(3, 2, 3, 2)));
    const __m256 u1 = _mm256_add_ps(_mm256_shuffle_ps(v[2], v[3], _MM_SHUFFLE(1, 0, 1, 0)), _mm256_shuffle_ps(v[2], v[3], _MM_SHUFFLE(3, 2, 3, 2)));
    /* add_ss(r, movehdup(r)) */
    return _mm256_add_ps(_mm256_shuffle_ps(u0, u1, _MM_SHUFFLE(2, 0, 2, 0)), _mm256_shuffle_ps(u0, u1, _MM_SHUFFLE(3, 1, 3, 1)));
}

/* hsum_ps of acc[0..8): the low + high halves first (hsum_ps's first add), then sum4_pairs. */
AI __m256 hsum8_ps(const __m256 acc[8]) {
    __m256 v[4];
    for (int q = 0; q < 4; q++)
        v[q] = _mm256_add_ps(_mm256_permute2f128_ps(acc[2 * q], acc[2 * q + 1], 0x20), _mm256_permute2f128_ps(acc[2 * q], acc[2 * q + 1], 0x31));
    return sum4_pairs(v);
}

/* s[t * s_stride] = the sums of tokens t = 0..7 (in sum4_pairs' order) */
AI void store8(__m256 sums, float *s, size_t s_stride) {
    float f[8];
    _mm256_storeu_ps(f, sums);
    for (int k = 0; k < 4; k++) {
        s[(size_t)(2 * k) * s_stride] = f[k];
        s[(size_t)(2 * k + 1) * s_stride] = f[4 + k];
    }
}

/* The tokens' min-term operands by pairs (q4_K-scheme GEMMs): bsum_pairs2[p] holds the bsum
 * pairs of token 2p (low lane) and 2p+1 (high), nyd2[p] their -y.d likewise; an odd last token's
 * partner is zeros (bsum_pairs[nt] is set here; nyd[nt] must be 0). */
AI void q45_token_pairs(int nt, __m128i *bsum_pairs, const float *nyd, __m256i *bsum_pairs2, __m256 *nyd2) {
    bsum_pairs[nt] = _mm_setzero_si128();
    for (int t = 0; t < nt; t += 2) {
        bsum_pairs2[t / 2] = _mm256_set_m128i(bsum_pairs[t + 1], bsum_pairs[t]);
        nyd2[t / 2] = _mm256_set_m128(_mm_set1_ps(nyd[t + 1]), _mm_set1_ps(nyd[t]));
    }
}

/* One row's results of a q4_K-scheme GEMM (q4_K, q5_K, q4_KX): s[t * s_stride] =
 * q45_finish_avx2(acc[t], the min lanes of token t in acc_m2[t / 2]), 8 tokens at a time. */
AI void q45_store_row(const __m256 *acc, const __m256 *acc_m2, int nt, float *s, size_t s_stride) {
    int t = 0;
    for (; t + 8 <= nt; t += 8) /* q45_finish_avx2 of 8 tokens: hsum_ps(acc) + the min lanes' sum */
        store8(_mm256_add_ps(hsum8_ps(&acc[t]), sum4_pairs(&acc_m2[t / 2])), &s[(size_t)t * s_stride], s_stride);
    for (; t < nt; t++) {
        const __m256 m2 = acc_m2[t / 2];
        const __m128 acc_m = t % 2 ? _mm256_extractf128_ps(m2, 1) : _mm256_castps256_ps128(m2);
        s[(size_t)t * s_stride] = q45_finish_avx2(acc[t], acc_m);
    }
}

/* ---- results stored 8 rows at a time ----
 * The per-row stores above write each (row, token) result on its own, s_stride floats apart (a
 * scattered store per value; in a GEMM over few super-blocks, as an expert's down matrix of 3,
 * that was a fifth of the time). These reduce the same accumulators 8 rows to a vector for one
 * token — the same float adds per result as hsum8_ps / sum4_pairs, which are per vector — and
 * store the 8 contiguous results s[r .. r+7] of that token at once. acc: the rows' accumulator
 * arrays (acc[k * acc_stride + t] is row k's token t). */

/* [0, 2, 4, 6 | 1, 3, 5, 7] (hsum8_ps, sum4_pairs) -> natural order */
AI __m256 natural8(__m256 v) { return _mm256_permutevar8x32_ps(v, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)); }

/* hsum_ps of token t of 8 rows, in row order. */
AI __m256 hsum_8rows(const __m256 *acc, size_t acc_stride, int t) {
    __m256 v[8];
    for (int k = 0; k < 8; k++) v[k] = acc[(size_t)k * acc_stride + (size_t)t];
    return natural8(hsum8_ps(v));
}

/* ... stored at s[0..8). */
AI void store_8rows(const __m256 *acc, size_t acc_stride, int t, float *s) { _mm256_storeu_ps(s, hsum_8rows(acc, acc_stride, t)); }

/* q45_store_row's results for token t of 8 rows (acc_m2: the rows' min lanes by token pairs,
 * acc_m2[k * m2_stride + t / 2]), stored at s[0..8). */
AI void q45_store_8rows(const __m256 *acc, size_t acc_stride, const __m256 *acc_m2, size_t m2_stride, int t, float *s) {
    __m256 v[8], m[4];
    for (int k = 0; k < 8; k++) v[k] = acc[(size_t)k * acc_stride + (size_t)t];
    for (int q = 0; q < 4; q++) { /* rows 2q (low lane), 2q + 1 (high): token t's 4 min lanes of each */
        const __m256 a = acc_m2[(size_t)(2 * q) * m2_stride + (size_t)(t / 2)], b = acc_m2[(size_t)(2 * q + 1) * m2_stride + (size_t)(t / 2)];
        m[q] = t % 2 ? _mm256_permute2f128_ps(a, b, 0x31) : _mm256_permute2f128_ps(a, b, 0x20);
    }
    _mm256_storeu_ps(s, natural8(_mm256_add_ps(hsum8_ps(v), sum4_pairs(m))));
}

/* A GEMM's results s[r + t * s_stride] = hsum_ps(acc[r][t]) of nr rows x nt tokens (acc: nr
 * arrays of acc_stride vectors): 8 rows to a store, the rows past a multiple of 8 as before. */
AI void store_rows(const __m256 *acc, size_t acc_stride, int nr, int nt, float *s, size_t s_stride) {
    int r = 0;
    for (; r + 8 <= nr; r += 8)
        for (int t = 0; t < nt; t++) store_8rows(acc + (size_t)r * acc_stride, acc_stride, t, &s[(size_t)r + (size_t)t * s_stride]);
    for (; r < nr; r++) {
        const __m256 *ar = acc + (size_t)r * acc_stride;
        int t = 0;
        for (; t + 8 <= nt; t += 8) store8(hsum8_ps(&ar[t]), &s[(size_t)r + (size_t)t * s_stride], s_stride);
        for (; t < nt; t++) s[(size_t)r + (size_t)t * s_stride] = hsum_ps(ar[t]);
    }
}

/* The same for the q4_K-scheme GEMMs: q45_store_row's results (acc_m2: nr arrays of m2_stride). */
AI void q45_store_rows(const __m256 *acc, size_t acc_stride, const __m256 *acc_m2, size_t m2_stride, int nr, int nt, float *s,
                       size_t s_stride) {
    int r = 0;
    for (; r + 8 <= nr; r += 8)
        for (int t = 0; t < nt; t++)
            q45_store_8rows(acc + (size_t)r * acc_stride, acc_stride, acc_m2 + (size_t)r * m2_stride, m2_stride, t,
                            &s[(size_t)r + (size_t)t * s_stride]);
    for (; r < nr; r++) q45_store_row(acc + (size_t)r * acc_stride, acc_m2 + (size_t)r * m2_stride, nt, s + r, s_stride);
}

#endif
