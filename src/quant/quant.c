/* quant.c — the tensor-type table and the choice of the kernels that run (see quant.h).
 * The kernels themselves live in quant_basic.c (float types, Q4_0..Q8_1), quant_k.c (K-quants),
 * quant_iq3.c (IQ3_XXS, IQ3_S), quant_kx.c (q4_K repacked) and x86/ (SIMD versions); they use nothing from this file. */
#include "quant/quant.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>

#include "base/cpu.h"
#include "quant/gemm.h"
#include "quant/quant_basic.h"
#include "quant/quant_iq2.h"
#include "quant/quant_iq4.h"
#include "quant/quant_iq3.h"
#include "quant/quant_k.h"
#include "quant/quant_kv.h"
#include "quant/quant_kx.h"
#include "quant/quant_tern.h"

/* Kernel columns list their levels in order: scalar, avx2, avx512. */
static const e0_type_traits table[E0_TYPE_COUNT] = {
    /* ---- float types (quant_basic.c) ---- */
    [E0_TYPE_F32] = {
        .name = "f32", .block_size = 1, .type_size = sizeof(float), .weight_ok = 1, .vec_dot_type = E0_TYPE_F32,
        .to_float = e0_f32_to_float, .from_float_ref = e0_f32_from_float,
        .vec_dot = {e0_vec_dot_f32_ref, e0_vec_dot_f32_avx2, e0_vec_dot_f32_avx512},
    },
    [E0_TYPE_F16] = {
        .name = "f16", .block_size = 1, .type_size = sizeof(uint16_t), .weight_ok = 1, .vec_dot_type = E0_TYPE_F32,
        .to_float = e0_f16_to_float, .from_float_ref = e0_f16_from_float,
        .vec_dot = {e0_vec_dot_f16_ref, e0_vec_dot_f16_avx2, e0_vec_dot_f16_avx512},
    },
    [E0_TYPE_BF16] = {
        .name = "bf16", .block_size = 1, .type_size = sizeof(uint16_t), .weight_ok = 1, .vec_dot_type = E0_TYPE_F32,
        .to_float = e0_bf16_to_float, .from_float_ref = e0_bf16_from_float,
        .vec_dot = {e0_vec_dot_bf16_ref, e0_vec_dot_bf16_avx2, e0_vec_dot_bf16_avx512},
    },

    /* ---- legacy block types (quant_basic.c) ---- */
    [E0_TYPE_Q4_0] = {
        .name = "q4_0", .block_size = E0_QK, .type_size = Q4_0_SIZE, .is_quantized = 1, .weight_ok = 1,
        .vec_dot_type = E0_TYPE_Q8_0, .to_float = e0_q4_0_to_float, .from_float_ref = e0_q4_0_from_float_ref,
        .vec_dot = {e0_vec_dot_q4_0_ref, e0_vec_dot_q4_0_avx2, e0_vec_dot_q4_0_avx512},
    },
    [E0_TYPE_Q4_1] = {
        .name = "q4_1", .block_size = E0_QK, .type_size = Q4_1_SIZE, .is_quantized = 1, .weight_ok = 1,
        .vec_dot_type = E0_TYPE_Q8_1, .to_float = e0_q4_1_to_float, .from_float_ref = e0_q4_1_from_float_ref,
        .vec_dot = {e0_vec_dot_q4_1_ref, e0_vec_dot_q4_1_avx2, e0_vec_dot_q4_1_avx512},
    },
    [E0_TYPE_Q5_0] = {
        .name = "q5_0", .block_size = E0_QK, .type_size = Q5_0_SIZE, .is_quantized = 1, .weight_ok = 1,
        .vec_dot_type = E0_TYPE_Q8_0, .to_float = e0_q5_0_to_float, .from_float_ref = e0_q5_0_from_float_ref,
        .vec_dot = {e0_vec_dot_q5_0_ref, e0_vec_dot_q5_0_avx2, e0_vec_dot_q5_0_avx512},
    },
    [E0_TYPE_Q5_1] = {
        .name = "q5_1", .block_size = E0_QK, .type_size = Q5_1_SIZE, .is_quantized = 1, .weight_ok = 1,
        .vec_dot_type = E0_TYPE_Q8_1, .to_float = e0_q5_1_to_float, .from_float_ref = e0_q5_1_from_float_ref,
        .vec_dot = {e0_vec_dot_q5_1_ref, e0_vec_dot_q5_1_avx2, e0_vec_dot_q5_1_avx512},
    },
    /* Q8_0 / Q8_1 activations are quantized with llama.cpp's x86 rounding at every level, so
     * that E0_SIMD=scalar gives the same bytes (and logits) as AVX2. */
    [E0_TYPE_Q8_0] = {
        .name = "q8_0", .block_size = E0_QK, .type_size = Q8_0_SIZE, .is_quantized = 1, .weight_ok = 1,
        .vec_dot_type = E0_TYPE_Q8_0, .to_float = e0_q8_0_to_float, .from_float_ref = e0_q8_0_from_float_ref,
        .from_float = {e0_quantize_act_q8_0_scalar, e0_quantize_act_q8_0_avx2, NULL},
        .vec_dot = {e0_vec_dot_q8_0_ref, e0_vec_dot_q8_0_avx2, NULL},
        .vec_dot_4 = {NULL, e0_vec_dot_4_q8_0_avx2, NULL},
        .gemm = {NULL, e0_gemm_q8_0_avx2, NULL},
    },
    [E0_TYPE_Q8_1] = {
        .name = "q8_1", .block_size = E0_QK, .type_size = Q8_1_SIZE, .is_quantized = 1, .weight_ok = 0,
        .vec_dot_type = E0_TYPE_Q8_1, .to_float = e0_q8_1_to_float, .from_float_ref = e0_q8_1_from_float_ref,
        .from_float = {e0_quantize_act_q8_1_scalar, e0_quantize_act_q8_1_avx2, NULL},
        .vec_dot = {e0_vec_dot_q8_1_ref, NULL, NULL},
    },

    /* ---- K-quants (quant_k.c) ---- */
    [E0_TYPE_Q2_K] = {
        .name = "q2_K", .block_size = QK_K, .type_size = sizeof(e0_block_q2_K), .is_quantized = 1, .weight_ok = 1,
        .vec_dot_type = E0_TYPE_Q8_K, .to_float = e0_q2_K_to_float, .from_float_ref = e0_q2_K_from_float_ref,
        .vec_dot = {e0_vec_dot_q2_K_ref, e0_vec_dot_q2_K_avx2, NULL},
    },
    [E0_TYPE_Q3_K] = {
        .name = "q3_K", .block_size = QK_K, .type_size = sizeof(e0_block_q3_K), .is_quantized = 1, .weight_ok = 1,
        .vec_dot_type = E0_TYPE_Q8_K, .to_float = e0_q3_K_to_float, .from_float_ref = e0_q3_K_from_float_ref,
        .vec_dot = {e0_vec_dot_q3_K_ref, e0_vec_dot_q3_K_avx2, NULL},
    },
    [E0_TYPE_Q4_K] = {
        .name = "q4_K", .block_size = QK_K, .type_size = sizeof(e0_block_q4_K), .is_quantized = 1, .weight_ok = 1,
        .vec_dot_type = E0_TYPE_Q8_K, .to_float = e0_q4_K_to_float, .from_float_ref = e0_q4_K_from_float_ref,
        .vec_dot = {e0_vec_dot_q4_K_ref, e0_vec_dot_q4_K_avx2, e0_vec_dot_q4_K_avx512},
        .vec_dot_4 = {NULL, e0_vec_dot_4_q4_K_avx2, e0_vec_dot_4_q4_K_avx512},
        .gemm = {NULL, e0_gemm_q4_K_avx2, NULL},
        .gemm_tokens = {0, E0_GEMM_TOKENS_MAX, 0}, /* 32-token groups: +6-8%% on a 26-token expert (gemm_avx2.c) */
    },
    [E0_TYPE_Q5_K] = {
        .name = "q5_K", .block_size = QK_K, .type_size = sizeof(e0_block_q5_K), .is_quantized = 1, .weight_ok = 1,
        .vec_dot_type = E0_TYPE_Q8_K, .to_float = e0_q5_K_to_float, .from_float_ref = e0_q5_K_from_float_ref,
        .vec_dot = {e0_vec_dot_q5_K_ref, e0_vec_dot_q5_K_avx2, e0_vec_dot_q5_K_avx512},
        .vec_dot_4 = {NULL, e0_vec_dot_4_q5_K_avx2, e0_vec_dot_4_q5_K_avx512},
        .gemm = {NULL, e0_gemm_q5_K_avx2, NULL},
        .gemm_tokens = {0, E0_GEMM_TOKENS_MAX, 0}, /* 32-token groups: +6-8%% on a 26-token expert (gemm_avx2.c) */
    },
    [E0_TYPE_Q6_K] = {
        .name = "q6_K", .block_size = QK_K, .type_size = sizeof(e0_block_q6_K), .is_quantized = 1, .weight_ok = 1,
        .vec_dot_type = E0_TYPE_Q8_K, .to_float = e0_q6_K_to_float, .from_float_ref = e0_q6_K_from_float_ref,
        .vec_dot = {e0_vec_dot_q6_K_ref, e0_vec_dot_q6_K_avx2, e0_vec_dot_q6_K_avx512},
        .vec_dot_4 = {NULL, e0_vec_dot_4_q6_K_avx2, e0_vec_dot_4_q6_K_avx512},
        .gemm = {NULL, e0_gemm_q6_K_avx2, NULL},
        .gemm_tokens = {0, E0_GEMM_TOKENS_MAX, 0}, /* 32-token groups: +6-8%% on a 26-token expert (gemm_avx2.c) */
    },
    /* ---- IQ2 / IQ1 grid types (quant_iq2.c) ---- */
    [E0_TYPE_IQ2_XXS] = {
        .name = "iq2_xxs", .block_size = QK_K, .type_size = sizeof(e0_block_iq2_xxs), .is_quantized = 1, .weight_ok = 1,
        .vec_dot_type = E0_TYPE_Q8_K, .to_float = e0_iq2_xxs_to_float, .from_float_ref = e0_iq2_xxs_from_float_ref,
        .vec_dot = {e0_vec_dot_iq2_xxs_ref, e0_vec_dot_iq2_xxs_avx2, NULL},
        .vec_dot_4 = {NULL, e0_vec_dot_4_iq2_xxs_avx2, NULL},
        .gemm = {NULL, e0_gemm_iq2_xxs_avx2, NULL},
        .gemm_tokens = {0, E0_GEMM_TOKENS_MAX, 0},
    },
    [E0_TYPE_IQ2_XS] = {
        .name = "iq2_xs", .block_size = QK_K, .type_size = sizeof(e0_block_iq2_xs), .is_quantized = 1, .weight_ok = 1,
        .vec_dot_type = E0_TYPE_Q8_K, .to_float = e0_iq2_xs_to_float, .from_float_ref = e0_iq2_xs_from_float_ref,
        .vec_dot = {e0_vec_dot_iq2_xs_ref, e0_vec_dot_iq2_xs_avx2, NULL},
    },
    [E0_TYPE_IQ2_S] = {
        .name = "iq2_s", .block_size = QK_K, .type_size = sizeof(e0_block_iq2_s), .is_quantized = 1, .weight_ok = 1,
        .vec_dot_type = E0_TYPE_Q8_K, .to_float = e0_iq2_s_to_float, .from_float_ref = e0_iq2_s_from_float_ref,
        .vec_dot = {e0_vec_dot_iq2_s_ref, e0_vec_dot_iq2_s_avx2, NULL},
    },
    [E0_TYPE_IQ1_S] = {
        .name = "iq1_s", .block_size = QK_K, .type_size = sizeof(e0_block_iq1_s), .is_quantized = 1, .weight_ok = 1,
        .vec_dot_type = E0_TYPE_Q8_K, .to_float = e0_iq1_s_to_float, .from_float_ref = e0_iq1_s_from_float_ref,
        .vec_dot = {e0_vec_dot_iq1_s_ref, e0_vec_dot_iq1_s_avx2, NULL},
        .vec_dot_4 = {NULL, e0_vec_dot_4_iq1_s_avx2, NULL},
        .gemm = {NULL, e0_gemm_iq1_s_avx2, NULL},
    },
    [E0_TYPE_IQ1_M] = {
        .name = "iq1_m", .block_size = QK_K, .type_size = sizeof(e0_block_iq1_m), .is_quantized = 1, .weight_ok = 1,
        .vec_dot_type = E0_TYPE_Q8_K, .to_float = e0_iq1_m_to_float, .from_float_ref = e0_iq1_m_from_float_ref,
        .vec_dot = {e0_vec_dot_iq1_m_ref, e0_vec_dot_iq1_m_avx2, NULL},
        .vec_dot_4 = {NULL, e0_vec_dot_4_iq1_m_avx2, NULL},
        .gemm = {NULL, e0_gemm_iq1_m_avx2, NULL},
    },
    /* the AVX2 Q8_K quantizer writes the reference's bytes */
    [E0_TYPE_Q8_K] = {
        .name = "q8_K", .block_size = QK_K, .type_size = sizeof(e0_block_q8_K), .is_quantized = 1, .weight_ok = 0,
        .vec_dot_type = E0_TYPE_Q8_K, .to_float = e0_q8_K_to_float, .from_float_ref = e0_q8_K_from_float_ref,
        .from_float = {NULL, e0_quantize_q8_K_avx2, NULL},
        .vec_dot = {e0_vec_dot_q8_K_ref, NULL, NULL},
    },

    /* ---- q4_K and q6_K repacked at load (quant_kx.h; e0_repack_type says when) and their activations ---- */
    [E0_TYPE_Q4_KX] = {
        .name = "q4_KX", .block_size = QK_K, .type_size = sizeof(e0_block_q4_K), .is_quantized = 1, .weight_ok = 0,
        .vec_dot_type = E0_TYPE_Q8_KX, .to_float = e0_q4_KX_to_float, .from_float_ref = e0_q4_KX_from_float_ref,
        .vec_dot = {e0_vec_dot_q4_KX_ref, e0_vec_dot_q4_KX_avx2, NULL},
        .gemm = {NULL, e0_gemm_q4_KX_avx2, NULL},
        .gemm_tokens = {0, E0_GEMM_TOKENS_MAX, 0},
    },
    [E0_TYPE_Q8_KX] = {
        .name = "q8_KX", .block_size = QK_K, .type_size = sizeof(e0_block_q8_K), .is_quantized = 1, .weight_ok = 0,
        .vec_dot_type = E0_TYPE_Q8_KX, .to_float = e0_q8_KX_to_float, .from_float_ref = e0_q8_KX_from_float_ref,
        .from_float = {NULL, e0_q8_KX_from_float_avx2, NULL},
    },
    [E0_TYPE_Q6_KX] = {
        .name = "q6_KX", .block_size = QK_K, .type_size = sizeof(e0_block_q6_K), .is_quantized = 1, .weight_ok = 0,
        .vec_dot_type = E0_TYPE_Q8_KP, .to_float = e0_q6_KX_to_float, .from_float_ref = e0_q6_KX_from_float_ref,
        .vec_dot = {e0_vec_dot_q6_KX_ref, e0_vec_dot_q6_KX_avx2, NULL},
        .gemm = {NULL, e0_gemm_q6_KX_avx2, NULL},
        .gemm_tokens = {0, E0_GEMM_TOKENS_MAX, 0},
    },
    [E0_TYPE_Q8_KP] = {
        .name = "q8_KP", .block_size = QK_K, .type_size = sizeof(e0_block_q8_K), .is_quantized = 1, .weight_ok = 0,
        .vec_dot_type = E0_TYPE_Q8_KP, .to_float = e0_q8_KP_to_float, .from_float_ref = e0_q8_KP_from_float_ref,
        .from_float = {NULL, e0_q8_KP_from_float_avx2, NULL},
    },
    /* AVX-512 level: one activation type for both (quant_kv.h) */
    [E0_TYPE_Q4_KV] = {
        .name = "q4_KV", .block_size = QK_K, .type_size = sizeof(e0_block_q4_K), .is_quantized = 1, .weight_ok = 0,
        .vec_dot_type = E0_TYPE_Q8_KV, .to_float = e0_q4_KV_to_float, .from_float_ref = e0_q4_KV_from_float_ref,
        .vec_dot = {e0_vec_dot_q4_KV_ref, NULL, e0_vec_dot_q4_KV_avx512},
        .gemm = {NULL, NULL, e0_gemm_q4_KV_avx512},
        .gemm_tokens = {0, 0, E0_GEMM_TOKENS_MAX},
    },
    [E0_TYPE_Q6_KV] = {
        .name = "q6_KV", .block_size = QK_K, .type_size = sizeof(e0_block_q6_K), .is_quantized = 1, .weight_ok = 0,
        .vec_dot_type = E0_TYPE_Q8_KV, .to_float = e0_q6_KV_to_float, .from_float_ref = e0_q6_KV_from_float_ref,
        .vec_dot = {e0_vec_dot_q6_KV_ref, NULL, e0_vec_dot_q6_KV_avx512},
        .gemm = {NULL, NULL, e0_gemm_q6_KV_avx512},
        .gemm_tokens = {0, 0, E0_GEMM_TOKENS_MAX},
    },
    [E0_TYPE_Q8_KV] = {
        .name = "q8_KV", .block_size = QK_K, .type_size = sizeof(e0_block_q8_K), .is_quantized = 1, .weight_ok = 0,
        .vec_dot_type = E0_TYPE_Q8_KV, .to_float = e0_q8_KV_to_float, .from_float_ref = e0_q8_KV_from_float_ref,
        .from_float = {NULL, NULL, e0_q8_KV_from_float_avx512},
    },

    /* ---- non-linear 4-bit and FP4 (quant_iq4.c; IQ4_XS and MXFP4 kernels in x86/gemm_iq4_avx2.c) ---- */
    [E0_TYPE_IQ4_NL] = {
        .name = "iq4_nl", .block_size = E0_QK_IQ4_NL, .type_size = IQ4_NL_SIZE, .is_quantized = 1, .weight_ok = 1,
        .vec_dot_type = E0_TYPE_Q8_0, .to_float = e0_iq4_nl_to_float, .from_float_ref = e0_iq4_nl_from_float_ref,
        .vec_dot = {e0_vec_dot_iq4_nl_ref, e0_vec_dot_iq4_nl_avx2, NULL},
        .gemm = {NULL, e0_gemm_iq4_nl_avx2, NULL},
    },
    [E0_TYPE_IQ4_XS] = {
        .name = "iq4_xs", .block_size = QK_K, .type_size = sizeof(e0_block_iq4_xs), .is_quantized = 1, .weight_ok = 1,
        .vec_dot_type = E0_TYPE_Q8_K, .to_float = e0_iq4_xs_to_float, .from_float_ref = e0_iq4_xs_from_float_ref,
        .vec_dot = {e0_vec_dot_iq4_xs_ref, e0_vec_dot_iq4_xs_avx2, NULL},
        .gemm = {NULL, e0_gemm_iq4_xs_avx2, NULL},
        .gemm_tokens = {0, E0_GEMM_TOKENS_MAX, 0},
    },
    [E0_TYPE_MXFP4] = {
        .name = "mxfp4", .block_size = E0_QK_MXFP4, .type_size = MXFP4_SIZE, .is_quantized = 1, .weight_ok = 1,
        .vec_dot_type = E0_TYPE_Q8_0, .to_float = e0_mxfp4_to_float, .from_float_ref = e0_mxfp4_from_float_ref,
        .vec_dot = {e0_vec_dot_mxfp4_ref, e0_vec_dot_mxfp4_avx2, NULL},
        .gemm = {NULL, e0_gemm_mxfp4_avx2, NULL},
    },
    [E0_TYPE_NVFP4] = {
        .name = "nvfp4", .block_size = E0_QK_NVFP4, .type_size = NVFP4_SIZE, .is_quantized = 1, .weight_ok = 1,
        .vec_dot_type = E0_TYPE_Q8_0, .to_float = e0_nvfp4_to_float, .from_float_ref = e0_nvfp4_from_float_ref,
        .vec_dot = {e0_vec_dot_nvfp4_ref, e0_vec_dot_nvfp4_avx2, NULL},
    },

    /* ---- ternary and 1/2-bit (quant_tern.c) ---- */
    [E0_TYPE_TQ1_0] = {
        .name = "tq1_0", .block_size = QK_K, .type_size = sizeof(e0_block_tq1_0), .is_quantized = 1, .weight_ok = 1,
        .vec_dot_type = E0_TYPE_Q8_K, .to_float = e0_tq1_0_to_float, .from_float_ref = e0_tq1_0_from_float_ref,
        .vec_dot = {e0_vec_dot_tq1_0_ref, e0_vec_dot_tq1_0_avx2, NULL},
    },
    [E0_TYPE_TQ2_0] = {
        .name = "tq2_0", .block_size = QK_K, .type_size = sizeof(e0_block_tq2_0), .is_quantized = 1, .weight_ok = 1,
        .vec_dot_type = E0_TYPE_Q8_K, .to_float = e0_tq2_0_to_float, .from_float_ref = e0_tq2_0_from_float_ref,
        .vec_dot = {e0_vec_dot_tq2_0_ref, e0_vec_dot_tq2_0_avx2, NULL},
    },
    [E0_TYPE_Q1_0] = {
        .name = "q1_0", .block_size = E0_QK_Q1_0, .type_size = Q1_0_SIZE, .is_quantized = 1, .weight_ok = 1,
        .vec_dot_type = E0_TYPE_Q8_0, .to_float = e0_q1_0_to_float, .from_float_ref = e0_q1_0_from_float_ref,
        .vec_dot = {e0_vec_dot_q1_0_ref, e0_vec_dot_q1_0_avx2, NULL},
    },
    [E0_TYPE_Q2_0] = {
        .name = "q2_0", .block_size = E0_QK_Q2_0, .type_size = Q2_0_SIZE, .is_quantized = 1, .weight_ok = 1,
        .vec_dot_type = E0_TYPE_Q8_0, .to_float = e0_q2_0_to_float, .from_float_ref = e0_q2_0_from_float_ref,
        .vec_dot = {e0_vec_dot_q2_0_ref, e0_vec_dot_q2_0_avx2, NULL},
    },

    /* ---- i-quants on a 3-bit grid (quant_iq3.c) ---- */
    [E0_TYPE_IQ3_XXS] = {
        .name = "iq3_xxs", .block_size = QK_K, .type_size = sizeof(e0_block_iq3_xxs), .is_quantized = 1, .weight_ok = 1,
        .vec_dot_type = E0_TYPE_Q8_K, .to_float = e0_iq3_xxs_to_float, .from_float_ref = e0_iq3_xxs_from_float_ref,
        .vec_dot = {e0_vec_dot_iq3_xxs_ref, e0_vec_dot_iq3_xxs_avx2, NULL},
        .vec_dot_4 = {NULL, e0_vec_dot_4_iq3_xxs_avx2, NULL},
        .gemm = {NULL, e0_gemm_iq3_xxs_avx2, NULL},
    },
    [E0_TYPE_IQ3_S] = {
        .name = "iq3_s", .block_size = QK_K, .type_size = sizeof(e0_block_iq3_s), .is_quantized = 1, .weight_ok = 1,
        .vec_dot_type = E0_TYPE_Q8_K, .to_float = e0_iq3_s_to_float, .from_float_ref = e0_iq3_s_from_float_ref,
        .vec_dot = {e0_vec_dot_iq3_s_ref, e0_vec_dot_iq3_s_avx2, NULL},
        .vec_dot_4 = {NULL, e0_vec_dot_4_iq3_s_avx2, NULL},
        .gemm = {NULL, e0_gemm_iq3_s_avx2, NULL},
    },
};

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

