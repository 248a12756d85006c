/* synth_impl.h — internal to the synth_*.c files: the PRNG they share, the parameters as
 * engine hyperparameters (synth.c), the direct block generator (synth_blocks.c) and the
 * tokenizer builder (synth_vocab.c). */
#ifndef E0_SYNTH_IMPL_H
#define E0_SYNTH_IMPL_H

#include "gguf/gguf.h"
#include "synth/synth.h"

/* splitmix64's output function: a bijective 64-bit mix, used on counters (counter-based PRNG). */
static inline uint64_t synth_splitmix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* p's dimensions as the engine's hyperparameters (with p->arch's flags), so that the architecture
 * table's tensor presence and shapes (engine/arch.h) apply to synth models too. */
void synth_hparams(const synth_params *p, e0_hparams *hp);
/* rope.dimension_sections of a hybrid synth model with n_rot rotated dims (Qwen3.5's proportions). */
void synth_rope_sections(int64_t n_rot, int32_t sec[4]);

/* What synth knows about one tensor type it can write (synth_blocks.c). */
typedef struct synth_type {
    uint32_t file_type; /* llama.cpp's general.file_type of an all-this-type model */
    uint32_t fallback;  /* type for rows that are not whole blocks (synth_fallback_type) */
    /* Direct block generation (gen NULL: none, the type is written from floats): block b of the
     * tensor with PRNG key `key`, block scale `base` before jitter. */
    void (*gen)(uint64_t key, uint64_t b, float base, uint8_t *dst);
    int codes;          /* number of code values (2^bits) */
    int centered;       /* codes centered by (codes - 1) / 2 (affine types), else by codes / 2 */
    int sc_lo, sc_bits; /* sub-block scale magnitudes sc_lo .. sc_lo + 2^sc_bits - 1; sc_bits 0: none */
    double (*per_d2)(void); /* if set (grid types): E[w^2] / E[(d*f)^2] of gen's blocks; codes etc. unused */
} synth_type;

/* The row of `type`, or NULL if synth does not write it (Q8_1, Q8_K, unknown ids). */
const synth_type *synth_type_of(uint32_t type);

/* Whether synth_fill_blocks can draw blocks of `type` (the quantized weight types). */
int synth_blocks_supported(uint32_t type);

/* Blocks first_block .. first_block + n_blocks - 1 of a tensor of `type` with PRNG key `key`,
 * drawn directly (random codes and sub-block scales; see synth_blocks.c), into dst. The
 * dequantized weights have mean ~0 and standard deviation ~std. Each block depends only on
 * (key, its index). -1 if the type is not supported or std is not a positive finite number. */
int synth_fill_blocks(uint32_t type, uint64_t key, uint64_t first_block, uint64_t n_blocks, double std, void *dst);

/* One tensor for the per-tensor type plan (synth_recipe.c). */
typedef struct synth_tensor_desc {
    const char *name;
    uint64_t ne[3];
    int quantizable; /* a matrix llama.cpp quantizes (not vectors, not routers) */
} synth_tensor_desc;
/* types[i] for each of the n tensors: p->type_map, then p->ftype's llama.cpp recipe (or
 * p->type), then llama.cpp's fallback for rows that are not whole blocks; F32 for the others. */
int synth_assign_types(const synth_params *p, const synth_tensor_desc *t, size_t n, uint32_t *types, e0_err *e);

/* The tokenizer arrays of a synth model; kept alive until the writer has written its header. */
typedef struct synth_vocab synth_vocab;

/* Build the tokenizer for p (SentencePiece-style for llama, byte-level BPE for qwen*) with
 * exactly p->n_vocab tokens and add its tokenizer.* keys to w. *out owns the arrays. */
int synth_vocab_write(gguf_writer *w, const synth_params *p, synth_vocab **out, e0_err *e);
void synth_vocab_free(synth_vocab *v);

#endif
