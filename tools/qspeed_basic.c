/* qspeed_basic.c — micro benchmark for the quant_basic dot kernels and activation quantizers:
 * GB/s of weight bytes streamed per kernel (ref / avx2 / avx512), single thread, per CPU second, for a matrix
 * that lives in L2 (compute bound) and one far larger than the caches (memory bound).
 * Built by `make` into build/tools/qspeed_basic. Run:
 *   build/tools/qspeed_basic [big_MiB [type]]   (default 1024 MiB, all types) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "quant/quant.h"
#include "base/util.h"

static const uint32_t types[] = {E0_TYPE_F32,  E0_TYPE_F16,  E0_TYPE_BF16, E0_TYPE_Q4_0,
                                 E0_TYPE_Q4_1, E0_TYPE_Q5_0, E0_TYPE_Q5_1, E0_TYPE_Q8_0};

static uint64_t rng = 88172645463325252ull;
static float rnd(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)(rng >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
}

/* Weights fast enough for a GiB: random bits with the exponent bits (float types) or the fp16
 * scale fields (block types) forced into a sane range. Speed does not depend on the values. */
static void fill_weights(uint32_t type, uint8_t *w, size_t bytes) {
    for (size_t i = 0; i + 8 <= bytes; i += 8) {
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        memcpy(w + i, &rng, 8);
    }
    const e0_type_traits *t = e0_type_traits_of(type);
    if (type == E0_TYPE_F32)
        for (size_t i = 0; i + 4 <= bytes; i += 4) {
            uint32_t v;
            memcpy(&v, w + i, 4);
            v = (v & 0x807fffffu) | 0x3f000000u;
            memcpy(w + i, &v, 4);
        }
    else if (type == E0_TYPE_F16 || type == E0_TYPE_BF16)
        for (size_t i = 0; i + 2 <= bytes; i += 2) {
            uint16_t v;
            memcpy(&v, w + i, 2);
            v = type == E0_TYPE_F16 ? (uint16_t)((v & 0x83ffu) | 0x3800u) : (uint16_t)((v & 0x807fu) | 0x3f00u);
            memcpy(w + i, &v, 2);
        }
    else
        for (size_t b = 0; b + t->type_size <= bytes; b += t->type_size) {
            uint16_t d = 0x2000; /* ~0.008 */
            memcpy(w + b, &d, 2);
            if (type == E0_TYPE_Q4_1 || type == E0_TYPE_Q5_1) memcpy(w + b + 2, &d, 2);
        }
}

/* Thread CPU seconds: on a shared machine this leaves out the time other jobs held the core. */
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Run fn over `rows` rows of `n` elements; GB/s of weight bytes, best of 5 trials of ~0.1 s
 * (the best trial is the one least disturbed by other load on the machine). */
static double measure(e0_vec_dot_fn fn, const uint8_t *w, size_t row_bytes, int64_t rows, int64_t n,
                      const void *a, float *out) {
    double best = 0;
    for (int trial = 0; trial < 5; trial++) {
        double t0 = cpu_now(), t;
        int64_t reps = 0;
        do {
            for (int64_t r = 0; r < rows; r++) fn(n, &out[r], w + (size_t)r * row_bytes, a);
            reps++;
            t = cpu_now() - t0;
        } while (t < 0.1);
        double gbs = (double)reps * (double)rows * (double)row_bytes / t / 1e9;
        if (gbs > best) best = gbs;
    }
    return best;
}

int main(int argc, char **argv) {
    size_t big_mib = argc > 1 ? (size_t)atoi(argv[1]) : 1024;
    if (big_mib < 1 || big_mib > 4096) return fprintf(stderr, "big_MiB must be 1..4096\n"), 1;
    const int64_t n = 4096; /* a typical hidden size */
    float *x = malloc((size_t)n * 4), *out = malloc(sizeof(float) * 1000000);
    for (int64_t i = 0; i < n; i++) x[i] = rnd();
    printf("%-6s %-5s %10s %10s %10s\n", "type", "set", "ref", "avx2", "avx512");
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const e0_type_traits *t = e0_type_traits_of(types[ti]);
        if (argc > 2 && strcmp(argv[2], t->name)) continue;
        size_t row_bytes = e0_row_size(types[ti], n);
        uint8_t *a = malloc(e0_row_size((uint32_t)t->vec_dot_type, n));
        e0_kernels_of((uint32_t)t->vec_dot_type)->from_float(x, a, n);
        size_t sizes[2] = {256u << 10, big_mib << 20};
        const char *names[2] = {"L2", "DRAM"};
        for (int si = 0; si < 2; si++) {
            int64_t rows = (int64_t)(sizes[si] / row_bytes);
            uint8_t *w = malloc((size_t)rows * row_bytes);
            fill_weights(types[ti], w, (size_t)rows * row_bytes);
            printf("%-6s %-5s", t->name, names[si]);
            for (int k = 0; k < E0_SIMD_LEVELS; k++) {
                if (!t->vec_dot[k] || e0_simd_level() < k) printf(" %10s", "-");
                else printf(" %10.2f", measure(t->vec_dot[k], w, row_bytes, rows, n, a, out));
            }
            printf("   GB/s\n");
            fflush(stdout);
            free(w);
        }
        free(a);
    }
    /* activation quantizers: GB/s of float input */
    static const uint32_t qt[] = {E0_TYPE_Q8_0, E0_TYPE_Q8_1};
    int64_t m = 1 << 20;
    float *xa = malloc((size_t)m * 4);
    for (int64_t i = 0; i < m; i++) xa[i] = rnd();
    for (int k = 0; k < 2; k++) {
        const e0_type_traits *t = e0_type_traits_of(qt[k]);
        if (argc > 2 && strcmp(argv[2], t->name)) continue;
        uint8_t *q = malloc(e0_row_size(qt[k], m));
        e0_from_float_fn fns[2] = {t->from_float_ref, e0_kernels_of(qt[k])->from_float};
        printf("%-6s quantize (GB/s of f32 input)\n", t->name);
        for (int f = 0; f < 2; f++) {
            double t0 = cpu_now(), dt;
            int reps = 0;
            do fns[f](xa, q, m), reps++;
            while ((dt = cpu_now() - t0) < 0.3);
            printf("   %s: %.2f GB/s\n", f ? "fast" : "ref", (double)reps * m * 4 / dt / 1e9);
        }
        free(q);
    }
    free(xa), free(x), free(out);
    return 0;
}
