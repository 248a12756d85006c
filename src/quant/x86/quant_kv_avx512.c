/* quant_kv_avx512.c — AVX-512 VNNI kernels of q4_KV and q6_KV (q4_K / q6_K repacked at load,
 * layout and rationale in quant_kv.h): the repacking, the Q8_KV activation quantizer, the
 * one-token dots and the prefill GEMMs.
 *
 * Per block and (row, token): four vpdpbusd of the 64-byte code vectors with the permuted
 * activations give the 16 exact run sums (lane j: natural values 16j .. 16j + 15); then, in
 * float, acc += sums * (scale * x.d * y.d) and, for q4_K, acc += (bsum * y.d) * (min * -x.dmin)
 * (the mins through Q8_K's bsums of the same runs); for q6_K the offset 32 * bsum comes off the
 * integer sums first. The row terms (codes, scale and min vectors) are made once per block for
 * all tokens, the token terms once per call for all rows, and the GEMM does per (row, token)
 * exactly the dot's operations, so dot, GEMM and quant_kv.c's reference give the same bits
 * (tests/test_quant_kv.c, tests/test_gemm.c). */
#include <stdbool.h>

#include "quant/quant_kv.h"
#include "quant/x86/gemm_simd.h"

#define MAXT E0_GEMM_TOKENS_MAX
#define RG 4     /* GEMM rows whose codes stay in registers (16 of the 32 zmm) */
#define RG1_NT 8 /* up to this many tokens the rows go one at a time (below) */
#define AHEAD 4  /* rows ahead that a GEMM's weight blocks are prefetched (below) */

/* ---- the layout ---- */

/* n[k] = natural dwords 16k .. 16k + 15 -> v[vec] lane j = natural dword 4j + vec: each n[k]'s
 * 4 x 4 dword matrix transposed (chunk c of t[k] = dwords c of runs 4k .. 4k + 3), then the 4 x 4
 * matrix of 128-bit chunks. */
AI void kv_transpose(const __m512i n[4], __m512i v[4]) {
    const __m512i idx = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    __m512i t[4];
    for (int k = 0; k < 4; k++) t[k] = _mm512_permutexvar_epi32(idx, n[k]);
    const __m512i p0 = _mm512_shuffle_i32x4(t[0], t[1], 0x44), p1 = _mm512_shuffle_i32x4(t[0], t[1], 0xEE);
    const __m512i p2 = _mm512_shuffle_i32x4(t[2], t[3], 0x44), p3 = _mm512_shuffle_i32x4(t[2], t[3], 0xEE);
    v[0] = _mm512_shuffle_i32x4(p0, p2, 0x88);
    v[1] = _mm512_shuffle_i32x4(p0, p2, 0xDD);
    v[2] = _mm512_shuffle_i32x4(p1, p3, 0x88);
    v[3] = _mm512_shuffle_i32x4(p1, p3, 0xDD);
}

AI __m512i join256(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }

/* e0_q4_K_to_KV's bytes: natural codes (sub-blocks 2k, 2k + 1 = low, high nibbles of 32 bytes),
 * transposed, packed two vectors a byte. */
void e0_q4_K_to_KV_avx512(void *blocks, int64_t n_blocks) {
    e0_block_q4_K *b = blocks;
    const __m256i m4 = _mm256_set1_epi8(0xF);
    for (int64_t i = 0; i < n_blocks; i++) {
        __m512i n[4], v[4];
        for (int k = 0; k < 4; k++) {
            const __m256i bits = _mm256_loadu_si256((const __m256i *)(b[i].qs + 32 * k));
            n[k] = join256(_mm256_and_si256(bits, m4), _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4));
        }
        kv_transpose(n, v);
        for (int k = 0; k < 2; k++)
            _mm512_storeu_si512(b[i].qs + 64 * k, _mm512_or_si512(v[2 * k], _mm512_slli_epi16(v[2 * k + 1], 4)));
    }
}

/* e0_q6_K_to_KV's bytes: natural codes (q6_codes), transposed, packed into ql / qh. */
void e0_q6_K_to_KV_avx512(void *blocks, int64_t n_blocks) {
    e0_block_q6_K *b = blocks;
    const __m512i m4 = _mm512_set1_epi8(0xF), m3 = _mm512_set1_epi8(3);
    for (int64_t i = 0; i < n_blocks; i++) {
        __m512i n[4], v[4];
        for (int c = 0; c < 2; c++) {
            __m256i u[4];
            q6_codes(b[i].ql + 64 * c, b[i].qh + 32 * c, u);
            n[2 * c] = join256(u[0], u[1]);
            n[2 * c + 1] = join256(u[2], u[3]);
        }
        kv_transpose(n, v);
        for (int k = 0; k < 2; k++)
            _mm512_storeu_si512(b[i].ql + 64 * k, _mm512_or_si512(_mm512_and_si512(v[2 * k], m4),
                                                                  _mm512_slli_epi16(_mm512_and_si512(v[2 * k + 1], m4), 4)));
        __m512i qh = _mm512_setzero_si512();
        for (int g = 0; g < 4; g++)
            qh = _mm512_or_si512(qh, _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(v[g], 4), m3), 2 * g));
        _mm512_storeu_si512(b[i].qh, qh);
    }
}

