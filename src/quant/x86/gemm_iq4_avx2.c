/* gemm_iq4_avx2.c — AVX2+FMA kernels of IQ4_XS (against Q8_K) and MXFP4 (against Q8_0): the
 * one-token vec_dot and the prefill GEMM (and IQ4_NL's GEMM, whose vec_dot is in
 * quant_iq4_avx2.c) (e0_gemm_fn, see kernel.h: up to E0_GEMM_ROWS weight
 * rows against up to E0_GEMM_TOKENS activation rows), on the plain block layout.
 *
 * IQ4_XS: vec_dot and gemm share the unpacking and the per-(row, token) block dot (xs_unpack,
 * xs_block_dot). MXFP4's vec_dot (mx_block) and GEMM (mx_group_gemm, register tiles of 2 rows x
 * 2 tokens) are written apart but do the same per (row, token): the exact integer lane sums of
 * each block, then one fma with the same scale product, blocks in order into one 8-lane
 * accumulator, summed by hsum_ps. So per (row, token) the float accumulation order is the same
 * whatever the batch, and gemm is bit-identical to vec_dot (tests/test_quant_iq4.c checks it with
 * memcmp, for MXFP4 at every E8M0 exponent too). Loop order per block (group), as in gemm_avx2.c: the weight codes are looked up
 * once per row (16-entry table in a vpshufb: code -> int8 value) and kept with their absolute
 * values; each token's activations stream past them. int8 x int8 products use the sign trick
 * (|v| times y with v's sign, vpmaddubsw), exact for activations in -127..127 (what the Q8
 * quantizers write); the integer sums are exact and the float work is one product of scales and
 * one fma per block. MXFP4's GEMM instead feeds its codes + 12 as the unsigned operand (no sign
 * step per product; see mx_tile) and its E8M0 scales come from a table (e8m0_half).
 * Instruction counts (callgrind, tools/qspeed_iq, docs/perf.md): MXFP4 vec_dot 34 -> 19 a
 * block, GEMM 11.0 -> 8.6 a (row, token, block). */
#include "quant/quant_iq4.h"
#include "quant/x86/gemm_simd.h"
#include "quant/x86/simd.h"

#define MAXT E0_GEMM_TOKENS
_Static_assert(MAXT % 8 == 0, "the tokens' scale products are formed 8 to a vector");
#define MAXR E0_GEMM_ROWS
#define AI static inline __attribute__((always_inline))

/* Signed products of the int8 values v (|v| given) with activations y, summed in pairs (int16). */
AI __m256i dot_pairs(__m256i v, __m256i vabs, __m256i y) { return _mm256_maddubs_epi16(vabs, _mm256_sign_epi8(y, v)); }

/* ---- IQ4_XS: per super-block, eight sub-blocks of 32 with scales ls - 32 ----
 *
 * Per (row, token, super-block) the integer sum has 8 int32 lanes: lane k holds
 * sum over sub-blocks ib of (ls_ib - 32) * (the 4 products of bytes 4k..4k+3 of sub-block ib), the
 * float work is acc += (x.d * y.d) * float(lane) and the 8 lanes are summed at the end (hsum_ps).
 * Every way below computes exactly these lanes and this float sequence, so the GEMM and vec_dot
 * agree bit for bit whatever the batch.
 *
 * The GEMM's token loop is the hot part: per sub-block one activation load, one sign (the codes'
 * sign a memory operand), one maddubs with |codes| held in a register, one madd with the scale
 * vector as a memory operand, one add: 5 instructions. Keeping the 8 |codes| vectors in registers
 * and the codes and scales in a small stack buffer is what makes this fit the 16 ymm registers
 * (holding all 24 made GCC spill and reload them inside the loop: 58 instructions per
 * (row, token, super-block) instead of ~44). The scales are formed 8 at a time in one vector.
 * Tried and not kept (GCC 12, qspeed_iq under perf/callgrind): negating by xor and subtract
 * instead of vpsignb for some sub-blocks (off the multiply ports: no faster), int16 weights
 * pre-scaled by ls - 32 against int16 activations (two madds per 32 values, no sign: GCC spills
 * the group sums, more instructions), two rows per token loop sharing each activation load
 * (half super-blocks: GCC copies the buffers, more instructions). The sub-block pairing of
 * gemm_avx2.c does not apply: a 4-product int16 sum of IQ4 values (|v| <= 127) can overflow. */

#define XS_BYTES sizeof(e0_block_iq4_xs)
#define XS_MAXT E0_GEMM_TOKENS_MAX /* the GEMM's tokens a call (IQ4_XS's gemm_tokens in quant.c) */

