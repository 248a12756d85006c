/* test_tokenizer.c — tokenizers against llama.cpp's ids for the five vocabularies under
 * ../shared/tokenizer (library API for every case, the CLI for one file), round trips, the
 * pieces of the pre-tokenizer (regex matcher, Unicode table, UTF-8 helpers, GPT-2 byte map),
 * special tokens, BOS/EOS/EOG, the streaming decoder, hostile metadata, invalid UTF-8 and long
 * inputs. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "text/regex_split.h"
#include "t.h"
#include "text/tokenizer.h"
#include "text/tokenizer_impl.h"
#include "text/unicode.h"

static const char *const vocabs[] = {"llama-spm", "llama-bpe", "qwen2", "gpt-2", "deepseek-coder"};
#define N_VOCABS 5
static e0_tokenizer *toks[N_VOCABS];

static char *slurp(const char *path, size_t *n) {
    e0_err e;
    char *s = e0_read_file(path, 64u << 20, n, &e);
    if (!s) printf("  cannot read %s: %s\n", path, e.msg);
    return s;
}

/* ---- the shared case files ---- */

typedef struct cases {
    size_t n;
    char **text;
    size_t *len;
    char **ids; /* expected line (each id preceded by a space) */
} cases;

static void cases_free(cases *c) {
    free(c->text);
    free(c->len);
    free(c->ids);
    memset(c, 0, sizeof *c);
}

/* Parse X.inp / X.out (format in ../shared/tokenizer/README.md). Buffers are kept in *inp, *out. */
static bool load_cases(const char *base, cases *c, char **inp, char **out) {
    char path[700];
    size_t ni, no;
    memset(c, 0, sizeof *c); /* cases_free() is safe whatever happens below */
    snprintf(path, sizeof path, "%s.inp", base);
    *inp = slurp(path, &ni);
    snprintf(path, sizeof path, "%s.out", base);
    *out = slurp(path, &no);
    if (!*inp || !*out) return false;
    static const char sep[] = "\n__ggml_vocab_test__\n";
    size_t cap = 16;
    c->text = malloc(cap * sizeof *c->text);
    c->len = malloc(cap * sizeof *c->len);
    for (char *p = *inp; p < *inp + ni;) {
        char *m = memmem(p, (size_t)(*inp + ni - p), sep, sizeof sep - 1);
        if (!m) break;
        if (c->n == cap) {
            cap *= 2;
            c->text = realloc(c->text, cap * sizeof *c->text);
            c->len = realloc(c->len, cap * sizeof *c->len);
        }
        c->text[c->n] = p;
        c->len[c->n] = (size_t)(m - p);
        c->n++;
        p = m + sizeof sep - 1;
    }
    c->ids = calloc(c->n ? c->n : 1, sizeof *c->ids);
    size_t k = 0;
    for (char *p = *out; p < *out + no && k < c->n; k++) {
        char *nl = memchr(p, '\n', (size_t)(*out + no - p));
        if (nl) *nl = 0;
        c->ids[k] = p;
        p = nl ? nl + 1 : *out + no;
    }
    if (k != c->n) printf("  %s: %zu cases but %zu id lines\n", base, c->n, k);
    return k == c->n && c->n > 0;
}

static void format_ids(const e0_tokens *v, char **buf, size_t *cap) {
    size_t need = v->n * 12 + 1, o = 0;
    if (need > *cap) {
        *cap = need * 2;
        *buf = realloc(*buf, *cap);
    }
    for (size_t i = 0; i < v->n; i++) o += (size_t)sprintf(*buf + o, " %d", v->ids[i]);
    (*buf)[o] = 0;
}

static e0_tokenizer *open_vocab(const char *name) {
    char path[600];
    snprintf(path, sizeof path, "%s/tokenizer/ggml-vocab-%s.gguf", t_shared(), name);
    e0_err e;
    gguf_file *f = gguf_open(path, &e);
    if (!f) {
        printf("  %s: %s\n", path, e.msg);
        return NULL;
    }
    e0_tokenizer *t = e0_tokenizer_from_gguf(f, &e);
    if (!t) printf("  %s: %s\n", path, e.msg);
    gguf_close(f);
    return t;
}

static void show_text(const char *s, size_t n) {
    printf("    text: \"");
    for (size_t i = 0; i < n && i < 120; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == '"' || c == '\\') printf("\\x%02x", c);
        else putchar(c);
    }
    printf("%s\"\n", n > 120 ? "..." : "");
}

/* Every case of both files of one vocabulary; the ok-line name carries the pass counts. */
static void check_vocab(int v) {
    char name[200];
    size_t total = 0, pass = 0, rt_total = 0, rt_pass = 0;
    int shown = 0;
    e0_tokenizer *t = toks[v];
    snprintf(name, sizeof name, "vocab_%s", vocabs[v]);
    t_begin(name);
    CHECKF(t != NULL, "cannot load %s", vocabs[v]);
    if (t) {
        const char *kinds[] = {"gguf", "extended"};
        char *buf = NULL;
        size_t cap = 0;
        for (int k = 0; k < 2; k++) {
            char base[600], *inp = NULL, *out = NULL;
            cases c = {0};
            snprintf(base, sizeof base, "%s/tokenizer/ggml-vocab-%s.%s", t_shared(), vocabs[v], kinds[k]);
            bool ok = load_cases(base, &c, &inp, &out);
            CHECKF(ok, "cannot load cases %s", base);
            for (size_t i = 0; ok && i < c.n; i++) {
                e0_tokens ids = {0};
                e0_err e;
                total++;
                int rc = e0_tokenize(t, c.text[i], c.len[i], false, false, &ids, &e);
                CHECKF(rc == 0, "tokenize failed: %s", e.msg);
                format_ids(&ids, &buf, &cap);
                if (rc == 0 && !strcmp(buf, c.ids[i])) pass++;
                else if (shown++ < 3) {
                    printf("  %s case %zu differs\n", kinds[k], i);
                    show_text(c.text[i], c.len[i]);
                    printf("    want:%.300s\n    got: %.300s\n", c.ids[i], buf);
                }
                /* round trip */
                char *back = NULL;
                size_t blen = 0;
                rt_total++;
                if (rc == 0 && e0_detokenize(t, ids.ids, ids.n, false, &back, &blen, &e) == 0 && blen == c.len[i] &&
                    !memcmp(back, c.text[i], blen))
                    rt_pass++;
                else if (shown++ < 3) {
                    printf("  %s case %zu does not round-trip\n", kinds[k], i);
                    show_text(c.text[i], c.len[i]);
                    if (back) show_text(back, blen);
                }
                free(back);
                e0_tokens_free(&ids);
            }
            cases_free(&c);
            free(inp);
            free(out);
        }
        free(buf);
    }
    CHECKF(total > 0 && pass == total, "%zu of %zu cases match", pass, total);
    CHECKF(rt_pass == rt_total, "%zu of %zu cases round-trip", rt_pass, rt_total);
    snprintf(name, sizeof name, "vocab_%s_%zu_of_%zu_cases_%zu_of_%zu_roundtrip", vocabs[v], pass, total, rt_pass,
             rt_total);
    snprintf(t_cur_name, sizeof t_cur_name, "%s", name);
    t_end();
}

