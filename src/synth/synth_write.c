/* synth_write.c — writing a synth model: the tensor list of its architecture (names, shapes and
 * which tensors exist all come from the table in engine/arch.h), the metadata, and the weights,
 * generated in row chunks by worker threads and written in order by the calling thread, so
 * memory stays at a few chunks whatever the model size.
 *
 * Intended weight distributions keep activations near unit RMS through any depth: matrices
 * N(0, 1/fan_in), token embeddings N(0, 1), norm weights 1 + N(0, 0.1^2), biases N(0, 0.1^2),
 * routers N(0, 4/n_embd) so that expert choice clearly depends on the token.
 *
 * Two ways to produce a tensor's bytes:
 *  - direct (default for quantized types): blocks drawn from the PRNG by synth_blocks.c, with
 *    the intended mean and std after dequantization; 0.2-1.5 ns per weight.
 *  - float (F32/F16/BF16 always; quantized types with synth_params.quantize): element i of
 *    tensor T is a function of (seed, name of T, i) — splitmix64 of a counter turned into an
 *    approximately normal value (sum of four 16-bit uniforms) — then the type's reference
 *    quantizer (~200 ns per weight for the K-quants). */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "quant/quant.h"
#include "synth/synth_impl.h"

enum init_kind { INIT_MATRIX, INIT_EMBED, INIT_NORM, INIT_BIAS, INIT_ROUTER, INIT_SINK, INIT_DECAY, INIT_CONV };

typedef struct synth_tensor {
    char name[GGUF_MAX_NAME + 1];
    uint32_t n_dims;
    uint64_t ne[3];
    uint32_t type;
    enum init_kind init;
    uint64_t nbytes;
    uint64_t key; /* PRNG key: hash of seed and name */
    int direct;   /* bytes drawn as quantized blocks, not quantized from floats */
} synth_tensor;

typedef struct tensor_list {
    synth_tensor *t;
    size_t n, cap;
} tensor_list;

/* ---- the PRNG (float path; the block path is in synth_blocks.c) ---- */
static uint64_t name_key(uint64_t seed, const char *name) {
    return synth_splitmix64(synth_splitmix64(seed) ^ e0_fnv1a(name, strlen(name)));
}

/* Approximately N(0, 1) for counter i (Irwin-Hall of four 16-bit uniforms, range +-3.46). */
static inline float gauss(uint64_t key, uint64_t i) {
    uint64_t r = synth_splitmix64(key + (i + 1) * 0x9e3779b97f4a7c15ull);
    uint32_t s = (uint32_t)(r & 0xffff) + (uint32_t)((r >> 16) & 0xffff) + (uint32_t)((r >> 32) & 0xffff) +
                 (uint32_t)(r >> 48);
    return ((float)s - 131070.0f) * (1.0f / 37837.23f);
}

/* The intended mean and standard deviation of tensor t's elements. */
static float init_std(const synth_tensor *t, float *mean) {
    *mean = t->init == INIT_NORM ? 1.0f : t->init == INIT_DECAY ? -0.5f : 0.0f;
    switch (t->init) {
    case INIT_DECAY: return 0.15f; /* ssm_a = -exp(A_log) < 0: each token's decay exp(g) is < 1 */
    case INIT_EMBED: return 1.0f;
    case INIT_NORM: return 0.1f;
    case INIT_BIAS: return 0.1f;
    case INIT_ROUTER: return 2.0f / sqrtf((float)t->ne[0]);
    case INIT_SINK: return 1.0f; /* attention sinks: logits of the order of the scores */
    default: return 1.0f / sqrtf((float)t->ne[0]);
    }
}

/* Elements [first, first + n) of tensor t, as floats. */
static void gen_values(const synth_tensor *t, uint64_t first, uint64_t n, float *dst) {
    float mean, std = init_std(t, &mean);
    for (uint64_t j = 0; j < n; j++) dst[j] = mean + std * gauss(t->key, first + j);
}

/* Whether t's bytes are drawn as blocks directly (see the top of the file). */
static int use_direct(const synth_tensor *t, const synth_params *p) {
    float mean;
    init_std(t, &mean);
    return !p->quantize && mean == 0.0f && synth_blocks_supported(t->type);
}

