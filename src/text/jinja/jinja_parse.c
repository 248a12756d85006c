/* jinja_parse.c — recursive-descent parser from tokens to the syntax tree, following jinja2's
 * grammar and operator precedence (or < and < not < comparisons/in < + - < ~ < * / // % < ** <
 * unary - + < filters/tests < postfix). Statements: if/elif/else, for (with filter, else),
 * set (expression, namespace attribute, tuple unpacking, block set), macro, break, continue,
 * filter blocks, generation blocks. Anything else is an error naming the tag. */
#include <stdio.h>
#include <string.h>

#include "text/jinja/jinja_internal.h"

typedef struct parser {
    jctx *c;
    const jtok *t;
    size_t n, pos;
    int depth;
    int loops; /* enclosing for loops (in the current macro): break/continue need one */
} parser;

static const jtok *cur(parser *P) { return &P->t[P->pos]; }
static const jtok *peek(parser *P, size_t k) { return P->pos + k < P->n ? &P->t[P->pos + k] : &P->t[P->n - 1]; }
static void next(parser *P) { if (P->pos + 1 < P->n) P->pos++; }

static bool is_op(const jtok *t, const char *op) { return t->k == TK_OP && t->n == strlen(op) && !memcmp(t->s, op, t->n); }
static bool is_name(const jtok *t, const char *nm) { return t->k == TK_NAME && !strcmp(t->s, nm); }

static const char *tok_desc(const jtok *t) {
    switch (t->k) {
    case TK_TEXT: return "template text";
    case TK_VAR_BEGIN: return "'{{'";
    case TK_VAR_END: return "'}}'";
    case TK_BLOCK_BEGIN: return "'{%'";
    case TK_BLOCK_END: return "'%}'";
    case TK_STRING: return "string";
    case TK_INT: case TK_FLOAT: return "number";
    case TK_EOF: return "end of template";
    default: return t->s;
    }
}

_Noreturn static void unexpected(parser *P, const char *what) {
    jfail_at(P->c, cur(P)->line, "syntax error: expected %s, got %s", what, tok_desc(cur(P)));
}

static void expect_op(parser *P, const char *op) {
    if (!is_op(cur(P), op)) {
        char w[16];
        snprintf(w, sizeof w, "'%s'", op);
        unexpected(P, w);
    }
    next(P);
}

static const char *expect_name(parser *P) {
    if (cur(P)->k != TK_NAME) unexpected(P, "a name");
    const char *s = cur(P)->s;
    next(P);
    return s;
}

static jnode *mk(parser *P, jnode_kind k) {
    jnode *n = jalloc(P->c, sizeof *n);
    n->k = k;
    n->line = cur(P)->line;
    return n;
}

static void nodes_push(parser *P, jnodes *l, jnode *x) {
    if ((l->n & (l->n - 1)) == 0) { /* grow at powers of two */
        size_t cap = l->n ? l->n * 2 : 4;
        jnode **v = jalloc(P->c, cap * sizeof *v);
        if (l->n) memcpy(v, l->v, l->n * sizeof *v);
        l->v = v;
    }
    l->v[l->n++] = x;
}

static void names_push(parser *P, const char ***names, size_t n, const char *nm) {
    if ((n & (n - 1)) == 0) {
        size_t cap = n ? n * 2 : 4;
        const char **v = jalloc(P->c, cap * sizeof *v);
        if (n) memcpy(v, *names, n * sizeof *v);
        *names = v;
    }
    (*names)[n] = nm;
}

static void enter(parser *P) {
    if (++P->depth > P->c->lim.max_depth)
        jfail_at(P->c, cur(P)->line, "template nested too deeply (more than %d levels)", P->c->lim.max_depth);
}

static jnode *parse_expr(parser *P, bool condexpr);
static jnode *parse_unary(parser *P, bool with_filter);
static jnode *parse_primary(parser *P);
static jnode *parse_postfix(parser *P, jnode *n);

/* expr [, expr]* -> a tuple when a comma appears */
static jnode *parse_tuple(parser *P, bool condexpr) {
    jnode *first = parse_expr(P, condexpr);
    if (!is_op(cur(P), ",")) return first;
    jnode *t = mk(P, N_TUPLE);
    t->line = first->line;
    nodes_push(P, &t->body, first);
    while (is_op(cur(P), ",")) {
        next(P);
        if (cur(P)->k == TK_BLOCK_END || cur(P)->k == TK_VAR_END || is_op(cur(P), ")") || is_name(cur(P), "in")) break;
        nodes_push(P, &t->body, parse_expr(P, condexpr));
    }
    return t;
}

