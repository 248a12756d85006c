/* test_quant_iq4.c — the kernels of IQ4_NL, IQ4_XS, MXFP4, NVFP4 (quant_iq4.c) and TQ1_0, TQ2_0,
 * Q1_0, Q2_0 (quant_tern.c): dequantization of hand-built blocks against values computed here
 * from the format description (ggml-common.h), the scale-code conversions, the reference
 * quantizers (error, determinism, exact rows, hostile input, the importance-matrix variants), the
 * scalar dots against a float64 dot of the dequantized rows, every SIMD dot against the scalar one
 * on unaligned rows and odd block counts, and the IQ4_XS / MXFP4 prefill GEMMs and e0_matmul_run
 * against their vec_dot bit for bit. (Bit-exactness with llama.cpp's own dequantization and
 * quantizer is checked by test_llamacpp.) */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kernels.h"
#include "quant/quant.h"
#include "quant/quant_iq4.h"
#include "quant/quant_tern.h"
#include "t.h"

static const int new_types[] = {E0_TYPE_IQ4_NL, E0_TYPE_IQ4_XS, E0_TYPE_MXFP4, E0_TYPE_NVFP4,
                                E0_TYPE_TQ1_0,  E0_TYPE_TQ2_0,  E0_TYPE_Q1_0,  E0_TYPE_Q2_0};
#define N_NEW (int)(sizeof new_types / sizeof new_types[0])

#define T_RNG_SEED 0x2545F4914F6CDD1Dull
#include "t_rand.h"

static const e0_type_traits *tr(int type) { return e0_type_traits_of((uint32_t)type); }

/* The spec's values, written out here: IQ4_NL's code table and E2M1 (FP4) values. */
static const float iq4nl_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
static const float e2m1[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};

/* UE4M3 by the spec (bias 7, 3 mantissa bits, no sign: the top bit of the byte is not part of
 * it in ggml, 0x7F is NaN and reads as 0). */
static double ue4m3_value(uint8_t x) {
    if (x == 0x7F) return 0;
    int e = (x >> 3) & 0xF, m = x & 7;
    return e == 0 ? ldexp(m, -9) : ldexp(1 + m / 8.0, e - 7);
}

#define H_HALF 0x3800    /* 0.5 */
#define H_QUARTER 0x3400 /* 0.25 */
#define H_NEG_3_8 0xB600 /* -0.375 */

/* ======================================================================= hand-built blocks */

static int count_bad(const float *out, const double *want, int n) {
    int bad = 0;
    for (int e = 0; e < n; e++) bad += (double)out[e] != want[e];
    return bad;
}

static void test_hand_iq4_nl(void) {
    uint8_t b[2 * IQ4_NL_SIZE] = {0};
    double want[64];
    for (int blk = 0; blk < 2; blk++) {
        uint8_t *p = b + blk * IQ4_NL_SIZE;
        le16(p, blk ? H_NEG_3_8 : H_HALF);
        for (int e = 0; e < 32; e++) {
            int q = (e * 7 + 3 + blk) % 16;
            p[2 + e % 16] |= (uint8_t)(q << (e < 16 ? 0 : 4));
            want[32 * blk + e] = (blk ? -0.375 : 0.5) * iq4nl_values[q];
        }
    }
    float out[64];
    tr(E0_TYPE_IQ4_NL)->to_float(b, out, 64);
    int bad = count_bad(out, want, 64);
    CHECKF(bad == 0, "%d of 64 values differ", bad);
}

/* iq4_xs: d @0, scales_h @2 (2 bits per sub-block), scales_l[4] @4 (nibble per sub-block), qs @8. */
static void test_hand_iq4_xs(void) {
    uint8_t b[136] = {0};
    double want[256];
    int ls[8];
    uint16_t sh = 0;
    le16(b, H_QUARTER);
    for (int ib = 0; ib < 8; ib++) {
        ls[ib] = (ib * 13 + 5) % 64;
        b[4 + ib / 2] |= (uint8_t)((ls[ib] & 0xF) << (4 * (ib % 2)));
        sh |= (uint16_t)((ls[ib] >> 4) << (2 * ib));
    }
    le16(b + 2, sh);
    for (int e = 0; e < 256; e++) {
        int ib = e / 32, j = e % 32, q = (e * 5 + e / 11) % 16;
        b[8 + 16 * ib + j % 16] |= (uint8_t)(q << (j < 16 ? 0 : 4));
        want[e] = 0.25 * (ls[ib] - 32) * iq4nl_values[q];
    }
    float out[256];
    tr(E0_TYPE_IQ4_XS)->to_float(b, out, 256);
    int bad = count_bad(out, want, 256);
    CHECKF(bad == 0, "%d of 256 values differ", bad);
}

/* mxfp4: e @0 (scale 2^(e-127) on the E2M1 values), qs @1; exponents 0 and 1 are subnormal
 * scales, 254 near the top. */
