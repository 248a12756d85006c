/* test_streaming.c — routed experts streamed from the file through the expert cache:
 *  - routing=actual is byte-identical to experts=resident (logits of a batched prefill and greedy
 *    ids of a decode), on every golden MoE model, with expert_slots = n_expert_used, a few larger
 *    values, 1 and n_expert_used - 1, and expert_read cached and direct (through the CLI, as users
 *    run it); a streamed model reads its embedding rows from the file as well;
 *  - predicted routing's quality on stories260K-moe4: top-1 agreement and mean KL of predicted
 *    vs actual logits under teacher forcing, and the per-layer prediction hit rate (printed);
 *  - a model file truncated after loading gives a clear error, not garbage. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/load.h"
#include "text/prompt.h"
#include "quant/quant.h"
#include "t.h"

static int files_equal(const char *a, const char *b) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cmp -s %s %s", a, b);
    return system(cmd) == 0;
}

static void identical_at(const char *model, const char *name, int k, int x);

static void identical_to_resident(const char *name, int k, int x) {
    char model[512];
    snprintf(model, sizeof model, "%s/golden/%s.gguf", t_shared(), name);
    identical_at(model, name, k, x);
}

static void identical_at(const char *model, const char *name, int k, int x) {
    char ref[600], out[600], err[600], cmd[4096], ids_ref[8192], ids[8192];
    const char *B = t_build();
    snprintf(ref, sizeof ref, "%s/stream-ref.bin", B);
    snprintf(out, sizeof out, "%s/stream-out.bin", B);
    snprintf(err, sizeof err, "%s/stream-err.txt", B);
    const char *tokens = "1,17,99,200,3,45,511,260,7,8,9,10,300,301,302,44,45,46,47,1,2,3,4,5,6,100,101,102,103,104,105";
    const char *dec = "--tokens 1,17,99 -n 48 --temp 0 --print-ids";
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer logits --model %s --tokens %s --out %s --model-option experts=resident", B, model, tokens, ref);
    CHECK(t_sh(cmd, NULL, 0) == 0);
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer run --model %s %s --model-option experts=resident", B, model, dec);
    CHECK(t_sh(cmd, ids_ref, sizeof ids_ref) == 0);
    /* fewer slots than a token's experts too: a layer's experts take turns in them */
    int slot_counts[] = {k, k + 1, x, 1, k - 1};
    const char *reads[] = {"cached", "direct"};
    for (int si = 0; si < 5; si++)
        for (int ri = 0; ri < 2; ri++) {
            if (slot_counts[si] > x || slot_counts[si] < 1 || (si == 4 && k - 1 <= 1)) continue;
            char opts[256];
            /* the first variant also reads ahead (prefill and prefetch): reading order must not matter */
            snprintf(opts, sizeof opts, "--model-option expert_slots=%d --model-option expert_read=%s --model-option routing=actual%s",
                     slot_counts[si], reads[ri],
                     si == 0 && ri == 0 ? " --model-option prefill_ahead_min_tokens=2 --model-option prefetch=on" : "");
            snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer logits --model %s --tokens %s --out %s %s", B, model, tokens, out, opts);
            CHECKF(t_sh(cmd, NULL, 0) == 0, "%s", cmd);
            CHECKF(files_equal(ref, out), "%s: logits differ from resident with %s", name, opts);
            snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer run --model %s %s %s 2>%s", B, model, dec, opts, err);
            CHECKF(t_sh(cmd, ids, sizeof ids) == 0, "%s", cmd);
            CHECKF(!strcmp(ids, ids_ref), "%s: greedy ids differ from resident with %s:\n%s\n%s", name, opts, ids, ids_ref);
            /* memory budget honesty: the run summary says the ledger peak stayed within the budget */
            char summary[8192] = "";
            snprintf(cmd, sizeof cmd, "cat %s", err);
            CHECK(t_sh(cmd, summary, sizeof summary) == 0);
            CHECKF(strstr(summary, "ledger peak") && strstr(summary, "within the budget"),
                   "%s with %s: no 'within the budget' in the summary:\n%s", name, opts, summary);
        }
    unlink(ref);
    unlink(out);
    unlink(err);
}

/* Synth MoE models whose experts are of the types without a golden model (expert sizes that are
 * not multiples of the page size: 256 rows of 98 / 110 bytes). */
static void test_actual_identical_synth_types(void) {
    static const char *const types[] = {"iq3_xxs", "iq3_s"};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        char model[600], cmd[1400];
        snprintf(model, sizeof model, "%s/stream-synth-%s.gguf", t_build(), types[i]);
        snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer synth --arch qwen3moe --type %s --seed 3 --out %s >/dev/null 2>&1", t_build(),
                 types[i], model);
        CHECKF(t_sh(cmd, NULL, 0) == 0, "%s", cmd);
        identical_at(model, types[i], 2, 8);
        unlink(model);
    }
}

