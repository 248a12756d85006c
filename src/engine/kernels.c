/* kernels.c — norms, RoPE, softmax, SwiGLU and threaded matrix products (see kernels.h).
 * Accumulations that llama.cpp does in double (RMSNorm, softmax sums) are done in double here
 * too, so F32 models agree with it to ~1e-6. */
#include "engine/kernels.h"

#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "engine/kernels_impl.h"
#include "quant/quant.h"

void e0_rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps) {
    double ss = 0;
    for (int64_t i = 0; i < n; i++) ss += (double)(x[i] * x[i]);
    float scale = 1.0f / sqrtf((float)(ss / (double)n) + eps);
    for (int64_t i = 0; i < n; i++) out[i] = x[i] * scale * w[i];
}

void e0_softmax(float *x, int64_t n) {
    float max = -INFINITY;
    for (int64_t i = 0; i < n; i++)
        if (x[i] > max) max = x[i];
    double sum = 0;
    for (int64_t i = 0; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += x[i];
    }
    float inv = (float)(1.0 / sum);
    for (int64_t i = 0; i < n; i++) x[i] *= inv;
}

void e0_swiglu(float *a, const float *b, int64_t n) {
    for (int64_t i = 0; i < n; i++) a[i] = a[i] / (1.0f + expf(-a[i])) * b[i];
}

/* Angles as ggml computes them: theta_i = pos * base^(-2i/n_rot), by repeated multiplication. */
void e0_rope(float *x, int64_t n_rot, int pos, float base, bool neox) {
    const float theta_scale = powf(base, -2.0f / (float)n_rot);
    float theta = (float)pos;
    for (int64_t i = 0; i < n_rot; i += 2) {
        const float c = cosf(theta), s = sinf(theta);
        theta *= theta_scale;
        int64_t i0 = neox ? i / 2 : i, i1 = neox ? i / 2 + n_rot / 2 : i + 1;
        const float x0 = x[i0], x1 = x[i1];
        x[i0] = x0 * c - x1 * s;
        x[i1] = x0 * s + x1 * c;
    }
}

void e0_rope_cs(float *cs, int64_t n_rot, int pos, float base) {
    const float theta_scale = powf(base, -2.0f / (float)n_rot);
    float theta = (float)pos;
    for (int64_t i = 0; i < n_rot; i += 2) {
        cs[i] = cosf(theta), cs[i + 1] = sinf(theta);
        theta *= theta_scale;
    }
}

void e0_rope_apply(float *x, int64_t n_rot, const float *cs, bool neox) {
    for (int64_t i = 0; i < n_rot; i += 2) {
        const float c = cs[i], s = cs[i + 1];
        int64_t i0 = neox ? i / 2 : i, i1 = neox ? i / 2 + n_rot / 2 : i + 1;
        const float x0 = x[i0], x1 = x[i1];
        x[i0] = x0 * c - x1 * s;
        x[i1] = x0 * s + x1 * c;
    }
}

typedef struct {
    e0_rows_fn fn;
    void *arg;
    long n;
} rows_task;

static void rows_worker(void *arg, int ith, int nth) {
    const rows_task *t = arg;
    long lo, hi;
    e0_split(t->n, ith, nth, &lo, &hi);
    if (hi > lo) t->fn(t->arg, lo, hi);
}

void e0_pool_rows(e0_pool *pool, long n, long min_n, e0_rows_fn fn, void *arg) {
    if (n <= 0) return;
    if (n < min_n || !pool || e0_pool_size(pool) < 2) {
        fn(arg, 0, n);
        return;
    }
    rows_task t = {fn, arg, n};
    e0_pool_run(pool, rows_worker, &t);
}

typedef struct {
    float *a, *out;
    const float *b, *x, *w;
    int64_t n;
    float eps;
} rowwise_args;

static void swiglu_part(void *arg, long i0, long i1) {
    const rowwise_args *r = arg;
    e0_swiglu(r->a + (size_t)i0 * (size_t)r->n, r->b + (size_t)i0 * (size_t)r->n, (int64_t)(i1 - i0) * r->n);
}

