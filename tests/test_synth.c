/* test_synth.c — `synth`: small models of every architecture at several types open with
 * gguf_open and hold exactly the expected tensors (names, shapes, types, computed here from the
 * dimensions, independently of synth_write.c) and metadata; weights have the intended scale
 * (every weight tensor, dequantized); directly drawn blocks of every quantized type have mean ~0
 * and the requested std, do not depend on how they are cut into calls, and differ from the
 * --quantize path; the tokenizer is consistent; same seed -> same bytes (whatever the thread
 * count), another seed -> other bytes; models made by the CLI run and give finite logits with a
 * sane spread; bad flags -> exit 1 with one clear line and no file. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "quant/quant.h"
#include "engine/model.h"
#include "synth/synth.h"
#include "synth/synth_impl.h"
#include "t.h"

static char tmpdir[64];
static uint8_t *slurp(const char *path, size_t *n);

static const char *tmp_path(const char *name) {
    static char buf[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

/* The architectures whose models always have routed experts (written here, not taken from the
 * table, so that the expectations stay independent of it). */
static int is_moe_arch(enum e0_arch a) {
    return a == E0_ARCH_QWEN2MOE || a == E0_ARCH_QWEN3MOE || a == E0_ARCH_GPTOSS || a == E0_ARCH_QWEN35MOE ||
           a == E0_ARCH_QWEN3NEXT || a == E0_ARCH_OLMOE || a == E0_ARCH_GRANITEMOE || a == E0_ARCH_GLM4MOE ||
           a == E0_ARCH_MINIMAX_M2;
}
/* architectures with a sigmoid-gated shared expert */
static int has_shexp(enum e0_arch a) { return a == E0_ARCH_QWEN2MOE || a == E0_ARCH_QWEN35MOE || a == E0_ARCH_QWEN3NEXT; }

/* A small model: 2 layers, the given embedding width, 4 heads of 32, 2 KV heads. */
static synth_params small(enum e0_arch arch, uint32_t type, int64_t n_embd) {
    synth_params p = {0};
    e0_err e;
    p.arch = arch;
    synth_shape_apply(&p, "tiny", &e);
    p.type = type;
    p.n_layer = 2;
    p.n_embd = n_embd;
    p.n_head = 4;
    p.n_head_kv = 2;
    p.head_dim = 32;
    p.n_ff = 2 * n_embd;
    p.n_vocab = 300;
    p.n_ctx = 512;
    if (arch == E0_ARCH_LLAMA) p.n_expert = 0, p.n_expert_used = 0;
    if (is_moe_arch(arch)) p.n_expert = 4, p.n_expert_used = 2, p.n_ff_exp = n_embd;
    if (arch == E0_ARCH_OLMOE || arch == E0_ARCH_GRANITEMOE) p.n_ff_exp = 0; /* their experts are --n-ff wide */
    if (arch == E0_ARCH_GRANITEMOE) p.n_ff_shexp = n_embd; /* its optional, ungated shared expert */
    if (has_shexp(arch)) p.n_ff_shexp = 2 * n_embd;
    p.seed = 7;
    p.n_threads = 2;
    return p;
}

/* ---- the expected tensor list, written from llama.cpp's tensor tables ---- */
typedef struct exp_tensor {
    char name[64];
    uint32_t n_dims;
    uint64_t ne[3];
    int quantized; /* 1: gets --type (or its fallback); 0: F32 */
} exp_tensor;

