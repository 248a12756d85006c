/* quant_basic_avx2.c — AVX2+FMA+F16C kernels for F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0
 * and the Q8_0/Q8_1 activation quantizers. Compiled with -mavx2 -mfma -mf16c; only called when
 * the CPU has them (the type table picks them by e0_simd_level()).
 *
 * Quantized dots do what ggml does: an exact integer dot per 32-element block with maddubs
 * (unsigned 8-bit x signed 8-bit pairs -> int16, never saturating here because activations lie
 * in [-127, 127]), widened to int32, converted to float and multiplied by the block scales. */
#include "quant/quant_basic.h"
#include "quant/x86/simd.h"

/* Sum of u[i] * s[i] over each group of four bytes, as 8 floats (u unsigned, s signed). */
static inline __m256 dot_us8(__m256i u, __m256i s) {
    __m256i p16 = _mm256_maddubs_epi16(u, s);
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
}

/* Same for two signed vectors: move x's sign onto y so x can be used unsigned (|-128| = 128 as
 * an unsigned byte, so any weight byte is fine; y must not hold -128). */
static inline __m256 dot_ss8(__m256i x, __m256i y) {
    return dot_us8(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

/* 32 bits -> 32 bytes, byte j = 0xff when bit j is set. */
static inline __m256i bits32_to_bytes(const uint8_t *qh) {
    const __m256i pick = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
    __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32((int)e0_rd32(qh)), pick);
    /* byte j of each 8 keeps only bit j: OR the others in, then test for all ones */
    bytes = _mm256_or_si256(bytes, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
    return _mm256_cmpeq_epi8(bytes, _mm256_set1_epi8(-1));
}

/* ---------------- float weights ---------------- */

void e0_vec_dot_f32_avx2(int64_t n, float *s, const void *w, const void *a) {
    const float *x = w, *y = a;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8), acc1);
        acc2 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 16), _mm256_loadu_ps(y + i + 16), acc2);
        acc3 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 24), _mm256_loadu_ps(y + i + 24), acc3);
    }
    for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), acc0);
    float sum = hsum_ps(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
    for (; i < n; i++) sum += e0_rdf32(x + i) * e0_rdf32(y + i);
    *s = sum;
}

/* Activations rounded to F16 / BF16 (round to nearest even), as llama.cpp converts them for
 * F16/BF16 weights (see vec_dot_f16_ref in quant_basic.c). */
static inline __m256 round_f16(__m256 v) {
    return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
static inline __m256 round_bf16(__m256 v) {
    __m256i b = _mm256_castps_si256(v);
    __m256i odd = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1));
    b = _mm256_add_epi32(b, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), odd));
    __m256 r = _mm256_castsi256_ps(_mm256_and_si256(b, _mm256_set1_epi32((int)0xffff0000u)));
    return _mm256_blendv_ps(r, v, _mm256_cmp_ps(v, v, _CMP_UNORD_Q)); /* NaN stays NaN */
}
static inline float round_f16_1(float v) { return _cvtsh_ss(_cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT)); }

static inline __m256 load_f16x8(const uint8_t *p) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

void e0_vec_dot_f16_avx2(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w;
    const float *y = a;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        acc0 = _mm256_fmadd_ps(load_f16x8(x + 2 * i), round_f16(_mm256_loadu_ps(y + i)), acc0);
        acc1 = _mm256_fmadd_ps(load_f16x8(x + 2 * i + 16), round_f16(_mm256_loadu_ps(y + i + 8)), acc1);
        acc2 = _mm256_fmadd_ps(load_f16x8(x + 2 * i + 32), round_f16(_mm256_loadu_ps(y + i + 16)), acc2);
        acc3 = _mm256_fmadd_ps(load_f16x8(x + 2 * i + 48), round_f16(_mm256_loadu_ps(y + i + 24)), acc3);
    }
    for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(load_f16x8(x + 2 * i), round_f16(_mm256_loadu_ps(y + i)), acc0);
    float sum = hsum_ps(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
    for (; i < n; i++) sum += h2f(x + 2 * i) * round_f16_1(e0_rdf32(y + i));
    *s = sum;
}

