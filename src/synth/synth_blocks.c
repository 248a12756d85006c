/* synth_blocks.c — what synth knows per tensor type (synth_types: file type, fallback, block
 * generator), and quantized synth weights drawn directly as blocks (the default path of
 * `synth`): random codes, random sub-block scales and mins, and an fp16 block scale chosen so
 * that the dequantized weights have mean ~0 and the requested standard deviation. This costs a
 * few PRNG words per block (0.2-0.4 ns per weight for K-quants, ~1 ns for the 32-element
 * types) where float generation + the reference K-quant quantizer costs ~200 ns per weight,
 * which made a 30 B-parameter model take hours.
 *
 * Every block is a function of (tensor key, block index) only: word k of block b is
 * splitmix64 of counter b * WORDS_PER_BLOCK + k, so the bytes do not depend on how the tensor
 * is cut into jobs or on the thread count.
 *
 * Per type, with q a uniform random code, d = block scale * f (f uniform in [0.75, 1.25]):
 *  q4_0 q5_0 q8_0  w = d*(q - z), z the type's zero point; d's sign is random, which cancels
 *                  the -0.5 mean of the (asymmetric) centered code.
 *  q4_1 q5_1       w = d*q + m, m = -d*(2^bits - 1)/2 (the centered code).
 *  q2_K q4_K q5_K  w = d*sc*q - dmin*m, dmin = d*(2^bits - 1)/2 and m = sc + j (j in -1..1,
 *                  mean 0): each sub-block is centered up to the small random offset j.
 *  q3_K q6_K       w = d*s*(q - z), s a signed sub-block scale with random sign.
 *  iq3_xxs iq3_s   w = d*f(ls)*g*sign: random grid points g, random signs, sub-block scales ls
 *                  in 8..15 (f: the type's scale rule); the type's per_d2 gives E[w^2]/E[d^2].
 * The fp16 block scale comes from the target variance divided by the expected squares of the
 * other factors (computed below from the same discrete distributions the generator uses). */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "quant/quant.h"
#include "quant/quant_iq2.h"
#include "quant/quant_iq4.h"
#include "quant/quant_iq3.h"
#include "synth/synth_impl.h"

#define WORDS_PER_BLOCK 32 /* counter stride per block; every type uses fewer words */

/* Random words of block b: codes first, then one control byte per sub-block, then one for d. */
static void block_words(uint64_t key, uint64_t b, int n, uint64_t *w) {
    uint64_t c = key + (b * WORDS_PER_BLOCK + 1) * 0x9e3779b97f4a7c15ull;
    for (int k = 0; k < n; k++, c += 0x9e3779b97f4a7c15ull) w[k] = synth_splitmix64(c);
}

/* The block-scale factor f for control byte u: (u + 0.5) / 512 + 0.75, in [0.75, 1.25]. */
static inline float jitter(uint8_t u) { return 0.75f + ((float)u + 0.5f) * (1.0f / 512.0f); }

/* Mean of f^2 over the 256 control-byte values. */
static double mean_jitter_sq(void) {
    double s = 0;
    for (int u = 0; u < 256; u++) s += (double)jitter((uint8_t)u) * jitter((uint8_t)u);
    return s / 256;
}

/* Mean of k^2 for k uniform in lo..hi. */
static double mean_sq(int lo, int hi) {
    double s = 0;
    for (int k = lo; k <= hi; k++) s += (double)k * k;
    return s / (hi - lo + 1);
}

/* E[(q - z)^2] for q uniform in 0..n-1 centered by z = n/2 (legacy signed codes) or (n-1)/2. */
static double code_sq_signed(int n) { return ((double)n * n + 2) / 12; }
static double code_sq_centered(int n) { return ((double)n * n - 1) / 12; }

/* Sub-block scale ranges (kept well inside the bit width so min jitter never overflows). */
enum { Q2K_SC_LO = 7, Q2K_SC_BITS = 3, Q3K_S_LO = 16, Q3K_S_BITS = 4, Q4K_SC_LO = 31, Q4K_SC_BITS = 5,
       Q6K_S_LO = 32, Q6K_S_BITS = 6 };
enum { IQ4XS_S_LO = 16, IQ4XS_S_BITS = 4 }; /* iq4_xs: |ls - 32| in 16..31 */

/* The min jitter j of control byte c (bits 6-7): -1, 0, 0, +1 (mean 0, E[j^2] = 1/2). */
static inline int min_jitter(uint8_t c) {
    static const int8_t j[4] = {-1, 0, 0, 1};
    return j[c >> 6];
}

