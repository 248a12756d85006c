/* test_quant_k.c — K-quant kernels (Q2_K..Q6_K, Q8_K): dequantization of hand-built blocks
 * against values computed here from the format description, quantization error, the scalar dot
 * against a float64 dot of the dequantized rows, every SIMD dot against the scalar one, and the
 * SIMD Q8_K quantizer byte for byte against the reference. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant.h"
#include "quant/quant_k.h"
#include "t.h"

static const int k_types[] = {E0_TYPE_Q2_K, E0_TYPE_Q3_K, E0_TYPE_Q4_K, E0_TYPE_Q5_K, E0_TYPE_Q6_K};
#define N_KTYPES 5

#define T_RNG_SEED 0x9E3779B97F4A7C15ull
#include "t_rand.h"

/* fp16 bit patterns of exactly representable values, written out by hand */
#define H_HALF 0x3800    /* 0.5 */
#define H_QUARTER 0x3400 /* 0.25 */
#define H_NEG_EIGHTH 0xB000 /* -0.125 */

/* ======================================================================= hand-built blocks */

/* q2_K: scales[16] @0 (low nibble scale, high nibble min), qs[64] @16, d @80, dmin @82.
 * Value e: sub-block e/16, 2-bit code at qs[32*(e/128) + e%32] bits 2*((e%128)/32). */
static void test_hand_q2_K(void) {
    uint8_t b[84] = {0};
    int sc[16], mn[16], q[256];
    for (int j = 0; j < 16; j++) {
        sc[j] = (j * 5 + 1) % 16;
        mn[j] = (j * 3 + 2) % 16;
        b[j] = (uint8_t)(sc[j] | (mn[j] << 4));
    }
    for (int e = 0; e < 256; e++) {
        q[e] = (e * 7 + e / 5) % 4;
        b[16 + 32 * (e / 128) + e % 32] |= (uint8_t)(q[e] << (2 * ((e % 128) / 32)));
    }
    le16(b + 80, H_HALF);
    le16(b + 82, H_QUARTER);
    float out[256];
    e0_type_traits_of(E0_TYPE_Q2_K)->to_float(b, out, 256);
    int bad = 0;
    for (int e = 0; e < 256; e++) bad += out[e] != 0.5f * sc[e / 16] * q[e] - 0.25f * mn[e / 16];
    CHECKF(bad == 0, "%d of 256 values differ", bad);
}

/* q3_K: hmask[32] @0, qs[64] @32, scales[12] @96, d @108. Code u = q + 4 in 0..7: low 2 bits
 * as in q2_K, bit 2 at hmask[e%32] bit e/32. Scale s (6 bits, minus 32): low nibble in byte
 * j%8 (high nibble of it for j >= 8), top 2 bits in byte 8 + j%4 at bit 2*(j/4). */
static void test_hand_q3_K(void) {
    uint8_t b[110] = {0};
    int s[16], q[256];
    for (int j = 0; j < 16; j++) {
        s[j] = (j * 11 + 5) % 64;
        b[96 + j % 8] |= (uint8_t)((s[j] & 0xF) << (j < 8 ? 0 : 4));
        b[96 + 8 + j % 4] |= (uint8_t)((s[j] >> 4) << (2 * (j / 4)));
    }
    for (int e = 0; e < 256; e++) {
        q[e] = (e * 5 + e / 7) % 8 - 4;
        int u = q[e] + 4;
        b[32 + 32 * (e / 128) + e % 32] |= (uint8_t)((u & 3) << (2 * ((e % 128) / 32)));
        b[e % 32] |= (uint8_t)((u >> 2) << (e / 32));
    }
    le16(b + 108, H_NEG_EIGHTH);
    float out[256];
    e0_type_traits_of(E0_TYPE_Q3_K)->to_float(b, out, 256);
    int bad = 0;
    for (int e = 0; e < 256; e++) bad += out[e] != -0.125f * (s[e / 16] - 32) * q[e];
    CHECKF(bad == 0, "%d of 256 values differ", bad);
}

