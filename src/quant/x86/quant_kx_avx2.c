/* quant_kx_avx2.c — AVX2+FMA kernels of q4_KX and q6_KX (q4_K / q6_K repacked at load, layouts
 * and rationale in quant_kx.h): the Q8_KX / Q8_KP activation quantizers, the one-token dots and
 * the prefill GEMMs.
 *
 * Per block and (row, token), q4_KX: eight vpmaddubsw of the code vectors with the permuted
 * activations, added in int16, and one vpmaddwd with the scale vector [sc0 .. sc7] x 2 (word w
 * of every vector belongs to sub-block w%8). The mins go through
 * the bsums as in quant_k_avx2.c. The GEMM does, per (row, token), the same integer operations
 * into the same lanes and the same float operations in the same order as the dot, so the two
 * give the same bits (tests/test_gemm.c checks it with memcmp). */
#include "quant/quant_kx.h"
#include "quant/x86/quant_k_simd.h"
#include "quant/x86/gemm_simd.h"

#define MAXT E0_GEMM_TOKENS_MAX
#define MAXR E0_GEMM_ROWS

/* ---- the permutations in registers (the scalar definitions: quant_kx.h, quant_kx.c) ----
 * q4_KX / Q8_KX: from the natural sub-block vectors n[0..7], vector v = word 2v (low lane) and
 * word 2v + 1 (high lane) of every n[s], s = 0..7 in order: an 8 x 8 transpose of 16-bit words
 * in each 128-bit lane (t[k] lane L = word 8L + k of n[0..7]), then the lanes regrouped. */
AI void kx_interleave8(const __m256i n[8], __m256i v[8]) {
    __m256i a[4], b[4], c[4], d[4], t[8];
    for (int k = 0; k < 4; k++) {
        a[k] = _mm256_unpacklo_epi16(n[2 * k], n[2 * k + 1]); /* words 0-3 of n[2k], n[2k+1] interleaved */
        b[k] = _mm256_unpackhi_epi16(n[2 * k], n[2 * k + 1]); /* words 4-7 */
    }
    for (int k = 0; k < 2; k++) {
        c[2 * k] = _mm256_unpacklo_epi32(a[2 * k], a[2 * k + 1]);
        c[2 * k + 1] = _mm256_unpackhi_epi32(a[2 * k], a[2 * k + 1]);
        d[2 * k] = _mm256_unpacklo_epi32(b[2 * k], b[2 * k + 1]);
        d[2 * k + 1] = _mm256_unpackhi_epi32(b[2 * k], b[2 * k + 1]);
    }
    for (int k = 0; k < 2; k++) {
        t[2 * k] = _mm256_unpacklo_epi64(c[k], c[k + 2]);
        t[2 * k + 1] = _mm256_unpackhi_epi64(c[k], c[k + 2]);
        t[4 + 2 * k] = _mm256_unpacklo_epi64(d[k], d[k + 2]);
        t[4 + 2 * k + 1] = _mm256_unpackhi_epi64(d[k], d[k + 2]);
    }
    for (int k = 0; k < 4; k++) {
        v[k] = _mm256_permute2x128_si256(t[2 * k], t[2 * k + 1], 0x20);
        v[4 + k] = _mm256_permute2x128_si256(t[2 * k], t[2 * k + 1], 0x31);
    }
}

/* Q8_K blocks in place -> Q8_KX (kx = 1) or Q8_KP (kx = 0): e0_q8_KX_permute / e0_q8_KP_permute. */
AI void q8_permute_avx2(e0_block_q8_K *y, int64_t n_blocks, int kx) {
    for (int64_t i = 0; i < n_blocks; i++) {
        __m256i *q = (__m256i *)y[i].qs, n[8], v[8];
        for (int k = 0; k < 8; k++) n[k] = _mm256_loadu_si256(q + k);
        if (kx) {
            kx_interleave8(n, v);
        } else {
            memcpy(v, n, sizeof v);
            for (int k = 0; k < 8; k += 2) pair_words(&v[k]);
        }
        for (int k = 0; k < 8; k++) _mm256_storeu_si256(q + k, v[k]);
    }
}

