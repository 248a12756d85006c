/* test_arch.c — the architecture table (engine/arch.h) is self-consistent: every row has a unique
 * name that finds it again; every tensor role has a well-formed, unique name and a shape; and for
 * every row, each kind of model it allows (dense and/or MoE, tied output where allowed) written
 * by synth loads with every tensor of the file bound to its slot, the row's flags in the
 * hyperparameters, and evaluates to finite logits. An unknown architecture name gives one error
 * naming it and the supported ones. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/arch.h"
#include "engine/engine.h"
#include "gguf/gguf.h"
#include "quant/quant.h"
#include "synth/synth.h"
#include "t.h"

static char tmpdir[64];

static void test_rows(void) {
    char list[512];
    e0_arch_list(", ", list, sizeof list);
    for (int i = 0; i < E0_ARCH_COUNT; i++) {
        const e0_arch_info *a = e0_arch_get((enum e0_arch)i);
        CHECKF(a && a->arch == (enum e0_arch)i, "row %d is not architecture %d", i, i);
        if (!a) continue;
        CHECKF(a->name && *a->name, "row %d has no name", i);
        CHECKF(e0_arch_by_name(a->name) == a, "'%s' finds another row", a->name);
        CHECKF(strstr(list, a->name) != NULL, "the list '%s' lacks %s", list, a->name);
        CHECKF(a->rope_freq_base > 0 && a->typical_rope_base > 0 && a->typical_rms_eps > 0, "%s: defaults", a->name);
        CHECKF(!a->shared_expert_gate || a->shared_expert, "%s: a shared expert gate without a shared expert", a->name);
        CHECKF(a->ffn != E0_FFN_DENSE || (!a->shared_expert && !a->expert_ff_key), "%s: expert fields on a dense row",
               a->name);
        char key[96];
        CHECKF(!strncmp(e0_arch_key(a, E0_KV_BLOCK_COUNT, key, sizeof key), a->name, strlen(a->name)) &&
                   !strcmp(key + strlen(a->name), ".block_count"),
               "%s: key %s", a->name, key);
    }
    CHECK(e0_arch_get(E0_ARCH_COUNT) == NULL);
    CHECK(e0_arch_by_name("mamba") == NULL && e0_arch_by_name("") == NULL && e0_arch_by_name("llama2") == NULL);
}

static void test_tensor_rows(void) {
    char names[E0_T_COUNT][2][GGUF_MAX_NAME + 1];
    for (int t = 0; t < E0_T_COUNT; t++) {
        const e0_tensor_info *ti = e0_tensor_get((enum e0_tensor)t);
        CHECKF(ti && ti->name, "tensor %d has no row", t);
        if (!ti || !ti->name) continue;
        /* per-layer names hold exactly one %d, the others no conversion at all */
        const char *pct = strchr(ti->name, '%');
        int n_pct = 0;
        for (const char *c = ti->name; *c; c++) n_pct += *c == '%';
        if (ti->per_layer) CHECKF(n_pct == 1 && pct && pct[1] == 'd', "%s: per-layer name without one %%d", ti->name);
        else CHECKF(n_pct == 0, "%s: model tensor name with %%", ti->name);
        CHECKF(ti->n_dims >= 1 && ti->n_dims <= 3, "%s: %d dims", ti->name, ti->n_dims);
        if (ti->n_dims == 3 && ti->need != E0_NEED_MLA) /* MLA's k_b / v_b: one matrix per head */
            CHECKF(ti->ne[2] == E0_DIM_EXPERT, "%s: an expert stack's last dim is not experts", ti->name);
        e0_tensor_name((enum e0_tensor)t, 0, names[t][0], sizeof names[t][0]);
        e0_tensor_name((enum e0_tensor)t, 17, names[t][1], sizeof names[t][1]);
        CHECKF(!strstr(names[t][0], "%"), "%s: unexpanded", names[t][0]);
        CHECKF(ti->per_layer == (strcmp(names[t][0], names[t][1]) != 0), "%s: layer in the name", ti->name);
        if (ti->per_layer) CHECKF(!strncmp(names[t][1], "blk.17.", 7), "%s", names[t][1]);
        for (int u = 0; u < t; u++) {
            /* one name may have two rows that no model has both of: ordinary attention vs MLA */
            enum e0_need nt = ti->need, nu = e0_tensor_get((enum e0_tensor)u)->need;
            bool exclusive = (nt == E0_NEED_MHA) != (nu == E0_NEED_MHA) &&
                             (nt == E0_NEED_MHA || nt == E0_NEED_MLA || nt == E0_NEED_MLA_Q) &&
                             (nu == E0_NEED_MHA || nu == E0_NEED_MLA || nu == E0_NEED_MLA_Q);
            CHECKF(exclusive || (strcmp(names[t][0], names[u][0]) && strcmp(names[t][1], names[u][1])), "%s named twice",
                   names[t][0]);
        }
    }
    CHECK(e0_tensor_get(E0_T_COUNT) == NULL);
    /* synth writes model tensors before and after the layers: the per-layer rows are contiguous */
    int runs = 0;
    for (int t = 0; t < E0_T_COUNT; t++)
        runs += e0_tensor_get((enum e0_tensor)t)->per_layer && (t == 0 || !e0_tensor_get((enum e0_tensor)(t - 1))->per_layer);
    CHECKF(runs == 1, "%d runs of per-layer tensors", runs);
}