/* q4_K / q5_K 12-byte scale packing of 6-bit scale sc[j] and min m[j], j = 0..7:
 * j < 4: byte j = sc (low 6 bits), byte j+4 = m (low 6 bits);
 * j >= 4: byte j+4 = sc low 4 | m low 4 << 4, sc's top 2 bits at bits 6-7 of byte j-4, m's at
 * bits 6-7 of byte j. */
static void pack_k4_scales(uint8_t *p, const int *sc, const int *m) {
    for (int j = 0; j < 8; j++) {
        if (j < 4) {
            p[j] |= (uint8_t)sc[j];
            p[j + 4] |= (uint8_t)m[j];
        } else {
            p[j + 4] = (uint8_t)((sc[j] & 0xF) | ((m[j] & 0xF) << 4));
            p[j - 4] |= (uint8_t)((sc[j] >> 4) << 6);
            p[j] |= (uint8_t)((m[j] >> 4) << 6);
        }
    }
}

/* q4_K: d @0, dmin @2, scales[12] @4, qs[128] @16. Value e: sub-block j = e/32, nibble at
 * qs[32*(j/2) + e%32], low nibble for even j. q5_K: qh[32] @16, qs @48, bit 4 at qh[e%32] bit j. */
static void test_hand_q45_K(int type) {
    const int is5 = type == E0_TYPE_Q5_K;
    uint8_t b[176] = {0};
    int sc[8], m[8], q[256];
    for (int j = 0; j < 8; j++) {
        sc[j] = (j * 23 + 7) % 64;
        m[j] = (j * 13 + 40) % 64;
    }
    pack_k4_scales(b + 4, sc, m);
    const int qs_off = is5 ? 48 : 16;
    for (int e = 0; e < 256; e++) {
        int j = e / 32;
        q[e] = (e * 7 + e / 9) % (is5 ? 32 : 16);
        b[qs_off + 32 * (j / 2) + e % 32] |= (uint8_t)((q[e] & 0xF) << (j % 2 ? 4 : 0));
        if (is5) b[16 + e % 32] |= (uint8_t)((q[e] >> 4) << j);
    }
    le16(b + 0, H_HALF);
    le16(b + 2, H_QUARTER);
    float out[256];
    e0_type_traits_of((uint32_t)type)->to_float(b, out, 256);
    int bad = 0;
    for (int e = 0; e < 256; e++) bad += out[e] != 0.5f * sc[e / 32] * q[e] - 0.25f * m[e / 32];
    CHECKF(bad == 0, "%d of 256 values differ", bad);
}
static void test_hand_q4_K(void) { test_hand_q45_K(E0_TYPE_Q4_K); }
static void test_hand_q5_K(void) { test_hand_q45_K(E0_TYPE_Q5_K); }

/* q6_K: ql[128] @0, qh[64] @128, scales[16] int8 @192, d @208. Code u = q + 32 in 0..63. Value
 * e: c = e/128, g = (e%128)/32, l = e%32: low 4 bits at ql[64c + 32*(g%2) + l] (low nibble for
 * g < 2), high 2 bits at qh[32c + l] bits 2g; sub-block e/16. */
static void test_hand_q6_K(void) {
    uint8_t b[210] = {0};
    int sc[16], q[256];
    for (int j = 0; j < 16; j++) {
        sc[j] = (j * 37 + 11) % 256 - 128;
        b[192 + j] = (uint8_t)(int8_t)sc[j];
    }
    for (int e = 0; e < 256; e++) {
        int c = e / 128, g = (e % 128) / 32, l = e % 32;
        q[e] = (e * 13 + e / 3) % 64 - 32;
        int u = q[e] + 32;
        b[64 * c + 32 * (g % 2) + l] |= (uint8_t)((u & 0xF) << (g < 2 ? 0 : 4));
        b[128 + 32 * c + l] |= (uint8_t)((u >> 4) << (2 * g));
    }
    le16(b + 208, H_QUARTER);
    float out[256];
    e0_type_traits_of(E0_TYPE_Q6_K)->to_float(b, out, 256);
    int bad = 0;
    for (int e = 0; e < 256; e++) bad += out[e] != 0.25f * sc[e / 16] * q[e];
    CHECKF(bad == 0, "%d of 256 values differ", bad);
}