/* Q8_K's AVX2 quantizer (the reference's bytes), then the permutation */
void e0_q8_KX_from_float_avx2(const float *x, void *dst, int64_t n) {
    e0_quantize_q8_K_avx2(x, dst, n);
    q8_permute_avx2(dst, n / QK_K, 1);
}
void e0_q8_KP_from_float_avx2(const float *x, void *dst, int64_t n) {
    e0_quantize_q8_K_avx2(x, dst, n);
    q8_permute_avx2(dst, n / QK_K, 0);
}

/* e0_q4_K_repack's bytes: nibbles unpacked, interleaved, packed two vectors a byte. */
void e0_q4_K_repack_avx2(void *blocks, int64_t n_blocks) {
    e0_block_q4_K *b = blocks;
    const __m256i m4 = _mm256_set1_epi8(0xF);
    for (int64_t i = 0; i < n_blocks; i++) {
        __m256i *q = (__m256i *)b[i].qs, n[8], v[8];
        for (int k = 0; k < 4; k++) { /* natural sub-blocks 2k (low nibbles), 2k + 1 (high) */
            const __m256i bits = _mm256_loadu_si256(q + k);
            n[2 * k] = _mm256_and_si256(bits, m4);
            n[2 * k + 1] = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
        }
        kx_interleave8(n, v);
        for (int k = 0; k < 4; k++) _mm256_storeu_si256(q + k, _mm256_or_si256(v[2 * k], _mm256_slli_epi16(v[2 * k + 1], 4)));
    }
}

/* e0_q6_K_repack's bytes: codes unpacked (q6_codes), paired, packed back into ql / qh. */
void e0_q6_K_repack_avx2(void *blocks, int64_t n_blocks) {
    e0_block_q6_K *b = blocks;
    const __m256i m4 = _mm256_set1_epi8(0xF), m3 = _mm256_set1_epi8(3);
    for (int64_t i = 0; i < n_blocks; i++)
        for (int c = 0; c < 2; c++) {
            __m256i u[4];
            q6_codes(b[i].ql + 64 * c, b[i].qh + 32 * c, u);
            pair_words(&u[0]);
            pair_words(&u[2]);
            const __m256i ql0 = _mm256_or_si256(_mm256_and_si256(u[0], m4), _mm256_slli_epi16(_mm256_and_si256(u[2], m4), 4));
            const __m256i ql1 = _mm256_or_si256(_mm256_and_si256(u[1], m4), _mm256_slli_epi16(_mm256_and_si256(u[3], m4), 4));
            __m256i qh = _mm256_and_si256(_mm256_srli_epi16(u[0], 4), m3);
            for (int g = 1; g < 4; g++) qh = _mm256_or_si256(qh, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(u[g], 4), m3), 2 * g));
            _mm256_storeu_si256((__m256i *)(b[i].ql + 64 * c), ql0);
            _mm256_storeu_si256((__m256i *)(b[i].ql + 64 * c + 32), ql1);
            _mm256_storeu_si256((__m256i *)(b[i].qh + 32 * c), qh);
        }
}

/* The scale vector of a block (word w: scale w%8) and its mins as int16 (xmm). */
AI void kx_scales(const uint8_t *packed, __m256i *sc, __m128i *mins) {
    const __m128i sm = k_unpack_scales_mins_simd(packed); /* bytes 0..7 scales, 8..15 mins */
    *sc = _mm256_cvtepu8_epi16(_mm_shuffle_epi8(sm, _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7)));
    *mins = _mm_cvtepu8_epi16(_mm_srli_si128(sm, 8));
}

/* The 8 code vectors of a block. */
AI void kx_codes(const uint8_t *qs, __m256i u[8]) {
    const __m256i m4 = _mm256_set1_epi8(0xF);
    #pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        const __m256i b = _mm256_loadu_si256((const __m256i *)(qs + 32 * k));
        u[2 * k] = _mm256_and_si256(b, m4);
        u[2 * k + 1] = _mm256_and_si256(_mm256_srli_epi16(b, 4), m4);
    }
}

