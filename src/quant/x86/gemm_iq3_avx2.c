/* gemm_iq3_avx2.c — the prefill GEMMs of IQ3_XXS and IQ3_S (e0_gemm_fn, see kernel.h: up to
 * E0_GEMM_ROWS rows x E0_GEMM_TOKENS tokens, Q8_K activations) and the 4-token IQ3_S dot (the
 * GEMM with one row). Declared in gemm.h and quant_iq3.h.
 *
 * The scheme of e0_vec_dot_iq3_{xxs,s}_avx2 (quant_iq3_avx2.c, unpacking in quant_iq3_simd.h):
 * per row and super-block the 8 sub-blocks are unpacked once (grid magnitudes in registers, signs
 * and scales in a stack buffer used as memory operands) and every token's activations stream past
 * them; per (row, token) the exact int32 lane sums are those of vec_dot, scaled with the same
 * fma into the same 8 float lanes (d = x.d * y.d), summed at the end in hsum_ps's order (times
 * 0.25 for IQ3_XXS, as its vec_dot). So every (row, token) result is bit-identical to vec_dot
 * (tests/test_gemm.c checks with memcmp). The two types differ only in the block (size and
 * unpacking), both given to one inlined loop, gemm_iq3. */
#include "quant/gemm.h"
#include "quant/x86/quant_iq3_simd.h"

#define MAXT E0_GEMM_TOKENS
_Static_assert(MAXT % 8 == 0, "the tokens' scale products are formed 8 to a vector");
#define MAXR E0_GEMM_ROWS

/* Sub-block ib of the block at x -> grid magnitudes, signs, scale (quant_iq3_simd.h). */
typedef void iq3_unpack_fn(const uint8_t *x, int ib, __m256i *grid, __m256i *signs, __m256i *scale);

/* The GEMM of nt <= MAXT tokens over blocks of block_size bytes unpacked by unpack (inlined: a
 * constant at both call sites); prefetch: whether to prefetch the weight blocks ahead; out_scale
 * multiplies each (row, token) sum (1 or IQ3_XXS's 0.25, exact either way). */
static inline __attribute__((always_inline)) void gemm_iq3(int64_t n, int nr, const uint8_t *w, size_t w_stride, int nt,
                                                            const uint8_t *a, size_t a_stride, float *s, size_t s_stride,
                                                            size_t block_size, iq3_unpack_fn *unpack, int prefetch,
                                                            float out_scale) {
    __m256 acc[MAXR][MAXT];
    __m256i sg[8], sc[8];
    float yd[MAXT] = {0}, d[MAXT];
    for (int r = 0; r < nr; r++)
        zero_acc(acc[r], nt);
    for (int64_t i = 0; i < n / QK_K; i++) {
        for (int t = 0; t < nt; t++) yd[t] = ((const e0_block_q8_K *)(a + (size_t)t * a_stride) + i)->d;
        for (int r = 0; r < nr; r++) {
            const uint8_t *x = w + (size_t)r * w_stride + (size_t)i * block_size;
            if (prefetch) e0_prefetch_bytes(x + E0_PREFETCH_BLOCKS * block_size, block_size);
            for (int t8 = 0; t8 < nt; t8 += 8) /* y.d * x.d, 8 tokens a vector (lanes past nt: yd's zeros) */
                _mm256_storeu_ps(d + t8, _mm256_mul_ps(_mm256_loadu_ps(yd + t8), _mm256_set1_ps(h2f(x))));
            __m256i u[8];
            #pragma GCC unroll 8
            for (int j = 0; j < 8; j++) unpack(x, j, &u[j], &sg[j], &sc[j]);
            IN_MEMORY(sg);
            IN_MEMORY(sc);
            for (int t = 0; t < nt; t++) {
                const int8_t *q8 = ((const e0_block_q8_K *)(a + (size_t)t * a_stride) + i)->qs;
                __m256i sum = _mm256_setzero_si256();
                #pragma GCC unroll 8
                for (int j = 0; j < 8; j++) sum = _mm256_add_epi32(sum, iq3_dot32(u[j], sg[j], sc[j], q8 + 32 * j));
                acc[r][t] = _mm256_fmadd_ps(_mm256_set1_ps(d[t]), _mm256_cvtepi32_ps(sum), acc[r][t]);
            }
        }
    }
    for (int r = 0; r < nr; r++)
        for (int t = 0; t < nt; t++) s[(size_t)r + (size_t)t * s_stride] = out_scale * hsum_ps(acc[r][t]);
}

void e0_gemm_iq3_xxs_avx2(int64_t n, int nr, const void *w, size_t w_stride, int nt, const void *a, size_t a_stride,
                          float *s, size_t s_stride) {
    gemm_iq3(n, nr, w, w_stride, nt, a, a_stride, s, s_stride, IQ3_XXS_SIZE, iq3_xxs_unpack, 0, 0.25f);
}

void e0_gemm_iq3_s_avx2(int64_t n, int nr, const void *w, size_t w_stride, int nt, const void *va, size_t a_stride,
                        float *s, size_t s_stride) {
    const uint8_t *a = va;
    if (nt > MAXT) { /* beyond the contract: in groups of MAXT */
        for (int t0 = 0; t0 < nt; t0 += MAXT)
            e0_gemm_iq3_s_avx2(n, nr, w, w_stride, nt - t0 < MAXT ? nt - t0 : MAXT, a + (size_t)t0 * a_stride, a_stride,
                               s + (size_t)t0 * s_stride, s_stride);
        return;
    }
    gemm_iq3(n, nr, w, w_stride, nt, a, a_stride, s, s_stride, IQ3_S_SIZE, iq3_s_unpack, 1, 1.0f);
}

void e0_vec_dot_4_iq3_s_avx2(int64_t n, float *s, size_t s_stride, const void *w, const void *a, size_t a_stride) {
    e0_gemm_iq3_s_avx2(n, 1, w, 0, E0_DOT_TOKENS, a, a_stride, s, s_stride);
}
