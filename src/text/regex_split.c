/* regex_split.c — compile a split pattern into a small tree and match it by backtracking over
 * code points; split chunks the way llama.cpp's unicode_regex_split_stl does.
 *
 * Quantified groups: a group that can only ever match one code point — lookaheads on that same
 * code point followed by one single-character atom, e.g. ((?=[\p{L}])([^a-z])) of the o200k and
 * tekken patterns — is compiled into a single-character node whose test is the conjunction of
 * those classes ("terms"), so X* over it is an iterative loop like [..]*. Any other group may
 * carry a bounded quantifier (?, {n,m}), matched by recursion (depth <= m); an unbounded one is
 * a compile error. */
#include "text/regex_split.h"

#include <stdlib.h>
#include <string.h>

#include "text/unicode.h"

/* ---- compiled form ---- */

enum item_kind { IT_RANGE, IT_CAT, IT_SPACE, IT_DIGIT, IT_WORD, IT_ANY_BUT_NL };
typedef struct cls_item {
    int kind;
    int negated;      /* for \S \D \W \P{..} inside a class */
    uint32_t lo, hi;  /* IT_RANGE */
    unsigned cat;     /* IT_CAT: E0_UCAT_* mask */
} cls_item;

typedef struct rx_class {
    int negated;
    int icase; /* ASCII case-insensitive */
    int n, cap;
    cls_item *items;
} rx_class;

enum node_kind { ND_CLASS, ND_GROUP, ND_LOOK, ND_START, ND_END };
struct rx_alt;
/* One test of a single-character node made from a group: the code point must match cls
 * (negated: must not). */
typedef struct rx_term {
    const rx_class *cls;
    int negated;
} rx_term;
typedef struct rx_node {
    int kind;
    int min, max;        /* ND_CLASS / ND_GROUP repetition; max < 0 means unbounded (ND_CLASS only) */
    int loop_id;         /* ND_CLASS with max < 0: index of its memo slot; -1 = no memo */
    rx_class cls;        /* ND_CLASS (unused when n_terms > 0) */
    rx_term *terms;      /* ND_CLASS made from a group: all must hold (they point into alt) */
    int n_terms;
    struct rx_alt *alt;  /* ND_GROUP, ND_LOOK; a group turned into an ND_CLASS keeps it (owner) */
    int look_negated;    /* ND_LOOK */
} rx_node;

typedef struct rx_seq {
    int n, cap;
    rx_node *nodes;
} rx_seq;

typedef struct rx_alt {
    int n, cap;
    rx_seq *seqs;
} rx_alt;

struct e0_regex {
    rx_alt *root;
    int n_loops; /* unbounded single-class loops (memo slots) */
};

/* ---- parser ---- */

typedef struct parser {
    const uint32_t *p; /* pattern code points */
    size_t n, i;
    int icase;
    int depth;
    int in_rep;  /* inside a repeated group: loops there get no memo */
    int n_loops;
    e0_err *e;
    const char *src;
} parser;

#define MAX_DEPTH 32

static void *grow(void *v, int *cap, int need, size_t elem) {
    if (need <= *cap) return v;
    int nc = *cap ? *cap * 2 : 4;
    while (nc < need) nc *= 2;
    void *nv = realloc(v, (size_t)nc * elem);
    if (!nv) return NULL;
    memset((char *)nv + (size_t)*cap * elem, 0, (size_t)(nc - *cap) * elem);
    *cap = nc;
    return nv;
}

static int perr(parser *ps, const char *what) {
    return e0_fail(ps->e, "regex '%s': %s at position %zu", ps->src, what, ps->i);
}

static int cls_add(parser *ps, rx_class *c, cls_item it) {
    cls_item *v = grow(c->items, &c->cap, c->n + 1, sizeof *v);
    if (!v) return perr(ps, "out of memory");
    c->items = v;
    c->items[c->n++] = it;
    return 0;
}

static int peek(parser *ps, size_t k, uint32_t *cp) {
    if (ps->i + k >= ps->n) return 0;
    *cp = ps->p[ps->i + k];
    return 1;
}

