/* quant_tern.c — scalar kernels for TQ1_0, TQ2_0, Q1_0 and Q2_0 (declared in quant_tern.h,
 * pointed at by the type table in quant.c; formats in blocks.h).
 *
 * Dequantization is ggml's float for float (the differential test compares bits); the reference
 * quantizers follow ggml's quantize_row_{tq1_0,tq2_0,q1_0,q2_0}_ref operation for operation; the
 * dot products are an exact integer sum per block and ggml's float scaling in ggml's order.
 * Rows are read through byte offsets: any alignment works. */
#include <math.h>
#include <string.h>

#include "quant/quant_tern.h"

#define fp16 e0_fp16_to_fp32

#define TQ1_QS offsetof(e0_block_tq1_0, qs)
#define TQ1_QH offsetof(e0_block_tq1_0, qh)
#define TQ1_D offsetof(e0_block_tq1_0, d)
#define TQ2_QS offsetof(e0_block_tq2_0, qs)
#define TQ2_D offsetof(e0_block_tq2_0, d)

/* round(v) for v that should lie in [-1, 1] (x / amax): lroundf for those, and a clamp (NaN ->
 * 0) for what a non-finite row can produce, where ggml's conversion is unspecified. */
static inline int round_unit(float v) {
    if (v >= -1.0f && v <= 1.0f) return (int)lroundf(v);
    return v > 1.0f ? 1 : v < -1.0f ? -1 : 0;
}

/* trit n (0 = most significant) of a byte that packs 5 trits as ceil(q * 256 / 243). */
static inline uint8_t trit(uint8_t b, int n) {
    static const uint8_t pow3[5] = {1, 3, 9, 27, 81};
    const uint8_t q = (uint8_t)(b * pow3[n]);
    return (uint8_t)(((uint16_t)q * 3) >> 8);
}

static float block_amax(const float *x, int n) {
    float amax = 0;
    for (int j = 0; j < n; j++) amax = amax > fabsf(x[j]) ? amax : fabsf(x[j]); /* ggml's MAX(amax, fabsf(v)) */
    return amax;
}

/* ---------------- TQ1_0 ----------------
 * Element order: bytes 0..31 hold elements 32n + m (trit n of byte m), bytes 32..47 elements
 * 160 + 16n + m, qh[0..3] elements 240 + 4n + j. */

void e0_tq1_0_trits(const uint8_t *blk, uint8_t t[QK_K]) {
    const uint8_t *qs = blk + TQ1_QS, *qh = blk + TQ1_QH;
    for (int n = 0; n < 5; n++)
        for (int m = 0; m < 32; m++) t[32 * n + m] = trit(qs[m], n);
    for (int n = 0; n < 5; n++)
        for (int m = 0; m < 16; m++) t[160 + 16 * n + m] = trit(qs[32 + m], n);
    for (int n = 0; n < 4; n++)
        for (int j = 0; j < 4; j++) t[240 + 4 * n + j] = trit(qh[j], n);
}

void e0_tq1_0_to_float(const void *src, float *dst, int64_t n) {
    const uint8_t *b = src;
    uint8_t t[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, b += sizeof(e0_block_tq1_0), dst += QK_K) {
        const float d = fp16(e0_rd16(b + TQ1_D));
        e0_tq1_0_trits(b, t);
        for (int j = 0; j < QK_K; j++) dst[j] = (float)((int)t[j] - 1) * d;
    }
}

/* 5 (or 4, then a zero trit) trits, first most significant, into ceil(q * 256 / 243). */
static uint8_t pack_trits(const float *x, int stride, int count, float id) {
    uint8_t q = 0;
    for (int k = 0; k < count; k++) q = (uint8_t)(q * 3 + round_unit(x[k * stride] * id) + 1);
    if (count == 4) q = (uint8_t)(q * 3);
    return (uint8_t)(((uint16_t)q * 256 + (243 - 1)) / 243);
}