static void parse_call_args(parser *P, jnode *n) {
    expect_op(P, "(");
    size_t nkw = 0;
    while (!is_op(cur(P), ")")) {
        if (n->args.n || nkw) expect_op(P, ",");
        if (is_op(cur(P), ")")) break;
        if (is_op(cur(P), "*") || is_op(cur(P), "**"))
            jfail_at(P->c, cur(P)->line, "unsupported construct '*args/**kwargs' in call");
        if (cur(P)->k == TK_NAME && is_op(peek(P, 1), "=")) {
            const char *nm = cur(P)->s;
            next(P);
            next(P);
            names_push(P, &n->kwnames, nkw++, nm);
            nodes_push(P, &n->kwargs, parse_expr(P, true));
        } else {
            if (nkw) jfail_at(P->c, cur(P)->line, "syntax error: positional argument after keyword argument");
            nodes_push(P, &n->args, parse_expr(P, true));
        }
    }
    next(P);
}

static jnode *parse_filter(parser *P, jnode *operand) {
    jnode *f = mk(P, N_FILTER);
    f->a = operand;
    const char *nm = expect_name(P);
    while (is_op(cur(P), ".")) { /* dotted filter names: keep them whole for the error message */
        next(P);
        const char *more = expect_name(P);
        size_t l1 = strlen(nm), l2 = strlen(more);
        char *j = jalloc(P->c, l1 + l2 + 2);
        memcpy(j, nm, l1);
        j[l1] = '.';
        memcpy(j + l1 + 1, more, l2 + 1);
        nm = j;
    }
    f->name = nm;
    if (is_op(cur(P), "(")) parse_call_args(P, f);
    return f;
}

static jnode *parse_test(parser *P, jnode *operand) {
    jnode *t = mk(P, N_TEST);
    t->a = operand;
    if (is_name(cur(P), "not")) { next(P); t->op = 1; }
    t->name = expect_name(P);
    const jtok *k = cur(P);
    if (is_op(k, "(")) parse_call_args(P, t);
    else if ((k->k == TK_NAME || k->k == TK_STRING || k->k == TK_INT || k->k == TK_FLOAT || is_op(k, "[") || is_op(k, "{")) &&
             !is_name(k, "else") && !is_name(k, "or") && !is_name(k, "and")) {
        if (is_name(k, "is")) jfail_at(P->c, k->line, "syntax error: you cannot chain multiple tests with is");
        nodes_push(P, &t->args, parse_postfix(P, parse_primary(P)));
    }
    return t;
}

static jnode *parse_filter_expr(parser *P, jnode *n) {
    for (;;) {
        if (is_op(cur(P), "|")) { next(P); n = parse_filter(P, n); }
        else if (is_name(cur(P), "is")) { next(P); n = parse_test(P, n); }
        else if (is_op(cur(P), "(")) {
            jnode *call = mk(P, N_CALL);
            call->a = n;
            parse_call_args(P, call);
            n = call;
        } else return n;
    }
}

static jnode *parse_subscript(parser *P, jnode *n) {
    if (is_op(cur(P), ".")) {
        next(P);
        jnode *g;
        if (cur(P)->k == TK_INT) {
            g = mk(P, N_GETITEM);
            g->b = mk(P, N_LIT);
            g->b->lit = jv_int(cur(P)->i);
            next(P);
        } else {
            g = mk(P, N_GETATTR);
            g->name = expect_name(P);
        }
        g->a = n;
        return g;
    }
    expect_op(P, "[");
    jnode *parts[3] = {NULL, NULL, NULL};
    bool slice = false;
    int k = 0;
    for (;;) {
        if (is_op(cur(P), "]")) break;
        if (is_op(cur(P), ":")) {
            slice = true;
            if (++k > 2) unexpected(P, "']'");
            next(P);
            continue;
        }
        if (parts[k]) unexpected(P, "']'");
        parts[k] = parse_expr(P, true);
    }
    next(P);
    jnode *g;
    if (slice) {
        g = mk(P, N_SLICE);
        g->a = n;
        g->b = parts[0];
        g->c = parts[1];
        g->orelse.v = jalloc(P->c, sizeof(jnode *));
        g->orelse.v[0] = parts[2];
        g->orelse.n = 1;
    } else {
        if (!parts[0]) unexpected(P, "an index");
        g = mk(P, N_GETITEM);
        g->a = n;
        g->b = parts[0];
    }
    return g;
}