/* ---- the tensor list ---- */
static int push(tensor_list *l, const synth_params *p, const char *name, uint32_t n_dims, uint64_t ne0, uint64_t ne1,
                uint64_t ne2, enum init_kind init, e0_err *e) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        synth_tensor *t = realloc(l->t, cap * sizeof *t);
        if (!t) return e0_fail(e, "out of memory");
        l->t = t;
        l->cap = cap;
    }
    synth_tensor *t = &l->t[l->n++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->n_dims = n_dims;
    t->ne[0] = ne0;
    t->ne[1] = ne1;
    t->ne[2] = ne2;
    t->init = init;
    /* vectors, routers, biases (gpt-oss: per-expert ones too) and conv1d kernels stay F32, as
     * llama.cpp's quantizer keeps them */
    t->type = (n_dims == 1 || init == INIT_ROUTER || init == INIT_BIAS || init == INIT_CONV) ? E0_TYPE_F32 : synth_fallback_type(p->type, (int64_t)ne0);
    t->nbytes = e0_row_size(t->type, (int64_t)ne0) * ne1 * ne2;
    t->key = name_key(p->seed, name);
    t->direct = use_direct(t, p);
    return 0;
}

/* How tensors of each role are drawn (see the top of the file). */
static enum init_kind init_of(enum e0_role r) {
    switch (r) {
    case E0_ROLE_EMBED: return INIT_EMBED;
    case E0_ROLE_NORM: return INIT_NORM;
    case E0_ROLE_BIAS: return INIT_BIAS;
    case E0_ROLE_ROUTER: return INIT_ROUTER;
    case E0_ROLE_SINK: return INIT_SINK;
    case E0_ROLE_DECAY: return INIT_DECAY;
    case E0_ROLE_CONV: return INIT_CONV;
    case E0_ROLE_WEIGHT: break;
    }
    return INIT_MATRIX;
}

/* Tensor role t of layer il (ignored for model tensors), if the model has it. */
static int push_role(tensor_list *l, const synth_params *p, const e0_hparams *hp, enum e0_tensor t, int il, e0_err *e) {
    if (!e0_tensor_presence_at(t, hp, il) || (t == E0_T_OUTPUT && p->tied_output)) return 0;
    if (t == E0_T_FFN_EXP_PROBS_B && !p->exp_probs_b && e0_tensor_presence_at(t, hp, il) != 2) return 0; /* optional: only when asked */
    if ((t == E0_T_ATTN_Q_NORM || t == E0_T_ATTN_K_NORM) && p->omit_qk_norm) return 0; /* glm4moe's optional norms */
    char name[GGUF_MAX_NAME + 1];
    int64_t ne[3];
    int nd = e0_tensor_shape(t, hp, ne);
    return push(l, p, e0_tensor_name(t, il, name, sizeof name), (uint32_t)nd, (uint64_t)ne[0], (uint64_t)ne[1],
                (uint64_t)ne[2], init_of(e0_tensor_get(t)->role), e);
}

/* Every tensor in file order: the model tensors listed before the layer tensors in enum
 * e0_tensor (token_embd), every layer's, then the other model tensors (output_norm, output). */
static int build_tensors(const synth_params *p, tensor_list *l, e0_err *e) {
    e0_hparams hp;
    synth_hparams(p, &hp);
    int t = 0;
    for (; t < E0_T_COUNT && !e0_tensor_get((enum e0_tensor)t)->per_layer; t++)
        if (push_role(l, p, &hp, (enum e0_tensor)t, 0, e)) return -1;
    for (int64_t il = 0; il < p->n_layer; il++)
        for (int u = 0; u < E0_T_COUNT; u++)
            if (e0_tensor_get((enum e0_tensor)u)->per_layer) {
                const e0_hparams lhp = e0_layer_hparams(&hp, il); /* leading dense layers: no experts */
                if (push_role(l, p, &lhp, (enum e0_tensor)u, (int)il, e)) return -1;
            }
    if (p->mtp) { /* the MTP block: a full-attention layer (layer n_layer is not recurrent) + NextN tensors */
        const int il = (int)p->n_layer;
        char name[GGUF_MAX_NAME + 1];
        for (int u = 0; u < E0_T_COUNT; u++)
            if (e0_tensor_get((enum e0_tensor)u)->per_layer && push_role(l, p, &hp, (enum e0_tensor)u, il, e)) return -1;
        const uint64_t E = (uint64_t)p->n_embd;
        snprintf(name, sizeof name, "blk.%d.nextn.eh_proj.weight", il);
        if (push(l, p, name, 2, 2 * E, E, 1, INIT_MATRIX, e)) return -1;
        static const char *const norms[] = {"enorm", "hnorm", "shared_head_norm"};
        for (int k = 0; k < 3; k++) {
            snprintf(name, sizeof name, "blk.%d.nextn.%s.weight", il, norms[k]);
            if (push(l, p, name, 1, E, 1, 1, INIT_NORM, e)) return -1;
        }
    }
    for (; t < E0_T_COUNT; t++)
        if (!e0_tensor_get((enum e0_tensor)t)->per_layer && push_role(l, p, &hp, (enum e0_tensor)t, 0, e)) return -1;
    return 0;
}

