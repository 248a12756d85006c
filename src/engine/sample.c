/* sample.c — the sampling chain (see sample.h). */
#include "engine/sample.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int id;
    float logit;
    float p;
} candidate;

struct e0_sampler {
    e0_sampler_params p;
    int64_t n_vocab;
    candidate *cand;
    int *recent; /* ring buffer of the last repeat_last_n tokens */
    int *sorted; /* scratch: the window sorted, to count each token's occurrences */
    int n_recent, recent_pos;
    uint64_t rng;
};

e0_sampler_params e0_sampler_defaults(void) {
    return (e0_sampler_params){.temp = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f, .repeat_penalty = 1.0f,
                               .repeat_last_n = 64, .seed = 0};
}

e0_sampler *e0_sampler_new(const e0_sampler_params *p, int64_t n_vocab) {
    e0_sampler *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->p = *p;
    s->n_vocab = n_vocab;
    if (s->p.repeat_last_n < 0) s->p.repeat_last_n = 0;
    if (s->p.n_bias < 0 || s->p.n_bias > E0_MAX_LOGIT_BIAS) s->p.n_bias = 0; /* not a bias list */
    s->cand = malloc((size_t)n_vocab * sizeof *s->cand);
    s->recent = malloc((size_t)(s->p.repeat_last_n + 1) * sizeof *s->recent);
    s->sorted = malloc((size_t)(s->p.repeat_last_n + 1) * sizeof *s->sorted);
    if (!s->cand || !s->recent || !s->sorted) {
        e0_sampler_free(s);
        return NULL;
    }
    s->rng = p->seed ^ 0x9E3779B97F4A7C15ull;
    return s;
}

void e0_sampler_free(e0_sampler *s) {
    if (!s) return;
    free(s->cand);
    free(s->recent);
    free(s->sorted);
    free(s);
}

void e0_sampler_reset(e0_sampler *s) {
    s->n_recent = s->recent_pos = 0;
    s->rng = s->p.seed ^ 0x9E3779B97F4A7C15ull;
}

void e0_sampler_accept(e0_sampler *s, int token) {
    if (s->p.repeat_last_n == 0) return;
    s->recent[s->recent_pos] = token;
    s->recent_pos = (s->recent_pos + 1) % s->p.repeat_last_n;
    if (s->n_recent < s->p.repeat_last_n) s->n_recent++;
}

