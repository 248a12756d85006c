/* attn_ext.c — the forward-pass pieces gpt-oss added (llama.cpp's openai-moe), used by forward.c:
 *   - RoPE with scaling (linear / YaRN) as ggml's rope_ext computes it: per pair i of the n_rot
 *     rotated dims, theta_extrap = pos * base^(-2i/n_rot), theta_interp = freq_scale * theta_extrap,
 *     YaRN mixes them with a ramp over the correction dims [lo, hi] (from beta_fast / beta_slow and
 *     the original context) and scales cos / sin by attn_factor * (1 + 0.1 ln(1 / freq_scale));
 *   - the softmax with an attention sink (one more logit in the denominator, per head);
 *   - the clamped SwiGLU of gpt-oss (ggml_swiglu_oai);
 *   - the KV cache layout with sliding-window layers: a layer of full attention keeps n_ctx rows,
 *     a sliding-window layer a ring of swa_rows = min(n_ctx, n_swa + n_batch - 1) rows (every
 *     key a chunk's queries may see), row of position p = p mod swa_rows.
 * The layout of a model without SWA layers is the one it always had: layer il's rows start at
 * il * n_ctx, position p is row p; in a hybrid (qwen35*, qwen3next) only the attention layers
 * have rows (n_ctx each, in layer order), through the same per-layer tables. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/ctx_impl.h"

/* ---- RoPE with scaling ---- */

/* ggml_rope_yarn_corr_dim: the dimension at which n_rot_turns rotations happen over n_ctx_orig. */
static float corr_dim(int n_dims, int n_ctx_orig, float n_rot_turns, float base) {
    return (float)n_dims * logf((float)n_ctx_orig / (n_rot_turns * 2 * (float)M_PI)) / (2 * logf(base));
}

void e0_rope_cfg_for_layer(const e0_hparams *hp, int64_t il, e0_rope_cfg *r) {
    r->base = e0_layer_is_swa(hp, il) ? hp->rope_base_swa : hp->rope_base;
    r->freq_scale = hp->rope_freq_scale;
    r->ext_factor = hp->rope_ext_factor;
    r->attn_factor = hp->rope_attn_factor;
    r->neox = hp->rope_neox;
    const int n_dims = (int)hp->n_rot;
    const int n_orig = (int)hp->n_ctx_orig;
    float start = floorf(corr_dim(n_dims, n_orig, hp->yarn_beta_fast, r->base));
    float end = ceilf(corr_dim(n_dims, n_orig, hp->yarn_beta_slow, r->base));
    r->corr[0] = start > 0 ? start : 0;
    r->corr[1] = end < (float)(n_dims - 1) ? end : (float)(n_dims - 1);
}

void e0_rope_ext(float *x, int64_t n_rot, int pos, const e0_rope_cfg *r) {
    const float theta_scale = powf(r->base, -2.0f / (float)n_rot);
    float theta_extrap = (float)pos;
    float mscale = r->attn_factor;
    if (r->ext_factor != 0.0f) mscale *= 1.0f + 0.1f * logf(1.0f / r->freq_scale);
    for (int64_t i = 0; i < n_rot; i += 2) {
        const float theta_interp = r->freq_scale * theta_extrap;
        float theta = theta_interp;
        if (r->ext_factor != 0.0f) {
            float y = ((float)(i / 2) - r->corr[0]) / fmaxf(0.001f, r->corr[1] - r->corr[0]);
            float ramp = 1 - fminf(1, fmaxf(0, y));
            float mix = ramp * r->ext_factor;
            theta = theta_interp * (1 - mix) + theta_extrap * mix;
        }
        const float c = cosf(theta) * mscale, s = sinf(theta) * mscale;
        theta_extrap *= theta_scale;
        int64_t i0 = r->neox ? i / 2 : i, i1 = r->neox ? i / 2 + n_rot / 2 : i + 1;
        const float x0 = x[i0], x1 = x[i1];
        x[i0] = x0 * c - x1 * s;
        x[i1] = x0 * s + x1 * c;
    }
}

