/* test_grammar.c — GBNF grammars: parse errors, matching (literals, classes, repetitions,
 * Unicode, partial UTF-8), limits, the JSON grammar against jansson, and the token sampler. */
#include "text/grammar.h"
#include "t.h"

#include <jansson.h>
#include <math.h>

static e0_grammar *parse(const char *s) {
    e0_err e = {0};
    e0_grammar *g = e0_grammar_parse(s, strlen(s), &e);
    CHECKF(g, "%s: %s", s, e.msg);
    return g;
}

/* Does g match the whole of text? (every prefix must be allowed too) */
static bool matches(const e0_grammar *g, const char *text, size_t n) {
    e0_err e = {0};
    e0_gmatch *m = e0_gmatch_new(g, &e);
    if (!m) return false;
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) ok = e0_gmatch_accept(m, text + i, 1);
    ok = ok && e0_gmatch_can_end(m);
    e0_gmatch_free(m);
    return ok;
}
#define M(g, s) matches(g, s, strlen(s))

static void test_parse_errors(void) {
    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"", "no rule named 'root'"},
        {"a ::= \"x\"", "no rule named 'root'"},
        {"root ::= a", "line 1, column 10: undefined rule 'a'"},
        {"root ::= \"x\"\nroot ::= \"y\"", "line 2, column 1: rule defined twice"},
        {"root ::= root \"x\" | \"y\"", "rule 'root' is left-recursive"},
        {"root ::= a\na ::= b? root\nb ::= \"x\"", "left-recursive"},
        {"root ::= \"x", "line 1, column 12: unterminated literal"},
        {"root ::= [a-", "unterminated character class"},
        {"root ::= [z-a]", "end before its start"},
        {"root ::= \"\\q\"", "unknown escape"},
        {"root ::= \"\\x4\"", "bad hex digit"},
        {"root ::= \"\\U00110000\"", "beyond U+10FFFF"},
        {"root ::= * \"x\"", "a repetition with nothing before it"},
        {"root ::= \"x\"{3,1}", "n < m"},
        {"root ::= \"x\"{a}", "expected a number"},
        {"root ::= \"x\"{2", "expected '}'"},
        {"root ::= \"abcdefgh\"{200000}", "too large"},
        {"root ::= \"x\"{0,99999999999}", "too large"},
        {"root ::= (\"x\"", "expected ')'"},
        {"root \"x\"", "expected '::='"},
        {"root ::= \"x\" )", "unexpected ')'"},
        {"::= \"x\"", "expected a rule name"},
        {"root ::= \"\xff\"", "invalid UTF-8"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        e0_err e = {0};
        e0_grammar *g = e0_grammar_parse(bad[i].text, strlen(bad[i].text), &e);
        CHECKF(!g, "parsed: %s", bad[i].text);
        CHECKF(strstr(e.msg, bad[i].msg), "%s: got '%s', want '%s'", bad[i].text, e.msg, bad[i].msg);
        e0_grammar_free(g);
    }
    char *big = malloc(E0_GRAMMAR_MAX_TEXT + 2);
    memset(big, ' ', E0_GRAMMAR_MAX_TEXT + 1);
    e0_err e = {0};
    CHECK(!e0_grammar_parse(big, E0_GRAMMAR_MAX_TEXT + 1, &e) && strstr(e.msg, "more than"));
    free(big);
}

