/* quant_iq3.c — IQ3_XXS and IQ3_S, scalar: the grids, dequantization, the reference quantizer
 * and the reference dot product against Q8_K activations (layouts in blocks.h).
 *
 * Both types store each group of 4 values as an index into a grid of 4-magnitude points (256
 * points for IQ3_XXS, 512 for IQ3_S, all on the odd lattice 2l+1, l = 0..7), plus signs and a
 * 4-bit scale per 32 values. The quantizer is ggml's algorithm, with the same float operations
 * in the same order so that its bytes match llama-quantize's: per 32 values, a search over 31
 * (IQ3_XXS) or 19 (IQ3_S) trial scales of the weighted least-squares fit of codes l in 0..7;
 * groups whose rounded codes are not a grid point take the best of the point's nearest grid
 * neighbours; then one 4-bit scale per sub-block relative to the super-block's fp16 d. Weights
 * are x^2, or with an importance matrix qw * sqrt(sigma^2 + x^2) (sigma^2 = 2 * mean x^2 of the
 * super-block), as in ggml.
 *
 * The neighbour lists (for each of the 4096 points of {0..7}^4 not on the grid: the grid points
 * at the 2 (IQ3_XXS) or 3 (IQ3_S) smallest distinct squared distances, by distance then index)
 * are built once per process, on the first quantization, under pthread_once. */
#include "quant/quant_iq3.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "quant/fp16.h"

