/* forward.c — the transformer forward pass: e0_eval() runs forward_chunk() on chunks of at most
 * n_batch tokens. The context it works in (KV cache, scratch buffers, threads) is built by
 * ctx.c and described, buffer by buffer with its shape, in ctx_impl.h; expert prediction and
 * prefetch policy is experts_predict.c.
 *
 * forward_chunk() is the whole model for a chunk of tokens, top to bottom:
 *   embed -> per layer [RMSNorm -> q,k,v (+bias) -> (q/k norm) -> RoPE -> KV cache -> causal
 *   attention -> output projection -> residual -> RMSNorm -> FFN (dense SwiGLU, or routed
 *   experts (+ shared expert)) -> residual] -> final RMSNorm -> logits.
 * gpt-oss adds (attn_ext.c): YaRN RoPE, attention sinks, sliding-window layers (their KV rows
 * in rings: e0_kv_layer_row0 / e0_kv_slot), attn_output and per-expert biases, the router bias
 * with a softmax over the selected experts (route.c) and the clamped SwiGLU.
 * Matrix products take activations converted to each weight type's vec_dot_type (like
 * llama.cpp); the xq cache below keeps those conversions so q, k and v share one.
 * Routed experts are computed grouped by expert: every (token, slot) pair that chose expert x is
 * gathered, so each expert's weights are streamed once per chunk, and results are summed per
 * token in slot order — the same order whatever the grouping, so results are deterministic.
 *
 * Shapes are written [rows][columns] with n = n_tok (tokens in the chunk), E = n_embd,
 * X = n_expert, K = n_expert_used, F = n_ff_exp; only the first n rows of the [n_batch][...]
 * scratch buffers are used. */
#include <math.h>
#include <string.h>

#include "engine/ctx_impl.h"
#include "quant/quant.h"

/* ---- attention ---- */

/* q [n][q_dim], k, v [n][kv_dim] of the chunk: add the biases (qwen2), normalize each head
 * (qwen3), rotate (RoPE at position pos0 + i) and append k, v to layer il's KV cache (each row
 * converted once to its cache type; a hybrid's attention layers only have one: attn_ext.c's
 * layout tables). */
#define ROPE_CS_MAX 1024 /* rotated dims whose cos / sin rope_and_cache computes once a token */

static void rope_and_cache(e0_ctx *c, const e0_layer *L, int il, int n_tok, int pos0) {
    const e0_hparams *hp = c->hp;
    /* gpt-oss: RoPE with scaling (YaRN) and a per-layer base (attn_ext.c) */
    const bool rope_ext = e0_arch_get(hp->arch)->rope_scaling;
    e0_rope_cfg rc;
    if (rope_ext) e0_rope_cfg_for_layer(hp, il, &rc);
    for (int i = 0; i < n_tok; i++) {
        float *q = c->act.q + (size_t)i * c->q_dim, *k = c->act.k + (size_t)i * c->kv_dim,
              *v = c->act.v + (size_t)i * c->kv_dim;
        /* a batch (batch.c): row i is a token of its own sequence, at its position, into its cache */
        e0_ctx *sc = e0_row_ctx(c, i);
        const int pos = e0_row_pos(c, i, pos0);
        if (L->bq && L->bk && L->bv) {
            for (int64_t d = 0; d < c->q_dim; d++) q[d] += L->bq[d];
            for (int64_t d = 0; d < c->kv_dim; d++) k[d] += L->bk[d], v[d] += L->bv[d];
        } else if (L->bq || L->bk || L->bv) { /* glm4moe: each bias is optional */
            if (L->bq) for (int64_t d = 0; d < c->q_dim; d++) q[d] += L->bq[d];
            if (L->bk) for (int64_t d = 0; d < c->kv_dim; d++) k[d] += L->bk[d];
            if (L->bv) for (int64_t d = 0; d < c->kv_dim; d++) v[d] += L->bv[d];
        }
        if (hp->qk_norm_full) { /* olmoe: one RMSNorm over the whole q and k rows */
            e0_rmsnorm(q, q, L->q_norm, c->q_dim, hp->rms_eps);
            e0_rmsnorm(k, k, L->k_norm, c->kv_dim, hp->rms_eps);
        }
        /* plain RoPE: the position's cos / sin once for all heads (e0_rope's bits) */
        float cs[ROPE_CS_MAX];
        const bool use_cs = !rope_ext && !hp->rope_imrope && hp->n_rot > 0 && hp->n_rot < ROPE_CS_MAX;
        if (use_cs) e0_rope_cs(cs, hp->n_rot, pos, hp->rope_base);
        for (int64_t h = 0; h < hp->n_head; h++) {
            float *qh = q + h * hp->head_dim;
            if (L->q_norm && !hp->qk_norm_full) e0_rmsnorm(qh, qh, L->q_norm, hp->head_dim, hp->rms_eps);
            if (rope_ext) e0_rope_ext(qh, hp->n_rot, pos, &rc);
            else if (hp->rope_imrope) e0_rope_imrope(qh, hp->n_rot, pos, hp->rope_base, hp->rope_sections);
            else if (use_cs) e0_rope_apply(qh, hp->n_rot, cs, hp->rope_neox);
            else e0_rope(qh, hp->n_rot, pos, hp->rope_base, hp->rope_neox);
        }
        for (int64_t h = 0; h < hp->n_head_kv; h++) {
            float *kh = k + h * hp->head_dim;
            if (L->k_norm && !hp->qk_norm_full) e0_rmsnorm(kh, kh, L->k_norm, hp->head_dim, hp->rms_eps);
            if (rope_ext) e0_rope_ext(kh, hp->n_rot, pos, &rc);
            else if (hp->rope_imrope) e0_rope_imrope(kh, hp->n_rot, pos, hp->rope_base, hp->rope_sections);
            else if (use_cs) e0_rope_apply(kh, hp->n_rot, cs, hp->rope_neox);
            else e0_rope(kh, hp->n_rot, pos, hp->rope_base, hp->rope_neox);
        }
        /* quantized K / V: q, k (v) rotated by llama.cpp's Hadamard matrix first (kv_rot.c) */
        if (c->kv.rot_k) {
            e0_kv_hadamard(q, c->q_dim, c->kv.rot_k);
            e0_kv_hadamard(k, c->kv_dim, c->kv.rot_k);
        }
        if (c->kv.rot_v) e0_kv_hadamard(v, c->kv_dim, c->kv.rot_v);
        /* position pos's slot of every head, converted once to the cache types */
        const size_t slot = e0_kv_slot(sc, il, pos);
        for (int64_t h = 0; h < hp->n_head_kv; h++) {
            e0_kv_store(c->kv.type_k, k + h * hp->head_dim, hp->head_dim, e0_kv_head_k(sc, il, h) + slot * c->kv.head_k);
            e0_kv_store(c->kv.type_v, v + h * hp->head_dim, hp->head_dim, e0_kv_head_v(sc, il, h) + slot * c->kv.head_v);
        }
    }
}