/* ---- Unicode table, UTF-8, GPT-2 byte map ---- */

static void test_unicode_categories(void) {
    CHECK(e0_ucat('a') == E0_UCAT_LETTER);
    CHECK(e0_ucat(0xE9) == E0_UCAT_LETTER);   /* é */
    CHECK(e0_ucat('5') == E0_UCAT_NUMBER);
    CHECK(e0_ucat(0xB2) == E0_UCAT_NUMBER);   /* ² (No) */
    CHECK(e0_ucat(0x0663) == E0_UCAT_NUMBER); /* Arabic-Indic three */
    CHECK(e0_ucat('!') == E0_UCAT_PUNCT);
    CHECK(e0_ucat('_') == E0_UCAT_PUNCT);
    CHECK(e0_ucat('$') == E0_UCAT_SYMBOL);
    CHECK(e0_ucat('+') == E0_UCAT_SYMBOL);
    CHECK(e0_ucat('`') == E0_UCAT_SYMBOL);
    CHECK(e0_ucat(0x0301) == E0_UCAT_MARK);   /* combining acute */
    CHECK(e0_ucat(' ') == E0_UCAT_SEPARATOR);
    CHECK(e0_ucat('\n') == E0_UCAT_CONTROL);
    CHECK(e0_ucat(0x4E2D) == E0_UCAT_LETTER); /* inside a First/Last range */
    CHECK(e0_ucat(0xAC01) == E0_UCAT_LETTER); /* Hangul syllable range */
    CHECK(e0_ucat(0x1F600) == E0_UCAT_SYMBOL);
    CHECK(e0_ucat(0x0378) == E0_UCAT_UNDEFINED);
    CHECK(e0_ucat(0x10FFFF) == E0_UCAT_UNDEFINED);
    CHECK(e0_ucat(0x110000) == 0);
    CHECK(e0_uni_is_space(' ') && e0_uni_is_space('\t') && e0_uni_is_space(0x0B) && e0_uni_is_space(0x85));
    CHECK(e0_uni_is_space(0xA0) && e0_uni_is_space(0x3000) && e0_uni_is_space(0x2009));
    CHECK(!e0_uni_is_space(0x200B) && !e0_uni_is_space('a') && !e0_uni_is_space(0x1C));
    CHECK(e0_ucat_nranges > 1000);
    for (size_t i = 0; i < e0_ucat_nranges; i++) {
        CHECKF(e0_ucat_ranges[i].first <= e0_ucat_ranges[i].last, "range %zu", i);
        if (i) CHECKF(e0_ucat_ranges[i - 1].last < e0_ucat_ranges[i].first, "range %zu overlaps", i);
    }
}

static void test_utf8(void) {
    uint32_t cp = 0;
    CHECK(e0_utf8_decode((const unsigned char *)"\xC3\xA9", 2, &cp) == 2 && cp == 0xE9);
    CHECK(e0_utf8_decode((const unsigned char *)"\xF0\x9F\x98\x80", 4, &cp) == 4 && cp == 0x1F600);
    CHECK(e0_utf8_decode((const unsigned char *)"\x80", 1, &cp) == 0);
    CHECK(e0_utf8_decode((const unsigned char *)"\xC3", 1, &cp) == 0);
    CHECK(e0_utf8_decode((const unsigned char *)"\xE2\x82", 2, &cp) == 0);
    CHECK(e0_utf8_decode((const unsigned char *)"\xE2\x41\x41", 3, &cp) == 0);
    CHECK(e0_utf8_decode((const unsigned char *)"\xF8\x80\x80\x80", 4, &cp) == 0);
    CHECK(e0_utf8_decode((const unsigned char *)"\xC0\x80", 2, &cp) == 2 && cp == 0); /* lenient, as llama.cpp */
    const struct {
        const char *s;
        int want;
    } pre[] = {{"a", 1}, {"\xE2\x82", 0}, {"\xE2\x82\xAC", 3}, {"\xF0", 0}, {"\xF0\x9F", 0}, {"\xC0\x80", -1},
               {"\xED\xA0\x80", -1}, {"\xED\xA0", -1}, {"\xF4\x90", -1}, {"\xFF", -1}, {"\x80", -1}, {"\xE2\x41", -1}};
    for (size_t i = 0; i < sizeof pre / sizeof *pre; i++)
        CHECKF(e0_utf8_valid_prefix((const unsigned char *)pre[i].s, strlen(pre[i].s)) == pre[i].want, "case %zu", i);
    const uint32_t cps[] = {0, 0x7F, 0x80, 0x7FF, 0x800, 0xFFFF, 0x10000, 0x10FFFF};
    for (size_t i = 0; i < sizeof cps / sizeof *cps; i++) {
        char b[4];
        size_t n = e0_utf8_encode(cps[i], b);
        CHECK(e0_utf8_decode((const unsigned char *)b, n, &cp) == n && cp == cps[i]);
    }
}

static void test_byte_map(void) {
    bool seen[512] = {false};
    for (int b = 0; b < 256; b++) {
        uint32_t cp = e0_byte_to_cp((unsigned char)b);
        CHECKF(cp < 512 && !seen[cp], "byte %d", b);
        if (cp < 512) seen[cp] = true;
        CHECKF(e0_cp_to_byte(cp) == b, "byte %d", b);
    }
    CHECK(e0_byte_to_cp('A') == 'A' && e0_byte_to_cp(' ') == 0x120 && e0_byte_to_cp('\n') == 0x10A);
    CHECK(e0_cp_to_byte(0x4E2D) == -1 && e0_cp_to_byte(0x144) == -1);
}

