/* quant.h — the one table of tensor types that drives all quantized code (ggml-style).
 *
 * Type ids and block layouts are those of ggml/GGUF, so files written by llama.cpp load
 * bit-for-bit. For each type the table gives its block size and bytes per block, how to
 * dequantize a row, how to quantize a row (reference quality, used by `synth` and tests), and a
 * dot product of a weight row with an activation row that was first converted to the type's
 * `vec_dot_type` (Q8_0/Q8_1/Q8_K blocks for quantized weights, F32 for float weights) — the
 * same scheme as llama.cpp, which is why our logits land within ~1e-5 of its own.
 *
 * The table is const and complete at compile time. Its kernel columns hold one entry per SIMD
 * level: [E0_SIMD_SCALAR] is the scalar reference, higher levels hold SIMD versions or NULL. Which
 * ones run is decided once per process from the CPU-feature probe (base/cpu.h):
 * e0_kernels_of() gives them, with no init call. Tests check every SIMD version against the
 * reference; a type's 4-token `vec_dot_4` and its rows x tokens `gemm` (prefill) must equal its
 * level's `vec_dot` bit for bit. */
#ifndef E0_QUANT_H
#define E0_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/kernel.h"

enum e0_type {
    E0_TYPE_F32 = 0,
    E0_TYPE_F16 = 1,
    E0_TYPE_Q4_0 = 2,
    E0_TYPE_Q4_1 = 3,
    /* 4 and 5 were Q4_2 / Q4_3, removed from ggml */
    E0_TYPE_Q5_0 = 6,
    E0_TYPE_Q5_1 = 7,
    E0_TYPE_Q8_0 = 8,
    E0_TYPE_Q8_1 = 9,
    E0_TYPE_Q2_K = 10,
    E0_TYPE_Q3_K = 11,
    E0_TYPE_Q4_K = 12,
    E0_TYPE_Q5_K = 13,
    E0_TYPE_Q6_K = 14,
    E0_TYPE_Q8_K = 15,
    E0_TYPE_IQ2_XXS = 16,
    E0_TYPE_IQ2_XS = 17,
    E0_TYPE_IQ1_S = 19,
    E0_TYPE_IQ2_S = 22,
    E0_TYPE_IQ1_M = 29,
    E0_TYPE_IQ3_XXS = 18,
    E0_TYPE_IQ3_S = 21,
    E0_TYPE_BF16 = 30,
    /* non-linear 4-bit and FP4 (quant_iq4.c), ternary and 1/2-bit (quant_tern.c) */
    E0_TYPE_IQ4_NL = 20,
    E0_TYPE_IQ4_XS = 23,
    E0_TYPE_TQ1_0 = 34,
    E0_TYPE_TQ2_0 = 35,
    E0_TYPE_MXFP4 = 39,
    E0_TYPE_NVFP4 = 40,
    E0_TYPE_Q1_0 = 41,
    E0_TYPE_Q2_0 = 42,
    /* engine-internal (weight_ok = 0: never a file's tensor type): q4_K repacked at load for the
     * AVX2 kernels, and its activation type (quant_kx.h) */
    E0_TYPE_Q4_KX = 43,
    E0_TYPE_Q8_KX = 44,
    E0_TYPE_Q6_KX = 45, /* q6_K repacked (same bits as q6_K), its activations Q8_KP */
    E0_TYPE_Q8_KP = 46,
    /* the same for the AVX-512 VNNI kernels (quant_kv.h): q4_K, q6_K repacked, activations Q8_KV */
    E0_TYPE_Q4_KV = 47,
    E0_TYPE_Q6_KV = 48,
    E0_TYPE_Q8_KV = 49,
    E0_TYPE_COUNT = 50 /* table size; ids >= this are unknown */
};

/* SIMD levels, each including the ones below it:
 *  AVX2   AVX2 + FMA + F16C
 *  AVX512 AVX-512 F/BW/VL/DQ + VNNI (every AVX-512 kernel here uses VNNI) */
enum e0_simd { E0_SIMD_SCALAR = 0, E0_SIMD_AVX2 = 1, E0_SIMD_AVX512 = 2, E0_SIMD_LEVELS = 3 };

