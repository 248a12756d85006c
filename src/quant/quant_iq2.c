/* quant_iq2.c — scalar kernels of IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S and IQ1_M (declared in
 * quant_iq2.h; the type table in quant.c points at them).
 *
 * to_float is exactly ggml's dequantize_row_* (same float operations in the same order), so
 * blocks written by llama.cpp dequantize to its floats bit for bit. The dots against Q8_K: an
 * exact integer sum per super-block, then ggml's scalar float steps.
 *
 * Quantizers (ours; the search follows the structure of ggml's, its constants included, so the
 * quality is comparable). Every group of 8 weights becomes one grid entry:
 *  IQ2  per group, the signs come out first (IQ2_XXS / IQ2_XS: an odd number of minus signs is
 *       made even by flipping the element that costs least, w*x^2); the magnitudes |x| are fit
 *       as scale * (2*level + 1), level 0..2, for 2*T+1 trial scales around max|x| / 5: round,
 *       move codes that are not on the grid to the best of their nearest grid entries, solve the
 *       weighted least-squares scale, keep the best trial; then re-round at that scale and refit.
 *       The super-block scale is max(sub-block scales) / 31 and each sub-block scale becomes a
 *       4-bit ls with scale ~ d * (2*ls + 1).
 *  IQ1  values are scale * (level - 1 +- 1/8). For each sub-block the weights are sorted and the
 *       two thresholds that split them into the three levels are searched exhaustively (with
 *       prefix sums), for each choice of the shift signs; codes off the grid then move to the best
 *       nearest grid entry. The super-block scale is max / 15 (IQ1_M: refit over the whole block).
 * Importance: with qw (one weight per element, an imatrix row) an element counts
 * qw * sqrt(sigma2 + x^2), sigma2 = mean x^2 of the super-block (times 2 for IQ2_S and IQ1_*),
 * as in ggml. Without qw, IQ2_S uses ggml's default 0.25 * sigma2 + x^2 and IQ1_M ggml's x^2;
 * ggml refuses IQ2_XXS, IQ2_XS and IQ1_S without an imatrix — here they take qw = 1.
 *
 * The grid lookups for the quantizers (code -> grid index, and the nearest entries of codes off
 * the grid) are built once per grid on first use (pthread_once); if that allocation fails the
 * search falls back to scanning the whole grid. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant_iq2.h"

#define FP16(h) e0_fp16_to_fp32(h)

/* Round to nearest, ties to even, defined for any input (callers clamp). */
static inline int nearest_int(float f) {
    float v = f + 12582912.f;
    int32_t i;
    memcpy(&i, &v, 4);
    return (i & 0x007fffff) - 0x00400000;
}
static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* ======================================================================= dequantization */

void e0_iq2_xxs_to_float(const void *src, float *y, int64_t n) {
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / QK_K; i++, b += IQ2XXS_SIZE) {
        const float d = FP16(e0_rd16(b));
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *q = b + IQ2XXS_QS + 8 * ib;
            const uint32_t aux = e0_rd32(q + 4);
            const float db = d * (0.5f + (float)(aux >> 28)) * 0.25f;
            for (int l = 0; l < 4; l++) {
                const uint8_t *g = (const uint8_t *)&e0_iq2xxs_grid[q[l]];
                const uint8_t sg = iq2_signs8(aux >> (7 * l));
                for (int j = 0; j < 8; j++) y[j] = db * g[j] * (sg >> j & 1 ? -1.f : 1.f);
                y += 8;
            }
        }
    }
}

void e0_iq2_xs_to_float(const void *src, float *y, int64_t n) {
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / QK_K; i++, b += IQ2XS_SIZE) {
        const float d = FP16(e0_rd16(b));
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t sc = b[IQ2XS_SC + ib];
            const float db[2] = {d * (0.5f + (sc & 0xf)) * 0.25f, d * (0.5f + (sc >> 4)) * 0.25f};
            for (int l = 0; l < 4; l++) {
                const uint16_t q = e0_rd16(b + IQ2XS_QS + 2 * (4 * ib + l));
                const uint8_t *g = (const uint8_t *)&e0_iq2xs_grid[q & 511];
                const uint8_t sg = iq2_signs8(q >> 9);
                for (int j = 0; j < 8; j++) y[j] = db[l / 2] * g[j] * (sg >> j & 1 ? -1.f : 1.f);
                y += 8;
            }
        }
    }
}

/* IQ2_S: the 10-bit grid index of group l (0..3) of sub-block ib. */
static inline unsigned iq2s_index(const uint8_t *b, int ib, int l) {
    return b[IQ2S_QS + 4 * ib + l] | ((unsigned)(b[IQ2S_QH + ib] >> (2 * l) & 3) << 8);
}

