/* engine.h — the inference context: a model plus its KV cache, scratch buffers and threads.
 *
 *   e0_ctx *c = e0_ctx_new(model, &(e0_ctx_params){.n_ctx = 4096, .n_threads = 2}, &err);
 *   e0_eval(c, prompt, n_prompt, NULL, &err);       // prefill (batched)
 *   int next = e0_argmax(e0_ctx_logits(c), n_vocab);  // engine/sample.h
 *   e0_eval(c, &next, 1, NULL, &err);                // decode one token
 *
 * All buffers are allocated by e0_ctx_new; evaluating tokens allocates nothing.
 * Implemented by ctx.c (construction, accessors, stats), forward.c (e0_eval) and
 * experts_predict.c (the routing / prefetch policy setters); the fields are in ctx_impl.h. */
#ifndef E0_ENGINE_H
#define E0_ENGINE_H

#include "engine/model.h"
#include "base/threadpool.h"

#define E0_CTX_DEFAULT_BATCH 512 /* llama.cpp's ubatch; 512 over 256: prefill +13% on the Qwen3-30B-A3B shape (more tokens per expert GEMM) */
#define E0_CTX_MIN_AUTO_BATCH 16 /* the smallest chunk the residency rule shrinks the default to (load.h) */

typedef struct e0_ctx_params {
    int n_ctx;     /* KV cache length; 0 = min(model context_length, 4096) */
    int n_threads; /* decode threads; 0 = physical cores, at most the usable CPUs */
    int n_threads_prefill; /* threads for chunks of more than one token; 0 = n_threads */
    int n_batch;   /* tokens per prefill chunk (experts stream once per chunk); 0 = E0_CTX_DEFAULT_BATCH */
    /* KV cache element types (quant.h ids): E0_TYPE_F32, F16, BF16, Q8_0 or Q4_0, as llama.cpp's
     * --cache-type-k / --cache-type-v. Zero is F32 (exact); the CLI's default is F16, as llama.cpp's. */
    uint32_t type_k, type_v;
    /* Another context over the same model whose work buffers (activations, quantized rows, expert
     * grouping, attention tiles: all but the logits and the predictor's state) this one uses
     * instead of its own, with the same n_ctx, n_batch, threads and KV types: contexts that are
     * never evaluated at the same time (serve's slots, bench --batch-size; e0_eval_batch works in
     * ctxs[0]'s buffers anyway). It must outlive this one. NULL: buffers of its own. */
    const struct e0_ctx *scratch_owner;
} e0_ctx_params;

typedef struct e0_ctx e0_ctx;

e0_ctx *e0_ctx_new(const e0_model *m, const e0_ctx_params *p, e0_err *e);
void e0_ctx_free(e0_ctx *c);
/* Bytes e0_ctx_new(m, p) allocates in the memory ledger (KV cache + scratch buffers), for the
 * residency rule; m may be a metadata-only model. */
uint64_t e0_ctx_memory(const e0_model *m, const e0_ctx_params *p);
/* The same for a context that will share another's work buffers (p->scratch_owner): its KV cache
 * and its own buffers only. */
uint64_t e0_ctx_memory_sharing(const e0_model *m, const e0_ctx_params *p);

/* Evaluate n prompt tokens at the current position (appending to the KV cache), in chunks of at
 * most n_batch; every token is routed exactly (routing=predicted applies to generated tokens
 * only: e0_decode), so the results do not depend on how a prompt is cut into calls. If
 * all_logits is not NULL it receives n x n_vocab floats (row i = logits after token i). The
 * logits after the last token are always available from e0_ctx_logits(). Errors: context
 * overflow, bad token id. */
int e0_eval(e0_ctx *c, const int *tokens, int n, float *all_logits, e0_err *e);
/* Evaluate one generated token (a decode step): e0_eval of it, except that under
 * routing=predicted (and routing=replay with replay_predict) its experts are the predicted ones,
 * and with prefetch=on the predictions are read ahead. Same errors. */