static uint16_t fp16_nonzero(float v) {
    uint16_t h = e0_fp32_to_fp16(v);
    return (h & 0x7fff) ? h : (uint16_t)((h & 0x8000) | 1); /* never a zero scale */
}

/* ---- legacy 32-element blocks: codes, then the control word (byte 0: f, bit 8: sign of d) ---- */

/* code_bytes of codes go to dst + code_off. Symmetric types (m_off 0) get a random sign on d;
 * affine ones (Q4_1, Q5_1) a positive d and the min m = -zp * d at dst + m_off. */
static void gen_legacy(uint64_t key, uint64_t b, float base, uint8_t *dst, int code_off, int code_bytes, int m_off,
                       float zp) {
    uint64_t w[5];
    const int code_words = (code_bytes + 7) / 8;
    block_words(key, b, code_words + 1, w);
    const uint64_t ctl = w[code_words];
    uint16_t d = fp16_nonzero(base * jitter((uint8_t)ctl));
    if (m_off) {
        e0_wr16(dst, d);
        e0_wr16(dst + m_off, e0_fp32_to_fp16(-zp * e0_fp16_to_fp32(d)));
    } else {
        e0_wr16(dst, (uint16_t)(d | ((ctl >> 8 & 1) << 15)));
    }
    memcpy(dst + code_off, w, (size_t)code_bytes);
}

static void gen_q4_0(uint64_t key, uint64_t b, float base, uint8_t *dst) { gen_legacy(key, b, base, dst, Q4_0_QS, 16, 0, 0); }
static void gen_q8_0(uint64_t key, uint64_t b, float base, uint8_t *dst) { gen_legacy(key, b, base, dst, Q8_0_QS, 32, 0, 0); }
static void gen_q4_1(uint64_t key, uint64_t b, float base, uint8_t *dst) {
    gen_legacy(key, b, base, dst, Q4_1_QS, 16, Q4_1_M, 7.5f);
}
/* Q5: qh and qs are adjacent, so the 4 + 16 code bytes are one copy */
static void gen_q5_0(uint64_t key, uint64_t b, float base, uint8_t *dst) { gen_legacy(key, b, base, dst, Q5_0_QH, 20, 0, 0); }
static void gen_q5_1(uint64_t key, uint64_t b, float base, uint8_t *dst) {
    gen_legacy(key, b, base, dst, Q5_1_QH, 20, Q5_1_M, 15.5f);
}

/* ---- K-quants: 256 elements; codes, 8 or 16 control bytes (one per sub-block), d's byte ---- */

/* q4_K / q5_K: pack eight 6-bit scales and mins as k_scale_min reads them. */
static void pack_scales_mins(const uint8_t sc[8], const uint8_t m[8], uint8_t out[12]) {
    for (int j = 0; j < 4; j++) {
        out[j] = (uint8_t)(sc[j] | (sc[j + 4] >> 4) << 6);
        out[j + 4] = (uint8_t)(m[j] | (m[j + 4] >> 4) << 6);
        out[j + 8] = (uint8_t)((sc[j + 4] & 0xF) | (m[j + 4] & 0xF) << 4);
    }
}

/* q3_K: pack sixteen 6-bit stored scales (signed scale + 32) as k_unpack_q3_scales_raw reads them. */
static void pack_q3_scales(const uint8_t s[16], uint8_t out[12]) {
    memset(out, 0, 12);
    for (int j = 0; j < 16; j++) {
        out[j % 8] |= (uint8_t)((s[j] & 0xF) << (j < 8 ? 0 : 4));
        out[8 + j % 4] |= (uint8_t)((s[j] >> 4) << (2 * (j / 4)));
    }
}

static void gen_q2_K(uint64_t key, uint64_t b, float base, uint8_t *dst) {
    uint64_t w[8 + 2 + 1];
    block_words(key, b, 11, w);
    const uint8_t *ctl = (const uint8_t *)(w + 8);
    e0_block_q2_K y;
    memcpy(y.qs, w, sizeof y.qs);
    for (int j = 0; j < 16; j++) {
        int sc = Q2K_SC_LO + (ctl[j] & ((1 << Q2K_SC_BITS) - 1));
        y.scales[j] = (uint8_t)(sc | (sc + min_jitter(ctl[j])) << 4);
    }
    y.d = fp16_nonzero(base * jitter((uint8_t)w[10]));
    y.dmin = e0_fp32_to_fp16(1.5f * e0_fp16_to_fp32(y.d));
    memcpy(dst, &y, sizeof y);
}

