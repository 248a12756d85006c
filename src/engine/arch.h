/* arch.h — the architecture table: everything the engine, `synth` and `info` know about each
 * supported architecture, in one place (as llama.cpp's llama-arch.cpp does).
 *
 * One const row per architecture (e0_arch_info) gives its GGUF `general.architecture` name, what
 * its layers contain (q/k norm, q/k/v biases, dense or routed FFN, shared expert and its gate),
 * how routing works (gating function, top-k renormalization), the RoPE style, whether the output
 * may be tied to the embedding, and its defaults. One const row per tensor role (e0_tensor_info)
 * gives its GGUF name ("blk.%d.attn_q.weight"), its shape in terms of the hyperparameters, and
 * when a model has it. The `<arch>.*` metadata keys are named once too (enum e0_kv).
 *
 * Adding an architecture = a row in arch.c (plus tensor rows if it has new tensors, with a slot
 * for each in e0_layer / model.c) and its genuinely new forward-pass pieces. */
#ifndef E0_ARCH_H
#define E0_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"

enum e0_arch { E0_ARCH_LLAMA, E0_ARCH_QWEN2, E0_ARCH_QWEN3, E0_ARCH_QWEN2MOE, E0_ARCH_QWEN3MOE,
               E0_ARCH_GPTOSS /* "gpt-oss" (llama.cpp: openai-moe) */,
               E0_ARCH_DEEPSEEK2 /* multi-head latent attention (attn_mla.c), sigmoid/grouped routing */,
               E0_ARCH_QWEN35, E0_ARCH_QWEN35MOE, E0_ARCH_QWEN3NEXT, /* hybrid: Gated DeltaNet + gated attention */
               E0_ARCH_OLMOE /* q/k RMSNorm over the whole projection */,
               E0_ARCH_GRANITEMOE /* embedding / residual / attention / logit multipliers */,
               E0_ARCH_GLM4MOE /* GLM-4.5: deepseek2's routing keys with ordinary attention */,
               E0_ARCH_MINIMAX_M2 /* whole-projection q/k norms, partial RoPE, sigmoid + exp_probs_b routing */,
               E0_ARCH_COUNT };

/* The feed-forward block of every layer. */
enum e0_ffn {
    E0_FFN_DENSE,        /* ffn_gate/up/down; <arch>.expert_count must be absent or 0 */
    E0_FFN_MOE,          /* routed experts; <arch>.expert_count > 0 is required */
    E0_FFN_DENSE_OR_MOE, /* routed experts when <arch>.expert_count > 0 (llama / Mixtral) */
};

/* How router logits become expert weights. */
enum e0_gating {
    E0_GATING_SOFTMAX,
    E0_GATING_SOFTMAX_WEIGHT, /* gpt-oss: top-k on the raw (biased) logits, softmax over the selected ones */
    E0_GATING_SIGMOID, /* DeepSeek-V3 style: independent sigmoid scores (route.c) */
};

/* The activation of the (expert) FFN. */
enum e0_ffn_act {
    E0_ACT_SILU,       /* silu(gate) * up */
    E0_ACT_SWIGLU_OAI, /* gpt-oss: g = min(gate, limit), u = clamp(up, +-limit): g * sigmoid(alpha g) * (u + 1),
                          alpha 1.702, limit 7 (ggml_swiglu_oai) */
};

/* RoPE pairing: normal rotates (2i, 2i+1), NEOX rotates (i, i + n_rot/2). IMROPE (qwen35*):
 * NEOX pairs with llama.cpp's interleaved multi-section RoPE; for text every section takes the
 * token's position except the pairs of the fourth section, which take position 0 (unrotated). */
enum e0_rope { E0_ROPE_NORMAL, E0_ROPE_NEOX, E0_ROPE_IMROPE };

/* Most layers the table accepts (block_count), and the recurrent-layer bitset's words. */
#define E0_MAX_LAYERS 4096