/* The 8 sub-block scales ls - 32 of block x, each as an int32 lane holding the value in both of its
 * 16-bit words (so a 32-bit broadcast of lane ib is the madd operand of sub-block ib). */
AI __m256i xs_scale_words(const uint8_t *x) {
    const __m256i lo = _mm256_srlv_epi32(_mm256_set1_epi32((int)e0_rd32(x + offsetof(e0_block_iq4_xs, scales_l))),
                                         _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28));
    const __m256i hi = _mm256_srlv_epi32(_mm256_set1_epi32((int)e0_rd16(x + offsetof(e0_block_iq4_xs, scales_h)) << 4),
                                         _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14));
    const __m256i ls = _mm256_or_si256(_mm256_and_si256(lo, _mm256_set1_epi32(0xF)), _mm256_and_si256(hi, _mm256_set1_epi32(0x30)));
    const __m256i sc = _mm256_sub_epi32(ls, _mm256_set1_epi32(32)); /* -32..31 */
    return _mm256_or_si256(_mm256_and_si256(sc, _mm256_set1_epi32(0xFFFF)), _mm256_slli_epi32(sc, 16));
}

/* Block x unpacked: v[ib] the int8 values of sub-block ib (elements 32ib .. 32ib+31), vabs[ib] their
 * absolute values, sc[ib] the scale ls - 32 in every 16-bit word. tbl: the 16 values (code -> int8)
 * in both lanes, tabs: their absolute values. */
AI void xs_unpack(const uint8_t *x, __m256i tbl, __m256i tabs, __m256i v[8], __m256i vabs[8], __m256i sc[8]) {
    const uint8_t *qs = x + offsetof(e0_block_iq4_xs, qs);
    int32_t words[8];
    _mm256_storeu_si256((__m256i *)words, xs_scale_words(x));
    IN_MEMORY(words); /* broadcast loads (load port) rather than lane extractions (shuffle port) */
    #pragma GCC unroll 8
    for (int ib = 0; ib < 8; ib++) {
        const __m256i codes = nibbles32(qs + 16 * ib);
        v[ib] = _mm256_shuffle_epi8(tbl, codes);
        vabs[ib] = _mm256_shuffle_epi8(tabs, codes); /* a lookup of |value|: off the multiply ports */
        sc[ib] = _mm256_set1_epi32(words[ib]); /* a broadcast load */
    }
}

/* The 8 int32 lanes of one (row, token) super-block: q8 = the token's 256 activations. */
AI __m256i xs_block_dot(const __m256i v[8], const __m256i vabs[8], const __m256i sc[8], const int8_t *q8) {
    __m256i s[2];
    #pragma GCC unroll 8
    for (int ib = 0; ib < 8; ib++) {
        const __m256i y = _mm256_loadu_si256((const __m256i *)(q8 + 32 * ib));
        const __m256i p = _mm256_madd_epi16(dot_pairs(v[ib], vabs[ib], y), sc[ib]);
        s[ib & 1] = ib < 2 ? p : _mm256_add_epi32(s[ib & 1], p); /* two chains; exact */
    }
    return _mm256_add_epi32(s[0], s[1]);
}

void e0_vec_dot_iq4_xs_avx2(int64_t n, float *s, const void *vw, const void *va) {
    const uint8_t *w = vw;
    const e0_block_q8_K *y = va;
    const __m256i tbl = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)e0_kvalues_iq4nl)), tabs = _mm256_abs_epi8(tbl);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *x = w + (size_t)i * XS_BYTES;
        e0_prefetch_bytes(x + E0_PREFETCH_BLOCKS * XS_BYTES, (unsigned)XS_BYTES);
        __m256i v[8], vabs[8], sc[8];
        xs_unpack(x, tbl, tabs, v, vabs, sc);
        const __m256 dxy = _mm256_set1_ps(h2f(x + offsetof(e0_block_iq4_xs, d)) * y[i].d);
        acc = _mm256_fmadd_ps(dxy, _mm256_cvtepi32_ps(xs_block_dot(v, vabs, sc, y[i].qs)), acc);
    }
    *s = hsum_ps(acc);
}

/* Weight rows are read in a strided pattern (block i of nr rows, then block i + 1 of them): while
 * row r's block i is used, its block i + 1 is asked for; in the last step, block 0 of row nr + r
 * (usually the next call's). The 136 bytes span 3 or 4 cache lines: the lines of bytes 0, 64, 128
 * and 135. Prefetches never fault. */
