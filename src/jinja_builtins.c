/* jinja_builtins.c — jinja2's filters and tests, Python string/dict/list methods, and the
 * globals a chat template may call (range, namespace, dict, raise_exception, strftime_now).
 * Unknown names return 0 so the caller can report "unsupported filter 'x' at line N". */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jinja_internal.h"

/* ---- arguments ---- */

const jval *jarg(jctx *c, jcall *a, size_t i, const char *kw) {
    (void)c;
    if (i < a->npos) return &a->pos[i];
    for (size_t k = 0; kw && k < a->nkw; k++)
        if (!strcmp(a->kwn[k], kw)) return &a->kwv[k];
    return NULL;
}

void jargs_max(jctx *c, jcall *a, size_t npos, const char *what, int line) {
    if (a->npos > npos) jfail_at(c, line, "%s takes at most %zu argument(s), %zu given", what, npos, a->npos);
}

static jval arg_or(jctx *c, jcall *a, size_t i, const char *kw, jval def) {
    const jval *v = jarg(c, a, i, kw);
    return v ? *v : def;
}

static jval need_str(jctx *c, jval v, const char *what, int line) {
    if (v.t != JT_STR) jfail_at(c, line, "%s expects a string, got '%s'", what, jtype_name(v));
    return v;
}

static int64_t need_int(jctx *c, jval v, const char *what, int line) {
    if (v.t == JT_INT) return v.u.i;
    if (v.t == JT_BOOL) return v.u.b;
    jfail_at(c, line, "%s expects an integer, got '%s'", what, jtype_name(v));
}

static jval bufval(jbuf *b) { return jv_str(b->p ? b->p : "", b->n); }

/* Item `attr` of v for attribute= arguments, like jinja2's make_attrgetter: an integer indexes;
 * a string is a dotted path whose all-digit parts index ("function.name", "items.0"). */
static jval get_attr_arg(jctx *c, jval v, jval attr, int line) {
    if (attr.t == JT_INT) return jgetitem(c, v, attr, line);
    jval path = jv_to_string(c, attr);
    size_t i = 0;
    do {
        size_t e = i;
        while (e < path.u.s.n && path.u.s.s[e] != '.') e++;
        const char *part = jstrndup(c, path.u.s.s + i, e - i);
        bool digits = e > i;
        for (size_t k = i; k < e; k++) digits &= path.u.s.s[k] >= '0' && path.u.s.s[k] <= '9';
        if (digits && e - i < 18) v = jgetitem(c, v, jv_int(strtoll(part, NULL, 10)), line);
        else v = jgetattr(c, v, part, line);
        i = e + 1;
    } while (i <= path.u.s.n);
    return v;
}

/* ---- string helpers (code points) ---- */

/* Python's str.upper/lower/capitalize/title (mode 'u', 'l', 'c', 't') and jinja2's |title
 * filter ('j': words start after whitespace or -([{<; first letter upper, rest lower), with full
 * case mappings (U+00DF -> "SS") and the final-sigma rule of lower(). */
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

static jval case_map(jctx *c, jval s, int mode) {
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
    return bufval(&b);
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

static jval strip(jval s, jval chars, bool left, bool right) {
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

static jval list_push(jctx *c, jval l, jval v) {
    /* appends to a list under construction (capacity grows by doubling via copy) */
    size_t n = l.u.l->n;
    if ((n & (n - 1)) == 0) {
        jval *nv = jalloc(c, (n ? n * 2 : 4) * sizeof(jval));
        if (n) memcpy(nv, l.u.l->v, n * sizeof(jval));
        l.u.l->v = nv;
    }
    l.u.l->v[n] = v;
    l.u.l->n = n + 1;
    return l;
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
                    out = list_push(c, out, jv_str(p + i, n - i));
                    break;
                }
                size_t st = i;
                while (i < n && !ju_isspace(ju_decode(p + i, n - i, &adv))) i += adv;
                out = list_push(c, out, jv_str(p + st, i - st));
            }
            return out;
        }
        jval parts = jv_list(c, 0);
        size_t e = n;
        while (e > 0) {
            jval rest = strip(jv_str(p, e), jv_none(), false, true);
            e = rest.u.s.n;
            if (e == 0) break;
            if (maxsplit >= 0 && (int64_t)parts.u.l->n == maxsplit) { parts = list_push(c, parts, rest); break; }
            size_t st = e;
            while (st > 0) {
                size_t q = st - 1;
                while (q > 0 && ((unsigned char)p[q] & 0xc0) == 0x80) q--;
                if (ju_isspace(ju_decode(p + q, st - q, &adv))) break;
                st = q;
            }
            parts = list_push(c, parts, jv_str(p + st, e - st));
            e = st;
        }
        for (size_t i = parts.u.l->n; i > 0; i--) out = list_push(c, out, parts.u.l->v[i - 1]);
        return out;
    }
    need_str(c, sep, "split", line);
    if (sep.u.s.n == 0) jfail_at(c, line, "empty separator");
    const char *q = sep.u.s.s;
    size_t m = sep.u.s.n;
    if (!from_right) {
        size_t i = 0;
        for (;;) {
            const char *hit = (maxsplit < 0 || (int64_t)out.u.l->n < maxsplit) ? memmem(p + i, n - i, q, m) : NULL;
            if (!hit) { out = list_push(c, out, jv_str(p + i, n - i)); return out; }
            out = list_push(c, out, jv_str(p + i, (size_t)(hit - p) - i));
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
        if (hit == SIZE_MAX) { parts = list_push(c, parts, jv_str(p, e)); break; }
        parts = list_push(c, parts, jv_str(p + hit + m, e - hit - m));
        e = hit;
    }
    for (size_t i = parts.u.l->n; i > 0; i--) out = list_push(c, out, parts.u.l->v[i - 1]);
    return out;
}

static jval replace(jctx *c, jval s, jval old, jval new, int64_t count) {
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
        return bufval(&b);
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
    return bufval(&b);
}

