/* tokenizer_bpe.c — byte-level BPE (llama.cpp's llm_tokenizer_bpe): the pre-tokenizer table
 * (tokenizer.ggml.pre -> split regexes, applied one after another), the merge-rank map, and the
 * per-word merge loop (lowest rank first, ties leftmost; a priority queue keeps it fast). */
#include <stdlib.h>
#include <string.h>

#include "text/tokenizer_impl.h"
#include "text/unicode.h"

/* ---- pre-tokenizer table (patterns from llama.cpp's llama-vocab.cpp) ----
 * Non-ASCII characters are written as \x{...}: several in the deepseek-llm class (U+1FD3,
 * U+1FDB, U+1F7D, U+1FBE, U+2126, U+212A) have canonical singleton decompositions, and an editor
 * or tool that normalizes text to NFC would silently turn them into other characters. */

#define RX_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
#define RX_LLAMA3                                                                                       \
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| " \
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_QWEN2                                                                                     \
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| " \
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_CJK "[\\x{4E00}-\\x{9FA5}\\x{0800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+"

typedef struct pre_entry {
    const char *names[10];
    const char *regex[7];
    bool ignore_merges, add_bos;
} pre_entry;

static const pre_entry pre_table[] = {
    {{"default"}, {"[\\p{P}\\$\\+<=>\\^~\\|]+", RX_GPT2, "\\p{N}+", "[0-9][0-9][0-9]"}, false, false},
    {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"}, {RX_LLAMA3}, true, true},
    {{"dbrx", "smaug-bpe", "glm4", "chatglm-bpe"}, {RX_LLAMA3}, false, false},
    {{"deepseek-llm"},
     {"[\r\n]",
      "\\s?[A-Za-z"
      "\\x{00B5}\\x{00C0}-\\x{00D6}\\x{00D8}-\\x{00F6}\\x{00F8}-\\x{01BA}"
      "\\x{01BC}-\\x{01BF}\\x{01C4}-\\x{0293}\\x{0295}-\\x{02AF}\\x{0370}-\\x{0373}"
      "\\x{0376}-\\x{0377}\\x{037B}-\\x{037D}\\x{037F}\\x{0386}\\x{0388}-\\x{038A}"
      "\\x{038C}\\x{038E}-\\x{03A1}\\x{03A3}-\\x{03F5}\\x{03F7}-\\x{0481}"
      "\\x{048A}-\\x{052F}\\x{0531}-\\x{0556}\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}"
      "\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}"
      "\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}"
      "\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}"
      "\\x{1F5D}\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}"
      "\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}"
      "\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}"
      "\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}"
      "\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}"
      "\\x{2145}-\\x{2149}\\x{214E}\\x{2183}-\\x{2184}\\x{2C00}-\\x{2C7B}"
      "\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}-\\x{2CF3}\\x{A640}-\\x{A66D}"
      "\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}"
      "\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}\\x{FF21}-\\x{FF3A}"
      "\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}\\x{104B0}-\\x{104D3}"
      "\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}"
      "\\x{118A0}-\\x{118DF}\\x{1E900}-\\x{1E943}"
      "]+",
      "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+", "\\s+$", RX_CJK, "\\p{N}+"},
     false, false},
    {{"deepseek-coder"}, {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", RX_CJK, "\\p{N}"}, false, false},
    {{"falcon"}, {"[\\p{P}\\$\\+<=>\\^~\\|`]+", RX_GPT2, "[0-9][0-9][0-9]"}, false, false},
    {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b", "mellum2"},
     {"\\p{N}", RX_GPT2},
     false, false},
    {{"gpt-2", "phi-2", "mpt", "olmo", "jais", "trillion", "granite-docling", "exaone4", "gigachat", "mellum"},
     {RX_GPT2},
     false, false},
    {{"qwen2", "deepseek-r1-qwen", "megrez", "stablelm2", "hunyuan", "solar-open", "kormo", "f2llmv2"},
     {RX_QWEN2},
     false, false},
};

static const pre_entry *find_pre(const char *name) {
    for (size_t i = 0; i < sizeof pre_table / sizeof *pre_table; i++)
        for (size_t j = 0; j < 10 && pre_table[i].names[j]; j++)
            if (!strcmp(pre_table[i].names[j], name)) return &pre_table[i];
    return NULL;
}

/* ---- merge map ---- */

static uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

bool tok_merge_find(const tok_mergemap *m, int32_t l, int32_t r, uint32_t *rank, int32_t *result) {
    if (!m->keys || l < 0 || r < 0) return false;
    uint64_t key = (uint64_t)(uint32_t)l << 32 | (uint32_t)r;
    for (size_t i = mix64(key) & m->mask;; i = (i + 1) & m->mask) {
        if (m->keys[i] == UINT64_MAX) return false;
        if (m->keys[i] == key) {
            *rank = m->rank[i];
            *result = m->result[i];
            return true;
        }
    }
}

static int build_merges(e0_tokenizer *t, const e0_tokenizer_desc *d, e0_err *e) {
    size_t cap = 16;
    while (cap < d->n_merges * 2) cap *= 2;
    tok_mergemap *m = &t->merges;
    m->keys = tok_alloc(t, cap * sizeof *m->keys);
    m->rank = tok_alloc(t, cap * sizeof *m->rank);
    m->result = tok_alloc(t, cap * sizeof *m->result);
    if (!m->keys || !m->rank || !m->result) return e0_fail(e, "out of memory");
    memset(m->keys, 0xFF, cap * sizeof *m->keys);
    m->mask = cap - 1;
    char *buf = NULL;
    size_t bufcap = 0;
    for (uint64_t i = 0; i < d->n_merges; i++) {
        const char *s = d->merges[i];
        size_t l = s ? (d->merge_lens ? d->merge_lens[i] : strlen(s)) : 0;
        /* "left right", split at the first space after the first byte (as llama.cpp) */
        const char *sp = l > 1 ? memchr(s + 1, ' ', l - 1) : NULL;
        if (!sp) {
            t->merges_skipped++;
            continue;
        }
        size_t ll = (size_t)(sp - s), rl = l - ll - 1;
        int32_t a = tok_strmap_find(t, s, ll), b = tok_strmap_find(t, sp + 1, rl);
        if (ll + rl > bufcap) {
            bufcap = (ll + rl) * 2;
            char *nb = realloc(buf, bufcap);
            if (!nb) {
                free(buf);
                return e0_fail(e, "out of memory");
            }
            buf = nb;
        }
        memcpy(buf, s, ll);
        memcpy(buf + ll, sp + 1, rl);
        int32_t ab = tok_strmap_find(t, buf, ll + rl);
        if (a < 0 || b < 0 || ab < 0) {
            t->merges_skipped++;
            continue;
        }
        uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
        size_t k = mix64(key) & m->mask;
        while (m->keys[k] != UINT64_MAX && m->keys[k] != key) k = (k + 1) & m->mask;
        if (m->keys[k] == key) continue; /* duplicate: the first (lowest) rank wins */
        m->keys[k] = key;
        m->rank[k] = (uint32_t)(i > UINT32_MAX ? UINT32_MAX : i);
        m->result[k] = ab;
    }
    free(buf);
    return 0;
}

int tok_bpe_init(e0_tokenizer *t, const e0_tokenizer_desc *d, e0_err *e) {
    const pre_entry *pe = find_pre(t->pre_name);
    if (!pe) return e0_fail(e, "tokenizer: unknown pre-tokenizer type '%s' (tokenizer.ggml.pre)", t->pre_name);
    t->ignore_merges = pe->ignore_merges;
    t->add_bos = pe->add_bos;
    t->add_space_prefix = false;
    while (t->n_regex < 7 && pe->regex[t->n_regex]) t->n_regex++;
    t->regex = calloc((size_t)t->n_regex, sizeof *t->regex);
    if (!t->regex) return e0_fail(e, "out of memory");
    for (int i = 0; i < t->n_regex; i++)
        if (!(t->regex[i] = e0_regex_compile(pe->regex[i], e))) return -1;
    for (int b = 0; b < 256; b++) {
        t->byte_utf8_len[b] = (uint8_t)e0_utf8_encode(e0_byte_to_cp((unsigned char)b), t->byte_utf8[b]);
        t->byte_tok[b] = tok_strmap_find(t, t->byte_utf8[b], t->byte_utf8_len[b]);
    }
    return build_merges(t, d, e);
}

/* ---- tokenizing one fragment ---- */

typedef struct bpe_sym {
    int prev, next;
    int32_t id; /* -1: a byte without a token */
    size_t n;   /* bytes covered; 0 once merged away */
} bpe_sym;

typedef struct bpe_work {
    bpe_sym *sym;
    size_t sym_cap;
    tok_heap heap;
    char *enc;
    size_t enc_cap;
} bpe_work;

static int add_bigram(const e0_tokenizer *t, bpe_work *w, int l, int r, e0_err *e) {
    if (l < 0 || r < 0) return 0;
    uint32_t rank;
    int32_t res;
    if (!tok_merge_find(&t->merges, w->sym[l].id, w->sym[r].id, &rank, &res)) return 0;
    return tok_heap_push(&w->heap, (tok_bigram){(double)rank, l, r, w->sym[l].id, w->sym[r].id}, e);
}

/* One pre-tokenized word: bytes w[0..n). */
static int bpe_word(const e0_tokenizer *t, bpe_work *w, const unsigned char *bytes, size_t n, e0_tokens *out,
                    e0_err *e) {
    if (t->ignore_merges) {
        /* Whole word already a token (llama3): take it as is. */
        if (n * 2 > w->enc_cap) {
            size_t nc = n * 2 + 64;
            char *p = realloc(w->enc, nc);
            if (!p) return e0_fail(e, "out of memory");
            w->enc = p;
            w->enc_cap = nc;
        }
        size_t el = 0;
        for (size_t i = 0; i < n; i++) {
            memcpy(w->enc + el, t->byte_utf8[bytes[i]], t->byte_utf8_len[bytes[i]]);
            el += t->byte_utf8_len[bytes[i]];
        }
        int32_t id = tok_strmap_find(t, w->enc, el);
        if (id >= 0) return tokens_push(out, id, e);
    }
    if (n > w->sym_cap) {
        size_t nc = n + 64;
        bpe_sym *p = realloc(w->sym, nc * sizeof *p);
        if (!p) return e0_fail(e, "out of memory");
        w->sym = p;
        w->sym_cap = nc;
    }
    int ns = (int)n;
    for (int i = 0; i < ns; i++) w->sym[i] = (bpe_sym){i - 1, i + 1 == ns ? -1 : i + 1, t->byte_tok[bytes[i]], 1};
    w->heap.n = 0;
    for (int i = 1; i < ns; i++)
        if (add_bigram(t, w, i - 1, i, e) < 0) return -1;
    while (w->heap.n) {
        tok_bigram b = tok_heap_pop(&w->heap);
        bpe_sym *l = &w->sym[b.left], *r = &w->sym[b.right];
        if (l->n == 0 || r->n == 0 || l->id != b.a || r->id != b.b) continue; /* outdated */
        uint32_t rank;
        int32_t res;
        tok_merge_find(&t->merges, l->id, r->id, &rank, &res);
        l->id = res;
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) w->sym[r->next].prev = b.left;
        if (add_bigram(t, w, l->prev, b.left, e) < 0 || add_bigram(t, w, b.left, l->next, e) < 0) return -1;
    }
    for (int i = ns ? 0 : -1; i != -1; i = w->sym[i].next) {
        int32_t id = w->sym[i].id;
        /* A byte whose code point is not in the vocabulary: llama.cpp drops it; use UNK if any. */
        if (id < 0) id = t->unk;
        if (id >= 0 && tokens_push(out, id, e) < 0) return -1;
    }
    return 0;
}

int tok_bpe_split(const e0_tokenizer *t, const char *text, size_t len, e0_lens *out, e0_err *e) {
    const unsigned char *s = (const unsigned char *)text;
    uint32_t *cps = malloc((len + 1) * sizeof *cps);
    size_t *uoff = malloc((len + 1) * sizeof *uoff);
    e0_lens a = {0}, b = {0};
    int rc = -1;
    out->n = 0;
    if (!cps || !uoff) {
        e0_fail(e, "out of memory");
        goto done;
    }
    /* Code points as llama.cpp's unicode_regex_split sees them: invalid bytes are U+FFFD, and
     * non-ASCII whitespace is U+000B (its std::regex fallback). Offsets keep the real bytes. */
    size_t nu = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t k = e0_utf8_decode(s + i, len - i, &cp);
        if (k == 0) cp = 0xFFFD, k = 1;
        if (cp > 0x7F && e0_uni_is_space(cp)) cp = 0x0B;
        cps[nu] = cp;
        uoff[nu++] = i;
        i += k;
    }
    uoff[nu] = len;
    if (nu && e0_lens_push(&a, nu, e) < 0) goto done;
    for (int r = 0; r < t->n_regex; r++) {
        if (e0_regex_split(t->regex[r], cps, &a, &b, e) < 0) goto done;
        e0_lens tmp = a;
        a = b;
        b = tmp;
    }
    /* code-point lengths -> byte lengths */
    size_t u = 0;
    for (size_t i = 0; i < a.n; i++) {
        if (e0_lens_push(out, uoff[u + a.v[i]] - uoff[u], e) < 0) goto done;
        u += a.v[i];
    }
    rc = 0;
done:
    free(cps);
    free(uoff);
    free(a.v);
    free(b.v);
    return rc;
}

int tok_bpe_fragment(const e0_tokenizer *t, const char *text, size_t len, e0_tokens *out, e0_err *e) {
    e0_lens words = {0};
    bpe_work w = {0};
    int rc = -1;
    if (tok_bpe_split(t, text, len, &words, e) < 0) goto done;
    size_t off = 0;
    for (size_t i = 0; i < words.n; i++) {
        if (bpe_word(t, &w, (const unsigned char *)text + off, words.v[i], out, e) < 0) goto done;
        off += words.v[i];
    }
    rc = 0;
done:
    free(words.v);
    free(w.sym);
    free(w.heap.v);
    free(w.enc);
    return rc;
}
