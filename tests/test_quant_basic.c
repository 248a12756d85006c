/* test_quant_basic.c — the float and legacy block types (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1,
 * Q8_0, Q8_1): fp16/bf16 conversion against the F16C instructions, reference quantizers against
 * hand-computed blocks, dequant(quant(x)) error bounds, the reference vec_dot against a float64 dot of the
 * dequantized rows, every SIMD vec_dot against the reference, and the SIMD activation quantizers
 * against the scalar ones byte for byte. */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "base/cpu.h"
#include "quant/quant.h"
#include "quant/quant_basic.h"
#include "t.h"

/* ---------------- helpers ---------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd64(void) { /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}
static float rnd_unit(void) { return (float)((double)(rnd64() >> 11) / 9007199254740992.0) * 2.0f - 1.0f; }
static float bits_f(uint32_t b) {
    float f;
    memcpy(&f, &b, 4);
    return f;
}
static uint32_t f_bits(float f) {
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

/* Random activations / weights: mostly gaussian-ish values with an occasional outlier, and one
 * block in eight with a tiny or huge scale. */
static void fill_row(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i += 32) {
        float scale = (rnd64() % 8 == 0) ? (rnd64() % 2 ? 0.02f : 50.0f) : 1.0f;
        for (int64_t j = i; j < n && j < i + 32; j++) {
            float v = (rnd_unit() + rnd_unit() + rnd_unit()) * scale;
            if (rnd64() % 64 == 0) v *= 6;
            x[j] = v;
        }
    }
}

static int cpu_has_f16c(void) { return (e0_cpu_features_hw() & E0_CPU_F16C) != 0; }

__attribute__((target("f16c"))) static uint32_t hw_h2f_bits(uint16_t h) {
    __m128 v = _mm_cvtph_ps(_mm_set1_epi16((short)h));
    return f_bits(_mm_cvtss_f32(v));
}
__attribute__((target("f16c"))) static uint16_t hw_f2h(float f) {
    __m128i v = _mm_cvtps_ph(_mm_set1_ps(f), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return (uint16_t)_mm_extract_epi16(v, 0);
}

static const int64_t lengths[] = {32, 96, 160, 1024, 4096 + 32 * 3}; /* 1, 3, 5, 32, 131 blocks */
#define NLEN (int64_t)(sizeof lengths / sizeof lengths[0])

static const uint32_t float_types[] = {E0_TYPE_F32, E0_TYPE_F16, E0_TYPE_BF16};

/* ---------------- fp16 / bf16 conversion ---------------- */

static void test_fp16_to_fp32_exhaustive(void) {
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        uint32_t got = f_bits(e0_fp16_to_fp32((uint16_t)h)), want = hw_h2f_bits((uint16_t)h);
        if (got != want && bad++ < 5) CHECKF(0, "h=0x%04x got 0x%08x want 0x%08x", h, got, want);
    }
    CHECKF(bad == 0, "%d mismatches", bad);
}

static void test_fp32_to_fp16(void) {
    static const float edges[] = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.99f, 65520.0f, 65536.0f, 1e10f,
                                  6.1035156e-5f, 6.0975552e-5f, 5.9604645e-8f, 2.9802322e-8f, 2.9802326e-8f,
                                  1e-30f, 0.33333334f, 1.00048828125f, 1.00146484375f, 2049.0f, 2051.0f};
    int bad = 0, n = 0;
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
        for (int sign = 0; sign < 2; sign++) {
            float f = sign ? -edges[i] : edges[i];
            uint16_t got = e0_fp32_to_fp16(f), want = hw_f2h(f);
            if (got != want && bad++ < 5) CHECKF(0, "f=%a got 0x%04x want 0x%04x", (double)f, got, want);
        }
    }
    /* every float whose rounding lands on each fp16 value's neighborhood: halfway points +-1 ulp */
    for (uint32_t h = 0; h < 0x7c00; h++) {
        uint32_t lo = f_bits(e0_fp16_to_fp32((uint16_t)h)), hi = f_bits(e0_fp16_to_fp32((uint16_t)(h + 1)));
        uint32_t mid = lo + (hi - lo) / 2;
        for (uint32_t b = mid - 1; b <= mid + 1; b++) {
            for (int sign = 0; sign < 2; sign++) {
                float f = bits_f(b | (sign ? 0x80000000u : 0));
                uint16_t got = e0_fp32_to_fp16(f), want = hw_f2h(f);
                n++;
                if (got != want && bad++ < 5) CHECKF(0, "f=%a got 0x%04x want 0x%04x", (double)f, got, want);
            }
        }
    }
    /* random bit patterns (all exponents, NaNs and infinities included) */
    for (int i = 0; i < 1000000; i++, n++) {
        float f = bits_f((uint32_t)rnd64());
        uint16_t got = e0_fp32_to_fp16(f), want = hw_f2h(f);
        if (got != want && bad++ < 5) CHECKF(0, "f=%a got 0x%04x want 0x%04x", (double)f, got, want);
    }
    CHECKF(bad == 0, "%d mismatches of %d", bad, n);
}

