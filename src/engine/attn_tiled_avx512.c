/* attn_tiled_avx512.c — AVX-512 forms of attn_tiled_avx2.c's two matrix products of a key block
 * (attn_tiled.h): scores in tiles of 8 keys x 16 query rows (a row per lane), P V in tiles of up to
 * 8 query rows x 32 columns (16 accumulators), a masked vector for a last 8 columns. Every output element is the same chain as in the
 * AVX2 kernels (one FMA per d, or per key j, in the same order, then the same scaling), so the
 * two give the same bits (tests/test_attn_tiled.c). */
#include <immintrin.h>

#include "engine/attn_simd.h"
#include "engine/attn_tiled.h"

#define MR 8 /* rows of a P V register tile */
#define UNROLL _Pragma("GCC unroll 8")

/* The lanes of column vector v of a tile whose last vector may hold only 8 columns. */
static inline __mmask16 lanes(int v, int nv, int half) { return v == nv - 1 && half ? (__mmask16)0x00FF : (__mmask16)0xFFFF; }

/* S rows r0 .. r0 + nrow (9 .. 16), columns j .. j + 8 = scale * Q . K^T: attn_tiled_avx2.c's tile with 16
 * query rows a vector (the same chain per score), its two halves transposed as there. */
static inline __attribute__((always_inline)) void scores_tile(const float *QT, int ldq, int64_t hd, const float *K, int j,
                                                              int r0, int nrow, float scale, float *S, int lds) {
    __m512 acc[8];
    UNROLL for (int i = 0; i < 8; i++) acc[i] = _mm512_setzero_ps();
    const float *k = K + (size_t)j * hd;
    for (int64_t d = 0; d < hd; d++) {
        const __m512 q = _mm512_loadu_ps(QT + (size_t)d * ldq + r0);
        UNROLL for (int i = 0; i < 8; i++) acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(k[(size_t)i * hd + d]), q, acc[i]);
    }
    const __m512 sc = _mm512_set1_ps(scale);
    __m256 lo[8], hi[8];
    UNROLL for (int i = 0; i < 8; i++) {
        const __m512 x = _mm512_mul_ps(acc[i], sc);
        lo[i] = _mm512_castps512_ps256(x);
        hi[i] = _mm512_extractf32x8_ps(x, 1);
    }
    attn_store_transposed(lo, S + (size_t)r0 * lds + j, lds, 8);
    attn_store_transposed(hi, S + (size_t)(r0 + 8) * lds + j, lds, nrow - 8);
}

/* Groups of 16 rows here; the last 1 .. 8 rows (a decode item's 8, say) in AVX2's 8-row tiles. */
void e0_attn_scores_avx512(const float *QT, int ldq, int nr, int64_t hd, const float *K, int nk8, float scale, float *S, int lds) {
    int r0 = 0;
    for (; nr - r0 > 8; r0 += 16)
        for (int j = 0; j < nk8; j += 8) scores_tile(QT, ldq, hd, K, j, r0, nr - r0 < 16 ? nr - r0 : 16, scale, S, lds);
    if (r0 < nr) e0_attn_scores_avx2(QT + r0, ldq, nr - r0, hd, K, nk8, scale, S + (size_t)r0 * lds, lds);
}

/* O [nr][hd] columns c .. c + 16 nv (the last vector 8 wide when half) += P [nr][ldk] . V [nk8][hd] */
static inline __attribute__((always_inline)) void pv_tile(const float *P, int ldk, int nk8, const float *V, int64_t hd,
                                                          int64_t c, float *O, const int nr, const int nv, const int half) {
    __m512 acc[MR][2];
    UNROLL for (int r = 0; r < nr; r++)
        UNROLL for (int v = 0; v < nv; v++) acc[r][v] = _mm512_maskz_loadu_ps(lanes(v, nv, half), O + (size_t)r * hd + c + 16 * v);
    for (int j = 0; j < nk8; j++) {
        __m512 x[2];
        UNROLL for (int v = 0; v < nv; v++) x[v] = _mm512_maskz_loadu_ps(lanes(v, nv, half), V + (size_t)j * hd + c + 16 * v);
        UNROLL for (int r = 0; r < nr; r++) {
            const __m512 p = _mm512_set1_ps(P[(size_t)r * ldk + j]);
            UNROLL for (int v = 0; v < nv; v++) acc[r][v] = _mm512_fmadd_ps(p, x[v], acc[r][v]);
        }
    }
    UNROLL for (int r = 0; r < nr; r++)
        UNROLL for (int v = 0; v < nv; v++) _mm512_mask_storeu_ps(O + (size_t)r * hd + c + 16 * v, lanes(v, nv, half), acc[r][v]);
}

static inline __attribute__((always_inline)) void pv_rows(const float *P, int ldk, int nk8, const float *V, int64_t hd,
                                                          float *O, const int nr) {
    int64_t c = 0;
    for (; c + 32 <= hd; c += 32) pv_tile(P, ldk, nk8, V, hd, c, O, nr, 2, 0);
    const int64_t left = hd - c; /* 0, 8, 16 or 24 (hd % 8 == 0) */
    if (left == 24) pv_tile(P, ldk, nk8, V, hd, c, O, nr, 2, 1);
    else if (left == 16) pv_tile(P, ldk, nk8, V, hd, c, O, nr, 1, 0);
    else if (left == 8) pv_tile(P, ldk, nk8, V, hd, c, O, nr, 1, 1);
}

void e0_attn_pv_avx512(const float *P, int nr, int ldk, int nk8, const float *V, int64_t hd, float *O) {
    int r = 0;
    for (; r + MR <= nr; r += MR) pv_rows(P + (size_t)r * ldk, ldk, nk8, V, hd, O + (size_t)r * hd, MR);
    const float *p = P + (size_t)r * ldk;
    float *o = O + (size_t)r * hd;
    switch (nr - r) {
    case 7: pv_rows(p, ldk, nk8, V, hd, o, 7); break;
    case 6: pv_rows(p, ldk, nk8, V, hd, o, 6); break;
    case 5: pv_rows(p, ldk, nk8, V, hd, o, 5); break;
    case 4: pv_rows(p, ldk, nk8, V, hd, o, 4); break;
    case 3: pv_rows(p, ldk, nk8, V, hd, o, 3); break;
    case 2: pv_rows(p, ldk, nk8, V, hd, o, 2); break;
    case 1: pv_rows(p, ldk, nk8, V, hd, o, 1); break;
    default: break;
    }
}
