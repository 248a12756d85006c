/* batch.c — e0_eval_multi and e0_eval_batch (engine.h): the tokens of several sequences in one
 * forward pass — a decode step of many (one token each), prompt chunks of several, or both.
 *
 * The sequences' tokens are stacked, each sequence's consecutive, as the rows of one chunk
 * evaluated in the scratch of ctxs[0] by forward.c's forward_chunk with c->batch set (row -> its
 * sequence and offset, sequence -> its rows: ctx_impl.h): embeddings, norms, every matrix product
 * (q/k/v, output projection, dense FFN, router, shared expert) and the routed experts run once
 * over all the rows, so each weight is read once per step for all sequences, and in a MoE layer
 * the union of the batch's experts is grouped, acquired from the expert cache (streamed: read
 * once) and computed once. Per-sequence parts use the sequence's own context: RoPE at its
 * positions, the KV append into its cache, attention over it (the tiled kernel on exactly the
 * items its chunk alone would have), the logits after its last row.
 *
 * Bit-identity with e0_eval on each context alone (given the same chunks) holds because every
 * per-row operation gives a row the same bits whatever the other rows (matmul_rows: gemm,
 * vec_dot_4 and vec_dot agree bit for bit; which thread computes a row never matters), routing
 * and the weighted expert sum are per token, and attention is per sequence. tests/test_batch.c
 * checks it.
 *
 * routing=predicted (the default when experts stream), prefetch=on, prefill_read=auto and
 * routing=replay batch too (experts_predict.c): a decoding sequence (its one generated token)
 * predicts as its e0_decode alone would, into its own pred state; prompt pieces route exactly; the reads ahead are
 * the union of the rows' predictions, asked for once.
 *
 * Falls back to one e0_eval / e0_decode per context (same results, no shared weight reads) where a batch
 * does not apply: a single sequence, deepseek2's MLA, the hybrid DeltaNet architectures (their
 * recurrent state is per sequence and their layers work on whole chunks), and contexts whose KV
 * types, sizes or routing options (trace included) differ from ctxs[0]'s. */
#include <stdlib.h>
#include <string.h>

#include "engine/attn_tiled.h"
#include "engine/ctx_impl.h"