AI void xs_prefetch_next(const uint8_t *w, size_t w_stride, int nr, int r, int64_t i, int64_t nb) {
    const uint8_t *p = i + 1 < nb ? w + (size_t)r * w_stride + (size_t)(i + 1) * XS_BYTES : w + (size_t)(nr + r) * w_stride;
    __builtin_prefetch(p, 0, 3);
    __builtin_prefetch(p + 64, 0, 3);
    __builtin_prefetch(p + 128, 0, 3);
    __builtin_prefetch(p + XS_BYTES - 1, 0, 3);
}

/* Block x of one row against nt tokens (yd: their scales y.d for this block, zero past nt up to a
 * multiple of 8; q8 of token t at q8 + t * a_stride): acc[t] += (x.d * y.d) * the exact int32
 * lane sums of vec_dot. */
AI void xs_row_block(const uint8_t *x, int nt, const float *yd, const uint8_t *q8, size_t a_stride, __m256i tbl, __m256i tabs,
                     __m256 *acc) {
    __m256i v[8], sc[8], vabs[8];
    float dd[XS_MAXT];
    xs_unpack(x, tbl, tabs, v, vabs, sc);
    IN_MEMORY(v); /* memory operands of the token loop; vabs stays in registers */
    IN_MEMORY(sc);
    const __m256 dx = _mm256_set1_ps(h2f(x + offsetof(e0_block_iq4_xs, d)));
    for (int t8 = 0; t8 < nt; t8 += 8) /* lanes past nt multiply yd's zeros */
        _mm256_storeu_ps(dd + t8, _mm256_mul_ps(dx, _mm256_loadu_ps(yd + t8)));
    #pragma GCC unroll 4
    for (int t = 0; t < nt; t++, q8 += a_stride) {
        const __m256i sum = xs_block_dot(v, vabs, sc, (const int8_t *)q8);
        acc[t] = _mm256_fmadd_ps(_mm256_broadcast_ss(&dd[t]), _mm256_cvtepi32_ps(sum), acc[t]);
    }
}

#define XS_TB 16 /* blocks of token scales made at a time when the rows go one at a time */

/* Loop order (x86/simd.h, "GEMMs with few tokens"): above GEMM_ROW1_NT tokens super-block i, row
 * r (unpacked once), token t (streams past the row's registers); up to it the rows one at a time
 * over XS_TB blocks. Up to XS_MAXT = 32 tokens a call (IQ4_XS's gemm_tokens), so each row's
 * super-block is unpacked once for twice the tokens of E0_GEMM_TOKENS: tools/qspeed_gemm (AVX2,
 * one thread) 22.6 row-token dots/us at 16 tokens, 23.8 at 32 (2 KiB more stack per token: acc
 * is 32 rows x 32 tokens). The products x.d * y.d of all tokens come from one vector multiply per
 * 8 tokens and are read back with broadcast loads (the same float products as vec_dot's scalar
 * multiply). */
void e0_gemm_iq4_xs_avx2(int64_t n, int nr, const void *vw, size_t w_stride, int nt, const void *va, size_t a_stride, float *s,
                         size_t s_stride) {
    const uint8_t *w = vw, *a = va;
    const int64_t nb = n / QK_K;
    const __m256i tbl = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)e0_kvalues_iq4nl)), tabs = _mm256_abs_epi8(tbl);
    const uint8_t *q8 = a + offsetof(e0_block_q8_K, qs); /* token 0's activations of block 0 */
    __m256 acc[MAXR][XS_MAXT];
    for (int r = 0; r < nr; r++) zero_acc(acc[r], nt);
    if (nt <= GEMM_ROW1_NT) {
        float yd[XS_TB][GEMM_ROW1_NT];
        for (int64_t i0 = 0; i0 < nb; i0 += XS_TB) {
            const int64_t nbc = nb - i0 < XS_TB ? nb - i0 : XS_TB;
            for (int64_t i = 0; i < nbc; i++) q8_K_token_scales(a, a_stride, nt, i0 + i, yd[i]);
            for (int r = 0; r < nr; r++)
                for (int64_t i = 0; i < nbc; i++) {
                    prefetch_lines(w + (size_t)(r + GEMM_AHEAD) * w_stride + (size_t)(i0 + i) * XS_BYTES, XS_BYTES);
                    xs_row_block(w + (size_t)r * w_stride + (size_t)(i0 + i) * XS_BYTES, nt, yd[i],
                                 q8 + (size_t)(i0 + i) * sizeof(e0_block_q8_K), a_stride, tbl, tabs, acc[r]);
                }
        }
    } else {
        float yd[XS_MAXT];
        for (int64_t i = 0; i < nb; i++) {
            q8_K_token_scales(a, a_stride, nt, i, yd);
            for (int r = 0; r < nr; r++) {
                xs_prefetch_next(w, w_stride, nr, r, i, nb);
                xs_row_block(w + (size_t)r * w_stride + (size_t)i * XS_BYTES, nt, yd, q8 + (size_t)i * sizeof(e0_block_q8_K), a_stride,
                             tbl, tabs, acc[r]);
            }
        }
    }
    store_rows(&acc[0][0], XS_MAXT, nr, nt, s, s_stride); /* 8 rows to a store (gemm_simd.h) */
}

