/* attn_speed.c — micro benchmark of the tiled attention (engine/attn_tiled.h) on one layer of
 * Qwen3-30B-A3B's shape: head_dim 128, 32 query heads over 4 KV heads, F16 keys and values, the
 * work items run one after another on one thread. Built by `make` into build/tools/attn_speed. Run:
 *
 *   build/tools/attn_speed [CTX [NTOK]]     (defaults: 1230 1, a decode step at 1,230 positions)
 *
 * NTOK query tokens at positions CTX - NTOK .. CTX - 1 (NTOK = 1: a decode step; more: a prefill
 * chunk, causal). Reports the best of the passes (the machine may be shared: best-of filters out
 * the time others take) in microseconds and in nanoseconds per (query token, visible key, KV
 * head): each such triple is 8 rows x 128 dimensions of scores and as many of P V, 2,048 MACs.
 * The keys and values (CTX x 4 heads x 256 bytes each) come from memory or cache as their size
 * decides. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "engine/attn_tiled.h"
#include "quant/quant.h"

enum { HD = 128, N_HEAD = 32, N_HEAD_KV = 4 };

static volatile float sink;

int main(int argc, char **argv) {
    static const char usage[] = "usage: attn_speed [CTX [NTOK]]  (1 <= NTOK <= CTX <= 65536, NTOK <= 4096; default 1230 1)\n"
                                "times one layer of tiled attention: NTOK query tokens at the last positions of CTX\n";
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        fputs(usage, stdout);
        return 0;
    }
    int64_t ctx = 1230, ntok = 1;
    e0_err e = {0};
    if (argc > 3 || (argc > 1 && e0_parse_i64(argv[1], 1, 65536, &ctx, "CTX", &e)) ||
        (argc > 2 && e0_parse_i64(argv[2], 1, ctx < 4096 ? ctx : 4096, &ntok, "NTOK", &e))) {
        fprintf(stderr, "attn_speed: %s\n%s", e.msg[0] ? e.msg : "too many arguments", usage);
        return 1;
    }
    const size_t head = (size_t)HD * 2, side = (size_t)N_HEAD_KV * (size_t)ctx * head; /* F16 */
    uint16_t *k = malloc(side), *v = malloc(side);
    float *q = malloc((size_t)ntok * N_HEAD * HD * 4), *out = malloc((size_t)ntok * N_HEAD * HD * 4);
    const size_t scratch_bytes = e0_attn_tiled_scratch(HD, N_HEAD / N_HEAD_KV, E0_TYPE_F16, E0_TYPE_F16, (int)ctx);
    void *scratch = scratch_bytes ? aligned_alloc(64, (scratch_bytes + 63) & ~(size_t)63) : NULL;
    if (!k || !v || !q || !out || !scratch) {
        fprintf(stderr, "attn_speed: out of memory\n");
        return 1;
    }
    uint64_t x = 88172645463325252ull; /* xorshift: values in [0.5, 1) as F16, q in [-1, 1) */
    for (size_t i = 0; i < side / 2; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        k[i] = (uint16_t)(0x3800 | (x & 0x3ff)), v[i] = (uint16_t)(0x3800 | ((x >> 10) & 0x3ff));
    }
    for (size_t i = 0; i < (size_t)ntok * N_HEAD * HD; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        q[i] = (float)(x % 2000) / 1000.0f - 1.0f;
    }
    e0_attn_args a = {.hd = HD, .n_head = N_HEAD, .n_head_kv = N_HEAD_KV, .n_tok = (int)ntok, .pos0 = (int)(ctx - ntok),
                      .q = q, .out = out, .k = (const uint8_t *)k, .v = (const uint8_t *)v, .pos_k = head, .pos_v = head,
                      .kvh_k = (size_t)ctx * head, .kvh_v = (size_t)ctx * head, .head_k = head, .head_v = head,
                      .type_k = E0_TYPE_F16, .type_v = E0_TYPE_F16, .scale = 1.0f / sqrtf((float)HD), .n_ctx = (int)ctx};
    const int level = e0_simd_level();
    const bool simd = level >= E0_SIMD_AVX2; /* the item takes the AVX-512 products where the level allows */
    const long items = e0_attn_tiled_items(&a);
    double triples = 0; /* (query token, visible key) pairs, per KV head */
    for (long t = 0; t < ntok; t++) triples += (double)(ctx - ntok + t + 1);
    triples *= N_HEAD_KV;
    const int passes = triples > 5e7 ? 3 : triples > 1e6 ? 20 : 200;
    double best = 1e30;
    for (int p = 0; p < passes; p++) {
        const double t0 = e0_now();
        for (long it = 0; it < items; it++) e0_attn_tiled_item(&a, it, scratch, simd);
        const double dt = e0_now() - t0;
        sink = out[p % (ntok * N_HEAD * HD)];
        if (dt < best) best = dt;
    }
    printf("attention, %s, F16 KV: %ld query token(s) at %ld positions, %ld items: best of %d %.1f us, %.3f ns per "
           "(query token, key, KV head)\n",
           level >= E0_SIMD_AVX512 ? "avx512" : simd ? "avx2" : "scalar", (long)ntok, (long)ctx, items, passes, best * 1e6, best * 1e9 / triples);
    free(k), free(v), free(q), free(out), free(scratch);
    return 0;
}
