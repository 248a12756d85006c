/* quant_k.c — scalar kernels for the K-quants Q2_K..Q6_K and Q8_K (the type table in quant.c
 * points at them; declared in quant_k.h).
 *
 * to_float is exactly ggml's dequantize_row_* (same float operations in the same order).
 * from_float_ref quantizes with a small weighted least-squares search per sub-block (our own,
 * similar in quality to ggml's make_qkx2_quants / make_qx_quants), then quantizes the sub-block
 * scales against one fp16 super-block scale and re-rounds the values against the stored scales.
 * Q8_K's quantizer is exactly ggml's quantize_row_q8_K_ref (bsums included).
 * The reference dots: per super-block an exact integer dot, then one float scale, like ggml's
 * scalar path.
 *
 * Rows of weight blocks must be 2-byte aligned and Q8_K rows 4-byte aligned (GGUF tensor data
 * and e0_alloc guarantee this). */
#include <math.h>
#include <string.h>

#include "quant/quant_k.h"

#define FP16(h) e0_fp16_to_fp32(h)

/* Round to nearest, ties to even, without UB for any input (ggml's trick; exact for
 * |f| <= 4194303, garbage-but-defined beyond, callers clamp). */
static inline int nearest_int(float f) {
    float v = f + 12582912.f;
    int32_t i;
    memcpy(&i, &v, 4);
    return (i & 0x007fffff) - 0x00400000;
}

static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* ======================================================================= dequantization */

void e0_q2_K_to_float(const void *src, float *y, int64_t n) {
    const e0_block_q2_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = FP16(x[i].d), min = FP16(x[i].dmin);
        const uint8_t *q = x[i].qs;
        int is = 0;
        for (int c = 0; c < QK_K; c += 128) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int half = 0; half < 2; half++) {
                    uint8_t sc = x[i].scales[is++];
                    float dl = d * (sc & 0xF), ml = min * (sc >> 4);
                    for (int l = 0; l < 16; l++) *y++ = dl * ((int8_t)((q[l + 16 * half] >> shift) & 3)) - ml;
                }
            }
            q += 32;
        }
    }
}

void e0_q3_K_to_float(const void *src, float *y, int64_t n) {
    const e0_block_q3_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d_all = FP16(x[i].d);
        int8_t scales[16];
        k_unpack_q3_scales(x[i].scales, scales);
        const uint8_t *q = x[i].qs, *hm = x[i].hmask;
        uint8_t m = 1;
        int is = 0;
        for (int c = 0; c < QK_K; c += 128) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int half = 0; half < 2; half++) {
                    float dl = d_all * (scales[is++]);
                    for (int l = 16 * half; l < 16 * half + 16; l++)
                        *y++ = dl * ((int8_t)((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4));
                }
                m <<= 1;
            }
            q += 32;
        }
    }
}

void e0_q4_K_to_float(const void *src, float *y, int64_t n) {
    const e0_block_q4_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = FP16(x[i].d), min = FP16(x[i].dmin);
        const uint8_t *q = x[i].qs;
        for (int is = 0; is < 8; is += 2) {
            uint8_t sc, m;
            k_scale_min(is, x[i].scales, &sc, &m);
            const float d1 = d * sc, m1 = min * m;
            k_scale_min(is + 1, x[i].scales, &sc, &m);
            const float d2 = d * sc, m2 = min * m;
            for (int l = 0; l < 32; l++) *y++ = d1 * (q[l] & 0xF) - m1;
            for (int l = 0; l < 32; l++) *y++ = d2 * (q[l] >> 4) - m2;
            q += 32;
        }
    }
}

