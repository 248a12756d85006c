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

#include "gguf.h"
#include "regex_split.h"
#include "t.h"
#include "tokenizer.h"
#include "unicode.h"

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
    snprintf(path, sizeof path, "%s.inp", base);
    *inp = slurp(path, &ni);
    snprintf(path, sizeof path, "%s.out", base);
    *out = slurp(path, &no);
    if (!*inp || !*out) return false;
    static const char sep[] = "\n__ggml_vocab_test__\n";
    size_t cap = 16;
    memset(c, 0, sizeof *c);
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
            cases c;
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

int main(void) {
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
    for (int v = 0; v < N_VOCABS; v++) e0_tokenizer_free(toks[v]);
    return T_DONE();
}