static bool is_linebreak(uint32_t cp) {
    return cp == '\n' || cp == '\r' || cp == 0x0b || cp == 0x0c || (cp >= 0x1c && cp <= 0x1e) || cp == 0x85 || cp == 0x2028 ||
           cp == 0x2029;
}

static jval splitlines(jctx *c, jval s, bool keepends) {
    jval out = jv_list(c, 0);
    size_t i = 0, st = 0, n = s.u.s.n, adv;
    while (i < n) {
        uint32_t cp = ju_decode(s.u.s.s + i, n - i, &adv);
        if (!is_linebreak(cp)) { i += adv; continue; }
        size_t e = i;
        i += adv;
        if (cp == '\r' && i < n && s.u.s.s[i] == '\n') i++;
        out = list_push(c, out, jv_str(s.u.s.s + st, (keepends ? i : e) - st));
        st = i;
    }
    if (st < n) out = list_push(c, out, jv_str(s.u.s.s + st, n - st));
    return out;
}

static bool has_prefix(jctx *c, jval s, jval p, bool suffix, int line) {
    if (p.t == JT_LIST && p.u.l->tuple) {
        for (size_t i = 0; i < p.u.l->n; i++)
            if (has_prefix(c, s, p.u.l->v[i], suffix, line)) return true;
        return false;
    }
    need_str(c, p, suffix ? "endswith" : "startswith", line);
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
    return bufval(&b);
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
    return bufval(&b);
}

/* ---- sorting (stable merge sort; comparisons may fail the render) ---- */

typedef struct sortkey { jval key, item; } sortkey;

static jval sort_key(jctx *c, jval item, const jval *attribute, bool case_sensitive, int line) {
    jval k = attribute && attribute->t != JT_NONE ? get_attr_arg(c, item, *attribute, line) : item;
    if (!case_sensitive && k.t == JT_STR) k = case_map(c, k, 'l');
    return k;
}

static void merge_sort(jctx *c, sortkey *v, sortkey *tmp, size_t n, bool reverse) {
    if (n < 2) return;
    size_t h = n / 2;
    merge_sort(c, v, tmp, h, reverse);
    merge_sort(c, v + h, tmp, n - h, reverse);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) {
        int r = jv_compare(c, v[j].key, v[i].key);
        if (reverse ? r > 0 : r < 0) tmp[k++] = v[j++];
        else tmp[k++] = v[i++];
    }
    while (i < h) tmp[k++] = v[i++];
    while (j < n) tmp[k++] = v[j++];
    memcpy(v, tmp, n * sizeof *v);
}

static jval sorted(jctx *c, jlist *l, bool reverse, bool case_sensitive, const jval *attribute, int line) {
    sortkey *v = jalloc(c, (l->n + 1) * sizeof *v), *tmp = jalloc(c, (l->n + 1) * sizeof *tmp);
    for (size_t i = 0; i < l->n; i++) { v[i].item = l->v[i]; v[i].key = sort_key(c, l->v[i], attribute, case_sensitive, line); }
    merge_sort(c, v, tmp, l->n, reverse);
    jval r = jv_list(c, l->n);
    for (size_t i = 0; i < l->n; i++) r.u.l->v[i] = v[i].item;
    return r;
}

/* ---- tests ---- */

static bool run_test(jctx *c, jscope *s, const char *name, jval v, jcall *a, int line) {
    bool r;
    if (!jtest_apply(c, s, name, v, a, line, &r)) jfail_at(c, line, "unsupported test '%s'", name);
    return r;
}

