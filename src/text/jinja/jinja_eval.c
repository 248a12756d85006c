/* jinja_eval.c — executes the syntax tree: statements (with jinja2 scoping: for loops and
 * macros get their own scope, if does not; namespace() objects are the only way out of a loop),
 * expressions (operators and lookups from jinja_ops.c, filters/tests/methods from
 * jinja_builtins.c), slicing, macro calls; and the public entry points jinja_render /
 * jinja_render_chat. The top of the renderer: no other jinja_*.c file calls into it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "text/jinja/jinja_internal.h"

enum { FLOW_NORMAL = 0, FLOW_BREAK, FLOW_CONTINUE };

/* ---- scopes ---- */

static jscope *scope_new(jctx *c, jscope *parent) {
    jscope *s = jalloc(c, sizeof *s);
    s->parent = parent;
    return s;
}

static void scope_set(jctx *c, jscope *s, const char *name, jval v) {
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->names[i], name)) { s->vals[i] = v; return; }
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        const char **nn = jalloc(c, cap * sizeof *nn);
        jval *nv = jalloc(c, cap * sizeof *nv);
        if (s->n) { memcpy(nn, s->names, s->n * sizeof *nn); memcpy(nv, s->vals, s->n * sizeof *nv); }
        s->names = nn;
        s->vals = nv;
        s->cap = cap;
    }
    s->names[s->n] = name;
    s->vals[s->n] = v;
    s->n++;
}

static jval lookup(jctx *c, jscope *s, const char *name) {
    for (; s; s = s->parent)
        for (size_t i = 0; i < s->n; i++)
            if (!strcmp(s->names[i], name)) return s->vals[i];
    if (jglobal_exists(name)) { jval f = {.t = JT_FUNC}; f.u.fn = name; return f; }
    return jv_undef(c, "'%s' is undefined", name);
}

/* ---- output capture ---- */

static int exec_body(jctx *c, jscope *s, const jnodes *body);

static jval capture(jctx *c, jscope *s, const jnodes *body) {
    jbuf b = {0}, *saved = c->out;
    c->out = &b;
    exec_body(c, s, body);
    c->out = saved;
    return jv_str(b.p ? b.p : "", b.n);
}

/* ---- slicing ---- */

static int64_t slice_bound(jctx *c, jval v, int64_t n, int64_t step, bool is_start, int line) {
    if (v.t == JT_NONE || v.t == JT_UNDEF) return step > 0 ? (is_start ? 0 : n) : (is_start ? n - 1 : -1);
    if (v.t != JT_INT && v.t != JT_BOOL) jfail_at(c, line, "slice indices must be integers or None");
    int64_t i = v.t == JT_INT ? v.u.i : v.u.b;
    if (i < 0) {
        i += n;
        if (i < 0) i = step > 0 ? 0 : -1;
    } else if (i >= n) i = step > 0 ? n : n - 1;
    return i;
}

static jval do_slice(jctx *c, jval obj, jval a, jval b, jval st, int line) {
    int64_t step = 1;
    if (st.t == JT_INT) step = st.u.i;
    else if (st.t != JT_NONE && st.t != JT_UNDEF) jfail_at(c, line, "slice indices must be integers or None");
    if (step == 0) jfail_at(c, line, "slice step cannot be zero");
    if (obj.t == JT_UNDEF) jfail_undefined(c, obj, line);
    if (obj.flags & JF_GEN) return jv_undef(c, "'generator' object is not subscriptable");
    if (obj.t != JT_STR && obj.t != JT_LIST && obj.t != JT_RANGE)
        jfail_at(c, line, "'%s' object is not subscriptable", jtype_name(obj));
    int64_t n = jv_len(c, obj);
    int64_t lo = slice_bound(c, a, n, step, true, line), hi = slice_bound(c, b, n, step, false, line);
    int64_t cnt = 0;
    if (step > 0 && hi > lo) cnt = (hi - lo + step - 1) / step;
    if (step < 0 && lo > hi) cnt = (lo - hi + (-step) - 1) / (-step);
    jstep(c, (uint64_t)cnt);
    if (obj.t == JT_STR) {
        /* byte offsets of every code point, then pick */
        size_t *off = jalloc(c, ((size_t)n + 1) * sizeof *off);
        size_t k = 0;
        for (size_t i = 0; i < obj.u.s.n; i++)
            if (((unsigned char)obj.u.s.s[i] & 0xc0) != 0x80) off[k++] = i;
        off[k] = obj.u.s.n;
        if (step == 1) return jv_str(obj.u.s.s + off[lo], cnt ? off[lo + cnt] - off[lo] : 0);
        jbuf out = {0};
        for (int64_t j = 0, i = lo; j < cnt; j++, i += step) jbuf_put(c, &out, obj.u.s.s + off[i], off[i + 1] - off[i]);
        return jv_str(out.p ? out.p : "", out.n);
    }
    jval r = jv_list(c, (size_t)cnt);
    if (obj.t == JT_LIST) r.u.l->tuple = obj.u.l->tuple;
    for (int64_t j = 0, i = lo; j < cnt; j++, i += step) r.u.l->v[j] = jv_seq_item(obj, i);
    return r;
}

