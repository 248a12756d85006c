/* ctx_impl.h — internal: the inside of e0_ctx (engine.h), shared by the files that use it:
 *   ctx.c             builds it (sizes and carves every buffer below), accessors, stats
 *   forward.c         the forward pass (e0_eval) and the matmul / routing helpers declared here
 *   kv.c              the KV cache's types and row conversions (declared here and in engine.h)
 *   experts_predict.c expert prediction and prefetch policy (routing=predicted, predict_ahead,
 *                     prefetch, prefill_read=auto)
 *   deltanet.c        the hybrid models' Gated DeltaNet layers and their recurrent state (rs),
 *                     gated attention, multi-section RoPE
 *
 * Shapes use B = n_batch (tokens per chunk), E = n_embd, X = n_expert, K = n_expert_used,
 * F = n_ff_exp, q_dim = n_head * head_dim, kv_dim = n_head_kv * head_dim. A chunk of n = n_tok
 * <= B tokens uses the first n rows of each [B][...] buffer. Every scratch buffer is carved from
 * one E0_MEM_SCRATCH allocation by e0_ctx_new; evaluating tokens allocates nothing. Buffers of
 * the MoE and predictor groups are NULL for a dense model (X = 0). */
#ifndef E0_CTX_IMPL_H
#define E0_CTX_IMPL_H

#include "engine/engine.h"
#include "engine/experts.h"
#include "engine/kernels.h"
#include "quant/quant.h"

#define E0_N_XQ_TYPES 4 /* distinct vec_dot_types one input may be needed in at once */

/* The input of the next matrix products (x, n_tok rows of n floats) and its rows converted to
 * the vec_dot_types they are needed in, so that q, k and v (for instance) share one conversion.
 * matmul_input() sets the input and forgets the conversions. */
typedef struct e0_xq_cache {
    const float *x;                   /* [n_tok][n], not owned */
    int n_tok;
    int64_t n;
    uint32_t type[E0_N_XQ_TYPES];
    bool valid[E0_N_XQ_TYPES];
    uint8_t *buf[E0_N_XQ_TYPES];      /* [B] rows of max_xq_row bytes each */
    size_t stride[E0_N_XQ_TYPES];     /* bytes between rows of buf[i] (e0_row_size of type[i], n) */
} e0_xq_cache;

struct e0_ctx {
    const e0_model *m;
    const e0_hparams *hp;
    int n_ctx;                /* KV cache length */
    int n_batch;              /* B: tokens per chunk */
    int pos;                  /* tokens in the KV cache */
    int64_t q_dim, kv_dim;
    int64_t ff_max;           /* max(n_ff, n_ff_shexp): widest dense / shared-expert FFN */
    size_t max_xq_row;        /* bytes of the largest converted activation row */
    e0_err *err;              /* where a failing step reports (set by e0_eval) */

    struct {
        e0_pool *cur;         /* the pool of the chunk being evaluated: prefill or decode */
        e0_pool *decode, *prefill; /* the same pool when both thread counts are equal */
        int n_decode, n_prefill;
        bool borrowed;        /* decode/prefill belong to another context (e0_ctx_share_threads) */
    } threads;

    /* The KV cache: per layer n_ctx rows (a ring or none: layer_rows) of kv_dim values after
     * RoPE, in the cache type (kv.c). Within a layer's rows the values are head-major: all the
     * slots of KV head 0, then of head 1, ..., a head's values being head_k (head_v) bytes, so one
     * head's keys (what an attention work item reads) are one contiguous stream
     * (e0_kv_head_k / e0_kv_head_v below). */
    struct {
        uint8_t *k, *v;
        uint32_t type_k, type_v;
        size_t row_k, row_v;       /* bytes of one row (all heads of a position) */
        size_t head_k, head_v;     /* bytes of one head's head_dim values */
        uint32_t q_type;           /* what q is converted to for the key dot products: type_k's
                                    * vec_dot_type (F32 for float keys, Q8_0 for q8_0 / q4_0) */
        size_t q_head;             /* bytes of one head of q in q_type */
        e0_vec_dot_fn dot_k;       /* key row (one head) . q (one head, in q_type) */
        bool f16_k, f16_v;         /* F16 keys / values with AVX2 + F16C: the fused loops of kv_avx2.c */
        int rot_k, rot_v;          /* Hadamard rotation sizes around quantized keys / values (kv_rot.c; 0: none) */
        size_t bytes_k, bytes_v;   /* of each buffer */
        /* sliding-window layers (attn_ext.c; all 0 / NULL without them): each keeps a ring of
         * swa_rows rows; layer il's rows start at row layer_row0[il], it has layer_rows[il] */
        int swa_rows;
        size_t *layer_row0;        /* [n_layer] */
        int *layer_rows;           /* [n_layer] */
        int swa_lo;                /* the rings hold the rows of every position >= swa_lo (< pos) */
    } kv;

