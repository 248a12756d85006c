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
    /* routing flags (gating, norm_topk, shared expert) come from its keys: read_mla_hparams */
    [E0_ARCH_DEEPSEEK2] = {.arch = E0_ARCH_DEEPSEEK2, .name = "deepseek2", .ffn = E0_FFN_MOE, .expert_ff_key = true,
                           .gating = E0_GATING_SOFTMAX, .norm_topk = false, .rope = E0_ROPE_NORMAL,
                           .tied_output = true, .rope_freq_base = 10000.0f, .typical_rope_base = 1e4,
                           .typical_rms_eps = 1e-6, .vocab = E0_VOCAB_BPE, .mla = true},
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
    float log_mul;
    return read_rope_scaling(r, hp, &log_mul);
}

/* deepseek2: the keys of multi-head latent attention, its routing and YaRN, with llama.cpp's
 * semantics (llama-model.cpp, models/deepseek2.cpp, llama-context.cpp). The file's key_length
 * (head_dim here) is kv_lora_rank + n_rot and value_length is kv_lora_rank: the width of the
 * compressed cache row every head attends over. Files from before the split attn_k_b / attn_v_b
 * tensors (no key_length_mla) are not supported. */
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

    /* routing */
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
    hp->gating = gating == 2 ? E0_GATING_SIGMOID : E0_GATING_SOFTMAX; /* 0 (none): softmax, as llama.cpp */
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
    if (read_swa_and_rope_scaling(&r, hp) < 0) return -1;
    if (a->mla) return read_mla_hparams(&r, hp, vlen);
    return 0;
}

/* ---- the tensors ---- */
#define V1(d0) 1, {E0_DIM_##d0}
#define M2(d0, d1) 2, {E0_DIM_##d0, E0_DIM_##d1}
#define X3(d0, d1, d2) 3, {E0_DIM_##d0, E0_DIM_##d1, E0_DIM_##d2}
static const e0_tensor_info tensors[E0_T_COUNT] = {
    [E0_T_TOKEN_EMBD] = {"token_embd.weight", false, M2(EMBD, VOCAB), E0_NEED_ALWAYS, E0_ROLE_EMBED},
    [E0_T_ATTN_NORM] = {"blk.%d.attn_norm.weight", true, V1(EMBD), E0_NEED_ALWAYS, E0_ROLE_NORM},
    [E0_T_ATTN_Q] = {"blk.%d.attn_q.weight", true, M2(EMBD, Q), E0_NEED_MHA, E0_ROLE_WEIGHT},
    [E0_T_ATTN_K] = {"blk.%d.attn_k.weight", true, M2(EMBD, KV), E0_NEED_MHA, E0_ROLE_WEIGHT},
    [E0_T_ATTN_V] = {"blk.%d.attn_v.weight", true, M2(EMBD, KV), E0_NEED_MHA, E0_ROLE_WEIGHT},
    [E0_T_ATTN_Q_BIAS] = {"blk.%d.attn_q.bias", true, V1(Q), E0_NEED_QKV_BIAS, E0_ROLE_BIAS},
    [E0_T_ATTN_K_BIAS] = {"blk.%d.attn_k.bias", true, V1(KV), E0_NEED_QKV_BIAS, E0_ROLE_BIAS},
    [E0_T_ATTN_V_BIAS] = {"blk.%d.attn_v.bias", true, V1(KV), E0_NEED_QKV_BIAS, E0_ROLE_BIAS},
    [E0_T_ATTN_Q_NORM] = {"blk.%d.attn_q_norm.weight", true, V1(HEAD), E0_NEED_QK_NORM, E0_ROLE_NORM},
    [E0_T_ATTN_K_NORM] = {"blk.%d.attn_k_norm.weight", true, V1(HEAD), E0_NEED_QK_NORM, E0_ROLE_NORM},
    [E0_T_ATTN_OUT] = {"blk.%d.attn_output.weight", true, M2(Q, EMBD), E0_NEED_MHA, E0_ROLE_WEIGHT},
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
    [E0_T_MLA_Q] = {"blk.%d.attn_q.weight", true, M2(EMBD, Q_MLA), E0_NEED_MLA_Q, E0_ROLE_WEIGHT},
    [E0_T_MLA_Q_A] = {"blk.%d.attn_q_a.weight", true, M2(EMBD, Q_LORA), E0_NEED_MLA_Q_LORA, E0_ROLE_WEIGHT},
    [E0_T_MLA_Q_A_NORM] = {"blk.%d.attn_q_a_norm.weight", true, V1(Q_LORA), E0_NEED_MLA_Q_LORA, E0_ROLE_NORM},
    [E0_T_MLA_Q_B] = {"blk.%d.attn_q_b.weight", true, M2(Q_LORA, Q_MLA), E0_NEED_MLA_Q_LORA, E0_ROLE_WEIGHT},
    [E0_T_MLA_KV_A] = {"blk.%d.attn_kv_a_mqa.weight", true, M2(EMBD, KV_A), E0_NEED_MLA, E0_ROLE_WEIGHT},
    [E0_T_MLA_KV_A_NORM] = {"blk.%d.attn_kv_a_norm.weight", true, V1(KV_LORA), E0_NEED_MLA, E0_ROLE_NORM},
    [E0_T_MLA_K_B] = {"blk.%d.attn_k_b.weight", true, X3(NOPE, KV_LORA, HEADS), E0_NEED_MLA, E0_ROLE_WEIGHT},
    [E0_T_MLA_V_B] = {"blk.%d.attn_v_b.weight", true, X3(KV_LORA, V_MLA, HEADS), E0_NEED_MLA, E0_ROLE_WEIGHT},
    [E0_T_MLA_OUT] = {"blk.%d.attn_output.weight", true, M2(ATT_MLA, EMBD), E0_NEED_MLA, E0_ROLE_WEIGHT},
    [E0_T_FFN_EXP_PROBS_B] = {"blk.%d.exp_probs_b.bias", true, V1(EXPERT), E0_NEED_EXP_PROBS_B, E0_ROLE_BIAS},
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
    case E0_NEED_MHA: return hp->mla ? 0 : 2;
    case E0_NEED_MLA: return hp->mla ? 2 : 0;
    case E0_NEED_MLA_Q: return hp->mla && hp->q_lora_rank == 0 ? 2 : 0;
    case E0_NEED_MLA_Q_LORA: return hp->mla && hp->q_lora_rank > 0 ? 2 : 0;
    case E0_NEED_EXP_PROBS_B: return moe && hp->mla ? 1 : 0;
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
    case E0_DIM_Q_MLA: return hp->n_head * hp->head_dim_k_mla;
    case E0_DIM_V_MLA: return hp->head_dim_v_mla;
    case E0_DIM_ATT_MLA: return hp->n_head * hp->head_dim_v_mla;
    case E0_DIM_Q_LORA: return hp->q_lora_rank;
    case E0_DIM_KV_LORA: return hp->kv_lora_rank;
    case E0_DIM_KV_A: return hp->kv_lora_rank + hp->n_rot;
    case E0_DIM_NOPE: return hp->head_dim_k_mla - hp->n_rot;
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
