/* sample.h — choosing the next token from logits.
 *
 * The chain is llama.cpp's default order: logit bias -> penalties -> top-k -> top-p -> min-p ->
 * temperature -> draw. The logit bias (OpenAI's logit_bias) adds a number, or -inf to ban, to
 * the logits of the tokens it names. The penalties are llama.cpp's: over the last repeat_last_n tokens, a token seen c > 0
 * times has its logit divided by repeat_penalty (multiplied when negative), then reduced by
 * c * frequency_penalty + presence_penalty. temp == 0 means greedy (argmax after the penalty). Same seed, same
 * logits -> same tokens. The sampler allocates its buffers once; sampling allocates nothing. */
#ifndef E0_SAMPLE_H
#define E0_SAMPLE_H

#include <stdint.h>

#define E0_MAX_LOGIT_BIAS 300 /* tokens one logit_bias may name */

typedef struct e0_logit_bias {
    int32_t id;   /* a token of the vocabulary (others are ignored) */
    float bias;   /* added to its logit; -INFINITY: never chosen */
} e0_logit_bias;

typedef struct e0_sampler_params {
    float temp;           /* 0 = greedy */
    int top_k;            /* 0 = off */
    float top_p;          /* 1 = off */
    float min_p;          /* 0 = off */
    float repeat_penalty; /* 1 = off */
    float frequency_penalty; /* 0 = off: minus this per occurrence in the window */
    float presence_penalty;  /* 0 = off: minus this once for a token in the window */
    int repeat_last_n;    /* how many recent tokens the penalties look at (0 = penalties off) */
    uint64_t seed;
    int n_bias;           /* logit bias: bias[0..n_bias) (0 = off) */
    e0_logit_bias bias[E0_MAX_LOGIT_BIAS];
} e0_sampler_params;

/* llama.cpp's defaults: temp 0.8, top_k 40, top_p 0.95, min_p 0.05, penalty 1.0 over 64, frequency and
 * presence penalties 0. */
e0_sampler_params e0_sampler_defaults(void);

typedef struct e0_sampler e0_sampler;
e0_sampler *e0_sampler_new(const e0_sampler_params *p, int64_t n_vocab);
void e0_sampler_free(e0_sampler *s);
/* Pick a token (does not record it; call e0_sampler_accept with what was actually used). */
int e0_sample(e0_sampler *s, const float *logits);
/* Record a token of the context (prompt or generated) for the repetition penalty. */
void e0_sampler_accept(e0_sampler *s, int token);
void e0_sampler_reset(e0_sampler *s);

/* Greedy choice: the first index of the largest of x[0..n), NaNs never chosen (0 when no value
 * is a number or n < 1). Two passes (a maximum the compiler vectorizes, then the first match):
 * a 152k-entry vocabulary takes ~0.1 ms, a sixth of a compare-with-the-best loop's time. */
int e0_argmax(const float *x, int64_t n);

#endif
