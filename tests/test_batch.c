/* test_batch.c — e0_eval_multi and e0_eval_batch (engine.h, batch.c): one forward pass over the
 * tokens of several sequences (prompt chunks, next tokens, or both in one step) gives each
 * sequence the logits e0_eval (prompt pieces) and e0_decode (generated tokens) give it alone on
 * the same chunks, bit for bit:
 *  - on the golden dense and MoE models, experts resident and streamed through a cache with few
 *    slots, f32 and f16 KV; routing actual, prefetch=on and predicted (each row predicted from its
 *    own state: the sequences' prediction counts equal those of e0_eval alone), and the streamed
 *    batches acquire fewer experts than the sequences alone (the union once, not a fallback);
 *  - on synth models: qwen3moe with Q4_K / Q8_0 weights (the gemm kernels over several tokens),
 *    gpt-oss (sliding-window rings shorter than the sequences), and the fallback architectures
 *    (a hybrid DeltaNet model, deepseek2's MLA);
 *  - 8 sequences prompted (2..23 tokens) in mixed steps of at most n_batch rows: prompt chunks
 *    beside other sequences' chunks and next tokens; then batches of n = 1..8 next tokens with
 *    a rotating first context (its scratch is the batch's), each sequence decoding greedily; every
 *    other sequence works in the session context's scratch (e0_ctx_params.scratch_owner, as
 *    serve's slots do), and another shape cannot share it;
 *  - bad calls fail cleanly without moving any position;
 *  - one sequence's prompt cut into pieces of any size (one token included) gets the bits of
 *    e0_eval's chunks, under every routing: prompt tokens are routed exactly, only e0_decode's
 *    generated tokens are predicted (and a prompt token alone scores no prediction);
 *  - `bench --batch-size B`: the JSON row's batch_size, aggregate and per-sequence decode tok/s,
 *    and the B sequences (same prompt) generating the same ids. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/load.h"
#include "t.h"

#define N_SEQ 8

static int argmax(const float *x, int64_t n) {
    int b = 0;
    for (int64_t i = 1; i < n; i++)
        if (x[i] > x[b]) b = (int)i;
    return b;
}

/* A context like the session's (sched.c's slots are made the same way); share: working in the
 * session context's scratch buffers, as serve's slots do. */
/* ACTUAL, PREFETCH, PREDICTED: set here; SESSION: as the options say (e0_session_setup_ctx,
 * context i of N_SEQ: routing=replay starts each sequence at its own trace step) */
enum { ACTUAL, PREFETCH, PREDICTED, SESSION };

static void set_routing(e0_ctx *c, int routing) {
    if (routing != SESSION) e0_ctx_set_routing(c, routing == PREDICTED, 1, 1, routing == PREFETCH);
}

/* Expert acquisitions so far (hits + misses: each id once per call). */
static uint64_t requests(const e0_session *s) {
    const e0_experts_stats *st = s->xc ? e0_experts_get_stats(s->xc) : NULL;
    return st ? st->hits + st->misses : 0;
}

static e0_ctx *new_ctx(e0_session *s, const e0_ctx_params *cp, int routing, bool share, int i, e0_err *e) {
    e0_ctx_params p = *cp;
    if (share) p.scratch_owner = s->c;
    e0_ctx *c = e0_ctx_new(s->m, &p, e);
    if (!c) return NULL;
    e0_session_setup_ctx(s, c, i, N_SEQ);
    set_routing(c, routing);
    return c;
}