/* ---- calls ---- */

static void eval_args(jctx *c, jscope *s, const jnode *n, jcall *a) {
    memset(a, 0, sizeof *a);
    a->npos = n->args.n;
    a->pos = jalloc(c, (a->npos + 1) * sizeof(jval));
    for (size_t i = 0; i < a->npos; i++) a->pos[i] = jeval(c, s, n->args.v[i]);
    a->nkw = n->kwargs.n;
    a->kwn = n->kwnames;
    a->kwv = jalloc(c, (a->nkw + 1) * sizeof(jval));
    for (size_t i = 0; i < a->nkw; i++) a->kwv[i] = jeval(c, s, n->kwargs.v[i]);
}

static jval call_macro(jctx *c, jval m, jcall *a, int line) {
    const jnode *def = m.u.m->def;
    if (++c->depth > c->lim.max_depth)
        jfail_at(c, line, "macro calls nested too deeply (more than %d levels; runaway recursion?)", c->lim.max_depth);
    jscope *ms = scope_new(c, m.u.m->closure);
    size_t np = def->args.n;
    jval extra = jv_list(c, a->npos > np ? a->npos - np : 0);
    extra.u.l->tuple = true;
    jval kwextra = jv_dict(c);
    for (size_t i = 0; i < a->npos; i++) {
        if (i < np) scope_set(c, ms, def->kwnames[i], a->pos[i]);
        else extra.u.l->v[i - np] = a->pos[i];
    }
    for (size_t k = 0; k < a->nkw; k++) {
        size_t i = 0;
        while (i < np && strcmp(def->kwnames[i], a->kwn[k])) i++;
        if (i == np) { jdict_set(c, kwextra.u.d, jv_cstr(c, a->kwn[k]), a->kwv[k]); continue; }
        if (i < a->npos) jfail_at(c, line, "macro '%s' got multiple values for argument '%s'", def->name, a->kwn[k]);
        scope_set(c, ms, def->kwnames[i], a->kwv[k]);
    }
    for (size_t i = a->npos; i < np; i++) {
        bool given = false;
        for (size_t k = 0; k < a->nkw; k++) given |= !strcmp(def->kwnames[i], a->kwn[k]);
        if (given) continue;
        scope_set(c, ms, def->kwnames[i],
                  def->args.v[i] ? jeval(c, ms, def->args.v[i]) : jv_undef(c, "parameter '%s' was not provided", def->kwnames[i]));
    }
    scope_set(c, ms, "varargs", extra);
    scope_set(c, ms, "kwargs", kwextra);
    jval out = capture(c, ms, &def->body);
    c->depth--;
    return out;
}

jval jcall_value(jctx *c, jscope *s, jval callee, jcall *a, int line) {
    (void)s;
    jstep(c, 1);
    switch (callee.t) {
    case JT_MACRO: return call_macro(c, callee, a, line);
    case JT_FUNC: return jglobal_call(c, callee.u.fn, a, line);
    case JT_METHOD: return jmethod_call(c, *callee.u.meth->self, callee.u.meth->name, a, line);
    case JT_UNDEF:
        if (!strncmp(callee.u.undef, "access to attribute", 19)) jfail_at(c, line, "%s", callee.u.undef);
        jfail_undefined(c, callee, line);
    default: jfail_at(c, line, "'%s' object is not callable", jtype_name(callee));
    }
}