void e0_q5_K_to_float(const void *src, float *y, int64_t n) {
    const e0_block_q5_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = FP16(x[i].d), min = FP16(x[i].dmin);
        const uint8_t *ql = x[i].qs, *qh = x[i].qh;
        uint8_t u1 = 1, u2 = 2;
        for (int is = 0; is < 8; is += 2) {
            uint8_t sc, m;
            k_scale_min(is, x[i].scales, &sc, &m);
            const float d1 = d * sc, m1 = min * m;
            k_scale_min(is + 1, x[i].scales, &sc, &m);
            const float d2 = d * sc, m2 = min * m;
            for (int l = 0; l < 32; l++) *y++ = d1 * ((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
            for (int l = 0; l < 32; l++) *y++ = d2 * ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
            ql += 32;
            u1 <<= 2;
            u2 <<= 2;
        }
    }
}

void e0_q6_K_to_float(const void *src, float *y, int64_t n) {
    const e0_block_q6_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = FP16(x[i].d);
        const uint8_t *ql = x[i].ql, *qh = x[i].qh;
        const int8_t *sc = x[i].scales;
        for (int c = 0; c < QK_K; c += 128) {
            for (int l = 0; l < 32; l++) {
                int is = l / 16;
                const int8_t q1 = (int8_t)((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int8_t q2 = (int8_t)((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int8_t q3 = (int8_t)((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int8_t q4 = (int8_t)((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l + 0] = d * sc[is + 0] * q1;
                y[l + 32] = d * sc[is + 2] * q2;
                y[l + 64] = d * sc[is + 4] * q3;
                y[l + 96] = d * sc[is + 6] * q4;
            }
            y += 128;
            ql += 64;
            qh += 32;
            sc += 8;
        }
    }
}

void e0_q8_K_to_float(const void *src, float *y, int64_t n) {
    const e0_block_q8_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++)
        for (int j = 0; j < QK_K; j++) *y++ = x[i].d * x[i].qs[j];
}

/* ======================================================================= quantization */

/* Q8_K, exactly ggml's quantize_row_q8_K_ref, except that an all-zero block also gets zero bsums
 * (ggml leaves them unwritten; they are multiplied by d = 0 either way). */
void e0_quantize_q8_K_block_ref(const float *x, e0_block_q8_K *y) {
    float max = 0, amax = 0;
    for (int j = 0; j < QK_K; j++) {
        float ax = fabsf(x[j]);
        if (ax > amax) {
            amax = ax;
            max = x[j];
        }
    }
    if (!amax) {
        memset(y, 0, sizeof *y);
        return;
    }
    const float iscale = -127.f / max;
    for (int j = 0; j < QK_K; j++) {
        int v = nearest_int(iscale * x[j]);
        y->qs[j] = (int8_t)(v < 127 ? v : 127);
    }
    for (int j = 0; j < QK_K / 16; j++) {
        int sum = 0;
        for (int l = 0; l < 16; l++) sum += y->qs[16 * j + l];
        y->bsums[j] = (int16_t)sum;
    }
    y->d = 1 / iscale;
    memset(y->pad, 0, sizeof y->pad);
}

void e0_q8_K_from_float_ref(const float *x, void *dst, int64_t n) {
    e0_block_q8_K *y = dst;
    for (int64_t i = 0; i < n / QK_K; i++) e0_quantize_q8_K_block_ref(x + i * QK_K, &y[i]);
}

/* Affine fit of one sub-block: x[i] ~= scale*L[i] - mn with L in 0..nmax, scale >= 0, mn >= 0
 * (the K-quant min is never positive, so zero stays representable). Tries the plain min/max
 * grid and 2*nstep+1 slightly stretched ones; for each rounding, the weighted least-squares
 * (scale, min) is solved in closed form; the lowest weighted error wins. Returns scale. */
static float fit_affine(int n, int nmax, const float *x, const float *w, uint8_t *L, float *mn, int nstep) {
    float lo = x[0], hi = x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < lo) lo = x[i];
        if (x[i] > hi) hi = x[i];
    }
    if (lo > 0) lo = 0;
    if (!(hi > lo) || !isfinite(hi - lo)) { /* constant (or unusable) sub-block */
        for (int i = 0; i < n; i++) L[i] = 0;
        *mn = isfinite(lo) ? -lo : 0;
        return 0;
    }
    float best_scale = (hi - lo) / nmax, best_min = lo, best_err = INFINITY;
    uint8_t Laux[32];
    for (int is = -nstep; is <= nstep; is++) {
        float iscale = (nmax + 0.1f * is) / (hi - lo);
        double sw = 0, swl = 0, swll = 0, swx = 0, swlx = 0;
        for (int i = 0; i < n; i++) {
            int l = clampi(nearest_int(iscale * (x[i] - lo)), 0, nmax);
            Laux[i] = (uint8_t)l;
            sw += w[i], swl += w[i] * l, swll += (double)w[i] * l * l;
            swx += w[i] * x[i], swlx += (double)w[i] * l * x[i];
        }
        double det = sw * swll - swl * swl, a, b;
        if (det <= 0) continue;
        a = (sw * swlx - swl * swx) / det;
        b = (swll * swx - swl * swlx) / det;
        if (b > 0) { /* min must be <= 0: refit the scale alone */
            b = 0;
            a = swll > 0 ? swlx / swll : 0;
        }
        if (a <= 0) continue;
        double err = 0;
        for (int i = 0; i < n; i++) {
            double diff = a * Laux[i] + b - x[i];
            err += w[i] * diff * diff;
        }
        if (err < best_err) {
            best_err = (float)err;
            best_scale = (float)a;
            best_min = (float)b;
            memcpy(L, Laux, (size_t)n);
        }
    }
    if (best_err == INFINITY) { /* no usable fit: plain grid */
        for (int i = 0; i < n; i++) L[i] = (uint8_t)clampi(nearest_int((x[i] - lo) / best_scale), 0, nmax);
    }
    *mn = -best_min;
    return best_scale;
}

/* Symmetric fit of one sub-block: x[i] ~= scale*L[i], L in -nmax..nmax-1, weights x^2 (as
 * ggml). The value of largest magnitude maps near -nmax; small stretches of that grid are tried
 * and the best least-squares scale kept. Returns the (signed) scale. */
static float fit_symmetric(int n, int nmax, const float *x, int nstep) {
    float amax = 0, max = 0;
    for (int i = 0; i < n; i++) {
        float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (!(amax > 1e-30f) || !isfinite(amax)) return 0;
    float best_scale = 0;
    double best_score = -1;
    for (int is = -nstep; is <= nstep; is++) {
        float iscale = -(nmax + 0.1f * is) / max;
        double slx = 0, sll = 0;
        for (int i = 0; i < n; i++) {
            int l = clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1);
            double w = (double)x[i] * x[i];
            slx += w * l * x[i];
            sll += w * l * l;
        }
        /* weighted error = sum w x^2 - slx^2/sll: maximize slx^2/sll */
        if (sll > 0 && slx * slx / sll > best_score) {
            best_score = slx * slx / sll;
            best_scale = (float)(slx / sll);
        }
    }
    return best_scale;
}

/* Largest-magnitude value of v[0..n) with its sign. */
static float signed_absmax(const float *v, int n) {
    float amax = 0, max = 0;
    for (int i = 0; i < n; i++)
        if (fabsf(v[i]) > amax) {
            amax = fabsf(v[i]);
            max = v[i];
        }
    return max;
}

void e0_q2_K_from_float_ref(const float *x, void *dst, int64_t n) {
    e0_block_q2_K *y = dst;
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K) {
        uint8_t L[QK_K];
        float scales[16], mins[16], w[16], max_scale = 0, max_min = 0;
        for (int j = 0; j < 16; j++) {
            for (int l = 0; l < 16; l++) w[l] = fabsf(x[16 * j + l]);
            scales[j] = fit_affine(16, 3, x + 16 * j, w, L + 16 * j, &mins[j], 15);
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        memset(&y[i], 0, sizeof y[i]);
        if (max_scale > 0 && isfinite(max_scale)) {
            float iscale = 15.f / max_scale;
            for (int j = 0; j < 16; j++) y[i].scales[j] = (uint8_t)clampi(nearest_int(iscale * scales[j]), 0, 15);
            y[i].d = e0_fp32_to_fp16(max_scale / 15.f);
        }
        if (max_min > 0 && isfinite(max_min)) {
            float imin = 15.f / max_min;
            for (int j = 0; j < 16; j++) y[i].scales[j] |= (uint8_t)(clampi(nearest_int(imin * mins[j]), 0, 15) << 4);
            y[i].dmin = e0_fp32_to_fp16(max_min / 15.f);
        }
        for (int j = 0; j < 16; j++) { /* re-round against the stored scales */
            const float d = FP16(y[i].d) * (y[i].scales[j] & 0xF);
            if (!d) continue;
            const float dm = FP16(y[i].dmin) * (y[i].scales[j] >> 4);
            for (int l = 0; l < 16; l++) L[16 * j + l] = (uint8_t)clampi(nearest_int((x[16 * j + l] + dm) / d), 0, 3);
        }
        for (int c = 0; c < QK_K; c += 128)
            for (int l = 0; l < 32; l++)
                y[i].qs[c / 4 + l] = (uint8_t)(L[c + l] | (L[c + l + 32] << 2) | (L[c + l + 64] << 4) | (L[c + l + 96] << 6));
    }
}

void e0_q3_K_from_float_ref(const float *x, void *dst, int64_t n) {
    e0_block_q3_K *y = dst;
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K) {
        float scales[16];
        for (int j = 0; j < 16; j++) scales[j] = fit_symmetric(16, 4, x + 16 * j, 9);
        memset(&y[i], 0, sizeof y[i]);
        const float max_scale = signed_absmax(scales, 16);
        int8_t ls[16] = {0};
        if (max_scale != 0 && isfinite(max_scale)) {
            const float iscale = -32.f / max_scale;
            for (int j = 0; j < 16; j++) ls[j] = (int8_t)clampi(nearest_int(iscale * scales[j]), -32, 31);
            y[i].d = e0_fp32_to_fp16(1 / iscale);
        }
        for (int j = 0; j < 16; j++) {
            int l = ls[j] + 32;
            if (j < 8) y[i].scales[j] = (uint8_t)(l & 0xF);
            else y[i].scales[j - 8] |= (uint8_t)((l & 0xF) << 4);
            y[i].scales[8 + j % 4] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
        }
        uint8_t L[QK_K];
        for (int j = 0; j < 16; j++) {
            const float d = FP16(y[i].d) * ls[j];
            for (int l = 0; l < 16; l++)
                L[16 * j + l] = (uint8_t)(d ? clampi(nearest_int(x[16 * j + l] / d), -4, 3) + 4 : 4);
        }
        for (int j = 0; j < QK_K; j++) /* bit 2 goes to hmask: element j at byte j%32, bit j/32 */
            if (L[j] > 3) {
                y[i].hmask[j % 32] |= (uint8_t)(1 << (j / 32));
                L[j] -= 4;
            }
        for (int c = 0; c < QK_K; c += 128)
            for (int l = 0; l < 32; l++)
                y[i].qs[c / 4 + l] = (uint8_t)(L[c + l] | (L[c + l + 32] << 2) | (L[c + l + 64] << 4) | (L[c + l + 96] << 6));
    }
}

/* q4_K / q5_K share the sub-block fit and the 6-bit scale/min packing; nmax = 15 or 31. */
static void fit_q45_K(const float *x, int nmax, uint8_t packed[12], uint16_t *d16, uint16_t *dmin16, uint8_t L[QK_K]) {
    float scales[8], mins[8], w[32], max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; j++) {
        float sum_x2 = 0;
        for (int l = 0; l < 32; l++) sum_x2 += x[32 * j + l] * x[32 * j + l];
        float av_x = sqrtf(sum_x2 / 32);
        for (int l = 0; l < 32; l++) w[l] = av_x + fabsf(x[32 * j + l]);
        scales[j] = fit_affine(32, nmax, x + 32 * j, w, L + 32 * j, &mins[j], nmax == 15 ? 20 : 15);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    if (!isfinite(max_scale)) max_scale = 0;
    if (!isfinite(max_min)) max_min = 0;
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0, inv_min = max_min > 0 ? 63.f / max_min : 0;
    memset(packed, 0, 12);
    for (int j = 0; j < 8; j++) {
        uint8_t ls = (uint8_t)clampi(nearest_int(inv_scale * scales[j]), 0, 63);
        uint8_t lm = (uint8_t)clampi(nearest_int(inv_min * mins[j]), 0, 63);
        if (j < 4) {
            packed[j] |= ls;
            packed[j + 4] |= lm;
        } else {
            packed[j + 4] = (uint8_t)((ls & 0xF) | ((lm & 0xF) << 4));
            packed[j - 4] |= (uint8_t)((ls >> 4) << 6);
            packed[j] |= (uint8_t)((lm >> 4) << 6);
        }
    }
    *d16 = e0_fp32_to_fp16(max_scale / 63.f);
    *dmin16 = e0_fp32_to_fp16(max_min / 63.f);
    for (int j = 0; j < 8; j++) { /* re-round against the stored scales */
        uint8_t sc, m;
        k_scale_min(j, packed, &sc, &m);
        const float d = FP16(*d16) * sc;
        if (!d) {
            memset(L + 32 * j, 0, 32);
            continue;
        }
        const float dm = FP16(*dmin16) * m;
        for (int l = 0; l < 32; l++) L[32 * j + l] = (uint8_t)clampi(nearest_int((x[32 * j + l] + dm) / d), 0, nmax);
    }
}

void e0_q4_K_from_float_ref(const float *x, void *dst, int64_t n) {
    e0_block_q4_K *y = dst;
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K) {
        uint8_t L[QK_K];
        fit_q45_K(x, 15, y[i].scales, &y[i].d, &y[i].dmin, L);
        for (int c = 0; c < QK_K; c += 64)
            for (int l = 0; l < 32; l++) y[i].qs[c / 2 + l] = (uint8_t)(L[c + l] | (L[c + l + 32] << 4));
    }
}

void e0_q5_K_from_float_ref(const float *x, void *dst, int64_t n) {
    e0_block_q5_K *y = dst;
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K) {
        uint8_t L[QK_K];
        fit_q45_K(x, 31, y[i].scales, &y[i].d, &y[i].dmin, L);
        memset(y[i].qh, 0, sizeof y[i].qh);
        for (int c = 0, bit = 0; c < QK_K; c += 64, bit += 2)
            for (int l = 0; l < 32; l++) {
                int l1 = L[c + l], l2 = L[c + l + 32];
                y[i].qh[l] |= (uint8_t)(((l1 >> 4) << bit) | ((l2 >> 4) << (bit + 1)));
                y[i].qs[c / 2 + l] = (uint8_t)((l1 & 0xF) | ((l2 & 0xF) << 4));
            }
    }
}

void e0_q6_K_from_float_ref(const float *x, void *dst, int64_t n) {
    e0_block_q6_K *y = dst;
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K) {
        float scales[16];
        for (int j = 0; j < 16; j++) scales[j] = fit_symmetric(16, 32, x + 16 * j, 9);
        memset(&y[i], 0, sizeof y[i]);
        const float max_scale = signed_absmax(scales, 16);
        if (max_scale != 0 && isfinite(max_scale)) {
            const float iscale = -128.f / max_scale;
            for (int j = 0; j < 16; j++) y[i].scales[j] = (int8_t)clampi(nearest_int(iscale * scales[j]), -128, 127);
            y[i].d = e0_fp32_to_fp16(1 / iscale);
        }
        uint8_t L[QK_K];
        for (int j = 0; j < 16; j++) {
            const float d = FP16(y[i].d) * y[i].scales[j];
            for (int l = 0; l < 16; l++)
                L[16 * j + l] = (uint8_t)(d ? clampi(nearest_int(x[16 * j + l] / d), -32, 31) + 32 : 32);
        }
        uint8_t *ql = y[i].ql, *qh = y[i].qh;
        for (int c = 0; c < QK_K; c += 128) {
            for (int l = 0; l < 32; l++) {
                const uint8_t q1 = L[c + l], q2 = L[c + l + 32], q3 = L[c + l + 64], q4 = L[c + l + 96];
                ql[l] = (uint8_t)((q1 & 0xF) | ((q3 & 0xF) << 4));
                ql[l + 32] = (uint8_t)((q2 & 0xF) | ((q4 & 0xF) << 4));
                qh[l] = (uint8_t)((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
            }
            ql += 64;
            qh += 32;
        }
    }
}

/* ======================================================================= dot products */
/* Each: weight row w (n/256 blocks) . Q8_K activation row a. */

void e0_vec_dot_q2_K_ref(int64_t n, float *s, const void *vw, const void *va) {
    const e0_block_q2_K *x = vw;
    const e0_block_q8_K *y = va;
    float sumf = 0;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *q2 = x[i].qs, *sc = x[i].scales;
        const int8_t *q8 = y[i].qs;
        int summs = 0, isum = 0, is = 0;
        for (int j = 0; j < 16; j++) summs += y[i].bsums[j] * (sc[j] >> 4);
        for (int c = 0; c < QK_K / 128; c++) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int half = 0; half < 2; half++) {
                    int isuml = 0;
                    for (int l = 16 * half; l < 16 * half + 16; l++) isuml += q8[l] * ((q2[l] >> shift) & 3);
                    isum += (sc[is++] & 0xF) * isuml;
                }
                q8 += 32;
            }
            q2 += 32;
        }
        const float dall = y[i].d * FP16(x[i].d), dmin = y[i].d * FP16(x[i].dmin);
        sumf += dall * isum - dmin * summs;
    }
    *s = sumf;
}