typedef struct {
    e0_ctx *c;
    int il, n_tok, pos0;
} attn_task;

/* Causal attention for the heads [h0, h1) of one KV head (GQA: they share its keys and values),
 * token i: q [q_dim] -> att [q_dim] over KV rows 0 .. pos0+i; each key and value row is loaded
 * once for all of them. scores: this thread's [h1 - h0][n_ctx]; kq: its q heads converted for
 * the keys (block-type keys); vrow: its [head_dim] floats.
 * Keys and values are read in their cache types, as llama.cpp's CPU path does: q is converted to
 * the key type's vec_dot_type (Q8_0 for q8_0 / q4_0 keys; F16 / BF16 keys round q to their own
 * type inside the type table's dot product) and the table's vec_dot gives each score. Each value
 * row is converted to floats and accumulated with its weight in F32; for F16 / BF16 values the
 * weights are first rounded to that type, as llama.cpp's flash-attention-off path does (its
 * product of the value rows with the softmax converts the weights to the values' vec_dot_type);
 * for q8_0 / q4_0 values (llama.cpp: flash attention only) they stay F32. F32 keys and values
 * take the same dot product and axpy as they always did. */
static void attend(e0_ctx *c, const attn_task *t, int i, int64_t kvh, int64_t h0, int64_t h1, float *scores,
                   uint8_t *kq, float *vrow) {
    const e0_hparams *hp = c->hp;
    const int64_t hd = hp->head_dim;
    const float scale = hp->attn_scale > 0 ? hp->attn_scale : 1.0f / sqrtf((float)hd); /* deepseek2: its kq_scale */
    const size_t rk = c->kv.head_k, rv = c->kv.head_v; /* bytes from one key (value) to the next */
    /* a batch (batch.c): token i attends over its own sequence's cache, to its position */
    const e0_ctx *sc = e0_row_ctx(c, i);
    const uint8_t *kc = e0_kv_head_k(sc, t->il, kvh), *vc = e0_kv_head_v(sc, t->il, kvh);
    /* causal: positions first .. pos; a sliding-window layer sees the last n_swa of them */
    const int pos = e0_row_pos(c, i, t->pos0);
    const int first = e0_layer_is_swa(hp, t->il) && pos - hp->n_swa + 1 > 0 ? (int)(pos - hp->n_swa + 1) : 0;
    const int n_keys = pos + 1 - first;
    const float *sinks = c->m->layers[t->il].sinks; /* gpt-oss: one more logit per head */
#define KEY_ROW(j) e0_kv_slot(sc, t->il, first + (j)) /* the cache slot of the j-th key */
    const float *q = c->act.q + (size_t)i * c->q_dim;
    float *att = c->act.att + (size_t)i * c->q_dim;
    /* qh: heads h0 .. h1-1 of q in kv.q_type, qs bytes apart */
    const uint8_t *qh = (const uint8_t *)(q + h0 * hd);
    size_t qs = (size_t)hd * sizeof(float);
    const int n_h = (int)(h1 - h0);
    if (c->kv.f16_k) {
        /* F16 keys: q rounded to F16 once, then one fused loop per key row for the n_h heads */
        float *qf = (float *)kq;
        memcpy(qf, q + h0 * hd, (size_t)n_h * (size_t)hd * sizeof(float));
        e0_kv_round(E0_TYPE_F16, qf, n_h * hd);
        for (int j = 0; j < n_keys; j++) e0_kv_scores_f16_avx2(hd, kc + KEY_ROW(j) * rk, qf, n_h, scale, scores + j, (size_t)c->n_ctx);
    } else {
        if (c->kv.q_type != E0_TYPE_F32) {
            const e0_from_float_fn conv = e0_kernels_of(c->kv.q_type)->from_float;
            for (int64_t h = h0; h < h1; h++) conv(q + h * hd, kq + (size_t)(h - h0) * c->kv.q_head, hd);
            qh = kq;
            qs = c->kv.q_head;
        }
        const e0_vec_dot_fn dot = c->kv.dot_k;
        for (int j = 0; j < n_keys; j++) {
            const uint8_t *k = kc + KEY_ROW(j) * rk;
            for (int64_t h = h0; h < h1; h++) {
                float s;
                dot(hd, &s, k, qh + (size_t)(h - h0) * qs);
                scores[(h - h0) * c->n_ctx + j] = s * scale;
            }
        }
    }
    for (int64_t h = h0; h < h1; h++) {
        if (sinks) e0_softmax_sink(scores + (h - h0) * c->n_ctx, n_keys, sinks[h]);
        else e0_softmax(scores + (h - h0) * c->n_ctx, n_keys);
        e0_kv_round(c->kv.type_v, scores + (h - h0) * c->n_ctx, n_keys);
        memset(att + h * hd, 0, (size_t)hd * sizeof(float));
    }
    if (c->kv.f16_v) {
        for (int j = 0; j < n_keys; j++)
            e0_kv_axpy_f16_avx2(hd, scores + j, (size_t)c->n_ctx, n_h, vc + KEY_ROW(j) * rv, att + h0 * hd);
        return;
    }
    const bool vf32 = c->kv.type_v == E0_TYPE_F32;
    for (int j = 0; j < n_keys; j++) {
        const float *v = (const float *)(vc + KEY_ROW(j) * rv);
        if (!vf32) {
            e0_kv_load(c->kv.type_v, vc + KEY_ROW(j) * rv, vrow, hd);
            v = vrow;
        }
        for (int64_t h = h0; h < h1; h++) e0_axpy(hd, scores[(h - h0) * c->n_ctx + j], v, att + h * hd);
    }
#undef KEY_ROW
}

