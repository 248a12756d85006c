/* test_replay.c — expert routing replayed from a trace (routing=replay, src/engine/trace.c):
 *  - malformed traces: each gives one error naming the file and the line;
 *  - a well-formed trace: its table (steps, sparse layers, dropped rows filled, weights) and the
 *    layer mapping rule;
 *  - the engine's cache hit counts under replay equal tools/expert_policy_sim's for the same trace,
 *    policy (every e0_evict) and slot count, on a small synth qwen3moe model with a trace
 *    generated here (and the shared Mixtral trace, whose 8 experts make a cheap synth model),
 *    with actual routing and with replay_predict (prefetch, prediction-aware eviction on / off);
 *    its lookahead oracle (--horizon) is lrfu knowing no step ahead and Belady knowing them all;
 *    malformed --horizon lists are refused;
 *  - a bad evict / protect_predicted value is one error naming the accepted ones;
 *  - replay's errors: expert count, k, option combinations;
 *  - replay_predict=P: P=1 predicts every expert, P=0 none, a seed repeats a run;
 *  - memory budget honesty: in a streamed run the ledger peak never exceeds memory_budget. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/load.h"
#include "engine/sample.h"
#include "engine/trace.h"
#include "t.h"

static char dir[512];

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

/* ---- the reader ---- */

