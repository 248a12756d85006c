/* forward.c — the transformer forward pass and the inference context (see engine.h).
 *
 * forward_chunk() is the whole model for a chunk of tokens, top to bottom:
 *   embed -> per layer [RMSNorm -> q,k,v (+bias) -> (q/k norm) -> RoPE -> KV cache -> causal
 *   attention -> output projection -> residual -> RMSNorm -> FFN (dense SwiGLU, or routed
 *   experts (+ shared expert)) -> residual] -> final RMSNorm -> logits.
 * Matrix products take activations converted to each weight type's vec_dot_type (like
 * llama.cpp); `act` below caches those conversions so q, k and v share one.
 * Routed experts are computed grouped by expert: every (token, slot) pair that chose expert x is
 * gathered, so each expert's weights are streamed once per chunk, and results are summed per
 * token in slot order — the same order whatever the grouping, so results are deterministic. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/experts.h"
#include "engine/kernels.h"
#include "quant/quant.h"

#define N_ACT_TYPES 4

/* Activations converted to the vec_dot_types they are needed in. */
typedef struct act_cache {
    const float *x;
    int n_tok;
    int64_t n;
    uint32_t type[N_ACT_TYPES];
    bool valid[N_ACT_TYPES];
    uint8_t *buf[N_ACT_TYPES];
    size_t stride[N_ACT_TYPES];
} act_cache;

struct e0_ctx {
    const e0_model *m;
    const e0_hparams *hp;
    e0_pool *pool; /* the pool of the chunk being evaluated: prefill or decode */
    e0_pool *pool_decode, *pool_prefill;
    int n_ctx, n_batch, n_threads, n_threads_prefill, pos;
    bool timing;
    e0_ctx_stats stats;
    int64_t q_dim, kv_dim, ff_max;
    size_t max_act_row; /* bytes of the largest converted activation row */

    float *k_cache, *v_cache; /* [n_layer][n_ctx][kv_dim] */
    size_t kv_bytes;

    /* scratch, sized for n_batch tokens */
    float *x, *xn, *q, *k, *v, *att, *hb, *hb2, *logits, *scores;
    act_cache act;
    uint8_t *hq;              /* converted FFN hidden rows */
    /* MoE */
    float *router;            /* [B][n_expert] */
    int *sel;                 /* [B][K] chosen experts */
    float *sel_w;             /* [B][K] their weights */
    int *pair_of;             /* [B][K] -> pair index (pairs sorted by expert) */
    int *pair_tok;            /* [B*K] token of each pair */
    int *expert_start;        /* [n_expert + 1] */
    uint8_t *pair_xq;         /* gathered converted inputs, 2 x [B*K] rows */
    uint8_t *pair_hq;         /* converted hidden rows for down, [B*K] */
    int *used;                /* [n_expert] experts used by the chunk, in id order */
    e0_expert_ptrs *ptrs;     /* [n_expert] their matrices */
    e0_experts *xc;           /* the expert cache when experts stream, else NULL */
    int64_t expert_slots;
    e0_err *err;              /* where a failing step reports (set by e0_eval) */
    /* routing */
    bool predicted, prefetch, prefill_ahead;
    int predict_from, predict_ahead, prefill_ahead_min;
    int *pred;                /* [n_layer][K] experts predicted for the next decode step's layer */
    bool *pred_valid;         /* [n_layer] */
    float *pred_logits;       /* [n_expert] */
    uint64_t *pred_hits, *pred_total; /* [n_layer] */
    float *pair_h, *pair_h2;  /* [B*K][n_ff_exp] */
    float *pair_out;          /* [B*K][n_embd] */
    e0_matmul *jobs;          /* [2 * n_expert + 4] */
    size_t scratch_bytes;
    uint8_t *scratch;
};

/* The clock, only when timing is on (0 otherwise, so differences are 0). */
static double clock_if(const e0_ctx *c) { return c->timing ? e0_now() : 0; }

/* ---- activation conversion ---- */

static void act_reset(act_cache *a, const float *x, int n_tok, int64_t n) {
    a->x = x;
    a->n_tok = n_tok;
    a->n = n;
    memset(a->valid, 0, sizeof a->valid);
}

/* Rows of the current input converted to `type` (F32 is the input itself). */
static const uint8_t *act_get(e0_ctx *c, uint32_t type, size_t *stride) {
    act_cache *a = &c->act;
    if (type == E0_TYPE_F32) {
        *stride = (size_t)a->n * sizeof(float);
        return (const uint8_t *)a->x;
    }
    int slot = -1;
    for (int i = 0; i < N_ACT_TYPES; i++)
        if (a->valid[i] && a->type[i] == type) {
            *stride = a->stride[i];
            return a->buf[i];
        }
    for (int i = 0; i < N_ACT_TYPES && slot < 0; i++)
        if (!a->valid[i]) slot = i;
    if (slot < 0) slot = 0;
    a->type[slot] = type;
    a->stride[slot] = e0_row_size(type, a->n);
    e0_quantize_rows(c->pool, type, a->x, a->n_tok, a->n, a->buf[slot], a->stride[slot]);
    a->valid[slot] = true;
    *stride = a->stride[slot];
    return a->buf[slot];
}

