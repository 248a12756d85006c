/* model.c — load a model: hyperparameters (arch.c), bind and validate tensors, read weights.
 *
 * Loading is two passes: first every tensor the architecture table says the model has is looked
 * up and its shape checked (nothing is read yet, so a malformed file fails before any large
 * allocation); then the weights are read with pread into two owned buffers, dense and routed
 * experts. Which e0_layer / e0_model field each tensor role fills is slot_of() below. */
#include "engine/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/kernels.h"
#include "quant/quant.h"

bool e0_model_is_moe(const e0_model *m) { return m->hp.n_expert > 0; }

static uint64_t matrix_bytes(const e0_weight *w) { return w->t ? (uint64_t)w->matrix_bytes : 0; }

uint64_t e0_model_decode_bytes(const e0_model *m, int64_t n_kv, uint64_t kv_bytes_per_pos) {
    const e0_hparams *hp = &m->hp;
    uint64_t b = matrix_bytes(&m->output) + m->tok_embd.row_bytes + (uint64_t)hp->n_embd * 4;
    for (int64_t il = 0; il < hp->n_layer; il++) {
        const e0_layer *L = &m->layers[il];
        b += matrix_bytes(&L->wq) + matrix_bytes(&L->wk) + matrix_bytes(&L->wv) + matrix_bytes(&L->wo);
        b += matrix_bytes(&L->ffn_gate) + matrix_bytes(&L->ffn_up) + matrix_bytes(&L->ffn_down);
        b += matrix_bytes(&L->router) + matrix_bytes(&L->gate_shexp) + matrix_bytes(&L->up_shexp) + matrix_bytes(&L->down_shexp);
        b += (uint64_t)hp->n_expert_used * (matrix_bytes(&L->gate_exps) + matrix_bytes(&L->up_exps) + matrix_bytes(&L->down_exps));
        b += matrix_bytes(&L->wq_a) + matrix_bytes(&L->wq_b) + matrix_bytes(&L->wkv_a); /* MLA */
        b += (uint64_t)L->wk_b.ne[2] * matrix_bytes(&L->wk_b) + (uint64_t)L->wv_b.ne[2] * matrix_bytes(&L->wv_b);
        b += matrix_bytes(&L->dn_qkv) + matrix_bytes(&L->dn_gate) + matrix_bytes(&L->dn_beta) +
             matrix_bytes(&L->dn_alpha) + matrix_bytes(&L->dn_ba) + matrix_bytes(&L->dn_out);
        b += (uint64_t)hp->n_embd * 4 * 2; /* norms */
        if (L->down_exps_b) /* gpt-oss: the used experts' biases */
            b += (uint64_t)hp->n_expert_used * (uint64_t)(2 * hp->n_ff_exp + hp->n_embd) * 4;
    }
    /* sliding-window layers (gpt-oss) read at most their window; rows are the same size in every
     * layer, so a full layer's share of kv_bytes_per_pos is one of theirs */
    int64_t n_swa_l = 0;
    for (int64_t il = 0; il < hp->n_layer; il++) n_swa_l += e0_layer_is_swa(hp, il);
    if (n_swa_l > 0 && n_swa_l < hp->n_layer) {
        uint64_t per_layer = kv_bytes_per_pos / (uint64_t)(hp->n_layer - n_swa_l);
        b += (uint64_t)n_swa_l * (uint64_t)(n_kv < hp->n_swa ? n_kv : hp->n_swa) * per_layer;
    }
    return b + (uint64_t)n_kv * kv_bytes_per_pos; /* the KV rows of every layer, in their types */
}

/* ---- tensor binding ---- */

typedef struct {
    const gguf_tensor *t;
    e0_weight *w;       /* matrix, or */
    const float **vec;  /* vector converted to F32 */
    bool expert;
    size_t offset;      /* in its buffer */
    size_t size;        /* bytes in its buffer */
} binding;

typedef struct {
    const gguf_file *f;
    binding *b;
    size_t n, cap;
    size_t dense_bytes, expert_bytes;
    bool repack; /* e0_model_params.repack */
    e0_err *e;
} binder;

