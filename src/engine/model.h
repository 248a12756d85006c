/* model.h — a loaded model: the weights of each layer, and loading them.
 *
 * A model is a GGUF file's tensors bound to the roles they play in one of the architectures of
 * the table in arch.h (llama incl. Mixtral-style MoE, qwen2, qwen3, qwen2moe, qwen3moe, gpt-oss). Every
 * hyperparameter comes from the `<arch>.*` keys and every tensor's shape is checked against them
 * (both as the table says) before any weight is read. Dense weights are read (pread) into
 * memory the engine owns; routed expert tensors are resident too unless the expert cache
 * (experts.c) streams them. */
#ifndef E0_MODEL_H
#define E0_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/arch.h"
#include "gguf/gguf.h"

/* A weight matrix (or stack of matrices for routed experts): ne[0] = input dim (row length),
 * ne[1] = output rows, ne[2] = experts. `data` is NULL for absent tensors and for streamed
 * expert stacks. */
typedef struct e0_weight {
    const gguf_tensor *t;
    uint32_t type;
    int64_t ne[3];
    size_t row_bytes;    /* bytes of one row */
    size_t matrix_bytes; /* bytes of one ne[0] x ne[1] matrix (one expert) */
    const uint8_t *data;
} e0_weight;

/* The weights of one layer; where each tensor of the table (enum e0_tensor) goes is model.c's
 * slot_of(). Absent tensors stay NULL / zero. */
typedef struct e0_layer {
    const float *attn_norm, *ffn_norm;          /* [n_embd] */
    const float *bq, *bk, *bv;                  /* qwen2*: biases, else NULL */
    const float *q_norm, *k_norm;               /* qwen3*: [head_dim], else NULL */
    e0_weight wq, wk, wv, wo;
    e0_weight ffn_gate, ffn_up, ffn_down;       /* dense FFN */
    e0_weight router;                           /* ffn_gate_inp [n_embd, n_expert] */
    e0_weight gate_exps, up_exps, down_exps;    /* routed experts */
    const float *shexp_gate_inp;                /* qwen2moe: shared expert gate [n_embd] */
    e0_weight gate_shexp, up_shexp, down_shexp; /* qwen2moe shared expert */
    /* gpt-oss (NULL otherwise); the ffn_norm slot holds its post_attention_norm. The expert
     * biases are small (X * (2F + E) floats per layer) and always resident, also when the expert
     * matrices stream. */
    const float *bo;                            /* attn_output.bias [n_embd] */
    const float *sinks;                         /* attn_sinks [n_head] */
    const float *router_b;                      /* ffn_gate_inp.bias [n_expert] */
    const float *gate_exps_b, *up_exps_b;       /* [n_expert][n_ff_exp] */
    const float *down_exps_b;                   /* [n_expert][n_embd] */
    /* deepseek2 multi-head latent attention (attn_mla.c); wo is attn_output [n_head*v_mla, E] */
    e0_weight wq_a, wq_b;                       /* q LoRA: [E, q_lora], [q_lora, n_head*k_mla] (wq without) */
    const float *q_a_norm;                      /* [q_lora] */
    e0_weight wkv_a;                            /* [E, kv_lora + n_rot] */
    const float *kv_a_norm;                     /* [kv_lora] */
    e0_weight wk_b;                             /* [nope, kv_lora, n_head]: per head, kv_lora rows of nope */
    e0_weight wv_b;                             /* [kv_lora, v_mla, n_head]: per head, v_mla rows of kv_lora */
    const float *exp_probs_b;                   /* [n_expert] routing correction bias (selection only), or NULL */
    /* hybrid models' Gated DeltaNet layers (engine/deltanet.c); their attention layers use wq
     * (q and gate per head), wk, wv, wo, q_norm, k_norm; ffn_norm is post_attention_norm */
    e0_weight dn_qkv;                           /* attn_qkv [n_embd -> conv_dim]: q, k, v channels */
    e0_weight dn_gate;                          /* attn_gate [n_embd -> d_inner]: z, the output gate */
    e0_weight dn_beta, dn_alpha;                /* [n_embd -> n_v_heads] (qwen35*) */
    e0_weight dn_ba;                            /* [n_embd -> 2 n_v_heads] (qwen3next) */
    e0_weight dn_out;                           /* ssm_out [d_inner -> n_embd] */
    const float *dn_conv;                       /* ssm_conv1d [conv_dim][d_conv] */
    const float *dn_dt, *dn_a;                  /* ssm_dt.bias, ssm_a (= -exp(A_log)) [n_v_heads] */
    const float *dn_norm;                       /* ssm_norm [d_state] */
} e0_layer;

typedef struct e0_model_params {
    bool experts_resident; /* read routed expert tensors at load time */
    /* Keep token_embd in the file and read each token's row when it is needed (e0_model_embd_row),
     * not in memory: a streamed model's embedding (gpt-oss: 201k x 2880 at Q8_0, 615 MB) is read
     * one row per token. Ignored when the output reuses token_embd (tied). */
    bool embd_from_file;
    /* Keep q4_K and q6_K matrices repacked for the AVX2 kernels (e0_repack_type, quant/quant_kx.h):
     * their e0_weight.type is then the internal q4_KX / q6_KX, the file's type stays in
     * e0_weight.t->type, and streamed experts are repacked after each read (experts.c). */
    bool repack;
    /* Called after each tensor is read (may be NULL): bytes read so far and in all. */
    void (*progress)(void *user, uint64_t done, uint64_t total);
    void *progress_user;
} e0_model_params;

typedef struct e0_model {
    gguf_file *gguf;
    e0_hparams hp;
    const float *output_norm;
    e0_weight tok_embd, output; /* output aliases tok_embd when tied */
    bool tied_output;
    bool embd_from_file;        /* tok_embd.data is NULL: its rows are read from the file */
    e0_layer *layers;
    uint8_t *dense_buf;         /* all resident non-expert weights */
    size_t dense_bytes;
    uint8_t *expert_buf;        /* resident routed experts (NULL when streamed) */
    size_t expert_bytes;
    uint64_t params_total, params_active; /* active = per token (top-k experts) */
    uint64_t expert_file_bytes; /* bytes of the routed expert tensors in the file */
} e0_model;

/* Open, validate (architecture, hyperparameters, every tensor's presence and shape) and load.
 * With `load_weights` false only the metadata is validated (used by `info`). */
e0_model *e0_model_load(const char *path, const e0_model_params *mp, bool load_weights, e0_err *e);
void e0_model_free(e0_model *m);
/* Row `tok` of token_embd as floats into out [n_embd]: from memory, or (embd_from_file) read
 * into raw [tok_embd.row_bytes] from the file first. 0, or -1 with e set on a read error. */
int e0_model_embd_row(const e0_model *m, int32_t tok, float *out, uint8_t *raw, e0_err *e);

bool e0_model_is_moe(const e0_model *m);
/* Bytes one decode step reads with n_kv positions in the KV cache: every dense matrix, the
 * output matrix, one embedding row, n_expert_used experts per layer, and the KV cache of
 * kv_bytes_per_pos bytes per position (e0_kv_bytes_per_pos, engine.h). The memory-bandwidth bound
 * of decode is bandwidth / this. */
uint64_t e0_model_decode_bytes(const e0_model *m, int64_t n_kv, uint64_t kv_bytes_per_pos);

/* Pointer to expert `x`'s matrix inside a resident expert stack. */
static inline const uint8_t *e0_expert_matrix(const e0_weight *w, int64_t x) {
    return w->data + (size_t)x * w->matrix_bytes;
}

#endif