const uint32_t e0_iq3_xxs_grid[256] = {
    0x04040404, 0x04040414, 0x04040424, 0x04040c0c, 0x04040c1c, 0x04040c3e, 0x04041404, 0x04041414,
    0x04041c0c, 0x04042414, 0x04043e1c, 0x04043e2c, 0x040c040c, 0x040c041c, 0x040c0c04, 0x040c0c14,
    0x040c140c, 0x040c142c, 0x040c1c04, 0x040c1c14, 0x040c240c, 0x040c2c24, 0x040c3e04, 0x04140404,
    0x04140414, 0x04140424, 0x04140c0c, 0x04141404, 0x04141414, 0x04141c0c, 0x04141c1c, 0x04141c3e,
    0x04142c0c, 0x04142c3e, 0x04143e2c, 0x041c040c, 0x041c043e, 0x041c0c04, 0x041c0c14, 0x041c142c,
    0x041c3e04, 0x04240c1c, 0x04241c3e, 0x04242424, 0x04242c3e, 0x04243e1c, 0x04243e2c, 0x042c040c,
    0x042c043e, 0x042c1c14, 0x042c2c14, 0x04341c2c, 0x04343424, 0x043e0c04, 0x043e0c24, 0x043e0c34,
    0x043e241c, 0x043e340c, 0x0c04040c, 0x0c04041c, 0x0c040c04, 0x0c040c14, 0x0c04140c, 0x0c04141c,
    0x0c041c04, 0x0c041c14, 0x0c041c24, 0x0c04243e, 0x0c042c04, 0x0c0c0404, 0x0c0c0414, 0x0c0c0c0c,
    0x0c0c1404, 0x0c0c1414, 0x0c14040c, 0x0c14041c, 0x0c140c04, 0x0c140c14, 0x0c14140c, 0x0c141c04,
    0x0c143e14, 0x0c1c0404, 0x0c1c0414, 0x0c1c1404, 0x0c1c1c0c, 0x0c1c2434, 0x0c1c3434, 0x0c24040c,
    0x0c24042c, 0x0c242c04, 0x0c2c1404, 0x0c2c1424, 0x0c2c2434, 0x0c2c3e0c, 0x0c34042c, 0x0c3e1414,
    0x0c3e2404, 0x14040404, 0x14040414, 0x14040c0c, 0x14040c1c, 0x14041404, 0x14041414, 0x14041434,
    0x14041c0c, 0x14042414, 0x140c040c, 0x140c041c, 0x140c042c, 0x140c0c04, 0x140c0c14, 0x140c140c,
    0x140c1c04, 0x140c341c, 0x140c343e, 0x140c3e04, 0x14140404, 0x14140414, 0x14140c0c, 0x14140c3e,
    0x14141404, 0x14141414, 0x14141c3e, 0x14142404, 0x14142c2c, 0x141c040c, 0x141c0c04, 0x141c0c24,
    0x141c3e04, 0x141c3e24, 0x14241c2c, 0x14242c1c, 0x142c041c, 0x142c143e, 0x142c240c, 0x142c3e24,
    0x143e040c, 0x143e041c, 0x143e0c34, 0x143e242c, 0x1c04040c, 0x1c040c04, 0x1c040c14, 0x1c04140c,
    0x1c04141c, 0x1c042c04, 0x1c04342c, 0x1c043e14, 0x1c0c0404, 0x1c0c0414, 0x1c0c1404, 0x1c0c1c0c,
    0x1c0c2424, 0x1c0c2434, 0x1c14040c, 0x1c14041c, 0x1c140c04, 0x1c14142c, 0x1c142c14, 0x1c143e14,
    0x1c1c0c0c, 0x1c1c1c1c, 0x1c241c04, 0x1c24243e, 0x1c243e14, 0x1c2c0404, 0x1c2c0434, 0x1c2c1414,
    0x1c2c2c2c, 0x1c340c24, 0x1c341c34, 0x1c34341c, 0x1c3e1c1c, 0x1c3e3404, 0x24040424, 0x24040c3e,
    0x24041c2c, 0x24041c3e, 0x24042c1c, 0x24042c3e, 0x240c3e24, 0x24141404, 0x24141c3e, 0x24142404,
    0x24143404, 0x24143434, 0x241c043e, 0x241c242c, 0x24240424, 0x24242c0c, 0x24243424, 0x242c142c,
    0x242c241c, 0x242c3e04, 0x243e042c, 0x243e0c04, 0x243e0c14, 0x243e1c04, 0x2c040c14, 0x2c04240c,
    0x2c043e04, 0x2c0c0404, 0x2c0c0434, 0x2c0c1434, 0x2c0c2c2c, 0x2c140c24, 0x2c141c14, 0x2c143e14,
    0x2c1c0414, 0x2c1c2c1c, 0x2c240c04, 0x2c24141c, 0x2c24143e, 0x2c243e14, 0x2c2c0414, 0x2c2c1c0c,
    0x2c342c04, 0x2c3e1424, 0x2c3e2414, 0x34041424, 0x34042424, 0x34042434, 0x34043424, 0x340c140c,
    0x340c340c, 0x34140c3e, 0x34143424, 0x341c1c04, 0x341c1c34, 0x34242424, 0x342c042c, 0x342c2c14,
    0x34341c1c, 0x343e041c, 0x343e140c, 0x3e04041c, 0x3e04042c, 0x3e04043e, 0x3e040c04, 0x3e041c14,
    0x3e042c14, 0x3e0c1434, 0x3e0c2404, 0x3e140c14, 0x3e14242c, 0x3e142c14, 0x3e1c0404, 0x3e1c0c2c,
    0x3e1c1c1c, 0x3e1c3404, 0x3e24140c, 0x3e24240c, 0x3e2c0404, 0x3e2c0414, 0x3e2c1424, 0x3e341c04,
};
const uint32_t e0_iq3_s_grid[512] = {
    0x01010101, 0x01010103, 0x01010105, 0x0101010b, 0x0101010f, 0x01010301, 0x01010303, 0x01010305,
    0x01010309, 0x0101030d, 0x01010501, 0x01010503, 0x0101050b, 0x01010707, 0x01010901, 0x01010905,
    0x0101090b, 0x0101090f, 0x01010b03, 0x01010b07, 0x01010d01, 0x01010d05, 0x01010f03, 0x01010f09,
    0x01010f0f, 0x01030101, 0x01030103, 0x01030105, 0x01030109, 0x01030301, 0x01030303, 0x0103030b,
    0x01030501, 0x01030507, 0x0103050f, 0x01030703, 0x0103070b, 0x01030909, 0x01030d03, 0x01030d0b,
    0x01030f05, 0x01050101, 0x01050103, 0x0105010b, 0x0105010f, 0x01050301, 0x01050307, 0x0105030d,
    0x01050503, 0x0105050b, 0x01050701, 0x01050709, 0x01050905, 0x0105090b, 0x0105090f, 0x01050b03,
    0x01050b07, 0x01050f01, 0x01050f07, 0x01070107, 0x01070303, 0x0107030b, 0x01070501, 0x01070505,
    0x01070703, 0x01070707, 0x0107070d, 0x01070909, 0x01070b01, 0x01070b05, 0x01070d0f, 0x01070f03,
    0x01070f0b, 0x01090101, 0x01090307, 0x0109030f, 0x01090503, 0x01090509, 0x01090705, 0x01090901,
    0x01090907, 0x01090b03, 0x01090f01, 0x010b0105, 0x010b0109, 0x010b0501, 0x010b0505, 0x010b050d,
    0x010b0707, 0x010b0903, 0x010b090b, 0x010b090f, 0x010b0d0d, 0x010b0f07, 0x010d010d, 0x010d0303,
    0x010d0307, 0x010d0703, 0x010d0b05, 0x010d0f03, 0x010f0101, 0x010f0105, 0x010f0109, 0x010f0501,
    0x010f0505, 0x010f050d, 0x010f0707, 0x010f0b01, 0x010f0b09, 0x03010101, 0x03010103, 0x03010105,
    0x03010109, 0x03010301, 0x03010303, 0x03010307, 0x0301030b, 0x0301030f, 0x03010501, 0x03010505,
    0x03010703, 0x03010709, 0x0301070d, 0x03010b09, 0x03010b0d, 0x03010d03, 0x03010f05, 0x03030101,
    0x03030103, 0x03030107, 0x0303010d, 0x03030301, 0x03030309, 0x03030503, 0x03030701, 0x03030707,
    0x03030903, 0x03030b01, 0x03030b05, 0x03030f01, 0x03030f0d, 0x03050101, 0x03050305, 0x0305030b,
    0x0305030f, 0x03050501, 0x03050509, 0x03050705, 0x03050901, 0x03050907, 0x03050b0b, 0x03050d01,
    0x03050f05, 0x03070103, 0x03070109, 0x0307010f, 0x03070301, 0x03070307, 0x03070503, 0x0307050f,
    0x03070701, 0x03070709, 0x03070903, 0x03070d05, 0x03070f01, 0x03090107, 0x0309010b, 0x03090305,
    0x03090309, 0x03090703, 0x03090707, 0x03090905, 0x0309090d, 0x03090b01, 0x03090b09, 0x030b0103,
    0x030b0301, 0x030b0307, 0x030b0503, 0x030b0701, 0x030b0705, 0x030b0b03, 0x030d0501, 0x030d0509,
    0x030d050f, 0x030d0909, 0x030d090d, 0x030f0103, 0x030f0107, 0x030f0301, 0x030f0305, 0x030f0503,
    0x030f070b, 0x030f0903, 0x030f0d05, 0x030f0f01, 0x05010101, 0x05010103, 0x05010107, 0x0501010b,
    0x0501010f, 0x05010301, 0x05010305, 0x05010309, 0x0501030d, 0x05010503, 0x05010507, 0x0501050f,
    0x05010701, 0x05010705, 0x05010903, 0x05010907, 0x0501090b, 0x05010b01, 0x05010b05, 0x05010d0f,
    0x05010f01, 0x05010f07, 0x05010f0b, 0x05030101, 0x05030105, 0x05030301, 0x05030307, 0x0503030f,
    0x05030505, 0x0503050b, 0x05030703, 0x05030709, 0x05030905, 0x05030b03, 0x05050103, 0x05050109,
    0x0505010f, 0x05050503, 0x05050507, 0x05050701, 0x0505070f, 0x05050903, 0x05050b07, 0x05050b0f,
    0x05050f03, 0x05050f09, 0x05070101, 0x05070105, 0x0507010b, 0x05070303, 0x05070505, 0x05070509,
    0x05070703, 0x05070707, 0x05070905, 0x05070b01, 0x05070d0d, 0x05090103, 0x0509010f, 0x05090501,
    0x05090507, 0x05090705, 0x0509070b, 0x05090903, 0x05090f05, 0x05090f0b, 0x050b0109, 0x050b0303,
    0x050b0505, 0x050b070f, 0x050b0901, 0x050b0b07, 0x050b0f01, 0x050d0101, 0x050d0105, 0x050d010f,
    0x050d0503, 0x050d0b0b, 0x050d0d03, 0x050f010b, 0x050f0303, 0x050f050d, 0x050f0701, 0x050f0907,
    0x050f0b01, 0x07010105, 0x07010303, 0x07010307, 0x0701030b, 0x0701030f, 0x07010505, 0x07010703,
    0x07010707, 0x0701070b, 0x07010905, 0x07010909, 0x0701090f, 0x07010b03, 0x07010d07, 0x07010f03,
    0x07030103, 0x07030107, 0x0703010b, 0x07030309, 0x07030503, 0x07030507, 0x07030901, 0x07030d01,
    0x07030f05, 0x07030f0d, 0x07050101, 0x07050305, 0x07050501, 0x07050705, 0x07050709, 0x07050b01,
    0x07070103, 0x07070301, 0x07070309, 0x07070503, 0x07070507, 0x0707050f, 0x07070701, 0x07070903,
    0x07070907, 0x0707090f, 0x07070b0b, 0x07070f07, 0x07090107, 0x07090303, 0x0709030d, 0x07090505,
    0x07090703, 0x07090b05, 0x07090d01, 0x07090d09, 0x070b0103, 0x070b0301, 0x070b0305, 0x070b050b,
    0x070b0705, 0x070b0909, 0x070b0b0d, 0x070b0f07, 0x070d030d, 0x070d0903, 0x070f0103, 0x070f0107,
    0x070f0501, 0x070f0505, 0x070f070b, 0x09010101, 0x09010109, 0x09010305, 0x09010501, 0x09010509,
    0x0901050f, 0x09010705, 0x09010903, 0x09010b01, 0x09010f01, 0x09030105, 0x0903010f, 0x09030303,
    0x09030307, 0x09030505, 0x09030701, 0x0903070b, 0x09030907, 0x09030b03, 0x09030b0b, 0x09050103,
    0x09050107, 0x09050301, 0x0905030b, 0x09050503, 0x09050707, 0x09050901, 0x09050b0f, 0x09050d05,
    0x09050f01, 0x09070109, 0x09070303, 0x09070307, 0x09070501, 0x09070505, 0x09070703, 0x0907070b,
    0x09090101, 0x09090105, 0x09090509, 0x0909070f, 0x09090901, 0x09090f03, 0x090b010b, 0x090b010f,
    0x090b0503, 0x090b0d05, 0x090d0307, 0x090d0709, 0x090d0d01, 0x090f0301, 0x090f030b, 0x090f0701,
    0x090f0907, 0x090f0b03, 0x0b010105, 0x0b010301, 0x0b010309, 0x0b010505, 0x0b010901, 0x0b010909,
    0x0b01090f, 0x0b010b05, 0x0b010d0d, 0x0b010f09, 0x0b030103, 0x0b030107, 0x0b03010b, 0x0b030305,
    0x0b030503, 0x0b030705, 0x0b030f05, 0x0b050101, 0x0b050303, 0x0b050507, 0x0b050701, 0x0b05070d,
    0x0b050b07, 0x0b070105, 0x0b07010f, 0x0b070301, 0x0b07050f, 0x0b070909, 0x0b070b03, 0x0b070d0b,
    0x0b070f07, 0x0b090103, 0x0b090109, 0x0b090501, 0x0b090705, 0x0b09090d, 0x0b0b0305, 0x0b0b050d,
    0x0b0b0b03, 0x0b0b0b07, 0x0b0d0905, 0x0b0f0105, 0x0b0f0109, 0x0b0f0505, 0x0d010303, 0x0d010307,
    0x0d01030b, 0x0d010703, 0x0d010707, 0x0d010d01, 0x0d030101, 0x0d030501, 0x0d03050f, 0x0d030d09,
    0x0d050305, 0x0d050709, 0x0d050905, 0x0d050b0b, 0x0d050d05, 0x0d050f01, 0x0d070101, 0x0d070309,
    0x0d070503, 0x0d070901, 0x0d09050b, 0x0d090907, 0x0d090d05, 0x0d0b0101, 0x0d0b0107, 0x0d0b0709,
    0x0d0b0d01, 0x0d0d010b, 0x0d0d0901, 0x0d0f0303, 0x0d0f0307, 0x0f010101, 0x0f010109, 0x0f01010f,
    0x0f010501, 0x0f010505, 0x0f01070d, 0x0f010901, 0x0f010b09, 0x0f010d05, 0x0f030105, 0x0f030303,
    0x0f030509, 0x0f030907, 0x0f03090b, 0x0f050103, 0x0f050109, 0x0f050301, 0x0f05030d, 0x0f050503,
    0x0f050701, 0x0f050b03, 0x0f070105, 0x0f070705, 0x0f07070b, 0x0f070b07, 0x0f090103, 0x0f09010b,
    0x0f090307, 0x0f090501, 0x0f090b01, 0x0f0b0505, 0x0f0b0905, 0x0f0d0105, 0x0f0d0703, 0x0f0f0101,
};

