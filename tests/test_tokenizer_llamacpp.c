/* test_tokenizer_llamacpp.c — our tokenizers against the pinned llama.cpp.
 *
 *   vocab/NAME   every tokenizer test vocabulary shipped in llama.cpp's source
 *                (LB/llamacpp/src/models/ggml-vocab-NAME.gguf with .inp/.out, the cases of its
 *                test-tokenizer-0: no BOS/EOS, no special parsing): our ids must equal .out.
 *                Embedding-only tokenizers (BERT's WPM, T5's UGM) are out of scope: reported
 *                skipped with the reason. Vocabularies without cases are listed.
 *   diff/PRE/MODE  for every pre-tokenizer of our table, a vocabulary of our making with that
 *                tokenizer.ggml.pre and merges trained here (byte-pair counts over the corpus),
 *                tokenized by llama.cpp's llama_tokenize (llamacpp-ref tokenize) and by us on
 *                tests/fixtures/tokenizer-corpus: identical ids, MODE add-special (BOS/EOS as the
 *                vocabulary's defaults say) and parse-special.
 *
 * LB, the build dir with the llama.cpp install, is found as in test_llamacpp.c ($E0_LLAMACPP,
 * else $E0_BUILD when it has one, else build/); tools/llamacpp.sh installs it. When the npm
 * registry cannot be reached every case is reported skipped, never passed. References are cached
 * in LB/llamacpp-ref/<sha256 of the vocabulary>/ keyed by the corpus hash; the vocabularies are
 * written to $E0_BUILD/tok-synth/. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "t.h"
#include "t_llamacpp.h"
#include "base/util.h"
#include "gguf/gguf.h"
#include "measure/sysinfo.h"
#include "text/tokenizer.h"
#include "text/unicode.h"

static int begin(const char *name) {
    t_begin(name);
    if (!unavailable[0]) return 1;
    t_skip("%s", unavailable);
    t_end();
    return 0;
}

static e0_tokenizer *open_tok(const char *path, char *model, size_t model_cap) {
    e0_err e;
    gguf_file *f = gguf_open(path, &e);
    if (!f) {
        printf("  %s: %s\n", path, e.msg);
        return NULL;
    }
    const gguf_string *m = NULL;
    if (model) sfmt(model, model_cap, "%s", gguf_get_str(f, "tokenizer.ggml.model", &m, &e) == 1 ? m->s : "");
    if (model && (!strcmp(model, "bert") || !strcmp(model, "t5"))) {
        gguf_close(f);
        return NULL;
    }
    e0_tokenizer *t = e0_tokenizer_from_gguf(f, &e);
    if (!t) printf("  %s: %s\n", path, e.msg);
    gguf_close(f);
    return t;
}

/* ---- llama.cpp's own test vocabularies ---- */