void e0_iq2_s_to_float(const void *src, float *y, int64_t n) {
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / QK_K; i++, b += IQ2S_SIZE) {
        const float d = FP16(e0_rd16(b));
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t sc = b[IQ2S_SC + ib];
            const float db[2] = {d * (0.5f + (sc & 0xf)) * 0.25f, d * (0.5f + (sc >> 4)) * 0.25f};
            for (int l = 0; l < 4; l++) {
                const uint8_t *g = (const uint8_t *)&e0_iq2s_grid[iq2s_index(b, ib, l)];
                const uint8_t sg = b[IQ2S_SIGNS + 4 * ib + l];
                for (int j = 0; j < 8; j++) y[j] = db[l / 2] * g[j] * (sg >> j & 1 ? -1.f : 1.f);
                y += 8;
            }
        }
    }
}

void e0_iq1_s_to_float(const void *src, float *y, int64_t n) {
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / QK_K; i++, b += IQ1S_SIZE) {
        const float d = FP16(e0_rd16(b));
        for (int ib = 0; ib < 8; ib++) {
            const uint16_t qh = e0_rd16(b + IQ1S_QH + 2 * ib);
            const float dl = d * (2 * ((qh >> 12) & 7) + 1);
            const float delta = qh & 0x8000 ? -E0_IQ1_DELTA : E0_IQ1_DELTA;
            for (int l = 0; l < 4; l++) {
                const int8_t *g = (const int8_t *)&e0_iq1s_grid[b[IQ1S_QS + 4 * ib + l] | ((qh >> (3 * l) & 7) << 8)];
                for (int j = 0; j < 8; j++) y[j] = dl * (g[j] + delta);
                y += 8;
            }
        }
    }
}

/* IQ1_M: grid index of group l (0..3) of sub-block ib, its shift sign bit, its 3-bit scale. */
static inline unsigned iq1m_index(const uint8_t *b, int ib, int l) {
    return b[IQ1M_QS + 4 * ib + l] | ((unsigned)(b[IQ1M_QH + 2 * ib + l / 2] >> (4 * (l % 2)) & 7) << 8);
}
static inline int iq1m_neg(const uint8_t *b, int ib, int l) { return b[IQ1M_QH + 2 * ib + l / 2] >> (4 * (l % 2) + 3) & 1; }
static inline int iq1m_ls(const uint8_t *b, int ib, int half) {
    const uint16_t w = e0_rd16(b + IQ1M_SC + 2 * (ib / 2));
    return 2 * ((w >> (6 * (ib % 2) + 3 * half)) & 7) + 1;
}

void e0_iq1_m_to_float(const void *src, float *y, int64_t n) {
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / QK_K; i++, b += IQ1M_SIZE) {
        const float d = FP16(iq1m_d_bits(b + IQ1M_SC));
        for (int ib = 0; ib < 8; ib++) {
            const float dl[2] = {d * iq1m_ls(b, ib, 0), d * iq1m_ls(b, ib, 1)};
            for (int l = 0; l < 4; l++) {
                const int8_t *g = (const int8_t *)&e0_iq1s_grid[iq1m_index(b, ib, l)];
                const float delta = iq1m_neg(b, ib, l) ? -E0_IQ1_DELTA : E0_IQ1_DELTA;
                for (int j = 0; j < 8; j++) y[j] = dl[l / 2] * (g[j] + delta);
                y += 8;
            }
        }
    }
}

/* ======================================================================= dots with Q8_K */

/* sum_j grid[j] * sign_j * q8[j] over one group of 8 (IQ2). */
static inline int dot8_signed(const uint8_t *g, uint8_t sg, const int8_t *q8) {
    int s = 0;
    for (int j = 0; j < 8; j++) s += (sg >> j & 1 ? -1 : 1) * g[j] * q8[j];
    return s;
}

void e0_vec_dot_iq2_xxs_ref(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *b = w;
    const e0_block_q8_K *y = a;
    float sumf = 0;
    for (int64_t i = 0; i < n / QK_K; i++, b += IQ2XXS_SIZE) {
        const float d = FP16(e0_rd16(b)) * y[i].d;
        const int8_t *q8 = y[i].qs;
        int32_t bsum = 0;
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *q = b + IQ2XXS_QS + 8 * ib;
            const uint32_t aux = e0_rd32(q + 4);
            int sumi = 0;
            for (int l = 0; l < 4; l++, q8 += 8)
                sumi += dot8_signed((const uint8_t *)&e0_iq2xxs_grid[q[l]], iq2_signs8(aux >> (7 * l)), q8);
            bsum += sumi * (int)(2 * (aux >> 28) + 1);
        }
        sumf += d * bsum;
    }
    *s = 0.125f * sumf;
}

