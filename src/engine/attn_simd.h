/* attn_simd.h — the score tile of the tiled attention's AVX2 and AVX-512 kernels
 * (attn_tiled_avx2.c, attn_tiled_avx512.c; include only where AVX2 + FMA are enabled): the 8 x 8
 * transpose that turns a tile's key vectors (lanes: query rows) into rows of S. */
#ifndef E0_ATTN_SIMD_H
#define E0_ATTN_SIMD_H

#include <immintrin.h>

/* S rows 0 .. nrow (<= 8) at stride lds, columns 0 .. 8 = x[i] lane r -> S [r][i]. */
static inline __attribute__((always_inline)) void attn_store_transposed(const __m256 x[8], float *S, int lds, int nrow) {
    __m256 t[8], u[8];
    for (int i = 0; i < 8; i += 2) t[i] = _mm256_unpacklo_ps(x[i], x[i + 1]), t[i + 1] = _mm256_unpackhi_ps(x[i], x[i + 1]);
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    /* u[i] low lane: row i of keys 0..3, high lane: row i + 4 of keys 0..3; u[i + 4]: keys 4..7 */
    for (int i = 0; i < 4; i++) {
        if (i < nrow) _mm256_storeu_ps(S + (size_t)i * lds, _mm256_permute2f128_ps(u[i], u[i + 4], 0x20));
        if (i + 4 < nrow) _mm256_storeu_ps(S + (size_t)(i + 4) * lds, _mm256_permute2f128_ps(u[i], u[i + 4], 0x31));
    }
}

#endif