/* The block's int32 lane sums for one token (q8: its 256 permuted activations): eight
 * vpmaddubsw added in int16, one vpmaddwd. */
AI __m256i kx_block_dot(const __m256i u[8], const int8_t *q8, __m256i sc) {
    const __m256i *a = (const __m256i *)q8;
    __m256i p[2];
    #pragma GCC unroll 2
    for (int h = 0; h < 2; h++) /* two int16 chains, then one add */
        p[h] = _mm256_add_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(u[4 * h], _mm256_loadu_si256(a + 4 * h)),
                                                 _mm256_maddubs_epi16(u[4 * h + 1], _mm256_loadu_si256(a + 4 * h + 1))),
                                _mm256_add_epi16(_mm256_maddubs_epi16(u[4 * h + 2], _mm256_loadu_si256(a + 4 * h + 2)),
                                                 _mm256_maddubs_epi16(u[4 * h + 3], _mm256_loadu_si256(a + 4 * h + 3))));
    return _mm256_madd_epi16(_mm256_add_epi16(p[0], p[1]), sc);
}

AI __m128i bsum_pairs_of(const e0_block_q8_K *y) {
    const __m256i bsums = _mm256_loadu_si256((const __m256i *)y->bsums);
    return _mm_hadd_epi16(_mm256_castsi256_si128(bsums), _mm256_extracti128_si256(bsums, 1));
}

void e0_vec_dot_q4_KX_avx2(int64_t n, float *s, const void *vw, const void *va) {
    const e0_block_q4_K *x = vw;
    const e0_block_q8_K *y = va;
    __m256 acc = _mm256_setzero_ps();
    __m128 acc_m = _mm_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        e0_prefetch_bytes(x + i + E0_PREFETCH_BLOCKS, sizeof *x);
        const float d = y[i].d * fp16(x[i].d), dmin = -y[i].d * fp16(x[i].dmin);
        __m256i sc, u[8];
        __m128i mins;
        kx_scales(x[i].scales, &sc, &mins);
        acc_m = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(_mm_madd_epi16(mins, bsum_pairs_of(&y[i]))), acc_m);
        kx_codes(x[i].qs, u);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(kx_block_dot(u, y[i].qs, sc)), acc);
    }
    *s = q45_finish_avx2(acc, acc_m);
}

/* ---- GEMM ----
 * Two loop orders (x86/simd.h, "GEMMs with few tokens") with the same operations per (row,
 * token), in the same order, so the same bits:
 * - more than GEMM_ROW1_NT tokens: gemm_avx2.c's q45_gemm order. Per super-block i the tokens'
 *   terms once, then per row the block unpacked once and streamed past every token; the rows
 *   interleave, and prefetch_next asks for each row's next block.
 * - up to GEMM_ROW1_NT tokens: the rows one at a time over chunks of TB blocks (the tokens' terms
 *   made for a chunk at a time), block i of row r + GEMM_AHEAD prefetched. */
#define TB 16 /* blocks of token terms made at a time in the one-at-a-time order */

/* The terms of nt tokens for super-block i of q4_KX: activation pointers, y.d (zero past nt up to
 * a multiple of 8) and, by token pairs, the bsum pairs and -y.d of the min term (q45_token_pairs). */
typedef struct {
    const int8_t *q8[MAXT];
    float yd[MAXT];
    __m256i bsum_pairs2[MAXT / 2];
    __m256 nyd2[MAXT / 2];
} q4kx_terms;

AI void q4kx_terms_make(q4kx_terms *tt, const uint8_t *a, size_t a_stride, int nt, int64_t i) {
    __m128i bsum_pairs[MAXT + 1];
    float nyd[MAXT + 1] = {0};
    for (int t = 0; t < nt; t++) {
        const e0_block_q8_K *y = (const e0_block_q8_K *)(a + (size_t)t * a_stride) + i;
        bsum_pairs[t] = bsum_pairs_of(y);
        tt->yd[t] = y->d;
        nyd[t] = -y->d;
        tt->q8[t] = y->qs;
    }
    for (int t = nt; t % 8; t++) tt->yd[t] = 0;
    q45_token_pairs(nt, bsum_pairs, nyd, tt->bsum_pairs2, tt->nyd2);
    IN_MEMORY(tt->nyd2);
}

