/* attn_tiled.c — tiled, online-softmax attention for a chunk of query tokens (attn_tiled.h
 * describes the algorithm): the work item driver, the scalar reference kernels (the same blocks
 * and the same order as the AVX2 ones; products and sums in F32, exp from libm's expf) and the
 * scratch layout. forward.c calls it for every chunk, decode step and batch (e0_attn_tiled_layer
 * in ctx_impl.h).
 *
 * Scratch of one thread (floats unless said; RM = query rows of an item, BK = E0_ATTN_BK):
 *   Q [RM][hd]  the item's query rows (rounded through the key type's vec_dot_type)
 *   O [RM][hd]  the unnormalized output accumulator
 *   S [RM][lds] scores of one key block, then their exp (the weights P); two-pass (F16 / BF16
 *               values): the scores of every key block, lds = n_ctx rounded up + BK
 *   QT [hd][ldq] Q transposed for the SIMD score kernels (ldq = RM rounded up to 16, zero rows)
 *   K [BK][hd]  the key block converted to floats (a row per key)
 *   V [BK][hd]  the value block converted to floats
 *   m, l [RM]   running max and sum per row
 *   qb: q_head bytes, one query head in the key's q type */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/attn_tiled.h"
#include "engine/ctx_impl.h"
#include "quant/quant.h"

/* tokens of a query block: as many as fill E0_ATTN_ROWS rows, at least one */
static int block_tokens(int64_t group) { return group >= E0_ATTN_ROWS ? 1 : (int)(E0_ATTN_ROWS / group); }

static size_t al64(size_t n) { return (n + 63) & ~(size_t)63; }

typedef struct {
    float *Q, *QT, *O, *S, *K, *V, *m, *l;
    uint8_t *qb;
    int lds; /* floats between rows of S */
    int ldq; /* floats between rows of QT */
} tile_bufs;

/* F16 / BF16 values: the weights are normalized first and rounded to the value type, as the
 * per-position path (and llama.cpp without flash attention) does; that needs the row's final max
 * and sum before any value is accumulated, so these take two passes over stored scores. */
static bool two_pass(uint32_t type_v) { return type_v == E0_TYPE_F16 || type_v == E0_TYPE_BF16; }

static size_t carve(int64_t hd, int64_t group, uint32_t type_k, uint32_t type_v, int n_ctx, uint8_t *base, tile_bufs *b) {
    const size_t RM = (size_t)block_tokens(group) * (size_t)group, H = (size_t)hd, BK = E0_ATTN_BK;
    const uint32_t q_type = (uint32_t)e0_type_traits_of(type_k)->vec_dot_type;
    b->lds = two_pass(type_v) ? ((n_ctx + 7) & ~7) + E0_ATTN_BK : E0_ATTN_BK;
    b->ldq = (int)((RM + 15) & ~(size_t)15);
    const size_t sizes[9] = {RM * H * 4, H * (size_t)b->ldq * 4, RM * H * 4, RM * (size_t)b->lds * 4, BK * H * 4, BK * H * 4,
                             RM * 4, RM * 4, e0_row_size(q_type, hd) + 64};
    void **ptrs[9] = {(void **)&b->Q, (void **)&b->QT, (void **)&b->O, (void **)&b->S, (void **)&b->K,
                      (void **)&b->V, (void **)&b->m, (void **)&b->l, (void **)&b->qb};
    size_t off = 0;
    for (int i = 0; i < 9; i++) {
        if (base) *ptrs[i] = base + off;
        off += al64(sizes[i]);
    }
    return off;
}

size_t e0_attn_tiled_scratch(int64_t hd, int64_t group, uint32_t type_k, uint32_t type_v, int n_ctx) {
    if (hd <= 0 || group <= 0 || hd > 4096 || group > 4096 || n_ctx <= 0 || n_ctx > (1 << 26)) return 0;
    tile_bufs b;
    return carve(hd, group, type_k, type_v, n_ctx, NULL, &b);
}

long e0_attn_tiled_items(const e0_attn_args *a) {
    const int bt = block_tokens(a->n_head / a->n_head_kv);
    return (long)a->n_head_kv * ((a->n_tok + bt - 1) / bt);
}

/* With simd, the two products take their AVX-512 forms where the level allows (same bits). */
static bool avx512(void) { return e0_simd_level() >= E0_SIMD_AVX512; }

/* ---- scalar kernels (the reference of attn_tiled_avx2.c) ---- */

