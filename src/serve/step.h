/* step.h — the one place where the scheduler evaluates tokens: a step is a list of items, each
 * the tokens one sequence appends to its KV cache this step (one token for a decoding sequence,
 * a chunk for a prefilling one). srv_step_forward evaluates every item; afterwards each item's
 * context holds the logits after its last token (e0_ctx_logits).
 *
 * The decode items (one token each) go in one e0_eval_batch (engine.h: one forward pass, weights
 * and the batch's experts read once per step, each sequence's results bit-identical to e0_eval
 * alone); each prefill chunk is its own e0_eval. The scheduler (sched.c) only builds items and
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