/* ---- kernel selection ---- */

int e0_simd_level_for(unsigned f) {
    const unsigned avx2 = E0_CPU_AVX2 | E0_CPU_FMA | E0_CPU_F16C;
    if ((f & avx2) != avx2) return E0_SIMD_SCALAR;
    if ((f & E0_CPU_AVX512_ALL) != E0_CPU_AVX512_ALL) return E0_SIMD_AVX2;
    return E0_SIMD_AVX512;
}

const char *e0_simd_name(int level) {
    switch (level) {
    case E0_SIMD_AVX512: return "avx512";
    case E0_SIMD_AVX2: return "avx2";
    default: return "scalar";
    }
}

e0_kernels e0_kernels_at(const e0_type_traits *t, int level) {
    e0_kernels k = {t->vec_dot[E0_SIMD_SCALAR], t->vec_dot_4[E0_SIMD_SCALAR], t->from_float_ref, t->gemm[E0_SIMD_SCALAR],
                    t->gemm_tokens[E0_SIMD_SCALAR]};
    for (int l = 0; l <= level && l < E0_SIMD_LEVELS; l++) {
        if (l > E0_SIMD_SCALAR && t->vec_dot[l]) { /* vec_dot_4 always from vec_dot's own level */
            k.vec_dot = t->vec_dot[l];
            k.vec_dot_4 = t->vec_dot_4[l];
            k.gemm = t->gemm[l];
            k.gemm_tokens = t->gemm_tokens[l];
        }
        if (t->from_float[l]) k.from_float = t->from_float[l];
    }
    if (k.gemm_tokens < E0_GEMM_TOKENS) k.gemm_tokens = E0_GEMM_TOKENS;
    return k;
}

