/* test_hybrid.c — the hybrid linear-attention models (qwen35, qwen35moe, qwen3next: Gated DeltaNet
 * layers with a recurrent state, gated attention every few layers) inside the engine; their
 * comparison with llama.cpp is in test_llamacpp.c (group "hybrid"). Synth models, written here:
 *  - prefilling N tokens then decoding one gives the logits of prefilling N + 1 (F32 tolerance of
 *    ../shared/golden/README.md), and so do N + 1 single-token steps and other prefill chunk sizes;
 *  - the recurrent state is per sequence: truncating to the current position keeps it, going back
 *    restarts the sequence (position 0, a zero state: a replay gives the first run's logits);
 *  - the architecture table: which layers are recurrent (full_attention_interval), the KV cache
 *    holds only the attention layers, the state's bytes in the E0_MEM_RECURRENT ledger category;
 *  - streamed experts: routing=actual is byte-identical to resident ones (logits and greedy ids),
 *    routing=predicted runs;
 *  - `chat`: a second turn reuses the recurrent state (only the new tokens are prefilled);
 *  - `info` shows the recurrent state; malformed hybrid metadata is refused with a clear error;
 *  - the Qwen3.5 chat template's enable_thinking; an MTP block is loaded past and ignored. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/ctx_impl.h"
#include "engine/engine.h"
#include "t.h"

#define PATH 1024

/* The F32 tolerances of ../shared/golden/README.md: rel_rms and max_abs / std of the reference row. */
#define TOL_REL 1e-4
#define TOL_MAX 1e-3

static char models[3][PATH];
static const char *const archs[3] = {"qwen35", "qwen35moe", "qwen3next"};

static int synth(const char *arch, const char *extra, const char *type, char *path, size_t cap) {
    char cmd[PATH * 3];
    snprintf(path, cap, "%s/test-hybrid-%s%s-%s.gguf", t_build(), arch, extra[0] ? "-x" : "", type);
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer synth --arch %s --type %s --seed 3 %s --out '%s' >/dev/null 2>&1",
             t_build(), arch, type, extra, path);
    return t_sh(cmd, NULL, 0);
}

/* rel_rms and max_abs of x against the reference r (n values), both scaled by r's std. */
static void compare(const float *r, const float *x, int64_t n, double *rel, double *mx) {
    double mean = 0, var = 0, se = 0, m = 0;
    for (int64_t i = 0; i < n; i++) mean += r[i];
    mean /= (double)n;
    for (int64_t i = 0; i < n; i++) {
        double d = (double)x[i] - r[i];
        var += (r[i] - mean) * (r[i] - mean);
        se += d * d;
        if (!(fabs(d) <= m)) m = isnan(d) ? INFINITY : fabs(d);
    }
    double sd = sqrt(var / (double)n);
    *rel = sqrt(se / (double)n) / sd;
    *mx = m / sd;
}

static void ids(int32_t V, int *out, int n, uint64_t seed) {
    for (int i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        out[i] = 1 + (int)((seed >> 33) % (uint64_t)(V - 1));
    }
}

static e0_ctx *new_ctx(const e0_model *m, int n_batch) {
    e0_err e;
    e0_ctx *c = e0_ctx_new(m, &(e0_ctx_params){.n_ctx = 256, .n_threads = 2, .n_batch = n_batch}, &e);
    CHECKF(c, "%s", e.msg);
    return c;
}