/* Block x of one row against the nt tokens of tt: acc[t] (the dot's lanes) and acc_m2[t / 2] (its
 * min lanes, by token pairs). */
AI void q4kx_row_block(const e0_block_q4_K *x, const q4kx_terms *tt, int nt, __m256 *acc, __m256 *acc_m2) {
    float d[MAXT];
    /* the dot's d = y.d * x.d and dmin = -y.d * x.dmin, all tokens at once */
    const __m256 xd = _mm256_set1_ps(fp16(x->d)), xdmin = _mm256_set1_ps(fp16(x->dmin));
    for (int v = 0; v < nt; v += 8) _mm256_storeu_ps(d + v, _mm256_mul_ps(_mm256_loadu_ps(tt->yd + v), xd));
    __m256i sc, u[8];
    __m128i mins;
    kx_scales(x->scales, &sc, &mins);
    const __m256i mins2 = _mm256_set_m128i(mins, mins);
    kx_codes(x->qs, u);
    for (unsigned p = 0; p < (unsigned)(nt + 1) / 2; p++) {
        const __m256 dm = _mm256_mul_ps(tt->nyd2[p], xdmin);
        acc_m2[p] = _mm256_fmadd_ps(dm, _mm256_cvtepi32_ps(_mm256_madd_epi16(mins2, tt->bsum_pairs2[p])), acc_m2[p]);
    }
    for (int t = 0; t < nt; t++)
        acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d[t]), _mm256_cvtepi32_ps(kx_block_dot(u, tt->q8[t], sc)), acc[t]);
}

void e0_gemm_q4_KX_avx2(int64_t n, int nr, const void *vw, size_t w_stride, int nt, const void *va, size_t a_stride, float *s,
                        size_t s_stride) {
    const uint8_t *w = vw, *a = va;
    const int64_t nb = n / QK_K;
    __m256 acc[MAXR][MAXT];
    __m256 acc_m2[MAXR][MAXT / 2]; /* lanes 0..3 token 2p's min lanes, 4..7 token 2p+1's */
    for (int r = 0; r < nr; r++) {
        zero_acc(acc[r], nt);
        zero_acc(acc_m2[r], (nt + 1) / 2);
    }
    if (nt <= GEMM_ROW1_NT) {
        q4kx_terms tt[TB];
        for (int64_t i0 = 0; i0 < nb; i0 += TB) {
            const int64_t nbc = nb - i0 < TB ? nb - i0 : TB;
            for (int64_t i = 0; i < nbc; i++) q4kx_terms_make(&tt[i], a, a_stride, nt, i0 + i);
            for (int r = 0; r < nr; r++) {
                const e0_block_q4_K *x = (const e0_block_q4_K *)(w + (size_t)r * w_stride) + i0;
                const e0_block_q4_K *ahead = (const e0_block_q4_K *)(w + (size_t)(r + GEMM_AHEAD) * w_stride) + i0;
                for (int64_t i = 0; i < nbc; i++) {
                    prefetch_lines((const uint8_t *)(ahead + i), sizeof *ahead);
                    q4kx_row_block(x + i, &tt[i], nt, acc[r], acc_m2[r]);
                }
            }
        }
    } else {
        q4kx_terms tt;
        for (int64_t i = 0; i < nb; i++) {
            q4kx_terms_make(&tt, a, a_stride, nt, i);
            for (int r = 0; r < nr; r++) {
                prefetch_next(w, w_stride, nr, r, i, nb, sizeof(e0_block_q4_K));
                q4kx_row_block((const e0_block_q4_K *)(w + (size_t)r * w_stride) + i, &tt, nt, acc[r], acc_m2[r]);
            }
        }
    }
    q45_store_rows(&acc[0][0], MAXT, &acc_m2[0][0], MAXT / 2, nr, nt, s, s_stride);
}