/* The process-wide choice, made once. `resolved` lets the hot paths (attention calls
 * e0_kernels_of per head and position) skip pthread_once with one acquire load. */
static pthread_once_t resolve_once = PTHREAD_ONCE_INIT;
static atomic_bool resolved;
static int level_in_use;
static e0_kernels in_use[E0_TYPE_COUNT];

/* A type's kernels in use: those of the highest level up to `level`, except that a level without
 * a prefill GEMM never replaces one with it (on AVX-512 the K-quants have AVX-512 dots but only
 * AVX2 GEMMs: prefill and batched decode at vec_dot_4 speed would lose far more than the dots
 * gain). vec_dot, vec_dot_4 and gemm always come from one level, so batched equals single. */
e0_kernels e0_kernels_in_use(const e0_type_traits *t, int level) {
    e0_kernels k = e0_kernels_at(t, level);
    for (int l = level - 1; !k.gemm && l > E0_SIMD_SCALAR; l--) {
        const e0_kernels lower = e0_kernels_at(t, l);
        if (lower.gemm) k = lower;
    }
    return k;
}

static void resolve(void) {
    level_in_use = e0_simd_level_for(e0_cpu_features());
    for (int i = 0; i < E0_TYPE_COUNT; i++)
        if (table[i].name) in_use[i] = e0_kernels_in_use(&table[i], level_in_use);
    atomic_store_explicit(&resolved, true, memory_order_release);
}

