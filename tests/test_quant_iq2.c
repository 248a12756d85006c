/* test_quant_iq2.c — the IQ2 / IQ1 grid types (IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M): the
 * grids' structure (and every value against llama.cpp's ggml-common.h when build/llamacpp is
 * installed), quantization error with and without importance weights, the scalar dot against
 * a float64 dot of the dequantized rows, and every SIMD dot (1 token, 4 tokens, GEMM) against the
 * scalar one bit for bit on odd block counts at odd addresses. Bit-exactness of dequantization
 * against ggml itself is tests/test_llamacpp.c's dequant/ cases. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant.h"
#include "quant/quant_iq2.h"
#include "t.h"

static const int iq_types[] = {E0_TYPE_IQ2_XXS, E0_TYPE_IQ2_XS, E0_TYPE_IQ2_S, E0_TYPE_IQ1_S, E0_TYPE_IQ1_M};
#define N_IQ 5

#define T_RNG_SEED 0x2545F4914F6CDD1Dull
#include "t_rand.h"

/* ---- grids ---- */

static const struct {
    const uint64_t *g;
    int n;
    const char *ggml_name;
    uint8_t lv[3];
} grids[] = {
    {e0_iq2xxs_grid, 256, "iq2xxs_grid", {8, 25, 43}},
    {e0_iq2xs_grid, 512, "iq2xs_grid", {8, 25, 43}},
    {e0_iq2s_grid, 1024, "iq2s_grid", {8, 25, 43}},
    {e0_iq1s_grid, 2048, "iq1s_grid", {0xff, 0, 1}},
};

static void test_grid_structure(void) {
    for (size_t k = 0; k < sizeof grids / sizeof grids[0]; k++) {
        long prev = -1;
        int bad_level = 0, bad_order = 0;
        for (int e = 0; e < grids[k].n; e++) {
            long code = 0;
            for (int j = 0; j < 8; j++) {
                const uint8_t v = (uint8_t)(grids[k].g[e] >> (8 * j));
                int l = v == grids[k].lv[0] ? 0 : v == grids[k].lv[1] ? 1 : v == grids[k].lv[2] ? 2 : -1;
                if (l < 0) bad_level++, l = 0;
                code |= (long)l << (2 * j);
            }
            if (code <= prev) bad_order++;
            prev = code;
        }
        CHECKF(!bad_level && !bad_order, "%s: %d bad levels, %d out of order", grids[k].ggml_name, bad_level, bad_order);
    }
}

/* Every grid value against ggml-common.h (the pinned llama.cpp source), when it is installed. */
static void test_grids_vs_ggml(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/llamacpp/src/ggml/src/ggml-common.h", getenv("E0_LLAMACPP") ? getenv("E0_LLAMACPP") : "build");
    FILE *f = fopen(path, "r");
    if (!f) {
        t_skip("%s not installed (make llamacpp)", path);
        return;
    }
    static char text[1 << 20];
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[len] = 0;
    for (size_t k = 0; k < sizeof grids / sizeof grids[0]; k++) {
        char key[64];
        snprintf(key, sizeof key, "uint64_t, %s,", grids[k].ggml_name);
        const char *p = strstr(text, key);
        CHECKF(p, "%s not found in %s", grids[k].ggml_name, path);
        if (!p) continue;
        p = strchr(p, ')') + 1;
        int diff = 0, got = 0;
        for (int e = 0; e < grids[k].n; e++) {
            const char *h = strstr(p, "0x");
            if (!h) break;
            unsigned long long v = strtoull(h, (char **)&p, 16);
            got++;
            if (v != grids[k].g[e]) diff++;
        }
        CHECKF(got == grids[k].n && diff == 0, "%s: %d of %d values read, %d differ", grids[k].ggml_name, got, grids[k].n, diff);
    }
}

/* ---- quantization error ---- */