static void test_hand_mxfp4(void) {
    static const uint8_t es[5] = {127, 130, 0, 1, 200};
    uint8_t b[5 * MXFP4_SIZE] = {0};
    double want[160];
    for (int blk = 0; blk < 5; blk++) {
        uint8_t *p = b + blk * MXFP4_SIZE;
        p[0] = es[blk];
        for (int e = 0; e < 32; e++) {
            int q = (e * 3 + blk * 5) % 16;
            p[1 + e % 16] |= (uint8_t)(q << (e < 16 ? 0 : 4));
            want[32 * blk + e] = e2m1[q] * ldexp(1, es[blk] - 127);
        }
    }
    float out[160];
    tr(E0_TYPE_MXFP4)->to_float(b, out, 160);
    int bad = count_bad(out, want, 160);
    CHECKF(bad == 0, "%d of 160 values differ", bad);
}

/* nvfp4: d[4] UE4M3 @0, qs[32] @4: sub-block s in bytes 4 + 8s .. 4 + 8s + 7, element j of it in
 * the low nibble of byte j % 8 (j < 8) or the high one. */
static void test_hand_nvfp4(void) {
    static const uint8_t sc[8] = {0x38, 0x05, 0x7F, 0xFF, 0x7E, 0x01, 0x80, 0x4B};
    uint8_t b[2 * NVFP4_SIZE] = {0};
    double want[128];
    for (int blk = 0; blk < 2; blk++) {
        uint8_t *p = b + blk * NVFP4_SIZE;
        for (int s = 0; s < 4; s++) p[s] = sc[4 * blk + s];
        for (int e = 0; e < 64; e++) {
            int s = e / 16, j = e % 16, q = (e * 11 + blk + e / 7) % 16;
            p[4 + 8 * s + j % 8] |= (uint8_t)(q << (j < 8 ? 0 : 4));
            want[64 * blk + e] = e2m1[q] * ue4m3_value(sc[4 * blk + s]);
        }
    }
    float out[128];
    tr(E0_TYPE_NVFP4)->to_float(b, out, 128);
    int bad = count_bad(out, want, 128);
    CHECKF(bad == 0, "%d of 128 values differ", bad);
}

/* tq1_0: qs[48] @0, qh[4] @48, d @52. Byte = ceil(q * 256 / 243) with q the trits (value + 1)
 * as base-3 digits, most significant first: byte m < 32 holds elements m + 32k (k = 0..4), byte
 * 32 + m (m < 16) elements 160 + m + 16k, qh[j] elements 240 + j + 4k (k = 0..3, last digit 0). */
static uint8_t tq1_byte(const int *t, int first, int stride, int count) {
    int q = 0;
    for (int k = 0; k < 5; k++) q = 3 * q + (k < count ? t[first + k * stride] : 0);
    return (uint8_t)((q * 256 + 242) / 243);
}

static void test_hand_tq1_0(void) {
    uint8_t b[54] = {0};
    int t[256];
    double want[256];
    for (int e = 0; e < 256; e++) t[e] = (e * 7 + e / 13) % 3;
    for (int m = 0; m < 32; m++) b[m] = tq1_byte(t, m, 32, 5);
    for (int m = 0; m < 16; m++) b[32 + m] = tq1_byte(t, 160 + m, 16, 5);
    for (int j = 0; j < 4; j++) b[48 + j] = tq1_byte(t, 240 + j, 4, 4);
    le16(b + 52, H_NEG_3_8);
    for (int e = 0; e < 256; e++) want[e] = -0.375 * (t[e] - 1);
    float out[256];
    tr(E0_TYPE_TQ1_0)->to_float(b, out, 256);
    int bad = count_bad(out, want, 256);
    CHECKF(bad == 0, "%d of 256 values differ", bad);
    uint8_t tt[256];
    e0_tq1_0_trits(b, tt);
    bad = 0;
    for (int e = 0; e < 256; e++) bad += tt[e] != t[e];
    CHECKF(bad == 0, "%d of 256 trits differ", bad);
}

/* tq2_0: qs[64] @0, d @64; element e's code at byte 32*(e/128) + e%32, bits 2*((e%128)/32). */
static void test_hand_tq2_0(void) {
    uint8_t b[66] = {0};
    double want[256];
    for (int e = 0; e < 256; e++) {
        int q = (e * 5 + e / 9) % 4;
        b[32 * (e / 128) + e % 32] |= (uint8_t)(q << (2 * ((e % 128) / 32)));
        want[e] = 0.5 * (q - 1);
    }
    le16(b + 64, H_HALF);
    float out[256];
    tr(E0_TYPE_TQ2_0)->to_float(b, out, 256);
    int bad = count_bad(out, want, 256);
    CHECKF(bad == 0, "%d of 256 values differ", bad);
}

