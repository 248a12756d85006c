/* tokenizer_bpe.c — byte-level BPE (llama.cpp's llm_tokenizer_bpe): the pre-tokenizer table
 * (tokenizer.ggml.pre -> split regexes, applied one after another), the merge-rank map, and the
 * per-word merge loop (lowest rank first, ties leftmost; a priority queue keeps it fast). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/tokenizer_impl.h"
#include "text/unicode.h"

/* ---- pre-tokenizer table (patterns from llama.cpp's llama-vocab.cpp) ----
 * Non-ASCII characters are written as \x{...}: several in the deepseek-llm class (U+1FD3,
 * U+1FDB, U+1F7D, U+1FBE, U+2126, U+212A) have canonical singleton decompositions, and an editor
 * or tool that normalizes text to NFC would silently turn them into other characters.
 *
 * Where llama.cpp replaces a pattern by a hand-written splitter (unicode.cpp: gpt2, llama3, qwen2,
 * qwen35, kimi-k2, [^\n]+|[\n]+), the pattern below is the regex that splitter implements, on
 * real Unicode categories; for the others llama.cpp runs std::regex on its "collapsed" text (each
 * non-ASCII code point replaced by one byte standing for its category), which for these patterns
 * is the same as matching the categories. Kimi-K2's \p{Han} is llama.cpp's unicode_cpt_is_han
 * (the CJK ideograph blocks), written as the class RX_HAN. */

#define RX_CONTRACT "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
#define RX_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
#define RX_LLAMA3 \
    RX_CONTRACT "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_QWEN2 \
    RX_CONTRACT "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
/* Qwen3.5: marks join letters. */
#define RX_QWEN35                                                                                            \
    RX_CONTRACT "|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|" \
                "\\s+(?!\\S)|\\s+"
#define RX_CJK "[\\x{4E00}-\\x{9FA5}\\x{0800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+"
/* o200k (gpt-4o, llama4, minimax-m2): a word is [upper]*[lower]+ or [upper]+[lower]*, where
 * llama.cpp's "upper" is a letter that is not a-z and its "lower" a letter that is not A-Z (so a
 * non-ASCII letter is both), then an optional contraction. */
#define RX_UPPER "((?=[\\p{L}])([^a-z]))"
#define RX_LOWER "((?=[\\p{L}])([^A-Z]))"
#define RX_O200K_WORDS                                                                                  \
    "[^\\r\\n\\p{L}\\p{N}]?" RX_UPPER "*" RX_LOWER "+" RX_CONTRACT "?|[^\\r\\n\\p{L}\\p{N}]?" RX_UPPER "+" RX_LOWER \
    "*" RX_CONTRACT "?"
#define RX_O200K RX_O200K_WORDS "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_TEKKEN                                                                                            \
    "[^\\r\\n\\p{L}\\p{N}]?" RX_UPPER "*" RX_LOWER "+|[^\\r\\n\\p{L}\\p{N}]?" RX_UPPER "+" RX_LOWER               \
    "*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_HAN                                                                                          \
    "[\\x{4E00}-\\x{9FFF}\\x{3400}-\\x{4DBF}\\x{20000}-\\x{2A6DF}\\x{2A700}-\\x{2B73F}\\x{2B740}-\\x{2B81F}" \
    "\\x{2B820}-\\x{2CEAF}\\x{2CEB0}-\\x{2EBEF}\\x{F900}-\\x{FAFF}\\x{2F800}-\\x{2FA1F}]"
#define RX_KIMI                                                                                               \
    RX_HAN "+|[^\\r\\n\\p{L}\\p{N}]?(?:(?!" RX_HAN ")\\p{L})+" RX_CONTRACT "?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|" \
           "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
/* deepseek-v3 (also hunyuan-dense, joyai-llm): digits in threes, CJK and kana runs, then words. */
#define RX_DSV3_WORDS                                                                                        \
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| "          \
    "?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_DSV3_CJK "[\\x{4E00}-\\x{9FA5}\\x{3040}-\\x{309F}\\x{30A0}-\\x{30FF}]+"
#define RX_SEED_CODER \
    RX_CONTRACT "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_BAILING                                                                                           \
    "'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|" \
    "\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"
#define RX_MINICPM5 \
    RX_CONTRACT "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_JAIS2                                                                                              \
    RX_CONTRACT "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"          \
                "\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)|" \
                "\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}"
