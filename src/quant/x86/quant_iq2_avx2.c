/* quant_iq2_avx2.c — AVX2 dots of IQ2_XS, IQ2_S, IQ1_S and IQ1_M with Q8_K activations: the
 * 1-token vec_dot, the 4-token vec_dot_4 and the prefill GEMM (rows x tokens) of IQ1_S and IQ1_M
 * (declared in quant_iq2.h and gemm.h). IQ2_XXS has its own kernels: gemm_iq2_avx2.c.
 *
 * Per super-block each weight sub-block of 32 is unpacked once into a vector of 32 bytes (grid
 * lookups: four 64-bit grid entries), plus, for IQ2, a vector of +-1 from the sign bits and, for
 * IQ1_M, a vector of +-1 from the shift signs. Then for every token:
 *  IQ2   maddubs(magnitudes, sign(q8, signs)) -> int16 pairs, madd with the sub-block scales
 *        (2*ls + 1; one per 16 elements = per 128-bit lane for IQ2_XS / IQ2_S) -> int32 lanes;
 *  IQ1   sign(q8, grid) = grid * q8 (grid in -1..1), maddubs(1, .) then madd with the scales;
 *        IQ1_M also sums sign(q8, shift signs) the same way, IQ1_S takes its shift term from the
 *        Q8_K bsums.
 * The integer sums are exact (|pair| <= 2*43*127, times 31, times 16 pairs fits int32), and the
 * float steps are the scalar reference's, in its order: results equal e0_vec_dot_*_ref bit for
 * bit, whatever the token count. */
#include <immintrin.h>

#include "quant/gemm.h"
#include "quant/quant_iq2.h"

#define AI static inline __attribute__((always_inline))
#define FP16(h) e0_fp16_to_fp32(h)

enum { T_IQ2_XXS, T_IQ2_XS, /* T_IQ2_XXS: gemm_iq2_avx2.c */ T_IQ2_S, T_IQ1_S, T_IQ1_M };

/* One super-block, unpacked. */
typedef struct {
    __m256i q[8];   /* IQ2: grid magnitudes (u8); IQ1: grid values (i8, -1..1) */
    __m256i sg[8];  /* IQ2: +-1 per element; IQ1_M: +-1 shift sign per element */
    __m256i sc[8];  /* int16 scale per element pair (2*ls + 1) */
    float d;        /* the block's fp16 scale */
    int ls[8];      /* IQ1_S: 2*ls + 1 of each sub-block; */
    int neg[8];     /* IQ1_S: shift sign of each sub-block (1: negative) */
} unpacked;

AI __m256i grid4(const uint64_t *grid, unsigned i0, unsigned i1, unsigned i2, unsigned i3) {
    return _mm256_set_epi64x((long long)grid[i3], (long long)grid[i2], (long long)grid[i1], (long long)grid[i0]);
}

/* +-1 bytes from four sign bytes (byte k of s4 = signs of elements 8k..8k+7; bit set: -1). */
AI __m256i signs_pm1(uint32_t s4) {
    const __m256i spread = _mm256_set_epi64x(0x0303030303030303ll, 0x0202020202020202ll, 0x0101010101010101ll, 0);
    const __m256i bits = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)s4), spread);
    v = _mm256_cmpeq_epi8(_mm256_and_si256(v, bits), bits);
    return _mm256_or_si256(v, _mm256_set1_epi8(1)); /* 0xff (-1) or 0x01 */
}

AI __m256i scales16(int lo, int hi) {
    return _mm256_setr_m128i(_mm_set1_epi16((short)lo), _mm_set1_epi16((short)hi));
}