static uint32_t vec_dot_type(const e0_weight *w) { return (uint32_t)e0_type_traits_of(w->type)->vec_dot_type; }

/* A job computing y = W x for the n_tok rows of the current activations. */
static e0_matmul job_for(e0_ctx *c, const e0_weight *w, const uint8_t *wdata, float *y) {
    size_t stride;
    const uint8_t *xq = act_get(c, vec_dot_type(w), &stride);
    return (e0_matmul){.w = wdata, .type = w->type, .n_in = w->ne[0], .n_out = w->ne[1], .row_bytes = w->row_bytes,
                       .xq = xq, .xq_stride = stride, .n_tok = c->act.n_tok, .y = y, .y_stride = w->ne[1]};
}

/* y = W x for the current activations (one weight). */
static void matmul(e0_ctx *c, const e0_weight *w, float *y) {
    e0_matmul j = job_for(c, w, w->data, y);
    e0_matmul_run(c->pool, &j, 1);
}

/* ---- attention ---- */

typedef struct {
    e0_ctx *c;
    int il, n_tok, pos0;
} attn_task;

/* Causal attention for the heads [h0, h1) of one KV head (GQA: they share its keys and values),
 * one token: each key and value row is loaded once for all of them. */
static void attend(e0_ctx *c, const attn_task *t, int i, int64_t kvh, int64_t h0, int64_t h1, float *scores) {
    const e0_hparams *hp = c->hp;
    const int64_t hd = hp->head_dim;
    const float scale = 1.0f / sqrtf((float)hd);
    const float *kc = c->k_cache + (size_t)t->il * c->n_ctx * c->kv_dim + kvh * hd;
    const float *vc = c->v_cache + (size_t)t->il * c->n_ctx * c->kv_dim + kvh * hd;
    const int n_keys = t->pos0 + i + 1; /* causal: positions 0..pos */
    const float *q = c->q + (size_t)i * c->q_dim;
    for (int j = 0; j < n_keys; j++) {
        const float *k = kc + (size_t)j * c->kv_dim;
        for (int64_t h = h0; h < h1; h++) scores[(h - h0) * c->n_ctx + j] = e0_dot_f32(hd, k, q + h * hd) * scale;
    }
    for (int64_t h = h0; h < h1; h++) {
        e0_softmax(scores + (h - h0) * c->n_ctx, n_keys);
        memset(c->att + (size_t)i * c->q_dim + h * hd, 0, (size_t)hd * sizeof(float));
    }
    for (int j = 0; j < n_keys; j++) {
        const float *v = vc + (size_t)j * c->kv_dim;
        for (int64_t h = h0; h < h1; h++) e0_axpy(hd, scores[(h - h0) * c->n_ctx + j], v, c->att + (size_t)i * c->q_dim + h * hd);
    }
}

/* Work items are (token, KV head) pairs; with fewer pairs than threads (decode of a model with
 * few KV heads), (token, head) pairs instead. Either way each head's arithmetic is the same. */
static void attention_worker(void *arg, int ith, int nth) {
    const attn_task *t = arg;
    e0_ctx *c = t->c;
    const e0_hparams *hp = c->hp;
    const int64_t group = hp->n_head / hp->n_head_kv;
    float *scores = c->scores + (size_t)ith * c->n_ctx * (size_t)group;
    const bool by_kv = (long)t->n_tok * hp->n_head_kv >= nth;
    const int64_t per_tok = by_kv ? hp->n_head_kv : hp->n_head;
    long lo, hi;
    e0_split((long)t->n_tok * per_tok, ith, nth, &lo, &hi);
    for (long item = lo; item < hi; item++) {
        int i = (int)(item / per_tok);
        int64_t u = item % per_tok;
        if (by_kv) attend(c, t, i, u, u * group, (u + 1) * group, scores);
        else attend(c, t, i, u / group, u, u + 1, scores);
    }
}