static void gen_q3_K(uint64_t key, uint64_t b, float base, uint8_t *dst) {
    uint64_t w[12 + 2 + 1];
    block_words(key, b, 15, w);
    const uint8_t *ctl = (const uint8_t *)(w + 12);
    e0_block_q3_K y;
    memcpy(y.hmask, w, sizeof y.hmask);
    memcpy(y.qs, (const uint8_t *)w + sizeof y.hmask, sizeof y.qs);
    uint8_t s[16];
    for (int j = 0; j < 16; j++) {
        int mag = Q3K_S_LO + (ctl[j] & ((1 << Q3K_S_BITS) - 1));
        s[j] = (uint8_t)(32 + ((ctl[j] & 0x80) ? -mag : mag));
    }
    pack_q3_scales(s, y.scales);
    y.d = fp16_nonzero(base * jitter((uint8_t)w[14]));
    memcpy(dst, &y, sizeof y);
}

/* q4_K (qbits 4) and q5_K (qbits 5): the same scales, mins and centering. */
static void scales_mins_K(const uint8_t *ctl, uint8_t packed[12]) {
    uint8_t sc[8], m[8];
    for (int j = 0; j < 8; j++) {
        sc[j] = (uint8_t)(Q4K_SC_LO + (ctl[j] & ((1 << Q4K_SC_BITS) - 1)));
        m[j] = (uint8_t)(sc[j] + min_jitter(ctl[j]));
    }
    pack_scales_mins(sc, m, packed);
}

static void gen_q4_K(uint64_t key, uint64_t b, float base, uint8_t *dst) {
    uint64_t w[16 + 1 + 1];
    block_words(key, b, 18, w);
    e0_block_q4_K y;
    memcpy(y.qs, w, sizeof y.qs);
    scales_mins_K((const uint8_t *)(w + 16), y.scales);
    y.d = fp16_nonzero(base * jitter((uint8_t)w[17]));
    y.dmin = e0_fp32_to_fp16(7.5f * e0_fp16_to_fp32(y.d));
    memcpy(dst, &y, sizeof y);
}

static void gen_q5_K(uint64_t key, uint64_t b, float base, uint8_t *dst) {
    uint64_t w[20 + 1 + 1];
    block_words(key, b, 22, w);
    e0_block_q5_K y;
    memcpy(y.qh, w, sizeof y.qh);
    memcpy(y.qs, (const uint8_t *)w + sizeof y.qh, sizeof y.qs);
    scales_mins_K((const uint8_t *)(w + 20), y.scales);
    y.d = fp16_nonzero(base * jitter((uint8_t)w[21]));
    y.dmin = e0_fp32_to_fp16(15.5f * e0_fp16_to_fp32(y.d));
    memcpy(dst, &y, sizeof y);
}

static void gen_q6_K(uint64_t key, uint64_t b, float base, uint8_t *dst) {
    uint64_t w[24 + 2 + 1];
    block_words(key, b, 27, w);
    const uint8_t *ctl = (const uint8_t *)(w + 24);
    e0_block_q6_K y;
    memcpy(y.ql, w, sizeof y.ql);
    memcpy(y.qh, (const uint8_t *)w + sizeof y.ql, sizeof y.qh);
    for (int j = 0; j < 16; j++) {
        int mag = Q6K_S_LO + (ctl[j] & ((1 << Q6K_S_BITS) - 1));
        y.scales[j] = (int8_t)((ctl[j] & 0x80) ? -mag : mag);
    }
    y.d = fp16_nonzero(base * jitter((uint8_t)w[26]));
    memcpy(dst, &y, sizeof y);
}

/* ---- IQ2 / IQ1 grid types: random grid indices, signs and shift signs (every index value
 * is a grid entry), random sub-block scales ls in IQ2_LS_LO..15 / IQ1_LS_LO..7, and d set so
 * that E[w^2] = std^2. base_scale sees these rows as "codes = 2, no sub-block scales"
 * (E[(q - z)^2] = 1/2), so d = base * jitter * iq_norm(type), iq_norm = 1 / sqrt(2 E[m^2]) with
 * m the per-element factor w / d of the type (from the grids' mean squares). ---- */

enum { IQ2_LS_LO = 8, IQ1_LS_LO = 4 };

static double grid_mean_sq(const uint64_t *g, int n, int is_signed) {
    double s = 0;
    for (int e = 0; e < n; e++)
        for (int j = 0; j < 8; j++) {
            const double v = is_signed ? (double)(int8_t)(g[e] >> (8 * j)) : (double)(uint8_t)(g[e] >> (8 * j));
            s += v * v;
        }
    return s / (8.0 * n);
}

static pthread_once_t iq_once = PTHREAD_ONCE_INIT;
static float iq_norms[5]; /* IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M */

