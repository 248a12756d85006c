/* test_quant_kx.c — q4_K and q6_K repacked at load (q4_KX / Q8_KX, q6_KX / Q8_KP;
 * quant/quant_kx.h): the permutations are bijections that put every word of a vector in one
 * sub-block, repacking round-trips, dequantization equals that of the original blocks, the
 * activation quantizers (reference and AVX2) write the same bytes and permute Q8_K's, every
 * repacked dot (scalar and SIMD) is the plain type's reference within float rounding on
 * quantized, random and extreme blocks, q6_KX's AVX2 dot gives the plain q6_K AVX2 dot's bits,
 * and at the AVX2 level e0_repack_type / e0_repack change only q4_K and q6_K. (GEMM =
 * dot bit for bit: tests/test_gemm.c.) */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant.h"
#include "quant/quant_k.h"
#include "quant/quant_kx.h"
#include "t.h"

#define T_RNG_SEED 0x51ED2701A4C3B5E9ull
#include "t_rand.h"

static void test_permutation(void) {
    /* q6_KX: natural vectors 2m, 2m+1 of a half paired word by word in every 32-bit lane */
    for (int c = 0; c < 2; c++) {
        int seen[QK_K] = {0};
        for (int g = 0; g < 4; g++)
            for (int p = 0; p < 32; p++) {
                const int v = kp_natural(c, g, p), nat_vec = (v % 128) / 32, nat_byte = v % 32;
                CHECKF(v >= 128 * c && v < 128 * c + 128, "q6 half %d vector %d byte %d -> %d", c, g, p, v);
                if (v >= 0 && v < QK_K) seen[v]++;
                CHECKF(nat_vec == 2 * (g / 2) + (p % 4) / 2, "q6 half %d vector %d byte %d from vector %d", c, g, p, nat_vec);
                /* the same 16-value lane (sub-block), and A/B = the low/high word of the 32-bit lane */
                CHECKF(nat_byte / 16 == p / 16 && nat_byte / 4 == p / 4 && (nat_byte % 4) / 2 == g % 2,
                       "q6 half %d vector %d byte %d from byte %d", c, g, p, nat_byte);
            }
        for (int v = 128 * c; v < 128 * c + 128; v++) CHECKF(seen[v] == 1, "q6: natural value %d taken %d times", v, seen[v]);
    }
    /* q4_KX: over the whole block a bijection; word p/2 of every vector in sub-block (p/2)%8,
     * each vector holding 4 values (2 words) of every sub-block */
    int seen[QK_K] = {0};
    for (int c = 0; c < 2; c++)
        for (int r = 0; r < 4; r++) {
            int per_sb[8] = {0};
            for (int p = 0; p < 32; p++) {
                const int v = kx_natural(c, r, p);
                CHECKF(v >= 0 && v < QK_K, "vector %d byte %d -> %d", 4 * c + r, p, v);
                if (v < 0 || v >= QK_K) continue;
                seen[v]++;
                per_sb[v / 32]++;
                CHECKF(v / 32 == (p / 2) % 8, "vector %d byte %d: sub-block %d", 4 * c + r, p, v / 32);
                if (p % 2) CHECKF(v == kx_natural(c, r, p - 1) + 1, "vector %d: word %d is not a natural pair", 4 * c + r, p / 2);
            }
            for (int sb = 0; sb < 8; sb++) CHECKF(per_sb[sb] == 4, "vector %d holds %d values of sub-block %d", 4 * c + r, per_sb[sb], sb);
        }
    for (int v = 0; v < QK_K; v++) CHECKF(seen[v] == 1, "natural value %d taken %d times", v, seen[v]);
}

/* n blocks of q4_K: quantized gaussian data (mode 0), random bytes with finite scales (1), or
 * every code 15 with the largest finite scales (2). */
static void fill_q4_K(e0_block_q4_K *b, int64_t n, int mode) {
    if (mode == 0) {
        float *x = xalloc((size_t)n * QK_K * sizeof *x);
        for (int64_t i = 0; i < n * QK_K; i++) x[i] = rng_gauss() * ((rng_u64() & 63) ? 1.0f : 9.0f);
        e0_q4_K_from_float_ref(x, b, n * QK_K);
        free(x);
        return;
    }
    uint8_t *p = (uint8_t *)b;
    for (size_t i = 0; i < (size_t)n * sizeof *b; i++) p[i] = mode == 1 ? (uint8_t)rng_u64() : 0xFF;
    for (int64_t i = 0; i < n; i++) {
        b[i].d = mode == 1 ? (uint16_t)(rng_u64() & 0x3BFF) : 0x7BFF;
        b[i].dmin = mode == 1 ? (uint16_t)(rng_u64() & 0x3BFF) : 0x7BFF;
    }
}