/* bloom, poro, gpt3-finnish, viking: everything but whitespace and a few punctuation marks. */
#define RX_BLOOM " ?[^(\\s|.,!?\\x{2026}\\x{3002}\\x{FF0C}\\x{3001}\\x{0964}\\x{06D4}\\x{060C})]+"
#define RX_NEWLINES "[^\\n]+|[\\n]+"

/* Flags of a pre-tokenizer (llama.cpp's vocabulary load). */
enum {
    PRE_IGNORE_MERGES = 1, /* a word that is a token is taken whole */
    PRE_ADD_BOS = 2,       /* add_bos defaults to true */
    PRE_NO_BOS = 4,        /* no default BOS id (chatglm) */
    PRE_RAW = 8,           /* "SPM-style BPE": no GPT-2 byte mapping, ' ' -> U+2581, <0xNN> fallback */
    PRE_FORCE_BOS = 16,    /* add_bos is true even when the file says false (gemma4) */
    PRE_NEWLINE_WORDS = 32, /* a word of only newlines that is a token is taken whole (gemma4) */
};

typedef struct pre_entry {
    const char *names[20];
    const char *regex[7];
    unsigned flags;
} pre_entry;

static const pre_entry pre_table[] = {
    {{"default"}, {"[\\p{P}\\$\\+<=>\\^~\\|]+", RX_GPT2, "\\p{N}+", "[0-9][0-9][0-9]"}, 0},
    {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano"},
     {RX_LLAMA3},
     PRE_IGNORE_MERGES | PRE_ADD_BOS},
    {{"dbrx", "smaug-bpe"}, {RX_LLAMA3}, 0},
    {{"glm4", "chatglm-bpe"}, {RX_LLAMA3}, PRE_NO_BOS},
    {{"jais-2"}, {RX_JAIS2}, 0},
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
     0},
    {{"deepseek-v3", "hunyuan-dense", "joyai-llm"}, {"\\p{N}{1,3}", RX_DSV3_CJK, RX_DSV3_WORDS}, 0},
    {{"deepseek-coder"}, {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", RX_CJK, "\\p{N}"}, 0},
    {{"falcon"}, {"[\\p{P}\\$\\+<=>\\^~\\|`]+", RX_GPT2, "[0-9][0-9][0-9]"}, 0},
    {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b", "mellum2"},
     {"\\p{N}", RX_GPT2},
     0},
    {{"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum",
      "modern-bert", "mpt", "olmo", "jais", "trillion",
      "granite-docling", "exaone4"},
     {RX_GPT2},
     0},
    {{"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "megrez", "stablelm2", "hunyuan", "solar-open", "grok-2"},
     {RX_QWEN2},
     0},
    {{"qwen35"}, {RX_QWEN35}, 0},
    {{"laguna"}, {RX_NEWLINES, RX_QWEN2}, 0},
    {{"poro-chat", "bloom", "gpt3-finnish"}, {RX_BLOOM}, 0},
    {{"viking"}, {RX_BLOOM, "\\p{N}"}, 0},
    {{"tekken"}, {RX_TEKKEN}, PRE_IGNORE_MERGES | PRE_ADD_BOS},
    {{"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"}, {RX_O200K}, 0},
    {{"kimi-k2"}, {RX_KIMI}, 0},
    {{"bailingmoe", "bailingmoe2", "llada-moe"}, {RX_BAILING}, 0},
    {{"seed-coder"}, {RX_SEED_CODER}, 0},
    {{"minicpm5"}, {"\\p{N}{1,3}", RX_MINICPM5}, PRE_IGNORE_MERGES},
    {{"gemma4", "granite-embed-multi-311m"}, {RX_NEWLINES}, PRE_RAW | PRE_FORCE_BOS | PRE_NEWLINE_WORDS},
    {{"sarvam-moe"}, {RX_NEWLINES}, PRE_RAW},
};

#define PRE_MAX_NAMES (int)(sizeof pre_table[0].names / sizeof pre_table[0].names[0])
#define PRE_MAX_REGEX (int)(sizeof pre_table[0].regex / sizeof pre_table[0].regex[0])

static const pre_entry *find_pre(const char *name) {
    for (size_t i = 0; i < sizeof pre_table / sizeof *pre_table; i++)
        for (int j = 0; j < PRE_MAX_NAMES && pre_table[i].names[j]; j++)
            if (!strcmp(pre_table[i].names[j], name)) return &pre_table[i];
    return NULL;
}

bool tok_pre_known(const char *name) { return find_pre(name) != NULL; }

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
    t->ignore_merges = pe->flags & PRE_IGNORE_MERGES;
    t->add_bos = pe->flags & PRE_ADD_BOS;
    t->no_default_bos = pe->flags & PRE_NO_BOS;
    t->force_bos = pe->flags & PRE_FORCE_BOS;
    t->bpe_raw = pe->flags & PRE_RAW;
    t->newline_words = pe->flags & PRE_NEWLINE_WORDS;
    t->add_space_prefix = false;
    while (t->n_regex < PRE_MAX_REGEX && pe->regex[t->n_regex]) t->n_regex++;
    t->regex = calloc((size_t)t->n_regex, sizeof *t->regex);
    if (!t->regex) return e0_fail(e, "out of memory");
    for (int i = 0; i < t->n_regex; i++)
        if (!(t->regex[i] = e0_regex_compile(pe->regex[i], e))) return -1;
    for (int b = 0; b < 256; b++) {
        if (t->bpe_raw) { /* the byte as itself; its fallback token is <0xNN> */
            char hex[8];
            snprintf(hex, sizeof hex, "<0x%02X>", b);
            t->byte_utf8[b][0] = (char)b;
            t->byte_utf8_len[b] = 1;
            t->byte_tok[b] = tok_strmap_find(t, hex, 6);
            continue;
        }
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

/* One pre-tokenized word: bytes w[0..n). Symbols: one per byte (GPT-2 byte-level: each byte's
 * code point), or, for SPM-style BPE (bpe_raw), one per UTF-8 character (a complete sequence, else
 * a single byte); a symbol that is not a token never merges and ends as <0xNN> byte tokens. */
static int bpe_word(const e0_tokenizer *t, bpe_work *w, const unsigned char *bytes, size_t n, e0_tokens *out,
                    e0_err *e) {
    if (t->newline_words && n > 0) {
        size_t k = 0;
        while (k < n && bytes[k] == '\n') k++;
        int32_t id = k == n ? tok_strmap_find(t, (const char *)bytes, n) : -1;
        if (id >= 0) return tokens_push(out, id, e);
    }
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
    int ns = 0;
    for (size_t off = 0; off < n; ns++) {
        size_t cl = 1;
        int32_t id = t->byte_tok[bytes[off]];
        if (t->bpe_raw) {
            uint32_t cp;
            cl = e0_utf8_decode(bytes + off, n - off, &cp);
            if (cl == 0) cl = 1;
            id = tok_strmap_find(t, (const char *)bytes + off, cl);
        }
        w->sym[ns] = (bpe_sym){ns - 1, off + cl == n ? -1 : ns + 1, id, cl};
        off += cl;
    }
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
    size_t off = 0;
    for (int i = ns ? 0 : -1; i != -1; i = w->sym[i].next) {
        int32_t id = w->sym[i].id;
        if (id < 0 && t->bpe_raw) { /* <0xNN> per byte, as llama.cpp (a byte without one is dropped) */
            for (size_t j = 0; j < w->sym[i].n; j++)
                if (t->byte_tok[bytes[off + j]] >= 0 && tokens_push(out, t->byte_tok[bytes[off + j]], e) < 0) return -1;
        } else {
            /* A byte whose code point is not in the vocabulary: llama.cpp drops it; use UNK if any. */
            if (id < 0) id = t->unk;
            if (id >= 0 && tokens_push(out, id, e) < 0) return -1;
        }
        off += w->sym[i].n;
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
    char *esc = NULL;
    int rc = -1;
    if (t->bpe_raw) { /* SPM-style BPE: every ' ' becomes U+2581 before splitting */
        size_t spaces = 0, p = 0;
        for (size_t i = 0; i < len; i++) spaces += text[i] == ' ';
        if (!(esc = malloc(len + 2 * spaces + 1))) {
            e0_fail(e, "out of memory");
            goto done;
        }
        for (size_t i = 0; i < len; i++) {
            if (text[i] == ' ') memcpy(esc + p, "\xe2\x96\x81", 3), p += 3;
            else esc[p++] = text[i];
        }
        text = esc;
        len = p;
    }
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
    free(esc);
    return rc;
}
