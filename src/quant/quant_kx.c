/* quant_kx.c — q4_KX / Q8_KX (layout: quant_kx.h): repacking q4_K blocks and back, and the
 * scalar kernels, which undo the permutation and run q4_K's / Q8_K's own reference code (so the
 * reference is q4_K's by construction). */
#include "quant/quant_kx.h"

#include <stdbool.h>
#include <string.h>

#include "quant/blocks.h"
#include "quant/quant_k.h"

/* The 256 codes of a q4_K block in natural order, and back (also quant_kv.c's). */
void e0_q4_K_codes(const uint8_t qs[QK_K / 2], uint8_t u[QK_K]) {
    for (int j = 0; j < 4; j++)
        for (int l = 0; l < 32; l++) {
            u[64 * j + l] = qs[32 * j + l] & 0xF;
            u[64 * j + 32 + l] = qs[32 * j + l] >> 4;
        }
}
void e0_q4_K_pack(const uint8_t u[QK_K], uint8_t qs[QK_K / 2]) {
    for (int j = 0; j < 4; j++)
        for (int l = 0; l < 32; l++) qs[32 * j + l] = (uint8_t)(u[64 * j + l] | u[64 * j + 32 + l] << 4);
}

void e0_q4_K_repack(void *blocks, int64_t n_blocks) {
    e0_block_q4_K *b = blocks;
    for (int64_t i = 0; i < n_blocks; i++) {
        uint8_t u[QK_K], qs[QK_K / 2];
        e0_q4_K_codes(b[i].qs, u);
        for (int c = 0; c < 2; c++)
            for (int r = 0; r < 4; r += 2)
                for (int p = 0; p < 32; p++)
                    qs[64 * c + 32 * (r / 2) + p] = (uint8_t)(u[kx_natural(c, r, p)] | u[kx_natural(c, r + 1, p)] << 4);
        memcpy(b[i].qs, qs, sizeof qs);
    }
}

void e0_q4_KX_unpack(void *blocks, int64_t n_blocks) {
    e0_block_q4_K *b = blocks;
    for (int64_t i = 0; i < n_blocks; i++) {
        uint8_t u[QK_K];
        for (int c = 0; c < 2; c++)
            for (int r = 0; r < 4; r += 2)
                for (int p = 0; p < 32; p++) {
                    const uint8_t v = b[i].qs[64 * c + 32 * (r / 2) + p];
                    u[kx_natural(c, r, p)] = v & 0xF;
                    u[kx_natural(c, r + 1, p)] = v >> 4;
                }
        e0_q4_K_pack(u, b[i].qs);
    }
}

void e0_q4_KX_to_float(const void *src, float *dst, int64_t n) {
    const e0_block_q4_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        e0_block_q4_K b = x[i];
        e0_q4_KX_unpack(&b, 1);
        e0_q4_K_to_float(&b, dst + i * QK_K, QK_K);
    }
}

void e0_q4_KX_from_float_ref(const float *x, void *dst, int64_t n) {
    e0_q4_K_from_float_ref(x, dst, n);
    e0_q4_K_repack(dst, n / QK_K);
}


/* Q8_KX / Q8_KP <-> Q8_K: qs permuted per 128-value half by `natural` (kx_natural or kp_natural),
 * d and bsums as they are. */
static void q8_permute(e0_block_q8_K *y, int64_t n_blocks, int (*natural)(int, int, int), bool inverse) {
    for (int64_t i = 0; i < n_blocks; i++) {
        int8_t qs[QK_K];
        for (int c = 0; c < 2; c++)
            for (int r = 0; r < 4; r++)
                for (int p = 0; p < 32; p++) {
                    const int at = 128 * c + 32 * r + p, nat = natural(c, r, p);
                    if (inverse) qs[nat] = y[i].qs[at];
                    else qs[at] = y[i].qs[nat];
                }
        memcpy(y[i].qs, qs, sizeof qs);
    }
}
void e0_q8_KX_permute(void *blocks, int64_t n_blocks) { q8_permute(blocks, n_blocks, kx_natural, false); }
void e0_q8_KP_permute(void *blocks, int64_t n_blocks) { q8_permute(blocks, n_blocks, kp_natural, false); }
#define q8_KX_unpermute(y) q8_permute((y), 1, kx_natural, true)
#define q8_KP_unpermute(y) q8_permute((y), 1, kp_natural, true)

void e0_q8_KX_from_float_ref(const float *x, void *dst, int64_t n) {
    e0_q8_K_from_float_ref(x, dst, n);
    e0_q8_KX_permute(dst, n / QK_K);
}

/* Q8_KX / Q8_KP dequantized: each block un-permuted, then Q8_K's. */
static void q8_permuted_to_float(const void *src, float *dst, int64_t n, int (*natural)(int, int, int)) {
    for (int64_t i = 0; i < n / QK_K; i++) {
        e0_block_q8_K b = ((const e0_block_q8_K *)src)[i];
        q8_permute(&b, 1, natural, true);
        e0_q8_K_to_float(&b, dst + i * QK_K, QK_K);
    }
}
void e0_q8_KX_to_float(const void *src, float *dst, int64_t n) { q8_permuted_to_float(src, dst, n, kx_natural); }

