/* synth_vocab.c — the tokenizer of a synth model, built deterministically from a small English
 * word list so that ordinary text tokenizes into real multi-character pieces.
 *
 * llama (SentencePiece, model "llama"): <unk> <s> </s>, the 256 <0xNN> byte tokens, "▁", the
 * printable ASCII characters, then every prefix of "▁word" for each word (then of "▁Word").
 * Only "▁"-prefixed multi-character pieces exist, so SentencePiece's merging always grows a word
 * from its beginning and a listed word becomes one piece.
 *
 * qwen* (byte-level BPE, model "gpt2", pre "qwen2"): the 256 byte symbols in GPT-2 order, then
 * merges growing "Ġword" and "ĠWord" left to right (all ranked before the merges of bare words,
 * so a space-prefixed listed word always becomes one token), then bare words the same way, then
 * <|endoftext|> <|im_start|> <|im_end|> (control tokens, eos = <|im_end|> as in Qwen's chat
 * models).
 *
 * Both are padded to n_vocab with "[PAD<id>]" tokens of type UNUSED, as llama.cpp's converter
 * does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synth/synth_impl.h"

enum { TOK_NORMAL = 1, TOK_UNKNOWN = 2, TOK_CONTROL = 3, TOK_UNUSED = 5, TOK_BYTE = 6 };

static const char *const words[] = {
    "the", "of", "and", "to", "in", "a", "is", "that", "for", "it", "as", "was", "with", "be", "by", "on",
    "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an", "had", "they",
    "you", "were", "their", "one", "all", "we", "can", "her", "has", "there", "been", "if", "more", "when",
    "will", "would", "who", "so", "no", "she", "other", "its", "may", "these", "what", "them", "than",
    "some", "him", "time", "into", "only", "do", "out", "up", "about", "then", "could", "our", "two",
    "first", "new", "like", "any", "my", "me", "over", "such", "also", "after", "very", "made", "most",
    "where", "even", "many", "before", "must", "through", "back", "years", "much", "way", "well", "down",
    "should", "because", "each", "just", "those", "people", "how", "too", "little", "state", "good",
    "make", "world", "still", "own", "see", "men", "work", "long", "get", "here", "between", "both",
    "life", "being", "under", "never", "day", "same", "another", "know", "while", "last", "might", "us",
    "great", "old", "year", "off", "come", "since", "against", "go", "came", "right", "used", "take",
    "three", "small", "large", "house", "once", "upon", "girl", "boy", "dog", "cat", "tree", "sun", "water",
    "play", "happy", "friend", "friends", "mom", "dad", "said", "saw", "wanted", "went", "big", "fun",
    "named", "lily", "tim", "ben", "ball", "park", "toy", "help", "look", "found", "away", "felt", "sad",
    "home", "love", "best", "thank", "yes", "let", "run", "ran", "sky", "bird", "fish", "book", "read",
    "story", "think", "thought", "want", "give", "gave", "find", "tell", "told", "ask", "asked", "feel",
    "try", "leave", "call", "called", "keep", "put", "seem", "turn", "start", "show", "hear", "talk",
    "number", "part", "place", "case", "week", "company", "system", "program", "question", "government",
    "point", "hand", "high", "every", "next", "early", "young", "important", "few", "public", "bad",
    "able", "data", "model", "token", "code", "file", "text", "value", "function", "return", "error",
    "hello", "what", "why", "yes", "please", "answer", "user", "assistant", "system", "think",
};

#define N_WORDS (sizeof words / sizeof words[0])

/* Word w, capitalized or not, into out (words are short ASCII); returns its length. */
static size_t word_variant(size_t w, int capitalized, char out[48]) {
    snprintf(out, 48, "%s", words[w]);
    if (capitalized && out[0] >= 'a' && out[0] <= 'z') out[0] = (char)(out[0] - 'a' + 'A');
    return strlen(out);
}

struct synth_vocab {
    uint64_t n, cap;      /* tokens so far, capacity (= n_vocab) */
    char **tok;
    float *score;
    int32_t *type;
    uint64_t n_merges;
    char **merges;        /* "left right" */
    uint64_t hcap;        /* open-addressing set over tok: index + 1, 0 = empty */
    uint64_t *hash;
};

/* Slot of s in the set: either holding it or the empty slot where it would go. */
static uint64_t *find_slot(synth_vocab *v, const char *s) {
    uint64_t i = e0_fnv1a(s, strlen(s)) & (v->hcap - 1);
    while (v->hash[i] && strcmp(v->tok[v->hash[i] - 1], s) != 0) i = (i + 1) & (v->hcap - 1);
    return &v->hash[i];
}

static int has(synth_vocab *v, const char *s) { return *find_slot(v, s) != 0; }