void e0_tq1_0_from_float_ref(const float *x, void *dst, int64_t n) {
    uint8_t *b = dst;
    for (int64_t i = 0; i < n / QK_K; i++, b += sizeof(e0_block_tq1_0), x += QK_K) {
        const float d = block_amax(x, QK_K), id = d ? 1.0f / d : 0.0f;
        e0_wr16(b + TQ1_D, e0_fp32_to_fp16(d));
        for (int m = 0; m < 32; m++) b[TQ1_QS + m] = pack_trits(x + m, 32, 5, id);
        for (int m = 0; m < 16; m++) b[TQ1_QS + 32 + m] = pack_trits(x + 160 + m, 16, 5, id);
        for (int j = 0; j < 4; j++) b[TQ1_QH + j] = pack_trits(x + 240 + j, 4, 4, id);
    }
}

void e0_vec_dot_tq1_0_ref(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w;
    const e0_block_q8_K *y = a;
    uint8_t t[QK_K];
    float sumf = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += sizeof(e0_block_tq1_0), y++) {
        e0_tq1_0_trits(x, t);
        int sum = 0;
        for (int j = 0; j < QK_K; j++) sum += ((int)t[j] - 1) * y->qs[j];
        sumf += (float)sum * (fp16(e0_rd16(x + TQ1_D)) * y->d);
    }
    *s = sumf;
}

/* ---------------- TQ2_0: element 128*(j/32) + 32l + j%32 in bits 2l of byte j ---------------- */

static inline int tq2_code(const uint8_t *qs, int e) { return (qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3; }

void e0_tq2_0_to_float(const void *src, float *dst, int64_t n) {
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / QK_K; i++, b += sizeof(e0_block_tq2_0), dst += QK_K) {
        const float d = fp16(e0_rd16(b + TQ2_D));
        for (int e = 0; e < QK_K; e++) dst[e] = (float)(tq2_code(b + TQ2_QS, e) - 1) * d;
    }
}

void e0_tq2_0_from_float_ref(const float *x, void *dst, int64_t n) {
    uint8_t *b = dst;
    for (int64_t i = 0; i < n / QK_K; i++, b += sizeof(e0_block_tq2_0), x += QK_K) {
        const float d = block_amax(x, QK_K), id = d ? 1.0f / d : 0.0f;
        e0_wr16(b + TQ2_D, e0_fp32_to_fp16(d));
        for (int j = 0; j < 64; j++) {
            uint8_t q = 0;
            for (int l = 0; l < 4; l++) q = (uint8_t)(q + (((round_unit(x[128 * (j / 32) + 32 * l + j % 32] * id) + 1) & 3) << (2 * l)));
            b[TQ2_QS + j] = q;
        }
    }
}

void e0_vec_dot_tq2_0_ref(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w;
    const e0_block_q8_K *y = a;
    float sumf = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += sizeof(e0_block_tq2_0), y++) {
        int sumi = 0;
        for (int e = 0; e < QK_K; e++) sumi += y->qs[e] * (tq2_code(x + TQ2_QS, e) - 1);
        sumf += (float)sumi * (y->d * fp16(e0_rd16(x + TQ2_D)));
    }
    *s = sumf;
}

/* ---------------- Q1_0: d = mean |x|, one sign bit per element ---------------- */

void e0_q1_0_to_float(const void *src, float *dst, int64_t n) {
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / E0_QK_Q1_0; i++, b += Q1_0_SIZE, dst += E0_QK_Q1_0) {
        const float d = fp16(e0_rd16(b)), nd = -d;
        for (int j = 0; j < E0_QK_Q1_0; j++) dst[j] = (b[Q1_0_QS + j / 8] >> (j % 8)) & 1 ? d : nd;
    }
}

