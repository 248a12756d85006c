/* test_json_schema.c — JSON schemas as grammars: every text the grammar accepts as a whole, found by
 * random walks through it, is JSON that a small validator (below) finds valid for the schema;
 * hand-written valid and invalid texts; unsupported keywords and bad schemas are one error each. */
#include "text/grammar.h"
#include "text/json_schema.h"
#include "t.h"

#include <limits.h>
#include <locale.h>
#include <regex.h>

static const json_t *g_root;

static size_t cps(const char *s) { /* code points of a UTF-8 string */
    size_t n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

static const json_t *deref(const char *ref) {
    const json_t *n = g_root;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", ref + 1);
    for (char *tok = strtok(buf, "/"); tok && n; tok = strtok(NULL, "/")) n = json_object_get(n, tok);
    return n;
}

/* The subset of JSON Schema that e0_json_schema_grammar supports. */
static bool valid(const json_t *s, const json_t *v) {
    if (json_is_true(s) || !json_object_size(s)) return true;
    const json_t *x;
    if ((x = json_object_get(s, "$ref"))) return valid(deref(json_string_value(x)), v);
    if ((x = json_object_get(s, "allOf"))) return valid(json_array_get(x, 0), v);
    if ((x = json_object_get(s, "anyOf")) || (x = json_object_get(s, "oneOf"))) {
        for (size_t i = 0; i < json_array_size(x); i++)
            if (valid(json_array_get(x, i), v)) return true;
        return false;
    }
    if ((x = json_object_get(s, "const"))) return json_equal(x, v);
    if ((x = json_object_get(s, "enum"))) {
        for (size_t i = 0; i < json_array_size(x); i++)
            if (json_equal(json_array_get(x, i), v)) return true;
        return false;
    }
    const json_t *type = json_object_get(s, "type");
    if (json_is_array(type)) {
        for (size_t i = 0; i < json_array_size(type); i++) {
            json_t *one = json_deep_copy(s);
            json_object_set(one, "type", json_array_get(type, i));
            bool ok = valid(one, v);
            json_decref(one);
            if (ok) return true;
        }
        return false;
    }
    const char *t = json_string_value(type);
    if (!t && json_object_get(s, "properties")) t = "object";
    if (!t && json_object_get(s, "items")) t = "array";
    if (!t) return true;
    if (!strcmp(t, "null")) return json_is_null(v);
    if (!strcmp(t, "boolean")) return json_is_boolean(v);
    if (!strcmp(t, "integer")) {
        if (!json_is_integer(v)) return false;
        double x = (double)json_integer_value(v);
        const json_t *b;
        if ((b = json_object_get(s, "minimum")) && x < json_number_value(b)) return false;
        if ((b = json_object_get(s, "maximum")) && x > json_number_value(b)) return false;
        if ((b = json_object_get(s, "exclusiveMinimum")) && x <= json_number_value(b)) return false;
        if ((b = json_object_get(s, "exclusiveMaximum")) && x >= json_number_value(b)) return false;
        return true;
    }
    if (!strcmp(t, "number")) return json_is_number(v);
    if (!strcmp(t, "string")) {
        if (!json_is_string(v)) return false;
        size_t n = cps(json_string_value(v));
        const json_t *lo = json_object_get(s, "minLength"), *hi = json_object_get(s, "maxLength");
        const char *f = json_string_value(json_object_get(s, "format")), *sv = json_string_value(v);
        if (f && !strcmp(f, "uuid") && (n != 36 || sv[8] != '-' || sv[23] != '-')) return false;
        if (f && !strcmp(f, "date") && (n != 10 || sv[4] != '-' || sv[7] != '-')) return false;
        if (f && !strcmp(f, "date-time") && (n < 19 || sv[10] != 'T')) return false;
        return (!lo || n >= (size_t)json_integer_value(lo)) && (!hi || n <= (size_t)json_integer_value(hi));
    }
    if (!strcmp(t, "array")) {
        if (!json_is_array(v)) return false;
        const json_t *lo = json_object_get(s, "minItems"), *hi = json_object_get(s, "maxItems"), *items = json_object_get(s, "items");
        size_t n = json_array_size(v);
        if ((lo && n < (size_t)json_integer_value(lo)) || (hi && n > (size_t)json_integer_value(hi))) return false;
        for (size_t i = 0; items && i < n; i++)
            if (!valid(items, json_array_get(v, i))) return false;
        return true;
    }
    if (!json_is_object(v)) return false;
    const json_t *props = json_object_get(s, "properties"), *req = json_object_get(s, "required");
    const json_t *add = json_object_get(s, "additionalProperties");
    for (size_t i = 0; i < json_array_size(req); i++)
        if (!json_object_get(v, json_string_value(json_array_get(req, i)))) return false;
    const char *k;
    json_t *val;
    json_object_foreach((json_t *)v, k, val) {
        const json_t *ps = json_object_get(props, k);
        if (ps ? !valid(ps, val) : (json_is_false(add) || (json_is_object(add) && !valid(add, val)))) return false;
    }
    return true;
}

static e0_grammar *grammar_of(const char *schema_text, json_t **schema) {
    json_error_t je;
    *schema = json_loads(schema_text, 0, &je);
    CHECKF(*schema, "schema JSON: %s", je.text);
    e0_err e = {0};
    size_t len;
    char *text = *schema ? e0_json_schema_grammar(*schema, &len, &e) : NULL;
    CHECKF(text, "%s: %s", schema_text, e.msg);
    e0_grammar *g = text ? e0_grammar_parse(text, len, &e) : NULL;
    CHECKF(!text || g, "%s\n%s", e.msg, text);
    free(text);
    return g;
}

static bool whole(e0_grammar *g, const char *text) {
    e0_err e = {0};
    e0_gmatch *m = e0_gmatch_new(g, &e);
    bool ok = m && e0_gmatch_accept(m, text, strlen(text)) && e0_gmatch_can_end(m);
    e0_gmatch_free(m);
    return ok;
}

/* One random walk from the grammar's start, into s (at most cap - 1 bytes): each step takes a
 * random piece of `alpha` the grammar allows (é, two bytes, as one piece). Past 60 bytes, 3 steps
 * in 4 choose from `closing` instead (if given; none allowed: draw again), so that texts end.
 * Where `hint` is given, half the steps take its next byte if the grammar allows it (patterns
 * without ^ are rarely met by chance). Ends when the grammar must end, or may and a 1-in-end_odds
 * draw says so. Returns the text's length, or -1: stuck or out of room. */
static long walk_text(e0_gmatch *m, const char *alpha, const char *closing, const char *hint, unsigned end_odds,
                      unsigned *seed, char *s, size_t cap) {
    size_t n = 0;
    e0_gmatch_reset(m);
    while (n + 2 < cap) {
        const char *opts[128];
        int k = 0;
        *seed = *seed * 1103515245u + 12345u;
        const bool close = closing && n > 60 && (*seed >> 16) % 4 != 0;
        for (const char *c = close ? closing : alpha; *c && k < 128; c += *c == '\xc3' ? 2 : 1)
            if (e0_gmatch_allows(m, c, *c == '\xc3' ? 2 : 1)) opts[k++] = c;
        if (!k && close) continue;
        if (!k) return -1;
        *seed = *seed * 1103515245u + 12345u;
        const char *c = opts[(*seed >> 16) % (unsigned)k];
        if (hint && (*seed >> 8) % 2 && n < strlen(hint) && e0_gmatch_allows(m, hint + n, 1)) c = hint + n;
        const size_t len = *c == '\xc3' ? 2 : 1;
        e0_gmatch_accept(m, c, len);
        memcpy(s + n, c, len), n += len;
        *seed = *seed * 1103515245u + 12345u;
        if (e0_gmatch_must_end(m) || (e0_gmatch_can_end(m) && (*seed >> 16) % end_odds == 0)) {
            s[n] = 0;
            return (long)n;
        }
    }
    return -1;
}

/* Random walks (walk_text) through the schema's grammar: each complete text is JSON that the
 * validator finds valid for the schema. Returns the number of complete texts. */
static int walk(e0_grammar *g, const json_t *schema, unsigned seed, int walks) {
    static const char alpha[] = " \n\"{}[],:-.+0123456789abcdefghijklmnopqrstuvwxyzETZ~/\\\xc3\xa9";
    static const char closing[] = "\"}],0123456789e";
    e0_err e = {0};
    e0_gmatch *m = e0_gmatch_new(g, &e);
    int complete = 0;
    for (int w = 0; w < walks && m; w++) {
        char text[2048];
        if (walk_text(m, alpha, closing, NULL, 3, &seed, text, sizeof text) < 0) continue;
        complete++;
        json_error_t je;
        json_t *v = json_loads(text, JSON_DECODE_ANY, &je);
        CHECKF(v || strstr(je.text, "real number overflow"), "not JSON (%s): %s", je.text, text);
        g_root = schema;
        CHECKF(!v || valid(schema, v), "not valid for the schema: %s", text);
        json_decref(v);
    }
    e0_gmatch_free(m);
    return complete;
}

static void test_walks(void) {
    static const char *const schemas[] = {
        "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":12},\"age\":{\"type\":\"integer\"},"
        "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"enum\":[\"a\",\"b c\",\"\\\"q\\\"\"]},\"minItems\":1,\"maxItems\":3},"
        "\"ok\":{\"type\":\"boolean\"},\"nick\":{\"type\":[\"string\",\"null\"]}},\"required\":[\"name\",\"age\"],"
        "\"additionalProperties\":false,\"title\":\"Person\",\"description\":\"ignored\"}",
        "{\"anyOf\":[{\"const\":{\"k\":[1,2]}},{\"enum\":[1,\"x\",null,true]},{\"type\":\"number\"}]}",
        "{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"integer\"},\"kids\":{\"type\":\"array\","
        "\"items\":{\"$ref\":\"#/$defs/node\"},\"maxItems\":2}},\"required\":[\"v\"]}},\"$ref\":\"#/$defs/node\"}",
        "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"null\"}},\"additionalProperties\":{\"type\":\"integer\"}}",
        "{\"type\":\"object\",\"properties\":{\"d\":{\"type\":\"string\",\"format\":\"date\"},\"u\":{\"type\":\"string\","
        "\"format\":\"uuid\"},\"t\":{\"type\":\"string\",\"format\":\"date-time\"}},\"required\":[\"d\",\"u\",\"t\"]}",
        "{}",
        "{\"type\":\"object\"}",
        "{\"properties\":{\"x\":{\"type\":\"integer\"},\"y\":{\"allOf\":[{\"type\":\"string\",\"minLength\":2,\"maxLength\":3}]}}}",
        "{\"type\":\"array\",\"items\":{\"type\":[\"integer\",\"boolean\"]},\"minItems\":2,\"maxItems\":4}",
        "{\"type\":\"object\",\"properties\":{\"x/y~\":{\"const\":\"\\u00e9\\n\"}},\"required\":[\"x/y~\"],\"additionalProperties\":true}",
        "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\",\"minimum\":0},\"b\":{\"type\":[\"integer\",\"null\"],"
        "\"maximum\":-3},\"c\":{\"type\":\"integer\",\"exclusiveMinimum\":9.5,\"exclusiveMaximum\":200}},\"required\":[\"a\",\"b\",\"c\"]}",
    };
    for (size_t i = 0; i < sizeof schemas / sizeof *schemas; i++) {
        json_t *schema;
        e0_grammar *g = grammar_of(schemas[i], &schema);
        if (g) {
            int n = walk(g, schema, (unsigned)i * 7919u + 1, 300);
            CHECKF(n >= 20, "schema %zu: only %d complete texts", i, n);
        }
        e0_grammar_free(g);
        json_decref(schema);
    }
}

