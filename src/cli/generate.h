/* generate.h — the text generation loop shared by `run` and `chat`: sample, stream valid UTF-8
 * to stdout, stop at end-of-generation tokens or stop strings, count and time. */
#ifndef E0_GENERATE_H
#define E0_GENERATE_H

#include <signal.h>
#include <stdbool.h>

#include "engine/engine.h"
#include "engine/sample.h"
#include "text/grammar.h"
#include "text/tokenizer.h"

typedef struct gen_opts {
    int64_t n_predict;  /* < 0: until EOG or the context is full */
    bool ignore_eos;
    const char *const *stop;
    int n_stop;
    bool echo;          /* print the text as it comes */
    const volatile sig_atomic_t *cancel; /* non-NULL: stop before the next token once *cancel is set */
    int32_t *record;    /* non-NULL: the generated ids that were evaluated into the context, in order */
    int record_cap;     /* room in record */
    const e0_grammar *grammar; /* non-NULL: the output must match it (ends when it is complete) */
} gen_opts;

typedef struct gen_result {
    int n_generated;
    double seconds;     /* decode time */
    bool hit_eog, hit_stop, context_full;
    bool grammar_done;  /* the grammar was complete and allowed nothing more */
    bool cancelled;     /* *o->cancel was set: the text so far is kept */
    bool output_lost;   /* echo: stdout failed (reader gone, disk full); generation stopped */
    char *text;         /* everything generated (stop string excluded), malloc'd */
    size_t text_len;
    int n_recorded;     /* ids written to o->record (all evaluated ones when it had room) */
} gen_result;

/* The prompt has been evaluated (its logits are current). Generate, appending to the context. */
int gen_run(e0_ctx *c, const e0_tokenizer *tok, e0_sampler *s, const gen_opts *o, gen_result *r, e0_err *e);

/* Peak resident memory of this process (VmHWM), bytes; 0 if unreadable. */
unsigned long long gen_peak_rss(void);

#endif