static int expect(const synth_params *p, exp_tensor *out) {
    int n = 0;
    uint64_t E = p->n_embd, QD = p->n_head * p->head_dim, KD = p->n_head_kv * p->head_dim;
    int moe = p->n_expert > 0, bias = p->arch == E0_ARCH_QWEN2 || p->arch == E0_ARCH_QWEN2MOE || p->arch == E0_ARCH_GPTOSS;
    int oss = p->arch == E0_ARCH_GPTOSS; /* llama.cpp's openai-moe tensors */
    int qkn = p->arch == E0_ARCH_QWEN3 || p->arch == E0_ARCH_QWEN3MOE;
    /* olmoe: q/k norms over the whole projections; experts feed_forward_length wide (like llama's) */
    const int olmoe = p->arch == E0_ARCH_OLMOE, granite = p->arch == E0_ARCH_GRANITEMOE;
    const int glm = p->arch == E0_ARCH_GLM4MOE; /* llama.cpp's glm4-moe.cpp tensors */
    const int mm2 = p->arch == E0_ARCH_MINIMAX_M2; /* minimax-m2.cpp: whole-projection q/k norms, exp_probs_b */
    if (mm2) qkn = 1;
    if (glm) qkn = bias = 1;
    if (olmoe) qkn = 1;
    uint64_t FE = p->arch == E0_ARCH_LLAMA || olmoe || granite ? (uint64_t)p->n_ff : (uint64_t)p->n_ff_exp;
#define X(q, nd, a, b, c, ...)                                          \
    do {                                                                \
        snprintf(out[n].name, 64, __VA_ARGS__);                         \
        out[n].n_dims = nd, out[n].ne[0] = a, out[n].ne[1] = b, out[n].ne[2] = c, out[n].quantized = q; \
        n++;                                                            \
    } while (0)
    X(1, 2, E, p->n_vocab, 1, "token_embd.weight");
    X(0, 1, E, 1, 1, "output_norm.weight");
    if (!p->tied_output) X(1, 2, E, p->n_vocab, 1, "output.weight");
    const int hybrid = p->arch == E0_ARCH_QWEN35 || p->arch == E0_ARCH_QWEN35MOE || p->arch == E0_ARCH_QWEN3NEXT;
    if (hybrid) qkn = 1;
    for (int i = 0; i < p->n_layer; i++) {
        X(0, 1, E, 1, 1, "blk.%d.attn_norm.weight", i);
        if (hybrid && (i + 1) % p->full_attn_interval != 0) {
            /* a Gated DeltaNet layer (llama.cpp's qwen35 / qwen3next tensors) */
            uint64_t S = (uint64_t)p->ssm_d_state, HV = (uint64_t)p->ssm_dt_rank, DI = HV * S;
            uint64_t C = 2 * (uint64_t)p->ssm_n_group * S + DI;
            X(1, 2, E, C, 1, "blk.%d.attn_qkv.weight", i);
            X(1, 2, E, DI, 1, "blk.%d.attn_gate.weight", i);
            X(0, 2, (uint64_t)p->ssm_d_conv, C, 1, "blk.%d.ssm_conv1d.weight", i);
            X(0, 1, HV, 1, 1, "blk.%d.ssm_dt.bias", i);
            X(0, 1, HV, 1, 1, "blk.%d.ssm_a", i);
            if (p->arch == E0_ARCH_QWEN3NEXT) X(1, 2, E, 2 * HV, 1, "blk.%d.ssm_ba.weight", i);
            else {
                X(1, 2, E, HV, 1, "blk.%d.ssm_beta.weight", i);
                X(1, 2, E, HV, 1, "blk.%d.ssm_alpha.weight", i);
            }
            X(0, 1, S, 1, 1, "blk.%d.ssm_norm.weight", i);
            X(1, 2, DI, E, 1, "blk.%d.ssm_out.weight", i);
        } else {
        X(1, 2, E, hybrid ? 2 * QD : QD, 1, "blk.%d.attn_q.weight", i); /* hybrid: q and its gate */
        X(1, 2, E, KD, 1, "blk.%d.attn_k.weight", i);
        X(1, 2, E, KD, 1, "blk.%d.attn_v.weight", i);
        X(1, 2, QD, E, 1, "blk.%d.attn_output.weight", i);
        if (bias) {
            X(0, 1, QD, 1, 1, "blk.%d.attn_q.bias", i);
            X(0, 1, KD, 1, 1, "blk.%d.attn_k.bias", i);
            X(0, 1, KD, 1, 1, "blk.%d.attn_v.bias", i);
        }
        if (qkn) {
            X(0, 1, olmoe || mm2 ? QD : (uint64_t)p->head_dim, 1, 1, "blk.%d.attn_q_norm.weight", i);
            X(0, 1, olmoe || mm2 ? KD : (uint64_t)p->head_dim, 1, 1, "blk.%d.attn_k_norm.weight", i);
        }
        }
        if (glm) moe = p->n_expert > 0 && i >= p->n_layer_dense_lead; /* leading dense layers */
        if (glm && moe) {
            X(0, 1, p->n_expert, 1, 1, "blk.%d.exp_probs_b.bias", i);
            X(1, 2, E, FE * p->n_expert_shared, 1, "blk.%d.ffn_gate_shexp.weight", i); /* ungated */
            X(1, 2, E, FE * p->n_expert_shared, 1, "blk.%d.ffn_up_shexp.weight", i);
            X(1, 2, FE * p->n_expert_shared, E, 1, "blk.%d.ffn_down_shexp.weight", i);
        }
        if (hybrid || oss || glm) X(0, 1, E, 1, 1, "blk.%d.post_attention_norm.weight", i);
        else X(0, 1, E, 1, 1, "blk.%d.ffn_norm.weight", i);
        if (oss) {
            X(0, 1, E, 1, 1, "blk.%d.attn_output.bias", i);
            X(0, 1, p->n_head, 1, 1, "blk.%d.attn_sinks.weight", i);
            X(0, 1, p->n_expert, 1, 1, "blk.%d.ffn_gate_inp.bias", i);
            X(0, 2, FE, p->n_expert, 1, "blk.%d.ffn_gate_exps.bias", i);
            X(0, 2, FE, p->n_expert, 1, "blk.%d.ffn_up_exps.bias", i);
            X(0, 2, E, p->n_expert, 1, "blk.%d.ffn_down_exps.bias", i);
        }
        if (granite) X(0, 1, E, 1, 1, "blk.%d.attn_output.bias", i); /* optional; synth writes it */
        if (mm2 && moe) X(0, 1, p->n_expert, 1, 1, "blk.%d.exp_probs_b.bias", i);
        if (moe) {
            X(0, 2, E, p->n_expert, 1, "blk.%d.ffn_gate_inp.weight", i);
            X(1, 3, E, FE, p->n_expert, "blk.%d.ffn_gate_exps.weight", i);
            X(1, 3, E, FE, p->n_expert, "blk.%d.ffn_up_exps.weight", i);
            X(1, 3, FE, E, p->n_expert, "blk.%d.ffn_down_exps.weight", i);
        } else {
            X(1, 2, E, p->n_ff, 1, "blk.%d.ffn_gate.weight", i);
            X(1, 2, E, p->n_ff, 1, "blk.%d.ffn_up.weight", i);
            X(1, 2, p->n_ff, E, 1, "blk.%d.ffn_down.weight", i);
        }
        if (p->arch == E0_ARCH_QWEN2MOE || (hybrid && moe)) {
            X(0, 1, E, 1, 1, "blk.%d.ffn_gate_inp_shexp.weight", i);
            X(1, 2, E, p->n_ff_shexp, 1, "blk.%d.ffn_gate_shexp.weight", i);
            X(1, 2, E, p->n_ff_shexp, 1, "blk.%d.ffn_up_shexp.weight", i);
            X(1, 2, p->n_ff_shexp, E, 1, "blk.%d.ffn_down_shexp.weight", i);
        }
        if (granite && moe && p->n_ff_shexp) { /* ungated */
            X(1, 2, E, p->n_ff_shexp, 1, "blk.%d.ffn_gate_shexp.weight", i);
            X(1, 2, E, p->n_ff_shexp, 1, "blk.%d.ffn_up_shexp.weight", i);
            X(1, 2, p->n_ff_shexp, E, 1, "blk.%d.ffn_down_shexp.weight", i);
        }
    }
#undef X
    return n;
}

static int64_t get_i(const gguf_file *f, const char *arch, const char *key) {
    char k[128];
    int64_t v = -1;
    e0_err e;
    snprintf(k, sizeof k, "%s%s%s", arch ? arch : "", arch ? "." : "", key);
    if (gguf_get_i64(f, k, &v, &e) != 1) return -12345;
    return v;
}

static float get_f(const gguf_file *f, const char *arch, const char *key) {
    char k[128];
    float v = -1;
    e0_err e;
    snprintf(k, sizeof k, "%s.%s", arch, key);
    if (gguf_get_f32(f, k, &v, &e) != 1) return NAN;
    return v;
}

/* Mean and standard deviation of a whole tensor, dequantized. */
static int tensor_stats(const gguf_file *f, const gguf_tensor *t, double *mean, double *std) {
    e0_err e;
    uint8_t *raw = malloc(t->nbytes);
    float *x = malloc(t->nelements * sizeof *x);
    int rc = -1;
    if (raw && x && gguf_read(f, t->offset, raw, t->nbytes, &e) == 0) {
        e0_type_traits_of(t->type)->to_float(raw, x, (int64_t)t->nelements);
        double s = 0, s2 = 0;
        for (uint64_t i = 0; i < t->nelements; i++) s += x[i], s2 += (double)x[i] * x[i];
        *mean = s / (double)t->nelements;
        *std = sqrt(s2 / (double)t->nelements - *mean * *mean);
        rc = 0;
    }
    free(raw);
    free(x);
    return rc;
}