static void test_malformed(void) {
    static const struct {
        const char *text;
        int line;
        const char *what;
    } cases[] = {
        {"E=8 k=2\nseq,token,phase,layer,experts\n0,0,,0,1;2\n", 1, "header"},
        {"# E=0 k=2\nseq,token,phase,layer,experts\n0,0,,0,1;2\n", 1, "E="},
        {"# E=8 k=9\nseq,token,phase,layer,experts\n0,0,,0,1;2\n", 1, "k="},
        {"# E=8 k=2x\nseq,token,phase,layer,experts\n0,0,,0,1;2\n", 1, "after k="},
        {"# E=8 k=2\nseq,token,layer,experts\n0,0,0,1;2\n", 2, "column line"},
        {"# E=8 k=2\nseq,token,phase,layer,experts\n0,0,,0,1;2\n0,1,,0,1\n", 4, "k=2"},
        {"# E=8 k=2\nseq,token,phase,layer,experts\n0,0,,0,1;2;3\n", 3, "more than"},
        {"# E=8 k=2\nseq,token,phase,layer,experts\n0,0,,0,1;8\n", 3, "expert 2"},
        {"# E=8 k=2\nseq,token,phase,layer,experts\n0,0,,0,3;3\n", 3, "twice"},
        {"# E=8 k=2\nseq,token,phase,layer,experts\n0,0,2,0,1;2\n", 3, "phase"},
        {"# E=8 k=2\nseq,token,phase,layer,experts\n-1,0,,0,1;2\n", 3, "seq"},
        {"# E=8 k=2\nseq,token,phase,layer,experts\n0,99999999999,,0,1;2\n", 3, "token"},
        {"# E=8 k=2\nseq,token,phase,layer,experts\n0,0,,70000,1;2\n", 3, "layer"},
        {"# E=8 k=2\nseq,token,phase,layer,experts\n0,0,,0,1;2 \n", 3, "unexpected text"},
        {"# E=8 k=2\nseq,token,phase,layer,experts\n0,0,,0,1;2\n\n0,1,,0,1;2\n", 4, "empty line"},
        {"# E=8 k=2\nseq,token,phase,layer,experts\n0,0,,0,1;2\n0,1,,0,1;2\n0,1,,0,3;4\n", 5, "duplicate"},
        {"# E=8 k=2\nseq,token,phase,layer,experts\n0,5,,0,1;2\n0,1,,1,1;2\n0,3,,0,3;4\n", 5, "out of order"},
        {"# E=8 k=2\nseq,token,phase,layer,experts\n0,0,0,0,1;2\n0,0,1,1,1;2\n", 4, "phase 1 differs"},
        {"# E=8 k=2\nseq,token,phase,layer,experts,weights\n0,0,,0,1;2,0.5\n", 3, "weight 2"},
        {"# E=8 k=2\nseq,token,phase,layer,experts,weights\n0,0,,0,1;2,0.5;nan\n", 3, "weight 2"},
        {"# E=8 k=2\nseq,token,phase,layer,experts\n0,0,,0,1;2,0.5;0.5\n", 3, "unexpected text"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[600], want[700];
        snprintf(path, sizeof path, "%s/bad%zu.csv", dir, i);
        write_file(path, cases[i].text);
        e0_err e = {{0}};
        e0_trace *t = e0_trace_load(path, &e);
        CHECKF(!t, "case %zu parsed", i);
        e0_trace_free(t);
        snprintf(want, sizeof want, "%s:%d: ", path, cases[i].line);
        CHECKF(!strncmp(e.msg, want, strlen(want)), "case %zu: '%s' does not start with '%s'", i, e.msg, want);
        CHECKF(strstr(e.msg, cases[i].what) != NULL, "case %zu: '%s' does not say '%s'", i, e.msg, cases[i].what);
        CHECKF(!strchr(e.msg, '\n'), "case %zu: more than one line: '%s'", i, e.msg);
    }
    /* file-level problems name the file */
    e0_err e = {{0}};
    CHECK(!e0_trace_parse("empty.csv", "", 0, &e) && strstr(e.msg, "empty.csv: empty file"));
    CHECK(!e0_trace_parse("nodata.csv", "# E=8 k=2\nseq,token,phase,layer,experts\n", 40, &e) &&
          strstr(e.msg, "nodata.csv: no data rows"));
    const char nul[] = "# E=8 k=2\nseq,token,phase,layer,experts\n0,0,,0,1\0002\n";
    CHECK(!e0_trace_parse("nul.csv", nul, sizeof nul - 1, &e) && strstr(e.msg, "nul.csv:3: "));
    CHECK(!e0_trace_load("/nonexistent/trace.csv", &e) && strstr(e.msg, "/nonexistent/trace.csv"));
}

static void test_wellformed(void) {
    /* two sequences (given in reverse order), layers 2 and 7 only, seq 1 token 4 lacks layer 7,
     * CRLF line ends, weights */
    const char *text = "# E=6 k=3; a comment\r\n"
                       "seq,token,phase,layer,experts,weights\r\n"
                       "1,3,1,2,0;1;2,0.5;0.3;0.2\r\n"
                       "1,4,1,2,3;4;5,0.6;0.3;0.1\r\n"
                       "1,3,1,7,5;4;3,0.4;0.4;0.2\r\n"
                       "0,0,0,2,2;1;0,1;0;0\r\n"
                       "0,0,0,7,1;0;5,0.7;0.2;0.1\r\n";
    e0_err e = {{0}};
    e0_trace *t = e0_trace_parse("ok.csv", text, strlen(text), &e);
    CHECKF(t, "%s", e.msg);
    if (!t) return;
    CHECK(t->n_expert == 6 && t->k == 3 && t->n_layer == 2 && t->n_step == 3 && t->n_rows == 5 && t->n_filled == 1);
    CHECK(t->layer_id[0] == 2 && t->layer_id[1] == 7);
    CHECK(t->phase[0] == 0 && t->phase[1] == 1 && t->phase[2] == 1);
    /* step 0 = (seq 0, token 0), step 1 = (1, 3), step 2 = (1, 4) */
    CHECK(e0_trace_experts(t, 0, 0)[0] == 2 && e0_trace_experts(t, 0, 1)[2] == 5);
    CHECK(e0_trace_experts(t, 1, 1)[0] == 5 && e0_trace_experts(t, 2, 0)[1] == 4);
    CHECK(e0_trace_experts(t, 2, 1)[0] == 5); /* filled from step 1 */
    CHECK(e0_trace_experts(t, 3, 0) == e0_trace_experts(t, 0, 0)); /* steps cycle */
    CHECK(e0_trace_weights(t, 1, 0)[1] == 0.3f);
    /* model layer l of Lm uses floor(l * Lt / Lm) */
    CHECK(e0_trace_layer_for(t, 0, 5) == 0 && e0_trace_layer_for(t, 2, 5) == 0 && e0_trace_layer_for(t, 3, 5) == 1 &&
          e0_trace_layer_for(t, 4, 5) == 1);
    CHECK(e0_trace_check_model(t, 6, 2, &e) == 0);
    CHECK(e0_trace_check_model(t, 8, 2, &e) < 0 && strstr(e.msg, "E=6"));
    CHECK(e0_trace_check_model(t, 6, 4, &e) < 0 && strstr(e.msg, "fewer"));
    e0_trace_free(t);
    /* every shared trace reads */
    const char *shared[] = {"gemma-4-26b-a4b.csv", "gpt-oss-120b.csv", "mixtral-8x7b.csv", "qwen1.5-moe-a2.7b-decode.csv",
                            "qwen1.5-moe-a2.7b-prefill.csv", "qwen3-30b-a3b.csv"};
    for (size_t i = 0; i < sizeof shared / sizeof shared[0]; i++) {
        char p[1024];
        snprintf(p, sizeof p, "%s/routing/%s", t_shared(), shared[i]);
        if (access(p, R_OK)) continue;
        t = e0_trace_load(p, &e);
        CHECKF(t && t->n_step > 100 && t->n_layer >= 5, "%s: %s", shared[i], t ? "too small" : e.msg);
        e0_trace_free(t);
    }
}

/* ---- replay through the engine vs the simulator ---- */

/* A trace with E experts, k per row, layers 0, 3 and 5 (Lt = 3), n_tok tokens of one sequence;
 * popularity skewed (a few experts much more likely), layer 3 drops a row now and then. */
static void make_trace(const char *path, int E, int k, int n_tok, unsigned seed) {
    FILE *f = fopen(path, "w");
    if (!f) return;
    fprintf(f, "# E=%d k=%d; generated by test_replay\nseq,token,phase,layer,experts\n", E, k);
    const int layers[] = {0, 3, 5};
    uint64_t s = seed;
    for (int li = 0; li < 3; li++)
        for (int tok = 0; tok < n_tok; tok++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            if (layers[li] == 3 && (s >> 33) % 11 == 0) continue; /* dropped */
            fprintf(f, "0,%d,%d,%d,", tok, tok < 3 ? 0 : 1, layers[li]);
            int ids[64], n = 0;
            while (n < k) {
                s = s * 6364136223846793005ull + 1442695040888963407ull;
                unsigned r = (unsigned)(s >> 33);
                int x = r % 3 ? (int)(r / 3 % (unsigned)(E / 4 + 1)) : (int)(r / 3 % (unsigned)E); /* skew */
                bool dup = false;
                for (int j = 0; j < n; j++) dup |= ids[j] == x;
                if (!dup) ids[n++] = x;
            }
            for (int j = 0; j < k; j++) fprintf(f, j ? ";%d" : "%d", ids[j]);
            fputc('\n', f);
        }
    fclose(f);
}

static int synth(const char *out, int n_expert, int k, int n_layer) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "%s/bin/edge0-infer synth --arch qwen3moe --out %s --type q8_0 --n-layer %d --n-embd 64 --n-head 2 "
             "--n-head-kv 1 --head-dim 32 --n-ff 64 --n-expert %d --n-expert-used %d --n-ff-exp 64 --n-vocab 300 "
             "--n-ctx 512 >/dev/null 2>&1",
             t_build(), out, n_layer, n_expert, k);
    return t_sh(cmd, NULL, 0);
}

