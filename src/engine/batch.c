/* batch.c — e0_eval_batch (engine.h): one decode step of several sequences in one forward pass.
 *
 * The n tokens (token i = the next token of context ctxs[i]) are stacked as the n rows of one
 * chunk evaluated in the scratch of ctxs[0] by forward.c's forward_chunk with c->batch.seqs set:
 * embeddings, norms, every matrix product (q/k/v, output projection, dense FFN, router, shared
 * expert, logits) and the routed experts run once over the n rows, so each weight is read once
 * per step for all sequences, and in a MoE layer the union of the batch's experts is grouped,
 * acquired from the expert cache (streamed: read once) and computed once. Per-token parts use the
 * token's own context: RoPE at its position, the KV append into its cache, attention over it.
 *
 * Bit-identity with e0_eval on each context alone holds because every per-row operation gives a
 * row the same bits whatever the other rows (matmul_rows: gemm, vec_dot_4 and vec_dot agree bit
 * for bit; which thread computes a row never matters), and routing, the weighted expert sum and
 * attention are per token. tests/test_batch.c checks it.
 *
 * routing=predicted (the default when experts stream), prefetch=on and routing=replay batch too
 * (experts_predict.c): each row's prediction for the next layer is made from its own hidden
 * state (replay: its own sequence's trace step and predictor state) into its own sequence's pred
 * state, and the union of the rows' predictions is read ahead once.
 *
 * Falls back to one e0_eval per context (same results, no shared weight reads) where a batch
 * does not apply: a single token, deepseek2's MLA, the hybrid DeltaNet architectures (their
 * recurrent state is per sequence and their layers work on whole chunks), and contexts whose KV
 * types, sizes or routing options (trace included) differ from ctxs[0]'s. */
#include <stdlib.h>
#include <string.h>

#include "engine/ctx_impl.h"

/* Can these contexts be evaluated as one batch in the scratch of ctxs[0]? */
static bool batchable(e0_ctx *const *ctxs, int n) {
    const e0_ctx *c = ctxs[0];
    const e0_hparams *hp = c->hp;
    if (n < 2 || hp->mla || hp->hybrid) return false;
    for (int i = 0; i < n; i++) {
        const e0_ctx *s = ctxs[i];
        if (s->replay.trace != c->replay.trace || s->replay.predict_p != c->replay.predict_p) return false;
        if (s->n_ctx != c->n_ctx || s->kv.type_k != c->kv.type_k || s->kv.type_v != c->kv.type_v) return false;
        if (s->pred.predicted != c->pred.predicted || s->pred.prefetch != c->pred.prefetch ||
            s->pred.predict_from != c->pred.predict_from || s->pred.predict_ahead != c->pred.predict_ahead)
            return false;
    }
    return true;
}

int e0_eval_batch(e0_ctx *const *ctxs, const int *tokens, int n, e0_err *e) {
    if (n <= 0) return e0_fail(e, "no tokens to evaluate");
    if (!ctxs || !tokens) return e0_fail(e, "e0_eval_batch: no contexts or tokens");
    e0_ctx *c = ctxs[0];
    const e0_hparams *hp = c->hp;
    for (int i = 0; i < n; i++) {
        const e0_ctx *s = ctxs[i];
        if (!s) return e0_fail(e, "e0_eval_batch: context %d is NULL", i);
        if (s->m != c->m) return e0_fail(e, "e0_eval_batch: context %d is over another model", i);
        for (int j = 0; j < i; j++)
            if (ctxs[j] == s) return e0_fail(e, "e0_eval_batch: context %d appears twice (at %d and %d)", i, j, i);
        if ((int64_t)s->pos + 1 > s->n_ctx)
            return e0_fail(e, "context overflow: %d tokens in the cache + 1 new > context size %d (use -c to raise it)",
                           s->pos, s->n_ctx);
        if (tokens[i] < 0 || tokens[i] >= hp->n_vocab)
            return e0_fail(e, "token id %d out of range (vocabulary size %lld)", tokens[i], (long long)hp->n_vocab);
    }
    if (!batchable(ctxs, n)) {
        for (int i = 0; i < n; i++)
            if (e0_eval(ctxs[i], &tokens[i], 1, NULL, e) < 0) return -1;
        return 0;
    }
    if (n > c->n_batch)
        return e0_fail(e, "e0_eval_batch: %d sequences > the first context's n_batch %d", n, c->n_batch);

    /* the batch's logits rows [n][n_vocab], kept for the next step */
    const size_t need = (size_t)n * (size_t)hp->n_vocab;
    if (need > c->batch.cap) {
        float *p = realloc(c->batch.logits, need * sizeof(float));
        if (!p) return e0_fail(e, "out of memory (%d rows of logits)", n);
        c->batch.logits = p;
        c->batch.cap = need;
    }
    c->err = e;
    c->batch.seqs = ctxs;
    int rc = e0_forward_chunk(c, tokens, n, c->batch.logits);
    c->batch.seqs = NULL;
    /* On failure no position moved: the partial KV rows are beyond every sequence's end. */
    if (rc < 0) return -1;
    for (int i = 0; i < n; i++) {
        memcpy(ctxs[i]->act.logits, c->batch.logits + (size_t)i * hp->n_vocab, (size_t)hp->n_vocab * sizeof(float));
        /* a step's predictions are used within it: none pending is for the next step */
        e0_predict_forget(ctxs[i]);
    }
    return 0;
}