static void test_source_vocabs(void) {
    char dir[PATH + 32], *names[64];
    sfmt(dir, sizeof dir, "%s/llamacpp/src/models", lb);
    int n = list_dir(dir, ".gguf", names, 64);
    if (!unavailable[0]) {
        t_begin("vocab/found");
        CHECKF(n >= 15, "%s: %d vocabularies", dir, n);
        t_end();
    }
    for (int v = 0; v < n; v++) {
        char label[300], path[PATH * 2], inp[PATH * 2 + 8], outp[PATH * 2 + 8], model[32] = "";
        sfmt(label, sizeof label, "vocab/%s", names[v]);
        sfmt(path, sizeof path, "%s/%s", dir, names[v]);
        sfmt(inp, sizeof inp, "%s.inp", path);
        sfmt(outp, sizeof outp, "%s.out", path);
        if (!is_file(inp) || !is_file(outp)) {
            printf("# %s: no test cases in llama.cpp's source (.inp/.out)\n", names[v]);
            free(names[v]);
            continue;
        }
        if (!begin(label)) {
            free(names[v]);
            continue;
        }
        e0_tokenizer *t = open_tok(path, model, sizeof model);
        if (!t && (!strcmp(model, "bert") || !strcmp(model, "t5"))) {
            t_skip("out of scope: tokenizer model '%s' (%s) is used only by embedding models", model,
                   !strcmp(model, "bert") ? "BERT's WordPiece" : "T5's Unigram");
            t_end();
            free(names[v]);
            continue;
        }
        CHECKF(t, "cannot load %s", path);
        size_t ni = 0, no = 0;
        e0_err e;
        char *in = t ? e0_read_file(inp, 1 << 24, &ni, &e) : NULL, *out = t ? e0_read_file(outp, 1 << 24, &no, &e) : NULL;
        static const char sep[] = "\n__ggml_vocab_test__\n";
        static int32_t want[1 << 16];
        int cases = 0, pass = 0, shown = 0;
        char *p = in, *o = out;
        while (in && out && p < in + ni) {
            char *m = memmem(p, (size_t)(in + ni - p), sep, sizeof sep - 1);
            if (!m) break;
            char *nl = memchr(o, '\n', (size_t)(out + no - o));
            if (nl) *nl = 0;
            int nw = o < out + no ? parse_line_ids(o, want, 1 << 16) : -1;
            e0_tokens ids = {0};
            int rc = e0_tokenize(t, p, (size_t)(m - p), false, false, &ids, &e);
            bool same = rc == 0 && nw == (int)ids.n && (ids.n == 0 || !memcmp(ids.ids, want, ids.n * sizeof *want));
            cases++;
            pass += same;
            if (!same && shown++ < 3) printf("  case %d (%.40s...) differs: %zu ids, want %d\n", cases - 1, p, ids.n, nw);
            e0_tokens_free(&ids);
            p = m + sizeof sep - 1;
            o = nl ? nl + 1 : out + no;
        }
        CHECKF(cases > 0 && pass == cases, "%s: %d of %d cases match", names[v], pass, cases);
        printf("  %s (%s, pre %s): %d of %d cases\n", names[v], model, t ? e0_tok_pre(t) : "?", pass, cases);
        free(in);
        free(out);
        e0_tokenizer_free(t);
        t_end();
        free(names[v]);
    }
}

/* ---- vocabularies of our making ---- */

/* A token list under construction (texts are malloc'd; a hash set keeps them unique). */
typedef struct vocab {
    char **tok;
    int32_t *type;
    int n, cap;
    char **merges;
    int n_merges, merges_cap;
    uint32_t *set; /* index + 1, 0 = empty */
    size_t set_cap;
} vocab;

static uint32_t *slot(vocab *v, const char *s) {
    size_t i = e0_fnv1a(s, strlen(s)) & (v->set_cap - 1);
    while (v->set[i] && strcmp(v->tok[v->set[i] - 1], s)) i = (i + 1) & (v->set_cap - 1);
    return &v->set[i];
}
static int find(vocab *v, const char *s) { return (int)*slot(v, s) - 1; }

/* Id of s, added with type if new. */
static int add(vocab *v, const char *s, int32_t type) {
    uint32_t *sl = slot(v, s);
    if (*sl) return (int)*sl - 1;
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 1024;
        v->tok = realloc(v->tok, (size_t)v->cap * sizeof *v->tok);
        v->type = realloc(v->type, (size_t)v->cap * sizeof *v->type);
    }
    v->tok[v->n] = strdup(s);
    v->type[v->n] = type;
    *sl = (uint32_t)++v->n;
    return v->n - 1;
}

static void add_merge(vocab *v, const char *l, const char *r) {
    if (v->n_merges == v->merges_cap) {
        v->merges_cap = v->merges_cap ? v->merges_cap * 2 : 1024;
        v->merges = realloc(v->merges, (size_t)v->merges_cap * sizeof *v->merges);
    }
    size_t n = strlen(l) + strlen(r) + 2;
    v->merges[v->n_merges] = malloc(n);
    sfmt(v->merges[v->n_merges++], n, "%s %s", l, r);
}

static void vocab_free(vocab *v) {
    for (int i = 0; i < v->n; i++) free(v->tok[i]);
    for (int i = 0; i < v->n_merges; i++) free(v->merges[i]);
    free(v->tok);
    free(v->type);
    free(v->merges);
    free(v->set);
}

