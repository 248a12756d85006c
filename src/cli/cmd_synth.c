/* cmd_synth.c — `edge0-infer synth`: parse and check the flags, then write a random-weight GGUF
 * with synth_write(). Flags may come in any order: a --shape sets every dimension first, then
 * each explicit --n-* flag overrides its value. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "quant/quant.h"
#include "synth/synth.h"

static void usage(FILE *f) {
    char archs[256];
    fprintf(f,
            "usage: edge0-infer synth --arch %s --out FILE [options]\n"
            "  --type T              weight type: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k\n"
            "                        iq4_nl iq4_xs mxfp4 nvfp4 tq1_0 tq2_0 q1_0 q2_0\n"
            "                        iq3_xxs iq3_s (default q4_k; a tensor whose rows do not fit T falls back as\n"
            "                        llama.cpp does)\n"
            "  --type-map 'RE=T,...' per-tensor types: POSIX extended regexes searched in the GGUF tensor name,\n"
            "                        first match wins, the rest takes --type (or --ftype's recipe), e.g.\n"
            "                        'ffn_(gate|up)_exps=iq2_xxs,ffn_down_exps=iq3_xxs,attn_.*=q4_k,output=q6_k'\n"
            "  --ftype F             llama.cpp's file type and its per-tensor recipe (as llama-quantize makes it):\n"
            "                        %s\n"
            "  --print-types         list each tensor and its type, write nothing\n"
            "  --shape S             %s (default tiny)\n"
            "  --n-layer --n-embd --n-head --n-head-kv --head-dim --n-ff --n-expert --n-expert-used\n"
            "  --n-ff-exp --n-ff-shexp --n-vocab --n-ctx N     override one dimension of the shape\n"
            "  --rope-base F --rms-eps F                       override RoPE base / RMSNorm epsilon\n"
            "  --n-swa N --swa-period N                        gpt-oss: sliding window, SWA layer pattern\n"
            "  --yarn-factor F --yarn-orig-ctx N               gpt-oss, deepseek2: YaRN RoPE scaling (factor 0: none)\n"
            "  deepseek2: --head-dim is nope + rope per head; --n-rot --head-dim-v --kv-lora-rank --q-lora-rank (0: none)\n"
            "    --n-dense-lead --n-expert-shared --n-expert-groups --n-group-used --exp-probs-b 0|1\n"
            "    --expert-weights-norm 0|1 --gating softmax|sigmoid --expert-weights-scale F\n"
            "    --yarn-log-mul F; --n-ctx-orig N (= --yarn-orig-ctx; 0: n_ctx)\n"
            "  --n-rot --ssm-conv --ssm-state --ssm-groups --ssm-heads --full-attn-interval N\n"
            "                        hybrid architectures (qwen35*, qwen3next): RoPE dims, DeltaNet conv kernel,\n"
            "                        head size, key heads, value heads, every N-th layer full attention\n"
            "  glm4moe: deepseek2's --n-dense-lead --n-expert-shared --n-expert-groups --n-group-used\n"
            "    --expert-weights-norm --gating --expert-weights-scale; --n-rot N (partial RoPE);\n"
            "    --omit-qk-norm 1 (no per-head q/k norms, as GLM-4.5-Air)\n"
            "  --mtp                 hybrid architectures, glm4moe: one MTP (NextN draft) block after the layers\n"
            "  --layer-arrays        feed_forward_length, head counts, expert_used_count, expert_feed_forward_length\n"
            "                        written as per-layer arrays (equal entries)\n"
            "  --swa-pattern-array   gpt-oss: sliding_window_pattern as one bool per layer (of --swa-period)\n"
            "  --seed S              weights and nothing else depend on it (default 1)\n"
            "  --name NAME           general.name (default synth-<arch>)\n"
            "  --chat-template-file T  store T as tokenizer.chat_template\n"
            "  --tied                no output.weight (the output reuses token_embd.weight)\n"
            "  --quantize            quantized types: draw float weights and run the reference quantizer\n"
            "                        (codes like llama-quantize's, but ~200 ns/weight for K-quants: hours for\n"
            "                        a 30B model). Default: draw the quantized blocks directly (random codes and\n"
            "                        sub-block scales with the same mean/std; 0.2-1.5 ns/weight, disk-bound)\n"
            "  --threads N           generation/quantization threads (default 2)\n"
            "  --progress            progress on stderr even when it is not a terminal\n",
            e0_arch_list("|", archs, sizeof archs), synth_ftype_names(), synth_shape_names());
}

/* One tensor's planned type (--print-types). */
static void print_type(void *arg, const char *name, uint32_t type) {
    (void)arg;
    printf("%s %s\n", name, synth_ggml_type_name(type));
}