void e0_vec_dot_iq2_xs_ref(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *b = w;
    const e0_block_q8_K *y = a;
    float sumf = 0;
    for (int64_t i = 0; i < n / QK_K; i++, b += IQ2XS_SIZE) {
        const float d = FP16(e0_rd16(b)) * y[i].d;
        const int8_t *q8 = y[i].qs;
        int32_t bsum = 0;
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t sc = b[IQ2XS_SC + ib];
            int sumi[2] = {0, 0};
            for (int l = 0; l < 4; l++, q8 += 8) {
                const uint16_t q = e0_rd16(b + IQ2XS_QS + 2 * (4 * ib + l));
                sumi[l / 2] += dot8_signed((const uint8_t *)&e0_iq2xs_grid[q & 511], iq2_signs8(q >> 9), q8);
            }
            bsum += sumi[0] * (2 * (sc & 0xf) + 1) + sumi[1] * (2 * (sc >> 4) + 1);
        }
        sumf += d * bsum;
    }
    *s = 0.125f * sumf;
}

void e0_vec_dot_iq2_s_ref(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *b = w;
    const e0_block_q8_K *y = a;
    float sumf = 0;
    for (int64_t i = 0; i < n / QK_K; i++, b += IQ2S_SIZE) {
        const float d = FP16(e0_rd16(b)) * y[i].d;
        const int8_t *q8 = y[i].qs;
        int32_t bsum = 0;
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t sc = b[IQ2S_SC + ib];
            int sumi[2] = {0, 0};
            for (int l = 0; l < 4; l++, q8 += 8)
                sumi[l / 2] += dot8_signed((const uint8_t *)&e0_iq2s_grid[iq2s_index(b, ib, l)], b[IQ2S_SIGNS + 4 * ib + l], q8);
            bsum += sumi[0] * (2 * (sc & 0xf) + 1) + sumi[1] * (2 * (sc >> 4) + 1);
        }
        sumf += d * bsum;
    }
    *s = 0.125f * sumf;
}

static inline int dot8_i8(const int8_t *g, const int8_t *q8) {
    int s = 0;
    for (int j = 0; j < 8; j++) s += g[j] * q8[j];
    return s;
}

void e0_vec_dot_iq1_s_ref(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *b = w;
    const e0_block_q8_K *y = a;
    float sumf = 0;
    for (int64_t i = 0; i < n / QK_K; i++, b += IQ1S_SIZE) {
        const int8_t *q8 = y[i].qs;
        int sumi = 0, sumi1 = 0;
        for (int ib = 0; ib < 8; ib++) {
            const uint16_t qh = e0_rd16(b + IQ1S_QH + 2 * ib);
            const int ls = 2 * ((qh >> 12) & 7) + 1;
            int lsum = 0;
            for (int l = 0; l < 4; l++, q8 += 8)
                lsum += dot8_i8((const int8_t *)&e0_iq1s_grid[b[IQ1S_QS + 4 * ib + l] | ((qh >> (3 * l) & 7) << 8)], q8);
            sumi += ls * lsum;
            sumi1 += ls * (qh & 0x8000 ? -1 : 1) * (y[i].bsums[2 * ib] + y[i].bsums[2 * ib + 1]);
        }
        sumf += FP16(e0_rd16(b)) * y[i].d * (sumi + E0_IQ1_DELTA * sumi1);
    }
    *s = sumf;
}

void e0_vec_dot_iq1_m_ref(int64_t n, float *s, const void *w, const void *a) {
    const uint8_t *b = w;
    const e0_block_q8_K *y = a;
    float sumf = 0;
    for (int64_t i = 0; i < n / QK_K; i++, b += IQ1M_SIZE) {
        const int8_t *q8 = y[i].qs;
        int sumi1 = 0, sumi2 = 0;
        for (int ib = 0; ib < 8; ib++) {
            int s1[2] = {0, 0}, s2[2] = {0, 0};
            for (int l = 0; l < 4; l++, q8 += 8) {
                int qsum = 0;
                for (int j = 0; j < 8; j++) qsum += q8[j];
                s1[l / 2] += dot8_i8((const int8_t *)&e0_iq1s_grid[iq1m_index(b, ib, l)], q8);
                s2[l / 2] += iq1m_neg(b, ib, l) ? -qsum : qsum;
            }
            const int ls1 = iq1m_ls(b, ib, 0), ls2 = iq1m_ls(b, ib, 1);
            sumi1 += s1[0] * ls1 + s1[1] * ls2;
            sumi2 += s2[0] * ls1 + s2[1] * ls2;
        }
        sumf += FP16(iq1m_d_bits(b + IQ1M_SC)) * y[i].d * (sumi1 + E0_IQ1_DELTA * sumi2);
    }
    *s = sumf;
}

/* ======================================================================= quantizer grid lookups */

/* A grid as the quantizers see it: entry levels (0..2 per element), the map from a base-4 code
 * (sum level_j << 2j) to its entry, and for each code with levels <= 2 that is not an entry the
 * entries at the `shells` smallest distances from it. */
typedef struct {
    const uint64_t *grid;
    int n;
    uint8_t lv[3];    /* byte value of levels 0, 1, 2 */
    int shells;
    pthread_once_t once;
    int ok;           /* 0: lookups unavailable, scan the whole grid */
    int16_t *map;     /* [65536] entry or -1 */
    int32_t *nb_off;  /* [65536] offset into nb of (count, entries...), or -1 */
    uint16_t *nb;
} iq_grid;

