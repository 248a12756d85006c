/* model.c — architectures: read hyperparameters, bind and validate tensors, load weights.
 *
 * Loading is two passes: first every tensor the architecture needs is looked up and its shape
 * checked (nothing is read yet, so a malformed file fails before any large allocation); then
 * the weights are read with pread into two owned buffers, dense and routed experts. */
#include "engine/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant.h"

#define MAX_LAYERS 4096
#define MAX_EXPERTS 4096
#define MAX_DIM (1 << 20)

static const struct {
    const char *name;
    enum e0_arch arch;
} arch_table[] = {
    {"llama", E0_ARCH_LLAMA},       {"qwen2", E0_ARCH_QWEN2},       {"qwen3", E0_ARCH_QWEN3},
    {"qwen2moe", E0_ARCH_QWEN2MOE}, {"qwen3moe", E0_ARCH_QWEN3MOE},
};

const char *e0_arch_name(enum e0_arch a) {
    for (size_t i = 0; i < sizeof arch_table / sizeof arch_table[0]; i++)
        if (arch_table[i].arch == a) return arch_table[i].name;
    return "?";
}

bool e0_model_is_moe(const e0_model *m) { return m->hp.n_expert > 0; }

static uint64_t matrix_bytes(const e0_weight *w) { return w->t ? (uint64_t)w->matrix_bytes : 0; }

uint64_t e0_model_decode_bytes(const e0_model *m, int64_t n_kv) {
    const e0_hparams *hp = &m->hp;
    uint64_t b = matrix_bytes(&m->output) + m->tok_embd.row_bytes + (uint64_t)hp->n_embd * 4;
    for (int64_t il = 0; il < hp->n_layer; il++) {
        const e0_layer *L = &m->layers[il];
        b += matrix_bytes(&L->wq) + matrix_bytes(&L->wk) + matrix_bytes(&L->wv) + matrix_bytes(&L->wo);
        b += matrix_bytes(&L->ffn_gate) + matrix_bytes(&L->ffn_up) + matrix_bytes(&L->ffn_down);
        b += matrix_bytes(&L->router) + matrix_bytes(&L->gate_shexp) + matrix_bytes(&L->up_shexp) + matrix_bytes(&L->down_shexp);
        b += (uint64_t)hp->n_expert_used * (matrix_bytes(&L->gate_exps) + matrix_bytes(&L->up_exps) + matrix_bytes(&L->down_exps));
        b += (uint64_t)hp->n_embd * 4 * 2; /* norms */
        b += 2 * (uint64_t)n_kv * (uint64_t)(hp->n_head_kv * hp->head_dim) * 4;
    }
    return b;
}

/* ---- hyperparameters ---- */

typedef struct {
    const gguf_file *f;
    const char *arch;
    e0_err *e;
} kv_reader;

/* Read integer key "<arch>.<key>" into *out within [lo, hi]. Returns 1 found, 0 absent, -1 error. */
static int get_int(kv_reader *r, const char *key, int64_t lo, int64_t hi, bool required, int64_t *out) {
    char full[160];
    snprintf(full, sizeof full, "%s.%s", r->arch, key);
    int rc = gguf_get_i64(r->f, full, out, r->e);
    if (rc < 0) return -1;
    if (rc == 0) {
        if (required) return e0_fail(r->e, "%s: missing metadata key '%s'", r->f->path, full);
        return 0;
    }
    if (*out < lo || *out > hi)
        return e0_fail(r->e, "%s: %s = %lld out of range [%lld, %lld]", r->f->path, full, (long long)*out,
                       (long long)lo, (long long)hi);
    return 1;
}

static int get_float(kv_reader *r, const char *key, bool required, float *out) {
    char full[160];
    snprintf(full, sizeof full, "%s.%s", r->arch, key);
    int rc = gguf_get_f32(r->f, full, out, r->e);
    if (rc < 0) return -1;
    if (rc == 0 && required) return e0_fail(r->e, "%s: missing metadata key '%s'", r->f->path, full);
    if (rc == 1 && !(isfinite(*out) && *out > 0))
        return e0_fail(r->e, "%s: %s = %g is not a positive number", r->f->path, full, (double)*out);
    return rc;
}