static bool contains(jctx *c, jval hay, jval needle, int line) {
    switch (hay.t) {
    case JT_STR:
        if (needle.t != JT_STR) jfail_at(c, line, "'in <string>' requires string as left operand, not %s", jtype_name(needle));
        if (needle.u.s.n == 0) return true;
        jstep(c, hay.u.s.n / 64);
        return memmem(hay.u.s.s, hay.u.s.n, needle.u.s.s, needle.u.s.n) != NULL;
    case JT_LIST:
        if (hay.u.l->lazy_error) jfail_at(c, line, "%s", hay.u.l->lazy_error);
        for (size_t i = 0; i < hay.u.l->n; i++)
            if (jv_equal(c, hay.u.l->v[i], needle)) return true;
        return false;
    case JT_RANGE: {
        if (!jv_is_intlike(needle)) return false;
        int64_t x = jv_as_int(needle), st = hay.u.r->start, sp = hay.u.r->step, n = hay.u.r->len;
        if (n == 0 || (x - st) % sp) return false;
        int64_t k = (x - st) / sp;
        return k >= 0 && k < n;
    }
    case JT_DICT: case JT_NS:
        if (needle.t == JT_LIST || needle.t == JT_DICT || needle.t == JT_NS) jfail_at(c, line, "unhashable type: '%s'", jtype_name(needle));
        return jdict_get(hay.u.d, needle) != NULL;
    case JT_UNDEF: return false;
    default: jfail_at(c, line, "argument of type '%s' is not iterable", jtype_name(hay));
    }
}

static bool compare(jctx *c, int op, jval a, jval b, int line) {
    c->line = line;
    switch (op) {
    case JOP2('=', '='): return jv_equal(c, a, b);
    case JOP2('!', '='): return !jv_equal(c, a, b);
    case JOP_IN: return contains(c, b, a, line);
    case JOP_NOTIN: return !contains(c, b, a, line);
    default: break;
    }
    if (a.t == JT_UNDEF) jfail_undefined(c, a, line);
    if (b.t == JT_UNDEF) jfail_undefined(c, b, line);
    bool ok = (jv_is_number(a) && jv_is_number(b)) || (a.t == JT_STR && b.t == JT_STR) ||
              (a.t == JT_LIST && b.t == JT_LIST && !((a.flags | b.flags) & JF_GEN));
    if (!ok) {
        const char *o = op == '<' ? "<" : op == '>' ? ">" : op == JOP2('<', '=') ? "<=" : ">=";
        jfail_at(c, line, "'%s' not supported between instances of '%s' and '%s'", o, jtype_name(a), jtype_name(b));
    }
    int r = jv_compare(c, a, b);
    if (jv_is_number(a) && (isnan(jv_as_double(a)) || isnan(jv_as_double(b)))) return false;
    switch (op) {
    case '<': return r < 0;
    case '>': return r > 0;
    case JOP2('<', '='): return r <= 0;
    default: return r >= 0;
    }
}

/* ---- expressions ---- */