static void test_actual_identical(void) {
    identical_to_resident("stories260K-moe4", 2, 4);
    identical_to_resident("llama-moe", 2, 8);
    identical_to_resident("qwen2moe", 4, 8);
    identical_to_resident("qwen3moe", 4, 16);
}

/* The IQ2 / IQ1 types: a synth qwen3moe model per type (8 experts, 2 used; an expert matrix is
 * 256 rows of one block: 66, 74, 82, 50 or 56 x 256 bytes, never a multiple of 4096). */
static void test_actual_identical_iq2(void) {
    static const char *const types[] = {"iq2_xxs", "iq2_xs", "iq2_s", "iq1_s", "iq1_m"};
    for (int i = 0; i < 5; i++) {
        char model[512], cmd[1024];
        snprintf(model, sizeof model, "%s/stream-%s.gguf", t_build(), types[i]);
        snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer synth --arch qwen3moe --type %s --seed 11 --out %s", t_build(), types[i], model);
        CHECKF(t_sh(cmd, NULL, 0) == 0, "%s", cmd);
        identical_at(model, types[i], 2, 8);
        unlink(model);
    }
}

static e0_session open_session(const char *model, const char *const *kv, int n_kv) {
    e0_options o;
    e0_options_init(&o);
    e0_err e;
    for (int i = 0; i < n_kv; i++) CHECKF(e0_options_parse(&o, kv[i], &e) == 0, "%s", e.msg);
    e0_session s;
    e0_ctx_params cp = {.n_ctx = 512, .n_threads = 2};
    int rc = e0_open(model, &o, &cp, NULL, &s, &e);
    CHECKF(rc == 0, "%s", e.msg);
    if (rc) memset(&s, 0, sizeof s);
    return s;
}

/* Teacher forcing: both contexts see the same tokens (the actual run's greedy choices). */
static void test_predicted_quality(void) {
    char model[512];
    snprintf(model, sizeof model, "%s/golden/stories260K-moe4.gguf", t_shared());
    const char *act_kv[] = {"routing=actual", "experts=stream", "expert_slots=4"};
    const char *pred_kv[] = {"routing=predicted", "experts=stream", "expert_slots=4"};
    e0_session A = open_session(model, act_kv, 3), P = open_session(model, pred_kv, 3);
    if (!A.c || !P.c) return;
    const int64_t V = A.m->hp.n_vocab;
    const char *prompts[] = {"Once upon a time", "Lily and Tom went to the park", "The little dog was sad"};
    e0_tokenizer *tok = e0_model_tokenizer(A.m, NULL);
    CHECK(tok != NULL);
    int steps = 0, agree = 0;
    double kl_sum = 0;
    e0_err e;
    for (int pi = 0; pi < 3 && tok; pi++) {
        e0_tokens t = {0};
        CHECK(e0_tokenize(tok, prompts[pi], strlen(prompts[pi]), true, false, &t, &e) == 0);
        e0_ctx_truncate(A.c, 0);
        e0_ctx_truncate(P.c, 0);
        CHECK(e0_eval(A.c, (int *)t.ids, (int)t.n, NULL, &e) == 0);
        CHECK(e0_eval(P.c, (int *)t.ids, (int)t.n, NULL, &e) == 0);
        for (int k = 0; k < 100; k++) {
            const float *la = e0_ctx_logits(A.c), *lp = e0_ctx_logits(P.c);
            int ta = 0, tp = 0;
            for (int64_t v = 1; v < V; v++) {
                if (la[v] > la[ta]) ta = (int)v;
                if (lp[v] > lp[tp]) tp = (int)v;
            }
            /* KL(actual || predicted) of the softmaxed logits */
            double ma = la[ta], mp = lp[tp], za = 0, zp = 0, kl = 0;
            for (int64_t v = 0; v < V; v++) za += exp(la[v] - ma), zp += exp(lp[v] - mp);
            for (int64_t v = 0; v < V; v++) {
                double pa = exp(la[v] - ma) / za, lpa = la[v] - ma - log(za), lpp = lp[v] - mp - log(zp);
                kl += pa * (lpa - lpp);
            }
            kl_sum += kl;
            agree += ta == tp;
            steps++;
            CHECK(e0_decode(A.c, ta, &e) == 0);
            CHECK(e0_decode(P.c, ta, &e) == 0);
        }
        e0_tokens_free(&t);
    }
    double top1 = (double)agree / steps, mean_kl = kl_sum / steps;
    printf("  predicted vs actual on stories260K-moe4 (%d teacher-forced steps): top-1 agreement %.3f, mean KL %.4f nats\n",
           steps, top1, mean_kl);
    printf("  prediction hit rate per layer:");
    uint64_t th = 0, tt = 0;
    for (int il = 0; il < A.m->hp.n_layer; il++) {
        uint64_t h, n;
        e0_ctx_prediction_stats(P.c, il, &h, &n);
        th += h;
        tt += n;
        if (n) printf(" L%d %.3f", il, (double)h / n);
        else printf(" L%d -", il);
        CHECK(h <= n);
        if (il >= 1) CHECKF(n > 0, "layer %d made no predictions", il);
    }
    printf("\n");
    CHECKF(tt > 0 && th > 0, "predictions must hit sometimes");
    CHECKF(isfinite(mean_kl) && mean_kl >= 0, "KL %.4f", mean_kl);
    CHECKF(top1 >= 0.5, "predicted routing agrees with actual on only %.3f of the steps", top1);
    e0_tokenizer_free(tok);
    e0_close(&A);
    e0_close(&P);
}