/* Append token s; 1 if added, 0 if already present or full, -1 on out of memory. */
static int add(synth_vocab *v, const char *s, float score, int32_t type) {
    if (v->n >= v->cap) return 0;
    uint64_t *slot = find_slot(v, s);
    if (*slot) return 0;
    char *copy = strdup(s);
    if (!copy) return -1;
    v->tok[v->n] = copy;
    v->score[v->n] = score;
    v->type[v->n] = type;
    *slot = ++v->n;
    return 1;
}

void synth_vocab_free(synth_vocab *v) {
    if (!v) return;
    for (uint64_t i = 0; i < v->n; i++) free(v->tok[i]);
    for (uint64_t i = 0; i < v->n_merges; i++) free(v->merges[i]);
    free(v->tok);
    free(v->score);
    free(v->type);
    free(v->merges);
    free(v->hash);
    free(v);
}

static synth_vocab *vocab_new(uint64_t n_vocab) {
    synth_vocab *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    v->cap = n_vocab;
    v->hcap = 1;
    while (v->hcap < 2 * n_vocab) v->hcap <<= 1;
    v->tok = calloc(n_vocab, sizeof *v->tok);
    v->score = calloc(n_vocab, sizeof *v->score);
    v->type = calloc(n_vocab, sizeof *v->type);
    v->merges = calloc(n_vocab, sizeof *v->merges); /* every merge adds a token: never more */
    v->hash = calloc(v->hcap, sizeof *v->hash);
    if (!v->tok || !v->score || !v->type || !v->merges || !v->hash) {
        synth_vocab_free(v);
        return NULL;
    }
    return v;
}

/* Fill the rest with "[PAD<id>]" (UNUSED). */
static int pad(synth_vocab *v, float score) {
    char buf[32];
    while (v->n < v->cap) {
        snprintf(buf, sizeof buf, "[PAD%llu]", (unsigned long long)v->n);
        if (add(v, buf, score, TOK_UNUSED) != 1) return -1;
    }
    return 0;
}

#define SPM_SPACE "\xe2\x96\x81" /* U+2581 "▁" */

static int build_spm(synth_vocab *v) {
    char buf[64];
    if (add(v, "<unk>", 0, TOK_UNKNOWN) < 0 || add(v, "<s>", 0, TOK_CONTROL) < 0 || add(v, "</s>", 0, TOK_CONTROL) < 0)
        return -1;
    for (int b = 0; b < 256; b++) {
        snprintf(buf, sizeof buf, "<0x%02X>", b);
        if (add(v, buf, 0, TOK_BYTE) < 0) return -1;
    }
    /* pieces score -(rank), like SentencePiece's: earlier = preferred */
    if (add(v, SPM_SPACE, -(float)(v->n - 259), TOK_NORMAL) < 0) return -1;
    for (int c = 33; c < 127; c++) {
        buf[0] = (char)c;
        buf[1] = 0;
        if (add(v, buf, -(float)(v->n - 259), TOK_NORMAL) < 0) return -1;
    }
    char word[48];
    for (int cap = 0; cap < 2; cap++)
        for (size_t w = 0; w < N_WORDS; w++) {
            size_t len = word_variant(w, cap, word);
            for (size_t k = 1; k <= len; k++) {
                snprintf(buf, sizeof buf, SPM_SPACE "%.*s", (int)k, word);
                if (add(v, buf, -(float)(v->n - 259), TOK_NORMAL) < 0) return -1;
            }
        }
    return pad(v, -1000.0f);
}

/* GPT-2's bytes_to_unicode: printable bytes map to themselves, the rest to U+0100 upwards.
 * Writes the UTF-8 of byte b's symbol into out (NUL-terminated). */
static void byte_symbol(int b, char out[4]) {
    int cp;
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174) cp = b;
    else {
        int n = 0; /* rank of b among the non-printable bytes */
        for (int x = 0; x < b; x++)
            if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || x >= 174)) n++;
        cp = 256 + n;
    }
    if (cp < 0x80) {
        out[0] = (char)cp;
        out[1] = 0;
    } else {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        out[2] = 0;
    }
}

/* Merges that grow `prefix` + word one character at a time; each adds a token. Words are short
 * (checked), so the fixed buffers always fit. */
static int add_word_merges(synth_vocab *v, const char *prefix, const char *word) {
    char left[64], right[4], merged[64], merge[72];
    size_t len = strlen(word), start = 0, ll;
    if (len > 40) return -1;
    if (*prefix) {
        ll = strlen(prefix);
        memcpy(left, prefix, ll + 1);
    } else { /* bare word: the first character is already a byte token */
        left[0] = word[0];
        left[1] = 0;
        ll = 1;
        start = 1;
    }
    for (size_t k = start; k < len; k++) {
        byte_symbol((unsigned char)word[k], right);
        size_t rl = strlen(right);
        memcpy(merged, left, ll);
        memcpy(merged + ll, right, rl + 1);
        if (!has(v, merged)) {
            if (v->n >= v->cap) return 0;
            memcpy(merge, left, ll);
            merge[ll] = ' ';
            memcpy(merge + ll + 1, right, rl + 1);
            char *m = strdup(merge);
            if (!m || add(v, merged, 0, TOK_NORMAL) != 1) {
                free(m);
                return -1;
            }
            v->merges[v->n_merges++] = m;
        }
        ll += rl;
        memcpy(left, merged, ll + 1);
    }
    return 0;
}