/* Write p, open it, compare everything with the expectation. */
static void check_model(const synth_params *p, const char *file) {
    e0_err e = {{0}};
    synth_stats st;
    const char *path = tmp_path(file);
    char tb[32];
    int rc = synth_write(p, path, &st, &e);
    CHECKF(rc == 0, "%s %s: %s", e0_arch_get(p->arch)->name, e0_type_name(p->type, tb), e.msg);
    if (rc) return;
    gguf_file *f = gguf_open(path, &e);
    CHECKF(f, "gguf_open: %s", e.msg);
    if (!f) return;
    static exp_tensor ex[512];
    int n = expect(p, ex);
    CHECKF(f->n_tensors == (uint64_t)n && st.n_tensors == (uint64_t)n, "%llu tensors, expected %d",
           (unsigned long long)f->n_tensors, n);
    uint64_t params = 0;
    for (int i = 0; i < n; i++) {
        const gguf_tensor *t = gguf_find_tensor(f, ex[i].name);
        CHECKF(t, "missing %s", ex[i].name);
        if (!t) continue;
        CHECKF(t->n_dims == ex[i].n_dims, "%s: %u dims", t->name, t->n_dims);
        for (uint32_t d = 0; d < ex[i].n_dims; d++) CHECKF(t->ne[d] == ex[i].ne[d], "%s ne[%u]", t->name, d);
        /* the type: --type when rows are whole blocks, else some type whose blocks fit */
        const e0_type_traits *want = e0_type_traits_of(p->type), *got = e0_type_traits_of(t->type);
        if (!ex[i].quantized) CHECKF(t->type == E0_TYPE_F32, "%s is %s", t->name, e0_type_name(t->type, tb));
        else if (ex[i].ne[0] % want->block_size == 0) CHECKF(t->type == p->type, "%s is %s", t->name, e0_type_name(t->type, tb));
        else CHECKF(got && ex[i].ne[0] % got->block_size == 0, "%s: fallback %s", t->name, e0_type_name(t->type, tb));
        params += t->nelements;
    }
    CHECK(params == st.n_params);
    const char *a = e0_arch_get(p->arch)->name;
    const gguf_string *s = NULL;
    CHECK(gguf_get_str(f, "general.architecture", &s, &e) == 1 && s && !strcmp(s->s, a));
    CHECK(get_i(f, NULL, "general.alignment") == 32);
    CHECK(get_i(f, NULL, "general.quantization_version") == 2);
    CHECK(get_i(f, NULL, "general.file_type") == (int64_t)synth_file_type(p->type));
    CHECK(get_i(f, a, "block_count") == p->n_layer);
    CHECK(get_i(f, a, "context_length") == p->n_ctx);
    CHECK(get_i(f, a, "embedding_length") == p->n_embd);
    CHECK(get_i(f, a, "feed_forward_length") == (p->arch == E0_ARCH_MINIMAX_M2 ? p->n_ff_exp : p->n_ff));
    CHECK(get_i(f, a, "attention.head_count") == p->n_head);
    CHECK(get_i(f, a, "attention.head_count_kv") == p->n_head_kv);
    CHECK(get_i(f, a, "attention.key_length") == p->head_dim);
    CHECK(get_i(f, a, "attention.value_length") == p->head_dim);
    CHECK(get_i(f, a, "rope.dimension_count") == (p->n_rot ? p->n_rot : p->head_dim));
    CHECK(fabsf(get_f(f, a, "attention.layer_norm_rms_epsilon") - (float)p->rms_eps) < 1e-12f);
    CHECK(get_f(f, a, "rope.freq_base") == (float)p->rope_base);
    CHECK(get_i(f, a, "expert_count") == (p->n_expert ? p->n_expert : -12345));
    CHECK(get_i(f, a, "expert_used_count") == (p->n_expert ? p->n_expert_used : -12345));
    CHECK(get_i(f, a, "expert_feed_forward_length") == (is_moe_arch(p->arch) && p->arch != E0_ARCH_OLMOE && p->arch != E0_ARCH_GRANITEMOE ? p->n_ff_exp : -12345));
    CHECK(get_i(f, a, "attention.sliding_window") == (p->arch == E0_ARCH_GPTOSS ? p->n_swa : -12345));
    CHECK(get_i(f, a, "expert_shared_feed_forward_length") == (has_shexp(p->arch) || (p->arch == E0_ARCH_GRANITEMOE && p->n_ff_shexp) ? p->n_ff_shexp : -12345));
    /* weights at the intended scale: norms ~1, matrices ~N(0, 1/fan_in) */
    double mean, std;
    const gguf_tensor *t = gguf_find_tensor(f, "blk.1.ffn_norm.weight");
    if (t && tensor_stats(f, t, &mean, &std) == 0) CHECKF(fabs(mean - 1) < 0.05 && std > 0.05 && std < 0.2, "norm %g %g", mean, std);
    for (int i = 0; i < n; i++) { /* every weight matrix: N(0, 1/fan_in); embeddings N(0, 1) */
        t = gguf_find_tensor(f, ex[i].name);
        if (!t || !ex[i].quantized || tensor_stats(f, t, &mean, &std) != 0) continue;
        double want_std = strcmp(t->name, "token_embd.weight") ? 1 / sqrt((double)t->ne[0]) : 1.0;
        CHECKF(fabs(mean) < 0.1 * want_std && std > 0.8 * want_std && std < 1.2 * want_std, "%s %s: mean %g std %g (want %g)",
               t->name, e0_type_name(t->type, tb), mean, std, want_std);
    }
    gguf_close(f);
}

static void test_every_arch_and_type(void) {
    const uint32_t types[] = {E0_TYPE_F32, E0_TYPE_F16, E0_TYPE_BF16, E0_TYPE_Q8_0, E0_TYPE_Q4_0, E0_TYPE_Q4_1,
                              E0_TYPE_Q5_0, E0_TYPE_Q5_1, E0_TYPE_Q2_K, E0_TYPE_Q3_K, E0_TYPE_Q4_K, E0_TYPE_Q5_K,
                              E0_TYPE_Q6_K, E0_TYPE_IQ3_XXS, E0_TYPE_IQ3_S};
    /* every type with llama; every arch with two types; n_embd 256 fits every block size */
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        synth_params p = small(E0_ARCH_LLAMA, types[i], 256);
        check_model(&p, "t.gguf");
    }
    for (int a = 0; a < E0_ARCH_COUNT; a++) {
        if (a == E0_ARCH_DEEPSEEK2) continue; /* its own tensors: test_deepseek2 */
        synth_params p = small((enum e0_arch)a, E0_TYPE_Q8_0, 256);
        check_model(&p, "a.gguf");
        p = small((enum e0_arch)a, E0_TYPE_Q4_K, 256);
        check_model(&p, "b.gguf");
    }
    synth_params p = small(E0_ARCH_LLAMA, E0_TYPE_Q6_K, 256); /* Mixtral-style llama MoE */
    p.n_expert = 4, p.n_expert_used = 2;
    check_model(&p, "m.gguf");
    p = small(E0_ARCH_QWEN2, E0_TYPE_Q5_K, 256); /* tied output */
    p.tied_output = 1;
    check_model(&p, "tied.gguf");
}

static const uint32_t quant_types[] = {E0_TYPE_Q4_0, E0_TYPE_Q4_1, E0_TYPE_Q5_0, E0_TYPE_Q5_1, E0_TYPE_Q8_0,
                                       E0_TYPE_Q2_K, E0_TYPE_Q3_K, E0_TYPE_Q4_K, E0_TYPE_Q5_K, E0_TYPE_Q6_K,
                                       /* non-linear 4-bit, FP4, ternary, 1/2-bit */
                                       E0_TYPE_IQ4_NL, E0_TYPE_IQ4_XS, E0_TYPE_MXFP4, E0_TYPE_NVFP4, E0_TYPE_TQ1_0,
                                       E0_TYPE_TQ2_0, E0_TYPE_Q1_0, E0_TYPE_Q2_0, E0_TYPE_IQ3_XXS, E0_TYPE_IQ3_S};
#define N_QUANT (sizeof quant_types / sizeof quant_types[0])

/* Blocks drawn directly: dequantized mean ~0 and std within 5% of the target, for small and
 * unit targets; 32-element groups centered (mins packed right); same bytes when drawn in pieces. */