static void attention(e0_ctx *c, const e0_layer *L, int il, int n_tok, int pos0) {
    const e0_hparams *hp = c->hp;
    act_reset(&c->act, c->xn, n_tok, hp->n_embd);
    e0_matmul qkv[3] = {job_for(c, &L->wq, L->wq.data, c->q), job_for(c, &L->wk, L->wk.data, c->k),
                        job_for(c, &L->wv, L->wv.data, c->v)};
    e0_matmul_run(c->pool, qkv, 3);
    for (int i = 0; i < n_tok; i++) {
        float *q = c->q + (size_t)i * c->q_dim, *k = c->k + (size_t)i * c->kv_dim, *v = c->v + (size_t)i * c->kv_dim;
        if (L->bq) {
            for (int64_t d = 0; d < c->q_dim; d++) q[d] += L->bq[d];
            for (int64_t d = 0; d < c->kv_dim; d++) k[d] += L->bk[d], v[d] += L->bv[d];
        }
        for (int64_t h = 0; h < hp->n_head; h++) {
            float *qh = q + h * hp->head_dim;
            if (L->q_norm) e0_rmsnorm(qh, qh, L->q_norm, hp->head_dim, hp->rms_eps);
            e0_rope(qh, hp->n_rot, pos0 + i, hp->rope_base, hp->rope_neox);
        }
        for (int64_t h = 0; h < hp->n_head_kv; h++) {
            float *kh = k + h * hp->head_dim;
            if (L->k_norm) e0_rmsnorm(kh, kh, L->k_norm, hp->head_dim, hp->rms_eps);
            e0_rope(kh, hp->n_rot, pos0 + i, hp->rope_base, hp->rope_neox);
        }
        size_t at = ((size_t)il * c->n_ctx + (size_t)(pos0 + i)) * c->kv_dim;
        memcpy(c->k_cache + at, k, (size_t)c->kv_dim * sizeof(float));
        memcpy(c->v_cache + at, v, (size_t)c->kv_dim * sizeof(float));
    }
    attn_task t = {c, il, n_tok, pos0};
    e0_pool_run(c->pool, attention_worker, &t);
    act_reset(&c->act, c->att, n_tok, c->q_dim);
    matmul(c, &L->wo, c->xn); /* xn is free again: use it for the projection */
}

/* ---- feed-forward ---- */

/* out = down(silu(gate(xn)) * up(xn)) for n_tok rows (dense FFN or shared expert). */
static void swiglu_ffn(e0_ctx *c, const e0_weight *gate, const e0_weight *up, const e0_weight *down, int n_tok,
                       float *out) {
    const int64_t F = gate->ne[1];
    act_reset(&c->act, c->xn, n_tok, c->hp->n_embd);
    e0_matmul gu[2] = {job_for(c, gate, gate->data, c->hb), job_for(c, up, up->data, c->hb2)};
    e0_matmul_run(c->pool, gu, 2);
    e0_swiglu(c->hb, c->hb2, (int64_t)n_tok * F);
    act_reset(&c->act, c->hb, n_tok, F);
    matmul(c, down, out);
}

/* Route each token: softmax over all experts, keep the top k (ties: lower id), optionally
 * renormalize the kept weights to sum 1. */
static void route(e0_ctx *c, int n_tok) {
    const int64_t X = c->hp->n_expert, K = c->hp->n_expert_used;
    for (int i = 0; i < n_tok; i++) {
        float *p = c->router + (size_t)i * X;
        e0_softmax(p, X);
        int *sel = c->sel + (size_t)i * K;
        float *w = c->sel_w + (size_t)i * K;
        float sum = 0;
        for (int64_t s = 0; s < K; s++) {
            int best = -1;
            for (int64_t x = 0; x < X; x++) {
                bool taken = false;
                for (int64_t r = 0; r < s; r++) taken |= sel[r] == x;
                if (!taken && (best < 0 || p[x] > p[best])) best = (int)x;
            }
            sel[s] = best;
            w[s] = p[best];
            sum += p[best];
        }
        if (c->hp->moe_norm_topk) {
            if (sum < 6.103515625e-5f) sum = 6.103515625e-5f;
            for (int64_t s = 0; s < K; s++) w[s] /= sum;
        }
    }
}

/* Pointers to experts ids[0..n) of layer il into c->ptrs: from the resident tensors, or
 * acquired (read if missing, pinned) from the expert cache. */
static int experts_get(e0_ctx *c, int il, const int *ids, int n) {
    const e0_layer *L = &c->m->layers[il];
    if (!c->xc) {
        for (int k = 0; k < n; k++)
            c->ptrs[k] = (e0_expert_ptrs){e0_expert_matrix(&L->gate_exps, ids[k]), e0_expert_matrix(&L->up_exps, ids[k]),
                                          e0_expert_matrix(&L->down_exps, ids[k])};
        return 0;
    }
    double t0 = e0_now();
    int rc = e0_experts_acquire(c->xc, il, ids, n, c->ptrs, c->err);
    c->stats.expert_wait += e0_now() - t0;
    return rc;
}

/* Top-k of probabilities p[0..X) into ids (descending; ties: lower id). */
static void top_k(const float *p, int64_t X, int64_t K, int *ids) {
    for (int64_t s = 0; s < K; s++) {
        int best = -1;
        for (int64_t x = 0; x < X; x++) {
            bool taken = false;
            for (int64_t r = 0; r < s; r++) taken |= ids[r] == x;
            if (!taken && (best < 0 || p[x] > p[best])) best = (int)x;
        }
        ids[s] = best;
    }
}