static int push(binder *bd, binding b) {
    if (bd->n == bd->cap) {
        size_t cap = bd->cap ? bd->cap * 2 : 64;
        binding *nb = realloc(bd->b, cap * sizeof *nb);
        if (!nb) return e0_fail(bd->e, "out of memory");
        bd->b = nb;
        bd->cap = cap;
    }
    size_t *total = b.expert ? &bd->expert_bytes : &bd->dense_bytes;
    b.offset = *total;
    *total += (b.size + 63) & ~(size_t)63;
    bd->b[bd->n++] = b;
    return 0;
}

static const gguf_tensor *lookup(binder *bd, const char *name, bool required) {
    const gguf_tensor *t = gguf_find_tensor(bd->f, name);
    if (!t && required) e0_fail(bd->e, "%s: missing tensor '%s'", bd->f->path, name);
    return t;
}

static int shape_error(binder *bd, const gguf_tensor *t, const int64_t *want, int nd) {
    char got[96] = "", exp[96] = "";
    for (uint32_t i = 0; i < t->n_dims; i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%llu", i ? ", " : "", (unsigned long long)t->ne[i]);
    for (int i = 0; i < nd; i++)
        snprintf(exp + strlen(exp), sizeof exp - strlen(exp), "%s%lld", i ? ", " : "", (long long)want[i]);
    return e0_fail(bd->e, "%s: tensor '%s' has shape [%s], expected [%s]", bd->f->path, t->name, got, exp);
}

static bool shape_is(const gguf_tensor *t, const int64_t *want, int nd) {
    for (int i = 0; i < GGUF_MAX_DIMS; i++) {
        uint64_t w = i < nd ? (uint64_t)want[i] : 1;
        if (t->ne[i] != w) return false;
    }
    return true;
}

/* Bind a matrix [ne0, ne1] or expert stack [ne0, ne1, ne2] (ne2 > 0). Returns -1 on error. */
static int bind_matrix(binder *bd, e0_weight *w, const char *name, int64_t ne0, int64_t ne1, int64_t ne2,
                       bool required, bool expert) {
    memset(w, 0, sizeof *w);
    const gguf_tensor *t = lookup(bd, name, required);
    if (!t) return required ? -1 : 0;
    int64_t want[3] = {ne0, ne1, ne2};
    int nd = ne2 > 0 ? 3 : 2;
    if (!shape_is(t, want, nd)) return shape_error(bd, t, want, nd);
    const e0_type_traits *tt = e0_type_traits_of(t->type);
    if (!tt || !tt->to_float || !tt->vec_dot[E0_SIMD_SCALAR]) {
        char buf[32];
        return e0_fail(bd->e, "%s: tensor '%s' has unsupported type %s", bd->f->path, name, e0_type_name(t->type, buf));
    }
    w->t = t;
    w->type = bd->repack ? e0_repack_type(t->type) : t->type; /* same block size, same bytes */
    w->ne[0] = ne0;
    w->ne[1] = ne1;
    w->ne[2] = ne2 > 0 ? ne2 : 1;
    w->row_bytes = e0_row_size(t->type, ne0);
    w->matrix_bytes = w->row_bytes * (size_t)ne1;
    return push(bd, (binding){.t = t, .w = w, .expert = expert, .size = t->nbytes});
}

/* A vector [ne[0]] (nd 1) or a stack of vectors [ne[0], ne[1]] (nd 2: per-expert biases, the
 * hybrids' conv1d kernel), read as F32 into the dense buffer. */
static int bind_floats(binder *bd, const float **v, const char *name, const int64_t *ne, int nd, bool required) {
    *v = NULL;
    const gguf_tensor *t = lookup(bd, name, required);
    if (!t) return required ? -1 : 0;
    if (!shape_is(t, ne, nd)) return shape_error(bd, t, ne, nd);
    int64_t n = ne[0] * (nd > 1 ? ne[1] : 1);
    const e0_type_traits *tt = e0_type_traits_of(t->type);
    if (!tt || !tt->to_float) {
        char buf[32];
        return e0_fail(bd->e, "%s: tensor '%s' has unsupported type %s", bd->f->path, name, e0_type_name(t->type, buf));
    }
    return push(bd, (binding){.t = t, .vec = v, .size = (size_t)n * sizeof(float)});
}

static int bind_vector(binder *bd, const float **v, const char *name, int64_t n, bool required) {
    return bind_floats(bd, v, name, &n, 1, required);
}

/* Where tensor role t goes: an e0_weight (matrices, expert stacks) or a const float * (vectors)
 * of layer L or of the model. A new tensor role needs a case here (the compiler says so). */
static void *slot_of(e0_model *m, e0_layer *L, enum e0_tensor t) {
    switch (t) {
    case E0_T_TOKEN_EMBD: return &m->tok_embd;
    case E0_T_OUTPUT_NORM: return &m->output_norm;
    case E0_T_OUTPUT: return &m->output;
    case E0_T_ATTN_NORM: return &L->attn_norm;
    case E0_T_ATTN_Q: return &L->wq;
    case E0_T_ATTN_K: return &L->wk;
    case E0_T_ATTN_V: return &L->wv;
    case E0_T_ATTN_Q_BIAS: return &L->bq;
    case E0_T_ATTN_K_BIAS: return &L->bk;
    case E0_T_ATTN_V_BIAS: return &L->bv;
    case E0_T_ATTN_Q_NORM: return &L->q_norm;
    case E0_T_ATTN_K_NORM: return &L->k_norm;
    case E0_T_ATTN_OUT: return &L->wo;
    case E0_T_FFN_NORM: return &L->ffn_norm;
    case E0_T_FFN_GATE: return &L->ffn_gate;
    case E0_T_FFN_UP: return &L->ffn_up;
    case E0_T_FFN_DOWN: return &L->ffn_down;
    case E0_T_FFN_GATE_INP: return &L->router;
    case E0_T_FFN_GATE_EXPS: return &L->gate_exps;
    case E0_T_FFN_UP_EXPS: return &L->up_exps;
    case E0_T_FFN_DOWN_EXPS: return &L->down_exps;
    case E0_T_FFN_GATE_INP_SHEXP: return &L->shexp_gate_inp;
    case E0_T_FFN_GATE_SHEXP: return &L->gate_shexp;
    case E0_T_FFN_UP_SHEXP: return &L->up_shexp;
    case E0_T_FFN_DOWN_SHEXP: return &L->down_shexp;
    case E0_T_ATTN_OUT_BIAS: return &L->bo;
    case E0_T_ATTN_SINKS: return &L->sinks;
    case E0_T_ATTN_POST_NORM: return &L->ffn_norm;
    case E0_T_FFN_GATE_INP_BIAS: return &L->router_b;
    case E0_T_FFN_GATE_EXPS_BIAS: return &L->gate_exps_b;
    case E0_T_FFN_UP_EXPS_BIAS: return &L->up_exps_b;
    case E0_T_FFN_DOWN_EXPS_BIAS: return &L->down_exps_b;
    case E0_T_MLA_Q: return &L->wq;
    case E0_T_MLA_Q_A: return &L->wq_a;
    case E0_T_MLA_Q_A_NORM: return &L->q_a_norm;
    case E0_T_MLA_Q_B: return &L->wq_b;
    case E0_T_MLA_KV_A: return &L->wkv_a;
    case E0_T_MLA_KV_A_NORM: return &L->kv_a_norm;
    case E0_T_MLA_K_B: return &L->wk_b;
    case E0_T_MLA_V_B: return &L->wv_b;
    case E0_T_MLA_OUT: return &L->wo;
    case E0_T_FFN_EXP_PROBS_B: return &L->exp_probs_b;
    case E0_T_DN_QKV: return &L->dn_qkv;
    case E0_T_DN_GATE: return &L->dn_gate;
    case E0_T_DN_CONV1D: return &L->dn_conv;
    case E0_T_DN_DT: return &L->dn_dt;
    case E0_T_DN_A: return &L->dn_a;
    case E0_T_DN_BETA: return &L->dn_beta;
    case E0_T_DN_ALPHA: return &L->dn_alpha;
    case E0_T_DN_BA: return &L->dn_ba;
    case E0_T_DN_NORM: return &L->dn_norm;
    case E0_T_DN_OUT: return &L->dn_out;
    case E0_T_COUNT: break;
    }
    return NULL;
}

/* Bind tensor role t (of layer il, or a model tensor when L is NULL) if the model has it. */
static int bind_tensor(binder *bd, e0_model *m, e0_layer *L, int il, enum e0_tensor t) {
    const e0_tensor_info *ti = e0_tensor_get(t);
    const e0_hparams lhp = e0_layer_hparams(&m->hp, L ? il : m->hp.n_layer); /* a leading dense layer has no experts */
    int presence = e0_tensor_presence_at(t, &lhp, il); /* hybrids: attention or DeltaNet layer */
    if (!presence || ti->per_layer != (L != NULL)) return 0;
    char name[GGUF_MAX_NAME + 1];
    int64_t ne[3];
    e0_tensor_name(t, il, name, sizeof name);
    int nd = e0_tensor_shape(t, &lhp, ne);
    void *slot = slot_of(m, L, t);
    if (nd == 1) return bind_vector(bd, slot, name, ne[0], presence == 2);
    if (nd == 2 && (ti->role == E0_ROLE_BIAS || ti->role == E0_ROLE_CONV))
        return bind_floats(bd, slot, name, ne, 2, presence == 2);
    /* stacks of routed experts go to the expert buffer (and may stream); MLA's per-head stacks are dense */
    return bind_matrix(bd, slot, name, ne[0], ne[1], nd == 3 ? ne[2] : 0, presence == 2,
                       nd == 3 && ti->need == E0_NEED_MOE_FFN);
}

static int bind_all(binder *bd, e0_model *m) {
    const e0_hparams *hp = &m->hp;
    /* The vocabulary size comes from the embedding matrix. */
    char name[GGUF_MAX_NAME + 1];
    const gguf_tensor *te = lookup(bd, e0_tensor_name(E0_T_TOKEN_EMBD, 0, name, sizeof name), true);
    if (!te) return -1;
    if (te->n_dims != 2 || te->ne[0] != (uint64_t)hp->n_embd) {
        int64_t want[2] = {hp->n_embd, (int64_t)te->ne[1]};
        return shape_error(bd, te, want, 2);
    }
    if (te->ne[1] > (uint64_t)INT32_MAX) return e0_fail(bd->e, "%s: vocabulary too large", bd->f->path);
    m->hp.n_vocab = (int64_t)te->ne[1];
    for (int t = 0; t < E0_T_COUNT; t++)
        if (bind_tensor(bd, m, NULL, 0, (enum e0_tensor)t) < 0) return -1;
    m->tied_output = m->output.t == NULL;
    for (int64_t il = 0; il < hp->n_layer; il++)
        for (int t = 0; t < E0_T_COUNT; t++)
            if (bind_tensor(bd, m, &m->layers[il], (int)il, (enum e0_tensor)t) < 0) return -1;
    return 0;
}

/* Tensors each layer must have (to reject absurd block counts before allocating). */
static uint64_t count_required(const e0_hparams *hp) {
    uint64_t n = 0, attn = 0, recr = 0; /* hybrid: the fewer of an attention and a DeltaNet layer's */
    for (int t = 0; t < E0_T_COUNT; t++) {
        const e0_tensor_info *ti = e0_tensor_get((enum e0_tensor)t);
        if (!ti->per_layer || e0_tensor_presence((enum e0_tensor)t, hp) != 2) continue;
        if (hp->hybrid && ti->kind == E0_KIND_ATTN) attn++;
        else if (hp->hybrid && ti->kind == E0_KIND_RECR) recr++;
        else n++;
    }
    return n + (attn < recr ? attn : recr);
}
static uint64_t required_per_layer(const e0_hparams *hp) {
    const uint64_t n = count_required(hp);
    const e0_hparams dense = e0_layer_hparams(hp, 0); /* layer 0 is dense when any is */
    const uint64_t n_dense = count_required(&dense);
    /* leading dense layers may have fewer tensors than MoE ones */
    return hp->n_layer_dense_lead > 0 && n_dense < n ? n_dense : n;
}

/* The vocabulary metadata must be self-consistent: token, score and type arrays of one length,
 * special-token ids inside the vocabulary (-1, also stored as u32 0xFFFFFFFF, means "none"). */
static int check_vocab(const e0_model *m, e0_err *e) {
    const gguf_file *f = m->gguf;
    const void *data;
    uint64_t n_tokens = (uint64_t)m->hp.n_vocab, n;
    int rc = gguf_get_arr(f, "tokenizer.ggml.tokens", GGUF_STR, &data, &n_tokens, e);
    if (rc < 0) return -1;
    if (rc == 0) n_tokens = (uint64_t)m->hp.n_vocab;
    static const struct {
        const char *key;
        enum gguf_vtype type;
    } arrays[] = {{"tokenizer.ggml.scores", GGUF_F32}, {"tokenizer.ggml.token_type", GGUF_I32}};
    for (size_t i = 0; i < 2; i++) {
        if ((rc = gguf_get_arr(f, arrays[i].key, arrays[i].type, &data, &n, e)) < 0) return -1;
        if (rc == 1 && n != n_tokens)
            return e0_fail(e, "%s: %s has %llu entries but tokenizer.ggml.tokens has %llu", f->path, arrays[i].key,
                           (unsigned long long)n, (unsigned long long)n_tokens);
    }
    static const char *const ids[] = {"bos", "eos", "unknown", "padding", "eot", "eom", "sep", "cls", "mask"};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        char key[64];
        int64_t id;
        snprintf(key, sizeof key, "tokenizer.ggml.%s_token_id", ids[i]);
        if ((rc = gguf_get_i64(f, key, &id, e)) < 0) return -1;
        if (id == -1 || id == 0xFFFFFFFFll) continue; /* -1 (also as u32) is how writers say "none" */
        if (rc == 1 && (id < 0 || (uint64_t)id >= n_tokens))
            return e0_fail(e, "%s: %s = %lld is outside the vocabulary of %llu tokens", f->path, key, (long long)id,
                           (unsigned long long)n_tokens);
    }
    return 0;
}

