/* synth.c — synth parameters: type names, the named shapes, validation (against the
 * architecture's row in engine/arch.h) and llama.cpp's per-tensor type fallback. The writing
 * itself is in synth_write.c, the tokenizer in synth_vocab.c. */
#include "synth/synth.h"

#include <strings.h>
#include <stdio.h>
#include <string.h>

#include "quant/quant.h"
#include "synth/synth_impl.h"

/* The weight types synth writes (all the engine supports) are those with a synth_type row. */
int synth_type_from_name(const char *name) {
    for (uint32_t id = 0; id < E0_TYPE_COUNT; id++) {
        const e0_type_traits *t = e0_type_traits_of(id);
        if (t && synth_type_of(id) && !strcasecmp(name, t->name)) return (int)id;
    }
    return -1;
}

uint32_t synth_fallback_type(uint32_t want, int64_t row_len) {
    const e0_type_traits *t = e0_type_traits_of(want);
    if (t && row_len % t->block_size == 0) return want;
    const synth_type *st = synth_type_of(want);
    uint32_t alt = st ? st->fallback : E0_TYPE_F16;
    const e0_type_traits *at = e0_type_traits_of(alt);
    if (at && row_len % at->block_size == 0) return alt;
    return E0_TYPE_F16;
}

uint32_t synth_file_type(uint32_t type) {
    const synth_type *st = synth_type_of(type);
    return st ? st->file_type : 0;
}

void synth_hparams(const synth_params *p, e0_hparams *hp) {
    memset(hp, 0, sizeof *hp);
    const e0_arch_info *a = e0_arch_get(p->arch);
    if (a) e0_arch_set_flags(hp, a);
    hp->n_vocab = p->n_vocab;
    hp->n_embd = p->n_embd;
    hp->n_layer = p->n_layer;
    hp->n_head = p->n_head;
    hp->n_head_kv = p->n_head_kv;
    hp->head_dim = p->head_dim;
    hp->n_rot = p->n_rot ? p->n_rot : p->head_dim;
    hp->n_ff = p->n_ff;
    hp->n_ctx_train = p->n_ctx;
    hp->n_expert = p->n_expert;
    hp->n_expert_used = p->n_expert_used;
    hp->n_ff_exp = a && a->expert_ff_key ? p->n_ff_exp : p->n_ff; /* Mixtral: experts are n_ff wide */
    hp->n_ff_shexp = p->n_ff_shexp;
    if (a && a->shared_expert_opt) hp->shared_expert = p->n_expert > 0 && p->n_ff_shexp > 0; /* granitemoe */
    hp->rms_eps = (float)p->rms_eps;
    hp->rope_base = (float)p->rope_base;
    hp->n_swa = p->n_swa;
    if (p->swa_period) hp->swa_period = p->swa_period;
    if (a && a->mla) { /* deepseek2: MLA widths and routing as arch.c's read_mla_hparams sets them */
        hp->n_rot = p->n_rot;
        hp->head_dim_k_mla = p->head_dim;
        hp->head_dim_v_mla = p->head_dim_v;
        hp->kv_lora_rank = p->kv_lora_rank;
        hp->q_lora_rank = p->q_lora_rank;
        hp->head_dim = p->kv_lora_rank + p->n_rot;
        hp->n_head_kv = 1;
        hp->n_layer_dense_lead = p->n_layer_dense_lead;
        hp->n_expert_shared = p->n_expert_shared;
        hp->shared_expert = p->n_expert_shared > 0;
        hp->n_ff_shexp = p->n_expert_shared * p->n_ff_exp;
        hp->n_expert_groups = p->n_expert_groups;
        hp->n_group_used = p->n_group_used;
    }
    if (a && a->ds_routing) { /* glm4moe: deepseek2's routing keys, as arch.c's read_ds_routing sets them */
        hp->n_layer_dense_lead = p->n_layer_dense_lead;
        hp->n_expert_shared = p->n_expert_shared;
        hp->shared_expert = p->n_expert_shared > 0;
        hp->n_ff_shexp = p->n_expert_shared * p->n_ff_exp;
        hp->n_expert_groups = p->n_expert_groups;
        hp->n_group_used = p->n_group_used;
    }
    if (a && a->hybrid) { /* the DeltaNet sizes and which layers are recurrent, as arch.c reads them */
        hp->ssm_d_conv = p->ssm_d_conv;
        hp->ssm_d_state = p->ssm_d_state;
        hp->ssm_n_group = p->ssm_n_group;
        hp->ssm_dt_rank = p->ssm_dt_rank;
        hp->ssm_d_inner = p->ssm_dt_rank * p->ssm_d_state;
        hp->n_layer_kv = 0;
        for (int64_t i = 0; i < p->n_layer && i < E0_MAX_LAYERS; i++) {
            if (p->full_attn_interval > 0 && (i + 1) % p->full_attn_interval != 0) hp->recr_bits[i / 64] |= (uint64_t)1 << (i % 64);
            else hp->n_layer_kv++;
        }
        synth_rope_sections(hp->n_rot, hp->rope_sections);
    }
}

