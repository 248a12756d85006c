/* jinja_lex.c — turns template source into tokens, applying jinja2's whitespace rules exactly:
 * newline normalisation and dropping one trailing newline, `{%- -%}`-style stripping,
 * lstrip_blocks (spaces/tabs before a block or comment tag at line start) and trim_blocks (the
 * newline right after a block or comment tag), `{% raw %}` blocks and `{# comments #}`. */
#include <stdlib.h>
#include <string.h>

#include "text/jinja/jinja_internal.h"

typedef struct lexer {
    jctx *c;
    const char *s;
    size_t n, pos;
    int line;
    jtok *v;
    size_t nt, cap;
} lexer;

static jtok *push(lexer *L, jtok_kind k, const char *s, size_t n) {
    if (L->nt == L->cap) {
        size_t cap = L->cap ? L->cap * 2 : 256;
        jtok *nv = jalloc(L->c, cap * sizeof *nv);
        if (L->nt) memcpy(nv, L->v, L->nt * sizeof *nv);
        L->v = nv;
        L->cap = cap;
    }
    jtok *t = &L->v[L->nt++];
    memset(t, 0, sizeof *t);
    t->k = k;
    t->line = L->line;
    t->s = s;
    t->n = n;
    return t;
}

static int count_nl(const char *s, size_t n) {
    int k = 0;
    for (size_t i = 0; i < n; i++) k += s[i] == '\n';
    return k;
}

static bool is_ws(char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v'; }

/* Advance over consumed source, keeping the line count. */
static void advance(lexer *L, size_t to) {
    L->line += count_nl(L->s + L->pos, to - L->pos);
    L->pos = to;
}

/* Emit the text s[a, b) before a tag, applying '-' stripping or lstrip_blocks. */
static void emit_text(lexer *L, size_t a, size_t b, char mod, bool lstrip_kind, bool line_starting) {
    const char *s = L->s;
    if (mod == '-') {
        while (b > a && is_ws(s[b - 1])) b--;
    } else if (mod != '+' && lstrip_kind) {
        size_t l = b;
        while (l > a && s[l - 1] != '\n') l--;
        bool only_ws = l < b;
        for (size_t i = l; i < b; i++)
            if (!is_ws(s[i])) only_ws = false;
        if ((l > a || line_starting) && only_ws) b = l;
    }
    if (b > a) {
        int line = L->line;
        jtok *t = push(L, TK_TEXT, s + a, b - a);
        t->line = line;
    }
}

/* Python-style escapes inside a string literal. */
static void unescape(lexer *L, jtok *t, const char *s, size_t n) {
    char *o = jalloc(L->c, n + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\\' || i + 1 >= n) { o[k++] = s[i]; continue; }
        char e = s[++i];
        int hex = 0;
        switch (e) {
        case 'n': o[k++] = '\n'; break;
        case 't': o[k++] = '\t'; break;
        case 'r': o[k++] = '\r'; break;
        case '\\': o[k++] = '\\'; break;
        case '\'': o[k++] = '\''; break;
        case '"': o[k++] = '"'; break;
        case 'a': o[k++] = '\a'; break;
        case 'b': o[k++] = '\b'; break;
        case 'f': o[k++] = '\f'; break;
        case 'v': o[k++] = '\v'; break;
        case '\n': break;
        case 'x': hex = 2; break;
        case 'u': hex = 4; break;
        case 'U': hex = 8; break;
        default:
            if (e >= '0' && e <= '7') {
                uint32_t cp = 0;
                int d = 0;
                for (; d < 3 && i < n && s[i] >= '0' && s[i] <= '7'; d++, i++) cp = cp * 8 + (uint32_t)(s[i] - '0');
                i--;
                k += ju_encode(cp, o + k);
            } else {
                o[k++] = '\\';
                o[k++] = e;
            }
        }
        if (hex) {
            uint32_t cp = 0;
            for (int d = 0; d < hex; d++) {
                char h = i + 1 < n ? s[i + 1] : 0;
                int v = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
                if (v < 0) jfail_at(L->c, t->line, "bad \\%c escape in string literal", e);
                cp = cp * 16 + (uint32_t)v;
                i++;
            }
            if (cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000)) jfail_at(L->c, t->line, "bad escape in string literal");
            k += ju_encode(cp, o + k);
        }
    }
    o[k] = 0;
    t->s = o;
    t->n = k;
}

static const char *const OPS2[] = {"//", "**", "==", "!=", "<=", ">=", NULL};
static const char OPS1[] = "+-/*%~[](){}<>=.:|,;!";