    /* Activations, sized for B tokens. Rows are packed at the width of their current use, so a
     * buffer allocated B * max(q_dim, E) floats holds [n][q_dim] or [n][E]. */
    struct {
        float *x;             /* [B][E] residual stream */
        float *xn;            /* B * max(q_dim, E): normed x [n][E]; then the attention output
                               * projection [n][E] (forward_chunk's attn_out) */
        float *q;             /* B * max(q_dim, E): queries [n][q_dim]; then the FFN output [n][E]
                               * (forward_chunk's ffn_out) */
        float *k, *v;         /* [B][kv_dim] this chunk's keys and values before they enter the KV cache */
        float *att;           /* B * max(q_dim, E): attention output [n][q_dim]; then the shared
                               * expert's output [n][E] (ffn's shared) */
        float *hb, *hb2;      /* B * max(ff_max, E): gate and up outputs [n][ff] of the dense FFN
                               * (ff = n_ff) or the shared expert (ff = n_ff_shexp) */
        float *scores;        /* [max(threads)][n_head / n_head_kv][n_ctx] attention scores, per thread */
        uint8_t *kq;          /* [max(threads)][n_head / n_head_kv] heads of q converted for the keys
                               * (kv.q_type, or F32 rounded to F16 for kv.f16_k), per thread */
        float *vrow;          /* [max(threads)][head_dim] a value row converted to floats, per thread */
        float *logits;        /* [n_vocab] logits after the chunk's last token */
        uint8_t *tile;        /* [max(threads)][tile_bytes] tiled prefill attention's scratch
                               * (attn_tiled.c), per thread; NULL where it is not used (MLA) */
        size_t tile_bytes;
        uint8_t *embd_raw;    /* [tok_embd.row_bytes] one embedding row as stored, read from the file
                               * (a model with embd_from_file) */
    } act;

    e0_xq_cache xq;

    /* Routed experts (forward.c moe_ffn). */
    struct {
        e0_experts *xc;       /* the expert cache when experts stream, else NULL (resident) */
        float *router;        /* [B][X] router logits, then probabilities (route) */
        int *sel;             /* [B][K] chosen experts per token */
        float *sel_w;         /* [B][K] their weights */
        int *pair_of;         /* [B][K] (token, slot) -> pair index; pairs are sorted by expert */
        int *pair_tok;        /* [B*K] token of each pair */
        int *expert_start;    /* [X + 1] first pair of each expert; [X] = number of pairs */
        uint8_t *pair_xq;     /* 2 * B*K rows of max_xq_row bytes: xn gathered per pair [n*K] for
                               * gate, then (when up takes another vec_dot_type) for up */
        uint8_t *pair_hq;     /* [B*K] rows of max_xq_row bytes: SwiGLU output converted for down */
        int *used;            /* [X] the experts the chunk uses, in id order */
        e0_expert_ptrs *ptrs; /* [X] matrices of the current batch of used experts */
        float *pair_h, *pair_h2; /* [B*K][F] gate and up outputs per pair */
        float *pair_out;      /* [B*K][E] down output per pair */
        e0_matmul *jobs;      /* [2 * X + 4] one dispatch's matrix products */
        float *route_tmp;     /* [X] biased / group-limited selection scores (route.c) */
    } moe;

    /* Multi-head latent attention (attn_mla.c; NULL unless hp->mla). H = n_head, C = kv_lora,
     * R = n_rot, KM = head_dim_k_mla, nope = KM - R, VM = head_dim_v_mla, QL = q_lora_rank. The
     * attention itself is forward.c's, over head_dim = C + R wide rows of one shared KV "head". */
    struct {
        float *qa;            /* [B][QL] q LoRA's first projection */
        float *gath;          /* [H][B][max(nope, C)] one head's rows gathered for its k_b / v_b */
        uint8_t *gathq;       /* the same, converted to the weight's vec_dot_type */
        e0_matmul *jobs;      /* [H] one matrix per head */
    } mla;

