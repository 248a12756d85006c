/* arch.c — the architecture table (see arch.h): one row per architecture, one row per tensor
 * role, the `<arch>.*` key names, and reading the hyperparameters with each row's requirements
 * and defaults. */
#include "engine/arch.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LAYERS 4096
#define MAX_EXPERTS 4096
#define MAX_DIM (1 << 20)

/* ---- the architectures ---- */
static const e0_arch_info archs[E0_ARCH_COUNT] = {
    [E0_ARCH_LLAMA] = {.arch = E0_ARCH_LLAMA, .name = "llama", .ffn = E0_FFN_DENSE_OR_MOE, .expert_ff_key = false,
                       .gating = E0_GATING_SOFTMAX, .norm_topk = true, .rope = E0_ROPE_NORMAL, .tied_output = true,
                       .rope_freq_base = 10000.0f, .typical_rope_base = 1e4, .typical_rms_eps = 1e-5,
                       .vocab = E0_VOCAB_SPM},
    [E0_ARCH_QWEN2] = {.arch = E0_ARCH_QWEN2, .name = "qwen2", .ffn = E0_FFN_DENSE, .qkv_bias = true,
                       .gating = E0_GATING_SOFTMAX, .norm_topk = true, .rope = E0_ROPE_NEOX, .tied_output = true,
                       .rope_freq_base = 10000.0f, .typical_rope_base = 1e6, .typical_rms_eps = 1e-6,
                       .vocab = E0_VOCAB_BPE},
    [E0_ARCH_QWEN3] = {.arch = E0_ARCH_QWEN3, .name = "qwen3", .ffn = E0_FFN_DENSE, .qk_norm = true,
                       .gating = E0_GATING_SOFTMAX, .norm_topk = true, .rope = E0_ROPE_NEOX, .tied_output = true,
                       .rope_freq_base = 10000.0f, .typical_rope_base = 1e6, .typical_rms_eps = 1e-6,
                       .vocab = E0_VOCAB_BPE},
    [E0_ARCH_QWEN2MOE] = {.arch = E0_ARCH_QWEN2MOE, .name = "qwen2moe", .ffn = E0_FFN_MOE, .expert_ff_key = true,
                          .qkv_bias = true, .shared_expert = true, .shared_expert_gate = true,
                          .gating = E0_GATING_SOFTMAX, .norm_topk = false, .rope = E0_ROPE_NEOX, .tied_output = true,
                          .rope_freq_base = 10000.0f, .typical_rope_base = 1e6, .typical_rms_eps = 1e-6,
                          .vocab = E0_VOCAB_BPE},
    [E0_ARCH_QWEN3MOE] = {.arch = E0_ARCH_QWEN3MOE, .name = "qwen3moe", .ffn = E0_FFN_MOE, .expert_ff_key = true,
                          .qk_norm = true, .gating = E0_GATING_SOFTMAX, .norm_topk = true, .rope = E0_ROPE_NEOX,
                          .tied_output = true, .rope_freq_base = 10000.0f, .typical_rope_base = 1e6,
                          .typical_rms_eps = 1e-6, .vocab = E0_VOCAB_BPE},
    /* gpt-oss: llama.cpp's openai-moe (src/models/openai-moe.cpp) */
    [E0_ARCH_GPTOSS] = {.arch = E0_ARCH_GPTOSS, .name = "gpt-oss", .ffn = E0_FFN_MOE, .expert_ff_key = true,
                        .qkv_bias = true, .gating = E0_GATING_SOFTMAX_WEIGHT, .norm_topk = false, .rope = E0_ROPE_NEOX,
                        .tied_output = false, .rope_freq_base = 10000.0f, .typical_rope_base = 150000,
                        .typical_rms_eps = 1e-5, .vocab = E0_VOCAB_BPE, .attn_sinks = true, .attn_out_bias = true,
                        .router_bias = true, .expert_bias = true, .post_attn_norm = true, .rope_scaling = true,
                        .swa_period = 2, .ffn_act = E0_ACT_SWIGLU_OAI},
    /* routing flags (gating, norm_topk, shared expert) come from its keys: read_mla_hparams */
    [E0_ARCH_DEEPSEEK2] = {.arch = E0_ARCH_DEEPSEEK2, .name = "deepseek2", .ffn = E0_FFN_MOE, .expert_ff_key = true,
                           .gating = E0_GATING_SOFTMAX, .norm_topk = false, .rope = E0_ROPE_NORMAL,
                           .tied_output = true, .rope_freq_base = 10000.0f, .typical_rope_base = 1e4,
                           .typical_rms_eps = 1e-6, .vocab = E0_VOCAB_BPE, .mla = true},
    /* hybrids (llama.cpp src/models/qwen35.cpp, qwen35moe.cpp, qwen3next.cpp) */
    [E0_ARCH_QWEN35] = {.arch = E0_ARCH_QWEN35, .name = "qwen35", .ffn = E0_FFN_DENSE, .qk_norm = true,
                        .gating = E0_GATING_SOFTMAX, .norm_topk = true, .rope = E0_ROPE_IMROPE, .tied_output = true,
                        .rope_freq_base = 10000.0f, .typical_rope_base = 1e7, .typical_rms_eps = 1e-6,
                        .vocab = E0_VOCAB_BPE, .post_attn_norm = true, .hybrid = true, .dn_heads_tiled = true},
    [E0_ARCH_QWEN35MOE] = {.arch = E0_ARCH_QWEN35MOE, .name = "qwen35moe", .ffn = E0_FFN_MOE, .expert_ff_key = true,
                           .qk_norm = true, .shared_expert = true, .shared_expert_gate = true,
                           .gating = E0_GATING_SOFTMAX, .norm_topk = true, .rope = E0_ROPE_IMROPE, .tied_output = true,
                           .rope_freq_base = 10000.0f, .typical_rope_base = 1e7, .typical_rms_eps = 1e-6,
                           .vocab = E0_VOCAB_BPE, .post_attn_norm = true, .hybrid = true, .dn_heads_tiled = true},
    [E0_ARCH_QWEN3NEXT] = {.arch = E0_ARCH_QWEN3NEXT, .name = "qwen3next", .ffn = E0_FFN_MOE, .expert_ff_key = true,
                           .qk_norm = true, .shared_expert = true, .shared_expert_gate = true,
                           .gating = E0_GATING_SOFTMAX, .norm_topk = true, .rope = E0_ROPE_NEOX, .tied_output = true,
                           .rope_freq_base = 10000.0f, .typical_rope_base = 1e7, .typical_rms_eps = 1e-6,
                           .vocab = E0_VOCAB_BPE, .post_attn_norm = true, .hybrid = true, .dn_ba_fused = true},
    /* OLMoE (llama.cpp src/models/olmoe.cpp): experts feed_forward_length wide, softmax routing
     * without renormalizing the top k, q/k norms over the whole projections, an output matrix */
    [E0_ARCH_OLMOE] = {.arch = E0_ARCH_OLMOE, .name = "olmoe", .ffn = E0_FFN_MOE, .expert_ff_key = false,
                       .qk_norm = true, .qk_norm_full = true, .gating = E0_GATING_SOFTMAX, .norm_topk = false,
                       .rope = E0_ROPE_NEOX, .tied_output = false, .rope_freq_base = 10000.0f,
                       .typical_rope_base = 1e4, .typical_rms_eps = 1e-5, .vocab = E0_VOCAB_BPE},
    /* Granite MoE (llama.cpp src/models/granite-moe.cpp, granite.cpp's graph): llama-style, experts
     * feed_forward_length wide with renormalized softmax top k, an optional ungated shared expert,
     * optional attn_output.bias, and the multipliers of its keys */
    [E0_ARCH_GRANITEMOE] = {.arch = E0_ARCH_GRANITEMOE, .name = "granitemoe", .ffn = E0_FFN_MOE, .expert_ff_key = false,
                            .shared_expert = true, .shared_expert_opt = true, .gating = E0_GATING_SOFTMAX,
                            .norm_topk = true, .rope = E0_ROPE_NORMAL, .tied_output = true, .rope_freq_base = 10000.0f,
                            .typical_rope_base = 1e4, .typical_rms_eps = 1e-6, .vocab = E0_VOCAB_BPE,
                            .attn_out_bias_opt = true, .granite_scales = true},
    /* GLM-4.5 / 4.6 / 4.5-Air (llama.cpp src/models/glm4-moe.cpp): routing flags from its keys
     * (read_ds_routing), the FFN's input norm named post_attention_norm */
    [E0_ARCH_GLM4MOE] = {.arch = E0_ARCH_GLM4MOE, .name = "glm4moe", .ffn = E0_FFN_MOE, .expert_ff_key = true,
                         .gating = E0_GATING_SIGMOID, .norm_topk = false, .rope = E0_ROPE_NEOX, .tied_output = true,
                         .rope_freq_base = 10000.0f, .typical_rope_base = 1e6, .typical_rms_eps = 1e-5,
                         .vocab = E0_VOCAB_BPE, .post_attn_norm = true, .ds_routing = true, .qkv_bias_opt = true,
                         .qk_norm_opt = true, .partial_rope = true, .nextn = true},
    /* MiniMax-M2 (llama.cpp src/models/minimax-m2.cpp): q/k RMSNorm over the whole projections
     * (as olmoe, but with GQA), partial RoPE, renormalized top k of sigmoid (or softmax) scores
     * chosen with exp_probs_b, no shared expert, an output matrix */
    [E0_ARCH_MINIMAX_M2] = {.arch = E0_ARCH_MINIMAX_M2, .name = "minimax-m2", .ffn = E0_FFN_MOE, .expert_ff_key = true,
                            .qk_norm = true, .qk_norm_full = true, .gating = E0_GATING_SIGMOID, .norm_topk = true,
                            .rope = E0_ROPE_NEOX, .tied_output = false, .rope_freq_base = 10000.0f,
                            .typical_rope_base = 5e6, .typical_rms_eps = 1e-6, .vocab = E0_VOCAB_BPE,
                            .partial_rope = true, .gating_key = true, .exp_probs_b_req = true},
};

