/* quant.c — the tensor-type table and run-time kernel selection (see quant.h).
 * Per-type kernels live in quant_basic.c (float types, Q4_0..Q8_1) and quant_k.c (K-quants),
 * with SIMD versions in *_avx2.c / *_avx512.c, declared in quant_impl.h. */
#include "quant/quant.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant_impl.h"

static e0_type_traits table[E0_TYPE_COUNT] = {
    /* ---- float and legacy block types (quant_basic.c) ---- */
    [E0_TYPE_F32] = {.name = "f32", .block_size = 1, .type_size = 4, .weight_ok = 1, .vec_dot_type = E0_TYPE_F32},
    [E0_TYPE_F16] = {.name = "f16", .block_size = 1, .type_size = 2, .weight_ok = 1, .vec_dot_type = E0_TYPE_F32},
    [E0_TYPE_BF16] = {.name = "bf16", .block_size = 1, .type_size = 2, .weight_ok = 1, .vec_dot_type = E0_TYPE_F32},
    [E0_TYPE_Q4_0] = {.name = "q4_0", .block_size = 32, .type_size = 18, .is_quantized = 1, .weight_ok = 1, .vec_dot_type = E0_TYPE_Q8_0},
    [E0_TYPE_Q4_1] = {.name = "q4_1", .block_size = 32, .type_size = 20, .is_quantized = 1, .weight_ok = 1, .vec_dot_type = E0_TYPE_Q8_1},
    [E0_TYPE_Q5_0] = {.name = "q5_0", .block_size = 32, .type_size = 22, .is_quantized = 1, .weight_ok = 1, .vec_dot_type = E0_TYPE_Q8_0},
    [E0_TYPE_Q5_1] = {.name = "q5_1", .block_size = 32, .type_size = 24, .is_quantized = 1, .weight_ok = 1, .vec_dot_type = E0_TYPE_Q8_1},
    [E0_TYPE_Q8_0] = {.name = "q8_0", .block_size = 32, .type_size = 34, .is_quantized = 1, .weight_ok = 1, .vec_dot_type = E0_TYPE_Q8_0},
    [E0_TYPE_Q8_1] = {.name = "q8_1", .block_size = 32, .type_size = 36, .is_quantized = 1, .weight_ok = 0, .vec_dot_type = E0_TYPE_Q8_1},

    /* ---- K-quants (quant_k.c) ---- */
    [E0_TYPE_Q2_K] = {.name = "q2_K", .block_size = QK_K, .type_size = 84, .is_quantized = 1, .weight_ok = 1, .vec_dot_type = E0_TYPE_Q8_K},
    [E0_TYPE_Q3_K] = {.name = "q3_K", .block_size = QK_K, .type_size = 110, .is_quantized = 1, .weight_ok = 1, .vec_dot_type = E0_TYPE_Q8_K},
    [E0_TYPE_Q4_K] = {.name = "q4_K", .block_size = QK_K, .type_size = 144, .is_quantized = 1, .weight_ok = 1, .vec_dot_type = E0_TYPE_Q8_K},
    [E0_TYPE_Q5_K] = {.name = "q5_K", .block_size = QK_K, .type_size = 176, .is_quantized = 1, .weight_ok = 1, .vec_dot_type = E0_TYPE_Q8_K},
    [E0_TYPE_Q6_K] = {.name = "q6_K", .block_size = QK_K, .type_size = 210, .is_quantized = 1, .weight_ok = 1, .vec_dot_type = E0_TYPE_Q8_K},
    [E0_TYPE_Q8_K] = {.name = "q8_K", .block_size = QK_K, .type_size = 292, .is_quantized = 1, .weight_ok = 0, .vec_dot_type = E0_TYPE_Q8_K},
};

static int simd_level = E0_SIMD_SCALAR;

const e0_type_traits *e0_type_traits_of(uint32_t type) {
    if (type >= E0_TYPE_COUNT || !table[type].name) return NULL;
    return &table[type];
}

const char *e0_type_name(uint32_t type, char buf[32]) {
    const e0_type_traits *t = e0_type_traits_of(type);
    if (t) return t->name;
    snprintf(buf, 32, "type %u", type);
    return buf;
}

