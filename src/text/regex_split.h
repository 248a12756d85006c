/* regex_split.h — a small backtracking regex matcher over Unicode code points, just big enough
 * for the pre-tokenizer split patterns of llama.cpp (patterns are data, not code).
 *
 * Supported: alternation |, non-capturing groups (?:...) and plain (...) (not quantified),
 * case-insensitive groups (?i:...) (ASCII case folding), lookahead (?=...) (?!...), anchors ^ $
 * (start/end of the chunk), '.', classes [...] and [^...] with ranges, escapes \s \S \d \D \w \W
 * \p{L} \p{N} \p{P} \p{S} \p{M} \p{Z} \p{C} (and \P{..}), \r \n \t \f \v \xHH \x{H..} \uHHHH and escaped
 * punctuation, greedy quantifiers * + ? {n} {n,} {n,m} on single-character atoms. Anything else
 * is a compile error naming the construct. Semantics are ECMAScript's (leftmost alternative
 * first, greedy with backtracking), which is what llama.cpp's std::regex uses.
 *
 * Code points are matched as given; the caller maps non-ASCII whitespace to U+000B and invalid
 * bytes to U+FFFD beforehand, exactly as llama.cpp's unicode_regex_split does. */
#ifndef E0_REGEX_SPLIT_H
#define E0_REGEX_SPLIT_H

#include <stddef.h>
#include <stdint.h>

#include "base/util.h"

typedef struct e0_regex e0_regex;

e0_regex *e0_regex_compile(const char *pattern, e0_err *e);
void e0_regex_free(e0_regex *r);

/* A growable list of chunk lengths (in code points). */
typedef struct e0_lens {
    size_t *v;
    size_t n, cap;
} e0_lens;
int e0_lens_push(e0_lens *l, size_t x, e0_err *e);

/* Refine a split: each input chunk (lengths in `in`, covering s) is scanned independently like
 * std::regex_iterator; matches and the gaps between them both become chunks of `out` (which is
 * reset first). Returns 0, or -1 with *e. */
int e0_regex_split(const e0_regex *r, const uint32_t *s, const e0_lens *in, e0_lens *out, e0_err *e);

#endif
