/* ctx.c — building and freeing the inference context (engine.h): the thread pools, the KV cache
 * (in its types: kv.c) and every scratch buffer the forward pass and the predictor use, sized once for n_batch
 * tokens and carved from one allocation (shapes in ctx_impl.h), or only the context's own part of
 * them when it shares another's work buffers (e0_ctx_params.scratch_owner); the small accessors and the
 * phase-time stats. The forward pass itself is forward.c; the prediction policy's setters are in
 * experts_predict.c. */
#include <stdlib.h>
#include <string.h>

#include "base/cpus.h"
#include "engine/attn_tiled.h"
#include "engine/ctx_impl.h"
#include "quant/quant.h"

static size_t max_sz(size_t a, size_t b) { return a > b ? a : b; }

/* Bytes of the largest activation row converted to any vec_dot_type, over every input width a
 * matrix product takes: n_embd, q_dim, ff_max, n_ff_exp. */
static size_t max_xq_row(const e0_hparams *hp, int64_t q_dim, int64_t ff_max) {
    int64_t widths[] = {hp->n_embd, q_dim, ff_max, hp->n_ff_exp, hp->q_lora_rank /* MLA's q_b; 0 otherwise */,
                        hp->ssm_d_inner /* ssm_out's input (hybrids); 0 otherwise */};
    uint32_t vtypes[] = {E0_TYPE_Q8_0, E0_TYPE_Q8_1, E0_TYPE_Q8_K, E0_TYPE_F32};
    size_t best = 0;
    for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++)
        for (size_t j = 0; j < 4; j++) {
            const e0_type_traits *tt = e0_type_traits_of(vtypes[j]);
            int64_t w = widths[i];
            if (w <= 0) continue;
            int64_t blocks = (w + tt->block_size - 1) / tt->block_size;
            best = max_sz(best, (size_t)blocks * tt->type_size);
        }
    return (best + 63) & ~(size_t)63; /* rows at this stride (the experts' gathered inputs) stay 64-byte aligned */
}

/* MLA: the widest row gathered per head (q_nope for k_b, the latent output for v_b). */
static int64_t mla_gath_width(const e0_hparams *hp) {
    int64_t nope = hp->head_dim_k_mla - hp->n_rot;
    return nope > hp->kv_lora_rank ? nope : hp->kv_lora_rank;
}

/* One buffer carved from the scratch allocation (NULL when bytes = 0), 64-byte aligned. own: the
 * context's own even when it shares the work buffers of another (what outlives a call: the
 * logits and the predictor's state); the rest is work space that a call fills before it reads. */
typedef struct {
    void **ptr;
    size_t bytes;
    bool own;
} scratch_part;
#define PART(field, n) {.ptr = (void **)&(field), .bytes = (n)}
#define OWN(field, n) {.ptr = (void **)&(field), .bytes = (n), .own = true}
#define ALIGN64(n) (((n) + 63) & ~(size_t)63)

/* Sizes every scratch buffer; with owner NULL and size_only, only sizes them (for sharing: as
 * if it shared); otherwise allocates and carves them. Alone (owner NULL):
 * one allocation of every part in the order below (c->scratch_bytes, c->scratch_layout_bytes).
 * Sharing owner's work buffers: the work parts point at the owner's, at the same offsets (the
 * layout must be the same size, so the shapes are), and only the own parts are allocated
 * (c->scratch_bytes). */
