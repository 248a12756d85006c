/* cmd_info.c — `info`: architecture (and what its row in engine/arch.h says its layers have),
 * hyperparameters, tensor types, parameter count, file size, KV cache bytes per token. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "quant/quant.h"

static const char *gating_name(enum e0_gating g) {
    switch (g) {
    case E0_GATING_SOFTMAX: return "softmax";
    }
    return "?";
}

int cmd_info(int argc, char **argv) {
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            puts("usage: edge0-infer info --model F\nPrints the architecture, hyperparameters, tensor count per type,\n"
                 "parameter count, file size and KV cache bytes per token; validates every tensor's presence and shape.");
            return 0;
        }
        if (!strcmp(argv[i], "--model") || !strcmp(argv[i], "-m")) {
            if (!(path = cli_value(argc, argv, &i))) return 1;
        } else return cli_error("info: unknown option '%s' (see --help)", argv[i]);
    }
    if (!path) return cli_error("info: --model is required");
    e0_err e;
    e0_model *m = e0_model_load(path, NULL, false, &e);
    if (!m) return cli_error("%s", e.msg);
    const e0_hparams *hp = &m->hp;
    const gguf_file *f = m->gguf;
    printf("file:            %s\n", f->path);
    printf("file size:       %llu bytes (%.2f GiB)\n", (unsigned long long)f->file_size, (double)f->file_size / (1 << 30));
    printf("gguf version:    %u (%llu tensors, %llu metadata keys)\n", f->version, (unsigned long long)f->n_tensors,
           (unsigned long long)f->n_kv);
    printf("architecture:    %s\n", hp->arch_name);
    if (hp->qkv_bias || hp->qk_norm)
        printf("attention:       %s%s%s\n", hp->qkv_bias ? "q/k/v biases" : "", hp->qkv_bias && hp->qk_norm ? ", " : "",
               hp->qk_norm ? "per-head q/k RMSNorm" : "");
    printf("layers:          %lld\n", (long long)hp->n_layer);
    printf("n_embd:          %lld\n", (long long)hp->n_embd);
    printf("heads:           %lld (kv %lld, head_dim %lld, rope dims %lld, %s)\n", (long long)hp->n_head,
           (long long)hp->n_head_kv, (long long)hp->head_dim, (long long)hp->n_rot, hp->rope_neox ? "neox" : "normal");
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
    }
    /* KV cache bytes per token (K and V rows of every layer) at the default types, and the others */
    printf("kv cache:        %llu bytes per token at f16 (the default; -ctk/-ctv:",
           (unsigned long long)e0_kv_bytes_per_pos(hp, E0_TYPE_F16, E0_TYPE_F16));
    const uint32_t others[] = {E0_TYPE_F32, E0_TYPE_BF16, E0_TYPE_Q8_0, E0_TYPE_Q4_0};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        if (e0_kv_check(hp, others[i], others[i], &e) == 0)
            printf(" %s %llu", e0_kv_type_name(others[i]), (unsigned long long)e0_kv_bytes_per_pos(hp, others[i], others[i]));
    printf(")\n");
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
    e0_model_free(m);
    return 0;
}