static void test_hand_q1_0(void) {
    uint8_t b[18] = {0};
    double want[128];
    le16(b, H_NEG_3_8);
    for (int e = 0; e < 128; e++) {
        int bit = (e * 11 + e / 5) % 3 == 0;
        b[2 + e / 8] |= (uint8_t)(bit << (e % 8));
        want[e] = bit ? -0.375 : 0.375;
    }
    float out[128];
    tr(E0_TYPE_Q1_0)->to_float(b, out, 128);
    int bad = count_bad(out, want, 128);
    CHECKF(bad == 0, "%d of 128 values differ", bad);
}

static void test_hand_q2_0(void) {
    uint8_t b[18] = {0};
    double want[64];
    le16(b, H_QUARTER);
    for (int e = 0; e < 64; e++) {
        int q = (e * 3 + e / 7) % 4;
        b[2 + e / 4] |= (uint8_t)(q << (2 * (e % 4)));
        want[e] = 0.25 * (q - 1);
    }
    float out[64];
    tr(E0_TYPE_Q2_0)->to_float(b, out, 64);
    int bad = count_bad(out, want, 64);
    CHECKF(bad == 0, "%d of 64 values differ", bad);
}

/* The table rows: ggml's ids, names, block sizes and bytes (bits per weight in the comments). */
static void test_table_rows(void) {
    static const struct {
        int id;
        const char *name;
        int bs, bytes, vdt;
    } rows[] = {
        {20, "iq4_nl", 32, 18, E0_TYPE_Q8_0},  /* 4.5 bpw */
        {23, "iq4_xs", 256, 136, E0_TYPE_Q8_K}, /* 4.25 */
        {39, "mxfp4", 32, 17, E0_TYPE_Q8_0},   /* 4.25 */
        {40, "nvfp4", 64, 36, E0_TYPE_Q8_0},   /* 4.5 */
        {34, "tq1_0", 256, 54, E0_TYPE_Q8_K},  /* 1.6875 */
        {35, "tq2_0", 256, 66, E0_TYPE_Q8_K},  /* 2.0625 */
        {41, "q1_0", 128, 18, E0_TYPE_Q8_0},   /* 1.125 */
        {42, "q2_0", 64, 18, E0_TYPE_Q8_0},    /* 2.25 */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const e0_type_traits *t = tr(rows[i].id);
        CHECKF(t && !strcmp(t->name, rows[i].name) && t->block_size == rows[i].bs && (int)t->type_size == rows[i].bytes &&
                   t->vec_dot_type == rows[i].vdt && t->weight_ok && t->is_quantized && t->to_float && t->from_float_ref &&
                   t->vec_dot[E0_SIMD_SCALAR],
               "row %d (%s)", rows[i].id, rows[i].name);
    }
}

/* ======================================================================= scale codes */

static void test_scale_codes(void) {
    /* E8M0 half: 2^(e - 128) for every e */
    int bad = 0;
    for (int e = 0; e < 256; e++) bad += (double)e0_e8m0_to_fp32_half((uint8_t)e) != ldexp(1, e - 128);
    CHECKF(bad == 0, "%d E8M0 values differ", bad);
    bad = 0;
    for (int x = 0; x < 256; x++) bad += (double)e0_ue4m3_to_fp32_half((uint8_t)x) != 0.5 * ue4m3_value((uint8_t)x);
    CHECKF(bad == 0, "%d UE4M3 values differ", bad);
    /* the encoder: every code 1..0x77 and 0x7E round-trips; ggml's encoder clamps every value
     * with exponent field 15 (256..416, codes 0x78..0x7D) to 0x7E (448), and so must ours; a value
     * between two codes goes to one of them */
    bad = 0;
    for (int x = 1; x < 0x7F; x++) bad += e0_fp32_to_ue4m3((float)ue4m3_value((uint8_t)x)) != (x >= 0x78 ? 0x7E : x);
    CHECKF(bad == 0, "%d UE4M3 codes do not round-trip", bad);
    CHECK(e0_fp32_to_ue4m3(0) == 0 && e0_fp32_to_ue4m3(-1) == 0 && e0_fp32_to_ue4m3(NAN) == 0);
    CHECK(e0_fp32_to_ue4m3(1e9f) == 0x7E && e0_fp32_to_ue4m3(INFINITY) == 0x7E);
    for (int k = 0; k < 1000; k++) {
        float v = (float)ldexp(rng_unit() + 0.01, (int)(rng_u64() % 16) - 9);
        uint8_t c = e0_fp32_to_ue4m3(v);
        double got = ue4m3_value(c);
        CHECKF(c == 0 || c == 0x7E || fabs(got - v) <= 0.0625 * v + ldexp(1, -10), "ue4m3(%g) = %#x = %g", v, c, got);
    }
}

/* ======================================================================= quantizers */