static void test_bf16(void) {
    CHECK(e0_fp32_to_bf16(1.0f) == 0x3f80);
    CHECK(e0_fp32_to_bf16(-2.0f) == 0xc000);
    CHECK(e0_fp32_to_bf16(bits_f(0x3f808000)) == 0x3f80); /* tie, even below */
    CHECK(e0_fp32_to_bf16(bits_f(0x3f818000)) == 0x3f82); /* tie, odd below: up */
    CHECK(e0_fp32_to_bf16(bits_f(0x3f808001)) == 0x3f81); /* past the tie */
    CHECK(e0_fp32_to_bf16(bits_f(0x7f7fffff)) == 0x7f80); /* FLT_MAX rounds to inf */
    CHECK(e0_fp32_to_bf16(INFINITY) == 0x7f80);
    uint16_t nan = e0_fp32_to_bf16(bits_f(0x7f800001)); /* signaling NaN must stay a NaN */
    CHECKF((nan & 0x7f80) == 0x7f80 && (nan & 0x7f), "nan -> 0x%04x", nan);
    for (uint32_t h = 0; h < 65536; h++) {
        float f = e0_bf16_to_fp32((uint16_t)h);
        CHECK(f_bits(f) == h << 16);
        if (!isnan(f)) CHECK(e0_fp32_to_bf16(f) == h);
    }
}

/* ---------------- type table ---------------- */

static void test_table_filled(void) {
    static const uint32_t all[] = {E0_TYPE_F32, E0_TYPE_F16, E0_TYPE_BF16, E0_TYPE_Q4_0, E0_TYPE_Q4_1,
                                   E0_TYPE_Q5_0, E0_TYPE_Q5_1, E0_TYPE_Q8_0, E0_TYPE_Q8_1};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        const e0_type_traits *t = e0_type_traits_of(all[i]);
        CHECK(t != NULL);
        if (!t) continue;
        CHECKF(t->to_float && t->from_float_ref && t->vec_dot[E0_SIMD_SCALAR], "%s", t->name);
        if (all[i] != E0_TYPE_Q8_1) CHECKF(t->vec_dot[E0_SIMD_AVX2] != NULL, "%s has no AVX2 dot", t->name);
        const e0_kernels *k = e0_kernels_of(all[i]); /* no init call: resolved on first use */
        CHECKF(k && k->vec_dot && k->from_float, "%s", t->name);
    }
    static const int sizes[][2] = {{E0_TYPE_Q4_0, Q4_0_SIZE}, {E0_TYPE_Q4_1, Q4_1_SIZE}, {E0_TYPE_Q5_0, Q5_0_SIZE},
                                   {E0_TYPE_Q5_1, Q5_1_SIZE}, {E0_TYPE_Q8_0, Q8_0_SIZE}, {E0_TYPE_Q8_1, Q8_1_SIZE}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        CHECK(e0_type_traits_of((uint32_t)sizes[i][0])->type_size == (size_t)sizes[i][1]);
}

/* ---------------- reference quantizers: hand-computed blocks ---------------- */

static uint16_t h16(const uint8_t *p) { return e0_rd16(p); }

static void test_known_q4_0(void) {
    /* max-magnitude element -8 -> d = -8/-8 = 1, id = 1, q = (int)(x + 8.5) capped at 15 */
    float x[32] = {-8, 7, 7.6f, 0.4f, 0.5f, -0.5f, -3.2f, 2.49f};
    int want[32] = {0, 15, 15, 8, 9, 8, 5, 10};
    for (int j = 8; j < 32; j++) { x[j] = (float)(j % 8) - 4; want[j] = (j % 8) + 4; } /* exact: -4..3 -> q 4..11 */
    uint8_t b[Q4_0_SIZE];
    e0_type_traits_of(E0_TYPE_Q4_0)->from_float_ref(x, b, 32);
    CHECKF(h16(b) == 0x3c00, "d=0x%04x", h16(b));
    for (int j = 0; j < 16; j++)
        CHECKF(b[Q4_0_QS + j] == (want[j] | want[j + 16] << 4), "qs[%d]=0x%02x", j, b[Q4_0_QS + j]);
}

static void test_known_q4_1(void) {
    /* x = 10 + j%16 -> min 10, max 25, d = 1, q = (int)(x - 10 + 0.5) = j%16 */
    float x[32];
    for (int j = 0; j < 32; j++) x[j] = 10.0f + (float)(j % 16);
    x[5] = 15.49f; /* -> 5 */
    x[21] = 15.5f; /* -> 6 (the +0.5 then truncation rounds halves up) */
    uint8_t b[Q4_1_SIZE];
    e0_type_traits_of(E0_TYPE_Q4_1)->from_float_ref(x, b, 32);
    CHECKF(h16(b) == 0x3c00 && h16(b + Q4_1_M) == 0x4900, "d=0x%04x m=0x%04x", h16(b), h16(b + Q4_1_M));
    for (int j = 0; j < 16; j++) {
        int hi = j == 5 ? 6 : j;
        CHECKF(b[Q4_1_QS + j] == (j | hi << 4), "qs[%d]=0x%02x", j, b[Q4_1_QS + j]);
    }
}