/* A small model of architecture a: 2 layers, n_embd 128, 4 heads of 32 (2 KV heads). */
static synth_params small(enum e0_arch a, int moe) {
    synth_params p = {0};
    e0_err e;
    p.arch = a;
    synth_shape_apply(&p, "tiny", &e);
    p.type = E0_TYPE_Q8_0;
    p.n_layer = 2, p.n_embd = 128, p.n_head = 4, p.n_head_kv = 2, p.head_dim = 32, p.n_ff = 256;
    p.n_vocab = 300, p.n_ctx = 64, p.seed = 3, p.n_threads = 1;
    const e0_arch_info *ai = e0_arch_get(a);
    if (ai->mla) p.head_dim = p.n_rot + 16, p.n_head_kv = 1; /* deepseek2: head_dim = nope + rope */
    p.n_expert = p.n_expert_used = p.n_ff_exp = p.n_ff_shexp = 0;
    if (moe) {
        p.n_expert = 4, p.n_expert_used = 2;
        if (ai->expert_ff_key) p.n_ff_exp = 64;
        if (ai->shared_expert) p.n_ff_shexp = 96;
    }
    return p;
}

/* Load p's model and check it against the row and the file. */
static void check_loads(const synth_params *p, const char *what) {
    const e0_arch_info *a = e0_arch_get(p->arch);
    char path[128];
    snprintf(path, sizeof path, "%s/m.gguf", tmpdir);
    e0_err e = {{0}};
    synth_stats st;
    int rc = synth_write(p, path, &st, &e);
    CHECKF(rc == 0, "%s: synth: %s", what, e.msg);
    if (rc) return;
    e0_model *m = e0_model_load(path, NULL, true, &e);
    CHECKF(m, "%s: load: %s", what, e.msg);
    if (!m) return;
    const e0_hparams *hp = &m->hp;
    CHECKF(hp->arch == a->arch && !strcmp(hp->arch_name, a->name), "%s: loaded as %s", what, hp->arch_name);
    /* deepseek2's and glm4moe's routing flags come from their keys (shared expert count, gating, norm) */
    CHECKF(hp->qk_norm == a->qk_norm && hp->qkv_bias == a->qkv_bias &&
               (a->mla || a->ds_routing || (hp->shared_expert == a->shared_expert && hp->moe_norm_topk == a->norm_topk &&
                           hp->gating == a->gating)) &&
               hp->shared_expert_gate == a->shared_expert_gate && hp->rope_neox == (a->rope != E0_ROPE_NORMAL) &&
               hp->rope_imrope == (a->rope == E0_ROPE_IMROPE) && hp->hybrid == a->hybrid,
           "%s: flags differ from the row", what);
    if (a->mla)
        CHECKF(hp->mla && hp->shared_expert == (p->n_expert_shared > 0) && hp->n_layer_dense_lead == p->n_layer_dense_lead &&
                   hp->kv_lora_rank == p->kv_lora_rank && hp->head_dim == p->kv_lora_rank + p->n_rot && hp->n_head_kv == 1,
               "%s: MLA hyperparameters", what);
    if (a->mla) /* the compressed cache: one row of kv_lora_rank + rope values per token and layer, no V */
        CHECKF(e0_kv_bytes_per_pos(hp, E0_TYPE_F16, E0_TYPE_F16) == (uint64_t)(p->n_layer * (p->kv_lora_rank + p->n_rot) * 2),
               "%s: MLA KV bytes per token %llu", what, (unsigned long long)e0_kv_bytes_per_pos(hp, E0_TYPE_F16, E0_TYPE_F16));
    CHECKF(hp->n_expert == p->n_expert && hp->n_expert_used == p->n_expert_used, "%s: experts", what);
    CHECKF(hp->n_vocab == p->n_vocab && hp->n_layer == p->n_layer && hp->n_embd == p->n_embd, "%s: dims", what);
    CHECKF(m->tied_output == (p->tied_output != 0), "%s: tied %d", what, m->tied_output);
    /* every tensor of the file was bound: the loader's parameter count is the file's */
    uint64_t file_params = 0;
    for (uint64_t i = 0; i < m->gguf->n_tensors; i++) file_params += m->gguf->tensors[i].nelements;
    CHECKF(m->params_total == file_params && file_params == st.n_params, "%s: %llu of %llu parameters bound", what,
           (unsigned long long)m->params_total, (unsigned long long)file_params);
    /* and to the slots the row's flags promise */
    for (int64_t il = 0; il < hp->n_layer; il++) {
        const e0_layer *L = &m->layers[il];
        if (e0_layer_is_recurrent(hp, il)) { /* hybrid: a Gated DeltaNet layer, no attention tensors */
            CHECKF(L->attn_norm && L->ffn_norm && L->dn_qkv.data && L->dn_gate.data && L->dn_out.data && L->dn_conv &&
                       L->dn_dt && L->dn_a && L->dn_norm && !L->wq.t && !L->q_norm,
                   "%s: DeltaNet layer %lld", what, (long long)il);
            CHECKF(a->dn_ba_fused ? L->dn_ba.data && !L->dn_beta.t : L->dn_beta.data && L->dn_alpha.data && !L->dn_ba.t,
                   "%s: DeltaNet beta/alpha", what);
        } else if (a->mla) {
            CHECKF(L->attn_norm && L->ffn_norm && (p->q_lora_rank ? L->wq_a.data && L->wq_b.data && L->q_a_norm : L->wq.data != NULL) &&
                       L->wkv_a.data && L->kv_a_norm && L->wk_b.data && L->wv_b.data && L->wo.data && !L->wk.data,
                   "%s: MLA attention", what);
            CHECKF(!a->qkv_bias == !(L->bq && L->bk && L->bv), "%s: biases", what);
            CHECKF(!a->qk_norm == !(L->q_norm && L->k_norm), "%s: q/k norms", what);
        } else {
            CHECKF(L->attn_norm && L->ffn_norm && L->wq.data && L->wk.data && L->wv.data && L->wo.data, "%s: attention", what);
            /* glm4moe: optional biases and norms, which synth writes */
            CHECKF(!(a->qkv_bias || a->qkv_bias_opt) == !(L->bq && L->bk && L->bv), "%s: biases", what);
            CHECKF(!(a->qk_norm || a->qk_norm_opt) == !(L->q_norm && L->k_norm), "%s: q/k norms", what);
            CHECKF(L->wq.ne[1] == (a->hybrid ? 2 : 1) * p->n_head * p->head_dim, "%s: attn_q rows", what);
            CHECKF(!a->hybrid || !L->dn_qkv.t, "%s: attention layer with DeltaNet tensors", what);
        }
        int moe = p->n_expert > 0 && il >= p->n_layer_dense_lead; /* deepseek2's leading layers are dense */
        CHECKF(!moe == !(L->router.data && L->gate_exps.data && L->up_exps.data && L->down_exps.data), "%s: experts", what);
        CHECKF(moe == !(L->ffn_gate.data && L->ffn_up.data && L->ffn_down.data), "%s: dense FFN", what);
        CHECKF(!(moe && (a->shared_expert || p->n_expert_shared > 0)) == !(L->gate_shexp.data && L->up_shexp.data && L->down_shexp.data),
               "%s: shared expert", what);
        CHECKF(!(moe && a->shared_expert_gate) == !L->shexp_gate_inp, "%s: shared expert gate", what);
        if (moe)
            CHECKF(L->gate_exps.ne[1] == (a->expert_ff_key ? p->n_ff_exp : p->n_ff) && L->gate_exps.ne[2] == p->n_expert,
                   "%s: expert width", what);
    }
    /* and it runs */
    e0_ctx *c = e0_ctx_new(m, &(e0_ctx_params){.n_ctx = 16, .n_threads = 1}, &e);
    CHECKF(c, "%s: ctx: %s", what, e.msg);
    if (c) {
        int toks[3] = {1, 5, 9};
        CHECKF(e0_eval(c, toks, 3, NULL, &e) == 0, "%s: eval: %s", what, e.msg);
        const float *l = e0_ctx_logits(c);
        int finite = 1;
        for (int i = 0; i < p->n_vocab; i++) finite &= isfinite(l[i]) != 0;
        CHECKF(finite, "%s: non-finite logits", what);
        e0_ctx_free(c);
    }
    e0_model_free(m);
    unlink(path);
}