/* Relative RMS error bound of the reference quantizer per type and row kind, about 1.3x the worst
 * measured (E0_TEST_VERBOSE=1 prints them). The ternary and 1-bit types are not meant for
 * gaussian data (exact rows are tested below): their bounds only catch a broken quantizer. */
static double err_bound(int type) {
    switch (type) {
    case E0_TYPE_IQ4_NL: return 0.165;
    case E0_TYPE_IQ4_XS: return 0.155;
    case E0_TYPE_MXFP4: return 0.24;
    case E0_TYPE_NVFP4: return 0.17;
    case E0_TYPE_TQ1_0:
    case E0_TYPE_TQ2_0: return 0.95;
    case E0_TYPE_Q1_0: return 1.20;
    default: return 0.9; /* q2_0 */
    }
}

static double rel_err(const float *x, const float *y, int64_t n) {
    double se = 0, sx = 0;
    for (int64_t i = 0; i < n; i++) {
        se += (double)(x[i] - y[i]) * (x[i] - y[i]);
        sx += (double)x[i] * x[i];
    }
    return sqrt(se / sx);
}

static void test_quant_error(void) {
    for (int ti = 0; ti < N_NEW; ti++) {
        const e0_type_traits *t = tr(new_types[ti]);
        for (int kind = 0; kind < 4; kind++) {
            const int64_t n = 256 * 5;
            float *x = xalloc(n * 4), *y = xalloc(n * 4);
            uint8_t *q = xalloc(e0_row_size((uint32_t)new_types[ti], n)), *q2 = xalloc(e0_row_size((uint32_t)new_types[ti], n));
            fill_row(x, n, kind);
            t->from_float_ref(x, q, n);
            t->to_float(q, y, n);
            const double rel = rel_err(x, y, n);
            CHECKF(rel < err_bound(new_types[ti]), "%s kind %d: rel rms err %.4f >= %.4f", t->name, kind, rel, err_bound(new_types[ti]));
            if (getenv("E0_TEST_VERBOSE")) printf("  %s kind=%d rel rms err %.4f\n", t->name, kind, rel);
            t->from_float_ref(x, q2, n);
            CHECKF(!memcmp(q, q2, e0_row_size((uint32_t)new_types[ti], n)), "%s: quantizer not deterministic", t->name);
            free(x), free(y), free(q), free(q2);
        }
    }
}

/* Rows the format holds exactly come back exactly: ternary rows {-s, 0, s} (tq*, q2_0), sign rows
 * +-s (q1_0), rows of E2M1 values times a power of two (mxfp4, nvfp4: the scale is exact) and of
 * IQ4_NL code values times a power of two in every sub-block (iq4_nl; iq4_xs with all
 * sub-blocks on one scale). */
static void test_quant_exact_rows(void) {
    enum { N = 512 };
    float x[N], y[N];
    uint8_t q[N * 2];
    for (int ti = 0; ti < N_NEW; ti++) {
        const int type = new_types[ti];
        const e0_type_traits *t = tr(type);
        for (int i = 0; i < N; i++) {
            const int r = (int)(rng_u64() % 16);
            switch (type) {
            case E0_TYPE_IQ4_NL:
            case E0_TYPE_IQ4_XS: x[i] = iq4nl_values[r] / 64.0f; break;
            case E0_TYPE_MXFP4:
            case E0_TYPE_NVFP4: x[i] = e2m1[r] * 0.25f; break;
            case E0_TYPE_Q1_0: x[i] = r & 1 ? 0.75f : -0.75f; break;
            default: x[i] = (float)(r % 3 - 1) * 0.75f; break;
            }
        }
        /* every block must contain its extreme value for the scale rules to land exactly */
        for (int i = 0; i < N; i += 16) {
            switch (type) {
            case E0_TYPE_IQ4_NL:
            case E0_TYPE_IQ4_XS: x[i] = -127 / 64.0f; break;
            case E0_TYPE_MXFP4:
            case E0_TYPE_NVFP4: x[i] = 6 * 0.25f; break;
            case E0_TYPE_Q1_0: break;
            default: x[i] = 0.75f; break;
            }
        }
        t->from_float_ref(x, q, N);
        t->to_float(q, y, N);
        int bad = 0;
        for (int i = 0; i < N; i++) bad += x[i] != y[i];
        CHECKF(bad == 0, "%s: %d of %d exactly representable values changed", t->name, bad, N);
    }
}

/* Zero rows, constant rows, NaN / Inf / huge / tiny values: valid blocks and no crash or UB
 * (this runs under UBSan in `make asan`); a clean block of the same row still quantizes well. */
