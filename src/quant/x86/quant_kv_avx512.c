/* quant_kv_avx512.c — AVX-512 VNNI kernels of q4_KV and q6_KV (q4_K / q6_K repacked at load,
 * layout and rationale in quant_kv.h): the repacking, the Q8_KV activation quantizer, the
 * one-token dots and the prefill GEMMs.
 *
 * Per block and (row, token): four vpdpbusd of the 64-byte code vectors with the permuted
 * activations give the 16 exact run sums (lane j: natural values 16j .. 16j + 15); then, in
 * float, acc += sums * (scale * x.d * y.d) and, for q4_K, acc += (bsum * y.d) * (min * -x.dmin)
 * (the mins through Q8_K's bsums of the same runs); for q6_K the offset 32 * bsum comes off the
 * integer sums first. The row terms (codes, scale and min vectors) are made once per block for
 * all tokens, the token terms once per block for a group of rows, and the GEMM does per (row,
 * token) exactly the dot's operations, so dot, GEMM and quant_kv.c's reference give the same
 * bits (tests/test_quant_kv.c, tests/test_gemm.c). */
#include "quant/quant_kv.h"
#include "quant/x86/gemm_simd.h"

#define MAXT E0_GEMM_TOKENS_MAX
#define RG 4 /* GEMM rows whose codes stay in registers (16 of the 32 zmm) */

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

/* Rows r0 .. r0 + rg - 1 (rg a constant where it is inlined: the codes stay in registers) against
 * the nt tokens, block by block. */
AI void q4kv_gemm_rows(const uint8_t *w, size_t w_stride, int64_t nb, int rg, int nt, const uint8_t *a, size_t a_stride,
                       float *s, size_t s_stride) {
    __m512 acc[RG][MAXT], yd[MAXT], bsum_yd[MAXT];
    const int8_t *q8[MAXT];
    for (int r = 0; r < rg; r++)
        for (int t = 0; t < nt; t++) acc[r][t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        for (int t = 0; t < nt; t++) {
            const e0_block_q8_K *y = (const e0_block_q8_K *)(a + (size_t)t * a_stride) + i;
            kv_token(y, &yd[t], &bsum_yd[t]);
            q8[t] = y->qs;
        }
        __m512i u[RG][4];
        __m512 fsc[RG], fmin[RG];
        for (int r = 0; r < rg; r++) {
            prefetch_next(w, w_stride, rg, r, i, nb, sizeof(e0_block_q4_K));
            q4kv_row((const e0_block_q4_K *)(w + (size_t)r * w_stride) + i, u[r], &fsc[r], &fmin[r]);
        }
        for (int t = 0; t < nt; t++)
            for (int r = 0; r < rg; r++) {
                __m512 v = _mm512_fmadd_ps(_mm512_cvtepi32_ps(kv_sums(u[r], q8[t])), _mm512_mul_ps(fsc[r], yd[t]), acc[r][t]);
                acc[r][t] = _mm512_fmadd_ps(bsum_yd[t], fmin[r], v);
            }
    }
    for (int r = 0; r < rg; r++)
        for (int t = 0; t < nt; t++) s[(size_t)r + (size_t)t * s_stride] = kv_reduce(acc[r][t]);
}

/* A GEMM: the rows in groups of RG, then one at a time (a constant count each, so inlining
 * keeps the codes of each group in registers). */
#define KV_GEMM(name, rows_fn)                                                                                             \
    void name(int64_t n, int nr, const void *vw, size_t w_stride, int nt, const void *va, size_t a_stride, float *s,        \
              size_t s_stride) {                                                                                           \
        const uint8_t *w = vw;                                                                                             \
        int r = 0;                                                                                                         \
        for (; r + RG <= nr; r += RG) rows_fn(w + (size_t)r * w_stride, w_stride, n / QK_K, RG, nt, va, a_stride, s + r, s_stride); \
        for (; r < nr; r++) rows_fn(w + (size_t)r * w_stride, w_stride, n / QK_K, 1, nt, va, a_stride, s + r, s_stride);   \
    }

KV_GEMM(e0_gemm_q4_KV_avx512, q4kv_gemm_rows)

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

AI void q6kv_gemm_rows(const uint8_t *w, size_t w_stride, int64_t nb, int rg, int nt, const uint8_t *a, size_t a_stride,
                       float *s, size_t s_stride) {
    __m512 acc[RG][MAXT], yd[MAXT];
    __m512i offs[MAXT];
    const int8_t *q8[MAXT];
    for (int r = 0; r < rg; r++)
        for (int t = 0; t < nt; t++) acc[r][t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        for (int t = 0; t < nt; t++) {
            const e0_block_q8_K *y = (const e0_block_q8_K *)(a + (size_t)t * a_stride) + i;
            yd[t] = _mm512_set1_ps(y->d);
            offs[t] = kv_offset(y);
            q8[t] = y->qs;
        }
        __m512i u[RG][4];
        __m512 fsc[RG];
        for (int r = 0; r < rg; r++) {
            prefetch_next(w, w_stride, rg, r, i, nb, sizeof(e0_block_q6_K));
            q6kv_row((const e0_block_q6_K *)(w + (size_t)r * w_stride) + i, u[r], &fsc[r]);
        }
        for (int t = 0; t < nt; t++)
            for (int r = 0; r < rg; r++) {
                const __m512i sums = _mm512_sub_epi32(kv_sums(u[r], q8[t]), offs[t]);
                acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), _mm512_mul_ps(fsc[r], yd[t]), acc[r][t]);
            }
    }
    for (int r = 0; r < rg; r++)
        for (int t = 0; t < nt; t++) s[(size_t)r + (size_t)t * s_stride] = kv_reduce(acc[r][t]);
}

KV_GEMM(e0_gemm_q6_KV_avx512, q6kv_gemm_rows)