/* Work items are (token, KV head) pairs; with fewer pairs than threads (decode of a model with
 * few KV heads), (token, head) pairs instead. Either way each head's arithmetic is the same. */
static void attention_worker(void *arg, int ith, int nth) {
    const attn_task *t = arg;
    e0_ctx *c = t->c;
    const e0_hparams *hp = c->hp;
    const int64_t group = hp->n_head / hp->n_head_kv;
    float *scores = c->act.scores + (size_t)ith * c->n_ctx * (size_t)group;
    uint8_t *kq = c->act.kq ? c->act.kq + (size_t)ith * (size_t)group * c->kv.q_head : NULL;
    float *vrow = c->act.vrow + (size_t)ith * (size_t)hp->head_dim;
    const bool by_kv = (long)t->n_tok * hp->n_head_kv >= nth;
    const int64_t per_tok = by_kv ? hp->n_head_kv : hp->n_head;
    long lo, hi;
    e0_split((long)t->n_tok * per_tok, ith, nth, &lo, &hi);
    for (long item = lo; item < hi; item++) {
        int i = (int)(item / per_tok);
        int64_t u = item % per_tok;
        if (by_kv) attend(c, t, i, u, u * group, (u + 1) * group, scores, kq, vrow);
        else attend(c, t, i, u / group, u, u + 1, scores, kq, vrow);
    }
}

/* ---- feed-forward ---- */

/* out [n][E] = down(silu(gate(xn)) * up(xn)) (dense FFN or shared expert);
 * xn [n][E] -> hb, hb2 [n][ff] -> out. */
static void swiglu_ffn(e0_ctx *c, const e0_weight *gate, const e0_weight *up, const e0_weight *down, int n_tok,
                       float *out) {
    const int64_t ff = gate->ne[1];
    e0_matmul_input(c, c->act.xn, n_tok, c->hp->n_embd);
    e0_matmul gu[2] = {e0_matmul_job(c, gate, c->act.hb), e0_matmul_job(c, up, c->act.hb2)};
    e0_matmul_run(c->threads.cur, gu, 2);
    e0_swiglu_rows(c->threads.cur, c->act.hb, c->act.hb2, n_tok, ff);
    e0_matmul_input(c, c->act.hb, n_tok, ff);
    e0_matmul_weight(c, down, out);
}

/* Route each token: router logits [n][X] -> probabilities (softmax or sigmoid, in place) -> the
 * top K experts sel [n][K] (ties: lower id; deepseek2: chosen with the correction bias and the
 * group limit, route.c) and their weights sel_w [n][K]. */
static void route(e0_ctx *c, const e0_layer *L, int n_tok) {
    const int64_t X = c->hp->n_expert, K = c->hp->n_expert_used;
    for (int i = 0; i < n_tok; i++) {
        float *p = c->moe.router + (size_t)i * X;
        int *sel = c->moe.sel + (size_t)i * K;
        e0_route_token(c->hp, L->router_b, L->exp_probs_b, p, sel, c->moe.sel_w + (size_t)i * K, c->moe.route_tmp);
    }
}