typedef struct e0_type_traits {
    const char *name;     /* "q4_K" style, as ggml names it; NULL = unknown/unsupported id */
    int64_t block_size;   /* elements per block */
    size_t type_size;     /* bytes per block */
    int is_quantized;
    int weight_ok;        /* may appear as a model tensor type (Q8_1 and Q8_K may not) */
    int vec_dot_type;     /* type activations are converted to for vec_dot */
    e0_to_float_fn to_float;
    e0_from_float_fn from_float_ref;                /* reference quantizer */
    /* Per SIMD level (NULL = none at that level): */
    e0_from_float_fn from_float[E0_SIMD_LEVELS];   /* fast activation quantizer; none at all = from_float_ref */
    e0_vec_dot_fn vec_dot[E0_SIMD_LEVELS];         /* [E0_SIMD_SCALAR] = the scalar reference */
    e0_vec_dot_4_fn vec_dot_4[E0_SIMD_LEVELS];     /* 4 tokens; matches vec_dot of its level bit for bit */
    e0_gemm_fn gemm[E0_SIMD_LEVELS];               /* 1..E0_GEMM_TOKENS tokens; same bits as vec_dot */
    int gemm_tokens[E0_SIMD_LEVELS];               /* that gemm takes up to this many tokens a call
                                                      (E0_GEMM_TOKENS..E0_GEMM_TOKENS_MAX; 0: E0_GEMM_TOKENS) */
} e0_type_traits;

/* Traits of a type id, or NULL if the id is unknown to this engine. */
const e0_type_traits *e0_type_traits_of(uint32_t type);
/* Name for messages: the table name, or "type <id>" for an unknown one (written into buf). */
const char *e0_type_name(uint32_t type, char buf[32]);
/* Bytes of a row of n elements of `type`; 0 if n is not a multiple of the block size. */
size_t e0_row_size(uint32_t type, int64_t n);

/* The kernels that run for one type: the best level's vec_dot, the vec_dot_4 of that same level
 * (NULL: loop vec_dot) and the best activation quantizer. */
typedef struct e0_kernels {
    e0_vec_dot_fn vec_dot;
    e0_vec_dot_4_fn vec_dot_4;
    e0_from_float_fn from_float;
    e0_gemm_fn gemm; /* of vec_dot's level too (NULL: use vec_dot_4) */
    int gemm_tokens; /* the most tokens one gemm call takes (>= E0_GEMM_TOKENS) */
} e0_kernels;

/* The kernels a table row has at `level` or below (tests and benchmarks compare levels). */
e0_kernels e0_kernels_at(const e0_type_traits *t, int level);
/* The kernels a process at `level` uses for a row: e0_kernels_at(row, level), or those of the
 * highest lower level with a prefill GEMM when `level` has none (never vec_dot_4 in place of a
 * GEMM; all three from one level, so batched equals single). */
e0_kernels e0_kernels_in_use(const e0_type_traits *t, int level);
/* The kernels this process uses for `type`: e0_kernels_in_use(row, e0_simd_level()), resolved on
 * the first call from any thread. NULL if the id is unknown. */
const e0_kernels *e0_kernels_of(uint32_t type);

/* The best level allowed by a set of base/cpu.h features, and the one this process uses
 * (from e0_cpu_features(), so E0_SIMD=scalar / avx2 caps it). */
int e0_simd_level_for(unsigned cpu_features);
int e0_simd_level(void);

/* Load-time repacking: the type a weight of file type `type` is kept in when the engine may
 * repack it — q4_K / q6_K become q4_KX / q6_KX where the SIMD level in use is AVX2 (quant_kx.h),
 * q4_KV / q6_KV at the AVX-512 level (quant_kv.h); at the scalar level, and for every other
 * type, the file's type. */
uint32_t e0_repack_type(uint32_t type);
/* Converts `bytes` of whole blocks from file type `from` to e0_repack_type(from), in place. */
void e0_repack(uint32_t from, void *data, size_t bytes);
const char *e0_simd_name(int level);

#endif