/* Decode step, layer il: predict the experts of layers il+1 .. il+predict_ahead from this
 * layer's FFN input (the residual stream changes slowly, so a later layer's router applied to it
 * mostly agrees) and start reading them. The prediction for il+1 is the one predicted routing
 * computes with; those further ahead only start reads early. */
static void predict_ahead(e0_ctx *c, int il) {
    const e0_hparams *hp = c->hp;
    act_reset(&c->act, c->xn, 1, hp->n_embd);
    for (int d = 1; d <= c->predict_ahead; d++) {
        int next = il + d;
        if (next >= hp->n_layer) break;
        if (next < c->predict_from) continue;
        const e0_layer *N = &c->m->layers[next];
        matmul(c, &N->router, c->pred_logits);
        e0_softmax(c->pred_logits, hp->n_expert);
        int ids[64], *dst = d == 1 ? c->pred + (size_t)next * hp->n_expert_used : ids;
        if (d > 1 && hp->n_expert_used > 64) break;
        top_k(c->pred_logits, hp->n_expert, hp->n_expert_used, dst);
        if (d == 1) c->pred_valid[next] = true;
        if (c->xc) e0_experts_prefetch(c->xc, next, dst, (int)hp->n_expert_used);
    }
}

/* Long prefill chunks with streamed experts: while this layer computes, start reading the
 * experts the next layer will most likely use — its router applied to this layer's FFN inputs,
 * experts ranked by how many tokens pick them, as many as its slots hold. */
static void prefill_read_ahead(e0_ctx *c, int il, int n_tok) {
    const e0_hparams *hp = c->hp;
    if (!c->xc || !c->prefill_ahead || n_tok < c->prefill_ahead_min || il + 1 >= hp->n_layer) return;
    const int64_t X = hp->n_expert, K = hp->n_expert_used;
    matmul(c, &c->m->layers[il + 1].router, c->router); /* c->router is free after route() */
    int *count = c->expert_start; /* reused: filled again by the grouping below */
    memset(count, 0, (size_t)(X + 1) * sizeof *count);
    int ids[64];
    for (int i = 0; i < n_tok && K <= 64; i++) {
        top_k(c->router + (size_t)i * X, X, K, ids); /* ranking by logits = ranking by softmax */
        for (int64_t s = 0; s < K; s++) count[ids[s]]++;
    }
    int n = 0;
    for (int64_t x = 0; x < X; x++)
        if (count[x]) c->used[n++] = (int)x;
    for (int a = 1; a < n; a++) /* by count, descending (insertion sort: X is small) */
        for (int b = a; b > 0 && count[c->used[b]] > count[c->used[b - 1]]; b--) {
            int t = c->used[b];
            c->used[b] = c->used[b - 1];
            c->used[b - 1] = t;
        }
    e0_experts_prefetch(c->xc, il + 1, c->used, n < c->expert_slots ? n : (int)c->expert_slots);
}

/* Predicted routing for one token: compute with the predicted experts, weighted by the actual
 * router's probabilities of them (renormalized like the model's own top-k). */
static void use_prediction(e0_ctx *c, int il) {
    const e0_hparams *hp = c->hp;
    const int64_t K = hp->n_expert_used;
    const int *pred = c->pred + (size_t)il * K;
    const float *p = c->router; /* probabilities after route() */
    float sum = 0;
    for (int64_t s = 0; s < K; s++) {
        c->sel[s] = pred[s];
        c->sel_w[s] = p[pred[s]];
        sum += p[pred[s]];
    }
    if (hp->moe_norm_topk) {
        if (sum < 6.103515625e-5f) sum = 6.103515625e-5f;
        for (int64_t s = 0; s < K; s++) c->sel_w[s] /= sum;
    }
}