/* Q8_K's AVX2 quantizer (the reference's bytes), then the transpose. */
void e0_q8_KV_from_float_avx512(const float *x, void *dst, int64_t n) {
    e0_quantize_q8_K_avx2(x, dst, n);
    e0_block_q8_K *y = dst;
    for (int64_t i = 0; i < n / QK_K; i++) {
        __m512i q[4], v[4];
        for (int k = 0; k < 4; k++) q[k] = _mm512_loadu_si512(y[i].qs + 64 * k);
        kv_transpose(q, v);
        for (int k = 0; k < 4; k++) _mm512_storeu_si512(y[i].qs + 64 * k, v[k]);
    }
}

/* ---- the terms of a block ---- */

/* Token terms: y.d broadcast and bsum * y.d (lane j: run j's sum; q4_K's min term). */
AI void kv_token(const e0_block_q8_K *y, __m512 *yd, __m512 *bsum_yd) {
    *yd = _mm512_set1_ps(y->d);
    *bsum_yd = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(_mm256_loadu_si256((const __m256i *)y->bsums))), *yd);
}

/* q6_K's offset of a token: 32 * bsum (codes are q + 32). */
AI __m512i kv_offset(const e0_block_q8_K *y) {
    return _mm512_slli_epi32(_mm512_cvtepi16_epi32(_mm256_loadu_si256((const __m256i *)y->bsums)), 5);
}

/* The 16 run sums of one (row, token): four vpdpbusd. */
AI __m512i kv_sums(const __m512i u[4], const int8_t *q8) {
    __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u[0], _mm512_loadu_si512(q8));
    s = _mm512_dpbusd_epi32(s, u[1], _mm512_loadu_si512(q8 + 64));
    s = _mm512_dpbusd_epi32(s, u[2], _mm512_loadu_si512(q8 + 128));
    return _mm512_dpbusd_epi32(s, u[3], _mm512_loadu_si512(q8 + 192));
}

/* q4_KV row terms: codes, scale * x.d and min * -x.dmin per run lane (run j: sub-block j/2). */
AI void q4kv_row(const e0_block_q4_K *x, __m512i u[4], __m512 *fsc, __m512 *fmin) {
    const __m512i m4 = _mm512_set1_epi8(0xF);
    const __m512i b0 = _mm512_loadu_si512(x->qs), b1 = _mm512_loadu_si512(x->qs + 64);
    u[0] = _mm512_and_si512(b0, m4);
    u[1] = _mm512_and_si512(_mm512_srli_epi16(b0, 4), m4);
    u[2] = _mm512_and_si512(b1, m4);
    u[3] = _mm512_and_si512(_mm512_srli_epi16(b1, 4), m4);
    const __m128i sm = k_unpack_scales_mins_simd(x->scales); /* bytes 0..7 scales, 8..15 mins */
    const __m128i sc = _mm_shuffle_epi8(sm, _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7));
    const __m128i mn = _mm_shuffle_epi8(sm, _mm_setr_epi8(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15));
    *fsc = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(sc)), _mm512_set1_ps(fp16(x->d)));
    *fmin = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(mn)), _mm512_set1_ps(-fp16(x->dmin)));
}

/* q6_KV row terms: codes (nibbles | high bits << 4) and scale * x.d per run lane. */
AI void q6kv_row(const e0_block_q6_K *x, __m512i u[4], __m512 *fsc) {
    const __m512i m4 = _mm512_set1_epi8(0xF), m30 = _mm512_set1_epi8(0x30);
    const __m512i l0 = _mm512_loadu_si512(x->ql), l1 = _mm512_loadu_si512(x->ql + 64), h = _mm512_loadu_si512(x->qh);
    u[0] = _mm512_or_si512(_mm512_and_si512(l0, m4), _mm512_and_si512(_mm512_slli_epi16(h, 4), m30));
    u[1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l0, 4), m4), _mm512_and_si512(_mm512_slli_epi16(h, 2), m30));
    u[2] = _mm512_or_si512(_mm512_and_si512(l1, m4), _mm512_and_si512(h, m30));
    u[3] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l1, 4), m4), _mm512_and_si512(_mm512_srli_epi16(h, 2), m30));
    *fsc = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)x->scales))),
                         _mm512_set1_ps(fp16(x->d)));
}