static void test_direct_blocks(void) {
    const int64_t n = 256 * 512; /* whole blocks of every type */
    uint8_t *a = malloc((size_t)n * 2), *b = malloc((size_t)n * 2);
    float *x = malloc((size_t)n * sizeof *x);
    CHECK(a && b && x);
    if (!a || !b || !x) goto out;
    for (size_t k = 0; k < N_QUANT; k++) {
        const uint32_t type = quant_types[k];
        const e0_type_traits *tr = e0_type_traits_of(type);
        const uint64_t nb = (uint64_t)(n / tr->block_size);
        char tb[32];
        CHECK(synth_blocks_supported(type));
        for (int s = 0; s < 2; s++) {
            const double want = s ? 1.0 : 1 / sqrt(2048.0);
            CHECK(synth_fill_blocks(type, 12345 + k, 0, nb, want, a) == 0);
            tr->to_float(a, x, n);
            double sum = 0, sum2 = 0, worst_group = 0;
            int finite = 1;
            for (int64_t i = 0; i < n; i += 32) {
                double g = 0;
                for (int64_t l = i; l < i + 32; l++) finite &= isfinite(x[l]) != 0, g += x[l], sum2 += (double)x[l] * x[l];
                sum += g;
                if (fabs(g / 32) > worst_group) worst_group = fabs(g / 32);
            }
            double mean = sum / (double)n, std = sqrt(sum2 / (double)n - mean * mean);
            CHECKF(finite, "%s: non-finite weights", e0_type_name(type, tb));
            CHECKF(fabs(mean) < 0.02 * want && fabs(std / want - 1) < 0.05, "%s: mean %g std %g (want 0, %g)",
                   e0_type_name(type, tb), mean, std, want);
            /* a group's mean is ~N(0, std^2/32) plus small offsets; mis-packed mins would add ~std */
            CHECKF(worst_group < 1.5 * want, "%s: a 32-weight group has mean %g (std %g)", e0_type_name(type, tb),
                   worst_group, want);
        }
        /* the same blocks when drawn in two pieces; another key gives other bytes */
        const uint64_t cut = nb / 3;
        CHECK(synth_fill_blocks(type, 99, 0, nb, 0.5, a) == 0);
        CHECK(synth_fill_blocks(type, 99, 0, cut, 0.5, b) == 0);
        CHECK(synth_fill_blocks(type, 99, cut, nb - cut, 0.5, b + cut * tr->type_size) == 0);
        CHECKF(!memcmp(a, b, nb * tr->type_size), "%s: pieces differ", e0_type_name(type, tb));
        CHECK(synth_fill_blocks(type, 100, 0, nb, 0.5, b) == 0);
        CHECK(memcmp(a, b, nb * tr->type_size) != 0);
    }
    CHECK(!synth_blocks_supported(E0_TYPE_F16) && !synth_blocks_supported(E0_TYPE_Q8_K));
    CHECK(synth_fill_blocks(E0_TYPE_F32, 1, 0, 1, 1.0, a) == -1);
    CHECK(synth_fill_blocks(E0_TYPE_Q4_K, 1, 0, 1, 0.0, a) == -1);
    CHECK(synth_fill_blocks(E0_TYPE_Q4_K, 1, 0, 1, NAN, a) == -1);
out:
    free(a);
    free(b);
    free(x);
}

/* quantize = 1: the float + reference-quantizer path still writes models of the intended scale,
 * with other bytes than the direct path. */
static void test_quantize_path(void) {
    const uint32_t types[] = {E0_TYPE_Q4_K, E0_TYPE_Q8_0};
    for (size_t i = 0; i < 2; i++) {
        synth_params p = small(E0_ARCH_QWEN3MOE, types[i], 256);
        p.quantize = 1;
        check_model(&p, "q.gguf");
        p.quantize = 0;
        check_model(&p, "d.gguf");
        size_t n1 = 0, n2 = 0;
        uint8_t *a = slurp(tmp_path("q.gguf"), &n1), *b = slurp(tmp_path("d.gguf"), &n2);
        CHECK(a && b && n1 == n2 && memcmp(a, b, n1) != 0);
        free(a);
        free(b);
    }
}

static void test_fallback_types(void) {
    /* rows of 96 (not 256: K-quants fall back) and n_ff 80 (not 32: legacy types fall back) */
    synth_params p = small(E0_ARCH_QWEN3MOE, E0_TYPE_Q4_K, 96);
    p.n_ff_exp = 80;
    check_model(&p, "f.gguf");
    CHECK(synth_fallback_type(E0_TYPE_Q4_K, 96) == E0_TYPE_Q5_0);
    CHECK(synth_fallback_type(E0_TYPE_Q5_K, 96) == E0_TYPE_Q5_1);
    CHECK(synth_fallback_type(E0_TYPE_Q6_K, 96) == E0_TYPE_Q8_0);
    CHECK(synth_fallback_type(E0_TYPE_Q6_K, 80) == E0_TYPE_F16);
    CHECK(synth_fallback_type(E0_TYPE_Q4_0, 80) == E0_TYPE_F16);
    CHECK(synth_fallback_type(E0_TYPE_Q4_K, 512) == E0_TYPE_Q4_K);
    /* the newer types, as llama.cpp's tensor_type_fallback (Q1_0 / NVFP4: llama.cpp refuses, F16 here) */
    CHECK(synth_fallback_type(E0_TYPE_IQ4_XS, 96) == E0_TYPE_IQ4_NL);
    CHECK(synth_fallback_type(E0_TYPE_IQ4_XS, 80) == E0_TYPE_F16);
    CHECK(synth_fallback_type(E0_TYPE_IQ4_NL, 80) == E0_TYPE_F16);
    CHECK(synth_fallback_type(E0_TYPE_MXFP4, 80) == E0_TYPE_F16);
    CHECK(synth_fallback_type(E0_TYPE_TQ1_0, 96) == E0_TYPE_Q4_0);
    CHECK(synth_fallback_type(E0_TYPE_TQ2_0, 96) == E0_TYPE_Q4_0);
    CHECK(synth_fallback_type(E0_TYPE_Q2_0, 96) == E0_TYPE_Q4_0);
    CHECK(synth_fallback_type(E0_TYPE_Q1_0, 96) == E0_TYPE_F16);
    CHECK(synth_fallback_type(E0_TYPE_NVFP4, 96) == E0_TYPE_F16);
    CHECK(synth_fallback_type(E0_TYPE_NVFP4, 128) == E0_TYPE_NVFP4);
    static const uint32_t iq[] = {E0_TYPE_IQ2_XXS, E0_TYPE_IQ2_XS, E0_TYPE_IQ2_S, E0_TYPE_IQ1_S, E0_TYPE_IQ1_M};
    for (size_t k = 0; k < sizeof iq / sizeof *iq; k++) {
        CHECK(synth_fallback_type(iq[k], 96) == E0_TYPE_IQ4_NL);
        CHECK(synth_fallback_type(iq[k], 80) == E0_TYPE_F16);
        CHECK(synth_fallback_type(iq[k], 512) == iq[k]);
    }
    synth_params q = small(E0_ARCH_QWEN3MOE, E0_TYPE_IQ4_XS, 96);
    q.n_ff_exp = 80;
    check_model(&q, "f2.gguf");
}

static uint8_t *slurp(const char *path, size_t *n) {
    e0_err e;
    return (uint8_t *)e0_read_file(path, 1 << 30, n, &e);
}

static void check_determinism(uint32_t type);
static void test_determinism(void) {
    for (int k = 0; k < 2; k++) check_determinism(k ? E0_TYPE_Q4_K : E0_TYPE_Q8_0);
}