/* ---- q6_KX (pairs of sub-blocks, quant_kx.h) ---- */

/* The 4 scale vectors of a block, pair m = 2c + m' of half c: low lane [s(8c+4m'), s(8c+4m'+2)],
 * high lane [s(8c+4m'+1), s(8c+4m'+3)] in every 32-bit lane (gemm_avx2.c's sc2, one vpshufb
 * each); sc16: the 16 scales as int16 (for the offset term). */
AI void kp_scales(const int8_t *scales, __m256i *sc16, __m256i sc2[4]) {
    *sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)scales));
    const __m256i halves[2] = {_mm256_permute4x64_epi64(*sc16, 0x44), _mm256_permute4x64_epi64(*sc16, 0xEE)};
    const __m256i ctl[2] = {_mm256_setr_epi8(0, 1, 4, 5, 0, 1, 4, 5, 0, 1, 4, 5, 0, 1, 4, 5, 2, 3, 6, 7, 2, 3, 6, 7, 2, 3, 6, 7, 2, 3, 6, 7),
                            _mm256_setr_epi8(8, 9, 12, 13, 8, 9, 12, 13, 8, 9, 12, 13, 8, 9, 12, 13, 10, 11, 14, 15, 10, 11, 14,
                                             15, 10, 11, 14, 15, 10, 11, 14, 15)};
    for (int c = 0; c < 2; c++)
        for (int m = 0; m < 2; m++) sc2[2 * c + m] = _mm256_shuffle_epi8(halves[c], ctl[m]);
}

/* The block's int32 lane sums for one token, codes u (A, B of each pair) and its permuted
 * activations q8, less 32 * sum(scale * bsum) (codes are q + 32): the plain q6_K dot's lanes. */
AI __m256i kp_block_dot(const __m256i u[8], const int8_t *q8, const __m256i sc2[4], __m256i sc16, const int16_t *bsums) {
    const __m256i offs = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)bsums));
    __m256i sum[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
    #pragma GCC unroll 4
    for (int m = 0; m < 4; m++) {
        const __m256i *a = (const __m256i *)(q8 + 64 * m);
        const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(u[2 * m], _mm256_loadu_si256(a)),
                                           _mm256_maddubs_epi16(u[2 * m + 1], _mm256_loadu_si256(a + 1)));
        sum[m & 1] = _mm256_add_epi32(sum[m & 1], _mm256_madd_epi16(p, sc2[m])); /* two independent chains */
    }
    return _mm256_sub_epi32(_mm256_add_epi32(sum[0], sum[1]), _mm256_slli_epi32(offs, 5));
}

/* kp_block_dot's integers, unpacking one half at a time (4 code vectors live, not 8: fewer
 * registers than the GEMM's whole-block unpacking, which serves many tokens) */
void e0_vec_dot_q6_KX_avx2(int64_t n, float *s, const void *vw, const void *va) {
    const e0_block_q6_K *x = vw;
    const e0_block_q8_K *y = va;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        e0_prefetch_bytes(x + i + E0_PREFETCH_BLOCKS, sizeof *x);
        const float d = y[i].d * fp16(x[i].d);
        __m256i sc16, sc2[4];
        kp_scales(x[i].scales, &sc16, sc2);
        const __m256i offs = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)y[i].bsums));
        __m256i sumi = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(offs, 5));
        #pragma GCC unroll 2
        for (int c = 0; c < 2; c++) {
            __m256i u[4];
            q6_codes(x[i].ql + 64 * c, x[i].qh + 32 * c, u);
            const __m256i *a = (const __m256i *)(y[i].qs + 128 * c);
            const __m256i p0 = _mm256_add_epi16(_mm256_maddubs_epi16(u[0], _mm256_loadu_si256(a)), _mm256_maddubs_epi16(u[1], _mm256_loadu_si256(a + 1)));
            const __m256i p1 = _mm256_add_epi16(_mm256_maddubs_epi16(u[2], _mm256_loadu_si256(a + 2)), _mm256_maddubs_epi16(u[3], _mm256_loadu_si256(a + 3)));
            sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(_mm256_madd_epi16(p0, sc2[2 * c]), _mm256_madd_epi16(p1, sc2[2 * c + 1])));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    *s = hsum_ps(acc);
}

