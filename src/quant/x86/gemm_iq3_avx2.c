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
#include <stddef.h>

#include "quant/gemm.h"
#include "quant/x86/gemm_simd.h"
#include "quant/x86/quant_iq3_simd.h"

#define MAXT E0_GEMM_TOKENS
_Static_assert(MAXT % 8 == 0, "the tokens' scale products are formed 8 to a vector");
#define MAXR E0_GEMM_ROWS

/* Sub-block ib of the block at x -> grid magnitudes, signs, scale (quant_iq3_simd.h). */
typedef void iq3_unpack_fn(const uint8_t *x, int ib, __m256i *grid, __m256i *signs, __m256i *scale);

/* Block x of one row against nt tokens (yd: their scales y.d for this block, zero past nt up to a
 * multiple of 8; q8 of token t at q8 + t * a_stride): acc[t] += (x.d * y.d) * the exact int32
 * lane sums of vec_dot. */
static inline __attribute__((always_inline)) void iq3_row_block(const uint8_t *x, int nt, const float *yd, const uint8_t *q8,
                                                                 size_t a_stride, iq3_unpack_fn *unpack, __m256 *acc) {
    __m256i sg[8], sc[8], u[8];
    float d[MAXT];
    for (int t8 = 0; t8 < nt; t8 += 8) /* y.d * x.d, 8 tokens a vector (lanes past nt: yd's zeros) */
        _mm256_storeu_ps(d + t8, _mm256_mul_ps(_mm256_loadu_ps(yd + t8), _mm256_set1_ps(h2f(x))));
    #pragma GCC unroll 8
    for (int j = 0; j < 8; j++) unpack(x, j, &u[j], &sg[j], &sc[j]);
    IN_MEMORY(sg);
    IN_MEMORY(sc);
    for (int t = 0; t < nt; t++, q8 += a_stride) {
        __m256i sum = _mm256_setzero_si256();
        #pragma GCC unroll 8
        for (int j = 0; j < 8; j++) sum = _mm256_add_epi32(sum, iq3_dot32(u[j], sg[j], sc[j], (const int8_t *)q8 + 32 * j));
        acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d[t]), _mm256_cvtepi32_ps(sum), acc[t]);
    }
}

#define TB 16 /* blocks of token scales made at a time when the rows go one at a time */

/* The GEMM of nt <= MAXT tokens over blocks of block_size bytes unpacked by unpack (inlined: a
 * constant at both call sites), in the two loop orders of x86/simd.h ("GEMMs with few tokens"):
 * with many tokens super-block i of every row, then i + 1 (prefetch: whether to prefetch the
 * row's weight blocks ahead), with few the rows one at a time over TB blocks. out_scale
 * multiplies each (row, token) sum (1 or IQ3_XXS's 0.25, exact either way). */
static inline __attribute__((always_inline)) void gemm_iq3(int64_t n, int nr, const uint8_t *w, size_t w_stride, int nt,
                                                            const uint8_t *a, size_t a_stride, float *s, size_t s_stride,
                                                            size_t block_size, iq3_unpack_fn *unpack, int prefetch,
                                                            float out_scale) {
    const int64_t nb = n / QK_K;
    const uint8_t *q8 = a + offsetof(e0_block_q8_K, qs); /* token 0's activations of block 0 */
    __m256 acc[MAXR][MAXT];
    for (int r = 0; r < nr; r++)
        zero_acc(acc[r], nt);
    if (nt <= GEMM_ROW1_NT) {
        float yd[TB][GEMM_ROW1_NT];
        for (int64_t i0 = 0; i0 < nb; i0 += TB) {
            const int64_t nbc = nb - i0 < TB ? nb - i0 : TB;
            for (int64_t i = 0; i < nbc; i++) q8_K_token_scales(a, a_stride, nt, i0 + i, yd[i]);
            for (int r = 0; r < nr; r++)
                for (int64_t i = 0; i < nbc; i++) {
                    prefetch_lines(w + (size_t)(r + GEMM_AHEAD) * w_stride + (size_t)(i0 + i) * block_size, block_size);
                    iq3_row_block(w + (size_t)r * w_stride + (size_t)(i0 + i) * block_size, nt, yd[i],
                                  q8 + (size_t)(i0 + i) * sizeof(e0_block_q8_K), a_stride, unpack, acc[r]);
                }
        }
    } else {
        float yd[MAXT];
        for (int64_t i = 0; i < nb; i++) {
            q8_K_token_scales(a, a_stride, nt, i, yd);
            for (int r = 0; r < nr; r++) {
                const uint8_t *x = w + (size_t)r * w_stride + (size_t)i * block_size;
                if (prefetch) e0_prefetch_bytes(x + E0_PREFETCH_BLOCKS * block_size, block_size);
                iq3_row_block(x, nt, yd, q8 + (size_t)i * sizeof(e0_block_q8_K), a_stride, unpack, acc[r]);
            }
        }
    }
    int r = 0;
    for (; r + 8 <= nr; r += 8) /* 8 rows to a store (gemm_simd.h) */
        for (int t = 0; t < nt; t++)
            _mm256_storeu_ps(&s[(size_t)r + (size_t)t * s_stride], _mm256_mul_ps(_mm256_set1_ps(out_scale), hsum_8rows(acc[r], MAXT, t)));
    for (; r < nr; r++)
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