/* Engine: a one-token prompt then n_tok - 1 decode steps under routing=replay, actual routing,
 * no prefetch, `slots` expert slots (0: as the budget rule decides, a memory_budget in extra);
 * the cache's hits / requests. */
static int engine_run(const char *model, const char *trace, int slots, const char *evict, int n_tok,
                      const char *const *extra, int n_extra, uint64_t *hits, uint64_t *requests, uint64_t *misses,
                      e0_err *e) {
    e0_options o;
    e0_options_init(&o);
    char kv[1200];
    const char *opts[] = {"experts=stream", "routing=replay", "prefetch=off"};
    for (int i = 0; i < 3; i++)
        if (e0_options_parse(&o, opts[i], e) < 0) return -1;
    for (int i = 0; i < n_extra; i++)
        if (e0_options_parse(&o, extra[i], e) < 0) return -1;
    snprintf(kv, sizeof kv, "expert_slots=%d", slots);
    if (slots > 0 && e0_options_parse(&o, kv, e) < 0) return -1;
    snprintf(kv, sizeof kv, "evict=%s", evict);
    if (e0_options_parse(&o, kv, e) < 0) return -1;
    snprintf(kv, sizeof kv, "routing_trace=%s", trace);
    if (e0_options_parse(&o, kv, e) < 0) return -1;
    e0_session s;
    if (e0_open(model, &o, &(e0_ctx_params){.n_threads = 1, .n_ctx = 512}, NULL, &s, e) < 0) return -1;
    int tok = 1;
    for (int i = 0; i < n_tok; i++)
        if (e0_decode(s.c, tok, e) < 0) return e0_close(&s), -1;
    const e0_experts_stats *st = e0_experts_get_stats(s.xc);
    *hits = st->hits;
    *requests = st->requests;
    *misses = st->misses;
    e0_close(&s);
    return 0;
}

static int engine_hits(const char *model, const char *trace, int slots, const char *evict, int n_tok, uint64_t *hits,
                       uint64_t *requests, e0_err *e) {
    uint64_t misses;
    return engine_run(model, trace, slots, evict, n_tok, NULL, 0, hits, requests, &misses, e);
}

/* Simulator: the row of (policy, slots); sim_args are extra arguments ("" for none). */
static int sim_run(const char *model, const char *trace, int slots, const char *policy, int n_tok, const char *sim_args,
                   uint64_t *hits, uint64_t *requests, uint64_t *misses) {
    char cmd[2048], out[16384];
    snprintf(cmd, sizeof cmd, "%s/tools/expert_policy_sim %s %s --slots %d --tokens %d %s", t_build(), model, trace, slots,
             n_tok, sim_args);
    if (t_sh(cmd, out, sizeof out) != 0) return -1;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        char name[16];
        int sl;
        double rate;
        unsigned long long h, r, mi;
        if (sscanf(line, "%15s %d %lf %llu %llu %llu", name, &sl, &rate, &h, &r, &mi) == 6 && !strcmp(name, policy) &&
            sl == slots) {
            *hits = h;
            *requests = r;
            *misses = mi;
            return 0;
        }
    }
    return -1;
}

static int sim_hits(const char *model, const char *trace, int slots, const char *policy, int n_tok, uint64_t *hits,
                    uint64_t *requests) {
    uint64_t misses;
    return sim_run(model, trace, slots, policy, n_tok, "", hits, requests, &misses);
}

static const char *const policies[] = {"lru", "lfu", "lrfu", "pin"};
#define N_POLICIES (int)(sizeof policies / sizeof policies[0])