const e0_arch_info *e0_arch_get(enum e0_arch a) { return (unsigned)a < E0_ARCH_COUNT ? &archs[a] : NULL; }

const e0_arch_info *e0_arch_by_name(const char *name) {
    for (int i = 0; i < E0_ARCH_COUNT; i++)
        if (!strcmp(name, archs[i].name)) return &archs[i];
    return NULL;
}

const char *e0_arch_list(const char *sep, char *buf, size_t n) {
    size_t len = 0;
    if (n) buf[0] = 0;
    for (int i = 0; i < E0_ARCH_COUNT && len < n; i++) {
        int w = snprintf(buf + len, n - len, "%s%s", i ? sep : "", archs[i].name);
        if (w < 0) break;
        len += (size_t)w;
    }
    return buf;
}

void e0_arch_set_flags(e0_hparams *hp, const e0_arch_info *a) {
    hp->arch = a->arch;
    hp->arch_name = a->name;
    hp->rope_neox = a->rope == E0_ROPE_NEOX || a->rope == E0_ROPE_IMROPE;
    hp->rope_imrope = a->rope == E0_ROPE_IMROPE;
    hp->hybrid = a->hybrid;
    hp->dn_ba_fused = a->dn_ba_fused;
    hp->dn_heads_tiled = a->dn_heads_tiled;
    hp->qk_norm = a->qk_norm;
    hp->qk_norm_full = a->qk_norm_full;
    hp->attn_out_bias_opt = a->attn_out_bias_opt;
    hp->ds_routing = a->ds_routing;
    hp->exp_probs_b_req = a->exp_probs_b_req;
    hp->qkv_bias_opt = a->qkv_bias_opt;
    hp->qk_norm_opt = a->qk_norm_opt;
    hp->qkv_bias = a->qkv_bias;
    hp->moe_norm_topk = a->norm_topk;
    hp->shared_expert = a->shared_expert;
    hp->shared_expert_gate = a->shared_expert_gate;
    hp->gating = a->gating;
    hp->attn_sinks = a->attn_sinks;
    hp->attn_out_bias = a->attn_out_bias;
    hp->router_bias = a->router_bias;
    hp->expert_bias = a->expert_bias;
    hp->post_attn_norm = a->post_attn_norm;
    hp->ffn_act = a->ffn_act;
    hp->swa_period = a->swa_period;
    hp->rope_freq_scale = 1.0f;
    hp->rope_ext_factor = 0.0f;
    hp->rope_attn_factor = 1.0f;
    hp->yarn_beta_fast = 32.0f;
    hp->yarn_beta_slow = 1.0f;
    hp->mla = a->mla;
}

/* ---- metadata keys ---- */
static const char *const kv_names[E0_KV_COUNT] = {
    [E0_KV_CONTEXT_LENGTH] = "context_length",
    [E0_KV_EMBEDDING_LENGTH] = "embedding_length",
    [E0_KV_BLOCK_COUNT] = "block_count",
    [E0_KV_FEED_FORWARD_LENGTH] = "feed_forward_length",
    [E0_KV_EXPERT_FEED_FORWARD_LENGTH] = "expert_feed_forward_length",
    [E0_KV_EXPERT_SHARED_FEED_FORWARD_LENGTH] = "expert_shared_feed_forward_length",
    [E0_KV_EXPERT_COUNT] = "expert_count",
    [E0_KV_EXPERT_USED_COUNT] = "expert_used_count",
    [E0_KV_HEAD_COUNT] = "attention.head_count",
    [E0_KV_HEAD_COUNT_KV] = "attention.head_count_kv",
    [E0_KV_KEY_LENGTH] = "attention.key_length",
    [E0_KV_VALUE_LENGTH] = "attention.value_length",
    [E0_KV_RMS_EPS] = "attention.layer_norm_rms_epsilon",
    [E0_KV_ROPE_DIMENSION_COUNT] = "rope.dimension_count",
    [E0_KV_ROPE_FREQ_BASE] = "rope.freq_base",
    [E0_KV_SLIDING_WINDOW] = "attention.sliding_window",
    [E0_KV_SLIDING_WINDOW_PATTERN] = "attention.sliding_window_pattern",
    [E0_KV_ROPE_FREQ_BASE_SWA] = "rope.freq_base_swa",
    [E0_KV_LEADING_DENSE_BLOCK_COUNT] = "leading_dense_block_count",
    [E0_KV_EXPERT_SHARED_COUNT] = "expert_shared_count",
    [E0_KV_EXPERT_WEIGHTS_SCALE] = "expert_weights_scale",
    [E0_KV_EXPERT_WEIGHTS_NORM] = "expert_weights_norm",
    [E0_KV_EXPERT_GATING_FUNC] = "expert_gating_func",
    [E0_KV_EXPERT_GROUP_COUNT] = "expert_group_count",
    [E0_KV_EXPERT_GROUP_USED_COUNT] = "expert_group_used_count",
    [E0_KV_Q_LORA_RANK] = "attention.q_lora_rank",
    [E0_KV_KV_LORA_RANK] = "attention.kv_lora_rank",
    [E0_KV_KEY_LENGTH_MLA] = "attention.key_length_mla",
    [E0_KV_VALUE_LENGTH_MLA] = "attention.value_length_mla",
    [E0_KV_ROPE_SCALING_TYPE] = "rope.scaling.type",
    [E0_KV_ROPE_SCALING_FACTOR] = "rope.scaling.factor",
    [E0_KV_ROPE_SCALING_ATTN_FACTOR] = "rope.scaling.attn_factor",
    [E0_KV_ROPE_SCALING_ORIG_CTX_LEN] = "rope.scaling.original_context_length",
    [E0_KV_ROPE_SCALING_YARN_LOG_MUL] = "rope.scaling.yarn_log_multiplier",
    [E0_KV_SSM_CONV_KERNEL] = "ssm.conv_kernel",
    [E0_KV_SSM_INNER_SIZE] = "ssm.inner_size",
    [E0_KV_SSM_STATE_SIZE] = "ssm.state_size",
    [E0_KV_SSM_TIME_STEP_RANK] = "ssm.time_step_rank",
    [E0_KV_SSM_GROUP_COUNT] = "ssm.group_count",
    [E0_KV_FULL_ATTENTION_INTERVAL] = "full_attention_interval",
    [E0_KV_ROPE_DIMENSION_SECTIONS] = "rope.dimension_sections",
    [E0_KV_ATTENTION_RECURRENT_LAYERS] = "attention.recurrent_layers",
    [E0_KV_NEXTN_PREDICT_LAYERS] = "nextn_predict_layers",
    [E0_KV_EMBEDDING_SCALE] = "embedding_scale",
    [E0_KV_RESIDUAL_SCALE] = "residual_scale",
    [E0_KV_ATTENTION_SCALE] = "attention.scale",
    [E0_KV_LOGIT_SCALE] = "logit_scale",
    [E0_KV_ROPE_SCALING_FINETUNED] = "rope.scaling.finetuned",
};

const char *e0_arch_key(const e0_arch_info *a, enum e0_kv k, char *buf, size_t n) {
    snprintf(buf, n, "%s.%s", a->name, (unsigned)k < E0_KV_COUNT ? kv_names[k] : "?");
    return buf;
}

/* ---- reading the hyperparameters ---- */
typedef struct {
    const gguf_file *f;
    const e0_arch_info *a;
    e0_err *e;
} kv_reader;

/* Read integer key k into *out within [lo, hi] (*out is untouched when absent).
 * Returns 1 found, 0 absent, -1 error. */