/* quant_kv.c's reduce16: halves, quarters, pairs, then lanes 0 + 1. */
AI float kv_reduce(__m512 a) {
    const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_movehdup_ps(q));
    return _mm_cvtss_f32(q);
}

/* ---- q4_KV ---- */

void e0_vec_dot_q4_KV_avx512(int64_t n, float *s, const void *vw, const void *va) {
    const e0_block_q4_K *x = vw;
    const e0_block_q8_K *y = va;
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        e0_prefetch_bytes(x + i + E0_PREFETCH_BLOCKS, sizeof *x);
        __m512i u[4];
        __m512 fsc, fmin, yd, bsum_yd;
        q4kv_row(&x[i], u, &fsc, &fmin);
        kv_token(&y[i], &yd, &bsum_yd);
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(kv_sums(u, y[i].qs)), _mm512_mul_ps(fsc, yd), acc);
        acc = _mm512_fmadd_ps(bsum_yd, fmin, acc);
    }
    *s = kv_reduce(acc);
}

/* ---- q6_KV ---- */

void e0_vec_dot_q6_KV_avx512(int64_t n, float *s, const void *vw, const void *va) {
    const e0_block_q6_K *x = vw;
    const e0_block_q8_K *y = va;
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        e0_prefetch_bytes(x + i + E0_PREFETCH_BLOCKS, sizeof *x);
        __m512i u[4];
        __m512 fsc;
        q6kv_row(&x[i], u, &fsc);
        const __m512i sums = _mm512_sub_epi32(kv_sums(u, y[i].qs), kv_offset(&y[i]));
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), _mm512_mul_ps(fsc, _mm512_set1_ps(y[i].d)), acc);
    }
    *s = kv_reduce(acc);
}

/* ---- the GEMMs ----
 * A call: nr rows x nt tokens. The token terms (y.d, and q4's bsum * y.d or q6's 32 * bsum) are
 * made once per call for every block (KV_TB blocks at a time: in chunks for a longer row), the
 * rows go in groups of RG (one at a time up to RG1_NT tokens) whose codes stay in registers while
 * every token passes, and the accumulators of a group (RG x nt vectors, in L1) start at the first
 * block without a memset. The 16-lane sums end in kv_store: 16 accumulators at a time through a
 * transposing tree with reduce16's adds in reduce16's order, so every (row, token) still gets the
 * dot's bits. */

#define KV_TB 16 /* blocks of token terms per chunk (a row of n <= 4096 is one chunk) */

typedef struct {
    float yd[MAXT * KV_TB];     /* [t * nbc + i]: y.d of token t, block i0 + i */
    __m512i term[MAXT * KV_TB]; /* q4: bsum * y.d (floats); q6: 32 * bsum */
} kv_terms;

AI void kv_terms_make(kv_terms *tt, bool q6, const uint8_t *a, size_t a_stride, int nt, int64_t i0, int64_t nbc) {
    for (int t = 0; t < nt; t++)
        for (int64_t i = 0; i < nbc; i++) {
            const e0_block_q8_K *y = (const e0_block_q8_K *)(a + (size_t)t * a_stride) + i0 + i;
            __m512 yd, bsum_yd;
            tt->yd[t * nbc + i] = y->d;
            if (q6) tt->term[t * nbc + i] = kv_offset(y);
            else {
                kv_token(y, &yd, &bsum_yd);
                tt->term[t * nbc + i] = _mm512_castps_si512(bsum_yd);
            }
        }
}

/* One 16 x 16 step of reduce16 for 16 accumulators at once: lane 4k + j of the result is the sum
 * of v[4j + k]. Stages: halves, quarters, pairs, lanes 0 + 1 (quant_kv.c's reduce16). */