static int read_hparams(const gguf_file *f, e0_hparams *hp, e0_err *e) {
    const gguf_string *arch;
    int rc = gguf_get_str(f, "general.architecture", &arch, e);
    if (rc < 0) return -1;
    if (rc == 0) return e0_fail(e, "%s: missing metadata key 'general.architecture'", f->path);
    bool found = false;
    for (size_t i = 0; i < sizeof arch_table / sizeof arch_table[0]; i++)
        if (!strcmp(arch->s, arch_table[i].name)) {
            hp->arch = arch_table[i].arch;
            hp->arch_name = arch_table[i].name;
            found = true;
        }
    if (!found) return e0_fail(e, "%s: unsupported architecture '%.64s' (supported: llama, qwen2, qwen3, qwen2moe, qwen3moe)", f->path, arch->s);

    kv_reader r = {f, hp->arch_name, e};
    bool moe_arch = hp->arch == E0_ARCH_QWEN2MOE || hp->arch == E0_ARCH_QWEN3MOE;
    int64_t v;
    if (get_int(&r, "block_count", 1, MAX_LAYERS, true, &hp->n_layer) < 0) return -1;
    if (get_int(&r, "embedding_length", 1, MAX_DIM, true, &hp->n_embd) < 0) return -1;
    if (get_int(&r, "context_length", 1, INT32_MAX, true, &hp->n_ctx_train) < 0) return -1;
    if (get_int(&r, "attention.head_count", 1, 4096, true, &hp->n_head) < 0) return -1;
    hp->n_head_kv = hp->n_head;
    if (get_int(&r, "attention.head_count_kv", 1, 4096, false, &hp->n_head_kv) < 0) return -1;
    if (hp->n_head % hp->n_head_kv)
        return e0_fail(e, "%s: head_count %lld is not a multiple of head_count_kv %lld", f->path,
                       (long long)hp->n_head, (long long)hp->n_head_kv);
    hp->head_dim = hp->n_embd / hp->n_head;
    if ((rc = get_int(&r, "attention.key_length", 1, 65536, false, &hp->head_dim)) < 0) return -1;
    if (rc == 0 && hp->n_embd % hp->n_head)
        return e0_fail(e, "%s: embedding_length %lld is not a multiple of head_count %lld", f->path,
                       (long long)hp->n_embd, (long long)hp->n_head);
    int64_t vlen = hp->head_dim;
    if (get_int(&r, "attention.value_length", 1, 65536, false, &vlen) < 0) return -1;
    if (vlen != hp->head_dim)
        return e0_fail(e, "%s: attention.value_length %lld differs from key_length %lld (not supported)", f->path,
                       (long long)vlen, (long long)hp->head_dim);
    hp->n_rot = hp->head_dim;
    if (get_int(&r, "rope.dimension_count", 2, hp->head_dim, false, &hp->n_rot) < 0) return -1;
    if (hp->n_rot % 2) return e0_fail(e, "%s: rope.dimension_count %lld is odd", f->path, (long long)hp->n_rot);
    if (get_float(&r, "attention.layer_norm_rms_epsilon", true, &hp->rms_eps) < 0) return -1;
    hp->rope_base = 10000.0f;
    if (get_float(&r, "rope.freq_base", false, &hp->rope_base) < 0) return -1;

    hp->n_expert = 0;
    hp->n_expert_used = 0;
    if (get_int(&r, "expert_count", 0, MAX_EXPERTS, moe_arch, &hp->n_expert) < 0) return -1;
    if (hp->n_expert > 0) {
        if (get_int(&r, "expert_used_count", 1, MAX_EXPERTS, true, &hp->n_expert_used) < 0) return -1;
        if (hp->n_expert_used > hp->n_expert)
            return e0_fail(e, "%s: expert_used_count %lld > expert_count %lld", f->path,
                           (long long)hp->n_expert_used, (long long)hp->n_expert);
    } else if (moe_arch) {
        return e0_fail(e, "%s: %s.expert_count must be > 0", f->path, hp->arch_name);
    } else if (hp->arch != E0_ARCH_LLAMA && get_int(&r, "expert_count", 0, 0, false, &v) < 0) {
        return -1;
    }
    /* feed_forward_length: the dense FFN (required when there is one). */
    hp->n_ff = 0;
    if (get_int(&r, "feed_forward_length", 1, MAX_DIM, hp->n_expert == 0 || hp->arch == E0_ARCH_LLAMA, &hp->n_ff) < 0)
        return -1;
    hp->n_ff_exp = hp->n_ff;
    if (moe_arch && get_int(&r, "expert_feed_forward_length", 1, MAX_DIM, true, &hp->n_ff_exp) < 0) return -1;
    if (hp->arch == E0_ARCH_QWEN2MOE &&
        get_int(&r, "expert_shared_feed_forward_length", 1, MAX_DIM, true, &hp->n_ff_shexp) < 0)
        return -1;

    hp->rope_neox = hp->arch != E0_ARCH_LLAMA;
    hp->qk_norm = hp->arch == E0_ARCH_QWEN3 || hp->arch == E0_ARCH_QWEN3MOE;
    hp->qkv_bias = hp->arch == E0_ARCH_QWEN2 || hp->arch == E0_ARCH_QWEN2MOE;
    hp->moe_norm_topk = hp->arch != E0_ARCH_QWEN2MOE;
    hp->shared_expert = hp->arch == E0_ARCH_QWEN2MOE;
    return 0;
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
                       bool required) {
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
    w->type = t->type;
    w->ne[0] = ne0;
    w->ne[1] = ne1;
    w->ne[2] = ne2 > 0 ? ne2 : 1;
    w->row_bytes = e0_row_size(t->type, ne0);
    w->matrix_bytes = w->row_bytes * (size_t)ne1;
    return push(bd, (binding){.t = t, .w = w, .expert = ne2 > 0, .size = t->nbytes});
}

