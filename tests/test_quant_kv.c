/* test_quant_kv.c — q4_K and q6_K repacked for the AVX-512 VNNI kernels (q4_KV, q6_KV, Q8_KV;
 * quant/quant_kv.h): the permutation is a bijection that puts dword lane j of every vector in
 * natural run j, repacking round-trips and dequantizes to the original values, the AVX-512
 * repackers and quantizer write the reference's bytes, the scalar dots are the plain types'
 * references within float rounding, the AVX-512 dots equal the scalar ones bit for bit, and
 * e0_repack_type / e0_repack pick the layout of the level in use (KV: not yet selected). (GEMM = dot bit for bit:
 * tests/test_gemm.c.) */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant.h"
#include "quant/quant_k.h"
#include "quant/quant_kv.h"
#include "quant/quant_kx.h"
#include "t.h"

#define T_RNG_SEED 0x7A11C0DE5EED0042ull
#include "t_rand.h"

static int have_avx512(void) { return e0_simd_level() >= E0_SIMD_AVX512; }

static void test_permutation(void) {
    int seen[QK_K] = {0};
    for (int v = 0; v < 4; v++)
        for (int p = 0; p < 64; p++) {
            const int nat = kv_natural(v, p);
            CHECKF(nat >= 0 && nat < QK_K, "vector %d byte %d -> %d", v, p, nat);
            if (nat < 0 || nat >= QK_K) continue;
            seen[nat]++;
            CHECKF(nat / 16 == p / 4, "vector %d byte %d: natural %d is not in run %d", v, p, nat, p / 4);
            if (p % 4) CHECKF(nat == kv_natural(v, p - 1) + 1, "vector %d byte %d: not a natural run of 4", v, p);
        }
    for (int i = 0; i < QK_K; i++) CHECKF(seen[i] == 1, "natural value %d taken %d times", i, seen[i]);
}

/* nb blocks of q4_K (q6 = 0) or q6_K: quantized gaussian data (mode 0), random bytes with finite
 * scales (1), or every code at its maximum with the largest finite scale (2). */
static void fill(void *blocks, int64_t nb, int q6, int mode) {
    const size_t bsize = q6 ? sizeof(e0_block_q6_K) : sizeof(e0_block_q4_K);
    if (mode == 0) {
        float *x = xalloc((size_t)nb * QK_K * sizeof *x);
        for (int64_t i = 0; i < nb * QK_K; i++) x[i] = rng_gauss() * ((rng_u64() & 63) ? 1.0f : 9.0f);
        if (q6) e0_q6_K_from_float_ref(x, blocks, nb * QK_K);
        else e0_q4_K_from_float_ref(x, blocks, nb * QK_K);
        free(x);
        return;
    }
    uint8_t *p = blocks;
    for (size_t i = 0; i < (size_t)nb * bsize; i++) p[i] = mode == 1 ? (uint8_t)rng_u64() : 0xFF;
    for (int64_t i = 0; i < nb; i++) {
        const uint16_t d = mode == 1 ? (uint16_t)(rng_u64() & 0x3BFF) : 0x7BFF;
        if (q6) {
            ((e0_block_q6_K *)blocks)[i].d = d;
        } else {
            ((e0_block_q4_K *)blocks)[i].d = d;
            ((e0_block_q4_K *)blocks)[i].dmin = mode == 1 ? (uint16_t)(rng_u64() & 0x3BFF) : 0x7BFF;
        }
    }
}