/* opts: --model-option strings (NULL-terminated). */
static void check_model(const char *path, const char *const *opts, uint32_t kv_type, int routing) {
    e0_err e;
    e0_options o;
    e0_options_init(&o);
    for (int i = 0; opts && opts[i]; i++) CHECKF(e0_options_parse(&o, opts[i], &e) == 0, "%s", e.msg);
    e0_ctx_params cp = {.n_ctx = 96, .n_threads = 2, .n_batch = 8, .type_k = kv_type, .type_v = kv_type};
    e0_model_params mp = {.experts_resident = true};
    e0_session s = {0};
    if (e0_open(path, &o, &cp, &mp, &s, &e) < 0) {
        CHECKF(0, "%s: %s", path, e.msg);
        return;
    }
    const int64_t V = s.m->hp.n_vocab;
    e0_ctx *bat[N_SEQ] = {0}, *ref[N_SEQ] = {0};
    int next[N_SEQ];
    bool ok = true;
    for (int i = 0; i < N_SEQ && ok; i++) {
        bat[i] = i == 0 ? s.c : new_ctx(&s, &cp, routing, i % 2 == 1, i, &e);
        ref[i] = new_ctx(&s, &cp, routing, false, i, &e);
        ok = bat[i] && ref[i];
        CHECKF(ok, "context %d: %s", i, e.msg);
        if (!ok) break;
        if (i == 0) set_routing(s.c, routing);
    }
    int differ = 0, steps = 0;
    /* prompts and first tokens in mixed steps (e0_eval_multi): each step, from a rotating first
     * sequence, every sequence's next prompt chunk (at most n_batch = 8 tokens, as e0_eval alone
     * would chunk it) or, once prompted, its next token, while the 8 rows last; the references
     * take the same chunks alone. Prompt i: 2 + 3i tokens (positions differ), different ids. */
    int prompt[N_SEQ][32], np[N_SEQ], done[N_SEQ] = {0}, gen[N_SEQ] = {0}, mixed = 0;
    for (int i = 0; i < N_SEQ; i++) {
        np[i] = 2 + 3 * i;
        for (int k = 0; k < np[i]; k++) prompt[i][k] = (int)((7 + 31 * i + 13 * k) % V);
    }
    for (int step = 0; ok && step < 64; step++) {
        e0_ctx *cs[N_SEQ];
        const int *tk[N_SEQ];
        int nt[N_SEQ], who[N_SEQ], n = 0, rows = 0;
        bool dec[N_SEQ]; /* a generated token, not a prompt piece */
        for (int j = 0; j < N_SEQ; j++) {
            const int q = (j + step) % N_SEQ;
            const int want = done[q] < np[q] ? (np[q] - done[q] < 8 ? np[q] - done[q] : 8) : gen[q] < 2 ? 1 : 0;
            if (!want || rows + want > 8) continue;
            dec[n] = done[q] >= np[q];
            cs[n] = bat[q], tk[n] = dec[n] ? &next[q] : prompt[q] + done[q], nt[n] = want, who[n++] = q;
            rows += want;
        }
        if (!n) break;
        ok = e0_eval_multi(cs, tk, nt, dec, n, &e) == 0;
        CHECKF(ok, "mixed step %d (%d sequences, %d rows): %s", step, n, rows, e.msg);
        for (int j = 0; j < n && ok; j++) {
            const int q = who[j];
            ok = (dec[j] ? e0_decode(ref[q], next[q], &e) : e0_eval(ref[q], tk[j], nt[j], NULL, &e)) == 0;
            CHECKF(ok, "ref: %s", e.msg);
            if (!ok) break;
            CHECKF(e0_ctx_pos(bat[q]) == e0_ctx_pos(ref[q]), "positions %d %d", e0_ctx_pos(bat[q]), e0_ctx_pos(ref[q]));
            if (memcmp(e0_ctx_logits(bat[q]), e0_ctx_logits(ref[q]), (size_t)V * sizeof(float)) && differ++ < 3)
                printf("  %s: mixed step %d seq %d (%d rows) at pos %d: logits differ\n", path, step, q, nt[j], e0_ctx_pos(ref[q]));
            if (done[q] < np[q]) done[q] += nt[j];
            else gen[q]++;
            next[q] = argmax(e0_ctx_logits(ref[q]), V);
        }
        mixed += n > 1 && rows > n; /* a step with a prompt chunk beside other sequences */
        steps++;
    }
    for (int q = 0; q < N_SEQ && ok; q++) CHECKF(done[q] == np[q] && gen[q] == 2, "seq %d: %d/%d prompt, %d generated", q, done[q], np[q], gen[q]);
    CHECKF(!ok || mixed > 0, "%s: no step mixed a prompt chunk with other sequences", path);
    /* decode steps: n = 1..8 sequences, the first context rotating through them */
    uint64_t req_batch = 0, req_alone = 0; /* acquisitions by batches of n >= 2, by the same steps alone */
    for (int n = 1; n <= N_SEQ && ok; n++)
        for (int rot = 0; rot < 2 && ok; rot++) {
            e0_ctx *cs[N_SEQ];
            int toks[N_SEQ], who[N_SEQ];
            for (int j = 0; j < n; j++) {
                who[j] = (j + rot * (n - 1) + n) % N_SEQ; /* distinct: n consecutive ids mod 8 */
                cs[j] = bat[who[j]];
                toks[j] = next[who[j]];
            }
            const uint64_t r0 = requests(&s);
            ok = e0_eval_batch(cs, toks, n, &e) == 0;
            CHECKF(ok, "batch of %d: %s", n, e.msg);
            const uint64_t r1 = requests(&s);
            for (int j = 0; j < n && ok; j++) {
                int q = who[j];
                ok = e0_decode(ref[q], next[q], &e) == 0;
                CHECKF(ok, "ref: %s", e.msg);
                if (!ok) break;
                CHECKF(e0_ctx_pos(bat[q]) == e0_ctx_pos(ref[q]), "positions %d %d", e0_ctx_pos(bat[q]), e0_ctx_pos(ref[q]));
                if (memcmp(e0_ctx_logits(bat[q]), e0_ctx_logits(ref[q]), (size_t)V * sizeof(float))) {
                    if (differ++ < 3) printf("  %s: n=%d rot=%d seq %d at pos %d: logits differ\n", path, n, rot, q, e0_ctx_pos(ref[q]));
                }
                next[q] = argmax(e0_ctx_logits(ref[q]), V);
            }
            if (n >= 2) req_batch += r1 - r0, req_alone += requests(&s) - r1;
            steps++;
        }
    CHECKF(differ == 0, "%s: %d sequence-steps differ from e0_eval alone (%d batches)", path, differ, steps);
    if (ok && s.xc) /* the union once per layer: a fallback to e0_eval each would acquire as many */
        CHECKF(req_batch < req_alone, "%s: batches acquired %llu experts, the same steps alone %llu", path,
               (unsigned long long)req_batch, (unsigned long long)req_alone);
    const bool predictor = routing == PREFETCH || routing == PREDICTED || (routing == SESSION && o.replay_predict >= 0);
    if (ok && predictor) { /* each sequence's predictions, scored as alone */
        uint64_t tb = 0;
        for (int q = 0; q < N_SEQ; q++)
            for (int l = 0; l < s.m->hp.n_layer; l++) {
                uint64_t hb, nb, hr, nr;
                e0_ctx_prediction_stats(bat[q], l, &hb, &nb);
                e0_ctx_prediction_stats(ref[q], l, &hr, &nr);
                CHECKF(hb == hr && nb == nr, "%s: seq %d layer %d: predictions %llu/%llu right batched, %llu/%llu alone",
                       path, q, l, (unsigned long long)hb, (unsigned long long)nb, (unsigned long long)hr,
                       (unsigned long long)nr);
                tb += nb;
            }
        CHECKF(tb > 0, "%s: no prediction was scored", path);
    }
    if (ok) {
        /* bad calls: a repeated context, a bad token, too many for n_batch (8); nothing moves */
        int p0 = e0_ctx_pos(bat[1]), p1 = e0_ctx_pos(bat[2]);
        e0_ctx *dup[2] = {bat[1], bat[1]};
        int t2[2] = {next[1], next[1]};
        CHECK(e0_eval_batch(dup, t2, 2, &e) < 0 && strstr(e.msg, "twice"));
        e0_ctx *two[2] = {bat[1], bat[2]};
        int bad[2] = {next[1], (int)V};
        CHECK(e0_eval_batch(two, bad, 2, &e) < 0 && strstr(e.msg, "out of range"));
        CHECK(e0_ctx_pos(bat[1]) == p0 && e0_ctx_pos(bat[2]) == p1);
        CHECK(e0_eval_batch(two, t2, 0, &e) < 0);
        /* e0_eval_multi: no tokens for one, more rows than n_batch, a decode of two tokens */
        int nine[9] = {0}, cnt[2] = {1, 0};
        const int *tp[2] = {nine, nine};
        CHECK(e0_eval_multi(two, tp, cnt, NULL, 2, &e) < 0 && strstr(e.msg, "no tokens"));
        cnt[0] = 4, cnt[1] = 5;
        CHECK(e0_eval_multi(two, tp, cnt, NULL, 2, &e) < 0 && strstr(e.msg, "n_batch"));
        const bool dec2[2] = {false, true};
        cnt[0] = 1, cnt[1] = 2;
        CHECK(e0_eval_multi(two, tp, cnt, dec2, 2, &e) < 0 && strstr(e.msg, "decodes 2 tokens"));
        CHECK(e0_ctx_pos(bat[1]) == p0 && e0_ctx_pos(bat[2]) == p1);
        /* sharing: only the own buffers are counted; another shape cannot share */
        e0_ctx_params sp = cp;
        sp.scratch_owner = s.c;
        CHECK(e0_ctx_memory(s.m, &sp) == e0_ctx_memory_sharing(s.m, &cp) && e0_ctx_memory(s.m, &sp) < e0_ctx_memory(s.m, &cp));
        sp.n_batch = cp.n_batch * 2;
        e0_ctx *bad_share = e0_ctx_new(s.m, &sp, &e);
        CHECKF(!bad_share && strstr(e.msg, "another shape"), "%s", bad_share ? "made" : e.msg);
        e0_ctx_free(bad_share);
        sp = cp;
        sp.scratch_owner = bat[1]; /* a sharer itself */
        bad_share = e0_ctx_new(s.m, &sp, &e);
        CHECKF(!bad_share && strstr(e.msg, "shares another's"), "%s", bad_share ? "made" : e.msg);
        e0_ctx_free(bad_share);
    }
    for (int i = 0; i < N_SEQ; i++) {
        if (i) e0_ctx_free(bat[i]);
        e0_ctx_free(ref[i]);
    }
    e0_close(&s);
}