static iq_grid g_iq2xxs = {e0_iq2xxs_grid, 256, {8, 25, 43}, 2, PTHREAD_ONCE_INIT, 0, NULL, NULL, NULL};
static iq_grid g_iq2xs = {e0_iq2xs_grid, 512, {8, 25, 43}, 2, PTHREAD_ONCE_INIT, 0, NULL, NULL, NULL};
static iq_grid g_iq2s = {e0_iq2s_grid, 1024, {8, 25, 43}, 1, PTHREAD_ONCE_INIT, 0, NULL, NULL, NULL};
static iq_grid g_iq1s = {e0_iq1s_grid, 2048, {0xff, 0, 1}, 3, PTHREAD_ONCE_INIT, 0, NULL, NULL, NULL};

static inline int entry_level(const iq_grid *g, int e, int j) {
    const uint8_t v = (uint8_t)(g->grid[e] >> (8 * j));
    return v == g->lv[0] ? 0 : v == g->lv[1] ? 1 : 2;
}

static void build_lookups(iq_grid *g) {
    g->map = malloc(65536 * sizeof *g->map);
    g->nb_off = malloc(65536 * sizeof *g->nb_off);
    uint8_t(*lev)[8] = malloc((size_t)g->n * 8);
    int *dist = malloc((size_t)g->n * sizeof *dist);
    if (!g->map || !g->nb_off || !lev || !dist) goto fail;
    for (int u = 0; u < 65536; u++) g->map[u] = -1, g->nb_off[u] = -1;
    for (int e = 0; e < g->n; e++) {
        int u = 0;
        for (int j = 0; j < 8; j++) u |= (lev[e][j] = (uint8_t)entry_level(g, e, j)) << (2 * j);
        g->map[u] = (int16_t)e;
    }
    /* two passes over the valid off-grid codes: count, then fill */
    size_t total = 0;
    for (int pass = 0; pass < 2; pass++) {
        size_t at = 0;
        for (int u = 0; u < 65536; u++) {
            int ok = 1;
            for (int j = 0; j < 8; j++) ok &= ((u >> (2 * j)) & 3) < 3;
            if (!ok || g->map[u] >= 0) continue;
            int cut = 0, prev = -1; /* the shells-th smallest distinct distance */
            for (int e = 0; e < g->n; e++) {
                int d2 = 0;
                for (int j = 0; j < 8; j++) {
                    const int diff = ((u >> (2 * j)) & 3) - lev[e][j];
                    d2 += diff * diff;
                }
                dist[e] = d2;
            }
            for (int s = 0; s < g->shells; s++) {
                int next = 1 << 30;
                for (int e = 0; e < g->n; e++)
                    if (dist[e] > prev && dist[e] < next) next = dist[e];
                if (next == 1 << 30) break;
                cut = prev = next;
            }
            int cnt = 0;
            for (int e = 0; e < g->n; e++)
                if (dist[e] <= cut) {
                    if (pass) g->nb[at + 1 + cnt] = (uint16_t)e;
                    cnt++;
                }
            if (pass) {
                g->nb_off[u] = (int32_t)at;
                g->nb[at] = (uint16_t)cnt;
            }
            at += 1 + (size_t)cnt;
        }
        if (!pass) {
            total = at;
            g->nb = malloc(total * sizeof *g->nb);
            if (!g->nb) goto fail;
        }
    }
    free(lev);
    free(dist);
    g->ok = 1;
    return;
fail:
    free(lev);
    free(dist);
    free(g->map);
    free(g->nb_off);
    free(g->nb);
    g->map = NULL, g->nb_off = NULL, g->nb = NULL;
}

static void init_iq2xxs(void) { build_lookups(&g_iq2xxs); }
static void init_iq2xs(void) { build_lookups(&g_iq2xs); }
static void init_iq2s(void) { build_lookups(&g_iq2s); }
static void init_iq1s(void) { build_lookups(&g_iq1s); }

static iq_grid *grid_ready(iq_grid *g) {
    pthread_once(&g->once, g == &g_iq2xxs ? init_iq2xxs : g == &g_iq2xs ? init_iq2xs : g == &g_iq2s ? init_iq2s : init_iq1s);
    return g;
}

/* The grid entry for levels L[0..7] (0..2) of one group: the entry itself when on the grid, else
 * the candidate (nearest entries, or all) with the least sum_j w_j (scale * val[level_j] - x_j)^2.
 * L is rewritten with the chosen entry's levels. */
