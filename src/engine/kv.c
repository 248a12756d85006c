/* kv.c — the KV cache's element types (engine.h: e0_kv_*): which types a cache may use
 * (llama.cpp's --cache-type-k/-v set: f32, f16, bf16, q8_0, q4_0), their names, the bytes they
 * take, and the row conversions the forward pass uses (ctx_impl.h): writing a new position's
 * row once in the cache type, reading a value row back as floats, rounding floats (q, attention
 * weights) to a float cache type as llama.cpp does.
 *
 * A layer's cache holds one row of kv_dim = n_head_kv * head_dim values per position (slot),
 * stored head-major: every slot of KV head 0, then of head 1, ... (ctx_impl.h e0_kv_head_k);
 * the conversions here take one head (or any whole number of them). Block types (q8_0, q4_0) have
 * blocks of 32 along head_dim, so head_dim must be a multiple of 32 for them and each head
 * starts on a block. */
#include <string.h>

#include "engine/ctx_impl.h"
#include "quant/quant.h"

static const uint32_t kv_types[] = {E0_TYPE_F32, E0_TYPE_F16, E0_TYPE_BF16, E0_TYPE_Q8_0, E0_TYPE_Q4_0};
#define N_KV_TYPES (sizeof kv_types / sizeof kv_types[0])

static bool kv_type_ok(uint32_t type) {
    for (size_t i = 0; i < N_KV_TYPES; i++)
        if (kv_types[i] == type) return true;
    return false;
}

int e0_kv_type_parse(const char *name, uint32_t *type, e0_err *e) {
    for (size_t i = 0; i < N_KV_TYPES; i++)
        if (!strcmp(name, e0_type_traits_of(kv_types[i])->name)) {
            *type = kv_types[i];
            return 0;
        }
    return e0_fail(e, "unknown KV cache type '%.40s' (one of f32, f16, bf16, q8_0, q4_0)", name);
}

const char *e0_kv_type_name(uint32_t type) { return kv_type_ok(type) ? e0_type_traits_of(type)->name : "?"; }

int e0_kv_check(const e0_hparams *hp, uint32_t type_k, uint32_t type_v, e0_err *e) {
    uint32_t types[2] = {type_k, type_v};
    const char *what[2] = {"K", "V"};
    for (int i = 0; i < 2; i++) {
        char buf[32];
        if (!kv_type_ok(types[i]))
            return e0_fail(e, "%s cache type %s is not one of f32, f16, bf16, q8_0, q4_0", what[i], e0_type_name(types[i], buf));
        int64_t bs = e0_type_traits_of(types[i])->block_size;
        if (hp->head_dim % bs)
            return e0_fail(e, "%s cache type %s stores blocks of %lld values along a head, but this model's head_dim is %lld "
                              "(not a multiple of %lld): use f16, bf16 or f32",
                           what[i], e0_type_traits_of(types[i])->name, (long long)bs, (long long)hp->head_dim, (long long)bs);
    }
    return 0;
}

size_t e0_kv_row_bytes(const e0_hparams *hp, uint32_t type) {
    return (size_t)hp->n_head_kv * e0_row_size(type, hp->head_dim);
}

/* Layers of sliding-window attention (gpt-oss; 0 for the others). */
static int64_t n_swa_layers(const e0_hparams *hp) {
    int64_t n = 0;
    for (int64_t il = 0; il < hp->n_layer; il++) n += e0_layer_is_swa(hp, il);
    return n;
}

/* The bytes of one position of one layer: K and V rows (MLA, deepseek2: the compressed row only). */
static uint64_t pos_row_bytes(const e0_hparams *hp, uint32_t type_k, uint32_t type_v) {
    if (hp->mla) return e0_kv_row_bytes(hp, type_k);
    return e0_kv_row_bytes(hp, type_k) + e0_kv_row_bytes(hp, type_v);
}

uint64_t e0_kv_bytes_per_pos(const e0_hparams *hp, uint32_t type_k, uint32_t type_v) {
    /* the full-attention layers (hybrids: their attention layers only) */
    return (uint64_t)(e0_hparams_kv_layers(hp) - n_swa_layers(hp)) * pos_row_bytes(hp, type_k, type_v);
}

uint64_t e0_kv_bytes_swa(const e0_hparams *hp, uint32_t type_k, uint32_t type_v) {
    return (uint64_t)n_swa_layers(hp) * (uint64_t)hp->n_swa * pos_row_bytes(hp, type_k, type_v);
}

uint64_t e0_kv_bytes_swa_ring(const e0_hparams *hp, uint32_t type_k, uint32_t type_v, int n_ctx, int n_batch) {
    return (uint64_t)n_swa_layers(hp) * (uint64_t)e0_kv_swa_rows(hp, n_ctx, n_batch) * pos_row_bytes(hp, type_k, type_v);
}

void e0_kv_store(uint32_t type, const float *x, int64_t n, uint8_t *row) {
    if (type == E0_TYPE_F32) {
        memcpy(row, x, (size_t)n * sizeof(float));
        return;
    }
    if (type == E0_TYPE_F16 && e0_simd_level() >= E0_SIMD_AVX2) {
        e0_kv_f32_to_f16_avx2(x, row, n);
        return;
    }
    e0_kernels_of(type)->from_float(x, row, n);
}

void e0_kv_load(uint32_t type, const uint8_t *row, float *out, int64_t n) {
    if (e0_simd_level() >= E0_SIMD_AVX2 && e0_kv_to_f32_avx2(type, row, out, n)) return;
    e0_type_traits_of(type)->to_float(row, out, n);
}

void e0_kv_round(uint32_t type, float *w, int64_t n) {
    if (type == E0_TYPE_F16) {
        if (e0_simd_level() >= E0_SIMD_AVX2) {
            e0_kv_round_f16_avx2(w, n);
            return;
        }
        for (int64_t i = 0; i < n; i++) w[i] = e0_fp16_to_fp32(e0_fp32_to_fp16(w[i]));
    } else if (type == E0_TYPE_BF16) {
        for (int64_t i = 0; i < n; i++) w[i] = e0_bf16_to_fp32(e0_fp32_to_bf16(w[i]));
    }
}