/* Routed experts for n_tok rows of xn; result (weighted sum) into out. */
static int moe_ffn(e0_ctx *c, int il, int n_tok, float *out) {
    const e0_layer *L = &c->m->layers[il];
    const e0_hparams *hp = c->hp;
    const int64_t E = hp->n_embd, X = hp->n_expert, K = hp->n_expert_used, F = hp->n_ff_exp;
    double t0 = clock_if(c);
    act_reset(&c->act, c->xn, n_tok, E);
    matmul(c, &L->router, c->router);
    route(c, n_tok);
    if (n_tok == 1 && c->pred_valid[il]) { /* how good was the prediction for this layer? */
        const int *pred = c->pred + (size_t)il * K;
        for (int64_t s = 0; s < K; s++)
            for (int64_t r = 0; r < K; r++) c->pred_hits[il] += pred[s] == c->sel[r];
        c->pred_total[il] += (uint64_t)K;
        if (c->predicted) use_prediction(c, il);
        c->pred_valid[il] = false;
    }
    if (n_tok == 1 && (c->predicted || c->prefetch)) predict_ahead(c, il);
    act_reset(&c->act, c->xn, n_tok, E); /* predict_ahead used the activation cache */
    prefill_read_ahead(c, il, n_tok);
    double t1 = clock_if(c);
    c->stats.router += t1 - t0;

    /* Group (token, slot) pairs by expert (counting sort; stable in token order). */
    int *start = c->expert_start;
    memset(start, 0, (size_t)(X + 1) * sizeof *start);
    for (int64_t i = 0; i < n_tok * K; i++) start[c->sel[i] + 1]++;
    for (int64_t x = 0; x < X; x++) start[x + 1] += start[x];
    for (int i = 0; i < n_tok; i++)
        for (int64_t s = 0; s < K; s++) {
            int x = c->sel[(size_t)i * K + s];
            int p = start[x]++;
            c->pair_of[(size_t)i * K + s] = p;
            c->pair_tok[p] = i;
        }
    for (int64_t x = X; x > 0; x--) start[x] = start[x - 1];
    start[0] = 0;

    /* Inputs gathered per pair: gate's rows at pair_xq, up's (if another type) after them. */
    uint32_t tg = vec_dot_type(&L->gate_exps), tu = vec_dot_type(&L->up_exps);
    size_t sg, su;
    const uint8_t *xg = act_get(c, tg, &sg);
    const uint8_t *xu = tu == tg ? xg : act_get(c, tu, &su);
    if (tu == tg) su = sg;
    size_t half = (size_t)n_tok * (size_t)K * c->max_act_row;
    uint8_t *gx = c->pair_xq, *ux = tu == tg ? gx : c->pair_xq + half;
    for (int p = 0; p < n_tok * K; p++) {
        memcpy(gx + (size_t)p * sg, xg + (size_t)c->pair_tok[p] * sg, sg);
        if (tu != tg) memcpy(ux + (size_t)p * su, xu + (size_t)c->pair_tok[p] * su, su);
    }
    /* The experts used, in id order; streamed ones are taken in batches that fit the slots. */
    int n_used = 0;
    for (int64_t x = 0; x < X; x++)
        if (start[x + 1] > start[x]) c->used[n_used++] = (int)x;
    const e0_weight *g = &L->gate_exps, *u = &L->up_exps, *d = &L->down_exps;
    const uint32_t td = vec_dot_type(d);
    const size_t sd = e0_row_size(td, F);
    const int batch = c->xc ? (int)c->expert_slots : n_used;
    for (int b0 = 0; b0 < n_used; b0 += batch) {
        int nb = n_used - b0 < batch ? n_used - b0 : batch;
        if (experts_get(c, il, c->used + b0, nb) < 0) return -1;
        int p0 = start[c->used[b0]], p1 = start[c->used[b0 + nb - 1] + 1]; /* this batch's pairs */
        /* gate and up of the batch's experts in one dispatch */
        int nj = 0;
        for (int k = 0; k < nb; k++) {
            int x = c->used[b0 + k], n = start[x + 1] - start[x];
            c->jobs[nj++] = (e0_matmul){c->ptrs[k].gate, g->type, E, F, g->row_bytes, gx + (size_t)start[x] * sg, sg, n,
                                        c->pair_h + (size_t)start[x] * F, F};
            c->jobs[nj++] = (e0_matmul){c->ptrs[k].up, u->type, E, F, u->row_bytes, ux + (size_t)start[x] * su, su, n,
                                        c->pair_h2 + (size_t)start[x] * F, F};
        }
        e0_matmul_run(c->pool, c->jobs, nj);
        e0_swiglu(c->pair_h + (size_t)p0 * F, c->pair_h2 + (size_t)p0 * F, (int64_t)(p1 - p0) * F);
        /* down of the batch's experts in one dispatch */
        const uint8_t *hx = (const uint8_t *)c->pair_h;
        size_t hstride = (size_t)F * sizeof(float);
        if (td != E0_TYPE_F32) {
            e0_quantize_rows(c->pool, td, c->pair_h + (size_t)p0 * F, p1 - p0, F, c->pair_hq + (size_t)p0 * sd, sd);
            hx = c->pair_hq;
            hstride = sd;
        }
        nj = 0;
        for (int k = 0; k < nb; k++) {
            int x = c->used[b0 + k], n = start[x + 1] - start[x];
            c->jobs[nj++] = (e0_matmul){c->ptrs[k].down, d->type, F, E, d->row_bytes, hx + (size_t)start[x] * hstride,
                                        hstride, n, c->pair_out + (size_t)start[x] * E, E};
        }
        e0_matmul_run(c->pool, c->jobs, nj);
        if (c->xc) e0_experts_release(c->xc, il);
    }

    /* Weighted sum per token, in slot order. */
    for (int i = 0; i < n_tok; i++) {
        float *o = out + (size_t)i * E;
        memset(o, 0, (size_t)E * sizeof(float));
        for (int64_t s = 0; s < K; s++) {
            const float w = c->sel_w[(size_t)i * K + s];
            const float *y = c->pair_out + (size_t)c->pair_of[(size_t)i * K + s] * E;
            for (int64_t e = 0; e < E; e++) o[e] += w * y[e];
        }
    }
    c->stats.experts += clock_if(c) - t1;
    return 0;
}