static int get_int(kv_reader *r, enum e0_kv k, int64_t lo, int64_t hi, bool required, int64_t *out) {
    char full[160];
    e0_arch_key(r->a, k, full, sizeof full);
    int rc = gguf_get_i64(r->f, full, out, r->e);
    if (rc < 0) return -1;
    if (rc == 0) {
        if (required) return e0_fail(r->e, "%s: missing metadata key '%s'", r->f->path, full);
        return 0;
    }
    if (*out < lo || *out > hi)
        return e0_fail(r->e, "%s: %s = %lld out of range [%lld, %lld]", r->f->path, full, (long long)*out,
                       (long long)lo, (long long)hi);
    return 1;
}

/* A key llama.cpp reads with get_key_or_arr (llama-model.cpp: feed_forward_length, head_count,
 * head_count_kv, expert_used_count; models/ARCH.cpp: expert_feed_forward_length): a scalar, or an
 * array of one value per layer (n = block_count entries, the NextN blocks included). This engine keeps one
 * value per model, so an array is accepted when its entries are equal (what converters write for
 * uniform models); different values per layer are refused with the key named. */
static int get_int_array(kv_reader *r, enum e0_kv k, int64_t n, int64_t *out);
static int get_int_or_layers(kv_reader *r, enum e0_kv k, int64_t n, int64_t lo, int64_t hi, bool required, int64_t *out) {
    char full[160];
    e0_arch_key(r->a, k, full, sizeof full);
    const gguf_kv *kv = NULL;
    for (uint64_t i = 0; i < r->f->n_kv && !kv; i++)
        if (!strcmp(r->f->kv[i].key, full)) kv = &r->f->kv[i];
    if (!kv || kv->type != GGUF_ARR) return get_int(r, k, lo, hi, required, out);
    if (n < 1 || n > MAX_LAYERS) return e0_fail(r->e, "%s: %s is an array but block_count is unknown", r->f->path, full);
    int64_t *v = malloc((size_t)n * sizeof *v);
    if (!v) return e0_fail(r->e, "%s: out of memory reading %s", r->f->path, full);
    int rc = get_int_array(r, k, n, v);
    for (int64_t il = 0; rc == 1 && il < n; il++) {
        if (v[il] < lo || v[il] > hi)
            rc = e0_fail(r->e, "%s: %s[%lld] = %lld out of range [%lld, %lld]", r->f->path, full, (long long)il,
                         (long long)v[il], (long long)lo, (long long)hi);
        else if (v[il] != v[0])
            rc = e0_fail(r->e, "%s: %s differs between layers (%lld in layer 0, %lld in layer %lld): per-layer "
                               "values are not supported", r->f->path, full, (long long)v[0], (long long)v[il], (long long)il);
    }
    if (rc == 1) *out = v[0];
    free(v);
    return rc;
}

static int get_float(kv_reader *r, enum e0_kv k, bool required, float *out) {
    char full[160];
    e0_arch_key(r->a, k, full, sizeof full);
    int rc = gguf_get_f32(r->f, full, out, r->e);
    if (rc < 0) return -1;
    if (rc == 0 && required) return e0_fail(r->e, "%s: missing metadata key '%s'", r->f->path, full);
    if (rc == 1 && !(isfinite(*out) && *out > 0))
        return e0_fail(r->e, "%s: %s = %g is not a positive number", r->f->path, full, (double)*out);
    return rc;
}

/* RoPE scaling keys: none / linear / yarn (llama.cpp's defaults: linear, beta_fast 32, beta_slow 1)
 * -> hp's rope_freq_scale, rope_ext_factor, rope_attn_factor (the factor llama-context.cpp's
 * yarn_attn_factor gives RoPE's cos/sin, divided by the 1 + 0.1 ln(factor) ggml's rope applies
 * itself) and n_ctx_orig. Rows with mla also read rope.scaling.yarn_log_multiplier (the converter
 * stores 0.1 * mscale_all_dim), returned in *log_mul (0 when absent or not read). */
static int read_rope_scaling(kv_reader *r, e0_hparams *hp, float *log_mul_out) {
    const e0_arch_info *a = r->a;
    const char *path = r->f->path;
    char full[160];
    int rc;
    const gguf_string *type;
    bool yarn = false, none = false;
    e0_arch_key(a, E0_KV_ROPE_SCALING_TYPE, full, sizeof full);
    if ((rc = gguf_get_str(r->f, full, &type, r->e)) < 0) return -1;
    if (rc) {
        if (!strcmp(type->s, "yarn")) yarn = true;
        else if (!strcmp(type->s, "none")) none = true;
        else if (strcmp(type->s, "linear"))
            return e0_fail(r->e, "%s: %s = '%.32s' is not supported (none, linear, yarn)", path, full, type->s);
    }
    float factor = 0;
    if (get_float(r, E0_KV_ROPE_SCALING_FACTOR, false, &factor) < 0) return -1;
    hp->rope_freq_scale = factor == 0.0f || none ? 1.0f : 1.0f / factor;
    float rope_attn = 1.0f, log_mul = 0.0f;
    if (get_float(r, E0_KV_ROPE_SCALING_ATTN_FACTOR, false, &rope_attn) < 0) return -1;
    if (a->mla) {
        e0_arch_key(a, E0_KV_ROPE_SCALING_YARN_LOG_MUL, full, sizeof full);
        if ((rc = gguf_get_f32(r->f, full, &log_mul, r->e)) < 0) return -1;
        if (rc) {
            if (!isfinite(log_mul) || fabsf(log_mul) > 100) return e0_fail(r->e, "%s: %s is out of range", path, full);
            log_mul /= 0.1f;
        }
    }
    *log_mul_out = log_mul;
    hp->n_ctx_orig = hp->n_ctx_train;
    if (get_int(r, E0_KV_ROPE_SCALING_ORIG_CTX_LEN, 1, INT32_MAX, false, &hp->n_ctx_orig) < 0) return -1;
    hp->yarn_beta_fast = 32.0f;
    hp->yarn_beta_slow = 1.0f;
    hp->rope_ext_factor = yarn ? 1.0f : 0.0f;
    float attn = 1.0f;
    if (hp->rope_ext_factor != 0.0f) {
        const float f = 1.0f / hp->rope_freq_scale;
        if (log_mul != 0.0f) {
            const float mscale = log_mul != 1.0f ? log_mul : 1.0f;
            const float a1 = f <= 1.0f ? 1.0f : 0.1f * mscale * logf(f) + 1.0f;
            const float a2 = f <= 1.0f ? 1.0f : 0.1f * log_mul * logf(f) + 1.0f;
            attn = a1 / a2;
        } else {
            attn = f <= 1.0f ? 1.0f : 0.1f * logf(f) + 1.0f;
        }
        attn *= 1.0f / (1.0f + 0.1f * logf(f));
    }
    hp->rope_attn_factor = attn * rope_attn;
    return 0;
}

/* attention.sliding_window_pattern written as an array: one flag per layer (true: sliding window),
 * as gguf-py's add_sliding_window_pattern writes a list of layer types (n_layer entries, bool or
 * integer). llama.cpp's openai-moe reads this key with the scalar get_key_or_arr, which leaves an
 * array unread: the layers keep the default period (arch row: 2, il % 2 < 1 sliding). So the
 * array is checked against that period: equal, the file loads as in llama.cpp; a layer that
 * differs is refused with the layer named (llama.cpp would run it with another layer pattern than
 * the file states, and no per-layer pattern can be compared with it). */
static bool swa_pattern_is_array(kv_reader *r) {
    char full[160];
    e0_arch_key(r->a, E0_KV_SLIDING_WINDOW_PATTERN, full, sizeof full);
    const gguf_kv *kv = gguf_find(r->f, full);
    return kv && kv->type == GGUF_ARR;
}

static int read_swa_pattern_array(kv_reader *r, e0_hparams *hp) {
    char full[160];
    e0_arch_key(r->a, E0_KV_SLIDING_WINDOW_PATTERN, full, sizeof full);
    const int64_t n = hp->n_layer;
    if (n < 1 || n > MAX_LAYERS) return e0_fail(r->e, "%s: %s is an array but block_count is unknown", r->f->path, full);
    int64_t *v = malloc((size_t)n * sizeof *v);
    if (!v) return e0_fail(r->e, "%s: out of memory reading %s", r->f->path, full);
    int rc = get_int_array(r, E0_KV_SLIDING_WINDOW_PATTERN, n, v);
    if (rc == 0) rc = e0_fail(r->e, "%s: %s is an array of a type other than bool or integer", r->f->path, full);
    for (int64_t il = 0; rc == 1 && il < n; il++) {
        if (v[il] != 0 && v[il] != 1)
            rc = e0_fail(r->e, "%s: %s[%lld] = %lld is not a layer flag (0 or 1)", r->f->path, full, (long long)il,
                         (long long)v[il]);
        else if ((v[il] != 0) != e0_layer_is_swa(hp, il))
            rc = e0_fail(r->e, "%s: %s says layer %lld is %s, but llama.cpp ignores this array for %s and uses period "
                               "%lld (layer %lld %s): per-layer patterns other than that are not supported",
                         r->f->path, full, (long long)il, v[il] ? "sliding-window" : "full attention", r->a->name,
                         (long long)hp->swa_period, (long long)il, e0_layer_is_swa(hp, il) ? "sliding-window" : "full");
    }
    free(v);
    return rc < 0 ? -1 : 0;
}