static int hexval(uint32_t c) {
    if (c >= '0' && c <= '9') return (int)(c - '0');
    if (c >= 'a' && c <= 'f') return (int)(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') return (int)(c - 'A' + 10);
    return -1;
}

/* Parse an escape after the backslash (ps->i at the escaped char). Produces either a literal
 * code point (*lit, returns 1) or a class item (*it, returns 2); -1 on error. */
static int parse_escape(parser *ps, uint32_t *lit, cls_item *it) {
    uint32_t c;
    if (!peek(ps, 0, &c)) return perr(ps, "trailing backslash");
    ps->i++;
    memset(it, 0, sizeof *it);
    switch (c) {
    case 's': it->kind = IT_SPACE; return 2;
    case 'S': it->kind = IT_SPACE; it->negated = 1; return 2;
    case 'd': it->kind = IT_DIGIT; return 2;
    case 'D': it->kind = IT_DIGIT; it->negated = 1; return 2;
    case 'w': it->kind = IT_WORD; return 2;
    case 'W': it->kind = IT_WORD; it->negated = 1; return 2;
    case 'r': *lit = '\r'; return 1;
    case 'n': *lit = '\n'; return 1;
    case 't': *lit = '\t'; return 1;
    case 'f': *lit = '\f'; return 1;
    case 'v': *lit = '\v'; return 1;
    case 'p':
    case 'P': {
        /* \p{X}: one-letter general category group only. */
        uint32_t open, name, close;
        if (!peek(ps, 0, &open) || open != '{' || !peek(ps, 1, &name) || !peek(ps, 2, &close) || close != '}')
            return perr(ps, "unsupported \\p{...} (only one-letter categories L N P S M Z C)");
        unsigned cat;
        switch (name) {
        case 'L': cat = E0_UCAT_LETTER; break;
        case 'N': cat = E0_UCAT_NUMBER; break;
        case 'P': cat = E0_UCAT_PUNCT; break;
        case 'S': cat = E0_UCAT_SYMBOL; break;
        case 'M': cat = E0_UCAT_MARK; break;
        case 'Z': cat = E0_UCAT_SEPARATOR; break;
        case 'C': cat = E0_UCAT_CONTROL | E0_UCAT_UNDEFINED; break;
        default: return perr(ps, "unsupported \\p{...} category");
        }
        ps->i += 3;
        it->kind = IT_CAT;
        it->cat = cat;
        it->negated = c == 'P';
        return 2;
    }
    case 'x':
    case 'u': {
        int nd = c == 'x' ? 2 : 4;
        uint32_t v = 0, brace;
        if (c == 'x' && peek(ps, 0, &brace) && brace == '{') {
            /* \x{H...}: any code point */
            ps->i++;
            int k = 0;
            uint32_t h;
            while (peek(ps, 0, &h) && hexval(h) >= 0 && k < 6) v = v * 16 + (uint32_t)hexval(h), ps->i++, k++;
            if (k == 0 || !peek(ps, 0, &h) || h != '}' || v > 0x10FFFF) return perr(ps, "bad \\x{...} escape");
            ps->i++;
            *lit = v;
            return 1;
        }
        for (int k = 0; k < nd; k++) {
            uint32_t h;
            if (!peek(ps, 0, &h) || hexval(h) < 0) return perr(ps, "bad hex escape");
            v = v * 16 + (uint32_t)hexval(h);
            ps->i++;
        }
        *lit = v;
        return 1;
    }
    default:
        /* Escaped punctuation is literal; escaped letters/digits we do not know are errors. */
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
            return perr(ps, "unsupported escape");
        *lit = c;
        return 1;
    }
}

static int parse_class(parser *ps, rx_class *c) {
    /* ps->i is just after '[' */
    uint32_t cp;
    c->icase = ps->icase;
    if (peek(ps, 0, &cp) && cp == '^') {
        c->negated = 1;
        ps->i++;
    }
    int first = 1;
    for (;;) {
        if (!peek(ps, 0, &cp)) return perr(ps, "unterminated class");
        if (cp == ']' && !first) {
            ps->i++;
            return 0;
        }
        first = 0;
        uint32_t lo;
        cls_item it;
        ps->i++;
        if (cp == '\\') {
            int r = parse_escape(ps, &lo, &it);
            if (r < 0) return -1;
            if (r == 2) {
                if (cls_add(ps, c, it) < 0) return -1;
                continue;
            }
        } else if (cp == '[') {
            return perr(ps, "nested class");
        } else {
            lo = cp;
        }
        uint32_t hi = lo, dash, next;
        if (peek(ps, 0, &dash) && dash == '-' && peek(ps, 1, &next) && next != ']') {
            ps->i += 2;
            if (next == '\\') {
                int r = parse_escape(ps, &hi, &it);
                if (r < 0) return -1;
                if (r == 2) return perr(ps, "class escape as range end");
            } else {
                hi = next;
            }
            if (hi < lo) return perr(ps, "reversed range");
        }
        memset(&it, 0, sizeof it);
        it.kind = IT_RANGE;
        it.lo = lo;
        it.hi = hi;
        if (cls_add(ps, c, it) < 0) return -1;
    }
}

static rx_alt *parse_alt(parser *ps);
static void free_alt(rx_alt *a);

static int parse_number(parser *ps, int *out) {
    uint32_t c;
    int v = 0, any = 0;
    while (peek(ps, 0, &c) && c >= '0' && c <= '9') {
        v = v * 10 + (int)(c - '0');
        if (v > 100000) return perr(ps, "repeat count too large");
        ps->i++;
        any = 1;
    }
    if (!any) return perr(ps, "bad repeat count");
    *out = v;
    return 0;
}

static int parse_quant(parser *ps, rx_node *nd) {
    uint32_t c;
    nd->min = nd->max = 1;
    if (!peek(ps, 0, &c)) return 0;
    if (c == '*') nd->min = 0, nd->max = -1;
    else if (c == '+') nd->min = 1, nd->max = -1;
    else if (c == '?') nd->min = 0, nd->max = 1;
    else if (c == '{') {
        ps->i++;
        if (parse_number(ps, &nd->min) < 0) return -1;
        nd->max = nd->min;
        if (peek(ps, 0, &c) && c == ',') {
            ps->i++;
            if (peek(ps, 0, &c) && c == '}') nd->max = -1;
            else if (parse_number(ps, &nd->max) < 0) return -1;
        }
        if (!peek(ps, 0, &c) || c != '}') return perr(ps, "bad {n,m}");
        if (nd->max >= 0 && nd->max < nd->min) return perr(ps, "bad {n,m}");
    } else {
        return 0;
    }
    ps->i++;
    if (peek(ps, 0, &c) && (c == '?' || c == '+')) return perr(ps, "lazy/possessive quantifiers are not supported");
    return 0;
}

static int is_quant(uint32_t c) { return c == '*' || c == '+' || c == '?' || c == '{'; }

static void set_loop_id(parser *ps, rx_node *nd) {
    nd->loop_id = nd->max < 0 && !ps->in_rep ? ps->n_loops++ : -1;
}

/* ps->i is just inside a group's '(' (after any "?:"): whether a quantifier follows its ')'.
 * Skips escapes and classes; an unbalanced pattern answers 0 (the parser reports it). */
static int group_is_quantified(const parser *ps) {
    int depth = 1, in_class = 0;
    for (size_t i = ps->i; i < ps->n; i++) {
        uint32_t c = ps->p[i];
        if (c == '\\') {
            i++;
            continue;
        }
        if (in_class) {
            if (c == ']') in_class = 0;
            continue;
        }
        if (c == '[') {
            in_class = 1;
            if (i + 1 < ps->n && ps->p[i + 1] == '^') i++;
            if (i + 1 < ps->n && ps->p[i + 1] == ']') i++; /* a leading ']' is literal */
        } else if (c == '(') {
            depth++;
        } else if (c == ')' && --depth == 0) {
            return i + 1 < ps->n && is_quant(ps->p[i + 1]);
        }
    }
    return 0;
}

/* The terms of a single-character alternative list (see the file comment), appended to
 * t[*n..cap); returns 1 if a is one, 0 if not. */
static int single_char_terms(const rx_alt *a, rx_term *t, int *n, int cap) {
    if (a->n != 1) return 0;
    const rx_seq *s = &a->seqs[0];
    int have_char = 0;
    for (int i = 0; i < s->n; i++) {
        const rx_node *nd = &s->nodes[i];
        if (have_char) return 0; /* nothing may follow the character */
        if (nd->kind == ND_LOOK) {
            int n0 = *n;
            if (!single_char_terms(nd->alt, t, n, cap)) return 0;
            if (nd->look_negated) { /* not(all of them): expressible only for one term */
                if (*n - n0 != 1) return 0;
                t[n0].negated = !t[n0].negated;
            }
        } else if (nd->kind == ND_CLASS && nd->min == 1 && nd->max == 1) {
            if (nd->n_terms) {
                if (*n + nd->n_terms > cap) return 0;
                for (int k = 0; k < nd->n_terms; k++) t[(*n)++] = nd->terms[k];
            } else {
                if (*n >= cap) return 0;
                t[(*n)++] = (rx_term){&nd->cls, 0};
            }
            have_char = 1;
        } else if (nd->kind == ND_GROUP && nd->min == 1 && nd->max == 1) {
            if (!single_char_terms(nd->alt, t, n, cap)) return 0;
            have_char = 1;
        } else {
            return 0;
        }
    }
    return have_char;
}

#define MAX_TERMS 8

/* A quantified group that matches exactly one code point becomes an ND_CLASS loop over its
 * terms (keeping the subtree they point into). Others stay ND_GROUP. */
static int group_to_class(parser *ps, rx_node *nd) {
    rx_term t[MAX_TERMS];
    int n = 0;
    if (!single_char_terms(nd->alt, t, &n, MAX_TERMS)) return 0;
    nd->terms = malloc((size_t)n * sizeof *nd->terms);
    if (!nd->terms) return perr(ps, "out of memory");
    memcpy(nd->terms, t, (size_t)n * sizeof *t);
    nd->n_terms = n;
    nd->kind = ND_CLASS;
    set_loop_id(ps, nd);
    return 0;
}

static int parse_seq(parser *ps, rx_seq *seq) {
    uint32_t c;
    while (peek(ps, 0, &c) && c != '|' && c != ')') {
        rx_node *v = grow(seq->nodes, &seq->cap, seq->n + 1, sizeof *v);
        if (!v) return perr(ps, "out of memory");
        seq->nodes = v;
        rx_node *nd = &seq->nodes[seq->n++];
        memset(nd, 0, sizeof *nd);
        nd->min = nd->max = 1;
        ps->i++;
        if (c == '(') {
            uint32_t q, k;
            int saved_icase = ps->icase;
            nd->kind = ND_GROUP;
            if (peek(ps, 0, &q) && q == '?') {
                if (!peek(ps, 1, &k)) return perr(ps, "bad group");
                if (k == ':') ps->i += 2;
                else if (k == '!' || k == '=') {
                    nd->kind = ND_LOOK;
                    nd->look_negated = k == '!';
                    ps->i += 2;
                } else if (k == 'i' && peek(ps, 2, &q) && q == ':') {
                    ps->icase = 1;
                    ps->i += 3;
                } else {
                    return perr(ps, "unsupported group type");
                }
            }
            if (++ps->depth > MAX_DEPTH) return perr(ps, "groups nested too deeply");
            /* A group followed by a quantifier is parsed as repeated (its inner loops get no
             * memo); look ahead for the quantifier by finding the matching ')'. */
            int rep = nd->kind == ND_GROUP && group_is_quantified(ps);
            ps->in_rep += rep;
            nd->alt = parse_alt(ps);
            ps->in_rep -= rep;
            ps->depth--;
            ps->icase = saved_icase;
            if (!nd->alt) return -1;
            if (!peek(ps, 0, &q) || q != ')') return perr(ps, "missing ')'");
            ps->i++;
            if (peek(ps, 0, &q) && is_quant(q)) {
                if (nd->kind == ND_LOOK) return perr(ps, "quantified lookahead");
                if (parse_quant(ps, nd) < 0) return -1;
                if (group_to_class(ps, nd) < 0) return -1;
                if (nd->kind == ND_GROUP && nd->max < 0)
                    return perr(ps, "unbounded quantifier on a group longer than one character");
            }
            continue;
        }
        if (c == '^' || c == '$') {
            nd->kind = c == '^' ? ND_START : ND_END;
            continue;
        }
        if (is_quant(c)) return perr(ps, "quantifier without operand");
        nd->kind = ND_CLASS;
        nd->cls.icase = ps->icase;
        cls_item it;
        memset(&it, 0, sizeof it);
        if (c == '[') {
            if (parse_class(ps, &nd->cls) < 0) return -1;
        } else if (c == '.') {
            it.kind = IT_ANY_BUT_NL;
            if (cls_add(ps, &nd->cls, it) < 0) return -1;
        } else {
            uint32_t lit = c;
            if (c == '\\') {
                int r = parse_escape(ps, &lit, &it);
                if (r < 0) return -1;
                if (r == 2) {
                    if (cls_add(ps, &nd->cls, it) < 0) return -1;
                    if (parse_quant(ps, nd) < 0) return -1;
                    set_loop_id(ps, nd);
                    continue;
                }
            } else if (c == ']' || c == '}') {
                return perr(ps, "unbalanced bracket");
            }
            it.kind = IT_RANGE;
            it.lo = it.hi = lit;
            if (cls_add(ps, &nd->cls, it) < 0) return -1;
        }
        if (parse_quant(ps, nd) < 0) return -1;
        set_loop_id(ps, nd);
    }
    return 0;
}

static rx_alt *parse_alt(parser *ps) {
    rx_alt *a = calloc(1, sizeof *a);
    if (!a) {
        perr(ps, "out of memory");
        return NULL;
    }
    for (;;) {
        rx_seq *v = grow(a->seqs, &a->cap, a->n + 1, sizeof *v);
        if (!v) {
            perr(ps, "out of memory");
            free_alt(a);
            return NULL;
        }
        a->seqs = v;
        rx_seq *s = &a->seqs[a->n++];
        memset(s, 0, sizeof *s);
        if (parse_seq(ps, s) < 0) {
            free_alt(a);
            return NULL;
        }
        uint32_t c;
        if (peek(ps, 0, &c) && c == '|') {
            ps->i++;
            continue;
        }
        return a;
    }
}

static void free_alt(rx_alt *a) {
    if (!a) return;
    for (int i = 0; i < a->n; i++) {
        rx_seq *s = &a->seqs[i];
        for (int j = 0; j < s->n; j++) {
            free(s->nodes[j].cls.items);
            free(s->nodes[j].terms);
            free_alt(s->nodes[j].alt);
        }
        free(s->nodes);
    }
    free(a->seqs);
    free(a);
}

e0_regex *e0_regex_compile(const char *pattern, e0_err *e) {
    size_t len = strlen(pattern);
    uint32_t *cps = malloc((len + 1) * sizeof *cps);
    e0_regex *r = calloc(1, sizeof *r);
    if (!cps || !r) {
        free(cps);
        free(r);
        e0_fail(e, "out of memory");
        return NULL;
    }
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        size_t k = e0_utf8_decode((const unsigned char *)pattern + i, len - i, &cps[n]);
        if (k == 0) {
            free(cps);
            free(r);
            e0_fail(e, "regex '%s': invalid UTF-8", pattern);
            return NULL;
        }
        i += k;
        n++;
    }
    parser ps = {.p = cps, .n = n, .e = e, .src = pattern};
    r->root = parse_alt(&ps);
    r->n_loops = ps.n_loops;
    if (r->root && ps.i != n) {
        perr(&ps, "unbalanced ')'");
        free_alt(r->root);
        r->root = NULL;
    }
    free(cps);
    if (!r->root) {
        free(r);
        return NULL;
    }
    return r;
}

