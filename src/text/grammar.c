/* grammar.c — GBNF parsing (see grammar.h): text -> the element array of grammar_impl.h, with
 * every rule defined, a root, no left recursion and repetitions rewritten into generated rules
 * (x* -> R ::= x R | ε, x{m,n} -> m copies and n - m nested optional ones). The matcher is
 * grammar_match.c, the token sampler grammar_sample.c. */
#include "text/grammar.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/grammar_impl.h"
#include "text/unicode.h"

typedef struct {
    gel *p;
    size_t n, cap;
} gvec;

typedef struct {
    const char *base, *s, *end;
    char **names;     /* rule names (generated ones: "name_N") */
    bool *defined;
    size_t *first_use; /* offset of the first reference, for "undefined rule" errors */
    gvec *rules;
    size_t n_rules, cap_rules;
    size_t total;     /* elements in all rules */
    e0_err *e;
    bool failed;
} gparser;

static void where(const gparser *p, const char *at, int *line, int *col) {
    *line = 1, *col = 1;
    for (const char *c = p->base; c < at && c < p->end; c++) {
        if (*c == '\n') (*line)++, *col = 1;
        else (*col)++;
    }
}

static int perr(gparser *p, const char *at, const char *what) {
    if (p->failed) return -1;
    int line, col;
    where(p, at, &line, &col);
    p->failed = true;
    return e0_fail(p->e, "grammar: line %d, column %d: %s", line, col, what);
}

static int push(gparser *p, uint32_t rule, uint32_t type, uint32_t v) {
    gvec *r = &p->rules[rule];
    if (p->total >= E0_GRAMMAR_MAX_ELEMENTS) return perr(p, p->s, "the grammar is too large (repetitions expand to more than 1048576 elements)");
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 16;
        gel *n = realloc(r->p, cap * sizeof *n);
        if (!n) return perr(p, p->s, "out of memory");
        r->p = n, r->cap = cap;
    }
    r->p[r->n++] = (gel){type, v};
    p->total++;
    return 0;
}

/* The index of rule `name` (added, undefined, when new). -1 when out of memory. */
static long rule_id(gparser *p, const char *name, size_t len, bool generated) {
    if (!generated)
        for (size_t i = 0; i < p->n_rules; i++)
            if (strlen(p->names[i]) == len && !memcmp(p->names[i], name, len)) return (long)i;
    if (p->n_rules >= (1u << 20)) return perr(p, p->s, "too many rules"), -1;
    if (p->n_rules == p->cap_rules) {
        size_t cap = p->cap_rules ? p->cap_rules * 2 : 32;
        char **nn = realloc(p->names, cap * sizeof *nn);
        if (nn) p->names = nn;
        bool *nd = realloc(p->defined, cap * sizeof *nd);
        if (nd) p->defined = nd;
        size_t *nf = realloc(p->first_use, cap * sizeof *nf);
        if (nf) p->first_use = nf;
        gvec *nr = realloc(p->rules, cap * sizeof *nr);
        if (nr) p->rules = nr;
        if (!nn || !nd || !nf || !nr) return perr(p, p->s, "out of memory"), -1;
        p->cap_rules = cap;
    }
    char *n = malloc(len + 16);
    if (!n) return perr(p, p->s, "out of memory"), -1;
    memcpy(n, name, len);
    n[len] = 0;
    if (generated) snprintf(n + len, 16, "_%zu", p->n_rules);
    size_t i = p->n_rules++;
    p->names[i] = n;
    p->defined[i] = generated;
    p->first_use[i] = (size_t)(p->s - p->base);
    p->rules[i] = (gvec){0};
    return (long)i;
}