static int alloc_scratch(e0_ctx *c, int max_threads, const e0_ctx *owner, bool size_only, bool sharing, e0_err *e) {
    const e0_hparams *hp = c->hp;
    const size_t B = (size_t)c->n_batch, E = (size_t)hp->n_embd, X = (size_t)hp->n_expert,
                 K = (size_t)(hp->n_expert_used ? hp->n_expert_used : 1), F = (size_t)hp->n_ff_exp,
                 L = (size_t)hp->n_layer, row = c->max_xq_row;
    const size_t QE = max_sz((size_t)c->q_dim, E); /* q doubles as the FFN output, att as the shared expert's */
    const size_t HB = max_sz((size_t)c->ff_max, E);
    c->act.tile_bytes = hp->mla ? 0 : e0_attn_tiled_scratch(hp->head_dim, hp->n_head / hp->n_head_kv, c->kv.type_k, c->kv.type_v, c->n_ctx);
    /* The order of the parts is the order in memory (kept as it was, for identical runs). */
    scratch_part parts[] = {
        PART(c->act.x, B * E * 4),
        PART(c->act.xn, B * QE * 4),
        PART(c->act.q, B * QE * 4),
        PART(c->act.k, B * (size_t)c->kv_dim * 4),
        PART(c->act.v, B * (size_t)c->kv_dim * 4),
        PART(c->act.att, B * QE * 4),
        PART(c->act.hb, B * HB * 4),
        PART(c->act.hb2, B * HB * 4),
        OWN(c->act.logits, (size_t)hp->n_vocab * 4),
        PART(c->act.scores, (size_t)max_threads * (size_t)c->n_ctx * (size_t)(hp->n_head / hp->n_head_kv) * 4),
        PART(c->xq.buf[0], B * row),
        PART(c->xq.buf[1], B * row),
        PART(c->xq.buf[2], B * row),
        PART(c->xq.buf[3], B * row),
        PART(c->moe.router, X ? B * X * 4 : 0),
        PART(c->moe.sel, X ? B * K * sizeof(int) : 0),
        PART(c->moe.sel_w, X ? B * K * 4 : 0),
        PART(c->moe.pair_of, X ? B * K * sizeof(int) : 0),
        PART(c->moe.pair_tok, X ? B * K * sizeof(int) : 0),
        PART(c->moe.expert_start, X ? (X + 1) * sizeof(int) : 0),
        PART(c->moe.pair_xq, X ? 2 * B * K * row : 0),
        PART(c->moe.pair_hq, X ? B * K * row : 0),
        PART(c->moe.used, X * sizeof(int)),
        PART(c->moe.ptrs, X * sizeof(e0_expert_ptrs)),
        OWN(c->pred.ids, X ? L * K * sizeof(int) : 0),
        OWN(c->pred.valid, X ? L * sizeof(bool) : 0),
        PART(c->pred.logits, X * sizeof(float)),
        OWN(c->pred.hits, X ? L * sizeof(uint64_t) : 0),
        OWN(c->pred.total, X ? L * sizeof(uint64_t) : 0),
        PART(c->moe.pair_h, X ? B * K * F * 4 : 0),
        PART(c->moe.pair_h2, X ? B * K * F * 4 : 0),
        PART(c->moe.pair_out, X ? B * K * E * 4 : 0),
        PART(c->moe.jobs, (2 * X + 4) * sizeof(e0_matmul)),
        PART(c->act.kq, (size_t)max_threads * (size_t)(hp->n_head / hp->n_head_kv) * c->kv.q_head),
        PART(c->act.vrow, (size_t)max_threads * (size_t)hp->head_dim * 4),
        /* added later: empty for the models before them */
        PART(c->moe.route_tmp, X * 4),
        PART(c->mla.qa, hp->mla ? B * (size_t)hp->q_lora_rank * 4 : 0),
        PART(c->mla.gath, hp->mla ? B * (size_t)hp->n_head * (size_t)mla_gath_width(hp) * 4 : 0),
        /* converted rows are at most 4 bytes per value (F32 needs no conversion; F16 2, Q8_* at most 1.25) */
        PART(c->mla.gathq, hp->mla ? B * (size_t)hp->n_head * ((size_t)mla_gath_width(hp) * 4 + 64) : 0),
        PART(c->mla.jobs, hp->mla ? (size_t)hp->n_head * sizeof(e0_matmul) : 0),
        /* hybrid models' scratch (0 bytes, NULL, otherwise) */
        PART(c->rs.qkv, B * (size_t)c->rs.conv_dim * 4),
        PART(c->rs.win, hp->hybrid ? (B + (size_t)hp->ssm_d_conv - 1) * (size_t)c->rs.conv_dim * 4 : 0),
        PART(c->rs.z, B * (size_t)hp->ssm_d_inner * 4),
        PART(c->rs.ba, B * 2 * (size_t)hp->ssm_dt_rank * 4),
        PART(c->rs.beta, B * (size_t)hp->ssm_dt_rank * 4),
        PART(c->rs.gdec, B * (size_t)hp->ssm_dt_rank * 4),
        PART(c->rs.o, B * (size_t)hp->ssm_d_inner * 4),
        PART(c->rs.delta, hp->hybrid ? (size_t)max_threads * (size_t)hp->ssm_d_state * 4 : 0),
        PART(c->rs.qg, hp->hybrid ? B * 2 * (size_t)c->q_dim * 4 : 0),
        /* tiled prefill attention (attn_tiled.c) */
        PART(c->act.tile, (size_t)max_threads * c->act.tile_bytes),
        PART(c->act.embd_raw, c->m->tok_embd.row_bytes),
    };
    const size_t n_parts = sizeof parts / sizeof parts[0];
    size_t total = 0, own = 0;
    for (size_t i = 0; i < n_parts; i++) {
        total += ALIGN64(parts[i].bytes);
        if (parts[i].own) own += ALIGN64(parts[i].bytes);
    }
    c->scratch_layout_bytes = total;
    c->scratch_bytes = owner || sharing ? own : total;
    if (size_only) return 0;
    if (owner && owner->m != c->m) return e0_fail(e, "cannot share scratch buffers: the owner runs another model");
    if (owner && owner->scratch_owner) return e0_fail(e, "cannot share scratch buffers: the owner shares another's itself");
    if (owner && owner->scratch_layout_bytes != total)
        return e0_fail(e, "cannot share scratch buffers: the owner's have another shape (%zu bytes, not %zu)",
                       owner->scratch_layout_bytes, total);
    if (!(c->scratch = e0_alloc(E0_MEM_SCRATCH, c->scratch_bytes)))
        return e0_fail(e, "cannot allocate %zu bytes of scratch buffers", c->scratch_bytes);
    c->scratch_owner = owner;
    size_t off = 0, own_off = 0;
    for (size_t i = 0; i < n_parts; i++) {
        uint8_t *p = !owner ? c->scratch + off : parts[i].own ? c->scratch + own_off : owner->scratch + off;
        *parts[i].ptr = parts[i].bytes ? p : NULL;
        off += ALIGN64(parts[i].bytes);
        if (parts[i].own) own_off += ALIGN64(parts[i].bytes);
    }
    if (X) {
        memset(c->pred.valid, 0, L * sizeof(bool));
        memset(c->pred.hits, 0, L * sizeof(uint64_t));
        memset(c->pred.total, 0, L * sizeof(uint64_t));
    }
    return 0;
}

