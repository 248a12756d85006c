/* kernels_avx2.c — AVX2/FMA versions of the elementwise kernels of kernels.c (compiled with
 * -mavx2 -mfma; only called when the CPU has them). */
#include <immintrin.h>
#include <stdint.h>

#include "engine/kernels_impl.h"

void e0_axpy_f32_avx2(int64_t n, float a, const float *x, float *y) {
    const __m256 va = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; i++) y[i] += a * x[i];
}
