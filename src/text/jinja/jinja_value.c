/* jinja_value.c — the render context's memory (arena, output buffers, limits, error exit) and
 * template values: construction, JSON import, Python truthiness/equality/ordering, str(),
 * repr() and json.dumps() formatting, UTF-8 code-point helpers. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/jinja/jinja_internal.h"

/* ---- context: errors, arena, steps, buffers ---- */

_Noreturn void jfail(jctx *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (c->e) vsnprintf(c->e->msg, sizeof c->e->msg, fmt, ap);
    va_end(ap);
    longjmp(c->jb, 1);
}

_Noreturn void jfail_at(jctx *c, int line, const char *fmt, ...) {
    char msg[E0_ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line > 0) jfail(c, "%s at line %d", msg, line);
    jfail(c, "%s", msg);
}

void *jalloc(jctx *c, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (n == 0) n = 16;
    jarena_block *b = c->arena;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > (64u << 10) ? n : (64u << 10);
        if (cap > c->lim.max_memory || c->mem_used > c->lim.max_memory - cap)
            jfail(c, "template used more than %zu bytes of memory", c->lim.max_memory);
        jarena_block *nb = malloc(sizeof *nb + cap);
        if (!nb) jfail(c, "out of memory");
        nb->next = c->arena;
        nb->used = 0;
        nb->cap = cap;
        c->arena = nb;
        c->mem_used += cap;
        b = nb;
    }
    void *p = (char *)(b + 1) + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

char *jstrndup(jctx *c, const char *s, size_t n) {
    if (n == SIZE_MAX) jfail(c, "string too long");
    char *p = jalloc(c, n + 1);
    if (n) memcpy(p, s, n);
    p[n] = 0;
    return p;
}

void jstep(jctx *c, uint64_t n) {
    c->steps += n;
    if (c->steps > c->lim.max_steps)
        jfail(c, "template exceeded %llu evaluation steps (infinite loop?)", (unsigned long long)c->lim.max_steps);
}

void jbuf_put(jctx *c, jbuf *b, const char *s, size_t n) {
    if (n == 0) return;
    if (n > c->lim.max_output || b->n > c->lim.max_output - n)
        jfail(c, "template output exceeds %zu bytes", c->lim.max_output);
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        /* buffers are arena memory too, so the memory bound covers them */
        char *p = jalloc(c, cap);
        if (b->n) memcpy(p, b->p, b->n);
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

void jbuf_putc(jctx *c, jbuf *b, char ch) { jbuf_put(c, b, &ch, 1); }

static void jbuf_puts(jctx *c, jbuf *b, const char *s) { jbuf_put(c, b, s, strlen(s)); }

/* ---- UTF-8 ---- */

uint32_t ju_decode(const char *s, size_t n, size_t *adv) {
    const unsigned char *u = (const unsigned char *)s;
    if (n == 0) { *adv = 0; return 0; }
    if (u[0] < 0x80) { *adv = 1; return u[0]; }
    int len = u[0] >= 0xf0 ? 4 : u[0] >= 0xe0 ? 3 : u[0] >= 0xc0 ? 2 : 1;
    if (len == 1 || (size_t)len > n) { *adv = 1; return 0xfffd; }
    uint32_t cp = u[0] & (0x7f >> len);
    for (int i = 1; i < len; i++) {
        if ((u[i] & 0xc0) != 0x80) { *adv = 1; return 0xfffd; }
        cp = (cp << 6) | (u[i] & 0x3f);
    }
    *adv = (size_t)len;
    return cp;
}

size_t ju_encode(uint32_t cp, char *o) {
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xc0 | (cp >> 6)); o[1] = (char)(0x80 | (cp & 0x3f)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | (cp >> 12)); o[1] = (char)(0x80 | ((cp >> 6) & 0x3f)); o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | (cp >> 18)); o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3f)); o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