static void compare(const char *model, const char *trace, int slots, int n_tok, int n_layer, int k) {
    for (int p = 0; p < N_POLICIES; p++) {
        uint64_t eh = 0, er = 0, sh = 0, sr = 0, bh = 0, br = 0;
        e0_err e = {{0}};
        CHECKF(engine_hits(model, trace, slots, policies[p], n_tok, &eh, &er, &e) == 0, "%s", e.msg);
        CHECKF(sim_hits(model, trace, slots, policies[p], n_tok, &sh, &sr) == 0, "simulator failed on %s", trace);
        CHECKF(sim_hits(model, trace, slots, "belady", n_tok, &bh, &br) == 0, "no belady row");
        CHECKF(er == (uint64_t)n_tok * (uint64_t)n_layer * (uint64_t)k, "%llu requests", (unsigned long long)er);
        CHECKF(eh == sh && er == sr, "%s, %s, %d slots: engine %llu/%llu hits, simulator %llu/%llu", trace, policies[p], slots,
               (unsigned long long)eh, (unsigned long long)er, (unsigned long long)sh, (unsigned long long)sr);
        CHECKF(bh >= sh && br == sr, "belady %llu hits below %s's %llu", (unsigned long long)bh, policies[p],
               (unsigned long long)sh);
        printf("  %s %s slots %d: hit rate %.4f (belady %.4f)\n", trace + strlen(dir) + 1, policies[p], slots,
               er ? (double)eh / (double)er : 0, br ? (double)bh / (double)br : 0);
    }
    /* the lookahead oracle (--horizon): knowing no step ahead it is the engine's lrfu, knowing them
     * all (1000 >= n_tok) it is Belady; in between it lies between the two */
    uint64_t lh = 0, lr = 0, bh = 0, br = 0, h0 = 0, r0 = 0, hall = 0, rall = 0, h2 = 0, r2 = 0, mi;
    CHECK(sim_hits(model, trace, slots, "lrfu", n_tok, &lh, &lr) == 0);
    CHECK(sim_hits(model, trace, slots, "belady", n_tok, &bh, &br) == 0);
    CHECKF(sim_run(model, trace, slots, "horizon-0", n_tok, "--horizon 0,2,1000", &h0, &r0, &mi) == 0, "no horizon-0 row");
    CHECKF(sim_run(model, trace, slots, "horizon-2", n_tok, "--horizon 0,2,1000", &h2, &r2, &mi) == 0, "no horizon-2 row");
    CHECKF(sim_run(model, trace, slots, "horizon-1000", n_tok, "--horizon 0,2,1000", &hall, &rall, &mi) == 0, "no horizon-1000 row");
    CHECKF(h0 == lh && r0 == lr, "%s, %d slots: horizon 0 %llu hits, lrfu %llu", trace, slots, (unsigned long long)h0,
           (unsigned long long)lh);
    CHECKF(hall == bh && rall == br && n_tok <= 1000, "%s, %d slots: horizon 1000 %llu hits, belady %llu", trace, slots,
           (unsigned long long)hall, (unsigned long long)bh);
    CHECKF(h2 >= h0 && h2 <= bh && r2 == r0, "horizon 2: %llu hits, not between %llu and %llu", (unsigned long long)h2,
           (unsigned long long)h0, (unsigned long long)bh);
    printf("  %s slots %d: lookahead oracle hit rate %.4f (0 steps) %.4f (2) %.4f (all)\n", trace + strlen(dir) + 1, slots,
           r0 ? (double)h0 / (double)r0 : 0, r2 ? (double)h2 / (double)r2 : 0, rall ? (double)hall / (double)rall : 0);
}