static void test_texts(void) {
    json_t *schema;
    e0_grammar *g = grammar_of("{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"age\":{\"type\":\"integer\"},"
                               "\"pet\":{\"enum\":[\"cat\",\"dog\"]}},\"required\":[\"name\"],\"additionalProperties\":false}",
                               &schema);
    if (g) {
        static const char *const yes[] = {"{\"name\": \"Al\"}", "{\"name\":\"Al\",\"age\":3}", "{\"name\":\"\",\"pet\":\"dog\"}",
                                          "{\n  \"name\": \"x\",\n  \"age\": -12,\n  \"pet\": \"cat\"\n}"};
        static const char *const no[] = {"{}", "{\"age\":3}", "{\"age\":3,\"name\":\"Al\"}", "{\"name\":\"Al\",\"pet\":\"cow\"}",
                                         "{\"name\":\"Al\",\"age\":3.5}", "{\"name\":\"Al\",\"x\":1}", "{\"name\":\"Al\",}", "[]"};
        for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) CHECKF(whole(g, yes[i]), "%s", yes[i]);
        for (size_t i = 0; i < sizeof no / sizeof *no; i++) CHECKF(!whole(g, no[i]), "%s", no[i]);
    }
    e0_grammar_free(g);
    json_decref(schema);
}

