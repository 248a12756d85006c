/* qspeed_gemm.c — micro benchmark of the prefill kernels: the 4-token dot (vec_dot_4) and the
 * GEMM kernel (gemm) at 8, E0_GEMM_TOKENS (16) and, where the type's gemm takes them, E0_GEMM_TOKENS_MAX (32)
 * tokens, against calls of vec_dot. Built by `make` into build/tools/qspeed_gemm. Run:
 *
 *   build/tools/qspeed_gemm
 *
 * One expert's gate matrix of Qwen3-30B-A3B (768 rows of n = 2048, cache resident) times 4
 * token rows (Q8_K / Q8_0), single-threaded, for each type and SIMD level with a vec_dot_4.
 * Reports row-token dot products per microsecond for each way and gemm's ratio to vec_dot_4
 * (or to vec_dot where a level has no vec_dot_4); best of 200 passes, the ways alternated (the
 * machine is shared: best-of filters out the time others take). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant.h"
#include "base/util.h"

static volatile float sink;

enum { N = 2048, ROWS = 768, REPS = 200, WAYS = 5 };

/* One pass over the rows one way: 0 = vec_dot on 4 tokens, E0_DOT_TOKENS = vec_dot_4, -N = gemm
 * on N tokens. Returns the tokens done per row. */
static int pass(const e0_kernels *t, const uint8_t *w, size_t row_bytes, const uint8_t *a, size_t a_stride, int way, float *out) {
    const int nt = way < 0 ? -way : E0_DOT_TOKENS;
    for (int r = 0; r < ROWS; r++) {
        const uint8_t *wr = w + (size_t)r * row_bytes;
        if (way == 0)
            for (int k = 0; k < nt; k++) t->vec_dot(N, &out[k * ROWS + r], wr, a + (size_t)k * a_stride);
        else if (way > 0) t->vec_dot_4(N, &out[r], ROWS, wr, a, a_stride);
        else if (r % E0_GEMM_ROWS == 0) /* as matmul calls it: E0_GEMM_ROWS rows at a time */
            t->gemm(N, ROWS - r < E0_GEMM_ROWS ? ROWS - r : E0_GEMM_ROWS, wr, row_bytes, nt, a, a_stride, &out[r], ROWS);
    }
    return nt;
}

/* The ways in alternation, REPS rounds; rate[i] = dot products per us of the best pass of way i
 * (0 where the way has no kernel). Alternating puts every way in the same moments of a shared
 * machine, so their ratios are steadier than those of back-to-back runs. */
static void bench(const e0_kernels *t, const uint8_t *w, size_t row_bytes, const uint8_t *a, size_t a_stride,
                  const int ways[WAYS], double rate[WAYS]) {
    static float out[ROWS * E0_GEMM_TOKENS_MAX];
    double best[WAYS];
    int nt[WAYS] = {0};
    for (int i = 0; i < WAYS; i++) best[i] = 1e30;
    for (int rep = 0; rep < REPS; rep++) {
        for (int i = 0; i < WAYS; i++) {
            if ((ways[i] > 0 && !t->vec_dot_4) || (ways[i] < 0 && (!t->gemm || -ways[i] > t->gemm_tokens))) continue;
            const double t0 = e0_now();
            nt[i] = pass(t, w, row_bytes, a, a_stride, ways[i], out);
            const double dt = e0_now() - t0;
            sink = out[rep % (ROWS * nt[i])];
            if (dt < best[i]) best[i] = dt;
        }
    }
    for (int i = 0; i < WAYS; i++) rate[i] = nt[i] ? (double)ROWS * nt[i] / best[i] / 1e6 : 0;
}

int main(void) {
    float *x = malloc(sizeof(float) * N * ROWS);
    if (!x) return 1;
    for (int64_t i = 0; i < (int64_t)N * ROWS; i++) x[i] = (float)((i * 7919) % 1000) / 500.0f - 1.0f + (float)(i % 13) * 0.01f;
    const int top = e0_simd_level();
    const size_t a_stride = e0_row_size(E0_TYPE_Q8_K, N); /* the largest activation row */
    uint8_t *a = aligned_alloc(64, (a_stride * E0_GEMM_TOKENS_MAX + 63) / 64 * 64); /* as the engine's scratch */
    if (!a) return 1;
    printf("%d rows x n %d, single thread, row-token dot products per us (gemm_N: N tokens)\n", ROWS, N);
    printf("%-6s %-7s %9s %9s %9s %9s %9s %7s\n", "type", "level", "vec_dot", "vec_dot_4", "gemm_8", "gemm_16", "gemm_32", "ratio");
    const int types[] = {E0_TYPE_Q4_K, E0_TYPE_Q4_KX, E0_TYPE_Q5_K,   E0_TYPE_Q6_K,
                         E0_TYPE_Q6_KX, E0_TYPE_Q4_KV, E0_TYPE_Q6_KV, E0_TYPE_Q8_0,  E0_TYPE_IQ4_XS, E0_TYPE_MXFP4, E0_TYPE_IQ2_XXS};
    for (int level = E0_SIMD_AVX2; level <= top; level++) {
        for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
            const e0_type_traits *t = e0_type_traits_of((uint32_t)types[ti]);
            const e0_kernels kn = e0_kernels_at(t, level);
            if (!kn.vec_dot_4 && !kn.gemm) continue;
            for (int k = 0; k < E0_GEMM_TOKENS_MAX; k++) e0_type_traits_of((uint32_t)t->vec_dot_type)->from_float_ref(x + k * N, a + k * a_stride, N);
            const size_t row_bytes = e0_row_size((uint32_t)types[ti], N);
            uint8_t *w = aligned_alloc(64, (row_bytes * ROWS + 63) / 64 * 64);
            if (!w) return 1;
            t->from_float_ref(x, w, (int64_t)N * ROWS);
            static const int ways[WAYS] = {0, E0_DOT_TOKENS, -8, -E0_GEMM_TOKENS, -E0_GEMM_TOKENS_MAX};
            double rate[WAYS];
            bench(&kn, w, row_bytes, a, a_stride, ways, rate);
            const double one = rate[0], four = rate[1], g8 = rate[2], g16 = rate[3], g32 = rate[4];
            const double best = g32 > g16 ? g32 : g16 > g8 ? g16 : g8;
            printf("%-6s %-7s %9.1f %9.1f %9.1f %9.1f %9.1f %7.2f\n", t->name, e0_simd_name(level), one, four, g8, g16, g32,
                   best ? best / (four ? four : one) : four / one);
            free(w);
        }
    }
    free(x);
    free(a);
    return 0;
}
