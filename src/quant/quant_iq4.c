/* quant_iq4.c — scalar kernels for IQ4_NL, IQ4_XS, MXFP4 and NVFP4 (declared in quant_iq4.h,
 * pointed at by the type table in quant.c; formats in blocks.h).
 *
 * Dequantization is ggml's float for float (the differential test compares bits). The reference
 * quantizers follow ggml's quantize_iq4_nl / quantize_iq4_xs / quantize_row_mxfp4_ref /
 * quantize_row_nvfp4_ref operation for operation, so a row we write is the row llama-quantize
 * writes. The dot products are ggml's scheme: an exact integer sum per block (sub-block) and the
 * float scaling in ggml's order. Rows are read through byte offsets: any alignment works. */
#include <math.h>

#include "quant/quant_iq4.h"

#define fp16 e0_fp16_to_fp32

const int8_t e0_kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
const int8_t e0_kvalues_fp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/* UE4M3 value / 2 for every byte: exponent field 0 is subnormal (m * 2^-9), else
 * (1 + m/8) * 2^(exp - 7); 0x7F (the NaN code) and 0 decode as 0. Built from the same formula as
 * ggml (every value is an exact float, so any exact construction gives the same bits). */
#define UE(x) ((x) == 0x7F ? 0.0f : (((x) >> 3) & 0xF) == 0 ? (float)((x) & 7) / 1024.0f \
               : (1.0f + (float)((x) & 7) / 8.0f) * 0.5f * (float)(1u << (((x) >> 3) & 0xF)) / 128.0f)
#define UE8(b) UE(b + 0), UE(b + 1), UE(b + 2), UE(b + 3), UE(b + 4), UE(b + 5), UE(b + 6), UE(b + 7)
#define UE64(b) UE8(b), UE8(b + 8), UE8(b + 16), UE8(b + 24), UE8(b + 32), UE8(b + 40), UE8(b + 48), UE8(b + 56)
const float e0_ue4m3_half[256] = {UE64(0), UE64(64), UE64(128), UE64(192)};

uint8_t e0_fp32_to_ue4m3(float x) {
    if (!(x > 0.0f)) return 0;
    if (x > 448.0f) x = 448.0f;
    uint32_t bits;
    memcpy(&bits, &x, 4);
    const int fexp = (int)((bits >> 23) & 0xFF) - 127, fman = (int)((bits >> 20) & 7);
    int e = fexp + 7;
    if (e <= 0) { /* subnormal: m = round(x * 2^9), x < 2^-6 so the cast is in range */
        int m = (int)(x * 512.0f + 0.5f);
        if (m > 7) m = 7;
        return m < 1 ? 0 : (uint8_t)m;
    }
    if (e >= 15) return 0x7E;
    int m = fman + (int)((bits >> 19) & 1); /* round half up on the 4th mantissa bit */
    if (m > 7) {
        m = 0;
        if (++e >= 15) return 0x7E;
    }
    return (uint8_t)((e << 3) | m);
}

/* ---------------- shared helpers ---------------- */

static inline int nearest_int(float f) { /* ggml's: round to nearest even for |f| < 2^22 */
    float v = f + 12582912.f;
    int32_t i;
    memcpy(&i, &v, 4);
    return (i & 0x007fffff) - 0x00400000;
}

/* Index of the value of the sorted table val[0..n-1] nearest to x (ties to the lower index only
 * when strictly nearer, as ggml's best_index_int8). */
static inline int best_index_int8(int n, const int8_t *val, float x) {
    if (x <= val[0]) return 0;
    if (x >= val[n - 1]) return n - 1;
    int lo = 0, hi = n - 1;
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (x < val[mid]) hi = mid;
        else lo = mid;
    }
    return x - val[hi - 1] < val[hi] - x ? hi - 1 : hi;
}

/* 32 codes of one group (16 bytes): element j in the low nibble of byte j, j + 16 in the high. */
static void unpack_nibbles(const uint8_t *qs, uint8_t q[32]) {
    for (int j = 0; j < 16; j++) {
        q[j] = qs[j] & 0xF;
        q[j + 16] = qs[j] >> 4;
    }
}