void synth_rope_sections(int64_t n_rot, int32_t sec[4]) {
    /* Qwen3.5's [11, 11, 10, 0] for 32 rotated pairs, scaled to n_rot / 2 pairs */
    const int64_t pairs = n_rot / 2;
    sec[0] = sec[1] = (int32_t)(pairs * 11 / 32);
    sec[2] = (int32_t)(pairs - 2 * sec[0]);
    sec[3] = 0;
}

/* deepseek2's MLA and routing defaults per shape (the named shapes' other dimensions are above). */
typedef struct mla_shape {
    const char *name;
    int64_t head_dim, n_rot, head_dim_v, kv_lora_rank, q_lora_rank, n_layer_dense_lead, n_expert_shared;
    int64_t n_expert, n_expert_used, n_ff_exp, n_ff;
    double expert_weights_scale, yarn_factor, yarn_log_mul;
    int64_t n_ctx_orig;
} mla_shape;

static const mla_shape mla_shapes[] = {
    /* tiny: layer 0 dense, 1 shared expert, no q LoRA, no YaRN */
    {"tiny", 96, 32, 64, 128, 0, 1, 1, 8, 2, 256, 512, 0, 0, 0, 0},
    /* DeepSeek-V2-Lite (config.json): 27 layers, 64 experts of 1408 + 2 shared, YaRN x40 */
    {"deepseek-v2-lite", 192, 64, 128, 512, 0, 1, 2, 64, 6, 1408, 10944, 1.0, 40, 0.0707, 4096},
};

/* ---- named shapes ---- */
typedef struct shape {
    const char *name;
    int64_t n_layer, n_embd, n_head, n_head_kv, head_dim, n_ff;
    int64_t n_expert, n_expert_used, n_ff_exp, n_ff_shexp, n_vocab, n_ctx;
    double rope_base, rms_eps; /* 0 = the architecture's default */
    int64_t n_swa;             /* sliding window (archs with SWA layers); 0 = 128 */
    double yarn_factor;        /* archs with rope scaling: YaRN factor, 0 = none */
    int64_t yarn_orig_ctx;
} shape;

/* The DeltaNet sizes of shapes made for hybrid architectures (others get small defaults). */
typedef struct hybrid_shape {
    const char *name;
    int64_t n_rot, ssm_d_conv, ssm_d_state, ssm_n_group, ssm_dt_rank, full_attn_interval;
} hybrid_shape;

