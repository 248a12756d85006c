/* quant_basic_avx512.c — AVX-512 (F/BW/VL/DQ + VNNI) kernels for the float and legacy block types,
 * kept only where a micro benchmark (tools/qspeed_basic.c) showed a gain over AVX2. Registered
 * only when the CPU also has AVX512-VNNI (quant_basic.c checks).
 *
 * Float types: 512-bit FMAs (F16/BF16 widened on load). Block types: 256-bit, one block per
 * vector, with vpdpbusd (u8 x s8 -> int32, no saturation) giving each block's exact integer lane
 * sums in fewer uops than AVX2's maddubs chain, accumulated in llama.cpp's order (see
 * VNNI_DOT_LOOP). Q8_0 has no kernel here: VNNI measured no faster than AVX2 for it, and a
 * 512-bit two-blocks-per-vector version (~8% faster from DRAM) cannot keep llama.cpp's order,
 * which moved golden logits by ~1% through activation rounding flips. */
#include "quant/quant_basic.h"
#include "quant/x86/simd.h"

/* ---------------- float weights ---------------- */

void e0_vec_dot_f32_avx512(int64_t n, float *s, const void *w, const void *a) {
    const float *x = w, *y = a;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i), acc0);
        acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(y + i + 16), acc1);
        acc2 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 32), _mm512_loadu_ps(y + i + 32), acc2);
        acc3 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i + 48), _mm512_loadu_ps(y + i + 48), acc3);
    }
    for (; i + 16 <= n; i += 16) acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i), acc0);
    if (i < n) { /* masked tail: lanes past n load as zero */
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        acc1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i), acc1);
    }
    *s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc0, acc1), _mm512_add_ps(acc2, acc3)));
}

/* Activations rounded to F16 / BF16 (round to nearest even), as llama.cpp converts them for
 * F16/BF16 weights (see vec_dot_f16_ref in quant_basic.c). */
static inline __m512 round_f16(__m512 v) {
    return _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
static inline __m512 round_bf16(__m512 v) {
    __m512i b = _mm512_castps_si512(v);
    __m512i odd = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
    b = _mm512_add_epi32(b, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), odd));
    __m512 r = _mm512_castsi512_ps(_mm512_and_si512(b, _mm512_set1_epi32((int)0xffff0000u)));
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), r, v); /* NaN stays NaN */
}

static inline __m512 load_f16x16(const uint8_t *p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}

void e0_vec_dot_f16_avx512(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w;
    const float *y = a;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        acc0 = _mm512_fmadd_ps(load_f16x16(x + 2 * i), round_f16(_mm512_loadu_ps(y + i)), acc0);
        acc1 = _mm512_fmadd_ps(load_f16x16(x + 2 * i + 32), round_f16(_mm512_loadu_ps(y + i + 16)), acc1);
        acc2 = _mm512_fmadd_ps(load_f16x16(x + 2 * i + 64), round_f16(_mm512_loadu_ps(y + i + 32)), acc2);
        acc3 = _mm512_fmadd_ps(load_f16x16(x + 2 * i + 96), round_f16(_mm512_loadu_ps(y + i + 48)), acc3);
    }
    for (; i + 16 <= n; i += 16) acc0 = _mm512_fmadd_ps(load_f16x16(x + 2 * i), round_f16(_mm512_loadu_ps(y + i)), acc0);
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        __m512 wx = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, x + 2 * i));
        acc1 = _mm512_fmadd_ps(wx, round_f16(_mm512_maskz_loadu_ps(m, y + i)), acc1);
    }
    *s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc0, acc1), _mm512_add_ps(acc2, acc3)));
}

static inline __m512 bf16x16(__m256i v) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
}

void e0_vec_dot_bf16_avx512(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w;
    const float *y = a;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        acc0 = _mm512_fmadd_ps(bf16x16(load32(x + 2 * i)), round_bf16(_mm512_loadu_ps(y + i)), acc0);
        acc1 = _mm512_fmadd_ps(bf16x16(load32(x + 2 * i + 32)), round_bf16(_mm512_loadu_ps(y + i + 16)), acc1);
        acc2 = _mm512_fmadd_ps(bf16x16(load32(x + 2 * i + 64)), round_bf16(_mm512_loadu_ps(y + i + 32)), acc2);
        acc3 = _mm512_fmadd_ps(bf16x16(load32(x + 2 * i + 96)), round_bf16(_mm512_loadu_ps(y + i + 48)), acc3);
    }
    for (; i + 16 <= n; i += 16) acc0 = _mm512_fmadd_ps(bf16x16(load32(x + 2 * i)), round_bf16(_mm512_loadu_ps(y + i)), acc0);
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        __m512 wx = bf16x16(_mm256_maskz_loadu_epi16(m, x + 2 * i));
        acc1 = _mm512_fmadd_ps(wx, round_bf16(_mm512_maskz_loadu_ps(m, y + i)), acc1);
    }
    *s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc0, acc1), _mm512_add_ps(acc2, acc3)));
}

