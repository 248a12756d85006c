/* jinja_ops.c — Python semantics of the expression operators on values: attribute and item
 * lookup (dict keys vs methods, loop attributes, unsafe names) and arithmetic (+ - * / // % **,
 * with str/list concatenation and repetition, and str % args). Used by jinja_eval.c and
 * jinja_builtins.c; uses jinja_strings.c, jinja_args.c and jinja_value.c. */
#include <math.h>
#include <string.h>

#include "text/jinja/jinja_internal.h"

/* ---- attribute / item access ---- */

static jval bound_method(jctx *c, jval self, const char *name) {
    jval m = {.t = JT_METHOD};
    m.u.meth = jalloc(c, sizeof *m.u.meth);
    m.u.meth->name = name;
    m.u.meth->self = jalloc(c, sizeof(jval));
    *m.u.meth->self = self;
    return m;
}

static const char *const MUTATING[] = {"append", "pop", "insert", "extend", "remove", "clear", "update",
                                       "setdefault", "popitem", "sort", "reverse", "add", "discard", NULL};

jval jgetattr(jctx *c, jval obj, const char *name, int line) {
    jstep(c, 1);
    if (obj.t == JT_UNDEF) jfail_undefined(c, obj, line);
    if (name[0] == '_') return jv_undef(c, "access to attribute '%s' is unsafe", name);
    if (obj.t == JT_LOOP) {
        jloop *L = obj.u.loop;
        int64_t i = L->index0, n = L->length;
        if (!strcmp(name, "index")) return jv_int(i + 1);
        if (!strcmp(name, "index0")) return jv_int(i);
        if (!strcmp(name, "revindex")) return jv_int(n - i);
        if (!strcmp(name, "revindex0")) return jv_int(n - i - 1);
        if (!strcmp(name, "first")) return jv_bool(i == 0);
        if (!strcmp(name, "last")) return jv_bool(i == n - 1);
        if (!strcmp(name, "length")) return jv_int(n);
        if (!strcmp(name, "depth")) return jv_int(1);
        if (!strcmp(name, "depth0")) return jv_int(0);
        if (!strcmp(name, "previtem"))
            return i > 0 ? jv_seq_item(L->seq, i - 1) : jv_undef(c, "there is no previous item");
        if (!strcmp(name, "nextitem"))
            return i + 1 < n ? jv_seq_item(L->seq, i + 1) : jv_undef(c, "there is no next item");
        if (!strcmp(name, "cycle")) return bound_method(c, obj, "cycle");
        return jv_undef(c, "'LoopContext' object has no attribute '%s'", name);
    }
    if (obj.t == JT_NS) {
        const jval *v = jdict_get_s(obj.u.d, name);
        return v ? *v : jv_undef(c, "'Namespace' object has no attribute '%s'", name);
    }
    if (obj.t == JT_LIST || obj.t == JT_DICT)
        for (int i = 0; MUTATING[i]; i++)
            if (!strcmp(name, MUTATING[i]) && (obj.t == JT_DICT ? strcmp(name, "sort") && strcmp(name, "reverse") : true))
                return jv_undef(c, "access to attribute '%s' of '%s' object is unsafe.", name, jtype_name(obj));
    if (jmethod_exists(obj, name)) return bound_method(c, obj, name);
    if (obj.t == JT_DICT) {
        const jval *v = jdict_get_s(obj.u.d, name);
        if (v) return *v;
    }
    return jv_undef(c, "'%s object' has no attribute '%s'", jtype_name(obj), name);
}

/* Python index normalisation; false when out of range. */
static bool norm_index(int64_t *i, int64_t n) {
    if (*i < 0) *i += n;
    return *i >= 0 && *i < n;
}