/* ---- MXFP4 (E8M0 scale) and IQ4_NL (fp16 scale): 32-element blocks of 4-bit codes against
 * Q8_0, in groups of up to 4 blocks. nl = 1: IQ4_NL (block d, qs[16]; the gemm's per-block
 * steps are those of e0_vec_dot_iq4_nl_avx2 in quant_iq4_avx2.c), 0: MXFP4 (e, qs[16]). ---- */

#define MXG 4

/* E8M0 exponent e -> 2^(e - 128) (e0_e8m0_to_fp32_half) as a table: one load instead of the
 * compare, shifts and select of the function (about 8 instructions a block). */
#define E8H(e) ((e) < 2 ? 0x00200000u << ((e) & 1) : ((uint32_t)(e) - 1u) << 23) /* (e & 1): e < 2 there */
#define E8H4(e) E8H(e), E8H((e) + 1), E8H((e) + 2), E8H((e) + 3)
#define E8H16(e) E8H4(e), E8H4((e) + 4), E8H4((e) + 8), E8H4((e) + 12)
#define E8H64(e) E8H16(e), E8H16((e) + 16), E8H16((e) + 32), E8H16((e) + 48)
static const union {
    uint32_t u[256];
    float f[256];
} e8m0_half = {.u = {E8H64(0), E8H64(64), E8H64(128), E8H64(192)}};

/* Blocks i..i+gb-1 of nr rows for one token (the GEMM called with nt = 1); gb is a constant at
 * each call site. Per block: the exact integer lane sums, one fma with y.d * x.d. */
AI void fp4_group(int64_t i, const int gb, int nr, const uint8_t *w, size_t w_stride, const uint8_t *a, __m256 acc[MAXR][MAXT],
                  const int nl) {
    const size_t bsz = nl ? IQ4_NL_SIZE : MXFP4_SIZE, qso = nl ? IQ4_NL_QS : MXFP4_QS;
    const __m256i tbl = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(nl ? e0_kvalues_iq4nl : e0_kvalues_fp4)));
    const uint8_t *y = a + (size_t)i * Q8_0_SIZE;
    float yd[MXG]; /* the token's scales */
    for (int b = 0; b < gb; b++) yd[b] = h2f(y + (size_t)b * Q8_0_SIZE);
    for (int r = 0; r < nr; r++) {
        const uint8_t *x = w + (size_t)r * w_stride + (size_t)i * bsz;
        e0_prefetch_bytes(x + E0_PREFETCH_BLOCKS * bsz, (unsigned)(gb * bsz));
        __m256 ac = acc[r][0];
        #pragma GCC unroll 4
        for (int b = 0; b < gb; b++) {
            const uint8_t *blk = x + (size_t)b * bsz;
            const __m256i v = _mm256_shuffle_epi8(tbl, nibbles32(blk + qso));
            const __m256i yq = _mm256_loadu_si256((const __m256i *)(y + (size_t)b * Q8_0_SIZE + Q8_0_QS));
            const __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(dot_pairs(v, _mm256_sign_epi8(v, v), yq), _mm256_set1_epi16(1)));
            const float dx = nl ? h2f(blk) : e8m0_half.f[blk[0]];
            ac = _mm256_fmadd_ps(_mm256_set1_ps(yd[b] * dx), dot, ac);
        }
        acc[r][0] = ac;
    }
}

/* ---- the GEMM's group (2 or more tokens; IQ4_NL, sign trick) in tiles of R = 1 or 2 rows ----
 * Per (row, token) the same operations in the same order as fp4_group: for each block of the
 * group, the exact integer lane sums, then one fma with the broadcast product x.d * y.d into the
 * (row, token) accumulator. The tile shares each activation load between its R rows and loads /
 * stores the accumulators once a group. */