int e0_decode(e0_ctx *c, int token, e0_err *e);
const float *e0_ctx_logits(const e0_ctx *c);
/* The tokens of several sequences in one forward pass (batch.c): ctxs[i] (n_seq distinct contexts
 * over the same model, each at its own position) appends tokens[i][0 .. n[i]), n[i] >= 1: a
 * prompt piece, or (decode[i]; decode may be NULL: none) one generated token, or any mix.
 * Afterwards each context's e0_ctx_logits() are those after its last token and its position has
 * advanced by n[i]; the results are bit-identical to e0_eval(ctxs[i], tokens[i], n[i], NULL), or
 * e0_decode(ctxs[i], tokens[i][0]) for a decode[i], on each alone (for n[i] <= its n_batch: the
 * same chunk).
 * The matrix products and routed experts run once over the stacked rows in the scratch of
 * ctxs[0], whose n_batch must be >= the sum of n[i] (so weights and the batch's experts are read
 * once per step); RoPE, the KV append and attention use each sequence's own context. Falls back
 * to one e0_eval / e0_decode per context (same results) for one sequence, deepseek2 (MLA), the
 * hybrid DeltaNet architectures, and contexts whose KV types, sizes or routing options differ
 * from ctxs[0]'s. Errors: a NULL or repeated context, another model, context overflow, a bad
 * token id, no tokens, too many, a decode[i] with n[i] != 1; on error no position moved (unless
 * a fallback e0_eval had already advanced the first contexts). */
int e0_eval_multi(e0_ctx *const *ctxs, const int *const *tokens, const int *n, const bool *decode, int n_seq, e0_err *e);
/* One decode step of n sequences: e0_eval_multi with one generated token each (token i for
 * ctxs[i]), i.e. e0_decode on each alone. */
int e0_eval_batch(e0_ctx *const *ctxs, const int *tokens, int n, e0_err *e);
int e0_ctx_pos(const e0_ctx *c);
int e0_ctx_n_ctx(const e0_ctx *c);
int e0_ctx_n_threads(const e0_ctx *c);
/* Forget everything from position pos on (pos <= current position). Hybrid models (recurrent
 * state) cannot go back to 0 < pos < current: they forget everything (e0_ctx_pos() is then 0);
 * with sliding-window layers the cache may only go back to 0 (when their rings no longer hold
 * the window position pos needs). A caller reusing a prefix reads e0_ctx_pos() afterwards to
 * know what is still cached. */
void e0_ctx_truncate(e0_ctx *c, int pos);
/* Bytes of the recurrent state (hybrid models' DeltaNet conv and delta-rule states; 0 otherwise):
 * of this context, and of one sequence of a model with hp (deltanet.c). */
uint64_t e0_ctx_recurrent_bytes(const e0_ctx *c);
uint64_t e0_recurrent_bytes(const e0_hparams *hp);
const e0_model *e0_ctx_model(const e0_ctx *c);
int e0_ctx_n_threads_prefill(const e0_ctx *c);
/* Make c run on the thread pools of `owner` (c's own are freed): contexts evaluated one at a time
 * (serve's slots, all stepped by one scheduler thread) then share one set of workers sized to the
 * cores instead of each keeping its own. The pools must be of the same sizes; owner must outlive
 * c and never be evaluated while c is. 0, or -1 with *e. */
int e0_ctx_share_threads(e0_ctx *c, e0_ctx *owner, e0_err *e);
/* The KV cache's element types and its size (K and V, all layers, n_ctx positions). */
uint32_t e0_ctx_type_k(const e0_ctx *c);
uint32_t e0_ctx_type_v(const e0_ctx *c);
uint64_t e0_ctx_kv_bytes(const e0_ctx *c);

/* ---- KV cache types (kv.c) ---- */
/* The type named as llama.cpp names it (f32, f16, bf16, q8_0, q4_0); -1 with an error otherwise. */
int e0_kv_type_parse(const char *name, uint32_t *type, e0_err *e);
/* The name of a KV cache type ("?" for one that is not). */
const char *e0_kv_type_name(uint32_t type);
/* Can this model's KV cache use these types? (q8_0 / q4_0 need head_dim a multiple of 32.) */
int e0_kv_check(const e0_hparams *hp, uint32_t type_k, uint32_t type_v, e0_err *e);
/* Bytes of one row of `type`: one position of one layer (n_head_kv * head_dim values). */
size_t e0_kv_row_bytes(const e0_hparams *hp, uint32_t type);
/* Bytes the KV cache takes per position: K and V rows of every layer of full attention. */
uint64_t e0_kv_bytes_per_pos(const e0_hparams *hp, uint32_t type_k, uint32_t type_v);
/* Bytes the sliding-window layers' K and V take whatever the context length: their window of
 * n_swa positions (0 without such layers). */