jval jgetitem(jctx *c, jval obj, jval key, int line) {
    jstep(c, 1);
    if (obj.t == JT_UNDEF) jfail_undefined(c, obj, line);
    if (obj.t == JT_DICT || obj.t == JT_NS) {
        const jval *v = jdict_get(obj.u.d, key);
        if (v) return *v;
        if (key.t == JT_STR && obj.t == JT_DICT) {
            const char *name = jstrndup(c, key.u.s.s, key.u.s.n);
            if (jmethod_exists(obj, name)) return jgetattr(c, obj, name, line);
        }
        jbuf b = {0};
        jv_repr_to(c, &b, key);
        return jv_undef(c, "'dict object' has no attribute %s", b.p ? b.p : "");
    }
    if (obj.flags & JF_GEN) return jv_undef(c, "'generator' object is not subscriptable");
    if (key.t == JT_INT || key.t == JT_BOOL) {
        int64_t i = key.t == JT_INT ? key.u.i : key.u.b;
        if (obj.t == JT_LIST || obj.t == JT_RANGE) {
            int64_t n = jv_len(c, obj);
            if (norm_index(&i, n)) return jv_seq_item(obj, i);
            return jv_undef(c, "%s object has no element %lld", jtype_name(obj), (long long)i);
        }
        if (obj.t == JT_STR) {
            int64_t n = (int64_t)ju_count(obj.u.s.s, obj.u.s.n);
            if (!norm_index(&i, n)) return jv_undef(c, "str object has no element %lld", (long long)i);
            size_t off = ju_offset(obj.u.s.s, obj.u.s.n, (size_t)i), adv;
            ju_decode(obj.u.s.s + off, obj.u.s.n - off, &adv);
            return jv_str(obj.u.s.s + off, adv);
        }
    }
    if (key.t == JT_STR) return jgetattr(c, obj, jstrndup(c, key.u.s.s, key.u.s.n), line);
    return jv_undef(c, "'%s object' has no element", jtype_name(obj));
}

/* ---- methods that exist (jmethod_call in jinja_builtins.c implements them) ---- */

static const char *const DICT_METHODS[] = {"items", "keys", "values", "get", "copy", NULL};
static const char *const LIST_METHODS[] = {"index", "count", "copy", NULL};

bool jmethod_exists(jval self, const char *name) {
    if (self.flags & JF_GEN) return false; /* generators have no list methods */
    switch (self.t) {
    case JT_STR: return jstr_has_method(name);
    case JT_DICT: return jname_in(DICT_METHODS, name);
    case JT_LIST: return jname_in(LIST_METHODS, name);
    default: return false;
    }
}

/* ---- operators ---- */

_Noreturn static void bad_operands(jctx *c, const char *op, jval a, jval b, int line) {
    if (a.t == JT_UNDEF) jfail_undefined(c, a, line);
    if (b.t == JT_UNDEF) jfail_undefined(c, b, line);
    jfail_at(c, line, "unsupported operand type(s) for %s: '%s' and '%s'", op, jtype_name(a), jtype_name(b));
}

static jval repeat(jctx *c, jval seq, int64_t times, int line) {
    if (times < 0) times = 0;
    if (seq.t == JT_STR) {
        if (seq.u.s.n && (uint64_t)times > c->lim.max_output / seq.u.s.n) jfail_at(c, line, "string repetition too large");
        jbuf b = {0};
        for (int64_t i = 0; i < times; i++) jbuf_put(c, &b, seq.u.s.s, seq.u.s.n);
        return jv_str(b.p ? b.p : "", b.n);
    }
    size_t n = seq.u.l->n;
    if (n && (uint64_t)times > ((size_t)1 << 24) / n) jfail_at(c, line, "list repetition too large");
    jstep(c, n * (uint64_t)times);
    jval r = jv_list(c, n * (size_t)times);
    r.u.l->tuple = seq.u.l->tuple;
    for (int64_t i = 0; n && i < times; i++) jv_copy(r.u.l->v + (size_t)i * n, seq.u.l->v, n);
    return r;
}