AI __m512 kv_reduce16x16(const __m512 v[16]) {
    __m512 u[8], x[4], y[2];
    for (int m = 0; m < 8; m++) /* halves: lanes 0..7 of v[2m], 8..15 of v[2m+1] */
        u[m] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * m], v[2 * m + 1], 0x44), _mm512_shuffle_f32x4(v[2 * m], v[2 * m + 1], 0xEE));
    for (int m = 0; m < 4; m++) /* quarters: 128-bit lane k holds v[4m + k]'s */
        x[m] = _mm512_add_ps(_mm512_shuffle_f32x4(u[2 * m], u[2 * m + 1], 0x88), _mm512_shuffle_f32x4(u[2 * m], u[2 * m + 1], 0xDD));
    for (int m = 0; m < 2; m++) /* pairs: q0 + q2, q1 + q3 of x[2m] and x[2m+1] */
        y[m] = _mm512_add_ps(_mm512_shuffle_ps(x[2 * m], x[2 * m + 1], 0x44), _mm512_shuffle_ps(x[2 * m], x[2 * m + 1], 0xEE));
    return _mm512_add_ps(_mm512_shuffle_ps(y[0], y[1], 0x88), _mm512_shuffle_ps(y[0], y[1], 0xDD)); /* lanes 0 + 1 */
}

/* s[r + t * s_stride] = reduce16(acc[r][t]): groups of 4 rows x 4 tokens through the tree (lane
 * 4k + j = row j of token t + k: four 4-float stores), the rest one by one. */
AI void kv_store(__m512 acc[RG][MAXT], int rg, int nt, float *s, size_t s_stride) {
    int t = 0;
    if (rg == 4)
        for (; t + 4 <= nt; t += 4) {
            __m512 v[16];
            for (int i = 0; i < 16; i++) v[i] = acc[i >> 2][t + (i & 3)];
            const __m512 z = kv_reduce16x16(v);
            _mm_storeu_ps(s + (size_t)t * s_stride, _mm512_castps512_ps128(z));
            _mm_storeu_ps(s + (size_t)(t + 1) * s_stride, _mm512_extractf32x4_ps(z, 1));
            _mm_storeu_ps(s + (size_t)(t + 2) * s_stride, _mm512_extractf32x4_ps(z, 2));
            _mm_storeu_ps(s + (size_t)(t + 3) * s_stride, _mm512_extractf32x4_ps(z, 3));
        }
    for (; t < nt; t++)
        for (int r = 0; r < rg; r++) s[(size_t)r + (size_t)t * s_stride] = kv_reduce(acc[r][t]);
}

/* Weights stream from memory (the output head's 151936 rows, each expert once): while block i of
 * row r is used, block i of row r + AHEAD is asked for, a group (or AHEAD single rows) ahead.
 * Asking for the row's next block (gemm_simd.h's prefetch_next) comes too late when there are few
 * tokens to work on meanwhile, and the hardware prefetcher follows RG interleaved 1680-byte
 * streams poorly; so up to RG1_NT tokens the rows also go one at a time (one sequential stream:
 * a row's codes are made once per block either way). With both, the q6_KV output head of a
 * Qwen3-30B-A3B from memory, 2 threads, took 13.1 ms against 18.9 at 4 tokens, 29.8 against 32.5
 * at 16 (docs/perf.md, session 16); one at a time up to 8 tokens rather than 4: batch-8 decode
 * +1.9% (5 of 5 A/B pairs), the 73-token prompt's prefill +6.8% (no verdict; session 17). */
AI void kv_prefetch(const uint8_t *w, size_t w_stride, int r, int64_t i, size_t bsize) {
    prefetch_lines(w + (size_t)(AHEAD + r) * w_stride + (size_t)i * bsize, bsize);
}

/* One block i of rows w (rg of them) against the nt tokens: block i - i0 of the terms tt. first:
 * the accumulators start here (0 + the block's terms, as the dot's first fma). */
AI void q4kv_gemm_block(const uint8_t *w, size_t w_stride, int64_t i, int64_t i0, int64_t nbc, int rg, int nt,
                        const uint8_t *a, size_t a_stride, const kv_terms *tt, __m512 acc[RG][MAXT], bool first) {
    __m512i u[RG][4];
    __m512 fsc[RG], fmin[RG];
#pragma GCC unroll 4
    for (int r = 0; r < rg; r++) {
        kv_prefetch(w, w_stride, r, i, sizeof(e0_block_q4_K));
        q4kv_row((const e0_block_q4_K *)(w + (size_t)r * w_stride) + i, u[r], &fsc[r], &fmin[r]);
    }
    for (int t = 0; t < nt; t++) {
        const int8_t *q8 = ((const e0_block_q8_K *)(a + (size_t)t * a_stride) + i)->qs;
        const __m512 yd = _mm512_set1_ps(tt->yd[t * nbc + (i - i0)]), bsum_yd = _mm512_castsi512_ps(tt->term[t * nbc + (i - i0)]);
    #pragma GCC unroll 4
    for (int r = 0; r < rg; r++) {
            const __m512 prev = first ? _mm512_setzero_ps() : acc[r][t];
            const __m512 v = _mm512_fmadd_ps(_mm512_cvtepi32_ps(kv_sums(u[r], q8)), _mm512_mul_ps(fsc[r], yd), prev);
            acc[r][t] = _mm512_fmadd_ps(bsum_yd, fmin[r], v);
        }
    }
}

