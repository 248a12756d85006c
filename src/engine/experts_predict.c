/* experts_predict.c — expert prediction and prefetch policy: which experts to read before the
 * router asks for them, and (routing=predicted) which to compute with. It owns the `pred` part
 * of e0_ctx (ctx_impl.h) and the options that set it:
 *   routing=predicted   decode (a generated token: pred.decoding, set by e0_decode and by
 *                       e0_eval_multi's decode sequences; never a prompt token, even one
 *                       evaluated alone), layers from predict_from on: compute with the experts predicted
 *                       one layer ahead (that layer's router applied to the previous layer's FFN
 *                       input), weighted by the actual router's probabilities of them
 *   predict_ahead=D     decode: predict layers il+1 .. il+D at layer il and start reading them
 *   prefetch=on         with actual routing: only read the predictions ahead, compute exactly
 *   prefill_read=auto   prefill chunks of >= prefill_ahead_min tokens: while a layer computes,
 *                       read the experts the next layer's router ranks highest for the chunk
 * and the per-layer prediction hit counts. In a batch (batch.c: the rows of several sequences)
 * each sequence's rows get what its chunk alone would: a decoding sequence's row (its one
 * generated token) is predicted, scored and replaced from its own hidden state into its own pred state; one with
 * at least prefill_ahead_min rows has its rows ranked for prefill_read; the reads ahead are the
 * union of the rows' predictions and rankings, asked for once. Reads go through the expert cache (experts.h) as
 * e0_experts_prefetch: they never wait and never evict a pinned expert, so with actual routing
 * the results are those of resident experts whatever is predicted.
 *
 * routing=replay (a measurement mode) takes each MoE layer's experts from a routing trace
 * (trace.h) in e0_replay_route(); the predictor then has no router to work from: with
 * replay_predict=P it is given the trace's experts of the layers ahead, each right with
 * probability P and otherwise a wrong expert (replay_guess), and everything above
 * (routing=predicted semantics, predict_ahead, prefetch, prefill_read) runs on those guesses;
 * without replay_predict there is no predictor and nothing is read ahead. */
#include <string.h>

#include "engine/ctx_impl.h"
#include "engine/trace.h"

/* ---- routing=replay ---- */

/* The context whose replay state row i of the chunk uses, and that row's trace step: a chunk's
 * tokens are consecutive steps of its context; in a batch (batch.c) of the row's sequence. */
static e0_ctx *replay_row(e0_ctx *c, int i, uint64_t *step) {
    e0_ctx *s = e0_row_ctx(c, i);
    *step = s->replay.step + (uint64_t)(c->batch.seqs ? c->batch.row_off[i] : i);
    return s;
}

/* Rows of the chunk's sequence with row i (a chunk: all n_tok). */
static int seq_rows(const e0_ctx *c, int i, int n_tok) {
    if (!c->batch.seqs) return n_tok;
    const int s = c->batch.row_seq[i];
    return c->batch.seg0[s + 1] - c->batch.seg0[s];
}

/* Is row i a generated token (its sequence's pred.decoding), not a prompt token? */
static bool row_decodes(const e0_ctx *c, int i) {
    return c->batch.seqs ? c->batch.seqs[c->batch.row_seq[i]]->pred.decoding : c->pred.decoding;
}

/* The predictor's guess dst [K] for model layer il, token i of the chunk (e0_trace_guess). */
static void replay_guess(e0_ctx *c, int il, int i, int *dst) {
    const e0_trace *t = c->replay.trace;
    uint64_t step;
    e0_ctx *s = replay_row(c, i, &step);
    e0_trace_guess(e0_trace_experts(t, step, e0_trace_layer_for(t, il, c->hp->n_layer)), c->hp->n_expert_used,
                   c->hp->n_expert, s->replay.predict_p, &s->replay.rng, dst);
}

void e0_replay_route(e0_ctx *c, int il, int n_tok) {
    const e0_trace *t = c->replay.trace;
    const int64_t K = c->hp->n_expert_used;
    const int li = e0_trace_layer_for(t, il, c->hp->n_layer);
    for (int i = 0; i < n_tok; i++) {
        uint64_t step;
        replay_row(c, i, &step);
        const int *ids = e0_trace_experts(t, step, li);
        const float *tw = e0_trace_weights(t, step, li);
        int *sel = c->moe.sel + (size_t)i * K;
        float *w = c->moe.sel_w + (size_t)i * K;
        float sum = 0;
        for (int64_t s = 0; s < K; s++) {
            sel[s] = ids[s];
            w[s] = tw ? tw[s] : 1.0f / (float)K;
            sum += w[s];
        }
        if (tw && c->hp->moe_norm_topk && sum > 0)
            for (int64_t s = 0; s < K; s++) w[s] /= sum;
    }
}

