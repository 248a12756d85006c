/* jinja_strings.c — Python str semantics on code points for the template language: case
 * mapping (full Unicode, final sigma), strip/split/rsplit/splitlines/replace/find/count, str.format
 * and %-formatting, padding, and the str methods templates call (s.startswith(...), ...). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/jinja/jinja_internal.h"

static const char *const STR_METHODS[] = {"startswith", "endswith", "split", "rsplit", "strip", "lstrip", "rstrip", "upper",
                                          "lower", "title", "capitalize", "replace", "find", "rfind", "index", "rindex",
                                          "count", "format", "join", "splitlines", "isdigit", "isalpha", "isspace",
                                          "isalnum", "islower", "isupper", "center", "ljust", "rjust", "zfill", NULL};

bool jstr_has_method(const char *name) {
    return jname_in(STR_METHODS, name);
}

/* Unicode Case_Ignorable, approximately: apostrophes, dots, colons, modifiers, combining marks. */
static bool case_ignorable(uint32_t cp) {
    return cp == '\'' || cp == '.' || cp == ':' || cp == '^' || cp == '`' || cp == 0xa8 || cp == 0xad || cp == 0xaf ||
           cp == 0xb4 || cp == 0xb7 || cp == 0xb8 || cp == 0x2018 || cp == 0x2019 || cp == 0x2024 || cp == 0x2027 ||
           (cp >= 0x2b0 && cp <= 0x36f) || (cp >= 0x483 && cp <= 0x489) || (cp >= 0x1ab0 && cp <= 0x1aff) ||
           (cp >= 0x1dc0 && cp <= 0x1dff) || (cp >= 0x20d0 && cp <= 0x20ff) || (cp >= 0xfe20 && cp <= 0xfe2f);
}

/* Python's final-sigma context: a capital sigma at i, preceded by a cased letter, lowers to ς unless
 * a cased letter follows (case-ignorable characters are skipped both ways). */
static bool sigma_is_final(const char *s, size_t n, size_t after) {
    while (after < n) {
        size_t adv;
        uint32_t cp = ju_decode(s + after, n - after, &adv);
        if (!case_ignorable(cp)) return !ju_cased(cp);
        after += adv;
    }
    return true;
}

/* Python's str.upper/lower/capitalize/title (mode 'u', 'l', 'c', 't') and jinja2's |title
 * filter ('j': words start after whitespace or -([{<; first letter upper, rest lower), with full
 * case mappings (U+00DF -> "SS") and the final-sigma rule of lower(). */