    /* Expert prediction and prefetch policy (experts_predict.c). */
    struct {
        bool decoding;        /* the pass under way evaluates a generated token on this context
                               * (e0_decode, or a decode sequence of e0_eval_multi): the only rows
                               * predicted routing computes with predicted experts; prompt tokens
                               * are always routed exactly, whatever their number */
        bool predicted;       /* routing=predicted: decode computes with the predicted experts */
        bool prefetch;        /* prefetch=on: read predictions ahead, compute with the actual ones */
        bool prefill_ahead;   /* prefill_read=auto */
        int predict_from;     /* first layer computed with predicted experts (>= 1) */
        int predict_ahead;    /* layers predicted (and read) ahead (>= 1) */
        int prefill_ahead_min; /* smallest chunk prefill_read=auto reads ahead for */
        int *ids;             /* [n_layer][K] experts predicted for layer l's next decode step */
        bool *valid;          /* [n_layer] ids[l] holds a prediction not yet scored */
        float *logits;        /* [X] a later layer's router applied to this layer's input */
        uint64_t *hits, *total; /* [n_layer] predicted experts the router also chose / predicted */
    } pred;

    /* routing=replay (experts_predict.c): each MoE layer takes its experts from a routing trace
     * (trace.h) instead of its router; model layer l uses trace layer e0_trace_layer_for(l). */
    struct {
        const struct e0_trace *trace; /* NULL: not replaying */
        uint64_t step;        /* trace step of the current chunk's first token (cycles) */
        double predict_p;     /* replay_predict: the predictor's accuracy; < 0: no predictor */
        uint64_t rng;         /* splitmix64 state of the predictor's wrong guesses */
    } replay;

    /* e0_eval_multi / e0_eval_batch (batch.c): while they evaluate on this context (the batch's
     * scratch), the chunk's rows are the tokens of n_seq sequences, each sequence's consecutive:
     * sequence s = seqs[s] owns rows seg0[s] .. seg0[s+1]-1, row i is token row_off[i] of its
     * sequence's this step (position seqs[row_seq[i]]->pos + row_off[i]): RoPE, KV append and
     * attention use that sequence's position and cache. seqs NULL otherwise (one context's chunk).
     * The tables, allocated on the first batch for n_batch rows (at most n_batch sequences, each
     * at least one row) in the context that holds the work buffers (the scratch owner, whose are
     * lent to the contexts sharing it; batch.c) and freed with it: row_seq, row_off [n_batch], seg0 [n_batch + 1]
     * and tokens [n_batch] (the rows' ids) in idx; tok_ptrs, ones [n_batch] (e0_eval_batch's
     * arguments); attn [n_batch], attn_first [n_batch + 1] (e0_attn_tiled_layer's per-sequence
     * arguments and item ranges). logits [cap / n_vocab][n_vocab]: the rows after each sequence's
     * last token (grown to the largest batch). */
    struct {
        e0_ctx *const *seqs;
        int n_seq;
        int *row_seq, *row_off, *seg0, *tokens;
        int *idx;
        const int **tok_ptrs;
        int *ones;
        struct e0_attn_args *attn;
        long *attn_first;
        float *logits;
        size_t cap;
    } batch;

    struct {
        e0_route_log_fn fn;   /* e0_ctx_set_route_log; NULL: off */
        void *user;
    } route_log;

    struct {
        bool timing;          /* collect the phase times (a clock read per phase) */
        e0_ctx_stats st;
    } stats;

    /* Hybrid models (deltanet.c; all NULL / 0 otherwise). C = conv channels (2*Hk*S + Hv*S), K = conv
     * kernel, S = state size, Hv = value heads, DI = Hv*S, R = DeltaNet layers. The state belongs to
     * the sequence like the KV cache: conv [R][K-1][C] and ssm [R][Hv][S][S] (E0_MEM_RECURRENT);
     * the rest is scratch for a chunk. */
    struct {
        float *conv, *ssm;    /* the recurrent state */
        size_t bytes_conv, bytes_ssm;
        int64_t conv_dim;     /* C */
        float *qkv;           /* [B][C] attn_qkv output, then the conv + silu output (q, k normed) */
        float *win;           /* [K-1+B][C] the conv window: state rows, then the chunk's */
        float *z;             /* [B][DI] the output gate */
        float *ba;            /* [B][2*Hv] ssm_ba (qwen3next) or [B][Hv] ssm_alpha output */
        float *beta, *gdec;   /* [B][Hv] beta (ssm_beta output, then sigmoid) and the decay g */
        float *o;             /* [B][DI] delta-rule output, then gated-normed */
        float *delta;         /* [max(threads)][S] per thread */
        float *qg;            /* [B][2*q_dim] attention layers' wq output: q and gate per head */
    } rs;