static jnode *parse_postfix(parser *P, jnode *n) {
    for (;;) {
        if (is_op(cur(P), ".") || is_op(cur(P), "[")) n = parse_subscript(P, n);
        else if (is_op(cur(P), "(")) {
            jnode *call = mk(P, N_CALL);
            call->a = n;
            parse_call_args(P, call);
            n = call;
        } else return n;
    }
}

static jnode *parse_primary(parser *P) {
    const jtok *t = cur(P);
    jnode *n;
    switch (t->k) {
    case TK_NAME:
        n = mk(P, N_LIT);
        if (!strcmp(t->s, "true") || !strcmp(t->s, "True")) n->lit = jv_bool(true);
        else if (!strcmp(t->s, "false") || !strcmp(t->s, "False")) n->lit = jv_bool(false);
        else if (!strcmp(t->s, "none") || !strcmp(t->s, "None")) n->lit = jv_none();
        else { n->k = N_NAME; n->name = t->s; }
        next(P);
        return n;
    case TK_STRING: {
        n = mk(P, N_LIT);
        jbuf b = {0};
        while (cur(P)->k == TK_STRING) { jbuf_put(P->c, &b, cur(P)->s, cur(P)->n); next(P); }
        n->lit = jv_str(b.p ? b.p : "", b.n);
        return n;
    }
    case TK_INT: n = mk(P, N_LIT); n->lit = jv_int(t->i); next(P); return n;
    case TK_FLOAT: n = mk(P, N_LIT); n->lit = jv_float(t->f); next(P); return n;
    case TK_OP:
        if (is_op(t, "(")) {
            next(P);
            if (is_op(cur(P), ")")) { next(P); n = mk(P, N_TUPLE); return n; }
            jnode *e = parse_expr(P, true);
            if (is_op(cur(P), ",")) {
                n = mk(P, N_TUPLE);
                nodes_push(P, &n->body, e);
                while (is_op(cur(P), ",")) {
                    next(P);
                    if (is_op(cur(P), ")")) break;
                    nodes_push(P, &n->body, parse_expr(P, true));
                }
                e = n;
            }
            expect_op(P, ")");
            return e;
        }
        if (is_op(t, "[")) {
            n = mk(P, N_LIST);
            next(P);
            while (!is_op(cur(P), "]")) {
                if (n->body.n) expect_op(P, ",");
                if (is_op(cur(P), "]")) break;
                nodes_push(P, &n->body, parse_expr(P, true));
            }
            next(P);
            return n;
        }
        if (is_op(t, "{")) {
            n = mk(P, N_DICT);
            next(P);
            while (!is_op(cur(P), "}")) {
                if (n->body.n) expect_op(P, ",");
                if (is_op(cur(P), "}")) break;
                nodes_push(P, &n->body, parse_expr(P, true));
                expect_op(P, ":");
                nodes_push(P, &n->orelse, parse_expr(P, true));
            }
            next(P);
            return n;
        }
        break;
    default: break;
    }
    unexpected(P, "an expression");
}

static jnode *parse_unary(parser *P, bool with_filter) {
    enter(P);
    jnode *n;
    if (is_op(cur(P), "-") || is_op(cur(P), "+")) {
        n = mk(P, is_op(cur(P), "-") ? N_NEG : N_POS);
        next(P);
        n->a = parse_unary(P, false);
    } else n = parse_primary(P);
    n = parse_postfix(P, n);
    if (with_filter) n = parse_filter_expr(P, n);
    P->depth--;
    return n;
}

static jnode *binop(parser *P, int op, jnode *a, jnode *b) {
    jnode *n = mk(P, N_BINOP);
    n->op = op;
    n->a = a;
    n->b = b;
    n->line = a->line;
    return n;
}

