/* quant_kv.c — q4_KV / q6_KV / Q8_KV (layout: quant_kv.h): repacking q4_K and q6_K blocks and
 * back, and the scalar kernels. The dots repeat x86/quant_kv_avx512.c's arithmetic lane by lane
 * (16 run lanes, fmaf, the same reduction tree), so the AVX-512 kernels equal them bit for bit. */
#include "quant/quant_kv.h"

#include <math.h>
#include <string.h>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/quant_k.h"
#include "quant/quant_kx.h"

/* natural order u <-> layout order v of a block's 256 bytes (v[64 * vec + p] = u[kv_natural(vec, p)]) */
static void to_layout(const uint8_t *u, uint8_t *v) {
    for (int k = 0; k < 4; k++)
        for (int p = 0; p < 64; p++) v[64 * k + p] = u[kv_natural(k, p)];
}
static void to_natural(const uint8_t *v, uint8_t *u) {
    for (int k = 0; k < 4; k++)
        for (int p = 0; p < 64; p++) u[kv_natural(k, p)] = v[64 * k + p];
}

/* Dequantization of a repacked row: each block copied, unpacked, then the plain type's. */
static void unpacked_to_float(const void *src, float *dst, int64_t n, size_t bsize, void (*unpack)(void *, int64_t),
                              void (*plain)(const void *, float *, int64_t)) {
    uint8_t b[sizeof(e0_block_q6_K) > sizeof(e0_block_q4_K) ? sizeof(e0_block_q6_K) : sizeof(e0_block_q4_K)];
    for (int64_t i = 0; i < n / QK_K; i++) {
        memcpy(b, (const uint8_t *)src + (size_t)i * bsize, bsize);
        unpack(b, 1);
        plain(b, dst + i * QK_K, QK_K);
    }
}

/* ---- q4_KV ---- */

static void q4_kv_pack(const uint8_t v[QK_K], uint8_t qs[QK_K / 2]) {
    for (int k = 0; k < 2; k++)
        for (int p = 0; p < 64; p++) qs[64 * k + p] = (uint8_t)(v[128 * k + p] | v[128 * k + 64 + p] << 4);
}
static void q4_kv_codes(const uint8_t qs[QK_K / 2], uint8_t v[QK_K]) {
    for (int k = 0; k < 2; k++)
        for (int p = 0; p < 64; p++) {
            v[128 * k + p] = qs[64 * k + p] & 0xF;
            v[128 * k + 64 + p] = qs[64 * k + p] >> 4;
        }
}

void e0_q4_K_to_KV(void *blocks, int64_t n_blocks) {
    e0_block_q4_K *b = blocks;
    for (int64_t i = 0; i < n_blocks; i++) {
        uint8_t u[QK_K], v[QK_K];
        e0_q4_K_codes(b[i].qs, u);
        to_layout(u, v);
        q4_kv_pack(v, b[i].qs);
    }
}

void e0_q4_KV_unpack(void *blocks, int64_t n_blocks) {
    e0_block_q4_K *b = blocks;
    for (int64_t i = 0; i < n_blocks; i++) {
        uint8_t u[QK_K], v[QK_K];
        q4_kv_codes(b[i].qs, v);
        to_natural(v, u);
        e0_q4_K_pack(u, b[i].qs);
    }
}

void e0_q4_KV_to_float(const void *src, float *dst, int64_t n) {
    unpacked_to_float(src, dst, n, sizeof(e0_block_q4_K), e0_q4_KV_unpack, e0_q4_K_to_float);
}

void e0_q4_KV_from_float_ref(const float *x, void *dst, int64_t n) {
    e0_q4_K_from_float_ref(x, dst, n);
    e0_q4_K_to_KV(dst, n / QK_K);
}

/* ---- q6_KV ---- */

void e0_q6_K_to_KV(void *blocks, int64_t n_blocks) {
    e0_block_q6_K *b = blocks;
    for (int64_t i = 0; i < n_blocks; i++) {
        uint8_t u[QK_K], v[QK_K];
        e0_q6_K_codes(&b[i], u);
        to_layout(u, v);
        for (int k = 0; k < 2; k++)
            for (int p = 0; p < 64; p++) b[i].ql[64 * k + p] = (uint8_t)((v[128 * k + p] & 0xF) | (v[128 * k + 64 + p] & 0xF) << 4);
        for (int p = 0; p < 64; p++)
            b[i].qh[p] = (uint8_t)(v[p] >> 4 | (v[64 + p] >> 4) << 2 | (v[128 + p] >> 4) << 4 | (v[192 + p] >> 4) << 6);
    }
}

static void q6_kv_codes(const e0_block_q6_K *b, uint8_t v[QK_K]) {
    for (int k = 0; k < 2; k++)
        for (int p = 0; p < 64; p++) {
            v[128 * k + p] = (uint8_t)((b->ql[64 * k + p] & 0xF) | (b->qh[p] >> (4 * k) & 3) << 4);
            v[128 * k + 64 + p] = (uint8_t)((b->ql[64 * k + p] >> 4) | (b->qh[p] >> (4 * k + 2) & 3) << 4);
        }
}