static int ffn(e0_ctx *c, int il, int n_tok, float *out) {
    const e0_hparams *hp = c->hp;
    const e0_layer *L = &c->m->layers[il];
    double t0 = clock_if(c);
    if (hp->n_expert == 0) {
        swiglu_ffn(c, &L->ffn_gate, &L->ffn_up, &L->ffn_down, n_tok, out);
        c->stats.ffn_dense += clock_if(c) - t0;
        return 0;
    }
    if (moe_ffn(c, il, n_tok, out) < 0) return -1;
    t0 = clock_if(c);
    if (hp->shared_expert) {
        /* out += sigmoid(w . xn) * shared_expert(xn); att is free here: use it for the result. */
        float *sh = c->att;
        swiglu_ffn(c, &L->gate_shexp, &L->up_shexp, &L->down_shexp, n_tok, sh);
        for (int i = 0; i < n_tok; i++) {
            const float *xn = c->xn + (size_t)i * hp->n_embd;
            float g = 0;
            for (int64_t e = 0; e < hp->n_embd; e++) g += L->shexp_gate_inp[e] * xn[e];
            g = 1.0f / (1.0f + expf(-g));
            for (int64_t e = 0; e < hp->n_embd; e++) out[(size_t)i * hp->n_embd + e] += g * sh[(size_t)i * hp->n_embd + e];
        }
        c->stats.ffn_dense += clock_if(c) - t0;
    }
    return 0;
}

/* ---- the model ---- */

static int forward_chunk(e0_ctx *c, const int *tokens, int n_tok, float *all_logits) {
    c->pool = n_tok > 1 ? c->pool_prefill : c->pool_decode;
    const e0_model *m = c->m;
    const e0_hparams *hp = c->hp;
    const int64_t E = hp->n_embd;
    const int pos0 = c->pos;
    float *x = c->x;
    float *ffn_out = c->q; /* q is free after attention; sized for max(q_dim, n_embd) per token */

    for (int i = 0; i < n_tok; i++) e0_get_row(&m->tok_embd, tokens[i], x + (size_t)i * E);

    for (int64_t il = 0; il < hp->n_layer; il++) {
        const e0_layer *L = &m->layers[il];
        double t0 = clock_if(c);
        for (int i = 0; i < n_tok; i++) e0_rmsnorm(c->xn + i * E, x + i * E, L->attn_norm, E, hp->rms_eps);
        attention(c, L, (int)il, n_tok, pos0); /* -> c->xn */
        for (int64_t i = 0; i < n_tok * E; i++) x[i] += c->xn[i];
        c->stats.attention += clock_if(c) - t0;

        for (int i = 0; i < n_tok; i++) e0_rmsnorm(c->xn + i * E, x + i * E, L->ffn_norm, E, hp->rms_eps);
        if (ffn(c, (int)il, n_tok, ffn_out) < 0) return -1;
        for (int64_t i = 0; i < n_tok * E; i++) x[i] += ffn_out[i];
    }
    double t0 = clock_if(c);

    /* Logits: for every token if asked, else only the last. */
    int first = all_logits ? 0 : n_tok - 1;
    for (int i = first; i < n_tok; i++) e0_rmsnorm(c->xn + (i - first) * E, x + i * E, m->output_norm, E, hp->rms_eps);
    act_reset(&c->act, c->xn, n_tok - first, E);
    float *out = all_logits ? all_logits : c->logits;
    matmul(c, &m->output, out);
    if (all_logits) memcpy(c->logits, all_logits + (size_t)(n_tok - 1) * hp->n_vocab, (size_t)hp->n_vocab * sizeof(float));
    c->stats.output += clock_if(c) - t0;
    c->stats.tokens += (uint64_t)n_tok;
    c->pos += n_tok;
    return 0;
}

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
            /* The KV cache holds a partial chunk: forget it, keep what was complete before. */
            return -1;
        }
        done += chunk;
    }
    return 0;
}

/* ---- context ---- */

static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }

e0_ctx *e0_ctx_new(const e0_model *m, const e0_ctx_params *p, e0_err *e) {
    const e0_hparams *hp = &m->hp;
    e0_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        e0_fail(e, "out of memory");
        return NULL;
    }
    c->m = m;
    c->hp = hp;
    c->n_ctx = p && p->n_ctx > 0 ? p->n_ctx : (int)(hp->n_ctx_train < 4096 ? hp->n_ctx_train : 4096);
    c->n_batch = p && p->n_batch > 0 ? p->n_batch : 256;
    c->n_threads = p && p->n_threads > 0 ? p->n_threads : e0_physical_cores();
    c->n_threads_prefill = p && p->n_threads_prefill > 0 ? p->n_threads_prefill : c->n_threads;
    int max_threads = c->n_threads > c->n_threads_prefill ? c->n_threads : c->n_threads_prefill;
    if (c->n_ctx > hp->n_ctx_train) {
        e0_fail(e, "context size %d exceeds the model's context_length %lld", c->n_ctx, (long long)hp->n_ctx_train);
        goto fail;
    }
    c->q_dim = hp->n_head * hp->head_dim;
    c->kv_dim = hp->n_head_kv * hp->head_dim;
    c->ff_max = hp->n_ff > hp->n_ff_shexp ? hp->n_ff : hp->n_ff_shexp;
    c->pool_decode = e0_pool_new(c->n_threads);
    c->pool_prefill = c->n_threads_prefill == c->n_threads ? c->pool_decode : e0_pool_new(c->n_threads_prefill);
    if (!c->pool_decode || !c->pool_prefill) {
        e0_fail(e, "cannot start %d threads", max_threads);
        goto fail;
    }
    c->pool = c->pool_decode;

    /* KV cache */
    c->kv_bytes = (size_t)hp->n_layer * (size_t)c->n_ctx * (size_t)c->kv_dim * sizeof(float);
    c->k_cache = e0_alloc(E0_MEM_KV, c->kv_bytes);
    c->v_cache = e0_alloc(E0_MEM_KV, c->kv_bytes);
    if (!c->k_cache || !c->v_cache) {
        e0_fail(e, "cannot allocate the KV cache (2 x %zu bytes; lower -c)", c->kv_bytes);
        goto fail;
    }

    /* Largest converted activation row: any vec_dot_type for any input width we use. */
    int64_t widths[] = {hp->n_embd, c->q_dim, c->ff_max, hp->n_ff_exp};
    uint32_t vtypes[] = {E0_TYPE_Q8_0, E0_TYPE_Q8_1, E0_TYPE_Q8_K, E0_TYPE_F32};
    for (size_t i = 0; i < 4; i++)
        for (size_t j = 0; j < 4; j++) {
            const e0_type_traits *tt = e0_type_traits_of(vtypes[j]);
            int64_t w = widths[i];
            if (w <= 0) continue;
            int64_t blocks = (w + tt->block_size - 1) / tt->block_size;
            c->max_act_row = max_sz(c->max_act_row, (size_t)blocks * tt->type_size);
        }

    /* Scratch: one allocation carved into buffers. */
    const size_t B = (size_t)c->n_batch, E = (size_t)hp->n_embd, X = (size_t)hp->n_expert,
                 K = (size_t)(hp->n_expert_used ? hp->n_expert_used : 1), F = (size_t)hp->n_ff_exp;
    const size_t QE = max_sz((size_t)c->q_dim, E); /* q doubles as the FFN output buffer */
    struct {
        void **ptr;
        size_t bytes;
    } parts[] = {
        {(void **)&c->x, B * E * 4},
        {(void **)&c->xn, B * QE * 4},
        {(void **)&c->q, B * QE * 4},
        {(void **)&c->k, B * (size_t)c->kv_dim * 4},
        {(void **)&c->v, B * (size_t)c->kv_dim * 4},
        {(void **)&c->att, B * QE * 4},
        {(void **)&c->hb, B * max_sz((size_t)c->ff_max, E) * 4},
        {(void **)&c->hb2, B * max_sz((size_t)c->ff_max, E) * 4},
        {(void **)&c->logits, (size_t)hp->n_vocab * 4},
        {(void **)&c->scores, (size_t)max_threads * (size_t)c->n_ctx * (size_t)(hp->n_head / hp->n_head_kv) * 4},
        {(void **)&c->act.buf[0], B * c->max_act_row},
        {(void **)&c->act.buf[1], B * c->max_act_row},
        {(void **)&c->act.buf[2], B * c->max_act_row},
        {(void **)&c->act.buf[3], B * c->max_act_row},
        {(void **)&c->router, X ? B * X * 4 : 0},
        {(void **)&c->sel, X ? B * K * sizeof(int) : 0},
        {(void **)&c->sel_w, X ? B * K * 4 : 0},
        {(void **)&c->pair_of, X ? B * K * sizeof(int) : 0},
        {(void **)&c->pair_tok, X ? B * K * sizeof(int) : 0},
        {(void **)&c->expert_start, X ? (X + 1) * sizeof(int) : 0},
        {(void **)&c->pair_xq, X ? 2 * B * K * c->max_act_row : 0},
        {(void **)&c->pair_hq, X ? B * K * c->max_act_row : 0},
        {(void **)&c->used, X * sizeof(int)},
        {(void **)&c->ptrs, X * sizeof(e0_expert_ptrs)},
        {(void **)&c->pred, X ? (size_t)hp->n_layer * K * sizeof(int) : 0},
        {(void **)&c->pred_valid, X ? (size_t)hp->n_layer * sizeof(bool) : 0},
        {(void **)&c->pred_logits, X * sizeof(float)},
        {(void **)&c->pred_hits, X ? (size_t)hp->n_layer * sizeof(uint64_t) : 0},
        {(void **)&c->pred_total, X ? (size_t)hp->n_layer * sizeof(uint64_t) : 0},
        {(void **)&c->pair_h, X ? B * K * F * 4 : 0},
        {(void **)&c->pair_h2, X ? B * K * F * 4 : 0},
        {(void **)&c->pair_out, X ? B * K * E * 4 : 0},
        {(void **)&c->jobs, (2 * X + 4) * sizeof(e0_matmul)},
    };
    size_t total = 0;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) total += (parts[i].bytes + 63) & ~(size_t)63;
    c->scratch_bytes = total;
    if (!(c->scratch = e0_alloc(E0_MEM_SCRATCH, total))) {
        e0_fail(e, "cannot allocate %zu bytes of scratch buffers", total);
        goto fail;
    }
    size_t off = 0;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        *parts[i].ptr = parts[i].bytes ? c->scratch + off : NULL;
        off += (parts[i].bytes + 63) & ~(size_t)63;
    }
    if (X) {
        memset(c->pred_valid, 0, (size_t)hp->n_layer * sizeof(bool));
        memset(c->pred_hits, 0, (size_t)hp->n_layer * sizeof(uint64_t));
        memset(c->pred_total, 0, (size_t)hp->n_layer * sizeof(uint64_t));
    }
    c->predict_from = 1;
    c->predict_ahead = 1;
    return c;