/* Prefill N then decode 1 == prefill N + 1 == N + 1 single steps == prefill in chunks of 5. */
static void test_prefill_then_decode(void) {
    for (int a = 0; a < 3; a++) {
        e0_err e;
        e0_model *m = e0_model_load(models[a], NULL, true, &e);
        CHECKF(m, "%s: %s", archs[a], m ? "" : e.msg);
        if (!m) continue;
        const int64_t V = m->hp.n_vocab;
        enum { N = 40 };
        int tok[N + 1];
        ids((int32_t)V, tok, N + 1, 11 + (uint64_t)a);
        float *all = malloc((size_t)(N + 1) * (size_t)V * sizeof(float)), *dec = malloc((size_t)V * sizeof(float));
        e0_ctx *c1 = new_ctx(m, 0), *c2 = new_ctx(m, 0), *c3 = new_ctx(m, 5), *c4 = new_ctx(m, 0);
        if (all && dec && c1 && c2 && c3 && c4) {
            /* prefill N + 1 at once: row N is the reference */
            CHECKF(e0_eval(c1, tok, N + 1, all, &e) == 0, "%s", e.msg);
            /* prefill N, then one decode step */
            CHECKF(e0_eval(c2, tok, N, NULL, &e) == 0, "%s", e.msg);
            CHECKF(e0_decode(c2, tok[N], &e) == 0, "%s", e.msg);
            memcpy(dec, e0_ctx_logits(c2), (size_t)V * sizeof(float));
            double rel, mx;
            compare(all + (size_t)N * V, dec, V, &rel, &mx);
            printf("  %s: prefill %d + decode 1 vs prefill %d: rel_rms %.2e, max_abs/std %.2e%s\n", archs[a], N, N + 1, rel, mx,
                   memcmp(all + (size_t)N * V, dec, (size_t)V * sizeof(float)) ? "" : " (bit-identical)");
            CHECKF(rel <= TOL_REL && mx <= TOL_MAX, "%s: prefill+decode differs from prefill: rel %g max %g", archs[a], rel, mx);
            /* chunks of 5 tokens, every row */
            float *rows = malloc((size_t)(N + 1) * (size_t)V * sizeof(float));
            if (rows) {
                CHECKF(e0_eval(c3, tok, N + 1, rows, &e) == 0, "%s", e.msg);
                for (int i = 0; i <= N; i++) {
                    compare(all + (size_t)i * V, rows + (size_t)i * V, V, &rel, &mx);
                    CHECKF(rel <= TOL_REL && mx <= TOL_MAX, "%s: row %d with chunks of 5: rel %g max %g", archs[a], i, rel, mx);
                }
                free(rows);
            }
            /* N + 1 single steps (decode all the way) */
            for (int i = 0; i <= N; i++) CHECKF(e0_decode(c4, tok[i], &e) == 0, "%s", e.msg);
            compare(all + (size_t)N * V, e0_ctx_logits(c4), V, &rel, &mx);
            CHECKF(rel <= TOL_REL && mx <= TOL_MAX, "%s: %d single steps: rel %g max %g", archs[a], N + 1, rel, mx);
        }
        e0_ctx_free(c1);
        e0_ctx_free(c2);
        e0_ctx_free(c3);
        e0_ctx_free(c4);
        free(all);
        free(dec);
        e0_model_free(m);
    }
}

/* The state is the sequence's: truncating to the current position keeps it; going back restarts. */
static void test_state_per_sequence(void) {
    e0_err e;
    e0_model *m = e0_model_load(models[1], NULL, true, &e);
    CHECKF(m, "%s", m ? "" : e.msg);
    if (!m) return;
    const int64_t V = m->hp.n_vocab;
    int tok[12];
    ids((int32_t)V, tok, 12, 5);
    float *first = malloc((size_t)V * sizeof(float));
    e0_ctx *c = new_ctx(m, 0);
    if (c && first) {
        CHECK(e0_ctx_recurrent_bytes(c) == e0_recurrent_bytes(&m->hp) && e0_ctx_recurrent_bytes(c) > 0);
        CHECK(e0_eval(c, tok, 8, NULL, &e) == 0);
        memcpy(first, e0_ctx_logits(c), (size_t)V * sizeof(float));
        e0_ctx_truncate(c, 8); /* the current position: nothing forgotten */
        CHECK(e0_ctx_pos(c) == 8);
        CHECK(e0_eval(c, tok + 8, 4, NULL, &e) == 0);
        e0_ctx_truncate(c, 5); /* back: the recurrent state cannot be rolled back */
        CHECKF(e0_ctx_pos(c) == 0, "pos %d after truncating to 5", e0_ctx_pos(c));
        CHECK(e0_eval(c, tok, 8, NULL, &e) == 0);
        CHECKF(!memcmp(first, e0_ctx_logits(c), (size_t)V * sizeof(float)), "a replay after the restart differs");
        e0_ctx_truncate(c, 0);
        CHECK(e0_ctx_pos(c) == 0);
        CHECK(e0_eval(c, tok, 8, NULL, &e) == 0);
        CHECKF(!memcmp(first, e0_ctx_logits(c), (size_t)V * sizeof(float)), "a replay after truncate(0) differs");
    }
    e0_ctx_free(c);
    free(first);
    e0_model_free(m);
}