static void test_known_q5(void) {
    /* Q5_0: x = j - 16 -> max -16, d = 1, q = j; Q5_1: x = j + 100 -> d = 1, m = 100, q = j */
    float x0[32], x1[32];
    for (int j = 0; j < 32; j++) x0[j] = (float)j - 16, x1[j] = (float)j + 100;
    uint8_t b0[Q5_0_SIZE], b1[Q5_1_SIZE];
    e0_type_traits_of(E0_TYPE_Q5_0)->from_float_ref(x0, b0, 32);
    e0_type_traits_of(E0_TYPE_Q5_1)->from_float_ref(x1, b1, 32);
    CHECKF(h16(b0) == 0x3c00, "q5_0 d=0x%04x", h16(b0));
    CHECKF(h16(b1) == 0x3c00 && h16(b1 + Q5_1_M) == 0x5640, "q5_1 d=0x%04x m=0x%04x", h16(b1), h16(b1 + Q5_1_M));
    CHECKF(e0_rd32(b0 + Q5_0_QH) == 0xffff0000u, "q5_0 qh=0x%08x", e0_rd32(b0 + Q5_0_QH));
    CHECKF(e0_rd32(b1 + Q5_1_QH) == 0xffff0000u, "q5_1 qh=0x%08x", e0_rd32(b1 + Q5_1_QH));
    for (int j = 0; j < 16; j++) {
        CHECKF(b0[Q5_0_QS + j] == (j | j << 4), "q5_0 qs[%d]=0x%02x", j, b0[Q5_0_QS + j]);
        CHECKF(b1[Q5_1_QS + j] == (j | j << 4), "q5_1 qs[%d]=0x%02x", j, b1[Q5_1_QS + j]);
    }
}

/* amax = 127 makes d = 1 and both inverse scales exactly 1, so the rounding rule alone decides:
 * the reference rounds halves away from zero, the activation quantizer (llama.cpp x86) to even. */
static const float tie_block[32] = {127, 0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 3.49f, -126.6f, 100, -7};
static const int8_t tie_ref[32] = {127, 1, 2, 3, -1, -3, 3, -127, 100, -7};
static const int8_t tie_act[32] = {127, 0, 2, 2, 0, -2, 3, -127, 100, -7};

static void test_known_q8(void) {
    uint8_t b0[Q8_0_SIZE], b1[Q8_1_SIZE];
    const int8_t *tabs[2] = {tie_ref, tie_act};
    for (int act = 0; act < 2; act++) {
        const int8_t *want = tabs[act];
        if (act) {
            e0_quantize_act_q8_0_scalar(tie_block, b0, 32);
            e0_quantize_act_q8_1_scalar(tie_block, b1, 32);
        } else {
            e0_type_traits_of(E0_TYPE_Q8_0)->from_float_ref(tie_block, b0, 32);
            e0_type_traits_of(E0_TYPE_Q8_1)->from_float_ref(tie_block, b1, 32);
        }
        int sum = 0;
        for (int j = 0; j < 32; j++) sum += want[j];
        CHECKF(h16(b0) == 0x3c00 && h16(b1) == 0x3c00, "act=%d d=0x%04x/0x%04x", act, h16(b0), h16(b1));
        CHECKF(h16(b1 + Q8_1_S) == e0_fp32_to_fp16((float)sum), "act=%d s=0x%04x sum=%d", act, h16(b1 + Q8_1_S), sum);
        CHECK(memcmp(b0 + Q8_0_QS, want, 32) == 0);
        CHECK(memcmp(b1 + Q8_1_QS, want, 32) == 0);
    }
    /* all-zero block: d = 0, quants 0 */
    float z[32] = {0};
    memset(b0, 0x55, sizeof b0);
    e0_type_traits_of(E0_TYPE_Q8_0)->from_float_ref(z, b0, 32);
    int nz = 0;
    for (int j = 0; j < Q8_0_SIZE; j++) nz += b0[j] != 0;
    CHECK(nz == 0);
}

/* ---------------- round trip error bounds ---------------- */

/* Largest allowed |x - dequant(quant(x))| for element j of a block, from the stored scales:
 * half a step, plus the fp16 rounding of d (and m), plus a full step where the top quant is
 * clamped (Q4_0/Q5_0 map +amax to 2^(b-1) which does not exist). */