/* Read one binding's data into its place in the dense or expert buffer. */
static int load_binding(const e0_model *m, binding *b, e0_err *e) {
    uint8_t *dst = (b->expert ? m->expert_buf : m->dense_buf) + b->offset;
    if (b->w) {
        if (gguf_read_tensor(m->gguf, b->t, 0, dst, b->t->nbytes, e) < 0) return -1;
        if (b->w->type != b->t->type) e0_repack(b->t->type, dst, b->t->nbytes);
        b->w->data = dst;
        return 0;
    }
    float *v = (float *)dst;
    if (b->t->type == E0_TYPE_F32) {
        if (gguf_read_tensor(m->gguf, b->t, 0, v, b->t->nbytes, e) < 0) return -1;
    } else {
        void *tmp = malloc(b->t->nbytes);
        if (!tmp) return e0_fail(e, "out of memory reading '%s'", b->t->name);
        int rc = gguf_read_tensor(m->gguf, b->t, 0, tmp, b->t->nbytes, e);
        if (rc == 0) e0_type_traits_of(b->t->type)->to_float(tmp, v, (int64_t)b->t->nelements);
        free(tmp);
        if (rc < 0) return -1;
    }
    for (uint64_t i = 0; i < b->t->nelements; i++)
        if (!isfinite(v[i])) return e0_fail(e, "%s: tensor '%s' contains a non-finite value", m->gguf->path, b->t->name);
    *b->vec = v;
    return 0;
}

