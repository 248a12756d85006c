/* kernels.h — the numeric building blocks of the forward pass (norms, RoPE, softmax, SwiGLU,
 * matrix-vector products). Elementwise kernels are plain C the compiler vectorizes; matrix
 * products go through the type table's vec_dot and are split across the thread pool. */
#ifndef E0_KERNELS_H
#define E0_KERNELS_H

#include <stdint.h>

#include "engine/model.h"
#include "base/threadpool.h"

void e0_rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps);
void e0_softmax(float *x, int64_t n);
/* a[i] = silu(a[i]) * b[i] */
void e0_swiglu(float *a, const float *b, int64_t n);
/* Rotate one head vector of head_dim values at position pos (first n_rot dims). */
void e0_rope(float *x, int64_t n_rot, int pos, float base, bool neox);
/* e0_rope in two steps, for many heads at one position: cs [n_rot] = the (cos, sin) pairs of
 * position pos (computed once, not once per head), then x rotated by them; the same bits as e0_rope. */
void e0_rope_cs(float *cs, int64_t n_rot, int pos, float base);
/* fn(arg, i0, i1) on parts of [0, n) in the pool's threads (all of it in the caller when n is
 * below min_n or the pool has one thread): for per-token work that would otherwise run on one
 * thread while the others wait. fn must write only what rows i0 .. i1-1 own. */
typedef void (*e0_rows_fn)(void *arg, long i0, long i1);
void e0_pool_rows(e0_pool *pool, long n, long min_n, e0_rows_fn fn, void *arg);
/* a [rows][n] = silu(a) * b, rows split over the pool (e0_swiglu's bits) */
void e0_swiglu_rows(e0_pool *pool, float *a, const float *b, long rows, int64_t n);
/* out [rows][n] = rmsnorm(x [rows][n]) * w, rows split over the pool (e0_rmsnorm's bits) */
void e0_rmsnorm_rows(e0_pool *pool, float *out, const float *x, const float *w, long rows, int64_t n, float eps);
void e0_rope_apply(float *x, int64_t n_rot, const float *cs, bool neox);
/* y += a * x (n floats) and the F32 dot product, with the best SIMD the CPU has. */
void e0_axpy(int64_t n, float a, const float *x, float *y);
float e0_dot_f32(int64_t n, const float *x, const float *y);
/* A dequantized copy of row `row` of w into out (n = w->ne[0] floats). */
void e0_get_row(const e0_weight *w, int64_t row, float *out);

/* y[t][r] = W[r] . x[t] for several matrices at once, rows split across threads.
 * xq holds the n_tok activation rows already converted to W's vec_dot_type. */
typedef struct e0_matmul {
    const uint8_t *w;   /* first row */
    uint32_t type;
    int64_t n_in, n_out;
    size_t row_bytes;
    const uint8_t *xq;
    size_t xq_stride;   /* bytes between activation rows */
    int n_tok;
    float *y;
    int64_t y_stride;   /* floats between output rows (one per token) */
} e0_matmul;

void e0_matmul_run(e0_pool *pool, const e0_matmul *jobs, int n_jobs);
/* Convert n_tok rows of n floats (stride n) to `type` (a vec_dot_type), rows split across threads. */
void e0_quantize_rows(e0_pool *pool, uint32_t type, const float *x, int n_tok, int64_t n, uint8_t *out,
                      size_t out_stride);

#endif