static void test_engine_equals_simulator(void) {
    char model[600], trace[600];
    snprintf(model, sizeof model, "%s/m16.gguf", dir);
    snprintf(trace, sizeof trace, "%s/t16.csv", dir);
    /* 4 model layers over 3 trace layers; 50 tokens cycle through the trace's 40 */
    compare(model, trace, 2, 50, 4, 2);
    compare(model, trace, 5, 50, 4, 2);
    static const char *const bad_horizons[] = {"", "5,", "1,,2", "-1", "x", " 3", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,"
                                               "18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33"};
    for (size_t i = 0; i < sizeof bad_horizons / sizeof *bad_horizons; i++) {
        char cmd[2048], out[4096];
        snprintf(cmd, sizeof cmd, "%s/tools/expert_policy_sim %s %s --slots 5 --horizon '%s' 2>&1", t_build(), model, trace,
                 bad_horizons[i]);
        CHECKF(t_sh(cmd, out, sizeof out) != 0 && strstr(out, "--horizon: expected"), "--horizon '%s' accepted: %s",
               bad_horizons[i], out);
    }
    /* replay_predict: prefetch of the guesses, acquires of the guesses, prediction-aware eviction
     * on and off; counts of hits and misses equal the simulator's --predict run */
    uint64_t prot_misses[N_POLICIES] = {0}, open_misses[N_POLICIES] = {0};
    for (int p = 0; p < N_POLICIES; p++)
        for (int protect = 0; protect < 2; protect++) {
            const char *extra[] = {"replay_predict=0.7", "replay_seed=5", protect ? "protect_predicted=on" : "protect_predicted=off"};
            uint64_t eh = 0, er = 0, em = 0, sh = 0, sr = 0, sm = 0;
            e0_err e = {{0}};
            CHECKF(engine_run(model, trace, 5, policies[p], 50, extra, 3, &eh, &er, &em, &e) == 0, "%s", e.msg);
            CHECKF(sim_run(model, trace, 5, policies[p], 50, protect ? "--predict 0.7 --seed 5 --protect on" : "--predict 0.7 --seed 5 --protect off",
                           &sh, &sr, &sm) == 0, "simulator --predict failed");
            CHECKF(eh == sh && er == sr && em == sm, "predicted, %s, protect %d: engine %llu/%llu hits %llu misses, simulator %llu/%llu %llu",
                   policies[p], protect, (unsigned long long)eh, (unsigned long long)er, (unsigned long long)em,
                   (unsigned long long)sh, (unsigned long long)sr, (unsigned long long)sm);
            CHECKF(er == 50 * 4 * 2 && eh + em == er, "%llu requests", (unsigned long long)er);
            (protect ? prot_misses : open_misses)[p] = em;
            printf("  predicted 0.7 %s protect %s: hit rate %.4f, %llu misses\n", policies[p], protect ? "on" : "off",
                   (double)eh / (double)er, (unsigned long long)em);
        }
    /* the protection must make a difference somewhere (else it is not wired in) */
    bool differs = false;
    for (int p = 0; p < N_POLICIES; p++) differs |= prot_misses[p] != open_misses[p];
    CHECK(differs);
    /* uneven slots: a budget that leaves N >= k slots in every layer and one more in 2 or 3; the
     * simulator given the same N and count (--extra-layers) agrees for every policy */
    char budget[64] = "";
    e0_session ps;
    int64_t bn = 0, bx = 0;
    for (int kib = 64; kib <= 4096 && !budget[0]; kib += 8) {
        e0_options o;
        e0_options_init(&o);
        e0_err e = {{0}};
        char kv[64];
        snprintf(kv, sizeof kv, "memory_budget=%dKiB", kib);
        if (e0_options_parse(&o, "experts=stream", &e) < 0 || e0_options_parse(&o, kv, &e) < 0) break;
        if (e0_plan(model, &o, &(e0_ctx_params){.n_threads = 1, .n_ctx = 512}, &ps, &e) < 0) continue;
        if (ps.opt.expert_slots >= 2 && ps.opt.expert_slots < 8 && ps.extra_slot_layers >= 2) {
            snprintf(budget, sizeof budget, "%s", kv);
            bn = ps.opt.expert_slots;
            bx = ps.extra_slot_layers;
        }
    }
    CHECKF(budget[0], "no budget gives some layers of %s an extra slot", model);
    for (int p = 0; p < N_POLICIES && budget[0]; p++) {
        const char *extra[] = {budget};
        char args[64];
        uint64_t eh = 0, er = 0, em = 0, sh = 0, sr = 0, sm = 0;
        e0_err e = {{0}};
        snprintf(args, sizeof args, "--extra-layers %lld", (long long)bx);
        CHECKF(engine_run(model, trace, 0, policies[p], 50, extra, 1, &eh, &er, &em, &e) == 0, "%s", e.msg);
        CHECKF(sim_run(model, trace, (int)bn, policies[p], 50, args, &sh, &sr, &sm) == 0, "simulator %s failed", args);
        CHECKF(eh == sh && er == sr && em == sm, "%s (%lld slots, %lld in %lld layers), %s: engine %llu/%llu hits, simulator %llu/%llu",
               budget, (long long)bn, (long long)bn + 1, (long long)bx, policies[p], (unsigned long long)eh,
               (unsigned long long)er, (unsigned long long)sh, (unsigned long long)sr);
        printf("  %s: %lld slots, %lld in %lld layers, %s: hit rate %.4f\n", budget, (long long)bn, (long long)bn + 1,
               (long long)bx, policies[p], er ? (double)eh / (double)er : 0);
    }
    /* the shared Mixtral trace (8 experts, k=2): an 8-expert synth model is cheap */
    char mix[1024], model8[600];
    snprintf(mix, sizeof mix, "%s/routing/mixtral-8x7b.csv", t_shared());
    if (access(mix, R_OK)) {
        t_skip("no %s", mix);
        return;
    }
    snprintf(model8, sizeof model8, "%s/m8.gguf", dir);
    CHECK(synth(model8, 8, 2, 6) == 0);
    uint64_t eh, er, sh, sr;
    e0_err e = {{0}};
    CHECKF(engine_hits(model8, mix, 3, "lfu", 120, &eh, &er, &e) == 0, "%s", e.msg);
    CHECK(sim_hits(model8, mix, 3, "lfu", 120, &sh, &sr) == 0);
    CHECKF(eh == sh && er == sr, "mixtral: engine %llu/%llu, simulator %llu/%llu", (unsigned long long)eh,
           (unsigned long long)er, (unsigned long long)sh, (unsigned long long)sr);
}

/* Fewer slots than a token's experts: the experts a layer's cache holds are computed first. With
 * one slot and every token routed to experts 1 and 6, the slot keeps the one computed last: taken
 * in id order 6 would be evicted by 1 and read again (2 reads a token); held first, 6 hits and
 * only 1 is read (1 read a token after the first). */
static void test_held_first(void) {
    char model8[600], trace[600];
    snprintf(model8, sizeof model8, "%s/m8.gguf", dir);
    snprintf(trace, sizeof trace, "%s/same-pair.csv", dir);
    CHECK(synth(model8, 8, 2, 3) == 0);
    FILE *f = fopen(trace, "w");
    CHECK(f != NULL);
    if (!f) return;
    fprintf(f, "# E=8 k=2\nseq,token,phase,layer,experts\n");
    for (int tok = 0; tok < 20; tok++) fprintf(f, "0,%d,1,0,6;1\n", tok);
    fclose(f);
    const int n_tok = 20, L = 3;
    uint64_t h = 0, r = 0, mi = 0;
    e0_err e = {{0}};
    CHECKF(engine_run(model8, trace, 1, "lru", n_tok, NULL, 0, &h, &r, &mi, &e) == 0, "%s", e.msg);
    CHECKF(r == (uint64_t)(n_tok * L * 2) && mi == (uint64_t)(L * (n_tok + 1)) && h == r - mi,
           "1 slot, experts 1 and 6 every token: %llu requests, %llu hits, %llu misses (want %d misses)",
           (unsigned long long)r, (unsigned long long)h, (unsigned long long)mi, L * (n_tok + 1));
}

/* ---- errors and options ---- */

static int open_with(const char *model, const char *const *kvs, int n, e0_err *e) {
    e0_options o;
    e0_options_init(&o);
    for (int i = 0; i < n; i++)
        if (e0_options_parse(&o, kvs[i], e) < 0) return -1;
    e0_session s;
    if (e0_open(model, &o, &(e0_ctx_params){.n_threads = 1, .n_ctx = 512}, NULL, &s, e) < 0) return -1;
    e0_close(&s);
    return 0;
}

