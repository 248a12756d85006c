/* jinja_internal.h — shared internals of the Jinja renderer: the per-render context (arena,
 * limits, error exit), values, tokens and the syntax tree. Errors anywhere inside a render
 * longjmp back to jinja_render(), which frees the arena: every allocation of a render lives in
 * the arena, so nothing leaks. */
#ifndef E0_JINJA_INTERNAL_H
#define E0_JINJA_INTERNAL_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <string.h>

#include "text/jinja/jinja.h"

/* ---- values ---- */
typedef enum {
    JT_UNDEF, JT_NONE, JT_BOOL, JT_INT, JT_FLOAT, JT_STR, JT_LIST, JT_DICT, JT_NS,
    JT_RANGE, JT_LOOP, JT_MACRO, JT_FUNC, JT_METHOD
} jtype;

typedef struct jval jval;
typedef struct jlist jlist;
typedef struct jdict jdict;
typedef struct jloop jloop;
typedef struct jnode jnode;
typedef struct jscope jscope;

/* jval.flags: Python types that behave like str/list but differ in jinja2 */
enum {
    JF_MARKUP = 1, /* str is a markupsafe.Markup (from |safe, |escape): `+` escapes plain str operands */
    JF_GEN = 2,    /* list is really a generator/iterator (map, select, ...): always true, no len(), not JSON */
};

struct jval {
    jtype t;
    uint8_t flags;
    union {
        bool b;
        int64_t i;
        double f;
        struct { const char *s; size_t n; } s;     /* JT_STR: UTF-8 bytes */
        jlist *l;                                  /* JT_LIST (also tuples) */
        jdict *d;                                  /* JT_DICT, JT_NS */
        struct { int64_t start, step, len; } *r;   /* JT_RANGE: lazy range() */
        jloop *loop;                               /* JT_LOOP */
        struct { const jnode *def; jscope *closure; } *m; /* JT_MACRO */
        const char *fn;                            /* JT_FUNC: global function name */
        struct { const char *name; jval *self; } *meth;   /* JT_METHOD: bound method */
        const char *undef;                         /* JT_UNDEF: why (for error messages) */
    } u;
};

struct jlist { size_t n; jval *v; bool tuple; const char *lazy_error; /* generator that fails when iterated */ };
struct jdict { size_t n, cap; jval *k; jval *v; };
struct jscope { jscope *parent; size_t n, cap; const char **names; jval *vals; };
struct jloop { int64_t index0, length; jval seq; /* JT_LIST or JT_RANGE being iterated */ };

/* ---- per-render context ---- */
typedef struct jarena_block { struct jarena_block *next; size_t used, cap; } jarena_block;

typedef struct jbuf { char *p; size_t n, cap; } jbuf;

typedef struct jctx {
    jmp_buf jb;
    e0_err *e;
    jarena_block *arena;
    size_t mem_used;
    jinja_limits lim;
    uint64_t steps;
    int depth;
    jbuf *out;          /* where output goes now (block set / macros capture into their own) */
    jscope *globals;    /* the render's variables */
    int line;           /* line of the node being evaluated, for messages */
    jval hole;          /* the captured body fed to a block filter / filtered block set */
} jctx;