static jnode *parse_pow(parser *P) {
    jnode *n = parse_unary(P, true);
    while (is_op(cur(P), "**")) { next(P); n = binop(P, JOP2('*', '*'), n, parse_unary(P, true)); }
    return n;
}

static jnode *parse_math2(parser *P) {
    jnode *n = parse_pow(P);
    for (;;) {
        int op = is_op(cur(P), "*") ? '*' : is_op(cur(P), "/") ? '/' : is_op(cur(P), "//") ? JOP2('/', '/') : is_op(cur(P), "%") ? '%' : 0;
        if (!op) return n;
        next(P);
        n = binop(P, op, n, parse_pow(P));
    }
}

static jnode *parse_concat(parser *P) {
    jnode *n = parse_math2(P);
    if (!is_op(cur(P), "~")) return n;
    jnode *c = mk(P, N_CONCAT);
    nodes_push(P, &c->body, n);
    while (is_op(cur(P), "~")) { next(P); nodes_push(P, &c->body, parse_math2(P)); }
    return c;
}

static jnode *parse_math1(parser *P) {
    jnode *n = parse_concat(P);
    for (;;) {
        int op = is_op(cur(P), "+") ? '+' : is_op(cur(P), "-") ? '-' : 0;
        if (!op) return n;
        next(P);
        n = binop(P, op, n, parse_concat(P));
    }
}

static jnode *parse_compare(parser *P) {
    jnode *first = parse_math1(P);
    jnode *cmp = NULL;
    size_t nops = 0;
    for (;;) {
        const jtok *t = cur(P);
        int op = 0;
        if (is_op(t, "==")) op = JOP2('=', '=');
        else if (is_op(t, "!=")) op = JOP2('!', '=');
        else if (is_op(t, "<=")) op = JOP2('<', '=');
        else if (is_op(t, ">=")) op = JOP2('>', '=');
        else if (is_op(t, "<")) op = '<';
        else if (is_op(t, ">")) op = '>';
        else if (is_name(t, "in")) op = JOP_IN;
        else if (is_name(t, "not") && is_name(peek(P, 1), "in")) { op = JOP_NOTIN; next(P); }
        if (!op) break;
        next(P);
        if (!cmp) { cmp = mk(P, N_COMPARE); cmp->a = first; cmp->line = first->line; }
        if ((nops & (nops - 1)) == 0) {
            int *v = jalloc(P->c, (nops ? nops * 2 : 4) * sizeof *v);
            if (nops) memcpy(v, cmp->ops, nops * sizeof *v);
            cmp->ops = v;
        }
        cmp->ops[nops++] = op;
        nodes_push(P, &cmp->body, parse_math1(P));
    }
    return cmp ? cmp : first;
}

static jnode *parse_not(parser *P) {
    if (is_name(cur(P), "not")) {
        jnode *n = mk(P, N_NOT);
        next(P);
        enter(P);
        n->a = parse_not(P);
        P->depth--;
        return n;
    }
    return parse_compare(P);
}

static jnode *parse_and(parser *P) {
    jnode *n = parse_not(P);
    while (is_name(cur(P), "and")) {
        next(P);
        jnode *x = mk(P, N_AND);
        x->a = n;
        x->b = parse_not(P);
        n = x;
    }
    return n;
}

static jnode *parse_or(parser *P) {
    jnode *n = parse_and(P);
    while (is_name(cur(P), "or")) {
        next(P);
        jnode *x = mk(P, N_OR);
        x->a = n;
        x->b = parse_and(P);
        n = x;
    }
    return n;
}

static jnode *parse_expr(parser *P, bool condexpr) {
    enter(P);
    jnode *n = parse_or(P);
    while (condexpr && is_name(cur(P), "if")) {
        next(P);
        jnode *x = mk(P, N_COND);
        x->b = n;
        x->a = parse_or(P);
        if (is_name(cur(P), "else")) { next(P); x->c = parse_expr(P, true); }
        n = x;
    }
    P->depth--;
    return n;
}