    uint8_t *scratch;         /* the one allocation every buffer above except kv is carved from; with a
                                 scratch_owner, only the own parts (logits, pred.*): the rest are its */
    size_t scratch_bytes;     /* that allocation's size */
    size_t scratch_layout_bytes; /* every part's bytes (the owner's allocation, when sharing) */
    const e0_ctx *scratch_owner; /* e0_ctx_params.scratch_owner; NULL: all its own */
};

/* The clock, only when timing is on (0 otherwise, so differences are 0). */
/* Row i of the chunk being evaluated: the context whose cache and position it uses (a batch:
 * its sequence's), and its position (pos0 + i for one context's chunk starting at pos0). */
static inline e0_ctx *e0_row_ctx(e0_ctx *c, int i) { return c->batch.seqs ? c->batch.seqs[c->batch.row_seq[i]] : c; }
static inline int e0_row_pos(const e0_ctx *c, int i, int pos0) {
    return c->batch.seqs ? c->batch.seqs[c->batch.row_seq[i]]->pos + c->batch.row_off[i] : pos0 + i;
}

static inline double e0_clock_if(const e0_ctx *c) { return c->stats.timing ? e0_now() : 0; }

/* ---- matmul_input.c ---- */

/* The activation type a weight's dot products take (Q8_0, Q8_K, F32, ...). */
static inline uint32_t e0_weight_vec_dot_type(const e0_weight *w) {
    return (uint32_t)e0_type_traits_of(w->type)->vec_dot_type;
}
/* The next matrix products read x [n_tok][n] (forgets earlier conversions). */
void e0_matmul_input(e0_ctx *c, const float *x, int n_tok, int64_t n);
/* The job y [n_tok][w->ne[1]] = W x for the current input (converted on first use per type). */
e0_matmul e0_matmul_job(e0_ctx *c, const e0_weight *w, float *y);
/* The current input's rows converted to `type` (F32: the input itself), converted on first use;
 * *stride = bytes per row. */
const uint8_t *e0_matmul_input_as(e0_ctx *c, uint32_t type, size_t *stride);
/* Runs that one job. */
void e0_matmul_weight(e0_ctx *c, const e0_weight *w, float *y);

/* ---- attn_tiled.c (tiled prefill attention, attn_tiled.h) ---- */

/* Whether attention takes the tiled path: every chunk, decode and batch (so that a token's result
 * does not depend on how the prompt was chunked or batched), except MLA (deepseek2); E0_ATTN=pos
 * forces the per-position path (forward.c attend, for comparisons). */
bool e0_attn_tiled_wanted(const e0_ctx *c);
/* act.q [n][q_dim] of layer il, KV cache up to pos0 + n (a batch: each sequence's rows over its
 * own cache, at its positions, with the per-sequence arguments in batch.attn) -> act.att
 * [n][q_dim], on the threads. */
void e0_attn_tiled_layer(e0_ctx *c, int il, int n_tok, int pos0);

/* ---- kv.c (and kv_avx2.c) ---- */

/* One row of n floats into the cache type (F16: F16C when present; block types: their quantizer). */
void e0_kv_store(uint32_t type, const float *x, int64_t n, uint8_t *row);
/* n values of a cache row (a multiple of the block size, from a block start) back to floats. */
void e0_kv_load(uint32_t type, const uint8_t *row, float *out, int64_t n);
/* w [n] rounded to `type` when it is F16 / BF16 (the values stay floats); unchanged otherwise. */
void e0_kv_round(uint32_t type, float *w, int64_t n);
void e0_kv_round_f16_avx2(float *w, int64_t n);
/* ---- kv_rot.c ---- */

/* The Hadamard size llama.cpp rotates q and k (v) by around a quantized K (V) cache; 0: none. */
int e0_kv_rot_k(const e0_hparams *hp, uint32_t type_k);
int e0_kv_rot_v(const e0_hparams *hp, uint32_t type_v);
/* x [n] -> H x, chunk by chunk of nrot (a power of two dividing n), as ggml's fwht computes it. */
void e0_kv_hadamard(float *x, int64_t n, int nrot);