void e0_swiglu_rows(e0_pool *pool, float *a, const float *b, long rows, int64_t n) {
    rowwise_args r = {.a = a, .b = b, .n = n};
    e0_pool_rows(pool, rows, 32, swiglu_part, &r); /* decode's 8 expert rows stay on one thread */
}

static void rmsnorm_part(void *arg, long i0, long i1) {
    const rowwise_args *r = arg;
    for (long i = i0; i < i1; i++) e0_rmsnorm(r->out + (size_t)i * (size_t)r->n, r->x + (size_t)i * (size_t)r->n, r->w, r->n, r->eps);
}

void e0_rmsnorm_rows(e0_pool *pool, float *out, const float *x, const float *w, long rows, int64_t n, float eps) {
    rowwise_args r = {.out = out, .x = x, .w = w, .n = n, .eps = eps};
    e0_pool_rows(pool, rows, 16, rmsnorm_part, &r);
}

void e0_axpy(int64_t n, float a, const float *x, float *y) {
    if (e0_simd_level() >= E0_SIMD_AVX2) {
        e0_axpy_f32_avx2(n, a, x, y);
        return;
    }
    for (int64_t i = 0; i < n; i++) y[i] += a * x[i];
}

float e0_dot_f32(int64_t n, const float *x, const float *y) {
    float s;
    e0_kernels_of(E0_TYPE_F32)->vec_dot(n, &s, x, y);
    return s;
}

void e0_get_row(const e0_weight *w, int64_t row, float *out) {
    e0_type_traits_of(w->type)->to_float(w->data + (size_t)row * w->row_bytes, out, w->ne[0]);
}

/* ---- matrix products ---- */

/* Rows are handed out in blocks of ROW_BLOCK. For prefill, one block at a time from a shared
 * counter: the jobs of one dispatch (the experts of a layer) have different token counts, and the
 * machine may be shared, so a fixed split leaves one thread waiting. For decode (one token
 * everywhere) the blocks are cheap and equal, and a fixed split avoids the counter's cache-line
 * traffic. Which thread computes a row never changes its result. */
typedef struct {
    const e0_matmul *jobs;
    int n_jobs;
    int64_t total_blocks;
    bool dynamic;
    _Atomic int64_t next_block;
} matmul_task;

#define ROW_BLOCK 32 /* = E0_GEMM_ROWS: one gemm call per block (its per-call work on the tokens is shared by more rows) */

static int64_t row_blocks(const e0_matmul *m) { return (m->n_out + ROW_BLOCK - 1) / ROW_BLOCK; }

/* Rows r0..r1-1 of one job for all its tokens. With a gemm kernel (1..E0_GEMM_TOKENS tokens per
 * call, each weight block unpacked once per call): the tokens in equal groups of at most
 * E0_GEMM_TOKENS (or the type's larger gemm_tokens), so no group is a lone leftover token.
 * Otherwise groups of E0_DOT_TOKENS through vec_dot_4, the rest one by one. A single token
 * always takes vec_dot (decode). Every way gives each token the bits of vec_dot, so results
 * never depend on the grouping. */