static void iq_norms_init(void) {
    double ls2 = 0, l1 = 0; /* E[(0.5 + ls)^2 / 16] for IQ2, E[(2 ls + 1)^2] for IQ1 */
    for (int ls = IQ2_LS_LO; ls <= 15; ls++) ls2 += (0.5 + ls) * (0.5 + ls) / 16 / (16 - IQ2_LS_LO);
    for (int ls = IQ1_LS_LO; ls <= 7; ls++) l1 += (2.0 * ls + 1) * (2.0 * ls + 1) / (8 - IQ1_LS_LO);
    const double g1 = grid_mean_sq(e0_iq1s_grid, 2048, 1) + (double)E0_IQ1_DELTA * E0_IQ1_DELTA;
    const double m2[5] = {ls2 * grid_mean_sq(e0_iq2xxs_grid, 256, 0), ls2 * grid_mean_sq(e0_iq2xs_grid, 512, 0),
                          ls2 * grid_mean_sq(e0_iq2s_grid, 1024, 0), l1 * g1, l1 * g1};
    for (int k = 0; k < 5; k++) iq_norms[k] = (float)(1 / sqrt(2 * m2[k]));
}

static float iq_norm(int k) {
    pthread_once(&iq_once, iq_norms_init);
    return iq_norms[k];
}

static void gen_iq2_xxs(uint64_t key, uint64_t b, float base, uint8_t *dst) {
    uint64_t w[8 + 1 + 1];
    block_words(key, b, 10, w);
    const uint8_t *ctl = (const uint8_t *)(w + 8);
    memcpy(dst + IQ2XXS_QS, w, 64);
    for (int ib = 0; ib < 8; ib++) { /* the top nibble of each sub-block's second word: ls */
        uint8_t *hi = dst + IQ2XXS_QS + 8 * ib + 7;
        *hi = (uint8_t)((*hi & 0x0f) | (IQ2_LS_LO + (ctl[ib] & 7)) << 4);
    }
    e0_wr16(dst, fp16_nonzero(base * iq_norm(0) * jitter((uint8_t)w[9])));
}

static void gen_iq2_xs_s(int s_type, uint64_t key, uint64_t b, float base, uint8_t *dst) {
    uint64_t w[9 + 2 + 1];
    block_words(key, b, 12, w);
    const uint8_t *ctl = (const uint8_t *)(w + 9);
    memcpy(dst + 2, w, 72); /* qs (and for IQ2_S signs, qh), scales overwritten below */
    uint8_t *sc = dst + (s_type ? IQ2S_SC : IQ2XS_SC);
    for (int j = 0; j < 8; j++)
        sc[j] = (uint8_t)((IQ2_LS_LO + (ctl[2 * j] & 7)) | (IQ2_LS_LO + (ctl[2 * j + 1] & 7)) << 4);
    e0_wr16(dst, fp16_nonzero(base * iq_norm(s_type ? 2 : 1) * jitter((uint8_t)w[11])));
}
static void gen_iq2_xs(uint64_t key, uint64_t b, float base, uint8_t *dst) { gen_iq2_xs_s(0, key, b, base, dst); }
static void gen_iq2_s(uint64_t key, uint64_t b, float base, uint8_t *dst) { gen_iq2_xs_s(1, key, b, base, dst); }

static void gen_iq1_s(uint64_t key, uint64_t b, float base, uint8_t *dst) {
    uint64_t w[4 + 2 + 1 + 1];
    block_words(key, b, 8, w);
    const uint8_t *ctl = (const uint8_t *)(w + 6);
    memcpy(dst + IQ1S_QS, w, 32);
    uint16_t r[8];
    memcpy(r, w + 4, sizeof r);
    for (int ib = 0; ib < 8; ib++) /* 12 random index bits, ls, random shift sign */
        e0_wr16(dst + IQ1S_QH + 2 * ib, (uint16_t)((r[ib] & 0x8fff) | (IQ1_LS_LO + (ctl[ib] & 3)) << 12));
    e0_wr16(dst, fp16_nonzero(base * iq_norm(3) * jitter((uint8_t)w[7])));
}

static void gen_iq1_m(uint64_t key, uint64_t b, float base, uint8_t *dst) {
    uint64_t w[6 + 2 + 1];
    block_words(key, b, 9, w);
    const uint8_t *ctl = (const uint8_t *)(w + 6);
    memcpy(dst + IQ1M_QS, w, 48); /* qs and qh: indices and shift signs */
    const uint16_t h = fp16_nonzero(base * iq_norm(4) * jitter((uint8_t)w[8]));
    for (int k = 0; k < 4; k++) {
        uint16_t word = (uint16_t)(((h >> (4 * k)) & 0xf) << 12);
        for (int j = 0; j < 4; j++) word |= (uint16_t)((IQ1_LS_LO + (ctl[4 * k + j] & 3)) << (3 * j));
        e0_wr16(dst + IQ1M_SC + 2 * k, word);
    }
}

