/* grammar.h — GBNF grammars (llama.cpp's format) and decoding constrained by them.
 *
 * A grammar is a list of rules `name ::= alternatives`, the text must match the rule `root`:
 *   "lit\n"  a literal (escapes \n \r \t \\ \" \' \[ \] \xHH \uHHHH \UHHHHHHHH)
 *   [a-z_]   a character class ([^...] its complement), .  any character
 *   name     another rule,  ( ... | ... )  a group
 *   x*  x+  x?  x{m}  x{m,}  x{m,n}   repetition of the item before
 *   # comment to the end of the line; a rule ends at a newline outside parentheses
 * Left recursion (a rule that can reach itself before any character) is refused, as in
 * llama.cpp. Matching works on Unicode code points; a token may end inside a multi-byte
 * character when the character's possible values can still match.
 *
 *   e0_grammar   the parsed rules, immutable: shared by every request that uses it
 *   e0_gmatch    where the text so far stands: the set of parse stacks of a pushdown automaton
 *                (each stack: the grammar positions still to match, top last) and a partly
 *                received UTF-8 character
 *   e0_gsampler  tokens under a grammar: llama.cpp's common sampler order (draw without the
 *                grammar; when the grammar refuses the draw, give every token it refuses -inf and
 *                draw again), end-of-generation tokens only where the grammar may end
 *
 * Everything is bounded: grammar text and size, stack depth and count, the work of one character
 * and of one token's choice (E0_GRAMMAR_MAX_*); a text that would exceed them fails with one error
 * instead of growing. */
#ifndef E0_GRAMMAR_H
#define E0_GRAMMAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/util.h"
#include "engine/sample.h"
#include "text/tokenizer.h"

#define E0_GRAMMAR_MAX_TEXT (1u << 20)      /* bytes of grammar text */
#define E0_GRAMMAR_MAX_ELEMENTS (1u << 20)  /* elements after repetitions are expanded */
#define E0_GRAMMAR_MAX_STACKS 4096          /* parse stacks alive at once (an ambiguous grammar) */
#define E0_GRAMMAR_MAX_DEPTH 2048           /* positions on one stack (nesting) */
#define E0_GRAMMAR_MAX_WORK (1u << 16)      /* work for one character: rule expansions + positions copied / 32 */
#define E0_GRAMMAR_MAX_MASK_WORK (1ull << 27) /* work for one token's choice (every token tried) */

typedef struct e0_grammar e0_grammar;

/* Parse GBNF text (root rule "root"). NULL with one error naming the line and column. */
e0_grammar *e0_grammar_parse(const char *text, size_t len, e0_err *e);
void e0_grammar_free(e0_grammar *g);

/* The grammar of JSON values (llama.cpp's grammars/json.gbnf: an object at the root). */
extern const char e0_grammar_json[];

typedef struct e0_gmatch e0_gmatch;
e0_gmatch *e0_gmatch_new(const e0_grammar *g, e0_err *e);
void e0_gmatch_free(e0_gmatch *m);
void e0_gmatch_reset(e0_gmatch *m);
/* Would text[0..n) be accepted next? (the state does not change) */
bool e0_gmatch_allows(e0_gmatch *m, const char *text, size_t n);
/* Take text[0..n): true, or false (state unchanged) when the grammar refuses it. */
bool e0_gmatch_accept(e0_gmatch *m, const char *text, size_t n);
/* The text so far is a whole match (the generation may end here). */
bool e0_gmatch_can_end(const e0_gmatch *m);
/* ... and nothing more may follow. */
bool e0_gmatch_must_end(const e0_gmatch *m);
/* The last allows / accept was refused because a limit (E0_GRAMMAR_MAX_*) was hit, not by the
 * grammar (the state is unchanged either way). */
bool e0_gmatch_overflow(const e0_gmatch *m);
/* The work done so far (units of E0_GRAMMAR_MAX_WORK), to bound a sequence of tries. */
uint64_t e0_gmatch_work(const e0_gmatch *m);

typedef struct e0_gsampler e0_gsampler;
e0_gsampler *e0_gsampler_new(const e0_grammar *g, const e0_tokenizer *tok, int64_t n_vocab, e0_err *e);
void e0_gsampler_free(e0_gsampler *gs);
/* The next token under the grammar (not yet accepted), or -1 with *e (no token can continue the
 * text, or a limit was hit). */
int e0_gsampler_sample(e0_gsampler *gs, e0_sampler *s, const float *logits, e0_err *e);
/* Whether the grammar allows token id next. */
bool e0_gsampler_allows(e0_gsampler *gs, int32_t id);
/* Record the token that was used (its text advances the grammar; end-of-generation tokens do
 * nothing). false when the grammar refuses it. */
bool e0_gsampler_accept(e0_gsampler *gs, int32_t id);
/* The grammar is complete and nothing may follow: the generation should stop. */
bool e0_gsampler_must_end(const e0_gsampler *gs);

#endif