static double weighted_rel_err(int type, const float *x, const float *qw, int64_t n, const float *imp) {
    const e0_type_traits *t = e0_type_traits_of((uint32_t)type);
    void *q = xalloc((size_t)(n / 256) * t->type_size);
    float *y = xalloc((size_t)n * sizeof *y);
    switch (type) {
    case E0_TYPE_IQ2_XXS: e0_quantize_iq2_xxs(x, q, n, qw); break;
    case E0_TYPE_IQ2_XS: e0_quantize_iq2_xs(x, q, n, qw); break;
    case E0_TYPE_IQ2_S: e0_quantize_iq2_s(x, q, n, qw); break;
    case E0_TYPE_IQ1_S: e0_quantize_iq1_s(x, q, n, qw); break;
    default: e0_quantize_iq1_m(x, q, n, qw); break;
    }
    t->to_float(q, y, n);
    double se = 0, sx = 0;
    for (int64_t i = 0; i < n; i++) {
        const double w = imp ? imp[i] : 1;
        se += w * (y[i] - x[i]) * (y[i] - x[i]);
        sx += w * x[i] * x[i];
    }
    free(q);
    free(y);
    return sqrt(se / sx);
}

static void test_quantize_error(void) {
    /* rms error / rms of gaussian rows: the bits per weight leave ~0.3-0.6 (IQ1_M without qw
     * weights x^2, as ggml does, which gives up the small values) */
    static const double bound[N_IQ] = {0.40, 0.36, 0.34, 0.60, 0.66};
    const int64_t n = 256 * 12;
    float *x = xalloc((size_t)n * 4), *imp = xalloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++) x[i] = rng_gauss() * (i % 97 == 0 ? 4.0f : 1.0f);
    /* importance: a few columns matter 30x more (as activation outliers make them) */
    for (int64_t i = 0; i < n; i++) imp[i] = (i % 256) % 11 == 3 ? 30.0f : 1.0f;
    for (int k = 0; k < N_IQ; k++) {
        const char *name = e0_type_traits_of((uint32_t)iq_types[k])->name;
        double plain = weighted_rel_err(iq_types[k], x, NULL, n, NULL);
        CHECKF(plain < bound[k], "%s: rel rms err %.4f >= %.2f", name, plain, bound[k]);
        /* with importance weights the important elements come out better */
        double w_none = weighted_rel_err(iq_types[k], x, NULL, n, imp), w_imp = weighted_rel_err(iq_types[k], x, imp, n, imp);
        CHECKF(w_imp < w_none, "%s: importance-weighted err %.4f with qw, %.4f without", name, w_imp, w_none);
        printf("  %s: rel rms err %.4f; important columns %.4f -> %.4f with qw\n", name, plain, w_none, w_imp);
    }
    /* zeros, constants, a huge and a NaN value: no crash, finite output except where NaN went in */
    for (int k = 0; k < N_IQ; k++) {
        const e0_type_traits *t = e0_type_traits_of((uint32_t)iq_types[k]);
        float z[512] = {0}, y[512];
        void *q = xalloc(2 * t->type_size);
        for (int i = 256; i < 512; i++) z[i] = 0.5f;
        t->from_float_ref(z, q, 512);
        t->to_float(q, y, 512);
        int finite = 1;
        for (int i = 0; i < 512; i++) finite &= isfinite(y[i]) && fabsf(y[i]) < 2;
        CHECKF(finite && fabsf(y[0]) < 1e-3f, "%s: zero/constant blocks give %g, %g", t->name, y[0], y[300]);
        z[3] = 1e30f, z[300] = NAN;
        t->from_float_ref(z, q, 512);
        t->to_float(q, y, 512);
        free(q);
    }
    free(x);
    free(imp);
}

/* ---- dots ---- */

typedef struct {
    uint8_t *wbuf, *w;  /* w = wbuf + 1: odd address */
    e0_block_q8_K *a;   /* MAXT rows */
    float *wf, *af;
} dot_case;
#define MAXT 8

static dot_case make_case(int type, int64_t nb, int random_bytes) {
    const e0_type_traits *t = e0_type_traits_of((uint32_t)type);
    const int64_t n = nb * 256;
    dot_case c;
    c.wbuf = xalloc((size_t)nb * t->type_size + 1);
    c.w = c.wbuf + 1;
    c.a = xalloc((size_t)nb * MAXT * sizeof *c.a);
    c.wf = xalloc((size_t)n * 4);
    c.af = xalloc((size_t)n * MAXT * 4);
    float *x = xalloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++) x[i] = rng_gauss();
    t->from_float_ref(x, c.w, n);
    if (random_bytes) { /* random codes, then a finite scale in every block */
        for (size_t i = 0; i < (size_t)nb * t->type_size; i++) c.w[i] = (uint8_t)rng_u64();
        for (int64_t b = 0; b < nb; b++) {
            uint8_t *blk = c.w + b * t->type_size;
            if (type == E0_TYPE_IQ1_M) {
                for (int k = 0; k < 4; k++) blk[IQ1M_SC + 2 * k + 1] = (uint8_t)((blk[IQ1M_SC + 2 * k + 1] & 0x0f) | (k == 3 ? 0x20 : 0));
            } else {
                uint16_t h = (uint16_t)(0x1400 + rng_u64() % 0x2000);
                memcpy(blk, &h, 2);
            }
        }
    }
    t->to_float(c.w, c.wf, n);
    for (int k = 0; k < MAXT; k++) {
        for (int64_t i = 0; i < n; i++) x[i] = rng_gauss();
        e0_type_traits_of(E0_TYPE_Q8_K)->from_float_ref(x, c.a + k * nb, n);
        e0_type_traits_of(E0_TYPE_Q8_K)->to_float(c.a + k * nb, c.af + k * n, n);
    }
    free(x);
    return c;
}
static void free_case(dot_case *c) {
    free(c->wbuf);
    free(c->a);
    free(c->wf);
    free(c->af);
}