/* Tokens of one {{ }} or {% %} tag, up to and including its end. Returns the end's modifier. */
static char lex_tag(lexer *L, bool block) {
    jctx *c = L->c;
    const char *s = L->s;
    int depth = 0; /* brackets: an end marker inside them is not the end */
    for (;;) {
        size_t p = L->pos;
        while (p < L->n && is_ws(s[p])) p++;
        advance(L, p);
        if (p >= L->n) jfail_at(c, L->line, "unexpected end of template (unclosed %s)", block ? "'{%'" : "'{{'");
        char endc = block ? '%' : '}';
        if (depth == 0) {
            char mod = 0;
            size_t q = p;
            if ((s[q] == '-' || s[q] == '+') && q + 2 < L->n && s[q + 1] == endc && s[q + 2] == '}') mod = s[q++];
            if (q + 1 < L->n && s[q] == endc && s[q + 1] == '}') {
                push(L, block ? TK_BLOCK_END : TK_VAR_END, NULL, 0);
                advance(L, q + 2);
                return mod ? mod : ' ';
            }
        }
        jtok *t;
        char ch = s[p];
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_') {
            size_t q = p;
            while (q < L->n && ((s[q] >= 'a' && s[q] <= 'z') || (s[q] >= 'A' && s[q] <= 'Z') || s[q] == '_' || (s[q] >= '0' && s[q] <= '9'))) q++;
            push(L, TK_NAME, jstrndup(c, s + p, q - p), q - p);
            advance(L, q);
        } else if (ch >= '0' && ch <= '9') {
            size_t q = p;
            char num[64];
            size_t k = 0;
            bool flt = false;
            while (q < L->n && ((s[q] >= '0' && s[q] <= '9') || s[q] == '_')) { if (s[q] != '_' && k < 63) num[k++] = s[q]; q++; }
            if (q + 1 < L->n && s[q] == '.' && s[q + 1] >= '0' && s[q + 1] <= '9') {
                flt = true;
                if (k < 63) num[k++] = '.';
                q++;
                while (q < L->n && ((s[q] >= '0' && s[q] <= '9') || s[q] == '_')) { if (s[q] != '_' && k < 63) num[k++] = s[q]; q++; }
            }
            if (q < L->n && (s[q] == 'e' || s[q] == 'E')) {
                size_t r = q + 1;
                if (r < L->n && (s[r] == '+' || s[r] == '-')) r++;
                if (r < L->n && s[r] >= '0' && s[r] <= '9') {
                    flt = true;
                    while (q < r && k < 63) num[k++] = s[q++];
                    while (q < L->n && s[q] >= '0' && s[q] <= '9') { if (k < 63) num[k++] = s[q]; q++; }
                }
            }
            num[k] = 0;
            t = push(L, flt ? TK_FLOAT : TK_INT, NULL, 0);
            if (flt) t->f = strtod(num, NULL);
            else {
                char *end;
                unsigned long long v = strtoull(num, &end, 10);
                if (k > 18 && (k > 19 || v > (unsigned long long)INT64_MAX)) jfail_at(c, L->line, "integer literal too large");
                t->i = (int64_t)v;
            }
            advance(L, q);
        } else if (ch == '\'' || ch == '"') {
            size_t q = p + 1;
            while (q < L->n && s[q] != ch) q += s[q] == '\\' ? 2 : 1;
            if (q >= L->n) jfail_at(c, L->line, "unterminated string literal");
            t = push(L, TK_STRING, NULL, 0);
            unescape(L, t, s + p + 1, q - p - 1);
            advance(L, q + 1);
        } else {
            size_t len = 0;
            for (int i = 0; OPS2[i]; i++)
                if (p + 1 < L->n && s[p] == OPS2[i][0] && s[p + 1] == OPS2[i][1]) len = 2;
            if (!len && strchr(OPS1, ch) && ch) len = 1;
            if (!len || (len == 1 && ch == '!')) jfail_at(c, L->line, "unexpected character '%c' in tag", ch);
            if (ch == '(' || ch == '[' || ch == '{') depth++;
            if ((ch == ')' || ch == ']' || ch == '}') && depth > 0) depth--;
            push(L, TK_OP, s + p, len);
            advance(L, p + len);
        }
    }
}