/* Assignment targets: name, ns.attr (when allowed), or a tuple of names. */
static jnode *parse_target(parser *P, bool allow_attr) {
    jnode *t;
    bool paren = is_op(cur(P), "(");
    if (paren) next(P);
    jnode *first = mk(P, N_NAME);
    first->name = expect_name(P);
    if (allow_attr && is_op(cur(P), ".")) {
        next(P);
        jnode *g = mk(P, N_GETATTR);
        g->a = first;
        g->name = expect_name(P);
        return g;
    }
    if (!is_op(cur(P), ",")) { if (paren) expect_op(P, ")"); return first; }
    t = mk(P, N_TUPLE);
    nodes_push(P, &t->body, first);
    while (is_op(cur(P), ",")) {
        next(P);
        if (cur(P)->k != TK_NAME || is_name(cur(P), "in")) break;
        jnode *x = mk(P, N_NAME);
        x->name = expect_name(P);
        nodes_push(P, &t->body, x);
    }
    if (paren) expect_op(P, ")");
    return t;
}

static void expect_block_end(parser *P) {
    if (cur(P)->k != TK_BLOCK_END) unexpected(P, "'%}'");
    next(P);
}

static jnodes parse_body(parser *P, const char *const *ends);

/* After parse_body stopped at "{% name": consume "{%" and return the name. */
static const char *end_tag(parser *P) {
    next(P);
    const char *nm = cur(P)->s;
    next(P);
    return nm;
}

/* The rest of a block tag whose body runs to {% END %}: the tag's '%}', the body (into n->body),
 * the end tag and its '%}'. Returns n. */
static jnode *block_body(parser *P, jnode *n, const char *end) {
    expect_block_end(P);
    const char *const ends[] = {end, NULL};
    n->body = parse_body(P, ends);
    end_tag(P);
    expect_block_end(P);
    return n;
}

/* After the body of an if / for, ended by the tag named tag: on "else" the else branch up to
 * {% END %} (into n->orelse); then the last '%}'. Returns n. */
static jnode *else_branch(parser *P, jnode *n, const char *tag, const char *end) {
    if (!strcmp(tag, "else")) {
        expect_block_end(P);
        const char *const ends[] = {end, NULL};
        n->orelse = parse_body(P, ends);
        end_tag(P);
    }
    expect_block_end(P);
    return n;
}