static void test_match(void) {
    static const struct {
        const char *grammar;
        const char *yes[6], *no[6];
    } cases[] = {
        {"root ::= \"ab\" | \"cd\"", {"ab", "cd"}, {"", "a", "abc", "ac", "cdab"}},
        {"root ::= [a-c]+ \"!\"", {"a!", "abcba!"}, {"!", "ad!", "abc"}},
        {"root ::= [^a-c\\n]*", {"", "xyz", "é∑"}, {"a", "xa", "\n"}},
        {"root ::= \"a\"{2,4}", {"aa", "aaa", "aaaa"}, {"a", "aaaaa", ""}},
        {"root ::= \"ab\"{2}", {"abab"}, {"ab", "ababab", "aba"}},
        {"root ::= \"x\"{2,} \"y\"?", {"xx", "xxxxxxy", "xxy"}, {"x", "xy", "xxyy"}},
        {"root ::= (\"a\" | \"b\" c)* \"!\"\nc ::= [0-9]", {"!", "ab1a!", "b2b3!"}, {"b!", "ab!", "a"}},
        {"# a comment\nroot ::= ( # nested lines\n  \"a\"\n  | \"b\"\n) . # any\n", {"ax", "b\n", "a€"}, {"a", "c1", "axx"}},
        {"root ::= \"\\x41\\u00e9\\U0001F600\\t\\\"\"", {"Aé😀\t\""}, {"Ae", "A"}},
        {"root ::= [\\]\\[\\-] \"\"* \"z\"", {"]z", "[z", "-z"}, {"z", "a z"}},
        {"root ::= []", {NULL}, {"", "a"}},
        {"root ::= [^]", {"a", "é"}, {"", "ab"}},
        {"root ::= a b\na ::= \"x\"?\nb ::= \"y\"?", {"", "x", "y", "xy"}, {"yx", "xx"}},
        {"root ::= \"[\" root \"]\" | \"o\"", {"o", "[o]", "[[[o]]]"}, {"[o", "[]", "o]"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        e0_grammar *g = parse(cases[i].grammar);
        if (!g) continue;
        for (int k = 0; k < 6 && cases[i].yes[k]; k++)
            CHECKF(M(g, cases[i].yes[k]), "%s should match '%s'", cases[i].grammar, cases[i].yes[k]);
        for (int k = 0; k < 6 && cases[i].no[k]; k++)
            CHECKF(!M(g, cases[i].no[k]), "%s should not match '%s'", cases[i].grammar, cases[i].no[k]);
        e0_grammar_free(g);
    }
}

/* A token may end inside a multi-byte character; the state carries it to the next token. */
static void test_partial_utf8(void) {
    e0_grammar *g = parse("root ::= [é-ê] \"!\"");
    if (!g) return;
    e0_err e = {0};
    e0_gmatch *m = e0_gmatch_new(g, &e);
    CHECK(e0_gmatch_allows(m, "\xc3", 1));     /* é and ê start with 0xC3 */
    CHECK(!e0_gmatch_allows(m, "\xc2", 1));    /* U+0080..U+00BF: none in the class */
    CHECK(!e0_gmatch_allows(m, "\xa9", 1));    /* a continuation byte without its lead */
    CHECK(e0_gmatch_accept(m, "\xc3", 1));
    CHECK(!e0_gmatch_can_end(m) && !e0_gmatch_must_end(m));
    CHECK(!e0_gmatch_allows(m, "\xa8", 1));    /* è */
    CHECK(!e0_gmatch_allows(m, "!", 1));       /* not a continuation */
    CHECK(e0_gmatch_accept(m, "\xa9!", 2));
    CHECK(e0_gmatch_can_end(m) && e0_gmatch_must_end(m));
    CHECK(!e0_gmatch_allows(m, "!", 1));
    e0_gmatch_reset(m);
    CHECK(!e0_gmatch_can_end(m) && e0_gmatch_allows(m, "\xc3\xaa!", 3));
    e0_gmatch_free(m);
    e0_grammar_free(g);
    /* strict UTF-8 (as the detokenizer prints it): no overlong forms, surrogates or values past
     * U+10FFFF, even where the grammar takes any character */
    g = parse("root ::= [^x]* | \"{\"");
    m = g ? e0_gmatch_new(g, &e) : NULL;
    static const char *const bad[] = {"\xc1\xbb", "\xe0\x81\xbb", "\xe0\x80", "\xc0", "\xed\xa0\x80", "\xed\xa0", "\xf4\x90\x80\x80",
                                      "\xf5", "\x80", "\xf8"};
    for (size_t i = 0; m && i < sizeof bad / sizeof *bad; i++) CHECKF(!e0_gmatch_allows(m, bad[i], strlen(bad[i])), "bad UTF-8 %zu", i);
    CHECK(m && e0_gmatch_allows(m, "\xf0\x9f\x98\x80\xed\x9f\xbf\xf4\x8f\xbf\xbf\xc2\x80", 13) && e0_gmatch_allows(m, "\xe0\xa0", 2));
    e0_gmatch_free(m);
    e0_grammar_free(g);
}

/* Nesting past E0_GRAMMAR_MAX_DEPTH and ambiguity past E0_GRAMMAR_MAX_STACKS are refused and
 * reported, never grown without bound. */
static void test_limits(void) {
    e0_grammar *g = parse("root ::= \"[\" root \"]\" | \"o\"");
    e0_err e = {0};
    e0_gmatch *m = g ? e0_gmatch_new(g, &e) : NULL;
    if (m) {
        int i = 0;
        for (; i < 3 * E0_GRAMMAR_MAX_DEPTH && e0_gmatch_accept(m, "[", 1); i++) {}
        CHECKF(i < 3 * E0_GRAMMAR_MAX_DEPTH && i >= E0_GRAMMAR_MAX_DEPTH / 2, "stopped after %d", i);
        CHECK(e0_gmatch_overflow(m));
    }
    e0_gmatch_free(m);
    e0_grammar_free(g);
    /* every split of a run of x's into a's and b's: 2^k stacks, with no merging */
    g = parse("root ::= item* \"!\"\nitem ::= a | b\na ::= \"x\" [0-9]?\nb ::= \"x\" [0-9]? [0-9]?");
    m = g ? e0_gmatch_new(g, &e) : NULL;
    if (m) {
        bool ok = true;
        for (int i = 0; i < 200 && ok; i++) ok = e0_gmatch_accept(m, "x1", 2);
        CHECK(ok && !e0_gmatch_overflow(m)); /* stacks merge: this one stays small */
        CHECK(e0_gmatch_accept(m, "!", 1) && e0_gmatch_must_end(m));
    }
    e0_gmatch_free(m);
    e0_grammar_free(g);
    /* nullable rules nested 24 deep, each used twice: 2^24 ways to expand the start, stopped by
     * E0_GRAMMAR_MAX_WORK with one error (not minutes of work) */
    char text[4096];
    int o = 0;
    for (int i = 0; i < 24; i++) o += snprintf(text + o, sizeof text - o, "x%d ::= x%d x%d | \"\"\n", i, i + 1, i + 1);
    snprintf(text + o, sizeof text - o, "x24 ::= \"b\" | \"\"\nroot ::= x0 \"!\"\n");
    g = parse(text);
    double t0 = t_now();
    m = g ? e0_gmatch_new(g, &e) : NULL;
    CHECKF(!m && strstr(e.msg, "limits") && t_now() - t0 < 5, "%s after %.1f s", e.msg, t_now() - t0);
    e0_gmatch_free(m);
    e0_grammar_free(g);
}

/* The step cache (a lazily built DFA) is dropped when full: a grammar whose every position is a
 * new state (6000 nested optional rules) still counts exactly, across several drops. */
static void test_cache_drops(void) {
    e0_grammar *g = parse("root ::= [a-c]{0,6000} \"!\"");
    e0_err e = {0};
    e0_gmatch *m = g ? e0_gmatch_new(g, &e) : NULL;
    if (!m) return e0_grammar_free(g);
    bool ok = true;
    for (int i = 0; i < 6000 && ok; i++) {
        char c = (char)('a' + i % 3);
        ok = e0_gmatch_allows(m, "b", 1) && e0_gmatch_allows(m, "!", 1) && e0_gmatch_accept(m, &c, 1);
        if (!ok) printf("  refused at %d\n", i);
    }
    CHECK(ok && !e0_gmatch_allows(m, "a", 1) && !e0_gmatch_can_end(m));
    CHECK(e0_gmatch_accept(m, "!", 1) && e0_gmatch_must_end(m));
    e0_gmatch_reset(m);
    CHECK(e0_gmatch_allows(m, "!", 1) && !e0_gmatch_can_end(m));
    e0_gmatch_free(m);
    e0_grammar_free(g);
}

/* The JSON grammar: everything it accepts as a whole is JSON (jansson parses it), the texts
 * jansson writes compactly are accepted, and prefixes are allowed but cannot end. */
static void test_json(void) {
    e0_grammar *g = parse(e0_grammar_json);
    if (!g) return;
    static const char *ok[] = {"{}", "{\"a\": 1}", "{\"a\":[1,2.5,-3e10,true,null,{\"b\":\"x\\n\\u00e9\"}]}",
                               "{\n  \"k\": \"v\"\n}", "{\"\": []}", "{\"s\":\"\\ud83d\\ude00 \\u00e9\\/\"}"};
    static const char *no[] = {"[]", "{\"a\" 1}", "{'a': 1}", "{\"a\": 01}", "{\"a\": tru}", "{\"a\":\"\x01\"}",
                               "{\"a\": 1,}", "{\"a\": NaN}", "{} x", "{\"s\":\"\\ud800\"}",
                               "{\"s\":\"\\udc00\\ud800\"}", "{\"s\":\"\\u12\"}"};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) CHECKF(M(g, ok[i]), "'%s'", ok[i]);
    for (size_t i = 0; i < sizeof no / sizeof *no; i++) CHECKF(!M(g, no[i]), "'%s'", no[i]);
    /* random texts over JSON's characters: whatever the grammar accepts, jansson parses */
    static const char alpha[] = "{}[]\",: 01-.etruflsn\\a";
    unsigned seed = 7;
    int accepted = 0;
    e0_err e = {0};
    e0_gmatch *m = e0_gmatch_new(g, &e);
    for (int trial = 0; trial < 20000 && m; trial++) {
        char text[40];
        int n = 0;
        e0_gmatch_reset(m);
        while (n < 38) { /* extend with a random allowed character, as constrained decoding does */
            char c = 0;
            for (int tries = 0; tries < 8; tries++) {
                seed = seed * 1103515245u + 12345u;
                char d = alpha[(seed >> 16) % (sizeof alpha - 1)];
                if (e0_gmatch_accept(m, &d, 1)) {
                    c = d;
                    break;
                }
            }
            if (!c) break;
            text[n++] = c;
            if (e0_gmatch_must_end(m)) break;
        }
        text[n] = 0;
        if (!e0_gmatch_can_end(m)) continue;
        accepted++;
        json_error_t je;
        json_t *v = json_loads(text, 0, &je);
        CHECKF(v && json_is_object(v), "grammar accepted '%s', jansson: %s", text, je.text);
        json_decref(v);
    }
    CHECKF(accepted > 100, "only %d complete texts", accepted);
    e0_gmatch_free(m);
    e0_grammar_free(g);
}

/* A small SPM vocabulary: controls, single characters, a few longer pieces and byte tokens. */
static e0_tokenizer *vocab(void) {
    static const char *toks[] = {"<unk>", "<s>", "</s>", "{", "}", "\"", ":", ",", "a", "b", "1", "▁", "{\"",
                                 "\":", "ab", "}}", "x", "<0xC3>", "<0xA9>", "<|ctl|>"};
    int32_t types[20];
    for (int i = 0; i < 20; i++) types[i] = i < 3 || i == 19 ? E0_TT_CONTROL : i == 17 || i == 18 ? E0_TT_BYTE : E0_TT_NORMAL;
    types[0] = E0_TT_UNKNOWN;
    e0_tokenizer_desc d;
    e0_tokenizer_desc_init(&d);
    d.model = "llama";
    d.n_tokens = 20;
    d.tokens = toks;
    d.n_types = 20;
    d.types = types;
    e0_err e = {0};
    e0_tokenizer *t = e0_tokenizer_create(&d, &e);
    CHECKF(t, "%s", e.msg);
    return t;
}

static void test_sampler(void) {
    e0_tokenizer *tok = vocab();
    e0_grammar *g = parse("root ::= \"{\\\"\" [ab]+ \"\\\": \" (\"1\" | [é]) \"}\"");
    if (!tok || !g) goto out;
    e0_err e = {0};
    e0_gsampler *gs = e0_gsampler_new(g, tok, 20, &e);
    e0_sampler_params p = e0_sampler_defaults();
    p.temp = 0;
    e0_sampler *s = e0_sampler_new(&p, 20);
    float l[20];
    /* the model prefers "x", "</s>" and "<|ctl|>" everywhere: the grammar must steer it */
    char out[64];
    size_t n = 0;
    int steps = 0;
    for (; steps < 16 && !e0_gsampler_must_end(gs); steps++) {
        for (int i = 0; i < 20; i++) l[i] = (float)i * 0.01f;
        l[16] = 9, l[2] = 8, l[19] = 7, l[17] = 6, l[13] = 0.5f; /* x, </s>, <|ctl|>, <0xC3>, \": */
        int t = e0_gsampler_sample(gs, s, l, &e);
        CHECKF(t >= 0, "%s", e.msg);
        if (t < 0) break;
        CHECKF(t != 16 && t != 2 && t != 19 && t != 0 && t != 1, "step %d chose %d", steps, t);
        CHECK(e0_gsampler_allows(gs, t) && e0_gsampler_accept(gs, t));
        size_t k;
        const char *piece = e0_tok_piece(tok, t, false, &k);
        if (n + k < sizeof out) memcpy(out + n, piece, k), n += k;
    }
    out[n] = 0;
    /* greedy under the grammar: {" ab ": (before it is allowed, ab wins), then é from the byte tokens */
    CHECKF(e0_gsampler_must_end(gs) && !strcmp(out, "{\"ab\": \xc3\xa9}"), "'%s'", out);
    CHECK(e0_gsampler_allows(gs, 2) && !e0_gsampler_allows(gs, 4)); /* only the end may follow */
    /* a bias that bans every allowed token still yields an allowed one */
    e0_gsampler_free(gs);
    gs = e0_gsampler_new(g, tok, 20, &e);
    for (int i = 0; i < 20; i++) l[i] = i == 3 || i == 12 ? -INFINITY : 1.0f;
    int t = e0_gsampler_sample(gs, s, l, &e);
    CHECKF(t == 3 || t == 12, "chose %d", t);
    e0_gsampler_free(gs);
    /* a grammar no token can continue */
    e0_grammar *g2 = parse("root ::= \"q\"");
    gs = g2 ? e0_gsampler_new(g2, tok, 20, &e) : NULL;
    if (gs) {
        CHECK(e0_gsampler_sample(gs, s, l, &e) < 0 && strstr(e.msg, "no token"));
        CHECK(!e0_gsampler_accept(gs, 16) && !e0_gsampler_accept(gs, 2));
    }
    e0_gsampler_free(gs);
    e0_grammar_free(g2);
    e0_sampler_free(s);
out:
    e0_grammar_free(g);
    e0_tokenizer_free(tok);
}

int main(void) {
    RUN(test_parse_errors);
    RUN(test_match);
    RUN(test_partial_utf8);
    RUN(test_limits);
    RUN(test_cache_drops);
    RUN(test_json);
    RUN(test_sampler);
    return T_DONE();
}