/* ---------------- legacy quants ---------------- */

/* sum (q - 8) * y over each 4 bytes = sum q * y - sum 8 * y, both exact in int32. */
static inline __m256i q4_0_dot256(const uint8_t *x, const uint8_t *y) {
    __m256i qy = load32(y + Q8_0_QS), z = _mm256_setzero_si256();
    return _mm256_sub_epi32(_mm256_dpbusd_epi32(z, nibbles32(x + Q4_0_QS), qy),
                            _mm256_dpbusd_epi32(z, _mm256_set1_epi8(8), qy));
}

/* Q5: the fifth bits straight into a mask register, 16 added where set (AVX512BW/VL). */
static inline __m256i q5_quants(const uint8_t *qh, const uint8_t *qs) {
    __m256i nib = nibbles32(qs);
    return _mm256_mask_add_epi8(nib, (__mmask32)e0_rd32(qh), nib, _mm256_set1_epi8(16));
}

/* Per-block integer dots as 8 int32 partial sums. Offsets (-8, -16) are subtracted as offset *
 * sum y, also with vpdpbusd; everything stays exact in int32. */
static inline __m256i q4_1_dot256(const uint8_t *x, const uint8_t *y) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), nibbles32(x + Q4_1_QS), load32(y + Q8_1_QS));
}
static inline __m256i q5_0_dot256(const uint8_t *x, const uint8_t *y) {
    __m256i qy = load32(y + Q8_0_QS), z = _mm256_setzero_si256();
    return _mm256_sub_epi32(_mm256_dpbusd_epi32(z, q5_quants(x + Q5_0_QH, x + Q5_0_QS), qy),
                            _mm256_dpbusd_epi32(z, _mm256_set1_epi8(16), qy));
}
static inline __m256i q5_1_dot256(const uint8_t *x, const uint8_t *y) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), q5_quants(x + Q5_1_QH, x + Q5_1_QS), load32(y + Q8_1_QS));
}

/* llama.cpp's order, as in quant_basic_avx2.c: one accumulator, blocks in order, one FMA each,
 * then the horizontal sum; vpdpbusd's int32 lane sums equal maddubs+madd's, so the result is
 * bit-identical to the AVX2 kernel's (and ggml's). */
#define VNNI_DOT_LOOP(DOT, WSIZE, ASIZE, has_min, min_off)                                  \
    const uint8_t *x = w, *y = a;                                                              \
    __m256 acc = _mm256_setzero_ps();                                                          \
    float summs = 0;                                                                           \
    for (int64_t i = 0; i < n / E0_QK; i++, x += (WSIZE), y += (ASIZE)) {                      \
        e0_prefetch_bytes(x + 32 * (WSIZE), (WSIZE)); /* decode streams rows: read ahead */    \
        if (has_min) summs += h2f(x + (min_off)) * h2f(y + Q8_1_S);                           \
        acc = _mm256_fmadd_ps(block_scales(x, y), _mm256_cvtepi32_ps(DOT(x, y)), acc);         \
    }                                                                                          \
    *s = hsum_ps(acc) + summs

void e0_vec_dot_q4_0_avx512(int64_t n, float *s, const void *w, const void *a) {
    VNNI_DOT_LOOP(q4_0_dot256, Q4_0_SIZE, Q8_0_SIZE, 0, 0);
}
void e0_vec_dot_q4_1_avx512(int64_t n, float *s, const void *w, const void *a) {
    VNNI_DOT_LOOP(q4_1_dot256, Q4_1_SIZE, Q8_1_SIZE, 1, Q4_1_M);
}
void e0_vec_dot_q5_0_avx512(int64_t n, float *s, const void *w, const void *a) {
    VNNI_DOT_LOOP(q5_0_dot256, Q5_0_SIZE, Q8_0_SIZE, 0, 0);
}
void e0_vec_dot_q5_1_avx512(int64_t n, float *s, const void *w, const void *a) {
    VNNI_DOT_LOOP(q5_1_dot256, Q5_1_SIZE, Q8_1_SIZE, 1, Q5_1_M);
}