/* ---------------- IQ4_NL / IQ4_XS quantizer ----------------
 * One super-block of sb elements (32: IQ4_NL, 256: IQ4_XS) in sub-blocks of 32. Per sub-block
 * the scale is chosen by weighted least squares over the codes nearest to x/d, trying the 2*ntry+1
 * starting scales (values[0] + itry) / max; IQ4_XS then stores the sub-block scales as 6-bit
 * multiples of one fp16 d and re-picks the codes for the stored scale. Weights: imatrix *
 * sqrt(sigma2 + x^2) with an imatrix, else x^2. */
static void iq4_quantize_super(int sb, const float *x, const float *qw, int ntry, uint8_t *d_out, uint8_t *q4,
                               uint8_t *scales_h_out, uint8_t *scales_l) {
    const int8_t *values = e0_kvalues_iq4nl;
    const int nsub = sb / 32;
    uint8_t L[QK_K] = {0};
    float weight[32], scales[QK_K / 32];
    float sigma2 = 0;
    for (int j = 0; j < sb; j++) sigma2 += x[j] * x[j];
    sigma2 *= 2.f / sb;
    memset(q4, 0, (size_t)sb / 2);
    e0_wr16(d_out, e0_fp32_to_fp16(0.f));
    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < nsub; ib++) {
        const float *xb = x + 32 * ib;
        uint8_t *Lb = L + 32 * ib;
        if (qw) {
            for (int j = 0; j < 32; j++) weight[j] = qw[32 * ib + j] * sqrtf(sigma2 + xb[j] * xb[j]);
        } else {
            for (int j = 0; j < 32; j++) weight[j] = xb[j] * xb[j];
        }
        float amax = 0, max = 0;
        for (int j = 0; j < 32; j++) {
            float ax = fabsf(xb[j]);
            if (ax > amax) {
                amax = ax;
                max = xb[j];
            }
        }
        if (amax < 1e-15f) { /* ggml's GROUP_MAX_EPS */
            scales[ib] = 0;
            continue;
        }
        float d = ntry > 0 ? -max / values[0] : max / values[0];
        float id = 1 / d;
        float sumqx = 0, sumq2 = 0;
        for (int j = 0; j < 32; j++) {
            int l = best_index_int8(16, values, id * xb[j]);
            Lb[j] = (uint8_t)l;
            float q = values[l], w = weight[j];
            sumqx += w * q * xb[j];
            sumq2 += w * q * q;
        }
        d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
        float best = d * sumqx;
        for (int itry = -ntry; itry <= ntry; itry++) {
            id = (float)(itry + values[0]) / max;
            sumqx = sumq2 = 0;
            for (int j = 0; j < 32; j++) {
                int l = best_index_int8(16, values, id * xb[j]);
                float q = values[l], w = weight[j];
                sumqx += w * q * xb[j];
                sumq2 += w * q * q;
            }
            if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                d = sumqx / sumq2;
                best = d * sumqx;
            }
        }
        scales[ib] = d;
        float abs_d = fabsf(d);
        if (abs_d > amax_scale) {
            amax_scale = abs_d;
            max_scale = d;
        }
    }
    if (nsub > 1) {
        uint16_t sh = 0;
        float d = -max_scale / 32;
        e0_wr16(d_out, e0_fp32_to_fp16(d));
        float id = d ? 1 / d : 0.f;
        for (int ib = 0; ib < nsub; ib++) {
            int l = nearest_int(id * scales[ib]);
            l = l < -32 ? -32 : l > 31 ? 31 : l;
            float dl = d * l, idl = dl ? 1 / dl : 0.f;
            for (int j = 0; j < 32; j++) L[32 * ib + j] = (uint8_t)best_index_int8(16, values, idl * x[32 * ib + j]);
            l += 32;
            if (ib % 2 == 0) scales_l[ib / 2] = (uint8_t)(l & 0xF);
            else scales_l[ib / 2] |= (uint8_t)((l & 0xF) << 4);
            sh |= (uint16_t)((l >> 4) << (2 * ib));
        }
        e0_wr16(scales_h_out, sh);
    } else {
        e0_wr16(d_out, e0_fp32_to_fp16(scales[0]));
        if (ntry > 0) {
            float id = scales[0] ? 1 / scales[0] : 0;
            for (int j = 0; j < sb; j++) L[j] = (uint8_t)best_index_int8(16, values, id * x[j]);
        }
    }
    for (int i = 0; i < sb / 32; i++)
        for (int j = 0; j < 16; j++) q4[16 * i + j] = (uint8_t)(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
}

