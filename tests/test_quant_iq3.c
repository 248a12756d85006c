/* test_quant_iq3.c — IQ3_XXS and IQ3_S: the table rows, the grids, dequantization of hand-built
 * blocks against the format description, the reference quantizer (error, importance weights,
 * degenerate input), the scalar dot against a float64 dot of the dequantized rows, the AVX2 dots
 * against the scalar ones on odd block counts and unaligned rows, and the IQ3_XXS 4-token dot and
 * prefill GEMM against the AVX2 dot bit for bit (many rows, unaligned, padded strides).
 * Bit-exactness against llama.cpp's own blocks is checked by test_llamacpp (dequant/iq3_*). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quant/gemm.h"
#include "quant/quant.h"
#include "quant/quant_iq3.h"
#include "t.h"

static const int iq3_types[2] = {E0_TYPE_IQ3_XXS, E0_TYPE_IQ3_S};

#define T_RNG_SEED 0x5851F42D4C957F2Dull
#include "t_rand.h"

static int byte_of(uint32_t pt, int j) { return (int)((pt >> (8 * j)) & 0xff); }

static void test_table(void) {
    static const size_t ggml_size[2] = {98, 110}; /* GGUF files depend on them */
    for (int k = 0; k < 2; k++) {
        const e0_type_traits *t = e0_type_traits_of((uint32_t)iq3_types[k]);
        CHECK(t && t->block_size == QK_K && t->type_size == ggml_size[k] && t->vec_dot_type == E0_TYPE_Q8_K);
        CHECK(t && t->weight_ok && t->is_quantized && t->to_float && t->from_float_ref && t->vec_dot[E0_SIMD_SCALAR] &&
              t->vec_dot[E0_SIMD_AVX2]);
        CHECK(e0_kernels_of((uint32_t)iq3_types[k]) != NULL);
    }
    CHECK(!strcmp(e0_type_traits_of(E0_TYPE_IQ3_XXS)->name, "iq3_xxs") && !strcmp(e0_type_traits_of(E0_TYPE_IQ3_S)->name, "iq3_s"));
    CHECK(e0_type_traits_of(E0_TYPE_IQ3_XXS)->gemm[E0_SIMD_AVX2] && e0_type_traits_of(E0_TYPE_IQ3_XXS)->vec_dot_4[E0_SIMD_AVX2]);
}

/* Grid points are distinct, on the odd lattice of each type, and sign indices have even parity. */
static void test_grids(void) {
    static const int xxs_vals[8] = {4, 12, 20, 28, 36, 44, 52, 62};
    for (int g = 0; g < 2; g++) {
        const uint32_t *grid = g ? e0_iq3_s_grid : e0_iq3_xxs_grid;
        const int n = g ? 512 : 256;
        int bad = 0, dup = 0;
        for (int k = 0; k < n; k++) {
            for (int j = 0; j < 4; j++) {
                const int b = byte_of(grid[k], j);
                int ok = 0;
                for (int l = 0; l < 8; l++) ok |= b == (g ? 2 * l + 1 : xxs_vals[l]);
                bad += !ok;
            }
            for (int m = 0; m < k; m++) dup += grid[m] == grid[k];
        }
        CHECKF(bad == 0 && dup == 0, "grid %d: %d bad values, %d duplicates", g, bad, dup);
    }
    for (uint32_t i = 0; i < 128; i++) {
        const uint8_t s = e0_iq3_xxs_signs(i);
        CHECK((s & 127) == i && __builtin_popcount(s) % 2 == 0);
    }
    CHECK(e0_iq3_xxs_signs(1) == 129 && e0_iq3_xxs_signs(3) == 3); /* ggml's ksigns_iq2xs[1], [3] */
}

/* IQ3_XXS: value e of sub-block ib, group g = (e%32)/4: d*(0.5+ls)*0.5 * grid[qs[8ib+g]] byte
 * e%4, negative when bit (e%8) of the group-of-8's sign byte is set. */
