/* quant_iq2.h — the IQ2 and IQ1 "grid" quant types of ggml (IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S,
 * IQ1_M): their constant grids (quant_iq2_grids.c), the scalar kernels of quant_iq2.c, the
 * AVX2 ones of x86/quant_iq2_avx2.c and the small decoders they share. Block layouts: blocks.h.
 *
 * Bits per weight (bytes per 256-element block): IQ2_XXS 2.0625 (66), IQ2_XS 2.3125 (74),
 * IQ2_S 2.5625 (82), IQ1_S 1.5625 (50), IQ1_M 1.75 (56). All pair with Q8_K activations.
 *
 * The dots compute, per super-block, an exact integer sum and then the same float operations as
 * ggml's scalar reference, so every SIMD version (and the multi-token ones) gives the scalar
 * result bit for bit. */
#ifndef E0_QUANT_IQ2_H
#define E0_QUANT_IQ2_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/kernel.h"

/* ---- the grids (8 bytes = 8 elements per entry, element j in byte j) ---- */
extern const uint64_t e0_iq2xxs_grid[256];  /* magnitudes 8, 25, 43 */
extern const uint64_t e0_iq2xs_grid[512];
extern const uint64_t e0_iq2s_grid[1024];
extern const uint64_t e0_iq1s_grid[2048];   /* int8 -1, 0, +1; shared by IQ1_S and IQ1_M */
/* The signs of a group of 8 from its 7 stored bits s7, as bytes +1 / -1 (0x01 / 0xff; byte j =
 * element j), the parity bit included: the SIMD dots multiply with them (vpsignb). */
extern const uint64_t e0_iq2_sign_pm1[128];

#define E0_IQ1_DELTA 0.125f /* the shift of IQ1_S / IQ1_M groups: value = d * (grid +- 1/8) */

/* Byte offsets inside the blocks (blocks are read at any alignment). */
enum {
    IQ2XXS_SIZE = 66, IQ2XXS_QS = 2,
    IQ2XS_SIZE = 74, IQ2XS_QS = 2, IQ2XS_SC = 66,
    IQ2S_SIZE = 82, IQ2S_QS = 2, IQ2S_SIGNS = 34, IQ2S_QH = 66, IQ2S_SC = 74,
    IQ1S_SIZE = 50, IQ1S_QS = 2, IQ1S_QH = 34,
    IQ1M_SIZE = 56, IQ1M_QS = 0, IQ1M_QH = 32, IQ1M_SC = 48,
};

/* IQ2_XXS / IQ2_XS store 7 sign bits per group of 8; the 8th makes the number of minus signs
 * even. The full sign byte (bit j set: element j negative). */
static inline uint8_t iq2_signs8(unsigned s7) {
    s7 &= 127;
    return (uint8_t)(s7 | (unsigned)(__builtin_parity(s7) << 7));
}

/* IQ1_M: the fp16 super-block scale, spread over the top nibbles of the four scale words. */
static inline uint16_t iq1m_d_bits(const uint8_t *sc) {
    uint16_t w[4];
    memcpy(w, sc, 8);
    return (uint16_t)((w[0] >> 12) | ((w[1] >> 8) & 0x00f0) | ((w[2] >> 4) & 0x0f00) | (w[3] & 0xf000));
}

/* ---- quant_iq2.c: scalar kernels ---- */
void e0_iq2_xxs_to_float(const void *src, float *dst, int64_t n);
void e0_iq2_xs_to_float(const void *src, float *dst, int64_t n);
void e0_iq2_s_to_float(const void *src, float *dst, int64_t n);
void e0_iq1_s_to_float(const void *src, float *dst, int64_t n);
void e0_iq1_m_to_float(const void *src, float *dst, int64_t n);

/* Reference quantizers with importance weights qw (one per element of the row, like ggml's
 * imatrix rows; NULL: the default weighting described in quant_iq2.c). n a multiple of 256. */
void e0_quantize_iq2_xxs(const float *x, void *dst, int64_t n, const float *qw);
void e0_quantize_iq2_xs(const float *x, void *dst, int64_t n, const float *qw);
void e0_quantize_iq2_s(const float *x, void *dst, int64_t n, const float *qw);
void e0_quantize_iq1_s(const float *x, void *dst, int64_t n, const float *qw);
void e0_quantize_iq1_m(const float *x, void *dst, int64_t n, const float *qw);
/* The same with qw = NULL (the type table's from_float_ref). */
void e0_iq2_xxs_from_float_ref(const float *x, void *dst, int64_t n);
void e0_iq2_xs_from_float_ref(const float *x, void *dst, int64_t n);
void e0_iq2_s_from_float_ref(const float *x, void *dst, int64_t n);
void e0_iq1_s_from_float_ref(const float *x, void *dst, int64_t n);
void e0_iq1_m_from_float_ref(const float *x, void *dst, int64_t n);

void e0_vec_dot_iq2_xxs_ref(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_iq2_xs_ref(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_iq2_s_ref(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_iq1_s_ref(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_iq1_m_ref(int64_t n, float *s, const void *w, const void *a);

/* ---- x86/quant_iq2_avx2.c; called only on CPUs with AVX2 ---- */
void e0_vec_dot_iq2_xxs_avx2(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_iq2_xs_avx2(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_iq2_s_avx2(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_iq1_s_avx2(int64_t n, float *s, const void *w, const void *a);
void e0_vec_dot_iq1_m_avx2(int64_t n, float *s, const void *w, const void *a);
/* 4-token versions (see e0_vec_dot_4_fn) */
void e0_vec_dot_4_iq2_xxs_avx2(int64_t n, float *s, size_t s_stride, const void *w, const void *a, size_t a_stride);
void e0_vec_dot_4_iq1_s_avx2(int64_t n, float *s, size_t s_stride, const void *w, const void *a, size_t a_stride);
void e0_vec_dot_4_iq1_m_avx2(int64_t n, float *s, size_t s_stride, const void *w, const void *a, size_t a_stride);

#endif