jval jeval(jctx *c, jscope *s, const jnode *n) {
    jstep(c, 1);
    c->line = n->line;
    switch (n->k) {
    case N_LIT: return n->lit;
    case N_NAME: return lookup(c, s, n->name);
    case N_LIST: case N_TUPLE: {
        jval l = jv_list(c, n->body.n);
        l.u.l->tuple = n->k == N_TUPLE;
        for (size_t i = 0; i < n->body.n; i++) l.u.l->v[i] = jeval(c, s, n->body.v[i]);
        return l;
    }
    case N_DICT: {
        jval d = jv_dict(c);
        for (size_t i = 0; i < n->body.n; i++) {
            jval k = jeval(c, s, n->body.v[i]);
            jdict_set(c, d.u.d, k, jeval(c, s, n->orelse.v[i]));
        }
        return d;
    }
    case N_GETATTR: return jgetattr(c, jeval(c, s, n->a), n->name, n->line);
    case N_GETITEM: {
        jval obj = jeval(c, s, n->a);
        return jgetitem(c, obj, jeval(c, s, n->b), n->line);
    }
    case N_SLICE: {
        jval obj = jeval(c, s, n->a);
        jval a = n->b ? jeval(c, s, n->b) : jv_none(), b = n->c ? jeval(c, s, n->c) : jv_none();
        jval st = n->orelse.v[0] ? jeval(c, s, n->orelse.v[0]) : jv_none();
        return do_slice(c, obj, a, b, st, n->line);
    }
    case N_CALL: {
        jval callee = jeval(c, s, n->a);
        jcall a;
        eval_args(c, s, n, &a);
        return jcall_value(c, s, callee, &a, n->line);
    }
    case N_FILTER: {
        jval v = n->a ? jeval(c, s, n->a) : c->hole;
        jcall a;
        eval_args(c, s, n, &a);
        jval r;
        if (!jfilter_apply(c, s, n->name, v, &a, n->line, &r)) jfail_at(c, n->line, "unsupported filter '%s'", n->name);
        return r;
    }
    case N_TEST: {
        jval v = jeval(c, s, n->a);
        jcall a;
        eval_args(c, s, n, &a);
        bool r;
        if (!jtest_apply(c, s, n->name, v, &a, n->line, &r)) jfail_at(c, n->line, "unsupported test '%s'", n->name);
        return jv_bool(n->op ? !r : r);
    }
    case N_BINOP: {
        jval a = jeval(c, s, n->a);
        return jv_arith(c, n->op, a, jeval(c, s, n->b), n->line);
    }
    case N_NEG: case N_POS: {
        jval v = jeval(c, s, n->a);
        if (v.t == JT_INT || v.t == JT_BOOL) {
            int64_t x = jv_as_int(v);
            if (n->k == N_POS) return jv_int(x);
            if (x == INT64_MIN) jfail_at(c, n->line, "integer overflow in '-'");
            return jv_int(-x);
        }
        if (v.t == JT_FLOAT) return jv_float(n->k == N_NEG ? -v.u.f : v.u.f);
        if (v.t == JT_UNDEF) jfail_undefined(c, v, n->line);
        jfail_at(c, n->line, "bad operand type for unary %s: '%s'", n->k == N_NEG ? "-" : "+", jtype_name(v));
    }
    case N_NOT: return jv_bool(!jv_truthy(jeval(c, s, n->a)));
    case N_AND: {
        jval a = jeval(c, s, n->a);
        return jv_truthy(a) ? jeval(c, s, n->b) : a;
    }
    case N_OR: {
        jval a = jeval(c, s, n->a);
        return jv_truthy(a) ? a : jeval(c, s, n->b);
    }
    case N_COND:
        if (jv_truthy(jeval(c, s, n->a))) return jeval(c, s, n->b);
        return n->c ? jeval(c, s, n->c) : jv_undef(c, "the inline if-expression on line %d evaluated to false and no else section was defined", n->line);
    case N_COMPARE: {
        jval left = jeval(c, s, n->a);
        for (size_t i = 0; i < n->body.n; i++) {
            jval right = jeval(c, s, n->body.v[i]);
            if (!compare(c, n->ops[i], left, right, n->line)) return jv_bool(false);
            left = right;
        }
        return jv_bool(true);
    }
    case N_CONCAT: {
        jbuf b = {0};
        for (size_t i = 0; i < n->body.n; i++) jv_str_to(c, &b, jeval(c, s, n->body.v[i]));
        return jv_str(b.p ? b.p : "", b.n);
    }
    default: jfail_at(c, n->line, "internal error: statement used as expression");
    }
}

/* ---- statements ---- */

static void assign(jctx *c, jscope *s, const jnode *target, jval v, int line) {
    if (target->k == N_NAME) { scope_set(c, s, target->name, v); return; }
    if (target->k == N_GETATTR) {
        jval ns = lookup(c, s, target->a->name);
        if (ns.t != JT_NS) jfail_at(c, line, "cannot assign attribute on non-namespace object");
        jdict_set(c, ns.u.d, jv_cstr(c, target->name), v);
        return;
    }
    /* tuple unpacking */
    if (v.t == JT_UNDEF) jfail_undefined(c, v, line);
    jlist *l = jv_iter_list(c, v);
    if (l->n != target->body.n)
        jfail_at(c, line, l->n > target->body.n ? "too many values to unpack (expected %zu)" : "not enough values to unpack (expected %zu)",
                 target->body.n);
    for (size_t i = 0; i < l->n; i++) scope_set(c, s, target->body.v[i]->name, l->v[i]);
}