static void test_repack_round_trip(void) {
    enum { NB = 5 };
    for (int mode = 0; mode < 3; mode++) {
        e0_block_q4_K b[NB], orig[NB];
        fill_q4_K(b, NB, mode);
        memcpy(orig, b, sizeof b);
        float want[NB * QK_K], got[NB * QK_K];
        e0_q4_K_to_float(b, want, NB * QK_K);
        e0_q4_K_repack(b, NB);
        CHECK(memcmp(b[0].scales, orig[0].scales, sizeof b[0].scales) == 0 && b[0].d == orig[0].d && b[0].dmin == orig[0].dmin);
        if (mode == 0) CHECKF(memcmp(b, orig, sizeof b) != 0, "repacking changed nothing");
        e0_q4_KX_to_float(b, got, NB * QK_K);
        CHECKF(memcmp(got, want, sizeof got) == 0, "mode %d: q4_KX dequantizes to other values than q4_K", mode);
        if (e0_simd_level() >= E0_SIMD_AVX2) { /* the fast repacking writes the same bytes */
            e0_block_q4_K fast[NB];
            memcpy(fast, orig, sizeof fast);
            e0_q4_K_repack_avx2(fast, NB);
            CHECKF(memcmp(fast, b, sizeof fast) == 0, "mode %d: e0_q4_K_repack_avx2 differs from e0_q4_K_repack", mode);
        }
        e0_q4_KX_unpack(b, NB);
        CHECKF(memcmp(b, orig, sizeof b) == 0, "mode %d: unpack(repack(x)) != x", mode);
    }
    /* the repacking quantizer is q4_K's, repacked */
    float x[2 * QK_K];
    for (int i = 0; i < 2 * QK_K; i++) x[i] = rng_gauss();
    e0_block_q4_K a[2], k[2];
    e0_q4_KX_from_float_ref(x, a, 2 * QK_K);
    e0_q4_K_from_float_ref(x, k, 2 * QK_K);
    e0_q4_K_repack(k, 2);
    CHECK(memcmp(a, k, sizeof a) == 0);
}

static void test_q8_KX(void) {
    enum { N = 3 * QK_K };
    float x[N], back[N], want[N];
    for (int i = 0; i < N; i++) x[i] = rng_gauss() * (i % 97 ? 1.0f : 20.0f);
    e0_block_q8_K k[3], kx[3];
    e0_q8_K_from_float_ref(x, k, N);
    e0_q8_KX_from_float_ref(x, kx, N);
    for (int b = 0; b < 3; b++) {
        CHECK(kx[b].d == k[b].d && memcmp(kx[b].bsums, k[b].bsums, sizeof k[b].bsums) == 0);
        for (int c = 0; c < 2; c++)
            for (int r = 0; r < 4; r++)
                for (int p = 0; p < 32; p++)
                    CHECKF(kx[b].qs[128 * c + 32 * r + p] == k[b].qs[kx_natural(c, r, p)], "block %d half %d vector %d byte %d", b, c, r, p);
    }
    e0_q8_K_to_float(k, want, N);
    e0_q8_KX_to_float(kx, back, N);
    CHECK(memcmp(back, want, sizeof back) == 0);
    if (e0_simd_level() >= E0_SIMD_AVX2) {
        e0_block_q8_K fast[3];
        e0_q8_KX_from_float_avx2(x, fast, N);
        CHECKF(memcmp(fast, kx, sizeof fast) == 0, "the AVX2 Q8_KX quantizer writes other bytes than the reference");
    } else {
        SKIP("no AVX2 on this CPU: the AVX2 Q8_KX quantizer is not run");
    }
}

/* Every q4_KX dot against q4_K's reference on the original blocks: |got - want| within float
 * rounding of the sum of |products| (the integer block sums are exact; only the float order
 * differs). */