static int bind_vector(binder *bd, const float **v, const char *name, int64_t n, bool required) {
    *v = NULL;
    const gguf_tensor *t = lookup(bd, name, required);
    if (!t) return required ? -1 : 0;
    if (!shape_is(t, &n, 1)) return shape_error(bd, t, &n, 1);
    const e0_type_traits *tt = e0_type_traits_of(t->type);
    if (!tt || !tt->to_float) {
        char buf[32];
        return e0_fail(bd->e, "%s: tensor '%s' has unsupported type %s", bd->f->path, name, e0_type_name(t->type, buf));
    }
    return push(bd, (binding){.t = t, .vec = v, .size = (size_t)n * sizeof(float)});
}

static int bind_all(binder *bd, e0_model *m) {
    const e0_hparams *hp = &m->hp;
    int64_t E = hp->n_embd, V, Q = hp->n_head * hp->head_dim, KV = hp->n_head_kv * hp->head_dim;
    char name[96];
    /* The vocabulary size comes from the embedding matrix. */
    const gguf_tensor *te = lookup(bd, "token_embd.weight", true);
    if (!te) return -1;
    if (te->n_dims != 2 || te->ne[0] != (uint64_t)E) {
        int64_t want[2] = {E, (int64_t)te->ne[1]};
        return shape_error(bd, te, want, 2);
    }
    if (te->ne[1] > (uint64_t)INT32_MAX) return e0_fail(bd->e, "%s: vocabulary too large", bd->f->path);
    V = m->hp.n_vocab = (int64_t)te->ne[1];
    if (bind_matrix(bd, &m->tok_embd, "token_embd.weight", E, V, 0, true) < 0) return -1;
    if (bind_vector(bd, &m->output_norm, "output_norm.weight", E, true) < 0) return -1;
    if (bind_matrix(bd, &m->output, "output.weight", E, V, 0, false) < 0) return -1;
    m->tied_output = m->output.t == NULL;

    for (int64_t il = 0; il < hp->n_layer; il++) {
        e0_layer *L = &m->layers[il];
#define NAME(suffix) (snprintf(name, sizeof name, "blk.%lld.%s", (long long)il, suffix), name)
        if (bind_vector(bd, &L->attn_norm, NAME("attn_norm.weight"), E, true) < 0) return -1;
        if (bind_matrix(bd, &L->wq, NAME("attn_q.weight"), E, Q, 0, true) < 0) return -1;
        if (bind_matrix(bd, &L->wk, NAME("attn_k.weight"), E, KV, 0, true) < 0) return -1;
        if (bind_matrix(bd, &L->wv, NAME("attn_v.weight"), E, KV, 0, true) < 0) return -1;
        if (bind_matrix(bd, &L->wo, NAME("attn_output.weight"), Q, E, 0, true) < 0) return -1;
        if (hp->qkv_bias) {
            if (bind_vector(bd, &L->bq, NAME("attn_q.bias"), Q, true) < 0) return -1;
            if (bind_vector(bd, &L->bk, NAME("attn_k.bias"), KV, true) < 0) return -1;
            if (bind_vector(bd, &L->bv, NAME("attn_v.bias"), KV, true) < 0) return -1;
        }
        if (hp->qk_norm) {
            if (bind_vector(bd, &L->q_norm, NAME("attn_q_norm.weight"), hp->head_dim, true) < 0) return -1;
            if (bind_vector(bd, &L->k_norm, NAME("attn_k_norm.weight"), hp->head_dim, true) < 0) return -1;
        }
        if (bind_vector(bd, &L->ffn_norm, NAME("ffn_norm.weight"), E, true) < 0) return -1;
        if (hp->n_expert == 0) {
            if (bind_matrix(bd, &L->ffn_gate, NAME("ffn_gate.weight"), E, hp->n_ff, 0, true) < 0) return -1;
            if (bind_matrix(bd, &L->ffn_up, NAME("ffn_up.weight"), E, hp->n_ff, 0, true) < 0) return -1;
            if (bind_matrix(bd, &L->ffn_down, NAME("ffn_down.weight"), hp->n_ff, E, 0, true) < 0) return -1;
            continue;
        }
        int64_t X = hp->n_expert, F = hp->n_ff_exp;
        if (bind_matrix(bd, &L->router, NAME("ffn_gate_inp.weight"), E, X, 0, true) < 0) return -1;
        if (bind_matrix(bd, &L->gate_exps, NAME("ffn_gate_exps.weight"), E, F, X, true) < 0) return -1;
        if (bind_matrix(bd, &L->up_exps, NAME("ffn_up_exps.weight"), E, F, X, true) < 0) return -1;
        if (bind_matrix(bd, &L->down_exps, NAME("ffn_down_exps.weight"), F, E, X, true) < 0) return -1;
        if (hp->shared_expert) {
            int64_t S = hp->n_ff_shexp;
            if (bind_vector(bd, &L->shexp_gate_inp, NAME("ffn_gate_inp_shexp.weight"), E, true) < 0) return -1;
            if (bind_matrix(bd, &L->gate_shexp, NAME("ffn_gate_shexp.weight"), E, S, 0, true) < 0) return -1;
            if (bind_matrix(bd, &L->up_shexp, NAME("ffn_up_shexp.weight"), E, S, 0, true) < 0) return -1;
            if (bind_matrix(bd, &L->down_shexp, NAME("ffn_down_shexp.weight"), S, E, 0, true) < 0) return -1;
        }
#undef NAME
    }
    return 0;
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
        if (gguf_read(m->gguf, b->t->offset, dst, b->t->nbytes, e) < 0) return -1;
        b->w->data = dst;
        return 0;
    }
    float *v = (float *)dst;
    if (b->t->type == E0_TYPE_F32) {
        if (gguf_read(m->gguf, b->t->offset, v, b->t->nbytes, e) < 0) return -1;
    } else {
        void *tmp = malloc(b->t->nbytes);
        if (!tmp) return e0_fail(e, "out of memory reading '%s'", b->t->name);
        int rc = gguf_read(m->gguf, b->t->offset, tmp, b->t->nbytes, e);
        if (rc == 0) e0_type_traits_of(b->t->type)->to_float(tmp, v, (int64_t)b->t->nelements);
        free(tmp);
        if (rc < 0) return -1;
    }
    for (uint64_t i = 0; i < b->t->nelements; i++)
        if (!isfinite(v[i])) return e0_fail(e, "%s: tensor '%s' contains a non-finite value", m->gguf->path, b->t->name);
    *b->vec = v;
    return 0;
}

e0_model *e0_model_load(const char *path, const e0_model_params *mp, bool load_weights, e0_err *e) {
    e0_model *m = calloc(1, sizeof *m);
    if (!m) {
        e0_fail(e, "out of memory");
        return NULL;
    }
    binder bd = {.e = e};
    if (!(m->gguf = gguf_open(path, e))) goto fail;
    bd.f = m->gguf;
    if (read_hparams(m->gguf, &m->hp, e) < 0) goto fail;
    /* Each layer needs at least 9 tensors: reject absurd block counts before allocating. */
    if ((uint64_t)m->hp.n_layer * 9 > m->gguf->n_tensors) {
        e0_fail(e, "%s: block_count %lld needs at least %lld tensors, the file has %llu", path,
                (long long)m->hp.n_layer, (long long)m->hp.n_layer * 9, (unsigned long long)m->gguf->n_tensors);
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
        if (bd.b[i].expert) m->params_active += bd.b[i].t->nelements / (uint64_t)m->hp.n_expert * (uint64_t)m->hp.n_expert_used;
        else m->params_active += bd.b[i].t->nelements;
    }
    if (m->tied_output) m->output = m->tok_embd;
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