static double elem_bound(uint32_t type, const uint8_t *b, float deq) {
    double sd = e0_fp16_to_fp32(e0_rd16(b)), d = fabs(sd), eps = 1.0 / 2048;
    int top = sd != 0 && fabs(deq / sd - (type == E0_TYPE_Q4_0 ? 7 : 15)) < 0.5; /* the clamped quant */
    switch (type) {
    case E0_TYPE_Q4_0: return (top ? 1.0 : 0.5) * d + 8 * eps * d + 1e-30;
    case E0_TYPE_Q5_0: return (top ? 1.0 : 0.5) * d + 16 * eps * d + 1e-30;
    case E0_TYPE_Q4_1: return 0.5 * d + 15 * eps * d + eps * fabs(e0_fp16_to_fp32(e0_rd16(b + Q4_1_M))) + 1e-30;
    case E0_TYPE_Q5_1: return 0.5 * d + 31 * eps * d + eps * fabs(e0_fp16_to_fp32(e0_rd16(b + Q5_1_M))) + 1e-30;
    default: return 0.5 * d + 127 * eps * d + 1e-30; /* Q8_0, Q8_1 */
    }
}

static void test_roundtrip(void) {
    static const uint32_t types[] = {E0_TYPE_Q4_0, E0_TYPE_Q4_1, E0_TYPE_Q5_0, E0_TYPE_Q5_1, E0_TYPE_Q8_0, E0_TYPE_Q8_1};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const e0_type_traits *t = e0_type_traits_of(types[ti]);
        for (int64_t li = 0; li < NLEN; li++) {
            int64_t n = lengths[li];
            float *x = malloc((size_t)n * 4), *y = malloc((size_t)n * 4);
            uint8_t *q = malloc(e0_row_size(types[ti], n));
            fill_row(x, n);
            t->from_float_ref(x, q, n);
            t->to_float(q, y, n);
            int bad = 0;
            for (int64_t i = 0; i < n; i++) {
                const uint8_t *blk = q + (i / 32) * t->type_size;
                double err = fabs((double)x[i] - y[i]), lim = elem_bound(types[ti], blk, y[i]);
                if (!(err <= lim) && bad++ < 3)
                    CHECKF(0, "%s n=%lld i=%lld x=%g got %g err %g > %g", t->name, (long long)n, (long long)i,
                           (double)x[i], (double)y[i], err, lim);
            }
            /* the bound is not vacuous: the typical error is a visible fraction of a step */
            free(x), free(y), free(q);
        }
    }
    /* float types: F32 exact, F16/BF16 within their rounding */
    for (size_t ti = 0; ti < 3; ti++) {
        const e0_type_traits *t = e0_type_traits_of(float_types[ti]);
        int64_t n = 1001;
        float x[1001], y[1001];
        uint8_t q[4 * 1001];
        fill_row(x, n);
        t->from_float_ref(x, q, n);
        t->to_float(q, y, n);
        double rel = ti == 0 ? 0 : ti == 1 ? 1.0 / 2048 : 1.0 / 256;
        for (int64_t i = 0; i < n; i++)
            CHECKF(fabs((double)x[i] - y[i]) <= rel * fabs(x[i]) + (ti == 1 ? 6e-8 : 0), "%s i=%lld", t->name,
                   (long long)i);
    }
}

/* ---------------- dot products ---------------- */

/* A random weight row straight from random bytes (every quant bit pattern, Q8_0's -128 included)
 * with sane fp16 scales and mins. */
static void random_weights(uint32_t type, uint8_t *w, int64_t n) {
    const e0_type_traits *t = e0_type_traits_of(type);
    if (!t->is_quantized) {
        float *x = malloc((size_t)n * 4);
        fill_row(x, n);
        t->from_float_ref(x, w, n);
        free(x);
        return;
    }
    size_t bytes = e0_row_size(type, n);
    for (size_t i = 0; i < bytes; i++) w[i] = (uint8_t)rnd64();
    for (int64_t b = 0; b < n / 32; b++) {
        uint8_t *blk = w + b * t->type_size;
        e0_wr16(blk, e0_fp32_to_fp16(rnd_unit() * 0.05f));
        if (type == E0_TYPE_Q4_1 || type == E0_TYPE_Q5_1) e0_wr16(blk + 2, e0_fp32_to_fp16(rnd_unit()));
    }
}

/* Float64 dot of dequantized weights with dequantized activations, and sum |w_i a_i|. For the
 * Q8_1 pairs the min term uses s_y = fp16(d_y * sum q_y), as the kernels must. */
static double dot64(uint32_t type, const uint8_t *w, const uint8_t *a, int64_t n, double *abs_sum, double *s_err) {
    const e0_type_traits *t = e0_type_traits_of(type), *at = e0_type_traits_of((uint32_t)t->vec_dot_type);
    float *x = malloc((size_t)n * 4), *y = malloc((size_t)n * 4);
    t->to_float(w, x, n);
    at->to_float(a, y, n);
    /* F16/BF16 weights meet activations rounded to their own type (llama.cpp's vec_dot_type) */
    for (int64_t i = 0; i < n && type == E0_TYPE_F16; i++) y[i] = e0_fp16_to_fp32(e0_fp32_to_fp16(y[i]));
    for (int64_t i = 0; i < n && type == E0_TYPE_BF16; i++) y[i] = e0_bf16_to_fp32(e0_fp32_to_bf16(y[i]));
    double sum = 0, abs = 0;
    *s_err = 0;
    for (int64_t i = 0; i < n; i++) sum += (double)x[i] * y[i], abs += fabs((double)x[i] * y[i]);
    if (t->vec_dot_type == E0_TYPE_Q8_1) {
        /* the kernels use m * s_y with s_y rounded to fp16: allow that rounding */
        size_t mo = type == E0_TYPE_Q4_1 ? Q4_1_M : Q5_1_M;
        for (int64_t b = 0; b < n / 32; b++) {
            double m = e0_fp16_to_fp32(e0_rd16(w + b * t->type_size + mo));
            double s = e0_fp16_to_fp32(e0_rd16(a + b * Q8_1_SIZE + Q8_1_S));
            *s_err += fabs(m * s) / 2048 + fabs(m) * 32 * 127 * fabs(e0_fp16_to_fp32(e0_rd16(a + b * Q8_1_SIZE))) / 2048;
        }
    }
    free(x), free(y);
    *abs_sum = abs;
    return sum;
}