static void test_dots_match_q4_K(void) {
    const e0_type_traits *t = e0_type_traits_of(E0_TYPE_Q4_KX);
    CHECK(t && t->vec_dot_type == E0_TYPE_Q8_KX && !t->weight_ok);
    CHECK(!e0_type_traits_of(E0_TYPE_Q8_KX)->weight_ok);
    static const int64_t counts[] = {1, 2, 8, 11};
    int checked = 0;
    for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
        const int64_t nb = counts[ci], n = nb * QK_K;
        e0_block_q4_K *w = xalloc((size_t)nb * sizeof *w), *wx = xalloc((size_t)nb * sizeof *wx);
        e0_block_q8_K *a = xalloc((size_t)nb * sizeof *a), *ax = xalloc((size_t)nb * sizeof *ax);
        float *xf = xalloc((size_t)n * sizeof *xf), *wf = xalloc((size_t)n * sizeof *wf), *af = xalloc((size_t)n * sizeof *af);
        for (int mode = 0; mode < 3; mode++)
            for (int rep = 0; rep < 8; rep++) {
                fill_q4_K(w, nb, mode);
                memcpy(wx, w, (size_t)nb * sizeof *w);
                e0_q4_K_repack(wx, nb);
                for (int64_t i = 0; i < n; i++) xf[i] = rng_gauss() * (mode == 2 ? 50.0f : 1.0f);
                e0_q8_K_from_float_ref(xf, a, n);
                e0_q8_KX_from_float_ref(xf, ax, n);
                e0_q4_K_to_float(w, wf, n);
                e0_q8_K_to_float(a, af, n);
                double mag = 0;
                for (int64_t i = 0; i < n; i++) mag += fabs((double)wf[i] * af[i]);
                float want;
                e0_vec_dot_q4_K_ref(n, &want, w, a);
                for (int level = E0_SIMD_SCALAR; level <= e0_simd_level(); level++) {
                    const e0_kernels k = e0_kernels_at(t, level);
                    float got;
                    k.vec_dot(n, &got, wx, ax);
                    CHECKF(fabs((double)got - want) <= 1e-5 * mag + 1e-30, "%s blocks %lld mode %d: %.9g vs q4_K %.9g (scale %.3g)",
                           e0_simd_name(level), (long long)nb, mode, got, want, mag);
                    checked++;
                }
            }
        free(w), free(wx), free(a), free(ax), free(xf), free(wf), free(af);
    }
    CHECK(checked > 0);
}

/* q6_KX against q6_K: round trip and dequantization, Q8_KP, the scalar dot within rounding and the
 * AVX2 dot bit for bit (its int32 lanes are the plain dot's by construction). */