/* Matrices of experts ids[0..n) of layer il into moe.ptrs: from the resident tensors, or
 * acquired (read if missing, pinned) from the expert cache. */
static int experts_get(e0_ctx *c, int il, const int *ids, int n) {
    const e0_layer *L = &c->m->layers[il];
    if (!c->moe.xc) {
        for (int k = 0; k < n; k++)
            c->moe.ptrs[k] = (e0_expert_ptrs){.gate = e0_expert_matrix(&L->gate_exps, ids[k]),
                                              .up = e0_expert_matrix(&L->up_exps, ids[k]),
                                              .down = e0_expert_matrix(&L->down_exps, ids[k])};
        return 0;
    }
    double t0 = e0_now();
    int rc = e0_experts_acquire(c->moe.xc, il, ids, n, c->moe.ptrs, c->err);
    c->stats.st.expert_wait += e0_now() - t0;
    return rc;
}

/* gpt-oss: per-expert biases of the batch's experts used[b0 .. b0+nb): pair_h [pairs][F] +=
 * gate_b[x], pair_h2 += up_b[x] for every pair of expert x (gate_b, up_b [X][F]). */
static void expert_bias(e0_ctx *c, int b0, int nb, const float *gate_b, const float *up_b, int64_t F) {
    for (int k = 0; k < nb; k++) {
        int x = c->moe.used[b0 + k];
        for (int p = c->moe.expert_start[x]; p < c->moe.expert_start[x + 1]; p++)
            for (int64_t f = 0; f < F; f++) {
                c->moe.pair_h[(size_t)p * F + f] += gate_b[(size_t)x * F + f];
                c->moe.pair_h2[(size_t)p * F + f] += up_b[(size_t)x * F + f];
            }
    }
}

/* ... and pair_out [pairs][E] += down_b[x] (down_b [X][E]). */
static void expert_bias_down(e0_ctx *c, int b0, int nb, const float *down_b, int64_t E) {
    for (int k = 0; k < nb; k++) {
        int x = c->moe.used[b0 + k];
        for (int p = c->moe.expert_start[x]; p < c->moe.expert_start[x + 1]; p++)
            for (int64_t e = 0; e < E; e++) c->moe.pair_out[(size_t)p * E + e] += down_b[(size_t)x * E + e];
    }
}

typedef struct {
    e0_ctx *c;
    float *out;
} moe_sum_args;

/* Tokens i0 .. i1-1 of moe_ffn's weighted sum. */
static void moe_sum_part(void *arg, long i0, long i1) {
    const moe_sum_args *ms = arg;
    const e0_ctx *c = ms->c;
    const int64_t E = c->hp->n_embd, K = c->hp->n_expert_used;
    for (long i = i0; i < i1; i++) {
        float *o = ms->out + (size_t)i * E;
        memset(o, 0, (size_t)E * sizeof(float));
        for (int64_t s = 0; s < K; s++) {
            const float w = c->moe.sel_w[(size_t)i * K + s];
            const float *y = c->moe.pair_out + (size_t)c->moe.pair_of[(size_t)i * K + s] * E;
            for (int64_t e = 0; e < E; e++) o[e] += w * y[e];
        }
    }
}

/* moe_ffn's converted inputs per pair: gate's rows gx and up's rows ux (strides sg, su). */
typedef struct {
    const uint8_t *gx, *ux;
    size_t sg, su;
} moe_in;

/* Experts used[b0 .. b0+nb) of layer il, whose matrices are moe.ptrs[0 .. nb): their pairs'
 * inputs -> pair_out [pairs][E]. */
