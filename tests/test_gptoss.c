/* test_gptoss.c — the gpt-oss pieces of the engine without llama.cpp (the differential test
 * against llama.cpp is test_llamacpp.c's synth/gpt-oss-* cases):
 *  - RoPE: the scaled path (attn_ext.c) without scaling, and e0_rope_cs + e0_rope_apply, are
 *    bit-identical to the plain e0_rope;
 *    with YaRN it differs; the softmax with a sink equals the softmax over one more logit;
 *  - the clamped SwiGLU against its formula at the clamp edges;
 *  - a synth gpt-oss model (sliding window 4, shorter than every prompt here): logits do not
 *    depend on the prefill chunk (-b 3: each sliding-window layer then keeps a ring of 6 rows);
 *    streamed experts with routing=actual are byte-identical to resident ones (logits and greedy
 *    ids, several slot counts, both read modes); routing=predicted runs;
 *  - truncating the KV cache: kept when the rings still hold the window, else back to 0, and the
 *    logits after re-evaluating are the fresh run's;
 *  - info prints the KV bytes per token and the sliding-window layers' fixed share. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/ctx_impl.h"
#include "engine/load.h"
#include "t.h"

static char model[512], model_f16[512];

static int files_equal(const char *a, const char *b) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", a, b);
    return system(cmd) == 0;
}

static void test_rope_ext(void) {
    e0_hparams hp;
    memset(&hp, 0, sizeof hp);
    e0_arch_set_flags(&hp, e0_arch_get(E0_ARCH_GPTOSS));
    hp.n_rot = hp.head_dim = 64;
    hp.rope_base = hp.rope_base_swa = 150000.0f;
    hp.n_ctx_orig = 4096;
    hp.n_layer = 2;
    float a[64], b[64], y[64];
    for (int pos = 0; pos < 300; pos += 37)
        for (int neox = 0; neox < 2; neox++) {
            hp.rope_neox = neox;
            for (int i = 0; i < 64; i++) a[i] = b[i] = y[i] = sinf((float)(i * 7 + pos));
            e0_rope(a, 64, pos, hp.rope_base, neox);
            e0_rope_cfg rc;
            e0_rope_cfg_for_layer(&hp, 1, &rc);
            e0_rope_ext(b, 64, pos, &rc);
            CHECKF(!memcmp(a, b, sizeof a), "pos %d neox %d: unscaled rope_ext differs from rope", pos, neox);
            /* the two-step form forward.c uses for many heads at one position */
            float cs[64], z[64];
            for (int i = 0; i < 64; i++) z[i] = sinf((float)(i * 7 + pos));
            e0_rope_cs(cs, 64, pos, hp.rope_base);
            e0_rope_apply(z, 64, cs, neox);
            CHECKF(!memcmp(a, z, sizeof a), "pos %d neox %d: e0_rope_cs + e0_rope_apply differ from e0_rope", pos, neox);
            /* YaRN x32 moves every rotated pair except those past the correction range */
            e0_hparams yh = hp;
            yh.rope_freq_scale = 1.0f / 32;
            yh.rope_ext_factor = 1.0f;
            e0_rope_cfg_for_layer(&yh, 1, &rc);
            CHECKF(rc.corr[0] >= 0 && rc.corr[0] <= rc.corr[1] && rc.corr[1] <= 63, "corr dims %g %g", (double)rc.corr[0],
                   (double)rc.corr[1]);
            e0_rope_ext(y, 64, pos, &rc);
            if (pos > 0) CHECKF(memcmp(a, y, sizeof a) != 0, "pos %d: YaRN changed nothing", pos);
        }
}

static void test_softmax_sink_swiglu(void) {
    float x[5] = {0.5f, -1.0f, 2.0f, 0.0f, 1.5f}, ref[6] = {0.5f, -1.0f, 2.0f, 0.0f, 1.5f, 1.25f};
    e0_softmax_sink(x, 5, 1.25f);
    e0_softmax(ref, 6);
    for (int i = 0; i < 5; i++) CHECKF(fabsf(x[i] - ref[i]) < 1e-7f, "%d: %g vs %g", i, (double)x[i], (double)ref[i]);
    float g[6] = {-20, -1, 0, 3, 7, 30}, u[6] = {-30, -7, 0.5f, 2, 8, 100};
    float want[6];
    for (int i = 0; i < 6; i++) {
        float gg = g[i] < 7 ? g[i] : 7, uu = u[i] < -7 ? -7 : u[i] > 7 ? 7 : u[i];
        want[i] = gg / (1 + expf(-1.702f * gg)) * (uu + 1);
    }
    e0_swiglu_oai(g, u, 6);
    for (int i = 0; i < 6; i++) CHECKF(g[i] == want[i], "%d: %g vs %g", i, (double)g[i], (double)want[i]);
    CHECK(fabsf(want[5] - 7.0f / (1 + expf(-1.702f * 7)) * 8) < 1e-5f); /* both clamps at work */
}