void e0_q6_KV_unpack(void *blocks, int64_t n_blocks) {
    e0_block_q6_K *b = blocks;
    for (int64_t i = 0; i < n_blocks; i++) {
        uint8_t u[QK_K], v[QK_K];
        q6_kv_codes(&b[i], v);
        to_natural(v, u);
        e0_q6_K_pack(u, &b[i]);
    }
}

void e0_q6_KV_to_float(const void *src, float *dst, int64_t n) {
    unpacked_to_float(src, dst, n, sizeof(e0_block_q6_K), e0_q6_KV_unpack, e0_q6_K_to_float);
}

void e0_q6_KV_from_float_ref(const float *x, void *dst, int64_t n) {
    e0_q6_K_from_float_ref(x, dst, n);
    e0_q6_K_to_KV(dst, n / QK_K);
}

/* ---- Q8_KV ---- */

void e0_q8_KV_permute(void *blocks, int64_t n_blocks) {
    e0_block_q8_K *y = blocks;
    for (int64_t i = 0; i < n_blocks; i++) {
        int8_t qs[QK_K];
        to_layout((const uint8_t *)y[i].qs, (uint8_t *)qs);
        memcpy(y[i].qs, qs, sizeof qs);
    }
}

void e0_q8_KV_from_float_ref(const float *x, void *dst, int64_t n) {
    e0_q8_K_from_float_ref(x, dst, n);
    e0_q8_KV_permute(dst, n / QK_K);
}

void e0_q8_KV_to_float(const void *src, float *dst, int64_t n) {
    for (int64_t i = 0; i < n / QK_K; i++) {
        e0_block_q8_K b = ((const e0_block_q8_K *)src)[i];
        to_natural((const uint8_t *)((const e0_block_q8_K *)src)[i].qs, (uint8_t *)b.qs);
        e0_q8_K_to_float(&b, dst + i * QK_K, QK_K);
    }
}

/* ---- the dots, in the AVX-512 kernels' order ---- */

/* Lane j of the block's integer run sums: sum of code * activation over natural run j (the four
 * vpdpbusd of the kernel add the same products into lane j). */
static void run_sums(const uint8_t v[QK_K], const int8_t *q8, int32_t sumi[16]) {
    for (int j = 0; j < 16; j++) {
        int32_t s = 0;
        for (int k = 0; k < 4; k++)
            for (int b = 0; b < 4; b++) s += v[64 * k + 4 * j + b] * q8[64 * k + 4 * j + b];
        sumi[j] = s;
    }
}

/* The kernels' final sum of 16 lanes: halves, quarters, pairs, then lanes 0 + 1. */
static float reduce16(const float a[16]) {
    float r8[8], r4[4], r2[2];
    for (int j = 0; j < 8; j++) r8[j] = a[j] + a[j + 8];
    for (int j = 0; j < 4; j++) r4[j] = r8[j] + r8[j + 4];
    for (int j = 0; j < 2; j++) r2[j] = r4[j] + r4[j + 2];
    return r2[0] + r2[1];
}

/* Per block: acc += sumi * ((sc * xd) * yd), then acc += (bsum * yd) * (m * -xdmin). */
void e0_vec_dot_q4_KV_ref(int64_t n, float *s, const void *w, const void *a) {
    const e0_block_q4_K *x = w;
    const e0_block_q8_K *y = a;
    float acc[16] = {0};
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float xd = e0_fp16_to_fp32(x[i].d), nxdmin = -e0_fp16_to_fp32(x[i].dmin), yd = y[i].d;
        uint8_t v[QK_K], sc[8], m[8];
        int32_t sumi[16];
        for (int j = 0; j < 8; j++) k_scale_min(j, x[i].scales, &sc[j], &m[j]);
        q4_kv_codes(x[i].qs, v);
        run_sums(v, y[i].qs, sumi);
        for (int j = 0; j < 16; j++) {
            acc[j] = fmaf((float)sumi[j], ((float)sc[j / 2] * xd) * yd, acc[j]);
            acc[j] = fmaf((float)y[i].bsums[j] * yd, (float)m[j / 2] * nxdmin, acc[j]);
        }
    }
    *s = reduce16(acc);
}

/* Per block: acc += (sumi - 32 bsum) * ((sc * xd) * yd) (codes are q + 32). */
void e0_vec_dot_q6_KV_ref(int64_t n, float *s, const void *w, const void *a) {
    const e0_block_q6_K *x = w;
    const e0_block_q8_K *y = a;
    float acc[16] = {0};
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float xd = e0_fp16_to_fp32(x[i].d), yd = y[i].d;
        uint8_t v[QK_K];
        int32_t sumi[16];
        q6_kv_codes(&x[i], v);
        run_sums(v, y[i].qs, sumi);
        for (int j = 0; j < 16; j++)
            acc[j] = fmaf((float)(sumi[j] - 32 * y[i].bsums[j]), ((float)x[i].scales[j] * xd) * yd, acc[j]);
    }
    *s = reduce16(acc);
}