int jtest_apply(jctx *c, jscope *s, const char *name, jval v, jcall *a, int line, bool *res) {
    (void)s;
    jstep(c, 1);
    const jval *x = jarg(c, a, 0, NULL);
#define IS(n) (!strcmp(name, n))
    if (IS("defined")) *res = v.t != JT_UNDEF;
    else if (IS("undefined")) *res = v.t == JT_UNDEF;
    else if (IS("none")) *res = v.t == JT_NONE;
    else if (IS("string")) *res = v.t == JT_STR;
    else if (IS("number")) *res = v.t == JT_INT || v.t == JT_FLOAT || v.t == JT_BOOL;
    else if (IS("integer")) *res = v.t == JT_INT;
    else if (IS("float")) *res = v.t == JT_FLOAT;
    else if (IS("boolean")) *res = v.t == JT_BOOL;
    else if (IS("true")) *res = v.t == JT_BOOL && v.u.b;
    else if (IS("false")) *res = v.t == JT_BOOL && !v.u.b;
    else if (IS("mapping")) *res = v.t == JT_DICT;
    else if (IS("sequence")) *res = v.t == JT_STR || (v.t == JT_LIST && !(v.flags & JF_GEN)) || v.t == JT_DICT || v.t == JT_RANGE || v.t == JT_UNDEF;
    else if (IS("iterable")) *res = v.t == JT_STR || v.t == JT_LIST || v.t == JT_DICT || v.t == JT_RANGE || v.t == JT_UNDEF;
    else if (IS("callable")) *res = v.t == JT_MACRO || v.t == JT_FUNC || v.t == JT_METHOD;
    else if (IS("escaped")) *res = false;
    else if (IS("odd") || IS("even") || IS("divisibleby")) {
        /* Python: value % 2 == 1 / value % 2 == 0 / value % num == 0 (floats allowed) */
        jval d = jv_int(2);
        if (IS("divisibleby")) {
            if (!x) jfail_at(c, line, "test 'divisibleby' needs an argument");
            d = *x;
        }
        if (!jv_is_number(v) || !jv_is_number(d)) jfail_at(c, line, "test '%s' expects numbers, got '%s'", name, jtype_name(v));
        jval m = jv_arith_mod(c, v, d, line);
        *res = jv_as_double(m) == (IS("odd") ? 1 : 0);
    } else if (IS("eq") || IS("equalto") || IS("==") || IS("ne") || IS("!=")) {
        if (!x) jfail_at(c, line, "test '%s' needs an argument", name);
        *res = jv_equal(c, v, *x) == !(IS("ne") || IS("!="));
    } else if (IS("sameas")) {
        if (!x) jfail_at(c, line, "test 'sameas' needs an argument");
        *res = (v.t == x->t) && (v.t == JT_NONE || v.t == JT_UNDEF || (v.t == JT_BOOL && v.u.b == x->u.b) ||
                                 (v.t == JT_INT && v.u.i == x->u.i) ||
                                 (v.t == JT_STR && v.u.s.s == x->u.s.s && v.u.s.n == x->u.s.n) ||
                                 ((v.t == JT_LIST) && v.u.l == x->u.l) || ((v.t == JT_DICT || v.t == JT_NS) && v.u.d == x->u.d));
    } else if (IS("lt") || IS("lessthan") || IS("<") || IS("le") || IS("<=") || IS("gt") || IS("greaterthan") || IS(">") ||
               IS("ge") || IS(">=")) {
        if (!x) jfail_at(c, line, "test '%s' needs an argument", name);
        int r = jv_compare(c, v, *x);
        *res = IS("lt") || IS("lessthan") || IS("<") ? r < 0 : IS("le") || IS("<=") ? r <= 0 : IS("ge") || IS(">=") ? r >= 0 : r > 0;
    } else if (IS("in")) {
        if (!x) jfail_at(c, line, "test 'in' needs an argument");
        jlist *l;
        if (x->t == JT_STR) {
            need_str(c, v, "in", line);
            *res = v.u.s.n == 0 || memmem(x->u.s.s, x->u.s.n, v.u.s.s, v.u.s.n);
            return 1;
        }
        if (x->t == JT_DICT) { *res = jdict_get(x->u.d, v) != NULL; return 1; }
        l = jv_iter_list(c, *x);
        *res = false;
        for (size_t i = 0; i < l->n && !*res; i++) *res = jv_equal(c, l->v[i], v);
    } else if (IS("lower") || IS("upper")) {
        v = jv_to_string(c, v); /* jinja2: str(value).islower() */
        bool any = false, ok = true;
        size_t i = 0, adv;
        while (i < v.u.s.n) {
            uint32_t cp = ju_decode(v.u.s.s + i, v.u.s.n - i, &adv);
            if (ju_upper(cp) != cp || ju_lower(cp) != cp) {
                any = true;
                if (IS("lower") ? ju_lower(cp) != cp : ju_upper(cp) != cp) ok = false;
            }
            i += adv;
        }
        *res = any && ok;
    } else return 0;
#undef IS
    return 1;
}

/* ---- filters ---- */

/* select/reject/selectattr/rejectattr */
static jval select_items(jctx *c, jscope *s, jval seq, jcall *a, bool attr, bool keep, int line) {
    if (!jv_truthy(seq)) { jval e = jv_list(c, 0); e.flags = JF_GEN; return e; } /* jinja2: `if seq:` first */
    jlist *l = jv_iter_list(c, seq);
    size_t first = attr ? 1 : 0;
    const jval *attr_name = attr ? jarg(c, a, 0, NULL) : NULL;
    if (attr && (!attr_name || attr_name->t != JT_STR)) jfail_at(c, line, "selectattr/rejectattr need an attribute name");
    const jval *tname = jarg(c, a, first, NULL);
    jcall targs = {0};
    if (a->npos > first + 1) { targs.pos = a->pos + first + 1; targs.npos = a->npos - first - 1; }
    jval out = jv_list(c, 0);
    for (size_t i = 0; i < l->n; i++) {
        jval item = l->v[i], subject = item;
        if (attr) subject = jgetattr(c, item, jstrndup(c, attr_name->u.s.s, attr_name->u.s.n), line);
        bool r;
        if (!tname) r = jv_truthy(subject);
        else {
            if (tname->t != JT_STR) jfail_at(c, line, "test name must be a string");
            r = run_test(c, s, jstrndup(c, tname->u.s.s, tname->u.s.n), subject, &targs, line);
        }
        if (r == keep) out = list_push(c, out, item);
    }
    out.flags = JF_GEN;
    return out;
}

static jval to_int(jctx *c, jval v, jval def) {
    switch (v.t) {
    case JT_INT: return v;
    case JT_BOOL: return jv_int(v.u.b);
    case JT_FLOAT:
        if (isnan(v.u.f) || isinf(v.u.f) || fabs(v.u.f) >= 9.2e18) return def;
        return jv_int((int64_t)v.u.f);
    case JT_STR: {
        char *s = jstrndup(c, v.u.s.s, v.u.s.n), *t = s, *o = s;
        for (; *t; t++) if (*t != '_') *o++ = *t;
        *o = 0;
        char *end;
        errno = 0;
        long long i = strtoll(s, &end, 10);
        while (*end == ' ' || *end == '\t' || *end == '\n') end++;
        if (end != s && !*end && errno == 0) return jv_int(i);
        double f = strtod(s, &end);
        while (*end == ' ' || *end == '\t' || *end == '\n') end++;
        if (end != s && !*end && !isnan(f) && !isinf(f) && fabs(f) < 9.2e18) return jv_int((int64_t)f);
        return def;
    }
    default: return def;
    }
}

static jval to_float(jctx *c, jval v, jval def) {
    switch (v.t) {
    case JT_FLOAT: return v;
    case JT_INT: case JT_BOOL: return jv_float(jv_as_double(v));
    case JT_STR: {
        char *s = jstrndup(c, v.u.s.s, v.u.s.n), *end;
        double f = strtod(s, &end);
        while (*end == ' ' || *end == '\t' || *end == '\n') end++;
        return end != s && !*end ? jv_float(f) : def;
    }
    default: return def;
    }
}