void e0_regex_free(e0_regex *r) {
    if (!r) return;
    free_alt(r->root);
    free(r);
}

/* ---- matcher ---- */

/* Memo of one unbounded loop X+ / X* within one chunk. Because groups are never quantified, every
 * node has exactly one continuation, whose success depends only on the position it starts at.
 * So: the run of X starting anywhere in [run_lo, run_hi] ends at run_hi, and the continuation is
 * known to fail at every position in [fail_lo, run_hi]. This turns patterns like \s+$ on long
 * whitespace runs from quadratic into linear work across a chunk. */
typedef struct loop_memo {
    bool valid;
    size_t run_lo, run_hi, fail_lo;
} loop_memo;

typedef struct mctx {
    const uint32_t *s;
    size_t n;
    unsigned long steps;
    loop_memo *memo; /* n_loops slots, reset per chunk; NULL = no memo */
} mctx;

/* Bound on backtracking work per match attempt: far above anything the real patterns need. */
#define MAX_STEPS 50000000UL

static int item_match(const cls_item *it, uint32_t c) {
    int m;
    switch (it->kind) {
    case IT_RANGE: m = c >= it->lo && c <= it->hi; break;
    case IT_CAT: m = (e0_ucat(c) & it->cat) != 0; break;
    case IT_SPACE: m = e0_uni_is_space(c); break;
    case IT_DIGIT: m = c >= '0' && c <= '9'; break;
    case IT_WORD: m = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; break;
    default: m = c != '\n' && c != '\r' && c != 0x2028 && c != 0x2029; break;
    }
    return it->negated ? !m : m;
}