static const uint32_t dot_types[] = {E0_TYPE_F32,  E0_TYPE_F16,  E0_TYPE_BF16, E0_TYPE_Q4_0,
                                     E0_TYPE_Q4_1, E0_TYPE_Q5_0, E0_TYPE_Q5_1, E0_TYPE_Q8_0};
#define NDOT (sizeof dot_types / sizeof dot_types[0])

/* Rows for a dot test: weights of `type` and activations quantized to its vec_dot_type. */
typedef struct {
    int64_t n;
    uint8_t *w, *a;
} dot_case;

static dot_case make_case(uint32_t type, int64_t n) {
    const e0_type_traits *t = e0_type_traits_of(type);
    dot_case c = {n, malloc(e0_row_size(type, n) + 1), malloc(e0_row_size((uint32_t)t->vec_dot_type, n) + 1)};
    random_weights(type, c.w, n);
    float *x = malloc((size_t)n * 4);
    fill_row(x, n);
    e0_kernels_of((uint32_t)t->vec_dot_type)->from_float(x, c.a, n);
    free(x);
    return c;
}

static void test_vec_dot_ref(void) {
    static const int64_t float_lens[] = {1, 7, 33, 1000, 4099};
    for (size_t ti = 0; ti < NDOT; ti++) {
        const e0_type_traits *t = e0_type_traits_of(dot_types[ti]);
        for (int64_t li = 0; li < NLEN; li++) {
            int64_t n = t->is_quantized ? lengths[li] : float_lens[li];
            dot_case c = make_case(dot_types[ti], n);
            double abs, s_err, want = dot64(dot_types[ti], c.w, c.a, n, &abs, &s_err);
            float got;
            t->vec_dot[E0_SIMD_SCALAR](n, &got, c.w, c.a);
            double lim = 1e-5 * abs + s_err + 1e-30;
            CHECKF(fabs(got - want) <= lim, "%s n=%lld got %.9g want %.9g (lim %g)", t->name, (long long)n,
                   (double)got, want, lim);
            free(c.w), free(c.a);
        }
    }
}

/* One SIMD level against the reference, for every type; skipped when unavailable. */
static void check_simd_dots(int level) {
    static const int64_t float_lens[] = {1, 7, 15, 17, 33, 63, 64, 65, 1000, 4099};
    char name[128];
    int avail = e0_simd_level() >= level;
    for (size_t ti = 0; ti < NDOT; ti++) {
        const e0_type_traits *t = e0_type_traits_of(dot_types[ti]);
        e0_vec_dot_fn fn = t->vec_dot[level];
        if (!fn) continue; /* no kernel at this level for this type: the reference is used */
        snprintf(name, sizeof name, "vec_dot_%s_%s", e0_simd_name(level), t->name);
        t_begin(name);
        if (!avail) t_skip("CPU lacks %s or E0_SIMD caps it", e0_simd_name(level));
        else {
            int nl = t->is_quantized ? (int)NLEN : 10;
            for (int li = 0; li < nl; li++) {
                int64_t n = t->is_quantized ? lengths[li] : float_lens[li];
                for (int rep = 0; rep < 4; rep++) {
                    dot_case c = make_case(dot_types[ti], n);
                    double abs, s_err;
                    dot64(dot_types[ti], c.w, c.a, n, &abs, &s_err);
                    float ref, got;
                    t->vec_dot[E0_SIMD_SCALAR](n, &ref, c.w, c.a);
                    fn(n, &got, c.w, c.a);
                    double lim = 1e-5 * abs + 1e-30;
                    CHECKF(fabs((double)got - ref) <= lim, "%s n=%lld got %.9g ref %.9g (lim %g)", t->name,
                           (long long)n, (double)got, (double)ref, lim);
                    /* unaligned rows must work too */
                    memmove(c.w + 1, c.w, e0_row_size(dot_types[ti], n));
                    float got2;
                    fn(n, &got2, c.w + 1, c.a);
                    CHECK(got2 == got);
                    free(c.w), free(c.a);
                }
            }
        }
        t_end();
    }
}

static void test_dots_avx2(void) { check_simd_dots(E0_SIMD_AVX2); }
static void test_dots_avx512(void) { check_simd_dots(E0_SIMD_AVX512); }