/* The table: recurrent layers, KV-cache layers, state bytes, the ledger. */
static void test_layers_and_memory(void) {
    e0_err e;
    char path[PATH];
    CHECK(synth("qwen35moe", "--n-layer 7 --full-attn-interval 3", "f32", path, sizeof path) == 0);
    e0_model *m = e0_model_load(path, NULL, true, &e);
    CHECKF(m, "%s", m ? "" : e.msg);
    if (!m) return;
    const e0_hparams *hp = &m->hp;
    /* interval 3: layers 2 and 5 are attention, the rest DeltaNet */
    for (int il = 0; il < 7; il++) CHECKF(e0_layer_is_recurrent(hp, il) == ((il + 1) % 3 != 0), "layer %d", il);
    CHECK(e0_hparams_kv_layers(hp) == 2 && e0_hparams_kv_layer(hp, 5) == 1);
    CHECK(m->layers[0].dn_qkv.t && !m->layers[0].wq.t && m->layers[2].wq.t && !m->layers[2].dn_qkv.t);
    CHECK(m->layers[2].wq.ne[1] == 2 * hp->n_head * hp->head_dim); /* q and its gate */
    /* state: 5 layers x ((K-1) x C + Hv x S x S) floats */
    const int64_t C = 2 * hp->ssm_n_group * hp->ssm_d_state + hp->ssm_d_inner;
    CHECK(e0_recurrent_bytes(hp) == (uint64_t)5 * (uint64_t)((hp->ssm_d_conv - 1) * C + hp->ssm_dt_rank * hp->ssm_d_state * hp->ssm_d_state) * 4);
    size_t before = e0_mem_current(E0_MEM_RECURRENT), kv_before = e0_mem_current(E0_MEM_KV);
    e0_ctx *c = e0_ctx_new(m, &(e0_ctx_params){.n_ctx = 64, .n_threads = 1}, &e);
    CHECKF(c, "%s", c ? "" : e.msg);
    if (c) {
        CHECK(e0_mem_current(E0_MEM_RECURRENT) - before == e0_recurrent_bytes(hp));
        CHECK(e0_mem_current(E0_MEM_KV) - kv_before == (size_t)64 * e0_kv_bytes_per_pos(hp, E0_TYPE_F32, E0_TYPE_F32));
        CHECK(e0_kv_bytes_per_pos(hp, E0_TYPE_F32, E0_TYPE_F32) == (uint64_t)2 * 2 * (uint64_t)(hp->n_head_kv * hp->head_dim) * 4);
        CHECK(e0_ctx_memory(m, &(e0_ctx_params){.n_ctx = 64, .n_threads = 1}) >= e0_ctx_kv_bytes(c) + e0_recurrent_bytes(hp));
        e0_ctx_free(c);
        CHECK(e0_mem_current(E0_MEM_RECURRENT) == before);
    }
    e0_model_free(m);
    unlink(path);
}

static int files_equal(const char *a, const char *b) {
    char cmd[PATH * 3];
    snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", a, b);
    return system(cmd) == 0;
}