static bool word_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* Spaces, tabs and comments; newlines too when inside parentheses (or between rules). */
static void skip_space(gparser *p, bool newlines) {
    while (p->s < p->end) {
        char c = *p->s;
        if (c == ' ' || c == '\t') p->s++;
        else if (c == '#') {
            while (p->s < p->end && *p->s != '\n' && *p->s != '\r') p->s++;
        } else if (newlines && (c == '\n' || c == '\r')) p->s++;
        else break;
    }
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* One character of a literal or class: an escape or a UTF-8 sequence. -1 on error. */
static int parse_char(gparser *p, uint32_t *cp) {
    if (p->s >= p->end) return perr(p, p->s, "unexpected end of the grammar");
    const unsigned char *u = (const unsigned char *)p->s;
    if (*u == '\\') {
        if (p->s + 1 >= p->end) return perr(p, p->s, "unexpected end of the grammar after '\\'");
        char c = p->s[1];
        int digits = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
        if (digits) {
            uint32_t v = 0;
            if (p->end - (p->s + 2) < digits) return perr(p, p->s, "incomplete \\x / \\u / \\U escape");
            for (int i = 0; i < digits; i++) {
                int h = hexval(p->s[2 + i]);
                if (h < 0) return perr(p, p->s, "bad hex digit in an escape");
                v = v << 4 | (uint32_t)h;
            }
            if (v > 0x10FFFF) return perr(p, p->s, "escape beyond U+10FFFF");
            p->s += 2 + digits;
            *cp = v;
            return 0;
        }
        static const char from[] = "nrt\\\"'[]-^/", to[] = "\n\r\t\\\"'[]-^/";
        const char *k = c ? strchr(from, c) : NULL;
        if (!k) return perr(p, p->s, "unknown escape");
        *cp = (unsigned char)to[k - from];
        p->s += 2;
        return 0;
    }
    int n = e0_utf8_valid_prefix(u, (size_t)(p->end - p->s));
    if (n <= 0) return perr(p, p->s, "invalid UTF-8");
    e0_utf8_decode(u, (size_t)n, cp);
    p->s += n;
    return 0;
}

static int parse_alternates(gparser *p, uint32_t rule, bool nested);

/* Copy item[0..n) into rule `rule` `times` times. */
static int push_items(gparser *p, uint32_t rule, const gel *item, size_t n, uint64_t times) {
    for (uint64_t t = 0; t < times; t++)
        for (size_t i = 0; i < n; i++)
            if (push(p, rule, item[i].type, item[i].v) < 0) return -1;
    return 0;
}

/* The repetition at p->s of item[0..n) (already removed from `rule`): appends its expansion. */
static int repeat(gparser *p, uint32_t rule, const gel *item, size_t n) {
    const char *at = p->s;
    uint64_t lo, hi; /* hi = UINT64_MAX: unbounded */
    char op = *p->s++;
    if (op == '*') lo = 0, hi = UINT64_MAX;
    else if (op == '+') lo = 1, hi = UINT64_MAX;
    else if (op == '?') lo = 0, hi = 1;
    else { /* {m}, {m,}, {m,n} */
        skip_space(p, true);
        char *endp;
        if (p->s >= p->end || *p->s < '0' || *p->s > '9') return perr(p, at, "expected a number after '{'");
        lo = strtoull(p->s, &endp, 10); /* the text ends at a non-digit: '}' or ',' is checked below */
        if (endp > p->end) return perr(p, at, "unexpected end of the grammar");
        p->s = endp;
        skip_space(p, true);
        hi = lo;
        if (p->s < p->end && *p->s == ',') {
            p->s++;
            skip_space(p, true);
            hi = UINT64_MAX;
            if (p->s < p->end && *p->s >= '0' && *p->s <= '9') {
                hi = strtoull(p->s, &endp, 10);
                p->s = endp;
                skip_space(p, true);
            }
        }
        if (p->s >= p->end || *p->s != '}') return perr(p, at, "expected '}' to close the repetition");
        p->s++;
        if (hi < lo) return perr(p, at, "repetition {m,n} with n < m");
        if (lo > E0_GRAMMAR_MAX_ELEMENTS || (hi != UINT64_MAX && hi > E0_GRAMMAR_MAX_ELEMENTS))
            return perr(p, at, "the grammar is too large (a repetition count beyond 1048576)");
    }
    if (n == 0) return 0; /* a repetition of nothing ("") is nothing */
    if (push_items(p, rule, item, n, lo) < 0) return -1;
    if (hi == lo) return 0;
    if (hi == UINT64_MAX) { /* S ::= item S | ε */
        long s = rule_id(p, p->names[rule], strlen(p->names[rule]), true);
        if (s < 0 || push_items(p, (uint32_t)s, item, n, 1) < 0 || push(p, (uint32_t)s, G_REF, (uint32_t)s) < 0 ||
            push(p, (uint32_t)s, G_ALT, 0) < 0 || push(p, (uint32_t)s, G_END, 0) < 0)
            return -1;
        return push(p, rule, G_REF, (uint32_t)s);
    }
    /* hi - lo optional copies, nested: T1 ::= item T2 | ε, ..., Tk ::= item | ε */
    long first = -1, prev = -1;
    for (uint64_t k = lo; k < hi; k++) {
        long t = rule_id(p, p->names[rule], strlen(p->names[rule]), true);
        if (t < 0) return -1;
        if (prev >= 0 && (push(p, (uint32_t)prev, G_REF, (uint32_t)t) < 0 || push(p, (uint32_t)prev, G_ALT, 0) < 0 ||
                          push(p, (uint32_t)prev, G_END, 0) < 0))
            return -1;
        if (push_items(p, (uint32_t)t, item, n, 1) < 0) return -1;
        if (first < 0) first = t;
        prev = t;
    }
    if (push(p, (uint32_t)prev, G_ALT, 0) < 0 || push(p, (uint32_t)prev, G_END, 0) < 0) return -1;
    return push(p, rule, G_REF, (uint32_t)first);
}

/* One sequence of items into `rule`, up to '|', ')', the end of the rule or of the text. */
static int parse_sequence(gparser *p, uint32_t rule, bool nested) {
    size_t last = (size_t)-1; /* where the last item starts in the rule (for repetitions) */
    for (;;) {
        skip_space(p, nested);
        if (p->s >= p->end) return 0;
        char c = *p->s;
        size_t start = p->rules[rule].n;
        if (c == '"') {
            p->s++;
            while (p->s < p->end && *p->s != '"') {
                uint32_t cp;
                if (parse_char(p, &cp) < 0 || push(p, rule, G_CHAR, cp) < 0) return -1;
            }
            if (p->s >= p->end) return perr(p, p->s, "unterminated literal (missing '\"')");
            p->s++;
        } else if (c == '[') {
            const char *at = p->s++;
            uint32_t type = G_CHAR;
            if (p->s < p->end && *p->s == '^') p->s++, type = G_CHAR_NOT;
            while (p->s < p->end && *p->s != ']') {
                uint32_t cp;
                if (parse_char(p, &cp) < 0 || push(p, rule, type, cp) < 0) return -1;
                type = G_CHAR_ALT;
                if (p->s + 1 < p->end && *p->s == '-' && p->s[1] != ']') {
                    p->s++;
                    uint32_t up;
                    if (parse_char(p, &up) < 0) return -1;
                    if (up < cp) return perr(p, at, "character range with its end before its start");
                    if (push(p, rule, G_RNG_UPPER, up) < 0) return -1;
                }
            }
            if (p->s >= p->end) return perr(p, at, "unterminated character class (missing ']')");
            if (type == G_CHAR_NOT && push(p, rule, G_ANY, 0) < 0) return -1; /* [^]: any character */
            if (type == G_CHAR && (push(p, rule, G_CHAR, 1) < 0 || push(p, rule, G_RNG_UPPER, 0) < 0))
                return -1; /* []: nothing (the empty range [1, 0]) */
            p->s++;
        } else if (c == '.') {
            p->s++;
            if (push(p, rule, G_ANY, 0) < 0) return -1;
        } else if (c == '(') {
            p->s++;
            long sub = rule_id(p, p->names[rule], strlen(p->names[rule]), true);
            if (sub < 0 || parse_alternates(p, (uint32_t)sub, true) < 0) return -1;
            skip_space(p, true);
            if (p->s >= p->end || *p->s != ')') return perr(p, p->s, "expected ')'");
            p->s++;
            if (push(p, rule, G_REF, (uint32_t)sub) < 0) return -1;
        } else if (word_char(c)) {
            const char *n0 = p->s;
            while (p->s < p->end && word_char(*p->s)) p->s++;
            const char *save = p->s;
            p->s = n0; /* first_use records where the name is */
            long r = rule_id(p, n0, (size_t)(save - n0), false);
            p->s = save;
            if (r < 0 || push(p, rule, G_REF, (uint32_t)r) < 0) return -1;
        } else if (c == '*' || c == '+' || c == '?' || c == '{') {
            if (last == (size_t)-1) return perr(p, p->s, "a repetition with nothing before it");
            gvec *r = &p->rules[rule];
            size_t n = r->n - last;
            gel *item = malloc((n ? n : 1) * sizeof *item);
            if (!item) return perr(p, p->s, "out of memory");
            if (n) memcpy(item, r->p + last, n * sizeof *item);
            r->n = last, p->total -= n;
            int rc = repeat(p, rule, item, n);
            free(item);
            if (rc < 0) return -1;
            last = (size_t)-1; /* x** is refused, as in llama.cpp */
            continue;
        } else return 0;
        last = start;
    }
}

static int parse_alternates(gparser *p, uint32_t rule, bool nested) {
    if (parse_sequence(p, rule, nested) < 0) return -1;
    while (p->s < p->end && *p->s == '|') {
        p->s++;
        if (push(p, rule, G_ALT, 0) < 0) return -1;
        skip_space(p, true);
        if (parse_sequence(p, rule, nested) < 0) return -1;
    }
    return push(p, rule, G_END, 0);
}

/* Rules that can match the empty text (a fixpoint over the rules). */
static void find_nullable(const e0_grammar *g, bool *nullable) {
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t r = 0; r < g->n_rules; r++) {
            if (nullable[r]) continue;
            const gel *e = g->el + g->rule_start[r];
            for (;;) { /* each alternative */
                bool all = true;
                for (; !gel_is_end(e); e++)
                    if (e->type != G_REF || !nullable[e->v]) all = false;
                if (all) {
                    nullable[r] = changed = true;
                    break;
                }
                if (e->type == G_END) break;
                e++;
            }
        }
    }
}

