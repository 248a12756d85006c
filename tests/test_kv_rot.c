/* test_kv_rot.c — the Hadamard rotation around a quantized KV cache (src/engine/kv_rot.c):
 * e0_kv_hadamard against the explicit orthonormal Walsh-Hadamard matrix (built the way llama.cpp's
 * llama-kv-cache.cpp builds it: H[0][0] = 1/sqrt(n), then [[H, H], [H, -H]] doubling), that it is
 * its own inverse, that chunks are rotated independently, and the sizes llama.cpp picks. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "t.h"
#include "engine/ctx_impl.h"
#include "quant/quant.h"

static float rnd(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* H [n][n], llama.cpp's construction */
static void hadamard_matrix(float *h, int n) {
    h[0] = 1.0f / sqrtf((float)n);
    for (int s = 1; s < n; s *= 2)
        for (int i = 0; i < s; i++)
            for (int j = 0; j < s; j++) {
                const float v = h[i * n + j];
                h[(i + s) * n + j] = v;
                h[i * n + j + s] = v;
                h[(i + s) * n + j + s] = -v;
            }
}

static void test_matches_matrix(void) {
    uint32_t seed = 7;
    for (int n = 64; n <= 512; n *= 2) {
        float *h = malloc((size_t)n * n * sizeof *h), *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y),
              *z = malloc((size_t)n * sizeof *z);
        hadamard_matrix(h, n);
        for (int i = 0; i < n; i++) x[i] = z[i] = rnd(&seed) * (i % 17 == 0 ? 30.0f : 1.0f);
        double norm = 0;
        for (int i = 0; i < n; i++) {
            double s = 0;
            for (int j = 0; j < n; j++) s += (double)h[i * n + j] * x[j];
            y[i] = (float)s;
            norm += s * s;
        }
        e0_kv_hadamard(z, n, n);
        double err = 0;
        for (int i = 0; i < n; i++) err += ((double)z[i] - y[i]) * ((double)z[i] - y[i]);
        CHECKF(sqrt(err / norm) < 1e-6, "n %d: rel err %g against the matrix", n, sqrt(err / norm));
        e0_kv_hadamard(z, n, n); /* H H = I */
        double back = 0, xn = 0;
        for (int i = 0; i < n; i++) back += ((double)z[i] - x[i]) * ((double)z[i] - x[i]), xn += (double)x[i] * x[i];
        CHECKF(sqrt(back / xn) < 1e-6, "n %d: H H x != x (rel %g)", n, sqrt(back / xn));
        free(h), free(x), free(y), free(z);
    }
}

static void test_chunks(void) {
    /* a row of 3 heads of 128 rotated with nrot 64: six independent chunks */
    uint32_t seed = 3;
    float a[384], b[384];
    for (int i = 0; i < 384; i++) a[i] = b[i] = rnd(&seed);
    e0_kv_hadamard(a, 384, 64);
    for (int c = 0; c < 6; c++) e0_kv_hadamard(b + c * 64, 64, 64);
    int same = 1;
    for (int i = 0; i < 384; i++) same &= a[i] == b[i];
    CHECKF(same, "a row is not rotated chunk by chunk");
}

static void test_sizes(void) {
    e0_hparams hp = {0};
    static const struct { int64_t hd; int rk; } cases[] = {{64, 64}, {128, 128}, {192, 64}, {256, 256}, {320, 64}, {576, 64}, {96, 0}, {32, 0}, {160, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hp.head_dim = cases[i].hd;
        CHECKF(e0_kv_rot_k(&hp, E0_TYPE_Q8_0) == cases[i].rk, "head_dim %lld: rot_k %d, expected %d", (long long)cases[i].hd,
               e0_kv_rot_k(&hp, E0_TYPE_Q8_0), cases[i].rk);
        CHECK(e0_kv_rot_k(&hp, E0_TYPE_Q4_0) == cases[i].rk);
        CHECK(e0_kv_rot_v(&hp, E0_TYPE_Q8_0) == (cases[i].hd % 64 ? 0 : 64));
        CHECK(e0_kv_rot_k(&hp, E0_TYPE_F16) == 0 && e0_kv_rot_k(&hp, E0_TYPE_F32) == 0 && e0_kv_rot_v(&hp, E0_TYPE_BF16) == 0);
    }
}

int main(void) {
    RUN(test_matches_matrix);
    RUN(test_chunks);
    RUN(test_sizes);
    return T_DONE();
}