/* Chunking: one prompt (23 tokens, n_batch 8) evaluated in pieces of other sizes, one-token
 * pieces included, gives every position the bits e0_eval's chunks of n_batch give it (matrix
 * products per row, attention per query over the whole cache, routing per token, exact for
 * every prompt token), so a scheduler may cut prompts anywhere, under every routing. Logits
 * compared after the prompt and after each of 2 greedy steps (e0_decode: under predicted
 * routing, with predicted experts); resident, streamed, f32 and f16 KV. Under a predictor, the
 * prompt scores no prediction, however it is cut, and the steps do. */
static int eval_pieces(const char *path, const char *const *opts, uint32_t kv, int routing, const int *sizes, int n_sizes, float *out,
                       int64_t *V, uint64_t scored[2]) {
    e0_err e;
    e0_options o;
    e0_options_init(&o);
    for (int i = 0; opts && opts[i]; i++)
        if (e0_options_parse(&o, opts[i], &e) < 0) return -1;
    e0_ctx_params cp = {.n_ctx = 64, .n_threads = 2, .n_batch = 8, .type_k = kv, .type_v = kv};
    e0_model_params mp = {.experts_resident = true};
    e0_session s = {0};
    if (e0_open(path, &o, &cp, &mp, &s, &e) < 0) return -1;
    set_routing(s.c, routing);
    *V = s.m->hp.n_vocab;
    int prompt[23], rc = 0, done = 0;
    for (int k = 0; k < 23; k++) prompt[k] = (int)((5 + 17 * k) % *V);
    for (int j = 0; done < 23 && rc == 0; j++) {
        const int n = sizes[j % n_sizes] < 23 - done ? sizes[j % n_sizes] : 23 - done; /* the sizes cycle */
        rc = e0_eval(s.c, prompt + done, n, NULL, &e);
        done += n;
    }
    scored[0] = scored[1] = 0; /* predictions scored by the prompt, by the steps */
    for (int l = 0; l < s.m->hp.n_layer; l++) {
        uint64_t h, t;
        e0_ctx_prediction_stats(s.c, l, &h, &t);
        scored[0] += t;
    }
    for (int step = 0; step < 3 && rc == 0; step++) {
        memcpy(out + (size_t)step * *V, e0_ctx_logits(s.c), (size_t)*V * sizeof(float));
        int next = argmax(e0_ctx_logits(s.c), *V);
        if (step < 2) rc = e0_decode(s.c, next, &e);
    }
    for (int l = 0; l < s.m->hp.n_layer; l++) {
        uint64_t h, t;
        e0_ctx_prediction_stats(s.c, l, &h, &t);
        scored[1] += t;
    }
    scored[1] -= scored[0];
    if (rc < 0) printf("  %s: %s\n", path, e.msg);
    e0_close(&s);
    return rc;
}