static jval items_of(jctx *c, jval v, int line) {
    if (v.t == JT_UNDEF) return jv_list(c, 0);
    if (v.t != JT_DICT && v.t != JT_NS) jfail_at(c, line, "items: can only get item pairs from a mapping, not '%s'", jtype_name(v));
    jval r = jv_list(c, v.u.d->n);
    for (size_t i = 0; i < v.u.d->n; i++) {
        jval t = jv_list(c, 2);
        t.u.l->tuple = true;
        t.u.l->v[0] = v.u.d->k[i];
        t.u.l->v[1] = v.u.d->v[i];
        r.u.l->v[i] = t;
    }
    return r;
}

static jval indent(jctx *c, jval s, jval width, bool first, bool blank, int line) {
    jval ind;
    if (width.t == JT_STR) ind = width;
    else {
        int64_t w = need_int(c, width, "indent", line);
        if (w < 0) w = 0;
        if (w > 1000) jfail_at(c, line, "indent width too large");
        char *sp = jalloc(c, (size_t)w + 1);
        memset(sp, ' ', (size_t)w);
        ind = jv_str(sp, (size_t)w);
    }
    jbuf withnl = {0};
    jbuf_put(c, &withnl, s.u.s.s, s.u.s.n);
    jbuf_putc(c, &withnl, '\n');
    jlist *lines = splitlines(c, bufval(&withnl), false).u.l;
    jbuf b = {0};
    if (first) jbuf_put(c, &b, ind.u.s.s, ind.u.s.n);
    for (size_t i = 0; i < lines->n; i++) {
        jval ln = lines->v[i];
        if (i) {
            jbuf_putc(c, &b, '\n');
            if (blank || ln.u.s.n) jbuf_put(c, &b, ind.u.s.s, ind.u.s.n);
        }
        jbuf_put(c, &b, ln.u.s.s, ln.u.s.n);
    }
    return bufval(&b);
}

static jval center(jctx *c, jval s, int64_t width, int line) {
    int64_t n = (int64_t)ju_count(s.u.s.s, s.u.s.n);
    if (width > (int64_t)c->lim.max_output) jfail_at(c, line, "center width too large");
    if (width <= n) return s;
    int64_t pad = width - n, left = pad / 2 + (pad & width & 1);
    jbuf b = {0};
    for (int64_t i = 0; i < left; i++) jbuf_putc(c, &b, ' ');
    jbuf_put(c, &b, s.u.s.s, s.u.s.n);
    for (int64_t i = 0; i < pad - left; i++) jbuf_putc(c, &b, ' ');
    return bufval(&b);
}

static jval min_max(jctx *c, jval v, jcall *a, bool want_max, int line) {
    jlist *l = jv_iter_list(c, v);
    if (l->n == 0) return jv_undef(c, "No aggregated item, sequence was empty.");
    bool cs = jv_truthy(arg_or(c, a, 0, "case_sensitive", jv_bool(false)));
    const jval *attr = jarg(c, a, 1, "attribute");
    size_t best = 0;
    jval bk = sort_key(c, l->v[0], attr, cs, line);
    for (size_t i = 1; i < l->n; i++) {
        jval k = sort_key(c, l->v[i], attr, cs, line);
        int r = jv_compare(c, k, bk);
        if (want_max ? r > 0 : r < 0) { best = i; bk = k; }
    }
    return l->v[best];
}

static jval round_value(jctx *c, jval v, jcall *a, int line) {
    int64_t prec = need_int(c, arg_or(c, a, 0, "precision", jv_int(0)), "round", line);
    jval m = arg_or(c, a, 1, "method", jv_cstr(c, "common"));
    double x = jv_as_double(v);
    if (!jv_is_number(v)) jfail_at(c, line, "round expects a number, got '%s'", jtype_name(v));
    bool common = !(m.t == JT_STR && ((m.u.s.n == 5 && !memcmp(m.u.s.s, "floor", 5)) || (m.u.s.n == 4 && !memcmp(m.u.s.s, "ceil", 4))));
    if (common && v.t != JT_FLOAT) return jv_int(v.t == JT_INT ? v.u.i : v.u.b); /* round(int, n) is the int */
    if (prec < 0 || prec > 15) jfail_at(c, line, "round precision out of range");
    double p = pow(10, (double)prec);
    if (m.t == JT_STR && m.u.s.n == 5 && !memcmp(m.u.s.s, "floor", 5)) return jv_float(floor(x * p) / p);
    if (m.t == JT_STR && m.u.s.n == 4 && !memcmp(m.u.s.s, "ceil", 4)) return jv_float(ceil(x * p) / p);
    char t[400];
    snprintf(t, sizeof t, "%.*f", (int)prec, x); /* correctly rounded, half to even: Python's round() */
    return jv_float(strtod(t, NULL));
}

static jval join(jctx *c, jval v, jcall *a, int line) {
    jlist *l = jv_iter_list(c, v);
    jval sep = arg_or(c, a, 0, "d", jv_str("", 0));
    const jval *attr = jarg(c, a, 1, "attribute");
    sep = jv_to_string(c, sep);
    jbuf b = {0};
    for (size_t i = 0; i < l->n; i++) {
        if (i) jbuf_put(c, &b, sep.u.s.s, sep.u.s.n);
        jval it = l->v[i];
        if (attr) it = get_attr_arg(c, it, *attr, line);
        jv_str_to(c, &b, it);
    }
    return bufval(&b);
}

static bool iterable(jval v) { return v.t == JT_UNDEF || v.t == JT_LIST || v.t == JT_DICT || v.t == JT_STR || v.t == JT_RANGE; }

/* jinja2's generator filters fail only when their result is iterated. */
static jval lazy_failure(jctx *c, const char *msg) {
    jval g = jv_list(c, 0);
    g.flags = JF_GEN;
    g.u.l->lazy_error = jstrndup(c, msg, strlen(msg));
    return g;
}