/* Names llama.cpp's quantizer never quantizes though they end in "weight" (llama-quant.cpp):
 * norms, routers, the small 2-D conv kernels of recurrent layers (DeltaNet, Mamba, LFM). */
static int kept_float(const char *name) {
    static const char *const parts[] = {"_norm.weight", "ffn_gate_inp.weight", "ssm_conv1d", "shortconv.conv.weight"};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (strstr(name, parts[i])) return 1;
    return 0;
}

/* The per-tensor plan (--type-map / --ftype), when p has one: each tensor's type from
 * synth_assign_types, with its size and drawing mode redone. */
static int apply_plan(const synth_params *p, tensor_list *l, e0_err *e) {
    if (!p->type_map && !p->use_ftype) return 0;
    synth_tensor_desc *d = calloc(l->n ? l->n : 1, sizeof *d);
    uint32_t *types = calloc(l->n ? l->n : 1, sizeof *types);
    int rc = d && types ? 0 : e0_fail(e, "out of memory");
    /* llama.cpp's quantizer touches only matrices whose name ends in "weight" (so never the
     * 2-D expert biases of gpt-oss, which its graph adds as F32), never routers, nor kept_float's */
    for (size_t i = 0; !rc && i < l->n; i++) {
        const size_t len = strlen(l->t[i].name);
        const int weight = len >= 6 && !strcmp(l->t[i].name + len - 6, "weight");
        d[i] = (synth_tensor_desc){l->t[i].name, {l->t[i].ne[0], l->t[i].ne[1], l->t[i].ne[2]},
                                   weight && l->t[i].n_dims >= 2 && l->t[i].init != INIT_ROUTER && !kept_float(l->t[i].name)};
    }
    if (!rc) rc = synth_assign_types(p, d, l->n, types, e);
    for (size_t i = 0; !rc && i < l->n; i++) {
        synth_tensor *t = &l->t[i];
        t->type = types[i];
        t->nbytes = e0_type_traits_of(t->type) ? e0_row_size(t->type, (int64_t)t->ne[0]) * t->ne[1] * t->ne[2] : 0;
        t->direct = use_direct(t, p);
    }
    free(d);
    free(types);
    return rc;
}

int synth_list_types(const synth_params *p, void (*cb)(void *arg, const char *name, uint32_t type), void *arg, e0_err *e) {
    if (synth_validate(p, e)) return -1;
    tensor_list l = {0};
    int rc = build_tensors(p, &l, e) || apply_plan(p, &l, e) ? -1 : 0;
    for (size_t i = 0; !rc && i < l.n; i++) cb(arg, l.t[i].name, l.t[i].type);
    free(l.t);
    return rc;
}

/* ---- metadata ---- */
/* A hyperparameter llama.cpp reads with get_key_or_arr: a scalar, or with p->layer_arrays an array
 * of n_blocks equal entries. Nonzero on error (as the gguf_writer_kv_* calls). */
static int kv_u32_layers(gguf_writer *w, const synth_params *p, const char *key, uint32_t v) {
    if (!p->layer_arrays) return gguf_writer_kv_u32(w, key, v);
    const int64_t n = p->n_layer + (p->mtp ? 1 : 0);
    uint32_t *a = malloc((size_t)n * sizeof *a);
    if (!a) return -1;
    for (int64_t i = 0; i < n; i++) a[i] = v;
    int rc = gguf_writer_kv_arr(w, key, GGUF_U32, a, (uint64_t)n);
    free(a);
    return rc;
}

/* gpt-oss's sliding_window_pattern as one bool per layer: layer il slides when il % period <
 * period - 1 (period: swa_period, else the row's default), the rule e0_layer_is_swa applies. */
