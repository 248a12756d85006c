/* test_sample.c — the sampling chain: greedy, top-k against a full sort, top-p/min-p cut-offs,
 * repetition penalty, seeds. */
#include "engine/sample.h"
#include "t.h"

#include <math.h>

#define NV 1000

static void fill(float *l, unsigned seed) {
    for (int i = 0; i < NV; i++) {
        seed = seed * 1103515245u + 12345u;
        l[i] = (float)((seed >> 8) % 10000) / 1000.0f - 5.0f;
    }
}

static int argmax(const float *l) {
    int b = 0;
    for (int i = 1; i < NV; i++)
        if (l[i] > l[b]) b = i;
    return b;
}

static void test_greedy(void) {
    float l[NV];
    for (unsigned s = 1; s < 20; s++) {
        fill(l, s);
        e0_sampler_params p = e0_sampler_defaults();
        p.temp = 0;
        e0_sampler *sm = e0_sampler_new(&p, NV);
        CHECK(e0_sample(sm, l) == argmax(l));
        e0_sampler_free(sm);
    }
}

/* e0_argmax against the one-by-one loop: every length 1..40 (the 8-lane pass and its tail), the
 * maximum at every position, ties (the first wins), NaNs (never chosen) and all-NaN / -inf. */
static void test_argmax(void) {
    float x[40];
    for (int n = 1; n <= 40; n++)
        for (int at = 0; at < n; at++) {
            for (int i = 0; i < n; i++) x[i] = (float)((i * 7) % 5) - 10.0f;
            x[at] = 3.0f;
            CHECKF(e0_argmax(x, n) == at, "n=%d max at %d", n, at);
            if (at + 1 < n) { /* a later tie loses */
                x[n - 1] = 3.0f;
                CHECKF(e0_argmax(x, n) == at, "n=%d tie at %d and %d", n, at, n - 1);
            }
            if (n > 1) { /* a NaN elsewhere is skipped */
                x[at == 0 ? n - 1 : 0] = NAN;
                CHECKF(e0_argmax(x, n) == at, "n=%d NaN beside the max at %d", n, at);
            }
        }
    for (int i = 0; i < 40; i++) x[i] = NAN;
    CHECK(e0_argmax(x, 40) == 0);
    x[17] = -INFINITY;
    CHECK(e0_argmax(x, 40) == 17);
    x[33] = -1e30f;
    CHECK(e0_argmax(x, 40) == 33);
    CHECK(e0_argmax(x, 0) == 0);
    float l[NV];
    for (unsigned s = 1; s < 50; s++) {
        fill(l, s);
        CHECK(e0_argmax(l, NV) == argmax(l));
        const int n = NV - (int)s; /* a prefix: lengths not a multiple of 8 */
        int b = 0;
        for (int i = 1; i < n; i++)
            if (l[i] > l[b]) b = i;
        CHECK(e0_argmax(l, n) == b);
    }
}

static void test_top_k_membership(void) {
    float l[NV];
    fill(l, 7);
    /* rank of every id */
    int rank[NV];
    for (int i = 0; i < NV; i++) {
        rank[i] = 0;
        for (int j = 0; j < NV; j++) rank[i] += l[j] > l[i] || (l[j] == l[i] && j < i);
    }
    for (int k = 1; k <= 50; k += 7) {
        e0_sampler_params p = {.temp = 5.0f, .top_k = k, .top_p = 1, .min_p = 0, .repeat_penalty = 1, .seed = 3};
        e0_sampler *sm = e0_sampler_new(&p, NV);
        int seen_max_rank = 0;
        for (int it = 0; it < 300; it++) {
            int id = e0_sample(sm, l);
            CHECKF(rank[id] < k, "k=%d drew rank %d", k, rank[id]);
            if (rank[id] > seen_max_rank) seen_max_rank = rank[id];
        }
        if (k > 1) CHECKF(seen_max_rank > 0, "k=%d: a hot temperature should draw more than the top token", k);
        e0_sampler_free(sm);
    }
}