/* ---------------- IQ4_NL ---------------- */

void e0_iq4_nl_to_float(const void *src, float *dst, int64_t n) {
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / E0_QK_IQ4_NL; i++, b += IQ4_NL_SIZE, dst += 32) {
        const float d = fp16(e0_rd16(b));
        for (int j = 0; j < 16; j++) {
            dst[j] = d * e0_kvalues_iq4nl[b[IQ4_NL_QS + j] & 0xF];
            dst[j + 16] = d * e0_kvalues_iq4nl[b[IQ4_NL_QS + j] >> 4];
        }
    }
}

void e0_quantize_iq4_nl(const float *src, void *dst, int64_t nrow, int64_t n_per_row, const float *imatrix) {
    uint8_t *b = dst;
    for (int64_t r = 0; r < nrow; r++, src += n_per_row)
        for (int64_t i = 0; i < n_per_row / 32; i++, b += IQ4_NL_SIZE)
            iq4_quantize_super(32, src + 32 * i, imatrix ? imatrix + 32 * i : NULL, 7, b, b + IQ4_NL_QS, NULL, NULL);
}

void e0_iq4_nl_from_float_ref(const float *x, void *dst, int64_t n) { e0_quantize_iq4_nl(x, dst, 1, n, NULL); }

void e0_vec_dot_iq4_nl_ref(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w, *y = a;
    float sumf = 0;
    for (int64_t i = 0; i < n / 32; i++, x += IQ4_NL_SIZE, y += Q8_0_SIZE) {
        const int8_t *qy = (const int8_t *)(y + Q8_0_QS);
        const float d = fp16(e0_rd16(y)) * fp16(e0_rd16(x));
        int s1 = 0, s2 = 0;
        for (int j = 0; j < 16; j++) {
            s1 += qy[j] * e0_kvalues_iq4nl[x[IQ4_NL_QS + j] & 0xF];
            s2 += qy[j + 16] * e0_kvalues_iq4nl[x[IQ4_NL_QS + j] >> 4];
        }
        sumf += d * (float)(s1 + s2);
    }
    *s = sumf;
}

/* ---------------- IQ4_XS ---------------- */

#define XS_D offsetof(e0_block_iq4_xs, d)
#define XS_SH offsetof(e0_block_iq4_xs, scales_h)
#define XS_SL offsetof(e0_block_iq4_xs, scales_l)
#define XS_QS offsetof(e0_block_iq4_xs, qs)

/* 6-bit scale of sub-block ib (0..7), minus 32. */
static inline int xs_scale(const uint8_t *b, int ib) {
    const int ls = ((b[XS_SL + ib / 2] >> (4 * (ib % 2))) & 0xF) | (((e0_rd16(b + XS_SH) >> (2 * ib)) & 3) << 4);
    return ls - 32;
}

void e0_iq4_xs_to_float(const void *src, float *dst, int64_t n) {
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / QK_K; i++, b += sizeof(e0_block_iq4_xs)) {
        const float d = fp16(e0_rd16(b + XS_D));
        for (int ib = 0; ib < 8; ib++, dst += 32) {
            const float dl = d * (float)xs_scale(b, ib);
            const uint8_t *qs = b + XS_QS + 16 * ib;
            for (int j = 0; j < 16; j++) {
                dst[j] = dl * e0_kvalues_iq4nl[qs[j] & 0xF];
                dst[j + 16] = dl * e0_kvalues_iq4nl[qs[j] >> 4];
            }
        }
    }
}