/* Sliding-window attention and RoPE scaling (rows with swa_period / rope_scaling), with the
 * defaults and derived values of llama.cpp (llama-model.cpp load_hparams, llama-context.cpp). */
static int read_swa_and_rope_scaling(kv_reader *r, e0_hparams *hp) {
    const e0_arch_info *a = r->a;
    const gguf_file *f = r->f;
    e0_err *e = r->e;
    hp->rope_base_swa = hp->rope_base;
    hp->n_ctx_orig = hp->n_ctx_train;
    if (a->swa_period > 0) {
        if (get_int(r, E0_KV_SLIDING_WINDOW, 1, INT32_MAX, true, &hp->n_swa) < 0) return -1;
        hp->swa_period = a->swa_period;
        if (swa_pattern_is_array(r)) {
            if (read_swa_pattern_array(r, hp) < 0) return -1;
        } else if (get_int(r, E0_KV_SLIDING_WINDOW_PATTERN, 1, MAX_LAYERS, false, &hp->swa_period) < 0) return -1;
        if (get_float(r, E0_KV_ROPE_FREQ_BASE_SWA, false, &hp->rope_base_swa) < 0) return -1;
    }
    if (!a->rope_scaling) return 0;
    if (hp->n_rot != hp->head_dim) /* llama.cpp's openai-moe sizes q, k, v by rope.dimension_count */
        return e0_fail(e, "%s: rope.dimension_count %lld differs from attention.key_length %lld (not supported for %s)",
                       f->path, (long long)hp->n_rot, (long long)hp->head_dim, a->name);
    float log_mul;
    return read_rope_scaling(r, hp, &log_mul);
}

/* deepseek2: the keys of multi-head latent attention, its routing and YaRN, with llama.cpp's
 * semantics (llama-model.cpp, models/deepseek2.cpp, llama-context.cpp). The file's key_length
 * (head_dim here) is kv_lora_rank + n_rot and value_length is kv_lora_rank: the width of the
 * compressed cache row every head attends over. Files from before the split attn_k_b / attn_v_b
 * tensors (no key_length_mla) are not supported. */
static int read_ds_routing(kv_reader *r, e0_hparams *hp, enum e0_gating none_gating);
static int read_mla_hparams(kv_reader *r, e0_hparams *hp, int64_t vlen) {
    const char *path = r->f->path;
    char full[160];
    int rc;
    if (get_int(r, E0_KV_KV_LORA_RANK, 1, MAX_DIM, true, &hp->kv_lora_rank) < 0) return -1;
    if (get_int(r, E0_KV_Q_LORA_RANK, 0, MAX_DIM, false, &hp->q_lora_rank) < 0) return -1;
    if ((rc = get_int(r, E0_KV_KEY_LENGTH_MLA, 1, 65536, false, &hp->head_dim_k_mla)) < 0) return -1;
    if (rc == 0)
        return e0_fail(r->e, "%s: no %s: a deepseek2 file with attn_kv_b (from before the split attn_k_b / "
                             "attn_v_b) is not supported; convert it again with a current llama.cpp", path,
                       e0_arch_key(r->a, E0_KV_KEY_LENGTH_MLA, full, sizeof full));
    if (get_int(r, E0_KV_VALUE_LENGTH_MLA, 1, 65536, true, &hp->head_dim_v_mla) < 0) return -1;
    if (hp->head_dim != hp->kv_lora_rank + hp->n_rot || vlen != hp->kv_lora_rank)
        return e0_fail(r->e, "%s: key_length %lld / value_length %lld must be kv_lora_rank + rope dims (%lld) / "
                             "kv_lora_rank (%lld)", path, (long long)hp->head_dim, (long long)vlen,
                       (long long)(hp->kv_lora_rank + hp->n_rot), (long long)hp->kv_lora_rank);
    if (hp->head_dim_k_mla <= hp->n_rot)
        return e0_fail(r->e, "%s: key_length_mla %lld must exceed the rope dims %lld", path,
                       (long long)hp->head_dim_k_mla, (long long)hp->n_rot);
    if (hp->head_dim_k_mla - hp->n_rot > hp->kv_lora_rank || hp->head_dim_v_mla > hp->head_dim)
        return e0_fail(r->e, "%s: MLA with a nope width %lld above kv_lora_rank %lld or a value width %lld above "
                             "key_length %lld is not supported", path, (long long)(hp->head_dim_k_mla - hp->n_rot),
                       (long long)hp->kv_lora_rank, (long long)hp->head_dim_v_mla, (long long)hp->head_dim);
    hp->n_head_kv = 1; /* one compressed row per position, shared by every head */
    if (read_ds_routing(r, hp, E0_GATING_SOFTMAX) < 0) return -1;

    /* RoPE scaling (YaRN), with the yarn_log_multiplier deepseek2 files carry */
    float log_mul;
    if (read_rope_scaling(r, hp, &log_mul) < 0) return -1;
    const float attn = hp->rope_attn_factor;
    /* the score scale: DeepSeek's mscale^2 / sqrt(key width) */
    const float org = attn * (1.0f + 0.1f * logf(1.0f / hp->rope_freq_scale));
    const float mscale = org * (1.0f + 0.1f * log_mul * logf(1.0f / hp->rope_freq_scale));
    hp->attn_scale = 1.0f * mscale * mscale / sqrtf((float)hp->head_dim_k_mla);
    if (!(hp->attn_scale > 0) || !isfinite(hp->attn_scale))
        return e0_fail(r->e, "%s: the RoPE scaling keys give no usable attention scale", path);
    return 0;
}

/* deepseek2 and glm4moe: leading dense layers, shared experts (n_expert_shared of n_ff_exp, no
 * gate), the gating function (expert_gating_func 0 / absent: none_gating), weight normalization
 * and scale, group-limited top-k. */
static int read_ds_routing(kv_reader *r, e0_hparams *hp, enum e0_gating none_gating) {
    const char *path = r->f->path;
    char full[160];
    int rc;
    if (get_int(r, E0_KV_LEADING_DENSE_BLOCK_COUNT, 0, hp->n_layer, false, &hp->n_layer_dense_lead) < 0) return -1;
    if (hp->n_layer_dense_lead > 0 && hp->n_ff <= 0)
        return e0_fail(r->e, "%s: leading dense layers need %s", path,
                       e0_arch_key(r->a, E0_KV_FEED_FORWARD_LENGTH, full, sizeof full));
    if (get_int(r, E0_KV_EXPERT_SHARED_COUNT, 0, MAX_EXPERTS, false, &hp->n_expert_shared) < 0) return -1;
    hp->shared_expert = hp->n_expert_shared > 0;
    hp->shared_expert_gate = false;
    hp->n_ff_shexp = hp->n_expert_shared * hp->n_ff_exp;
    int64_t gating = 0;
    if (get_int(r, E0_KV_EXPERT_GATING_FUNC, 0, 2, false, &gating) < 0) return -1;
    /* 0 (none): deepseek2 softmax, glm4moe sigmoid, as llama.cpp */
    hp->gating = gating == 2 ? E0_GATING_SIGMOID : gating == 1 ? E0_GATING_SOFTMAX : none_gating;
    bool norm = false;
    e0_arch_key(r->a, E0_KV_EXPERT_WEIGHTS_NORM, full, sizeof full);
    if (gguf_get_bool(r->f, full, &norm, r->e) < 0) return -1;
    hp->moe_norm_topk = norm;
    hp->expert_weights_scale = 0;
    e0_arch_key(r->a, E0_KV_EXPERT_WEIGHTS_SCALE, full, sizeof full);
    if ((rc = gguf_get_f32(r->f, full, &hp->expert_weights_scale, r->e)) < 0) return -1;
    if (rc && !(isfinite(hp->expert_weights_scale) && hp->expert_weights_scale >= 0 && hp->expert_weights_scale < 1e6))
        return e0_fail(r->e, "%s: %s = %g is out of range", path, full, (double)hp->expert_weights_scale);
    if (get_int(r, E0_KV_EXPERT_GROUP_COUNT, 0, 512, false, &hp->n_expert_groups) < 0) return -1; /* route.c's bound */
    if (hp->n_expert_groups > 1) {
        if (hp->n_expert % hp->n_expert_groups || hp->n_expert_groups >= hp->n_expert)
            return e0_fail(r->e, "%s: expert_group_count %lld does not divide expert_count %lld into groups", path,
                           (long long)hp->n_expert_groups, (long long)hp->n_expert);
        if (get_int(r, E0_KV_EXPERT_GROUP_USED_COUNT, 1, hp->n_expert_groups - 1, true, &hp->n_group_used) < 0)
            return -1;
        if (hp->n_group_used * (hp->n_expert / hp->n_expert_groups) < hp->n_expert_used)
            return e0_fail(r->e, "%s: %lld groups of %lld experts cannot hold expert_used_count %lld", path,
                           (long long)hp->n_group_used, (long long)(hp->n_expert / hp->n_expert_groups),
                           (long long)hp->n_expert_used);
    }
    return 0;
}