static void test_replay_errors(void) {
    char model[600], trace[600], t4[700], bad[700], k1[700], kv[800], kvb[800], kv4[800], kv1[800];
    snprintf(model, sizeof model, "%s/m16.gguf", dir);
    snprintf(trace, sizeof trace, "%s/t16.csv", dir);
    snprintf(t4, sizeof t4, "%s/t4.csv", dir);
    snprintf(bad, sizeof bad, "%s/tbad.csv", dir);
    snprintf(k1, sizeof k1, "%s/tk1.csv", dir);
    write_file(t4, "# E=4 k=2\nseq,token,phase,layer,experts\n0,0,,0,1;2\n");
    write_file(bad, "# E=16 k=2\nseq,token,phase,layer,experts\n0,0,,0,1;2\n0,1,,0,1;x\n");
    write_file(k1, "# E=16 k=1\nseq,token,phase,layer,experts\n0,0,,0,1\n");
    snprintf(kv, sizeof kv, "routing_trace=%s", trace);
    snprintf(kvb, sizeof kvb, "routing_trace=%s", bad);
    snprintf(kv4, sizeof kv4, "routing_trace=%s", t4);
    snprintf(kv1, sizeof kv1, "routing_trace=%s", k1);
    e0_err e = {{0}};
    const char *ok[] = {"routing=replay", kv};
    CHECKF(open_with(model, ok, 2, &e) == 0, "%s", e.msg);
    const char *no_trace[] = {"routing=replay"};
    CHECK(open_with(model, no_trace, 1, &e) < 0 && strstr(e.msg, "routing_trace"));
    const char *no_replay[] = {kv};
    CHECK(open_with(model, no_replay, 1, &e) < 0 && strstr(e.msg, "only used with routing=replay"));
    const char *predict_alone[] = {"replay_predict=0.5"};
    CHECK(open_with(model, predict_alone, 1, &e) < 0 && strstr(e.msg, "replay_predict"));
    const char *wrong_e[] = {"routing=replay", kv4};
    CHECK(open_with(model, wrong_e, 2, &e) < 0 && strstr(e.msg, "E=4") && strstr(e.msg, "16"));
    const char *few_k[] = {"routing=replay", kv1};
    CHECK(open_with(model, few_k, 2, &e) < 0 && strstr(e.msg, "fewer"));
    const char *malformed[] = {"routing=replay", kvb};
    char want[800];
    snprintf(want, sizeof want, "%s:4: ", bad);
    CHECKF(open_with(model, malformed, 2, &e) < 0 && strstr(e.msg, want), "%s", e.msg);
    e0_options o;
    e0_options_init(&o);
    CHECK(e0_options_parse(&o, "replay_predict=1.5", &e) < 0 && strstr(e.msg, "replay_predict"));
    CHECK(e0_options_parse(&o, "replay_predict=x", &e) < 0);
    CHECK(e0_options_parse(&o, "routing_trace=", &e) < 0);
    /* a malformed policy value: one line naming the key, the value and every accepted one */
    CHECK(e0_options_parse(&o, "evict=arc", &e) < 0 && strstr(e.msg, "evict") && strstr(e.msg, "'arc'") &&
          strstr(e.msg, "lru, lfu, lrfu, pin") && !strchr(e.msg, '\n'));
    CHECK(e0_options_parse(&o, "evict=", &e) < 0 && strstr(e.msg, "evict"));
    CHECK(e0_options_parse(&o, "evict=LRU", &e) < 0);
    CHECK(e0_options_parse(&o, "protect_predicted=yes", &e) < 0 && strstr(e.msg, "protect_predicted") &&
          strstr(e.msg, "on, off"));
    for (int p = 0; p < N_POLICIES; p++) {
        char kvp[64];
        snprintf(kvp, sizeof kvp, "evict=%s", policies[p]);
        CHECKF(e0_options_parse(&o, kvp, &e) == 0 && o.evict == p && !strcmp(e0_evict_name(o.evict), policies[p]), "%s", kvp);
    }
    CHECK(!e0_evict_name(-1) && !e0_evict_name(E0_EVICT_COUNT));
    /* the cache itself refuses an unknown policy */
    e0_model *mm = e0_model_load(model, &(e0_model_params){.experts_resident = false}, true, &e);
    CHECKF(mm, "%s", e.msg);
    if (mm) {
        CHECK(!e0_experts_new(mm, &(e0_experts_params){.slots = 4, .evict = E0_EVICT_COUNT}, &e) &&
              strstr(e.msg, "eviction policy"));
        e0_model_free(mm);
    }
}

/* ---- replay_predict ---- */