void e0_vec_dot_q3_K_ref(int64_t n, float *s, const void *vw, const void *va) {
    const e0_block_q3_K *x = vw;
    const e0_block_q8_K *y = va;
    float sumf = 0;
    for (int64_t i = 0; i < n / QK_K; i++) {
        int8_t scales[16];
        k_unpack_q3_scales(x[i].scales, scales);
        const uint8_t *q3 = x[i].qs, *hm = x[i].hmask;
        const int8_t *q8 = y[i].qs;
        int isum = 0, is = 0;
        uint8_t m = 1;
        for (int c = 0; c < QK_K / 128; c++) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int half = 0; half < 2; half++) {
                    int isuml = 0;
                    for (int l = 16 * half; l < 16 * half + 16; l++)
                        isuml += q8[l] * (((q3[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4));
                    isum += scales[is++] * isuml;
                }
                q8 += 32;
                m <<= 1;
            }
            q3 += 32;
        }
        sumf += FP16(x[i].d) * y[i].d * isum;
    }
    *s = sumf;
}

/* q4_K and q5_K: 8 sub-blocks of 32 with a 6-bit scale and min; chunk c of 64 values holds
 * sub-block 2c in the low nibbles and 2c+1 in the high nibbles of qs[32c..32c+31]; q5_K adds a
 * 5th bit from qh (bit 2c / 2c+1). The min term uses the activation's bsums. */