/* The sizes a context for m with parameters p has (everything alloc_scratch needs but the
 * pointers); returns the larger of the two thread counts. */
static int ctx_shape(e0_ctx *c, const e0_model *m, const e0_ctx_params *p) {
    const e0_hparams *hp = &m->hp;
    c->m = m;
    c->hp = hp;
    c->n_ctx = p && p->n_ctx > 0 ? p->n_ctx : (int)(hp->n_ctx_train < 4096 ? hp->n_ctx_train : 4096);
    c->n_batch = p && p->n_batch > 0 ? p->n_batch : E0_CTX_DEFAULT_BATCH;
    c->threads.n_decode = p && p->n_threads > 0 ? p->n_threads : e0_default_threads(); /* cores, at most the usable CPUs */
    c->threads.n_prefill = p && p->n_threads_prefill > 0 ? p->n_threads_prefill : c->threads.n_decode;
    c->q_dim = hp->n_head * hp->head_dim;
    c->kv_dim = hp->n_head_kv * hp->head_dim;
    c->ff_max = hp->n_ff > hp->n_ff_shexp ? hp->n_ff : hp->n_ff_shexp;
    c->max_xq_row = max_xq_row(hp, c->q_dim, c->ff_max);
    /* the KV cache in its types (e0_ctx_new checks them with e0_kv_check before allocating) */
    c->kv.type_k = p ? p->type_k : E0_TYPE_F32;
    c->kv.type_v = p ? p->type_v : E0_TYPE_F32;
    if (hp->mla) c->kv.type_v = c->kv.type_k; /* MLA: the values are the first kv_lora of the key rows */
    if (e0_kv_check(hp, c->kv.type_k, c->kv.type_v, NULL) == 0) {
        c->kv.row_k = e0_kv_row_bytes(hp, c->kv.type_k);
        c->kv.row_v = e0_kv_row_bytes(hp, c->kv.type_v);
        c->kv.head_k = e0_row_size(c->kv.type_k, hp->head_dim);
        c->kv.head_v = e0_row_size(c->kv.type_v, hp->head_dim);
        c->kv.q_type = (uint32_t)e0_type_traits_of(c->kv.type_k)->vec_dot_type;
        c->kv.q_head = e0_row_size(c->kv.q_type, hp->head_dim);
        c->kv.dot_k = e0_kernels_of(c->kv.type_k)->vec_dot;
        c->kv.f16_k = c->kv.type_k == E0_TYPE_F16 && e0_simd_level() >= E0_SIMD_AVX2;
        c->kv.f16_v = c->kv.type_v == E0_TYPE_F16 && e0_simd_level() >= E0_SIMD_AVX2;
        c->kv.rot_k = hp->mla ? 0 : e0_kv_rot_k(hp, c->kv.type_k);
        c->kv.rot_v = hp->mla ? 0 : e0_kv_rot_v(hp, c->kv.type_v);
        /* n_layer * n_ctx rows; fewer with sliding-window layers (their rings: attn_ext.c) and in
         * hybrids (their attention layers only); MLA (deepseek2) keeps only the compressed rows
         * in k, no separate values */
        const size_t rows = (size_t)e0_kv_layout_rows(hp, c->n_ctx, c->n_batch, NULL, NULL);
        c->kv.bytes_k = rows * c->kv.row_k;
        c->kv.bytes_v = hp->mla ? 0 : rows * c->kv.row_v;
    }
    /* the hybrids' recurrent state: conv windows, then the delta-rule matrices */
    c->rs.conv_dim = hp->hybrid ? e0_recurrent_conv_dim(hp) : 0;
    c->rs.bytes_conv = (size_t)e0_recurrent_layers(hp) * (size_t)(hp->ssm_d_conv > 0 ? hp->ssm_d_conv - 1 : 0) *
                       (size_t)c->rs.conv_dim * sizeof(float);
    c->rs.bytes_ssm = (size_t)e0_recurrent_layers(hp) * (size_t)hp->ssm_dt_rank * (size_t)hp->ssm_d_state *
                      (size_t)hp->ssm_d_state * sizeof(float);
    return c->threads.n_decode > c->threads.n_prefill ? c->threads.n_decode : c->threads.n_prefill;
}