static void test_round_trips(void) {
    enum { NB = 5 };
    for (int q6 = 0; q6 < 2; q6++)
        for (int mode = 0; mode < 3; mode++) {
            const size_t bytes = NB * (q6 ? sizeof(e0_block_q6_K) : sizeof(e0_block_q4_K));
            uint8_t *b = xalloc(bytes), *orig = xalloc(bytes), *fast = xalloc(bytes);
            float want[NB * QK_K], got[NB * QK_K];
            fill(b, NB, q6, mode);
            memcpy(orig, b, bytes);
            (q6 ? e0_q6_K_to_float : e0_q4_K_to_float)(b, want, NB * QK_K);
            (q6 ? e0_q6_K_to_KV : e0_q4_K_to_KV)(b, NB);
            if (mode == 0) CHECKF(memcmp(b, orig, bytes) != 0, "q%d: repacking changed nothing", q6 ? 6 : 4);
            (q6 ? e0_q6_KV_to_float : e0_q4_KV_to_float)(b, got, NB * QK_K);
            CHECKF(memcmp(got, want, sizeof got) == 0, "q%d mode %d: dequantizes to other values", q6 ? 6 : 4, mode);
            if (have_avx512()) {
                memcpy(fast, orig, bytes);
                (q6 ? e0_q6_K_to_KV_avx512 : e0_q4_K_to_KV_avx512)(fast, NB);
                CHECKF(memcmp(fast, b, bytes) == 0, "q%d mode %d: the AVX-512 repacking differs from the reference", q6 ? 6 : 4, mode);
            }
            (q6 ? e0_q6_KV_unpack : e0_q4_KV_unpack)(b, NB);
            CHECKF(memcmp(b, orig, bytes) == 0, "q%d mode %d: unpack(repack(x)) != x", q6 ? 6 : 4, mode);
            free(b), free(orig), free(fast);
        }
    /* the repacking quantizers are the plain ones, repacked */
    float x[2 * QK_K];
    for (int i = 0; i < 2 * QK_K; i++) x[i] = rng_gauss();
    e0_block_q4_K a4[2], k4[2];
    e0_q4_KV_from_float_ref(x, a4, 2 * QK_K);
    e0_q4_K_from_float_ref(x, k4, 2 * QK_K);
    e0_q4_K_to_KV(k4, 2);
    CHECK(memcmp(a4, k4, sizeof a4) == 0);
    e0_block_q6_K a6[2], k6[2];
    e0_q6_KV_from_float_ref(x, a6, 2 * QK_K);
    e0_q6_K_from_float_ref(x, k6, 2 * QK_K);
    e0_q6_K_to_KV(k6, 2);
    CHECK(memcmp(a6, k6, sizeof a6) == 0);
}

static void test_q8_KV(void) {
    enum { N = 3 * QK_K };
    float x[N], back[N], want[N];
    for (int i = 0; i < N; i++) x[i] = rng_gauss() * (i % 97 ? 1.0f : 20.0f);
    e0_block_q8_K k[3], kv[3];
    e0_q8_K_from_float_ref(x, k, N);
    e0_q8_KV_from_float_ref(x, kv, N);
    for (int b = 0; b < 3; b++) {
        CHECK(kv[b].d == k[b].d && memcmp(kv[b].bsums, k[b].bsums, sizeof k[b].bsums) == 0);
        for (int v = 0; v < 4; v++)
            for (int p = 0; p < 64; p++) CHECKF(kv[b].qs[64 * v + p] == k[b].qs[kv_natural(v, p)], "block %d vector %d byte %d", b, v, p);
    }
    e0_q8_K_to_float(k, want, N);
    e0_q8_KV_to_float(kv, back, N);
    CHECK(memcmp(back, want, sizeof back) == 0);
    if (have_avx512()) {
        e0_block_q8_K fast[3];
        e0_q8_KV_from_float_avx512(x, fast, N);
        CHECKF(memcmp(fast, kv, sizeof fast) == 0, "the AVX-512 Q8_KV quantizer writes other bytes than the reference");
    } else {
        SKIP("no AVX-512 VNNI on this CPU: the AVX-512 Q8_KV quantizer is not run");
    }
}

/* Each repacked dot against the plain type's reference on the original blocks, within float
 * rounding of the sum of |products| (the run sums are exact; only the float order differs); the
 * AVX-512 dot against the scalar one bit for bit. */