/* Integer bounds: around each range, exactly the integers inside are accepted. */
static void test_integer_ranges(void) {
    static const struct {
        const char *bounds;
        long long lo, hi; /* the integers allowed (LLONG_MIN / LLONG_MAX: none) */
    } r[] = {
        {"\"minimum\":0,\"maximum\":0", 0, 0},           {"\"minimum\":-5,\"maximum\":5", -5, 5},
        {"\"minimum\":-37,\"maximum\":1205", -37, 1205}, {"\"minimum\":7,\"maximum\":99", 7, 99},
        {"\"minimum\":100,\"maximum\":999", 100, 999},   {"\"minimum\":-1000,\"maximum\":-10", -1000, -10},
        {"\"minimum\":123,\"maximum\":4567", 123, 4567}, {"\"minimum\":42", 42, LLONG_MAX},
        {"\"maximum\":-7", LLONG_MIN, -7},               {"\"exclusiveMinimum\":-0.5,\"maximum\":19.9", 0, 19},
        {"\"minimum\":1", 1, LLONG_MAX},                 {"\"minimum\":10,\"maximum\":10", 10, 10},
        {"\"minimum\":-99,\"exclusiveMaximum\":0", -99, -1}, {"\"minimum\":1000,\"maximum\":20000", 1000, 20000},
    };
    for (size_t i = 0; i < sizeof r / sizeof *r; i++) {
        char text[256];
        snprintf(text, sizeof text, "{\"type\":\"integer\",%s}", r[i].bounds);
        json_t *schema;
        e0_grammar *g = grammar_of(text, &schema);
        long long from = r[i].lo == LLONG_MIN ? r[i].hi - 3000 : r[i].lo - 1200, to = r[i].hi == LLONG_MAX ? r[i].lo + 30000 : r[i].hi + 1200;
        int wrong = 0;
        for (long long x = from; g && x <= to && wrong < 5; x++) {
            char num[32];
            snprintf(num, sizeof num, "%lld", x);
            bool in = x >= r[i].lo && x <= r[i].hi;
            if (whole(g, num) != in) {
                CHECKF(0, "%s: %lld %s", text, x, in ? "refused" : "accepted");
                wrong++;
            }
        }
        CHECKF(!g || (!whole(g, "-0") && !whole(g, "007") && !whole(g, "1.0")), "%s: -0, 007 or 1.0 accepted", text);
        e0_grammar_free(g);
        json_decref(schema);
    }
}