/* splitmix64 -> uniform double in [0, 1) */
static double next_uniform(e0_sampler *s) {
    uint64_t z = (s->rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

static int by_logit_desc(const void *a, const void *b) {
    const candidate *x = a, *y = b;
    if (x->logit != y->logit) return x->logit < y->logit ? 1 : -1;
    return x->id - y->id;
}

/* Move the k largest candidates to the front, sorted (a min-heap of size k, then sort). */
static void keep_top_k(candidate *c, int64_t n, int64_t k) {
    if (k >= n) {
        qsort(c, (size_t)n, sizeof *c, by_logit_desc);
        return;
    }
    /* heap of the k best seen, smallest (by by_logit_desc order: "worst") at c[0] */
    for (int64_t i = 0; i < n; i++) {
        candidate x = c[i];
        int64_t sz = i < k ? i : k;
        if (i >= k && by_logit_desc(&x, &c[0]) >= 0) continue; /* not better than the worst kept */
        int64_t pos;
        if (i < k) { /* sift up */
            pos = sz;
            while (pos > 0) {
                int64_t parent = (pos - 1) / 2;
                if (by_logit_desc(&c[parent], &x) >= 0) break; /* parent is worse or equal: stop */
                c[pos] = c[parent];
                pos = parent;
            }
            c[pos] = x;
        } else { /* replace root, sift down */
            pos = 0;
            for (;;) {
                int64_t l = 2 * pos + 1, r = l + 1, w = pos;
                candidate *worst = &x;
                if (l < k && by_logit_desc(&c[l], worst) > 0) w = l, worst = &c[l];
                if (r < k && by_logit_desc(&c[r], worst) > 0) w = r, worst = &c[r];
                if (w == pos) break;
                c[pos] = c[w];
                pos = w;
            }
            c[pos] = x;
        }
    }
    qsort(c, (size_t)k, sizeof *c, by_logit_desc);
}

static int by_id(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* llama.cpp's penalties over the window: each distinct token once, with its count. */
static void apply_penalties(e0_sampler *s, candidate *c, int64_t n) {
    const e0_sampler_params *p = &s->p;
    memcpy(s->sorted, s->recent, (size_t)s->n_recent * sizeof *s->sorted);
    qsort(s->sorted, (size_t)s->n_recent, sizeof *s->sorted, by_id);
    for (int r = 0; r < s->n_recent;) {
        int id = s->sorted[r], count = 0;
        while (r < s->n_recent && s->sorted[r] == id) r++, count++;
        if (id < 0 || id >= n) continue;
        float *l = &c[id].logit;
        if (p->repeat_penalty != 1.0f) *l = *l > 0 ? *l / p->repeat_penalty : *l * p->repeat_penalty;
        *l -= (float)count * p->frequency_penalty + p->presence_penalty;
    }
}

int e0_argmax(const float *x, int64_t n) {
    float lane[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++) lane[l] = x[i + l] > lane[l] ? x[i + l] : lane[l];
    float m = -INFINITY;
    for (int l = 0; l < 8; l++) m = lane[l] > m ? lane[l] : m;
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    for (int64_t j = 0; j < n; j++)
        if (x[j] == m) return (int)j;
    return 0;
}

int e0_sample(e0_sampler *s, const float *logits) {
    const e0_sampler_params *p = &s->p;
    candidate *c = s->cand;
    int64_t n = s->n_vocab;
    const int penalties = p->repeat_penalty != 1.0f || p->frequency_penalty != 0.0f || p->presence_penalty != 0.0f;
    if (p->temp <= 0 && !penalties && !p->n_bias) return e0_argmax(logits, n);
    for (int64_t i = 0; i < n; i++) c[i] = (candidate){(int)i, logits[i], 0};
    for (int b = 0; b < p->n_bias; b++)
        if (p->bias[b].id >= 0 && p->bias[b].id < n) c[p->bias[b].id].logit += p->bias[b].bias;
    if (penalties) apply_penalties(s, c, n);
    if (p->temp <= 0) {
        int64_t best = 0;
        for (int64_t i = 1; i < n; i++)
            if (c[i].logit > c[best].logit) best = i;
        return c[best].id;
    }
    keep_top_k(c, n, p->top_k > 0 && p->top_k < n ? p->top_k : n);
    if (p->top_k > 0 && p->top_k < n) n = p->top_k;
    /* probabilities over the kept candidates (sorted, c[0] is the max) */
    double sum = 0;
    for (int64_t i = 0; i < n; i++) sum += (c[i].p = expf(c[i].logit - c[0].logit));
    for (int64_t i = 0; i < n; i++) c[i].p = (float)(c[i].p / sum);
    if (p->top_p < 1.0f) {
        double cum = 0;
        for (int64_t i = 0; i < n; i++) {
            cum += c[i].p;
            if (cum >= p->top_p) {
                n = i + 1;
                break;
            }
        }
    }
    if (p->min_p > 0) {
        int64_t keep = 1;
        while (keep < n && c[keep].p >= p->min_p * c[0].p) keep++;
        n = keep;
    }
    /* temperature, then draw */
    sum = 0;
    for (int64_t i = 0; i < n; i++) sum += (c[i].p = expf((c[i].logit - c[0].logit) / p->temp));
    double u = next_uniform(s) * sum, acc = 0;
    for (int64_t i = 0; i < n; i++) {
        acc += c[i].p;
        if (u < acc) return c[i].id;
    }
    return c[n - 1].id;
}
