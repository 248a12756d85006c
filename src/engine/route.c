/* route.c — the arithmetic of MoE routing shared by the forward pass and the expert predictor:
 * router logits -> scores (softmax, or sigmoid for DeepSeek-V3-style gating), top-k selection
 * (optionally on scores plus a correction bias, and limited to the best expert groups), and the
 * weights of the selected experts (the unbiased scores, optionally renormalized, then scaled by
 * the routed scaling factor) — with the semantics of llama.cpp's build_moe_ffn. */
#include <math.h>
#include <stdbool.h>

#include "engine/ctx_impl.h"

void e0_top_k(const float *p, int64_t X, int64_t K, int *ids) {
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

void e0_route_weights(const e0_hparams *hp, const float *p, const int *ids, float *w) {
    const int64_t K = hp->n_expert_used;
    float sum = 0;
    for (int64_t s = 0; s < K; s++) {
        w[s] = p[ids[s]];
        sum += p[ids[s]];
    }
    if (hp->gating == E0_GATING_SOFTMAX_WEIGHT) e0_softmax(w, K); /* gpt-oss: softmax over the selected */
    if (hp->moe_norm_topk) {
        if (sum < 6.103515625e-5f) sum = 6.103515625e-5f;
        for (int64_t s = 0; s < K; s++) w[s] /= sum;
    }
    const float scale = hp->expert_weights_scale; /* 0 for the architectures without one */
    if (scale != 0.0f && scale != 1.0f)
        for (int64_t s = 0; s < K; s++) w[s] *= scale;
}

/* ---- gating beyond softmax + top-k (deepseek2; glm4moe and minimax-m2 reuse it) ---- */

void e0_route_probs(const e0_hparams *hp, const float *bias, float *p) {
    const int64_t X = hp->n_expert;
    if (bias) /* gpt-oss: ffn_gate_inp.bias */
        for (int64_t x = 0; x < X; x++) p[x] += bias[x];
    if (hp->gating == E0_GATING_SIGMOID) {
        for (int64_t x = 0; x < X; x++) p[x] = 1.0f / (1.0f + expf(-p[x]));
        return;
    }
    if (hp->gating == E0_GATING_SOFTMAX) e0_softmax(p, X);
    /* E0_GATING_SOFTMAX_WEIGHT: the (biased) logits rank; e0_route_weights takes the softmax */
}

/* Group-limited selection scores, in place: s [X] in n_expert_groups equal groups; each group
 * scores the sum of its two best s (one if the group has one expert); the n_group_used best
 * groups (ties: lower group) keep their s, the others' become -inf. */
static void limit_groups(const e0_hparams *hp, float *s) {
    const int64_t G = hp->n_expert_groups, per = hp->n_expert / G;
    float gs[512];
    bool keep[512];
    for (int64_t g = 0; g < G && g < 512; g++) {
        const float *q = s + g * per;
        float b1 = -INFINITY, b2 = -INFINITY;
        for (int64_t x = 0; x < per; x++) {
            if (q[x] > b1) b2 = b1, b1 = q[x];
            else if (q[x] > b2) b2 = q[x];
        }
        gs[g] = per > 1 ? b1 + b2 : b1;
        keep[g] = false;
    }
    for (int64_t u = 0; u < hp->n_group_used; u++) {
        int64_t best = -1;
        for (int64_t g = 0; g < G && g < 512; g++)
            if (!keep[g] && (best < 0 || gs[g] > gs[best])) best = g;
        if (best >= 0) keep[best] = true;
    }
    for (int64_t g = 0; g < G; g++)
        if (g >= 512 || !keep[g])
            for (int64_t x = 0; x < per; x++) s[g * per + x] = -INFINITY;
}

void e0_route_select(const e0_hparams *hp, const float *bias, const float *p, int *ids, float *tmp) {
    const int64_t X = hp->n_expert, K = hp->n_expert_used;
    const bool groups = hp->n_expert_groups > 1 && hp->n_group_used > 0;
    if (!bias && !groups) {
        e0_top_k(p, X, K, ids);
        return;
    }
    /* the correction bias only chooses; the weights stay the unbiased p */
    for (int64_t x = 0; x < X; x++) tmp[x] = bias ? p[x] + bias[x] : p[x];
    if (groups) limit_groups(hp, tmp);
    e0_top_k(tmp, X, K, ids);
}

void e0_route_token(const e0_hparams *hp, const float *router_b, const float *sel_bias, float *p, int *ids, float *w,
                    float *tmp) {
    e0_route_probs(hp, router_b, p);
    e0_route_select(hp, sel_bias, p, ids, tmp);
    e0_route_weights(hp, p, ids, w);
}
