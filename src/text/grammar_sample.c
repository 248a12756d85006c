/* grammar_sample.c — choosing tokens under a grammar (see grammar.h).
 *
 * A token's text is its piece (e0_tok_piece without specials: what the detokenizer prints).
 * Tokens with no text (control and unused tokens) are never allowed: they would let the model
 * loop without moving the grammar. End-of-generation tokens are allowed where the text so far
 * completes the grammar. The draw follows llama.cpp's common sampler: the full chain without the
 * grammar first; if the grammar refuses that token, every refused token's logit becomes -inf and
 * the chain draws again (greedy: the best allowed token either way). The refusal pass tries
 * only tokens whose first byte the grammar can take next. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "text/grammar.h"

struct e0_gsampler {
    e0_gmatch *m;
    const e0_tokenizer *tok;
    int64_t n_vocab;
    float *masked; /* logits with refused tokens at -inf [n_vocab] */
};

e0_gsampler *e0_gsampler_new(const e0_grammar *g, const e0_tokenizer *tok, int64_t n_vocab, e0_err *e) {
    e0_gsampler *gs = calloc(1, sizeof *gs);
    if (!gs || n_vocab < 1) return free(gs), e0_fail(e, n_vocab < 1 ? "grammar: empty vocabulary" : "out of memory"), NULL;
    gs->tok = tok;
    gs->n_vocab = n_vocab;
    gs->masked = malloc((size_t)n_vocab * sizeof *gs->masked);
    if (!gs->masked) {
        e0_fail(e, "out of memory");
        e0_gsampler_free(gs);
        return NULL;
    }
    if (!(gs->m = e0_gmatch_new(g, e))) {
        e0_gsampler_free(gs);
        return NULL;
    }
    return gs;
}

void e0_gsampler_free(e0_gsampler *gs) {
    if (!gs) return;
    e0_gmatch_free(gs->m);
    free(gs->masked);
    free(gs);
}

/* Token id under the grammar: an end-of-generation token where the grammar may end, else its
 * text, which must be non-empty; tried (allows) or taken (accept, which changes nothing when it
 * refuses). */
static bool token_fits(e0_gsampler *gs, int32_t id, bool (*step)(e0_gmatch *, const char *, size_t)) {
    if (id < 0 || id >= gs->n_vocab) return false;
    if (e0_tok_is_eog(gs->tok, id)) return e0_gmatch_can_end(gs->m);
    size_t n;
    const char *piece = e0_tok_piece(gs->tok, id, false, &n);
    return n > 0 && step(gs->m, piece, n);
}

bool e0_gsampler_allows(e0_gsampler *gs, int32_t id) { return token_fits(gs, id, e0_gmatch_allows); }

int e0_gsampler_sample(e0_gsampler *gs, e0_sampler *s, const float *logits, e0_err *e) {
    int t = e0_sample(s, logits);
    if (e0_gsampler_allows(gs, t)) return t;
    bool first[256], limit = false;
    int64_t first_ok = -1;
    for (int b = 0; b < 256; b++) {
        char c = (char)b;
        first[b] = e0_gmatch_allows(gs->m, &c, 1);
    }
    const bool can_end = e0_gmatch_can_end(gs->m);
    const uint64_t work0 = e0_gmatch_work(gs->m);
    for (int64_t id = 0; id < gs->n_vocab; id++) {
        if ((id & 1023) == 0 && e0_gmatch_work(gs->m) - work0 > E0_GRAMMAR_MAX_MASK_WORK)
            return e0_fail(e, "grammar: choosing one token took more than %llu units of work (the grammar is too ambiguous)",
                           (unsigned long long)E0_GRAMMAR_MAX_MASK_WORK);
        bool ok;
        if (e0_tok_is_eog(gs->tok, (int32_t)id)) ok = can_end;
        else {
            size_t n;
            const char *piece = e0_tok_piece(gs->tok, (int32_t)id, false, &n);
            ok = n > 0 && first[(unsigned char)piece[0]] && e0_gmatch_allows(gs->m, piece, n);
            if (!ok && n > 0 && first[(unsigned char)piece[0]] && e0_gmatch_overflow(gs->m)) limit = true;
        }
        gs->masked[id] = ok ? logits[id] : -INFINITY;
        if (ok && first_ok < 0) first_ok = id;
    }
    if (first_ok < 0)
        return limit ? e0_fail(e, "grammar: the text exceeds the matcher's limits (%d stacks, depth %d, %u expansions)",
                               E0_GRAMMAR_MAX_STACKS, E0_GRAMMAR_MAX_DEPTH, E0_GRAMMAR_MAX_WORK)
                     : e0_fail(e, "grammar: no token of the vocabulary can continue the text");
    t = e0_sample(s, gs->masked);
    /* a refused draw here means every allowed logit was -inf or NaN (a bias banned them all) */
    return t >= 0 && t < gs->n_vocab && gs->masked[t] != -INFINITY && !isnan(gs->masked[t]) ? t : (int)first_ok;
}

bool e0_gsampler_accept(e0_gsampler *gs, int32_t id) { return token_fits(gs, id, e0_gmatch_accept); }

bool e0_gsampler_must_end(const e0_gsampler *gs) { return e0_gmatch_must_end(gs->m); }
