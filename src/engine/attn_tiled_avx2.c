/* attn_tiled_avx2.c — AVX2 + FMA kernels of the tiled prefill attention (attn_tiled.h; the scalar
 * references are in attn_tiled.c): the two small matrix products of a key block, and exp over a
 * row of scores. Scores: tiles of 8 keys x 8 query rows (a row per lane, the keys broadcast from
 * their rows, so no key is ever transposed); P V: tiles of up to 6 rows x 16 columns (12
 * accumulators).
 * They differ from the scalar kernels only by rounding: an FMA rounds once where the scalar code
 * multiplies and adds, and exp is a polynomial (Cephes' expf: within 2 ulp of libm's expf). */
#include <immintrin.h>
#include <math.h>

#include "engine/attn_tiled.h"
#include "engine/attn_simd.h"

#define MR 6 /* rows of a P V register tile */
/* The tile loops are unrolled completely so that the 12 accumulators live in registers: left to
 * itself GCC -O2 kept acc[][] on the stack (a load, FMA and store per product: ~3x slower). */
#define UNROLL _Pragma("GCC unroll 8")

/* S rows r0 .. r0 + nrow (<= 8), columns j .. j + 8 = scale * Q . K^T: one accumulator per key,
 * its lanes the 8 query rows (QT [d][ldq]), one FMA per d in order of d with the key's value
 * broadcast; then transposed into S's rows. Each S [r][j] is the chain q[r][0] k[j][0], + q[r][1]
 * k[j][1], ... whatever the tile, so a row's scores do not depend on its neighbours. */
static inline __attribute__((always_inline)) void scores_tile(const float *QT, int ldq, int64_t hd, const float *K, int j,
                                                              int r0, int nrow, float scale, float *S, int lds) {
    /* eight named accumulators: an array here was kept on the stack by GCC 12 (a store after
     * every FMA: the decode items' scores ran at a third of the FMA rate) */
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    const float *k = K + (size_t)j * hd;
    for (int64_t d = 0; d < hd; d++) {
        const __m256 q = _mm256_loadu_ps(QT + (size_t)d * ldq + r0);
        const float *kd = k + d;
        a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(kd), q, a0);
        a1 = _mm256_fmadd_ps(_mm256_broadcast_ss(kd + hd), q, a1);
        a2 = _mm256_fmadd_ps(_mm256_broadcast_ss(kd + 2 * hd), q, a2);
        a3 = _mm256_fmadd_ps(_mm256_broadcast_ss(kd + 3 * hd), q, a3);
        a4 = _mm256_fmadd_ps(_mm256_broadcast_ss(kd + 4 * hd), q, a4);
        a5 = _mm256_fmadd_ps(_mm256_broadcast_ss(kd + 5 * hd), q, a5);
        a6 = _mm256_fmadd_ps(_mm256_broadcast_ss(kd + 6 * hd), q, a6);
        a7 = _mm256_fmadd_ps(_mm256_broadcast_ss(kd + 7 * hd), q, a7);
    }
    const __m256 sc = _mm256_set1_ps(scale);
    const __m256 acc[8] = {_mm256_mul_ps(a0, sc), _mm256_mul_ps(a1, sc), _mm256_mul_ps(a2, sc), _mm256_mul_ps(a3, sc),
                           _mm256_mul_ps(a4, sc), _mm256_mul_ps(a5, sc), _mm256_mul_ps(a6, sc), _mm256_mul_ps(a7, sc)};
    attn_store_transposed(acc, S + (size_t)r0 * lds + j, lds, nrow);
}

void e0_attn_scores_avx2(const float *QT, int ldq, int nr, int64_t hd, const float *K, int nk8, float scale, float *S, int lds) {
    for (int r0 = 0; r0 < nr; r0 += 8)
        for (int j = 0; j < nk8; j += 8) scores_tile(QT, ldq, hd, K, j, r0, nr - r0 < 8 ? nr - r0 : 8, scale, S, lds);
}

/* O [nr][hd] columns c .. c + 8 nv += P [nr][ldk] (columns 0 .. nk8) . V [nk8][hd] */
static inline __attribute__((always_inline)) void pv_tile(const float *P, int ldk, int nk8, const float *V, int64_t hd,
                                                          int64_t c, float *O, const int nr, const int nv) {
    __m256 acc[MR][2];
    UNROLL for (int r = 0; r < nr; r++)
        UNROLL for (int v = 0; v < nv; v++) acc[r][v] = _mm256_loadu_ps(O + (size_t)r * hd + c + 8 * v);
    for (int j = 0; j < nk8; j++) {
        __m256 x[2];
        UNROLL for (int v = 0; v < nv; v++) x[v] = _mm256_loadu_ps(V + (size_t)j * hd + c + 8 * v);
        UNROLL for (int r = 0; r < nr; r++) {
            const __m256 p = _mm256_broadcast_ss(P + (size_t)r * ldk + j);
            UNROLL for (int v = 0; v < nv; v++) acc[r][v] = _mm256_fmadd_ps(p, x[v], acc[r][v]);
        }
    }
    UNROLL for (int r = 0; r < nr; r++)
        UNROLL for (int v = 0; v < nv; v++) _mm256_storeu_ps(O + (size_t)r * hd + c + 8 * v, acc[r][v]);
}

static inline __attribute__((always_inline)) void pv_rows(const float *P, int ldk, int nk8, const float *V, int64_t hd,
                                                          float *O, const int nr) {
    int64_t c = 0;
    for (; c + 16 <= hd; c += 16) pv_tile(P, ldk, nk8, V, hd, c, O, nr, 2);
    if (c < hd) pv_tile(P, ldk, nk8, V, hd, c, O, nr, 1);
}