/* glm4moe: the MTP blocks after the layers (ignored), then deepseek2's routing keys; llama.cpp's
 * graph needs the shared expert. */
static int read_glm4moe(kv_reader *r, e0_hparams *hp) {
    int64_t nextn = 0;
    if (get_int(r, E0_KV_NEXTN_PREDICT_LAYERS, 0, hp->n_layer - 1, false, &nextn) < 0) return -1;
    hp->n_layer_nextn = nextn;
    hp->n_layer -= nextn; /* the NextN blocks' tensors stay in the file, unread */
    if (read_ds_routing(r, hp, E0_GATING_SIGMOID) < 0) return -1;
    if (hp->n_expert_shared < 1)
        return e0_fail(r->e, "%s: %s.expert_shared_count must be >= 1 (llama.cpp's glm4moe graph always adds the shared expert)",
                       r->f->path, r->a->name);
    return 0;
}

/* An integer array key of exactly n entries (any integer or bool element type) into out.
 * Returns 1 found, 0 absent, -1 error (wrong type or length). */
static int get_int_array(kv_reader *r, enum e0_kv k, int64_t n, int64_t *out) {
    char full[160];
    e0_arch_key(r->a, k, full, sizeof full);
    static const enum gguf_vtype types[] = {GGUF_I32, GGUF_U32, GGUF_BOOL, GGUF_U8, GGUF_I8, GGUF_I64, GGUF_U64};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const void *data;
        uint64_t cnt;
        e0_err tmp;
        int rc = gguf_get_arr(r->f, full, types[ti], &data, &cnt, &tmp);
        if (rc == 0) return 0; /* absent */
        if (rc < 0) continue;  /* present with another element type: try the next */
        if (cnt != (uint64_t)n)
            return e0_fail(r->e, "%s: %s has %llu entries, expected %lld", r->f->path, full, (unsigned long long)cnt, (long long)n);
        const uint8_t *b = data;
        for (int64_t i = 0; i < n; i++) {
            int64_t v = 0;
            switch (types[ti]) {
            case GGUF_I32: { int32_t x; memcpy(&x, b + (size_t)i * 4, 4); v = x; } break;
            case GGUF_U32: { uint32_t x; memcpy(&x, b + (size_t)i * 4, 4); v = x; } break;
            case GGUF_I8: v = (int8_t)b[i]; break;
            case GGUF_BOOL: case GGUF_U8: v = b[i]; break;
            default: { int64_t x; memcpy(&x, b + (size_t)i * 8, 8); v = x; } break;
            }
            out[i] = v;
        }
        return 1;
    }
    return e0_fail(r->e, "%s: %s is not an array of integers", r->f->path, full);
}

/* The hybrid models' keys (llama.cpp's qwen35 / qwen35moe / qwen3next loaders): the DeltaNet
 * sizes, which layers are recurrent, the MTP blocks to ignore, the RoPE sections. */
static int read_hybrid(kv_reader *r, e0_hparams *hp) {
    const char *path = r->f->path;
    int64_t nextn = 0;
    if (get_int(r, E0_KV_NEXTN_PREDICT_LAYERS, 0, hp->n_layer - 1, false, &nextn) < 0) return -1;
    const int64_t n_all = hp->n_layer;
    hp->n_layer_nextn = nextn;
    hp->n_layer = n_all - nextn; /* the MTP blocks (draft heads) are not part of the main pass */
    if (get_int(r, E0_KV_SSM_CONV_KERNEL, 1, 64, true, &hp->ssm_d_conv) < 0 ||
        get_int(r, E0_KV_SSM_STATE_SIZE, 1, 4096, true, &hp->ssm_d_state) < 0 ||
        get_int(r, E0_KV_SSM_GROUP_COUNT, 1, 4096, true, &hp->ssm_n_group) < 0 ||
        get_int(r, E0_KV_SSM_TIME_STEP_RANK, 1, 4096, true, &hp->ssm_dt_rank) < 0 ||
        get_int(r, E0_KV_SSM_INNER_SIZE, 1, MAX_DIM, true, &hp->ssm_d_inner) < 0)
        return -1;
    if (hp->ssm_dt_rank % hp->ssm_n_group)
        return e0_fail(r->e, "%s: ssm.time_step_rank %lld (value heads) is not a multiple of ssm.group_count %lld (key heads)",
                       path, (long long)hp->ssm_dt_rank, (long long)hp->ssm_n_group);
    if (hp->ssm_d_inner != hp->ssm_dt_rank * hp->ssm_d_state)
        return e0_fail(r->e, "%s: ssm.inner_size %lld != ssm.time_step_rank %lld x ssm.state_size %lld", path,
                       (long long)hp->ssm_d_inner, (long long)hp->ssm_dt_rank, (long long)hp->ssm_d_state);
    if (hp->ssm_d_state * hp->ssm_d_state * hp->ssm_dt_rank > ((int64_t)1 << 30))
        return e0_fail(r->e, "%s: DeltaNet state of %lld x %lld x %lld values is too large", path,
                       (long long)hp->ssm_dt_rank, (long long)hp->ssm_d_state, (long long)hp->ssm_d_state);
    /* recurrent layers: attention.recurrent_layers, else every layer but each interval-th */
    int64_t *flags = malloc((size_t)n_all * sizeof *flags);
    if (!flags) return e0_fail(r->e, "out of memory");
    int rc = get_int_array(r, E0_KV_ATTENTION_RECURRENT_LAYERS, n_all, flags);
    if (rc < 0) return free(flags), -1;
    if (rc == 0) {
        int64_t interval = 4;
        if (get_int(r, E0_KV_FULL_ATTENTION_INTERVAL, 1, E0_MAX_LAYERS, false, &interval) < 0) return free(flags), -1;
        for (int64_t i = 0; i < n_all; i++) flags[i] = (i + 1) % interval != 0;
    }
    memset(hp->recr_bits, 0, sizeof hp->recr_bits);
    hp->n_layer_kv = 0;
    for (int64_t i = 0; i < hp->n_layer; i++) {
        if (flags[i]) hp->recr_bits[i / 64] |= (uint64_t)1 << (i % 64);
        else hp->n_layer_kv++;
    }
    free(flags);
    /* RoPE sections (qwen35*: required, 4 entries; only text positions are supported, so they only
     * decide which pairs stay unrotated) */
    if (hp->rope_imrope) {
        int64_t sec[4];
        if ((rc = get_int_array(r, E0_KV_ROPE_DIMENSION_SECTIONS, 4, sec)) < 0) return -1;
        if (rc == 0) {
            char full[160];
            return e0_fail(r->e, "%s: missing metadata key '%s'", path,
                           e0_arch_key(r->a, E0_KV_ROPE_DIMENSION_SECTIONS, full, sizeof full));
        }
        int64_t sum = 0;
        for (int i = 0; i < 4; i++) {
            if (sec[i] < 0 || sec[i] > 65536) return e0_fail(r->e, "%s: rope.dimension_sections[%d] = %lld is out of range", path, i, (long long)sec[i]);
            hp->rope_sections[i] = (int32_t)sec[i];
            sum += sec[i];
        }
        if (sum <= 0 || sum > hp->head_dim || sec[0] + sec[1] + sec[2] == 0)
            return e0_fail(r->e, "%s: rope.dimension_sections sum to %lld (must be in 1 .. head_dim %lld, t/h/w not all 0)", path,
                           (long long)sum, (long long)hp->head_dim);
    }
    return 0;
}

/* granitemoe: its multipliers (llama.cpp's granite loader: logit_scale required, the others
 * optional, 0 meaning none) and an optional ungated shared expert. */