/* q8_K (ours, blocks.h): qs[256] int8 @0, bsums[16] int16 @256, float d @288, 320 bytes. */
static void test_hand_q8_K(void) {
    union {
        uint8_t b[320];
        float align;
    } u;
    memset(&u, 0, sizeof u);
    const float d = 0.375f;
    memcpy(u.b + 288, &d, 4);
    for (int e = 0; e < 256; e++) u.b[e] = (uint8_t)(int8_t)((e * 29) % 255 - 127);
    float out[256];
    e0_type_traits_of(E0_TYPE_Q8_K)->to_float(u.b, out, 256);
    int bad = 0;
    for (int e = 0; e < 256; e++) bad += out[e] != 0.375f * ((e * 29) % 255 - 127);
    CHECKF(bad == 0, "%d of 256 values differ", bad);
}

/* ======================================================================= quantization error */

/* Relative RMS error bound per type, about 1.3x the worst measured (E0_TEST_VERBOSE=1 prints
 * them); the heavy-outlier rows (kind 3) are the worst case. */
static double err_bound(int type) {
    switch (type) {
    case E0_TYPE_Q2_K: return 0.36;
    case E0_TYPE_Q3_K: return 0.26;
    case E0_TYPE_Q4_K: return 0.13;
    case E0_TYPE_Q5_K: return 0.065;
    case E0_TYPE_Q6_K: return 0.04;
    default: return 0.03; /* q8_K */
    }
}

static void check_roundtrip(int type, int64_t n, int kind) {
    const e0_type_traits *t = e0_type_traits_of((uint32_t)type);
    float *x = xalloc((size_t)n * 4), *y = xalloc((size_t)n * 4);
    void *q = xalloc(e0_row_size((uint32_t)type, n));
    fill_row(x, n, kind);
    t->from_float_ref(x, q, n);
    t->to_float(q, y, n);
    double se = 0, sx = 0;
    for (int64_t i = 0; i < n; i++) {
        se += (double)(x[i] - y[i]) * (x[i] - y[i]);
        sx += (double)x[i] * x[i];
    }
    double rel = sqrt(se / sx);
    CHECKF(rel < err_bound(type), "%s n=%lld kind=%d rel rms err %.4f >= %.4f", t->name, (long long)n, kind, rel,
           err_bound(type));
    /* deterministic: quantizing again gives the same bytes */
    void *q2 = xalloc(e0_row_size((uint32_t)type, n));
    t->from_float_ref(x, q2, n);
    CHECKF(!memcmp(q, q2, e0_row_size((uint32_t)type, n)), "%s: quantizer not deterministic", t->name);
    if (getenv("E0_TEST_VERBOSE")) printf("  %s n=%lld kind=%d rel rms err %.4f\n", t->name, (long long)n, kind, rel);
    free(x), free(y), free(q), free(q2);
}

static void test_quant_error(void) {
    for (int ti = 0; ti < N_KTYPES; ti++)
        for (int kind = 0; kind < 4; kind++) {
            check_roundtrip(k_types[ti], 256, kind);
            check_roundtrip(k_types[ti], 256 * 7, kind);
        }
    for (int kind = 0; kind < 4; kind++) check_roundtrip(E0_TYPE_Q8_K, 256 * 3, kind);
}

/* The data and limits of llama.cpp's test-quantize-fns (x = 0.1 + 2 cos(i), 4096 values; error
 * = sqrt(sum of squared errors) / n): 0.0075 for 2-bit, 0.004 for 3-bit, 0.002 otherwise. Our
 * quantizer is not ggml's, but must be as good as ggml's is required to be. */