/* The tokenizer the family's models ship with (synth builds one of this kind). */
enum e0_vocab { E0_VOCAB_SPM /* tokenizer.ggml.model "llama" */, E0_VOCAB_BPE /* "gpt2", pre "qwen2" */ };

typedef struct e0_arch_info {
    enum e0_arch arch;
    const char *name;       /* general.architecture */
    enum e0_ffn ffn;
    bool expert_ff_key;     /* experts are <arch>.expert_feed_forward_length wide; else
                               feed_forward_length wide (Mixtral) */
    bool qk_norm;           /* per-head RMSNorm of q and k (attn_q_norm, attn_k_norm) */
    bool qkv_bias;          /* attn_q/k/v.bias */
    bool shared_expert;     /* an always-used expert beside the routed ones (ffn_*_shexp) */
    bool shared_expert_gate;/* ... scaled by sigmoid(ffn_gate_inp_shexp . x) */
    enum e0_gating gating;
    bool norm_topk;         /* renormalize the top-k expert weights to sum 1 */
    enum e0_rope rope;
    bool tied_output;       /* output.weight may be absent: the output reuses token_embd */
    float rope_freq_base;   /* when <arch>.rope.freq_base is absent */
    /* The family's usual values, used by synth when a shape does not give them. */
    double typical_rope_base, typical_rms_eps;
    enum e0_vocab vocab;
    /* gpt-oss (all false / 0 for the others) */
    bool attn_sinks;        /* a learned per-head logit in every attention softmax's denominator (attn_sinks) */
    bool attn_out_bias;     /* attn_output.bias */
    bool router_bias;       /* ffn_gate_inp.bias added to the router logits */
    bool expert_bias;       /* ffn_{gate,up,down}_exps.bias, per expert */
    bool post_attn_norm;    /* the FFN's input norm is named post_attention_norm (not ffn_norm) */
    bool rope_scaling;      /* reads rope.scaling.* (YaRN / linear) */
    int swa_period;         /* sliding-window layers: attention.sliding_window is required and layer il
                               is SWA when il % period < period - 1 (llama.cpp's default pattern);
                               attention.sliding_window_pattern overrides it; 0: no SWA */
    enum e0_ffn_act ffn_act;
    /* deepseek2: multi-head latent attention, and its routing keys (leading dense layers,
     * shared expert count, gating function, groups, weight scale and norm, YaRN); read by
     * arch.c's read_mla_hparams */
    bool mla;
    /* Hybrid linear-attention models (qwen35, qwen35moe, qwen3next): Gated DeltaNet layers
     * (engine/deltanet.c) and, every full_attention_interval-th layer, gated attention (wq gives
     * q and a sigmoid gate per head); the FFN norm is post_attention_norm; ssm.* keys. */
    bool hybrid;
    bool dn_ba_fused;       /* qwen3next: one ssm_ba [n_embd, 2*n_v_heads] instead of ssm_beta/ssm_alpha */
    bool dn_heads_tiled;    /* qwen35*: value head h reads key head h % n_k_heads; else h / (n_v/n_k) */
    bool qk_norm_full;      /* olmoe: attn_q_norm / attn_k_norm normalize the whole q [n_head*head_dim] and
                               k [n_head_kv*head_dim] rows (one RMS each), not each head */
    bool shared_expert_opt; /* granitemoe: the (ungated) shared expert is there when
                               expert_shared_feed_forward_length > 0 */
    bool attn_out_bias_opt; /* granitemoe: attn_output.bias may be present */
    bool granite_scales;    /* granitemoe: reads embedding_scale, residual_scale, attention.scale,
                               logit_scale (e0_hparams) */
    /* glm4moe: the routing keys of deepseek2 (leading dense layers, shared expert count, gating
     * function (absent: sigmoid), weight norm and scale, groups) with ordinary attention; its
     * exp_probs_b are required; q/k/v biases and per-head q/k norms optional; partial RoPE;
     * nextn_predict_layers MTP blocks after the layers (ignored) */
    bool ds_routing;
    bool qkv_bias_opt, qk_norm_opt, partial_rope, nextn;
    /* minimax-m2: the gating function from the required expert_gating_func key (1 softmax, 2
     * sigmoid) and required exp_probs_b selection biases */
    bool gating_key, exp_probs_b_req;
} e0_arch_info;

