/* gemm_iq2_avx2.c — AVX2 kernels of IQ2_XXS against Q8_K: the one-token vec_dot (decode), the
 * prefill GEMM (e0_gemm_fn, see kernel.h: up to E0_GEMM_ROWS rows x E0_GEMM_TOKENS_MAX = 32
 * tokens, this type's gemm_tokens) and the 4-token dot. Declared in quant_iq2.h and gemm.h.
 *
 * A sub-block of 32 weights is 8 bytes: four grid indices (one group of 8 magnitudes 8/25/43
 * each, e0_iq2xxs_grid) and a 32-bit word aux of four 7-bit sign fields plus a 4-bit scale ls.
 *
 * Unpacking (no scalar work per group; the loops are bound by the count of vector operations):
 *  - grid: four 8-byte entries per sub-block, each a broadcast load, merged by three dword blends
 *    (lookup4; _mm256_set_epi64x would cost three shuffle-port operations per sub-block);
 *  - signs and scales of a whole super-block at once (xxs_unpack): its 8 aux words in one vector,
 *    the four 7-bit fields of each spread into bytes, bit 7 = their parity from a nibble table,
 *    so every group has its 8 sign bits; per sub-block one byte shuffle repeats each group's byte
 *    over its 8 elements and a bit test makes the 0xff / 0 mask (v = (grid ^ mask) - mask). The
 *    scales 2*ls+1 go to a small buffer, broadcast back by loads.
 *
 *  vec_dot / vec_dot_4: per sub-block maddubs(|q8|, v * sign(q8)) -> int16 pairs, madd with
 *           2*ls+1 -> int32 lanes; two sums in flight. |q8| is taken as unsigned, so q8 = -128 is
 *           exact too (the shortcut sign(q8, signs) is not: -(-128) wraps).
 *  gemm:    each row's super-block is unpacked once into 8 registers of w = v + 43 (0..86, the
 *           unsigned maddubs operand) and 8 scale vectors (memory operands), shared by all the
 *           call's tokens, whose q8 are the signed operand read straight from their rows: per
 *           (row, token, sub-block) one maddubs and one madd (pairs <= 2*86*128, no saturation).
 *           The offset adds 43 * sum(sc * q8): from each token's sub-block sums (once per call and
 *           block) times the row's 43 * sc, one madd per (row, token, block). The int32 lanes of 8
 *           tokens are then summed together (a transposing hadd tree: lane t = token t's sum).
 * Every integer sum is exact for any int8 activations (|block sum| < 2^27), so all three give the
 * scalar reference's integer per block; the float steps are the reference's, in its order,
 * lane-wise (d = x.d * y.d, then sumf += d * bsum, then 0.125 * sumf): results equal
 * e0_vec_dot_iq2_xxs_ref bit for bit, whatever the batch (tests/test_quant_iq2.c and
 * tests/test_gemm.c check with memcmp). */
#include <stddef.h>

#include "quant/gemm.h"
#include "quant/quant_iq2.h"
#include "quant/x86/simd.h"

#define AI static inline __attribute__((always_inline))
#define MAXT E0_GEMM_TOKENS_MAX /* this gemm's token count a call (its type row's gemm_tokens) */
#define MAXR E0_GEMM_ROWS
_Static_assert(MAXT % 8 == 0, "tokens are summed and scaled in vectors of 8 lanes");

/* One load of x, not one per operation that uses it (loads are a scarce port here). */
#define IN_REGISTER(x) __asm__("" : "+x"(x))

/* Qword k = t[ik]: four broadcast loads (load ports only) and three dword blends (any vector
 * ALU port). */
AI __m256i lookup4(const uint64_t *t, unsigned i0, unsigned i1, unsigned i2, unsigned i3) {
    const __m256i a = _mm256_set1_epi64x((long long)t[i0]), b = _mm256_set1_epi64x((long long)t[i1]);
    const __m256i c = _mm256_set1_epi64x((long long)t[i2]), d = _mm256_set1_epi64x((long long)t[i3]);
    return _mm256_blend_epi32(_mm256_blend_epi32(a, b, 0x0c), _mm256_blend_epi32(c, d, 0xc0), 0xf0);
}

