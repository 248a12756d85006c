/* fuzz_grammar.c — libFuzzer target: GBNF grammars (src/text/grammar.c), parsing and matching.
 *
 * Input: GRAMMAR, optionally followed by a NUL byte and TEXT. A grammar that parses is matched
 * against TEXT in pieces of 1..4 bytes (the first byte of each piece says how many follow, as
 * tokens would). Checked: a parse either gives a grammar or an error message; allows() agrees
 * with accept() and leaves the state as it was; a refused piece changes nothing; must_end
 * implies can_end; the limits keep every input fast (feeding stops at the first limit, as
 * generation does). Inputs above FUZZ_GRAMMAR_MAX bytes are
 * skipped. */
#include "fuzz_common.h"

#include "text/grammar.h"

#define FUZZ_GRAMMAR_MAX (16u << 10)

int fuzz_grammar_init(void) { return 0; }

int fuzz_grammar_one(const uint8_t *data, size_t size) {
    if (size > FUZZ_GRAMMAR_MAX) return 0;
    const char *src = (const char *)data;
    const char *nul = memchr(src, 0, size);
    size_t glen = nul ? (size_t)(nul - src) : size;
    e0_err e = {{0}};
    e0_grammar *g = e0_grammar_parse(src, glen, &e);
    if (!g) {
        FUZZ_CHECK(e.msg[0], "a failed parse without a message");
        return 0;
    }
    e0_gmatch *m = e0_gmatch_new(g, &e);
    if (!m) {
        FUZZ_CHECK(strstr(e.msg, "limits"), "a matcher refused without the limits message: %s", e.msg);
        e0_grammar_free(g);
        return 0;
    }
    const uint8_t *t = nul ? (const uint8_t *)nul + 1 : NULL, *end = data + size;
    while (t && t < end) {
        size_t n = (size_t)(*t++ % 4) + 1;
        if (n > (size_t)(end - t)) n = (size_t)(end - t);
        if (!n) break;
        bool could_end = e0_gmatch_can_end(m), allowed = e0_gmatch_allows(m, (const char *)t, n);
        FUZZ_CHECK(e0_gmatch_can_end(m) == could_end, "allows() changed the state");
        bool took = e0_gmatch_accept(m, (const char *)t, n);
        FUZZ_CHECK(took == allowed, "allows() said %d, accept() %d", allowed, took);
        if (!took) FUZZ_CHECK(e0_gmatch_can_end(m) == could_end, "a refused piece changed the state");
        if (!took && e0_gmatch_overflow(m)) break; /* a limit: generation would stop with an error here */
        FUZZ_CHECK(!e0_gmatch_must_end(m) || e0_gmatch_can_end(m), "must_end without can_end");
        t += n;
    }
    e0_gmatch_free(m);
    e0_grammar_free(g);
    return 0;
}

FUZZ_ENTRY_POINTS(grammar)
