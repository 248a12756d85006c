/* blocks.h — the block layouts of the quantized types, bit-compatible with ggml/GGUF: elements
 * per block and bytes per block are defined here and nowhere else (the type table in quant.c,
 * the kernels and synth all use these names).
 *
 * Legacy types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1): 32 elements per block, read through byte
 * offsets and memcpy, never through struct pointers, because rows come from untrusted files at
 * any alignment. In the 4/5-bit types, byte j of qs holds element j in its low nibble and element
 * j+16 in its high nibble; bit j of the little-endian 32-bit qh is the fifth bit of element j.
 *
 * K-quants (QK_K = 256 elements per super-block), as structs. Packing summary (ggml's):
 *  q2_K  scales[j] = sub-block j's 4-bit scale (low nibble) and 4-bit min (high nibble);
 *        value = d*sc*q - dmin*m, q 2-bit.
 *  q3_K  sixteen 6-bit scales (minus 32) packed in 12 bytes; value = d*(sc-32)*(q-4), where q's
 *        low 2 bits are in qs and its bit 2 in hmask.
 *  q4_K  eight 6-bit scales and mins packed in 12 bytes (see k_scale_min in quant_k.h);
 *        value = d*sc*q - dmin*m.
 *  q5_K  like q4_K plus a 5th bit per value in qh.
 *  q6_K  value = d*scales[j]*(q-32), q's low 4 bits in ql and high 2 bits in qh.
 *  q8_K  value = d*qs, bsums[j] = sum of qs[16j..16j+15] (used for the min / offset terms). */
#ifndef E0_BLOCKS_H
#define E0_BLOCKS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- legacy blocks ---- */

#define E0_QK 32 /* elements per legacy block */

/* Bytes per block and offsets of the fields (d and m/s are fp16). */
enum {
    Q4_0_SIZE = 18, Q4_0_QS = 2,                       /* d, qs[16] */
    Q4_1_SIZE = 20, Q4_1_M = 2, Q4_1_QS = 4,           /* d, m, qs[16] */
    Q5_0_SIZE = 22, Q5_0_QH = 2, Q5_0_QS = 6,          /* d, qh[4], qs[16] */
    Q5_1_SIZE = 24, Q5_1_M = 2, Q5_1_QH = 4, Q5_1_QS = 8, /* d, m, qh[4], qs[16] */
    Q8_0_SIZE = 34, Q8_0_QS = 2,                       /* d, qs[32] (int8) */
    Q8_1_SIZE = 36, Q8_1_S = 2, Q8_1_QS = 4,           /* d, s = d * sum(qs), qs[32] */
};

static inline uint16_t e0_rd16(const uint8_t *p) {
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}
static inline uint32_t e0_rd32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
/* A float at any alignment (F32 rows may sit at odd offsets). */
static inline float e0_rdf32(const void *p) {
    float v;
    memcpy(&v, p, 4);
    return v;
}
static inline void e0_wr16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }

/* ---- K-quant super-blocks ---- */

#define QK_K 256 /* elements per K-quant super-block */

typedef struct {
    uint8_t scales[QK_K / 16];
    uint8_t qs[QK_K / 4];
    uint16_t d, dmin;
} e0_block_q2_K;

typedef struct {
    uint8_t hmask[QK_K / 8];
    uint8_t qs[QK_K / 4];
    uint8_t scales[12];
    uint16_t d;
} e0_block_q3_K;

typedef struct {
    uint16_t d, dmin;
    uint8_t scales[12];
    uint8_t qs[QK_K / 2];
} e0_block_q4_K;

typedef struct {
    uint16_t d, dmin;
    uint8_t scales[12];
    uint8_t qh[QK_K / 8];
    uint8_t qs[QK_K / 2];
} e0_block_q5_K;

typedef struct {
    uint8_t ql[QK_K / 2];
    uint8_t qh[QK_K / 4];
    int8_t scales[QK_K / 16];
    uint16_t d;
} e0_block_q6_K;

