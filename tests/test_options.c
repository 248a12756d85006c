/* test_options.c — `--model-option` parsing (unknown keys and bad values are errors naming them)
 * and the residency rule of e0_open (load.h): budget -> resident or streamed, default slots,
 * default routing. */
#include <stdio.h>
#include <string.h>

#include "engine/experts.h"
#include "engine/load.h"
#include "engine/sample.h"
#include "quant/quant.h"
#include "t.h"

static void test_parse(void) {
    e0_options o;
    e0_options_init(&o);
    e0_err e;
    CHECK(e0_options_parse(&o, "routing=actual", &e) == 0 && o.routing == E0_ROUTING_ACTUAL);
    CHECK(e0_options_parse(&o, "expert_slots=12", &e) == 0 && o.expert_slots == 12);
    CHECK(e0_options_parse(&o, "memory_budget=3GiB", &e) == 0 && o.memory_budget == 3ull << 30);
    CHECK(e0_options_parse(&o, "expert_read=direct", &e) == 0 && o.expert_read == E0_READ_DIRECT);
    CHECK(e0_options_parse(&o, "prefetch=on", &e) == 0 && o.prefetch == E0_ON);
    CHECK(e0_options_parse(&o, "evict=lfu", &e) == 0 && o.evict == E0_EVICT_LFU);
    CHECK(o.repack == E0_AUTO);
    CHECK(e0_options_parse(&o, "repack=off", &e) == 0 && o.repack == E0_OFF);
    CHECK(e0_options_parse(&o, "repack=auto", &e) == 0 && o.repack == E0_AUTO);
    struct {
        const char *kv, *want;
    } bad[] = {{"bogus=1", "bogus"},         {"routing=maybe", "routing"}, {"expert_slots=0", "expert_slots"},
               {"expert_slots=x", "expert_slots"}, {"memory_budget=3XB", "memory_budget"}, {"routing", "key=value"},
               {"=3", "key=value"},          {"experts=all", "experts"},   {"prefill_ahead_min_tokens=-5", "prefill_ahead"},
               {"repack=on", "repack"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        e.msg[0] = 0;
        CHECKF(e0_options_parse(&o, bad[i].kv, &e) == -1, "'%s' must be refused", bad[i].kv);
        CHECKF(strstr(e.msg, bad[i].want) != NULL, "'%s': message '%s' should name '%s'", bad[i].kv, e.msg, bad[i].want);
    }
    /* io_threads: the parser accepts exactly what the expert cache can do */
    char kv[64];
    snprintf(kv, sizeof kv, "io_threads=%d", E0_EXPERTS_MAX_IO_THREADS);
    CHECKF(e0_options_parse(&o, kv, &e) == 0 && o.io_threads == E0_EXPERTS_MAX_IO_THREADS, "%s: %s", kv, e.msg);
    snprintf(kv, sizeof kv, "io_threads=%d", E0_EXPERTS_MAX_IO_THREADS + 1);
    e.msg[0] = 0;
    CHECKF(e0_options_parse(&o, kv, &e) == -1 && strstr(e.msg, "io_threads"), "%s must be refused: '%s'", kv, e.msg);
}

static int open_with(const char *model, const char *const *kv, int n, e0_session *s, e0_err *e) {
    e0_options o;
    e0_options_init(&o);
    for (int i = 0; i < n; i++)
        if (e0_options_parse(&o, kv[i], e) < 0) return -1;
    e0_ctx_params cp = {.n_ctx = 64, .n_threads = 1};
    return e0_open(model, &o, &cp, NULL, s, e);
}

static void test_residency_rule(void) {
    char moe[512], dense[512];
    snprintf(moe, sizeof moe, "%s/golden/qwen3moe.gguf", t_shared());
    snprintf(dense, sizeof dense, "%s/golden/stories260K.gguf", t_shared());
    e0_session s;
    e0_err e;
    /* a big budget: resident, routing actual */
    const char *big[] = {"memory_budget=1GiB"};
    CHECKF(open_with(moe, big, 1, &s, &e) == 0, "%s", e.msg);
    CHECK(!s.streamed && s.xc == NULL && s.opt.routing == E0_ROUTING_ACTUAL && s.opt.expert_read == E0_READ_CACHED);
    e0_close(&s);
    /* a budget that holds the dense part and some slots: streamed, slots in [K, X], predicted */
    const char *mid[] = {"memory_budget=4MiB"};
    CHECKF(open_with(moe, mid, 1, &s, &e) == 0, "%s", e.msg);
    CHECK(s.streamed && s.xc != NULL && s.opt.routing == E0_ROUTING_PREDICTED);
    CHECK(s.opt.expert_read == E0_READ_DIRECT); /* streamed experts read O_DIRECT unless told otherwise */
    CHECKF(s.opt.expert_slots >= 4 && s.opt.expert_slots < 16, "slots %lld", (long long)s.opt.expert_slots);
    printf("  qwen3moe with a 4 MiB budget: %lld slots per layer\n", (long long)s.opt.expert_slots);
    e0_close(&s);
    /* too small: a clear error */
    const char *tiny[] = {"memory_budget=100KiB"};
    CHECK(open_with(moe, tiny, 1, &s, &e) == -1 && strstr(e.msg, "too small"));
    /* explicit choices win */
    const char *force[] = {"memory_budget=100KiB", "experts=resident"};
    CHECKF(open_with(moe, force, 2, &s, &e) == 0, "%s", e.msg);
    CHECK(!s.streamed);
    e0_close(&s);
    const char *slots[] = {"expert_slots=5", "routing=actual"};
    CHECKF(open_with(moe, slots, 2, &s, &e) == 0, "%s", e.msg);
    CHECK(s.streamed && s.opt.expert_slots == 5 && s.opt.routing == E0_ROUTING_ACTUAL);
    e0_close(&s);
    /* fewer slots than the 4 experts a token uses: allowed (they take turns); more than the 16
     * experts of a layer: refused */
    const char *few[] = {"expert_slots=1"};
    CHECKF(open_with(moe, few, 1, &s, &e) == 0, "%s", e.msg);
    CHECK(s.streamed && s.opt.expert_slots == 1);
    e0_close(&s);
    const char *many[] = {"expert_slots=17"};
    CHECK(open_with(moe, many, 1, &s, &e) == -1 && strstr(e.msg, "expert_slots=17"));
    /* the smallest budgets that hold the dense part but not 4 slots a layer get fewer slots; what a
     * budget leaves after N slots in every layer gives N + 1 in some layers (spread evenly) */
    int min_slots = 99, with_extra = 0;
    char extra_opt[64] = "";
    for (int kib = 64; kib <= 3072; kib += 16) {
        char opt[64];
        snprintf(opt, sizeof opt, "memory_budget=%dKiB", kib);
        const char *kv[] = {opt};
        if (open_with(moe, kv, 1, &s, &e) != 0) {
            CHECKF(strstr(e.msg, "too small"), "%s: %s", opt, e.msg);
            continue;
        }
        CHECK(s.streamed && s.opt.expert_slots >= 1);
        if (s.opt.expert_slots < min_slots) min_slots = (int)s.opt.expert_slots;
        const int64_t L = s.m->hp.n_layer, N = s.opt.expert_slots, X = s.extra_slot_layers;
        CHECKF(X >= 0 && X < L && (X == 0 || N < s.m->hp.n_expert), "%s: %lld slots, %lld layers with one more", opt,
               (long long)N, (long long)X);
        int64_t plus = 0, first = -1, last = -1;
        for (int il = 0; il < L; il++) {
            int ns = e0_experts_slots(s.xc, il);
            CHECKF(ns == N || ns == N + 1, "%s: layer %d has %d slots (expert_slots %lld)", opt, il, ns, (long long)N);
            if (ns == N + 1) {
                if (first < 0) first = il;
                last = il;
                plus++;
            }
        }
        CHECKF(plus == X, "%s: %lld layers have %lld slots, the session says %lld", opt, (long long)plus,
               (long long)N + 1, (long long)X);
        /* spread over the depth: from the first half of the layers to the last */
        if (X >= 2) CHECKF(first < L / 2 && last >= L / 2, "%s: extra slots in layers %lld..%lld of %lld", opt,
                           (long long)first, (long long)last, (long long)L);
        if (X > 0 && !with_extra++) snprintf(extra_opt, sizeof extra_opt, "%s", opt);
        e0_close(&s);
    }
    CHECKF(min_slots == 1, "the smallest accepted budget gave %d slots a layer", min_slots);
    CHECKF(with_extra > 3, "only %d budgets gave some layers an extra slot", with_extra);
    printf("  %d budgets gave some layers an extra slot (the first: %s)\n", with_extra, extra_opt);
    /* uneven slots compute exactly what resident experts do */
    if (extra_opt[0]) {
        const char *kv_r[] = {"experts=resident"}, *kv_s[] = {extra_opt, "routing=actual"};
        e0_session r, st;
        CHECKF(open_with(moe, kv_r, 1, &r, &e) == 0, "%s", e.msg);
        CHECKF(open_with(moe, kv_s, 2, &st, &e) == 0, "%s", e.msg);
        CHECK(st.extra_slot_layers > 0);
        const int toks[] = {1, 17, 99, 200, 3, 45, 260, 7, 8, 9, 10, 44, 45, 46};
        const int nv = (int)r.m->hp.n_vocab, nt = (int)(sizeof toks / sizeof toks[0]);
        CHECK(e0_eval(r.c, toks, nt, NULL, &e) == 0 && e0_eval(st.c, toks, nt, NULL, &e) == 0);
        for (int i = 0; i < 6 && !t_cur_failed; i++) {
            CHECKF(!memcmp(e0_ctx_logits(r.c), e0_ctx_logits(st.c), (size_t)nv * sizeof(float)),
                   "%s: logits differ from resident at step %d", extra_opt, i);
            int next = e0_argmax(e0_ctx_logits(r.c), nv);
            CHECK(e0_decode(r.c, next, &e) == 0 && e0_decode(st.c, next, &e) == 0);
        }
        e0_close(&r);
        e0_close(&st);
    }
    /* a dense model has nothing to stream */
    const char *stream[] = {"experts=stream"};
    CHECK(open_with(dense, stream, 1, &s, &e) == -1 && strstr(e.msg, "no routed experts"));
    const char *pred[] = {"routing=predicted"};
    CHECK(open_with(dense, pred, 1, &s, &e) == -1 && strstr(e.msg, "no routed experts"));
}

/* repack: q4_K / q6_K matrices kept as e0_repack_type's layout (q4_KX / q6_KX at the AVX2 level,
 * q4_KV / q6_KV at AVX-512; the file's type stays in w->t->type), resident and streamed alike;
 * repack=off keeps the file's types. */
static void test_repack_session(void) {
    char moe[512];
    snprintf(moe, sizeof moe, "%s/golden/qwen3moe.gguf", t_shared());
    const char *const modes[][2] = {{"memory_budget=1GiB", NULL}, {"experts=stream", NULL}, {"memory_budget=1GiB", "repack=off"}};
    for (int m = 0; m < 3; m++) {
        e0_session s;
        e0_err e;
        CHECKF(open_with(moe, modes[m], modes[m][1] ? 2 : 1, &s, &e) == 0, "%s", e.msg);
        if (t_cur_failed) return;
        int q4 = 0, q6 = 0;
        for (int64_t il = 0; il < s.m->hp.n_layer; il++) {
            const e0_weight *ws[] = {&s.m->layers[il].wq, &s.m->layers[il].wk, &s.m->layers[il].wv, &s.m->layers[il].wo,
                                     &s.m->layers[il].gate_exps, &s.m->layers[il].up_exps, &s.m->layers[il].down_exps};
            for (size_t k = 0; k < sizeof ws / sizeof ws[0]; k++) {
                const e0_weight *w = ws[k];
                if (!w->t) continue;
                const uint32_t want = m < 2 ? e0_repack_type(w->t->type) : w->t->type;
                if (w->t->type == E0_TYPE_Q4_K) {
                    q4++;
                    CHECKF(w->type == want, "mode %d layer %lld: q4_K kept as %u, not %u", m, (long long)il, w->type, want);
                } else if (w->t->type == E0_TYPE_Q6_K) {
                    q6++;
                    CHECKF(w->type == want, "mode %d layer %lld: q6_K kept as %u, not %u", m, (long long)il, w->type, want);
                } else {
                    CHECK(w->type == w->t->type);
                }
            }
        }
        CHECKF(q4 > 0 && q6 > 0, "the golden model should hold q4_K and q6_K matrices (%d, %d)", q4, q6);
        json_t *cfg = e0_session_config_json(&s);
        const char *rp = json_string_value(json_object_get(cfg, "repack"));
        CHECKF(rp && (m == 2 ? !strcmp(rp, "off") : !strncmp(rp, "auto", 4)), "config repack: %s", rp ? rp : "(none)");
        json_decref(cfg);
        e0_close(&s);
    }
}

int main(void) {
    RUN(test_parse);
    if (t_need_shared("golden/qwen3moe.gguf", NULL)) RUN(test_repack_session);
    if (t_need_shared("golden/qwen3moe.gguf", "golden/stories260K.gguf", NULL)) RUN(test_residency_rule);
    return T_DONE();
}
