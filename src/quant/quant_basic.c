/* quant_basic.c — scalar kernels for F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1 (the
 * type table in quant.c points at them; declared in quant_basic.h).
 *
 * Reference quantizers reproduce ggml's quantize_row_*_ref bit for bit (same float operations,
 * same truncating casts), so a row we write is the row llama-quantize would write. The dot
 * products follow ggml's scheme: an exact integer dot per block, then one float multiply by the
 * block scales. SIMD versions live in quant_basic_avx2.c / quant_basic_avx512.c. */
#include <float.h>
#include <math.h>

#include "quant/quant_basic.h"

#define fp16 e0_fp16_to_fp32

/* float -> int cast that is defined for every input: ggml's casts on finite in-range values,
 * and a clamp (NaN -> lo) for the inputs a corrupt row can produce. */
static inline int cast_clamped(float v, int lo, int hi) {
    if (!(v >= (float)lo)) return lo;
    if (v >= (float)hi) return hi;
    return (int)v; /* truncates toward zero, like ggml's (int8_t)/(uint8_t) casts */
}

/* ---------------- F32 / F16 / BF16 ---------------- */

void e0_f32_to_float(const void *src, float *dst, int64_t n) {
    if (n > 0) memcpy(dst, src, (size_t)n * 4);
}
void e0_f32_from_float(const float *src, void *dst, int64_t n) {
    if (n > 0) memcpy(dst, src, (size_t)n * 4);
}

/* Float-weight dot products accumulate in double: the reference is the exact-ish answer. */
void e0_vec_dot_f32_ref(int64_t n, float *s, const void *w, const void *a) {
    const float *x = w, *y = a;
    double sum = 0;
    for (int64_t i = 0; i < n; i++) sum += (double)e0_rdf32(x + i) * e0_rdf32(y + i);
    *s = (float)sum;
}

void e0_f16_to_float(const void *src, float *dst, int64_t n) {
    const uint8_t *p = src;
    for (int64_t i = 0; i < n; i++) dst[i] = fp16(e0_rd16(p + 2 * i));
}
void e0_f16_from_float(const float *src, void *dst, int64_t n) {
    uint8_t *p = dst;
    for (int64_t i = 0; i < n; i++) e0_wr16(p + 2 * i, e0_fp32_to_fp16(src[i]));
}
/* F16/BF16 weights: the F32 activation is first rounded to the weight's type, because llama.cpp
 * converts activations to F16/BF16 for these weights (its vec_dot_type) and our logits are
 * compared with its own; the products are then exact in float, only the summation order differs.
 * (Measured on the golden llama-dense model: ~1e-6 relative RMS from llama.cpp with the rounding,
 * ~1e-2 without.) */
void e0_vec_dot_f16_ref(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w;
    const float *y = a;
    double sum = 0;
    for (int64_t i = 0; i < n; i++) sum += (double)fp16(e0_rd16(x + 2 * i)) * fp16(e0_fp32_to_fp16(e0_rdf32(y + i)));
    *s = (float)sum;
}

void e0_bf16_to_float(const void *src, float *dst, int64_t n) {
    const uint8_t *p = src;
    for (int64_t i = 0; i < n; i++) dst[i] = e0_bf16_to_fp32(e0_rd16(p + 2 * i));
}
void e0_bf16_from_float(const float *src, void *dst, int64_t n) {
    uint8_t *p = dst;
    for (int64_t i = 0; i < n; i++) e0_wr16(p + 2 * i, e0_fp32_to_bf16(src[i]));
}
void e0_vec_dot_bf16_ref(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w;
    const float *y = a;
    double sum = 0;
    for (int64_t i = 0; i < n; i++)
        sum += (double)e0_bf16_to_fp32(e0_rd16(x + 2 * i)) * e0_bf16_to_fp32(e0_fp32_to_bf16(e0_rdf32(y + i)));
    *s = (float)sum;
}

/* ---------------- block helpers ---------------- */