static int read_granite(kv_reader *r, e0_hparams *hp) {
    if (get_float(r, E0_KV_LOGIT_SCALE, true, &hp->logit_scale) < 0 ||
        get_float(r, E0_KV_EMBEDDING_SCALE, false, &hp->embd_scale) < 0 ||
        get_float(r, E0_KV_RESIDUAL_SCALE, false, &hp->residual_scale) < 0 ||
        get_float(r, E0_KV_ATTENTION_SCALE, false, &hp->attn_scale) < 0)
        return -1;
    char full[160];
    bool finetuned = true; /* llama.cpp: false switches RoPE off */
    e0_arch_key(r->a, E0_KV_ROPE_SCALING_FINETUNED, full, sizeof full);
    if (gguf_get_bool(r->f, full, &finetuned, r->e) < 0) return -1;
    if (!finetuned) return e0_fail(r->e, "%s: %s = false (no RoPE) is not supported", r->f->path, full);
    return 0;
}

int64_t e0_hparams_kv_layer(const e0_hparams *hp, int64_t il) {
    if (!hp->hybrid) return il;
    int64_t k = 0;
    for (int64_t j = 0; j < il; j++) k += !e0_layer_is_recurrent(hp, j);
    return k;
}

int e0_arch_read_hparams(const gguf_file *f, e0_hparams *hp, e0_err *e) {
    const gguf_string *name;
    int rc = gguf_get_str(f, "general.architecture", &name, e);
    if (rc < 0) return -1;
    if (rc == 0) return e0_fail(e, "%s: missing metadata key 'general.architecture'", f->path);
    const e0_arch_info *a = e0_arch_by_name(name->s);
    if (!a) {
        char list[256];
        return e0_fail(e, "%s: unsupported architecture '%.64s' (supported: %s)", f->path, name->s,
                       e0_arch_list(", ", list, sizeof list));
    }
    memset(hp, 0, sizeof *hp);
    e0_arch_set_flags(hp, a);

    kv_reader r = {f, a, e};
    if (get_int(&r, E0_KV_BLOCK_COUNT, 1, MAX_LAYERS, true, &hp->n_layer) < 0) return -1;
    if (get_int(&r, E0_KV_EMBEDDING_LENGTH, 1, MAX_DIM, true, &hp->n_embd) < 0) return -1;
    if (get_int(&r, E0_KV_CONTEXT_LENGTH, 1, INT32_MAX, true, &hp->n_ctx_train) < 0) return -1;
    if (get_int_or_layers(&r, E0_KV_HEAD_COUNT, hp->n_layer, 1, 4096, true, &hp->n_head) < 0) return -1;
    hp->n_head_kv = hp->n_head;
    if (get_int_or_layers(&r, E0_KV_HEAD_COUNT_KV, hp->n_layer, 1, 4096, false, &hp->n_head_kv) < 0) return -1;
    if (hp->n_head % hp->n_head_kv)
        return e0_fail(e, "%s: head_count %lld is not a multiple of head_count_kv %lld", f->path,
                       (long long)hp->n_head, (long long)hp->n_head_kv);
    hp->head_dim = hp->n_embd / hp->n_head;
    if ((rc = get_int(&r, E0_KV_KEY_LENGTH, 1, 65536, false, &hp->head_dim)) < 0) return -1;
    if (rc == 0 && hp->n_embd % hp->n_head)
        return e0_fail(e, "%s: embedding_length %lld is not a multiple of head_count %lld", f->path,
                       (long long)hp->n_embd, (long long)hp->n_head);
    int64_t vlen = hp->head_dim;
    if (get_int(&r, E0_KV_VALUE_LENGTH, 1, 65536, false, &vlen) < 0) return -1;
    if (vlen != hp->head_dim && !a->mla) /* MLA: value_length = kv_lora_rank (read_mla_hparams) */
        return e0_fail(e, "%s: attention.value_length %lld differs from key_length %lld (not supported)", f->path,
                       (long long)vlen, (long long)hp->head_dim);
    hp->n_rot = hp->head_dim;
    if (get_int(&r, E0_KV_ROPE_DIMENSION_COUNT, 2, hp->head_dim, false, &hp->n_rot) < 0) return -1;
    if (hp->n_rot % 2) return e0_fail(e, "%s: rope.dimension_count %lld is odd", f->path, (long long)hp->n_rot);
    if (get_float(&r, E0_KV_RMS_EPS, true, &hp->rms_eps) < 0) return -1;
    hp->rope_base = a->rope_freq_base;
    if (get_float(&r, E0_KV_ROPE_FREQ_BASE, false, &hp->rope_base) < 0) return -1;

    /* experts: required by MoE architectures, forbidden by dense ones, optional for llama */
    hp->n_expert = 0;
    hp->n_expert_used = 0;
    int64_t max_expert = a->ffn == E0_FFN_DENSE ? 0 : MAX_EXPERTS;
    if (get_int(&r, E0_KV_EXPERT_COUNT, 0, max_expert, a->ffn == E0_FFN_MOE, &hp->n_expert) < 0) return -1;
    if (hp->n_expert > 0) {
        if (get_int_or_layers(&r, E0_KV_EXPERT_USED_COUNT, hp->n_layer, 1, MAX_EXPERTS, true, &hp->n_expert_used) < 0) return -1;
        if (hp->n_expert_used > hp->n_expert)
            return e0_fail(e, "%s: expert_used_count %lld > expert_count %lld", f->path,
                           (long long)hp->n_expert_used, (long long)hp->n_expert);
    } else if (a->ffn == E0_FFN_MOE) {
        return e0_fail(e, "%s: %s.expert_count must be > 0", f->path, a->name);
    }
    /* feed_forward_length: the dense FFN, or the experts' width where they have no own key */
    hp->n_ff = 0;
    if (get_int_or_layers(&r, E0_KV_FEED_FORWARD_LENGTH, hp->n_layer, 1, MAX_DIM, hp->n_expert == 0 || !a->expert_ff_key, &hp->n_ff) < 0)
        return -1;
    hp->n_ff_exp = hp->n_ff;
    if (hp->n_expert > 0 && a->expert_ff_key &&
        get_int_or_layers(&r, E0_KV_EXPERT_FEED_FORWARD_LENGTH, hp->n_layer, 1, MAX_DIM, true, &hp->n_ff_exp) < 0)
        return -1;
    if (hp->n_expert > 0 && a->shared_expert &&
        get_int(&r, E0_KV_EXPERT_SHARED_FEED_FORWARD_LENGTH, a->shared_expert_opt ? 0 : 1, MAX_DIM,
                !a->shared_expert_opt, &hp->n_ff_shexp) < 0)
        return -1;
    if (a->shared_expert_opt) hp->shared_expert = hp->n_expert > 0 && hp->n_ff_shexp > 0; /* granitemoe */
    if (a->granite_scales && read_granite(&r, hp) < 0) return -1;
    if (read_swa_and_rope_scaling(&r, hp) < 0) return -1;
    if (a->mla && read_mla_hparams(&r, hp, vlen) < 0) return -1;
    if (a->ds_routing && read_glm4moe(&r, hp) < 0) return -1;
    if (a->gating_key) { /* minimax-m2: llama.cpp aborts without a gating function */
        int64_t gating = 0;
        if (get_int(&r, E0_KV_EXPERT_GATING_FUNC, 1, 2, true, &gating) < 0) return -1;
        hp->gating = gating == 2 ? E0_GATING_SIGMOID : E0_GATING_SOFTMAX;
    }
    hp->n_layer_kv = hp->n_layer;
    if (a->hybrid && read_hybrid(&r, hp) < 0) return -1;
    return 0;
}