static void test_quant_error_ggml_limits(void) {
    enum { N = 32 * 128 };
    static float x[N], y[N];
    static uint8_t q[N * 2];
    for (int i = 0; i < N; i++) x[i] = 0.1f + 2 * cosf((float)i);
    for (int ti = 0; ti < N_KTYPES; ti++) {
        const e0_type_traits *t = e0_type_traits_of((uint32_t)k_types[ti]);
        t->from_float_ref(x, q, N);
        t->to_float(q, y, N);
        double se = 0;
        for (int i = 0; i < N; i++) se += (double)(x[i] - y[i]) * (x[i] - y[i]);
        const double err = sqrt(se) / N;
        const double lim = k_types[ti] == E0_TYPE_Q2_K ? 0.0075 : k_types[ti] == E0_TYPE_Q3_K ? 0.004 : 0.002;
        CHECKF(err < lim, "%s: error %.6f >= %.4f", t->name, err, lim);
    }
}

/* Degenerate rows: zeros and constants quantize to valid blocks that give back the row. */
static void test_quant_degenerate(void) {
    float x[512], y[512];
    for (int ti = 0; ti < N_KTYPES; ti++) {
        const e0_type_traits *t = e0_type_traits_of((uint32_t)k_types[ti]);
        uint8_t q[2 * 210];
        for (int i = 0; i < 512; i++) x[i] = i < 256 ? 0.0f : -1.5f;
        t->from_float_ref(x, q, 512);
        t->to_float(q, y, 512);
        double maxerr = 0;
        for (int i = 0; i < 512; i++) maxerr = fmax(maxerr, fabs(x[i] - y[i]));
        CHECKF(maxerr < 0.01, "%s: constant rows come back with error %g", t->name, maxerr);
    }
}

/* Hostile inputs (NaN, Inf, 1e38) must not crash or hit UB (this runs under UBSan in `make
 * asan`), and a clean block in the same row must still quantize well. */
static void test_quant_nonfinite(void) {
    float x[512], y[512];
    for (int ti = 0; ti < N_KTYPES + 1; ti++) {
        const int type = ti < N_KTYPES ? k_types[ti] : E0_TYPE_Q8_K;
        const e0_type_traits *t = e0_type_traits_of((uint32_t)type);
        _Alignas(4) uint8_t q[2 * 320];
        fill_row(x, 512, 0);
        x[1] = NAN, x[40] = INFINITY, x[77] = -INFINITY, x[130] = 1e38f, x[131] = -1e38f, x[200] = 1e-40f;
        t->from_float_ref(x, q, 512);
        t->to_float(q, y, 512);
        double se = 0, sx = 0;
        for (int i = 256; i < 512; i++) {
            se += (double)(x[i] - y[i]) * (x[i] - y[i]);
            sx += (double)x[i] * x[i];
        }
        CHECKF(sqrt(se / sx) < err_bound(type), "%s: clean block error %.4f", t->name, sqrt(se / sx));
    }
}

/* ======================================================================= dot products */

/* Quantize a random activation row to Q8_K and a weight row to `type`. */
typedef struct {
    int64_t n;
    void *w, *a;
    float *wf, *af; /* dequantized */
} dot_case;

