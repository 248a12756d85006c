/* jinja_builtins.c — jinja2's filters and tests, dict/list methods (str methods: jinja_strings.c;
 * which methods exist: jinja_ops.c), and the globals a chat template may call (range, namespace,
 * dict, raise_exception, strftime_now). Unknown names return 0 so the caller can report
 * "unsupported filter 'x' at line N". Uses jinja_ops.c, jinja_strings.c, jinja_args.c,
 * jinja_unicode.c and jinja_value.c; only jinja_eval.c calls it. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "text/jinja/jinja_internal.h"

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

/* ---- sorting (stable merge sort; comparisons may fail the render) ---- */

typedef struct sortkey { jval key, item; } sortkey;

static jval sort_key(jctx *c, jval item, const jval *attribute, bool case_sensitive, int line) {
    jval k = attribute && attribute->t != JT_NONE ? get_attr_arg(c, item, *attribute, line) : item;
    if (!case_sensitive && k.t == JT_STR) k = jstr_case(c, k, 'l');
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
        jval m = jv_arith(c, '%', v, d, line);
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
            jneed_str(c, v, "in", line);
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
        if (r == keep) out = jlist_push(c, out, item);
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
        int64_t w = jneed_int(c, width, "indent", line);
        if (w < 0) w = 0;
        if (w > 1000) jfail_at(c, line, "indent width too large");
        char *sp = jalloc(c, (size_t)w + 1);
        memset(sp, ' ', (size_t)w);
        ind = jv_str(sp, (size_t)w);
    }
    jbuf withnl = {0};
    jbuf_put(c, &withnl, s.u.s.s, s.u.s.n);
    jbuf_putc(c, &withnl, '\n');
    jlist *lines = jstr_splitlines(c, jv_bufstr(&withnl), false).u.l;
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
    return jv_bufstr(&b);
}

