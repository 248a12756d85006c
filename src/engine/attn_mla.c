/* attn_mla.c — multi-head latent attention (deepseek2: DeepSeek-V2/V3/R1, Kimi-K2), the parts
 * before and after the attention proper, in the absorbed form llama.cpp uses:
 *
 *   q      = wq xn, or wq_b rmsnorm(wq_a xn) (q LoRA)           [n][H][KM], KM = nope + R
 *   kv_a   = wkv_a xn                                           [n][C + R]
 *   c      = [rmsnorm(kv_a[0:C]) * kv_a_norm, rope(kv_a[C:])]   -> the KV cache (C + R per
 *            token per layer: the compressed row every head shares; no separate values)
 *   q_abs  = [k_b_h q_nope_h, rope(q_pe_h)] for each head h     [n][H][C + R]
 *   scores = kq_scale * q_abs_h . c_j   (forward.c's attention over one KV head of width C + R)
 *   att_h  = sum_j p_j c_j[0:C]                                  (the same attention's output)
 *   out    = wo [v_b_h att_h for every h]                        [n][E]
 *
 * k_nope_h(j) = K_h c_j[0:C] with K_h = the rows of k_b_h, so q_nope . k_nope = (k_b_h q_nope) . c
 * and the value v_h(j) = v_b_h c_j[0:C]: each head's key and value never have to be formed.
 * RoPE here is the NORMAL pairing (2i, 2i+1) with YaRN: the engine's rope_ext (attn_ext.c, also
 * gpt-oss's) with the layer's scaling parameters, always (also without scaling, where it is the
 * same rotation). Shapes as in ctx_impl.h's mla group. */
#include <math.h>
#include <string.h>

#include "engine/ctx_impl.h"
#include "quant/quant.h"

/* Per head h: y[t][h*y_head ...] (w rows) = w_h . g[h][t] where g [H][n][len] are gathered rows
 * (mla.gath) and w a stack [len, rows, H]; converts g to w's vec_dot_type first. */
static void per_head_matmul(e0_ctx *c, const e0_weight *w, int n_tok, int64_t len, float *y, int64_t y_head,
                            int64_t y_stride) {
    const int64_t H = c->hp->n_head;
    const uint32_t vt = e0_weight_vec_dot_type(w);
    const uint8_t *xq = (const uint8_t *)c->mla.gath;
    size_t stride = (size_t)len * sizeof(float);
    if (vt != E0_TYPE_F32) {
        stride = e0_row_size(vt, len);
        e0_quantize_rows(c->threads.cur, vt, c->mla.gath, (int)(H * n_tok), len, c->mla.gathq, stride);
        xq = c->mla.gathq;
    }
    for (int64_t h = 0; h < H; h++)
        c->mla.jobs[h] = (e0_matmul){.w = e0_expert_matrix(w, h), .type = w->type, .n_in = len, .n_out = w->ne[1],
                                     .row_bytes = w->row_bytes, .xq = xq + (size_t)h * (size_t)n_tok * stride,
                                     .xq_stride = stride, .n_tok = n_tok, .y = y + h * y_head, .y_stride = y_stride};
    e0_matmul_run(c->threads.cur, c->mla.jobs, (int)H);
}

void e0_mla_project(e0_ctx *c, const e0_layer *L, int il, int n_tok, int pos0) {
    const e0_hparams *hp = c->hp;
    const int64_t E = hp->n_embd, H = hp->n_head, C = hp->kv_lora_rank, R = hp->n_rot, D = C + R;
    const int64_t KM = hp->head_dim_k_mla, nope = KM - R, QL = hp->q_lora_rank;
    /* q [n][H][KM] goes to act.att (free until the attention writes it), kv_a [n][D] to act.k */
    float *q = c->act.att, *kva = c->act.k;
    e0_rope_cfg rc;
    e0_rope_cfg_for_layer(hp, il, &rc);
    e0_matmul_input(c, c->act.xn, n_tok, E);
    if (QL > 0) {
        e0_matmul jobs[2] = {e0_matmul_job(c, &L->wq_a, c->mla.qa), e0_matmul_job(c, &L->wkv_a, kva)};
        e0_matmul_run(c->threads.cur, jobs, 2);
        for (int i = 0; i < n_tok; i++) {
            float *qa = c->mla.qa + (size_t)i * QL;
            e0_rmsnorm(qa, qa, L->q_a_norm, QL, hp->rms_eps);
        }
        e0_matmul_input(c, c->mla.qa, n_tok, QL);
        e0_matmul_weight(c, &L->wq_b, q);
    } else {
        e0_matmul jobs[2] = {e0_matmul_job(c, &L->wq, q), e0_matmul_job(c, &L->wkv_a, kva)};
        e0_matmul_run(c->threads.cur, jobs, 2);
    }
    /* the compressed rows -> KV cache rows pos0 .. pos0+n-1 of layer il */
    for (int i = 0; i < n_tok; i++) {
        float *r = kva + (size_t)i * D;
        e0_rmsnorm(r, r, L->kv_a_norm, C, hp->rms_eps);
        e0_rope_ext(r + C, R, pos0 + i, &rc);
        e0_kv_store(c->kv.type_k, r, D, e0_kv_head_k(c, il, 0) + e0_kv_slot(c, il, pos0 + i) * c->kv.head_k); /* one KV head */
    }
    /* q_nope gathered per head: gath [H][n][nope]; q_pe rotated into act.q [n][H][C + R] */
    for (int i = 0; i < n_tok; i++)
        for (int64_t h = 0; h < H; h++) {
            float *qh = q + ((size_t)i * H + h) * KM;
            memcpy(c->mla.gath + ((size_t)h * n_tok + i) * nope, qh, (size_t)nope * sizeof(float));
            float *dst = c->act.q + ((size_t)i * H + h) * D + C;
            memcpy(dst, qh + nope, (size_t)R * sizeof(float));
            e0_rope_ext(dst, R, pos0 + i, &rc);
        }
    /* absorbed: act.q[i][h][0:C] = k_b_h q_nope_h */
    per_head_matmul(c, &L->wk_b, n_tok, nope, c->act.q, D, H * D);
}

void e0_mla_output(e0_ctx *c, const e0_layer *L, int n_tok, float *out) {
    const e0_hparams *hp = c->hp;
    const int64_t H = hp->n_head, C = hp->kv_lora_rank, D = C + hp->n_rot, VM = hp->head_dim_v_mla;
    /* the latent outputs gathered per head: gath [H][n][C] */
    for (int i = 0; i < n_tok; i++)
        for (int64_t h = 0; h < H; h++)
            memcpy(c->mla.gath + ((size_t)h * n_tok + i) * C, c->act.att + ((size_t)i * H + h) * D,
                   (size_t)C * sizeof(float));
    /* v [n][H][VM] = v_b_h att_h, into act.q (the queries are not read after the attention) */
    float *v = c->act.q;
    per_head_matmul(c, &L->wv_b, n_tok, C, v, VM, H * VM);
    e0_matmul_input(c, v, n_tok, H * VM);
    e0_matmul_weight(c, &L->wo, out);
}