bool ju_valid(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        if (u[i] < 0x80) { i++; continue; }
        int len = (u[i] & 0xe0) == 0xc0 ? 2 : (u[i] & 0xf0) == 0xe0 ? 3 : (u[i] & 0xf8) == 0xf0 ? 4 : 0;
        if (!len || i + (size_t)len > n) return false;
        size_t adv;
        uint32_t cp = ju_decode(s + i, n - i, &adv);
        if (adv != (size_t)len) return false;
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp < 0xe000))
            return false;
        i += (size_t)len;
    }
    return true;
}

size_t ju_count(const char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += ((unsigned char)s[i] & 0xc0) != 0x80;
    return k;
}

size_t ju_offset(const char *s, size_t n, size_t cp) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (((unsigned char)s[i] & 0xc0) != 0x80) {
            if (k == cp) return i;
            k++;
        }
    }
    return n;
}

bool ju_isspace(uint32_t c) {
    return (c >= 9 && c <= 13) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

/* ---- construction ---- */

jval jv_undef(jctx *c, const char *fmt, ...) {
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    jval v = {.t = JT_UNDEF};
    v.u.undef = jstrndup(c, msg, strlen(msg));
    return v;
}

jval jv_cstr(jctx *c, const char *s) {
    size_t n = strlen(s);
    return jv_str(jstrndup(c, s, n), n);
}

jval jv_list(jctx *c, size_t n) {
    if (n > (size_t)1 << 28) jfail(c, "list too large (%zu items)", n);
    jval v = {.t = JT_LIST};
    v.u.l = jalloc(c, sizeof *v.u.l);
    v.u.l->n = n;
    v.u.l->v = jalloc(c, (n ? n : 1) * sizeof(jval));
    for (size_t i = 0; i < n; i++) v.u.l->v[i].t = JT_NONE;
    return v;
}

jval jlist_push(jctx *c, jval l, jval v) {
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

jval jv_dict(jctx *c) {
    jval v = {.t = JT_DICT};
    v.u.d = jalloc(c, sizeof *v.u.d);
    return v;
}

static bool key_eq(jval a, jval b) {
    if (a.t == JT_STR && b.t == JT_STR) return a.u.s.n == b.u.s.n && !memcmp(a.u.s.s, b.u.s.s, a.u.s.n);
    if (jv_is_number(a) && jv_is_number(b)) return jv_as_double(a) == jv_as_double(b);
    if (a.t == JT_NONE && b.t == JT_NONE) return true;
    return false;
}

const jval *jdict_get(const jdict *d, jval k) {
    for (size_t i = 0; i < d->n; i++)
        if (key_eq(d->k[i], k)) return &d->v[i];
    return NULL;
}

const jval *jdict_get_s(const jdict *d, const char *k) { return jdict_get(d, jv_str(k, strlen(k))); }

void jdict_set(jctx *c, jdict *d, jval k, jval v) {
    if (k.t != JT_STR && k.t != JT_INT && k.t != JT_FLOAT && k.t != JT_BOOL && k.t != JT_NONE)
        jfail(c, "unhashable type: '%s'", jtype_name(k));
    for (size_t i = 0; i < d->n; i++)
        if (key_eq(d->k[i], k)) { d->v[i] = v; return; }
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 8;
        jval *nk = jalloc(c, cap * sizeof *nk), *nv = jalloc(c, cap * sizeof *nv);
        if (d->n) { memcpy(nk, d->k, d->n * sizeof *nk); memcpy(nv, d->v, d->n * sizeof *nv); }
        d->k = nk;
        d->v = nv;
        d->cap = cap;
    }
    d->k[d->n] = k;
    d->v[d->n] = v;
    d->n++;
}

jval jv_from_json(jctx *c, const json_t *j, int depth) {
    if (depth > c->lim.max_depth) jfail(c, "input JSON nested too deeply");
    jstep(c, 1);
    switch (json_typeof(j)) {
    case JSON_OBJECT: {
        jval d = jv_dict(c);
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v) jdict_set(c, d.u.d, jv_cstr(c, k), jv_from_json(c, v, depth + 1));
        return d;
    }
    case JSON_ARRAY: {
        jval l = jv_list(c, json_array_size(j));
        for (size_t i = 0; i < l.u.l->n; i++) l.u.l->v[i] = jv_from_json(c, json_array_get(j, i), depth + 1);
        return l;
    }
    case JSON_STRING: return jv_str(jstrndup(c, json_string_value(j), json_string_length(j)), json_string_length(j));
    case JSON_INTEGER: return jv_int(json_integer_value(j));
    case JSON_REAL: return jv_float(json_real_value(j));
    case JSON_TRUE: return jv_bool(true);
    case JSON_FALSE: return jv_bool(false);
    default: return jv_none();
    }
}