/* The integer dimension flags and where each goes. */
typedef struct dim_flag {
    const char *flag;
    size_t offset;
    int64_t lo, hi;
} dim_flag;

#define DIM(f, field, lo, hi) {f, offsetof(synth_params, field), lo, hi}
static const dim_flag dims[] = {
    DIM("--n-layer", n_layer, 1, 512),         DIM("--n-embd", n_embd, 1, 65536),
    DIM("--n-head", n_head, 1, 1024),          DIM("--n-head-kv", n_head_kv, 1, 1024),
    DIM("--head-dim", head_dim, 2, 1024),      DIM("--n-ff", n_ff, 1, 1 << 20),
    DIM("--n-expert", n_expert, 0, 512),       DIM("--n-expert-used", n_expert_used, 0, 512),
    DIM("--n-ff-exp", n_ff_exp, 0, 1 << 20),   DIM("--n-ff-shexp", n_ff_shexp, 0, 1 << 20),
    DIM("--n-vocab", n_vocab, 260, 1 << 22),   DIM("--n-ctx", n_ctx, 1, 1 << 24),
    DIM("--n-swa", n_swa, 1, INT32_MAX),       DIM("--swa-period", swa_period, 1, 512),
    DIM("--yarn-orig-ctx", yarn_orig_ctx, 1, INT32_MAX),
    /* deepseek2 */
    DIM("--n-dense-lead", n_layer_dense_lead, 0, 512), DIM("--n-expert-shared", n_expert_shared, 0, 64),
    DIM("--q-lora-rank", q_lora_rank, 0, 65536),   DIM("--kv-lora-rank", kv_lora_rank, 1, 65536),
    DIM("--head-dim-v", head_dim_v, 1, 1024), /* --n-rot: with the hybrids' below */
    DIM("--n-expert-groups", n_expert_groups, 0, 512), DIM("--n-group-used", n_group_used, 0, 512),
    DIM("--exp-probs-b", exp_probs_b, 0, 1),       DIM("--expert-weights-norm", expert_weights_norm, 0, 1),
    DIM("--omit-qk-norm", omit_qk_norm, 0, 1), /* glm4moe */
    DIM("--n-ctx-orig", yarn_orig_ctx, 0, 1 << 24), /* = --yarn-orig-ctx (0: n_ctx) */
    /* hybrid architectures (--n-rot: deepseek2's rope dims too) */
    DIM("--n-rot", n_rot, 0, 1024),            DIM("--ssm-conv", ssm_d_conv, 2, 64),
    DIM("--ssm-state", ssm_d_state, 1, 1024),  DIM("--ssm-groups", ssm_n_group, 1, 1024),
    DIM("--ssm-heads", ssm_dt_rank, 1, 1024),  DIM("--full-attn-interval", full_attn_interval, 1, 512),
};
#define N_DIMS (sizeof dims / sizeof dims[0])