fail:
    e0_ctx_free(c);
    return NULL;
}

void e0_ctx_free(e0_ctx *c) {
    if (!c) return;
    if (c->pool_prefill != c->pool_decode) e0_pool_free(c->pool_prefill);
    e0_pool_free(c->pool_decode);
    e0_free(E0_MEM_KV, c->k_cache, c->kv_bytes);
    e0_free(E0_MEM_KV, c->v_cache, c->kv_bytes);
    e0_free(E0_MEM_SCRATCH, c->scratch, c->scratch_bytes);
    free(c);
}

const float *e0_ctx_logits(const e0_ctx *c) { return c->logits; }
int e0_ctx_pos(const e0_ctx *c) { return c->pos; }
int e0_ctx_n_ctx(const e0_ctx *c) { return c->n_ctx; }
int e0_ctx_n_threads(const e0_ctx *c) { return c->n_threads; }
const e0_model *e0_ctx_model(const e0_ctx *c) { return c->m; }

void e0_ctx_truncate(e0_ctx *c, int pos) {
    if (pos >= 0 && pos < c->pos) c->pos = pos;
    if (c->pred_valid) memset(c->pred_valid, 0, (size_t)c->hp->n_layer * sizeof(bool));
}
int e0_ctx_n_threads_prefill(const e0_ctx *c) { return c->n_threads_prefill; }

void e0_ctx_set_experts(e0_ctx *c, e0_experts *xc, int64_t slots) {
    c->xc = xc;
    c->expert_slots = slots;
}

void e0_ctx_set_routing(e0_ctx *c, bool predicted, int predict_from, int predict_ahead, bool prefetch) {
    c->predicted = predicted && c->hp->n_expert > 0;
    c->prefetch = prefetch && c->hp->n_expert > 0;
    c->predict_from = predict_from < 1 ? 1 : predict_from;
    c->predict_ahead = predict_ahead < 1 ? 1 : predict_ahead;
}

void e0_ctx_set_prefill_read(e0_ctx *c, bool ahead, int min_tokens) {
    c->prefill_ahead = ahead;
    c->prefill_ahead_min = min_tokens;
}

int e0_ctx_n_batch(const e0_ctx *c) { return c->n_batch; }

void e0_ctx_prediction_stats(const e0_ctx *c, int layer, uint64_t *hits, uint64_t *total) {
    bool ok = c->pred_hits && layer >= 0 && layer < c->hp->n_layer;
    *hits = ok ? c->pred_hits[layer] : 0;
    *total = ok ? c->pred_total[layer] : 0;
}
void e0_ctx_enable_timing(e0_ctx *c, bool on) { c->timing = on; }
const e0_ctx_stats *e0_ctx_get_stats(const e0_ctx *c) { return &c->stats; }
void e0_ctx_reset_stats(e0_ctx *c) {
    memset(&c->stats, 0, sizeof c->stats);
    if (c->pred_hits) {
        memset(c->pred_hits, 0, (size_t)c->hp->n_layer * sizeof(uint64_t));
        memset(c->pred_total, 0, (size_t)c->hp->n_layer * sizeof(uint64_t));
    }
}