AI void unpack(const int type, const uint8_t *b, unpacked *u) {
    if (type == T_IQ2_XS) {
        u->d = FP16(e0_rd16(b));
        for (int ib = 0; ib < 8; ib++) {
            uint16_t q[4];
            memcpy(q, b + IQ2XS_QS + 8 * ib, 8);
            u->q[ib] = grid4(e0_iq2xs_grid, q[0] & 511u, q[1] & 511u, q[2] & 511u, q[3] & 511u);
            const uint64_t *sgn = e0_iq2_sign_pm1;
            u->sg[ib] = _mm256_set_epi64x((long long)sgn[q[3] >> 9], (long long)sgn[q[2] >> 9], (long long)sgn[q[1] >> 9],
                                          (long long)sgn[q[0] >> 9]);
            const uint8_t sc = b[IQ2XS_SC + ib];
            u->sc[ib] = scales16(2 * (sc & 0xf) + 1, 2 * (sc >> 4) + 1);
        }
    } else if (type == T_IQ2_S) {
        u->d = FP16(e0_rd16(b));
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *q = b + IQ2S_QS + 4 * ib;
            const unsigned h = b[IQ2S_QH + ib];
            u->q[ib] = grid4(e0_iq2s_grid, q[0] | (h << 8 & 0x300), q[1] | (h << 6 & 0x300), q[2] | (h << 4 & 0x300),
                             q[3] | (h << 2 & 0x300));
            u->sg[ib] = signs_pm1(e0_rd32(b + IQ2S_SIGNS + 4 * ib));
            const uint8_t sc = b[IQ2S_SC + ib];
            u->sc[ib] = scales16(2 * (sc & 0xf) + 1, 2 * (sc >> 4) + 1);
        }
    } else if (type == T_IQ1_S) {
        u->d = FP16(e0_rd16(b));
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *q = b + IQ1S_QS + 4 * ib;
            const unsigned h = e0_rd16(b + IQ1S_QH + 2 * ib);
            u->q[ib] = grid4(e0_iq1s_grid, q[0] | (h << 8 & 0x700), q[1] | (h << 5 & 0x700), q[2] | (h << 2 & 0x700),
                             q[3] | (h >> 1 & 0x700));
            u->ls[ib] = (int)(2 * ((h >> 12) & 7) + 1);
            u->neg[ib] = (int)(h >> 15);
            u->sc[ib] = scales16(u->ls[ib], u->ls[ib]);
        }
    } else { /* T_IQ1_M */
        u->d = FP16(iq1m_d_bits(b + IQ1M_SC));
        uint16_t sw[4];
        memcpy(sw, b + IQ1M_SC, 8);
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *q = b + IQ1M_QS + 4 * ib, *h = b + IQ1M_QH + 2 * ib;
            u->q[ib] = grid4(e0_iq1s_grid, q[0] | ((unsigned)h[0] << 8 & 0x700), q[1] | ((unsigned)h[0] << 4 & 0x700),
                             q[2] | ((unsigned)h[1] << 8 & 0x700), q[3] | ((unsigned)h[1] << 4 & 0x700));
            uint32_t s4 = 0; /* shift sign of each group, as a whole byte */
            s4 |= (h[0] & 0x08) ? 0xffu : 0;
            s4 |= (h[0] & 0x80) ? 0xff00u : 0;
            s4 |= (h[1] & 0x08) ? 0xff0000u : 0;
            s4 |= (h[1] & 0x80) ? 0xff000000u : 0;
            u->sg[ib] = signs_pm1(s4);
            const unsigned w = sw[ib / 2] >> (6 * (ib % 2));
            u->sc[ib] = scales16((int)(2 * (w & 7) + 1), (int)(2 * ((w >> 3) & 7) + 1));
        }
    }
}

AI int hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

/* The float contribution of one unpacked block to one token's running sum, exactly as the
 * scalar reference computes it. */
