/* tokenizer.h — text <-> token ids from a model's GGUF vocabulary, matching llama.cpp.
 *
 * Three tokenizer models:
 *  - SentencePiece ("llama"): score-driven bigram merging, byte fallback to <0xNN> tokens,
 *    spaces escaped as U+2581 "▁" and a leading space added (tokenizer.ggml.add_space_prefix,
 *    default on) at the start of the text and after every special token.
 *  - Byte-level BPE ("gpt2"): a pre-tokenizer regex list chosen by tokenizer.ggml.pre splits the
 *    text, bytes are mapped to GPT-2's printable code points and merged by merge rank.
 *    Known pre values: the table in tokenizer_bpe.c (one row per regex list and flags, ~90 names),
 *    every BPE pre-tokenizer of the pinned llama.cpp used by an LLM we run: default, gpt-2, olmo,
 *    mpt, llama-bpe (llama3), dbrx, glm4/chatglm-bpe, jais-2, qwen2, deepseek-r1-qwen, grok-2,
 *    qwen35, laguna, deepseek-llm, deepseek-coder, deepseek-v3 (hunyuan-dense, joyai-llm),
 *    falcon, starcoder/smollm/refact/command-r, bloom/poro-chat, viking, tekken, gpt-4o/llama4/
 *    minimax-m2, kimi-k2, bailingmoe, seed-coder, minicpm5, sarvam-moe, and their aliases. Any
 *    other value is an error; a missing one means "default" (with a warning on stderr, as
 *    llama.cpp). Not in the table (no LLM of ours uses them): youtu and tiny_aya (\p{Lu}-style
 *    classes), exaone-moe (an unbounded multi-character group), superbpe (empty matches), afmoe
 *    (a custom digit splitter), chameleon, granite-embed-multi-97m, whitespace (embeddings).
 *  - SPM-style BPE ("gemma4", and pre sarvam-moe): no GPT-2 byte mapping; ' ' becomes "▁", the
 *    text is split only into newline / non-newline runs, symbols are UTF-8 characters merged by
 *    rank, a symbol that is not a token falls back to <0xNN> tokens; gemma4 takes a run of
 *    newlines that is a token whole and always adds BOS (llama.cpp's workaround).
 *  Out of scope: WordPiece ("bert") and Unigram ("t5"), used only by embedding models.
 *
 * Special tokens: control (token_type 3) and unknown (2) tokens are recognised in the text only
 * when parse_special is set; user-defined tokens (4) are always recognised — both exactly like
 * llama.cpp's tokenizer_st_partition.
 *
 * Deviations from llama.cpp, on invalid UTF-8 only (valid UTF-8 gives identical ids): llama.cpp's
 * BPE path turns each invalid byte into U+FFFD (losing the byte); here the byte keeps U+FFFD's
 * role for splitting but is encoded as itself. llama.cpp's SPM path trusts lead bytes, so a
 * truncated sequence can swallow the first byte of the next "▁"; here a symbol is a complete
 * sequence or a single byte. So detokenize(tokenize(x)) == x for any byte string, except that a
 * byte whose GPT-2 character the vocabulary defines as a user-defined token (deepseek-coder does
 * this for the never-valid bytes C0 C1 F5-FF) comes back as that token's text, and that SPM
 * gives back a "▁" (U+2581) of the text as a space (its escape for spaces; llama.cpp does the same).
 *
 * Metadata is untrusted: array length mismatches, special ids >= n_vocab, an empty vocabulary
 * and unknown models are errors. BPE merges that are malformed or that reference text that is not
 * a token (left, right or their concatenation) are skipped (e0_tok_merges_skipped counts them):
 * they could never produce a token.
 *
 * Not done (no effect on the shared test vocabularies): llama.cpp's per-model LSTRIP/RSTRIP
 * attributes (phi-3, jina <mask>), its clean_up_tokenization_spaces pass in llama_detokenize (this
 * detokenizer concatenates pieces, like llama.cpp's streaming output), and the pre-tokenizers
 * listed above as not in the table.
 *
 * A tokenizer is immutable after creation and may be used from several threads at once. */
#ifndef E0_TOKENIZER_H
#define E0_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf/gguf.h"
#include "base/util.h"

typedef struct e0_tokenizer e0_tokenizer;

enum e0_tok_model { E0_TOK_SPM = 1, E0_TOK_BPE = 2 };

/* GGUF tokenizer.ggml.token_type values. */
enum e0_tok_type {
    E0_TT_UNDEFINED = 0,
    E0_TT_NORMAL = 1,
    E0_TT_UNKNOWN = 2,
    E0_TT_CONTROL = 3,
    E0_TT_USER_DEFINED = 4,
    E0_TT_UNUSED = 5,
    E0_TT_BYTE = 6,
};

/* A vocabulary described by plain arrays (what the GGUF holds). Pointers are only read during
 * e0_tokenizer_create; everything is copied. */