/* Rows r0..r0+R-1 of group i (blocks i..i+gb-1) for all nt tokens. The codes v are kept in
 * memory (vpsignb reads them from there) so that the R * gb vectors |v| and the accumulators
 * fit in registers. */
AI void fp4_rows(int64_t i, const int gb, const int R, const uint8_t *x, size_t w_stride, int nt, const uint8_t *a,
                 size_t a_stride, const float yd[MXG][MAXT], __m256 acc[MAXR][MAXT], __m256i tbl, const int nl) {
    const size_t bsz = nl ? IQ4_NL_SIZE : MXFP4_SIZE, qso = nl ? IQ4_NL_QS : MXFP4_QS;
    __m256i v[2][MXG], vabs[2][MXG];
    float dd[2][MXG][MAXT]; /* the scale products x.d * y.d of every token */
    #pragma GCC unroll 2
    for (int r = 0; r < R; r++) {
        const uint8_t *xr = x + (size_t)r * w_stride;
        e0_prefetch_bytes(xr + E0_PREFETCH_BLOCKS * bsz, (unsigned)(gb * bsz));
        #pragma GCC unroll 4
        for (int b = 0; b < gb; b++) {
            const uint8_t *blk = xr + (size_t)b * bsz;
            v[r][b] = _mm256_shuffle_epi8(tbl, nibbles32(blk + qso));
            vabs[r][b] = _mm256_sign_epi8(v[r][b], v[r][b]);
            const __m256 dx = _mm256_set1_ps(nl ? h2f(blk) : e8m0_half.f[blk[0]]);
            #pragma GCC unroll 2
            for (int t8 = 0; t8 < MAXT; t8 += 8) /* 8 tokens a vector; yd is 0 past nt */
                _mm256_storeu_ps(dd[r][b] + t8, _mm256_mul_ps(_mm256_loadu_ps(yd[b] + t8), dx));
        }
    }
    IN_MEMORY(v);
    const __m256i ones = _mm256_set1_epi16(1);
    const uint8_t *y = a + (size_t)i * Q8_0_SIZE + Q8_0_QS;
    for (int t = 0; t < nt; t++) {
        __m256 ac[2];
        #pragma GCC unroll 2
        for (int r = 0; r < R; r++) ac[r] = acc[r][t];
        const uint8_t *yt = y + (size_t)t * a_stride;
        #pragma GCC unroll 4
        for (int b = 0; b < gb; b++) {
            const __m256i yq = load32(yt + (size_t)b * Q8_0_SIZE);
            #pragma GCC unroll 2
            for (int r = 0; r < R; r++) {
                const __m256i p = _mm256_maddubs_epi16(vabs[r][b], _mm256_sign_epi8(yq, v[r][b]));
                const __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(p, ones));
                ac[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(&dd[r][b][t]), dot, ac[r]);
            }
        }
        #pragma GCC unroll 2
        for (int r = 0; r < R; r++) acc[r][t] = ac[r];
    }
}

/* The GEMM's group i (IQ4_NL, 2 or more tokens): rows two at a time. */
AI void fp4_group_gemm(int64_t i, const int gb, int nr, const uint8_t *w, size_t w_stride, int nt, const uint8_t *a, size_t a_stride,
                       __m256 acc[MAXR][MAXT], const int nl) {
    const size_t bsz = nl ? IQ4_NL_SIZE : MXFP4_SIZE;
    const __m256i tbl = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(nl ? e0_kvalues_iq4nl : e0_kvalues_fp4)));
    float yd[MXG][MAXT]; /* the tokens' scales (lanes past nt: 0) */
    for (int b = 0; b < gb; b++)
        for (int t = 0; t < MAXT; t++) yd[b][t] = t < nt ? h2f(a + (size_t)t * a_stride + (size_t)(i + b) * Q8_0_SIZE) : 0.0f;
    const uint8_t *x = w + (size_t)i * bsz;
    int r = 0;
    for (; r + 2 <= nr; r += 2) fp4_rows(i, gb, 2, x + (size_t)r * w_stride, w_stride, nt, a, a_stride, yd, acc + r, tbl, nl);
    if (r < nr) fp4_rows(i, gb, 1, x + (size_t)r * w_stride, w_stride, nt, a, a_stride, yd, acc + r, tbl, nl);
}