static const shape shapes[] = {
    /* small enough for tests and demos, like the golden models */
    {"tiny", 2, 256, 4, 2, 64, 512, 8, 2, 256, 512, 512, 2048, 0, 0, 0, 0, 0},
    {"qwen3-30b-a3b", 48, 2048, 32, 4, 128, 6144, 128, 8, 768, 0, 151936, 40960, 1e6, 1e-6, 0, 0, 0},
    {"mixtral-8x7b", 32, 4096, 32, 8, 128, 14336, 8, 2, 14336, 0, 32000, 32768, 1e6, 1e-5, 0, 0, 0},
    {"qwen1.5-moe-a2.7b", 24, 2048, 16, 16, 128, 5632, 60, 4, 1408, 5632, 151936, 8192, 1e6, 1e-6, 0, 0, 0},
    /* openai/gpt-oss-20b's config (sliding window 128 on every other layer, YaRN x32 from 4096) */
    {"gpt-oss-20b", 24, 2880, 64, 8, 64, 2880, 32, 4, 2880, 0, 201088, 131072, 150000, 1e-5, 128, 32, 4096},
    {"deepseek-v2-lite", 27, 2048, 16, 16, 192, 10944, 64, 6, 1408, 0, 102400, 163840, 1e4, 1e-6, 0, 0, 0},
    /* Qwen3.5-35B-A3B (Qwen/Qwen3.5-35B-A3B config.json): 40 layers of hidden size 2048, every 4th
     * full attention (16 q heads, 2 KV heads of 256, partial RoPE over 64 dims, base 1e7), the others
     * Gated DeltaNet (16 key heads, 32 value heads, head size 128, conv kernel 4); 256 experts of
     * 512, 8 per token, a shared expert of 512; vocabulary 248320; context 262144 */
    {"qwen3.5-35b-a3b", 40, 2048, 16, 2, 256, 512, 256, 8, 512, 512, 248320, 262144, 1e7, 1e-6, 0, 0, 0},
    /* allenai/OLMoE-1B-7B-0924 (config.json): 16 layers of 2048, 16 heads of 128 (no GQA), 64 experts
     * of 1024, 8 per token; vocabulary 50304, context 4096 */
    {"olmoe-1b-7b", 16, 2048, 16, 16, 128, 1024, 64, 8, 1024, 0, 50304, 4096, 1e4, 1e-5, 0, 0, 0},
    /* ibm-granite/granite-3.0-3b-a800m-instruct (config.json): 32 layers of 1536, 24 heads of 64 (8 KV
     * heads), 40 experts of 512, 8 per token, no shared expert; vocabulary 49155, context 4096 */
    {"granite-3.0-3b-a800m", 32, 1536, 24, 8, 64, 512, 40, 8, 512, 0, 49155, 4096, 1e4, 1e-6, 0, 0, 0},
    /* zai-org/GLM-4.5-Air (config.json): 46 layers of 4096 (+ 1 MTP block, with --mtp), 96 heads of 128
     * (8 KV heads), RoPE over half of each head, base 1e6; layer 0 dense (10944), then 128 experts of
     * 1408, 8 per token + 1 shared, sigmoid scores, normalized, x 1.0; no q/k norm; vocabulary 151552 */
    {"glm-4.5-air", 46, 4096, 96, 8, 128, 10944, 128, 8, 1408, 0, 151552, 131072, 1e6, 1e-5, 0, 0, 0},
    /* MiniMaxAI/MiniMax-M2 (config.json): 62 layers of 3072, 48 heads of 128 (8 KV heads), RoPE over 64
     * dims, base 5e6; 256 experts of 1536, 8 per token, sigmoid scores; vocabulary 200064 */
    {"minimax-m2", 62, 3072, 48, 8, 128, 1536, 256, 8, 1536, 0, 200064, 196608, 5e6, 1e-6, 0, 0, 0},
};
static const hybrid_shape hybrid_shapes[] = {
    {"qwen3.5-35b-a3b", 64, 4, 128, 16, 32, 4},
};

const char *synth_shape_names(void) {
    return "tiny, qwen3-30b-a3b, mixtral-8x7b, qwen1.5-moe-a2.7b, gpt-oss-20b, deepseek-v2-lite, qwen3.5-35b-a3b, "
           "olmoe-1b-7b, granite-3.0-3b-a800m, glm-4.5-air, minimax-m2";
}