static int make_models(void) {
    char cmd[2048];
    snprintf(model, sizeof model, "%s/test-gptoss-q8.gguf", t_build());
    snprintf(model_f16, sizeof model_f16, "%s/test-gptoss-f16.gguf", t_build());
    snprintf(cmd, sizeof cmd,
             "%s/bin/edge0-infer synth --arch gpt-oss --type q8_0 --n-layer 4 --n-head 6 --n-head-kv 2 --n-swa 4 "
             "--yarn-factor 8 --yarn-orig-ctx 128 --seed 5 --out '%s' >/dev/null 2>&1 && "
             "%s/bin/edge0-infer synth --arch gpt-oss --type f16 --n-layer 3 --n-head 5 --n-head-kv 5 --n-swa 3 "
             "--swa-period 3 --seed 6 --out '%s' >/dev/null 2>&1",
             t_build(), model, t_build(), model_f16);
    return t_sh(cmd, NULL, 0);
}

static const char *tokens = "1,17,99,200,3,45,511,260,7,8,9,10,300,301,302,44,45,46,47,1,2,3,4,5,6,100,101,102";

static void test_chunking(void) {
    const char *models[] = {model, model_f16};
    for (int mi = 0; mi < 2; mi++) {
        char ref[600], out[600], cmd[4096];
        snprintf(ref, sizeof ref, "%s/gptoss-ref.bin", t_build());
        snprintf(out, sizeof out, "%s/gptoss-out.bin", t_build());
        snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer logits --model '%s' --tokens %s --out '%s' -ctk f32 -ctv f32", t_build(),
                 models[mi], tokens, ref);
        CHECKF(t_sh(cmd, NULL, 0) == 0, "%s", cmd);
        const char *variants[] = {"-b 3 -ctk f32 -ctv f32", "-b 1 -ctk f32 -ctv f32", "-b 5 -c 64 -ctk f32 -ctv f32"};
        for (int v = 0; v < 3; v++) {
            snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer logits --model '%s' --tokens %s --out '%s' %s", t_build(), models[mi],
                     tokens, out, variants[v]);
            CHECKF(t_sh(cmd, NULL, 0) == 0, "%s", cmd);
            CHECKF(files_equal(ref, out), "%s: logits with %s differ from one chunk", models[mi], variants[v]);
        }
        unlink(ref);
        unlink(out);
    }
}

static void test_streaming(void) {
    char ref[600], out[600], cmd[4096], ids_ref[8192], ids[8192];
    const char *B = t_build(), *dec = "--tokens 1,17,99 -n 40 --temp 0 --print-ids -b 4";
    snprintf(ref, sizeof ref, "%s/gptoss-sref.bin", B);
    snprintf(out, sizeof out, "%s/gptoss-sout.bin", B);
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer logits --model '%s' --tokens %s --out '%s' --model-option experts=resident", B,
             model, tokens, ref);
    CHECK(t_sh(cmd, NULL, 0) == 0);
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer run --model '%s' %s --model-option experts=resident", B, model, dec);
    CHECK(t_sh(cmd, ids_ref, sizeof ids_ref) == 0);
    const int slots[] = {2, 3, 8};
    const char *reads[] = {"cached", "direct"};
    for (int si = 0; si < 3; si++)
        for (int ri = 0; ri < 2; ri++) {
            char opts[256];
            snprintf(opts, sizeof opts, "--model-option expert_slots=%d --model-option expert_read=%s --model-option routing=actual%s",
                     slots[si], reads[ri], si == 0 ? " --model-option prefetch=on --model-option prefill_ahead_min_tokens=2" : "");
            snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer logits --model '%s' --tokens %s --out '%s' %s", B, model, tokens, out, opts);
            CHECKF(t_sh(cmd, NULL, 0) == 0, "%s", cmd);
            CHECKF(files_equal(ref, out), "logits differ from resident with %s", opts);
            snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer run --model '%s' %s %s", B, model, dec, opts);
            CHECKF(t_sh(cmd, ids, sizeof ids) == 0, "%s", cmd);
            CHECKF(!strcmp(ids, ids_ref), "greedy ids differ from resident with %s:\n%s\n%s", opts, ids, ids_ref);
        }
    /* predicted routing: runs and prints its ids (quality is not defined on random weights) */
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer run --model '%s' %s --model-option experts=stream --model-option expert_slots=3 "
             "--model-option routing=predicted", B, model, dec);
    CHECKF(t_sh(cmd, ids, sizeof ids) == 0, "%s", cmd);
    int n = 0;
    for (char *s = ids; *s;) {
        char *end;
        strtol(s, &end, 10);
        if (end == s) break;
        n++;
        s = end;
    }
    CHECKF(n == 40, "routing=predicted printed %d ids: %s", n, ids);
    unlink(ref);
    unlink(out);
}

/* Logits after the tokens [0, n) evaluated in one session with a truncation in between equal the
 * fresh run's. */