static void scores_scalar(const float *Q, int nr, int64_t hd, const float *K, int nk8, float scale, float *S, int lds) {
    for (int r = 0; r < nr; r++)
        for (int j = 0; j < nk8; j++) {
            const float *q = Q + (size_t)r * hd, *k = K + (size_t)j * hd;
            float s = 0;
            for (int64_t d = 0; d < hd; d++) s += q[d] * k[d];
            S[(size_t)r * lds + j] = s * scale;
        }
}

static void pv_scalar(const float *P, int nr, int ldk, int nk8, const float *V, int64_t hd, float *O) {
    for (int r = 0; r < nr; r++)
        for (int j = 0; j < nk8; j++) {
            const float p = P[(size_t)r * ldk + j];
            if (p == 0) continue;
            const float *v = V + (size_t)j * hd;
            float *o = O + (size_t)r * hd;
            for (int64_t d = 0; d < hd; d++) o[d] += p * v[d];
        }
}

float e0_attn_mask_max(float *s, int n, int lo, int hi) {
    float mx = -INFINITY;
    for (int j = 0; j < n; j++) {
        if (j < lo || j > hi) s[j] = -INFINITY;
        else if (s[j] > mx) mx = s[j];
    }
    return mx;
}

static float exp_sum_scalar(float *x, int n, float m) {
    float sum = 0;
    for (int i = 0; i < n; i++) sum += x[i] = expf(x[i] - m);
    return sum;
}

/* ---- the work item ---- */

/* the first key position a query at p sees */
static int first_key(const e0_attn_args *a, int p) {
    return a->n_swa > 0 && p - a->n_swa + 1 > 0 ? (int)(p - a->n_swa + 1) : 0;
}

static size_t row_of(const e0_attn_args *a, int p) { return a->ring ? (size_t)(p % a->ring) : (size_t)p; }

/* One side (keys or values) of KV head u's block at kb, nk positions, into out [nk][hd] as floats,
 * asking for the next block's bytes (next positions, 0: none) while this one is converted, so
 * that they arrive while this block is computed. The engine's cache is head-major, so a block is
 * one run of nk heads (ring wrap aside): converted 512 values at a time, each piece's bytes one
 * block further on asked for with it. Asking for a whole block at once before converting this
 * one was slower (one layer's decode items at 16k f16 keys, one thread, AVX2: 5.2-5.9 ms against
 * 5.6-6.6, docs/perf.md session 23), and the hardware prefetchers alone slower still (session
 * 22). Prefetches are hints and never fault; a head whose bytes are not a multiple of 64 (q8_0,
 * q4_0) may leave a line to the demand load. */
static void load_side(const e0_attn_args *a, const uint8_t *base, size_t pos, size_t head, uint32_t type, int kb, int nk,
                      int next, float *out) {
    const int64_t hd = a->hd, n = (int64_t)nk * hd;
    const size_t s0 = row_of(a, kb);
    if (pos == head && row_of(a, kb + nk - 1) == s0 + (size_t)nk - 1) {
        const uint8_t *src = base + s0 * pos;
        const size_t piece = e0_row_size(type, 512), ahead = (size_t)E0_ATTN_BK * head;
        for (int64_t i = 0; i < n; i += 512, src += piece) {
            if (next)
                for (size_t o = 0; o < piece; o += 64) __builtin_prefetch(src + ahead + o, 0, 3);
            e0_kv_load(type, src, out + i, n - i < 512 ? n - i : 512);
        }
        return;
    }
    for (int j = 0; j < next; j++)
        for (size_t o = 0; o < head; o += 64) __builtin_prefetch(base + row_of(a, kb + E0_ATTN_BK + j) * pos + o, 0, 3);
    for (int j = 0; j < nk; j++) e0_kv_load(type, base + row_of(a, kb + j) * pos, out + (size_t)j * hd, hd);
}

/* keys of the block after the one at kb (positions up to hi) */
static int next_keys(int kb, int hi) {
    const int n = hi + 1 - (kb + E0_ATTN_BK);
    return n <= 0 ? 0 : n < E0_ATTN_BK ? n : E0_ATTN_BK;
}

/* The key block at kb (nk keys, padded with zero keys / values to nk8) into K and V; the next
 * block (next keys, 0: none) asked for. */
