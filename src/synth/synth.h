/* synth.h — deterministic random-weight GGUF models (`edge0-infer synth`).
 *
 * A synth model has exactly the tensor names, shapes and metadata llama.cpp expects for its
 * architecture (any row of the table in engine/arch.h: llama, qwen2, qwen3, qwen2moe, qwen3moe,
 * gpt-oss),
 * a usable tokenizer (the row's kind: SentencePiece-style for llama, byte-level BPE for qwen*),
 * and weights drawn from a counter-based PRNG keyed by (seed, tensor name, element index): any
 * tensor, any row, can be generated on its own, so the file is written streaming, in parallel,
 * with identical bytes for identical parameters.
 *
 * Quantized weights are by default drawn directly as blocks (random codes, random sub-block
 * scales and mins, an fp16 scale giving the intended std after dequantization): 0.2-1.5 ns per
 * weight, so a 30 B-parameter Q4_K model is limited by the disk, not the CPU. The alternative
 * (`quantize`: float weights through the type's reference quantizer, as llama-quantize would
 * store them) costs ~200 ns per weight for the K-quants — hours for such a model — and only
 * matters when the codes must look like those of a real quantizer (e.g. quantization-error
 * studies). F32/F16/BF16 weights are always generated as floats. */
#ifndef E0_SYNTH_H
#define E0_SYNTH_H

#include <stdint.h>

#include "base/util.h"
#include "engine/arch.h"

typedef struct synth_params {
    enum e0_arch arch;
    uint32_t type; /* e0_type of the weight matrices (per-tensor fallback when a row does not fit) */
    int64_t n_layer, n_embd, n_head, n_head_kv, head_dim, n_ff;
    int64_t n_expert, n_expert_used, n_ff_exp, n_ff_shexp; /* n_ff_exp: archs whose experts have their own
                                                              width; n_ff_shexp: with a shared expert */
    int64_t n_vocab, n_ctx;
    double rope_base, rms_eps;
    uint64_t seed;
    const char *name;          /* general.name; NULL = "synth-<arch>" */
    const char *chat_template; /* tokenizer.chat_template contents, or NULL */
    int tied_output;           /* no output.weight: the output reuses token_embd.weight */
    int quantize;              /* 1: quantized types from float weights via the reference quantizer
                                  (slow); 0 (default): blocks drawn directly */
    int n_threads;             /* generation/quantization threads (>= 1) */
    /* gpt-oss (architectures whose row has swa_period / rope_scaling; 0 elsewhere; deepseek2 uses
     * the yarn fields too) */
    int64_t n_swa;             /* attention.sliding_window (required there) */
    int64_t swa_period;        /* attention.sliding_window_pattern; 0: not written (the arch's default) */
    double yarn_factor;        /* rope.scaling.type yarn with this factor; 0: no rope.scaling keys */
    int64_t yarn_orig_ctx;     /* rope.scaling.original_context_length; 0: not written */
    /* Per-tensor types (synth_recipe.c): type_map's rules first, then the llama.cpp recipe of
     * ftype (when use_ftype), else `type`; NULL / 0: every matrix is `type` (the plain path). */
    const struct synth_type_map *type_map;
    int use_ftype, ftype;      /* ftype: a llama_ftype value (synth_ftype_from_name) */
    int progress;              /* print progress lines on stderr */
    /* deepseek2 (0 = the shape's value where one applies). head_dim is the per-head key width
     * nope + n_rot there; the file's key_length is kv_lora_rank + n_rot. */
    int64_t n_layer_dense_lead, n_expert_shared, q_lora_rank, kv_lora_rank, head_dim_v; /* and n_rot (below) */
    int64_t n_expert_groups, n_group_used;
    int64_t gating_sigmoid;    /* 1: sigmoid scores (expert_gating_func 2), 0: softmax (1) */
    int64_t exp_probs_b;       /* 1: write the routing correction biases blk.N.exp_probs_b.bias */
    int64_t expert_weights_norm; /* 1: renormalize the selected weights */
    int64_t omit_qk_norm;      /* archs with optional per-head q/k norms (glm4moe): 1 = do not write them */
    double expert_weights_scale; /* routed scaling factor (0: key not written) */
    /* (yarn_factor: > 0: rope.scaling.type yarn; yarn_orig_ctx: 0 writes n_ctx) */
    double yarn_log_mul;       /* rope.scaling.yarn_log_multiplier as the converter writes it (0.1 * mscale_all_dim) */
    /* hybrid architectures (qwen35, qwen35moe, qwen3next; 0 elsewhere) */
    int64_t n_rot;             /* rope.dimension_count (partial RoPE; deepseek2: the rope dims); 0 = head_dim */
    int64_t ssm_d_conv, ssm_d_state, ssm_n_group, ssm_dt_rank; /* conv kernel, DeltaNet head size,
                                                                  key heads, value heads */
    int64_t full_attn_interval; /* every this-many-th layer is full attention */
    int mtp;                   /* 1: one MTP (NextN draft) block after the layers, as the converter
                                  writes it (nextn_predict_layers 1); the engine ignores it */
    int layer_arrays;          /* 1: feed_forward_length, head_count(_kv), expert_used_count and
                                  expert_feed_forward_length as arrays of one (equal) entry per
                                  block, the form llama.cpp's get_key_or_arr also reads */
    int swa_pattern_array;     /* gpt-oss: 1: attention.sliding_window_pattern as an array of one
                                  bool per layer (true: sliding window), the layers of swa_period
                                  (else the arch's default), as gguf-py writes layer types */
} synth_params;

