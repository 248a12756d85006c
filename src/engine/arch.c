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
    /* hybrids (llama.cpp src/models/qwen35.cpp, qwen35moe.cpp, qwen3next.cpp) */
    [E0_ARCH_QWEN35] = {.arch = E0_ARCH_QWEN35, .name = "qwen35", .ffn = E0_FFN_DENSE, .qk_norm = true,
                        .gating = E0_GATING_SOFTMAX, .norm_topk = true, .rope = E0_ROPE_IMROPE, .tied_output = true,
                        .rope_freq_base = 10000.0f, .typical_rope_base = 1e7, .typical_rms_eps = 1e-6,
                        .vocab = E0_VOCAB_BPE, .hybrid = true, .dn_heads_tiled = true},
    [E0_ARCH_QWEN35MOE] = {.arch = E0_ARCH_QWEN35MOE, .name = "qwen35moe", .ffn = E0_FFN_MOE, .expert_ff_key = true,
                           .qk_norm = true, .shared_expert = true, .shared_expert_gate = true,
                           .gating = E0_GATING_SOFTMAX, .norm_topk = true, .rope = E0_ROPE_IMROPE, .tied_output = true,
                           .rope_freq_base = 10000.0f, .typical_rope_base = 1e7, .typical_rms_eps = 1e-6,
                           .vocab = E0_VOCAB_BPE, .hybrid = true, .dn_heads_tiled = true},
    [E0_ARCH_QWEN3NEXT] = {.arch = E0_ARCH_QWEN3NEXT, .name = "qwen3next", .ffn = E0_FFN_MOE, .expert_ff_key = true,
                           .qk_norm = true, .shared_expert = true, .shared_expert_gate = true,
                           .gating = E0_GATING_SOFTMAX, .norm_topk = true, .rope = E0_ROPE_NEOX, .tied_output = true,
                           .rope_freq_base = 10000.0f, .typical_rope_base = 1e7, .typical_rms_eps = 1e-6,
                           .vocab = E0_VOCAB_BPE, .hybrid = true, .dn_ba_fused = true},
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
    hp->qkv_bias = a->qkv_bias;
    hp->moe_norm_topk = a->norm_topk;
    hp->shared_expert = a->shared_expert;
    hp->shared_expert_gate = a->shared_expert_gate;
    hp->gating = a->gating;
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
    [E0_KV_SSM_CONV_KERNEL] = "ssm.conv_kernel",
    [E0_KV_SSM_INNER_SIZE] = "ssm.inner_size",
    [E0_KV_SSM_STATE_SIZE] = "ssm.state_size",
    [E0_KV_SSM_TIME_STEP_RANK] = "ssm.time_step_rank",
    [E0_KV_SSM_GROUP_COUNT] = "ssm.group_count",
    [E0_KV_FULL_ATTENTION_INTERVAL] = "full_attention_interval",
    [E0_KV_ROPE_DIMENSION_SECTIONS] = "rope.dimension_sections",
    [E0_KV_ATTENTION_RECURRENT_LAYERS] = "attention.recurrent_layers",
    [E0_KV_NEXTN_PREDICT_LAYERS] = "nextn_predict_layers",
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
    hp->n_layer_kv = hp->n_layer;
    if (a->hybrid && read_hybrid(&r, hp) < 0) return -1;
    return 0;
}

/* ---- the tensors ---- */
#define V1(d0) 1, {E0_DIM_##d0}
#define M2(d0, d1) 2, {E0_DIM_##d0, E0_DIM_##d1}
#define X3(d0, d1, d2) 3, {E0_DIM_##d0, E0_DIM_##d1, E0_DIM_##d2}
static const e0_tensor_info tensors[E0_T_COUNT] = {
    [E0_T_TOKEN_EMBD] = {"token_embd.weight", false, M2(EMBD, VOCAB), E0_NEED_ALWAYS, E0_ROLE_EMBED},
    [E0_T_ATTN_NORM] = {"blk.%d.attn_norm.weight", true, V1(EMBD), E0_NEED_ALWAYS, E0_ROLE_NORM},
    [E0_T_ATTN_Q] = {"blk.%d.attn_q.weight", true, M2(EMBD, Q_OUT), E0_NEED_ALWAYS, E0_ROLE_WEIGHT, E0_KIND_ATTN},
    [E0_T_ATTN_K] = {"blk.%d.attn_k.weight", true, M2(EMBD, KV), E0_NEED_ALWAYS, E0_ROLE_WEIGHT, E0_KIND_ATTN},
    [E0_T_ATTN_V] = {"blk.%d.attn_v.weight", true, M2(EMBD, KV), E0_NEED_ALWAYS, E0_ROLE_WEIGHT, E0_KIND_ATTN},
    [E0_T_ATTN_Q_BIAS] = {"blk.%d.attn_q.bias", true, V1(Q), E0_NEED_QKV_BIAS, E0_ROLE_BIAS},
    [E0_T_ATTN_K_BIAS] = {"blk.%d.attn_k.bias", true, V1(KV), E0_NEED_QKV_BIAS, E0_ROLE_BIAS},
    [E0_T_ATTN_V_BIAS] = {"blk.%d.attn_v.bias", true, V1(KV), E0_NEED_QKV_BIAS, E0_ROLE_BIAS},
    [E0_T_ATTN_Q_NORM] = {"blk.%d.attn_q_norm.weight", true, V1(HEAD), E0_NEED_QK_NORM, E0_ROLE_NORM, E0_KIND_ATTN},
    [E0_T_ATTN_K_NORM] = {"blk.%d.attn_k_norm.weight", true, V1(HEAD), E0_NEED_QK_NORM, E0_ROLE_NORM, E0_KIND_ATTN},
    [E0_T_ATTN_OUT] = {"blk.%d.attn_output.weight", true, M2(Q, EMBD), E0_NEED_ALWAYS, E0_ROLE_WEIGHT, E0_KIND_ATTN},
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
    /* hybrid models (llama.cpp's names): the FFN norm of every layer, then the DeltaNet layers' */
    [E0_T_ATTN_POST_NORM] = {"blk.%d.post_attention_norm.weight", true, V1(EMBD), E0_NEED_HYBRID, E0_ROLE_NORM},
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
    case E0_NEED_FFN_NORM: return hp->hybrid ? 0 : 2;
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
    case E0_DIM_Q_OUT: return hp->n_head * hp->head_dim * (hp->hybrid ? 2 : 1);
    case E0_DIM_DN_CONV: return 2 * hp->ssm_n_group * hp->ssm_d_state + hp->ssm_d_inner;
    case E0_DIM_DN_V: return hp->ssm_d_inner;
    case E0_DIM_DN_VHEADS: return hp->ssm_dt_rank;
    case E0_DIM_DN_VHEADS2: return 2 * hp->ssm_dt_rank;
    case E0_DIM_DN_STATE: return hp->ssm_d_state;
    case E0_DIM_DN_KERNEL: return hp->ssm_d_conv;
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
