/* step.h — the one place where the scheduler evaluates tokens: a step is a list of items, each
 * the tokens one sequence appends to its KV cache this step (one token for a decoding sequence,
 * a chunk for a prefilling one). srv_step_forward evaluates every item; afterwards each item's
 * context holds the logits after its last token (e0_ctx_logits).
 *
 * A step whose tokens fit in one chunk (n_batch of the first item's context) is one forward pass
 * (e0_eval_multi: decode tokens and prompt chunks together, weights and the step's experts read
 * once); a larger one evaluates the decode items in e0_eval_batch calls and each prefill chunk
 * in its own e0_eval. Each sequence's results are bit-identical to its chunk alone (engine.h).
 * The scheduler (sched.c) only builds items and
 * reads logits. */
#ifndef E0_SERVE_STEP_H
#define E0_SERVE_STEP_H

#include <stdbool.h>

#include "engine/engine.h"

typedef struct srv_item {
    e0_ctx *c;          /* the sequence's context */
    const int *tokens;  /* [n] to append at its current position */
    int n;
    bool prefill;       /* prompt tokens (timed as prefill) or a generated token (decode) */
    int rc;             /* out: 0, or -1 with err filled */
    e0_err err;
} srv_item;

/* Evaluate every item. Returns the number of items that failed; adds the time spent on prefill
 * and decode items to *prefill_s and *decode_s. */
int srv_step_forward(srv_item *items, int n, double *prefill_s, double *decode_s);

#endif