static int class_match1(const rx_class *cls, uint32_t c) {
    for (int i = 0; i < cls->n; i++)
        if (item_match(&cls->items[i], c)) return 1;
    return 0;
}

static int class_match(const rx_class *cls, uint32_t c) {
    int m = class_match1(cls, c);
    if (!m && cls->icase && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) m = class_match1(cls, c ^ 0x20);
    return cls->negated ? !m : m;
}

/* The code point test of a single-character node. */
static int node_match(const rx_node *nd, uint32_t c) {
    if (!nd->n_terms) return class_match(&nd->cls, c);
    for (int i = 0; i < nd->n_terms; i++)
        if (class_match(nd->terms[i].cls, c) == nd->terms[i].negated) return 0;
    return 1;
}

/* What to match after a sequence ends: node idx of seq, then `up`. A repetition frame (rep set)
 * resumes the repeated group node seq->nodes[idx] after `count` iterations, the last of which
 * started at `start`. */
typedef struct frame {
    const rx_seq *seq;
    int idx;
    const struct frame *up;
    int rep, count;
    size_t start;
} frame;

static long m_alt(mctx *m, const rx_alt *a, size_t pos, const frame *k);
static long m_seq(mctx *m, const rx_seq *seq, int idx, size_t pos, const frame *k);