void e0_q1_0_from_float_ref(const float *x, void *dst, int64_t n) {
    uint8_t *b = dst;
    for (int64_t i = 0; i < n / E0_QK_Q1_0; i++, b += Q1_0_SIZE, x += E0_QK_Q1_0) {
        float sum_abs = 0;
        for (int j = 0; j < E0_QK_Q1_0; j++) sum_abs += fabsf(x[j]);
        e0_wr16(b, e0_fp32_to_fp16(sum_abs / E0_QK_Q1_0));
        memset(b + Q1_0_QS, 0, E0_QK_Q1_0 / 8);
        for (int j = 0; j < E0_QK_Q1_0; j++)
            if (x[j] >= 0.0f) b[Q1_0_QS + j / 8] |= (uint8_t)(1 << (j % 8));
    }
}

/* Per Q8_0 block k (elements 32k..32k+31, bits in bytes 4k..4k+3): sumi += dy * (sum of +-q),
 * then sumf += d * sumi, ggml's order. */
void e0_vec_dot_q1_0_ref(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w, *y = a;
    float sumf = 0;
    for (int64_t i = 0; i < n / E0_QK_Q1_0; i++, x += Q1_0_SIZE) {
        float sumi = 0;
        for (int k = 0; k < 4; k++, y += Q8_0_SIZE) {
            const int8_t *qy = (const int8_t *)(y + Q8_0_QS);
            int sb = 0;
            for (int j = 0; j < 32; j++) sb += (x[Q1_0_QS + 4 * k + j / 8] >> (j % 8)) & 1 ? qy[j] : -qy[j];
            sumi += fp16(e0_rd16(y)) * (float)sb;
        }
        sumf += fp16(e0_rd16(x)) * sumi;
    }
    *s = sumf;
}

/* ---------------- Q2_0: d = amax, codes round(x/d) + 1 in 0..3 (3 = +2d is never written) ---------------- */

void e0_q2_0_to_float(const void *src, float *dst, int64_t n) {
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / E0_QK_Q2_0; i++, b += Q2_0_SIZE, dst += E0_QK_Q2_0) {
        const float d = fp16(e0_rd16(b));
        for (int j = 0; j < E0_QK_Q2_0; j++) dst[j] = (float)((int)((b[Q2_0_QS + j / 4] >> (2 * (j % 4))) & 3) - 1) * d;
    }
}

void e0_q2_0_from_float_ref(const float *x, void *dst, int64_t n) {
    uint8_t *b = dst;
    for (int64_t i = 0; i < n / E0_QK_Q2_0; i++, b += Q2_0_SIZE, x += E0_QK_Q2_0) {
        float amax = 0;
        for (int j = 0; j < E0_QK_Q2_0; j++)
            if (fabsf(x[j]) > amax) amax = fabsf(x[j]);
        const float id = amax > 0.0f ? 1.0f / amax : 0.0f;
        e0_wr16(b, e0_fp32_to_fp16(amax));
        memset(b + Q2_0_QS, 0, E0_QK_Q2_0 / 4);
        for (int j = 0; j < E0_QK_Q2_0; j++) {
            const float v = x[j] * id; /* ggml: (int)roundf(v) + 1, clamped to 0..3 */
            int q = (v >= -1.0f && v <= 1.0f ? (int)roundf(v) : v > 1.0f ? 1 : v < -1.0f ? -1 : 0) + 1;
            b[Q2_0_QS + j / 4] |= (uint8_t)(q << (2 * (j % 4)));
        }
    }
}

void e0_vec_dot_q2_0_ref(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w, *y = a;
    float sumf = 0;
    for (int64_t i = 0; i < n / E0_QK_Q2_0; i++, x += Q2_0_SIZE) {
        float sumi = 0;
        for (int k = 0; k < 2; k++, y += Q8_0_SIZE) {
            const int8_t *qy = (const int8_t *)(y + Q8_0_QS);
            int sb = 0;
            for (int j = 0; j < 32; j++) sb += ((int)((x[Q2_0_QS + 8 * k + j / 4] >> (2 * (j % 4))) & 3) - 1) * qy[j];
            sumi += fp16(e0_rd16(y)) * (float)sb;
        }
        sumf += fp16(e0_rd16(x)) * sumi;
    }
    *s = sumf;
}