/* The 32 grid magnitudes (u8) of the sub-block at q (8 bytes). */
AI __m256i xxs_grid(const uint8_t *q) { return lookup4(e0_iq2xxs_grid, q[0], q[1], q[2], q[3]); }

/* ---- signs and scales of a whole super-block, in vector registers ----
 * The 8 sign-and-scale words of a super-block (the odd dwords of its 64 bytes of qs) in one
 * vector, in the order SB_ORDER (a lane shuffle of the two halves puts them so). */
#define SB_POS(ib) ((ib) == 2 ? 4 : (ib) == 3 ? 5 : (ib) == 4 ? 2 : (ib) == 5 ? 3 : (ib)) /* dword of sub-block ib */

typedef struct {
    __m256i sgn;   /* 16-bit unit SB_POS(ib): lane 0 the sign bytes of groups 0, 1, lane 1 of groups 2, 3 */
    __m256i sc1;    /* dword SB_POS(ib): 2*ls+1 */
    uint32_t sc[8]; /* [SB_POS(ib)]: 2*ls+1 in both int16 halves */
} xxs_block;

/* Unpacks the signs (the 7 stored bits and the parity bit that completes them, as 8-bit masks
 * per group) and the scales of the super-block whose qs is q. */
AI void xxs_unpack(const uint8_t *q, xxs_block *u) {
    const __m256i lo = _mm256_loadu_si256((const __m256i *)q), hi = _mm256_loadu_si256((const __m256i *)(q + 32));
    const __m256i x = _mm256_castps_si256(_mm256_shuffle_ps(_mm256_castsi256_ps(lo), _mm256_castsi256_ps(hi), 0xdd));
    /* scales: 2*ls+1 in both halves of each dword */
    u->sc1 = _mm256_add_epi32(_mm256_slli_epi32(_mm256_srli_epi32(x, 28), 1), _mm256_set1_epi32(1));
    const __m256i sc = _mm256_or_si256(u->sc1, _mm256_slli_epi32(u->sc1, 16));
    _mm256_storeu_si256((__m256i *)u->sc, sc);
    IN_MEMORY(u->sc); /* read back by broadcast loads, not by shuffles of this register */
    /* the four 7-bit sign fields of each word into its four bytes */
    const __m256i m7 = _mm256_set1_epi32(0x7f);
    __m256i y = _mm256_and_si256(x, m7);
    y = _mm256_or_si256(y, _mm256_and_si256(_mm256_slli_epi32(x, 1), _mm256_slli_epi32(m7, 8)));
    y = _mm256_or_si256(y, _mm256_and_si256(_mm256_slli_epi32(x, 2), _mm256_slli_epi32(m7, 16)));
    y = _mm256_or_si256(y, _mm256_and_si256(_mm256_slli_epi32(x, 3), _mm256_slli_epi32(m7, 24)));
    /* bit 7 of each byte: the parity of its 7 bits, from a nibble table */
    const __m256i par = _mm256_setr_epi8(0, -128, -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0, 0, -128, -128,
                                         0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0);
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const __m256i p = _mm256_xor_si256(_mm256_shuffle_epi8(par, _mm256_and_si256(y, m4)),
                                       _mm256_shuffle_epi8(par, _mm256_and_si256(_mm256_srli_epi16(y, 4), m4)));
    y = _mm256_or_si256(y, p);
    /* words: groups 0, 1 of each sub-block into the lane's low half, groups 2, 3 into its high
     * half; then the low halves of both lanes into lane 0, the high halves into lane 1 */
    const __m256i split = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15, 0, 1, 4, 5, 8, 9, 12, 13, 2, 3,
                                           6, 7, 10, 11, 14, 15);
    u->sgn = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(y, split), 0xd8);
}

/* The 32 signed weights (grid * sign, int8) of sub-block ib (q: its 8 bytes). */
AI __m256i xxs_weights(const xxs_block *u, const uint8_t *q, const int ib) {
    const long long k = 0x0101010101010101ll * (2 * SB_POS(ib));
    const __m256i rep = _mm256_shuffle_epi8(u->sgn, _mm256_setr_epi64x(k, k + 0x0101010101010101ll, k, k + 0x0101010101010101ll));
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    const __m256i neg = _mm256_cmpeq_epi8(_mm256_and_si256(rep, bit), bit); /* 0xff: negative */
    return _mm256_sub_epi8(_mm256_xor_si256(xxs_grid(q), neg), neg);
}