/* ---- non-linear 4-bit, FP4, ternary and 1/2-bit types: random codes (every byte pattern is a
 * valid block), a random-sign block scale; the code values' mean square is the row's code_sq ---- */

static const int8_t kv_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
static const int8_t kv_fp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

static double mean_sq_table(const int8_t *v, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += (double)v[i] * v[i];
    return s / n;
}

/* codes at dst + code_off (code_bytes), then an fp16 d with random sign at dst + d_off */
static void gen_signed_d(uint64_t key, uint64_t b, float base, uint8_t *dst, int code_off, int code_bytes, int d_off) {
    uint64_t w[9];
    const int code_words = (code_bytes + 7) / 8;
    block_words(key, b, code_words + 1, w);
    const uint64_t ctl = w[code_words];
    e0_wr16(dst + d_off, (uint16_t)(fp16_nonzero(base * jitter((uint8_t)ctl)) | ((ctl >> 8 & 1) << 15)));
    memcpy(dst + code_off, w, (size_t)code_bytes);
}

static void gen_iq4_nl(uint64_t key, uint64_t b, float base, uint8_t *dst) { gen_signed_d(key, b, base, dst, IQ4_NL_QS, 16, 0); }
static void gen_q1_0(uint64_t key, uint64_t b, float base, uint8_t *dst) { gen_signed_d(key, b, base, dst, Q1_0_QS, 16, 0); }
static void gen_q2_0(uint64_t key, uint64_t b, float base, uint8_t *dst) { gen_signed_d(key, b, base, dst, Q2_0_QS, 16, 0); }
static void gen_tq1_0(uint64_t key, uint64_t b, float base, uint8_t *dst) {
    gen_signed_d(key, b, base, dst, 0, (int)offsetof(e0_block_tq1_0, d), (int)offsetof(e0_block_tq1_0, d));
}
static void gen_tq2_0(uint64_t key, uint64_t b, float base, uint8_t *dst) {
    gen_signed_d(key, b, base, dst, 0, (int)offsetof(e0_block_tq2_0, d), (int)offsetof(e0_block_tq2_0, d));
}

/* iq4_xs: sub-block scales ls - 32 = +-(IQ4XS_S_LO .. +15), random sign, as q3_K's; d > 0. */
static void gen_iq4_xs(uint64_t key, uint64_t b, float base, uint8_t *dst) {
    uint64_t w[16 + 1 + 1];
    block_words(key, b, 18, w);
    const uint8_t *ctl = (const uint8_t *)(w + 16);
    e0_block_iq4_xs y;
    memcpy(y.qs, w, sizeof y.qs);
    memset(y.scales_l, 0, sizeof y.scales_l);
    uint16_t sh = 0;
    for (int j = 0; j < 8; j++) {
        const int mag = IQ4XS_S_LO + (ctl[j] & ((1 << IQ4XS_S_BITS) - 1));
        const int ls = 32 + ((ctl[j] & 0x80) ? -mag : mag);
        y.scales_l[j / 2] |= (uint8_t)((ls & 0xF) << (4 * (j % 2)));
        sh |= (uint16_t)((ls >> 4) << (2 * j));
    }
    y.scales_h = sh;
    y.d = fp16_nonzero(base * jitter((uint8_t)w[17]));
    memcpy(dst, &y, sizeof y);
}

/* E[jitter^2] of the 256 control-byte values, in closed form (midpoints of [0.75, 1.25]). */
#define JITTER_SQ (1.0 + (0.25 / 12.0) * (1.0 - 1.0 / 65536.0))

/* mxfp4: the scale 2^(e - 128) (code values doubled) must be a power of two, so each block takes
 * one of the two exponents around the target, with the probability that gives the target mean
 * square (base^2 * E[jitter^2], as for the other types). */
static void gen_mxfp4(uint64_t key, uint64_t b, float base, uint8_t *dst) {
    uint64_t w[3];
    block_words(key, b, 3, w);
    const double t = (double)base * base * JITTER_SQ;
    int a;
    frexp(t, &a); /* t = m * 2^a, m in [0.5, 1): 4^k <= t < 4^(k + 1) for k = floor((a - 1) / 2) */
    const int k = (a - 1) >= 0 ? (a - 1) / 2 : -((2 - a) / 2);
    const double lo = ldexp(1, 2 * k), p = (4 * lo - t) / (3 * lo); /* P(exponent k) */
    const int up = (double)(uint8_t)w[2] + 0.5 >= p * 256;
    int e = 128 + k + up;
    dst[0] = (uint8_t)(e < 2 ? 2 : e > 254 ? 254 : e);
    memcpy(dst + MXFP4_QS, w, 16);
}

