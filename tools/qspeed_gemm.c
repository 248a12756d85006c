/* qspeed_gemm.c — micro benchmark of the prefill kernels: the 4-token dot (vec_dot_4) and the
 * GEMM kernel (gemm) at 4 and E0_GEMM_TOKENS tokens, against calls of vec_dot. Built by `make` into build/tools/qspeed_gemm. Run:
 *
 *   build/tools/qspeed_gemm
 *
 * One expert's gate matrix of Qwen3-30B-A3B (768 rows of n = 2048, cache resident) times 4
 * token rows (Q8_K / Q8_0), single-threaded, for each type and SIMD level with a vec_dot_4.
 * Reports row-token dot products per microsecond for each way and gemm's ratio to vec_dot_4
 * (or to vec_dot where a level has no vec_dot_4); best of 100
 * runs (the machine is shared: best-of filters out the time others take). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant.h"
#include "base/util.h"

static volatile float sink;

enum { N = 2048, ROWS = 768, REPS = 100 };

/* way: 0 = vec_dot on 4 tokens, E0_DOT_TOKENS = vec_dot_4, -N = gemm on N tokens */
static double bench(const e0_kernels *t, const uint8_t *w, size_t row_bytes, const uint8_t *a, size_t a_stride, int way) {
    const int nt = way < 0 ? -way : E0_DOT_TOKENS;
    float out[ROWS * E0_GEMM_TOKENS];
    double best = 1e30;
    for (int rep = 0; rep < REPS; rep++) {
        const double t0 = e0_now();
        for (int r = 0; r < ROWS; r++) {
            const uint8_t *wr = w + (size_t)r * row_bytes;
            if (way == 0)
                for (int k = 0; k < nt; k++) t->vec_dot(N, &out[k * ROWS + r], wr, a + (size_t)k * a_stride);
            else if (way > 0) t->vec_dot_4(N, &out[r], ROWS, wr, a, a_stride);
            else t->gemm(N, nt, &out[r], ROWS, wr, a, a_stride);
        }
        const double dt = e0_now() - t0;
        sink = out[rep % (ROWS * nt)];
        if (dt < best) best = dt;
    }
    return (double)ROWS * nt / best / 1e6;
}

int main(void) {
    float *x = malloc(sizeof(float) * N * ROWS);
    if (!x) return 1;
    for (int64_t i = 0; i < (int64_t)N * ROWS; i++) x[i] = (float)((i * 7919) % 1000) / 500.0f - 1.0f + (float)(i % 13) * 0.01f;
    const int top = e0_simd_level();
    const size_t a_stride = e0_row_size(E0_TYPE_Q8_K, N); /* the largest activation row */
    uint8_t *a = malloc(a_stride * E0_GEMM_TOKENS);
    if (!a) return 1;
    printf("%d rows x n %d, single thread, row-token dot products per us (gemm_N: N tokens)\n", ROWS, N);
    printf("%-6s %-7s %9s %9s %9s %9s %7s\n", "type", "level", "vec_dot", "vec_dot_4", "gemm_4", "gemm_8", "ratio");
    const int types[] = {E0_TYPE_Q4_K, E0_TYPE_Q5_K, E0_TYPE_Q6_K, E0_TYPE_Q8_0};
    for (int level = E0_SIMD_AVX2; level <= top; level++) {
        for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
            const e0_type_traits *t = e0_type_traits_of((uint32_t)types[ti]);
            const e0_kernels kn = e0_kernels_at(t, level);
            if (!kn.vec_dot_4 && !kn.gemm) continue;
            for (int k = 0; k < E0_GEMM_TOKENS; k++) e0_type_traits_of((uint32_t)t->vec_dot_type)->from_float_ref(x + k * N, a + k * a_stride, N);
            const size_t row_bytes = e0_row_size((uint32_t)types[ti], N);
            uint8_t *w = malloc(row_bytes * ROWS);
            if (!w) return 1;
            t->from_float_ref(x, w, (int64_t)N * ROWS);
            const double one = bench(&kn, w, row_bytes, a, a_stride, 0);
            const double four = kn.vec_dot_4 ? bench(&kn, w, row_bytes, a, a_stride, E0_DOT_TOKENS) : 0;
            double g4 = 0, g8 = 0;
            if (kn.gemm) {
                g4 = bench(&kn, w, row_bytes, a, a_stride, -E0_DOT_TOKENS);
                g8 = bench(&kn, w, row_bytes, a, a_stride, -E0_GEMM_TOKENS);
            }
            const double best = g8 > g4 ? g8 : g4;
            printf("%-6s %-7s %9.1f %9.1f %9.1f %9.1f %7.2f\n", t->name, e0_simd_name(level), one, four, g4, g8,
                   best ? best / (four ? four : one) : four / one);
            free(w);
        }
    }
    free(x);
    free(a);
    return 0;
}