static void test_quant_hostile(void) {
    enum { N = 512 };
    float x[N], y[N];
    uint8_t q[N * 2];
    for (int ti = 0; ti < N_NEW; ti++) {
        const e0_type_traits *t = tr(new_types[ti]);
        for (int i = 0; i < N; i++) x[i] = 0;
        t->from_float_ref(x, q, N);
        t->to_float(q, y, N);
        int bad = 0;
        for (int i = 0; i < N; i++) bad += y[i] != 0;
        CHECKF(bad == 0, "%s: a zero row comes back with %d non-zeros", t->name, bad);
        fill_row(x, N, 0);
        for (int i = 0; i < 256; i++) x[i] = 1e-42f; /* subnormals */
        x[3] = NAN, x[40] = INFINITY, x[77] = -INFINITY, x[130] = 1e38f, x[131] = -1e38f;
        t->from_float_ref(x, q, N);
        t->to_float(q, y, N);
        const double rel = rel_err(x + 256, y + 256, 256);
        CHECKF(rel < err_bound(new_types[ti]), "%s: clean block error %.4f", t->name, rel);
    }
}

/* e0_quantize_iq4_*: NULL imatrix = the reference bytes; with an imatrix the quantizer minimizes
 * the weighted error, so over many rows it is below that of the unweighted quantization. */
static void test_quant_imatrix(void) {
    enum { ROWS = 48, N = 512 };
    float *x = xalloc(sizeof(float) * ROWS * N), *imat = xalloc(sizeof(float) * N), *y = xalloc(sizeof(float) * N);
    uint8_t *qa = xalloc(ROWS * N), *qb = xalloc(ROWS * N), *qr = xalloc(ROWS * N);
    for (int i = 0; i < ROWS * N; i++) x[i] = rng_gauss();
    for (int j = 0; j < N; j++) imat[j] = expf(2.0f * rng_gauss());
    for (int k = 0; k < 2; k++) {
        const int type = k ? E0_TYPE_IQ4_XS : E0_TYPE_IQ4_NL;
        const e0_type_traits *t = tr(type);
        void (*qf)(const float *, void *, int64_t, int64_t, const float *) = k ? e0_quantize_iq4_xs : e0_quantize_iq4_nl;
        const size_t rb = e0_row_size((uint32_t)type, N);
        qf(x, qa, ROWS, N, NULL);
        for (int r = 0; r < ROWS; r++) t->from_float_ref(x + r * N, qr + r * rb, N);
        CHECKF(!memcmp(qa, qr, rb * ROWS), "%s: quantize without imatrix != from_float_ref", t->name);
        qf(x, qb, ROWS, N, imat);
        CHECKF(memcmp(qa, qb, rb * ROWS) != 0, "%s: the imatrix changed nothing", t->name);
        double ew[2] = {0, 0};
        for (int v = 0; v < 2; v++)
            for (int r = 0; r < ROWS; r++) {
                t->to_float((v ? qb : qa) + r * rb, y, N);
                for (int j = 0; j < N; j++) ew[v] += imat[j] * (double)(x[r * N + j] - y[j]) * (x[r * N + j] - y[j]);
            }
        CHECKF(ew[1] < 0.95 * ew[0], "%s: weighted error with imatrix %.4g, without %.4g", t->name, ew[1], ew[0]);
    }
    free(x), free(imat), free(y), free(qa), free(qb), free(qr);
}

/* ======================================================================= dot products */

/* A weight row of `type` (nb blocks) at byte offset `off` of its buffer, and an activation row
 * in its vec_dot_type from the reference quantizer of that type. */
typedef struct {
    int64_t n;
    uint8_t *wbuf, *w, *a;
    float *wf, *af;
} dot_case;

/* Finite modest scales for random-byte blocks (NaN / Inf scales make comparisons meaningless). */
static void fix_scales(int type, uint8_t *w, int64_t nb) {
    const size_t bs = tr(type)->type_size;
    for (int64_t b = 0; b < nb; b++) {
        uint8_t *p = w + (size_t)b * bs;
        const uint16_t h = (uint16_t)(0x1400 + rng_u64() % 0x2800) | (uint16_t)((rng_u64() & 1) << 15);
        switch (type) {
        case E0_TYPE_MXFP4: p[0] = (uint8_t)(110 + rng_u64() % 30); break;
        case E0_TYPE_NVFP4: break; /* every UE4M3 byte is finite (<= 240) */
        case E0_TYPE_TQ1_0: le16(p + 52, h); break;
        case E0_TYPE_TQ2_0: le16(p + 64, h); break;
        default: le16(p, h); break; /* d at 0 */
        }
    }
}