static int kv_swa_pattern_array(gguf_writer *w, const synth_params *p, const e0_arch_info *ai, const char *key) {
    const int64_t period = p->swa_period ? p->swa_period : ai->swa_period;
    uint8_t *a = malloc((size_t)p->n_layer);
    if (!a) return -1;
    for (int64_t il = 0; il < p->n_layer; il++) a[il] = il % period < period - 1;
    int rc = gguf_writer_kv_arr(w, key, GGUF_BOOL, a, (uint64_t)p->n_layer);
    free(a);
    return rc;
}

static int write_metadata(gguf_writer *w, const synth_params *p, e0_err *e) {
    const e0_arch_info *ai = e0_arch_get(p->arch);
    const char *a = ai->name;
    char key[96], name[300];
    snprintf(name, sizeof name, "%s", p->name ? p->name : "");
    if (!p->name) snprintf(name, sizeof name, "synth-%s", a);
#define K(k) e0_arch_key(ai, E0_KV_##k, key, sizeof key)
    int rc = gguf_writer_kv_str(w, "general.architecture", a) || gguf_writer_kv_str(w, "general.name", name) ||
             gguf_writer_kv_u32(w, "general.file_type", p->use_ftype ? (uint32_t)p->ftype : synth_file_type(p->type)) ||
             gguf_writer_kv_u32(w, "general.quantization_version", 2) ||
             gguf_writer_kv_u32(w, "general.alignment", GGUF_DEFAULT_ALIGNMENT) ||
             gguf_writer_kv_u32(w, K(BLOCK_COUNT), (uint32_t)(p->n_layer + (p->mtp ? 1 : 0))) ||
             gguf_writer_kv_u32(w, K(CONTEXT_LENGTH), (uint32_t)p->n_ctx) ||
             gguf_writer_kv_u32(w, K(EMBEDDING_LENGTH), (uint32_t)p->n_embd) ||
             /* minimax-m2: llama.cpp sizes its experts by feed_forward_length */
             kv_u32_layers(w, p, K(FEED_FORWARD_LENGTH), (uint32_t)(ai->gating_key ? p->n_ff_exp : p->n_ff)) ||
             kv_u32_layers(w, p, K(HEAD_COUNT), (uint32_t)p->n_head) ||
             kv_u32_layers(w, p, K(HEAD_COUNT_KV), (uint32_t)(ai->mla ? 1 : p->n_head_kv)) ||
             gguf_writer_kv_u32(w, K(KEY_LENGTH), (uint32_t)(ai->mla ? p->kv_lora_rank + p->n_rot : p->head_dim)) ||
             gguf_writer_kv_u32(w, K(VALUE_LENGTH), (uint32_t)(ai->mla ? p->kv_lora_rank : p->head_dim)) ||
             gguf_writer_kv_f32(w, K(RMS_EPS), (float)p->rms_eps) ||
             gguf_writer_kv_f32(w, K(ROPE_FREQ_BASE), (float)p->rope_base) ||
             gguf_writer_kv_u32(w, K(ROPE_DIMENSION_COUNT), (uint32_t)(p->n_rot ? p->n_rot : p->head_dim)); /* MLA, hybrids */
    if (!rc && p->n_expert)
        rc = gguf_writer_kv_u32(w, K(EXPERT_COUNT), (uint32_t)p->n_expert) ||
             kv_u32_layers(w, p, K(EXPERT_USED_COUNT), (uint32_t)p->n_expert_used);
    if (!rc && p->n_expert && ai->expert_ff_key)
        rc = kv_u32_layers(w, p, K(EXPERT_FEED_FORWARD_LENGTH), (uint32_t)p->n_ff_exp);
    if (!rc && p->n_expert && ai->shared_expert && (p->n_ff_shexp || !ai->shared_expert_opt))
        rc = gguf_writer_kv_u32(w, K(EXPERT_SHARED_FEED_FORWARD_LENGTH), (uint32_t)p->n_ff_shexp);
    if (!rc && ai->granite_scales) /* granite-3.0's multipliers (attention: 1/64, not 1/sqrt(head_dim)) */
        rc = gguf_writer_kv_f32(w, K(EMBEDDING_SCALE), 12.0f) || gguf_writer_kv_f32(w, K(RESIDUAL_SCALE), 0.22f) ||
             gguf_writer_kv_f32(w, K(ATTENTION_SCALE), 0.015625f) || gguf_writer_kv_f32(w, K(LOGIT_SCALE), 6.0f);
    if (!rc && ai->swa_period) /* gpt-oss */
        rc = gguf_writer_kv_u32(w, K(SLIDING_WINDOW), (uint32_t)p->n_swa) ||
             (p->swa_pattern_array ? kv_swa_pattern_array(w, p, ai, K(SLIDING_WINDOW_PATTERN))
              : p->swa_period && gguf_writer_kv_u32(w, K(SLIDING_WINDOW_PATTERN), (uint32_t)p->swa_period));
    if (!rc && ai->rope_scaling && p->yarn_factor)
        rc = gguf_writer_kv_str(w, K(ROPE_SCALING_TYPE), "yarn") ||
             gguf_writer_kv_f32(w, K(ROPE_SCALING_FACTOR), (float)p->yarn_factor) ||
             (p->yarn_orig_ctx && gguf_writer_kv_u32(w, K(ROPE_SCALING_ORIG_CTX_LEN), (uint32_t)p->yarn_orig_ctx));
    if (!rc && ai->mla) { /* deepseek2: the keys the current converter writes */
        rc = gguf_writer_kv_u32(w, K(KV_LORA_RANK), (uint32_t)p->kv_lora_rank) ||
             gguf_writer_kv_u32(w, K(Q_LORA_RANK), (uint32_t)p->q_lora_rank) ||
             gguf_writer_kv_u32(w, K(KEY_LENGTH_MLA), (uint32_t)p->head_dim) ||
             gguf_writer_kv_u32(w, K(VALUE_LENGTH_MLA), (uint32_t)p->head_dim_v) ||
             gguf_writer_kv_u32(w, K(LEADING_DENSE_BLOCK_COUNT), (uint32_t)p->n_layer_dense_lead) ||
             gguf_writer_kv_u32(w, K(EXPERT_SHARED_COUNT), (uint32_t)p->n_expert_shared) ||
             gguf_writer_kv_u32(w, K(EXPERT_GATING_FUNC), p->gating_sigmoid ? 2u : 1u) ||
             gguf_writer_kv_bool(w, K(EXPERT_WEIGHTS_NORM), p->expert_weights_norm != 0);
        if (!rc && p->expert_weights_scale != 0)
            rc = gguf_writer_kv_f32(w, K(EXPERT_WEIGHTS_SCALE), (float)p->expert_weights_scale);
        if (!rc && p->n_expert_groups > 1)
            rc = gguf_writer_kv_u32(w, K(EXPERT_GROUP_COUNT), (uint32_t)p->n_expert_groups) ||
                 gguf_writer_kv_u32(w, K(EXPERT_GROUP_USED_COUNT), (uint32_t)p->n_group_used);
        if (!rc && p->yarn_factor > 0)
            rc = gguf_writer_kv_str(w, K(ROPE_SCALING_TYPE), "yarn") ||
                 gguf_writer_kv_f32(w, K(ROPE_SCALING_FACTOR), (float)p->yarn_factor) ||
                 gguf_writer_kv_u32(w, K(ROPE_SCALING_ORIG_CTX_LEN), (uint32_t)(p->yarn_orig_ctx ? p->yarn_orig_ctx : p->n_ctx)) ||
                 gguf_writer_kv_f32(w, K(ROPE_SCALING_YARN_LOG_MUL), (float)p->yarn_log_mul);
    }
    if (!rc && ai->gating_key) /* minimax-m2 */
        rc = gguf_writer_kv_u32(w, K(EXPERT_GATING_FUNC), p->gating_sigmoid ? 2u : 1u);
    if (!rc && ai->ds_routing) { /* glm4moe: the routing keys its converter writes (deepseek2's names) */
        rc = gguf_writer_kv_u32(w, K(LEADING_DENSE_BLOCK_COUNT), (uint32_t)p->n_layer_dense_lead) ||
             gguf_writer_kv_u32(w, K(EXPERT_SHARED_COUNT), (uint32_t)p->n_expert_shared) ||
             gguf_writer_kv_u32(w, K(EXPERT_GATING_FUNC), p->gating_sigmoid ? 2u : 1u) ||
             gguf_writer_kv_bool(w, K(EXPERT_WEIGHTS_NORM), p->expert_weights_norm != 0) ||
             (p->expert_weights_scale != 0 && gguf_writer_kv_f32(w, K(EXPERT_WEIGHTS_SCALE), (float)p->expert_weights_scale)) ||
             (p->n_expert_groups > 1 && (gguf_writer_kv_u32(w, K(EXPERT_GROUP_COUNT), (uint32_t)p->n_expert_groups) ||
                                         gguf_writer_kv_u32(w, K(EXPERT_GROUP_USED_COUNT), (uint32_t)p->n_group_used))) ||
             (p->mtp && gguf_writer_kv_u32(w, K(NEXTN_PREDICT_LAYERS), 1));
    }
    if (!rc && ai->hybrid) { /* the keys llama.cpp's qwen35 / qwen35moe / qwen3next loaders read */
        rc = gguf_writer_kv_u32(w, K(SSM_CONV_KERNEL), (uint32_t)p->ssm_d_conv) ||
             gguf_writer_kv_u32(w, K(SSM_STATE_SIZE), (uint32_t)p->ssm_d_state) ||
             gguf_writer_kv_u32(w, K(SSM_GROUP_COUNT), (uint32_t)p->ssm_n_group) ||
             gguf_writer_kv_u32(w, K(SSM_TIME_STEP_RANK), (uint32_t)p->ssm_dt_rank) ||
             gguf_writer_kv_u32(w, K(SSM_INNER_SIZE), (uint32_t)(p->ssm_dt_rank * p->ssm_d_state)) ||
             gguf_writer_kv_u32(w, K(FULL_ATTENTION_INTERVAL), (uint32_t)p->full_attn_interval);
        if (!rc && p->mtp) rc = gguf_writer_kv_u32(w, K(NEXTN_PREDICT_LAYERS), 1);
        if (!rc && ai->rope == E0_ROPE_IMROPE) {
            int32_t sec[4];
            synth_rope_sections(p->n_rot ? p->n_rot : p->head_dim, sec);
            rc = gguf_writer_kv_arr(w, K(ROPE_DIMENSION_SECTIONS), GGUF_I32, sec, 4);
        }
    }
#undef K
    if (rc) return e0_fail(e, "%s", gguf_writer_error(w));
    return 0;
}