/* Hyperparameters of a model: from the `<arch>.*` keys (e0_arch_read_hparams) and the row. */
typedef struct e0_hparams {
    enum e0_arch arch;
    const char *arch_name;
    int64_t n_vocab, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_ctx_train;
    int64_t n_expert, n_expert_used, n_ff_exp, n_ff_shexp;
    int64_t n_rot;       /* dims rotated by RoPE (rope.dimension_count) */
    float rms_eps, rope_base;
    /* copied from the architecture's row by e0_arch_set_flags */
    bool rope_neox;      /* NEOX pairs (i, i+n_rot/2) vs normal pairs (2i, 2i+1) */
    bool qk_norm;        /* qwen3*: per-head RMSNorm of q and k */
    bool qk_norm_full;   /* olmoe: ... over the whole q and k rows instead (e0_arch_info) */
    bool attn_out_bias_opt; /* granitemoe: attn_output.bias optional */
    bool ds_routing, qkv_bias_opt, qk_norm_opt; /* glm4moe (see e0_arch_info) */
    bool exp_probs_b_req; /* minimax-m2 */
    /* granitemoe multipliers (0: none): x = embd * embd_scale; x += residual_scale * (attention or
     * FFN output); logits /= logit_scale; the attention score scale is attn_scale below */
    float embd_scale, residual_scale, logit_scale;
    bool qkv_bias;       /* qwen2*: q/k/v biases */
    bool moe_norm_topk;  /* renormalize the top-k routing weights to sum 1 */
    bool shared_expert;  /* qwen2moe: shared expert */
    bool shared_expert_gate; /* qwen2moe: ... sigmoid-gated by ffn_gate_inp_shexp */
    enum e0_gating gating;
    /* gpt-oss (zero / false for the others; see e0_arch_info) */
    bool attn_sinks, attn_out_bias, router_bias, expert_bias, post_attn_norm;
    enum e0_ffn_act ffn_act;
    int64_t n_swa;          /* sliding window (keys at positions p - n_swa < j <= p); 0: none */
    int64_t swa_period;     /* layer il is SWA when n_swa > 0 and il % swa_period < swa_period - 1 */
    float rope_base_swa;    /* RoPE base of the SWA layers (rope.freq_base_swa, else rope_base) */
    /* RoPE scaling, as ggml's rope_ext takes it (arch rows with rope_scaling, and deepseek2; else
     * scale 1, ext 0, attn 1) */
    float rope_freq_scale;  /* 1 / rope.scaling.factor */
    float rope_ext_factor;  /* 1 for YaRN, else 0 */
    float rope_attn_factor; /* the magnitude factor llama.cpp's context computes (before YaRN's own) */
    float yarn_beta_fast, yarn_beta_slow;
    int64_t n_ctx_orig;     /* rope.scaling.original_context_length, else context_length */
    /* deepseek2 routing (route.c); zero for the other architectures */
    int64_t n_layer_dense_lead; /* layers < this have a dense FFN even in an MoE model */
    int64_t n_expert_shared;    /* shared experts (n_ff_shexp = n_expert_shared * n_ff_exp, no gate) */
    int64_t n_expert_groups, n_group_used; /* group-limited top-k: experts in n_expert_groups
                                  equal groups, only the n_group_used best groups compete */
    float expert_weights_scale; /* routed scaling factor (0 or 1: none), after the normalization */
    /* deepseek2 multi-head latent attention (attn_mla.c). Then head_dim = kv_lora + n_rot (a
     * row of the compressed cache, which all heads share: n_head_kv = 1) and the per-head
     * query/key width is head_dim_k_mla = nope + n_rot, the value width head_dim_v_mla. */
    bool mla;
    int64_t q_lora_rank;        /* 0: attn_q directly; else attn_q_a -> norm -> attn_q_b */
    int64_t kv_lora_rank;
    int64_t head_dim_k_mla, head_dim_v_mla;
    float attn_scale;           /* > 0: the attention's score scale (deepseek2's kq_scale); else 1/sqrt(head_dim) */
    /* (its YaRN: the RoPE scaling fields above, read by arch.c's read_rope_scaling) */
    /* hybrid models (all zero otherwise; e0_hparams_kv_layer gives a layer's KV-cache slot) */
    bool hybrid, dn_ba_fused, dn_heads_tiled;
    bool rope_imrope;        /* qwen35*: interleaved multi-section RoPE, rope_sections */
    int32_t rope_sections[4];
    int64_t ssm_d_conv;      /* causal conv1d kernel width (ssm.conv_kernel) */
    int64_t ssm_d_state;     /* key and value head size of the DeltaNet (ssm.state_size) */
    int64_t ssm_n_group;     /* key heads (ssm.group_count) */
    int64_t ssm_dt_rank;     /* value heads (ssm.time_step_rank) */
    int64_t ssm_d_inner;     /* value heads * state size (ssm.inner_size) */
    int64_t n_layer_nextn;   /* MTP blocks after the n_layer ones (nextn_predict_layers): ignored */
    int64_t n_layer_kv;      /* layers with attention (= n_layer unless hybrid): the KV cache's layers */
    uint64_t recr_bits[E0_MAX_LAYERS / 64]; /* bit il: layer il is a DeltaNet (recurrent) layer */
} e0_hparams;

