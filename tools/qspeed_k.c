/* qspeed_k.c — micro benchmark of the K-quant dot kernels. Built by `make` into build/tools/qspeed_k.
 *
 *   build/tools/qspeed_k [big_MiB]      (default 64)
 *
 * For each weight type and kernel level, a matrix of rows of n = 2048 (a Qwen3-30B-A3B hidden
 * row) is dotted row by row with one Q8_K activation row, single-threaded, like a decode matvec.
 * Reports GB/s of weight bytes, for a small matrix (1 MiB, cache resident: kernel throughput)
 * and a big one (big_MiB: memory bound once it exceeds the L3; the small one is past a 512 KiB
 * L2 too). Best of 200 / 5 runs
 * (the machine is shared: best-of filters out the time others take). Also times the Q8_K
 * quantizers in GB/s of float input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant.h"
#include "quant/quant_k.h"
#include "base/util.h"

static volatile float sink;

static double bench_dot(e0_vec_dot_fn fn, const uint8_t *w, size_t row_bytes, int64_t rows, int64_t n, const void *a, int reps) {
    double best = 1e30;
    for (int rep = 0; rep < reps; rep++) {
        double t0 = e0_now();
        float acc = 0;
        for (int64_t r = 0; r < rows; r++) {
            float s;
            fn(n, &s, w + (size_t)r * row_bytes, a);
            acc += s;
        }
        double dt = e0_now() - t0;
        sink = acc;
        if (dt < best) best = dt;
    }
    return (double)rows * row_bytes / best / 1e9;
}

int main(int argc, char **argv) {
    const int64_t n = 2048;
    const size_t big_mib = argc > 1 ? (size_t)atoi(argv[1]) : 64;
    printf("simd level %s, n = %lld, single thread, GB/s of weight bytes\n", e0_simd_name(e0_simd_level()), (long long)n);
    float *x = malloc(sizeof(float) * n);
    e0_block_q8_K *a = malloc(e0_row_size(E0_TYPE_Q8_K, n));
    if (!x || !a) return 1;
    for (int64_t i = 0; i < n; i++) x[i] = (float)((i * 7919) % 1000) / 500.0f - 1.0f;
    e0_type_traits_of(E0_TYPE_Q8_K)->from_float_ref(x, a, n);
    /* and q4_K / q6_K repacked (quant_kx.h), against their own activation types */
    const int types[] = {E0_TYPE_Q2_K, E0_TYPE_Q3_K, E0_TYPE_Q4_K, E0_TYPE_Q5_K, E0_TYPE_Q6_K, E0_TYPE_Q4_KX, E0_TYPE_Q6_KX, E0_TYPE_Q4_KV, E0_TYPE_Q6_KV};
    printf("%-6s %-7s %10s %10s\n", "type", "kernel", "1MiB", "big");
    for (int ti = 0; ti < (int)(sizeof types / sizeof types[0]); ti++) {
        const e0_type_traits *t = e0_type_traits_of((uint32_t)types[ti]);
        e0_type_traits_of((uint32_t)t->vec_dot_type)->from_float_ref(x, a, n); /* same size as Q8_K */
        const size_t row_bytes = e0_row_size((uint32_t)types[ti], n);
        const int64_t rows_small = (int64_t)((1u << 20) / row_bytes), rows_big = (int64_t)((big_mib << 20) / row_bytes);
        uint8_t *w = malloc((size_t)rows_big * row_bytes);
        if (!w) return 1;
        t->from_float_ref(x, w, n); /* one real row, copied: the content does not change speed */
        for (int64_t r = 1; r < rows_big; r++) memcpy(w + (size_t)r * row_bytes, w, row_bytes);
        for (int l = 0; l < E0_SIMD_LEVELS; l++) {
            if (!t->vec_dot[l] || e0_simd_level() < l) continue;
            printf("%-6s %-7s %10.2f %10.2f\n", t->name, l ? e0_simd_name(l) : "ref",
                   bench_dot(t->vec_dot[l], w, row_bytes, rows_small, n, a, 200), bench_dot(t->vec_dot[l], w, row_bytes, rows_big, n, a, 5));
        }
        free(w);
    }
    /* Q8_K quantizers: GB/s of float input */
    const int64_t nq = 1 << 20;
    float *xq = malloc(sizeof(float) * nq);
    void *yq = malloc(e0_row_size(E0_TYPE_Q8_K, nq));
    if (!xq || !yq) return 1;
    for (int64_t i = 0; i < nq; i++) xq[i] = (float)((i * 7919) % 1000) / 500.0f - 1.0f;
    e0_from_float_fn qf[2] = {e0_type_traits_of(E0_TYPE_Q8_K)->from_float_ref, e0_kernels_of(E0_TYPE_Q8_K)->from_float};
    for (int l = 0; l < 2; l++) {
        double best = 1e30;
        for (int rep = 0; rep < 5; rep++) {
            double t0 = e0_now();
            qf[l](xq, yq, nq);
            double dt = e0_now() - t0;
            if (dt < best) best = dt;
        }
        printf("q8_K quantize %-10s %8.2f GB/s of f32 input\n", l ? "from_float" : "ref", nq * 4.0 / best / 1e9);
    }
    free(x), free(a), free(xq), free(yq);
    return 0;
}