static void load_block(const e0_attn_args *a, int64_t u, int kb, int nk, int nk8, int next, const tile_bufs *b, bool keys,
                       bool values) {
    const int64_t hd = a->hd;
    if (keys) load_side(a, a->k + (size_t)u * a->kvh_k, a->pos_k, a->head_k, a->type_k, kb, nk, next, b->K);
    if (values) load_side(a, a->v + (size_t)u * a->kvh_v, a->pos_v, a->head_v, a->type_v, kb, nk, next, b->V);
    for (int j = nk; j < nk8; j++) {
        if (keys) memset(b->K + (size_t)j * hd, 0, (size_t)hd * 4);
        if (values) memset(b->V + (size_t)j * hd, 0, (size_t)hd * 4);
    }
}

/* Scores of rows 0 .. nr against the loaded key block at kb into S (row stride lds), masked
 * (-inf outside each row's causal window and past nk); returns nothing, fills bm [nr] with each
 * row's max over the block (-inf: nothing visible). */
static void block_scores(const e0_attn_args *a, int t0, int nr, int kb, int nk, int nk8, const tile_bufs *b, float *S,
                         bool simd, float *bm) {
    const int64_t G = a->n_head / a->n_head_kv;
    if (simd) (avx512() ? e0_attn_scores_avx512 : e0_attn_scores_avx2)(b->QT, b->ldq, nr, a->hd, b->K, nk8, a->scale, S, b->lds);
    else scores_scalar(b->Q, nr, a->hd, b->K, nk8, a->scale, S, b->lds);
    for (int r = 0; r < nr; r++) {
        const int p = a->pos0 + t0 + r / (int)G;
        float *s = S + (size_t)r * b->lds;
        const int jlo = first_key(a, p) - kb, jhi = p - kb; /* visible columns jlo .. jhi */
        const int last = jhi < nk - 1 ? jhi : nk - 1;
        bm[r] = simd ? e0_attn_mask_max_avx2(s, nk8, jlo, last) : e0_attn_mask_max(s, nk8, jlo, last);
    }
}