static float q45_K_block_dot(const uint8_t *packed_scales, uint16_t d16, uint16_t dmin16, const uint8_t *qs,
                             const uint8_t *qh, const e0_block_q8_K *y) {
    uint32_t smw[4];
    k_unpack_scales_mins(packed_scales, smw);
    const uint8_t *sc = (const uint8_t *)smw, *mn = sc + 8;
    const int8_t *q8 = y->qs;
    int isum = 0, summs = 0;
    for (int j = 0; j < 8; j++) summs += mn[j] * (y->bsums[2 * j] + y->bsums[2 * j + 1]);
    for (int c = 0; c < 4; c++) {
        int lo = 0, hi = 0;
        if (qh) {
            for (int l = 0; l < 32; l++) {
                lo += q8[l] * ((qs[l] & 0xF) | (((qh[l] >> (2 * c)) & 1) << 4));
                hi += q8[l + 32] * ((qs[l] >> 4) | (((qh[l] >> (2 * c + 1)) & 1) << 4));
            }
        } else {
            for (int l = 0; l < 32; l++) {
                lo += q8[l] * (qs[l] & 0xF);
                hi += q8[l + 32] * (qs[l] >> 4);
            }
        }
        isum += sc[2 * c] * lo + sc[2 * c + 1] * hi;
        qs += 32;
        q8 += 64;
    }
    const float d = y->d * FP16(d16), dmin = y->d * FP16(dmin16);
    return d * isum - dmin * summs;
}