static void experts_compute(e0_ctx *c, int il, const moe_in *in, int b0, int nb) {
    const e0_layer *L = &c->m->layers[il];
    const e0_hparams *hp = c->hp;
    const int64_t E = hp->n_embd, F = hp->n_ff_exp;
    const int *start = c->moe.expert_start;
    const uint8_t *gx = in->gx, *ux = in->ux;
    const size_t sg = in->sg, su = in->su;
    const e0_weight *g = &L->gate_exps, *u = &L->up_exps, *d = &L->down_exps;
    const uint32_t td = e0_weight_vec_dot_type(d);
    const size_t sd = e0_row_size(td, F);
    /* gate, up of the batch's experts in one dispatch: gx, ux [pairs] -> pair_h, pair_h2 [pairs][F] */
    int nj = 0;
    for (int k = 0; k < nb; k++) {
        int x = c->moe.used[b0 + k], n = start[x + 1] - start[x];
        c->moe.jobs[nj++] = (e0_matmul){.w = c->moe.ptrs[k].gate, .type = g->type, .n_in = E, .n_out = F,
                                        .row_bytes = g->row_bytes, .xq = gx + (size_t)start[x] * sg, .xq_stride = sg,
                                        .n_tok = n, .y = c->moe.pair_h + (size_t)start[x] * F, .y_stride = F};
        c->moe.jobs[nj++] = (e0_matmul){.w = c->moe.ptrs[k].up, .type = u->type, .n_in = E, .n_out = F,
                                        .row_bytes = u->row_bytes, .xq = ux + (size_t)start[x] * su, .xq_stride = su,
                                        .n_tok = n, .y = c->moe.pair_h2 + (size_t)start[x] * F, .y_stride = F};
    }
    e0_matmul_run(c->threads.cur, c->moe.jobs, nj);
    if (L->gate_exps_b) expert_bias(c, b0, nb, L->gate_exps_b, L->up_exps_b, F);
    /* pair_h = silu(pair_h) * pair_h2 [pairs][F] (gpt-oss: the clamped SwiGLU), then converted
     * into pair_hq unless down takes F32; over the batch's pairs p0 .. p1, one range when its
     * experts are consecutive in id order (always, unless moe_ffn reordered them) */
    for (int k = 0; k < nb; k++) {
        int p0 = start[c->moe.used[b0 + k]], p1 = start[c->moe.used[b0 + k] + 1];
        while (k + 1 < nb && start[c->moe.used[b0 + k + 1]] == p1) p1 = start[c->moe.used[b0 + ++k] + 1];
        if (hp->ffn_act == E0_ACT_SWIGLU_OAI)
            e0_swiglu_oai(c->moe.pair_h + (size_t)p0 * F, c->moe.pair_h2 + (size_t)p0 * F, (int64_t)(p1 - p0) * F);
        else e0_swiglu_rows(c->threads.cur, c->moe.pair_h + (size_t)p0 * F, c->moe.pair_h2 + (size_t)p0 * F, p1 - p0, F);
        if (td != E0_TYPE_F32)
            e0_quantize_rows(c->threads.cur, td, c->moe.pair_h + (size_t)p0 * F, p1 - p0, F,
                             c->moe.pair_hq + (size_t)p0 * sd, sd);
    }

    /* down of the batch's experts in one dispatch: pair_h(q) [pairs][F] -> pair_out [pairs][E] */
    const uint8_t *hx = td != E0_TYPE_F32 ? c->moe.pair_hq : (const uint8_t *)c->moe.pair_h;
    const size_t hstride = td != E0_TYPE_F32 ? sd : (size_t)F * sizeof(float);
    nj = 0;
    for (int k = 0; k < nb; k++) {
        int x = c->moe.used[b0 + k], n = start[x + 1] - start[x];
        c->moe.jobs[nj++] = (e0_matmul){.w = c->moe.ptrs[k].down, .type = d->type, .n_in = F, .n_out = E,
                                        .row_bytes = d->row_bytes, .xq = hx + (size_t)start[x] * hstride,
                                        .xq_stride = hstride, .n_tok = n,
                                        .y = c->moe.pair_out + (size_t)start[x] * E, .y_stride = E};
    }
    e0_matmul_run(c->threads.cur, c->moe.jobs, nj);
    if (L->down_exps_b) expert_bias_down(c, b0, nb, L->down_exps_b, E);
}

