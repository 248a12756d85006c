/* matmul_input.c — matrix products on the context's current input: the input rows converted once
 * per weight activation type (Q8_0, Q8_1, Q8_K, ...) and cached until the input changes, and the
 * e0_matmul jobs that read them. Used by the forward pass (forward.c) and the expert predictor
 * (experts_predict.c); calls neither. */
#include <string.h>

#include "engine/ctx_impl.h"
#include "quant/quant.h"

void e0_matmul_input(e0_ctx *c, const float *x, int n_tok, int64_t n) {
    e0_xq_cache *a = &c->xq;
    a->x = x;
    a->n_tok = n_tok;
    a->n = n;
    memset(a->valid, 0, sizeof a->valid);
}

/* Rows of the current input converted to `type` (F32 is the input itself). */
const uint8_t *e0_matmul_input_as(e0_ctx *c, uint32_t type, size_t *stride) {
    e0_xq_cache *a = &c->xq;
    if (type == E0_TYPE_F32) {
        *stride = (size_t)a->n * sizeof(float);
        return (const uint8_t *)a->x;
    }
    int slot = -1;
    for (int i = 0; i < E0_N_XQ_TYPES; i++)
        if (a->valid[i] && a->type[i] == type) {
            *stride = a->stride[i];
            return a->buf[i];
        }
    for (int i = 0; i < E0_N_XQ_TYPES && slot < 0; i++)
        if (!a->valid[i]) slot = i;
    if (slot < 0) slot = 0;
    a->type[slot] = type;
    a->stride[slot] = e0_row_size(type, a->n);
    e0_quantize_rows(c->threads.cur, type, a->x, a->n_tok, a->n, a->buf[slot], a->stride[slot]);
    a->valid[slot] = true;
    *stride = a->stride[slot];
    return a->buf[slot];
}

/* A job computing y [n_tok][ne[1]] = W x for the rows of the current input. */
e0_matmul e0_matmul_job(e0_ctx *c, const e0_weight *w, float *y) {
    size_t stride;
    const uint8_t *xq = e0_matmul_input_as(c, e0_weight_vec_dot_type(w), &stride);
    return (e0_matmul){.w = w->data, .type = w->type, .n_in = w->ne[0], .n_out = w->ne[1], .row_bytes = w->row_bytes,
                       .xq = xq, .xq_stride = stride, .n_tok = c->xq.n_tok, .y = y, .y_stride = w->ne[1]};
}

void e0_matmul_weight(e0_ctx *c, const e0_weight *w, float *y) {
    e0_matmul j = e0_matmul_job(c, w, y);
    e0_matmul_run(c->threads.cur, &j, 1);
}