void e0_quantize_iq4_xs(const float *src, void *dst, int64_t nrow, int64_t n_per_row, const float *imatrix) {
    uint8_t *b = dst;
    for (int64_t r = 0; r < nrow; r++, src += n_per_row)
        for (int64_t i = 0; i < n_per_row / QK_K; i++, b += sizeof(e0_block_iq4_xs))
            iq4_quantize_super(QK_K, src + QK_K * i, imatrix ? imatrix + QK_K * i : NULL, 7, b + XS_D, b + XS_QS, b + XS_SH,
                               b + XS_SL);
}

void e0_iq4_xs_from_float_ref(const float *x, void *dst, int64_t n) { e0_quantize_iq4_xs(x, dst, 1, n, NULL); }

void e0_vec_dot_iq4_xs_ref(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w;
    const e0_block_q8_K *y = a;
    float sumf = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += sizeof(e0_block_iq4_xs), y++) {
        const float d4d8 = fp16(e0_rd16(x + XS_D)) * y->d;
        uint8_t q[32];
        for (int ib = 0; ib < 8; ib++) {
            unpack_nibbles(x + XS_QS + 16 * ib, q);
            int s1 = 0, s2 = 0;
            for (int j = 0; j < 16; j++) {
                s1 += y->qs[32 * ib + j] * e0_kvalues_iq4nl[q[j]];
                s2 += y->qs[32 * ib + 16 + j] * e0_kvalues_iq4nl[q[j + 16]];
            }
            sumf += d4d8 * (float)xs_scale(x, ib) * (float)(s1 + s2);
        }
    }
    *s = sumf;
}

/* ---------------- MXFP4 / NVFP4 ---------------- */

/* Index of the FP4 code whose value times e is nearest x (first one on ties, ggml's order). */
static inline int best_index_fp4(float x, float e) {
    int best = 0;
    float best_err = fabsf(e0_kvalues_fp4[0] * e - x);
    for (int i = 1; i < 16; i++) {
        float err = fabsf(e0_kvalues_fp4[i] * e - x);
        if (err < best_err) {
            best = i;
            best_err = err;
        }
    }
    return best;
}

/* (uint8_t) of a float the way x86's truncating conversion does it (low byte of the int32),
 * without the undefined behaviour of an out-of-range cast. */
static inline uint8_t to_u8_wrap(float v) {
    if (!(v > -2147483648.0f && v < 2147483648.0f)) return 0; /* cvttss2si's 0x80000000 */
    return (uint8_t)(uint32_t)(int32_t)v;
}

void e0_mxfp4_to_float(const void *src, float *dst, int64_t n) {
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / E0_QK_MXFP4; i++, b += MXFP4_SIZE, dst += 32) {
        const float d = e0_e8m0_to_fp32_half(b[0]);
        for (int j = 0; j < 16; j++) {
            dst[j] = e0_kvalues_fp4[b[MXFP4_QS + j] & 0xF] * d;
            dst[j + 16] = e0_kvalues_fp4[b[MXFP4_QS + j] >> 4] * d;
        }
    }
}

/* Shared exponent floor(log2(amax)) - 2 (the largest code, 6 = 2^2 * 1.5, then fits), biased. */
void e0_mxfp4_from_float_ref(const float *x, void *dst, int64_t n) {
    uint8_t *b = dst;
    for (int64_t i = 0; i < n / 32; i++, b += MXFP4_SIZE, x += 32) {
        float amax = 0;
        for (int j = 0; j < 32; j++)
            if (amax < fabsf(x[j])) amax = fabsf(x[j]);
        const uint8_t e = amax > 0.0f ? to_u8_wrap(floorf(log2f(amax)) - 2 + 127) : 0;
        const float d = e0_e8m0_to_fp32_half(e);
        b[0] = e;
        for (int j = 0; j < 16; j++)
            b[MXFP4_QS + j] = (uint8_t)(best_index_fp4(x[j], d) | (best_index_fp4(x[j + 16], d) << 4));
    }
}