/* A cycle through rules each reached before any character (depth-first, colours 0/1/2). */
static long left_cycle(const e0_grammar *g, const bool *nullable, uint8_t *colour, uint32_t r) {
    colour[r] = 1;
    const gel *e = g->el + g->rule_start[r];
    for (;;) {
        for (; !gel_is_end(e); e++) {
            if (e->type != G_REF) {
                while (!gel_is_end(e)) e++;
                break;
            }
            if (colour[e->v] == 1) return (long)e->v;
            if (colour[e->v] == 0) {
                long c = left_cycle(g, nullable, colour, e->v);
                if (c >= 0) return c;
            }
            if (!nullable[e->v]) {
                while (!gel_is_end(e)) e++;
                break;
            }
        }
        if (e->type == G_END) break;
        e++;
    }
    colour[r] = 2;
    return -1;
}

void e0_grammar_free(e0_grammar *g) {
    if (!g) return;
    free(g->el);
    free(g->rule_start);
    free(g);
}

e0_grammar *e0_grammar_parse(const char *text, size_t len, e0_err *e) {
    if (len > E0_GRAMMAR_MAX_TEXT) return e0_fail(e, "grammar: %zu bytes, more than the %u allowed", len, E0_GRAMMAR_MAX_TEXT), NULL;
    gparser p = {.base = text, .s = text, .end = text + len, .e = e};
    e0_grammar *g = NULL;
    skip_space(&p, true);
    while (p.s < p.end && !p.failed) {
        const char *n0 = p.s;
        while (p.s < p.end && word_char(*p.s)) p.s++;
        if (p.s == n0) {
            perr(&p, p.s, "expected a rule name");
            break;
        }
        const char *n1 = p.s;
        p.s = n0;
        long r = rule_id(&p, n0, (size_t)(n1 - n0), false);
        p.s = n1;
        if (r < 0) break;
        if (p.defined[r]) {
            perr(&p, n0, "rule defined twice");
            break;
        }
        p.defined[r] = true;
        skip_space(&p, false);
        if (p.end - p.s < 3 || memcmp(p.s, "::=", 3)) {
            perr(&p, p.s, "expected '::='");
            break;
        }
        p.s += 3;
        skip_space(&p, true);
        if (parse_alternates(&p, (uint32_t)r, false) < 0) break;
        skip_space(&p, false);
        if (p.s < p.end && *p.s != '\n' && *p.s != '\r') {
            char what[64];
            snprintf(what, sizeof what, "unexpected '%c'", *p.s);
            perr(&p, p.s, what);
            break;
        }
        skip_space(&p, true);
    }
    long root = -1;
    if (!p.failed) {
        for (size_t i = 0; i < p.n_rules; i++) {
            if (!p.defined[i]) {
                char what[160];
                snprintf(what, sizeof what, "undefined rule '%.100s'", p.names[i]);
                perr(&p, p.base + p.first_use[i], what);
                break;
            }
            if (!strcmp(p.names[i], "root")) root = (long)i;
        }
        if (!p.failed && root < 0) e0_fail(e, "grammar: no rule named 'root'"), p.failed = true;
    }
    if (!p.failed) { /* flatten */
        g = calloc(1, sizeof *g);
        if (g) {
            g->n_rules = p.n_rules;
            g->n_el = p.total;
            g->root = (uint32_t)root;
            g->el = malloc((p.total ? p.total : 1) * sizeof *g->el);
            g->rule_start = malloc(p.n_rules * sizeof *g->rule_start);
        }
        if (!g || !g->el || !g->rule_start) {
            e0_fail(e, "out of memory");
            p.failed = true;
        } else {
            size_t at = 0;
            for (size_t i = 0; i < p.n_rules; i++) {
                g->rule_start[i] = (uint32_t)at;
                memcpy(g->el + at, p.rules[i].p, p.rules[i].n * sizeof *g->el);
                at += p.rules[i].n;
            }
            bool *nullable = calloc(p.n_rules, 1);
            uint8_t *colour = calloc(p.n_rules, 1);
            if (!nullable || !colour) e0_fail(e, "out of memory"), p.failed = true;
            else {
                find_nullable(g, nullable);
                for (size_t i = 0; i < p.n_rules && !p.failed; i++) {
                    long c = colour[i] ? -1 : left_cycle(g, nullable, colour, (uint32_t)i);
                    if (c >= 0) {
                        /* generated names carry their parent's name: report that */
                        e0_fail(e, "grammar: rule '%.100s' is left-recursive (it can reach itself before any character)", p.names[c]);
                        p.failed = true;
                    }
                }
            }
            free(nullable);
            free(colour);
        }
    }
    for (size_t i = 0; i < p.n_rules; i++) free(p.names[i]), free(p.rules[i].p);
    free(p.names);
    free(p.defined);
    free(p.first_use);
    free(p.rules);
    if (p.failed) {
        e0_grammar_free(g);
        return NULL;
    }
    return g;
}