void e0_attn_tiled_item(const e0_attn_args *a, long item, void *scratch, bool simd) {
    const int64_t hd = a->hd, G = a->n_head / a->n_head_kv, q_dim = a->n_head * hd;
    const int bt = block_tokens(G);
    const int64_t u = item % a->n_head_kv;
    const int t0 = (int)(item / a->n_head_kv) * bt;
    const int t1 = t0 + bt < a->n_tok ? t0 + bt : a->n_tok;
    const int nr = (int)((t1 - t0) * G);
    const int BK = E0_ATTN_BK;
    tile_bufs b;
    carve(hd, G, a->type_k, a->type_v, a->n_ctx, scratch, &b);
    simd = simd && hd % 8 == 0;

    /* Q rows, rounded as the per-position path's dot products see them: through the key type's
     * vec_dot_type (Q8_0 for q8_0 / q4_0 keys), to F16 / BF16 for those keys */
    const e0_type_traits *kt = e0_type_traits_of(a->type_k);
    const uint32_t q_type = (uint32_t)kt->vec_dot_type;
    for (int t = t0; t < t1; t++)
        for (int64_t g = 0; g < G; g++) {
            const float *src = a->q + (size_t)t * q_dim + (size_t)(u * G + g) * hd;
            float *dst = b.Q + ((size_t)(t - t0) * G + g) * hd;
            if (q_type == E0_TYPE_F32) { /* F16 / BF16 keys: their dot products round q to their type */
                memcpy(dst, src, (size_t)hd * 4);
                e0_kv_round(a->type_k, dst, hd);
            } else {
                e0_kernels_of(q_type)->from_float(src, b.qb, hd);
                e0_type_traits_of(q_type)->to_float(b.qb, dst, hd);
            }
        }
    if (simd) /* QT [d][r] = Q [r][d], zero rows up to ldq */
        for (int64_t d = 0; d < hd; d++) {
            float *qt = b.QT + (size_t)d * b.ldq;
            for (int r = 0; r < b.ldq; r++) qt[r] = r < nr ? b.Q[(size_t)r * hd + d] : 0.0f;
        }
    memset(b.O, 0, (size_t)nr * hd * 4);
    for (int r = 0; r < nr; r++) {
        const int64_t h = u * G + r % G;
        b.m[r] = a->sinks ? a->sinks[h] : -INFINITY;
        b.l[r] = a->sinks ? 1.0f : 0.0f;
    }

    /* keys of the block's queries, in blocks at multiples of BK: a query's result then depends
     * on its position and keys only, not on how the prompt was cut into chunks or query blocks */
    const int lo = first_key(a, a->pos0 + t0), hi = a->pos0 + t1 - 1, kb0 = lo - lo % BK;
    float bm[E0_ATTN_ROWS > 4096 ? E0_ATTN_ROWS : 4096]; /* nr <= max(E0_ATTN_ROWS, G <= 4096) */

    if (two_pass(a->type_v)) {
        /* pass 1: every block's scores into S [nr][kb - kb0 ...], each row's max */
        int span8 = 0;
        for (int kb = kb0; kb <= hi; kb += BK) {
            const int nk = hi + 1 - kb < BK ? hi + 1 - kb : BK, nk8 = (nk + 7) & ~7;
            load_block(a, u, kb, nk, nk8, next_keys(kb, hi), &b, true, false);
            block_scores(a, t0, nr, kb, nk, nk8, &b, b.S + (kb - kb0), simd, bm);
            for (int r = 0; r < nr; r++)
                if (bm[r] > b.m[r]) b.m[r] = bm[r];
            span8 = kb - kb0 + nk8;
        }
        /* the weights: exp(s - max) / sum (with the sink in the sum), rounded to the value type */
        for (int r = 0; r < nr; r++) {
            float *s = b.S + (size_t)r * b.lds;
            float sum = simd ? e0_attn_exp_sum_avx2(s, span8, b.m[r]) : exp_sum_scalar(s, span8, b.m[r]);
            if (a->sinks) sum += expf(a->sinks[u * G + r % G] - b.m[r]);
            const float inv = 1.0f / sum;
            if (simd && a->type_v == E0_TYPE_F16) { /* one pass: scale and round */
                e0_attn_scale_avx2(s, span8, inv, true);
            } else {
                if (simd) e0_attn_scale_avx2(s, span8, inv, false);
                else
                    for (int j = 0; j < span8; j++) s[j] *= inv;
                e0_kv_round(a->type_v, s, span8);
            }
            b.l[r] = 1.0f;
        }
        /* pass 2: O += W V block by block */
        for (int kb = kb0; kb <= hi; kb += BK) {
            const int nk = hi + 1 - kb < BK ? hi + 1 - kb : BK, nk8 = (nk + 7) & ~7;
            load_block(a, u, kb, nk, nk8, next_keys(kb, hi), &b, false, true);
            if (simd) (avx512() ? e0_attn_pv_avx512 : e0_attn_pv_avx2)(b.S + (kb - kb0), nr, b.lds, nk8, b.V, hd, b.O);
            else pv_scalar(b.S + (kb - kb0), nr, b.lds, nk8, b.V, hd, b.O);
        }
    } else {
        for (int kb = kb0; kb <= hi; kb += BK) {
            const int nk = hi + 1 - kb < BK ? hi + 1 - kb : BK, nk8 = (nk + 7) & ~7;
            load_block(a, u, kb, nk, nk8, next_keys(kb, hi), &b, true, true);
            block_scores(a, t0, nr, kb, nk, nk8, &b, b.S, simd, bm);
            /* online softmax: S becomes the weights exp(S - m_new), O and l are rescaled */
            for (int r = 0; r < nr; r++) {
                float *s = b.S + (size_t)r * b.lds;
                if (bm[r] == -INFINITY) { /* nothing visible in this block */
                    memset(s, 0, (size_t)nk8 * 4);
                    continue;
                }
                const float mn = b.m[r] > bm[r] ? b.m[r] : bm[r];
                const float corr = expf(b.m[r] - mn); /* 0 for the first block (m = -inf) */
                const float sum = simd ? e0_attn_exp_sum_avx2(s, nk8, mn) : exp_sum_scalar(s, nk8, mn);
                b.l[r] = b.l[r] * corr + sum;
                b.m[r] = mn;
                if (corr != 1.0f) {
                    float *o = b.O + (size_t)r * hd;
                    for (int64_t d = 0; d < hd; d++) o[d] *= corr;
                }
            }
            if (simd) (avx512() ? e0_attn_pv_avx512 : e0_attn_pv_avx2)(b.S, nr, b.lds, nk8, b.V, hd, b.O);
            else pv_scalar(b.S, nr, b.lds, nk8, b.V, hd, b.O);
        }
    }
    for (int r = 0; r < nr; r++) {
        const int t = t0 + r / (int)G;
        const int64_t g = r % G;
        float *dst = a->out + (size_t)t * q_dim + (size_t)(u * G + g) * hd;
        const float inv = 1.0f / b.l[r];
        for (int64_t d = 0; d < hd; d++) dst[d] = b.O[(size_t)r * hd + d] * inv;
    }
}