/* ---- MXFP4's GEMM group: unsigned codes instead of the sign trick ----
 * The codes plus 12 (0..24) are the unsigned operand of vpmaddubsw and the activations the signed
 * one, so per (row, token, block) there is no vpsignb: sum4((v + 12) * y) - 12 * sum4(y) is the
 * same exact lane sum sum4(v * y) (no int16 overflow: 2 * 24 * 127 < 2^15), and the correction
 * 12 * sum4(y) is formed once per (token, block) for all rows. The float steps are those of
 * fp4_group. Exact for activations in -127..127; a token whose group holds a -128 (never written
 * by the Q8 quantizers, but any bytes may come in) takes the sign trick of vec_dot instead
 * (mx_tile_sign), whose lane sums for -128 differ from the exact ones, so gemm and vec_dot agree
 * on every input. (IQ4_NL's codes reach -127: its pairs could overflow, so it keeps the sign
 * trick throughout.) */

#define FP4_OFS 12
static const uint8_t kvalues_fp4_abs[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, 1, 2, 3, 4, 6, 8, 12}; /* |e0_kvalues_fp4| */
static const uint8_t kvalues_fp4_ofs[16] = {12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0}; /* e0_kvalues_fp4 + 12 */

/* Tokens t..t+T-1 of R rows (codes + 12 vu, scale products dd, accumulators acc[0..R-1]) for the
 * gb blocks of a group; y: the first token's first block at its qs; ky: the corrections. */
AI void mx_tile(const int R, const int T, const int gb, const __m256i vu[2][MXG], const float dd[2][MXG][MAXT], int t,
                const uint8_t *y, size_t a_stride, const __m256i ky[MAXT][MXG], __m256 acc[MAXR][MAXT]) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 ac[2][2];
    #pragma GCC unroll 2
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 2
        for (int k = 0; k < T; k++) ac[r][k] = acc[r][t + k];
    #pragma GCC unroll 4
    for (int b = 0; b < gb; b++)
        #pragma GCC unroll 2
        for (int k = 0; k < T; k++) {
            const __m256i yq = load32(y + (size_t)(t + k) * a_stride + (size_t)b * Q8_0_SIZE);
            #pragma GCC unroll 2
            for (int r = 0; r < R; r++) {
                const __m256i sum = _mm256_sub_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(vu[r][b], yq), ones), ky[t + k][b]);
                ac[r][k] = _mm256_fmadd_ps(_mm256_broadcast_ss(&dd[r][b][t + k]), _mm256_cvtepi32_ps(sum), ac[r][k]);
            }
        }
    #pragma GCC unroll 2
    for (int r = 0; r < R; r++)
        #pragma GCC unroll 2
        for (int k = 0; k < T; k++) acc[r][t + k] = ac[r][k];
}

/* Token t of R rows by vec_dot's sign trick (mx_block): for a token with a -128 in the group. */
AI void mx_tile_sign(const int R, const int gb, const __m256i vu[2][MXG], const float dd[2][MXG][MAXT], int t, const uint8_t *y,
                     size_t a_stride, __m256 acc[MAXR][MAXT]) {
    const __m256i ones = _mm256_set1_epi16(1), ofs = _mm256_set1_epi8(FP4_OFS);
    for (int r = 0; r < R; r++) {
        __m256 ac = acc[r][t];
        for (int b = 0; b < gb; b++) {
            const __m256i yq = load32(y + (size_t)t * a_stride + (size_t)b * Q8_0_SIZE);
            const __m256i v = _mm256_sub_epi8(vu[r][b], ofs);
            const __m256i dot = _mm256_madd_epi16(dot_pairs(v, _mm256_abs_epi8(v), yq), ones);
            ac = _mm256_fmadd_ps(_mm256_broadcast_ss(&dd[r][b][t]), _mm256_cvtepi32_ps(dot), ac);
        }
        acc[r][t] = ac;
    }
}