/* pattern: every string found by random walks matches the pattern (POSIX ERE twin, glibc's
 * regexec: search semantics, as JSON Schema's); hand-picked strings accepted or refused. */
static void test_patterns(void) {
    CHECK(setlocale(LC_CTYPE, "C.UTF-8")); /* regcomp: characters, not bytes */
    static const struct {
        const char *js, *ere; /* the pattern (as JSON text) and the same language in POSIX ERE */
        const char *yes[3], *no[4]; /* JSON string texts */
    } p[] = {
        {"^[a-z]{2,4}-\\\\d{3}$", "^[a-z]{2,4}-[0-9]{3}$", {"\"ab-123\"", "\"wxyz-000\"", "\"zz-979\""}, {"\"a-123\"", "\"abcde-123\"", "\"ab-12\""}},
        {"^(foo|ba[rz])+$", "^(foo|ba[rz])+$", {"\"foobar\"", "\"baz\""}, {"\"\"", "\"fo\"", "\"foo \""}},
        {"abc", "abc", {"\"xxabcyy\"", "\"abc\""}, {"\"ab\"", "\"acb\"", "\"\""}},
        {"^\\\\w+@\\\\w+\\\\.com$", "^[A-Za-z0-9_]+@[A-Za-z0-9_]+[.]com$", {"\"a_1@b.com\"", "\"Zz_9@Q0.com\""}, {"\"a@b.co\"", "\"a@bxcom\"", "\"@b.com\""}},
        {"^[^a-c]*$", "^[^a-c]*$", {"\"x\\\"y\"", "\"\\\\\"", "\"\\n\""}, {"\"abc\"", "\"xb\""}},
        {"^(?:\\\\+|-)?\\\\d+(\\\\.\\\\d+)?$", "^([+]|-)?[0-9]+([.][0-9]+)?$", {"\"-12.5\"", "\"+3\""}, {"\"1.\"", "\"--1\"", "\".5\""}},
        {"^a.c$", "^a.c$", {"\"abc\"", "\"a\\\"c\""}, {"\"a\\nc\"", "\"ac\"", "\"abcc\""}},
        {"a|^b$", "a|^b$", {"\"xax\"", "\"b\""}, {"\"bb\"", "\"c\"", "\"\""}},
        {"^[\\\\d\\\\-]+x?$", "^[-0-9]+x?$", {"\"1-2\"", "\"-x\""}, {"\"x\"", "\"1y\""}},
        {"^\\\\\\\\[\\\"/]$", "^[\\\\][\"/]$", {"\"\\\\\\\"\"", "\"\\\\/\""}, {"\"\\\\\"", "\"\\\"\""}},
        {"^(?<y>\\\\d{4})-(0[1-9]|1[0-2])$", "^[0-9]{4}-(0[1-9]|1[0-2])$", {"\"2026-12\""}, {"\"2026-13\"", "\"26-01\""}},
        {"^\u00e9+\\\\u00e9x{0,2}$", "^\xc3\xa9+\xc3\xa9x{0,2}$", {"\"\u00e9\u00e9\"", "\"\u00e9\u00e9xx\""}, {"\"\u00e9\"", "\"\u00e9\u00e9xxx\""}},
        {"", "", {"\"\"", "\"any\\ttext\""}, {"5"}},
        {"^$", "^$", {"\"\""}, {"\" \""}},
    };
    for (size_t i = 0; i < sizeof p / sizeof *p; i++) {
        char text[512];
        snprintf(text, sizeof text, "{\"type\":\"string\",\"pattern\":\"%s\"}", p[i].js);
        json_t *schema;
        e0_grammar *g = grammar_of(text, &schema);
        regex_t re;
        CHECKF(regcomp(&re, p[i].ere, REG_EXTENDED | REG_NOSUB) == 0, "ERE %s", p[i].ere);
        for (int k = 0; g && k < 3 && p[i].yes[k]; k++) CHECKF(whole(g, p[i].yes[k]), "%s: %s refused", p[i].js, p[i].yes[k]);
        for (int k = 0; g && k < 4 && p[i].no[k]; k++) CHECKF(!whole(g, p[i].no[k]), "%s: %s accepted", p[i].js, p[i].no[k]);
        /* random walks: each complete text is a JSON string the ERE matches */
        e0_err err = {0};
        e0_gmatch *m = g ? e0_gmatch_new(g, &err) : NULL;
        static const char alpha[] = "abcfmoorxyz-0123456789_@.+\\\"/nt \xc3\xa9";
        unsigned seed = (unsigned)i * 2654435761u + 7;
        int complete = 0;
        for (int w = 0; m && w < 300; w++) {
            char s[256];
            if (walk_text(m, alpha, NULL, p[i].yes[0], 4, &seed, s, sizeof s) < 0) continue;
            complete++;
            json_t *v = json_loads(s, JSON_DECODE_ANY, NULL);
            CHECKF(json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v) &&
                       regexec(&re, json_string_value(v), 0, NULL, 0) == 0,
                   "%s: %s", p[i].js, s);
            json_decref(v);
        }
        CHECKF(!g || complete >= 20, "%s: only %d complete texts", p[i].js, complete);
        e0_gmatch_free(m);
        regfree(&re);
        e0_grammar_free(g);
        json_decref(schema);
    }
}