static int snap_group(const iq_grid *g, int8_t *L, const float *x, const float *w, float scale, const float val[3]) {
    int u = 0;
    for (int j = 0; j < 8; j++) u |= L[j] << (2 * j);
    if (g->ok && g->map[u] >= 0) return g->map[u];
    const uint16_t *cand = g->ok && g->nb_off[u] >= 0 ? g->nb + g->nb_off[u] + 1 : NULL;
    const int nc = cand ? g->nb[g->nb_off[u]] : g->n;
    int best = 0;
    float best_err = INFINITY;
    for (int c = 0; c < nc; c++) {
        const int e = cand ? cand[c] : c;
        float err = 0;
        for (int j = 0; j < 8; j++) {
            const float diff = scale * val[entry_level(g, e, j)] - x[j];
            err += w[j] * diff * diff;
        }
        if (err < best_err) best_err = err, best = e; /* NaN errors never win: entry 0 stays */
    }
    for (int j = 0; j < 8; j++) L[j] = (int8_t)entry_level(g, best, j);
    return best;
}

/* ======================================================================= IQ2 quantizers */

static const float iq2_val[3] = {1, 3, 5}; /* level l stands for 2l + 1 */

/* One sub-block of ng groups of 8 (x, importance w): grid indices idx[ng], sign bytes sg[ng]
 * (bit j: element j negative; even count when `even`), and the returned scale >= 0 (in units
 * of 2*level + 1). ntrial: trial scales on each side of max/5. */
static float iq2_sub_block(const iq_grid *g, int ng, int even, int ntrial, const float *x, const float *w,
                           uint16_t *idx, uint8_t *sg) {
    float xv[32], max = 0;
    int8_t L[32], Lt[32];
    for (int k = 0; k < ng; k++) {
        uint8_t s = 0;
        for (int j = 0; j < 8; j++) {
            const float v = x[8 * k + j];
            xv[8 * k + j] = v >= 0 ? v : -v;
            if (v < 0) s |= (uint8_t)(1 << j);
        }
        if (even && __builtin_parity(s)) { /* flip the cheapest element back to its own sign's opposite */
            int jm = 0;
            for (int j = 1; j < 8; j++)
                if (w[8 * k + j] * x[8 * k + j] * x[8 * k + j] < w[8 * k + jm] * x[8 * k + jm] * x[8 * k + jm]) jm = j;
            xv[8 * k + jm] = -xv[8 * k + jm];
            s ^= (uint8_t)(1 << jm);
        }
        sg[k] = s;
    }
    const int n = 8 * ng;
    for (int i = 0; i < n; i++)
        if (xv[i] > max) max = xv[i];
    memset(L, 0, sizeof L);
    if (!(max >= 1e-15f) || !isfinite(max)) {
        for (int k = 0; k < ng; k++) idx[k] = (uint16_t)snap_group(g, L + 8 * k, xv + 8 * k, w + 8 * k, 0, iq2_val);
        return 0;
    }
    float scale = max / 5, best = 0;
    for (int t = -ntrial; t <= ntrial; t++) {
        const float id = (5 + 0.1f * t) / max;
        for (int i = 0; i < n; i++) Lt[i] = (int8_t)clampi(nearest_int(0.5f * (id * xv[i] - 1)), 0, 2);
        for (int k = 0; k < ng; k++) snap_group(g, Lt + 8 * k, xv + 8 * k, w + 8 * k, 1 / id, iq2_val);
        float sqx = 0, sq2 = 0;
        for (int i = 0; i < n; i++) {
            const float q = 2 * Lt[i] + 1;
            sqx += w[i] * xv[i] * q;
            sq2 += w[i] * q * q;
        }
        if (sq2 > 0 && sqx * sqx > best * sq2) {
            scale = sqx / sq2;
            best = scale * sqx;
            memcpy(L, Lt, (size_t)n);
        }
    }
    if (scale > 0) { /* re-round at the chosen scale and refit */
        const float id = 1 / scale;
        for (int i = 0; i < n; i++) Lt[i] = (int8_t)clampi(nearest_int(0.5f * (id * xv[i] - 1)), 0, 2);
        for (int k = 0; k < ng; k++) snap_group(g, Lt + 8 * k, xv + 8 * k, w + 8 * k, scale, iq2_val);
        float sqx = 0, sq2 = 0;
        for (int i = 0; i < n; i++) {
            const float q = 2 * Lt[i] + 1;
            sqx += w[i] * xv[i] * q;
            sq2 += w[i] * q * q;
        }
        if (sq2 > 0 && sqx * sqx >= best * sq2) {
            scale = sqx / sq2;
            memcpy(L, Lt, (size_t)n);
        }
    }
    if (scale < 0) { /* only possible through a flipped element: negate everything */
        scale = -scale;
        for (int k = 0; k < ng; k++) sg[k] = (uint8_t)~sg[k];
    }
    if (!isfinite(scale)) scale = 0;
    for (int k = 0; k < ng; k++) idx[k] = (uint16_t)snap_group(g, L + 8 * k, xv + 8 * k, w + 8 * k, scale, iq2_val);
    return scale;
}