/* An integer-exactness check that does not depend on float order: with every scale 1 the dot is
 * an integer the float accumulators hold exactly. */
static void test_dots_integer_exact(void) {
    for (size_t ti = 3; ti < NDOT; ti++) {
        uint32_t type = dot_types[ti];
        const e0_type_traits *t = e0_type_traits_of(type);
        int64_t n = 32 * 9; /* 9 blocks: every |partial sum| < 2^24 stays exact in float */
        dot_case c = make_case(type, n);
        size_t asz = e0_type_traits_of((uint32_t)t->vec_dot_type)->type_size;
        for (int64_t b = 0; b < n / 32; b++) {
            e0_wr16(c.w + b * t->type_size, 0x3c00);
            if (type == E0_TYPE_Q4_1 || type == E0_TYPE_Q5_1) e0_wr16(c.w + b * t->type_size + 2, 0);
            e0_wr16(c.a + b * asz, 0x3c00);
        }
        double abs, s_err, want = dot64(type, c.w, c.a, n, &abs, &s_err);
        float ref, got;
        t->vec_dot[E0_SIMD_SCALAR](n, &ref, c.w, c.a);
        CHECKF((double)ref == want, "%s ref %.1f want %.1f", t->name, (double)ref, want);
        for (int l = E0_SIMD_AVX2; l < E0_SIMD_LEVELS; l++) {
            if (!t->vec_dot[l] || e0_simd_level() < l) continue;
            t->vec_dot[l](n, &got, c.w, c.a);
            CHECKF((double)got == want, "%s level %d got %.1f want %.1f", t->name, l, (double)got, want);
        }
        free(c.w), free(c.a);
    }
}

/* llama.cpp's AVX2 order, emulated in scalar code: per block, eight int32 lane sums of four
 * consecutive products, one FMA per lane, blocks in order; then ((a0+a4)+(a2+a6)) +
 * ((a1+a5)+(a3+a7)); then the m_x * s_y terms summed separately. The SIMD kernels must give
 * exactly this float. */
static float llama_order_dot(uint32_t type, const uint8_t *w, const uint8_t *a, int64_t n) {
    const e0_type_traits *t = e0_type_traits_of(type);
    size_t asz = e0_type_traits_of((uint32_t)t->vec_dot_type)->type_size;
    int qs_off = type == E0_TYPE_Q4_0 ? Q4_0_QS : type == E0_TYPE_Q4_1 ? Q4_1_QS : type == E0_TYPE_Q5_0 ? Q5_0_QS
               : type == E0_TYPE_Q5_1 ? Q5_1_QS : Q8_0_QS;
    int has_min = type == E0_TYPE_Q4_1 || type == E0_TYPE_Q5_1;
    float acc[8] = {0}, summs = 0;
    for (int64_t b = 0; b < n / 32; b++) {
        const uint8_t *x = w + b * t->type_size, *y = a + b * asz;
        const int8_t *qy = (const int8_t *)(y + (asz == Q8_1_SIZE ? Q8_1_QS : Q8_0_QS));
        int q[32];
        for (int j = 0; j < 32; j++) {
            if (type == E0_TYPE_Q8_0) { q[j] = (int8_t)x[qs_off + j]; continue; }
            q[j] = j < 16 ? x[qs_off + j] & 15 : x[qs_off + j - 16] >> 4;
            if (type == E0_TYPE_Q5_0 || type == E0_TYPE_Q5_1) q[j] |= (int)((e0_rd32(x + (type == E0_TYPE_Q5_0 ? Q5_0_QH : Q5_1_QH)) >> j) & 1) << 4;
            if (type == E0_TYPE_Q4_0) q[j] -= 8;
            if (type == E0_TYPE_Q5_0) q[j] -= 16;
        }
        float d = e0_fp16_to_fp32(e0_rd16(x)) * e0_fp16_to_fp32(e0_rd16(y));
        for (int l = 0; l < 8; l++) {
            int lane = 0;
            for (int k = 0; k < 4; k++) lane += q[4 * l + k] * qy[4 * l + k];
            acc[l] = fmaf(d, (float)lane, acc[l]);
        }
        if (has_min) summs += e0_fp16_to_fp32(e0_rd16(x + 2)) * e0_fp16_to_fp32(e0_rd16(y + Q8_1_S));
    }
    return (((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]))) + summs;
}

static void test_dots_llama_order(void) {
    for (size_t ti = 3; ti < NDOT; ti++) {
        uint32_t type = dot_types[ti];
        const e0_type_traits *t = e0_type_traits_of(type);
        for (int64_t li = 0; li < NLEN; li++) {
            dot_case c = make_case(type, lengths[li]);
            float want = llama_order_dot(type, c.w, c.a, c.n), got;
            for (int l = E0_SIMD_AVX2; l < E0_SIMD_LEVELS; l++) {
                if (!t->vec_dot[l] || e0_simd_level() < l) continue;
                t->vec_dot[l](c.n, &got, c.w, c.a);
                CHECKF(got == want, "%s level %d n=%lld got %.9g want %.9g", t->name, l, (long long)c.n,
                       (double)got, (double)want);
            }
            free(c.w), free(c.a);
        }
    }
}