static void test_cutoffs(void) {
    float l[NV];
    fill(l, 11);
    e0_sampler_params p = {.temp = 1.0f, .top_k = 0, .top_p = 1e-6f, .min_p = 0, .repeat_penalty = 1, .seed = 5};
    e0_sampler *sm = e0_sampler_new(&p, NV);
    for (int it = 0; it < 50; it++) CHECK(e0_sample(sm, l) == argmax(l));
    e0_sampler_free(sm);
    p.top_p = 1;
    p.min_p = 1.0f;
    sm = e0_sampler_new(&p, NV);
    for (int it = 0; it < 50; it++) CHECK(e0_sample(sm, l) == argmax(l));
    e0_sampler_free(sm);
}

static void test_seed(void) {
    float l[NV];
    fill(l, 13);
    e0_sampler_params p = e0_sampler_defaults();
    p.temp = 2.0f;
    p.seed = 42;
    int a[64], b[64], differ = 0;
    for (int pass = 0; pass < 2; pass++) {
        e0_sampler *sm = e0_sampler_new(&p, NV);
        for (int i = 0; i < 64; i++) (pass ? b : a)[i] = e0_sample(sm, l);
        e0_sampler_free(sm);
    }
    for (int i = 0; i < 64; i++) CHECK(a[i] == b[i]);
    p.seed = 43;
    e0_sampler *sm = e0_sampler_new(&p, NV);
    for (int i = 0; i < 64; i++) differ += e0_sample(sm, l) != a[i];
    e0_sampler_free(sm);
    CHECKF(differ > 0, "another seed should give another sequence");
}

static void test_repeat_penalty(void) {
    float l[NV];
    for (int i = 0; i < NV; i++) l[i] = 0;
    l[10] = 2.0f;
    l[20] = 1.5f;
    e0_sampler_params p = {.temp = 0, .repeat_penalty = 2.0f, .repeat_last_n = 8};
    e0_sampler *sm = e0_sampler_new(&p, NV);
    CHECK(e0_sample(sm, l) == 10);
    e0_sampler_accept(sm, 10); /* 2.0 / 2 = 1.0 < 1.5 */
    CHECK(e0_sample(sm, l) == 20);
    for (int i = 0; i < 8; i++) e0_sampler_accept(sm, 500); /* 10 falls out of the window */
    CHECK(e0_sample(sm, l) == 10);
    e0_sampler_free(sm);
}

/* llama.cpp's frequency and presence penalties: logit - count * frequency - presence, over the
 * window only. Greedy picks show which token the penalty moved below which. */
static void test_frequency_presence(void) {
    float l[NV];
    for (int i = 0; i < NV; i++) l[i] = 0;
    l[10] = 3.0f; /* seen 3 times below */
    l[20] = 2.0f; /* seen once */
    l[30] = 1.0f; /* never seen */
    /* frequency 0.5: 10 -> 3 - 1.5 = 1.5, 20 -> 1.5 (a tie, the lower id wins), 30 -> 1.0 */
    e0_sampler_params p = {.temp = 0, .repeat_penalty = 1, .frequency_penalty = 0.5f, .repeat_last_n = 8};
    e0_sampler *sm = e0_sampler_new(&p, NV);
    for (int k = 0; k < 3; k++) e0_sampler_accept(sm, 10);
    e0_sampler_accept(sm, 20);
    CHECK(e0_sample(sm, l) == 10);
    e0_sampler_accept(sm, 10); /* 4 times: 3 - 2 = 1.0 < 1.5 */
    CHECK(e0_sample(sm, l) == 20);
    e0_sampler_free(sm);
    /* presence 1.5, once per token however often: 10 -> 1.5, 20 -> 0.5, 30 -> 1.0 */
    p = (e0_sampler_params){.temp = 0, .repeat_penalty = 1, .presence_penalty = 1.5f, .repeat_last_n = 8};
    sm = e0_sampler_new(&p, NV);
    for (int k = 0; k < 3; k++) e0_sampler_accept(sm, 10);
    e0_sampler_accept(sm, 20);
    CHECK(e0_sample(sm, l) == 10);
    e0_sampler_accept(sm, 30); /* 30 -> -0.5: now 10 (1.5) still first, and with 10 out of the window... */
    for (int k = 0; k < 8; k++) e0_sampler_accept(sm, 500 + k);
    CHECK(e0_sample(sm, l) == 10); /* nothing penalized any more */
    e0_sampler_free(sm);
    /* presence 2.5 pushes 10 (0.5) below 30 (1.0) and 20 (-0.5) */
    p.presence_penalty = 2.5f;
    sm = e0_sampler_new(&p, NV);
    e0_sampler_accept(sm, 10);
    e0_sampler_accept(sm, 20);
    CHECK(e0_sample(sm, l) == 30);
    e0_sampler_free(sm);
    /* window 0: no penalty at all */
    p.repeat_last_n = 0;
    sm = e0_sampler_new(&p, NV);
    e0_sampler_accept(sm, 10);
    CHECK(e0_sample(sm, l) == 10);
    e0_sampler_free(sm);
}