/* Greedy repetition of the group node seq->nodes[idx] after `done` iterations (ECMAScript: an
 * iteration beyond the minimum must not match the empty string). */
static long m_rep(mctx *m, const rx_seq *seq, int idx, int done, size_t pos, const frame *k) {
    const rx_node *nd = &seq->nodes[idx];
    if (done < nd->max) {
        frame f = {seq, idx, k, 1, done + 1, pos};
        long r = m_alt(m, nd->alt, pos, &f);
        if (r != -1) return r;
    }
    return done >= nd->min ? m_seq(m, seq, idx + 1, pos, k) : -1;
}

static long m_seq(mctx *m, const rx_seq *seq, int idx, size_t pos, const frame *k) {
    if (++m->steps > MAX_STEPS) return -2;
    if (idx == seq->n) {
        if (!k) return (long)pos;
        if (k->rep) {
            if (pos == k->start && k->count > k->seq->nodes[k->idx].min) return -1; /* empty iteration */
            return m_rep(m, k->seq, k->idx, k->count, pos, k->up);
        }
        return m_seq(m, k->seq, k->idx, pos, k->up);
    }
    const rx_node *nd = &seq->nodes[idx];
    switch (nd->kind) {
    case ND_CLASS: {
        /* Greedy: take as many as allowed, then give back one at a time. */
        loop_memo *lm = nd->loop_id >= 0 && m->memo ? &m->memo[nd->loop_id] : NULL;
        size_t cnt = 0;
        if (lm && lm->valid && pos >= lm->run_lo && pos <= lm->run_hi) {
            cnt = lm->run_hi - pos;
        } else {
            size_t lim = nd->max < 0 ? m->n - pos : (size_t)nd->max;
            while (cnt < lim && pos + cnt < m->n && node_match(nd, m->s[pos + cnt])) cnt++;
            m->steps += cnt;
            if (lm) *lm = (loop_memo){true, pos, pos + cnt, pos + cnt + 1};
        }
        if (cnt < (size_t)nd->min) return -1;
        size_t top = cnt;
        if (lm) { /* positions >= fail_lo are known failures */
            if (lm->fail_lo <= pos + (size_t)nd->min) return -1;
            if (lm->fail_lo <= pos + cnt) top = lm->fail_lo - 1 - pos;
        }
        for (size_t c = top + 1; c-- > (size_t)nd->min;) {
            long r = m_seq(m, seq, idx + 1, pos + c, k);
            if (r != -1) return r;
            if (lm) lm->fail_lo = pos + c;
        }
        return -1;
    }
    case ND_GROUP: {
        if (nd->min != 1 || nd->max != 1) return m_rep(m, seq, idx, 0, pos, k);
        frame f = {seq, idx + 1, k, 0, 0, 0};
        return m_alt(m, nd->alt, pos, &f);
    }
    case ND_LOOK: {
        long r = m_alt(m, nd->alt, pos, NULL);
        if (r == -2) return -2;
        if ((r >= 0) == !nd->look_negated) return m_seq(m, seq, idx + 1, pos, k);
        return -1;
    }
    case ND_START:
        return pos == 0 ? m_seq(m, seq, idx + 1, pos, k) : -1;
    default: /* ND_END */
        return pos == m->n ? m_seq(m, seq, idx + 1, pos, k) : -1;
    }
}