static void test_hand_iq3_xxs(void) {
    e0_block_iq3_xxs b;
    b.d = 0x3400; /* 0.25 */
    int idx[64], ls[8], sidx[32];
    for (int k = 0; k < 64; k++) b.qs[k] = (uint8_t)(idx[k] = (k * 37 + 11) % 256);
    for (int ib = 0; ib < 8; ib++) {
        ls[ib] = (ib * 5 + 3) % 16;
        uint32_t w = (uint32_t)ls[ib] << 28;
        for (int l = 0; l < 4; l++) w |= (uint32_t)(sidx[4 * ib + l] = (ib * 29 + l * 53 + 7) % 128) << (7 * l);
        memcpy(b.qs + 64 + 4 * ib, &w, 4);
    }
    float out[256];
    e0_iq3_xxs_to_float(&b, out, 256);
    int bad = 0;
    for (int e = 0; e < 256; e++) {
        const int ib = e / 32, g = (e % 32) / 4, s8 = (e % 32) / 8;
        const int sidxv = sidx[4 * ib + s8];
        const int bit = e % 8 == 7 ? __builtin_popcount((unsigned)sidxv) & 1 : (sidxv >> (e % 8)) & 1;
        const float want = 0.25f * (0.5f + ls[ib]) * 0.5f * byte_of(e0_iq3_xxs_grid[idx[8 * ib + g]], e % 4) * (bit ? -1.f : 1.f);
        bad += out[e] != want;
    }
    CHECKF(bad == 0, "%d of 256 values differ", bad);
}

/* IQ3_S: grid index qs[8ib+g] | (bit g of qh[ib]) << 8, sign bit e%32 of signs[4ib..], scale
 * nibble ib%2 of scales[ib/2]: d*(1+2*sc). */
static void test_hand_iq3_s(void) {
    e0_block_iq3_s b;
    b.d = 0xB000; /* -0.125 */
    for (int k = 0; k < 64; k++) b.qs[k] = (uint8_t)((k * 71 + 5) % 256);
    for (int k = 0; k < 8; k++) b.qh[k] = (uint8_t)(k * 0x35 + 0x1b);
    for (int k = 0; k < 32; k++) b.signs[k] = (uint8_t)(k * 0x4d + 0x21);
    for (int k = 0; k < 4; k++) b.scales[k] = (uint8_t)(k * 0x3b + 0x92);
    float out[256];
    e0_iq3_s_to_float(&b, out, 256);
    int bad = 0;
    for (int e = 0; e < 256; e++) {
        const int ib = e / 32, g = (e % 32) / 4;
        const int index = b.qs[8 * ib + g] | ((b.qh[ib] >> g) & 1) << 8;
        const int sc = (b.scales[ib / 2] >> (4 * (ib % 2))) & 15;
        const int neg = (b.signs[4 * ib + (e % 32) / 8] >> (e % 8)) & 1;
        const float want = -0.125f * (float)(1 + 2 * sc) * byte_of(e0_iq3_s_grid[index], e % 4) * (neg ? -1.f : 1.f);
        bad += out[e] != want;
    }
    CHECKF(bad == 0, "%d of 256 values differ", bad);
}

static double rel_err(const float *x, const float *y, int64_t n) {
    double e = 0, s = 0;
    for (int64_t i = 0; i < n; i++) {
        e += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
        s += (double)x[i] * x[i];
    }
    return sqrt(e / (s > 0 ? s : 1));
}

/* Quantization error (relative RMS) of the row kinds, a little above what ggml's algorithm gives
 * at ~3.1-3.4 bits per value (no offset term: rows with a mean fit worse; outliers cost the
 * rest of their sub-block); importance weights lower the weighted error of the values they
 * favour. */