jval jstr_case(jctx *c, jval s, int mode) {
    jbuf b = {0};
    size_t i = 0, n = s.u.s.n;
    bool prev_cased = false;  /* str.title(): was the previous character cased */
    bool sigma_ctx = false;   /* final-sigma rule: last non-ignorable character was cased */
    bool word_start = true;
    jstep(c, n / 64);
    while (i < n) {
        size_t adv;
        uint32_t cp = ju_decode(s.u.s.s + i, n - i, &adv), out[3];
        int kind;
        bool first_of_word = false;
        if (mode == 'u') kind = 'u';
        else if (mode == 'l') kind = 'l';
        else if (mode == 'c') kind = i == 0 ? 't' : 'l';
        else if (mode == 't') kind = prev_cased ? 'l' : 't';
        else { /* jinja2 |title: item[0].upper() + item[1:].lower() per word */
            bool sep = ju_isspace(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<';
            kind = sep ? 0 : word_start ? 'u' : 'l';
            first_of_word = !sep && word_start;
            word_start = sep;
        }
        int k = 1;
        out[0] = cp;
        if (kind) k = ju_full_case(cp, kind, out);
        if (kind == 'l' && cp == 0x3a3 && sigma_ctx && sigma_is_final(s.u.s.s, n, i + adv)) out[0] = 0x3c2;
        prev_cased = ju_cased(cp);
        if (!case_ignorable(cp)) sigma_ctx = ju_cased(cp);
        if (first_of_word || (mode == 'j' && kind == 0)) sigma_ctx = false; /* item[1:] is lowered on its own */
        if (k == 1 && out[0] == cp) jbuf_put(c, &b, s.u.s.s + i, adv);
        else
            for (int j = 0; j < k; j++) {
                char t[4];
                jbuf_put(c, &b, t, ju_encode(out[j], t));
            }
        i += adv;
    }
    return jv_bufstr(&b);
}

static bool in_chars(uint32_t cp, jval chars) {
    if (chars.t != JT_STR) return ju_isspace(cp);
    size_t i = 0;
    while (i < chars.u.s.n) {
        size_t adv;
        if (ju_decode(chars.u.s.s + i, chars.u.s.n - i, &adv) == cp) return true;
        i += adv;
    }
    return false;
}

jval jstr_strip(jval s, jval chars, bool left, bool right) {
    size_t a = 0, b = s.u.s.n, adv;
    if (left)
        while (a < b && in_chars(ju_decode(s.u.s.s + a, b - a, &adv), chars)) a += adv;
    if (right)
        while (b > a) {
            size_t p = b - 1;
            while (p > a && ((unsigned char)s.u.s.s[p] & 0xc0) == 0x80) p--;
            if (!in_chars(ju_decode(s.u.s.s + p, b - p, &adv), chars)) break;
            b = p;
        }
    return jv_str(s.u.s.s + a, b - a);
}


/* Python str.split / rsplit */
static jval split(jctx *c, jval s, jval sep, int64_t maxsplit, bool from_right, int line) {
    jval out = jv_list(c, 0);
    const char *p = s.u.s.s;
    size_t n = s.u.s.n;
    jstep(c, n / 64);
    if (sep.t == JT_NONE || sep.t == JT_UNDEF) {
        /* whitespace runs; empty strings dropped */
        size_t adv;
        if (!from_right) {
            size_t i = 0;
            while (i < n) {
                while (i < n && ju_isspace(ju_decode(p + i, n - i, &adv))) i += adv;
                if (i >= n) break;
                if (maxsplit >= 0 && (int64_t)out.u.l->n == maxsplit) { /* the rest, trailing space kept */
                    out = jlist_push(c, out, jv_str(p + i, n - i));
                    break;
                }
                size_t st = i;
                while (i < n && !ju_isspace(ju_decode(p + i, n - i, &adv))) i += adv;
                out = jlist_push(c, out, jv_str(p + st, i - st));
            }
            return out;
        }
        jval parts = jv_list(c, 0);
        size_t e = n;
        while (e > 0) {
            jval rest = jstr_strip(jv_str(p, e), jv_none(), false, true);
            e = rest.u.s.n;
            if (e == 0) break;
            if (maxsplit >= 0 && (int64_t)parts.u.l->n == maxsplit) { parts = jlist_push(c, parts, rest); break; }
            size_t st = e;
            while (st > 0) {
                size_t q = st - 1;
                while (q > 0 && ((unsigned char)p[q] & 0xc0) == 0x80) q--;
                if (ju_isspace(ju_decode(p + q, st - q, &adv))) break;
                st = q;
            }
            parts = jlist_push(c, parts, jv_str(p + st, e - st));
            e = st;
        }
        for (size_t i = parts.u.l->n; i > 0; i--) out = jlist_push(c, out, parts.u.l->v[i - 1]);
        return out;
    }
    jneed_str(c, sep, "split", line);
    if (sep.u.s.n == 0) jfail_at(c, line, "empty separator");
    const char *q = sep.u.s.s;
    size_t m = sep.u.s.n;
    if (!from_right) {
        size_t i = 0;
        for (;;) {
            const char *hit = (maxsplit < 0 || (int64_t)out.u.l->n < maxsplit) ? memmem(p + i, n - i, q, m) : NULL;
            if (!hit) { out = jlist_push(c, out, jv_str(p + i, n - i)); return out; }
            out = jlist_push(c, out, jv_str(p + i, (size_t)(hit - p) - i));
            i = (size_t)(hit - p) + m;
        }
    }
    jval parts = jv_list(c, 0);
    size_t e = n;
    for (;;) {
        size_t hit = SIZE_MAX;
        if ((maxsplit < 0 || (int64_t)parts.u.l->n < maxsplit) && e >= m)
            for (size_t k = e - m + 1; k-- > 0;)
                if (!memcmp(p + k, q, m)) { hit = k; break; }
        if (hit == SIZE_MAX) { parts = jlist_push(c, parts, jv_str(p, e)); break; }
        parts = jlist_push(c, parts, jv_str(p + hit + m, e - hit - m));
        e = hit;
    }
    for (size_t i = parts.u.l->n; i > 0; i--) out = jlist_push(c, out, parts.u.l->v[i - 1]);
    return out;
}

jval jstr_replace(jctx *c, jval s, jval old, jval new, int64_t count) {
    jbuf b = {0};
    size_t i = 0, n = s.u.s.n, m = old.u.s.n;
    int64_t done = 0;
    jstep(c, n / 64 + 1);
    if (m == 0) { /* Python inserts `new` between every character and at both ends */
        size_t adv;
        while (count < 0 || done < count) {
            jbuf_put(c, &b, new.u.s.s, new.u.s.n);
            done++;
            if (i >= n) break;
            ju_decode(s.u.s.s + i, n - i, &adv);
            jbuf_put(c, &b, s.u.s.s + i, adv);
            i += adv;
        }
        jbuf_put(c, &b, s.u.s.s + i, n - i);
        return jv_bufstr(&b);
    }
    while (count < 0 || done < count) {
        const char *hit = memmem(s.u.s.s + i, n - i, old.u.s.s, m);
        if (!hit) break;
        size_t h = (size_t)(hit - s.u.s.s);
        jbuf_put(c, &b, s.u.s.s + i, h - i);
        jbuf_put(c, &b, new.u.s.s, new.u.s.n);
        i = h + m;
        done++;
    }
    jbuf_put(c, &b, s.u.s.s + i, n - i);
    return jv_bufstr(&b);
}

static bool is_linebreak(uint32_t cp) {
    return cp == '\n' || cp == '\r' || cp == 0x0b || cp == 0x0c || (cp >= 0x1c && cp <= 0x1e) || cp == 0x85 || cp == 0x2028 ||
           cp == 0x2029;
}

jval jstr_splitlines(jctx *c, jval s, bool keepends) {
    jval out = jv_list(c, 0);
    size_t i = 0, st = 0, n = s.u.s.n, adv;
    while (i < n) {
        uint32_t cp = ju_decode(s.u.s.s + i, n - i, &adv);
        if (!is_linebreak(cp)) { i += adv; continue; }
        size_t e = i;
        i += adv;
        if (cp == '\r' && i < n && s.u.s.s[i] == '\n') i++;
        out = jlist_push(c, out, jv_str(s.u.s.s + st, (keepends ? i : e) - st));
        st = i;
    }
    if (st < n) out = jlist_push(c, out, jv_str(s.u.s.s + st, n - st));
    return out;
}

static bool has_prefix(jctx *c, jval s, jval p, bool suffix, int line) {
    if (p.t == JT_LIST && p.u.l->tuple) {
        for (size_t i = 0; i < p.u.l->n; i++)
            if (has_prefix(c, s, p.u.l->v[i], suffix, line)) return true;
        return false;
    }
    jneed_str(c, p, suffix ? "endswith" : "startswith", line);
    if (p.u.s.n > s.u.s.n) return false;
    return !memcmp(s.u.s.s + (suffix ? s.u.s.n - p.u.s.n : 0), p.u.s.s, p.u.s.n);
}

static int64_t find(jval s, jval sub, bool last) {
    if (sub.u.s.n > s.u.s.n) return -1;
    const char *hit = NULL;
    if (!last) hit = memmem(s.u.s.s, s.u.s.n, sub.u.s.s, sub.u.s.n);
    else
        for (size_t k = s.u.s.n - sub.u.s.n + 1; k-- > 0;)
            if (!memcmp(s.u.s.s + k, sub.u.s.s, sub.u.s.n)) { hit = s.u.s.s + k; break; }
    return hit ? (int64_t)ju_count(s.u.s.s, (size_t)(hit - s.u.s.s)) : -1;
}

static int64_t count_sub(jval s, jval sub) {
    if (sub.u.s.n == 0) return (int64_t)ju_count(s.u.s.s, s.u.s.n) + 1;
    int64_t k = 0;
    size_t i = 0;
    const char *hit;
    while ((hit = memmem(s.u.s.s + i, s.u.s.n - i, sub.u.s.s, sub.u.s.n))) { k++; i = (size_t)(hit - s.u.s.s) + sub.u.s.n; }
    return k;
}

/* Python str.format with {} / {0} / {name} fields and optional !s / !r (no format specs). */
static jval str_format(jctx *c, jval fmt, jcall *a, int line) {
    jbuf b = {0};
    size_t auto_idx = 0, n = fmt.u.s.n;
    const char *s = fmt.u.s.s;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '{' && i + 1 < n && s[i + 1] == '{') { jbuf_putc(c, &b, '{'); i++; continue; }
        if (s[i] == '}' && i + 1 < n && s[i + 1] == '}') { jbuf_putc(c, &b, '}'); i++; continue; }
        if (s[i] == '}') jfail_at(c, line, "Single '}' encountered in format string");
        if (s[i] != '{') { jbuf_putc(c, &b, s[i]); continue; }
        size_t e = i + 1;
        while (e < n && s[e] != '}') e++;
        if (e >= n) jfail_at(c, line, "Single '{' encountered in format string");
        const char *f = s + i + 1;
        size_t fl = e - i - 1;
        char conv = 0;
        const char *colon = memchr(f, ':', fl);
        if (colon) jfail_at(c, line, "unsupported construct: format spec in str.format()");
        if (fl >= 2 && f[fl - 2] == '!') { conv = f[fl - 1]; fl -= 2; }
        jval v;
        if (fl == 0) {
            if (auto_idx >= a->npos) jfail_at(c, line, "Replacement index %zu out of range for positional args tuple", auto_idx);
            v = a->pos[auto_idx++];
        } else if (f[0] >= '0' && f[0] <= '9') {
            size_t k = (size_t)strtoul(f, NULL, 10);
            if (k >= a->npos) jfail_at(c, line, "Replacement index %zu out of range for positional args tuple", k);
            v = a->pos[k];
        } else {
            char *name = jstrndup(c, f, fl);
            const jval *kv = jarg(c, a, SIZE_MAX, name);
            if (!kv) jfail_at(c, line, "KeyError: '%s' in str.format()", name);
            v = *kv;
        }
        if (conv == 'r') jv_repr_to(c, &b, v);
        else jv_str_to(c, &b, v);
        i = e;
    }
    return jv_bufstr(&b);
}