static void check_chunking(const char *path, const char *const *opts, uint32_t kv, int routing) {
    static const int sizes[][6] = {{8}, {1}, {2}, {3}, {5, 2, 7, 3, 2, 4}}, n_sizes[] = {1, 1, 1, 1, 6};
    const bool predictor = routing == PREDICTED || routing == PREFETCH;
    float *ref = malloc(3 * 1000000 * sizeof(float)), *got = malloc(3 * 1000000 * sizeof(float));
    int64_t V = 0;
    uint64_t scored[2];
    CHECKF(ref && got && eval_pieces(path, opts, kv, routing, sizes[0], 1, ref, &V, scored) == 0 && V <= 1000000, "%s", path);
    for (size_t k = 1; ref && got && V && V <= 1000000 && k < sizeof n_sizes / sizeof *n_sizes; k++) {
        CHECKF(eval_pieces(path, opts, kv, routing, sizes[k], n_sizes[k], got, &V, scored) == 0, "%s", path);
        CHECKF(scored[0] == 0, "%s (routing %d): pieces of %d: the prompt scored %llu predictions", path, routing, sizes[k][0],
               (unsigned long long)scored[0]);
        CHECKF(!predictor || scored[1] > 0, "%s (routing %d): the decode steps scored no prediction", path, routing);
        for (int step = 0; step < 3; step++)
            CHECKF(!memcmp(ref + (size_t)step * V, got + (size_t)step * V, (size_t)V * sizeof(float)),
                   "%s (routing %d, kv %u): pieces of %d%s: logits at step %d differ from chunks of n_batch", path, routing, kv,
                   sizes[k][0], n_sizes[k] > 1 ? ", 2, 7, ..." : "", step);
    }
    free(ref);
    free(got);
}