static dot_case make_case(int type, int64_t n, int kind) {
    dot_case c = {.n = n};
    const e0_type_traits *t = e0_type_traits_of((uint32_t)type), *t8 = e0_type_traits_of(E0_TYPE_Q8_K);
    float *x = xalloc((size_t)n * 4);
    c.w = xalloc(e0_row_size((uint32_t)type, n));
    c.a = xalloc(e0_row_size(E0_TYPE_Q8_K, n));
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
static void free_case(dot_case *c) { free(c->w), free(c->a), free(c->wf), free(c->af); }

static void test_dot_ref_vs_f64(void) {
    for (int ti = 0; ti < N_KTYPES; ti++) {
        const e0_type_traits *t = e0_type_traits_of((uint32_t)k_types[ti]);
        for (int kind = 0; kind < 4; kind++) {
            for (int64_t n = 256; n <= 256 * 9; n += 256 * 8) {
                dot_case c = make_case(k_types[ti], n, kind);
                double exact = 0, mag = 0;
                for (int64_t i = 0; i < n; i++) {
                    exact += (double)c.wf[i] * c.af[i];
                    mag += fabs((double)c.wf[i] * c.af[i]);
                }
                float s = NAN;
                t->vec_dot[E0_SIMD_SCALAR](n, &s, c.w, c.a);
                CHECKF(fabs(s - exact) <= 2e-6 * mag + 1e-30, "%s n=%lld kind=%d: ref %.9g vs f64 %.9g (mag %g)", t->name,
                       (long long)n, kind, s, exact, mag);
                free_case(&c);
            }
        }
    }
}

/* Random bytes are valid blocks too (any code, any fp16 scale): the SIMD dots must still agree
 * with the reference and nothing may crash. Scales are forced finite and modest here. */
static void fill_random_blocks(int type, uint8_t *w, int64_t nb) {
    size_t bs = e0_type_traits_of((uint32_t)type)->type_size;
    for (size_t i = 0; i < bs * (size_t)nb; i++) w[i] = (uint8_t)rng_u64();
    for (int64_t b = 0; b < nb; b++) { /* fp16 fields: keep them in [2^-10, 2) */
        uint8_t *blk = w + (size_t)b * bs;
        size_t offs[2] = {0, 0};
        int nf = 0;
        switch (type) {
        case E0_TYPE_Q2_K: offs[0] = 80, offs[1] = 82, nf = 2; break;
        case E0_TYPE_Q3_K: offs[0] = 108, nf = 1; break;
        case E0_TYPE_Q4_K:
        case E0_TYPE_Q5_K: offs[0] = 0, offs[1] = 2, nf = 2; break;
        case E0_TYPE_Q6_K: offs[0] = 208, nf = 1; break;
        }
        for (int f = 0; f < nf; f++) le16(blk + offs[f], (uint16_t)(0x1400 + rng_u64() % 0x2800));
    }
}

static const char *level_name[3] = {"scalar", "avx2", "avx512"};

static void check_simd_level(int level) {
    for (int ti = 0; ti < N_KTYPES; ti++) {
        const e0_type_traits *t = e0_type_traits_of((uint32_t)k_types[ti]);
        e0_vec_dot_fn fn = t->vec_dot[level];
        if (!fn) continue;
        for (int kind = 0; kind < 5; kind++) {
            for (int64_t n = 256; n <= 256 * 13; n += 256 * 4) {
                dot_case c = make_case(k_types[ti], n, kind % 4);
                if (kind == 4) {
                    fill_random_blocks(k_types[ti], c.w, n / 256);
                    t->to_float(c.w, c.wf, n);
                }
                float ref = NAN, got = NAN;
                t->vec_dot[E0_SIMD_SCALAR](n, &ref, c.w, c.a);
                fn(n, &got, c.w, c.a);
                /* both are exact integer block sums with float scaling: only the float summation
                 * order differs. Compare relative to the sum of block magnitudes. */
                double mag = 0;
                for (int64_t i = 0; i < n; i++) mag += fabs((double)c.wf[i] * c.af[i]);
                CHECKF(fabs((double)got - ref) <= 1e-5 * mag + 1e-30, "%s %s n=%lld kind=%d: %.9g vs ref %.9g",
                       t->name, level_name[level], (long long)n, kind, got, ref);
                free_case(&c);
            }
        }
    }
}

static void run_simd(int level) {
    char name[128];
    int have = e0_simd_level() >= level;
    snprintf(name, sizeof name, "test_simd_%s_vs_ref", level_name[level]);
    t_begin(name);
    if (!have) t_skip("CPU lacks %s or E0_SIMD caps it", level_name[level]);
    else check_simd_level(level); /* the AVX-512 level implies VNNI (base/cpu.c) */
    t_end();
}

/* ======================================================================= Q8_K quantizer */

static void test_q8_K_ref_properties(void) {
    float x[512];
    e0_block_q8_K q[2];
    fill_row(x, 512, 0);
    x[37] = -9.0f; /* ggml: the largest magnitude always maps to -127, d = max / -127 */
    x[300] = 6.0f;
    e0_type_traits_of(E0_TYPE_Q8_K)->from_float_ref(x, q, 512);
    CHECK(q[0].qs[37] == -127);
    CHECKF(fabsf(q[0].d - 9.0f / 127.0f) < 1e-7f, "d=%g", q[0].d);
    CHECK(q[1].qs[300 - 256] == -127);
    CHECKF(fabsf(q[1].d + 6.0f / 127.0f) < 1e-7f, "d=%g", q[1].d);
    for (int b = 0; b < 2; b++) {
        for (int j = 0; j < 16; j++) {
            int sum = 0;
            for (int l = 0; l < 16; l++) sum += q[b].qs[16 * j + l];
            CHECKF(q[b].bsums[j] == sum, "bsums[%d]=%d, sum %d", j, q[b].bsums[j], sum);
        }
        for (int e = 0; e < 256; e++) {
            float back = q[b].d * q[b].qs[e];
            CHECKF(fabsf(back - x[256 * b + e]) <= fabsf(q[b].d) * 0.5001f, "elem %d: %g vs %g", e, back, x[256 * b + e]);
        }
    }
}

static void test_q8_K_simd_bytes(void) {
    const int64_t nb = 40, n = nb * 256;
    float *x = xalloc((size_t)n * 4);
    void *a = xalloc((size_t)nb * 320), *b = xalloc((size_t)nb * 320);
    for (int round = 0; round < 3; round++) {
        for (int64_t blk = 0; blk < nb; blk++) {
            float *v = x + blk * 256;
            fill_row(v, 256, (int)(blk % 4));
            switch (blk % 10) {
            case 4: memset(v, 0, 1024); break;                          /* all zero */
            case 5: v[3] = 7.0f, v[200] = -7.0f; break;                 /* +-max tie: first wins */
            case 6: v[9] = NAN; break;                                  /* non-finite input */
            case 7: v[100] = INFINITY; break;
            case 8: for (int i = 0; i < 256; i++) v[i] = (float)(i % 17) * 0.5f - 4; break; /* rounding ties */
            case 9: v[255] = -1e30f; break;
            }
        }
        memset(a, 0xAA, (size_t)nb * 320); /* the padding must be written too */
        memset(b, 0x55, (size_t)nb * 320);
        e0_type_traits_of(E0_TYPE_Q8_K)->from_float_ref(x, a, n);
        e0_quantize_q8_K_avx2(x, b, n);
        int bad = 0;
        for (int64_t blk = 0; blk < nb; blk++) bad += memcmp((char *)a + blk * 320, (char *)b + blk * 320, 320) != 0;
        CHECKF(bad == 0, "round %d: %d of %lld blocks differ", round, bad, (long long)nb);
    }
    free(x), free(a), free(b);
}

static void run_q8_K_simd(void) {
    int have = e0_simd_level() >= E0_SIMD_AVX2;
    t_begin("test_q8_K_simd_bytes");
    if (!have) t_skip("CPU lacks avx2 or E0_SIMD caps it");
    else test_q8_K_simd_bytes();
    t_end();
}

/* The table rows are filled in and consistent. */
static void test_table(void) {
    for (int ti = 0; ti < N_KTYPES; ti++) {
        const e0_type_traits *t = e0_type_traits_of((uint32_t)k_types[ti]);
        CHECK(t && t->to_float && t->from_float_ref && t->vec_dot[E0_SIMD_SCALAR] && t->vec_dot[E0_SIMD_AVX2]);
        CHECK(t && t->vec_dot_type == E0_TYPE_Q8_K);
        CHECK(t && t->block_size == QK_K && e0_row_size((uint32_t)k_types[ti], 2 * QK_K) == 2 * t->type_size);
        const e0_kernels *k = e0_kernels_of((uint32_t)k_types[ti]); /* no init call needed */
        CHECK(k && k->vec_dot && k->from_float);
    }
    const e0_type_traits *t8 = e0_type_traits_of(E0_TYPE_Q8_K);
    CHECK(t8->to_float && t8->from_float_ref && t8->vec_dot[E0_SIMD_SCALAR]);
    /* ggml's block sizes (GGUF files depend on them) */
    static const size_t ggml_size[N_KTYPES] = {84, 110, 144, 176, 210};
    for (int ti = 0; ti < N_KTYPES; ti++) CHECK(e0_type_traits_of((uint32_t)k_types[ti])->type_size == ggml_size[ti]);
    /* Q8_K is ours (never in a file): qs at 0 in 320-byte blocks, so aligned rows load aligned */
    CHECK(t8->type_size == 320 && offsetof(e0_block_q8_K, qs) == 0 && offsetof(e0_block_q8_K, d) == 288);
}

/* Selection per level: scalar means the reference kernels everywhere; the AVX2 Q8_K quantizer
 * from AVX2 up; each 4-token dot comes from its vec_dot's level. */
static void test_selection(void) {
    for (int ti = 0; ti < N_KTYPES; ti++) {
        const e0_type_traits *t = e0_type_traits_of((uint32_t)k_types[ti]);
        e0_kernels k = e0_kernels_at(t, E0_SIMD_SCALAR);
        CHECKF(k.vec_dot == t->vec_dot[E0_SIMD_SCALAR] && !k.vec_dot_4, "%s", t->name);
        for (int level = E0_SIMD_AVX2; level < E0_SIMD_LEVELS; level++) {
            k = e0_kernels_at(t, level);
            int want = t->vec_dot[level] ? level : E0_SIMD_AVX2; /* q2_K / q3_K: no AVX-512 dot */
            CHECKF(k.vec_dot == t->vec_dot[want] && k.vec_dot_4 == t->vec_dot_4[want], "%s level %d", t->name, level);
        }
    }
    const e0_type_traits *t8 = e0_type_traits_of(E0_TYPE_Q8_K);
    CHECK(e0_kernels_at(t8, E0_SIMD_SCALAR).from_float == t8->from_float_ref);
    CHECK(e0_kernels_at(t8, E0_SIMD_AVX2).from_float == e0_quantize_q8_K_avx2);
    CHECK(e0_kernels_at(t8, E0_SIMD_AVX512).from_float == e0_quantize_q8_K_avx2);
    CHECK(e0_kernels_of(E0_TYPE_Q8_K)->from_float == e0_kernels_at(t8, e0_simd_level()).from_float);
}

int main(void) {
    printf("# simd level: %s\n", e0_simd_name(e0_simd_level()));
    RUN(test_table);
    RUN(test_hand_q2_K);
    RUN(test_hand_q3_K);
    RUN(test_hand_q4_K);
    RUN(test_hand_q5_K);
    RUN(test_hand_q6_K);
    RUN(test_hand_q8_K);
    RUN(test_quant_error);
    RUN(test_quant_error_ggml_limits);
    RUN(test_quant_degenerate);
    RUN(test_quant_nonfinite);
    RUN(test_dot_ref_vs_f64);
    RUN(test_q8_K_ref_properties);
    run_q8_K_simd();
    run_simd(E0_SIMD_AVX2);
    run_simd(E0_SIMD_AVX512);
    RUN(test_selection);
    return T_DONE();
}