/* The GEMM: the two loop orders of q4_KX's (above), gemm_avx2.c's q6_K GEMM without its pairing
 * work (the layout is paired). The tokens' terms of super-block i: the activation blocks and y.d
 * (zero past nt up to a multiple of 8). */
typedef struct {
    const e0_block_q8_K *y[MAXT];
    float yd[MAXT];
} q6kx_terms;

AI void q6kx_terms_make(q6kx_terms *tt, const uint8_t *a, size_t a_stride, int nt, int64_t i) {
    for (int t = 0; t < nt; t++) {
        tt->y[t] = (const e0_block_q8_K *)(a + (size_t)t * a_stride) + i;
        tt->yd[t] = tt->y[t]->d;
    }
    for (int t = nt; t % 8; t++) tt->yd[t] = 0;
}

AI void q6kx_row_block(const e0_block_q6_K *x, const q6kx_terms *tt, int nt, __m256 *acc) {
    float d[MAXT];
    for (int v = 0; v < nt; v += 8) /* y.d * x.d */
        _mm256_storeu_ps(d + v, _mm256_mul_ps(_mm256_loadu_ps(tt->yd + v), _mm256_set1_ps(fp16(x->d))));
    __m256i sc16, sc2[4], u[8];
    kp_scales(x->scales, &sc16, sc2);
    IN_MEMORY(sc2);
    q6_codes(x->ql, x->qh, u);
    q6_codes(x->ql + 64, x->qh + 32, u + 4);
    for (int t = 0; t < nt; t++)
        acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d[t]), _mm256_cvtepi32_ps(kp_block_dot(u, tt->y[t]->qs, sc2, sc16, tt->y[t]->bsums)), acc[t]);
}

void e0_gemm_q6_KX_avx2(int64_t n, int nr, const void *vw, size_t w_stride, int nt, const void *va, size_t a_stride, float *s,
                        size_t s_stride) {
    const uint8_t *w = vw, *a = va;
    const int64_t nb = n / QK_K;
    __m256 acc[MAXR][MAXT];
    for (int r = 0; r < nr; r++)
        zero_acc(acc[r], nt);
    if (nt <= GEMM_ROW1_NT) {
        q6kx_terms tt[TB];
        for (int64_t i0 = 0; i0 < nb; i0 += TB) {
            const int64_t nbc = nb - i0 < TB ? nb - i0 : TB;
            for (int64_t i = 0; i < nbc; i++) q6kx_terms_make(&tt[i], a, a_stride, nt, i0 + i);
            for (int r = 0; r < nr; r++) {
                const e0_block_q6_K *x = (const e0_block_q6_K *)(w + (size_t)r * w_stride) + i0;
                const e0_block_q6_K *ahead = (const e0_block_q6_K *)(w + (size_t)(r + GEMM_AHEAD) * w_stride) + i0;
                for (int64_t i = 0; i < nbc; i++) {
                    prefetch_lines((const uint8_t *)(ahead + i), sizeof *ahead);
                    q6kx_row_block(x + i, &tt[i], nt, acc[r]);
                }
            }
        }
    } else {
        q6kx_terms tt;
        for (int64_t i = 0; i < nb; i++) {
            q6kx_terms_make(&tt, a, a_stride, nt, i);
            for (int r = 0; r < nr; r++) {
                prefetch_next(w, w_stride, nr, r, i, nb, sizeof(e0_block_q6_K));
                q6kx_row_block((const e0_block_q6_K *)(w + (size_t)r * w_stride) + i, &tt, nt, acc[r]);
            }
        }
    }
    store_rows(&acc[0][0], MAXT, nr, nt, s, s_stride);
}