jval jpercent_format(jctx *c, jval fmt, jval args, int line) {
    jval one[1] = {args};
    const jval *v = one;
    size_t nargs = 1, used = 0;
    if (args.t == JT_LIST && args.u.l->tuple && !(args.flags & JF_GEN)) { v = args.u.l->v; nargs = args.u.l->n; }
    jbuf b = {0};
    const char *s = fmt.u.s.s;
    for (size_t i = 0; i < fmt.u.s.n; i++) {
        if (s[i] != '%') { jbuf_putc(c, &b, s[i]); continue; }
        char k = i + 1 < fmt.u.s.n ? s[++i] : 0;
        if (k == '%') { jbuf_putc(c, &b, '%'); continue; }
        if (k != 's' && k != 'r' && k != 'd' && k != 'i')
            jfail_at(c, line, "unsupported construct: '%%%c' in %%-formatting (only %%s %%r %%d %%i %%%%)", k ? k : '?');
        if (used >= nargs) jfail_at(c, line, "not enough arguments for format string");
        jval x = v[used++];
        if (k == 's') jv_str_to(c, &b, x);
        else if (k == 'r') jv_repr_to(c, &b, x);
        else {
            if (!jv_is_number(x)) jfail_at(c, line, "%%%c format: a real number is required, not %s", k, jtype_name(x));
            jval iv = x.t == JT_FLOAT ? jv_int((int64_t)x.u.f) : x;
            if (x.t == JT_FLOAT && (isnan(x.u.f) || fabs(x.u.f) >= 9.2e18)) jfail_at(c, line, "%%d format: number out of range");
            jv_str_to(c, &b, iv.t == JT_BOOL ? jv_int(iv.u.b) : iv);
        }
    }
    if (used < nargs && !(nargs == 1 && (args.t == JT_DICT))) jfail_at(c, line, "not all arguments converted during string formatting");
    return jv_bufstr(&b);
}