/* ---- regex matcher ---- */

/* Split text with one pattern; chunks joined by '|'. */
static char *split(const char *pattern, const char *text) {
    static char out[1024];
    e0_err e;
    e0_regex *r = e0_regex_compile(pattern, &e);
    if (!r) {
        snprintf(out, sizeof out, "ERROR %s", e.msg);
        return out;
    }
    uint32_t cps[256];
    size_t off[257], n = 0, len = strlen(text);
    for (size_t i = 0; i < len && n < 256;) {
        size_t k = e0_utf8_decode((const unsigned char *)text + i, len - i, &cps[n]);
        if (!k) k = 1, cps[n] = 0xFFFD;
        off[n++] = i;
        i += k;
    }
    off[n] = len;
    e0_lens in = {0}, res = {0};
    e0_lens_push(&in, n, &e);
    size_t o = 0, u = 0;
    out[0] = 0;
    if (e0_regex_split(r, cps, &in, &res, &e) == 0) {
        for (size_t i = 0; i < res.n; i++) {
            o += (size_t)snprintf(out + o, sizeof out - o, "%s%.*s", i ? "|" : "", (int)(off[u + res.v[i]] - off[u]),
                                  text + off[u]);
            u += res.v[i];
        }
    }
    free(in.v);
    free(res.v);
    e0_regex_free(r);
    return out;
}

#define GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"

static void test_regex(void) {
    struct {
        const char *pat, *text, *want;
    } cases[] = {
        {GPT2, "Hello world's  x", "Hello| world|'s| | x"},
        {GPT2, "a  ", "a|  "},
        {GPT2, "\tb", "\t|b"},
        {GPT2, "caf\xC3\xA9 42!!", "caf\xC3\xA9| 42|!!"},
        {"(?i:'s|'t)|\\p{L}+", "'S'tx", "'S|'t|x"},
        {"\\p{N}{1,3}", "12345", "123|45"},
        {"\\p{N}{2}", "12345", "12|34|5"},
        {"\\s+$", "a  b  ", "a  b|  "},
        {"[^\\s\\p{L}]+", "ab!?c", "ab|!?|c"},
        {"[\\p{P}\\$\\+<=>\\^~\\|]+", "a+=b", "a|+=|b"},
        {"[一-龥]+", "x中文y", "x|中文|y"},
        {"\\s?\\p{L}+", "  ab", " | ab"},
        {"a(?=b)", "acab", "ac|a|b"},
        {"(?:ab|a)c", "abcac", "abc|ac"},
        {"[^a-c]+", "abxyzc", "ab|xyz|c"},
        {"[\\r\\n]", "a\r\nb", "a|\r|\n|b"},
        {".", "ab", "a|b"},
        {"\\x41|\\u00e9", "A\xC3\xA9z", "A|\xC3\xA9|z"},
        /* quantified groups: single-character ones (conjunctions of lookaheads and a class) loop */
        {"((?=[\\p{L}])([^a-z]))+", "ABcD\xC3\xA9!", "AB|c|D\xC3\xA9|!"},
        {"((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+", "HELLOworld ABCd", "HELLOworld| |ABCd"},
        {"(?:(?![a-c])\\p{L})+", "xyaz", "xy|a|z"},
        {"(a)+", "aab", "aa|b"},
        /* bounded repeats of longer groups; ECMAScript leftmost alternative */
        {"x(?:ab|a)?", "xabxax", "xab|xa|x"},
        {"(?:ab){2,3}", "abababababx", "ababab|abab|x"},
        {"(?:ab){2}", "abab ab", "abab| ab"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *got = split(cases[i].pat, cases[i].text);
        CHECKF(!strcmp(got, cases[i].want), "pattern %s on \"%s\": got \"%s\" want \"%s\"", cases[i].pat, cases[i].text,
               got, cases[i].want);
    }
    const char *bad[] = {"(ab)+", "(?:a|b)*", "(?=a)+", "\\p{Xx}", "\\p{Lu}", "[a-", "a{3,1}", "(?<=a)", "\\b", "a*?", "(ab", "ab)", "*a", "[z-a]"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        e0_err e = {{0}};
        e0_regex *r = e0_regex_compile(bad[i], &e);
        CHECKF(!r && strstr(e.msg, "regex"), "pattern %s should fail", bad[i]);
        e0_regex_free(r);
    }
}

/* Every pre-tokenizer of the table splits crafted text as its llama.cpp regex list does. */
static void test_pretokenizers(void) {
    static const struct {
        const char *pre, *text, *want;
    } cases[] = {
        {"default", "x=1234!", "x|=|123|4|!"},
        {"default", "a `b`", "a| `|b|`"},
        {"gpt-2", "ab 12  x's", "ab| 12| | x|'s"},
        {"mpt", "ab 12", "ab| 12"},
        {"starcoder", "ab 12", "ab| |1|2"},
        {"refact", "x 7y", "x| |7|y"},
        {"falcon", "a+b 12345", "a|+|b| |123|45"},
        {"falcon", "a `b`", "a| |`|b|`"},
        {"llama-bpe", "Hello 12345\n\n world", "Hello| |123|45|\n\n| world"},
        {"llama3", "I'M ok", "I|'M| ok"},
        {"qwen2", "Hello 12345\n\n world", "Hello| |1|2|3|4|5|\n\n| world"},
        {"deepseek-coder", "a, b\n12", "a|,| b|\n|1|2"},
        {"deepseek-coder", "x\xe4\xb8\x96\xe7\x95\x8cy", "x|\xe4\xb8\x96\xe7\x95\x8c|y"},
        {"deepseek-llm", "Hello \xe4\xb8\x96\xe7\x95\x8c 123\n", "Hello| |\xe4\xb8\x96\xe7\x95\x8c| |123|\n"},
        {"deepseek-llm", "ab, cd  ", "ab|,| cd|  "},
        {"deepseek-llm", "x\xe3\x80\x80!", "x|\xe3\x80\x80!"},
        {"deepseek-llm", "\xe1\xbf\x93\xe2\x84\xaa" "1", "\xe1\xbf\x93\xe2\x84\xaa|1"}, /* U+1FD3 U+212A are in the class */
        {"gpt-4o", "HTTPServer isn't 12345", "HTTPServer| isn't| |123|45"},
        /* llama.cpp's o200k: a non-ASCII letter is both "upper" and "lower", so "ÉCOLE" splits after É */
        {"llama4", "\xc3\x89" "COLE \xc3\xa9" "cole", "\xc3\x89|COLE| \xc3\xa9" "cole"},
        {"tekken", "HTTPServer isn't", "HTTPServer| isn|'t"},
        {"kimi-k2", "ab\xe4\xb8\xad\xe6\x96\x87" "cd 12345", "ab|\xe4\xb8\xad\xe6\x96\x87|" "cd| |123|45"},
        {"qwen35", "Cafe\xcc\x81 12", "Cafe\xcc\x81| |1|2"},
        {"qwen2", "Cafe\xcc\x81 12", "Cafe|\xcc\x81| |1|2"},
        {"deepseek-v3", "ab,cd 12345 \xe4\xb8\xad\xe6\x96\x87", "ab|,cd| |123|45| |\xe4\xb8\xad\xe6\x96\x87"},
        {"seed-coder", "a\r\n!!\n", "a|\r\n|!!|\n"},
        {"gemma4", "a b\n\nc", "a b|\n\n|c"},
    };
    const char *words[] = {"a"};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        e0_tokenizer_desc d;
        e0_tokenizer_desc_init(&d);
        d.model = "gpt2";
        d.pre = cases[i].pre;
        d.tokens = words;
        d.n_tokens = 1;
        d.bos = 0; /* llama3 adds a BOS */
        e0_err e;
        e0_tokenizer *t = e0_tokenizer_create(&d, &e);
        CHECKF(t != NULL, "%s: %s", cases[i].pre, e.msg);
        if (!t) continue;
        e0_lens w = {0};
        char got[256] = "";
        size_t o = 0, off = 0;
        const char *text = cases[i].text;
        CHECK(tok_bpe_split(t, text, strlen(text), &w, &e) == 0);
        for (size_t k = 0; k < w.n; k++) {
            o += (size_t)snprintf(got + o, sizeof got - o, "%s%.*s", k ? "|" : "", (int)w.v[k], text + off);
            off += w.v[k];
        }
        CHECKF(!strcmp(got, cases[i].want), "%s on \"%s\": got \"%s\" want \"%s\"", cases[i].pre, text, got,
               cases[i].want);
        free(w.v);
        e0_tokenizer_free(t);
    }
}