/* Largest |v| of a block and the signed value that has it (first one wins, as in ggml). */
static void block_absmax(const float *x, float *amax, float *max) {
    *amax = 0.0f;
    *max = 0.0f;
    for (int j = 0; j < E0_QK; j++) {
        if (*amax < fabsf(x[j])) {
            *amax = fabsf(x[j]);
            *max = x[j];
        }
    }
}

static void block_minmax(const float *x, float *min, float *max) {
    *min = FLT_MAX; /* ggml's starting values */
    *max = -FLT_MAX;
    for (int j = 0; j < E0_QK; j++) {
        if (x[j] < *min) *min = x[j];
        if (x[j] > *max) *max = x[j];
    }
}

/* Unpack the 32 quants of a 4/5-bit block as unsigned values (before the offset is applied). */
static void unpack_q4(const uint8_t *qs, int q[E0_QK]) {
    for (int j = 0; j < 16; j++) {
        q[j] = qs[j] & 0x0f;
        q[j + 16] = qs[j] >> 4;
    }
}
static void unpack_q5(const uint8_t *qh, const uint8_t *qs, int q[E0_QK]) {
    uint32_t h = e0_rd32(qh);
    unpack_q4(qs, q);
    for (int j = 0; j < E0_QK; j++) q[j] |= (int)((h >> j) & 1) << 4;
}
static void pack_q4(const int q[E0_QK], uint8_t *qs) {
    for (int j = 0; j < 16; j++) qs[j] = (uint8_t)((q[j] & 0x0f) | ((q[j + 16] & 0x0f) << 4));
}
static void pack_q5(const int q[E0_QK], uint8_t *qh, uint8_t *qs) {
    uint32_t h = 0;
    for (int j = 0; j < E0_QK; j++) h |= (uint32_t)((q[j] >> 4) & 1) << j;
    memcpy(qh, &h, 4);
    pack_q4(q, qs);
}

/* ---------------- Q4_0: q in 0..15, x = (q - 8) * d ---------------- */

void e0_q4_0_to_float(const void *src, float *dst, int64_t n) {
    const uint8_t *b = src;
    int q[E0_QK];
    for (int64_t i = 0; i < n / E0_QK; i++, b += Q4_0_SIZE, dst += E0_QK) {
        float d = fp16(e0_rd16(b));
        unpack_q4(b + Q4_0_QS, q);
        for (int j = 0; j < E0_QK; j++) dst[j] = (float)(q[j] - 8) * d;
    }
}

void e0_q4_0_from_float_ref(const float *x, void *dst, int64_t n) {
    uint8_t *b = dst;
    int q[E0_QK];
    for (int64_t i = 0; i < n / E0_QK; i++, b += Q4_0_SIZE, x += E0_QK) {
        float amax, max;
        block_absmax(x, &amax, &max);
        const float d = max / -8;
        const float id = d ? 1.0f / d : 0.0f;
        e0_wr16(b, e0_fp32_to_fp16(d));
        for (int j = 0; j < E0_QK; j++) {
            int v = cast_clamped(x[j] * id + 8.5f, 0, 127);
            q[j] = v < 15 ? v : 15;
        }
        pack_q4(q, b + Q4_0_QS);
    }
}

/* Q8_0 activations: y = q * d_y. */
void e0_vec_dot_q4_0_ref(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w, *y = a;
    float sumf = 0;
    int q[E0_QK];
    for (int64_t i = 0; i < n / E0_QK; i++, x += Q4_0_SIZE, y += Q8_0_SIZE) {
        const int8_t *qy = (const int8_t *)(y + Q8_0_QS);
        unpack_q4(x + Q4_0_QS, q);
        int sumi = 0;
        for (int j = 0; j < E0_QK; j++) sumi += (q[j] - 8) * qy[j];
        sumf += (float)sumi * (fp16(e0_rd16(x)) * fp16(e0_rd16(y)));
    }
    *s = sumf;
}

/* ---------------- Q4_1: q in 0..15, x = q * d + m ---------------- */

