/* tokenizer_impl.h — internals shared by the tokenizer_*.c files (not a public API). */
#ifndef E0_TOKENIZER_IMPL_H
#define E0_TOKENIZER_IMPL_H

#include "text/regex_split.h"
#include "text/tokenizer.h"

/* Token attribute bits, as llama.cpp's llama_token_attr (several may be set). */
enum {
    ATTR_UNKNOWN = 1 << 0,
    ATTR_UNUSED = 1 << 1,
    ATTR_NORMAL = 1 << 2,
    ATTR_CONTROL = 1 << 3,
    ATTR_USER_DEFINED = 1 << 4,
    ATTR_BYTE = 1 << 5,
};

/* text -> id (open addressing; slot holds id + 1, 0 = empty). */
typedef struct tok_strmap {
    uint32_t *slots;
    size_t mask;
} tok_strmap;

/* (left id, right id) -> merge rank and merged id. */
typedef struct tok_mergemap {
    uint64_t *keys; /* left << 32 | right, UINT64_MAX = empty */
    uint32_t *rank;
    int32_t *result;
    size_t mask;
} tok_mergemap;

/* Long-lived arrays, accounted in the memory ledger (E0_MEM_OTHER). */
#define TOK_MAX_BLOCKS 24
typedef struct tok_block {
    void *p;
    size_t n;
} tok_block;

struct e0_tokenizer {
    tok_block blocks[TOK_MAX_BLOCKS];
    int n_blocks;
    int model;           /* E0_TOK_SPM / E0_TOK_BPE */
    char *pre_name;
    uint32_t n;          /* vocabulary size */
    char *pool;          /* all token texts, each NUL-terminated */
    size_t pool_size;
    uint64_t *off;       /* text of id i: pool + off[i], length len[i] */
    uint32_t *len;
    float *score;
    uint8_t *attr;
    uint8_t *type;       /* GGUF token_type as given (for e0_tok_type_of) */
    uint8_t *eog;
    tok_strmap map;

    /* Pieces for rendering with special=false/true share one pool (special-only tokens render
     * their text when asked). */
    char *piece_pool;
    uint64_t *piece_off;
    uint32_t *piece_len;

    int32_t bos, eos, eot, eom, unk, pad, sep;
    bool add_bos, add_eos, add_space_prefix, ignore_merges;
    /* BPE pre-tokenizer flags (pre_table in tokenizer_bpe.c): bpe_raw = SPM-style BPE (gemma4:
     * no GPT-2 byte mapping, ' ' escaped as U+2581, <0xNN> byte fallback); newline_words = a
     * word of newlines that is a token is taken whole; no_default_bos / force_bos: BOS rules. */
    bool bpe_raw, newline_words, no_default_bos, force_bos;

    /* special-token candidates (control, user-defined, unknown), longest text first */
    int32_t *special;
    uint32_t n_special;

    /* SPM: byte -> <0xNN> token (or the single-byte token, or -1). BPE: byte -> token of its
     * GPT-2 code point (or -1). */
    int32_t byte_tok[256];
    /* BPE: UTF-8 of each byte's GPT-2 code point. */
    char byte_utf8[256][3];
    uint8_t byte_utf8_len[256];

    tok_mergemap merges;
    uint64_t merges_skipped;
    e0_regex **regex;
    int n_regex;
};

/* Zero-filled, ledger-accounted allocation owned by t (freed by e0_tokenizer_free); NULL on out
 * of memory. n == 0 gives a 1-byte block. */
void *tok_alloc(e0_tokenizer *t, size_t n);

/* The string-map hash: FNV-1a over bytes, high bits folded into the low ones (the mask keeps those). */
uint64_t tok_hash(const char *s, size_t n);
int32_t tok_strmap_find(const e0_tokenizer *t, const char *s, size_t n);
/* Rank and merged id of (l, r); false if not a merge. */
bool tok_merge_find(const tok_mergemap *m, int32_t l, int32_t r, uint32_t *rank, int32_t *result);

int tokens_push(e0_tokens *v, int32_t id, e0_err *e);

/* Tokenize one raw-text fragment (no special tokens inside). */
int tok_spm_fragment(const e0_tokenizer *t, const char *text, size_t len, bool space_prefix, e0_tokens *out,
                     e0_err *e);
int tok_bpe_fragment(const e0_tokenizer *t, const char *text, size_t len, e0_tokens *out, e0_err *e);

/* BPE pre-tokenization alone: the byte lengths of the words text[0..len) splits into (out is
 * reset first). Exposed for tests. */
int tok_bpe_split(const e0_tokenizer *t, const char *text, size_t len, e0_lens *out, e0_err *e);

/* Whether tokenizer.ggml.pre names a known BPE pre-tokenizer. */
bool tok_pre_known(const char *name);
/* Set up the BPE side (pre-tokenizer regexes, byte map, merges). */
int tok_bpe_init(e0_tokenizer *t, const e0_tokenizer_desc *d, e0_err *e);
/* Build the piece pool (after attributes are final). */
int tok_build_pieces(e0_tokenizer *t, e0_err *e);

/* A candidate merge of two adjacent symbols for the SPM and BPE merge loops: smaller `prio`
 * first (BPE: the merge rank; SPM: minus the merged token's score), then the smaller left index.
 * `a` and `b` let the caller detect stale entries (SPM: the merged size; BPE: the two ids). */
typedef struct tok_bigram {
    double prio;
    int left, right;
    int64_t a, b;
} tok_bigram;
typedef struct tok_heap {
    tok_bigram *v;
    size_t n, cap;
} tok_heap;
int tok_heap_push(tok_heap *h, tok_bigram b, e0_err *e);
tok_bigram tok_heap_pop(tok_heap *h); /* h->n > 0 */

#endif