/* s[h * s_stride] = scale * (F16 key row k . q + h * n) for h < n_h (q rounded to F16 already). */
void e0_kv_scores_f16_avx2(int64_t n, const uint8_t *k, const float *q, int n_h, float scale, float *s, size_t s_stride);
/* att + h * n += w[h * w_stride] * (F16 value row v) for h < n_h. */
void e0_kv_axpy_f16_avx2(int64_t n, const float *w, size_t w_stride, int n_h, const uint8_t *v, float *att);
void e0_kv_f32_to_f16_avx2(const float *x, uint8_t *row, int64_t n);
/* A row of n values of any KV type as floats (the scalar conversion's bits); false
 * (nothing written) for a type or length it does not take. */
bool e0_kv_to_f32_avx2(uint32_t type, const uint8_t *row, float *out, int64_t n);

/* ---- route.c ---- */

/* Top-k of p[0..X) into ids (descending; ties: lower id). */
void e0_top_k(const float *p, int64_t X, int64_t K, int *ids);
/* w[s] = p[ids[s]] for s < K, renormalized to sum 1 when the model asks (moe_norm_topk). */
void e0_route_weights(const e0_hparams *hp, const float *p, const int *ids, float *w);
/* Router logits p [X] -> the scores top-k ranks, in place: + bias (gpt-oss: ffn_gate_inp.bias,
 * NULL otherwise), then softmax (E0_GATING_SOFTMAX), sigmoid (E0_GATING_SIGMOID) or unchanged
 * (E0_GATING_SOFTMAX_WEIGHT, whose e0_route_weights takes the softmax over the selected ones). */
void e0_route_probs(const e0_hparams *hp, const float *bias, float *p);

/* ---- attn_ext.c: gpt-oss pieces (RoPE scaling, sinks, clamped SwiGLU, SWA cache layout) ---- */

/* RoPE of one layer as ggml's rope_ext takes it. */
typedef struct e0_rope_cfg {
    float base, freq_scale, ext_factor, attn_factor;
    float corr[2]; /* YaRN correction dims (ggml_rope_yarn_corr_dims) */
    bool neox;
} e0_rope_cfg;
void e0_rope_cfg_for_layer(const e0_hparams *hp, int64_t il, e0_rope_cfg *r);
/* Rotate one head vector (first n_rot dims) at position pos. */
void e0_rope_ext(float *x, int64_t n_rot, int pos, const e0_rope_cfg *r);
/* In-place softmax of x [n] with one more logit `sink` in the denominator (not returned). */
void e0_softmax_sink(float *x, int64_t n, float sink);
/* a[i] = gpt-oss's clamped SwiGLU of (gate a[i], up b[i]). */
void e0_swiglu_oai(float *a, const float *b, int64_t n);
/* Rows of a sliding-window layer's ring (0: the model has none). */
int e0_kv_swa_rows(const e0_hparams *hp, int n_ctx, int n_batch);
/* Rows of the whole cache; fills row0 / rows [n_layer] when not NULL. */
uint64_t e0_kv_layout_rows(const e0_hparams *hp, int n_ctx, int n_batch, size_t *row0, int *rows);
int e0_kv_layout_init(e0_ctx *c, e0_err *e);
void e0_kv_layout_free(e0_ctx *c);
/* A chunk of n_tok tokens from pos0 is about to overwrite ring rows. */
void e0_kv_swa_before_chunk(e0_ctx *c, int pos0, int n_tok);
/* The position the cache can be truncated to when pos is asked (pos, or 0 when the rings lost
 * rows the window of position pos needs). */
int e0_kv_swa_truncate(e0_ctx *c, int pos);

/* First row of layer il in the cache, and the row of position pos within it. */
static inline size_t e0_kv_layer_row0(const e0_ctx *c, int il) {
    return c->kv.layer_row0 ? c->kv.layer_row0[il] : (size_t)il * (size_t)c->n_ctx;
}
static inline size_t e0_kv_slot(const e0_ctx *c, int il, int pos) {
    return c->kv.layer_rows ? (size_t)(pos % c->kv.layer_rows[il]) : (size_t)pos;
}
/* Rows (slots) of layer il. */
static inline size_t e0_kv_layer_nrows(const e0_ctx *c, int il) {
    return c->kv.layer_rows ? (size_t)c->kv.layer_rows[il] : (size_t)c->n_ctx;
}
/* Layer il's keys (values) of KV head h: slot s's head_k (head_v) bytes at + s * head_k. */
static inline uint8_t *e0_kv_head_k(const e0_ctx *c, int il, int64_t h) {
    return c->kv.k + e0_kv_layer_row0(c, il) * c->kv.row_k + (size_t)h * e0_kv_layer_nrows(c, il) * c->kv.head_k;
}
static inline uint8_t *e0_kv_head_v(const e0_ctx *c, int il, int64_t h) {
    return c->kv.v + e0_kv_layer_row0(c, il) * c->kv.row_v + (size_t)h * e0_kv_layer_nrows(c, il) * c->kv.head_v;
}
/* The K experts ids of scores p [X]: plain top-k (the softmax path), or with the correction bias
 * [X] (may be NULL) added and the group limit applied for the choice only; tmp [X] scratch. */