typedef struct e0_tokenizer_desc {
    const char *model;          /* "llama" or "gpt2" */
    const char *pre;            /* tokenizer.ggml.pre; NULL or "" = "default" (BPE only) */
    uint64_t n_tokens;
    const char *const *tokens;  /* token texts */
    const uint64_t *token_lens; /* byte lengths; NULL = NUL-terminated */
    uint64_t n_scores;          /* 0 = absent (all 0.0); otherwise must equal n_tokens */
    const float *scores;
    uint64_t n_types;           /* 0 = absent (all NORMAL); otherwise must equal n_tokens */
    const int32_t *types;
    uint64_t n_merges;          /* BPE only */
    const char *const *merges;  /* "left right" */
    const uint64_t *merge_lens; /* NULL = NUL-terminated */
    /* Special ids: -1 = absent (llama.cpp's defaults apply: SPM bos 1, eos 2, unk 0; BPE bos
     * and eos 11). Values outside [0, n_tokens) are errors. */
    int64_t bos, eos, unk, pad, eot, eom, sep;
    /* -1 = absent (defaults: SPM add_bos, BPE add_bos only for the llama3 pre family; add_eos
     * off; add_space_prefix on for SPM, off for BPE). */
    int add_bos, add_eos, add_space_prefix;
} e0_tokenizer_desc;

/* A desc with every optional field set to "absent". */
void e0_tokenizer_desc_init(e0_tokenizer_desc *d);

e0_tokenizer *e0_tokenizer_create(const e0_tokenizer_desc *d, e0_err *e);
/* Read tokenizer.ggml.* metadata (never tensor data) and create the tokenizer. */
e0_tokenizer *e0_tokenizer_from_gguf(const gguf_file *f, e0_err *e);
void e0_tokenizer_free(e0_tokenizer *t);

int e0_tok_model(const e0_tokenizer *t);
const char *e0_tok_pre(const e0_tokenizer *t); /* the pre name as given ("default" if absent) */
uint32_t e0_tok_n_vocab(const e0_tokenizer *t);
int32_t e0_tok_bos(const e0_tokenizer *t); /* -1 if none */
int32_t e0_tok_eos(const e0_tokenizer *t);
int32_t e0_tok_eot(const e0_tokenizer *t);
bool e0_tok_add_bos(const e0_tokenizer *t);
bool e0_tok_add_eos(const e0_tokenizer *t);
uint64_t e0_tok_merges_skipped(const e0_tokenizer *t);
/* End of generation: EOS, EOT, EOM and the tokens llama.cpp marks EOG by their text
 * (<|eot_id|>, <|im_end|>, <|end|>, <end_of_turn>, <|endoftext|>, <|eom_id|>, ...). */
bool e0_tok_is_eog(const e0_tokenizer *t, int32_t id);
/* token_type of id (after llama.cpp's fix-ups: EOG texts are made CONTROL); -1 if out of range. */
int e0_tok_type_of(const e0_tokenizer *t, int32_t id);
/* Raw vocabulary text of id (NULL if out of range). */
const char *e0_tok_text(const e0_tokenizer *t, int32_t id, size_t *len);
/* Id whose text is exactly text[0..len), or -1. */
int32_t e0_tok_find(const e0_tokenizer *t, const char *text, size_t len);

/* A growable id list. */
typedef struct e0_tokens {
    int32_t *ids;
    size_t n, cap;
} e0_tokens;
void e0_tokens_free(e0_tokens *v);

/* Tokenize text[0..len) (any bytes) and append the ids to *out. add_special: add BOS/EOS as the
 * vocabulary asks (add_bos/add_eos); parse_special: recognise control tokens in the text. */
int e0_tokenize(const e0_tokenizer *t, const char *text, size_t len, bool add_special, bool parse_special,
                e0_tokens *out, e0_err *e);

/* The bytes a token stands for. Control and unknown tokens give "" unless `special` (then their
 * text); user-defined tokens give their text; SPM: "▁" -> " ", <0xNN> -> that byte; BPE: GPT-2
 * code points -> bytes (a code point outside the mapping is kept as its UTF-8). Unused and
 * undefined tokens and out-of-range ids give "". Never NULL. */
const char *e0_tok_piece(const e0_tokenizer *t, int32_t id, bool special, size_t *len);

/* Streaming detokenizer: feed ids one at a time, get back only complete UTF-8 characters; a
 * partial multi-byte character is held until it completes. Bytes that can never form valid UTF-8
 * are passed through unchanged (never dropped or replaced), so the concatenated output always
 * equals e0_detokenize's. With strip_leading_space (SPM vocabularies with add_space_prefix), the
 * first piece after an optional leading BOS loses one leading space, undoing the space that
 * tokenization added. */
typedef struct e0_detok_stream {
    const e0_tokenizer *t;
    bool special, strip_space, started;
    unsigned char pend[4];
    size_t npend;
    char *buf;
    size_t cap;
} e0_detok_stream;
void e0_detok_init(e0_detok_stream *s, const e0_tokenizer *t, bool special, bool strip_leading_space);
/* Returns the bytes ready for output (valid until the next call) and their count in *len; NULL
 * only on out of memory. */
const char *e0_detok_push(e0_detok_stream *s, int32_t id, size_t *len);
/* Emit whatever is still held (an incomplete sequence at the end, passed through as is). */
const char *e0_detok_flush(e0_detok_stream *s, size_t *len);
void e0_detok_free(e0_detok_stream *s);
/* Whether strip_leading_space applies for this vocabulary (SPM with add_space_prefix). */
bool e0_tok_strips_leading_space(const e0_tokenizer *t);

/* Whole-sequence detokenize (the stream, flushed, with the vocabulary's leading-space rule):
 * a malloc'd NUL-terminated string in *out and its length. */
int e0_detokenize(const e0_tokenizer *t, const int32_t *ids, size_t n, bool special, char **out, size_t *out_len,
                  e0_err *e);

#endif