static int predict_run(const char *model, const char *trace, const char *p, const char *seed, uint64_t *hits,
                       uint64_t *total, uint64_t *cache_hits, uint64_t *bytes, e0_err *e) {
    e0_options o;
    e0_options_init(&o);
    char kv[800];
    snprintf(kv, sizeof kv, "routing_trace=%s", trace);
    const char *opts[] = {"experts=stream", "expert_slots=4", "routing=replay", kv, p, seed};
    for (int i = 0; i < 6; i++)
        if (e0_options_parse(&o, opts[i], e) < 0) return -1;
    e0_session s;
    if (e0_open(model, &o, &(e0_ctx_params){.n_threads = 1, .n_ctx = 512}, NULL, &s, e) < 0) return -1;
    int tok = 1;
    for (int i = 0; i < 40; i++)
        if (e0_decode(s.c, tok, e) < 0) return e0_close(&s), -1;
    *hits = *total = 0;
    for (int il = 0; il < 4; il++) {
        uint64_t h, t;
        e0_ctx_prediction_stats(s.c, il, &h, &t);
        *hits += h;
        *total += t;
    }
    *cache_hits = e0_experts_get_stats(s.xc)->prefetch_hits;
    *bytes = e0_experts_get_stats(s.xc)->bytes_read;
    e0_close(&s);
    return 0;
}

static void test_replay_predict(void) {
    char model[600], trace[600];
    snprintf(model, sizeof model, "%s/m16.gguf", dir);
    snprintf(trace, sizeof trace, "%s/t16.csv", dir);
    uint64_t h1, t1, c1, h0, t0, c0, hh, th, ch, hh2, th2, ch2, b1, b0, bh, bh2;
    e0_err e = {{0}};
    CHECKF(predict_run(model, trace, "replay_predict=1", "replay_seed=3", &h1, &t1, &c1, &b1, &e) == 0, "%s", e.msg);
    CHECKF(predict_run(model, trace, "replay_predict=0", "replay_seed=3", &h0, &t0, &c0, &b0, &e) == 0, "%s", e.msg);
    CHECKF(predict_run(model, trace, "replay_predict=0.5", "replay_seed=3", &hh, &th, &ch, &bh, &e) == 0, "%s", e.msg);
    CHECKF(predict_run(model, trace, "replay_predict=0.5", "replay_seed=3", &hh2, &th2, &ch2, &bh2, &e) == 0, "%s", e.msg);
    /* 40 one-token steps (the prompt is one) x layers 1..3 predicted x 2 experts */
    CHECKF(t1 == 40 * 3 * 2 && h1 == t1, "P=1: %llu of %llu", (unsigned long long)h1, (unsigned long long)t1);
    CHECKF(t0 == t1 && h0 == 0, "P=0: %llu of %llu", (unsigned long long)h0, (unsigned long long)t0);
    CHECKF(hh > t1 / 4 && hh < t1 * 3 / 4, "P=0.5: %llu of %llu", (unsigned long long)hh, (unsigned long long)th);
    CHECK(hh == hh2 && th == th2 && ch == ch2 && bh == bh2); /* seeded */
    /* Predicted routing computes with the guesses, read ahead: both predictors' reads are used
     * (prefetch hits), but wrong guesses are random experts that rarely repeat, so the perfect
     * predictor (the trace's skewed routing) reads fewer bytes. */
    CHECKF(c1 > 0 && c0 > 0, "prefetch hits %llu and %llu", (unsigned long long)c1, (unsigned long long)c0);
    CHECKF(b1 < b0, "a perfect predictor reads %llu bytes, an always wrong one %llu", (unsigned long long)b1,
           (unsigned long long)b0);
}

/* replay_predict with prefetch=on: the trace's experts are computed (exact: the logits of replay
 * without a predictor, bit for bit, even when half the guesses are wrong) and the guesses are
 * only read ahead; a perfect predictor's reads turn the acquires' misses into prefetch hits. */
static void test_replay_prefetch(void) {
    char model[600], trace[600], kv[700];
    snprintf(model, sizeof model, "%s/m16.gguf", dir);
    snprintf(trace, sizeof trace, "%s/t16.csv", dir);
    snprintf(kv, sizeof kv, "routing_trace=%s", trace);
    const char *base[] = {"experts=stream", "expert_slots=5", "routing=replay", kv, "prefetch=on", "replay_seed=7"};
    const char *pred[] = {NULL, "replay_predict=1", "replay_predict=0.5"};
    e0_session s[3];
    e0_err e = {{0}};
    for (int v = 0; v < 3; v++) {
        e0_options o;
        e0_options_init(&o);
        for (int i = 0; i < (v ? 6 : 4); i++) CHECKF(e0_options_parse(&o, base[i], &e) == 0, "%s", e.msg);
        if (v) CHECKF(e0_options_parse(&o, pred[v], &e) == 0, "%s", e.msg);
        CHECKF(e0_open(model, &o, &(e0_ctx_params){.n_threads = 1, .n_ctx = 512}, NULL, &s[v], &e) == 0, "%s", e.msg);
        if (t_cur_failed) return;
    }
    char label[512];
    e0_session_routing_label(&s[2], label, sizeof label);
    CHECKF(strstr(label, "exact") && strstr(label, "prefetch"), "label '%s'", label);
    json_t *cfg = e0_session_config_json(&s[2]);
    const char *cl = json_string_value(json_object_get(cfg, "routing_label"));
    CHECKF(cl && !strcmp(cl, label), "config.routing_label '%s'", cl ? cl : "(none)");
    json_decref(cfg);
    const int nv = (int)s[0].m->hp.n_vocab;
    int tok = 1;
    for (int i = 0; i < 40 && !t_cur_failed; i++) {
        for (int v = 0; v < 3; v++) CHECK(e0_decode(s[v].c, tok, &e) == 0);
        for (int v = 1; v < 3; v++)
            CHECKF(!memcmp(e0_ctx_logits(s[0].c), e0_ctx_logits(s[v].c), (size_t)nv * sizeof(float)),
                   "step %d, %s: reading the guesses ahead changed the logits", i, pred[v]);
        tok = e0_argmax(e0_ctx_logits(s[0].c), nv);
    }
    const e0_experts_stats *a = e0_experts_get_stats(s[0].xc), *b = e0_experts_get_stats(s[1].xc);
    CHECKF(a->prefetched == 0 && b->prefetched > 0 && b->prefetch_hits > 0, "prefetched %llu / %llu, prefetch hits %llu",
           (unsigned long long)a->prefetched, (unsigned long long)b->prefetched, (unsigned long long)b->prefetch_hits);
    CHECKF(b->misses < a->misses && a->requests == b->requests, "misses %llu exact, %llu with the guesses read ahead",
           (unsigned long long)a->misses, (unsigned long long)b->misses);
    printf("  replay, 5 slots: %llu misses; with a perfect predictor's guesses read ahead %llu (%llu prefetched)\n",
           (unsigned long long)a->misses, (unsigned long long)b->misses, (unsigned long long)b->prefetched);
    for (int v = 0; v < 3; v++) e0_close(&s[v]);
}