static void test_q6_KX(void) {
    enum { NB = 7, N = NB * QK_K };
    e0_block_q6_K *w = xalloc(NB * sizeof *w), *orig = xalloc(NB * sizeof *orig);
    e0_block_q8_K a[NB], ap[NB];
    float *xf = xalloc(N * sizeof *xf), *want = xalloc(N * sizeof *want), *got = xalloc(N * sizeof *got);
    const e0_type_traits *t = e0_type_traits_of(E0_TYPE_Q6_KX), *plain = e0_type_traits_of(E0_TYPE_Q6_K);
    CHECK(t && t->vec_dot_type == E0_TYPE_Q8_KP && !t->weight_ok && !e0_type_traits_of(E0_TYPE_Q8_KP)->weight_ok);
    int bit_checked = 0;
    for (int mode = 0; mode < 3; mode++)
        for (int rep = 0; rep < 6; rep++) {
            for (int i = 0; i < N; i++) xf[i] = rng_gauss() * ((rng_u64() & 31) ? 1.0f : 8.0f);
            if (mode == 0) {
                e0_q6_K_from_float_ref(xf, w, N);
            } else { /* random or all-ones codes, finite scales */
                uint8_t *p = (uint8_t *)w;
                for (size_t i = 0; i < NB * sizeof *w; i++) p[i] = mode == 1 ? (uint8_t)rng_u64() : 0xFF;
                for (int b = 0; b < NB; b++) w[b].d = mode == 1 ? (uint16_t)(rng_u64() & 0x3BFF) : 0x7BFF;
            }
            memcpy(orig, w, NB * sizeof *w);
            e0_q6_K_to_float(w, want, N);
            e0_q6_K_repack(w, NB);
            if (e0_simd_level() >= E0_SIMD_AVX2) {
                e0_block_q6_K fast[NB];
                memcpy(fast, orig, sizeof fast);
                e0_q6_K_repack_avx2(fast, NB);
                CHECKF(memcmp(fast, w, sizeof fast) == 0, "mode %d: e0_q6_K_repack_avx2 differs from e0_q6_K_repack", mode);
            }
            e0_q6_KX_to_float(w, got, N);
            CHECKF(memcmp(got, want, N * sizeof *got) == 0, "mode %d: q6_KX dequantizes to other values", mode);
            e0_q8_K_from_float_ref(xf, a, N);
            e0_q8_KP_from_float_ref(xf, ap, N);
            for (int b = 0; b < NB; b++)
                for (int c = 0; c < 2; c++)
                    for (int g = 0; g < 4; g++)
                        for (int p = 0; p < 32; p++) CHECK(ap[b].qs[128 * c + 32 * g + p] == a[b].qs[kp_natural(c, g, p)]);
            float ref, kx;
            e0_vec_dot_q6_K_ref(N, &ref, orig, a);
            e0_vec_dot_q6_KX_ref(N, &kx, w, ap);
            CHECKF(fabsf(kx - ref) <= 1e-5f * (fabsf(ref) + 1.0f) * 64, "mode %d: scalar q6_KX %.9g vs q6_K %.9g", mode, kx, ref);
            if (e0_simd_level() >= E0_SIMD_AVX2) {
                float p0, p1;
                e0_kernels_at(plain, E0_SIMD_AVX2).vec_dot(N, &p0, orig, a);
                e0_kernels_at(t, E0_SIMD_AVX2).vec_dot(N, &p1, w, ap);
                CHECKF(memcmp(&p0, &p1, sizeof p0) == 0, "mode %d: AVX2 q6_KX %.9g vs q6_K %.9g", mode, p1, p0);
                e0_block_q8_K fast[NB];
                e0_q8_KP_from_float_avx2(xf, fast, N);
                CHECK(memcmp(fast, ap, sizeof fast) == 0);
                bit_checked++;
            }
            e0_q6_KX_unpack(w, NB);
            CHECKF(memcmp(w, orig, NB * sizeof *w) == 0, "mode %d: unpack(repack(x)) != x", mode);
        }
    e0_block_q6_K f1[2], f2[2];
    e0_q6_KX_from_float_ref(xf, f1, 2 * QK_K);
    e0_q6_K_from_float_ref(xf, f2, 2 * QK_K);
    e0_q6_K_repack(f2, 2);
    CHECK(memcmp(f1, f2, sizeof f1) == 0);
    free(w), free(orig), free(xf), free(want), free(got);
    if (!bit_checked) SKIP("no AVX2 on this CPU: the AVX2 q6_KX dot is not compared");
}

/* At the AVX2 level q4_K / q6_K are kept as q4_KX / q6_KX and e0_repack writes that layout
 * (the other levels: tests/test_quant_kv.c); other types are never touched. */
static void test_repack_type(void) {
    const int avx2 = e0_simd_level() == E0_SIMD_AVX2;
    if (avx2) {
        CHECK(e0_repack_type(E0_TYPE_Q4_K) == E0_TYPE_Q4_KX);
        CHECK(e0_repack_type(E0_TYPE_Q6_K) == E0_TYPE_Q6_KX);
        e0_block_q4_K b[2], orig[2];
        fill_q4_K(b, 2, 0);
        memcpy(orig, b, sizeof b);
        e0_repack(E0_TYPE_Q4_K, b, sizeof b);
        CHECK(memcmp(b, orig, sizeof b) != 0);
        e0_q4_KX_unpack(b, 2);
        CHECK(memcmp(b, orig, sizeof b) == 0);
    }
    static const uint32_t others[] = {E0_TYPE_F32, E0_TYPE_Q8_0, E0_TYPE_Q5_K, E0_TYPE_Q3_K, E0_TYPE_IQ4_XS, E0_TYPE_MXFP4};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) CHECK(e0_repack_type(others[i]) == others[i]);
    uint8_t q5[sizeof(e0_block_q5_K)], q5o[sizeof q5];
    for (size_t i = 0; i < sizeof q5; i++) q5[i] = (uint8_t)rng_u64();
    memcpy(q5o, q5, sizeof q5);
    e0_repack(E0_TYPE_Q5_K, q5, sizeof q5);
    CHECK(memcmp(q5, q5o, sizeof q5) == 0);
}

int main(void) {
    RUN(test_permutation);
    RUN(test_repack_round_trip);
    RUN(test_q8_KX);
    RUN(test_dots_match_q4_K);
    RUN(test_q6_KX);
    RUN(test_repack_type);
    return T_DONE();
}