/* ---- the generation pipeline ----
 * Jobs are row ranges of tensors, in file order. Worker threads take the next job, wait until
 * its slot (job % n_slots) has been written, fill it, and mark it ready; the calling thread
 * writes slots in job order. */
#define CHUNK_ELEMS ((uint64_t)1 << 20) /* floats generated per job (rows permitting) */

typedef struct job {
    uint32_t tensor;
    uint64_t row0, nrows;
} job;

typedef struct pipeline {
    const synth_tensor *t;
    const job *jobs;
    uint64_t n_jobs;
    int n_slots;
    uint8_t **slot_buf;
    uint64_t *slot_len;
    int64_t *slot_ready; /* job id whose bytes the slot holds, -1 = none */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t next_job, written;
    int abort;
    uint64_t max_chunk_elems;
} pipeline;

static void fill_job(const pipeline *pl, const job *j, float *scratch, uint8_t *out, uint64_t *len) {
    const synth_tensor *t = &pl->t[j->tensor];
    uint64_t ne0 = t->ne[0], n = j->nrows * ne0;
    size_t row_bytes = e0_row_size(t->type, (int64_t)ne0);
    *len = row_bytes * j->nrows;
    if (t->direct) { /* rows are whole blocks: block indices run on across rows */
        float mean, std = init_std(t, &mean);
        uint64_t bs = (uint64_t)e0_type_traits_of(t->type)->block_size;
        synth_fill_blocks(t->type, t->key, j->row0 * ne0 / bs, n / bs, std, out);
        return;
    }
    gen_values(t, j->row0 * ne0, n, scratch);
    if (t->type == E0_TYPE_F32) memcpy(out, scratch, n * sizeof(float));
    else {
        const e0_type_traits *tr = e0_type_traits_of(t->type);
        for (uint64_t r = 0; r < j->nrows; r++) tr->from_float_ref(scratch + r * ne0, out + r * row_bytes, (int64_t)ne0);
    }
}

