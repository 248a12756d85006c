/* grammar_impl.h — what grammar.c (parsing) and grammar_match.c (the matcher) share: the
 * element array a parsed grammar is.
 *
 * Rule r's alternatives start at rule_start[r], each a sequence of elements ended by G_ALT
 * (another alternative follows) or G_END (the rule's last). A character group is G_CHAR or
 * G_CHAR_NOT, each optionally followed by G_RNG_UPPER (turning the character before into a
 * range), then any number of G_CHAR_ALT (+ G_RNG_UPPER) alternatives; G_ANY is one character. */
#ifndef E0_GRAMMAR_IMPL_H
#define E0_GRAMMAR_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { G_END, G_ALT, G_REF, G_CHAR, G_CHAR_NOT, G_RNG_UPPER, G_CHAR_ALT, G_ANY };

typedef struct {
    uint32_t type;
    uint32_t v; /* code point, or rule index for G_REF */
} gel;

struct e0_grammar {
    gel *el;
    size_t n_el;
    uint32_t *rule_start;
    size_t n_rules;
    uint32_t root;
};

/* The end of an alternative. */
static inline bool gel_is_end(const gel *e) { return e->type == G_END || e->type == G_ALT; }

#endif