/* Long whitespace runs that a naive backtracker handles in quadratic time (deepseek-llm's \\s+$
 * against 100k spaces not at the end): must stay linear. */
static void test_pretokenizer_long_runs(void) {
    const char *pres[] = {"deepseek-llm", "llama3", "gpt-2", "qwen2", "default", "falcon", "gpt-4o", "tekken", "kimi-k2",
                          "qwen35", "deepseek-v3", "gemma4"};
    const char *words[] = {"a"};
    size_t n = 100000;
    char *text = malloc(n + 2);
    memset(text, ' ', n);
    for (size_t p = 0; p < sizeof pres / sizeof *pres; p++) {
        for (int tail = 0; tail < 3; tail++) {
            size_t len = n;
            if (tail == 1) text[len++] = '1';
            if (tail == 2) text[len++] = '\n';
            e0_tokenizer_desc d;
            e0_tokenizer_desc_init(&d);
            d.model = "gpt2";
            d.pre = pres[p];
            d.tokens = words;
            d.n_tokens = 1;
            d.bos = 0;
            e0_err e;
            e0_tokenizer *t = e0_tokenizer_create(&d, &e);
            CHECKF(t != NULL, "%s", e.msg);
            if (!t) continue;
            e0_lens w = {0};
            double t0 = e0_now();
            CHECK(tok_bpe_split(t, text, len, &w, &e) == 0);
            double secs = e0_now() - t0;
            size_t total = 0;
            for (size_t k = 0; k < w.n; k++) total += w.v[k];
            CHECKF(total == len && w.n <= 3, "%s tail %d: %zu words", pres[p], tail, w.n);
            CHECKF(secs < 20, "%s tail %d: %.1f s", pres[p], tail, secs);
            if (secs > 0.5) printf("  %s tail %d: %.2f s\n", pres[p], tail, secs);
            free(w.v);
            e0_tokenizer_free(t);
        }
    }
    free(text);
}

/* ---- behaviour on the real vocabularies ---- */

static bool tokenize(e0_tokenizer *t, const char *s, size_t n, bool add_special, bool parse_special, e0_tokens *v) {
    e0_err e;
    v->n = 0;
    if (e0_tokenize(t, s, n, add_special, parse_special, v, &e) == 0) return true;
    printf("  tokenize: %s\n", e.msg);
    return false;
}

static int32_t id_of(e0_tokenizer *t, const char *s) { return e0_tok_find(t, s, strlen(s)); }

static void test_special_tokens(void) {
    e0_tokenizer *qw = toks[2], *ds = toks[4], *spm = toks[0];
    if (!qw || !ds || !spm) {
        CHECK(0);
        return;
    }
    e0_tokens v = {0};
    const char *chat = "<|im_start|>user\nhi<|im_end|>";
    CHECK(tokenize(qw, chat, strlen(chat), false, true, &v));
    CHECK(v.n >= 3 && v.ids[0] == id_of(qw, "<|im_start|>") && v.ids[v.n - 1] == id_of(qw, "<|im_end|>"));
    CHECK(tokenize(qw, chat, strlen(chat), false, false, &v));
    bool any_special = false;
    for (size_t i = 0; i < v.n; i++) any_special |= v.ids[i] >= 151643;
    CHECK(v.n > 5 && !any_special);
    /* user-defined tokens are matched even without parse_special (llama.cpp) */
    CHECK(tokenize(ds, "\xC3\xB5", 2, false, false, &v) && v.n == 1 && v.ids[0] == id_of(ds, "\xC3\xB5"));
    CHECK(e0_tok_type_of(ds, v.n ? v.ids[0] : -1) == E0_TT_USER_DEFINED);
    /* SPM: the text after a special token gets the space prefix again */
    CHECK(tokenize(spm, "a<s>b", 5, false, true, &v));
    CHECK(v.n == 3 && v.ids[0] == id_of(spm, "\xE2\x96\x81" "a") && v.ids[1] == 1 &&
          v.ids[2] == id_of(spm, "\xE2\x96\x81" "b"));
    CHECK(tokenize(spm, "a<s>b", 5, false, false, &v) && v.n > 3);
    e0_tokens_free(&v);
}