/* Routed experts: xn [n][E] -> out [n][E] = sum over slots s of sel_w[i][s] * expert_sel[i][s](xn[i]). */
static int moe_ffn(e0_ctx *c, int il, int n_tok, float *out) {
    const e0_layer *L = &c->m->layers[il];
    const e0_hparams *hp = c->hp;
    const int64_t E = hp->n_embd, X = hp->n_expert, K = hp->n_expert_used;
    double t0 = e0_clock_if(c);

    /* Router: xn [n][E] -> router [n][X] -> sel, sel_w [n][K]. */
    e0_matmul_input(c, c->act.xn, n_tok, E);
    e0_matmul_weight(c, &L->router, c->moe.router);
    route(c, L, n_tok);
    if (c->replay.trace) e0_replay_route(c, il, n_tok); /* routing=replay: the trace's experts instead */
    /* Prediction policy: may replace sel / sel_w (routing=predicted), starts reads ahead. */
    e0_predict_after_route(c, il, n_tok);
    if (c->route_log.fn && !c->batch.seqs)
        for (int i = 0; i < n_tok; i++) c->route_log.fn(c->route_log.user, il, c->pos + i, c->moe.sel + (size_t)i * K, (int)K);
    double t1 = e0_clock_if(c);
    c->stats.st.router += t1 - t0;

    /* Group the n*K (token, slot) pairs by expert (counting sort; stable in token order):
     * start [X+1] = first pair of each expert, pair_of [n][K] -> pair, pair_tok [n*K] -> token. */
    int *start = c->moe.expert_start;
    memset(start, 0, (size_t)(X + 1) * sizeof *start);
    for (int64_t i = 0; i < n_tok * K; i++) start[c->moe.sel[i] + 1]++;
    for (int64_t x = 0; x < X; x++) start[x + 1] += start[x];
    for (int i = 0; i < n_tok; i++)
        for (int64_t s = 0; s < K; s++) {
            int x = c->moe.sel[(size_t)i * K + s];
            int p = start[x]++;
            c->moe.pair_of[(size_t)i * K + s] = p;
            c->moe.pair_tok[p] = i;
        }
    for (int64_t x = X; x > 0; x--) start[x] = start[x - 1];
    start[0] = 0;

    /* Gather converted inputs per pair: xn rows -> gx [n*K] rows for gate, ux [n*K] rows for up
     * (the same rows when both take the same vec_dot_type; else the second half of pair_xq). */
    uint32_t tg = e0_weight_vec_dot_type(&L->gate_exps), tu = e0_weight_vec_dot_type(&L->up_exps);
    size_t sg, su;
    const uint8_t *xg = e0_matmul_input_as(c, tg, &sg);
    const uint8_t *xu = tu == tg ? xg : e0_matmul_input_as(c, tu, &su);
    if (tu == tg) su = sg;
    size_t half = (size_t)n_tok * (size_t)K * c->max_xq_row;
    uint8_t *gx = c->moe.pair_xq, *ux = tu == tg ? gx : c->moe.pair_xq + half;
    for (int p = 0; p < n_tok * K; p++) {
        memcpy(gx + (size_t)p * sg, xg + (size_t)c->moe.pair_tok[p] * sg, sg);
        if (tu != tg) memcpy(ux + (size_t)p * su, xu + (size_t)c->moe.pair_tok[p] * su, su);
    }

    /* The experts used, in id order, computed in batches (below). */
    int n_used = 0;
    for (int64_t x = 0; x < X; x++)
        if (start[x + 1] > start[x]) c->moe.used[n_used++] = (int)x;
    c->stats.st.moe_passes++;
    c->stats.st.experts_computed += (uint64_t)n_used;
    c->stats.st.expert_bytes_computed += (uint64_t)n_used * e0_expert_bytes(c->m, il);
    const moe_in in = {gx, ux, sg, su};
    if (!c->moe.xc) { /* resident: one batch */
        experts_get(c, il, c->moe.used, n_used);
        experts_compute(c, il, &in, 0, n_used);
    } else if (n_used <= e0_experts_slots(c->moe.xc, il)) {
        /* Streamed, and the slots hold them all: those the cache has are computed while the
         * others are read, then each batch of those read since (the results do not depend on
         * the order: each pair has its own rows, summed per token in slot order below). */
        double t = e0_now();
        int rc = e0_experts_acquire_begin(c->moe.xc, il, c->moe.used, n_used, c->err);
        for (int done = 0; rc >= 0 && done < n_used; done += rc) {
            rc = e0_experts_take_ready(c->moe.xc, il, c->moe.used + done, n_used - done, c->moe.ptrs, c->err);
            c->stats.st.expert_wait += e0_now() - t;
            if (rc > 0) experts_compute(c, il, &in, done, rc);
            t = e0_now();
        }
        if (rc < 0) return -1;
        e0_experts_release(c->moe.xc, il);
    } else {
        /* More experts than slots: batches that fit, and those the cache holds already go
         * first, so that they hit before the other batches' reads can evict them. */
        const int batch = e0_experts_slots(c->moe.xc, il);
        int nh = 0;
        for (int k = 0; k < n_used; k++) {
            int x = c->moe.used[k];
            if (!e0_experts_held(c->moe.xc, il, x)) continue;
            memmove(c->moe.used + nh + 1, c->moe.used + nh, (size_t)(k - nh) * sizeof *c->moe.used);
            c->moe.used[nh++] = x;
        }
        for (int b0 = 0; b0 < n_used; b0 += batch) {
            int nb = n_used - b0 < batch ? n_used - b0 : batch;
            if (experts_get(c, il, c->moe.used + b0, nb) < 0) return -1;
            experts_compute(c, il, &in, b0, nb);
            e0_experts_release(c->moe.xc, il);
        }
    }

    /* Weighted sum per token, in slot order: pair_out [n*K][E] -> out [n][E] (tokens split over
     * the threads) */
    moe_sum_args ms = {c, out};
    e0_pool_rows(c->threads.cur, n_tok, 8, moe_sum_part, &ms);
    c->stats.st.experts += e0_clock_if(c) - t1;
    return 0;
}

/* FFN of layer il: xn [n][E] -> out [n][E]: the dense SwiGLU, or the routed experts plus (qwen2moe)
 * the sigmoid-gated shared expert. */
static int ffn(e0_ctx *c, int il, int n_tok, float *out) {
    const e0_hparams *hp = c->hp;
    const e0_layer *L = &c->m->layers[il];
    double t0 = e0_clock_if(c);
    if (hp->n_expert == 0 || il < hp->n_layer_dense_lead) { /* deepseek2: leading dense layers */
        swiglu_ffn(c, &L->ffn_gate, &L->ffn_up, &L->ffn_down, n_tok, out);
        c->stats.st.ffn_dense += e0_clock_if(c) - t0;
        return 0;
    }
    if (moe_ffn(c, il, n_tok, out) < 0) return -1;
    t0 = e0_clock_if(c);
    if (hp->shared_expert && !L->shexp_gate_inp) { /* deepseek2: ungated shared experts: out += shared */
        float *shared = c->act.att;
        swiglu_ffn(c, &L->gate_shexp, &L->up_shexp, &L->down_shexp, n_tok, shared);
        for (int64_t i = 0; i < n_tok * hp->n_embd; i++) out[i] += shared[i];
        c->stats.st.ffn_dense += e0_clock_if(c) - t0;
    } else if (hp->shared_expert) {
        /* out += sigmoid(shexp_gate_inp . xn) * shared_expert(xn): xn [n][E] -> shared [n][E].
         * Alias: att is not read again in this layer after the output projection. */
        float *shared = c->act.att;
        swiglu_ffn(c, &L->gate_shexp, &L->up_shexp, &L->down_shexp, n_tok, shared);
        for (int i = 0; i < n_tok; i++) {
            const float *xn = c->act.xn + (size_t)i * hp->n_embd;
            float g = 0;
            for (int64_t e = 0; e < hp->n_embd; e++) g += L->shexp_gate_inp[e] * xn[e];
            g = 1.0f / (1.0f + expf(-g));
            for (int64_t e = 0; e < hp->n_embd; e++) out[(size_t)i * hp->n_embd + e] += g * shared[(size_t)i * hp->n_embd + e];
        }
        c->stats.st.ffn_dense += e0_clock_if(c) - t0;
    }
    return 0;
}