void e0_ctx_set_replay(e0_ctx *c, const e0_trace *t, double predict_p, uint64_t seed, uint64_t first_step) {
    c->replay.trace = c->hp->n_expert > 0 ? t : NULL;
    c->replay.step = first_step;
    c->replay.predict_p = predict_p;
    c->replay.rng = seed ? seed : 1;
}

uint64_t e0_replay_first_step(const e0_trace *t, int i, int n) {
    return t && i > 0 && n > 0 ? (uint64_t)i * (uint64_t)t->n_step / (uint64_t)n : 0;
}

/* ---- prediction ---- */

/* A layer's prediction for the token of sequence s, made one layer earlier, scored against the
 * router's choice sel [K]; routing=predicted: the token computes with the predicted experts,
 * weighted by the router's probabilities p [X] of them (renormalized as the model does). */
static void use_prediction(e0_ctx *s, int il, int *sel, float *sel_w, const float *p) {
    const int64_t K = s->hp->n_expert_used;
    const int *pred = s->pred.ids + (size_t)il * K;
    for (int64_t a = 0; a < K; a++)
        for (int64_t r = 0; r < K; r++) s->pred.hits[il] += pred[a] == sel[r];
    s->pred.total[il] += (uint64_t)K;
    if (s->pred.predicted) {
        memcpy(sel, pred, (size_t)K * sizeof *pred);
        /* replay: no router probabilities to weight with; the slot weights stay the trace's */
        if (!s->replay.trace) e0_route_weights(s->hp, p, pred, sel_w);
    }
    s->pred.valid[il] = false;
}

/* The layer whose experts are predicted d layers after il, or -1 (past the last layer, before
 * predict_from, or a dense layer such as deepseek2's leading ones). */
static int layer_ahead(const e0_ctx *c, int il, int d) {
    int next = il + d;
    if (next >= c->hp->n_layer || next < c->pred.predict_from || !c->m->layers[next].router.t) return -1;
    return next;
}

/* Decode step, layer il: predict the experts of layers il+1 .. il+predict_ahead from this
 * layer's FFN input xn [1][E] (the residual stream changes slowly, so a later layer's router
 * applied to it mostly agrees) and start reading them. The prediction for il+1 is the one
 * predicted routing computes with (kept in pred.ids); those further ahead only start reads. */
static void predict_ahead(e0_ctx *c, int il) {
    const e0_hparams *hp = c->hp;
    e0_matmul_input(c, c->act.xn, 1, hp->n_embd);
    for (int d = 1; d <= c->pred.predict_ahead; d++) {
        if (d > 1 && hp->n_expert_used > 64) break;
        const int next = layer_ahead(c, il, d);
        if (next < 0) continue;
        const e0_layer *N = &c->m->layers[next];
        int ids[64], *dst = d == 1 ? c->pred.ids + (size_t)next * hp->n_expert_used : ids;
        if (c->replay.trace) {
            replay_guess(c, next, 0, dst); /* replay: the trace's experts, right with probability P */
        } else {
            /* xn [1][E] -> pred.logits [X] -> probabilities -> top K */
            e0_matmul_weight(c, &N->router, c->pred.logits);
            e0_route_probs(hp, N->router_b, c->pred.logits); /* the model's own choice, as route() does */
            e0_route_select(hp, N->exp_probs_b, c->pred.logits, dst, c->moe.route_tmp);
        }
        if (d == 1) c->pred.valid[next] = true;
        if (c->moe.xc) e0_experts_prefetch(c->moe.xc, next, dst, (int)hp->n_expert_used);
    }
}

/* ranked [0 .. n) = the experts with count [x] > 0, by count descending (ties: lower id first);
 * returns n. */
static int rank_by_count(const int *count, int64_t X, int *ranked) {
    int n = 0;
    for (int64_t x = 0; x < X; x++)
        if (count[x]) ranked[n++] = (int)x;
    for (int a = 1; a < n; a++) /* insertion sort: X is small */
        for (int b = a; b > 0 && count[ranked[b]] > count[ranked[b - 1]]; b--) {
            int t = ranked[b];
            ranked[b] = ranked[b - 1];
            ranked[b - 1] = t;
        }
    return n;
}

