/* json_schema.c — a JSON schema as a GBNF grammar (see json_schema.h).
 *
 * Every sub-schema becomes one rule `sN ::= ...`; the JSON primitives are fixed rules at the end
 * (their forms are those of e0_grammar_json: strings with JSON escapes, numbers without leading
 * zeros, `ws` after every value). Objects keep the order of `properties`: required ones always,
 * optional ones may be left out, commas placed by two rule chains (H_i: nothing written yet from
 * property i on; T_i: something written). Local `$ref`s ("#/...", JSON pointers into the schema)
 * become one rule each, so recursive schemas work (an object or array opens with a character, so
 * the recursion is never left-recursive; a $ref to itself and nothing else is refused by the
 * grammar parser). */
#include "text/json_schema.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "text/json_pattern.h"

#define SB(b, text) e0_sb_add(b, text, sizeof text - 1) /* a string literal */
#define MAX_DEPTH 64     /* nested sub-schemas */
#define MAX_REPEAT 10000 /* minItems / maxItems / minLength / maxLength beyond this are refused */

typedef struct {
    const json_t *root;
    e0_strbuf out;  /* the rules so far */
    int n_rules;
    const json_t **ref_node; /* $ref targets already given a rule, and their rule numbers */
    int *ref_rule, n_refs, cap_refs;
    e0_err *e;
    bool failed;
} jsg;

static int jfail(jsg *g, const char *path, const char *fmt, const char *what) {
    if (!g->failed) e0_fail(g->e, "json schema: at %s: %s%s", path[0] ? path : "the root", fmt, what ? what : "");
    g->failed = true;
    return -1;
}

/* A JSON value written compactly, as a literal followed by ws. */
static int literal_value(jsg *g, e0_strbuf *b, const json_t *v, const char *path) {
    char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!t) return jfail(g, path, "out of memory", NULL);
    e0_gbnf_literal(b, t, strlen(t));
    SB(b, " ws");
    free(t);
    return 0;
}

static int gen(jsg *g, const json_t *s, const char *path, int depth);

/* A sub-schema's rule, referred to from b. */
static int ref_rule(jsg *g, e0_strbuf *b, const json_t *s, const char *path, const char *key, int depth) {
    char sub[512];
    snprintf(sub, sizeof sub, "%s%s%s", path, path[0] ? "." : "", key);
    int r = gen(g, s, sub, depth + 1);
    if (r < 0) return -1;
    e0_sb_printf(b, "s%d", r);
    return 0;
}

static bool known_keyword(const char *k) {
    static const char *const handled[] = {"type", "properties", "required", "additionalProperties", "items", "minItems",
                                          "maxItems", "enum", "const", "anyOf", "oneOf", "$ref", "$defs", "definitions",
                                          "minLength", "maxLength", "format", "pattern", "allOf", "minimum", "maximum",
                                          "exclusiveMinimum", "exclusiveMaximum"};
    static const char *const notes[] = {"title", "description", "default", "examples", "$schema", "$id", "$comment",
                                        "deprecated", "readOnly", "writeOnly", "nullable", "$anchor"};
    for (size_t i = 0; i < sizeof handled / sizeof *handled; i++)
        if (!strcmp(k, handled[i])) return true;
    for (size_t i = 0; i < sizeof notes / sizeof *notes; i++)
        if (!strcmp(k, notes[i])) return true;
    return !strncmp(k, "x-", 2);
}

/* A count keyword (minItems ...) in [0, MAX_REPEAT]; *v unchanged when absent. */
static int count(jsg *g, const json_t *s, const char *key, const char *path, long long *v) {
    const json_t *x = json_object_get(s, key);
    if (!x) return 0;
    if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > MAX_REPEAT)
        return jfail(g, path, key, " must be an integer from 0 to 10000");
    *v = json_integer_value(x);
    return 0;
}