/* llama.cpp's grammars/json.gbnf, with exponents of any digits (its [0-9] [1-9]{0,15} refuses e10),
 * the escape \/ and \u escapes that are characters (no lone surrogates) */
const char e0_grammar_json[] =
    "root   ::= object\n"
    "value  ::= object | array | string | number | (\"true\" | \"false\" | \"null\") ws\n"
    "object ::=\n"
    "  \"{\" ws (\n"
    "            string \":\" ws value\n"
    "    (\",\" ws string \":\" ws value)*\n"
    "  )? \"}\" ws\n"
    "array  ::=\n"
    "  \"[\" ws (\n"
    "            value\n"
    "    (\",\" ws value)*\n"
    "  )? \"]\" ws\n"
    "string ::=\n"
    "  \"\\\"\" (\n"
    "    [^\"\\\\\\x7F\\x00-\\x1F] |\n"
    "    \"\\\\\" ([\"\\\\/bfnrt] | \"u\" hex4) # escapes\n"
    "  )* \"\\\"\" ws\n"
    "number ::= (\"-\"? ([0-9] | [1-9] [0-9]{0,15})) (\".\" [0-9]+)? ([eE] [-+]? [0-9]{1,16})? ws\n"
    "# a character, or a surrogate pair (a lone surrogate is not Unicode)\n"
    "hex4 ::= [0-9a-cA-Ce-fE-F] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2} |\n"
    "  [dD] [89abAB] [0-9a-fA-F]{2} \"\\\\u\" [dD] [c-fC-F] [0-9a-fA-F]{2}\n"
    "# Optional space: by convention, applied in this grammar after literal chars when allowed\n"
    "ws ::= | \" \" | \"\\n\" [ \\t]{0,20}\n";