/* ---- softmax with a sink, clamped SwiGLU ---- */

void e0_softmax_sink(float *x, int64_t n, float sink) {
    float max = sink;
    for (int64_t i = 0; i < n; i++)
        if (x[i] > max) max = x[i];
    double sum = 0;
    for (int64_t i = 0; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += x[i];
    }
    sum += (double)expf(sink - max);
    float inv = (float)(1.0 / sum);
    for (int64_t i = 0; i < n; i++) x[i] *= inv;
}

void e0_swiglu_oai(float *a, const float *b, int64_t n) {
    const float alpha = 1.702f, limit = 7.0f;
    for (int64_t i = 0; i < n; i++) {
        const float g = fminf(a[i], limit);
        const float u = fmaxf(-limit, fminf(b[i], limit));
        a[i] = g / (1.0f + expf(alpha * (-g))) * (u + 1.0f);
    }
}

/* ---- the KV cache layout ---- */

int e0_kv_swa_rows(const e0_hparams *hp, int n_ctx, int n_batch) {
    if (hp->n_swa <= 0) return 0;
    int64_t w = hp->n_swa + (int64_t)n_batch - 1;
    return w < n_ctx ? (int)w : n_ctx;
}

uint64_t e0_kv_layout_rows(const e0_hparams *hp, int n_ctx, int n_batch, size_t *row0, int *rows) {
    const int w = e0_kv_swa_rows(hp, n_ctx, n_batch);
    uint64_t total = 0;
    for (int64_t il = 0; il < hp->n_layer; il++) {
        /* hybrids: a DeltaNet layer has no rows (never indexed) */
        int n = e0_layer_is_recurrent(hp, il) ? 0 : w && e0_layer_is_swa(hp, il) ? w : n_ctx;
        if (row0) row0[il] = (size_t)total;
        if (rows) rows[il] = n;
        total += (uint64_t)n;
    }
    return total;
}

int e0_kv_layout_init(e0_ctx *c, e0_err *e) {
    const e0_hparams *hp = c->hp;
    c->kv.swa_rows = e0_kv_swa_rows(hp, c->n_ctx, c->n_batch);
    c->kv.swa_lo = 0;
    if (!c->kv.swa_rows && !hp->hybrid) return 0; /* layer il's rows start at il * n_ctx */
    c->kv.layer_row0 = calloc((size_t)hp->n_layer, sizeof *c->kv.layer_row0);
    c->kv.layer_rows = calloc((size_t)hp->n_layer, sizeof *c->kv.layer_rows);
    if (!c->kv.layer_row0 || !c->kv.layer_rows) return e0_fail(e, "out of memory");
    e0_kv_layout_rows(hp, c->n_ctx, c->n_batch, c->kv.layer_row0, c->kv.layer_rows);
    return 0;
}

void e0_kv_layout_free(e0_ctx *c) {
    free(c->kv.layer_row0);
    free(c->kv.layer_rows);
}

void e0_kv_swa_before_chunk(e0_ctx *c, int pos0, int n_tok) {
    if (!c->kv.swa_rows) return;
    int lo = pos0 + n_tok - c->kv.swa_rows; /* rows of positions below this are overwritten */
    if (lo > c->kv.swa_lo) c->kv.swa_lo = lo;
}

int e0_kv_swa_truncate(e0_ctx *c, int pos) {
    if (!c->kv.swa_rows || pos == 0) {
        c->kv.swa_lo = 0;
        return pos;
    }
    int64_t need = (int64_t)pos - c->hp->n_swa + 1; /* the oldest key the next position sees */
    if (need < 0) need = 0;
    if (need >= c->kv.swa_lo) return pos;
    c->kv.swa_lo = 0;
    return 0; /* the window's rows were overwritten: only a fresh start is exact */
}