/* The element weights of one super-block: qw * sqrt(sigma2 + x^2), or the type's default. */
static void iq_weights(const float *x, const float *qw, float sigma_mul, int dflt, float *w) {
    float sumx2 = 0;
    for (int i = 0; i < QK_K; i++) sumx2 += x[i] * x[i];
    const float sigma2 = sigma_mul * sumx2 / QK_K;
    for (int i = 0; i < QK_K; i++) {
        if (qw) w[i] = qw[i] * sqrtf(sigma2 + x[i] * x[i]);
        else if (dflt == 1) w[i] = 0.25f * sigma2 + x[i] * x[i];
        else if (dflt == 2) w[i] = x[i] * x[i];
        else w[i] = sqrtf(sigma2 + x[i] * x[i]);
        if (!(w[i] >= 0) || !isfinite(w[i])) w[i] = 0;
    }
}

/* The 4-bit sub-block scale of `scale` against super-block scale d (scale ~ d * (2*ls + 1)). */
static inline int scale4(float scale, float id) { return clampi(nearest_int(0.5f * (id * scale - 1)), 0, 15); }

enum { IQ2_XXS, IQ2_XS, IQ2_S };

static void quantize_iq2(int kind, const float *x, void *dst, int64_t n, const float *qw) {
    iq_grid *g = grid_ready(kind == IQ2_XXS ? &g_iq2xxs : kind == IQ2_XS ? &g_iq2xs : &g_iq2s);
    const int gs = kind == IQ2_XXS ? 32 : 16, nsub = QK_K / gs, ng = gs / 8;
    const size_t bsize = kind == IQ2_XXS ? IQ2XXS_SIZE : kind == IQ2_XS ? IQ2XS_SIZE : IQ2S_SIZE;
    uint8_t *out = dst;
    float w[QK_K], scales[16];
    uint16_t idx[QK_K / 8];
    uint8_t sg[QK_K / 8];
    for (int64_t i = 0; i < n / QK_K; i++, out += bsize) {
        const float *xb = x + i * QK_K;
        iq_weights(xb, qw ? qw + i * QK_K : NULL, kind == IQ2_S ? 2.f : 1.f, kind == IQ2_S ? 1 : 0, w);
        float max_scale = 0;
        for (int s = 0; s < nsub; s++) {
            scales[s] = iq2_sub_block(g, ng, kind != IQ2_S, kind == IQ2_XXS ? 6 : 9, xb + gs * s, w + gs * s,
                                      idx + ng * s, sg + ng * s);
            if (scales[s] > max_scale) max_scale = scales[s];
        }
        memset(out, 0, bsize);
        const float d = max_scale / 31, id = d > 0 ? 1 / d : 0;
        e0_wr16(out, e0_fp32_to_fp16(kind == IQ2_S ? d * 0.9875f : d));
        for (int s = 0; s < nsub; s++) {
            const int ls = max_scale > 0 ? scale4(scales[s], id) : 0;
            if (kind == IQ2_XXS) {
                uint8_t *q = out + IQ2XXS_QS + 8 * s;
                uint32_t aux = (uint32_t)ls << 28;
                for (int k = 0; k < 4; k++) {
                    q[k] = (uint8_t)idx[4 * s + k];
                    aux |= (uint32_t)(sg[4 * s + k] & 127) << (7 * k);
                }
                memcpy(q + 4, &aux, 4);
            } else {
                if (kind == IQ2_XS) out[IQ2XS_SC + s / 2] |= (uint8_t)(ls << (4 * (s % 2)));
                else out[IQ2S_SC + s / 2] |= (uint8_t)(ls << (4 * (s % 2)));
                for (int k = 0; k < 2; k++) {
                    const int gi = 2 * s + k;
                    if (kind == IQ2_XS) {
                        e0_wr16(out + IQ2XS_QS + 2 * gi, (uint16_t)(idx[gi] | (sg[gi] & 127) << 9));
                    } else {
                        out[IQ2S_QS + gi] = (uint8_t)idx[gi];
                        out[IQ2S_QH + gi / 4] |= (uint8_t)((idx[gi] >> 8) << (2 * (gi % 4)));
                        out[IQ2S_SIGNS + gi] = sg[gi];
                    }
                }
            }
        }
    }
}

void e0_quantize_iq2_xxs(const float *x, void *dst, int64_t n, const float *qw) { quantize_iq2(IQ2_XXS, x, dst, n, qw); }
void e0_quantize_iq2_xs(const float *x, void *dst, int64_t n, const float *qw) { quantize_iq2(IQ2_XS, x, dst, n, qw); }
void e0_quantize_iq2_s(const float *x, void *dst, int64_t n, const float *qw) { quantize_iq2(IQ2_S, x, dst, n, qw); }
void e0_iq2_xxs_from_float_ref(const float *x, void *dst, int64_t n) { quantize_iq2(IQ2_XXS, x, dst, n, NULL); }
void e0_iq2_xs_from_float_ref(const float *x, void *dst, int64_t n) { quantize_iq2(IQ2_XS, x, dst, n, NULL); }
void e0_iq2_s_from_float_ref(const float *x, void *dst, int64_t n) { quantize_iq2(IQ2_S, x, dst, n, NULL); }