static jnode *parse_statement(parser *P) {
    int line = cur(P)->line;
    if (cur(P)->k != TK_NAME) unexpected(P, "a tag name");
    const char *tag = cur(P)->s;
    next(P);
    jnode *n;
    if (!strcmp(tag, "if") || !strcmp(tag, "elif")) {
        n = mk(P, N_IF);
        n->line = line;
        n->a = parse_tuple(P, false);
        expect_block_end(P);
        static const char *const ends[] = {"elif", "else", "endif", NULL};
        n->body = parse_body(P, ends);
        if (is_name(peek(P, 1), "elif")) {
            next(P); /* '{%': parse "elif ..." as a nested if in the else branch */
            n->orelse.v = jalloc(P->c, sizeof(jnode *));
            n->orelse.v[0] = parse_statement(P);
            n->orelse.n = 1;
            return n;
        }
        return else_branch(P, n, end_tag(P), "endif");
    }
    if (!strcmp(tag, "for")) {
        n = mk(P, N_FOR);
        n->line = line;
        n->a = parse_target(P, false);
        if (!is_name(cur(P), "in")) unexpected(P, "'in'");
        next(P);
        n->b = parse_tuple(P, false);
        if (is_name(cur(P), "if")) { next(P); n->c = parse_expr(P, true); }
        if (is_name(cur(P), "recursive")) jfail_at(P->c, line, "unsupported construct 'recursive' loop");
        expect_block_end(P);
        static const char *const ends[] = {"else", "endfor", NULL};
        P->loops++;
        n->body = parse_body(P, ends);
        P->loops--;
        return else_branch(P, n, end_tag(P), "endfor");
    }
    if (!strcmp(tag, "set")) {
        jnode *target = parse_target(P, true);
        if (is_op(cur(P), "=")) {
            next(P);
            n = mk(P, N_SET);
            n->line = line;
            n->a = target;
            n->b = parse_tuple(P, true);
            expect_block_end(P);
            return n;
        }
        n = mk(P, N_SETBLOCK);
        n->line = line;
        n->a = target;
        while (is_op(cur(P), "|")) { next(P); n->c = parse_filter(P, n->c); }
        return block_body(P, n, "endset");
    }
    if (!strcmp(tag, "macro")) {
        n = mk(P, N_MACRO);
        n->line = line;
        n->name = expect_name(P);
        expect_op(P, "(");
        size_t np = 0;
        while (!is_op(cur(P), ")")) {
            if (np) expect_op(P, ",");
            if (is_op(cur(P), ")")) break;
            names_push(P, &n->kwnames, np++, expect_name(P));
            jnode *def = NULL;
            if (is_op(cur(P), "=")) { next(P); def = parse_expr(P, true); }
            nodes_push(P, &n->args, def);
        }
        next(P);
        expect_block_end(P);
        static const char *const ends[] = {"endmacro", NULL};
        int loops = P->loops;
        P->loops = 0;
        n->body = parse_body(P, ends);
        P->loops = loops;
        end_tag(P);
        if (cur(P)->k == TK_NAME) next(P); /* {% endmacro name %} */
        expect_block_end(P);
        return n;
    }
    if (!strcmp(tag, "break") || !strcmp(tag, "continue")) {
        if (P->loops == 0) jfail_at(P->c, line, "syntax error: '%s' outside of a loop", tag);
        n = mk(P, !strcmp(tag, "break") ? N_BREAK : N_CONTINUE);
        n->line = line;
        expect_block_end(P);
        return n;
    }
    if (!strcmp(tag, "generation")) {
        n = mk(P, N_SCOPE);
        n->line = line;
        return block_body(P, n, "endgeneration");
    }
    if (!strcmp(tag, "with")) {
        /* {% with a = 1, b = x %}: values evaluated outside, visible only inside */
        n = mk(P, N_SCOPE);
        n->line = line;
        while (cur(P)->k != TK_BLOCK_END) {
            if (n->orelse.n) expect_op(P, ",");
            nodes_push(P, &n->orelse, parse_target(P, false));
            expect_op(P, "=");
            nodes_push(P, &n->kwargs, parse_expr(P, true));
        }
        return block_body(P, n, "endwith");
    }
    if (!strcmp(tag, "filter")) {
        n = mk(P, N_FILTERBLOCK);
        n->line = line;
        n->c = parse_filter(P, NULL);
        while (is_op(cur(P), "|")) { next(P); n->c = parse_filter(P, n->c); }
        return block_body(P, n, "endfilter");
    }
    jfail_at(P->c, line, "unsupported tag '%s'", tag);
}

/* Statements until "{% <one of ends>" (left unconsumed) or the end of the template. */
static jnodes parse_body(parser *P, const char *const *ends) {
    enter(P);
    jnodes body = {0};
    int start_line = cur(P)->line;
    for (;;) {
        const jtok *t = cur(P);
        jstep(P->c, 1);
        if (t->k == TK_EOF) {
            if (ends) {
                int last = 0;
                while (ends[last + 1]) last++;
                jfail_at(P->c, start_line, "unexpected end of template: missing {%% %s %%}", ends[last]);
            }
            break;
        }
        if (t->k == TK_TEXT) {
            jnode *n = mk(P, N_TEXT);
            n->lit = jv_str(t->s, t->n);
            nodes_push(P, &body, n);
            next(P);
        } else if (t->k == TK_VAR_BEGIN) {
            next(P);
            jnode *n = mk(P, N_OUTPUT);
            n->a = parse_tuple(P, true);
            if (cur(P)->k != TK_VAR_END) unexpected(P, "'}}'");
            next(P);
            nodes_push(P, &body, n);
        } else if (t->k == TK_BLOCK_BEGIN) {
            const jtok *nm = peek(P, 1);
            if (ends && nm->k == TK_NAME)
                for (int i = 0; ends[i]; i++)
                    if (!strcmp(nm->s, ends[i])) { P->depth--; return body; }
            if (nm->k == TK_NAME && (!strncmp(nm->s, "end", 3) || !strcmp(nm->s, "else") || !strcmp(nm->s, "elif")))
                jfail_at(P->c, nm->line, "unexpected tag '%s'", nm->s);
            next(P);
            nodes_push(P, &body, parse_statement(P));
        } else unexpected(P, "template text or a tag");
    }
    P->depth--;
    return body;
}

jnodes jparse(jctx *c, const jtok *toks, size_t ntok) {
    parser P = {.c = c, .t = toks, .n = ntok};
    return parse_body(&P, NULL);
}