/* ---- memory budget honesty ---- */

/* In a child process (the ledger's peak is per process): open streamed with memory_budget=b,
 * prefill 20 tokens, decode 10; exit 0 when the ledger peak <= b, 1 when over, 2 when the budget
 * was refused. */
static int budget_child(const char *model, uint64_t b, const char *read) {
    pid_t pid = fork();
    if (pid == 0) {
        e0_options o;
        e0_options_init(&o);
        e0_err e;
        char kv[64];
        snprintf(kv, sizeof kv, "memory_budget=%llu", (unsigned long long)b);
        if (e0_options_parse(&o, "experts=stream", &e) < 0 || e0_options_parse(&o, kv, &e) < 0 ||
            e0_options_parse(&o, read, &e) < 0)
            _exit(3);
        if (e0_mem_total_peak() != 0) _exit(4); /* the parent used the ledger: the peak would not be this run's */
        e0_session s;
        if (e0_open(model, &o, &(e0_ctx_params){.n_threads = 1, .n_ctx = 256, .n_batch = 16}, NULL, &s, &e) < 0) _exit(2);
        int toks[20];
        for (int i = 0; i < 20; i++) toks[i] = i + 1;
        int rc = e0_eval(s.c, toks, 20, NULL, &e);
        for (int i = 0; i < 10 && rc == 0; i++) rc = e0_decode(s.c, toks[0], &e);
        size_t peak = e0_mem_total_peak();
        e0_close(&s);
        if (rc < 0) _exit(3);
        _exit(peak <= b ? 0 : 1);
    }
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) return -1;
    return WEXITSTATUS(st);
}

static void test_ledger_within_budget(void) {
    char model[600];
    snprintf(model, sizeof model, "%s/m16.gguf", dir);
    const char *reads[] = {"expert_read=cached", "expert_read=direct"};
    for (int r = 0; r < 2; r++) {
        int accepted = 0;
        /* from too small to every expert: each accepted budget holds */
        for (uint64_t b = 200 << 10; b <= 6 << 20; b += 64 << 10) {
            int rc = budget_child(model, b, reads[r]);
            CHECKF(rc == 0 || rc == 2, "%s, memory_budget=%llu: %s", reads[r], (unsigned long long)b,
                   rc == 1 ? "ledger peak above the budget" : rc == 4 ? "the ledger was used before the run" : "run failed");
            accepted += rc == 0;
        }
        CHECKF(accepted > 5, "%s: only %d budgets accepted", reads[r], accepted);
    }
    /* through `run` (its tokenizer comes on top of the session): the summary line says within */
    int accepted = 0;
    for (uint64_t b = 400 << 10; b <= 2 << 20; b += 160 << 10) {
        char cmd[1400], out[8192];
        snprintf(cmd, sizeof cmd,
                 "%s/bin/edge0-infer run -m %s -p 'hello there' --raw -n 4 --temp 0 -t 1 -c 256 --model-option experts=stream "
                 "--model-option memory_budget=%llu 2>&1 >/dev/null",
                 t_build(), model, (unsigned long long)b);
        int rc = t_sh(cmd, out, sizeof out);
        if (rc != 0) {
            CHECKF(strstr(out, "too small"), "memory_budget=%llu: %s", (unsigned long long)b, out);
            continue;
        }
        accepted++;
        CHECKF(strstr(out, "allocated, within the budget"), "memory_budget=%llu: %s", (unsigned long long)b, out);
    }
    CHECKF(accepted > 3, "run: only %d budgets accepted", accepted);
}

int main(void) {
    snprintf(dir, sizeof dir, "%s/test-replay", t_build());
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", dir, dir);
    if (system(cmd) != 0) return 1;
    char model[600], trace[600];
    snprintf(model, sizeof model, "%s/m16.gguf", dir);
    snprintf(trace, sizeof trace, "%s/t16.csv", dir);
    if (synth(model, 16, 2, 4) != 0) {
        printf("FAIL synth %s\n", model);
        return 1;
    }
    make_trace(trace, 16, 3, 40, 7);
    RUN(test_ledger_within_budget); /* first: its children inherit this process's ledger peak */
    RUN(test_malformed);
    RUN(test_wellformed);
    RUN(test_engine_equals_simulator);
    RUN(test_held_first);
    RUN(test_replay_errors);
    RUN(test_replay_predict);
    RUN(test_replay_prefetch);
    return T_DONE();
}