int jfilter_apply(jctx *c, jscope *s, const char *name, jval v, jcall *a, int line, jval *res) {
    jstep(c, 1);
#define IS(n) (!strcmp(name, n))
    bool lazy = IS("map") || IS("select") || IS("reject") || IS("selectattr") || IS("rejectattr") ? jv_truthy(v) : IS("unique") || IS("batch");
    if (lazy && v.t == JT_LIST && v.u.l->lazy_error) { *res = v; return 1; } /* still not iterated */
    if (lazy && !iterable(v)) {
        char msg[128];
        snprintf(msg, sizeof msg, "'%s' object is not iterable", jtype_name(v));
        *res = lazy_failure(c, msg);
        return 1;
    }
    if (IS("items") && v.t != JT_UNDEF && v.t != JT_DICT) {
        *res = lazy_failure(c, "Can only get item pairs from a mapping.");
        return 1;
    }
    /* filters that accept undefined */
    if (IS("default") || IS("d")) {
        jval def = arg_or(c, a, 0, "default_value", jv_str("", 0));
        bool boolean = jv_truthy(arg_or(c, a, 1, "boolean", jv_bool(false)));
        *res = (v.t == JT_UNDEF || (boolean && !jv_truthy(v))) ? def : v;
        return 1;
    }
    if (IS("safe")) { *res = jv_to_string(c, v); res->flags = JF_MARKUP; return 1; }
    if (IS("string")) { *res = jv_to_string(c, v); return 1; } /* keeps Markup, like soft_str */
    if (IS("length") || IS("count")) { *res = jv_int(jv_len(c, v)); return 1; }
    if (IS("tojson")) {
        const jval *ind = jarg(c, a, 1, "indent");
        const jval *sk = jarg(c, a, 4, "sort_keys");
        const jval *seps = jarg(c, a, 3, "separators");
        const char *indent_s = NULL;
        if (ind && ind->t == JT_INT) {
            if (ind->u.i > 100) jfail_at(c, line, "tojson indent too large");
            char *sp = jalloc(c, (size_t)(ind->u.i > 0 ? ind->u.i : 0) + 1);
            memset(sp, ' ', (size_t)(ind->u.i > 0 ? ind->u.i : 0));
            indent_s = sp;
        } else if (ind && ind->t == JT_STR) indent_s = jstrndup(c, ind->u.s.s, ind->u.s.n);
        const char *item_sep = indent_s ? "," : ", ", *key_sep = ": ";
        if (seps && seps->t == JT_LIST && seps->u.l->n == 2 && seps->u.l->v[0].t == JT_STR && seps->u.l->v[1].t == JT_STR) {
            item_sep = jstrndup(c, seps->u.l->v[0].u.s.s, seps->u.l->v[0].u.s.n);
            key_sep = jstrndup(c, seps->u.l->v[1].u.s.s, seps->u.l->v[1].u.s.n);
        }
        jbuf b = {0};
        jv_tojson_to(c, &b, v, indent_s, 0, sk && jv_truthy(*sk), item_sep, key_sep);
        *res = bufval(&b);
        return 1;
    }
    if (IS("list")) {
        jlist *l = jv_iter_list(c, v);
        jval r = jv_list(c, l->n);
        if (l->n) memcpy(r.u.l->v, l->v, l->n * sizeof(jval));
        *res = r;
        return 1;
    }
    if (IS("items")) { *res = items_of(c, v, line); res->flags = JF_GEN; return 1; }
    if (v.t == JT_UNDEF && IS("dictsort")) jfail_at(c, line, "%s", v.u.undef); /* others iterate it as empty */
    if (IS("first") || IS("last")) {
        if (IS("last") && (v.flags & JF_GEN)) jfail_at(c, line, "'generator' object is not reversible");
        jlist *l = jv_iter_list(c, v);
        *res = l->n ? l->v[IS("first") ? 0 : l->n - 1] : jv_undef(c, "No %s item, sequence was empty.", name);
        return 1;
    }
    if (IS("join")) { *res = join(c, v, a, line); return 1; }
    if (IS("unique")) {
        jlist *l = jv_iter_list(c, v);
        bool cs = jv_truthy(arg_or(c, a, 0, "case_sensitive", jv_bool(false)));
        const jval *attr = jarg(c, a, 1, "attribute");
        jval out = jv_list(c, 0), keys = jv_list(c, 0);
        for (size_t i = 0; i < l->n; i++) {
            jval k = sort_key(c, l->v[i], attr, cs, line);
            bool seen = false;
            for (size_t j = 0; j < keys.u.l->n && !seen; j++) seen = jv_equal(c, keys.u.l->v[j], k);
            if (!seen) { keys = list_push(c, keys, k); out = list_push(c, out, l->v[i]); }
        }
        out.flags = JF_GEN;
        *res = out;
        return 1;
    }
    if (IS("sort")) {
        bool rev = jv_truthy(arg_or(c, a, 0, "reverse", jv_bool(false)));
        bool cs = jv_truthy(arg_or(c, a, 1, "case_sensitive", jv_bool(false)));
        *res = sorted(c, jv_iter_list(c, v), rev, cs, jarg(c, a, 2, "attribute"), line);
        return 1;
    }
    if (IS("dictsort")) {
        bool cs = jv_truthy(arg_or(c, a, 0, "case_sensitive", jv_bool(false)));
        jval by = arg_or(c, a, 1, "by", jv_cstr(c, "key"));
        bool rev = jv_truthy(arg_or(c, a, 2, "reverse", jv_bool(false)));
        jval pos = jv_int(by.t == JT_STR && by.u.s.n == 5 && !memcmp(by.u.s.s, "value", 5) ? 1 : 0);
        *res = sorted(c, items_of(c, v, line).u.l, rev, cs, &pos, line);
        return 1;
    }
    if (IS("reverse")) {
        if (v.t == JT_STR) {
            jbuf b = {0};
            jlist *l = jv_iter_list(c, v);
            for (size_t i = l->n; i > 0; i--) jbuf_put(c, &b, l->v[i - 1].u.s.s, l->v[i - 1].u.s.n);
            *res = bufval(&b);
            return 1;
        }
        jlist *l = jv_iter_list(c, v);
        jval r = jv_list(c, l->n);
        for (size_t i = 0; i < l->n; i++) r.u.l->v[i] = l->v[l->n - 1 - i];
        if (!(v.flags & JF_GEN)) r.flags = JF_GEN; /* reversed(x) is an iterator; a generator is listed */
        *res = r;
        return 1;
    }
    if (IS("map")) {
        if (!jv_truthy(v)) { *res = jv_list(c, 0); res->flags = JF_GEN; return 1; } /* jinja2: `if value:` first */
        jlist *l = jv_iter_list(c, v);
        const jval *attr = jarg(c, a, SIZE_MAX, "attribute");
        jval out = jv_list(c, l->n);
        if (attr) {
            jval def = arg_or(c, a, SIZE_MAX, "default", jv_undef(c, "no default"));
            bool has_def = jarg(c, a, SIZE_MAX, "default") != NULL;
            for (size_t i = 0; i < l->n; i++) {
                jval x = get_attr_arg(c, l->v[i], *attr, line);
                out.u.l->v[i] = (x.t == JT_UNDEF && has_def) ? def : x;
            }
        } else {
            if (a->npos < 1 || a->pos[0].t != JT_STR) jfail_at(c, line, "map needs a filter name or attribute=");
            const char *fname = jstrndup(c, a->pos[0].u.s.s, a->pos[0].u.s.n);
            jcall fa = *a;
            fa.pos++;
            fa.npos--;
            for (size_t i = 0; i < l->n; i++)
                if (!jfilter_apply(c, s, fname, l->v[i], &fa, line, &out.u.l->v[i])) jfail_at(c, line, "unsupported filter '%s'", fname);
        }
        out.flags = JF_GEN;
        *res = out;
        return 1;
    }
    if (IS("select") || IS("reject")) { *res = select_items(c, s, v, a, false, IS("select"), line); return 1; }
    if (IS("selectattr") || IS("rejectattr")) { *res = select_items(c, s, v, a, true, IS("selectattr"), line); return 1; }
    if (IS("sum")) {
        jlist *l = jv_iter_list(c, v);
        const jval *attr = jarg(c, a, 0, "attribute");
        jval acc = arg_or(c, a, 1, "start", jv_int(0));
        for (size_t i = 0; i < l->n; i++) {
            jval x = attr ? get_attr_arg(c, l->v[i], *attr, line) : l->v[i];
            if (!jv_is_number(x) || !jv_is_number(acc)) jfail_at(c, line, "sum: unsupported operand types '%s' and '%s'", jtype_name(acc), jtype_name(x));
            if (acc.t == JT_FLOAT || x.t == JT_FLOAT) acc = jv_float(jv_as_double(acc) + jv_as_double(x));
            else {
                int64_t r;
                if (__builtin_add_overflow(acc.t == JT_INT ? acc.u.i : acc.u.b, x.t == JT_INT ? x.u.i : x.u.b, &r)) jfail_at(c, line, "integer overflow in sum");
                acc = jv_int(r);
            }
        }
        *res = acc;
        return 1;
    }
    if (IS("min") || IS("max")) { *res = min_max(c, v, a, IS("max"), line); return 1; }
    if (IS("batch")) {
        jlist *l = jv_iter_list(c, v);
        int64_t n = need_int(c, arg_or(c, a, 0, "linecount", jv_int(1)), "batch", line);
        if (n <= 0) jfail_at(c, line, "batch size must be positive");
        const jval *fill = jarg(c, a, 1, "fill_with");
        jval out = jv_list(c, 0), cur = jv_list(c, 0);
        for (size_t i = 0; i < l->n; i++) {
            cur = list_push(c, cur, l->v[i]);
            if ((int64_t)cur.u.l->n == n) { out = list_push(c, out, cur); cur = jv_list(c, 0); }
        }
        if (cur.u.l->n) {
            while (fill && (int64_t)cur.u.l->n < n) cur = list_push(c, cur, *fill);
            out = list_push(c, out, cur);
        }
        out.flags = JF_GEN;
        *res = out;
        return 1;
    }
    if (IS("attr")) {
        const jval *nm = jarg(c, a, 0, "name");
        if (!nm || nm->t != JT_STR) jfail_at(c, line, "attr needs a name");
        *res = jgetattr(c, v, jstrndup(c, nm->u.s.s, nm->u.s.n), line);
        return 1;
    }
    if (IS("int")) { *res = to_int(c, v, arg_or(c, a, 0, "default", jv_int(0))); return 1; }
    if (IS("float")) { *res = to_float(c, v, arg_or(c, a, 0, "default", jv_float(0))); return 1; }
    if (IS("abs")) {
        if (v.t == JT_INT || v.t == JT_BOOL) {
            int64_t i = v.t == JT_INT ? v.u.i : v.u.b;
            if (i == INT64_MIN) jfail_at(c, line, "integer overflow in abs");
            *res = jv_int(i < 0 ? -i : i);
        } else if (v.t == JT_FLOAT) *res = jv_float(fabs(v.u.f));
        else jfail_at(c, line, "bad operand type for abs(): '%s'", jtype_name(v));
        return 1;
    }
    if (IS("round")) { *res = round_value(c, v, a, line); return 1; }
    if (IS("escape") || IS("e")) { *res = jv_html_escape(c, v); return 1; }
    if (IS("forceescape")) { v.flags &= (uint8_t)~JF_MARKUP; *res = jv_html_escape(c, v); return 1; }
    /* string filters: the value is converted with str() first */
    if (IS("indent") && v.t != JT_STR) /* jinja2 does `s += "\n"` on the value itself */
        jfail_at(c, line, "unsupported operand type(s) for +=: '%s' and 'str'", jtype_name(v));
    if (IS("trim") || IS("upper") || IS("lower") || IS("title") || IS("capitalize") || IS("replace") || IS("indent") ||
        IS("center") || IS("wordcount")) {
        jval str = jv_to_string(c, v);
        if (IS("trim")) *res = strip(str, arg_or(c, a, 0, "chars", jv_none()), true, true);
        else if (IS("upper")) *res = case_map(c, str, 'u');
        else if (IS("lower")) *res = case_map(c, str, 'l');
        else if (IS("capitalize")) *res = case_map(c, str, 'c');
        else if (IS("title")) *res = case_map(c, str, 'j');
        else if (IS("replace")) {
            const jval *o = jarg(c, a, 0, "old"), *n = jarg(c, a, 1, "new");
            if (!o || !n) jfail_at(c, line, "replace needs old and new strings");
            const jval *cnt = jarg(c, a, 2, "count");
            *res = replace(c, str, jv_to_string(c, *o), jv_to_string(c, *n), cnt && cnt->t != JT_NONE ? need_int(c, *cnt, "replace", line) : -1);
        } else if (IS("indent"))
            *res = indent(c, str, arg_or(c, a, 0, "width", jv_int(4)), jv_truthy(arg_or(c, a, 1, "first", jv_bool(false))),
                          jv_truthy(arg_or(c, a, 2, "blank", jv_bool(false))), line);
        else if (IS("center")) *res = center(c, str, need_int(c, arg_or(c, a, 0, "width", jv_int(80)), "center", line), line);
        else {
            int64_t words = 0;
            bool in = false;
            size_t i = 0, adv;
            while (i < str.u.s.n) {
                uint32_t cp = ju_decode(str.u.s.s + i, str.u.s.n - i, &adv);
                bool w = cp == '_' || (cp >= '0' && cp <= '9') || ju_upper(cp) != ju_lower(cp) || (cp >= 0x80 && !ju_isspace(cp));
                if (w && !in) words++;
                in = w;
                i += adv;
            }
            *res = jv_int(words);
        }
        return 1;
    }
#undef IS
    return 0;
}

