/* quant_tern_avx2.c — AVX2 dot products of TQ1_0 / TQ2_0 (against Q8_K) and Q1_0 / Q2_0
 * (against Q8_0).
 *
 * The weight codes are expanded to unsigned bytes (trits 0..2, codes 0..3, bit masks) and
 * multiplied with the int8 activations by vpmaddubsw; the code offset (value = code - 1, or
 * +-q for Q1_0) is taken off with the plain sum of the activations. The integer block sums are
 * exact for any bytes, and the float scaling is the scalar reference's expression in its order,
 * so every result is the reference's bit for bit (tests/test_quant_iq4.c compares with memcmp). */
#include "quant/quant_tern.h"
#include "quant/x86/simd.h"

static inline int hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

/* Sum of code * y - y over 32 elements, codes unsigned 0..3 (int16 pair sums cannot overflow). */
static inline __m256i dot_offset1(__m256i codes, __m256i y) {
    const __m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(codes, y), _mm256_maddubs_epi16(_mm256_set1_epi8(1), y));
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

/* ---- TQ1_0 ---- */

/* Bytes times multipliers mod 256: mul_even / mul_odd hold, per 16-bit lane, the multiplier of
 * its even (low) and odd (high) byte. */
static inline __m256i mul_bytes(__m256i v, __m256i mul_even, __m256i mul_odd) {
    const __m256i even = _mm256_and_si256(_mm256_mullo_epi16(v, mul_even), _mm256_set1_epi16(0xFF));
    const __m256i odd = _mm256_slli_epi16(_mm256_mullo_epi16(_mm256_srli_epi16(v, 8), mul_odd), 8);
    return _mm256_or_si256(even, odd);
}

/* The top trit of bytes t: (t * 3) >> 8 = (t > 85) + (t > 170) (unsigned compares). */
static inline __m256i top_trit(__m256i t) {
    const __m256i f = _mm256_xor_si256(t, _mm256_set1_epi8((char)0x80));
    const __m256i g1 = _mm256_cmpgt_epi8(f, _mm256_set1_epi8((char)(85 ^ 0x80)));
    const __m256i g2 = _mm256_cmpgt_epi8(f, _mm256_set1_epi8((char)(170 ^ 0x80)));
    return _mm256_sub_epi8(_mm256_sub_epi8(_mm256_setzero_si256(), g1), g2);
}

static inline __m256i trits_pow(__m256i v, int p_even, int p_odd) {
    return top_trit(mul_bytes(v, _mm256_set1_epi16((short)p_even), _mm256_set1_epi16((short)p_odd)));
}

/* The 256 trits of a block in element order (e0_tq1_0_trits). */
static void tq1_trits(const uint8_t *blk, uint8_t t[QK_K]) {
    static const int pow3[5] = {1, 3, 9, 27, 81};
    const uint8_t *qs = blk + offsetof(e0_block_tq1_0, qs), *qh = blk + offsetof(e0_block_tq1_0, qh);
    const __m256i b32 = load32(qs);
    for (int n = 0; n < 5; n++) _mm256_storeu_si256((__m256i *)(t + 32 * n), trits_pow(b32, pow3[n], pow3[n]));
    /* bytes 32..47 in both lanes: lanes hold trits n (low) and n + 1 (high), elements 160 + 16n.. */
    const __m256i b16 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(qs + 32)));
    for (int n = 0; n < 5; n += 2) {
        const __m256i lo = trits_pow(b16, pow3[n], pow3[n]);
        if (n == 4) _mm_storeu_si128((__m128i *)(t + 160 + 16 * n), _mm256_castsi256_si128(lo));
        else {
            const __m256i hi = trits_pow(b16, pow3[n + 1], pow3[n + 1]);
            _mm256_storeu_si256((__m256i *)(t + 160 + 16 * n), _mm256_permute2x128_si256(lo, hi, 0x20));
        }
    }
    /* qh: element 240 + 4n + j is trit n of qh[j]; the 4 bytes repeated, multiplied by 3^(e/4) */
    uint32_t h4 = e0_rd32(qh);
    const __m256i h = _mm256_set1_epi32((int)h4);
    const __m256i pe = _mm256_setr_epi16(1, 1, 3, 3, 9, 9, 27, 27, 0, 0, 0, 0, 0, 0, 0, 0);
    _mm_storeu_si128((__m128i *)(t + 240), _mm256_castsi256_si128(top_trit(mul_bytes(h, pe, pe))));
}