static dot_case make_case(int type, int64_t nb, int kind, int off) {
    const e0_type_traits *t = tr(type), *ta = tr(t->vec_dot_type);
    dot_case c = {.n = nb * t->block_size};
    float *x = xalloc((size_t)c.n * 4);
    c.wbuf = xalloc(e0_row_size((uint32_t)type, c.n) + 8);
    c.w = c.wbuf + off;
    c.a = xalloc(e0_row_size((uint32_t)t->vec_dot_type, c.n));
    c.wf = xalloc((size_t)c.n * 4);
    c.af = xalloc((size_t)c.n * 4);
    if (kind < 4) {
        fill_row(x, c.n, kind);
        t->from_float_ref(x, c.w, c.n);
    } else { /* random bytes: any code, finite scales */
        for (size_t i = 0; i < e0_row_size((uint32_t)type, c.n); i++) c.w[i] = (uint8_t)rng_u64();
        fix_scales(type, c.w, nb);
    }
    fill_row(x, c.n, (kind + 1) % 4);
    ta->from_float_ref(x, c.a, c.n);
    t->to_float(c.w, c.wf, c.n);
    ta->to_float(c.a, c.af, c.n);
    free(x);
    return c;
}
static void free_case(dot_case *c) { free(c->wbuf), free(c->a), free(c->wf), free(c->af); }

static double mag_of(const dot_case *c) {
    double m = 0;
    for (int64_t i = 0; i < c->n; i++) m += fabs((double)c->wf[i] * c->af[i]);
    return m;
}

static void test_dot_ref_vs_f64(void) {
    for (int ti = 0; ti < N_NEW; ti++) {
        const e0_type_traits *t = tr(new_types[ti]);
        for (int kind = 0; kind < 5; kind++) {
            dot_case c = make_case(new_types[ti], 3 + kind, kind, kind % 3);
            double exact = 0;
            for (int64_t i = 0; i < c.n; i++) exact += (double)c.wf[i] * c.af[i];
            const double mag = mag_of(&c);
            float s = NAN;
            t->vec_dot[E0_SIMD_SCALAR](c.n, &s, c.w, c.a);
            CHECKF(fabs(s - exact) <= 2e-6 * mag + 1e-30, "%s kind=%d: ref %.9g vs f64 %.9g (mag %g)", t->name, kind, s, exact, mag);
            free_case(&c);
        }
    }
}

/* Every SIMD dot of the new types against the scalar one: odd block counts, weight rows at odd
 * addresses. The ternary/1-bit kernels reproduce the reference's float operations, so there the
 * results must be equal bit for bit; the others sum in 8 lanes (bounded relative to the sum of
 * |products|). */
static void check_simd_level(int level) {
    static const int64_t nbs[] = {1, 2, 3, 7, 13};
    for (int ti = 0; ti < N_NEW; ti++) {
        const int type = new_types[ti];
        const e0_type_traits *t = tr(type);
        const e0_vec_dot_fn fn = t->vec_dot[level];
        const int exact = type == E0_TYPE_TQ1_0 || type == E0_TYPE_TQ2_0 || type == E0_TYPE_Q1_0 || type == E0_TYPE_Q2_0;
        CHECKF(level != E0_SIMD_AVX2 || fn, "%s has no avx2 vec_dot", t->name);
        if (!fn) continue;
        for (size_t k = 0; k < sizeof nbs / sizeof nbs[0]; k++)
            for (int kind = 0; kind < 5; kind++) {
                dot_case c = make_case(type, nbs[k], kind, (int)(k + kind) % 4);
                float ref = NAN, got = NAN;
                t->vec_dot[E0_SIMD_SCALAR](c.n, &ref, c.w, c.a);
                fn(c.n, &got, c.w, c.a);
                const double mag = mag_of(&c);
                if (exact)
                    CHECKF(!memcmp(&ref, &got, sizeof got), "%s blocks %lld kind %d: %.9g vs ref %.9g", t->name,
                           (long long)nbs[k], kind, got, ref);
                else
                    CHECKF(fabs((double)got - ref) <= 1e-5 * mag + 1e-30, "%s blocks %lld kind %d: %.9g vs ref %.9g", t->name,
                           (long long)nbs[k], kind, got, ref);
                free_case(&c);
            }
    }
}

static void test_simd_avx2_vs_ref(void) {
    if (e0_simd_level() < E0_SIMD_AVX2) {
        t_skip("CPU lacks avx2 or E0_SIMD caps it");
        return;
    }
    check_simd_level(E0_SIMD_AVX2);
}

/* ======================================================================= prefill */

/* gemm of nr rows (padded odd stride, unaligned start) x nt tokens == vec_dot of the same level on
 * every (row, token), bit for bit; nothing written outside the outputs. */