static uint64_t ctx_memory(const e0_model *m, const e0_ctx_params *p, bool sharing) {
    e0_ctx c;
    memset(&c, 0, sizeof c);
    int max_threads = ctx_shape(&c, m, p);
    alloc_scratch(&c, max_threads, NULL, true, sharing, NULL);
    return (uint64_t)c.kv.bytes_k + c.kv.bytes_v + c.scratch_bytes + c.rs.bytes_conv + c.rs.bytes_ssm;
}

uint64_t e0_ctx_memory(const e0_model *m, const e0_ctx_params *p) { return ctx_memory(m, p, p && p->scratch_owner); }
uint64_t e0_ctx_memory_sharing(const e0_model *m, const e0_ctx_params *p) { return ctx_memory(m, p, true); }

e0_ctx *e0_ctx_new(const e0_model *m, const e0_ctx_params *p, e0_err *e) {
    const e0_hparams *hp = &m->hp;
    e0_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        e0_fail(e, "out of memory");
        return NULL;
    }
    int max_threads = ctx_shape(c, m, p);
    if (c->n_ctx > hp->n_ctx_train) {
        e0_fail(e, "context size %d exceeds the model's context_length %lld", c->n_ctx, (long long)hp->n_ctx_train);
        goto fail;
    }
    c->threads.decode = e0_pool_new(c->threads.n_decode);
    c->threads.prefill =
        c->threads.n_prefill == c->threads.n_decode ? c->threads.decode : e0_pool_new(c->threads.n_prefill);
    if (!c->threads.decode || !c->threads.prefill) {
        e0_fail(e, "cannot start %d threads", max_threads);
        goto fail;
    }
    c->threads.cur = c->threads.decode;

    if (e0_kv_check(hp, c->kv.type_k, c->kv.type_v, e) < 0) goto fail;
    if (e0_kv_layout_init(c, e) < 0) goto fail;
    c->kv.k = e0_alloc(E0_MEM_KV, c->kv.bytes_k);
    c->kv.v = hp->mla ? c->kv.k : e0_alloc(E0_MEM_KV, c->kv.bytes_v); /* MLA: no separate values */
    if ((c->kv.bytes_k && !c->kv.k) || (c->kv.bytes_v && !c->kv.v)) { /* 0 bytes: a hybrid without attention layers */
        e0_fail(e, "cannot allocate the KV cache (%zu + %zu bytes; lower -c or use a smaller --cache-type-k/-v)",
                c->kv.bytes_k, c->kv.bytes_v);
        goto fail;
    }

    if (hp->hybrid) {
        c->rs.conv = e0_alloc(E0_MEM_RECURRENT, c->rs.bytes_conv);
        c->rs.ssm = e0_alloc(E0_MEM_RECURRENT, c->rs.bytes_ssm);
        if ((c->rs.bytes_conv && !c->rs.conv) || !c->rs.ssm) {
            e0_fail(e, "cannot allocate the recurrent state (%zu + %zu bytes)", c->rs.bytes_conv, c->rs.bytes_ssm);
            goto fail;
        }
        e0_recurrent_reset(c);
    }
    if (alloc_scratch(c, max_threads, p ? p->scratch_owner : NULL, false, false, e) < 0) goto fail;
    c->pred.predict_from = 1;
    c->pred.predict_ahead = 1;
    return c;