void e0_vec_dot_tq1_0_avx2(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w;
    const e0_block_q8_K *y = a;
    _Alignas(32) uint8_t t[QK_K];
    float sumf = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += sizeof(e0_block_tq1_0), y++) {
        e0_prefetch_bytes(x + E0_PREFETCH_BLOCKS * sizeof(e0_block_tq1_0), sizeof(e0_block_tq1_0));
        tq1_trits(x, t);
        __m256i acc = _mm256_setzero_si256();
        for (int j = 0; j < QK_K; j += 32)
            acc = _mm256_add_epi32(acc, dot_offset1(_mm256_load_si256((const __m256i *)(t + j)), load32((const uint8_t *)y->qs + j)));
        sumf += (float)hsum_i32(acc) * (h2f(x + offsetof(e0_block_tq1_0, d)) * y->d);
    }
    *s = sumf;
}

/* ---- TQ2_0: element 128*(j/32) + 32l + j%32 in bits 2l of byte j ---- */

void e0_vec_dot_tq2_0_avx2(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w;
    const e0_block_q8_K *y = a;
    const __m256i m3 = _mm256_set1_epi8(3);
    float sumf = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += sizeof(e0_block_tq2_0), y++) {
        e0_prefetch_bytes(x + E0_PREFETCH_BLOCKS * sizeof(e0_block_tq2_0), sizeof(e0_block_tq2_0));
        __m256i acc = _mm256_setzero_si256();
        for (int half = 0; half < 2; half++) {
            const __m256i b = load32(x + offsetof(e0_block_tq2_0, qs) + 32 * half);
            for (int l = 0; l < 4; l++) {
                const __m256i codes = _mm256_and_si256(_mm256_srli_epi16(b, 2 * l), m3);
                acc = _mm256_add_epi32(acc, dot_offset1(codes, load32((const uint8_t *)y->qs + 128 * half + 32 * l)));
            }
        }
        sumf += (float)hsum_i32(acc) * (y->d * h2f(x + offsetof(e0_block_tq2_0, d)));
    }
    *s = sumf;
}

/* ---- Q1_0 / Q2_0: byte e of the result takes byte (e / per_byte) of the bits ---- */

void e0_vec_dot_q1_0_avx2(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w, *y = a;
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x(0x8040201008040201ll);
    float sumf = 0;
    for (int64_t i = 0; i < n / E0_QK_Q1_0; i++, x += Q1_0_SIZE) {
        e0_prefetch_bytes(x + E0_PREFETCH_BLOCKS * Q1_0_SIZE, Q1_0_SIZE);
        float sumi = 0;
        for (int k = 0; k < 4; k++, y += Q8_0_SIZE) {
            const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32((int)e0_rd32(x + Q1_0_QS + 4 * k)), spread);
            const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit); /* -1 where the bit is 1 */
            /* +q where set, -q elsewhere: 2 * (sum of q where set) - (sum of q), codes 2 / 0 */
            const __m256i codes = _mm256_and_si256(set, _mm256_set1_epi8(2));
            const int sb = hsum_i32(dot_offset1(codes, load32(y + Q8_0_QS)));
            sumi += h2f(y) * (float)sb;
        }
        sumf += h2f(x) * sumi;
    }
    *s = sumf;
}

void e0_vec_dot_q2_0_avx2(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w, *y = a;
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7);
    const __m256i b0 = _mm256_set1_epi32(0x40100401), b1 = _mm256_set1_epi32((int)0x80200802u);
    float sumf = 0;
    for (int64_t i = 0; i < n / E0_QK_Q2_0; i++, x += Q2_0_SIZE) {
        e0_prefetch_bytes(x + E0_PREFETCH_BLOCKS * Q2_0_SIZE, Q2_0_SIZE);
        float sumi = 0;
        for (int k = 0; k < 2; k++, y += Q8_0_SIZE) {
            uint64_t q;
            memcpy(&q, x + Q2_0_QS + 8 * k, 8);
            const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi64x((long long)q), spread);
            const __m256i lo = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(bytes, b0), b0), _mm256_set1_epi8(1));
            const __m256i hi = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(bytes, b1), b1), _mm256_set1_epi8(2));
            const int sb = hsum_i32(dot_offset1(_mm256_or_si256(lo, hi), load32(y + Q8_0_QS)));
            sumi += h2f(y) * (float)sb;
        }
        sumf += h2f(x) * sumi;
    }
    *s = sumf;
}
