/* jinja_args.c — helpers for the arguments of builtins and methods: positional or keyword
 * lookup, "at most N" checks, type checks with jinja2's messages, and name tables. Below
 * jinja_strings.c, jinja_ops.c and jinja_builtins.c; uses only jinja_value.c. */
#include <string.h>

#include "text/jinja/jinja_internal.h"

/* ---- arguments ---- */

const jval *jarg(jctx *c, jcall *a, size_t i, const char *kw) {
    (void)c;
    if (i < a->npos) return &a->pos[i];
    for (size_t k = 0; kw && k < a->nkw; k++)
        if (!strcmp(a->kwn[k], kw)) return &a->kwv[k];
    return NULL;
}

jval jarg_or(jctx *c, jcall *a, size_t i, const char *kw, jval def) {
    const jval *v = jarg(c, a, i, kw);
    return v ? *v : def;
}

jval jneed_str(jctx *c, jval v, const char *what, int line) {
    if (v.t != JT_STR) jfail_at(c, line, "%s expects a string, got '%s'", what, jtype_name(v));
    return v;
}

int64_t jneed_int(jctx *c, jval v, const char *what, int line) {
    if (v.t == JT_INT) return v.u.i;
    if (v.t == JT_BOOL) return v.u.b;
    jfail_at(c, line, "%s expects an integer, got '%s'", what, jtype_name(v));
}

bool jname_in(const char *const *names, const char *name) {
    for (int i = 0; names[i]; i++)
        if (!strcmp(names[i], name)) return true;
    return false;
}