static char golden_path[N_SEQ][1024];

static const char *golden(const char *name) {
    static int k;
    k = (k + 1) % N_SEQ;
    snprintf(golden_path[k], sizeof golden_path[k], "%s/golden/%s.gguf", t_shared(), name);
    return golden_path[k];
}

static void test_golden_dense(void) {
    const char *names[] = {"llama-dense", "qwen2-dense", "qwen3-dense", "llama-tied", "stories260K"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) check_model(golden(names[i]), NULL, 0, ACTUAL);
    check_model(golden("qwen3-dense"), NULL, 1 /* F16 */, ACTUAL);
}

static void test_golden_moe_resident(void) {
    const char *names[] = {"qwen3moe", "qwen2moe", "llama-moe", "stories260K-moe4"};
    const char *opts[] = {"experts=resident", NULL};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) check_model(golden(names[i]), opts, 0, ACTUAL);
    check_model(golden("qwen3moe"), opts, 0, PREDICTED); /* predicted experts computed, none read */
}

/* Streamed through a cache of as few slots as a token uses: a batch's union of experts is taken
 * in several acquisitions per layer; read ahead (prefetch=on), and computed as predicted
 * (routing=predicted, the default when experts stream). */
static void test_golden_moe_streamed(void) {
    const char *names[] = {"qwen3moe", "qwen2moe", "stories260K-moe4"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char slots[64];
        e0_err e;
        e0_model *m = e0_model_load(golden(names[i]), NULL, false, &e);
        CHECKF(m, "%s", e.msg);
        if (!m) continue;
        snprintf(slots, sizeof slots, "expert_slots=%lld", (long long)m->hp.n_expert_used);
        e0_model_free(m);
        const char *opts[] = {"experts=stream", slots, NULL};
        check_model(golden(names[i]), opts, 0, PREFETCH);
        check_model(golden(names[i]), opts, 0, PREDICTED);
    }
}

