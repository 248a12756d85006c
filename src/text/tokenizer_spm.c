/* tokenizer_spm.c — SentencePiece (llama.cpp's llm_tokenizer_spm): spaces become "▁", the
 * text is split into UTF-8 characters, and the adjacent pair whose concatenation is the
 * highest-scoring token is merged repeatedly (ties: leftmost first). Symbols that are not tokens
 * at the end fall back to one <0xNN> token per byte. Deviation on invalid UTF-8 only: see below. */
#include <stdlib.h>
#include <string.h>

#include "text/tokenizer_impl.h"
#include "text/unicode.h"

typedef struct spm_sym {
    int prev, next;
    size_t off, n; /* bytes of the escaped text; n == 0 once merged away */
} spm_sym;

static int try_bigram(const e0_tokenizer *t, const char *text, spm_sym *sym, int l, int r, tok_heap *h, e0_err *e) {
    if (l < 0 || r < 0) return 0;
    size_t size = sym[l].n + sym[r].n;
    int32_t id = tok_strmap_find(t, text + sym[l].off, size);
    if (id < 0) return 0;
    return tok_heap_push(h, (tok_bigram){-(double)t->score[id], l, r, (int64_t)size, 0}, e);
}

static int emit_symbol(const e0_tokenizer *t, const char *text, const spm_sym *s, e0_tokens *out, e0_err *e) {
    int32_t id = tok_strmap_find(t, text + s->off, s->n);
    if (id >= 0) return tokens_push(out, id, e);
    for (size_t j = 0; j < s->n; j++) {
        int32_t b = t->byte_tok[(unsigned char)text[s->off + j]];
        if (b < 0) b = t->unk;
        if (b < 0)
            return e0_fail(e, "tokenizer: byte 0x%02X has no token (no <0x%02X> and no unknown token)",
                           (unsigned char)text[s->off + j], (unsigned char)text[s->off + j]);
        if (tokens_push(out, b, e) < 0) return -1;
    }
    return 0;
}

int tok_spm_fragment(const e0_tokenizer *t, const char *raw, size_t len, bool space_prefix, e0_tokens *out,
                     e0_err *e) {
    /* Escape: optional leading space, then every ' ' -> U+2581 (3 bytes). */
    size_t spaces = space_prefix;
    for (size_t i = 0; i < len; i++) spaces += raw[i] == ' ';
    size_t n = len + space_prefix + 2 * spaces;
    char *text = malloc(n ? n : 1);
    spm_sym *sym = malloc((n ? n : 1) * sizeof *sym);
    tok_heap heap = {0};
    int rc = -1;
    if (!text || !sym) {
        e0_fail(e, "out of memory");
        goto done;
    }
    size_t p = 0;
    for (size_t i = 0; i < len + space_prefix; i++) {
        char c = i < space_prefix ? ' ' : raw[i - space_prefix];
        if (c == ' ') {
            memcpy(text + p, "\xe2\x96\x81", 3);
            p += 3;
        } else {
            text[p++] = c;
        }
    }
    int ns = 0;
    for (size_t off = 0; off < n;) {
        /* One UTF-8 character per symbol. llama.cpp trusts the lead byte (e0_utf8_len), which on
         * invalid input can swallow the first byte of a following "▁" and lose the space; taking
         * only a structurally complete sequence (else one byte) is identical on valid UTF-8 and
         * keeps every byte recoverable on invalid input. */
        uint32_t cp;
        size_t cl = e0_utf8_decode((const unsigned char *)text + off, n - off, &cp);
        if (cl == 0) cl = 1;
        sym[ns] = (spm_sym){ns - 1, off + cl == n ? -1 : ns + 1, off, cl};
        ns++;
        off += cl;
    }
    for (int i = 1; i < ns; i++)
        if (try_bigram(t, text, sym, i - 1, i, &heap, e) < 0) goto done;
    while (heap.n) {
        tok_bigram b = tok_heap_pop(&heap);
        spm_sym *l = &sym[b.left], *r = &sym[b.right];
        if (l->n == 0 || r->n == 0 || (int64_t)(l->n + r->n) != b.a) continue; /* stale */
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) sym[r->next].prev = b.left;
        if (try_bigram(t, text, sym, l->prev, b.left, &heap, e) < 0 ||
            try_bigram(t, text, sym, b.left, l->next, &heap, e) < 0)
            goto done;
    }
    for (int i = ns ? 0 : -1; i != -1; i = sym[i].next)
        if (emit_symbol(t, text, &sym[i], out, e) < 0) goto done;
    rc = 0;
done:
    free(text);
    free(sym);
    free(heap.v);
    return rc;
}