AI float block_term(const int type, const unpacked *u, const e0_block_q8_K *y, float sumf) {
    const __m256i ones = _mm256_set1_epi8(1);
    __m256i acc = _mm256_setzero_si256(), acc2 = _mm256_setzero_si256();
    for (int ib = 0; ib < 8; ib++) {
        const __m256i q8 = _mm256_loadu_si256((const __m256i *)(y->qs + 32 * ib));
        if (type <= T_IQ2_S) {
            const __m256i p = _mm256_maddubs_epi16(u->q[ib], _mm256_sign_epi8(q8, u->sg[ib]));
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, u->sc[ib]));
        } else {
            const __m256i p = _mm256_maddubs_epi16(ones, _mm256_sign_epi8(q8, u->q[ib]));
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, u->sc[ib]));
            if (type == T_IQ1_M) {
                const __m256i p2 = _mm256_maddubs_epi16(ones, _mm256_sign_epi8(q8, u->sg[ib]));
                acc2 = _mm256_add_epi32(acc2, _mm256_madd_epi16(p2, u->sc[ib]));
            }
        }
    }
    if (type <= T_IQ2_S) {
        const float d = u->d * y->d;
        return sumf + d * hsum_i32(acc);
    }
    if (type == T_IQ1_S) {
        int sumi1 = 0;
        for (int ib = 0; ib < 8; ib++)
            sumi1 += u->ls[ib] * (u->neg[ib] ? -1 : 1) * (y->bsums[2 * ib] + y->bsums[2 * ib + 1]);
        return sumf + u->d * y->d * (hsum_i32(acc) + E0_IQ1_DELTA * sumi1);
    }
    return sumf + u->d * y->d * (hsum_i32(acc) + E0_IQ1_DELTA * hsum_i32(acc2));
}

AI size_t bsize_of(const int type) {
    return type == T_IQ2_XXS ? IQ2XXS_SIZE : type == T_IQ2_XS ? IQ2XS_SIZE : type == T_IQ2_S ? IQ2S_SIZE
                                                                                      : type == T_IQ1_S ? IQ1S_SIZE : IQ1M_SIZE;
}
AI float finish(const int type, float sumf) { return type <= T_IQ2_S ? 0.125f * sumf : sumf; }

AI void dot_n(const int type, int64_t n, const int nt, float *s, size_t s_stride, const uint8_t *w, const uint8_t *a,
              size_t a_stride) {
    const size_t bs = bsize_of(type);
    float sumf[E0_GEMM_TOKENS] = {0};
    for (int64_t i = 0; i < n / QK_K; i++) {
        e0_prefetch_bytes(w + (i + E0_PREFETCH_BLOCKS) * bs, (unsigned)bs);
        unpacked u;
        unpack(type, w + i * bs, &u);
        for (int t = 0; t < nt; t++)
            sumf[t] = block_term(type, &u, (const e0_block_q8_K *)(a + t * a_stride) + i, sumf[t]);
    }
    for (int t = 0; t < nt; t++) s[t * s_stride] = finish(type, sumf[t]);
}

#define DOTS(name, T)                                                                                                  \
    void e0_vec_dot_##name##_avx2(int64_t n, float *s, const void *w, const void *a) { dot_n(T, n, 1, s, 1, w, a, 0); }
DOTS(iq2_xs, T_IQ2_XS)
DOTS(iq2_s, T_IQ2_S)
DOTS(iq1_s, T_IQ1_S)
DOTS(iq1_m, T_IQ1_M)

#define DOTS4(name, T)                                                                                                 \
    void e0_vec_dot_4_##name##_avx2(int64_t n, float *s, size_t s_stride, const void *w, const void *a, size_t a_stride) { \
        dot_n(T, n, E0_DOT_TOKENS, s, s_stride, w, a, a_stride);                                                        \
    }
DOTS4(iq1_s, T_IQ1_S)
DOTS4(iq1_m, T_IQ1_M)

/* GEMM: each row's blocks are unpacked once for all nt tokens (row by row: the unpacked block
 * is 800 bytes, the token rows stay in L1/L2 across rows). */
#define GEMM(name, T)                                                                                                  \
    void e0_gemm_##name##_avx2(int64_t n, int n_rows, const void *w, size_t w_stride, int nt, const void *a,          \
                               size_t a_stride, float *s, size_t s_stride) {                                          \
        for (int r = 0; r < n_rows; r++)                                                                               \
            dot_n(T, n, nt, s + r, s_stride, (const uint8_t *)w + r * w_stride, a, a_stride);                          \
    }
GEMM(iq1_s, T_IQ1_S)
GEMM(iq1_m, T_IQ1_M)