uint64_t e0_kv_bytes_swa(const e0_hparams *hp, uint32_t type_k, uint32_t type_v);
/* Bytes the sliding-window layers' K and V rings take as a context allocates them: rows of
 * min(n_ctx, n_swa + n_batch - 1) positions each (the window plus a prefill chunk, every key a
 * chunk's queries may see, as llama.cpp's SWA cache holds n_swa + n_ubatch cells); 0 without such
 * layers. */
uint64_t e0_kv_bytes_swa_ring(const e0_hparams *hp, uint32_t type_k, uint32_t type_v, int n_ctx, int n_batch);
/* The rows of one sliding-window layer's ring: min(n_ctx, n_swa + n_batch - 1); 0 without SWA. */
int e0_kv_swa_rows(const e0_hparams *hp, int n_ctx, int n_batch);

/* Stream routed experts through this cache (NULL: use the model's resident expert tensors); a
 * layer's experts are taken in batches of at most its slots (e0_experts_slots). */
struct e0_experts;
void e0_ctx_set_experts(e0_ctx *c, struct e0_experts *xc);
/* predicted: layers from predict_from on compute with the experts predicted one layer ahead
 * (the next layer's router applied to this layer's hidden state), read in the background;
 * predict_ahead layers are predicted and read ahead; prefetch (actual routing): read those
 * predictions ahead but compute with the actual experts. */
void e0_ctx_set_routing(e0_ctx *c, bool predicted, int predict_from, int predict_ahead, bool prefetch);
/* prefill_read=auto: in chunks of at least min_tokens, read the next layer's likely experts while
 * the current layer computes. */
void e0_ctx_set_prefill_read(e0_ctx *c, bool ahead, int min_tokens);
int e0_ctx_n_batch(const e0_ctx *c);
/* routing=replay: take every MoE layer's experts from trace t (not owned; must outlive c),
 * cycling through its steps from first_step on. predict_p >= 0: the predictor (routing=predicted
 * semantics, and prefetch / prefill_read) is given the trace's experts, each right with
 * probability predict_p and otherwise a wrong expert drawn from `seed`; < 0: there is no
 * predictor. Sequences decoded together (bench --batch-size, serve's slots) start at
 * e0_replay_first_step: spread over the trace, as independent requests route differently. */
struct e0_trace;
void e0_ctx_set_replay(e0_ctx *c, const struct e0_trace *t, double predict_p, uint64_t seed, uint64_t first_step);
/* Sequence i of n: trace step floor(i * n_step / n). */
uint64_t e0_replay_first_step(const struct e0_trace *t, int i, int n);
/* The routing log (tests and diagnostics: `edge0-infer logits --routes`): fn(user, layer, pos,
 * experts, k) for every token of every MoE layer, with the k experts the token is computed with
 * (after replay and prediction), in the router's order; pos is the token's position in its
 * sequence. fn NULL turns it off. Not called from e0_eval_batch. */
typedef void (*e0_route_log_fn)(void *user, int layer, int pos, const int *experts, int k);
void e0_ctx_set_route_log(e0_ctx *c, e0_route_log_fn fn, void *user);
/* Per layer: predicted experts that the actual router also chose, out of all predicted. */
void e0_ctx_prediction_stats(const e0_ctx *c, int layer, uint64_t *hits, uint64_t *total);

/* Where evaluation time goes (seconds, summed over calls since the last reset). The phase times
 * are only collected while timing is enabled (it costs a clock read per phase); expert_wait,
 * tokens and the expert counts always are. The expert cache keeps its own I/O accounting (e0_experts_get_stats). */
typedef struct e0_ctx_stats {
    double attention;   /* norm, q/k/v, RoPE, attention, output projection, residual */
    double router;      /* router, routing and the prediction / prefetch policy */
    double experts;     /* routed experts, including expert_wait */
    double expert_wait; /* acquiring streamed experts (reading the missing ones) */
    double ffn_dense;   /* dense FFN, or the shared expert */
    double output;      /* final norm and logits */
    uint64_t tokens;    /* tokens evaluated */
    /* Routed experts computed: MoE layer passes (a layer of a chunk, decode step or batch), the
     * distinct experts they computed (a batch's union counted once) and those experts' weight
     * bytes (e0_expert_bytes); counted whether or not timing is enabled. */
    uint64_t moe_passes, experts_computed, expert_bytes_computed;
} e0_ctx_stats;
void e0_ctx_enable_timing(e0_ctx *c, bool on);
const e0_ctx_stats *e0_ctx_get_stats(const e0_ctx *c);
void e0_ctx_reset_stats(e0_ctx *c);

#endif