static void test_bos_eos_eog(void) {
    e0_tokens v = {0};
    for (int i = 0; i < N_VOCABS; i++) {
        e0_tokenizer *t = toks[i];
        if (!t) continue;
        CHECK(tokenize(t, "Hello", 5, true, false, &v) && v.n >= 1);
        bool has_bos = v.n && v.ids[0] == e0_tok_bos(t) && e0_tok_bos(t) >= 0;
        CHECKF(has_bos == e0_tok_add_bos(t), "%s", vocabs[i]);
        CHECK(tokenize(t, "", 0, true, false, &v) && v.n == (e0_tok_add_bos(t) ? 1u : 0u) + (e0_tok_add_eos(t) ? 1u : 0u));
        CHECK(tokenize(t, "", 0, false, false, &v) && v.n == 0);
        CHECKF(e0_tok_eos(t) >= 0 && e0_tok_is_eog(t, e0_tok_eos(t)), "%s", vocabs[i]);
    }
    if (toks[0]) CHECK(e0_tok_add_bos(toks[0]) && e0_tok_bos(toks[0]) == 1 && e0_tok_eos(toks[0]) == 2);
    if (toks[1]) {
        CHECK(e0_tok_add_bos(toks[1]) && e0_tok_bos(toks[1]) == id_of(toks[1], "<|begin_of_text|>"));
        CHECK(e0_tok_is_eog(toks[1], id_of(toks[1], "<|eot_id|>")) && e0_tok_eot(toks[1]) == id_of(toks[1], "<|eot_id|>"));
        CHECK(!e0_tok_is_eog(toks[1], e0_tok_bos(toks[1])));
    }
    if (toks[2]) {
        CHECK(!e0_tok_add_bos(toks[2]));
        CHECK(e0_tok_is_eog(toks[2], id_of(toks[2], "<|im_end|>")) && e0_tok_is_eog(toks[2], id_of(toks[2], "<|endoftext|>")));
        CHECK(!e0_tok_is_eog(toks[2], id_of(toks[2], "<|im_start|>")) && !e0_tok_is_eog(toks[2], id_of(toks[2], "Hello")));
        CHECK(!e0_tok_is_eog(toks[2], -1) && !e0_tok_is_eog(toks[2], 1 << 30));
    }
    if (toks[3]) CHECK(e0_tok_is_eog(toks[3], id_of(toks[3], "<|endoftext|>")));
    e0_tokens_free(&v);
}

static bool piece_is(e0_tokenizer *t, int32_t id, bool special, const char *want) {
    size_t n;
    const char *p = e0_tok_piece(t, id, special, &n);
    return n == strlen(want) && !memcmp(p, want, n);
}

static void test_pieces(void) {
    e0_tokenizer *spm = toks[0], *g2 = toks[3];
    if (!spm || !g2) {
        CHECK(0);
        return;
    }
    CHECK(piece_is(spm, id_of(spm, "\xE2\x96\x81Hello"), false, " Hello"));
    CHECK(piece_is(spm, id_of(spm, "<0x0A>"), false, "\n"));
    CHECK(piece_is(spm, 1, false, "") && piece_is(spm, 1, true, "<s>"));
    CHECK(piece_is(spm, -5, true, "") && piece_is(spm, 32000, true, ""));
    CHECK(piece_is(g2, id_of(g2, "\xC4\xA0world"), false, " world"));
    CHECK(piece_is(g2, id_of(g2, "\xC4\x8A"), false, "\n"));
    CHECK(piece_is(g2, id_of(g2, "<|endoftext|>"), false, "") && piece_is(g2, id_of(g2, "<|endoftext|>"), true, "<|endoftext|>"));
    /* whole-sequence leading-space rule (SPM) */
    int32_t hello = id_of(spm, "\xE2\x96\x81Hello");
    int32_t ids[] = {1, hello, hello};
    char *s = NULL;
    size_t n = 0;
    e0_err e;
    CHECK(e0_detokenize(spm, ids, 3, false, &s, &n, &e) == 0 && n == 11 && !memcmp(s, "Hello Hello", 11));
    free(s);
    CHECK(e0_detokenize(spm, ids + 1, 2, false, &s, &n, &e) == 0 && n == 11 && !memcmp(s, "Hello Hello", 11));
    free(s);
    CHECK(e0_detokenize(spm, ids, 2, true, &s, &n, &e) == 0 && n == 8 && !memcmp(s, "<s>Hello", 8));
    free(s);
    CHECK(e0_detokenize(g2, ids, 0, false, &s, &n, &e) == 0 && n == 0 && s && s[0] == 0);
    free(s);
}

static void test_stream(void) {
    e0_tokenizer *spm = toks[0];
    if (!spm) {
        CHECK(0);
        return;
    }
    int32_t e2 = id_of(spm, "<0xE2>"), x82 = id_of(spm, "<0x82>"), xac = id_of(spm, "<0xAC>"), xff = id_of(spm, "<0xFF>");
    int32_t a = id_of(spm, "<0x41>"), hello = id_of(spm, "\xE2\x96\x81Hello");
    CHECK(e2 >= 0 && x82 >= 0 && xac >= 0 && xff >= 0 && a >= 0 && hello >= 0);
    e0_detok_stream s;
    size_t n;
    const char *p;
    e0_detok_init(&s, spm, false, false);
    p = e0_detok_push(&s, e2, &n);
    CHECK(p && n == 0);
    p = e0_detok_push(&s, x82, &n);
    CHECK(p && n == 0);
    p = e0_detok_push(&s, xac, &n);
    CHECK(p && n == 3 && !memcmp(p, "\xE2\x82\xAC", 3));
    p = e0_detok_push(&s, xff, &n); /* never valid: passed through at once */
    CHECK(p && n == 1 && (unsigned char)p[0] == 0xFF);
    p = e0_detok_push(&s, e2, &n);
    CHECK(p && n == 0);
    p = e0_detok_push(&s, a, &n); /* breaks the sequence: held byte passed through, then 'A' */
    CHECK(p && n == 2 && !memcmp(p, "\xE2" "A", 2));
    p = e0_detok_push(&s, hello, &n);
    CHECK(p && n == 6 && !memcmp(p, " Hello", 6));
    p = e0_detok_push(&s, e2, &n);
    CHECK(p && n == 0);
    p = e0_detok_flush(&s, &n); /* incomplete at the end: passed through */
    CHECK(p && n == 1 && (unsigned char)p[0] == 0xE2);
    p = e0_detok_flush(&s, &n);
    CHECK(p && n == 0);
    e0_detok_free(&s);
    /* leading space dropped only for the first piece (after an optional BOS) */
    e0_detok_init(&s, spm, false, true);
    p = e0_detok_push(&s, 1, &n);
    CHECK(p && n == 0);
    p = e0_detok_push(&s, hello, &n);
    CHECK(p && n == 5 && !memcmp(p, "Hello", 5));
    p = e0_detok_push(&s, hello, &n);
    CHECK(p && n == 6 && !memcmp(p, " Hello", 6));
    e0_detok_free(&s);
}