/* ---------------- activation quantizers ---------------- */

static void test_act_quant_simd(void) {
    char name[128];
    int avail = e0_simd_level() >= E0_SIMD_AVX2;
    snprintf(name, sizeof name, "act_quant_avx2_byte_identical");
    t_begin(name);
    if (!avail) t_skip("CPU lacks AVX2 or E0_SIMD caps it");
    else {
        int64_t n = 32 * 257;
        float *x = malloc((size_t)n * 4);
        uint8_t *r0 = malloc((size_t)n / 32 * Q8_0_SIZE), *s0 = malloc((size_t)n / 32 * Q8_0_SIZE);
        uint8_t *r1 = malloc((size_t)n / 32 * Q8_1_SIZE), *s1 = malloc((size_t)n / 32 * Q8_1_SIZE);
        for (int rep = 0; rep < 20; rep++) {
            fill_row(x, n);
            if (rep % 2) { /* rows full of exact halves: every rounding tie */
                for (int64_t i = 0; i < n; i++) x[i] = (float)((int)(rnd64() % 255) - 127) * (i % 64 < 32 ? 0.5f : 1.0f);
                memcpy(x, tie_block, sizeof tie_block);
                memset(x + 32, 0, 32 * 4); /* an all-zero block */
            }
            e0_quantize_act_q8_0_scalar(x, r0, n);
            e0_quantize_act_q8_0_avx2(x, s0, n);
            e0_quantize_act_q8_1_scalar(x, r1, n);
            e0_quantize_act_q8_1_avx2(x, s1, n);
            CHECKF(memcmp(r0, s0, (size_t)n / 32 * Q8_0_SIZE) == 0, "q8_0 rep %d", rep);
            CHECKF(memcmp(r1, s1, (size_t)n / 32 * Q8_1_SIZE) == 0, "q8_1 rep %d", rep);
        }
        /* the quantizer in use is the activation quantizer */
        fill_row(x, n);
        e0_kernels_of(E0_TYPE_Q8_0)->from_float(x, s0, n);
        e0_quantize_act_q8_0_scalar(x, r0, n);
        CHECK(memcmp(r0, s0, (size_t)n / 32 * Q8_0_SIZE) == 0);
        free(x), free(r0), free(s0), free(r1), free(s1);
    }
    t_end();
}

/* The activation quantizer and ggml's reference differ only in rounding: same d, quants within 1. */
static void test_act_vs_ref(void) {
    int64_t n = 32 * 64;
    float *x = malloc((size_t)n * 4);
    uint8_t *r = malloc((size_t)n / 32 * Q8_0_SIZE), *s = malloc((size_t)n / 32 * Q8_0_SIZE);
    fill_row(x, n);
    e0_type_traits_of(E0_TYPE_Q8_0)->from_float_ref(x, r, n);
    e0_quantize_act_q8_0_scalar(x, s, n);
    int diffs = 0;
    for (int64_t b = 0; b < n / 32; b++) {
        CHECK(e0_rd16(r + b * Q8_0_SIZE) == e0_rd16(s + b * Q8_0_SIZE));
        for (int j = 0; j < 32; j++) {
            int d = (int8_t)r[b * Q8_0_SIZE + 2 + j] - (int8_t)s[b * Q8_0_SIZE + 2 + j];
            CHECK(d >= -1 && d <= 1);
            diffs += d != 0;
        }
    }
    CHECKF(diffs < 8, "%d quants differ", diffs);
    free(x), free(r), free(s);
}

/* Per level, the kernels are the best the table has at or below it; the activation quantizer
 * gives the same bytes at every level (so E0_SIMD=scalar reproduces AVX2 logits inputs). Only the
 * levels this CPU runs are exercised. */