static const char *const bpe_specials[3] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};

static int build_bpe(synth_vocab *v) {
    char sym[4], space[4];
    for (int pass = 0; pass < 2; pass++) /* GPT-2 order: printable symbols, then U+0100.. */
        for (int b = 0; b < 256; b++) {
            byte_symbol(b, sym);
            int printable = (unsigned char)sym[0] < 0x80 || (unsigned char)sym[0] == 0xc2 || (unsigned char)sym[0] == 0xc3;
            if (printable == (pass == 0) && add(v, sym, 0, TOK_NORMAL) < 0) return -1;
        }
    byte_symbol(' ', space); /* "Ġ" */
    uint64_t cap = v->cap;
    v->cap = cap - 3; /* leave room for the special tokens */
    char word[48];
    for (int pass = 0; pass < 4; pass++) /* " word", " Word", "word", "Word" */
        for (size_t w = 0; w < N_WORDS; w++) {
            word_variant(w, pass & 1, word);
            if (add_word_merges(v, pass < 2 ? space : "", word) < 0) return -1;
        }
    v->cap = cap;
    for (int i = 0; i < 3; i++)
        if (add(v, bpe_specials[i], 0, TOK_CONTROL) != 1) return -1;
    return pad(v, 0);
}

static int put_ids(gguf_writer *w, const synth_vocab *v, int bpe) {
    if (!bpe)
        return gguf_writer_kv_u32(w, "tokenizer.ggml.bos_token_id", 1) ||
               gguf_writer_kv_u32(w, "tokenizer.ggml.eos_token_id", 2) ||
               gguf_writer_kv_u32(w, "tokenizer.ggml.unknown_token_id", 0) ||
               gguf_writer_kv_bool(w, "tokenizer.ggml.add_bos_token", true) ||
               gguf_writer_kv_bool(w, "tokenizer.ggml.add_eos_token", false);
    uint32_t endoftext = 0, im_end = 0;
    for (uint64_t i = 0; i < v->n; i++) {
        if (!strcmp(v->tok[i], bpe_specials[0])) endoftext = (uint32_t)i;
        if (!strcmp(v->tok[i], bpe_specials[2])) im_end = (uint32_t)i;
    }
    return gguf_writer_kv_u32(w, "tokenizer.ggml.bos_token_id", endoftext) ||
           gguf_writer_kv_u32(w, "tokenizer.ggml.eos_token_id", im_end) ||
           gguf_writer_kv_u32(w, "tokenizer.ggml.padding_token_id", endoftext) ||
           gguf_writer_kv_bool(w, "tokenizer.ggml.add_bos_token", false);
}

int synth_vocab_write(gguf_writer *w, const synth_params *p, synth_vocab **out, e0_err *e) {
    *out = NULL;
    int bpe = e0_arch_get(p->arch)->vocab == E0_VOCAB_BPE;
    synth_vocab *v = vocab_new((uint64_t)p->n_vocab);
    if (!v) return e0_fail(e, "out of memory building a %lld-token vocabulary", (long long)p->n_vocab);
    if ((bpe ? build_bpe(v) : build_spm(v)) != 0 || v->n != (uint64_t)p->n_vocab) {
        synth_vocab_free(v);
        return e0_fail(e, "cannot build a %lld-token vocabulary", (long long)p->n_vocab);
    }
    int rc = gguf_writer_kv_str(w, "tokenizer.ggml.model", bpe ? "gpt2" : "llama") ||
             gguf_writer_kv_str(w, "tokenizer.ggml.pre", bpe ? "qwen2" : "default") ||
             gguf_writer_kv_str_arr(w, "tokenizer.ggml.tokens", (const char *const *)v->tok, v->n) ||
             (!bpe && gguf_writer_kv_arr(w, "tokenizer.ggml.scores", GGUF_F32, v->score, v->n)) ||
             gguf_writer_kv_arr(w, "tokenizer.ggml.token_type", GGUF_I32, v->type, v->n) ||
             (bpe && gguf_writer_kv_str_arr(w, "tokenizer.ggml.merges", (const char *const *)v->merges, v->n_merges)) ||
             put_ids(w, v, bpe) ||
             (p->chat_template && gguf_writer_kv_str(w, "tokenizer.chat_template", p->chat_template));
    if (rc) {
        synth_vocab_free(v);
        return e0_fail(e, "%s", gguf_writer_error(w));
    }
    *out = v;
    return 0;
}