AI __m256i xxs_scale(const xxs_block *u, const int ib) { return _mm256_set1_epi32((int)u->sc[SB_POS(ib)]); }

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
        xxs_block u;
        xxs_unpack(q, &u);
        __m256i s1 = _mm256_setzero_si256(), s2 = _mm256_setzero_si256();
        #pragma GCC unroll 4
        for (int ib = 0; ib < 8; ib += 2) {
            __m256i y1 = _mm256_loadu_si256((const __m256i *)(q8 + 32 * ib));
            __m256i y2 = _mm256_loadu_si256((const __m256i *)(q8 + 32 * ib + 32));
            IN_REGISTER(y1);
            IN_REGISTER(y2);
            const __m256i v1 = xxs_weights(&u, q + 8 * ib, ib), v2 = xxs_weights(&u, q + 8 * ib + 8, ib + 1);
            const __m256i p1 = _mm256_maddubs_epi16(_mm256_abs_epi8(y1), _mm256_sign_epi8(v1, y1));
            const __m256i p2 = _mm256_maddubs_epi16(_mm256_abs_epi8(y2), _mm256_sign_epi8(v2, y2));
            s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(p1, xxs_scale(&u, ib)));
            s2 = _mm256_add_epi32(s2, _mm256_madd_epi16(p2, xxs_scale(&u, ib + 1)));
        }
        const float d = h2f(b) * y[i].d;
        const float term = d * (float)hsum_i32(_mm256_add_epi32(s1, s2));
        sumf += term; /* own statement: no compiler may fuse it into an fma (the reference has none) */
    }
    *s = 0.125f * sumf;
}

/* The weight rows are read block i of all nr rows, then block i + 1: while row r's block i is
 * used, its block i + 1 is asked for (in the last step, block 0 of row nr + r, usually the next
 * call's). Prefetches never fault. */
AI void prefetch_next(const uint8_t *w, size_t w_stride, int nr, int r, int64_t i, int64_t nb) {
    const uint8_t *p = i + 1 < nb ? w + (size_t)r * w_stride + (size_t)(i + 1) * IQ2XXS_SIZE : w + (size_t)(nr + r) * w_stride;
    __builtin_prefetch(p, 0, 3);
    __builtin_prefetch(p + IQ2XXS_SIZE - 1, 0, 3);
}

/* The tokens' terms of super-block i: yd[t] = y.d (0 past nt up to a multiple of 8) and ysum[t],
 * dword k the sum of its q8 in sub-block k of SB_ORDER. */
AI void xxs_terms(const uint8_t *a, size_t a_stride, int nt, int64_t i, float *yd, __m256i *ysum) {
    const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
    for (int t = 0; t < nt; t++) {
        const e0_block_q8_K *y = (const e0_block_q8_K *)(a + (size_t)t * a_stride) + i;
        yd[t] = y->d;
        __m256i sums[8];
        #pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            const __m256i q8 = _mm256_loadu_si256((const __m256i *)(y->qs + 32 * SB_POS(k)));
            sums[k] = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, q8), ones16);
        }
        ysum[t] = hsum8_i32(sums);
    }
    for (int t = nt; t % 8; t++) yd[t] = 0;
}

/* Block b of one row against the nt tokens' terms (yd, ysum; q8 of token t at yq + t * a_stride):
 * sumf[g] (tokens 8g .. 8g + 7) += (x.d * y.d) * the block sums. acc: the tokens' int32 lanes,
 * zero past nt (so the 8-token sums of the last vector add zeros). */
