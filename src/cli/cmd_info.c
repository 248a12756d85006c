/* cmd_info.c — `info`: name, architecture (and what its row in engine/arch.h says its layers
 * have), hyperparameters, tokenizer (type, pre-tokenizer, BOS/EOS, chat template), tensor types,
 * parameter count, file size, and whether experts would be resident or streamed at the current
 * memory budget (the residency rule itself: e0_plan in engine/load.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "engine/options.h"
#include "gguf/gguf.h"
#include "quant/quant.h"
#include "text/tokenizer.h"

static const char *gating_name(enum e0_gating g) {
    switch (g) {
    case E0_GATING_SOFTMAX: return "softmax";
    case E0_GATING_SOFTMAX_WEIGHT: return "softmax over the top-k logits";
    case E0_GATING_SIGMOID: return "sigmoid";
    }
    return "?";
}

/* A string metadata value for printing ("(none)" when absent or not a string). */
static void print_str(const char *label, const gguf_file *f, const char *key) {
    const gguf_string *v;
    e0_err e;
    if (gguf_get_str(f, key, &v, &e) == 1) printf("%s%.*s\n", label, (int)(v->len > 200 ? 200 : v->len), v->s);
    else printf("%s(none)\n", label);
}

/* "2 \"<s>\"" or "none". */
static void print_token(const char *label, const e0_tokenizer *t, int32_t id) {
    size_t n = 0;
    const char *s = id >= 0 ? e0_tok_text(t, id, &n) : NULL;
    if (id < 0) printf("%snone\n", label);
    else printf("%s%d \"%.*s\"\n", label, id, (int)(n > 60 ? 60 : n), s ? s : "");
}

/* Experts resident or streamed (and with how many slots) under the options and budget now. */
static void print_residency(cli_model_opts *o, const e0_hparams *hp) {
    if (!hp->n_expert) return;
    e0_session s;
    e0_err e;
    e0_ctx_params cp = {.n_ctx = o->n_ctx, .n_batch = o->n_batch, .type_k = o->type_k, .type_v = o->type_v};
    char budget[32], slots[96];
    if (e0_plan(o->model, &o->opt, &cp, &s, &e) < 0) {
        printf("experts here:    cannot load with these options: %s\n", e.msg);
        return;
    }
    e0_size_text(s.budget, budget);
    if (s.streamed)
        printf("experts here:    streamed from disk, %s (of %lld%s), budget %s (%s)\n",
               e0_session_slots_text(&s, slots, sizeof slots), (long long)hp->n_expert,
               s.opt.expert_slots < hp->n_expert_used ? "; fewer than a token uses: its experts take turns in them" : "", budget,
               s.budget_source);
    else printf("experts here:    resident (all in memory), budget %s (%s)\n", budget, s.budget_source);
}