/* Q8_K is engine-internal (the activations of the K-quant and IQ kernels; never read from a file,
 * weight_ok = 0), so its layout is ours: qs first and the block padded to 320 bytes (5 x 64), so
 * that in rows of 64-byte aligned buffers every 32- or 64-byte load of qs is aligned. ggml's
 * block_q8_K (d, qs, bsums: 292 bytes) put qs at 4 bytes past a block start: every load was
 * misaligned, and those crossing a cache line cost two; an AVX2 q4_KX GEMM step (8 vpmaddubsw on
 * activations in L1) took 8.6-11 cycles misaligned against 6 aligned on Zen 4 (docs/perf.md,
 * session 13). The quantizers zero the padding, so blocks compare with memcmp. */
typedef struct {
    int8_t qs[QK_K];
    int16_t bsums[QK_K / 16];
    float d;
    uint8_t pad[28];
} e0_block_q8_K;

/* The structs must have ggml's sizes (no padding): GGUF files are read as arrays of them (all
 * but Q8_K, above). */
_Static_assert(sizeof(e0_block_q2_K) == 2 * 2 + QK_K / 16 + QK_K / 4, "q2_K block size");
_Static_assert(sizeof(e0_block_q3_K) == 2 + QK_K / 4 + QK_K / 8 + 12, "q3_K block size");
_Static_assert(sizeof(e0_block_q4_K) == 2 * 2 + 12 + QK_K / 2, "q4_K block size");
_Static_assert(sizeof(e0_block_q5_K) == 2 * 2 + 12 + QK_K / 8 + QK_K / 2, "q5_K block size");
_Static_assert(sizeof(e0_block_q6_K) == 2 + QK_K / 16 + 3 * QK_K / 4, "q6_K block size");
_Static_assert(sizeof(e0_block_q8_K) == 320 && sizeof(e0_block_q8_K) % 64 == 0, "q8_K block size (ours, not ggml's)");

/* ---- IQ2 / IQ1 super-blocks (256 elements; grids and signs: quant_iq2.h) ----
 * Each group of 8 weights is one entry of a grid of 8-vectors (magnitudes 8/25/43 for IQ2,
 * -1/0/+1 for IQ1); IQ2 adds 8 sign bits per group (IQ2_XXS/XS: 7 stored, the 8th makes the
 * count of minus signs even), IQ1 a shift of +-1/8 per group of 8 (IQ1_M) or 32 (IQ1_S).
 *  iq2_xxs  qs = 8 x (4 bytes: grid index of groups 0..3, 4 bytes: 4 x 7 sign bits + 4-bit scale)
 *  iq2_xs   qs[32] = 9-bit grid index | 7 sign bits << 9; scales[8] = two 4-bit scales
 *  iq2_s    qs[0..31] low 8 bits of the 10-bit index, qs[32..63] 8 sign bits; qh[8]: 2 high bits
 *           per group; scales[8] as iq2_xs
 *  iq1_s    qs[32] low 8 bits of the 11-bit index; qh[8]: 3 high bits per group, 3-bit scale at
 *           bit 12, shift sign at bit 15
 *  iq1_m    qs[32] as iq1_s; qh[16]: per group pair 3+1 bits (index, shift sign) x 2; scales[8]:
 *           four 16-bit words = 4 x 3-bit scales each, their top nibbles = the fp16 d
 * Read through byte offsets (quant_iq2.c), any alignment. */
typedef struct {
    uint16_t d;
    uint16_t qs[QK_K / 8];
} e0_block_iq2_xxs;

typedef struct {
    uint16_t d;
    uint16_t qs[QK_K / 8];
    uint8_t scales[QK_K / 32];
} e0_block_iq2_xs;

typedef struct {
    uint16_t d;
    uint8_t qs[QK_K / 4];
    uint8_t qh[QK_K / 32];
    uint8_t scales[QK_K / 32];
} e0_block_iq2_s;