/* Whether layer il of hp uses sliding-window attention. */
static inline bool e0_layer_is_swa(const e0_hparams *hp, int64_t il) {
    return hp->n_swa > 0 && hp->swa_period > 0 && il % hp->swa_period < hp->swa_period - 1;
}
/* Whether layer il of a hybrid model is recurrent (Gated DeltaNet); false for other models. */
static inline bool e0_layer_is_recurrent(const e0_hparams *hp, int64_t il) {
    return hp->hybrid && il >= 0 && il < E0_MAX_LAYERS && (hp->recr_bits[il / 64] >> (il % 64) & 1);
}
/* Layers with a KV cache: the attention layers (every layer but a hybrid's DeltaNet ones). */
static inline int64_t e0_hparams_kv_layers(const e0_hparams *hp) { return hp->hybrid ? hp->n_layer_kv : hp->n_layer; }
/* The KV-cache layer of attention layer il (its rank among the attention layers). */
int64_t e0_hparams_kv_layer(const e0_hparams *hp, int64_t il);

/* The row of `a` (NULL if out of range); the row whose name is `name` (NULL if none). */
const e0_arch_info *e0_arch_get(enum e0_arch a);
const e0_arch_info *e0_arch_by_name(const char *name);
/* Every architecture name joined by `sep` ("llama, qwen2, ...") into buf; returns buf. */
const char *e0_arch_list(const char *sep, char *buf, size_t n);

