/* route.c — the arithmetic of MoE routing shared by the forward pass and the expert predictor:
 * top-k selection over router scores and the weights of the selected experts. */
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
}

void e0_route_probs(const e0_hparams *hp, const float *bias, float *p) {
    const int64_t X = hp->n_expert;
    if (bias)
        for (int64_t x = 0; x < X; x++) p[x] += bias[x];
    if (hp->gating == E0_GATING_SOFTMAX) e0_softmax(p, X);
}