static void check_determinism(uint32_t type) {
    synth_params p = small(E0_ARCH_QWEN2MOE, type, 256);
    e0_err e;
    p.n_threads = 1;
    CHECK(synth_write(&p, tmp_path("d1.gguf"), NULL, &e) == 0);
    p.n_threads = 3;
    CHECK(synth_write(&p, tmp_path("d2.gguf"), NULL, &e) == 0);
    p.seed = 8;
    CHECK(synth_write(&p, tmp_path("d3.gguf"), NULL, &e) == 0);
    size_t n1 = 0, n2 = 0, n3 = 0;
    uint8_t *a = slurp(tmp_path("d1.gguf"), &n1), *b = slurp(tmp_path("d2.gguf"), &n2), *c = slurp(tmp_path("d3.gguf"), &n3);
    CHECK(a && b && c);
    if (a && b && c) {
        CHECK(n1 == n2 && !memcmp(a, b, n1));
        CHECK(n1 == n3 && memcmp(a, c, n1) != 0);
        /* the seed changes every weight tensor, not just one */
        size_t diff = 0;
        for (size_t i = 0; i < n1; i++) diff += a[i] != c[i];
        CHECKF(diff > n1 / 2, "only %zu of %zu bytes differ", diff, n1);
    }
    free(a);
    free(b);
    free(c);
}

static int str_at(const gguf_file *f, const char *key, uint64_t i, const char **s) {
    const void *d;
    uint64_t n;
    e0_err e;
    if (gguf_get_arr(f, key, GGUF_STR, &d, &n, &e) != 1 || i >= n) return -1;
    *s = ((const gguf_string *)d)[i].s;
    return 0;
}

static void test_tokenizers(void) {
    e0_err e;
    /* BPE (qwen*): specials, merges that only produce tokens that exist */
    synth_params p = small(E0_ARCH_QWEN3, E0_TYPE_Q8_0, 256);
    p.n_vocab = 3000;
    p.chat_template = "{{ messages }}";
    CHECK(synth_write(&p, tmp_path("bpe.gguf"), NULL, &e) == 0);
    gguf_file *f = gguf_open(tmp_path("bpe.gguf"), &e);
    CHECKF(f, "%s", e.msg);
    if (f) {
        const void *tok, *types, *merges;
        uint64_t nt = 0, ny = 0, nm = 0;
        CHECK(gguf_get_arr(f, "tokenizer.ggml.tokens", GGUF_STR, &tok, &nt, &e) == 1 && nt == 3000);
        CHECK(gguf_get_arr(f, "tokenizer.ggml.token_type", GGUF_I32, &types, &ny, &e) == 1 && ny == 3000);
        CHECK(gguf_get_arr(f, "tokenizer.ggml.merges", GGUF_STR, &merges, &nm, &e) == 1 && nm > 500);
        const gguf_string *s;
        CHECK(gguf_get_str(f, "tokenizer.ggml.model", &s, &e) == 1 && !strcmp(s->s, "gpt2"));
        CHECK(gguf_get_str(f, "tokenizer.ggml.pre", &s, &e) == 1 && !strcmp(s->s, "qwen2"));
        CHECK(gguf_get_str(f, "tokenizer.chat_template", &s, &e) == 1 && !strcmp(s->s, "{{ messages }}"));
        int64_t eos = get_i(f, NULL, "tokenizer.ggml.eos_token_id"), bos = get_i(f, NULL, "tokenizer.ggml.bos_token_id");
        const char *t;
        CHECK(eos >= 0 && str_at(f, "tokenizer.ggml.tokens", (uint64_t)eos, &t) == 0 && !strcmp(t, "<|im_end|>"));
        CHECK(bos >= 0 && str_at(f, "tokenizer.ggml.tokens", (uint64_t)bos, &t) == 0 && !strcmp(t, "<|endoftext|>"));
        if (eos >= 0 && (uint64_t)eos < ny) CHECK(((const int32_t *)types)[eos] == 3);
        CHECK(str_at(f, "tokenizer.ggml.tokens", 0, &t) == 0 && !strcmp(t, "!"));
        CHECK(str_at(f, "tokenizer.ggml.tokens", 2999, &t) == 0 && !strcmp(t, "[PAD2999]"));
        if (nt == 3000 && nm > 0) {
            const gguf_string *ts = tok, *ms = merges;
            int bad = 0, has_the = 0;
            for (uint64_t m = 0; m < nm; m++) { /* "a b" -> token "ab" exists */
                char joined[128];
                const char *sp = strchr(ms[m].s, ' ');
                if (!sp || strlen(ms[m].s) >= sizeof joined) { bad++; continue; }
                snprintf(joined, sizeof joined, "%.*s%s", (int)(sp - ms[m].s), ms[m].s, sp + 1);
                int found = 0;
                for (uint64_t i = 0; i < nt && !found; i++) found = !strcmp(ts[i].s, joined);
                bad += !found;
                has_the |= !strcmp(joined, "\xc4\xa0the");
            }
            CHECKF(bad == 0, "%d merges produce no token", bad);
            CHECK(has_the);
            for (uint64_t i = 0; i < nt; i++) /* unique */
                for (uint64_t j = i + 1; j < nt; j++)
                    if (!strcmp(ts[i].s, ts[j].s)) bad++;
            CHECKF(bad == 0, "%d duplicate tokens", bad);
        }
        gguf_close(f);
    }
    /* SentencePiece (llama): <unk> <s> </s>, byte tokens, "▁the" */
    p = small(E0_ARCH_LLAMA, E0_TYPE_Q8_0, 256);
    p.n_vocab = 1000;
    CHECK(synth_write(&p, tmp_path("spm.gguf"), NULL, &e) == 0);
    f = gguf_open(tmp_path("spm.gguf"), &e);
    CHECKF(f, "%s", e.msg);
    if (f) {
        const char *t;
        const void *types, *scores;
        uint64_t ny = 0, ns = 0;
        CHECK(gguf_get_arr(f, "tokenizer.ggml.token_type", GGUF_I32, &types, &ny, &e) == 1 && ny == 1000);
        CHECK(gguf_get_arr(f, "tokenizer.ggml.scores", GGUF_F32, &scores, &ns, &e) == 1 && ns == 1000);
        CHECK(str_at(f, "tokenizer.ggml.tokens", 0, &t) == 0 && !strcmp(t, "<unk>"));
        CHECK(str_at(f, "tokenizer.ggml.tokens", 1, &t) == 0 && !strcmp(t, "<s>"));
        CHECK(str_at(f, "tokenizer.ggml.tokens", 2, &t) == 0 && !strcmp(t, "</s>"));
        CHECK(str_at(f, "tokenizer.ggml.tokens", 3 + 0x41, &t) == 0 && !strcmp(t, "<0x41>"));
        if (ny == 1000) CHECK(((const int32_t *)types)[3 + 0x41] == 6 && ((const int32_t *)types)[1] == 3);
        CHECK(get_i(f, NULL, "tokenizer.ggml.bos_token_id") == 1 && get_i(f, NULL, "tokenizer.ggml.eos_token_id") == 2);
        int found = 0;
        for (uint64_t i = 259; i < 1000; i++)
            if (str_at(f, "tokenizer.ggml.tokens", i, &t) == 0 && !strcmp(t, "\xe2\x96\x81the")) found = 1;
        CHECK(found);
        gguf_close(f);
    }
}