/* ---- the model ---- */

/* x [n] += y [n], or (granitemoe) x += residual_scale * y. */
static void residual_add(const e0_hparams *hp, float *x, const float *y, int64_t n) {
    if (hp->residual_scale != 0.0f) {
        for (int64_t i = 0; i < n; i++) x[i] += y[i] * hp->residual_scale;
        return;
    }
    for (int64_t i = 0; i < n; i++) x[i] += y[i];
}

static int forward_chunk(e0_ctx *c, const int *tokens, int n_tok, float *all_logits) {
    /* prefill threads for a chunk of more than one token of a sequence (a batch: of any) */
    const int n_seq = c->batch.seqs ? c->batch.n_seq : 1;
    c->threads.cur = n_tok > n_seq ? c->threads.prefill : c->threads.decode;
    const e0_model *m = c->m;
    const e0_hparams *hp = c->hp;
    const int64_t E = hp->n_embd;
    const int pos0 = c->pos;
    float *x = c->act.x, *xn = c->act.xn;
    /* Alias: xn [n][E] is not read once q, k, v are computed, until the FFN norm rewrites it. */
    float *attn_out = c->act.xn;
    /* Alias: q is not read after attention; its rows are max(q_dim, E) floats. */
    float *ffn_out = c->act.q;

    if (c->batch.seqs) /* a batch: each sequence's rows */
        for (int s = 0; s < n_seq; s++)
            e0_kv_swa_before_chunk(c->batch.seqs[s], c->batch.seqs[s]->pos, c->batch.seg0[s + 1] - c->batch.seg0[s]);
    else e0_kv_swa_before_chunk(c, pos0, n_tok); /* sliding-window rings: rows about to be overwritten */

    /* Embeddings: tokens [n] -> x [n][E]. */
    for (int i = 0; i < n_tok; i++)
        if (e0_model_embd_row(m, tokens[i], x + (size_t)i * E, c->act.embd_raw, c->err) < 0) return -1;
    if (hp->embd_scale != 0.0f) /* granitemoe: the embedding multiplier */
        for (int64_t i = 0; i < n_tok * E; i++) x[i] *= hp->embd_scale;

    for (int64_t il = 0; il < hp->n_layer; il++) {
        const e0_layer *L = &m->layers[il];
        double t0 = e0_clock_if(c);
        /* x [n][E] -> xn = rmsnorm(x) * attn_norm [n][E] */
        e0_rmsnorm_rows(c->threads.cur, xn, x, L->attn_norm, n_tok, E, hp->rms_eps);
        if (e0_layer_is_recurrent(hp, il)) {
            /* hybrid: a Gated DeltaNet layer instead of attention, xn -> attn_out [n][E] (deltanet.c) */
            e0_deltanet_layer(c, (int)il, n_tok, attn_out);
            for (int64_t i = 0; i < n_tok * E; i++) x[i] += attn_out[i];
            c->stats.st.attention += e0_clock_if(c) - t0;
            goto ffn_part;
        }
        if (hp->mla) {
            /* deepseek2: xn -> absorbed queries q [n][H][C+R], compressed row -> KV cache (attn_mla.c) */
            e0_mla_project(c, L, (int)il, n_tok, pos0);
        } else {
        /* xn -> q [n][q_dim], k, v [n][kv_dim] (one dispatch, one conversion of xn per type);
         * hybrid: wq gives q and the output gate per head into rs.qg [n][2*q_dim] */
        e0_matmul_input(c, xn, n_tok, E);
        e0_matmul qkv[3] = {e0_matmul_job(c, &L->wq, hp->hybrid ? c->rs.qg : c->act.q), e0_matmul_job(c, &L->wk, c->act.k), e0_matmul_job(c, &L->wv, c->act.v)};
        e0_matmul_run(c->threads.cur, qkv, 3);
        if (hp->hybrid) e0_gated_q_split(hp, c->rs.qg, n_tok, c->act.q);
        /* q, k (+bias, q/k norm) -> RoPE; k, v -> KV cache rows pos0 .. pos0+n-1 of layer il */
        rope_and_cache(c, L, (int)il, n_tok, pos0);
        }
        /* q [n][q_dim], KV cache [pos0+n][kv_dim] -> att [n][q_dim] (causal, GQA) */
        if (e0_attn_tiled_wanted(c)) { /* tiled, online softmax (attn_tiled.c) */
            e0_attn_tiled_layer(c, (int)il, n_tok, pos0);
        } else {
        attn_task t = {.c = c, .il = (int)il, .n_tok = n_tok, .pos0 = pos0};
        e0_pool_run(c->threads.cur, attention_worker, &t);
        }
        if (c->kv.rot_v) e0_kv_hadamard(c->act.att, (int64_t)n_tok * c->q_dim, c->kv.rot_v); /* back from rotated values */
        /* att -> attn_out [n][E] = wo att (deepseek2: wo v_b att, attn_mla.c; hybrid: att *=
         * sigmoid(gate) first); x += attn_out */
        if (hp->mla) {
            e0_mla_output(c, L, n_tok, attn_out);
        } else {
        if (hp->hybrid) e0_gated_apply(hp, c->rs.qg, n_tok, c->act.att); /* att *= sigmoid(gate) */
        e0_matmul_input(c, c->act.att, n_tok, c->q_dim);
        e0_matmul_weight(c, &L->wo, attn_out);
        }
        if (L->bo) /* gpt-oss: attn_output.bias */
            for (int i = 0; i < n_tok; i++)
                for (int64_t e = 0; e < E; e++) attn_out[(size_t)i * E + e] += L->bo[e];
        residual_add(hp, x, attn_out, n_tok * E);
        c->stats.st.attention += e0_clock_if(c) - t0;
    ffn_part:
        /* x -> xn = rmsnorm(x) * ffn_norm [n][E] -> ffn_out [n][E]; x += ffn_out */
        e0_rmsnorm_rows(c->threads.cur, xn, x, L->ffn_norm, n_tok, E, hp->rms_eps);
        if (ffn(c, (int)il, n_tok, ffn_out) < 0) return -1;
        residual_add(hp, x, ffn_out, n_tok * E);
    }
    double t0 = e0_clock_if(c);

    /* Logits for every token if asked, else only the last (rows first .. n-1); a batch: after
     * each sequence's last row (row last(s) -> row s):
     * x -> xn = rmsnorm(x) * output_norm [n_out][E] -> logits [n_out][n_vocab]. */
    const int first = all_logits && !c->batch.seqs ? 0 : n_tok - 1;
    const int n_out = c->batch.seqs ? n_seq : n_tok - first;
    for (int r = 0; r < n_out; r++) {
        const int i = c->batch.seqs ? c->batch.seg0[r + 1] - 1 : first + r;
        e0_rmsnorm(xn + (size_t)r * E, x + (size_t)i * E, m->output_norm, E, hp->rms_eps);
    }
    e0_matmul_input(c, xn, n_out, E);
    float *out = all_logits ? all_logits : c->act.logits;
    e0_matmul_weight(c, &m->output, out);
    if (hp->logit_scale != 0.0f) { /* granitemoe: logits / logit_scale */
        const float inv = 1.0f / hp->logit_scale;
        for (int64_t i = 0; i < (int64_t)n_out * hp->n_vocab; i++) out[i] *= inv;
    }
    c->stats.st.output += e0_clock_if(c) - t0;
    if (c->batch.seqs) { /* a batch: each sequence advanced by its rows */
        for (int s = 0; s < n_seq; s++) {
            const int rows = c->batch.seg0[s + 1] - c->batch.seg0[s];
            c->batch.seqs[s]->stats.st.tokens += (uint64_t)rows;
            c->batch.seqs[s]->pos += rows;
        }
        return 0;
    }
    if (all_logits)
        memcpy(c->act.logits, all_logits + (size_t)(n_tok - 1) * hp->n_vocab, (size_t)hp->n_vocab * sizeof(float));
    c->stats.st.tokens += (uint64_t)n_tok;
    c->pos += n_tok;
    return 0;
}