static void test_scalar_dot_vs_float(void) {
    for (int k = 0; k < N_IQ; k++) {
        const e0_type_traits *t = e0_type_traits_of((uint32_t)iq_types[k]);
        for (int64_t nb = 1; nb <= 9; nb += 4) {
            for (int rb = 0; rb < 2; rb++) {
                dot_case c = make_case(iq_types[k], nb, rb);
                const int64_t n = nb * 256;
                double ref = 0, mag = 0;
                for (int64_t i = 0; i < n; i++) ref += (double)c.wf[i] * c.af[i], mag += fabs((double)c.wf[i] * c.af[i]);
                float got = NAN;
                t->vec_dot[E0_SIMD_SCALAR](n, &got, c.w, c.a);
                CHECKF(fabs(got - ref) <= 1e-5 * mag + 1e-30, "%s nb=%lld random=%d: %.9g vs %.9g", t->name, (long long)nb, rb,
                       got, ref);
                free_case(&c);
            }
        }
    }
}

static void test_simd_vs_scalar(void) {
    if (e0_simd_level() < E0_SIMD_AVX2) {
        t_skip("CPU lacks avx2 or E0_SIMD caps it");
        return;
    }
    int n_gemm = 0;
    for (int k = 0; k < N_IQ; k++) {
        const e0_type_traits *t = e0_type_traits_of((uint32_t)iq_types[k]);
        const e0_kernels kn = e0_kernels_at(t, E0_SIMD_AVX2);
        CHECKF(kn.vec_dot && kn.vec_dot != t->vec_dot[E0_SIMD_SCALAR], "%s: no avx2 vec_dot", t->name);
        static const int64_t counts[] = {1, 2, 3, 7, 13};
        for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
            const int64_t nb = counts[ci], n = nb * 256;
            for (int rb = 0; rb < 2; rb++) {
                dot_case c = make_case(iq_types[k], nb, rb);
                float want[MAXT], got[MAXT * 3];
                for (int tk = 0; tk < MAXT; tk++) t->vec_dot[E0_SIMD_SCALAR](n, &want[tk], c.w, c.a + tk * nb);
                float one = NAN;
                kn.vec_dot(n, &one, c.w, c.a);
                CHECKF(!memcmp(&one, &want[0], 4), "%s avx2 nb=%lld: %.9g vs ref %.9g", t->name, (long long)nb, one, want[0]);
                if (kn.vec_dot_4) {
                    kn.vec_dot_4(n, got, 3, c.w, c.a, nb * sizeof *c.a);
                    for (int tk = 0; tk < E0_DOT_TOKENS; tk++)
                        CHECKF(!memcmp(&got[3 * tk], &want[tk], 4), "%s vec_dot_4 nb=%lld tok %d", t->name, (long long)nb, tk);
                }
                if (kn.gemm) {
                    n_gemm++;
                    for (int nt = 1; nt <= MAXT; nt++) {
                        kn.gemm(n, 1, c.w, 0, nt, c.a, nb * sizeof *c.a, got, 1);
                        for (int tk = 0; tk < nt; tk++)
                            CHECKF(!memcmp(&got[tk], &want[tk], 4), "%s gemm nb=%lld nt %d tok %d: %.9g vs %.9g", t->name,
                                   (long long)nb, nt, tk, got[tk], want[tk]);
                    }
                }
                free_case(&c);
            }
        }
    }
    CHECKF(n_gemm > 0, "no gemm checked");
    /* the prefill types have their multi-token kernels */
    static const int pre[] = {E0_TYPE_IQ2_XXS, E0_TYPE_IQ1_S, E0_TYPE_IQ1_M};
    for (int i = 0; i < 3; i++) {
        const e0_kernels kn = e0_kernels_at(e0_type_traits_of((uint32_t)pre[i]), E0_SIMD_AVX2);
        CHECKF(kn.gemm && kn.vec_dot_4, "type %d lacks gemm / vec_dot_4", pre[i]);
    }
}