static void *worker(void *arg) {
    pipeline *pl = arg;
    float *scratch = malloc(pl->max_chunk_elems * sizeof(float));
    pthread_mutex_lock(&pl->mu);
    if (!scratch) pl->abort = 1;
    while (!pl->abort && pl->next_job < pl->n_jobs) {
        uint64_t j = pl->next_job++;
        int s = (int)(j % (uint64_t)pl->n_slots);
        while (!pl->abort && j >= pl->written + (uint64_t)pl->n_slots) pthread_cond_wait(&pl->cv, &pl->mu);
        if (pl->abort) break;
        pthread_mutex_unlock(&pl->mu);
        uint64_t len;
        fill_job(pl, &pl->jobs[j], scratch, pl->slot_buf[s], &len);
        pthread_mutex_lock(&pl->mu);
        pl->slot_len[s] = len;
        pl->slot_ready[s] = (int64_t)j;
        pthread_cond_broadcast(&pl->cv);
    }
    pthread_cond_broadcast(&pl->cv);
    pthread_mutex_unlock(&pl->mu);
    free(scratch);
    return NULL;
}

static void progress(uint64_t done, uint64_t total, double t0, int final) {
    double dt = e0_now() - t0;
    fprintf(stderr, "\rsynth: %5.1f%%  %llu / %llu MiB  %.0f MiB/s%s", total ? 100.0 * (double)done / (double)total : 100.0,
            (unsigned long long)(done >> 20), (unsigned long long)(total >> 20),
            dt > 0 ? (double)done / 1048576.0 / dt : 0.0, final ? "\n" : (isatty(2) ? "" : "\n"));
    fflush(stderr);
}