/* ---- Python semantics ---- */

const char *jtype_name(jval v) {
    switch (v.t) {
    case JT_UNDEF: return "Undefined";
    case JT_NONE: return "NoneType";
    case JT_BOOL: return "bool";
    case JT_INT: return "int";
    case JT_FLOAT: return "float";
    case JT_STR: return "str";
    case JT_LIST: return (v.flags & JF_GEN) ? "generator" : v.u.l->tuple ? "tuple" : "list";
    case JT_DICT: return "dict";
    case JT_NS: return "Namespace";
    case JT_RANGE: return "range";
    case JT_LOOP: return "LoopContext";
    case JT_MACRO: return "Macro";
    default: return "function";
    }
}

bool jv_truthy(jval v) {
    switch (v.t) {
    case JT_UNDEF: case JT_NONE: return false;
    case JT_BOOL: return v.u.b;
    case JT_INT: return v.u.i != 0;
    case JT_FLOAT: return v.u.f != 0;
    case JT_STR: return v.u.s.n != 0;
    case JT_LIST: return (v.flags & JF_GEN) || v.u.l->n != 0; /* a generator object is always true */
    case JT_DICT: return v.u.d->n != 0;
    case JT_RANGE: return v.u.r->len != 0;
    default: return true;
    }
}

bool jv_is_number(jval v) { return v.t == JT_INT || v.t == JT_FLOAT || v.t == JT_BOOL; }

double jv_as_double(jval v) {
    return v.t == JT_FLOAT ? v.u.f : v.t == JT_INT ? (double)v.u.i : v.t == JT_BOOL ? (double)v.u.b : 0;
}

jval jv_seq_item(jval seq, int64_t i) {
    if (seq.t == JT_RANGE) return jv_int(seq.u.r->start + i * seq.u.r->step);
    return seq.u.l->v[i];
}

bool jv_equal(jctx *c, jval a, jval b) {
    jstep(c, 1);
    if (jv_is_number(a) && jv_is_number(b)) {
        if (a.t != JT_FLOAT && b.t != JT_FLOAT) return (a.t == JT_INT ? a.u.i : a.u.b) == (b.t == JT_INT ? b.u.i : b.u.b);
        return jv_as_double(a) == jv_as_double(b);
    }
    if (a.t == JT_RANGE || b.t == JT_RANGE) {
        if (a.t != b.t) return false;
        return a.u.r->len == b.u.r->len && (a.u.r->len == 0 || (a.u.r->start == b.u.r->start && (a.u.r->len == 1 || a.u.r->step == b.u.r->step)));
    }
    if (a.t != b.t) return false;
    switch (a.t) {
    case JT_UNDEF: case JT_NONE: return true;
    case JT_STR: return a.u.s.n == b.u.s.n && !memcmp(a.u.s.s, b.u.s.s, a.u.s.n);
    case JT_LIST:
        if ((a.flags | b.flags) & JF_GEN) return a.u.l == b.u.l;
        if (a.u.l->tuple != b.u.l->tuple || a.u.l->n != b.u.l->n) return false;
        for (size_t i = 0; i < a.u.l->n; i++)
            if (!jv_equal(c, a.u.l->v[i], b.u.l->v[i])) return false;
        return true;
    case JT_DICT:
        if (a.u.d->n != b.u.d->n) return false;
        for (size_t i = 0; i < a.u.d->n; i++) {
            const jval *o = jdict_get(b.u.d, a.u.d->k[i]);
            if (!o || !jv_equal(c, a.u.d->v[i], *o)) return false;
        }
        return true;
    case JT_NS: return a.u.d == b.u.d;
    case JT_FUNC: return !strcmp(a.u.fn, b.u.fn);
    case JT_MACRO: return a.u.m == b.u.m;
    case JT_LOOP: return a.u.loop == b.u.loop;
    default: return false;
    }
}