/* ---- forward.c's entry ---- */

bool e0_attn_tiled_wanted(const e0_ctx *c) {
    if (c->hp->mla || !c->act.tile) return false;
    const char *env = getenv("E0_ATTN");
    return !(env && !strcmp(env, "pos"));
}

/* The arguments of layer il for n_tok query tokens from row i of the chunk, at positions pos0 ..,
 * over the cache of sc (the chunk's context, or in a batch the rows' sequence). */
static void layer_args(e0_ctx *c, int il, int n_tok, int pos0, const e0_ctx *sc, int i, e0_attn_args *a) {
    const e0_hparams *hp = c->hp;
    memset(a, 0, sizeof *a);
    a->hd = hp->head_dim;
    a->n_head = hp->n_head;
    a->n_head_kv = hp->n_head_kv;
    a->n_tok = n_tok;
    a->pos0 = pos0;
    a->q = c->act.q + (size_t)i * c->q_dim;
    a->out = c->act.att + (size_t)i * c->q_dim;
    a->k = e0_kv_head_k(sc, il, 0); /* head-major (ctx_impl.h) */
    a->v = e0_kv_head_v(sc, il, 0);
    a->pos_k = c->kv.head_k;
    a->pos_v = c->kv.head_v;
    a->kvh_k = e0_kv_layer_nrows(sc, il) * c->kv.head_k;
    a->kvh_v = e0_kv_layer_nrows(sc, il) * c->kv.head_v;
    a->head_k = c->kv.head_k;
    a->head_v = c->kv.head_v;
    a->type_k = c->kv.type_k;
    a->type_v = c->kv.type_v;
    a->ring = sc->kv.layer_rows ? sc->kv.layer_rows[il] : 0;
    a->n_swa = e0_layer_is_swa(hp, il) ? hp->n_swa : 0;
    a->sinks = c->m->layers[il].sinks;
    a->scale = hp->attn_scale > 0 ? hp->attn_scale : 1.0f / sqrtf((float)hp->head_dim);
    a->n_ctx = c->n_ctx;
}

/* A layer's work: the items of one set of arguments per sequence (one for a chunk; a batch: one
 * per sequence, over its rows, exactly the items that sequence's chunk alone would have), item
 * numbers first[s] .. first[s+1]-1 for sequence s. */
typedef struct {
    e0_ctx *c;
    int n_seq;
    const e0_attn_args *a; /* [n_seq] */
    const long *first;     /* [n_seq + 1] */
} layer_task;

static void layer_worker(void *arg, int ith, int nth) {
    const layer_task *t = arg;
    e0_ctx *c = t->c;
    void *scratch = c->act.tile + (size_t)ith * c->act.tile_bytes;
    const bool simd = e0_simd_level() >= E0_SIMD_AVX2;
    /* items strided over the threads: later query blocks (more keys) are spread evenly */
    int s = 0;
    for (long item = ith; item < t->first[t->n_seq]; item += nth) {
        while (item >= t->first[s + 1]) s++;
        e0_attn_tiled_item(&t->a[s], item - t->first[s], scratch, simd);
    }
}

void e0_attn_tiled_layer(e0_ctx *c, int il, int n_tok, int pos0) {
    if (!c->batch.seqs) {
        e0_attn_args a;
        long first[2] = {0, 0};
        layer_args(c, il, n_tok, pos0, c, 0, &a);
        first[1] = e0_attn_tiled_items(&a);
        layer_task t = {.c = c, .n_seq = 1, .a = &a, .first = first};
        e0_pool_run(c->threads.cur, layer_worker, &t);
        return;
    }
    /* a batch: the per-sequence arguments in the batch's tables (batch.c, sized for n_batch) */
    const int n_seq = c->batch.n_seq;
    e0_attn_args *a = c->batch.attn;
    long *first = c->batch.attn_first;
    first[0] = 0;
    for (int s = 0; s < n_seq; s++) {
        const int r0 = c->batch.seg0[s], rows = c->batch.seg0[s + 1] - r0;
        layer_args(c, il, rows, c->batch.seqs[s]->pos, c->batch.seqs[s], r0, &a[s]);
        first[s + 1] = first[s] + e0_attn_tiled_items(&a[s]);
    }
    layer_task t = {.c = c, .n_seq = n_seq, .a = a, .first = first};
    e0_pool_run(c->threads.cur, layer_worker, &t);
}