int synth_shape_apply(synth_params *p, const char *name, e0_err *e) {
    const shape *s = NULL;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        if (!strcmp(name, shapes[i].name)) s = &shapes[i];
    if (!s) return e0_fail(e, "unknown shape '%s' (known: %s)", name, synth_shape_names());
    const e0_arch_info *a = e0_arch_get(p->arch);
    if (!a) return e0_fail(e, "unknown architecture");
    p->n_layer = s->n_layer;
    p->n_embd = s->n_embd;
    p->n_head = s->n_head;
    p->n_head_kv = s->n_head_kv;
    p->head_dim = s->head_dim;
    p->n_ff = s->n_ff;
    p->n_vocab = s->n_vocab;
    p->n_ctx = s->n_ctx;
    p->n_ff_exp = 0;
    p->n_ff_shexp = 0;
    p->n_expert = 0;
    p->n_expert_used = 0;
    /* experts: always for MoE architectures; for optional-MoE ones (llama) except with tiny */
    if (a->ffn == E0_FFN_MOE || (a->ffn == E0_FFN_DENSE_OR_MOE && strcmp(s->name, "tiny") != 0)) {
        p->n_expert = s->n_expert;
        p->n_expert_used = s->n_expert_used;
        /* experts without their own width key (Mixtral) are n_ff wide: n_ff takes the shape's
         * expert width */
        if (a->expert_ff_key) p->n_ff_exp = s->n_ff_exp;
        else p->n_ff = s->n_ff_exp;
        if (a->shared_expert) p->n_ff_shexp = s->n_ff_shexp ? s->n_ff_shexp : a->shared_expert_opt ? 0 : s->n_ff;
    }
    if (a->arch == E0_ARCH_OLMOE) { /* olmoe: llama.cpp's loader sizes q and both norms n_embd, so its files have
                            * no GQA (the engine also reads a k norm of n_head_kv * head_dim, which
                            * --n-head-kv below n_head writes, but llama.cpp does not load those) */
        p->n_head_kv = p->n_head;
        p->head_dim = p->n_embd / p->n_head;
    }
    p->n_swa = a->swa_period ? (s->n_swa ? s->n_swa : 128) : 0;
    p->swa_period = 0;
    p->yarn_factor = a->rope_scaling ? s->yarn_factor : 0;
    p->yarn_orig_ctx = a->rope_scaling ? s->yarn_orig_ctx : 0;
    p->rope_base = s->rope_base ? s->rope_base : a->typical_rope_base;
    p->rms_eps = s->rms_eps ? s->rms_eps : a->typical_rms_eps;
    p->n_rot = p->ssm_d_conv = p->ssm_d_state = p->ssm_n_group = p->ssm_dt_rank = p->full_attn_interval = 0;
    if (a->hybrid) {
        /* a shape without DeltaNet sizes (tiny) gets small ones: 4 layers (3 DeltaNet, 1 attention),
         * RoPE over half of each head, 2 key heads and 4 value heads of 32, conv kernel 4 */
        const hybrid_shape *h = NULL;
        for (size_t i = 0; i < sizeof hybrid_shapes / sizeof hybrid_shapes[0]; i++)
            if (!strcmp(name, hybrid_shapes[i].name)) h = &hybrid_shapes[i];
        static const hybrid_shape small = {"", 0, 4, 32, 2, 4, 4};
        if (!h) {
            h = &small;
            if (p->n_layer < 4) p->n_layer = 4;
        }
        p->n_rot = h->n_rot ? h->n_rot : s->head_dim / 2;
        p->ssm_d_conv = h->ssm_d_conv;
        p->ssm_d_state = h->ssm_d_state;
        p->ssm_n_group = h->ssm_n_group;
        p->ssm_dt_rank = h->ssm_dt_rank;
        p->full_attn_interval = h->full_attn_interval;
    }
    if (a->gating_key) { /* minimax-m2: sigmoid scores, RoPE over half of each head */
        p->gating_sigmoid = 1;
        p->n_rot = p->head_dim / 2;
    }
    if (a->ds_routing) { /* glm4moe: GLM-4.5's routing (tiny: with 2.5 x, as GLM-4.5 355B; Air: 1.0) */
        const int air = !strcmp(name, "glm-4.5-air");
        p->n_rot = p->head_dim / 2;
        p->n_layer_dense_lead = 1;
        p->n_expert_shared = 1;
        p->gating_sigmoid = 1;
        p->expert_weights_norm = 1;
        p->expert_weights_scale = air ? 1.0 : 2.5;
        p->omit_qk_norm = air;
        p->n_ff_shexp = 0;
    }
    if (a->mla) {
        const mla_shape *ms = NULL;
        for (size_t i = 0; i < sizeof mla_shapes / sizeof mla_shapes[0]; i++)
            if (!strcmp(name, mla_shapes[i].name)) ms = &mla_shapes[i];
        if (!ms) return e0_fail(e, "shape '%s' has no deepseek2 variant (tiny, deepseek-v2-lite)", name);
        p->head_dim = ms->head_dim;
        p->n_head_kv = 1;
        p->n_rot = ms->n_rot;
        p->head_dim_v = ms->head_dim_v;
        p->kv_lora_rank = ms->kv_lora_rank;
        p->q_lora_rank = ms->q_lora_rank;
        p->n_layer_dense_lead = ms->n_layer_dense_lead;
        p->n_expert_shared = ms->n_expert_shared;
        p->n_expert = ms->n_expert;
        p->n_expert_used = ms->n_expert_used;
        p->n_ff_exp = ms->n_ff_exp;
        p->n_ff = ms->n_ff;
        p->n_ff_shexp = 0;
        p->expert_weights_scale = ms->expert_weights_scale;
        p->yarn_factor = ms->yarn_factor;
        p->yarn_log_mul = ms->yarn_log_mul;
        p->yarn_orig_ctx = ms->n_ctx_orig;
    }
    return 0;
}