static void test_shapes(void) {
    synth_params p = {.arch = E0_ARCH_QWEN3MOE};
    e0_err e;
    CHECK(synth_shape_apply(&p, "qwen3-30b-a3b", &e) == 0);
    CHECK(p.n_layer == 48 && p.n_embd == 2048 && p.n_head == 32 && p.head_dim == 128 && p.n_head_kv == 4);
    CHECK(p.n_expert == 128 && p.n_expert_used == 8 && p.n_ff_exp == 768 && p.n_vocab == 151936);
    CHECK(p.rope_base == 1e6 && p.rms_eps == 1e-6 && p.n_ctx == 40960);
    p.type = E0_TYPE_Q4_K, p.n_threads = 2;
    CHECK(synth_validate(&p, &e) == 0);
    p = (synth_params){.arch = E0_ARCH_LLAMA};
    CHECK(synth_shape_apply(&p, "mixtral-8x7b", &e) == 0);
    CHECK(p.n_layer == 32 && p.n_embd == 4096 && p.n_head == 32 && p.n_head_kv == 8 && p.n_expert == 8 &&
          p.n_expert_used == 2 && p.n_ff == 14336 && p.n_vocab == 32000);
    p.type = E0_TYPE_Q4_K, p.n_threads = 2;
    CHECK(synth_validate(&p, &e) == 0);
    CHECK(synth_shape_apply(&p, "nope", &e) != 0 && strstr(e.msg, "nope"));
}