void e0_route_select(const e0_hparams *hp, const float *bias, const float *p, int *ids, float *tmp);
/* One token: probs (router_b: the logits' bias, or NULL), select (sel_bias: the correction bias,
 * or NULL), weights (w [K]); p is left holding the scores without the correction bias. */
void e0_route_token(const e0_hparams *hp, const float *router_b, const float *sel_bias, float *p, int *ids, float *w,
                    float *tmp);

/* ---- attn_mla.c (deepseek2 multi-head latent attention) ---- */

/* Layer il, the chunk's normed input xn [n][E] (act.xn): queries (q LoRA when present), the
 * compressed KV row c = [rmsnorm(kv_a) (C), RoPE'd k_pe (R)] of each token -> the KV cache at
 * pos0 + i, and the absorbed queries act.q [n][H][C+R] = [k_b_h q_nope_h, RoPE'd q_pe_h], so
 * that forward.c's attention over one shared head of width C+R gives each head's scores. */
void e0_mla_project(e0_ctx *c, const e0_layer *L, int il, int n_tok, int pos0);
/* act.att [n][H][C+R] (the first C of each head: the attention-weighted latent rows) ->
 * out [n][E] = wo (v_b_h att_h for every head). */
void e0_mla_output(e0_ctx *c, const e0_layer *L, int n_tok, float *out);

/* ---- experts_predict.c ---- */

/* Called by moe_ffn for layer il after route() has filled moe.sel / moe.sel_w (and left the
 * probabilities in moe.router): scores the prediction made for this layer, computes with it
 * under routing=predicted (replacing sel / sel_w), predicts and prefetches the layers ahead
 * (decode), reads the next layer's likely experts (prefill_read=auto). Uses pred.logits and, as
 * scratch, moe.router, moe.expert_start and moe.used (all refilled by moe_ffn afterwards). On
 * return the matmul input is xn [n_tok][E] again. */
void e0_predict_after_route(e0_ctx *c, int il, int n_tok);
/* Forget the predictions (the KV cache was truncated: the next step is not the predicted one). */
void e0_predict_forget(e0_ctx *c);
/* routing=replay, called by moe_ffn right after route(): replaces sel / sel_w [n_tok][K] of layer
 * il with the trace's experts for the chunk's tokens (weights: the trace's, else uniform). */
void e0_replay_route(e0_ctx *c, int il, int n_tok);
void e0_predict_reset_stats(e0_ctx *c);

/* ---- forward.c, for batch.c ---- */

/* The forward pass over n_tok <= n_batch rows (the chunk of one sequence, or with c->batch.seqs
 * set the rows of several sequences: logits only after each one's last row, into all_logits
 * [n_seq][n_vocab]); all_logits otherwise as e0_eval's. -1 with c->err filled. */
int e0_forward_chunk(e0_ctx *c, const int *tokens, int n_tok, float *all_logits);

/* ---- deltanet.c ---- */

/* DeltaNet layers and conv channels (0 for non-hybrid models); e0_recurrent_bytes: engine.h. */
int64_t e0_recurrent_layers(const e0_hparams *hp);
int64_t e0_recurrent_conv_dim(const e0_hparams *hp);
/* Zero the recurrent state (a new sequence). */
void e0_recurrent_reset(e0_ctx *c);
/* DeltaNet layer il: act.xn [n][E] -> out [n][E] (out may alias act.xn), advancing the state. */
void e0_deltanet_layer(e0_ctx *c, int il, int n_tok, float *out);
/* Gated attention: q [n][q_dim] from wq's output qg [n][2*q_dim] (per head: q, then gate), and
 * att [n][q_dim] *= sigmoid(gate). */
void e0_gated_q_split(const e0_hparams *hp, const float *qg, int n_tok, float *q);
void e0_gated_apply(const e0_hparams *hp, const float *qg, int n_tok, float *att);
/* qwen35*'s interleaved multi-section RoPE for text positions (NEOX pairs). */
void e0_rope_imrope(float *x, int64_t n_rot, int pos, float base, const int32_t sections[4]);

#endif