/* ======================================================================= IQ1 quantizers */

/* Level values with a positive (+1/8) or negative (-1/8) shift. */
static const float iq1_pos[3] = {-1 + E0_IQ1_DELTA, E0_IQ1_DELTA, 1 + E0_IQ1_DELTA};
static const float iq1_neg[3] = {-1 - E0_IQ1_DELTA, -E0_IQ1_DELTA, 1 - E0_IQ1_DELTA};

/* One sub-block of n = 8 * ng elements whose parts (np = 1 or 2 parts of n / np elements) each
 * have their own shift sign. Finds levels (0..2) and signs neg[np] maximizing the weighted fit
 * (sum w q x)^2 / sum w q^2 over all splits of the sorted weights into three levels, then snaps
 * each group of 8 to the grid (idx[ng]). Returns the scale >= 0 (0: no usable fit). */
static float iq1_sub_block(const iq_grid *g, int ng, int np, const float *x, const float *w, uint16_t *idx, int *neg) {
    const int n = 8 * ng, per = n / np;
    int order[32];
    int8_t L[32];
    float max = 0;
    for (int i = 0; i < n; i++) {
        if (fabsf(x[i]) > max) max = fabsf(x[i]);
        int j = i; /* insertion sort by value (stable) */
        while (j > 0 && x[order[j - 1]] > x[i]) order[j] = order[j - 1], j--;
        order[j] = i;
    }
    for (int p = 0; p < np; p++) neg[p] = 0;
    if (!(max >= 1e-12f) || !isfinite(max)) {
        memset(L, 1, sizeof L);
        for (int k = 0; k < ng; k++) idx[k] = (uint16_t)snap_group(g, L + 8 * k, x + 8 * k, w + 8 * k, 0, iq1_pos);
        return 0;
    }
    /* prefix sums per part over the sorted order: sx[p][r] = sum of w*x of the first r elements
     * (in sorted order) that belong to part p */
    float sx[2][33], sw[2][33];
    for (int p = 0; p < np; p++) sx[p][0] = sw[p][0] = 0;
    for (int r = 0; r < n; r++) {
        const int i = order[r];
        for (int p = 0; p < np; p++) {
            const int in = i / per == p;
            sx[p][r + 1] = sx[p][r] + (in ? w[i] * x[i] : 0);
            sw[p][r + 1] = sw[p][r] + (in ? w[i] : 0);
        }
    }
    float best = -INFINITY, scale = 0;
    int b1 = -1, b2 = -1, bcombo = 0;
    for (int i1 = 0; i1 <= n; i1++)
        for (int i2 = i1; i2 <= n; i2++)
            for (int combo = 0; combo < (1 << np); combo++) {
                float sqx = 0, sq2 = 0;
                for (int p = 0; p < np; p++) {
                    const float *v = combo >> p & 1 ? iq1_neg : iq1_pos;
                    const float x0 = sx[p][i1], x1 = sx[p][i2] - sx[p][i1], x2 = sx[p][n] - sx[p][i2];
                    const float w0 = sw[p][i1], w1 = sw[p][i2] - sw[p][i1], w2 = sw[p][n] - sw[p][i2];
                    sqx += x0 * v[0] + x1 * v[1] + x2 * v[2];
                    sq2 += w0 * v[0] * v[0] + w1 * v[1] * v[1] + w2 * v[2] * v[2];
                }
                if (sq2 > 0 && sqx * sqx > best * sq2) {
                    scale = sqx / sq2;
                    best = scale * sqx;
                    b1 = i1, b2 = i2, bcombo = combo;
                }
            }
    if (b1 < 0 || !isfinite(scale)) {
        memset(L, 1, sizeof L);
        for (int k = 0; k < ng; k++) idx[k] = (uint16_t)snap_group(g, L + 8 * k, x + 8 * k, w + 8 * k, 0, iq1_pos);
        return 0;
    }
    for (int r = 0; r < n; r++) L[order[r]] = (int8_t)(r < b1 ? 0 : r < b2 ? 1 : 2);
    if (scale < 0) { /* mirror: levels 2 - l, shifts flipped */
        scale = -scale;
        for (int i = 0; i < n; i++) L[i] = (int8_t)(2 - L[i]);
        bcombo ^= (1 << np) - 1;
    }
    for (int p = 0; p < np; p++) neg[p] = bcombo >> p & 1;
    int off = 0;
    for (int k = 0; k < ng; k++) {
        const float *v = neg[8 * k / per] ? iq1_neg : iq1_pos;
        int u = 0;
        for (int j = 0; j < 8; j++) u |= L[8 * k + j] << (2 * j);
        off |= !g->ok || g->map[u] < 0;
        idx[k] = (uint16_t)snap_group(g, L + 8 * k, x + 8 * k, w + 8 * k, scale, v);
    }
    if (off) { /* refit the scale to the snapped levels */
        float sqx = 0, sq2 = 0;
        for (int i = 0; i < n; i++) {
            const float q = (neg[i / per] ? iq1_neg : iq1_pos)[L[i]];
            sqx += w[i] * q * x[i];
            sq2 += w[i] * q * q;
        }
        if (sqx > 0 && sq2 > 0) scale = sqx / sq2;
    }
    return scale;
}