static void test_every_row_loads(void) {
    for (int i = 0; i < E0_ARCH_COUNT; i++) {
        const e0_arch_info *a = e0_arch_get((enum e0_arch)i);
        char what[64];
        for (int moe = 0; moe <= 1; moe++) {
            if ((moe && a->ffn == E0_FFN_DENSE) || (!moe && a->ffn == E0_FFN_MOE)) continue;
            for (int tied = 0; tied <= a->tied_output; tied++) {
                synth_params p = small(a->arch, moe);
                p.tied_output = tied;
                snprintf(what, sizeof what, "%s%s%s", a->name, moe ? " moe" : " dense", tied ? " tied" : "");
                check_loads(&p, what);
            }
        }
    }
}

/* gpt-oss's sliding_window_pattern as one bool per layer (synth --swa-pattern-array): the pattern
 * of llama.cpp's default period 2 loads as that period; another one (period 3) is refused with the
 * layer named, since llama.cpp leaves the array unread and would run period 2. */
static void test_swa_pattern_array(void) {
    char path[128];
    snprintf(path, sizeof path, "%s/swa.gguf", tmpdir);
    for (int period = 2; period <= 3; period++) {
        synth_params p = small(E0_ARCH_GPTOSS, 1);
        p.n_layer = 5, p.n_swa = 4, p.swa_period = period, p.swa_pattern_array = 1;
        e0_err e = {{0}};
        synth_stats st;
        CHECKF(synth_write(&p, path, &st, &e) == 0, "synth: %s", e.msg);
        e0_model *m = e0_model_load(path, NULL, false, &e);
        if (period == 2) {
            CHECKF(m, "period 2 array: %s", e.msg);
            for (int64_t il = 0; m && il < 5; il++)
                CHECKF(e0_layer_is_swa(&m->hp, il) == (il % 2 == 0), "layer %lld", (long long)il);
        } else {
            CHECK(m == NULL);
            CHECKF(strstr(e.msg, "sliding_window_pattern says layer 1 is sliding-window") && strstr(e.msg, "period 2"), "%s",
                   e.msg);
        }
        e0_model_free(m);
    }
    unlink(path);
}