/* ---- the tensors ---- */
#define V1(d0) 1, {E0_DIM_##d0}
#define M2(d0, d1) 2, {E0_DIM_##d0, E0_DIM_##d1}
#define X3(d0, d1, d2) 3, {E0_DIM_##d0, E0_DIM_##d1, E0_DIM_##d2}
static const e0_tensor_info tensors[E0_T_COUNT] = {
    [E0_T_TOKEN_EMBD] = {"token_embd.weight", false, M2(EMBD, VOCAB), E0_NEED_ALWAYS, E0_ROLE_EMBED, E0_KIND_ANY},
    [E0_T_ATTN_NORM] = {"blk.%d.attn_norm.weight", true, V1(EMBD), E0_NEED_ALWAYS, E0_ROLE_NORM, E0_KIND_ANY},
    [E0_T_ATTN_Q] = {"blk.%d.attn_q.weight", true, M2(EMBD, Q_OUT), E0_NEED_MHA, E0_ROLE_WEIGHT, E0_KIND_ATTN},
    [E0_T_ATTN_K] = {"blk.%d.attn_k.weight", true, M2(EMBD, KV), E0_NEED_MHA, E0_ROLE_WEIGHT, E0_KIND_ATTN},
    [E0_T_ATTN_V] = {"blk.%d.attn_v.weight", true, M2(EMBD, KV), E0_NEED_MHA, E0_ROLE_WEIGHT, E0_KIND_ATTN},
    [E0_T_ATTN_Q_BIAS] = {"blk.%d.attn_q.bias", true, V1(Q), E0_NEED_QKV_BIAS, E0_ROLE_BIAS, E0_KIND_ANY},
    [E0_T_ATTN_K_BIAS] = {"blk.%d.attn_k.bias", true, V1(KV), E0_NEED_QKV_BIAS, E0_ROLE_BIAS, E0_KIND_ANY},
    [E0_T_ATTN_V_BIAS] = {"blk.%d.attn_v.bias", true, V1(KV), E0_NEED_QKV_BIAS, E0_ROLE_BIAS, E0_KIND_ANY},
    [E0_T_ATTN_Q_NORM] = {"blk.%d.attn_q_norm.weight", true, V1(Q_NORM), E0_NEED_QK_NORM, E0_ROLE_NORM, E0_KIND_ATTN},
    [E0_T_ATTN_K_NORM] = {"blk.%d.attn_k_norm.weight", true, V1(K_NORM), E0_NEED_QK_NORM, E0_ROLE_NORM, E0_KIND_ATTN},
    [E0_T_ATTN_OUT] = {"blk.%d.attn_output.weight", true, M2(Q, EMBD), E0_NEED_MHA, E0_ROLE_WEIGHT, E0_KIND_ATTN},
    [E0_T_FFN_NORM] = {"blk.%d.ffn_norm.weight", true, V1(EMBD), E0_NEED_FFN_NORM, E0_ROLE_NORM, E0_KIND_ANY},
    [E0_T_FFN_GATE] = {"blk.%d.ffn_gate.weight", true, M2(EMBD, FF), E0_NEED_DENSE_FFN, E0_ROLE_WEIGHT, E0_KIND_ANY},
    [E0_T_FFN_UP] = {"blk.%d.ffn_up.weight", true, M2(EMBD, FF), E0_NEED_DENSE_FFN, E0_ROLE_WEIGHT, E0_KIND_ANY},
    [E0_T_FFN_DOWN] = {"blk.%d.ffn_down.weight", true, M2(FF, EMBD), E0_NEED_DENSE_FFN, E0_ROLE_WEIGHT, E0_KIND_ANY},
    [E0_T_FFN_GATE_INP] = {"blk.%d.ffn_gate_inp.weight", true, M2(EMBD, EXPERT), E0_NEED_MOE_FFN, E0_ROLE_ROUTER, E0_KIND_ANY},
    [E0_T_FFN_GATE_EXPS] = {"blk.%d.ffn_gate_exps.weight", true, X3(EMBD, FF_EXP, EXPERT), E0_NEED_MOE_FFN, E0_ROLE_WEIGHT, E0_KIND_ANY},
    [E0_T_FFN_UP_EXPS] = {"blk.%d.ffn_up_exps.weight", true, X3(EMBD, FF_EXP, EXPERT), E0_NEED_MOE_FFN, E0_ROLE_WEIGHT, E0_KIND_ANY},
    [E0_T_FFN_DOWN_EXPS] = {"blk.%d.ffn_down_exps.weight", true, X3(FF_EXP, EMBD, EXPERT), E0_NEED_MOE_FFN, E0_ROLE_WEIGHT, E0_KIND_ANY},
    [E0_T_FFN_GATE_INP_SHEXP] = {"blk.%d.ffn_gate_inp_shexp.weight", true, V1(EMBD), E0_NEED_SHARED_EXPERT_GATE, E0_ROLE_WEIGHT, E0_KIND_ANY},
    [E0_T_FFN_GATE_SHEXP] = {"blk.%d.ffn_gate_shexp.weight", true, M2(EMBD, FF_SHEXP), E0_NEED_SHARED_EXPERT, E0_ROLE_WEIGHT, E0_KIND_ANY},
    [E0_T_FFN_UP_SHEXP] = {"blk.%d.ffn_up_shexp.weight", true, M2(EMBD, FF_SHEXP), E0_NEED_SHARED_EXPERT, E0_ROLE_WEIGHT, E0_KIND_ANY},
    [E0_T_FFN_DOWN_SHEXP] = {"blk.%d.ffn_down_shexp.weight", true, M2(FF_SHEXP, EMBD), E0_NEED_SHARED_EXPERT, E0_ROLE_WEIGHT, E0_KIND_ANY},
    [E0_T_MLA_Q] = {"blk.%d.attn_q.weight", true, M2(EMBD, Q_MLA), E0_NEED_MLA_Q, E0_ROLE_WEIGHT, E0_KIND_ANY},
    [E0_T_MLA_Q_A] = {"blk.%d.attn_q_a.weight", true, M2(EMBD, Q_LORA), E0_NEED_MLA_Q_LORA, E0_ROLE_WEIGHT, E0_KIND_ANY},
    [E0_T_MLA_Q_A_NORM] = {"blk.%d.attn_q_a_norm.weight", true, V1(Q_LORA), E0_NEED_MLA_Q_LORA, E0_ROLE_NORM, E0_KIND_ANY},
    [E0_T_MLA_Q_B] = {"blk.%d.attn_q_b.weight", true, M2(Q_LORA, Q_MLA), E0_NEED_MLA_Q_LORA, E0_ROLE_WEIGHT, E0_KIND_ANY},
    [E0_T_MLA_KV_A] = {"blk.%d.attn_kv_a_mqa.weight", true, M2(EMBD, KV_A), E0_NEED_MLA, E0_ROLE_WEIGHT, E0_KIND_ANY},
    [E0_T_MLA_KV_A_NORM] = {"blk.%d.attn_kv_a_norm.weight", true, V1(KV_LORA), E0_NEED_MLA, E0_ROLE_NORM, E0_KIND_ANY},
    [E0_T_MLA_K_B] = {"blk.%d.attn_k_b.weight", true, X3(NOPE, KV_LORA, HEADS), E0_NEED_MLA, E0_ROLE_WEIGHT, E0_KIND_ANY},
    [E0_T_MLA_V_B] = {"blk.%d.attn_v_b.weight", true, X3(KV_LORA, V_MLA, HEADS), E0_NEED_MLA, E0_ROLE_WEIGHT, E0_KIND_ANY},
    [E0_T_MLA_OUT] = {"blk.%d.attn_output.weight", true, M2(ATT_MLA, EMBD), E0_NEED_MLA, E0_ROLE_WEIGHT, E0_KIND_ANY},
    [E0_T_FFN_EXP_PROBS_B] = {"blk.%d.exp_probs_b.bias", true, V1(EXPERT), E0_NEED_EXP_PROBS_B, E0_ROLE_BIAS, E0_KIND_ANY},
    [E0_T_OUTPUT_NORM] = {"output_norm.weight", false, V1(EMBD), E0_NEED_ALWAYS, E0_ROLE_NORM, E0_KIND_ANY},
    [E0_T_OUTPUT] = {"output.weight", false, M2(EMBD, VOCAB), E0_NEED_OUTPUT, E0_ROLE_WEIGHT, E0_KIND_ANY},
    [E0_T_ATTN_OUT_BIAS] = {"blk.%d.attn_output.bias", true, V1(EMBD), E0_NEED_ATTN_OUT_BIAS, E0_ROLE_BIAS, E0_KIND_ANY},
    [E0_T_ATTN_SINKS] = {"blk.%d.attn_sinks.weight", true, V1(HEADS), E0_NEED_ATTN_SINKS, E0_ROLE_SINK, E0_KIND_ANY},
    [E0_T_ATTN_POST_NORM] = {"blk.%d.post_attention_norm.weight", true, V1(EMBD), E0_NEED_POST_ATTN_NORM, E0_ROLE_NORM, E0_KIND_ANY},
    [E0_T_FFN_GATE_INP_BIAS] = {"blk.%d.ffn_gate_inp.bias", true, V1(EXPERT), E0_NEED_ROUTER_BIAS, E0_ROLE_BIAS, E0_KIND_ANY},
    [E0_T_FFN_GATE_EXPS_BIAS] = {"blk.%d.ffn_gate_exps.bias", true, M2(FF_EXP, EXPERT), E0_NEED_EXPERT_BIAS, E0_ROLE_BIAS, E0_KIND_ANY},
    [E0_T_FFN_UP_EXPS_BIAS] = {"blk.%d.ffn_up_exps.bias", true, M2(FF_EXP, EXPERT), E0_NEED_EXPERT_BIAS, E0_ROLE_BIAS, E0_KIND_ANY},
    [E0_T_FFN_DOWN_EXPS_BIAS] = {"blk.%d.ffn_down_exps.bias", true, M2(EMBD, EXPERT), E0_NEED_EXPERT_BIAS, E0_ROLE_BIAS, E0_KIND_ANY},
    /* hybrid models (llama.cpp's names; their FFN norm is E0_T_ATTN_POST_NORM): the DeltaNet layers' */
    [E0_T_DN_QKV] = {"blk.%d.attn_qkv.weight", true, M2(EMBD, DN_CONV), E0_NEED_HYBRID, E0_ROLE_WEIGHT, E0_KIND_RECR},
    [E0_T_DN_GATE] = {"blk.%d.attn_gate.weight", true, M2(EMBD, DN_V), E0_NEED_HYBRID, E0_ROLE_WEIGHT, E0_KIND_RECR},
    [E0_T_DN_CONV1D] = {"blk.%d.ssm_conv1d.weight", true, M2(DN_KERNEL, DN_CONV), E0_NEED_HYBRID, E0_ROLE_CONV, E0_KIND_RECR},
    [E0_T_DN_DT] = {"blk.%d.ssm_dt.bias", true, V1(DN_VHEADS), E0_NEED_HYBRID, E0_ROLE_BIAS, E0_KIND_RECR},
    [E0_T_DN_A] = {"blk.%d.ssm_a", true, V1(DN_VHEADS), E0_NEED_HYBRID, E0_ROLE_DECAY, E0_KIND_RECR},
    [E0_T_DN_BETA] = {"blk.%d.ssm_beta.weight", true, M2(EMBD, DN_VHEADS), E0_NEED_DN_SPLIT_BA, E0_ROLE_WEIGHT, E0_KIND_RECR},
    [E0_T_DN_ALPHA] = {"blk.%d.ssm_alpha.weight", true, M2(EMBD, DN_VHEADS), E0_NEED_DN_SPLIT_BA, E0_ROLE_WEIGHT, E0_KIND_RECR},
    [E0_T_DN_BA] = {"blk.%d.ssm_ba.weight", true, M2(EMBD, DN_VHEADS2), E0_NEED_DN_FUSED_BA, E0_ROLE_WEIGHT, E0_KIND_RECR},
    [E0_T_DN_NORM] = {"blk.%d.ssm_norm.weight", true, V1(DN_STATE), E0_NEED_HYBRID, E0_ROLE_NORM, E0_KIND_RECR},
    [E0_T_DN_OUT] = {"blk.%d.ssm_out.weight", true, M2(DN_V, EMBD), E0_NEED_HYBRID, E0_ROLE_WEIGHT, E0_KIND_RECR},
};
#undef V1
#undef M2
#undef X3