static void check_gemm(int type, int level, int nr, int nt, int64_t nb, int mode) {
    const e0_type_traits *t = tr(type), *ta = tr(t->vec_dot_type);
    const e0_kernels kn = e0_kernels_at(t, level);
    const int64_t n = nb * t->block_size;
    const size_t rb = e0_row_size((uint32_t)type, n), ws = rb + 5, as = e0_row_size((uint32_t)t->vec_dot_type, n) + 36;
    uint8_t *wbuf = xalloc(ws * (size_t)nr + 1), *w = wbuf + 1, *a = xalloc(as * (size_t)nt);
    float *x = xalloc(sizeof(float) * (size_t)n);
    for (int r = 0; r < nr; r++) {
        if (mode == 0) {
            fill_row(x, n, r % 4);
            t->from_float_ref(x, w + (size_t)r * ws, n);
        } else {
            for (size_t i = 0; i < rb; i++) w[(size_t)r * ws + i] = (uint8_t)rng_u64();
            fix_scales(type, w + (size_t)r * ws, nb);
        }
    }
    for (int k = 0; k < nt; k++) {
        fill_row(x, n, (k + 1) % 4);
        ta->from_float_ref(x, a + (size_t)k * as, n);
    }
    enum { SS = E0_GEMM_ROWS + 3 };
    float got[SS * E0_GEMM_TOKENS];
    for (int i = 0; i < SS * E0_GEMM_TOKENS; i++) got[i] = -1234.5f;
    kn.gemm(n, nr, w, ws, nt, a, as, got, SS);
    for (int r = 0; r < nr; r++)
        for (int k = 0; k < nt; k++) {
            float want;
            kn.vec_dot(n, &want, w + (size_t)r * ws, a + (size_t)k * as);
            CHECKF(!memcmp(&want, &got[r + k * SS], sizeof want), "%s gemm rows %d tokens %d blocks %lld mode %d: (%d,%d) %.9g vs %.9g",
                   t->name, nr, nt, (long long)nb, mode, r, k, got[r + k * SS], want);
        }
    for (int i = 0; i < SS * E0_GEMM_TOKENS; i++)
        if (i % SS >= nr || i / SS >= nt) CHECKF(got[i] == -1234.5f, "%s gemm wrote outside its outputs", t->name);
    free(wbuf), free(a), free(x);
}

static void test_gemm_iq4(void) {
    if (e0_simd_level() < E0_SIMD_AVX2) {
        t_skip("CPU lacks avx2 or E0_SIMD caps it");
        return;
    }
    static const int types[] = {E0_TYPE_IQ4_XS, E0_TYPE_MXFP4};
    static const int rows[] = {1, 3, E0_GEMM_ROWS};
    for (int ti = 0; ti < 2; ti++) {
        CHECKF(e0_kernels_at(tr(types[ti]), E0_SIMD_AVX2).gemm != NULL, "%s has no avx2 gemm", tr(types[ti])->name);
        for (int level = E0_SIMD_AVX2; level <= e0_simd_level(); level++)
            for (size_t ri = 0; ri < 3; ri++)
                for (int nt = 1; nt <= E0_GEMM_TOKENS; nt++)
                    for (int mode = 0; mode < 2; mode++) check_gemm(types[ti], level, rows[ri], nt, nt % 2 ? 3 : 5, mode);
    }
}

/* MXFP4 at every E8M0 exponent (the AVX2 kernels read the scale from a table of their own):
 * rows of 4 blocks at exponents e..e+3 (mod 256), random codes, against Q8_0 blocks whose fp16
 * scale 2^k keeps every product finite and normal; vec_dot within rounding of the scalar
 * reference, and the gemm equal to vec_dot bit for bit. */
static void test_mxfp4_every_exponent(void) {
    if (e0_simd_level() < E0_SIMD_AVX2) {
        t_skip("CPU lacks avx2 or E0_SIMD caps it");
        return;
    }
    const e0_type_traits *t = tr(E0_TYPE_MXFP4);
    const e0_kernels kn = e0_kernels_at(t, E0_SIMD_AVX2);
    enum { NB = 4, NR = 3, NT = 5, N = NB * 32 };
    const size_t rb = MXFP4_SIZE * NB, ab = Q8_0_SIZE * NB;
    uint8_t w[NR * MXFP4_SIZE * NB], a[NT * Q8_0_SIZE * NB];
    float af[N], got[NR * NT];
    for (int e = 0; e < 256; e++) {
        const int k = 128 - e < -24 ? -24 : 128 - e > 15 ? 15 : 128 - e; /* 2^k: fp16 normal or subnormal */
        const uint16_t h = (uint16_t)(k >= -14 ? (k + 15) << 10 : 1 << (k + 24));
        for (size_t i = 0; i < sizeof w; i++) w[i] = (uint8_t)rng_u64();
        for (int r = 0; r < NR; r++)
            for (int b = 0; b < NB; b++) w[r * rb + b * MXFP4_SIZE] = (uint8_t)(e + b + r);
        for (int tk = 0; tk < NT; tk++)
            for (int b = 0; b < NB; b++) {
                uint8_t *p = a + tk * ab + b * Q8_0_SIZE;
                le16(p, (uint16_t)(h | ((rng_u64() & 1) << 15)));
                for (int j = 0; j < 32; j++) p[Q8_0_QS + j] = (uint8_t)(int8_t)((int)(rng_u64() % 255) - 127);
            }
        kn.gemm(N, NR, w, rb, NT, a, ab, got, NR);
        for (int r = 0; r < NR; r++)
            for (int tk = 0; tk < NT; tk++) {
                float ref = NAN, dot = NAN;
                t->vec_dot[E0_SIMD_SCALAR](N, &ref, w + r * rb, a + tk * ab);
                kn.vec_dot(N, &dot, w + r * rb, a + tk * ab);
                tr(E0_TYPE_Q8_0)->to_float(a + tk * ab, af, N);
                double mag = 0; /* in double: a weight 12 * 2^127 is past float's range */
                for (int i = 0; i < N; i++) {
                    const uint8_t *blk = w + r * rb + (i / 32) * MXFP4_SIZE, q = blk[MXFP4_QS + i % 16];
                    const int code = i % 32 < 16 ? q & 0xF : q >> 4;
                    mag += fabs(ldexp(e0_kvalues_fp4[code], blk[0] - 128) * af[i]);
                }
                CHECKF(isfinite(ref) && fabs((double)dot - ref) <= 1e-5 * mag + 1e-37, "mxfp4 e %d row %d token %d: %.9g vs ref %.9g", e, r,
                       tk, dot, ref);
                CHECKF(!memcmp(&dot, &got[r + tk * NR], sizeof dot), "mxfp4 e %d: gemm (%d,%d) %.9g vs vec_dot %.9g", e, r, tk,
                       got[r + tk * NR], dot);
            }
    }
}

