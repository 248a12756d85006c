/* json_pattern.h — a JSON schema `pattern` (an ECMAScript regular expression) as a GBNF expression
 * for the inside of a JSON string, and the GBNF literal helper the schema translator shares.
 *
 * Search semantics as JSON Schema defines them: a pattern matches a string when it matches some
 * part of it, so an alternative not anchored by ^ (at its start) or $ (at its end) may have any
 * text before or after. Supported: literal characters, `.`, classes `[...]` / `[^...]` with
 * ranges, the escapes \d \D \w \W \s \S \t \n \r \f \v \0 \xHH \uHHHH and escaped punctuation,
 * groups `(...)`, `(?:...)`, `(?<name>...)`, alternation `|`, and the quantifiers `* + ? {n}
 * {n,} {n,m}` (n, m <= 1000; lazy forms are the same language). Refused, with one error naming
 * the construct: lookarounds, backreferences, word boundaries, Unicode property escapes, ^ and $
 * anywhere but the ends of a top-level alternative, classes that match nothing.
 *
 * Every string the expression writes matches the pattern, written as JSON: `"` and `\` as the
 * escapes \" and \\, control characters as \b \t \n \f \r or \u00XX. A character is always
 * written one way (no \u escapes for characters that need none). */
#ifndef E0_JSON_PATTERN_H
#define E0_JSON_PATTERN_H

#include <stddef.h>

#include "base/strbuf.h"
#include "base/util.h"

#define E0_PATTERN_MAX_LEN 4096   /* bytes of a pattern */
#define E0_PATTERN_MAX_REPEAT 1000 /* n and m of {n,m} */

/* Appends to b the GBNF expression (one parenthesized element) for the characters of a JSON
 * string matching pattern re (n bytes). 0, or -1 with one error ("pattern: ..."). */
int e0_pattern_gbnf(const char *re, size_t n, e0_strbuf *b, e0_err *e);

/* Appends bytes s[0..n) to b as a GBNF literal "..." (" and \ escaped, control bytes as \xHH). */
void e0_gbnf_literal(e0_strbuf *b, const char *s, size_t n);

#endif