/* ---- methods ---- */

static const char *const STR_METHODS[] = {"startswith", "endswith", "split", "rsplit", "strip", "lstrip", "rstrip", "upper",
                                          "lower", "title", "capitalize", "replace", "find", "rfind", "index", "rindex",
                                          "count", "format", "join", "splitlines", "isdigit", "isalpha", "isspace",
                                          "isalnum", "islower", "isupper", "center", "ljust", "rjust", "zfill", NULL};
static const char *const DICT_METHODS[] = {"items", "keys", "values", "get", "copy", NULL};
static const char *const LIST_METHODS[] = {"index", "count", "copy", NULL};

static bool in_table(const char *const *t, const char *name) {
    for (int i = 0; t[i]; i++)
        if (!strcmp(t[i], name)) return true;
    return false;
}

bool jmethod_exists(jval self, const char *name) {
    if (self.flags & JF_GEN) return false; /* generators have no list methods */
    switch (self.t) {
    case JT_STR: return in_table(STR_METHODS, name);
    case JT_DICT: return in_table(DICT_METHODS, name);
    case JT_LIST: return in_table(LIST_METHODS, name);
    default: return false;
    }
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
    return bufval(&b);
}

static jval str_method(jctx *c, jval s, const char *name, jcall *a, int line) {
#define IS(n) (!strcmp(name, n))
    const jval *a0 = jarg(c, a, 0, NULL);
    if (IS("startswith") || IS("endswith")) {
        if (!a0) jfail_at(c, line, "%s() takes at least 1 argument", name);
        return jv_bool(has_prefix(c, s, *a0, IS("endswith"), line));
    }
    if (IS("split") || IS("rsplit")) {
        jval sep = arg_or(c, a, 0, "sep", jv_none());
        int64_t maxs = need_int(c, arg_or(c, a, 1, "maxsplit", jv_int(-1)), name, line);
        return split(c, s, sep, maxs, IS("rsplit"), line);
    }
    if (IS("strip") || IS("lstrip") || IS("rstrip")) {
        jval chars = a0 ? *a0 : jv_none();
        if (chars.t != JT_NONE) need_str(c, chars, name, line);
        return strip(s, chars, !IS("rstrip"), !IS("lstrip"));
    }
    if (IS("upper")) return case_map(c, s, 'u');
    if (IS("lower")) return case_map(c, s, 'l');
    if (IS("capitalize")) return case_map(c, s, 'c');
    if (IS("title")) return case_map(c, s, 't');
    if (IS("replace")) {
        const jval *n = jarg(c, a, 1, NULL);
        if (!a0 || !n) jfail_at(c, line, "replace() needs 2 arguments");
        int64_t cnt = need_int(c, arg_or(c, a, 2, "count", jv_int(-1)), "replace", line);
        return replace(c, s, need_str(c, *a0, "replace", line), need_str(c, *n, "replace", line), cnt);
    }
    if (IS("find") || IS("rfind") || IS("index") || IS("rindex")) {
        if (!a0) jfail_at(c, line, "%s() takes at least 1 argument", name);
        int64_t r = find(s, need_str(c, *a0, name, line), name[0] == 'r');
        if (r < 0 && !IS("find") && !IS("rfind")) jfail_at(c, line, "substring not found");
        return jv_int(r);
    }
    if (IS("count")) {
        if (!a0) jfail_at(c, line, "count() takes at least 1 argument");
        return jv_int(count_sub(s, need_str(c, *a0, "count", line)));
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
        return bufval(&b);
    }
    if (IS("splitlines")) return splitlines(c, s, jv_truthy(arg_or(c, a, 0, "keepends", jv_bool(false))));
    if (IS("isdigit")) return jv_bool(all_cps(s, 'd'));
    if (IS("isalpha")) return jv_bool(all_cps(s, 'a'));
    if (IS("isalnum")) return jv_bool(all_cps(s, 'n'));
    if (IS("isspace")) return jv_bool(all_cps(s, 's'));
    if (IS("islower")) return jv_bool(all_cps(s, 'l'));
    if (IS("isupper")) return jv_bool(all_cps(s, 'u'));
    if (IS("center") || IS("ljust") || IS("rjust")) {
        if (!a0) jfail_at(c, line, "%s() takes at least 1 argument", name);
        int64_t w = need_int(c, *a0, name, line);
        jval fill = arg_or(c, a, 1, "fillchar", jv_str(" ", 1));
        if (IS("center")) {
            if (fill.u.s.n != 1 || fill.u.s.s[0] != ' ') jfail_at(c, line, "unsupported construct: center() with a fill character");
            return center(c, s, w, line);
        }
        return pad(c, s, w, fill, IS("ljust") ? 'l' : 'r', line);
    }
    if (IS("zfill")) {
        if (!a0) jfail_at(c, line, "zfill() takes exactly one argument");
        return pad(c, s, need_int(c, *a0, name, line), jv_str("0", 1), 'r', line);
    }
#undef IS
    jfail_at(c, line, "unsupported method str.%s", name);
}