static void exec_for(jctx *c, jscope *s, const jnode *n) {
    jval it = jeval(c, s, n->b);
    jval seq;
    if (it.t == JT_RANGE && !n->c) seq = it;
    else {
        if (it.t == JT_NONE || it.t == JT_INT || it.t == JT_FLOAT || it.t == JT_BOOL)
            jfail_at(c, n->line, "'%s' object is not iterable", jtype_name(it));
        jlist *all;
        if (it.t == JT_RANGE) { /* filtered range: keep only what passes, one step per item */
            all = NULL;
            jbuf keep = {0};
            jscope *fs = scope_new(c, s);
            for (int64_t i = 0; i < it.u.r->len; i++) {
                jval x = jv_seq_item(it, i);
                assign(c, fs, n->a, x, n->line);
                if (jv_truthy(jeval(c, fs, n->c))) jbuf_put(c, &keep, (const char *)&x, sizeof x);
            }
            seq = jv_list(c, keep.n / sizeof(jval));
            if (keep.n) memcpy(seq.u.l->v, keep.p, keep.n);
        } else {
            all = jv_iter_list(c, it);
            if (n->c) {
                jscope *fs = scope_new(c, s);
                seq = jv_list(c, all->n);
                size_t k = 0;
                for (size_t i = 0; i < all->n; i++) {
                    assign(c, fs, n->a, all->v[i], n->line);
                    if (jv_truthy(jeval(c, fs, n->c))) seq.u.l->v[k++] = all->v[i];
                }
                seq.u.l->n = k;
            } else {
                seq.t = JT_LIST;
                seq.u.l = all;
            }
        }
    }
    int64_t len = seq.t == JT_RANGE ? seq.u.r->len : (int64_t)seq.u.l->n;
    if (len == 0) {
        if (n->orelse.n) exec_body(c, s, &n->orelse);
        return;
    }
    jscope *ls = scope_new(c, s);
    jloop *L = jalloc(c, sizeof *L);
    L->length = len;
    L->seq = seq;
    jval lv = {.t = JT_LOOP};
    lv.u.loop = L;
    for (int64_t i = 0; i < len; i++) {
        jstep(c, 1);
        L->index0 = i;
        scope_set(c, ls, "loop", lv);
        assign(c, ls, n->a, jv_seq_item(seq, i), n->line);
        if (exec_body(c, ls, &n->body) == FLOW_BREAK) break;
    }
}

static int exec_node(jctx *c, jscope *s, const jnode *n) {
    jstep(c, 1);
    c->line = n->line;
    switch (n->k) {
    case N_TEXT: jbuf_put(c, c->out, n->lit.u.s.s, n->lit.u.s.n); return FLOW_NORMAL;
    case N_OUTPUT: jv_str_to(c, c->out, jeval(c, s, n->a)); return FLOW_NORMAL;
    case N_IF:
        if (jv_truthy(jeval(c, s, n->a))) return exec_body(c, s, &n->body);
        return exec_body(c, s, &n->orelse);
    case N_FOR: exec_for(c, s, n); return FLOW_NORMAL;
    case N_SET: assign(c, s, n->a, jeval(c, s, n->b), n->line); return FLOW_NORMAL;
    case N_SETBLOCK: {
        jval v = capture(c, scope_new(c, s), &n->body);
        if (n->c) {
            jval saved = c->hole;
            c->hole = v;
            v = jeval(c, s, n->c);
            c->hole = saved;
        }
        assign(c, s, n->a, v, n->line);
        return FLOW_NORMAL;
    }
    case N_FILTERBLOCK: {
        jval saved = c->hole;
        c->hole = capture(c, scope_new(c, s), &n->body);
        jval v = jeval(c, s, n->c);
        c->hole = saved;
        jv_str_to(c, c->out, v);
        return FLOW_NORMAL;
    }
    case N_MACRO: {
        jval m = {.t = JT_MACRO};
        m.u.m = jalloc(c, sizeof *m.u.m);
        m.u.m->def = n;
        m.u.m->closure = s;
        scope_set(c, s, n->name, m);
        return FLOW_NORMAL;
    }
    case N_SCOPE: { /* {% generation %} and {% with %}: a scope of their own */
        jval *vals = jalloc(c, (n->kwargs.n + 1) * sizeof *vals);
        for (size_t i = 0; i < n->kwargs.n; i++) vals[i] = jeval(c, s, n->kwargs.v[i]);
        jscope *inner = scope_new(c, s);
        for (size_t i = 0; i < n->kwargs.n; i++) assign(c, inner, n->orelse.v[i], vals[i], n->line);
        return exec_body(c, inner, &n->body); /* a break inside {% with %} ends the enclosing loop */
    }
    case N_BREAK: return FLOW_BREAK;
    case N_CONTINUE: return FLOW_CONTINUE;
    default: jfail_at(c, n->line, "internal error: expression used as statement");
    }
}