/* The +-1 sign table of the SIMD dots, entry by entry, against the sign rule (iq2_signs8). */
static void test_sign_table(void) {
    for (unsigned s7 = 0; s7 < 128; s7++) {
        const uint8_t bits = iq2_signs8(s7);
        uint64_t want = 0;
        for (int j = 0; j < 8; j++) want |= (uint64_t)((bits >> j & 1) ? 0xff : 0x01) << (8 * j);
        CHECKF(e0_iq2_sign_pm1[s7] == want, "sign entry %u: %016llx vs %016llx", s7, (unsigned long long)e0_iq2_sign_pm1[s7],
               (unsigned long long)want);
    }
}

/* IQ2_XXS's AVX2 kernels are exact for any int8 activation, -128 included (the Q8_K quantizer
 * never writes it, but the kernels must not depend on that): equal to the reference. */
static void test_iq2_xxs_any_activation(void) {
    if (e0_simd_level() < E0_SIMD_AVX2) {
        t_skip("CPU lacks avx2 or E0_SIMD caps it");
        return;
    }
    const e0_type_traits *t = e0_type_traits_of(E0_TYPE_IQ2_XXS);
    const e0_kernels kn = e0_kernels_at(t, E0_SIMD_AVX2);
    for (int rb = 0; rb < 2; rb++) {
        const int64_t nb = 5, n = nb * 256;
        dot_case c = make_case(E0_TYPE_IQ2_XXS, nb, rb);
        for (int k = 0; k < MAXT * nb; k++)
            for (int i = k % 3; i < 256; i += 3) c.a[k].qs[i] = (i + k) % 2 ? -128 : 127;
        float want[MAXT], got[MAXT];
        for (int tk = 0; tk < MAXT; tk++) t->vec_dot[E0_SIMD_SCALAR](n, &want[tk], c.w, c.a + tk * nb);
        kn.vec_dot(n, &got[0], c.w, c.a);
        CHECKF(!memcmp(&got[0], &want[0], 4), "vec_dot random=%d: %.9g vs %.9g", rb, got[0], want[0]);
        kn.gemm(n, 1, c.w, 0, MAXT, c.a, nb * sizeof *c.a, got, 1);
        for (int tk = 0; tk < MAXT; tk++) CHECKF(!memcmp(&got[tk], &want[tk], 4), "gemm random=%d token %d", rb, tk);
        free_case(&c);
    }
}

static void test_table_rows(void) {
    static const double bpw[N_IQ] = {2.0625, 2.3125, 2.5625, 1.5625, 1.75};
    for (int k = 0; k < N_IQ; k++) {
        const e0_type_traits *t = e0_type_traits_of((uint32_t)iq_types[k]);
        CHECKF(t && t->block_size == 256 && t->vec_dot_type == E0_TYPE_Q8_K && t->weight_ok, "type %d row", iq_types[k]);
        if (t) CHECKF(fabs(t->type_size * 8.0 / 256 - bpw[k]) < 1e-9, "%s: %zu bytes per block", t->name, t->type_size);
    }
}

int main(void) {
    t_begin("test_table_rows");
    test_table_rows();
    t_end();
    t_begin("test_grid_structure");
    test_grid_structure();
    t_end();
    t_begin("test_grids_vs_ggml");
    test_grids_vs_ggml();
    t_end();
    t_begin("test_quantize_error");
    test_quantize_error();
    t_end();
    t_begin("test_scalar_dot_vs_float");
    test_scalar_dot_vs_float();
    t_end();
    t_begin("test_simd_vs_scalar");
    test_simd_vs_scalar();
    t_end();
    /* last: the tests above see the random stream they always saw */
    t_begin("test_sign_table");
    test_sign_table();
    t_end();
    t_begin("test_iq2_xxs_any_activation");
    test_iq2_xxs_any_activation();
    t_end();
    return T_DONE();
}