int jv_compare(jctx *c, jval a, jval b) {
    jstep(c, 1);
    if (jv_is_number(a) && jv_is_number(b)) {
        if (a.t == JT_FLOAT || b.t == JT_FLOAT) {
            double x = jv_as_double(a), y = jv_as_double(b);
            return x < y ? -1 : x > y ? 1 : 0;
        }
        int64_t x = a.t == JT_INT ? a.u.i : a.u.b, y = b.t == JT_INT ? b.u.i : b.u.b;
        return x < y ? -1 : x > y ? 1 : 0;
    }
    if (a.t == JT_STR && b.t == JT_STR) {
        size_t n = a.u.s.n < b.u.s.n ? a.u.s.n : b.u.s.n;
        int r = memcmp(a.u.s.s, b.u.s.s, n); /* UTF-8 byte order = code point order */
        if (r) return r < 0 ? -1 : 1;
        return a.u.s.n < b.u.s.n ? -1 : a.u.s.n > b.u.s.n ? 1 : 0;
    }
    if (a.t == JT_LIST && b.t == JT_LIST && a.u.l->tuple == b.u.l->tuple) {
        for (size_t i = 0; i < a.u.l->n && i < b.u.l->n; i++) {
            if (jv_equal(c, a.u.l->v[i], b.u.l->v[i])) continue;
            return jv_compare(c, a.u.l->v[i], b.u.l->v[i]);
        }
        return a.u.l->n < b.u.l->n ? -1 : a.u.l->n > b.u.l->n ? 1 : 0;
    }
    jfail(c, "'<' not supported between instances of '%s' and '%s'", jtype_name(a), jtype_name(b));
}

int64_t jv_len(jctx *c, jval v) {
    switch (v.t) {
    case JT_UNDEF: return 0;
    case JT_STR: return (int64_t)ju_count(v.u.s.s, v.u.s.n);
    case JT_LIST:
        if (v.flags & JF_GEN) jfail(c, "object of type 'generator' has no len()");
        return (int64_t)v.u.l->n;
    case JT_DICT: case JT_NS: return (int64_t)v.u.d->n;
    case JT_RANGE: return v.u.r->len;
    default: jfail(c, "object of type '%s' has no len()", jtype_name(v));
    }
}

jlist *jv_iter_list(jctx *c, jval v) {
    jval r;
    switch (v.t) {
    case JT_UNDEF: return jv_list(c, 0).u.l;
    case JT_LIST:
        if (v.u.l->lazy_error) jfail(c, "%s", v.u.l->lazy_error);
        return v.u.l;
    case JT_DICT: {
        r = jv_list(c, v.u.d->n);
        jv_copy(r.u.l->v, v.u.d->k, v.u.d->n);
        return r.u.l;
    }
    case JT_STR: {
        r = jv_list(c, ju_count(v.u.s.s, v.u.s.n));
        size_t i = 0, k = 0;
        while (i < v.u.s.n) {
            size_t adv;
            ju_decode(v.u.s.s + i, v.u.s.n - i, &adv);
            r.u.l->v[k++] = jv_str(v.u.s.s + i, adv);
            i += adv;
        }
        jstep(c, k);
        return r.u.l;
    }
    case JT_RANGE:
        jstep(c, (uint64_t)v.u.r->len);
        r = jv_list(c, (size_t)v.u.r->len);
        for (int64_t i = 0; i < v.u.r->len; i++) r.u.l->v[i] = jv_seq_item(v, i);
        return r.u.l;
    default: jfail(c, "'%s' object is not iterable", jtype_name(v));
    }
}

/* ---- formatting ---- */