size_t e0_row_size(uint32_t type, int64_t n) {
    const e0_type_traits *t = e0_type_traits_of(type);
    if (!t || n < 0 || n % t->block_size) return 0;
    return (size_t)(n / t->block_size) * t->type_size;
}

/* clang before 16 rejects "f16c" in __builtin_cpu_supports; every AVX2 CPU has F16C. */
#if defined(__clang__) && __clang_major__ < 16
#define E0_CPU_HAS_F16C() __builtin_cpu_supports("avx2")
#else
#define E0_CPU_HAS_F16C() __builtin_cpu_supports("f16c")
#endif

void e0_quant_init(int max_level) {
    int level = E0_SIMD_SCALAR;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && E0_CPU_HAS_F16C())
        level = E0_SIMD_AVX2;
    if (level == E0_SIMD_AVX2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        level = E0_SIMD_AVX512;
    const char *env = getenv("E0_SIMD");
    if (env) {
        if (!strcmp(env, "scalar")) max_level = E0_SIMD_SCALAR;
        else if (!strcmp(env, "avx2") && max_level > E0_SIMD_AVX2) max_level = E0_SIMD_AVX2;
    }
    if (level > max_level) level = max_level;
    simd_level = level;
    e0_quant_register_basic(table);
    e0_quant_register_k(table);
    for (int i = 0; i < E0_TYPE_COUNT; i++) {
        e0_type_traits *t = &table[i];
        if (!t->name) continue;
        /* vec_dot_4 always comes from the same level as vec_dot (bit-identical results) */
        t->vec_dot = t->vec_dot_ref;
        t->vec_dot_4 = NULL;
        if (level >= E0_SIMD_AVX2 && t->vec_dot_avx2) {
            t->vec_dot = t->vec_dot_avx2;
            t->vec_dot_4 = t->vec_dot_4_avx2;
        }
        if (level >= E0_SIMD_AVX512 && t->vec_dot_avx512) {
            t->vec_dot = t->vec_dot_avx512;
            t->vec_dot_4 = t->vec_dot_4_avx512;
        }
        if (!t->from_float) t->from_float = t->from_float_ref;
    }
}

int e0_simd_level(void) { return simd_level; }

const char *e0_simd_name(int level) {
    switch (level) {
    case E0_SIMD_AVX512: return "avx512";
    case E0_SIMD_AVX2: return "avx2";
    default: return "scalar";
    }
}

/* ---- FP16 / BF16 scalar conversion ---- */
float e0_fp16_to_fp32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
    if (exp == 0) {
        if (mant == 0) bits = sign;
        else { /* subnormal: renormalize */
            exp = 127 - 15 + 1;
            while (!(mant & 0x400)) { mant <<= 1; exp--; }
            mant &= 0x3ff;
            bits = sign | (exp << 23) | (mant << 13);
        }
    } else if (exp == 31) bits = sign | 0x7f800000u | (mant << 13) | (mant ? 0x400000u : 0); /* NaN: quiet, as F16C */
    else bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t e0_fp32_to_fp16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t absx = x & 0x7fffffffu;
    if (absx > 0x7f800000u) return (uint16_t)(sign | 0x7e00 | ((absx >> 13) & 0x3ff)); /* NaN: quiet, payload kept as F16C */
    if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* overflow -> inf (rounds past 65504) */
    if (absx < 0x38800000u) { /* subnormal or zero in half */
        if (absx < 0x33000000u) return (uint16_t)sign; /* < half of smallest subnormal */
        uint32_t e = absx >> 23, m = (absx & 0x7fffff) | 0x800000;
        uint32_t shift = 126 - e; /* value = m * 2^(e-150); in units of 2^-24 */
        uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = ((absx >> 13) - (112u << 10)); /* rebias exponent: (127-15)=112 */
    uint32_t rem = absx & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) r++;
    return (uint16_t)(sign | r);
}

float e0_bf16_to_fp32(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t e0_fp32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 64); /* quiet NaN */
    return (uint16_t)((x + (0x7fff + ((x >> 16) & 1))) >> 16);
}