jval jstr_center(jctx *c, jval s, int64_t width, int line) {
    int64_t n = (int64_t)ju_count(s.u.s.s, s.u.s.n);
    if (width > (int64_t)c->lim.max_output) jfail_at(c, line, "center width too large");
    if (width <= n) return s;
    int64_t pad = width - n, left = pad / 2 + (pad & width & 1);
    jbuf b = {0};
    for (int64_t i = 0; i < left; i++) jbuf_putc(c, &b, ' ');
    jbuf_put(c, &b, s.u.s.s, s.u.s.n);
    for (int64_t i = 0; i < pad - left; i++) jbuf_putc(c, &b, ' ');
    return jv_bufstr(&b);
}

static bool all_cps(jval s, int kind) {
    if (s.u.s.n == 0) return false;
    size_t i = 0, adv;
    bool cased = false;
    while (i < s.u.s.n) {
        uint32_t cp = ju_decode(s.u.s.s + i, s.u.s.n - i, &adv);
        bool digit = cp >= '0' && cp <= '9', alpha = ju_upper(cp) != ju_lower(cp) || (cp >= 0x80 && !ju_isspace(cp));
        switch (kind) {
        case 'd': if (!digit) return false; break;
        case 'a': if (!alpha) return false; break;
        case 'n': if (!alpha && !digit) return false; break;
        case 's': if (!ju_isspace(cp)) return false; break;
        case 'l': if (ju_lower(cp) != cp) return false; cased |= ju_upper(cp) != cp; break;
        case 'u': if (ju_upper(cp) != cp) return false; cased |= ju_lower(cp) != cp; break;
        }
        i += adv;
    }
    return kind == 'l' || kind == 'u' ? cased : true;
}