/* token_embd stays in the file (e0_model_params.embd_from_file): its binding leaves the dense
 * buffer, whose later parts move down by its size (their order is unchanged). */
static void embd_to_file(binder *bd, e0_model *m) {
    size_t j = 0;
    bd->dense_bytes = 0;
    for (size_t i = 0; i < bd->n; i++) {
        binding b = bd->b[i];
        if (b.w == &m->tok_embd) continue;
        if (!b.expert) {
            b.offset = bd->dense_bytes;
            bd->dense_bytes += (b.size + 63) & ~(size_t)63;
        }
        bd->b[j++] = b;
    }
    bd->n = j;
    m->embd_from_file = true;
}

int e0_model_embd_row(const e0_model *m, int32_t tok, float *out, uint8_t *raw, e0_err *e) {
    const e0_weight *w = &m->tok_embd;
    if (w->data) {
        e0_get_row(w, tok, out);
        return 0;
    }
    if (gguf_read_tensor(m->gguf, w->t, (uint64_t)tok * w->row_bytes, raw, w->row_bytes, e) < 0) return -1;
    e0_type_traits_of(w->t->type)->to_float(raw, out, w->ne[0]); /* the file's bytes, not repacked */
    return 0;
}

e0_model *e0_model_load(const char *path, const e0_model_params *mp, bool load_weights, e0_err *e) {
    e0_model *m = calloc(1, sizeof *m);
    if (!m) {
        e0_fail(e, "out of memory");
        return NULL;
    }
    binder bd = {.e = e, .repack = mp && mp->repack};
    if (!(m->gguf = gguf_open(path, e))) goto fail;
    bd.f = m->gguf;
    if (e0_arch_read_hparams(m->gguf, &m->hp, e) < 0) goto fail;
    uint64_t per_layer = required_per_layer(&m->hp);
    if ((uint64_t)m->hp.n_layer * per_layer > m->gguf->n_tensors) {
        e0_fail(e, "%s: block_count %lld needs at least %llu tensors, the file has %llu", path, (long long)m->hp.n_layer,
                (unsigned long long)((uint64_t)m->hp.n_layer * per_layer), (unsigned long long)m->gguf->n_tensors);
        goto fail;
    }
    m->layers = calloc((size_t)m->hp.n_layer, sizeof *m->layers);
    if (!m->layers) {
        e0_fail(e, "out of memory");
        goto fail;
    }
    if (bind_all(&bd, m) < 0) goto fail;
    if (check_vocab(m, e) < 0) goto fail;

    for (size_t i = 0; i < bd.n; i++) {
        m->params_total += bd.b[i].t->nelements;
        if (bd.b[i].expert) m->expert_file_bytes += bd.b[i].t->nbytes;
        if (bd.b[i].expert) m->params_active += bd.b[i].t->nelements / (uint64_t)m->hp.n_expert * (uint64_t)m->hp.n_expert_used;
        else m->params_active += bd.b[i].t->nelements;
    }
    if (m->tied_output) m->output = m->tok_embd;
    if (mp && mp->embd_from_file && !m->tied_output) embd_to_file(&bd, m);
    if (!load_weights) goto done;

    m->dense_bytes = bd.dense_bytes;
    m->dense_buf = e0_alloc(E0_MEM_DENSE, bd.dense_bytes);
    if (!m->dense_buf) {
        e0_fail(e, "cannot allocate %zu bytes for the dense weights", bd.dense_bytes);
        goto fail;
    }
    bool experts = mp ? mp->experts_resident : true;
    if (experts && bd.expert_bytes) {
        m->expert_bytes = bd.expert_bytes;
        m->expert_buf = e0_alloc(E0_MEM_EXPERTS, bd.expert_bytes);
        if (!m->expert_buf) {
            e0_fail(e, "cannot allocate %zu bytes for the routed experts", bd.expert_bytes);
            goto fail;
        }
    }
    uint64_t total = 0, done_bytes = 0;
    for (size_t i = 0; i < bd.n; i++)
        if (!bd.b[i].expert || m->expert_buf) total += bd.b[i].t->nbytes;
    for (size_t i = 0; i < bd.n; i++) {
        if (bd.b[i].expert && !m->expert_buf) continue;
        if (load_binding(m, &bd.b[i], e) < 0) goto fail;
        done_bytes += bd.b[i].t->nbytes;
        if (mp && mp->progress) mp->progress(mp->progress_user, done_bytes, total);
    }
    if (m->tied_output) m->output = m->tok_embd;
done:
    free(bd.b);
    return m;
fail:
    free(bd.b);
    e0_model_free(m);
    return NULL;
}

void e0_model_free(e0_model *m) {
    if (!m) return;
    e0_free(E0_MEM_DENSE, m->dense_buf, m->dense_bytes);
    e0_free(E0_MEM_EXPERTS, m->expert_buf, m->expert_bytes);
    free(m->layers);
    gguf_close(m->gguf);
    free(m);
}