AI void xxs_row_block(const uint8_t *b, int nt, const float *yd, const __m256i *ysum, const uint8_t *yq, size_t a_stride,
                      __m256i acc[MAXT], __m256 *sumf) {
    const __m256i off = _mm256_set1_epi8(43);
    const uint8_t *q = b + IQ2XXS_QS;
    xxs_block ub;
    xxs_unpack(q, &ub);
    __m256i v[8], scv[8]; /* scv: the row block's scale vectors (madd memory operands) */
    #pragma GCC unroll 8
    for (int ib = 0; ib < 8; ib++) {
        v[ib] = _mm256_add_epi8(xxs_weights(&ub, q + 8 * ib, ib), off);
        scv[ib] = xxs_scale(&ub, ib);
    }
    IN_MEMORY(scv);
    /* dword k: 43 * (2*ls+1) in its low int16, 0 in the high one (ysum's high int16 is its
     * sign extension: madd gives 43 * sc * ysum exactly) */
    const __m256i sc43 = _mm256_mullo_epi16(ub.sc1, _mm256_set1_epi32(43));
    for (int t = 0; t < nt; t++, yq += a_stride) {
        __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
        #pragma GCC unroll 8
        for (int ib = 0; ib < 8; ib += 2) {
            const __m256i y0 = _mm256_loadu_si256((const __m256i *)(yq + 32 * ib));
            const __m256i y1 = _mm256_loadu_si256((const __m256i *)(yq + 32 * ib + 32));
            s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(_mm256_maddubs_epi16(v[ib], y0), scv[ib]));
            s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(_mm256_maddubs_epi16(v[ib + 1], y1), scv[ib + 1]));
        }
        acc[t] = _mm256_sub_epi32(_mm256_add_epi32(s0, s1), _mm256_madd_epi16(ysum[t], sc43));
    }
    const __m256 xd = _mm256_set1_ps(h2f(b));
    for (int g = 0; g < (nt + 7) / 8; g++) {
        const __m256i bsum = hsum8_i32(acc + 8 * g);
        const __m256 d = _mm256_mul_ps(xd, _mm256_loadu_ps(yd + 8 * g));
        sumf[g] = _mm256_add_ps(sumf[g], _mm256_mul_ps(d, _mm256_cvtepi32_ps(bsum)));
    }
}

#define XXS_TB 16 /* blocks of token terms made at a time when the rows go one at a time */

/* nr <= MAXR rows x nt <= MAXT tokens. The roles of the vec_dot swap: the weights are the
 * unsigned operand of maddubs, offset to w = v + 43 (0..86), and the activations q8 the signed
 * one, read straight from the token rows as memory operands (pairs <= 2*86*128: no saturation;
 * the 8 weight vectors stay in registers across the token loop). The offset adds 43 * sum(sc *
 * q8) per (row, token): from the tokens' sub-block sums (once per call and block) and the row's
 * scales times 43, one madd per row, token and block. Loop orders (x86/simd.h, "GEMMs with few
 * tokens"): above GEMM_ROW1_NT tokens super-block i of every row, then i + 1; up to it the rows
 * one at a time over XXS_TB blocks. */
static void xxs_gemm(int64_t n, int nr, const uint8_t *w, size_t w_stride, int nt, const uint8_t *a, size_t a_stride,
                     float *s, size_t s_stride) {
    const int ng = (nt + 7) / 8; /* vectors of 8 tokens */
    const int64_t nb = n / QK_K;
    const uint8_t *q8 = a + offsetof(e0_block_q8_K, qs); /* token 0's activations of block 0 */
    __m256 sumf[MAXR][MAXT / 8];
    __m256i acc[MAXT]; /* per token: int32 lanes of its block sum (lanes beyond nt stay 0) */
    for (int t = 0; t < MAXT; t++) acc[t] = _mm256_setzero_si256();
    for (int r = 0; r < nr; r++)
        for (int g = 0; g < ng; g++) sumf[r][g] = _mm256_setzero_ps();
    if (nt <= GEMM_ROW1_NT) {
        float yd[XXS_TB][GEMM_ROW1_NT];
        __m256i ysum[XXS_TB][GEMM_ROW1_NT];
        for (int64_t i0 = 0; i0 < nb; i0 += XXS_TB) {
            const int64_t nbc = nb - i0 < XXS_TB ? nb - i0 : XXS_TB;
            for (int64_t i = 0; i < nbc; i++) xxs_terms(a, a_stride, nt, i0 + i, yd[i], ysum[i]);
            for (int r = 0; r < nr; r++)
                for (int64_t i = 0; i < nbc; i++) {
                    prefetch_lines(w + (size_t)(r + GEMM_AHEAD) * w_stride + (size_t)(i0 + i) * IQ2XXS_SIZE, IQ2XXS_SIZE);
                    xxs_row_block(w + (size_t)r * w_stride + (size_t)(i0 + i) * IQ2XXS_SIZE, nt, yd[i], ysum[i],
                                  q8 + (size_t)(i0 + i) * sizeof(e0_block_q8_K), a_stride, acc, sumf[r]);
                }
        }
    } else {
        float yd[MAXT];
        __m256i ysum[MAXT];
        for (int64_t i = 0; i < nb; i++) {
            xxs_terms(a, a_stride, nt, i, yd, ysum);
            for (int r = 0; r < nr; r++) {
                prefetch_next(w, w_stride, nr, r, i, nb);
                xxs_row_block(w + (size_t)r * w_stride + (size_t)i * IQ2XXS_SIZE, nt, yd, ysum, q8 + (size_t)i * sizeof(e0_block_q8_K),
                              a_stride, acc, sumf[r]);
            }
        }
    }
    for (int r = 0; r < nr; r++)
        for (int g = 0; g < ng; g++) {
            float f[8];
            _mm256_storeu_ps(f, sumf[r][g]);
            for (int k = 0; k < 8 && 8 * g + k < nt; k++) s[(size_t)r + (size_t)(8 * g + k) * s_stride] = 0.125f * f[k];
        }
}