static void test_quant_error(void) {
    const int64_t n = 256 * 8;
    float *x = xalloc((size_t)n * 4), *y = xalloc((size_t)n * 4), *qw = xalloc((size_t)n * 4);
    static const double max_err[4] = {0.25, 0.2, 0.25, 0.4};
    for (int k = 0; k < 2; k++) {
        const e0_type_traits *t = e0_type_traits_of((uint32_t)iq3_types[k]);
        void *q = xalloc(e0_row_size((uint32_t)iq3_types[k], n));
        for (int kind = 0; kind < 4; kind++) {
            fill_row(x, n, kind);
            t->from_float_ref(x, q, n);
            t->to_float(q, y, n);
            const double err = rel_err(x, y, n);
            printf("  %s kind %d: relative error %.4f\n", t->name, kind, err);
            CHECKF(err < max_err[kind], "%s kind %d: relative error %.4f", t->name, kind, err);
        }
        /* importance: the first 16 of every 32 values weigh 100x */
        fill_row(x, n, 0);
        for (int64_t i = 0; i < n; i++) qw[i] = (i % 32) < 16 ? 100.0f : 1.0f;
        double e_plain = 0, e_imp = 0;
        if (iq3_types[k] == E0_TYPE_IQ3_XXS) e0_quantize_iq3_xxs(x, q, n, NULL);
        else e0_quantize_iq3_s(x, q, n, NULL);
        t->to_float(q, y, n);
        for (int64_t i = 0; i < n; i++) e_plain += qw[i] * (x[i] - y[i]) * (x[i] - y[i]);
        if (iq3_types[k] == E0_TYPE_IQ3_XXS) e0_quantize_iq3_xxs(x, q, n, qw);
        else e0_quantize_iq3_s(x, q, n, qw);
        t->to_float(q, y, n);
        for (int64_t i = 0; i < n; i++) e_imp += qw[i] * (x[i] - y[i]) * (x[i] - y[i]);
        CHECKF(e_imp < 0.9 * e_plain, "%s: weighted error with importance %.4g, without %.4g", t->name, e_imp, e_plain);
        free(q);
    }
    free(x), free(y), free(qw);
}

/* Zeros give zero blocks; tiny, huge, NaN and infinite values do not crash and leave the other
 * super-blocks intact. */
static void test_quant_degenerate(void) {
    float x[512], y[512];
    for (int k = 0; k < 2; k++) {
        const e0_type_traits *t = e0_type_traits_of((uint32_t)iq3_types[k]);
        uint8_t q[2 * 110];
        memset(x, 0, sizeof x);
        memset(q, 0xAB, sizeof q);
        t->from_float_ref(x, q, 512);
        int nz = 0;
        for (size_t i = 0; i < 2 * t->type_size; i++) nz += q[i] != 0;
        CHECKF(nz == 0, "%s: zeros give %d non-zero bytes", t->name, nz);
        const float specials[4] = {1e-30f, 1e30f, NAN, INFINITY};
        for (int s = 0; s < 4; s++) {
            fill_row(x, 512, 0);
            for (int i = 0; i < 256; i += 37) x[i] = specials[s];
            t->from_float_ref(x, q, 512);
            t->to_float(q, y, 512);
            CHECKF(rel_err(x + 256, y + 256, 256) < 0.28, "%s special %d: second block damaged", t->name, s);
        }
        fill_row(x, 512, 0);
        for (int i = 32; i < 64; i++) x[i] = 0; /* one all-zero sub-block between others */
        t->from_float_ref(x, q, 512);
        t->to_float(q, y, 512);
        CHECKF(rel_err(x, y, 512) < 0.28, "%s: a zero sub-block disturbs the rest (err %.3f)", t->name, rel_err(x, y, 512));
        /* the smallest scale code still gives d/4 * grid (no exact zero): small, not zero */
        for (int i = 32; i < 64; i++) CHECKF(fabsf(y[i]) < 0.05f, "%s: zero sub-block value %d = %g", t->name, i, y[i]);
    }
}

/* ---- dots ---- */

typedef struct {
    int64_t n;
    uint8_t *wbuf, *abuf; /* allocations; w / a at offset `off` (unaligned rows) */
    void *w, *a;
    float *wf, *af;
} dot_case;