/* ======================================================================= dequantize */

static inline float sgn_mul(float v, unsigned bit) { return bit ? -v : v; }

void e0_iq3_xxs_to_float(const void *src, float *y, int64_t n) {
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *b = (const uint8_t *)src + (size_t)i * IQ3_XXS_SIZE, *qs = b + IQ3_XXS_QS;
        const float d = e0_fp16_to_fp32(e0_rd16(b));
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const uint32_t aux = e0_rd32(b + IQ3_XXS_SAS + 4 * ib);
            const float db = d * (0.5f + (float)(aux >> 28)) * 0.5f;
            for (int l = 0; l < 4; l++) {
                const uint8_t s = e0_iq3_xxs_signs(aux >> (7 * l));
                const uint32_t g1 = e0_iq3_xxs_grid[qs[8 * ib + 2 * l]], g2 = e0_iq3_xxs_grid[qs[8 * ib + 2 * l + 1]];
                for (int j = 0; j < 4; j++) {
                    y[j] = sgn_mul(db * (float)((g1 >> (8 * j)) & 0xff), s >> j & 1);
                    y[j + 4] = sgn_mul(db * (float)((g2 >> (8 * j)) & 0xff), s >> (j + 4) & 1);
                }
                y += 8;
            }
        }
    }
}