/* Run the CLI with args; return its exit status, stderr in err. */
static int run_cli(const char *args, char *err, size_t errlen) {
    char cmd[2048];
    const char *errf = tmp_path("stderr.txt");
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer synth %s >/dev/null 2>%s", t_build(), args, errf);
    int st = system(cmd);
    size_t n = 0;
    char *s = (char *)slurp(errf, &n);
    snprintf(err, errlen, "%s", s ? s : "");
    free(s);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_cli(void) {
    char err[4096], args[1024];
    const char *out = tmp_path("cli.gguf");
    /* good: a tiny qwen3moe with a chat template */
    FILE *tf = fopen(tmp_path("tmpl.jinja"), "w");
    if (tf) fputs("{% for m in messages %}{{ m.content }}{% endfor %}", tf), fclose(tf);
    snprintf(args, sizeof args, "--arch qwen3moe --out %s --type q8_0 --n-layer 1 --n-expert 4 --n-expert-used 2 --seed 3 --chat-template-file %s",
             out, tmp_path("tmpl.jinja"));
    CHECKF(run_cli(args, err, sizeof err) == 0, "%s", err);
    e0_err e;
    gguf_file *f = gguf_open(out, &e);
    CHECKF(f, "%s", e.msg);
    if (f) {
        CHECK(get_i(f, "qwen3moe", "expert_count") == 4 && get_i(f, "qwen3moe", "block_count") == 1);
        const gguf_string *s;
        CHECK(gguf_get_str(f, "tokenizer.chat_template", &s, &e) == 1 && strstr(s->s, "m.content"));
        gguf_close(f);
    }
    /* --quantize: the float + reference-quantizer path, other bytes than the default */
    const char *qa = tmp_path("cli_q.gguf"), *qd = tmp_path("cli_d.gguf");
    snprintf(args, sizeof args, "--arch llama --type q4_k --n-layer 1 --out %s --quantize", qa);
    CHECKF(run_cli(args, err, sizeof err) == 0, "%s", err);
    snprintf(args, sizeof args, "--arch llama --type q4_k --n-layer 1 --out %s", qd);
    CHECKF(run_cli(args, err, sizeof err) == 0, "%s", err);
    size_t na = 0, nd = 0;
    uint8_t *ba = slurp(qa, &na), *bd = slurp(qd, &nd);
    CHECK(ba && bd && na == nd && na > 0 && memcmp(ba, bd, na) != 0);
    free(ba);
    free(bd);
    static const char *const bad[][2] = {
        {"--out X", "--arch"},
        {"--arch llama", "--out"},
        {"--arch gpt9 --out X", "gpt9"},
        {"--arch llama --out X --type q9_9", "q9_9"},
        {"--arch llama --out X --type q8_1", "q8_1"},
        {"--arch llama --out X --n-head 6 --n-head-kv 4", "--n-head-kv"},
        {"--arch qwen3moe --out X --n-expert 8 --n-expert-used 9", "--n-expert-used"},
        {"--arch qwen3moe --out X --n-expert 0", "--n-expert"},
        {"--arch qwen3 --out X --n-expert 4", "dense"},
        {"--arch llama --out X --n-layer 0", "--n-layer"},
        {"--arch llama --out X --n-layer 3x", "--n-layer"},
        {"--arch llama --out X --n-embd -5", "--n-embd"},
        {"--arch llama --out X --head-dim 63", "--head-dim"},
        {"--arch llama --out X --n-vocab 100", "--n-vocab"},
        {"--arch llama --out X --seed -1", "--seed"},
        {"--arch llama --out X --shape huge", "huge"},
        {"--arch llama --out X --frobnicate 1", "--frobnicate"},
        {"--arch llama --out X --n-layer", "--n-layer"},
        {"--arch llama --out X --n-layer 2 --n-layer 3", "twice"},
        {"--arch llama --out X --chat-template-file /nonexistent/t.jinja", "/nonexistent/t.jinja"},
        {"--arch llama --out /nonexistent/dir/m.gguf", "/nonexistent/dir"},
        {"--arch llama --out /tmp", "directory"},
        {"--arch qwen3moe --out X --shape qwen3-30b-a3b --n-embd 65536 --n-ff-exp 1048576", "too large"},
        {"--arch llama --out X --type-map 'attn_(q=q4_k'", "bad regex"},
        {"--arch llama --out X --type-map attn_q", "REGEX=TYPE"},
        {"--arch llama --out X --type-map 'attn_q=q9_9'", "q9_9"},
        {"--arch llama --out X --type-map ''", "empty"},
        {"--arch llama --out X --ftype Q7_K_M", "Q7_K_M"},
        {"--arch llama --out X --ftype Q4_K_M --type q4_k", "not both"},
        {"--arch llama --out X --type-map 'ffn_down=q8_k'", "unknown tensor type"}, /* activation-only */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char a[512];
        unlink(tmp_path("bad.gguf"));
        snprintf(a, sizeof a, "%s", bad[i][0]);
        char *x = strstr(a, "--out X");
        if (x) { /* point X into the temp dir */
            char tail[512];
            snprintf(tail, sizeof tail, "%s", x + 7);
            snprintf(x, sizeof a - (size_t)(x - a), "--out %s%s", tmp_path("bad.gguf"), tail);
        }
        int rc = run_cli(a, err, sizeof err);
        size_t lines = 0;
        for (const char *c = err; *c; c++) lines += *c == '\n';
        CHECKF(rc == 1, "'%s' exited %d", bad[i][0], rc);
        CHECKF(!strncmp(err, "edge0-infer: ", 13) && lines >= 1 && strstr(err, bad[i][1]), "'%s': stderr '%s'", bad[i][0], err);
        struct stat sb;
        CHECKF(stat(tmp_path("bad.gguf"), &sb) != 0 && stat(tmp_path("bad.gguf.partial"), &sb) != 0, "'%s' left a file",
               bad[i][0]);
    }
}

/* --type-map: first match wins, the rest takes --type, vectors and routers stay F32, and the file
 * holds those types; --ftype Q4_K_M: the recipe's more-bits layers (attn_v, ffn_down of layers
 * 0, 3, 6, 7 of 8 in llama.cpp's use_more_bits), Q6_K output. (test_llamacpp compares every
 * preset with llama.cpp itself.) */
static void check_file_types(const char *path, const char *const (*want)[2], size_t n) {
    e0_err e;
    gguf_file *f = gguf_open(path, &e);
    CHECKF(f, "%s", f ? "" : e.msg);
    for (size_t i = 0; f && i < n; i++) {
        const gguf_tensor *t = gguf_find_tensor(f, want[i][0]);
        const e0_type_traits *tr = t ? e0_type_traits_of(t->type) : NULL;
        CHECKF(tr && !strcmp(tr->name, want[i][1]), "%s: %s (want %s)", want[i][0], tr ? tr->name : "missing", want[i][1]);
    }
    if (f) gguf_close(f);
}

static void test_type_map_and_ftype(void) {
    synth_params p = small(E0_ARCH_QWEN3MOE, E0_TYPE_Q8_0, 256);
    synth_type_map *m = NULL;
    e0_err e;
    CHECKF(synth_type_map_parse("ffn_(gate|up)_exps=iq3_s,ffn_down_exps=iq3_xxs,attn_.*=q4_k,attn_q=q6_k,output=q6_k", &m, &e) == 0,
           "%s", e.msg);
    p.type_map = m;
    synth_stats st;
    CHECKF(synth_write(&p, tmp_path("map.gguf"), &st, &e) == 0, "%s", e.msg);
    static const char *const want[][2] = {
        {"blk.0.ffn_gate_exps.weight", "iq3_s"}, {"blk.1.ffn_up_exps.weight", "iq3_s"},
        {"blk.0.ffn_down_exps.weight", "iq3_xxs"}, {"blk.1.attn_q.weight", "q4_K"}, /* attn_.* matched first */
        {"blk.0.attn_output.weight", "q5_0"}, /* rows of 128: llama.cpp's fallback for q4_K */ {"output.weight", "q6_K"},
        {"token_embd.weight", "q8_0"},          {"blk.0.ffn_gate_inp.weight", "f32"}, {"blk.0.attn_norm.weight", "f32"},
    };
    check_file_types(tmp_path("map.gguf"), want, sizeof want / sizeof want[0]);
    synth_type_map_free(m);
    /* one error per bad item, nothing allocated */
    const char *bad[] = {"attn_(q=q4_k", "=q4_k", "attn_q=", "attn_q=q4_k,,x", "attn_q=q8_1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        m = NULL;
        CHECKF(synth_type_map_parse(bad[i], &m, &e) == -1 && !m && e.msg[0], "'%s' accepted", bad[i]);
    }
    CHECK(synth_ftype_from_name("q4_k_m") == 15 && synth_ftype_from_name("IQ3_XXS") == 23 &&
          synth_ftype_from_name("MXFP4_MOE") == 38 && synth_ftype_from_name("Q4_K") == -1);
    p = small(E0_ARCH_LLAMA, E0_TYPE_Q4_K, 256);
    p.n_layer = 8;
    p.use_ftype = 1;
    p.ftype = synth_ftype_from_name("Q4_K_M");
    CHECKF(synth_write(&p, tmp_path("q4km.gguf"), &st, &e) == 0, "%s", e.msg);
    static const char *const want_km[][2] = {
        {"blk.0.attn_v.weight", "q6_K"},     {"blk.1.attn_v.weight", "q4_K"},     {"blk.2.attn_v.weight", "q4_K"},
        {"blk.3.attn_v.weight", "q6_K"},     {"blk.7.attn_v.weight", "q6_K"},     {"blk.6.ffn_down.weight", "q6_K"},
        {"blk.5.ffn_down.weight", "q4_K"},   {"blk.0.attn_q.weight", "q4_K"},     {"output.weight", "q6_K"},
        {"token_embd.weight", "q4_K"},
    };
    check_file_types(tmp_path("q4km.gguf"), want_km, sizeof want_km / sizeof want_km[0]);
    /* an i-quant preset (every type of llama.cpp's recipes is in the table now) */
    p.ftype = synth_ftype_from_name("IQ2_XXS");
    CHECKF(synth_write(&p, tmp_path("iq2.gguf"), &st, &e) == 0, "%s", e.msg);
    static const char *const want_iq2[][2] = {{"blk.0.ffn_gate.weight", "iq2_xxs"}, {"blk.0.ffn_up.weight", "iq2_xxs"}};
    check_file_types(tmp_path("iq2.gguf"), want_iq2, sizeof want_iq2 / sizeof want_iq2[0]);
}

/* Run a shell command line; its exit status (stdout/stderr go where the line sends them). */
static int sh(const char *cmd) {
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Models written by the CLI's default (direct-block) path load and run: `run` generates 4
 * tokens, `logits` gives finite values with a sane spread that depend on the position. */
static void test_cli_models_run(void) {
    static const char *const archs[] = {"qwen3moe", "llama"};
    const int n_vocab = 512, n_tok = 3;
    for (int k = 0; k < 2; k++) {
        char cmd[2048];
        const char *model = tmp_path("run.gguf"), *ids = tmp_path("ids.txt"), *lf = tmp_path("logits.bin");
        snprintf(cmd, sizeof cmd,
                 "%s/bin/edge0-infer synth --arch %s --type q4_k --n-layer 2 --n-embd 256 --n-head 4 --n-head-kv 2 "
                 "--head-dim 64 --n-ff 512 %s --n-vocab %d --seed 5 --out %s >/dev/null",
                 t_build(), archs[k], k == 0 ? "--n-ff-exp 256" : "", n_vocab, model);
        CHECKF(sh(cmd) == 0, "%s: synth failed", archs[k]);
        snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer run --model %s --tokens 1,2,3 -n 4 --temp 0 --print-ids >%s", t_build(),
                 model, ids);
        CHECKF(sh(cmd) == 0, "%s: run failed", archs[k]);
        size_t n = 0;
        char *out = (char *)slurp(ids, &n);
        int got = 0, bad = 0;
        for (char *c = out, *end; c && *c; c = end) {
            long v = strtol(c, &end, 10);
            if (end == c) { end = c + 1; continue; }
            got++;
            bad += v < 0 || v >= n_vocab;
        }
        CHECKF(got == 4 && !bad, "%s: run printed '%s'", archs[k], out ? out : "");
        free(out);
        snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer logits --model %s --tokens 1,2,3 --out %s", t_build(), model, lf);
        CHECKF(sh(cmd) == 0, "%s: logits failed", archs[k]);
        float *l = (float *)slurp(lf, &n);
        CHECKF(l && n == (size_t)n_tok * n_vocab * sizeof(float), "%s: %zu logit bytes", archs[k], n);
        if (l && n == (size_t)n_tok * n_vocab * sizeof(float)) {
            int finite = 1;
            double row_std[3];
            for (int r = 0; r < n_tok; r++) {
                double s = 0, s2 = 0;
                for (int i = 0; i < n_vocab; i++) {
                    float v = l[r * n_vocab + i];
                    finite &= isfinite(v) != 0;
                    s += v, s2 += (double)v * v;
                }
                double m = s / n_vocab;
                row_std[r] = sqrt(s2 / n_vocab - m * m);
                CHECKF(fabs(m) < row_std[r], "%s: row %d logits mean %g std %g", archs[k], r, m, row_std[r]);
            }
            CHECKF(finite, "%s: non-finite logits", archs[k]);
            for (int r = 0; r < n_tok; r++)
                CHECKF(row_std[r] > 0.1 && row_std[r] < 20, "%s: row %d logit std %g", archs[k], r, row_std[r]);
            CHECK(memcmp(l, l + n_vocab, (size_t)n_vocab * sizeof(float)) != 0);
        }
        free(l);
    }
}

static void cleanup(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
}

/* deepseek2: the tensors and keys of llama.cpp's deepseek2 loader (models/deepseek2.cpp), with q
 * LoRA on and off, the correction bias, two leading dense layers and two shared experts. */
static void test_deepseek2(void) {
    for (int v = 0; v < 2; v++) {
        synth_params p = {0};
        e0_err e = {{0}};
        p.arch = E0_ARCH_DEEPSEEK2;
        CHECK(synth_shape_apply(&p, "tiny", &e) == 0);
        p.type = v ? E0_TYPE_Q4_K : E0_TYPE_Q8_0, p.seed = 5, p.n_threads = 2, p.n_layer = 3;
        p.n_layer_dense_lead = 1 + v, p.n_expert_shared = 2, p.q_lora_rank = v ? 64 : 0, p.exp_probs_b = v;
        p.gating_sigmoid = v, p.expert_weights_norm = v, p.n_head = 3;
        const char *path = tmp_path("ds.gguf");
        synth_stats st;
        CHECKF(synth_write(&p, path, &st, &e) == 0, "deepseek2: %s", e.msg);
        gguf_file *f = gguf_open(path, &e);
        CHECKF(f, "gguf_open: %s", e.msg);
        if (!f) continue;
        const uint64_t E = (uint64_t)p.n_embd, H = (uint64_t)p.n_head, C = (uint64_t)p.kv_lora_rank, R = (uint64_t)p.n_rot;
        const uint64_t KM = (uint64_t)p.head_dim, VM = (uint64_t)p.head_dim_v, QL = (uint64_t)p.q_lora_rank;
        const uint64_t X = (uint64_t)p.n_expert, FE = (uint64_t)p.n_ff_exp, FS = FE * (uint64_t)p.n_expert_shared;
        static exp_tensor ex[256];
        int n = 0;
#define X_(q, nd, a, b, c, ...)                                         \
    do {                                                                \
        snprintf(ex[n].name, 64, __VA_ARGS__);                          \
        ex[n].n_dims = nd, ex[n].ne[0] = a, ex[n].ne[1] = b, ex[n].ne[2] = c, ex[n].quantized = q; \
        n++;                                                            \
    } while (0)
        X_(1, 2, E, (uint64_t)p.n_vocab, 1, "token_embd.weight");
        X_(0, 1, E, 1, 1, "output_norm.weight");
        X_(1, 2, E, (uint64_t)p.n_vocab, 1, "output.weight");
        for (int i = 0; i < p.n_layer; i++) {
            X_(0, 1, E, 1, 1, "blk.%d.attn_norm.weight", i);
            if (QL) {
                X_(0, 1, QL, 1, 1, "blk.%d.attn_q_a_norm.weight", i);
                X_(1, 2, E, QL, 1, "blk.%d.attn_q_a.weight", i);
                X_(1, 2, QL, H * KM, 1, "blk.%d.attn_q_b.weight", i);
            } else {
                X_(1, 2, E, H * KM, 1, "blk.%d.attn_q.weight", i);
            }
            X_(0, 1, C, 1, 1, "blk.%d.attn_kv_a_norm.weight", i);
            X_(1, 2, E, C + R, 1, "blk.%d.attn_kv_a_mqa.weight", i);
            X_(1, 3, KM - R, C, H, "blk.%d.attn_k_b.weight", i);
            X_(1, 3, C, VM, H, "blk.%d.attn_v_b.weight", i);
            X_(1, 2, H * VM, E, 1, "blk.%d.attn_output.weight", i);
            X_(0, 1, E, 1, 1, "blk.%d.ffn_norm.weight", i);
            if (i < p.n_layer_dense_lead) {
                X_(1, 2, E, (uint64_t)p.n_ff, 1, "blk.%d.ffn_gate.weight", i);
                X_(1, 2, E, (uint64_t)p.n_ff, 1, "blk.%d.ffn_up.weight", i);
                X_(1, 2, (uint64_t)p.n_ff, E, 1, "blk.%d.ffn_down.weight", i);
                continue;
            }
            X_(0, 2, E, X, 1, "blk.%d.ffn_gate_inp.weight", i);
            if (p.exp_probs_b) X_(0, 1, X, 1, 1, "blk.%d.exp_probs_b.bias", i);
            X_(1, 3, E, FE, X, "blk.%d.ffn_gate_exps.weight", i);
            X_(1, 3, E, FE, X, "blk.%d.ffn_up_exps.weight", i);
            X_(1, 3, FE, E, X, "blk.%d.ffn_down_exps.weight", i);
            X_(1, 2, E, FS, 1, "blk.%d.ffn_gate_shexp.weight", i);
            X_(1, 2, E, FS, 1, "blk.%d.ffn_up_shexp.weight", i);
            X_(1, 2, FS, E, 1, "blk.%d.ffn_down_shexp.weight", i);
        }
#undef X_
        CHECKF(f->n_tensors == (uint64_t)n, "deepseek2: %llu tensors, expected %d", (unsigned long long)f->n_tensors, n);
        for (int i = 0; i < n; i++) {
            const gguf_tensor *t = gguf_find_tensor(f, ex[i].name);
            CHECKF(t, "deepseek2: missing %s", ex[i].name);
            if (!t) continue;
            CHECKF(t->n_dims == ex[i].n_dims, "%s: %u dims", t->name, t->n_dims);
            for (uint32_t d = 0; d < ex[i].n_dims; d++) CHECKF(t->ne[d] == ex[i].ne[d], "%s ne[%u]", t->name, d);
            if (!ex[i].quantized) CHECKF(t->type == E0_TYPE_F32, "%s is not F32", t->name);
        }
        const char *a = "deepseek2";
        CHECK(get_i(f, a, "attention.head_count_kv") == 1);
        CHECK(get_i(f, a, "attention.key_length") == (int64_t)(C + R) && get_i(f, a, "attention.value_length") == (int64_t)C);
        CHECK(get_i(f, a, "attention.key_length_mla") == (int64_t)KM && get_i(f, a, "attention.value_length_mla") == (int64_t)VM);
        CHECK(get_i(f, a, "attention.kv_lora_rank") == (int64_t)C && get_i(f, a, "attention.q_lora_rank") == (int64_t)QL);
        CHECK(get_i(f, a, "rope.dimension_count") == (int64_t)R);
        CHECK(get_i(f, a, "leading_dense_block_count") == p.n_layer_dense_lead);
        CHECK(get_i(f, a, "expert_shared_count") == p.n_expert_shared);
        CHECK(get_i(f, a, "expert_gating_func") == (v ? 2 : 1));
        gguf_close(f);
        /* and the engine loads it with those hyperparameters */
        e0_model *m = e0_model_load(path, NULL, false, &e);
        CHECKF(m, "deepseek2 load: %s", e.msg);
        if (m) {
            CHECK(m->hp.mla && m->hp.q_lora_rank == (int64_t)QL && m->hp.n_layer_dense_lead == p.n_layer_dense_lead);
            CHECK(m->hp.gating == (v ? E0_GATING_SIGMOID : E0_GATING_SOFTMAX) && m->hp.moe_norm_topk == (v != 0));
            CHECK(m->hp.n_ff_shexp == (int64_t)FS && !m->hp.shared_expert_gate);
            e0_model_free(m);
        }
        unlink(path);
    }
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_synth.XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(test_every_arch_and_type);
    RUN(test_deepseek2);
    RUN(test_direct_blocks);
    RUN(test_quantize_path);
    RUN(test_fallback_types);
    RUN(test_type_map_and_ftype);
    RUN(test_determinism);
    RUN(test_tokenizers);
    RUN(test_shapes);
    RUN(test_cli);
    RUN(test_cli_models_run);
    cleanup();
    return T_DONE();
}