void e0_attn_pv_avx2(const float *P, int nr, int ldk, int nk8, const float *V, int64_t hd, float *O) {
    int r = 0;
    for (; r + MR <= nr; r += MR) pv_rows(P + (size_t)r * ldk, ldk, nk8, V, hd, O + (size_t)r * hd, MR);
    const float *p = P + (size_t)r * ldk;
    float *o = O + (size_t)r * hd;
    switch (nr - r) {
    case 5: pv_rows(p, ldk, nk8, V, hd, o, 5); break;
    case 4: pv_rows(p, ldk, nk8, V, hd, o, 4); break;
    case 3: pv_rows(p, ldk, nk8, V, hd, o, 3); break;
    case 2: pv_rows(p, ldk, nk8, V, hd, o, 2); break;
    case 1: pv_rows(p, ldk, nk8, V, hd, o, 1); break;
    default: break;
    }
}

/* Masked columns get -inf by a blend on the column index; the max is exact in any order (only the
 * sign of a zero max may differ from the scalar loop's, and exp(s - m) is the same for both). */
float e0_attn_mask_max_avx2(float *s, int n, int lo, int hi) {
    if (lo < 0) lo = 0; /* the same columns: j is in 0 .. n */
    if (hi > n) hi = n;
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    const __m256i vlo = _mm256_set1_epi32(lo - 1), vhi = _mm256_set1_epi32(hi + 1);
    __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256 mx = ninf;
    int j = 0;
    for (; j + 8 <= n; j += 8) {
        /* visible: lo - 1 < j < hi + 1 */
        const __m256i vis = _mm256_and_si256(_mm256_cmpgt_epi32(idx, vlo), _mm256_cmpgt_epi32(vhi, idx));
        const __m256 x = _mm256_blendv_ps(ninf, _mm256_loadu_ps(s + j), _mm256_castsi256_ps(vis));
        _mm256_storeu_ps(s + j, x);
        mx = _mm256_max_ps(x, mx); /* a NaN x keeps mx, as the scalar comparison does */
        idx = _mm256_add_epi32(idx, _mm256_set1_epi32(8));
    }
    float m[8];
    _mm256_storeu_ps(m, mx);
    float r = -INFINITY;
    for (int k = 0; k < 8; k++)
        if (m[k] > r) r = m[k];
    for (; j < n; j++) { /* n is a multiple of 8 in the tiled path; any n works */
        if (j < lo || j > hi) s[j] = -INFINITY;
        else if (s[j] > r) r = s[j];
    }
    return r;
}

void e0_attn_scale_avx2(float *x, int n, float c, bool round_f16) {
    const __m256 cv = _mm256_set1_ps(c);
    int i = 0;
    if (round_f16)
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(x + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_mul_ps(_mm256_loadu_ps(x + i), cv),
                                                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
    else
        for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), cv));
    for (; i < n; i++) { /* n is a multiple of 8 in the tiled path; any n works */
        float t[8] = {0};
        t[0] = x[i] * c;
        __m256 v = _mm256_loadu_ps(t);
        if (round_f16) v = _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        x[i] = _mm256_cvtss_f32(v);
    }
}

/* exp(x) for 8 floats: x = n ln2 + f (|f| <= ln2 / 2, ln2 in two parts), exp(f) by Cephes' degree
 * 7 polynomial, times 2^n from the exponent bits; x below -87.33 (where 2^n would leave the normal
 * range; -inf included) gives 0, x above 88 is clamped. */
static inline __m256 exp8(__m256 x) {
    const __m256 zero_below = _mm256_cmp_ps(x, _mm256_set1_ps(-87.33654475f), _CMP_LT_OQ);
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.33654475f)), _mm256_set1_ps(88.0f));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 f = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    f = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), f);
    __m256 y = _mm256_set1_ps(1.9875691500e-4f);
    y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(1.3981999507e-3f));
    y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(8.3334519073e-3f));
    y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(4.1665795894e-2f));
    y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(1.6666665459e-1f));
    y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(5.0000001201e-1f));
    y = _mm256_fmadd_ps(y, _mm256_mul_ps(f, f), _mm256_add_ps(f, _mm256_set1_ps(1.0f)));
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    y = _mm256_mul_ps(y, _mm256_castsi256_ps(e));
    return _mm256_andnot_ps(zero_below, y);
}

float e0_attn_exp_sum_avx2(float *x, int n, float m) {
    const __m256 mv = _mm256_set1_ps(m);
    __m256 sum = _mm256_setzero_ps();
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 y = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), mv));
        _mm256_storeu_ps(x + i, y);
        sum = _mm256_add_ps(sum, y);
    }
    float s[8];
    _mm256_storeu_ps(s, sum);
    float total = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
    for (; i < n; i++) { /* n is a multiple of 8 in the tiled path; any n works */
        float t[8] = {0};
        t[0] = x[i] - m;
        _mm256_storeu_ps(t, exp8(_mm256_loadu_ps(t)));
        total += x[i] = t[0];
    }
    return total;
}

void e0_attn_expf_avx2(const float *x, float *y, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, exp8(_mm256_loadu_ps(x + i)));
    for (; i < n; i++) {
        float t[8] = {0};
        t[0] = x[i];
        _mm256_storeu_ps(t, exp8(_mm256_loadu_ps(t)));
        y[i] = t[0];
    }
}
