/* load.h — open a model the way the options say: decide whether routed experts are resident or
 * streamed (and with how many slots), the routing mode, and build the context around it.
 *
 * The residency rule (docs/design.md):
 *   budget = memory_budget option, else 80% of the memory this process may use: the smaller of
 *            MemAvailable and the memory cgroup's limit (minus its current usage) when limited.
 *   experts=resident -> resident. experts=stream or expert_slots given -> streamed.
 *   otherwise resident when dense weights + all experts + KV cache fit the budget, else streamed.
 *   streamed: token_embd stays in the file (one row read per token) unless the output reuses it,
 *   so "dense" excludes it. Without expert_slots: slots = (budget - dense - KV - scratch) / (layers
 *   x bytes of one expert), at least experts-used-per-token, at most all experts, shrunk until the
 *   cache's exact size (slots with their padding) fits, and what is left of the budget then buys
 *   one more slot in as many layers as it can (spread evenly, e0_experts_layer_slots); when even that smallest cache does not fit,
 *   a default prefill chunk (no -b) is halved down to E0_CTX_MIN_AUTO_BATCH tokens, then the
 *   slots go below experts-used-per-token (down to 1: a layer's experts take turns in them, and
 *   a token reads most of its experts), and then the chunk grows back to the longest that fits with
 *   one slot (a chunk reads each expert it uses once; few slots hit little anyway), the slots
 *   taking what is left; a budget below that is an error. Every buffer is counted as
 *   it will be allocated, so the memory ledger's
 *   peak stays within the budget in a streamed run (given expert_slots override the budget).
 *   routing defaults to predicted when experts stream, actual when they are resident;
 *   expert_read to direct when they stream (cached where the file system refuses O_DIRECT).
 *   routing=replay (measurement only): the trace routing_trace must have the model's expert count
 *   and at least its experts per token; it replaces every router (see trace.h, engine.h). */
#ifndef E0_LOAD_H
#define E0_LOAD_H

#include <jansson.h>

#include "engine/engine.h"
#include "engine/experts.h"
#include "engine/options.h"

typedef struct e0_session {
    e0_model *m;
    e0_ctx *c;
    e0_experts *xc;        /* NULL when experts are resident (or the model has none) */
    struct e0_trace *trace; /* routing=replay: the routing trace (trace.h), else NULL */
    e0_options opt;        /* resolved */
    bool streamed;
    int64_t extra_slot_layers; /* streamed: layers with opt.expert_slots + 1 slots (e0_experts_params.extra_layers) */
    uint64_t budget;       /* bytes the rule used */
    const char *budget_source;
} e0_session;

int e0_open(const char *path, const e0_options *opt, const e0_ctx_params *cp, const e0_model_params *mp,
            e0_session *s, e0_err *e);
void e0_close(e0_session *s);
/* Context c, sequence i of n evaluated together (serve's slots, bench --batch-size; the
 * session's own context is 0 of 1), set up as the options say: the expert cache, prefill_read,
 * the routing, and under routing=replay the trace from e0_replay_first_step(i, n) with seed
 * replay_seed + i. Every context of a session so set up routes alike, so they can batch. */
void e0_session_setup_ctx(const e0_session *s, e0_ctx *c, int i, int n);
/* Only the decision (steps 1-3 of e0_open, reading metadata only): fills s->opt (resolved),
 * s->streamed, s->budget, s->budget_source; loads nothing (s->m, s->c, s->xc stay NULL). */
int e0_plan(const char *path, const e0_options *opt, const e0_ctx_params *cp, e0_session *s, e0_err *e);
/* "17 slots per layer" or "17 slots per layer, 18 in 23 layers" (streamed), for summaries.
 * Returns buf. */
const char *e0_session_slots_text(const e0_session *s, char *buf, size_t n);
/* Every resolved option and context setting, for `bench`'s config and `run`'s summary. */
json_t *e0_session_config_json(const e0_session *s);
/* "actual", "predicted", "replay" or "none (dense model)": config.routing. */
const char *e0_session_routing_name(const e0_session *s);
/* For summaries: the routing name, and under replay the trace and replay_predict
 * ("replay of gemma-4-26b-a4b.csv, predicted at replay_predict=0.9"). Returns buf. */
const char *e0_session_routing_label(const e0_session *s, char *buf, size_t n);
/* The memory budget the residency rule used: {bytes, source}. */
json_t *e0_session_budget_json(const e0_session *s);

#endif