fail:
    e0_ctx_free(c);
    return NULL;
}

void e0_ctx_free(e0_ctx *c) {
    if (!c) return;
    if (!c->threads.borrowed) {
        if (c->threads.prefill != c->threads.decode) e0_pool_free(c->threads.prefill);
        e0_pool_free(c->threads.decode);
    }
    e0_free(E0_MEM_KV, c->kv.k, c->kv.bytes_k);
    if (c->kv.v != c->kv.k) e0_free(E0_MEM_KV, c->kv.v, c->kv.bytes_v);
    e0_free(E0_MEM_RECURRENT, c->rs.conv, c->rs.bytes_conv);
    e0_free(E0_MEM_RECURRENT, c->rs.ssm, c->rs.bytes_ssm);
    e0_free(E0_MEM_SCRATCH, c->scratch, c->scratch_bytes);
    e0_kv_layout_free(c);
    if (!c->scratch_owner) { /* else the batch's tables are the owner's, lent (batch.c) */
        free(c->batch.logits);
        free(c->batch.idx);
        free(c->batch.tok_ptrs);
        free(c->batch.ones);
        free(c->batch.attn);
        free(c->batch.attn_first);
    }
    free(c);
}

const float *e0_ctx_logits(const e0_ctx *c) { return c->act.logits; }
int e0_ctx_pos(const e0_ctx *c) { return c->pos; }
int e0_ctx_n_ctx(const e0_ctx *c) { return c->n_ctx; }
int e0_ctx_n_batch(const e0_ctx *c) { return c->n_batch; }
int e0_ctx_n_threads(const e0_ctx *c) { return c->threads.n_decode; }
int e0_ctx_n_threads_prefill(const e0_ctx *c) { return c->threads.n_prefill; }

int e0_ctx_share_threads(e0_ctx *c, e0_ctx *owner, e0_err *e) {
    if (c == owner || owner->threads.borrowed) return e0_fail(e, "e0_ctx_share_threads: the owner must have pools of its own");
    if (e0_pool_size(c->threads.decode) != e0_pool_size(owner->threads.decode) ||
        e0_pool_size(c->threads.prefill) != e0_pool_size(owner->threads.prefill))
        return e0_fail(e, "e0_ctx_share_threads: the contexts have different thread counts");
    if (!c->threads.borrowed) {
        if (c->threads.prefill != c->threads.decode) e0_pool_free(c->threads.prefill);
        e0_pool_free(c->threads.decode);
    }
    c->threads.decode = owner->threads.decode;
    c->threads.prefill = owner->threads.prefill;
    c->threads.cur = c->threads.decode;
    c->threads.borrowed = true;
    return 0;
}
const e0_model *e0_ctx_model(const e0_ctx *c) { return c->m; }
uint32_t e0_ctx_type_k(const e0_ctx *c) { return c->kv.type_k; }
uint32_t e0_ctx_type_v(const e0_ctx *c) { return c->kv.type_v; }
uint64_t e0_ctx_kv_bytes(const e0_ctx *c) { return (uint64_t)c->kv.bytes_k + c->kv.bytes_v; }

void e0_ctx_truncate(e0_ctx *c, int pos) {
    /* A recurrent state holds every position at once and cannot be rolled back: going back to
     * an earlier position starts the sequence again (e0_ctx_pos() is then 0; callers re-prefill). */
    if (c->m->hp.hybrid) {
        if (pos <= 0 || pos < c->pos) {
            c->pos = 0;
            e0_recurrent_reset(c);
        }
    } else if (pos >= 0 && pos < c->pos) {
        c->pos = pos;
    }
    c->pos = e0_kv_swa_truncate(c, c->pos); /* sliding-window rings may only allow 0 */
    e0_predict_forget(c);
}

uint64_t e0_ctx_recurrent_bytes(const e0_ctx *c) { return (uint64_t)c->rs.bytes_conv + c->rs.bytes_ssm; }

void e0_ctx_set_experts(e0_ctx *c, e0_experts *xc) { c->moe.xc = xc; }

void e0_ctx_enable_timing(e0_ctx *c, bool on) { c->stats.timing = on; }
void e0_ctx_set_route_log(e0_ctx *c, e0_route_log_fn fn, void *user) {
    c->route_log.fn = fn;
    c->route_log.user = user;
}
const e0_ctx_stats *e0_ctx_get_stats(const e0_ctx *c) { return &c->stats.st; }
void e0_ctx_reset_stats(e0_ctx *c) {
    memset(&c->stats.st, 0, sizeof c->stats.st);
    e0_predict_reset_stats(c);
}