/* Grid index of group g (0..7) of sub-block ib of the iq3_s block at b. */
static inline uint32_t iq3_s_index(const uint8_t *b, int ib, int g) {
    return b[IQ3_S_QS + 8 * ib + g] | ((uint32_t)(b[IQ3_S_QH + ib] >> g & 1) << 8);
}
static inline int iq3_s_scale(const uint8_t *b, int ib) { return (b[IQ3_S_SCALES + ib / 2] >> (4 * (ib % 2))) & 0xf; }

void e0_iq3_s_to_float(const void *src, float *y, int64_t n) {
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *b = (const uint8_t *)src + (size_t)i * IQ3_S_SIZE;
        const float d = e0_fp16_to_fp32(e0_rd16(b));
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const float db = d * (float)(1 + 2 * iq3_s_scale(b, ib));
            for (int g = 0; g < 8; g++) {
                const uint32_t pt = e0_iq3_s_grid[iq3_s_index(b, ib, g)];
                const uint8_t s = b[IQ3_S_SIGNS + 4 * ib + g / 2];
                for (int j = 0; j < 4; j++) y[j] = sgn_mul(db * (float)((pt >> (8 * j)) & 0xff), s >> (4 * (g % 2) + j) & 1);
                y += 4;
            }
        }
    }
}