/* nvfp4: four UE4M3 sub-block scales (the nearest code to the jittered target; never 0). */
static void gen_nvfp4(uint64_t key, uint64_t b, float base, uint8_t *dst) {
    uint64_t w[5];
    block_words(key, b, 5, w);
    const uint8_t *ctl = (const uint8_t *)(w + 4);
    for (int s = 0; s < 4; s++) {
        const uint8_t c = e0_fp32_to_ue4m3(2.0f * base * jitter(ctl[s])); /* the decoded scale is half the code's value */
        dst[s] = c ? c : 1;
    }
    memcpy(dst + NVFP4_QS, w, 32);
}

/* ---- i-quants on a 3-bit grid: random grid indices, random signs, sub-block scales in
 * IQ3_SC_LO .. IQ3_SC_LO + 7 ---- */

enum { IQ3_SC_LO = 8, IQ3_SC_BITS = 3 };

static void gen_iq3_xxs(uint64_t key, uint64_t b, float base, uint8_t *dst) {
    uint64_t w[8 + 4 + 1 + 1];
    block_words(key, b, 14, w);
    const uint8_t *ctl = (const uint8_t *)(w + 12);
    e0_block_iq3_xxs y;
    memcpy(y.qs, w, QK_K / 4); /* 64 grid indices */
    for (int ib = 0; ib < 8; ib++) {
        uint32_t sas;
        memcpy(&sas, (const uint8_t *)(w + 8) + 4 * ib, 4);
        const uint32_t ls = IQ3_SC_LO + (ctl[ib] & ((1u << IQ3_SC_BITS) - 1));
        sas = (sas & 0x0fffffffu) | ls << 28; /* four random 7-bit sign indices, the scale */
        memcpy(y.qs + QK_K / 4 + 4 * ib, &sas, 4);
    }
    y.d = fp16_nonzero(base * jitter((uint8_t)w[13]));
    memcpy(dst, &y, sizeof y);
}

static void gen_iq3_s(uint64_t key, uint64_t b, float base, uint8_t *dst) {
    uint64_t w[8 + 1 + 4 + 1 + 1];
    block_words(key, b, 15, w);
    const uint8_t *ctl = (const uint8_t *)(w + 13);
    e0_block_iq3_s y;
    memcpy(y.qs, w, sizeof y.qs);
    memcpy(y.qh, w + 8, sizeof y.qh);
    memcpy(y.signs, w + 9, sizeof y.signs);
    for (int j = 0; j < 4; j++) {
        const unsigned m = (1u << IQ3_SC_BITS) - 1;
        y.scales[j] = (uint8_t)((IQ3_SC_LO + (ctl[2 * j] & m)) | (IQ3_SC_LO + (ctl[2 * j + 1] & m)) << 4);
    }
    y.d = fp16_nonzero(base * jitter((uint8_t)w[14]));
    memcpy(dst, &y, sizeof y);
}

/* E[w^2] / E[d^2 f^2] of the generators above: the mean square of the sub-block factor times the
 * mean square grid magnitude (every grid byte equally likely). */
static double grid_sq(const uint32_t *grid, int n) {
    double s = 0;
    for (int k = 0; k < n; k++)
        for (int j = 0; j < 4; j++) {
            const double v = (grid[k] >> (8 * j)) & 0xff;
            s += v * v;
        }
    return s / (4.0 * n);
}
static double per_d2_iq3_xxs(void) {
    double f = 0;
    for (int ls = IQ3_SC_LO; ls < IQ3_SC_LO + (1 << IQ3_SC_BITS); ls++) f += (0.5 + ls) * 0.5 * (0.5 + ls) * 0.5;
    return f / (1 << IQ3_SC_BITS) * grid_sq(e0_iq3_xxs_grid, 256);
}
static double per_d2_iq3_s(void) {
    double f = 0;
    for (int sc = IQ3_SC_LO; sc < IQ3_SC_LO + (1 << IQ3_SC_BITS); sc++) f += (1.0 + 2 * sc) * (1.0 + 2 * sc);
    return f / (1 << IQ3_SC_BITS) * grid_sq(e0_iq3_s_grid, 512);
}