/* Training sequences: token ids, -1 separating independent pieces. */
typedef struct seqs {
    int *v;
    size_t n, cap;
} seqs;
static void seq_push(seqs *s, int x) {
    if (s->n == s->cap) s->v = realloc(s->v, (s->cap = s->cap ? s->cap * 2 : 4096) * sizeof *s->v);
    s->v[s->n++] = x;
}

/* Byte-pair training: repeatedly merge the most frequent adjacent pair (ties: smallest ids), up
 * to max_merges merges. Pairs seen once count too, so the corpus is mostly memorized: tokens then
 * cross every boundary some pre-tokenizer draws, and a wrong split shows up as different ids.
 * Each merge adds its token (if new). */
static void train(vocab *v, seqs *s, int max_merges) {
    size_t cap = 1 << 16;
    uint64_t *keys = malloc(cap * sizeof *keys);
    int *cnt = malloc(cap * sizeof *cnt);
    for (int m = 0; m < max_merges; m++) {
        memset(keys, 0xFF, cap * sizeof *keys);
        uint64_t best = UINT64_MAX;
        int best_n = 0;
        for (size_t i = 0; i + 1 < s->n; i++) {
            if (s->v[i] < 0 || s->v[i + 1] < 0 || strlen(v->tok[s->v[i]]) + strlen(v->tok[s->v[i + 1]]) > 48) continue;
            uint64_t k = (uint64_t)s->v[i] << 32 | (uint32_t)s->v[i + 1];
            size_t h = (size_t)((k * 0x9E3779B97F4A7C15ull) >> 48) & (cap - 1);
            while (keys[h] != UINT64_MAX && keys[h] != k) h = (h + 1) & (cap - 1);
            if (keys[h] == UINT64_MAX) keys[h] = k, cnt[h] = 0;
            int c = ++cnt[h];
            if (c > best_n || (c == best_n && k < best)) best = k, best_n = c;
        }
        if (best == UINT64_MAX) break;
        int l = (int)(best >> 32), r = (int)(uint32_t)best;
        char buf[512];
        sfmt(buf, sizeof buf, "%s%s", v->tok[l], v->tok[r]);
        add_merge(v, v->tok[l], v->tok[r]);
        int id = add(v, buf, 1);
        size_t o = 0;
        for (size_t i = 0; i < s->n; i++) {
            if (i + 1 < s->n && s->v[i] == l && s->v[i + 1] == r) s->v[o++] = id, i++;
            else s->v[o++] = s->v[i];
        }
        s->n = o;
    }
    free(keys);
    free(cnt);
}

typedef struct corpus {
    int n;
    char *name[64], *text[64];
    size_t len[64];
    uint64_t hash;
} corpus;

/* The GPT-2 code point of byte b, as UTF-8. */
static void byte_char(unsigned b, char out[4]) { out[e0_utf8_encode(e0_byte_to_cp((unsigned char)b), out)] = 0; }

/* Byte-level vocabulary (model gpt2): the 256 byte characters, trained merges over every corpus
 * file (no pre-splitting, so merges cross the boundaries each pre-tokenizer draws), whole ASCII
 * words as tokens without merges (reachable only where the pre-tokenizer ignores merges), and
 * special tokens. */