const e0_tensor_info *e0_tensor_get(enum e0_tensor t) { return (unsigned)t < E0_T_COUNT ? &tensors[t] : NULL; }

const char *e0_tensor_name(enum e0_tensor t, int il, char *buf, size_t n) {
    const e0_tensor_info *ti = e0_tensor_get(t);
    if (!ti) snprintf(buf, n, "?");
    else if (ti->per_layer) snprintf(buf, n, ti->name, il);
    else snprintf(buf, n, "%s", ti->name);
    return buf;
}

int e0_tensor_presence(enum e0_tensor t, const e0_hparams *hp) {
    const e0_tensor_info *ti = e0_tensor_get(t);
    if (!ti) return 0;
    bool moe = hp->n_expert > 0;
    switch (ti->need) {
    case E0_NEED_ALWAYS: return 2;
    case E0_NEED_QKV_BIAS: return hp->qkv_bias ? 2 : hp->qkv_bias_opt ? 1 : 0;
    case E0_NEED_QK_NORM: return hp->qk_norm ? 2 : hp->qk_norm_opt ? 1 : 0;
    case E0_NEED_DENSE_FFN: return moe ? 0 : 2;
    case E0_NEED_MOE_FFN: return moe ? 2 : 0;
    case E0_NEED_SHARED_EXPERT: return moe && hp->shared_expert ? 2 : 0;
    case E0_NEED_SHARED_EXPERT_GATE: return moe && hp->shared_expert && hp->shared_expert_gate ? 2 : 0;
    case E0_NEED_MHA: return hp->mla ? 0 : 2;
    case E0_NEED_MLA: return hp->mla ? 2 : 0;
    case E0_NEED_MLA_Q: return hp->mla && hp->q_lora_rank == 0 ? 2 : 0;
    case E0_NEED_MLA_Q_LORA: return hp->mla && hp->q_lora_rank > 0 ? 2 : 0;
    case E0_NEED_EXP_PROBS_B: return moe && hp->mla ? 1 : moe && (hp->ds_routing || hp->exp_probs_b_req) ? 2 : 0;
    case E0_NEED_OUTPUT: {
        const e0_arch_info *a = e0_arch_get(hp->arch);
        return a && a->tied_output ? 1 : 2;
    }
    case E0_NEED_FFN_NORM: return hp->post_attn_norm ? 0 : 2;
    case E0_NEED_POST_ATTN_NORM: return hp->post_attn_norm ? 2 : 0;
    case E0_NEED_ATTN_OUT_BIAS: return hp->attn_out_bias ? 2 : hp->attn_out_bias_opt ? 1 : 0;
    case E0_NEED_ATTN_SINKS: return hp->attn_sinks ? 2 : 0;
    case E0_NEED_ROUTER_BIAS: return moe && hp->router_bias ? 2 : 0;
    case E0_NEED_EXPERT_BIAS: return moe && hp->expert_bias ? 2 : 0;
    case E0_NEED_HYBRID: return hp->hybrid ? 2 : 0;
    case E0_NEED_DN_SPLIT_BA: return hp->hybrid && !hp->dn_ba_fused ? 2 : 0;
    case E0_NEED_DN_FUSED_BA: return hp->hybrid && hp->dn_ba_fused ? 2 : 0;
    }
    return 0;
}

int e0_tensor_presence_at(enum e0_tensor t, const e0_hparams *hp, int64_t il) {
    int p = e0_tensor_presence(t, hp);
    const e0_tensor_info *ti = e0_tensor_get(t);
    if (!p || !ti->per_layer || !hp->hybrid || ti->kind == E0_KIND_ANY) return p;
    bool recr = e0_layer_is_recurrent(hp, il);
    return (ti->kind == E0_KIND_RECR) == recr ? p : 0;
}

static int64_t dim_value(enum e0_dim d, const e0_hparams *hp) {
    switch (d) {
    case E0_DIM_EMBD: return hp->n_embd;
    case E0_DIM_VOCAB: return hp->n_vocab;
    case E0_DIM_Q: return hp->n_head * hp->head_dim;
    case E0_DIM_KV: return hp->n_head_kv * hp->head_dim;
    case E0_DIM_HEAD: return hp->head_dim;
    case E0_DIM_FF: return hp->n_ff;
    case E0_DIM_FF_EXP: return hp->n_ff_exp;
    case E0_DIM_FF_SHEXP: return hp->n_ff_shexp;
    case E0_DIM_EXPERT: return hp->n_expert;
    case E0_DIM_HEADS: return hp->n_head;
    case E0_DIM_Q_MLA: return hp->n_head * hp->head_dim_k_mla;
    case E0_DIM_V_MLA: return hp->head_dim_v_mla;
    case E0_DIM_ATT_MLA: return hp->n_head * hp->head_dim_v_mla;
    case E0_DIM_Q_LORA: return hp->q_lora_rank;
    case E0_DIM_KV_LORA: return hp->kv_lora_rank;
    case E0_DIM_KV_A: return hp->kv_lora_rank + hp->n_rot;
    case E0_DIM_NOPE: return hp->head_dim_k_mla - hp->n_rot;
    case E0_DIM_Q_OUT: return hp->n_head * hp->head_dim * (hp->hybrid ? 2 : 1);
    case E0_DIM_DN_CONV: return 2 * hp->ssm_n_group * hp->ssm_d_state + hp->ssm_d_inner;
    case E0_DIM_DN_V: return hp->ssm_d_inner;
    case E0_DIM_DN_VHEADS: return hp->ssm_dt_rank;
    case E0_DIM_DN_VHEADS2: return 2 * hp->ssm_dt_rank;
    case E0_DIM_DN_STATE: return hp->ssm_d_state;
    case E0_DIM_DN_KERNEL: return hp->ssm_d_conv;
    case E0_DIM_Q_NORM: return hp->qk_norm_full ? hp->n_head * hp->head_dim : hp->head_dim;
    case E0_DIM_K_NORM: return hp->qk_norm_full ? hp->n_head_kv * hp->head_dim : hp->head_dim;
    }
    return 0;
}

e0_hparams e0_layer_hparams(const e0_hparams *hp, int64_t il) {
    e0_hparams l = *hp;
    if (il < hp->n_layer_dense_lead) l.n_expert = 0;
    return l;
}

int e0_tensor_shape(enum e0_tensor t, const e0_hparams *hp, int64_t ne[3]) {
    const e0_tensor_info *ti = e0_tensor_get(t);
    ne[0] = ne[1] = ne[2] = 1;
    if (!ti) return 0;
    for (int i = 0; i < ti->n_dims; i++) ne[i] = dim_value(ti->ne[i], hp);
    return ti->n_dims;
}
