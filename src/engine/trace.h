/* trace.h — expert-routing traces of trained MoE models (../shared/routing/README.md), read
 * strictly, for replaying real routing through the engine (routing=replay) and the policy
 * simulator (tools/expert_policy_sim.c). The format:
 *
 *   # E=<experts> k=<experts per token>[; free text]
 *   seq,token,phase,layer,experts[,weights]
 *   0,0,0,0,79;102;114;19;54;46
 *
 * One row per (sequence, token, layer): seq and token are non-negative integers, phase is empty,
 * 0 (prefill) or 1 (decode) and the same on every row of a token, layer a non-negative integer,
 * experts exactly k distinct ids in [0, E) separated by ';' (router rank order). The optional
 * weights column (named in the header) holds k finite non-negative numbers in the same order.
 * Within one (seq, layer) the tokens strictly increase in file order; a (seq, token, layer) row
 * appears at most once. Lines end in "\n" or "\r\n"; no blank or comment lines after the header.
 * Anything else is an error "FILE:LINE: what is wrong".
 *
 * The loaded trace is a table of steps: every distinct (seq, token), ordered by seq then token
 * (sequences one after another), times the trace's layers (the distinct layer numbers, ascending;
 * a trace may log only some layers of its model). A step missing a layer (the recorder dropped
 * it) takes that layer's experts of the nearest earlier step that has them, else of the nearest
 * later one; n_filled counts those entries.
 *
 * Mapping onto a model (e0_trace_layer_for): model layer l of Lm uses trace layer
 * floor(l * Lt / Lm) of the Lt trace layers; steps cycle (step s uses trace step s mod n_step). */
#ifndef E0_TRACE_H
#define E0_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/util.h"

#define E0_TRACE_MAX_BYTES ((size_t)1 << 30) /* largest file read */
#define E0_TRACE_MAX_EXPERTS 65536           /* E */
#define E0_TRACE_MAX_K 1024                  /* k */
#define E0_TRACE_MAX_LAYER 65535             /* largest layer number */
#define E0_TRACE_MAX_ENTRIES ((uint64_t)1 << 28) /* steps x layers x k in the table */

typedef struct e0_trace {
    char *path;           /* as given */
    const char *name;     /* its base name (points into path) */
    int n_expert, k;      /* E and k of the header */
    int n_layer;          /* Lt: distinct layers logged */
    int n_step;           /* distinct (seq, token) */
    int *layer_id;        /* [Lt] the model layer number each trace layer logged, ascending */
    int *ids;             /* [n_step][Lt][k] expert ids, rank order */
    float *w;             /* [n_step][Lt][k] weights, or NULL when the trace has none */
    int8_t *phase;        /* [n_step] -1 unknown, 0 prefill, 1 decode */
    uint64_t n_rows;      /* data rows read */
    uint64_t n_filled;    /* (step, layer) entries filled from a neighbouring step */
} e0_trace;

/* Read and check a trace file. NULL with an error naming the file (and line) on any problem. */
e0_trace *e0_trace_load(const char *path, e0_err *e);
/* The same from text in memory; `name` is used in messages (and as path). */
e0_trace *e0_trace_parse(const char *name, const char *text, size_t len, e0_err *e);
void e0_trace_free(e0_trace *t);
/* Can it drive a model with n_expert experts, k_used per token? Errors: a different expert count,
 * fewer experts per token than the model uses (the first k_used of each row are used). */
int e0_trace_check_model(const e0_trace *t, int64_t n_expert, int64_t k_used, e0_err *e);
/* The trace layer (0..Lt-1) model layer l of n_model_layers uses: floor(l * Lt / Lm). */
int e0_trace_layer_for(const e0_trace *t, int64_t l, int64_t n_model_layers);
/* Experts (k of them) of step s mod n_step, trace layer li; weights the same (NULL when none). */
const int *e0_trace_experts(const e0_trace *t, uint64_t s, int li);
const float *e0_trace_weights(const e0_trace *t, uint64_t s, int li);
/* A predictor right with probability p (routing=replay, replay_predict=p): dst [K] = truth [K]
 * with each expert kept with probability p, else replaced by one drawn uniformly from the X
 * experts neither in truth nor already guessed (kept when there is none: K = X). *rng is the
 * seeded state (splitmix64), advanced by one draw per expert and one more per wrong one. */
void e0_trace_guess(const int *truth, int64_t K, int64_t X, double p, uint64_t *rng, int *dst);

#endif