/* logit_bias: a bias moves the greedy choice, -inf never chosen (greedy or drawn), ids outside
 * the vocabulary ignored, and the bias comes before the penalties (llama.cpp's order). */
static void test_logit_bias(void) {
    const float l[4] = {1.0f, 5.0f, 3.0f, 2.0f};
    e0_sampler_params p = {.temp = 0, .repeat_penalty = 1};
    const struct {
        int n;
        e0_logit_bias b[2];
        int want;
    } cases[] = {
        {0, {{0, 0}}, 1},
        {1, {{0, 10.0f}}, 0},
        {1, {{1, -INFINITY}}, 2},
        {2, {{1, -INFINITY}, {2, -1.5f}}, 3},
        {2, {{99, 100.0f}, {-3, 100.0f}}, 1}, /* outside the vocabulary */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        p.n_bias = cases[i].n;
        memcpy(p.bias, cases[i].b, sizeof cases[i].b);
        e0_sampler *s = e0_sampler_new(&p, 4);
        CHECKF(s && e0_sample(s, l) == cases[i].want, "case %zu", i);
        e0_sampler_free(s);
    }
    /* drawn: a banned token never comes, at a temperature that makes every other one likely */
    e0_sampler_params d = {.temp = 100.0f, .top_p = 1, .repeat_penalty = 1, .seed = 9, .n_bias = 1, .bias = {{1, -INFINITY}}};
    e0_sampler *s = e0_sampler_new(&d, 4);
    int seen[4] = {0};
    for (int k = 0; s && k < 400; k++) seen[e0_sample(s, l)]++;
    CHECKF(s && seen[1] == 0 && seen[0] && seen[2] && seen[3], "%d %d %d %d", seen[0], seen[1], seen[2], seen[3]);
    e0_sampler_free(s);
    /* before the penalties: token 1 (recent, penalty 2) at 5 + 3 = 8 -> 4 loses to token 2's 3 + 2 = 5 */
    e0_sampler_params q = {.temp = 0, .repeat_penalty = 2.0f, .repeat_last_n = 4, .n_bias = 2, .bias = {{1, 3.0f}, {2, 2.0f}}};
    s = e0_sampler_new(&q, 4);
    if (s) e0_sampler_accept(s, 1);
    CHECK(s && e0_sample(s, l) == 2);
    e0_sampler_free(s);
}

int main(void) {
    RUN(test_greedy);
    RUN(test_argmax);
    RUN(test_top_k_membership);
    RUN(test_cutoffs);
    RUN(test_seed);
    RUN(test_repeat_penalty);
    RUN(test_frequency_presence);
    RUN(test_logit_bias);
    return T_DONE();
}