int cmd_info(int argc, char **argv) {
    cli_model_opts o = {0};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            puts("usage: edge0-infer info --model F [-c N] [--model-option k=v ...]\nPrints the model's name, architecture, "
                 "hyperparameters, tokenizer (type, pre-tokenizer,\nBOS/EOS, chat template), tensor count per type, "
                 "parameter count and file size;\nvalidates every tensor's presence and shape. For a model with experts, "
                 "says whether\nthey would be resident or streamed (with how many slots) at the memory budget that\n"
                 "-c and --model-option (memory_budget=, experts=, expert_slots=) give, as run would decide. Also the KV cache bytes per token.");
            return 0;
        }
        int r = cli_model_flag(&o, argc, argv, &i);
        if (r < 0) return 1;
        if (!r) return cli_error("info: unknown option '%s' (see --help)", argv[i]);
    }
    const char *path = o.model;
    if (!path) return cli_error("info: --model is required");
    e0_err e;
    e0_model *m = e0_model_load(path, NULL, false, &e);
    if (!m) return cli_error("%s", e.msg);
    const e0_hparams *hp = &m->hp;
    const gguf_file *f = m->gguf;
    printf("file:            %s\n", f->path);
    if (f->n_splits > 1) {
        printf("files:           %u (a split model; tensors in each:", f->n_splits);
        for (uint32_t i = 0; i < f->n_splits; i++) {
            uint64_t n = 0;
            for (uint64_t j = 0; j < f->n_tensors; j++) n += f->tensors[j].split == i;
            printf(" %llu", (unsigned long long)n);
        }
        printf(")\n");
    }
    printf("%-17s%llu bytes (%.2f GiB)\n", f->n_splits > 1 ? "total size:" : "file size:", (unsigned long long)f->total_size,
           (double)f->total_size / (1 << 30));
    printf("gguf version:    %u (%llu tensors, %llu metadata keys)\n", f->version, (unsigned long long)f->n_tensors,
           (unsigned long long)f->n_kv);
    print_str("name:            ", f, "general.name");
    printf("architecture:    %s\n", hp->arch_name);
    if (hp->qkv_bias || hp->qk_norm)
        printf("attention:       %s%s%s\n", hp->qkv_bias ? "q/k/v biases" : "", hp->qkv_bias && hp->qk_norm ? ", " : "",
               hp->qk_norm ? (hp->qk_norm_full ? "q/k RMSNorm over the whole projection" : "per-head q/k RMSNorm") : "");
    printf("layers:          %lld\n", (long long)hp->n_layer);
    if (hp->qkv_bias_opt || hp->qk_norm_opt) /* glm4moe: what this file has */
        printf("attention:       q/k/v biases %s, per-head q/k RMSNorm %s\n", gguf_find_tensor(f, "blk.0.attn_q.bias") ? "yes" : "no",
               gguf_find_tensor(f, "blk.0.attn_q_norm.weight") ? "yes" : "no");
    if (hp->n_layer_nextn && !hp->hybrid) /* glm4moe */
        printf("mtp blocks:      %lld (loaded by llama.cpp as draft heads; ignored here)\n", (long long)hp->n_layer_nextn);
    if (hp->hybrid) {
        printf("hybrid:          %lld Gated DeltaNet layers (%lld key heads, %lld value heads of %lld, conv kernel %lld), "
               "%lld gated attention layers\n",
               (long long)(hp->n_layer - hp->n_layer_kv), (long long)hp->ssm_n_group, (long long)hp->ssm_dt_rank,
               (long long)hp->ssm_d_state, (long long)hp->ssm_d_conv, (long long)hp->n_layer_kv);
        if (hp->n_layer_nextn) printf("mtp blocks:      %lld (loaded by llama.cpp as draft heads; ignored here)\n", (long long)hp->n_layer_nextn);
        printf("recurrent state: %llu bytes per sequence (any context length)\n", (unsigned long long)e0_recurrent_bytes(hp));
    }
    printf("n_embd:          %lld\n", (long long)hp->n_embd);
    char rope_kind[96];
    if (hp->rope_imrope)
        snprintf(rope_kind, sizeof rope_kind, "imrope, sections %d,%d,%d,%d", hp->rope_sections[0], hp->rope_sections[1],
                 hp->rope_sections[2], hp->rope_sections[3]);
    else snprintf(rope_kind, sizeof rope_kind, "%s", hp->rope_neox ? "neox" : "normal");
    printf("heads:           %lld (kv %lld, head_dim %lld, rope dims %lld, %s)\n", (long long)hp->n_head,
           (long long)hp->n_head_kv, (long long)hp->head_dim, (long long)hp->n_rot, rope_kind);
    printf("rope freq base:  %g\n", (double)hp->rope_base);
    printf("rms eps:         %g\n", (double)hp->rms_eps);
    printf("context length:  %lld\n", (long long)hp->n_ctx_train);
    printf("vocabulary:      %lld\n", (long long)hp->n_vocab);
    if (hp->n_ff) printf("n_ff:            %lld\n", (long long)hp->n_ff);
    if (hp->n_expert) {
        printf("experts:         %lld, %lld used per token, n_ff_exp %lld, %s gating, weights %s\n", (long long)hp->n_expert,
               (long long)hp->n_expert_used, (long long)hp->n_ff_exp, gating_name(hp->gating),
               hp->moe_norm_topk ? "renormalized" : "not renormalized");
        if (hp->shared_expert)
            printf("shared expert:   n_ff %lld, %s\n", (long long)hp->n_ff_shexp, hp->shared_expert_gate ? "sigmoid-gated" : "ungated");
        if (hp->mla || hp->ds_routing) /* deepseek2's and glm4moe's routing details */
            printf("routing:         %lld leading dense layers, %lld shared experts, groups %lld (%lld used), "
                   "weights scale %g\n", (long long)hp->n_layer_dense_lead, (long long)hp->n_expert_shared,
                   (long long)hp->n_expert_groups, (long long)hp->n_group_used, (double)hp->expert_weights_scale);
    }
    if (hp->mla)
        printf("attention:       multi-head latent (MLA): kv_lora_rank %lld, q_lora_rank %lld, key %lld (nope %lld + "
               "rope %lld), value %lld; the cache keeps kv_lora_rank + rope values per token and layer%s\n",
               (long long)hp->kv_lora_rank, (long long)hp->q_lora_rank, (long long)hp->head_dim_k_mla,
               (long long)(hp->head_dim_k_mla - hp->n_rot), (long long)hp->n_rot, (long long)hp->head_dim_v_mla,
               hp->rope_ext_factor != 0 ? ", YaRN RoPE" : "");
    /* KV cache bytes per token (K and V rows of every layer) at the default types, and the others */
    printf("kv cache:        %llu bytes per token at f16 (the default; -ctk/-ctv:",
           (unsigned long long)e0_kv_bytes_per_pos(hp, E0_TYPE_F16, E0_TYPE_F16));
    const uint32_t others[] = {E0_TYPE_F32, E0_TYPE_BF16, E0_TYPE_Q8_0, E0_TYPE_Q4_0};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        if (e0_kv_check(hp, others[i], others[i], &e) == 0)
            printf(" %s %llu", e0_kv_type_name(others[i]), (unsigned long long)e0_kv_bytes_per_pos(hp, others[i], others[i]));
    printf(")\n");
    if (hp->n_swa > 0) { /* gpt-oss: the sliding-window layers keep their window only */
        int64_t n_swa_l = 0;
        for (int64_t il = 0; il < hp->n_layer; il++) n_swa_l += e0_layer_is_swa(hp, il);
        printf("sliding window:  %lld positions on %lld of %lld layers (every %lld: il %% %lld < %lld), rope base %g; "
               "their KV: %llu bytes at f16 whatever the context (not in the per-token figure)\n",
               (long long)hp->n_swa, (long long)n_swa_l, (long long)hp->n_layer, (long long)hp->swa_period,
               (long long)hp->swa_period, (long long)hp->swa_period - 1, (double)hp->rope_base_swa,
               (unsigned long long)e0_kv_bytes_swa(hp, E0_TYPE_F16, E0_TYPE_F16));
        /* as a context allocates them: rings of the window + a prefill chunk - 1 rows (at most n_ctx) */
        const int n_ctx = hp->n_ctx_train > 0 && hp->n_ctx_train < INT32_MAX ? (int)hp->n_ctx_train : INT32_MAX;
        printf("                 allocated as rings of n_swa + chunk - 1 = %d rows per layer: %llu bytes at f16 with the "
               "default chunk of %d tokens (-b)\n",
               e0_kv_swa_rows(hp, n_ctx, E0_CTX_DEFAULT_BATCH),
               (unsigned long long)e0_kv_bytes_swa_ring(hp, E0_TYPE_F16, E0_TYPE_F16, n_ctx, E0_CTX_DEFAULT_BATCH),
               E0_CTX_DEFAULT_BATCH);
    }
    if (hp->rope_freq_scale != 1.0f || hp->rope_ext_factor != 0.0f)
        printf("rope scaling:    %s, factor %g, original context %lld, attn factor %g\n",
               hp->rope_ext_factor != 0.0f ? "yarn" : "linear", (double)(1.0f / hp->rope_freq_scale),
               (long long)hp->n_ctx_orig, (double)hp->rope_attn_factor);
    if (hp->attn_sinks || hp->router_bias || hp->expert_bias)
        printf("gpt-oss:         attention sinks%s%s%s, %s\n", hp->attn_out_bias ? ", attn_output bias" : "",
               hp->router_bias ? ", router bias" : "", hp->expert_bias ? ", expert biases (resident)" : "",
               hp->ffn_act == E0_ACT_SWIGLU_OAI ? "clamped SwiGLU (alpha 1.702, limit 7)" : "SwiGLU");
    if (hp->logit_scale != 0.0f) /* granitemoe */
        printf("multipliers:     embedding %g, residual %g, attention scale %g, logits / %g\n", (double)hp->embd_scale,
               (double)hp->residual_scale, (double)hp->attn_scale, (double)hp->logit_scale);
    printf("output:          %s\n", m->tied_output ? "tied to token_embd" : "output.weight");
    printf("parameters:      %llu total, %llu active per token\n", (unsigned long long)m->params_total,
           (unsigned long long)m->params_active);
    printf("tensor types:   ");
    for (uint32_t t = 0; t < E0_TYPE_COUNT; t++) {
        uint64_t count = 0, bytes = 0;
        for (uint64_t i = 0; i < f->n_tensors; i++)
            if (f->tensors[i].type == t) count++, bytes += f->tensors[i].nbytes;
        char buf[32];
        if (count) printf(" %s:%llu", e0_type_name(t, buf), (unsigned long long)count);
    }
    printf("\n");
    /* bytes per tensor type (what a mix like Q4_K_M spends where), with the share of all tensor data */
    uint64_t all_bytes = 0;
    for (uint64_t i = 0; i < f->n_tensors; i++) all_bytes += f->tensors[i].nbytes;
    printf("tensor bytes:   ");
    for (uint32_t t = 0; t < E0_TYPE_COUNT; t++) {
        uint64_t bytes = 0;
        for (uint64_t i = 0; i < f->n_tensors; i++)
            if (f->tensors[i].type == t) bytes += f->tensors[i].nbytes;
        char buf[32];
        if (bytes)
            printf(" %s:%llu (%.2f MiB, %.1f%%)", e0_type_name(t, buf), (unsigned long long)bytes, (double)bytes / 1048576.0,
                   100.0 * (double)bytes / (double)all_bytes);
    }
    printf("\n");
    print_str("tokenizer:       ", f, "tokenizer.ggml.model");
    print_str("pre-tokenizer:   ", f, "tokenizer.ggml.pre");
    e0_tokenizer *t = e0_tokenizer_from_gguf(f, &e);
    if (t) {
        print_token("BOS:             ", t, e0_tok_bos(t));
        print_token("EOS:             ", t, e0_tok_eos(t));
    } else printf("BOS/EOS:         unknown (%s)\n", e.msg);
    e0_tokenizer_free(t);
    const gguf_string *ct;
    if (gguf_get_str(f, "tokenizer.chat_template", &ct, &e) == 1) printf("chat template:   yes (%llu bytes)\n", (unsigned long long)ct->len);
    else printf("chat template:   none (chat needs --chat-template-file; run uses the text as is)\n");
    print_residency(&o, hp);
    e0_model_free(m);
    return 0;
}