/* predict_ahead for the decode rows of a batch of n rows (row_decodes: generated tokens; prompt
 * rows predict nothing): each row's
 * predictions from its own xn row, as its sequence alone would make them (the router's rows come
 * out of one matrix product with the same bits as one-row products), into its sequence's pred
 * state; then one read ahead of the rows' union, the experts most rows predicted first.
 * Aliases, safe because moe_ffn refills each after this returns: logits [n][X] = moe.router,
 * whose probabilities use_prediction has read; count [X+1] = moe.expert_start; ranked [X] =
 * moe.used. */
static void predict_ahead_batch(e0_ctx *c, int il, int n) {
    const e0_hparams *hp = c->hp;
    const int64_t X = hp->n_expert, K = hp->n_expert_used;
    float *logits = c->moe.router;
    int *count = c->moe.expert_start, *ranked = c->moe.used;
    e0_matmul_input(c, c->act.xn, n, hp->n_embd);
    for (int d = 1; d <= c->pred.predict_ahead; d++) {
        if (d > 1 && K > 64) break;
        const int next = layer_ahead(c, il, d);
        if (next < 0) continue;
        const e0_layer *N = &c->m->layers[next];
        if (!c->replay.trace) e0_matmul_weight(c, &N->router, logits);
        memset(count, 0, (size_t)(X + 1) * sizeof *count);
        for (int i = 0; i < n; i++) {
            if (!row_decodes(c, i)) continue;
            e0_ctx *s = e0_row_ctx(c, i);
            int ids[64], *dst = d == 1 ? s->pred.ids + (size_t)next * K : ids;
            if (c->replay.trace) {
                replay_guess(c, next, i, dst); /* replay: the sequence's trace step, right with probability P */
            } else {
                float *p = logits + (size_t)i * X;
                e0_route_probs(hp, N->router_b, p);
                e0_route_select(hp, N->exp_probs_b, p, dst, c->moe.route_tmp);
            }
            if (d == 1) s->pred.valid[next] = true;
            for (int64_t k = 0; k < K; k++) count[dst[k]]++;
        }
        if (c->moe.xc) e0_experts_prefetch(c->moe.xc, next, ranked, rank_by_count(count, X, ranked));
    }
}

/* prefill_read=auto, layer il of a chunk of n_tok tokens with streamed experts: while this layer
 * computes, start reading the experts the next layer will most likely use — its router applied
 * to this layer's FFN inputs xn [n][E], experts ranked by how many tokens pick them, as many as
 * its slots hold. Rows of chunks (a batch: of sequences) of at least prefill_ahead_min tokens. */
static void prefill_read_ahead(e0_ctx *c, int il, int n_tok) {
    const e0_hparams *hp = c->hp;
    if (!c->moe.xc || !c->pred.prefill_ahead || il + 1 >= hp->n_layer) return;
    bool any = false;
    for (int i = 0; i < n_tok && !any; i++) any = seq_rows(c, i, n_tok) >= c->pred.prefill_ahead_min;
    if (!any) return;
    if (!c->m->layers[il + 1].router.t) return; /* the next layer is dense */
    if (c->replay.trace && c->replay.predict_p < 0) return; /* replay without a predictor */
    const int64_t X = hp->n_expert, K = hp->n_expert_used;
    /* Aliases, safe because moe_ffn refills each after this returns:
     *   next_logits [n][X]: moe.router, whose probabilities route() and use_prediction() have read;
     *   count [X+1]: moe.expert_start, rebuilt by the grouping;
     *   ranked [X]: moe.used, rebuilt from the grouping. */
    float *next_logits = c->moe.router;
    int *count = c->moe.expert_start;
    int *ranked = c->moe.used;
    if (!c->replay.trace) e0_matmul_weight(c, &c->m->layers[il + 1].router, next_logits);
    const float *next_b = c->m->layers[il + 1].router_b; /* gpt-oss: ranked by the biased logits */
    if (!c->replay.trace && next_b)
        for (int i = 0; i < n_tok; i++)
            for (int64_t x = 0; x < X; x++) next_logits[(size_t)i * X + x] += next_b[x];
    memset(count, 0, (size_t)(X + 1) * sizeof *count);
    int ids[64];
    for (int i = 0; i < n_tok && K <= 64; i++) {
        if (seq_rows(c, i, n_tok) < c->pred.prefill_ahead_min) continue;
        if (c->replay.trace) replay_guess(c, il + 1, i, ids); /* replay: the trace, right with probability P */
        else e0_top_k(next_logits + (size_t)i * X, X, K, ids); /* ranking by logits = ranking by softmax */
        for (int64_t s = 0; s < K; s++) count[ids[s]]++;
    }
    const int n = rank_by_count(count, X, ranked);
    const int slots = e0_experts_slots(c->moe.xc, il + 1);
    e0_experts_prefetch(c->moe.xc, il + 1, ranked, n < slots ? n : slots);
}