/* Abort the render with a message (a longjmp; never returns). */
_Noreturn void jfail(jctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Same, with " at line N" appended. */
_Noreturn void jfail_at(jctx *c, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Fail with the reason an undefined value v carries. */
_Noreturn static inline void jfail_undefined(jctx *c, jval v, int line) { jfail_at(c, line, "%s", v.u.undef); }
void *jalloc(jctx *c, size_t n);
char *jstrndup(jctx *c, const char *s, size_t n);
void jstep(jctx *c, uint64_t n);

/* growable output buffers (malloc'd; freed by the render on exit via the context) */
void jbuf_put(jctx *c, jbuf *b, const char *s, size_t n);
void jbuf_putc(jctx *c, jbuf *b, char ch);

/* ---- value helpers (jinja_value.c) ---- */
static inline jval jv_none(void) { jval v = {.t = JT_NONE}; return v; }
static inline jval jv_bool(bool b) { jval v = {.t = JT_BOOL}; v.u.b = b; return v; }
static inline jval jv_int(int64_t i) { jval v = {.t = JT_INT}; v.u.i = i; return v; }
static inline jval jv_float(double f) { jval v = {.t = JT_FLOAT}; v.u.f = f; return v; }
static inline jval jv_str(const char *s, size_t n) { jval v = {.t = JT_STR}; v.u.s.s = s; v.u.s.n = n; return v; }
static inline bool jv_is_intlike(jval v) { return v.t == JT_INT || v.t == JT_BOOL; }
static inline int64_t jv_as_int(jval v) { return v.t == JT_INT ? v.u.i : v.u.b; } /* jv_is_intlike(v) */
jval jv_undef(jctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
jval jv_cstr(jctx *c, const char *s);
jval jv_list(jctx *c, size_t n);  /* n None items, to fill in */
jval jlist_push(jctx *c, jval l, jval v); /* append to a list being built (amortised doubling) */
static inline jval jv_bufstr(const jbuf *b) { return jv_str(b->p ? b->p : "", b->n); }
jval jv_dict(jctx *c);
void jdict_set(jctx *c, jdict *d, jval k, jval v);
const jval *jdict_get(const jdict *d, jval k);
const jval *jdict_get_s(const jdict *d, const char *k);
jval jv_from_json(jctx *c, const json_t *j, int depth);

const char *jtype_name(jval v); /* Python type name: 'str', 'int', 'list', ... */
bool jv_truthy(jval v);
bool jv_equal(jctx *c, jval a, jval b);
int jv_compare(jctx *c, jval a, jval b); /* <0, 0, >0; fails on unorderable types */
bool jv_is_number(jval v);                /* int, float or bool */
double jv_as_double(jval v);
/* Python str(v) / repr(v) appended to b; tojson appended to b. */
void jv_str_to(jctx *c, jbuf *b, jval v);
void jv_repr_to(jctx *c, jbuf *b, jval v);
void jv_tojson_to(jctx *c, jbuf *b, jval v, const char *indent, int level, bool sort_keys, const char *item_sep,
                  const char *key_sep);
jval jv_to_string(jctx *c, jval v); /* str(v) as a JT_STR value */
jval jv_html_escape(jctx *c, jval v); /* markupsafe.escape(v): a Markup string */
void jfmt_float(double f, char *buf, size_t cap);

/* Sequences: length and items of anything iterable (strings by code point, dicts by key). */
int64_t jv_len(jctx *c, jval v);
/* Materialise as a list (strings → characters, dicts → keys, range → ints, undefined → []). */
jlist *jv_iter_list(jctx *c, jval v);
/* Item i of a list or range (0 <= i < length). */
jval jv_seq_item(jval seq, int64_t i);

/* UTF-8 code points */
size_t ju_count(const char *s, size_t n);
size_t ju_offset(const char *s, size_t n, size_t cp); /* byte offset of code point cp (n if past) */
uint32_t ju_decode(const char *s, size_t n, size_t *adv);
size_t ju_encode(uint32_t cp, char *out);
bool ju_isspace(uint32_t cp);
/* case mapping (jinja_unicode.c, generated from the Unicode data files) */
typedef struct ju_case_range { uint32_t lo, hi; int32_t delta; uint32_t stride; } ju_case_range;
typedef struct ju_special { uint32_t cp; int nl; uint32_t l[3]; int nt; uint32_t t[3]; int nu; uint32_t u[3]; } ju_special;
uint32_t ju_upper(uint32_t cp); /* simple (one code point) mappings */
uint32_t ju_lower(uint32_t cp);
uint32_t ju_title(uint32_t cp);
bool ju_cased(uint32_t cp);
/* Full mapping (kind 'u', 'l' or 't'), up to 3 code points into out; returns how many. */
int ju_full_case(uint32_t cp, int kind, uint32_t out[3]);
bool ju_valid(const char *s, size_t n);

/* ---- lexer (jinja_lex.c) ---- */
typedef enum { TK_TEXT, TK_VAR_BEGIN, TK_VAR_END, TK_BLOCK_BEGIN, TK_BLOCK_END, TK_NAME, TK_STRING, TK_INT,
               TK_FLOAT, TK_OP, TK_EOF } jtok_kind;
typedef struct jtok {
    jtok_kind k;
    int line;
    const char *s; /* text, name, string value, or operator */
    size_t n;
    int64_t i;
    double f;
} jtok;
/* Tokenize the whole template; *ntok includes the final TK_EOF. */
jtok *jlex(jctx *c, const char *src, size_t len, size_t *ntok);

/* ---- syntax tree (jinja_parse.c) ---- */
typedef enum {
    /* statements */
    N_TEXT, N_OUTPUT, N_IF, N_FOR, N_SET, N_SETBLOCK, N_MACRO, N_BREAK, N_CONTINUE, N_SCOPE, N_FILTERBLOCK,
    N_CALLBLOCK,
    /* expressions */
    N_LIT, N_NAME, N_LIST, N_TUPLE, N_DICT, N_GETATTR, N_GETITEM, N_SLICE, N_CALL, N_FILTER, N_TEST, N_BINOP,
    N_NEG, N_POS, N_NOT, N_AND, N_OR, N_COND, N_COMPARE, N_CONCAT
} jnode_kind;

typedef struct jnodes { jnode **v; size_t n; } jnodes;

struct jnode {
    jnode_kind k;
    int line;
    int op;            /* operator token (first char or 2-char code), or negation for tests */
    const char *name;  /* names of variables, attributes, filters, tests, macros */
    jval lit;          /* N_LIT; N_TEXT text */
    jnode *a, *b, *c;  /* operands / target / value / condition */
    jnodes body, orelse;     /* statement bodies; list/tuple items; dict keys (body) and values (orelse) */
    jnodes args;             /* positional call arguments; macro parameter defaults (NULL = none) */
    const char **kwnames;    /* keyword argument names; macro parameter names */
    jnodes kwargs;           /* keyword argument values */
    int *ops;                /* N_COMPARE operators, one per item of body */
};

/* Parse tokens into a statement list. */
jnodes jparse(jctx *c, const jtok *toks, size_t ntok);

/* operator codes for two-char operators */
#define JOP2(a, b) (((a) << 8) | (b))
enum { JOP_IN = 1, JOP_NOTIN = 2 };

/* ---- evaluation (jinja_eval.c), builtins (jinja_builtins.c), operators (jinja_ops.c),
 * arguments (jinja_args.c): each file uses only those listed after it (and the strings, Unicode
 * and value files below) ---- */
typedef struct jcall {
    jval *pos;
    size_t npos;
    const char **kwn;
    jval *kwv;
    size_t nkw;
} jcall;

jval jeval(jctx *c, jscope *s, const jnode *n);
jval jcall_value(jctx *c, jscope *s, jval callee, jcall *a, int line);
/* Operators (jinja_ops.c): obj.name, obj[key], and a OP b for OP one of '+' '-' '*' '/' '%',
 * JOP2('/', '/') and JOP2('*', '*'); jmethod_exists: whether obj.name is a method. */
jval jgetattr(jctx *c, jval obj, const char *name, int line);
jval jgetitem(jctx *c, jval obj, jval key, int line);
jval jv_arith(jctx *c, int op, jval a, jval b, int line);
bool jmethod_exists(jval self, const char *name);
/* Builtins: 0 when the name is unknown. */
int jfilter_apply(jctx *c, jscope *s, const char *name, jval v, jcall *a, int line, jval *res);
int jtest_apply(jctx *c, jscope *s, const char *name, jval v, jcall *a, int line, bool *res);
jval jmethod_call(jctx *c, jval self, const char *name, jcall *a, int line);
jval jglobal_call(jctx *c, const char *name, jcall *a, int line);
bool jglobal_exists(const char *name);
/* Arguments (jinja_args.c). */
/* Argument i (positional) or kw (keyword), else NULL. */
const jval *jarg(jctx *c, jcall *a, size_t i, const char *kw);
jval jarg_or(jctx *c, jcall *a, size_t i, const char *kw, jval def); /* jarg() or def */
jval jneed_str(jctx *c, jval v, const char *what, int line);          /* v, or fail if not a str */
int64_t jneed_int(jctx *c, jval v, const char *what, int line);
/* Whether name is in names[] (NULL-terminated). */
bool jname_in(const char *const *names, const char *name);

/* ---- Python str operations (jinja_strings.c) ---- */
/* mode: 'u' upper, 'l' lower, 'c' capitalize, 't' str.title, 'j' jinja2's |title */
jval jstr_case(jctx *c, jval s, int mode);
jval jstr_strip(jval s, jval chars, bool left, bool right); /* chars None: whitespace */
jval jstr_replace(jctx *c, jval s, jval old, jval new, int64_t count);
jval jstr_splitlines(jctx *c, jval s, bool keepends);
jval jstr_center(jctx *c, jval s, int64_t width, int line);
bool jstr_has_method(const char *name);
jval jstr_method(jctx *c, jval s, const char *name, jcall *a, int line);
/* Python's `fmt % args` for %s %r %d %i %%. */
jval jpercent_format(jctx *c, jval fmt, jval args, int line);

/* Copy n values; n may be 0 with NULL pointers (an empty list or dict), which memcpy must not get. */
static inline void jv_copy(jval *dst, const jval *src, size_t n) {
    if (n) memcpy(dst, src, n * sizeof(jval));
}

#endif