/* Position of "{%" [-+]? ws* "endraw" ws* [-+]? "%}" from `from`, with its parts. */
static bool find_endraw(lexer *L, size_t from, size_t *start, char *mod_in, size_t *end, char *mod_out) {
    const char *s = L->s;
    for (size_t p = from; p + 1 < L->n; p++) {
        if (s[p] != '{' || s[p + 1] != '%') continue;
        size_t q = p + 2;
        char mi = 0;
        if (q < L->n && (s[q] == '-' || s[q] == '+')) mi = s[q++];
        while (q < L->n && is_ws(s[q])) q++;
        if (q + 6 > L->n || memcmp(s + q, "endraw", 6)) continue;
        q += 6;
        while (q < L->n && is_ws(s[q])) q++;
        char mo = 0;
        if (q < L->n && (s[q] == '-' || s[q] == '+')) mo = s[q++];
        if (q + 1 < L->n && s[q] == '%' && s[q + 1] == '}') {
            *start = p; *mod_in = mi; *end = q + 2; *mod_out = mo;
            return true;
        }
    }
    return false;
}

/* After a block/comment end: '-' strips following whitespace, default trims one newline. */
static void after_end(lexer *L, char mod, bool trim) {
    size_t p = L->pos;
    if (mod == '-') while (p < L->n && is_ws(L->s[p])) p++;
    else if (mod != '+' && trim && p < L->n && L->s[p] == '\n') p++;
    advance(L, p);
}

jtok *jlex(jctx *c, const char *src, size_t len, size_t *ntok) {
    /* newline normalisation (\r\n, \r -> \n) and dropping one trailing newline, as jinja2 does */
    char *s = jalloc(c, len + 1);
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '\r') { s[n++] = '\n'; if (i + 1 < len && src[i + 1] == '\n') i++; }
        else s[n++] = src[i];
    }
    if (n && s[n - 1] == '\n') n--;
    lexer L = {.c = c, .s = s, .n = n, .line = 1};
    bool line_starting = true;
    while (L.pos < n) {
        jstep(c, 1);
        /* next tag start */
        size_t p = L.pos;
        const char *tag = NULL;
        while (p + 1 < n) {
            const char *q = memchr(s + p, '{', n - p - 1);
            if (!q) { p = n; break; }
            p = (size_t)(q - s);
            if (s[p + 1] == '{' || s[p + 1] == '%' || s[p + 1] == '#') { tag = s + p; break; }
            p++;
        }
        if (!tag) { emit_text(&L, L.pos, n, 0, false, false); advance(&L, n); break; }
        char kind = tag[1];
        char mod = p + 2 < n && (s[p + 2] == '-' || s[p + 2] == '+') ? s[p + 2] : 0;
        size_t after = p + 2 + (mod ? 1 : 0);
        /* {% raw %} */
        if (kind == '%') {
            size_t q = after;
            while (q < n && is_ws(s[q])) q++;
            if (q + 3 <= n && !memcmp(s + q, "raw", 3)) {
                size_t r = q + 3;
                while (r < n && is_ws(s[r])) r++;
                char mo = 0;
                if (r < n && s[r] == '-') mo = s[r++];
                if (r + 1 < n && s[r] == '%' && s[r + 1] == '}') {
                    emit_text(&L, L.pos, p, mod, true, line_starting);
                    advance(&L, r + 2);
                    if (mo == '-') after_end(&L, '-', false);
                    size_t st, en;
                    char mi, mo2;
                    if (!find_endraw(&L, L.pos, &st, &mi, &en, &mo2)) jfail_at(c, L.line, "missing {%% endraw %%}");
                    emit_text(&L, L.pos, st, mi, true, false);
                    advance(&L, en);
                    after_end(&L, mo2, true);
                    line_starting = L.pos > 0 && s[L.pos - 1] == '\n';
                    continue;
                }
            }
        }
        emit_text(&L, L.pos, p, mod, kind != '{', line_starting);
        advance(&L, after);
        if (kind == '#') {
            const char *e = NULL;
            for (size_t q = after; q + 1 < n; q++)
                if (s[q] == '#' && s[q + 1] == '}') { e = s + q; break; }
            if (!e) jfail_at(c, L.line, "missing end of comment tag");
            size_t q = (size_t)(e - s);
            char emod = q > after && (s[q - 1] == '-' || s[q - 1] == '+') ? s[q - 1] : 0;
            advance(&L, q + 2);
            after_end(&L, emod, true);
        } else {
            push(&L, kind == '%' ? TK_BLOCK_BEGIN : TK_VAR_BEGIN, NULL, 0);
            char emod = lex_tag(&L, kind == '%');
            after_end(&L, emod, kind == '%');
        }
        line_starting = L.pos > 0 && s[L.pos - 1] == '\n';
    }
    push(&L, TK_EOF, NULL, 0);
    *ntok = L.nt;
    return L.v;
}