static void build_byte_level(vocab *v, const corpus *c) {
    char ch[4];
    for (unsigned b = 0; b < 256; b++) byte_char(b, ch), add(v, ch, 1);
    seqs s = {0};
    for (int f = 0; f < c->n; f++) {
        for (size_t i = 0; i < c->len[f]; i++) seq_push(&s, (unsigned char)c->text[f][i]); /* id of byte b is b */
        seq_push(&s, -1);
    }
    train(v, &s, 4000);
    free(s.v);
    for (int f = 0; f < c->n; f++) {
        const char *t = c->text[f];
        for (size_t i = 0; i < c->len[f];) {
            size_t j = i;
            while (j < c->len[f] && ((t[j] | 0x20) >= 'a' && (t[j] | 0x20) <= 'z')) j++;
            if (j - i >= 4 && j - i < 60) {
                char w[128];
                sfmt(w, sizeof w, "%.*s", (int)(j - i), t + i);
                add(v, w, 1);
                char sp[130];
                sfmt(sp, sizeof sp, "\xC4\xA0%s", w); /* "Ġ" + word */
                add(v, sp, 1);
            }
            i = j > i ? j : i + 1;
        }
    }
    static const char *const ctl[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<s>", "</s>"};
    for (size_t i = 0; i < sizeof ctl / sizeof *ctl; i++) add(v, ctl[i], 3);
    add(v, "flags", 4); /* user-defined: matched even without special parsing */
}

/* SPM-style BPE vocabulary (gemma4, sarvam-moe): raw UTF-8 with ' ' as U+2581, <0xNN> byte
 * tokens, the corpus characters (except those from U+1F000 up, left to byte fallback), merges
 * trained within newline-free pieces, "\n" and "\n\n" as tokens without merges. */
static void build_raw(vocab *v, const corpus *c) {
    static const char *const ctl[] = {"<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"};
    for (int i = 0; i < 6; i++) add(v, ctl[i], i == 3 ? 2 : 3);
    char buf[16];
    for (int b = 0; b < 256; b++) sfmt(buf, sizeof buf, "<0x%02X>", b), add(v, buf, 6);
    add(v, "\n", 1);
    add(v, "\n\n", 1);
    seqs s = {0};
    for (int f = 0; f < c->n; f++) {
        const unsigned char *t = (const unsigned char *)c->text[f];
        for (size_t i = 0; i < c->len[f];) {
            uint32_t cp;
            size_t k = e0_utf8_decode(t + i, c->len[f] - i, &cp);
            if (!k) k = 1, cp = 0xFFFD;
            if (cp == '\n' || cp >= 0x1F000) seq_push(&s, -1);
            else if (cp == ' ') seq_push(&s, add(v, "\xE2\x96\x81", 1));
            else {
                sfmt(buf, sizeof buf, "%.*s", (int)k, (const char *)t + i);
                seq_push(&s, add(v, buf, 1));
            }
            i += k;
        }
        seq_push(&s, -1);
    }
    train(v, &s, 4000);
    free(s.v);
}

/* Write the vocabulary as a vocab-only GGUF llama.cpp loads (a qwen2 header without tensors). */
static int write_vocab(const char *path, const vocab *v, const char *model, const char *pre, int raw) {
    e0_err e;
    gguf_writer *w = gguf_writer_open(path, &e);
    if (!w) return -1;
    float *scores = calloc((size_t)v->n, sizeof *scores);
    int32_t bos = find((vocab *)v, raw ? "<bos>" : "<s>"), eos = find((vocab *)v, raw ? "<eos>" : "</s>");
    gguf_writer_kv_str(w, "general.architecture", "qwen2");
    gguf_writer_kv_u32(w, "qwen2.block_count", 1);
    gguf_writer_kv_u32(w, "qwen2.context_length", 4096);
    gguf_writer_kv_u32(w, "qwen2.embedding_length", 64);
    gguf_writer_kv_u32(w, "qwen2.feed_forward_length", 128);
    gguf_writer_kv_u32(w, "qwen2.attention.head_count", 4);
    gguf_writer_kv_u32(w, "qwen2.attention.head_count_kv", 4);
    gguf_writer_kv_f32(w, "qwen2.rope.freq_base", 10000.0f);
    gguf_writer_kv_f32(w, "qwen2.attention.layer_norm_rms_epsilon", 1e-6f);
    gguf_writer_kv_str(w, "tokenizer.ggml.model", model);
    if (pre) gguf_writer_kv_str(w, "tokenizer.ggml.pre", pre);
    gguf_writer_kv_str_arr(w, "tokenizer.ggml.tokens", (const char *const *)v->tok, (uint64_t)v->n);
    if (raw) gguf_writer_kv_arr(w, "tokenizer.ggml.scores", GGUF_F32, scores, (uint64_t)v->n);
    gguf_writer_kv_arr(w, "tokenizer.ggml.token_type", GGUF_I32, v->type, (uint64_t)v->n);
    gguf_writer_kv_str_arr(w, "tokenizer.ggml.merges", (const char *const *)v->merges, (uint64_t)v->n_merges);
    gguf_writer_kv_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)bos);
    gguf_writer_kv_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)eos);
    if (raw) gguf_writer_kv_u32(w, "tokenizer.ggml.unknown_token_id", (uint32_t)find((vocab *)v, "<unk>"));
    free(scores);
    if (gguf_writer_close(w, &e) != 0) {
        printf("  %s: %s\n", path, e.msg);
        return -1;
    }
    return 0;
}