/* A file naming an architecture the table lacks: one error naming it and the supported ones. */
static void test_unknown_arch(void) {
    char path[128];
    snprintf(path, sizeof path, "%s/mamba.gguf", tmpdir);
    e0_err e = {{0}};
    gguf_writer *w = gguf_writer_open(path, &e);
    CHECKF(w, "%s", e.msg);
    if (!w) return;
    gguf_writer_kv_str(w, "general.architecture", "mamba");
    gguf_writer_kv_u32(w, "mamba.block_count", 1);
    CHECKF(gguf_writer_close(w, &e) == 0, "%s", e.msg);
    e0_model *m = e0_model_load(path, NULL, false, &e);
    CHECK(m == NULL);
    e0_model_free(m);
    CHECKF(strstr(e.msg, "'mamba'") && strstr(e.msg, "unsupported architecture") && !strchr(e.msg, '\n'), "%s", e.msg);
    for (int i = 0; i < E0_ARCH_COUNT; i++)
        CHECKF(strstr(e.msg, e0_arch_get((enum e0_arch)i)->name), "'%s' does not list %s", e.msg,
               e0_arch_get((enum e0_arch)i)->name);
    unlink(path);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_arch.XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(test_rows);
    RUN(test_tensor_rows);
    RUN(test_every_row_loads);
    RUN(test_unknown_arch);
    RUN(test_swa_pattern_array);
    rmdir(tmpdir);
    return T_DONE();
}
