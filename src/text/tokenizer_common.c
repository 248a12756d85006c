/* tokenizer_common.c — the pieces every tokenizer_*.c file uses, below all of them: allocation
 * owned by the tokenizer, the text -> id map lookup, token lists, the accessors of a built
 * tokenizer, and the merge queue shared by SPM and BPE. It calls nothing in the other
 * tokenizer_*.c files. */
#include <stdlib.h>
#include <string.h>

#include "text/tokenizer_impl.h"

/* ---- small helpers ---- */

uint64_t tok_hash(const char *s, size_t n) {
    uint64_t h = e0_fnv1a(s, n);
    return h ^ (h >> 29);
}

int32_t tok_strmap_find(const e0_tokenizer *t, const char *s, size_t n) {
    size_t i = tok_hash(s, n) & t->map.mask;
    for (;;) {
        uint32_t v = t->map.slots[i];
        if (!v) return -1;
        uint32_t id = v - 1;
        if (t->len[id] == n && !memcmp(t->pool + t->off[id], s, n)) return (int32_t)id;
        i = (i + 1) & t->map.mask;
    }
}

int tokens_push(e0_tokens *v, int32_t id, e0_err *e) {
    if (v->n == v->cap) {
        size_t nc = v->cap ? v->cap * 2 : 256;
        int32_t *p = realloc(v->ids, nc * sizeof *p);
        if (!p) return e0_fail(e, "out of memory");
        v->ids = p;
        v->cap = nc;
    }
    v->ids[v->n++] = id;
    return 0;
}

void e0_tokens_free(e0_tokens *v) {
    free(v->ids);
    v->ids = NULL;
    v->n = v->cap = 0;
}

void *tok_alloc(e0_tokenizer *t, size_t n) {
    if (t->n_blocks == TOK_MAX_BLOCKS) return NULL;
    if (n == 0) n = 1;
    void *p = e0_alloc(E0_MEM_OTHER, n);
    if (!p) return NULL;
    memset(p, 0, n); /* e0_alloc does not zero */
    t->blocks[t->n_blocks++] = (tok_block){p, n};
    return p;
}

/* ---- accessors ---- */

int e0_tok_model(const e0_tokenizer *t) { return t->model; }
const char *e0_tok_pre(const e0_tokenizer *t) { return t->pre_name; }
uint32_t e0_tok_n_vocab(const e0_tokenizer *t) { return t->n; }
int32_t e0_tok_bos(const e0_tokenizer *t) { return t->bos; }
int32_t e0_tok_eos(const e0_tokenizer *t) { return t->eos; }
int32_t e0_tok_eot(const e0_tokenizer *t) { return t->eot; }
bool e0_tok_add_bos(const e0_tokenizer *t) { return t->add_bos; }
bool e0_tok_add_eos(const e0_tokenizer *t) { return t->add_eos; }
uint64_t e0_tok_merges_skipped(const e0_tokenizer *t) { return t->merges_skipped; }
bool e0_tok_strips_leading_space(const e0_tokenizer *t) { return t->model == E0_TOK_SPM && t->add_space_prefix; }

bool e0_tok_is_eog(const e0_tokenizer *t, int32_t id) { return id >= 0 && (uint32_t)id < t->n && t->eog[id]; }

int e0_tok_type_of(const e0_tokenizer *t, int32_t id) {
    if (id < 0 || (uint32_t)id >= t->n) return -1;
    if (t->attr[id] & ATTR_CONTROL) return E0_TT_CONTROL;
    return t->type[id];
}

const char *e0_tok_text(const e0_tokenizer *t, int32_t id, size_t *len) {
    if (id < 0 || (uint32_t)id >= t->n) return NULL;
    if (len) *len = t->len[id];
    return t->pool + t->off[id];
}

int32_t e0_tok_find(const e0_tokenizer *t, const char *text, size_t len) { return tok_strmap_find(t, text, len); }

/* ---- the merge queue shared by SPM and BPE ---- */

static int bigram_before(const tok_bigram *x, const tok_bigram *y) {
    return x->prio < y->prio || (x->prio == y->prio && x->left < y->left);
}

int tok_heap_push(tok_heap *h, tok_bigram b, e0_err *e) {
    if (h->n == h->cap) {
        size_t nc = h->cap ? h->cap * 2 : 64;
        tok_bigram *p = realloc(h->v, nc * sizeof *p);
        if (!p) return e0_fail(e, "out of memory");
        h->v = p;
        h->cap = nc;
    }
    size_t i = h->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!bigram_before(&b, &h->v[parent])) break;
        h->v[i] = h->v[parent];
        i = parent;
    }
    h->v[i] = b;
    return 0;
}

tok_bigram tok_heap_pop(tok_heap *h) {
    tok_bigram top = h->v[0], last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && bigram_before(&h->v[c + 1], &h->v[c])) c++;
        if (!bigram_before(&h->v[c], &last)) break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n) h->v[i] = last;
    return top;
}