/* ---- hostile metadata ---- */

static e0_tokenizer *make(const e0_tokenizer_desc *d, e0_err *e) {
    memset(e, 0, sizeof *e);
    return e0_tokenizer_create(d, e);
}

static void test_bad_metadata(void) {
    const char *words[] = {"a", "b", "ab", "\xC4\xA0", "c"};
    const float scores[] = {0, 0, 0, 0, 0};
    const int32_t types[] = {1, 1, 1, 1, 1};
    const char *merges[] = {"a b", "x y", "nospace", "ab c", " b"};
    e0_tokenizer_desc d;
    e0_err e;
    e0_tokenizer *t;

    e0_tokenizer_desc_init(&d);
    d.model = "gpt2";
    d.pre = "gpt-2";
    d.tokens = words;
    d.n_tokens = 5;
    d.merges = merges;
    d.n_merges = 5;
    t = make(&d, &e);
    CHECKF(t != NULL, "%s", e.msg);
    if (t) {
        CHECK(e0_tok_merges_skipped(t) == 4); /* unknown x/y, no space, unknown "abc", " b" */
        e0_tokens v = {0};
        CHECK(tokenize(t, "ab a b", 6, false, false, &v));
        CHECK(v.n == 5 && v.ids[0] == 2 && v.ids[1] == 3 && v.ids[2] == 0 && v.ids[3] == 3 && v.ids[4] == 1);
        e0_tokens_free(&v);
        CHECK(e0_tok_bos(t) == -1 && e0_tok_eos(t) == -1); /* default 11 is out of range: none */
        e0_tokenizer_free(t);
    }
    d.n_scores = 3, d.scores = scores;
    CHECK(!make(&d, &e) && strstr(e.msg, "scores"));
    d.n_scores = 5;
    d.n_types = 4, d.types = types;
    CHECK(!make(&d, &e) && strstr(e.msg, "types"));
    d.n_types = 5;
    d.bos = 5;
    CHECK(!make(&d, &e) && strstr(e.msg, "BOS"));
    d.bos = -1;
    d.eot = 99;
    CHECK(!make(&d, &e) && strstr(e.msg, "EOT"));
    d.eot = -1;
    d.pre = "no-such-pre";
    CHECK(!make(&d, &e) && strstr(e.msg, "no-such-pre"));
    d.pre = NULL; /* absent = default */
    t = make(&d, &e);
    CHECK(t && !strcmp(e0_tok_pre(t), "default"));
    e0_tokenizer_free(t);
    d.add_bos = 1; /* but no BOS token */
    CHECK(!make(&d, &e) && strstr(e.msg, "BOS"));
    d.add_bos = -1;
    d.model = "bert";
    CHECK(!make(&d, &e) && strstr(e.msg, "bert"));
    d.model = NULL;
    CHECK(!make(&d, &e));
    d.model = "gpt2";
    d.n_tokens = 0;
    CHECK(!make(&d, &e) && strstr(e.msg, "empty"));
    const char *dup[] = {"a", "b", "a"};
    d.tokens = dup;
    d.n_tokens = 3;
    d.n_scores = d.n_types = 0;
    CHECK(!make(&d, &e) && strstr(e.msg, "duplicate"));
    /* SPM: empty text becomes [EMPTY_i]; a byte without <0xNN> falls back to UNK */
    const char *sw[] = {"<unk>", "<s>", "</s>", "", "\xE2\x96\x81" "a"};
    e0_tokenizer_desc_init(&d);
    d.model = "llama";
    d.tokens = sw;
    d.n_tokens = 5;
    t = make(&d, &e);
    CHECKF(t != NULL, "%s", e.msg);
    if (t) {
        size_t n;
        const char *s = e0_tok_text(t, 3, &n);
        CHECK(s && n == 9 && !memcmp(s, "[EMPTY_3]", 9));
        e0_tokens v = {0};
        CHECK(tokenize(t, "az", 2, true, false, &v));
        CHECK(v.n == 3 && v.ids[0] == 1 && v.ids[1] == 4 && v.ids[2] == 0);
        e0_tokens_free(&v);
        e0_tokenizer_free(t);
    }
}

/* GGUF files with bad tokenizer metadata must fail to load with a clear message. */
static void test_bad_gguf(void) {
    char path[700];
    const char *toks3[] = {"a", "b", "c"};
    const float sc2[] = {0, 0};
    const float sc3[] = {0, 0, 0};
    const int32_t ty3[] = {1, 1, 1};
    struct {
        const char *what;
        int variant;
    } cases[] = {{"scores", 0}, {"token_type", 1}, {"bos", 2}, {"empty", 3}, {"model", 4}, {"ok", 5}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(path, sizeof path, "%s/test-tok-%zu.gguf", t_build(), i);
        gguf_writer *w = gguf_writer_open(path, NULL);
        CHECK(w != NULL);
        if (!w) continue;
        int v = cases[i].variant;
        if (v != 4) gguf_writer_kv_str(w, "tokenizer.ggml.model", "llama");
        gguf_writer_kv_str_arr(w, "tokenizer.ggml.tokens", toks3, v == 3 ? 0 : 3);
        gguf_writer_kv_arr(w, "tokenizer.ggml.scores", GGUF_F32, v == 0 ? (const void *)sc2 : (const void *)sc3, v == 0 ? 2 : 3);
        if (v == 1) gguf_writer_kv_arr(w, "tokenizer.ggml.token_type", GGUF_F32, sc3, 3);
        else gguf_writer_kv_arr(w, "tokenizer.ggml.token_type", GGUF_I32, ty3, 3);
        if (v == 2) gguf_writer_kv_u32(w, "tokenizer.ggml.bos_token_id", 7);
        e0_err e = {{0}};
        CHECKF(gguf_writer_close(w, &e) == 0, "%s", e.msg);
        gguf_file *f = gguf_open(path, &e);
        CHECKF(f != NULL, "%s", e.msg);
        if (!f) continue;
        e0_tokenizer *t = e0_tokenizer_from_gguf(f, &e);
        if (v == 5) CHECKF(t != NULL, "%s", e.msg);
        else CHECKF(!t && e.msg[0], "variant %s should fail", cases[i].what);
        e0_tokenizer_free(t);
        gguf_close(f);
        unlink(path);
    }
}