static void test_refused(void) {
    static const struct {
        const char *schema, *msg;
    } bad[] = {
        {"{\"type\":\"string\",\"pattern\":\"(?=a)b\"}", "at the root: pattern: lookahead and lookbehind"},
        {"{\"type\":\"string\",\"pattern\":\"(a)\\\\1\"}", "pattern: backreferences are not supported (at byte 5)"},
        {"{\"type\":\"string\",\"pattern\":\"\\\\bx\"}", "pattern: word boundaries"},
        {"{\"type\":\"string\",\"pattern\":\"a^b\"}", "pattern: ^ and $ are supported only at the start and end"},
        {"{\"type\":\"string\",\"pattern\":\"a$b\"}", "pattern: ^ and $ are supported only"},
        {"{\"type\":\"string\",\"pattern\":\"[z-a]\"}", "pattern: a range out of order"},
        {"{\"type\":\"string\",\"pattern\":\"x[]\"}", "pattern: a character class that matches no character"},
        {"{\"type\":\"string\",\"pattern\":\"(ab\"}", "pattern: a '(' without its ')'"},
        {"{\"type\":\"string\",\"pattern\":\"ab)\"}", "pattern: a ')' without its '('"},
        {"{\"type\":\"string\",\"pattern\":\"*a\"}", "pattern: a quantifier with nothing to repeat"},
        {"{\"type\":\"string\",\"pattern\":\"a**\"}", "pattern: a quantifier with nothing to repeat"},
        {"{\"type\":\"string\",\"pattern\":\"a{2,1}\"}", "pattern: a {m,n} with n < m"},
        {"{\"type\":\"string\",\"pattern\":\"a{1001}\"}", "pattern: a repetition count over 1000"},
        {"{\"type\":\"string\",\"pattern\":\"a{x\"}", "pattern: a '{' that is not a quantifier"},
        {"{\"type\":\"string\",\"pattern\":\"\\\\p{L}\"}", "pattern: Unicode property escapes"},
        {"{\"type\":\"string\",\"pattern\":\"\\\\q\"}", "pattern: an unknown escape"},
        {"{\"type\":\"string\",\"pattern\":\"[\\\\d-z]\"}", "pattern: a range from a class escape"},
        {"{\"type\":\"string\",\"pattern\":\"[a\"}", "pattern: a '[' without its ']'"},
        {"{\"type\":\"string\",\"pattern\":\"a\\\\\"}", "pattern: a pattern ending in a backslash"},
        {"{\"type\":\"string\",\"pattern\":5}", "'pattern' must be a string"},
        {"{\"type\":\"string\",\"pattern\":\"a\",\"maxLength\":3}", "a pattern with a format, minLength or maxLength"},
        {"{\"pattern\":\"a\"}", "minLength / maxLength / pattern / format are supported only beside \"type\": \"string\""},
        {"{\"minLength\":2}", "minLength / maxLength / pattern / format are supported only beside"},
        {"{\"type\":\"string\",\"enum\":[\"a\",\"bb\"],\"minLength\":2}", "minLength / maxLength / pattern / format are supported only"},
        {"{\"minItems\":1}", "minItems / maxItems are supported only beside"},
        {"{\"required\":[\"a\"]}", "a required property is not in 'properties': a"},
        {"{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"number\",\"minimum\":0}}}", "at properties.n: minimum / maximum are supported only beside"},
        {"{\"type\":[\"integer\",\"number\"],\"maximum\":3}", "minimum / maximum are supported for integers only"},
        {"{\"minimum\":0}", "minimum / maximum are supported only beside \"type\": \"integer\""},
        {"{\"type\":\"integer\",\"minimum\":5,\"maximum\":4.5}", "no integer lies between"},
        {"{\"type\":\"integer\",\"maximum\":1e16}", "maximum beyond 10^15"},
        {"{\"type\":\"integer\",\"multipleOf\":2}", "this keyword is not supported: multipleOf"},
        {"{\"type\":\"array\",\"items\":{\"type\":\"string\",\"format\":\"email\"}}", "at items: this string format is not supported: email"},
        {"{\"$ref\":\"http://x/y.json\"}", "only local $refs"},
        {"{\"$ref\":\"#/$defs/none\"}", "$ref to nothing: #/$defs/none"},
        {"{\"properties\":{\"a\":{}},\"required\":[\"b\"]}", "a required property is not in 'properties': b"},
        {"{\"type\":\"text\"}", "unknown type: text"},
        {"{\"type\":\"array\",\"minItems\":3,\"maxItems\":2}", "maxItems < minItems"},
        {"{\"type\":\"array\",\"maxItems\":100000}", "maxItems must be an integer from 0 to 10000"},
        {"{\"allOf\":[{},{}]}", "allOf is supported only with one schema"},
        {"{\"enum\":[]}", "enum must be a non-empty list"},
        {"{\"type\":5}", "type must be a string"},
        {"false", "a schema must be an object or true"},
        {"{\"not\":{}}", "not supported: not"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_t *s = json_loads(bad[i].schema, JSON_DECODE_ANY, NULL);
        e0_err e = {0};
        size_t len;
        char *text = e0_json_schema_grammar(s, &len, &e);
        CHECKF(!text && strstr(e.msg, bad[i].msg), "%s: got '%s'", bad[i].schema, text ? text : e.msg);
        free(text);
        json_decref(s);
    }
    /* 70 nested arrays: the depth limit */
    char deep[4096] = "";
    for (int i = 0; i < 70; i++) strcat(deep, "{\"items\":");
    strcat(deep, "{}");
    for (int i = 0; i < 70; i++) strcat(deep, "}");
    json_t *s = json_loads(deep, 0, NULL);
    e0_err e = {0};
    size_t len;
    char *text = e0_json_schema_grammar(s, &len, &e);
    CHECKF(!text && strstr(e.msg, "nested more than 64"), "%s", e.msg);
    free(text);
    json_decref(s);
    /* a $ref that is only itself converts, and the grammar parser refuses the loop */
    s = json_loads("{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/a\"}},\"$ref\":\"#/$defs/a\"}", 0, NULL);
    text = e0_json_schema_grammar(s, &len, &e);
    e0_grammar *g = text ? e0_grammar_parse(text, len, &e) : NULL;
    CHECKF(text && !g && strstr(e.msg, "left-recursive"), "%s", e.msg);
    free(text);
    json_decref(s);
}

int main(void) {
    RUN(test_walks);
    RUN(test_texts);
    RUN(test_integer_ranges);
    RUN(test_patterns);
    RUN(test_refused);
    return T_DONE();
}