static int in_range(int64_t v, int64_t lo, int64_t hi, const char *what, e0_err *e);

/* deepseek2's own fields (the widths llama.cpp's loader and our MLA path need). */
static int validate_mla(const synth_params *p, e0_err *e) {
    if (in_range(p->kv_lora_rank, 1, 65536, "--kv-lora-rank", e) || in_range(p->n_rot, 2, 1024, "--n-rot", e) ||
        in_range(p->q_lora_rank, 0, 65536, "--q-lora-rank", e) || in_range(p->head_dim_v, 1, 1024, "--head-dim-v", e) ||
        in_range(p->n_layer_dense_lead, 0, p->n_layer, "--n-dense-lead", e) ||
        in_range(p->n_expert_shared, 1, 64, "--n-expert-shared", e) ||
        in_range(p->n_expert_groups, 0, p->n_expert, "--n-expert-groups", e))
        return -1;
    if (p->n_rot % 2) return e0_fail(e, "--n-rot (%lld) must be even", (long long)p->n_rot);
    if (p->head_dim <= p->n_rot || p->head_dim - p->n_rot > p->kv_lora_rank)
        return e0_fail(e, "--head-dim (nope + rope = %lld) must exceed --n-rot %lld by at most --kv-lora-rank %lld",
                       (long long)p->head_dim, (long long)p->n_rot, (long long)p->kv_lora_rank);
    if (p->head_dim_v > p->kv_lora_rank + p->n_rot)
        return e0_fail(e, "--head-dim-v %lld is above kv_lora_rank + n_rot", (long long)p->head_dim_v);
    if (p->n_expert_groups > 1) {
        if (p->n_expert % p->n_expert_groups || p->n_expert_groups >= p->n_expert)
            return e0_fail(e, "--n-expert-groups %lld must divide --n-expert %lld", (long long)p->n_expert_groups,
                           (long long)p->n_expert);
        if (in_range(p->n_group_used, 1, p->n_expert_groups - 1, "--n-group-used", e)) return -1;
        if (p->n_group_used * (p->n_expert / p->n_expert_groups) < p->n_expert_used)
            return e0_fail(e, "--n-group-used groups cannot hold --n-expert-used experts");
    }
    if (!(p->expert_weights_scale >= 0 && p->expert_weights_scale < 1e6) || !(p->yarn_factor >= 0 && p->yarn_factor < 1e6) ||
        !(p->yarn_log_mul >= 0 && p->yarn_log_mul < 100) || p->yarn_orig_ctx < 0)
        return e0_fail(e, "--expert-weights-scale / --yarn-factor / --yarn-log-mul / --n-ctx-orig out of range");
    return 0;
}

/* glm4moe: its routing fields (deepseek2's keys; llama.cpp's graph needs the shared expert) and
 * partial RoPE. */
static int validate_ds_routing(const synth_params *p, e0_err *e) {
    if (in_range(p->n_layer_dense_lead, 0, p->n_layer, "--n-dense-lead", e) ||
        in_range(p->n_expert_shared, 1, 64, "--n-expert-shared", e) ||
        in_range(p->n_expert_groups, 0, p->n_expert, "--n-expert-groups", e) ||
        in_range(p->n_rot ? p->n_rot : p->head_dim, 2, p->head_dim, "--n-rot", e))
        return -1;
    if (p->n_rot % 2) return e0_fail(e, "--n-rot (%lld) must be even", (long long)p->n_rot);
    if (p->n_expert_groups > 1) {
        if (p->n_expert % p->n_expert_groups || p->n_expert_groups >= p->n_expert)
            return e0_fail(e, "--n-expert-groups %lld must divide --n-expert %lld", (long long)p->n_expert_groups,
                           (long long)p->n_expert);
        if (in_range(p->n_group_used, 1, p->n_expert_groups - 1, "--n-group-used", e)) return -1;
        if (p->n_group_used * (p->n_expert / p->n_expert_groups) < p->n_expert_used)
            return e0_fail(e, "--n-group-used groups cannot hold --n-expert-used experts");
    }
    if (!(p->expert_weights_scale >= 0 && p->expert_weights_scale < 1e6))
        return e0_fail(e, "--expert-weights-scale out of range");
    return 0;
}