static void test_truncated_after_load(void) {
    char src[512], dst[600], cmd[1400];
    snprintf(src, sizeof src, "%s/golden/llama-moe.gguf", t_shared());
    snprintf(dst, sizeof dst, "%s/stream-trunc.gguf", t_build());
    snprintf(cmd, sizeof cmd, "cp %s %s", src, dst);
    CHECK(system(cmd) == 0);
    const char *kv[] = {"experts=stream", "expert_slots=2", "routing=actual"};
    e0_session s = open_session(dst, kv, 3);
    if (!s.c) return;
    CHECK(truncate(dst, 1500000) == 0); /* cuts into the expert tensors */
    int toks[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    e0_err e = {{0}};
    int rc = e0_eval(s.c, toks, 16, NULL, &e);
    CHECKF(rc == -1, "evaluating with a truncated file must fail");
    CHECKF(strstr(e.msg, "stream-trunc.gguf") != NULL, "the error names the file: '%s'", e.msg);
    printf("  truncated after load: %s\n", e.msg);
    e0_close(&s);
    unlink(dst);
}

/* Streamed, the embedding stays in the file (model.c: embd_from_file): the dense weights in the
 * ledger are smaller by its bytes; a file truncated inside it after loading gives a clear error. */
static void test_embd_from_file(void) {
    char src[512], dst[600], cmd[1400];
    snprintf(src, sizeof src, "%s/golden/qwen3moe.gguf", t_shared());
    snprintf(dst, sizeof dst, "%s/stream-embd.gguf", t_build());
    snprintf(cmd, sizeof cmd, "cp %s %s", src, dst);
    CHECK(system(cmd) == 0);
    const char *res_kv[] = {"experts=resident"};
    const char *str_kv[] = {"experts=stream", "expert_slots=4", "routing=actual"};
    e0_session r = open_session(dst, res_kv, 1), s = open_session(dst, str_kv, 3);
    if (!r.c || !s.c) {
        e0_close(&r);
        e0_close(&s);
        return;
    }
    const e0_weight *te = &s.m->tok_embd;
    CHECK(!r.m->embd_from_file && r.m->tok_embd.data && s.m->embd_from_file && !te->data);
    CHECKF(r.m->dense_bytes - s.m->dense_bytes >= te->t->nbytes && r.m->dense_bytes - s.m->dense_bytes < te->t->nbytes + 64,
           "dense %zu resident vs %zu streamed, token_embd %llu bytes", r.m->dense_bytes, s.m->dense_bytes,
           (unsigned long long)te->t->nbytes);
    /* the same rows either way */
    float a[4096], b[4096];
    uint8_t raw[4096 * 4];
    e0_err e = {{0}};
    CHECK(s.m->hp.n_embd <= 4096 && te->row_bytes <= sizeof raw);
    for (int32_t tok = 0; tok < s.m->hp.n_vocab && s.m->hp.n_embd <= 4096; tok += 37) {
        CHECK(e0_model_embd_row(r.m, tok, a, NULL, &e) == 0 && e0_model_embd_row(s.m, tok, b, raw, &e) == 0);
        CHECKF(!memcmp(a, b, (size_t)s.m->hp.n_embd * sizeof(float)), "token %d", tok);
    }
    /* cut inside the embedding: the first evaluation fails, naming the file */
    CHECK(truncate(dst, (off_t)(te->t->offset + te->row_bytes)) == 0);
    int toks[] = {1, (int)(s.m->hp.n_vocab - 1)};
    int rc = e0_eval(s.c, toks, 2, NULL, &e);
    CHECKF(rc == -1 && strstr(e.msg, "stream-embd.gguf"), "rc %d: '%s'", rc, e.msg);
    printf("  embedding truncated after load: %s\n", e.msg);
    e0_close(&r);
    e0_close(&s);
    unlink(dst);
}

int main(void) {
    if (!t_need_shared("golden/qwen3moe.gguf", "golden/qwen2moe.gguf", "golden/llama-moe.gguf",
                       "golden/stories260K-moe4.gguf", NULL))
        return T_DONE();
    RUN(test_actual_identical);
    RUN(test_actual_identical_iq2);
    RUN(test_actual_identical_synth_types);
    RUN(test_predicted_quality);
    RUN(test_truncated_after_load);
    RUN(test_embd_from_file);
    return T_DONE();
}