/* ======================================================================= dot vs Q8_K */

/* Exact integer dot of 4 grid magnitudes (packed in pt) with signs (4 bits) and 4 int8 values. */
static inline int32_t dot4(uint32_t pt, unsigned signs, const int8_t *q8) {
    int32_t s = 0;
    for (int j = 0; j < 4; j++) {
        const int32_t v = (int32_t)((pt >> (8 * j)) & 0xff) * q8[j];
        s += (signs >> j & 1) ? -v : v;
    }
    return s;
}

void e0_vec_dot_iq3_xxs_ref(int64_t n, float *s, const void *vw, const void *va) {
    const e0_block_q8_K *y = va;
    float sumf = 0;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *b = (const uint8_t *)vw + (size_t)i * IQ3_XXS_SIZE, *qs = b + IQ3_XXS_QS;
        const float d = e0_fp16_to_fp32(e0_rd16(b)) * y[i].d;
        const int8_t *q8 = y[i].qs;
        int32_t bsum = 0;
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const uint32_t aux = e0_rd32(b + IQ3_XXS_SAS + 4 * ib);
            int32_t sumi = 0;
            for (int l = 0; l < 4; l++) {
                const uint8_t sg = e0_iq3_xxs_signs(aux >> (7 * l));
                sumi += dot4(e0_iq3_xxs_grid[qs[8 * ib + 2 * l]], sg & 0xf, q8);
                sumi += dot4(e0_iq3_xxs_grid[qs[8 * ib + 2 * l + 1]], sg >> 4, q8 + 4);
                q8 += 8;
            }
            bsum += sumi * (int32_t)(2 * (aux >> 28) + 1);
        }
        sumf += d * (float)bsum;
    }
    *s = 0.25f * sumf;
}

void e0_vec_dot_iq3_s_ref(int64_t n, float *s, const void *vw, const void *va) {
    const e0_block_q8_K *y = va;
    float sumf = 0;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *b = (const uint8_t *)vw + (size_t)i * IQ3_S_SIZE;
        const float d = e0_fp16_to_fp32(e0_rd16(b)) * y[i].d;
        const int8_t *q8 = y[i].qs;
        int32_t bsum = 0;
        for (int ib = 0; ib < QK_K / 32; ib++) {
            int32_t sumi = 0;
            for (int g = 0; g < 8; g++, q8 += 4)
                sumi += dot4(e0_iq3_s_grid[iq3_s_index(b, ib, g)], b[IQ3_S_SIGNS + 4 * ib + g / 2] >> (4 * (g % 2)) & 0xf, q8);
            bsum += sumi * (int32_t)(2 * iq3_s_scale(b, ib) + 1);
        }
        sumf += d * (float)bsum;
    }
    *s = sumf;
}

/* ======================================================================= quantizer */