/* Python repr() of a float: the shortest string that round-trips, in Python's layout. */
void jfmt_float(double f, char *buf, size_t cap) {
    if (isnan(f)) { snprintf(buf, cap, "nan"); return; }
    if (isinf(f)) { snprintf(buf, cap, f < 0 ? "-inf" : "inf"); return; }
    char tmp[64];
    int prec = 1;
    for (; prec < 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, f);
        if (strtod(tmp, NULL) == f) break;
    }
    snprintf(tmp, sizeof tmp, "%.*e", prec - 1, f);
    /* tmp = [-]d[.ddd]e[+-]XX */
    char digits[32];
    int nd = 0;
    const char *p = tmp;
    bool neg = *p == '-';
    if (neg) p++;
    for (; *p && *p != 'e'; p++)
        if (*p != '.') digits[nd++] = *p;
    int exp = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    digits[nd] = 0;
    char *o = buf;
    size_t left = cap;
#define PUT(...) do { int w_ = snprintf(o, left, __VA_ARGS__); if (w_ > 0 && (size_t)w_ < left) { o += w_; left -= (size_t)w_; } } while (0)
    if (neg) PUT("-");
    if (exp >= -5 + 1 && exp < 16) {
        if (exp >= 0) {
            for (int i = 0; i <= exp; i++) PUT("%c", i < nd ? digits[i] : '0');
            PUT(".");
            if (nd > exp + 1) PUT("%s", digits + exp + 1);
            else PUT("0");
        } else {
            PUT("0.");
            for (int i = 0; i < -exp - 1; i++) PUT("0");
            PUT("%s", digits);
        }
    } else {
        PUT("%c", digits[0]);
        if (nd > 1) PUT(".%s", digits + 1);
        PUT("e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    }
#undef PUT
}

static void put_int(jctx *c, jbuf *b, int64_t i) {
    char t[32];
    snprintf(t, sizeof t, "%lld", (long long)i);
    jbuf_puts(c, b, t);
}

static void repr_str(jctx *c, jbuf *b, const char *s, size_t n) {
    bool has_sq = memchr(s, '\'', n) != NULL, has_dq = memchr(s, '"', n) != NULL;
    char q = has_sq && !has_dq ? '"' : '\'';
    jbuf_putc(c, b, q);
    size_t i = 0;
    while (i < n) {
        size_t adv;
        uint32_t cp = ju_decode(s + i, n - i, &adv);
        char t[16];
        if (cp == (uint32_t)q || cp == '\\') { t[0] = '\\'; t[1] = (char)cp; jbuf_put(c, b, t, 2); }
        else if (cp == '\n') jbuf_puts(c, b, "\\n");
        else if (cp == '\r') jbuf_puts(c, b, "\\r");
        else if (cp == '\t') jbuf_puts(c, b, "\\t");
        else if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) { snprintf(t, sizeof t, "\\x%02x", cp); jbuf_puts(c, b, t); }
        else jbuf_put(c, b, s + i, adv);
        i += adv;
    }
    jbuf_putc(c, b, q);
}

void jv_repr_to(jctx *c, jbuf *b, jval v) {
    jstep(c, 1);
    if (c->depth > c->lim.max_depth) jfail(c, "value nested too deeply to print");
    switch (v.t) {
    case JT_UNDEF: jbuf_puts(c, b, "Undefined"); return;
    case JT_STR:
        if (v.flags & JF_MARKUP) jbuf_puts(c, b, "Markup(");
        repr_str(c, b, v.u.s.s, v.u.s.n);
        if (v.flags & JF_MARKUP) jbuf_puts(c, b, ")");
        return;
    case JT_LIST: {
        if (v.flags & JF_GEN) { jbuf_puts(c, b, "<generator object>"); return; }
        bool tup = v.u.l->tuple;
        jbuf_putc(c, b, tup ? '(' : '[');
        c->depth++;
        for (size_t i = 0; i < v.u.l->n; i++) {
            if (i) jbuf_puts(c, b, ", ");
            jv_repr_to(c, b, v.u.l->v[i]);
        }
        c->depth--;
        if (tup && v.u.l->n == 1) jbuf_putc(c, b, ',');
        jbuf_putc(c, b, tup ? ')' : ']');
        return;
    }
    case JT_DICT: case JT_NS: {
        if (v.t == JT_NS) jbuf_puts(c, b, "<Namespace ");
        jbuf_putc(c, b, '{');
        c->depth++;
        for (size_t i = 0; i < v.u.d->n; i++) {
            if (i) jbuf_puts(c, b, ", ");
            jv_repr_to(c, b, v.u.d->k[i]);
            jbuf_puts(c, b, ": ");
            jv_repr_to(c, b, v.u.d->v[i]);
        }
        c->depth--;
        jbuf_putc(c, b, '}');
        if (v.t == JT_NS) jbuf_putc(c, b, '>');
        return;
    }
    default: jv_str_to(c, b, v);
    }
}