void e0_q4_1_to_float(const void *src, float *dst, int64_t n) {
    const uint8_t *b = src;
    int q[E0_QK];
    for (int64_t i = 0; i < n / E0_QK; i++, b += Q4_1_SIZE, dst += E0_QK) {
        float d = fp16(e0_rd16(b)), m = fp16(e0_rd16(b + Q4_1_M));
        unpack_q4(b + Q4_1_QS, q);
        for (int j = 0; j < E0_QK; j++) dst[j] = (float)q[j] * d + m;
    }
}

void e0_q4_1_from_float_ref(const float *x, void *dst, int64_t n) {
    uint8_t *b = dst;
    int q[E0_QK];
    for (int64_t i = 0; i < n / E0_QK; i++, b += Q4_1_SIZE, x += E0_QK) {
        float min, max;
        block_minmax(x, &min, &max);
        const float d = (max - min) / ((1 << 4) - 1);
        const float id = d ? 1.0f / d : 0.0f;
        e0_wr16(b, e0_fp32_to_fp16(d));
        e0_wr16(b + Q4_1_M, e0_fp32_to_fp16(min));
        for (int j = 0; j < E0_QK; j++) {
            int v = cast_clamped((x[j] - min) * id + 0.5f, 0, 127);
            q[j] = v < 15 ? v : 15;
        }
        pack_q4(q, b + Q4_1_QS);
    }
}

/* Q8_1 activations: y = q * d_y, and s_y = d_y * sum(q) carries the min term. */
void e0_vec_dot_q4_1_ref(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w, *y = a;
    float sumf = 0;
    int q[E0_QK];
    for (int64_t i = 0; i < n / E0_QK; i++, x += Q4_1_SIZE, y += Q8_1_SIZE) {
        const int8_t *qy = (const int8_t *)(y + Q8_1_QS);
        unpack_q4(x + Q4_1_QS, q);
        int sumi = 0;
        for (int j = 0; j < E0_QK; j++) sumi += q[j] * qy[j];
        sumf += (fp16(e0_rd16(x)) * fp16(e0_rd16(y))) * (float)sumi +
                fp16(e0_rd16(x + Q4_1_M)) * fp16(e0_rd16(y + Q8_1_S));
    }
    *s = sumf;
}

/* ---------------- Q5_0: q in 0..31, x = (q - 16) * d ---------------- */

void e0_q5_0_to_float(const void *src, float *dst, int64_t n) {
    const uint8_t *b = src;
    int q[E0_QK];
    for (int64_t i = 0; i < n / E0_QK; i++, b += Q5_0_SIZE, dst += E0_QK) {
        float d = fp16(e0_rd16(b));
        unpack_q5(b + Q5_0_QH, b + Q5_0_QS, q);
        for (int j = 0; j < E0_QK; j++) dst[j] = (float)(q[j] - 16) * d;
    }
}

void e0_q5_0_from_float_ref(const float *x, void *dst, int64_t n) {
    uint8_t *b = dst;
    int q[E0_QK];
    for (int64_t i = 0; i < n / E0_QK; i++, b += Q5_0_SIZE, x += E0_QK) {
        float amax, max;
        block_absmax(x, &amax, &max);
        const float d = max / -16;
        const float id = d ? 1.0f / d : 0.0f;
        e0_wr16(b, e0_fp32_to_fp16(d));
        for (int j = 0; j < E0_QK; j++) {
            int v = cast_clamped(x[j] * id + 16.5f, 0, 127);
            q[j] = v < 31 ? v : 31;
        }
        pack_q5(q, b + Q5_0_QH, b + Q5_0_QS);
    }
}

void e0_vec_dot_q5_0_ref(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w, *y = a;
    float sumf = 0;
    int q[E0_QK];
    for (int64_t i = 0; i < n / E0_QK; i++, x += Q5_0_SIZE, y += Q8_0_SIZE) {
        const int8_t *qy = (const int8_t *)(y + Q8_0_QS);
        unpack_q5(x + Q5_0_QH, x + Q5_0_QS, q);
        int sumi = 0;
        for (int j = 0; j < E0_QK; j++) sumi += (q[j] - 16) * qy[j];
        sumf += (float)sumi * (fp16(e0_rd16(x)) * fp16(e0_rd16(y)));
    }
    *s = sumf;
}