/* ggml's round-to-nearest (ties to even through the float adder), valid for |v| < 2^22. */
static inline int nearest_int(float v) {
    float t = v + 12582912.f;
    int32_t i;
    memcpy(&i, &t, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

#define KMAP 4096 /* points of {0..7}^4: index = l0 | l1 << 3 | l2 << 6 | l3 << 9 */

/* The search structure of one grid. */
typedef struct iq3_search {
    int n_grid;
    int8_t pt[512][4];   /* grid point k as odd lattice values 2l+1 */
    int16_t map[KMAP];   /* grid index of a point, or -1 */
    uint32_t nb_off[KMAP]; /* points off the grid: their neighbour list at nb + nb_off (count first) */
    uint16_t *nb;
} iq3_search;

static iq3_search search_xxs, search_s;
static pthread_once_t once_xxs = PTHREAD_ONCE_INIT, once_s = PTHREAD_ONCE_INIT;

static int point_index(const int8_t v[4]) {
    int u = 0;
    for (int i = 0; i < 4; i++) u |= ((v[i] - 1) / 2) << (3 * i);
    return u;
}

typedef struct { int d2, k; } dist_k;
static int cmp_dist(const void *a, const void *b) {
    const dist_k *x = a, *y = b;
    if (x->d2 != y->d2) return x->d2 < y->d2 ? -1 : 1;
    return (x->k > y->k) - (x->k < y->k);
}

/* Sorted distances from point u to every grid point, into dist; returns how many of them make
 * the neighbour list (all at the n_want smallest distinct distances). */
static int neighbours_of(const iq3_search *S, int u, int n_want, dist_k *dist) {
    int8_t p[4];
    for (int i = 0; i < 4; i++) p[i] = (int8_t)(2 * ((u >> (3 * i)) & 7) + 1);
    for (int k = 0; k < S->n_grid; k++) {
        int d2 = 0;
        for (int i = 0; i < 4; i++) d2 += (S->pt[k][i] - p[i]) * (S->pt[k][i] - p[i]);
        dist[k] = (dist_k){d2, k};
    }
    qsort(dist, (size_t)S->n_grid, sizeof *dist, cmp_dist);
    int n = 0, have = 1, d2 = dist[0].d2;
    for (; n < S->n_grid; n++) {
        if (dist[n].d2 > d2) {
            if (have == n_want) break;
            d2 = dist[n].d2;
            have++;
        }
    }
    return n;
}

/* grid[k] byte j -> lattice value: IQ3_XXS magnitudes are 8l+4 (62 for l = 7), IQ3_S's 2l+1. */
static void build_search(iq3_search *S, const uint32_t *grid, int n_grid, int xxs) {
    S->n_grid = n_grid;
    for (int u = 0; u < KMAP; u++) S->map[u] = -1;
    for (int k = 0; k < n_grid; k++) {
        for (int j = 0; j < 4; j++) {
            const int b = (grid[k] >> (8 * j)) & 0xff;
            S->pt[k][j] = (int8_t)(2 * (xxs ? b / 8 : (b - 1) / 2) + 1);
        }
        S->map[point_index(S->pt[k])] = (int16_t)k;
    }
    const int n_want = xxs ? 2 : 3;
    dist_k *dist = malloc((size_t)n_grid * sizeof *dist);
    size_t total = 0;
    for (int pass = 0; pass < 2 && dist; pass++) {
        size_t off = 0;
        for (int u = 0; u < KMAP; u++) {
            if (S->map[u] >= 0) continue;
            const int n = neighbours_of(S, u, n_want, dist);
            if (pass == 1) {
                S->nb_off[u] = (uint32_t)off;
                S->nb[off] = (uint16_t)n;
                for (int j = 0; j < n; j++) S->nb[off + 1 + (size_t)j] = (uint16_t)dist[j].k;
            }
            off += 1 + (size_t)n;
        }
        if (pass == 0) {
            total = off;
            S->nb = malloc(total * sizeof *S->nb);
            if (!S->nb) break;
        }
    }
    free(dist);
    if (!S->nb || !dist) abort(); /* a few hundred KiB once per process */
}

static void init_xxs(void) { build_search(&search_xxs, e0_iq3_xxs_grid, 256, 1); }
static void init_s(void) { build_search(&search_s, e0_iq3_s_grid, 512, 0); }

/* The grid neighbour of off-grid point u that best fits xval at `scale` under weights w
 * (sum of w * (scale * q - x)^2, first best kept); its codes go to L. */
static int best_neighbour(const iq3_search *S, int u, const float *xval, const float *w, float scale, int8_t *L) {
    const uint16_t *nb = S->nb + S->nb_off[u];
    float best = FLT_MAX;
    int gi = nb[1];
    for (int j = 1; j <= nb[0]; j++) {
        const int8_t *pg = S->pt[nb[j]];
        float d2 = 0;
        for (int i = 0; i < 4; i++) {
            const float diff = scale * (float)pg[i] - xval[i];
            d2 += w[i] * diff * diff;
        }
        if (d2 < best) {
            best = d2;
            gi = nb[j];
        }
    }
    for (int i = 0; i < 4; i++) L[i] = (int8_t)((S->pt[gi][i] - 1) / 2);
    return gi;
}

/* Codes l = clamp(round((x / scale - 1) / 2), 0, 7) of 4 values at inverse scale id, as a point. */
static int round_point(const float *xval, float id, int8_t *L) {
    int u = 0;
    for (int i = 0; i < 4; i++) {
        int l = nearest_int(0.5f * (id * xval[i] - 1));
        l = l < 0 ? 0 : l > 7 ? 7 : l;
        if (L) L[i] = (int8_t)l;
        u |= l << (3 * i);
    }
    return u;
}

static void fit(const float *xval, const float *w, const int8_t *L, float *sumqx, float *sumq2) {
    float a = 0, b = 0;
    for (int i = 0; i < 32; i++) {
        const float q = (float)(2 * L[i] + 1);
        a += w[i] * xval[i] * q;
        b += w[i] * q * q;
    }
    *sumqx = a;
    *sumq2 = b;
}

/* One 32-value sub-block: the codes L of |x| (xval, largest max > 0, with weights w and sqrt
 * weights waux) and their least-squares scale (returned). n_try: trial scales -n_try..n_try;
 * fix_all: the final re-rounding redoes every group (IQ3_S) or only those off the grid. */
static float fit_sub_block(const iq3_search *S, const float *xval, float max, const float *w, const float *waux, int n_try,
                           bool on_grid_init, bool fix_all, int8_t L[32]) {
    memset(L, 0, 32);
    int8_t Laux[32];
    bool on_grid[8], on_grid_aux[8];
    float best = 0, scale = max / 15;
    for (int k = 0; k < 8; k++) on_grid[k] = on_grid_init;
    for (int is = -n_try; is <= n_try; is++) {
        const float id = (15 + (float)is * 0.2f) / max, this_scale = 1 / id;
        for (int k = 0; k < 8; k++) {
            const int u = round_point(xval + 4 * k, id, Laux + 4 * k);
            on_grid_aux[k] = S->map[u] >= 0;
            if (!on_grid_aux[k]) best_neighbour(S, u, xval + 4 * k, waux + 4 * k, this_scale, Laux + 4 * k);
        }
        float sumqx, sumq2;
        fit(xval, w, Laux, &sumqx, &sumq2);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            scale = sumqx / sumq2;
            best = scale * sumqx;
            memcpy(L, Laux, 32);
            memcpy(on_grid, on_grid_aux, sizeof on_grid);
        }
    }
    int n_off = 0;
    for (int k = 0; k < 8; k++) n_off += !on_grid[k];
    if (n_off > 0 && scale > 0) {
        const float id = 1 / scale;
        for (int k = 0; k < 8; k++) {
            if (!fix_all && on_grid[k]) continue;
            const int u = round_point(xval + 4 * k, id, NULL);
            int gi = S->map[u];
            if (gi < 0) gi = best_neighbour(S, u, xval + 4 * k, waux + 4 * k, scale, L + 4 * k);
            for (int i = 0; i < 4; i++) L[4 * k + i] = (int8_t)((S->pt[gi][i] - 1) / 2);
        }
        float sumqx, sumq2;
        fit(xval, w, L, &sumqx, &sumq2);
        if (sumq2 > 0) scale = sumqx / sumq2;
    }
    return scale;
}

/* Weights of the 32 values at xb (qw: their importance weights or NULL). */
static void sub_block_weights(const float *xb, const float *qw, float sigma2, float w[32], float waux[32]) {
    for (int i = 0; i < 32; i++) w[i] = qw ? qw[i] * sqrtf(sigma2 + xb[i] * xb[i]) : xb[i] * xb[i];
    for (int i = 0; i < 32; i++) waux[i] = sqrtf(w[i]);
}

static float super_block_sigma2(const float *xbl) {
    float sumx2 = 0;
    for (int i = 0; i < QK_K; i++) sumx2 += xbl[i] * xbl[i];
    return 2 * sumx2 / QK_K;
}

static float max32(const float *v) {
    float m = v[0];
    for (int i = 1; i < 32; i++) m = m > v[i] ? m : v[i];
    return m;
}

/* The 4-bit code of a sub-block scale relative to d (inverse id). */
static int scale_code(float scale, float id) {
    int l = nearest_int(0.5f * (id * scale - 1));
    return l < 0 ? 0 : l > 15 ? 15 : l;
}

void e0_quantize_iq3_xxs(const float *x, void *dst, int64_t n, const float *qw) {
    pthread_once(&once_xxs, init_xxs);
    const iq3_search *S = &search_xxs;
    for (int64_t ibl = 0; ibl < n / QK_K; ibl++) {
        e0_block_iq3_xxs yb, *y = &yb; /* built here, copied to dst (any alignment) */
        const float *xbl = x + QK_K * ibl;
        const float *qbl = qw ? qw + QK_K * ibl : NULL;
        const float sigma2 = super_block_sigma2(xbl);
        float scales[8], max_scale = 0;
        uint32_t sas[8] = {0}; /* signs and (later) scale, per sub-block */
        uint8_t q3[QK_K / 4] = {0};
        for (int ib = 0; ib < 8; ib++) {
            const float *xb = xbl + 32 * ib;
            float w[32], waux[32], xval[32];
            int8_t L[32];
            sub_block_weights(xb, qbl ? qbl + 32 * ib : NULL, sigma2, w, waux);
            uint8_t signs[4];
            for (int k = 0; k < 4; k++) {
                unsigned s = 0, nflip = 0;
                for (int i = 0; i < 8; i++) {
                    const float v = xb[8 * k + i];
                    xval[8 * k + i] = v >= 0 ? v : -v;
                    if (!(v >= 0)) s |= 1u << i, nflip++;
                }
                if (nflip % 2) { /* the 8th sign is implied (even count): flip the cheapest value */
                    int imin = 0;
                    float min = w[8 * k] * xb[8 * k] * xb[8 * k];
                    for (int i = 1; i < 8; i++) {
                        const float a = w[8 * k + i] * xb[8 * k + i] * xb[8 * k + i];
                        if (a < min) min = a, imin = i;
                    }
                    xval[8 * k + imin] = -xval[8 * k + imin];
                    s ^= 1u << imin;
                }
                signs[k] = (uint8_t)(s & 127);
            }
            const float max = max32(xval);
            if (max < 1e-8f) { /* (near) zero: codes, signs and scale stay 0 */
                scales[ib] = 0;
                continue;
            }
            float scale = fit_sub_block(S, xval, max, w, waux, 15, true, false, L);
            if (scale < 0) {
                scale = -scale;
                for (int k = 0; k < 4; k++) signs[k] = (uint8_t)(~signs[k] & 127);
            }
            for (int k = 0; k < 8; k++) {
                int8_t v[4];
                for (int i = 0; i < 4; i++) v[i] = (int8_t)(2 * L[4 * k + i] + 1);
                q3[8 * ib + k] = (uint8_t)S->map[point_index(v)];
            }
            sas[ib] = (uint32_t)signs[0] | (uint32_t)signs[1] << 7 | (uint32_t)signs[2] << 14 | (uint32_t)signs[3] << 21;
            scales[ib] = scale;
            max_scale = max_scale > scale ? max_scale : scale;
        }
        memset(y, 0, sizeof *y);
        if (max_scale) {
            const float d = max_scale / 31;
            y->d = e0_fp32_to_fp16(d * 1.0125f);
            const float id = 1 / d;
            for (int ib = 0; ib < 8; ib++) {
                sas[ib] |= (uint32_t)scale_code(scales[ib], id) << 28;
                memcpy(y->qs + QK_K / 4 + 4 * ib, &sas[ib], 4);
            }
            memcpy(y->qs, q3, sizeof q3);
        }
        memcpy((uint8_t *)dst + (size_t)ibl * IQ3_XXS_SIZE, y, IQ3_XXS_SIZE);
    }
}

/* ggml's IQ3_S quantizer skips an all-zero sub-block without moving on its output position, so
 * the sub-blocks after it land one place early; this one keeps every sub-block in place (the
 * bytes differ from ggml's only for rows with a sub-block of 32 exact zeros). */
void e0_quantize_iq3_s(const float *x, void *dst, int64_t n, const float *qw) {
    pthread_once(&once_s, init_s);
    const iq3_search *S = &search_s;
    for (int64_t ibl = 0; ibl < n / QK_K; ibl++) {
        e0_block_iq3_s bb, *b = &bb; /* built here, copied to dst (any alignment) */
        memset(b, 0, sizeof *b);
        const float *xbl = x + QK_K * ibl;
        const float *qbl = qw ? qw + QK_K * ibl : NULL;
        const float sigma2 = super_block_sigma2(xbl);
        float scales[8], max_scale = 0;
        for (int ib = 0; ib < 8; ib++) {
            const float *xb = xbl + 32 * ib;
            float w[32], waux[32], xval[32];
            int8_t L[32];
            sub_block_weights(xb, qbl ? qbl + 32 * ib : NULL, sigma2, w, waux);
            uint8_t signs[4];
            for (int k = 0; k < 4; k++) {
                unsigned s = 0;
                for (int i = 0; i < 8; i++) {
                    const float v = xb[8 * k + i];
                    xval[8 * k + i] = v >= 0 ? v : -v;
                    if (!(v >= 0)) s |= 1u << i;
                }
                signs[k] = (uint8_t)s;
            }
            const float max = max32(xval);
            if (!max) {
                scales[ib] = 0;
                continue;
            }
            float scale = fit_sub_block(S, xval, max, w, waux, 9, false, true, L);
            if (scale < 0) {
                scale = -scale;
                for (int k = 0; k < 4; k++) signs[k] = (uint8_t)~signs[k];
            }
            for (int k = 0; k < 8; k++) {
                int8_t v[4];
                for (int i = 0; i < 4; i++) v[i] = (int8_t)(2 * L[4 * k + i] + 1);
                const int gi = S->map[point_index(v)];
                b->qs[8 * ib + k] = (uint8_t)(gi & 255);
                b->qh[ib] |= (uint8_t)((gi >> 8) << k);
            }
            memcpy(b->signs + 4 * ib, signs, 4);
            scales[ib] = scale;
            max_scale = max_scale > scale ? max_scale : scale;
        }
        if (max_scale) {
            const float d = max_scale / 31;
            b->d = e0_fp32_to_fp16(d * 1.033f);
            const float id = 1 / d;
            for (int ib = 0; ib < 8; ib += 2)
                b->scales[ib / 2] = (uint8_t)(scale_code(scales[ib], id) | scale_code(scales[ib + 1], id) << 4);
        }
        memcpy((uint8_t *)dst + (size_t)ibl * IQ3_S_SIZE, b, IQ3_S_SIZE);
    }
}

void e0_iq3_xxs_from_float_ref(const float *x, void *dst, int64_t n) { e0_quantize_iq3_xxs(x, dst, n, NULL); }
void e0_iq3_s_from_float_ref(const float *x, void *dst, int64_t n) { e0_quantize_iq3_s(x, dst, n, NULL); }