/* "{m,n}" for a repetition (n < 0: unbounded). */
static void reps(e0_strbuf *b, long long m, long long n) {
    if (n < 0) e0_sb_printf(b, "{%lld,}", m);
    else e0_sb_printf(b, "{%lld,%lld}", m, n);
}

static int object_body(jsg *g, e0_strbuf *b, const json_t *s, const char *path, int depth) {
    const json_t *props = json_object_get(s, "properties"), *req = json_object_get(s, "required");
    const json_t *add = json_object_get(s, "additionalProperties");
    if (props && !json_is_object(props)) return jfail(g, path, "'properties' must be an object", NULL);
    if (req && !json_is_array(req)) return jfail(g, path, "'required' must be a list", NULL);
    if (add && !json_is_boolean(add) && !json_is_object(add)) return jfail(g, path, "'additionalProperties' must be a boolean or a schema", NULL);
    for (size_t i = 0; i < json_array_size(req); i++) {
        const char *k = json_string_value(json_array_get(req, i));
        if (!k) return jfail(g, path, "'required' must list property names", NULL);
        if (!json_object_get(props, k)) return jfail(g, path, "a required property is not in 'properties': ", k);
    }
    size_t n = json_object_size(props);
    if (n == 0 && (!add || json_is_true(add))) return SB(b, "json-object"), 0; /* any object */
    /* the value rule of extra properties (-1: none) */
    int extra = -1;
    if (add && json_is_object(add)) {
        char sub[512];
        snprintf(sub, sizeof sub, "%s%sadditionalProperties", path, path[0] ? "." : "");
        if ((extra = gen(g, add, sub, depth + 1)) < 0) return -1;
    } else if (json_is_true(add)) extra = -2; /* any value */
    /* the key-value rules, in order; kv[i]'s rule number */
    int *kv = calloc(n ? n : 1, sizeof *kv);
    bool *required = calloc(n ? n : 1, sizeof *required);
    if (!kv || !required) return free(kv), free(required), jfail(g, path, "out of memory", NULL);
    size_t i = 0;
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)props, key, v) {
        char sub[512];
        snprintf(sub, sizeof sub, "%s%sproperties.%.200s", path, path[0] ? "." : "", key);
        int r = gen(g, v, sub, depth + 1);
        if (r < 0) break;
        for (size_t k = 0; k < json_array_size(req); k++) required[i] |= !strcmp(json_string_value(json_array_get(req, k)), key);
        json_t *ks = json_string(key);
        char *kt = ks ? json_dumps(ks, JSON_ENCODE_ANY) : NULL;
        json_decref(ks);
        if (!kt) {
            jfail(g, path, "out of memory", NULL);
            break;
        }
        kv[i] = g->n_rules++;
        e0_strbuf line = {0};
        e0_sb_printf(&line, "s%d ::= ", kv[i]);
        e0_gbnf_literal(&line, kt, strlen(kt));
        e0_sb_printf(&line, " ws \":\" ws s%d\n", r);
        free(kt);
        char *t = e0_sb_take(&line);
        if (!t) {
            jfail(g, path, "out of memory", NULL);
            break;
        }
        e0_sb_add(&g->out, t, strlen(t));
        free(t);
        i++;
    }
    if (g->failed) return free(kv), free(required), -1;
    /* extras: "," ws json-string ":" ws VALUE, any number of times, after the declared ones */
    char xv[32] = "json-value";
    if (extra >= 0) snprintf(xv, sizeof xv, "s%d", extra);
    /* T_i / H_i as rules numbered base + i / base + n + 1 + i */
    int base = g->n_rules;
    g->n_rules += 2 * ((int)n + 1);
    for (size_t k = 0; k <= n; k++) {
        int t = base + (int)k, h = base + (int)n + 1 + (int)k;
        if (k == n) {
            if (extra == -1) e0_sb_printf(&g->out, "s%d ::= \"\"\ns%d ::= \"\"\n", t, h);
            else
                e0_sb_printf(&g->out, "s%d ::= (\",\" ws json-string \":\" ws %s)*\ns%d ::= (json-string \":\" ws %s s%d)?\n", t, xv,
                             h, xv, t);
        } else if (required[k])
            e0_sb_printf(&g->out, "s%d ::= \",\" ws s%d s%d\ns%d ::= s%d s%d\n", t, kv[k], t + 1, h, kv[k], t + 1);
        else e0_sb_printf(&g->out, "s%d ::= (\",\" ws s%d)? s%d\ns%d ::= s%d s%d | s%d\n", t, kv[k], t + 1, h, kv[k], t + 1, h + 1);
    }
    e0_sb_printf(b, "\"{\" ws s%d \"}\" ws", base + (int)n + 1);
    free(kv);
    free(required);
    return 0;
}