typedef struct {
    uint16_t d;
    uint8_t qs[QK_K / 8];
    uint16_t qh[QK_K / 32];
} e0_block_iq1_s;

typedef struct {
    uint8_t qs[QK_K / 8];
    uint8_t qh[QK_K / 16];
    uint8_t scales[QK_K / 32];
} e0_block_iq1_m;

_Static_assert(sizeof(e0_block_iq2_xxs) == 2 + QK_K / 4, "iq2_xxs block size");
_Static_assert(sizeof(e0_block_iq2_xs) == 2 + QK_K / 4 + QK_K / 32, "iq2_xs block size");
_Static_assert(sizeof(e0_block_iq2_s) == 2 + QK_K / 4 + QK_K / 16, "iq2_s block size");
_Static_assert(sizeof(e0_block_iq1_s) == 2 + QK_K / 8 + QK_K / 16, "iq1_s block size");
_Static_assert(sizeof(e0_block_iq1_m) == QK_K / 8 + QK_K / 16 + QK_K / 32, "iq1_m block size");

/* ---- non-linear 4-bit, FP4 and 1/2-bit/ternary blocks (quant_iq4.c, quant_tern.c) ----
 * Elements per block, bytes per block and field offsets, all as in ggml-common.h. Small blocks
 * are read through byte offsets (any alignment); the 256-element ones also as structs.
 *  iq4_nl  d (fp16), qs[16]: value = d * kvalues_iq4nl[nibble]; byte j: element j (low nibble)
 *          and j + 16 (high nibble), as in Q4_0.                                  4.5 bpw
 *  iq4_xs  256 elements, eight sub-blocks of 32 with 6-bit scales ls (low 4 bits in scales_l,
 *          nibble j%2 of byte j/2; high 2 bits in scales_h bits 2j..2j+1): value =
 *          d * (ls - 32) * kvalues_iq4nl[nibble]; qs as eight iq4_nl-packed groups. 4.25 bpw
 *  mxfp4   e (E8M0 exponent), qs[16] packed like iq4_nl: value = 2^(e-128) * kvalues_fp4[nibble]
 *          (kvalues_fp4 = twice the E2M1 values, hence the half scale).          4.25 bpw
 *  nvfp4   64 elements: d[4] UE4M3 scales (one per 16), qs[32]; sub-block s uses bytes
 *          8s..8s+7: element j (low nibble) and j + 8 (high nibble).              4.5 bpw
 *  tq1_0   256 elements: qs[48] hold 5 trits per byte, qh[4] 4 trits per byte, then d (fp16);
 *          trit n of byte b is ((uint8_t)(b * 3^n) * 3) >> 8, value = (trit - 1) * d.  1.6875 bpw
 *  tq2_0   256 elements: qs[64] 2-bit codes (element 128*(j/32) + 32*l + j%32 in bits 2l of
 *          byte j), then d (fp16); value = (code - 1) * d.                        2.0625 bpw
 *  q1_0    128 elements: d (fp16), qs[16] one bit per element (bit j%8 of byte j/8):
 *          value = bit ? d : -d.                                                  1.125 bpw
 *  q2_0    64 elements: d (fp16), qs[16] 2-bit codes (bits 2*(j%4) of byte j/4):
 *          value = (code - 1) * d.                                                2.25 bpw */

#define E0_QK_IQ4_NL 32
#define E0_QK_MXFP4 32
#define E0_QK_NVFP4 64
#define E0_QK_NVFP4_SUB 16
#define E0_QK_Q1_0 128
#define E0_QK_Q2_0 64

enum {
    IQ4_NL_SIZE = 18, IQ4_NL_QS = 2,       /* d, qs[16] */
    MXFP4_SIZE = 17, MXFP4_QS = 1,         /* e, qs[16] */
    NVFP4_SIZE = 36, NVFP4_QS = 4,         /* d[4] (UE4M3), qs[32] */
    Q1_0_SIZE = 18, Q1_0_QS = 2,           /* d, qs[16] */
    Q2_0_SIZE = 18, Q2_0_QS = 2,           /* d, qs[16] */
};