static inline void ensure_resolved(void) {
    if (!atomic_load_explicit(&resolved, memory_order_acquire)) pthread_once(&resolve_once, resolve);
}

const e0_kernels *e0_kernels_of(uint32_t type) {
    ensure_resolved();
    if (type >= E0_TYPE_COUNT || !table[type].name) return NULL;
    return &in_use[type];
}

int e0_simd_level(void) {
    ensure_resolved();
    return level_in_use;
}

/* The layout the kernels of the level in use want: at the AVX2 level q4_KX / q6_KX (the
 * multiply-port savings of quant_kx.h), at the AVX-512 level q4_KV / q6_KV (four vpdpbusd per
 * block, quant_kv.h; docs/perf.md sessions 9-10). */
uint32_t e0_repack_type(uint32_t type) {
    if (e0_simd_level() == E0_SIMD_AVX2)
        return type == E0_TYPE_Q4_K ? E0_TYPE_Q4_KX : type == E0_TYPE_Q6_K ? E0_TYPE_Q6_KX : type;
    if (e0_simd_level() == E0_SIMD_AVX512)
        return type == E0_TYPE_Q4_K ? E0_TYPE_Q4_KV : type == E0_TYPE_Q6_K ? E0_TYPE_Q6_KV : type;
    return type;
}

void e0_repack(uint32_t from, void *data, size_t bytes) {
    switch (e0_repack_type(from)) {
    case E0_TYPE_Q4_KX: e0_q4_K_repack_avx2(data, (int64_t)(bytes / sizeof(e0_block_q4_K))); break;
    case E0_TYPE_Q6_KX: e0_q6_K_repack_avx2(data, (int64_t)(bytes / sizeof(e0_block_q6_K))); break;
    case E0_TYPE_Q4_KV: e0_q4_K_to_KV_avx512(data, (int64_t)(bytes / sizeof(e0_block_q4_K))); break;
    case E0_TYPE_Q6_KV: e0_q6_K_to_KV_avx512(data, (int64_t)(bytes / sizeof(e0_block_q6_K))); break;
    default: break;
    }
}