int cmd_synth(int argc, char **argv) {
    const char *arch = NULL, *out = NULL, *type = NULL, *shape = NULL, *seed = NULL, *tmpl_path = NULL, *name = NULL;
    const char *threads = NULL, *rope = NULL, *eps = NULL, *dim_val[N_DIMS] = {0}, *type_map = NULL, *ftype = NULL;
    const char *gating = NULL, *w_scale = NULL, *yarn = NULL, *yarn_mul = NULL; /* deepseek2 */
    int show_progress = isatty(2), tied = 0, quantize = 0, mtp = 0, print_types = 0, layer_arrays = 0, swa_array = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], **slot = NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--progress")) {
            show_progress = 1;
            continue;
        }
        if (!strcmp(a, "--tied")) {
            tied = 1;
            continue;
        }
        if (!strcmp(a, "--quantize")) {
            quantize = 1;
            continue;
        }
        if (!strcmp(a, "--print-types")) {
            print_types = 1;
            continue;
        }
        if (!strcmp(a, "--mtp")) {
            mtp = 1;
            continue;
        }
        if (!strcmp(a, "--swa-pattern-array")) {
            swa_array = 1;
            continue;
        }
        if (!strcmp(a, "--layer-arrays")) {
            layer_arrays = 1;
            continue;
        }
        if (!strcmp(a, "--arch")) slot = &arch;
        else if (!strcmp(a, "--out")) slot = &out;
        else if (!strcmp(a, "--type")) slot = &type;
        else if (!strcmp(a, "--type-map")) slot = &type_map;
        else if (!strcmp(a, "--ftype")) slot = &ftype;
        else if (!strcmp(a, "--shape")) slot = &shape;
        else if (!strcmp(a, "--seed")) slot = &seed;
        else if (!strcmp(a, "--chat-template-file")) slot = &tmpl_path;
        else if (!strcmp(a, "--name")) slot = &name;
        else if (!strcmp(a, "--threads")) slot = &threads;
        else if (!strcmp(a, "--rope-base")) slot = &rope;
        else if (!strcmp(a, "--rms-eps")) slot = &eps;
        else if (!strcmp(a, "--yarn-factor")) slot = &yarn;
        else if (!strcmp(a, "--gating")) slot = &gating;
        else if (!strcmp(a, "--expert-weights-scale")) slot = &w_scale;
        else if (!strcmp(a, "--yarn-log-mul")) slot = &yarn_mul;
        else
            for (size_t d = 0; d < N_DIMS; d++)
                if (!strcmp(a, dims[d].flag)) slot = &dim_val[d];
        if (!slot) {
            cli_error("synth: unknown option '%s'", a);
            usage(stderr);
            return 1;
        }
        if (*slot) return cli_error("synth: %s given twice", a);
        if (!(*slot = cli_value(argc, argv, &i))) return 1;
    }
    char archs[256];
    e0_arch_list(", ", archs, sizeof archs);
    if (!arch) return cli_error("synth: --arch is required (%s)", archs);
    if (!print_types && (!out || !*out)) return cli_error("synth: --out FILE is required");
    struct stat sb;
    if (out && stat(out, &sb) == 0 && S_ISDIR(sb.st_mode)) return cli_error("synth: --out %s is a directory", out);

    synth_params p = {0};
    e0_err e = {{0}};
    const e0_arch_info *ai = e0_arch_by_name(arch);
    if (!ai) return cli_error("synth: unknown architecture '%s' (%s)", arch, archs);
    p.arch = ai->arch;
    if (synth_shape_apply(&p, shape ? shape : "tiny", &e)) return cli_error("synth: --shape: %s", e.msg);
    if (type && ftype) return cli_error("synth: give --type or --ftype, not both");
    int t = synth_type_from_name(type ? type : "q4_k");
    if (t < 0 && synth_ggml_type_from_name(type) >= 0) return cli_error("synth: --type: type %s not supported yet", type);
    if (t < 0)
        return cli_error("synth: --type: unknown type '%s' (f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k iq3_xxs iq3_s)",
                         type);
    p.type = (uint32_t)t;
    if (ftype) {
        int f = synth_ftype_from_name(ftype);
        if (f < 0) return cli_error("synth: --ftype: unknown file type '%s' (%s)", ftype, synth_ftype_names());
        p.use_ftype = 1;
        p.ftype = f;
        /* the plain type (for messages and the default path) is the recipe's default when supported */
        const uint32_t d = synth_ftype_default_type(f);
        if (synth_type_from_name(synth_ggml_type_name(d)) >= 0) p.type = d;
    }
    for (size_t d = 0; d < N_DIMS; d++) {
        int64_t v;
        if (!dim_val[d]) continue;
        if (e0_parse_i64(dim_val[d], dims[d].lo, dims[d].hi, &v, dims[d].flag, &e)) return cli_error("synth: %s", e.msg);
        *(int64_t *)((char *)&p + dims[d].offset) = v;
    }
    int64_t v;
    p.seed = 1;
    if (seed) {
        if (e0_parse_i64(seed, 0, INT64_MAX, &v, "--seed", &e)) return cli_error("synth: %s", e.msg);
        p.seed = (uint64_t)v;
    }
    p.n_threads = 2;
    if (threads) {
        if (e0_parse_i64(threads, 1, 256, &v, "--threads", &e)) return cli_error("synth: %s", e.msg);
        p.n_threads = (int)v;
    }
    if (rope && e0_parse_f64(rope, 1e-3, 1e12, &p.rope_base, "--rope-base", &e)) return cli_error("synth: %s", e.msg);
    if (eps && e0_parse_f64(eps, 1e-12, 1, &p.rms_eps, "--rms-eps", &e)) return cli_error("synth: %s", e.msg);
    if (gating && strcmp(gating, "softmax") && strcmp(gating, "sigmoid"))
        return cli_error("synth: --gating: '%s' is not softmax or sigmoid", gating);
    if (gating) p.gating_sigmoid = !strcmp(gating, "sigmoid");
    if (w_scale && e0_parse_f64(w_scale, 0, 1e5, &p.expert_weights_scale, "--expert-weights-scale", &e))
        return cli_error("synth: %s", e.msg);
    /* gpt-oss: up to 1024 (synth_validate), deepseek2: up to 1e5 */
    if (yarn && e0_parse_f64(yarn, 0, ai->mla ? 1e5 : 1024, &p.yarn_factor, "--yarn-factor", &e))
        return cli_error("synth: %s", e.msg);
    if (yarn_mul && e0_parse_f64(yarn_mul, 0, 10, &p.yarn_log_mul, "--yarn-log-mul", &e)) return cli_error("synth: %s", e.msg);
    if ((gating && !ai->mla && !ai->ds_routing && !ai->gating_key) || (w_scale && !ai->mla && !ai->ds_routing) ||
        (yarn_mul && !ai->mla))
        return cli_error("synth: --gating applies to deepseek2, glm4moe and minimax-m2, --expert-weights-scale to "
                         "deepseek2 and glm4moe, --yarn-log-mul to deepseek2");
    p.name = name;
    p.tied_output = tied;
    p.quantize = quantize;
    p.mtp = mtp;
    p.layer_arrays = layer_arrays;
    p.swa_pattern_array = swa_array;
    p.progress = show_progress;
    if (synth_validate(&p, &e)) return cli_error("synth: %s", e.msg);

    char *tmpl = NULL;
    if (tmpl_path) {
        size_t len;
        if (!(tmpl = e0_read_file(tmpl_path, 1 << 20, &len, &e))) return cli_error("synth: --chat-template-file: %s", e.msg);
        if (strlen(tmpl) != len) {
            free(tmpl);
            return cli_error("synth: --chat-template-file: %s contains a NUL byte", tmpl_path);
        }
        p.chat_template = tmpl;
    }
    synth_type_map *tmap = NULL;
    if (type_map && synth_type_map_parse(type_map, &tmap, &e)) {
        free(tmpl);
        return cli_error("synth: %s", e.msg);
    }
    p.type_map = tmap;
    synth_stats st;
    int rc = print_types ? synth_list_types(&p, print_type, NULL, &e) : synth_write(&p, out, &st, &e);
    free(tmpl);
    synth_type_map_free(tmap);
    if (rc) return cli_error("synth: %s", e.msg);
    if (print_types) return 0;
    char tb[32];
    if (st.n_fallback && !tmap && !p.use_ftype)
        fprintf(stderr, "edge0-infer: synth: note: %llu tensors with rows that are not whole %s blocks were stored in a fallback type\n",
                (unsigned long long)st.n_fallback, e0_type_name(p.type, tb));
    printf("wrote %s: %s, %llu tensors, %.2f M parameters, %.1f MiB of tensor data, %s, %.1f s\n", out,
           ai->name, (unsigned long long)st.n_tensors, (double)st.n_params * 1e-6,
           (double)st.data_bytes / 1048576.0, tmap || p.use_ftype ? (ftype ? ftype : "per-tensor types") : e0_type_name(p.type, tb),
           st.seconds);
    return 0;
}