static inline __m256 load_bf16x8(const uint8_t *p) {
    __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

void e0_vec_dot_bf16_avx2(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w;
    const float *y = a;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        acc0 = _mm256_fmadd_ps(load_bf16x8(x + 2 * i), round_bf16(_mm256_loadu_ps(y + i)), acc0);
        acc1 = _mm256_fmadd_ps(load_bf16x8(x + 2 * i + 16), round_bf16(_mm256_loadu_ps(y + i + 8)), acc1);
        acc2 = _mm256_fmadd_ps(load_bf16x8(x + 2 * i + 32), round_bf16(_mm256_loadu_ps(y + i + 16)), acc2);
        acc3 = _mm256_fmadd_ps(load_bf16x8(x + 2 * i + 48), round_bf16(_mm256_loadu_ps(y + i + 24)), acc3);
    }
    for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(load_bf16x8(x + 2 * i), round_bf16(_mm256_loadu_ps(y + i)), acc0);
    float sum = hsum_ps(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
    for (; i < n; i++) sum += e0_bf16_to_fp32(e0_rd16(x + 2 * i)) * e0_bf16_to_fp32(e0_fp32_to_bf16(e0_rdf32(y + i)));
    *s = sum;
}

/* ---------------- legacy quants ---------------- */

/* Integer dot of one weight block with one activation block, as 8 float partial sums. */
static inline __m256 q4_0_dot(const uint8_t *x, const uint8_t *y) {
    __m256i qx = _mm256_sub_epi8(nibbles32(x + Q4_0_QS), _mm256_set1_epi8(8));
    return dot_ss8(qx, load32(y + Q8_0_QS));
}
static inline __m256 q4_1_dot(const uint8_t *x, const uint8_t *y) {
    return dot_us8(nibbles32(x + Q4_1_QS), load32(y + Q8_1_QS));
}
static inline __m256 q5_0_dot(const uint8_t *x, const uint8_t *y) {
    /* q - 16 as a signed byte: the nibble with 0xf0 ORed in when the fifth bit is clear */
    __m256i hi = _mm256_andnot_si256(bits32_to_bytes(x + Q5_0_QH), _mm256_set1_epi8((char)0xf0));
    return dot_ss8(_mm256_or_si256(nibbles32(x + Q5_0_QS), hi), load32(y + Q8_0_QS));
}
static inline __m256 q5_1_dot(const uint8_t *x, const uint8_t *y) {
    __m256i hi = _mm256_and_si256(bits32_to_bytes(x + Q5_1_QH), _mm256_set1_epi8(0x10));
    return dot_us8(_mm256_or_si256(nibbles32(x + Q5_1_QS), hi), load32(y + Q8_1_QS));
}
static inline __m256 q8_0_dot(const uint8_t *x, const uint8_t *y) {
    return dot_ss8(load32(x + Q8_0_QS), load32(y + Q8_0_QS));
}

/* The loop shared by all block types, in llama.cpp's order: one accumulator, blocks in order,
 * one FMA per block, the same horizontal sum, then the m_x * s_y terms (Q4_1, Q5_1) summed
 * separately in float. The integer lane sums are exact, so the result is bit-identical to
 * ggml's AVX2 kernels; a second accumulator measured no faster (the loop is throughput bound). */
#define BLOCK_DOT_LOOP(DOT, WSIZE, ASIZE, has_min, min_off)                     \
    const uint8_t *x = w, *y = a;                                                 \
    __m256 acc = _mm256_setzero_ps();                                             \
    float summs = 0;                                                              \
    for (int64_t i = 0; i < n / E0_QK; i++, x += (WSIZE), y += (ASIZE)) {         \
        e0_prefetch_bytes(x + 32 * (WSIZE), (WSIZE)); /* decode streams rows: read ahead */\
        if (has_min) summs += h2f(x + (min_off)) * h2f(y + Q8_1_S);               \
        acc = _mm256_fmadd_ps(block_scales(x, y), DOT(x, y), acc);                \
    }                                                                             \
    *s = hsum_ps(acc) + summs

void e0_vec_dot_q4_0_avx2(int64_t n, float *s, const void *w, const void *a) {
    BLOCK_DOT_LOOP(q4_0_dot, Q4_0_SIZE, Q8_0_SIZE, 0, 0);
}
void e0_vec_dot_q4_1_avx2(int64_t n, float *s, const void *w, const void *a) {
    BLOCK_DOT_LOOP(q4_1_dot, Q4_1_SIZE, Q8_1_SIZE, 1, Q4_1_M);
}
void e0_vec_dot_q5_0_avx2(int64_t n, float *s, const void *w, const void *a) {
    BLOCK_DOT_LOOP(q5_0_dot, Q5_0_SIZE, Q8_0_SIZE, 0, 0);
}
void e0_vec_dot_q5_1_avx2(int64_t n, float *s, const void *w, const void *a) {
    BLOCK_DOT_LOOP(q5_1_dot, Q5_1_SIZE, Q8_1_SIZE, 1, Q5_1_M);
}
void e0_vec_dot_q8_0_avx2(int64_t n, float *s, const void *w, const void *a) {
    BLOCK_DOT_LOOP(q8_0_dot, Q8_0_SIZE, Q8_0_SIZE, 0, 0);
}

/* ---------------- activation quantizers (llama.cpp's x86 rounding) ---------------- */

/* Quantize 32 floats to int8 with scale 127/amax, round half to even; returns d = amax/127 and
 * the 32 quants' int32 partial sums (for Q8_1's s). */
static inline __m256i q8_act_block(const float *x, uint8_t *qs, float *d_out) {
    __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
    __m256 v2 = _mm256_loadu_ps(x + 16), v3 = _mm256_loadu_ps(x + 24);
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 m = _mm256_max_ps(_mm256_andnot_ps(sign, v0), _mm256_andnot_ps(sign, v1));
    m = _mm256_max_ps(m, _mm256_max_ps(_mm256_andnot_ps(sign, v2), _mm256_andnot_ps(sign, v3)));
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float amax = _mm_cvtss_f32(m4);
    *d_out = amax / 127.f;
    const __m256 id = _mm256_set1_ps(amax != 0.0f ? 127.f / amax : 0.0f);
    enum { rne = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }; /* a constant expression (clang needs one) */
    __m256i i0 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v0, id), rne));
    __m256i i1 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v1, id), rne));
    __m256i i2 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v2, id), rne));
    __m256i i3 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v3, id), rne));
    __m256i sums = _mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3));
    /* packs work per 128-bit lane; the permute restores element order */
    __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
    p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i *)qs, p);
    return sums;
}

void e0_quantize_act_q8_0_avx2(const float *x, void *y, int64_t n) {
    uint8_t *b = y;
    for (int64_t i = 0; i < n / E0_QK; i++, b += Q8_0_SIZE, x += E0_QK) {
        float d;
        q8_act_block(x, b + Q8_0_QS, &d);
        e0_wr16(b, _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT));
    }
}

void e0_quantize_act_q8_1_avx2(const float *x, void *y, int64_t n) {
    uint8_t *b = y;
    for (int64_t i = 0; i < n / E0_QK; i++, b += Q8_1_SIZE, x += E0_QK) {
        float d;
        __m256i sums = q8_act_block(x, b + Q8_1_QS, &d);
        __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(sums), _mm256_extracti128_si256(sums, 1));
        s4 = _mm_add_epi32(s4, _mm_unpackhi_epi64(s4, s4));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 1));
        e0_wr16(b, _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT));
        e0_wr16(b + Q8_1_S, _cvtss_sh(d * (float)_mm_cvtsi128_si32(s4), _MM_FROUND_TO_NEAREST_INT));
    }
}