jval jmethod_call(jctx *c, jval self, const char *name, jcall *a, int line) {
    jstep(c, 1);
    if (self.t == JT_LOOP && !strcmp(name, "cycle")) {
        if (a->npos == 0) jfail_at(c, line, "no items for cycling given");
        return a->pos[self.u.loop->index0 % (int64_t)a->npos];
    }
    if (self.t == JT_STR) return str_method(c, self, name, a, line);
    if (self.t == JT_DICT) {
        jdict *d = self.u.d;
        if (!strcmp(name, "items")) return items_of(c, self, line);
        if (!strcmp(name, "keys") || !strcmp(name, "values")) {
            jval r = jv_list(c, d->n);
            memcpy(r.u.l->v, name[0] == 'k' ? d->k : d->v, d->n * sizeof(jval));
            return r;
        }
        if (!strcmp(name, "get")) {
            const jval *k = jarg(c, a, 0, NULL);
            if (!k) jfail_at(c, line, "get expected at least 1 argument, got 0");
            const jval *v = jdict_get(d, *k);
            return v ? *v : arg_or(c, a, 1, NULL, jv_none());
        }
        if (!strcmp(name, "copy")) {
            jval r = jv_dict(c);
            for (size_t i = 0; i < d->n; i++) jdict_set(c, r.u.d, d->k[i], d->v[i]);
            return r;
        }
    }
    if (self.t == JT_LIST) {
        jlist *l = self.u.l;
        const jval *x = jarg(c, a, 0, NULL);
        if (!strcmp(name, "copy")) {
            jval r = jv_list(c, l->n);
            memcpy(r.u.l->v, l->v, l->n * sizeof(jval));
            return r;
        }
        if (!x) jfail_at(c, line, "%s() takes exactly one argument", name);
        int64_t cnt = 0;
        for (size_t i = 0; i < l->n; i++)
            if (jv_equal(c, l->v[i], *x)) {
                if (!strcmp(name, "index")) return jv_int((int64_t)i);
                cnt++;
            }
        if (!strcmp(name, "index")) jfail_at(c, line, "x not in list");
        return jv_int(cnt);
    }
    jfail_at(c, line, "unsupported method %s.%s", jtype_name(self), name);
}