void jv_str_to(jctx *c, jbuf *b, jval v) {
    char t[64];
    switch (v.t) {
    case JT_UNDEF: return;
    case JT_NONE: jbuf_puts(c, b, "None"); return;
    case JT_BOOL: jbuf_puts(c, b, v.u.b ? "True" : "False"); return;
    case JT_INT: put_int(c, b, v.u.i); return;
    case JT_FLOAT: jfmt_float(v.u.f, t, sizeof t); jbuf_puts(c, b, t); return;
    case JT_STR: jbuf_put(c, b, v.u.s.s, v.u.s.n); return;
    case JT_RANGE:
        jbuf_puts(c, b, "range(");
        put_int(c, b, v.u.r->start);
        jbuf_puts(c, b, ", ");
        put_int(c, b, v.u.r->start + v.u.r->len * v.u.r->step);
        if (v.u.r->step != 1) { jbuf_puts(c, b, ", "); put_int(c, b, v.u.r->step); }
        jbuf_puts(c, b, ")");
        return;
    case JT_LIST: case JT_DICT: case JT_NS: jv_repr_to(c, b, v); return;
    case JT_LOOP: jbuf_puts(c, b, "<LoopContext>"); return;
    case JT_MACRO: jbuf_puts(c, b, "<Macro>"); return;
    default: jbuf_puts(c, b, "<built-in function>"); return;
    }
}

jval jv_to_string(jctx *c, jval v) {
    if (v.t == JT_STR) return v;
    jbuf b = {0};
    jv_str_to(c, &b, v);
    return jv_str(b.p ? b.p : "", b.n);
}

jval jv_html_escape(jctx *c, jval v) {
    if (v.t == JT_STR && (v.flags & JF_MARKUP)) return v;
    jval s = jv_to_string(c, v);
    jbuf b = {0};
    for (size_t i = 0; i < s.u.s.n; i++) {
        char ch = s.u.s.s[i];
        const char *r = ch == '&' ? "&amp;" : ch == '<' ? "&lt;" : ch == '>' ? "&gt;" : ch == '"' ? "&#34;" : ch == '\'' ? "&#39;" : NULL;
        if (r) jbuf_puts(c, &b, r);
        else jbuf_putc(c, &b, ch);
    }
    jval r = jv_str(b.p ? b.p : "", b.n);
    r.flags = JF_MARKUP;
    return r;
}

static void json_str(jctx *c, jbuf *b, const char *s, size_t n) {
    jbuf_putc(c, b, '"');
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch >= 0x20 && ch != '"' && ch != '\\') continue;
        jbuf_put(c, b, s + start, i - start);
        start = i + 1;
        char t[8];
        switch (ch) {
        case '"': jbuf_puts(c, b, "\\\""); break;
        case '\\': jbuf_puts(c, b, "\\\\"); break;
        case '\n': jbuf_puts(c, b, "\\n"); break;
        case '\r': jbuf_puts(c, b, "\\r"); break;
        case '\t': jbuf_puts(c, b, "\\t"); break;
        case '\b': jbuf_puts(c, b, "\\b"); break;
        case '\f': jbuf_puts(c, b, "\\f"); break;
        default: snprintf(t, sizeof t, "\\u%04x", ch); jbuf_puts(c, b, t);
        }
    }
    jbuf_put(c, b, s + start, n - start);
    jbuf_putc(c, b, '"');
}