/* ---- metadata keys: "<arch>.<name>" ---- */
enum e0_kv {
    E0_KV_CONTEXT_LENGTH, E0_KV_EMBEDDING_LENGTH, E0_KV_BLOCK_COUNT, E0_KV_FEED_FORWARD_LENGTH,
    E0_KV_EXPERT_FEED_FORWARD_LENGTH, E0_KV_EXPERT_SHARED_FEED_FORWARD_LENGTH, E0_KV_EXPERT_COUNT,
    E0_KV_EXPERT_USED_COUNT, E0_KV_HEAD_COUNT, E0_KV_HEAD_COUNT_KV, E0_KV_KEY_LENGTH, E0_KV_VALUE_LENGTH,
    E0_KV_RMS_EPS, E0_KV_ROPE_DIMENSION_COUNT, E0_KV_ROPE_FREQ_BASE,
    E0_KV_SLIDING_WINDOW, E0_KV_SLIDING_WINDOW_PATTERN, E0_KV_ROPE_FREQ_BASE_SWA, E0_KV_ROPE_SCALING_TYPE,
    E0_KV_ROPE_SCALING_FACTOR, E0_KV_ROPE_SCALING_ATTN_FACTOR, E0_KV_ROPE_SCALING_ORIG_CTX_LEN,
    /* deepseek2 */
    E0_KV_LEADING_DENSE_BLOCK_COUNT, E0_KV_EXPERT_SHARED_COUNT, E0_KV_EXPERT_WEIGHTS_SCALE,
    E0_KV_EXPERT_WEIGHTS_NORM, E0_KV_EXPERT_GATING_FUNC, E0_KV_EXPERT_GROUP_COUNT, E0_KV_EXPERT_GROUP_USED_COUNT,
    E0_KV_Q_LORA_RANK, E0_KV_KV_LORA_RANK, E0_KV_KEY_LENGTH_MLA, E0_KV_VALUE_LENGTH_MLA,
    E0_KV_ROPE_SCALING_YARN_LOG_MUL,
    /* hybrid models */
    E0_KV_SSM_CONV_KERNEL, E0_KV_SSM_INNER_SIZE, E0_KV_SSM_STATE_SIZE, E0_KV_SSM_TIME_STEP_RANK,
    E0_KV_SSM_GROUP_COUNT, E0_KV_FULL_ATTENTION_INTERVAL, E0_KV_ROPE_DIMENSION_SECTIONS,
    E0_KV_ATTENTION_RECURRENT_LAYERS, E0_KV_NEXTN_PREDICT_LAYERS,
    /* granitemoe */
    E0_KV_EMBEDDING_SCALE, E0_KV_RESIDUAL_SCALE, E0_KV_ATTENTION_SCALE, E0_KV_LOGIT_SCALE,
    E0_KV_ROPE_SCALING_FINETUNED,
    E0_KV_COUNT
};
/* "<a->name>.<key>", e.g. "qwen3.block_count", into buf; returns buf. */
const char *e0_arch_key(const e0_arch_info *a, enum e0_kv k, char *buf, size_t n);

/* Read general.architecture and every `<arch>.*` hyperparameter of f into hp (the row's
 * requirements and defaults; ranges checked); n_vocab is left 0 (it comes from token_embd). */
int e0_arch_read_hparams(const gguf_file *f, e0_hparams *hp, e0_err *e);
/* Set hp->arch, arch_name and the flags from the row of architecture a. */
void e0_arch_set_flags(e0_hparams *hp, const e0_arch_info *a);

