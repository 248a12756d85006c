/* qspeed_iq.c — a fixed amount of kernel work, for counting CPU cycles with perf (wall time on a
 * shared machine is noise; cycles:u of the process are not). Built by `make` into
 * build/tools/qspeed_iq. Run:
 *
 *   E0_SIMD=avx2 perf stat -e cycles:u,instructions:u build/tools/qspeed_iq TYPE WAY REPS [N [ROWS [NT]]]
 *
 * TYPE is a type name (iq2_xxs, iq4_xs, mxfp4, ...); WAY is `dot` (vec_dot of one token over
 * every row: decode) or `gemm` (the prefill GEMM, E0_GEMM_ROWS rows x E0_GEMM_TOKENS tokens a
 * call, as matmul calls it). The work: one expert matrix of Qwen3-30B-A3B (768 rows of n =
 * 2048, cache resident), REPS passes. The weights are random bytes with every block's scale
 * set to a normal value (the timings do not depend on the values); run with REPS = 0 for the
 * setup's cycles, to subtract. Prints a checksum so the work cannot be optimized away.
 * N, ROWS, NT override the shape (row length, rows, the gemm's tokens per call); e.g. a
 * gpt-oss-20b expert matrix: `qspeed_iq mxfp4 dot 10 2880 2880`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant.h"

int main(int argc, char **argv) {
    if (argc < 4 || argc > 7) {
        fprintf(stderr, "usage: qspeed_iq TYPE dot|gemm REPS [N [ROWS [NT]]]\n");
        return 2;
    }
    const int N = argc > 4 ? atoi(argv[4]) : 2048, ROWS = argc > 5 ? atoi(argv[5]) : 768;
    const int NT = argc > 6 ? atoi(argv[6]) : E0_GEMM_TOKENS;
    int type = -1;
    for (int k = 0; k < E0_TYPE_COUNT; k++) {
        const e0_type_traits *t = e0_type_traits_of((uint32_t)k);
        if (t && !strcmp(t->name, argv[1])) type = k;
    }
    const int gemm = !strcmp(argv[2], "gemm"), reps = atoi(argv[3]);
    if (type < 0 || (!gemm && strcmp(argv[2], "dot")) || reps < 0 || N <= 0 || N > (1 << 20) || ROWS <= 0 ||
        ROWS > (1 << 16) || NT < 1 || NT > E0_GEMM_TOKENS) {
        fprintf(stderr, "qspeed_iq: bad type, way or count\n");
        return 2;
    }
    const e0_type_traits *t = e0_type_traits_of((uint32_t)type);
    const e0_kernels kn = *e0_kernels_of((uint32_t)type);
    if (N % t->block_size) {
        fprintf(stderr, "qspeed_iq: N must be a multiple of %d\n", (int)t->block_size);
        return 2;
    }
    if (gemm && !kn.gemm) {
        fprintf(stderr, "qspeed_iq: %s has no gemm at this level\n", t->name);
        return 2;
    }
    const size_t row_bytes = e0_row_size((uint32_t)type, N), a_stride = e0_row_size((uint32_t)t->vec_dot_type, N);
    uint8_t *w = malloc(row_bytes * ROWS), *a = malloc(a_stride * E0_GEMM_TOKENS);
    float *x = malloc(sizeof(float) * N), *out = malloc(sizeof(float) * ROWS * E0_GEMM_TOKENS);
    if (!w || !a || !x || !out) return 1;
    uint64_t st = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < row_bytes * ROWS; i++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        w[i] = (uint8_t)(st >> 56);
    }
    /* every block's first byte(s) are its scale: fp16 1/64 (0x2400), or E8M0 2^0 for mxfp4 */
    for (size_t b = 0; b < row_bytes * ROWS; b += t->type_size) {
        if (type == E0_TYPE_MXFP4) w[b] = 127;
        else w[b] = 0x00, w[b + 1] = 0x24;
    }
    for (int k = 0; k < E0_GEMM_TOKENS; k++) {
        for (int i = 0; i < N; i++) x[i] = (float)(((i + 31 * k) * 7919) % 1000) / 500.0f - 1.0f;
        e0_type_traits_of((uint32_t)t->vec_dot_type)->from_float_ref(x, a + (size_t)k * a_stride, N);
    }
    double check = 0;
    for (int rep = 0; rep < reps; rep++) {
        if (gemm)
            for (int r = 0; r < ROWS; r += E0_GEMM_ROWS)
                kn.gemm(N, ROWS - r < E0_GEMM_ROWS ? ROWS - r : E0_GEMM_ROWS, w + (size_t)r * row_bytes, row_bytes, NT, a, a_stride,
                        out + r, ROWS);
        else
            for (int r = 0; r < ROWS; r++) kn.vec_dot(N, out + r, w + (size_t)r * row_bytes, a);
        check += out[rep % ROWS];
    }
    printf("%s %s x%d: %d row-token dots, checksum %.6g\n", t->name, argv[2], reps,
           reps * ROWS * (gemm ? NT : 1), check);
    free(w), free(a), free(x), free(out);
    return 0;
}