void e0_predict_after_route(e0_ctx *c, int il, int n_tok) {
    const e0_hparams *hp = c->hp;
    const int64_t K = hp->n_expert_used, X = hp->n_expert;
    const bool predictor = !c->replay.trace || c->replay.predict_p >= 0;
    if (c->batch.seqs) { /* a batch (batch.c): a decoding sequence's row is predicted, prompt rows route exactly */
        bool decode = false;
        for (int i = 0; i < n_tok; i++) {
            if (!row_decodes(c, i)) continue;
            decode = true;
            e0_ctx *s = e0_row_ctx(c, i);
            if (s->pred.valid[il])
                use_prediction(s, il, c->moe.sel + (size_t)i * K, c->moe.sel_w + (size_t)i * K, c->moe.router + (size_t)i * X);
        }
        if (decode && predictor && (c->pred.predicted || c->pred.prefetch)) predict_ahead_batch(c, il, n_tok);
        e0_matmul_input(c, c->act.xn, n_tok, hp->n_embd); /* the predictor used the matmul input cache */
        prefill_read_ahead(c, il, n_tok);
        if (c->replay.trace && il == hp->n_layer - 1) /* each sequence's rows are routed */
            for (int q = 0; q < c->batch.n_seq; q++)
                c->batch.seqs[q]->replay.step += (uint64_t)(c->batch.seg0[q + 1] - c->batch.seg0[q]);
        return;
    }
    const bool decode = c->pred.decoding; /* one generated token (e0_decode); prompt chunks of any size route exactly */
    if (decode && c->pred.valid[il]) use_prediction(c, il, c->moe.sel, c->moe.sel_w, c->moe.router);
    if (decode && predictor && (c->pred.predicted || c->pred.prefetch)) predict_ahead(c, il);
    e0_matmul_input(c, c->act.xn, n_tok, hp->n_embd); /* predict_ahead used the matmul input cache */
    prefill_read_ahead(c, il, n_tok);
    if (c->replay.trace && il == hp->n_layer - 1) c->replay.step += (uint64_t)n_tok; /* the chunk is routed */
}

void e0_predict_forget(e0_ctx *c) {
    if (c->pred.valid) memset(c->pred.valid, 0, (size_t)c->hp->n_layer * sizeof(bool));
}

void e0_predict_reset_stats(e0_ctx *c) {
    if (c->pred.hits) {
        memset(c->pred.hits, 0, (size_t)c->hp->n_layer * sizeof(uint64_t));
        memset(c->pred.total, 0, (size_t)c->hp->n_layer * sizeof(uint64_t));
    }
}

void e0_ctx_set_routing(e0_ctx *c, bool predicted, int predict_from, int predict_ahead, bool prefetch) {
    c->pred.predicted = predicted && c->hp->n_expert > 0;
    c->pred.prefetch = prefetch && c->hp->n_expert > 0;
    c->pred.predict_from = predict_from < 1 ? 1 : predict_from;
    c->pred.predict_ahead = predict_ahead < 1 ? 1 : predict_ahead;
}

void e0_ctx_set_prefill_read(e0_ctx *c, bool ahead, int min_tokens) {
    c->pred.prefill_ahead = ahead;
    c->pred.prefill_ahead_min = min_tokens;
}

void e0_ctx_prediction_stats(const e0_ctx *c, int layer, uint64_t *hits, uint64_t *total) {
    bool ok = c->pred.hits && layer >= 0 && layer < c->hp->n_layer;
    *hits = ok ? c->pred.hits[layer] : 0;
    *total = ok ? c->pred.total[layer] : 0;
}