static int exec_body(jctx *c, jscope *s, const jnodes *body) {
    int r = FLOW_NORMAL; /* static nesting is bounded by the parser, macro recursion by call_macro */
    for (size_t i = 0; i < body->n && r == FLOW_NORMAL; i++) r = exec_node(c, s, body->v[i]);
    return r;
}

/* ---- entry points ---- */

int jinja_render(const char *src, size_t len, const json_t *vars, const jinja_limits *lim, char **out, size_t *out_len,
                 e0_err *e) {
    *out = NULL;
    *out_len = 0;
    jctx *c = calloc(1, sizeof *c);
    if (!c) return e0_fail(e, "out of memory");
    c->e = e;
    c->lim.max_steps = lim && lim->max_steps ? lim->max_steps : JINJA_DEFAULT_MAX_STEPS;
    c->lim.max_output = lim && lim->max_output ? lim->max_output : JINJA_DEFAULT_MAX_OUTPUT;
    c->lim.max_memory = lim && lim->max_memory ? lim->max_memory : JINJA_DEFAULT_MAX_MEMORY;
    c->lim.max_depth = lim && lim->max_depth ? lim->max_depth : JINJA_DEFAULT_MAX_DEPTH;
    volatile int rc = -1;
    if (setjmp(c->jb) == 0) {
        if (vars && !json_is_object(vars)) jfail(c, "template variables must be a JSON object");
        if (!ju_valid(src, len)) jfail(c, "template is not valid UTF-8");
        size_t ntok;
        jtok *toks = jlex(c, src, len, &ntok);
        jnodes prog = jparse(c, toks, ntok);
        c->globals = scope_new(c, NULL);
        if (vars) {
            const char *k;
            json_t *v;
            json_object_foreach((json_t *)vars, k, v) scope_set(c, c->globals, jstrndup(c, k, strlen(k)), jv_from_json(c, v, 0));
        }
        jbuf b = {0};
        c->out = &b;
        exec_body(c, scope_new(c, c->globals), &prog);
        char *res = malloc(b.n + 1);
        if (!res) jfail(c, "out of memory");
        if (b.n) memcpy(res, b.p, b.n);
        res[b.n] = 0;
        *out = res;
        *out_len = b.n;
        rc = 0;
    }
    while (c->arena) {
        jarena_block *nx = c->arena->next;
        free(c->arena);
        c->arena = nx;
    }
    free(c);
    return rc;
}

int jinja_render_chat(const char *src, size_t len, const json_t *messages, bool add_generation_prompt,
                      const char *bos_token, const char *eos_token, char **out, size_t *out_len, e0_err *e) {
    *out = NULL;
    *out_len = 0;
    if (!json_is_array(messages)) return e0_fail(e, "messages must be a JSON array");
    for (size_t i = 0; i < json_array_size(messages); i++) {
        json_t *m = json_array_get(messages, i);
        if (!json_is_object(m)) return e0_fail(e, "message %zu is not a JSON object", i);
        if (!json_is_string(json_object_get(m, "role"))) return e0_fail(e, "message %zu has no string \"role\"", i);
    }
    json_t *vars = json_object();
    if (!vars) return e0_fail(e, "out of memory");
    json_object_set(vars, "messages", (json_t *)messages);
    json_object_set_new(vars, "add_generation_prompt", json_boolean(add_generation_prompt));
    json_object_set_new(vars, "bos_token", json_string(bos_token ? bos_token : ""));
    json_object_set_new(vars, "eos_token", json_string(eos_token ? eos_token : ""));
    if (!json_is_string(json_object_get(vars, "bos_token")) || !json_is_string(json_object_get(vars, "eos_token"))) {
        json_decref(vars);
        return e0_fail(e, "bos/eos token is not valid UTF-8");
    }
    int rc = jinja_render(src, len, vars, NULL, out, out_len, e);
    json_decref(vars);
    return rc;
}