/* Every entry of the pre-tokenizer table (tokenizer_bpe.c) and every name the issues ask for.
 * "gemma4" is the tokenizer model of that name (its pre is implied). */
static const struct {
    const char *pre, *model;
    int raw;
} pres[] = {
    {"default", "gpt2", 0},      {"llama-bpe", "gpt2", 0},        {"dbrx", "gpt2", 0},
    {"glm4", "gpt2", 0},         {"jais-2", "gpt2", 0},           {"deepseek-llm", "gpt2", 0},
    {"deepseek-v3", "gpt2", 0},  {"deepseek-coder", "gpt2", 0},   {"falcon", "gpt2", 0},
    {"starcoder", "gpt2", 0},    {"smollm", "gpt2", 0},           {"gpt-2", "gpt2", 0},
    {"olmo", "gpt2", 0},         {"qwen2", "gpt2", 0},            {"deepseek-r1-qwen", "gpt2", 0},
    {"qwen35", "gpt2", 0},       {"laguna", "gpt2", 0},           {"bloom", "gpt2", 0},
    {"viking", "gpt2", 0},       {"tekken", "gpt2", 0},           {"gpt-4o", "gpt2", 0},
    {"llama4", "gpt2", 0},       {"minimax-m2", "gpt2", 0},       {"kimi-k2", "gpt2", 0},
    {"bailingmoe", "gpt2", 0},   {"seed-coder", "gpt2", 0},       {"minicpm5", "gpt2", 0},
    {NULL, "gemma4", 1},         {"sarvam-moe", "gpt2", 1},
};

static void load_corpus(corpus *c) {
    const char *dir = "tests/fixtures/tokenizer-corpus";
    memset(c, 0, sizeof *c);
    c->n = list_dir(dir, ".txt", c->name, 64);
    c->hash = 0xcbf29ce484222325ull;
    for (int i = 0; i < c->n; i++) {
        char p[PATH];
        e0_err e;
        sfmt(p, sizeof p, "%s/%s", dir, c->name[i]);
        c->text[i] = e0_read_file(p, 1 << 20, &c->len[i], &e);
        if (!c->text[i]) c->len[i] = 0, c->text[i] = strdup("");
        c->hash = e0_fnv1a(c->name[i], strlen(c->name[i]) + 1) ^ (c->hash * 0x100000001b3ull);
        c->hash = e0_fnv1a(c->text[i], c->len[i]) ^ (c->hash * 0x100000001b3ull);
    }
}

/* llama.cpp's ids for every corpus file (one line each) in *ref_path, cached. 0 on success. */
static int reference(const char *vpath, const corpus *c, int mode, char *ref_path, size_t cap) {
    char sha[65], dir[PATH + 80], cmd[CMD], done[PATH + 160];
    e0_err e;
    if (e0_sha256_file(vpath, sha, &e) != 0) return -1;
    mkdir(cache, 0755);
    sfmt(dir, sizeof dir, "%s/%s", cache, sha);
    mkdir(dir, 0755);
    sfmt(ref_path, cap, "%s/tokenize%d-%016llx.ids", dir, mode, (unsigned long long)c->hash);
    sfmt(done, sizeof done, "%s.done", ref_path);
    if (is_file(done)) {
        n_cached++;
        return 0;
    }
    size_t o = (size_t)sfmt(cmd, sizeof cmd, "'%s' tokenize '%s' %s", ref_tool, vpath, mode ? "--no-special --parse-special" : "");
    for (int i = 0; i < c->n && o < sizeof cmd; i++)
        o += (size_t)sfmt(cmd + o, sizeof cmd - o, " 'tests/fixtures/tokenizer-corpus/%s'", c->name[i]);
    if (o < sizeof cmd) sfmt(cmd + o, sizeof cmd - o, " >'%s' 2>'%s.err'", ref_path, ref_path);
    if (t_sh(cmd, NULL, 0) != 0) {
        printf("  reference command failed: %s\n", cmd);
        return -1;
    }
    FILE *f = fopen(done, "w");
    if (f) fclose(f);
    n_computed++;
    return 0;
}