/* The long-lived tables are in the memory ledger and all returned on free. */
static void test_memory_ledger(void) {
    size_t before = e0_mem_current(E0_MEM_OTHER);
    e0_tokenizer *t = open_vocab("gpt-2");
    CHECK(t != NULL);
    size_t during = e0_mem_current(E0_MEM_OTHER);
    CHECKF(during > before + 1000000, "%zu -> %zu bytes", before, during);
    e0_tokenizer_free(t);
    CHECK(e0_mem_current(E0_MEM_OTHER) == before);
}

/* ---- invalid UTF-8 and long inputs ---- */

/* Tokenize then detokenize s: -1 when either fails, 1 when the text comes back unchanged, else 0. */
static int round_trip(e0_tokenizer *t, const char *s, size_t n, double *secs) {
    e0_tokens v = {0};
    e0_err e;
    char *back = NULL;
    size_t bn = 0;
    double t0 = e0_now();
    int rc = e0_tokenize(t, s, n, false, false, &v, &e) == 0 ? 0 : -1;
    if (rc < 0) printf("  tokenize: %s\n", e.msg);
    else if (e0_detokenize(t, v.ids, v.n, false, &back, &bn, &e) != 0) rc = -1, printf("  detokenize: %s\n", e.msg);
    else rc = bn == n && !memcmp(back, s, n);
    if (secs) *secs = e0_now() - t0;
    free(back);
    e0_tokens_free(&v);
    return rc;
}
static bool round_trips(e0_tokenizer *t, const char *s, size_t n, double *secs) { return round_trip(t, s, n, secs) == 1; }

/* Bytes whose GPT-2 character is a user-defined token render as that token's text (deepseek-coder
 * defines the characters of the never-valid bytes C0 C1 F5-FF that way); they cannot round-trip,
 * in llama.cpp either. */
static bool byte_is_text_token(e0_tokenizer *t, unsigned b) {
    if (e0_tok_model(t) != E0_TOK_BPE) return false;
    char u[4];
    size_t n = e0_utf8_encode(e0_byte_to_cp((unsigned char)b), u);
    return e0_tok_type_of(t, e0_tok_find(t, u, n)) == E0_TT_USER_DEFINED;
}

static void test_invalid_utf8(void) {
    static const char *nasty[] = {"\xFF\xFE", "\xC3", "abc\xE2\x82", "\xED\xA0\x80x", "\xF4\x90\x80\x80", "\x80\x80 a",
                                  "\xC0\x80", "\xF8\x88\x80\x80\x80", "a\xE2\x82 b", " \xC3 \xA9", "\xE2\x96 x"};
    size_t rn = 1 << 15;
    char *rnd = malloc(rn), *ok_rnd = malloc(rn);
    uint64_t x = 88172645463325252ULL;
    for (size_t i = 0; i < rn; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        rnd[i] = (char)(x >> 24);
    }
    for (int v = 0; v < N_VOCABS; v++) {
        e0_tokenizer *t = toks[v];
        if (!t) continue;
        bool excluded[256];
        int n_excluded = 0;
        for (unsigned b = 0; b < 256; b++) {
            excluded[b] = byte_is_text_token(t, b);
            if (excluded[b]) {
                n_excluded++;
                CHECKF(b == 0xC0 || b == 0xC1 || b >= 0xF5, "%s: byte %02X", vocabs[v], b);
            }
        }
        CHECK(n_excluded == 0 || v == 4);
        for (size_t i = 0; i < sizeof nasty / sizeof *nasty; i++) {
            bool skip = false;
            for (const char *p = nasty[i]; *p; p++) skip |= excluded[(unsigned char)*p];
            /* a byte rendered as a user-defined token's text comes back as that text: both calls
             * succeed, and the text differs */
            if (skip) CHECKF(round_trip(t, nasty[i], strlen(nasty[i]), NULL) == 0, "%s case %zu", vocabs[v], i);
            else CHECKF(round_trips(t, nasty[i], strlen(nasty[i]), NULL), "%s case %zu", vocabs[v], i);
        }
        CHECKF(round_trips(t, "a\0b", 3, NULL), "%s NUL", vocabs[v]);
        size_t k = 0;
        for (size_t i = 0; i < rn; i++)
            if (!excluded[(unsigned char)rnd[i]]) ok_rnd[k++] = rnd[i];
        CHECKF(round_trips(t, ok_rnd, k, NULL), "%s random bytes", vocabs[v]);
        round_trips(t, rnd, rn, NULL); /* all bytes: must not crash */
    }
    free(rnd);
    free(ok_rnd);
}

static void test_long_inputs(void) {
    const size_t n = 100000;
    char *buf = malloc(4 * n + 1);
    const char *units[] = {"a", " ", "1", "\n", "\xC3\xA9", "!", " a", "\xE4\xB8\xAD"};
    /* ~1 MB of real text: the extended cases of one vocabulary, repeated */
    char path[700];
    size_t tn;
    snprintf(path, sizeof path, "%s/tokenizer/ggml-vocab-qwen2.extended.inp", t_shared());
    char *text = slurp(path, &tn);
    size_t big_n = 1 << 20;
    char *big = malloc(big_n);
    for (size_t i = 0; text && i < big_n; i++) big[i] = text[i % tn];
    for (int v = 0; v < N_VOCABS; v++) {
        if (!toks[v]) continue;
        for (size_t u = 0; u < sizeof units / sizeof *units; u++) {
            size_t ul = strlen(units[u]), len = 0;
            while (len + ul <= n) memcpy(buf + len, units[u], ul), len += ul;
            double secs;
            CHECKF(round_trips(toks[v], buf, len, &secs), "%s: %zu x \"%s\"", vocabs[v], len / ul, units[u]);
            if (secs > 2) printf("  %s: %zu x unit %zu took %.2f s\n", vocabs[v], len / ul, u, secs);
        }
        double secs = 0;
        CHECKF(text && round_trips(toks[v], big, big_n, &secs), "%s: 1 MiB of text", vocabs[v]);
        printf("# %s: 1 MiB of text in %.2f s\n", vocabs[v], secs);
    }
    free(text);
    free(big);
    free(buf);
}