/* routing=replay (with and without a predictor, streamed): every sequence replays a synthetic
 * trace from its own step (e0_replay_first_step), batched as alone. */
static void test_golden_moe_replay(void) {
    const char *names[] = {"qwen3moe", "stories260K-moe4"};
    for (size_t n = 0; n < sizeof names / sizeof *names; n++) {
        e0_err e;
        e0_model *m = e0_model_load(golden(names[n]), NULL, false, &e);
        CHECKF(m, "%s", e.msg);
        if (!m) continue;
        const int X = (int)m->hp.n_expert, K = (int)m->hp.n_expert_used, L = (int)m->hp.n_layer;
        e0_model_free(m);
        char trace[1024], slots[64];
        snprintf(trace, sizeof trace, "%s/test-batch-%s.trace.csv", t_build(), names[n]);
        FILE *f = fopen(trace, "w");
        CHECKF(f, "%s", trace);
        if (!f) continue;
        fprintf(f, "# E=%d k=%d; synthetic\nseq,token,phase,layer,experts\n", X, K);
        uint64_t r = 12345;
        for (int tok = 0; tok < 61; tok++) /* 61 steps: the sequences' start steps differ */
            for (int l = 0; l < L; l++) {
                fprintf(f, "0,%d,1,%d,", tok, l);
                int used[64] = {0}, got = 0;
                while (got < K && K <= 64) {
                    r = r * 6364136223846793005ull + 1442695040888963407ull;
                    int x = (int)((r >> 33) % (uint64_t)X);
                    bool dup = false;
                    for (int k = 0; k < got; k++) dup |= used[k] == x;
                    if (dup) continue;
                    used[got] = x;
                    fprintf(f, "%s%d", got++ ? ";" : "", x);
                }
                fprintf(f, "\n");
            }
        fclose(f);
        char tr[1100];
        snprintf(tr, sizeof tr, "routing_trace=%s", trace);
        snprintf(slots, sizeof slots, "expert_slots=%d", K);
        const char *exact[] = {"experts=stream", slots, "routing=replay", tr, NULL};
        const char *pred[] = {"experts=stream", slots, "routing=replay", tr, "replay_predict=0.7", NULL};
        check_model(golden(names[n]), exact, 0, SESSION);
        check_model(golden(names[n]), pred, 0, SESSION);
        unlink(trace);
    }
}

static int synth(const char *args, char *out, size_t cap, const char *name) {
    char cmd[2048];
    snprintf(out, cap, "%s/test-batch-%s.gguf", t_build(), name);
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer synth %s --seed 5 --out %s >/dev/null 2>&1", t_build(), args, out);
    return t_sh(cmd, NULL, 0);
}

