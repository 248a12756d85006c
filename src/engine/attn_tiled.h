/* attn_tiled.h — tiled causal attention for a chunk of queries (prefill), flash-attention style
 * (attn_tiled.c: the algorithm and its scalar kernels; attn_tiled_avx2.c: AVX2 + FMA kernels).
 *
 * One work item is (KV head u, a block of query tokens [t0, t1)): its R = (t1 - t0) * G query
 * rows (G = n_head / n_head_kv heads share u's keys and values under GQA; row r = (t - t0) * G + g
 * is head u * G + g of token t) go against blocks of E0_ATTN_BK keys:
 *   S [R][BK] = scale * Q K^T  (small matrix product; masked: causal, sliding window)
 *   m, l [R]: running max and sum of exp; O [R][hd] rescaled by exp(m_old - m_new)
 *   O += exp(S - m) V          (small matrix product)
 * and finally out = O / l. A sink logit (gpt-oss) starts each row at m = sink, l = 1.
 * Keys and values are read in their cache type and converted to floats per block; q is rounded
 * as the per-position path's dot products see it (F16 / BF16 keys: to their type; q8_0 / q4_0
 * keys: through Q8_0), so the products are that path's and only the summation order differs.
 * F16 / BF16 values: that path (and llama.cpp without flash attention) rounds the normalized
 * weights to the value type before multiplying; the tiled path does the same, which needs each
 * row's final max and sum first: two passes (scores of all key blocks stored in S [R][n_ctx],
 * then normalized, rounded, and multiplied with the value blocks). F32 / q8_0 / q4_0 values take
 * the one-pass online softmax above.
 * Every row's arithmetic depends only on its own q and its keys (key blocks start at multiples of
 * BK), so prefill, decode and batches (e0_eval_batch) all take this path and a token's result does
 * not depend on how the prompt was chunked or batched. MLA (deepseek2) keeps the per-position path. */
#ifndef E0_ATTN_TILED_H
#define E0_ATTN_TILED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define E0_ATTN_BK 64    /* keys per block */
#define E0_ATTN_ROWS 64  /* query rows (tokens x heads of a group) per work item, at least G */

/* One layer's attention for a chunk, in plain arrays (what the test drives directly). */
typedef struct e0_attn_args {
    int64_t hd, n_head, n_head_kv; /* head_dim; G = n_head / n_head_kv */
    int n_tok, pos0;               /* query t is at position pos0 + t */
    const float *q;                /* [n_tok][n_head * hd], after RoPE */
    float *out;                    /* [n_tok][n_head * hd] */
    const uint8_t *k, *v;          /* the layer's cache: KV head u of slot s at k + u * kvh_k + s * pos_k */
    size_t pos_k, pos_v;           /* bytes from one slot's head to the next slot's */
    size_t kvh_k, kvh_v;           /* bytes from one KV head to the next */
    size_t head_k, head_v;         /* bytes of one head's hd values */
    uint32_t type_k, type_v;       /* cache types (kv.c) */
    int ring;                      /* position p is row p % ring (sliding-window rings); 0: row p */
    int64_t n_swa;                 /* > 0: query at p sees keys p - n_swa + 1 .. p; 0: 0 .. p */
    const float *sinks;            /* [n_head] sink logits, or NULL */
    float scale;                   /* score scale (1 / sqrt(hd) unless the model says) */
    int n_ctx;                     /* positions are below it (the scratch's score rows hold that many) */
} e0_attn_args;

/* Bytes of one thread's scratch for these shapes (0 when the tiled path cannot take them). */
size_t e0_attn_tiled_scratch(int64_t hd, int64_t group, uint32_t type_k, uint32_t type_v, int n_ctx);
/* Work items of a chunk (KV heads x query blocks) and the query tokens of a block. */
long e0_attn_tiled_items(const e0_attn_args *a);
/* Item `item` into a->out; scratch: e0_attn_tiled_scratch bytes, 64-byte aligned; simd: use the
 * AVX2 kernels (only where the CPU has them). */
void e0_attn_tiled_item(const e0_attn_args *a, long item, void *scratch, bool simd);

/* ---- kernels (scalar in attn_tiled.c, AVX2 in attn_tiled_avx2.c; equal up to rounding) ---- */

/* S [nr][lds] columns 0 .. nk8 (a multiple of 8) = scale * Q . K^T: QT [hd][ldq] the query rows
 * transposed (QT [d][r] = q[r][d]; ldq >= nr rounded up to 16, the rows past nr readable, any
 * values), K [nk8][hd] the key block's rows. Each score is one FMA chain over d = 0 .. hd-1, then
 * the scale: the same bits at both levels and in any tile. */
void e0_attn_scores_avx2(const float *QT, int ldq, int nr, int64_t hd, const float *K, int nk8, float scale, float *S, int lds);
/* O [nr][hd] += P [nr][ldk] (columns 0 .. nk8) . V [nk8][hd]; hd a multiple of 8. */
void e0_attn_pv_avx2(const float *P, int nr, int ldk, int nk8, const float *V, int64_t hd, float *O);
/* The same two products with AVX-512 (attn_tiled_avx512.c): the AVX2 kernels' bits. */
void e0_attn_scores_avx512(const float *QT, int ldq, int nr, int64_t hd, const float *K, int nk8, float scale, float *S, int lds);
void e0_attn_pv_avx512(const float *P, int nr, int ldk, int nk8, const float *V, int64_t hd, float *O);
/* The causal mask of a row of scores: s [n] (n % 8 == 0 for AVX2) gets -inf at columns j < lo
 * and j > hi; returns the max of the others (-inf: none; NaN scores never become the max). */
float e0_attn_mask_max(float *s, int n, int lo, int hi);
float e0_attn_mask_max_avx2(float *s, int n, int lo, int hi);
/* x [n] *= c, then with round_f16 rounded to F16 and back (x[i] * c and e0_kv_round's bits). */
void e0_attn_scale_avx2(float *x, int n, float c, bool round_f16);
/* x [n] = exp(x - m) (x = -inf gives 0); returns their sum. */
float e0_attn_exp_sum_avx2(float *x, int n, float m);
/* y [n] = exp(x [n]) with the AVX2 polynomial (for its test against expf). */
void e0_attn_expf_avx2(const float *x, float *y, int n);

#endif