static dot_case make_case(int type, int64_t n, int kind, int off) {
    dot_case c = {.n = n};
    const e0_type_traits *t = e0_type_traits_of((uint32_t)type), *t8 = e0_type_traits_of(E0_TYPE_Q8_K);
    float *x = xalloc((size_t)n * 4);
    c.wbuf = xalloc(e0_row_size((uint32_t)type, n) + 64);
    c.abuf = xalloc(e0_row_size(E0_TYPE_Q8_K, n) + 64);
    c.w = c.wbuf + off;     /* weights at any address */
    c.a = c.abuf + 4 * (off % 2); /* Q8_K activations are read as structs: 4-byte aligned */
    c.wf = xalloc((size_t)n * 4);
    c.af = xalloc((size_t)n * 4);
    fill_row(x, n, kind);
    t->from_float_ref(x, c.w, n);
    fill_row(x, n, (kind + 1) % 4);
    t8->from_float_ref(x, c.a, n);
    t->to_float(c.w, c.wf, n);
    t8->to_float(c.a, c.af, n);
    free(x);
    return c;
}
static void free_case(dot_case *c) { free(c->wbuf), free(c->abuf), free(c->wf), free(c->af); }

/* Random bytes are valid blocks too; fp16 scales kept finite and modest. */
static void randomize_blocks(int type, uint8_t *w, int64_t nb) {
    const size_t bs = e0_type_traits_of((uint32_t)type)->type_size;
    for (size_t i = 0; i < bs * (size_t)nb; i++) w[i] = (uint8_t)rng_u64();
    for (int64_t b = 0; b < nb; b++) {
        const uint16_t h = (uint16_t)(0x1400 + rng_u64() % 0x2800);
        memcpy(w + (size_t)b * bs, &h, 2);
    }
}

static void test_dot_ref_vs_f64(void) {
    for (int k = 0; k < 2; k++) {
        const e0_type_traits *t = e0_type_traits_of((uint32_t)iq3_types[k]);
        for (int kind = 0; kind < 4; kind++)
            for (int64_t n = 256; n <= 256 * 9; n += 256 * 4) {
                dot_case c = make_case(iq3_types[k], n, kind, 0);
                double exact = 0, mag = 0;
                for (int64_t i = 0; i < n; i++) exact += (double)c.wf[i] * c.af[i], mag += fabs((double)c.wf[i] * c.af[i]);
                float s = NAN;
                t->vec_dot[E0_SIMD_SCALAR](n, &s, c.w, c.a);
                CHECKF(fabs(s - exact) <= 2e-6 * mag + 1e-30, "%s n=%lld kind=%d: %.9g vs f64 %.9g", t->name, (long long)n, kind, s,
                       exact);
                free_case(&c);
            }
    }
}

static void test_avx2_vs_ref(void) {
    if (e0_simd_level() < E0_SIMD_AVX2) SKIP("CPU lacks avx2 or E0_SIMD caps it");
    for (int k = 0; k < 2; k++) {
        const e0_type_traits *t = e0_type_traits_of((uint32_t)iq3_types[k]);
        for (int kind = 0; kind < 5; kind++)
            for (int64_t nb = 1; nb <= 13; nb += 2) { /* odd block counts */
                const int64_t n = nb * 256;
                dot_case c = make_case(iq3_types[k], n, kind % 4, (int)(nb % 7)); /* unaligned rows */
                if (kind == 4) {
                    randomize_blocks(iq3_types[k], c.w, nb);
                    t->to_float(c.w, c.wf, n);
                }
                float ref = NAN, got = NAN;
                t->vec_dot[E0_SIMD_SCALAR](n, &ref, c.w, c.a);
                t->vec_dot[E0_SIMD_AVX2](n, &got, c.w, c.a);
                double mag = 0;
                for (int64_t i = 0; i < n; i++) mag += fabs((double)c.wf[i] * c.af[i]);
                CHECKF(fabs((double)got - ref) <= 1e-5 * mag + 1e-30, "%s avx2 nb=%lld kind=%d: %.9g vs ref %.9g", t->name,
                       (long long)nb, kind, got, ref);
                free_case(&c);
            }
    }
}