typedef struct {
    uint16_t d;
    uint16_t scales_h;
    uint8_t scales_l[QK_K / 64];
    uint8_t qs[QK_K / 2];
} e0_block_iq4_xs;

typedef struct {
    uint8_t qs[(QK_K - 4 * QK_K / 64) / 5]; /* 48 bytes, 5 trits each */
    uint8_t qh[QK_K / 64];                 /* 4 bytes, 4 trits each */
    uint16_t d;
} e0_block_tq1_0;

typedef struct {
    uint8_t qs[QK_K / 4];
    uint16_t d;
} e0_block_tq2_0;

_Static_assert(sizeof(e0_block_iq4_xs) == 2 + 2 + QK_K / 64 + QK_K / 2, "iq4_xs block size");
_Static_assert(sizeof(e0_block_tq1_0) == 2 + QK_K / 64 + (QK_K - 4 * QK_K / 64) / 5, "tq1_0 block size");
_Static_assert(sizeof(e0_block_tq2_0) == 2 + QK_K / 4, "tq2_0 block size");

/* ---- i-quants with a 3-bit grid (QK_K = 256 elements per super-block) ----
 *  iq3_xxs  d (fp16), then qs[96]: bytes 0..63 are 64 grid indices (one per group of 4 values,
 *           into e0_iq3_xxs_grid: 256 points of 4 magnitudes in {4,12,...,52,62}); bytes 64..95
 *           are 8 little-endian 32-bit words, one per 32-value sub-block: bits 0..27 = four 7-bit
 *           sign indices (one per 8 values; the 8th sign makes the count of minus signs even),
 *           bits 28..31 = the 4-bit sub-block scale ls. value = d*(0.5+ls)*0.5 * grid * sign.
 *  iq3_s    d, qs[64] = low 8 bits of 64 grid indices into e0_iq3_s_grid (512 points of 4
 *           magnitudes in {1,3,...,15}), qh[8] = bit 8 of the indices (sub-block ib: qh[ib] bit g
 *           for its group g), signs[32] = one bit per value, scales[4] = two 4-bit sub-block
 *           scales per byte (low nibble first). value = d*(1+2*sc) * grid * sign. */
typedef struct {
    uint16_t d;
    uint8_t qs[3 * QK_K / 8];
} e0_block_iq3_xxs;

typedef struct {
    uint16_t d;
    uint8_t qs[QK_K / 4];
    uint8_t qh[QK_K / 32];
    uint8_t signs[QK_K / 8];
    uint8_t scales[QK_K / 64];
} e0_block_iq3_s;

/* The kernels read i-quant blocks through these byte offsets (rows may sit at any address). */
enum {
    IQ3_XXS_SIZE = 98, IQ3_XXS_QS = 2, IQ3_XXS_SAS = 2 + QK_K / 4,               /* d, qs[64], 8 x u32 */
    IQ3_S_SIZE = 110, IQ3_S_QS = 2, IQ3_S_QH = 66, IQ3_S_SIGNS = 74, IQ3_S_SCALES = 106, /* d, qs, qh, signs, scales */
};
_Static_assert(sizeof(e0_block_iq3_xxs) == 2 + 3 * QK_K / 8, "iq3_xxs block size");
_Static_assert(sizeof(e0_block_iq3_s) == 2 + 13 * QK_K / 32 + QK_K / 64, "iq3_s block size");
_Static_assert(sizeof(e0_block_iq3_xxs) == IQ3_XXS_SIZE && sizeof(e0_block_iq3_s) == IQ3_S_SIZE &&
                   offsetof(e0_block_iq3_s, qh) == IQ3_S_QH && offsetof(e0_block_iq3_s, signs) == IQ3_S_SIGNS &&
                   offsetof(e0_block_iq3_s, scales) == IQ3_S_SCALES,
               "i-quant offsets");

#endif