/* Write every job's bytes in order; the workers produce them. */
static int run_pipeline(pipeline *pl, gguf_writer *w, int n_threads, int show, uint64_t total, e0_err *e) {
    pthread_t th[256];
    int started = 0, rc = 0;
    for (; started < n_threads; started++)
        if (pthread_create(&th[started], NULL, worker, pl) != 0) break;
    if (started == 0) return e0_fail(e, "cannot start a worker thread");
    double t0 = e0_now(), last = t0;
    uint64_t done = 0;
    for (uint64_t j = 0; j < pl->n_jobs && !rc; j++) {
        int s = (int)(j % (uint64_t)pl->n_slots);
        pthread_mutex_lock(&pl->mu);
        while (!pl->abort && pl->slot_ready[s] != (int64_t)j) pthread_cond_wait(&pl->cv, &pl->mu);
        int aborted = pl->abort;
        pthread_mutex_unlock(&pl->mu);
        if (aborted) {
            rc = e0_fail(e, "out of memory in a worker thread");
            break;
        }
        if (gguf_writer_data(w, pl->slot_buf[s], pl->slot_len[s]) != 0) {
            rc = e0_fail(e, "%s", gguf_writer_error(w));
            break;
        }
        done += pl->slot_len[s];
        pthread_mutex_lock(&pl->mu);
        pl->written = j + 1;
        pthread_cond_broadcast(&pl->cv);
        pthread_mutex_unlock(&pl->mu);
        if (show && e0_now() - last >= (isatty(2) ? 0.5 : 5.0)) {
            last = e0_now();
            progress(done, total, t0, 0);
        }
    }
    pthread_mutex_lock(&pl->mu);
    if (rc) pl->abort = 1;
    pthread_cond_broadcast(&pl->cv);
    pthread_mutex_unlock(&pl->mu);
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    if (!rc && show) progress(done, total, t0, 1);
    return rc;
}