/* ---------------- Q5_1: q in 0..31, x = q * d + m ---------------- */

void e0_q5_1_to_float(const void *src, float *dst, int64_t n) {
    const uint8_t *b = src;
    int q[E0_QK];
    for (int64_t i = 0; i < n / E0_QK; i++, b += Q5_1_SIZE, dst += E0_QK) {
        float d = fp16(e0_rd16(b)), m = fp16(e0_rd16(b + Q5_1_M));
        unpack_q5(b + Q5_1_QH, b + Q5_1_QS, q);
        for (int j = 0; j < E0_QK; j++) dst[j] = (float)q[j] * d + m;
    }
}

void e0_q5_1_from_float_ref(const float *x, void *dst, int64_t n) {
    uint8_t *b = dst;
    int q[E0_QK];
    for (int64_t i = 0; i < n / E0_QK; i++, b += Q5_1_SIZE, x += E0_QK) {
        float min, max;
        block_minmax(x, &min, &max);
        const float d = (max - min) / ((1 << 5) - 1);
        const float id = d ? 1.0f / d : 0.0f;
        e0_wr16(b, e0_fp32_to_fp16(d));
        e0_wr16(b + Q5_1_M, e0_fp32_to_fp16(min));
        /* ggml casts to uint8_t without a clamp; the value is at most 31.5 for finite input */
        for (int j = 0; j < E0_QK; j++) q[j] = cast_clamped((x[j] - min) * id + 0.5f, 0, 31);
        pack_q5(q, b + Q5_1_QH, b + Q5_1_QS);
    }
}

void e0_vec_dot_q5_1_ref(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w, *y = a;
    float sumf = 0;
    int q[E0_QK];
    for (int64_t i = 0; i < n / E0_QK; i++, x += Q5_1_SIZE, y += Q8_1_SIZE) {
        const int8_t *qy = (const int8_t *)(y + Q8_1_QS);
        unpack_q5(x + Q5_1_QH, x + Q5_1_QS, q);
        int sumi = 0;
        for (int j = 0; j < E0_QK; j++) sumi += q[j] * qy[j];
        sumf += (fp16(e0_rd16(x)) * fp16(e0_rd16(y))) * (float)sumi +
                fp16(e0_rd16(x + Q5_1_M)) * fp16(e0_rd16(y + Q8_1_S));
    }
    *s = sumf;
}

/* ---------------- Q8_0 / Q8_1: x = q * d ---------------- */

void e0_q8_0_to_float(const void *src, float *dst, int64_t n) {
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / E0_QK; i++, b += Q8_0_SIZE, dst += E0_QK) {
        float d = fp16(e0_rd16(b));
        const int8_t *q = (const int8_t *)(b + Q8_0_QS);
        for (int j = 0; j < E0_QK; j++) dst[j] = (float)q[j] * d;
    }
}

void e0_q8_1_to_float(const void *src, float *dst, int64_t n) {
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / E0_QK; i++, b += Q8_1_SIZE, dst += E0_QK) {
        float d = fp16(e0_rd16(b));
        const int8_t *q = (const int8_t *)(b + Q8_1_QS);
        for (int j = 0; j < E0_QK; j++) dst[j] = (float)q[j] * d;
    }
}

/* ggml's quantize_row_q8_0_ref / _q8_1_ref: id = 1/d, roundf (half away from zero). */
static int q8_ref_block(const float *x, int8_t *q, float *d_out) {
    float amax = 0.0f;
    for (int j = 0; j < E0_QK; j++) amax = fmaxf(amax, fabsf(x[j]));
    const float d = amax / ((1 << 7) - 1);
    const float id = d ? 1.0f / d : 0.0f;
    int sum = 0;
    for (int j = 0; j < E0_QK; j++) {
        float r = roundf(x[j] * id);
        q[j] = (int8_t)(r != r ? 0 : r > 127 ? 127 : r < -128 ? -128 : r);
        sum += q[j];
    }
    *d_out = d;
    return sum;
}