/* Block by block through q4_K's reference dot on the un-permuted blocks (the float sum of the
 * blocks is in another order than q4_K's reference over a row: equal up to rounding). */
void e0_vec_dot_q4_KX_ref(int64_t n, float *s, const void *w, const void *a) {
    const e0_block_q4_K *x = w;
    const e0_block_q8_K *y = a;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++) {
        e0_block_q4_K xb = x[i];
        e0_block_q8_K yb = y[i];
        e0_q4_KX_unpack(&xb, 1);
        q8_KX_unpermute(&yb);
        float part;
        e0_vec_dot_q4_K_ref(QK_K, &part, &xb, &yb);
        sum += part;
    }
    *s = sum;
}

/* ---- q6_KX ---- */

/* The 256 codes (0..63) of a q6_K block in natural order, and back (layout: blocks.h). */
void e0_q6_K_codes(const void *block, uint8_t u[QK_K]) {
    const e0_block_q6_K *b = block;
    for (int c = 0; c < 2; c++)
        for (int l = 0; l < 32; l++) {
            const uint8_t l0 = b->ql[64 * c + l], l1 = b->ql[64 * c + 32 + l], h = b->qh[32 * c + l];
            u[128 * c + l] = (uint8_t)((l0 & 0xF) | (h & 3) << 4);
            u[128 * c + 32 + l] = (uint8_t)((l1 & 0xF) | (h >> 2 & 3) << 4);
            u[128 * c + 64 + l] = (uint8_t)((l0 >> 4) | (h >> 4 & 3) << 4);
            u[128 * c + 96 + l] = (uint8_t)((l1 >> 4) | (h >> 6 & 3) << 4);
        }
}
void e0_q6_K_pack(const uint8_t u[QK_K], void *block) {
    e0_block_q6_K *b = block;
    for (int c = 0; c < 2; c++)
        for (int l = 0; l < 32; l++) {
            const uint8_t *v = u + 128 * c + l;
            b->ql[64 * c + l] = (uint8_t)((v[0] & 0xF) | (v[64] & 0xF) << 4);
            b->ql[64 * c + 32 + l] = (uint8_t)((v[32] & 0xF) | (v[96] & 0xF) << 4);
            b->qh[32 * c + l] = (uint8_t)(v[0] >> 4 | (v[32] >> 4) << 2 | (v[64] >> 4) << 4 | (v[96] >> 4) << 6);
        }
}

/* Position 128c + 32g + p of the packing is what q6_codes() unpacks into vector g, byte p. */
void e0_q6_K_repack(void *blocks, int64_t n_blocks) {
    e0_block_q6_K *b = blocks;
    for (int64_t i = 0; i < n_blocks; i++) {
        uint8_t u[QK_K], v[QK_K];
        e0_q6_K_codes(&b[i], u);
        for (int c = 0; c < 2; c++)
            for (int g = 0; g < 4; g++)
                for (int p = 0; p < 32; p++) v[128 * c + 32 * g + p] = u[kp_natural(c, g, p)];
        e0_q6_K_pack(v, &b[i]);
    }
}

void e0_q6_KX_unpack(void *blocks, int64_t n_blocks) {
    e0_block_q6_K *b = blocks;
    for (int64_t i = 0; i < n_blocks; i++) {
        uint8_t u[QK_K], v[QK_K];
        e0_q6_K_codes(&b[i], v);
        for (int c = 0; c < 2; c++)
            for (int g = 0; g < 4; g++)
                for (int p = 0; p < 32; p++) u[kp_natural(c, g, p)] = v[128 * c + 32 * g + p];
        e0_q6_K_pack(u, &b[i]);
    }
}

void e0_q6_KX_to_float(const void *src, float *dst, int64_t n) {
    const e0_block_q6_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        e0_block_q6_K b = x[i];
        e0_q6_KX_unpack(&b, 1);
        e0_q6_K_to_float(&b, dst + i * QK_K, QK_K);
    }
}

void e0_q6_KX_from_float_ref(const float *x, void *dst, int64_t n) {
    e0_q6_K_from_float_ref(x, dst, n);
    e0_q6_K_repack(dst, n / QK_K);
}


void e0_q8_KP_from_float_ref(const float *x, void *dst, int64_t n) {
    e0_q8_K_from_float_ref(x, dst, n);
    e0_q8_KP_permute(dst, n / QK_K);
}

void e0_q8_KP_to_float(const void *src, float *dst, int64_t n) { q8_permuted_to_float(src, dst, n, kp_natural); }

/* As e0_vec_dot_q4_KX_ref: q6_K's reference dot block by block on the un-permuted blocks. */
void e0_vec_dot_q6_KX_ref(int64_t n, float *s, const void *w, const void *a) {
    const e0_block_q6_K *x = w;
    const e0_block_q8_K *y = a;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++) {
        e0_block_q6_K xb = x[i];
        e0_block_q8_K yb = y[i];
        e0_q6_KX_unpack(&xb, 1);
        q8_KP_unpermute(&yb);
        float part;
        e0_vec_dot_q6_K_ref(QK_K, &part, &xb, &yb);
        sum += part;
    }
    *s = sum;
}