int e0_forward_chunk(e0_ctx *c, const int *tokens, int n_tok, float *all_logits) {
    return forward_chunk(c, tokens, n_tok, all_logits);
}

/* Prompt tokens (routed exactly; pred.decoding is false outside e0_decode and e0_eval_multi). */
int e0_eval(e0_ctx *c, const int *tokens, int n, float *all_logits, e0_err *e) {
    const e0_hparams *hp = c->hp;
    if (n <= 0) return e0_fail(e, "no tokens to evaluate");
    if ((int64_t)c->pos + n > c->n_ctx)
        return e0_fail(e, "context overflow: %d tokens in the cache + %d new > context size %d (use -c to raise it)",
                       c->pos, n, c->n_ctx);
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= hp->n_vocab)
            return e0_fail(e, "token id %d out of range (vocabulary size %lld)", tokens[i], (long long)hp->n_vocab);
    for (int done = 0; done < n;) {
        int chunk = n - done < c->n_batch ? n - done : c->n_batch;
        c->err = e;
        if (forward_chunk(c, tokens + done, chunk, all_logits ? all_logits + (size_t)done * hp->n_vocab : NULL) < 0) {
            /* The KV cache holds a partial chunk: forget it, keep what was complete before. A
             * recurrent state cannot be rolled back: the sequence starts again. */
            if (hp->hybrid) e0_ctx_truncate(c, 0);
            return -1;
        }
        done += chunk;
    }
    return 0;
}

int e0_decode(e0_ctx *c, int token, e0_err *e) {
    c->pred.decoding = true;
    const int rc = e0_eval(c, &token, 1, NULL, e);
    c->pred.decoding = false;
    return rc;
}