void e0_q8_0_from_float_ref(const float *x, void *dst, int64_t n) {
    uint8_t *b = dst;
    for (int64_t i = 0; i < n / E0_QK; i++, b += Q8_0_SIZE, x += E0_QK) {
        float d;
        q8_ref_block(x, (int8_t *)(b + Q8_0_QS), &d);
        e0_wr16(b, e0_fp32_to_fp16(d));
    }
}

void e0_q8_1_from_float_ref(const float *x, void *dst, int64_t n) {
    uint8_t *b = dst;
    for (int64_t i = 0; i < n / E0_QK; i++, b += Q8_1_SIZE, x += E0_QK) {
        float d;
        int sum = q8_ref_block(x, (int8_t *)(b + Q8_1_QS), &d);
        e0_wr16(b, e0_fp32_to_fp16(d));
        e0_wr16(b + Q8_1_S, e0_fp32_to_fp16((float)sum * d));
    }
}

/* llama.cpp's x86 activation quantizer (see quant_basic.h): id = 127/amax and round half to
 * even; the AVX2 version packs with signed saturation, so NaN becomes -128 there and here. */
static int q8_act_block(const float *x, int8_t *q, float *d_out) {
    float amax = 0.0f;
    for (int j = 0; j < E0_QK; j++) amax = fmaxf(amax, fabsf(x[j]));
    const float id = amax != 0.0f ? 127.f / amax : 0.0f;
    int sum = 0;
    for (int j = 0; j < E0_QK; j++) {
        float r = nearbyintf(x[j] * id);
        q[j] = (int8_t)(r != r ? -128 : r > 127 ? 127 : r < -128 ? -128 : r);
        sum += q[j];
    }
    *d_out = amax / 127.f;
    return sum;
}

void e0_quantize_act_q8_0_scalar(const float *x, void *y, int64_t n) {
    uint8_t *b = y;
    for (int64_t i = 0; i < n / E0_QK; i++, b += Q8_0_SIZE, x += E0_QK) {
        float d;
        q8_act_block(x, (int8_t *)(b + Q8_0_QS), &d);
        e0_wr16(b, e0_fp32_to_fp16(d));
    }
}

void e0_quantize_act_q8_1_scalar(const float *x, void *y, int64_t n) {
    uint8_t *b = y;
    for (int64_t i = 0; i < n / E0_QK; i++, b += Q8_1_SIZE, x += E0_QK) {
        float d;
        int sum = q8_act_block(x, (int8_t *)(b + Q8_1_QS), &d);
        e0_wr16(b, e0_fp32_to_fp16(d));
        e0_wr16(b + Q8_1_S, e0_fp32_to_fp16(d * (float)sum));
    }
}

void e0_vec_dot_q8_0_ref(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w, *y = a;
    float sumf = 0;
    for (int64_t i = 0; i < n / E0_QK; i++, x += Q8_0_SIZE, y += Q8_0_SIZE) {
        const int8_t *qx = (const int8_t *)(x + Q8_0_QS), *qy = (const int8_t *)(y + Q8_0_QS);
        int sumi = 0;
        for (int j = 0; j < E0_QK; j++) sumi += qx[j] * qy[j];
        sumf += (float)sumi * (fp16(e0_rd16(x)) * fp16(e0_rd16(y)));
    }
    *s = sumf;
}

/* Q8_1 . Q8_1 (not a weight type, but the table row wants a dot): ignores the s fields. */
void e0_vec_dot_q8_1_ref(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w, *y = a;
    float sumf = 0;
    for (int64_t i = 0; i < n / E0_QK; i++, x += Q8_1_SIZE, y += Q8_1_SIZE) {
        const int8_t *qx = (const int8_t *)(x + Q8_1_QS), *qy = (const int8_t *)(y + Q8_1_QS);
        int sumi = 0;
        for (int j = 0; j < E0_QK; j++) sumi += qx[j] * qy[j];
        sumf += (float)sumi * (fp16(e0_rd16(x)) * fp16(e0_rd16(y)));
    }
    *s = sumf;
}
