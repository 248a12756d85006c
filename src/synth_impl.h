/* synth_impl.h — internal: how synth_write.c uses the tokenizer builder (synth_vocab.c). */
#ifndef E0_SYNTH_IMPL_H
#define E0_SYNTH_IMPL_H

#include "gguf.h"
#include "synth.h"

/* The tokenizer arrays of a synth model; kept alive until the writer has written its header. */
typedef struct synth_vocab synth_vocab;

/* Build the tokenizer for p (SentencePiece-style for llama, byte-level BPE for qwen*) with
 * exactly p->n_vocab tokens and add its tokenizer.* keys to w. *out owns the arrays. */
int synth_vocab_write(gguf_writer *w, const synth_params *p, synth_vocab **out, e0_err *e);
void synth_vocab_free(synth_vocab *v);

#endif
