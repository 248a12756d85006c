/* kernels_impl.h — internal: SIMD variants of kernels.c's elementwise helpers. */
#ifndef E0_KERNELS_IMPL_H
#define E0_KERNELS_IMPL_H
#include <stdint.h>
void e0_axpy_f32_avx2(int64_t n, float a, const float *x, float *y);
#endif
