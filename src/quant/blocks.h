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

typedef struct {
    float d;
    int8_t qs[QK_K];
    int16_t bsums[QK_K / 16];
} e0_block_q8_K;

/* The structs must have ggml's sizes (no padding): GGUF files are read as arrays of them. */
_Static_assert(sizeof(e0_block_q2_K) == 2 * 2 + QK_K / 16 + QK_K / 4, "q2_K block size");
_Static_assert(sizeof(e0_block_q3_K) == 2 + QK_K / 4 + QK_K / 8 + 12, "q3_K block size");
_Static_assert(sizeof(e0_block_q4_K) == 2 * 2 + 12 + QK_K / 2, "q4_K block size");
_Static_assert(sizeof(e0_block_q5_K) == 2 * 2 + 12 + QK_K / 8 + QK_K / 2, "q5_K block size");
_Static_assert(sizeof(e0_block_q6_K) == 2 + QK_K / 16 + 3 * QK_K / 4, "q6_K block size");
_Static_assert(sizeof(e0_block_q8_K) == 4 + QK_K + QK_K / 16 * 2, "q8_K block size");

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