static void test_chunking(void) {
    const char *res[] = {"experts=resident", NULL};
    check_chunking(golden("qwen3-dense"), NULL, 0, ACTUAL);
    check_chunking(golden("qwen3-dense"), NULL, 1 /* F16 */, ACTUAL);
    const char *names[] = {"qwen3moe", "qwen2moe", "stories260K-moe4"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        check_chunking(golden(names[i]), res, 0, ACTUAL);
        e0_err e;
        e0_model *m = e0_model_load(golden(names[i]), NULL, false, &e);
        CHECKF(m, "%s", e.msg);
        if (!m) continue;
        char slots[64];
        snprintf(slots, sizeof slots, "expert_slots=%lld", (long long)m->hp.n_expert_used);
        e0_model_free(m);
        const char *str[] = {"experts=stream", slots, NULL};
        check_chunking(golden(names[i]), str, 0, ACTUAL);
        check_chunking(golden(names[i]), str, 0, PREFETCH);
        check_chunking(golden(names[i]), str, 0, PREDICTED);
    }
}

static void test_synth(void) {
    static const char *const cases[][2] = {
        {"q4k", "--arch qwen3moe --type q4_K"},
        {"q8", "--arch qwen3moe --type q8_0"},
        {"gptoss", "--arch gpt-oss --type q8_0 --n-layer 3 --n-head 6 --n-head-kv 2 --n-swa 4"},
        {"qwen35moe", "--arch qwen35moe --type f32"}, /* fallback: per-context e0_eval */
        {"deepseek2", "--arch deepseek2 --type f32"}, /* fallback: MLA */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char path[1024];
        CHECKF(synth(cases[i][1], path, sizeof path, cases[i][0]) == 0, "synth %s", cases[i][1]);
        const char *opts[] = {"experts=resident", NULL};
        check_model(path, opts, 0, ACTUAL);
        unlink(path);
    }
}

static void test_bench_batch_size(void) {
    char cmd[2048], out[65536];
    snprintf(cmd, sizeof cmd,
             "%s/bin/edge0-infer bench -m %s --prompt-text 'Once upon a time' --ntok 6 --warmup 1 --batch-size 3 "
             "--ctx-size 256 -t 2 2>/dev/null",
             t_build(), golden("qwen3moe"));
    CHECKF(t_sh(cmd, out, sizeof out) == 0, "%s", cmd);
    json_error_t je;
    json_t *row = json_loads(out, JSON_DISABLE_EOF_CHECK, &je);
    CHECKF(row, "bench output is not JSON: %s", out);
    if (!row) return;
    CHECK(json_integer_value(json_object_get(row, "batch_size")) == 3);
    CHECK(json_integer_value(json_object_get(row, "n_decode")) == 6);
    double agg = json_number_value(json_object_get(row, "decode_tokens_per_second"));
    double per = json_number_value(json_object_get(row, "per_sequence_decode_tokens_per_second"));
    CHECKF(agg > 0 && per > 0 && agg > 2.99 * per && agg < 3.01 * per, "aggregate %g per-sequence %g", agg, per);
    CHECK(json_is_true(json_object_get(row, "batch_sequences_agree")));
    /* the 3 sequences borrow the session's pools (-t 2): the main thread and at most one decode
     * and one prefill worker, never a pool per sequence (that was 1 + 3 x 2) */
    json_int_t threads = json_integer_value(json_object_get(row, "process_threads"));
    CHECKF(threads >= 1 && threads <= 3, "bench --batch-size 3 -t 2 runs %lld threads", (long long)threads);
    json_decref(row);
    /* bad values */
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer bench -m %s --prompt-text hi --batch-size 0 2>&1", t_build(), golden("qwen3moe"));
    CHECK(t_sh(cmd, out, sizeof out) != 0);
    snprintf(cmd, sizeof cmd, "%s/bin/edge0-infer bench -m %s --prompt-text hi --batch-size 2 --mode sustained 2>&1", t_build(),
             golden("qwen3moe"));
    CHECK(t_sh(cmd, out, sizeof out) != 0);
}

int main(void) {
    if (!t_need_shared("golden/qwen3moe.gguf", "golden/qwen3-dense.gguf", NULL)) return T_DONE();
    RUN(test_golden_dense);
    RUN(test_golden_moe_resident);
    RUN(test_golden_moe_streamed);
    RUN(test_golden_moe_replay);
    RUN(test_chunking);
    RUN(test_synth);
    RUN(test_bench_batch_size);
    return T_DONE();
}