static int write_data(const tensor_list *l, gguf_writer *w, const synth_params *p, e0_err *e) {
    /* cut every tensor into row ranges of about CHUNK_ELEMS elements */
    uint64_t n_jobs = 0, total = 0, max_elems = 0;
    for (size_t i = 0; i < l->n; i++) {
        uint64_t ne0 = l->t[i].ne[0], rows = l->t[i].ne[1] * l->t[i].ne[2];
        uint64_t per = ne0 >= CHUNK_ELEMS ? 1 : CHUNK_ELEMS / ne0;
        n_jobs += (rows + per - 1) / per;
        total += l->t[i].nbytes;
        if (per * ne0 > max_elems) max_elems = per * ne0;
    }
    job *jobs = malloc(n_jobs * sizeof *jobs);
    if (!jobs) return e0_fail(e, "out of memory");
    uint64_t k = 0;
    for (size_t i = 0; i < l->n; i++) {
        uint64_t ne0 = l->t[i].ne[0], rows = l->t[i].ne[1] * l->t[i].ne[2];
        uint64_t per = ne0 >= CHUNK_ELEMS ? 1 : CHUNK_ELEMS / ne0;
        for (uint64_t r = 0; r < rows; r += per)
            jobs[k++] = (job){(uint32_t)i, r, rows - r < per ? rows - r : per};
    }
    pipeline pl = {.t = l->t, .jobs = jobs, .n_jobs = n_jobs, .n_slots = 2 * p->n_threads + 2, .max_chunk_elems = max_elems};
    pthread_mutex_init(&pl.mu, NULL);
    pthread_cond_init(&pl.cv, NULL);
    int rc = 0;
    pl.slot_buf = calloc((size_t)pl.n_slots, sizeof *pl.slot_buf);
    pl.slot_len = calloc((size_t)pl.n_slots, sizeof *pl.slot_len);
    pl.slot_ready = calloc((size_t)pl.n_slots, sizeof *pl.slot_ready);
    if (!pl.slot_buf || !pl.slot_len || !pl.slot_ready) rc = e0_fail(e, "out of memory");
    for (int s = 0; !rc && s < pl.n_slots; s++) {
        pl.slot_ready[s] = -1;
        pl.slot_buf[s] = malloc(max_elems * sizeof(float)); /* F32 is the widest encoding */
        if (!pl.slot_buf[s]) rc = e0_fail(e, "out of memory");
    }
    if (!rc) rc = run_pipeline(&pl, w, p->n_threads, p->progress, total, e);
    for (int s = 0; pl.slot_buf && s < pl.n_slots; s++) free(pl.slot_buf[s]);
    free(pl.slot_buf);
    free(pl.slot_len);
    free(pl.slot_ready);
    pthread_cond_destroy(&pl.cv);
    pthread_mutex_destroy(&pl.mu);
    free(jobs);
    return rc;
}

int synth_write(const synth_params *p, const char *path, synth_stats *st, e0_err *e) {
    if (synth_validate(p, e)) return -1;
    double t0 = e0_now();
    tensor_list l = {0};
    if (build_tensors(p, &l, e) || apply_plan(p, &l, e)) {
        free(l.t);
        return -1;
    }
    for (size_t i = 0; i < l.n; i++) { /* every type used needs a quantizer */
        const e0_type_traits *tr = e0_type_traits_of(l.t[i].type);
        char buf[32];
        if (!tr || !tr->weight_ok) {
            e0_fail(e, "type %s not supported yet (tensor %s)", synth_ggml_type_name(l.t[i].type), l.t[i].name);
            free(l.t);
            return -1;
        }
        if (l.t[i].type != E0_TYPE_F32 && (!tr || !tr->from_float_ref)) {
            e0_fail(e, "no quantizer for type %s (tensor %s)", e0_type_name(l.t[i].type, buf), l.t[i].name);
            free(l.t);
            return -1;
        }
    }
    gguf_writer *w = gguf_writer_open(path, e);
    if (!w) {
        free(l.t);
        return -1;
    }
    synth_vocab *v = NULL;
    int rc = write_metadata(w, p, e) || synth_vocab_write(w, p, &v, e);
    for (size_t i = 0; !rc && i < l.n; i++)
        if (gguf_writer_tensor(w, l.t[i].name, l.t[i].n_dims, l.t[i].ne, l.t[i].type) != 0)
            rc = e0_fail(e, "%s", gguf_writer_error(w));
    if (!rc) rc = write_data(&l, w, p, e);
    e0_err close_err;
    if (gguf_writer_close(w, &close_err) != 0 && !rc) {
        *e = close_err;
        rc = -1;
    }
    synth_vocab_free(v);
    if (!rc && st) { /* on failure the writer removed its partial file */
        memset(st, 0, sizeof *st);
        st->n_tensors = l.n;
        for (size_t i = 0; i < l.n; i++) {
            st->n_params += l.t[i].ne[0] * l.t[i].ne[1] * l.t[i].ne[2];
            st->data_bytes += l.t[i].nbytes;
            if (l.t[i].n_dims > 1 && l.t[i].init != INIT_ROUTER && l.t[i].init != INIT_BIAS && l.t[i].init != INIT_CONV &&
                l.t[i].type != p->type)
                st->n_fallback++;
        }
        st->seconds = e0_now() - t0;
    }
    free(l.t);
    return rc ? -1 : 0;
}