static void test_differential(void) {
    corpus c;
    load_corpus(&c);
    char dir[PATH];
    sfmt(dir, sizeof dir, "%s/tok-synth", t_build());
    mkdir(dir, 0755);
    vocab bl = {0}, raw = {0};
    bl.set_cap = raw.set_cap = 1 << 16;
    bl.set = calloc(bl.set_cap, sizeof *bl.set);
    raw.set = calloc(raw.set_cap, sizeof *raw.set);
    build_byte_level(&bl, &c);
    build_raw(&raw, &c);
    printf("# corpus: %d files; byte-level vocabulary %d tokens, %d merges; SPM-style %d tokens, %d merges\n", c.n,
           bl.n, bl.n_merges, raw.n, raw.n_merges);
    for (size_t p = 0; p < sizeof pres / sizeof *pres; p++) {
        const char *pname = pres[p].pre ? pres[p].pre : pres[p].model;
        char vpath[PATH * 2];
        sfmt(vpath, sizeof vpath, "%s/vocab-%s.gguf", dir, pname);
        int wrote = write_vocab(vpath, pres[p].raw ? &raw : &bl, pres[p].model, pres[p].pre, pres[p].raw);
        for (int mode = 0; mode < 2; mode++) {
            char label[256], ref_path[PATH * 2];
            sfmt(label, sizeof label, "diff/%s/%s", pname, mode ? "parse-special" : "add-special");
            if (!begin(label)) continue;
            CHECKF(wrote == 0, "cannot write %s", vpath);
            e0_tokenizer *t = wrote == 0 ? open_tok(vpath, NULL, 0) : NULL;
            CHECKF(t, "cannot load %s", vpath);
            FILE *rf = NULL;
            if (t && reference(vpath, &c, mode, ref_path, sizeof ref_path) == 0) rf = fopen(ref_path, "r");
            CHECKF(!t || rf, "%s: no llama.cpp reference", pname);
            static char line[1 << 20];
            static int32_t ref[1 << 16];
            int bad = 0, total = 0;
            for (int i = 0; i < c.n && rf; i++) {
                int nref = fgets(line, sizeof line, rf) ? parse_line_ids(line, ref, 1 << 16) : -1;
                e0_tokens out = {0};
                e0_err e;
                int rc = e0_tokenize(t, c.text[i], c.len[i], mode == 0, mode == 1, &out, &e);
                CHECKF(rc == 0, "%s: %s", c.name[i], e.msg);
                size_t same = 0;
                while (same < out.n && (int)same < nref && out.ids[same] == ref[same]) same++;
                total += (int)out.n;
                if (rc == 0 && (nref < 0 || (int)out.n != nref || (int)same != nref)) {
                    bad++;
                    CHECKF(0, "%s: %zu ids, llama.cpp %d; first difference at %zu (ours %d, llama.cpp %d)", c.name[i], out.n,
                           nref, same, same < out.n ? out.ids[same] : -1, (int)same < nref ? ref[same] : -1);
                }
                e0_tokens_free(&out);
            }
            printf("  %s: %d of %d corpus files differ (%d ids)\n", label, bad, c.n, total);
            if (rf) fclose(rf);
            e0_tokenizer_free(t);
            t_end();
        }
    }
    vocab_free(&bl);
    vocab_free(&raw);
    for (int i = 0; i < c.n; i++) free(c.name[i]), free(c.text[i]);
}

int main(void) {
    t_llamacpp_setup();
    test_source_vocabs();
    test_differential();
    printf("# llama.cpp references: %d computed, %d from the cache (%s)\n", n_computed, n_cached, cache);
    return T_DONE();
}