static void matmul_rows(const e0_matmul *m, int64_t r0, int64_t r1) {
    const e0_kernels *k = e0_kernels_of(m->type);
    const e0_vec_dot_fn dot = k->vec_dot;
    const e0_vec_dot_4_fn dot4 = k->vec_dot_4;
    const e0_gemm_fn gemm = k->gemm;
    int t = 0;
    if (gemm && m->n_tok > 1) {
        const int max_nt = k->gemm_tokens > E0_GEMM_TOKENS ? k->gemm_tokens : E0_GEMM_TOKENS; /* the type's own, if more */
        const int groups = (m->n_tok + max_nt - 1) / max_nt;
        for (int g = 0; g < groups; g++) {
            const int t0 = (int)((int64_t)m->n_tok * g / groups), nt = (int)((int64_t)m->n_tok * (g + 1) / groups) - t0;
            const uint8_t *x = m->xq + (size_t)t0 * m->xq_stride;
            float *y = m->y + (size_t)t0 * (size_t)m->y_stride;
            for (int64_t r = r0; r < r1; r += E0_GEMM_ROWS) {
                const int nr = (int)(r1 - r < E0_GEMM_ROWS ? r1 - r : E0_GEMM_ROWS);
                gemm(m->n_in, nr, m->w + (size_t)r * m->row_bytes, m->row_bytes, nt, x, m->xq_stride, &y[r], (size_t)m->y_stride);
            }
        }
        return;
    }
    for (; dot4 && t + E0_DOT_TOKENS <= m->n_tok; t += E0_DOT_TOKENS) {
        const uint8_t *x = m->xq + (size_t)t * m->xq_stride;
        float *y = m->y + (size_t)t * (size_t)m->y_stride;
        for (int64_t r = r0; r < r1; r++)
            dot4(m->n_in, &y[r], (size_t)m->y_stride, m->w + (size_t)r * m->row_bytes, x, m->xq_stride);
    }
    for (; t < m->n_tok; t++) {
        const uint8_t *x = m->xq + (size_t)t * m->xq_stride;
        float *y = m->y + (size_t)t * (size_t)m->y_stride;
        for (int64_t r = r0; r < r1; r++) dot(m->n_in, &y[r], m->w + (size_t)r * m->row_bytes, x);
    }
}

static void matmul_worker(void *arg, int ith, int nth) {
    matmul_task *task = arg;
    long lo = 0, hi = 0; /* the fixed split's range */
    if (!task->dynamic) e0_split(task->total_blocks, ith, nth, &lo, &hi);
    int j = 0;
    int64_t base = 0; /* first block index of job j; each thread takes blocks in increasing order */
    for (;;) {
        const int64_t b = task->dynamic ? atomic_fetch_add_explicit(&task->next_block, 1, memory_order_relaxed) : lo++;
        if (b >= (task->dynamic ? task->total_blocks : hi)) return;
        while (b >= base + row_blocks(&task->jobs[j])) base += row_blocks(&task->jobs[j++]);
        const e0_matmul *m = &task->jobs[j];
        const int64_t r0 = (b - base) * ROW_BLOCK, r1 = r0 + ROW_BLOCK < m->n_out ? r0 + ROW_BLOCK : m->n_out;
        matmul_rows(m, r0, r1);
    }
}

void e0_matmul_run(e0_pool *pool, const e0_matmul *jobs, int n_jobs) {
    matmul_task task = {.jobs = jobs, .n_jobs = n_jobs};
    atomic_init(&task.next_block, 0);
    double work = 0; /* multiply-adds */
    for (int j = 0; j < n_jobs; j++) {
        task.total_blocks += row_blocks(&jobs[j]);
        work += (double)jobs[j].n_out * (double)jobs[j].n_in * jobs[j].n_tok;
        if (jobs[j].n_tok > 1) task.dynamic = true;
    }
    /* Waking the other threads costs more than a tiny product. */
    if (work < 32768) matmul_worker(&task, 0, 1);
    else e0_pool_run(pool, matmul_worker, &task);
}

typedef struct {
    uint32_t type;
    const float *x;
    int n_tok;
    int64_t n;
    uint8_t *out;
    size_t out_stride;
} quantize_task;

static void quantize_tokens(void *arg, long lo, long hi) {
    const quantize_task *q = arg;
    const e0_kernels *k = e0_kernels_of(q->type);
    for (long t = lo; t < hi; t++) {
        if (q->type == E0_TYPE_F32) memcpy(q->out + (size_t)t * q->out_stride, q->x + t * q->n, (size_t)q->n * sizeof(float));
        else k->from_float(q->x + t * q->n, q->out + (size_t)t * q->out_stride, q->n);
    }
}

void e0_quantize_rows(e0_pool *pool, uint32_t type, const float *x, int n_tok, int64_t n, uint8_t *out,
                      size_t out_stride) {
    quantize_task q = {type, x, n_tok, n, out, out_stride};
    e0_pool_rows(pool, n_tok, 2, quantize_tokens, &q);
}
