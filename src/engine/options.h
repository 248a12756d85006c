/* options.h — `--model-option key=value`: how a model is loaded and run (expert residency and
 * streaming, routing mode, read mode, prefetch). Parsed strictly: an unknown key or a bad value
 * is an error naming it. Unset options resolve to defaults in e0_options_resolve() (the rule is
 * documented there and in docs/design.md). */
#ifndef E0_OPTIONS_H
#define E0_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/util.h"

enum e0_experts_mode { E0_EXPERTS_AUTO = 0, E0_EXPERTS_RESIDENT, E0_EXPERTS_STREAM };
/* REPLAY: a measurement mode, experts taken from a routing trace (trace.h) instead of the router. */
enum e0_routing { E0_ROUTING_AUTO = 0, E0_ROUTING_ACTUAL, E0_ROUTING_PREDICTED, E0_ROUTING_REPLAY };
enum e0_tristate { E0_AUTO = 0, E0_ON, E0_OFF };

typedef struct e0_options {
    int experts;                      /* e0_experts_mode */
    int64_t expert_slots;             /* 0 = from the budget */
    uint64_t memory_budget;           /* bytes; 0 = from the machine */
    int expert_read;                  /* e0_expert_read (experts.h); -1 = default (cached) */
    int routing;                      /* e0_routing */
    int64_t predict_from_layer;       /* -1 = default */
    int64_t predict_ahead;            /* layers predicted and read ahead; 0 = default */
    int prefetch;                     /* e0_tristate (actual routing only) */
    int prefill_read;                 /* E0_AUTO (overlap for long chunks) or E0_OFF */
    int64_t prefill_ahead_min_tokens; /* -1 = default 3000 */
    int evict;                        /* e0_evict (experts.h); -1 = default */
    int64_t io_threads;               /* 0 = default */
    char routing_trace[1024];         /* routing=replay: the trace file ("" = none) */
    double replay_predict;            /* routing=replay: predictor accuracy 0..1; < 0 = no predictor */
    int64_t replay_seed;              /* seed of replay_predict's wrong guesses; 0 = default (1) */
    int protect_predicted;            /* e0_tristate: prediction-aware eviction (experts.h); AUTO = on */
    int repack;                       /* E0_AUTO (q4_K kept in the AVX2 layout where it runs, quant_kx.h) or E0_OFF */
} e0_options;

void e0_options_init(e0_options *o);
/* Parse one "key=value". */
int e0_options_parse(e0_options *o, const char *kv, e0_err *e);
/* The accepted keys, for --help. */
const char *e0_options_help(void);
/* The options that depend on the model, checked once its shape is known (e0_open): -1 with an
 * error naming the valid range (predict_from_layer must be a layer of the model). */
int e0_options_check_model(const e0_options *o, int64_t n_layer, e0_err *e);
/* The replay options go together: routing=replay needs routing_trace, routing_trace and
 * replay_predict / replay_seed need routing=replay. -1 with an error naming the missing one. */
int e0_options_check_replay(const e0_options *o, e0_err *e);
/* bytes as text for messages, with three significant digits in a unit that shows them:
 * "512 bytes", "8.00 MiB", "30.5 GiB". Returns buf. */
const char *e0_size_text(uint64_t bytes, char buf[32]);

#endif