/* What synth_write did. */
typedef struct synth_stats {
    uint64_t n_tensors;
    uint64_t n_params;
    uint64_t data_bytes;   /* tensor bytes written (without header or padding) */
    uint64_t n_fallback;   /* tensors stored in another type because their rows did not fit */
    double seconds;
} synth_stats;

/* "q4_k"/"Q4_K" ... -> e0_type id; -1 if not a weight type synth can write. */
int synth_type_from_name(const char *name);

/* Fill every dimension from a named shape ("tiny", "qwen3-30b-a3b", "mixtral-8x7b",
 * "qwen1.5-moe-a2.7b", "qwen3.5-35b-a3b" (hybrid: its DeltaNet sizes too)) with the defaults of p->arch's row (rope base and eps when the shape
 * has none). Dense architectures get n_expert = 0 whatever the shape says; "tiny" stays dense
 * for architectures where experts are optional. */
int synth_shape_apply(synth_params *p, const char *shape, e0_err *e);
/* Comma-separated list of shape names, for messages. */
const char *synth_shape_names(void);

/* Check every field (ranges, divisibility, consistency between arch and experts). */
int synth_validate(const synth_params *p, e0_err *e);

/* The type a tensor with rows of `row_len` elements gets when `want` is requested: `want` if the
 * row is a whole number of blocks, else llama.cpp's fallback (Q4_K->Q5_0, Q5_K->Q5_1,
 * Q6_K->Q8_0, Q2_K/Q3_K->Q4_0, IQ3_XXS/IQ3_S->IQ4_NL, or Q4_0 while IQ4_NL is not in the type
 * table), else F16. */
uint32_t synth_fallback_type(uint32_t want, int64_t row_len);

/* ---- per-tensor types (synth_recipe.c) ---- */
/* 'REGEX=TYPE,...': POSIX extended regexes searched in the GGUF tensor name, first match wins;
 * TYPE any ggml type name (q4_K, iq2_xxs, mxfp4 ...; case-insensitive). One error for a bad
 * regex, a missing '=' or an unknown type. */
typedef struct synth_type_map synth_type_map;
int synth_type_map_parse(const char *spec, synth_type_map **out, e0_err *e);
void synth_type_map_free(synth_type_map *m);
/* llama.cpp file types by name ("Q4_K_M", "iq3_xxs", "MXFP4_MOE" ...): the llama_ftype value, or -1. */
int synth_ftype_from_name(const char *name);
const char *synth_ftype_names(void); /* space-separated, for messages */
uint32_t synth_ftype_default_type(int ftype); /* llama.cpp's default tensor type of a file type */
/* ggml's name of any ggml type id (also those this engine does not support yet), or "unknown";
 * and back (-1 if unknown). */
const char *synth_ggml_type_name(uint32_t type);
int synth_ggml_type_from_name(const char *name);
/* The tensors synth would write for p, with their types (ggml ids, maybe unsupported ones), in
 * file order: cb(arg, name, type) for each. For --print-types and the tests. */
int synth_list_types(const synth_params *p, void (*cb)(void *arg, const char *name, uint32_t type), void *arg, e0_err *e);

/* Value of llama.cpp's general.file_type for an all-`type` model. */
uint32_t synth_file_type(uint32_t type);

/* Validate and write the model to `path` (streaming; p->n_threads workers). The file appears
 * only when complete (the writer renames "<path>.partial"); on failure nothing is left. */
int synth_write(const synth_params *p, const char *path, synth_stats *st, e0_err *e);

#endif