/* ---- tensors ---- */
/* Every tensor role, in the order synth writes them: token_embd, each layer's, then the output. */
enum e0_tensor {
    E0_T_TOKEN_EMBD,
    E0_T_ATTN_NORM, E0_T_ATTN_Q, E0_T_ATTN_K, E0_T_ATTN_V, E0_T_ATTN_Q_BIAS, E0_T_ATTN_K_BIAS, E0_T_ATTN_V_BIAS,
    E0_T_ATTN_Q_NORM, E0_T_ATTN_K_NORM, E0_T_ATTN_OUT, E0_T_FFN_NORM,
    E0_T_FFN_GATE, E0_T_FFN_UP, E0_T_FFN_DOWN,
    E0_T_FFN_GATE_INP, E0_T_FFN_GATE_EXPS, E0_T_FFN_UP_EXPS, E0_T_FFN_DOWN_EXPS,
    E0_T_FFN_GATE_INP_SHEXP, E0_T_FFN_GATE_SHEXP, E0_T_FFN_UP_SHEXP, E0_T_FFN_DOWN_SHEXP,
    /* gpt-oss (after the other layer tensors: the files of the other architectures, which do
     * not have them, keep their tensor order) */
    E0_T_ATTN_OUT_BIAS, E0_T_ATTN_SINKS, E0_T_ATTN_POST_NORM, E0_T_FFN_GATE_INP_BIAS,
    E0_T_FFN_GATE_EXPS_BIAS, E0_T_FFN_UP_EXPS_BIAS, E0_T_FFN_DOWN_EXPS_BIAS,
    /* deepseek2: multi-head latent attention, routing correction bias */
    E0_T_MLA_Q, E0_T_MLA_Q_A, E0_T_MLA_Q_A_NORM, E0_T_MLA_Q_B, E0_T_MLA_KV_A, E0_T_MLA_KV_A_NORM,
    E0_T_MLA_K_B, E0_T_MLA_V_B, E0_T_MLA_OUT, E0_T_FFN_EXP_PROBS_B,
    /* hybrid models: the FFN norm (E0_T_ATTN_POST_NORM, above, shared with gpt-oss), and the Gated
     * DeltaNet layers' tensors */
    E0_T_DN_QKV, E0_T_DN_GATE, E0_T_DN_CONV1D, E0_T_DN_DT, E0_T_DN_A,
    E0_T_DN_BETA, E0_T_DN_ALPHA, E0_T_DN_BA, E0_T_DN_NORM, E0_T_DN_OUT,
    E0_T_OUTPUT_NORM, E0_T_OUTPUT,
    E0_T_COUNT
};

/* A dimension of a tensor, in terms of the hyperparameters. */
enum e0_dim {
    E0_DIM_EMBD,     /* n_embd */
    E0_DIM_VOCAB,    /* n_vocab */
    E0_DIM_Q,        /* n_head * head_dim */
    E0_DIM_KV,       /* n_head_kv * head_dim */
    E0_DIM_HEAD,     /* head_dim */
    E0_DIM_FF,       /* n_ff */
    E0_DIM_FF_EXP,   /* n_ff_exp */
    E0_DIM_FF_SHEXP, /* n_ff_shexp */
    E0_DIM_EXPERT,   /* n_expert */
    E0_DIM_HEADS,    /* n_head (one value per query head) */
    /* deepseek2 (MLA) */
    E0_DIM_Q_MLA,    /* n_head * head_dim_k_mla */
    E0_DIM_V_MLA,    /* head_dim_v_mla */
    E0_DIM_ATT_MLA,  /* n_head * head_dim_v_mla */
    E0_DIM_Q_LORA,   /* q_lora_rank */
    E0_DIM_KV_LORA,  /* kv_lora_rank */
    E0_DIM_KV_A,     /* kv_lora_rank + n_rot */
    E0_DIM_NOPE,     /* head_dim_k_mla - n_rot */
    E0_DIM_Q_OUT,    /* rows of attn_q: q_dim, or 2 * q_dim with the output gate (hybrid) */
    E0_DIM_DN_CONV,  /* DeltaNet q, k, v channels: 2 * n_group * d_state + d_inner */
    E0_DIM_DN_V,     /* d_inner = value heads * d_state */
    E0_DIM_DN_VHEADS,/* value heads (ssm.time_step_rank) */
    E0_DIM_DN_VHEADS2, /* 2 * value heads (ssm_ba) */
    E0_DIM_DN_STATE, /* d_state */
    E0_DIM_DN_KERNEL,/* conv kernel width */
    E0_DIM_Q_NORM,   /* attn_q_norm: head_dim, or q_dim with qk_norm_full (olmoe) */
    E0_DIM_K_NORM,   /* attn_k_norm: head_dim, or kv_dim with qk_norm_full */
};