/* routing=actual streamed == resident, byte for byte; routing=predicted runs. */
static void test_streaming(void) {
    const char *B = t_build();
    const char *tokens = "1,17,99,200,3,45,211,260,7,8,9,10,300,301,302,44,45,46,47,1,2,3,4,5,6,100,101,102,103,104,105";
    const char *dec = "--tokens 1,17,99 -n 24 --temp 0 --print-ids";
    for (int a = 1; a < 3; a++) {
        char ref[PATH], out[PATH], cmd[PATH * 4], ids_ref[4096], got[4096];
        snprintf(ref, sizeof ref, "%s/test-hybrid-ref.bin", B);
        snprintf(out, sizeof out, "%s/test-hybrid-out.bin", B);
        snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer logits --model '%s' --tokens %s --out '%s' --model-option experts=resident 2>/dev/null",
                 B, models[a], tokens, ref);
        CHECKF(t_sh(cmd, NULL, 0) == 0, "%s", cmd);
        snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer run --model '%s' %s --model-option experts=resident 2>/dev/null", B, models[a], dec);
        CHECKF(t_sh(cmd, ids_ref, sizeof ids_ref) == 0, "%s", cmd);
        static const char *const opts[] = {
            "--model-option expert_slots=2 --model-option routing=actual --model-option prefetch=on --model-option prefill_ahead_min_tokens=2",
            "--model-option expert_slots=3 --model-option routing=actual --model-option expert_read=direct",
            "--model-option expert_slots=8 --model-option routing=actual",
        };
        for (int o = 0; o < 3; o++) {
            snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer logits --model '%s' --tokens %s --out '%s' %s 2>/dev/null", B, models[a], tokens, out, opts[o]);
            CHECKF(t_sh(cmd, NULL, 0) == 0, "%s", cmd);
            CHECKF(files_equal(ref, out), "%s: logits differ from resident with %s", archs[a], opts[o]);
            snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer run --model '%s' %s %s 2>/dev/null", B, models[a], dec, opts[o]);
            CHECKF(t_sh(cmd, got, sizeof got) == 0, "%s", cmd);
            CHECKF(!strcmp(got, ids_ref), "%s: greedy ids differ with %s:\n%s\n%s", archs[a], opts[o], got, ids_ref);
        }
        /* predicted routing: a different computation, but it runs and says what it did */
        snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer run --model '%s' -p 'Once upon a time' --raw -n 24 --temp 0 "
                 "--model-option expert_slots=3 --model-option routing=predicted 2>&1 >/dev/null", B, models[a]);
        CHECKF(t_sh(cmd, got, sizeof got) == 0, "%s", cmd);
        CHECKF(strstr(got, "predicted routing") && strstr(got, "prediction hit rate") && strstr(got, "generated 24 tokens") &&
                   strstr(got, "recurrent state"),
               "%s: the run summary:\n%s", archs[a], got);
        unlink(ref);
        unlink(out);
    }
}

/* chat: the second turn reuses the state; /reset starts again. -n 2: one reply id is evaluated
 * (the second is sampled last), and a random model's two ids re-tokenize as they were. */
static void test_chat_reuse(void) {
    if (!t_need_shared("templates/Qwen-Qwen2.5-7B-Instruct.jinja", NULL)) return;
    char cmd[PATH * 4], out[16384];
    snprintf(cmd, sizeof cmd,
             "printf 'hello there\\nhow are you\\n/reset\\nagain\\n' | %s/bin/edge0-infer chat -m '%s' "
             "--chat-template-file %s/templates/Qwen-Qwen2.5-7B-Instruct.jinja -n 2 --temp 0 -v 2>&1 | grep -a '^\\[prompt'",
             t_build(), models[1], t_shared());
    CHECKF(t_sh(cmd, out, sizeof out) == 0, "%s", cmd);
    int p1, f1, r1, p2, f2, r2, p3, f3, r3;
    int n = sscanf(out, "[prompt %d tokens, %d prefilled, %d reused from the cache]\n[prompt %d tokens, %d prefilled, %d reused from the cache]\n"
                        "[prompt %d tokens, %d prefilled, %d reused from the cache]",
                   &p1, &f1, &r1, &p2, &f2, &r2, &p3, &f3, &r3);
    CHECKF(n == 9, "chat -v printed:\n%s", out);
    if (n == 9) {
        CHECKF(r1 == 0 && f1 == p1, "first turn: %d prefilled of %d", f1, p1);
        CHECKF(r2 == p1 + 1 && f2 == p2 - r2, "second turn: %d reused (expected the first prompt %d + 1 reply id), %d prefilled", r2, p1, f2);
        CHECKF(r3 == 0 && f3 == p3, "after /reset: %d reused", r3);
    }
}