/* ---- the CLI ---- */

static char *run_capture(const char *cmd, int *status) {
    FILE *p = popen(cmd, "r");
    if (!p) return NULL;
    size_t cap = 4096, n = 0;
    char *out = malloc(cap);
    size_t k;
    while ((k = fread(out + n, 1, cap - n - 1, p)) > 0) {
        n += k;
        if (n + 1 == cap) out = realloc(out, cap *= 2);
    }
    out[n] = 0;
    int st = pclose(p);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return out;
}

static void test_cli(void) {
    char bin[600], model[700], base[700], tmp[700], cmd[3000];
    snprintf(bin, sizeof bin, "%s/bin/edge0-infer", t_build());
    snprintf(model, sizeof model, "%s/tokenizer/ggml-vocab-llama-spm.gguf", t_shared());
    snprintf(base, sizeof base, "%s/tokenizer/ggml-vocab-llama-spm.gguf", t_shared());
    snprintf(tmp, sizeof tmp, "%s/test-tok-input.txt", t_build());
    cases c;
    char *inp = NULL, *out = NULL;
    size_t pass = 0;
    bool ok = load_cases(base, &c, &inp, &out);
    CHECK(ok);
    for (size_t i = 0; ok && i < c.n; i++) {
        FILE *f = fopen(tmp, "wb");
        CHECK(f && fwrite(c.text[i], 1, c.len[i], f) == c.len[i]);
        if (f) fclose(f);
        snprintf(cmd, sizeof cmd, "'%s' tokenize --model '%s' --no-bos < '%s'", bin, model, tmp);
        int st;
        char *got = run_capture(cmd, &st);
        /* the CLI prints the ids without the leading space, then a newline */
        const char *want = c.ids[i][0] == ' ' ? c.ids[i] + 1 : c.ids[i];
        if (got && st == 0 && strlen(got) == strlen(want) + 1 && !strncmp(got, want, strlen(want))) pass++;
        else CHECKF(0, "case %zu: status %d, got \"%s\" want \"%s\"", i, st, got ? got : "", want);
        free(got);
    }
    CHECKF(ok && pass == c.n, "%zu of %zu cases", pass, c.n);
    cases_free(&c);
    free(inp);
    free(out);
    int st;
    char *got;
    snprintf(cmd, sizeof cmd, "printf 'Hello world' | '%s' tokenize --model '%s'", bin, model);
    got = run_capture(cmd, &st);
    CHECK(got && st == 0 && !strcmp(got, "1 15043 3186\n"));
    free(got);
    snprintf(cmd, sizeof cmd, "printf '<s>x' | '%s' tokenize --model '%s' --no-bos --parse-special --pieces", bin, model);
    got = run_capture(cmd, &st);
    CHECKF(got && st == 0 && !strncmp(got, "1\t\"<s>\"\n", 8), "got %s", got ? got : "");
    free(got);
    snprintf(cmd, sizeof cmd, "'%s' detokenize --model '%s' --ids 1,15043,3186", bin, model);
    got = run_capture(cmd, &st);
    CHECK(got && st == 0 && !strcmp(got, "Hello world"));
    free(got);
    snprintf(cmd, sizeof cmd, "'%s' detokenize --model '%s' --ids 1,99999 2>&1", bin, model);
    got = run_capture(cmd, &st);
    CHECK(got && st == 1 && strstr(got, "edge0-infer: ") && strstr(got, "99999"));
    free(got);
    snprintf(cmd, sizeof cmd, "'%s' tokenize --model /nonexistent/x.gguf < /dev/null 2>&1", bin);
    got = run_capture(cmd, &st);
    CHECK(got && st == 1 && strstr(got, "edge0-infer: "));
    free(got);
    snprintf(cmd, sizeof cmd, "'%s' tokenize --help && '%s' detokenize --help", bin, bin);
    got = run_capture(cmd, &st);
    CHECK(got && st == 0 && strstr(got, "--parse-special") && strstr(got, "--ids"));
    free(got);
    snprintf(cmd, sizeof cmd, "'%s' tokenize --bogus 2>&1", bin);
    got = run_capture(cmd, &st);
    CHECK(got && st == 1);
    free(got);
    unlink(tmp);
}

int main(void) {
    RUN(test_unicode_categories);
    RUN(test_utf8);
    RUN(test_byte_map);
    RUN(test_regex);
    RUN(test_pretokenizers);
    RUN(test_pretokenizer_long_runs);
    RUN(test_bad_metadata);
    RUN(test_bad_gguf);
    /* the rest needs the vocabularies and their cases */
    char need[N_VOCABS * 5][128];
    const char *needp[N_VOCABS * 5];
    static const char *const suffix[] = {"gguf", "gguf.inp", "gguf.out", "extended.inp", "extended.out"};
    for (int v = 0; v < N_VOCABS; v++)
        for (int k = 0; k < 5; k++) {
            snprintf(need[v * 5 + k], sizeof need[0], "tokenizer/ggml-vocab-%s.%s", vocabs[v], suffix[k]);
            needp[v * 5 + k] = need[v * 5 + k];
        }
    if (!t_need_shared_list(needp, N_VOCABS * 5)) return T_DONE();
    for (int v = 0; v < N_VOCABS; v++) {
        double t0 = e0_now();
        toks[v] = open_vocab(vocabs[v]);
        printf("# %s loaded in %.3f s\n", vocabs[v], e0_now() - t0);
    }
    for (int v = 0; v < N_VOCABS; v++) {
        double t0 = e0_now();
        check_vocab(v);
        printf("# %s cases in %.3f s\n", vocabs[v], e0_now() - t0);
    }
    RUN(test_special_tokens);
    RUN(test_bos_eos_eog);
    RUN(test_pieces);
    RUN(test_stream);
    RUN(test_memory_ledger);
    RUN(test_invalid_utf8);
    RUN(test_long_inputs);
    RUN(test_cli);
    for (int v = 0; v < N_VOCABS; v++) e0_tokenizer_free(toks[v]);
    return T_DONE();
}
