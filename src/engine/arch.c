/* arch.c — the architecture table (see arch.h): one row per architecture, one row per tensor
 * role, the `<arch>.*` key names, and reading the hyperparameters with each row's requirements
 * and defaults. */
#include "engine/arch.h"

#include <math.h>
#include <stdio.h>
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
    hp->rope_neox = a->rope == E0_ROPE_NEOX;
    hp->qk_norm = a->qk_norm;
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
    [E0_KV_ROPE_SCALING_TYPE] = "rope.scaling.type",
    [E0_KV_ROPE_SCALING_FACTOR] = "rope.scaling.factor",
    [E0_KV_ROPE_SCALING_ATTN_FACTOR] = "rope.scaling.attn_factor",
    [E0_KV_ROPE_SCALING_ORIG_CTX_LEN] = "rope.scaling.original_context_length",
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
        if (get_int(r, E0_KV_SLIDING_WINDOW_PATTERN, 1, MAX_LAYERS, false, &hp->swa_period) < 0) return -1;
        if (get_float(r, E0_KV_ROPE_FREQ_BASE_SWA, false, &hp->rope_base_swa) < 0) return -1;
    }
    if (!a->rope_scaling) return 0;
    if (hp->n_rot != hp->head_dim) /* llama.cpp's openai-moe sizes q, k, v by rope.dimension_count */
        return e0_fail(e, "%s: rope.dimension_count %lld differs from attention.key_length %lld (not supported for %s)",
                       f->path, (long long)hp->n_rot, (long long)hp->head_dim, a->name);
    char full[160];
    const gguf_string *type;
    int rc = gguf_get_str(f, e0_arch_key(a, E0_KV_ROPE_SCALING_TYPE, full, sizeof full), &type, e);
    if (rc < 0) return -1;
    const char *kind = rc ? type->s : "linear";
    bool yarn = !strcmp(kind, "yarn");
    if (!yarn && strcmp(kind, "linear") && strcmp(kind, "none"))
        return e0_fail(e, "%s: %s = '%.32s' is not supported (none, linear, yarn)", f->path, full, kind);
    float factor = 0.0f;
    if (get_float(r, E0_KV_ROPE_SCALING_FACTOR, false, &factor) < 0) return -1;
    hp->rope_freq_scale = factor == 0.0f ? 1.0f : 1.0f / factor;
    if (!strcmp(kind, "none")) hp->rope_freq_scale = 1.0f;
    float attn = 1.0f;
    if (get_float(r, E0_KV_ROPE_SCALING_ATTN_FACTOR, false, &attn) < 0) return -1;
    if (get_int(r, E0_KV_ROPE_SCALING_ORIG_CTX_LEN, 1, INT32_MAX, false, &hp->n_ctx_orig) < 0) return -1;
    hp->rope_ext_factor = yarn ? 1.0f : 0.0f;
    hp->rope_attn_factor = 1.0f;
    if (hp->rope_ext_factor != 0.0f) {
        /* llama.cpp: mscale(factor) = 1 + 0.1 ln(factor) (1 when factor <= 1), then divided by
         * 1 + 0.1 ln(factor) again because ggml's rope applies that factor itself */
        const float fct = 1.0f / hp->rope_freq_scale;
        hp->rope_attn_factor = fct <= 1.0f ? 1.0f : 0.1f * 1.0f * logf(fct) + 1.0f;
        hp->rope_attn_factor *= 1.0f / (1.0f + 0.1f * logf(fct));
    }
    hp->rope_attn_factor *= attn;
    return 0;
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
    if (get_int(&r, E0_KV_HEAD_COUNT, 1, 4096, true, &hp->n_head) < 0) return -1;
    hp->n_head_kv = hp->n_head;
    if (get_int(&r, E0_KV_HEAD_COUNT_KV, 1, 4096, false, &hp->n_head_kv) < 0) return -1;
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
    if (vlen != hp->head_dim)
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
        if (get_int(&r, E0_KV_EXPERT_USED_COUNT, 1, MAX_EXPERTS, true, &hp->n_expert_used) < 0) return -1;
        if (hp->n_expert_used > hp->n_expert)
            return e0_fail(e, "%s: expert_used_count %lld > expert_count %lld", f->path,
                           (long long)hp->n_expert_used, (long long)hp->n_expert);
    } else if (a->ffn == E0_FFN_MOE) {
        return e0_fail(e, "%s: %s.expert_count must be > 0", f->path, a->name);
    }
    /* feed_forward_length: the dense FFN, or the experts' width where they have no own key */
    hp->n_ff = 0;
    if (get_int(&r, E0_KV_FEED_FORWARD_LENGTH, 1, MAX_DIM, hp->n_expert == 0 || !a->expert_ff_key, &hp->n_ff) < 0)
        return -1;
    hp->n_ff_exp = hp->n_ff;
    if (hp->n_expert > 0 && a->expert_ff_key &&
        get_int(&r, E0_KV_EXPERT_FEED_FORWARD_LENGTH, 1, MAX_DIM, true, &hp->n_ff_exp) < 0)
        return -1;
    if (hp->n_expert > 0 && a->shared_expert &&
        get_int(&r, E0_KV_EXPERT_SHARED_FEED_FORWARD_LENGTH, 1, MAX_DIM, true, &hp->n_ff_shexp) < 0)
        return -1;
    return read_swa_and_rope_scaling(&r, hp);
}