/* Can these contexts be evaluated as one batch in the scratch of ctxs[0]? */
static bool batchable(e0_ctx *const *ctxs, int n) {
    const e0_ctx *c = ctxs[0];
    const e0_hparams *hp = c->hp;
    if (n < 2 || hp->mla || hp->hybrid) return false; /* (one sequence: e0_eval, the same) */
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

/* The batch's tables (ctx_impl.h) for c: allocated once for n_batch rows in the context that
 * holds c's work buffers — its scratch owner when it shares one (contexts sharing them are never
 * evaluated at the same time, engine.h), so serve's slots keep one set between them whichever
 * comes first in a step — and lent to c; logits grown there to n_seq rows. */
static int batch_storage(e0_ctx *c, int n_seq, e0_err *e) {
    e0_ctx *h = c->scratch_owner ? (e0_ctx *)c->scratch_owner : c; /* the owner is never const itself */
    const size_t nb = (size_t)h->n_batch;
    if (!h->batch.idx) {
        h->batch.idx = malloc((4 * nb + 1) * sizeof *h->batch.idx);
        h->batch.tok_ptrs = malloc(nb * sizeof *h->batch.tok_ptrs);
        h->batch.ones = malloc(nb * sizeof *h->batch.ones);
        h->batch.attn = malloc(nb * sizeof *h->batch.attn);
        h->batch.attn_first = malloc((nb + 1) * sizeof *h->batch.attn_first);
        if (!h->batch.idx || !h->batch.tok_ptrs || !h->batch.ones || !h->batch.attn || !h->batch.attn_first) {
            free(h->batch.idx), free(h->batch.tok_ptrs), free(h->batch.ones), free(h->batch.attn), free(h->batch.attn_first);
            h->batch.idx = NULL, h->batch.tok_ptrs = NULL, h->batch.ones = NULL, h->batch.attn = NULL, h->batch.attn_first = NULL;
            return e0_fail(e, "out of memory (batch tables for %d rows)", h->n_batch);
        }
        h->batch.row_seq = h->batch.idx;
        h->batch.row_off = h->batch.idx + nb;
        h->batch.seg0 = h->batch.idx + 2 * nb;
        h->batch.tokens = h->batch.idx + 3 * nb + 1;
        for (size_t i = 0; i < nb; i++) h->batch.ones[i] = 1;
    }
    const size_t need = (size_t)n_seq * (size_t)h->hp->n_vocab;
    if (need > h->batch.cap) {
        float *p = realloc(h->batch.logits, need * sizeof(float));
        if (!p) return e0_fail(e, "out of memory (%d rows of logits)", n_seq);
        h->batch.logits = p;
        h->batch.cap = need;
    }
    if (h != c) { /* lent: everything but seqs and n_seq */
        e0_ctx *const *seqs = c->batch.seqs;
        const int n = c->batch.n_seq;
        c->batch = h->batch;
        c->batch.seqs = seqs, c->batch.n_seq = n;
    }
    return 0;
}

/* The row tables and the rows' tokens for n_seq sequences of n[s] tokens each (<= n_batch rows). */
static void batch_rows(e0_ctx *c, const int *const *tokens, const int *n, int n_seq) {
    int r = 0;
    for (int s = 0; s < n_seq; s++) {
        c->batch.seg0[s] = r;
        memcpy(c->batch.tokens + r, tokens[s], (size_t)n[s] * sizeof *c->batch.tokens);
        for (int j = 0; j < n[s]; j++, r++) c->batch.row_seq[r] = s, c->batch.row_off[r] = j;
    }
    c->batch.seg0[n_seq] = r;
}

/* e0_eval_multi; all_decode: every sequence decodes (e0_eval_batch), else decode[i] (may be NULL). */
static int eval_multi(e0_ctx *const *ctxs, const int *const *tokens, const int *n, const bool *decode, bool all_decode, int n_seq,
                      e0_err *e) {
    if (n_seq <= 0) return e0_fail(e, "no sequences to evaluate");
    if (!ctxs || !tokens || !n) return e0_fail(e, "e0_eval_multi: no contexts or tokens");
    e0_ctx *c = ctxs[0];
    if (!c) return e0_fail(e, "e0_eval_multi: context 0 is NULL");
    const e0_hparams *hp = c->hp;
    int64_t rows = 0;
    for (int i = 0; i < n_seq; i++) {
        const e0_ctx *s = ctxs[i];
        if (!s) return e0_fail(e, "e0_eval_multi: context %d is NULL", i);
        if (s->m != c->m) return e0_fail(e, "e0_eval_multi: context %d is over another model", i);
        for (int j = 0; j < i; j++)
            if (ctxs[j] == s) return e0_fail(e, "e0_eval_multi: context %d appears twice (at %d and %d)", i, j, i);
        if (n[i] <= 0 || !tokens[i]) return e0_fail(e, "e0_eval_multi: no tokens for context %d", i);
        if ((all_decode || (decode && decode[i])) && n[i] != 1)
            return e0_fail(e, "e0_eval_multi: context %d decodes %d tokens (a generated token is one)", i, n[i]);
        if ((int64_t)s->pos + n[i] > s->n_ctx)
            return e0_fail(e, "context overflow: %d tokens in the cache + %d new > context size %d (use -c to raise it)",
                           s->pos, n[i], s->n_ctx);
        for (int k = 0; k < n[i]; k++)
            if (tokens[i][k] < 0 || tokens[i][k] >= hp->n_vocab)
                return e0_fail(e, "token id %d out of range (vocabulary size %lld)", tokens[i][k], (long long)hp->n_vocab);
        rows += n[i];
    }
    if (rows > c->n_batch)
        return e0_fail(e, "e0_eval_multi: %lld tokens of %d sequences > the first context's n_batch %d", (long long)rows,
                       n_seq, c->n_batch);
    if (!batchable(ctxs, n_seq)) {
        for (int i = 0; i < n_seq; i++) {
            const bool dec = all_decode || (decode && decode[i]);
            if ((dec ? e0_decode(ctxs[i], tokens[i][0], e) : e0_eval(ctxs[i], tokens[i], n[i], NULL, e)) < 0) return -1;
        }
        return 0;
    }

    /* the rows' tokens, each sequence's consecutive, and the batch's logits [n_seq][n_vocab] */
    if (batch_storage(c, n_seq, e) < 0) return -1;
    batch_rows(c, tokens, n, n_seq);
    c->err = e;
    c->batch.seqs = ctxs;
    c->batch.n_seq = n_seq;
    for (int i = 0; i < n_seq; i++) ctxs[i]->pred.decoding = all_decode || (decode && decode[i]);
    int rc = e0_forward_chunk(c, c->batch.tokens, (int)rows, c->batch.logits);
    for (int i = 0; i < n_seq; i++) ctxs[i]->pred.decoding = false;
    c->batch.seqs = NULL;
    /* On failure no position moved: the partial KV rows are beyond every sequence's end. */
    if (rc < 0) return -1;
    for (int i = 0; i < n_seq; i++) {
        memcpy(ctxs[i]->act.logits, c->batch.logits + (size_t)i * hp->n_vocab, (size_t)hp->n_vocab * sizeof(float));
        /* a step's predictions are used within it: none pending is for the next step */
        e0_predict_forget(ctxs[i]);
    }
    return 0;
}

int e0_eval_batch(e0_ctx *const *ctxs, const int *tokens, int n, e0_err *e) {
    if (n <= 0) return e0_fail(e, "no tokens to evaluate");
    if (!ctxs || !tokens || !ctxs[0]) return e0_fail(e, "e0_eval_batch: no contexts or tokens");
    e0_ctx *c = ctxs[0];
    if (n > c->n_batch)
        return e0_fail(e, "e0_eval_batch: %d sequences > the first context's n_batch %d", n, c->n_batch);
    /* one token each: e0_eval_multi's arguments in ctxs[0]'s tables */
    if (batch_storage(c, n, e) < 0) return -1;
    for (int i = 0; i < n; i++) c->batch.tok_ptrs[i] = &tokens[i];
    return eval_multi(ctxs, c->batch.tok_ptrs, c->batch.ones, NULL, true, n, e);
}

int e0_eval_multi(e0_ctx *const *ctxs, const int *const *tokens, const int *n, const bool *decode, int n_seq, e0_err *e) {
    return eval_multi(ctxs, tokens, n, decode, false, n_seq, e);
}