static void test_levels(void) {
    int64_t n = 32 * 16;
    float x[32 * 16];
    uint8_t q[E0_SIMD_LEVELS][16 * Q8_1_SIZE];
    fill_row(x, n);
    const int top = e0_simd_level();
    const e0_type_traits *t = e0_type_traits_of(E0_TYPE_Q8_0);
    for (int level = E0_SIMD_SCALAR; level <= top; level++) {
        e0_vec_dot_fn want = level >= E0_SIMD_AVX2 ? t->vec_dot[E0_SIMD_AVX2] : t->vec_dot[E0_SIMD_SCALAR];
        e0_kernels k = e0_kernels_at(t, level);
        CHECKF(k.vec_dot == want, "level %d", level); /* Q8_0 has no AVX-512 dot: AVX2's stays */
        CHECKF(k.vec_dot_4 == t->vec_dot_4[level >= E0_SIMD_AVX2 ? E0_SIMD_AVX2 : E0_SIMD_SCALAR], "level %d", level);
        e0_kernels_at(e0_type_traits_of(E0_TYPE_Q8_1), level).from_float(x, q[level], n);
        CHECKF(memcmp(q[0], q[level], sizeof q[0]) == 0, "level %d", level);
    }
    /* F32 has an AVX-512 dot but no 4-token one: vec_dot_4 must follow vec_dot's level */
    const e0_type_traits *f = e0_type_traits_of(E0_TYPE_F32);
    CHECK(e0_kernels_at(f, E0_SIMD_AVX512).vec_dot == f->vec_dot[E0_SIMD_AVX512]);
    CHECK(e0_kernels_at(f, E0_SIMD_AVX512).vec_dot_4 == NULL);
    CHECK(e0_kernels_at(f, E0_SIMD_SCALAR).from_float == f->from_float_ref);
    /* what runs is the table's choice at this process's level, for every type */
    for (uint32_t id = 0; id < E0_TYPE_COUNT; id++) {
        const e0_type_traits *r = e0_type_traits_of(id);
        const e0_kernels *in_use = e0_kernels_of(id);
        CHECKF((r == NULL) == (in_use == NULL), "type %u", id);
        if (!r || !in_use) continue;
        e0_kernels k = e0_kernels_in_use(r, top);
        CHECKF(in_use->vec_dot == k.vec_dot && in_use->vec_dot_4 == k.vec_dot_4 && in_use->from_float == k.from_float &&
                   in_use->gemm == k.gemm,
               "%s", r->name);
        /* a level without a GEMM never displaces a lower level's: the set drops to that level */
        const e0_kernels at = e0_kernels_at(r, top);
        if (at.gemm) CHECKF(k.vec_dot == at.vec_dot && k.gemm == at.gemm, "%s", r->name);
        for (int l = top - 1; !at.gemm && l > E0_SIMD_SCALAR; l--)
            if (e0_kernels_at(r, l).gemm) {
                CHECKF(k.gemm == e0_kernels_at(r, l).gemm && k.vec_dot == e0_kernels_at(r, l).vec_dot, "%s", r->name);
                break;
            }
    }
    /* q4_K: AVX-512 dots but only an AVX2 GEMM, so an AVX-512 process runs the AVX2 set */
    const e0_type_traits *q4 = e0_type_traits_of(E0_TYPE_Q4_K);
    if (!q4->gemm[E0_SIMD_AVX512] && q4->gemm[E0_SIMD_AVX2])
        CHECK(e0_kernels_in_use(q4, E0_SIMD_AVX512).vec_dot == q4->vec_dot[E0_SIMD_AVX2] &&
              e0_kernels_in_use(q4, E0_SIMD_AVX512).gemm == q4->gemm[E0_SIMD_AVX2]);
}

/* Features -> level, and the E0_SIMD caps. */
static void test_cpu_levels(void) {
    const unsigned avx2 = E0_CPU_AVX2 | E0_CPU_FMA | E0_CPU_F16C, all = avx2 | E0_CPU_AVX512_ALL;
    CHECK(e0_simd_level_for(0) == E0_SIMD_SCALAR);
    CHECK(e0_simd_level_for(E0_CPU_AVX2 | E0_CPU_FMA) == E0_SIMD_SCALAR); /* no F16C */
    CHECK(e0_simd_level_for(avx2) == E0_SIMD_AVX2);
    CHECK(e0_simd_level_for(all & ~(unsigned)E0_CPU_AVX512VNNI) == E0_SIMD_AVX2); /* every AVX-512 kernel uses VNNI */
    CHECK(e0_simd_level_for(all) == E0_SIMD_AVX512);
    CHECK(e0_simd_level_for(E0_CPU_AVX512_ALL) == E0_SIMD_SCALAR);
    CHECK(e0_cpu_features_capped(all, NULL) == all);
    CHECK(e0_cpu_features_capped(all, "scalar") == 0);
    CHECK(e0_cpu_features_capped(all, "avx2") == avx2);
    CHECK(e0_cpu_features_capped(all, "bogus") == all);
    CHECK(e0_cpu_features() == e0_cpu_features_capped(e0_cpu_features_hw(), getenv("E0_SIMD")));
    CHECK(e0_simd_level() == e0_simd_level_for(e0_cpu_features()));
}

int main(void) {
    printf("# simd level: %s\n", e0_simd_name(e0_simd_level()));
    if (cpu_has_f16c()) {
        RUN(test_fp16_to_fp32_exhaustive);
        RUN(test_fp32_to_fp16);
    } else {
        t_begin("fp16_vs_f16c");
        t_skip("CPU lacks F16C");
        t_end();
    }
    RUN(test_bf16);
    RUN(test_table_filled);
    RUN(test_known_q4_0);
    RUN(test_known_q4_1);
    RUN(test_known_q5);
    RUN(test_known_q8);
    RUN(test_roundtrip);
    RUN(test_vec_dot_ref);
    test_dots_avx2();
    test_dots_avx512();
    RUN(test_dots_integer_exact);
    RUN(test_dots_llama_order);
    test_act_quant_simd();
    RUN(test_act_vs_ref);
    RUN(test_levels);
    RUN(test_cpu_levels);
    return T_DONE();
}