/* ---- the tensors ---- */
#define V1(d0) 1, {E0_DIM_##d0}
#define M2(d0, d1) 2, {E0_DIM_##d0, E0_DIM_##d1}
#define X3(d0, d1, d2) 3, {E0_DIM_##d0, E0_DIM_##d1, E0_DIM_##d2}
static const e0_tensor_info tensors[E0_T_COUNT] = {
    [E0_T_TOKEN_EMBD] = {"token_embd.weight", false, M2(EMBD, VOCAB), E0_NEED_ALWAYS, E0_ROLE_EMBED},
    [E0_T_ATTN_NORM] = {"blk.%d.attn_norm.weight", true, V1(EMBD), E0_NEED_ALWAYS, E0_ROLE_NORM},
    [E0_T_ATTN_Q] = {"blk.%d.attn_q.weight", true, M2(EMBD, Q), E0_NEED_ALWAYS, E0_ROLE_WEIGHT},
    [E0_T_ATTN_K] = {"blk.%d.attn_k.weight", true, M2(EMBD, KV), E0_NEED_ALWAYS, E0_ROLE_WEIGHT},
    [E0_T_ATTN_V] = {"blk.%d.attn_v.weight", true, M2(EMBD, KV), E0_NEED_ALWAYS, E0_ROLE_WEIGHT},
    [E0_T_ATTN_Q_BIAS] = {"blk.%d.attn_q.bias", true, V1(Q), E0_NEED_QKV_BIAS, E0_ROLE_BIAS},
    [E0_T_ATTN_K_BIAS] = {"blk.%d.attn_k.bias", true, V1(KV), E0_NEED_QKV_BIAS, E0_ROLE_BIAS},
    [E0_T_ATTN_V_BIAS] = {"blk.%d.attn_v.bias", true, V1(KV), E0_NEED_QKV_BIAS, E0_ROLE_BIAS},
    [E0_T_ATTN_Q_NORM] = {"blk.%d.attn_q_norm.weight", true, V1(HEAD), E0_NEED_QK_NORM, E0_ROLE_NORM},
    [E0_T_ATTN_K_NORM] = {"blk.%d.attn_k_norm.weight", true, V1(HEAD), E0_NEED_QK_NORM, E0_ROLE_NORM},
    [E0_T_ATTN_OUT] = {"blk.%d.attn_output.weight", true, M2(Q, EMBD), E0_NEED_ALWAYS, E0_ROLE_WEIGHT},
    [E0_T_FFN_NORM] = {"blk.%d.ffn_norm.weight", true, V1(EMBD), E0_NEED_FFN_NORM, E0_ROLE_NORM},
    [E0_T_FFN_GATE] = {"blk.%d.ffn_gate.weight", true, M2(EMBD, FF), E0_NEED_DENSE_FFN, E0_ROLE_WEIGHT},
    [E0_T_FFN_UP] = {"blk.%d.ffn_up.weight", true, M2(EMBD, FF), E0_NEED_DENSE_FFN, E0_ROLE_WEIGHT},
    [E0_T_FFN_DOWN] = {"blk.%d.ffn_down.weight", true, M2(FF, EMBD), E0_NEED_DENSE_FFN, E0_ROLE_WEIGHT},
    [E0_T_FFN_GATE_INP] = {"blk.%d.ffn_gate_inp.weight", true, M2(EMBD, EXPERT), E0_NEED_MOE_FFN, E0_ROLE_ROUTER},
    [E0_T_FFN_GATE_EXPS] = {"blk.%d.ffn_gate_exps.weight", true, X3(EMBD, FF_EXP, EXPERT), E0_NEED_MOE_FFN, E0_ROLE_WEIGHT},
    [E0_T_FFN_UP_EXPS] = {"blk.%d.ffn_up_exps.weight", true, X3(EMBD, FF_EXP, EXPERT), E0_NEED_MOE_FFN, E0_ROLE_WEIGHT},
    [E0_T_FFN_DOWN_EXPS] = {"blk.%d.ffn_down_exps.weight", true, X3(FF_EXP, EMBD, EXPERT), E0_NEED_MOE_FFN, E0_ROLE_WEIGHT},
    [E0_T_FFN_GATE_INP_SHEXP] = {"blk.%d.ffn_gate_inp_shexp.weight", true, V1(EMBD), E0_NEED_SHARED_EXPERT_GATE, E0_ROLE_WEIGHT},
    [E0_T_FFN_GATE_SHEXP] = {"blk.%d.ffn_gate_shexp.weight", true, M2(EMBD, FF_SHEXP), E0_NEED_SHARED_EXPERT, E0_ROLE_WEIGHT},
    [E0_T_FFN_UP_SHEXP] = {"blk.%d.ffn_up_shexp.weight", true, M2(EMBD, FF_SHEXP), E0_NEED_SHARED_EXPERT, E0_ROLE_WEIGHT},
    [E0_T_FFN_DOWN_SHEXP] = {"blk.%d.ffn_down_shexp.weight", true, M2(FF_SHEXP, EMBD), E0_NEED_SHARED_EXPERT, E0_ROLE_WEIGHT},
    [E0_T_OUTPUT_NORM] = {"output_norm.weight", false, V1(EMBD), E0_NEED_ALWAYS, E0_ROLE_NORM},
    [E0_T_OUTPUT] = {"output.weight", false, M2(EMBD, VOCAB), E0_NEED_OUTPUT, E0_ROLE_WEIGHT},
    [E0_T_ATTN_OUT_BIAS] = {"blk.%d.attn_output.bias", true, V1(EMBD), E0_NEED_ATTN_OUT_BIAS, E0_ROLE_BIAS},
    [E0_T_ATTN_SINKS] = {"blk.%d.attn_sinks.weight", true, V1(HEADS), E0_NEED_ATTN_SINKS, E0_ROLE_SINK},
    [E0_T_ATTN_POST_NORM] = {"blk.%d.post_attention_norm.weight", true, V1(EMBD), E0_NEED_POST_ATTN_NORM, E0_ROLE_NORM},
    [E0_T_FFN_GATE_INP_BIAS] = {"blk.%d.ffn_gate_inp.bias", true, V1(EXPERT), E0_NEED_ROUTER_BIAS, E0_ROLE_BIAS},
    [E0_T_FFN_GATE_EXPS_BIAS] = {"blk.%d.ffn_gate_exps.bias", true, M2(FF_EXP, EXPERT), E0_NEED_EXPERT_BIAS, E0_ROLE_BIAS},
    [E0_T_FFN_UP_EXPS_BIAS] = {"blk.%d.ffn_up_exps.bias", true, M2(FF_EXP, EXPERT), E0_NEED_EXPERT_BIAS, E0_ROLE_BIAS},
    [E0_T_FFN_DOWN_EXPS_BIAS] = {"blk.%d.ffn_down_exps.bias", true, M2(EMBD, EXPERT), E0_NEED_EXPERT_BIAS, E0_ROLE_BIAS},
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
    case E0_NEED_QKV_BIAS: return hp->qkv_bias ? 2 : 0;
    case E0_NEED_QK_NORM: return hp->qk_norm ? 2 : 0;
    case E0_NEED_DENSE_FFN: return moe ? 0 : 2;
    case E0_NEED_MOE_FFN: return moe ? 2 : 0;
    case E0_NEED_SHARED_EXPERT: return moe && hp->shared_expert ? 2 : 0;
    case E0_NEED_SHARED_EXPERT_GATE: return moe && hp->shared_expert && hp->shared_expert_gate ? 2 : 0;
    case E0_NEED_OUTPUT: {
        const e0_arch_info *a = e0_arch_get(hp->arch);
        return a && a->tied_output ? 1 : 2;
    }
    case E0_NEED_FFN_NORM: return hp->post_attn_norm ? 0 : 2;
    case E0_NEED_POST_ATTN_NORM: return hp->post_attn_norm ? 2 : 0;
    case E0_NEED_ATTN_OUT_BIAS: return hp->attn_out_bias ? 2 : 0;
    case E0_NEED_ATTN_SINKS: return hp->attn_sinks ? 2 : 0;
    case E0_NEED_ROUTER_BIAS: return moe && hp->router_bias ? 2 : 0;
    case E0_NEED_EXPERT_BIAS: return moe && hp->expert_bias ? 2 : 0;
    }
    return 0;
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
    }
    return 0;
}

int e0_tensor_shape(enum e0_tensor t, const e0_hparams *hp, int64_t ne[3]) {
    const e0_tensor_info *ti = e0_tensor_get(t);
    ne[0] = ne[1] = ne[2] = 1;
    if (!ti) return 0;
    for (int i = 0; i < ti->n_dims; i++) ne[i] = dim_value(ti->ne[i], hp);
    return ti->n_dims;
}
