/* json_pattern.c — a JSON schema `pattern` (ECMAScript regex subset) as GBNF for the inside of a
 * JSON string (see json_pattern.h).
 *
 * A recursive-descent parser writes GBNF as it reads: alternatives become `( A | B )`, an atom
 * one parenthesized element, a quantifier the same quantifier after it. Every character class —
 * `.`, `[...]`, \d, a literal — is first a set of code point ranges (complemented for `[^...]`,
 * \D, ...), then written for JSON: the characters that need no escape as one GBNF class, and
 * each of `"`, `\` and the control characters in the set as its JSON escape. */
#include "text/json_pattern.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RANGES 512  /* ranges of one character set */
#define MAX_GROUPS 64   /* nested groups */
#define CP_MAX 0x10FFFF

typedef struct {
    uint32_t lo, hi;
} cp_range;

typedef struct {
    cp_range r[MAX_RANGES];
    int n;
    bool full; /* ran out of ranges */
} cp_set;

typedef struct {
    const unsigned char *s;
    size_t n, i;
    e0_strbuf *b;
    e0_err *e;
    int depth;
    bool failed;
} rx;

void e0_gbnf_literal(e0_strbuf *b, const char *s, size_t n) {
    e0_sb_add(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') e0_sb_printf(b, "\\%c", c);
        else if (c < 0x20 || c == 0x7F) e0_sb_printf(b, "\\x%02X", c);
        else e0_sb_add(b, (const char *)&c, 1);
    }
    e0_sb_add(b, "\"", 1);
}

static int rfail(rx *x, const char *what) {
    if (!x->failed) e0_fail(x->e, "pattern: %s (at byte %zu)", what, x->i);
    x->failed = true;
    return -1;
}

/* ---- character sets ---- */

static void set_add(cp_set *s, uint32_t lo, uint32_t hi) {
    if (s->n == MAX_RANGES) {
        s->full = true;
        return;
    }
    s->r[s->n++] = (cp_range){lo, hi};
}