/* Rows x..x+(R-1)*w_stride (at block i) of a group for all nt tokens, T tokens a tile. */
AI void mx_rows(const int gb, const int R, const int T, const uint8_t *x, size_t w_stride, int nt, const uint8_t *y, size_t a_stride,
                const float yd[MXG][MAXT], const __m256i ky[MAXT][MXG], const uint8_t m128[MAXT + 1], __m256 acc[MAXR][MAXT]) {
    const __m256i tbl = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)kvalues_fp4_ofs));
    __m256i vu[2][MXG];
    float dd[2][MXG][MAXT]; /* the scale products x.d * y.d of every token */
    #pragma GCC unroll 2
    for (int r = 0; r < R; r++) {
        const uint8_t *xr = x + (size_t)r * w_stride;
        e0_prefetch_bytes(xr + E0_PREFETCH_BLOCKS * MXFP4_SIZE, (unsigned)(gb * MXFP4_SIZE));
        #pragma GCC unroll 4
        for (int b = 0; b < gb; b++) {
            const uint8_t *blk = xr + (size_t)b * MXFP4_SIZE;
            vu[r][b] = _mm256_shuffle_epi8(tbl, nibbles32(blk + MXFP4_QS));
            const __m256 dx = _mm256_set1_ps(e8m0_half.f[blk[0]]);
            #pragma GCC unroll 2
            for (int t8 = 0; t8 < MAXT; t8 += 8) /* 8 tokens a vector; yd is 0 past nt */
                _mm256_storeu_ps(dd[r][b] + t8, _mm256_mul_ps(_mm256_loadu_ps(yd[b] + t8), dx));
        }
    }
    int t = 0;
    if (__builtin_expect(!m128[MAXT], 1)) { /* no token has a -128 here (m128[MAXT]: any) */
        for (; t + T <= nt; t += T) mx_tile(R, T, gb, vu, dd, t, y, a_stride, ky, acc);
        for (; t < nt; t++) mx_tile(R, 1, gb, vu, dd, t, y, a_stride, ky, acc);
        return;
    }
    for (; t + T <= nt; t += T) {
        int odd = 0; /* a -128 among these tokens' activations */
        for (int k = 0; k < T; k++) odd |= m128[t + k];
        if (__builtin_expect(odd, 0))
            for (int k = 0; k < T; k++) mx_tile_sign(R, gb, vu, dd, t + k, y, a_stride, acc);
        else
            mx_tile(R, T, gb, vu, dd, t, y, a_stride, ky, acc);
    }
    for (; t < nt; t++) {
        if (__builtin_expect(m128[t], 0)) mx_tile_sign(R, gb, vu, dd, t, y, a_stride, acc);
        else mx_tile(R, 1, gb, vu, dd, t, y, a_stride, ky, acc);
    }
}

/* The GEMM's group i (blocks i..i+gb-1) of MXFP4: the tokens' scales and corrections once, then
 * the rows two at a time. */
AI void mx_group_gemm(int64_t i, const int gb, int nr, const uint8_t *w, size_t w_stride, int nt, const uint8_t *a, size_t a_stride,
                      __m256 acc[MAXR][MAXT]) {
    float yd[MXG][MAXT]; /* the tokens' scales (lanes past nt: 0) */
    __m256i ky[MAXT][MXG];
    uint8_t m128[MAXT + 1] = {0}; /* the token has a -128 in this group; [MAXT]: any token has */
    const __m256i ofs = _mm256_set1_epi8(FP4_OFS), ones = _mm256_set1_epi16(1), lowest = _mm256_set1_epi8(-128);
    const uint8_t *y = a + (size_t)i * Q8_0_SIZE;
    for (int b = 0; b < gb; b++)
        for (int t = 0; t < MAXT; t++) yd[b][t] = t < nt ? h2f(y + (size_t)t * a_stride + (size_t)b * Q8_0_SIZE) : 0.0f;
    for (int t = 0; t < nt; t++) {
        __m256i low = _mm256_setzero_si256();
        #pragma GCC unroll 4
        for (int b = 0; b < gb; b++) {
            const __m256i yq = load32(y + (size_t)t * a_stride + (size_t)b * Q8_0_SIZE + Q8_0_QS);
            ky[t][b] = _mm256_madd_epi16(_mm256_maddubs_epi16(ofs, yq), ones);
            low = _mm256_or_si256(low, _mm256_cmpeq_epi8(yq, lowest));
        }
        m128[t] = !_mm256_testz_si256(low, low);
        m128[MAXT] |= m128[t];
    }
    const uint8_t *x = w + (size_t)i * MXFP4_SIZE;
    int r = 0;
    for (; r + 2 <= nr; r += 2) mx_rows(gb, 2, 2, x + (size_t)r * w_stride, w_stride, nt, y + Q8_0_QS, a_stride, yd, ky, m128, acc + r);
    if (r < nr) mx_rows(gb, 1, 2, x + (size_t)r * w_stride, w_stride, nt, y + Q8_0_QS, a_stride, yd, ky, m128, acc + r);
}