static long m_alt(mctx *m, const rx_alt *a, size_t pos, const frame *k) {
    for (int i = 0; i < a->n; i++) {
        long r = m_seq(m, &a->seqs[i], 0, pos, k);
        if (r != -1) return r;
    }
    return -1;
}

int e0_lens_push(e0_lens *l, size_t x, e0_err *e) {
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 64;
        size_t *v = realloc(l->v, nc * sizeof *v);
        if (!v) return e0_fail(e, "out of memory");
        l->v = v;
        l->cap = nc;
    }
    l->v[l->n++] = x;
    return 0;
}

int e0_regex_split(const e0_regex *r, const uint32_t *s, const e0_lens *in, e0_lens *out, e0_err *e) {
    out->n = 0;
    size_t start = 0;
    loop_memo *memo = calloc((size_t)r->n_loops + 1, sizeof *memo);
    if (!memo) return e0_fail(e, "out of memory");
    for (size_t c = 0; c < in->n; c++) {
        const uint32_t *sub = s + start;
        size_t n = in->v[c], pos = 0, last = 0;
        memset(memo, 0, ((size_t)r->n_loops + 1) * sizeof *memo);
        mctx m = {sub, n, 0, memo};
        while (pos < n) {
            m.steps = 0;
            long end = m_alt(&m, r->root, pos, NULL);
            if (end == -2) {
                free(memo);
                return e0_fail(e, "pre-tokenizer regex: backtracking limit exceeded");
            }
            if (end > (long)pos) {
                if ((pos > last && e0_lens_push(out, pos - last, e) < 0) || e0_lens_push(out, (size_t)end - pos, e) < 0) {
                    free(memo);
                    return -1;
                }
                pos = last = (size_t)end;
            } else {
                pos++; /* no (non-empty) match here: this code point joins the gap */
            }
        }
        if (last < n && e0_lens_push(out, n - last, e) < 0) {
            free(memo);
            return -1;
        }
        start += n;
    }
    free(memo);
    return 0;
}