void e0_quantize_iq1_s(const float *x, void *dst, int64_t n, const float *qw) {
    iq_grid *g = grid_ready(&g_iq1s);
    uint8_t *out = dst;
    float w[QK_K], scales[8];
    uint16_t idx[4];
    int neg[8][1];
    for (int64_t i = 0; i < n / QK_K; i++, out += IQ1S_SIZE) {
        const float *xb = x + i * QK_K;
        iq_weights(xb, qw ? qw + i * QK_K : NULL, 2.f, 0, w);
        memset(out, 0, IQ1S_SIZE);
        float max_scale = 0;
        uint16_t qh[8];
        for (int s = 0; s < 8; s++) {
            scales[s] = iq1_sub_block(g, 4, 1, xb + 32 * s, w + 32 * s, idx, neg[s]);
            if (scales[s] > max_scale) max_scale = scales[s];
            qh[s] = 0;
            for (int k = 0; k < 4; k++) {
                out[IQ1S_QS + 4 * s + k] = (uint8_t)idx[k];
                qh[s] |= (uint16_t)((idx[k] >> 8) << (3 * k));
            }
        }
        const float d = max_scale / 15, id = d > 0 ? 1 / d : 0;
        e0_wr16(out, e0_fp32_to_fp16(d * 1.125f));
        for (int s = 0; s < 8; s++) {
            const int ls = max_scale > 0 ? clampi(nearest_int(0.5f * (id * scales[s] - 1)), 0, 7) : 0;
            qh[s] |= (uint16_t)(ls << 12 | neg[s][0] << 15);
            e0_wr16(out + IQ1S_QH + 2 * s, qh[s]);
        }
    }
}

void e0_quantize_iq1_m(const float *x, void *dst, int64_t n, const float *qw) {
    iq_grid *g = grid_ready(&g_iq1s);
    uint8_t *out = dst;
    float w[QK_K], scales[16];
    uint16_t idx[QK_K / 8];
    int neg[16][2];
    for (int64_t i = 0; i < n / QK_K; i++, out += IQ1M_SIZE) {
        const float *xb = x + i * QK_K;
        iq_weights(xb, qw ? qw + i * QK_K : NULL, 2.f, 2, w);
        memset(out, 0, IQ1M_SIZE);
        float max_scale = 0;
        for (int s = 0; s < 16; s++) {
            scales[s] = iq1_sub_block(g, 2, 2, xb + 16 * s, w + 16 * s, idx + 2 * s, neg[s]);
            if (scales[s] > max_scale) max_scale = scales[s];
        }
        if (!(max_scale > 0)) continue; /* all zero: d = 0 */
        const float d0 = max_scale / 15, id = 1 / d0;
        uint16_t sc[4] = {0, 0, 0, 0};
        float sqx = 0, sq2 = 0;
        for (int s = 0; s < 16; s++) {
            const int l = clampi(nearest_int(0.5f * (id * scales[s] - 1)), 0, 7);
            sc[s / 4] |= (uint16_t)(l << (3 * (s % 4)));
            for (int k = 0; k < 2; k++) {
                const int gi = 2 * s + k; /* group gi: qs[gi], qh byte gi / 2, nibble gi % 2 */
                out[IQ1M_QS + gi] = (uint8_t)idx[gi];
                out[IQ1M_QH + gi / 2] |= (uint8_t)(((idx[gi] >> 8) | neg[s][k] << 3) << (4 * (gi % 2)));
                const float *v = neg[s][k] ? iq1_neg : iq1_pos;
                for (int j = 0; j < 8; j++) { /* the global refit of d over the stored levels */
                    const int e = 16 * s + 8 * k + j;
                    const float q = v[entry_level(g, idx[gi], j)] * (2 * l + 1);
                    sqx += w[e] * q * xb[e];
                    sq2 += w[e] * q * q;
                }
            }
        }
        float d = d0;
        if (sq2 > 0 && isfinite(sqx / sq2)) d = sqx / sq2;
        const uint16_t h = e0_fp32_to_fp16(d * 1.1125f);
        for (int k = 0; k < 4; k++) sc[k] |= (uint16_t)(((h >> (4 * k)) & 0xf) << 12);
        memcpy(out + IQ1M_SC, sc, 8);
    }
}

void e0_iq1_s_from_float_ref(const float *x, void *dst, int64_t n) { e0_quantize_iq1_s(x, dst, n, NULL); }
void e0_iq1_m_from_float_ref(const float *x, void *dst, int64_t n) { e0_quantize_iq1_m(x, dst, n, NULL); }