void e0_gemm_iq2_xxs_avx2(int64_t n, int nr, const void *w, size_t w_stride, int nt, const void *a, size_t a_stride,
                          float *s, size_t s_stride) {
    /* more tokens than the type row's gemm_tokens (MAXT): in groups of MAXT */
    for (int t0 = 0; t0 < nt; t0 += MAXT)
        xxs_gemm(n, nr, w, w_stride, nt - t0 < MAXT ? nt - t0 : MAXT, (const uint8_t *)a + (size_t)t0 * a_stride, a_stride,
                 s + (size_t)t0 * s_stride, s_stride);
}

/* One row, 4 tokens: the vec_dot's steps with each super-block unpacked once for the 4 (the
 * gemm's per-token block sums would not pay for themselves on one row). */
void e0_vec_dot_4_iq2_xxs_avx2(int64_t n, float *s, size_t s_stride, const void *w, const void *a, size_t a_stride) {
    const uint8_t *x = w;
    float sumf[E0_DOT_TOKENS] = {0};
    __m256i scv[8];
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *b = x + (size_t)i * IQ2XXS_SIZE, *q = b + IQ2XXS_QS;
        e0_prefetch_bytes(b + E0_PREFETCH_BLOCKS * IQ2XXS_SIZE, IQ2XXS_SIZE);
        xxs_block u;
        xxs_unpack(q, &u);
        __m256i v[8];
        #pragma GCC unroll 8
        for (int ib = 0; ib < 8; ib++) {
            v[ib] = xxs_weights(&u, q + 8 * ib, ib);
            scv[ib] = xxs_scale(&u, ib);
        }
        IN_MEMORY(scv);
        const float xd = h2f(b);
        for (int t = 0; t < E0_DOT_TOKENS; t++) {
            const e0_block_q8_K *y = (const e0_block_q8_K *)((const uint8_t *)a + (size_t)t * a_stride) + i;
            __m256i s1 = _mm256_setzero_si256(), s2 = _mm256_setzero_si256();
            #pragma GCC unroll 4
            for (int ib = 0; ib < 8; ib += 2) {
                __m256i y1 = _mm256_loadu_si256((const __m256i *)(y->qs + 32 * ib));
                __m256i y2 = _mm256_loadu_si256((const __m256i *)(y->qs + 32 * ib + 32));
                IN_REGISTER(y1);
                IN_REGISTER(y2);
                const __m256i p1 = _mm256_maddubs_epi16(_mm256_abs_epi8(y1), _mm256_sign_epi8(v[ib], y1));
                const __m256i p2 = _mm256_maddubs_epi16(_mm256_abs_epi8(y2), _mm256_sign_epi8(v[ib + 1], y2));
                s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(p1, scv[ib]));
                s2 = _mm256_add_epi32(s2, _mm256_madd_epi16(p2, scv[ib + 1]));
            }
            const float d = xd * y->d;
            const float term = d * (float)hsum_i32(_mm256_add_epi32(s1, s2));
            sumf[t] += term; /* as the vec_dot: no fma */
        }
    }
    for (int t = 0; t < E0_DOT_TOKENS; t++) s[(size_t)t * s_stride] = 0.125f * sumf[t];
}