jval jv_arith(jctx *c, int op, jval a, jval b, int line) {
    const char *opname = op == '+' ? "+" : op == '-' ? "-" : op == '*' ? "*" : op == '/' ? "/" : op == '%' ? "%" : op == JOP2('/', '/') ? "//" : "**";
    if (jv_is_number(a) && jv_is_number(b)) {
        if (jv_is_intlike(a) && jv_is_intlike(b) && op != '/') {
            int64_t x = jv_as_int(a), y = jv_as_int(b), r = 0;
            bool ovf = false;
            switch (op) {
            case '+': ovf = __builtin_add_overflow(x, y, &r); break;
            case '-': ovf = __builtin_sub_overflow(x, y, &r); break;
            case '*': ovf = __builtin_mul_overflow(x, y, &r); break;
            case '%': case JOP2('/', '/'):
                if (y == 0) jfail_at(c, line, "integer division or modulo by zero");
                if (x == INT64_MIN && y == -1) { ovf = true; break; }
                {
                    int64_t q = x / y, m = x % y;
                    if (m != 0 && ((m < 0) != (y < 0))) { q--; m += y; }
                    r = op == '%' ? m : q;
                }
                break;
            default: /* ** */
                if (y < 0) return jv_float(pow((double)x, (double)y));
                r = 1;
                for (int64_t i = 0; i < y && !ovf; i++) {
                    ovf = __builtin_mul_overflow(r, x, &r);
                    if (r == 0 || r == 1) break;
                    if (i > 64 && r == -1) { r = (y % 2) ? -1 : 1; break; }
                }
            }
            if (ovf) jfail_at(c, line, "integer overflow in '%s'", opname);
            return jv_int(r);
        }
        double x = jv_as_double(a), y = jv_as_double(b);
        switch (op) {
        case '+': return jv_float(x + y);
        case '-': return jv_float(x - y);
        case '*': return jv_float(x * y);
        case '/': if (y == 0) jfail_at(c, line, "division by zero"); return jv_float(x / y);
        case '%': case JOP2('/', '/'): {
            if (y == 0) jfail_at(c, line, "float modulo or division by zero");
            double m = fmod(x, y);
            if (m != 0 && ((m < 0) != (y < 0))) m += y;
            if (m == 0) m = copysign(0.0, y); /* Python: a zero remainder takes the divisor's sign */
            return jv_float(op == '%' ? m : floor(x / y));
        }
        default: return jv_float(pow(x, y));
        }
    }
    if (op == '+' && a.t == JT_STR && b.t == JT_STR) {
        jbuf r = {0};
        bool markup = (a.flags | b.flags) & JF_MARKUP;
        /* Markup + str (either order) HTML-escapes the plain str, as markupsafe does */
        if (markup && !(a.flags & JF_MARKUP)) a = jv_html_escape(c, a);
        if (markup && !(b.flags & JF_MARKUP)) b = jv_html_escape(c, b);
        jbuf_put(c, &r, a.u.s.s, a.u.s.n);
        jbuf_put(c, &r, b.u.s.s, b.u.s.n);
        jval res = jv_str(r.p ? r.p : "", r.n);
        if (markup) res.flags = JF_MARKUP;
        return res;
    }
    if (op == '+' && a.t == JT_LIST && b.t == JT_LIST && a.u.l->tuple == b.u.l->tuple && !((a.flags | b.flags) & JF_GEN)) {
        jval r = jv_list(c, a.u.l->n + b.u.l->n);
        r.u.l->tuple = a.u.l->tuple;
        jv_copy(r.u.l->v, a.u.l->v, a.u.l->n);
        if (b.u.l->n) jv_copy(r.u.l->v + a.u.l->n, b.u.l->v, b.u.l->n);
        jstep(c, r.u.l->n);
        return r;
    }
    if (op == '*' && (a.t == JT_STR || a.t == JT_LIST) && jv_is_intlike(b)) return repeat(c, a, jv_as_int(b), line);
    if (op == '*' && (b.t == JT_STR || b.t == JT_LIST) && jv_is_intlike(a)) return repeat(c, b, jv_as_int(a), line);
    if (op == '%' && a.t == JT_STR) return jpercent_format(c, a, b, line);
    bad_operands(c, opname, a, b, line);
}