AI void q6kv_gemm_block(const uint8_t *w, size_t w_stride, int64_t i, int64_t i0, int64_t nbc, int rg, int nt,
                        const uint8_t *a, size_t a_stride, const kv_terms *tt, __m512 acc[RG][MAXT], bool first) {
    __m512i u[RG][4];
    __m512 fsc[RG];
#pragma GCC unroll 4
    for (int r = 0; r < rg; r++) {
        kv_prefetch(w, w_stride, r, i, sizeof(e0_block_q6_K));
        q6kv_row((const e0_block_q6_K *)(w + (size_t)r * w_stride) + i, u[r], &fsc[r]);
    }
    for (int t = 0; t < nt; t++) {
        const int8_t *q8 = ((const e0_block_q8_K *)(a + (size_t)t * a_stride) + i)->qs;
        const __m512 yd = _mm512_set1_ps(tt->yd[t * nbc + (i - i0)]);
        const __m512i offs = tt->term[t * nbc + (i - i0)];
    #pragma GCC unroll 4
    for (int r = 0; r < rg; r++) {
            const __m512 prev = first ? _mm512_setzero_ps() : acc[r][t];
            const __m512i sums = _mm512_sub_epi32(kv_sums(u[r], q8), offs);
            acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), _mm512_mul_ps(fsc[r], yd), prev);
        }
    }
}

/* Rows w (rg, a constant where inlined) over blocks i0 .. i0 + nbc of the terms tt. */
#define KV_ROWS(name, block_fn)                                                                                           \
    AI void name(const uint8_t *w, size_t w_stride, int64_t i0, int64_t nbc, int rg, int nt, const uint8_t *a,            \
                 size_t a_stride, const kv_terms *tt, __m512 acc[RG][MAXT]) {                                             \
        int64_t i = i0;                                                                                                   \
        if (i == 0) block_fn(w, w_stride, i++, i0, nbc, rg, nt, a, a_stride, tt, acc, true);                             \
        for (; i < i0 + nbc; i++) block_fn(w, w_stride, i, i0, nbc, rg, nt, a, a_stride, tt, acc, false);                \
    }

/* A GEMM: the token terms for all rows (one chunk when the row has at most KV_TB blocks), the rows
 * in groups of RG (above RG1_NT tokens), then one at a time (a constant count each, so inlining
 * keeps the codes of each group in registers). */
#define KV_GEMM(name, rows_fn, q6)                                                                                         \
    void name(int64_t n, int nr, const void *vw, size_t w_stride, int nt, const void *va, size_t a_stride, float *s,        \
              size_t s_stride) {                                                                                           \
        const uint8_t *w = vw, *a = va;                                                                                    \
        const int64_t nb = n / QK_K;                                                                                       \
        kv_terms tt;                                                                                                       \
        __m512 acc[RG][MAXT];                                                                                              \
        if (nb <= KV_TB) kv_terms_make(&tt, q6, a, a_stride, nt, 0, nb);                                                   \
        for (int r = 0; r < nr;) {                                                                                         \
            const int rg = nt > RG1_NT && r + RG <= nr ? RG : 1;                                                           \
            const uint8_t *wr = w + (size_t)r * w_stride;                                                                  \
            for (int64_t i0 = 0; i0 < nb; i0 += KV_TB) {                                                                   \
                const int64_t nbc = nb - i0 < KV_TB ? nb - i0 : KV_TB;                                                     \
                if (nb > KV_TB) kv_terms_make(&tt, q6, a, a_stride, nt, i0, nbc);                                          \
                if (rg == RG) rows_fn(wr, w_stride, i0, nbc, RG, nt, a, a_stride, &tt, acc);                               \
                else rows_fn(wr, w_stride, i0, nbc, 1, nt, a, a_stride, &tt, acc);                                         \
            }                                                                                                              \
            if (rg == RG) kv_store(acc, RG, nt, s + r, s_stride);                                                          \
            else kv_store(acc, 1, nt, s + r, s_stride);                                                                    \
            r += rg;                                                                                                       \
        }                                                                                                                  \
    }

KV_ROWS(q4kv_gemm_rows, q4kv_gemm_block)
KV_ROWS(q6kv_gemm_rows, q6kv_gemm_block)
KV_GEMM(e0_gemm_q4_KV_avx512, q4kv_gemm_rows, false)
KV_GEMM(e0_gemm_q6_KV_avx512, q6kv_gemm_rows, true)