static jval min_max(jctx *c, jval v, jcall *a, bool want_max, int line) {
    jlist *l = jv_iter_list(c, v);
    if (l->n == 0) return jv_undef(c, "No aggregated item, sequence was empty.");
    bool cs = jv_truthy(jarg_or(c, a, 0, "case_sensitive", jv_bool(false)));
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
    int64_t prec = jneed_int(c, jarg_or(c, a, 0, "precision", jv_int(0)), "round", line);
    jval m = jarg_or(c, a, 1, "method", jv_cstr(c, "common"));
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
    jval sep = jarg_or(c, a, 0, "d", jv_str("", 0));
    const jval *attr = jarg(c, a, 1, "attribute");
    sep = jv_to_string(c, sep);
    jbuf b = {0};
    for (size_t i = 0; i < l->n; i++) {
        if (i) jbuf_put(c, &b, sep.u.s.s, sep.u.s.n);
        jval it = l->v[i];
        if (attr) it = get_attr_arg(c, it, *attr, line);
        jv_str_to(c, &b, it);
    }
    return jv_bufstr(&b);
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
        jval def = jarg_or(c, a, 0, "default_value", jv_str("", 0));
        bool boolean = jv_truthy(jarg_or(c, a, 1, "boolean", jv_bool(false)));
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
        *res = jv_bufstr(&b);
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
        bool cs = jv_truthy(jarg_or(c, a, 0, "case_sensitive", jv_bool(false)));
        const jval *attr = jarg(c, a, 1, "attribute");
        jval out = jv_list(c, 0), keys = jv_list(c, 0);
        for (size_t i = 0; i < l->n; i++) {
            jval k = sort_key(c, l->v[i], attr, cs, line);
            bool seen = false;
            for (size_t j = 0; j < keys.u.l->n && !seen; j++) seen = jv_equal(c, keys.u.l->v[j], k);
            if (!seen) { keys = jlist_push(c, keys, k); out = jlist_push(c, out, l->v[i]); }
        }
        out.flags = JF_GEN;
        *res = out;
        return 1;
    }
    if (IS("sort")) {
        bool rev = jv_truthy(jarg_or(c, a, 0, "reverse", jv_bool(false)));
        bool cs = jv_truthy(jarg_or(c, a, 1, "case_sensitive", jv_bool(false)));
        *res = sorted(c, jv_iter_list(c, v), rev, cs, jarg(c, a, 2, "attribute"), line);
        return 1;
    }
    if (IS("dictsort")) {
        bool cs = jv_truthy(jarg_or(c, a, 0, "case_sensitive", jv_bool(false)));
        jval by = jarg_or(c, a, 1, "by", jv_cstr(c, "key"));
        bool rev = jv_truthy(jarg_or(c, a, 2, "reverse", jv_bool(false)));
        jval pos = jv_int(by.t == JT_STR && by.u.s.n == 5 && !memcmp(by.u.s.s, "value", 5) ? 1 : 0);
        *res = sorted(c, items_of(c, v, line).u.l, rev, cs, &pos, line);
        return 1;
    }
    if (IS("reverse")) {
        if (v.t == JT_STR) {
            jbuf b = {0};
            jlist *l = jv_iter_list(c, v);
            for (size_t i = l->n; i > 0; i--) jbuf_put(c, &b, l->v[i - 1].u.s.s, l->v[i - 1].u.s.n);
            *res = jv_bufstr(&b);
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
            jval def = jarg_or(c, a, SIZE_MAX, "default", jv_undef(c, "no default"));
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
        jval acc = jarg_or(c, a, 1, "start", jv_int(0));
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
        int64_t n = jneed_int(c, jarg_or(c, a, 0, "linecount", jv_int(1)), "batch", line);
        if (n <= 0) jfail_at(c, line, "batch size must be positive");
        const jval *fill = jarg(c, a, 1, "fill_with");
        jval out = jv_list(c, 0), cur = jv_list(c, 0);
        for (size_t i = 0; i < l->n; i++) {
            cur = jlist_push(c, cur, l->v[i]);
            if ((int64_t)cur.u.l->n == n) { out = jlist_push(c, out, cur); cur = jv_list(c, 0); }
        }
        if (cur.u.l->n) {
            while (fill && (int64_t)cur.u.l->n < n) cur = jlist_push(c, cur, *fill);
            out = jlist_push(c, out, cur);
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
    if (IS("int")) { *res = to_int(c, v, jarg_or(c, a, 0, "default", jv_int(0))); return 1; }
    if (IS("float")) { *res = to_float(c, v, jarg_or(c, a, 0, "default", jv_float(0))); return 1; }
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
        if (IS("trim")) *res = jstr_strip(str, jarg_or(c, a, 0, "chars", jv_none()), true, true);
        else if (IS("upper")) *res = jstr_case(c, str, 'u');
        else if (IS("lower")) *res = jstr_case(c, str, 'l');
        else if (IS("capitalize")) *res = jstr_case(c, str, 'c');
        else if (IS("title")) *res = jstr_case(c, str, 'j');
        else if (IS("replace")) {
            const jval *o = jarg(c, a, 0, "old"), *n = jarg(c, a, 1, "new");
            if (!o || !n) jfail_at(c, line, "replace needs old and new strings");
            const jval *cnt = jarg(c, a, 2, "count");
            *res = jstr_replace(c, str, jv_to_string(c, *o), jv_to_string(c, *n), cnt && cnt->t != JT_NONE ? jneed_int(c, *cnt, "replace", line) : -1);
        } else if (IS("indent"))
            *res = indent(c, str, jarg_or(c, a, 0, "width", jv_int(4)), jv_truthy(jarg_or(c, a, 1, "first", jv_bool(false))),
                          jv_truthy(jarg_or(c, a, 2, "blank", jv_bool(false))), line);
        else if (IS("center")) *res = jstr_center(c, str, jneed_int(c, jarg_or(c, a, 0, "width", jv_int(80)), "center", line), line);
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

jval jmethod_call(jctx *c, jval self, const char *name, jcall *a, int line) {
    jstep(c, 1);
    if (self.t == JT_LOOP && !strcmp(name, "cycle")) {
        if (a->npos == 0) jfail_at(c, line, "no items for cycling given");
        return a->pos[self.u.loop->index0 % (int64_t)a->npos];
    }
    if (self.t == JT_STR) return jstr_method(c, self, name, a, line);
    if (self.t == JT_DICT) {
        jdict *d = self.u.d;
        if (!strcmp(name, "items")) return items_of(c, self, line);
        if (!strcmp(name, "keys") || !strcmp(name, "values")) {
            jval r = jv_list(c, d->n);
            jv_copy(r.u.l->v, name[0] == 'k' ? d->k : d->v, d->n);
            return r;
        }
        if (!strcmp(name, "get")) {
            const jval *k = jarg(c, a, 0, NULL);
            if (!k) jfail_at(c, line, "get expected at least 1 argument, got 0");
            const jval *v = jdict_get(d, *k);
            return v ? *v : jarg_or(c, a, 1, NULL, jv_none());
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
            jv_copy(r.u.l->v, l->v, l->n);
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

bool jglobal_exists(const char *name) { return jname_in(GLOBALS, name); }

jval jglobal_call(jctx *c, const char *name, jcall *a, int line) {
    if (!strcmp(name, "raise_exception")) {
        jval m = a->npos ? jv_to_string(c, a->pos[0]) : jv_str("", 0);
        jfail(c, "%.*s", (int)(m.u.s.n > 500 ? 500 : m.u.s.n), m.u.s.s);
    }
    if (!strcmp(name, "range")) {
        if (a->npos < 1 || a->npos > 3 || a->nkw) jfail_at(c, line, "range expected 1 to 3 integer arguments");
        int64_t st = 0, stop, step = 1;
        if (a->npos == 1) stop = jneed_int(c, a->pos[0], "range", line);
        else {
            st = jneed_int(c, a->pos[0], "range", line);
            stop = jneed_int(c, a->pos[1], "range", line);
            if (a->npos == 3) step = jneed_int(c, a->pos[2], "range", line);
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