void e0_vec_dot_q4_K_ref(int64_t n, float *s, const void *vw, const void *va) {
    const e0_block_q4_K *x = vw;
    const e0_block_q8_K *y = va;
    float sumf = 0;
    for (int64_t i = 0; i < n / QK_K; i++) sumf += q45_K_block_dot(x[i].scales, x[i].d, x[i].dmin, x[i].qs, NULL, &y[i]);
    *s = sumf;
}

void e0_vec_dot_q5_K_ref(int64_t n, float *s, const void *vw, const void *va) {
    const e0_block_q5_K *x = vw;
    const e0_block_q8_K *y = va;
    float sumf = 0;
    for (int64_t i = 0; i < n / QK_K; i++) sumf += q45_K_block_dot(x[i].scales, x[i].d, x[i].dmin, x[i].qs, x[i].qh, &y[i]);
    *s = sumf;
}

void e0_vec_dot_q6_K_ref(int64_t n, float *s, const void *vw, const void *va) {
    const e0_block_q6_K *x = vw;
    const e0_block_q8_K *y = va;
    float sumf = 0;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *ql = x[i].ql, *qh = x[i].qh;
        const int8_t *sc = x[i].scales, *q8 = y[i].qs;
        int isum = 0;
        for (int c = 0; c < QK_K; c += 128) {
            for (int half = 0; half < 2; half++) { /* l in 0..15 or 16..31: scale index is + half */
                int s1 = 0, s2 = 0, s3 = 0, s4 = 0;
                for (int l = 16 * half; l < 16 * half + 16; l++) {
                    s1 += q8[l + 0] * (((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32);
                    s2 += q8[l + 32] * (((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
                    s3 += q8[l + 64] * (((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
                    s4 += q8[l + 96] * (((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
                }
                isum += sc[half + 0] * s1 + sc[half + 2] * s2 + sc[half + 4] * s3 + sc[half + 6] * s4;
            }
            ql += 64;
            qh += 32;
            sc += 8;
            q8 += 128;
        }
        sumf += FP16(x[i].d) * y[i].d * isum;
    }
    *s = sumf;
}

void e0_vec_dot_q8_K_ref(int64_t n, float *s, const void *vw, const void *va) {
    const e0_block_q8_K *x = vw, *y = va;
    float sumf = 0;
    for (int64_t i = 0; i < n / QK_K; i++) {
        int isum = 0;
        for (int j = 0; j < QK_K; j++) isum += x[i].qs[j] * y[i].qs[j];
        sumf += x[i].d * y[i].d * isum;
    }
    *s = sumf;
}