static void json_newline(jctx *c, jbuf *b, const char *indent, int level) {
    jbuf_putc(c, b, '\n');
    for (int i = 0; i < level; i++) jbuf_puts(c, b, indent);
}

static void json_key(jctx *c, jbuf *b, jval k) {
    char t[64];
    switch (k.t) {
    case JT_STR: json_str(c, b, k.u.s.s, k.u.s.n); return;
    case JT_NONE: jbuf_puts(c, b, "\"null\""); return;
    case JT_BOOL: jbuf_puts(c, b, k.u.b ? "\"true\"" : "\"false\""); return;
    case JT_INT: snprintf(t, sizeof t, "\"%lld\"", (long long)k.u.i); jbuf_puts(c, b, t); return;
    case JT_FLOAT: jfmt_float(k.u.f, t + 1, sizeof t - 2); t[0] = '"'; strcat(t, "\""); jbuf_puts(c, b, t); return;
    default: jfail(c, "keys must be str, int, float, bool or None, not %s", jtype_name(k));
    }
}

/* json.dumps(v, ensure_ascii=False, indent=indent, separators=(item_sep, key_sep), sort_keys=...) */
void jv_tojson_to(jctx *c, jbuf *b, jval v, const char *indent, int level, bool sort_keys, const char *item_sep,
                  const char *key_sep) {
    jstep(c, 1);
    if (level > c->lim.max_depth) jfail(c, "value nested too deeply for tojson");
    char t[64];
    switch (v.t) {
    case JT_NONE: jbuf_puts(c, b, "null"); return;
    case JT_BOOL: jbuf_puts(c, b, v.u.b ? "true" : "false"); return;
    case JT_INT: put_int(c, b, v.u.i); return;
    case JT_FLOAT:
        if (isnan(v.u.f)) jbuf_puts(c, b, "NaN");
        else if (isinf(v.u.f)) jbuf_puts(c, b, v.u.f < 0 ? "-Infinity" : "Infinity");
        else { jfmt_float(v.u.f, t, sizeof t); jbuf_puts(c, b, t); }
        return;
    case JT_STR: json_str(c, b, v.u.s.s, v.u.s.n); return;
    case JT_LIST: case JT_RANGE: {
        if (v.flags & JF_GEN) jfail(c, "Object of type generator is not JSON serializable");
        jlist *l = jv_iter_list(c, v);
        if (l->n == 0) { jbuf_puts(c, b, "[]"); return; }
        jbuf_putc(c, b, '[');
        for (size_t i = 0; i < l->n; i++) {
            if (i) jbuf_puts(c, b, item_sep);
            if (indent) json_newline(c, b, indent, level + 1);
            jv_tojson_to(c, b, l->v[i], indent, level + 1, sort_keys, item_sep, key_sep);
        }
        if (indent) json_newline(c, b, indent, level);
        jbuf_putc(c, b, ']');
        return;
    }
    case JT_DICT: {
        jdict *d = v.u.d;
        if (d->n == 0) { jbuf_puts(c, b, "{}"); return; }
        size_t *order = jalloc(c, d->n * sizeof *order);
        for (size_t i = 0; i < d->n; i++) order[i] = i;
        if (sort_keys) /* insertion sort: stable, dicts are small */
            for (size_t i = 1; i < d->n; i++)
                for (size_t j = i; j > 0 && jv_compare(c, d->k[order[j - 1]], d->k[order[j]]) > 0; j--) {
                    size_t x = order[j]; order[j] = order[j - 1]; order[j - 1] = x;
                }
        jbuf_putc(c, b, '{');
        for (size_t i = 0; i < d->n; i++) {
            if (i) jbuf_puts(c, b, item_sep);
            if (indent) json_newline(c, b, indent, level + 1);
            json_key(c, b, d->k[order[i]]);
            jbuf_puts(c, b, key_sep);
            jv_tojson_to(c, b, d->v[order[i]], indent, level + 1, sort_keys, item_sep, key_sep);
        }
        if (indent) json_newline(c, b, indent, level);
        jbuf_putc(c, b, '}');
        return;
    }
    default: jfail(c, "Object of type %s is not JSON serializable", jtype_name(v));
    }
}
