/* quant.h — the one table of tensor types that drives all quantized code (ggml-style).
 *
 * Type ids and block layouts are those of ggml/GGUF, so files written by llama.cpp load
 * bit-for-bit. For each type the table gives its block size and bytes per block, how to
 * dequantize a row, how to quantize a row (reference quality, used by `synth` and tests), and a
 * dot product of a weight row with an activation row that was first converted to the type's
 * `vec_dot_type` (Q8_0/Q8_1/Q8_K blocks for quantized weights, F32 for float weights) — the
 * same scheme as llama.cpp, which is why our logits land within ~1e-5 of its own.
 *
 * Every dot product has a scalar reference (`vec_dot_ref`) and optional SIMD versions
 * (`vec_dot_avx2`, `vec_dot_avx512`); e0_quant_init() picks the best one the CPU supports into
 * `vec_dot`. Tests check every SIMD version against the reference. Some types also have a
 * 4-token `vec_dot_4` for prefill, which must equal its level's `vec_dot` bit for bit. */
#ifndef E0_QUANT_H
#define E0_QUANT_H

#include <stddef.h>
#include <stdint.h>

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
    E0_TYPE_BF16 = 30,
    E0_TYPE_COUNT = 40 /* table size; ids >= this are unknown */
};

#define QK_K 256 /* super-block size of the K-quants */

/* n is a number of elements (a multiple of block_size); x/y point at rows. */
typedef void (*e0_to_float_fn)(const void *src, float *dst, int64_t n);
typedef void (*e0_from_float_fn)(const float *src, void *dst, int64_t n);
typedef void (*e0_vec_dot_fn)(int64_t n, float *s, const void *w, const void *a);
/* One weight row against 4 activation rows: s[k * s_stride] = dot(w, a + k * a_stride) for
 * k = 0..3. Unpacks each weight block once for the 4 tokens (prefill); bit-identical to 4 calls
 * of the vec_dot of the same SIMD level, so results never depend on how tokens are batched. */
#define E0_DOT_TOKENS 4
typedef void (*e0_vec_dot_4_fn)(int64_t n, float *s, size_t s_stride, const void *w, const void *a, size_t a_stride);

typedef struct e0_type_traits {
    const char *name;     /* "q4_K" style, as ggml names it; NULL = unknown/unsupported id */
    int64_t block_size;   /* elements per block */
    size_t type_size;     /* bytes per block */
    int is_quantized;
    int weight_ok;        /* may appear as a model tensor type (Q8_1 and Q8_K may not) */
    int vec_dot_type;     /* type activations are converted to for vec_dot */
    e0_to_float_fn to_float;
    e0_from_float_fn from_float_ref; /* reference quantizer */
    e0_from_float_fn from_float;     /* fast quantizer for activations (may equal the reference) */
    e0_vec_dot_fn vec_dot_ref;       /* scalar reference */
    e0_vec_dot_fn vec_dot_avx2;      /* AVX2+FMA version, or NULL */
    e0_vec_dot_fn vec_dot_avx512;    /* AVX-512 version, or NULL */
    e0_vec_dot_fn vec_dot;           /* the one in use (set by e0_quant_init) */
    e0_vec_dot_4_fn vec_dot_4_avx2;   /* 4-token versions, or NULL; each matches the vec_dot */
    e0_vec_dot_4_fn vec_dot_4_avx512; /* of its own level bit for bit */
    e0_vec_dot_4_fn vec_dot_4;        /* the one matching `vec_dot`, or NULL (then loop vec_dot) */
} e0_type_traits;

/* Traits of a type id, or NULL if the id is unknown to this engine. */
const e0_type_traits *e0_type_traits_of(uint32_t type);
/* Name for messages: the table name, or "type <id>" for an unknown one (static buffer per call
 * site is not needed: writes into buf). */
const char *e0_type_name(uint32_t type, char buf[32]);
/* Bytes of a row of n elements of `type`; 0 if n is not a multiple of the block size. */
size_t e0_row_size(uint32_t type, int64_t n);

/* SIMD level picked at run time. */
enum e0_simd { E0_SIMD_SCALAR = 0, E0_SIMD_AVX2 = 1, E0_SIMD_AVX512 = 2 };
/* Detect the CPU (CPUID) and fill `vec_dot`. `max_level` caps it (tests, E0_SIMD env var). */
void e0_quant_init(int max_level);
int e0_simd_level(void);
const char *e0_simd_name(int level);

/* FP16/BF16 scalar conversion, exact (round-to-nearest-even like ggml). */
float e0_fp16_to_fp32(uint16_t h);
uint16_t e0_fp32_to_fp16(float f);
float e0_bf16_to_fp32(uint16_t h);
uint16_t e0_fp32_to_bf16(float f);

#endif