/* ---- the per-type rows ---- */

/* llama_ftype values; the K-quants map to their "_S" (uniform) variant. Fallbacks are llama.cpp's
 * (IQ4_NL, which we do not support, replaced by Q4_0); F16 for the rest. */
static const synth_type types[E0_TYPE_COUNT] = {
    [E0_TYPE_F32] = {.file_type = 0, .fallback = E0_TYPE_F16},
    [E0_TYPE_F16] = {.file_type = 1, .fallback = E0_TYPE_F16},
    [E0_TYPE_BF16] = {.file_type = 32, .fallback = E0_TYPE_F16},
    [E0_TYPE_Q4_0] = {.file_type = 2, .fallback = E0_TYPE_F16, .gen = gen_q4_0, .codes = 16},
    [E0_TYPE_Q4_1] = {.file_type = 3, .fallback = E0_TYPE_F16, .gen = gen_q4_1, .codes = 16, .centered = 1},
    [E0_TYPE_Q5_0] = {.file_type = 8, .fallback = E0_TYPE_F16, .gen = gen_q5_0, .codes = 32},
    [E0_TYPE_Q5_1] = {.file_type = 9, .fallback = E0_TYPE_F16, .gen = gen_q5_1, .codes = 32, .centered = 1},
    [E0_TYPE_Q8_0] = {.file_type = 7, .fallback = E0_TYPE_F16, .gen = gen_q8_0, .codes = 256},
    [E0_TYPE_Q2_K] = {.file_type = 10, .fallback = E0_TYPE_Q4_0, .gen = gen_q2_K, .codes = 4, .centered = 1,
                      .sc_lo = Q2K_SC_LO, .sc_bits = Q2K_SC_BITS},
    [E0_TYPE_Q3_K] = {.file_type = 11, .fallback = E0_TYPE_Q4_0, .gen = gen_q3_K, .codes = 8,
                      .sc_lo = Q3K_S_LO, .sc_bits = Q3K_S_BITS},
    [E0_TYPE_Q4_K] = {.file_type = 14, .fallback = E0_TYPE_Q5_0, .gen = gen_q4_K, .codes = 16, .centered = 1,
                      .sc_lo = Q4K_SC_LO, .sc_bits = Q4K_SC_BITS},
    [E0_TYPE_Q5_K] = {.file_type = 16, .fallback = E0_TYPE_Q5_1, .gen = gen_q5_K, .codes = 32, .centered = 1,
                      .sc_lo = Q4K_SC_LO, .sc_bits = Q4K_SC_BITS},
    [E0_TYPE_Q6_K] = {.file_type = 18, .fallback = E0_TYPE_Q8_0, .gen = gen_q6_K, .codes = 64,
                      .sc_lo = Q6K_S_LO, .sc_bits = Q6K_S_BITS},
    /* IQ types: llama.cpp falls back to IQ4_NL (rows not a multiple of 256) */
    [E0_TYPE_IQ2_XXS] = {.file_type = 19, .fallback = E0_TYPE_IQ4_NL, .gen = gen_iq2_xxs, .codes = 2},
    [E0_TYPE_IQ2_XS] = {.file_type = 20, .fallback = E0_TYPE_IQ4_NL, .gen = gen_iq2_xs, .codes = 2},
    [E0_TYPE_IQ2_S] = {.file_type = 28, .fallback = E0_TYPE_IQ4_NL, .gen = gen_iq2_s, .codes = 2},
    [E0_TYPE_IQ1_S] = {.file_type = 24, .fallback = E0_TYPE_IQ4_NL, .gen = gen_iq1_s, .codes = 2},
    [E0_TYPE_IQ1_M] = {.file_type = 31, .fallback = E0_TYPE_IQ4_NL, .gen = gen_iq1_m, .codes = 2},
    /* llama.cpp's fallbacks: IQ4_XS -> IQ4_NL, TQ1_0 / TQ2_0 / Q2_0 -> Q4_0; the 32-element types
     * go to F16; Q1_0 and NVFP4 have none in llama.cpp (it refuses such a tensor): F16 here. */
    [E0_TYPE_IQ4_NL] = {.file_type = 25, .fallback = E0_TYPE_F16, .gen = gen_iq4_nl, .codes = 16},
    [E0_TYPE_IQ4_XS] = {.file_type = 30, .fallback = E0_TYPE_IQ4_NL, .gen = gen_iq4_xs, .codes = 16,
                        .sc_lo = IQ4XS_S_LO, .sc_bits = IQ4XS_S_BITS},
    [E0_TYPE_MXFP4] = {.file_type = 38, .fallback = E0_TYPE_F16, .gen = gen_mxfp4, .codes = 16},
    [E0_TYPE_NVFP4] = {.file_type = 39, .fallback = E0_TYPE_F16, .gen = gen_nvfp4, .codes = 16},
    [E0_TYPE_TQ1_0] = {.file_type = 36, .fallback = E0_TYPE_Q4_0, .gen = gen_tq1_0, .codes = 3},
    [E0_TYPE_TQ2_0] = {.file_type = 37, .fallback = E0_TYPE_Q4_0, .gen = gen_tq2_0, .codes = 4},
    [E0_TYPE_Q1_0] = {.file_type = 40, .fallback = E0_TYPE_F16, .gen = gen_q1_0, .codes = 2},
    [E0_TYPE_Q2_0] = {.file_type = 41, .fallback = E0_TYPE_Q4_0, .gen = gen_q2_0, .codes = 4},
    /* IQ3 fallback: llama.cpp's IQ4_NL (ggml type 20); Q4_0 until this engine has IQ4_NL */
    [E0_TYPE_IQ3_XXS] = {.file_type = 23, .fallback = E0_TYPE_IQ4_NL, .gen = gen_iq3_xxs, .per_d2 = per_d2_iq3_xxs},
    [E0_TYPE_IQ3_S] = {.file_type = 26, .fallback = E0_TYPE_IQ4_NL, .gen = gen_iq3_s, .per_d2 = per_d2_iq3_s},
};