static jval pad(jctx *c, jval s, int64_t width, jval fill, int where, int line) {
    int64_t n = (int64_t)ju_count(s.u.s.s, s.u.s.n);
    if (width > (int64_t)c->lim.max_output) jfail_at(c, line, "padding width too large");
    if (width <= n) return s;
    if (fill.t != JT_STR || ju_count(fill.u.s.s, fill.u.s.n) != 1) jfail_at(c, line, "the fill character must be exactly one character long");
    jbuf b = {0};
    int64_t p = width - n;
    if (where == 'r')
        for (int64_t i = 0; i < p; i++) jbuf_put(c, &b, fill.u.s.s, fill.u.s.n);
    jbuf_put(c, &b, s.u.s.s, s.u.s.n);
    if (where == 'l')
        for (int64_t i = 0; i < p; i++) jbuf_put(c, &b, fill.u.s.s, fill.u.s.n);
    return jv_bufstr(&b);
}

jval jstr_method(jctx *c, jval s, const char *name, jcall *a, int line) {
#define IS(n) (!strcmp(name, n))
    const jval *a0 = jarg(c, a, 0, NULL);
    if (IS("startswith") || IS("endswith")) {
        if (!a0) jfail_at(c, line, "%s() takes at least 1 argument", name);
        return jv_bool(has_prefix(c, s, *a0, IS("endswith"), line));
    }
    if (IS("split") || IS("rsplit")) {
        jval sep = jarg_or(c, a, 0, "sep", jv_none());
        int64_t maxs = jneed_int(c, jarg_or(c, a, 1, "maxsplit", jv_int(-1)), name, line);
        return split(c, s, sep, maxs, IS("rsplit"), line);
    }
    if (IS("strip") || IS("lstrip") || IS("rstrip")) {
        jval chars = a0 ? *a0 : jv_none();
        if (chars.t != JT_NONE) jneed_str(c, chars, name, line);
        return jstr_strip(s, chars, !IS("rstrip"), !IS("lstrip"));
    }
    if (IS("upper")) return jstr_case(c, s, 'u');
    if (IS("lower")) return jstr_case(c, s, 'l');
    if (IS("capitalize")) return jstr_case(c, s, 'c');
    if (IS("title")) return jstr_case(c, s, 't');
    if (IS("replace")) {
        const jval *n = jarg(c, a, 1, NULL);
        if (!a0 || !n) jfail_at(c, line, "replace() needs 2 arguments");
        int64_t cnt = jneed_int(c, jarg_or(c, a, 2, "count", jv_int(-1)), "replace", line);
        return jstr_replace(c, s, jneed_str(c, *a0, "replace", line), jneed_str(c, *n, "replace", line), cnt);
    }
    if (IS("find") || IS("rfind") || IS("index") || IS("rindex")) {
        if (!a0) jfail_at(c, line, "%s() takes at least 1 argument", name);
        int64_t r = find(s, jneed_str(c, *a0, name, line), name[0] == 'r');
        if (r < 0 && !IS("find") && !IS("rfind")) jfail_at(c, line, "substring not found");
        return jv_int(r);
    }
    if (IS("count")) {
        if (!a0) jfail_at(c, line, "count() takes at least 1 argument");
        return jv_int(count_sub(s, jneed_str(c, *a0, "count", line)));
    }
    if (IS("format")) return str_format(c, s, a, line);
    if (IS("join")) {
        if (!a0) jfail_at(c, line, "join() takes exactly one argument");
        jlist *l = jv_iter_list(c, *a0);
        jbuf b = {0};
        for (size_t i = 0; i < l->n; i++) {
            if (l->v[i].t != JT_STR) jfail_at(c, line, "sequence item %zu: expected str instance, %s found", i, jtype_name(l->v[i]));
            if (i) jbuf_put(c, &b, s.u.s.s, s.u.s.n);
            jbuf_put(c, &b, l->v[i].u.s.s, l->v[i].u.s.n);
        }
        return jv_bufstr(&b);
    }
    if (IS("splitlines")) return jstr_splitlines(c, s, jv_truthy(jarg_or(c, a, 0, "keepends", jv_bool(false))));
    if (IS("isdigit")) return jv_bool(all_cps(s, 'd'));
    if (IS("isalpha")) return jv_bool(all_cps(s, 'a'));
    if (IS("isalnum")) return jv_bool(all_cps(s, 'n'));
    if (IS("isspace")) return jv_bool(all_cps(s, 's'));
    if (IS("islower")) return jv_bool(all_cps(s, 'l'));
    if (IS("isupper")) return jv_bool(all_cps(s, 'u'));
    if (IS("center") || IS("ljust") || IS("rjust")) {
        if (!a0) jfail_at(c, line, "%s() takes at least 1 argument", name);
        int64_t w = jneed_int(c, *a0, name, line);
        jval fill = jarg_or(c, a, 1, "fillchar", jv_str(" ", 1));
        if (IS("center")) {
            if (fill.u.s.n != 1 || fill.u.s.s[0] != ' ') jfail_at(c, line, "unsupported construct: center() with a fill character");
            return jstr_center(c, s, w, line);
        }
        return pad(c, s, w, fill, IS("ljust") ? 'l' : 'r', line);
    }
    if (IS("zfill")) {
        if (!a0) jfail_at(c, line, "zfill() takes exactly one argument");
        return pad(c, s, jneed_int(c, *a0, name, line), jv_str("0", 1), 'r', line);
    }
#undef IS
    jfail_at(c, line, "unsupported method str.%s", name);
}
