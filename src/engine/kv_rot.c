/* kv_rot.c — the Walsh-Hadamard rotation llama.cpp applies around a quantized KV cache.
 *
 * With q8_0 / q4_0 keys, the pinned llama.cpp (llama-kv-cache.cpp: attn_rot_k; llama-graph.cpp:
 * build_attn) multiplies every q and k row, after RoPE and before k is stored, by an orthonormal
 * Hadamard matrix H of size nrot, chunk by chunk along the head (nrot: the largest power of two
 * >= 64 dividing head_dim; none when head_dim % 64 != 0). H is symmetric and H*H = I, so
 * q.k is unchanged in exact arithmetic; what changes is the quantization error (the rotation
 * spreads outliers over a block, so the 8-bit blocks of k and of q lose less). With q8_0 / q4_0
 * values (attn_rot_v) each v row is rotated in chunks of 64 before it is stored, and each head of
 * the attention output is rotated back with the same H.
 *
 * ggml computes H x as a fast Walsh-Hadamard transform (ops.cpp: fwht): x scaled by 1/sqrt(n)
 * first, then butterflies (u, v) -> (u + v, u - v) at strides 1, 2, 4, .. n/2. Each output is
 * the same sequence of float additions whatever the vector width, and so is ours: the rotated
 * rows are bit-identical to ggml's. */
#include <math.h>

#include "engine/ctx_impl.h"

int e0_kv_rot_k(const e0_hparams *hp, uint32_t type_k) {
    if (!e0_type_traits_of(type_k)->is_quantized || hp->head_dim <= 0 || hp->head_dim % 64) return 0;
    int n = 64;
    while (hp->head_dim % (2 * n) == 0) n *= 2;
    return n;
}

int e0_kv_rot_v(const e0_hparams *hp, uint32_t type_v) {
    return e0_type_traits_of(type_v)->is_quantized && hp->head_dim > 0 && hp->head_dim % 64 == 0 ? 64 : 0;
}

void e0_kv_hadamard(float *x, int64_t n, int nrot) {
    const float scale = 1.0f / sqrtf((float)nrot);
    for (int64_t c = 0; c + nrot <= n; c += nrot) {
        float *r = x + c;
        for (int j = 0; j < nrot; j++) r[j] *= scale;
        for (int len = 1; len < nrot; len <<= 1)
            for (int i = 0; i < nrot; i += 2 * len)
                for (int j = 0; j < len; j++) {
                    const float u = r[i + j], v = r[i + len + j];
                    r[i + j] = u + v;
                    r[i + len + j] = u - v;
                }
    }
}