/* ---- validation ---- */
static int in_range(int64_t v, int64_t lo, int64_t hi, const char *what, e0_err *e) {
    if (v < lo || v > hi)
        return e0_fail(e, "%s = %lld is out of range [%lld, %lld]", what, (long long)v, (long long)lo, (long long)hi);
    return 0;
}

int synth_validate(const synth_params *p, e0_err *e) {
    const e0_arch_info *a = e0_arch_get(p->arch);
    if (!a) return e0_fail(e, "unknown architecture");
    const e0_type_traits *t = e0_type_traits_of(p->type);
    if (!t || !t->weight_ok) return e0_fail(e, "type %u cannot be written", p->type);
    if (in_range(p->n_layer, 1, 512, "--n-layer", e) || in_range(p->n_embd, 1, 65536, "--n-embd", e) ||
        in_range(p->n_head, 1, 1024, "--n-head", e) || in_range(p->n_head_kv, 1, 1024, "--n-head-kv", e) ||
        in_range(p->head_dim, 2, 1024, "--head-dim", e) || in_range(p->n_ff, 1, 1 << 20, "--n-ff", e) ||
        in_range(p->n_vocab, 260, 1 << 22, "--n-vocab", e) || in_range(p->n_ctx, 1, 1 << 24, "--n-ctx", e) ||
        in_range(p->n_threads, 1, 256, "--threads", e))
        return -1;
    if (p->n_head % p->n_head_kv)
        return e0_fail(e, "--n-head (%lld) must be a multiple of --n-head-kv (%lld)", (long long)p->n_head,
                       (long long)p->n_head_kv);
    if (p->head_dim % 2) return e0_fail(e, "--head-dim (%lld) must be even (RoPE rotates pairs)", (long long)p->head_dim);
    if (!(p->rope_base > 0 && p->rope_base <= 1e12)) return e0_fail(e, "--rope-base %g is out of range (0, 1e12]", p->rope_base);
    if (!(p->rms_eps > 0 && p->rms_eps <= 1)) return e0_fail(e, "--rms-eps %g is out of range (0, 1]", p->rms_eps);
    if (a->ffn == E0_FFN_DENSE) {
        if (p->n_expert || p->n_expert_used || p->n_ff_exp || p->n_ff_shexp)
            return e0_fail(e, "%s is a dense architecture: --n-expert, --n-expert-used, --n-ff-exp and "
                              "--n-ff-shexp do not apply (use %smoe)",
                           a->name, a->name);
    } else {
        if (in_range(p->n_expert, a->ffn == E0_FFN_MOE ? 1 : 0, 512, "--n-expert", e)) return -1;
        if (p->n_expert == 0 && p->n_expert_used)
            return e0_fail(e, "--n-expert-used (%lld) needs --n-expert > 0", (long long)p->n_expert_used);
        if (p->n_expert && in_range(p->n_expert_used, 1, p->n_expert, "--n-expert-used", e)) return -1;
        if (!a->expert_ff_key && p->n_ff_exp)
            return e0_fail(e, "--n-ff-exp: %s experts are --n-ff wide", a->name);
        if (a->expert_ff_key && p->n_expert && in_range(p->n_ff_exp, 1, 1 << 20, "--n-ff-exp", e)) return -1;
        if (!a->shared_expert && p->n_ff_shexp) return e0_fail(e, "--n-ff-shexp: %s has no shared expert", a->name);
        if (a->shared_expert && p->n_expert && in_range(p->n_ff_shexp, a->shared_expert_opt ? 0 : 1, 1 << 20, "--n-ff-shexp", e))
            return -1;
    }
    if (a->swa_period ? in_range(p->n_swa, 1, INT32_MAX, "--n-swa", e) || in_range(p->swa_period, 0, 512, "--swa-period", e)
                      : (p->n_swa || p->swa_period || p->swa_pattern_array) &&
                            e0_fail(e, "--n-swa, --swa-period, --swa-pattern-array: %s has no sliding-window layers", a->name))
        return -1;
    if (!a->rope_scaling && !a->mla && (p->yarn_factor || p->yarn_orig_ctx))
        return e0_fail(e, "--yarn-factor, --yarn-orig-ctx: %s models have no rope scaling keys", a->name);
    if (a->rope_scaling && !(p->yarn_factor == 0 || (p->yarn_factor >= 1 && p->yarn_factor <= 1024)))
        return e0_fail(e, "--yarn-factor %g is out of range: 0 (none) or [1, 1024]", p->yarn_factor);
    if (in_range(p->yarn_orig_ctx, 0, INT32_MAX, "--yarn-orig-ctx", e)) return -1;
    if (a->mla && validate_mla(p, e)) return -1;
    if (a->ds_routing && validate_ds_routing(p, e)) return -1;
    if (a->partial_rope && (in_range(p->n_rot ? p->n_rot : p->head_dim, 2, p->head_dim, "--n-rot", e) ||
                            (p->n_rot % 2 && e0_fail(e, "--n-rot (%lld) must be even", (long long)p->n_rot))))
        return -1;
    if (p->omit_qk_norm && !a->qk_norm_opt) return e0_fail(e, "--omit-qk-norm: %s has no optional q/k norms", a->name);
    if (p->tied_output && !a->tied_output) return e0_fail(e, "--tied: %s models have an output.weight", a->name);
    if (a->hybrid) {
        if (in_range(p->ssm_d_conv, 2, 64, "--ssm-conv", e) || in_range(p->ssm_d_state, 1, 1024, "--ssm-state", e) ||
            in_range(p->ssm_n_group, 1, 1024, "--ssm-groups", e) || in_range(p->ssm_dt_rank, 1, 1024, "--ssm-heads", e) ||
            in_range(p->full_attn_interval, 1, 512, "--full-attn-interval", e) ||
            in_range(p->n_rot ? p->n_rot : p->head_dim, 4, p->head_dim, "--n-rot", e))
            return -1;
        if (p->ssm_dt_rank % p->ssm_n_group)
            return e0_fail(e, "--ssm-heads (%lld) must be a multiple of --ssm-groups (%lld)", (long long)p->ssm_dt_rank,
                           (long long)p->ssm_n_group);
        if (p->n_rot % 2) return e0_fail(e, "--n-rot (%lld) must be even", (long long)p->n_rot);
        if (p->mtp && p->n_layer >= 512) return e0_fail(e, "--mtp: at most 511 layers");
    } else if (p->mtp && !a->nextn) {
        return e0_fail(e, "--mtp: only the hybrid architectures and glm4moe have MTP blocks here");
    } else if (p->n_rot || p->ssm_d_conv || p->ssm_d_state || p->ssm_n_group || p->ssm_dt_rank || p->full_attn_interval) {
        if (p->n_rot && p->n_rot != p->head_dim && !a->mla && !a->partial_rope) /* deepseek2: its rope dims (validate_mla) */
            return e0_fail(e, "--n-rot: %s rotates whole heads (only the hybrid architectures have partial RoPE here)", a->name);
        if (p->ssm_d_conv || p->ssm_d_state || p->ssm_n_group || p->ssm_dt_rank || p->full_attn_interval)
            return e0_fail(e, "--ssm-* / --full-attn-interval: %s has no DeltaNet layers", a->name);
    }
    /* the largest tensor must have an element count a 64-bit size can hold with room to spare */
    uint64_t big;
    int64_t ff = p->n_ff_exp > p->n_ff ? p->n_ff_exp : p->n_ff;
    if (e0_mul_overflow((uint64_t)p->n_embd, (uint64_t)ff, &big) ||
        e0_mul_overflow(big, (uint64_t)(p->n_expert ? p->n_expert : 1), &big) || big > ((uint64_t)1 << 40))
        return e0_fail(e, "expert tensor too large (n_embd x n_ff x n_expert > 2^40 elements)");
    if ((uint64_t)p->n_embd * (uint64_t)p->n_vocab > ((uint64_t)1 << 40))
        return e0_fail(e, "embedding too large (n_embd x n_vocab > 2^40 elements)");
    if ((uint64_t)p->n_head * (uint64_t)p->head_dim > 1 << 20)
        return e0_fail(e, "n_head x head_dim = %lld is too large", (long long)(p->n_head * p->head_dim));
    if (p->name && strlen(p->name) > 256) return e0_fail(e, "--name is longer than 256 bytes");
    return 0;
}