static void test_dots(void) {
    static const int64_t counts[] = {1, 2, 8, 11};
    int checked = 0, bit_checked = 0;
    for (int q6 = 0; q6 < 2; q6++) {
        const e0_type_traits *t = e0_type_traits_of(q6 ? E0_TYPE_Q6_KV : E0_TYPE_Q4_KV);
        CHECK(t && t->vec_dot_type == E0_TYPE_Q8_KV && !t->weight_ok && !e0_type_traits_of(E0_TYPE_Q8_KV)->weight_ok);
        if (!t) return;
        const size_t bsize = q6 ? sizeof(e0_block_q6_K) : sizeof(e0_block_q4_K);
        for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
            const int64_t nb = counts[ci], n = nb * QK_K;
            uint8_t *w = xalloc((size_t)nb * bsize), *wv = xalloc((size_t)nb * bsize);
            e0_block_q8_K *a = xalloc((size_t)nb * sizeof *a), *av = xalloc((size_t)nb * sizeof *av);
            float *xf = xalloc((size_t)n * sizeof *xf), *wf = xalloc((size_t)n * sizeof *wf), *af = xalloc((size_t)n * sizeof *af);
            for (int mode = 0; mode < 3; mode++)
                for (int rep = 0; rep < 6; rep++) {
                    fill(w, nb, q6, mode);
                    memcpy(wv, w, (size_t)nb * bsize);
                    (q6 ? e0_q6_K_to_KV : e0_q4_K_to_KV)(wv, nb);
                    for (int64_t i = 0; i < n; i++) xf[i] = rng_gauss() * (mode == 2 ? 50.0f : 1.0f);
                    e0_q8_K_from_float_ref(xf, a, n);
                    e0_q8_KV_from_float_ref(xf, av, n);
                    (q6 ? e0_q6_K_to_float : e0_q4_K_to_float)(w, wf, n);
                    e0_q8_K_to_float(a, af, n);
                    double mag = 0;
                    for (int64_t i = 0; i < n; i++) mag += fabs((double)wf[i] * af[i]);
                    float want, ref;
                    (q6 ? e0_vec_dot_q6_K_ref : e0_vec_dot_q4_K_ref)(n, &want, w, a);
                    e0_kernels_at(t, E0_SIMD_SCALAR).vec_dot(n, &ref, wv, av);
                    CHECKF(fabs((double)ref - want) <= 1e-5 * mag + 1e-30, "%s blocks %lld mode %d: %.9g vs plain %.9g (scale %.3g)",
                           t->name, (long long)nb, mode, ref, want, mag);
                    checked++;
                    if (have_avx512()) {
                        float got;
                        e0_kernels_at(t, E0_SIMD_AVX512).vec_dot(n, &got, wv, av);
                        CHECKF(memcmp(&got, &ref, sizeof got) == 0, "%s blocks %lld mode %d: AVX-512 %.9g vs scalar %.9g", t->name,
                               (long long)nb, mode, got, ref);
                        bit_checked++;
                    }
                }
            free(w), free(wv), free(a), free(av), free(xf), free(wf), free(af);
        }
    }
    CHECK(checked > 0);
    if (!bit_checked) SKIP("no AVX-512 VNNI on this CPU: the AVX-512 q4_KV / q6_KV dots are not compared");
}

/* e0_repack_type: KX at AVX2, KV at AVX-512, the file's types at the scalar level; e0_repack
 * writes that layout. */
static void test_repack_type(void) {
    const int level = e0_simd_level();
    const uint32_t want4 = level == E0_SIMD_AVX2 ? E0_TYPE_Q4_KX : level == E0_SIMD_AVX512 ? E0_TYPE_Q4_KV : E0_TYPE_Q4_K;
    const uint32_t want6 = level == E0_SIMD_AVX2 ? E0_TYPE_Q6_KX : level == E0_SIMD_AVX512 ? E0_TYPE_Q6_KV : E0_TYPE_Q6_K;
    CHECK(e0_repack_type(E0_TYPE_Q4_K) == want4);
    CHECK(e0_repack_type(E0_TYPE_Q6_K) == want6);
    static const uint32_t others[] = {E0_TYPE_F32, E0_TYPE_Q8_0, E0_TYPE_Q5_K, E0_TYPE_Q3_K, E0_TYPE_IQ4_XS, E0_TYPE_MXFP4};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) CHECK(e0_repack_type(others[i]) == others[i]);
    e0_block_q4_K b4[2], o4[2];
    e0_block_q6_K b6[2], o6[2];
    fill(b4, 2, 0, 0);
    fill(b6, 2, 1, 0);
    memcpy(o4, b4, sizeof b4);
    memcpy(o6, b6, sizeof b6);
    e0_repack(E0_TYPE_Q4_K, b4, sizeof b4);
    e0_repack(E0_TYPE_Q6_K, b6, sizeof b6);
    if (want4 == E0_TYPE_Q4_KV) e0_q4_KV_unpack(b4, 2), e0_q6_KV_unpack(b6, 2);
    if (want4 == E0_TYPE_Q4_KX) e0_q4_KX_unpack(b4, 2), e0_q6_KX_unpack(b6, 2);
    CHECK(memcmp(b4, o4, sizeof b4) == 0);
    CHECK(memcmp(b6, o6, sizeof b6) == 0);
}

int main(void) {
    RUN(test_permutation);
    RUN(test_round_trips);
    RUN(test_q8_KV);
    RUN(test_dots);
    RUN(test_repack_type);
    return T_DONE();
}
