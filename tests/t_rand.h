/* t_rand.h — what the kernel tests (test_quant_*.c) share: deterministic random numbers
 * (splitmix64), rows of test values of four kinds, a checked calloc and a little-endian store.
 * Each test binary has its own stream: define T_RNG_SEED before including this header. */
#ifndef E0_T_RAND_H
#define E0_T_RAND_H
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#ifndef T_RNG_SEED
#error "define T_RNG_SEED (the test's random stream) before including t_rand.h"
#endif

static uint64_t rng_state = T_RNG_SEED;
static inline uint64_t rng_u64(void) {
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
/* Uniform in [0, 1), 53 bits. */
static inline double rng_unit(void) { return (double)(rng_u64() >> 11) / 9007199254740992.0; }
/* Standard normal (Box-Muller). */
static inline float rng_gauss(void) {
    double u1 = rng_unit(), u2 = rng_unit();
    if (u1 < 1e-300) u1 = 1e-300;
    return (float)(sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2));
}

/* Row kinds: 0 gaussian, 1 gaussian with an offset (exercises the mins), 2 small uniform,
 * 3 heavy outliers. */
static inline void fill_row(float *x, int64_t n, int kind) {
    for (int64_t i = 0; i < n; i++) {
        switch (kind) {
        case 0: x[i] = rng_gauss(); break;
        case 1: x[i] = 0.3f + 0.1f * rng_gauss(); break;
        case 2: x[i] = (float)(2 * rng_unit() - 1) * 0.02f; break;
        default: x[i] = rng_gauss() * (rng_unit() < 0.02 ? 20.0f : 1.0f); break;
        }
    }
}

/* Zeroed memory of n bytes (at least 1); aborts when there is none. */
static inline void *xalloc(size_t n) {
    void *p = calloc(1, n ? n : 1);
    if (!p) abort();
    return p;
}

/* v as 2 little-endian bytes at p. */
static inline void le16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
#endif