/* Every decimal number from lo to hi, both strings of n digits (lo <= hi): GBNF. */
static void digit_range(e0_strbuf *b, const char *lo, const char *hi, size_t n) {
    if (n == 1) {
        e0_sb_printf(b, "[%c-%c]", lo[0], hi[0]);
        return;
    }
    if (lo[0] == hi[0]) {
        e0_sb_printf(b, "\"%c\" ", lo[0]);
        digit_range(b, lo + 1, hi + 1, n - 1);
        return;
    }
    char zeros[24], nines[24];
    memset(zeros, '0', n - 1), memset(nines, '9', n - 1);
    bool lo_round = !memcmp(lo + 1, zeros, n - 1), hi_round = !memcmp(hi + 1, nines, n - 1), any = false;
    char first = lo_round ? lo[0] : (char)(lo[0] + 1), last = hi_round ? hi[0] : (char)(hi[0] - 1);
    SB(b, "(");
    if (!lo_round) { /* lo's first digit, then lo's rest .. 99..9 */
        e0_sb_printf(b, "\"%c\" ", lo[0]);
        digit_range(b, lo + 1, nines, n - 1);
        any = true;
    }
    if (first <= last) e0_sb_printf(b, "%s[%c-%c] [0-9]{%zu}", any ? " | " : "", first, last, n - 1), any = true;
    if (!hi_round) { /* hi's first digit, then 00..0 .. hi's rest */
        e0_sb_printf(b, "%s\"%c\" ", any ? " | " : "", hi[0]);
        digit_range(b, zeros, hi + 1, n - 1);
    }
    SB(b, ")");
}

/* The non-negative integers from a to b (b < 0: no upper bound), no leading zeros, at most 16
 * digits (json-integer's limit): GBNF alternatives. */
static void nonneg_range(e0_strbuf *b, long long a, long long hi) {
    char lo_s[24], hi_s[24];
    int la = snprintf(lo_s, sizeof lo_s, "%lld", a), lb = hi < 0 ? 16 : snprintf(hi_s, sizeof hi_s, "%lld", hi);
    SB(b, "(");
    for (int len = la; len <= lb; len++) {
        if (len > la) SB(b, " | ");
        if (hi < 0 && len > la) { /* every longer number */
            e0_sb_printf(b, "[1-9] [0-9]{%d,15}", len - 1);
            break;
        }
        long long p = 1;
        for (int i = 1; i < len; i++) p *= 10;
        long long lo = a > (len == 1 ? 0 : p) ? a : (len == 1 ? 0 : p), top = p * 10 - 1;
        if (hi >= 0 && hi < top) top = hi;
        char l[24], h[24];
        snprintf(l, sizeof l, "%0*lld", len, lo), snprintf(h, sizeof h, "%0*lld", len, top);
        digit_range(b, l, h, (size_t)len);
    }
    SB(b, ")");
}