AI void fp4_kernel(int64_t n, int nr, const uint8_t *w, size_t w_stride, int nt, const uint8_t *a, size_t a_stride, float *s,
                   size_t s_stride, const int nl) {
    const int64_t nb = n / 32;
    __m256 acc[MAXR][MAXT];
    for (int r = 0; r < nr; r++)
        for (int t = 0; t < nt; t++) acc[r][t] = _mm256_setzero_ps();
    int64_t i = 0;
    if (nt == 1) { /* one product per block, no token vectors */
        for (; i + MXG <= nb; i += MXG) fp4_group(i, MXG, nr, w, w_stride, a, acc, nl);
        for (; i < nb; i++) fp4_group(i, 1, nr, w, w_stride, a, acc, nl);
    } else {
        if (nl) {
            for (; i + MXG <= nb; i += MXG) fp4_group_gemm(i, MXG, nr, w, w_stride, nt, a, a_stride, acc, 1);
            for (; i < nb; i++) fp4_group_gemm(i, 1, nr, w, w_stride, nt, a, a_stride, acc, 1);
        } else {
            for (; i + MXG <= nb; i += MXG) mx_group_gemm(i, MXG, nr, w, w_stride, nt, a, a_stride, acc);
            for (; i < nb; i++) mx_group_gemm(i, 1, nr, w, w_stride, nt, a, a_stride, acc);
        }
    }
    store_rows(&acc[0][0], MAXT, nr, nt, s, s_stride); /* 8 rows to a store (gemm_simd.h) */
}

_Static_assert(E0_QK_MXFP4 == 32 && E0_QK_IQ4_NL == 32, "fp4_kernel's 32-element blocks");

/* One MXFP4 block x one Q8_0 block into the 8 lanes of acc: the steps of fp4_group for one
 * (row, token, block) — the same integer lane sums, the same scale product y.d * x.d (here as
 * a single multiply, fp16 converted from a load), the same fma — in fewer instructions. */
AI __m256 mx_block(const uint8_t *x, const uint8_t *y, __m256 acc, __m256i tbl, __m256i tbl_abs, __m256i ones) {
    const __m256i idx = nibbles32(x + MXFP4_QS);
    const __m256i v = _mm256_shuffle_epi8(tbl, idx), vabs = _mm256_shuffle_epi8(tbl_abs, idx); /* |v| by a lookup too */
    const __m256i yq = load32(y + Q8_0_QS);
    const __m256i dot = _mm256_madd_epi16(dot_pairs(v, vabs, yq), ones);
    const __m256 d = _mm256_broadcastss_ps(_mm_mul_ss(h2f_blk(y), _mm_load_ss(&e8m0_half.f[x[0]])));
    return _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot), acc);
}

/* Decode: one row x one token, blocks in order into one accumulator (as fp4_kernel's 1 x 1
 * instance, bit for bit), 4 blocks an iteration with the prefetch of fp4_group. */
void e0_vec_dot_mxfp4_avx2(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w, *y = a;
    const int64_t nb = n / 32;
    const __m256i tbl = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)e0_kvalues_fp4)), ones = _mm256_set1_epi16(1);
    const __m256i tbl_abs = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)kvalues_fp4_abs));
    __m256 acc = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + MXG <= nb; i += MXG, x += MXG * MXFP4_SIZE, y += MXG * Q8_0_SIZE) {
        e0_prefetch_bytes(x + E0_PREFETCH_BLOCKS * MXFP4_SIZE, (unsigned)(MXG * MXFP4_SIZE));
        #pragma GCC unroll 4
        for (int b = 0; b < MXG; b++) acc = mx_block(x + b * MXFP4_SIZE, y + b * Q8_0_SIZE, acc, tbl, tbl_abs, ones);
    }
    for (; i < nb; i++, x += MXFP4_SIZE, y += Q8_0_SIZE) {
        e0_prefetch_bytes(x + E0_PREFETCH_BLOCKS * MXFP4_SIZE, (unsigned)MXFP4_SIZE);
        acc = mx_block(x, y, acc, tbl, tbl_abs, ones);
    }
    *s = hsum_ps(acc);
}

void e0_gemm_mxfp4_avx2(int64_t n, int nr, const void *w, size_t w_stride, int nt, const void *a, size_t a_stride, float *s,
                        size_t s_stride) {
    fp4_kernel(n, nr, w, w_stride, nt, a, a_stride, s, s_stride, 0);
}

void e0_gemm_iq4_nl_avx2(int64_t n, int nr, const void *w, size_t w_stride, int nt, const void *a, size_t a_stride, float *s,
                         size_t s_stride) {
    fp4_kernel(n, nr, w, w_stride, nt, a, a_stride, s, s_stride, 1);
}