const synth_type *synth_type_of(uint32_t type) {
    if (type >= E0_TYPE_COUNT || !types[type].fallback) return NULL; /* every row has one, never F32 (0) */
    return &types[type];
}

int synth_blocks_supported(uint32_t type) {
    const synth_type *st = synth_type_of(type);
    return st && st->gen;
}

/* E[value^2] per unit block scale of the types whose codes are not evenly spaced around a zero
 * point (0: the others, computed from codes / centered): code tables, and for the ternary and
 * 2-bit ones the decoded distribution of random bytes (TQ1_0: trits 0/1/2 for 86/85/85 of the
 * 256 byte values (or their multiples by 3^n, a permutation), value trit - 1; TQ2_0 / Q2_0:
 * codes 0..3 uniform, values -1..2; Q1_0: +-1). */
static double code_sq_of(const synth_type *st) {
    if (st == &types[E0_TYPE_IQ4_NL] || st == &types[E0_TYPE_IQ4_XS]) return mean_sq_table(kv_iq4nl, 16);
    if (st == &types[E0_TYPE_MXFP4] || st == &types[E0_TYPE_NVFP4]) return mean_sq_table(kv_fp4, 16);
    if (st == &types[E0_TYPE_TQ1_0]) return 171.0 / 256.0;
    if (st == &types[E0_TYPE_TQ2_0] || st == &types[E0_TYPE_Q2_0]) return 1.5;
    if (st == &types[E0_TYPE_Q1_0]) return 1.0;
    return 0;
}

/* The block scale (before jitter) that gives weights of standard deviation `std`:
 * E[w^2] / E[d^2] = E[f^2] * E[(q - z)^2], times E[sc^2] for the types with sub-block scales,
 * plus (zero point * j)^2 for those with jittered mins (the K affine types). */
static float base_scale(const synth_type *st, double std) {
    double f2 = mean_jitter_sq();
    if (st->per_d2) return (float)(std / sqrt(f2 * st->per_d2()));
    double per_d2 = st->centered ? code_sq_centered(st->codes) : code_sq_signed(st->codes);
    if (code_sq_of(st) > 0) per_d2 = code_sq_of(st); /* non-uniform code values */
    if (st->sc_bits) {
        const double sc2 = mean_sq(st->sc_lo, st->sc_lo + (1 << st->sc_bits) - 1), zp = (st->codes - 1) / 2.0;
        per_d2 = st->centered ? sc2 * per_d2 + zp * zp * 0.5 : sc2 * per_d2;
    }
    return (float)(std / sqrt(f2 * per_d2));
}

int synth_fill_blocks(uint32_t type, uint64_t key, uint64_t first_block, uint64_t n_blocks, double std, void *dst) {
    const e0_type_traits *tr = e0_type_traits_of(type);
    if (!tr || !synth_blocks_supported(type) || !(std > 0) || !isfinite(std)) return -1;
    const synth_type *st = synth_type_of(type);
    const float base = base_scale(st, std);
    uint8_t *out = dst;
    const size_t bs = tr->type_size;
    for (uint64_t i = 0; i < n_blocks; i++, out += bs) st->gen(key, first_block + i, base, out);
    return 0;
}
