/* gemm_iq3_avx2.c — the prefill GEMM of IQ3_S (e0_gemm_fn, see kernel.h: up to E0_GEMM_ROWS
 * rows x E0_GEMM_TOKENS tokens, Q8_K activations) and its 4-token dot (the GEMM with one row).
 * Declared in gemm.h and quant_iq3.h.
 *
 * The scheme of e0_vec_dot_iq3_s_avx2 (quant_iq3_avx2.c, unpacking in quant_iq3_simd.h): per row
 * and super-block the 8 sub-blocks are unpacked once (grid magnitudes in registers, signs and
 * scales in a stack buffer used as memory operands) and every token's activations stream past
 * them; per (row, token) the exact int32 lane sums are those of vec_dot, scaled with the same
 * fma into the same 8 float lanes (d = x.d * y.d), summed at the end in hsum_ps's order. So
 * every (row, token) result is bit-identical to vec_dot (tests/test_gemm.c checks with memcmp). */
#include "quant/gemm.h"
#include "quant/x86/quant_iq3_simd.h"

#define MAXT E0_GEMM_TOKENS
_Static_assert(MAXT % 8 == 0, "the tokens' scale products are formed 8 to a vector");
#define MAXR E0_GEMM_ROWS

/* Makes the compiler treat buffer p as read and written here: the sign and scale vectors stay
 * in memory (memory operands) rather than taking registers the grid vectors need. */
#define IN_MEMORY(p) __asm__ volatile("" : : "r"(p) : "memory")

void e0_gemm_iq3_s_avx2(int64_t n, int nr, const void *vw, size_t w_stride, int nt, const void *va, size_t a_stride,
                        float *s, size_t s_stride) {
    const uint8_t *w = vw, *a = va;
    __m256 acc[MAXR][MAXT];
    __m256i sg[8], sc[8];
    float yd[MAXT] = {0}, d[MAXT];
    if (nt > MAXT) { /* beyond the contract: in groups of MAXT */
        for (int t0 = 0; t0 < nt; t0 += MAXT)
            e0_gemm_iq3_s_avx2(n, nr, vw, w_stride, nt - t0 < MAXT ? nt - t0 : MAXT, a + (size_t)t0 * a_stride, a_stride,
                               s + (size_t)t0 * s_stride, s_stride);
        return;
    }
    for (int r = 0; r < nr; r++)
        for (int t = 0; t < nt; t++) acc[r][t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        for (int t = 0; t < nt; t++) yd[t] = ((const e0_block_q8_K *)(a + (size_t)t * a_stride) + i)->d;
        for (int r = 0; r < nr; r++) {
            const uint8_t *x = w + (size_t)r * w_stride + (size_t)i * IQ3_S_SIZE;
            e0_prefetch_bytes(x + E0_PREFETCH_BLOCKS * IQ3_S_SIZE, IQ3_S_SIZE);
            for (int t8 = 0; t8 < nt; t8 += 8) /* y.d * x.d, 8 tokens a vector (lanes past nt: yd's zeros) */
                _mm256_storeu_ps(d + t8, _mm256_mul_ps(_mm256_loadu_ps(yd + t8), _mm256_set1_ps(h2f(x))));
            __m256i u[8];
            #pragma GCC unroll 8
            for (int j = 0; j < 8; j++) iq3_s_unpack(x, j, &u[j], &sg[j], &sc[j]);
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
        for (int t = 0; t < nt; t++) s[(size_t)r + (size_t)t * s_stride] = hsum_ps(acc[r][t]);
}

void e0_vec_dot_4_iq3_s_avx2(int64_t n, float *s, size_t s_stride, const void *w, const void *a, size_t a_stride) {
    e0_gemm_iq3_s_avx2(n, 1, w, 0, E0_DOT_TOKENS, a, a_stride, s, s_stride);
}