static int cmp_range(const void *a, const void *b) {
    const cp_range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Sorted, overlapping and adjacent ranges merged. */
static void set_norm(cp_set *s) {
    qsort(s->r, (size_t)s->n, sizeof *s->r, cmp_range);
    int k = 0;
    for (int i = 0; i < s->n; i++) {
        if (k && s->r[i].lo <= s->r[k - 1].hi + 1) {
            if (s->r[i].hi > s->r[k - 1].hi) s->r[k - 1].hi = s->r[i].hi;
        } else s->r[k++] = s->r[i];
    }
    s->n = k;
}

/* Every code point not in s (s normalized). */
static void set_invert(cp_set *s) {
    cp_set t = {.n = 0};
    uint32_t next = 0;
    for (int i = 0; i < s->n; i++) {
        if (s->r[i].lo > next) set_add(&t, next, s->r[i].lo - 1);
        next = s->r[i].hi + 1;
    }
    if (next <= CP_MAX) set_add(&t, next, CP_MAX);
    t.full |= s->full;
    *s = t;
}

static void set_merge(cp_set *s, const cp_set *t, bool invert) {
    cp_set u = *t;
    if (invert) set_norm(&u), set_invert(&u);
    for (int i = 0; i < u.n; i++) set_add(s, u.r[i].lo, u.r[i].hi);
    s->full |= u.full;
}

static bool set_has(const cp_set *s, uint32_t c) {
    for (int i = 0; i < s->n; i++)
        if (c >= s->r[i].lo && c <= s->r[i].hi) return true;
    return false;
}

/* \d, \w, \s (ECMAScript's WhiteSpace and LineTerminator), and `.` (all but line terminators) */
static void set_class(cp_set *s, char k) {
    static const uint32_t space[][2] = {{0x09, 0x0D}, {0x20, 0x20},     {0xA0, 0xA0},     {0x1680, 0x1680}, {0x2000, 0x200A},
                                        {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
    if (k == 'd') set_add(s, '0', '9');
    else if (k == 'w') set_add(s, '0', '9'), set_add(s, 'A', 'Z'), set_add(s, '_', '_'), set_add(s, 'a', 'z');
    else if (k == 's')
        for (size_t i = 0; i < sizeof space / sizeof *space; i++) set_add(s, space[i][0], space[i][1]);
    else if (k == '.') set_add(s, 0, 0x09), set_add(s, 0x0B, 0x0C), set_add(s, 0x0E, 0x2027), set_add(s, 0x202A, CP_MAX);
}

/* One class bound: printable ASCII as itself, else an escape. */
static void class_char(e0_strbuf *b, uint32_t c) {
    if (c > 0x20 && c < 0x7F && !strchr("[]\\^-\"", (int)c)) e0_sb_printf(b, "%c", (char)c);
    else if (c < 0x100) e0_sb_printf(b, "\\x%02X", (unsigned)c);
    else if (c < 0x10000) e0_sb_printf(b, "\\u%04X", (unsigned)c);
    else e0_sb_printf(b, "\\U%08X", (unsigned)c);
}

/* The set (normalized) as one GBNF element for JSON string content. */
static int set_emit(rx *x, const cp_set *s) {
    if (s->full) return rfail(x, "a character class with too many ranges");
    /* the characters written as themselves: >= 0x20, not " \ DEL, no surrogates */
    static const cp_range raw[] = {{0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0x7E}, {0x80, 0xD7FF}, {0xE000, CP_MAX}};
    e0_strbuf cls = {0};
    for (int i = 0; i < s->n; i++)
        for (size_t k = 0; k < sizeof raw / sizeof *raw; k++) {
            uint32_t lo = s->r[i].lo > raw[k].lo ? s->r[i].lo : raw[k].lo, hi = s->r[i].hi < raw[k].hi ? s->r[i].hi : raw[k].hi;
            if (lo > hi) continue;
            class_char(&cls, lo);
            if (hi > lo) e0_sb_add(&cls, "-", 1), class_char(&cls, hi);
        }
    int alts = 0;
    e0_sb_add(x->b, "(", 1);
    if (cls.len) e0_sb_printf(x->b, "[%s]", cls.p), alts++;
    free(cls.p);
    static const char short_esc[] = {['\b'] = 'b', ['\t'] = 't', ['\n'] = 'n', ['\f'] = 'f', ['\r'] = 'r'};
    for (uint32_t c = 0; c < 0x80; c++) {
        if ((c >= 0x20 && c != '"' && c != '\\' && c != 0x7F) || !set_has(s, c)) continue;
        char esc[8];
        if (c == '"' || c == '\\') esc[0] = '\\', esc[1] = (char)c, esc[2] = 0;
        else if (c < sizeof short_esc && short_esc[c]) esc[0] = '\\', esc[1] = short_esc[c], esc[2] = 0;
        else snprintf(esc, sizeof esc, "\\u%04x", (unsigned)c);
        if (alts++) e0_sb_add(x->b, " | ", 3);
        e0_gbnf_literal(x->b, esc, strlen(esc));
    }
    e0_sb_add(x->b, ")", 1);
    if (!alts) return rfail(x, "a character class that matches no character");
    return 0;
}

/* ---- the parser ---- */

static bool more(const rx *x) { return x->i < x->n; }
static int peek(const rx *x) { return more(x) ? x->s[x->i] : -1; }

/* One UTF-8 character of the pattern. */
static int utf8_char(rx *x, uint32_t *cp) {
    const unsigned char *p = x->s + x->i;
    size_t left = x->n - x->i;
    uint32_t c = p[0];
    int len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (!len || (size_t)len > left) return rfail(x, "not UTF-8");
    if (len > 1) c &= 0x3F >> (len - 1);
    for (int k = 1; k < len; k++) {
        if ((p[k] & 0xC0) != 0x80) return rfail(x, "not UTF-8");
        c = c << 6 | (p[k] & 0x3F);
    }
    static const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < least[len] || c > CP_MAX || (c >= 0xD800 && c <= 0xDFFF)) return rfail(x, "not UTF-8");
    x->i += (size_t)len;
    *cp = c;
    return 0;
}

static int hex_digits(rx *x, int n, uint32_t *v) {
    *v = 0;
    for (int k = 0; k < n; k++) {
        int c = peek(x);
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return rfail(x, n == 2 ? "\\x needs two hex digits" : "\\u needs four hex digits");
        *v = *v << 4 | (uint32_t)d;
        x->i++;
    }
    return 0;
}

/* After a backslash: the escape's characters into s (in_class: inside [...], where \b is a
 * backspace). 1 when it was a class escape (\d ...), 0 for one character (*cp), -1 on error. */
static int escape(rx *x, cp_set *s, uint32_t *cp, bool in_class) {
    if (!more(x)) return rfail(x, "a pattern ending in a backslash");
    int c = x->s[x->i++];
    if (c && strchr("dwsDWS", c)) {
        cp_set t = {.n = 0};
        set_class(&t, (char)(c | 0x20));
        set_merge(s, &t, c < 'a');
        return 1;
    }
    static const char simple[][2] = {{'t', '\t'}, {'n', '\n'}, {'r', '\r'}, {'f', '\f'}, {'v', '\v'}};
    for (size_t k = 0; k < sizeof simple / sizeof *simple; k++)
        if (c == simple[k][0]) return *cp = (uint32_t)simple[k][1], 0;
    if (c == 'b' && in_class) return *cp = '\b', 0;
    if (c == '0' && !(peek(x) >= '0' && peek(x) <= '9')) return *cp = 0, 0;
    if (c == 'x') return hex_digits(x, 2, cp);
    if (c == 'u') {
        if (peek(x) == '{') return rfail(x, "\\u{...} (Unicode mode) is not supported");
        if (hex_digits(x, 4, cp) < 0) return -1;
        if (*cp >= 0xD800 && *cp <= 0xDFFF) return rfail(x, "\\u escapes of surrogates are not supported");
        return 0;
    }
    if (c == 'b' || c == 'B') return rfail(x, "word boundaries (\\b, \\B) are not supported");
    if (c >= '1' && c <= '9') return rfail(x, "backreferences are not supported");
    if (c == 'p' || c == 'P') return rfail(x, "Unicode property escapes (\\p, \\P) are not supported");
    if (c == 'k') return rfail(x, "named backreferences (\\k) are not supported");
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return rfail(x, "an unknown escape");
    x->i--; /* escaped punctuation, or any other character: itself */
    return utf8_char(x, cp);
}

/* After '[': the class up to ']' as one element. */
static int parse_class(rx *x) {
    cp_set s = {.n = 0};
    bool negate = peek(x) == '^';
    if (negate) x->i++;
    for (;;) {
        if (!more(x)) return rfail(x, "a '[' without its ']'");
        if (peek(x) == ']') {
            x->i++;
            break;
        }
        uint32_t lo, hi;
        int k;
        if (peek(x) == '\\') {
            x->i++;
            if ((k = escape(x, &s, &lo, true)) < 0) return -1;
            if (k == 1) {
                if (peek(x) == '-' && x->i + 1 < x->n && x->s[x->i + 1] != ']') return rfail(x, "a range from a class escape");
                continue;
            }
        } else if (utf8_char(x, &lo) < 0) return -1;
        hi = lo;
        if (peek(x) == '-' && x->i + 1 < x->n && x->s[x->i + 1] != ']') {
            x->i++;
            if (peek(x) == '\\') {
                x->i++;
                cp_set none = {.n = 0};
                if ((k = escape(x, &none, &hi, true)) < 0) return -1;
                if (k == 1) return rfail(x, "a range to a class escape");
            } else if (utf8_char(x, &hi) < 0) return -1;
            if (hi < lo) return rfail(x, "a range out of order");
        }
        set_add(&s, lo, hi);
    }
    set_norm(&s);
    if (negate) set_invert(&s);
    return set_emit(x, &s);
}

static int parse_alt(rx *x, bool top);

/* One atom; 1 when there was none here (| ) or the end). */
static int parse_atom(rx *x) {
    int c = peek(x);
    if (c < 0 || c == '|' || c == ')') return 1;
    if (c == '*' || c == '+' || c == '?') return rfail(x, "a quantifier with nothing to repeat");
    if (c == '^' || c == '$') return rfail(x, "^ and $ are supported only at the start and end of the pattern (or of a top-level alternative)");
    x->i++;
    if (c == '(') {
        if (peek(x) == '?') {
            if (x->i + 1 < x->n && x->s[x->i + 1] == ':') x->i += 2;
            else if (x->i + 2 < x->n && x->s[x->i + 1] == '<' && x->s[x->i + 2] != '=' && x->s[x->i + 2] != '!') {
                x->i += 2; /* a named group: the name is only a name */
                while (more(x) && peek(x) != '>') {
                    int k = peek(x);
                    if (!((k >= 'a' && k <= 'z') || (k >= 'A' && k <= 'Z') || (k >= '0' && k <= '9') || k == '_' || k == '$'))
                        return rfail(x, "a group name of letters, digits, _ and $");
                    x->i++;
                }
                if (!more(x)) return rfail(x, "a group name without its '>'");
                x->i++;
            } else return rfail(x, "lookahead and lookbehind ((?=, (?!, (?<=, (?<!) are not supported");
        }
        if (++x->depth > MAX_GROUPS) return rfail(x, "groups nested more than 64 deep");
        if (parse_alt(x, false) < 0) return -1;
        x->depth--;
        if (peek(x) != ')') return rfail(x, "a '(' without its ')'");
        x->i++;
        return 0;
    }
    cp_set s = {.n = 0};
    uint32_t cp;
    if (c == '[') return parse_class(x);
    if (c == '.') set_class(&s, '.');
    else if (c == '\\') {
        int k = escape(x, &s, &cp, false);
        if (k < 0) return -1;
        if (k == 0) set_add(&s, cp, cp);
    } else {
        if (c == '{') return rfail(x, "a '{' that is not a quantifier (write \\{)");
        x->i--;
        if (utf8_char(x, &cp) < 0) return -1;
        set_add(&s, cp, cp);
    }
    set_norm(&s);
    return set_emit(x, &s);
}

static int number(rx *x, long *v) {
    if (!(peek(x) >= '0' && peek(x) <= '9')) return -1;
    *v = 0;
    while (peek(x) >= '0' && peek(x) <= '9') {
        *v = *v * 10 + (peek(x) - '0');
        if (*v > E0_PATTERN_MAX_REPEAT) return rfail(x, "a repetition count over 1000"), -2;
        x->i++;
    }
    return 0;
}

/* A quantifier after an atom, if any, appended as GBNF. */
static int parse_quant(rx *x) {
    int c = peek(x);
    if (c == '*' || c == '+' || c == '?') {
        x->i++;
        e0_sb_printf(x->b, "%c", c);
    } else if (c == '{') {
        size_t at = x->i++;
        long m, n;
        int r = number(x, &m);
        if (r == -2) return -1;
        if (r < 0) return x->i = at, rfail(x, "a '{' that is not a quantifier (write \\{)");
        n = m;
        if (peek(x) == ',') {
            x->i++;
            n = -1;
            if (peek(x) != '}' && (r = number(x, &n)) < 0) return r == -2 ? -1 : rfail(x, "a malformed {m,n}");
        }
        if (peek(x) != '}') return rfail(x, "a malformed {m,n}");
        x->i++;
        if (n >= 0 && n < m) return rfail(x, "a {m,n} with n < m");
        if (n < 0) e0_sb_printf(x->b, "{%ld,}", m);
        else e0_sb_printf(x->b, "{%ld,%ld}", m, n);
    } else return 0;
    if (peek(x) == '?') x->i++; /* lazy: the same strings */
    c = peek(x);
    if (c == '*' || c == '+' || c == '{' || c == '?') return rfail(x, "a quantifier with nothing to repeat");
    return 0;
}

/* Atoms up to | or ) or the end. At the top level an alternative may start with ^ and end with
 * $; without them any text may come before (after) it. */
static int parse_seq(rx *x, bool top) {
    static const cp_set any = {.r = {{0, CP_MAX}}, .n = 1}; /* any character (not on the stack: groups nest) */
    bool start = false, end = false;
    if (top && peek(x) == '^') x->i++, start = true;
    if (top && !start) {
        if (set_emit(x, &any) < 0) return -1;
        e0_sb_add(x->b, "* ", 2);
    }
    e0_sb_add(x->b, "(\"\"", 3); /* an empty alternative matches the empty string */
    for (;;) {
        if (top && peek(x) == '$' && (x->i + 1 == x->n || x->s[x->i + 1] == '|')) {
            x->i++, end = true;
            break;
        }
        e0_sb_add(x->b, " ", 1);
        int r = parse_atom(x);
        if (r < 0) return -1;
        if (r == 1) break;
        if (parse_quant(x) < 0) return -1;
    }
    e0_sb_add(x->b, ")", 1);
    if (top && !end) {
        e0_sb_add(x->b, " ", 1);
        if (set_emit(x, &any) < 0) return -1;
        e0_sb_add(x->b, "*", 1);
    }
    return 0;
}

static int parse_alt(rx *x, bool top) {
    e0_sb_add(x->b, "(", 1);
    for (;;) {
        if (parse_seq(x, top) < 0) return -1;
        if (peek(x) != '|') break;
        x->i++;
        e0_sb_add(x->b, " | ", 3);
    }
    e0_sb_add(x->b, ")", 1);
    return 0;
}

int e0_pattern_gbnf(const char *re, size_t n, e0_strbuf *b, e0_err *e) {
    rx x = {.s = (const unsigned char *)re, .n = n, .b = b, .e = e};
    if (n > E0_PATTERN_MAX_LEN) return rfail(&x, "longer than 4096 bytes");
    if (parse_alt(&x, true) < 0) return -1;
    if (more(&x)) return rfail(&x, peek(&x) == ')' ? "a ')' without its '('" : "unexpected text");
    return 0;
}