/* An integer type with minimum / maximum / exclusiveMinimum / exclusiveMaximum. */
static int integer_body(jsg *g, e0_strbuf *b, const json_t *s, const char *path) {
    static const char *const keys[] = {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"};
    bool has_lo = false, has_hi = false;
    long long lo = 0, hi = 0;
    for (int k = 0; k < 4; k++) {
        const json_t *x = json_object_get(s, keys[k]);
        if (!x) continue;
        if (!json_is_number(x)) return jfail(g, path, keys[k], " must be a number");
        double v = json_number_value(x);
        if (!(v > -1e15 && v < 1e15)) return jfail(g, path, keys[k], " beyond 10^15 is not supported");
        long long f = (long long)floor(v), c = (long long)ceil(v);
        long long bound = k == 0 ? c : k == 1 ? f + 1 : k == 2 ? f : c - 1; /* as an inclusive integer bound */
        if (k < 2) lo = has_lo && lo > bound ? lo : bound, has_lo = true;
        else hi = has_hi && hi < bound ? hi : bound, has_hi = true;
    }
    if (!has_lo && !has_hi) return SB(b, "json-integer"), 0;
    if (has_lo && has_hi && lo > hi) return jfail(g, path, "no integer lies between the minimum and the maximum", NULL);
    SB(b, "(");
    bool any = false;
    if (!has_hi || hi >= 0) { /* x >= 0 */
        nonneg_range(b, has_lo && lo > 0 ? lo : 0, has_hi ? hi : -1);
        any = true;
    }
    if (!has_lo || lo < 0) { /* x < 0: "-" and |x| from max(1, -hi) up to -lo */
        e0_sb_printf(b, "%s\"-\" ", any ? " | " : "");
        nonneg_range(b, has_hi && hi < 0 ? -hi : 1, has_lo ? -lo : -1);
    }
    SB(b, ") ws");
    return 0;
}

static int type_body(jsg *g, e0_strbuf *b, const json_t *s, const char *type, const char *path, int depth) {
    if (!strcmp(type, "object")) return object_body(g, b, s, path, depth);
    if (!strcmp(type, "array")) {
        const json_t *items = json_object_get(s, "items");
        long long lo = 0, hi = -1;
        if (count(g, s, "minItems", path, &lo) < 0 || count(g, s, "maxItems", path, &hi) < 0) return -1;
        if (hi >= 0 && hi < lo) return jfail(g, path, "maxItems < minItems", NULL);
        e0_strbuf item = {0};
        if (!items || json_is_true(items)) SB(&item, "json-value");
        else if (ref_rule(g, &item, items, path, "items", depth) < 0) return free(item.p), -1;
        char *it = e0_sb_take(&item);
        if (!it) return jfail(g, path, "out of memory", NULL);
        if (hi == 0) SB(b, "\"[\" ws \"]\" ws");
        else {
            e0_sb_printf(b, "\"[\" ws %s%s (\",\" ws %s)", lo ? "" : "(", it, it);
            reps(b, lo ? lo - 1 : 0, hi < 0 ? -1 : hi - 1);
            e0_sb_printf(b, "%s \"]\" ws", lo ? "" : ")?");
        }
        free(it);
        return 0;
    }
    if (!strcmp(type, "string")) {
        const json_t *fmt = json_object_get(s, "format");
        long long lo = 0, hi = -1;
        if (count(g, s, "minLength", path, &lo) < 0 || count(g, s, "maxLength", path, &hi) < 0) return -1;
        if (hi >= 0 && hi < lo) return jfail(g, path, "maxLength < minLength", NULL);
        const json_t *pat = json_object_get(s, "pattern");
        if (pat) {
            if (!json_is_string(pat)) return jfail(g, path, "'pattern' must be a string", NULL);
            if (fmt || json_object_get(s, "minLength") || json_object_get(s, "maxLength"))
                return jfail(g, path, "a pattern with a format, minLength or maxLength is not supported", NULL);
            e0_err pe = {0};
            SB(b, "\"\\\"\" ");
            if (e0_pattern_gbnf(json_string_value(pat), json_string_length(pat), b, &pe) < 0) return jfail(g, path, pe.msg, NULL);
            SB(b, " \"\\\"\" ws");
            return 0;
        }
        if (fmt) {
            static const char *const f[][2] = {
                {"date", "[0-9]{4} \"-\" (\"0\" [1-9] | \"1\" [0-2]) \"-\" (\"0\" [1-9] | [12] [0-9] | \"3\" [01])"},
                {"time", "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] (\".\" [0-9]{1,6})? (\"Z\" | [+-] [0-2] [0-9] \":\" [0-5] [0-9])"},
                {"date-time", NULL},
                {"uuid", "[0-9a-fA-F]{8} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{12}"},
            };
            const char *name = json_string_value(fmt);
            int k = 0;
            while (name && k < 4 && strcmp(name, f[k][0])) k++;
            if (!name || k == 4) return jfail(g, path, "this string format is not supported: ", name ? name : "(not a string)");
            if (json_object_get(s, "minLength") || json_object_get(s, "maxLength"))
                return jfail(g, path, "minLength / maxLength with a format are not supported", NULL);
            if (k == 2) e0_sb_printf(b, "\"\\\"\" %s \"T\" %s \"\\\"\" ws", f[0][1], f[1][1]);
            else e0_sb_printf(b, "\"\\\"\" %s \"\\\"\" ws", f[k][1]);
            return 0;
        }
        if (lo == 0 && hi < 0) return SB(b, "json-string"), 0;
        SB(b, "\"\\\"\" json-char");
        reps(b, lo, hi);
        SB(b, " \"\\\"\" ws");
        return 0;
    }
    if (!strcmp(type, "integer")) return integer_body(g, b, s, path);
    if (!strcmp(type, "number") && (json_object_get(s, "minimum") || json_object_get(s, "maximum") ||
                                    json_object_get(s, "exclusiveMinimum") || json_object_get(s, "exclusiveMaximum")))
        return jfail(g, path, "minimum / maximum are supported for integers only", NULL);
    static const char *const prim[][2] = {{"number", "json-number"}, {"integer", "json-integer"},
                                          {"boolean", "json-boolean"}, {"null", "json-null"}};
    for (int k = 0; k < 4; k++)
        if (!strcmp(type, prim[k][0])) return e0_sb_add(b, prim[k][1], strlen(prim[k][1])), 0;
    return jfail(g, path, "unknown type: ", type);
}

/* The rule of a local $ref ("#", "#/$defs/x", JSON pointer escapes ~0 ~1). */
static int resolve(jsg *g, const char *ref, const char *path, int depth) {
    if (ref[0] != '#' || (ref[1] && ref[1] != '/')) return jfail(g, path, "only local $refs (\"#/...\") are supported: ", ref);
    const json_t *node = g->root;
    for (const char *p = ref + 1; node && *p == '/';) {
        p++;
        char tok[256];
        size_t n = 0;
        while (*p && *p != '/' && n + 1 < sizeof tok) {
            if (p[0] == '~' && (p[1] == '0' || p[1] == '1')) tok[n++] = p[1] == '0' ? '~' : '/', p += 2;
            else tok[n++] = *p++;
        }
        tok[n] = 0;
        if (*p && *p != '/') return jfail(g, path, "$ref too long: ", ref);
        if (json_is_object(node)) node = json_object_get(node, tok);
        else if (json_is_array(node)) {
            char *end;
            unsigned long i = strtoul(tok, &end, 10);
            node = *tok && !*end ? json_array_get(node, i) : NULL;
        } else node = NULL;
    }
    if (!node) return jfail(g, path, "$ref to nothing: ", ref);
    for (int i = 0; i < g->n_refs; i++)
        if (g->ref_node[i] == node) return g->ref_rule[i];
    if (g->n_refs == g->cap_refs) {
        int cap = g->cap_refs ? g->cap_refs * 2 : 8;
        const json_t **nn = realloc(g->ref_node, (size_t)cap * sizeof *nn);
        if (nn) g->ref_node = nn;
        int *nr = realloc(g->ref_rule, (size_t)cap * sizeof *nr);
        if (nr) g->ref_rule = nr;
        if (!nn || !nr) return jfail(g, path, "out of memory", NULL);
        g->cap_refs = cap;
    }
    /* the rule number is taken before its body is made, so the body may refer to it */
    int r = g->n_rules++;
    g->ref_node[g->n_refs] = node;
    g->ref_rule[g->n_refs++] = r;
    int body = gen(g, node, ref, depth + 1);
    if (body < 0) return -1;
    e0_sb_printf(&g->out, "s%d ::= s%d\n", r, body);
    return r;
}

/* type (a string or a list of strings) names t */
static bool has_type(const json_t *type, const char *t) {
    if (json_is_string(type)) return !strcmp(json_string_value(type), t);
    for (size_t i = 0; json_is_array(type) && i < json_array_size(type); i++)
        if (json_string_value(json_array_get(type, i)) && !strcmp(json_string_value(json_array_get(type, i)), t)) return true;
    return false;
}

/* The rule number of schema s (its rule written to g->out), or -1. */
static int gen(jsg *g, const json_t *s, const char *path, int depth) {
    if (g->failed) return -1;
    if (depth > MAX_DEPTH) return jfail(g, path, "schemas nested more than 64 deep", NULL);
    e0_strbuf b = {0};
    if (json_is_true(s) || (json_is_object(s) && json_object_size(s) == 0)) SB(&b, "json-value");
    else if (!json_is_object(s)) return jfail(g, path, "a schema must be an object or true", NULL);
    else {
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)s, k, v) if (!known_keyword(k)) return jfail(g, path, "this keyword is not supported: ", k);
        const json_t *ref = json_object_get(s, "$ref"), *en = json_object_get(s, "enum"), *cn = json_object_get(s, "const");
        const json_t *any = json_object_get(s, "anyOf");
        const json_t *all = json_object_get(s, "allOf"), *type = json_object_get(s, "type");
        if (!any) any = json_object_get(s, "oneOf");
        bool bounds = json_object_get(s, "minimum") || json_object_get(s, "maximum") || json_object_get(s, "exclusiveMinimum") ||
                      json_object_get(s, "exclusiveMaximum");
        /* keywords that only type_body honours: a schema that may write a number (a string, an
         * array) some other way would not enforce them */
        bool other = ref || any || all || en || cn;
        if (bounds && (!has_type(type, "integer") || other))
            return jfail(g, path, "minimum / maximum are supported only beside \"type\": \"integer\"", NULL);
        if ((json_object_get(s, "minLength") || json_object_get(s, "maxLength") || json_object_get(s, "pattern") ||
             json_object_get(s, "format")) &&
            (!has_type(type, "string") || other))
            return jfail(g, path, "minLength / maxLength / pattern / format are supported only beside \"type\": \"string\"", NULL);
        if ((json_object_get(s, "minItems") || json_object_get(s, "maxItems")) &&
            (!(has_type(type, "array") || (!type && json_object_get(s, "items"))) || other))
            return jfail(g, path, "minItems / maxItems are supported only beside \"type\": \"array\" or \"items\"", NULL);
        if (all && (!json_is_array(all) || json_array_size(all) != 1 || ref || any || type))
            return jfail(g, path, "allOf is supported only with one schema and nothing else", NULL);
        if (ref) {
            if (!json_is_string(ref)) return jfail(g, path, "$ref must be a string", NULL);
            int r = resolve(g, json_string_value(ref), path, depth);
            if (r < 0) return -1;
            e0_sb_printf(&b, "s%d", r);
        } else if (all) {
            if (ref_rule(g, &b, json_array_get(all, 0), path, "allOf.0", depth) < 0) return free(b.p), -1;
        } else if (cn) {
            if (literal_value(g, &b, cn, path) < 0) return free(b.p), -1;
        } else if (en) {
            if (!json_is_array(en) || !json_array_size(en)) return jfail(g, path, "enum must be a non-empty list", NULL);
            for (size_t i = 0; i < json_array_size(en); i++) {
                if (i) SB(&b, " | ");
                if (literal_value(g, &b, json_array_get(en, i), path) < 0) return free(b.p), -1;
            }
        } else if (any) {
            if (!json_is_array(any) || !json_array_size(any)) return jfail(g, path, "anyOf / oneOf must be a non-empty list", NULL);
            for (size_t i = 0; i < json_array_size(any); i++) {
                char key[32];
                snprintf(key, sizeof key, "anyOf.%zu", i);
                if (i) SB(&b, " | ");
                if (ref_rule(g, &b, json_array_get(any, i), path, key, depth) < 0) return free(b.p), -1;
            }
        } else if (json_is_string(type)) {
            if (type_body(g, &b, s, json_string_value(type), path, depth) < 0) return free(b.p), -1;
        } else if (json_is_array(type) && json_array_size(type)) {
            for (size_t i = 0; i < json_array_size(type); i++) {
                const char *t = json_string_value(json_array_get(type, i));
                if (!t) return free(b.p), jfail(g, path, "type must be a string or a list of strings", NULL);
                if (i) SB(&b, " | ");
                SB(&b, "(");
                if (type_body(g, &b, s, t, path, depth) < 0) return free(b.p), -1;
                SB(&b, ")");
            }
        } else if (type) return jfail(g, path, "type must be a string or a list of strings", NULL);
        else if (json_object_get(s, "properties") || json_object_get(s, "additionalProperties") || json_object_get(s, "required")) {
            if (object_body(g, &b, s, path, depth) < 0) return free(b.p), -1;
        } else if (json_object_get(s, "items")) {
            if (type_body(g, &b, s, "array", path, depth) < 0) return free(b.p), -1;
        } else SB(&b, "json-value");
    }
    char *body = e0_sb_take(&b);
    if (!body) return jfail(g, path, "out of memory", NULL);
    int r = g->n_rules++;
    e0_sb_printf(&g->out, "s%d ::= %s\n", r, body);
    free(body);
    return g->failed ? -1 : r;
}