/* e0_matmul_run (the engine's threaded product) for 1..19 tokens equals per-token vec_dot of
 * this process's level, for every new type. */
static void test_matmul_new_types(void) {
    e0_pool *pool = e0_pool_new(2);
    CHECK(pool != NULL);
    if (!pool) return;
    for (int ti = 0; ti < N_NEW; ti++) {
        const int type = new_types[ti];
        const e0_type_traits *t = tr(type), *ta = tr(t->vec_dot_type);
        const int64_t nb = t->block_size == QK_K ? 3 : 768 / t->block_size + 1, n_in = nb * t->block_size, n_out = 37;
        const int max_tok = 2 * E0_GEMM_TOKENS + 3;
        const size_t rb = e0_row_size((uint32_t)type, n_in), xs = e0_row_size((uint32_t)t->vec_dot_type, n_in) + 8;
        uint8_t *w = xalloc(rb * n_out), *xq = xalloc(xs * max_tok);
        float *y = xalloc(sizeof(float) * n_out * max_tok), *want = xalloc(sizeof(float) * n_out), *x = xalloc(sizeof(float) * n_in);
        for (int r = 0; r < n_out; r++) {
            fill_row(x, n_in, r % 4);
            t->from_float_ref(x, w + r * rb, n_in);
        }
        for (int k = 0; k < max_tok; k++) {
            fill_row(x, n_in, k % 4);
            ta->from_float_ref(x, xq + k * xs, n_in);
        }
        const e0_vec_dot_fn dot = e0_kernels_of((uint32_t)type)->vec_dot;
        for (int n_tok = 1; n_tok <= max_tok; n_tok += 3) {
            const e0_matmul job = {.w = w, .type = (uint32_t)type, .n_in = n_in, .n_out = n_out, .row_bytes = rb,
                                   .xq = xq, .xq_stride = xs, .n_tok = n_tok, .y = y, .y_stride = n_out};
            e0_matmul_run(pool, &job, 1);
            for (int k = 0; k < n_tok; k++) {
                for (int64_t r = 0; r < n_out; r++) dot(n_in, &want[r], w + r * rb, xq + k * xs);
                CHECKF(!memcmp(y + k * n_out, want, sizeof(float) * n_out), "%s n_tok %d token %d", t->name, n_tok, k);
            }
        }
        free(w), free(xq), free(y), free(want), free(x);
    }
    e0_pool_free(pool);
}

int main(void) {
    RUN(test_table_rows);
    RUN(test_hand_iq4_nl);
    RUN(test_hand_iq4_xs);
    RUN(test_hand_mxfp4);
    RUN(test_hand_nvfp4);
    RUN(test_hand_tq1_0);
    RUN(test_hand_tq2_0);
    RUN(test_hand_q1_0);
    RUN(test_hand_q2_0);
    RUN(test_scale_codes);
    RUN(test_quant_error);
    RUN(test_quant_exact_rows);
    RUN(test_quant_hostile);
    RUN(test_quant_imatrix);
    RUN(test_dot_ref_vs_f64);
    RUN(test_simd_avx2_vs_ref);
    RUN(test_gemm_iq4);
    RUN(test_mxfp4_every_exponent);
    RUN(test_matmul_new_types);
    return T_DONE();
}
