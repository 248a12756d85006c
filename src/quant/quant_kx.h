/* quant_kx.h — q4_K and q6_K repacked at load ("q4_KX", "q6_KX": engine-internal types, never in
 * a file) and their activation types Q8_KX and Q8_KP: the layouts, the repacking, and the kernels
 * quant.c's table points at (scalar here in quant_kx.c, AVX2 in x86/quant_kx_avx2.c).
 *
 * Why: on AVX2 the integer multiplier is the limit of the q4_K dot (a Zen 1 core runs one 256-bit
 * vpmaddubsw or vpmaddwd every two cycles). The plain layout needs one vpmaddwd (the sub-block
 * scale) per vpmaddubsw, because the 32 bytes of a vector hold one sub-block. In the repacked
 * layout the eight code vectors of a block interleave all eight sub-blocks by 16-bit words, so
 * the eight vpmaddubsw outputs add up in int16 (16 products of one sub-block per word, at most
 * 16 * 15 * 128 = 30720: no overflow) before one vpmaddwd applies the eight scales: 9 instead of
 * 16 multiplies per 256 values in the one-token dot, 9.5 instead of 12.5 per (row, token) in the
 * GEMM. The activations must be permuted the same way: Q8_KX is Q8_K (same d, same bsums, which
 * are sums of natural runs of 16) with qs reordered.
 *
 * The permutation: code vector v (0..7) byte p (0..31) holds natural value 32s + 4v + 2(p/16) +
 * p%2 with s = (p/2)%8, i.e. 16-bit word w of every vector belongs to sub-block w%8 (words w and
 * w+8: the low and high lane). kx_natural(c, r, p) takes v = 4c + r (c: the block half that
 * vector v is stored in). A q4_KX block keeps q4_K's d, dmin and scales; its qs byte 32(v/2) + p
 * holds vector v's code in the low (v even) or high (v odd) nibble. Q8_KX's qs[32v + p] = Q8_K's
 * qs[natural value of (v, p)].
 *
 * Results: the integer sums are exact, but they land in other float lanes than the plain q4_K
 * kernels', so the float accumulation (and the last bits) differ from a non-repacked run; within
 * a process every q4_KX kernel gives the same bits (GEMM = dot, tests/test_gemm.c).
 *
 * q6_KX: q6_K's 6-bit codes cannot add four vpmaddubsw outputs in int16 (8 * 63 * 127 > 32767),
 * but two can (4 products per word): the layout of gemm_avx2.c's sub-block pairing, stored. Per
 * 128-value half c, the four code vectors that q6_codes() unpacks are the pairs A, B of natural
 * vectors (2m, 2m+1), m = 0, 1: in each 32-bit lane, A holds the low words and B the high words of
 * the two; kp_natural(c, g, p) is the natural value of vector g, byte p. The block's d and scales
 * stay; Q8_KP permutes Q8_K's qs the same way. Two vpmaddubsw, one int16 add and one vpmaddwd
 * per 64 values (12 instead of 16 multiplies per block in the one-token dot, and no pairing work
 * per row and token in the GEMM); the int32 lane sums are exactly those of the plain q6_K AVX2
 * dot, so q6_KX gives q6_K's bits (tests/test_quant_kx.c checks it). */
#ifndef E0_QUANT_KX_H
#define E0_QUANT_KX_H

#include <stddef.h>
#include <stdint.h>

/* Natural index (0..255) of code vector v = 4c + r, byte p (see above). */
static inline int kx_natural(int c, int r, int p) { return 32 * ((p / 2) % 8) + 4 * (4 * c + r) + 2 * (p / 16) + p % 2; }

/* Natural index (0..255) of q6_KX code vector g (0..3), byte p of half c. */
static inline int kp_natural(int c, int g, int p) {
    const int m = g / 2, b = g % 2, k = p / 4, w = p % 4;
    return 128 * c + 32 * (2 * m + w / 2) + 4 * k + 2 * b + w % 2;
}

/* A block's 256 codes in natural order (q4_K: 0..15, q6_K: 0..63, value + 32), and back. */
void e0_q4_K_codes(const uint8_t qs[128], uint8_t u[256]);
void e0_q4_K_pack(const uint8_t u[256], uint8_t qs[128]);
void e0_q6_K_codes(const void *q6_K_block, uint8_t u[256]);
void e0_q6_K_pack(const uint8_t u[256], void *q6_K_block);

/* n q4_K blocks in place -> q4_KX, and back. */
void e0_q4_K_repack(void *blocks, int64_t n_blocks);
void e0_q4_KX_unpack(void *blocks, int64_t n_blocks);

void e0_q4_KX_to_float(const void *src, float *dst, int64_t n);
void e0_q4_KX_from_float_ref(const float *x, void *dst, int64_t n);
void e0_vec_dot_q4_KX_ref(int64_t n, float *s, const void *w, const void *a);
void e0_q8_KX_to_float(const void *src, float *dst, int64_t n);
/* Q8_K blocks in place -> Q8_KX / Q8_KP (the AVX2 quantizers: Q8_K's, then this) */
void e0_q8_KX_permute(void *blocks, int64_t n_blocks);
void e0_q8_KP_permute(void *blocks, int64_t n_blocks);
void e0_q8_KX_from_float_ref(const float *x, void *dst, int64_t n);

void e0_q6_K_repack(void *blocks, int64_t n_blocks);
void e0_q6_KX_unpack(void *blocks, int64_t n_blocks);
void e0_q6_KX_to_float(const void *src, float *dst, int64_t n);
void e0_q6_KX_from_float_ref(const float *x, void *dst, int64_t n);
void e0_vec_dot_q6_KX_ref(int64_t n, float *s, const void *w, const void *a);
void e0_q8_KP_to_float(const void *src, float *dst, int64_t n);
void e0_q8_KP_from_float_ref(const float *x, void *dst, int64_t n);

/* x86/quant_kx_avx2.c */
void e0_q8_KX_from_float_avx2(const float *x, void *dst, int64_t n);
void e0_vec_dot_q4_KX_avx2(int64_t n, float *s, const void *w, const void *a);
void e0_gemm_q4_KX_avx2(int64_t n, int nr, const void *w, size_t w_stride, int nt, const void *a, size_t a_stride, float *s,
                        size_t s_stride);
void e0_q8_KP_from_float_avx2(const float *x, void *dst, int64_t n);
/* e0_q4_K_repack / e0_q6_K_repack in registers, the same bytes (what e0_repack runs: AVX2 level only) */
void e0_q4_K_repack_avx2(void *blocks, int64_t n_blocks);
void e0_q6_K_repack_avx2(void *blocks, int64_t n_blocks);
void e0_vec_dot_q6_KX_avx2(int64_t n, float *s, const void *w, const void *a);
void e0_gemm_q6_KX_avx2(int64_t n, int nr, const void *w, size_t w_stride, int nt, const void *a, size_t a_stride, float *s,
                        size_t s_stride);

#endif