void e0_vec_dot_mxfp4_ref(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w, *y = a;
    float sumf = 0;
    for (int64_t i = 0; i < n / 32; i++, x += MXFP4_SIZE, y += Q8_0_SIZE) {
        const int8_t *qy = (const int8_t *)(y + Q8_0_QS);
        const float d = fp16(e0_rd16(y)) * e0_e8m0_to_fp32_half(x[0]);
        int s1 = 0, s2 = 0;
        for (int j = 0; j < 16; j++) {
            s1 += qy[j] * e0_kvalues_fp4[x[MXFP4_QS + j] & 0xF];
            s2 += qy[j + 16] * e0_kvalues_fp4[x[MXFP4_QS + j] >> 4];
        }
        sumf += d * (float)(s1 + s2);
    }
    *s = sumf;
}

void e0_nvfp4_to_float(const void *src, float *dst, int64_t n) {
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / E0_QK_NVFP4; i++, b += NVFP4_SIZE) {
        for (int sb = 0; sb < 4; sb++, dst += 16) {
            const float d = e0_ue4m3_to_fp32_half(b[sb]);
            const uint8_t *qs = b + NVFP4_QS + 8 * sb;
            for (int j = 0; j < 8; j++) {
                dst[j] = e0_kvalues_fp4[qs[j] & 0xF] * d;
                dst[j + 8] = e0_kvalues_fp4[qs[j] >> 4] * d;
            }
        }
    }
}

/* Per 16 elements: the UE4M3 scale nearest amax / 6 (6 = the largest E2M1 value), then the
 * nearest code for that scale. */
void e0_nvfp4_from_float_ref(const float *x, void *dst, int64_t n) {
    uint8_t *b = dst;
    for (int64_t i = 0; i < n / E0_QK_NVFP4; i++, b += NVFP4_SIZE) {
        for (int sb = 0; sb < 4; sb++, x += 16) {
            float amax = 0;
            for (int j = 0; j < 16; j++)
                if (amax < fabsf(x[j])) amax = fabsf(x[j]);
            const uint8_t ue = e0_fp32_to_ue4m3(amax / 6.0f);
            const float d = e0_ue4m3_to_fp32_half(ue);
            b[sb] = ue;
            for (int j = 0; j < 8; j++)
                b[NVFP4_QS + 8 * sb + j] = (uint8_t)(best_index_fp4(x[j], d) | (best_index_fp4(x[j + 8], d) << 4));
        }
    }
}

/* One NVFP4 block against two Q8_0 blocks: sub-block sb uses bytes 16*(sb%2) .. +15 of Q8_0
 * block sb/2; per sub-block sumf += (dy * d) * sumi, ggml's order. */
void e0_vec_dot_nvfp4_ref(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *x = w, *y = a;
    float sumf = 0;
    for (int64_t i = 0; i < n / E0_QK_NVFP4; i++, x += NVFP4_SIZE, y += 2 * Q8_0_SIZE) {
        for (int sb = 0; sb < 4; sb++) {
            const uint8_t *yb = y + (sb / 2) * Q8_0_SIZE;
            const int8_t *qy = (const int8_t *)(yb + Q8_0_QS) + 16 * (sb % 2);
            const float d = e0_ue4m3_to_fp32_half(x[sb]), dy = fp16(e0_rd16(yb));
            const uint8_t *qs = x + NVFP4_QS + 8 * sb;
            int lo = 0, hi = 0;
            for (int j = 0; j < 8; j++) {
                lo += qy[j] * e0_kvalues_fp4[qs[j] & 0xF];
                hi += qy[j + 8] * e0_kvalues_fp4[qs[j] >> 4];
            }
            sumf += dy * d * (float)(lo + hi);
        }
    }
    *s = sumf;
}