static const char primitives[] =
    "ws ::= | \" \" | \"\\n\" [ \\t]{0,20}\n"
    "json-char ::= [^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" json-u)\n"
    /* \\uXXXX: a character, or a surrogate pair (a lone surrogate is not Unicode) */
    "json-u ::= [0-9a-cA-Ce-fE-F] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2} |\n"
    "  [dD] [89abAB] [0-9a-fA-F]{2} \"\\\\u\" [dD] [c-fC-F] [0-9a-fA-F]{2}\n"
    "json-string ::= \"\\\"\" json-char* \"\\\"\" ws\n"
    "json-integer ::= \"-\"? ([0-9] | [1-9] [0-9]{0,15}) ws\n"
    "json-number ::= \"-\"? ([0-9] | [1-9] [0-9]{0,15}) (\".\" [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})? ws\n"
    "json-boolean ::= (\"true\" | \"false\") ws\n"
    "json-null ::= \"null\" ws\n"
    "json-value ::= json-object | json-array | json-string | json-number | json-boolean | json-null\n"
    "json-object ::= \"{\" ws (json-string \":\" ws json-value (\",\" ws json-string \":\" ws json-value)*)? \"}\" ws\n"
    "json-array ::= \"[\" ws (json-value (\",\" ws json-value)*)? \"]\" ws\n";

char *e0_json_schema_grammar(const json_t *schema, size_t *len, e0_err *e) {
    jsg g = {.root = schema, .e = e};
    int r = gen(&g, schema, "", 0);
    if (r >= 0) e0_sb_printf(&g.out, "root ::= s%d\n%s", r, primitives);
    free(g.ref_node);
    free(g.ref_rule);
    char *text = e0_sb_take(&g.out);
    if (r < 0) return free(text), NULL;
    if (!text) return e0_fail(e, "out of memory"), NULL;
    *len = strlen(text);
    return text;
}