/* When a model has the tensor. */
enum e0_need {
    E0_NEED_ALWAYS,
    E0_NEED_QKV_BIAS,
    E0_NEED_QK_NORM,
    E0_NEED_DENSE_FFN,          /* n_expert == 0 */
    E0_NEED_MOE_FFN,            /* n_expert > 0 */
    E0_NEED_SHARED_EXPERT,      /* n_expert > 0 and a shared expert */
    E0_NEED_SHARED_EXPERT_GATE, /* ... with its gate */
    E0_NEED_OUTPUT,             /* optional where the output may be tied */
    E0_NEED_FFN_NORM,           /* ffn_norm, unless the arch names it post_attention_norm (gpt-oss, hybrids) */
    E0_NEED_POST_ATTN_NORM,     /* post_attention_norm (gpt-oss, hybrids: the FFN's input norm) */
    E0_NEED_ATTN_OUT_BIAS, E0_NEED_ATTN_SINKS,
    E0_NEED_ROUTER_BIAS,        /* n_expert > 0 and the arch's router has a bias */
    E0_NEED_EXPERT_BIAS,        /* n_expert > 0 and the arch's experts have biases */
    E0_NEED_MHA,                /* ordinary attention (not MLA) */
    E0_NEED_MLA,                /* multi-head latent attention */
    E0_NEED_MLA_Q,              /* ... without q LoRA */
    E0_NEED_MLA_Q_LORA,         /* ... with q LoRA */
    E0_NEED_EXP_PROBS_B,        /* optional routing correction bias of MoE layers (deepseek2) */
    E0_NEED_HYBRID,             /* hybrid models */
    E0_NEED_DN_SPLIT_BA,        /* hybrid, separate ssm_beta / ssm_alpha */
    E0_NEED_DN_FUSED_BA,        /* hybrid, one ssm_ba */
};

/* Which layers of a hybrid model have the tensor (every layer of other models). */
enum e0_layer_kind { E0_KIND_ANY, E0_KIND_ATTN /* attention layers */, E0_KIND_RECR /* DeltaNet layers */ };

/* What the values are (synth draws each kind at its own scale). */
enum e0_role { E0_ROLE_WEIGHT, E0_ROLE_EMBED, E0_ROLE_NORM, E0_ROLE_BIAS, E0_ROLE_ROUTER,
               E0_ROLE_SINK, /* attention sink logits */
               E0_ROLE_DECAY, /* DeltaNet ssm_a = -exp(A_log): negative */
               E0_ROLE_CONV   /* DeltaNet conv1d kernel: a matrix read as F32 values */ };

typedef struct e0_tensor_info {
    const char *name;     /* GGUF name; per-layer names hold one "%d" (the layer) */
    bool per_layer;
    int n_dims;           /* 1: vector, 2: matrix (E0_ROLE_BIAS: per-expert vectors, read as floats),
                             3: stack of expert matrices */
    enum e0_dim ne[3];    /* ne[0] = row length (input dim) */
    enum e0_need need;
    enum e0_role role;
    enum e0_layer_kind kind; /* hybrid models: attention-only or DeltaNet-only layer tensors */
} e0_tensor_info;

const e0_tensor_info *e0_tensor_get(enum e0_tensor t);
/* The tensor's GGUF name for layer `il` (ignored for non-layer tensors) into buf; returns buf. */
const char *e0_tensor_name(enum e0_tensor t, int il, char *buf, size_t n);
/* Whether a model with hp has tensor t: 2 required, 1 optional, 0 never. */
int e0_tensor_presence(enum e0_tensor t, const e0_hparams *hp);
/* The hyperparameters layer il's tensors follow: hp, with n_expert = 0 in a leading dense layer
 * (il < n_layer_dense_lead) of an MoE model. */
e0_hparams e0_layer_hparams(const e0_hparams *hp, int64_t il);
/* The same for layer il (hybrid models: attention and DeltaNet layers have different tensors). */
int e0_tensor_presence_at(enum e0_tensor t, const e0_hparams *hp, int64_t il);
/* Its shape under hp: fills ne[0..n_dims-1], returns n_dims. */
int e0_tensor_shape(enum e0_tensor t, const e0_hparams *hp, int64_t ne[3]);

#endif