/* ---- globals ---- */

static const char *const GLOBALS[] = {"range", "namespace", "dict", "raise_exception", "strftime_now", NULL};

bool jglobal_exists(const char *name) { return in_table(GLOBALS, name); }

jval jglobal_call(jctx *c, const char *name, jcall *a, int line) {
    if (!strcmp(name, "raise_exception")) {
        jval m = a->npos ? jv_to_string(c, a->pos[0]) : jv_str("", 0);
        jfail(c, "%.*s", (int)(m.u.s.n > 500 ? 500 : m.u.s.n), m.u.s.s);
    }
    if (!strcmp(name, "range")) {
        if (a->npos < 1 || a->npos > 3 || a->nkw) jfail_at(c, line, "range expected 1 to 3 integer arguments");
        int64_t st = 0, stop, step = 1;
        if (a->npos == 1) stop = need_int(c, a->pos[0], "range", line);
        else {
            st = need_int(c, a->pos[0], "range", line);
            stop = need_int(c, a->pos[1], "range", line);
            if (a->npos == 3) step = need_int(c, a->pos[2], "range", line);
        }
        if (step == 0) jfail_at(c, line, "range() arg 3 must not be zero");
        __int128 span = step > 0 ? (__int128)stop - st : (__int128)st - stop;
        __int128 as = step > 0 ? step : -(__int128)step;
        __int128 len = span > 0 ? (span + as - 1) / as : 0;
        if (len > INT64_MAX / 2) jfail_at(c, line, "range too large");
        jval r = {.t = JT_RANGE};
        r.u.r = jalloc(c, sizeof *r.u.r);
        r.u.r->start = st;
        r.u.r->step = step;
        r.u.r->len = (int64_t)len;
        return r;
    }
    if (!strcmp(name, "namespace") || !strcmp(name, "dict")) {
        jval d = jv_dict(c);
        if (!strcmp(name, "namespace")) d.t = JT_NS;
        for (size_t i = 0; i < a->npos; i++) {
            if (a->pos[i].t != JT_DICT) jfail_at(c, line, "%s() positional arguments must be mappings", name);
            for (size_t k = 0; k < a->pos[i].u.d->n; k++) jdict_set(c, d.u.d, a->pos[i].u.d->k[k], a->pos[i].u.d->v[k]);
        }
        for (size_t k = 0; k < a->nkw; k++) jdict_set(c, d.u.d, jv_cstr(c, a->kwn[k]), a->kwv[k]);
        return d;
    }
    if (!strcmp(name, "strftime_now")) {
        if (a->npos != 1 || a->pos[0].t != JT_STR) jfail_at(c, line, "strftime_now expects one format string");
        char *fmt = jstrndup(c, a->pos[0].u.s.s, a->pos[0].u.s.n);
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        char buf[512];
        size_t n = strftime(buf, sizeof buf, fmt, &tm);
        if (n == 0 && fmt[0]) jfail_at(c, line, "strftime_now: format result too long or invalid");
        return jv_str(jstrndup(c, buf, n), n);
    }
    jfail_at(c, line, "unsupported function '%s'", name);
}