/* The IQ3_XXS prefill kernels equal the AVX2 dot bit for bit: gemm for 1..16 rows and 1..8
 * tokens on unaligned rows with padded strides, and vec_dot_4. */
static void test_gemm_iq3_xxs(void) {
    if (e0_simd_level() < E0_SIMD_AVX2) SKIP("CPU lacks avx2 or E0_SIMD caps it");
    const e0_type_traits *t = e0_type_traits_of(E0_TYPE_IQ3_XXS);
    for (int64_t nb = 1; nb <= 5; nb += 2) {
        const int64_t n = nb * 256;
        const size_t w_stride = e0_row_size(E0_TYPE_IQ3_XXS, n) + 3, a_stride = e0_row_size(E0_TYPE_Q8_K, n) + 8;
        uint8_t *wb = xalloc(w_stride * E0_GEMM_ROWS + 8), *ab = xalloc(a_stride * E0_GEMM_TOKENS + 8);
        uint8_t *w = wb + 1, *a = ab + 4; /* weights unaligned; Q8_K rows 4-byte aligned */
        float *x = xalloc((size_t)n * 4);
        for (int r = 0; r < E0_GEMM_ROWS; r++) {
            fill_row(x, n, r % 4);
            t->from_float_ref(x, w + (size_t)r * w_stride, n);
            if (r % 5 == 4) randomize_blocks(E0_TYPE_IQ3_XXS, w + (size_t)r * w_stride, nb);
        }
        for (int k = 0; k < E0_GEMM_TOKENS; k++) {
            fill_row(x, n, (k + 1) % 4);
            e0_type_traits_of(E0_TYPE_Q8_K)->from_float_ref(x, a + (size_t)k * a_stride, n);
        }
        for (int nr = 1; nr <= E0_GEMM_ROWS; nr += 3)
            for (int nt = 1; nt <= E0_GEMM_TOKENS; nt++) {
                float got[(E0_GEMM_ROWS + 1) * E0_GEMM_TOKENS], want;
                const size_t s_stride = (size_t)nr + 1;
                for (size_t i = 0; i < sizeof got / sizeof got[0]; i++) got[i] = -77.0f;
                e0_gemm_iq3_xxs_avx2(n, nr, w, w_stride, nt, a, a_stride, got, s_stride);
                int bad = 0;
                for (int r = 0; r < nr; r++)
                    for (int k = 0; k < nt; k++) {
                        e0_vec_dot_iq3_xxs_avx2(n, &want, w + (size_t)r * w_stride, a + (size_t)k * a_stride);
                        bad += memcmp(&got[(size_t)r + (size_t)k * s_stride], &want, sizeof want) != 0;
                    }
                CHECKF(bad == 0, "gemm nb %lld rows %d tokens %d: %d results differ from vec_dot", (long long)nb, nr, nt, bad);
            }
        float got4[4 * 2];
        e0_vec_dot_4_iq3_xxs_avx2(n, got4, 2, w, a, a_stride);
        for (int k = 0; k < 4; k++) {
            float want;
            e0_vec_dot_iq3_xxs_avx2(n, &want, w, a + (size_t)k * a_stride);
            CHECKF(!memcmp(&got4[2 * k], &want, sizeof want), "vec_dot_4 nb %lld token %d", (long long)nb, k);
        }
        free(wb), free(ab), free(x);
    }
}

int main(void) {
    printf("# simd level: %s\n", e0_simd_name(e0_simd_level()));
    RUN(test_table);
    RUN(test_grids);
    RUN(test_hand_iq3_xxs);
    RUN(test_hand_iq3_s);
    RUN(test_quant_error);
    RUN(test_quant_degenerate);
    RUN(test_dot_ref_vs_f64);
    RUN(test_avx2_vs_ref);
    RUN(test_gemm_iq3_xxs);
    return T_DONE();
}