/* An MTP (NextN) block after the layers is loaded past and left out: the logits are those of the
 * same model without it (synth draws every tensor from its name, so the shared ones are equal). */
static void test_mtp_ignored(void) {
    char with[PATH], cmd[PATH * 4], a[PATH], b[PATH];
    CHECK(synth("qwen35moe", "--mtp", "f32", with, sizeof with) == 0);
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer info --model '%s' 2>&1 | grep -q 'mtp blocks:      1'", t_build(), with);
    CHECKF(t_sh(cmd, NULL, 0) == 0, "info does not show the MTP block");
    snprintf(a, sizeof a, "%s/test-hybrid-mtp-a.bin", t_build());
    snprintf(b, sizeof b, "%s/test-hybrid-mtp-b.bin", t_build());
    const char *paths[2] = {models[1], with}, *outs[2] = {a, b};
    for (int k = 0; k < 2; k++) {
        snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer logits --model '%s' --tokens 1,2,3,50,60,70,80 --out '%s' 2>/dev/null",
                 t_build(), paths[k], outs[k]);
        CHECKF(t_sh(cmd, NULL, 0) == 0, "%s", cmd);
    }
    CHECKF(files_equal(a, b), "the MTP block changed the logits");
    unlink(a);
    unlink(b);
    unlink(with);
}

/* info shows the state; bad hybrid metadata is refused clearly. */
static void test_info_and_errors(void) {
    char cmd[PATH * 4], out[16384];
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer info --model '%s' 2>&1", t_build(), models[2]);
    CHECKF(t_sh(cmd, out, sizeof out) == 0, "%s", cmd);
    CHECKF(strstr(out, "recurrent state"), "info:\n%s", out);
    CHECKF(strstr(out, "DeltaNet"), "info:\n%s", out);
    /* value heads not a multiple of key heads: synth refuses it, and so does the loader */
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer synth --arch qwen35 --ssm-groups 3 --ssm-heads 4 --type f32 --out %s/x.gguf 2>&1",
             t_build(), t_build());
    CHECKF(t_sh(cmd, out, sizeof out) != 0 && strstr(out, "multiple"), "%s", out);
}

/* The Qwen3.5 chat template (its golden cases run in test_jinja): enable_thinking false closes an
 * empty think block in the generation prompt; the default opens one. */
static void test_qwen35_template(void) {
    if (!t_need_shared("templates/Qwen3.5-4B.jinja", NULL)) return;
    char cmd[PATH * 4], out[4096];
    const char *tail[2] = {"<|im_start|>assistant\n<think>\n\n</think>\n\n", "<|im_start|>assistant\n<think>\n"};
    for (int k = 0; k < 2; k++) {
        snprintf(cmd, sizeof cmd,
                 "echo '[{\"role\":\"user\",\"content\":\"hi\"}]' | %s/bin/edge0-infer apply-template "
                 "--chat-template-file %s/templates/Qwen3.5-4B.jinja --messages-file - %s",
                 t_build(), t_shared(), k == 0 ? "--chat-template-kwargs '{\"enable_thinking\": false}'" : "");
        CHECKF(t_sh(cmd, out, sizeof out) == 0, "%s", cmd);
        size_t n = strlen(out), m = strlen(tail[k]);
        CHECKF(n >= m && !strcmp(out + n - m, tail[k]), "enable_thinking %s: rendered\n%s", k ? "default" : "false", out);
    }
}

int main(void) {
    for (int a = 0; a < 3; a++)
        if (synth(archs[a], "", "f32", models[a], sizeof models[a]) != 0) {
            printf("FAIL synth %s\n", archs[a]);
            return 1;
        }
    RUN(test_prefill_then_decode);
    RUN(test_state_per_sequence);
    RUN(test_layers_and_memory);
    RUN(test_streaming);
    RUN(test_chat_reuse);
    RUN(test_info_and_errors);
    RUN(test_qwen35_template);
    RUN(test_mtp_ignored);
    for (int a = 0; a < 3; a++) unlink(models[a]);
    return T_DONE();
}