static void test_truncate(void) {
    e0_options o;
    e0_options_init(&o);
    e0_err e;
    e0_session s;
    e0_ctx_params cp = {.n_ctx = 64, .n_batch = 3, .n_threads = 2, .type_k = E0_TYPE_F32, .type_v = E0_TYPE_F32};
    if (e0_open(model, &o, &cp, NULL, &s, &e)) {
        CHECKF(0, "%s", e.msg);
        return;
    }
    int ids[24];
    for (int i = 0; i < 24; i++) ids[i] = 1 + (i * 37) % 500;
    const int64_t V = s.m->hp.n_vocab;
    float *fresh = malloc((size_t)V * sizeof(float)), *again = malloc((size_t)V * sizeof(float));
    CHECK(e0_eval(s.c, ids, 24, NULL, &e) == 0);
    memcpy(fresh, e0_ctx_logits(s.c), (size_t)V * sizeof(float));
    /* rings of 4 + 3 - 1 = 6 rows hold positions 18..23: going back to 22 keeps 19..21 */
    e0_ctx_truncate(s.c, 22);
    CHECKF(e0_ctx_pos(s.c) == 22, "truncate to 22 went to %d", e0_ctx_pos(s.c));
    CHECK(e0_eval(s.c, ids + 22, 2, NULL, &e) == 0);
    CHECKF(!memcmp(fresh, e0_ctx_logits(s.c), (size_t)V * sizeof(float)), "logits after truncate 22 differ");
    /* going back to 10 needs positions 7..9, overwritten: the cache starts again */
    e0_ctx_truncate(s.c, 10);
    CHECKF(e0_ctx_pos(s.c) == 0, "truncate to 10 kept %d positions of lost windows", e0_ctx_pos(s.c));
    CHECK(e0_eval(s.c, ids, 24, NULL, &e) == 0);
    memcpy(again, e0_ctx_logits(s.c), (size_t)V * sizeof(float));
    CHECKF(!memcmp(fresh, again, (size_t)V * sizeof(float)), "logits after a fresh start differ");
    /* the KV cache is smaller than n_layer x n_ctx rows: 2 SWA layers keep 6 rows each */
    uint64_t row = 2 * e0_kv_row_bytes(&s.m->hp, E0_TYPE_F32);
    CHECKF(e0_ctx_kv_bytes(s.c) == row * (2 * 64 + 2 * 6), "kv bytes %llu", (unsigned long long)e0_ctx_kv_bytes(s.c));
    /* ... = the full layers' bytes per token x n_ctx + the rings' fixed bytes, as info / bench report them */
    uint64_t ring = e0_kv_bytes_swa_ring(&s.m->hp, E0_TYPE_F32, E0_TYPE_F32, e0_ctx_n_ctx(s.c), e0_ctx_n_batch(s.c));
    CHECKF(ring == row * 2 * 6 && e0_ctx_kv_bytes(s.c) == 64 * e0_kv_bytes_per_pos(&s.m->hp, E0_TYPE_F32, E0_TYPE_F32) + ring,
           "ring bytes %llu, per token %llu", (unsigned long long)ring,
           (unsigned long long)e0_kv_bytes_per_pos(&s.m->hp, E0_TYPE_F32, E0_TYPE_F32));
    free(fresh);
    free(again);
    e0_close(&s);
}

static void test_info(void) {
    char cmd[1024], out[8192];
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer info --model '%s'", t_build(), model);
    CHECK(t_sh(cmd, out, sizeof out) == 0);
    /* 4 layers, 2 of full attention: 2 x (K + V) x 2 heads x 64 x 2 bytes per token at f16 */
    CHECKF(strstr(out, "1024 bytes per token at f16"), "%s", out);
    CHECKF(strstr(out, "sliding window:  4 positions on 2 of 4 layers"), "%s", out);
    CHECKF(strstr(out, "their KV: 4096 bytes at f16"), "%s", out);
    /* as allocated: 2 rings of 4 + 512 - 1 rows of 512 bytes (K + V, 2 heads x 64 x 2 bytes each) */
    CHECKF(strstr(out, "n_swa + chunk - 1 = 515 rows per layer: 527360 bytes at f16"), "%s", out);
    CHECKF(strstr(out, "rope scaling:    yarn, factor 8, original context 128"), "%s", out);
    CHECKF(strstr(out, "architecture:    gpt-oss"), "%s", out);
}

int main(void) {
    RUN(test_rope_ext);
    RUN(test_softmax_sink_swiglu);
    int rc = make_models();
    t_begin("synth gpt-oss");
    CHECKF(rc == 0, "synth failed (%d)", rc);
    t_end();
    if (rc == 0) {
        RUN(test_chunking);
        RUN(test_streaming);
        RUN(test_truncate);
        RUN(test_info);
    }
    unlink(model);
    unlink(model_f16);
    return T_DONE();
}
